#!/usr/bin/env bash
# tui_plugin_crash.sh - a plugin that segfaults inside Decide while the TUI
# runs, in a real terminal (tmux): the terminal comes back restored
# (alternate screen off, canonical mode and echo on), one line says
# "aborted: plugin tp_segv crashed in Decide (SIGSEGV)", the exit status
# is 139, the event database says aborted with that reason, and the
# scratch shard is gone. Twice: with the terminal as standard input, and
# with standard input from /dev/null (the TUI then reads keys from
# /dev/tty; the terminal it drew on is the one put back).
#
# usage: tui_plugin_crash.sh MERGESCOPE TEST_PLUGIN_DIR
#   The executable is copied next to a plugins/ directory holding the
#   test plugins, so that it finds tp_segv.
# Exit status: 0 pass, 1 fail, 77 skipped (tmux is not installed).
set -u

MS_SRC=${1:?usage: tui_plugin_crash.sh MERGESCOPE TEST_PLUGIN_DIR}
TPDIR=${2:?usage: tui_plugin_crash.sh MERGESCOPE TEST_PLUGIN_DIR}
MS=$MS_SRC
MODE=crash
. "$(dirname "$0")/e2e_lib.sh"

mkdir -p "$WORK/bin" "$WORK/plugins"
cp "$MS_SRC" "$WORK/bin/mergescope" || fail "cannot copy $MS_SRC"
ln -s "$TPDIR"/tp_*.so "$WORK/plugins/" || fail "no test plugins in $TPDIR"
MS=$WORK/bin/mergescope

# One crashing run: crash_run LABEL STDIN
crash_run() {
	local label=$1 in=$2
	DB=$WORK/run-$label.sqlite
	SHARD=$WORK/run-$label.shard
	rm -f "$WORK/stty"
	# Each run in a session of its own, the earlier one left in place:
	# killing the server's last session makes the server exit, and a
	# new-session racing that exit fails with "server exited
	# unexpectedly".
	T=crash-$label
	MODE="crash, stdin $label"
	tm new-session -d -s "$T" -x 120 -y 40 \
		"env $ENVS bash -c '\"$MS\" tui --fixture \"$FX\" --db \"$DB\" --work-dir \"$SHARD\" --chain tp_segv --speed max <$in; echo EXITED \$?; stty -a > \"$WORK/stty\"; sleep 600'" ||
		fail "tmux cannot start"
	tm set-option -t "$T" status off >/dev/null

	wait_for 'EXITED [0-9]+' 120 || fail "the TUI did not end"
	screen | grep -q 'EXITED 139' || fail "exit status is not 139 (128 + SIGSEGV)"
	screen | grep -Fq 'mergescope: aborted: plugin tp_segv crashed in Decide (SIGSEGV)' ||
		fail "no line naming the plugin and the signal"
	[ "$(tm display -p -t "$T" '#{alternate_on}')" = 0 ] ||
		fail "the alternate screen is still on"
	for i in $(seq 50); do
		[ -s "$WORK/stty" ] && break
		sleep 0.1
	done
	grep -Eq '(^| )icanon( |$)' "$WORK/stty" || fail "the terminal is not in canonical mode"
	grep -Eq '(^| )echo( |$)' "$WORK/stty" || fail "the terminal does not echo"
	[ ! -e "$SHARD" ] || fail "the scratch shard $SHARD is left"
	"$MS" report --db "$DB" >"$WORK/report.txt" 2>&1 || true
	grep -Eq 'status +aborted' "$WORK/report.txt" || {
		cat "$WORK/report.txt"
		fail "the event database does not say aborted"
	}
}

crash_run tty /dev/tty
crash_run null /dev/null
echo "PASS"
