/*
 * test_plugin_faults.c - plugins that misbehave inside Decide (or open),
 * in real headless runs of the `mergescope` executable (a child process
 * each) on a smoke fixture: a Decide that never returns times out three
 * times, opens the circuit and the process still exits with the run
 * complete and its gates; an open() that never returns fails the run's
 * start after the open timeout, naming the plugin's file; a Decide that
 * segfaults, aborts or calls exit() ends the run as aborted in the event
 * database with the plugin and the signal named, the scratch shard
 * removed, and an exit status that says so. With
 * --plugin-host process the same plugins cost a fail-open ("crashed",
 * "timeout") and the run completes; the shipped sampler decides the same
 * through the host as in process.
 *
 * The executable is copied into the test's directory next to a plugins/
 * link to the test plugins, so that its plugin directory (the one beside
 * it) holds the test-only plugins.
 */
#define _GNU_SOURCE /* pipe2 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "fixture_testlib.h"
#include "san_testlib.h"
#include "testdir.h"

#include "ms_fs.h"
#include "ms_fixture.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char root[256];
static char fixture[512];
static char exe[512];

/* Generous: the looping run waits 3 x 5 s of Decide timeouts. A run still
 * going after this is a hang, and the test fails saying so. */
#define WATCHDOG_S 240

static int
copy_file(const char *from, const char *to)
{
	int in = open(from, O_RDONLY);
	int out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	char buf[65536];
	ssize_t n = 0;
	while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n) {
			n = -1;
			break;
		}
	int rc = in < 0 || out < 0 || n < 0 ? -1 : 0;
	if (in >= 0)
		close(in);
	if (out >= 0 && close(out) != 0)
		rc = -1;
	return rc;
}

static int
setup(void **state)
{
	(void)state;
	snprintf(root, sizeof(root), "/tmp/ms-test-pf-XXXXXX");
	if (!mkdtemp(root))
		return -1;
	char p[600], q[600];
	snprintf(p, sizeof(p), "%s/cache", root);
	setenv("XDG_CACHE_HOME", p, 1);
	/* In the sanitizer build, leave the fatal signals to the program's
	 * own handlers, as in a plain build. */
	san_fatal_signals_default();
	snprintf(p, sizeof(p), "%s/bin", root);
	if (mkdir(p, 0755) != 0)
		return -1;
	snprintf(exe, sizeof(exe), "%s/bin/mergescope", root);
	if (copy_file(MS_BINARY_DIR "/tui/mergescope", exe) != 0)
		return -1;
	/* plugins/: the test plugins and the shipped skywalking. */
	snprintf(q, sizeof(q), "%s/plugins", root);
	if (mkdir(q, 0755) != 0)
		return -1;
	DIR *d = opendir(MS_TEST_PLUGIN_DIR);
	struct dirent *de;
	while (d && (de = readdir(d))) {
		if (!strstr(de->d_name, ".so"))
			continue;
		char from[600], to[600];
		snprintf(from, sizeof(from), "%s/%s", MS_TEST_PLUGIN_DIR,
		         de->d_name);
		snprintf(to, sizeof(to), "%s/%s", q, de->d_name);
		if (symlink(from, to) != 0)
			return -1;
	}
	if (d)
		closedir(d);
	snprintf(p, sizeof(p), "%s/skywalking.so", q);
	if (symlink(MS_PLUGIN_DIR "/skywalking.so", p) != 0)
		return -1;
	snprintf(fixture, sizeof(fixture), "%s/smoke", root);
	return ms_test_smoke_fixture(fixture, 1);
}

static int
teardown(void **state)
{
	(void)state;
	return root[0] && ms_fs_rm_tree(root, NULL) != 0 ? -1 : 0;
}

static char *
slurp(const char *path)
{
	char *buf = ms_test_read(path, 1 << 20, NULL);
	return buf ? buf : calloc(1, 1);
}

typedef struct run_out {
	int status; /* waitpid status of the executable */
	char *out, *err;
	char db[600], work[600];
} run_out;

/* Start `mergescope run --headless --fixture F --chain CHAIN --db D
 * --work-dir W --plugin-host HOST`, its output into files named after
 * name; returns its pid. */
static pid_t
spawn_chain_db(const char *name, const char *chain, const char *host,
               const char *db, run_out *r)
{
	char outp[600], errp[600];
	if (db)
		snprintf(r->db, sizeof(r->db), "%s", db);
	else
		snprintf(r->db, sizeof(r->db), "%s/%s.sqlite", root, name);
	snprintf(r->work, sizeof(r->work), "%s/%s.shard", root, name);
	snprintf(outp, sizeof(outp), "%s/%s.out", root, name);
	snprintf(errp, sizeof(errp), "%s/%s.err", root, name);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int o = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int e = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (o < 0 || e < 0)
			_exit(126);
		dup2(o, STDOUT_FILENO);
		dup2(e, STDERR_FILENO);
		execl(exe, exe, "run", "--headless", "--fixture", fixture,
		      "--chain", chain, "--db", r->db, "--work-dir", r->work,
		      "--plugin-host", host, (char *)NULL);
		_exit(127);
	}
	return pid;
}
#define spawn_chain(name, chain, host, r)                                      \
	spawn_chain_db(name, chain, host, NULL, r)

/* Wait for the run started as name to end (or fail after WATCHDOG_S);
 * its status and output into r. */
static void
wait_chain(pid_t pid, const char *name, const char *chain, run_out *r)
{
	char outp[600], errp[600];
	snprintf(outp, sizeof(outp), "%s/%s.out", root, name);
	snprintf(errp, sizeof(errp), "%s/%s.err", root, name);
	int st = 0;
	time_t end = time(NULL) + WATCHDOG_S;
	pid_t w;
	while ((w = waitpid(pid, &st, WNOHANG)) == 0 && time(NULL) < end) {
		struct timespec ts = { 0, 50000000L };
		nanosleep(&ts, NULL);
	}
	if (w == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		fail_msg("mergescope run --chain %s did not exit within %d s",
		         chain, WATCHDOG_S);
	}
	r->status = st;
	r->out = slurp(outp);
	r->err = slurp(errp);
}

/* Run `mergescope run ...` (spawn_chain) to its end. */
static void
run_chain_host(const char *name, const char *chain, const char *host,
               run_out *r)
{
	wait_chain(spawn_chain(name, chain, host, r), name, chain, r);
}

static void
run_chain(const char *name, const char *chain, run_out *r)
{
	run_chain_host(name, chain, "inproc", r);
}

static void
run_free(run_out *r)
{
	free(r->out);
	free(r->err);
}

/* One text value of the event database (first row, first column). */
static void
db_text(const char *db, const char *sql, char *buf, size_t n)
{
	sqlite3 *h = NULL;
	sqlite3_stmt *st = NULL;
	buf[0] = '\0';
	assert_int_equal(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL),
	                 SQLITE_OK);
	/* The database may be locked a moment by a writer: the watcher of a
	 * killed run recovers its journal and records the end while a test
	 * polls (SQLITE_BUSY on prepare, seen under load). */
	sqlite3_busy_timeout(h, 30000);
	assert_int_equal(sqlite3_prepare_v2(h, sql, -1, &st, NULL), SQLITE_OK);
	if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
		snprintf(buf, n, "%s", sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	sqlite3_close(h);
}

static bool
exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

/* A run that went on to its end with nothing sampled: that gate fails
 * (exit status 1), the others pass, and the run is recorded complete. */
static void
assert_complete_unsampled(const run_out *r)
{
	assert_true(WIFEXITED(r->status));
	assert_int_equal(WEXITSTATUS(r->status), 1);
	assert_non_null(strstr(r->out, "FAIL  sampling_exercised"));
	assert_non_null(strstr(r->out, "PASS  event_count"));
	char v[256];
	db_text(r->db, "SELECT status FROM run", v, sizeof(v));
	assert_string_equal(v, "complete");
}

/* A plugin whose stats() never returns counts alike under both hosts:
 * the plugin log names stats() once, no call fails open, plugin_health
 * passes (the counters are not the plugin's verdicts). Before, in process
 * it was only logged, while its plugin host's start timed out and failed
 * the call open: plugin_health failed with --plugin-host process only. */
static void
test_stats_hang_counts_alike(void **state)
{
	(void)state;
	static const char *hosts[] = { "inproc", "process" };
	for (int i = 0; i < 2; i++) {
		char name[32];
		snprintf(name, sizeof(name), "statshang-%s", hosts[i]);
		run_out r;
		run_chain_host(name, "tp_statshang", hosts[i], &r);
		fprintf(stderr, "%s: status %d\n%s", hosts[i], r.status, r.err);
		assert_true(WIFEXITED(r.status));
		assert_int_equal(WEXITSTATUS(r.status), 0);
		assert_non_null(strstr(r.out, "PASS  plugin_health            "
		                              "0 events"));
		assert_non_null(strstr(r.out, "stats() did not return within"));
		char v[256];
		db_text(r.db,
		        "SELECT COALESCE(SUM(fail_timeout + fail_crashed + "
		        "fail_host_error), 0) FROM merge_link",
		        v, sizeof(v));
		assert_string_equal(v, "0");
		run_free(&r);
	}
}

static void
test_loop_times_out_and_exits(void **state)
{
	(void)state;
	/* Three links that never return: each call times out, the third
	 * opens the circuit; closing the chain leaves the calls behind. */
	run_out r;
	run_chain("loop", "tp_loop,tp_loop,tp_loop", &r);
	assert_complete_unsampled(&r);
	char v[256];
	db_text(r.db,
	        "SELECT count(*) || ' ' || group_concat(DISTINCT fail_open) "
	        "FROM merge_link WHERE fail_open != ''",
	        v, sizeof(v));
	assert_string_equal(v, "3 timeout");
	assert_false(exists(r.work));
	run_free(&r);
}

/* A plugin whose open() never returns: in either host mode the run
 * fails to start (exit status 2) after the 5 s open timeout, naming the
 * plugin's file, instead of waiting for ever; nothing is left behind. */
static void
test_open_hang_fails_the_start(void **state)
{
	(void)state;
	const char *hosts[] = { "inproc", "process" };
	for (int i = 0; i < 2; i++) {
		char name[32];
		snprintf(name, sizeof(name), "openhang-%s", hosts[i]);
		run_out r;
		run_chain_host(name, "tp_openhang", hosts[i], &r);
		assert_true(WIFEXITED(r.status));
		assert_int_equal(WEXITSTATUS(r.status), 2);
		if (!strstr(r.err, "tp_openhang.so") ||
		    !strstr(r.err, "open() did not return within 5.000 s"))
			fail_msg("%s: stderr: %s", hosts[i], r.err);
		assert_false(exists(r.work));
		run_free(&r);
	}
}

/* A plugin whose loading never returns (a library constructor, which
 * hangs inside dlopen holding the dynamic loader's lock, or its entry
 * point): in either host mode the run fails to start (exit status 2)
 * after the 5 s open timeout, naming the plugin's file, instead of
 * waiting for ever (the load ran unbounded on the run's thread; and
 * exit() waits for the loader's lock). */
static void
test_load_hang_fails_the_start(void **state)
{
	(void)state;
	const char *kinds[] = { "tp_ctorhang", "tp_entryhang" };
	const char *hosts[] = { "inproc", "process" };
	for (int k = 0; k < 2; k++)
		for (int i = 0; i < 2; i++) {
			char name[48], so[32];
			snprintf(name, sizeof(name), "%s-%s", kinds[k],
			         hosts[i]);
			snprintf(so, sizeof(so), "%s.so", kinds[k]);
			run_out r;
			run_chain_host(name, kinds[k], hosts[i], &r);
			assert_true(WIFEXITED(r.status));
			assert_int_equal(WEXITSTATUS(r.status), 2);
			if (!strstr(r.err, so) ||
			    !strstr(r.err, "loading it (dlopen, its library "
			                   "constructors, its entry point) did "
			                   "not return within 5.000 s"))
				fail_msg("%s: stderr: %s", name, r.err);
			assert_false(exists(r.work));
			run_free(&r);
		}
}

/* A plugin whose close() never returns: the run still ends, complete,
 * each close given 2 s, and the start's check of the chain says so.
 * Before, closing the chain waited for ever. */
static void
test_close_hang_run_ends(void **state)
{
	(void)state;
	const char *hosts[] = { "inproc", "process" };
	for (int i = 0; i < 2; i++) {
		char name[32];
		snprintf(name, sizeof(name), "closehang-%s", hosts[i]);
		run_out r;
		run_chain_host(name, "tp_closehang", hosts[i], &r);
		assert_true(WIFEXITED(r.status));
		assert_int_equal(WEXITSTATUS(r.status), 0);
		if (!strstr(r.err, "tp_closehang.so (tp_closehang): close() "
		                   "did not return within 2.000 s"))
			fail_msg("%s: stderr: %s", name, r.err);
		char v[256];
		db_text(r.db, "SELECT status FROM run", v, sizeof(v));
		assert_string_equal(v, "complete");
		assert_false(exists(r.work));
		run_free(&r);
	}
}

/* want_sig: the signal the process must die of; 0: exit status 2. */
static void
crash_case(const char *kind, int want_sig, const char *want_reason)
{
	char chain[32];
	snprintf(chain, sizeof(chain), "tp_%s", kind);
	run_out r;
	run_chain(kind, chain, &r);
	if (want_sig) {
		assert_true(WIFSIGNALED(r.status));
		assert_int_equal(WTERMSIG(r.status), want_sig);
	} else {
		assert_true(WIFEXITED(r.status));
		assert_int_equal(WEXITSTATUS(r.status), 2);
	}
	char line[300];
	snprintf(line, sizeof(line), "mergescope: aborted: %s\n", want_reason);
	if (!strstr(r.err, line))
		fail_msg("stderr lacks \"%s\":\n%s", line, r.err);
	/* What to do about it: run the plugin apart (before: nothing). */
	const char *hint = "\nmergescope: with --plugin-host process each "
	                   "plugin runs in a process of its own, where a "
	                   "crash in Decide costs only that call";
	if (!strstr(r.err, hint))
		fail_msg("stderr lacks \"%s\":\n%s", hint, r.err);
	char v[256];
	db_text(r.db, "SELECT status FROM run", v, sizeof(v));
	assert_string_equal(v, "aborted");
	db_text(r.db, "SELECT error FROM run", v, sizeof(v));
	assert_string_equal(v, want_reason);
	assert_false(exists(r.work));
	run_free(&r);
}

static void
test_segv_in_decide(void **state)
{
	(void)state;
	crash_case("segv", SIGSEGV,
	           "plugin tp_segv crashed in Decide (SIGSEGV)");
}

static void
test_abort_in_decide(void **state)
{
	(void)state;
	crash_case("abort", SIGABRT,
	           "plugin tp_abort crashed in Decide (SIGABRT)");
}

static void
test_exit_in_decide(void **state)
{
	(void)state;
	/* tp_exit calls exit(3): never mistaken for a normal end. */
	crash_case("exit", 0, "plugin tp_exit called exit() in Decide");
}

/* A plugin that crashes outside Decide, in open(): the run dies of the
 * signal and says in which callback (before: "died of SIGSEGV", no
 * plugin named). */
static void
test_segv_in_open_is_named(void **state)
{
	(void)state;
	run_out r;
	run_chain("cbcrash-open", "tp_cbcrash:{\"where\":\"open\"}", &r);
	assert_true(WIFSIGNALED(r.status));
	assert_int_equal(WTERMSIG(r.status), SIGSEGV);
	const char *line = "mergescope: aborted: plugin tp_cbcrash crashed "
	                   "in open() (SIGSEGV)\n";
	if (!strstr(r.err, line))
		fail_msg("stderr lacks \"%s\":\n%s", line, r.err);
	assert_false(exists(r.work));
	run_free(&r);
}

/* A run killed with SIGKILL (by the user, or by the kernel's OOM killer
 * when its cgroup reaches its memory limit) cannot record its end. The
 * watcher does: the run is recorded as aborted with the reason, its
 * scratch shard removed, and one line says so. Before, the database said
 * nothing (no end record) and the shard stayed until a later run or
 * `mergescope clean` found it. */
static void
test_killed_run_is_recorded(void **state)
{
	(void)state;
	run_out r;
	/* A Decide that never returns holds the run for 3 x 5 s. */
	/* Its database in the cache's runs/, where `clean` looks: the run
	 * keeps an owner record beside it (DB-owner). */
	char runs[600], db[700];
	snprintf(runs, sizeof(runs), "%s/cache/mergescope/runs", root);
	assert_int_equal(ms_fs_mkdir_p(runs, 0755, NULL), 0);
	snprintf(db, sizeof(db), "%s/killed.sqlite", runs);
	pid_t pid = spawn_chain_db("killed", "tp_loop", "inproc", db, &r);
	char errp[600];
	snprintf(errp, sizeof(errp), "%s/killed.err", root);
	/* The watcher has the database and the shard once the run says
	 * where it records (it notes them first). */
	bool started = false;
	for (int i = 0; i < 20 * WATCHDOG_S && !started; i++) {
		char *e = slurp(errp);
		started = strstr(e, "replaying ") != NULL;
		free(e);
		struct timespec ts = { 0, 50000000L };
		nanosleep(&ts, NULL);
	}
	assert_true(started);
	/* Checkpoints beside the shard, as a TUI run takes them (the
	 * watcher left them behind). */
	char ck[PATH_MAX + 16], ckf[PATH_MAX + 32];
	snprintf(ck, sizeof(ck), "%s.ckpt", r.work);
	snprintf(ckf, sizeof(ckf), "%s/000001", ck);
	assert_int_equal(mkdir(ck, 0755), 0);
	assert_int_equal(mkdir(ckf, 0755), 0);
	/* Killed once it has recorded publications (the Decide that never
	 * returns is the finalize's, after the day's last one). */
	char npub[32] = "0";
	for (int i = 0; i < 20 * WATCHDOG_S && strcmp(npub, "0") == 0; i++) {
		struct timespec ts = { 0, 50000000L };
		nanosleep(&ts, NULL);
		db_text(r.db, "SELECT count(*) FROM publication", npub,
		        sizeof(npub));
	}
	assert_string_not_equal(npub, "0");
	assert_int_equal(kill(pid, SIGKILL), 0);
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	/* The watcher, an orphan now, records it: wait for that. */
	char v[256] = "";
	for (int i = 0; i < 600 && strcmp(v, "aborted") != 0; i++) {
		struct timespec ts = { 0, 50000000L };
		nanosleep(&ts, NULL);
		db_text(r.db, "SELECT status FROM run", v, sizeof(v));
	}
	assert_string_equal(v, "aborted");
	db_text(r.db, "SELECT error FROM run", v, sizeof(v));
	assert_non_null(strstr(v, "SIGKILL"));
	/* Its figures so far, as `report` shows them (they read 0: the
	 * run never wrote its end): the publications it recorded and its
	 * wall until the watcher recorded the end. */
	db_text(r.db,
	        "SELECT publications = (SELECT count(*) FROM publication) "
	        "AND publications > 0 AND wall_ns > 0 AND "
	        "wall_ns = ended_unix_ns - started_unix_ns FROM run",
	        v, sizeof(v));
	if (strcmp(v, "1") != 0) {
		char d[256];
		db_text(r.db,
		        "SELECT publications || ' ' || wall_ns || ' ' || "
		        "(SELECT count(*) FROM publication) FROM run",
		        d, sizeof(d));
		fail_msg("run figures (publications, wall, rows): %s", d);
	}
	bool said = false, gone = false;
	for (int i = 0; i < 600 && !(said && gone); i++) {
		char *e = slurp(errp);
		said = strstr(e, "mergescope: run aborted: killed by a "
		                 "signal") != NULL;
		free(e);
		gone = !exists(r.work) && !exists(ck);
		struct timespec ts = { 0, 50000000L };
		nanosleep(&ts, NULL);
	}
	assert_true(said);
	assert_true(gone);
	/* The dead run's owner record went with it: the database is
	 * nobody's, for `clean` to list as a finished run. */
	char rec[800];
	snprintf(rec, sizeof(rec), "%s-owner", r.db);
	assert_false(exists(rec));
}

/* ---- --plugin-host process: the same plugins cost a fail-open ---- */

static void
process_case(const char *kind, const char *reason)
{
	char chain[32], name[32];
	snprintf(chain, sizeof(chain), "tp_%s", kind);
	snprintf(name, sizeof(name), "proc-%s", kind);
	run_out r;
	run_chain_host(name, chain, "process", &r);
	/* The run goes on to its end. */
	assert_complete_unsampled(&r);
	char v[256];
	db_text(r.db,
	        "SELECT group_concat(DISTINCT fail_open) FROM merge_link "
	        "WHERE fail_open != ''",
	        v, sizeof(v));
	assert_string_equal(v, reason);
	assert_false(exists(r.work));
	run_free(&r);
}

static void
test_process_segv(void **state)
{
	(void)state;
	process_case("segv", "crashed");
}

static void
test_process_abort(void **state)
{
	(void)state;
	process_case("abort", "crashed");
}

static void
test_process_exit(void **state)
{
	(void)state;
	process_case("exit", "crashed");
}

static void
test_process_loop(void **state)
{
	(void)state;
	process_case("loop", "timeout");
}

/* The run's executable removed once the run has started (a rebuild writes
 * a new file at its path, or none while it links): the plugin hosts the
 * run starts later (the oracle's, the merges') are still the binary the
 * run started as, and the run is as without the removal. Before, each
 * host was started from the path: every link failed open ("cannot
 * start"), exit status 1. The removal waits for the run's exec to be
 * done (its end of a close-on-exec pipe closes), not for any time. */
static void
test_process_host_after_exe_removed(void **state)
{
	(void)state;
	char exe2[600], outp[600], errp[600];
	snprintf(exe2, sizeof(exe2), "%s/bin2", root);
	assert_int_equal(mkdir(exe2, 0755), 0);
	snprintf(exe2, sizeof(exe2), "%s/bin2/mergescope", root);
	assert_int_equal(copy_file(exe, exe2), 0);
	run_out r;
	memset(&r, 0, sizeof(r));
	snprintf(r.db, sizeof(r.db), "%s/exe-gone.sqlite", root);
	snprintf(r.work, sizeof(r.work), "%s/exe-gone.shard", root);
	snprintf(outp, sizeof(outp), "%s/exe-gone.out", root);
	snprintf(errp, sizeof(errp), "%s/exe-gone.err", root);
	int pfd[2];
	assert_int_equal(pipe2(pfd, O_CLOEXEC), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int o = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int e = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (o < 0 || e < 0)
			_exit(126);
		dup2(o, STDOUT_FILENO);
		dup2(e, STDERR_FILENO);
		execl(exe2, exe2, "run", "--headless", "--fixture", fixture,
		      "--chain", "skywalking", "--db", r.db, "--work-dir",
		      r.work, "--plugin-host", "process", (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	char c;
	assert_int_equal(read(pfd[0], &c, 1), 0); /* exec'd */
	close(pfd[0]);
	assert_int_equal(unlink(exe2), 0);
	wait_chain(pid, "exe-gone", "skywalking", &r);
	if (!WIFEXITED(r.status) || WEXITSTATUS(r.status) != 0)
		fprintf(stderr, "%s\n%s", r.err, r.out);
	assert_null(strstr(r.out, "cannot start"));
	assert_true(WIFEXITED(r.status));
	assert_int_equal(WEXITSTATUS(r.status), 0);
	run_free(&r);
}

static void
test_process_matches_inproc(void **state)
{
	(void)state;
	/* The shipped sampler decides the same through the host: same
	 * selection, same kept traces, same output ledgers. */
	run_out a, b;
	run_chain_host("sw-inproc", "skywalking", "inproc", &a);
	run_chain_host("sw-process", "skywalking", "process", &b);
	assert_true(WIFEXITED(a.status) && WIFEXITED(b.status));
	assert_int_equal(WEXITSTATUS(a.status), 0);
	assert_int_equal(WEXITSTATUS(b.status), 0);
	static const char *const q[] = {
		"SELECT selection_fp FROM run",
		("SELECT final_core_sum || final_latency_sum || "
		 "final_start_time_sum FROM run"),
		"SELECT sum(kept) || '/' || sum(traces) FROM merge_link",
		"SELECT count(*) FROM merge_link WHERE fail_open != ''",
	};
	for (size_t i = 0; i < sizeof(q) / sizeof(*q); i++) {
		char va[256], vb[256];
		db_text(a.db, q[i], va, sizeof(va));
		db_text(b.db, q[i], vb, sizeof(vb));
		assert_string_equal(va, vb);
	}
	char v[256];
	db_text(b.db, "SELECT sum(kept) < sum(traces) FROM merge_link", v,
	        sizeof(v));
	assert_string_equal(v, "1"); /* it did drop traces */
	run_free(&a);
	run_free(&b);
}

/* One integer of the event database (first row, first column). */
static long long
db_int(const char *db, const char *sql)
{
	char v[64];
	db_text(db, sql, v, sizeof(v));
	return atoll(v);
}

/* A chain of two links of a plugin that logs (300 lines in
 * every Decide call, the second one): the run's database keeps the first
 * 100 lines of each link, with its label, level and the line cleaned to
 * one printable line, and counts the rest as suppressed, so that kept +
 * suppressed is every line the link's plugin logged (its own count, plus
 * its open() in the workbench in process mode); `mergescope report`
 * prints them. Before, every line went nowhere. */
static void
check_run_logs(const char *host)
{
	char name[32];
	snprintf(name, sizeof(name), "log-%s", host);
	run_out r;
	run_chain_host(name, "tp_log:{\"log\":\"300\"},tp_log", host, &r);
	assert_true(WIFEXITED(r.status));
	char v[512];
	db_text(r.db, "SELECT status FROM run", v, sizeof(v));
	assert_string_equal(v, "complete");
	long long extra = strcmp(host, "process") == 0 ? 1 : 0;
	for (int l = 0; l < 2; l++) {
		char q[256];
		snprintf(q, sizeof(q),
		         "SELECT value FROM plugin_stat WHERE link = %d AND "
		         "name = 'logged'",
		         l);
		long long logged = db_int(r.db, q) + extra;
		snprintf(q, sizeof(q),
		         "SELECT lines + suppressed FROM plugin_log_count "
		         "WHERE link = %d",
		         l);
		assert_int_equal(db_int(r.db, q), logged);
		snprintf(q, sizeof(q),
		         "SELECT count(*) FROM plugin_log WHERE link = %d", l);
		long long rows = db_int(r.db, q);
		snprintf(q, sizeof(q),
		         "SELECT lines FROM plugin_log_count WHERE link = %d",
		         l);
		assert_int_equal(db_int(r.db, q), rows);
		if (l == 0) {
			/* It logged past the cap: 100 kept. */
			assert_true(logged > 100);
			assert_int_equal(rows, 100);
		}
	}
	db_text(r.db,
	        "SELECT label || ' ' || level || ' ' || message FROM "
	        "plugin_log WHERE link = 1 ORDER BY id LIMIT 1",
	        v, sizeof(v));
	assert_string_equal(v, "tp_log#2 info opened ?[31mred");
	/* The report says it. */
	char cmd[2048], outp[700];
	snprintf(outp, sizeof(outp), "%s/%s.report", root, name);
	snprintf(cmd, sizeof(cmd), "'%s' report --db '%s' > '%s' 2>&1", exe,
	         r.db, outp);
	assert_int_equal(system(cmd), 0);
	char *rep = slurp(outp);
	if (!strstr(rep, "tp_log#2") || !strstr(rep, "opened ?[31mred") ||
	    !strstr(rep, "suppressed"))
		fail_msg("report: %s", rep);
	free(rep);
	run_free(&r);
}

static void
test_plugin_logs_recorded_inproc(void **state)
{
	(void)state;
	check_run_logs("inproc");
}

static void
test_plugin_logs_recorded_process(void **state)
{
	(void)state;
	check_run_logs("process");
}

static void
test_plugin_host_refuses_unknown_mode(void **state)
{
	(void)state;
	/* run_chain_host passes the mode through as given. */
	run_out r;
	run_chain_host("badhost", "tp_mask", "thread", &r);
	assert_true(WIFEXITED(r.status));
	assert_int_equal(WEXITSTATUS(r.status), 64);
	assert_non_null(strstr(r.err, "--plugin-host \"thread\": expected "
	                              "inproc or process"));
	assert_false(exists(r.db));
	run_free(&r);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_segv_in_decide),
		cmocka_unit_test(test_abort_in_decide),
		cmocka_unit_test(test_exit_in_decide),
		cmocka_unit_test(test_loop_times_out_and_exits),
		cmocka_unit_test(test_stats_hang_counts_alike),
		cmocka_unit_test(test_open_hang_fails_the_start),
		cmocka_unit_test(test_load_hang_fails_the_start),
		cmocka_unit_test(test_close_hang_run_ends),
		cmocka_unit_test(test_segv_in_open_is_named),
		cmocka_unit_test(test_killed_run_is_recorded),
		cmocka_unit_test(test_process_segv),
		cmocka_unit_test(test_process_abort),
		cmocka_unit_test(test_process_exit),
		cmocka_unit_test(test_process_loop),
		cmocka_unit_test(test_process_matches_inproc),
		cmocka_unit_test(test_process_host_after_exe_removed),
		cmocka_unit_test(test_plugin_host_refuses_unknown_mode),
		cmocka_unit_test(test_plugin_logs_recorded_inproc),
		cmocka_unit_test(test_plugin_logs_recorded_process),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
