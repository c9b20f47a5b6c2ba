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
#define _GNU_SOURCE /* unshare */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ms_fs.h"
#include "cli_testlib.h"
#include "fixture_testlib.h"
#include "testdir.h"
#include "locale_testlib.h"
#include "sqlite_full_vfs.h"
#include "thread_testlib.h"
#include "ms_thread.h"
#include "ms_fixture.h"
#include "ms_replay.h"
#include "ms_replay_events.h"
#include "ms_tui.h"
#include "bin_testlib.h"
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
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
	if (ms_test_smoke_fixture(fixture_dir, 1))
		return -1;
	snprintf(db_keep, sizeof(db_keep), "%s/keep.sqlite", tmp_root);
	snprintf(db_off, sizeof(db_off), "%s/off.sqlite", tmp_root);
	snprintf(json_path, sizeof(json_path), "%s/keep.json", tmp_root);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	if (tmp_root[0] && ms_fs_rm_tree(tmp_root, NULL) != 0)
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
	assert_null(strstr(err_text, "finalize skipped"));
	assert_null(strstr(err_text, "block ledgers"));
	/* The last progress line says done, not a step at 0%. */
	char *ev = strstr(err_text, "\nevents recorded in ");
	assert_non_null(ev);
	char *last = ev;
	while (last > err_text && last[-1] != '\n')
		last--;
	char *pct = strstr(last, "(100%)");
	assert_true(pct != NULL && pct < ev);
	char want[600];
	snprintf(want, sizeof(want), "events recorded in %s", db_keep);
	assert_non_null(strstr(err_text, want));
	assert_true(exists(db_keep));
	/* The shard clone is gone after the run; the fixture is intact. */
	snprintf(want, sizeof(want), "%s.shard", db_keep);
	assert_false(exists(want));

	/* --json: one JSON object with the same gates. */
	char *js = ms_test_read(json_path, CAP, NULL);
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
	/* Its progress says the finalize was skipped and why, as its
	 * report does (before: nothing; the finalize's step never showed). */
	assert_non_null(strstr(err_text, "\nfinalize skipped "
	                                 "(pipeline_disabled: no sampler"));
}

/* A fixture whose block ledgers file is gone (its build recorded one):
 * the run goes on, reading every part, and says so as it starts, naming
 * the file (before: nothing; only slower, and "0 publications by their
 * fixture's files hash" deep in a gate's detail). */
static void
test_run_block_ledgers_missing(void **state)
{
	(void)state;
	char copy[600], db[700], cmd[1400];
	snprintf(copy, sizeof(copy), "%s/smoke-noblocks", tmp_root);
	snprintf(db, sizeof(db), "%s/noblocks.db", tmp_root);
	snprintf(cmd, sizeof(cmd), "cp -r '%s' '%s' && rm '%s/block_ledgers.bin'",
	         fixture_dir, copy, copy);
	assert_int_equal(system(cmd), 0);
	int rc = cli("run", "--headless", "--fixture", copy, "--variant",
	             "alwayskeep", "--db", db, NULL);
	if (rc != 0)
		fprintf(stderr, "%s\n%s\n", err_text, out_text);
	assert_int_equal(rc, 0);
	char want[800];
	snprintf(want, sizeof(want),
	         "fixture %s: its block ledgers cannot be used (%s/"
	         "block_ledgers.bin: No such file or directory): every part "
	         "is read and checked",
	         copy, copy);
	assert_non_null(strstr(err_text, want));
}

/* The event database fills up during the run: the run fails saying so,
 * and its last line does not claim the events were recorded (before:
 * "events recorded in DB" right after "cannot record events"). */
static void
test_run_db_full_last_line(void **state)
{
	(void)state;
	char db[600];
	snprintf(db, sizeof(db), "%s/db-full.sqlite", tmp_root);
	assert_int_equal(full_vfs_install(), SQLITE_OK);
	full_vfs_arm(160 * 1024);
	int rc = cli("run", "--headless", "--fixture", fixture_dir,
	             "--variant", "alwayskeep", "--db", db, NULL);
	full_vfs_disarm();
	fprintf(stderr, "%s", err_text);
	assert_int_equal(rc, 2);
	assert_true(full_vfs_refused() >= 1);
	assert_non_null(strstr(err_text, "cannot record events"));
	char want[700];
	snprintf(want, sizeof(want),
	         "\nwhat was recorded before the failure is in %s\n", db);
	assert_non_null(strstr(err_text, want));
	assert_null(strstr(err_text, "\nevents recorded in "));
}

/* The disk holds the run's write-ahead log but has no room to fold it into
 * the database file at the end (the file cannot grow past the 22 pages,
 * 88 KiB, it is created with: the schema and the run record; the run's
 * events take it past 180 KiB): the run reports as usual, then says last that
 * the events are in the database and its -wal together, which must be kept
 * together, and why; it exits 2, as a script that keeps only the database would
 * lose them. report and export read the two files where they are. Before, the
 * run exited 0 saying "events recorded in DB" and nothing else. */
static void
test_run_db_checkpoint_full(void **state)
{
	(void)state;
	char db[600], wal[700];
	snprintf(db, sizeof(db), "%s/ckpt-full.sqlite", tmp_root);
	snprintf(wal, sizeof(wal), "%s-wal", db);
	assert_int_equal(full_vfs_install(), SQLITE_OK);
	full_vfs_cap_main(128 * 1024);
	int rc = cli("run", "--headless", "--fixture", fixture_dir, "--variant",
	             "alwayskeep", "--db", db, NULL);
	unsigned long refused = full_vfs_refused();
	fprintf(stderr, "%s", err_text);
	assert_true(refused >= 1);
	assert_non_null(strstr(out_text, "gates, 0 failed"));
	char want[1400];
	snprintf(want, sizeof(want),
	         "\nevents recorded in %s\nmergescope run: event database "
	         "%s: its events are in it and in its write-ahead log %s (",
	         db, db, wal);
	assert_non_null(strstr(err_text, want));
	assert_non_null(strstr(err_text, "(folding the log in failed: "
	                                 "database or disk is full); keep, "
	                                 "copy and move the two files "
	                                 "together\n"));
	assert_int_equal(rc, 2);
	/* Read where they are, with the disk still full. */
	assert_int_equal(cli("report", "--db", db, NULL), 0);
	assert_non_null(strstr(out_text, "gates, 0 failed"));
	assert_int_equal(cli("export", "--db", db, "--format", "jsonl", NULL),
	                 0);
	long merges = jsonl_lines(out_text);
	assert_true(merges > 0);
	full_vfs_disarm();
	struct stat st;
	assert_int_equal(stat(wal, &st), 0);
	assert_true(st.st_size > 0);
}

/* run --freeze-at: the headless run freezes the shard at the first
 * barrier the spec matches, says where and how to replay it, runs on to
 * the end, and the frozen merge replays with merge-once. */
static void
test_run_freeze_at(void **state)
{
	(void)state;
	char db[600];
	snprintf(db, sizeof(db), "%s/freeze-at.sqlite", tmp_root);
	int rc = cli("run", "--headless", "--fixture", fixture_dir, "--variant",
	             "alwayskeep", "--freeze-at", "merge=3", "--db", db, NULL);
	assert_int_equal(rc, 0);
	const char *p = strstr(err_text, "merge-once --frozen ");
	assert_non_null(p);
	assert_non_null(strstr(err_text, "\nfrozen ("));
	char dir[600];
	p += strlen("merge-once --frozen ");
	size_t n = strcspn(p, " \n");
	assert_true(n > 0 && n < sizeof(dir));
	memcpy(dir, p, n);
	dir[n] = '\0';
	char file[700];
	snprintf(file, sizeof(file), "%s/frozen.txt", dir);
	assert_int_equal(access(file, R_OK), 0);
	assert_int_equal(cli("merge-once", "--frozen", dir, "--variant",
	                     "alwayskeep", "--reps", "1", NULL),
	                 0);
	assert_non_null(strstr(out_text, "alwayskeep"));
	/* A path with a space and a chain spec with quotes: the printed
	 * command quotes them, so it runs as shown. */
	char spaced[620], wd[700], db3[620], cmd0[1400];
	snprintf(spaced, sizeof(spaced), "%s/with space", tmp_root);
	assert_int_equal(mkdir(spaced, 0755), 0);
	snprintf(wd, sizeof(wd), "%s/shard", spaced);
	snprintf(db3, sizeof(db3), "%s/freeze-spaced.sqlite", tmp_root);
	rc = cli("run", "--headless", "--fixture", fixture_dir, "--chain",
	         "detdrop:{\"percent\":10}", "--work-dir", wd, "--freeze-at",
	         "merge=3", "--db", db3, NULL);
	if (rc)
		fprintf(stderr, "%s\n", err_text);
	assert_int_equal(rc, 0);
	char want[800];
	snprintf(want, sizeof(want), " merge-once --frozen '%s.frozen-3' ", wd);
	assert_non_null(strstr(err_text, want));
	assert_non_null(
	        strstr(err_text, " --variant 'detdrop:{\"percent\":10}'\n"));
	snprintf(cmd0, sizeof(cmd0), "rm -rf '%s'", spaced);
	assert_int_equal(system(cmd0), 0);

	/* A spec no barrier matches: the run says nothing was frozen. */
	char db2[620];
	snprintf(db2, sizeof(db2), "%s/freeze-none.sqlite", tmp_root);
	assert_int_equal(cli("run", "--headless", "--fixture", fixture_dir,
	                     "--variant", "disabled", "--freeze-at",
	                     "merge=999999", "--db", db2, NULL),
	                 0);
	assert_non_null(strstr(err_text, "--freeze-at \"merge=999999\": no "
	                                 "dispatch barrier of the run "
	                                 "matched; nothing was frozen"));
	assert_null(strstr(err_text, "merge-once --frozen"));
	/* A freeze that fails (here: a work dir whose name holds a line
	 * break, which frozen.txt cannot record): the run goes on to its
	 * end, then exits 2 saying nothing was frozen (before: 0, and a
	 * script went on to replay a directory that was not made). */
	char wd4[620], db4[620];
	snprintf(wd4, sizeof(wd4), "%s/freeze\nbroken", tmp_root);
	snprintf(db4, sizeof(db4), "%s/freeze-broken.sqlite", tmp_root);
	assert_int_equal(cli("run", "--headless", "--fixture", fixture_dir,
	                     "--variant", "disabled", "--work-dir", wd4,
	                     "--freeze-at", "merge=3", "--db", db4, NULL),
	                 2);
	assert_non_null(strstr(err_text, "must not contain line breaks"));
	assert_non_null(strstr(err_text, "--freeze-at \"merge=3\": nothing "
	                                 "was frozen (the freeze failed"));
	assert_null(strstr(err_text, "merge-once --frozen"));
	assert_false(exists(wd4));
	/* A spec that does not parse is named. */
	assert_int_equal(cli("run", "--headless", "--fixture", fixture_dir,
	                     "--freeze-at", "merge=x", "--db", db, NULL),
	                 64 /* usage */);
	assert_non_null(strstr(err_text, "--freeze-at"));
	char cmd[1400];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

/* A relative --fixture: the run records the fixture's absolute path, so
 * the merge-once command it prints runs as shown from another working
 * directory, and the report names the fixture whole. It recorded the
 * path as given, and merge-once from elsewhere said "smoke: No such file
 * or directory". */
static void
test_run_relative_fixture(void **state)
{
	(void)state;
	char db[600], was[PATH_MAX], frozen[600];
	snprintf(db, sizeof(db), "%s/relative.sqlite", tmp_root);
	assert_non_null(getcwd(was, sizeof(was)));
	assert_int_equal(chdir(tmp_root), 0);
	int rc = cli("run", "--headless", "--fixture", "smoke", "--variant",
	             "alwayskeep", "--freeze-at", "merge=3", "--db", db, NULL);
	assert_int_equal(chdir("/"), 0);
	if (rc)
		fprintf(stderr, "%s\n", err_text);
	assert_int_equal(rc, 0);
	const char *p = strstr(err_text, "merge-once --frozen ");
	assert_non_null(p);
	p += strlen("merge-once --frozen ");
	size_t n = strcspn(p, " \n");
	assert_true(n > 0 && n < sizeof(frozen));
	memcpy(frozen, p, n);
	frozen[n] = '\0';
	rc = cli("merge-once", "--frozen", frozen, "--variant", "alwayskeep",
	         "--reps", "1", NULL);
	if (rc)
		fprintf(stderr, "%s\n", err_text);
	assert_int_equal(rc, 0);
	assert_int_equal(cli("report", "--db", db, NULL), 0);
	char want[700];
	snprintf(want, sizeof(want), "smoke seed 1  %s\n", fixture_dir);
	assert_non_null(strstr(out_text, want));
	assert_int_equal(chdir(was), 0);
	char cmd[700];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", frozen);
	assert_int_equal(system(cmd), 0);
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
	/* As the reference, the disabled run ran no finalize: the picker's
	 * selections are compared, and its report says why. */
	assert_non_null(strstr(out_text, "(the picker's: A skipped its "
	                                 "finalize)"));
	assert_int_equal(cli("report", "--db", db_off, NULL), 0);
	assert_non_null(strstr(out_text, "finalize skipped"));
	assert_non_null(strstr(out_text, "pipeline_disabled: no sampler"));
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
	/* Either side: a comparison with an unfinished run is no success
	 * to a script (exit 1, as the report of that run alone). */
	assert_int_equal(cli("report", "--db", killed, "--vs", db_keep, NULL),
	                 1);
	assert_non_null(strstr(out_text, "A is unfinished"));
	assert_null(strstr(out_text, "B is unfinished"));
	assert_non_null(strstr(err_text, killed));
	assert_int_equal(cli("report", "--db", killed, "--vs", killed, NULL),
	                 1);
	assert_non_null(strstr(out_text, "B is unfinished"));
}

static void db_copy(const char *from, const char *to, const char *sql);

/* An unfinished run's database (aborted here; a copy made without its
 * -wal while the run wrote it) is exported as far as it was recorded,
 * and standard error says that it is not a whole day, and why. */
static void
export_unfinished(long merges)
{
	char aborted[600], live[600], alone[600], want[800];
	snprintf(aborted, sizeof(aborted), "%s/aborted.sqlite", tmp_root);
	db_copy(db_keep, aborted, "UPDATE run SET status = 'aborted'");
	assert_int_equal(
	        cli("export", "--db", aborted, "--format", "jsonl", NULL), 0);
	assert_int_equal(jsonl_lines(out_text), merges);
	snprintf(want, sizeof(want),
	         "mergescope export: note: %s: the run did not finish "
	         "(status aborted);",
	         aborted);
	assert_non_null(strstr(err_text, want));
	snprintf(want, sizeof(want),
	         "; what it recorded is exported (%ld merges), not a whole "
	         "day\n",
	         merges);
	assert_non_null(strstr(err_text, want));

	snprintf(live, sizeof(live), "%s/live.sqlite", tmp_root);
	snprintf(alone, sizeof(alone), "%s/live-alone.sqlite", tmp_root);
	ms_ev_run run;
	memset(&run, 0, sizeof(run));
	snprintf(run.variant, sizeof(run.variant), "skywalking");
	ms_rec *rec = NULL;
	ms_rec_opts ro = { .path = live, .run = &run };
	ms_errbuf eb = { "" };
	assert_int_equal(ms_rec_open(&rec, &ro, &eb), 0);
	assert_int_equal(ms_rec_run_begin(rec, &run, &eb), 0);
	assert_int_equal(ms_rec_flush(rec, &eb), 0);
	db_copy(live, alone, NULL);
	assert_int_equal(cli("export", "--db", alone, "--format", "csv", NULL),
	                 0);
	assert_non_null(strstr(err_text, "no write-ahead log beside it"));
	assert_non_null(strstr(err_text, "exported (0 merges)"));
	assert_int_equal(ms_rec_close(rec, &eb), 0);
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
	/* `--out -` is standard output too, not a file named "-". */
	unlink("-");
	assert_int_equal(cli("export", "--db", db_keep, "--format", "jsonl",
	                     "--out", "-", NULL),
	                 0);
	assert_int_equal(jsonl_lines(out_text), merges);
	bool dash_file = access("-", F_OK) == 0;
	unlink("-");
	assert_false(dash_file);

	/* CSV to a file: a header and the same number of merges. */
	char csv[600], chrome[600], sub[600];
	snprintf(csv, sizeof(csv), "%s/ev.csv", tmp_root);
	assert_int_equal(cli("export", "--db", db_keep, "--format", "csv",
	                     "--out", csv, NULL),
	                 0);
	assert_non_null(strstr(err_text, "exported"));
	char *text = ms_test_read(csv, CAP, NULL);
	assert_non_null(text);
	assert_int_equal(csv_records(text), merges + 1);
	free(text);

	/* Chrome trace JSON: one object with the trace events. */
	snprintf(chrome, sizeof(chrome), "%s/trace.json", tmp_root);
	assert_int_equal(cli("export", "--db", db_keep, "--format=chrome",
	                     "--out", chrome, NULL),
	                 0);
	text = ms_test_read(chrome, CAP, NULL);
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
	text = ms_test_read(sub, CAP, NULL);
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
	/* A filter that passes no merge is said on standard error, with
	 * the database, how many merges it holds and what free words are
	 * matched against; the export is empty and the status 0. */
	assert_int_equal(cli("export", "--db", db_keep, "--format", "jsonl",
	                     "--filter", "lane=fast nosuchword", NULL),
	                 0);
	assert_int_equal(out_len, 0);
	char want[800];
	snprintf(want, sizeof(want),
	         "--filter \"lane=fast nosuchword\" matched none of the %ld "
	         "merges in %s;",
	         merges, db_keep);
	assert_non_null(strstr(err_text, want));
	assert_non_null(strstr(err_text, "summary, such as \"#1 "));

	/* A missing database is named. */
	assert_int_equal(cli("export", "--db", "/nonexistent/e.sqlite",
	                     "--format", "csv", NULL),
	                 2);
	assert_non_null(strstr(err_text, "/nonexistent/e.sqlite"));
	export_unfinished(merges);
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

	/* A config its plugin refuses is a bad option value (64): named
	 * with the plugin and what it accepts; a plugin that is not there
	 * is the run's error (2). */
	assert_int_equal(cli("run", "--headless", "--fixture", fixture_dir,
	                     "--variant", "detdrop:101", "--db", db, NULL),
	                 64);
	assert_one_line();
	assert_non_null(strstr(err_text, "--variant \"detdrop:101\""));
	assert_non_null(strstr(err_text, "(detdrop)"));
	assert_non_null(strstr(err_text, "0..100"));
	assert_int_equal(cli("run", "--headless", "--fixture", fixture_dir,
	                     "--chain", "skywalking:{\"rate\":1}", "--db",
	                     db, NULL),
	                 64);
	assert_int_equal(cli("merge-once", "--frozen", tmp_root, "--variant",
	                     "detdrop:101", NULL),
	                 64);
	assert_non_null(strstr(err_text, "--variant \"detdrop:101\""));
	assert_int_equal(cli("run", "--headless", "--fixture", fixture_dir,
	                     "--variant", "frobnicate", "--db", db, NULL),
	                 2);

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

	/* A preset that is none of the table's nor day-<N>x. */
	assert_int_equal(cli("run", "--headless", "--preset", "day-1001x",
	                     "--db", db, NULL),
	                 64);
	assert_one_line();
	assert_non_null(strstr(err_text, "day-1001x"));
	assert_non_null(strstr(err_text, "--preset \"day-1001x\": expected "
	                                 "day-1x, day-2x, smoke, or day-<N>x "
	                                 "(N from 1 to 1000)\n"));

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
	/* The option it came from, before the path. */
	char wd_opt[800];
	snprintf(wd_opt, sizeof(wd_opt),
	         "mergescope run: --work-dir %s exists and is not an empty "
	         "directory",
	         wd);
	assert_non_null(strstr(err_text, wd_opt));
	assert_true(exists(keep));
	/* A file is said to be no directory (it was called a directory
	 * that is not empty), and is left as it was. */
	assert_int_equal(cli("run", "--headless", "--fixture", fixture_dir,
	                     "--variant", "disabled", "--work-dir", keep,
	                     "--db", db, NULL),
	                 2);
	assert_one_line();
	snprintf(wd_opt, sizeof(wd_opt),
	         "mergescope run: --work-dir %s exists and is not a "
	         "directory; give a new or empty directory",
	         keep);
	assert_non_null(strstr(err_text, wd_opt));
	assert_true(exists(keep));
	/* One that cannot be made is named as the option too (the line
	 * read "cannot create the shard directory DIR: ..."). */
	char under[700];
	snprintf(under, sizeof(under), "%s/sub", keep);
	assert_int_equal(cli("run", "--headless", "--fixture", fixture_dir,
	                     "--variant", "disabled", "--work-dir", under,
	                     "--db", db, NULL),
	                 2);
	assert_one_line();
	snprintf(wd_opt, sizeof(wd_opt),
	         "mergescope run: --work-dir %s: cannot be created: Not a "
	         "directory\n",
	         under);
	assert_string_equal(err_text, wd_opt);

	/* An output inside the work directory would be deleted with it:
	 * refused before any work, directly or through a link. */
	char ewd[620], inner[660], link[620], via[660];
	snprintf(ewd, sizeof(ewd), "%s/empty-work-dir", tmp_root);
	assert_int_equal(mkdir(ewd, 0755), 0);
	snprintf(inner, sizeof(inner), "%s/ev.db", ewd);
	assert_int_equal(cli("run", "--headless", "--fixture", fixture_dir,
	                     "--variant", "disabled", "--work-dir", ewd, "--db",
	                     inner, NULL),
	                 64);
	assert_one_line();
	assert_non_null(strstr(err_text, "--db"));
	assert_non_null(strstr(err_text, "lies inside --work-dir"));
	assert_false(exists(inner));
	assert_true(exists(ewd));
	snprintf(link, sizeof(link), "%s/work-link", tmp_root);
	assert_int_equal(symlink(ewd, link), 0);
	snprintf(via, sizeof(via), "%s/report.json", link);
	assert_int_equal(cli("run", "--headless", "--fixture", fixture_dir,
	                     "--variant", "disabled", "--work-dir", ewd, "--db",
	                     db, "--json", via, NULL),
	                 64);
	assert_one_line();
	assert_non_null(strstr(err_text, "--json"));
	assert_non_null(strstr(err_text, "lies inside --work-dir"));
	assert_false(exists(via));

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
	assert_non_null(strstr(err_text, "the variants in"));
	/* A frozen.txt without its shard: one line, the command named
	 * once (it read "merge-once: merge-once:"). */
	char lone[700], cmd[1600];
	snprintf(lone, sizeof(lone), "%s/frozen-lone", tmp_root);
	snprintf(cmd, sizeof(cmd), "mkdir '%s' && cp '%s/frozen.txt' '%s/'",
	         lone, frozen, lone);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(cli("merge-once", "--frozen", lone, "--variant",
	                     "disabled", NULL),
	                 2);
	assert_non_null(strstr(err_text, "mergescope merge-once: "));
	assert_non_null(strstr(err_text, "the frozen shard is missing"));
	assert_null(strstr(err_text, "merge-once: merge-once:"));
	/* A MERGESCOPE_SCRATCH that is not a directory is refused, naming
	 * it, as by the other commands (it was passed over for the
	 * cache), with exit status 2: a path of the wrong kind. */
	const char *was = getenv("MERGESCOPE_SCRATCH");
	char *saved = was ? strdup(was) : NULL;
	char file[700];
	snprintf(file, sizeof(file), "%s/frozen/frozen.txt", tmp_root);
	setenv("MERGESCOPE_SCRATCH", file, 1);
	rc = cli("merge-once", "--frozen", frozen, "--variant", "disabled",
	         "--reps", "1", NULL);
	if (saved)
		setenv("MERGESCOPE_SCRATCH", saved, 1);
	else
		unsetenv("MERGESCOPE_SCRATCH");
	free(saved);
	assert_int_equal(rc, 2);
	assert_non_null(strstr(err_text, "MERGESCOPE_SCRATCH"));
}

/* ---- Output files, long specs, locale, concurrency, small refusals ---- */

/* export --out, run --json: an existing file is refused unless --force;
 * never the database being exported. */
static void
test_output_files_need_force(void **state)
{
	(void)state;
	char out[600], db[600], js[600];
	snprintf(out, sizeof(out), "%s/precious.csv", tmp_root);
	assert_int_equal(ms_test_put(out, "precious\n"), 0);
	assert_int_equal(cli("export", "--db", db_keep, "--format", "csv",
	                     "--out", out, NULL),
	                 2);
	assert_one_line();
	assert_non_null(strstr(err_text, "exists"));
	assert_non_null(strstr(err_text, "--force"));
	char *t = ms_test_read(out, CAP, NULL);
	assert_string_equal(t, "precious\n");
	free(t);
	assert_int_equal(cli("export", "--db", db_keep, "--format", "csv",
	                     "--out", out, "--force", NULL),
	                 0);
	t = ms_test_read(out, CAP, NULL);
	assert_true(csv_records(t) > 1);
	free(t);
	/* --force without --out is a usage error. */
	assert_int_equal(cli("export", "--db", db_keep, "--format", "csv",
	                     "--force", NULL),
	                 64);
	/* Over its own database: refused even with --force, before any
	 * work (a usage error, as for report --html and run --json). */
	assert_int_equal(cli("export", "--db", db_keep, "--format", "jsonl",
	                     "--out", db_keep, "--force", NULL),
	                 64);
	assert_non_null(strstr(err_text, "event database"));
	assert_int_equal(cli("report", "--db", db_keep, NULL), 0);
	/* report --html likewise. */
	char html[600];
	snprintf(html, sizeof(html), "%s/precious.html", tmp_root);
	assert_int_equal(ms_test_put(html, "precious\n"), 0);
	assert_int_equal(cli("report", "--db", db_keep, "--html", html, NULL),
	                 2);
	assert_non_null(strstr(err_text, "--force"));
	t = ms_test_read(html, CAP, NULL);
	assert_string_equal(t, "precious\n");
	free(t);
	assert_int_equal(
	        cli("report", "--db", db_keep, "--html", html, "--force", NULL),
	        0);
	t = ms_test_read(html, CAP, NULL);
	assert_non_null(strstr(t, "<html"));
	free(t);
	/* It says where the HTML went, as export names its --out: one line
	 * on standard error (there was none). */
	char said[700];
	snprintf(said, sizeof(said), "report as HTML in %s\n", html);
	assert_string_equal(err_text, said);
	/* A file that cannot be made is named as the option it came from,
	 * as --html is (the line began with the bare path). */
	char nodir[640];
	snprintf(nodir, sizeof(nodir), "%s/no-such-dir/out.csv", tmp_root);
	assert_int_equal(cli("export", "--db", db_keep, "--format", "csv",
	                     "--out", nodir, NULL),
	                 2);
	snprintf(said, sizeof(said), "mergescope export: --out %s: ", nodir);
	assert_ptr_equal(strstr(err_text, said), err_text);
	snprintf(nodir, sizeof(nodir), "%s/no-such-dir/out.html", tmp_root);
	assert_int_equal(cli("report", "--db", db_keep, "--html", nodir, NULL),
	                 2);
	snprintf(said, sizeof(said), "mergescope report: --html %s: ", nodir);
	assert_ptr_equal(strstr(err_text, said), err_text);

	/* run --json over an existing file: refused before any work. */
	snprintf(db, sizeof(db), "%s/json-force.sqlite", tmp_root);
	snprintf(js, sizeof(js), "%s/report.json", tmp_root);
	assert_int_equal(ms_test_put(js, "precious\n"), 0);
	assert_int_equal(cli("run", "--headless", "--fixture", fixture_dir,
	                     "--variant", "disabled", "--db", db, "--json", js,
	                     NULL),
	                 2);
	assert_one_line();
	assert_non_null(strstr(err_text, "--json"));
	assert_non_null(strstr(err_text, "--force"));
	assert_false(exists(db));
	t = ms_test_read(js, CAP, NULL);
	assert_string_equal(t, "precious\n");
	free(t);
	assert_int_equal(cli("run", "--headless", "--fixture", fixture_dir,
	                     "--variant", "disabled", "--db", db, "--force",
	                     NULL),
	                 64);
	int rc = cli("run", "--headless", "--fixture", fixture_dir, "--variant",
	             "disabled", "--db", db, "--json", js, "--force", NULL);
	if (rc)
		fprintf(stderr, "%s\n", err_text);
	assert_int_equal(rc, 0);
	t = ms_test_read(js, CAP, NULL);
	assert_true(json_ok(t));
	free(t);
}

/* A copy of the database at from into to (main file only: from is
 * closed, so it holds every event), then sql run on the copy. */
static void
db_copy(const char *from, const char *to, const char *sql)
{
	size_t n = 0;
	char *b = ms_test_read(from, 64u << 20, &n);
	assert_non_null(b);
	assert_int_equal(ms_test_write(to, b, n), 0);
	free(b);
	if (!sql)
		return;
	sqlite3 *h = NULL;
	assert_int_equal(sqlite3_open(to, &h), SQLITE_OK);
	assert_int_equal(sqlite3_exec(h, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(h);
}

/* DB's run record (the caller frees it). */
static ms_ev_run *
run_record(const char *db)
{
	ms_evdb *d = NULL;
	ms_errbuf eb = { "" };
	assert_int_equal(ms_evdb_open(&d, db, &eb), 0);
	ms_ev_run *run = calloc(1, sizeof(*run));
	ms_ev_run_end *end = calloc(1, sizeof(*end));
	assert_non_null(run);
	assert_non_null(end);
	bool has_end = false;
	assert_int_equal(ms_evdb_run(d, run, end, &has_end, &eb), 0);
	free(end);
	ms_evdb_close(d);
	return run;
}

/* The fixture hash DB's run record holds. */
static void
run_fixture_hash(const char *db, char out[MS_EV_HEX_MAX])
{
	ms_ev_run *run = run_record(db);
	snprintf(out, MS_EV_HEX_MAX, "%s", run->fixture_hash);
	free(run);
}

/* A warm fixture has the schedule hash of the empty one of its preset
 * and seed: its runs record another fixture hash, and report --vs notes
 * the different fixtures and does not fail the disabled/alwayskeep
 * equivalence between them. */
static void
test_report_vs_other_opening(void **state)
{
	(void)state;
	char warm[600], db[600];
	snprintf(warm, sizeof(warm), "%s/smoke-warm", tmp_root);
	snprintf(db, sizeof(db), "%s/warm-keep.sqlite", tmp_root);
	int rc = cli("fixture", "build", "--preset", "smoke", "--seed", "1",
	             "--opening", "warm", "--out", warm, NULL);
	if (rc)
		fprintf(stderr, "%s\n", err_text);
	assert_int_equal(rc, 0);
	assert_int_equal(cli("run", "--headless", "--fixture", warm,
	                     "--variant", "alwayskeep", "--db", db, NULL),
	                 0);
	rc = cli("report", "--db", db_off, "--vs", db, NULL);
	if (rc)
		fprintf(stderr, "%s\n%s\n", out_text, err_text);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out_text, "empty opening vs "));
	assert_non_null(strstr(out_text, "warm opening); the picker"));
	assert_non_null(strstr(out_text, "not applicable"));
	assert_null(strstr(out_text, "FAIL"));
	/* The run records tell the two days apart by their fixture hash
	 * alone (what bench and report --collect compare), while the empty
	 * day's stays its schedule hash. */
	char h_empty[MS_EV_HEX_MAX], h_warm[MS_EV_HEX_MAX];
	run_fixture_hash(db_off, h_empty);
	run_fixture_hash(db, h_warm);
	assert_string_not_equal(h_empty, h_warm);
	assert_int_equal(strlen(h_warm), 32);
	ms_fixture *fx = NULL;
	ms_errbuf eb = { "" };
	assert_int_equal(ms_fixture_open(&fx, fixture_dir, &eb), 0);
	assert_string_equal(h_empty, ms_fixture_get_info(fx)->schedule_hash);
	ms_fixture_close(fx);
	assert_int_equal(ms_fixture_open(&fx, warm, &eb), 0);
	assert_string_equal(ms_fixture_get_info(fx)->schedule_hash, h_empty);
	ms_fixture_close(fx);
	/* The report's lines beside the reference name the opening of the
	 * run's own fixture only: a directory built again since with a
	 * warm opening (here the record names the warm day's) is not taken
	 * for it. It read "this run: warm opening". */
	char moved[600], sql[1400];
	snprintf(moved, sizeof(moved), "%s/off-moved.sqlite", tmp_root);
	snprintf(sql, sizeof(sql), "UPDATE run SET fixture_dir = '%s'", warm);
	db_copy(db_off, moved, sql);
	assert_int_equal(cli("report", "--db", moved, NULL), 0);
	assert_non_null(strstr(out_text, "this run: unknown opening"));
	assert_int_equal(cli("report", "--db", db, NULL), 0);
	assert_non_null(strstr(out_text, "this run: warm opening"));
	assert_int_equal(cli("report", "--db", db_off, NULL), 0);
	assert_non_null(strstr(out_text, "this run: empty opening"));

	/* Put where the preset's default day is cached, the warm day is
	 * not taken for it: the run is refused naming the directory. */
	char cache[600], cmd[1400];
	snprintf(cache, sizeof(cache), "%s/cache-warm", tmp_root);
	snprintf(cmd, sizeof(cmd),
	         "mkdir -p '%s/mergescope' && "
	         "cp -r '%s' '%s/mergescope/smoke-1'",
	         cache, warm, cache);
	assert_int_equal(system(cmd), 0);
	const char *was = getenv("XDG_CACHE_HOME");
	char saved[600];
	snprintf(saved, sizeof(saved), "%s", was ? was : "");
	setenv("XDG_CACHE_HOME", cache, 1);
	rc = cli("run", "--headless", "--preset", "smoke", NULL);
	setenv("XDG_CACHE_HOME", saved, 1);
	assert_int_equal(rc, 2);
	assert_non_null(strstr(err_text, "is not the preset's default build: "
	                                 "opening warm (the default: empty)"));
	assert_non_null(strstr(err_text, "/mergescope/smoke-1"));

	/* Nor is another preset's day: the smoke day where day-1x's is
	 * cached was replayed as day-1x (its empty opening was all that
	 * was compared). */
	snprintf(cmd, sizeof(cmd),
	         "mkdir -p '%s/mergescope' && "
	         "cp -r '%s' '%s/mergescope/day-1x-1'",
	         cache, fixture_dir, cache);
	assert_int_equal(system(cmd), 0);
	setenv("XDG_CACHE_HOME", cache, 1);
	rc = cli("run", "--headless", "--preset", "day-1x", NULL);
	setenv("XDG_CACHE_HOME", saved, 1);
	assert_int_equal(rc, 2);
	assert_non_null(strstr(err_text, "is not the preset's default build: "
	                                 "preset smoke (the default: day-1x)"));
	assert_non_null(strstr(err_text, "/mergescope/day-1x-1"));
}

/* No output goes over an event database or a file SQLite keeps beside it
 * (its -wal holds the events not yet copied into the main file): export
 * --out, report --html and run --json naming one are refused before
 * anything is written, even with --force, and the database keeps every
 * merge. */
static void
test_outputs_never_over_the_database(void **state)
{
	(void)state;
	char db[600], wal[620], shm[620], fresh[600], fresh_wal[620];
	snprintf(db, sizeof(db), "%s/guarded.sqlite", tmp_root);
	db_copy(db_keep, db, NULL);
	assert_int_equal(cli("export", "--db", db, "--format", "jsonl", NULL),
	                 0);
	long merges = jsonl_lines(out_text);
	assert_true(merges > 0);
	snprintf(wal, sizeof(wal), "%s-wal", db);
	snprintf(shm, sizeof(shm), "%s-shm", db);
	assert_int_equal(cli("export", "--db", db, "--format", "csv", "--out",
	                     wal, "--force", NULL),
	                 64);
	assert_one_line();
	/* Named by the option, a usage error as for report and run (it
	 * was "export PATH: ..." with status 2). */
	char want[1400];
	snprintf(want, sizeof(want),
	         "mergescope export: --out %s: that is the event database "
	         "of --db %s",
	         wal, db);
	if (strncmp(err_text, want, strlen(want)))
		fail_msg("said: %s", err_text);
	assert_int_equal(
	        cli("report", "--db", db, "--html", shm, "--force", NULL), 64);
	assert_one_line();
	assert_non_null(strstr(err_text, "--html"));
	assert_int_equal(cli("report", "--db", db_off, "--vs", db, "--html", db,
	                     "--force", NULL),
	                 64);
	assert_one_line();
	assert_non_null(strstr(err_text, "--vs"));
	assert_int_equal(cli("export", "--db", db, "--format", "jsonl", NULL),
	                 0);
	assert_int_equal(jsonl_lines(out_text), merges);
	assert_int_equal(cli("report", "--db", db, NULL), 0);
	/* --force without --html: a usage error, as for export and run. */
	assert_int_equal(cli("report", "--db", db, "--force", NULL), 64);
	assert_one_line();
	assert_non_null(strstr(err_text, "--html"));

	/* run --json naming its own --db (or the -wal to be), refused
	 * before the run starts. */
	snprintf(fresh, sizeof(fresh), "%s/json-is-db.sqlite", tmp_root);
	snprintf(fresh_wal, sizeof(fresh_wal), "%s-wal", fresh);
	const char *jsons[] = { fresh, fresh_wal };
	for (size_t i = 0; i < 2; i++) {
		assert_int_equal(cli("run", "--headless", "--fixture",
		                     fixture_dir, "--variant", "disabled",
		                     "--db", fresh, "--json", jsons[i],
		                     "--force", NULL),
		                 64);
		assert_one_line();
		assert_non_null(strstr(err_text, "--json"));
		assert_false(exists(fresh));
		assert_false(exists(fresh_wal));
	}
}

/* report --vs: a gate either run failed is named and exits 1, as the
 * report of that run alone does. */
static void
test_report_vs_failed_gate(void **state)
{
	(void)state;
	char bad[600];
	snprintf(bad, sizeof(bad), "%s/failed-gate.sqlite", tmp_root);
	db_copy(db_keep, bad,
	        "UPDATE gate SET pass = 0 WHERE name = 'ledgers'");
	assert_int_equal(cli("report", "--db", bad, NULL), 1);
	assert_int_equal(cli("report", "--db", db_off, "--vs", bad, NULL), 1);
	assert_non_null(strstr(out_text, "1 failed: ledgers"));
	assert_non_null(strstr(err_text, bad));
	assert_int_equal(cli("report", "--db", bad, "--vs", db_off, NULL), 1);
	assert_non_null(strstr(err_text, bad));
	assert_int_equal(cli("report", "--db", db_off, "--vs", db_keep, NULL),
	                 0);
	/* A side that cannot be read is an error, not a report of A. */
	char norun[600];
	snprintf(norun, sizeof(norun), "%s/no-run.sqlite", tmp_root);
	db_copy(db_keep, norun, "DELETE FROM run");
	assert_int_equal(cli("report", "--db", db_off, "--vs", norun, NULL), 2);
	assert_int_equal(out_len, 0);
	assert_non_null(strstr(err_text, "no run record"));
}

/* Standard output that cannot be written (a full disk): the report is
 * lost, so the command fails and says so, with the reason, instead of
 * exiting 0. */
static void
test_output_write_failure(void **state)
{
	(void)state;
	FILE *full = fopen("/dev/full", "w");
	if (!full) {
		fprintf(stderr, "no /dev/full: not tested\n");
		return;
	}
	/* Also when the report's verdict is a failure (exit status 1
	 * with standard output whole): a gate failed, the run did not
	 * finish. */
	char bad[600], aborted[600];
	snprintf(bad, sizeof(bad), "%s/full-failed-gate.sqlite", tmp_root);
	db_copy(db_keep, bad,
	        "UPDATE gate SET pass = 0 WHERE name = 'ledgers'");
	snprintf(aborted, sizeof(aborted), "%s/full-aborted.sqlite", tmp_root);
	db_copy(db_keep, aborted, "UPDATE run SET status = 'aborted'");
	const char *argvs[][7] = {
		{ "mergescope", "report", "--db", db_keep, NULL },
		{ "mergescope", "report", "--db", db_keep, "--json", NULL },
		{ "mergescope", "report", "--db", db_off, "--vs", db_keep },
		{ "mergescope", "report", "--db", bad, NULL },
		{ "mergescope", "report", "--db", aborted, "--json", NULL },
		{ "mergescope", "report", "--db", db_off, "--vs", bad },
	};
	const int argcs[] = { 4, 5, 6, 4, 5, 6 };
	for (size_t i = 0; i < 6; i++) {
		FILE *e = tmpfile();
		assert_non_null(e);
		int rc = ms_cli_main(argcs[i], (char **)argvs[i], full, e);
		ct_slurp(e, err_text, CAP);
		fclose(e);
		clearerr(full);
		assert_int_equal(rc, 2);
		assert_non_null(strstr(err_text, "mergescope report: writing "
		                                 "to standard output failed"));
	}
	/* A run's report and an export far larger than the stream's buffer:
	 * the line says why, whatever failed first. */
	char db[600];
	snprintf(db, sizeof(db), "%s/full-stdout.sqlite", tmp_root);
	const char *run[] = { "mergescope", "run",       "--headless",
		              "--fixture",  fixture_dir, "--variant",
		              "alwayskeep", "--db",      db };
	const char *exports[][6] = {
		{ "mergescope", "export", "--db", db_keep, "--format",
		  "jsonl" },
		{ "mergescope", "export", "--db", db_keep, "--format", "csv" },
		{ "mergescope", "export", "--db", db_keep, "--format",
		  "chrome" },
	};
	for (size_t i = 0; i < 4; i++) {
		FILE *e = tmpfile();
		assert_non_null(e);
		int rc = i == 0 ? ms_cli_main(9, (char **)run, full, e)
		                : ms_cli_main(6, (char **)exports[i - 1], full,
		                              e);
		ct_slurp(e, err_text, CAP);
		fclose(e);
		clearerr(full);
		fprintf(stderr, "%s", err_text);
		assert_int_equal(rc, 2);
		const char *who = i == 0 ? "mergescope run: "
		                         : "mergescope export: ";
		assert_non_null(strstr(err_text, who));
		assert_non_null(strstr(err_text, "standard output"));
		assert_non_null(strstr(err_text, strerror(ENOSPC)));
	}
	fclose(full);
}

/* A reader that closes standard output early (`export ... | head -1`, a
 * read end closed here before anything is written): the export stops
 * there, quietly (no error, nor the note of an unfinished run), with exit
 * status 128 + SIGPIPE as `run` after a closed pipe, and leaves no
 * SIGPIPE pending (the export was killed by SIGPIPE, and this process
 * with it). */
static void
test_export_closed_pipe(void **state)
{
	(void)state;
	char aborted[600];
	snprintf(aborted, sizeof(aborted), "%s/pipe-aborted.sqlite", tmp_root);
	db_copy(db_keep, aborted, "UPDATE run SET status = 'aborted'");
	struct sigaction dfl, ign, old;
	memset(&dfl, 0, sizeof(dfl));
	sigemptyset(&dfl.sa_mask);
	ign = dfl;
	dfl.sa_handler = SIG_DFL;
	ign.sa_handler = SIG_IGN;
	assert_int_equal(sigaction(SIGPIPE, &dfl, &old), 0);
	static const char *const fmts[] = { "jsonl", "csv", "chrome" };
	for (size_t i = 0; i < 3; i++) {
		int p[2];
		assert_int_equal(pipe(p), 0);
		close(p[0]);
		FILE *o = fdopen(p[1], "w"), *e = tmpfile();
		assert_true(o && e);
		const char *argv[] = { "mergescope", "export", "--db",
			               aborted,      "--format", fmts[i] };
		int rc = ms_cli_main(6, (char **)argv, o, e);
		ct_slurp(e, err_text, CAP);
		fclose(e);
		sigset_t pending;
		assert_int_equal(sigpending(&pending), 0);
		assert_false(sigismember(&pending, SIGPIPE));
		/* The stream keeps what it could not write: closed with
		 * SIGPIPE ignored. */
		sigaction(SIGPIPE, &ign, NULL);
		fclose(o);
		sigaction(SIGPIPE, &dfl, NULL);
		if (rc != 128 + SIGPIPE || err_text[0])
			fail_msg("%s: exit %d, %s", fmts[i], rc, err_text);
	}
	/* To a file, standard output unused: exported whole. */
	char csv[600];
	snprintf(csv, sizeof(csv), "%s/pipe.csv", tmp_root);
	int p[2];
	assert_int_equal(pipe(p), 0);
	close(p[0]);
	FILE *o = fdopen(p[1], "w");
	assert_non_null(o);
	const char *argv[] = { "mergescope", "export", "--db", db_keep,
		               "--format",   "csv",    "--out", csv };
	FILE *e = tmpfile();
	assert_int_equal(ms_cli_main(8, (char **)argv, o, e), 0);
	fclose(e);
	fclose(o);
	sigaction(SIGPIPE, &old, NULL);
	assert_int_equal(cli("export", "--db", db_keep, "--format", "csv",
	                     NULL),
	                 0);
	FILE *f = fopen(csv, "r");
	assert_non_null(f);
	char *text = malloc(CAP);
	assert_non_null(text);
	ct_slurp(f, text, CAP);
	fclose(f);
	assert_true(strlen(out_text) > 0);
	assert_string_equal(text, out_text);
	free(text);
}

/* A profile of more CPUs than the machine has runs sized for it: in a
 * cgroup of its own, whose pids hold the merge workers it starts (1025
 * for 2048 CPUs; with 512 pids the run failed to start its worker 509). */
static void
test_profile_many_cpus(void **state)
{
	(void)state;
	char db[600];
	snprintf(db, sizeof(db), "%s/many-cpus.sqlite", tmp_root);
	int rc = cli("run", "--headless", "--fixture", fixture_dir,
	             "--variant", "alwayskeep", "--profile", "cpus=2048",
	             "--db", db, NULL);
	if (strstr(out_text, "envelope     emulated")) {
		fprintf(stderr, "no writable cgroup: not tested\n");
		return;
	}
	if (rc)
		fprintf(stderr, "%s", err_text);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out_text, ", pids.max 1537: "));
	assert_non_null(strstr(out_text, "workers 1024 fast + 1 slow"));
	assert_non_null(strstr(out_text, "gates, 0 failed"));
}

/* A chain spec longer than 255 bytes is replayed and recorded whole, its
 * 8 links each; one of 9 links, or longer than the record holds, is
 * refused with a message. */
static void
test_long_chain_spec(void **state)
{
	(void)state;
	char spec[1024] = "skywalking";
	for (int i = 0; i < 7; i++)
		strcat(spec, ",detdrop:{\"percent\":0.00000000000000000000}");
	assert_true(strlen(spec) > 300);
	char db[600];
	snprintf(db, sizeof(db), "%s/long-chain.sqlite", tmp_root);
	int rc = cli("run", "--headless", "--fixture", fixture_dir, "--chain",
	             spec, "--db", db, NULL);
	if (rc)
		fprintf(stderr, "%s\n", err_text);
	assert_int_equal(rc, 0);
	ms_ev_run *run = run_record(db);
	assert_string_equal(run->variant, spec);
	assert_string_equal(run->chain, spec);
	assert_int_equal(run->nplugins, 8);
	free(run);

	/* A ninth link is refused, naming the limit: a run recorded only
	 * the first 8 of its links, so the ninth's calls, drops and gates
	 * were lost. */
	size_t eight = strlen(spec);
	strcat(spec, ",alwayskeep");
	snprintf(db, sizeof(db), "%s/nine-links.sqlite", tmp_root);
	assert_int_equal(cli("run", "--headless", "--fixture", fixture_dir,
	                     "--chain", spec, "--db", db, NULL),
	                 64);
	char want[128];
	snprintf(want, sizeof(want),
	         "chain spec: offset %zu (link 9): a chain holds at most 8 "
	         "links",
	         eight + 1);
	if (!strstr(err_text, want))
		fail_msg("'%s' not in: %s", want, err_text);
	assert_false(exists(db));

	/* Longer than a run records: refused before any work, and by the
	 * replay itself. */
	size_t n = MS_EV_SPEC_MAX + 10;
	char *huge = malloc(n + 1);
	assert_non_null(huge);
	memset(huge, ' ', n);
	memcpy(huge, "alwayskeep", 10);
	huge[n] = '\0';
	snprintf(db, sizeof(db), "%s/huge-chain.sqlite", tmp_root);
	assert_int_equal(cli("run", "--headless", "--fixture", fixture_dir,
	                     "--chain", huge, "--db", db, NULL),
	                 64);
	assert_non_null(strstr(err_text, "at most 4095"));
	assert_false(exists(db));
	ms_replay_opts ro = { .fixture_dir = fixture_dir,
		              .db_path = db,
		              .variant = huge,
		              .plugin_dir = MS_PLUGIN_DIR };
	ms_replay *r = NULL;
	ms_errbuf eb = { "" };
	assert_int_equal(ms_replay_open(&r, &ro, &eb), MS_ERR_RANGE);
	assert_null(r);
	assert_non_null(strstr(eb.msg, "chain spec"));
	free(huge);
}

/* Back to the C locale after the decimal-comma test, also when one of
 * its checks failed half-way: the tests after it compare C-locale text. */
static int
c_locale(void **state)
{
	(void)state;
	setlocale(LC_ALL, "C");
	return 0;
}

/* The mergescope binary and the command line in a locale with a decimal
 * comma: the same report and exports as in the C locale; --speed reads
 * "1.5" and refuses "1,5". */
static void
test_decimal_comma_locale(void **state)
{
	(void)state;
	/* In the C locale first (the reference bytes). */
	assert_int_equal(cli("report", "--db", db_keep, "--json", NULL), 0);
	char *ref_json = strdup(out_text);
	assert_int_equal(cli("report", "--db", db_keep, NULL), 0);
	char *ref_text = strdup(out_text);
	assert_non_null(strstr(ref_text, ".")); /* it has fractions */
	assert_true(lt_use_comma_locale(tmp_root));
	/* In process, under the comma locale. */
	assert_int_equal(cli("report", "--db", db_keep, "--json", NULL), 0);
	assert_string_equal(out_text, ref_json);
	assert_int_equal(
	        cli("tui", "--speed", "1.5", "--preset", "no-such", NULL), 64);
	assert_null(strstr(err_text, "--speed \"1.5\""));
	assert_non_null(strstr(err_text, "--preset"));
	assert_int_equal(
	        cli("tui", "--speed", "1,5", "--preset", "no-such", NULL), 64);
	assert_non_null(strstr(err_text, "--speed \"1,5\": expected"));
	setlocale(LC_ALL, "C");

	/* The binary with LC_ALL set: main takes only LC_CTYPE. */
	char path[700], cmd[1600];
	snprintf(path, sizeof(path), "%s/locale-report.txt", tmp_root);
	snprintf(cmd, sizeof(cmd),
	         "LC_ALL=" LT_COMMA_LOCALE " '%s/tui/mergescope' report "
	         "--db '%s' > '%s'",
	         MS_BINARY_DIR, db_keep, path);
	assert_int_equal(system(cmd), 0);
	char *t = ms_test_read(path, CAP, NULL);
	assert_string_equal(t, ref_text);
	free(t);
	snprintf(path, sizeof(path), "%s/locale.csv", tmp_root);
	snprintf(cmd, sizeof(cmd),
	         "LC_ALL=" LT_COMMA_LOCALE " '%s/tui/mergescope' export "
	         "--db '%s' --format csv --out '%s'",
	         MS_BINARY_DIR, db_keep, path);
	assert_int_equal(system(cmd), 0);
	t = ms_test_read(path, CAP, NULL);
	assert_true(csv_records(t) > 1); /* every row as wide as the header */
	free(t);
	free(ref_json);
	free(ref_text);
}

/* Run the command line in a child process with stderr to err_path;
 * returns the child's pid. */
static pid_t
spawn_cli(const char *err_path, const char *first, ...)
{
	fflush(NULL);
	pid_t parent = getpid();
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid > 0)
		return pid;
	ms_test_die_with(parent);
	char *argv[CT_MAX_ARGS];
	int argc = 0;
	argv[argc++] = (char *)"mergescope";
	va_list ap;
	va_start(ap, first);
	for (const char *a = first; a && argc < CT_MAX_ARGS - 1;
	     a = va_arg(ap, const char *))
		argv[argc++] = (char *)a;
	va_end(ap);
	argv[argc] = NULL;
	/* Not the parent's descriptors: a lock the parent holds must go
	 * when the parent closes it. */
	for (int fd = 3; fd < 1024; fd++)
		close(fd);
	FILE *o = fopen("/dev/null", "w"), *e = fopen(err_path, "w");
	if (!o || !e)
		_exit(99);
	setvbuf(e, NULL, _IONBF, 0);
	int rc = ms_cli_main(argc, argv, o, e);
	fclose(o);
	fclose(e);
	_exit(rc);
}

static int
wait_exit(pid_t pid)
{
	int status = 0;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static bool
file_has(const char *path, const char *needle)
{
	char *t = ms_test_read(path, CAP, NULL);
	bool yes = t && strstr(t, needle);
	free(t);
	return yes;
}

/* Two first-time builds of one preset at once: the second waits for the
 * first and replays what it built. Two runs started together get their
 * own default databases. */
static void
test_concurrent_builds_and_runs(void **state)
{
	(void)state;
	char cache[600], lock[700], e1[600], e2[600];
	snprintf(cache, sizeof(cache), "%s/cache2", tmp_root);
	snprintf(lock, sizeof(lock), "%s/mergescope/smoke-1.lock", cache);
	snprintf(e1, sizeof(e1), "%s/build1.err", tmp_root);
	snprintf(e2, sizeof(e2), "%s/build2.err", tmp_root);
	char cmd[700];
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s/mergescope'", cache);
	assert_int_equal(system(cmd), 0);
	/* Hold the build lock so both runs are under way before either
	 * builds; each says it waits. */
	int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
	assert_true(fd >= 0);
	assert_int_equal(flock(fd, LOCK_EX), 0);
	char *old = getenv("XDG_CACHE_HOME") ? strdup(getenv("XDG_CACHE_HOME"))
	                                     : NULL;
	setenv("XDG_CACHE_HOME", cache, 1);
	pid_t a = spawn_cli(e1, "run", "--headless", "--preset", "smoke",
	                    "--variant", "disabled", NULL);
	pid_t b = spawn_cli(e2, "run", "--headless", "--preset", "smoke",
	                    "--variant", "disabled", NULL);
	int i;
	for (i = 0; i < 3000; i++) { /* up to 5 min; a bound, not a timing */
		if (file_has(e1, "waiting for it") &&
		    file_has(e2, "waiting for it"))
			break;
		usleep(100000);
	}
	assert_true(i < 3000);
	close(fd); /* let them go */
	int ra = wait_exit(a), rb = wait_exit(b);
	if (ra || rb) {
		char *t1 = ms_test_read(e1, CAP, NULL),
		     *t2 = ms_test_read(e2, CAP, NULL);
		fprintf(stderr, "%s\n---\n%s\n", t1, t2);
		free(t1);
		free(t2);
	}
	assert_int_equal(ra, 0);
	assert_int_equal(rb, 0);
	/* Exactly one built; the other reused it. */
	assert_int_equal(file_has(e1, "building the smoke fixture") +
	                         file_has(e2, "building the smoke fixture"),
	                 1);
	/* Two databases under runs/, one per run. */
	char runs[700];
	snprintf(runs, sizeof(runs), "%s/mergescope/runs", cache);
	DIR *dir = opendir(runs);
	assert_non_null(dir);
	int ndb = 0;
	for (struct dirent *de; (de = readdir(dir));) {
		size_t l = strlen(de->d_name);
		ndb += l > 7 && strcmp(de->d_name + l - 7, ".sqlite") == 0;
	}
	closedir(dir);
	assert_int_equal(ndb, 2);
	/* Two more started together on the built fixture. */
	a = spawn_cli(e1, "run", "--headless", "--preset", "smoke", "--variant",
	              "alwayskeep", NULL);
	b = spawn_cli(e2, "run", "--headless", "--preset", "smoke", "--variant",
	              "alwayskeep", NULL);
	assert_int_equal(wait_exit(a), 0);
	assert_int_equal(wait_exit(b), 0);
	assert_false(file_has(e1, "building the smoke fixture"));
	assert_false(file_has(e2, "building the smoke fixture"));
	dir = opendir(runs);
	assert_non_null(dir);
	ndb = 0;
	for (struct dirent *de; (de = readdir(dir));)
		ndb += strstr(de->d_name, "smoke-alwayskeep-") != NULL &&
		       strstr(de->d_name, "-wal") == NULL &&
		       strstr(de->d_name, "-shm") == NULL;
	closedir(dir);
	assert_int_equal(ndb, 2);
	/* `fixture build` of the same preset and seed reuses it too. */
	assert_int_equal(cli("fixture", "build", "--preset", "smoke", "--seed",
	                     "1", NULL),
	                 0);
	assert_non_null(strstr(out_text, "already built; reusing it"));
	if (old) {
		setenv("XDG_CACHE_HOME", old, 1);
		free(old);
	}
}

/* A database another process holds locked is reported as locked, and is
 * not removed. */
static void
test_locked_database(void **state)
{
	(void)state;
	char path[600];
	snprintf(path, sizeof(path), "%s/locked.sqlite", tmp_root);
	sqlite3 *h = NULL;
	assert_int_equal(sqlite3_open(path, &h), SQLITE_OK);
	assert_int_equal(sqlite3_exec(h,
	                              "PRAGMA locking_mode=EXCLUSIVE; "
	                              "BEGIN EXCLUSIVE; CREATE TABLE t(x);",
	                              NULL, NULL, NULL),
	                 SQLITE_OK);
	ms_rec *rec = NULL;
	ms_errbuf eb = { "" };
	ms_rec_opts ro = { .path = path };
	assert_true(ms_rec_open(&rec, &ro, &eb) < 0);
	assert_null(rec);
	assert_non_null(strstr(eb.msg, "locked by another process"));
	assert_null(strstr(eb.msg, "not an SQLite database"));
	assert_true(exists(path));
	sqlite3_exec(h, "COMMIT", NULL, NULL, NULL);
	sqlite3_close(h);
}

/* Small refusals: a --break that does not parse, a profile too small or
 * with a key twice. */
/* An output path the user named is refused in one wording by every
 * command: "mergescope CMD: OPT PATH: CAUSE". Before, an existing file
 * was "OPT PATH exists; ..." (no colon), and a missing directory "cannot
 * create a file in its directory" for export and report but "directory
 * D does not exist" for run. */
static void
out_paths_said_alike(void)
{
	char file[600], in_missing[700], in_file[700], want[1600];
	snprintf(file, sizeof(file), "%s/exists.out", tmp_root);
	assert_int_equal(ms_test_put(file, "x\n"), 0);
	snprintf(in_missing, sizeof(in_missing), "%s/no-such-dir/x",
	         tmp_root);
	snprintf(in_file, sizeof(in_file), "%s/x", file);
	const struct {
		const char *path, *cause;
	} cases[] = {
		{ file, "exists; not overwritten (give --force to replace "
		        "it)" },
		{ tmp_root, "is a directory; expected a file name" },
		{ in_missing, "directory " },
		{ in_file, "directory " },
	};
	char nodb[600];
	snprintf(nodb, sizeof(nodb), "%s/never.sqlite", tmp_root);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *p = cases[i].path;
		char said[3][1024];
		assert_int_equal(cli("export", "--db", db_keep, "--format",
		                     "csv", "--out", p, NULL),
		                 2);
		snprintf(said[0], sizeof(said[0]), "%s", err_text);
		assert_int_equal(cli("report", "--db", db_keep, "--html", p,
		                     NULL),
		                 2);
		snprintf(said[1], sizeof(said[1]), "%s", err_text);
		assert_int_equal(cli("run", "--headless", "--fixture",
		                     fixture_dir, "--db", nodb, "--json", p,
		                     NULL),
		                 2);
		snprintf(said[2], sizeof(said[2]), "%s", err_text);
		static const char *const cmd[] = { "export", "report", "run" };
		static const char *const opt[] = { "--out", "--html",
			                           "--json" };
		for (int k = 0; k < 3; k++) {
			snprintf(want, sizeof(want), "mergescope %s: %s %s: %s",
			         cmd[k], opt[k], p, cases[i].cause);
			if (strncmp(said[k], want, strlen(want)))
				fail_msg("want %s\nsaid %s", want, said[k]);
		}
		/* The cause after "OPT PATH: " is the same words. */
		const char *c0 = strstr(said[0], p) + strlen(p);
		const char *c2 = strstr(said[2], p) + strlen(p);
		if (strcmp(c0, c2) || strcmp(c0, strstr(said[1], p) + strlen(p)))
			fail_msg("worded apart:\n%s%s%s", said[0], said[1],
			         said[2]);
	}
	unlink(file);
	/* The database itself, alike (run said "the event database DB
	 * ...; give another file name"). */
	assert_int_equal(cli("export", "--db", nodb, "--format", "csv",
	                     "--out", nodb, "--force", NULL),
	                 64);
	const char *that = strstr(err_text, ": that is");
	assert_non_null(that);
	snprintf(want, sizeof(want), "%s", that);
	assert_int_equal(cli("run", "--headless", "--fixture", fixture_dir,
	                     "--db", nodb, "--json", nodb, NULL),
	                 64);
	that = strstr(err_text, ": that is");
	if (!that || strcmp(that, want))
		fail_msg("export said: %s\nrun said: %s", want, err_text);
}

static void
test_small_refusals(void **state)
{
	(void)state;
	char db[600];
	snprintf(db, sizeof(db), "%s/refused.sqlite", tmp_root);
	assert_int_equal(cli("run", "--headless", "--fixture", fixture_dir,
	                     "--break", "garbage", "--db", db, NULL),
	                 64);
	assert_one_line();
	assert_non_null(strstr(err_text, "--break \"garbage\""));
	assert_int_equal(cli("run", "--headless", "--fixture", fixture_dir,
	                     "--profile", "mem=1", "--db", db, NULL),
	                 64);
	assert_one_line();
	assert_non_null(strstr(err_text, "mem"));
	assert_int_equal(cli("run", "--headless", "--fixture", fixture_dir,
	                     "--profile", "cpus=2,cpus=4", "--db", db, NULL),
	                 64);
	assert_one_line();
	assert_non_null(strstr(err_text, "twice"));
	assert_false(exists(db));
	/* An empty file or another SQLite database is not taken for an
	 * event log of another schema version. */
	char empty[600];
	snprintf(empty, sizeof(empty), "%s/empty.sqlite", tmp_root);
	assert_int_equal(ms_test_put(empty, ""), 0);
	assert_int_equal(cli("report", "--db", empty, NULL), 2);
	assert_one_line();
	assert_non_null(strstr(err_text, "not an event database"));
	assert_null(strstr(err_text, "schema version 0"));
	char manifest[600];
	snprintf(manifest, sizeof(manifest), "%s/manifest.sqlite", fixture_dir);
	assert_int_equal(
	        cli("export", "--db", manifest, "--format", "csv", NULL), 2);
	assert_one_line();
	assert_non_null(strstr(err_text, "not an event database"));
	/* An empty output name is named as the option's value. */
	assert_int_equal(cli("export", "--db", db_keep, "--format", "csv",
	                     "--out", "", NULL),
	                 64);
	assert_one_line();
	assert_non_null(strstr(err_text, "--out \"\": expected a file name"));
	assert_int_equal(cli("report", "--db", db_keep, "--html", "", NULL),
	                 64);
	assert_one_line();
	assert_non_null(strstr(err_text, "--html \"\": expected a file name"));
	out_paths_said_alike();
}

/* Become a user who cannot override file permissions (nobody) when root;
 * in a child process only. */
static void
drop_privileges(void)
{
	if (geteuid() != 0)
		return;
	if (setgroups(0, NULL) != 0 || setgid(65534) != 0 || setuid(65534) != 0)
		_exit(98);
}

/* The plugins where nobody can read them: the build's directory may be
 * under a home only root can enter (a checkout in /root), and the program
 * then finds them through MERGESCOPE_PLUGIN_DIR. Returns that copy. */
static const char *
plugins_for_nobody(void)
{
	static char dir[600];
	if (dir[0])
		return dir;
	char cmd[1600];
	snprintf(dir, sizeof(dir), "%s/plugins-for-nobody", tmp_root);
	snprintf(cmd, sizeof(cmd), "cp -R '%s' '%s' && chmod -R a+rX '%s'",
	         MS_PLUGIN_DIR, dir, dir);
	assert_int_equal(system(cmd), 0);
	return dir;
}

/* Run the command line in a child, after prep(arg) there (which returns
 * an exit status to leave with at once, or 0); its stderr goes to
 * err_path. The child's exit status is the command's, or what post(arg,
 * status) makes of it when post is given. */
static int
cli_child(const char *err_path, int (*prep)(const void *),
          int (*post)(const void *, int), const void *arg, const char *first,
          va_list ap)
{
	assert_int_equal(ms_test_put(err_path, ""), 0);
	assert_int_equal(chmod(err_path, 0666), 0);
	fflush(NULL);
	pid_t parent = getpid();
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		ms_test_die_with(parent);
		int pre = prep(arg);
		if (pre)
			_exit(pre);
		ms_test_die_with(parent); /* a prep's setuid cleared it */
		char *argv[CT_MAX_ARGS];
		int argc = 0;
		argv[argc++] = (char *)"mergescope";
		for (const char *a = first; a && argc < CT_MAX_ARGS - 1;
		     a = va_arg(ap, const char *))
			argv[argc++] = (char *)a;
		argv[argc] = NULL;
		FILE *o = fopen("/dev/null", "w"), *e = fopen(err_path, "w");
		if (!o || !e)
			_exit(99);
		int rc = ms_cli_main(argc, argv, o, e);
		fclose(o);
		fclose(e);
		_exit(post ? post(arg, rc) : rc);
	}
	return wait_exit(pid);
}

/* In the child: nobody (when root), with the shared TMPDIR (the caller's
 * may be private to its owner) and plugins it can read. */
static int
become_nobody(const void *plugins)
{
	drop_privileges();
	if (setenv("TMPDIR", "/tmp", 1) != 0 ||
	    setenv("MERGESCOPE_PLUGIN_DIR", plugins, 1) != 0)
		return 98;
	return 0;
}

/* Run the command line as nobody (when root) in a child; its stderr goes
 * to err_path (made writable for it first). */
static int
cli_unprivileged(const char *err_path, const char *first, ...)
{
	const char *plugins = plugins_for_nobody();
	va_list ap;
	va_start(ap, first);
	int rc = cli_child(err_path, become_nobody, NULL, plugins, first,
	                   ap);
	va_end(ap);
	return rc;
}

/* cli_child's prep: a mount namespace of the child's own, with a tmpfs
 * of 1 MiB mounted on the directory arg: read-only, or writable with an
 * empty directory "user" in it (see tmpfs_user_dir_kept); 77 where none
 * can be made (not root, no namespaces). */
static int
small_tmpfs(const char *dir, bool rdonly)
{
	char user[700];
	snprintf(user, sizeof(user), "%s/user", dir);
	if (unshare(CLONE_NEWNS) != 0 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0 ||
	    mount("tmpfs", dir, "tmpfs", rdonly ? MS_RDONLY : 0, "size=1m") !=
	            0)
		return 77;
	return rdonly || mkdir(user, 0755) == 0 ? 0 : 97;
}

static int
read_only_tmpfs(const void *arg)
{
	return small_tmpfs(arg, true);
}

static int
writable_tmpfs(const void *arg)
{
	return small_tmpfs(arg, false);
}

/* cli_child's post for writable_tmpfs: the command's status, or 96 when
 * the directory "user" is gone. */
static int
tmpfs_user_dir_kept(const void *arg, int rc)
{
	char user[700];
	struct stat st;
	snprintf(user, sizeof(user), "%s/user", (const char *)arg);
	return stat(user, &st) == 0 && S_ISDIR(st.st_mode) ? rc : 96;
}

static int
cli_small_tmpfs(const char *err_path, bool rdonly, const char *mnt,
                const char *first, ...)
{
	va_list ap;
	va_start(ap, first);
	int rc = cli_child(err_path, rdonly ? read_only_tmpfs : writable_tmpfs,
	                   rdonly ? NULL : tmpfs_user_dir_kept, mnt, first, ap);
	va_end(ap);
	return rc;
}

/* A fixture whose manifest, or a part, this user cannot read: the line
 * says so (it said SQLite's "unable to open database file" alone, and
 * for a part only "PATH: Permission denied"). */
static void
test_fixture_unreadable(void **state)
{
	(void)state;
	char fx[600], cmd[1400], db[700], errp[600];
	snprintf(fx, sizeof(fx), "%s/fx-unreadable", tmp_root);
	snprintf(db, sizeof(db), "%s/fx-unreadable.sqlite", tmp_root);
	snprintf(errp, sizeof(errp), "%s/fxu.err", tmp_root);
	snprintf(cmd, sizeof(cmd),
	         "mkdir '%s' && cp '%s/manifest.sqlite' '%s/' && "
	         "chmod 0000 '%s/manifest.sqlite'",
	         fx, fixture_dir, fx, fx);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(chmod(fx, 0755), 0);
	assert_int_equal(chmod(tmp_root, 0777), 0);
	int rc = cli_unprivileged(errp, "run", "--headless", "--fixture", fx,
	                          "--variant", "disabled", "--db", db, NULL);
	assert_int_equal(chmod(tmp_root, 0700), 0);
	char *t = ms_test_read(errp, CAP, NULL);
	fprintf(stderr, "%s", t);
	assert_int_equal(rc, 2);
	if (!strstr(t, "manifest.sqlite: open: ") ||
	    !strstr(t, strerror(EACCES)))
		fail_msg("said: %s", t);
	free(t);
	/* A part it cannot read: named as the fixture's part, not as a
	 * bare path ("PATH: Permission denied" was all). */
	snprintf(cmd, sizeof(cmd),
	         "rm -rf '%s' && cp -R '%s' '%s' && chmod -R a+rX '%s' && "
	         "chmod 0000 \"$(ls -d '%s'/parts/core/* | head -n 1)\"",
	         fx, fixture_dir, fx, fx, fx);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(chmod(tmp_root, 0777), 0);
	rc = cli_unprivileged(errp, "run", "--headless", "--fixture", fx,
	                      "--variant", "disabled", "--db", db, NULL);
	assert_int_equal(chmod(tmp_root, 0700), 0);
	t = ms_test_read(errp, CAP, NULL);
	fprintf(stderr, "%s", t);
	assert_int_equal(rc, 2);
	char want[700];
	snprintf(want, sizeof(want), "mergescope run: fixture %s: core part ",
	         fx);
	if (strncmp(t, want, strlen(want)) ||
	    !strstr(t, " cannot be read: ") || !strstr(t, strerror(EACCES)))
		fail_msg("said: %s", t);
	free(t);
}

/* A --work-dir the user made and this user cannot write in (a 555
 * directory in a 777 one): refused for that before anything else, and
 * left as it was. It read "DIR/.mergescope-owner.tmp-PID: Permission
 * denied", and DIR was gone. */
static void
test_work_dir_not_writable(void **state)
{
	(void)state;
	char parent[600], ro[700], db[700], errp[600], want[900];
	snprintf(parent, sizeof(parent), "%s/open-parent", tmp_root);
	snprintf(ro, sizeof(ro), "%s/ro", parent);
	snprintf(db, sizeof(db), "%s/ro.sqlite", parent);
	snprintf(errp, sizeof(errp), "%s/wd.err", tmp_root);
	assert_int_equal(mkdir(parent, 0777), 0);
	assert_int_equal(chmod(parent, 0777), 0);
	assert_int_equal(mkdir(ro, 0555), 0);
	assert_int_equal(chmod(ro, 0555), 0);
	assert_int_equal(chmod(tmp_root, 0755), 0);
	int rc = cli_unprivileged(errp, "run", "--headless", "--fixture",
	                          fixture_dir, "--variant", "disabled",
	                          "--work-dir", ro, "--db", db, NULL);
	assert_int_equal(chmod(tmp_root, 0700), 0);
	char *t = ms_test_read(errp, CAP, NULL);
	fprintf(stderr, "%s", t);
	assert_int_equal(rc, 2);
	snprintf(want, sizeof(want),
	         "mergescope run: --work-dir %s: cannot write in it "
	         "(Permission denied)",
	         ro);
	assert_ptr_equal(strstr(t, want), t);
	assert_ptr_equal(strchr(t, '\n'), t + strlen(t) - 1);
	assert_null(strstr(t, "owner"));
	free(t);
	struct stat st;
	assert_int_equal(stat(ro, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_false(exists(db));
	assert_int_equal(rmdir(ro), 0);
}

/* A --work-dir on a small read-only file system: refused for being
 * read-only, not for its room ("its file system has 1.0 MiB free and
 * the day's parts ... take 6.6 MiB"). On a small writable one, an empty
 * directory the user made there is refused for its room and left as it
 * was (it was deleted). */
static void
test_work_dir_small_fs(void **state)
{
	(void)state;
	char mnt[600], user[700], db[700], errp[600], want[900];
	snprintf(mnt, sizeof(mnt), "%s/ro-mount", tmp_root);
	snprintf(user, sizeof(user), "%s/user", mnt);
	snprintf(db, sizeof(db), "%s/ro-mount.sqlite", tmp_root);
	snprintf(errp, sizeof(errp), "%s/rofs.err", tmp_root);
	assert_int_equal(mkdir(mnt, 0755), 0);
	int rc = cli_small_tmpfs(errp, true, mnt, "run", "--headless",
	                         "--fixture", fixture_dir, "--variant",
	                         "disabled", "--work-dir", mnt, "--db", db,
	                         NULL);
	if (rc == 77) {
		fprintf(stderr, "no mount namespace for a small tmpfs here "
		                "(not root?): not run\n");
		skip();
	}
	char *t = ms_test_read(errp, CAP, NULL);
	fprintf(stderr, "%s", t);
	assert_int_equal(rc, 2);
	snprintf(want, sizeof(want),
	         "mergescope run: --work-dir %s: cannot write in it "
	         "(Read-only file system)",
	         mnt);
	assert_ptr_equal(strstr(t, want), t);
	assert_null(strstr(t, "free"));
	free(t);
	assert_false(exists(db));

	rc = cli_small_tmpfs(errp, false, mnt, "run", "--headless",
	                     "--fixture", fixture_dir, "--variant", "disabled",
	                     "--work-dir", user, "--db", db, NULL);
	t = ms_test_read(errp, CAP, NULL);
	fprintf(stderr, "%s", t);
	assert_int_equal(rc, 2); /* 96: the directory was removed */
	snprintf(want, sizeof(want),
	         "mergescope run: --work-dir %s: its file system has 1.0 MiB "
	         "free",
	         user);
	assert_ptr_equal(strstr(t, want), t);
	free(t);
	assert_false(exists(db));
	assert_int_equal(rmdir(mnt), 0);
}

/* fixture check: an unreadable part is a permission error, not a changed
 * or missing part; a damaged manifest gives SQLite's own words. */
static void
test_fixture_check_errors(void **state)
{
	(void)state;
	char copy[600], cmd[1400], errp[600];
	snprintf(copy, sizeof(copy), "%s/check-copy", tmp_root);
	snprintf(errp, sizeof(errp), "%s/check.err", tmp_root);
	snprintf(cmd, sizeof(cmd), "cp -a '%s' '%s' && chmod 755 '%s'",
	         fixture_dir, copy, tmp_root);
	assert_int_equal(system(cmd), 0);
	ms_fixture *f = NULL;
	ms_errbuf eb = { "" };
	assert_int_equal(ms_fixture_open(&f, copy, &eb), 0);
	char data[700];
	assert_int_equal(
	        ms_fixture_slot_path(f, 2, MS_KIND_CORE, data, sizeof(data)),
	        0);
	ms_fixture_close(f);
	assert_int_equal(chmod(data, 0), 0);
	int rc = cli_unprivileged(errp, "fixture", "check", copy, NULL);
	char *t = ms_test_read(errp, CAP, NULL);
	assert_int_equal(rc, 2);
	assert_non_null(strstr(t, "Permission denied"));
	assert_null(strstr(t, "changed"));
	assert_null(strstr(t, "missing"));
	free(t);
	assert_int_equal(chmod(data, 0644), 0);

	/* A damaged manifest: its first page overwritten. */
	char mf[700];
	snprintf(mf, sizeof(mf), "%s/manifest.sqlite", copy);
	int fd = open(mf, O_WRONLY);
	assert_true(fd >= 0);
	char junk[100];
	memset(junk, 'x', sizeof(junk));
	assert_int_equal(pwrite(fd, junk, sizeof(junk), 0), sizeof(junk));
	close(fd);
	assert_int_equal(cli("fixture", "check", copy, NULL), 2);
	assert_non_null(strstr(err_text, "file is not a database"));
	assert_null(strstr(err_text, "no fixture table"));
	assert_int_equal(chmod(tmp_root, 0700), 0);
}

/* merge-once on a read-only frozen directory (test_merge_once froze it):
 * it is only read, as its help says. */
static void
test_merge_once_read_only(void **state)
{
	(void)state;
	char frozen[600], errp[600], cmd[1400], runs[700];
	snprintf(frozen, sizeof(frozen), "%s/frozen", tmp_root);
	snprintf(errp, sizeof(errp), "%s/once.err", tmp_root);
	snprintf(cmd, sizeof(cmd), "chmod -R a+rX,a-w '%s' && chmod 755 '%s'",
	         frozen, tmp_root);
	assert_int_equal(system(cmd), 0);
	int rc = cli_unprivileged(errp, "merge-once", "--frozen", frozen,
	                          "--variant", "alwayskeep", "--reps", "1",
	                          NULL);
	if (rc) {
		char *t = ms_test_read(errp, CAP, NULL);
		fprintf(stderr, "%s\n", t);
		free(t);
	}
	assert_int_equal(rc, 0);
	snprintf(runs, sizeof(runs), "%s/runs", frozen);
	assert_false(exists(runs));
	snprintf(cmd, sizeof(cmd), "chmod -R u+w '%s' && chmod 700 '%s'",
	         frozen, tmp_root);
	assert_int_equal(system(cmd), 0);
}

/* An event database this user may not read: report and export say so,
 * with its mode and owner, and name the path once ("--db X: event
 * database X: Permission denied; expected a database written by
 * `mergescope run`" suggested it was not one). */
static void
test_database_unreadable(void **state)
{
	(void)state;
	if (geteuid() != 0)
		skip(); /* only root can become a user who may not read it */
	char db[700], errp[600], once[800];
	snprintf(db, sizeof(db), "%s/private.sqlite", tmp_root);
	db_copy(db_keep, db, NULL);
	assert_int_equal(chmod(db, 0600), 0);
	snprintf(errp, sizeof(errp), "%s/private.err", tmp_root);
	assert_int_equal(chmod(tmp_root, 0755), 0);
	int rc = cli_unprivileged(errp, "report", "--db", db, NULL);
	char *t = ms_test_read(errp, CAP, NULL);
	int rc2 = cli_unprivileged(errp, "export", "--db", db, "--format",
	                           "csv", NULL);
	char *t2 = ms_test_read(errp, CAP, NULL);
	assert_int_equal(chmod(tmp_root, 0700), 0);
	assert_int_equal(rc, 2);
	assert_int_equal(rc2, 2);
	snprintf(once, sizeof(once),
	         "mergescope report: --db %s: this user (uid 65534) may not "
	         "read it (%s: mode 0600, owner uid 0)",
	         db, strerror(EACCES));
	if (strncmp(t, once, strlen(once)) != 0)
		fail_msg("said: %s", t);
	assert_null(strstr(t, "expected a database"));
	assert_null(strstr(strstr(t, db) + 1, db));
	assert_string_equal(strchr(t, '\n'), "\n"); /* one line */
	snprintf(once, sizeof(once), "mergescope export: --db %s: this user",
	         db);
	if (strncmp(t2, once, strlen(once)) != 0)
		fail_msg("said: %s", t2);
	assert_null(strstr(strstr(t2, db) + 1, db));
	free(t);
	free(t2);
}

/* An event database in a directory the reader cannot write (a read-only
 * mount, another user's runs): report and export read it, though SQLite
 * cannot make the -wal and -shm files there. */
static void
test_read_only_database_dir(void **state)
{
	(void)state;
	char dir[600], db[700], errp[600], cmd[1400];
	snprintf(dir, sizeof(dir), "%s/archive", tmp_root);
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(db, sizeof(db), "%s/keep.sqlite", dir);
	db_copy(db_keep, db, NULL);
	snprintf(errp, sizeof(errp), "%s/ro.err", tmp_root);
	snprintf(cmd, sizeof(cmd), "chmod 555 '%s' && chmod 755 '%s'", dir,
	         tmp_root);
	assert_int_equal(system(cmd), 0);
	int rc = cli_unprivileged(errp, "report", "--db", db, NULL);
	int rc2 = cli_unprivileged(errp, "export", "--db", db, "--format",
	                           "jsonl", NULL);
	char *t = ms_test_read(errp, CAP, NULL);
	if (rc || rc2)
		fprintf(stderr, "%s\n", t);
	free(t);
	snprintf(cmd, sizeof(cmd), "chmod 755 '%s' && chmod 700 '%s'", dir,
	         tmp_root);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(rc, 0);
	assert_int_equal(rc2, 0);
	char wal[720];
	snprintf(wal, sizeof(wal), "%s-wal", db);
	assert_false(exists(wal));
}

/* `tui` on a terminal with no room for the thread that takes Ctrl-C
 * (pthread_create failing, thread_testlib.h): it refuses before opening
 * anything, saying why and where to look. It went on with SIGINT
 * blocked and nothing to take it, so Ctrl-C did nothing. The terminal is
 * a pseudo-terminal on stdout for the call. */
static void
test_tui_without_signal_thread(void **state)
{
	(void)state;
	int m = posix_openpt(O_RDWR | O_NOCTTY);
	assert_true(m >= 0);
	assert_int_equal(grantpt(m), 0);
	assert_int_equal(unlockpt(m), 0);
	int t = open(ptsname(m), O_RDWR | O_NOCTTY);
	assert_true(t >= 0);
	char db[600];
	snprintf(db, sizeof(db), "%s/no-signal-thread.db", tmp_root);
	fflush(stdout);
	int saved = dup(STDOUT_FILENO);
	assert_true(saved >= 0);
	assert_int_equal(dup2(t, STDOUT_FILENO), STDOUT_FILENO);
	/* And on stdin: a TUI with no keyboard is refused before this. */
	int saved_in = dup(STDIN_FILENO);
	assert_true(saved_in >= 0);
	assert_int_equal(dup2(t, STDIN_FILENO), STDIN_FILENO);
	/* The threads of the stack the signal thread has: the chain's
	 * workers, which check the variant before, have another. */
	tl_threads_fail_stack(MS_THREAD_STACK);
	int rc = cli("tui", "--fixture", fixture_dir, "--variant", "alwayskeep",
	             "--db", db, NULL);
	tl_threads_fail_stack(0);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	dup2(saved_in, STDIN_FILENO);
	close(saved_in);
	close(t);
	close(m);
	fprintf(stderr, "refused as expected: %s", err_text);
	assert_int_equal(rc, 2); /* MS_EXIT_ERROR */
	assert_non_null(strstr(err_text, "mergescope tui: cannot start the "
	                                 "thread that takes Ctrl-C"));
	assert_non_null(strstr(err_text, strerror(EAGAIN)));
	assert_non_null(strstr(err_text, "ulimit -v"));
	assert_false(exists(db));
}

/* cli_child's prep: a session of its own (no controlling terminal), a
 * pseudo-terminal (its slave's name in arg) on stdout and /dev/null on
 * stdin. */
static int
terminal_without_keyboard(const void *arg)
{
	if (setsid() < 0)
		return 97;
	int t = open(arg, O_RDWR | O_NOCTTY);
	int n = open("/dev/null", O_RDONLY);
	if (t < 0 || n < 0 || dup2(t, STDOUT_FILENO) < 0 ||
	    dup2(n, STDIN_FILENO) < 0)
		return 98;
	return 0;
}

/* cli_child after terminal_without_keyboard(pts). */
static int
cli_without_keyboard(const char *err_path, const char *pts,
                     const char *first, ...)
{
	va_list ap;
	va_start(ap, first);
	int rc = cli_child(err_path, terminal_without_keyboard, NULL, pts,
	                   first, ap);
	va_end(ap);
	return rc;
}

/* `tui` drawing on a terminal with no keyboard (stdin not a terminal, no
 * controlling one to read keys from, as under a service manager or
 * `setsid tui < /dev/null > /dev/pts/N`): refused at once, exit 64,
 * nothing opened. It ran the day on a screen that q could never stop. */
static void
test_tui_without_keyboard(void **state)
{
	(void)state;
	int m = posix_openpt(O_RDWR | O_NOCTTY);
	assert_true(m >= 0);
	assert_int_equal(grantpt(m), 0);
	assert_int_equal(unlockpt(m), 0);
	char db[600], errp[600], pts[256];
	snprintf(pts, sizeof(pts), "%s", ptsname(m));
	snprintf(db, sizeof(db), "%s/no-keyboard.db", tmp_root);
	snprintf(errp, sizeof(errp), "%s/no-keyboard.err", tmp_root);
	int rc = cli_without_keyboard(errp, pts, "tui", "--fixture",
	                              fixture_dir, "--variant", "alwayskeep",
	                              "--db", db, NULL);
	close(m);
	char *t = ms_test_read(errp, CAP, NULL);
	fprintf(stderr, "%s", t);
	assert_int_equal(rc, MS_EXIT_USAGE);
	assert_non_null(strstr(t, "mergescope tui: no keyboard: standard "
	                          "input is not a terminal"));
	assert_non_null(strstr(t, "mergescope run --headless"));
	assert_false(exists(db));
	free(t);
}

/* `tui --headless` is `run`: it takes run's options (--json, --force,
 * --freeze-at) and every option its help lists (--allow-fail-open); they
 * were refused as unknown options of `tui`. For the screen, the headless
 * run's own are refused, saying to add --headless (checked on a
 * terminal without a keyboard: refused before that is). */
static void
test_tui_headless_takes_run_options(void **state)
{
	(void)state;
	char db[600], json[600], errp[600], pts[256];
	snprintf(db, sizeof(db), "%s/tui-headless.db", tmp_root);
	snprintf(json, sizeof(json), "%s/tui-headless.json", tmp_root);
	int rc = cli("tui", "--headless", "--fixture", fixture_dir,
	             "--variant", "alwayskeep", "--allow-fail-open", "--db", db,
	             "--json", json, NULL);
	if (rc)
		fprintf(stderr, "%s\n", err_text);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out_text, "mergescope run report"));
	assert_true(exists(json));
	/* --force with it replaces the report; the run's own check. */
	snprintf(db, sizeof(db), "%s/tui-headless-2.db", tmp_root);
	assert_int_equal(cli("tui", "--headless", "--fixture", fixture_dir,
	                     "--force", NULL),
	                 MS_EXIT_USAGE);
	assert_string_equal(err_text,
	                    "mergescope run: --force needs --json FILE\n");
	/* The screen: refused, naming the option and what to do. */
	int m = posix_openpt(O_RDWR | O_NOCTTY);
	assert_true(m >= 0);
	assert_int_equal(grantpt(m), 0);
	assert_int_equal(unlockpt(m), 0);
	snprintf(pts, sizeof(pts), "%s", ptsname(m));
	snprintf(errp, sizeof(errp), "%s/tui-json.err", tmp_root);
	rc = cli_without_keyboard(errp, pts, "tui", "--fixture", fixture_dir,
	                          "--allow-fail-open", "--freeze-at", "mature",
	                          "--db", db, NULL);
	close(m);
	char *t = ms_test_read(errp, CAP, NULL);
	fprintf(stderr, "%s", t);
	assert_int_equal(rc, MS_EXIT_USAGE);
	assert_non_null(strstr(t, "mergescope tui: --freeze-at is an option "
	                          "of the headless run"));
	assert_non_null(strstr(t, "add --headless, or use mergescope run"));
	assert_false(exists(db));
	free(t);
}

#ifdef MS_MERGESCOPE_BIN
/* `run --headless` of the real binary (its watcher beside it) stopped at
 * stop point `point` (MERGESCOPE_TEST_STOP, tui/cli.h), then SIGKILLed
 * there; returns once the run and its watcher are gone (the write end of
 * a pipe both inherit is closed), its standard error in err_path. */
static void
run_killed_at(const char *point, const char *db, const char *work,
              const char *err_path)
{
	int gone[2];
	assert_int_equal(pipe(gone), 0);
	setenv("MERGESCOPE_TEST_STOP", point, 1);
	const char *args[] = { "run",       "--headless", "--fixture",
		               fixture_dir, "--variant",  "alwayskeep",
		               "--db",      db,           "--work-dir",
		               work,        NULL };
	pid_t pid = bt_spawn(args, false, NULL, err_path, NULL, 0);
	unsetenv("MERGESCOPE_TEST_STOP");
	close(gone[1]);
	int st = 0;
	for (int i = 0; i < 60 * 20; i++) {
		pid_t w = waitpid(pid, &st, WNOHANG | WUNTRACED);
		if (w == pid)
			break;
		assert_int_equal(w, 0);
		struct timespec ts = { 0, 50000000 };
		nanosleep(&ts, NULL);
	}
	if (!WIFSTOPPED(st))
		kill(pid, SIGKILL);
	kill(pid, SIGKILL);
	int end = 0;
	waitpid(pid, &end, 0);
	assert_true(WIFSTOPPED(st)); /* the process got to the point */
	assert_true(WIFSIGNALED(end) && WTERMSIG(end) == SIGKILL);
	struct pollfd pfd = { .fd = gone[0], .events = POLLIN };
	char c;
	assert_int_equal(poll(&pfd, 1, 120 * 1000), 1); /* a hang guard */
	assert_int_equal(read(gone[0], &c, 1), 0);
	close(gone[0]);
}

/* A run killed (SIGKILL) at any instant after its event database exists
 * leaves a database that says what happened: killed once the replay is
 * open but before it started, the run is in it, recorded as aborted by
 * its watcher, and `report` says so (and that no worker started);
 * killed the moment the file exists, still empty, the watcher removes it
 * (there is nothing to read) and says so; killed once the scratch shard
 * exists, before the database, the watcher removes the shard and names
 * it. Every way the scratch shard is gone. */
static void
test_killed_before_start(void **state)
{
	(void)state;
	char db[600], work[600], errp[600], want[900];
	snprintf(db, sizeof(db), "%s/killed-open.sqlite", tmp_root);
	snprintf(work, sizeof(work), "%s/killed-open.shard", tmp_root);
	snprintf(errp, sizeof(errp), "%s/killed-open.err", tmp_root);
	run_killed_at("opened", db, work, errp);
	char *msg = ms_test_read(errp, CAP, NULL);
	assert_non_null(msg);
	fprintf(stderr, "%s", msg);
	snprintf(want, sizeof(want), "run aborted: killed by a signal");
	assert_non_null(strstr(msg, want));
	free(msg);
	assert_false(exists(work));
	ms_evdb *ev = NULL;
	ms_errbuf eb = { "" };
	assert_int_equal(ms_evdb_open(&ev, db, &eb), 0);
	ms_ev_run run;
	ms_ev_run_end end;
	bool has_end = false;
	int rc = ms_evdb_run(ev, &run, &end, &has_end, &eb);
	ms_evdb_close(ev);
	if (rc)
		fail_msg("%s", eb.msg);
	assert_true(has_end);
	assert_string_equal(end.status, "aborted");
	assert_non_null(strstr(end.error, "killed by a signal"));
	assert_string_equal(run.variant, "alwayskeep");
	assert_int_equal(cli("report", "--db", db, NULL), 1);
	assert_non_null(strstr(out_text, "status       aborted"));
	/* Its engine never ran: said, not "0 fast + 0 slow". */
	assert_non_null(strstr(out_text, "workers none: the run ended before "
	                                 "it started\n"));

	snprintf(db, sizeof(db), "%s/killed-made.sqlite", tmp_root);
	snprintf(work, sizeof(work), "%s/killed-made.shard", tmp_root);
	snprintf(errp, sizeof(errp), "%s/killed-made.err", tmp_root);
	run_killed_at("db", db, work, errp);
	msg = ms_test_read(errp, CAP, NULL);
	assert_non_null(msg);
	fprintf(stderr, "%s", msg);
	snprintf(want, sizeof(want),
	         "while it created its event database %s, before it held "
	         "anything: removed it and the scratch shard",
	         db);
	assert_non_null(strstr(msg, want));
	free(msg);
	assert_false(exists(db));
	snprintf(want, sizeof(want), "%s-journal", db);
	assert_false(exists(want));
	assert_false(exists(work));

	/* Killed the moment its scratch shard exists, before the database:
	 * the watcher removes the shard and says so (it did without a
	 * word). */
	snprintf(db, sizeof(db), "%s/killed-scratch.sqlite", tmp_root);
	snprintf(work, sizeof(work), "%s/killed-scratch.shard", tmp_root);
	snprintf(errp, sizeof(errp), "%s/killed-scratch.err", tmp_root);
	run_killed_at("scratch", db, work, errp);
	msg = ms_test_read(errp, CAP, NULL);
	assert_non_null(msg);
	fprintf(stderr, "%s", msg);
	snprintf(want, sizeof(want),
	         "mergescope: run aborted: killed by a signal before it could "
	         "record its end (SIGKILL, or another it was not catching), "
	         "before it created its event database: removed its scratch "
	         "shard %s\n",
	         work);
	assert_non_null(strstr(msg, want));
	free(msg);
	assert_false(exists(work));
	assert_false(exists(db));
}

/* The run's report cannot be read (its database's path became a
 * directory while the run, stopped at stop point "opened", held the file
 * open): one line names the database once and says why; it read "report
 * of DB: event database DB: is a directory; ...". */
static void
test_report_failure_line(void **state)
{
	(void)state;
	char db[600], moved[700], errp[600], want[1400];
	snprintf(db, sizeof(db), "%s/report-fails.db", tmp_root);
	snprintf(moved, sizeof(moved), "%s.moved", db);
	snprintf(errp, sizeof(errp), "%s/report-fails.err", tmp_root);
	setenv("MERGESCOPE_TEST_STOP", "opened", 1);
	const char *args[] = { "run",       "--headless", "--fixture",
		               fixture_dir, "--variant",  "alwayskeep",
		               "--db",      db,           NULL };
	pid_t pid = bt_spawn(args, false, NULL, errp, NULL, 0);
	unsetenv("MERGESCOPE_TEST_STOP");
	int st = 0;
	assert_int_equal(waitpid(pid, &st, WUNTRACED), pid);
	assert_true(WIFSTOPPED(st));
	assert_int_equal(rename(db, moved), 0);
	assert_int_equal(mkdir(db, 0755), 0);
	assert_int_equal(kill(pid, SIGCONT), 0);
	int rc = bt_outputs(bt_wait(pid, 120), "/dev/null", out_text, CAP,
	                    errp, err_text, CAP);
	assert_int_equal(rc, 2);
	snprintf(want, sizeof(want),
	         "\nmergescope run: report of %s: is a directory; expected a "
	         "database written by `mergescope run`\n",
	         db);
	assert_non_null(strstr(err_text, want));
	assert_int_equal(rmdir(db), 0);
	ms_evdb_remove(moved);
}
#endif

/* A --db whose path is longer than SQLite opens (504 bytes, 512 with
 * "-journal") is refused up front as a usage error naming the path, its
 * length and the limit: it was "cannot create: unable to open database
 * file; expected a writable file in an existing directory" (exit 2), of
 * a directory that exists and can be written. One byte less is taken. */
static void
test_db_path_limit(void **state)
{
	(void)state;
	char dir[600], db[700], want[1400];
	size_t at = (size_t)snprintf(dir, sizeof(dir), "%s", tmp_root);
	/* dir/r.db of 505 bytes: components of at most 200. */
	while (at + strlen("/r.db") < 505) {
		size_t k = 505 - strlen("/r.db") - at;
		k = k > 201 ? 201 : k;
		dir[at++] = '/';
		memset(dir + at, 'p', k - 1);
		at += k - 1;
		dir[at] = '\0';
		assert_int_equal(mkdir(dir, 0755), 0);
	}
	snprintf(db, sizeof(db), "%s/r.db", dir);
	assert_int_equal(strlen(db), 505);
	assert_int_equal(cli("run", "--headless", "--fixture", fixture_dir,
	                     "--variant", "alwayskeep", "--db", db, NULL),
	                 64);
	assert_one_line();
	snprintf(want, sizeof(want),
	         "mergescope run: --db %s: its path is 505 bytes; SQLite "
	         "opens an event database of at most 504 (with -journal "
	         "added, its limit)\n",
	         db);
	assert_string_equal(err_text, want);
	assert_false(exists(db));
	/* The recorder says the same of a path no option named. */
	ms_rec *rec = NULL;
	ms_errbuf eb = { "" };
	ms_rec_opts ro = { .path = db };
	assert_int_equal(ms_rec_open(&rec, &ro, &eb), MS_ERR_RANGE);
	assert_non_null(strstr(eb.msg, ": its path is 505 bytes; SQLite opens "
	                               "one of at most 504"));
	/* One byte less: the run takes it. */
	snprintf(db, sizeof(db), "%s/r.d", dir);
	int rc = cli("run", "--headless", "--fixture", fixture_dir, "--variant",
	             "alwayskeep", "--db", db, NULL);
	if (rc)
		fprintf(stderr, "%s", err_text);
	assert_int_equal(rc, 0);
	assert_true(exists(db));
}

/* A --db whose file name leaves no room for the names SQLite derives from
 * it (NAME-journal: 8 bytes more, within NAME_MAX) is refused up front
 * as a usage error naming the path, its length, the limit and why
 * (before: exit 2, "unable to open database file" from inside SQLite);
 * the longest name taken works, -journal and all. The TUI's restarts
 * derive "<stem>.rerun-N<ext>": cut short to fit the same limit. */
static void
test_db_name_limit(void **state)
{
	(void)state;
	char name[MS_EV_DB_NAME_MAX + 2], db[900], want[1200];
	memset(name, 'n', sizeof(name) - 1);
	name[sizeof(name) - 1] = '\0';
	memcpy(name + sizeof(name) - 8, ".sqlite", 7);
	snprintf(db, sizeof(db), "%s/%s", tmp_root, name);
	assert_int_equal(cli("run", "--headless", "--fixture", fixture_dir,
	                     "--variant", "alwayskeep", "--db", db, NULL),
	                 64);
	assert_one_line();
	snprintf(want, sizeof(want),
	         "mergescope run: --db %s: its file name is %d bytes; at "
	         "most %d, as SQLite keeps files named after it with "
	         "-journal, -wal and -shm added beside it",
	         db, MS_EV_DB_NAME_MAX + 1, MS_EV_DB_NAME_MAX);
	assert_non_null(strstr(err_text, want));
	assert_false(exists(db));

	/* One byte less: the run takes it. */
	memmove(name + sizeof(name) - 9, name + sizeof(name) - 8, 8);
	snprintf(db, sizeof(db), "%s/%s", tmp_root, name);
	assert_int_equal(strlen(name), MS_EV_DB_NAME_MAX);
	int rc = cli("run", "--headless", "--fixture", fixture_dir, "--variant",
	             "alwayskeep", "--db", db, NULL);
	if (rc)
		fprintf(stderr, "%s", err_text);
	assert_int_equal(rc, 0);
	assert_true(exists(db));

	char out[1200];
	ms__rerun_name(out, sizeof(out), db, 12, true, MS_EV_DB_NAME_MAX);
	const char *last = strrchr(out, '/') + 1;
	assert_int_equal(strlen(last), MS_EV_DB_NAME_MAX);
	assert_int_equal(strncmp(out, db, strlen(tmp_root) + 10), 0);
	assert_string_equal(last + strlen(last) - 16, ".rerun-12.sqlite");
	/* An extension too long to keep is dropped, the name cut. */
	char longext[600];
	snprintf(longext, sizeof(longext), "/d/x.%0*d", 250, 7);
	ms__rerun_name(out, sizeof(out), longext, 3, true, MS_EV_DB_NAME_MAX);
	assert_int_equal(strlen(out + 3), MS_EV_DB_NAME_MAX);
	assert_string_equal(out + strlen(out) - 8, ".rerun-3");
	/* Short names as before. */
	ms__rerun_name(out, sizeof(out), "/d/run.sqlite", 3, true,
	               MS_EV_DB_NAME_MAX);
	assert_string_equal(out, "/d/run.rerun-3.sqlite");
	ms__rerun_name(out, sizeof(out), "/a.b/.hidden", 3, true,
	               MS_EV_DB_NAME_MAX);
	assert_string_equal(out, "/a.b/.hidden.rerun-3");
	ms__rerun_name(out, sizeof(out), "/a.b/work", 3, false, NAME_MAX);
	assert_string_equal(out, "/a.b/work.rerun-3");
}

/* A TUI restart's database beside a --db whose path is at SQLite's
 * limit: its name is cut so that its path fits too. It passed the limit
 * by the ".rerun-N" it adds, and the restart was refused. */
static void
test_rerun_db_path_limit(void **state)
{
	(void)state;
	char db[600], out[600];
	size_t len = 0, most = 0;
	ms_evdb_path_fits("/", &len, &most);
	assert_true(most > 64 && most < 540);
	/* "/" a.. "/" b.. "/" then a name of 51: the path exactly most. */
	size_t dirs = most - 51 - 3;
	snprintf(db, sizeof(db), "/%0*d/%0*d/%048d.db", (int)(dirs / 2), 1,
	         (int)(dirs - dirs / 2), 2, 3);
	assert_int_equal(strlen(db), most);
	assert_true(ms_evdb_path_fits(db, NULL, NULL));
	ms__rerun_db_name(out, sizeof(out), db, 12);
	assert_true(ms_evdb_path_fits(out, NULL, NULL));
	assert_int_equal(strlen(out), most);
	assert_string_equal(out + strlen(out) - 12, ".rerun-12.db");
	assert_int_equal(strncmp(out, db, most - 51 + 38), 0);
	/* A path well inside the limit keeps ms__rerun_name's name. */
	ms__rerun_db_name(out, sizeof(out), "/d/run.sqlite", 3);
	assert_string_equal(out, "/d/run.rerun-3.sqlite");
}

/* A replay opened and closed before it started (`tui --break` with a
 * breakpoint it does not take, a failure after the open) ran nothing:
 * it leaves no database, not one whose run reads as killed. */
static void
test_closed_before_start(void **state)
{
	(void)state;
	char db[600];
	snprintf(db, sizeof(db), "%s/unstarted.sqlite", tmp_root);
	ms_replay_opts ro = { .fixture_dir = fixture_dir,
		              .db_path = db,
		              .variant = "alwayskeep",
		              .plugin_dir = MS_PLUGIN_DIR };
	ms_replay *r = NULL;
	ms_errbuf eb = { "" };
	int rc = ms_replay_open(&r, &ro, &eb);
	if (rc)
		fail_msg("%s", eb.msg);
	assert_true(exists(db));
	ms_replay_close(r);
	assert_false(exists(db));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_run_headless_passes),
		cmocka_unit_test(test_tui_without_signal_thread),
		cmocka_unit_test(test_run_freeze_at),
		cmocka_unit_test(test_run_relative_fixture),
		cmocka_unit_test(test_run_db_full_last_line),
		cmocka_unit_test(test_run_block_ledgers_missing),
		cmocka_unit_test(test_run_db_checkpoint_full),
		cmocka_unit_test(test_report),
		cmocka_unit_test(test_export),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_default_fixture_cache),
		cmocka_unit_test(test_merge_once),
		cmocka_unit_test(test_output_files_need_force),
		cmocka_unit_test(test_long_chain_spec),
		cmocka_unit_test(test_profile_many_cpus),
		cmocka_unit_test_teardown(test_decimal_comma_locale, c_locale),
		cmocka_unit_test(test_concurrent_builds_and_runs),
		cmocka_unit_test(test_locked_database),
		cmocka_unit_test(test_small_refusals),
		cmocka_unit_test(test_fixture_check_errors),
		cmocka_unit_test(test_merge_once_read_only),
		cmocka_unit_test(test_outputs_never_over_the_database),
		cmocka_unit_test(test_report_vs_failed_gate),
		cmocka_unit_test(test_report_vs_other_opening),
		cmocka_unit_test(test_read_only_database_dir),
		cmocka_unit_test(test_database_unreadable),
		cmocka_unit_test(test_tui_without_keyboard),
		cmocka_unit_test(test_tui_headless_takes_run_options),
		cmocka_unit_test(test_work_dir_not_writable),
		cmocka_unit_test(test_fixture_unreadable),
		cmocka_unit_test(test_work_dir_small_fs),
		cmocka_unit_test(test_output_write_failure),
		cmocka_unit_test(test_export_closed_pipe),
#ifdef MS_MERGESCOPE_BIN
		cmocka_unit_test(test_killed_before_start),
		cmocka_unit_test(test_report_failure_line),
#endif
		cmocka_unit_test(test_closed_before_start),
		cmocka_unit_test(test_db_path_limit),
		cmocka_unit_test(test_db_name_limit),
		cmocka_unit_test(test_rerun_db_path_limit),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
