# The replay's per-day sets (drop set, trace-ID pool, block-ledger cache,
# the ring of recent merges),
# reached through the replay's private replay_int.h.
ms_add_test(test_replay_sets LIBS msreplay msfixtures mscore)
target_include_directories(test_replay_sets PRIVATE ${CMAKE_SOURCE_DIR}/replay)
# It fails the allocations of an oracle table's read (tests/alloc_testlib.h).
ms_alloc_fail_test(test_replay_sets)
