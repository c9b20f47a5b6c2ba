#!/usr/bin/env bash
# tui_smoke.sh - the TUI end to end in a real terminal (tmux) on the smoke
# fixture: start paused, step with `.`, add a breakpoint on mature
# selections from the breakpoint list, run to it with `]` and find the
# pending selection showing mature inputs, resize the window (wider,
# narrower, below the minimum) and find the screen laid out again, export
# what the event log shows from the TUI (format, then path; an existing
# file only after y) and check the files, quit with `q`
# and find the terminal restored (alternate screen off, nothing of the
# last frame left on it, exit status 0).
#
# usage: tui_smoke.sh MERGESCOPE [color|nocolor]
#   nocolor runs with NO_COLOR=1 and checks that no colour reaches the
#   terminal; color checks that some does.
# Exit status: 0 pass, 1 fail, 77 skipped (tmux is not installed).
set -u

MS=${1:?usage: tui_smoke.sh MERGESCOPE [color|nocolor]}
MODE=${2:-color}
. "$(dirname "$0")/e2e_lib.sh"

DB=$WORK/run.sqlite
[ "$MODE" = nocolor ] && ENVS="$ENVS NO_COLOR=1"
e2e_start 120 40 --fixture "$FX" --db "$DB" --variant skywalking --paused \
	--speed max

# 1. The status line, paused before the first publication, with the
#    database it records to.
wait_for 'PAUSED .*pub 0/' || fail "no status line PAUSED at pub 0"
screen | grep -Fq "$DB" || fail "the event database is not on screen"

# Colours: some with colour, none with NO_COLOR.
ESC=$(printf '\033')
if [ "$MODE" = nocolor ]; then
	tm capture-pane -e -p -t "$T" | grep -Eq "$ESC\[([0-9]+;)*(3[0-7]|4[0-7]|9[0-7]|38;5|48;5)" &&
		fail "colour escape sequences with NO_COLOR=1"
else
	tm capture-pane -e -p -t "$T" | grep -Eq "$ESC\[([0-9]+;)*(3[0-7]|4[0-7]|9[0-7]|38;5|48;5)" ||
		fail "no colour at all without NO_COLOR"
fi

# 2. `.` steps to the next point: still stopped, one publication done.
tm send-keys -t "$T" '.'
wait_for '(PAUSED|BREAK) .*pub 1/' || fail "step did not stop after publication 1"

# 3. A breakpoint on mature selections from the breakpoint list.
tm send-keys -t "$T" 'b'
wait_for 'Breakpoints' 10 || fail "b did not open the breakpoint list"
tm send-keys -t "$T" 'a'
tm send-keys -t "$T" -l 'mature'
tm send-keys -t "$T" Enter
wait_for 'breakpoint 1: mature' 10 || fail "the breakpoint was not added"
tm send-keys -t "$T" 'b' # close the list

# 4. `]` runs to it: BREAK, and the pending selection has mature inputs.
tm send-keys -t "$T" ']'
wait_for 'BREAK' || fail "] did not reach the mature breakpoint"
wait_for 'mature [1-9][0-9]* \(' 10 ||
	fail "the pending selection shows no mature inputs"

# 5. Resize: narrower, the minimum notice, wider; the status line stays.
check_width() {
	local w h
	w=$(tm display -p -t "$T" '#{window_width}')
	h=$(tm display -p -t "$T" '#{window_height}')
	[ "$w" = "$1" ] && [ "$h" = "$2" ] || fail "window is ${w}x$h, not $1x$2"
}
tm resize-window -t "$T" -x 90 -y 30
check_width 90 30
wait_for 'Pending selection' || fail "no layout at 90x30"
wait_for 'BREAK' || fail "no status line at 90x30"
tm resize-window -t "$T" -x 70 -y 20
wait_for 'too small' 10 || fail "no too-small notice at 70x20"
tm resize-window -t "$T" -x 200 -y 60
check_width 200 60
wait_for 'Plugins' || fail "no plugin panel at 200x60"
wait_for 'BREAK .*pub [0-9]+/' || fail "no status line at 200x60"

# 6. Export what the event log shows: the format, then the path.
OUT=$WORK/events.jsonl
tm send-keys -t "$T" 'e'
wait_for 'export format .*jsonl' 10 || fail "e did not open the format field"
tm send-keys -t "$T" Enter
wait_for 'export to .*run\.jsonl' 10 ||
	fail "the path field does not offer the file next to the database"
tm send-keys -t "$T" C-u
tm send-keys -t "$T" -l "$OUT"
tm send-keys -t "$T" Enter
wait_for 'exported [0-9]+ merges' || fail "export did not say it exported"
[ -s "$OUT" ] || fail "export wrote no file at $OUT"
while IFS= read -r line; do
	case $line in
	'{"'*'}') ;;
	*) fail "export line is not a JSON object: $line" ;;
	esac
done <"$OUT"
# CSV to the offered default path.
tm send-keys -t "$T" 'e'
wait_for 'export format' 10 || fail "e did not open the format field"
tm send-keys -t "$T" C-u
tm send-keys -t "$T" -l 'csv'
tm send-keys -t "$T" Enter
wait_for 'export to .*run\.csv' 10 || fail "no default .csv path offered"
tm send-keys -t "$T" Enter
wait_for 'exported [0-9]+ merges as csv' || fail "the csv export failed"
head -1 "$WORK/run.csv" | grep -q '^seq,' || fail "no CSV header in run.csv"
# The same file again: refused unless confirmed.
SUM=$(cksum <"$OUT")
tm send-keys -t "$T" 'e'
wait_for 'export format' 10 || fail "e did not open the format field"
tm send-keys -t "$T" C-u
tm send-keys -t "$T" -l 'jsonl'
tm send-keys -t "$T" Enter
tm send-keys -t "$T" C-u
tm send-keys -t "$T" -l "$OUT"
tm send-keys -t "$T" Enter
wait_for 'exists: write over it' 10 || fail "no confirmation for an existing file"
tm send-keys -t "$T" 'n'
wait_for 'not exported' 10 || fail "n did not keep the file"
[ "$(cksum <"$OUT")" = "$SUM" ] || fail "the refused export changed $OUT"

# 7. Quit: the terminal is restored and the command says where the
#    events are.
tm send-keys -t "$T" 'q'
wait_for 'EXITED [0-9]+' || fail "q did not end the TUI"
screen | grep -q 'EXITED 0' || fail "the TUI exited with an error"
screen | grep -Fq "events recorded in $DB" || fail "no closing line"
[ "$(tm display -p -t "$T" '#{alternate_on}')" = 0 ] ||
	fail "the alternate screen is still on"
# Nothing of the last frame stays: the window was resized while the TUI
# was up (step 5), and tmux then brought the rows of the alternate screen
# back under the lines the command printed at quit.
screen | grep -Eq '[│┌└┐┘]|^[+|]-|F1Help|Inventory|Plugins' &&
	fail "the last frame is still on screen after quitting"
[ -s "$DB" ] || fail "no event database at $DB"
for f in "$WORK"/sanitizer.*; do
	[ -e "$f" ] && fail "sanitizer report in $f"
done
echo "PASS ($MODE)"
exit 0
