/*
 * test_refenc.c - the reference trace part encoding model (fixtures/refenc.c)
 * held to byte vectors computed by hand from the reference's rules, so
 * that bench_refbytes' figure cannot drift from what the reference would
 * write: varints, the lengths lists, the plain-below-128 block rule, the
 * int64 list encodings, dictionary and plain tag columns, tag and block
 * metadata, the accounting of one small part, one of our core parts
 * counted from its file as its rows are, and out of memory reported
 * rather than counted.
 */
#define _XOPEN_SOURCE 700 /* mkdtemp */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "refenc.h"
#include "testdir.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void
expect_bytes(const re_buf *b, const uint8_t *want, size_t n)
{
	assert_int_equal(b->n, n);
	assert_memory_equal(b->p, want, n);
}

#define EXPECT(b, ...)                                                         \
	do {                                                                   \
		static const uint8_t want_[] = { __VA_ARGS__ };                \
		expect_bytes((b), want_, sizeof(want_));                       \
	} while (0)

static void
test_varints(void **state)
{
	(void)state;
	re_buf b = { 0 };

	ms__re_varuint(&b, 0);
	ms__re_varuint(&b, 127);
	ms__re_varuint(&b, 128);
	ms__re_varuint(&b, 300);
	EXPECT(&b, 0x00, 0x7f, 0x80, 0x01, 0xac, 0x02);
	b.n = 0;
	ms__re_varint(&b, 0);
	ms__re_varint(&b, -1);
	ms__re_varint(&b, 1);
	ms__re_varint(&b, 63);
	ms__re_varint(&b, -64);
	ms__re_varint(&b, 64);
	EXPECT(&b, 0x00, 0x01, 0x02, 0x7e, 0x7f, 0x80, 0x01);
	b.n = 0;
	ms__re_bytes(&b, "ab", 2);
	ms__re_bytes(&b, NULL, 0);
	EXPECT(&b, 0x02, 'a', 'b', 0x00);
	ms__re_buf_free(&b);
}

static void
test_int64_bytes(void **state)
{
	(void)state;
	uint8_t o[8];
	static const uint8_t seven[8] = { 0x80, 0, 0, 0, 0, 0, 0, 7 };
	static const uint8_t minus1[8] = { 0x7f, 0xff, 0xff, 0xff,
		                           0xff, 0xff, 0xff, 0xff };
	static const uint8_t minus2[8] = { 0x7f, 0xff, 0xff, 0xff,
		                           0xff, 0xff, 0xff, 0xfe };

	ms__re_int64_bytes(o, 7);
	assert_memory_equal(o, seven, 8);
	ms__re_int64_bytes(o, -1);
	assert_memory_equal(o, minus1, 8);
	ms__re_int64_bytes(o, -2);
	assert_memory_equal(o, minus2, 8);
}

/* The lengths list takes the narrowest width its largest value fits. */
static void
test_uint64_list(void **state)
{
	(void)state;
	re_buf b = { 0 };
	uint64_t a8[] = { 1, 2, 255 }, a16[] = { 256 }, a32[] = { 65536 },
	         a64[] = { 1ull << 32 };

	ms__re_uint64_list(&b, a8, 3);
	EXPECT(&b, 0x00, 0x01, 0x02, 0xff);
	b.n = 0;
	ms__re_uint64_list(&b, a16, 1);
	EXPECT(&b, 0x01, 0x01, 0x00);
	b.n = 0;
	ms__re_uint64_list(&b, a32, 1);
	EXPECT(&b, 0x02, 0x00, 0x01, 0x00, 0x00);
	b.n = 0;
	ms__re_uint64_list(&b, a64, 1);
	EXPECT(&b, 0x03, 0, 0, 0, 0x01, 0, 0, 0, 0);
	ms__re_buf_free(&b);
}

/* Below 128 bytes a block is stored plain: 0, its length, its bytes; from
 * 128 on it is 1, a varuint length and a zstd frame. */
static void
test_block_plain_below_128(void **state)
{
	(void)state;
	re_zstd *z = ms__re_zstd_new(1);
	re_buf b = { 0 };
	uint8_t src[200];

	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)("abcd"[i % 4]);
	ms__re_block(z, &b, src, 127);
	assert_int_equal(b.n, 129);
	assert_int_equal(b.p[0], 0);
	assert_int_equal(b.p[1], 127);
	assert_memory_equal(b.p + 2, src, 127);
	assert_int_equal(ms__re_zstd_frames(z), 0);
	b.n = 0;
	ms__re_block(z, &b, src, 128);
	assert_int_equal(b.p[0], 1);
	assert_true(b.p[1] < 0x80); /* a one-byte length here */
	assert_int_equal(b.n, 2u + b.p[1]);
	static const uint8_t magic[4] = { 0x28, 0xb5, 0x2f, 0xfd };
	assert_memory_equal(b.p + 2, magic, 4);
	assert_int_equal(ms__re_zstd_frames(z), 1);
	assert_int_equal(ms__re_zstd_in_bytes(z), 128);
	b.n = 0;
	ms__re_block(z, &b, NULL, 0);
	EXPECT(&b, 0x00, 0x00);
	ms__re_buf_free(&b);
	ms__re_zstd_free(z);
}

/* Lengths are stored plus one, a nil value as 0: {"ab", nil, ""}. */
static void
test_bytes_block(void **state)
{
	(void)state;
	re_zstd *z = ms__re_zstd_new(1);
	re_buf b = { 0 };
	re_val v[] = { { (const uint8_t *)"ab", 2 },
		       { NULL, 0 },
		       { (const uint8_t *)"", 0 } };

	ms__re_bytes_block(z, &b, v, 3);
	EXPECT(&b, 0x00, 0x04, 0x00, 0x03, 0x00, 0x01, 0x00, 0x02, 'a', 'b');
	ms__re_buf_free(&b);
	ms__re_zstd_free(z);
}

static void
check_list(const int64_t *a, size_t n, enum re_enc want_type,
           const uint8_t *want, size_t wn)
{
	re_buf b = { 0 };
	int64_t first;

	assert_int_equal(ms__re_int64_list(&b, a, n, &first), want_type);
	assert_int_equal(first, a[0]);
	expect_bytes(&b, want, wn);
	ms__re_buf_free(&b);
}

static void
test_int64_lists(void **state)
{
	(void)state;
	static const int64_t cst[] = { 5, 5, 5 }, one[] = { 9 },
	                     dc[] = { 10, 13, 16, 19 }, two[] = { 4, 1 },
	                     mono[] = { 1, 2, 4, 7 }, reset[] = { 10, 1, 20 },
	                     down[] = { 100, 50, 60 };
	static const uint8_t dc_w[] = { 0x06 }, two_w[] = { 0x05 },
	                     mono_w[] = { 0x02, 0x02, 0x02 },
	                     reset_w[] = { 0x11, 0x38 },
	                     down_w[] = { 0x63, 0x14 };

	check_list(cst, 3, RE_ENC_CONST, NULL, 0);
	check_list(one, 1, RE_ENC_CONST, NULL, 0);
	check_list(dc, 4, RE_ENC_DELTA_CONST, dc_w, 1);
	/* Two values always have one constant difference. */
	check_list(two, 2, RE_ENC_DELTA_CONST, two_w, 1);
	/* Rising, not evenly: first difference, then second differences. */
	check_list(mono, 4, RE_ENC_DELTA_OF_DELTA, mono_w, 3);
	/* Not monotonic, but one reset to at most an eighth: still delta of
	 * delta (first difference -9, then 20 - 1 - (-9) = 28). */
	check_list(reset, 3, RE_ENC_DELTA_OF_DELTA, reset_w, 2);
	/* A fall to more than an eighth: plain differences -50, 10. */
	check_list(down, 3, RE_ENC_DELTA, down_w, 2);
}

static void
test_tag_int64(void **state)
{
	(void)state;
	re_buf b = { 0 };
	static const int64_t one[] = { 7 }, dc[] = { 0, 1 };

	assert_int_equal(ms__re_tag_int64(&b, one, 1), RE_ENC_CONST);
	EXPECT(&b, 0x01, 0x80, 0, 0, 0, 0, 0, 0, 0x07);
	b.n = 0;
	assert_int_equal(ms__re_tag_int64(&b, dc, 2), RE_ENC_DELTA_CONST);
	EXPECT(&b, 0x02, 0x80, 0, 0, 0, 0, 0, 0, 0x00, 0x02);
	ms__re_buf_free(&b);
}

/* {"a","b","a","a"}: two values, runs (0,1)(1,1)(0,2) packed two bits
 * each after a 32-bit count of 6 and an 8-bit width of 2. */
static void
test_tag_dictionary(void **state)
{
	(void)state;
	re_zstd *z = ms__re_zstd_new(1);
	re_buf b = { 0 };
	re_val a = { (const uint8_t *)"a", 1 },
	       bb = { (const uint8_t *)"b", 1 };
	re_val v[] = { a, bb, a, a };

	assert_int_equal(ms__re_tag_values(z, &b, v, 4), RE_ENC_DICT);
	EXPECT(&b, 0x0a, 0x02, 0x00, 0x03, 0x00, 0x02, 0x02, 0x00, 0x02, 'a',
	       'b', 0x00, 0x00, 0x00, 0x06, 0x02, 0x15, 0x20);
	ms__re_buf_free(&b);
	ms__re_zstd_free(z);
}

/* 256 distinct values still make a dictionary; a 257th makes the column
 * plain: type 9 and a bytes block. */
static void
test_tag_plain_past_256(void **state)
{
	(void)state;
	re_zstd *z = ms__re_zstd_new(1);
	re_buf b = { 0 }, want = { 0 };
	uint8_t raw[257][2];
	re_val v[257];

	for (int i = 0; i < 257; i++) {
		raw[i][0] = (uint8_t)(i >> 8);
		raw[i][1] = (uint8_t)i;
		v[i].p = raw[i];
		v[i].n = 2;
	}
	assert_int_equal(ms__re_tag_values(z, &b, v, 256), RE_ENC_DICT);
	b.n = 0;
	assert_int_equal(ms__re_tag_values(z, &b, v, 257), RE_ENC_PLAIN);
	ms__re_buf_byte(&want, RE_ENC_PLAIN);
	ms__re_bytes_block(z, &want, v, 257);
	expect_bytes(&b, want.p, want.n);
	ms__re_buf_free(&b);
	ms__re_buf_free(&want);
	ms__re_zstd_free(z);
}

static void
test_tag_meta(void **state)
{
	(void)state;
	re_buf b = { 0 };

	ms__re_tag_meta(&b, 300, 5);
	EXPECT(&b, 0xac, 0x02, 0x05, 0x00, 0x00, 0x00, 0x00);
	ms__re_buf_free(&b);
}

/* The tag entries follow the names' byte order. */
static const char *const names[] = {
	"endpoint_id",         "is_error",   "latency", "service_id",
	"service_instance_id", "start_time", "tags"
};

static void
append_tag_entries(re_buf *w)
{
	for (int t = 0; t < 7; t++) {
		ms__re_buf_byte(w, (uint8_t)strlen(names[t]));
		ms__re_buf_put(w, names[t], strlen(names[t]));
		ms__re_buf_byte(w, (uint8_t)(2 * t)); /* offset */
		ms__re_buf_byte(w, 7);                /* size */
	}
}

static void
test_block_meta(void **state)
{
	(void)state;
	re_block_meta m = { .trace_id = (const uint8_t *)"t1",
		            .trace_id_len = 2,
		            .span_bytes = 10,
		            .count = 2,
		            .min_ts = 1000,
		            .max_ts = -1,
		            .spans_offset = 0,
		            .spans_size = 20 };
	re_buf b = { 0 }, w = { 0 };
	static const uint8_t legacy[] = { 0x02, 't',  0x31, 0x0a,
		                          0x02, 0x00, 0x14, 0x07 };
	static const uint8_t bounds[] = { 0x02, 't',  0x31, 0x0a, 0x02, 0x01,
		                          0xd0, 0x0f, 0x01, 0x00, 0x14, 0x07 };

	for (int t = 0; t < RE_NTAGS; t++) {
		m.tag_offset[t] = (uint64_t)(2 * t);
		m.tag_size[t] = 7;
	}
	ms__re_block_meta_marshal(&b, &m, false);
	ms__re_buf_put(&w, legacy, sizeof(legacy));
	append_tag_entries(&w);
	expect_bytes(&b, w.p, w.n);
	b.n = w.n = 0;
	ms__re_block_meta_marshal(&b, &m, true);
	ms__re_buf_put(&w, bounds, sizeof(bounds));
	append_tag_entries(&w);
	expect_bytes(&b, w.p, w.n);
	for (int t = 0; t < RE_NTAGS; t++)
		assert_string_equal(ms__re_tag_name[t], names[t]);
	ms__re_buf_free(&b);
	ms__re_buf_free(&w);
}

/* One trace of two rows: every file's bytes but the zstd-compressed
 * primary and meta, counted by hand. */
static void
test_small_part(void **state)
{
	(void)state;
	re_zstd *z = ms__re_zstd_new(1);
	re_part p;
	const char *tags0[] = { "a|b" };
	ms_row r[2] = {
		{ .trace_id = (const uint8_t *)"T",
		  .trace_id_len = 1,
		  .segment_id = "s.1",
		  .service = "svc",
		  .instance = "i1",
		  .endpoint = "e",
		  .start_ns = 5000000,
		  .latency_ms = 5,
		  .is_error = false,
		  .tags = tags0,
		  .ntags = 1,
		  .body = (const uint8_t *)"xy",
		  .body_len = 2 },
		{ .trace_id = (const uint8_t *)"T",
		  .trace_id_len = 1,
		  .segment_id = "s.2",
		  .service = "svc",
		  .instance = "i2",
		  .endpoint = "e",
		  .start_ns = 6000000,
		  .latency_ms = 5,
		  .is_error = true,
		  .body = (const uint8_t *)"z",
		  .body_len = 1 },
	};

	ms__re_part_init(&p, z);
	ms__re_part_add_trace(&p, r, 2);
	assert_int_equal(ms__re_part_finish(&p), 0);
	/* IDs: lengths 00 03 00 04 04, values 00 06 "s.1s.2". */
	assert_int_equal(p.c.span_ids, 5 + 8);
	/* Payloads: lengths 00 03 00 03 02, values 00 03 "xyz". */
	assert_int_equal(p.c.spans, 5 + 5);
	/* endpoint {"e","e"}: 0a 01, lengths 00 02 00 02, values 00 01 "e",
	 * runs (0,2): 44 bits, 6 bytes. */
	assert_int_equal(p.c.tag_data[RE_TAG_ENDPOINT], 2 + 4 + 3 + 6);
	/* instance {"i1","i2"}: 0a 02, lengths 00 03 00 03 03, values 00 04
	 * "i1i2", runs (0,1)(1,1): 40 + 4 bits, 6 bytes. */
	assert_int_equal(p.c.tag_data[RE_TAG_INSTANCE], 2 + 5 + 6 + 6);
	/* is_error {0,1}: delta-const, 1 + 8 + 1. */
	assert_int_equal(p.c.tag_data[RE_TAG_IS_ERROR], 10);
	/* latency {5,5}: const, 1 + 8. */
	assert_int_equal(p.c.tag_data[RE_TAG_LATENCY], 9);
	/* start_time: two distinct 8-byte values: 0a 02, lengths 00 03 00 09
	 * 09, values 00 10 + 16, runs (0,1)(1,1): 6 bytes. */
	assert_int_equal(p.c.tag_data[RE_TAG_START], 2 + 5 + 18 + 6);
	/* tags {"a\|b|", nil}: 0a 02, lengths 00 03 00 06 00, values 00 05
	 * + 5, runs (0,1)(1,1): 6 bytes. */
	assert_int_equal(p.c.tag_data[RE_TAG_TAGS], 2 + 5 + 7 + 6);
	for (int t = 0; t < RE_NTAGS; t++)
		assert_int_equal(p.c.tag_meta[t], 6);
	assert_int_equal(p.c.blocks, 1);
	assert_int_equal(p.c.rows, 2);
	assert_int_equal(p.c.dict_columns, 5);
	assert_int_equal(p.c.plain_columns, 0);
	/* The timestamp bounds add to the primary piece, not elsewhere. */
	assert_true(p.c.primary[RE_LEGACY] > 0);
	assert_true(p.c.primary[RE_BOUNDS] > p.c.primary[RE_LEGACY]);
	assert_true(p.c.meta[RE_LEGACY] > 0);
	ms__re_part_release(&p);
	ms__re_zstd_free(z);
}

/* A trace is cut before the row that finds 2 MiB of payloads already in
 * its block. */
static void
test_split_at_2mib(void **state)
{
	(void)state;
	re_zstd *z = ms__re_zstd_new(1);
	re_part p;
	uint8_t *body = calloc(1, 1u << 20);
	ms_row r[3];

	assert_non_null(body);
	for (int i = 0; i < 3; i++)
		r[i] = (ms_row){ .trace_id = (const uint8_t *)"T",
			         .trace_id_len = 1,
			         .segment_id = "s",
			         .service = "s",
			         .instance = "i",
			         .endpoint = "e",
			         .body = body,
			         .body_len = 1u << 20 };
	ms__re_part_init(&p, z);
	ms__re_part_add_trace(&p, r, 3);
	assert_int_equal(ms__re_part_finish(&p), 0);
	assert_int_equal(p.c.blocks, 2);
	assert_int_equal(p.c.split_traces, 1);
	assert_int_equal(p.c.rows, 3);
	ms__re_part_release(&p);
	ms__re_zstd_free(z);
	free(body);
}

/* Rows of three traces, the middle one of three rows in two services;
 * out of trace-ID order, as a writer may be handed them. */
static void
three_traces(ms_row *r, const char **tags)
{
	static const char *const tid[] = { "T2", "T1", "T1", "T1", "T3" };
	static const char *const seg[] = { "a.1", "b.1", "b.1", "b.2", "c.1" };

	for (int i = 0; i < 5; i++)
		r[i] = (ms_row){ .trace_id = (const uint8_t *)tid[i],
			         .trace_id_len = 2,
			         .segment_id = seg[i],
			         .service = i == 3 ? "svc2" : "svc",
			         .instance = "i1",
			         .endpoint = "/get",
			         .start_ns = 1000000 * (int64_t)(10 - i),
			         .latency_ms = 3 * i,
			         .is_error = i == 2,
			         .tags = i % 2 ? tags : NULL,
			         .ntags = i % 2 ? 2 : 0,
			         .body = (const uint8_t *)"payload-of-a-span",
			         .body_len = (uint32_t)(10 + i) };
}

/* One of our core parts counted from its file: the same bytes as its
 * rows added trace by trace in ID order (as the part holds them), and
 * our own payload of it beside. */
static void
test_count_part(void **state)
{
	(void)state;
	re_zstd *z = ms__re_zstd_new(1);
	const char *tags[] = { "http.method=GET", "db|x" };
	ms_row r[5];
	char dir[256], path[300];
	ms_part_meta meta;
	ms_errbuf eb = { { 0 } };
	re_counts got;
	re_part p;
	uint64_t ours = 0;

	three_traces(r, tags);
	assert_non_null(ms_test_mkdtemp(dir, sizeof(dir), "test-refenc"));
	snprintf(path, sizeof(path), "%s/part", dir);
	assert_int_equal(ms_part_write_rows(path, 1, r, 5, NULL, &meta, &eb),
	                 0);
	assert_int_equal(ms__re_count_part(path, NULL, z, &got, &ours, &eb), 0);
	assert_int_equal(ours, ms_part_payload_bytes(MS_KIND_CORE, &meta));

	ms__re_part_init(&p, z);
	ms__re_part_add_trace(&p, r + 1, 3); /* T1 */
	ms__re_part_add_trace(&p, r, 1);     /* T2 */
	ms__re_part_add_trace(&p, r + 4, 1); /* T3 */
	assert_int_equal(ms__re_part_finish(&p), 0);
	assert_int_equal(got.rows, 5);
	assert_int_equal(got.blocks, 3);
	assert_int_equal(ms__re_counts_total(&got, RE_LEGACY),
	                 ms__re_counts_total(&p.c, RE_LEGACY));
	assert_int_equal(ms__re_counts_total(&got, RE_BOUNDS),
	                 ms__re_counts_total(&p.c, RE_BOUNDS));
	assert_memory_equal(got.tag_data, p.c.tag_data, sizeof(got.tag_data));
	ms__re_part_release(&p);

	/* A file that is not a part: its reader's error, nothing counted. */
	snprintf(path, sizeof(path), "%s/none", dir);
	assert_int_not_equal(ms__re_count_part(path, NULL, z, &got, NULL, &eb),
	                     0);
	assert_int_equal(got.rows, 0);
	ms__re_zstd_free(z);
	assert_int_equal(ms_test_rmtree(dir), 0);
}

/* A buffer whose allocation failed drops that write and every later
 * one, and a part that lost a write reports it instead of counting. */
static void
test_out_of_memory(void **state)
{
	(void)state;
	re_zstd *z = ms__re_zstd_new(1);
	const char *tags[] = { "k=v", "w" };
	static const uint64_t two[] = { 1, 2 };
	re_buf b = { .oom = true };
	ms_row r[5];
	re_part p;

	ms__re_varuint(&b, 300);
	ms__re_bytes(&b, "ab", 2);
	ms__re_uint64_list(&b, two, 2);
	assert_int_equal(b.n, 0);
	assert_true(b.oom);
	ms__re_buf_free(&b);
	assert_false(b.oom);

	three_traces(r, tags);
	ms__re_part_init(&p, z);
	ms__re_part_add_trace(&p, r + 1, 3);
	p.prim[RE_BOUNDS].oom = true; /* its growth failed */
	ms__re_part_add_trace(&p, r, 1);
	assert_int_equal(ms__re_part_finish(&p), MS_ERR_NOMEM);
	ms__re_part_release(&p);
	ms__re_zstd_free(z);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_varints),
		cmocka_unit_test(test_int64_bytes),
		cmocka_unit_test(test_uint64_list),
		cmocka_unit_test(test_block_plain_below_128),
		cmocka_unit_test(test_bytes_block),
		cmocka_unit_test(test_int64_lists),
		cmocka_unit_test(test_tag_int64),
		cmocka_unit_test(test_tag_dictionary),
		cmocka_unit_test(test_tag_plain_past_256),
		cmocka_unit_test(test_tag_meta),
		cmocka_unit_test(test_block_meta),
		cmocka_unit_test(test_small_part),
		cmocka_unit_test(test_split_at_2mib),
		cmocka_unit_test(test_count_part),
		cmocka_unit_test(test_out_of_memory),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
