# Inventory, recovery, ledgers, clock and resource counters (core/shard.c,
# core/ledger*.c, core/clock.c, core/rusage.c).
ms_add_test(test_clock LIBS mscore)
ms_add_test(test_ledger LIBS mscore)
ms_add_test(test_shard LIBS mscore)

add_executable(bench_shard ${CMAKE_CURRENT_SOURCE_DIR}/bench/bench_shard.c)
target_link_libraries(bench_shard PRIVATE mscore)
target_include_directories(bench_shard PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
add_dependencies(benches bench_shard)
