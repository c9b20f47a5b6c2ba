# `mergescope bench`: a series on the real binary in child processes, the
# summary statistics, --collect, the job lists for GNU parallel and Slurm.
if(TARGET mergescope)
	ms_add_test(test_cli_bench LIBS mstui msreplay mscore)
	ms_uses_binary(test_cli_bench)
	# a run held in Decide, to be killed there
	if(TARGET tp_slow)
		add_dependencies(test_cli_bench tp_slow)
	endif()
	# fails allocations of the series summary (tests/alloc_testlib.h)
	ms_alloc_fail_test(test_cli_bench)
endif()

# bench_day: whole days end to end on a tmpfs and a disk (tests/bench).
add_executable(bench_day ${CMAKE_CURRENT_SOURCE_DIR}/bench/bench_day.c)
add_dependencies(benches bench_day)
if(TARGET mergescope)
	add_dependencies(bench_day mergescope)
endif()

# Every benchmark refuses a bad argument (exit 2 and its usage) before it
# builds, runs or prints anything; the benchmarks run as child processes.
ms_add_test(test_bench_args LIBS mscore)
add_dependencies(test_bench_args benches)
