# End-to-end TUI tests in a real terminal (tmux): the `mergescope` binary
# on the smoke fixture, once with colours and once with NO_COLOR=1. The
# scripts exit 77 (skipped) only when tmux is missing; scripts/deps.sh
# (make deps) installs it. In the sanitizer tree they drive the ASan+UBSan
# binary.
foreach(mode color nocolor)
	add_test(NAME e2e_tui_smoke_${mode}
		COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/tui_smoke.sh
			$<TARGET_FILE:mergescope> ${mode})
	set_tests_properties(e2e_tui_smoke_${mode} PROPERTIES
		SKIP_RETURN_CODE 77 TIMEOUT 300)
endforeach()

# Steering: g forward at full speed, targets behind refused, a time
# breakpoint stopping as BREAK.
add_test(NAME e2e_tui_steer
	COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/tui_steer.sh
		$<TARGET_FILE:mergescope>)
set_tests_properties(e2e_tui_steer PROPERTIES
	SKIP_RETURN_CODE 77 TIMEOUT 300)

# The mouse: clicks select rows, the wheel scrolls.
add_test(NAME e2e_tui_mouse
	COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/tui_mouse.sh
		$<TARGET_FILE:mergescope>)
set_tests_properties(e2e_tui_mouse PROPERTIES
	SKIP_RETURN_CODE 77 TIMEOUT 300)

# The first key at a breakpoint, with the last session's breakpoints on
# offer: `f` freezes (the offer never eats a command).
add_test(NAME e2e_tui_freeze_first
	COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/tui_freeze_first.sh
		$<TARGET_FILE:mergescope>)
set_tests_properties(e2e_tui_freeze_first PROPERTIES
	SKIP_RETURN_CODE 77 TIMEOUT 300)

# A plugin crashing inside Decide under the TUI: terminal restored, record
# and exit status (tests/plugins' tp_segv).
add_test(NAME e2e_tui_plugin_crash
	COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/e2e/tui_plugin_crash.sh
		$<TARGET_FILE:mergescope> ${CMAKE_BINARY_DIR}/tests/plugins)
set_tests_properties(e2e_tui_plugin_crash PROPERTIES
	SKIP_RETURN_CODE 77 TIMEOUT 300)
