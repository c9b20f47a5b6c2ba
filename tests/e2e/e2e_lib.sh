# e2e_lib.sh - what the tmux end-to-end scripts share: a private tmux
# server, a scratch directory removed on exit, waiting for the screen to
# match, failing with the screen (and any sanitizer report) printed, the
# smoke fixture, and the environment the TUI runs with. Sourced after the
# script set MS (the mergescope binary) and MODE (a label for messages).

if ! command -v tmux >/dev/null 2>&1; then
	echo "tmux is not installed: skipping (scripts/deps.sh installs it)"
	exit 77
fi

WORK=$(mktemp -d /tmp/ms-e2e-XXXXXX)
# A private tmux server, never the user's, its socket in $WORK so that it
# goes with it (under tmux's own directory every run left one behind).
SOCK=$WORK/tmux.sock
T=main
tm() { tmux -S "$SOCK" "$@"; }
cleanup() {
	tm kill-server >/dev/null 2>&1
	rm -rf "$WORK"
}
trap cleanup EXIT

fail() {
	echo "FAIL ($MODE): $*"
	echo "---- screen ----"
	tm capture-pane -p -t "$T" 2>/dev/null
	echo "----------------"
	for f in "$WORK"/sanitizer.*; do
		[ -e "$f" ] && { echo "---- $f ----"; cat "$f"; }
	done
	exit 1
}

screen() { tm capture-pane -p -t "$T"; }

# Wait (at most $2 seconds, default 30) until the screen matches the
# extended regex $1.
wait_for() {
	local re=$1 limit=${2:-30} i
	for ((i = 0; i < limit * 10; i++)); do
		if screen | grep -Eq -- "$re"; then
			return 0
		fi
		sleep 0.1
	done
	return 1
}

# The smoke fixture into $FX: `fixture build`, or, while that command is
# not in this build, the cache a headless run builds.
export XDG_CACHE_HOME=$WORK/cache
FX=$WORK/fixture
if ! "$MS" fixture build --preset smoke --seed 1 --out "$FX" \
	>"$WORK/fixture.log" 2>&1; then
	"$MS" run --headless --preset smoke --variant disabled \
		--db "$WORK/build.sqlite" >"$WORK/fixture.log" 2>&1 ||
		{
			cat "$WORK/fixture.log"
			echo "FAIL ($MODE): cannot build the smoke fixture"
			exit 1
		}
	FX=$XDG_CACHE_HOME/mergescope/smoke-1
fi
[ -f "$FX/manifest.sqlite" ] || fail "no fixture at $FX"

ENVS="XDG_CACHE_HOME=$XDG_CACHE_HOME"
# The build tree's scratch root (tests/CMakeLists.txt sets it) reaches the
# TUI in the pane too.
if [ -n "${MERGESCOPE_SCRATCH:-}" ]; then
	ENVS="$ENVS MERGESCOPE_SCRATCH=$MERGESCOPE_SCRATCH"
fi
# Under the sanitizers (make test-asan) their reports go to files the
# scripts print, since the pane would garble them.
if [ -n "${ASAN_OPTIONS:-}" ]; then
	ENVS="$ENVS ASAN_OPTIONS=$ASAN_OPTIONS:log_path=$WORK/sanitizer.asan"
fi
if [ -n "${UBSAN_OPTIONS:-}" ]; then
	ENVS="$ENVS UBSAN_OPTIONS=$UBSAN_OPTIONS:log_path=$WORK/sanitizer.ubsan"
fi

# Start "mergescope tui ARGS..." in a WxH window: e2e_start W H ARGS...
# (again: the running one is replaced)
e2e_start() {
	local w=$1 h=$2
	shift 2
	local args="" a
	for a in "$@"; do
		args="$args \"$a\""
	done
	local cmd="env $ENVS bash -c '\"$MS\" tui $args; echo EXITED \$?; sleep 600'"
	if tm has-session -t "$T" 2>/dev/null; then
		# A second session in the same window: replace the first.
		tm resize-window -t "$T" -x "$w" -y "$h"
		tm respawn-pane -k -t "$T" "$cmd" || fail "tmux cannot respawn"
		return
	fi
	tm new-session -d -s "$T" -x "$w" -y "$h" "$cmd" ||
		fail "tmux cannot start"
	tm set-option -t "$T" status off >/dev/null
}

# Quit with q and check the TUI exited 0 with no sanitizer report.
e2e_quit() {
	tm send-keys -t "$T" 'q'
	wait_for 'EXITED [0-9]+' || fail "q did not end the TUI"
	screen | grep -q 'EXITED 0' || fail "the TUI exited with an error"
	for f in "$WORK"/sanitizer.*; do
		[ -e "$f" ] && fail "sanitizer report in $f"
	done
}
