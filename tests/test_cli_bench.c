/*
 * test_cli_bench.c - `mergescope bench` on the real binary in child
 * processes, on the smoke preset built once into the test's cache:
 *
 *  - the summary statistics of known values (median, nearest-rank p95,
 *    min, max, sample CV);
 *  - a 2-repetition series of disabled and skywalking: one database per
 *    run in the series directory, the order reversed on the second
 *    repetition, the table on standard output and in summary.txt with a
 *    row per metric and variant in both phases, summary.json holding the
 *    medians of the databases' phase records and the deltas against the
 *    first variant;
 *  - `--collect` on a copy where one run has another profile: that run is
 *    named with the reason and left out of the figures;
 *  - `--emit parallel` lists the runs in the same alternating order and
 *    runs nothing; the list runs under GNU parallel when it is installed
 *    and `--collect` summarises what it wrote; `--emit slurm` is a job
 *    array script whose array range matches its job list;
 *  - usage errors exit 64 naming the option;
 *  - a series stopped by SIGTERM leaves no process of it running; a run
 *    killed outright is recorded as aborted by its watcher before the
 *    series reads it, and its database is left alone in one file;
 *  - `run --profile` in a real cgroup where the hierarchy is writable
 *    (root here), recorded with the group's peak, or emulated with why;
 *  - `--jobs 2` runs two at a time and makes the same series;
 *  - `report --collect` of two series directories: one table with the
 *    variants matched by name, box plots holding its figures, and a
 *    directory of other conditions refused.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "alloc_testlib.h"
#include "bin_testlib.h"
#include "ev_fixture.h"
#include "series.h"
#include "evdb_testlib.h"
#include "json_testlib.h"
#include "xml_testlib.h"
#include "ms_bench.h"
#include "ms_replay_events.h"
#include "testdir.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define HUNG_S 240 /* a child still running after this is hung */
#define OUT_MAX (256 * 1024)

static char root[PATH_MAX];   /* this test's directory */
static char series[PATH_MAX]; /* the series of test_series */
static char out[OUT_MAX], err[OUT_MAX];

static void
path_in(char *buf, size_t n, const char *name)
{
	snprintf(buf, n, "%s/%s", root, name);
}

/* Run `mergescope args...` (or `sh -c args[0]` when shell); stdout and
 * stderr into out and err. Returns the exit status. */
static int
run(const char *const *args, bool shell)
{
	char op[PATH_MAX], ep[PATH_MAX];
	path_in(op, sizeof(op), "cli.out");
	path_in(ep, sizeof(ep), "cli.err");
	int st = bt_wait(bt_spawn(args, shell, op, ep, NULL, 0), HUNG_S);
	return bt_outputs(st, op, out, OUT_MAX, ep, err, OUT_MAX);
}

static char *
slurp(const char *path)
{
	char *buf = ms_test_read(path, OUT_MAX, NULL);
	if (!buf)
		fail_msg("%s: cannot open", path);
	return buf;
}

static bool
exists(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0;
}

static int
setup(void **state)
{
	(void)state;
	if (!ms_test_mkdtemp(root, sizeof(root), "ms-test-cli-bench"))
		return -1;
	char cache[PATH_MAX];
	path_in(cache, sizeof(cache), "cache");
	path_in(series, sizeof(series), "series");
	setenv("XDG_CACHE_HOME", cache, 1);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	return getenv("MS_KEEP_TEST_DIR") ? 0 : ms_test_rmtree(root);
}

/* ---- statistics --------------------------------------------------------- */

static void
test_stats(void **state)
{
	(void)state;
	double v[] = { 4, 100, 1, 3, 2 };
	ms_bench_stat st;
	ms_bench_stat_of(v, 5, &st);
	assert_int_equal(st.n, 5);
	assert_true(st.median == 3 && st.min == 1 && st.max == 100);
	assert_true(st.p95 == 100); /* rank ceil(0.95 * 5) = 5 */
	/* mean 22, sample variance (441+400+361+324+6084)/4 = 1902.5 */
	assert_true(fabs(st.cv - sqrt(1902.5) / 22) < 1e-12);
	double w[] = { 2, 4 };
	ms_bench_stat_of(w, 2, &st);
	assert_true(st.median == 3 && st.p95 == 4);
	double one = 7;
	ms_bench_stat_of(&one, 1, &st);
	assert_true(st.median == 7 && st.p95 == 7 && st.cv == 0);
	ms_bench_stat_of(NULL, 0, &st);
	assert_true(st.n == 0 && st.median == 0);
	double twenty[20];
	for (int i = 0; i < 20; i++)
		twenty[i] = 20 - i; /* 20..1 */
	ms_bench_stat_of(twenty, 20, &st);
	assert_true(st.p95 == 19); /* rank 19 of 1..20 */
	assert_true(st.median == 10.5);
}

/* ---- a series ----------------------------------------------------------- */

static void
db_of(char *buf, size_t n, const char *dir, unsigned rep, unsigned vi,
      const char *v)
{
	snprintf(buf, n, "%s/rep%03u-v%u-%s.db", dir, rep, vi, v);
}

static ms_ev_run
run_of(const char *db)
{
	ms_evdb *ev = NULL;
	ms_errbuf eb = { { 0 } };
	ms_ev_run r;
	if (ms_evdb_open(&ev, db, &eb))
		fail_msg("%s", eb.msg);
	assert_int_equal(ms_evdb_run(ev, &r, NULL, NULL, &eb), 0);
	ms_evdb_close(ev);
	return r;
}

static int
take_phase(void *ctx, const ms_ev_phase *p)
{
	ms_ev_phase *ph = ctx;
	if ((unsigned)p->phase < MS_EV_PHASE_COUNT) /* not the staging row */
		ph[p->phase] = *p;
	return 0;
}

static void
phases_of(const char *db, ms_ev_phase ph[MS_EV_PHASE_COUNT])
{
	ms_evdb *ev = NULL;
	ms_errbuf eb = { { 0 } };
	if (ms_evdb_open(&ev, db, &eb))
		fail_msg("%s", eb.msg);
	assert_int_equal(ms_evdb_each_phase(ev, take_phase, ph, &eb), 0);
	ms_evdb_close(ev);
}

static const char *const vnames[2] = { "disabled", "skywalking" };
static const char *const keys[] = { "wall_s",      "cpu_s",        "alloc_mib",
	                            "allocs",      "rss_peak_mib", "read_mib",
	                            "written_mib", "write_amp" };

/* The JSON's variant vi, checked against its name. */
static const jv *
variant_json(const jv *j, unsigned vi)
{
	const jv *vs = jget(j, "variants");
	assert_non_null(vs);
	assert_int_equal(vs->t, J_ARR);
	assert_int_equal(vs->n, 2);
	const jv *v = &vs->items[vi];
	assert_string_equal(jget(v, "name")->raw, vnames[vi]);
	return v;
}

static void
test_series(void **state)
{
	(void)state;
	const char *args[] = { "bench",  "--variants", "disabled,skywalking",
		               "--reps", "2",          "--preset",
		               "smoke",  "--out",      series,
		               NULL };
	assert_int_equal(run(args, false), 0);
	char *stdout_text = strdup(out);
	assert_non_null(stdout_text);

	/* One database per run; the second repetition reversed. */
	char db[2][2][PATH_MAX];
	ms_ev_phase ph[2][2][MS_EV_PHASE_COUNT];
	ms_ev_run r[2][2];
	for (unsigned rep = 0; rep < 2; rep++)
		for (unsigned vi = 0; vi < 2; vi++) {
			db_of(db[rep][vi], PATH_MAX, series, rep, vi,
			      vnames[vi]);
			assert_true(exists(db[rep][vi]));
			r[rep][vi] = run_of(db[rep][vi]);
			assert_string_equal(r[rep][vi].variant, vnames[vi]);
			memset(ph[rep][vi], 0, sizeof(ph[rep][vi]));
			phases_of(db[rep][vi], ph[rep][vi]);
		}
	assert_true(r[0][0].started_unix_ns < r[0][1].started_unix_ns);
	assert_true(r[1][1].started_unix_ns < r[1][0].started_unix_ns);
	assert_true(r[0][1].started_unix_ns < r[1][1].started_unix_ns);

	/* The table: a row per metric and variant in both phases, the same
	 * text in summary.txt. */
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/summary.txt", series);
	char *txt = slurp(p);
	assert_non_null(strstr(stdout_text, txt));
	assert_non_null(strstr(txt, "bench series: 4 runs, 4 valid, 2 "
	                            "variants"));
	const char *rows[] = { "wall s",      "cpu s",        "allocated MiB",
		               "allocations", "peak RSS MiB", "read MiB",
		               "written MiB", "write amp x" };
	const char *cool = strstr(txt, "\ncooldown ");
	assert_non_null(strstr(txt, "\nprimary "));
	assert_non_null(cool);
	for (size_t k = 0; k < sizeof(rows) / sizeof(rows[0]); k++) {
		const char *a = strstr(txt, rows[k]);
		assert_non_null(a);
		assert_true(a < cool);
		assert_non_null(strstr(cool, rows[k]));
		/* the variant of the row, then the second variant's line */
		const char *nl = strchr(a, '\n');
		assert_non_null(nl);
		assert_non_null(strstr(a, "disabled"));
		assert_true(strstr(a, "disabled") < nl);
		assert_true(strncmp(strstr(nl + 1, "skywalking") - 19, "  ",
		                    2) == 0);
	}
	/* These runs had no cgroup: its peak is no figure ("-"), not a
	 * peak of 0. */
	for (const char *c = strstr(txt, "cgroup peak MiB"); c;
	     c = strstr(c + 1, "cgroup peak MiB")) {
		char row[256];
		snprintf(row, sizeof(row), "%.*s", (int)strcspn(c, "\n"), c);
		assert_non_null(strstr(row, "disabled"));
		assert_non_null(strstr(row, "   0 "));
		assert_non_null(strstr(row, " -"));
		assert_null(strstr(row, "0.0"));
		const char *next = c + strlen(row) + 1;
		snprintf(row, sizeof(row), "%.*s", (int)strcspn(next, "\n"),
		         next);
		assert_non_null(strstr(row, "skywalking"));
		assert_null(strstr(row, "0.0"));
	}
	assert_non_null(strstr(txt, "cgroup peak MiB"));
	/* disabled ran no finalize (as the reference, without a sampler):
	 * the cooldown deltas against it are said to count it. */
	assert_non_null(strstr(txt, "note: disabled: all of its runs ran no "
	                            "finalize"));
	assert_null(strstr(txt, "note: skywalking"));
	free(txt);

	/* The JSON: medians of the phase records, deltas against
	 * disabled. */
	snprintf(p, sizeof(p), "%s/summary.json", series);
	char *js = slurp(p);
	jv j;
	json_parse(js, &j);
	assert_string_equal(jget(&j, "base")->raw, "disabled");
	const jv *runs = jget(&j, "runs");
	assert_int_equal(runs->n, 4);
	for (size_t i = 0; i < 4; i++)
		assert_int_equal(jget(&runs->items[i], "valid")->t, J_BOOL),
		        assert_true(jget(&runs->items[i], "valid")->b);
	assert_false(jget(variant_json(&j, 0), "finalized")->b);
	assert_true(jget(variant_json(&j, 1), "finalized")->b);
	for (unsigned vi = 0; vi < 2; vi++) {
		const jv *phs = jget(variant_json(&j, vi), "phases");
		for (unsigned pi = 0; pi < MS_EV_PHASE_COUNT; pi++) {
			const jv *pj = jget(phs, ms_ev_phase_name(pi));
			assert_non_null(pj);
			for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]);
			     k++) {
				const jv *m = jget(pj, keys[k]);
				assert_non_null(m);
				assert_true(jget(m, "n")->num == 2);
				const jv *d = jget(m, "delta_pct");
				/* none from a base median of 0 to another
				 * (the cooldown's reads: disabled has no
				 * finalize) */
				const jv *bm = jget(
				        jget(jget(jget(variant_json(&j, 0),
				                       "phases"),
				                  ms_ev_phase_name(pi)),
				             keys[k]),
				        "median");
				double med = jget(m, "median")->num;
				assert_int_equal(d->t, bm->num == 0 && med != 0
				                               ? J_NULL
				                               : J_NUM);
				if (vi == 0)
					assert_true(d->num == 0);
			}
			/* The cgroup's peak is the whole run's: no phase
			 * has it (it repeated the run's figure under each). */
			assert_null(jget(pj, "cgroup_peak_mib"));
			/* It is the run's, once; no cgroup: no figure,
			 * null rather than 0. */
			const jv *cg = jget(jget(variant_json(&j, vi), "run"),
			                    "cgroup_peak_mib");
			assert_non_null(cg);
			assert_true(jget(cg, "n")->num == 0);
			assert_int_equal(jget(cg, "median")->t, J_NULL);
			assert_int_equal(jget(cg, "max")->t, J_NULL);
			double w0 = (double)ph[0][vi][pi].wall_ns / 1e9;
			double w1 = (double)ph[1][vi][pi].wall_ns / 1e9;
			const jv *wall = jget(pj, "wall_s");
			double med = jget(wall, "median")->num;
			assert_true(fabs(med - (w0 + w1) / 2) <=
			            1e-5 * (w0 + w1));
			assert_true(jget(wall, "min")->num <= med);
			assert_true(jget(wall, "max")->num >= med);
			double a0 = (double)ph[0][vi][pi].alloc_count;
			double a1 = (double)ph[1][vi][pi].alloc_count;
			assert_true(
			        fabs(jget(jget(pj, "allocs"), "median")->num -
			             (a0 + a1) / 2) <= 1e-5 * (a0 + a1));
		}
	}
	/* the second variant's delta is its median against disabled's */
	const jv *b = jget(jget(jget(variant_json(&j, 0), "phases"), "primary"),
	                   "allocs");
	const jv *s = jget(jget(jget(variant_json(&j, 1), "phases"), "primary"),
	                   "allocs");
	double bm = jget(b, "median")->num, sm = jget(s, "median")->num;
	assert_true(fabs(jget(s, "delta_pct")->num - 100 * (sm - bm) / bm) <
	            1e-3);
	jfree(&j);
	free(js);
	free(stdout_text);
}

/* ---- what a run records about itself ---------------------------------- */

static int
check_merge(void *ctx, const ms_ev_merge *m)
{
	const ms_ev_run *r = ctx;
	/* dispatch, then the wait, then the start on a worker */
	assert_true(m->wall_dispatch_ns > 0);
	assert_true(m->queue_ns >= 0);
	assert_true(m->wall_dispatch_ns + m->queue_ns == m->wall_start_ns);
	if (strcmp(m->lane, "fast") == 0)
		assert_true(m->worker < r->fast_workers);
	else
		assert_int_equal(m->worker, 0);
	return 0;
}

static bool
is_hex(const char *s, size_t n)
{
	if (strlen(s) != n)
		return false;
	for (; *s; s++)
		if (!strchr("0123456789abcdef", *s))
			return false;
	return true;
}

/* Whether /proc/self/mountinfo lists a mount at "/": in a chroot it
 * does not (the root's mount point lies outside it), and a directory on
 * the root's file system then has no device a run can name. */
static bool
root_mount_listed(void)
{
	FILE *f = fopen("/proc/self/mountinfo", "r");
	char line[4096], mnt[PATH_MAX];
	bool found = false;
	while (f && !found && fgets(line, sizeof(line), f))
		found = sscanf(line, "%*u %*u %*s %*s %4095s", mnt) == 1 &&
		        strcmp(mnt, "/") == 0;
	if (f)
		fclose(f);
	return found;
}

static void
test_run_record(void **state)
{
	(void)state;
	char db[PATH_MAX], work[PATH_MAX];
	path_in(db, sizeof(db), "cold.db");
	path_in(work, sizeof(work), "cold.shard");
	const char *args[] = { "run",       "--headless", "--preset",   "smoke",
		               "--variant", "detdrop:35", "--cache",    "cold",
		               "--db",      db,           "--work-dir", work,
		               NULL };
	assert_int_equal(run(args, false), 0);
	ms_evdb *ev = NULL;
	ms_errbuf eb = { { 0 } };
	ms_ev_run r;
	if (ms_evdb_open(&ev, db, &eb))
		fail_msg("%s", eb.msg);
	assert_int_equal(ms_evdb_run(ev, &r, NULL, NULL, &eb), 0);
	assert_string_equal(r.cache_label, "cold");
	assert_true(is_hex(r.binary_checksum, 32));
	assert_true(r.git_commit[0] != '\0');
	assert_true(strncmp(r.compiler, "gcc ", 4) == 0 ||
	            strncmp(r.compiler, "clang ", 6) == 0);
	/* the work dir's file system, as statfs names it (the test dir is
	 * on tmpfs when /dev/shm is writable) */
	assert_true(r.filesystem[0] != '\0');
	if (strncmp(root, "/dev/shm/", 9) == 0)
		assert_string_equal(r.filesystem, "tmpfs");
	/* and the device under it, with its numbers (none in a chroot
	 * when the test dir is on the root's file system) */
	if (strncmp(root, "/dev/shm/", 9) == 0 || root_mount_listed()) {
		assert_non_null(strstr(r.device, " ("));
		assert_non_null(strchr(r.device, ':'));
	}
	if (strncmp(root, "/dev/shm/", 9) == 0)
		assert_true(strncmp(r.device, "tmpfs (", 7) == 0 ||
		            strncmp(r.device, "shm (", 5) == 0);
	assert_int_equal(r.nplugins, 1);
	assert_string_equal(r.plugins[0].name, "detdrop");
	assert_string_equal(r.plugins[0].config, "{\"percent\":35}");
	assert_int_equal(ms_evdb_each_merge(ev, NULL, check_merge, &r, &eb), 0);
	ms_evdb_close(ev);

	/* the series' runs say where they ran alike, and skywalking's
	 * config is the default one */
	char sdb[PATH_MAX];
	db_of(sdb, sizeof(sdb), series, 0, 1, "skywalking");
	ms_ev_run s = run_of(sdb);
	assert_string_equal(s.cache_label, "uncontrolled");
	assert_string_equal(s.binary_checksum, r.binary_checksum);
	assert_string_equal(s.cpu_model, r.cpu_model);
	assert_string_equal(s.plugins[0].config,
	                    "{\"durationThresholdMs\":500,\"keepErrors\":true,"
	                    "\"healthySampleRate\":0.1}");
}

/* ---- a run that breaks a condition is named, not averaged ------------- */

/* DIR's summary.json parsed into j; the text it points into (the caller
 * frees it after jfree). */
static char *
summary_json(const char *dir, jv *j)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/summary.json", dir);
	char *js = slurp(p);
	json_parse(js, j);
	return js;
}

/* Variant vi's primary-phase wall figures in a summary. */
static const jv *
primary_wall(const jv *j, unsigned vi)
{
	return jget(jget(jget(variant_json(j, vi), "phases"), "primary"),
	            "wall_s");
}

/* A copy of test_series' series directory without its summaries, at
 * NAME under the test's root (its path in copy). */
static void
copy_series(const char *name, char copy[PATH_MAX])
{
	char cmd[3 * PATH_MAX];
	path_in(copy, PATH_MAX, name);
	snprintf(cmd, sizeof(cmd), "cp -r '%s' '%s' && rm '%s'/summary.*",
	         series, copy, copy);
	assert_int_equal(system(cmd), 0);
}

/* `bench --collect dir`: exit 0 and the counts line (e.g. "4 runs, 3
 * valid"); the list of the runs left out, in out. */
static const char *
collect_left_out(const char *dir, const char *counts)
{
	const char *args[] = { "bench", "--collect", dir, NULL };
	assert_int_equal(run(args, false), 0);
	assert_non_null(strstr(out, counts));
	const char *left = strstr(out, "left out of every figure:");
	assert_non_null(left);
	return left;
}

static void
test_collect_names_invalid(void **state)
{
	(void)state;
	char copy[PATH_MAX];
	copy_series("series-copy", copy);
	char db[PATH_MAX];
	db_of(db, sizeof(db), copy, 1, 1, "skywalking");
	et_sql(db, "UPDATE run SET profile = 'cpus=1'");

	const char *left = collect_left_out(copy, "4 runs, 3 valid");
	assert_non_null(strstr(left, "rep001-v1-skywalking.db: profile "
	                             "\"cpus=1\" differs"));
	jv j;
	char *js = summary_json(copy, &j);
	const jv *wall = primary_wall(&j, 1);
	assert_true(jget(wall, "n")->num == 1);
	const jv *runs = jget(&j, "runs");
	unsigned invalid = 0;
	for (size_t i = 0; i < runs->n; i++)
		if (!jget(&runs->items[i], "valid")->b) {
			invalid++;
			assert_non_null(strstr(
			        jget(&runs->items[i], "why")->raw, "profile"));
		}
	assert_int_equal(invalid, 1);
	jfree(&j);
	free(js);
}

/* The series' conditions are those most of its runs share: an odd
 * first run is the one left out, not every run after it. */
static void
test_collect_odd_first_run(void **state)
{
	(void)state;
	char copy[PATH_MAX];
	copy_series("series-odd-first", copy);
	char db[PATH_MAX];
	db_of(db, sizeof(db), copy, 0, 0, "disabled");
	et_sql(db, "UPDATE run SET profile = 'cpus=1'");

	const char *left = collect_left_out(copy, "4 runs, 3 valid");
	assert_non_null(strstr(left, "rep000-v0-disabled.db: profile "
	                             "\"cpus=1\" differs"));
	assert_null(strstr(left, "skywalking.db: "));
	assert_null(strstr(left, "rep001-v0-disabled.db: "));
}

/* A run that ended before making its database (a bad envelope, a kill
 * at start) is a run of the series all the same: counted and named with
 * the last line of its output, not silently missing from "N runs". A run
 * whose database has no run record is counted under its variant (its
 * file index), not as a variant of its own. */
static void
test_collect_names_run_without_database(void **state)
{
	(void)state;
	char copy[PATH_MAX];
	copy_series("series-no-db", copy);
	char db[PATH_MAX], log[PATH_MAX + 8];
	db_of(db, sizeof(db), copy, 1, 1, "skywalking");
	assert_int_equal(unlink(db), 0);
	snprintf(log, sizeof(log), "%.*s.log", (int)strlen(db) - 3, db);
	FILE *f = fopen(log, "w");
	assert_non_null(f);
	fputs("mergescope run: no cgroup to hold the limits: "
	      "/sys/fs/cgroup/cpu: Read-only file system\n\n",
	      f);
	fclose(f);
	db_of(db, sizeof(db), copy, 0, 0, "disabled");
	et_sql(db, "DELETE FROM run");

	const char *left =
	        collect_left_out(copy, "4 runs, 2 valid, 2 variants");
	assert_non_null(strstr(left, "rep001-v1-skywalking.db: no event "
	                             "database: the run ended before making "
	                             "it"));
	assert_non_null(strstr(left, "Read-only file system"));
	assert_non_null(strstr(left, "rep000-v0-disabled.db: "));
	assert_null(strstr(err, "variant ?"));
}

/* A variant all of whose runs are left out has no figures: "-" in the
 * table, null in the JSON (not zeros that read as measurements), and
 * bench --collect and report --collect exit 1 naming it. */
static void
test_collect_variant_without_valid_run(void **state)
{
	(void)state;
	char copy[PATH_MAX];
	copy_series("series-empty-variant", copy);
	for (unsigned rep = 0; rep < 2; rep++) {
		char db[PATH_MAX];
		db_of(db, sizeof(db), copy, rep, 1, "skywalking");
		et_sql(db, "UPDATE run SET profile = 'cpus=1'");
	}
	const char *args[] = { "bench", "--collect", copy, NULL };
	assert_int_equal(run(args, false), 1);
	assert_non_null(strstr(err, "variant skywalking has no valid run"));
	assert_non_null(strstr(out, "4 runs, 2 valid"));
	const char *row = strstr(out, "skywalking       0");
	assert_non_null(row);
	assert_true(strncmp(row + strlen("skywalking       0"),
	                    "            -            -", 26) == 0);
	jv j;
	char *js = summary_json(copy, &j);
	const jv *wall = primary_wall(&j, 1);
	assert_true(jget(wall, "n")->num == 0);
	assert_int_equal(jget(wall, "median")->t, J_NULL);
	assert_int_equal(jget(wall, "cv")->t, J_NULL);
	jfree(&j);
	free(js);

	const char *rargs[] = { "report", "--collect", copy, NULL };
	assert_int_equal(run(rargs, false), 1);
	assert_non_null(strstr(err, "variant skywalking has no valid run"));
}

/* ---- an existing scheduler runs the series ------------------------------ */

static void
test_emit_parallel(void **state)
{
	(void)state;
	char dir[PATH_MAX], list[PATH_MAX];
	path_in(dir, sizeof(dir), "par");
	path_in(list, sizeof(list), "jobs.txt");
	const char *args[] = { "bench",  "--variants", "disabled,skywalking",
		               "--reps", "2",          "--preset",
		               "smoke",  "--out",      dir,
		               "--emit", "parallel",   NULL };
	assert_int_equal(run(args, false), 0);
	char *jobs = strdup(out);
	assert_non_null(jobs);
	/* Four lines in alternating order; nothing ran. */
	static const char *const want[4] = { "-v0-disabled.db",
		                             "-v1-skywalking.db",
		                             "-v1-skywalking.db",
		                             "-v0-disabled.db" };
	const char *line = jobs;
	for (int i = 0; i < 4; i++) {
		const char *nl = strchr(line, '\n');
		assert_non_null(nl);
		const char *hit = strstr(line, want[i]);
		assert_true(hit && hit < nl);
		assert_non_null(strstr(line, "'run' '--headless'"));
		line = nl + 1;
	}
	assert_string_equal(line, "");
	char db[PATH_MAX];
	db_of(db, sizeof(db), dir, 0, 0, "disabled");
	assert_false(exists(db));
	assert_non_null(strstr(err, "4 runs listed; nothing was run."));
	assert_non_null(strstr(err, "--collect"));
	/* --jobs with --emit: nothing runs here to take it; refused (it
	 * was dropped without a word). */
	char dir2[PATH_MAX];
	path_in(dir2, sizeof(dir2), "par-jobs");
	const char *jargs[] = { "bench",  "--variants", "disabled", "--reps",
		                "1",      "--preset",   "smoke",    "--out",
		                dir2,     "--jobs",     "2",        "--emit",
		                "parallel", NULL };
	assert_int_equal(run(jargs, false), 64);
	assert_non_null(strstr(err, "mergescope bench: --jobs sets how many "
	                            "runs go at a time on this machine; "
	                            "with --emit nothing runs here"));
	assert_string_equal(out, "");
	assert_false(exists(dir2));

	/* One run is one run. The directory the next command names is a
	 * shell word (it was written bare: a space split it in two). */
	char one[PATH_MAX], quoted[PATH_MAX + 32];
	path_in(one, sizeof(one), "par one");
	const char *args1[] = { "bench", "--variants", "disabled", "--reps",
		                "1",     "--preset",   "smoke",    "--out",
		                one,     "--emit",     "parallel", NULL };
	assert_int_equal(run(args1, false), 0);
	assert_non_null(strstr(err, " 1 run listed; nothing was run."));
	snprintf(quoted, sizeof(quoted), "bench --collect '%s'\n", one);
	assert_non_null(strstr(err, quoted));

	FILE *f = fopen(list, "w");
	assert_non_null(f);
	fputs(jobs, f);
	fclose(f);
	free(jobs);
	if (access("/usr/bin/parallel", X_OK) != 0) {
		fprintf(stderr, "GNU parallel not installed: the job list "
		                "is not run\n");
		return;
	}
	char cmd[2 * PATH_MAX];
	snprintf(cmd, sizeof(cmd), "parallel --will-cite -j2 <'%s'", list);
	const char *sh[] = { cmd, NULL };
	assert_int_equal(run(sh, true), 0);
	const char *col[] = { "bench", "--collect", dir, NULL };
	assert_int_equal(run(col, false), 0);
	assert_non_null(strstr(out, "4 runs, 4 valid, 2 variants"));
}

/* --variant, repeatable: a chain spec is one variant (--variants splits
 * on its commas). The runs carry the spec whole, and the summary names
 * each variant whole: before, its column was 14 wide, so two specs
 * starting "skywalking,det" read the same. */
static void
test_variant_chains(void **state)
{
	(void)state;
	char dir[PATH_MAX];
	path_in(dir, sizeof(dir), "chains");
	const char *chain = "skywalking,detdrop:{\"percent\":35}";
	const char *args[] = { "bench",  "--variant", "skywalking",
		               "--variant", chain,    "--reps",
		               "1",      "--preset",  "smoke",
		               "--out",  dir,         "--emit",
		               "parallel", NULL };
	assert_int_equal(run(args, false), 0);
	char *jobs = strdup(out);
	assert_non_null(jobs);
	char want[256];
	snprintf(want, sizeof(want), "'--variant' '%s'", chain);
	const char *hit = strstr(jobs, want);
	assert_non_null(hit);
	assert_null(strstr(hit + 1, want));
	/* Run the two jobs as a scheduler would, then collect. */
	for (char *line = jobs, *nl; (nl = strchr(line, '\n'));
	     line = nl + 1) {
		*nl = '\0';
		const char *sh[] = { line, NULL };
		assert_int_equal(run(sh, true), 0);
	}
	free(jobs);
	const char *col[] = { "bench", "--collect", dir, NULL };
	assert_int_equal(run(col, false), 0);
	assert_non_null(strstr(out, "2 runs, 2 valid, 2 variants"));
	snprintf(want, sizeof(want), "\n%-18s %s ", "", chain);
	assert_non_null(strstr(out, want));
	snprintf(want, sizeof(want), "\n%-18s %-*s ", "wall s",
	         (int)strlen(chain), "skywalking");
	const char *wall_row = strstr(out, want);
	assert_non_null(wall_row);
	/* One run per variant has no spread: its cv% is n/a, not 0.00,
	 * and null in the JSON. */
	const char *eol = strchr(wall_row + 1, '\n');
	assert_non_null(eol);
	char row[512];
	snprintf(row, sizeof(row), "%.*s", (int)(eol - wall_row), wall_row);
	assert_non_null(strstr(row, "    n/a"));
	jv j;
	char *js = summary_json(dir, &j);
	const jv *v0 = &jget(&j, "variants")->items[0];
	const jv *w0 = jget(jget(jget(v0, "phases"), "primary"), "wall_s");
	assert_true(jget(w0, "n")->num == 1);
	assert_int_equal(jget(w0, "cv")->t, J_NULL);
	jfree(&j);
	free(js);

	/* The list and the option exclude each other; at most 8. */
	const char *both[] = { "bench", "--variants", "disabled",
		               "--variant", "skywalking", NULL };
	assert_int_equal(run(both, false), 64);
	assert_non_null(strstr(err, "exclude each other"));
	const char *nine[20] = { "bench" };
	for (int i = 0; i < 9; i++) {
		nine[1 + 2 * i] = "--variant";
		nine[2 + 2 * i] = "disabled";
	}
	assert_int_equal(run(nine, false), 64);
	assert_non_null(strstr(err, "at most 8 variants"));
}

/* A variant spec longer than the column's 40: the table says V1, V2 and
 * a legend gives each spec. */
static void
test_summary_long_labels(void **state)
{
	(void)state;
	static ms_bench_run runs[2];
	memset(runs, 0, sizeof(runs));
	for (unsigned i = 0; i < 2; i++) {
		runs[i].variant = i;
		runs[i].valid = true;
		for (unsigned p = 0; p < MS_EV_PHASE_COUNT; p++)
			for (unsigned k = 0; k < MS_BM_COUNT; k++)
				runs[i].m[p][k] = 1 + i;
	}
	const char *labels[2] = {
		"skywalking,detdrop:{\"percent\":35},detdrop:{\"percent\":5}",
		"skywalking,detdrop:{\"percent\":35},detdrop:{\"percent\":6}",
	};
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	assert_non_null(f);
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_bench_summary(runs, 2, labels, 2, f, NULL, &eb),
	                 0);
	fclose(f);
	fprintf(stderr, "%s", text);
	char want[256];
	snprintf(want, sizeof(want), "\nvariants: V1 = %s\n", labels[0]);
	assert_non_null(strstr(text, want));
	snprintf(want, sizeof(want), "\n          V2 = %s\n", labels[1]);
	assert_non_null(strstr(text, want));
	assert_non_null(strstr(text, "\nwall s             V1             "));
	assert_non_null(strstr(text, "\n                   V2             "));
	free(text);
}

/* A delta against a first variant whose median is 0 (disabled's cooldown
 * reads nothing, skywalking's finalize reads 43 MiB) has no percentage:
 * "n/a" in the table and null in the JSON, not "+0.00" (no change); from
 * 0 to 0 it stays 0. */
static void
test_delta_from_zero(void **state)
{
	(void)state;
	static ms_bench_run runs[2];
	memset(runs, 0, sizeof(runs));
	for (unsigned i = 0; i < 2; i++) {
		runs[i].variant = i;
		runs[i].valid = true;
		for (unsigned k = 0; k < MS_BM_COUNT; k++)
			runs[i].m[MS_EV_PHASE_PRIMARY][k] = 2 + i;
		runs[i].m[MS_EV_PHASE_COOLDOWN][MS_BM_READ_MIB] = 43.0 * i;
	}
	const char *labels[2] = { "disabled", "skywalking" };
	char *text = NULL, *js = NULL;
	size_t len = 0, jlen = 0;
	FILE *f = open_memstream(&text, &len), *jf = open_memstream(&js, &jlen);
	assert_true(f && jf);
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_bench_summary(runs, 2, labels, 2, f, jf, &eb), 0);
	fclose(f);
	fclose(jf);
	const char *cd = strstr(text, "\ncooldown ");
	assert_non_null(cd);
	const char *rd = strstr(cd, "\nread MiB");
	assert_non_null(rd);
	const char *sky = strstr(rd + 1, "\n") + 1;
	assert_non_null(strstr(sky, "skywalking"));
	const char *eol = strchr(sky, '\n');
	const char *na = strstr(sky, " n/a\n");
	assert_true(na && na < eol); /* not +0.00 */
	/* written: 0 and 0, no change, unsigned as every zero difference
	 * (it was "+0.00") */
	const char *wr = strstr(cd, "\nwritten MiB");
	assert_non_null(wr);
	const char *sky2 = strstr(wr + 1, "\n") + 1;
	assert_true(strncmp(strchr(sky2, '\n') - 6, "  0.00", 6) == 0);
	jv j;
	json_parse(js, &j);
	const jv *vs = jget(&j, "variants");
	const jv *sr = jget(jget(jget(&vs->items[1], "phases"), "cooldown"),
	                    "read_mib");
	assert_int_equal(jget(sr, "delta_pct")->t, J_NULL);
	assert_true(jget(sr, "median")->num == 43.0);
	const jv *sw = jget(jget(jget(&vs->items[1], "phases"), "cooldown"),
	                    "written_mib");
	assert_true(jget(sw, "delta_pct")->t == J_NUM &&
	            jget(sw, "delta_pct")->num == 0);
	const jv *sp = jget(jget(jget(&vs->items[1], "phases"), "primary"),
	                    "wall_s");
	assert_true(fabs(jget(sp, "delta_pct")->num - 50.0) < 1e-9);
	jfree(&j);
	free(js);
	free(text);
}

/* A series whose profile could not be enforced (no writable cgroup
 * hierarchy: every run emulated it) said so nowhere: its table, JSON and
 * HTML page read as those of enforced limits, with "-" for the cgroup's
 * peak. The summary names the conditions and the envelope, and why it
 * was emulated. */
static void
test_summary_conditions(void **state)
{
	(void)state;
	static ms_bench_run runs[2];
	memset(runs, 0, sizeof(runs));
	for (unsigned i = 0; i < 2; i++) {
		ms_ev_run *u = &runs[i].run;
		runs[i].variant = i;
		runs[i].valid = true;
		snprintf(u->fixture_preset, sizeof(u->fixture_preset), "day-2x");
		snprintf(u->profile, sizeof(u->profile), "cpus=1,mem=1g");
		snprintf(u->limits_mode, sizeof(u->limits_mode), "emulated");
		snprintf(u->limits_why, sizeof(u->limits_why),
		         "/sys/fs/cgroup/cpu: No such file or directory");
		snprintf(u->cache_label, sizeof(u->cache_label), "cold");
		for (unsigned p = 0; p < MS_EV_PHASE_COUNT; p++)
			for (unsigned k = 0; k < MS_BM_COUNT; k++)
				runs[i].m[p][k] = 1 + i;
	}
	const char *labels[2] = { "disabled", "skywalking" };
	char *text = NULL, *js = NULL;
	size_t len = 0, jlen = 0;
	FILE *f = open_memstream(&text, &len), *jf = open_memstream(&js, &jlen);
	assert_true(f && jf);
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_bench_summary(runs, 2, labels, 2, f, jf, &eb), 0);
	fclose(f);
	fclose(jf);
	assert_non_null(strstr(text, "\nconditions: fixture day-2x -  profile "
	                             "cpus=1,mem=1g  cache cold  host -  "
	                             "commit -\n"));
	assert_non_null(strstr(text, "\nenvelope: emulated: sized from the "
	                             "profile, not enforced (/sys/fs/cgroup/"
	                             "cpu: No such file or directory)\n"));
	jv j;
	json_parse(js, &j);
	const jv *c = jget(&j, "conditions");
	assert_non_null(c);
	assert_string_equal(jget(c, "limits_mode")->raw, "emulated");
	assert_string_equal(jget(c, "profile")->raw, "cpus=1,mem=1g");
	jfree(&j);
	free(js);
	free(text);
}

struct bench_call {
	ms_bench_run runs[2];
	const char *labels[2];
	FILE *out;
};

static int
call_load(void *ctx, ms_errbuf *eb)
{
	struct bench_call *c = ctx;
	return ms_bench_load(&c->runs[0], eb);
}

static int
call_summary(void *ctx, ms_errbuf *eb)
{
	struct bench_call *c = ctx;
	return ms_bench_summary(c->runs, 2, c->labels, 2, c->out, c->out, eb);
}

static int
call_html(void *ctx, ms_errbuf *eb)
{
	struct bench_call *c = ctx;
	return ms_bench_html(c->runs, 2, c->labels, 2, "t", c->out, eb);
}

/* Out of memory reading a run, summing or drawing a series: the message
 * says what the memory was for ("bench summary: no memory" did not). */
static void
test_out_of_memory(void **state)
{
	(void)state;
	static struct bench_call c;
	memset(&c, 0, sizeof(c));
	path_in(c.runs[0].db, sizeof(c.runs[0].db), "oom.db");
	ms_errbuf eb = { "" };
	assert_int_equal(evf_record(c.runs[0].db, "skywalking", 20, &eb), 0);
	c.runs[1] = c.runs[0];
	c.runs[1].variant = 1;
	c.labels[0] = "skywalking";
	c.labels[1] = "disabled";
	c.out = fopen("/dev/null", "w");
	assert_non_null(c.out);
	assert_true(tl_alloc_sweep(call_load, &c, c.runs[0].db) > 0);
	assert_true(c.runs[0].valid);
	assert_int_equal(ms_bench_load(&c.runs[1], &eb), 0);
	assert_true(tl_alloc_sweep(call_summary, &c, "bench summary") > 0);
	assert_true(tl_alloc_sweep(call_html, &c, "bench ") > 0);
	fclose(c.out);
}

/* The cgroup keeps one high-water mark for the whole run: the summary
 * showed that figure under primary and again under cooldown, as if each
 * phase had peaked at it. It is shown once, in a table of the run (the
 * JSON's "run" beside "phases"). */
static void
test_cgroup_peak_once(void **state)
{
	(void)state;
	static ms_bench_run runs[1];
	memset(runs, 0, sizeof(runs));
	path_in(runs[0].db, sizeof(runs[0].db), "cgpeak.db");
	ms_errbuf eb = { "" };
	assert_int_equal(evf_record(runs[0].db, "skywalking", 4, &eb), 0);
	assert_int_equal(ms_bench_load(&runs[0], &eb), 0);
	assert_true(runs[0].valid);
	const char *labels[1] = { "skywalking" };
	char *text = NULL, *js = NULL;
	size_t len = 0, jlen = 0;
	FILE *f = open_memstream(&text, &len), *jf = open_memstream(&js, &jlen);
	assert_true(f && jf);
	assert_int_equal(ms_bench_summary(runs, 1, labels, 1, f, jf, &eb), 0);
	fclose(f);
	fclose(jf);
	const char *row = strstr(text, "\ncgroup peak MiB");
	assert_non_null(row);
	assert_null(strstr(row + 1, "\ncgroup peak MiB"));
	const char *run_table = strstr(text, "\nrun ");
	assert_true(run_table && run_table < row);
	assert_null(strstr(run_table + 1, "\nwall s"));
	assert_non_null(strstr(row, " 150.0 "));
	jv j;
	json_parse(js, &j);
	const jv *v = &jget(&j, "variants")->items[0];
	for (unsigned p = 0; p < MS_EV_PHASE_COUNT; p++)
		assert_null(jget(jget(jget(v, "phases"), ms_ev_phase_name(p)),
		                 "cgroup_peak_mib"));
	const jv *cg = jget(jget(v, "run"), "cgroup_peak_mib");
	assert_non_null(cg);
	assert_true(jget(cg, "n")->num == 1);
	assert_true(jget(cg, "median")->num == 150.0);
	assert_null(jget(jget(v, "run"), "wall_s"));
	jfree(&j);
	free(js);
	free(text);
}

/* Out of memory loading a series directory (`report --collect`): one
 * line naming the command and saying what the memory was for ("mergescope
 * report: no memory" did not). */
static void
test_series_out_of_memory(void **state)
{
	(void)state;
	char dir[PATH_MAX], db[PATH_MAX + 32];
	path_in(dir, sizeof(dir), "oom-series");
	assert_int_equal(mkdir(dir, 0755), 0);
	ms_errbuf eb = { "" };
	for (unsigned rep = 1; rep <= 20; rep++) {
		snprintf(db, sizeof(db), "%s/rep%u-v0-skywalking.db", dir, rep);
		assert_int_equal(evf_record(db, "skywalking", 4, &eb), 0);
	}
	const char *dirs[] = { dir };
	unsigned failed = 0;
	for (long k = 0;; k++) {
		char *text = NULL;
		size_t len = 0;
		FILE *e = open_memstream(&text, &len);
		assert_non_null(e);
		ms__series s;
		tl_alloc_fail_nth(k);
		int rc = ms__series_load(&s, dirs, 1, NULL, 0, "report", e);
		bool fired = tl_alloc_disarm();
		ms__series_free(&s);
		fclose(e);
		if (!fired) {
			assert_int_equal(rc, 0);
			free(text);
			break;
		}
		if (rc) {
			failed++;
			if (strncmp(text, "mergescope report: ", 19) != 0 ||
			    !strstr(text, ": out of memory for "))
				fail_msg("allocation %ld: %s", k, text);
		}
		free(text);
	}
	assert_true(failed > 0);
}

/* Relative --out and --fixture: the emitted commands name them whole, so
 * they run wherever the scheduler starts them. */
static void
test_emit_relative_paths(void **state)
{
	(void)state;
	char cmd[4 * PATH_MAX], want[2 * PATH_MAX], real[PATH_MAX];
	assert_non_null(realpath(root, real));
	snprintf(cmd, sizeof(cmd),
	         "cd '%s' && '%s' bench --variants disabled --reps 1 "
	         "--fixture cache/mergescope/smoke-1 --out relpar "
	         "--emit parallel",
	         root, MS_MERGESCOPE_BIN);
	const char *sh[] = { cmd, NULL };
	int rc = run(sh, true);
	if (rc)
		fprintf(stderr, "%s\n", err);
	assert_int_equal(rc, 0);
	snprintf(want, sizeof(want), "'--db' '%s/relpar/rep000-v0-disabled.db'",
	         real);
	assert_non_null(strstr(out, want));
	snprintf(want, sizeof(want), ">'%s/relpar/rep000-v0-disabled.log'",
	         real);
	assert_non_null(strstr(out, want));
	snprintf(want, sizeof(want),
	         "'--fixture' '%s/cache/mergescope/smoke-1'", real);
	assert_non_null(strstr(out, want));
}

/* A profile asking more CPUs than any machine has is noted once for
 * the series (not once per variant), before anything runs. */
static void
test_profile_beyond_noted(void **state)
{
	(void)state;
	char cmd[4 * PATH_MAX];
	snprintf(cmd, sizeof(cmd),
	         "cd '%s' && '%s' bench --variants disabled,alwayskeep "
	         "--reps 1 --fixture cache/mergescope/smoke-1 --out beyond "
	         "--profile cpus=65535,mem=1g --emit parallel",
	         root, MS_MERGESCOPE_BIN);
	const char *sh[] = { cmd, NULL };
	assert_int_equal(run(sh, true), 0);
	const char *note = strstr(err, "mergescope bench: note: --profile "
	                               "\"cpus=65535,mem=1g\" asks 65535 "
	                               "CPUs where there are ");
	if (!note)
		fail_msg("no note of the profile in:\n%s", err);
	assert_null(strstr(note + strlen("mergescope bench: note:"),
	                   "note: --profile"));
	assert_null(strstr(err, "GiB where there"));
}

/* The next argument of an #SBATCH line as sbatch reads it: split at
 * white space outside quotes, a backslash escaping the next character,
 * an unquoted '#' ending the line. NULL when none is left. */
static const char *
sbatch_arg(const char *p, char *arg, size_t n)
{
	while (*p == ' ' || *p == '\t')
		p++;
	if (!*p || *p == '\n' || *p == '#')
		return NULL;
	size_t i = 0;
	char q = 0;
	while (*p && *p != '\n' && (q || (*p != ' ' && *p != '\t'))) {
		if (*p == '\\' && p[1]) {
			p++;
		} else if (q && *p == q) {
			q = 0;
			p++;
			continue;
		} else if (!q && (*p == '"' || *p == '\'')) {
			q = *p++;
			continue;
		} else if (!q && *p == '#') {
			break;
		}
		assert_true(i + 1 < n);
		arg[i++] = *p++;
	}
	arg[i] = '\0';
	return p;
}

static void
test_emit_slurm(void **state)
{
	(void)state;
	char dir[PATH_MAX];
	/* A series directory with a space, a '#' and a '%' in its name:
	 * the #SBATCH --output line names it whole (it was cut at the
	 * space). */
	path_in(dir, sizeof(dir), "slurm dir #1 %x");
	const char *args[] = { "bench",  "--variants", "disabled,skywalking",
		               "--reps", "3",          "--preset",
		               "smoke",  "--out",      dir,
		               "--emit", "slurm",      NULL };
	assert_int_equal(run(args, false), 0);
	assert_true(strncmp(out, "#!/bin/bash\n", 12) == 0);
	/* The array range covers the job list exactly. */
	const char *a = strstr(out, "\n#SBATCH --array=0-");
	assert_non_null(a);
	int last = atoi(a + strlen("\n#SBATCH --array=0-"));
	const char *open_ = strstr(out, "\nJOBS=(\n");
	assert_non_null(open_);
	const char *close_ = strstr(open_, "\n)\n");
	assert_non_null(close_);
	int n = 0;
	for (const char *p = open_ + 8; p < close_; p = strchr(p, '\n') + 1) {
		assert_true(strncmp(p, "  '", 3) == 0);
		assert_non_null(strstr(p, "--headless"));
		n++;
	}
	assert_int_equal(n, 6);
	assert_int_equal(last, n - 1);
	assert_non_null(
	        strstr(close_, "eval \"${JOBS[$SLURM_ARRAY_TASK_ID]}\""));
	const char *o = strstr(out, "\n#SBATCH --output=");
	assert_non_null(o);
	char arg[2 * PATH_MAX], want[2 * PATH_MAX];
	const char *rest =
	        sbatch_arg(o + strlen("\n#SBATCH"), arg, sizeof(arg));
	assert_non_null(rest);
	/* sbatch reads "%%" in a file name as one '%'. */
	snprintf(want, sizeof(want),
	         "--output=%s/slurm dir #1 %%%%x/slurm-%%A_%%a.out", root);
	assert_string_equal(arg, want);
	assert_null(sbatch_arg(rest, arg, sizeof(arg)));
	/* It is a shell script bash accepts. */
	char path[PATH_MAX], cmd[2 * PATH_MAX];
	path_in(path, sizeof(path), "job.sbatch");
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(out, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "bash -n '%s'", path);
	assert_int_equal(system(cmd), 0);
}

/* ---- usage errors ------------------------------------------------------- */

/* Is a process running whose command line holds s (in any argument)? */
static bool
running_with(const char *s)
{
	DIR *d = opendir("/proc");
	assert_non_null(d);
	bool found = false;
	struct dirent *e;
	while (!found && (e = readdir(d))) {
		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		char p[300], buf[8192];
		snprintf(p, sizeof(p), "/proc/%s/cmdline", e->d_name);
		int fd = open(p, O_RDONLY);
		if (fd < 0)
			continue;
		ssize_t n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n <= 0)
			continue;
		for (ssize_t i = 0; i < n; i++)
			if (!buf[i])
				buf[i] = ' ';
		buf[n] = '\0';
		found = strstr(buf, s) != NULL;
	}
	closedir(d);
	return found;
}

/* bench stopped by a SIGTERM sent to it alone (as `timeout` or a
 * scheduler sends it): it passes the signal on to its run in flight,
 * starts no further run, says how far the series got and exits 143, and
 * no run of the series is left running. Before, bench died at once and
 * its run went on alone, writing into the series directory. */
static void
test_stopped(void **state)
{
	(void)state;
	char dir[PATH_MAX], op[PATH_MAX], ep[PATH_MAX], log[PATH_MAX + 32];
	path_in(dir, sizeof(dir), "stopped");
	path_in(op, sizeof(op), "stopped.out");
	path_in(ep, sizeof(ep), "stopped.err");
	const char *args[] = { "bench",  "--variants", "disabled,skywalking",
		               "--reps", "200",        "--preset",
		               "smoke",  "--out",      dir,
		               NULL };
	pid_t pid = bt_spawn(args, false, op, ep, NULL, 0);
	snprintf(log, sizeof(log), "%s/rep000-v0-disabled.log", dir);
	for (int i = 0; i < HUNG_S * 20 && !exists(log); i++) {
		struct timespec ts = { 0, 50000000 };
		nanosleep(&ts, NULL);
	}
	assert_true(exists(log));
	assert_int_equal(kill(pid, SIGTERM), 0);
	int st = bt_wait(pid, HUNG_S);
	int rc = bt_outputs(st, op, out, OUT_MAX, ep, err, OUT_MAX);
	bool left = running_with(dir);
	assert_false(left);
	assert_int_equal(rc, 143);
	assert_non_null(strstr(err, "stopped by SIGTERM after "));
	assert_non_null(strstr(err, "is incomplete"));
}

/* A child the process had before it became `bench` (a shell's
 * background job, then exec) ends during the series: that is no run's
 * end, so the series still waits for each run before its summary. */
static void
test_stray_child(void **state)
{
	(void)state;
	char cmd[4 * PATH_MAX];
	snprintf(cmd, sizeof(cmd),
	         "sleep 0 & exec '%s' bench --variants disabled "
	         "--reps 2 --fixture '%s/cache/mergescope/smoke-1' --out "
	         "'%s/stray'",
	         MS_MERGESCOPE_BIN, root, root);
	const char *sh[] = { cmd, NULL };
	int rc = run(sh, true);
	if (rc)
		fprintf(stderr, "%s\n%s\n", out, err);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "2 runs, 2 valid"));
	assert_non_null(strstr(err, "rep 1/2 disabled       exit 0"));
	assert_non_null(strstr(err, "rep 2/2 disabled       exit 0"));
}

/* The pid of a process whose parent is ppid and whose command line
 * (arguments joined by blanks) holds s; 0 if none. */
static pid_t
child_with(pid_t ppid, const char *s)
{
	DIR *d = opendir("/proc");
	assert_non_null(d);
	pid_t found = 0;
	struct dirent *e;
	while (!found && (e = readdir(d))) {
		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		char p[300], buf[8192];
		if (bt_parent_of(e->d_name) != (long)ppid)
			continue;
		snprintf(p, sizeof(p), "/proc/%s/cmdline", e->d_name);
		int fd = open(p, O_RDONLY);
		ssize_t k = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
		if (fd >= 0)
			close(fd);
		for (ssize_t i = 0; i < k; i++)
			if (!buf[i])
				buf[i] = ' ';
		buf[k > 0 ? k : 0] = '\0';
		if (strstr(buf, s))
			found = (pid_t)atol(e->d_name);
	}
	closedir(d);
	return found;
}

/* Wait (at most HUNG_S) until the file at path holds s. */
static void
wait_for_text(const char *path, const char *s)
{
	for (int i = 0; i < HUNG_S * 20; i++) {
		char *t = ms_test_read(path, OUT_MAX, NULL);
		bool there = t && strstr(t, s);
		free(t);
		if (there)
			return;
		struct timespec ts = { 0, 50000000 };
		nanosleep(&ts, NULL);
	}
	fail_msg("%s: no \"%s\" after %d s", path, s, HUNG_S);
}

/* The .log of the series' first run in dir, once it is there. */
static void
first_log(const char *dir, char *buf, size_t n)
{
	for (int i = 0; i < HUNG_S * 20; i++) {
		DIR *d = opendir(dir);
		struct dirent *e;
		while (d && (e = readdir(d))) {
			size_t len = strlen(e->d_name);
			if (strncmp(e->d_name, "rep000-v0-", 10) == 0 &&
			    len > 4 &&
			    strcmp(e->d_name + len - 4, ".log") == 0) {
				snprintf(buf, n, "%s/%s", dir, e->d_name);
				closedir(d);
				return;
			}
		}
		if (d)
			closedir(d);
		struct timespec ts = { 0, 50000000 };
		nanosleep(&ts, NULL);
	}
	fail_msg("%s: no run started after %d s", dir, HUNG_S);
}

/* Wait until the database of the series' first run in dir holds its run
 * record (committed: the recorder groups its commits), so that a run
 * killed now has a run to record as aborted. */
static void
wait_for_run_record(const char *dir)
{
	for (int i = 0; i < HUNG_S * 20; i++) {
		char db[PATH_MAX] = "";
		DIR *d = opendir(dir);
		struct dirent *e;
		while (d && (e = readdir(d))) {
			size_t len = strlen(e->d_name);
			if (strncmp(e->d_name, "rep000-v0-", 10) == 0 &&
			    len > 3 && strcmp(e->d_name + len - 3, ".db") == 0)
				snprintf(db, sizeof(db), "%s/%s", dir,
				         e->d_name);
		}
		if (d)
			closedir(d);
		ms_evdb *ev = NULL;
		ms_errbuf eb = { "" };
		bool ok = db[0] && ms_evdb_open(&ev, db, &eb) == 0 &&
		          ms_evdb_run(ev, NULL, NULL, NULL, &eb) == 0;
		ms_evdb_close(ev);
		if (ok)
			return;
		struct timespec ts = { 0, 50000000 };
		nanosleep(&ts, NULL);
	}
	fail_msg("%s: no run recorded after %d s", dir, HUNG_S);
}

/* A run of the series killed outright (SIGKILL: the kernel's OOM killer
 * under --profile, or a user) while it waits in Decide (tp_slow waiting
 * for a file never made). Its watcher, held stopped until bench has
 * reaped the run, then records the end, removes the scratch shard and
 * folds the log into the database. bench waits for it: the summary reads
 * the run as aborted, nothing of the run or of bench is left running, and
 * the database is alone, in rollback-journal mode, with no -wal or -shm
 * beside it. Before, bench read the database while the watcher had not
 * recorded the end, exited with the watcher still running, and left the
 * database in WAL mode, so every reader (its own summary first) left an
 * empty -wal and -shm in the series directory. */
static void
test_killed_run(void **state)
{
	(void)state;
	char kb[PATH_MAX], dir[PATH_MAX], gate[PATH_MAX], log[PATH_MAX];
	char op[PATH_MAX], ep[PATH_MAX], cmd[6 * PATH_MAX];
	path_in(kb, sizeof(kb), "killbin");
	path_in(dir, sizeof(dir), "killed");
	path_in(gate, sizeof(gate), "killed.never");
	path_in(op, sizeof(op), "killed.out");
	path_in(ep, sizeof(ep), "killed.err");
	/* The binary beside a plugins/ directory that holds tp_slow. */
	snprintf(cmd, sizeof(cmd),
	         "mkdir -p '%s/bin' '%s/plugins' && cp '%s' '%s/bin/' && "
	         "ln -s '%s/tp_slow.so' '%s/plugins/'",
	         kb, kb, MS_MERGESCOPE_BIN, kb, MS_TEST_PLUGIN_DIR, kb);
	const char *setup_sh[] = { cmd, NULL };
	assert_int_equal(run(setup_sh, true), 0);
	snprintf(cmd, sizeof(cmd),
	         "exec '%s/bin/mergescope' bench --variant "
	         "'tp_slow:{\"slow\":\"0/1@%s\"}' --reps 1 --fixture "
	         "'%s/cache/mergescope/smoke-1' --out '%s'",
	         kb, gate, root, dir);
	const char *sh[] = { cmd, NULL };
	pid_t pid = bt_spawn(sh, true, op, ep, NULL, 0);
	first_log(dir, log, sizeof(log));
	/* Said once its watcher knows the database and the shard. */
	wait_for_text(log, "events recorded in");
	wait_for_run_record(dir);
	pid_t runp = child_with(pid, " run --headless ");
	assert_true(runp > 0);
	pid_t watcher = child_with(runp, " run --headless ");
	assert_true(watcher > 0);
	assert_int_equal(kill(watcher, SIGSTOP), 0);
	assert_int_equal(kill(runp, SIGKILL), 0);
	wait_for_text(ep, "exit 137");
	assert_int_equal(kill(watcher, SIGCONT), 0);
	int st = bt_wait(pid, HUNG_S);
	int rc = bt_outputs(st, op, out, OUT_MAX, ep, err, OUT_MAX);
	bool left = running_with(dir);
	assert_false(left);
	assert_int_equal(rc, 1); /* its variant has no valid run */
	assert_non_null(strstr(out, "run status \"aborted\""));
	DIR *d = opendir(dir);
	assert_non_null(d);
	struct dirent *e;
	char db[PATH_MAX] = "";
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		if (len > 4 && (strcmp(e->d_name + len - 4, "-wal") == 0 ||
		                strcmp(e->d_name + len - 4, "-shm") == 0))
			fail_msg("%s/%s left beside the database", dir,
			         e->d_name);
		if (len > 3 && strcmp(e->d_name + len - 3, ".db") == 0)
			snprintf(db, sizeof(db), "%s/%s", dir, e->d_name);
	}
	closedir(d);
	assert_true(db[0]);
	/* File format bytes 18 and 19: 1, a rollback journal (2: WAL). */
	unsigned char h[20] = { 0 };
	FILE *f = fopen(db, "rb");
	assert_non_null(f);
	assert_int_equal(fread(h, 1, sizeof(h), f), sizeof(h));
	fclose(f);
	assert_int_equal(h[18], 1);
	assert_int_equal(h[19], 1);
}

/* --envelope says how --profile is held: without --profile it cannot
 * take effect and is refused, naming both, before anything is made. */
static void
test_envelope_without_profile(void **state)
{
	(void)state;
	char fresh[PATH_MAX];
	path_in(fresh, sizeof(fresh), "noprofile");
	const char *b[] = { "bench",  "--variants", "disabled", "--envelope",
		            "cgroup", "--out",      fresh,      NULL };
	assert_int_equal(run(b, false), 64);
	assert_non_null(strstr(err, "--envelope cgroup needs --profile"));
	assert_false(exists(fresh));
	const char *emit[] = { "bench",      "--variants", "disabled",
		               "--envelope", "emulated",   "--emit",
		               "parallel",   "--out",      fresh,
		               NULL };
	assert_int_equal(run(emit, false), 64);
	assert_non_null(strstr(err, "--envelope emulated needs --profile"));
	assert_false(exists(fresh));
	const char *r[] = { "run",        "--headless", "--preset", "smoke",
		            "--envelope", "cgroup",     NULL };
	assert_int_equal(run(r, false), 64);
	assert_non_null(strstr(err, "mergescope run: --envelope cgroup "
	                            "needs --profile"));
}

/* An --out in which a run's event database would be a longer path than
 * SQLite opens (504 bytes with -journal's 8 added) is refused before
 * anything is made or run: every run of the series failed on it, one
 * after another, and the series had no figures. An --out longer than
 * the series directory's buffer was cut short unsaid. */
static void
test_out_too_long(void **state)
{
	(void)state;
	char fresh[PATH_MAX];
	path_in(fresh, sizeof(fresh), "long");
	size_t at = strlen(fresh);
	/* The longest database, rep004-v1-skywalking.db, one byte past. */
	size_t want = 505 - strlen("/rep004-v1-skywalking.db");
	while (at < want) {
		size_t k = want - at > 201 ? 201 : want - at;
		fresh[at++] = '/';
		memset(fresh + at, 'd', k - 1);
		at += k - 1;
	}
	fresh[at] = '\0';
	const char *b[] = { "bench", "--variants", "disabled,skywalking",
		            "--preset", "smoke", "--out", fresh, NULL };
	assert_int_equal(run(b, false), 64);
	char line[1024];
	snprintf(line, sizeof(line),
	         "mergescope bench: --out %s: a run's event database there "
	         "(rep004-v1-skywalking.db) would be a path of 505 bytes; "
	         "SQLite opens one of at most 504 (with -journal added, its "
	         "limit)\n",
	         fresh);
	assert_string_equal(err, line);
	char top[PATH_MAX];
	path_in(top, sizeof(top), "long");
	assert_false(exists(top));
	/* One byte shorter fits (--emit: nothing runs). */
	fresh[at - 1] = '\0';
	const char *e[] = { "bench", "--variants", "disabled,skywalking",
		            "--preset", "smoke", "--emit", "parallel", "--out",
		            fresh, NULL };
	assert_int_equal(run(e, false), 0);
	assert_true(exists(fresh));
	/* Longer than any path: refused, not cut. */
	static char huge[PATH_MAX + 2];
	memset(huge, 'h', sizeof(huge) - 1);
	huge[0] = '/';
	const char *h[] = { "bench", "--variants", "disabled", "--preset",
		            "smoke", "--out", huge, NULL };
	assert_int_equal(run(h, false), 64);
	assert_non_null(strstr(err, "mergescope bench: --out: the path is "
	                            "4097 bytes; at most 4095 are accepted\n"));
}

/* A variant given twice was run as two variants of one name: the
 * series' summary had two rows "disabled", `--collect` of the same
 * directory one with both runs. Refused before anything is made. */
static void
test_variant_twice(void **state)
{
	(void)state;
	char fresh[PATH_MAX];
	path_in(fresh, sizeof(fresh), "twice");
	const char *list[] = {
		"bench",  "--variants", "disabled,skywalking,disabled",
		"--reps", "1",          "--out",
		fresh,    NULL
	};
	assert_int_equal(run(list, false), 64);
	assert_non_null(strstr(err, "mergescope bench: --variants: variant "
	                            "\"disabled\" is given twice"));
	assert_false(exists(fresh));
	const char *each[] = { "bench",     "--variant",  "skywalking",
		               "--variant", "skywalking", "--emit",
		               "parallel",  "--out",      fresh,
		               NULL };
	assert_int_equal(run(each, false), 64);
	assert_non_null(strstr(err, "mergescope bench: --variant "
	                            "\"skywalking\" is given twice"));
	assert_false(exists(fresh));
}

/* A --fixture damaged since it was built (one byte of a part changed) is
 * named once in one line, before any run and before the series directory
 * is made, as `run` names it. Before, every run of the series failed with
 * it in its log, and the summary listed each run with the line cut. */
static void
test_damaged_fixture(void **state)
{
	(void)state;
	char fx[PATH_MAX], fresh[PATH_MAX], part[PATH_MAX + 300];
	path_in(fx, sizeof(fx), "damaged-fixture");
	path_in(fresh, sizeof(fresh), "damaged-series");
	const char *build[] = { "fixture", "build",  "--preset",
		                "smoke",   "--seed", "1",
		                "--out",   fx,       NULL };
	assert_int_equal(run(build, false), 0);
	char core[PATH_MAX + 20];
	snprintf(core, sizeof(core), "%s/parts/core", fx);
	DIR *d = opendir(core);
	assert_non_null(d);
	struct dirent *e;
	part[0] = '\0';
	while ((e = readdir(d)) && e->d_name[0] == '.')
		;
	assert_non_null(e);
	snprintf(part, sizeof(part), "%s/%s", core, e->d_name);
	closedir(d);
	int fd = open(part, O_RDWR);
	assert_true(fd >= 0);
	unsigned char c;
	assert_int_equal(pread(fd, &c, 1, 100), 1);
	c ^= 0xff;
	assert_int_equal(pwrite(fd, &c, 1, 100), 1);
	close(fd);

	const char *b[] = { "bench",  "--variants", "disabled,alwayskeep",
		            "--reps", "1",          "--fixture",
		            fx,       "--out",      fresh,
		            NULL };
	assert_int_equal(run(b, false), 2);
	char want[PATH_MAX + 64];
	snprintf(want, sizeof(want), "mergescope bench: fixture %s: core part ",
	         fx);
	assert_non_null(strstr(err, want));
	assert_non_null(strstr(err, "changed since it was built"));
	assert_non_null(strstr(err, "build it again"));
	assert_int_equal(strchr(err, '\n') - err + 1, (long)strlen(err));
	assert_false(exists(fresh));
}

static void
test_usage(void **state)
{
	(void)state;
	const char *noreps[] = { "bench",  "--variants", "disabled",
		                 "--reps", "0",          NULL };
	assert_int_equal(run(noreps, false), 64);
	assert_non_null(strstr(err, "--reps \"0\""));
	const char *emit[] = { "bench",  "--variants", "disabled",
		               "--emit", "make",       NULL };
	assert_int_equal(run(emit, false), 64);
	assert_non_null(strstr(err, "--emit \"make\""));
	const char *full[] = { "bench", "--variants", "disabled",
		               "--out", series,       NULL };
	/* What the named directory turns out to be is the work's error, as
	 * in every command (export --out DIR): it exited 64. */
	assert_int_equal(run(full, false), 2);
	assert_non_null(strstr(err, "not empty"));
	/* A file there: said as such, not as mkdir's "Not a directory". */
	char file[PATH_MAX];
	db_of(file, sizeof(file), series, 0, 0, "disabled");
	const char *onfile[] = { "bench", "--variants", "disabled",
		                 "--out", file,         NULL };
	assert_int_equal(run(onfile, false), 2);
	assert_non_null(strstr(err, ": not a directory (a series directory "
	                            "must be new or empty)"));
	/* An empty item is named, wherever it is. */
	const char *gap[] = { "bench", "--variants", "disabled,,skywalking",
		              NULL };
	assert_int_equal(run(gap, false), 64);
	assert_non_null(strstr(err, "\"disabled,,skywalking\": item 2 is "
	                            "empty"));
	const char *trail[] = { "bench", "--variants", "disabled,", NULL };
	assert_int_equal(run(trail, false), 64);
	assert_non_null(strstr(err, "item 2 is empty"));
	const char *lead[] = { "bench", "--variants", ",disabled", NULL };
	assert_int_equal(run(lead, false), 64);
	assert_non_null(strstr(err, "item 1 is empty"));
	const char *none[] = { "bench", NULL };
	assert_int_equal(run(none, false), 64);
	assert_non_null(strstr(err, "--variants"));
	/* A bad value is named when a required option is missing too: it
	 * was passed over for the missing --variants. */
	const char *badreps[] = { "bench", "--reps", "x", NULL };
	assert_int_equal(run(badreps, false), 64);
	assert_non_null(strstr(err, "--reps \"x\": expected a whole number"));
	const char *badjobs[] = { "bench", "--jobs", "0", NULL };
	assert_int_equal(run(badjobs, false), 64);
	assert_non_null(strstr(err, "--jobs \"0\": expected a whole number"));
	/* Each variant, the fixture and --cache are checked as `run` checks
	 * them before the series directory is made or any run starts. */
	char fresh[PATH_MAX];
	path_in(fresh, sizeof(fresh), "unchecked");
	const char *bogus[] = { "bench",  "--variants", "disabled,frobnicate",
		                "--reps", "1",          "--out",
		                fresh,    NULL };
	assert_int_equal(run(bogus, false), 2);
	/* Named with the option that gave it, as other errors are. */
	assert_non_null(strstr(err, "mergescope bench: --variants "
	                            "\"frobnicate\": "));
	assert_false(exists(fresh));
	const char *nofix[] = { "bench",
		                "--variants",
		                "disabled",
		                "--fixture",
		                "/nonexistent/fixture",
		                "--out",
		                fresh,
		                NULL };
	assert_int_equal(run(nofix, false), 2);
	assert_non_null(strstr(err, "--fixture /nonexistent/fixture"));
	assert_false(exists(fresh));
	/* A scratch directory the runs could not use: refused before the
	 * series starts. */
	char cmd[3 * PATH_MAX];
	snprintf(cmd, sizeof(cmd),
	         "MERGESCOPE_SCRATCH=relative/dir '%s' bench --variants "
	         "disabled --reps 1 --out '%s'",
	         MS_MERGESCOPE_BIN, fresh);
	const char *sh[] = { cmd, NULL };
	assert_int_equal(run(sh, true), 64);
	assert_non_null(strstr(err, "MERGESCOPE_SCRATCH"));
	assert_false(exists(fresh));
	/* --collect takes no other option, --reps included. */
	const char *col[] = {
		"bench", "--collect", series, "--reps", "3", NULL
	};
	assert_int_equal(run(col, false), 64);
	assert_non_null(strstr(err, "no other option"));
	const char *cache[] = { "bench",    "--variants", "disabled", "--cache",
		                "lukewarm", "--emit",     "parallel", NULL };
	assert_int_equal(run(cache, false), 64);
	assert_non_null(strstr(err, "--cache \"lukewarm\""));
}

/* ---- the profile held by a real cgroup, or emulated with why ---------- */

/* May a run make groups in this machine's cgroup hierarchy? */
static bool
cgroups_writable(void)
{
	return geteuid() == 0 &&
	       (access("/sys/fs/cgroup/memory", W_OK) == 0 ||
	        access("/sys/fs/cgroup/cgroup.subtree_control", W_OK) == 0);
}

static void
run_end_of(const char *db, ms_ev_run *r, ms_ev_run_end *e)
{
	ms_evdb *ev = NULL;
	ms_errbuf eb = { { 0 } };
	bool has_end = false;
	if (ms_evdb_open(&ev, db, &eb))
		fail_msg("%s", eb.msg);
	assert_int_equal(ms_evdb_run(ev, r, e, &has_end, &eb), 0);
	assert_true(has_end);
	ms_evdb_close(ev);
}

static void
test_envelope(void **state)
{
	(void)state;
	char db[PATH_MAX];
	ms_ev_run r;
	ms_ev_run_end e;
	path_in(db, sizeof(db), "envelope.db");
	const char *args[] = { "run",   "--headless", "--preset",
		               "smoke", "--profile",  "cpus=1,mem=1g",
		               "--db",  db,           NULL };
	assert_int_equal(run(args, false), 0);
	run_end_of(db, &r, &e);
	assert_string_equal(r.profile, "cpus=1,mem=1g");
	if (cgroups_writable()) {
		/* The real path: the run sat in its own cgroup, saw its
		 * limits from inside, and the group kept its peak. */
		assert_true(strcmp(r.limits_mode, "cgroup1") == 0 ||
		            strcmp(r.limits_mode, "cgroup2") == 0);
		assert_string_equal(r.limits_why, "");
		assert_int_equal(r.pids_max, 512);
		assert_int_equal(r.detected_mem_bytes, 1ull << 30);
		assert_int_equal(r.detected_cpus, 1);
		assert_true(e.cgroup_peak_bytes > 1u << 20);
		assert_true(e.cgroup_peak_bytes <= 1ull << 30);
		assert_int_equal(e.cgroup_oom_kills, 0);
		/* the report says so */
		const char *rep[] = { "report", "--db", db, NULL };
		assert_int_equal(run(rep, false), 0);
		assert_non_null(strstr(out, "  envelope     cgroup"));
		assert_non_null(strstr(out, ", pids.max 512: peak "));
		/* A tmpfs's pages count against the limit: with 64 MiB the
		 * shard goes to the disk (before, to the tmpfs, where a whole
		 * day got the run killed by the kernel part way), and a
		 * --work-dir on a tmpfs is refused before staging. */
		path_in(db, sizeof(db), "small.db");
		const char *small[] = { "run",   "--headless", "--preset",
			                "smoke", "--profile",  "cpus=1,mem=64m",
			                "--db",  db,           NULL };
		int st = run(small, false);
		if (st == 0) {
			assert_non_null(strstr(err, "(disk): "));
		} else {
			/* the cache's work/, the disk choice, is a tmpfs
			 * too here (the test's directory is) */
			assert_int_equal(st, 2);
			assert_non_null(strstr(err, "cache/mergescope/work/"));
			assert_non_null(strstr(err, "is on a tmpfs"));
		}
		struct stat shm;
		if (stat("/dev/shm", &shm) == 0 && S_ISDIR(shm.st_mode) &&
		    access("/dev/shm", W_OK) == 0 &&
		    strstr(err, "whose pages count against the run's memory "
		                "limit of 64 MiB")) {
			char wd[PATH_MAX];
			snprintf(wd, sizeof(wd), "/dev/shm/ms-test-wd-%ld",
			         (long)getpid());
			path_in(db, sizeof(db), "small-wd.db");
			const char *tw[] = { "run",       "--headless",
				             "--preset",  "smoke",
				             "--profile", "cpus=1,mem=64m",
				             "--work-dir", wd,
				             "--db",      db,
				             NULL };
			assert_int_equal(run(tw, false), 2);
			assert_non_null(strstr(err, "is on a tmpfs"));
			assert_non_null(strstr(err, "nothing was staged"));
			assert_false(exists(wd));
		}
	} else {
		assert_string_equal(r.limits_mode, "emulated");
		assert_true(r.limits_why[0] != '\0');
		assert_int_equal(e.cgroup_peak_bytes, 0);
		const char *need[] = { "run",        "--headless", "--preset",
			               "smoke",      "--profile",  "cpus=1",
			               "--envelope", "cgroup",     NULL };
		assert_int_not_equal(run(need, false), 0);
		assert_non_null(strstr(err, "no cgroup to hold the limits"));
	}
	/* Emulated on request: sized from the profile, nothing enforced. */
	path_in(db, sizeof(db), "emulated.db");
	const char *emu[] = { "run",        "--headless", "--preset",
		              "smoke",      "--profile",  "cpus=1,mem=1g",
		              "--envelope", "emulated",   "--db",
		              db,           NULL };
	assert_int_equal(run(emu, false), 0);
	run_end_of(db, &r, &e);
	assert_string_equal(r.limits_mode, "emulated");
	assert_string_equal(r.limits_why, "--envelope emulated");
	assert_int_equal(r.pids_max, 0);
	assert_int_equal(e.cgroup_peak_bytes, 0);
	assert_int_equal(r.emulated_mem_bytes, 1ull << 30);
	/* No cgroup, no cgroup figures: null in the report's JSON, not 0. */
	const char *ej[] = { "report", "--db", db, "--json", NULL };
	assert_int_equal(run(ej, false), 0);
	{
		jv j;
		json_parse(out, &j);
		assert_int_equal(jget(&j, "cgroup_peak_bytes")->t, J_NULL);
		assert_int_equal(jget(&j, "cgroup_throttled_ns")->t, J_NULL);
		jfree(&j);
	}
	/* Without a profile: the host's limits. */
	char sdb[PATH_MAX];
	db_of(sdb, sizeof(sdb), series, 0, 0, "disabled");
	assert_string_equal(run_of(sdb).limits_mode, "host");
	/* A bad value is named. */
	const char *bad[] = { "run",        "--headless", "--preset", "smoke",
		              "--envelope", "docker",     NULL };
	assert_int_equal(run(bad, false), 64);
	assert_non_null(strstr(err, "--envelope \"docker\""));
}

/* ---- --jobs: runs side by side, the same series ----------------------- */

static void
test_jobs(void **state)
{
	(void)state;
	char dir[PATH_MAX];
	path_in(dir, sizeof(dir), "jobs");
	const char *args[] = { "bench",  "--variants", "disabled,alwayskeep",
		               "--reps", "2",          "--preset",
		               "smoke",  "--jobs",     "2",
		               "--out",  dir,          NULL };
	assert_int_equal(run(args, false), 0);
	assert_non_null(strstr(err, ", 2 at a time"));
	assert_non_null(strstr(out, "bench series: 4 runs, 4 valid, 2 "
	                            "variants"));
	/* Two ran at once: some run started before another had ended. */
	ms_ev_run r[4];
	ms_ev_run_end e[4];
	const char *vn[2] = { "disabled", "alwayskeep" };
	for (unsigned i = 0; i < 4; i++) {
		char db[PATH_MAX];
		db_of(db, sizeof(db), dir, i / 2, i % 2, vn[i % 2]);
		run_end_of(db, &r[i], &e[i]);
	}
	bool overlap = false;
	for (unsigned i = 0; i < 4; i++)
		for (unsigned k = 0; k < 4; k++)
			if (i != k &&
			    r[k].started_unix_ns > r[i].started_unix_ns &&
			    r[k].started_unix_ns < e[i].ended_unix_ns)
				overlap = true;
	assert_true(overlap);
	const char *bad[] = { "bench",  "--variants", "disabled",
		              "--jobs", "0",          NULL };
	assert_int_equal(run(bad, false), 64);
	assert_non_null(strstr(err, "--jobs \"0\""));
}

/* ---- report --collect: many series directories, one summary ----------- */

static void
test_report_collect(void **state)
{
	(void)state;
	char jobs[PATH_MAX], html[PATH_MAX];
	path_in(jobs, sizeof(jobs), "jobs");
	path_in(html, sizeof(html), "collect.html");
	/* test_series (disabled, skywalking) and test_jobs (disabled,
	 * alwayskeep): one table, variants matched by name. */
	const char *args[] = { "report", "--collect", series, "--collect", jobs,
		               "--json", "--html",    html,   NULL };
	/* One directory given twice (here as DIR and DIR/.) would count
	 * each run twice: refused. */
	char again[PATH_MAX + 8];
	snprintf(again, sizeof(again), "%s/.", series);
	const char *twice[] = { "report",    "--collect", series,
		                "--collect", again,       NULL };
	assert_int_equal(run(twice, false), 64);
	assert_non_null(strstr(err, "same directory"));
	assert_int_equal(run(args, false), 0);
	/* Where the HTML went: a line on standard error (there was none). */
	char said[PATH_MAX + 32];
	snprintf(said, sizeof(said), "report as HTML in %s\n", html);
	assert_non_null(strstr(err, said));
	jv j;
	json_parse(out, &j);
	assert_string_equal(jget(&j, "base")->raw, "disabled");
	assert_int_equal(jget(&j, "runs")->n, 8);
	const jv *vs = jget(&j, "variants");
	assert_int_equal(vs->n, 3);
	const char *names[3] = { "disabled", "skywalking", "alwayskeep" };
	for (unsigned v = 0; v < 3; v++)
		assert_string_equal(jget(&vs->items[v], "name")->raw, names[v]);
	const jv *wall =
	        jget(jget(jget(&vs->items[0], "phases"), "primary"), "wall_s");
	assert_true(jget(wall, "n")->num == 4);
	double med = jget(wall, "median")->num;
	jfree(&j);

	/* The HTML: well formed, a box per variant and metric holding the
	 * figures of the table. */
	char *h = slurp(html);
	assert_true(strncmp(h, "<!DOCTYPE html>\n<html", 21) == 0);
	assert_well_formed(h);
	assert_null(strstr(h, "<script"));
	assert_null(strstr(h, "href="));
	const char *svg = strstr(h, "<svg id=\"box-primary-wall_s\"");
	assert_non_null(svg);
	const char *box = strstr(svg, "<g class=\"box\" data-variant=\"0\"");
	assert_non_null(box);
	char want[96];
	snprintf(want, sizeof(want), "data-n=\"4\" ");
	assert_true(strncmp(strstr(box, "data-n="), want, strlen(want)) == 0);
	snprintf(want, sizeof(want), "data-median=\"%.6g\"", med);
	assert_non_null(strstr(box, want));
	/* No run of these series had a cgroup: its peak is said to have
	 * no figure, not plotted as 0. */
	assert_null(strstr(h, "<svg id=\"box-run-cgroup_peak_mib\""));
	assert_non_null(strstr(h, "<p id=\"box-run-cgroup_peak_mib\" "
	                          "class=\"no-figure\">"));
	/* The whole run's figure, not one per phase. */
	assert_null(strstr(h, "box-cooldown-cgroup_peak_mib"));
	assert_null(strstr(h, "box-primary-cgroup_peak_mib"));
	assert_non_null(strstr(h, "<pre id=\"summary\">"));
	free(h);

	/* A directory of other conditions is refused, naming it. */
	char other[PATH_MAX], cmd[3 * PATH_MAX];
	path_in(other, sizeof(other), "jobs-other");
	snprintf(cmd, sizeof(cmd), "cp -r '%s' '%s'", jobs, other);
	assert_int_equal(system(cmd), 0);
	for (unsigned i = 0; i < 4; i++) {
		char db[PATH_MAX];
		const char *vn[2] = { "disabled", "alwayskeep" };
		db_of(db, sizeof(db), other, i / 2, i % 2, vn[i % 2]);
		et_sql(db, "UPDATE run SET cache_label = 'cold'");
	}
	const char *mixed[] = { "report",    "--collect", series,
		                "--collect", other,       NULL };
	assert_int_equal(run(mixed, false), 2);
	assert_non_null(strstr(err, other));
	assert_non_null(strstr(err, "cache label"));
	assert_non_null(strstr(err, "not combined"));
	/* --collect with --db is a usage error. */
	const char *both[] = { "report", "--collect", series,
		               "--db",   "x.db",      NULL };
	assert_int_equal(run(both, false), 64);
	/* --force without --html is a usage error, as with --db. */
	const char *force[] = { "report", "--collect", series, "--force",
		                NULL };
	assert_int_equal(run(force, false), 64);
	assert_non_null(strstr(err, "--force needs --html FILE"));
}

/* A series database's name is "rep" R "-v" I "-" VARIANT ".db" with R
 * and I plain decimal numbers: sscanf's %u took "rep-1-v0-x.db" as
 * repetition 4294967295, and signs, blanks and numbers past UINT_MAX
 * too. Found by fuzz_tui_names. */
static void
test_series_names_strict(void **state)
{
	(void)state;
	unsigned rep = 0, vi = 0;
	assert_true(ms__series_name("rep3-v1-skywalking.db", &rep, &vi));
	assert_int_equal(rep, 3);
	assert_int_equal(vi, 1);
	assert_true(ms__series_name("rep0-v7-.db", &rep, &vi));
	assert_int_equal(vi, 7);
	static const char *const bad[] = {
		"rep-1-v0-x.db", "rep+1-v0-x.db", "rep 1-v0-x.db",
		"rep1-v-0-x.db", "rep1-v 0-x.db", "rep4294967296-v0-x.db",
		"rep1-v8-x.db",  "rep1-v0.db",    "rep1-v0-x.sqlite",
		"rep-v0-x.db",   "rep1v0-x.db",   "rep1-v0-x.db.gz",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (ms__series_name(bad[i], &rep, &vi))
			fail_msg("\"%s\" taken as repetition %u, variant %u",
			         bad[i], rep, vi);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stats),
		cmocka_unit_test(test_series),
		cmocka_unit_test(test_run_record),
		cmocka_unit_test(test_collect_names_invalid),
		cmocka_unit_test(test_collect_variant_without_valid_run),
		cmocka_unit_test(test_collect_names_run_without_database),
		cmocka_unit_test(test_collect_odd_first_run),
		cmocka_unit_test(test_emit_parallel),
		cmocka_unit_test(test_emit_relative_paths),
		cmocka_unit_test(test_emit_slurm),
		cmocka_unit_test(test_profile_beyond_noted),
		cmocka_unit_test(test_variant_chains),
		cmocka_unit_test(test_summary_long_labels),
		cmocka_unit_test(test_delta_from_zero),
		cmocka_unit_test(test_summary_conditions),
		cmocka_unit_test(test_out_of_memory),
		cmocka_unit_test(test_cgroup_peak_once),
		cmocka_unit_test(test_series_out_of_memory),
		cmocka_unit_test(test_usage),
		cmocka_unit_test(test_damaged_fixture),
		cmocka_unit_test(test_stopped),
		cmocka_unit_test(test_stray_child),
		cmocka_unit_test(test_killed_run),
		cmocka_unit_test(test_envelope_without_profile),
		cmocka_unit_test(test_out_too_long),
		cmocka_unit_test(test_variant_twice),
		cmocka_unit_test(test_envelope),
		cmocka_unit_test(test_jobs),
		cmocka_unit_test(test_report_collect),
		cmocka_unit_test(test_series_names_strict),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
