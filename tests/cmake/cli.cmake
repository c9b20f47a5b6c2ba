# The wired commands (run, export, report, tui handing over to run) through
# ms_cli_main on a smoke fixture. They load the shipped plugins.
ms_add_test(test_cli_run LIBS mstui msfixtures msreplay mscore)
ms_uses_plugins(test_cli_run)
# cli.h: the names the TUI's restarts derive from --db.
target_include_directories(test_cli_run PRIVATE ${CMAKE_SOURCE_DIR}/tui)
# And the binary itself, killed at its stop points (MERGESCOPE_TEST_STOP).
if(TARGET mergescope)
	ms_uses_binary(test_cli_run)
endif()
# test_cli_run leaves `tui` no room for its signal thread (a wrapper of
# pthread_create in tests/thread_testlib.h).
target_link_options(test_cli_run PRIVATE -Wl,--wrap=pthread_create)

# What watching costs: the replay under the TUI session loop against the
# same replay headless (tests/bench/README.md).
add_executable(bench_tui_replay ${CMAKE_CURRENT_SOURCE_DIR}/bench/bench_tui_replay.c)
target_link_libraries(bench_tui_replay PRIVATE mstui msfixtures msreplay mscore
	Threads::Threads)
target_compile_definitions(bench_tui_replay PRIVATE
	MS_PLUGIN_DIR="${MS_PLUGIN_DIR}")
add_dependencies(benches bench_tui_replay)
ms_uses_plugins(bench_tui_replay)

# Faults on the real binary in child processes: a file system refusing the
# merge output (RLIMIT_FSIZE), signals to headless runs, leftovers of
# killed runs and builds, `mergescope clean`.
if(TARGET mergescope)
	ms_add_test(test_cli_faults LIBS msreplay mscore)
	ms_uses_binary(test_cli_faults)
endif()

# `fixture build` refusing before it creates anything, and reusing only a
# fixture of the same options (test_cli_fixture.c); `run` naming --chain.
ms_add_test(test_cli_fixture LIBS mstui msfixtures msreplay mscore)
ms_uses_plugins(test_cli_fixture)
