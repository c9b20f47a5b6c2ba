/*
 * test_part.c - the part format: round trips of random parts, projection,
 * raw block copy, Bloom filter, corruption of every file, truncation,
 * missing files, allocation failure, and publication.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "part_testlib.h"

#include <sys/stat.h>

static char root[256];

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
	int rc = ms_part_open(&p, dir, NULL, &eb);
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
	assert_int_equal(m.rows, t.n);
	assert_int_equal(m.traces, 50);
	assert_int_equal(m.blocks, 50);
	check_part(dir, &t, MS_COL_ALL);
	tl_free(&t);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip_basic),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
