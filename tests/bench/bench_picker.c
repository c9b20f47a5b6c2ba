/*
 * bench_picker.c - the cost of one picker run over inventories of growing
 * size, next to the cost of only sorting the same candidates (the floor
 * any size-ordered policy pays), the two alternating which goes first.
 * Prints medians; asserts nothing.
 */
#include "ms_clock.h"
#include "ms_picker.h"
#include "bench_args.h"
#include "bench_stats.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define REPS 31

static uint64_t rng = 7;

static uint64_t
rnd(void)
{
	uint64_t z = (rng += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static int
cmp_cand(const void *a, const void *b)
{
	const ms_pick_cand *x = a, *y = b;
	if (x->size != y->size)
		return x->size < y->size ? -1 : 1;
	if (x->min_ts != y->min_ts)
		return x->min_ts > y->min_ts ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

int
main(int argc, char **argv)
{
	(void)argv;
	if (argc > 1)
		bench_usage("bench_picker   (no arguments)");
	static const size_t sizes[] = { 20, 100, 1000, 10000 };
	int64_t tp[REPS], ts[REPS];

	printf("%8s %14s %14s %8s %6s\n", "parts", "picker ns", "sort ns",
	       "ratio", "chose");
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		size_t n = sizes[s];
		ms_pick_cand *c = calloc(n, sizeof(*c));
		ms_pick_cand *tmp = calloc(n, sizeof(*c));
		if (!c || !tmp)
			return 1;
		/* Production-shaped spread: many small raw parts, fewer big
		 * merge outputs. */
		for (size_t i = 0; i < n; i++) {
			c[i].id = i + 1;
			c[i].size = rnd() % 4 ? 1000 + rnd() % 4000
			                      : 100000 + rnd() % 30000000;
			c[i].min_ts = (int64_t)(rnd() % 86400);
			c[i].max_ts = c[i].min_ts + 60;
			c[i].rows = 10;
		}
		ms_pick p = { 0 };
		/* The picker and the sort alternate which goes first. */
		for (int r = 0; r < REPS; r++) {
			for (int k = 0; k < 2; k++) {
				if ((k == 0) == (r % 2 == 0)) {
					int64_t t0 = ms_mono_ns();
					if (ms_picker_select(NULL, c, n,
					                     UINT64_MAX, NULL,
					                     &p, NULL) != 0)
						return 1;
					tp[r] = ms_mono_ns() - t0;
				} else {
					memcpy(tmp, c, n * sizeof(*c));
					int64_t t0 = ms_mono_ns();
					qsort(tmp, n, sizeof(*tmp), cmp_cand);
					ts[r] = ms_mono_ns() - t0;
				}
			}
		}
		int64_t mp = bench_median_i64(tp, REPS),
		        ms = bench_median_i64(ts, REPS);
		printf("%8zu %14lld %14lld %8.2f %6zu\n", n, (long long)mp,
		       (long long)ms, ms ? (double)mp / (double)ms : 0.0, p.n);
		free(c);
		free(tmp);
	}
	return 0;
}
