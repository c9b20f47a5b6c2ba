/*
 * test_part.c - the part format: round trips of random parts, projection,
 * raw block copy, Bloom filter, corruption of every file, truncation,
 * missing files, allocation failure, and publication.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "fuzz/fuzz_common.h"
#include "part_testlib.h"
#include "mem_testlib.h"
#include "ms_invariant.h"
#include "ms_fs.h"
#include "ms_sidx.h"

#include <dirent.h>
#include <fcntl.h>
#include <errno.h>

#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static char root[256];

/* pread, as the statically linked core calls it: counted while
 * count_preads is set (one thread at a time). */
static bool count_preads;
static unsigned long preads;

ssize_t
pread(int fd, void *buf, size_t n, off_t off)
{
	if (count_preads)
		preads++;
	return (ssize_t)syscall(SYS_pread64, fd, buf, n, off);
}

/* When set, parts are opened to be read through a window instead of a
 * mapping of their data file (the fallback when mapping fails). */
static bool no_map;
/* The dictionaries parts are opened with (NULL: none). */
static const ms_part_dicts *open_dicts;

static int
open_part(ms_part **out, const char *dir, ms_mem *mem, ms_errbuf *eb)
{
	int rc = ms_part_open_dicts(out, dir, open_dicts, mem, eb);
	if (rc == 0 && no_map)
		ms__part_no_map(*out);
	return rc;
}

static int
setup(void **state)
{
	(void)state;
	tl_tmpdir(root, sizeof(root), "test");
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	tl_rmrf(root);
	return 0;
}

static void
path_of(char *out, size_t n, const char *name)
{
	snprintf(out, n, "%s/%s", root, name);
}

/* Read every block of the part at dir, decoding `cols`, and compare with
 * the rows written (sorted by trace ID, stable). */
static void
check_part(const char *dir, const tl_rows *t, unsigned cols)
{
	ms_errbuf eb = { { 0 } };
	ms_part *p;
	int rc = open_part(&p, dir, NULL, &eb);
	if (rc)
		fail_msg("open: %s", eb.msg);
	const ms_part_meta *m = ms_part_get_meta(p);
	assert_int_equal(m->rows, t->n);
	const ms_row **want = tl_sorted(t);
	ms_part_iter *it;
	assert_int_equal(ms_part_iter_open(&it, p, NULL, NULL, &eb), 0);
	const ms_block_info *bi;
	size_t k = 0;
	while ((rc = ms_part_iter_next(it, &bi, &eb)) == 1) {
		const ms_row *rows;
		rc = ms_part_iter_decode(it, cols, &rows, &eb);
		if (rc)
			fail_msg("decode: %s", eb.msg);
		assert_true(k + bi->nrows <= t->n);
		for (uint32_t i = 0; i < bi->nrows; i++, k++)
			if (!tl_row_eq(&rows[i], want[k], cols))
				fail_msg("row %zu differs", k);
	}
	if (rc)
		fail_msg("next: %s", eb.msg);
	assert_int_equal(k, t->n);
	assert_true(ms_part_iter_bytes_read(it) > 0 || t->n == 0);
	ms_part_iter_close(it);
	assert_int_equal(ms_part_verify(p, &eb), 0);
	free(want);
	ms_part_close(p);
}

static void
write_part(const char *dir, uint64_t id, const tl_rows *t, ms_part_meta *meta)
{
	ms_errbuf eb = { { 0 } };
	int rc = ms_part_write_rows(dir, id, t->rows, t->n, NULL, meta, &eb);
	if (rc)
		fail_msg("write: %s", eb.msg);
}

static void
test_round_trip_basic(void **state)
{
	(void)state;
	tl_rng r = { 1 };
	tl_rows t = { 0 };
	tl_shape s = { .traces = 50,
		       .rows_per_trace = 8,
		       .body_max = 600,
		       .tags_max = 4,
		       .tag_len = 12 };
	tl_gen(&t, &r, &s);
	char dir[300];
	path_of(dir, sizeof(dir), "00000000000000a1");
	ms_part_meta m;
	write_part(dir, 0xa1, &t, &m);
	assert_int_equal(m.id, 0xa1);
	assert_int_equal(m.rows, t.n);
	assert_int_equal(m.traces, 50);
	assert_int_equal(m.blocks, 50);
	assert_int_equal(m.depth, 0);
	int64_t mn = t.rows[0].start_ns, mx = mn;
	for (size_t i = 0; i < t.n; i++) {
		mn = t.rows[i].start_ns < mn ? t.rows[i].start_ns : mn;
		mx = t.rows[i].start_ns > mx ? t.rows[i].start_ns : mx;
	}
	assert_int_equal(m.min_ts, mn);
	assert_int_equal(m.max_ts, mx);
	/* compressed_bytes is the size of the part's one file. */
	struct stat st;
	assert_int_equal(stat(dir, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(m.compressed_bytes, (uint64_t)st.st_size);
	assert_true(m.uncompressed_bytes > m.compressed_bytes);
	check_part(dir, &t, MS_COL_ALL);
	ms_part *p;
	assert_int_equal(open_part(&p, dir, NULL, NULL), 0);
	assert_memory_equal(ms_part_get_meta(p), &m, sizeof(m));
	assert_int_equal(ms_part_kind_of(p), MS_KIND_CORE);
	assert_string_equal(ms_part_dir(p), dir);
	ms_part_close(p);
	tl_free(&t);
}

/* Same rows in another order give a byte-identical part. */
static void
test_deterministic(void **state)
{
	(void)state;
	tl_rng r = { 2 };
	tl_rows t = { 0 };
	tl_shape s = { .traces = 30, .rows_per_trace = 4, .body_max = 100 };
	tl_gen(&t, &r, &s);
	char a[300], b[300];
	path_of(a, sizeof(a), "det-a");
	path_of(b, sizeof(b), "det-b");
	ms_part_meta ma, mb;
	write_part(a, 5, &t, &ma);
	/* Reverse the traces but keep each trace's rows in order. */
	tl_rows u = t;
	u.rows = malloc(t.n * sizeof(ms_row));
	const ms_row **v = tl_sorted(&t);
	for (size_t i = 0; i < t.n; i++)
		u.rows[i] = *v[i];
	write_part(b, 5, &u, &mb);
	assert_memory_equal(&ma, &mb, sizeof(ma));
	free(u.rows);
	free(v);
	tl_free(&t);
}

/* Every zstd level the writer takes round-trips, with units on both sides
 * of the small-unit policy's 16 KiB line in one part (the writer switches
 * parameters between them); a level zstd does not have is refused. */
static void
test_levels(void **state)
{
	(void)state;
	tl_rng r = { 6 };
	tl_rows t = { 0 };
	tl_shape s = { .traces = 40,
		       .rows_per_trace = 6,
		       .body_max = 9000,
		       .tags_max = 3,
		       .tag_len = 20 };
	tl_gen(&t, &r, &s);
	const int levels[] = { 1, 3, 4, 5, 9, 19, -5, ZSTD_minCLevel() };
	for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
		char dir[300], name[32];
		snprintf(name, sizeof(name), "level%d", levels[i]);
		path_of(dir, sizeof(dir), name);
		ms_part_writer_opts o = { .zstd_level = levels[i] };
		ms_part_meta m;
		ms_errbuf eb = { { 0 } };
		if (ms_part_write_rows(dir, 7, t.rows, t.n, &o, &m, &eb))
			fail_msg("level %d: %s", levels[i], eb.msg);
		check_part(dir, &t, MS_COL_ALL);
	}
	char dir[300];
	path_of(dir, sizeof(dir), "level-bad");
	ms_part_writer_opts o = { .zstd_level = ZSTD_maxCLevel() + 1 };
	ms_part_meta m;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_part_write_rows(dir, 7, t.rows, t.n, &o, &m, &eb),
	                 MS_ERR_INVAL);
	assert_non_null(strstr(eb.msg, "zstd level"));
	tl_free(&t);
}

static void
test_single_row_and_shapes(void **state)
{
	(void)state;
	/* One row, one-byte trace ID, NULL strings, no tags, no body. */
	uint8_t tid1 = 0x42;
	ms_row one = { .trace_id = &tid1,
		       .trace_id_len = 1,
		       .span_id = 9,
		       .start_ns = -12345,
		       .latency_ms = UINT32_MAX };
	tl_rows t = { 0 };
	*tl_add(&t) = one;
	char dir[300];
	path_of(dir, sizeof(dir), "one");
	ms_part_meta m;
	write_part(dir, 1, &t, &m);
	assert_int_equal(m.rows, 1);
	assert_int_equal(m.min_ts, -12345);
	check_part(dir, &t, MS_COL_ALL);
	tl_free(&t);

	/* Many traces with 64-byte IDs; long tags; empty bodies. */
	tl_rng r = { 3 };
	tl_shape s = { .traces = 2000, .rows_per_trace = 3, .tid_len = 64 };
	tl_gen(&t, &r, &s);
	path_of(dir, sizeof(dir), "many");
	write_part(dir, 2, &t, &m);
	assert_int_equal(m.traces, 2000);
	check_part(dir, &t, MS_COL_ALL);
	tl_free(&t);

	tl_shape lt = { .traces = 5,
		        .rows_per_trace = 3,
		        .tags_max = 20,
		        .tag_len = 65534,
		        .body_max = 0 };
	tl_gen(&t, &r, &lt);
	const char *biggest = NULL;
	for (size_t i = 0; i < t.n; i++)
		if (t.rows[i].ntags)
			biggest = t.rows[i].tags[0];
	assert_non_null(biggest);
	assert_int_equal(strlen(biggest), 65536);
	path_of(dir, sizeof(dir), "longtags");
	write_part(dir, 3, &t, &m);
	check_part(dir, &t, MS_COL_ALL);
	tl_free(&t);
}

/* A trace past MS_BLOCK_SPLIT_BYTES becomes consecutive blocks. */
static void
test_big_trace_split(void **state)
{
	(void)state;
	tl_rng r = { 4 };
	tl_rows t = { 0 };
	tl_shape small = { .traces = 20, .rows_per_trace = 3, .body_max = 200 };
	tl_gen(&t, &r, &small);
	tl_shape big = { .traces = 1, .rows_per_trace = 1, .body_max = 0 };
	size_t before = t.n;
	tl_gen(&t, &r, &big);
	/* Make it 300 rows of 20 KiB bodies (about 6 MiB). */
	ms_row proto = t.rows[before];
	t.n = before;
	for (int i = 0; i < 300; i++) {
		ms_row *row = tl_add(&t);
		*row = proto;
		uint8_t *b = tl_keep(&t, malloc(20000));
		for (int j = 0; j < 20000; j++)
			b[j] = (uint8_t)(tl_next(&r) & 0x3f);
		row->body = b;
		row->body_len = 20000;
		row->span_id = (uint64_t)i;
		row->start_ns = proto.start_ns + i;
	}
	/* And one single row bigger than a block (4 MiB body). */
	ms_row *huge = tl_add(&t);
	uint8_t htid[4] = { 0xff, 0xff, 0xff, 0xff };
	*huge = proto;
	huge->trace_id = htid;
	huge->trace_id_len = 4;
	uint8_t *hb = tl_keep(&t, calloc(4u << 20, 1));
	huge->body = hb;
	huge->body_len = 4u << 20;
	char dir[300];
	path_of(dir, sizeof(dir), "big");
	ms_part_meta m;
	write_part(dir, 4, &t, &m);
	assert_int_equal(m.traces, 22);
	assert_true(m.blocks >= 20 + 3 + 1);
	check_part(dir, &t, MS_COL_ALL);

	/* Blocks of the big trace are consecutive, none over the limit
	 * unless it holds one row. */
	ms_part *p;
	assert_int_equal(open_part(&p, dir, NULL, NULL), 0);
	ms_part_iter *it;
	assert_int_equal(ms_part_iter_open(&it, p, NULL, NULL, NULL), 0);
	const ms_block_info *bi;
	size_t same = 0;
	uint8_t prev[64];
	uint32_t plen = 0;
	while (ms_part_iter_next(it, &bi, NULL) == 1) {
		if (bi->nrows > 1)
			assert_true(bi->span_bytes <=
			            MS_BLOCK_SPLIT_BYTES + 4096);
		if (plen && ms_trace_id_cmp(prev, plen, bi->trace_id,
		                            bi->trace_id_len) == 0)
			same++;
		memcpy(prev, bi->trace_id, bi->trace_id_len);
		plen = bi->trace_id_len;
	}
	assert_true(same >= 2);
	ms_part_iter_close(it);
	ms_part_close(p);
	tl_free(&t);
}

/* Decoding a subset of columns fills only those columns. */
static void
test_projection(void **state)
{
	(void)state;
	tl_rng r = { 5 };
	tl_rows t = { 0 };
	tl_shape s = { .traces = 40,
		       .rows_per_trace = 5,
		       .body_max = 300,
		       .tags_max = 3,
		       .tag_len = 8 };
	tl_gen(&t, &r, &s);
	char dir[300];
	path_of(dir, sizeof(dir), "proj");
	write_part(dir, 6, &t, NULL);
	const unsigned sets[] = { 0,
		                  MS_COL_BODY,
		                  MS_COL_START | MS_COL_LATENCY,
		                  MS_COL_TAGS | MS_COL_ERROR,
		                  MS_COL_SERVICE,
		                  MS_COL_SPAN_ID | MS_COL_SEGMENT_ID |
		                          MS_COL_INSTANCE | MS_COL_ENDPOINT };
	for (size_t k = 0; k < sizeof(sets) / sizeof(sets[0]); k++) {
		check_part(dir, &t, sets[k]);
		ms_part *p;
		assert_int_equal(open_part(&p, dir, NULL, NULL), 0);
		ms_part_iter *it;
		assert_int_equal(ms_part_iter_open(&it, p, NULL, NULL, NULL),
		                 0);
		const ms_block_info *bi;
		while (ms_part_iter_next(it, &bi, NULL) == 1) {
			const ms_row *rows;
			assert_int_equal(
			        ms_part_iter_decode(it, sets[k], &rows, NULL),
			        0);
			for (uint32_t i = 0; i < bi->nrows; i++) {
				const ms_row *x = &rows[i];
				if (!(sets[k] & MS_COL_BODY))
					assert_true(x->body == NULL &&
					            x->body_len == 0);
				if (!(sets[k] & MS_COL_SERVICE))
					assert_null(x->service);
				if (!(sets[k] & MS_COL_TAGS))
					assert_true(x->ntags == 0 && !x->tags);
				if (!(sets[k] & MS_COL_START))
					assert_int_equal(x->start_ns, 0);
				if (!(sets[k] & MS_COL_SPAN_ID))
					assert_int_equal(x->span_id, 0);
				assert_int_equal(x->trace_id_len,
				                 bi->trace_id_len);
			}
		}
		ms_part_iter_close(it);
		ms_part_close(p);
	}
	tl_free(&t);
}

/* A part file's sections as bytes: "footer", "index", "bloom" or
 * "data", in the order of fz_files. */
static int
section_of(const char *name)
{
	static const char *const names[4] = { "footer", "index", "bloom",
		                              "data" };
	for (int i = 0; i < 4; i++)
		if (!strcmp(name, names[i]))
			return i;
	fail_msg("no section %s", name);
	return -1;
}

/* A copy of section `name` of the part file at path (its footer must be
 * intact). */
static uint8_t *
slurp(const char *path, const char *name, size_t *n)
{
	fz_files f;
	assert_true(fz_read(path, &f));
	int i = section_of(name);
	uint8_t *b = f.f[i];
	*n = f.n[i];
	f.f[i] = NULL;
	fz_free(&f);
	return b;
}

/* A part's payload, as the reference counts a part's compressed size, is
 * its data and block index: not its Bloom filter (a core part's) nor its
 * footer. */
static void
test_payload_bytes(void **state)
{
	(void)state;
	tl_rng r = { 7 };
	tl_rows t = { 0 };
	tl_shape s = { .traces = 300,
		       .rows_per_trace = 3,
		       .body_max = 400,
		       .tags_max = 3,
		       .tag_len = 10 };
	tl_gen(&t, &r, &s);
	char dir[300];
	path_of(dir, sizeof(dir), "00000000000000b7");
	ms_part_meta m;
	write_part(dir, 0xb7, &t, &m);
	size_t nd, ni, nb;
	free(slurp(dir, "data", &nd));
	free(slurp(dir, "index", &ni));
	free(slurp(dir, "bloom", &nb));
	assert_true(nb > 0);
	assert_int_equal(ms_part_payload_bytes(MS_KIND_CORE, &m), nd + ni);
	assert_int_equal(ms_part_payload_bytes(MS_KIND_CORE, &m) + nb + 160,
	                 m.compressed_bytes);
	/* An index part has no Bloom filter: all but its footer. */
	ms_part_meta im = { .compressed_bytes = 1000, .traces = 300 };
	assert_int_equal(ms_part_payload_bytes(MS_KIND_LATENCY, &im), 840);
	assert_int_equal(ms_part_payload_bytes(MS_KIND_START_TIME, &im), 840);
	tl_free(&t);
}

/* Replace section `name` of the part file at path by b[0..n), leaving
 * the others (the footer included) as they are. */
static void
spill(const char *path, const char *name, const uint8_t *b, size_t n)
{
	fz_files f;
	assert_true(fz_read(path, &f));
	int i = section_of(name);
	free(f.f[i]);
	f.f[i] = malloc(n ? n : 1);
	memcpy(f.f[i], b, n);
	f.n[i] = n;
	fz_write(&f, path);
	fz_free(&f);
}

/* The whole part file as bytes. */
static uint8_t *
slurp_file(const char *path, size_t *n)
{
	*n = 0;
	uint8_t *b = (uint8_t *)ms_test_read(path, 0, n);
	assert_non_null(b);
	return b;
}

static void
spill_file(const char *path, const uint8_t *b, size_t n)
{
	assert_int_equal(ms_test_write(path, b, n), 0);
}

/* Projection is real: with unit A damaged (checksums resealed), decoding
 * only the body still works and decoding a unit-A column fails; and the
 * other way round. */
static void
test_projection_skips_units(void **state)
{
	(void)state;
	tl_rng r = { 6 };
	tl_rows t = { 0 };
	tl_shape s = { .traces = 1, .rows_per_trace = 4, .body_max = 500 };
	tl_gen(&t, &r, &s);
	for (int unit = 0; unit < 2; unit++) {
		char dir[300];
		snprintf(dir, sizeof(dir), "%s/unit%d", root, unit);
		write_part(dir, 7, &t, NULL);
		fz_files f;
		assert_true(fz_read(dir, &f));
		uint8_t *blk = f.f[3];
		uint32_t sa = ms_le32(blk + 12);
		/* Break the unit's zstd frame magic. */
		size_t at = unit == 0 ? MS__BLOCK_HDR : MS__BLOCK_HDR + sa;
		for (int k = 0; k < 4; k++)
			blk[at + (size_t)k] ^= 0x5a;
		fz_reseal(&f);
		fz_write(&f, dir);
		fz_free(&f);
		ms_part *p;
		ms_errbuf eb = { { 0 } };
		if (open_part(&p, dir, NULL, &eb))
			fail_msg("%s", eb.msg);
		ms_part_iter *it;
		assert_int_equal(ms_part_iter_open(&it, p, NULL, NULL, NULL),
		                 0);
		const ms_block_info *bi;
		assert_int_equal(ms_part_iter_next(it, &bi, NULL), 1);
		const ms_row *rows;
		unsigned ok = unit == 0 ? MS_COL_BODY : MS_COL_SERVICE;
		unsigned bad = unit == 0 ? MS_COL_SERVICE : MS_COL_BODY;
		assert_int_equal(ms_part_iter_decode(it, 0, &rows, NULL), 0);
		assert_int_equal(ms_part_iter_decode(it, ok, &rows, NULL), 0);
		int rc = ms_part_iter_decode(it, bad, &rows, &eb);
		assert_true(rc < 0);
		assert_non_null(
		        strstr(eb.msg, unit == 0 ? "unit A" : "unit B"));
		ms_part_iter_close(it);
		ms_part_close(p);
	}
	tl_free(&t);
}

/* Copy every block raw into a new part: same rows, same bytes. */
static void
test_raw_copy(void **state)
{
	(void)state;
	tl_rng r = { 7 };
	tl_rows t = { 0 };
	tl_shape s = { .traces = 300,
		       .rows_per_trace = 4,
		       .body_max = 400,
		       .tags_max = 2,
		       .tag_len = 10 };
	tl_gen(&t, &r, &s);
	char src[300], dst[300], mix[300];
	path_of(src, sizeof(src), "raw-src");
	path_of(dst, sizeof(dst), "raw-dst");
	path_of(mix, sizeof(mix), "raw-mix");
	ms_part_meta ms_, md, mm;
	write_part(src, 8, &t, &ms_);
	ms_part *p;
	assert_int_equal(open_part(&p, src, NULL, NULL), 0);
	ms_part_writer *w, *wm;
	ms_errbuf eb = { { 0 } };
	ms_part_writer_opts o = { .depth = 4 };
	assert_int_equal(ms_part_writer_open(&w, dst, 8, &o, &eb), 0);
	assert_int_equal(ms_part_writer_open(&wm, mix, 8, &o, &eb), 0);
	ms_part_iter *it;
	assert_int_equal(ms_part_iter_open(&it, p, NULL, NULL, NULL), 0);
	const ms_block_info *bi;
	int rc, k = 0;
	while ((rc = ms_part_iter_next(it, &bi, &eb)) == 1) {
		ms_raw_block raw;
		assert_int_equal(ms_part_iter_raw(it, &raw, &eb), 0);
		assert_int_equal(raw.info->stored_bytes, bi->stored_bytes);
		if (ms_part_writer_add_raw(w, &raw, &eb))
			fail_msg("%s", eb.msg);
		/* The mixed part decodes every other block and rewrites. */
		if (k++ % 2) {
			assert_int_equal(ms_part_writer_add_raw(wm, &raw, &eb),
			                 0);
		} else {
			const ms_row *rows;
			assert_int_equal(
			        ms_part_iter_decode(it, MS_COL_ALL, &rows, &eb),
			        0);
			if (ms_part_writer_add_trace(wm, rows, bi->nrows, &eb))
				fail_msg("%s", eb.msg);
		}
	}
	assert_int_equal(rc, 0);
	ms_part_iter_close(it);
	assert_int_equal(ms_part_writer_finish(w, &md, &eb), 0);
	assert_int_equal(ms_part_writer_finish(wm, &mm, &eb), 0);
	assert_int_equal(md.checksum, ms_.checksum);
	assert_int_equal(md.rows, ms_.rows);
	assert_int_equal(md.traces, ms_.traces);
	assert_int_equal(md.blocks, ms_.blocks);
	assert_int_equal(md.depth, 4);
	assert_int_equal(mm.checksum, ms_.checksum);
	check_part(dst, &t, MS_COL_ALL);
	check_part(mix, &t, MS_COL_ALL);

	/* A damaged raw block is refused, and the writer is done. */
	assert_int_equal(ms_part_iter_open(&it, p, NULL, NULL, NULL), 0);
	assert_int_equal(ms_part_iter_next(it, &bi, NULL), 1);
	ms_raw_block raw;
	assert_int_equal(ms_part_iter_raw(it, &raw, NULL), 0);
	uint8_t *copy = malloc(bi->stored_bytes);
	memcpy(copy, raw.bytes, bi->stored_bytes);
	copy[bi->stored_bytes - 1] ^= 1;
	ms_raw_block bad = { raw.info, copy, false };
	char d2[300];
	path_of(d2, sizeof(d2), "raw-bad");
	assert_int_equal(ms_part_writer_open(&w, d2, 9, NULL, &eb), 0);
	assert_int_equal(ms_part_writer_add_raw(w, &bad, &eb), MS_ERR_CORRUPT);
	assert_non_null(strstr(eb.msg, "checksum"));
	assert_int_equal(ms_part_writer_add_raw(w, &raw, &eb), MS_ERR_STATE);
	assert_true(ms_part_writer_finish(w, NULL, &eb) < 0);
	struct stat st;
	assert_int_equal(stat(d2, &st), -1);
	free(copy);
	/* Out of order: the second block, then the first. */
	assert_int_equal(ms_part_writer_open(&w, d2, 9, NULL, &eb), 0);
	uint8_t *first = malloc(bi->stored_bytes);
	ms_block_info finfo = *bi;
	memcpy(first, raw.bytes, bi->stored_bytes);
	assert_int_equal(ms_part_iter_next(it, &bi, NULL), 1);
	assert_int_equal(ms_part_iter_raw(it, &raw, NULL), 0);
	assert_int_equal(ms_part_writer_add_raw(w, &raw, &eb), 0);
	ms_raw_block fr = { &finfo, first, false };
	assert_int_equal(ms_part_writer_add_raw(w, &fr, &eb), MS_ERR_INVAL);
	ms_part_writer_abort(w);
	assert_int_equal(stat(d2, &st), -1);
	free(first);
	ms_part_iter_close(it);
	ms_part_close(p);
	tl_free(&t);
}

/* A re-read iterator (the trailing pass of a sampling merge) hands out
 * blocks a writer copies without checking them again, checks every header
 * and the units it decompresses. */
static void
test_reread(void **state)
{
	(void)state;
	tl_rng r = { 17 };
	tl_rows t = { 0 };
	tl_shape s = { .traces = 200, .rows_per_trace = 3, .body_max = 300 };
	tl_gen(&t, &r, &s);
	char src[300], dst[300];
	path_of(src, sizeof(src), "rr-src");
	path_of(dst, sizeof(dst), "rr-dst");
	ms_part_meta ms_, md;
	write_part(src, 21, &t, &ms_);
	ms_part *p;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(open_part(&p, src, NULL, &eb), 0);
	ms_part_writer *w;
	assert_int_equal(ms_part_writer_open(&w, dst, 21, NULL, &eb), 0);
	/* The lead is never advanced here: what the re-read checks by
	 * itself is what this test is about. */
	ms_part_iter *it, *lead;
	assert_int_equal(ms_part_iter_open(&lead, p, NULL, NULL, &eb), 0);
	assert_int_equal(ms_part_iter_open_reread(&it, lead, 4096, &eb), 0);
	const ms_block_info *bi;
	int rc, k = 0;
	while ((rc = ms_part_iter_next(it, &bi, &eb)) == 1) {
		ms_raw_block raw;
		assert_int_equal(ms_part_iter_raw(it, &raw, &eb), 0);
		assert_true(raw.verified);
		if (k++ % 3 == 0) {
			const ms_row *rows;
			assert_int_equal(
			        ms_part_iter_decode(it, MS_COL_ALL, &rows, &eb),
			        0);
			assert_int_equal(rows[0].trace_id_len,
			                 bi->trace_id_len);
		}
		if (ms_part_writer_add_raw(w, &raw, &eb))
			fail_msg("%s", eb.msg);
	}
	assert_int_equal(rc, 0);
	ms_part_iter_close(it);
	ms_part_iter_close(lead);
	assert_int_equal(ms_part_writer_finish(w, &md, &eb), 0);
	assert_int_equal(md.checksum, ms_.checksum);
	assert_int_equal(md.rows, ms_.rows);
	check_part(dst, &t, MS_COL_ALL);

	/* Flip one byte of the first block's unit B, then of its header. */
	size_t n;
	uint8_t *data = slurp(src, "data", &n);
	uint32_t sa = ms_le32(data + 12), sb = ms_le32(data + 20);
	data[MS__BLOCK_HDR + sa + sb / 2] ^= 0x10;
	spill(src, "data", data, n);
	assert_int_equal(ms_part_iter_open(&lead, p, NULL, NULL, &eb), 0);
	assert_int_equal(ms_part_iter_open_reread(&it, lead, 0, &eb), 0);
	assert_int_equal(ms_part_iter_next(it, &bi, &eb), 1);
	const ms_row *rows;
	assert_int_equal(ms_part_iter_decode(it, MS_COL_SERVICE, &rows, &eb),
	                 0);
	assert_int_equal(ms_part_iter_decode(it, MS_COL_BODY, &rows, &eb),
	                 MS_ERR_CORRUPT);
	assert_non_null(strstr(eb.msg, "unit B checksum"));
	ms_part_iter_close(it);
	ms_part_iter_close(lead);
	/* A full iterator refuses the block outright. */
	assert_int_equal(ms_part_iter_open(&it, p, NULL, NULL, &eb), 0);
	assert_int_equal(ms_part_iter_next(it, &bi, &eb), MS_ERR_CORRUPT);
	ms_part_iter_close(it);
	data[MS__BLOCK_HDR + sa + sb / 2] ^= 0x10;
	data[40] ^= 0x01; /* max_ts */
	spill(src, "data", data, n);
	assert_int_equal(ms_part_iter_open(&lead, p, NULL, NULL, &eb), 0);
	assert_int_equal(ms_part_iter_open_reread(&it, lead, 0, &eb), 0);
	assert_int_equal(ms_part_iter_next(it, &bi, &eb), MS_ERR_CORRUPT);
	assert_non_null(strstr(eb.msg, "header checksum"));
	ms_part_iter_close(it);
	ms_part_iter_close(lead);
	free(data);
	ms_part_close(p);
	tl_free(&t);
}

/* Read p1, p2 and p1 again (re-read) in lock step, decoding every block
 * and comparing with the rows written, the three iterators sharing the
 * first one's zstd context or not; returns the bytes they allocated. */
static uint64_t
read_three(ms_part *p1, ms_part *p2, const tl_rows *t1, const tl_rows *t2,
           bool share)
{
	ms_errbuf eb = { { 0 } };
	ms_mem mem;
	ms_mem_init(&mem, NULL);
	ms_part_iter *its[3];
	assert_int_equal(
	        ms_part_iter_open_window(&its[0], p1, &mem, NULL, 0, &eb), 0);
	assert_int_equal(
	        ms_part_iter_open_window(&its[1], p2, &mem, NULL, 0, &eb), 0);
	assert_int_equal(ms_part_iter_open_reread(&its[2], its[0], 0, &eb), 0);
	if (share) {
		ms_part_iter_share_zstd(its[1], its[0]);
		ms_part_iter_share_zstd(its[2], its[0]);
		ms_part_iter_share_zstd(its[0], its[1]); /* refused */
	}
	const tl_rows *want[3] = { t1, t2, t1 };
	const ms_row **sorted[3] = { tl_sorted(t1), tl_sorted(t2), NULL };
	sorted[2] = sorted[0];
	size_t k[3] = { 0, 0, 0 };
	for (int more = 1; more;) {
		more = 0;
		for (int i = 0; i < 3; i++) {
			const ms_block_info *bi;
			int rc = ms_part_iter_next(its[i], &bi, &eb);
			assert_true(rc >= 0);
			if (rc == 0)
				continue;
			more = 1;
			const ms_row *rows;
			if (ms_part_iter_decode(its[i], MS_COL_ALL, &rows, &eb))
				fail_msg("%s", eb.msg);
			for (uint32_t j = 0; j < bi->nrows; j++, k[i]++)
				assert_true(tl_row_eq(&rows[j], sorted[i][k[i]],
				                      MS_COL_ALL));
		}
	}
	for (int i = 0; i < 3; i++)
		assert_int_equal(k[i], want[i]->n);
	ms_part_iter_close(its[1]);
	ms_part_iter_close(its[2]);
	ms_part_iter_close(its[0]); /* the owner last */
	ms_mem_stats st;
	ms_mem_stats_get(&mem, &st);
	assert_int_equal(st.live, 0);
	free(sorted[0]);
	free(sorted[1]);
	return st.bytes;
}

/* Iterators over two parts decode through one zstd context (a merge's
 * iterators share one): the same rows, two contexts fewer allocated. */
static void
test_share_zstd(void **state)
{
	(void)state;
	tl_rng r = { 23 };
	tl_rows t1 = { 0 }, t2 = { 0 };
	tl_shape s = { .traces = 50, .rows_per_trace = 3, .body_max = 200 };
	tl_gen(&t1, &r, &s);
	tl_gen(&t2, &r, &s);
	char d1[300], d2[300];
	path_of(d1, sizeof(d1), "zs-1");
	path_of(d2, sizeof(d2), "zs-2");
	write_part(d1, 31, &t1, NULL);
	write_part(d2, 32, &t2, NULL);
	ms_part *p1, *p2;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(open_part(&p1, d1, NULL, &eb), 0);
	assert_int_equal(open_part(&p2, d2, NULL, &eb), 0);
	uint64_t own = read_three(p1, p2, &t1, &t2, false);
	uint64_t shared = read_three(p1, p2, &t1, &t2, true);
	assert_true(shared + 2 * 64000 < own);
	ms_part_close(p1);
	ms_part_close(p2);
	tl_free(&t1);
	tl_free(&t2);
}

static void
test_writer_rejects(void **state)
{
	(void)state;
	char dir[300];
	path_of(dir, sizeof(dir), "rejects");
	ms_errbuf eb = { { 0 } };
	ms_part_writer *w;
	uint8_t a[2] = { 1, 2 }, b[2] = { 1, 3 };
	ms_row ra = { .trace_id = a, .trace_id_len = 2, .service = "s" };
	ms_row rb = ra;
	rb.trace_id = b;
	ms_row both[2] = { ra, rb };
	struct {
		const ms_row *rows;
		size_t n;
		const char *why;
	} cases[] = {
		{ both, 2, "differs" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(ms_part_writer_open(&w, dir, 1, NULL, &eb), 0);
		assert_int_equal(ms_part_writer_add_trace(w, cases[i].rows,
		                                          cases[i].n, &eb),
		                 MS_ERR_INVAL);
		assert_non_null(strstr(eb.msg, cases[i].why));
		ms_part_writer_abort(w);
	}
	/* Order: b then a is refused; a then a as well. */
	assert_int_equal(ms_part_writer_open(&w, dir, 1, NULL, &eb), 0);
	assert_int_equal(ms_part_writer_add_trace(w, &rb, 1, &eb), 0);
	assert_int_equal(ms_part_writer_add_trace(w, &ra, 1, &eb),
	                 MS_ERR_INVAL);
	assert_non_null(strstr(eb.msg, "order"));
	ms_part_writer_abort(w);
	assert_int_equal(ms_part_writer_open(&w, dir, 1, NULL, &eb), 0);
	assert_int_equal(ms_part_writer_add_trace(w, &ra, 1, &eb), 0);
	assert_int_equal(ms_part_writer_add_trace(w, &ra, 1, &eb),
	                 MS_ERR_INVAL);
	ms_part_writer_abort(w);
	/* Bad lengths. */
	ms_row bad = ra;
	bad.trace_id_len = 65;
	assert_int_equal(ms_part_write_rows(dir, 1, &bad, 1, NULL, NULL, &eb),
	                 MS_ERR_INVAL);
	bad = ra;
	char *longs = calloc(MS_STR_MAX + 2, 1);
	memset(longs, 'x', MS_STR_MAX + 1);
	bad.endpoint = longs;
	assert_int_equal(ms_part_write_rows(dir, 1, &bad, 1, NULL, NULL, &eb),
	                 MS_ERR_RANGE);
	assert_non_null(strstr(eb.msg, "string"));
	free(longs);
	bad = ra;
	bad.body_len = 5;
	assert_int_equal(ms_part_write_rows(dir, 1, &bad, 1, NULL, NULL, &eb),
	                 MS_ERR_RANGE);
	struct stat st;
	assert_int_equal(stat(dir, &st), -1);
	/* The directory must not exist yet. */
	mkdir(dir, 0755);
	assert_int_equal(ms_part_writer_open(&w, dir, 1, NULL, &eb),
	                 MS_ERR_EXISTS);
	assert_null(w);
	rmdir(dir);
	/* An empty part is a part. */
	ms_part_meta m;
	assert_int_equal(ms_part_write_rows(dir, 1, NULL, 0, NULL, &m, &eb), 0);
	assert_int_equal(m.rows, 0);
	assert_int_equal(m.blocks, 0);
	ms_part *p;
	assert_int_equal(open_part(&p, dir, NULL, &eb), 0);
	assert_false(ms_part_may_contain(p, a, 2));
	assert_int_equal(ms_part_verify(p, &eb), 0);
	ms_part_close(p);
}

static void
test_bloom(void **state)
{
	(void)state;
	tl_rng r = { 8 };
	tl_rows t = { 0 };
	tl_shape s = { .traces = 20000, .rows_per_trace = 1, .tid_len = 16 };
	tl_gen(&t, &r, &s);
	char dir[300];
	path_of(dir, sizeof(dir), "bloom");
	write_part(dir, 10, &t, NULL);
	ms_part *p;
	assert_int_equal(open_part(&p, dir, NULL, NULL), 0);
	for (size_t i = 0; i < t.n; i++)
		assert_true(ms_part_may_contain(p, t.rows[i].trace_id,
		                                t.rows[i].trace_id_len));
	/* Random absent IDs: the theory says (1 - e^-0.625)^10 = 0.046%. */
	size_t fp = 0, probes = 400000;
	for (size_t i = 0; i < probes; i++) {
		uint8_t id[17];
		for (int j = 0; j < 17; j++)
			id[j] = (uint8_t)tl_next(&r);
		fp += ms_part_may_contain(p, id, 17);
	}
	double rate = (double)fp / (double)probes;
	print_message("bloom false positives: %zu / %zu = %.4f%%\n", fp, probes,
	              rate * 100);
	assert_true(rate < 0.0015);
	assert_true(fp > 0); /* a filter that never says yes is suspect */
	ms_part_close(p);
	tl_free(&t);
}

/* Live bytes of mem. */
static int64_t
live_of(ms_mem *mem)
{
	ms_mem_stats st;
	ms_mem_stats_get(mem, &st);
	return st.live;
}

/* How write_counting's writer treats its lists. */
enum lists { LISTS_DEFAULT, LISTS_KEEP, LISTS_SPILL_ANYWHERE };

/* Write the traces want[0..n) (one row each, in order) with a writer of
 * its own allocator; *grew: what it held more after the last trace than
 * after the first n / 4. */
static void
write_counting(const char *dir, const ms_row **want, size_t n,
               enum lists how, int64_t *grew)
{
	ms_mem mem;
	ms_mem_init(&mem, NULL);
	ms_part_writer_opts o = { .mem = &mem };
	ms_part_writer *w;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_part_writer_open(&w, dir, 11, &o, &eb), 0);
	if (how == LISTS_KEEP)
		ms__part_writer_keep_lists(w);
	else if (how == LISTS_SPILL_ANYWHERE)
		ms__part_writer_spill_anywhere(w);
	int64_t at_quarter = 0;
	for (size_t i = 0; i < n; i++) {
		if (ms_part_writer_add_trace(w, want[i], 1, &eb))
			fail_msg("add: %s", eb.msg);
		if (i + 1 == n / 4)
			at_quarter = live_of(&mem);
	}
	*grew = live_of(&mem) - at_quarter;
	ms_part_meta m;
	if (ms_part_writer_finish(w, &m, &eb))
		fail_msg("finish: %s", eb.msg);
	assert_int_equal(m.traces, n);
	assert_int_equal(live_of(&mem), 0);
}

/* A writer's block directory (packed, about 3 bytes a block) and trace
 * hashes (16 bytes a trace) do not stay in memory as a part grows: past
 * 64 KiB each they go to an unlinked temporary file and are read back at
 * close, into the very bytes the in-memory lists give. Not on a file
 * system that keeps its files in memory (tmpfs): there the file would be
 * RAM the process no longer counts, so the directory stays in the writer
 * and so do the hashes up to 1 MiB (65,536 traces); past that they are
 * dropped, the Bloom filter built at close from the trace IDs of the
 * part's own block headers, into the same bytes. They had stayed whole:
 * 16 bytes for every trace of a day's finalize. */
/* A refused row says what was expected of it, for each limit: it said
 * "row 0: 1025 tags" or "row 0: body of 5 bytes" and left the reader to
 * guess the rule. */
static void
test_writer_rejects_say_what_was_expected(void **state)
{
	(void)state;
	char dir[300];
	path_of(dir, sizeof(dir), "expected");
	uint8_t a[1] = { 'a' };
	static const char *tags[MS_TAGS_MAX + 1];
	for (size_t i = 0; i <= MS_TAGS_MAX; i++)
		tags[i] = "k=v";
	ms_row ok = { .trace_id = a, .trace_id_len = 1, .service = "s" };
	struct {
		ms_row r;
		int err;
		const char *want;
	} cases[] = {
		{ ok, MS_ERR_INVAL,
		  "row 0: trace ID of 65 bytes, expected 1..64" },
		{ ok, MS_ERR_INVAL,
		  "row 0: trace ID of 1 bytes (NULL), expected" },
		{ ok, MS_ERR_RANGE, "row 0: 1025 tags, at most 1024" },
		{ ok, MS_ERR_RANGE, "row 0: 2 tags (NULL), at most 1024" },
		{ ok, MS_ERR_RANGE,
		  "row 0: body of 16777217 bytes, at most "
		  "16777216" },
		{ ok, MS_ERR_RANGE, "row 0: body of 5 bytes (NULL), at most" },
	};
	cases[0].r.trace_id_len = 65;
	cases[1].r.trace_id = NULL;
	cases[2].r.tags = tags;
	cases[2].r.ntags = MS_TAGS_MAX + 1;
	cases[3].r.ntags = 2;
	static uint8_t body[1];
	cases[4].r.body = body;
	cases[4].r.body_len = MS_BODY_MAX + 1;
	cases[5].r.body_len = 5;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ms_errbuf eb = { { 0 } };
		assert_int_equal(ms_part_write_rows(dir, 1, &cases[i].r, 1,
		                                    NULL, NULL, &eb),
		                 cases[i].err);
		if (!strstr(eb.msg, cases[i].want))
			fail_msg("case %zu: \"%s\" lacks \"%s\"", i, eb.msg,
			         cases[i].want);
	}
	/* The same through the writer's one-row path (dictionary samples). */
	uint8_t *dict = NULL;
	size_t dlen = 0;
	ms_errbuf eb = { { 0 } };
	assert_int_not_equal(ms_part_dict_train(&cases[2].r, 1, 4096, &dict,
	                                        &dlen, NULL, &eb),
	                     0);
	if (!strstr(eb.msg, cases[2].want))
		fail_msg("training: \"%s\" lacks \"%s\"", eb.msg,
		         cases[2].want);
	free(dict);
}

static void
test_writer_lists_bounded(void **state)
{
	(void)state;
	tl_rng r = { 21 };
	tl_rows t = { 0 };
	tl_shape s = { .traces = 100000, .rows_per_trace = 1, .tid_len = 16 };
	tl_gen(&t, &r, &s);
	const ms_row **want = tl_sorted(&t);
	const int64_t n = (int64_t)t.n;
	char a[300], b[300], c[300];
	path_of(a, sizeof(a), "lists-spilled");
	path_of(b, sizeof(b), "lists-kept");
	path_of(c, sizeof(c), "lists-default");
	int64_t grew_a, grew_b, grew_c;
	write_counting(a, want, t.n, LISTS_SPILL_ANYWHERE, &grew_a);
	write_counting(b, want, t.n, LISTS_KEEP, &grew_b);
	write_counting(c, want, t.n, LISTS_DEFAULT, &grew_c);
	bool in_memory = ms_fs_in_memory(c);
	print_message("writer grew by %lld bytes (spilled), %lld (kept) and "
	              "%lld (default, %s) over %lld traces\n",
	              (long long)grew_a, (long long)grew_b, (long long)grew_c,
	              in_memory ? "in-memory fs" : "disk", (long long)n);
	/* Kept: 16 bytes a trace of hashes (and the packed directory), and
	 * more as the lists double. Spilled: no more than a list's buffer.
	 * In memory: the directory (3 bytes a block, doubling), the hashes
	 * given back. */
	assert_true(n > 65536);
	assert_true(grew_b >= (n - n / 4) * 16);
	assert_true(grew_a < (64 << 10));
	if (in_memory)
		assert_true(grew_c < n * 8);
	else
		assert_true(grew_c < (64 << 10));
	size_t na, nb, nc;
	uint8_t *fa = slurp_file(a, &na), *fb = slurp_file(b, &nb),
	        *fc = slurp_file(c, &nc);
	assert_int_equal(na, nb);
	assert_memory_equal(fa, fb, na);
	assert_int_equal(nc, nb);
	assert_memory_equal(fc, fb, nc);
	free(fa);
	free(fc);
	check_part(a, &t, MS_COL_ALL);

	/* The same in the two usual homes of a work dir, whichever file
	 * system each is on here: the directory kept in memory and the
	 * hashes dropped on a tmpfs, both spilled on a disk. */
	static const char *const homes[] = { "/dev/shm", "/var/tmp" };
	for (size_t i = 0; i < 2; i++) {
		if (!ms_fs_is_dir(homes[i]) || access(homes[i], W_OK) != 0)
			continue;
		char d[300];
		snprintf(d, sizeof(d), "%s/ms-test-part-lists-%ld", homes[i],
		         (long)getpid());
		int64_t grew_d;
		write_counting(d, want, t.n, LISTS_DEFAULT, &grew_d);
		if (ms_fs_in_memory(homes[i]))
			assert_true(grew_d < n * 8);
		else
			assert_true(grew_d < (64 << 10));
		size_t nd;
		uint8_t *fd = slurp_file(d, &nd);
		assert_int_equal(nd, nb);
		assert_memory_equal(fd, fb, nd);
		free(fd);
		assert_int_equal(unlink(d), 0);
	}
	free(fb);
	free(want);
	tl_free(&t);
}

/* The writer holds its block directory packed: small blocks of a few
 * rows take 3 bytes each (the stored size and the row count as uvarints,
 * no offset), not the index section's 16; the section written from it is
 * the one the reader checks, whether the directory stayed in memory or
 * was spilled and read back across its 64 KiB reads. */
static void
test_writer_dir_packed(void **state)
{
	(void)state;
	uint8_t rec[MS__DIR_REC_MAX];
	uint32_t a, b;
	static const uint32_t v[] = {
		0, 1, 127, 128, 16383, 16384, UINT32_MAX
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		size_t n = ms__dir_put(rec, v[i], v[6 - i]);
		assert_true(n >= 2 && n <= MS__DIR_REC_MAX);
		assert_int_equal(ms__dir_get(rec, n, &a, &b), (int)n);
		assert_int_equal(a, v[i]);
		assert_int_equal(b, v[6 - i]);
		for (size_t k = 0; k < n; k++)
			assert_int_equal(ms__dir_get(rec, k, &a, &b), 0);
	}
	/* Not a record: a sixth byte, or a fifth above 32 bits. */
	static const uint8_t six[] = { 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 1 };
	static const uint8_t big[] = { 0xff, 0xff, 0xff, 0xff, 0x10, 1 };
	assert_int_equal(ms__dir_get(six, sizeof(six), &a, &b), -1);
	assert_int_equal(ms__dir_get(big, sizeof(big), &a, &b), -1);

	tl_rng r = { 23 };
	tl_rows t = { 0 };
	tl_shape s = { .traces = 30000, .rows_per_trace = 1, .tid_len = 16 };
	tl_gen(&t, &r, &s);
	const ms_row **want = tl_sorted(&t);
	for (int how = 0; how < 2; how++) {
		char dir[300];
		path_of(dir, sizeof(dir), how ? "dir-spilled" : "dir-kept");
		ms_part_writer *w;
		ms_errbuf eb = { { 0 } };
		assert_int_equal(ms_part_writer_open(&w, dir, 13, NULL, &eb),
		                 0);
		if (how)
			ms__part_writer_spill_anywhere(w);
		else
			ms__part_writer_keep_lists(w);
		for (size_t i = 0; i < t.n; i++)
			if (ms_part_writer_add_trace(w, want[i], 1, &eb))
				fail_msg("add: %s", eb.msg);
		uint64_t held = ms__part_writer_dir_bytes(w);
		print_message("block directory of %zu blocks: %llu bytes\n",
		              t.n, (unsigned long long)held);
		assert_true(held >= 2 * t.n && held <= 3 * t.n);
		ms_part_meta m;
		if (ms_part_writer_finish(w, &m, &eb))
			fail_msg("finish: %s", eb.msg);
		assert_int_equal(m.blocks, t.n);
		check_part(dir, &t, MS_COL_ALL);
		unlink(dir);
	}
	free(want);
	tl_free(&t);
}

/* A part of n one-row traces at root/name (its rows in *t). */
static void
write_traces(const char *name, size_t n, uint64_t seed, tl_rows *t,
             char *dir, size_t dn)
{
	tl_rng r = { seed };
	tl_shape s = { .traces = n, .rows_per_trace = 1, .tid_len = 16 };
	tl_gen(t, &r, &s);
	path_of(dir, dn, name);
	write_part(dir, 12, t, NULL);
}

/* Open the part at dir with a counting allocator: what the open part
 * holds, and the most it held while opening. */
static ms_part *
open_counted(const char *dir, ms_mem *mem, int64_t *live, int64_t *peak)
{
	ms_mem_init(mem, NULL);
	ms_part *p;
	ms_errbuf eb = { { 0 } };
	if (open_part(&p, dir, mem, &eb))
		fail_msg("open: %s", eb.msg);
	ms_mem_stats st;
	ms_mem_stats_get(mem, &st);
	*live = st.live;
	*peak = st.peak_live;
	return p;
}

/* Read the whole part with a scan and a re-read trailing it (sharing its
 * mapping, or not when no_map is set); both must reach the end. */
static void
scan_and_reread(ms_part *p, ms_mem *mem)
{
	ms_errbuf eb = { { 0 } };
	ms_part_iter *it, *re;
	assert_int_equal(ms_part_iter_open(&it, p, mem, NULL, &eb), 0);
	assert_int_equal(ms_part_iter_open_reread(&re, it, 0, &eb), 0);
	const ms_block_info *a, *b;
	uint64_t n = 0;
	int rc;
	while ((rc = ms_part_iter_next(it, &a, &eb)) == 1) {
		if (ms_part_iter_next(re, &b, &eb) != 1)
			fail_msg("re-read: %s", eb.msg);
		assert_memory_equal(a->trace_id, b->trace_id, a->trace_id_len);
		n++;
	}
	if (rc)
		fail_msg("scan: %s", eb.msg);
	assert_int_equal(n, ms_part_get_meta(p)->blocks);
	ms_part_iter_close(re);
	ms_part_iter_close(it);
}

/* Scan the part at dir (opened mapped, or through a window of `window`
 * bytes when no_map is set; 0: the default) and say whether every block's
 * raw bytes were stable (1), none were (0) or some were (-1). A stable
 * block's bytes are kept by pointer and compared, at the end of the scan,
 * with a copy taken when it was current: they must not have moved or
 * changed (and, under ASan, must not have been freed). */
static int
raw_stable_scan(const char *dir, bool unmapped, size_t window)
{
	ms_mem mem;
	ms_mem_init(&mem, NULL);
	ms_errbuf eb = { { 0 } };
	ms_part *p;
	if (ms_part_open(&p, dir, &mem, &eb))
		fail_msg("open %s: %s", dir, eb.msg);
	if (unmapped)
		ms__part_no_map(p);
	ms_part_iter *it;
	assert_int_equal(
	        ms_part_iter_open_window(&it, p, &mem, NULL, window, &eb), 0);
	assert_false(ms_part_iter_raw_stable(it)); /* no current block */
	size_t nkept = 0, cap = 64, nstable = 0, nblocks = 0;
	const uint8_t **kept = calloc(cap, sizeof(*kept));
	uint8_t **copy = calloc(cap, sizeof(*copy));
	size_t *len = calloc(cap, sizeof(*len));
	assert_non_null(kept);
	assert_non_null(copy);
	assert_non_null(len);
	const ms_block_info *bi;
	int rc;
	while ((rc = ms_part_iter_next(it, &bi, &eb)) == 1) {
		ms_raw_block raw;
		assert_int_equal(ms_part_iter_raw(it, &raw, &eb), 0);
		nblocks++;
		if (!ms_part_iter_raw_stable(it))
			continue;
		nstable++;
		/* Every 50th block: the first, the middle, past windows. */
		if (nblocks % 50 != 1 || nkept == cap)
			continue;
		kept[nkept] = raw.bytes;
		len[nkept] = (size_t)bi->stored_bytes;
		copy[nkept] = malloc(len[nkept]);
		assert_non_null(copy[nkept]);
		memcpy(copy[nkept], raw.bytes, len[nkept]);
		nkept++;
	}
	if (rc)
		fail_msg("scan %s: %s", dir, eb.msg);
	assert_false(ms_part_iter_raw_stable(it)); /* at the end */
	for (size_t i = 0; i < nkept; i++) {
		assert_memory_equal(kept[i], copy[i], len[i]);
		free(copy[i]);
	}
	free(kept);
	free(copy);
	free(len);
	ms_part_iter_close(it);
	ms_part_close(p);
	assert_true(nblocks > 0);
	return nstable == nblocks ? 1 : nstable == 0 ? 0 : -1;
}

/* ms_part_iter_raw_stable: a raw block's bytes stay put until the
 * iterator closes when the data file is mapped or read whole into the
 * window, and not when a bounded window is refilled. */
static void
test_raw_stable(void **state)
{
	(void)state;
	tl_rows small = { 0 }, big = { 0 };
	char ds[300], db[300];
	write_traces("stable-a", 100, 41, &small, ds, sizeof(ds));
	write_traces("stable-b", 20000, 42, &big, db, sizeof(db));
	ms_part *p;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_part_open(&p, db, NULL, &eb), 0);
	/* Larger than a window (and so mapped unless told not to). */
	assert_true(ms_part_get_meta(p)->compressed_bytes >
	            2 * (uint64_t)MS__READ_WINDOW);
	ms_part_close(p);
	assert_int_equal(ms_part_open(&p, ds, NULL, &eb), 0);
	assert_true(ms_part_get_meta(p)->compressed_bytes < MS__READ_WINDOW);
	ms_part_close(p);
	/* Mapped. */
	assert_int_equal(raw_stable_scan(db, false, 0), 1);
	/* Read through the default window, refilled along the file. */
	assert_int_equal(raw_stable_scan(db, true, 0), 0);
	/* A small file is read whole at the first read, mapped or not. */
	assert_int_equal(raw_stable_scan(ds, false, 0), 1);
	assert_int_equal(raw_stable_scan(ds, true, 0), 1);
	/* ... unless the window is smaller than it. */
	assert_int_equal(raw_stable_scan(ds, true, 4096), 0);
	tl_free(&small);
	tl_free(&big);
}

/* Scan the part at dir mapped; keep from the first block at or past
 * file offset `at` (UINT64_MAX: never) until the first block at or past
 * `until`, then clear the keep. *kept_off: the offset kept; *max_kept:
 * the most released while it was kept; *end: where the last block ends.
 * Returns what is released at the end of the scan. */
static uint64_t
keep_from_scan(const char *dir, uint64_t at, uint64_t until, uint64_t *kept_off,
               uint64_t *max_kept, uint64_t *end)
{
	ms_errbuf eb = { { 0 } };
	ms_part *p;
	if (ms_part_open(&p, dir, NULL, &eb))
		fail_msg("open %s: %s", dir, eb.msg);
	ms_part_iter *it;
	assert_int_equal(ms_part_iter_open(&it, p, NULL, NULL, &eb), 0);
	assert_int_equal(ms_part_iter_raw_offset(it), UINT64_MAX);
	*kept_off = UINT64_MAX;
	*max_kept = 0;
	const uint8_t *kept = NULL, *first = NULL;
	uint8_t *copy = NULL;
	size_t len = 0;
	bool keeping = false;
	uint64_t expect = 0;
	const ms_block_info *bi;
	int rc;
	while ((rc = ms_part_iter_next(it, &bi, &eb)) == 1) {
		ms_raw_block raw;
		assert_int_equal(ms_part_iter_raw(it, &raw, &eb), 0);
		assert_true(ms_part_iter_raw_stable(it)); /* mapped */
		uint64_t off = ms_part_iter_raw_offset(it);
		/* Blocks follow one another from the start of the file,
		 * which is mapped whole. */
		if (!first)
			first = raw.bytes - off;
		assert_int_equal(off, expect);
		assert_ptr_equal(raw.bytes, first + off);
		expect = off + bi->stored_bytes;
		if (keeping && off >= until) {
			ms_part_iter_keep_from(it, UINT64_MAX);
			keeping = false;
		}
		if (keeping && ms__part_iter_released(it) > *max_kept)
			*max_kept = ms__part_iter_released(it);
		if (!kept && off >= at) {
			ms_part_iter_keep_from(it, off);
			*kept_off = off;
			keeping = true;
			kept = raw.bytes;
			len = (size_t)bi->stored_bytes;
			copy = malloc(len);
			assert_non_null(copy);
			memcpy(copy, kept, len);
		}
		if (keeping)
			assert_memory_equal(kept, copy, len);
	}
	if (rc)
		fail_msg("scan %s: %s", dir, eb.msg);
	assert_int_equal(ms_part_iter_raw_offset(it), UINT64_MAX);
	uint64_t released = ms__part_iter_released(it);
	*end = expect;
	free(copy);
	ms_part_iter_close(it);
	ms_part_close(p);
	return released;
}

/* ms_part_iter_keep_from: a mapped scan releases its pages behind it,
 * but never the page holding the kept offset or any after it; cleared,
 * it releases them too. */
static void
test_keep_from(void **state)
{
	(void)state;
	tl_rows t = { 0 };
	char dir[300];
	write_traces("keep-from", 60000, 43, &t, dir, sizeof(dir));
	uint64_t off, max, size, page = 4096;
	/* Nothing kept: the scan releases all but its last stretch. */
	uint64_t rel = keep_from_scan(dir, UINT64_MAX, 0, &off, &max, &size);
	assert_int_equal(off, UINT64_MAX);
	/* Several release steps past the offsets used below. */
	assert_true(size > 8 * MS__MAP_STEP);
	assert_true(rel > size - 2 * MS__MAP_STEP);
	/* Kept from a block past the first release, cleared further on:
	 * the scan released up to that block's page while it was kept,
	 * and past it once cleared. */
	rel = keep_from_scan(dir, 2 * MS__MAP_STEP + 1000, 5 * MS__MAP_STEP,
	                     &off, &max, &size);
	assert_true(off > 2 * MS__MAP_STEP && off < 3 * MS__MAP_STEP);
	assert_int_equal(max, off & ~(page - 1));
	assert_true(rel > size - 2 * MS__MAP_STEP);
	/* Kept from the first block to the end: nothing released. */
	rel = keep_from_scan(dir, 0, UINT64_MAX, &off, &max, &size);
	assert_int_equal(off, 0);
	assert_int_equal(max, 0);
	assert_int_equal(rel, 0);
	unlink(dir);
	tl_free(&t);
}

/* An open core part holds neither its index (16 bytes a block) nor its
 * bloom section (2 bytes a trace): both are checked at open through a
 * bounded buffer; iterators read the entries from the file and the bloom
 * section is read at the first probe. */
static void
test_open_part_holds_no_sections(void **state)
{
	(void)state;
	tl_rows small = { 0 }, big = { 0 };
	char ds[300], db[300];
	write_traces("held-a", 100, 31, &small, ds, sizeof(ds));
	write_traces("held-b", 30000, 32, &big, db, sizeof(db));
	ms_mem ms, mb;
	int64_t live_s, peak_s, live_b, peak_b;
	ms_part *ps = open_counted(ds, &ms, &live_s, &peak_s);
	ms_part *pb = open_counted(db, &mb, &live_b, &peak_b);
	uint64_t sect = 30000 * 16 + ms__bloom_section_bytes(30000);
	print_message("open part of 100 / 30000 blocks holds %lld / %lld "
	              "bytes (sections %llu), peak %lld / %lld\n",
	              (long long)live_s, (long long)live_b,
	              (unsigned long long)sect, (long long)peak_s,
	              (long long)peak_b);
	assert_int_equal(live_b, live_s);
	assert_true(live_b < 1024);
	assert_true(peak_b < (80 << 10) && (uint64_t)peak_b < sect / 4);
	/* The first probe reads the bloom section, and keeps it. */
	const ms_row *r0 = &big.rows[0];
	assert_true(ms_part_may_contain(pb, r0->trace_id, r0->trace_id_len));
	assert_int_equal(live_of(&mb) - live_b, ms__bloom_section_bytes(30000));
	for (size_t i = 0; i < big.n; i++)
		assert_true(ms_part_may_contain(pb, big.rows[i].trace_id,
		                                big.rows[i].trace_id_len));
	assert_int_equal(live_of(&mb) - live_b, ms__bloom_section_bytes(30000));
	/* Iterators walk the entries from the file, mapped or not. */
	scan_and_reread(pb, &mb);
	ms__part_no_map(pb);
	scan_and_reread(pb, &mb);
	check_part(db, &big, MS_COL_ALL);
	ms_part_close(ps);
	ms_part_close(pb);
	assert_int_equal(live_of(&mb), 0);
	tl_free(&small);
	tl_free(&big);
}

/* Parts whose lists spill right at a 64 KiB boundary (4094 index entries
 * after the header) and whose bloom header straddles the open-time read
 * buffer's first 64 KiB (4092 blocks): written and read back whole. */
static void
test_sections_at_buffer_edges(void **state)
{
	(void)state;
	for (size_t n = 4090; n <= 4097; n++) {
		tl_rows t = { 0 };
		char dir[300];
		write_traces("edges", n, 40 + n, &t, dir, sizeof(dir));
		check_part(dir, &t, MS_COL_ALL);
		unlink(dir);
		tl_free(&t);
	}
}

/* Opening a part reads the file's last bytes once: the footer and, when
 * they fit in that read, the index and bloom sections before it (a day
 * opens tens of thousands of parts; it read the footer, then the
 * sections). Parts whose sections just fit and just do not are read
 * back whole, and a larger one reads the sections apart. */
static void
test_open_reads_tail_once(void **state)
{
	(void)state;
	unsigned long fit = 0, apart = 0;
	for (size_t n = 60; n <= 260; n += 8) {
		tl_rows t = { 0 };
		char dir[300];
		write_traces("tail", n, 70 + n, &t, dir, sizeof(dir));
		ms_errbuf eb = { { 0 } };
		ms_part *p;
		preads = 0;
		count_preads = true;
		int rc = open_part(&p, dir, NULL, &eb);
		count_preads = false;
		if (rc)
			fail_msg("open %zu blocks: %s", n, eb.msg);
		ms_part_close(p);
		if (n == 60)
			assert_int_equal(preads, 1);
		fit += preads == 1;
		apart += preads == 2;
		assert_true(preads == 1 || preads == 2);
		check_part(dir, &t, MS_COL_ALL);
		unlink(dir);
		tl_free(&t);
	}
	print_message("opens in one read: %lu, in two: %lu\n", fit, apart);
	assert_true(fit > 0 && apart > 0);
}

/* pwrite n bytes at off of the file at path. */
static void
poke(const char *path, uint64_t off, const void *b, size_t n)
{
	int fd = open(path, O_WRONLY);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, b, n, (off_t)off), (ssize_t)n);
	close(fd);
}

/* The checks open made over the sections it did not keep are made again
 * where the bytes are read back: an entry changed after open fails the
 * iterator at that entry with an error naming the part and its index; a
 * bloom section changed after open filters nothing (every probe says
 * "may contain", the safe answer). A new open fails as it always did. */
static void
test_sections_changed_after_open(void **state)
{
	(void)state;
	tl_rows t = { 0 };
	char dir[300];
	write_traces("000000000000000c", 3000, 33, &t, dir, sizeof(dir));
	ms_errbuf eb = { { 0 } };
	ms_part *p;
	assert_int_equal(open_part(&p, dir, NULL, &eb), 0);
	uint64_t ent = p->data_bytes + MS__INDEX_HDR + 700 * 16;
	uint64_t bits = p->data_bytes + p->index_len + MS__BLOOM_HDR;
	uint8_t zero[64] = { 0 }, big[4];
	ms_put_le32(big, 0xffffffffu);
	poke(dir, ent + 8, big, 4);
	/* Every bit cleared: a filter still in use would say "absent". */
	for (uint64_t o = 0; o + sizeof(zero) <= p->bloom_len - MS__BLOOM_HDR - 8;
	     o += sizeof(zero))
		poke(dir, bits + o, zero, sizeof(zero));
	for (size_t i = 0; i < 50; i++)
		assert_true(ms_part_may_contain(p, t.rows[i].trace_id,
		                                t.rows[i].trace_id_len));
	ms_part_iter *it;
	assert_int_equal(ms_part_iter_open(&it, p, NULL, NULL, &eb), 0);
	const ms_block_info *bi;
	uint64_t n = 0;
	int rc;
	while ((rc = ms_part_iter_next(it, &bi, &eb)) == 1)
		n++;
	assert_int_equal(rc, MS_ERR_CORRUPT);
	assert_int_equal(n, 700);
	assert_non_null(strstr(eb.msg, "part 000000000000000c"));
	assert_non_null(strstr(eb.msg, "index: entry 700"));
	ms_part_iter_close(it);
	ms_part_close(p);
	ms_part *q;
	assert_int_equal(open_part(&q, dir, NULL, &eb), MS_ERR_CORRUPT);
	assert_non_null(strstr(eb.msg, "part 000000000000000c"));
	assert_non_null(strstr(eb.msg, "index: checksum mismatch"));
	tl_free(&t);
}

/* ---- corruption ---- */

static char cdir[300];
static tl_rows ct;

static void
make_corrupt_subject(void)
{
	if (ct.n)
		return;
	tl_rng r = { 9 };
	tl_shape s = { .traces = 12,
		       .rows_per_trace = 3,
		       .body_max = 120,
		       .tags_max = 2,
		       .tag_len = 6 };
	tl_gen(&ct, &r, &s);
	path_of(cdir, sizeof(cdir), "00000000000000c0");
	write_part(cdir, 0xc0, &ct, NULL);
}

/* Open and read everything; return the error (0 if all went well). */
static int
full_read(const char *dir, ms_errbuf *eb)
{
	ms_part *p;
	int rc = open_part(&p, dir, NULL, eb);
	if (rc)
		return rc;
	ms_part_iter *it;
	rc = ms_part_iter_open(&it, p, NULL, NULL, eb);
	if (rc == 0) {
		const ms_block_info *bi;
		while ((rc = ms_part_iter_next(it, &bi, eb)) == 1) {
			const ms_row *rows;
			rc = ms_part_iter_decode(it, MS_COL_ALL, &rows, eb);
			if (rc)
				break;
		}
		ms_part_iter_close(it);
	}
	ms_part_close(p);
	return rc;
}

static void
expect_failure(const char *dir, const char *file, const char *what)
{
	ms_errbuf eb = { { 0 } };
	int rc = full_read(dir, &eb);
	if (rc == 0)
		fail_msg("%s: %s went unnoticed", file, what);
	if (!strstr(eb.msg, file) ||
	    (!strstr(eb.msg, "00000000000000c0") && !strstr(eb.msg, dir)))
		fail_msg("%s: %s: message does not name part and file: %s",
		         file, what, eb.msg);
}

static const char *const part_files[] = { "footer", "index", "bloom",
	                                   "data" };

/* Every byte of every section flipped in turn (the data section every
 * third byte), in the part file itself: caught, and the error names the
 * part and the section the byte lies in. */
static void
test_flip_every_byte(void **state)
{
	(void)state;
	make_corrupt_subject();
	ms_errbuf eb;
	assert_int_equal(full_read(cdir, &eb), 0);
	fz_files f;
	assert_true(fz_read(cdir, &f));
	size_t n;
	uint8_t *orig = slurp_file(cdir, &n);
	/* Where each section starts in the file: data, index, bloom, footer
	 * back to back. */
	size_t at[4];
	at[3] = 0;
	at[1] = f.n[3];
	at[2] = at[1] + f.n[1];
	at[0] = at[2] + f.n[2];
	assert_int_equal(at[0] + f.n[0], n);
	for (int fi = 0; fi < 4; fi++) {
		size_t stride = fi == 3 ? 3 : 1;
		size_t tried = 0;
		for (size_t off = 0; off < f.n[fi]; off += stride) {
			for (int bit = 0; bit < 8; bit += 7) {
				orig[at[fi] + off] ^= (uint8_t)(1u << bit);
				spill_file(cdir, orig, n);
				char what[64];
				snprintf(what, sizeof(what),
				         "bit %d of byte %zu", bit, off);
				expect_failure(cdir, part_files[fi], what);
				orig[at[fi] + off] ^= (uint8_t)(1u << bit);
				tried++;
			}
		}
		spill_file(cdir, orig, n);
		print_message("%s: %zu flips of %zu bytes, all caught\n",
		              part_files[fi], tried, f.n[fi]);
	}
	free(orig);
	fz_free(&f);
	assert_int_equal(full_read(cdir, &eb), 0);
}

/* A part file cut short anywhere, one byte too long, with any one section
 * cut out, or missing: it never opens, and the error names the part and
 * its footer (a write cut short leaves no valid footer). */
static void
test_truncate_and_remove(void **state)
{
	(void)state;
	make_corrupt_subject();
	size_t n;
	uint8_t *orig = slurp_file(cdir, &n);
	size_t step = n / 397 + 1;
	for (size_t len = 0; len < n; len += step) {
		spill_file(cdir, orig, len);
		expect_failure(cdir, "footer", "truncation");
	}
	spill_file(cdir, orig, n - 1);
	expect_failure(cdir, "footer", "truncation by one");
	/* One byte too many is as wrong as one too few. */
	uint8_t *more = malloc(n + 1);
	memcpy(more, orig, n);
	more[n] = 0;
	spill_file(cdir, more, n + 1);
	expect_failure(cdir, "footer", "extension");
	free(more);
	/* A section cut out (the footer left as it was). */
	spill_file(cdir, orig, n);
	for (int fi = 1; fi < 4; fi++) {
		fz_files f;
		assert_true(fz_read(cdir, &f));
		f.n[fi] = 0;
		fz_write(&f, cdir);
		fz_free(&f);
		expect_failure(cdir, "footer", part_files[fi]);
		spill_file(cdir, orig, n);
	}
	/* Missing. */
	unlink(cdir);
	ms_errbuf eb = { { 0 } };
	int rc = full_read(cdir, &eb);
	assert_true(rc < 0);
	assert_non_null(strstr(eb.msg, cdir));
	assert_non_null(strstr(eb.msg, "missing"));
	spill_file(cdir, orig, n);
	free(orig);
	assert_int_equal(full_read(cdir, &eb), 0);
}

/* Checksums resealed: the format checks behind them must still hold. */
static void
reseal_and_expect(const char *file, void (*mutate)(fz_files *),
                  const char *needle)
{
	make_corrupt_subject();
	size_t n;
	uint8_t *keep = slurp_file(cdir, &n);
	fz_files f;
	assert_true(fz_read(cdir, &f));
	mutate(&f);
	fz_reseal(&f);
	fz_write(&f, cdir);
	ms_errbuf eb = { { 0 } };
	int rc = full_read(cdir, &eb);
	if (rc == 0)
		fail_msg("%s: mutation went unnoticed", needle);
	if (!strstr(eb.msg, file) || !strstr(eb.msg, needle))
		fail_msg("expected '%s' in %s error: %s", needle, file, eb.msg);
	spill_file(cdir, keep, n);
	free(keep);
	fz_free(&f);
}

static void
mut_min_gt_max(fz_files *f)
{
	ms_put_le64(f->f[0] + 64, ms_le64(f->f[0] + 72) + 1);
}

static void
mut_rows_absurd(fz_files *f)
{
	ms_put_le64(f->f[0] + 40, UINT64_C(1) << 60);
	ms_put_le64(f->f[0] + 48, UINT64_C(1) << 59);
}

static void
mut_version(fz_files *f)
{
	ms_put_le32(f->f[0] + 8, 99);
}

/* A footer claiming the previous format's version is refused by its
 * version before anything else (a real version 2 part is a directory:
 * test_old_format_refused). */
static void
mut_version_prev(fz_files *f)
{
	ms_put_le32(f->f[0] + 8, MS_PART_FORMAT_VERSION - 1);
}

static void
mut_index_stored_absurd(fz_files *f)
{
	ms_put_le32(f->f[1] + MS__INDEX_HDR + 8, 0xffffffffu);
}

static void
mut_block_raw_absurd(fz_files *f)
{
	ms_put_le32(f->f[3] + 16, 0xfffffff0u);
}

static void
mut_block_rows(fz_files *f)
{
	ms_put_le32(f->f[3] + 8, ms_le32(f->f[3] + 8) + 1);
}

static void
mut_block_order(fz_files *f)
{
	/* Swap the first two blocks and their index entries' lengths. */
	uint8_t *d = f->f[3], *x = f->f[1] + MS__INDEX_HDR;
	uint32_t l0 = ms_le32(x + 8), l1 = ms_le32(x + 16 + 8);
	uint32_t n0 = ms_le32(x + 12), n1 = ms_le32(x + 16 + 12);
	uint8_t *tmp = malloc(l0 + l1);
	memcpy(tmp, d + l0, l1);
	memcpy(tmp + l1, d, l0);
	memcpy(d, tmp, l0 + l1);
	free(tmp);
	ms_put_le32(x + 8, l1);
	ms_put_le32(x + 12, n1);
	ms_put_le64(x + 16, l1);
	ms_put_le32(x + 16 + 8, l0);
	ms_put_le32(x + 16 + 12, n0);
}

static void
mut_bloom_k(fz_files *f)
{
	ms_put_le32(f->f[2] + 12, 7);
}

static void
mut_traces(fz_files *f)
{
	ms_put_le64(f->f[0] + 56, ms_le64(f->f[0] + 56) - 1);
}

static void
test_resealed_format_checks(void **state)
{
	(void)state;
	reseal_and_expect("footer", mut_min_gt_max, "min timestamp");
	reseal_and_expect("footer", mut_rows_absurd, "index size");
	reseal_and_expect("footer", mut_version, "version");
	/* A part of the previous format is refused naming both versions. */
	char prev[64];
	snprintf(prev, sizeof(prev), "format version %d, expected %d",
	         MS_PART_FORMAT_VERSION - 1, MS_PART_FORMAT_VERSION);
	reseal_and_expect("footer", mut_version_prev, prev);
	reseal_and_expect("index", mut_index_stored_absurd, "entry 0");
	reseal_and_expect("data", mut_block_raw_absurd, "too large");
	reseal_and_expect("data", mut_block_rows, "index says");
	reseal_and_expect("data", mut_block_order, "order");
	reseal_and_expect("bloom", mut_bloom_k, "header");
	reseal_and_expect("bloom", mut_traces, "header");
}

/* Random mutations with resealed checksums: never a crash, always either
 * a clean read or an error with a message (ASan watches for the rest). */
static void
test_resealed_random(void **state)
{
	(void)state;
	make_corrupt_subject();
	fz_files base;
	assert_true(fz_read(cdir, &base));
	tl_rng r = { 10 };
	size_t failures = 0, rounds = 3000;
	for (size_t k = 0; k < rounds; k++) {
		fz_files f = base;
		for (int i = 0; i < 4; i++) {
			f.f[i] = malloc(base.n[i]);
			memcpy(f.f[i], base.f[i], base.n[i]);
		}
		int nm = 1 + (int)tl_below(&r, 3);
		for (int m = 0; m < nm; m++) {
			int fi = (int)tl_below(&r, 4);
			size_t off = tl_below(&r, f.n[fi]);
			f.f[fi][off] = (uint8_t)tl_next(&r);
		}
		fz_reseal(&f);
		fz_write(&f, cdir);
		ms_errbuf eb = { { 0 } };
		int rc = full_read(cdir, &eb);
		if (rc) {
			failures++;
			assert_true(eb.msg[0] != 0);
		}
		fz_free(&f);
	}
	print_message("resealed mutations: %zu of %zu rejected\n", failures,
	              rounds);
	fz_write(&base, cdir);
	fz_free(&base);
}

/* ---- allocation failure ---- */

/* Rows to write, and the part's path (allocw_write). */
typedef struct alloc_write {
	const tl_rows *t;
	char dir[300];
} alloc_write;

/* Write a's rows with mem; on failure no part file is left. */
static int
allocw_write(void *ctx, ms_mem *mem, ms_errbuf *eb)
{
	alloc_write *a = ctx;
	ms_part_writer_opts o = { .mem = mem };
	int rc = ms_part_write_rows(a->dir, 1, a->t->rows, a->t->n, &o, NULL,
	                            eb);
	struct stat sb;
	if (rc != 0 && stat(a->dir, &sb) == 0)
		fail_msg("failed (%s), yet %s is there", eb->msg, a->dir);
	return rc;
}

/* A part written out of memory at each of its allocations in turn fails
 * naming the part and saying what the memory was for and how many
 * bytes, leaves no file and nothing allocated; the writer's buffers said
 * only "part X (...): data: out of memory". */
static void
test_alloc_failure_write(void **state)
{
	(void)state;
	tl_rng r = { 11 };
	tl_rows t = { 0 };
	tl_shape s = { .traces = 30,
		       .rows_per_trace = 4,
		       .body_max = 300,
		       .tags_max = 2,
		       .tag_len = 5 };
	tl_gen(&t, &r, &s);
	alloc_write a = { .t = &t };
	path_of(a.dir, sizeof(a.dir), "allocw");
	assert_true(tl_mem_sweep(allocw_write, &a, "part 0000000000000001") >
	            5);
	check_part(a.dir, &t, MS_COL_ALL);
	tl_free(&t);
}

static void
test_alloc_failure_read(void **state)
{
	(void)state;
	tl_rng r = { 12 };
	tl_rows t = { 0 };
	tl_shape s = { .traces = 30,
		       .rows_per_trace = 4,
		       .body_max = 300,
		       .tags_max = 2,
		       .tag_len = 5 };
	tl_gen(&t, &r, &s);
	char dir[300];
	path_of(dir, sizeof(dir), "allocr");
	write_part(dir, 1, &t, NULL);
	size_t failed = 0;
	for (uint64_t n = 1;; n++) {
		ms_mem mem;
		ms_mem_init(&mem, NULL);
		ms_mem_fail_at(&mem, n, false);
		ms_errbuf eb = { { 0 } };
		ms_part *p;
		int rc = open_part(&p, dir, &mem, &eb);
		size_t rows = 0;
		if (rc == 0) {
			ms_part_iter *it;
			rc = ms_part_iter_open(&it, p, &mem, NULL, &eb);
			if (rc == 0) {
				const ms_block_info *bi;
				while ((rc = ms_part_iter_next(it, &bi, &eb)) ==
				       1) {
					const ms_row *rw;
					rc = ms_part_iter_decode(it, MS_COL_ALL,
					                         &rw, &eb);
					if (rc)
						break;
					rows += bi->nrows;
				}
				ms_part_iter_close(it);
			}
			ms_part_close(p);
		}
		ms_mem_stats st;
		ms_mem_stats_get(&mem, &st);
		assert_int_equal(st.live, 0);
		if (st.failed == 0) {
			assert_int_equal(rc, 0);
			assert_int_equal(rows, t.n);
			break;
		}
		failed++;
		if (rc != MS_ERR_NOMEM)
			fail_msg("allocation %llu: rc %d (%s)",
			         (unsigned long long)n, rc, eb.msg);
	}
	assert_true(failed > 3);
	tl_free(&t);
}

/* Out of memory for the open part's handle, then for its path: the
 * message names the part and says what the memory was for (it said
 * "part X: open: out of memory"). */
static void
test_open_out_of_memory_says_what_for(void **state)
{
	(void)state;
	tl_rng r = { 14 };
	tl_rows t = { 0 };
	tl_shape s = { .traces = 3, .rows_per_trace = 2, .body_max = 50 };
	tl_gen(&t, &r, &s);
	char dir[300];
	path_of(dir, sizeof(dir), "allocopen");
	write_part(dir, 1, &t, NULL);
	const char *what[] = { "its handle", "its path" };
	for (uint64_t n = 1; n <= 2; n++) {
		ms_mem mem;
		ms_mem_init(&mem, NULL);
		ms_mem_fail_at(&mem, n, false);
		ms_errbuf eb = { { 0 } };
		ms_part *p = (ms_part *)0x1;
		assert_int_equal(ms_part_open(&p, dir, &mem, &eb),
		                 MS_ERR_NOMEM);
		assert_null(p);
		tl_assert_no_live(&mem);
		char want[400];
		snprintf(want, sizeof(want),
		         "part %s: open: out of memory for %s (", dir,
		         what[n - 1]);
		if (strncmp(eb.msg, want, strlen(want)) != 0)
			fail_msg("got \"%s\"; expected \"%s...\"", eb.msg,
			         want);
		assert_non_null(strstr(eb.msg, " bytes)"));
	}
	tl_free(&t);
}

/* Memory and I/O are counted where the caller says. */
static void
test_counters(void **state)
{
	(void)state;
	tl_rng r = { 13 };
	tl_rows t = { 0 };
	tl_shape s = { .traces = 200, .rows_per_trace = 4, .body_max = 500 };
	tl_gen(&t, &r, &s);
	char dir[300];
	path_of(dir, sizeof(dir), "counters");
	ms_mem mem;
	ms_mem_init(&mem, NULL);
	ms_io io = { 0 };
	ms_part_writer_opts o = { .mem = &mem, .io = &io };
	ms_part_meta m;
	ms_errbuf eb;
	assert_int_equal(ms_part_write_rows(dir, 1, t.rows, t.n, &o, &m, &eb),
	                 0);
	ms_mem_stats st;
	ms_mem_stats_get(&mem, &st);
	assert_int_equal(st.live, 0);
	assert_true(st.peak_live > 100000); /* zstd's context is counted */
	assert_int_equal(atomic_load(&io.bytes_written), m.compressed_bytes);
	/* One fsync, of the part's one file, at close (its directory is
	 * synced by the publication that renames it in). */
	assert_int_equal(atomic_load(&io.fsyncs), 1);
	ms_io rio = { 0 };
	ms_part *p;
	assert_int_equal(open_part(&p, dir, NULL, &eb), 0);
	ms_part_iter *it;
	assert_int_equal(ms_part_iter_open(&it, p, &mem, &rio, &eb), 0);
	const ms_block_info *bi;
	/* Without decoding, nothing is decompressed. */
	ms_mem_stats before;
	ms_mem_stats_get(&mem, &before);
	while (ms_part_iter_next(it, &bi, &eb) == 1)
		;
	ms_mem_stats after;
	ms_mem_stats_get(&mem, &after);
	/* A data file this small is not mapped but read whole: iterating
	 * allocates its window once, the size of the file, and reads it
	 * once. */
	assert_true(p->data_bytes <= MS__MAP_MIN);
	assert_int_equal(after.count - before.count, 1);
	assert_int_equal(after.bytes - before.bytes, p->data_bytes);
	assert_int_equal(ms_part_iter_bytes_read(it), p->data_bytes);
	uint64_t data_bytes = m.compressed_bytes;
	assert_int_equal(ms_part_iter_bytes_read(it),
	                 atomic_load(&rio.bytes_read));
	assert_true(ms_part_iter_bytes_read(it) < data_bytes);
	assert_true(ms_part_iter_bytes_read(it) > data_bytes / 2);
	ms_part_iter_close(it);
	ms_part_close(p);

	/* no_sync (bulk builds that syncfs once): the same bytes, the same
	 * rows, not one fsync, for the core part and an index part. */
	char dir2[300], dir3[300];
	path_of(dir2, sizeof(dir2), "counters-nosync");
	path_of(dir3, sizeof(dir3), "counters-nosync-latency");
	ms_io nio = { 0 };
	ms_part_writer_opts no = { .io = &nio, .no_sync = true };
	ms_part_meta m2, m3;
	assert_int_equal(
	        ms_part_write_rows(dir2, 1, t.rows, t.n, &no, &m2, &eb), 0);
	assert_int_equal(ms_sidx_write_rows(MS_KIND_LATENCY, dir3, 1, t.rows,
	                                    t.n, &no, &m3, &eb),
	                 0);
	assert_int_equal(atomic_load(&nio.fsyncs), 0);
	assert_int_equal(m2.checksum, m.checksum);
	assert_int_equal(m2.rows, m.rows);
	assert_int_equal(open_part(&p, dir2, NULL, &eb), 0);
	assert_int_equal(ms_part_verify(p, &eb), 0);
	ms_part_close(p);
	tl_free(&t);
}

/* A part of n traces of 4 rows with bodies up to 500 bytes (seed: its
 * rows, in *t), written at root/name (dir) and opened. */
static ms_part *
write_open(tl_rows *t, uint64_t seed, size_t n, const char *name, char *dir,
           size_t dn)
{
	tl_rng r = { seed };
	tl_shape s = { .traces = n, .rows_per_trace = 4, .body_max = 500 };
	tl_gen(t, &r, &s);
	path_of(dir, dn, name);
	ms_part_meta m;
	ms_errbuf eb;
	assert_int_equal(
	        ms_part_write_rows(dir, 1, t->rows, t->n, NULL, &m, &eb), 0);
	ms_part *p;
	assert_int_equal(open_part(&p, dir, NULL, &eb), 0);
	return p;
}

/* A data file over MS__MAP_MIN is mapped, not read: iterating it
 * allocates nothing, and counts what window reads would have read. */
static void
test_large_file_mapped(void **state)
{
	(void)state;
	tl_rows t = { 0 };
	char dir[300];
	ms_errbuf eb;
	ms_part *p = write_open(&t, 17, 3000, "mapped", dir, sizeof(dir));
	assert_true(p->data_bytes > MS__MAP_MIN);
	ms_mem mem;
	ms_mem_init(&mem, NULL);
	ms_io io = { 0 };
	ms_part_iter *it;
	assert_int_equal(ms_part_iter_open(&it, p, &mem, &io, &eb), 0);
	ms_mem_stats before, after;
	ms_mem_stats_get(&mem, &before);
	const ms_block_info *bi;
	uint64_t rows = 0;
	while (ms_part_iter_next(it, &bi, &eb) == 1)
		rows += bi->nrows;
	ms_mem_stats_get(&mem, &after);
	assert_int_equal(rows, t.n);
	assert_int_equal(after.count - before.count, 0);
	assert_int_equal(ms_part_iter_bytes_read(it),
	                 atomic_load(&io.bytes_read));
	assert_true(ms_part_iter_bytes_read(it) <= p->data_bytes);
	ms_part_iter_close(it);
	ms_part_close(p);
	tl_free(&t);
}

/* Resident KiB of this process's mappings of the file at path (the sum of
 * their Rss lines in /proc/self/smaps); -1 when it has none. */
static long
mapped_rss_kib(const char *path)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	if (!f)
		return -1;
	char line[4400];
	size_t plen = strlen(path);
	bool in = false, seen = false;
	long kib = 0;
	while (fgets(line, sizeof(line), f)) {
		size_t n = strlen(line);
		if (n && line[n - 1] == '\n')
			line[--n] = '\0';
		bool header = (line[0] >= '0' && line[0] <= '9') ||
		              (line[0] >= 'a' && line[0] <= 'f');
		if (header) {
			in = n >= plen && strcmp(line + n - plen, path) == 0;
			seen |= in;
		} else if (in && strncmp(line, "Rss:", 4) == 0) {
			kib += strtol(line + 4, NULL, 10);
		}
	}
	fclose(f);
	return seen ? kib : -1;
}

/* A mapped part is released behind its reader as it is read, whatever its
 * size: after a whole scan, a part of under a MiB and one of several
 * MiB each keep no more than the read-ahead and a little behind it
 * resident in this process (the pages stay in the page cache). */
static void
test_mapping_released_behind(void **state)
{
	(void)state;
	static const size_t traces[] = { 1200, 6000 };
	for (size_t k = 0; k < 2; k++) {
		tl_rng r = { 41 + k };
		tl_rows t = { 0 };
		tl_shape s = { .traces = traces[k], .rows_per_trace = 4,
			       .body_max = 500 };
		tl_gen(&t, &r, &s);
		char dir[300], name[32];
		snprintf(name, sizeof(name), "released-%zu", k);
		path_of(dir, sizeof(dir), name);
		ms_part_meta m;
		ms_errbuf eb;
		assert_int_equal(
		        ms_part_write_rows(dir, 1, t.rows, t.n, NULL, &m, &eb), 0);
		ms_part *p;
		assert_int_equal(open_part(&p, dir, NULL, &eb), 0);
		if (no_map) {
			ms_part_close(p);
			tl_free(&t);
			continue;
		}
		assert_true(p->data_bytes > MS__MAP_MIN);
		ms_part_iter *it;
		assert_int_equal(ms_part_iter_open(&it, p, NULL, NULL, &eb), 0);
		const ms_block_info *bi;
		uint64_t rows = 0;
		while (ms_part_iter_next(it, &bi, &eb) == 1)
			rows += bi->nrows;
		assert_int_equal(rows, t.n);
		long kib = mapped_rss_kib(dir);
		print_message("part of %llu KiB: %ld KiB resident after a "
		              "scan\n",
		              (unsigned long long)(p->data_bytes >> 10), kib);
		assert_true(kib >= 0);
		assert_true((uint64_t)kib * 1024 <=
		            MS__MAP_AHEAD + MS__MAP_KEEP + MS__MAP_STEP);
		ms_part_iter_close(it);
		ms_part_close(p);
		tl_free(&t);
	}
}

/* While a mapped part is read, no more of it stays resident than the
 * read-ahead and one release step behind the reader: 384 KiB at any
 * point of a scan of a 4 MiB part, measured every few blocks (a merge
 * holds this much of each of its inputs, and a longer day gives its
 * finalize more inputs). */
static void
test_mapping_resident_while_read(void **state)
{
	(void)state;
	if (no_map)
		return;
	tl_rows t = { 0 };
	char dir[300];
	ms_errbuf eb;
	ms_part *p = write_open(&t, 43, 6000, "resident-while-read", dir,
	                        sizeof(dir));
	assert_true(p->data_bytes > (3u << 20));
	ms_part_iter *it;
	assert_int_equal(ms_part_iter_open(&it, p, NULL, NULL, &eb), 0);
	const ms_block_info *bi;
	long most = 0;
	uint64_t n = 0;
	while (ms_part_iter_next(it, &bi, &eb) == 1) {
		if (n++ % 8)
			continue;
		long kib = mapped_rss_kib(dir);
		assert_true(kib >= 0);
		most = kib > most ? kib : most;
	}
	print_message("part of %llu KiB: at most %ld KiB resident while "
	              "read\n",
	              (unsigned long long)(p->data_bytes >> 10), most);
	assert_true(most > 0 && most <= 384);
	ms_part_iter_close(it);
	ms_part_close(p);
	unlink(dir);
	tl_free(&t);
}

/* The iterator modes of part_reader.c's mode table: an iterator checks
 * everything unless told to defer units before its first block; one
 * trailing a lead re-reads, whatever it is told. */
static void
test_iter_modes(void **state)
{
	(void)state;
	make_corrupt_subject();
	ms_part *p;
	ms_errbuf eb;
	assert_int_equal(open_part(&p, cdir, NULL, &eb), 0);
	ms_part_iter *lead, *it;
	assert_int_equal(ms_part_iter_open(&lead, p, NULL, NULL, &eb), 0);
	assert_string_equal(ms__part_iter_mode_name(lead), "check");
	ms_part_iter_defer_units(lead);
	assert_string_equal(ms__part_iter_mode_name(lead), "defer");
	assert_int_equal(ms_part_iter_open_reread(&it, lead, 0, &eb), 0);
	assert_string_equal(ms__part_iter_mode_name(it), "reread");
	ms_part_iter_defer_units(it);
	assert_string_equal(ms__part_iter_mode_name(it), "reread");
	const ms_block_info *bi;
	assert_int_equal(ms_part_iter_next(lead, &bi, &eb), 1);
	assert_int_equal(ms_part_iter_next(it, &bi, &eb), 1);
	ms_part_iter_close(it);
	ms_part_iter_close(lead);
	/* Too late to defer once a block was returned. */
	assert_int_equal(ms_part_iter_open(&it, p, NULL, NULL, &eb), 0);
	assert_int_equal(ms_part_iter_next(it, &bi, &eb), 1);
	ms_part_iter_defer_units(it);
	assert_string_equal(ms__part_iter_mode_name(it), "check");
	ms_part_iter_close(it);
	ms_part_close(p);
}

static void
test_iter_states(void **state)
{
	(void)state;
	make_corrupt_subject();
	ms_part *p;
	ms_errbuf eb;
	assert_int_equal(open_part(&p, cdir, NULL, &eb), 0);
	ms_part_iter *it;
	assert_int_equal(ms_part_iter_open(&it, p, NULL, NULL, &eb), 0);
	const ms_row *rows;
	ms_raw_block raw;
	assert_int_equal(ms_part_iter_decode(it, MS_COL_ALL, &rows, &eb),
	                 MS_ERR_STATE);
	assert_int_equal(ms_part_iter_raw(it, &raw, &eb), MS_ERR_STATE);
	const ms_block_info *bi;
	while (ms_part_iter_next(it, &bi, &eb) == 1)
		;
	assert_int_equal(ms_part_iter_next(it, &bi, &eb), 0);
	assert_null(bi);
	assert_int_equal(ms_part_iter_decode(it, MS_COL_ALL, &rows, &eb),
	                 MS_ERR_STATE);
	ms_part_iter_close(it);
	ms_part_iter_close(NULL);
	ms_part_close(p);
	ms_part_close(NULL);
	ms_part_writer_abort(NULL);
	/* Opening a missing directory names it. */
	char nodir[300];
	path_of(nodir, sizeof(nodir), "nope");
	assert_int_equal(open_part(&p, nodir, NULL, &eb), MS_ERR_NOTFOUND);
	assert_null(p);
	assert_non_null(strstr(eb.msg, "nope"));
}

static void
test_publish(void **state)
{
	(void)state;
	tl_rng r = { 14 };
	tl_rows t = { 0 };
	tl_shape s = { .traces = 3, .rows_per_trace = 2 };
	tl_gen(&t, &r, &s);
	char tmp[400], fin[400], sub[300];
	path_of(sub, sizeof(sub), "shard");
	mkdir(sub, 0755);
	snprintf(tmp, sizeof(tmp), "%s/tmp-00000000000000d0", sub);
	snprintf(fin, sizeof(fin), "%s/00000000000000d0", sub);
	write_part(tmp, 0xd0, &t, NULL);
	ms_errbuf eb;
	assert_int_equal(ms_part_publish(tmp, fin, NULL, &eb), 0);
	struct stat st;
	assert_int_equal(stat(tmp, &st), -1);
	check_part(fin, &t, MS_COL_ALL);
	/* Publishing onto an existing part is refused. */
	write_part(tmp, 0xd0, &t, NULL);
	assert_int_equal(ms_part_publish(tmp, fin, NULL, &eb), MS_ERR_EXISTS);
	assert_non_null(strstr(eb.msg, "exists"));
	/* A part opened under another part's name is refused. */
	char other[400];
	snprintf(other, sizeof(other), "%s/00000000000000d1", sub);
	assert_int_equal(ms_part_publish(tmp, other, NULL, &eb), 0);
	ms_part *p;
	assert_int_equal(open_part(&p, other, NULL, &eb), MS_ERR_CORRUPT);
	assert_non_null(strstr(eb.msg, "file name says"));
	/* So is one under its own ID with another kind's name. */
	char kinded[420];
	snprintf(kinded, sizeof(kinded), "%s/00000000000000d0.latency", sub);
	assert_int_equal(rename(other, kinded), 0);
	assert_int_equal(open_part(&p, kinded, NULL, &eb), MS_ERR_CORRUPT);
	assert_non_null(strstr(eb.msg, "records kind core"));
	assert_int_equal(rename(kinded, other), 0);
	/* Removal is idempotent. */
	assert_int_equal(ms_part_remove_dir(other, &eb), 0);
	assert_int_equal(ms_part_remove_dir(other, &eb), 0);
	assert_int_equal(stat(other, &st), -1);
	assert_true(ms_part_publish(other, fin, NULL, &eb) < 0);
	tl_free(&t);
}

static void
test_names(void **state)
{
	(void)state;
	char s[17];
	ms_part_id_str(0xa1, s);
	assert_string_equal(s, "00000000000000a1");
	ms_part_id_str(UINT64_MAX, s);
	assert_string_equal(s, "ffffffffffffffff");
	assert_string_equal(ms_part_kind_name(MS_KIND_CORE), "core");
	assert_string_equal(ms_part_kind_name(MS_KIND_LATENCY), "latency");
	assert_string_equal(ms_part_kind_name(MS_KIND_START_TIME),
	                    "start_time");
	const uint8_t a[] = { 1, 2 }, b[] = { 1, 2, 0 }, c[] = { 1, 3 };
	assert_int_equal(ms_trace_id_cmp(a, 2, a, 2), 0);
	assert_true(ms_trace_id_cmp(a, 2, b, 3) < 0);
	assert_true(ms_trace_id_cmp(b, 3, c, 2) < 0);
	assert_true(ms_trace_id_cmp(c, 2, a, 2) > 0);
}

/* Write part `id` of `traces` generated traces (3 rows each, seed) into
 * the scratch directory `name` (path in dir) and return its data file's
 * bytes (*n of them; the caller frees them and t). */
static uint8_t *
subject(const char *name, uint64_t id, uint64_t seed, uint32_t traces,
        tl_rows *t, ms_part_meta *m, char dir[300], size_t *n)
{
	tl_rng r = { seed };
	tl_shape s = { .traces = traces, .rows_per_trace = 3, .body_max = 300 };
	tl_gen(t, &r, &s);
	path_of(dir, 300, name);
	write_part(dir, id, t, m);
	return slurp(dir, "data", n);
}

/* A re-read that trails a lead over the same mapping trusts the blocks
 * the lead has checked and checks the others itself: with the lead half
 * way through, the same rows and raw bytes come out of the first half,
 * and a damaged header past the lead is still caught. */
static void
test_reread_trails_lead(void **state)
{
	(void)state;
	tl_rows t = { 0 };
	ms_part_meta m;
	char dir[300];
	size_t n;
	uint8_t *data = subject("rr-lead", 22, 23, 100, &t, &m, dir, &n);
	/* The last block's header: the index entry says where it starts. */
	uint8_t *idx = slurp(dir, "index", &(size_t){ 0 });
	uint64_t last_off = ms_le64(idx + MS__INDEX_HDR + (m.blocks - 1) * 16);
	free(idx);
	data[last_off + 40] ^= 0x01; /* max_ts */
	spill(dir, "data", data, n);

	ms_errbuf eb = { { 0 } };
	ms_part *p;
	assert_int_equal(open_part(&p, dir, NULL, &eb), 0);
	ms_part_iter *lead, *it, *plain;
	assert_int_equal(ms_part_iter_open(&lead, p, NULL, NULL, &eb), 0);
	assert_int_equal(ms_part_iter_open_reread(&it, lead, 0, &eb), 0);
	assert_int_equal(ms_part_iter_open(&plain, p, NULL, NULL, &eb), 0);
	const ms_block_info *bi;
	uint64_t half = m.blocks / 2;
	for (uint64_t b = 0; b < half; b++)
		assert_int_equal(ms_part_iter_next(lead, &bi, &eb), 1);
	uint64_t b = 0;
	int rc;
	while ((rc = ms_part_iter_next(it, &bi, &eb)) == 1) {
		const ms_block_info *pb;
		assert_int_equal(ms_part_iter_next(plain, &pb, &eb), 1);
		assert_memory_equal(bi, pb, sizeof(*bi));
		ms_raw_block x, y;
		assert_int_equal(ms_part_iter_raw(it, &x, &eb), 0);
		assert_int_equal(ms_part_iter_raw(plain, &y, &eb), 0);
		assert_memory_equal(x.bytes, y.bytes, bi->stored_bytes);
		const ms_row *ra, *rb;
		assert_int_equal(ms_part_iter_decode(it, MS_COL_ALL, &ra, &eb),
		                 0);
		assert_int_equal(
		        ms_part_iter_decode(plain, MS_COL_ALL, &rb, &eb), 0);
		for (uint32_t i = 0; i < bi->nrows; i++)
			assert_true(tl_row_eq(&ra[i], &rb[i], MS_COL_ALL));
		b++;
	}
	assert_int_equal(rc, MS_ERR_CORRUPT);
	assert_int_equal(b, m.blocks - 1);
	assert_non_null(strstr(eb.msg, "header checksum"));
	ms_part_iter_close(it);
	ms_part_iter_close(plain);
	ms_part_iter_close(lead);
	ms_part_close(p);
	free(data);
	tl_free(&t);
}

/* A scan that defers units reads headers only: a damaged unit passes the
 * scan, and is caught where it is handed out raw or decoded, by the scan
 * itself or by a re-read trailing it (which then names the part). */
static void
test_deferred_units(void **state)
{
	(void)state;
	tl_rows t = { 0 };
	ms_part_meta m;
	char dir[300];
	size_t n;
	uint8_t *data = subject("deferred", 24, 29, 60, &t, &m, dir, &n);
	uint32_t sa = ms_le32(data + 12), sb = ms_le32(data + 20);
	data[MS__BLOCK_HDR + sa + sb / 2] ^= 0x04; /* block 0, unit B */
	spill(dir, "data", data, n);
	ms_errbuf eb = { { 0 } };
	ms_part *p;
	assert_int_equal(open_part(&p, dir, NULL, &eb), 0);

	/* Headers, order and totals hold: the scan reaches the end. */
	ms_part_iter *lead, *it;
	const ms_block_info *bi;
	assert_int_equal(ms_part_iter_open(&lead, p, NULL, NULL, &eb), 0);
	ms_part_iter_defer_units(lead);
	uint64_t blocks = 0;
	int rc;
	while ((rc = ms_part_iter_next(lead, &bi, &eb)) == 1)
		blocks++;
	assert_int_equal(rc, 0);
	assert_int_equal(blocks, m.blocks);
	/* The re-read refuses to hand out block 0 raw, naming the part. */
	assert_int_equal(ms_part_iter_open_reread(&it, lead, 0, &eb), 0);
	assert_int_equal(ms_part_iter_next(it, &bi, &eb), 1);
	ms_raw_block raw;
	assert_int_equal(ms_part_iter_raw(it, &raw, &eb), MS_ERR_CORRUPT);
	assert_non_null(strstr(eb.msg, "unit B checksum"));
	assert_non_null(strstr(eb.msg, "0000000000000018"));
	ms_part_iter_close(it);
	/* Unit A is intact: decoding it alone works, the body does not. */
	assert_int_equal(ms_part_iter_open_reread(&it, lead, 0, &eb), 0);
	assert_int_equal(ms_part_iter_next(it, &bi, &eb), 1);
	const ms_row *rows;
	assert_int_equal(ms_part_iter_decode(it, MS_COL_SERVICE, &rows, &eb),
	                 0);
	assert_int_equal(ms_part_iter_decode(it, MS_COL_BODY, &rows, &eb),
	                 MS_ERR_CORRUPT);
	/* The next block is whole and comes out raw. */
	ms_part_iter_close(it);
	assert_int_equal(ms_part_iter_open_reread(&it, lead, 0, &eb), 0);
	assert_int_equal(ms_part_iter_next(it, &bi, &eb), 1);
	assert_int_equal(ms_part_iter_next(it, &bi, &eb), 1);
	assert_int_equal(ms_part_iter_raw(it, &raw, &eb), 0);
	assert_true(raw.verified);
	ms_part_iter_close(it);
	ms_part_iter_close(lead);

	/* The deferring scan itself checks what it decodes or hands out. */
	assert_int_equal(ms_part_iter_open(&lead, p, NULL, NULL, &eb), 0);
	ms_part_iter_defer_units(lead);
	assert_int_equal(ms_part_iter_next(lead, &bi, &eb), 1);
	assert_int_equal(ms_part_iter_raw(lead, &raw, &eb), MS_ERR_CORRUPT);
	ms_part_iter_close(lead);
	/* A scan not told to defer refuses the block outright; told after
	 * its first block, a scan keeps checking units. */
	assert_int_equal(ms_part_iter_open(&lead, p, NULL, NULL, &eb), 0);
	assert_int_equal(ms_part_iter_next(lead, &bi, &eb), MS_ERR_CORRUPT);
	ms_part_iter_close(lead);
	data[MS__BLOCK_HDR + sa + sb / 2] ^= 0x04; /* block 0 whole again */
	size_t last = n - 8; /* inside the last block's last unit */
	data[last] ^= 0x01;
	spill(dir, "data", data, n);
	assert_int_equal(ms_part_iter_open(&lead, p, NULL, NULL, &eb), 0);
	assert_int_equal(ms_part_iter_next(lead, &bi, &eb), 1);
	ms_part_iter_defer_units(lead);
	while ((rc = ms_part_iter_next(lead, &bi, &eb)) == 1)
		;
	assert_int_equal(rc, MS_ERR_CORRUPT);
	assert_non_null(strstr(eb.msg, "checksum"));
	ms_part_iter_close(lead);
	ms_part_close(p);
	free(data);
	tl_free(&t);
}

/* The window read, used when the data file cannot be mapped: the same
 * rows, the same re-read, the same failures. */
static void
test_window_fallback(void **state)
{
	const char *made[] = { "00000000000000a1", "rr-src", "rr-dst",
		               "deferred" };
	for (size_t i = 0; i < sizeof(made) / sizeof(made[0]); i++) {
		char dir[300];
		path_of(dir, sizeof(dir), made[i]);
		ms_part_remove_dir(dir, NULL);
	}
	no_map = true;
	test_round_trip_basic(state);
	test_reread(state);
	test_deferred_units(state);
	test_truncate_and_remove(state);
	no_map = false;
}

/* The part file changed size between opening the part and iterating it:
 * refused before anything is mapped or read. */
static void
test_data_changed_after_open(void **state)
{
	(void)state;
	tl_rows t = { 0 };
	ms_part_meta m;
	char dir[300];
	size_t n;
	uint8_t *data = subject("changed", 5, 17, 20, &t, &m, dir, &n);
	free(data);
	data = slurp_file(dir, &n);
	ms_errbuf eb = { { 0 } };
	ms_part *p;
	assert_int_equal(open_part(&p, dir, NULL, &eb), 0);
	spill_file(dir, data, n - 1);
	ms_part_iter *it;
	assert_int_equal(ms_part_iter_open(&it, p, NULL, NULL, &eb),
	                 MS_ERR_CORRUPT);
	assert_null(it);
	assert_non_null(strstr(eb.msg, "data"));
	assert_non_null(strstr(eb.msg, "footer says"));
	spill_file(dir, data, n);
	assert_int_equal(ms_part_iter_open(&it, p, NULL, NULL, &eb), 0);
	ms_part_iter_close(it);
	ms_part_close(p);
	free(data);
	tl_free(&t);
}

/* A part of format version 2 (a directory with a `meta` record) is
 * refused with MS_ERR_FORMAT naming its version, and so is a directory
 * that is no part at all: neither is taken for damage. */
static void
test_old_format_refused(void **state)
{
	(void)state;
	char dir[300], meta[400];
	path_of(dir, sizeof(dir), "00000000000000e2");
	assert_int_equal(mkdir(dir, 0755), 0);
	ms_part *p;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(open_part(&p, dir, NULL, &eb), MS_ERR_FORMAT);
	assert_null(p);
	assert_non_null(strstr(eb.msg, "not a part file"));
	uint8_t m[128] = { 0 };
	memcpy(m, "MSPMETA1", 8);
	ms_put_le32(m + 8, 2);
	snprintf(meta, sizeof(meta), "%s/meta", dir);
	spill_file(meta, m, sizeof(m));
	assert_int_equal(open_part(&p, dir, NULL, &eb), MS_ERR_FORMAT);
	assert_non_null(strstr(eb.msg, "format version 2"));
	char want[32];
	snprintf(want, sizeof(want), "expected %d", MS_PART_FORMAT_VERSION);
	assert_non_null(strstr(eb.msg, want));
	assert_non_null(strstr(eb.msg, dir));
	assert_int_equal(ms_part_remove_dir(dir, &eb), 0);
	struct stat st;
	assert_int_equal(stat(dir, &st), -1);
}

/* A block naming a dictionary (a non-zero dictionary ID) is refused with
 * MS_ERR_FORMAT naming the part and the ID, by an iterator and by a raw
 * copy of unchecked bytes; the writer writes 0. */
static void
test_dictionary_id_refused(void **state)
{
	(void)state;
	make_corrupt_subject();
	fz_files f;
	assert_true(fz_read(cdir, &f));
	for (size_t off = 0; off < f.n[3];) {
		uint8_t *h = f.f[3] + off;
		assert_int_equal(ms_le32(h + 28), 0);
		off += MS__BLOCK_HDR + ms_le32(h + 12) + ms_le32(h + 20);
	}
	size_t n;
	uint8_t *keep = slurp_file(cdir, &n);
	ms_put_le32(f.f[3] + 28, 7); /* the first block's dictionary ID */
	fz_reseal(&f);
	fz_write(&f, cdir);
	ms_errbuf eb = { { 0 } };
	assert_int_equal(full_read(cdir, &eb), MS_ERR_FORMAT);
	assert_non_null(strstr(eb.msg, "dictionary ID 7"));
	assert_non_null(strstr(eb.msg, "00000000000000c0"));
	/* The same bytes handed to a writer unchecked. */
	ms_block_info bi = { .trace_id_len = f.f[3][4],
		             .nrows = ms_le32(f.f[3] + 8) };
	memcpy(bi.trace_id, f.f[3] + 80, bi.trace_id_len);
	bi.stored_bytes = MS__BLOCK_HDR + ms_le32(f.f[3] + 12) +
	                  ms_le32(f.f[3] + 20);
	ms_raw_block raw = { .info = &bi, .bytes = f.f[3] };
	char out[300];
	path_of(out, sizeof(out), "dict-out");
	ms_part_writer *w;
	assert_int_equal(ms_part_writer_open(&w, out, 0xc1, NULL, &eb), 0);
	assert_int_equal(ms_part_writer_add_raw(w, &raw, &eb), MS_ERR_FORMAT);
	assert_non_null(strstr(eb.msg, "dictionary ID 7"));
	ms_part_writer_abort(w);
	struct stat st;
	assert_int_equal(stat(out, &st), -1);
	spill_file(cdir, keep, n);
	free(keep);
	fz_free(&f);
	assert_int_equal(full_read(cdir, &eb), 0);
}

/* A dictionary of the shard: trained on rows, blocks compressed with it
 * name it in their header, read back through the set they were opened
 * with (and refused without it), are smaller on small blocks, and are
 * copied raw verbatim into another part, where they keep their meaning. */
static void
test_dictionary_round_trip(void **state)
{
	(void)state;
	tl_rng r = { 31 };
	tl_rows t = { 0 };
	tl_shape s = { .traces = 400,
		       .rows_per_trace = 3,
		       .body_max = 200,
		       .tags_max = 3,
		       .tag_len = 10,
		       .tid_len = 16 };
	tl_gen(&t, &r, &s);
	ms_errbuf eb = { { 0 } };
	uint8_t *bytes;
	size_t n;
	assert_int_equal(ms_part_dict_train(t.rows, t.n, 16 << 10, &bytes, &n,
	                                    NULL, &eb),
	                 0);
	assert_true(n > 0 && n <= 16 << 10);
	ms_part_dict *d;
	assert_int_equal(ms_part_dict_new(&d, 5, bytes, n, 0, NULL, &eb), 0);
	ms_mem_free(NULL, bytes, n);
	ms_part_dicts *set;
	assert_int_equal(ms_part_dicts_new(&set, NULL, &eb), 0);
	assert_int_equal(ms_part_dicts_add(set, d, &eb), 0);
	const ms_part_dict *dd = ms_part_dicts_find(set, 5);
	assert_ptr_equal(dd, d);
	assert_null(ms_part_dicts_find(set, 6));
	ms_part_dict *again;
	assert_int_equal(ms_part_dict_new(&again, 5, "x", 1, 0, NULL, &eb) ==
	                         0
	                         ? ms_part_dicts_add(set, again, &eb)
	                         : MS_ERR_EXISTS,
	                 MS_ERR_EXISTS);

	char with[300], without[300], copy[300];
	path_of(with, sizeof(with), "dict-with");
	path_of(without, sizeof(without), "dict-without");
	path_of(copy, sizeof(copy), "dict-copy");
	ms_part_writer_opts o = { .dict = dd };
	ms_part_meta mw, mo;
	assert_int_equal(ms_part_write_rows(with, 0xd1, t.rows, t.n, &o, &mw,
	                                    &eb),
	                 0);
	write_part(without, 0xd1, &t, &mo);
	print_message("dictionary of %zu bytes: %llu vs %llu part bytes\n", n,
	              (unsigned long long)mw.compressed_bytes,
	              (unsigned long long)mo.compressed_bytes);
	assert_true(mw.compressed_bytes < mo.compressed_bytes);
	fz_files f;
	assert_true(fz_read(with, &f));
	for (size_t off = 0; off < f.n[3];) {
		const uint8_t *h = f.f[3] + off;
		assert_int_equal(ms_le32(h + 28), 5);
		off += MS__BLOCK_HDR + ms_le32(h + 12) + ms_le32(h + 20);
	}
	/* Without the set: refused by name. */
	assert_int_equal(full_read(with, &eb), MS_ERR_FORMAT);
	assert_non_null(strstr(eb.msg, "dictionary ID 5"));
	/* With it: every row as written, every column. */
	open_dicts = set;
	check_part(with, &t, MS_COL_ALL);
	/* Raw copy by a writer without the dictionary: the same bytes. */
	ms_part *p;
	assert_int_equal(open_part(&p, with, NULL, &eb), 0);
	ms_part_iter *it;
	assert_int_equal(ms_part_iter_open(&it, p, NULL, NULL, &eb), 0);
	ms_part_writer *w;
	assert_int_equal(ms_part_writer_open(&w, copy, 0xd1, NULL, &eb), 0);
	assert_int_equal(tl_copy_blocks(it, w, &eb), 0);
	ms_part_iter_close(it);
	ms_part_meta mc;
	assert_int_equal(ms_part_writer_finish(w, &mc, &eb), 0);
	ms_part_close(p);
	fz_files c;
	assert_true(fz_read(copy, &c));
	assert_int_equal(c.n[3], f.n[3]);
	assert_memory_equal(c.f[3], f.f[3], f.n[3]);
	check_part(copy, &t, MS_COL_ALL);
	open_dicts = NULL;
	/* A part outlives the set's creator: it holds its own reference. */
	assert_int_equal(ms_part_open_dicts(&p, copy, set, NULL, &eb), 0);
	ms_part_dicts_free(set);
	assert_int_equal(ms_part_verify(p, &eb), 0);
	ms_part_close(p);
	fz_free(&c);
	fz_free(&f);
	tl_free(&t);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_round_trip_basic),
		cmocka_unit_test(test_payload_bytes),
		cmocka_unit_test(test_deterministic),
		cmocka_unit_test(test_levels),
		cmocka_unit_test(test_single_row_and_shapes),
		cmocka_unit_test(test_big_trace_split),
		cmocka_unit_test(test_projection),
		cmocka_unit_test(test_projection_skips_units),
		cmocka_unit_test(test_raw_copy),
		cmocka_unit_test(test_reread),
		cmocka_unit_test(test_reread_trails_lead),
		cmocka_unit_test(test_deferred_units),
		cmocka_unit_test(test_share_zstd),
		cmocka_unit_test(test_writer_rejects),
		cmocka_unit_test(test_writer_rejects_say_what_was_expected),
		cmocka_unit_test(test_bloom),
		cmocka_unit_test(test_writer_lists_bounded),
		cmocka_unit_test(test_writer_dir_packed),
		cmocka_unit_test(test_open_part_holds_no_sections),
		cmocka_unit_test(test_raw_stable),
		cmocka_unit_test(test_keep_from),
		cmocka_unit_test(test_sections_changed_after_open),
		cmocka_unit_test(test_sections_at_buffer_edges),
		cmocka_unit_test(test_open_reads_tail_once),
		cmocka_unit_test(test_flip_every_byte),
		cmocka_unit_test(test_truncate_and_remove),
		cmocka_unit_test(test_window_fallback),
		cmocka_unit_test(test_data_changed_after_open),
		cmocka_unit_test(test_old_format_refused),
		cmocka_unit_test(test_dictionary_id_refused),
		cmocka_unit_test(test_dictionary_round_trip),
		cmocka_unit_test(test_resealed_format_checks),
		cmocka_unit_test(test_resealed_random),
		cmocka_unit_test(test_alloc_failure_write),
		cmocka_unit_test(test_alloc_failure_read),
		cmocka_unit_test(test_open_out_of_memory_says_what_for),
		cmocka_unit_test(test_counters),
		cmocka_unit_test(test_large_file_mapped),
		cmocka_unit_test(test_mapping_released_behind),
		cmocka_unit_test(test_mapping_resident_while_read),
		cmocka_unit_test(test_iter_states),
		cmocka_unit_test(test_iter_modes),
		cmocka_unit_test(test_publish),
	};
	int rc = cmocka_run_group_tests(tests, setup, teardown);
	tl_free(&ct);
	return rc;
}
