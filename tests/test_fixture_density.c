/*
 * test_fixture_density.c - the index_density gate: the consolidated
 * secondary-index payload against the reference (combined within 5%,
 * latency and start_time within 10% each, at the day's day-1x units),
 * judged on whole days only.
 *
 * The bands are held at their edges on facts alone. Then whole day-1x
 * builds: the default day passes, and `fixture check` judges it again
 * from its parts; the same day without its template copies (the
 * generator's FX_MODEL_NO_COPIES, generator v8's population, index
 * payload about 6% heavy) is refused by the build, and, published anyway
 * through a test hook, refused by `fixture check`. The smoke preset (a
 * partial day: not applicable) is test_fixture_build's.
 */
#define _XOPEN_SOURCE 700
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixture_build_testlib.h"
#include "fx_int.h"
#include "ms_fixture.h"
#include "ms_fs.h"

#define PLUGIN MS_PLUGIN_DIR "/skywalking.so"

/* The reference's day-1x figures (reference.c). */
#define REF_LATENCY 2793388.0
#define REF_START_TIME 2398716.0

static char root[256];

static int
setup(void **state)
{
	(void)state;
	snprintf(root, sizeof(root), "/tmp/ms-fixture-density-%ld",
	         (long)getpid());
	ms_fs_rm_tree(root, NULL);
	return mkdir(root, 0755);
}

static int
teardown(void **state)
{
	(void)state;
	ms_fs_rm_tree(root, NULL);
	return 0;
}

static const ms_fixture_gate *
gate_of(const ms_fixture_report *r, const char *name)
{
	for (size_t i = 0; i < r->ngates; i++)
		if (strcmp(r->gates[i].name, name) == 0)
			return &r->gates[i];
	return NULL;
}

/* The gate judged on a day of `units` day-1x units whose consolidated
 * latency and start_time payloads are lat and st times the reference's. */
static const ms_fixture_gate *
judge(ms_fixture_report *rep, double units, double lat, double st)
{
	fx_gate_facts f = { .units = units };

	memset(rep, 0, sizeof(*rep));
	f.cons_bytes[MS_KIND_LATENCY] =
	        (uint64_t)llround(REF_LATENCY * units * lat);
	f.cons_bytes[MS_KIND_START_TIME] =
	        (uint64_t)llround(REF_START_TIME * units * st);
	ms__fx_gates_judge(&f, FX_GATE_BIT(FX_GATE_INDEX_DENSITY), rep);
	assert_int_equal(rep->ngates, 1);
	return gate_of(rep, "index_density");
}

static void
expect_pass(double units, double lat, double st)
{
	ms_fixture_report rep;
	const ms_fixture_gate *g = judge(&rep, units, lat, st);

	assert_non_null(g);
	assert_true(g->pass);
	assert_false(g->not_applicable);
	assert_string_equal(rep.failed_gate, "");
	assert_null(strstr(g->value, "OUTSIDE"));
}

/* Fails, naming `what` (and only the figures outside) in its value. */
static void
expect_fail(double units, double lat, double st, const char *what)
{
	ms_fixture_report rep;
	const ms_fixture_gate *g = judge(&rep, units, lat, st);

	assert_non_null(g);
	assert_false(g->pass);
	assert_false(g->not_applicable);
	assert_string_equal(rep.failed_gate, "index_density");
	assert_non_null(strstr(g->value, what));
}

/* The bands at their edges, the figures scaled with the day, and a
 * partial day not applicable (never passed, never failed). */
static void
test_bands(void **state)
{
	ms_fixture_report rep;
	const ms_fixture_gate *g;

	(void)state;
	expect_pass(1, 1.0, 1.0);
	expect_pass(1, 1.049, 1.049);
	expect_pass(1, 0.951, 0.951);
	expect_fail(1, 1.051, 1.051, "combined +5.10% OUTSIDE by 0.10 pt");
	expect_fail(1, 0.949, 0.949, "combined -5.10% OUTSIDE by 0.10 pt");
	/* One index out of its 10% while the combined figure holds: that
	 * index is named, the combined figure is not flagged. */
	expect_fail(1, 1.105, 0.96, "latency +10.50% OUTSIDE by 0.50 pt");
	g = judge(&rep, 1, 1.105, 0.96);
	assert_non_null(strstr(g->value, "combined +3.8"));
	assert_null(strstr(g->value, "combined +3.83% OUTSIDE"));
	assert_null(strstr(g->value, "start_time -4.00% OUTSIDE"));
	expect_fail(1, 1.08, 0.895, "start_time -10.50% OUTSIDE by 0.50 pt");
	expect_pass(1, 1.099, 0.99);
	/* The generator v8 day-1x figure. */
	expect_fail(1, 1.064, 1.064, "combined +6.40% OUTSIDE by 1.40 pt");
	/* Scaled: day-4x of four day-1x payloads passes, one day-1x payload
	 * at day-2x is half the reference. */
	expect_pass(4, 1.005, 1.005);
	expect_fail(2, 0.5, 0.5, "combined -50.00% OUTSIDE by 45.00 pt");
	expect_fail(1, 0, 0, "latency -100.00% OUTSIDE");
	assert_non_null(strstr(judge(&rep, 1, 1, 1)->expected,
	                       "combined within 5%, each index within 10%"));

	/* A partial day: not applicable, with why, whatever its bytes. */
	g = judge(&rep, 4000.0 / 37288.0, 1.33, 1.33);
	assert_non_null(g);
	assert_true(g->not_applicable);
	assert_false(g->pass);
	assert_string_equal(rep.failed_gate, "");
	assert_non_null(strstr(g->value, "not applicable"));
	assert_non_null(strstr(g->value, "0.107 day-1x units"));
	assert_non_null(strstr(g->value, "partial day"));
	g = judge(&rep, 0.999, 1.0, 1.0);
	assert_true(g->not_applicable);
	g = judge(&rep, 1.0, 1.0, 1.0);
	assert_false(g->not_applicable);
}

/* Day-1x of seed 1, with brk broken. */
static int
build(const char *name, enum ms_fixture_break brk, ms_fixture_report *rep,
      ms_errbuf *eb)
{
	return fbt_build(root, name, "day-1x", 1, brk, false, rep, eb);
}

static bool
exists(const char *name)
{
	return fbt_exists(root, name);
}

/* The manifest's gate row of gate in fixture name: 1 pass, 0 fail, -1
 * none; its value into value. */
static int
manifest_gate(const char *name, const char *gate, char *value, size_t n)
{
	char mpath[600];
	fx_manifest *mf = NULL;
	ms_errbuf eb = { { 0 } };
	int pass = -1;

	snprintf(mpath, sizeof(mpath), "%s/%s/%s", root, name,
	         MS_FIXTURE_MANIFEST);
	assert_int_equal(ms__fx_manifest_read(mpath, &mf, &eb), 0);
	for (size_t i = 0; i < mf->ngates; i++)
		if (strcmp(mf->gates[i].name, gate) == 0) {
			pass = mf->gates[i].pass;
			snprintf(value, n, "%s", mf->gates[i].value);
		}
	ms__fx_manifest_free(mf);
	return pass;
}

/* The default day-1x: the gate passes in the build, the manifest records
 * it, and `fixture check` judges it again from the parts. */
static void
test_day_1x_passes(void **state)
{
	ms_fixture_report rep, chk;
	ms_errbuf eb = { { 0 } };
	const ms_fixture_gate *g;
	char dir[512], value[128];

	(void)state;
	assert_int_equal(build("day", MS_FIXTURE_BREAK_NONE, &rep, &eb), 0);
	assert_string_equal(rep.failed_gate, "");
	assert_int_equal(rep.copied_traces, 5202);
	g = gate_of(&rep, "index_density");
	assert_non_null(g);
	assert_true(g->pass);
	assert_false(g->not_applicable);
	assert_non_null(strstr(g->value, "combined +"));
	/* After consolidate, in the table's order. */
	assert_string_equal(g[-1].name, "consolidate");
	assert_int_equal(
	        manifest_gate("day", "index_density", value, sizeof(value)), 1);
	assert_string_equal(value, g->value);

	snprintf(dir, sizeof(dir), "%s/day", root);
	assert_int_equal(ms_fixture_check(dir, PLUGIN, &chk, NULL, NULL, &eb),
	                 0);
	g = gate_of(&chk, "index_density");
	assert_non_null(g);
	assert_true(g->pass);
	assert_string_equal(g->value, gate_of(&rep, "index_density")->value);
}

/* The day without its template copies: every other gate passes, the
 * index payload is over its band, and the build is refused naming the
 * gate and the figure, leaving nothing behind. */
static void
test_no_copies_refused(void **state)
{
	ms_fixture_report rep;
	ms_errbuf eb = { { 0 } };
	const ms_fixture_gate *g;

	(void)state;
	assert_int_equal(build("v8", MS_FIXTURE_BREAK_NO_COPIES, &rep, &eb),
	                 MS_ERR_STATE);
	assert_int_equal(rep.copied_traces, 0);
	assert_string_equal(rep.failed_gate, "index_density");
	for (size_t i = 0; i < rep.ngates; i++)
		assert_true(rep.gates[i].pass ||
		            strcmp(rep.gates[i].name, "index_density") == 0);
	g = gate_of(&rep, "index_density");
	assert_non_null(g);
	assert_false(g->pass);
	assert_non_null(strstr(g->value, "combined +"));
	assert_non_null(strstr(g->value, "OUTSIDE by"));
	assert_non_null(strstr(eb.msg, "gate \"index_density\" failed"));
	assert_non_null(strstr(eb.msg, "OUTSIDE by"));
	assert_false(exists("v8"));
}

/* The same day published through the test hook: `fixture check` judges
 * the gate from the parts and refuses the fixture as for any gate. */
static void
test_check_refuses(void **state)
{
	ms_fixture_report rep, chk;
	ms_errbuf eb = { { 0 } };
	const ms_fixture_gate *g;
	char dir[512], value[128];

	(void)state;
	assert_int_equal(
	        build("v8-kept", MS_FIXTURE_BREAK_NO_COPIES_KEPT, &rep, &eb),
	        0);
	assert_string_equal(rep.failed_gate, "index_density");
	assert_true(exists("v8-kept"));
	/* The manifest records the gate as it was judged. */
	assert_int_equal(
	        manifest_gate("v8-kept", "index_density", value, sizeof(value)),
	        0);
	assert_string_equal(value, gate_of(&rep, "index_density")->value);

	snprintf(dir, sizeof(dir), "%s/v8-kept", root);
	assert_int_equal(ms_fixture_check(dir, PLUGIN, &chk, NULL, NULL, &eb),
	                 MS_ERR_STATE);
	assert_int_equal(chk.nproblems, 0);
	assert_string_equal(chk.failed_gate, "index_density");
	assert_non_null(strstr(eb.msg, "gate \"index_density\" failed"));
	g = gate_of(&chk, "index_density");
	assert_non_null(g);
	assert_false(g->pass);
	assert_string_equal(g->value, gate_of(&rep, "index_density")->value);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bands),
		cmocka_unit_test(test_day_1x_passes),
		cmocka_unit_test(test_no_copies_refused),
		cmocka_unit_test(test_check_refuses),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
