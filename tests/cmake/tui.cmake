# tui: layout over every size, the virtual-screen snapshots, keys against
# a fake controller, the command line; the frame benchmark.
ms_add_test(test_tui_layout LIBS mstui)
ms_add_test(test_tui_screen LIBS mstui)
ms_add_test(test_tui_keys LIBS mstui)
ms_add_test(test_tui_cli LIBS mstui)
# test_tui_cli fails a command's allocation by its size
# (tests/alloc_testlib.h).
ms_alloc_fail_test(test_tui_cli)

add_executable(bench_tui ${CMAKE_CURRENT_SOURCE_DIR}/bench/bench_tui.c)
target_include_directories(bench_tui PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(bench_tui PRIVATE mstui)
add_dependencies(benches bench_tui)

# The figures of a merge in progress, through the real replay: a merge held
# in Decide by tp_slow (replay_testlib.h reaches replay_int.h).
ms_add_test(test_tui_live LIBS mstui msfixtures msreplay mscore)
foreach(p skywalking tp_slow tp_log)
	if(TARGET ${p})
		add_dependencies(test_tui_live ${p})
	endif()
endforeach()
