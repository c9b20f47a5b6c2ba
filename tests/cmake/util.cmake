# Helpers every layer shares: file-system helpers (core/fs.c) and the enum
# name tables (core/ms_enum.h with the core tables that use it).
ms_add_test(test_fs LIBS mscore)
# Its rmdir can find an entry created during the walk (__wrap_rmdir).
target_link_options(test_fs PRIVATE -Wl,--wrap=rmdir)
ms_add_test(test_enum LIBS mscore)
# A test executable started by hand gets a scratch root of its own
# (own_scratch.c); its children are started without the suite's root.
ms_add_test(test_own_scratch LIBS msfixtures mscore)
