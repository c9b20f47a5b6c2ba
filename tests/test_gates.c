/*
 * test_gates.c - the end-of-run gates of a replay seen failing when they
 * should, on the smoke fixture: plugin_health for a link that returns a
 * malformed verdict, errs or times out until its circuit opens (on a
 * day-1x fixture, for enough calls; WARN under --allow-fail-open, PASS for
 * the shipped plugins), plugin_bounds for a
 * batch whose bounds differ from the rows' own timestamps,
 * one_block_per_trace for a split block in an intermediate part and for
 * a publication whose staged bytes differ from its fixture's, even with
 * a manifest forged to match them (and, the bytes unchanged, every
 * publication read agreeing with its fixture's record), and
 * verdict_oracle both ways (the run drops a trace the oracle keeps; the
 * oracle drops traces that survive with no recorded reason),
 * one_decide_per_trace for batches handed to the chain twice, and the
 * gates that name each lie of a plugin that lies (tp_liar); and
 * plugin_health passing when a merge failed after Decide for a reason
 * of its own.
 */
#include "replay_testlib.h"
#include "part_testlib.h"
#include "merge_int.h"
#include "ms_gates.h"
#include "ms_replay_events.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "evdb_testlib.h"

#include <dirent.h>

/* ---- ledgers: the detail names what differs ------------------------- */

static ms_ledger_set
ledgers_of(uint64_t core, uint64_t lat, uint64_t st)
{
	ms_ledger_set s;
	ms_ledger_set_init(&s);
	s.kind[MS_KIND_CORE] = (ms_ledger){ core, core * 7, 1 };
	s.kind[MS_KIND_LATENCY] = (ms_ledger){ lat, lat * 11, 2 };
	s.kind[MS_KIND_START_TIME] = (ms_ledger){ st, st * 13, 3 };
	return s;
}

/* An index that lost rows while the core is whole: the detail says the
 * core is equal and names the index, not "core ... != ..." with two
 * equal ledgers. */
static void
test_ledgers_detail_names_kind(void **state)
{
	(void)state;
	char d[MS_EV_TEXT_MAX], core[MS_LEDGER_STR_MAX], want[300];
	ms_ledger_set want_l = ledgers_of(45607, 45607, 45607);
	ms_ledger_format(&want_l.kind[MS_KIND_CORE], core);

	ms_ledger_set fin = ledgers_of(45607, 45130, 45607);
	ms_gate_ledgers_detail(&fin, &want_l, 12940, 117448, d, sizeof(d));
	snprintf(want, sizeof(want),
	         "core %s = input minus oracle %s; latency index DIFFERS "
	         "(45130 rows, expected 45607); 12940 traces (117448 rows) "
	         "dropped",
	         core, core);
	assert_string_equal(d, want);

	/* Same rows, other values: said so. */
	fin = want_l;
	fin.kind[MS_KIND_START_TIME].sum_lo++;
	ms_gate_ledgers_detail(&fin, &want_l, 0, 0, d, sizeof(d));
	assert_non_null(strstr(d, "; start_time index DIFFERS (45607 rows, "
	                          "expected 45607, other sums); "));
	assert_null(strstr(d, "latency"));

	/* The core differs: "!=", both ledgers in full. */
	fin = ledgers_of(45606, 45607, 45607);
	char got[MS_LEDGER_STR_MAX];
	ms_ledger_format(&fin.kind[MS_KIND_CORE], got);
	ms_gate_ledgers_detail(&fin, &want_l, 1, 2, d, sizeof(d));
	snprintf(want, sizeof(want),
	         "core %s != input minus oracle %s; indexes equal; 1 traces "
	         "(2 rows) dropped",
	         got, core);
	assert_string_equal(d, want);

	/* All equal. */
	ms_gate_ledgers_detail(&want_l, &want_l, 0, 0, d, sizeof(d));
	snprintf(want, sizeof(want),
	         "core %s = input minus oracle %s; indexes equal; 0 traces "
	         "(0 rows) dropped",
	         core, core);
	assert_string_equal(d, want);
}

/* idle_no_leaks with a failed merge whose cause names a long path: the
 * cause comes first and is whole within the detail's MS_EV_TEXT_MAX
 * (after the figures, it was cut at "...core-06c3): r"). */
static void
test_idle_detail_keeps_cause(void **state)
{
	(void)state;
	char d[MS_EV_TEXT_MAX], cause[192], path[120];
	memset(path, 'w', sizeof(path) - 1);
	path[sizeof(path) - 1] = '\0';
	snprintf(cause, sizeof(cause),
	         "merge #97 (fast): /%s/core-06c3: read failed: checksum "
	         "mismatch",
	         path);
	ms_gate_facts f = { .engine_idle = true, .quarantined = 2 };
	ms_gate_idle_detail(&f, 0, "0 stray in parts/", 3, cause, d, sizeof(d));
	char want[300];
	snprintf(want, sizeof(want), "3 failed merges (the last: %s); ", cause);
	assert_true(strncmp(d, want, strlen(want)) == 0);
	assert_non_null(strstr(d, "checksum mismatch); idle yes"));

	/* A clean run reads as before. */
	f.quarantined = 0;
	ms_gate_idle_detail(&f, 0, "0 stray in parts/", 0, "", d, sizeof(d));
	assert_string_equal(d, "idle yes, 0 claimed, 0 temporary entries, 0 "
	                       "stray in parts/, 0 quarantined, 0 failed "
	                       "merges");
}

/* ---- plugin_health ---------------------------------------------------- */

/* A link's counters fed to plugin_health's reconciliation: 10 Decide
 * calls, 8 ok and 2 bad values, reconcile; a chain that did not count
 * one of the bad values (its calls still counted) does not, although no
 * other figure differs, and the gate names the link and both counts. A
 * seek's removed stretch is taken off before comparing, and a discarded
 * attempt allows more results than the merges' Decide calls, not fewer. */
static void
test_plugin_health_counts_every_result(void **state)
{
	(void)state;
	ms_link_stats st, gone;
	memset(&st, 0, sizeof(st));
	memset(&gone, 0, sizeof(gone));
	snprintf(st.name, sizeof(st.name), "tp_badval");
	st.calls = 10;
	st.results[MS_LINK_OK] = 8;
	st.results[MS_LINK_BAD_VALUE] = 2;
	ms_gate_link_calls l = {
		.st = &st, .gone = &gone, .ev_calls = 10, .decide = 10
	};
	char why[160] = "";
	assert_true(ms_gate_link_calls_ok(&l, why, sizeof(why)));

	st.results[MS_LINK_BAD_VALUE] = 1; /* one failure not counted */
	assert_false(ms_gate_link_calls_ok(&l, why, sizeof(why)));
	assert_string_equal(why, "link tp_badval: 9 results counted (ok or "
	                         "failed open) for 10 Decide calls, expected "
	                         "one each");

	/* A stretch a seek removed: 4 calls, 4 results, none on record. */
	st.results[MS_LINK_BAD_VALUE] = 2;
	st.calls += 4;
	st.results[MS_LINK_OK] += 4;
	gone.calls = 4;
	gone.results[MS_LINK_OK] = 4;
	assert_true(ms_gate_link_calls_ok(&l, why, sizeof(why)));

	/* A discarded attempt's calls are in no merge's figures. */
	l.discarded = true;
	l.decide = 9;
	l.ev_calls = 10;
	assert_true(ms_gate_link_calls_ok(&l, why, sizeof(why)));
	/* One skip more than results: a result missing all the same. */
	l.ev_circuit = 1;
	l.decide = 11;
	assert_false(ms_gate_link_calls_ok(&l, why, sizeof(why)));
	assert_non_null(strstr(why, "10 results counted"));
}

/* A plugin directory holding skywalking and the misbehaving test plugins
 * (the chain spec names plugins of one directory). */
static const char *
health_plugin_dir(void)
{
	static char dir[PATH_MAX];
	if (dir[0])
		return dir;
	rt_path(dir, sizeof(dir), "plugins-health");
	assert_int_equal(mkdir(dir, 0700), 0);
	const char *links[][2] = { { MS_PLUGIN_DIR, "skywalking" },
		                   { MS_PLUGIN_DIR, "detdrop" },
		                   { MS_TEST_PLUGIN_DIR, "tp_badval" },
		                   { MS_TEST_PLUGIN_DIR, "tp_fail" },
		                   { MS_TEST_PLUGIN_DIR, "tp_slow" },
		                   { MS_TEST_PLUGIN_DIR, "tp_liar" },
		                   { MS_TEST_PLUGIN_DIR, "tp_cbcrash" } };
	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++) {
		char from[PATH_MAX], to[PATH_MAX + 64];
		snprintf(from, sizeof(from), "%s/%s.so", links[i][0],
		         links[i][1]);
		snprintf(to, sizeof(to), "%s/%s.so", dir, links[i][1]);
		assert_int_equal(symlink(from, to), 0);
	}
	return dir;
}

/* Run the chain to its end on fixture (NULL: the smoke fixture); return
 * the plugin_health gate, the text report (caller frees) and, when json
 * is not NULL, the JSON report (caller frees). */
static char *
health_run_json(const char *fixture, const char *chain, bool allow,
                uint64_t timeout_ns, const char *policy, uint64_t oversized_cap,
                ms_ev_gate *out, char **json)
{
	rt_run run;
	rt_opts(&run, "health", chain);
	if (fixture)
		run.o.fixture_dir = fixture;
	run.o.plugin_dir = health_plugin_dir();
	run.o.allow_fail_open = allow;
	run.o.decide_timeout_ns = timeout_ns;
	run.o.oversized_cap = oversized_cap;
	run.o.grace_policy = policy;
	run.o.serial = true; /* each event's link figures are its own */
	ms_replay *r = rt_start(&run, NULL);
	assert_non_null(r);
	assert_int_equal(ms_replay_wait(r, -1), 0);
	ms_ev_gate g[32];
	size_t n = ms_replay_gates(r, g, 32, NULL);
	bool found = false;
	for (size_t i = 0; i < n; i++)
		if (!strcmp(g[i].name, "plugin_health")) {
			*out = g[i];
			found = true;
		}
	assert_true(found);
	ms_replay_close(r);
	unsigned failed = 0;
	if (json)
		*json = et_report(run.db, ms_report_json, &failed);
	return et_report(run.db, ms_report_text, &failed);
}

static char *
health_run_on(const char *fixture, const char *chain, bool allow,
              uint64_t timeout_ns, const char *policy, uint64_t oversized_cap,
              ms_ev_gate *out)
{
	return health_run_json(fixture, chain, allow, timeout_ns, policy,
	                       oversized_cap, out, NULL);
}

/* How many times needle occurs in s. */
static size_t
count_of(const char *s, const char *needle)
{
	size_t n = 0;
	for (const char *p = strstr(s, needle); p; p = strstr(p + 1, needle))
		n++;
	return n;
}

static char *
health_run_capped(const char *chain, bool allow, uint64_t timeout_ns,
                  const char *policy, uint64_t oversized_cap, ms_ev_gate *out)
{
	return health_run_on(NULL, chain, allow, timeout_ns, policy,
	                     oversized_cap, out);
}

static char *
health_run(const char *chain, bool allow, uint64_t timeout_ns,
           const char *policy, ms_ev_gate *out)
{
	return health_run_capped(chain, allow, timeout_ns, policy, 0, out);
}

/* Gate g (plugin_health) failed with why in its detail, and the text
 * report t shows want; both printed when not. */
static void
expect_health_fail(const ms_ev_gate *g, const char *t, const char *why,
                   const char *want)
{
	if (g->pass || !strstr(t, want))
		fprintf(stderr, "plugin_health: %s\n%s\n", g->detail, t);
	assert_false(g->pass);
	assert_non_null(strstr(g->detail, why));
	assert_non_null(strstr(t, want));
}

static void
test_plugin_health_bad_verdict(void **state)
{
	(void)state;
	ms_ev_gate g;
	char *t = health_run("skywalking,tp_badval", false, 0, NULL, &g);
	expect_health_fail(&g, t, "tp_badval bad_value",
	                   "  FAIL  plugin_health ");
	assert_non_null(strstr(g.detail, "link calls reconcile"));
	assert_non_null(strstr(t, " link tp_badval "));
	assert_non_null(strstr(t, " bad_value "));
	free(t);
	/* The same run allowed to fail open: WARN, not FAIL. */
	t = health_run("skywalking,tp_badval", true, 0, NULL, &g);
	assert_true(g.pass);
	assert_true(g.warn);
	assert_non_null(strstr(g.detail, "--allow-fail-open"));
	assert_non_null(strstr(t, "  WARN  plugin_health "));
	free(t);
	/* A link whose Decide returns an error. */
	t = health_run("skywalking,tp_fail", false, 0, NULL, &g);
	assert_false(g.pass);
	assert_non_null(strstr(g.detail, "tp_fail error"));
	assert_non_null(strstr(t, "link tp_fail         error "));
	free(t);
}

static void
test_plugin_health_timeout_circuit(void **state)
{
	(void)state;
	ms_ev_gate g;
	/* tp_slow sleeps 100 ms per call; 20 ms is its Decide timeout:
	 * three timeouts open the circuit. The trace policy samples in
	 * many merges of a day-1x day, so there are more than three calls
	 * (on the smoke day their number depends on its write schedule). */
	const char *fixture = rt_day1x_fixture();
	assert_non_null(fixture);
	char *t = health_run_on(fixture, "tp_slow", false, 20000000, "trace",
	                        0, &g);
	expect_health_fail(&g, t, "tp_slow timeout",
	                   "link tp_slow         circuit_open ");
	assert_non_null(strstr(t, "link tp_slow         timeout "));
	/* Each kind of failure named once, where it first shows: in the
	 * report's list in full, in the gate cut short to leave room for
	 * others. */
	assert_int_equal(count_of(t, "Decide overran the 20.000 ms timeout "
	                             "on "),
	                 2); /* the list's, and the gate's in the report */
	assert_non_null(strstr(t, " traces; call abandoned\n"));
	assert_int_equal(count_of(t, "circuit open: 3 consecutive Decide "
	                             "timeouts or crashes (last on link "
	                             "'tp_slow')"),
	                 1);
	assert_int_equal(count_of(g.detail, "(Decide overran the 20.000 ms "),
	                 1);
	assert_int_equal(count_of(g.detail, "(circuit open: 3 consecutive"), 1);
	assert_non_null(strstr(g.detail, "...)"));
	/* More events than the detail holds: those that fit whole, the
	 * rest counted, and the calls clause at its end (it was cut off
	 * mid-event, "#78 tp_slow ci"). */
	const char *end = "; link calls reconcile with the merge events";
	size_t dl = strlen(g.detail), el = strlen(end);
	if (dl < el || strcmp(g.detail + dl - el, end) != 0)
		fprintf(stderr, "plugin_health: %s\n", g.detail);
	assert_true(dl >= el && strcmp(g.detail + dl - el, end) == 0);
	const char *more = strstr(g.detail, " more; link calls");
	assert_non_null(more);
	while (more > g.detail && more[-1] != '+')
		more--;
	assert_true(more[-2] == ' ' && (more[-3] == ',' || more[-3] == ':'));
	free(t);
}

/* The gate and the report name what a failing link said: tp_fail's
 * Decide returns -3, in the chain's words "Decide returned error -3". */
static void
test_plugin_health_names_cause(void **state)
{
	(void)state;
	ms_ev_gate g;
	char *json = NULL;
	char *t = health_run_json(NULL, "skywalking,tp_fail", false, 0, NULL, 0,
	                          &g, &json);
	expect_health_fail(&g, t, "tp_fail error x", "  FAIL  plugin_health ");
	assert_non_null(strstr(g.detail, " (Decide returned error -3)"));
	assert_non_null(strstr(t, " error           x"));
	assert_int_equal(count_of(t, "  Decide returned error -3\n"), 1);
	assert_non_null(json);
	assert_non_null(strstr(json, "\"kind\":\"error\",\"count\":"));
	assert_non_null(strstr(json, "\"cause\":\"Decide returned error -3\""));
	free(json);
	free(t);
}

/* An oversized cap below every trace's charge: the finalize keeps every
 * trace without evaluation, an oversized bypass that plugin_health names
 * (FAIL, or WARN when the run allows failing open). */
static void
test_plugin_health_oversized(void **state)
{
	(void)state;
	ms_ev_gate g;
	char *t = health_run_capped("skywalking", false, 0, NULL, 1, &g);
	expect_health_fail(&g, t, "oversized", "  FAIL  plugin_health ");
	assert_non_null(strstr(t, " oversized "));
	free(t);
	t = health_run_capped("skywalking", true, 0, NULL, 1, &g);
	assert_true(g.pass);
	assert_true(g.warn);
	assert_non_null(strstr(t, "  WARN  plugin_health "));
	free(t);
}

static void
test_plugin_health_clean(void **state)
{
	(void)state;
	/* The shipped plugins on smoke: nothing fails open. */
	ms_ev_gate g;
	char *t = health_run("skywalking", false, 0, "trace", &g);
	if (!g.pass)
		fprintf(stderr, "plugin_health: %s\n", g.detail);
	assert_true(g.pass);
	assert_false(g.warn);
	assert_non_null(strstr(g.detail, "0 events"));
	assert_non_null(strstr(t, "plugin health: 0 events"));
	free(t);
}

/* A link whose plugin host dies in the plugin's open() every time it is
 * started (--plugin-host process): each Decide call fails open without
 * reaching the plugin, until the circuit opens. plugin_health names the
 * crash, and its calls reconcile: FAIL, or WARN under --allow-fail-open.
 * Such a call was not counted, and the gate failed on the call count even
 * when the run allowed failing open. */
static void
health_host_dies(bool allow, ms_ev_gate *out)
{
	rt_run run;
	rt_opts(&run, allow ? "host-dies-allowed" : "host-dies",
	        "skywalking,tp_cbcrash:{\"where\":\"open@host\"}");
	run.o.plugin_dir = health_plugin_dir();
	run.o.allow_fail_open = allow;
	run.o.plugin_host = MS_PLUGIN_HOST_PROCESS;
	run.o.plugin_host_exe = MS_BINARY_DIR "/tui/mergescope";
	run.o.serial = true;
	ms_replay *r = rt_start(&run, NULL);
	assert_non_null(r);
	assert_int_equal(ms_replay_wait(r, -1), 0);
	ms_ev_gate g[32];
	size_t n = ms_replay_gates(r, g, 32, NULL);
	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < n; i++)
		if (!strcmp(g[i].name, "plugin_health"))
			*out = g[i];
	ms_replay_close(r);
	fprintf(stderr, "plugin_health: %s\n", out->detail);
	assert_string_equal(out->name, "plugin_health");
	assert_non_null(strstr(out->detail, "tp_cbcrash crashed"));
	assert_non_null(strstr(out->detail, "link calls reconcile"));
}

static void
test_plugin_health_host_does_not_start(void **state)
{
	(void)state;
	ms_ev_gate g;
	health_host_dies(false, &g);
	assert_false(g.pass);
	health_host_dies(true, &g);
	assert_true(g.pass);
	assert_true(g.warn);
}

/* ---- gates seen failing ----------------------------------------------- */

/* The run's engine, opened with the merge hooks in arg. */
static int
open_hooked(const void *arg, ms_engine **out, const ms_engine_opts *o,
            ms_errbuf *eb)
{
	return ms__engine_open_hooked(out, o, arg, eb);
}

/* Run a variant with merge hooks; return gate `name` of the run. */
static ms_ev_gate
hooked_run(const char *variant, const char *policy, const ms_merge_hooks *h,
           const char *name)
{
	rt_run run;
	rt_opts(&run, "hooked", variant);
	run.o.grace_policy = policy;
	run.t.engine_open = open_hooked;
	run.t.engine_open_arg = h;
	run.o.serial = true; /* one merge at a time: one tmp output */
	ms_replay *r = rt_start(&run, NULL);
	assert_non_null(r);
	assert_int_equal(ms_replay_wait(r, -1), 0);
	ms_ev_gate g[32], out;
	memset(&out, 0, sizeof(out));
	size_t n = ms_replay_gates(r, g, 32, NULL);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(g[i].name, name))
			out = g[i];
	ms_replay_close(r);
	assert_string_equal(out.name, name);
	return out;
}

/* Run alwayskeep serially with merge hooks h and --wait-timeout
 * wait_ns in run (named name) to its end; its status, printed (the
 * caller frees it) and, in *r, the replay to close. */
static ms_replay_status *
run_hooked_to_end(rt_run *run, const char *name, const ms_merge_hooks *h,
                  int64_t wait_ns, ms_replay **r)
{
	rt_opts(run, name, "alwayskeep");
	run->t.engine_open = open_hooked;
	run->t.engine_open_arg = h;
	run->o.serial = true;
	run->o.wait_timeout_ns = wait_ns;
	*r = rt_start(run, NULL);
	assert_non_null(*r);
	assert_int_equal(ms_replay_wait(*r, -1), 0);
	ms_replay_status *st = rt_status_new();
	ms_replay_get_status(*r, st);
	fprintf(stderr, "%s: %s\n", ms_replay_state_name(st->state), st->error);
	return st;
}

/* A batch whose trace bounds differ from the rows' own timestamps. */
static void
test_gate_bad_bound(void **state)
{
	(void)state;
	ms_merge_hooks h = { .stage_bounds_skew_ns = 1 };
	ms_ev_gate g = hooked_run("skywalking", "trace", &h, "plugin_bounds");
	assert_false(g.pass);
	assert_null(strstr(g.detail, " 0 traces with"));
	/* detdrop stages from block headers: its check decodes the two
	 * timestamp columns to rebuild the bounds. */
	g = hooked_run("detdrop:35", "trace", &h, "plugin_bounds");
	assert_false(g.pass);
}

/* plugin_health compares the link calls the chain counted with those the
 * merges report, each merge counting them as the chain answered its
 * Decide calls: a merge that reports one call of its first link fewer
 * than it made (every sampling merge here) fails the gate, which names
 * the link and both counts. (The merges' link figures are the chain's
 * counters read around each merge: summed, they always equal the
 * chain's count, and cannot show this.) */
static void
test_plugin_health_merges_report_calls(void **state)
{
	(void)state;
	ms_merge_hooks h = { .lose_link_call = true };
	ms_ev_gate g = hooked_run("detdrop:35", "trace", &h, "plugin_health");
	if (g.pass)
		fprintf(stderr, "%s\n", g.detail);
	assert_false(g.pass);
	const char *p = strstr(g.detail, "link detdrop: the chain counts ");
	assert_non_null(p);
	unsigned long long chain = 0, merges = 0;
	assert_int_equal(sscanf(p,
	                        "link detdrop: the chain counts %llu calls, "
	                        "the merges report %llu",
	                        &chain, &merges),
	                 2);
	assert_true(merges < chain);
	/* Without the hook the two agree. */
	h.lose_link_call = false;
	g = hooked_run("detdrop:35", "trace", &h, "plugin_health");
	if (!g.pass)
		fprintf(stderr, "%s\n", g.detail);
	assert_true(g.pass);
	assert_non_null(strstr(g.detail, "link calls reconcile"));
}

/* The first block written by a merge that has called Decide fails (once
 * in the run): the merge fails after its Decide calls, and is made
 * again. The chain's calls are read as the merge starts (serial run). */
typedef struct fail_write {
	bool done;
	uint64_t calls0;
} fail_write;

static int
fail_write_after_decide(void *arg, const ms_merge_req *req,
                        enum ms_merge_stage st, uint64_t detail)
{
	fail_write *f = arg;
	if (f->done || !req->pipeline)
		return 0;
	ms_link_stats ls;
	ms_chain_link_stats(ms_pipeline_chain(req->pipeline), 0, &ls);
	if (st == MS_MERGE_STAGE_PIN)
		f->calls0 = ls.calls;
	if (st != MS_MERGE_STAGE_WRITE || detail == 0 || ls.calls == f->calls0)
		return 0;
	f->done = true;
	return MS_ERR_IO;
}

/* A sampling merge that fails while it writes the batches it decided:
 * the calls it made are in its event, so the links' calls still
 * reconcile with the merge events. Its event reported none, and the
 * gate said "the chain counts N calls, the merges report N - 1". */
static void
test_plugin_health_failed_merge_reports_calls(void **state)
{
	(void)state;
	fail_write f = { 0 };
	ms_merge_hooks h = { .stage = fail_write_after_decide, .arg = &f };
	ms_ev_gate g = hooked_run("detdrop:35", "trace", &h, "plugin_health");
	assert_true(f.done);
	if (!g.pass || !strstr(g.detail, "link calls reconcile"))
		fprintf(stderr, "%s\n", g.detail);
	assert_true(g.pass);
	assert_non_null(strstr(g.detail, "link calls reconcile"));
}

/* Every batch handed to the chain twice: each trace reaches Decide twice
 * in its merge, and one_decide_per_trace counts each second entry. */
static void
test_gate_decide_twice(void **state)
{
	(void)state;
	ms_merge_hooks h = { .stage_decide_twice = true };
	ms_ev_gate g =
	        hooked_run("detdrop:35", "trace", &h, "one_decide_per_trace");
	if (g.pass)
		fprintf(stderr, "%s\n", g.detail);
	assert_false(g.pass);
	assert_null(strstr(g.detail, " 0 traces handed"));
	assert_non_null(strstr(g.detail, "handed to Decide twice"));
}

/* The trace policy's hot test compares with a frontier an hour late:
 * traces whose rows start within the grace reach Decide. The merges'
 * own check counts them from the rows' decoded start times, the run's
 * no_decide_when_hot fails, and so does the gate a report derives from
 * the event log. Staged from decoded columns (skywalking) and from
 * block headers (detdrop). A run without the hook passes it, with
 * traces kept hot. */
static void
test_gate_hot_trace_decided(void **state)
{
	(void)state;
	static const char *const variants[] = { "skywalking", "detdrop:35" };
	for (size_t v = 0; v < 2; v++) {
		for (int late = 0; late < 2; late++) {
			ms_merge_hooks h = { .stage_frontier_skew_ns =
				                     late ? 3600LL * 1000000000
				                          : 0 };
			rt_run run;
			rt_opts(&run, "hotdecide", variants[v]);
			run.o.grace_policy = "trace";
			run.t.engine_open = open_hooked;
			run.t.engine_open_arg = &h;
			ms_replay *r = rt_start(&run, NULL);
			assert_non_null(r);
			assert_int_equal(ms_replay_wait(r, -1), 0);
			ms_ev_gate g[32], rg;
			memset(&rg, 0, sizeof(rg));
			size_t n = ms_replay_gates(r, g, 32, NULL);
			for (size_t i = 0; i < n; i++)
				if (!strcmp(g[i].name, "no_decide_when_hot"))
					rg = g[i];
			ms_replay_close(r);
			assert_string_equal(rg.name, "no_decide_when_hot");
			if (rg.pass == (bool)late)
				fail_msg("%s late=%d: %s", variants[v], late,
				         rg.detail);
			/* "N of M traces evaluated started past the
			 * frontier": N is 0 exactly without the hook. */
			assert_non_null(strstr(rg.detail, " traces evaluated "
			                                  "started past the "
			                                  "frontier"));
			assert_true((strncmp(rg.detail, "0 of ", 5) == 0) ==
			            !late);
			/* The derived gate says the same from the log. */
			ms_evdb *db = NULL;
			ms_errbuf eb = { { 0 } };
			assert_int_equal(ms_evdb_open(&db, run.db, &eb), 0);
			ms_ev_gate der[32];
			int nd = ms_report_derive_gates(db, der, 32, &eb);
			ms_evdb_close(db);
			bool found = false;
			for (int i = 0; i < nd; i++) {
				if (strcmp(der[i].name, "no_decide_when_hot"))
					continue;
				found = true;
				assert_int_equal(der[i].pass, rg.pass);
				assert_string_equal(der[i].detail, rg.detail);
			}
			assert_true(found);
		}
	}
}

/* Rewrite the core output of the 3rd non-finalize merge before its index
 * merge: the first trace of two or more rows becomes two blocks (the same
 * rows, so every ledger still holds). The final inventory is rewritten by
 * the finalize, so only a check of every intermediate part sees it. */
typedef struct split_hook {
	char tmp[PATH_MAX]; /* the shard's tmp directory */
	int merges;
	bool done;
} split_hook;

static void
write_one(const char *dir, uint64_t id, const ms_row *rows, size_t n)
{
	ms_part_writer *w = NULL;
	ms_errbuf eb = { { 0 } };
	ms_part_meta m;
	assert_int_equal(ms_part_writer_open(&w, dir, id, NULL, &eb), 0);
	assert_int_equal(ms_part_writer_add_trace(w, rows, n, &eb), 0);
	assert_int_equal(ms_part_writer_finish(w, &m, &eb), 0);
}

static void
copy_first_block(ms_part_writer *w, const char *dir)
{
	ms_part *p = NULL;
	ms_part_iter *it = NULL;
	ms_errbuf eb = { { 0 } };
	const ms_block_info *bi;
	assert_int_equal(ms_part_open(&p, dir, NULL, &eb), 0);
	assert_int_equal(ms_part_iter_open(&it, p, NULL, NULL, &eb), 0);
	assert_int_equal(ms_part_iter_next(it, &bi, &eb), 1);
	assert_int_equal(tl_copy_block(it, w, &eb), 0);
	ms_part_iter_close(it);
	ms_part_close(p);
}

static void
split_first_trace(const char *core)
{
	char nd[PATH_MAX + 8], a[PATH_MAX + 8], b[PATH_MAX + 8];
	snprintf(nd, sizeof(nd), "%s.new", core);
	snprintf(a, sizeof(a), "%s.a", core);
	snprintf(b, sizeof(b), "%s.b", core);
	ms_part *p = NULL;
	ms_part_iter *it = NULL;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_part_open(&p, core, NULL, &eb), 0);
	uint64_t id = ms_part_get_meta(p)->id;
	assert_int_equal(ms_part_iter_open(&it, p, NULL, NULL, &eb), 0);
	ms_part_writer *w = NULL;
	assert_int_equal(ms_part_writer_open(&w, nd, id, NULL, &eb), 0);
	const ms_block_info *bi;
	bool split = false;
	int rc;
	while ((rc = ms_part_iter_next(it, &bi, &eb)) == 1) {
		if (!split && bi->nrows >= 2) {
			const ms_row *rows;
			assert_int_equal(
			        ms_part_iter_decode(it, MS_COL_ALL, &rows, &eb),
			        0);
			write_one(a, id, rows, 1);
			write_one(b, id, rows + 1, bi->nrows - 1);
			copy_first_block(w, a);
			copy_first_block(w, b);
			rt_rm(a);
			rt_rm(b);
			split = true;
			continue;
		}
		assert_int_equal(tl_copy_block(it, w, &eb), 0);
	}
	assert_int_equal(rc, 0);
	assert_true(split);
	ms_part_meta m;
	assert_int_equal(ms_part_writer_finish(w, &m, &eb), 0);
	ms_part_iter_close(it);
	ms_part_close(p);
	rt_rm(core);
	assert_int_equal(rename(nd, core), 0);
}

/* The path of the output core part a merge is writing in the shard's
 * tmp directory into core (n bytes); "" when there is none. */
static void
tmp_core_part(const char *tmp, char *core, size_t n)
{
	DIR *d = opendir(tmp);
	assert_non_null(d);
	struct dirent *de;
	core[0] = '\0';
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, "core-", 5) &&
		    !strchr(de->d_name, '.'))
			snprintf(core, n, "%s/%s", tmp, de->d_name);
	closedir(d);
}

static int
split_stage(void *arg, const ms_merge_req *req, enum ms_merge_stage st,
            uint64_t detail)
{
	(void)detail;
	split_hook *h = arg;
	if (st != MS_MERGE_STAGE_INDEX || h->done ||
	    (req->lane && !strcmp(req->lane, "finalize")))
		return 0;
	if (++h->merges < 3)
		return 0;
	char core[PATH_MAX + 300];
	tmp_core_part(h->tmp, core, sizeof(core));
	if (!core[0])
		return 0; /* every trace dropped: no output */
	split_first_trace(core);
	h->done = true;
	return 0;
}

/* The finished run r has gate `name`, failed, its detail saying why. */
static void
assert_gate_fails(ms_replay *r, const char *name, const char *why)
{
	ms_ev_gate g[32];
	size_t n = ms_replay_gates(r, g, 32, NULL);
	bool seen = false;
	for (size_t i = 0; i < n; i++) {
		if (strcmp(g[i].name, name))
			continue;
		seen = true;
		if (g[i].pass)
			fprintf(stderr, "%s\n", g[i].detail);
		assert_false(g[i].pass);
		if (!strstr(g[i].detail, why))
			fprintf(stderr, "%s\n", g[i].detail);
		assert_non_null(strstr(g[i].detail, why));
	}
	assert_true(seen);
}

/* A serial smoke run named name of the variant, whose merges call stage
 * (with a split_hook on the shard's tmp directory): finished, the hook
 * having made its change. */
static ms_replay *
run_hooked_done(const char *name, const char *variant,
                int (*stage)(void *, const ms_merge_req *, enum ms_merge_stage,
                             uint64_t))
{
	static rt_run run;
	static split_hook sh;
	static ms_merge_hooks h;
	rt_opts(&run, name, variant);
	sh = (split_hook){ .merges = 0 };
	snprintf(sh.tmp, sizeof(sh.tmp), "%s/tmp", run.work);
	h = (ms_merge_hooks){ .stage = stage, .arg = &sh };
	run.t.engine_open = open_hooked;
	run.t.engine_open_arg = &h;
	run.o.serial = true;
	ms_replay *r = rt_start(&run, NULL);
	assert_non_null(r);
	assert_int_equal(ms_replay_wait(r, -1), 0);
	assert_true(sh.done);
	return r;
}

static void
test_gate_split_block_intermediate(void **state)
{
	(void)state;
	ms_replay *r = run_hooked_done("split", "disabled", split_stage);
	assert_gate_fails(r, "one_block_per_trace", "has two blocks");
	ms_replay_close(r);
}

/* The finalize's output core part, one byte of it flipped after it was
 * written (as a faulty write or a disk would): the part check names the
 * part and the reader's cause, and part_ledgers says why that merge was
 * not reconciled. */
static int
corrupt_stage(void *arg, const ms_merge_req *req, enum ms_merge_stage st,
              uint64_t detail)
{
	(void)detail;
	split_hook *h = arg;
	if (st != MS_MERGE_STAGE_INDEX || h->done || !req->lane ||
	    strcmp(req->lane, "finalize"))
		return 0;
	char core[PATH_MAX + 300];
	tmp_core_part(h->tmp, core, sizeof(core));
	assert_true(core[0]);
	FILE *fp = fopen(core, "r+b");
	assert_non_null(fp);
	assert_int_equal(fseek(fp, 0, SEEK_END), 0);
	long size = ftell(fp);
	assert_true(size > 4096);
	assert_int_equal(fseek(fp, size / 3, SEEK_SET), 0);
	int c = fgetc(fp);
	assert_int_not_equal(c, EOF);
	assert_int_equal(fseek(fp, size / 3, SEEK_SET), 0);
	assert_int_not_equal(fputc(c ^ 0x20, fp), EOF);
	assert_int_equal(fclose(fp), 0);
	h->done = true;
	return 0;
}

static void
test_gate_corrupt_output_names_cause(void **state)
{
	(void)state;
	/* A long work directory, as a user's scratch path can be: the
	 * cause must still be in the gate's detail. */
	ms_replay *r = run_hooked_done(
	        "corrupt-output-of-the-finalize-with-a-long-name",
	        "alwayskeep", corrupt_stage); /* disabled runs no finalize */
	assert_gate_fails(r, "one_block_per_trace", "checksum mismatch");
	assert_gate_fails(r, "part_ledgers",
	                  "1 not reconciled: their output or an input "
	                  "failed its part check");
	ms_replay_close(r);
}

/* A merged-away part whose file was never deleted: at the 3rd merge, a
 * second name (an ID no snapshot lists) of its first input's latency
 * file, as a deletion that failed would leave behind. Only the scan of
 * parts/ sees it: every ledger, the lifecycle and tmp/ are as they
 * should be. */
#define STRAY_ID 0x00ffffffffffff00ULL

typedef struct stray_hook {
	int merges;
	bool done;
} stray_hook;

static int
stray_stage(void *arg, const ms_merge_req *req, enum ms_merge_stage st,
            uint64_t detail)
{
	(void)detail;
	stray_hook *h = arg;
	if (st != MS_MERGE_STAGE_INDEX || h->done || ++h->merges < 3)
		return 0;
	char from[4096], to[4096];
	assert_int_equal(ms_shard_part_path(req->shard, MS_KIND_LATENCY,
	                                    req->inputs[0], from, sizeof(from)),
	                 0);
	assert_int_equal(ms_shard_part_path(req->shard, MS_KIND_LATENCY,
	                                    STRAY_ID, to, sizeof(to)),
	                 0);
	assert_int_equal(link(from, to), 0);
	h->done = true;
	return 0;
}

static void
test_gate_stray_part(void **state)
{
	(void)state;
	rt_run run;
	rt_opts(&run, "stray", "disabled");
	run.o.serial = true; /* the hook counts merges: one at a time */
	stray_hook sh = { 0 };
	ms_merge_hooks h = { .stage = stray_stage, .arg = &sh };
	run.t.engine_open = open_hooked;
	run.t.engine_open_arg = &h;
	ms_replay *r = rt_start(&run, NULL);
	assert_non_null(r);
	assert_int_equal(ms_replay_wait(r, -1), 0);
	assert_true(sh.done);
	assert_gate_fails(r, "idle_no_leaks",
	                  "1 stray in parts/ (00ffffffffffff00.latency)");
	/* Nothing else saw it. */
	ms_ev_gate g[32];
	size_t n = ms_replay_gates(r, g, 32, NULL);
	for (size_t i = 0; i < n; i++)
		if (strcmp(g[i].name, "idle_no_leaks") && !g[i].pass)
			fail_msg("%s: %s", g[i].name, g[i].detail);
	ms_replay_close(r);
}

/* ---- a finalize that fails once ---------------------------------------- */

typedef struct fin_hook {
	unsigned failed, finalizes;
	bool always;
	int rc; /* what a failed try returns; 0: MS_ERR_NOSPACE */
} fin_hook;

/* The finalize's first try (every try when `always`) fails writing its
 * indexes as a full disk would (no input to blame); every later one
 * runs. */
static int
fin_stage(void *arg, const ms_merge_req *req, enum ms_merge_stage st,
          uint64_t detail)
{
	(void)detail;
	fin_hook *h = arg;
	if (st != MS_MERGE_STAGE_INDEX || !req->lane ||
	    strcmp(req->lane, "finalize"))
		return 0;
	h->finalizes++;
	if (h->failed && !h->always)
		return 0;
	h->failed++;
	return h->rc ? h->rc : MS_ERR_NOSPACE;
}

/* A serial skywalking run (run, owned by the caller) on the smoke day
 * whose finalize fails as fh says, to its end (or its failure). */
static ms_replay *
fin_run(rt_run *run, const char *name, fin_hook *fh)
{
	static ms_merge_hooks h;
	h = (ms_merge_hooks){ .stage = fin_stage, .arg = fh };
	rt_opts(run, name, "skywalking");
	run->t.engine_open = open_hooked;
	run->t.engine_open_arg = &h;
	run->o.serial = true;
	ms_replay *r = rt_start(run, NULL);
	assert_non_null(r);
	(void)ms_replay_wait(r, -1);
	return r;
}

/* A finalize that fails once is dispatched again and the day ends
 * finalized: the sampler's drops reconcile with the oracle and the
 * ledgers hold. It used to be dispatched once: the day ended
 * unfinalized, with verdict_oracle and sampling_exercised failing.
 * Only idle_no_leaks fails, counting the failed merge (plugin_health
 * counts the failed try's Decide call in its merge event). */
static void
test_finalize_failed_once(void **state)
{
	(void)state;
	fin_hook fh = { 0, 0, false, 0 };
	rt_run run;
	ms_replay *r = fin_run(&run, "fin-once", &fh);
	assert_int_equal(fh.failed, 1);
	assert_int_equal(fh.finalizes, 2);
	ms_ev_gate g[32];
	unsigned failed = 0;
	size_t n = ms_replay_gates(r, g, 32, &failed);
	assert_int_equal(failed, 1);
	static const char *const must_pass[] = {
		"verdict_oracle", "sampling_exercised", "ledgers",
		"part_ledgers",   "lifecycle",          "event_count",
	};
	size_t seen = 0;
	for (size_t i = 0; i < n; i++) {
		if (!g[i].pass)
			fprintf(stderr, "%s: %s\n", g[i].name, g[i].detail);
		for (size_t k = 0; k < sizeof(must_pass) / sizeof(*must_pass);
		     k++)
			if (!strcmp(g[i].name, must_pass[k])) {
				assert_true(g[i].pass);
				seen++;
			}
		/* which merge failed, and why */
		if (!strcmp(g[i].name, "idle_no_leaks")) {
			assert_non_null(strstr(g[i].detail, "1 failed merges"));
			assert_non_null(strstr(g[i].detail,
			                       "(the last: merge #"));
			assert_non_null(strstr(g[i].detail, " (finalize): "));
		}
	}
	assert_int_equal(seen, sizeof(must_pass) / sizeof(*must_pass));
	ms_replay_close(r);
}

/* Every try of the finalize fails as a full disk would: the engine's
 * third such failure in a row fails the run, naming it (before, the day
 * ended DONE and unfinalized after one try). */
static void
test_finalize_fails_every_time(void **state)
{
	(void)state;
	fin_hook fh = { 0, 0, true, 0 };
	rt_run run;
	ms_replay *r = fin_run(&run, "fin-never", &fh);
	assert_int_equal(fh.failed, 3);
	ms_replay_status *st = rt_status_new();
	ms_replay_get_status(r, st);
	fprintf(stderr, "%s\n", st->error);
	assert_int_equal(st->state, MS_REPLAY_FAILED);
	assert_non_null(strstr(st->error, "finalize lane"));
	assert_non_null(strstr(st->error, "3 failures in a row"));
	free(st);
	ms_replay_close(r);
}

/* Every try of the finalize fails for want of memory (what a run under
 * `ulimit -v` meets): the engine's third such failure in a row fails
 * the run, naming the finalize and the cause, as a full disk does. It
 * used to be tried FINALIZE_TRIES times, each after a longer backoff. */
static void
test_finalize_out_of_memory_every_time(void **state)
{
	(void)state;
	fin_hook fh = { 0, 0, true, MS_ERR_NOMEM };
	rt_run run;
	ms_replay *r = fin_run(&run, "fin-nomem", &fh);
	assert_int_equal(fh.failed, 3);
	ms_replay_status *st = rt_status_new();
	ms_replay_get_status(r, st);
	fprintf(stderr, "%s: %s\n", ms_replay_state_name(st->state), st->error);
	assert_int_equal(st->state, MS_REPLAY_FAILED);
	assert_non_null(strstr(st->error, "finalize lane"));
	assert_non_null(strstr(st->error, "out of memory"));
	assert_non_null(strstr(st->error, "3 failures in a row"));
	free(st);
	ms_replay_close(r);
	assert_false(rt_exists(run.work));
}

/* Every try of the finalize fails with an error that does not stop the
 * engine (zstd refusing, blamed on no input): after its last try the run
 * fails, naming the finalize and why. It used to end the day unfinalized
 * and DONE, with verdict_oracle and sampling_exercised failing as if the
 * sampler had erred. */
static void
test_finalize_compress_error_every_time(void **state)
{
	(void)state;
	fin_hook fh = { 0, 0, true, MS_ERR_COMPRESS };
	rt_run run;
	ms_replay *r = fin_run(&run, "fin-zstd", &fh);
	assert_int_equal(fh.failed, 5);
	ms_replay_status *st = rt_status_new();
	ms_replay_get_status(r, st);
	fprintf(stderr, "%s: %s\n", ms_replay_state_name(st->state), st->error);
	assert_int_equal(st->state, MS_REPLAY_FAILED);
	assert_non_null(strstr(st->error, "the finalize merge failed 5 times"));
	assert_non_null(strstr(st->error, "(finalize): "));
	free(st);
	ms_replay_close(r);
	assert_false(rt_exists(run.work));
}

/* Every merge fails with an error the engine retries with longer and
 * longer backoffs (zstd refusing, blamed on no input): the run gives up
 * at --wait-timeout, and its error says why the merges failed. It said
 * only how many had failed. */
static int
zstd_stage(void *arg, const ms_merge_req *req, enum ms_merge_stage st,
           uint64_t detail)
{
	(void)arg;
	(void)req;
	(void)detail;
	return st == MS_MERGE_STAGE_READ ? MS_ERR_COMPRESS : 0;
}

static void
test_wait_timeout_names_last_failure(void **state)
{
	(void)state;
	static ms_merge_hooks h;
	h = (ms_merge_hooks){ .stage = zstd_stage };
	rt_run run;
	ms_replay *r;
	ms_replay_status *st =
	        run_hooked_to_end(&run, "zstd-wait", &h, 3000 * 1000000LL, &r);
	assert_int_equal(st->state, MS_REPLAY_FAILED);
	assert_non_null(strstr(st->error, "gave up (--wait-timeout)"));
	assert_non_null(strstr(st->error, "; the last failure: merge #"));
	assert_non_null(strstr(st->error, "injected failure at stage read"));
	free(st);
	ms_replay_close(r);
	assert_false(rt_exists(run.work));
}

/* Every merge runs out of memory (its allocator fails from the first
 * allocation on, as under `ulimit -v`): the third failure in a row fails
 * the run with the merge and "out of memory", before --wait-timeout, and
 * the inputs stay in place (the scratch shard is removed). The merges
 * were retried with longer and longer backoffs until the run gave up
 * waiting (10 minutes by default). */
static void
test_merges_out_of_memory_stop_run(void **state)
{
	(void)state;
	static ms_merge_hooks h;
	h = (ms_merge_hooks){ .fail_alloc_at = 1, .fail_alloc_every = true };
	rt_run run;
	ms_replay *r;
	/* The three tries take 1 + 2 s of backoff; the timeout bounds the
	 * old endless retrying. */
	ms_replay_status *st =
	        run_hooked_to_end(&run, "nomem-run", &h, 60 * 1000000000LL, &r);
	assert_int_equal(st->state, MS_REPLAY_FAILED);
	assert_null(strstr(st->error, "--wait-timeout"));
	assert_non_null(strstr(st->error, "merge #"));
	assert_non_null(strstr(st->error, "out of memory"));
	assert_non_null(strstr(st->error, "3 failures in a row"));
	free(st);
	ms_replay_close(r);
	assert_false(rt_exists(run.work));
}

/* ---- a published part whose bytes differ from its fixture's ---------- */

/* The byte at `at` of fp, xor mask. */
static void
flip_at(FILE *fp, long at, int mask)
{
	assert_int_equal(fseek(fp, at, SEEK_SET), 0);
	int c = fgetc(fp);
	assert_true(c != EOF);
	assert_int_equal(fseek(fp, at, SEEK_SET), 0);
	assert_int_equal(fputc(c ^ mask, fp), c ^ mask);
}

/* Once every part is staged (copied, so the fixture stays whole), one
 * byte in the middle of the staged file of kind `kind` of the last
 * slot's part is changed: the part its fixture's build checked is not
 * the one published. */
typedef struct stage_flip {
	const char *work;
	enum ms_part_kind kind;
	uint64_t id;
	bool done;
} stage_flip;

static void
flip_staged(void *arg, uint64_t done, uint64_t total, const char *what)
{
	stage_flip *f = arg;
	if (f->done || strcmp(what, "staging") || done != total)
		return;
	char path[PATH_MAX + 64];
	/* Staged at its tmp paths; its publication renames it. */
	snprintf(path, sizeof(path), "%s/tmp/%s-%016llx", f->work,
	         ms_part_kind_name(f->kind), (unsigned long long)f->id);
	FILE *fp = fopen(path, "r+b");
	assert_non_null(fp);
	assert_int_equal(fseek(fp, 0, SEEK_END), 0);
	long mid = ftell(fp) / 2;
	assert_true(mid > 0);
	flip_at(fp, mid, 0x5a);
	assert_int_equal(fclose(fp), 0);
	f->done = true;
}

/* A replay whose last publication's staged `kind` file differs from
 * the fixture's: the check of that part must fail and name it, whatever
 * the fixture's build proved of the bytes it recorded. With forged, the
 * fixture's record is taken as matching the changed files (a manifest
 * whose hashes were rewritten to match them, ms__replay_test.
 * forged_proof_slot): the part is read all the same, and fails. */
static void
changed_publication(enum ms_part_kind kind, bool forged)
{
	ms_fixture *fx = NULL;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_fixture_open(&fx, rt.fixture, &eb), 0);
	size_t n = ms_fixture_nslots(fx);
	stage_flip f = { .kind = kind,
		         .id = ms_fixture_slot_at(fx, n - 1)->part_id };
	ms_fixture_close(fx);
	rt_run run;
	rt_opts(&run, forged ? "forged-pub" : "changed-pub", "disabled");
	run.t.forged_proof_slot = forged ? n : 0;
	f.work = run.work;
	run.o.stage_copy = true;
	run.o.progress = flip_staged;
	run.o.progress_arg = &f;
	ms_replay *r = rt_start(&run, NULL);
	assert_non_null(r);
	(void)ms_replay_wait(r, -1);
	assert_true(f.done);
	char id[17], want[40];
	ms_part_id_str(f.id, id);
	snprintf(want, sizeof(want), "part %s", id);
	assert_gate_fails(r, "one_block_per_trace", want);
	ms_replay_close(r);
}

/* The "introduced" part events of part id. */
typedef struct lost_intro {
	uint64_t id;
	size_t n;
} lost_intro;

static int
count_intro(void *ctx, const ms_ev_part *p)
{
	lost_intro *l = ctx;
	l->n += p->part_id == l->id && p->what == MS_EV_PART_INTRODUCED;
	return 0;
}

/* A publication that does not take effect (its part is never
 * introduced, ms__replay_test.lose_slot) fails the publications gate,
 * which counts the parts found in the inventory after their
 * introduction, not the slots the day went past; nothing records it as
 * introduced. */
static void
test_gate_publication_lost(void **state)
{
	(void)state;
	ms_fixture *fx = NULL;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_fixture_open(&fx, rt.fixture, &eb), 0);
	size_t n = ms_fixture_nslots(fx);
	assert_true(n > 2);
	uint64_t id = ms_fixture_slot_at(fx, 1)->part_id;
	ms_fixture_close(fx);
	rt_run run;
	rt_opts(&run, "lost-pub", "disabled");
	run.o.serial = true;
	run.t.lose_slot = 2; /* the second slot */
	ms_replay *r = rt_start(&run, NULL);
	assert_non_null(r);
	assert_int_equal(ms_replay_wait(r, -1), 0);
	char want[200];
	snprintf(want, sizeof(want),
	         "%zu of %zu scheduled parts published; 1 publications not "
	         "in the inventory after their introduction (the first: "
	         "slot 1, part %016llx)",
	         n - 1, n, (unsigned long long)id);
	assert_gate_fails(r, "publications", want);
	/* It entered nothing: the lifecycle (the run's and the log's part
	 * events) has no introduction of it, and holds. */
	ms_ev_gate g[32];
	size_t ng = ms_replay_gates(r, g, 32, NULL);
	for (size_t i = 0; i < ng; i++) {
		if (strcmp(g[i].name, "lifecycle"))
			continue;
		if (!g[i].pass)
			fprintf(stderr, "%s\n", g[i].detail);
		assert_true(g[i].pass);
	}
	ms_replay_close(r);
	ms_evdb *db = NULL;
	assert_int_equal(ms_evdb_open(&db, run.db, &eb), 0);
	lost_intro li = { .id = id };
	assert_int_equal(ms_evdb_each_part(db, count_intro, &li, &eb), 0);
	ms_evdb_close(db);
	assert_int_equal(li.n, 0);
}

/* A publication that did not take effect entered nothing, so it is not
 * handed to the part checker: one_block_per_trace counts every part that
 * entered, each checked, and says nothing of the lost one (the
 * publications gate names it). Lost beside a part never checked, the two
 * do not cancel out: the gate names the unchecked part's count, not a
 * lost part "left the inventory before it was checked". */
static void
test_gate_lost_publication_not_checked(void **state)
{
	(void)state;
	rt_run run;
	rt_opts(&run, "lost-unchecked", "disabled");
	run.o.serial = true;
	run.t.lose_slot = 2;
	ms_replay *r = rt_start(&run, NULL);
	assert_non_null(r);
	assert_int_equal(ms_replay_wait(r, -1), 0);
	ms_ev_gate g[32];
	size_t n = ms_replay_gates(r, g, 32, NULL);
	bool seen = false;
	for (size_t i = 0; i < n; i++) {
		if (strcmp(g[i].name, "one_block_per_trace"))
			continue;
		seen = true;
		if (!g[i].pass)
			fprintf(stderr, "%s\n", g[i].detail);
		assert_true(g[i].pass);
	}
	assert_true(seen);
	ms_replay_close(r);

	rt_opts(&run, "lost-unchecked2", "disabled");
	run.o.serial = true;
	run.t.lose_slot = 2;
	run.t.skip_check_slot = 3;
	r = rt_start(&run, NULL);
	assert_non_null(r);
	assert_int_equal(ms_replay_wait(r, -1), 0);
	assert_gate_fails(r, "one_block_per_trace",
	                  " handed to the checker; ");
	n = ms_replay_gates(r, g, 32, NULL);
	for (size_t i = 0; i < n; i++) {
		if (strcmp(g[i].name, "one_block_per_trace"))
			continue;
		unsigned long long in = 0, handed = 0;
		assert_int_equal(sscanf(g[i].detail,
		                        "%llu parts introduced, %llu handed",
		                        &in, &handed),
		                 2);
		assert_int_equal(in, handed + 1); /* the unchecked one */
		assert_null(strstr(g[i].detail, "left the inventory"));
	}
	ms_replay_close(r);
}

/* A merge row the database lost after the recorder accepted it
 * (ms__replay_test.lose_merge_row: the recorder's own count keeps it)
 * fails event_count, which counts the rows the database holds. */
static void
test_gate_merge_row_lost(void **state)
{
	(void)state;
	rt_run run;
	rt_opts(&run, "lost-row", "disabled");
	run.o.serial = true;
	run.t.lose_merge_row = 1; /* the first merge */
	ms_replay *r = rt_start(&run, NULL);
	assert_non_null(r);
	assert_int_equal(ms_replay_wait(r, -1), 0);
	ms_replay_status *st = rt_status_new();
	ms_replay_get_status(r, st);
	uint64_t events = st->merges_done + st->merges_failed;
	free(st);
	assert_true(events > 1);
	char want[120];
	snprintf(want, sizeof(want),
	         "%llu merge rows in the database for %llu merge events",
	         (unsigned long long)(events - 1), (unsigned long long)events);
	assert_gate_fails(r, "event_count", want);
	ms_replay_close(r);
}

/* The run row records the engine's own count of completed merges, not
 * the controller's tally of the merge events it received: with that
 * tally off by one (ms__replay_test.double_tally_seq), event_count fails
 * live, and recomputed from the log it compares the rows with the
 * engine's count, which agree. It compared them with the tally. */
static void
test_event_count_run_row_is_engine_count(void **state)
{
	(void)state;
	rt_run run;
	rt_opts(&run, "tally", "disabled");
	run.o.serial = true;
	run.t.double_tally_seq = 1; /* the first merge */
	ms_replay *r = rt_start(&run, NULL);
	assert_non_null(r);
	assert_int_equal(ms_replay_wait(r, -1), 0);
	assert_gate_fails(r, "event_count", "merge events received");
	ms_replay_close(r);
	ms_evdb *db = NULL;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_evdb_open(&db, run.db, &eb), 0);
	ms_ev_gate der[32];
	int nd = ms_report_derive_gates(db, der, 32, &eb);
	ms_evdb_close(db);
	bool found = false;
	for (int i = 0; i < nd; i++) {
		if (strcmp(der[i].name, "event_count"))
			continue;
		found = true;
		if (!der[i].pass)
			fprintf(stderr, "%s\n", der[i].detail);
		assert_true(der[i].pass);
		assert_non_null(strstr(der[i].detail, "the engine's own count"));
	}
	assert_true(found);
}

/* The engine's own counts are a source of their own: a count of done or
 * failed merges that is not the events received fails event_count, and
 * so do rows that are not those events. A log's recomputation has only
 * the rows: it compares the run row's count alone. */
static void
test_event_count_sources(void **state)
{
	(void)state;
	ms_gate_facts f = { .ended = true,
		            .merge_events = 10,
		            .merges_done = 9,
		            .merges_failed = 1,
		            .engine_merges_done = 9,
		            .engine_merges_failed = 1 };
	ms_ev_gate g;
	assert_true(ms_gate_eval(MS_GATE_EVENT_COUNT, &f, &g));
	assert_true(g.pass);
	f.engine_merges_failed = 0; /* the engine saw no failure */
	assert_true(ms_gate_eval(MS_GATE_EVENT_COUNT, &f, &g));
	assert_false(g.pass);
	f.engine_merges_failed = 1;
	f.merge_events = 9; /* a row missing */
	assert_true(ms_gate_eval(MS_GATE_EVENT_COUNT, &f, &g));
	assert_false(g.pass);
	/* From a log: the rows are the events; the run row's count is
	 * checked, nothing else is claimed. */
	f.events_from_rows = true;
	f.engine_merges_failed = 0;
	assert_true(ms_gate_eval(MS_GATE_EVENT_COUNT, &f, &g));
	assert_true(g.pass);
	f.engine_merges_done = 8;
	assert_true(ms_gate_eval(MS_GATE_EVENT_COUNT, &f, &g));
	assert_false(g.pass);
}

/* A part introduced but never handed to the checker (its publication
 * took effect; ms__replay_test.skip_check_slot) fails
 * one_block_per_trace: the gate counts the parts introduced into the
 * shard, not only those the checker was given. */
static void
test_gate_part_never_checked(void **state)
{
	(void)state;
	rt_run run;
	rt_opts(&run, "unchecked", "disabled");
	run.o.serial = true;
	run.t.skip_check_slot = 2; /* the second slot */
	ms_replay *r = rt_start(&run, NULL);
	assert_non_null(r);
	assert_int_equal(ms_replay_wait(r, -1), 0);
	assert_gate_fails(r, "one_block_per_trace",
	                  "handed to the checker; ");
	ms_ev_gate g[32];
	size_t n = ms_replay_gates(r, g, 32, NULL);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(g[i].name, "publications"))
			assert_true(g[i].pass); /* it did take effect */
	ms_replay_close(r);
}

/* Unchanged, every publication is read and agrees with its fixture's
 * record (files hash and ledgers), and the gate passes. */
static void
test_gate_publications_by_hash(void **state)
{
	(void)state;
	ms_fixture *fx = NULL;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_fixture_open(&fx, rt.fixture, &eb), 0);
	size_t n = ms_fixture_nslots(fx);
	ms_fixture_close(fx);
	ms_merge_hooks none = { 0 };
	ms_ev_gate g =
	        hooked_run("detdrop:35", NULL, &none, "one_block_per_trace");
	if (!g.pass)
		fprintf(stderr, "%s\n", g.detail);
	assert_true(g.pass);
	char want[80];
	snprintf(want, sizeof(want),
	         ", %zu publications read agreeing with their "
	         "fixture's record", n);
	if (!strstr(g.detail, want))
		fprintf(stderr, "%s\n", g.detail);
	assert_non_null(strstr(g.detail, want));
}

/* One "disabled" run on the shared fixture: its block cache's figures
 * after the open (at) and at the end (end), and its one_block_per_trace
 * gate. With flip, a byte of every group of 16 entries of the fixture's
 * block ledger file changes between the open (which checked the file)
 * and the start, and is put back after the run. */
typedef struct blk_run {
	ms__blkcache_figs at, end;
	ms_ev_gate gate;
	unsigned failed; /* gates failed */
} blk_run;

static void
flip_groups(const char *path, uint64_t entries)
{
	FILE *fp = fopen(path, "r+b");
	assert_non_null(fp);
	for (uint64_t i = 0; i < entries; i += 16)
		flip_at(fp, (long)(16 + i * 68 + 20), 0x01);
	assert_int_equal(fclose(fp), 0);
}

static void
block_file_run(bool flip, blk_run *out)
{
	rt_run run;
	ms_replay *r = NULL;
	ms_errbuf eb = { { 0 } };
	char path[PATH_MAX + 32];

	rt_opts(&run, flip ? "blk-flip" : "blk", "disabled");
	run.o.serial = true;
	assert_int_equal(ms__replay_open_test(&r, &run.o, &run.t, &eb), 0);
	ms__blkcache_figures(r->blocks, &out->at);
	snprintf(path, sizeof(path), "%s/block_ledgers.bin", rt.fixture);
	if (flip)
		flip_groups(path, out->at.file_entries);
	int rc = ms_replay_start(r, &eb);
	if (rc == 0)
		rc = ms_replay_wait(r, -1);
	if (flip) /* back before any assertion: other tests share it */
		flip_groups(path, out->at.file_entries);
	assert_int_equal(rc, 0);
	ms__blkcache_figures(r->blocks, &out->end);
	ms_ev_gate g[32];
	size_t n = ms_replay_gates(r, g, 32, &out->failed);
	memset(&out->gate, 0, sizeof(out->gate));
	for (size_t i = 0; i < n; i++)
		if (!strcmp(g[i].name, "one_block_per_trace"))
			out->gate = g[i];
	ms_replay_close(r);
	assert_string_equal(out->gate.name, "one_block_per_trace");
	if (!out->gate.pass || out->failed)
		fprintf(stderr, "%s\n", out->gate.detail);
}

/* The fixture's block ledgers are answered from its file, not held: after
 * the open the cache holds nothing, yet every block of the file is
 * answered from it (none decoded: the cache ends holding only the blocks
 * the run decoded, and a run whose file changed under it decodes more).
 * A group changed after the open answers nothing: its blocks are decoded,
 * every gate still passes, and the detail counts them. */
static void
test_gate_block_ledgers_from_file(void **state)
{
	(void)state;
	ms_fixture *fx = NULL;
	ms_fixture_blocks *fb = NULL;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_fixture_open(&fx, rt.fixture, &eb), 0);
	assert_int_equal(ms_fixture_blocks_open(&fb, fx, &eb), 0);
	uint64_t entries = ms_fixture_blocks_count(fb);
	ms_fixture_blocks_close(fb);
	ms_fixture_close(fx);
	assert_true(entries > 0);

	blk_run ok, flip;
	block_file_run(false, &ok);
	assert_int_equal(ok.at.file_entries, entries);
	assert_int_equal(ok.at.resident, 0);
	assert_int_equal(ok.at.hits + ok.at.misses, 0);
	assert_true(ok.gate.pass);
	assert_int_equal(ok.failed, 0);
	assert_true(ok.end.file_lookups > 0);
	assert_int_equal(ok.end.file_refused, 0);
	assert_true(ok.end.hits > 0);
	/* The part checks ask the file in batches sorted by key, reading
	 * each group once and neighbouring groups together: far fewer
	 * reads than keys asked (one read a key, looked up one by one). */
	fprintf(stderr, "file: %llu keys asked, %llu reads\n",
	        (unsigned long long)ok.end.file_lookups,
	        (unsigned long long)ok.end.file_reads);
	assert_true(ok.end.file_reads * 2 < ok.end.file_lookups);
	/* In memory: each block decoded, once; nothing else. */
	assert_int_equal(ok.end.resident, ok.end.misses);
	char want[160];
	snprintf(want, sizeof(want), "%llu of %llu blocks decoded",
	         (unsigned long long)ok.end.misses,
	         (unsigned long long)(ok.end.hits + ok.end.misses));
	if (!strstr(ok.gate.detail, want))
		fprintf(stderr, "%s\n", ok.gate.detail);
	assert_non_null(strstr(ok.gate.detail, want));
	assert_null(strstr(ok.gate.detail, "block ledger file changed"));

	block_file_run(true, &flip);
	assert_int_equal(flip.at.file_entries, entries);
	assert_true(flip.gate.pass);
	assert_int_equal(flip.failed, 0);
	assert_true(flip.end.file_refused > 0);
	assert_int_equal(flip.end.file_refused, flip.end.file_lookups);
	assert_true(flip.end.misses > ok.end.misses);
	assert_int_equal(flip.end.resident, flip.end.misses);
	snprintf(want, sizeof(want),
	         "block ledger file changed: %llu lookups unanswered; ",
	         (unsigned long long)flip.end.file_refused);
	if (!strstr(flip.gate.detail, want))
		fprintf(stderr, "%s\n", flip.gate.detail);
	assert_non_null(strstr(flip.gate.detail, want));
}

static void
test_gate_changed_publication_core(void **state)
{
	(void)state;
	changed_publication(MS_KIND_CORE, false);
}

static void
test_gate_changed_publication_index(void **state)
{
	(void)state;
	changed_publication(MS_KIND_START_TIME, false);
}

static void
test_gate_forged_manifest_core(void **state)
{
	(void)state;
	changed_publication(MS_KIND_CORE, true);
}

static void
test_gate_forged_manifest_index(void **state)
{
	(void)state;
	changed_publication(MS_KIND_LATENCY, true);
}

/* A detdrop:35 run whose verdict oracle evaluates `oracle_spec` instead:
 * the verdict_oracle gate must fail saying `why`. The run's database is
 * left in run->db. */
static void
oracle_mismatch(rt_run *run, const char *name, const char *oracle_spec,
                const char *why)
{
	rt_opts(run, name, "detdrop:35");
	run->t.oracle_spec = oracle_spec;
	ms_replay *r = rt_start(run, NULL);
	assert_non_null(r);
	assert_int_equal(ms_replay_wait(r, -1), 0);
	assert_gate_fails(r, "verdict_oracle", why);
	/* The oracle held only its drops through the run; a run that dropped
	 * a trace outside them had the gates read the whole table again. */
	if (strstr(why, "kept by the oracle")) {
		assert_false(r->oracle.shed);
		assert_int_equal(r->oracle.nent, r->oracle.n);
	}
	ms_replay_close(r);
}

/* The run's engine told of a segment a day wider than the fixture's day
 * on both sides: its boundary guard finds no trace near an edge, so the
 * finalize drops the traces with rows outside the day that it must
 * retain (their fragments could lie beyond the edge). Every drop is one
 * the oracle makes and the output matches what was dropped, but
 * verdict_oracle fails, naming such a trace, and its table row fails. */
static int
open_wide_segment(const void *arg, ms_engine **out, const ms_engine_opts *o,
                  ms_errbuf *eb)
{
	(void)arg;
	ms_engine_opts w = *o;
	const int64_t day = 24 * 3600 * (int64_t)1000000000;
	assert_true(w.segment_min_ns != 0 || w.segment_max_ns != 0);
	w.segment_min_ns -= day;
	w.segment_max_ns += day;
	return ms_engine_open(out, &w, eb);
}

/* The run set up in run (rt_opts and more) with its engine opened by
 * engine_open, finished. */
static ms_replay *
run_engine_opened(rt_run *run,
                  int (*engine_open)(const void *, ms_engine **,
                                     const ms_engine_opts *, ms_errbuf *))
{
	run->t.engine_open = engine_open;
	ms_replay *r = rt_start(run, NULL);
	assert_non_null(r);
	assert_int_equal(ms_replay_wait(r, -1), 0);
	return r;
}

static void
test_gate_oracle_edge_drop(void **state)
{
	(void)state;
	rt_run run;
	rt_opts(&run, "edge-drop", "skywalking");
	ms_replay *r = run_engine_opened(&run, open_wide_segment);
	assert_gate_fails(r, "verdict_oracle",
	                  "has rows outside the day and was dropped at the "
	                  "finalize");
	ms_ev_gate g[32];
	size_t n = ms_replay_gates(r, g, 32, NULL);
	for (size_t i = 0; i < n; i++)
		if (strcmp(g[i].name, "verdict_oracle"))
			assert_true(g[i].pass);
	ms_replay_close(r);
	char *buf = et_report(run.db, ms_report_text, NULL);
	const char *row = strstr(buf, "  dropped past the day's edge");
	assert_non_null(row);
	const char *eol = strchr(row, '\n');
	assert_non_null(eol);
	assert_non_null(memmem(row, (size_t)(eol - row), "FAIL", 4));
	free(buf);
}

/* A slow oracle (its thread held back 4 s, as on a busy machine): the
 * day's clock starts only once the oracle's thread has ended, so the
 * day-sized arrays it holds while it runs are never live beside the
 * day's merges nor the finalize's, and its CPU is not the day's; the run
 * says how long the day waited; the run is the same, every gate passes. */
static void
test_day_after_oracle(void **state)
{
	(void)state;
	rt_run run;
	rt_opts(&run, "slow-oracle", "skywalking");
	run.t.oracle_delay_ns = 4000000000;
	int64_t t0 = ms_mono_ns();
	ms_replay *r = rt_start(&run, NULL);
	assert_non_null(r);
	/* Meanwhile the run says it is preparing, with nothing published. */
	ms_replay_status *st = rt_status_new();
	bool seen = false;
	for (int i = 0; i < 300 && !seen; i++) {
		ms_replay_get_status(r, st);
		seen = st->preparing;
		if (!seen)
			ms__test_delay(10000000);
	}
	assert_true(seen);
	assert_int_equal(st->pub_done, 0);
	assert_int_equal(st->state, MS_REPLAY_RUNNING);
	assert_int_equal(ms_replay_wait(r, -1), 0);
	ms_replay_get_status(r, st);
	assert_false(st->preparing);
	free(st);
	assert_true(r->oracle_end_mono >= t0 + run.t.oracle_delay_ns);
	assert_true(r->primary_mono > 0);
	assert_true(r->primary_mono >= r->oracle_end_mono);
	assert_true(r->finalize_mono >= r->oracle_end_mono);
	/* The wait is counted, less what the staging overlapped. */
	assert_true(r->oracle_prewait_ns > 0);
	assert_true(r->oracle_prewait_ns <= ms_mono_ns() - t0);
	assert_int_equal(rt_print_gates(r, "slow oracle"), 0);
	ms_replay_close(r);
}

/* A checker that falls behind (30 ms before each part): the cooldown's
 * clock starts only once every part of the primary phase is checked, so
 * parts waiting for it (each keeps its handles) are never live beside
 * the finalize, nor its checks on the finalize's CPU; the run says how
 * long that took; every gate passes. */
static void
test_cooldown_after_checker(void **state)
{
	(void)state;
	rt_run run;
	rt_opts(&run, "slow-checker", "skywalking");
	run.t.check_delay_ns = 30000000;
	ms_replay *r = rt_start(&run, NULL);
	assert_non_null(r);
	assert_int_equal(ms_replay_wait(r, -1), 0);
	assert_true(r->cooldown_mono > 0);
	assert_int_equal(r->check_queued_cooldown, 0);
	assert_true(r->check_prewait_ns > 0);
	assert_int_equal(rt_print_gates(r, "slow checker"), 0);
	ms_replay_close(r);
}

/* The checksum of the plugin file at path, as a load takes it, into out. */
static void
file_plugin_checksum(const char *path, char out[33])
{
	ms_plugin *p = NULL;
	ms_errbuf eb = { { 0 } };
	if (ms_plugin_load(&p, path, NULL, &eb))
		fail_msg("%s", eb.msg);
	snprintf(out, 33, "%s", ms_plugin_checksum(p));
	ms_plugin_unload(p);
}

/* The verdict oracle opens its chain's plugin files again, by path,
 * after the run loaded them: a file rewritten in place in between (here
 * after the run's open, before its start, when the oracle's thread
 * begins) had the run judged by another plugin, and the gate passed.
 * It fails, naming both checksums. */
static void
test_gate_oracle_plugin_changed(void **state)
{
	(void)state;
	char dir[PATH_MAX], so[PATH_MAX + 16], cmd[3 * PATH_MAX];
	rt_path(dir, sizeof(dir), "plugins-rewritten");
	assert_int_equal(mkdir(dir, 0700), 0);
	snprintf(so, sizeof(so), "%s/alwayskeep.so", dir);
	snprintf(cmd, sizeof(cmd), "cp '%s/alwayskeep.so' '%s'", MS_PLUGIN_DIR,
	         so);
	assert_int_equal(system(cmd), 0);
	char was[33], now[33], why[200];
	file_plugin_checksum(so, was);
	rt_run run;
	rt_opts(&run, "oracle-plugin", "alwayskeep");
	run.o.plugin_dir = dir;
	ms_replay *r = NULL;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms__replay_open_test(&r, &run.o, &run.t, &eb), 0);
	FILE *f = fopen(so, "ab");
	assert_non_null(f);
	assert_true(fputs("rewritten", f) >= 0);
	assert_int_equal(fclose(f), 0);
	file_plugin_checksum(so, now);
	assert_string_not_equal(was, now);
	assert_int_equal(ms_replay_start(r, &eb), 0);
	assert_int_equal(ms_replay_wait(r, -1), 0);
	snprintf(why, sizeof(why),
	         "the oracle's link 1 plugin has checksum %s, the run's %s: ",
	         now, was);
	assert_gate_fails(r, "verdict_oracle", why);
	ms_replay_close(r);
}

/* The verdict oracle evaluating another chain than the run's: with fewer
 * drops, the run drops traces the oracle keeps; with more, traces the
 * oracle drops survive with no recorded reason. */
static void
test_gate_oracle_wrong_drop(void **state)
{
	(void)state;
	rt_run run;
	oracle_mismatch(&run, "oracle-wrong", "detdrop:30",
	                "is kept by the oracle");
	/* The report's reconciliation table says which row fails. */
	char *buf = et_report(run.db, ms_report_text, NULL);
	assert_non_null(strstr(buf, "reconciliation with the oracle"));
	const char *row = strstr(buf, "  dropped the oracle keeps");
	assert_non_null(row);
	const char *eol = strchr(row, '\n');
	assert_non_null(eol);
	assert_non_null(memmem(row, (size_t)(eol - row), "FAIL", 4));
	free(buf);
}

/* The run column of row `label` of the report's reconciliation table. */
static unsigned long long
recon_run(const char *report, const char *label)
{
	char key[96];
	snprintf(key, sizeof(key), "\n  %s ", label);
	const char *row = strstr(report, key);
	if (!row)
		fail_msg("no reconciliation row \"%s\"", label);
	unsigned long long v[4];
	if (sscanf(row + strlen(key), "%llu %llu %llu %llu", &v[0], &v[1],
	           &v[2], &v[3]) != 4)
		fail_msg("row \"%s\" has no four figures", label);
	return v[3];
}

/* Under the trace policy most traces of the primary phase are kept hot,
 * and merges whose every trace was hot do not sample: each trace counts
 * in one row of the reconciliation only, so the outcomes add up to the
 * traces in merges (the hot ones counted again as "in merges not
 * sampling" made them exceed it by those). */
static void
test_reconciliation_rows_add_up(void **state)
{
	(void)state;
	rt_run run;
	rt_opts(&run, "recon-trace", "skywalking");
	run.o.grace_policy = "trace";
	ms_replay *r = rt_start(&run, NULL);
	assert_non_null(r);
	assert_int_equal(ms_replay_wait(r, -1), 0);
	assert_int_equal(rt_print_gates(r, "trace policy"), 0);
	ms_replay_close(r);
	char *buf = et_report(run.db, ms_report_text, NULL);
	unsigned long long in = recon_run(buf, "traces in merges"),
	                   hot = recon_run(buf, "kept unevaluated: hot");
	unsigned long long sum =
	        recon_run(buf, "evaluated") +
	        recon_run(buf, "kept unevaluated: failed open") +
	        recon_run(buf, "kept unevaluated: oversized") + hot +
	        recon_run(buf, "in merges not sampling");
	assert_true(hot > 0);
	if (sum != in)
		fail_msg("outcomes %llu, traces in merges %llu:\n%s", sum, in,
		         buf);
	free(buf);
}

/* A drop-set ceiling of one byte: each sampling merge records its first
 * confirmed drop and keeps every later proposed drop (the reference's
 * rule, at a budget below one ID's price). Every gate passes: the ledgers
 * hold what was dropped, and the verdict oracle finds every oracle drop
 * left in the output accounted for as deferred, the drop-set-full row
 * saying how many of those the full drop set kept. */
static void
test_gates_pass_with_drop_set_full(void **state)
{
	(void)state;
	rt_run run;
	rt_opts(&run, "dropset-full", "skywalking");
	run.o.drop_set_budget = 1;
	ms_replay *r = rt_start(&run, NULL);
	assert_non_null(r);
	assert_int_equal(ms_replay_wait(r, -1), 0);
	assert_int_equal(rt_print_gates(r, "drop set full"), 0);
	ms_replay_close(r);
	char *buf = et_report(run.db, ms_report_text, NULL);
	unsigned long long dropped = recon_run(buf, "dropped"),
	                   deferred = recon_run(buf, "deferred"),
	                   full = recon_run(buf, "of which: drop set full");
	if (full == 0 || full > deferred || dropped == 0)
		fail_msg("dropped %llu, deferred %llu, drop set full %llu:\n%s",
		         dropped, deferred, full, buf);
	assert_non_null(strstr(buf, "kept: drop set full"));
	free(buf);
}

static void
test_gate_oracle_unexplained_survivor(void **state)
{
	(void)state;
	rt_run run;
	oracle_mismatch(&run, "oracle-more", "detdrop:40", "finalize proposed");
}

/* ---- a merge that fails after Decide ---------------------------------- */

/* Fail, once, the first merge that reached Decide (the chain's first link
 * has been called) at its index stage, with an I/O error no input is to
 * blame for: the engine backs off and merges that selection again. */
typedef struct fail_after_decide {
	ms_replay *r;
	bool done;
} fail_after_decide;

static int
fail_sampled_once(void *arg, const ms_merge_req *req, enum ms_merge_stage st,
                  uint64_t detail)
{
	(void)req;
	(void)detail;
	fail_after_decide *f = arg;
	ms_chain *c;
	size_t n;
	if (f->done || st != MS_MERGE_STAGE_INDEX || !f->r ||
	    !ms__replay_links(f->r, &c, &n) || n == 0)
		return 0;
	ms_link_stats ls;
	ms_chain_link_stats(c, 0, &ls);
	if (ls.calls == 0)
		return 0;
	f->done = true;
	return MS_ERR_IO;
}

/* The Decide calls of a merge that failed are calls of the link as much
 * as those of the merges that completed: plugin_health reconciles the
 * links' calls with every merge event, failed ones included (as the
 * report's plugin table counts them), and does not blame the link for a
 * merge that failed for another reason (idle_no_leaks names that). */
static void
test_gate_failed_merge_link_calls(void **state)
{
	(void)state;
	fail_after_decide fa = { NULL, false };
	ms_merge_hooks h = { .stage = fail_sampled_once, .arg = &fa };
	rt_run run;
	rt_opts(&run, "failed-merge", "detdrop:35");
	run.t.engine_open = open_hooked;
	run.t.engine_open_arg = &h;
	run.o.serial = true;
	run.o.grace_policy = "trace";
	ms_replay *r = NULL;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms__replay_open_test(&r, &run.o, &run.t, &eb), 0);
	fa.r = r;
	assert_int_equal(ms_replay_start(r, &eb), 0);
	assert_int_equal(ms_replay_wait(r, -1), 0);
	assert_true(fa.done);
	ms_ev_gate g[32];
	size_t n = ms_replay_gates(r, g, 32, NULL);
	bool seen = false;
	for (size_t i = 0; i < n; i++) {
		if (strcmp(g[i].name, "plugin_health"))
			continue;
		seen = true;
		if (!g[i].pass)
			fprintf(stderr, "%s\n", g[i].detail);
		assert_true(g[i].pass);
		assert_non_null(strstr(g[i].detail, "link calls reconcile"));
	}
	assert_true(seen);
	assert_gate_fails(r, "idle_no_leaks", "1 failed merges");
	ms_replay_close(r);
}

/* ---- a plugin that lies ------------------------------------------------ */

/* A serial run of tp_liar configured `how` on fixture (NULL: the smoke
 * fixture) under grace policy `policy`, to its end; spec holds the chain
 * spec while the run lives. */
static ms_replay *
liar_run(rt_run *run, char *spec, size_t n, const char *fixture,
         const char *how, const char *policy)
{
	snprintf(spec, n, "tp_liar:{\"liar\":\"%s\"}", how);
	rt_opts(run, "liar", spec);
	if (fixture)
		run->o.fixture_dir = fixture;
	run->o.plugin_dir = health_plugin_dir();
	run->o.grace_policy = policy;
	run->o.serial = true;
	ms_replay *r = rt_start(run, NULL);
	assert_non_null(r);
	assert_int_equal(ms_replay_wait(r, -1), 0);
	return r;
}

/* Verdicts the oracle's own copy of the plugin does not repeat: drawn at
 * random, changed between calls (drops on odd calls only: the oracle's
 * first call keeps all), or tied to the batch rather than the trace (the
 * first trace of every batch). Under the trace policy the run drops
 * traces in merges the oracle does not mirror; verdict_oracle fails
 * naming one the oracle keeps. */
static void
test_gate_liar_verdicts(void **state)
{
	(void)state;
	const char *lies[] = { "rand:30", "parity:0123", "first" };
	for (size_t i = 0; i < sizeof(lies) / sizeof(lies[0]); i++) {
		rt_run run;
		char spec[96];
		ms_replay *r = liar_run(&run, spec, sizeof(spec), NULL, lies[i],
		                        "trace");
		assert_gate_fails(r, "verdict_oracle", "is kept by the oracle");
		ms_replay_close(r);
	}
}

/* A plugin that writes into the batch it was handed. Pointing a dropped
 * entry's trace ID at its neighbour's: the merge drops one trace's rows
 * and records the other as dropped, which the ledgers, the part checks
 * and the oracle each name. Moving a dropped entry's bounds six hours
 * back: the fragment guard looks for the trace's other fragments in the
 * wrong hours and confirms drops of traces that still have fragments
 * outside the merge (on a day-1x day, whose primary merges meet matured
 * traces); such a trace is dropped in two merges, which ledgers names. */
static void
test_gate_liar_writes_batch(void **state)
{
	(void)state;
	rt_run run;
	char spec[96];
	ms_replay *r = liar_run(&run, spec, sizeof(spec), NULL, "renameid:0123",
	                        "selection");
	assert_gate_fails(r, "ledgers", "drop oracle: trace ");
	assert_gate_fails(r, "one_block_per_trace", "index ledger");
	assert_gate_fails(r, "part_ledgers", " merges: output = inputs");
	assert_gate_fails(r, "verdict_oracle", "is kept by the oracle");
	ms_replay_close(r);

	const char *fixture = rt_day1x_fixture();
	assert_non_null(fixture);
	r = liar_run(&run, spec, sizeof(spec), fixture, "narrow:0123", "trace");
	assert_gate_fails(r, "ledgers", "dropped 2 times");
	ms_replay_close(r);
}

/* ---- fail-open runs --------------------------------------------------- */

/* Run chain on the smoke fixture allowed to fail open (oversized_cap and
 * the oracle's own chain as given, 0 and NULL for the defaults); gate
 * `name` of the run into *out, its detail printed when pass differs from
 * want. */
static void
open_run_gate_policy(const char *chain, const char *grace_policy,
                     uint64_t oversized_cap, const char *oracle_spec,
                     const char *name, bool want, ms_ev_gate *out)
{
	rt_run run;
	rt_opts(&run, "fail-open", chain);
	run.o.grace_policy = grace_policy;
	run.o.plugin_dir = health_plugin_dir();
	run.o.allow_fail_open = true;
	run.o.oversized_cap = oversized_cap;
	run.t.oracle_spec = oracle_spec;
	ms_replay *r = rt_start(&run, NULL);
	assert_non_null(r);
	assert_int_equal(ms_replay_wait(r, -1), 0);
	ms_ev_gate g[32];
	size_t n = ms_replay_gates(r, g, 32, NULL);
	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < n; i++)
		if (!strcmp(g[i].name, name))
			*out = g[i];
	ms_replay_close(r);
	assert_string_equal(out->name, name);
	if (out->pass != want)
		fprintf(stderr, "%s %s: %s\n", chain, name, out->detail);
}

/* open_run_gate_policy under the default grace policy. */
static void
open_run_gate(const char *chain, uint64_t oversized_cap,
              const char *oracle_spec, const char *name, bool want,
              ms_ev_gate *out)
{
	open_run_gate_policy(chain, NULL, oversized_cap, oracle_spec, name,
	                     want, out);
}

/* A chain whose link fails open under --allow-fail-open: the traces it
 * kept unjudged are kept, not evaluated, and the oracle (whose own chain
 * fails the same way) keeps them too; verdict_oracle reconciles exactly
 * and sampling_exercised counts the merge that reached Decide. Every
 * call failing (tp_fail alone: the finalize evaluates nothing) and one
 * link of two failing (skywalking's verdicts stand). */
static void
test_fail_open_gates_hold(void **state)
{
	(void)state;
	const char *chains[] = { "tp_fail", "skywalking,tp_fail" };
	for (size_t i = 0; i < 2; i++) {
		ms_ev_gate g;
		open_run_gate(chains[i], 0, NULL, "verdict_oracle", true, &g);
		assert_true(g.pass);
		assert_non_null(strstr(g.detail, "run reconciles exactly"));
		open_run_gate(chains[i], 0, NULL, "sampling_exercised", true,
		              &g);
		assert_true(g.pass);
		/* The smoke day's one sampling merge is the finalize: one
		 * merge, said so. */
		if (i == 1)
			assert_non_null(
			        strstr(g.detail,
			               "1 merge executed sampling, 0 reached"));
		open_run_gate(chains[i], 0, NULL, "plugin_health", true, &g);
		assert_true(g.pass);
		assert_true(g.warn);
	}
}

/* The run's own engine event callback, behind evaluated_all. */
static void (*fwd_event)(void *arg, const ms_engine_event *ev);
static void *fwd_arg;

/* Each merge result reports every trace it staged as evaluated, as a
 * merge that counted a batch every link failed open on would. */
static void
evaluated_all(void *arg, const ms_engine_event *ev)
{
	(void)arg;
	if (!ev->result) {
		fwd_event(fwd_arg, ev);
		return;
	}
	static ms_merge_result res;
	res = *ev->result;
	ms_merge_sampling *s = &res.sampling;
	s->traces_evaluated =
	        s->traces_kept + s->traces_dropped + s->traces_deferred;
	ms_engine_event e = *ev;
	e.result = &res;
	fwd_event(fwd_arg, &e);
}

static int
open_evaluated_all(const void *arg, ms_engine **out, const ms_engine_opts *o,
                   ms_errbuf *eb)
{
	(void)arg;
	ms_engine_opts w = *o;
	fwd_event = o->event;
	fwd_arg = o->event_arg;
	w.event = evaluated_all;
	w.event_arg = NULL;
	return ms_engine_open(out, &w, eb);
}

/* A link that fails open on every call (--allow-fail-open), and merges
 * that count the traces no link judged as evaluated: every other count
 * holds (kept + dropped + deferred = evaluated), but the links' own
 * verdicts number none, and verdict_oracle fails saying so. Serial: one
 * merge's event at a time through the static copy. */
static void
test_gate_evaluated_unjudged(void **state)
{
	(void)state;
	rt_run run;
	rt_opts(&run, "unjudged", "tp_fail");
	run.o.plugin_dir = health_plugin_dir();
	run.o.allow_fail_open = true;
	run.o.serial = true;
	ms_replay *r = run_engine_opened(&run, open_evaluated_all);
	assert_gate_fails(r, "verdict_oracle",
	                  "4000 traces evaluated, the links judged 0 (the "
	                  "most of one link 0): traces no link judged "
	                  "counted as evaluated");
	ms_replay_close(r);
}

/* A link that drops traces and fails only on some calls. On calls of
 * 4,000 traces or more: the oracle's one batch of the smoke day's 4,000
 * traces fails, the merges' calls (smaller under the trace grace policy)
 * do not; the oracle evaluates a failed batch again in halves, so it
 * judges every trace and the run reconciles exactly. On calls with a
 * trace whose ID ends in "77": the oracle cannot judge the traces of the
 * smallest batches holding one, and the run's merges judged some of them
 * in batches without one; verdict_oracle counts those drops apart and
 * passes. Either way the ledgers reconcile with what was dropped. */
static void
test_fail_open_some_calls(void **state)
{
	(void)state;
	const char *chains[] = { "tp_fail:{\"fail\":\"0123/3999\"}",
		                 "tp_fail:{\"fail\":\"0123/100000/77\"}" };
	for (size_t i = 0; i < 2; i++) {
		ms_ev_gate g;
		open_run_gate_policy(chains[i], "trace", 0, NULL,
		                     "verdict_oracle", true, &g);
		assert_true(g.pass);
		assert_non_null(strstr(g.detail, "run reconciles exactly"));
		assert_non_null(strstr(g.detail, "its chain failed open"));
		if (i == 0)
			assert_null(strstr(g.detail, "could not judge"));
		else {
			assert_non_null(strstr(g.detail, "could not judge"));
			assert_null(strstr(g.detail, "the run dropped 0 of"));
		}
		open_run_gate_policy(chains[i], "trace", 0, NULL, "ledgers",
		                     true, &g);
		assert_true(g.pass);
		assert_null(strstr(g.detail, " 0 traces (0 rows) dropped"));
	}
}

/* Failing open does not excuse a real mismatch: an oracle with another
 * chain than the run's fails verdict_oracle, and a chain no merge called
 * (every trace over the oversized cap) fails sampling_exercised. */
static void
test_fail_open_gates_still_fail(void **state)
{
	(void)state;
	ms_ev_gate g;
	open_run_gate("detdrop:35,tp_fail", 0, "detdrop:30,tp_fail",
	              "verdict_oracle", false, &g);
	assert_false(g.pass);
	assert_non_null(strstr(g.detail, "is kept by the oracle"));
	/* Nor does a link that fails on some calls only, whose verdicts
	 * the oracle has from smaller batches. */
	open_run_gate_policy("detdrop:35,tp_fail:{\"fail\":\"0123/3999\"}",
	                     "trace", 0,
	                     "detdrop:30,tp_fail:{\"fail\":\"0123/3999\"}",
	                     "verdict_oracle", false, &g);
	assert_false(g.pass);
	assert_non_null(strstr(g.detail, "is kept by the oracle"));
	open_run_gate("skywalking", 1, NULL, "sampling_exercised", false, &g);
	assert_false(g.pass);
	assert_non_null(strstr(g.detail, "0 merges executed sampling, 0 "));
}

/* A SkyWalking link with tag rules reads the rows' tags: the oracle
 * evaluates it on whole rows (it used to refuse any chain reading more
 * than start, latency and error, failing verdict_oracle and ledgers on a
 * correct run), and its tag rules count: an oracle with another rule
 * fails the gate. */
static void
test_gate_oracle_reads_tags(void **state)
{
	(void)state;
	const char *run = "skywalking:{\"keepTagRules\":[\"cache.type\"]}";
	ms_ev_gate g;
	open_run_gate(run, 0, NULL, "verdict_oracle", true, &g);
	assert_true(g.pass);
	assert_non_null(strstr(g.detail, "run reconciles exactly"));
	open_run_gate(run, 0, NULL, "ledgers", true, &g);
	assert_true(g.pass);
	open_run_gate(run, 0, "skywalking:{\"keepTagRules\":[\"db.type\"]}",
	              "verdict_oracle", false, &g);
	assert_false(g.pass);
	assert_non_null(strstr(g.detail, "is kept by the oracle"));
}

/* A chain that fails open on every call, with a per-trace cap that some
 * traces of the smoke day pass: its merges reach Decide, evaluate
 * nothing and keep oversized traces, so they are enabled_no_evaluation
 * with reason all_traces_oversized (any oversized trace names it, as in
 * the reference), not other. sampling_exercised still counts them as
 * merges that reached Decide and failed open on every call. */
static void
test_fail_open_with_oversized_exercised(void **state)
{
	(void)state;
	ms_ev_gate g;
	open_run_gate("tp_fail", 3000, NULL, "sampling_exercised", true, &g);
	assert_true(g.pass);
	assert_non_null(strstr(g.detail, " 1 reached Decide and failed open"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ledgers_detail_names_kind),
		cmocka_unit_test(test_idle_detail_keeps_cause),
		cmocka_unit_test(test_plugin_health_clean),
		cmocka_unit_test(test_plugin_health_host_does_not_start),
		cmocka_unit_test(test_plugin_health_counts_every_result),
		cmocka_unit_test(test_plugin_health_bad_verdict),
		cmocka_unit_test(test_plugin_health_names_cause),
		cmocka_unit_test(test_plugin_health_timeout_circuit),
		cmocka_unit_test(test_plugin_health_oversized),
		cmocka_unit_test(test_fail_open_with_oversized_exercised),
		cmocka_unit_test(test_day_after_oracle),
		cmocka_unit_test(test_cooldown_after_checker),
		cmocka_unit_test(test_gate_bad_bound),
		cmocka_unit_test(test_gate_decide_twice),
		cmocka_unit_test(test_plugin_health_merges_report_calls),
		cmocka_unit_test(test_plugin_health_failed_merge_reports_calls),
		cmocka_unit_test(test_reconciliation_rows_add_up),
		cmocka_unit_test(test_gates_pass_with_drop_set_full),
		cmocka_unit_test(test_gate_stray_part),
		cmocka_unit_test(test_gate_hot_trace_decided),
		cmocka_unit_test(test_gate_split_block_intermediate),
		cmocka_unit_test(test_gate_corrupt_output_names_cause),
		cmocka_unit_test(test_finalize_failed_once),
		cmocka_unit_test(test_finalize_fails_every_time),
		cmocka_unit_test(test_finalize_out_of_memory_every_time),
		cmocka_unit_test(test_finalize_compress_error_every_time),
		cmocka_unit_test(test_wait_timeout_names_last_failure),
		cmocka_unit_test(test_merges_out_of_memory_stop_run),
		cmocka_unit_test(test_gate_publications_by_hash),
		cmocka_unit_test(test_gate_block_ledgers_from_file),
		cmocka_unit_test(test_gate_changed_publication_core),
		cmocka_unit_test(test_gate_changed_publication_index),
		cmocka_unit_test(test_gate_forged_manifest_core),
		cmocka_unit_test(test_gate_forged_manifest_index),
		cmocka_unit_test(test_gate_publication_lost),
		cmocka_unit_test(test_gate_part_never_checked),
		cmocka_unit_test(test_gate_lost_publication_not_checked),
		cmocka_unit_test(test_gate_oracle_wrong_drop),
		cmocka_unit_test(test_gate_oracle_plugin_changed),
		cmocka_unit_test(test_gate_oracle_edge_drop),
		cmocka_unit_test(test_gate_oracle_unexplained_survivor),
		cmocka_unit_test(test_gate_liar_verdicts),
		cmocka_unit_test(test_gate_failed_merge_link_calls),
		cmocka_unit_test(test_gate_liar_writes_batch),
		cmocka_unit_test(test_fail_open_gates_hold),
		cmocka_unit_test(test_gate_oracle_reads_tags),
		cmocka_unit_test(test_gate_evaluated_unjudged),
		cmocka_unit_test(test_fail_open_some_calls),
		cmocka_unit_test(test_fail_open_gates_still_fail),
		cmocka_unit_test(test_event_count_sources),
		cmocka_unit_test(test_gate_merge_row_lost),
		cmocka_unit_test(test_event_count_run_row_is_engine_count),
	};
	return cmocka_run_group_tests(tests, rt_setup, rt_teardown);
}
