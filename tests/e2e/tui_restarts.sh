#!/usr/bin/env bash
# tui_restarts.sh - restarting the day (`r`) as an impatient user does: twice
# in a row, while stopped at a breakpoint with its merge held, and q right
# after one. Every restart names its new database in the footer; quitting
# exits 0; each database the session made (the first and every
# rerun-N) is whole by itself, with no -wal left beside it, and `report`
# reads it as an aborted run; the scratch shards of all the runs are gone.
# At quit after restarts, the shard of the run that ended is named, and
# every database of the session.
#
# usage: tui_restarts.sh MERGESCOPE
# Exit status: 0 pass, 1 fail, 77 skipped (tmux is not installed).
set -u

MS=${1:?usage: tui_restarts.sh MERGESCOPE}
MODE=restarts
. "$(dirname "$0")/e2e_lib.sh"

WD=$WORK/wd
e2e_start 200 60 --fixture "$FX" --db "$WORK/run.sqlite" --paused \
	--speed max --break merge=3 --work-dir "$WD"
wait_for 'PAUSED .*pub 0/' || fail "no status line PAUSED at pub 0"

# Twice in a row, without waiting for the first.
tm send-keys -t "$T" 'r' 'r'
wait_for 'restarted the day, recording to .*run\.rerun-2\.sqlite' ||
	fail "r r did not end on a second restart"
wait_for 'PAUSED .*pub 0/' || fail "the second restart is not paused at pub 0"

# At a breakpoint, its merge held.
tm send-keys -t "$T" ']'
wait_for 'BREAK +at merge=3 ' || fail "] did not stop at merge=3"
tm send-keys -t "$T" 'r'
wait_for 'restarted the day, recording to .*run\.rerun-3\.sqlite' ||
	fail "r at a breakpoint did not restart"
wait_for 'PAUSED .*pub 0/' || fail "the restart at merge=3 is not paused"

# q right after r.
tm send-keys -t "$T" 'r' 'q'
wait_for 'EXITED [0-9]+' || fail "q after r did not end the TUI"
screen | grep -q 'EXITED 0' || fail "the TUI exited with an error"
screen | grep -q 'events recorded in .*run\.rerun-4\.sqlite' ||
	fail "the last line does not name run.rerun-4.sqlite"
# And every database the session wrote before it, each on a line of its
# own, first first (only the last was named).
screen | grep -q 'the 4 earlier runs of this session, each replaced by a restart, are recorded in:' ||
	fail "no line before the last introduces the 4 earlier runs"
[ "$(screen | grep -E '^  /.*\(recorded as aborted\)$' | sed 's/^  //; s/ (recorded as aborted)$//' | tr '\n' ' ')" = \
	"$WORK/run.sqlite $WORK/run.rerun-1.sqlite $WORK/run.rerun-2.sqlite $WORK/run.rerun-3.sqlite " ] ||
	fail "at quit, the 4 earlier databases are not named in order"
for f in "$WORK"/sanitizer.*; do
	[ -e "$f" ] && fail "sanitizer report in $f"
done

for db in run run.rerun-1 run.rerun-2 run.rerun-3 run.rerun-4; do
	[ -s "$WORK/$db.sqlite" ] || fail "no database $db.sqlite"
	[ -s "$WORK/$db.sqlite-wal" ] &&
		fail "$db.sqlite was left with its -wal"
	# An aborted run fails its gates (exit 2): read, it says so.
	"$MS" report --db "$WORK/$db.sqlite" >"$WORK/report.txt" 2>&1
	grep -Eq '^  status +aborted ' "$WORK/report.txt" ||
		{
			cat "$WORK/report.txt"
			fail "report does not read $db.sqlite as aborted"
		}
done
for d in "$WD" "$WD".rerun-*; do
	[ -e "$d" ] && fail "scratch $d left behind"
done
# Without --work-dir: the shard goes to the scratch directory, named after
# the run's database, and the line above the screen names the first run's.
# At quit, after two restarts, a line names the shard of the run that
# ended (it named none, and the one above was the first run's).
e2e_start 200 60 --fixture "$FX" --db "$WORK/scr.sqlite" --paused \
	--speed max
wait_for 'PAUSED .*pub 0/' || fail "no status line PAUSED at pub 0"
tm send-keys -t "$T" 'r'
wait_for 'restarted the day, recording to .*scr\.rerun-1\.sqlite' ||
	fail "r did not restart"
tm send-keys -t "$T" 'r'
wait_for 'restarted the day, recording to .*scr\.rerun-2\.sqlite' ||
	fail "the second r did not restart"
e2e_quit
screen | grep -Eq '^work dir .*/scr\.sqlite\.[0-9]+\.shard ' ||
	fail "no work dir line of the first run before the screen"
screen | tr -d '\n' |
	grep -Eq 'after 2 restarts, work dir .*/scr\.rerun-2\.sqlite\.[0-9]+\.shard ' ||
	fail "at quit, no work dir line of the run that ended (rerun-2)"
echo "PASS ($MODE)"
exit 0
