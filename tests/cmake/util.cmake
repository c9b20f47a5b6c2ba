# Helpers every layer shares: file-system helpers (core/fs.c) and the enum
# name tables (core/ms_enum.h with the core tables that use it).
ms_add_test(test_fs LIBS mscore)
ms_add_test(test_enum LIBS mscore)
# A test executable started by hand gets a scratch root of its own
# (own_scratch.c); its children are started without the suite's root.
ms_add_test(test_own_scratch LIBS msfixtures mscore)
