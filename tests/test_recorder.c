/*
 * test_recorder.c - the SQLite event log: a realistic run written and read
 * back field for field, the commit timer, survival of SIGKILL mid-run, the
 * filter the TUI and exports share, and the one-line errors for bad paths
 * and foreign schema versions; a disk that fills up under the recorder
 * (a VFS that refuses writes) stops it with one error naming the file,
 * and nothing keeps retrying.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "alloc_testlib.h"
#include "child_testlib.h"
#include "ev_fixture.h"
#include "ev_private.h"
#include "evdb_testlib.h"
#include "ms_replay_events.h"
#include "sqlite_full_vfs.h"
#include "testdir.h"
#include "thread_testlib.h"

#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

MS_TEST_TMPDIR("ms-test-recorder")

static void
path_in(char *buf, size_t n, const char *name)
{
	snprintf(buf, n, "%s/%s", tmpdir, name);
}

/* ---- read back ------------------------------------------------------- */

struct expect {
	uint64_t n; /* merges in the run */
	bool plugins;
	uint64_t seen;
	uint64_t next; /* next expected seq */
};

static int
check_merge(void *ctx, const ms_ev_merge *got)
{
	struct expect *x = ctx;
	ms_ev_input inputs[16];
	ms_ev_merge want;
	evf_merge(&want, inputs, x->next, x->n, x->plugins);
	assert_int_equal(got->seq, want.seq);
	assert_int_equal(got->ninputs, want.ninputs);
	for (size_t i = 0; i < want.ninputs; i++)
		assert_memory_equal(&got->inputs[i], &inputs[i],
		                    sizeof(inputs[i]));
	assert_string_equal(got->lane, want.lane);
	assert_string_equal(got->error, want.error);
	assert_int_equal(got->sampling.klass, want.sampling.klass);
	assert_int_equal(got->sampling.reason, want.sampling.reason);
	assert_int_equal(got->nlinks, want.nlinks);
	for (uint32_t l = 0; l < want.nlinks; l++)
		assert_memory_equal(&got->links[l], &want.links[l],
		                    sizeof(want.links[l]));
	/* everything else, padding included (both sides start zeroed) */
	ms_ev_merge a = *got, b = want;
	a.inputs = b.inputs = NULL;
	assert_memory_equal(&a, &b, sizeof(a));
	x->seen++;
	x->next++;
	return 0;
}

static int
count_pub(void *ctx, const ms_ev_pub *p)
{
	uint64_t *n = ctx;
	ms_ev_pub want;
	evf_pub(&want, *n);
	assert_memory_equal(p, &want, sizeof(want));
	(*n)++;
	return 0;
}

static int
count_part(void *ctx, const ms_ev_part *p)
{
	uint64_t *n = ctx;
	assert_string_equal(p->cause, "merge");
	(*n)++;
	return 0;
}

static int
count_sample(void *ctx, const ms_ev_sample *s)
{
	uint64_t *n = ctx;
	assert_true(s->wall_ns > 0);
	(*n)++;
	return 0;
}

static int
check_phase(void *ctx, const ms_ev_phase *p)
{
	uint64_t *n = ctx;
	ms_ev_phase want;
	evf_phase(&want, (enum ms_ev_phase_id) * n);
	assert_memory_equal(p, &want, sizeof(want));
	(*n)++;
	return 0;
}

static int
count_gate(void *ctx, const ms_ev_gate *g)
{
	uint64_t *n = ctx;
	assert_string_equal(g->name, *n ? "hot_decide" : "ledgers");
	assert_true(g->pass);
	(*n)++;
	return 0;
}

static void
test_roundtrip(void **state)
{
	(void)state;
	char path[512];
	path_in(path, sizeof(path), "run.db");
	ms_errbuf eb = { "" };
	const uint64_t n = 400;
	int rc0 = evf_record(path, "skywalking", n, &eb);
	if (rc0)
		print_error("%s\n", eb.msg);
	assert_int_equal(rc0, 0);

	ms_evdb *db = NULL;
	assert_int_equal(ms_evdb_open(&db, path, &eb), 0);
	ms_ev_run run, want_run;
	ms_ev_run_end end, want_end;
	bool has_end = false;
	assert_int_equal(ms_evdb_run(db, &run, &end, &has_end, &eb), 0);
	evf_run(&want_run, "skywalking");
	evf_end_of(&want_end, &want_run, "skywalking", n);
	assert_true(has_end);
	assert_memory_equal(&run, &want_run, sizeof(run));
	assert_memory_equal(&end, &want_end, sizeof(end));

	struct expect x = { .n = n, .plugins = true, .next = 1 };
	assert_int_equal(ms_evdb_each_merge(db, NULL, check_merge, &x, &eb), 0);
	assert_int_equal(x.seen, n);

	uint64_t pubs = 0, parts = 0, samples = 0, phases = 0, gates = 0;
	assert_int_equal(ms_evdb_each_pub(db, count_pub, &pubs, &eb), 0);
	assert_int_equal(pubs, n);
	assert_int_equal(ms_evdb_each_part(db, count_part, &parts, &eb), 0);
	assert_true(parts > n * 8);
	assert_int_equal(ms_evdb_each_sample(db, count_sample, &samples, &eb),
	                 0);
	assert_int_equal(samples, n / 10);
	assert_int_equal(ms_evdb_each_phase(db, check_phase, &phases, &eb), 0);
	assert_int_equal(phases, MS_EV_PHASE_ROWS);
	assert_int_equal(ms_evdb_each_gate(db, count_gate, &gates, &eb), 0);
	assert_int_equal(gates, 2);
	ms_evdb_close(db);
}

/* A recorder of a new database at path (batch_events, 0 for the
 * default) with its run begun. */
static ms_rec *
rec_begun(const char *path, unsigned batch_events)
{
	ms_errbuf eb = { "" };
	ms_rec *r = NULL;
	ms_rec_opts o = { .path = path, .batch_events = batch_events };
	assert_int_equal(ms_rec_open(&r, &o, &eb), 0);
	ms_ev_run run;
	evf_run(&run, "disabled");
	assert_int_equal(ms_rec_run_begin(r, &run, &eb), 0);
	return r;
}

/* The event database's page cache stays at its fixed size however long
 * the run: a day's database outgrows it (day-4x's is about 2 MB), and
 * SQLite's default cache (2,000 KiB) grew with it, resident through the
 * finalize. n merges with their publications and lifecycle rows make a
 * database of several MiB; the cache holds at most MS__REC_CACHE_KIB
 * KiB of pages, with their headers. */
static void
test_page_cache_bounded(void **state)
{
	(void)state;
	char path[512];
	path_in(path, sizeof(path), "cache.db");
	ms_errbuf eb = { "" };
	ms_rec *r = NULL;
	ms_ev_run run;
	assert_int_equal(evf_begin(&r, path, "skywalking", &run, &eb), 0);
	const uint64_t n = 3000;
	ms_ev_input inputs[16];
	for (uint64_t s = 1; s <= n; s++) {
		ms_ev_pub p;
		evf_pub(&p, s - 1);
		assert_int_equal(ms_rec_pub(r, &p, &eb), 0);
		ms_ev_merge m;
		evf_merge_of(&m, inputs, s, n, "skywalking");
		assert_int_equal(ms_rec_merge(r, &m, &eb), 0);
		for (size_t i = 0; i < m.ninputs; i++) {
			ms_ev_part pe = { .what = MS_EV_PART_REMOVED,
				          .part_id = inputs[i].id,
				          .logical_ns = m.logical_ns,
				          .epoch = m.epoch_after,
				          .cause_seq = s };
			snprintf(pe.cause, sizeof(pe.cause), "merge");
			assert_int_equal(ms_rec_part(r, &pe, &eb), 0);
		}
	}
	size_t cache = ms__rec_cache_bytes(r);
	struct stat st;
	assert_int_equal(stat(path, &st), 0);
	struct stat wal;
	char walpath[520];
	snprintf(walpath, sizeof(walpath), "%s-wal", path);
	off_t bytes = st.st_size + (stat(walpath, &wal) == 0 ? wal.st_size : 0);
	print_message("database %lld bytes (with its WAL), cache %zu bytes\n",
	              (long long)bytes, cache);
	size_t bound = (size_t)atoi(MS__REC_CACHE_KIB) * 1024;
	assert_true(bytes > (off_t)(4 * bound));
	assert_true(cache > 0);
	/* Each cached page carries a header of a few hundred bytes. */
	assert_true(cache <= bound + bound / 4);
	assert_int_equal(ms_rec_close(r, &eb), 0);
}

/* The recorder's busy time counts each commit once and never a caller's
 * wait: one thread's calls, each committing (batch of one event), are
 * busy for less than the calls took. Before, a commit made inside a
 * call counted twice (by the call and by the commit), so commits
 * (the larger share of a committing call) made busy about twice the
 * calls' time. The recorder's thread is held, so the flush moves every
 * event into SQLite on this thread, inside the span timed. */
static void
test_busy_counts_commits_once(void **state)
{
	(void)state;
	char path[512];
	path_in(path, sizeof(path), "busy.db");
	ms_rec *r = rec_begun(path, 1);
	ms_errbuf eb = { "" };
	ms_rec_stats before, after;
	ms__rec_hold(r, true);
	ms_rec_stats_get(r, &before);
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (uint64_t i = 0; i < 200; i++) {
		ms_ev_pub p;
		evf_pub(&p, i);
		assert_int_equal(ms_rec_pub(r, &p, &eb), 0);
	}
	assert_int_equal(ms_rec_flush(r, &eb), 0);
	clock_gettime(CLOCK_MONOTONIC, &b);
	ms_rec_stats_get(r, &after);
	int64_t took = (b.tv_sec - a.tv_sec) * 1000000000ll +
	               (b.tv_nsec - a.tv_nsec);
	int64_t busy = after.busy_ns - before.busy_ns;
	assert_true(after.commits - before.commits >= 200);
	fprintf(stderr, "busy %lld ns of %lld ns\n", (long long)busy,
	        (long long)took);
	assert_true(busy > 0);
	assert_true(busy <= took);
	assert_int_equal(ms_rec_close(r, &eb), 0);
}

/* The database at path copied alone (no -wal) to alone: the reader
 * refuses it, saying its -wal is missing. */
static void
expect_alone_refused(const char *path, const char *alone)
{
	char cmd[1400];
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", path, alone);
	assert_int_equal(system(cmd), 0);
	ms_evdb *db = NULL;
	ms_errbuf eb = { "" };
	assert_int_equal(ms_evdb_open(&db, alone, &eb), MS_ERR_FORMAT);
	fprintf(stderr, "alone: %s\n", eb.msg);
	assert_non_null(strstr(eb.msg, alone));
	assert_non_null(strstr(eb.msg, "-wal, which holds events, is not "
	                               "beside it"));
}

/* What the created hook saw of the file: that it existed, its size. */
typedef struct created_seen {
	int calls;
	bool existed;
	off_t size;
} created_seen;

static void
on_created(void *arg, const char *path)
{
	created_seen *s = arg;
	struct stat st;
	s->calls++;
	s->existed = stat(path, &st) == 0;
	s->size = s->existed ? st.st_size : -1;
}

/* Opened with its run record, the database holds the run from its first
 * commit: another connection reads it, with its plugins, before any
 * ms_rec_run_begin (a process killed now leaves a run to mark aborted),
 * and the hook saw the file the moment it existed, empty. run_begin then
 * replaces the record. */
static void
test_run_written_at_open(void **state)
{
	(void)state;
	char path[512];
	path_in(path, sizeof(path), "run-at-open.db");
	ms_ev_run run;
	evf_run(&run, "alwayskeep");
	run.nplugins = 1;
	snprintf(run.plugins[0].name, sizeof(run.plugins[0].name),
	         "alwayskeep");
	created_seen seen = { 0 };
	ms_rec_opts o = { .path = path,
		          .run = &run,
		          .created = on_created,
		          .created_arg = &seen };
	ms_rec *r = NULL;
	ms_errbuf eb = { "" };
	assert_int_equal(ms_rec_open(&r, &o, &eb), 0);
	assert_int_equal(seen.calls, 1);
	assert_true(seen.existed);
	assert_int_equal(seen.size, 0);

	ms_evdb *db = NULL;
	assert_int_equal(ms_evdb_open(&db, path, &eb), 0);
	ms_ev_run got;
	bool has_end = true;
	assert_int_equal(ms_evdb_run(db, &got, NULL, &has_end, &eb), 0);
	assert_string_equal(got.variant, "alwayskeep");
	assert_int_equal(got.nplugins, 1);
	assert_string_equal(got.plugins[0].name, "alwayskeep");
	assert_false(has_end);
	ms_evdb_close(db);
	/* And it is marked like any run whose process died. */
	bool changed = false;
	assert_int_equal(
	        ms_evdb_mark_ended(path, "aborted", "killed", &changed, &eb),
	        0);
	assert_true(changed);

	snprintf(run.variant, sizeof(run.variant), "alwayskeep-again");
	assert_int_equal(ms_rec_run_begin(r, &run, &eb), 0);
	assert_int_equal(ms_rec_close(r, &eb), 0);
	assert_int_equal(ms_evdb_open(&db, path, &eb), 0);
	assert_int_equal(ms_evdb_run(db, &got, NULL, &has_end, &eb), 0);
	assert_string_equal(got.variant, "alwayskeep-again");
	assert_false(has_end); /* the start begins the record afresh */
	ms_evdb_close(db);
}

/* A database another process holds locked (here another connection, in
 * a write transaction) past the reader's wait: the reader says it is
 * locked, not that it is no SQLite database (before: "not an SQLite
 * database (database is locked)"). */
static void
test_reader_locked_out(void **state)
{
	(void)state;
	char path[512];
	path_in(path, sizeof(path), "locked-out.db");
	ms_errbuf eb = { "" };
	ms_rec *r = rec_begun(path, 0);
	assert_int_equal(ms_rec_close(r, &eb), 0);
	sqlite3 *c = NULL;
	assert_int_equal(sqlite3_open(path, &c), SQLITE_OK);
	assert_int_equal(sqlite3_exec(c,
	                              "BEGIN EXCLUSIVE; UPDATE run SET "
	                              "error = error",
	                              NULL, NULL, NULL),
	                 SQLITE_OK);
	ms_evdb *db = NULL;
	int rc = ms_evdb_open(&db, path, &eb);
	sqlite3_exec(c, "ROLLBACK", NULL, NULL, NULL);
	sqlite3_close(c);
	fprintf(stderr, "locked: %s\n", eb.msg);
	assert_int_equal(rc, MS_ERR_TIMEOUT);
	assert_null(db);
	assert_non_null(strstr(eb.msg, path));
	assert_non_null(strstr(eb.msg, "locked by another process"));
	assert_null(strstr(eb.msg, "not an SQLite database"));
}

/* A run without its end record reads back with has_end false. */
static void
test_unfinished_run(void **state)
{
	(void)state;
	char path[512];
	path_in(path, sizeof(path), "unfinished.db");
	ms_errbuf eb = { "" };
	ms_rec *r = rec_begun(path, 0);
	assert_int_equal(ms_rec_close(r, &eb), 0);
	ms_evdb *db = NULL;
	assert_int_equal(ms_evdb_open(&db, path, &eb), 0);
	bool has_end = true;
	ms_ev_run back;
	assert_int_equal(ms_evdb_run(db, &back, NULL, &has_end, &eb), 0);
	assert_false(has_end);
	assert_string_equal(back.variant, "disabled");
	assert_int_equal(back.nplugins, 0);
	ms_evdb_close(db);
}

/* ---- commits ---------------------------------------------------------- */

static int
count_merge(void *ctx, const ms_ev_merge *m)
{
	(void)m;
	(*(uint64_t *)ctx)++;
	return 0;
}

/* Open the database at ctx and walk its merges. */
static int
call_read(void *ctx, ms_errbuf *eb)
{
	ms_evdb *db = NULL;
	int rc = ms_evdb_open(&db, ctx, eb);
	uint64_t n = 0;
	if (rc == 0)
		rc = ms_evdb_each_merge(db, NULL, count_merge, &n, eb);
	ms_evdb_close(db);
	return rc;
}

/* Create the database at ctx (replacing it). */
static int
call_create(void *ctx, ms_errbuf *eb)
{
	ms_rec *r = NULL;
	ms_rec_opts o = { .path = ctx, .overwrite = true };
	int rc = ms_rec_open(&r, &o, eb);
	if (rc == 0)
		rc = ms_rec_close(r, eb);
	return rc;
}

/* Out of memory opening, walking or creating an event database: the
 * message names it and says what the memory was for ("event database
 * X: no memory" said not what for). */
static void
test_out_of_memory(void **state)
{
	(void)state;
	char path[512], made[512];
	path_in(path, sizeof(path), "oom.db");
	path_in(made, sizeof(made), "oom-made.db");
	ms_errbuf eb = { "" };
	assert_int_equal(evf_record(path, "skywalking", 40, &eb), 0);
	assert_true(tl_alloc_sweep(call_read, path, path) > 0);
	assert_true(tl_alloc_sweep(call_create, made, made) > 0);
}

static int
count_pubs(void *ctx, const ms_ev_pub *p)
{
	(void)p;
	(*(uint64_t *)ctx)++;
	return 0;
}

/* No memory for the copy of an event (a publication): the log would lack
 * it, so the recorder fails for good, as on an SQLite failure, naming the
 * database and what the memory was for, after writing every event
 * accepted before. Before, only that call said so, and a caller that
 * records without looking (the run) went on with a log missing the
 * event. */
static void
test_event_no_memory(void **state)
{
	(void)state;
	char path[512];
	path_in(path, sizeof(path), "nomem.db");
	ms_rec *r = rec_begun(path, 0);
	ms_errbuf eb = { "" };
	ms_ev_pub p;
	evf_pub(&p, 1);
	assert_int_equal(ms_rec_pub(r, &p, &eb), 0);
	evf_pub(&p, 2);
	tl_alloc_fail_nth(0);
	int rc = ms_rec_pub(r, &p, &eb);
	assert_true(tl_alloc_disarm());
	assert_int_equal(rc, MS_ERR_NOMEM);
	ms_errbuf dead = { "" };
	assert_int_equal(ms_rec_failed(r, &dead), MS_ERR_NOMEM);
	fprintf(stderr, "failed as expected: %s\n", dead.msg);
	assert_non_null(strstr(dead.msg, path));
	assert_non_null(strstr(dead.msg, "out of memory for an event"));
	evf_pub(&p, 3);
	assert_int_equal(ms_rec_pub(r, &p, &eb), MS_ERR_NOMEM);
	assert_int_equal(ms_rec_close(r, &eb), MS_ERR_NOMEM);
	ms_evdb *db = NULL;
	uint64_t n = 0;
	assert_int_equal(ms_evdb_open(&db, path, &eb), 0);
	assert_int_equal(ms_evdb_each_pub(db, count_pubs, &n, &eb), 0);
	ms_evdb_close(db);
	assert_int_equal(n, 1);
}

/* No room for a thread (what `ulimit -v` leaves a process: pthread_create
 * failing with EAGAIN, thread_testlib.h): the database is refused naming
 * its commit timer, the system's reason and where to look, and is not
 * left behind. It said only "cannot start commit timer". */
static void
test_no_thread_for_timer(void **state)
{
	(void)state;
	char path[512];
	path_in(path, sizeof(path), "no-thread.db");
	ms_errbuf eb = { "" };
	ms_rec *r = NULL;
	ms_rec_opts o = { .path = path };
	tl_threads_fail_all(true);
	int rc = ms_rec_open(&r, &o, &eb);
	tl_threads_fail_all(false);
	fprintf(stderr, "refused as expected: %s\n", eb.msg);
	assert_true(rc < 0);
	assert_null(r);
	assert_non_null(strstr(eb.msg, path));
	assert_non_null(strstr(eb.msg, "cannot start its commit timer: "));
	assert_non_null(strstr(eb.msg, strerror(EAGAIN)));
	assert_non_null(strstr(eb.msg, "ulimit -v"));
	struct stat st;
	assert_int_equal(stat(path, &st), -1);
}

static uint64_t
merges_in(const char *path)
{
	ms_evdb *db = NULL;
	ms_errbuf eb;
	uint64_t n = 0;
	assert_int_equal(ms_evdb_open(&db, path, &eb), 0);
	assert_int_equal(ms_evdb_each_merge(db, NULL, count_merge, &n, &eb), 0);
	ms_evdb_close(db);
	return n;
}

/* The multiples of merges read back, in order. */
struct ms_back {
	double m[8];
	size_t n;
};

static int
merge_m(void *ctx, const ms_ev_merge *m)
{
	struct ms_back *b = ctx;
	if (b->n < 8)
		b->m[b->n] = m->m;
	b->n++;
	return 0;
}

/* A merge whose multiple m is not a number: SQLite binds a NaN as NULL,
 * which the REAL NOT NULL column refuses, so the insert failed, the
 * recorder failed for good and the open transaction (the merges before
 * it in the batch, accepted) was rolled back with it. It is recorded, m
 * as 0 (the multiple of a merge that has none); an infinity stays. */
static void
test_merge_m_nan(void **state)
{
	(void)state;
	char path[512];
	path_in(path, sizeof(path), "nan.db");
	ms_errbuf eb = { "" };
	ms_rec *r = NULL;
	ms_ev_run run;
	assert_int_equal(evf_begin(&r, path, "skywalking", &run, &eb), 0);
	const double ms[] = { 2.5, NAN, -NAN, INFINITY, 3.0 };
	ms_ev_input in[16];
	ms_ev_merge m;
	for (uint64_t s = 1; s <= 5; s++) {
		evf_merge(&m, in, s, 5, false);
		m.m = ms[s - 1];
		assert_int_equal(ms_rec_merge(r, &m, &eb), 0);
	}
	int rc = ms_rec_flush(r, &eb);
	if (rc)
		fail_msg("%s", eb.msg);
	assert_int_equal(ms_rec_failed(r, &eb), 0);
	ms_ev_run_end e;
	evf_end(&e, &run, 5);
	assert_int_equal(ms_rec_run_end(r, &e, &eb), 0);
	assert_int_equal(ms_rec_close(r, &eb), 0);

	ms_evdb *db = NULL;
	struct ms_back b = { .n = 0 };
	assert_int_equal(ms_evdb_open(&db, path, &eb), 0);
	assert_int_equal(ms_evdb_each_merge(db, NULL, merge_m, &b, &eb), 0);
	ms_evdb_close(db);
	assert_int_equal(b.n, 5);
	const double want[] = { 2.5, 0, 0, INFINITY, 3.0 };
	for (size_t i = 0; i < 5; i++)
		if (!(b.m[i] == want[i]))
			fail_msg("merge %zu: m %g, expected %g", i + 1, b.m[i],
			         want[i]);
}

/* A run closed while merges are under way: one recorded before the engine
 * counted it, one recorded after the run end. Both completed merges count
 * in the run row, so the row and the merge table agree; a merge that
 * failed does not. A complete run keeps the engine's count. */
static void
test_merge_after_end(void **state)
{
	(void)state;
	char path[512];
	path_in(path, sizeof(path), "late.db");
	ms_errbuf eb = { "" };
	ms_rec *r = NULL;
	ms_ev_run run;
	assert_int_equal(evf_begin(&r, path, "skywalking", &run, &eb), 0);
	ms_ev_input in[16];
	ms_ev_merge m;
	for (uint64_t s = 1; s <= 3; s++) {
		evf_merge(&m, in, s, 5, false);
		assert_int_equal(ms_rec_merge(r, &m, &eb), 0);
	}
	/* Merge 3 recorded, not yet counted by the engine when it ended. */
	ms_ev_run_end e;
	evf_end(&e, &run, 2);
	snprintf(e.status, sizeof(e.status), "aborted");
	assert_int_equal(ms_rec_run_end(r, &e, &eb), 0);
	evf_merge(&m, in, 4, 5, false);
	m.err = 0;
	assert_int_equal(ms_rec_merge(r, &m, &eb), 0);
	evf_merge(&m, in, 5, 5, false);
	m.err = MS_ERR_IO;
	snprintf(m.error, sizeof(m.error), "stopped");
	assert_int_equal(ms_rec_merge(r, &m, &eb), 0);
	assert_int_equal(ms_rec_close(r, &eb), 0);

	ms_evdb *db = NULL;
	assert_int_equal(ms_evdb_open(&db, path, &eb), 0);
	ms_ev_run back;
	ms_ev_run_end end;
	bool has_end = false;
	assert_int_equal(ms_evdb_run(db, &back, &end, &has_end, &eb), 0);
	ms_evdb_close(db);
	assert_true(has_end);
	assert_string_equal(end.status, "aborted");
	assert_int_equal(end.merges_completed, 4);
	assert_int_equal(merges_in(path), 5);

	path_in(path, sizeof(path), "complete.db");
	assert_int_equal(evf_begin(&r, path, "skywalking", &run, &eb), 0);
	for (uint64_t s = 1; s <= 3; s++) {
		evf_merge(&m, in, s, 5, false);
		assert_int_equal(ms_rec_merge(r, &m, &eb), 0);
	}
	evf_end(&e, &run, 2);
	assert_int_equal(ms_rec_run_end(r, &e, &eb), 0);
	assert_int_equal(ms_rec_close(r, &eb), 0);
	assert_int_equal(ms_evdb_open(&db, path, &eb), 0);
	assert_int_equal(ms_evdb_run(db, &back, &end, &has_end, &eb), 0);
	ms_evdb_close(db);
	assert_string_equal(end.status, "complete");
	assert_int_equal(end.merges_completed, 2);
}

/* With huge batches, a clean close still writes everything. */
static void
test_close_commits(void **state)
{
	(void)state;
	char path[512];
	path_in(path, sizeof(path), "close.db");
	ms_errbuf eb;
	ms_rec *r = NULL;
	ms_rec_opts o = { .path = path,
		          .batch_events = 100000,
		          .batch_ms = 3600000 };
	assert_int_equal(ms_rec_open(&r, &o, &eb), 0);
	ms_ev_input in[16];
	for (uint64_t s = 1; s <= 37; s++) {
		ms_ev_merge m;
		evf_merge(&m, in, s, 37, false);
		assert_int_equal(ms_rec_merge(r, &m, &eb), 0);
	}
	ms_rec_stats st;
	ms_rec_stats_get(r, &st);
	assert_int_equal(st.merges, 37);
	assert_int_equal(st.merges_committed, 0);
	assert_int_equal(ms_rec_close(r, &eb), 0);
	assert_int_equal(merges_in(path), 37);
	/* Closed, the database is one file, and reading it (report,
	 * export) leaves no -wal or -shm beside it: before, every reader
	 * left an empty -wal and a 32 KiB -shm. */
	char side[600];
	struct stat sst;
	for (int i = 0; i < 2; i++) {
		snprintf(side, sizeof(side), "%s-%s", path, i ? "shm" : "wal");
		assert_int_not_equal(stat(side, &sst), 0);
	}
}

/* Whether the file at path exists and is not empty. */
static bool
has_bytes(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && st.st_size > 0;
}

/* The disk has room for the write-ahead log but not for the checkpoint
 * that folds it into the database file at close (the file cannot grow):
 * the close says so, naming the database and its -wal, that the two must
 * be kept together and why; both together read back every event, and once
 * there is room ms_evdb_fold_wal makes the database file whole alone.
 * Before, the close returned 0 and the events sat in the -wal, unsaid: the
 * database file alone did not even open. */
static void
test_close_checkpoint_full(void **state)
{
	(void)state;
	char path[512], wal[600], alone[600];
	path_in(path, sizeof(path), "ckpt-full.db");
	snprintf(wal, sizeof(wal), "%s-wal", path);
	path_in(alone, sizeof(alone), "ckpt-full-alone.db");
	assert_int_equal(full_vfs_install(), SQLITE_OK);
	ms_errbuf eb = { "" };
	struct stat st;
	ms_rec *r = rec_begun(path, 16);
	/* Room for the log, none for the file (which the run's start did
	 * not grow: it went to the log). */
	assert_int_equal(stat(path, &st), 0);
	full_vfs_cap_main(st.st_size);
	ms_ev_input in[16];
	for (uint64_t s = 1; s <= 100; s++) {
		ms_ev_merge m;
		evf_merge(&m, in, s, 100, true);
		assert_int_equal(ms_rec_merge(r, &m, &eb), 0);
	}
	int rc = ms_rec_close(r, &eb);
	fprintf(stderr, "close: %s\n", eb.msg);
	assert_int_equal(rc, MS_ERR_IO);
	assert_true(full_vfs_refused() >= 1);
	assert_non_null(strstr(eb.msg, path));
	assert_non_null(strstr(eb.msg, wal));
	assert_non_null(strstr(eb.msg, "database or disk is full"));
	assert_non_null(strstr(eb.msg, "keep, copy and move the two files "
	                               "together"));
	assert_true(has_bytes(wal));
	/* Read where they are, the two files hold every event. */
	assert_int_equal(merges_in(path), 100);
	/* The database file copied alone: refused, saying its -wal is
	 * missing (before: "not an SQLite database"). */
	expect_alone_refused(path, alone);
	/* Still no room: said again, the same way. */
	ms_errbuf eb2 = { "" };
	assert_int_equal(ms_evdb_fold_wal(path, &eb2), MS_ERR_IO);
	assert_non_null(strstr(eb2.msg, wal));
	assert_non_null(strstr(eb2.msg, "database or disk is full"));
	full_vfs_disarm();
	/* Room again: the database file alone is the whole log. */
	assert_int_equal(ms_evdb_fold_wal(path, &eb2), 0);
	assert_false(has_bytes(wal));
	assert_int_equal(ms_evdb_fold_wal(path, &eb2), 0);
	char cmd[1400];
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", path, alone);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(merges_in(alone), 100);
}

/* The database at path copied alone (no -wal) to alone, while its run
 * writes it: the copy opens, and the reader says no write-ahead log is
 * beside it, not only that the run did not finish. */
static void
expect_alone_opens(const char *path, const char *alone)
{
	char cmd[1400];
	ms_errbuf eb = { "" };
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", path, alone);
	assert_int_equal(system(cmd), 0);
	ms_evdb *db = NULL;
	assert_int_equal(ms_evdb_open(&db, alone, &eb), 0);
	assert_true(ms_evdb_wal_missing(db));
	bool unfinished = false;
	char why[512];
	assert_int_equal(
	        ms_report_unfinished(db, &unfinished, why, sizeof(why), &eb),
	        0);
	assert_true(unfinished);
	assert_non_null(strstr(why, "no write-ahead log beside it"));
	ms_evdb_close(db);
}

/* A database copied alone while its run still writes it: every event is
 * still in the -wal, the file holds only what its creation wrote (the
 * schema and, as a replay opens it, the run record). The copy opens, and
 * the reader says no write-ahead log is beside it, not only that the run
 * did not finish (before the run was written at the creation: "not an
 * event database ... another SQLite database"). */
static void
test_copied_without_wal(void **state)
{
	(void)state;
	char path[512], alone[600];
	path_in(path, sizeof(path), "running.db");
	path_in(alone, sizeof(alone), "running-alone.db");
	ms_errbuf eb = { "" };
	ms_ev_run run;
	evf_run(&run, "disabled");
	ms_rec *r = NULL;
	ms_rec_opts o = { .path = path, .run = &run };
	assert_int_equal(ms_rec_open(&r, &o, &eb), 0);
	assert_int_equal(ms_rec_run_begin(r, &run, &eb), 0);
	assert_int_equal(ms_rec_flush(r, &eb), 0);
	expect_alone_opens(path, alone);
	assert_int_equal(ms_rec_close(r, &eb), 0);
}

/* A copy made without its -wal after the log was folded into the file
 * (as SQLite's automatic checkpoint does during a run) opens, since the
 * run table is in the file: it says that no write-ahead log is beside
 * it, not only that the run did not finish. */
static void
test_copied_without_wal_opens(void **state)
{
	(void)state;
	char path[512], alone[600];
	path_in(path, sizeof(path), "folded.db");
	path_in(alone, sizeof(alone), "folded-alone.db");
	ms_errbuf eb = { "" };
	ms_rec *r = rec_begun(path, 0);
	assert_int_equal(ms_rec_flush(r, &eb), 0);
	sqlite3 *c = NULL;
	assert_int_equal(sqlite3_open(path, &c), SQLITE_OK);
	assert_int_equal(sqlite3_exec(c, "PRAGMA wal_checkpoint(TRUNCATE)",
	                              NULL, NULL, NULL),
	                 SQLITE_OK);
	sqlite3_close(c);
	expect_alone_opens(path, alone);
	assert_int_equal(ms_rec_close(r, &eb), 0);
	/* Closed, the database is whole by itself: nothing is missing. */
	ms_evdb *db = NULL;
	assert_int_equal(ms_evdb_open(&db, path, &eb), 0);
	assert_false(ms_evdb_wal_missing(db));
	ms_evdb_close(db);
}

/* One event and then silence: the timer commits it without another event,
 * and a reader sees it while the recorder is still open. */
static void
test_timer_commits(void **state)
{
	(void)state;
	char path[512];
	path_in(path, sizeof(path), "timer.db");
	ms_errbuf eb;
	ms_rec *r = NULL;
	ms_rec_opts o = { .path = path, .batch_events = 1000, .batch_ms = 20 };
	assert_int_equal(ms_rec_open(&r, &o, &eb), 0);
	ms_ev_input in[16];
	ms_ev_merge m;
	evf_merge(&m, in, 1, 10, true);
	assert_int_equal(ms_rec_merge(r, &m, &eb), 0);
	ms_rec_stats st;
	/* wait (bounded, no timing asserted) for the timer's commit */
	for (int i = 0; i < 1000; i++) {
		ms_rec_stats_get(r, &st);
		if (st.merges_committed == 1)
			break;
		struct timespec ts = { 0, 10000000 };
		nanosleep(&ts, NULL);
	}
	assert_int_equal(st.merges_committed, 1);
	assert_int_equal(merges_in(path), 1);
	assert_int_equal(ms_rec_close(r, &eb), 0);
}

/* The disk fills up while a batch waits for the commit timer: the timer's
 * commit fails, and from then on the recorder is failed for good. Every
 * call returns that first error, naming the file and SQLite's words,
 * without going back to SQLite: after many timer periods no statement
 * failed again and no write was tried again (it used to commit in a loop,
 * holding its lock). Close returns the error instead of hanging. */
static void
test_disk_full(void **state)
{
	(void)state;
	char path[512];
	path_in(path, sizeof(path), "full.db");
	assert_int_equal(full_vfs_install(), SQLITE_OK);
	ms_errbuf eb = { "" };
	ms_rec *r = NULL;
	ms_rec_opts o = { .path = path, .batch_events = 1000, .batch_ms = 10 };
	assert_int_equal(ms_rec_open(&r, &o, &eb), 0);
	ms_ev_run run;
	evf_run(&run, "disabled");
	assert_int_equal(ms_rec_run_begin(r, &run, &eb), 0);
	ms_ev_input in[16];
	ms_ev_merge m;
	evf_merge(&m, in, 1, 10, false);
	full_vfs_arm(0);
	assert_int_equal(ms_rec_merge(r, &m, &eb), 0); /* batched */
	/* Wait (bounded, nothing timed is asserted) for the timer. */
	int rc = 0;
	for (int i = 0; i < 1000 && rc == 0; i++) {
		struct timespec ts = { 0, 10000000 };
		nanosleep(&ts, NULL);
		rc = ms_rec_failed(r, &eb);
	}
	assert_int_equal(rc, MS_ERR_IO);
	fprintf(stderr, "recorder failed: %s\n", eb.msg);
	assert_non_null(strstr(eb.msg, path));
	assert_non_null(strstr(eb.msg, "database or disk is full"));
	ms_rec_stats st;
	ms_rec_stats_get(r, &st);
	assert_int_equal(st.failed_statements, 1);
	assert_int_equal(st.merges_committed, 0);
	unsigned long refused = full_vfs_refused();
	assert_true(refused >= 1);

	/* Later events get the same error at once. */
	ms_errbuf eb2 = { "" };
	evf_merge(&m, in, 2, 10, false);
	assert_int_equal(ms_rec_merge(r, &m, &eb2), MS_ERR_IO);
	assert_string_equal(eb2.msg, eb.msg);
	ms_ev_phase ph;
	memset(&ph, 0, sizeof(ph));
	assert_int_equal(ms_rec_phase(r, &ph, &eb2), MS_ERR_IO);
	assert_int_equal(ms_rec_flush(r, &eb2), MS_ERR_IO);
	/* Twenty timer periods: a spinning timer would have failed
	 * thousands of commits by now. */
	struct timespec ts = { 0, 200000000 };
	nanosleep(&ts, NULL);
	ms_rec_stats_get(r, &st);
	assert_int_equal(st.failed_statements, 1);
	assert_int_equal(full_vfs_refused(), refused);
	assert_int_equal(ms_rec_close(r, &eb2), MS_ERR_IO);
	assert_non_null(strstr(eb2.msg, "database or disk is full"));
	full_vfs_disarm();
}

/* The disk fills up while the database is being created, at every point
 * from its first byte to its schema, and (a full tmpfs) when the WAL index
 * cannot grow: the open fails naming the file and why, and leaves none of
 * the files it made (the database, its -wal and its -shm) behind. */
static void
expect_create_refused(const char *path, const char *why)
{
	char wal[600], shm[600];
	snprintf(wal, sizeof(wal), "%s-wal", path);
	snprintf(shm, sizeof(shm), "%s-shm", path);
	ms_errbuf eb = { "" };
	ms_rec *r = NULL;
	ms_rec_opts o = { .path = path };
	int rc = ms_rec_open(&r, &o, &eb);
	full_vfs_disarm();
	fprintf(stderr, "refused: %s\n", eb.msg);
	assert_int_equal(rc, MS_ERR_IO);
	assert_null(r);
	assert_non_null(strstr(eb.msg, path));
	assert_non_null(strstr(eb.msg, why));
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(access(wal, F_OK), -1);
	assert_int_equal(access(shm, F_OK), -1);
}

static void
test_create_disk_full(void **state)
{
	(void)state;
	char path[512];
	path_in(path, sizeof(path), "create-full.db");
	assert_int_equal(full_vfs_install(), SQLITE_OK);
	full_vfs_arm_shm();
	expect_create_refused(path, "No space left on device");
	/* Every budget short of the schema's bytes, until one fits. */
	int refused = 0;
	for (long long budget = 0;; budget += 1024) {
		assert_true(budget < 4 * 1024 * 1024);
		ms_errbuf eb = { "" };
		ms_rec *r = NULL;
		ms_rec_opts o = { .path = path };
		full_vfs_arm(budget);
		int rc = ms_rec_open(&r, &o, &eb);
		full_vfs_disarm();
		if (rc == 0) {
			assert_int_equal(ms_rec_close(r, &eb), 0);
			break;
		}
		refused++;
		full_vfs_arm(budget);
		expect_create_refused(path, "disk is full");
	}
	assert_true(refused > 0);
}

/* The child of test_sigkill: records merges into the database at path
 * (arg) and writes to fd how many are committed each time that grows. */
static int
record_until_killed(void *arg, int fd)
{
	const char *path = arg;
	ms_errbuf eb;
	ms_rec *r = NULL;
	ms_rec_opts o = { .path = path, .batch_events = 16, .batch_ms = 30 };
	if (ms_rec_open(&r, &o, &eb) < 0)
		return 2;
	ms_ev_input in[16];
	uint64_t reported = 0;
	for (uint64_t s = 1; s <= 1000000; s++) {
		ms_ev_merge m;
		evf_merge(&m, in, s, 1000000, true);
		if (ms_rec_merge(r, &m, &eb) < 0)
			return 3;
		ms_rec_stats st;
		ms_rec_stats_get(r, &st);
		if (st.merges_committed != reported) {
			reported = st.merges_committed;
			if (write(fd, &reported, 8) != 8)
				return 4;
		}
		struct timespec ts = { 0, 500000 };
		nanosleep(&ts, NULL);
	}
	return 5;
}

/* The child records merges and reports on a pipe how many are committed;
 * the parent kills it with SIGKILL mid-run. */
static void
test_sigkill(void **state)
{
	(void)state;
	char path[512];
	path_in(path, sizeof(path), "killed.db");
	int rfd;
	pid_t pid = ms_test_child(record_until_killed, path, &rfd);
	uint64_t committed = 0, v;
	while (committed < 150 && read(rfd, &v, 8) == 8)
		committed = v;
	assert_true(committed >= 150);
	assert_int_equal(kill(pid, SIGKILL), 0);
	int status = ms_test_child_wait(pid);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	while (read(rfd, &v, 8) == 8)
		committed = v;
	close(rfd);

	/* the file opens, is intact, and holds every committed merge */
	sqlite3 *db = NULL;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	sqlite3_stmt *st = NULL;
	assert_int_equal(
	        sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL),
	        SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_string_equal((const char *)sqlite3_column_text(st, 0), "ok");
	sqlite3_finalize(st);
	sqlite3_close(db);

	struct expect x = { .n = 1000000, .plugins = true, .next = 1 };
	ms_evdb *edb = NULL;
	ms_errbuf eb;
	assert_int_equal(ms_evdb_open(&edb, path, &eb), 0);
	assert_int_equal(ms_evdb_each_merge(edb, NULL, check_merge, &x, &eb),
	                 0);
	ms_evdb_close(edb);
	assert_true(x.seen >= committed);
}

/* Whether the database at path has the index part_event_by_part. */
static bool
has_part_index(const char *path)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL),
	                 SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db,
	                                    "SELECT count(*) FROM sqlite_master "
	                                    "WHERE type = 'index' AND name = "
	                                    "'part_event_by_part'",
	                                    -1, &st, NULL),
	                 SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	bool has = sqlite3_column_int(st, 0) == 1;
	sqlite3_finalize(st);
	sqlite3_close(db);
	return has;
}

static void
record_parts(ms_rec *r, uint64_t n)
{
	ms_errbuf eb = { "" };
	for (uint64_t i = 1; i <= n; i++) {
		ms_ev_part pe = { .what = MS_EV_PART_INTRODUCED,
			          .part_id = i };
		assert_int_equal(ms_rec_part(r, &pe, &eb), 0);
	}
	assert_int_equal(ms_rec_flush(r, &eb), 0);
}

/* s with each run of white space made one space, none at either end
 * (in place). */
static void
squeeze(char *s)
{
	char *w = s;
	for (const char *p = s; *p; p++) {
		bool ws = *p == ' ' || *p == '\n' || *p == '\t';
		if (ws && (w == s || w[-1] == ' '))
			continue;
		*w++ = ws ? ' ' : *p;
	}
	if (w > s && w[-1] == ' ')
		w--;
	*w = '\0';
}

/* replay/SCHEMA.md's listing holds the statements `sqlite3 FILE .schema`
 * prints for a database the recorder made, word for word and in order,
 * laid out there for reading: each statement one after the other, with
 * white space squeezed. */
static void
test_schema_md_listing(void **state)
{
	(void)state;
	char path[512], md[4096];
	path_in(path, sizeof(path), "schema.db");
	ms_errbuf eb = { "" };
	assert_int_equal(call_create(path, &eb), 0);
	static char made[1 << 16], doc[1 << 17];
	size_t n = 0;
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL),
	                 SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db,
	                                    "SELECT sql FROM sqlite_master "
	                                    "WHERE sql IS NOT NULL ORDER BY "
	                                    "rowid",
	                                    -1, &st, NULL),
	                 SQLITE_OK);
	while (sqlite3_step(st) == SQLITE_ROW)
		n += (size_t)snprintf(made + n, sizeof(made) - n, "%s;\n",
		                      sqlite3_column_text(st, 0));
	assert_true(n < sizeof(made));
	sqlite3_finalize(st);
	sqlite3_close(db);
	snprintf(md, sizeof(md), "%s/replay/SCHEMA.md", MS_SOURCE_DIR);
	FILE *fp = fopen(md, "r");
	assert_non_null(fp);
	size_t len = fread(doc, 1, sizeof(doc) - 1, fp);
	fclose(fp);
	assert_true(len < sizeof(doc) - 1);
	doc[len] = '\0';
	char *sql = strstr(doc, "```sql\n");
	assert_non_null(sql);
	sql += 7;
	char *end = strstr(sql, "```");
	assert_non_null(end);
	*end = '\0';
	squeeze(made);
	squeeze(sql);
	assert_string_equal(sql, made);
}

/* Inserts do not keep part_event's index (it cost about a third of the
 * recording time): ms_rec_index builds it as the run ends, and a
 * recorder closed without it builds it as it closes. Before, the index
 * was there from the open, so the first assertion failed. */
static void
test_part_index_at_end(void **state)
{
	(void)state;
	char path[512];
	ms_errbuf eb = { "" };
	path_in(path, sizeof(path), "index.db");
	ms_rec *r = rec_begun(path, 0);
	record_parts(r, 20);
	assert_false(has_part_index(path));
	assert_int_equal(ms_rec_index(r, &eb), 0);
	assert_true(has_part_index(path));
	record_parts(r, 5); /* kept from then on */
	assert_int_equal(ms_rec_index(r, &eb), 0); /* once is enough */
	assert_int_equal(ms_rec_close(r, &eb), 0);
	assert_true(has_part_index(path));

	path_in(path, sizeof(path), "index-close.db");
	r = rec_begun(path, 0);
	record_parts(r, 20);
	assert_int_equal(ms_rec_close(r, &eb), 0);
	assert_true(has_part_index(path));
}

/* ---- the queue (recorder.c, design 0-8) ------------------------------ */

static int64_t
now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000ll + t.tv_nsec;
}

#define ORDER_THREADS 4
#define ORDER_EACH 600

struct order_arg {
	ms_rec *r;
	uint64_t who;
	int rc;
};

static void *
order_main(void *p)
{
	struct order_arg *a = p;
	ms_errbuf eb;
	for (uint64_t i = 0; i < ORDER_EACH && a->rc == 0; i++) {
		ms_ev_part e;
		memset(&e, 0, sizeof(e));
		e.part_id = a->who;
		e.cause_seq = i;
		snprintf(e.cause, sizeof(e.cause), "merge");
		a->rc = ms_rec_part(a->r, &e, &eb);
	}
	return NULL;
}

/* Threads record at once through a small queue (so that callers wait for
 * room and several drains interleave with their calls): each thread's
 * events are in the log in the order it made them, none is lost, and a
 * mark read after them sees them all (it drains the queue first). */
static void
test_queue_order_across_threads(void **state)
{
	(void)state;
	char path[512];
	path_in(path, sizeof(path), "order.db");
	ms_errbuf eb = { "" };
	ms_rec *r = NULL;
	ms_rec_opts o = { .path = path,
		          .batch_events = 16,
		          .queue_bytes = 64 * sizeof(ms_ev_part) };
	assert_int_equal(ms_rec_open(&r, &o, &eb), 0);
	pthread_t t[ORDER_THREADS];
	struct order_arg a[ORDER_THREADS];
	for (uint64_t k = 0; k < ORDER_THREADS; k++) {
		a[k] = (struct order_arg){ .r = r, .who = k + 1 };
		assert_int_equal(pthread_create(&t[k], NULL, order_main, &a[k]),
		                 0);
	}
	for (int k = 0; k < ORDER_THREADS; k++) {
		pthread_join(t[k], NULL);
		assert_int_equal(a[k].rc, 0);
	}
	ms_rec_mark mark;
	assert_int_equal(ms_rec_mark_get(r, 0, 0, &mark, &eb), 0);
	assert_int_equal(mark.part_id, ORDER_THREADS * ORDER_EACH);
	assert_int_equal(ms_rec_close(r, &eb), 0);

	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db,
	                                    "SELECT part_id, cause_seq FROM "
	                                    "part_event ORDER BY id",
	                                    -1, &st, NULL),
	                 SQLITE_OK);
	uint64_t next[ORDER_THREADS + 1] = { 0 }, rows = 0;
	while (sqlite3_step(st) == SQLITE_ROW) {
		uint64_t who = (uint64_t)sqlite3_column_int64(st, 0);
		uint64_t seq = (uint64_t)sqlite3_column_int64(st, 1);
		assert_true(who >= 1 && who <= ORDER_THREADS);
		assert_int_equal(seq, next[who]);
		next[who]++;
		rows++;
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
	assert_int_equal(rows, ORDER_THREADS * ORDER_EACH);
}

/* The disk fills up while events wait in the queue: the calls that
 * queued them returned 0 (nothing was written yet), and the failure of
 * writing them comes back from the flush, then from every later call,
 * the same first error, after one failed statement. */
static void
test_queue_failure_next_call(void **state)
{
	(void)state;
	char path[512];
	path_in(path, sizeof(path), "qfail.db");
	assert_int_equal(full_vfs_install(), SQLITE_OK);
	ms_errbuf eb = { "" };
	ms_rec *r = NULL;
	ms_rec_opts o = { .path = path,
		          .batch_events = 100000,
		          .batch_ms = 3600000 };
	assert_int_equal(ms_rec_open(&r, &o, &eb), 0);
	ms_ev_input in[16];
	ms_ev_merge m;
	full_vfs_arm(0);
	for (uint64_t s = 1; s <= 5; s++) {
		evf_merge(&m, in, s, 10, false);
		assert_int_equal(ms_rec_merge(r, &m, &eb), 0); /* queued */
	}
	assert_int_equal(ms_rec_flush(r, &eb), MS_ERR_IO);
	fprintf(stderr, "flush: %s\n", eb.msg);
	assert_non_null(strstr(eb.msg, path));
	assert_non_null(strstr(eb.msg, "database or disk is full"));
	ms_errbuf eb2 = { "" };
	ms_ev_pub p;
	evf_pub(&p, 0);
	assert_int_equal(ms_rec_pub(r, &p, &eb2), MS_ERR_IO);
	assert_string_equal(eb2.msg, eb.msg);
	evf_merge(&m, in, 6, 10, false);
	assert_int_equal(ms_rec_merge(r, &m, &eb2), MS_ERR_IO);
	assert_int_equal(ms_rec_failed(r, &eb2), MS_ERR_IO);
	assert_string_equal(eb2.msg, eb.msg);
	ms_rec_stats st;
	ms_rec_stats_get(r, &st);
	assert_int_equal(st.failed_statements, 1);
	assert_int_equal(st.merges_committed, 0);
	assert_int_equal(ms_rec_close(r, &eb2), MS_ERR_IO);
	full_vfs_disarm();
}

/* Events still queued at close are all written: the recorder's thread is
 * held, so none was drained before the close. Each call's merge and
 * inputs are overwritten as soon as the call returns: the log has what
 * each call was given (the queue holds copies). */
static void
test_queue_close_loses_nothing(void **state)
{
	(void)state;
	char path[512];
	path_in(path, sizeof(path), "qclose.db");
	ms_errbuf eb = { "" };
	ms_rec *r = NULL;
	ms_rec_opts o = { .path = path };
	assert_int_equal(ms_rec_open(&r, &o, &eb), 0);
	ms__rec_hold(r, true);
	ms_ev_input in[16];
	enum { N = 300 };
	for (uint64_t s = 1; s <= N; s++) {
		ms_ev_merge m;
		evf_merge(&m, in, s, N, true);
		assert_int_equal(ms_rec_merge(r, &m, &eb), 0);
		memset(&m, 0xa5, sizeof(m));
		memset(in, 0x5a, sizeof(in));
	}
	ms_rec_stats st;
	ms_rec_stats_get(r, &st);
	assert_int_equal(st.merges, N);
	assert_int_equal(st.merges_committed, 0);
	assert_int_equal(ms_rec_close(r, &eb), 0);
	struct expect x = { .n = N, .plugins = true, .next = 1 };
	ms_evdb *db = NULL;
	assert_int_equal(ms_evdb_open(&db, path, &eb), 0);
	assert_int_equal(ms_evdb_each_merge(db, NULL, check_merge, &x, &eb),
	                 0);
	ms_evdb_close(db);
	assert_int_equal(x.seen, N);
}

struct full_arg {
	ms_rec *r;
	_Atomic int done;
	int rc;
};

static void *
full_main(void *p)
{
	struct full_arg *a = p;
	ms_ev_input in[16];
	ms_errbuf eb;
	for (uint64_t s = 1; s <= 10 && a->rc == 0; s++) {
		ms_ev_merge m;
		evf_merge(&m, in, s, 10, false);
		a->rc = ms_rec_merge(a->r, &m, &eb);
	}
	atomic_store(&a->done, 1);
	return NULL;
}

/* The queue holds at most queue_bytes: with the recorder's thread held,
 * a caller that finds it full waits (it has not returned) until the
 * thread drains, and that wait counts as recording time (wait_ns, in
 * busy_ns). Nothing is lost. */
static void
test_queue_full_waits(void **state)
{
	(void)state;
	char path[512];
	path_in(path, sizeof(path), "qfull.db");
	ms_errbuf eb = { "" };
	ms_rec *r = NULL;
	ms_rec_opts o = { .path = path,
		          .queue_bytes = 3 * sizeof(ms_ev_merge) + 4096 };
	assert_int_equal(ms_rec_open(&r, &o, &eb), 0);
	ms__rec_hold(r, true);
	struct full_arg a = { .r = r };
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, full_main, &a), 0);
	for (long i = 0; i < 100000000 && ms__rec_waiters(r) == 0; i++)
		sched_yield();
	assert_int_equal(ms__rec_waiters(r), 1);
	int64_t seen = now_ns();
	ms_rec_stats st;
	ms_rec_stats_get(r, &st);
	assert_int_equal(st.merges, 3);
	assert_int_equal(atomic_load(&a.done), 0);
	int64_t let_go = now_ns();
	ms__rec_hold(r, false);
	pthread_join(t, NULL);
	assert_int_equal(a.rc, 0);
	ms_rec_stats_get(r, &st);
	fprintf(stderr, "waited %lld ns (at least %lld), busy %lld ns\n",
	        (long long)st.wait_ns, (long long)(let_go - seen),
	        (long long)st.busy_ns);
	assert_true(st.wait_ns >= let_go - seen);
	assert_true(st.busy_ns >= st.wait_ns);
	assert_int_equal(ms_rec_close(r, &eb), 0);
	assert_int_equal(merges_in(path), 10);
}

/* The child records merges and tells the parent, then makes no further
 * call: its recorder's thread commits them (batch_ms) on its own. */
static int
record_then_idle(void *arg, int fd)
{
	const char *path = arg;
	ms_errbuf eb;
	ms_rec *r = NULL;
	ms_rec_opts o = { .path = path,
		          .batch_events = 100000,
		          .batch_ms = 50 };
	if (ms_rec_open(&r, &o, &eb) < 0)
		return 2;
	ms_ev_input in[16];
	for (uint64_t s = 1; s <= 100; s++) {
		ms_ev_merge m;
		evf_merge(&m, in, s, 100, true);
		if (ms_rec_merge(r, &m, &eb) < 0)
			return 3;
	}
	uint64_t n = 100;
	if (write(fd, &n, 8) != 8)
		return 4;
	for (;;)
		pause();
}

/* The SIGKILL bound: events accepted batch_ms before the kill are in the
 * file, though the process made no call after them. The parent waits
 * (bounded) until a reader sees all 100 merges, kills the child, and the
 * file is intact and still holds them. */
static void
test_queue_sigkill_bound(void **state)
{
	(void)state;
	char path[512];
	path_in(path, sizeof(path), "qkilled.db");
	int rfd;
	pid_t pid = ms_test_child(record_then_idle, path, &rfd);
	uint64_t n = 0;
	assert_int_equal(read(rfd, &n, 8), 8);
	assert_int_equal(n, 100);
	int64_t t0 = now_ns();
	uint64_t seen = 0;
	for (int i = 0; i < 2000 && seen < n; i++) {
		struct stat sb;
		if (stat(path, &sb) == 0)
			seen = merges_in(path);
		if (seen < n) {
			struct timespec ts = { 0, 5000000 };
			nanosleep(&ts, NULL);
		}
	}
	fprintf(stderr,
	        "committed %llu merges %lld ms after the last call "
	        "(batch_ms 50)\n",
	        (unsigned long long)seen,
	        (long long)((now_ns() - t0) / 1000000));
	assert_int_equal(seen, n);
	assert_int_equal(kill(pid, SIGKILL), 0);
	int status = ms_test_child_wait(pid);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	close(rfd);
	assert_int_equal(merges_in(path), n);
}

/* ---- filter ----------------------------------------------------------- */

struct seqs {
	uint64_t n;
	uint64_t first, last;
	bool all_match;
	const ms_ev_filter *f;
};

static int
collect(void *ctx, const ms_ev_merge *m)
{
	struct seqs *s = ctx;
	if (!s->n)
		s->first = m->seq;
	s->last = m->seq;
	s->n++;
	if (s->f->lane && strcmp(m->lane, s->f->lane) != 0)
		s->all_match = false;
	if (s->f->klass && (int)m->sampling.klass != s->f->klass - 1)
		s->all_match = false;
	return 0;
}

static void
test_filter(void **state)
{
	(void)state;
	char path[512];
	path_in(path, sizeof(path), "filter.db");
	ms_errbuf eb;
	assert_int_equal(evf_record(path, "skywalking", 120, &eb), 0);
	ms_evdb *db = NULL;
	assert_int_equal(ms_evdb_open(&db, path, &eb), 0);

	ms_ev_filter f = { .lane = MS_LANE_FINALIZE };
	struct seqs s = { .all_match = true, .f = &f };
	assert_int_equal(ms_evdb_each_merge(db, &f, collect, &s, &eb), 0);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.first, 120);

	memset(&f, 0, sizeof(f));
	f.klass = MS_SAMPLING_EXECUTED + 1;
	s = (struct seqs){ .all_match = true, .f = &f };
	assert_int_equal(ms_evdb_each_merge(db, &f, collect, &s, &eb), 0);
	assert_true(s.n > 0 && s.n < 120);
	assert_true(s.all_match);

	memset(&f, 0, sizeof(f));
	f.has_seq_range = true;
	f.seq_min = 10;
	f.seq_max = 19;
	s = (struct seqs){ .all_match = true, .f = &f };
	assert_int_equal(ms_evdb_each_merge(db, &f, collect, &s, &eb), 0);
	assert_int_equal(s.n, 10);
	assert_int_equal(s.first, 10);
	assert_int_equal(s.last, 19);

	/* text: an input part ID of merge 42 (hex, any case) */
	memset(&f, 0, sizeof(f));
	f.text = "000000000000106A"; /* 4202 = merge 42, input 2 */
	s = (struct seqs){ .all_match = true, .f = &f };
	assert_int_equal(ms_evdb_each_merge(db, &f, collect, &s, &eb), 0);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.first, 42);
	ms_evdb_close(db);
}

/* ---- histogram -------------------------------------------------------- */

static void
test_hist_buckets(void **state)
{
	(void)state;
	assert_int_equal(ms_ev_hist_bucket(0), 0);
	assert_int_equal(ms_ev_hist_bucket(250000), 0);
	assert_int_equal(ms_ev_hist_bucket(250001), 1);
	assert_int_equal(ms_ev_hist_bucket(2500000), 3);
	assert_int_equal(ms_ev_hist_bucket(7000000), 5);
	assert_int_equal(ms_ev_hist_bucket(1000000000), 11);
	assert_int_equal(ms_ev_hist_bucket(1000000001), 12);
}

/* ---- errors ----------------------------------------------------------- */

static void
test_unwritable_path(void **state)
{
	(void)state;
	char path[512];
	path_in(path, sizeof(path), "no/such/dir/run.db");
	ms_errbuf eb = { "" };
	ms_rec *r = (ms_rec *)1;
	int rc = ms_rec_open(&r, &(ms_rec_opts){ .path = path }, &eb);
	assert_int_equal(rc, MS_ERR_IO);
	assert_null(r);
	assert_non_null(strstr(eb.msg, path));
	assert_non_null(strstr(eb.msg, "expected a writable file"));
	assert_null(strchr(eb.msg, '\n'));
}

static void
make_foreign(const char *path, int version)
{
	char sql[128];
	snprintf(sql, sizeof(sql),
	         "CREATE TABLE run(x); CREATE TABLE merge(x); "
	         "PRAGMA user_version = %d",
	         version);
	et_sql(path, sql);
}

/* Another program's SQLite database: a schema version of its own, no run
 * table. */
static void
make_alien(const char *path, int version)
{
	char sql[128];
	snprintf(sql, sizeof(sql),
	         "CREATE TABLE merge(x); PRAGMA user_version = %d", version);
	et_sql(path, sql);
}

static void
test_other_schema_version(void **state)
{
	(void)state;
	char path[512];
	path_in(path, sizeof(path), "v-next.db");
	/* A version other than this build's (the next one). */
	const int other = MS_EV_SCHEMA_VERSION + 1;
	make_foreign(path, other);
	ms_errbuf eb = { "" };
	ms_evdb *db = NULL;
	assert_int_equal(ms_evdb_open(&db, path, &eb), MS_ERR_FORMAT);
	assert_null(db);
	assert_non_null(strstr(eb.msg, path));
	char want[64];
	snprintf(want, sizeof(want), "schema version %d, expected %d", other,
	         MS_EV_SCHEMA_VERSION);
	assert_non_null(strstr(eb.msg, want));
	/* which of the two programs it needs */
	assert_non_null(strstr(eb.msg, "recorded by a newer mergescope"));
	char older[512];
	path_in(older, sizeof(older), "v-old.db");
	make_foreign(older, 3);
	assert_int_equal(ms_evdb_open(&db, older, &eb), MS_ERR_FORMAT);
	assert_non_null(strstr(eb.msg, older));
	assert_non_null(strstr(eb.msg, "recorded by an older mergescope"));
	/* Another program's database with a version of its own (no run
	 * table) is not called an older mergescope's. */
	char alien[512];
	path_in(alien, sizeof(alien), "v-alien.db");
	make_alien(alien, 3);
	assert_int_equal(ms_evdb_open(&db, alien, &eb), MS_ERR_FORMAT);
	if (!strstr(eb.msg, "an SQLite database of schema version 3, not one "
	                    "mergescope writes"))
		fail_msg("%s", eb.msg);
	/* A negative version is one no mergescope writes: an SQLite
	 * database, said as such (it was "not an SQLite database (not an
	 * error)", the -1 taken for "unreadable"), also when a run would
	 * overwrite it. */
	static const int negative[] = { -1, -7 };
	for (size_t i = 0; i < 2; i++) {
		char neg[512], nwant[128];
		snprintf(neg, sizeof(neg), "%s/v%d.db", tmpdir, negative[i]);
		make_foreign(neg, negative[i]);
		assert_int_equal(ms_evdb_open(&db, neg, &eb), MS_ERR_FORMAT);
		snprintf(nwant, sizeof(nwant),
		         "an SQLite database of schema version %d, not one "
		         "mergescope writes",
		         negative[i]);
		if (!strstr(eb.msg, nwant))
			fail_msg("%s", eb.msg);
		ms_rec *nr = NULL;
		ms_rec_opts no = { .path = neg, .overwrite = true };
		assert_int_equal(ms_rec_open(&nr, &no, &eb), MS_ERR_FORMAT);
		assert_null(strstr(eb.msg, "not an SQLite database"));
		assert_non_null(strstr(eb.msg, "schema version"));
	}
	/* a directory is named as one, not as an I/O error */
	char dir[512];
	path_in(dir, sizeof(dir), "a-directory.db");
	assert_int_equal(mkdir(dir, 0700), 0);
	assert_int_equal(ms_evdb_open(&db, dir, &eb), MS_ERR_INVAL);
	assert_null(db);
	assert_non_null(strstr(eb.msg, dir));
	assert_non_null(strstr(eb.msg, "is a directory; expected a database "
	                                "written by `mergescope run`"));

	ms_rec *r = NULL;
	memset(&eb, 0, sizeof(eb));
	ms_rec_opts o = { .path = path, .overwrite = true };
	assert_int_equal(ms_rec_open(&r, &o, &eb), MS_ERR_FORMAT);
	assert_non_null(strstr(eb.msg, want));
	/* the foreign file is left alone */
	assert_int_equal(access(path, F_OK), 0);

	/* not a database at all */
	path_in(path, sizeof(path), "text.db");
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("hello, this is not sqlite, just text padding it out........"
	      "...............................................\n",
	      f);
	fclose(f);
	assert_int_equal(ms_evdb_open(&db, path, &eb), MS_ERR_FORMAT);
	assert_non_null(strstr(eb.msg, path));
	assert_null(strchr(eb.msg, '\n'));

	path_in(path, sizeof(path), "missing.db");
	assert_int_equal(ms_evdb_open(&db, path, &eb), MS_ERR_NOTFOUND);
	assert_non_null(strstr(eb.msg, path));
}

static void
test_exists_without_overwrite(void **state)
{
	(void)state;
	char path[512];
	path_in(path, sizeof(path), "twice.db");
	ms_errbuf eb;
	assert_int_equal(evf_record(path, "disabled", 3, &eb), 0);
	ms_rec *r = NULL;
	assert_int_equal(ms_rec_open(&r, &(ms_rec_opts){ .path = path }, &eb),
	                 MS_ERR_EXISTS);
	assert_non_null(strstr(eb.msg, path));
	/* with overwrite it starts empty */
	ms_rec_opts o = { .path = path, .overwrite = true };
	assert_int_equal(ms_rec_open(&r, &o, &eb), 0);
	assert_int_equal(ms_rec_close(r, &eb), 0);
	assert_int_equal(merges_in(path), 0);
	assert_int_equal(ms_rec_close(NULL, &eb), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_busy_counts_commits_once),
		cmocka_unit_test(test_out_of_memory),
		cmocka_unit_test(test_event_no_memory),
		cmocka_unit_test(test_no_thread_for_timer),
		cmocka_unit_test(test_disk_full),
		cmocka_unit_test(test_queue_order_across_threads),
		cmocka_unit_test(test_queue_failure_next_call),
		cmocka_unit_test(test_queue_close_loses_nothing),
		cmocka_unit_test(test_queue_full_waits),
		cmocka_unit_test(test_queue_sigkill_bound),
		cmocka_unit_test(test_create_disk_full),
		cmocka_unit_test(test_unfinished_run),
		cmocka_unit_test(test_close_commits),
		cmocka_unit_test(test_close_checkpoint_full),
		cmocka_unit_test(test_copied_without_wal),
		cmocka_unit_test(test_copied_without_wal_opens),
		cmocka_unit_test(test_merge_after_end),
		cmocka_unit_test(test_merge_m_nan),
		cmocka_unit_test(test_timer_commits),
		cmocka_unit_test(test_sigkill),
		cmocka_unit_test(test_part_index_at_end),
		cmocka_unit_test(test_filter),
		cmocka_unit_test(test_hist_buckets),
		cmocka_unit_test(test_unwritable_path),
		cmocka_unit_test(test_run_written_at_open),
		cmocka_unit_test(test_page_cache_bounded),
		cmocka_unit_test(test_reader_locked_out),
		cmocka_unit_test(test_other_schema_version),
		cmocka_unit_test(test_exists_without_overwrite),
		cmocka_unit_test(test_schema_md_listing),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
