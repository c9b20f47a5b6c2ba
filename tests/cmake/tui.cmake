# tui: layout over every size, the virtual-screen snapshots, keys against
# a fake controller, the command line; the frame benchmark.
ms_add_test(test_tui_layout LIBS mstui)
ms_add_test(test_tui_screen LIBS mstui)
