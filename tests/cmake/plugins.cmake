# Plugins area: SDK, loader, chain, staging, guard, the shipped plugins.
# Test-only plugins are MODULEs built into ${CMAKE_BINARY_DIR}/tests/plugins
# (MS_TEST_PLUGIN_DIR in the tests) from one source, one kind each.
set(MS_TP_KINDS slow:1 fail:2 short:3 badval:4 badabi:5 newminor:6
	nodecide:7 openfail:8 mask:9 olddesc:10 noentry:11 loop:12 segv:13
	abort:14 exit:15 garble:16 openhang:17 liar:18 openmsg:19
	closehang:20 ctorhang:21 entryhang:22 statshang:23 overrun:24
	badname:25 cbcrash:26 log:27 underrun:28 spin:29 hog:30
	bigcount:31)
set(MS_TEST_PLUGINS)
foreach(kv ${MS_TP_KINDS})
	string(REPLACE ":" ";" kv ${kv})
	list(GET kv 0 kind)
	list(GET kv 1 num)
	set(t tp_${kind})
	add_library(${t} MODULE ${CMAKE_CURRENT_SOURCE_DIR}/plugins/testplugin.c)
	target_include_directories(${t} PRIVATE ${CMAKE_SOURCE_DIR}/plugins/sdk)
	target_compile_definitions(${t} PRIVATE TP_KIND=${num}
		TP_NAME="tp_${kind}")
	set_target_properties(${t} PROPERTIES PREFIX "" OUTPUT_NAME ${t}
		LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/tests/plugins
		C_VISIBILITY_PRESET hidden)
	list(APPEND MS_TEST_PLUGINS ${t})
endforeach()

ms_add_test(test_plugin_loader LIBS mscore)
add_dependencies(test_plugin_loader ${MS_TEST_PLUGINS} alwayskeep detdrop
	skywalking)

ms_add_test(test_chain LIBS mscore)
add_dependencies(test_chain ${MS_TEST_PLUGINS} alwayskeep)
# Its links' workers find no room for a thread (a wrapper of
# pthread_create in tests/thread_testlib.h).
target_link_options(test_chain PRIVATE -Wl,--wrap=pthread_create)
# Its chains find no memory at each allocation in turn (the wrappers of
# malloc in tests/alloc_testlib.h): the chain's own records are plain
# malloc memory.
ms_alloc_fail_test(test_chain)
if(TARGET mergescope)
	# The process-mode tests use the executable as plugin host.
	add_dependencies(test_chain mergescope)
endif()

ms_add_test(test_staging LIBS mscore)
add_dependencies(test_staging ${MS_TEST_PLUGINS} alwayskeep)

ms_add_test(test_guard LIBS mscore)

ms_add_test(test_skywalking LIBS mscore)
add_dependencies(test_skywalking skywalking)
ms_add_test(test_detdrop LIBS mscore)
add_dependencies(test_detdrop detdrop)

# Benchmark (never a test): Decide ns/trace per plugin and batch size.
add_executable(bench_decide ${CMAKE_CURRENT_SOURCE_DIR}/bench/bench_decide.c)
target_link_libraries(bench_decide PRIVATE mscore)
target_compile_definitions(bench_decide PRIVATE
	MS_PLUGIN_DIR="${MS_PLUGIN_DIR}"
	MS_HOST_EXE="${CMAKE_BINARY_DIR}/tui/mergescope")
add_dependencies(bench_decide alwayskeep detdrop skywalking)
if(TARGET mergescope)
	add_dependencies(bench_decide mergescope)
endif()
add_dependencies(benches bench_decide)

# Misbehaving plugins (loop, segv, abort, exit) in real headless runs of
# the `mergescope` executable.
if(TARGET msfixtures AND TARGET mergescope)
	ms_add_test(test_plugin_faults LIBS msfixtures mscore
		PkgConfig::SQLITE)
	add_dependencies(test_plugin_faults mergescope skywalking
		${MS_TEST_PLUGINS})
	# Real runs, three of them waiting out 5 s Decide timeouts.
	set_tests_properties(test_plugin_faults PROPERTIES TIMEOUT 900)
endif()
