/*
 * test_replay_sets.c - the replay's per-day sets, held to what the gates
 * read from them: the drop set (every trace once, in order of first
 * report, found by ID past every growth of its table), the trace-ID pool
 * (an ID stays where it was put as chunks are added), and the block-ledger
 * cache (a block's ledgers from the cache are the ones its rows make,
 * past the first table and chunk sizes, and a part checked again is
 * checked from the cache alone); and the large arrays the oracle keeps
 * outside malloc (a sort puts them in order, equal elements in the order
 * they came; growing keeps what was there).
 */
#include "replay_int.h"

#include "ms_ledger.h"
#include "ms_part.h"
#include "ms_sidx.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Trace ID number i: lengths 1..64 in turn (longer when i's digits are),
 * letters then i's digits, so distinct for every i. */
static size_t
make_id(size_t i, uint8_t id[MS_TRACE_ID_MAX])
{
	size_t len = 1 + i % MS_TRACE_ID_MAX;
	for (size_t k = 0; k < len; k++)
		id[k] = (uint8_t)('a' + (i >> (k % 4 * 5) & 15) + k % 7);
	char num[24];
	int w = snprintf(num, sizeof(num), "%zu", i);
	if ((size_t)w > len)
		len = (size_t)w;
	memcpy(id + len - (size_t)w, num, (size_t)w);
	return len;
}

static void
test_dropset(void **state)
{
	(void)state;
	enum { N = 20000 };
	ms__dropped d;
	memset(&d, 0, sizeof(d));
	uint8_t id[MS_TRACE_ID_MAX];
	for (size_t i = 0; i < N; i++) {
		size_t len = make_id(i, id);
		assert_int_equal(ms__dropped_add(&d, id, (uint32_t)len, i + 1,
		                                 (enum ms__rphase)(i % 3)),
		                 0);
	}
	/* Every tenth trace reported a second time, with one more row. */
	for (size_t i = 0; i < N; i += 10) {
		size_t len = make_id(i, id);
		assert_int_equal(ms__dropped_add(&d, id, (uint32_t)len, 1,
		                                 MS__RP_FINALIZE),
		                 0);
	}
	assert_int_equal(d.n, N);
	assert_int_equal(ms__dropped_add(&d, id, 0, 1, MS__RP_PRIMARY),
	                 MS_ERR_INVAL);
	uint64_t *found = calloc(N, sizeof(*found));
	assert_non_null(found);
	for (size_t i = 0; i < N; i++) {
		size_t len = make_id(i, id);
		const ms__drop_ent *e = ms__dropped_find(&d, id, (uint32_t)len);
		assert_non_null(e);
		/* In order of first report, the first phase kept. */
		assert_ptr_equal(e, &d.ent[i]);
		assert_int_equal(e->len, len);
		assert_memory_equal(e->tid, id, len);
		assert_int_equal(e->phase, i % 3);
		assert_int_equal(e->times, i % 10 ? 1 : 2);
		assert_int_equal(e->rows, i % 10 ? i + 1 : i + 2);
		found[i] = e->rows;
	}
	uint8_t other[] = "not-dropped";
	assert_null(ms__dropped_find(&d, other, sizeof(other) - 1));
	/* Reported twice: the check names the first such trace. */
	char why[200];
	assert_int_equal(ms__drop_check(&d, found, why, sizeof(why)),
	                 MS_ERR_STATE);
	size_t len0 = make_id(0, id);
	char want[200];
	snprintf(want, sizeof(want), "trace %.*s: dropped 2 times", (int)len0,
	         (const char *)id);
	assert_non_null(strstr(why, want));
	free(found);
	ms__dropped_release(&d);
	assert_int_equal(d.n, 0);

	/* Once each with every row: the check passes; a row short fails. */
	ms__dropped e;
	memset(&e, 0, sizeof(e));
	uint64_t f2[3];
	for (size_t i = 0; i < 3; i++) {
		size_t len = make_id(i, id);
		assert_int_equal(ms__dropped_add(&e, id, (uint32_t)len, 5,
		                                 MS__RP_COOLDOWN),
		                 0);
		f2[i] = 5;
	}
	assert_int_equal(ms__drop_check(&e, f2, why, sizeof(why)), 0);
	f2[2] = 4;
	assert_int_equal(ms__drop_check(&e, f2, why, sizeof(why)),
	                 MS_ERR_STATE);
	assert_non_null(strstr(why, "5 rows reported, 4 in the fixture"));
	ms__dropped_release(&e);
}

static void
test_idpool(void **state)
{
	(void)state;
	enum { N = 5000 }; /* 5000 IDs of up to 64 bytes: several chunks */
	ms__idpool p;
	memset(&p, 0, sizeof(p));
	const uint8_t **at = calloc(N, sizeof(*at));
	assert_non_null(at);
	uint8_t id[MS_TRACE_ID_MAX];
	for (size_t i = 0; i < N; i++) {
		size_t len = make_id(i, id);
		at[i] = ms__idpool_add(&p, id, len);
		assert_non_null(at[i]);
	}
	assert_true(p.ch.n > 2);
	for (size_t i = 0; i < N; i++) {
		size_t len = make_id(i, id);
		assert_memory_equal(at[i], id, len);
	}
	assert_null(ms__idpool_add(&p, id, MS_TRACE_ID_MAX + 1));
	free(at);
	ms__idpool_release(&p);
	assert_int_equal(p.ch.n, 0);
}

/* A part of ntr one-row traces (core and both indexes) under dir. */
static void
write_part(const char *dir, uint64_t id, size_t ntr, ms_part *out[3])
{
	ms_row *rows = calloc(ntr, sizeof(*rows));
	char(*tids)[16] = calloc(ntr, sizeof(*tids));
	assert_non_null(rows);
	assert_non_null(tids);
	for (size_t i = 0; i < ntr; i++) {
		ms_row *r = &rows[i];
		snprintf(tids[i], sizeof(tids[i]), "tr-%08zu", i);
		r->trace_id = (const uint8_t *)tids[i];
		r->trace_id_len = (uint32_t)strlen(tids[i]);
		r->span_id = i;
		r->service = i % 2 ? "svc-a" : "svc-b";
		r->instance = "inst";
		r->endpoint = "/api";
		r->segment_id = "seg";
		r->start_ns = 1700000000000000000LL + (int64_t)(i * 7919);
		r->latency_ms = (uint32_t)(i * 31 % 700);
		r->is_error = i % 13 == 0;
	}
	ms_errbuf eb = { { 0 } };
	ms_part_meta meta;
	char path[512];
	snprintf(path, sizeof(path), "%s/core-%llu", dir,
	         (unsigned long long)id);
	if (ms_part_write_rows(path, id, rows, ntr, NULL, &meta, &eb))
		fail_msg("write %s: %s", path, eb.msg);
	assert_int_equal(ms_part_open(&out[MS_KIND_CORE], path, NULL, &eb), 0);
	for (int k = MS_KIND_LATENCY; k <= MS_KIND_START_TIME; k++) {
		enum ms_part_kind kind = (enum ms_part_kind)k;
		snprintf(path, sizeof(path), "%s/%s-%llu", dir,
		         ms_part_kind_name(kind), (unsigned long long)id);
		if (ms_sidx_write_rows(kind, path, id, rows, ntr, NULL, &meta,
		                       &eb))
			fail_msg("write %s: %s", path, eb.msg);
		assert_int_equal(ms_part_open(&out[k], path, NULL, &eb), 0);
	}
	free(rows);
	free(tids);
}

static void
test_blkcache(void **state)
{
	(void)state;
	/* More blocks than the cache's first table holds at three quarters
	 * load (49,152 of 65,536 slots) and than several of its chunks
	 * (4,096). */
	enum { NTR = 50000 };
	char tmpl[] = "/tmp/ms-test-replay-sets-XXXXXX";
	char *dir = mkdtemp(tmpl);
	assert_non_null(dir);
	ms_part *p[3];
	write_part(dir, 1, NTR, p);
	ms_errbuf eb = { { 0 } };
	ms_ledger_set want;
	for (int k = 0; k < MS_KIND_COUNT; k++)
		assert_int_equal(
		        ms_ledger_of_part(p[k], &want.kind[k], NULL, &eb), 0);

	/* Without a cache, with an empty one, then from the cache alone. */
	ms__blkcache *c = NULL;
	assert_int_equal(ms__blkcache_new(&c), 0);
	ms_ledger_set none, first, again;
	char why[200];
	assert_int_equal(
	        ms__part_check(p[0], p[1], p[2], NULL, &none, why, sizeof(why)),
	        0);
	assert_int_equal(
	        ms__part_check(p[0], p[1], p[2], c, &first, why, sizeof(why)),
	        0);
	ms__blkcache_figs bf;
	ms__blkcache_figures(c, &bf);
	assert_int_equal(bf.hits, 0);
	assert_int_equal(bf.misses, NTR);
	assert_int_equal(
	        ms__part_check(p[0], p[1], p[2], c, &again, why, sizeof(why)),
	        0);
	ms__blkcache_figures(c, &bf);
	assert_int_equal(bf.hits, NTR);
	assert_int_equal(bf.misses, NTR);
	assert_true(ms_ledger_set_equal(&none, &want));
	assert_true(ms_ledger_set_equal(&first, &want));
	assert_true(ms_ledger_set_equal(&again, &want));

	/* Each block by its key: the ledgers of its one row. */
	ms_part_iter *it = NULL;
	assert_int_equal(ms_part_iter_open(&it, p[0], NULL, NULL, &eb), 0);
	const ms_block_info *bi;
	size_t nb = 0;
	while (ms_part_iter_next(it, &bi, &eb) == 1) {
		uint64_t lo, hi;
		assert_int_equal(ms__block_key(it, bi, &lo, &hi, &eb), 0);
		const ms_row *r;
		assert_int_equal(ms_part_iter_decode(it, MS_COL_ALL, &r, &eb),
		                 0);
		ms_ledger_set one, got;
		ms_ledger_set_init(&one);
		ms_ledger_set_add_row(&one, &r[0]);
		assert_true(ms__blkcache_get(c, lo, hi, &got));
		assert_true(ms_ledger_set_equal(&got, &one));
		assert_false(ms__blkcache_get(c, lo ^ 1, hi, &got));
		nb++;
	}
	assert_int_equal(nb, NTR);
	ms_part_iter_close(it);
	ms__blkcache_free(c);
	for (int k = 0; k < MS_KIND_COUNT; k++) {
		char rm[600];
		snprintf(rm, sizeof(rm), "%s", ms_part_dir(p[k]));
		ms_part_close(p[k]);
		assert_int_equal(ms_part_remove_dir(rm, &eb), 0);
	}
	assert_int_equal(rmdir(dir), 0);
}

/* Elements with few distinct keys (many equal) and their original place. */
typedef struct sort_el {
	uint32_t key, seq;
	uint8_t pad[16]; /* so that an element is not a power of two */
} sort_el;

static int
cmp_el_key(const void *a, const void *b)
{
	const sort_el *x = a, *y = b;
	return (x->key > y->key) - (x->key < y->key);
}

static int
cmp_el_key_seq(const void *a, const void *b)
{
	const sort_el *x = a, *y = b;
	int c = cmp_el_key(a, b);
	return c ? c : (x->seq > y->seq) - (x->seq < y->seq);
}

static void
test_big_sort(void **state)
{
	(void)state;
	static const size_t sizes[] = { 0, 1, 2, 3, 5, 16, 17, 1000, 65537 };
	uint64_t x = 0x9e3779b97f4a7c15ULL;
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		size_t n = sizes[s];
		sort_el *a = calloc(n ? n : 1, sizeof(*a));
		sort_el *b = calloc(n ? n : 1, sizeof(*b));
		assert_non_null(a);
		assert_non_null(b);
		for (size_t i = 0; i < n; i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			a[i].key = (uint32_t)(x % (n / 4 + 2));
			a[i].seq = (uint32_t)i;
			a[i].pad[i % 16] = (uint8_t)i;
		}
		memcpy(b, a, n * sizeof(*a));
		assert_int_equal(ms__big_sort(a, n, sizeof(*a), cmp_el_key), 0);
		/* Stable: the same as ordering by key, then place. */
		qsort(b, n, sizeof(*b), cmp_el_key_seq);
		assert_memory_equal(a, b, n * sizeof(*a) + (n == 0));
		free(a);
		free(b);
	}
}

static void
test_big_reserve(void **state)
{
	(void)state;
	uint32_t *v = NULL;
	size_t cap = 0;
	assert_int_equal(ms__big_reserve((void **)&v, &cap, 3, sizeof(*v)), 0);
	assert_true(cap >= 3);
	for (uint32_t i = 0; i < 3; i++)
		v[i] = i * 7;
	/* Past its capacity one element at a time: it at least doubles,
	 * and what was written stays. */
	for (uint32_t i = 3; i < 100000; i++) {
		size_t was = cap;
		assert_int_equal(ms__big_reserve((void **)&v, &cap, i + 1,
		                                 sizeof(*v)),
		                 0);
		assert_true(cap >= i + 1);
		assert_true(cap == was || cap >= 2 * was);
		v[i] = i * 7;
	}
	for (uint32_t i = 0; i < 100000; i++)
		assert_int_equal(v[i], i * 7);
	/* Memory that cannot be sized is refused, the array as it was. */
	uint32_t *keep = v;
	size_t kcap = cap;
	assert_int_equal(ms__big_reserve((void **)&v, &cap, SIZE_MAX / 2,
	                                 sizeof(*v)),
	                 MS_ERR_NOMEM);
	assert_ptr_equal(v, keep);
	assert_int_equal(cap, kcap);
	ms__big_free(v, cap * sizeof(*v));
	ms__big_free(NULL, 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dropset),
		cmocka_unit_test(test_idpool),
		cmocka_unit_test(test_blkcache),
		cmocka_unit_test(test_big_sort),
		cmocka_unit_test(test_big_reserve),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
