/*
 * test_replay_sets.c - the replay's per-day sets, held to what the gates
 * read from them: the drop set (every trace once, in order of first
 * report, found by ID past every growth of its table), the trace-ID pool
 * (an ID stays where it was put as chunks are added), and the block-ledger
 * cache (a block's ledgers from the cache are the ones its rows make,
 * past the first table and chunk sizes, and a part checked again is
 * checked from the cache alone); the large arrays the oracle keeps
 * outside malloc (a sort puts them in order, equal elements in the order
 * they came; growing keeps what was there); the ring of recent merges
 * (every event read back byte for byte as pushed, past the ring's size and
 * seeks back; a one-link chain's merges take under 2 KiB each, in
 * pages written only as they come); and the oracle's table as a replay
 * spills it to its work directory until the gates: out of memory
 * meanwhile, read back answering every lookup as before, its file gone,
 * and a damaged or missing file refused with an error naming it.
 */
#include "fx_int.h"
#include "replay_int.h"

#include "ms_ledger.h"
#include "ms_part.h"
#include "ms_sidx.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "alloc_testlib.h"
#include "testdir.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

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

/* A part of ntr one-row traces and its two index parts in dir (made
 * with mkdtemp into tmpl), and their ledgers. */
static char *
parts_with_ledgers(char *tmpl, uint32_t ntr, ms_part *p[3], ms_ledger_set *want)
{
	char *dir = mkdtemp(tmpl);
	assert_non_null(dir);
	write_part(dir, 1, ntr, p);
	ms_errbuf eb = { { 0 } };
	for (int k = 0; k < MS_KIND_COUNT; k++)
		assert_int_equal(
		        ms_ledger_of_part(p[k], &want->kind[k], NULL, &eb), 0);
	return dir;
}

/* The parts of parts_with_ledgers closed and removed, with dir. */
static void
parts_remove(ms_part *p[3], const char *dir)
{
	ms_errbuf eb = { { 0 } };
	for (int k = 0; k < MS_KIND_COUNT; k++) {
		char rm[600];
		snprintf(rm, sizeof(rm), "%s", ms_part_dir(p[k]));
		ms_part_close(p[k]);
		assert_int_equal(ms_part_remove_dir(rm, &eb), 0);
	}
	assert_int_equal(rmdir(dir), 0);
}

static void
test_blkcache(void **state)
{
	(void)state;
	/* More blocks than the cache's table holds at three quarters load
	 * through several doublings (768 of its first 1,024 slots, 49,152
	 * of 65,536) and than several of its chunks (4,096). */
	enum { NTR = 50000 };
	char tmpl[] = "/tmp/ms-test-replay-sets-XXXXXX";
	ms_part *p[3];
	ms_ledger_set want;
	char *dir = parts_with_ledgers(tmpl, NTR, p, &want);
	ms_errbuf eb = { { 0 } };

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
	parts_remove(p, dir);
}

/* The entries fb sealed and written to dir as a block ledger file, and
 * a new cache with that file attached. */
static ms__blkcache *
cache_over(fx_blocks *fb, const char *dir)
{
	ms_errbuf eb = { { 0 } };
	char fact[64];
	assert_int_equal(ms__fx_blocks_seal(fb, &eb), 0);
	assert_int_equal(ms__fx_blocks_write(dir, fb, fact, &eb), 0);
	ms_fixture_blocks *fx = NULL;
	assert_int_equal(ms__fx_blocks_open(&fx, dir, fact, &eb), 0);
	ms__blkcache *c = NULL;
	assert_int_equal(ms__blkcache_new(&c), 0);
	ms__blkcache_attach(c, fx);
	return c;
}

/* The block ledger file of cache_over removed from dir. */
static void
blocks_file_remove(const char *dir)
{
	char bl[PATH_MAX + 32];
	snprintf(bl, sizeof(bl), "%s/%s", dir, FX_BLOCKS_FILE);
	assert_int_equal(unlink(bl), 0);
}

/* What ms__blkcache_get_many answered, by key tag. */
typedef struct many_ans {
	size_t n, calls;
	int rc[20001];
	ms_ledger_set led[20001];
	unsigned times[20001];
} many_ans;

static int
many_take(void *arg, const ms_fixture_block_key *k, int rc,
          const ms_ledger_set *led)
{
	many_ans *a = arg;
	assert_true(k->tag < a->n);
	assert_true(rc ? led == NULL : led != NULL);
	a->rc[k->tag] = rc;
	if (led)
		a->led[k->tag] = *led;
	a->times[k->tag]++;
	a->calls++;
	return 0;
}

/* The n keys of a cache c (those of the blocks it decoded, and nfile
 * others its file holds) looked up at once, out of order, one twice,
 * each beside a key found nowhere: every key answered once, as
 * ms__blkcache_get answers it alone, and those asked of the file (not
 * in memory) counted as file lookups, read in far fewer reads. */
static void
many_lookup(ms__blkcache *c, const ms_fixture_block_key *keys, size_t n,
            size_t nfile)
{
	static ms_fixture_block_key k[20001];
	static many_ans got;
	assert_true(2 * n + 1 <= 20001);
	for (size_t i = 0; i < n; i++) {
		k[2 * i] = keys[n - 1 - i];
		k[2 * i].tag = (uint32_t)(n - 1 - i);
		k[2 * i + 1] =
		        (ms_fixture_block_key){ .lo = keys[i].lo ^ 1,
			                        .hi = keys[i].hi,
			                        .tag = (uint32_t)(n + i) };
	}
	k[2 * n] = keys[0];
	k[2 * n].tag = (uint32_t)(2 * n);
	memset(&got, 0, sizeof(got));
	got.n = 2 * n + 1;
	ms__blkcache_figs at, end;
	ms__blkcache_figures(c, &at);
	assert_int_equal(
	        ms__blkcache_get_many(c, k, 2 * n + 1, many_take, &got), 0);
	ms__blkcache_figures(c, &end);
	assert_int_equal(got.calls, 2 * n + 1);
	/* Asked of the file: its blocks and the keys found nowhere. */
	assert_int_equal(end.file_lookups - at.file_lookups, nfile + n);
	assert_int_equal(end.file_refused, at.file_refused);
	assert_int_equal(end.hits + end.misses, at.hits + at.misses);
	fprintf(stderr, "cache: %zu keys, %llu asked of the file, %llu reads\n",
	        2 * n + 1,
	        (unsigned long long)(end.file_lookups - at.file_lookups),
	        (unsigned long long)(end.file_reads - at.file_reads));
	assert_true((end.file_reads - at.file_reads) * 10 < nfile);
	for (size_t t = 0; t < 2 * n + 1; t++) {
		assert_int_equal(got.times[t], 1);
		/* k is reordered: the keys again from their tags. */
		const ms_fixture_block_key *w = &keys[t < 2 * n ? t % n : 0];
		uint64_t lo = t >= n && t < 2 * n ? w->lo ^ 1 : w->lo;
		ms_ledger_set one;
		bool hit = ms__blkcache_get(c, lo, w->hi, &one);
		assert_int_equal(hit, t < n || t == 2 * n);
		assert_int_equal(got.rc[t], hit ? 0 : MS_ERR_NOTFOUND);
		if (hit)
			assert_true(ms_ledger_set_equal(&got.led[t], &one));
	}
}

/* A part checked with the fixture's block ledger file attached: the
 * blocks the run has not decoded are asked of the file in batches
 * (several per part here), and those it lacks decoded through a second
 * iterator: the ledgers are the part's, each block counted once (hit:
 * from the file; miss: decoded and kept), each key asked once, in far
 * fewer reads than keys. */
static void
test_blkcache_file(void **state)
{
	(void)state;
	enum { NTR = 10000 };
	char tmpl[] = "/tmp/ms-test-replay-sets-XXXXXX";
	ms_part *p[3];
	ms_ledger_set want;
	char *dir = parts_with_ledgers(tmpl, NTR, p, &want);
	ms_errbuf eb = { { 0 } };

	/* The file holds two blocks of every three. */
	static fx_blocks fb;
	memset(&fb, 0, sizeof(fb));
	ms_part_iter *it = NULL;
	assert_int_equal(ms_part_iter_open(&it, p[0], NULL, NULL, &eb), 0);
	const ms_block_info *bi;
	size_t nb = 0;
	static ms_fixture_block_key keys[NTR];
	while (ms_part_iter_next(it, &bi, &eb) == 1) {
		uint64_t lo, hi;
		ms_ledger_set one;
		assert_int_equal(ms__block_key(it, bi, &lo, &hi, &eb), 0);
		assert_int_equal(ms_ledger_block_decode(it, bi, &one, &eb), 0);
		keys[nb] = (ms_fixture_block_key){ .lo = lo, .hi = hi };
		if (nb++ % 3)
			assert_int_equal(ms__fx_blocks_add(&fb, lo, hi, &one),
			                 0);
	}
	ms_part_iter_close(it);
	assert_int_equal(nb, NTR);
	ms__blkcache *c = cache_over(&fb, dir);
	ms_ledger_set got;
	char why[200];
	assert_int_equal(
	        ms__part_check(p[0], p[1], p[2], c, &got, why, sizeof(why)), 0);
	assert_true(ms_ledger_set_equal(&got, &want));
	ms__blkcache_figs bf;
	ms__blkcache_figures(c, &bf);
	assert_int_equal(bf.hits, fb.n);
	assert_int_equal(bf.misses, NTR - fb.n);
	assert_int_equal(bf.resident, NTR - fb.n);
	assert_int_equal(bf.file_lookups, NTR);
	assert_int_equal(bf.file_refused, 0);
	assert_true(bf.file_reads * 10 < bf.file_lookups);

	/* Again: every block answered, from memory or the file. */
	assert_int_equal(
	        ms__part_check(p[0], p[1], p[2], c, &got, why, sizeof(why)), 0);
	assert_true(ms_ledger_set_equal(&got, &want));
	ms__blkcache_figures(c, &bf);
	assert_int_equal(bf.hits, fb.n + NTR);
	assert_int_equal(bf.misses, NTR - fb.n);
	assert_int_equal(bf.file_lookups, NTR + fb.n);

	many_lookup(c, keys, NTR, fb.n);

	ms__blkcache_free(c);
	ms__fx_blocks_free(&fb);
	blocks_file_remove(dir);
	parts_remove(p, dir);
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

/* ---- the ring of recent merges ------------------------------------------ */

static uint64_t
rng_next(uint64_t *x)
{
	*x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
	return *x;
}

/* n bytes in runs of 1 to 40: zeros, or random bytes (some zero too),
 * so that runs of zeros shorter and longer than packing skips fall
 * everywhere, the ends included. */
static void
fill_runs(uint64_t *x, unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n;) {
		size_t run = 1 + rng_next(x) % 40;
		bool zero = rng_next(x) % 2;
		for (size_t k = 0; k < run && i < n; k++, i++)
			p[i] = zero ? 0 : (unsigned char)rng_next(x);
	}
}

/* Pushed event e (its inputs at in[e * MS_REPLAY_RECENT_INPUTS...]: as
 * many as it keeps) and the ring's record i give the same bytes. */
static void
check_record(const ms__recent *rg, size_t i, const ms_ev_merge *e,
             const ms_ev_input *in)
{
	ms_ev_merge got;
	ms_ev_input gin[MS_REPLAY_RECENT_INPUTS + 1];
	memset(gin, 0xa5, sizeof(gin));
	ms__recent_get(rg, i, &got, gin);
	assert_ptr_equal(got.inputs, gin);
	size_t kept = e->ninputs < MS_REPLAY_RECENT_INPUTS
	                      ? e->ninputs
	                      : MS_REPLAY_RECENT_INPUTS;
	ms_ev_input want[MS_REPLAY_RECENT_INPUTS];
	memset(want, 0, sizeof(want));
	if (e->inputs)
		memcpy(want, in, kept * sizeof(*in));
	if (kept)
		assert_memory_equal(gin, want, kept * sizeof(*in));
	/* Nothing past the kept inputs is written. */
	unsigned char mark[sizeof(ms_ev_input)];
	memset(mark, 0xa5, sizeof(mark));
	assert_memory_equal(&gin[kept], mark, sizeof(mark));
	ms_ev_merge exp = *e;
	memcpy(&exp, e, sizeof(exp)); /* the padding too */
	exp.inputs = gin;
	assert_memory_equal(&got, &exp, sizeof(got));
	/* Without an inputs buffer: no pointer. */
	ms__recent_get(rg, i, &got, NULL);
	exp.inputs = NULL;
	assert_memory_equal(&got, &exp, sizeof(got));
	assert_int_equal(ms__recent_seq(rg, i), e->seq);
}

/* The ring holds, oldest first, events ev[held[0]], ev[held[1]], ... */
static void
check_ring(const ms__recent *rg, const ms_ev_merge *ev, const ms_ev_input *in,
           const size_t *held, size_t nheld)
{
	assert_int_equal(rg->n, nheld);
	for (size_t i = 0; i < nheld; i++)
		check_record(rg, i, &ev[held[i]],
		             in + held[i] * MS_REPLAY_RECENT_INPUTS);
}

static void
test_recent_events(void **state)
{
	(void)state;
	enum { N = 1400 };
	ms_ev_merge *ev = malloc(N * sizeof(*ev));
	ms_ev_input *in =
	        malloc((size_t)N * MS_REPLAY_RECENT_INPUTS * sizeof(*in));
	size_t *held = malloc(N * sizeof(*held));
	assert_non_null(ev);
	assert_non_null(in);
	assert_non_null(held);
	uint64_t x = 0x9e3779b97f4a7c15ull;
	for (size_t e = 0; e < N; e++) {
		ms_ev_merge *m = &ev[e];
		ms_ev_input *mi = in + e * MS_REPLAY_RECENT_INPUTS;
		/* Random bytes everywhere (padding included); every fifth
		 * event a real one's shape: mostly zeros, a link or three,
		 * an error text only when the merge failed. */
		if (e % 5) {
			fill_runs(&x, (unsigned char *)m, sizeof(*m));
		} else {
			memset(m, 0, sizeof(*m));
			m->nlinks = 1 + (uint32_t)(e % 3);
			for (uint32_t l = 0; l < m->nlinks; l++) {
				snprintf(m->links[l].name,
				         sizeof(m->links[l].name), "link%u", l);
				m->links[l].calls = rng_next(&x) % 9;
				m->links[l].hist[l] = rng_next(&x);
			}
			if (e % 10 == 5) {
				m->err = MS_ERR_IO;
				memset(m->error, 'e', sizeof(m->error) - 1);
			}
			m->rows_in = rng_next(&x);
		}
		m->seq = e + 1;
		/* 0 to 40 inputs (more than kept), some events without any
		 * array at all. */
		m->ninputs = (size_t)(rng_next(&x) % 41);
		m->inputs = e % 7 == 3 ? NULL : mi;
		fill_runs(&x, (unsigned char *)mi,
		          MS_REPLAY_RECENT_INPUTS * sizeof(*mi));
	}
	ms__recent rg;
	assert_int_equal(ms__recent_init(&rg), 0);
	size_t nheld = 0, next = 0;
	/* Push k more events, the oldest leaving past MS_REPLAY_RECENT. */
#define PUSH(k)                                                                \
	for (size_t j_ = 0; j_ < (k); j_++, next++) {                          \
		ms__recent_push(&rg, &ev[next]);                               \
		if (nheld == MS_REPLAY_RECENT)                                 \
			memmove(held, held + 1, --nheld * sizeof(*held));      \
		held[nheld++] = next;                                          \
	}
	/* Drop the k newest, as a seek back does. */
#define DROP(k)                                                                \
	for (size_t j_ = 0; j_ < (k); j_++) {                                  \
		ms__recent_drop_newest(&rg);                                   \
		nheld--;                                                       \
	}
	check_ring(&rg, ev, in, held, nheld);
	PUSH(1);
	check_ring(&rg, ev, in, held, nheld);
	DROP(1);
	check_ring(&rg, ev, in, held, nheld);
	PUSH(300);
	check_ring(&rg, ev, in, held, nheld);
	DROP(37);
	check_ring(&rg, ev, in, held, nheld);
	/* Past the ring's size: the oldest leave. */
	PUSH(400);
	check_ring(&rg, ev, in, held, nheld);
	assert_int_equal(nheld, MS_REPLAY_RECENT);
	/* A seek back within a wrapped ring, then on again. */
	DROP(200);
	check_ring(&rg, ev, in, held, nheld);
	PUSH(350);
	check_ring(&rg, ev, in, held, nheld);
	/* Down to nothing and up again. */
	DROP(MS_REPLAY_RECENT);
	check_ring(&rg, ev, in, held, nheld);
	PUSH(N - next);
	check_ring(&rg, ev, in, held, nheld);
#undef PUSH
#undef DROP
	/* Released, the ring takes no more. */
	ms__recent_release(&rg);
	ms__recent_push(&rg, &ev[0]);
	assert_int_equal(rg.n, 0);
	ms__recent_release(&rg);
	free(ev);
	free(in);
	free(held);
}

/* Pages of the n bytes at p in memory. */
static size_t
resident_pages(const void *p, size_t n)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t np = (n + page - 1) / page;
	unsigned char *vec = malloc(np);
	assert_non_null(vec);
	assert_int_equal(mincore((void *)(uintptr_t)p, n, vec), 0);
	size_t k = 0;
	for (size_t i = 0; i < np; i++)
		k += vec[i] & 1;
	free(vec);
	return k;
}

/* A merge of a one-link chain, as the replay records it. */
static void
one_link_merge(ms_ev_merge *m, ms_ev_input *in, uint64_t seq, uint64_t *x)
{
	memset(m, 0, sizeof(*m));
	m->seq = seq;
	snprintf(m->lane, sizeof(m->lane), "fast");
	m->logical_ns = (int64_t)(rng_next(x) >> 2);
	m->frontier_ns = m->logical_ns - 1000;
	m->epoch_before = seq * 3;
	m->m = 2.5;
	m->max_fan_out = 15;
	m->ninputs = 8 + seq % 8;
	m->inputs = in;
	for (size_t i = 0; i < m->ninputs; i++) {
		in[i] = (ms_ev_input){
			.id = rng_next(x),
			.bytes = rng_next(x) >> 40,
			.uncompressed_bytes = rng_next(x) >> 38,
			.rows = rng_next(x) >> 48,
			.blocks = rng_next(x) >> 56,
			.depth = (uint32_t)(rng_next(x) % 5),
			.min_ts = (int64_t)(rng_next(x) >> 2),
			.max_ts = (int64_t)(rng_next(x) >> 2),
			.mature = rng_next(x) % 2,
		};
		m->input_bytes += in[i].bytes;
		m->input_rows += in[i].rows;
	}
	m->wall_dispatch_ns = (int64_t)(rng_next(x) >> 20);
	m->queue_ns = 12345;
	m->sampling.klass = MS_SAMPLING_EXECUTED;
	m->sampling.traces_evaluated = rng_next(x) >> 50;
	m->sampling.traces_kept = m->sampling.traces_evaluated / 2;
	m->sampling.rows_dropped = rng_next(x) >> 48;
	m->sampling.batches = m->sampling.nbatch_recs = 1;
	m->sampling.peak_staged_bytes = rng_next(x) >> 36;
	m->nlinks = 1;
	snprintf(m->links[0].name, sizeof(m->links[0].name), "skywalking");
	m->links[0].calls = 3;
	m->links[0].traces = m->sampling.traces_evaluated;
	m->links[0].kept = m->sampling.traces_kept;
	m->links[0].total_ns = 987654;
	m->links[0].max_ns = 400000;
	m->links[0].hist[2] = 2;
	m->links[0].hist[4] = 1;
	m->output.id = rng_next(x);
	m->output.rows = m->input_rows;
	m->epoch_after = m->epoch_before + 1;
	m->rows_in = m->rows_out = m->input_rows;
	m->wall_ns = 5000000;
	m->cpu_ns = m->process_cpu_ns = 4000000;
	m->alloc_bytes = rng_next(x) >> 36;
	m->alloc_count = 777;
	m->rss_peak = 60u << 20;
	m->bytes_read = m->bytes_written = m->input_bytes;
	m->inv_parts = 40;
	m->inv_bytes = rng_next(x) >> 30;
}

static void
test_recent_bytes(void **state)
{
	(void)state;
	/* A whole event and room for its 32 inputs, as the ring kept each
	 * merge before: 7,400 bytes. */
	const size_t whole = sizeof(ms_ev_merge) +
	                     MS_REPLAY_RECENT_INPUTS * sizeof(ms_ev_input);
	const size_t page = (size_t)sysconf(_SC_PAGESIZE);
	ms__recent rg;
	assert_int_equal(ms__recent_init(&rg), 0);
	const size_t block = MS__RECENT_BLOCK;
	/* Nothing is touched before a merge comes. */
	size_t live = 1;
	assert_int_equal(ms__recent_bytes(&rg, &live), 0);
	assert_int_equal(live, 0);
	assert_int_equal(resident_pages(rg.block, block), 0);
	/* N merges of a one-link chain take at most 2 KiB each, against
	 * 7 KiB and more before, in the pages they wrote only. */
	uint64_t x = 88172645463325252ull;
	ms_ev_merge m;
	ms_ev_input in[MS_REPLAY_RECENT_INPUTS];
	enum { N = 300 };
	for (uint64_t s = 1; s <= N; s++) {
		one_link_merge(&m, in, s, &x);
		ms__recent_push(&rg, &m);
	}
	size_t touched = ms__recent_bytes(&rg, &live);
	assert_true(live > 0 && live <= touched);
	assert_true(touched <= (size_t)N * 2048);
	assert_true(touched * 3 < (size_t)N * whole);
	assert_true(resident_pages(rg.block, block) <=
	            (touched + page - 1) / page);
	/* Long past the ring's size, with records of every size (up to a
	 * whole event of random bytes and 32 inputs, the sizes shifting so
	 * the chunks' spare ends move): what was ever written stays within
	 * two chunks of the most bytes held at once, and a third over for
	 * the chunks' ends a record did not fit in. */
	size_t peak = live;
	for (uint64_t s = N + 1; s <= 6000; s++) {
		one_link_merge(&m, in, s, &x);
		if ((s / 700) % 2 && s % 3 == 0) {
			fill_runs(&x, (unsigned char *)&m, sizeof(m));
			m.inputs = in;
			m.ninputs = MS_REPLAY_RECENT_INPUTS;
		}
		ms__recent_push(&rg, &m);
		if (s % 997 == 0)
			for (int d = 0; d < 100; d++)
				ms__recent_drop_newest(&rg);
		ms__recent_bytes(&rg, &live);
		if (live > peak)
			peak = live;
	}
	touched = ms__recent_bytes(&rg, &live);
	assert_true(touched <= peak + peak / 3 + 2 * MS__RECENT_CHUNK);
	assert_true(resident_pages(rg.block, block) <=
	            (touched + page - 1) / page);
	ms__recent_release(&rg);
}

/* A drops-only table of n traces (IDs make_id(3i)), each with 1..3
 * blocks, in key order, as build_table leaves it. */
static void
fake_table(ms__oracle *o, size_t n)
{
	memset(o, 0, sizeof(*o));
	o->ent = calloc(n ? n : 1, sizeof(*o->ent));
	o->frags = calloc(3 * n + 1, sizeof(*o->frags));
	assert_non_null(o->ent);
	assert_non_null(o->frags);
	uint8_t id[MS_TRACE_ID_MAX];
	size_t nf = 0;
	for (size_t i = 0; i < n; i++) {
		size_t len = make_id(3 * i, id);
		XXH128_hash_t h = XXH3_128bits(id, len);
		ms__oracle_ent *e = &o->ent[i];
		e->key_lo = h.low64;
		e->key_hi = h.high64;
		e->rows = (uint32_t)(i * 7 + 1);
		e->frag0 = (uint32_t)nf;
		e->nfrags = (uint32_t)(1 + i % 3);
		e->keep = i % 5 == 0;
		for (uint32_t k = 0; k < e->nfrags; k++, nf++)
			o->frags[nf] =
			        (ms__oracle_frag){ h.low64 ^ k, h.high64 + nf };
	}
	o->nent = n;
	o->nfrags = nf;
	o->n = 3 * n;
	o->shed = true;
	o->ok = true;
	/* Key order, as ms__oracle_find needs: the blocks stay put. */
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0; j--) {
			ms__oracle_ent *a = &o->ent[j - 1], *b = &o->ent[j];
			if (a->key_hi < b->key_hi ||
			    (a->key_hi == b->key_hi && a->key_lo < b->key_lo))
				break;
			ms__oracle_ent t = *a;
			*a = *b;
			*b = t;
		}
}

/* The table o answers as `want` does, for every ID in and out of it. */
static void
assert_same_answers(const ms__oracle *o, const ms__oracle *want, size_t n)
{
	uint8_t id[MS_TRACE_ID_MAX];
	assert_int_equal(o->nent, want->nent);
	assert_int_equal(o->nfrags, want->nfrags);
	assert_memory_equal(o->frags, want->frags,
	                    want->nfrags * sizeof(*want->frags));
	for (size_t i = 0; i < 3 * n; i++) {
		size_t len = make_id(i, id);
		const ms__oracle_ent *a = ms__oracle_find(o, id, (uint32_t)len);
		const ms__oracle_ent *b =
		        ms__oracle_find(want, id, (uint32_t)len);
		assert_int_equal(a != NULL, b != NULL);
		assert_int_equal(a != NULL, i % 3 == 0);
		if (!a)
			continue;
		assert_int_equal(a->key_lo, b->key_lo);
		assert_int_equal(a->key_hi, b->key_hi);
		assert_int_equal(a->rows, b->rows);
		assert_int_equal(a->frag0, b->frag0);
		assert_int_equal(a->nfrags, b->nfrags);
		assert_int_equal(a->keep, b->keep);
	}
}

static void
flip_byte(const char *path, off_t at)
{
	int fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	uint8_t b;
	assert_int_equal(pread(fd, &b, 1, at), 1);
	b ^= 0x40;
	assert_int_equal(pwrite(fd, &b, 1, at), 1);
	close(fd);
}

static void
test_oracle_spill(void **state)
{
	(void)state;
	char dir[PATH_MAX], path[PATH_MAX + 32];
	assert_non_null(ms_test_mkdtemp(dir, sizeof(dir), "ms-test-spill"));
	snprintf(path, sizeof(path), "%s/%s", dir, MS__ORACLE_SPILL);
	/* Empty, one entry, and past one write buffer of entries. */
	static const size_t sizes[] = { 0, 1, 5000 };
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		size_t n = sizes[s];
		ms__oracle o, want;
		fake_table(&o, n);
		fake_table(&want, n);
		assert_true(ms__oracle_resident_bytes(&o) > 0 || n == 0);
		assert_int_equal(ms__oracle_spill(&o, path), 0);
		/* Out of memory until read back; the file holds it. */
		assert_int_equal(ms__oracle_resident_bytes(&o), 0);
		assert_null(o.ent);
		assert_null(o.frags);
		assert_string_equal(o.spill, path);
		assert_true(ms_fs_is_file(path));
		assert_int_equal(ms__oracle_spill(&o, path), MS_ERR_STATE);
		assert_int_equal(ms__oracle_unspill(&o), 0);
		assert_false(ms_fs_is_file(path));
		assert_string_equal(o.spill, "");
		assert_true(o.ok);
		assert_int_equal(ms__oracle_resident_bytes(&o),
		                 ms__oracle_resident_bytes(&want));
		assert_same_answers(&o, &want, n);
		/* Not spilled: reading back is a no-op. */
		assert_int_equal(ms__oracle_unspill(&o), 0);
		assert_same_answers(&o, &want, n);
		ms__oracle_release(&o);
		ms__oracle_release(&want);
	}
	/* A damaged file: refused, naming the file, never a table. One
	 * byte flipped in the header, an entry, a block and the checksum;
	 * the file cut short; the file gone. */
	struct stat st;
	ms__oracle o;
	fake_table(&o, 3000);
	assert_int_equal(ms__oracle_spill(&o, path), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, 24 + 3000 * 32 + o.nfrags * 16 + 8);
	ms__oracle_release(&o);
	const off_t at[] = {
		3, 12, 24 + 77, 24 + 3000 * 32 + 5, st.st_size - 2, -1, -2
	};
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		fake_table(&o, 3000);
		assert_int_equal(ms__oracle_spill(&o, path), 0);
		if (at[i] >= 0)
			flip_byte(path, at[i]);
		else if (at[i] == -1)
			assert_int_equal(truncate(path, st.st_size - 16), 0);
		else
			assert_int_equal(unlink(path), 0);
		int rc = ms__oracle_unspill(&o);
		assert_true(rc < 0);
		assert_false(o.ok);
		assert_int_equal(o.nent, 0);
		assert_null(o.ent);
		assert_int_equal(ms__oracle_resident_bytes(&o), 0);
		assert_non_null(strstr(o.why, path));
		fprintf(stderr, "refused: %s\n", o.why);
		assert_false(ms_fs_is_file(path));
		assert_string_equal(o.spill, "");
		ms__oracle_release(&o);
	}
	/* A table never read back: its file goes with it. */
	fake_table(&o, 10);
	assert_int_equal(ms__oracle_spill(&o, path), 0);
	ms__oracle_release(&o);
	assert_false(ms_fs_is_file(path));
	/* Where it cannot be written: no file, the table still in memory. */
	char bad[PATH_MAX + 64];
	snprintf(bad, sizeof(bad), "%s/no-such-dir/%s", dir, MS__ORACLE_SPILL);
	fake_table(&o, 10);
	assert_true(ms__oracle_spill(&o, bad) < 0);
	assert_string_equal(o.spill, "");
	assert_true(ms__oracle_resident_bytes(&o) > 0);
	ms__oracle_release(&o);
	assert_int_equal(rmdir(dir), 0);
}

/* Descriptors of this process open on a file in dir that has no name
 * (a table ms__oracle_spill_unlinked wrote). */
static unsigned
unlinked_fds_in(const char *dir)
{
	unsigned n = 0;
	char want[PATH_MAX + 2];
	snprintf(want, sizeof(want), "%s/", dir);
	for (int fd = 0; fd < 1024; fd++) {
		char link[64], target[PATH_MAX + 32];
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		ssize_t k = readlink(link, target, sizeof(target) - 1);
		if (k <= 0)
			continue;
		target[k] = '\0';
		n += strncmp(target, want, strlen(want)) == 0 &&
		     strstr(target, " (deleted)") != NULL;
	}
	return n;
}

/* A table spilled to a file without a name in a directory on a disk:
 * read back as it was; a damaged one refused naming the directory; one
 * never read back closed with the oracle. No file is ever seen in the
 * directory, and no descriptor is left open. Refused on a tmpfs (the
 * table would stay in RAM under another name) and where the directory
 * is not: the table stays in memory. */
static void
test_oracle_spill_unlinked(void **state)
{
	(void)state;
	const char *base = getenv("TMPDIR") && *getenv("TMPDIR")
	                           ? getenv("TMPDIR")
	                           : "/tmp";
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s/ms-test-spill-XXXXXX", base);
	assert_non_null(mkdtemp(dir));
	if (ms_fs_in_memory(dir)) {
		assert_int_equal(rmdir(dir), 0);
		skip();
	}
	for (size_t n = 0; n <= 5000; n += 2500) {
		ms__oracle o, want;
		fake_table(&o, n);
		fake_table(&want, n);
		assert_int_equal(ms__oracle_spill_unlinked(&o, dir), 0);
		assert_int_equal(ms__oracle_resident_bytes(&o), 0);
		assert_null(o.ent);
		assert_true(o.spill_unlinked);
		assert_non_null(strstr(o.spill, dir));
		assert_int_equal(unlinked_fds_in(dir), 1);
		assert_int_equal(rmdir(dir), 0); /* nothing in it */
		assert_int_equal(mkdir(dir, 0700), 0);
		assert_int_equal(ms__oracle_spill_unlinked(&o, dir),
		                 MS_ERR_STATE);
		assert_int_equal(ms__oracle_unspill(&o), 0);
		assert_false(o.spill_unlinked);
		assert_string_equal(o.spill, "");
		assert_int_equal(unlinked_fds_in(dir), 0);
		assert_same_answers(&o, &want, n);
		ms__oracle_release(&o);
		ms__oracle_release(&want);
	}
	/* Damaged while spilled: refused, naming where it was, closed. */
	ms__oracle o;
	fake_table(&o, 3000);
	assert_int_equal(ms__oracle_spill_unlinked(&o, dir), 0);
	uint8_t b = 0;
	assert_int_equal(pread(o.spill_fd, &b, 1, 24 + 77), 1);
	b ^= 0x40;
	assert_int_equal(pwrite(o.spill_fd, &b, 1, 24 + 77), 1);
	assert_true(ms__oracle_unspill(&o) < 0);
	assert_false(o.ok);
	assert_null(o.ent);
	assert_non_null(strstr(o.why, dir));
	fprintf(stderr, "refused: %s\n", o.why);
	assert_int_equal(unlinked_fds_in(dir), 0);
	ms__oracle_release(&o);
	/* Never read back (a run that failed or was stopped first). */
	fake_table(&o, 10);
	assert_int_equal(ms__oracle_spill_unlinked(&o, dir), 0);
	assert_int_equal(unlinked_fds_in(dir), 1);
	ms__oracle_release(&o);
	assert_int_equal(unlinked_fds_in(dir), 0);
	/* A directory that is not there, and one in memory. */
	char gone[PATH_MAX + 16], shm[PATH_MAX];
	snprintf(gone, sizeof(gone), "%s/gone", dir);
	fake_table(&o, 10);
	assert_true(ms__oracle_spill_unlinked(&o, gone) < 0);
	assert_string_equal(o.spill, "");
	assert_true(ms__oracle_resident_bytes(&o) > 0);
	snprintf(shm, sizeof(shm), "/dev/shm/ms-test-spill-XXXXXX");
	if (ms_test_shm() && mkdtemp(shm)) {
		assert_int_equal(ms__oracle_spill_unlinked(&o, shm),
		                 MS_ERR_INVAL);
		assert_string_equal(o.spill, "");
		assert_true(ms__oracle_resident_bytes(&o) > 0);
		assert_int_equal(unlinked_fds_in(shm), 0);
		assert_int_equal(rmdir(shm), 0);
	}
	ms__oracle_release(&o);
	assert_int_equal(rmdir(dir), 0);
}

/* Where the file system has no O_TMPFILE: the table's file is named
 * `oracle.table-PID-XXXXXX` (MS_REPLAY_ORACLE_TMP and this process's ID)
 * for the moment between its making and the removal of the name, which
 * is all `clean` needs to tell a killed run's from a live one's (it was
 * `oracle.table-XXXXXX`, whose owner could not be told). The table then
 * reads back as it was, with nothing left in the directory; a process
 * that ends in that moment leaves the name, empty. */
static void
test_oracle_spill_named(void **state)
{
	(void)state;
	const char *base = getenv("TMPDIR") && *getenv("TMPDIR")
	                           ? getenv("TMPDIR")
	                           : "/tmp";
	char dir[PATH_MAX];
	snprintf(dir, sizeof(dir), "%s/ms-test-named-XXXXXX", base);
	assert_non_null(mkdtemp(dir));
	if (ms_fs_in_memory(dir)) {
		assert_int_equal(rmdir(dir), 0);
		skip();
	}
	ms__oracle o, want;
	fake_table(&o, 2500);
	fake_table(&want, 2500);
	o.test_tmp = MS__ORACLE_TEST_NAMED;
	assert_int_equal(ms__oracle_spill_unlinked(&o, dir), 0);
	assert_int_equal(unlinked_fds_in(dir), 1);
	assert_int_equal(rmdir(dir), 0); /* nothing in it */
	assert_int_equal(mkdir(dir, 0700), 0);
	assert_int_equal(ms__oracle_unspill(&o), 0);
	assert_same_answers(&o, &want, 2500);
	ms__oracle_release(&o);
	ms__oracle_release(&want);
	/* Ended between: the name is left, empty, the table kept. */
	fake_table(&o, 10);
	o.test_tmp = MS__ORACLE_TEST_NAME_LEFT;
	assert_true(ms__oracle_spill_unlinked(&o, dir) < 0);
	assert_true(ms__oracle_resident_bytes(&o) > 0);
	ms__oracle_release(&o);
	DIR *d = opendir(dir);
	assert_non_null(d);
	struct dirent *de;
	char left[NAME_MAX + 1] = "", want_pre[64];
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			snprintf(left, sizeof(left), "%s", de->d_name);
	closedir(d);
	snprintf(want_pre, sizeof(want_pre), "oracle.table-%ld-",
	         (long)getpid());
	fprintf(stderr, "left: %s\n", left);
	assert_int_equal(strncmp(left, want_pre, strlen(want_pre)), 0);
	assert_int_equal(strlen(left), strlen(want_pre) + 6);
	char path[PATH_MAX + NAME_MAX + 2];
	snprintf(path, sizeof(path), "%s/%s", dir, left);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, 0);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(dir), 0);
}

/* Out of memory reading a spilled table back, at each allocation in
 * turn: refused naming the file, what the memory was for and how many
 * bytes (it said "FILE: out of memory"), the file removed. */
static void
test_oracle_unspill_out_of_memory(void **state)
{
	(void)state;
	char dir[PATH_MAX], path[PATH_MAX + 32];
	assert_non_null(ms_test_mkdtemp(dir, sizeof(dir), "ms-test-spill"));
	snprintf(path, sizeof(path), "%s/%s", dir, MS__ORACLE_SPILL);
	unsigned failed = 0;
	for (long n = 0;; n++) {
		ms__oracle o;
		fake_table(&o, 3000);
		assert_int_equal(ms__oracle_spill(&o, path), 0);
		tl_alloc_fail_nth(n);
		int rc = ms__oracle_unspill(&o);
		bool fired = tl_alloc_disarm();
		if (!fired) {
			assert_int_equal(rc, 0);
			ms__oracle_release(&o);
			break;
		}
		fprintf(stderr, "allocation %ld: %s\n", n + 1, o.why);
		assert_int_equal(rc, MS_ERR_NOMEM);
		assert_non_null(strstr(o.why, path));
		assert_non_null(strstr(o.why, ": out of memory for "));
		assert_non_null(strstr(o.why, " bytes)"));
		assert_false(ms_fs_is_file(path));
		ms__oracle_release(&o);
		failed++;
	}
	assert_true(failed >= 3);
	assert_int_equal(rmdir(dir), 0);
}

/* The ledgers of block number f of test_oracle_dropped_file's table. */
static void
frag_ledgers(size_t f, ms_ledger_set *led)
{
	ms_ledger_set_init(led);
	for (int j = 0; j < MS_KIND_COUNT; j++)
		led->kind[j] = (ms_ledger){
			.rows = f % 5 + 1,
			.sum_lo = XXH3_64bits_withSeed(&f, sizeof(f),
			                               (uint64_t)j),
			.sum_hi = f,
		};
}

/* The trace of table entry j (fake_table: rows = 7i + 1, ID 3i). */
static size_t
ent_id(const ms__oracle_ent *e, uint8_t id[MS_TRACE_ID_MAX])
{
	return make_id(3 * ((e->rows - 1) / 7), id);
}

static void
drop_ent(ms__dropped *d, const ms__oracle_ent *e)
{
	uint8_t id[MS_TRACE_ID_MAX];
	size_t len = ent_id(e, id);
	assert_int_equal(
	        ms__dropped_add(d, id, (uint32_t)len, e->rows, MS__RP_PRIMARY),
	        0);
}

/* The ledger of a run's dropped traces (ms__oracle_dropped) from the
 * fixture's block ledger file: the blocks of every dropped trace asked
 * at once, sorted by key, so that each group of the file is read once
 * and neighbouring groups together (far fewer reads than blocks, where
 * asking block by block reads once a block); the sum and each trace's
 * rows as the table says, none for a trace outside the fixture. A
 * dropped trace with a block the file lacks is refused, naming the first
 * such trace in the drop set's order (whatever the keys' order), with
 * the rows of the traces before it found and none from it on. */
static void
test_oracle_dropped_file(void **state)
{
	(void)state;
	enum { NT = 4000 };
	ms__oracle o;
	fake_table(&o, NT);
	o.shed = false; /* the whole table: nothing to read again */
	/* Two traces (entries) whose first block the file lacks. */
	const size_t lack[2] = { 17, 3001 };
	static fx_blocks fb;
	memset(&fb, 0, sizeof(fb));
	for (size_t j = 0; j < o.nent; j++) {
		const ms__oracle_ent *t = &o.ent[j];
		for (uint32_t f = 0; f < t->nfrags; f++) {
			if (!f && (j == lack[0] || j == lack[1]))
				continue;
			ms_ledger_set led;
			frag_ledgers(t->frag0 + f, &led);
			const ms__oracle_frag *b = &o.frags[t->frag0 + f];
			assert_int_equal(
			        ms__fx_blocks_add(&fb, b->lo, b->hi, &led), 0);
		}
	}
	char dir[PATH_MAX];
	assert_non_null(ms_test_mkdtemp(dir, sizeof(dir), "ms-test-dropped"));
	ms__blkcache *c = cache_over(&fb, dir);

	/* Two traces of three but the two lacking a block, and a trace
	 * outside the fixture among them. */
	ms__dropped d;
	memset(&d, 0, sizeof(d));
	ms_ledger_set want;
	ms_ledger_set_init(&want);
	size_t blocks = 0;
	uint8_t id[MS_TRACE_ID_MAX];
	for (size_t j = 0; j < o.nent; j++) {
		const ms__oracle_ent *t = &o.ent[j];
		if (j % 3 == 2 || j == lack[0] || j == lack[1])
			continue;
		if (j == 1000) {
			size_t len = make_id(1, id);
			assert_int_equal(ms__dropped_add(&d, id, (uint32_t)len,
			                                 5, MS__RP_PRIMARY),
			                 0);
		}
		drop_ent(&d, t);
		for (uint32_t f = 0; f < t->nfrags; f++, blocks++) {
			ms_ledger_set led;
			frag_ledgers(t->frag0 + f, &led);
			ms_ledger_set_add(&want, &led);
		}
	}
	ms__blkcache_figs at, end;
	ms__blkcache_figures(c, &at);
	assert_int_equal(ms__oracle_dropped(&o, &d, c), 0);
	ms__blkcache_figures(c, &end);
	assert_true(ms_ledger_set_equal(&o.dropped_led, &want));
	for (size_t i = 0; i < d.n; i++) {
		const ms__oracle_ent *t =
		        ms__oracle_find(&o, d.ent[i].tid, d.ent[i].len);
		assert_int_equal(o.drop_found[i], t ? t->rows : 0);
	}
	assert_int_equal(end.file_lookups - at.file_lookups, blocks);
	assert_int_equal(end.file_refused, 0);
	fprintf(stderr, "dropped: %zu traces, %zu blocks, %llu reads\n", d.n,
	        blocks, (unsigned long long)(end.file_reads - at.file_reads));
	assert_true((end.file_reads - at.file_reads) * 10 < blocks);
	ms__dropped_release(&d);

	/* The two traces lacking a block, the one whose block comes later
	 * in key order first. */
	const ms__oracle_frag *b0 = &o.frags[o.ent[lack[0]].frag0];
	const ms__oracle_frag *b1 = &o.frags[o.ent[lack[1]].frag0];
	bool later0 = b0->hi != b1->hi ? b0->hi > b1->hi : b0->lo > b1->lo;
	const ms__oracle_ent *first = &o.ent[lack[later0 ? 0 : 1]];
	const ms__oracle_ent *second = &o.ent[lack[later0 ? 1 : 0]];
	memset(&d, 0, sizeof(d));
	drop_ent(&d, &o.ent[0]);
	drop_ent(&d, &o.ent[1]);
	drop_ent(&d, first);
	drop_ent(&d, &o.ent[3]);
	drop_ent(&d, second);
	drop_ent(&d, &o.ent[4]);
	assert_int_equal(ms__oracle_dropped(&o, &d, c), MS_ERR_STATE);
	size_t len = ent_id(first, id);
	char want_why[160];
	snprintf(want_why, sizeof(want_why), "trace %.*s: a block of it",
	         (int)len, (const char *)id);
	fprintf(stderr, "refused: %s\n", o.why);
	assert_non_null(strstr(o.why, want_why));
	assert_int_equal(o.drop_found[0], o.ent[0].rows);
	assert_int_equal(o.drop_found[1], o.ent[1].rows);
	for (size_t i = 2; i < d.n; i++)
		assert_int_equal(o.drop_found[i], 0);
	ms__dropped_release(&d);

	ms__blkcache_free(c);
	ms__fx_blocks_free(&fb);
	ms__oracle_release(&o);
	blocks_file_remove(dir);
	assert_int_equal(rmdir(dir), 0);
}

/* A merge's link row keeps the cause of a process host's failure, not the
 * "plugin host for PATH: " before it (the row names the plugin; its
 * fail_why of 96 bytes was filled by a long path and lost the call). */
static void
test_link_fail_cause(void **st)
{
	(void)st;
	const char *m = "plugin host for /a/very/long/path/to/plugins/"
	                "tp_statshang.so: no answer from its plugin's stats() "
	                "within 5.000 s; plugin host killed";
	assert_string_equal(ms__link_fail_cause(m),
	                    "no answer from its plugin's stats() within "
	                    "5.000 s; plugin host killed");
	assert_string_equal(ms__link_fail_cause("Decide timed out"),
	                    "Decide timed out");
	assert_string_equal(ms__link_fail_cause("plugin host for x: "),
	                    "plugin host for x: ");
	assert_string_equal(ms__link_fail_cause(""), "");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dropset),
		cmocka_unit_test(test_idpool),
		cmocka_unit_test(test_blkcache),
		cmocka_unit_test(test_blkcache_file),
		cmocka_unit_test(test_big_sort),
		cmocka_unit_test(test_big_reserve),
		cmocka_unit_test(test_recent_events),
		cmocka_unit_test(test_recent_bytes),
		cmocka_unit_test(test_oracle_spill),
		cmocka_unit_test(test_oracle_spill_unlinked),
		cmocka_unit_test(test_oracle_spill_named),
		cmocka_unit_test(test_oracle_unspill_out_of_memory),
		cmocka_unit_test(test_oracle_dropped_file),
		cmocka_unit_test(test_link_fail_cause),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
