/*
 * test_cli_run.c - the wired commands, driven through ms_cli_main exactly
 * as the `mergescope` binary runs them, on a smoke fixture built once for
 * the whole file: `run --headless` prints the report with every gate and
 * exits 0 when they pass, --json writes a report a JSON reader accepts;
 * `export` writes JSON Lines, CSV and Chrome trace JSON that parse and
 * agree on the number of merges, with --filter selecting fewer; `report`
 * and `report --vs` (the disabled/alwayskeep equivalence); the default
 * fixture built once into the cache (and again when the cached one does
 * not open) with the database under the cache's runs/; merge-once on a
 * shard frozen at a mature barrier; and bad input
 * (missing fixture, unknown variant, malformed chain, unwritable --db)
 * answered with one line naming what and where, a non-zero exit status,
 * and no database or shard left behind.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cli_testlib.h"
#include "ms_fixture.h"
#include "ms_replay.h"
#include "ms_replay_events.h"
#include "ms_tui.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmp_root[256];
static char fixture_dir[512];
static char db_keep[512];   /* alwayskeep run */
static char db_off[512];    /* disabled run */
static char json_path[512]; /* --json of the alwayskeep run */
static char *out_text, *err_text;
static size_t out_len;

#define CAP (8u << 20)

/* Run the CLI on a NULL-terminated argument list; capture both streams. */
static int
cli(const char *first, ...)
{
	va_list ap;
	va_start(ap, first);
	int rc = ct_vcli(out_text, CAP, &out_len, err_text, CAP, first, ap);
	va_end(ap);
	return rc;
}

static char *
read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *buf = malloc(CAP);
	assert_non_null(buf);
	size_t n = fread(buf, 1, CAP - 1, f);
	buf[n] = '\0';
	fclose(f);
	if (len)
		*len = n;
	return buf;
}

static bool
exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

/* ---- A strict JSON reader (RFC 8259 grammar; values are not kept) ---- */

static const char *json_value(const char *p, int depth);

static const char *
json_ws(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	return p;
}

static const char *
json_string(const char *p)
{
	if (*p++ != '"')
		return NULL;
	while (*p != '"') {
		unsigned char c = (unsigned char)*p;
		if (c == '\0' || c < 0x20)
			return NULL;
		if (c == '\\') {
			p++;
			if (*p == 'u') {
				for (int i = 1; i <= 4; i++)
					if (!strchr("0123456789abcdefABCDEF",
					            p[i]) ||
					    !p[i])
						return NULL;
				p += 5;
				continue;
			}
			if (!*p || !strchr("\"\\/bfnrt", *p))
				return NULL;
		}
		p++;
	}
	return p + 1;
}

static const char *
json_number(const char *p)
{
	if (*p == '-')
		p++;
	if (*p == '0')
		p++;
	else if (*p >= '1' && *p <= '9')
		while (*p >= '0' && *p <= '9')
			p++;
	else
		return NULL;
	if (*p == '.') {
		p++;
		if (!(*p >= '0' && *p <= '9'))
			return NULL;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '+' || *p == '-')
			p++;
		if (!(*p >= '0' && *p <= '9'))
			return NULL;
		while (*p >= '0' && *p <= '9')
			p++;
	}
	return p;
}

static const char *
json_value(const char *p, int depth)
{
	if (depth > 64)
		return NULL;
	p = json_ws(p);
	if (*p == '{' || *p == '[') {
		char close = *p == '{' ? '}' : ']';
		bool obj = *p == '{';
		p = json_ws(p + 1);
		if (*p == close)
			return p + 1;
		for (;;) {
			if (obj) {
				p = json_string(json_ws(p));
				if (!p)
					return NULL;
				p = json_ws(p);
				if (*p++ != ':')
					return NULL;
			}
			p = json_value(p, depth + 1);
			if (!p)
				return NULL;
			p = json_ws(p);
			if (*p == close)
				return p + 1;
			if (*p++ != ',')
				return NULL;
		}
	}
	if (*p == '"')
		return json_string(p);
	if (strncmp(p, "true", 4) == 0)
		return p + 4;
	if (strncmp(p, "false", 5) == 0)
		return p + 5;
	if (strncmp(p, "null", 4) == 0)
		return p + 4;
	return json_number(p);
}

/* The whole text is exactly one JSON value. */
static bool
json_ok(const char *text)
{
	const char *end = json_value(text, 0);
	return end && *json_ws(end) == '\0';
}

/* Each line is one JSON object; returns the number of lines or -1. */
static long
jsonl_lines(char *text)
{
	long n = 0;
	for (char *line = text; *line;) {
		char *nl = strchr(line, '\n');
		if (!nl)
			return -1; /* every line ends with a newline */
		*nl = '\0';
		if (line[0] != '{' || !json_ok(line))
			return -1;
		*nl = '\n';
		n++;
		line = nl + 1;
	}
	return n;
}

/* Records of an RFC 4180 text (quoted fields may hold CRLF); -1 if a
 * quote is unbalanced or a record has another field count. */
static long
csv_records(const char *p)
{
	long records = 0;
	int fields = 1, want = -1;
	bool quoted = false;
	for (; *p; p++) {
		if (quoted) {
			if (*p == '"' && p[1] == '"')
				p++;
			else if (*p == '"')
				quoted = false;
			continue;
		}
		if (*p == '"') {
			quoted = true;
		} else if (*p == ',') {
			fields++;
		} else if (*p == '\r' && p[1] == '\n') {
			p++;
			if (want < 0)
				want = fields;
			else if (fields != want)
				return -1;
			records++;
			fields = 1;
		} else if (*p == '\n') {
			return -1; /* a bare LF is not a record end */
		}
	}
	return quoted ? -1 : records;
}

/* ---- Set-up ---------------------------------------------------------- */

static int
setup(void **state)
{
	(void)state;
	out_text = malloc(CAP);
	err_text = malloc(CAP);
	if (!out_text || !err_text)
		return -1;
	snprintf(tmp_root, sizeof(tmp_root), "/tmp/ms-test-cli-XXXXXX");
	if (!mkdtemp(tmp_root))
		return -1;
	/* Runs record their default databases under the cache; keep it in
	 * the test's directory. */
	char cache[300];
	snprintf(cache, sizeof(cache), "%s/cache", tmp_root);
	setenv("XDG_CACHE_HOME", cache, 1);
	snprintf(fixture_dir, sizeof(fixture_dir), "%s/smoke", tmp_root);
	ms_fixture_build_opts bo = {
		.preset = "smoke",
		.seed = 1,
		.out_dir = fixture_dir,
		.plugin_path = MS_PLUGIN_DIR "/skywalking.so",
	};
	ms_errbuf eb = { "" };
	if (ms_fixture_build(&bo, NULL, &eb)) {
		fprintf(stderr, "fixture build: %s\n", eb.msg);
		return -1;
	}
	snprintf(db_keep, sizeof(db_keep), "%s/keep.sqlite", tmp_root);
	snprintf(db_off, sizeof(db_off), "%s/off.sqlite", tmp_root);
	snprintf(json_path, sizeof(json_path), "%s/keep.json", tmp_root);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	char cmd[400];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp_root);
	if (tmp_root[0] && system(cmd) != 0)
		return -1;
	free(out_text);
	free(err_text);
	return 0;
}

/* ---- Tests ----------------------------------------------------------- */

static void
test_run_headless_passes(void **state)
{
	(void)state;
	int rc = cli("run", "--headless", "--fixture", fixture_dir, "--variant",
	             "alwayskeep", "--db", db_keep, "--json", json_path, NULL);
	if (rc != 0)
		fprintf(stderr, "%s\n%s\n", err_text, out_text);
	assert_int_equal(rc, 0);
	/* The report on stdout, every gate PASS, none FAIL. */
	assert_non_null(strstr(out_text, "mergescope run report"));
	assert_non_null(strstr(out_text, "gates"));
	assert_non_null(strstr(out_text, "PASS  ledgers"));
	assert_non_null(strstr(out_text, "PASS  event_count"));
	assert_null(strstr(out_text, "FAIL"));
	/* Progress and where the events are on stderr, as plain lines. */
	assert_non_null(strstr(err_text, "publications: "));
	assert_non_null(strstr(err_text, "(100%)"));
	assert_null(strstr(err_text, "\r"));
	char want[600];
	snprintf(want, sizeof(want), "events recorded in %s", db_keep);
	assert_non_null(strstr(err_text, want));
	assert_true(exists(db_keep));
	/* The shard clone is gone after the run; the fixture is intact. */
	snprintf(want, sizeof(want), "%s.shard", db_keep);
	assert_false(exists(want));

	/* --json: one JSON object with the same gates. */
	char *js = read_file(json_path, NULL);
	assert_non_null(js);
	assert_true(json_ok(js));
	assert_non_null(strstr(js, "\"gates\""));
	assert_non_null(strstr(js, "\"event_count\""));
	free(js);

	/* The disabled run of the same fixture, for the comparison. */
	rc = cli("run", "--headless", "--fixture", fixture_dir, "--variant",
	         "disabled", "--serial", "--profile", "cpus=2,mem=4g", "--db",
	         db_off, NULL);
	if (rc != 0)
		fprintf(stderr, "%s\n%s\n", err_text, out_text);
	assert_int_equal(rc, 0);
	assert_null(strstr(out_text, "FAIL"));
}

static void
test_report(void **state)
{
	(void)state;
	assert_int_equal(cli("report", "--db", db_keep, NULL), 0);
	assert_non_null(strstr(out_text, "alwayskeep"));
	assert_non_null(strstr(out_text, "PASS  event_count"));
	assert_int_equal(cli("report", "--db", db_keep, "--json", NULL), 0);
	assert_true(json_ok(out_text));
	/* disabled vs alwayskeep: identical selections and outputs. */
	int rc = cli("report", "--db", db_off, "--vs", db_keep, NULL);
	if (rc != 0)
		fprintf(stderr, "%s\n%s\n", err_text, out_text);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out_text, "disabled"));
	assert_non_null(strstr(out_text, "alwayskeep"));
	/* A missing second database is named. */
	assert_int_equal(cli("report", "--db", db_keep, "--vs",
	                     "/nonexistent/b.sqlite", NULL),
	                 2);
	assert_non_null(strstr(err_text, "--vs /nonexistent/b.sqlite"));
	assert_int_equal(
	        cli("report", "--db", db_keep, "--vs", db_off, "--json", NULL),
	        64);
	/* A run that never ended (killed): its report says so and exits 1;
	 * --vs against it names it and prints no deltas. */
	char killed[600];
	snprintf(killed, sizeof(killed), "%s/killed.sqlite", tmp_root);
	ms_rec *rec = NULL;
	ms_rec_opts ro = { .path = killed };
	ms_errbuf eb = { "" };
	assert_int_equal(ms_rec_open(&rec, &ro, &eb), 0);
	ms_ev_run run;
	memset(&run, 0, sizeof(run));
	snprintf(run.variant, sizeof(run.variant), "skywalking");
	assert_int_equal(ms_rec_run_begin(rec, &run, &eb), 0);
	assert_int_equal(ms_rec_close(rec, &eb), 0);
	assert_int_equal(cli("report", "--db", killed, NULL), 1);
	assert_non_null(strstr(out_text, "FAIL  run_finished"));
	assert_non_null(strstr(err_text, "did not finish"));
	assert_int_equal(cli("report", "--db", db_keep, "--vs", killed, NULL),
	                 1);
	assert_non_null(strstr(out_text, "B is unfinished"));
	assert_null(strstr(out_text, "%\n"));
	assert_non_null(strstr(err_text, killed));
}

static void
test_export(void **state)
{
	(void)state;
	/* JSON Lines on stdout: one merge per line. */
	assert_int_equal(
	        cli("export", "--db", db_keep, "--format", "jsonl", NULL), 0);
	long merges = jsonl_lines(out_text);
	assert_true(merges > 0);
	assert_string_equal(err_text, "");

	/* CSV to a file: a header and the same number of merges. */
	char csv[600], chrome[600], sub[600];
	snprintf(csv, sizeof(csv), "%s/ev.csv", tmp_root);
	assert_int_equal(cli("export", "--db", db_keep, "--format", "csv",
	                     "--out", csv, NULL),
	                 0);
	assert_non_null(strstr(err_text, "exported"));
	char *text = read_file(csv, NULL);
	assert_non_null(text);
	assert_int_equal(csv_records(text), merges + 1);
	free(text);

	/* Chrome trace JSON: one object with the trace events. */
	snprintf(chrome, sizeof(chrome), "%s/trace.json", tmp_root);
	assert_int_equal(cli("export", "--db", db_keep, "--format=chrome",
	                     "--out", chrome, NULL),
	                 0);
	text = read_file(chrome, NULL);
	assert_non_null(text);
	assert_true(json_ok(text));
	assert_non_null(strstr(text, "\"traceEvents\""));
	assert_non_null(strstr(text, "\"ph\":\"X\""));
	free(text);

	/* A filter in the TUI's syntax selects a subset. */
	snprintf(sub, sizeof(sub), "%s/finalize.jsonl", tmp_root);
	assert_int_equal(cli("export", "--db", db_keep, "--format", "jsonl",
	                     "--filter", "lane=finalize", "--out", sub, NULL),
	                 0);
	text = read_file(sub, NULL);
	assert_non_null(text);
	long fin = jsonl_lines(text);
	free(text);
	assert_int_equal(fin, 1); /* exactly one finalize merge */
	assert_true(fin < merges);
	assert_int_equal(cli("export", "--db", db_keep, "--format", "jsonl",
	                     "--filter", "class=sometimes", NULL),
	                 64);
	assert_non_null(strstr(err_text, "class"));
	assert_non_null(strstr(err_text, "sometimes"));

	/* A missing database is named. */
	assert_int_equal(cli("export", "--db", "/nonexistent/e.sqlite",
	                     "--format", "csv", NULL),
	                 2);
	assert_non_null(strstr(err_text, "/nonexistent/e.sqlite"));
}

/* One line on stderr, nothing on stdout. */
static void
assert_one_line(void)
{
	size_t n = strlen(err_text);
	assert_true(n > 0);
	assert_int_equal(err_text[n - 1], '\n');
	assert_null(memchr(err_text, '\n', n - 1));
	assert_int_equal(out_len, 0);
}

static void
test_bad_input(void **state)
{
	(void)state;
	char db[600], shard[620], bad[600];
	snprintf(db, sizeof(db), "%s/bad.sqlite", tmp_root);
	snprintf(shard, sizeof(shard), "%s.shard", db);

	/* Missing fixture directory. */
	snprintf(bad, sizeof(bad), "%s/no-such-fixture", tmp_root);
	assert_int_not_equal(
	        cli("run", "--headless", "--fixture", bad, "--db", db, NULL),
	        0);
	assert_one_line();
	assert_non_null(strstr(err_text, "--fixture"));
	assert_non_null(strstr(err_text, bad));

	/* A directory that is not a fixture. */
	assert_int_not_equal(cli("run", "--headless", "--fixture", tmp_root,
	                         "--db", db, NULL),
	                     0);
	assert_one_line();
	assert_non_null(strstr(err_text, "manifest"));

	/* Unknown variant: named, with where its plugin was looked for. */
	assert_int_not_equal(cli("run", "--headless", "--fixture", fixture_dir,
	                         "--variant", "frobnicate", "--db", db, NULL),
	                     0);
	assert_one_line();
	assert_non_null(strstr(err_text, "frobnicate"));
	/* ... and the variants there are listed. */
	assert_non_null(strstr(err_text, "skywalking,"));
	assert_non_null(strstr(err_text, "detdrop:PCT,"));
	assert_non_null(strstr(err_text, "disabled"));

	/* Malformed chain: named with the position. */
	assert_int_not_equal(
	        cli("run", "--headless", "--fixture", fixture_dir, "--chain",
	            "skywalking:{\"healthySampleRate\":", "--db", db, NULL),
	        0);
	assert_one_line();
	assert_non_null(strstr(err_text, "chain"));
	assert_int_not_equal(cli("run", "--headless", "--fixture", fixture_dir,
	                         "--chain", "skywalking:{\"rate\":1}", "--db",
	                         db, NULL),
	                     0);
	assert_one_line();
	assert_non_null(strstr(err_text, "rate"));

	/* Unwritable --db: a missing directory, a file as directory, a
	 * directory as the file, an existing database. */
	snprintf(bad, sizeof(bad), "%s/no-such-dir/x.sqlite", tmp_root);
	assert_int_not_equal(cli("run", "--headless", "--fixture", fixture_dir,
	                         "--db", bad, NULL),
	                     0);
	assert_one_line();
	assert_non_null(strstr(err_text, "--db"));
	assert_non_null(strstr(err_text, "does not exist"));
	snprintf(bad, sizeof(bad), "%s/x.sqlite", db_keep);
	assert_int_not_equal(cli("run", "--headless", "--fixture", fixture_dir,
	                         "--db", bad, NULL),
	                     0);
	assert_one_line();
	assert_non_null(strstr(err_text, "is not a directory"));
	assert_int_not_equal(cli("run", "--headless", "--fixture", fixture_dir,
	                         "--db", tmp_root, NULL),
	                     0);
	assert_one_line();
	assert_non_null(strstr(err_text, "is a directory"));
	assert_int_not_equal(cli("run", "--headless", "--fixture", fixture_dir,
	                         "--db", db_keep, NULL),
	                     0);
	assert_one_line();
	assert_non_null(strstr(err_text, "exists"));

	/* Bad profile and grace policy. */
	assert_int_equal(cli("run", "--headless", "--fixture", fixture_dir,
	                     "--profile", "cpus=2,disk=9", "--db", db, NULL),
	                 64);
	assert_one_line();
	assert_non_null(strstr(err_text, "disk"));

	/* A --work-dir that holds something: refused, nothing removed. */
	char wd[620], keep[640];
	snprintf(wd, sizeof(wd), "%s/busy-work-dir", tmp_root);
	snprintf(keep, sizeof(keep), "%s/precious", wd);
	assert_int_equal(mkdir(wd, 0755), 0);
	FILE *pf = fopen(keep, "w");
	assert_non_null(pf);
	fclose(pf);
	assert_int_equal(cli("run", "--headless", "--fixture", fixture_dir,
	                     "--variant", "disabled", "--work-dir", wd, "--db",
	                     db, NULL),
	                 2);
	assert_one_line();
	assert_non_null(strstr(err_text, "not an empty directory"));
	assert_true(exists(keep));

	/* None of these started any work. */
	assert_false(exists(db));
	assert_false(exists(shard));
}

/* Without --fixture: the preset's fixture in the cache, rebuilt when the
 * cached one does not open, and the database under the cache's runs/. */
static void
test_default_fixture_cache(void **state)
{
	(void)state;
	char cached[600], runs[600];
	snprintf(cached, sizeof(cached), "%s/cache/mergescope/smoke-1",
	         tmp_root);
	snprintf(runs, sizeof(runs), "%s/cache/mergescope/runs", tmp_root);
	char cmd[700];
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", cached);
	assert_int_equal(system(cmd), 0); /* empty: not a fixture */
	int rc = cli("run", "--headless", "--preset", "smoke", "--variant",
	             "disabled", NULL);
	if (rc != 0)
		fprintf(stderr, "%s\n%s\n", err_text, out_text);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(err_text, "does not open"));
	assert_non_null(strstr(err_text, "moved it to"));
	assert_non_null(strstr(err_text, "fixture write: "));
	assert_non_null(strstr(err_text, "all gates passed"));
	char want[700];
	snprintf(want, sizeof(want), "events recorded in %s/smoke-disabled-",
	         runs);
	assert_non_null(strstr(err_text, want));
	snprintf(want, sizeof(want), "%s/manifest.sqlite", cached);
	assert_true(exists(want));
	assert_null(strstr(out_text, "FAIL"));
	/* The second run reuses the cache: no build. */
	assert_int_equal(cli("run", "--headless", "--preset", "smoke",
	                     "--variant", "disabled", NULL),
	                 0);
	assert_null(strstr(err_text, "building"));
	assert_null(strstr(err_text, "fixture write"));
}

/* merge-once on a shard frozen at the first mature barrier of a run. */
static void
test_merge_once(void **state)
{
	(void)state;
	char db[600], frozen[600];
	snprintf(db, sizeof(db), "%s/freeze.sqlite", tmp_root);
	snprintf(frozen, sizeof(frozen), "%s/frozen", tmp_root);
	ms_replay_opts ro = {
		.fixture_dir = fixture_dir,
		.db_path = db,
		.variant = "disabled",
		.plugin_dir = MS_PLUGIN_DIR,
	};
	ms_replay *r = NULL;
	ms_errbuf eb = { "" };
	assert_int_equal(ms_replay_open(&r, &ro, &eb), 0);
	assert_int_equal(ms_replay_break_add(r, "mature", NULL, &eb), 0);
	assert_int_equal(ms_replay_start(r, &eb), 0);
	ms_replay_status *st = malloc(sizeof(*st));
	assert_non_null(st);
	/* Poll (bounded) until the run stops at the barrier. */
	for (int i = 0; i < 6000; i++) {
		ms_replay_get_status(r, st);
		if (st->state != MS_REPLAY_RUNNING &&
		    st->state != MS_REPLAY_READY)
			break;
		usleep(10000);
	}
	assert_int_equal(st->state, MS_REPLAY_BREAK);
	char out_dir[600];
	assert_int_equal(
	        ms_replay_freeze(r, frozen, out_dir, sizeof(out_dir), &eb), 0);
	free(st);
	ms_replay_close(r);

	int rc =
	        cli("merge-once", "--frozen", frozen, "--variant", "alwayskeep",
	            "--variant", "skywalking", "--reps", "2", NULL);
	if (rc != 0)
		fprintf(stderr, "%s\n%s\n", err_text, out_text);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out_text, "alwayskeep"));
	assert_non_null(strstr(out_text, "skywalking"));
	assert_non_null(strstr(out_text, "stable"));
	/* An unknown variant is named. */
	assert_int_not_equal(cli("merge-once", "--frozen", frozen, "--variant",
	                         "frobnicate", NULL),
	                     0);
	assert_non_null(strstr(err_text, "frobnicate"));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_run_headless_passes),
		cmocka_unit_test(test_report),
		cmocka_unit_test(test_export),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_default_fixture_cache),
		cmocka_unit_test(test_merge_once),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
