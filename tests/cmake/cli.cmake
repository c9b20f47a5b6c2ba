# The wired commands (run, export, report, tui handing over to run) through
# ms_cli_main on a smoke fixture. They load the shipped plugins.
ms_add_test(test_cli_run LIBS mstui msfixtures msreplay mscore)
foreach(p alwayskeep detdrop skywalking)
	if(TARGET ${p})
		add_dependencies(test_cli_run ${p})
	endif()
endforeach()

# What watching costs: the replay under the TUI session loop against the
# same replay headless (tests/bench/README.md).
add_executable(bench_tui_replay ${CMAKE_CURRENT_SOURCE_DIR}/bench/bench_tui_replay.c)
target_link_libraries(bench_tui_replay PRIVATE mstui msfixtures msreplay mscore
	Threads::Threads)
target_compile_definitions(bench_tui_replay PRIVATE
	MS_PLUGIN_DIR="${MS_PLUGIN_DIR}")
add_dependencies(benches bench_tui_replay)
foreach(p alwayskeep detdrop skywalking)
	if(TARGET ${p})
		add_dependencies(bench_tui_replay ${p})
	endif()
endforeach()

# Faults on the real binary in child processes: a file system refusing the
# merge output (RLIMIT_FSIZE), signals to headless runs, leftovers of
# killed runs and builds, `mergescope clean`.
if(TARGET mergescope)
	ms_add_test(test_cli_faults LIBS msreplay mscore)
	target_compile_definitions(test_cli_faults PRIVATE
		MS_MERGESCOPE_BIN="$<TARGET_FILE:mergescope>")
	add_dependencies(test_cli_faults mergescope)
	foreach(p alwayskeep detdrop skywalking)
		if(TARGET ${p})
			add_dependencies(test_cli_faults ${p})
		endif()
	endforeach()
endif()
