# Replay layer: event log, exports, reports.
ms_add_test(test_recorder LIBS msreplay mscore)
foreach(t test_export test_report)
	if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${t}.c)
		ms_add_test(${t} LIBS msreplay mscore)
	endif()
endforeach()
# test_export fails one malloc of the output file's open (a wrapper in
# the test).
if(TARGET test_export)
	target_link_options(test_export PRIVATE -Wl,--wrap=malloc)
endif()
if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/bench/bench_recorder.c)
	add_executable(bench_recorder ${CMAKE_CURRENT_SOURCE_DIR}/bench/bench_recorder.c)
	target_link_libraries(bench_recorder PRIVATE msreplay mscore)
	target_include_directories(bench_recorder PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
	add_dependencies(benches bench_recorder)
endif()
