#!/usr/bin/env bash
# tui_mouse.sh - the mouse end to end in tmux on the smoke fixture, sent
# as the xterm mouse reports a terminal writes (ESC [ M b x y): at the
# barrier of merge #4, a click on the third inventory row focuses the
# inventory and selects that part (Enter shows its details), a click on
# the first event row selects merge #1, and the wheel over the event log
# moves that selection down. Then the next session on the fixture offers
# the last one's breakpoint and filter, and y restores them.
#
# usage: tui_mouse.sh MERGESCOPE
# Exit status: 0 pass, 1 fail, 77 skipped (tmux is not installed).
set -u

MS=${1:?usage: tui_mouse.sh MERGESCOPE}
MODE=mouse
. "$(dirname "$0")/e2e_lib.sh"

# A mouse report for button code $1 at 0-based column $2, row $3.
report() {
	local b=$(($1 + 32)) x=$(($2 + 33)) y=$(($3 + 33))
	tm send-keys -t "$T" -l "$(printf "\033[M\\$(printf %o $b)\\$(printf %o $x)\\$(printf %o $y)")"
}
# A click (press, then release: code 3) or a wheel step (64 up, 65 down).
mouse() {
	report "$@"
	[ "$1" = 0 ] && report 3 "$2" "$3"
	sleep 0.2
}
# 0-based screen row of the first line matching $1.
row_of() { screen | grep -n -m1 -- "$1" | cut -d: -f1 | awk '{print $1 - 1}'; }

e2e_start 132 44 --fixture "$FX" --db "$WORK/run.sqlite" --speed max \
	--break merge=4
wait_for 'BREAK +at merge=4' || fail "no BREAK at merge #4"

# Click the third inventory row: that part is selected, Enter says so.
INV=$(row_of 'Inventory [0-9]')
PART=$(screen | sed -n "$((INV + 5))p" | grep -o '[0-9a-f]\{16\}' | head -1)
[ -n "$PART" ] || fail "no third inventory row"
mouse 0 5 $((INV + 4))
tm send-keys -t "$T" Enter
wait_for "Part.*Esc closes" 5 || fail "Enter after the click showed no part"
screen | grep -q "$PART" || fail "the part clicked ($PART) is not the one shown"
tm send-keys -t "$T" Escape
sleep 0.3 # a lone Escape, not the start of the next report

# Click the first event row: merge #1; Enter shows it.
EV=$(row_of 'Events [0-9]')
mouse 0 10 $((EV + 2))
tm send-keys -t "$T" Enter
wait_for 'Merge #1 ' 5 || fail "the click on the first event did not select #1"
tm send-keys -t "$T" Escape
sleep 0.3 # a lone Escape, not the start of the next report

# The wheel (button 65: down) over the log moves the selection to #2.
mouse 65 10 $((EV + 3))
tm send-keys -t "$T" Enter
wait_for 'Merge #(2|3) ' 5 || fail "the wheel did not move the selection"
tm send-keys -t "$T" Escape
sleep 0.3 # a lone Escape, not the start of the next report

tm send-keys -t "$T" '/'
tm send-keys -t "$T" -l 'lane=fast'
tm send-keys -t "$T" Enter
e2e_quit

# The next session on this fixture offers the breakpoint and the filter.
e2e_start 132 44 --fixture "$FX" --db "$WORK/run2.sqlite" --speed max \
	--paused
wait_for 'last time on this fixture: break merge=4; filter /lane=fast' ||
	fail "the last session's breakpoint and filter were not offered"
# Answered once the run stands at its start: a message is cleared when
# the run moves, and the day starts once the verdict oracle has ended.
wait_for 'PAUSED .*pub 0/' || fail "no status line PAUSED at pub 0"
tm send-keys -t "$T" 'y'
wait_for 'restored 1 breakpoint and the filter' 10 || fail "y did not restore"
tm send-keys -t "$T" ']'
wait_for 'BREAK +at merge=4' || fail "the restored breakpoint did not stop"
screen | grep -q '/lane=fast' || fail "the restored filter is not shown"
e2e_quit
echo "PASS ($MODE)"
exit 0
