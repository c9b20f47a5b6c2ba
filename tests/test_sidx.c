/*
 * test_sidx.c - secondary index parts: row construction and order, round
 * trips of both kinds with their tags (dictionary and plain columns),
 * empty parts, merges with and without pruning, ledgers over the tags,
 * corruption, and allocation failure.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "fuzz/fuzz_common.h"
#include "ms_ledger.h"
#include "ms_sidx.h"
#include "part_testlib.h"
#include "mem_testlib.h"

#include <sys/stat.h>
#include <xxhash.h>
#define ZSTD_STATIC_LINKING_ONLY /* context size estimates */
#include <zstd.h>

static char root[256];

static int
setup(void **state)
{
	(void)state;
	tl_tmpdir(root, sizeof(root), "sidx");
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	tl_rmrf(root);
	return 0;
}

static int
scmp(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "");
}

/* The whole order: (series, key, value), then the tags. */
static int
cmp_rows(const void *pa, const void *pb)
{
	const ms_sidx_row *a = pa, *b = pb;
	int c = ms_sidx_row_cmp(a, b);
	if (c)
		return c;
	if (a->other != b->other)
		return a->other < b->other ? -1 : 1;
	if ((c = scmp(a->instance, b->instance)) != 0 ||
	    (c = scmp(a->endpoint, b->endpoint)) != 0)
		return c;
	uint32_t na = a->tags ? a->ntags : 0, nb = b->tags ? b->ntags : 0;
	if (na != nb)
		return na < nb ? -1 : 1;
	for (uint32_t i = 0; i < na; i++)
		if ((c = scmp(a->tags[i], b->tags[i])) != 0)
			return c;
	return 0;
}

/* got equals want, tags included. */
static void
assert_row_eq(const ms_sidx_row *got, const ms_sidx_row *want, size_t i)
{
	if (cmp_rows(got, want) != 0)
		fail_msg("row %zu: series/key/value/tags differ (other %lld "
		         "vs %lld, instance '%s' vs '%s', endpoint '%s' vs "
		         "'%s', %u vs %u tags)",
		         i, (long long)got->other, (long long)want->other,
		         got->instance ? got->instance : "",
		         want->instance ? want->instance : "",
		         got->endpoint ? got->endpoint : "",
		         want->endpoint ? want->endpoint : "", got->ntags,
		         want->ntags);
	assert_non_null(got->instance);
	assert_non_null(got->endpoint);
}

/* The expected index rows of t, sorted. */
static ms_sidx_row *
expected(enum ms_part_kind kind, const tl_rows *t)
{
	ms_sidx_row *v = calloc(t->n + 1, sizeof(*v));
	for (size_t i = 0; i < t->n; i++)
		ms_sidx_row_of(kind, &t->rows[i], &v[i]);
	qsort(v, t->n, sizeof(*v), cmp_rows);
	return v;
}

static void
open_part(const char *dir, ms_part **p)
{
	ms_errbuf eb = { { 0 } };
	if (ms_part_open(p, dir, NULL, &eb))
		fail_msg("open %s: %s", dir, eb.msg);
}

static void
test_row_of(void **state)
{
	(void)state;
	uint8_t tid[3] = { 7, 8, 9 };
	const char *tags[] = { "http.method=GET", "status=200" };
	ms_row r = { .trace_id = tid,
		     .trace_id_len = 3,
		     .service = "cart",
		     .instance = "cart-1@10.0.0.1",
		     .endpoint = "/cart/add",
		     .tags = tags,
		     .ntags = 2,
		     .start_ns = -5,
		     .latency_ms = 42 };
	ms_sidx_row a, b;
	ms_sidx_row_of(MS_KIND_LATENCY, &r, &a);
	ms_sidx_row_of(MS_KIND_START_TIME, &r, &b);
	/* series: the service's bytes, then the error flag as one byte. */
	assert_int_equal(a.series, XXH3_64bits("cart\0", 5));
	assert_int_equal(a.series, ms_sidx_series("cart", false));
	assert_int_equal(ms_sidx_series("cart", true),
	                 XXH3_64bits("cart\1", 5));
	assert_int_equal(ms_sidx_series(NULL, false), XXH3_64bits("\0", 1));
	/* Long service names too, on either side of 256 bytes. */
	static char svc[601];
	for (size_t n = 254; n <= 600; n += n < 258 ? 1 : 171) {
		memset(svc, 's', n);
		svc[n] = 1;
		uint64_t want = XXH3_64bits(svc, n + 1);
		svc[n] = 0;
		assert_int_equal(ms_sidx_series(svc, true), want);
	}
	assert_int_equal(b.series, a.series);
	r.is_error = true;
	ms_sidx_row e;
	ms_sidx_row_of(MS_KIND_LATENCY, &r, &e);
	assert_int_equal(e.series, ms_sidx_series("cart", true));
	r.is_error = false;
	assert_int_equal(a.key, 42);
	assert_int_equal(b.key, -5);
	/* Tags: each index carries the other's key. */
	assert_int_equal(a.other, -5);
	assert_int_equal(b.other, 42);
	assert_string_equal(a.instance, "cart-1@10.0.0.1");
	assert_string_equal(b.endpoint, "/cart/add");
	assert_ptr_equal(a.tags, tags);
	assert_int_equal(a.ntags, 2);
	/* The tags take no part in the order. */
	ms_sidx_row d = a;
	d.instance = "zzz";
	d.other = 9;
	d.ntags = 0;
	assert_int_equal(ms_sidx_row_cmp(&a, &d), 0);
	uint8_t v[65];
	assert_int_equal(ms_sidx_value(&a, v), 4);
	assert_int_equal(v[0], 1);
	assert_memory_equal(v + 1, tid, 3);
	/* Order: series, then key (signed), then value. */
	ms_sidx_row c = b;
	c.key = 1;
	assert_true(ms_sidx_row_cmp(&b, &c) < 0);
	c = b;
	c.tid[2] = 10;
	assert_true(ms_sidx_row_cmp(&b, &c) < 0);
	c = b;
	c.tid_len = 2;
	assert_true(ms_sidx_row_cmp(&c, &b) < 0);
	c = b;
	c.series = b.series + 1;
	c.key = INT64_MIN;
	assert_true(ms_sidx_row_cmp(&b, &c) < 0);
	assert_int_equal(ms_sidx_row_cmp(&b, &b), 0);
}

static void
round_trip(enum ms_part_kind kind, size_t traces, uint64_t seed)
{
	tl_rng r = { seed };
	tl_rows t = { 0 };
	tl_shape s = { .traces = traces,
		       .rows_per_trace = 6,
		       .body_max = 10,
		       .tags_max = 3,
		       .tag_len = 4 };
	tl_gen(&t, &r, &s);
	char dir[300];
	snprintf(dir, sizeof(dir), "%s/%s-%zu", root, ms_part_kind_name(kind),
	         traces);
	ms_part_meta m;
	ms_errbuf eb = { { 0 } };
	ms_part_writer_opts o = { .depth = 3 };
	if (ms_sidx_write_rows(kind, dir, 0x77, t.rows, t.n, &o, &m, &eb))
		fail_msg("write: %s", eb.msg);
	ms_sidx_row *want = expected(kind, &t);
	assert_int_equal(m.rows, t.n);
	assert_int_equal(m.depth, 3);
	assert_int_equal(m.traces, 0);
	if (t.n) {
		int64_t mn = want[0].key, mx = want[0].key;
		for (size_t i = 0; i < t.n; i++) {
			mn = want[i].key < mn ? want[i].key : mn;
			mx = want[i].key > mx ? want[i].key : mx;
		}
		assert_int_equal(m.min_ts, mn);
		assert_int_equal(m.max_ts, mx);
	}
	ms_part *p;
	open_part(dir, &p);
	assert_int_equal(ms_part_kind_of(p), kind);
	assert_memory_equal(ms_part_get_meta(p), &m, sizeof(m));
	ms_sidx_row *got;
	size_t n;
	if (ms_sidx_read_all(p, NULL, &got, &n, &eb))
		fail_msg("read: %s", eb.msg);
	assert_int_equal(n, t.n);
	for (size_t i = 0; i < n; i++)
		assert_row_eq(&got[i], &want[i], i);
	assert_int_equal(ms_part_verify(p, &eb), 0);
	ms_sidx_rows_free(NULL, got, n);
	ms_part_close(p);
	free(want);
	tl_free(&t);
}

static void
test_round_trip(void **state)
{
	(void)state;
	round_trip(MS_KIND_LATENCY, 0, 1);
	round_trip(MS_KIND_LATENCY, 1, 2);
	round_trip(MS_KIND_START_TIME, 1, 3);
	round_trip(MS_KIND_LATENCY, 3000, 4); /* several chunks */
	round_trip(MS_KIND_START_TIME, 3000, 5);
}

typedef struct drop_set {
	const ms_row *rows;
	size_t n;
} drop_set;

/* Keep traces whose first ID byte is even. */
static bool
keep_even(void *ctx, const uint8_t *tid, uint32_t len)
{
	(void)ctx;
	(void)len;
	return (tid[0] & 1) == 0;
}

/* Write t's rows as index part id in dir, open it into *p, and move the
 * rows into all (stealing their blobs, which keeps them alive). */
static void
write_input(enum ms_part_kind kind, const char *dir, uint64_t id, tl_rows *t,
            ms_part **p, tl_rows *all)
{
	ms_errbuf eb = { { 0 } };
	if (ms_sidx_write_rows(kind, dir, id, t->rows, t->n, NULL, NULL, &eb))
		fail_msg("write: %s", eb.msg);
	open_part(dir, p);
	for (size_t k = 0; k < t->n; k++)
		*tl_add(all) = t->rows[k];
	for (size_t k = 0; k < t->nblobs; k++)
		tl_keep(all, t->blobs[k]);
	free(t->blobs);
	free(t->rows);
}

static void
test_merge(void **state)
{
	(void)state;
	enum ms_part_kind kind = MS_KIND_START_TIME;
	tl_rows all = { 0 };
	ms_part *in[4];
	tl_rng r = { 99 };
	for (int i = 0; i < 4; i++) {
		tl_rows t = { 0 };
		tl_shape s = { .traces = 400 + 300 * (size_t)i,
			       .rows_per_trace = 5,
			       .tags_max = 2,
			       .tag_len = 3 };
		tl_gen(&t, &r, &s);
		char dir[300];
		snprintf(dir, sizeof(dir), "%s/in%d", root, i);
		write_input(kind, dir, (uint64_t)i, &t, &in[i], &all);
	}
	ms_sidx_row *want = expected(kind, &all);
	for (int pass = 0; pass < 2; pass++) {
		char dir[300];
		snprintf(dir, sizeof(dir), "%s/out%d", root, pass);
		ms_part_meta m;
		uint64_t pruned = 7;
		ms_errbuf eb = { { 0 } };
		ms_part_writer_opts o = { .depth = 2 };
		if (ms_sidx_merge(kind, (const ms_part *const *)in, 4,
		                  pass ? keep_even : NULL, NULL, dir, 9, &o, &m,
		                  &pruned, &eb))
			fail_msg("merge: %s", eb.msg);
		ms_part *p;
		open_part(dir, &p);
		ms_sidx_row *got;
		size_t n;
		assert_int_equal(ms_sidx_read_all(p, NULL, &got, &n, &eb), 0);
		/* In (series, key, value) order; the same rows as the
		 * inputs kept, tags included (ties in any order). */
		for (size_t i = 1; i < n; i++)
			assert_true(ms_sidx_row_cmp(&got[i - 1], &got[i]) <= 0);
		qsort(got, n, sizeof(*got), cmp_rows);
		size_t k = 0, dropped = 0;
		for (size_t i = 0; i < all.n; i++) {
			if (pass && !keep_even(NULL, want[i].tid, 1)) {
				dropped++;
				continue;
			}
			assert_true(k < n);
			assert_row_eq(&got[k], &want[i], i);
			k++;
		}
		assert_int_equal(k, n);
		assert_int_equal(pruned, dropped);
		assert_int_equal(m.rows, all.n - dropped);
		assert_int_equal(m.depth, 2);
		if (pass)
			assert_true(dropped > all.n / 4);
		ms_sidx_rows_free(NULL, got, n);
		ms_part_close(p);
	}
	/* A core part is refused as merge input. */
	free(want);
	for (int i = 0; i < 4; i++)
		ms_part_close(in[i]);
	tl_free(&all);
}

static void
write_subject(const char *dir)
{
	tl_rng r = { 123 };
	tl_rows t = { 0 };
	tl_shape s = { .traces = 2500, .rows_per_trace = 4 };
	tl_gen(&t, &r, &s);
	ms_errbuf eb;
	if (ms_sidx_write_rows(MS_KIND_LATENCY, dir, 0xe0, t.rows, t.n, NULL,
	                       NULL, &eb))
		fail_msg("%s", eb.msg);
	tl_free(&t);
}

static int
read_index(const char *dir, ms_errbuf *eb)
{
	ms_part *p;
	int rc = ms_part_open(&p, dir, NULL, eb);
	if (rc)
		return rc;
	ms_sidx_row *rows;
	size_t n;
	rc = ms_sidx_read_all(p, NULL, &rows, &n, eb);
	if (rc == 0)
		ms_sidx_rows_free(NULL, rows, n);
	ms_part_close(p);
	return rc;
}

static uint8_t *
slurp(const char *path, size_t *n)
{
	FILE *fp = fopen(path, "rb");
	assert_non_null(fp);
	fseek(fp, 0, SEEK_END);
	*n = (size_t)ftell(fp);
	fseek(fp, 0, SEEK_SET);
	uint8_t *b = malloc(*n + 1);
	assert_int_equal(fread(b, 1, *n, fp), *n);
	fclose(fp);
	return b;
}

static void
spill(const char *path, const uint8_t *b, size_t n)
{
	FILE *fp = fopen(path, "wb");
	assert_non_null(fp);
	assert_int_equal(fwrite(b, 1, n, fp), n);
	fclose(fp);
}

/* Files a and b hold the same bytes. */
static void
same_file(const char *a, const char *b)
{
	size_t na, nb;
	uint8_t *ba = slurp(a, &na), *bb = slurp(b, &nb);
	assert_int_equal(na, nb);
	assert_memory_equal(ba, bb, nb);
	free(ba);
	free(bb);
}

/* A merge copies its inputs' encoded tag values through: the merged part
 * is byte for byte the part written from all the rows at once (with the
 * same ID and depth), on both index kinds. */
static void
test_merge_bytes(void **state)
{
	(void)state;
	for (int kk = 0; kk < 2; kk++) {
		enum ms_part_kind kind =
		        kk ? MS_KIND_START_TIME : MS_KIND_LATENCY;
		tl_rows all = { 0 };
		ms_part *in[3];
		tl_rng r = { 7 + (uint64_t)kk };
		ms_part_writer_opts o = { .depth = 3 };
		ms_errbuf eb = { { 0 } };
		for (int i = 0; i < 3; i++) {
			tl_rows t = { 0 };
			/* Few tag values on input 0 (dictionaries), many on
			 * input 2 (plain columns). */
			tl_shape s = { .traces = 900,
				       .rows_per_trace = 4,
				       .tags_max = (size_t)i * 3,
				       .tag_len = 2 + (size_t)i * 6 };
			tl_gen(&t, &r, &s);
			char dir[300];
			snprintf(dir, sizeof(dir), "%s/b%d-in%d", root, kk, i);
			write_input(kind, dir, (uint64_t)i, &t, &in[i], &all);
		}
		char mdir[300], wdir[300];
		snprintf(mdir, sizeof(mdir), "%s/b%d-merged", root, kk);
		snprintf(wdir, sizeof(wdir), "%s/b%d-written", root, kk);
		if (ms_sidx_merge(kind, (const ms_part *const *)in, 3, NULL,
		                  NULL, mdir, 9, &o, NULL, NULL, &eb))
			fail_msg("merge: %s", eb.msg);
		if (ms_sidx_write_rows(kind, wdir, 9, all.rows, all.n, &o,
		                       NULL, &eb))
			fail_msg("write: %s", eb.msg);
		same_file(mdir, wdir);
		/* The same rows added one by one to a writer that knows no row
		 * count (its zstd context grows as zstd sizes it, where the two
		 * above take one workspace for any input): the same bytes. */
		ms_part *wp;
		ms_sidx_row *rows;
		size_t nr;
		assert_int_equal(ms_part_open(&wp, wdir, NULL, &eb), 0);
		assert_int_equal(ms_sidx_read_all(wp, NULL, &rows, &nr, &eb), 0);
		ms_part_close(wp);
		snprintf(mdir, sizeof(mdir), "%s/b%d-streamed", root, kk);
		ms_sidx_writer *sw;
		assert_int_equal(ms_sidx_writer_open(&sw, kind, mdir, 9, &o, &eb),
		                 0);
		for (size_t i = 0; i < nr; i++)
			if (ms_sidx_writer_add(sw, &rows[i], &eb))
				fail_msg("add: %s", eb.msg);
		assert_int_equal(ms_sidx_writer_finish(sw, NULL, &eb), 0);
		ms_sidx_rows_free(NULL, rows, nr);
		same_file(mdir, wdir);
		for (int i = 0; i < 3; i++)
			ms_part_close(in[i]);
		tl_free(&all);
	}
}

/* Index merges on one set of kept zstd contexts (ms_zctx), one after
 * another on both kinds at levels 1, 9 (a larger workspace) and 1 again,
 * write the bytes a merge with contexts of its own writes; so does a
 * merge that finds the compression context taken by a writer still open
 * (it makes its own). */
static void
test_merge_bytes_kept_contexts(void **state)
{
	(void)state;
	ms_zctx *zc = NULL;
	assert_int_equal(ms_zctx_new(&zc, NULL, NULL), 0);
	static const int levels[] = { 1, 9, 1 };
	for (int kk = 0; kk < 2; kk++) {
		enum ms_part_kind kind =
		        kk ? MS_KIND_START_TIME : MS_KIND_LATENCY;
		tl_rows all = { 0 };
		ms_part *in[3];
		tl_rng r = { 70 + (uint64_t)kk };
		for (int i = 0; i < 3; i++) {
			tl_rows t = { 0 };
			tl_shape s = { .traces = 700 + 300 * (size_t)i,
				       .rows_per_trace = 3,
				       .tags_max = 2 + (size_t)i,
				       .tag_len = 3 + (size_t)i * 5 };
			tl_gen(&t, &r, &s);
			char dir[300];
			snprintf(dir, sizeof(dir), "%s/k%d-in%d", root, kk, i);
			write_input(kind, dir, (uint64_t)i, &t, &in[i], &all);
		}
		ms_errbuf eb = { { 0 } };
		for (size_t l = 0; l < 4; l++) {
			/* l == 3: level 1 with the context taken. */
			int level = levels[l < 3 ? l : 0];
			ms_part_writer_opts own = { .zstd_level = level },
			                    kept = own;
			kept.zctx = zc;
			char a[300], b[300], c[300];
			snprintf(a, sizeof(a), "%s/k%d-own%zu", root, kk, l);
			snprintf(b, sizeof(b), "%s/k%d-kept%zu", root, kk, l);
			snprintf(c, sizeof(c), "%s/k%d-open%zu", root, kk, l);
			ms_sidx_writer *open = NULL;
			if (l == 3)
				assert_int_equal(ms_sidx_writer_open(&open, kind,
				                                     c, 5, &kept,
				                                     &eb),
				                 0);
			if (ms_sidx_merge(kind, (const ms_part *const *)in, 3,
			                  NULL, NULL, a, 9, &own, NULL, NULL,
			                  &eb) ||
			    ms_sidx_merge(kind, (const ms_part *const *)in, 3,
			                  NULL, NULL, b, 9, &kept, NULL, NULL,
			                  &eb))
				fail_msg("merge: %s", eb.msg);
			ms_sidx_writer_abort(open);
			same_file(a, b);
		}
		for (int i = 0; i < 3; i++)
			ms_part_close(in[i]);
		tl_free(&all);
	}
	ms_zctx_free(zc);
}

/* Trace IDs that only a byte-exact order tells apart: prefixes of one
 * another at every length around the 8-byte words, zero bytes inside and
 * at the end, and IDs that differ only in their last word. */
#define IDS_POOL 48
static void
ids_pool(uint8_t ids[IDS_POOL][MS_TRACE_ID_MAX], uint32_t len[IDS_POOL])
{
	static const uint32_t lens[] = { 1, 7, 8, 9, 15, 16, 17, 63, 64 };
	uint8_t base[MS_TRACE_ID_MAX];
	for (int i = 0; i < MS_TRACE_ID_MAX; i++)
		base[i] = (uint8_t)(i % 3 == 0 ? 0 : 0x80 + i);
	size_t k = 0;
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		for (int v = 0; v < 5 && k < IDS_POOL; v++) {
			memcpy(ids[k], base, MS_TRACE_ID_MAX);
			len[k] = lens[i];
			if (v == 1 && lens[i] < MS_TRACE_ID_MAX) {
				/* one more byte, a zero */
				len[k] = lens[i] + 1;
				ids[k][lens[i]] = 0;
			}
			/* the last byte differs: to 0 or 0xff, or by a bit */
			uint8_t *last = &ids[k][len[k] - 1];
			if (v == 2)
				*last = *last ? 0 : 0xff;
			else if (v >= 3)
				*last ^= v == 3 ? 0x40 : 0x01;
			bool seen = false;
			for (size_t j = 0; j < k && !seen; j++)
				seen = len[j] == len[k] &&
				       memcmp(ids[j], ids[k], len[k]) == 0;
			k += !seen;
		}
	}
	for (; k < IDS_POOL; k++) {
		memcpy(ids[k], base, MS_TRACE_ID_MAX);
		len[k] = 33 + (uint32_t)k % 8;
		ids[k][32] = (uint8_t)k;
	}
	for (size_t i = 0; i < IDS_POOL; i++)
		for (size_t j = i + 1; j < IDS_POOL; j++)
			assert_true(len[i] != len[j] ||
			            memcmp(ids[i], ids[j], len[i]) != 0);
}

/* Thirteen inputs (two empty) whose rows tie on series and key all the
 * time and whose trace IDs only a byte-exact order tells apart: the
 * merged part is byte for byte the part written from all the rows at
 * once, over several chunks, on both index kinds. */
static void
test_merge_ids(void **state)
{
	(void)state;
	enum { NIN = 13, PER = 800 };
	static uint8_t ids[IDS_POOL][MS_TRACE_ID_MAX];
	static uint32_t idl[IDS_POOL];
	static const char *const svc[] = { "a", "b" };
	static const char *const tagv[] = { "k=1", "k=2", "q=zz" };
	static ms_row rows[NIN * PER];
	ids_pool(ids, idl);
	for (int kk = 0; kk < 2; kk++) {
		enum ms_part_kind kind =
		        kk ? MS_KIND_START_TIME : MS_KIND_LATENCY;
		ms_part *in[NIN];
		ms_errbuf eb = { { 0 } };
		ms_part_writer_opts o = { .depth = 2 };
		uint64_t x = 99;
		size_t n = 0;
		for (int i = 0; i < NIN; i++) {
			size_t at = n, m = (i == 3 || i == 11) ? 0 : PER;
			for (size_t j = 0; j < m; j++, n++) {
				x = x * 6364136223846793005ULL +
				    1442695040888963407ULL;
				uint32_t p = (uint32_t)(x >> 33) % IDS_POOL;
				uint32_t c = (uint32_t)(x >> 45) % 4;
				/* Everything but the trace ID and c follows
				 * from them: rows that tie are the same. */
				rows[n] = (ms_row){
					.trace_id = ids[p],
					.trace_id_len = idl[p],
					.service = svc[c % 2],
					.instance = c ? "i" : "",
					.endpoint = p % 2 ? "/e" : "/f",
					.start_ns = 1000 + (c / 2),
					.latency_ms = c / 2,
					.tags = tagv + p % 2,
					.ntags = 1 + p % 2,
				};
			}
			char dir[300];
			snprintf(dir, sizeof(dir), "%s/ids%d-in%d", root, kk, i);
			if (ms_sidx_write_rows(kind, dir, (uint64_t)i, rows + at,
			                       n - at, NULL, NULL, &eb))
				fail_msg("write: %s", eb.msg);
			open_part(dir, &in[i]);
		}
		char mdir[300], wdir[300];
		snprintf(mdir, sizeof(mdir), "%s/ids%d-merged", root, kk);
		snprintf(wdir, sizeof(wdir), "%s/ids%d-written", root, kk);
		ms_part_meta mm;
		if (ms_sidx_merge(kind, (const ms_part *const *)in, NIN, NULL,
		                  NULL, mdir, 9, &o, &mm, NULL, &eb))
			fail_msg("merge: %s", eb.msg);
		assert_int_equal(mm.rows, n);
		assert_true(mm.blocks >= 3);
		if (ms_sidx_write_rows(kind, wdir, 9, rows, n, &o, NULL, &eb))
			fail_msg("write: %s", eb.msg);
		same_file(mdir, wdir);
		for (int i = 0; i < NIN; i++)
			ms_part_close(in[i]);
	}
}

/* Every byte of footer and index, a stride through data, truncation of
 * the file anywhere and its removal: all fail and the message names the
 * part and the section. */
static void
test_corruption(void **state)
{
	(void)state;
	char dir[300];
	snprintf(dir, sizeof(dir), "%s/00000000000000e0", root);
	write_subject(dir);
	ms_errbuf eb;
	assert_int_equal(read_index(dir, &eb), 0);
	size_t n;
	uint8_t *b = slurp(dir, &n);
	fz_files f;
	assert_true(fz_read(dir, &f));
	assert_int_equal(f.n[2], 0); /* no bloom section */
	/* Sections in the file: data, index, footer. */
	const char *files[] = { "footer", "index", "data" };
	size_t at[3] = { f.n[3] + f.n[1], f.n[3], 0 };
	size_t len[3] = { f.n[0], f.n[1], f.n[3] };
	for (int fi = 0; fi < 3; fi++) {
		size_t stride = fi == 2 ? len[fi] / 800 + 1 : 1;
		for (size_t off = at[fi]; off < at[fi] + len[fi]; off += stride) {
			b[off] ^= 0x10;
			spill(dir, b, n);
			memset(&eb, 0, sizeof(eb));
			if (read_index(dir, &eb) == 0)
				fail_msg("%s byte %zu flip unnoticed",
				         files[fi], off - at[fi]);
			if (!strstr(eb.msg, files[fi]) ||
			    !strstr(eb.msg, "00000000000000e0"))
				fail_msg("message lacks part/section: %s",
				         eb.msg);
			b[off] ^= 0x10;
		}
	}
	for (size_t l = 0; l < n; l += n / 150 + 1) {
		spill(dir, b, l);
		memset(&eb, 0, sizeof(eb));
		assert_true(read_index(dir, &eb) < 0);
		assert_non_null(strstr(eb.msg, "footer"));
	}
	unlink(dir);
	assert_true(read_index(dir, &eb) < 0);
	assert_non_null(strstr(eb.msg, "missing"));
	spill(dir, b, n);
	free(b);
	assert_int_equal(read_index(dir, &eb), 0);
	/* A bloom section has no place in an index part. */
	f.bloom_absent = false;
	free(f.f[2]);
	f.f[2] = calloc(1, 48);
	f.n[2] = 48;
	fz_reseal(&f);
	fz_write(&f, dir);
	assert_true(read_index(dir, &eb) < 0);
	assert_non_null(strstr(eb.msg, "bloom"));
	f.n[2] = 0;
	f.bloom_absent = true;
	fz_reseal(&f);
	fz_write(&f, dir);
	fz_free(&f);
	assert_int_equal(read_index(dir, &eb), 0);
	/* Iterating a core part as an index is refused, and vice versa. */
	ms_part *p;
	assert_int_equal(ms_part_open(&p, dir, NULL, &eb), 0);
	ms_part_iter *it;
	assert_int_equal(ms_part_iter_open(&it, p, NULL, NULL, &eb),
	                 MS_ERR_INVAL);
	assert_true(ms_part_may_contain(p, (const uint8_t *)"a", 1));
	const ms_part *in[1] = { p };
	char bl[400];
	snprintf(bl, sizeof(bl), "%s/merge-out", root);
	assert_int_equal(ms_sidx_merge(MS_KIND_START_TIME, in, 1, NULL, NULL,
	                               bl, 1, NULL, NULL, NULL, &eb),
	                 MS_ERR_INVAL);
	ms_part_close(p);
}

/* A chunk's payload pieces (u8 codec, uvarint size, bytes): codec,
 * size, where the bytes start and how many bytes each inflates to. */
typedef struct piece {
	uint8_t codec;
	size_t size, at, raw;
} piece;

static size_t
chunk_pieces(const uint8_t *z, size_t stored, piece ps[8])
{
	size_t o = 0, raw = 0;
	for (unsigned c = 0; c < 8; c++) {
		assert_true(o < stored);
		ps[c].codec = z[o++];
		size_t size = 0;
		for (unsigned sh = 0;; sh += 7) {
			size |= (size_t)(z[o] & 0x7f) << sh;
			if (!(z[o++] & 0x80))
				break;
		}
		assert_true(size <= stored - o);
		ps[c].size = size;
		ps[c].at = o;
		ps[c].raw = ps[c].codec == 1
		                    ? (size_t)ZSTD_getFrameContentSize(z + o, size)
		                    : size;
		raw += ps[c].raw;
		o += size;
	}
	assert_int_equal(o, stored);
	return raw;
}

/* Rewrite the last chunk of the part at dir with every piece stored as
 * it is, the index entry and footer sealed to match. */
static void
store_last_chunk(const char *dir, fz_files *f)
{
	assert_true(fz_read(dir, f));
	uint8_t *d = f->f[3], *x = f->f[1];
	uint64_t nch = ms_le64(x + 16);
	uint8_t *e = x + 32 + 48 * (nch - 1);
	size_t off = (size_t)ms_le64(e), stored = ms_le32(d + off + 8);
	uint32_t raw = ms_le32(d + off + 12);
	piece ps[8];
	assert_int_equal(chunk_pieces(d + off + 32, stored, ps), raw);
	uint8_t *nd = malloc(off + 32 + raw + 8 * 11);
	memcpy(nd, d, off + 32);
	uint8_t *p = nd + off + 32;
	for (unsigned c = 0; c < 8; c++) {
		const uint8_t *src = d + off + 32 + ps[c].at;
		*p++ = 0;
		for (size_t v = ps[c].raw;; v >>= 7) {
			*p++ = (uint8_t)(v < 0x80 ? v : (v & 0x7f) | 0x80);
			if (v < 0x80)
				break;
		}
		if (ps[c].codec == 1)
			assert_int_equal(ZSTD_decompress(p, ps[c].raw, src,
			                                 ps[c].size),
			                 ps[c].raw);
		else
			memcpy(p, src, ps[c].raw);
		p += ps[c].raw;
	}
	size_t ns = (size_t)(p - (nd + off + 32));
	ms_put_le32(nd + off + 8, (uint32_t)ns);
	ms_put_le32(e + 8, (uint32_t)(32 + ns));
	free(f->f[3]);
	f->f[3] = nd;
	f->n[3] = off + 32 + ns;
	fz_reseal(f);
	fz_write(f, dir);
}

/* Chunk payloads are 8 pieces, one per column, a zstd frame from 128
 * bytes on; a reader takes any piece stored as it is, and refuses pieces
 * that do not make up the payload. */
static void
test_pieces(void **state)
{
	(void)state;
	char dir[300];
	snprintf(dir, sizeof(dir), "%s/00000000000000e0", root);
	unlink(dir);
	write_subject(dir);
	fz_files f;
	assert_true(fz_read(dir, &f));
	unsigned zstd = 0;
	for (size_t off = 0; off < f.n[3];) {
		const uint8_t *c = f.f[3] + off;
		size_t stored = ms_le32(c + 8);
		piece ps[8];
		assert_int_equal(chunk_pieces(c + 32, stored, ps),
		                 ms_le32(c + 12));
		for (unsigned k = 0; k < 8; k++) {
			assert_int_equal(ps[k].codec, ps[k].raw >= 128 ? 1 : 0);
			zstd += ps[k].codec;
		}
		off += 32 + stored;
	}
	assert_true(zstd > 0);
	fz_free(&f);
	ms_errbuf eb;
	ms_sidx_row *want, *got;
	size_t nw, ng;
	ms_part *p;
	assert_int_equal(ms_part_open(&p, dir, NULL, &eb), 0);
	assert_int_equal(ms_sidx_read_all(p, NULL, &want, &nw, &eb), 0);
	ms_part_close(p);
	store_last_chunk(dir, &f);
	assert_int_equal(ms_part_open(&p, dir, NULL, &eb), 0);
	if (ms_sidx_read_all(p, NULL, &got, &ng, &eb))
		fail_msg("%s", eb.msg);
	ms_part_close(p);
	assert_int_equal(ng, nw);
	for (size_t i = 0; i < nw; i++) {
		assert_int_equal(ms_sidx_row_cmp(&want[i], &got[i]), 0);
		assert_int_equal(want[i].other, got[i].other);
		assert_string_equal(want[i].endpoint, got[i].endpoint);
	}
	ms_sidx_rows_free(NULL, want, nw);
	ms_sidx_rows_free(NULL, got, ng);
	/* The last chunk now holds only stored pieces: an unknown codec, and
	 * a piece one byte short of the payload, are refused. */
	uint8_t *x = f.f[1], *d = f.f[3];
	size_t last = (size_t)ms_le64(x + 32 + 48 * (ms_le64(x + 16) - 1));
	d[last + 32] = 2;
	fz_reseal(&f);
	fz_write(&f, dir);
	assert_true(read_index(dir, &eb) < 0);
	assert_non_null(strstr(eb.msg, "piece 0 malformed"));
	d[last + 32] = 0;
	d[last + 33]--; /* series piece: one byte shorter */
	fz_reseal(&f);
	fz_write(&f, dir);
	assert_true(read_index(dir, &eb) < 0);
	assert_non_null(strstr(eb.msg, "00000000000000e0"));
	d[last + 33]++;
	fz_reseal(&f);
	fz_write(&f, dir);
	assert_int_equal(read_index(dir, &eb), 0);
	fz_free(&f);
}

static void
test_alloc_failure(void **state)
{
	(void)state;
	tl_rng r = { 321 };
	tl_rows t = { 0 };
	tl_shape s = { .traces = 1500, .rows_per_trace = 4 };
	tl_gen(&t, &r, &s);
	char dir[300], out[300];
	snprintf(dir, sizeof(dir), "%s/alloc", root);
	snprintf(out, sizeof(out), "%s/alloc-out", root);
	size_t failed = 0, unclear = 0, writer = 0;
	for (uint64_t n = 1;; n++) {
		ms_mem mem;
		ms_mem_init(&mem, NULL);
		ms_mem_fail_at(&mem, n, false);
		ms_part_writer_opts o = { .mem = &mem };
		ms_errbuf eb = { { 0 } };
		int rc = ms_sidx_write_rows(MS_KIND_START_TIME, dir, 1, t.rows,
		                            t.n, &o, NULL, &eb);
		ms_part *p = NULL;
		if (rc == 0)
			rc = ms_part_open(&p, dir, &mem, &eb);
		if (rc == 0) {
			ms_sidx_row *rows;
			size_t k;
			rc = ms_sidx_read_all(p, &mem, &rows, &k, &eb);
			if (rc == 0)
				ms_sidx_rows_free(&mem, rows, k);
		}
		if (rc == 0) {
			const ms_part *in[2] = { p, p };
			rc = ms_sidx_merge(MS_KIND_START_TIME, in, 2, NULL,
			                   NULL, out, 1, &o, NULL, NULL, &eb);
		}
		ms_part_close(p);
		ms_mem_stats st;
		ms_mem_stats_get(&mem, &st);
		assert_int_equal(st.live, 0);
		struct stat sb;
		assert_int_equal(stat(out, &sb), -1 + (rc == 0));
		ms_part_remove_dir(dir, NULL);
		ms_part_remove_dir(out, NULL);
		if (st.failed == 0) {
			assert_int_equal(rc, 0);
			break;
		}
		failed++;
		if (rc != MS_ERR_NOMEM)
			fail_msg("allocation %llu: %d %s",
			         (unsigned long long)n, rc, eb.msg);
		/* The message says what went wrong, and the size asked for
		 * where it is known ("index part X: writer" said neither). */
		if (!strstr(eb.msg, "out of memory")) {
			fprintf(stderr, "allocation %llu: %s\n",
			        (unsigned long long)n, eb.msg);
			unclear++;
		}
		if (strstr(eb.msg, "index part 0000000000000001: out of "
		                   "memory for its writer ("))
			writer++;
	}
	assert_int_equal(unclear, 0);
	assert_int_equal(writer, 2); /* write_rows and the merge's */
	assert_true(failed > 5);
	tl_free(&t);
}

/* Sorted rows for an index part and where to write it (sweep_write). */
typedef struct sweep_rows {
	const ms_sidx_row *rows;
	size_t n;
	char dir[300];
} sweep_rows;

/* The rows through a writer that has mem, added one at a time (the
 * chunk buffer grows from its first size); on failure no file is left,
 * and the message names the index part. */
static int
sweep_write(void *ctx, ms_mem *mem, ms_errbuf *eb)
{
	sweep_rows *a = ctx;
	ms_part_writer_opts o = { .mem = mem };
	ms_sidx_writer *w = NULL;
	int rc = ms_sidx_writer_open(&w, MS_KIND_START_TIME, a->dir, 1, &o, eb);
	for (size_t i = 0; rc == 0 && i < a->n; i++)
		rc = ms_sidx_writer_add(w, &a->rows[i], eb);
	if (rc == 0)
		rc = ms_sidx_writer_finish(w, NULL, eb);
	else
		ms_sidx_writer_abort(w);
	struct stat sb;
	if (rc != 0 && stat(a->dir, &sb) == 0)
		fail_msg("failed (%s), yet %s is there", eb->msg, a->dir);
	if (rc != 0 && !strstr(eb->msg, "index part 0000000000000001"))
		fail_msg("\"%s\" does not name the part", eb->msg);
	ms_part_remove_dir(a->dir, NULL);
	return rc;
}

/* An index part written out of memory at each of its writer's
 * allocations in turn says what the memory was for and how many bytes,
 * and leaves no file and nothing allocated; its chunk buffers, index and
 * zstd said "chunk buffer: out of memory", "out of memory" or "zstd: out
 * of memory: ...". Two chunks' worth of rows. */
static void
test_writer_out_of_memory_says_what_for(void **state)
{
	(void)state;
	tl_rng r = { 322 };
	tl_rows t = { 0 };
	tl_shape s = {
		.traces = 4500, .rows_per_trace = 1, .tags_max = 2, .tag_len = 6
	};
	tl_gen(&t, &r, &s);
	sweep_rows a = { 0 };
	snprintf(a.dir, sizeof(a.dir), "%s/alloc-w", root);
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_sidx_write_rows(MS_KIND_START_TIME, a.dir, 1,
	                                    t.rows, t.n, NULL, NULL, &eb),
	                 0);
	ms_part *p = NULL;
	ms_sidx_row *rows = NULL;
	assert_int_equal(ms_part_open(&p, a.dir, NULL, &eb), 0);
	assert_int_equal(ms_sidx_read_all(p, NULL, &rows, &a.n, &eb), 0);
	ms_part_close(p);
	ms_part_remove_dir(a.dir, NULL);
	assert_true(a.n > MS__CHUNK_ROWS);
	a.rows = rows;
	assert_true(tl_mem_sweep(sweep_write, &a, "") > 5);
	ms_sidx_rows_free(NULL, rows, a.n);
	tl_free(&t);
}

/*
 * A small index part costs memory in proportion to its size, not to the
 * largest chunk the format allows: writing a few rows, reading them back and
 * merging 15 such parts each allocate less than zstd's own context for
 * that much data plus a small multiple of the part's bytes. (A fixed
 * 4096-row buffer is 360 KB: far over these bounds.)
 */
static void
test_small_part_memory(void **state)
{
	(void)state;
	tl_rng r = { 77 };
	tl_rows t = { 0 };
	tl_shape s = { .traces = 4, .rows_per_trace = 3 };
	tl_gen(&t, &r, &s);
	enum { N = 15 };
	ms_part *parts[N] = { 0 };
	char dir[300];
	uint64_t data_max = 0;
	for (int i = 0; i < N; i++) {
		snprintf(dir, sizeof(dir), "%s/small-%d", root, i);
		ms_mem mem;
		ms_mem_init(&mem, NULL);
		ms_part_writer_opts o = { .mem = &mem };
		ms_part_meta m;
		ms_errbuf eb = { { 0 } };
		int rc = ms_sidx_write_rows(MS_KIND_LATENCY, dir,
		                            (uint64_t)i + 1, t.rows, t.n, &o,
		                            &m, &eb);
		if (rc)
			fail_msg("write: %s", eb.msg);
		ms_mem_stats st;
		ms_mem_stats_get(&mem, &st);
		/* The compression context for this much data, the part's
		 * rows sorted once, and a few copies of its bytes. */
		size_t cctx = ZSTD_estimateCCtxSize_usingCParams(
		        ZSTD_getCParams(3, m.uncompressed_bytes, 0));
		uint64_t bound = cctx + t.n * sizeof(ms_sidx_row) * 2 +
		                 8 * m.compressed_bytes + 16384;
		if (st.peak_live > (int64_t)bound)
			fail_msg("writing %zu rows peaked at %lld bytes, bound "
			         "%llu",
			         t.n, (long long)st.peak_live,
			         (unsigned long long)bound);
		open_part(dir, &parts[i]);
		data_max = m.compressed_bytes > data_max ? m.compressed_bytes
		                                         : data_max;
	}
	size_t dctx = ZSTD_estimateDCtxSize();
	/* One iterator over a whole part. */
	ms_mem mem;
	ms_mem_init(&mem, NULL);
	ms_sidx_iter *it;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_sidx_iter_open(&it, parts[0], &mem, NULL, &eb), 0);
	size_t k = 0;
	int rc;
	while ((rc = ms_sidx_iter_next(it, NULL, &eb)) == 1)
		k++;
	assert_int_equal(rc, 0);
	assert_int_equal(k, t.n);
	ms_sidx_iter_close(it);
	ms_mem_stats st;
	ms_mem_stats_get(&mem, &st);
	uint64_t bound = dctx + 8 * data_max + 4096;
	if (st.bytes > bound)
		fail_msg("reading %zu rows allocated %llu bytes, bound %llu",
		         t.n, (unsigned long long)st.bytes,
		         (unsigned long long)bound);
	/* A merge of all of them: one decompression context, one writer. */
	ms_mem_init(&mem, NULL);
	ms_part_writer_opts o = { .mem = &mem };
	snprintf(dir, sizeof(dir), "%s/small-out", root);
	ms_part_meta m;
	rc = ms_sidx_merge(MS_KIND_LATENCY, (const ms_part *const *)parts, N,
	                   NULL, NULL, dir, 99, &o, &m, NULL, &eb);
	if (rc)
		fail_msg("merge: %s", eb.msg);
	assert_int_equal(m.rows, N * t.n);
	ms_mem_stats_get(&mem, &st);
	size_t cctx = ZSTD_estimateCCtxSize_usingCParams(
	        ZSTD_getCParams(3, m.uncompressed_bytes, 0));
	bound = dctx + cctx + N * (8 * data_max + 1024) +
	        m.rows * sizeof(ms_sidx_row) + 16384;
	if (st.bytes > bound)
		fail_msg("merging %d parts of %zu rows allocated %llu bytes, "
		         "bound %llu",
		         N, t.n, (unsigned long long)st.bytes,
		         (unsigned long long)bound);
	for (int i = 0; i < N; i++)
		ms_part_close(parts[i]);
	tl_free(&t);
}

/* Rows whose tag columns have chosen cardinalities: instance from
 * `ninst` values, endpoint from `nep` values, tag lists from `ntl` lists
 * (list j has j % 4 tags), one per (series, key) step. */
typedef struct card_rows {
	size_t n;
	ms_sidx_row *rows;
	char (*inst)[24];
	char (*ep)[40];
	char (*tag)[32];
	const char *(*lists)[4];
} card_rows;

static void
card_make(card_rows *c, enum ms_part_kind kind, size_t n, size_t ninst,
          size_t nep, size_t ntl)
{
	c->n = n;
	c->rows = calloc(n, sizeof(*c->rows));
	c->inst = calloc(ninst, sizeof(*c->inst));
	c->ep = calloc(nep, sizeof(*c->ep));
	c->tag = calloc(ntl * 4, sizeof(*c->tag));
	c->lists = calloc(ntl, sizeof(*c->lists));
	for (size_t i = 0; i < ninst; i++)
		snprintf(c->inst[i], sizeof(c->inst[i]), "inst-%zu@10.0.%zu",
		         i, i % 7);
	for (size_t i = 0; i < nep; i++)
		snprintf(c->ep[i], sizeof(c->ep[i]), "/api/v1/item/%zu", i);
	for (size_t j = 0; j < ntl; j++)
		for (size_t k = 0; k < 4; k++) {
			snprintf(c->tag[j * 4 + k], sizeof(c->tag[0]),
			         "k%zu=v%zu", k, j);
			c->lists[j][k] = c->tag[j * 4 + k];
		}
	for (size_t i = 0; i < n; i++) {
		ms_sidx_row *r = &c->rows[i];
		r->series = 1000 + i / 700;
		r->key = (int64_t)(i % 700) * 3;
		r->other = kind == MS_KIND_LATENCY
		                   ? 1700000000000000000ll + (int64_t)i * 1000003
		                   : (int64_t)((i * 7919) % 5000);
		r->instance = c->inst[i % ninst];
		r->endpoint = c->ep[(i * 13) % nep];
		size_t j = (i * 5) % ntl;
		r->tags = c->lists[j];
		r->ntags = (uint32_t)(j % 4);
		r->tid_len = 8;
		for (int k = 0; k < 8; k++)
			r->tid[k] = (uint8_t)(i >> (8 * (k % 4)));
	}
}

static void
card_free(card_rows *c)
{
	free(c->rows);
	free(c->inst);
	free(c->ep);
	free(c->tag);
	free(c->lists);
}

/* Write c's rows (in order) as index part dir through the streaming
 * writer. */
static void
card_write(const card_rows *c, enum ms_part_kind kind, const char *dir,
           ms_part_meta *m)
{
	ms_sidx_writer *w;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_sidx_writer_open(&w, kind, dir, 5, NULL, &eb), 0);
	for (size_t i = 0; i < c->n; i++)
		if (ms_sidx_writer_add(w, &c->rows[i], &eb))
			fail_msg("add %zu: %s", i, eb.msg);
	if (ms_sidx_writer_finish(w, m, &eb))
		fail_msg("finish: %s", eb.msg);
}

/* Tag columns with few distinct values (dictionaries) and with many (plain)
 * come back as written, on both kinds, through the iterator and
 * ms_sidx_read_all; few distinct values take fewer bytes. */
static void
test_tag_columns(void **state)
{
	(void)state;
	for (int kind = MS_KIND_LATENCY; kind <= MS_KIND_START_TIME; kind++) {
		uint64_t bytes[2];
		for (int many = 0; many < 2; many++) {
			card_rows c;
			card_make(&c, (enum ms_part_kind)kind, 9000,
			          many ? 3000 : 3, many ? 2900 : 40,
			          many ? 1000 : 7);
			char dir[300];
			snprintf(dir, sizeof(dir), "%s/card-%d-%d", root, kind,
			         many);
			ms_part_meta m;
			card_write(&c, (enum ms_part_kind)kind, dir, &m);
			bytes[many] = m.compressed_bytes;
			ms_part *p;
			open_part(dir, &p);
			ms_errbuf eb = { { 0 } };
			ms_sidx_iter *it;
			assert_int_equal(
			        ms_sidx_iter_open(&it, p, NULL, NULL, &eb), 0);
			const ms_sidx_row *r;
			size_t i = 0;
			int rc;
			while ((rc = ms_sidx_iter_next(it, &r, &eb)) == 1) {
				assert_true(i < c.n);
				assert_row_eq(r, &c.rows[i], i);
				if (r->ntags)
					assert_int_equal(strlen(r->tags[0]),
					                 strlen(c.rows[i].tags[0]));
				i++;
			}
			assert_int_equal(rc, 0);
			assert_int_equal(i, c.n);
			ms_sidx_iter_close(it);
			ms_sidx_row *got;
			size_t n;
			assert_int_equal(ms_sidx_read_all(p, NULL, &got, &n, &eb),
			                 0);
			assert_int_equal(n, c.n);
			for (i = 0; i < n; i++)
				assert_row_eq(&got[i], &c.rows[i], i);
			ms_sidx_rows_free(NULL, got, n);
			assert_int_equal(ms_part_verify(p, &eb), 0);
			ms_part_close(p);
			card_free(&c);
		}
		assert_true(bytes[0] < bytes[1]);
	}
}

/* Rows for test_merge_remap: row i goes to input (i / run) % nin, so an
 * output chunk mixes runs of every input; an input's tag values are its
 * own when `own` (values of input k: k x 1000 + j, j < per), else shared
 * by all inputs; instances padded with `pad` bytes. */
typedef struct remap_case {
	size_t n, nin, run, per;
	bool own;
	int pad;
} remap_case;

typedef struct remap_rows {
	ms_sidx_row *rows;
	char (*str)[3][160];
	const char *(*list)[2];
} remap_rows;

static size_t
remap_input(const remap_case *c, size_t i)
{
	return (i / c->run) % c->nin;
}

static void
remap_make(remap_rows *m, const remap_case *c, enum ms_part_kind kind)
{
	m->rows = calloc(c->n, sizeof(*m->rows));
	m->str = calloc(c->n, sizeof(*m->str));
	m->list = calloc(c->n, sizeof(*m->list));
	for (size_t i = 0; i < c->n; i++) {
		ms_sidx_row *r = &m->rows[i];
		size_t k = remap_input(c, i);
		/* Values change every 7 rows, in an order that revisits
		 * old ones, so most rows repeat a value of their chunk. */
		size_t j = ((i / 7) * 37) % c->per + (c->own ? k * 1000 : 0);
		r->series = 77 + i / 5000;
		r->key = (int64_t)(i % 5000);
		r->other = kind == MS_KIND_LATENCY ? (int64_t)(j % 5) * 1000
		                                   : (int64_t)(i % 3);
		snprintf(m->str[i][0], 160, "inst-%zu-%.*s", j, c->pad,
		         "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
		         "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
		         "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
		snprintf(m->str[i][1], 160, "/ep/%zu", j % 200);
		snprintf(m->str[i][2], 160, "k=%zu", (j * 3) % 311);
		r->instance = m->str[i][0];
		r->endpoint = j % 11 ? m->str[i][1] : NULL;
		m->list[i][0] = m->str[i][2];
		m->list[i][1] = "ok=1";
		r->tags = m->list[i];
		r->ntags = (uint32_t)(j % 3);
		r->tid_len = 12;
		for (int b = 0; b < 12; b++)
			r->tid[b] = (uint8_t)(i >> (8 * (3 - b % 4)));
	}
}

static void
remap_free(remap_rows *m)
{
	free(m->rows);
	free(m->str);
	free(m->list);
}

/* Write the rows of c of input `input` (SIZE_MAX: all) that keep (may
 * be NULL) keeps, in order, through the streaming writer (which hashes
 * every value) as part id in dir. */
static void
remap_write(const remap_rows *m, const remap_case *c, enum ms_part_kind kind,
            const char *dir, uint64_t id, size_t input,
            bool (*keep)(void *, const uint8_t *, uint32_t))
{
	ms_sidx_writer *w;
	ms_errbuf eb = { { 0 } };
	ms_part_writer_opts o = { .depth = 4 };
	assert_int_equal(ms_sidx_writer_open(&w, kind, dir, id, &o, &eb), 0);
	for (size_t i = 0; i < c->n; i++) {
		const ms_sidx_row *r = &m->rows[i];
		if (input != SIZE_MAX && remap_input(c, i) != input)
			continue;
		if (keep && !keep(NULL, r->tid, r->tid_len))
			continue;
		if (ms_sidx_writer_add(w, r, &eb))
			fail_msg("add %zu: %s", i, eb.msg);
	}
	if (ms_sidx_writer_finish(w, NULL, &eb))
		fail_msg("finish: %s", eb.msg);
}

static bool
keep_some(void *ctx, const uint8_t *tid, uint32_t len)
{
	(void)ctx;
	return XXH64(tid, len, 3) % 3 != 0;
}

/* A merge takes a value of an input's dictionary to the output
 * dictionary slot that value got at its first row instead of hashing it
 * again: the merged part is byte for byte the part written row by row
 * from the same rows, whether the output columns stay dictionaries (all
 * inputs sharing values, or 4 x 64 = exactly 256 distinct values),
 * overflow into plain ones in the middle of a chunk (5 x 60 = 300), or
 * the inputs' own columns are plain; with inputs of several chunks, with
 * pruning, and with an empty input. The last case's plain instance column
 * (400 values of 100 bytes repeated over 4000 rows) is larger than all
 * the inputs' payloads together. */
static void
test_merge_remap(void **state)
{
	(void)state;
	static const remap_case cases[] = {
		{ 30000, 5, 40, 60, false, 0 },
		{ 30000, 4, 40, 64, true, 0 },
		{ 30000, 5, 40, 60, true, 0 },
		{ 20000, 3, 1, 400, false, 0 },
		{ 12000, 7, 500, 250, true, 0 },
		{ 9000, 6, 3, 257, true, 0 },
		/* More input chunks than the writer keeps remaps for. */
		{ 6000, 40, 2, 50, false, 0 },
		{ 6000, 40, 2, 50, true, 0 },
		{ 4000, 2, 2000, 200, true, 100 },
		/* The same past a chunk's rows: the merge sizes its
		 * writer's tag-value buffer from the inputs' payload
		 * bytes a row, short of these values, which grow it. */
		{ 9000, 2, 4500, 200, true, 100 },
	};
	int n = 0;
	for (size_t ci = 0; ci < sizeof(cases) / sizeof(cases[0]); ci++) {
		const remap_case *c = &cases[ci];
		for (int kk = 0; kk < 2; kk++) {
			enum ms_part_kind kind =
			        kk ? MS_KIND_START_TIME : MS_KIND_LATENCY;
			remap_rows m;
			remap_make(&m, c, kind);
			/* The inputs, and an empty one last. */
			ms_part **in = calloc(c->nin + 1, sizeof(*in));
			char dir[300];
			for (size_t k = 0; k <= c->nin; k++) {
				snprintf(dir, sizeof(dir), "%s/rm%d-in%zu",
				         root, n, k);
				remap_write(&m, c, kind, dir, 100 + k,
				            k < c->nin ? k : SIZE_MAX - 1,
				            NULL);
				open_part(dir, &in[k]);
			}
			for (int prune = 0; prune < 2; prune++) {
				char mdir[300], wdir[300];
				snprintf(mdir, sizeof(mdir),
				         "%s/rm%d-%d-merged", root, n, prune);
				snprintf(wdir, sizeof(wdir),
				         "%s/rm%d-%d-written", root, n, prune);
				ms_errbuf eb = { { 0 } };
				ms_part_writer_opts o = { .depth = 4 };
				if (ms_sidx_merge(
				            kind, (const ms_part *const *)in,
				            c->nin + 1,
				            prune ? keep_some : NULL, NULL,
				            mdir, 9, &o, NULL, NULL, &eb))
					fail_msg("merge: %s", eb.msg);
				remap_write(&m, c, kind, wdir, 9, SIZE_MAX,
				            prune ? keep_some : NULL);
				same_file(mdir, wdir);
			}
			for (size_t k = 0; k <= c->nin; k++)
				ms_part_close(in[k]);
			free(in);
			remap_free(&m);
			n++;
		}
	}
}

/* Row i of test_merge_remap_turns: its input, and the instance it
 * names (its input's second value, but the first at its input's first
 * row and at the rows named in wrap_instance). */
enum { WRAP_FILL = 31, WRAP_ROWS = 4400 };

static size_t
wrap_input(size_t i)
{
	if (i < WRAP_FILL)
		return 1 + i;
	return (i - WRAP_FILL) % 2 ? WRAP_FILL + 1 : 0;
}

static const char *
wrap_instance(size_t i, char buf[16])
{
	size_t k = wrap_input(i);
	/* Output chunk 2 starts at row 4096 with input 32: the first row
	 * of its instance column takes the remap of keys 1 and 33 (inputs
	 * 0 and 32, taking turns from then on) and sets its entry 0; the
	 * 128th row, of input 0, looks up its own entry 0. */
	bool first = i == WRAP_FILL || i == WRAP_FILL + 1 || i == 4096 ||
	             i == 4096 + 127;
	snprintf(buf, 16, "in%zu-%d", k, k && k <= WRAP_FILL ? 0 : !first);
	return buf;
}

/* Two input chunks take one remap in turns, row by row, each setting
 * entry 1 of its own dictionary, and each looks up its entry 0 once, set
 * by the other many turns before: the merged part is byte for byte the
 * part written row by row. */
static void
test_merge_remap_turns(void **state)
{
	(void)state;
	enum ms_part_kind kind = MS_KIND_LATENCY;
	ms_part *in[WRAP_FILL + 2];
	ms_errbuf eb = { { 0 } };
	ms_part_writer_opts o = { .depth = 4 };
	char dir[300], buf[16];
	for (size_t k = 0; k <= WRAP_FILL + 2; k++) {
		/* k == WRAP_FILL + 2: every row, the expected part */
		ms_sidx_writer *w;
		snprintf(dir, sizeof(dir), "%s/wrap-%zu", root, k);
		assert_int_equal(ms_sidx_writer_open(&w, kind, dir, 9, &o, &eb),
		                 0);
		for (size_t i = 0; i < WRAP_ROWS; i++) {
			if (k <= WRAP_FILL + 1 && wrap_input(i) != k)
				continue;
			ms_sidx_row r = { .series = 5, .key = (int64_t)i,
				          .endpoint = "/e", .tid_len = 4 };
			r.instance = wrap_instance(i, buf);
			for (int b = 0; b < 4; b++)
				r.tid[b] = (uint8_t)(i >> (8 * (3 - b)));
			if (ms_sidx_writer_add(w, &r, &eb))
				fail_msg("add %zu: %s", i, eb.msg);
		}
		assert_int_equal(ms_sidx_writer_finish(w, NULL, &eb), 0);
		if (k <= WRAP_FILL + 1)
			open_part(dir, &in[k]);
	}
	snprintf(dir, sizeof(dir), "%s/wrap-merged", root);
	if (ms_sidx_merge(kind, (const ms_part *const *)in, WRAP_FILL + 2,
	                  NULL, NULL, dir, 9, &o, NULL, NULL, &eb))
		fail_msg("merge: %s", eb.msg);
	char want[300];
	snprintf(want, sizeof(want), "%s/wrap-%d", root, WRAP_FILL + 2);
	same_file(dir, want);
	for (size_t k = 0; k <= WRAP_FILL + 1; k++)
		ms_part_close(in[k]);
}

/* The writer refuses tags the format cannot hold, naming the row. */
static void
test_writer_tags(void **state)
{
	(void)state;
	char dir[300];
	snprintf(dir, sizeof(dir), "%s/badtags", root);
	static char long_str[MS_STR_MAX + 2];
	memset(long_str, 'x', MS_STR_MAX + 1);
	const char *null_tag[] = { "a=b", NULL };
	for (int bad = 0; bad < 4; bad++) {
		enum ms_part_kind kind =
		        bad == 3 ? MS_KIND_START_TIME : MS_KIND_LATENCY;
		ms_sidx_writer *w;
		ms_errbuf eb = { { 0 } };
		assert_int_equal(
		        ms_sidx_writer_open(&w, kind, dir, 1, NULL, &eb), 0);
		ms_sidx_row a = { .series = 5,
			          .key = 10,
			          .other = 3,
			          .instance = "i",
			          .tid_len = 1,
			          .tid = { 9 } };
		assert_int_equal(ms_sidx_writer_add(w, &a, &eb), 0);
		if (bad == 0)
			a.instance = long_str;
		else if (bad == 1)
			a.endpoint = long_str;
		else if (bad == 2) {
			a.tags = null_tag;
			a.ntags = 2;
		} else
			a.other = (int64_t)UINT32_MAX + 1;
		assert_int_equal(ms_sidx_writer_add(w, &a, &eb), MS_ERR_INVAL);
		assert_non_null(strstr(eb.msg, "row 1"));
		assert_true(ms_sidx_writer_finish(w, NULL, &eb) < 0);
		struct stat sb;
		assert_int_equal(stat(dir, &sb), -1);
	}
}

/* An index part's ledger covers its tags: the part written from changed
 * tags has another ledger, and each equals the rows' oracle. */
static void
test_ledger_tags(void **state)
{
	(void)state;
	tl_rng r = { 55 };
	tl_rows t = { 0 };
	tl_shape s = { .traces = 300,
		       .rows_per_trace = 4,
		       .tags_max = 2,
		       .tag_len = 5 };
	tl_gen(&t, &r, &s);
	const char *changed[] = { "k=other" };
	for (int kind = MS_KIND_LATENCY; kind <= MS_KIND_START_TIME; kind++) {
		ms_ledger l[5];
		for (int v = 0; v < 5; v++) {
			ms_row keep = t.rows[17];
			if (v == 1)
				t.rows[17].instance = "i-changed";
			else if (v == 2)
				t.rows[17].endpoint = "/api/changed";
			else if (v == 3) {
				t.rows[17].tags = changed;
				t.rows[17].ntags = 1;
			} else if (v == 4) {
				if (kind == MS_KIND_LATENCY)
					t.rows[17].start_ns++;
				else
					t.rows[17].latency_ms++;
			}
			char dir[300];
			snprintf(dir, sizeof(dir), "%s/ledger-%d-%d", root,
			         kind, v);
			ms_errbuf eb = { { 0 } };
			if (ms_sidx_write_rows((enum ms_part_kind)kind, dir, 3,
			                       t.rows, t.n, NULL, NULL, &eb))
				fail_msg("write: %s", eb.msg);
			ms_part *p;
			open_part(dir, &p);
			assert_int_equal(ms_ledger_of_part(p, &l[v], NULL, &eb),
			                 0);
			ms_part_close(p);
			ms_ledger_set want;
			ms_ledger_set_init(&want);
			for (size_t i = 0; i < t.n; i++)
				ms_ledger_set_add_row(&want, &t.rows[i]);
			assert_true(ms_ledger_equal(&l[v], &want.kind[kind]));
			t.rows[17] = keep;
		}
		for (int v = 1; v < 5; v++)
			assert_false(ms_ledger_equal(&l[0], &l[v]));
	}
	tl_free(&t);
}

/* The writer refuses rows out of order. */
static void
test_writer_order(void **state)
{
	(void)state;
	char dir[300];
	snprintf(dir, sizeof(dir), "%s/order", root);
	ms_sidx_writer *w;
	ms_errbuf eb;
	assert_int_equal(
	        ms_sidx_writer_open(&w, MS_KIND_LATENCY, dir, 1, NULL, &eb), 0);
	ms_sidx_row a = { .series = 5, .key = 10, .tid_len = 1, .tid = { 9 } };
	ms_sidx_row b = a;
	b.key = 9;
	assert_int_equal(ms_sidx_writer_add(w, &a, &eb), 0);
	assert_int_equal(ms_sidx_writer_add(w, &a, &eb), 0); /* equal: kept */
	assert_int_equal(ms_sidx_writer_add(w, &b, &eb), MS_ERR_INVAL);
	assert_true(ms_sidx_writer_finish(w, NULL, &eb) < 0);
	struct stat sb;
	assert_int_equal(stat(dir, &sb), -1);
	assert_int_equal(
	        ms_sidx_writer_open(&w, MS_KIND_CORE, dir, 1, NULL, &eb),
	        MS_ERR_INVAL);
	ms_sidx_writer_abort(NULL);
	ms_sidx_iter_close(NULL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_row_of),
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_merge),
		cmocka_unit_test(test_merge_bytes),
		cmocka_unit_test(test_merge_bytes_kept_contexts),
		cmocka_unit_test(test_merge_remap),
		cmocka_unit_test(test_merge_remap_turns),
		cmocka_unit_test(test_merge_ids),
		cmocka_unit_test(test_corruption),
		cmocka_unit_test(test_pieces),
		cmocka_unit_test(test_alloc_failure),
		cmocka_unit_test(test_writer_out_of_memory_says_what_for),
		cmocka_unit_test(test_writer_order),
		cmocka_unit_test(test_tag_columns),
		cmocka_unit_test(test_writer_tags),
		cmocka_unit_test(test_ledger_tags),
		cmocka_unit_test(test_small_part_memory),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
