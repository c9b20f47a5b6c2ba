# Replay layer: event log, exports, reports.
ms_add_test(test_recorder LIBS msreplay mscore)
foreach(t test_export test_report)
	if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${t}.c)
		ms_add_test(${t} LIBS msreplay mscore)
	endif()
endforeach()
# These fail allocations of the replay layer (tests/alloc_testlib.h).
foreach(t test_recorder test_export test_report)
	if(TARGET ${t})
		ms_alloc_fail_test(${t})
	endif()
endforeach()
if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/bench/bench_recorder.c)
	add_executable(bench_recorder ${CMAKE_CURRENT_SOURCE_DIR}/bench/bench_recorder.c)
	target_link_libraries(bench_recorder PRIVATE msreplay mscore)
	target_include_directories(bench_recorder PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
	add_dependencies(benches bench_recorder)
endif()
# test_recorder leaves the commit timer no room for its thread (a wrapper
# of pthread_create in tests/thread_testlib.h).
if(TARGET test_recorder)
	target_link_options(test_recorder PRIVATE -Wl,--wrap=pthread_create)
endif()
