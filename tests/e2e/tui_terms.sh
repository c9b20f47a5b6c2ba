#!/usr/bin/env bash
# tui_terms.sh - the TUI under the terminal types users have, in tmux on
# the smoke fixture:
#  1. TERM=xterm-256color inside tmux: tmux sends End and Home as
#     ESC [ 4 ~ and ESC [ 1 ~, which that terminal description does not
#     list. Stopped at the finalize's barrier (`--break sampling`), End
#     and Home move in the event log and nothing else: the `[` of the
#     sequence no longer goes back one barrier (re-running the replay);
#  2. at 80 columns the export's question about an existing file shows
#     whole, its long path shortened from the left, and `n` keeps the
#     file;
#  3. TERM=dumb (no cursor addressing) is refused with one line naming
#     it, exit status 2, instead of frames written as lines (after 4),
#     before the run opens: no event database is left behind;
#  4. with stdin from /dev/null the keys come from the terminal: q
#     quits (no key reached the screen, and it spun a core).
#
# usage: tui_terms.sh MERGESCOPE
# Exit status: 0 pass, 1 fail, 77 skipped (tmux is not installed).
set -u

MS=${1:?usage: tui_terms.sh MERGESCOPE}
MODE=terms
. "$(dirname "$0")/e2e_lib.sh"

BASE_ENVS=$ENVS
ENVS="$BASE_ENVS TERM=xterm-256color"
# A long directory name, so the export's default path is long.
LONG=$WORK/a-directory-with-a-rather-long-name-for-the-export-question
mkdir -p "$LONG"
DB=$LONG/run.sqlite
e2e_start 132 44 --fixture "$FX" --db "$DB" --speed max --break sampling
wait_for 'BREAK +at sampling ' 60 || fail "no BREAK at sampling"
BEFORE=$(screen | grep -o 'Pending selection #[0-9]*')
[ -n "$BEFORE" ] || fail "no pending selection at the break"

# 1. End and Home: the log moves, the replay stays at its barrier.
tm send-keys -t "$T" Tab Tab Tab
tm send-keys -t "$T" Home
sleep 0.5
tm send-keys -t "$T" End
sleep 0.5
screen | grep -q 'back one barrier' && fail "Home/End went back one barrier"
wait_for 'BREAK +at sampling ' 5 || fail "Home/End left the breakpoint"
screen | grep -q "$BEFORE" || fail "no longer at the barrier: $BEFORE"
screen | grep -Eq '(^|[^0-9])[14]~' && fail "the sequence's bytes showed"

# 2. At 80 columns, the question about an existing file shows whole.
tm resize-window -t "$T" -x 80 -y 24
EXPORT=$LONG/run.jsonl
echo old >"$EXPORT"
tm send-keys -t "$T" 'e'
wait_for 'export format' 5 || fail "e did not ask for the format"
tm send-keys -t "$T" Enter
wait_for 'export to' 5 || fail "no path prompt"
tm send-keys -t "$T" Enter
wait_for 'run\.jsonl exists: write over it\? \(y/N\)' 5 ||
	fail "the question about the existing file does not show whole"
tm send-keys -t "$T" 'n'
wait_for 'not exported' 5 || fail "n did not keep the file"
[ "$(cat "$EXPORT")" = old ] || fail "the file was written over"
e2e_quit

# 4. Stdin not a terminal (`< /dev/null`): the keys come from the
#    terminal all the same (no key reached the screen, q included).
ENVS=$BASE_ENVS
tm respawn-pane -k -t "$T" \
	"env $ENVS bash -c '\"$MS\" tui --fixture \"$FX\" --db \"$WORK/null.sqlite\" --paused </dev/null; echo EXITED \$?; sleep 600'" ||
	fail "tmux cannot respawn"
wait_for 'PAUSED +at the start t ' 30 || fail "no PAUSED at pub 0 with stdin from /dev/null"
tm send-keys -t "$T" 'q'
wait_for 'EXITED [0-9]+' 10 || fail "q did not reach the TUI with stdin from /dev/null"
screen | grep -q 'EXITED 0' || fail "the TUI exited with an error"

# 3. TERM=dumb is refused, naming it.
ENVS="$BASE_ENVS TERM=dumb"
e2e_start 80 24 --fixture "$FX" --db "$WORK/dumb.sqlite" --speed max
wait_for 'EXITED [0-9]+' 30 || fail "the TUI did not end under TERM=dumb"
screen | grep -q 'terminal type "dumb" cannot move the cursor' ||
	fail "no line naming TERM=dumb"
screen | grep -q 'EXITED 2' || fail "TERM=dumb did not exit with status 2"
# Refused before the run opens: no event database recorded as aborted,
# no work dir line, for a session that never showed.
[ -e "$WORK/dumb.sqlite" ] && fail "TERM=dumb left an event database"
screen | grep -q 'work dir' && fail "TERM=dumb said where the run works"
echo "PASS ($MODE)"
exit 0
