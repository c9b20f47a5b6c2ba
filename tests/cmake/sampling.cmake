# The sampling rule (core/sampling.c): whether a merge samples, the grace
# policies, the classification names. Whole-day predictions: test_replay.
ms_add_test(test_sampling LIBS mscore)
