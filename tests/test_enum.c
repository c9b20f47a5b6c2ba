/*
 * test_enum.c - the enum name tables of core (ms_enum.h): every value's
 * name as the event log, reports and command line spell it, the text read
 * back to the same value, and what an out-of-range value is called.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "ms_engine.h"
#include "ms_enum.h"
#include "ms_limits.h"
#include "ms_merge.h"
#include "ms_part.h"
#include "ms_chain.h"
#include "pipeline_int.h"

static void
test_lookups(void **state)
{
	(void)state;
	static const char *const names[] = { [1] = "one", [3] = "three" };
	size_t n = MS_NAMES_LEN(names);
	assert_int_equal(n, 4);
	assert_string_equal(ms_enum_name(names, n, 1, "?"), "one");
	assert_string_equal(ms_enum_name(names, n, 3, "?"), "three");
	/* A hole, below and past the table. */
	assert_string_equal(ms_enum_name(names, n, 0, "?"), "?");
	assert_string_equal(ms_enum_name(names, n, -1, "?"), "?");
	assert_string_equal(ms_enum_name(names, n, 4, "none"), "none");
	assert_int_equal(ms_enum_parse(names, n, "three"), 3);
	assert_int_equal(ms_enum_parse(names, n, "one"), 1);
	assert_int_equal(ms_enum_parse(names, n, "One"), -1);
	assert_int_equal(ms_enum_parse(names, n, ""), -1);
	assert_int_equal(ms_enum_parse(names, n, NULL), -1);
}

static void
test_core_names(void **state)
{
	(void)state;
	static const char *const kinds[] = { "core", "latency", "start_time" };
	for (int k = 0; k < MS_KIND_COUNT; k++) {
		assert_string_equal(ms_part_kind_name(k), kinds[k]);
		assert_int_equal(ms_part_kind_parse(kinds[k]), k);
	}
	assert_string_equal(ms_part_kind_name(MS_KIND_COUNT), "unknown");
	assert_int_equal(ms_part_kind_parse("index"), -1);

	static const char *const links[] = {
		"ok",      "error",        "wrong_length", "bad_value",
		"timeout", "circuit_open", "host_error",   "crashed",
	};
	for (int r = 0; r < MS_LINK_RESULT_COUNT; r++)
		assert_string_equal(ms_link_result_name(r), links[r]);
	assert_string_equal(ms_link_result_name(MS_LINK_RESULT_COUNT),
	                    "unknown");

	static const char *const guard[] = {
		"confirmed",    "filter_positive", "no_filter",
		"probe_budget", "drop_budget",     "bad_range",
		"segment_edge",
	};
	for (int r = 0; r < MS_GUARD_REASON_COUNT; r++)
		assert_string_equal(ms_guard_reason_name(r), guard[r]);
	assert_string_equal(ms_guard_reason_name(MS_GUARD_REASON_COUNT),
	                    "unknown");

	assert_string_equal(ms_limit_source_name(MS_LIMIT_MACHINE), "machine");
	assert_string_equal(ms_limit_source_name(MS_LIMIT_CGROUP_V2),
	                    "cgroup2");
	assert_string_equal(ms_limit_source_name(MS_LIMIT_CGROUP_V1),
	                    "cgroup1");
	assert_string_equal(ms_limit_source_name(MS_LIMIT_PROFILE), "profile");
	assert_string_equal(ms_limit_source_name((enum ms_limit_source)9),
	                    "unknown");

	assert_string_equal(ms_flush_reason_name(MS_FLUSH_BYTES), "bytes");
	assert_string_equal(ms_flush_reason_name(MS_FLUSH_TRACES), "traces");
	assert_string_equal(ms_flush_reason_name(MS_FLUSH_OVERSIZED),
	                    "oversized");
	assert_string_equal(ms_flush_reason_name(MS_FLUSH_FINAL), "final");
	assert_string_equal(ms_flush_reason_name((enum ms_flush_reason)9),
	                    "unknown");

	static const char *const outcomes[] = { "kept", "dropped", "deferred",
		                                "oversized", "hot" };
	for (int o = MS_TRACE_KEPT; o <= MS_TRACE_HOT; o++)
		assert_string_equal(ms_trace_outcome_name(o), outcomes[o]);
	assert_string_equal(ms_trace_outcome_name((enum ms_trace_outcome)9),
	                    "unknown");

	assert_string_equal(ms_lane_name(MS_LANE_KIND_FAST), MS_LANE_FAST);
	assert_string_equal(ms_lane_name(MS_LANE_KIND_SLOW), MS_LANE_SLOW);
	assert_string_equal(ms_lane_name(MS_LANE_KIND_FINALIZE),
	                    MS_LANE_FINALIZE);
	assert_string_equal(ms_lane_name(MS_LANE_KIND_COUNT), "?");

	static const char *const stages[] = { "none",  "pin",   "read",
		                              "write", "index", "publish",
		                              "done" };
	for (int st = 0; st < MS_MERGE_STAGE_COUNT; st++)
		assert_string_equal(ms_merge_stage_name(st), stages[st]);
	assert_string_equal(ms_merge_stage_name(MS_MERGE_STAGE_COUNT),
	                    "unknown");
}

/* The two-valued settings: the default's name for anything else. */
static void
test_policy_and_host_mode(void **state)
{
	(void)state;
	enum ms_grace_policy p = MS_GRACE_TRACE;
	assert_int_equal(ms_grace_policy_parse("selection", &p), 0);
	assert_int_equal(p, MS_GRACE_SELECTION);
	assert_int_equal(ms_grace_policy_parse("trace", &p), 0);
	assert_int_equal(p, MS_GRACE_TRACE);
	assert_int_equal(ms_grace_policy_parse("Trace", &p), MS_ERR_INVAL);
	assert_int_equal(ms_grace_policy_parse(NULL, &p), MS_ERR_INVAL);
	assert_int_equal(p, MS_GRACE_TRACE);
	assert_string_equal(ms_grace_policy_name(MS_GRACE_SELECTION),
	                    "selection");
	assert_string_equal(ms_grace_policy_name(MS_GRACE_TRACE), "trace");
	assert_string_equal(ms_grace_policy_name((enum ms_grace_policy)7),
	                    "selection");

	enum ms_plugin_host_mode m = MS_PLUGIN_HOST_INPROC;
	assert_true(ms_plugin_host_mode_parse("process", &m));
	assert_int_equal(m, MS_PLUGIN_HOST_PROCESS);
	assert_true(ms_plugin_host_mode_parse("inproc", &m));
	assert_int_equal(m, MS_PLUGIN_HOST_INPROC);
	assert_false(ms_plugin_host_mode_parse("thread", &m));
	assert_false(ms_plugin_host_mode_parse(NULL, &m));
	assert_string_equal(ms_plugin_host_mode_name(MS_PLUGIN_HOST_PROCESS),
	                    "process");
	assert_string_equal(ms_plugin_host_mode_name(MS_PLUGIN_HOST_INPROC),
	                    "inproc");
	assert_string_equal(
	        ms_plugin_host_mode_name((enum ms_plugin_host_mode)7),
	        "inproc");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lookups),
		cmocka_unit_test(test_core_names),
		cmocka_unit_test(test_policy_and_host_mode),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
