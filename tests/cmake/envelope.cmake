# The run's real resource envelope (core/envelope.c): fake cgroup v1 and
# v2 trees, and the real hierarchy where the test may write it (root).
ms_add_test(test_envelope LIBS mscore)
