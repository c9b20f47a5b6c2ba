# Inventory, recovery, ledgers, clock and resource counters (core/shard.c,
# core/ledger*.c, core/clock.c, core/rusage.c).
ms_add_test(test_clock LIBS mscore)
ms_add_test(test_ledger LIBS mscore)
ms_add_test(test_shard LIBS mscore)
# Its reaper finds no room for a thread (a wrapper of pthread_create in
# tests/thread_testlib.h).
target_link_options(test_shard PRIVATE -Wl,--wrap=pthread_create)

add_executable(bench_shard ${CMAKE_CURRENT_SOURCE_DIR}/bench/bench_shard.c)
target_link_libraries(bench_shard PRIVATE mscore)
target_include_directories(bench_shard PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
add_dependencies(benches bench_shard)
