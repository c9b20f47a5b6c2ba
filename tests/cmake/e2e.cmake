# End-to-end TUI tests in a real terminal (tmux): the `mergescope` binary
# on the smoke fixture, once with colours and once with NO_COLOR=1. The
# scripts exit 77 (skipped) only when tmux is missing; scripts/deps.sh
# (make deps) installs it. In the sanitizer tree they drive the ASan+UBSan
# binary.

# Test NAME runs e2e/SCRIPT on the mergescope binary, with the further
# arguments given after SCRIPT.
function(ms_e2e_test name script)
	add_test(NAME ${name}
		COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/${script}
			$<TARGET_FILE:mergescope> ${ARGN})
	set_tests_properties(${name} PROPERTIES
		SKIP_RETURN_CODE 77 TIMEOUT 300)
endfunction()

foreach(mode color nocolor)
	ms_e2e_test(e2e_tui_smoke_${mode} tui_smoke.sh ${mode})
endforeach()

# Steering: g forward at full speed, targets behind refused, a time
# breakpoint stopping as BREAK.
ms_e2e_test(e2e_tui_steer tui_steer.sh)

# Going back from the finalize's barrier in the cooldown, where `make run`
# stops: in the same database, to the end with every gate passing.
ms_e2e_test(e2e_tui_cooldown_seek tui_cooldown_seek.sh)

# Going back without a checkpoint (the day again, a new database): to the
# point asked for, past the breakpoints on the way.
ms_e2e_test(e2e_tui_rerun_breaks tui_rerun_breaks.sh)

# Restarts in a row, at a breakpoint, and quitting right after one: every
# database whole by itself, every scratch shard gone.
ms_e2e_test(e2e_tui_restarts tui_restarts.sh)

# The mouse: clicks select rows, the wheel scrolls.
ms_e2e_test(e2e_tui_mouse tui_mouse.sh)

# The first key at a breakpoint, with the last session's breakpoints on
# offer: `f` freezes (the offer never eats a command).
ms_e2e_test(e2e_tui_freeze_first tui_freeze_first.sh)

# A plugin crashing inside Decide under the TUI: terminal restored, record
# and exit status (tests/plugins' tp_segv).
ms_e2e_test(e2e_tui_plugin_crash tui_plugin_crash.sh
	${CMAKE_BINARY_DIR}/tests/plugins)

# Terminal types: End/Home as tmux sends them under xterm-256color, the
# export's question at 80 columns, TERM=dumb refused.
ms_e2e_test(e2e_tui_terms tui_terms.sh)

# Signals: Ctrl-C, SIGTERM, SIGHUP and SIGPIPE stop the TUI as they stop
# `run` (128 + N, recorded as aborted, the shard removed); q exits 0.
ms_e2e_test(e2e_tui_signals tui_signals.sh)

# At 80x24: the lines around the screen wrapped at spaces, the pending
# selection's staging plan in words, z with the timeline folded away,
# the gates clear of the border.
ms_e2e_test(e2e_tui_80x24 tui_80x24.sh)
