#!/usr/bin/env bash
# tui_rerun_breaks.sh - going back re-runs to the point asked for, past the
# breakpoints on the way. With --checkpoint-every 0 the smoke day has no
# checkpoint, so `[` runs the day again from its start in a new replay
# (a `rerun-1` database): from merge #5's barrier it stops at #4's, not
# at the merge=3 breakpoint the first pass stopped at on its way to #5.
# Going on, the breakpoint stops the run after a point before it.
#
# usage: tui_rerun_breaks.sh MERGESCOPE
# Exit status: 0 pass, 1 fail, 77 skipped (tmux is not installed).
set -u

MS=${1:?usage: tui_rerun_breaks.sh MERGESCOPE}
MODE=rerun-breaks
. "$(dirname "$0")/e2e_lib.sh"

e2e_start 200 60 --fixture "$FX" --db "$WORK/run.sqlite" --paused \
	--speed max --checkpoint-every 0 --break merge=3
wait_for 'PAUSED .*pub 0/' || fail "no status line PAUSED at pub 0"

# The first pass: g #5 stops at merge=3 on its way, then goes on to #5.
tm send-keys -t "$T" 'g' '#5' Enter
wait_for 'BREAK +at merge=3 ' || fail "g #5 did not stop at merge=3 first"
tm send-keys -t "$T" 'g' '#5' Enter
wait_for 'BREAK +at go #5 ' || fail "g #5 did not reach #5"

# One barrier back: the day again from its start, to #4, past merge=3.
tm send-keys -t "$T" '['
wait_for 'BREAK +at (go #4|merge=3) ' || fail "[ did not stop"
screen | grep -Eq 'BREAK +at merge=3 ' &&
	fail "[ from #5 stopped at the merge=3 breakpoint on the way"
wait_for 'run\.rerun-1\.sqlite' 5 || fail "[ did not run the day again"

# Back before the breakpoint, then on: it stops the run.
tm send-keys -t "$T" 'g' '#2' Enter
wait_for 'BREAK +at go #2 ' || fail "g #2 did not reach #2"
tm send-keys -t "$T" ']'
wait_for 'BREAK +at merge=3 ' || fail "] from #2 did not stop at merge=3"
e2e_quit
echo "PASS ($MODE)"
exit 0
