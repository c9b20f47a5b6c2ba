#!/usr/bin/env bash
# tui_steer.sh - steering the replay end to end in tmux on the smoke
# fixture (a 6-hour day: merges from 00:31 to 05:49, the finalize at 08:00):
#  1. `g 01:00` from a paused start runs at full speed and stops PAUSED
#     "at go 01:00:00" with the user's speed (30x) back and no stale
#     "running to" message;
#  2. `--break time=02:00` stops as BREAK "at time=02:00:00" at the first
#     barrier after 02:00 (merge #4 at 02:21:30), not at a pause before;
#  3. `g #2` and `g 00:30` (behind the replay) are refused and the replay
#     stays where it is;
#  4. `g #6` stops at BREAK "at go #6" with the speed back at 30x.
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

# 3. Targets behind the replay are refused; it stays at #4.
for target in '#2' '00:30'; do
	tm send-keys -t "$T" 'g'
	tm send-keys -t "$T" -l "$target"
	tm send-keys -t "$T" Enter
	wait_for 'behind the replay' 5 || fail "g $target was not refused"
	wait_for 'BREAK +at time=02:00:00' 5 || fail "g $target moved the replay"
	screen | grep -q 'Pending selection #4' || fail "g $target left #4"
done

# 4. Forward to merge #6 at full speed, 30x again at the stop.
tm send-keys -t "$T" ':'
tm send-keys -t "$T" -l 'speed 30'
tm send-keys -t "$T" Enter
tm send-keys -t "$T" 'g'
tm send-keys -t "$T" -l '#6'
tm send-keys -t "$T" Enter
wait_for 'BREAK +at go #6 ' || fail "g #6 did not stop at its barrier"
wait_for 'Pending selection #6' 5 || fail "not at the barrier of merge #6"
wait_for 'speed 30x' 5 || fail "the speed did not come back to 30x"
screen | grep -q 'running to' && fail "a stale 'running to' message"

e2e_quit
echo "PASS ($MODE)"
exit 0
