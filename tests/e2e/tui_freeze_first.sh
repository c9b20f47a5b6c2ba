#!/usr/bin/env bash
# tui_freeze_first.sh - the first key at a breakpoint does what it says.
# A session on the smoke fixture breaks at `sampling` (the finalize, as
# `make run` does) while the last session's breakpoints are still on
# offer at the foot of the screen; `f`, the first key pressed, freezes
# the shard there: the frozen directory exists, with its shard and its
# description, and the offer is declined, not answered by the `f`. The
# offer leaves out what the command line sets already (`sampling`).
#
# usage: tui_freeze_first.sh MERGESCOPE
# Exit status: 0 pass, 1 fail, 77 skipped (tmux is not installed).
set -u

MS=${1:?usage: tui_freeze_first.sh MERGESCOPE}
MODE=freeze-first
. "$(dirname "$0")/e2e_lib.sh"

# The first session leaves two breakpoints in the fixture's memory.
e2e_start 200 60 --fixture "$FX" --db "$WORK/run1.sqlite" --paused \
	--break sampling --break merge=2
wait_for 'PAUSED .*pub 0/' || fail "no status line PAUSED at pub 0"
e2e_quit

# The next one, as `make run` starts: only merge=2 is offered.
e2e_start 200 60 --fixture "$FX" --db "$WORK/run2.sqlite" \
	--variant skywalking --speed max --break sampling
wait_for 'last time on this fixture: break merge=2; again' 10 ||
	fail "the last session's merge=2 was not offered"
screen | grep -q 'last time on this fixture: .*sampling' &&
	fail "the offer repeats the --break the command line gives"
wait_for 'BREAK +at sampling ' 60 || fail "no BREAK at sampling"
screen | grep -q 'again? (y/N)' || fail "the offer is gone before any key"

tm send-keys -t "$T" 'f'
wait_for 'frozen merge #[0-9]+ into ' 10 || fail "the first f did not freeze"
DIR=$(screen | grep -o 'frozen merge #[0-9]* into [^ │|]*' | head -1 |
	sed 's/.* into //')
[ -n "$DIR" ] || fail "no frozen directory on screen"
trap 'rm -rf "$DIR"; cleanup' EXIT
[ -d "$DIR" ] || fail "the frozen directory $DIR does not exist"
[ -n "$(ls -A "$DIR")" ] || fail "the frozen directory $DIR is empty"
screen | grep -q 'again? (y/N)' && fail "the offer is still open after f"
screen | grep -q 'restored' && fail "f answered the offer"
e2e_quit
echo "frozen: $DIR"
echo "PASS ($MODE)"
exit 0
