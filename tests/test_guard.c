/*
 * test_guard.c - the fragment guard and the drop set (core/guard.c,
 * core/dropset.c): a proposed drop stands only when every outside part within
 * the grace of the trace says "absent"; a Bloom "maybe" (even a forced one)
 * never confirms; parts without a filter and exhausted budgets defer; a part
 * that appears during the merge and may hold a dropped trace forces a
 * lossless retry; the drop set answers exactly even when every ID hashes
 * to the same slot. Fakes stand in for parts, and real parts written with
 * the part writer check the Bloom-filter adapter.
 */
#define _XOPEN_SOURCE 700 /* nftw */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "pipeline_int.h"
#include "mem_testlib.h"
#include "part_testlib.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HOUR (3600LL * 1000000000LL)
#define MIB (1ull << 20)

/* A fake part: holds exactly the IDs in its list ("maybe" for them). */
typedef struct fake {
	const char *ids[8];
	int probes;
} fake;

static bool
fake_probe(const void *ctx, const uint8_t *tid, uint32_t len)
{
	fake *f = (fake *)ctx;
	f->probes++;
	for (int i = 0; i < 8 && f->ids[i]; i++)
		if (strlen(f->ids[i]) == len &&
		    memcmp(f->ids[i], tid, len) == 0)
			return true;
	return false;
}

static bool
always_maybe(const void *ctx, const uint8_t *tid, uint32_t len)
{
	(void)ctx;
	(void)tid;
	(void)len;
	return true;
}

static bool
check(ms_guard *g, const char *id, int64_t mn, int64_t mx,
      enum ms_guard_reason *why)
{
	return ms_guard_check(g, (const uint8_t *)id, (uint32_t)strlen(id), mn,
	                      mx, why);
}

/* ms_guard_open, then a segment covering every timestamp, so that no
 * trace is near an edge and only the outside parts decide. */
static int
open_guard(ms_guard **g, const ms_guard_part *parts, size_t n,
           const ms_guard_opts *o, ms_errbuf *eb)
{
	int rc = ms_guard_open(g, parts, n, o, eb);
	if (rc == 0)
		ms_guard_set_coverage(*g, INT64_MIN, INT64_MAX);
	return rc;
}

static void
test_hot_outside_part_holding_trace_defers(void **st)
{
	(void)st;
	/* An outside part written recently (hot) holds a fragment of A. */
	fake hot = { { "A" }, 0 };
	ms_guard_part gp = { 1, 10 * HOUR, 11 * HOUR, fake_probe, &hot };
	ms_guard *g;
	ms_errbuf eb;
	assert_int_equal(open_guard(&g, &gp, 1, NULL, &eb), 0);
	enum ms_guard_reason why;
	/* A ends at 9:00; the part starts within the 2 h grace. */
	assert_false(check(g, "A", 8 * HOUR, 9 * HOUR, &why));
	assert_int_equal(why, MS_GUARD_FILTER_POSITIVE);
	/* B is absent from the part's filter: the drop stands. */
	assert_true(check(g, "B", 8 * HOUR, 9 * HOUR, &why));
	assert_int_equal(why, MS_GUARD_CONFIRMED);
	assert_int_equal(hot.probes, 2);
	ms_guard_stats gs;
	ms_guard_stats_get(g, &gs);
	assert_int_equal(gs.checks, 2);
	assert_int_equal(gs.confirmed, 1);
	assert_int_equal(gs.deferred, 1);
	assert_int_equal(gs.probes, 2);
	ms_guard_close(g);
}

static void
test_grace_window_bounds(void **st)
{
	(void)st;
	fake p = { { "A" }, 0 };
	/* The part starts exactly at max + grace: it intersects. */
	ms_guard_part gp = { 1, 11 * HOUR, 12 * HOUR, fake_probe, &p };
	ms_guard *g;
	assert_int_equal(open_guard(&g, &gp, 1, NULL, NULL), 0);
	assert_false(check(g, "A", 8 * HOUR, 9 * HOUR, NULL));
	assert_int_equal(p.probes, 1);
	/* One nanosecond earlier end: the part is out of reach, not probed,
	 * and the drop is confirmed. */
	assert_true(check(g, "A", 8 * HOUR, 9 * HOUR - 1, NULL));
	assert_int_equal(p.probes, 1);
	ms_guard_close(g);

	/* A custom grace is honoured. */
	ms_guard_opts o = { NULL, 0, HOUR };
	assert_int_equal(open_guard(&g, &gp, 1, &o, NULL), 0);
	assert_true(check(g, "A", 8 * HOUR, 9 * HOUR, NULL));
	ms_guard_close(g);
}

static void
test_forced_positive_never_confirms(void **st)
{
	(void)st;
	ms_guard_part gp[2] = { { 1, 0, INT64_MAX, always_maybe, NULL },
		                { 2, 0, 10, NULL, NULL } };
	ms_guard *g;
	assert_int_equal(open_guard(&g, gp, 1, NULL, NULL), 0);
	for (int i = 0; i < 1000; i++) {
		char id[16];
		snprintf(id, sizeof(id), "t%d", i);
		assert_false(check(g, id, i, i + 5, NULL));
	}
	ms_guard_stats gs;
	ms_guard_stats_get(g, &gs);
	assert_int_equal(gs.confirmed, 0);
	assert_int_equal(gs.reasons[MS_GUARD_FILTER_POSITIVE], 1000);
	ms_guard_close(g);

	/* A part without a filter defers too. */
	assert_int_equal(open_guard(&g, gp + 1, 1, NULL, NULL), 0);
	enum ms_guard_reason why;
	assert_false(check(g, "x", 0, 1, &why));
	assert_int_equal(why, MS_GUARD_NO_FILTER);
	assert_string_equal(ms_guard_reason_name(why), "no_filter");
	/* Bad ranges defer. */
	assert_false(check(g, "x", 5, 1, &why));
	assert_int_equal(why, MS_GUARD_BAD_RANGE);
	ms_guard_close(g);
}

static bool
never(const void *ctx, const uint8_t *tid, uint32_t len)
{
	(void)ctx;
	(void)tid;
	(void)len;
	return false;
}

/* The boundary guard of the fragment-gap contract. With a segment, a
 * trace whose grace window leaves it is retained and one inside may be
 * dropped. With no segment given the guard cannot tell a trace near an
 * edge from one inside, so, as in the reference, it retains every
 * proposed drop and counts the reason (it used to confirm them). */
static void
test_segment_edge(void **st)
{
	(void)st;
	ms_guard_part gp = { 1, 0, 100 * HOUR, never, NULL };
	ms_guard *g;
	enum ms_guard_reason why;
	ms_guard_stats gs;
	/* No segment: nothing outside may hold the trace, yet it is kept. */
	assert_int_equal(ms_guard_open(&g, &gp, 1, NULL, NULL), 0);
	assert_false(check(g, "A", 50 * HOUR, 51 * HOUR, &why));
	assert_int_equal(why, MS_GUARD_SEGMENT_EDGE);
	assert_false(check(g, "B", 1 * HOUR, 1 * HOUR, &why));
	assert_int_equal(why, MS_GUARD_SEGMENT_EDGE);
	ms_guard_stats_get(g, &gs);
	assert_int_equal(gs.confirmed, 0);
	assert_int_equal(gs.deferred, 2);
	assert_int_equal(gs.reasons[MS_GUARD_SEGMENT_EDGE], 2);
	assert_int_equal(gs.probes, 0);
	/* Given the segment [0, 100 h]: the same interior trace drops, a
	 * trace within the 2 h grace of either edge is kept. */
	ms_guard_set_coverage(g, 0, 100 * HOUR);
	assert_true(check(g, "A", 50 * HOUR, 51 * HOUR, &why));
	assert_int_equal(why, MS_GUARD_CONFIRMED);
	assert_false(check(g, "B", 2 * HOUR - 1, 3 * HOUR, &why));
	assert_int_equal(why, MS_GUARD_SEGMENT_EDGE);
	assert_false(check(g, "C", 97 * HOUR, 98 * HOUR + 1, &why));
	assert_int_equal(why, MS_GUARD_SEGMENT_EDGE);
	/* Exactly the grace from both edges: inside. */
	assert_true(check(g, "D", 2 * HOUR, 98 * HOUR, &why));
	ms_guard_stats_get(g, &gs);
	assert_int_equal(gs.confirmed, 2);
	assert_int_equal(gs.reasons[MS_GUARD_SEGMENT_EDGE], 4);
	ms_guard_close(g);
}

static void
test_budgets(void **st)
{
	(void)st;
	/* Budget = max(hard, 16 MiB): a small hard ceiling still gets 16 MiB:
	 * 1 Mi probes, 256 Ki confirmed drops. */
	ms_guard_opts o = { NULL, 1 * MIB, 0 };
	ms_guard *g;
	assert_int_equal(open_guard(&g, NULL, 0, &o, NULL), 0);
	ms_guard_stats gs;
	ms_guard_stats_get(g, &gs);
	assert_int_equal(gs.budget, 16 * MIB);
	assert_int_equal(gs.probe_budget, MIB);
	assert_int_equal(gs.drop_budget, 256 * 1024);
	/* Nothing outside: every drop confirms until the drop budget. */
	for (uint64_t i = 0; i < gs.drop_budget; i++)
		assert_true(check(g, "a", 0, 1, NULL));
	enum ms_guard_reason why;
	assert_false(check(g, "a", 0, 1, &why));
	assert_int_equal(why, MS_GUARD_DROP_BUDGET);
	ms_guard_close(g);

	/* 64 intersecting parts: each check makes 64 probes; the probe
	 * budget (1 Mi) allows exactly 16,384 checks, then defers. */
	ms_guard_part parts[64];
	for (int i = 0; i < 64; i++)
		parts[i] =
		        (ms_guard_part){ (uint64_t)i + 1, 0, 100, never, NULL };
	assert_int_equal(open_guard(&g, parts, 64, &o, NULL), 0);
	for (int i = 0; i < 16384; i++)
		assert_true(check(g, "a", 0, 1, NULL));
	assert_false(check(g, "a", 0, 1, &why));
	assert_int_equal(why, MS_GUARD_PROBE_BUDGET);
	ms_guard_stats_get(g, &gs);
	assert_int_equal(gs.probes, MIB);
	ms_guard_close(g);
}

static void
test_revalidate(void **st)
{
	(void)st;
	fake known = { { "D" }, 0 };
	ms_guard_part before[1] = { { 5, 0, 10 * HOUR, fake_probe, &known } };
	ms_guard *g;
	ms_dropset *d;
	ms_errbuf eb;
	assert_int_equal(open_guard(&g, before, 1, NULL, &eb), 0);
	assert_int_equal(ms_dropset_open(&d, NULL, &eb), 0);
	assert_int_equal(
	        ms_dropset_add(d, (const uint8_t *)"A", 1, HOUR, 2 * HOUR, &eb),
	        0);
	/* Unchanged inventory: valid. */
	assert_int_equal(ms_guard_revalidate(g, before, 1, d, &eb), 0);
	/* A new part far away in time: valid without probing. */
	fake far = { { "A" }, 0 };
	ms_guard_part now[2] = {
		before[0], { 9, 20 * HOUR, 21 * HOUR, fake_probe, &far }
	};
	assert_int_equal(ms_guard_revalidate(g, now, 2, d, &eb), 0);
	assert_int_equal(far.probes, 0);
	/* A new part near A whose filter is negative: valid. */
	fake neg = { { "Z" }, 0 };
	now[1] = (ms_guard_part){ 10, 3 * HOUR, 4 * HOUR, fake_probe, &neg };
	assert_int_equal(ms_guard_revalidate(g, now, 2, d, &eb), 0);
	/* A new part that may hold A: conflict, naming part and trace. */
	fake pos = { { "A" }, 0 };
	now[1] = (ms_guard_part){ 0xab, 3 * HOUR, 4 * HOUR, fake_probe, &pos };
	assert_int_equal(ms_guard_revalidate(g, now, 2, d, &eb),
	                 MS_ERR_CONFLICT);
	assert_non_null(strstr(eb.msg, "00000000000000ab"));
	assert_non_null(strstr(eb.msg, "trace A"));
	ms_dropset_close(d);
	/* A trace ID with a NUL and a control byte is named whole, in hex. */
	assert_int_equal(ms_dropset_open(&d, NULL, &eb), 0);
	assert_int_equal(ms_dropset_add(d, (const uint8_t *)"A\0\x1b", 3, HOUR,
	                                2 * HOUR, &eb),
	                 0);
	now[1] =
	        (ms_guard_part){ 0xac, 3 * HOUR, 4 * HOUR, always_maybe, NULL };
	assert_int_equal(ms_guard_revalidate(g, now, 2, d, &eb),
	                 MS_ERR_CONFLICT);
	assert_non_null(strstr(eb.msg, "dropped trace 0x41001b; redo"));
	/* The drop set names it so too when it is recorded twice (it said
	 * "trace A" and lost the rest at the NUL). */
	assert_int_equal(ms_dropset_add(d, (const uint8_t *)"A\0\x1b", 3, HOUR,
	                                2 * HOUR, &eb),
	                 MS_ERR_EXISTS);
	assert_string_equal(eb.msg, "drop set: trace 0x41001b recorded twice");
	ms_dropset_close(d);
	ms_guard_close(g);
}

/* ---- real parts: the ms_part Bloom filter through the adapter ---- */

static int
rm_cb(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static void
test_real_part_filter(void **st)
{
	(void)st;
	char base[] = "/tmp/ms-guard-XXXXXX";
	assert_non_null(mkdtemp(base));
	char dir[256];
	snprintf(dir, sizeof(dir), "%s/p", base);
	ms_row rows[40];
	char ids[40][16];
	memset(rows, 0, sizeof(rows));
	for (int i = 0; i < 40; i++) {
		snprintf(ids[i], sizeof(ids[i]), "held-%02d", i);
		rows[i].trace_id = (const uint8_t *)ids[i];
		rows[i].trace_id_len = (uint32_t)strlen(ids[i]);
		rows[i].start_ns = 5 * HOUR + i;
		rows[i].latency_ms = 1;
		rows[i].service = "s";
		rows[i].instance = "i";
		rows[i].endpoint = "e";
		rows[i].segment_id = "g";
	}
	ms_part_meta meta;
	ms_errbuf eb;
	if (ms_part_write_rows(dir, 0x42, rows, 40, NULL, &meta, &eb))
		fail_msg("%s", eb.msg);
	ms_part *p;
	if (ms_part_open(&p, dir, NULL, &eb))
		fail_msg("%s", eb.msg);
	ms_guard_part gp;
	ms_guard_part_from_core(&gp, p);
	assert_int_equal(gp.id, 0x42);
	assert_int_equal(gp.min_ts, 5 * HOUR);
	assert_int_equal(gp.max_ts, 5 * HOUR + 39);
	ms_guard *g;
	assert_int_equal(open_guard(&g, &gp, 1, NULL, &eb), 0);
	/* Every ID the part holds defers: no false negatives. */
	for (int i = 0; i < 40; i++)
		assert_false(check(g, ids[i], 4 * HOUR, 4 * HOUR, NULL));
	/* Most IDs it does not hold confirm (a rare false positive would
	 * only defer, never the reverse). */
	int confirmed = 0;
	for (int i = 0; i < 100; i++) {
		char id[16];
		snprintf(id, sizeof(id), "other-%03d", i);
		confirmed += check(g, id, 4 * HOUR, 4 * HOUR, NULL);
	}
	assert_true(confirmed >= 95);
	ms_guard_close(g);
	ms_part_close(p);
	nftw(base, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---- drop set ---- */

static uint64_t
const_hash(const uint8_t *tid, uint32_t len, void *ctx)
{
	(void)tid;
	(void)len;
	(void)ctx;
	return 0x1234567800000007ull;
}

static uint64_t
len_hash(const uint8_t *tid, uint32_t len, void *ctx)
{
	(void)tid;
	(void)ctx;
	return len; /* equal fingerprints for IDs of one length */
}

static void
dropset_collisions(ms_dropset_hash_fn h)
{
	ms_dropset_opts o = { NULL, h, NULL, 0 };
	ms_dropset *d;
	ms_errbuf eb;
	assert_int_equal(ms_dropset_open(&d, &o, &eb), 0);
	char id[16];
	for (int i = 0; i < 200; i += 2) {
		snprintf(id, sizeof(id), "id-%03d", i);
		assert_int_equal(ms_dropset_add(d, (const uint8_t *)id, 6, i,
		                                i + 1, &eb),
		                 0);
	}
	assert_int_equal(ms_dropset_count(d), 100);
	for (int i = 0; i < 200; i++) {
		snprintf(id, sizeof(id), "id-%03d", i);
		bool in = ms_dropset_contains(d, (const uint8_t *)id, 6);
		assert_int_equal(in, i % 2 == 0);
		assert_int_equal(ms_dropset_keep(d, (const uint8_t *)id, 6),
		                 i % 2 != 0);
	}
	/* A prefix of a recorded ID is a different ID. */
	assert_false(ms_dropset_contains(d, (const uint8_t *)"id-00", 5));
	/* Recorded once, in order. */
	assert_int_equal(
	        ms_dropset_add(d, (const uint8_t *)"id-010", 6, 0, 0, &eb),
	        MS_ERR_EXISTS);
	uint8_t t[MS_TRACE_ID_MAX];
	uint32_t len;
	int64_t mn, mx;
	ms_dropset_get(d, 7, t, &len, &mn, &mx);
	assert_int_equal(len, 6);
	assert_memory_equal(t, "id-014", 6);
	assert_int_equal(mn, 14);
	assert_int_equal(mx, 15);
	assert_true(ms_dropset_bytes(d) > 600);
	ms_dropset_close(d);
}

static void
test_dropset_forced_collisions(void **st)
{
	(void)st;
	dropset_collisions(const_hash);
	dropset_collisions(len_hash);
	dropset_collisions(NULL);
}

static void
test_dropset_bad_ids(void **st)
{
	(void)st;
	ms_dropset *d;
	assert_int_equal(ms_dropset_open(&d, NULL, NULL), 0);
	uint8_t big[MS_TRACE_ID_MAX + 1];
	memset(big, 'x', sizeof(big));
	assert_int_equal(ms_dropset_add(d, big, sizeof(big), 0, 0, NULL),
	                 MS_ERR_INVAL);
	assert_int_equal(ms_dropset_add(d, big, 0, 0, 0, NULL), MS_ERR_INVAL);
	assert_false(ms_dropset_contains(d, big, 1));
	assert_int_equal(ms_dropset_count(d), 0);
	ms_dropset_close(d);
	ms_dropset_close(NULL);
	ms_guard_close(NULL);
}

/* ---- drop set: memory, chunk boundaries, exact round trips ---- */

/* ID i of len bytes (3..MS_TRACE_ID_MAX): i in its first three bytes, so
 * IDs of distinct i differ, then letters derived from i. */
static void
make_id(uint8_t *id, uint32_t i, uint32_t len)
{
	id[0] = (uint8_t)(i >> 16);
	id[1] = (uint8_t)(i >> 8);
	id[2] = (uint8_t)i;
	uint64_t h = tl_mix(i);
	for (uint32_t k = 3; k < len; k++, h = tl_mix(h))
		id[k] = (uint8_t)('a' + h % 26);
}

/* A day's drops: start within 24 h of the day's start, up to 10 s long. */
#define DAY0 1767225600000000000LL /* 2026-01-01T00:00:00Z in ns */
static void
day_ts(uint32_t i, int64_t *mn, int64_t *mx)
{
	uint64_t h = tl_mix(i ^ 0x5a5a5a5aull);
	*mn = DAY0 + (int64_t)(h % (24 * (uint64_t)HOUR));
	*mx = *mn + (int64_t)(tl_mix(h) % 10000000000ull);
}

/* What a drop of a len-byte ID costs at most in a set of n: the record
 * (length byte, ID, 7 + 5 bytes of day timestamps), its 4-byte reference
 * and up to 4 slots of 4 bytes (a table at most half full that just
 * doubled); plus, once, the last chunk and page not yet filled and the
 * directories. */
#define DROP_FIXED ((uint64_t)80 * 1024)
static uint64_t
drop_bound(uint64_t n, uint32_t len)
{
	return n * (1 + len + 12 + 4 + 16) + DROP_FIXED;
}

/* A drop set whose allocations mem counts. */
static ms_dropset *
open_counted(ms_mem *mem)
{
	ms_mem_init(mem, NULL);
	ms_dropset_opts o = { mem, NULL, NULL, 0 };
	ms_dropset *d;
	assert_int_equal(ms_dropset_open(&d, &o, NULL), 0);
	return d;
}

/* ms_dropset_bytes is what mem has handed out. */
static void
assert_bytes_honest(const ms_dropset *d, const ms_mem *mem)
{
	ms_mem_stats ms;
	ms_mem_stats_get(mem, &ms);
	assert_int_equal(ms_dropset_bytes(d), (uint64_t)ms.live);
}

static void
test_dropset_bytes_per_id(void **st)
{
	(void)st;
	ms_mem mem;
	ms_dropset *d = open_counted(&mem);
	ms_errbuf eb;
	assert_bytes_honest(d, &mem); /* from the start */
	uint8_t id[54];
	const uint32_t n = 52000; /* a day-4x finalize's drops */
	uint64_t at26k = 0;
	for (uint32_t i = 0; i < n; i++) {
		int64_t mn, mx;
		make_id(id, i, sizeof(id));
		day_ts(i, &mn, &mx);
		if (ms_dropset_add(d, id, sizeof(id), mn, mx, &eb))
			fail_msg("%s", eb.msg);
		uint64_t b = ms_dropset_bytes(d);
		if (b > drop_bound(i + 1, sizeof(id)))
			fail_msg("%u IDs of 54 bytes take %llu bytes, more "
			         "than %llu",
			         i + 1, (unsigned long long)b,
			         (unsigned long long)drop_bound(i + 1,
			                                        sizeof(id)));
		if (i + 1 == 26000)
			at26k = b;
	}
	assert_bytes_honest(d, &mem);
	/* A doubling store (about 140 bytes an ID here) would not fit in
	 * 90 bytes an ID at either size. */
	assert_true(at26k <= 26000ull * 90);
	assert_true(ms_dropset_bytes(d) <= (uint64_t)n * 90);
	/* Every one is still there, exactly. */
	for (uint32_t i = 0; i < n; i += 7) {
		uint8_t t[MS_TRACE_ID_MAX];
		uint32_t len;
		int64_t mn, mx, emn, emx;
		make_id(id, i, sizeof(id));
		day_ts(i, &emn, &emx);
		assert_true(ms_dropset_contains(d, id, sizeof(id)));
		ms_dropset_get(d, i, t, &len, &mn, &mx);
		assert_int_equal(len, sizeof(id));
		assert_memory_equal(t, id, sizeof(id));
		assert_int_equal(mn, emn);
		assert_int_equal(mx, emx);
	}
	ms_dropset_close(d);
	ms_mem_stats ms;
	ms_mem_stats_get(&mem, &ms);
	assert_int_equal(ms.live, 0);
}

/* Timestamps that stress the record's differences: extremes, a max
 * before the min, and a first entry far from the rest (the base). */
static void
odd_ts(uint32_t i, int64_t *mn, int64_t *mx)
{
	switch (i % 6) {
	case 0:
		*mn = INT64_MIN;
		*mx = INT64_MAX;
		break;
	case 1:
		*mn = INT64_MAX;
		*mx = INT64_MIN;
		break;
	case 2:
		*mn = (int64_t)i;
		*mx = (int64_t)i - 1;
		break;
	case 3:
		*mn = -(int64_t)(tl_mix(i) >> 2);
		*mx = (int64_t)(tl_mix(i + 1) >> 1);
		break;
	default:
		day_ts(i, mn, mx);
	}
}

/* Trace IDs shaped as SkyWalking's: 32 hex digits of the instance's
 * family, a thread, a 17-digit clock and sequence; n of them sorted, as a
 * merge drops them, at ids (54 bytes each). */
#define SW_LEN 54
static int
cmp_sw(const void *a, const void *b)
{
	return memcmp(a, b, SW_LEN);
}

static uint8_t *
sw_ids(uint32_t n)
{
	uint8_t *ids = malloc((size_t)n * SW_LEN + 1);
	assert_non_null(ids);
	for (uint32_t i = 0; i < n; i++) {
		uint64_t h = tl_mix(i + 1), f = tl_mix(h % 40 + 7);
		char *p = (char *)ids + (size_t)i * SW_LEN;
		snprintf(p, SW_LEN + 1, "%016llx%016llx.%03u.%017llu",
		         (unsigned long long)f, (unsigned long long)tl_mix(f),
		         (unsigned)(100 + tl_mix(h) % 200),
		         (unsigned long long)(17672256000000000ull +
		                              tl_mix(h ^ 1) % 864000000000ull));
	}
	qsort(ids, n, SW_LEN, cmp_sw);
	return ids;
}

/* Drops in merge (ID) order share most of their bytes with the one
 * before: a record keeps only the rest (about 20 of SkyWalking's 54
 * bytes), so a day's drops take well under the IDs' own size. Every one
 * reads back exactly, by index, by a walk and by lookup, across the
 * restarts and chunk ends; IDs that differ only in their last byte, or
 * are one byte shorter or longer, are absent. */
static void
test_dropset_shared_prefixes(void **st)
{
	(void)st;
	const uint32_t n = 52000;
	uint8_t *ids = sw_ids(n);
	ms_mem mem;
	ms_dropset *d = open_counted(&mem);
	ms_errbuf eb;
	uint32_t added = 0;
	for (uint32_t i = 0; i < n; i++) {
		const uint8_t *id = ids + (size_t)i * SW_LEN;
		if (i && memcmp(id, id - SW_LEN, SW_LEN) == 0)
			continue; /* the same ID twice */
		int64_t mn, mx;
		day_ts(i, &mn, &mx);
		if (ms_dropset_add(d, id, SW_LEN, mn, mx, &eb))
			fail_msg("%s", eb.msg);
		if (++added == n / 2)
			print_message("%u IDs of 54 bytes: %.1f bytes an ID\n",
			              added,
			              (double)ms_dropset_bytes(d) / added);
	}
	uint64_t bytes = ms_dropset_bytes(d);
	print_message("%u IDs of 54 bytes: %.1f bytes an ID\n", added,
	              (double)bytes / added);
	assert_true(added > n - 10);
	assert_true(bytes <= (uint64_t)added * 50);
	assert_bytes_honest(d, &mem);
	ms_dropset_iter it;
	ms_dropset_iter_init(&it, d);
	uint32_t k = 0;
	int64_t mn, mx, gmn, gmx;
	for (uint32_t i = 0; i < n; i++) {
		const uint8_t *id = ids + (size_t)i * SW_LEN;
		if (i && memcmp(id, id - SW_LEN, SW_LEN) == 0)
			continue;
		int64_t emn, emx;
		day_ts(i, &emn, &emx);
		assert_true(ms_dropset_next(&it, &mn, &mx));
		assert_int_equal(it.len, SW_LEN);
		assert_memory_equal(it.tid, id, SW_LEN);
		assert_int_equal(mn, emn);
		assert_int_equal(mx, emx);
		uint8_t t[MS_TRACE_ID_MAX];
		uint32_t len;
		ms_dropset_get(d, k++, t, &len, &gmn, &gmx);
		assert_int_equal(len, SW_LEN);
		assert_memory_equal(t, id, SW_LEN);
		assert_int_equal(gmn, emn);
		assert_int_equal(gmx, emx);
		assert_true(ms_dropset_contains(d, id, SW_LEN));
		uint8_t other[SW_LEN + 1];
		memcpy(other, id, SW_LEN);
		other[SW_LEN - 1] = 'x';
		assert_false(ms_dropset_contains(d, other, SW_LEN));
		assert_false(ms_dropset_contains(d, id, SW_LEN - 1));
		memcpy(other, id, SW_LEN);
		other[SW_LEN] = '0';
		assert_false(ms_dropset_contains(d, other, SW_LEN + 1));
	}
	assert_false(ms_dropset_next(&it, &mn, &mx));
	assert_int_equal(k, added);
	ms_dropset_close(d);
	free(ids);
}

static void
roundtrip(ms_dropset_hash_fn h, uint32_t n)
{
	ms_dropset_opts o = { NULL, h, NULL, 0 };
	ms_dropset *d;
	ms_errbuf eb;
	assert_int_equal(ms_dropset_open(&d, &o, &eb), 0);
	/* The shortest IDs first, then lengths cycling through 3..64 so
	 * records end at every offset of the chunks they fill. */
	assert_int_equal(ms_dropset_add(d, (const uint8_t *)"a", 1, INT64_MAX,
	                                INT64_MIN, &eb),
	                 0);
	assert_int_equal(ms_dropset_add(d, (const uint8_t *)"ab", 2, 0, 0, &eb),
	                 0);
	uint8_t id[MS_TRACE_ID_MAX + 1];
	for (uint32_t i = 0; i < n; i++) {
		uint32_t len = 3 + i % (MS_TRACE_ID_MAX - 2);
		int64_t mn, mx;
		make_id(id, i, len);
		odd_ts(i, &mn, &mx);
		if (ms_dropset_add(d, id, len, mn, mx, &eb))
			fail_msg("%s", eb.msg);
	}
	assert_int_equal(ms_dropset_count(d), n + 2);
	/* Entry 0 reads back as added, after every later add. */
	uint8_t t[MS_TRACE_ID_MAX];
	uint32_t len;
	int64_t mn, mx;
	ms_dropset_get(d, 0, t, &len, &mn, &mx);
	assert_int_equal(len, 1);
	assert_memory_equal(t, "a", 1);
	assert_int_equal(mn, INT64_MAX);
	assert_int_equal(mx, INT64_MIN);
	ms_dropset_get(d, 1, t, &len, &mn, &mx);
	assert_int_equal(len, 2);
	assert_memory_equal(t, "ab", 2);
	assert_int_equal(mn, 0);
	assert_int_equal(mx, 0);
	assert_true(ms_dropset_contains(d, (const uint8_t *)"a", 1));
	assert_false(ms_dropset_contains(d, (const uint8_t *)"b", 1));
	for (uint32_t i = 0; i < n; i++) {
		uint32_t el = 3 + i % (MS_TRACE_ID_MAX - 2);
		int64_t emn, emx;
		make_id(id, i, el);
		odd_ts(i, &emn, &emx);
		ms_dropset_get(d, i + 2, t, &len, &mn, &mx);
		assert_int_equal(len, el);
		assert_memory_equal(t, id, el);
		assert_int_equal(mn, emn);
		assert_int_equal(mx, emx);
		assert_true(ms_dropset_contains(d, id, el));
		/* Same bytes one shorter or one longer, or one byte
		 * changed: different IDs, absent. */
		if (el > 3)
			assert_false(ms_dropset_contains(d, id, el - 1));
		id[el] = 'A';
		assert_false(ms_dropset_contains(d, id, el + 1));
		id[el - 1] ^= 0x80;
		assert_false(ms_dropset_contains(d, id, el));
	}
	ms_dropset_close(d);
}

/* Hashes for collisions the slot table cannot tell apart by position or
 * fingerprint: the high half small and distinct, so the fingerprint bits
 * (the top ones) are equal; or the high half distinct only in its top
 * bits, with one home slot for all. */
static uint64_t
fnv(const uint8_t *p, uint32_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (uint32_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

static uint64_t
low_high_hash(const uint8_t *tid, uint32_t len, void *ctx)
{
	(void)ctx;
	return (fnv(tid, len) & 0xff) << 32 | 3;
}

static uint64_t
top_high_hash(const uint8_t *tid, uint32_t len, void *ctx)
{
	(void)ctx;
	return (fnv(tid, len) & 0x3) << 62 | 5;
}

/* The i-th (from 0) of the IDs of 1..depth letters 'a' and 'b' in byte
 * order ("a", "aa", "aaa", ..., "ab", ...) into id; its length. */
static uint32_t
ab_id(uint32_t i, uint32_t depth, uint8_t *id)
{
	uint32_t len = 0;
	for (;;) {
		/* IDs that go on from this letter; with it, those
		 * starting with 'a' here. */
		uint32_t below = ((uint32_t)1 << (depth - len)) - 2;
		uint32_t half = below + 1;
		id[len++] = i < half ? 'a' : 'b';
		if (i >= half)
			i -= half;
		if (i == 0)
			return len;
		i--;
	}
}

/* IDs in byte order share from none to all of the previous ID, in every
 * mix within a run of records; with one slot and fingerprint for all,
 * each lookup is told by its bytes alone: every member is found and read
 * back, and one byte changed anywhere (also in a byte its record shares
 * with the records before it), a prefix or a non-member is absent. */
static void
test_dropset_shared_collisions(void **st)
{
	(void)st;
	const uint32_t depth = 8, all = ((uint32_t)1 << (depth + 1)) - 2;
	ms_dropset_opts o = { NULL, const_hash, NULL, 0 };
	ms_dropset *d;
	ms_errbuf eb;
	assert_int_equal(ms_dropset_open(&d, &o, &eb), 0);
	uint8_t id[16], t[MS_TRACE_ID_MAX];
	for (uint32_t i = 0; i < all; i++)
		if (i % 3 && ms_dropset_add(d, id, ab_id(i, depth, id), i, i,
		                            &eb))
			fail_msg("%s", eb.msg);
	size_t at = 0;
	for (uint32_t i = 0; i < all; i++) {
		uint32_t len = ab_id(i, depth, id);
		assert_int_equal(ms_dropset_contains(d, id, len), i % 3 != 0);
		if (i % 3 == 0)
			continue;
		uint32_t tl;
		int64_t mn, mx;
		ms_dropset_get(d, at++, t, &tl, &mn, &mx);
		assert_int_equal(tl, len);
		assert_memory_equal(t, id, len);
		assert_int_equal(mn, i);
		for (uint32_t k = 0; k < len; k++) {
			id[k] ^= 'a' ^ 'b';
			bool member = false;
			for (uint32_t j = 0; j < all; j++) {
				uint32_t jl = ab_id(j, depth, t);
				member |= j % 3 && jl == len &&
				          memcmp(t, id, len) == 0;
			}
			assert_int_equal(ms_dropset_contains(d, id, len),
			                 member);
			id[k] ^= 'a' ^ 'b';
			id[k] ^= 0x80;
			assert_false(ms_dropset_contains(d, id, len));
			id[k] ^= 0x80;
		}
	}
	assert_int_equal(at, ms_dropset_count(d));
	ms_dropset_close(d);
}

static void
test_dropset_chunks_round_trip(void **st)
{
	(void)st;
	roundtrip(NULL, 60000);
	roundtrip(const_hash, 2500);
	roundtrip(len_hash, 2500);
	roundtrip(low_high_hash, 2500);
	roundtrip(top_high_hash, 2500);
}

/* Every allocation of a growing set, failed once: the add that meets it
 * fails with a message and leaves the set as it was; the same add then
 * succeeds and the set ends complete and exact. */
static void
test_dropset_out_of_memory(void **st)
{
	(void)st;
	const uint32_t n = 5000;
	uint8_t id[40];
	uint32_t failed_runs = 0;
	for (uint64_t at = 1; at <= 60; at++) {
		ms_mem mem;
		ms_dropset *d = open_counted(&mem);
		ms_errbuf eb;
		ms_mem_fail_at(&mem, at, false);
		uint32_t fails = 0;
		for (uint32_t i = 0; i < n; i++) {
			int64_t mn, mx;
			make_id(id, i, sizeof(id));
			day_ts(i, &mn, &mx);
			int rc = ms_dropset_add(d, id, sizeof(id), mn, mx, &eb);
			if (rc) {
				assert_int_equal(rc, MS_ERR_NOMEM);
				if (!strstr(eb.msg, "drop set: out of memory "
				                    "for ") ||
				    !strstr(eb.msg, " bytes)"))
					fail_msg("add %u: \"%s\"", i, eb.msg);
				assert_int_equal(ms_dropset_count(d), i);
				assert_false(
				        ms_dropset_contains(d, id, sizeof(id)));
				fails++;
				rc = ms_dropset_add(d, id, sizeof(id), mn, mx,
				                    &eb);
			}
			assert_int_equal(rc, 0);
		}
		assert_true(fails <= 1);
		failed_runs += fails;
		assert_int_equal(ms_dropset_count(d), n);
		for (uint32_t i = 0; i < n; i++) {
			uint8_t t[MS_TRACE_ID_MAX];
			uint32_t len;
			int64_t mn, mx, emn, emx;
			make_id(id, i, sizeof(id));
			day_ts(i, &emn, &emx);
			ms_dropset_get(d, i, t, &len, &mn, &mx);
			assert_int_equal(len, sizeof(id));
			assert_memory_equal(t, id, sizeof(id));
			assert_int_equal(mn, emn);
			assert_int_equal(mx, emx);
			assert_true(ms_dropset_contains(d, id, sizeof(id)));
		}
		assert_bytes_honest(d, &mem);
		ms_dropset_close(d);
	}
	/* Each of the set's allocations was met by some run. */
	assert_true(failed_runs >= 15);
}

/* A guard over three outside parts, opened and closed with mem. */
static int
guard_open_close(void *ctx, ms_mem *mem, ms_errbuf *eb)
{
	(void)ctx;
	fake f = { { "A" }, 0 };
	ms_guard_part gp[3] = {
		{ 1, 10 * HOUR, 11 * HOUR, fake_probe, &f },
		{ 2, 11 * HOUR, 12 * HOUR, fake_probe, &f },
		{ 3, 12 * HOUR, 13 * HOUR, fake_probe, &f },
	};
	ms_guard_opts o = { .mem = mem };
	ms_guard *g = NULL;
	int rc = open_guard(&g, gp, 3, &o, eb);
	if (rc == 0)
		assert_false(check(g, "A", 11 * HOUR, 12 * HOUR, NULL));
	ms_guard_close(g);
	return rc;
}

/* An empty drop set opened with mem, given one trace, closed. */
static int
dropset_open_close(void *ctx, ms_mem *mem, ms_errbuf *eb)
{
	(void)ctx;
	ms_dropset_opts o = { mem, NULL, NULL, 0 };
	ms_dropset *d = NULL;
	int rc = ms_dropset_open(&d, &o, eb);
	if (rc == 0)
		rc = ms_dropset_add(d, (const uint8_t *)"A", 1, 5, 6, eb);
	if (rc == 0)
		assert_true(ms_dropset_contains(d, (const uint8_t *)"A", 1));
	ms_dropset_close(d);
	return rc;
}

/* A guard or a drop set out of memory at each of its allocations says
 * what the memory was for and how many bytes, and leaves nothing
 * allocated: they said only "guard: out of memory" and "drop set: out
 * of memory". */
/* The reference's drop-set ceiling (banyand/trace merger.go
 * dropSetBudgetFromLimit over the memory protector's limit, which its
 * merge benchmark sets to the container's limit; drop_set.go
 * dropSetBytesPerEntry, maxIDsForBudget). */
static void
test_dropset_budget_rule(void **st)
{
	(void)st;
	const uint64_t mib = 1ull << 20;
	/* 4 GiB, 2 CPUs: 4 GiB over 32. */
	assert_int_equal(ms_dropset_budget(4096 * mib, 2), 128 * mib);
	/* 64 MiB: 2 MiB. */
	assert_int_equal(ms_dropset_budget(64 * mib, 2), 2 * mib);
	/* The 1 MiB floor; no limit known: 16 MiB; 0 CPUs count as 1. */
	assert_int_equal(ms_dropset_budget(16 * mib, 2), mib);
	assert_int_equal(ms_dropset_budget(0, 2), 16 * mib);
	assert_int_equal(ms_dropset_budget(64 * mib, 0), 4 * mib);
	/* 20 + the size class (16 up to 256 bytes, then 32) + 32. */
	assert_int_equal(ms_dropset_price(42), 100);
	assert_int_equal(ms_dropset_price(54), 116);
	assert_int_equal(ms_dropset_price(1), 68);
	assert_int_equal(ms_dropset_price(256), 308);
	assert_int_equal(ms_dropset_price(257), 340);
	assert_int_equal(ms_dropset_max_ids(2 * mib, 54), 18078);
	assert_int_equal(ms_dropset_max_ids(128 * mib, 54), 1157049);
	assert_int_equal(ms_dropset_max_ids(0, 54), 0);  /* no ceiling */
	assert_int_equal(ms_dropset_max_ids(50, 54), 1); /* never 0 */
}

static void
add_id(ms_dropset *d, const char *id)
{
	ms_errbuf eb;
	assert_true(ms_dropset_can_accept(d));
	if (ms_dropset_add(d, (const uint8_t *)id, (uint32_t)strlen(id), 1, 2,
	                   &eb))
		fail_msg("%s", eb.msg);
}

/* The first drop is always recorded, whatever the budget; the set is
 * full once it holds what the longest ID so far prices; full is one-way;
 * no budget, no ceiling. */
static void
test_dropset_ceiling(void **st)
{
	(void)st;
	ms_dropset *d;
	ms_dropset_opts o = { NULL, NULL, NULL, 1 }; /* below one ID */
	assert_int_equal(ms_dropset_open(&d, &o, NULL), 0);
	assert_int_equal(ms_dropset_max_ids_of(d), 0);
	add_id(d, "first");
	assert_int_equal(ms_dropset_max_ids_of(d), 1);
	for (int i = 0; i < 3; i++)
		assert_false(ms_dropset_can_accept(d));
	ms_dropset_close(d);

	o.budget = 3 * 68 + 67; /* three 16-byte IDs */
	assert_int_equal(ms_dropset_open(&d, &o, NULL), 0);
	assert_int_equal(ms_dropset_budget_of(d), 3 * 68 + 67);
	add_id(d, "id-0000000000000");
	add_id(d, "id-0000000000001");
	add_id(d, "id-0000000000002");
	assert_false(ms_dropset_can_accept(d));
	assert_false(ms_dropset_can_accept(d));
	assert_int_equal(ms_dropset_count(d), 3);
	/* Lookups are never bounded. */
	assert_true(ms_dropset_contains(d, (const uint8_t *)"id-0000000000002",
	                                16));
	ms_dropset_close(d);

	/* A longer ID re-prices: 40 bytes cost 100, so 271 bytes hold 2
	 * (3 at 68 bytes for 16). */
	assert_int_equal(ms_dropset_open(&d, &o, NULL), 0);
	add_id(d, "id-0000000000000");
	assert_int_equal(ms_dropset_max_ids_of(d), 3);
	add_id(d, "id-0000000000001-and-a-longer-tail-of-40");
	assert_int_equal(ms_dropset_max_ids_of(d), 2);
	assert_false(ms_dropset_can_accept(d));
	ms_dropset_close(d);

	ms_dropset_opts none = { NULL, NULL, NULL, 0 };
	assert_int_equal(ms_dropset_open(&d, &none, NULL), 0);
	for (int i = 0; i < 100; i++) {
		char id[16];
		snprintf(id, sizeof(id), "t%04d", i);
		add_id(d, id);
	}
	assert_int_equal(ms_dropset_max_ids_of(d), 0);
	assert_true(ms_dropset_can_accept(NULL));
	ms_dropset_close(d);
}

static void
test_guard_and_dropset_open_out_of_memory(void **st)
{
	(void)st;
	assert_int_equal(tl_mem_sweep(guard_open_close, NULL, "guard: "), 3);
	assert_true(tl_mem_sweep(dropset_open_close, NULL, "drop set: ") >= 3);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hot_outside_part_holding_trace_defers),
		cmocka_unit_test(test_grace_window_bounds),
		cmocka_unit_test(test_forced_positive_never_confirms),
		cmocka_unit_test(test_budgets),
		cmocka_unit_test(test_segment_edge),
		cmocka_unit_test(test_revalidate),
		cmocka_unit_test(test_real_part_filter),
		cmocka_unit_test(test_dropset_forced_collisions),
		cmocka_unit_test(test_dropset_bad_ids),
		cmocka_unit_test(test_dropset_bytes_per_id),
		cmocka_unit_test(test_dropset_shared_prefixes),
		cmocka_unit_test(test_dropset_shared_collisions),
		cmocka_unit_test(test_dropset_chunks_round_trip),
		cmocka_unit_test(test_dropset_out_of_memory),
		cmocka_unit_test(test_dropset_budget_rule),
		cmocka_unit_test(test_dropset_ceiling),
		cmocka_unit_test(test_guard_and_dropset_open_out_of_memory),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
