/*
 * test_ledger.c - logical ledgers: order independence, sensitivity to every
 * field of a row, arithmetic, text form, and ledgers of real parts.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ms_fs.h"
#include "ms_ledger.h"
#include "ms_sidx.h"

#include <unistd.h>

static const char *tags_a[] = { "http.method=GET", "status=200" };
static const char *tags_b[] = { "status=200", "http.method=GET" };
static const uint8_t body[] = { 1, 2, 3, 4, 5 };

static ms_row
base_row(void)
{
	ms_row r;
	memset(&r, 0, sizeof(r));
	r.trace_id = (const uint8_t *)"trace-0001";
	r.trace_id_len = 10;
	r.span_id = 7;
	r.segment_id = "seg-1";
	r.service = "svc";
	r.instance = "inst";
	r.endpoint = "/api";
	r.start_ns = 1700000000000000000LL;
	r.latency_ms = 42;
	r.is_error = false;
	r.tags = tags_a;
	r.ntags = 2;
	r.body = body;
	r.body_len = sizeof(body);
	return r;
}

static ms_ledger
ledger_of(const ms_row *rows, size_t n)
{
	ms_ledger l;
	ms_ledger_init(&l);
	for (size_t i = 0; i < n; i++)
		ms_ledger_add_row(&l, &rows[i]);
	return l;
}

static void
test_order_independent(void **state)
{
	(void)state;
	enum { N = 64 };
	ms_row rows[N];
	char segs[N][16];
	for (int i = 0; i < N; i++) {
		rows[i] = base_row();
		rows[i].span_id = (uint64_t)i;
		snprintf(segs[i], sizeof(segs[i]), "seg-%d", i);
		rows[i].segment_id = segs[i];
	}
	ms_ledger fwd = ledger_of(rows, N);
	assert_int_equal(fwd.rows, N);
	/* Reverse, and a shuffled order split into two parts. */
	ms_row rev[N];
	for (int i = 0; i < N; i++)
		rev[i] = rows[N - 1 - i];
	ms_ledger back = ledger_of(rev, N);
	assert_true(ms_ledger_equal(&fwd, &back));
	srand(7);
	for (int i = N - 1; i > 0; i--) {
		int j = rand() % (i + 1);
		ms_row t = rev[i];
		rev[i] = rev[j];
		rev[j] = t;
	}
	ms_ledger a = ledger_of(rev, 20), b = ledger_of(rev + 20, N - 20);
	ms_ledger_add(&b, &a);
	assert_true(ms_ledger_equal(&fwd, &b));
	/* A duplicated row is not the same set. */
	ms_ledger dup = ledger_of(rows, N);
	ms_ledger_add_row(&dup, &rows[3]);
	assert_false(ms_ledger_equal(&fwd, &dup));
}

static void
test_every_field_counts(void **state)
{
	(void)state;
	ms_row r0 = base_row();
	ms_ledger l0 = ledger_of(&r0, 1);
	ms_row v[16];
	int n = 0;
	v[n] = r0, v[n++].trace_id = (const uint8_t *)"trace-0002";
	v[n] = r0, v[n++].trace_id_len = 9;
	v[n] = r0, v[n++].span_id = 8;
	v[n] = r0, v[n++].segment_id = "seg-2";
	v[n] = r0, v[n++].service = "svd";
	v[n] = r0, v[n++].instance = "insu";
	v[n] = r0, v[n++].endpoint = "/apj";
	v[n] = r0, v[n++].start_ns = r0.start_ns + 1;
	v[n] = r0, v[n++].latency_ms = 43;
	v[n] = r0, v[n++].is_error = true;
	v[n] = r0, v[n++].tags = tags_b; /* same tags, other order */
	v[n] = r0, v[n++].ntags = 1;
	v[n] = r0, v[n++].body_len = 4;
	v[n] = r0, v[n++].body = (const uint8_t *)"\x01\x02\x03\x04\x06";
	/* Bytes moved across a field boundary. */
	v[n] = r0, v[n].service = "svci", v[n++].instance = "nst";
	v[n] = r0, v[n].body = NULL, v[n++].body_len = 0;
	for (int i = 0; i < n; i++) {
		ms_ledger li = ledger_of(&v[i], 1);
		assert_int_equal(li.rows, 1);
		if (ms_ledger_equal(&l0, &li))
			fail_msg("variant %d has the same ledger", i);
		for (int j = 0; j < i; j++) {
			ms_ledger lj = ledger_of(&v[j], 1);
			if (ms_ledger_equal(&lj, &li))
				fail_msg("variants %d and %d collide", j, i);
		}
	}
	/* The same row built from other buffers has the same ledger. */
	ms_row c = r0;
	char svc[] = "svc";
	uint8_t tid[] = "trace-0001";
	c.service = svc;
	c.trace_id = tid;
	ms_ledger lc = ledger_of(&c, 1);
	assert_true(ms_ledger_equal(&l0, &lc));
}

/* Add index row (series, key, value) with the tags of *tags (NULL: none)
 * to l; value is 0x01||traceID. */
static void
add_irow(ms_ledger *l, uint64_t series, int64_t key, const uint8_t *value,
         uint32_t value_len, const ms_sidx_row *tags)
{
	ms_sidx_row r;
	memset(&r, 0, sizeof(r));
	if (tags)
		r = *tags;
	r.series = series;
	r.key = key;
	r.tid_len = value_len - 1;
	memcpy(r.tid, value + 1, value_len - 1);
	ms_ledger_add_index_row(l, &r);
}

static void
test_index_rows(void **state)
{
	(void)state;
	const uint8_t val[] = "\x01trace-0001";
	ms_ledger a, b;
	ms_ledger_init(&a);
	ms_ledger_init(&b);
	add_irow(&a, 1, 42, val, 11, NULL);
	add_irow(&a, 1, 43, val, 11, NULL);
	add_irow(&b, 1, 43, val, 11, NULL);
	add_irow(&b, 1, 42, val, 11, NULL);
	assert_true(ms_ledger_equal(&a, &b));
	ms_ledger c[4];
	for (int i = 0; i < 4; i++)
		ms_ledger_init(&c[i]);
	add_irow(&c[0], 2, 42, val, 11, NULL);
	add_irow(&c[1], 1, 41, val, 11, NULL);
	add_irow(&c[2], 1, 42, val, 10, NULL);
	add_irow(&c[3], 1, 42, (const uint8_t *)"\x01trace-0002", 11, NULL);
	ms_ledger one;
	ms_ledger_init(&one);
	add_irow(&one, 1, 42, val, 11, NULL);
	for (int i = 0; i < 4; i++)
		assert_false(ms_ledger_equal(&one, &c[i]));
}

/* An index row with instance, endpoint and tags set (series, key and
 * value are add_irow's). */
static ms_sidx_row
irow_base(const char **tags, uint32_t ntags)
{
	ms_sidx_row r;
	memset(&r, 0, sizeof(r));
	r.other = 1700000000000000000;
	r.instance = "inst-1";
	r.endpoint = "/cart";
	r.tags = tags;
	r.ntags = ntags;
	return r;
}

/* The row hashes themselves, for rows that fit the encoder's staging
 * buffer and rows that stream through it (a long body, a long tag): any
 * change to the canonical encodings or to how they are hashed changes
 * every ledger recorded before it (FORMAT.md, "Ledger"). */
static void
test_hash_vectors(void **state)
{
	(void)state;
	static char big[3000];
	memset(big, 'b', sizeof(big) - 1);
	ms_row r = base_row();
	uint64_t lo, hi;
	ms_ledger_row_hash(&r, &lo, &hi);
	assert_int_equal(lo, 0xcdefa7b685b49b93ull);
	assert_int_equal(hi, 0x15ffe2b3ab15d642ull);
	r.body = (const uint8_t *)big;
	r.body_len = sizeof(big);
	ms_ledger_row_hash(&r, &lo, &hi);
	assert_int_equal(lo, 0x1aab9e73c74e9a71ull);
	assert_int_equal(hi, 0x109194a684eccbd5ull);
	const char *tags[] = { "http.method=GET", big, "status=200" };
	ms_sidx_row ir = irow_base(tags, 1);
	const uint8_t val[] = "\x01trace-0001";
	static const uint64_t want[2][2] = {
		{ 0x063af522efebfbb0ull, 0x1696ab0320f2b0c4ull },
		{ 0x5bd384ba37b50db2ull, 0xeffaf8b9b9872a1aull },
	};
	for (int i = 0; i < 2; i++) {
		ir.ntags = i ? 3 : 1; /* the second streams its long tag */
		ms_ledger l;
		ms_ledger_init(&l);
		add_irow(&l, 1, 42, val, 11, &ir);
		assert_int_equal(l.sum_lo, want[i][0]);
		assert_int_equal(l.sum_hi, want[i][1]);
	}
}

/* Every tag of an index row is in its ledger: changing any one of them,
 * or moving bytes between them, changes the ledger. */
static void
test_index_row_tags(void **state)
{
	(void)state;
	const uint8_t val[] = "\x01trace-0001";
	const char *tags[] = { "http.method=GET", "status=200" };
	const char *tags2[] = { "http.method=GET", "status=500" };
	const char *tags3[] = { "http.method=GETstatus=200", "" };
	ms_sidx_row base = irow_base(tags, 2);
	ms_ledger one, same;
	ms_ledger_init(&one);
	ms_ledger_init(&same);
	add_irow(&one, 1, 42, val, 11, &base);
	add_irow(&same, 1, 42, val, 11, &base);
	assert_true(ms_ledger_equal(&one, &same));
	ms_sidx_row v[8];
	for (int i = 0; i < 8; i++)
		v[i] = base;
	v[0].other++;
	v[1].instance = "inst-2";
	v[2].endpoint = "/carts";
	v[3].tags = tags2;
	v[4].ntags = 1;
	v[5].tags = tags3; /* the same bytes, split differently */
	v[6].instance = "inst-1/cart";
	v[6].endpoint = "";
	v[7].tags = NULL;
	for (int i = 0; i < 8; i++) {
		ms_ledger l;
		ms_ledger_init(&l);
		add_irow(&l, 1, 42, val, 11, &v[i]);
		assert_false(ms_ledger_equal(&one, &l));
	}
	/* NULL strings and an absent tag list count as empty. */
	ms_sidx_row e1, e2;
	memset(&e1, 0, sizeof(e1));
	memset(&e2, 0, sizeof(e2));
	e2.instance = "";
	e2.endpoint = "";
	e2.tags = tags;
	ms_ledger l1, l2;
	ms_ledger_init(&l1);
	ms_ledger_init(&l2);
	add_irow(&l1, 1, 42, val, 11, &e1);
	add_irow(&l2, 1, 42, val, 11, &e2);
	assert_true(ms_ledger_equal(&l1, &l2));
}

static void
test_add_sub_format(void **state)
{
	(void)state;
	ms_row rows[3] = { base_row(), base_row(), base_row() };
	rows[1].span_id = 99;
	rows[2].latency_ms = 1;
	ms_ledger all = ledger_of(rows, 3);
	ms_ledger dropped = ledger_of(&rows[1], 1);
	ms_ledger kept = ledger_of(rows, 1);
	ms_ledger_add_row(&kept, &rows[2]);
	ms_ledger x = all;
	assert_int_equal(ms_ledger_sub(&x, &dropped), 0);
	assert_true(ms_ledger_equal(&x, &kept));
	assert_int_equal(ms_ledger_sub(&x, &all), MS_ERR_RANGE);
	assert_true(ms_ledger_equal(&x, &kept));
	/* Carries across the 64-bit halves wrap mod 2^128. */
	ms_ledger big = { 1, UINT64_MAX, UINT64_MAX }, one = { 1, 1, 0 };
	ms_ledger_add(&big, &one);
	assert_int_equal(big.sum_lo, 0);
	assert_int_equal(big.sum_hi, 0);
	assert_int_equal(ms_ledger_sub(&big, &one), 0);
	assert_int_equal(big.sum_lo, UINT64_MAX);
	assert_int_equal(big.sum_hi, UINT64_MAX);

	char s[MS_LEDGER_STR_MAX];
	ms_ledger_format(&all, s);
	assert_int_equal(strlen(s), 2 + 32);
	assert_int_equal(s[0], '3');
	ms_ledger p;
	assert_int_equal(ms_ledger_parse(&p, s), 0);
	assert_true(ms_ledger_equal(&p, &all));
	ms_ledger_format(&big, s);
	assert_string_equal(s, "1:ffffffffffffffffffffffffffffffff");
	assert_int_equal(ms_ledger_parse(&p, "1:fff"), MS_ERR_INVAL);
	assert_int_equal(ms_ledger_parse(&p, "x:0"), MS_ERR_INVAL);
	assert_int_equal(
	        ms_ledger_parse(&p, "1:ffffffffffffffffffffffffffffffff0"),
	        MS_ERR_INVAL);

	ms_ledger_set s1, s2;
	ms_ledger_set_init(&s1);
	ms_ledger_set_init(&s2);
	s1.kind[MS_KIND_LATENCY] = all;
	assert_false(ms_ledger_set_equal(&s1, &s2));
	ms_ledger_set_add(&s2, &s1);
	assert_true(ms_ledger_set_equal(&s1, &s2));
	assert_int_equal(ms_ledger_set_sub(&s2, &s1), 0);
	assert_int_equal(s2.kind[MS_KIND_LATENCY].rows, 0);
	assert_int_equal(ms_ledger_set_sub(&s2, &s1), MS_ERR_RANGE);
}

/* Rows for part tests: n rows over n / 3 + 1 traces. */
struct many {
	ms_row *rows;
	char (*tid)[16];
	size_t n;
};

static void
many_rows(struct many *m, size_t n)
{
	m->n = n;
	m->rows = calloc(n, sizeof(*m->rows));
	m->tid = calloc(n, sizeof(*m->tid));
	assert_non_null(m->rows);
	assert_non_null(m->tid);
	for (size_t i = 0; i < n; i++) {
		ms_row *r = &m->rows[i];
		*r = base_row();
		snprintf(m->tid[i], sizeof(m->tid[i]), "tr-%05zu", i / 3);
		r->trace_id = (const uint8_t *)m->tid[i];
		r->trace_id_len = (uint32_t)strlen(m->tid[i]);
		r->span_id = i;
		r->start_ns += (int64_t)(i * 7919 % 1000);
		r->latency_ms = (uint32_t)(i * 31 % 700);
		r->service = i % 2 ? "svc-a" : "svc-b";
	}
}

/* Write rows into part `id` (all kinds) under dir/<kind>-<id>; return the
 * three ledgers read back from disk. */
static void
part_ledgers(const char *dir, uint64_t id, const ms_row *rows, size_t n,
             ms_ledger_set *out)
{
	static const char *const names[] = { "core", "latency", "start_time" };
	ms_errbuf eb = { { 0 } };
	ms_part_meta meta;
	for (int k = 0; k < MS_KIND_COUNT; k++) {
		char path[512];
		snprintf(path, sizeof(path), "%s/%s-%llu", dir, names[k],
		         (unsigned long long)id);
		int rc = k == MS_KIND_CORE
		                 ? ms_part_write_rows(path, id, rows, n, NULL,
		                                      &meta, &eb)
		                 : ms_sidx_write_rows((enum ms_part_kind)k,
		                                      path, id, rows, n, NULL,
		                                      &meta, &eb);
		if (rc)
			fail_msg("write %s: %s", path, eb.msg);
		ms_part *p;
		assert_int_equal(ms_part_open(&p, path, NULL, &eb), 0);
		assert_int_equal(ms_ledger_of_part(p, &out->kind[k], NULL, &eb),
		                 0);
		ms_part_close(p);
	}
}

static void
test_part_ledgers(void **state)
{
	(void)state;
	char tmpl[] = "/tmp/ms-test-ledger-XXXXXX";
	char *dir = mkdtemp(tmpl);
	assert_non_null(dir);
	struct many m;
	many_rows(&m, 300);
	/* The oracle straight from the rows. */
	ms_ledger_set want;
	ms_ledger_set_init(&want);
	for (size_t i = 0; i < m.n; i++)
		ms_ledger_set_add_row(&want, &m.rows[i]);
	assert_int_equal(want.kind[MS_KIND_LATENCY].rows, 300);
	/* One part. */
	ms_ledger_set one;
	part_ledgers(dir, 1, m.rows, m.n, &one);
	assert_true(ms_ledger_set_equal(&want, &one));
	/* The same rows reversed and cut into two parts. */
	ms_row *rev = calloc(m.n, sizeof(*rev));
	for (size_t i = 0; i < m.n; i++)
		rev[i] = m.rows[m.n - 1 - i];
	ms_ledger_set a, b;
	part_ledgers(dir, 2, rev, 101, &a);
	part_ledgers(dir, 3, rev + 101, m.n - 101, &b);
	ms_ledger_set_add(&a, &b);
	assert_true(ms_ledger_set_equal(&want, &a));
	/* One row's latency differs: all three ledgers change (latency is
	 * the latency index's key and a tag of the start_time index). */
	rev[5].latency_ms++;
	ms_ledger_set c;
	part_ledgers(dir, 4, rev, m.n, &c);
	assert_false(ms_ledger_equal(&c.kind[MS_KIND_CORE],
	                             &want.kind[MS_KIND_CORE]));
	assert_false(ms_ledger_equal(&c.kind[MS_KIND_LATENCY],
	                             &want.kind[MS_KIND_LATENCY]));
	assert_false(ms_ledger_equal(&c.kind[MS_KIND_START_TIME],
	                             &want.kind[MS_KIND_START_TIME]));
	rev[5].latency_ms--;
	/* One row's segment ID differs: only the core ledger changes (no
	 * index carries it). */
	rev[5].segment_id = "another-segment";
	part_ledgers(dir, 6, rev, m.n, &c);
	assert_false(ms_ledger_equal(&c.kind[MS_KIND_CORE],
	                             &want.kind[MS_KIND_CORE]));
	assert_true(ms_ledger_equal(&c.kind[MS_KIND_LATENCY],
	                            &want.kind[MS_KIND_LATENCY]));
	assert_true(ms_ledger_equal(&c.kind[MS_KIND_START_TIME],
	                            &want.kind[MS_KIND_START_TIME]));
	/* One row's endpoint differs: every ledger changes, the index
	 * ones through their tags. */
	rev[5].segment_id = m.rows[m.n - 1 - 5].segment_id;
	rev[5].endpoint = "/another/endpoint";
	part_ledgers(dir, 7, rev, m.n, &c);
	for (int k = 0; k < MS_KIND_COUNT; k++)
		assert_false(ms_ledger_equal(&c.kind[k], &want.kind[k]));
	/* Dropping a trace: input minus the dropped rows' ledger. */
	ms_ledger_set dropped, kept;
	ms_ledger_set_init(&dropped);
	for (size_t i = 0; i < 3; i++)
		ms_ledger_set_add_row(&dropped, &m.rows[i]);
	part_ledgers(dir, 5, m.rows + 3, m.n - 3, &kept);
	ms_ledger_set x = want;
	assert_int_equal(ms_ledger_set_sub(&x, &dropped), 0);
	assert_true(ms_ledger_set_equal(&x, &kept));
	free(rev);
	free(m.rows);
	free(m.tid);
	assert_int_equal(ms_fs_rm_tree(dir, NULL), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_order_independent),
		cmocka_unit_test(test_every_field_counts),
		cmocka_unit_test(test_index_rows),
		cmocka_unit_test(test_hash_vectors),
		cmocka_unit_test(test_index_row_tags),
		cmocka_unit_test(test_add_sub_format),
		cmocka_unit_test(test_part_ledgers),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
