# `mergescope bench`: a series on the real binary in child processes, the
# summary statistics, --collect, the job lists for GNU parallel and Slurm.
if(TARGET mergescope)
	ms_add_test(test_cli_bench LIBS msreplay mscore)
	target_compile_definitions(test_cli_bench PRIVATE
		MS_MERGESCOPE_BIN="$<TARGET_FILE:mergescope>")
	add_dependencies(test_cli_bench mergescope)
	foreach(p alwayskeep detdrop skywalking)
		if(TARGET ${p})
			add_dependencies(test_cli_bench ${p})
		endif()
	endforeach()
endif()
