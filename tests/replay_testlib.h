/*
 * replay_testlib.h - shared set-up for the replay controller tests
 * (test_replay.c, test_freeze.c): one smoke fixture per test executable in
 * a temporary directory, opening and starting replays on it, and waiting for
 * the controller to stop (through its notify callback, never a fixed sleep).
 */
#ifndef MS_REPLAY_TESTLIB_H
#define MS_REPLAY_TESTLIB_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "fixture_testlib.h"
#include "ms_fixture.h"
#include "ms_replay.h"
#include "replay_int.h"
#include "testdir.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define RT_SEED 7
#define RT_FN static __attribute__((unused))
#define RT_STOP_TIMEOUT_S 120

typedef struct rt_env {
	char root[PATH_MAX]; /* temp dir of this executable */
	char shm[PATH_MAX];  /* shard clones: a tmpfs dir when there is one */
	char fixture[PATH_MAX];
	unsigned serial; /* per-run name counter */
} rt_env;

static rt_env rt;

/* Wake-ups from the controller's notify callback. */
static pthread_mutex_t rt_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t rt_cv = PTHREAD_COND_INITIALIZER;
static unsigned long rt_ticks;

RT_FN void
rt_notify(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&rt_mu);
	rt_ticks++;
	pthread_cond_broadcast(&rt_cv);
	pthread_mutex_unlock(&rt_mu);
}

static void rt_path_in(char *buf, size_t n, const char *dir, const char *fmt,
                       ...) __attribute__((format(printf, 4, 5)));

/* dir/ then fmt's text into buf. */
RT_FN void
rt_path_in(char *buf, size_t n, const char *dir, const char *fmt, ...)
{
	int k = snprintf(buf, n, "%s/", dir);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf + k, n - (size_t)k, fmt, ap);
	va_end(ap);
}

/* A path in the tests' root directory. */
#define rt_path(buf, n, ...) rt_path_in(buf, n, rt.root, __VA_ARGS__)
/* A path in the shard-clone directory (tmpfs when there is one). */
#define rt_shm_path(buf, n, ...) rt_path_in(buf, n, rt.shm, __VA_ARGS__)

RT_FN bool
rt_exists(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0;
}

RT_FN void
rt_rm(const char *p)
{
	if (ms_test_rmtree(p) != 0)
		fprintf(stderr, "cannot remove %s\n", p);
}

/* Build the smoke fixture once; every test of the executable uses it. */
RT_FN int
rt_setup(void **state)
{
	(void)state;
	const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	snprintf(rt.root, sizeof(rt.root), "%s/ms-replaytest-XXXXXX", base);
	if (!mkdtemp(rt.root))
		return -1;
	rt_path(rt.fixture, sizeof(rt.fixture), "fixture-smoke");
	/* Shard clones go to memory when possible (room for them there):
	 * a replay fsyncs every publication, which on a disk costs most of
	 * the run. */
	snprintf(rt.shm, sizeof(rt.shm), "/dev/shm/ms-replaytest-XXXXXX");
	if (!ms_test_shm() || !mkdtemp(rt.shm))
		snprintf(rt.shm, sizeof(rt.shm), "%s", rt.root);
	return ms_test_smoke_fixture(rt.fixture, RT_SEED);
}

/* A day-1x fixture (seed 1), built on first use into the tests' root;
 * its path, or NULL after saying why on stderr. Its 24 h day is long
 * past the 2 h grace, so under the trace policy the primary phase's
 * merges meet matured traces whatever the write schedule; the smoke
 * day's 6 h give only a few such merges, their number set by the
 * schedule. */
RT_FN const char *
rt_day1x_fixture(void)
{
	static char dir[PATH_MAX];
	if (dir[0])
		return dir;
	char path[PATH_MAX];
	rt_path(path, sizeof(path), "fixture-day1x");
	ms_fixture_build_opts fo;
	memset(&fo, 0, sizeof(fo));
	fo.preset = "day-1x";
	fo.seed = 1;
	fo.out_dir = path;
	fo.plugin_path = MS_PLUGIN_DIR "/skywalking.so";
	ms_errbuf eb = { { 0 } };
	if (ms_fixture_build(&fo, NULL, &eb)) {
		fprintf(stderr, "day-1x fixture: %s\n", eb.msg);
		return NULL;
	}
	snprintf(dir, sizeof(dir), "%s", path);
	return dir;
}

RT_FN int
rt_teardown(void **state)
{
	(void)state;
	if (getenv("MS_KEEP_TEST_DIR"))
		return 0;
	if (rt.shm[0] && strcmp(rt.shm, rt.root) != 0)
		rt_rm(rt.shm);
	if (rt.root[0])
		rt_rm(rt.root);
	return 0;
}

/* Options for a run called `name` (db <root>/<name>.db, shard
 * <root>/<name>.shard). Strings live in the caller's buffers. */
typedef struct rt_run {
	char db[PATH_MAX];
	char work[PATH_MAX];
	ms_replay_opts o;
	ms__replay_test t; /* test hooks (replay_int.h); zero = none */
} rt_run;

RT_FN void
rt_opts(rt_run *run, const char *name, const char *variant)
{
	memset(run, 0, sizeof(*run));
	rt_path(run->db, sizeof(run->db), "%s-%u.db", name, ++rt.serial);
	snprintf(run->work, sizeof(run->work), "%s/%s-%u.shard", rt.shm, name,
	         rt.serial);
	run->o.fixture_dir = rt.fixture;
	run->o.db_path = run->db;
	run->o.work_dir = run->work;
	run->o.variant = variant;
	run->o.plugin_dir = MS_PLUGIN_DIR;
	run->o.decide_timeout_ns = 0;
	run->o.notify = rt_notify;
}

/* Open a replay with run->o and run->t (rt_opts, then the caller's own
 * settings),
 * add the breakpoint bp (NULL: none) and start it. NULL after printing
 * why on stderr. */
RT_FN ms_replay *
rt_start(rt_run *run, const char *bp)
{
	ms_replay *r = NULL;
	ms_errbuf eb = { { 0 } };
	int rc = ms__replay_open_test(&r, &run->o, &run->t, &eb);
	if (rc == 0 && bp)
		rc = ms_replay_break_add(r, bp, NULL, &eb);
	if (rc == 0)
		rc = ms_replay_start(r, &eb);
	if (rc) {
		fprintf(stderr, "%s: %s\n", run->db, eb.msg);
		ms_replay_close(r);
		return NULL;
	}
	return r;
}

RT_FN bool
rt_stopped(enum ms_replay_state s)
{
	return s == MS_REPLAY_PAUSED || s == MS_REPLAY_BREAK ||
	       s == MS_REPLAY_DONE || s == MS_REPLAY_FAILED;
}

/* Wait until the controller is stopped (PAUSED, BREAK) or over; fills st.
 * Returns false after RT_STOP_TIMEOUT_S (a hung run, not a timing
 * assertion). */
RT_FN bool
rt_wait_stop(ms_replay *r, ms_replay_status *st)
{
	struct timespec end;
	clock_gettime(CLOCK_REALTIME, &end);
	end.tv_sec += RT_STOP_TIMEOUT_S;
	for (;;) {
		pthread_mutex_lock(&rt_mu);
		unsigned long t0 = rt_ticks;
		pthread_mutex_unlock(&rt_mu);
		ms_replay_get_status(r, st);
		if (rt_stopped(st->state))
			return true;
		pthread_mutex_lock(&rt_mu);
		int rc = 0;
		/* A notify may have come between the status and here: only
		 * sleep while nothing happened. */
		while (rt_ticks == t0 && rc == 0)
			rc = pthread_cond_timedwait(&rt_cv, &rt_mu, &end);
		pthread_mutex_unlock(&rt_mu);
		if (rc == ETIMEDOUT) {
			ms_replay_get_status(r, st);
			return rt_stopped(st->state);
		}
	}
}

RT_FN ms_replay_status *
rt_status_new(void)
{
	ms_replay_status *st = calloc(1, sizeof(*st));
	if (!st)
		abort();
	return st;
}

/* Print the failed gates of a finished run (diagnostics for a failure). */
RT_FN unsigned
rt_print_gates(ms_replay *r, const char *what)
{
	ms_ev_gate g[32];
	unsigned failed = 0;
	size_t n = ms_replay_gates(r, g, 32, &failed);
	for (size_t i = 0; i < n && i < 32; i++)
		if (!g[i].pass)
			fprintf(stderr, "%s: gate %s FAIL: %s\n", what,
			        g[i].name, g[i].detail);
	return failed;
}

#endif
