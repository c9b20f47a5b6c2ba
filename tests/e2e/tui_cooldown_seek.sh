#!/usr/bin/env bash
# tui_cooldown_seek.sh - going back from where `make run` stops: the
# `sampling` breakpoint at the finalize merge's dispatch barrier, in the
# cooldown (the smoke fixture: the finalize at 08:00, after all the day's
# P publications, P read from the screen as the fixture has it; its merge
# number N, read from the screen, is the one the database records for the
# finalize):
#  1. `[` goes back in the running replay (no new database) to the
#     barrier before, merge #N-1, in the primary phase;
#  2. `]` runs on to the finalize's barrier again;
#  3. `{` from there goes one publication back (P - 1 done), still in the
#     same database;
#  4. on to the end: every gate passes;
#  5. from the end, `g` back and `{` (twice to the same checkpoint), and
#     to the end again: every gate passes, the Plugins panel shows the
#     finalize's one Decide call; one finalize merge and one row per
#     merge in the database, four `seek` rows.
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
FIN='BREAK +at sampling t 08:00:00 .* pub ([0-9]+)/\1 .* finalize '
wait_for "$FIN" || fail "no stop at the finalize's barrier"
P=$(screen | grep -oE ' pub [0-9]+/[0-9]+ ' | head -n 1 | grep -oE '[0-9]+ $' |
	tr -d ' ')
[ -n "$P" ] && [ "$P" -ge 2 ] || fail "the day's publications: '$P'"
FIN="BREAK +at sampling t 08:00:00 .* pub $P/$P .* finalize "
wait_for 'Pending selection #[0-9]+' 5 || fail "no pending selection"
FN=$(screen | grep -oE 'Pending selection #[0-9]+' | head -n 1 |
	grep -oE '[0-9]+$')
[ -n "$FN" ] && [ "$FN" -ge 2 ] || fail "the finalize's number: '$FN'"
PN=$((FN - 1))

# 1. One barrier back, from the cooldown.
tm send-keys -t "$T" '['
wait_for "BREAK +at go #$PN .* primary " ||
	fail "[ from the finalize's barrier did not go back to #$PN"
wait_for "Pending selection #$PN" 5 || fail "not at the barrier of #$PN"
screen | grep -q 'run\.rerun-' && fail "[ started a new replay"

# 2. On to the finalize's barrier again.
tm send-keys -t "$T" ']'
wait_for "$FIN" || fail "the re-run did not stop at the finalize again"
wait_for "Pending selection #$FN" 5 || fail "not at #$FN again"

# 3. One publication back, from the cooldown.
tm send-keys -t "$T" '{'
wait_for "PAUSED +at go pub $((P - 1)) .*pub $((P - 1))/$P .* primary " ||
	fail "{ from the finalize's barrier did not go back one publication"
screen | grep -q 'run\.rerun-' && fail "{ started a new replay"

# 4. To the end, in the same database.
tm send-keys -t "$T" ']'
wait_for "$FIN" || fail "the re-run did not stop at the finalize a third time"
tm send-keys -t "$T" ']'
wait_for 'DONE ' || fail "the run did not end"
wait_for 'Gates +[0-9]+ pass, 0 fail' 10 || fail "not every gate passed"
screen | grep -q 'run\.rerun-' && fail "a seek back started a new replay"

# 5. From the end, back twice to the same checkpoint (g, then { from
#    there), and to the end again: the finalize's Decide call is counted
#    out once, so the Plugins panel shows the one call on record and
#    plugin_health passes (it counted the call out twice: 0 calls on the
#    panel and a failed gate).
tm send-keys -t "$T" 'g' "#$PN" Enter
wait_for "BREAK +at go #$PN .* primary " || fail "g #$PN from the end"
tm send-keys -t "$T" '{'
wait_for "PAUSED +at go pub " || fail "{ after g #$PN"
tm send-keys -t "$T" ']'
wait_for "$FIN" || fail "the re-run did not stop at the finalize a fourth time"
tm send-keys -t "$T" ']'
wait_for 'DONE ' || fail "the run did not end again"
wait_for 'Gates +[0-9]+ pass, 0 fail' 10 ||
	fail "not every gate passed after going back twice from the end"
screen | grep -Eq '[│|]skywalking +1 +[0-9]+ ' ||
	fail "the Plugins panel does not show the finalize's one call"
screen | grep -q 'run\.rerun-' && fail "a seek back started a new replay"
e2e_quit

rows() { sqlite3 "$DB" "$1" 2>/dev/null || echo "?"; }
if command -v sqlite3 >/dev/null; then
	[ "$(rows 'SELECT count(*) FROM seek')" = 4 ] ||
		fail "not four seek rows: $(rows 'SELECT count(*) FROM seek')"
	[ "$(rows "SELECT count(*) FROM merge WHERE lane = 'finalize'")" = 1 ] ||
		fail "not one finalize merge"
	[ "$(rows "SELECT seq FROM merge WHERE lane = 'finalize'")" = "$FN" ] ||
		fail "the finalize is not #$FN: $(rows \
			"SELECT seq FROM merge WHERE lane = 'finalize'")"
	[ "$(rows 'SELECT count(*) FROM merge')" = \
		"$(rows 'SELECT merges_completed FROM run')" ] ||
		fail "not one row per merge"
else
	echo "skipped: the event database's checks (no sqlite3 command;" \
		"make deps installs it)"
fi
echo "PASS ($MODE)"
exit 0
