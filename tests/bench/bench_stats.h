/*
 * bench_stats.h - the order statistics the benchmarks print: comparators
 * for sorting doubles and int64s, and the median of a sample (the middle
 * value; for an even count the mean of the two middle values). Benchmarks
 * report figures only; nothing here judges them.
 */
#ifndef MS_BENCH_STATS_H
#define MS_BENCH_STATS_H

#include <stdint.h>
#include <stdlib.h>

static inline int
bench_cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static inline int
bench_cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

/* Median of v[0..n) (v is sorted in place); 0 for an empty sample. */
static inline double
bench_median_d(double *v, int n)
{
	if (n <= 0)
		return 0;
	qsort(v, (size_t)n, sizeof(*v), bench_cmp_d);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The same for int64s (an even count's mean rounded down). */
static inline int64_t
bench_median_i64(int64_t *v, int n)
{
	if (n <= 0)
		return 0;
	qsort(v, (size_t)n, sizeof(*v), bench_cmp_i64);
	int64_t lo = v[(n - 1) / 2], hi = v[n / 2];
	return lo + (hi - lo) / 2;
}

#endif
