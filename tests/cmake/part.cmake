# Part format, secondary index parts and the allocator (core/part_*.c,
# core/sidx.c, core/bloom.c, core/row.c, core/mem.c).
ms_add_test(test_part LIBS mscore PkgConfig::XXHASH)
ms_add_test(test_sidx LIBS mscore PkgConfig::XXHASH)
ms_add_test(test_mem LIBS mscore)
