#!/usr/bin/env bash
# tui_cooldown_seek.sh - going back from where `make run` stops: the
# `sampling` breakpoint at the finalize merge's dispatch barrier, in the
# cooldown (the smoke fixture: finalize #13 at 08:00, after the day's 173
# publications):
#  1. `[` goes back in the running replay (no new database) to the
#     barrier before, merge #12, in the primary phase;
#  2. `]` runs on to the finalize's barrier again;
#  3. `{` from there goes one publication back (172 done), still in the
#     same database;
#  4. on to the end: every gate passes, one finalize merge and one row per
#     merge in the database, two `seek` rows.
#
# usage: tui_cooldown_seek.sh MERGESCOPE
# Exit status: 0 pass, 1 fail, 77 skipped (tmux is not installed).
set -u

MS=${1:?usage: tui_cooldown_seek.sh MERGESCOPE}
MODE=cooldown-seek
. "$(dirname "$0")/e2e_lib.sh"

DB=$WORK/run.sqlite
e2e_start 200 60 --fixture "$FX" --db "$DB" --variant skywalking \
	--speed max --break sampling
FIN='BREAK +at sampling t 08:00:00 .* pub 173/173 .* finalize '
wait_for "$FIN" || fail "no stop at the finalize's barrier"
wait_for 'Pending selection #13' 5 || fail "not at the finalize, #13"

# 1. One barrier back, from the cooldown.
tm send-keys -t "$T" '['
wait_for 'BREAK +at go #12 .* primary ' ||
	fail "[ from the finalize's barrier did not go back to #12"
wait_for 'Pending selection #12' 5 || fail "not at the barrier of #12"
screen | grep -q 'run\.rerun-' && fail "[ started a new replay"

# 2. On to the finalize's barrier again.
tm send-keys -t "$T" ']'
wait_for "$FIN" || fail "the re-run did not stop at the finalize again"
wait_for 'Pending selection #13' 5 || fail "not at #13 again"

# 3. One publication back, from the cooldown.
tm send-keys -t "$T" '{'
wait_for 'PAUSED +at go pub 172 .*pub 172/173 .* primary ' ||
	fail "{ from the finalize's barrier did not go back one publication"
screen | grep -q 'run\.rerun-' && fail "{ started a new replay"

# 4. To the end, in the same database.
tm send-keys -t "$T" ']'
wait_for "$FIN" || fail "the re-run did not stop at the finalize a third time"
tm send-keys -t "$T" ']'
wait_for 'DONE ' || fail "the run did not end"
wait_for 'Gates +[0-9]+ pass, 0 fail' 10 || fail "not every gate passed"
screen | grep -q 'run\.rerun-' && fail "a seek back started a new replay"
e2e_quit

rows() { sqlite3 "$DB" "$1" 2>/dev/null || echo "?"; }
if command -v sqlite3 >/dev/null; then
	[ "$(rows 'SELECT count(*) FROM seek')" = 2 ] ||
		fail "not two seek rows: $(rows 'SELECT count(*) FROM seek')"
	[ "$(rows "SELECT count(*) FROM merge WHERE lane = 'finalize'")" = 1 ] ||
		fail "not one finalize merge"
	[ "$(rows 'SELECT count(*) FROM merge')" = \
		"$(rows 'SELECT merges_completed FROM run')" ] ||
		fail "not one row per merge"
fi
echo "PASS ($MODE)"
exit 0
