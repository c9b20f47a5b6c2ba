/*
 * fuzz_usage.h - the command line of the seed writers (fuzz_*seeds): the
 * directories they write into, nothing else.
 */
#ifndef MS_FUZZ_USAGE_H
#define MS_FUZZ_USAGE_H

#include <stdbool.h>
#include <stdio.h>

/* Are there exactly n arguments (the directories `args` names, e.g.
 * "OUT_DIR")? Prints the usage and returns false when not. */
static inline bool
fuzz_usage_ok(int argc, char **argv, int n, const char *args)
{
	if (argc == n + 1)
		return true;
	fprintf(stderr, "usage: %s %s\n", argc > 0 ? argv[0] : "seeds", args);
	return false;
}

#endif
