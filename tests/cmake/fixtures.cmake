# Fixture generator: schedule, time map, manifest, whole builds.
ms_add_test(test_fixture_schedule LIBS msfixtures)
ms_add_test(test_fixture_timemap LIBS msfixtures)
ms_add_test(test_fixture_build LIBS msfixtures)
ms_add_test(test_fixture_density LIBS msfixtures)
ms_add_test(test_manifest LIBS msfixtures PkgConfig::SQLITE)
# test_manifest fails the allocations of a directory's hash
# (tests/alloc_testlib.h).
ms_alloc_fail_test(test_manifest)
# test_fixture_build reads the stack size of the threads a build starts
# (the wrapper of pthread_create in tests/thread_testlib.h).
if(TARGET test_fixture_build)
	target_link_options(test_fixture_build PRIVATE -Wl,--wrap=pthread_create)
endif()
# Whole builds run the real sampler plugin (and one whose open() hangs).
add_dependencies(test_fixture_build skywalking tp_openhang)
add_dependencies(test_fixture_density skywalking)

# Benchmark: build (and check) time of a fixture; see tests/bench/README.md.
add_executable(bench_fixture ${CMAKE_CURRENT_SOURCE_DIR}/bench/bench_fixture.c)
target_link_libraries(bench_fixture PRIVATE msfixtures)
target_compile_definitions(bench_fixture PRIVATE
	MS_PLUGIN_DIR="${MS_PLUGIN_DIR}")
add_dependencies(bench_fixture skywalking)
add_dependencies(benches bench_fixture)

# bench_refbytes: a fixture's consolidated core rows counted in the
# reference's trace part encoding (fixtures/refenc.c, the core_density
# gate's model), part by part and file by file, beside our payload; see
# tests/bench/README.md. test_refenc holds the encoders to hand-computed
# vectors.
add_executable(bench_refbytes ${CMAKE_CURRENT_SOURCE_DIR}/bench/bench_refbytes.c)
target_link_libraries(bench_refbytes PRIVATE msfixtures)
add_dependencies(benches bench_refbytes)
ms_add_test(test_refenc LIBS msfixtures)
