/*
 * test_cli_faults.c - faults a user meets, tried on the real `mergescope`
 * binary in child processes on a smoke fixture built once:
 *
 *  - a file system that refuses to grow the merge output (RLIMIT_FSIZE:
 *    every write past the limit fails with EFBIG, SIGXFSZ ignored): the
 *    run exits 2 within bounded time with one line naming the merge, the
 *    file and the error, the database records the failure, the fixture
 *    and the merge inputs are untouched, the scratch shard is removed;
 *    the same when only the finalize's output is refused: the finalize
 *    is dispatched again until the third failure in a row stops the run;
 *  - too few file descriptors (RLIMIT_NOFILE) for a merge: no input is
 *    blamed, the third failure in a row stops the run naming the limit;
 *  - SIGINT, SIGTERM, SIGHUP and SIGPIPE sent to a headless run once its
 *    scratch shard (with its owner record) exists: exit 130/143/129/141,
 *    the database says aborted, the scratch shard is gone, --json FILE
 *    holds the report with status aborted;
 *  - a run and a fixture build killed with SIGKILL leave directories whose
 *    owner record names a dead process: `clean --dry-run` lists them, the
 *    next run removes the scratch and says how much it freed, `clean`
 *    removes the rest; frozen shards and run databases go only when asked
 *    (--frozen, --runs, --older-than); a live owner's directory stays;
 *  - two runs given one --work-dir at once: the directory is taken by one
 *    of them before it is found empty, so a run that finds it taken (here
 *    a lock held on the still empty directory, as a run holds it between
 *    finding it empty and staging into it) is refused with one line and
 *    leaves it alone, and a run given it afterwards uses it;
 *  - two scratch roots (MERGESCOPE_SCRATCH): a run's sweep and `clean` in
 *    one leave a dead owner's leftover in the other alone; a relative path
 *    or a file as the root is refused with a line naming the variable;
 *  - a leftover `clean` cannot remove is named on standard error with the
 *    system's reason;
 *  - merge-once killed with SIGTERM leaves its copies in the scratch
 *    directory under an owner record, where `clean` removes them;
 *  - a tight address-space limit (RLIMIT_AS, `ulimit -v`): the day is
 *    replayed, and a fixture built byte for byte as without it.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "bin_testlib.h"
#include "ms_fixture.h"
#include "ms_fs.h"
#include "ms_owner.h"
#include "ms_replay_events.h"
#include "testdir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define HUNG_S 120 /* a child still running after this is hung */

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

static char root[PATH_MAX];    /* this test's directory */
static char cache[PATH_MAX];   /* XDG_CACHE_HOME of the children */
static char fixture[PATH_MAX]; /* smoke fixture */

static void
path_in(char *buf, size_t n, const char *name)
{
	snprintf(buf, n, "%s/%s", root, name);
}

static bool
exists(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0;
}

/* Where a run without --work-dir puts its scratch shard: in the scratch
 * root the children see (MERGESCOPE_SCRATCH, set per build tree by
 * ctest, else /dev/shm/mergescope-<uid>), or in the cache's work/ when
 * that has no room; *alt is the second. */
static void
default_shard(const char *db, long pid, char *buf, size_t n, char *alt,
              size_t altn)
{
	char sroot[PATH_MAX];
	const char *base = strrchr(db, '/');
	base = base ? base + 1 : db;
	assert_int_equal(ms_scratch_root(sroot, sizeof(sroot), NULL, NULL), 0);
	snprintf(buf, n, "%s/%s.%ld.shard", sroot, base, pid);
	snprintf(alt, altn, "%s/mergescope/work/%s.%ld.shard", cache, base,
	         pid);
}

/* Run the binary to its end; stdout and stderr into the buffers. */
static int
run_cli(const char *const *args, char *out, size_t on, char *err, size_t en)
{
	char op[PATH_MAX], ep[PATH_MAX];
	path_in(op, sizeof(op), "cli.out");
	path_in(ep, sizeof(ep), "cli.err");
	int st = bt_wait(bt_spawn(args, false, op, ep, NULL, 0), HUNG_S);
	return bt_outputs(st, op, out, on, ep, err, en);
}

/* A headless run of the fixture with no sampler, recording to db. */
static int
run_disabled(const char *db, char *out, size_t on, char *err, size_t en)
{
	const char *args[] = { "run",   "--headless", "--fixture",
		               fixture, "--variant",  "disabled",
		               "--db",  db,           NULL };
	return run_cli(args, out, on, err, en);
}

/* Read the child's standard error until `needle` shows (or EOF). */
static bool
read_until(int fd, const char *needle, char *buf, size_t n)
{
	size_t len = 0;
	buf[0] = '\0';
	while (len + 1 < n) {
		ssize_t k = read(fd, buf + len, n - 1 - len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return false;
		len += (size_t)k;
		buf[len] = '\0';
		if (strstr(buf, needle))
			return true;
	}
	return false;
}

static void
run_end(const char *db, ms_ev_run_end *end)
{
	ms_evdb *ev = NULL;
	ms_errbuf eb = { { 0 } };
	if (ms_evdb_open(&ev, db, &eb))
		fail_msg("%s", eb.msg);
	bool has_end = false;
	assert_int_equal(ms_evdb_run(ev, NULL, end, &has_end, &eb), 0);
	assert_true(has_end);
	ms_evdb_close(ev);
}

static int
count_removed(void *ctx, const ms_ev_part *p)
{
	if (p->what == MS_EV_PART_REMOVED)
		(*(uint64_t *)ctx)++;
	return 0;
}

/* The largest regular file below dir. */
static off_t
largest_file(const char *dir)
{
	off_t max = 0;
	DIR *d = opendir(dir);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char p[PATH_MAX];
		struct stat st;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		if (lstat(p, &st) != 0)
			continue;
		off_t n = S_ISDIR(st.st_mode) ? largest_file(p) : st.st_size;
		if (n > max)
			max = n;
	}
	if (d)
		closedir(d);
	return max;
}

static int
setup(void **state)
{
	(void)state;
	if (!ms_test_mkdtemp(root, sizeof(root), "ms-test-cli-faults"))
		return -1;
	path_in(cache, sizeof(cache), "cache");
	path_in(fixture, sizeof(fixture), "fixture");
	setenv("XDG_CACHE_HOME", cache, 1);
	char out[4096], err[4096];
	const char *args[] = { "fixture", "build",  "--preset",
		               "smoke",   "--seed", "1",
		               "--out",   fixture,  NULL };
	return run_cli(args, out, sizeof(out), err, sizeof(err)) == 0 ? 0 : -1;
}

static int
teardown(void **state)
{
	(void)state;
	return getenv("MS_KEEP_TEST_DIR") ? 0 : ms_test_rmtree(root);
}

/* ---- a file system that will not grow the merge output ----------------- */

/* The merge outputs of a run of the fixture with no limit: the first
 * merge's (the picker's first choice depends on the publications alone,
 * so a limited run starts the same merge), the largest of the day's and
 * the finalize's. Measured once, for both tests below. */
typedef struct outputs {
	uint64_t first, day, finalize;
} outputs;

static int
output_sizes(void *ctx, const ms_ev_merge *m)
{
	outputs *o = ctx;
	uint64_t b = m->output.compressed_bytes;
	if (m->seq == 1)
		o->first = b;
	uint64_t *slot = strcmp(m->lane, "finalize") == 0 ? &o->finalize
	                                                  : &o->day;
	if (b > *slot)
		*slot = b;
	return 0;
}

static outputs
unlimited_outputs(void)
{
	static outputs o;
	static bool measured;
	if (measured)
		return o;
	char db[PATH_MAX], work[PATH_MAX], out[8192], err[8192];
	path_in(db, sizeof(db), "unlimited.db");
	path_in(work, sizeof(work), "unlimited.shard");
	const char *args[] = { "run",        "--headless", "--fixture", fixture,
		               "--variant",  "alwayskeep", "--db",      db,
		               "--work-dir", work,         NULL };
	assert_int_equal(run_cli(args, out, sizeof(out), err, sizeof(err)), 0);
	ms_evdb *ev = NULL;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_evdb_open(&ev, db, &eb), 0);
	assert_int_equal(ms_evdb_each_merge(ev, NULL, output_sizes, &o, &eb),
	                 0);
	ms_evdb_close(ev);
	measured = true;
	return o;
}

/* Run the fixture as `name` (db, work: its paths) with files limited to
 * `limit` bytes: it must fail (exit 2) with one line saying why, which
 * goes to one; its whole standard error to err. */
static void
limited_run(const char *name, rlim_t limit, char *db, char *work, char *err,
            size_t errn, char *one, size_t onen)
{
	char ep[PATH_MAX];
	snprintf(db, PATH_MAX, "%s/%s.db", root, name);
	snprintf(work, PATH_MAX, "%s/%s.shard", root, name);
	snprintf(ep, sizeof(ep), "%s/%s.err", root, name);
	const char *args[] = { "run",        "--headless", "--fixture", fixture,
		               "--variant",  "alwayskeep", "--db",      db,
		               "--work-dir", work,         NULL };
	int st = bt_wait(bt_spawn(args, false, NULL, ep, NULL, limit),
	                 HUNG_S);
	FILE *f = fopen(ep, "r");
	assert_non_null(f);
	err[fread(err, 1, errn - 1, f)] = '\0';
	fclose(f);
	fprintf(stderr, "%s", err);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 2);
	/* One line: the merge, the file and the error. */
	const char *prefix = "mergescope run: the run failed: ";
	const char *line = strstr(err, prefix);
	assert_non_null(line);
	assert_null(strstr(line + strlen(prefix), prefix));
	snprintf(one, onen, "%.*s", (int)strcspn(line, "\n"), line);
}

static void
test_disk_full_merge(void **state)
{
	(void)state;
	/* The limit lies above every fixture file and below the first
	 * merge's output, halfway: every fixture part copies under it,
	 * what fails is a merge's output, the only file that grows past
	 * it, and the first merge already does. */
	uint64_t largest = (uint64_t)largest_file(fixture);
	uint64_t first = unlimited_outputs().first;
	fprintf(stderr, "largest fixture file %llu bytes, first merge output "
	                "%llu bytes\n",
	        (unsigned long long)largest, (unsigned long long)first);
	assert_true(largest < first);
	rlim_t limit = (rlim_t)(largest + (first - largest) / 2);
	assert_true(largest < limit && limit < first);
	char db[PATH_MAX], work[PATH_MAX], err[16384], one[2048];
	limited_run("full", limit, db, work, err, sizeof(err), one,
	            sizeof(one));
	assert_non_null(strstr(one, "merge #"));
	assert_non_null(strstr(one, work));
	assert_non_null(strstr(one, "/tmp/core-"));
	assert_non_null(strstr(one, "): data: "));
	assert_non_null(strstr(one, "File too large"));
	assert_non_null(strstr(one, "3 failures in a row"));
	/* And the step of the day it failed at. */
	if (!strstr(one, " (in the primary phase, after "))
		fail_msg("said: %s", one);
	/* The progress said each failure as it came, before the run's
	 * end (before: nothing while the engine backed off). */
	const char *said = strstr(err, " failed merge");
	assert_non_null(said);
	assert_true(said < strstr(err, "mergescope run: the run failed: "));
	while (said > err && said[-1] != '\n')
		said--;
	assert_true(strncmp(said, "merge #", 7) == 0);
	assert_non_null(strstr(said, "File too large ("));

	/* Recorded as failed, with the message; no input was consumed. */
	ms_ev_run_end end;
	run_end(db, &end);
	assert_string_equal(end.status, "failed");
	assert_non_null(strstr(end.error, "File too large"));
	ms_evdb *ev = NULL;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_evdb_open(&ev, db, &eb), 0);
	uint64_t removed = 0;
	assert_int_equal(ms_evdb_each_part(ev, count_removed, &removed, &eb),
	                 0);
	ms_evdb_close(ev);
	assert_int_equal(removed, 0);
	assert_int_equal(end.merges_completed, 0);
	assert_false(exists(work));

	/* The fixture is exactly as built. */
	char out[8192], e2[8192];
	const char *check[] = { "fixture", "check", fixture, NULL };
	assert_int_equal(run_cli(check, out, sizeof(out), e2, sizeof(e2)), 0);
}

/* Out of file descriptors (RLIMIT_NOFILE 20, as `ulimit -n 20`: enough
 * to stage the day and publish, too few for a merge of 15 inputs): a
 * merge that cannot open its inputs blames none of them, and the third
 * failure in a row stops the run with one line naming the merge, the
 * file, "Too many open files" and the limit, recorded as failed, the
 * scratch shard removed. The inputs used to be blamed (and quarantined)
 * and each failure retried after a longer backoff: the run waited until
 * --wait-timeout (10 minutes by default) and then said only that it gave
 * up waiting. */
static void
test_fd_limit(void **state)
{
	(void)state;
	char db[PATH_MAX], work[PATH_MAX], ep[PATH_MAX], err[16384];
	path_in(db, sizeof(db), "nofile.db");
	path_in(work, sizeof(work), "nofile.shard");
	path_in(ep, sizeof(ep), "nofile.err");
	/* --wait-timeout bounds the old behaviour's wait. */
	const char *args[] = {
		"run",        "--headless", "--fixture",      fixture,
		"--variant",  "alwayskeep", "--db",           db,
		"--work-dir", work,         "--wait-timeout", "60",
		NULL
	};
	struct rlimit old;
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	struct rlimit low = { 20, old.rlim_max };
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	pid_t pid = bt_spawn(args, false, NULL, ep, NULL, 0);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	int st = bt_wait(pid, HUNG_S);
	FILE *f = fopen(ep, "r");
	assert_non_null(f);
	err[fread(err, 1, sizeof(err) - 1, f)] = '\0';
	fclose(f);
	fprintf(stderr, "%s", err);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 2);
	const char *line = strstr(err, "mergescope run: the run failed: ");
	assert_non_null(line);
	assert_non_null(strstr(line, "merge #"));
	assert_non_null(strstr(line, work));
	assert_non_null(strstr(line, "Too many open files"));
	assert_non_null(strstr(line, "3 failures in a row"));
	assert_non_null(strstr(line, "may have 20 files open (ulimit -n)"));
	ms_ev_run_end end;
	run_end(db, &end);
	assert_string_equal(end.status, "failed");
	assert_non_null(strstr(end.error, "Too many open files"));
	assert_false(exists(work));
}

/* A file system that refuses to grow only the finalize's output: the
 * finalize is dispatched again like any merge that failed, and its third
 * file-system failure in a row stops the run with one line naming the
 * merge, the file and the error, recorded as failed. It used to be
 * dispatched once: the day ended unfinalized, "complete", exit 1 with
 * gates failing and no word of the error. */
static void
test_disk_full_finalize(void **state)
{
	(void)state;
	outputs o = unlimited_outputs();
	uint64_t largest = (uint64_t)largest_file(fixture);
	if (o.day > largest)
		largest = o.day;
	fprintf(stderr, "largest fixture file or day output %llu bytes, "
	                "finalize output %llu bytes\n",
	        (unsigned long long)largest, (unsigned long long)o.finalize);
	assert_true(largest < o.finalize);
	rlim_t limit = (rlim_t)(largest + (o.finalize - largest) / 2);

	char db[PATH_MAX], work[PATH_MAX], err[16384], one[2048];
	limited_run("full-fin", limit, db, work, err, sizeof(err), one,
	            sizeof(one));
	assert_non_null(strstr(one, "(finalize lane, "));
	assert_non_null(strstr(one, work));
	assert_non_null(strstr(one, "File too large"));
	assert_non_null(strstr(one, "3 failures in a row"));
	assert_null(strstr(err, "gates failed"));

	ms_ev_run_end end;
	run_end(db, &end);
	assert_string_equal(end.status, "failed");
	assert_non_null(strstr(end.error, "finalize lane"));
	assert_false(exists(work));
	char out[8192];
	const char *check[] = { "fixture", "check", fixture, NULL };
	assert_int_equal(run_cli(check, out, sizeof(out), err, sizeof(err)),
	                 0);
}

/* ---- signals ------------------------------------------------------------ */

static void
signal_run(int sig, bool default_work_dir)
{
	char db[PATH_MAX], work[PATH_MAX], json[PATH_MAX], name[64];
	snprintf(name, sizeof(name), "sig-%d.db", sig);
	path_in(db, sizeof(db), name);
	snprintf(name, sizeof(name), "sig-%d.shard", sig);
	path_in(work, sizeof(work), name);
	snprintf(name, sizeof(name), "sig-%d.json", sig);
	path_in(json, sizeof(json), name);
	const char *args[] = { "run",       "--headless", "--fixture",  fixture,
		               "--variant", "alwayskeep", "--db",       db,
		               "--json",    json,         "--work-dir", work,
		               NULL };
	if (default_work_dir)
		args[10] = NULL;
	char ep[PATH_MAX];
	snprintf(name, sizeof(name), "sig-%d.err", sig);
	path_in(ep, sizeof(ep), name);
	pid_t pid = bt_spawn(args, false, NULL, ep, NULL, 0);
	char alt[PATH_MAX] = "";
	if (default_work_dir)
		default_shard(db, (long)pid, work, sizeof(work), alt,
		              sizeof(alt));
	/* The run is open once its scratch shard has its owner record
	 * (the signals are blocked before that and taken after). */
	char own[PATH_MAX + 32], alt_own[PATH_MAX + 32];
	snprintf(own, sizeof(own), "%s/%s", work, MS_OWNER_FILE);
	snprintf(alt_own, sizeof(alt_own), "%s/%s", alt, MS_OWNER_FILE);
	for (int i = 0; i < HUNG_S * 1000 && !exists(own); i++) {
		if (alt[0] && exists(alt_own)) {
			snprintf(work, sizeof(work), "%s", alt);
			break;
		}
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	ms_owner o;
	int orc = ms_owner_read(work, &o, NULL);
	kill(pid, sig);
	int st = bt_wait(pid, HUNG_S);
	char buf[8192] = "";
	FILE *f = fopen(ep, "r");
	if (f) {
		buf[fread(buf, 1, sizeof(buf) - 1, f)] = '\0';
		fclose(f);
	}
	fprintf(stderr, "signal %d:\n%s\n", sig, buf);
	assert_int_equal(orc, 0);
	assert_string_equal(o.kind, "scratch");
	assert_int_equal(o.pid, pid);
	assert_string_equal(o.note, db);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 128 + sig);
	char want[64];
	snprintf(want, sizeof(want), "stopped by %s;",
	         sig == SIGINT    ? "SIGINT"
	         : sig == SIGTERM ? "SIGTERM"
	         : sig == SIGHUP  ? "SIGHUP"
	                          : "SIGPIPE");
	assert_non_null(strstr(buf, want));
	assert_non_null(strstr(buf, "recorded as aborted"));
	ms_ev_run_end end;
	run_end(db, &end);
	assert_string_equal(end.status, "aborted");
	assert_false(exists(work));
	/* --json is written all the same: the report of what was
	 * recorded, status aborted. */
	char js[1 << 16] = "";
	f = fopen(json, "r");
	assert_non_null(f);
	js[fread(js, 1, sizeof(js) - 1, f)] = '\0';
	fclose(f);
	assert_non_null(strstr(js, "\"status\":\"aborted\""));
	assert_non_null(strstr(buf, "report as JSON in "));
}

static void
test_sigint(void **state)
{
	(void)state;
	signal_run(SIGINT, true);
}

/* A run started with SIGHUP ignored (as under nohup) is not stopped by
 * one: it runs to its end, status complete, exit status 0. */
static void
test_sighup_ignored_at_start(void **state)
{
	(void)state;
	char db[PATH_MAX], work[PATH_MAX], ep[PATH_MAX];
	path_in(db, sizeof(db), "nohup.db");
	path_in(work, sizeof(work), "nohup.shard");
	path_in(ep, sizeof(ep), "nohup.err");
	const char *args[] = { "run",        "--headless", "--fixture",
		               fixture,      "--variant",  "alwayskeep",
		               "--db",       db,           "--work-dir",
		               work,         NULL };
	struct sigaction ign, old;
	memset(&ign, 0, sizeof(ign));
	ign.sa_handler = SIG_IGN;
	sigaction(SIGHUP, &ign, &old);
	pid_t pid = bt_spawn(args, false, NULL, ep, NULL, 0);
	sigaction(SIGHUP, &old, NULL);
	char own[PATH_MAX + 32];
	snprintf(own, sizeof(own), "%s/%s", work, MS_OWNER_FILE);
	for (int i = 0; i < HUNG_S * 1000 && !exists(own); i++) {
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	assert_true(exists(own));
	kill(pid, SIGHUP);
	int st = bt_wait(pid, HUNG_S);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	ms_ev_run_end end;
	run_end(db, &end);
	assert_string_equal(end.status, "complete");
}

static void
test_sigterm(void **state)
{
	(void)state;
	signal_run(SIGTERM, false);
}

static void
test_sighup(void **state)
{
	(void)state;
	signal_run(SIGHUP, false);
}

static void
test_sigpipe(void **state)
{
	(void)state;
	signal_run(SIGPIPE, false);
}

/* ---- leftovers and `clean` ---------------------------------------------- */

static void
mkdir_file(const char *dir, const char *file)
{
	char p[PATH_MAX];
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(p, sizeof(p), "%s/%s", dir, file);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs("x\n", f);
	fclose(f);
}

static void
age_days(const char *path, int days)
{
	struct timespec t[2];
	clock_gettime(CLOCK_REALTIME, &t[0]);
	t[0].tv_sec -= (time_t)days * 86400;
	t[1] = t[0];
	assert_int_equal(utimensat(AT_FDCWD, path, t, 0), 0);
}

/* SIGKILL every child of pid (its watcher): the processes whose
 * /proc/N/stat names pid as their parent. */
static void
kill_children(pid_t pid)
{
	DIR *d = opendir("/proc");
	assert_non_null(d);
	struct dirent *de;
	while ((de = readdir(d))) {
		char path[300], st[512];
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		size_t n = fread(st, 1, sizeof(st) - 1, f);
		fclose(f);
		st[n] = '\0';
		/* pid (comm) state ppid ...: comm may hold spaces */
		const char *rp = strrchr(st, ')');
		char state;
		long ppid = 0;
		if (rp && sscanf(rp + 1, " %c %ld", &state, &ppid) == 2 &&
		    ppid == (long)pid)
			kill((pid_t)atol(de->d_name), SIGKILL);
	}
	closedir(d);
}

/* The line of `clean` output that names path (NULL if none). */
static const char *
line_of(const char *out, const char *path, char *buf, size_t n)
{
	const char *p = strstr(out, path);
	if (!p)
		return NULL;
	const char *b = p;
	while (b > out && b[-1] != '\n')
		b--;
	snprintf(buf, n, "%.*s", (int)strcspn(b, "\n"), b);
	return buf;
}

static void
test_leftovers_and_clean(void **state)
{
	(void)state;
	char out[65536], err[16384], line[4096];
	char runs[PATH_MAX], db[PATH_MAX];
	snprintf(runs, sizeof(runs), "%s/mergescope/runs", cache);

	/* A run killed outright (default database and scratch place). */
	const char *args[] = { "run",       "--headless", "--fixture", fixture,
		               "--variant", "alwayskeep", NULL };
	int efd = -1;
	pid_t pid = bt_spawn(args, false, NULL, NULL, &efd, 0);
	char buf[8192];
	/* Said once the run is open (its scratch shard made), before it
	 * starts: the kill lands mid-run. */
	assert_true(read_until(efd, ".sqlite\n", buf, sizeof(buf)));
	/* Its watcher first (which would record the run and remove the
	 * shard of a run killed alone): what a kill of the whole process
	 * group, or a machine that went down, leaves. */
	kill_children(pid);
	kill(pid, SIGKILL);
	bt_wait(pid, HUNG_S);
	close(efd);
	const char *at = strstr(buf, "events recorded in ");
	assert_non_null(at);
	snprintf(db, sizeof(db), "%.*s", (int)strcspn(at + 19, "\n"), at + 19);
	char scratch[PATH_MAX], alt[PATH_MAX];
	default_shard(db, (long)pid, scratch, sizeof(scratch), alt,
	              sizeof(alt));
	if (!exists(scratch))
		snprintf(scratch, sizeof(scratch), "%s", alt);
	assert_true(exists(scratch));

	/* A fixture build killed while it writes its temporary directory. */
	const char *fx[] = { "fixture", "build", "--preset", "smoke",
		             "--seed",  "99",    NULL };
	pid_t fpid = bt_spawn(fx, false, NULL, NULL, NULL, 0);
	char ftmp[PATH_MAX], fown[PATH_MAX + 32];
	snprintf(ftmp, sizeof(ftmp), "%s/mergescope/smoke-99.tmp-%ld", cache,
	         (long)fpid);
	snprintf(fown, sizeof(fown), "%s/%s", ftmp, MS_OWNER_FILE);
	for (int i = 0; i < HUNG_S * 100 && !exists(fown); i++) {
		struct timespec ts = { 0, 10000000 };
		nanosleep(&ts, NULL);
	}
	kill(fpid, SIGKILL);
	bt_wait(fpid, HUNG_S);
	assert_true(exists(fown));

	/* Frozen shards (an old one and a new one, made before owner
	 * records existed) and a directory a live process owns. */
	char frozen_old[PATH_MAX], frozen_new[PATH_MAX], live[PATH_MAX];
	snprintf(frozen_old, sizeof(frozen_old), "%s/a.sqlite.shard.frozen-3",
	         runs);
	snprintf(frozen_new, sizeof(frozen_new), "%s/b.sqlite.shard.frozen-4",
	         runs);
	snprintf(live, sizeof(live), "%s/live.shard", runs);
	mkdir_file(frozen_old, "frozen.txt");
	mkdir_file(frozen_new, "frozen.txt");
	age_days(frozen_old, 8);
	assert_int_equal(mkdir(live, 0755), 0);
	assert_int_equal(ms_owner_write(live, "scratch", "", NULL), 0);

	/* A user's own SQLite database (schema version 0, no owner
	 * record) and a text file, both named like run databases: not
	 * mergescope's, never removed. */
	char mine[PATH_MAX], text[PATH_MAX];
	snprintf(mine, sizeof(mine), "%s/mine.sqlite", runs);
	snprintf(text, sizeof(text), "%s/notes.sqlite", runs);
	uint8_t hdr[4096] = "SQLite format 3";
	hdr[16] = 0x10; /* page size 4096; every other byte 0 */
	FILE *fp = fopen(mine, "wb");
	assert_non_null(fp);
	assert_int_equal(fwrite(hdr, 1, sizeof(hdr), fp), sizeof(hdr));
	assert_int_equal(fclose(fp), 0);
	fp = fopen(text, "w");
	assert_non_null(fp);
	fputs("not a database\n", fp);
	assert_int_equal(fclose(fp), 0);

	/* clean --dry-run lists everything and removes nothing. */
	const char *dry[] = { "clean", "--dry-run", NULL };
	assert_int_equal(run_cli(dry, out, sizeof(out), err, sizeof(err)), 0);
	fprintf(stderr, "%s", out);
	assert_non_null(line_of(out, scratch, line, sizeof(line)));
	assert_non_null(strstr(line, "scratch shard"));
	assert_non_null(strstr(line, "would remove"));
	assert_non_null(line_of(out, ftmp, line, sizeof(line)));
	assert_non_null(strstr(line, "unfinished fixture"));
	assert_non_null(strstr(line, "would remove"));
	assert_non_null(line_of(out, frozen_old, line, sizeof(line)));
	assert_non_null(strstr(line, "frozen shard"));
	assert_non_null(strstr(line, "kept"));
	assert_non_null(strstr(line, "8d"));
	assert_non_null(line_of(out, live, line, sizeof(line)));
	assert_non_null(strstr(line, "in use"));
	assert_non_null(line_of(out, db, line, sizeof(line)));
	assert_non_null(strstr(line, "run database"));
	assert_non_null(strstr(line, "kept"));
	assert_true(exists(scratch) && exists(ftmp));

	/* The next run removes the leftovers and says how much it freed. */
	char db2[PATH_MAX];
	path_in(db2, sizeof(db2), "after.db");
	assert_int_equal(run_disabled(db2, out, sizeof(out), err, sizeof(err)),
	                 0);
	const char *said = strstr(err, "mergescope run: removed ");
	assert_non_null(said);
	assert_non_null(strstr(said, "leftover"));
	assert_non_null(strstr(said, " freed"));
	assert_false(exists(scratch));
	assert_false(exists(ftmp));
	assert_true(exists(live));
	assert_true(exists(frozen_old) && exists(frozen_new) && exists(db));

	/* --frozen --older-than 7d: only the old frozen shard. */
	const char *fr[] = { "clean", "--frozen", "--older-than", "7d", NULL };
	assert_int_equal(run_cli(fr, out, sizeof(out), err, sizeof(err)), 0);
	fprintf(stderr, "%s", out);
	assert_false(exists(frozen_old));
	assert_true(exists(frozen_new));
	assert_true(exists(db));
	/* --runs: the databases with their -wal and -shm; a live owner's
	 * directory stays whatever is asked. */
	const char *rn[] = { "clean", "--runs", "--frozen", NULL };
	assert_int_equal(run_cli(rn, out, sizeof(out), err, sizeof(err)), 0);
	fprintf(stderr, "%s", out);
	char side[PATH_MAX + 8];
	snprintf(side, sizeof(side), "%s-wal", db);
	assert_false(exists(db));
	assert_false(exists(side));
	assert_false(exists(frozen_new));
	assert_true(exists(live));
	assert_true(exists(mine) && exists(text));
	const char *all[] = { "clean", "--runs", NULL };
	assert_int_equal(run_cli(all, out, sizeof(out), err, sizeof(err)), 0);
	assert_non_null(line_of(out, mine, line, sizeof(line)));
	assert_null(strstr(line, "run database"));
	assert_true(exists(mine) && exists(text));
	assert_int_equal(unlink(mine), 0);
	assert_int_equal(unlink(text), 0);

	const char *bad[] = { "clean", "--older-than", "soon", NULL };
	assert_int_equal(run_cli(bad, out, sizeof(out), err, sizeof(err)), 64);
	assert_non_null(strstr(err, "--older-than \"soon\""));
}

/* ---- scratch roots kept apart (MERGESCOPE_SCRATCH) ---------------------- */

/* dir, made with an owner record of a process that has ended: what a
 * killed run leaves. */
static void
dead_leftover(const char *dir)
{
	assert_int_equal(ms_fs_mkdir_p(dir, 0700, NULL), 0);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(ms_owner_write(dir, "scratch", "", NULL) == 0 ? 0 : 1);
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	ms_owner o;
	assert_int_equal(ms_owner_read(dir, &o, NULL), 0);
	assert_false(ms_owner_alive(&o));
}

/* Children see MERGESCOPE_SCRATCH=value (unset when NULL). */
static void
scratch_env(const char *value)
{
	if (value)
		assert_int_equal(setenv(MS_SCRATCH_ENV, value, 1), 0);
	else
		assert_int_equal(unsetenv(MS_SCRATCH_ENV), 0);
}

/* A bad MERGESCOPE_SCRATCH: `clean`, `run` and `fixture build` refuse it
 * with one line naming the variable, its value and what is wrong, exit
 * status `status`: 64 for words that show it, 2 for a path that turns out
 * wrong once looked at (a file there was 64), as for a path on the
 * command line. */
static void
refused_root(const char *value, const char *what, int status)
{
	char out[8192], err[8192], want[PATH_MAX + 64], db[PATH_MAX];
	snprintf(want, sizeof(want), "MERGESCOPE_SCRATCH \"%s\": %s", value,
	         what);
	path_in(db, sizeof(db), "refused.db");
	scratch_env(value);
	const char *cl[] = { "clean", "--dry-run", NULL };
	assert_int_equal(run_cli(cl, out, sizeof(out), err, sizeof(err)),
	                 status);
	assert_non_null(strstr(err, "mergescope clean: "));
	assert_non_null(strstr(err, want));
	assert_int_equal(run_disabled(db, out, sizeof(out), err, sizeof(err)),
	                 status);
	assert_non_null(strstr(err, "mergescope run: "));
	assert_non_null(strstr(err, want));
	assert_false(exists(db));
	char fx[PATH_MAX];
	path_in(fx, sizeof(fx), "refused-fixture");
	const char *fb[] = { "fixture", "build", "--preset", "smoke", "--seed",
		             "3",       "--out", fx,         NULL };
	assert_int_equal(run_cli(fb, out, sizeof(out), err, sizeof(err)),
	                 status);
	assert_non_null(strstr(err, "mergescope fixture build: "));
	assert_non_null(strstr(err, want));
	assert_false(exists(fx));
}

static void
test_scratch_roots_apart(void **state)
{
	(void)state;
	char *old =
	        getenv(MS_SCRATCH_ENV) ? strdup(getenv(MS_SCRATCH_ENV)) : NULL;
	char out[65536], err[16384], line[4096];
	char a[PATH_MAX], b[PATH_MAX], in_a[PATH_MAX + 32], in_b[PATH_MAX + 32];
	path_in(a, sizeof(a), "root-a/scratch");
	path_in(b, sizeof(b), "root-b");
	snprintf(in_a, sizeof(in_a), "%s/a.sqlite.101.shard", a);
	snprintf(in_b, sizeof(in_b), "%s/b.sqlite.202.shard", b);
	dead_leftover(in_a);
	dead_leftover(in_b);

	/* `clean` in root A lists A's leftover and never looks at B. */
	scratch_env(a);
	const char *dry[] = { "clean", "--dry-run", NULL };
	assert_int_equal(run_cli(dry, out, sizeof(out), err, sizeof(err)), 0);
	assert_non_null(line_of(out, in_a, line, sizeof(line)));
	assert_non_null(strstr(line, "would remove"));
	assert_null(strstr(out, b));

	/* A run in root A sweeps A's leftover, leaves B's, and puts its
	 * shard in A (when A has room for the day). */
	char db[PATH_MAX];
	path_in(db, sizeof(db), "roots.db");
	assert_int_equal(run_disabled(db, out, sizeof(out), err, sizeof(err)),
	                 0);
	assert_non_null(strstr(err, "mergescope run: removed 1 leftover "));
	assert_false(exists(in_a));
	assert_true(exists(in_b));
	char want[PATH_MAX + 32];
	snprintf(want, sizeof(want), "work dir %s/roots.db.", a);
	const char *wd = strstr(err, "work dir ");
	assert_non_null(wd);
	snprintf(line, sizeof(line), "%.*s", (int)strcspn(wd, "\n"), wd);
	assert_true(strstr(line, want) == line ||
	            strstr(line, " has ") != NULL);

	/* B's own sweep removes it. */
	scratch_env(b);
	const char *cl[] = { "clean", NULL };
	assert_int_equal(run_cli(cl, out, sizeof(out), err, sizeof(err)), 0);
	assert_non_null(line_of(out, in_b, line, sizeof(line)));
	assert_non_null(strstr(line, "removed"));
	assert_false(exists(in_b));

	/* Refused: a relative path, a file, an empty value is the default. */
	refused_root("scratch/here", "not an absolute path", 64);
	char file[PATH_MAX], below[PATH_MAX + 8];
	path_in(file, sizeof(file), "not-a-dir");
	assert_int_equal(ms_test_put(file, "x\n"), 0);
	refused_root(file, "not a directory", 2);
	snprintf(below, sizeof(below), "%s/sub", file);
	refused_root(below, strerror(ENOTDIR), 2);
	scratch_env("");
	assert_int_equal(run_cli(dry, out, sizeof(out), err, sizeof(err)), 0);
	scratch_env(old);
	free(old);
}

/* A --work-dir another run has taken while it is still empty (its lock
 * held) is refused, not shared: two runs staging into one shard fail
 * each other, and the first to end deletes the other's shard. */
static void
test_work_dir_taken(void **state)
{
	(void)state;
	char wd[PATH_MAX], db[PATH_MAX], out[8192], err[8192];
	path_in(wd, sizeof(wd), "shared-work-dir");
	path_in(db, sizeof(db), "taken.db");
	assert_int_equal(mkdir(wd, 0755), 0);
	int fd = open(wd, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(flock(fd, LOCK_EX | LOCK_NB), 0);
	const char *args[] = { "run",       "--headless", "--fixture",
		               fixture,     "--variant",  "disabled",
		               "--work-dir", wd,          "--db",
		               db,          NULL };
	assert_int_equal(run_cli(args, out, sizeof(out), err, sizeof(err)),
	                 2);
	assert_non_null(strstr(err, wd));
	assert_non_null(strstr(err, "in use by another run"));
	assert_true(exists(wd)); /* the other run's, left alone */
	DIR *d = opendir(wd);
	assert_non_null(d);
	struct dirent *de;
	int n = 0;
	while ((de = readdir(d)))
		n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
	closedir(d);
	assert_int_equal(n, 0);
	close(fd);

	/* Released: the next run takes it, and removes it at its end. */
	path_in(db, sizeof(db), "taken-after.db");
	args[9] = db;
	assert_int_equal(run_cli(args, out, sizeof(out), err, sizeof(err)),
	                 0);
	assert_false(exists(wd));
}

/* The entry of dir whose name starts with prefix and which holds an owner
 * record, into out; false when there is none. */
static bool
owned_entry(const char *dir, const char *prefix, char *out, size_t n)
{
	DIR *d = opendir(dir);
	if (!d)
		return false;
	struct dirent *de;
	bool found = false;
	while (!found && (de = readdir(d))) {
		if (strncmp(de->d_name, prefix, strlen(prefix)) != 0)
			continue;
		char own[PATH_MAX + 300];
		snprintf(out, n, "%s/%s", dir, de->d_name);
		snprintf(own, sizeof(own), "%s/%s", out, MS_OWNER_FILE);
		found = exists(own);
	}
	closedir(d);
	return found;
}

/* merge-once killed by SIGTERM while it repeats: its fresh copies are in
 * the scratch directory under an owner record (not in $TMPDIR, where
 * nothing looks), so `clean` finds and removes them. */
static void
test_merge_once_killed(void **state)
{
	(void)state;
	char *old =
	        getenv(MS_SCRATCH_ENV) ? strdup(getenv(MS_SCRATCH_ENV)) : NULL;
	char *old_tmp = getenv("TMPDIR") ? strdup(getenv("TMPDIR")) : NULL;
	char out[65536], err[16384], line[4096];
	char db[PATH_MAX], work[PATH_MAX], frozen[PATH_MAX + 16];
	char sroot[PATH_MAX], tmp[PATH_MAX], left[PATH_MAX];
	path_in(db, sizeof(db), "once.db");
	path_in(work, sizeof(work), "once.shard");
	snprintf(frozen, sizeof(frozen), "%s.frozen-3", work);
	const char *fz[] = { "run",         "--headless", "--fixture",
		             fixture,       "--variant",  "disabled",
		             "--freeze-at", "merge=3",    "--work-dir",
		             work,          "--db",       db,
		             NULL };
	assert_int_equal(run_cli(fz, out, sizeof(out), err, sizeof(err)), 0);
	assert_true(exists(frozen));
	path_in(sroot, sizeof(sroot), "root-once");
	path_in(tmp, sizeof(tmp), "tmpdir-once");
	assert_int_equal(mkdir(sroot, 0700), 0);
	assert_int_equal(mkdir(tmp, 0700), 0);
	scratch_env(sroot);
	assert_int_equal(setenv("TMPDIR", tmp, 1), 0);

	const char *mo[] = { "merge-once", "--frozen", frozen, "--variant",
		             "disabled",   "--reps",   "1000", NULL };
	pid_t pid = bt_spawn(mo, false, NULL, NULL, NULL, 0);
	bool found = false;
	for (int i = 0; i < HUNG_S * 100 && !found; i++) {
		found = owned_entry(sroot, "mergescope-once-", left,
		                    sizeof(left));
		struct timespec ts = { 0, 10000000 };
		nanosleep(&ts, NULL);
	}
	kill(pid, SIGTERM);
	int st = bt_wait(pid, HUNG_S);
	assert_true(found);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
	ms_owner o;
	assert_int_equal(ms_owner_read(left, &o, NULL), 0);
	assert_string_equal(o.kind, "scratch");
	assert_int_equal(o.pid, pid);
	assert_non_null(strstr(o.note, frozen));
	/* Nothing in $TMPDIR. */
	DIR *d = opendir(tmp);
	assert_non_null(d);
	struct dirent *de;
	while ((de = readdir(d)))
		assert_true(!strcmp(de->d_name, ".") ||
		            !strcmp(de->d_name, ".."));
	closedir(d);

	/* `clean` removes it (a repetition left running by the killed
	 * parent may still write there for a moment: tried again). */
	const char *cl[] = { "clean", NULL };
	int rc = 2;
	for (int i = 0; i < 50 && rc != 0; i++) {
		rc = run_cli(cl, out, sizeof(out), err, sizeof(err));
		if (rc) {
			struct timespec ts = { 0, 100000000 };
			nanosleep(&ts, NULL);
		}
	}
	fprintf(stderr, "%s", out);
	assert_int_equal(rc, 0);
	assert_false(exists(left));
	assert_true(line_of(out, left, line, sizeof(line)) != NULL ||
	            strstr(out, "mergescope-once-") != NULL);
	scratch_env(old);
	free(old);
	if (old_tmp)
		setenv("TMPDIR", old_tmp, 1);
	else
		unsetenv("TMPDIR");
	free(old_tmp);
}

/* A leftover that cannot be removed (a tree deeper than ms_fs_rm_tree
 * descends, which stops even root): `clean` names it and says why. */
static void
test_clean_says_why(void **state)
{
	(void)state;
	char *old =
	        getenv(MS_SCRATCH_ENV) ? strdup(getenv(MS_SCRATCH_ENV)) : NULL;
	char out[65536], err[16384], a[PATH_MAX], in_a[PATH_MAX + 32];
	char deep[PATH_MAX];
	path_in(a, sizeof(a), "root-why");
	snprintf(in_a, sizeof(in_a), "%s/c.sqlite.303.shard", a);
	dead_leftover(in_a);
	size_t n = (size_t)snprintf(deep, sizeof(deep), "%s", in_a);
	for (int i = 0; i < MS_FS_MAX_DEPTH + 4; i++) {
		n += (size_t)snprintf(deep + n, sizeof(deep) - n, "/d");
		assert_int_equal(mkdir(deep, 0755), 0);
	}
	scratch_env(a);
	const char *cl[] = { "clean", NULL };
	assert_int_equal(run_cli(cl, out, sizeof(out), err, sizeof(err)), 2);
	fprintf(stderr, "%s", err);
	char want[PATH_MAX + 64];
	snprintf(want, sizeof(want),
	         "mergescope clean: cannot remove %s: ", in_a);
	const char *why = strstr(err, want);
	assert_non_null(why);
	why += strlen(want);
	/* The system's words, not a bare code. */
	assert_true(strncmp(why, strerror(ENOTEMPTY),
	                    strlen(strerror(ENOTEMPTY))) == 0 ||
	            strncmp(why, strerror(ELOOP), strlen(strerror(ELOOP))) ==
	                    0);
	scratch_env(old);
	free(old);
	char cmd[PATH_MAX + 16];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", a);
	assert_int_equal(system(cmd), 0);
}

/* ---- what `clean` must leave alone, and how much it says ------------ */

/* The size column of a `clean` line, in bytes (ms_fmt_bytes's form). */
static double
line_bytes(const char *line)
{
	assert_true(strlen(line) > 28);
	char *end = NULL;
	double v = strtod(line + 19, &end);
	assert_non_null(end);
	const char *units = "BKMGT";
	const char *u = strchr(units, *end);
	assert_non_null(u);
	for (long i = 0; i < u - units; i++)
		v *= 1024.0;
	return v;
}

/* Disk space of path itself (allocated blocks). */
static double
blocks_of(const char *path)
{
	struct stat st;
	assert_int_equal(lstat(path, &st), 0);
	return (double)st.st_blocks * 512.0;
}

/* A scratch root of its own for one test (under this test's directory);
 * the previous MERGESCOPE_SCRATCH into *old (to give back). */
static void
own_root(const char *name, char *dir, size_t n, char **old)
{
	*old = getenv(MS_SCRATCH_ENV) ? strdup(getenv(MS_SCRATCH_ENV)) : NULL;
	path_in(dir, n, name);
	assert_int_equal(ms_fs_mkdir_p(dir, 0700, NULL), 0);
	scratch_env(dir);
}

static void
root_back(char *old)
{
	scratch_env(old);
	free(old);
}

/* Run to the end with its scratch shard at work (not where `clean` looks)
 * and its database at db_arg (NULL: the default, in the cache's runs/);
 * stopped once open (its owner record DB-owner there),
 * `clean --runs` must keep the database as in use, and the run must end
 * complete without its owner record. */
static void
live_db_kept(const char *work, const char *db_arg)
{
	char out[65536], err[16384], line[4096], buf[8192];
	char db[PATH_MAX], rec[PATH_MAX + 16];
	const char *args[] = {
		"run",        "--headless", "--fixture",
		fixture,      "--variant",  "alwayskeep",
		"--work-dir", work,         db_arg ? "--db" : NULL,
		db_arg,       NULL
	};
	int efd = -1;
	pid_t pid = bt_spawn(args, false, NULL, NULL, &efd, 0);
	/* Said once the run is open, before it starts: stopped there. */
	assert_true(read_until(efd, ".sqlite\n", buf, sizeof(buf)));
	kill(pid, SIGSTOP);
	const char *at = strstr(buf, "events recorded in ");
	assert_non_null(at);
	snprintf(db, sizeof(db), "%.*s", (int)strcspn(at + 19, "\n"), at + 19);
	snprintf(rec, sizeof(rec), "%s-owner", db);
	bool rec_there = exists(rec);

	const char *cl[] = { "clean", "--runs", NULL };
	int rc = run_cli(cl, out, sizeof(out), err, sizeof(err));
	fprintf(stderr, "%s", out);
	kill(pid, SIGCONT);
	assert_true(rec_there);
	assert_int_equal(rc, 0);
	assert_non_null(line_of(out, db, line, sizeof(line)));
	assert_non_null(strstr(line, "run database"));
	assert_non_null(strstr(line, "in use"));
	assert_non_null(strstr(out, "left alone: "));
	assert_true(exists(db));

	int st = bt_wait(pid, HUNG_S);
	close(efd);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_true(exists(db));
	assert_false(exists(rec));
	ms_ev_run_end end;
	run_end(db, &end);
	assert_string_equal(end.status, "complete");
}

/* A run whose scratch shard is not where `clean` looks (--work-dir
 * elsewhere) still records to its database in the cache's runs/: while
 * it runs, `clean --runs` lists that database as in use and leaves it
 * (it used to remove the database under the live run); at its end the
 * run's owner file beside the database is gone and the database whole. */
static void
test_clean_live_db_elsewhere(void **state)
{
	(void)state;
	char work[PATH_MAX];
	path_in(work, sizeof(work), "elsewhere.shard");
	live_db_kept(work, NULL);
}

/* A database in the cache's runs/ with the longest name SQLite takes
 * there (NAME_MAX - 8, room for its "-journal"): its owner record's
 * temporary name, DB-owner.tmp-PID, passed NAME_MAX, so the run failed
 * with "File name too long". That name is now cut short before its
 * "-owner.tmp-PID", and the run goes as any. */
static void
test_live_db_longest_name(void **state)
{
	(void)state;
	char work[PATH_MAX], runs[PATH_MAX], db[PATH_MAX + NAME_MAX];
	char name[NAME_MAX + 1];
	path_in(work, sizeof(work), "longname.shard");
	memset(name, 'q', NAME_MAX - 8 - 7);
	snprintf(name + NAME_MAX - 8 - 7, 8, ".sqlite");
	snprintf(runs, sizeof(runs), "%s/mergescope/runs", cache);
	assert_int_equal(ms_fs_mkdir_p(runs, 0755, NULL), 0);
	snprintf(db, sizeof(db), "%s/%s", runs, name);
	live_db_kept(work, db);
}

/* A frozen shard a running merge-once replays is in use: `clean --frozen`
 * leaves it (it used to remove it, and the merge-once failed), whatever
 * path the merge-once was given for it. */
static void
test_clean_frozen_in_use_by_merge_once(void **state)
{
	(void)state;
	char *old = NULL;
	char out[65536], err[16384], line[4096];
	char sroot[PATH_MAX], db[PATH_MAX], work[PATH_MAX + 16];
	char frozen[PATH_MAX + 32], given[PATH_MAX + 64], left[PATH_MAX];
	own_root("root-mo-live", sroot, sizeof(sroot), &old);
	path_in(db, sizeof(db), "mo-live.db");
	snprintf(work, sizeof(work), "%s/mo.shard", sroot);
	snprintf(frozen, sizeof(frozen), "%s.frozen-3", work);
	const char *fz[] = { "run",         "--headless", "--fixture",
		             fixture,       "--variant",  "disabled",
		             "--freeze-at", "merge=3",    "--work-dir",
		             work,          "--db",       db,
		             NULL };
	assert_int_equal(run_cli(fz, out, sizeof(out), err, sizeof(err)), 0);
	assert_true(exists(frozen));
	/* Another spelling of the same directory. */
	snprintf(given, sizeof(given), "%s/./mo.shard.frozen-3", sroot);

	const char *mo[] = { "merge-once", "--frozen", given, "--variant",
		             "disabled",   "--reps",   "1000", NULL };
	pid_t pid = bt_spawn(mo, false, NULL, NULL, NULL, 0);
	bool found = false;
	for (int i = 0; i < HUNG_S * 100 && !found; i++) {
		found = owned_entry(sroot, "mergescope-once-", left,
		                    sizeof(left));
		struct timespec ts = { 0, 10000000 };
		nanosleep(&ts, NULL);
	}
	const char *cl[] = { "clean", "--frozen", NULL };
	int rc = run_cli(cl, out, sizeof(out), err, sizeof(err));
	fprintf(stderr, "%s", out);
	bool kept = exists(frozen);
	kill(pid, SIGTERM);
	bt_wait(pid, HUNG_S);
	assert_true(found);
	assert_int_equal(rc, 0);
	assert_true(kept);
	assert_non_null(line_of(out, frozen, line, sizeof(line)));
	assert_non_null(strstr(line, "frozen shard"));
	assert_non_null(strstr(line, "in use"));

	/* With the merge-once gone it goes when asked. */
	rc = 2;
	for (int i = 0; i < 50 && rc != 0; i++) {
		rc = run_cli(cl, out, sizeof(out), err, sizeof(err));
		if (rc) {
			struct timespec ts = { 0, 100000000 };
			nanosleep(&ts, NULL);
		}
	}
	assert_int_equal(rc, 0);
	assert_false(exists(frozen));
	root_back(old);
}

/* Sizes are disk space with each file counted once, as du counts them: a
 * leftover whose parts are hard links of one another (a run's
 * checkpoints link the shard's parts) is not counted once per link. */
static void
test_clean_sizes_as_du(void **state)
{
	(void)state;
	char *old = NULL;
	char out[65536], err[16384], line[4096];
	char sroot[PATH_MAX], dir[PATH_MAX + 32], f[PATH_MAX + 64],
	        l[PATH_MAX + 64], own[PATH_MAX + 64];
	own_root("root-sizes", sroot, sizeof(sroot), &old);
	snprintf(dir, sizeof(dir), "%s/s.sqlite.404.shard.ckpt", sroot);
	dead_leftover(dir);
	snprintf(f, sizeof(f), "%s/part", dir);
	FILE *fp = fopen(f, "w");
	assert_non_null(fp);
	char block[4096];
	memset(block, 'p', sizeof(block));
	for (int i = 0; i < 1024; i++) /* 4 MiB */
		assert_int_equal(fwrite(block, 1, sizeof(block), fp),
		                 sizeof(block));
	assert_int_equal(fclose(fp), 0);
	for (int i = 0; i < 3; i++) {
		snprintf(l, sizeof(l), "%s/link-%d", dir, i);
		assert_int_equal(link(f, l), 0);
	}
	snprintf(own, sizeof(own), "%s/%s", dir, MS_OWNER_FILE);
	double want = blocks_of(dir) + blocks_of(own) + blocks_of(f);
	/* A second leftover holding one more link of the same part (the
	 * shard beside its checkpoints): its own size counts the part, the
	 * total does not count it twice. */
	char dir2[PATH_MAX + 32], own2[PATH_MAX + 64];
	snprintf(dir2, sizeof(dir2), "%s/s.sqlite.404.shard", sroot);
	dead_leftover(dir2);
	snprintf(l, sizeof(l), "%s/part", dir2);
	assert_int_equal(link(f, l), 0);
	snprintf(own2, sizeof(own2), "%s/%s", dir2, MS_OWNER_FILE);
	double want2 = blocks_of(dir2) + blocks_of(own2) + blocks_of(f);
	double total = want + blocks_of(dir2) + blocks_of(own2);
	/* A cache of its own: nothing else is listed. */
	char *old_cache = strdup(cache), own_cache[PATH_MAX];
	path_in(own_cache, sizeof(own_cache), "cache-sizes");
	setenv("XDG_CACHE_HOME", own_cache, 1);

	const char *dry[] = { "clean", "--dry-run", NULL };
	int rc = run_cli(dry, out, sizeof(out), err, sizeof(err));
	setenv("XDG_CACHE_HOME", old_cache, 1);
	free(old_cache);
	fprintf(stderr, "%s", out);
	assert_int_equal(rc, 0);
	assert_non_null(line_of(out, dir, line, sizeof(line)));
	double got = line_bytes(line);
	/* Three significant digits are printed. */
	assert_true(got > want * 0.99 && got < want * 1.01);
	assert_non_null(strstr(line, "checkpoints"));
	char needle[PATH_MAX + 40];
	snprintf(needle, sizeof(needle), "%s\n", dir2);
	assert_non_null(line_of(out, needle, line, sizeof(line)));
	got = line_bytes(line);
	assert_true(got > want2 * 0.99 && got < want2 * 1.01);
	/* The whole listing. */
	char sum[128];
	const char *t = strstr(out, "2 items, ");
	assert_non_null(t);
	snprintf(sum, sizeof(sum), "%-19s%s", "", t + 9);
	got = line_bytes(sum);
	assert_true(got > total * 0.99 && got < total * 1.01);

	/* A run's sweep says what it freed the same way. */
	char db[PATH_MAX];
	path_in(db, sizeof(db), "sizes.db");
	assert_int_equal(run_disabled(db, out, sizeof(out), err, sizeof(err)),
	                 0);
	const char *said = strstr(err, "mergescope run: removed 2 leftovers");
	assert_non_null(said);
	said = strstr(said, ", ");
	assert_non_null(said);
	snprintf(sum, sizeof(sum), "%-19s%s", "", said + 2);
	got = line_bytes(sum);
	assert_true(got > total * 0.99 && got < total * 1.01);
	assert_false(exists(dir) || exists(dir2));
	root_back(old);
}

/* What `clean` does not recognise, or whose owner it cannot tell (a
 * record cut short, here naming a process that has ended), is listed as
 * left alone and kept; a cut record is named on standard error with what
 * was expected. A run's owner file left without its database by a killed
 * run is removed. */
static void
test_clean_leaves_unknown(void **state)
{
	(void)state;
	char *old = NULL;
	char out[65536], err[16384], line[4096];
	char sroot[PATH_MAX], file[PATH_MAX + 16], bare[PATH_MAX + 16],
	        cut[PATH_MAX + 16], rec[PATH_MAX + 64], ghost[PATH_MAX];
	own_root("root-unknown", sroot, sizeof(sroot), &old);
	snprintf(file, sizeof(file), "%s/notes.txt", sroot);
	snprintf(bare, sizeof(bare), "%s/mine", sroot);
	snprintf(cut, sizeof(cut), "%s/c.sqlite.505.shard", sroot);
	FILE *fp = fopen(file, "w");
	assert_non_null(fp);
	fputs("mine\n", fp);
	fclose(fp);
	assert_int_equal(mkdir(bare, 0755), 0);
	/* The record of a process that has ended, cut after its pid. */
	dead_leftover(cut);
	ms_owner o;
	assert_int_equal(ms_owner_read(cut, &o, NULL), 0);
	snprintf(rec, sizeof(rec), "%s/%s", cut, MS_OWNER_FILE);
	fp = fopen(rec, "w");
	assert_non_null(fp);
	fprintf(fp, "mergescope-owner 1\nkind scratch\npid %ld", (long)o.pid);
	fclose(fp);
	/* A run's owner file whose run was killed before its database. */
	snprintf(ghost, sizeof(ghost), "%s/mergescope/runs/ghost.sqlite-owner",
	         cache);
	char runs[PATH_MAX];
	snprintf(runs, sizeof(runs), "%s/mergescope/runs", cache);
	assert_int_equal(ms_fs_mkdir_p(runs, 0755, NULL), 0);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(ms_owner_write_file(ghost, "database", "", NULL) ? 1 : 0);
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);

	const char *cl[] = { "clean", NULL };
	assert_int_equal(run_cli(cl, out, sizeof(out), err, sizeof(err)), 0);
	fprintf(stderr, "%s", out);
	const char *const kept[] = { file, bare, cut };
	for (int i = 0; i < 3; i++) {
		assert_true(exists(kept[i]));
		assert_non_null(line_of(out, kept[i], line, sizeof(line)));
		assert_non_null(strstr(line, "left alone"));
	}
	assert_non_null(strstr(line, "unreadable owner"));
	char want[PATH_MAX + 128];
	snprintf(want, sizeof(want), "mergescope clean: left alone %s: %s", cut,
	         rec);
	assert_non_null(strstr(err, want));
	assert_non_null(strstr(err, "not a whole owner record"));
	assert_non_null(strstr(out, "3 not recognised"));
	assert_non_null(line_of(out, ghost, line, sizeof(line)));
	assert_non_null(strstr(line, "removed"));
	assert_false(exists(ghost));
	root_back(old);
}

/* While a live process writes the owner record of run database db (under
 * its temporary name live), the database is in use: --runs keeps it (it
 * was deleted in that moment). Once that record is gone (removed here),
 * the database is a run's like any. */
static void
runs_kept_while_writing(const char *db, const char *live)
{
	char out[65536], err[16384], line[4096];
	const char *runs_cl[] = { "clean", "--runs", NULL };
	assert_int_equal(run_cli(runs_cl, out, sizeof(out), err, sizeof(err)),
	                 0);
	fprintf(stderr, "%s", out);
	assert_non_null(line_of(out, db, line, sizeof(line)));
	assert_non_null(strstr(line, "in use"));
	assert_true(exists(db));
	assert_int_equal(unlink(live), 0);
	assert_int_equal(run_cli(runs_cl, out, sizeof(out), err, sizeof(err)),
	                 0);
	assert_false(exists(db));
}

/* A run's owner record written under its temporary name and left there
 * (the run killed before the rename), DB-owner.tmp-PID in runs/: `clean`
 * lists it as an unfinished owner record and removes it once PID is gone
 * (a whole record or one cut short alike), and keeps it while PID runs. */
static void
test_clean_owner_tmp(void **state)
{
	(void)state;
	char *old = NULL;
	char out[65536], err[16384], line[4096], sroot[PATH_MAX];
	char runs[PATH_MAX], db[PATH_MAX + 16], rec[PATH_MAX + 32];
	char dead[2][PATH_MAX + 64], live[PATH_MAX + 64];
	own_root("root-owner-tmp", sroot, sizeof(sroot), &old);
	snprintf(runs, sizeof(runs), "%s/mergescope/runs", cache);
	assert_int_equal(ms_fs_mkdir_p(runs, 0755, NULL), 0);
	/* Beside its database, as a killed run leaves it. */
	snprintf(db, sizeof(db), "%s/tmprec.sqlite", runs);
	FILE *fp = fopen(db, "w");
	assert_non_null(fp);
	fclose(fp);
	snprintf(rec, sizeof(rec), "%s%s", db, "-owner");
	/* Two processes that wrote theirs and ended: the second record is
	 * cut short (only the pid in its name says whose it was). */
	for (int i = 0; i < 2; i++) {
		fflush(NULL);
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			char tmp[PATH_MAX + 64];
			snprintf(tmp, sizeof(tmp), "%s.tmp-%ld", rec,
			         (long)getpid());
			_exit(ms_owner_write_file(rec, "database", db, NULL) ||
			                      rename(rec, tmp)
			              ? 1
			              : 0);
		}
		int st = 0;
		assert_int_equal(waitpid(pid, &st, 0), pid);
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		snprintf(dead[i], sizeof(dead[i]), "%s.tmp-%ld", rec,
		         (long)pid);
		assert_true(exists(dead[i]));
	}
	assert_int_equal(truncate(dead[1], 20), 0);
	/* This process's, which runs. */
	assert_int_equal(ms_owner_write_file(rec, "database", db, NULL), 0);
	snprintf(live, sizeof(live), "%s.tmp-%ld", rec, (long)getpid());
	assert_int_equal(rename(rec, live), 0);

	const char *dry[] = { "clean", "--dry-run", NULL };
	assert_int_equal(run_cli(dry, out, sizeof(out), err, sizeof(err)), 0);
	for (int i = 0; i < 2; i++) {
		assert_non_null(line_of(out, dead[i], line, sizeof(line)));
		assert_non_null(strstr(line, "unfinished owner"));
		assert_non_null(strstr(line, "would remove"));
		assert_true(exists(dead[i]));
	}
	const char *cl[] = { "clean", NULL };
	assert_int_equal(run_cli(cl, out, sizeof(out), err, sizeof(err)), 0);
	fprintf(stderr, "%s", out);
	for (int i = 0; i < 2; i++) {
		assert_non_null(line_of(out, dead[i], line, sizeof(line)));
		assert_non_null(strstr(line, "unfinished owner"));
		assert_non_null(strstr(line, "removed"));
		assert_false(exists(dead[i]));
	}
	assert_non_null(line_of(out, live, line, sizeof(line)));
	assert_non_null(strstr(line, "unfinished owner"));
	assert_non_null(strstr(line, "in use"));
	assert_true(exists(live));
	runs_kept_while_writing(db, live);
	root_back(old);
}

/* The verdict oracle's table file left under its name in the cache root,
 * as a run killed between making it and removing the name leaves it
 * where the file system has no O_TMPFILE: `oracle.table-PID-XXXXXX`,
 * empty. `clean` removes it once PID is gone and keeps it while PID runs
 * (it listed it as not recognised and left it for good); one without the
 * PID (an older build's) is removed too, one with bytes in it (no run's)
 * is left alone. */
static void
test_clean_oracle_table_name(void **state)
{
	(void)state;
	char *old = NULL;
	char out[65536], err[16384], line[4096], sroot[PATH_MAX];
	char top[PATH_MAX], dead[PATH_MAX + 64], live[PATH_MAX + 64];
	char bare[PATH_MAX + 64], full[PATH_MAX + 64];
	own_root("root-oracle-name", sroot, sizeof(sroot), &old);
	snprintf(top, sizeof(top), "%s/mergescope", cache);
	assert_int_equal(ms_fs_mkdir_p(top, 0755, NULL), 0);
	/* A process that made it and ended there. */
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char p[PATH_MAX + 64];
		snprintf(p, sizeof(p), "%s/oracle.table-%ld-XXXXXX", top,
		         (long)getpid());
		int fd = mkstemp(p);
		_exit(fd >= 0 && write(fds[1], p, strlen(p) + 1) > 0 ? 0 : 1);
	}
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_true(read(fds[0], dead, sizeof(dead)) > 0);
	close(fds[0]);
	close(fds[1]);
	snprintf(live, sizeof(live), "%s/oracle.table-%ld-Ab12cD", top,
	         (long)getpid());
	snprintf(bare, sizeof(bare), "%s/oracle.table-Ab12cD", top);
	snprintf(full, sizeof(full), "%s/oracle.table-%ld-Zz0099", top,
	         (long)pid);
	assert_int_equal(ms_test_put(live, ""), 0);
	assert_int_equal(ms_test_put(bare, ""), 0);
	assert_int_equal(ms_test_put(full, "not a run's\n"), 0);

	const char *cl[] = { "clean", NULL };
	assert_int_equal(run_cli(cl, out, sizeof(out), err, sizeof(err)), 0);
	fprintf(stderr, "%s", out);
	const char *const gone[] = { dead, bare };
	for (int i = 0; i < 2; i++) {
		assert_non_null(line_of(out, gone[i], line, sizeof(line)));
		assert_non_null(strstr(line, "oracle table file"));
		assert_non_null(strstr(line, "removed"));
		assert_false(exists(gone[i]));
	}
	assert_non_null(line_of(out, live, line, sizeof(line)));
	assert_non_null(strstr(line, "in use"));
	assert_true(exists(live));
	assert_non_null(line_of(out, full, line, sizeof(line)));
	assert_non_null(strstr(line, "left alone"));
	assert_true(exists(full));
	assert_int_equal(unlink(live), 0);
	assert_int_equal(unlink(full), 0);
	root_back(old);
}

/* This process writing the owner record of a database whose name is near
 * NAME_MAX: its temporary name is DB's name cut short plus
 * "-owner.tmp-PID", and `clean --runs` keeps the database, found by the
 * record's note (it took the cut name for the database and removed the
 * database itself). */
static void
test_clean_owner_tmp_long_name(void **state)
{
	(void)state;
	char *old = NULL;
	char sroot[PATH_MAX];
	char runs[PATH_MAX], db[PATH_MAX + NAME_MAX], live[PATH_MAX + NAME_MAX];
	char rec[PATH_MAX + NAME_MAX], name[NAME_MAX + 1], sfx[64];
	own_root("root-owner-tmp-long", sroot, sizeof(sroot), &old);
	snprintf(runs, sizeof(runs), "%s/mergescope/runs", cache);
	assert_int_equal(ms_fs_mkdir_p(runs, 0755, NULL), 0);
	memset(name, 'w', NAME_MAX - 8 - 7);
	snprintf(name + NAME_MAX - 8 - 7, 8, ".sqlite");
	snprintf(db, sizeof(db), "%s/%s", runs, name);
	FILE *fp = fopen(db, "w");
	assert_non_null(fp);
	fclose(fp);
	assert_int_equal(
	        ms_owner_write_beside(db, "-owner", "database", db, NULL), 0);
	/* As the rename before it finds it. */
	snprintf(sfx, sizeof(sfx), "-owner.tmp-%ld", (long)getpid());
	assert_int_equal(ms_fs_name_beside(live, sizeof(live), db, sfx), 0);
	assert_true(strlen(live) - strlen(runs) - 1 <= NAME_MAX);
	assert_int_equal(strncmp(live, db, strlen(runs) + 200), 0);
	snprintf(rec, sizeof(rec), "%s-owner", db);
	assert_int_equal(rename(rec, live), 0);

	runs_kept_while_writing(db, live);
	root_back(old);
}

/* --older-than: 0 (any age) and ages beyond a year are taken; what is not
 * a whole number or decimal with s, m, h or d, or beyond 100000d, is
 * refused (64) naming the option, the value and what was expected. */
static void
test_clean_older_than_values(void **state)
{
	(void)state;
	char *old = NULL;
	char out[65536], err[16384], sroot[PATH_MAX];
	own_root("root-ages", sroot, sizeof(sroot), &old);
	const char *good[] = { "0", "400d", "100000d", "1.5h", "90" };
	for (size_t i = 0; i < sizeof(good) / sizeof(*good); i++) {
		const char *cl[] = { "clean", "--dry-run", "--older-than",
			             good[i], NULL };
		assert_int_equal(
		        run_cli(cl, out, sizeof(out), err, sizeof(err)), 0);
	}
	const char *bad[] = { "100001d", "1e1s", "0x10s", "-5s",
		              "5x",      "1.s",  "" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
		const char *cl[] = { "clean", "--dry-run", "--older-than",
			             bad[i], NULL };
		assert_int_equal(
		        run_cli(cl, out, sizeof(out), err, sizeof(err)), 64);
		char want[128];
		snprintf(want, sizeof(want),
		         "mergescope clean: --older-than \"%s\": expected an "
		         "age",
		         bad[i]);
		assert_non_null(strstr(err, want));
		assert_non_null(strstr(err, "100000d"));
	}
	root_back(old);
}

/* Owner records: a process is named by pid, start time and boot, so a pid
 * now used by another process is not the owner; a killed process not yet
 * reaped (a zombie) owns nothing; a record cut short names no one. */
static void
test_owner_records(void **state)
{
	(void)state;
	char dir[PATH_MAX], rec[PATH_MAX + 64];
	path_in(dir, sizeof(dir), "owner-unit");
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(rec, sizeof(rec), "%s/%s", dir, MS_OWNER_FILE);

	/* This process: alive; the same pid with another start: not. */
	assert_int_equal(ms_owner_write(dir, "scratch", "n", NULL), 0);
	ms_owner o;
	assert_int_equal(ms_owner_read(dir, &o, NULL), 0);
	assert_int_equal(o.pid, getpid());
	assert_true(ms_owner_alive(&o));
	o.start += 1;
	assert_false(ms_owner_alive(&o));

	/* A child that ended and is not reaped yet. */
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(ms_owner_write(dir, "scratch", "z", NULL) ? 1 : 0);
	siginfo_t si;
	memset(&si, 0, sizeof(si));
	assert_int_equal(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT), 0);
	assert_int_equal(ms_owner_read(dir, &o, NULL), 0);
	assert_int_equal(o.pid, pid);
	bool zombie_alive = ms_owner_alive(&o);
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_false(zombie_alive);

	/* Cut short, or a pid that is not a whole number: no owner. */
	static const char *const cut[] = {
		"mergescope-owner 1\nkind scratch\npid 1",
		"mergescope-owner 1\nkind scratch\npid 1\nstart 5\nboot b\n",
		("mergescope-owner 1\nkind scratch\npid 12x\nstart 5\nboot "
		 "b\nnote \n"),
	};
	for (size_t i = 0; i < sizeof(cut) / sizeof(*cut); i++) {
		FILE *fp = fopen(rec, "w");
		assert_non_null(fp);
		fputs(cut[i], fp);
		fclose(fp);
		ms_errbuf eb = { "" };
		assert_int_equal(ms_owner_read(dir, &o, &eb), MS_ERR_FORMAT);
		assert_non_null(strstr(eb.msg, rec));
		assert_int_equal(o.pid, 0);
	}
}

/* ---- a tight address-space limit (ulimit -v) ------------------------- */

/* Run the binary with args under `ulimit -v kib` and `ulimit -s 8192`
 * (the stack the C library gives plugin threads by default, so the
 * figures do not depend on the caller's), in the C locale (whose
 * mapping is small and the same everywhere); fail the test unless it
 * exits 0, its standard output into out. The limits are set here around
 * the fork, as the child inherits them. Skipped in a sanitizer build:
 * its shadow memory is address space. */
static void
run_limited(const char *const *args, rlim_t kib, char *out, size_t on)
{
	if (SANITIZED)
		skip();
	char op[PATH_MAX], ep[PATH_MAX], err[16384];
	path_in(op, sizeof(op), "limited.out");
	path_in(ep, sizeof(ep), "limited.err");
	char *lc = getenv("LC_ALL") ? strdup(getenv("LC_ALL")) : NULL;
	setenv("LC_ALL", "C", 1);
	struct rlimit as, stack;
	assert_int_equal(getrlimit(RLIMIT_AS, &as), 0);
	assert_int_equal(getrlimit(RLIMIT_STACK, &stack), 0);
	struct rlimit las = { kib << 10, as.rlim_max };
	struct rlimit lstack = { (rlim_t)8 << 20, stack.rlim_max };
	if (lstack.rlim_max < lstack.rlim_cur)
		lstack.rlim_cur = lstack.rlim_max;
	assert_int_equal(setrlimit(RLIMIT_STACK, &lstack), 0);
	assert_int_equal(setrlimit(RLIMIT_AS, &las), 0);
	pid_t pid = bt_spawn(args, false, op, ep, NULL, 0);
	assert_int_equal(setrlimit(RLIMIT_AS, &as), 0);
	assert_int_equal(setrlimit(RLIMIT_STACK, &stack), 0);
	if (lc)
		setenv("LC_ALL", lc, 1);
	else
		unsetenv("LC_ALL");
	free(lc);
	int rc = bt_outputs(bt_wait(pid, HUNG_S), op, out, on, ep, err,
	                    sizeof(err));
	if (rc != 0)
		fail_msg("exit %d under ulimit -v %llu: %s", rc,
		         (unsigned long long)kib, err);
}

/* The smoke day replayed with skywalking under `ulimit -v 60000`
 * (2 CPUs: two merge workers): every gate passes. The core's threads
 * (merge workers, dispatcher, shard reaper) each had the default 8 MiB
 * stack of address space while touching less than 64 KiB: the run needed
 * about 117,500 KiB and failed below it, with "out of memory" for a merge
 * or a thread that could not start. With them on small stacks it needed
 * about 83,000, as the replay's own threads (controller, oracle, part
 * checker, live reader, commit timer, RSS sampler) still took 8 MiB
 * each; with theirs small too it passes from about 36,000 (ms_thread.h),
 * so 60,000 leaves a margin of 20 MiB either way for other machines'
 * libraries. */
static void
test_address_space_replay(void **state)
{
	(void)state;
	char db[PATH_MAX], out[65536];
	path_in(db, sizeof(db), "limited.db");
	const char *args[] = { "run",       "--headless", "--fixture",
		               fixture,     "--variant",  "skywalking",
		               "--profile", "cpus=2",     "--envelope",
		               "emulated",  "--db",       db,
		               NULL };
	run_limited(args, 60000, out, sizeof(out));
	assert_non_null(strstr(out, " gates, 0 failed"));
}

/* A smoke fixture built under `ulimit -v 30000` starts only the writers
 * the address space has room for, says so, and writes the same bytes as
 * the setup's build with all eight. It started eight whatever the room
 * and ran out of memory materializing a batch. */
static void
test_address_space_fixture_build(void **state)
{
	(void)state;
	char fx[PATH_MAX], out[65536];
	path_in(fx, sizeof(fx), "limited-fixture");
	const char *args[] = { "fixture", "build",  "--preset",
		               "smoke",   "--seed", "1",
		               "--out",   fx,       NULL };
	run_limited(args, 30000, out, sizeof(out));
	assert_non_null(strstr(out, " of 8 writers: ulimit -v leaves "));
	char cmd[3 * PATH_MAX];
	snprintf(cmd, sizeof(cmd), "diff -r '%s' '%s'", fixture, fx);
	const char *diff[] = { cmd, NULL };
	int st = bt_wait(bt_spawn(diff, true, NULL, NULL, NULL, 0), HUNG_S);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/* A process bt_spawn started dies with the test that started it, also
 * after an exec: a test killed on its timeout left its mergescope
 * running (it now gets SIGKILL). A stand-in test (a child) starts one
 * that would run 30 s and ends once it has exec'd; this test, the
 * orphan's reaper, sees how it ended. */
static void
test_children_die_with_the_test(void **state)
{
	(void)state;
	assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	int to_test[2];
	assert_int_equal(pipe(to_test), 0);
	fflush(NULL);
	pid_t mid = fork();
	assert_true(mid >= 0);
	if (mid == 0) {
		int execd[2]; /* EOF once the child has exec'd */
		if (pipe2(execd, O_CLOEXEC) != 0)
			_exit(1);
		const char *args[] = { "exec sleep 30", NULL };
		pid_t pid = bt_spawn(args, true, NULL, NULL, NULL, 0);
		close(execd[1]);
		char c;
		bool gone = read(execd[0], &c, 1) == 0;
		_exit(gone && write(to_test[1], &pid, sizeof(pid)) ==
		                      (ssize_t)sizeof(pid)
		              ? 0
		              : 1);
	}
	close(to_test[1]);
	pid_t pid = 0;
	assert_int_equal(read(to_test[0], &pid, sizeof(pid)),
	                 (ssize_t)sizeof(pid));
	close(to_test[0]);
	int st = ms_test_child_wait(mid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	st = ms_test_child_wait(pid); /* ours now, as the reaper */
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGKILL);
	assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 0), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_children_die_with_the_test),
		cmocka_unit_test(test_disk_full_merge),
		cmocka_unit_test(test_disk_full_finalize),
		cmocka_unit_test(test_fd_limit),
		cmocka_unit_test(test_address_space_replay),
		cmocka_unit_test(test_address_space_fixture_build),
		cmocka_unit_test(test_sigint),
		cmocka_unit_test(test_sighup_ignored_at_start),
		cmocka_unit_test(test_sigterm),
		cmocka_unit_test(test_sighup),
		cmocka_unit_test(test_sigpipe),
		cmocka_unit_test(test_leftovers_and_clean),
		cmocka_unit_test(test_scratch_roots_apart),
		cmocka_unit_test(test_work_dir_taken),
		cmocka_unit_test(test_clean_says_why),
		cmocka_unit_test(test_merge_once_killed),
		cmocka_unit_test(test_clean_live_db_elsewhere),
		cmocka_unit_test(test_live_db_longest_name),
		cmocka_unit_test(test_clean_frozen_in_use_by_merge_once),
		cmocka_unit_test(test_clean_sizes_as_du),
		cmocka_unit_test(test_clean_leaves_unknown),
		cmocka_unit_test(test_clean_owner_tmp),
		cmocka_unit_test(test_clean_oracle_table_name),
		cmocka_unit_test(test_clean_owner_tmp_long_name),
		cmocka_unit_test(test_clean_older_than_values),
		cmocka_unit_test(test_owner_records),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
