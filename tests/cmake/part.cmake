# Part format, secondary index parts and the allocator (core/part_*.c,
# core/sidx.c, core/bloom.c, core/row.c, core/mem.c).
ms_add_test(test_part LIBS mscore PkgConfig::XXHASH)
ms_add_test(test_sidx LIBS mscore PkgConfig::XXHASH)
ms_add_test(test_mem LIBS mscore)

add_executable(bench_part ${CMAKE_CURRENT_SOURCE_DIR}/bench/bench_part.c)
target_include_directories(bench_part PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(bench_part PRIVATE mscore)
add_dependencies(benches bench_part)

# bench_sidx: an index part's bytes per column and its chunks compressed by
# column (format 4) against as one frame (format 3).
# Run: cmake --build build --target bench_sidx && build/tests/bench_sidx PART...
add_executable(bench_sidx ${CMAKE_CURRENT_SOURCE_DIR}/bench/bench_sidx.c)
target_include_directories(bench_sidx PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(bench_sidx PRIVATE mscore)
add_dependencies(benches bench_sidx)
