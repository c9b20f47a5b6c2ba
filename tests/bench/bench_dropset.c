/*
 * bench_dropset.c - what the drop set (core/dropset.c) costs for a
 * finalize's worth of dropped traces: 26,000 and 52,000 IDs of 54 bytes
 * (a day-2x and a day-4x finalize), with a day's timestamps. Prints, per
 * size, the bytes the set holds (ms_dropset_bytes) and per ID, the peak
 * its allocator saw while it grew, and medians of the time per add, per
 * contains (a member, a non-member) and per get in order; beside them the
 * floor: the IDs' own bytes, and hashing each ID once (XXH3), what any
 * hashed set pays per lookup (the lookups and the floor run in one order
 * in even repetitions and the reverse in odd ones). Prints figures;
 * asserts nothing.
 */
#include "ms_clock.h"
#include "ms_mem.h"
#include "pipeline_int.h"
#include "bench_args.h"
#include "bench_stats.h"
#include "part_testlib.h"

#include <xxhash.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REPS 7
#define IDLEN 54
#define DAY0 1767225600000000000LL /* 2026-01-01T00:00:00Z in ns */
#define HOUR_NS (3600LL * 1000000000LL)

/* ID i: 54 hex digits and dots, like a SkyWalking trace ID; `salt`
 * tells members from non-members. */
static void
make_id(uint8_t *id, uint64_t i, uint64_t salt)
{
	static const char hex[] = "0123456789abcdef";
	uint64_t h = tl_mix(i ^ salt);
	for (int k = 0; k < IDLEN; k++) {
		if (k % 16 == 15) {
			id[k] = '.';
			h = tl_mix(h);
			continue;
		}
		id[k] = (uint8_t)hex[h & 15];
		h >>= 4;
	}
}

static volatile uint64_t sink;

/* ns per ID of one pass over the n IDs: 0 contains (members), 1 contains
 * (non-members), 2 get in order, 3 XXH3 of each member's ID. */
static double
pass(const ms_dropset *d, int what, const uint8_t *ids, const uint8_t *other,
     uint32_t n)
{
	uint64_t found = 0;
	int64_t t0 = ms_mono_ns();
	switch (what) {
	case 0:
	case 1: {
		const uint8_t *set = what == 0 ? ids : other;
		for (uint32_t i = 0; i < n; i++)
			found += ms_dropset_contains(d, set + (size_t)i * IDLEN,
			                             IDLEN);
		break;
	}
	case 2:
		for (uint32_t i = 0; i < n; i++) {
			uint8_t t[MS_TRACE_ID_MAX];
			uint32_t len;
			int64_t mn, mx;
			ms_dropset_get(d, i, t, &len, &mn, &mx);
			found += t[0] + len + (uint64_t)(mx - mn);
		}
		break;
	default:
		for (uint32_t i = 0; i < n; i++)
			found += XXH3_64bits(ids + (size_t)i * IDLEN, IDLEN);
	}
	int64_t t1 = ms_mono_ns();
	sink += found;
	return (double)(t1 - t0) / n;
}

int
main(int argc, char **argv)
{
	(void)argv;
	if (argc > 1)
		bench_usage("bench_dropset   (no arguments)");
	static const uint32_t sizes[] = { 26000, 52000 };
	printf("%7s %11s %7s %7s %11s %8s %8s %8s %8s %8s\n", "ids", "bytes",
	       "B/ID", "floor", "peak live", "add ns", "hit ns", "miss ns",
	       "get ns", "xxh3 ns");
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		uint32_t n = sizes[s];
		uint8_t *ids = malloc((size_t)n * IDLEN);
		uint8_t *other = malloc((size_t)n * IDLEN);
		if (!ids || !other)
			return 1;
		for (uint32_t i = 0; i < n; i++) {
			make_id(ids + (size_t)i * IDLEN, i, 1);
			/* i ^ 2 would be some member's i ^ 1: a salt past
			 * every i makes non-members. */
			make_id(other + (size_t)i * IDLEN, i,
			        (uint64_t)1 << 32);
		}
		double add[REPS], hit[REPS], miss[REPS], get[REPS], xx[REPS];
		uint64_t bytes = 0;
		int64_t peak = 0;
		for (int r = 0; r < REPS; r++) {
			ms_mem mem;
			ms_mem_init(&mem, NULL);
			ms_dropset_opts o = { &mem, NULL, NULL, 0 };
			ms_dropset *d;
			ms_errbuf eb;
			if (ms_dropset_open(&d, &o, &eb))
				return 1;
			int64_t t0 = ms_mono_ns();
			for (uint32_t i = 0; i < n; i++) {
				uint64_t h = tl_mix(i);
				int64_t mn =
				        DAY0 + (int64_t)(h % (24 * HOUR_NS));
				int64_t mx =
				        mn + (int64_t)(tl_mix(h) % 10000000000);
				if (ms_dropset_add(d, ids + (size_t)i * IDLEN,
				                   IDLEN, mn, mx, &eb)) {
					fprintf(stderr, "%s\n", eb.msg);
					return 1;
				}
			}
			int64_t t1 = ms_mono_ns();
			add[r] = (double)(t1 - t0) / n;
			/* The lookups and the floor: hit, miss, get, xxh3 in
			 * even repetitions, the reverse in odd ones. */
			double *fig[4] = { hit, miss, get, xx };
			for (int k = 0; k < 4; k++) {
				int what = r % 2 ? 3 - k : k;
				fig[what][r] = pass(d, what, ids, other, n);
			}
			bytes = ms_dropset_bytes(d);
			ms_mem_stats ms;
			ms_mem_stats_get(&mem, &ms);
			peak = ms.peak_live;
			ms_dropset_close(d);
		}
		printf("%7u %11llu %7.1f %7d %11lld %8.1f %8.1f %8.1f %8.1f "
		       "%8.1f\n",
		       n, (unsigned long long)bytes, (double)bytes / n, IDLEN,
		       (long long)peak, bench_median_d(add, REPS),
		       bench_median_d(hit, REPS), bench_median_d(miss, REPS),
		       bench_median_d(get, REPS), bench_median_d(xx, REPS));
		free(ids);
		free(other);
	}
	return 0;
}
