#!/usr/bin/env bash
# tui_80x24.sh - the TUI on the smallest screen it lays out, 80x24, in
# tmux on the smoke fixture: what reads wrong there and nowhere else.
#  1. the lines printed on the terminal before the screen comes up (where
#     the run's shard goes) and after it is gone (where the events are):
#     wrapped at spaces, never a word cut by the terminal's edge (a line
#     of the full 80 columns);
#  2. at the finalize's barrier (`--break sampling`) the pending
#     selection says its staging plan in words ("will stage ~8.51M in 1
#     batch"), not "est 8.51M 1x pref 8.51M";
#  3. `z` says the timeline is not on this screen (it folds away below
#     34 rows), where it seemed to do nothing;
#  4. at the end the gates' details keep a blank column before the
#     border, where they ran into it;
#  5. the command of a frozen merge, said on quitting, wrapped at spaces
#     with each line continued (" \\"): it was one line the terminal cut
#     mid-word.
#
# usage: tui_80x24.sh MERGESCOPE
# Exit status: 0 pass, 1 fail, 77 skipped (tmux is not installed).
set -u

MS=${1:?usage: tui_80x24.sh MERGESCOPE}
MODE=80x24
. "$(dirname "$0")/e2e_lib.sh"

DB=$WORK/run.sqlite
e2e_start 80 24 --fixture "$FX" --db "$DB" --variant skywalking --paused
wait_for 'PAUSED +at the start t ' || fail "no status line PAUSED at pub 0"

# 1. Quit: the work dir line from before the screen, and the database's
#    line after it, on the terminal.
e2e_quit
screen | grep -q '^work dir ' || fail "no work dir line before the screen"
screen | grep -q '^events recorded in ' || fail "no events recorded line"
# The terminal's own wraps joined (-J): a line cut by the edge reads as
# one longer than 80 columns; a line of exactly 80 fits.
tm capture-pane -p -J -t "$T" | sed 's/ *$//' |
	awk 'length($0) > 80 { bad = 1 } END { exit bad }' ||
	fail "a line cut by the terminal's edge (80 columns)"
# Its wrapped lines joined again give the line whole.
screen | sed 's/^  / /' | tr -d '\n' |
	grep -Fq "events recorded in $DB (stopped before the end: recorded as aborted)" ||
	fail "the events recorded line does not read whole"

# 2. The finalize's barrier: the staging plan in words.
DB2=$WORK/run2.sqlite
e2e_start 80 24 --fixture "$FX" --db "$DB2" --variant skywalking \
	--speed max --break sampling
wait_for 'BREAK +at sampling ' 60 || fail "no BREAK at sampling"
wait_for 'stages? ~[0-9.]+[KMG]? in [0-9]+ batch' 5 ||
	fail "the pending selection's staging plan is not in words"
screen | grep -Eq '[0-9]x pref ' && fail "the staging plan as \"Nx pref\""
tm send-keys -t "$T" 'f'
wait_for 'frozen merge #[0-9]+ into' 10 || fail "f did not freeze"
# (the footer wraps the directory onto its next line)
DIR=$(screen | tail -3 | tr '\n' ' ' |
	sed -n 's/.*frozen merge #[0-9]* into *\([^ ]*\).*/\1/p')
[ -n "$DIR" ] || fail "no frozen directory in the footer"
trap 'rm -rf "$DIR"; cleanup' EXIT

# 3. z: the footer says the timeline is not on this screen.
tm send-keys -t "$T" 'z'
wait_for 'timeline: 6 hours around now \(not on this screen' 5 ||
	fail "z did not say the timeline is not on the screen"

# 4. The end: the gates, each line clear of the right border.
tm send-keys -t "$T" ' '
wait_for 'DONE' 60 || fail "the run did not end"
wait_for 'Gates +[0-9]+ pass' 10 || fail "no gates at the end"
# (box-drawing borders under a UTF-8 locale, ASCII ones without)
screen | sed -n '/Gates  *[0-9]* pass/,/^[└+]/p' | grep -E '[^ ][│|]$' &&
	fail "a gate's line runs into the border"
e2e_quit

# 5. The frozen merge's command said on quitting: wrapped at spaces, each
#    line continued with " \" (it went out on one line that the terminal
#    cut mid-word), and the lines joined as a shell joins them give it.
tm capture-pane -p -J -t "$T" | sed 's/ *$//' |
	awk 'length($0) > 80 { bad = 1 } END { exit bad }' ||
	fail "a line cut by the terminal's edge (80 columns) after a freeze"
CMD=$(screen | sed -n '/^replay the frozen merge with:/,/^events recorded/p' |
	sed '1d;$d' | sed -e ':a' -e '/\\$/N; s/ *\\\n */ /; ta' | sed 's/^ *//')
printf '%s\n' "$CMD" | grep -Eq "^/[^ ]*/mergescope merge-once --frozen $DIR --variant skywalking\$" ||
	fail "the frozen merge's command does not read whole: $CMD"
[ -d "$DIR" ] || fail "the frozen directory $DIR does not exist"
exit 0
