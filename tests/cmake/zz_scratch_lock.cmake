# Every test that starts `mergescope run` or `tui` sweeps the leftovers of
# dead owners from the scratch root at its start, as a user's run does.
# test_cli_faults kills runs on purpose and then looks for what they left,
# so these tests take one lock and never overlap. The root is the build
# tree's own (MERGESCOPE_SCRATCH, set in tests/CMakeLists.txt), so the lock
# only has to order the tests of one tree. (This file is read after the
# other areas: it names their tests.)
foreach(t test_cli_faults test_cli_run test_cli_bench test_cli_fixture
		e2e_tui_smoke_color
		e2e_tui_smoke_nocolor e2e_tui_steer e2e_tui_mouse test_plugin_faults
		e2e_tui_plugin_crash e2e_tui_freeze_first e2e_tui_cooldown_seek
		e2e_tui_terms e2e_tui_signals e2e_tui_80x24)
	if(TEST ${t})
		set_tests_properties(${t} PROPERTIES RESOURCE_LOCK ms_scratch)
	endif()
endforeach()
