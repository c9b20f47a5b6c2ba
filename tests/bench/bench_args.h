/*
 * bench_args.h - a benchmark's numeric arguments, read strictly: the whole
 * argument a decimal integer within the range the benchmark takes, else
 * the benchmark names the argument, prints its usage line and exits with
 * status 2 before it builds, runs or prints anything (strtoul and atoi
 * read "abc" as 0, "-5" as a huge count and "5x" as 5).
 */
#ifndef MS_BENCH_ARGS_H
#define MS_BENCH_ARGS_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* 0 and *out set when s is a decimal integer in [lo, hi]; else -1. */
static inline int
bench_parse_ll(const char *s, long long lo, long long hi, long long *out)
{
	const char *d = s && (*s == '-' || *s == '+') ? s + 1 : s;
	if (!d || *d < '0' || *d > '9')
		return -1;
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || *end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

/* The same for an unsigned 64-bit value (no sign accepted). */
static inline int
bench_parse_u64(const char *s, uint64_t *out)
{
	if (!s || *s < '0' || *s > '9')
		return -1;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end)
		return -1;
	*out = v;
	return 0;
}

/* Ends the benchmark: "NAME: WHAT must be ..., not 'S'" and usage. */
static inline void
bench_arg_fail(const char *what, const char *range, const char *s,
               const char *usage)
{
	fprintf(stderr, "%s must be %s, not '%s'\nusage: %s\n", what, range,
	        s ? s : "", usage);
	exit(2);
}

/* s as an integer in [lo, hi], or the benchmark ends (exit status 2).
 * what names the argument with the benchmark ("bench_merge: ROWS"). */
static inline long long
bench_arg_ll(const char *s, long long lo, long long hi, const char *what,
             const char *usage)
{
	long long v = 0;
	if (bench_parse_ll(s, lo, hi, &v) != 0) {
		char range[96];
		snprintf(range, sizeof(range), "an integer from %lld to %lld",
		         lo, hi);
		bench_arg_fail(what, range, s, usage);
	}
	return v;
}

static inline uint64_t
bench_arg_u64(const char *s, const char *what, const char *usage)
{
	uint64_t v = 0;
	if (bench_parse_u64(s, &v) != 0)
		bench_arg_fail(what,
		               "an integer from 0 to 18446744073709551615", s,
		               usage);
	return v;
}

/* Usage and exit status 2: a wrong argument that is not a number. */
static inline void
bench_usage(const char *usage)
{
	fprintf(stderr, "usage: %s\n", usage);
	exit(2);
}

#endif
