/*
 * test_fixture_schedule.c - the fixture's write schedule: the writes
 * formula, publication slots, and the closest-boundary cutter on small
 * hand-built fragment lists (ties, a fragment larger than its template,
 * reserve cuts, the partial tail, late fragments of one trace).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fx_int.h"

#define DAY (86400LL * 1000000000LL)

static void
test_writes_formula(void **state)
{
	(void)state;
	assert_int_equal(ms__fx_writes_for_rows(162238), 1604);
	assert_int_equal(ms__fx_writes_for_rows(325570), 3219);
	assert_int_equal(ms__fx_writes_for_rows(1214), 12);
	assert_int_equal(ms__fx_writes_for_rows(1215), 13);
	assert_int_equal(ms__fx_writes_for_rows(101), 1);
	assert_int_equal(ms__fx_writes_for_rows(102), 2);
	assert_int_equal(ms__fx_writes_for_rows(1), 1);
	assert_int_equal(ms__fx_writes_for_rows(0), 0);
}

static void
test_slots(void **state)
{
	const int64_t s = FX_DAY_START_NS;

	(void)state;
	assert_int_equal(ms__fx_slot_ns(s, DAY, 1604, 0), s);
	assert_int_equal(ms__fx_slot_ns(s, DAY, 1604, 1) - s, 53865336658LL);
	assert_int_equal(ms__fx_slot_ns(s, DAY, 1604, 1603) - s,
	                 86346134663341LL);
	assert_int_equal(ms__fx_slot_ns(s, DAY, 3219, 3218) - s,
	                 86373159366262LL);
	assert_int_equal(ms__fx_slot_ns(s, DAY, 3219, 1609) - s,
	                 43186579683131LL);
	assert_int_equal(ms__fx_slot_ns(s, DAY, 3, 1) - s, 28800000000000LL);
	assert_int_equal(ms__fx_slot_ns(s, DAY, 3, 2) - s, 57600000000000LL);
	/* Evenly spaced inside the half-open day. */
	for (uint64_t k = 1; k < 3219; k++) {
		int64_t a = ms__fx_slot_ns(s, DAY, 3219, k - 1);
		int64_t b = ms__fx_slot_ns(s, DAY, 3219, k);

		assert_true(b - a == 26840633737LL || b - a == 26840633738LL);
		assert_true(b < s + DAY);
	}
}

typedef struct cut_out {
	uint32_t delivery[4096];
	uint32_t batch_of[4096];
	fx_batch batches[64];
} cut_out;

static cut_out *
cut(const fx_cut_frag *f, size_t n, size_t ngroups, uint64_t writes)
{
	static cut_out o;
	ms_errbuf eb = { { 0 } };

	memset(&o, 0, sizeof(o));
	assert_int_equal(ms__fx_schedule_cut(f, n, ngroups, writes, o.delivery,
	                                     o.batch_of, o.batches, &eb),
	                 0);
	return &o;
}

/* A tie between stopping before and after a fragment keeps the earlier
 * boundary. Template 0 is (45 blocks, 262 rows). After 43 x (1, 6) and
 * (1, 3) the batch stands at (44, 261): d = (1/45)^2 + (1/101.17)^2.
 * Taking (2, 2)
 * gives (46, 263): the same distance, so the batch ends before it. */
static void
test_tie_keeps_earlier(void **state)
{
	fx_cut_frag f[60];
	size_t n = 0;
	cut_out *o;

	(void)state;
	for (int i = 0; i < 43; i++)
		f[n++] = (fx_cut_frag){ 1, 6, FX_NO_GROUP };
	f[n++] = (fx_cut_frag){ 1, 3, FX_NO_GROUP };
	f[n++] = (fx_cut_frag){ 2, 2, FX_NO_GROUP };
	for (int i = 0; i < 5; i++)
		f[n++] = (fx_cut_frag){ 1, 5, FX_NO_GROUP };
	o = cut(f, n, 0, 2);
	assert_int_equal(o->batches[0].count, 44);
	assert_int_equal(o->batches[0].blocks, 44);
	assert_int_equal(o->batches[0].rows, 261);
	assert_true(o->batches[0].dist_before == o->batches[0].dist_after);
	assert_int_equal(o->batches[0].choice, FX_CUT_CLOSEST);
	assert_int_equal(o->batch_of[44], 1);

	/* One row fewer in the deciding fragment breaks the tie: (2, 1)
	 * reaches (46, 262), d = (1/45)^2, lower, so it is taken. */
	f[44] = (fx_cut_frag){ 2, 1, FX_NO_GROUP };
	o = cut(f, n, 0, 2);
	assert_int_equal(o->batches[0].count, 45);
	assert_int_equal(o->batches[0].rows, 262);
}

/* A fragment larger than its whole template is never split. Followed by
 * fragments of 10 rows, each of which would only add to the row overshoot,
 * it forms a batch alone (progress, "forced"), and the next batches stay
 * forced while the cumulative row targets catch up. Followed by one-row
 * fragments instead, the same: the row term, 738 rows over its target,
 * outweighs the block term, 44 blocks short of it (one more block lowers
 * (44/45)^2 by 0.043, one more row raises (738/101.17)^2 by 0.144). */
static void
test_fragment_larger_than_template(void **state)
{
	fx_cut_frag f[200];
	size_t n = 0;
	cut_out *o;

	(void)state;
	f[n++] = (fx_cut_frag){ 1, 1000, FX_NO_GROUP };
	for (int i = 0; i < 100; i++)
		f[n++] = (fx_cut_frag){ 1, 10, FX_NO_GROUP };
	o = cut(f, n, 0, 4);
	assert_int_equal(o->batches[0].count, 1);
	assert_int_equal(o->batches[0].rows, 1000);
	assert_int_equal(o->batches[0].choice, FX_CUT_FORCED);
	assert_true(o->batches[0].dist_after >= o->batches[0].dist_before);
	assert_int_equal(o->batches[1].count, 1);
	assert_int_equal(o->batches[1].choice, FX_CUT_FORCED);
	assert_int_equal(o->batches[1].cum_target_rows, 379);
	assert_int_equal(o->batches[1].cum_rows, 1010);
	assert_int_equal(o->batches[2].count, 1);
	assert_int_equal(o->batches[3].count, 98);
	assert_int_equal(o->batches[3].choice, FX_CUT_FINAL);
	assert_false(o->batches[3].partial_tail);

	n = 0;
	f[n++] = (fx_cut_frag){ 1, 1000, FX_NO_GROUP };
	for (int i = 0; i < 150; i++)
		f[n++] = (fx_cut_frag){ 1, 1, FX_NO_GROUP };
	o = cut(f, n, 0, 3);
	assert_int_equal(o->batches[0].count, 1);
	assert_int_equal(o->batches[0].rows, 1000);
	assert_int_equal(o->batches[0].choice, FX_CUT_FORCED);
	/* Blocks are per batch (the cumulative target is recorded only). */
	assert_int_equal(o->batches[1].cum_target_blocks, 91);
	assert_int_equal(o->batches[1].target_blocks, 46);
	assert_int_equal(o->batches[1].count, 1);
	assert_int_equal(o->batches[1].choice, FX_CUT_FORCED);
	assert_int_equal(o->batches[2].count, 149);

	/* Rows are cumulative: a batch short of rows is made up by the next
	 * instead of drifting to the last. Fragments of (1, 3) fill template 0
	 * (45, 262) to 72 blocks, 216 rows: a 73rd block would add
	 * (28^2 - 27^2)/45^2 = 0.0272 and take away only
	 * (46^2 - 43^2)/101.17^2 = 0.0261. Batch 1 (46, 117) then makes up
	 * the 46 rows batch 0 left as well as its own: 51 fragments, 153 rows,
	 * cumulative 369 of 379, not 333. */
	n = 0;
	for (int i = 0; i < 200; i++)
		f[n++] = (fx_cut_frag){ 1, 3, FX_NO_GROUP };
	o = cut(f, n, 0, 3);
	assert_int_equal(o->batches[0].count, 72);
	assert_int_equal(o->batches[0].rows, 216);
	assert_int_equal(o->batches[1].count, 51);
	assert_int_equal(o->batches[1].cum_rows, 369);
	assert_int_equal(o->batches[1].cum_target_rows, 379);
}

/* A day whose rows per block stay below the templates' (a block is at
 * least a trace): the cumulative row target keeps the shortfall from
 * piling up into the final write. 1,402 one-block fragments of 1, 1, 2,
 * 3, 9 and 10 rows (4.33 a block against the templates' 4.46) in 60
 * writes: the final write (template 11: 3 blocks, 24 rows) gets 52 rows;
 * with cumulative block targets as well it got 188, the shortfall of the
 * whole day. */
static void
test_rows_do_not_drift_to_the_last(void **state)
{
	static const uint32_t rows[] = { 1, 1, 2, 3, 9, 10 };
	fx_cut_frag f[1402];
	uint64_t total = 0, before_last = 0;
	cut_out *o;

	(void)state;
	for (size_t i = 0; i < 1402; i++) {
		f[i] = (fx_cut_frag){ 1, rows[i % 6], FX_NO_GROUP };
		total += rows[i % 6];
	}
	assert_int_equal(ms__fx_writes_for_rows(total), 60);
	o = cut(f, 1402, 0, 60);
	for (int k = 0; k < 59; k++)
		before_last += o->batches[k].rows;
	assert_int_equal(o->batches[59].choice, FX_CUT_FINAL);
	assert_int_equal(o->batches[59].rows, total - before_last);
	assert_true(o->batches[59].rows <= 3 * o->batches[59].target_rows);
	/* Every batch ends within two average writes of its cumulative row
	 * target. */
	for (int k = 0; k < 59; k++) {
		double lag = (double)o->batches[k].cum_rows -
		             (double)o->batches[k].cum_target_rows;

		assert_true(lag > -2 * 101.17 && lag < 2 * 101.17);
	}
}

/* When the input runs short, earlier batches leave one fragment for every
 * remaining slot (reserve), and the last batch is the one partial tail. */
static void
test_reserve_and_partial_tail(void **state)
{
	fx_cut_frag f[50];
	cut_out *o;

	(void)state;
	for (int i = 0; i < 50; i++)
		f[i] = (fx_cut_frag){ 1, 1, FX_NO_GROUP };
	o = cut(f, 50, 0, 3);
	assert_int_equal(o->batches[0].count, 48);
	assert_int_equal(o->batches[0].choice, FX_CUT_RESERVE);
	assert_int_equal(o->batches[1].count, 1);
	assert_int_equal(o->batches[1].choice, FX_CUT_RESERVE);
	assert_int_equal(o->batches[2].count, 1);
	assert_int_equal(o->batches[2].choice, FX_CUT_FINAL);
	assert_true(o->batches[2].partial_tail);
	assert_false(o->batches[0].partial_tail);
	assert_false(o->batches[1].partial_tail);
	assert_int_equal(o->batches[2].dist_after, -1);
}

/* A final batch that reaches its cumulative targets is complete; one
 * whose rule would have stopped inside it (an over-full remainder) is
 * complete too; only an input that ends short of the boundary is a
 * partial tail. */
static void
test_final_batch_complete(void **state)
{
	fx_cut_frag f[4];
	cut_out *o;

	(void)state;
	/* Exactly the first two templates. */
	f[0] = (fx_cut_frag){ 45, 262, FX_NO_GROUP };
	f[1] = (fx_cut_frag){ 46, 117, FX_NO_GROUP };
	o = cut(f, 2, 0, 2);
	assert_false(o->batches[1].partial_tail);
	assert_true(o->batches[1].dist_before == 0.0);
	/* Over-full: the rule would have stopped after f[1]. */
	f[2] = (fx_cut_frag){ 40, 100, FX_NO_GROUP };
	o = cut(f, 3, 0, 2);
	assert_int_equal(o->batches[1].count, 2);
	assert_false(o->batches[1].partial_tail);
	/* Short: half the second template. */
	f[1] = (fx_cut_frag){ 23, 58, FX_NO_GROUP };
	o = cut(f, 2, 0, 2);
	assert_true(o->batches[1].partial_tail);
}

/* A late fragment whose trace is already in the open batch waits for the
 * next batch and is delivered there first; later arrivals keep flowing. */
static void
test_late_fragment_waits(void **state)
{
	fx_cut_frag f[5] = {
		{ 1, 100, 0 }, { 1, 100, 1 }, { 1, 50, 0 },
		{ 1, 50, 2 },  { 1, 500, 3 },
	};
	cut_out *o;

	(void)state;
	o = cut(f, 5, 4, 2);
	assert_int_equal(o->batches[0].count, 3);
	assert_int_equal(o->delivery[0], 0);
	assert_int_equal(o->delivery[1], 1);
	assert_int_equal(o->delivery[2], 3);
	assert_int_equal(o->delivery[3], 2);
	assert_int_equal(o->delivery[4], 4);
	assert_int_equal(o->batch_of[2], 1);
	assert_int_equal(o->batches[1].deferred, 1);
}

static void
test_too_few_fragments(void **state)
{
	fx_cut_frag f[2] = { { 1, 1, FX_NO_GROUP }, { 1, 1, FX_NO_GROUP } };
	uint32_t d[2], b[2];
	fx_batch bt[3];
	ms_errbuf eb = { { 0 } };

	(void)state;
	assert_int_equal(ms__fx_schedule_cut(f, 2, 0, 3, d, b, bt, &eb),
	                 MS_ERR_INVAL);
	assert_non_null(strstr(eb.msg, "3 writes"));
}

/* Random inputs: every batch non-empty, delivery a permutation, batch
 * ranges contiguous, cumulative counters consistent, at most one partial
 * tail and only last, no group twice in a batch except the last. */
static void
test_random_invariants(void **state)
{
	fx_rng r;

	(void)state;
	ms__fx_rng_seed(&r, 42, 1, 0);
	for (int round = 0; round < 200; round++) {
		static fx_cut_frag f[4096];
		size_t n = 64 + ms__fx_rng_below(&r, 3000);
		uint64_t rows = 0, writes;
		size_t ngroups = n / 2 + 1;
		cut_out *o;
		static uint8_t seen[4096];

		for (size_t i = 0; i < n; i++) {
			f[i].blocks = 1;
			f[i].rows = 1 + (uint32_t)ms__fx_rng_below(&r, 12);
			f[i].group = (uint32_t)ms__fx_rng_below(&r, ngroups);
			rows += f[i].rows;
		}
		writes = ms__fx_writes_for_rows(rows);
		if (writes > 64)
			writes = 64;
		if (writes > n)
			writes = n;
		o = cut(f, n, ngroups, writes);
		memset(seen, 0, sizeof(seen));
		for (size_t i = 0; i < n; i++) {
			assert_int_equal(seen[o->delivery[i]], 0);
			seen[o->delivery[i]] = 1;
		}
		{
			uint64_t next = 0, cb = 0, cr = 0, tails = 0;

			for (uint64_t k = 0; k < writes; k++) {
				const fx_batch *b = &o->batches[k];

				assert_true(b->count >= 1);
				assert_int_equal(b->first, next);
				next += b->count;
				cb += b->blocks;
				cr += b->rows;
				assert_int_equal(b->cum_blocks, cb);
				assert_int_equal(b->cum_rows, cr);
				assert_int_equal(b->template_ord, k % 12);
				tails += b->partial_tail;
				if (b->partial_tail)
					assert_int_equal(k, writes - 1);
				for (uint64_t j = b->first;
				     j < b->first + b->count; j++)
					assert_int_equal(
					        o->batch_of[o->delivery[j]], k);
				if (k + 1 < writes) {
					for (uint64_t j = b->first;
					     j < b->first + b->count; j++)
						for (uint64_t l = j + 1;
						     l < b->first + b->count;
						     l++)
							assert_int_not_equal(
							        f[o->delivery
							                  [j]]
							                .group,
							        f[o->delivery
							                  [l]]
							                .group);
				}
			}
			assert_int_equal(next, n);
			assert_true(tails <= 1);
		}
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_writes_formula),
		cmocka_unit_test(test_slots),
		cmocka_unit_test(test_tie_keeps_earlier),
		cmocka_unit_test(test_rows_do_not_drift_to_the_last),
		cmocka_unit_test(test_fragment_larger_than_template),
		cmocka_unit_test(test_reserve_and_partial_tail),
		cmocka_unit_test(test_final_batch_complete),
		cmocka_unit_test(test_late_fragment_waits),
		cmocka_unit_test(test_too_few_fragments),
		cmocka_unit_test(test_random_invariants),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
