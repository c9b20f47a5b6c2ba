#!/usr/bin/env bash
# tui_80x24.sh - the TUI on the smallest screen it lays out, 80x24, in
# tmux on the smoke fixture: what reads wrong there and nowhere else.
#  1. the lines printed on the terminal before the screen comes up (where
#     the run's shard goes) and after it is gone (where the events are):
#     wrapped at spaces, never a word cut by the terminal's edge (a line
#     of the full 80 columns);
#
# usage: tui_80x24.sh MERGESCOPE
# Exit status: 0 pass, 1 fail, 77 skipped (tmux is not installed).
set -u

MS=${1:?usage: tui_80x24.sh MERGESCOPE}
MODE=80x24
. "$(dirname "$0")/e2e_lib.sh"

DB=$WORK/run.sqlite
e2e_start 80 24 --fixture "$FX" --db "$DB" --variant skywalking --paused
wait_for 'PAUSED .*pub 0/' || fail "no status line PAUSED at pub 0"

# 1. Quit: the work dir line from before the screen, and the database's
#    line after it, on the terminal.
e2e_quit
screen | grep -q '^work dir ' || fail "no work dir line before the screen"
screen | grep -q '^events recorded in ' || fail "no events recorded line"
screen | awk 'length($0) >= 80 { bad = 1 } END { exit bad }' ||
	fail "a line cut by the terminal's edge (80 columns)"
# Its wrapped lines joined again give the line whole.
screen | sed 's/^  / /' | tr -d '\n' |
	grep -Fq "events recorded in $DB (stopped before the end: recorded as aborted)" ||
	fail "the events recorded line does not read whole"
exit 0
