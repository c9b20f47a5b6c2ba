/*
 * test_mem.c - the core allocator family (core/mem.c): counters, peak,
 * failure injection, parent chaining, the growable buffer's limits and the
 * bounded reader.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "ms_err.h"
#include "ms_mem.h"

#include <string.h>

static void
test_counters_and_peak(void **state)
{
	(void)state;
	ms_mem m;
	ms_mem_init(&m, NULL);
	void *a = ms_mem_alloc(&m, 100);
	void *b = ms_mem_calloc(&m, 10, 30);
	assert_non_null(a);
	assert_non_null(b);
	assert_memory_equal(b, (uint8_t[300]){ 0 }, 300);
	ms_mem_stats s;
	ms_mem_stats_get(&m, &s);
	assert_int_equal(s.bytes, 400);
	assert_int_equal(s.count, 2);
	assert_int_equal(s.live, 400);
	assert_int_equal(s.peak_live, 400);
	ms_mem_free(&m, a, 100);
	ms_mem_stats_get(&m, &s);
	assert_int_equal(s.live, 300);
	assert_int_equal(s.peak_live, 400);
	assert_int_equal(s.frees, 1);
	/* realloc counts growth, shrink lowers live, not count */
	b = ms_mem_realloc(&m, b, 300, 1000);
	ms_mem_stats_get(&m, &s);
	assert_int_equal(s.live, 1000);
	assert_int_equal(s.bytes, 1100);
	assert_int_equal(s.count, 2);
	assert_int_equal(s.peak_live, 1000);
	b = ms_mem_realloc(&m, b, 1000, 10);
	ms_mem_stats_get(&m, &s);
	assert_int_equal(s.live, 10);
	ms_mem_reset_peak(&m);
	ms_mem_stats_get(&m, &s);
	assert_int_equal(s.peak_live, 10);
	ms_mem_free(&m, b, 10);
	/* size 0 is a unique, freeable pointer counted as 1 byte */
	void *z1 = ms_mem_alloc(&m, 0), *z2 = ms_mem_alloc(&m, 0);
	assert_non_null(z1);
	assert_ptr_not_equal(z1, z2);
	ms_mem_free(&m, z1, 0);
	ms_mem_free(&m, z2, 0);
	ms_mem_free(&m, NULL, 5);
	ms_mem_stats_get(&m, &s);
	assert_int_equal(s.live, 0);
	/* strdup/dup */
	char *d = ms_mem_strdup(&m, "hello");
	assert_string_equal(d, "hello");
	ms_mem_free(&m, d, 6);
	uint8_t raw[3] = { 1, 2, 3 };
	uint8_t *e = ms_mem_dup(&m, raw, 3);
	assert_memory_equal(e, raw, 3);
	ms_mem_free(&m, e, 3);
	ms_mem_stats_get(&m, &s);
	assert_int_equal(s.live, 0);
	/* calloc overflow is refused and counted as failed */
	assert_null(ms_mem_calloc(&m, SIZE_MAX / 2, 4));
	ms_mem_stats_get(&m, &s);
	assert_int_equal(s.failed, 1);
	/* NULL ms_mem works and counts nothing */
	void *u = ms_mem_alloc(NULL, 8);
	assert_non_null(u);
	ms_mem_free(NULL, u, 8);
	ms_mem_stats_get(NULL, &s);
	assert_int_equal(s.count, 0);
}

static void
test_fail_injection(void **state)
{
	(void)state;
	ms_mem m;
	ms_mem_init(&m, NULL);
	ms_mem_fail_at(&m, 3, false);
	void *p[5];
	for (int i = 0; i < 5; i++)
		p[i] = ms_mem_alloc(&m, 16);
	assert_non_null(p[0]);
	assert_non_null(p[1]);
	assert_null(p[2]);
	assert_non_null(p[3]);
	assert_non_null(p[4]);
	ms_mem_stats s;
	ms_mem_stats_get(&m, &s);
	assert_int_equal(s.failed, 1);
	assert_int_equal(s.count, 4);
	assert_int_equal(s.live, 64);
	/* a failed realloc leaves the block alone */
	ms_mem_fail_at(&m, 1, false);
	void *q = ms_mem_realloc(&m, p[0], 16, 32);
	assert_null(q);
	ms_mem_stats_get(&m, &s);
	assert_int_equal(s.live, 64);
	/* every: n and all after */
	ms_mem_fail_at(&m, 2, true);
	void *a = ms_mem_alloc(&m, 1);
	assert_non_null(a);
	assert_null(ms_mem_alloc(&m, 1));
	assert_null(ms_mem_alloc(&m, 1));
	ms_mem_fail_at(&m, 0, false);
	void *b = ms_mem_alloc(&m, 1);
	assert_non_null(b);
	ms_mem_free(&m, a, 1);
	ms_mem_free(&m, b, 1);
	for (int i = 0; i < 5; i++)
		if (p[i])
			ms_mem_free(&m, p[i], 16);
	ms_mem_stats_get(&m, &s);
	assert_int_equal(s.live, 0);
}

static void
test_parent_chaining(void **state)
{
	(void)state;
	ms_mem parent, child;
	ms_mem_init(&parent, NULL);
	ms_mem_init(&child, &parent);
	void *a = ms_mem_alloc(&child, 50);
	void *b = ms_mem_alloc(&parent, 25);
	ms_mem_stats ps, cs;
	ms_mem_stats_get(&parent, &ps);
	ms_mem_stats_get(&child, &cs);
	assert_int_equal(cs.live, 50);
	assert_int_equal(ps.live, 75);
	assert_int_equal(ps.count, 2);
	/* a failure injected in the parent fails the child's allocation and
	 * is counted in both */
	ms_mem_fail_at(&parent, 1, false);
	assert_null(ms_mem_alloc(&child, 10));
	ms_mem_stats_get(&parent, &ps);
	ms_mem_stats_get(&child, &cs);
	assert_int_equal(cs.failed, 1);
	assert_int_equal(ps.failed, 1);
	/* a failure injected in the child leaves the parent alone */
	ms_mem_fail_at(&child, 1, false);
	void *c = ms_mem_alloc(&parent, 5);
	assert_non_null(c);
	ms_mem_free(&parent, c, 5);
	ms_mem_free(&child, a, 50);
	ms_mem_free(&parent, b, 25);
	ms_mem_stats_get(&parent, &ps);
	ms_mem_stats_get(&child, &cs);
	assert_int_equal(cs.live, 0);
	assert_int_equal(ps.live, 0);
	assert_int_equal(ps.peak_live, 80); /* 50 + 25 + 5 */
}

static void
test_buf(void **state)
{
	(void)state;
	ms_mem m;
	ms_mem_init(&m, NULL);
	ms_buf b;
	ms_buf_init(&b, &m, 100);
	assert_null(b.data);
	assert_int_equal(ms_buf_append(&b, "abc", 3), 0);
	assert_int_equal(ms_buf_append_u8(&b, 'd'), 0);
	assert_int_equal(ms_buf_append_le32(&b, 0x01020304), 0);
	assert_int_equal(ms_buf_append_le64(&b, 0x0102030405060708ull), 0);
	assert_int_equal(b.len, 16);
	assert_memory_equal(b.data, "abcd\x04\x03\x02\x01", 8);
	assert_int_equal(ms_le64(b.data + 8), 0x0102030405060708ull);
	/* the maximum holds and a refused append changes nothing */
	uint8_t big[100] = { 0 };
	assert_int_equal(ms_buf_append(&b, big, 85), MS_ERR_RANGE);
	assert_int_equal(b.len, 16);
	assert_int_equal(ms_buf_append(&b, big, 84), 0);
	assert_int_equal(b.len, 100);
	assert_true(b.cap <= 100);
	assert_int_equal(ms_buf_append_u8(&b, 1), MS_ERR_RANGE);
	assert_int_equal(ms_buf_reserve(&b, SIZE_MAX), MS_ERR_RANGE);
	/* out of memory leaves the buffer as it was */
	ms_buf c;
	ms_buf_init(&c, &m, 0);
	assert_int_equal(ms_buf_append(&c, "x", 1), 0);
	ms_mem_fail_at(&m, 1, false);
	assert_int_equal(ms_buf_append(&c, big, 100), MS_ERR_NOMEM);
	assert_int_equal(c.len, 1);
	assert_int_equal(c.data[0], 'x');
	ms_buf_reset(&c);
	assert_int_equal(c.len, 0);
	/* presize: exactly the size asked, never past the maximum */
	ms_buf e;
	ms_buf_init(&e, &m, 40);
	assert_int_equal(ms_buf_presize(&e, 33), 0);
	assert_int_equal(e.cap, 33);
	assert_int_equal(ms_buf_presize(&e, 20), 0); /* has room: unchanged */
	assert_int_equal(e.cap, 33);
	assert_int_equal(ms_buf_presize(&e, 41), MS_ERR_RANGE);
	assert_int_equal(e.cap, 33);
	ms_buf_release(&e);
	ms_buf_release(&b);
	ms_buf_release(&c);
	ms_buf_release(NULL);
	ms_mem_stats s;
	ms_mem_stats_get(&m, &s);
	assert_int_equal(s.live, 0);
}

static void
test_varint_and_rd(void **state)
{
	(void)state;
	ms_buf b;
	ms_buf_init(&b, NULL, 0);
	const uint64_t uv[] = { 0, 1, 127, 128, 300, UINT32_MAX, UINT64_MAX };
	const int64_t sv[] = { 0, -1, 1, -64, 64, INT64_MIN, INT64_MAX };
	for (size_t i = 0; i < 7; i++)
		assert_int_equal(ms_buf_append_uvarint(&b, uv[i]), 0);
	for (size_t i = 0; i < 7; i++)
		assert_int_equal(ms_buf_append_svarint(&b, sv[i]), 0);
	assert_int_equal(b.data[0], 0);
	assert_int_equal(b.data[3], 0x80); /* 128 = 0x80 0x01 */
	assert_int_equal(b.data[4], 0x01);
	ms_rd r;
	ms_rd_init(&r, b.data, b.len);
	for (size_t i = 0; i < 7; i++)
		assert_int_equal(ms_rd_uvarint(&r), uv[i]);
	for (size_t i = 0; i < 7; i++)
		assert_int_equal(ms_rd_svarint(&r), sv[i]);
	assert_false(r.bad);
	assert_int_equal(r.left, 0);
	/* reading past the end sets bad and returns zeros */
	assert_int_equal(ms_rd_u8(&r), 0);
	assert_true(r.bad);
	ms_buf_release(&b);

	const uint8_t four[4] = { 1, 2, 3, 4 };
	ms_rd_init(&r, four, 4);
	assert_int_equal(ms_rd_le32(&r), 0x04030201);
	assert_false(r.bad);
	ms_rd_init(&r, four, 4);
	assert_int_equal(ms_rd_le64(&r), 0);
	assert_true(r.bad);
	/* once bad, stays bad even if bytes would fit */
	assert_null(ms_rd_bytes(&r, 0));
	ms_rd_init(&r, four, 4);
	assert_non_null(ms_rd_bytes(&r, 4));
	assert_null(ms_rd_bytes(&r, 1));
	/* an unterminated or over-long varint is bad */
	const uint8_t cont[3] = { 0x80, 0x80, 0x80 };
	ms_rd_init(&r, cont, 3);
	ms_rd_uvarint(&r);
	assert_true(r.bad);
	uint8_t eleven[11];
	memset(eleven, 0xff, sizeof(eleven));
	ms_rd_init(&r, eleven, sizeof(eleven));
	ms_rd_uvarint(&r);
	assert_true(r.bad);
	/* The unrolled path (10 or more bytes left) and the checked one
	 * (fewer) read the same values and consume the same bytes, for
	 * every length, and a 10th byte's high bits are dropped by both. */
	for (unsigned k = 0; k <= 64; k++) {
		uint64_t vals[3] = { k == 64 ? UINT64_MAX : (1ull << k) - 1,
			             k < 64 ? 1ull << k : 0,
			             0x5555555555555555u };
		for (int j = 0; j < 3; j++) {
			uint8_t buf[24];
			ms_buf vb;
			ms_buf_init(&vb, NULL, 0);
			assert_int_equal(ms_buf_append_uvarint(&vb, vals[j]),
			                 0);
			size_t len = vb.len;
			memset(buf, 0xee, sizeof(buf));
			memcpy(buf, vb.data, len);
			ms_buf_release(&vb);
			ms_rd fast, slow;
			ms_rd_init(&fast, buf, sizeof(buf));
			ms_rd_init(&slow, buf, len);
			assert_int_equal(ms_rd_uvarint(&fast), vals[j]);
			assert_int_equal(ms_rd_uvarint(&slow), vals[j]);
			assert_int_equal(sizeof(buf) - fast.left, len);
			assert_int_equal(slow.left, 0);
			assert_false(fast.bad || slow.bad);
		}
	}
	uint8_t ten[10];
	memset(ten, 0xff, 9);
	ten[9] = 0x7f;
	ms_rd a, c;
	uint8_t ten_pad[16] = { 0 };
	memcpy(ten_pad, ten, 10);
	ms_rd_init(&c, ten_pad, sizeof(ten_pad));
	ms_rd_init(&a, ten, 9); /* cut short: bad */
	ms_rd_uvarint(&a);
	assert_true(a.bad);
	ms_rd_init(&a, ten, 10);
	assert_int_equal(ms_rd_uvarint(&a), ms_rd_uvarint(&c));
	assert_false(a.bad || c.bad);
	/* le helpers */
	uint8_t t[8];
	ms_put_le64(t, 0x1122334455667788ull);
	assert_int_equal(t[0], 0x88);
	assert_int_equal(ms_le64(t), 0x1122334455667788ull);
	/* checked arithmetic */
	size_t out = 7;
	assert_false(ms_add_ok(SIZE_MAX, 1, &out));
	assert_int_equal(out, 7);
	assert_true(ms_add_ok(1, 2, &out));
	assert_int_equal(out, 3);
	assert_false(ms_mul_ok(SIZE_MAX / 2, 3, &out));
	assert_true(ms_mul_ok(0, SIZE_MAX, &out));
	assert_int_equal(out, 0);
}

static void
test_errors(void **state)
{
	(void)state;
	assert_string_equal(ms_strerror(MS_OK), "success");
	for (int e = MS_ERR_LIMIT; e < 0; e++)
		assert_string_not_equal(ms_strerror(e), "unknown error");
	assert_string_equal(ms_strerror(-999), "unknown error");
	ms_errbuf eb;
	assert_int_equal(ms_fail(&eb, MS_ERR_CORRUPT, "part %s: %d", "x", 7),
	                 MS_ERR_CORRUPT);
	assert_string_equal(eb.msg, "part x: 7");
	assert_int_equal(ms_fail(NULL, MS_ERR_IO, "nothing"), MS_ERR_IO);
}

/* A message naming a path near PATH_MAX (4000 bytes, non-ASCII) keeps its
 * head and its cause around " [...] ", cut between characters: it kept
 * only the first 511 bytes, the path's start, and no cause. */
static void
test_error_long_path(void **state)
{
	(void)state;
	static char path[4001];
	for (size_t i = 0; i + 2 <= 4000; i += 2)
		memcpy(path + i, "\xc3\xa9", 2); /* é */
	ms_errbuf eb;
	assert_int_equal(ms_fail(&eb, MS_ERR_IO,
	                         "event database %s: No such file; expected "
	                         "a database",
	                         path),
	                 MS_ERR_IO);
	size_t n = strlen(eb.msg);
	assert_true(n <= sizeof(eb.msg) - 1 && n > 400);
	assert_true(strncmp(eb.msg, "event database \xc3\xa9", 17) == 0);
	const char *gap = strstr(eb.msg, " [...] ");
	assert_non_null(gap);
	assert_true((unsigned char)gap[-1] == 0xa9); /* a whole é before */
	assert_true((unsigned char)gap[7] == 0xc3);  /* and after */
	const char *end = ": No such file; expected a database";
	assert_string_equal(eb.msg + n - strlen(end), end);
	/* The message may be made from the buffer's own text. */
	ms_fail(&eb, MS_ERR_IO, "short");
	assert_int_equal(ms_fail(&eb, MS_ERR_IO, "again: %s", eb.msg),
	                 MS_ERR_IO);
	assert_string_equal(eb.msg, "again: short");
}

/* The arena: pointers stay put, reset keeps at most `keep` standard
 * chunks, a large request gets its own chunk, trim frees what came before
 * a mark, and every chunk goes back to the ms_mem. */
static void
test_arena(void **state)
{
	(void)state;
	ms_mem m;
	ms_mem_init(&m, NULL);
	ms_arena a;
	ms_arena_init(&a, &m, 1024, 1);
	char *s = ms_arena_strdup(&a, "span");
	assert_string_equal(s, "span");
	assert_null(ms_arena_strdup(&a, NULL));
	uint64_t *w = ms_arena_alloc(&a, 8, 8);
	assert_int_equal((uintptr_t)w % 8, 0);
	*w = 42;
	for (int i = 0; i < 5; i++) /* three more standard chunks */
		assert_non_null(ms_arena_alloc(&a, 700, 1));
	assert_string_equal(s, "span");
	assert_int_equal(*w, 42);
	void *big = ms_arena_alloc(&a, 5000, 16);
	assert_non_null(big);
	assert_int_equal((uintptr_t)big % 16, 0);
	assert_int_equal(a.cold_bytes, 5 * 1024 + 5000);
	assert_int_equal(a.cap_bytes, 5 * 1024 + 5000);
	ms_arena_reset(&a);
	assert_int_equal(a.cap_bytes, 0);
	assert_int_equal(a.nspare, 1); /* one standard chunk kept */
	ms_mem_stats st;
	ms_mem_stats_get(&m, &st);
	assert_true(st.live > 1024 && st.live < 2048);
	assert_non_null(ms_arena_alloc(&a, 100, 1)); /* the spare again */
	assert_int_equal(a.reused_bytes, 1024);
	assert_int_equal(a.cold_bytes, 5 * 1024 + 5000);
	/* Trim: the chunk current at the mark and newer ones stay. */
	assert_non_null(ms_arena_alloc(&a, 1000, 1)); /* a second chunk */
	ms_arena_mark mk = ms_arena_mark_get(&a);
	char *keep = ms_arena_strdup(&a, "kept");
	assert_non_null(ms_arena_alloc(&a, 1000, 1));
	assert_int_equal(a.cap_bytes, 3 * 1024);
	ms_arena_trim(&a, mk);
	assert_int_equal(a.cap_bytes, 2 * 1024);
	assert_string_equal(keep, "kept");
	ms_arena_release(&a);
	ms_mem_stats_get(&m, &st);
	assert_int_equal(st.live, 0);
	/* Out of memory: NULL, the arena unchanged. */
	ms_mem_fail_at(&m, 1, true);
	assert_null(ms_arena_alloc(&a, 10, 1));
	assert_int_equal(a.cap_bytes, 0);
	ms_arena_release(&a);
}

/* ms_arena_charge counts bytes as if they had been handed out: one arena
 * allocating every request and one charging some of them instead count
 * the same used_bytes after every step (padding, chunk ends, requests
 * over the chunk size, trims and resets included), while the charging
 * one allocates less. */
static void
test_arena_charge(void **state)
{
	(void)state;
	ms_mem m;
	ms_mem_init(&m, NULL);
	ms_arena all, some;
	ms_arena_init(&all, &m, 1024, 2);
	ms_arena_init(&some, &m, 1024, 2);
	uint64_t x = 7;
	ms_arena_mark mk = { 0 }, mk2 = { 0 };
	for (int i = 0; i < 3000; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		uint32_t r = (uint32_t)(x >> 33);
		size_t n = r % 7 == 0 ? 1500 + r % 700 : r % 300;
		size_t align = (size_t)1 << (r >> 8) % 5;
		if (r % 97 == 0) {
			ms_arena_reset(&all);
			ms_arena_reset(&some);
			mk = ms_arena_mark_get(&all);
			mk2 = ms_arena_mark_get(&some);
		} else if (r % 31 == 0) {
			mk = ms_arena_mark_get(&all);
			mk2 = ms_arena_mark_get(&some);
		} else if (r % 37 == 0) {
			ms_arena_trim(&all, mk);
			ms_arena_trim(&some, mk2);
			mk = ms_arena_mark_get(&all);
			mk2 = ms_arena_mark_get(&some);
		}
		assert_non_null(ms_arena_alloc(&all, n, align));
		if (r % 3 == 0)
			ms_arena_charge(&some, n, align);
		else
			assert_non_null(ms_arena_alloc(&some, n, align));
		assert_int_equal(all.used_bytes, some.used_bytes);
	}
	assert_true(some.cold_bytes + some.reused_bytes <
	            all.cold_bytes + all.reused_bytes);
	/* By hand: padding, a chunk's end, a charge over the chunk size. */
	ms_arena h;
	ms_arena_init(&h, &m, 1024, 0);
	assert_non_null(ms_arena_alloc(&h, 3, 1));
	assert_int_equal(h.used_bytes, 3);
	ms_arena_charge(&h, 8, 8);
	assert_int_equal(h.used_bytes, 16);           /* 5 bytes of padding */
	assert_non_null(ms_arena_alloc(&h, 1020, 1)); /* a new chunk */
	assert_int_equal(h.used_bytes, 16 + 1020);
	ms_arena_charge(&h, 2000, 8); /* a chunk of its own */
	assert_int_equal(h.used_bytes, 16 + 1020 + 2000);
	assert_non_null(ms_arena_alloc(&h, 1, 16)); /* that one is full */
	assert_int_equal(h.used_bytes, 16 + 1020 + 2000 + 1);
	assert_int_equal(h.cold_bytes, 2 * 1024);
	ms_arena_release(&h);
	/* A failed request counts nothing. */
	uint64_t used = some.used_bytes;
	ms_arena_release(&some);
	ms_arena_release(&all);
	ms_mem_fail_at(&m, 1, true);
	assert_null(ms_arena_alloc(&some, 10, 1));
	assert_int_equal(some.used_bytes, used);
	ms_arena_release(&some);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_counters_and_peak),
		cmocka_unit_test(test_fail_injection),
		cmocka_unit_test(test_parent_chaining),
		cmocka_unit_test(test_buf),
		cmocka_unit_test(test_varint_and_rd),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_error_long_path),
		cmocka_unit_test(test_arena),
		cmocka_unit_test(test_arena_charge),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
