#!/usr/bin/env bash
# tui_steer.sh - steering the replay end to end in tmux on the smoke
# fixture (a 6-hour day: merges from 00:31 to 05:49, the finalize at 08:00):
#  1. `g 01:00` from a paused start runs at full speed and stops PAUSED
#     "at go 01:00:00" with the user's speed (30x) back and no stale
#     "running to" message;
#  2. `--break time=02:00` stops as BREAK "at time=02:00:00" at the first
#     barrier after 02:00 (merge #4 at 02:21:30), not at a pause before;
#  3. `g #2` (behind the replay) goes back to a checkpoint of the running
#     replay (same database) and re-runs to #2's barrier, `[` to #1's,
#     `{` one publication back;
#  4. `g #6` stops first at the time breakpoint (after the checkpoint, so
#     it stops the re-run again), then at BREAK "at go #6" with the speed
#     back at 30x; merges 1-3 have the inputs they had the first time;
#  5. `f` there leaves a "frozen:" line with the merge-once command,
#     printed again at the end, where it runs as shown;
#  6. `r` restarts the day with its breakpoint, into a new database;
#  7. at DONE the gate and reconciliation tables fill the Events area,
#     Tab shows the events.
#
# usage: tui_steer.sh MERGESCOPE
# Exit status: 0 pass, 1 fail, 77 skipped (tmux is not installed).
set -u

MS=${1:?usage: tui_steer.sh MERGESCOPE}
MODE=steer
. "$(dirname "$0")/e2e_lib.sh"

DB=$WORK/run.sqlite
e2e_start 132 44 --fixture "$FX" --db "$DB" --variant skywalking --paused \
	--speed 30 --break time=02:00
wait_for 'PAUSED .*pub 0/' || fail "no status line PAUSED at pub 0"

# 1. g to a time ahead: full speed, then paused there at 30x again.
tm send-keys -t "$T" 'g'
tm send-keys -t "$T" -l '01:00'
tm send-keys -t "$T" Enter
wait_for 'PAUSED +at go 01:00:00 t 00:' ||
	fail "g 01:00 did not pause at go 01:00:00"
wait_for 'speed 30x' 5 || fail "the speed did not come back to 30x"
screen | grep -q 'running to' && fail "a stale 'running to' message"

# 2. The time breakpoint: BREAK at the first barrier at or after 02:00.
tm send-keys -t "$T" ':'
tm send-keys -t "$T" -l 'speed max'
tm send-keys -t "$T" Enter
tm send-keys -t "$T" ']'
wait_for 'BREAK +at time=02:00:00 t 02:' ||
	fail "--break time=02:00 did not stop as BREAK after 02:00"
wait_for 'Pending selection #4' 5 || fail "not at the barrier of merge #4"

# The inputs of merges 1-3 (all completed before #4's barrier).
inputs() {
	"$MS" export --db "$1" --format jsonl --filter 'seq=1..3' |
		sed 's/^{"seq":\([0-9]*\),.*"inputs":\[\([^]]*\)\].*/\1 \2/' |
		sed 's/{"part_id":\([0-9]*\),[^}]*}/\1/g' | sort -n
}
A=$(inputs "$DB")

# 3. Back in time: `g #2` from #4 goes back to a checkpoint of this run
#    (no new database) and stops at #2's barrier; `[` goes one barrier
#    further back (#1); `{` one publication back (PAUSED, one
#    publication fewer).
tm send-keys -t "$T" 'g'
tm send-keys -t "$T" -l '#2'
tm send-keys -t "$T" Enter
wait_for 'BREAK +at go #2 ' || fail "g #2 did not stop at merge #2"
wait_for 'Pending selection #2' 5 || fail "not at the barrier of merge #2"
screen | grep -q 'run\.rerun-' && fail "g #2 started a new replay"
screen | grep -q 'run\.sqlite' || fail "not recording to $DB any more"
tm send-keys -t "$T" '['
wait_for 'BREAK +at go #1 ' || fail "[ did not go back to merge #1"
wait_for 'Pending selection #1' 5 || fail "not at the barrier of merge #1"
PUB=$(screen | grep -o 'pub [0-9]*/' | head -1 | tr -dc 0-9)
tm send-keys -t "$T" '{'
wait_for "PAUSED +at go pub $((PUB - 1)) .*pub $((PUB - 1))/" ||
	fail "{ did not go back one publication (from $PUB)"

# 4. Forward to merge #6 at full speed, 30x again at the stop. The re-run
#    kept the time breakpoint, which stops it first (at #4) and cancels
#    the target; a second `g #6` gets there.
tm send-keys -t "$T" ':'
tm send-keys -t "$T" -l 'speed 30'
tm send-keys -t "$T" Enter
tm send-keys -t "$T" 'g'
tm send-keys -t "$T" -l '#6'
tm send-keys -t "$T" Enter
wait_for 'BREAK +at time=02:00:00 .*speed 30x' ||
	fail "the re-run lost the time breakpoint"
screen | grep -q 'Pending selection #4' || fail "the breakpoint is not at #4"
tm send-keys -t "$T" 'g'
tm send-keys -t "$T" -l '#6'
tm send-keys -t "$T" Enter
wait_for 'BREAK +at go #6 ' || fail "g #6 did not stop at its barrier"
wait_for 'Pending selection #6' 5 || fail "not at the barrier of merge #6"
wait_for 'speed 30x' 5 || fail "the speed did not come back to 30x"
screen | grep -q 'running to' && fail "a stale 'running to' message"

# The re-runs selected what the first run selected: merges 1-3 (all the
# first run completed before going back from #4) have the same inputs in
# the database, whose rows after each checkpoint were replaced (the
# selection fingerprint's prefix).
screen | grep -q 'run\.rerun-' && fail "a seek back started a new replay"
B=$(inputs "$DB")
[ "$(printf '%s\n' "$A" | wc -l)" = 3 ] || fail "the first run has no merges 1-3: $A"
[ "$A" = "$B" ] || fail "the re-run selected other inputs:
$A
---
$B"

# 5. Freeze at #6: the merge-once command stays on screen (it runs at
#    the end, where it is printed whole).
tm resize-window -t "$T" -x 250 -y 44
tm send-keys -t "$T" 'f'
wait_for 'frozen: .* merge-once --frozen ' 10 || fail "no frozen line after f"
tm send-keys -t "$T" 'j' # another key: the message goes, the line stays
sleep 0.3
screen | grep -q 'frozen: .*merge-once --frozen ' || fail "the frozen line went away"

# 6. r: the day again, paused at its start as first launched (--paused),
#    the breakpoint still set.
tm send-keys -t "$T" 'r'
wait_for 'PAUSED .*pub 0/' || fail "r did not restart the day"
screen | grep -q 'run\.rerun-1\.sqlite' || fail "r did not open a new database"
tm send-keys -t "$T" ':'
tm send-keys -t "$T" -l 'speed max'
tm send-keys -t "$T" Enter
tm send-keys -t "$T" ']'
wait_for 'BREAK +at time=02:00:00' || fail "the breakpoint did not survive r"

# 7. To the end: the gates and the reconciliation with the verdict oracle
#    fill the Events area; Tab shows the events.
tm resize-window -t "$T" -x 200 -y 80
tm send-keys -t "$T" ']'
wait_for 'DONE ' || fail "the run did not end"
wait_for 'Gates +[0-9]+ pass, 0 fail' 10 || fail "no gate table at DONE"
screen | grep -Eq 'PASS [a-z_]+' || fail "no PASS rows in the gate table"
wait_for 'reconciliation +primary +cooldown +finalize +total' 10 ||
	fail "no reconciliation table at DONE"
tm send-keys -t "$T" Tab
wait_for 'Events [0-9]+ merges' 10 || fail "Tab did not show the events"

e2e_quit
# At the end the command is printed whole; it runs as printed.
CMD=$(tm capture-pane -p -J -t "$T" | grep -A1 'replay the frozen merge with:' |
	tail -1 | sed 's/^ *//; s/ *$//')
case $CMD in
*" merge-once --frozen "*" --variant skywalking") ;;
*) fail "no merge-once command printed at the end: $CMD" ;;
esac
env XDG_CACHE_HOME="$XDG_CACHE_HOME" bash -c "$CMD --reps 1" \
	>"$WORK/merge-once.log" 2>&1 ||
	{
		cat "$WORK/merge-once.log"
		fail "the shown command did not run: $CMD"
	}
echo "ran: $CMD"
FROZEN=$(printf '%s\n' "$CMD" | sed 's/.* --frozen \([^ ]*\) .*/\1/')
case $FROZEN in
*frozen*) rm -rf "$FROZEN" ;;
esac
echo "PASS ($MODE)"
exit 0
