#!/usr/bin/env bash
# tui_signals.sh - the TUI stopped by a signal, in a real terminal (tmux),
# exits as `run` does: Ctrl-C (SIGINT) 130, SIGTERM 143, SIGHUP 129,
# SIGPIPE 141, each time with the terminal restored (alternate screen
# off), one line naming the signal, the event database saying aborted and
# the scratch shard gone; q still exits 0.
#
# usage: tui_signals.sh MERGESCOPE
# Exit status: 0 pass, 1 fail, 77 skipped (tmux is not installed).
set -u

MS=${1:?usage: tui_signals.sh MERGESCOPE}
MODE=signals
. "$(dirname "$0")/e2e_lib.sh"

# The mergescope process in the pane (the shell's child).
tui_pid() {
	local sh
	sh=$(tm display -p -t "$T" '#{pane_pid}')
	pgrep -P "$sh" -x mergescope | head -n 1
}

# One session stopped by $1 (INT: Ctrl-C typed; else kill -$1), which
# must exit $2.
stopped_by() {
	local sig=$1 want=$2 n=$3
	local db=$WORK/run-$n.sqlite shard=$WORK/run-$n.shard
	e2e_start 120 40 --fixture "$FX" --db "$db" --work-dir "$shard" \
		--paused --variant skywalking
	wait_for 'PAUSED .*pub 0/' || fail "SIG$sig: the TUI did not come up"
	[ -d "$shard" ] || fail "SIG$sig: no scratch shard $shard"
	if [ "$sig" = INT ]; then
		tm send-keys -t "$T" C-c
	else
		local pid
		pid=$(tui_pid)
		[ -n "$pid" ] || fail "SIG$sig: no mergescope process in the pane"
		kill -"$sig" "$pid"
	fi
	wait_for 'EXITED [0-9]+' 60 || fail "SIG$sig did not end the TUI"
	screen | grep -q "EXITED $want" ||
		fail "SIG$sig: exit status is not $want"
	screen | grep -Fq "mergescope tui: stopped by SIG$sig; recorded as aborted in $db" ||
		fail "SIG$sig: no line naming the signal and the database"
	[ "$(tm display -p -t "$T" '#{alternate_on}')" = 0 ] ||
		fail "SIG$sig: the alternate screen is still on"
	[ ! -e "$shard" ] || fail "SIG$sig: the scratch shard $shard is left"
	"$MS" report --db "$db" >"$WORK/report-$n.txt" 2>&1
	grep -Eq 'status +aborted' "$WORK/report-$n.txt" || {
		cat "$WORK/report-$n.txt"
		fail "SIG$sig: the event database does not say aborted"
	}
}

stopped_by INT 130 1
stopped_by TERM 143 2
stopped_by HUP 129 3
stopped_by PIPE 141 4

# q is not a signal: 0, as before.
e2e_start 120 40 --fixture "$FX" --db "$WORK/run-q.sqlite" --paused
wait_for 'PAUSED .*pub 0/' || fail "q: the TUI did not come up"
e2e_quit
echo "PASS"
