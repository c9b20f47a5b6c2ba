/*
 * test_skywalking.c - the SkyWalking sampler plugin, loaded through the
 * real loader and run through the chain: the healthy-sample hash vectors,
 * the rule order (duration, errors, tag rules, sample), the duration
 * envelope over all rows of a trace, tag rule kinds, fail-open on missing
 * columns, per-rule counters, and config validation at open.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "ms_pipeline.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MS_NS 1000000LL

static char sw_path[512];

static ms_chain *
open_sw(const char *config)
{
	ms_chain_link_spec l = { sw_path, config };
	ms_chain *c;
	ms_errbuf eb;
	if (ms_chain_open(&c, &l, 1, NULL, &eb))
		fail_msg("open %s: %s", config, eb.msg);
	return c;
}

static int
open_err(const char *config, ms_errbuf *eb)
{
	ms_chain_link_spec l = { sw_path, config };
	ms_chain *c = NULL;
	int rc = ms_chain_open(&c, &l, 1, NULL, eb);
	ms_chain_close(c);
	return rc;
}

/* A trace: rows of (start ms, latency ms, error, tags). */
typedef struct tr {
	const char *id;
	int n;
	int64_t start_ms[4];
	uint32_t lat_ms[4];
	bool err[4];
	const char *tags[4][3];
	uint32_t ntags[4];
} tr;

/* Evaluate traces (IDs ascending) through the chain, one batch. */
static void
run(ms_chain *c, const tr *t, int nt, uint8_t *keep)
{
	ms_row rows[64];
	int k = 0;
	for (int i = 0; i < nt; i++)
		for (int r = 0; r < t[i].n; r++) {
			ms_row *w = &rows[k++];
			memset(w, 0, sizeof(*w));
			w->trace_id = (const uint8_t *)t[i].id;
			w->trace_id_len = (uint32_t)strlen(t[i].id);
			w->start_ns = t[i].start_ms[r] * MS_NS;
			w->latency_ms = t[i].lat_ms[r];
			w->is_error = t[i].err[r];
			w->tags = t[i].tags[r];
			w->ntags = t[i].ntags[r];
		}
	size_t n;
	ms_errbuf eb;
	if (ms_chain_evaluate_rows(c, NULL, rows, (size_t)k, 0, keep, NULL,
	                           (size_t)nt, &n, NULL, &eb))
		fail_msg("%s", eb.msg);
	assert_int_equal(n, (size_t)nt);
	ms_link_stats ls;
	ms_chain_link_stats(c, 0, &ls);
	assert_int_equal(ls.last_result, MS_LINK_OK);
}

static uint64_t
stat_of(ms_chain *c, const char *name)
{
	ms_plugin_stat s[32];
	size_t n = ms_plugin_stats(ms_chain_plugin(c, 0), s, 32);
	for (size_t i = 0; i < n && i < 32; i++)
		if (strcmp(s[i].name, name) == 0)
			return s[i].value;
	fail_msg("no stat %s", name);
	return 0;
}

static double
fnv_u(const char *s)
{
	uint64_t h = 14695981039346656037ull;
	for (; *s; s++) {
		h ^= (uint8_t)*s;
		h *= 1099511628211ull;
	}
	return (double)(h >> 11) / 9007199254740992.0;
}

static void
test_hash_vectors(void **st)
{
	(void)st;
	/* The formula itself, including the empty ID the host never sends. */
	assert_true(fnv_u("") == 0.7966707284832713);
	assert_true(fnv_u("a") == 0.6851175009560461);
	assert_true(fnv_u("trace-0001") == 0.37506316992498556);

	/* The plugin's sampler sits exactly on those values: a rate just
	 * above keeps, the value itself (strict <) and below drop. */
	static const struct {
		const char *id;
		const char *above, *at;
	} v[] = {
		{ "a", "0.68511750095605", "0.6851175009560461" },
		{ "trace-0001", "0.375063169925", "0.37506316992498556" },
	};
	for (size_t i = 0; i < 2; i++) {
		char cfg[256];
		tr t = {
			v[i].id, 1, { 0 }, { 1 }, { false }, { { 0 } }, { 0 }
		};
		uint8_t keep;
		snprintf(cfg, sizeof(cfg),
		         "{\"durationThresholdMs\":100000,\"keepErrors\":false,"
		         "\"healthySampleRate\":%s}",
		         v[i].above);
		ms_chain *c = open_sw(cfg);
		run(c, &t, 1, &keep);
		assert_int_equal(keep, 1);
		ms_chain_close(c);
		snprintf(cfg, sizeof(cfg),
		         "{\"durationThresholdMs\":100000,\"keepErrors\":false,"
		         "\"healthySampleRate\":\"%s\"}",
		         v[i].at);
		c = open_sw(cfg);
		run(c, &t, 1, &keep);
		assert_int_equal(keep, 0);
		assert_int_equal(stat_of(c, "sample.dropped"), 1);
		ms_chain_close(c);
	}
}

static void
test_rule_order(void **st)
{
	(void)st;
	/* Rate 0: only the first three rules can keep. Trace IDs chosen so
	 * they ascend. */
	ms_chain *c =
	        open_sw("{\"durationThresholdMs\":500,\"keepErrors\":true,"
	                "\"healthySampleRate\":0,"
	                "\"keepTagRules\":[\"db\",\"http.status=500\","
	                "\"http.url=~^/api/v[0-9]+/\"]}");
	tr t[7] = {
		/* 0: slow and failing: duration keeps first */
		{ "t0",
		  2,
		  { 0, 100 },
		  { 600, 1 },
		  { false, true },
		  { { 0 } },
		  { 0 } },
		/* 1: envelope over rows: 0..100 and 450..500 = 500 ms */
		{ "t1", 2, { 0, 450 }, { 100, 50 }, { 0 }, { { 0 } }, { 0 } },
		/* 2: 499 ms, an error row: errors keep */
		{ "t2",
		  2,
		  { 0, 400 },
		  { 10, 99 },
		  { false, true },
		  { { 0 } },
		  { 0 } },
		/* 3: fast, no error, tag "db=x": exists rule */
		{ "t3", 1, { 0 }, { 5 }, { false }, { { "db=x" } }, { 1 } },
		/* 4: equals rule; "db.x" alone is not key "db" */
		{ "t4",
		  2,
		  { 0, 1 },
		  { 5, 5 },
		  { 0 },
		  { { "db.x=1" }, { "http.status=500" } },
		  { 1, 1 } },
		/* 5: regex rule on the value */
		{ "t5",
		  1,
		  { 0 },
		  { 5 },
		  { 0 },
		  { { "http.url=/api/v2/x" } },
		  { 1 } },
		/* 6: nothing matches: sample with rate 0 drops */
		{ "t6",
		  1,
		  { 0 },
		  { 5 },
		  { 0 },
		  { { "http.status=200", "http.url=/v2", "dbx" } },
		  { 3 } },
	};
	uint8_t keep[7];
	run(c, t, 7, keep);
	static const uint8_t want[7] = { 1, 1, 1, 1, 1, 1, 0 };
	assert_memory_equal(keep, want, 7);
	assert_int_equal(stat_of(c, "duration.reached"), 7);
	assert_int_equal(stat_of(c, "duration.kept"), 2);
	assert_int_equal(stat_of(c, "errors.reached"), 5);
	assert_int_equal(stat_of(c, "errors.kept"), 1);
	assert_int_equal(stat_of(c, "tags.reached"), 4);
	assert_int_equal(stat_of(c, "tags.kept"), 3);
	assert_int_equal(stat_of(c, "sample.reached"), 1);
	assert_int_equal(stat_of(c, "sample.kept"), 0);
	assert_int_equal(stat_of(c, "sample.dropped"), 1);
	assert_int_equal(ms_plugin_projection(ms_chain_plugin(c, 0)),
	                 MS_PROJ_START | MS_PROJ_LATENCY | MS_PROJ_ERROR |
	                         MS_PROJ_TAGS);
	ms_chain_close(c);

	/* Threshold one millisecond above the envelope: t1 goes on. */
	c = open_sw("{\"durationThresholdMs\":501,\"keepErrors\":false,"
	            "\"healthySampleRate\":0}");
	run(c, t, 2, keep);
	assert_int_equal(keep[0], 1);
	assert_int_equal(keep[1], 0);
	/* No tag rules, no errors rule: only start and latency read. */
	assert_int_equal(ms_plugin_projection(ms_chain_plugin(c, 0)),
	                 MS_PROJ_START | MS_PROJ_LATENCY);
	assert_int_equal(stat_of(c, "errors.reached"), 0);
	ms_chain_close(c);
}

static void
test_missing_columns_keep(void **st)
{
	(void)st;
	ms_chain *c = open_sw("{\"healthySampleRate\":0}");
	ms_row r;
	memset(&r, 0, sizeof(r));
	r.trace_id = (const uint8_t *)"x";
	r.trace_id_len = 1;
	ms_batch *b;
	ms_errbuf eb;
	/* A batch without the projected columns. */
	assert_int_equal(ms_batch_from_rows(&b, NULL, 0, &r, 1, &eb), 0);
	uint8_t v = 9;
	assert_int_equal(ms_plugin_decide_direct(ms_chain_plugin(c, 0),
	                                         ms_batch_view(b), &v, 1),
	                 1);
	assert_int_equal(v, MS_VERDICT_KEEP);
	assert_int_equal(stat_of(c, "missing_column"), 1);
	ms_batch_release(b);
	ms_chain_close(c);
}

static void
test_default_config_samples_healthy(void **st)
{
	(void)st;
	ms_chain *c = open_sw(MS_SKYWALKING_DEFAULT_CONFIG);
	enum { N = 20000 };
	ms_row *rows = calloc(N, sizeof(ms_row));
	char(*ids)[16] = calloc(N, 16);
	for (int i = 0; i < N; i++) {
		snprintf(ids[i], 16, "h-%06d", i);
		rows[i].trace_id = (const uint8_t *)ids[i];
		rows[i].trace_id_len = (uint32_t)strlen(ids[i]);
		rows[i].latency_ms = 20;
	}
	uint8_t *keep = malloc(N);
	size_t n;
	ms_errbuf eb;
	assert_int_equal(ms_chain_evaluate_rows(c, NULL, rows, N, 512, keep,
	                                        NULL, N, &n, NULL, &eb),
	                 0);
	int kept = 0;
	for (int i = 0; i < N; i++) {
		kept += keep[i];
		assert_int_equal(keep[i], fnv_u(ids[i]) < 0.1);
	}
	assert_true(kept > N / 20 && kept < N / 5);
	assert_int_equal(stat_of(c, "sample.kept"), (uint64_t)kept);
	free(keep);
	free(ids);
	free(rows);
	ms_chain_close(c);
}

static void
test_config_validation(void **st)
{
	(void)st;
	static const struct {
		const char *cfg, *needle;
	} bad[] = {
		{ "", "empty config" },
		{ "{}", "empty config object" },
		{ "{\"durationThreshold\":5}",
		  "unknown key \"durationThreshold\"" },
		{ "{\"healthySampleRate\":1.5}", "healthySampleRate" },
		{ "{\"healthySampleRate\":\"x\"}", "healthySampleRate" },
		{ "{\"keepErrors\":\"yes\"}", "keepErrors" },
		{ "{\"durationThresholdMs\":-1}", "durationThresholdMs" },
		{ "{\"keepTagRules\":\"db\"}", "keepTagRules" },
		{ "{\"keepTagRules\":[\"a=~(\"]}", "keepTagRules[0]" },
		{ "{\"keepTagRules\":[\"=v\"]}", "empty key" },
		{ "{\"keepTagRules\":[\"a=~x++\"]}", "stacked quantifiers" },
		{ "{\"keepTagRules\":[\"a=~(x{9}){40}\"]}", "over 32" },
		{ "{\"keepErrors\":true,}", "offset" },
		{ "{\"keepErrors\":true,\"keepErrors\":false}", "duplicate" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ms_errbuf eb = { "" };
		assert_int_equal(open_err(bad[i].cfg, &eb), MS_ERR_CONFIG);
		if (!strstr(eb.msg, bad[i].needle))
			fail_msg("config %s: '%s' not in: %s", bad[i].cfg,
			         bad[i].needle, eb.msg);
	}
	/* 32 rules are fine, 33 are not. */
	char cfg[1024] = "{\"keepTagRules\":[";
	for (int i = 0; i < 33; i++)
		snprintf(cfg + strlen(cfg), sizeof(cfg) - strlen(cfg),
		         "%s\"k%d\"", i ? "," : "", i);
	strcat(cfg, "]}");
	ms_errbuf eb;
	assert_int_equal(open_err(cfg, &eb), MS_ERR_CONFIG);
	assert_non_null(strstr(eb.msg, "at most 32"));
	char *cut = strstr(cfg, ",\"k32\"");
	strcpy(cut, "]}");
	assert_int_equal(open_err(cfg, &eb), 0);
}

static int
setup(void **st)
{
	(void)st;
	snprintf(sw_path, sizeof(sw_path), "%s/skywalking.so", MS_PLUGIN_DIR);
	return 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hash_vectors),
		cmocka_unit_test(test_rule_order),
		cmocka_unit_test(test_missing_columns_keep),
		cmocka_unit_test(test_default_config_samples_healthy),
		cmocka_unit_test(test_config_validation),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
