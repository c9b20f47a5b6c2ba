/*
 * test_fixture_timemap.c - placing traces on the day: the latest constant
 * offset, and on a whole generated smoke day: deltas preserved, no
 * fragment from the future, at least one publication-aligned fragment per
 * trace, every fragment inside the two-hour grace when published.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fx_int.h"

static void
test_offset_vectors(void **state)
{
	int64_t pub1[] = { 1000 };
	int64_t rel1[] = { 250 };
	/* Fragment 0 published at 1000 with max 300; fragment 1 (later
	 * spans, max 400) published at 5000: fragment 0 binds. */
	int64_t pub2[] = { 1000, 5000 };
	int64_t rel2[] = { 300, 400 };
	/* A later fragment published earlier than its own max allows would
	 * bind instead (not produced by the generator, but the rule holds). */
	int64_t pub3[] = { 1000, 1100, 900 };
	int64_t rel3[] = { 100, 900, 50 };

	(void)state;
	assert_int_equal(ms__fx_timemap_offset(pub1, rel1, 1), 750);
	assert_int_equal(ms__fx_timemap_offset(pub2, rel2, 2), 700);
	assert_int_equal(ms__fx_timemap_offset(pub3, rel3, 3), 200);
	/* Negative relative maxima (not produced) and large values. */
	{
		int64_t p[] = { FX_DAY_START_NS, FX_DAY_START_NS + 60 };
		int64_t r[] = { 0, 61 };

		assert_int_equal(ms__fx_timemap_offset(p, r, 2),
		                 FX_DAY_START_NS - 1);
	}
}

static void
test_smoke_day_mapping(void **state)
{
	fx_model m;
	ms_errbuf eb = { { 0 } };
	const fx_preset *p = ms__fx_preset_find("smoke", NULL);
	fx_arena *a = NULL;
	ms_row *rows = NULL;
	size_t split_seen = 0;

	(void)state;
	assert_non_null(p);
	assert_int_equal(ms__fx_model_generate(&m, p, 7, false, &eb), 0);
	assert_int_equal(ms__fx_model_schedule(&m, &eb), 0);
	ms__fx_model_timemap(&m);
	assert_int_equal(ms__fx_arena_new(&a), 0);
	rows = calloc(256, sizeof(*rows));
	assert_non_null(rows);

	for (size_t t = 0; t < m.ntraces; t++) {
		const fx_trace *tr = &m.traces[t];
		bool aligned = false;

		for (uint32_t j = 0; j < tr->nfrag; j++) {
			const fx_frag *f = &m.frags[tr->frag0 + j];
			int64_t pub = m.batches[f->batch].pub_ns;
			int64_t max = tr->off_ns + f->max_rel_ns;

			assert_int_equal(f->trace, t);
			assert_true(max <= pub);
			assert_true(pub - max < MS_GRACE_NS);
			aligned |= max == pub;
			if (j > 0) {
				/* Later fragments: later writes. */
				assert_true(f->batch >
				            m.frags[tr->frag0 + j - 1].batch);
				split_seen++;
			}
		}
		assert_true(aligned);
	}
	assert_true(split_seen > 0);

	/* Materialized rows keep the generated deltas exactly. */
	for (size_t t = 0; t < m.ntraces; t += 97) {
		const fx_trace *tr = &m.traces[t];
		uint32_t fr[FX_FRAGS_MAX];
		size_t n = 0;

		for (uint32_t j = 0; j < tr->nfrag; j++)
			fr[j] = tr->frag0 + j;
		ms__fx_arena_reset(a);
		assert_int_equal(ms__fx_materialize(&m, fr, tr->nfrag,
		                                    MS_COL_ALL, a, rows, &n,
		                                    &eb),
		                 0);
		assert_int_equal(n, tr->nrows);
		for (size_t i = 0; i < n; i++) {
			assert_int_equal(rows[i].start_ns - tr->off_ns,
			                 m.rows[tr->row0 + i].rel_ns);
			assert_int_equal(rows[i].start_ns - rows[0].start_ns,
			                 m.rows[tr->row0 + i].rel_ns -
			                         m.rows[tr->row0].rel_ns);
			assert_memory_equal(rows[i].trace_id, tr->id,
			                    FX_TID_LEN);
		}
	}
	free(rows);
	ms__fx_arena_free(a);
	ms__fx_model_free(&m);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_offset_vectors),
		cmocka_unit_test(test_smoke_day_mapping),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
