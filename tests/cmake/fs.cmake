# The shared file-system helpers (core/fs.c).
ms_add_test(test_fs LIBS mscore)
