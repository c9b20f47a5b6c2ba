# The merge executor (core/merge.c): lossless k-way merge, raw copy, index
# children, publication, failure injection at every stage.
ms_add_test(test_merge LIBS mscore)

# bench_merge: 15-input merge against the zstd decompress+compress floor.
# Run: cmake --build build --target bench_merge && build/tests/bench_merge
add_executable(bench_merge ${CMAKE_CURRENT_SOURCE_DIR}/bench/bench_merge.c)
target_link_libraries(bench_merge PRIVATE mscore)
target_include_directories(bench_merge PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
add_dependencies(benches bench_merge)
# The sampling tests load the shipped plugins, and tp_slow (a timed-out
# batch left untouched).
ms_uses_plugins(test_merge)
add_dependencies(test_merge tp_slow)

# bench_pipeline: the same kind of merge with the pipeline disabled, with
# alwayskeep, skywalking and detdrop:35 (real plugins from MS_PLUGIN_DIR).
# Run: cmake --build build --target bench_pipeline && build/tests/bench_pipeline
add_executable(bench_pipeline ${CMAKE_CURRENT_SOURCE_DIR}/bench/bench_pipeline.c)
target_link_libraries(bench_pipeline PRIVATE mscore)
target_include_directories(bench_pipeline PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_compile_definitions(bench_pipeline PRIVATE
	MS_PLUGIN_DIR="${MS_PLUGIN_DIR}")
add_dependencies(bench_pipeline alwayskeep detdrop skywalking)
add_dependencies(benches bench_pipeline)

# bench_dropset: the drop set's bytes and lookup times for a day-2x and a
# day-4x finalize's dropped traces.
# Run: cmake --build build --target bench_dropset && build/tests/bench_dropset
add_executable(bench_dropset ${CMAKE_CURRENT_SOURCE_DIR}/bench/bench_dropset.c)
target_link_libraries(bench_dropset PRIVATE mscore)
target_include_directories(bench_dropset PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
add_dependencies(benches bench_dropset)
