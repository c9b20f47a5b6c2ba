# Part format, secondary index parts and the allocator (core/part_*.c,
# core/sidx.c, core/bloom.c, core/row.c, core/mem.c).
ms_add_test(test_part LIBS mscore PkgConfig::XXHASH)
ms_add_test(test_sidx LIBS mscore PkgConfig::XXHASH)
ms_add_test(test_mem LIBS mscore)

add_executable(bench_part ${CMAKE_CURRENT_SOURCE_DIR}/bench/bench_part.c)
target_include_directories(bench_part PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(bench_part PRIVATE mscore)
add_dependencies(benches bench_part)
