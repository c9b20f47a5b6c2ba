# Inventory, recovery, ledgers, clock and resource counters (core/shard.c,
# core/ledger*.c, core/clock.c, core/rusage.c).
ms_add_test(test_clock LIBS mscore)
ms_add_test(test_ledger LIBS mscore)
ms_add_test(test_shard LIBS mscore)
