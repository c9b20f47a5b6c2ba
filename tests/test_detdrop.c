/*
 * test_detdrop.c - the deterministic-drop plugin through the loader and
 * chain: the observed ratio over 100,000 IDs is within one point of the
 * setting, verdicts depend on the trace ID alone (not on batch splits or
 * other columns), configured and observed ratios are reported (stats and
 * the host log at close), and bad configs are refused naming the key.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "ms_chain_spec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 100000

static char dd_path[512];

typedef struct logcap {
	char last[256];
	int lines;
} logcap;

static void
cap_log(void *ctx, const ms_chain_log_line *ln)
{
	logcap *l = ctx;
	snprintf(l->last, sizeof(l->last), "%s: %s", ln->plugin,
	         ln->msg ? ln->msg : "");
	l->lines++;
}

static ms_chain *
open_dd(const char *config, logcap *lc)
{
	ms_chain_link_spec l = { dd_path, config };
	ms_chain_opts o = { NULL, 0, 0, lc ? cap_log : NULL, lc, 0, 0,
		            NULL, 0, 0 };
	ms_chain *c;
	ms_errbuf eb;
	if (ms_chain_open(&c, &l, 1, &o, &eb))
		fail_msg("%s", eb.msg);
	return c;
}

typedef struct ids {
	char (*id)[16];
	ms_row *rows;
} ids;

static void
make_ids(ids *x, int salt_latency)
{
	x->id = calloc(N, 16);
	x->rows = calloc(N, sizeof(ms_row));
	for (int i = 0; i < N; i++) {
		snprintf(x->id[i], 16, "trace-%06d", i);
		x->rows[i].trace_id = (const uint8_t *)x->id[i];
		x->rows[i].trace_id_len = (uint32_t)strlen(x->id[i]);
		x->rows[i].latency_ms = (uint32_t)(salt_latency * i);
		x->rows[i].is_error = salt_latency && i % 2;
	}
}

static void
free_ids(ids *x)
{
	free(x->id);
	free(x->rows);
}

static uint64_t
stat_of(ms_chain *c, const char *name)
{
	ms_plugin_stat s[8];
	size_t n = ms_plugin_stats(ms_chain_plugin(c, 0), s, 8);
	for (size_t i = 0; i < n && i < 8; i++)
		if (strcmp(s[i].name, name) == 0)
			return s[i].value;
	fail_msg("no stat %s", name);
	return 0;
}

static void
observed_within_one_point(const char *cfg, double pct)
{
	ids x;
	make_ids(&x, 0);
	logcap lc = { "", 0 };
	ms_chain *c = open_dd(cfg, &lc);
	uint8_t *keep = malloc(N);
	size_t n;
	ms_errbuf eb;
	assert_int_equal(ms_chain_evaluate_rows(c, NULL, x.rows, N, 0, keep,
	                                        NULL, N, &n, NULL, &eb),
	                 0);
	int dropped = 0;
	for (int i = 0; i < N; i++)
		dropped += !keep[i];
	double observed = 100.0 * dropped / N;
	if (observed < pct - 1.0 || observed > pct + 1.0)
		fail_msg("configured %.1f%%, observed %.3f%%", pct, observed);
	assert_int_equal(stat_of(c, "configured_ppm"),
	                 (uint64_t)(pct * 10000 + 0.5));
	assert_int_equal(stat_of(c, "evaluated"), N);
	assert_int_equal(stat_of(c, "dropped"), (uint64_t)dropped);
	ms_chain_close(c);
	/* At close the plugin reports both ratios through the host log. */
	assert_int_equal(lc.lines, 1);
	char want[64];
	snprintf(want, sizeof(want), "configured %.3f%%", pct);
	assert_non_null(strstr(lc.last, want));
	assert_non_null(strstr(lc.last, "observed"));
	assert_non_null(strstr(lc.last, "detdrop: "));
	free(keep);
	free_ids(&x);
}

static void
test_ratio_35(void **st)
{
	(void)st;
	observed_within_one_point("{\"percent\":35}", 35.0);
}

static void
test_ratio_edges(void **st)
{
	(void)st;
	observed_within_one_point("{\"percent\":1}", 1.0);
	observed_within_one_point("{\"percent\":\"99\"}", 99.0);
	observed_within_one_point("{\"percent\":0}", 0.0);
	observed_within_one_point("{\"percent\":100}", 100.0);
}

static void
test_verdict_depends_on_id_only(void **st)
{
	(void)st;
	ids a, b;
	make_ids(&a, 0);
	make_ids(&b, 7); /* other latencies and errors */
	ms_chain *c = open_dd("{\"percent\":35}", NULL);
	uint8_t *k1 = malloc(N), *k2 = malloc(N);
	size_t n;
	ms_errbuf eb;
	assert_int_equal(ms_chain_evaluate_rows(c, NULL, a.rows, N, 4096, k1,
	                                        NULL, N, &n, NULL, &eb),
	                 0);
	assert_int_equal(ms_chain_evaluate_rows(c, NULL, b.rows, N, 7, k2, NULL,
	                                        N, &n, NULL, &eb),
	                 0);
	assert_memory_equal(k1, k2, N);
	ms_chain_close(c);
	/* A second instance (another merge, another run) agrees. */
	c = open_dd("{\"percent\":35}", NULL);
	assert_int_equal(ms_chain_evaluate_rows(c, NULL, a.rows, 1000, 1, k2,
	                                        NULL, N, &n, NULL, &eb),
	                 0);
	assert_memory_equal(k1, k2, 1000);
	ms_chain_close(c);
	free(k1);
	free(k2);
	free_ids(&a);
	free_ids(&b);
}

static void
test_config_errors(void **st)
{
	(void)st;
	static const struct {
		const char *cfg, *needle;
	} bad[] = {
		{ "", "empty config" },
		{ "{}", "missing key \"percent\"" },
		{ "{\"pct\":3}", "unknown key \"pct\"" },
		{ "{\"percent\":101}", "0..100" },
		{ "{\"percent\":-1}", "0..100" },
		{ "{\"percent\":true}", "0..100" },
		{ "[35]", "expected a JSON object" },
		{ "{\"percent\":35} x", "trailing" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ms_chain_link_spec l = { dd_path, bad[i].cfg };
		ms_chain *c = NULL;
		ms_errbuf eb = { "" };
		assert_int_equal(ms_chain_open(&c, &l, 1, NULL, &eb),
		                 MS_ERR_CONFIG);
		if (!strstr(eb.msg, bad[i].needle))
			fail_msg("config %s: '%s' not in: %s", bad[i].cfg,
			         bad[i].needle, eb.msg);
	}
	/* The chain spec shorthand builds the same config. */
	ms_chain_spec s;
	ms_errbuf eb;
	assert_int_equal(
	        ms_chain_spec_parse(&s, "detdrop:35", MS_PLUGIN_DIR, NULL, &eb),
	        0);
	ms_chain *c;
	assert_int_equal(ms_chain_open(&c, s.links, s.n, NULL, &eb), 0);
	assert_int_equal(ms_plugin_projection(ms_chain_plugin(c, 0)), 0);
	ms_chain_close(c);
	ms_chain_spec_release(&s);
}

static int
setup(void **st)
{
	(void)st;
	snprintf(dd_path, sizeof(dd_path), "%s/detdrop.so", MS_PLUGIN_DIR);
	return 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ratio_35),
		cmocka_unit_test(test_ratio_edges),
		cmocka_unit_test(test_verdict_depends_on_id_only),
		cmocka_unit_test(test_config_errors),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
