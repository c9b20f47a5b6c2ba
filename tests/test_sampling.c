/*
 * test_sampling.c - the rule that decides whether a merge samples
 * (core/sampling.c): the reasons a merge does not sample, in their order;
 * the grace policies; how inputs are counted against the frontier; the
 * classification names and their parser. That the rule predicts every
 * merge of a replayed day is checked on whole runs in test_replay.c.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "ms_clock.h"
#include "ms_err.h"
#include "ms_sampling.h"

#include <string.h>

/* A segment whose interior holds every input of these tests. */
#define WIDE_MIN (-10 * MS_GRACE_NS)
#define WIDE_MAX (10 * MS_GRACE_NS)

static void
test_predict_reasons(void **st)
{
	(void)st;
	ms_sampling_input in = { .pipeline_enabled = true,
		                 .nsamplers = 1,
		                 .policy = MS_GRACE_SELECTION,
		                 .ninputs = 3,
		                 .input_rows = 100,
		                 .segment_min_ns = WIDE_MIN,
		                 .segment_max_ns = WIDE_MAX };
	enum ms_sampling_class c;
	enum ms_sampling_reason r;
	assert_true(ms_sampling_predict(&in, &c, &r));
	in.hot_inputs = 1;
	assert_false(ms_sampling_predict(&in, &c, &r));
	assert_int_equal(c, MS_SAMPLING_NOT_EXECUTED);
	assert_string_equal(ms_sampling_reason_name(r), "merge_grace");
	in.policy = MS_GRACE_TRACE; /* hot inputs are fine per trace */
	assert_true(ms_sampling_predict(&in, &c, &r));
	in.pipeline_enabled = false;
	assert_false(ms_sampling_predict(&in, &c, &r));
	assert_int_equal(r, MS_SREASON_PIPELINE_DISABLED);
	in.pipeline_enabled = true;
	in.nsamplers = 0;
	assert_false(ms_sampling_predict(&in, &c, &r));
	assert_int_equal(r, MS_SREASON_NO_SAMPLER);
	in.nsamplers = 1;
	in.input_rows = 5;
	/* The boundary guard's segment: none known, or one with no interior
	 * once the grace is off both edges, leaves no guard (as in the
	 * reference, whose guard needs a known coverage with an interior);
	 * inputs all within the grace of an edge leave nothing to drop. */
	in.segment_min_ns = in.segment_max_ns = 0;
	assert_false(ms_sampling_predict(&in, &c, &r));
	assert_int_equal(c, MS_SAMPLING_NOT_EXECUTED);
	assert_int_equal(r, MS_SREASON_GUARD_UNAVAILABLE);
	in.segment_min_ns = 1000;
	in.segment_max_ns = 1000 + MS_GRACE_NS;
	assert_false(ms_sampling_predict(&in, &c, &r));
	assert_int_equal(r, MS_SREASON_GUARD_UNAVAILABLE);
	in.segment_max_ns = 1000 + 10 * MS_GRACE_NS;
	in.edge_inputs = in.ninputs;
	assert_false(ms_sampling_predict(&in, &c, &r));
	assert_int_equal(r, MS_SREASON_FRAGMENT_GAP_CONTRACT);
	in.edge_inputs = in.ninputs - 1;
	assert_true(ms_sampling_predict(&in, &c, &r));
	in.event_disabled = true;
	assert_false(ms_sampling_predict(&in, &c, &r));
	assert_int_equal(r, MS_SREASON_EVENT_DISABLED);
	enum ms_grace_policy gp;
	assert_int_equal(ms_grace_policy_parse("trace", &gp), 0);
	assert_int_equal(gp, MS_GRACE_TRACE);
	assert_int_equal(ms_grace_policy_parse("x", &gp), MS_ERR_INVAL);
}

/* empty_input, as in the reference, is a merge of no input part, told
 * before anything else (even a disabled pipeline); inputs that hold no
 * row are not empty input: they hold no trace clear of the segment's
 * edge (fragment_gap_contract), or, under the trace policy, none of them
 * can hold a trace at or before the frontier (merge_grace). */
static void
test_predict_empty_input(void **st)
{
	(void)st;
	enum ms_sampling_class c;
	enum ms_sampling_reason r;
	ms_sampling_input in = { .pipeline_enabled = false };
	assert_false(ms_sampling_predict(&in, &c, &r));
	assert_int_equal(c, MS_SAMPLING_NOT_EXECUTED);
	assert_int_equal(r, MS_SREASON_EMPTY_INPUT);
	in.pipeline_enabled = true; /* and no sampler */
	assert_false(ms_sampling_predict(&in, &c, &r));
	assert_int_equal(r, MS_SREASON_EMPTY_INPUT);

	in.nsamplers = 1;
	in.segment_min_ns = WIDE_MIN;
	in.segment_max_ns = WIDE_MAX;
	ms_sampling_input_add(&in, 0, 0, 0, 1000);
	ms_sampling_input_add(&in, 0, 0, 0, 1000);
	assert_false(ms_sampling_predict(&in, &c, &r));
	assert_int_equal(c, MS_SAMPLING_NOT_EXECUTED);
	assert_int_equal(r, MS_SREASON_FRAGMENT_GAP_CONTRACT);
	ms_sampling_input one = in; /* and one input inside the segment */
	ms_sampling_input_add(&one, 10, 100, 200, 1000);
	assert_true(ms_sampling_predict(&one, &c, &r));
	assert_int_equal(c, MS_SAMPLING_EXECUTED);
	assert_int_equal(r, MS_SREASON_NONE);
	in.policy = MS_GRACE_TRACE;
	assert_false(ms_sampling_predict(&in, &c, &r));
	assert_int_equal(r, MS_SREASON_MERGE_GRACE);
	in.pipeline_enabled = false;
	assert_false(ms_sampling_predict(&in, &c, &r));
	assert_int_equal(r, MS_SREASON_PIPELINE_DISABLED);
}

/* Inputs are hot by their max ts and young (no trace old enough for
 * Decide) by their min ts, both strictly after the frontier. */
static void
test_input_add(void **st)
{
	(void)st;
	ms_sampling_input in;
	memset(&in, 0, sizeof(in));
	const int64_t f = 1000;
	ms_sampling_input_add(&in, 10, 100, 1000, f); /* mature */
	assert_int_equal(in.ninputs, 1);
	assert_int_equal(in.input_rows, 10);
	assert_int_equal(in.hot_inputs, 0);
	assert_int_equal(in.young_inputs, 0);
	ms_sampling_input_add(&in, 5, 1000, 1001, f); /* hot, not young */
	assert_int_equal(in.hot_inputs, 1);
	assert_int_equal(in.young_inputs, 0);
	ms_sampling_input_add(&in, 5, 1001, 2000, f); /* hot and young */
	assert_int_equal(in.hot_inputs, 2);
	assert_int_equal(in.young_inputs, 1);
	ms_sampling_input_add(&in, 0, 0, 0, f); /* empty: holds no trace */
	assert_int_equal(in.ninputs, 4);
	assert_int_equal(in.input_rows, 20);
	assert_int_equal(in.hot_inputs, 2);
	assert_int_equal(in.young_inputs, 2);
	assert_int_equal(in.edge_inputs, 0); /* no segment */

	/* With a segment [S, E] and grace G an input is on the edge when it
	 * ends before S + G or starts after E - G (or holds no row). */
	const int64_t G = MS_GRACE_NS, S = 100 * G, E = 200 * G;
	memset(&in, 0, sizeof(in));
	in.segment_min_ns = S;
	in.segment_max_ns = E;
	ms_sampling_input_add(&in, 3, S, S + G - 1, f); /* on the edge */
	ms_sampling_input_add(&in, 3, E - G + 1, E, f); /* on the edge */
	ms_sampling_input_add(&in, 0, 0, 0, f);         /* empty */
	assert_int_equal(in.edge_inputs, 3);
	ms_sampling_input_add(&in, 3, S + G, S + 2 * G, f); /* inside */
	assert_int_equal(in.edge_inputs, 3);
	assert_int_equal(in.ninputs, 4);
}

/* Under the trace policy a hot selection samples, unless no input can
 * hold a trace at or before the frontier: then, as in the reference, it
 * does not sample at all (not_executed, merge_grace) and stages nothing.
 * Under the selection policy any hot input stops it. */
static void
test_predict_policies(void **st)
{
	(void)st;
	const int64_t f = 5000;
	enum ms_sampling_class c;
	enum ms_sampling_reason r;
	for (int pol = 0; pol < 2; pol++) {
		ms_sampling_input in = { .pipeline_enabled = true,
			                 .nsamplers = 2,
			                 .policy = pol ? MS_GRACE_TRACE
			                               : MS_GRACE_SELECTION,
			                 .segment_min_ns = WIDE_MIN,
			                 .segment_max_ns = WIDE_MAX };
		ms_sampling_input_add(&in, 10, 100, 200, f); /* mature */
		assert_true(ms_sampling_predict(&in, &c, &r));
		assert_int_equal(c, MS_SAMPLING_EXECUTED);
		assert_int_equal(r, MS_SREASON_NONE);
		ms_sampling_input_add(&in, 10, 4000, 6000, f); /* hot */
		assert_int_equal(ms_sampling_predict(&in, &c, &r), pol == 1);
		assert_int_equal(c, pol ? MS_SAMPLING_EXECUTED
		                        : MS_SAMPLING_NOT_EXECUTED);
		assert_int_equal(r, pol ? MS_SREASON_NONE
		                        : MS_SREASON_MERGE_GRACE);
	}
	ms_sampling_input in = { .pipeline_enabled = true,
		                 .nsamplers = 1,
		                 .policy = MS_GRACE_TRACE,
		                 .segment_min_ns = WIDE_MIN,
		                 .segment_max_ns = WIDE_MAX };
	ms_sampling_input_add(&in, 10, 5001, 6000, f);
	ms_sampling_input_add(&in, 10, 7000, 8000, f);
	assert_false(ms_sampling_predict(&in, &c, &r)); /* not staged */
	assert_int_equal(c, MS_SAMPLING_NOT_EXECUTED);
	assert_int_equal(r, MS_SREASON_MERGE_GRACE);
	/* One input reaching the frontier with its min ts: staged. */
	ms_sampling_input one = in;
	ms_sampling_input_add(&one, 10, 5000, 9000, f);
	assert_true(ms_sampling_predict(&one, &c, &r));
	assert_int_equal(c, MS_SAMPLING_EXECUTED);
	assert_int_equal(r, MS_SREASON_NONE);
	in.policy = MS_GRACE_SELECTION;
	assert_false(ms_sampling_predict(&in, &c, &r));
	assert_int_equal(c, MS_SAMPLING_NOT_EXECUTED);
	assert_int_equal(r, MS_SREASON_MERGE_GRACE);
	/* An earlier reason wins over the grace. */
	in.policy = MS_GRACE_TRACE;
	in.nsamplers = 0;
	assert_false(ms_sampling_predict(&in, &c, &r));
	assert_int_equal(r, MS_SREASON_NO_SAMPLER);
}

/* Every classification and reason name parses back to its value; the
 * recorder, the report and the TUI filter all rely on this one table. */
static void
test_sampling_names_round_trip(void **state)
{
	(void)state;
	for (int c = 0; c < MS_SAMPLING_CLASS_COUNT; c++)
		assert_int_equal(ms_sampling_class_parse(ms_sampling_class_name(
		                         (enum ms_sampling_class)c)),
		                 c);
	for (int r = 0; r < MS_SREASON_COUNT; r++)
		assert_int_equal(
		        ms_sampling_reason_parse(ms_sampling_reason_name(
		                (enum ms_sampling_reason)r)),
		        r);
	assert_string_equal(ms_sampling_class_name(MS_SAMPLING_EXECUTED),
	                    "executed");
	assert_string_equal(ms_sampling_class_name(MS_SAMPLING_CLASS_COUNT),
	                    "unknown");
	assert_int_equal(ms_sampling_class_parse("sometimes"), -1);
	assert_int_equal(ms_sampling_reason_parse(NULL), -1);
	assert_int_equal(ms_sampling_reason_parse("guard_unavailable"),
	                 MS_SREASON_GUARD_UNAVAILABLE);
}

/* Beyond the round trip: out-of-range values, case and other spellings. */
static void
test_names(void **st)
{
	(void)st;
	assert_string_equal(ms_sampling_reason_name(MS_SREASON_COUNT),
	                    "unknown");
	assert_string_equal(
	        ms_sampling_reason_name(MS_SREASON_ALL_TRACES_OVERSIZED),
	        "all_traces_oversized");
	assert_int_equal(ms_sampling_class_parse("executed"),
	                 MS_SAMPLING_EXECUTED);
	assert_int_equal(ms_sampling_class_parse("Executed"), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_predict_reasons),
		cmocka_unit_test(test_predict_empty_input),
		cmocka_unit_test(test_input_add),
		cmocka_unit_test(test_predict_policies),
		cmocka_unit_test(test_sampling_names_round_trip),
		cmocka_unit_test(test_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
