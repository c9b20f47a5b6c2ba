# The picker and the engine (dispatcher, lanes, merge-idle, finalize).
# Threaded code: also run test_engine once under ThreadSanitizer with
#   cmake -S . -B build-tsan -DMS_TSAN=ON -DCMAKE_BUILD_TYPE=Debug
#   cmake --build build-tsan --target test_engine && build-tsan/tests/test_engine
ms_add_test(test_picker LIBS mscore)
# test_engine drives real merges on real shards; its 500-publication
# sequence runs four times and is fsync-bound, so it gets more time.
ms_add_test(test_engine LIBS mscore)
ms_uses_plugins(test_engine) # a pipeline of the shipped alwayskeep
set_tests_properties(test_engine PROPERTIES TIMEOUT 900)
# test_engine leaves an engine no room for a thread (the wrapper of
# pthread_create in tests/thread_testlib.h).
if(TARGET test_engine)
	target_link_options(test_engine PRIVATE -Wl,--wrap=pthread_create)
endif()
# bench_picker: one picker run against only sorting the same candidates.
# Run: cmake --build build --target bench_picker && build/tests/bench_picker
add_executable(bench_picker ${CMAKE_CURRENT_SOURCE_DIR}/bench/bench_picker.c)
target_link_libraries(bench_picker PRIVATE mscore)
add_dependencies(benches bench_picker)
# bench_checkpoint: taking a checkpoint of a shard at merge-idle and going
# back to it (core/checkpoint.c), for 30 and 300 active parts.
# Run: cmake --build build --target bench_checkpoint && build/tests/bench_checkpoint [DIR]
add_executable(bench_checkpoint ${CMAKE_CURRENT_SOURCE_DIR}/bench/bench_checkpoint.c)
target_link_libraries(bench_checkpoint PRIVATE mscore)
target_include_directories(bench_checkpoint PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
add_dependencies(benches bench_checkpoint)
