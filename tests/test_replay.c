/*
 * test_replay.c - the replay controller end to end on the smoke fixture:
 * every variant runs its whole day headless with every gate passing and
 * one recorded event per completed merge; disabled and alwayskeep select
 * the same merges and end with the same ledgers; breakpoints and stepping
 * stop exactly where they say; a run killed with SIGKILL leaves a database
 * that opens and holds what it reported committed; bad input is refused
 * with one line naming what and where, before any work. No wait is
 * unbounded: a merge-idle wait past --wait-timeout fails the run naming
 * what it waited for (time held at a barrier does not count), and an event
 * database whose disk fills up stops the run with its path and error.
 */
#define _GNU_SOURCE /* syncfs */
#include "ms_clock.h"
#include "ms_pipeline.h"
#include "child_testlib.h"
#include "thread_testlib.h"
#include "replay_testlib.h"
#include "replay_int.h"
#include "sqlite_full_vfs.h"
#include "ms_replay_events.h"
#include "ms_gates.h"
#include "ms_rusage.h"
#include "ms_owner.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "alloc_testlib.h"

#include <dirent.h>
#include <inttypes.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <sys/wait.h>

/* ---- a counting hook on the sync calls --------------------------------- */

/* This executable's own fsync, fdatasync and syncfs: every call from the
 * statically linked engine, shard and controller comes here, and so does
 * every call of the shared SQLite library (they are exported for it).
 * While hook_prefix is set, calls on a file or directory under it (the
 * run's shard) are counted in hook_syncs, every other call by kind in
 * hook_else (fsync and syncfs) and hook_else_data (fdatasync, as SQLite
 * syncs the event database): what strace counts is their sum. */
#define HOOK_EXPORT __attribute__((visibility("default")))
static char hook_prefix[PATH_MAX];
static atomic_ulong hook_syncs, hook_else, hook_else_data;

static void
hook_count(int fd, bool data)
{
	if (!hook_prefix[0])
		return;
	char link[64], path[PATH_MAX];
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(link, path, sizeof(path) - 1);
	path[n < 0 ? 0 : n] = '\0';
	size_t k = strlen(hook_prefix);
	if (n >= 0 && strncmp(path, hook_prefix, k) == 0 &&
	    (path[k] == '/' || path[k] == '\0'))
		atomic_fetch_add(&hook_syncs, 1);
	else
		atomic_fetch_add(data ? &hook_else_data : &hook_else, 1);
}

HOOK_EXPORT int
fsync(int fd)
{
	hook_count(fd, false);
	return (int)syscall(SYS_fsync, fd);
}

HOOK_EXPORT int
fdatasync(int fd)
{
	hook_count(fd, true);
	return (int)syscall(SYS_fdatasync, fd);
}

HOOK_EXPORT int
syncfs(int fd)
{
	hook_count(fd, false);
	return (int)syscall(SYS_syncfs, fd);
}

/* renameat2, as the shard publishes a part's files with it: while
 * hook_prefix is set, a rename from the shard's tmp/ into its parts/ is
 * counted (a publication or a merge output, one per file). */
static atomic_ulong hook_renames;

/* path lies in the directory `sub` of the shard hook_prefix names. */
static bool
in_shard_sub(const char *path, const char *sub)
{
	const char *base = strrchr(hook_prefix, '/');
	char want[PATH_MAX];
	snprintf(want, sizeof(want), "%s/%s/", base ? base : hook_prefix, sub);
	return strstr(path, want) != NULL;
}

HOOK_EXPORT int
renameat2(int from_dir, const char *from, int to_dir, const char *to,
          unsigned int flags)
{
	if (hook_prefix[0] && in_shard_sub(from, "tmp") &&
	    in_shard_sub(to, "parts"))
		atomic_fetch_add(&hook_renames, 1);
	return (int)syscall(SYS_renameat2, from_dir, from, to_dir, to, flags);
}

/* copy_file_range, as the staging in this executable calls it: counted,
 * and failing with EXDEV while cfr_exdev is set (two file systems that
 * cannot copy between them, whatever this machine's are). */
static atomic_ulong cfr_calls;
static atomic_bool cfr_exdev;

ssize_t
copy_file_range(int in, __off64_t *in_off, int out, __off64_t *out_off,
                size_t n, unsigned int flags)
{
	atomic_fetch_add(&cfr_calls, 1);
	if (atomic_load(&cfr_exdev)) {
		errno = EXDEV;
		return -1;
	}
	return (ssize_t)syscall(SYS_copy_file_range, in, in_off, out, out_off,
	                        n, flags);
}

/* ---- whole runs ------------------------------------------------------- */

/* One finished lane-mode run per variant, shared by the tests that read
 * it (each test runs it if no earlier test did). */
typedef struct done_run {
	const char *variant;
	const char *policy;  /* NULL = selection */
	const char *staging; /* NULL = retain */
	bool done;
	bool ok; /* DONE with every gate passing */
	char db[PATH_MAX];
	uint64_t merges;
	/* What ms_replay_recent gave at the end: merges from first_seq on,
	 * their kept inputs counted and their ids summed. */
	uint64_t first_seq, recent_inputs, recent_id_sum;
	/* The oracle's table at the end: entries held, the day's traces
	 * and how many the chain drops. */
	uint64_t oracle_held, oracle_traces, oracle_drops;
	/* The lifecycle table at the end: part IDs, entries allocated, its
	 * bytes and the ledgers it holds; the parts left in the shard. */
	uint64_t track_n, track_cap;
	size_t track_bytes, track_leds, final_parts;
	/* The ring of recent merges at the end: records held, bytes its
	 * block was ever written. */
	uint64_t recent_n, recent_touched;
} done_run;

static done_run runs[] = {
	{ .variant = "disabled" },
	{ .variant = "alwayskeep" },
	{ .variant = "detdrop:35" },
	{ .variant = "skywalking" },
	{ .variant = "skywalking", .policy = "trace" },
	{ .variant = "detdrop:35", .policy = "trace" },
	{ .variant = "alwayskeep", .staging = "reread" },
	{ .variant = "detdrop:35", .staging = "reread" },
	{ .variant = "skywalking", .staging = "reread" },
	{ .variant = "skywalking", .policy = "trace", .staging = "reread" },
	{ .variant = "detdrop:35", .policy = "trace", .staging = "reread" },
};

static bool
same_opt(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static int
count_merge(void *ctx, const ms_ev_merge *m)
{
	(void)m;
	(*(uint64_t *)ctx)++;
	return 0;
}

/* The same sums over the event log's merges from first_seq on. */
typedef struct input_sums {
	uint64_t first_seq, inputs, id_sum;
} input_sums;

static int
sum_inputs(void *ctx, const ms_ev_merge *m)
{
	input_sums *s = ctx;
	if (m->seq < s->first_seq)
		return 0;
	for (size_t i = 0; i < m->ninputs && i < MS_REPLAY_RECENT_INPUTS; i++) {
		s->inputs++;
		s->id_sum += m->inputs[i].id;
	}
	return 0;
}

/* The recent merges with their inputs, as the TUI reads them. */
static void
take_recent(ms_replay *r, done_run *d)
{
	ms_ev_merge *m = calloc(MS_REPLAY_RECENT, sizeof(*m));
	ms_ev_input *in =
	        calloc((size_t)MS_REPLAY_RECENT * MS_REPLAY_RECENT_INPUTS,
	               sizeof(*in));
	assert_non_null(m);
	assert_non_null(in);
	size_t n = ms_replay_recent(r, m, in, MS_REPLAY_RECENT, NULL);
	assert_true(n > 0);
	d->first_seq = m[0].seq;
	for (size_t i = 0; i < n; i++) {
		assert_non_null(m[i].inputs);
		assert_true(m[i].ninputs >= 2);
		for (size_t k = 0;
		     k < m[i].ninputs && k < MS_REPLAY_RECENT_INPUTS; k++) {
			d->recent_inputs++;
			d->recent_id_sum += m[i].inputs[k].id;
		}
	}
	/* Without an inputs buffer, no pointers. */
	assert_int_equal(ms_replay_recent(r, m, NULL, 1, NULL), 1);
	assert_null(m[0].inputs);
	free(m);
	free(in);
}

/* A run's file name from a variant: its ':' made '_'. */
static void
name_from_variant(char *name)
{
	for (char *c = name; *c; c++)
		if (*c == ':')
			*c = '_';
}

/* Wait for r to end; true when it is DONE with every gate passing (what
 * failed printed, labelled what). Its completed merges into *merges. */
static bool
wait_done_clean(ms_replay *r, const char *what, uint64_t *merges)
{
	assert_int_equal(ms_replay_wait(r, -1), 0);
	ms_replay_status *st = rt_status_new();
	ms_replay_get_status(r, st);
	if (st->state != MS_REPLAY_DONE)
		fprintf(stderr, "%s: run ended %s: %s\n", what,
		        ms_replay_state_name(st->state), st->error);
	unsigned failed = rt_print_gates(r, what);
	bool ok = st->state == MS_REPLAY_DONE && failed == 0;
	*merges = st->merges_done;
	free(st);
	return ok;
}

static done_run *
full_run_staging(const char *variant, const char *policy, const char *staging)
{
	done_run *d = NULL;
	for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++)
		if (!strcmp(runs[i].variant, variant) &&
		    same_opt(runs[i].policy, policy) &&
		    same_opt(runs[i].staging, staging))
			d = &runs[i];
	assert_non_null(d);
	if (d->done)
		return d;
	d->done = true;
	rt_run run;
	char name[64];
	snprintf(name, sizeof(name), "full-%.20s-%s-%s", variant,
	         policy ? policy : "selection", staging ? staging : "retain");
	name_from_variant(name);
	rt_opts(&run, name, variant);
	run.o.grace_policy = policy;
	run.o.staging = staging;
	ms_replay *r = NULL;
	ms_errbuf eb = { { 0 } };
	int rc = ms_replay_open(&r, &run.o, &eb);
	if (rc)
		fprintf(stderr, "%s: %s\n", variant, eb.msg);
	assert_int_equal(rc, 0);
	assert_int_equal(ms_replay_start(r, &eb), 0);
	d->ok = wait_done_clean(r, variant, &d->merges);
	snprintf(d->db, sizeof(d->db), "%s", run.db);
	take_recent(r, d);
	d->oracle_held = r->oracle.nent;
	d->oracle_traces = r->oracle.n;
	d->oracle_drops = r->oracle.drop;
	d->track_n = r->track_n;
	d->track_cap = r->track_cap;
	d->recent_n = r->recent.n;
	d->recent_touched = ms__recent_bytes(&r->recent, NULL);
	d->track_bytes = ms__replay_track_bytes(r, &d->track_leds);
	ms_view *v = NULL;
	assert_int_equal(ms_shard_view(r->shard, &v, NULL), 0);
	d->final_parts = ms_view_count(v);
	ms_view_release(v);
	ms_replay_close(r);
	return d;
}

static done_run *
full_run_policy(const char *variant, const char *policy)
{
	return full_run_staging(variant, policy, NULL);
}

static done_run *
full_run(const char *variant)
{
	return full_run_policy(variant, NULL);
}

static void
check_full_run_policy(const char *variant, const char *policy)
{
	done_run *d = full_run_policy(variant, policy);
	assert_true(d->ok);
	assert_true(d->merges > 0);
	/* Every completed merge is one event, read back from the file. */
	ms_evdb *db = NULL;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_evdb_open(&db, d->db, &eb), 0);
	uint64_t n = 0;
	assert_int_equal(ms_evdb_each_merge(db, NULL, count_merge, &n, &eb), 0);
	assert_int_equal(n, d->merges);
	ms_ev_run_end end;
	bool has_end = false;
	assert_int_equal(ms_evdb_run(db, NULL, &end, &has_end, &eb), 0);
	assert_true(has_end);
	assert_string_equal(end.status, "complete");
	assert_int_equal(end.merges_completed, n);
	/* The recent merges' inputs are the recorded ones. */
	input_sums is = { .first_seq = d->first_seq };
	assert_int_equal(ms_evdb_each_merge(db, NULL, sum_inputs, &is, &eb), 0);
	assert_true(is.inputs > 0);
	assert_int_equal(is.inputs, d->recent_inputs);
	assert_int_equal(is.id_sum, d->recent_id_sum);
	ms_evdb_close(db);
}

static void
check_full_run(const char *variant)
{
	check_full_run_policy(variant, NULL);
}

static void
test_run_disabled(void **state)
{
	(void)state;
	check_full_run("disabled");
}

static void
test_run_alwayskeep(void **state)
{
	(void)state;
	check_full_run("alwayskeep");
}

static void
test_run_detdrop(void **state)
{
	(void)state;
	check_full_run("detdrop:35");
	/* The run agreed with the oracle: from its end to the gates the
	 * oracle held only the traces it drops, not the whole day. */
	done_run *d = full_run("detdrop:35");
	assert_true(d->oracle_drops > 0);
	assert_true(d->oracle_drops < d->oracle_traces);
	assert_int_equal(d->oracle_held, d->oracle_drops);
	/* The lifecycle table's entries are packed: allocated room grows
	 * by half, not to twice the IDs seen. */
	assert_true(d->track_n > 32);
	assert_true(d->track_cap <= d->track_n + d->track_n / 2);
	/* ... by a quarter; and it holds the ledgers of the parts still in
	 * the shard only (a merged-away part's went with its merge's
	 * reconciliation), not one set per part ID of the day. */
	assert_true(d->track_cap <= d->track_n + d->track_n / 4 + 1);
	assert_true(d->final_parts > 0);
	assert_true(d->track_leds <= d->final_parts);
	assert_true(d->track_n > 4 * d->final_parts);
	assert_true(sizeof(track_ent) <= 40);
	fprintf(stderr,
	        "lifecycle table: %llu IDs, %zu bytes, %zu ledger sets, "
	        "%zu parts at the end\n",
	        (unsigned long long)d->track_n, d->track_bytes, d->track_leds,
	        d->final_parts);
}

static ms_replay *open_started(rt_run *run, const char *name,
                               const char *variant, bool serial, bool paused,
                               const char *bp);

/* A paused detdrop run whose shard is in `dir` (the tests' root, on a
 * disk where there is one; or the tmpfs the shards go to). */
static ms_replay *
open_paused_in(rt_run *run, const char *name, const char *dir)
{
	rt_opts(run, name, "detdrop:35");
	snprintf(run->work, sizeof(run->work), "%s/%s.shard", dir, name);
	run->o.start_paused = true;
	ms_replay *r = rt_start(run, NULL);
	assert_non_null(r);
	return r;
}

/* Descriptors of this process open on a file under dir that has no
 * name (the oracle's table spilled to the cache directory). */
static unsigned
unlinked_fds_in(const char *dir)
{
	unsigned n = 0;
	char want[PATH_MAX + 2];
	snprintf(want, sizeof(want), "%s/", dir);
	for (int fd = 0; fd < 1024; fd++) {
		char link[64], target[PATH_MAX + 32];
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		ssize_t k = readlink(link, target, sizeof(target) - 1);
		if (k <= 0)
			continue;
		target[k] = '\0';
		n += strncmp(target, want, strlen(want)) == 0 &&
		     strstr(target, " (deleted)") != NULL;
	}
	return n;
}

/* XDG_CACHE_HOME set to <parent>/<name>-cache (made), or with HOME unset
 * when parent is NULL (no cache directory at all); the cache directory
 * mergescope uses in it into cache ("" for none). Whether that is on a
 * disk (as its parent, made already, is: the run makes the rest). */
static bool
cache_in(const char *parent, const char *name, char *cache, size_t n)
{
	cache[0] = '\0';
	if (!parent) {
		assert_int_equal(unsetenv("XDG_CACHE_HOME"), 0);
		assert_int_equal(unsetenv("HOME"), 0);
		return false;
	}
	char xdg[PATH_MAX];
	snprintf(xdg, sizeof(xdg), "%s/%s-cache", parent, name);
	assert_true(mkdir(xdg, 0755) == 0 || errno == EEXIST);
	assert_int_equal(setenv("XDG_CACHE_HOME", xdg, 1), 0);
	snprintf(cache, n, "%s/mergescope", xdg);
	return !ms_fs_in_memory(xdg);
}

/* The oracle's table is not in memory from the oracle's end to the
 * gates when the work directory is on a disk: its thread spilled it
 * there, and the gates read it back (every verdict as before, the file
 * gone). With the work directory on a tmpfs, the table goes to a file
 * without a name in the cache directory when that is on a disk (before,
 * it stayed in memory); it stays in memory when the cache is on a tmpfs
 * too (a file there is memory too) or there is none. Each case is held
 * to what its file systems call for. */
static void
oracle_spill_in(const char *dir, const char *name, const char *cache_parent)
{
	char cache[PATH_MAX];
	bool cache_disk = cache_in(cache_parent, name, cache, sizeof(cache));
	rt_run run;
	ms_replay *r = open_paused_in(&run, name, dir);
	bool spills = !ms_fs_in_memory(r->work_dir);
	ms_replay_status *st = rt_status_new();
	assert_true(rt_wait_stop(r, st));
	assert_int_equal(ms__oracle_wait(r), 0);
	bool unlinked = !spills && cache_disk;
	assert_true(r->oracle.ok);
	assert_true(r->oracle.nent > 0);
	char path[PATH_MAX + 32];
	snprintf(path, sizeof(path), "%s/%s", r->work_dir, MS__ORACLE_SPILL);
	size_t table = r->oracle.nent * sizeof(ms__oracle_ent) +
	               r->oracle.nfrags * sizeof(ms__oracle_frag);
	fprintf(stderr, "%s: work dir %s, cache %s: table %s\n", name,
	        r->work_dir, cache[0] ? cache : "(none)",
	        spills ? "in the work dir" : unlinked ? "in the cache"
	                                              : "in memory");
	if (spills || unlinked) {
		assert_int_equal(ms__oracle_resident_bytes(&r->oracle), 0);
		assert_null(r->oracle.ent);
		assert_int_equal(r->oracle.spill_unlinked, unlinked);
		if (spills)
			assert_string_equal(r->oracle.spill, path);
		else
			assert_int_equal(unlinked_fds_in(cache), 1);
	} else {
		assert_int_equal(ms__oracle_resident_bytes(&r->oracle), table);
		assert_string_equal(r->oracle.spill, "");
	}
	assert_int_equal(ms_fs_is_file(path), spills);
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_replay_command(r, MS_RCMD_RUN, &eb), 0);
	uint64_t merges;
	assert_true(wait_done_clean(r, name, &merges));
	assert_false(ms_fs_is_file(path));
	assert_string_equal(r->oracle.spill, "");
	assert_false(r->oracle.spill_unlinked);
	if (cache[0])
		assert_int_equal(unlinked_fds_in(cache), 0);
	assert_int_equal(r->oracle.nent, r->oracle.drop);
	assert_int_equal(ms__oracle_resident_bytes(&r->oracle),
	                 r->oracle.nent * sizeof(ms__oracle_ent) +
	                         r->oracle.nfrags * sizeof(ms__oracle_frag));
	ms_replay_close(r);
	free(st);
}

/* XDG_CACHE_HOME and HOME as they were. */
typedef struct saved_env {
	char *xdg, *home;
} saved_env;

static saved_env
env_save(void)
{
	const char *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
	return (saved_env){ x ? strdup(x) : NULL, h ? strdup(h) : NULL };
}

static void
env_restore(saved_env *e)
{
	const char *names[] = { "XDG_CACHE_HOME", "HOME" };
	char *vals[] = { e->xdg, e->home };
	for (int i = 0; i < 2; i++) {
		if (vals[i])
			setenv(names[i], vals[i], 1);
		else
			unsetenv(names[i]);
		free(vals[i]);
	}
}

static void
test_oracle_spilled_until_gates(void **state)
{
	(void)state;
	saved_env e = env_save();
	oracle_spill_in(rt.root, "oracle-spill-root", rt.root);
	oracle_spill_in(rt.shm, "oracle-spill-shm", rt.shm);
	oracle_spill_in(rt.shm, "oracle-spill-shm-cache", rt.root);
	oracle_spill_in(rt.shm, "oracle-spill-shm-nocache", NULL);
	env_restore(&e);
}

/* The oracle on its own thread, as a replay runs it, with the chain
 * spec and the cancel flag of the test. */
typedef struct oracle_job {
	ms__oracle o;
	const ms_fixture *fx;
	const char *spec;
	_Atomic bool cancel;
	int rc;
} oracle_job;

static void *
oracle_job_main(void *arg)
{
	oracle_job *j = arg;
	j->rc = ms__oracle_run(&j->o, j->fx, j->spec, MS_TEST_PLUGIN_DIR,
	                       120 * 1000000000ULL, MS_PLUGIN_HOST_INPROC, NULL,
	                       &j->cancel, true);
	return NULL;
}

/* Threads of this process called name (a chain's Decide workers are
 * "ms-plugin-call", started at a link's first call). */
static unsigned
threads_named(const char *name)
{
	unsigned n = 0;
	DIR *d = opendir("/proc/self/task");
	assert_non_null(d);
	for (struct dirent *e; (e = readdir(d));) {
		char path[300], comm[32] = "";
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm",
		         e->d_name);
		FILE *f = e->d_name[0] != '.' ? fopen(path, "r") : NULL;
		if (!f)
			continue;
		if (fgets(comm, sizeof(comm), f))
			comm[strcspn(comm, "\n")] = '\0';
		fclose(f);
		n += strcmp(comm, name) == 0;
	}
	closedir(d);
	return n;
}

/* A quit or a signal while the day waits for the oracle stops it after
 * the chain call in progress: the oracle's every Decide waits for a
 * file (tp_slow), the run cancels while the first waits, then the file
 * appears. The oracle returns cancelled, with no verdicts, instead of
 * going on through the day's remaining batches (each a plugin call). */
static void
test_oracle_cancel_stops_between_batches(void **state)
{
	(void)state;
	char gate[PATH_MAX], spec[PATH_MAX + 64];
	rt_path(gate, sizeof(gate), "oracle-cancel-gate");
	unlink(gate);
	snprintf(spec, sizeof(spec), "tp_slow:{\"slow\":\"0/1@%s\"}", gate);
	ms_fixture *fx = NULL;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_fixture_open(&fx, rt.fixture, &eb), 0);
	oracle_job *j = calloc(1, sizeof(*j));
	assert_non_null(j);
	j->fx = fx;
	j->spec = spec;
	unsigned before = threads_named("ms-plugin-call");
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, oracle_job_main, j), 0);
	/* Its first Decide has started (and waits for the file). */
	bool calling = false;
	for (int i = 0; i < 6000 && !calling; i++) {
		calling = threads_named("ms-plugin-call") > before;
		if (!calling)
			nanosleep(&(struct timespec){ 0, 10000000L }, NULL);
	}
	atomic_store(&j->cancel, true);
	FILE *g = fopen(gate, "w");
	assert_non_null(g);
	fclose(g);
	pthread_join(t, NULL);
	assert_true(calling);
	assert_int_equal(j->rc, MS_ERR_CANCELED);
	assert_false(j->o.ok);
	assert_non_null(strstr(j->o.why, "cancelled"));
	ms__oracle_release(&j->o);
	free(j);
	ms_fixture_close(fx);
	unlink(gate);
}

/* The oracle sorts the day's blocks by trace ID without a copy of them:
 * what it holds on top of the blocks and rows it read is a few bytes a
 * trace (the indices it sorts, the verdicts), not the 40 bytes of each
 * block again (before, the sort's scratch was a copy of the blocks, the
 * oracle's peak and the run's on a large day). What it holds at the end
 * is its table. */
static void
test_oracle_sorts_blocks_without_a_copy(void **state)
{
	(void)state;
	ms_fixture *fx = NULL;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_fixture_open(&fx, rt.fixture, &eb), 0);
	ms__oracle o;
	assert_int_equal(ms__oracle_run(&o, fx, "skywalking",
	                                MS_PLUGIN_DIR, 120 * 1000000000ULL,
	                                MS_PLUGIN_HOST_INPROC, NULL, NULL,
	                                true),
	                 0);
	assert_true(o.ok);
	assert_true(o.n > 0);
	fprintf(stderr, "oracle: %zu traces, read %zu B, peak %zu B\n", o.n,
	        o.held_read, o.held_peak);
	assert_true(o.held_read > 0);
	assert_true(o.held_peak >= o.held_read);
	assert_true(o.held_peak - o.held_read <= 10 * o.n);
	assert_int_equal(o.held, ms__oracle_resident_bytes(&o));
	ms__oracle_release(&o);
	ms_fixture_close(fx);
}

/* A run closed before its gates removes the spilled table: the file in
 * its work directory on a disk, the file without a name in the cache
 * when its work directory is on a tmpfs. */
static void
spill_removed_at_close(const char *dir, const char *name)
{
	char cache[PATH_MAX];
	bool cache_disk = cache_in(rt.root, name, cache, sizeof(cache));
	rt_run run;
	ms_replay *r = open_paused_in(&run, name, dir);
	ms_replay_status *st = rt_status_new();
	assert_true(rt_wait_stop(r, st));
	assert_int_equal(ms__oracle_wait(r), 0);
	char path[PATH_MAX + 32];
	snprintf(path, sizeof(path), "%s/%s", r->work_dir, MS__ORACLE_SPILL);
	bool in_memory = ms_fs_in_memory(r->work_dir);
	assert_int_equal(ms_fs_is_file(path), !in_memory);
	assert_int_equal(unlinked_fds_in(cache),
	                 in_memory && cache_disk);
	ms_replay_close(r);
	assert_false(ms_fs_is_file(path));
	assert_int_equal(unlinked_fds_in(cache), 0);
	free(st);
}

static void
test_oracle_spill_removed_at_close(void **state)
{
	(void)state;
	saved_env e = env_save();
	spill_removed_at_close(rt.root, "oracle-spill-close");
	spill_removed_at_close(rt.shm, "oracle-spill-close-shm");
	env_restore(&e);
}

static void
test_run_skywalking(void **state)
{
	(void)state;
	check_full_run("skywalking");
	/* The recent merges of a one-link chain take their own bytes, 2 KiB
	 * at most each, not a whole event and 32 inputs' room (7 KiB). */
	done_run *d = full_run("skywalking");
	assert_int_equal(d->recent_n, d->merges < MS_REPLAY_RECENT
	                                      ? d->merges
	                                      : MS_REPLAY_RECENT);
	assert_true(d->recent_touched > 0);
	assert_true(d->recent_touched <= d->recent_n * 2048);
}

/* Under the trace grace policy merges drop traces all day, not only in
 * the finalize: every drop, from either phase, must reach the drop oracle
 * (the ledgers gate) and the run must pass every gate. The smoke day runs
 * under the policy with every gate passing; the drops by phase are counted
 * on a day-1x day, whose primary phase meets matured traces whatever the
 * write schedule (rt_day1x_fixture). */
typedef struct drop_phases {
	uint64_t primary, cooldown, finalize;
} drop_phases;

static int
count_drops(void *ctx, const ms_ev_merge *m)
{
	drop_phases *p = ctx;
	if (!m->sampling.traces_dropped)
		return 0;
	if (!strcmp(m->lane, "finalize"))
		p->finalize += m->sampling.traces_dropped;
	else if (m->phase == MS_EV_PHASE_PRIMARY)
		p->primary += m->sampling.traces_dropped;
	else
		p->cooldown += m->sampling.traces_dropped;
	return 0;
}

static void
check_trace_policy_drops(const char *variant)
{
	check_full_run_policy(variant, "trace");
	const char *fixture = rt_day1x_fixture();
	assert_non_null(fixture);
	rt_run run;
	char name[64];
	snprintf(name, sizeof(name), "day1x-trace-%.20s", variant);
	name_from_variant(name);
	rt_opts(&run, name, variant);
	run.o.fixture_dir = fixture;
	run.o.grace_policy = "trace";
	ms_replay *r = rt_start(&run, NULL);
	assert_non_null(r);
	uint64_t merges = 0;
	bool ok = wait_done_clean(r, name, &merges);
	ms_replay_close(r);
	assert_true(ok);
	assert_true(merges > 0);
	ms_evdb *db = NULL;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_evdb_open(&db, run.db, &eb), 0);
	drop_phases p = { 0 };
	assert_int_equal(ms_evdb_each_merge(db, NULL, count_drops, &p, &eb), 0);
	ms_evdb_close(db);
	if (!p.primary || !p.finalize)
		fprintf(stderr,
		        "%s: %llu traces dropped in the primary phase, %llu "
		        "in the finalize\n",
		        variant, (unsigned long long)p.primary,
		        (unsigned long long)p.finalize);
	assert_true(p.primary > 0);
	assert_true(p.finalize > 0);
}

static void
test_trace_policy_skywalking(void **state)
{
	(void)state;
	check_trace_policy_drops("skywalking");
}

static void
test_trace_policy_detdrop(void **state)
{
	(void)state;
	check_trace_policy_drops("detdrop:35");
}

/* The sampling rule (ms_sampling_predict) at dispatch against every
 * merge's own classification: equal, except where the traces decide (see
 * ms_sampling.h): a merge predicted to execute may evaluate nothing
 * (enabled_no_evaluation: all_traces_oversized when a trace was
 * oversized, else other: no trace old enough under the trace policy,
 * none at all, or none reaching Decide for another reason) or be redone
 * losslessly after a guard conflict. */
typedef struct pred_tally {
	uint64_t merges, exact, by_traces, wrong;
	uint64_t exact_class[MS_SAMPLING_CLASS_COUNT];
	uint64_t first_wrong;
	char why[160];
	/* Merges whose staging plan is there when it should not be, or
	 * missing: as in the reference, a merge records one exactly when it
	 * set up sampling (staged, or redone losslessly after staging). */
	uint64_t plan_wrong, first_plan_wrong;
} pred_tally;

static bool
plan_as_staged(const ms_ev_merge *m)
{
	const ms_merge_sampling *s = &m->sampling;
	bool staged = s->klass != MS_SAMPLING_NOT_EXECUTED ||
	              s->reason == MS_SREASON_LOSSLESS_RETRY;
	bool plan = s->batches_planned > 0 && s->hard_limit_bytes > 0 &&
	            s->preferred_limit_bytes > 0;
	bool none = s->batches_planned == 0 && s->hard_limit_bytes == 0 &&
	            s->preferred_limit_bytes == 0 && s->estimate_bytes == 0;
	return staged ? plan : none;
}

static bool
decided_by_traces(const ms_ev_merge *m)
{
	const ms_merge_sampling *s = &m->sampling;
	if (m->predict_class != MS_SAMPLING_EXECUTED)
		return false;
	if (s->klass == MS_SAMPLING_NOT_EXECUTED)
		return s->reason == MS_SREASON_LOSSLESS_RETRY;
	if (s->klass != MS_SAMPLING_ENABLED_NO_EVALUATION)
		return false;
	switch (s->reason) {
	case MS_SREASON_ALL_TRACES_OVERSIZED:
		return s->traces_oversized > 0 && s->traces_evaluated == 0;
	case MS_SREASON_OTHER:
		return s->traces_oversized == 0 && s->traces_evaluated == 0;
	default:
		return false;
	}
}

static int
tally_prediction(void *ctx, const ms_ev_merge *m)
{
	pred_tally *t = ctx;
	const ms_merge_sampling *s = &m->sampling;
	t->merges++;
	if (!plan_as_staged(m) && !t->plan_wrong++)
		t->first_plan_wrong = m->seq;
	if (m->predict_class == s->klass && m->predict_reason == s->reason) {
		t->exact++;
		t->exact_class[s->klass]++;
		return 0;
	}
	if (decided_by_traces(m)) {
		t->by_traces++;
		return 0;
	}
	if (!t->wrong++) {
		t->first_wrong = m->seq;
		snprintf(t->why, sizeof(t->why),
		         "predicted %s (%s), merge %s (%s)",
		         ms_sampling_class_name(m->predict_class),
		         ms_sampling_reason_name(m->predict_reason),
		         ms_sampling_class_name(s->klass),
		         ms_sampling_reason_name(s->reason));
	}
	return 0;
}

/* The event database of a finished run that passed every gate. */
static ms_evdb *
open_done_run(const char *variant, const char *policy, done_run **run)
{
	done_run *d = full_run_policy(variant, policy);
	assert_true(d->ok);
	ms_evdb *db = NULL;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_evdb_open(&db, d->db, &eb), 0);
	if (run)
		*run = d;
	return db;
}

static pred_tally
predictions_of(const char *variant, const char *policy)
{
	done_run *d = NULL;
	ms_evdb *db = open_done_run(variant, policy, &d);
	ms_errbuf eb = { { 0 } };
	pred_tally t;
	memset(&t, 0, sizeof(t));
	assert_int_equal(
	        ms_evdb_each_merge(db, NULL, tally_prediction, &t, &eb), 0);
	ms_evdb_close(db);
	fprintf(stderr,
	        "%s/%s: %llu merges, %llu predicted exactly (%llu "
	        "not_executed, %llu enabled_no_evaluation, %llu executed), "
	        "%llu decided by their traces\n",
	        variant, policy ? policy : "selection",
	        (unsigned long long)t.merges, (unsigned long long)t.exact,
	        (unsigned long long)t.exact_class[MS_SAMPLING_NOT_EXECUTED],
	        (unsigned long long)
	                t.exact_class[MS_SAMPLING_ENABLED_NO_EVALUATION],
	        (unsigned long long)t.exact_class[MS_SAMPLING_EXECUTED],
	        (unsigned long long)t.by_traces);
	if (t.wrong)
		fprintf(stderr, "%s: %llu wrong predictions, first #%llu: %s\n",
		        variant, (unsigned long long)t.wrong,
		        (unsigned long long)t.first_wrong, t.why);
	if (t.plan_wrong)
		fprintf(stderr,
		        "%s: %llu merges with a staging plan that does not "
		        "match their class, first #%llu\n",
		        variant, (unsigned long long)t.plan_wrong,
		        (unsigned long long)t.first_plan_wrong);
	assert_int_equal(t.merges, d->merges);
	assert_int_equal(t.wrong, 0);
	assert_int_equal(t.plan_wrong, 0);
	return t;
}

static void
test_prediction_selection_policy(void **state)
{
	(void)state;
	/* Hot selections are predicted not to sample, the others to
	 * execute, and both happen on the smoke day. */
	pred_tally t = predictions_of("skywalking", NULL);
	assert_true(t.exact_class[MS_SAMPLING_NOT_EXECUTED] > 0);
	assert_true(t.exact_class[MS_SAMPLING_EXECUTED] > 0);
	t = predictions_of("disabled", NULL);
	assert_int_equal(t.exact, t.merges);
	assert_int_equal(t.exact_class[MS_SAMPLING_NOT_EXECUTED], t.merges);
}

static void
test_prediction_trace_policy(void **state)
{
	(void)state;
	/* Hot selections sample too: some evaluate traces, and those whose
	 * every input is younger than the frontier do not sample at all
	 * (not_executed, merge_grace, as in the reference), predicted
	 * exactly; no merge is predicted to stage and evaluate nothing. */
	pred_tally t = predictions_of("skywalking", "trace");
	assert_true(t.exact_class[MS_SAMPLING_EXECUTED] > 0);
	assert_true(t.exact_class[MS_SAMPLING_NOT_EXECUTED] > 0);
	assert_int_equal(t.exact_class[MS_SAMPLING_ENABLED_NO_EVALUATION], 0);
	predictions_of("detdrop:35", "trace");
}

/* The gates a run records and those a report derives from its event log
 * come from one table (ms_gates.h): the run records table gates in table
 * order, and every derived gate the run also records agrees with it. */
typedef struct gate_list {
	ms_ev_gate g[MS_GATE_COUNT];
	size_t n;
	bool bad_order;
} gate_list;

static int
collect_gate(void *ctx, const ms_ev_gate *g)
{
	gate_list *l = ctx;
	int id = ms_gate_parse(g->name);
	if (id < 0 || l->n == MS_GATE_COUNT ||
	    (l->n && ms_gate_parse(l->g[l->n - 1].name) >= id))
		l->bad_order = true;
	else
		l->g[l->n++] = *g;
	return 0;
}

static void
check_gates_agree(const char *variant, const char *policy)
{
	ms_evdb *db = open_done_run(variant, policy, NULL);
	ms_errbuf eb = { { 0 } };
	gate_list run = { .n = 0 };
	assert_int_equal(ms_evdb_each_gate(db, collect_gate, &run, &eb), 0);
	assert_false(run.bad_order);
	ms_ev_gate der[MS_GATE_COUNT];
	int n = ms_report_derive_gates(db, der, MS_GATE_COUNT, &eb);
	ms_evdb_close(db);
	assert_true(n > 0);
	size_t shared = 0;
	for (int i = 0; i < n; i++) {
		int id = ms_gate_parse(der[i].name);
		assert_true(id >= 0);
		if (!ms_gate_def_of((enum ms_gate)id)->run)
			continue;
		const ms_ev_gate *rg = NULL;
		for (size_t k = 0; k < run.n && !rg; k++)
			if (!strcmp(run.g[k].name, der[i].name))
				rg = &run.g[k];
		if (!rg)
			fail_msg("%s: derived gate %s not recorded by the run",
			         variant, der[i].name);
		assert_int_equal(rg->pass, der[i].pass);
		shared++;
	}
	/* event_count, lifecycle, ledgers and no_decide_when_hot. */
	assert_int_equal(shared, 4);
}

static void
test_gates_one_definition(void **state)
{
	(void)state;
	check_gates_agree("skywalking", NULL);
	check_gates_agree("skywalking", "trace");
	check_gates_agree("disabled", NULL);
}

/* Disabled and alwayskeep select the same merges in the same order and
 * end with the same logical content. As in the reference, the disabled
 * run (no sampler) runs no finalize: its fingerprint lacks the finalize's
 * selection, and the comparison checks the picker's selections. */
static void
test_disabled_alwayskeep_identical(void **state)
{
	(void)state;
	ms_ev_run_end end[2];
	ms_evdb *db[2] = { NULL, NULL };
	const char *v[2] = { "disabled", "alwayskeep" };
	ms_errbuf eb = { { 0 } };
	for (int i = 0; i < 2; i++) {
		done_run *d = full_run(v[i]);
		assert_int_equal(ms_evdb_open(&db[i], d->db, &eb), 0);
		bool has_end = false;
		assert_int_equal(ms_evdb_run(db[i], NULL, &end[i], &has_end,
		                             &eb),
		                 0);
		assert_true(has_end);
		assert_string_equal(end[i].status, "complete");
	}
	assert_true(end[0].selection_fp[0] != '\0');
	assert_true(ms_ledger_set_equal(&end[0].final_ledger,
	                                &end[1].final_ledger));
	assert_true(end[0].final_ledger.kind[MS_KIND_CORE].rows > 0);
	assert_int_equal(end[0].merges_completed + 1, end[1].merges_completed);
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	assert_non_null(out);
	bool mismatch = true;
	assert_int_equal(ms_report_compare(db[0], db[1], out, &mismatch, &eb),
	                 0);
	fclose(out);
	assert_false(mismatch);
	assert_non_null(strstr(text, "PASS  selection fingerprints"));
	assert_non_null(strstr(text, "A skipped its finalize"));
	free(text);
	ms_evdb_close(db[0]);
	ms_evdb_close(db[1]);
}

/* Per merge, what it wrote and dropped (by seq). */
typedef struct merge_outs {
	uint64_t n;
	uint64_t checksum[512];
	uint64_t dropped[512];
	uint64_t executed;
} merge_outs;

static int
note_out(void *ctx, const ms_ev_merge *m)
{
	merge_outs *o = ctx;
	assert_true(m->seq >= 1 && m->seq <= 512);
	o->checksum[m->seq - 1] = m->output.checksum;
	o->dropped[m->seq - 1] = m->sampling.traces_dropped;
	o->n++;
	o->executed += m->sampling.klass == MS_SAMPLING_EXECUTED;
	return 0;
}

static void
read_run(const done_run *d, ms_ev_run *run, ms_ev_run_end *end,
         merge_outs *outs)
{
	ms_evdb *db = NULL;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_evdb_open(&db, d->db, &eb), 0);
	bool has_end = false;
	assert_int_equal(ms_evdb_run(db, run, end, &has_end, &eb), 0);
	assert_true(has_end);
	memset(outs, 0, sizeof(*outs));
	assert_int_equal(ms_evdb_each_merge(db, NULL, note_out, outs, &eb), 0);
	ms_evdb_close(db);
}

/* --staging retain (the default) and reread: for every sampling variant
 * and both grace policies the same merges in the same order, each merge
 * writing the same output part and dropping the same traces, the same
 * final and expected ledgers, every gate passing both ways. */
static void
test_retain_reread_identical(void **state)
{
	(void)state;
	static const struct {
		const char *variant, *policy;
	} v[] = {
		{ "alwayskeep", NULL },    { "detdrop:35", NULL },
		{ "skywalking", NULL },    { "skywalking", "trace" },
		{ "detdrop:35", "trace" },
	};
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		done_run *a = full_run_staging(v[i].variant, v[i].policy, NULL);
		done_run *b =
		        full_run_staging(v[i].variant, v[i].policy, "reread");
		assert_true(a->ok);
		assert_true(b->ok);
		ms_ev_run *run = calloc(2, sizeof(*run));
		ms_ev_run_end end[2];
		merge_outs *o = calloc(2, sizeof(*o));
		assert_non_null(run);
		assert_non_null(o);
		read_run(a, &run[0], &end[0], &o[0]);
		read_run(b, &run[1], &end[1], &o[1]);
		assert_string_equal(run[0].staging, "retain");
		assert_string_equal(run[1].staging, "reread");
		assert_string_equal(end[0].selection_fp, end[1].selection_fp);
		assert_true(ms_ledger_set_equal(&end[0].final_ledger,
		                                &end[1].final_ledger));
		assert_true(ms_ledger_set_equal(&end[0].expected_ledger,
		                                &end[1].expected_ledger));
		assert_int_equal(o[0].n, o[1].n);
		assert_true(o[0].executed >= 1);
		assert_int_equal(o[0].executed, o[1].executed);
		for (uint64_t k = 0; k < o[0].n; k++) {
			assert_int_equal(o[0].checksum[k], o[1].checksum[k]);
			assert_int_equal(o[0].dropped[k], o[1].dropped[k]);
		}
		free(run);
		free(o);
	}
}

/* The sampled merges' batch records, as the event log has them. */
typedef struct batch_seen {
	uint64_t merges, batches, by_bytes;
	uint64_t hard, preferred, planned, peak;
	/* every batch cut by bytes reached the preferred limit, and none
	 * passed it by as much again (the last trace of a batch may carry
	 * it past: the reference's rule) */
	bool charged_within;
	bool recs_match;     /* records = the batch count */
} batch_seen;

static int
note_batches(void *ctx, const ms_ev_merge *m)
{
	batch_seen *b = ctx;
	const ms_merge_sampling *sm = &m->sampling;
	if (sm->klass != MS_SAMPLING_EXECUTED)
		return 0;
	b->merges++;
	b->batches += sm->batches;
	b->hard = sm->hard_limit_bytes;
	b->preferred = sm->preferred_limit_bytes;
	b->planned = sm->batches_planned;
	if (sm->peak_staged_bytes > b->peak)
		b->peak = sm->peak_staged_bytes;
	if (sm->nbatch_recs != sm->batches)
		b->recs_match = false;
	for (uint32_t i = 0; i < sm->nbatch_recs; i++) {
		if (sm->batch[i].reason == MS_FLUSH_BYTES)
			b->by_bytes++;
		const ms_merge_batch *bt = &sm->batch[i];
		if ((bt->reason == MS_FLUSH_BYTES &&
		     bt->charged_bytes < sm->preferred_limit_bytes) ||
		    bt->charged_bytes >= 2 * sm->preferred_limit_bytes)
			b->charged_within = false;
	}
	return 0;
}

/* At the reference's profile (2 CPUs, 4 GiB: a 256 MiB hard ceiling) the
 * finalize of a day-1x fixture retains more than one preferred batch of
 * payload, so the stager cuts it by bytes by itself: no limit is made
 * smaller for the test. The event log records each batch. */
static void
test_day1x_finalize_cut_by_budget(void **state)
{
	(void)state;
	const char *fixture = rt_day1x_fixture();
	assert_non_null(fixture);
	ms_errbuf eb = { { 0 } };
	rt_run run;
	rt_opts(&run, "day1x", "alwayskeep");
	run.o.fixture_dir = fixture;
	run.o.profile = "cpus=2,mem=4g";
	ms_replay *r = rt_start(&run, NULL);
	assert_non_null(r);
	assert_int_equal(ms_replay_wait(r, -1), 0);
	unsigned failed = rt_print_gates(r, "day-1x alwayskeep");
	ms_replay_close(r);
	assert_int_equal(failed, 0);
	ms_evdb *db = NULL;
	assert_int_equal(ms_evdb_open(&db, run.db, &eb), 0);
	batch_seen b = { .charged_within = true, .recs_match = true };
	assert_int_equal(ms_evdb_each_merge(db, NULL, note_batches, &b, &eb),
	                 0);
	ms_evdb_close(db);
	assert_int_equal(b.hard, 256u << 20);
	assert_true(b.preferred < b.hard);
	assert_true(b.merges >= 1);
	assert_true(b.planned >= 2);
	assert_true(b.batches >= 2);
	assert_true(b.by_bytes >= 1);
	assert_true(b.recs_match);
	assert_true(b.charged_within);
	assert_true(b.peak >= b.preferred);
	assert_true(b.peak < 2 * b.preferred);
}

/* ---- honest figures and staging ---------------------------------------- */

typedef struct phase_sum {
	uint64_t fsyncs;
	uint64_t before;
	int64_t staging_ns;
	uint64_t anon, shmem;
	int n; /* the merge phases' rows */
	ms_ev_phase ph[MS_EV_PHASE_COUNT]; /* each phase's record */
	ms_ev_phase pre; /* the staging row: the time before primary */
	bool has_before;
} phase_sum;

static int
sum_phase(void *ctx, const ms_ev_phase *p)
{
	phase_sum *s = ctx;
	if (p->phase == MS_EV_PHASE_STAGING) {
		s->pre = *p;
		s->has_before = true;
		return 0;
	}
	s->fsyncs += p->fsyncs;
	s->before += p->staging_fsyncs;
	s->staging_ns += p->staging_ns;
	if (p->rss_anon_peak > s->anon)
		s->anon = p->rss_anon_peak;
	if (p->rss_shmem_peak > s->shmem)
		s->shmem = p->rss_shmem_peak;
	if ((unsigned)p->phase < MS_EV_PHASE_COUNT)
		s->ph[p->phase] = *p;
	s->n++;
	return 0;
}

/* Run `variant` to the end in work (under dir; NULL = the default
 * place), copying parts when stage_copy; fill end, run and phases. */
static void
run_to_end(const char *name, const char *variant, const char *dir,
           bool stage_copy, ms_ev_run *run, ms_ev_run_end *end, phase_sum *ps)
{
	rt_run rr;
	rt_opts(&rr, name, variant);
	const char *parent = dir ? dir : rt.shm;
	snprintf(rr.work, sizeof(rr.work), "%s/%s.shard", parent, name);
	rr.o.stage_copy = stage_copy;
	rr.o.serial = true;
	char real[PATH_MAX];
	assert_non_null(realpath(parent, real));
	snprintf(hook_prefix, sizeof(hook_prefix), "%s/%s.shard", real, name);
	atomic_store(&hook_syncs, 0);
	atomic_store(&hook_else, 0);
	atomic_store(&hook_else_data, 0);
	atomic_store(&hook_renames, 0);
	ms_replay *r = rt_start(&rr, NULL);
	assert_non_null(r);
	assert_int_equal(ms_replay_wait(r, -1), 0);
	ms_replay_status *st = rt_status_new();
	ms_replay_get_status(r, st);
	assert_int_equal(st->state, MS_REPLAY_DONE);
	assert_int_equal(rt_print_gates(r, name), 0);
	free(st);
	ms_replay_close(r);
	hook_prefix[0] = '\0';
	ms_evdb *db = NULL;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_evdb_open(&db, rr.db, &eb), 0);
	bool has_end = false;
	assert_int_equal(ms_evdb_run(db, run, end, &has_end, &eb), 0);
	assert_true(has_end);
	memset(ps, 0, sizeof(*ps));
	assert_int_equal(ms_evdb_each_phase(db, sum_phase, ps, &eb), 0);
	ms_evdb_close(db);
}

/* A phase's peak RSS is the highest resident set while it ran, not the
 * process's high-water mark so far: after the process peaked far above
 * what the run needs (a large block touched and freed before it), both
 * phases show their own, smaller peaks, each at least its kinds' peaks.
 * Before, every phase showed the mark the block had left. The time
 * before the primary phase has its row too (the staging row). */
static void
test_phase_rss_peak_own(void **state)
{
	(void)state;
	const size_t big = 512u << 20;
	char *m = mmap(NULL, big, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(m != MAP_FAILED);
	memset(m, 0x5a, big);
	munmap(m, big);
	ms_rusage ru;
	assert_int_equal(ms_rusage_sample(&ru, NULL), 0);
	int64_t mark = ru.peak_rss_bytes;
	assert_true(mark >= (int64_t)big);
	ms_ev_run *run = calloc(1, sizeof(*run));
	ms_ev_run_end end;
	phase_sum ps;
	assert_non_null(run);
	run_to_end("rss-phase", "skywalking", NULL, false, run, &end, &ps);
	assert_int_equal(ps.n, 2);
	static const enum ms_ev_phase_id ids[2] = { MS_EV_PHASE_PRIMARY,
		                                    MS_EV_PHASE_COOLDOWN };
	for (int i = 0; i < 2; i++) {
		const ms_ev_phase *p = &ps.ph[ids[i]];
		print_message("phase %d: peak RSS %llu (mark %lld), anon "
		              "%llu file %llu shmem %llu\n",
		              i, (unsigned long long)p->rss_peak,
		              (long long)mark,
		              (unsigned long long)p->rss_anon_peak,
		              (unsigned long long)p->rss_file_peak,
		              (unsigned long long)p->rss_shmem_peak);
		assert_true(p->rss_peak > 0);
		assert_true(p->rss_peak + big / 2 < (uint64_t)mark);
		assert_true(p->rss_peak >= p->rss_anon_peak);
		assert_true(p->rss_peak >= p->rss_file_peak);
		assert_true(p->rss_peak >= p->rss_shmem_peak);
	}
	/* The time before the primary phase (staging, the oracle) has its
	 * own row, sampled the same way: the process's anon peak can be
	 * there, where no phase row saw it before. */
	const ms_ev_phase *b = &ps.pre;
	print_message("before: peak RSS %llu, anon %llu file %llu shmem "
	              "%llu, wall %lld ns\n",
	              (unsigned long long)b->rss_peak,
	              (unsigned long long)b->rss_anon_peak,
	              (unsigned long long)b->rss_file_peak,
	              (unsigned long long)b->rss_shmem_peak,
	              (long long)b->wall_ns);
	assert_true(ps.has_before);
	assert_true(b->wall_ns > 0 && b->cpu_ns > 0);
	assert_true(b->rss_anon_peak > 0 && b->rss_file_peak > 0);
	assert_true(b->rss_peak >= b->rss_anon_peak);
	assert_true(b->rss_peak + big / 2 < (uint64_t)mark);
	assert_int_equal(b->staging_ns, 0);
	assert_int_equal(b->staging_fsyncs, 0);
	free(run);
}

/* The run's fsync figure is every sync call the kernel got on its shard:
 * the staging's, the snapshot commits' and their syncfs (which stands
 * for the merge outputs' writers and parts/). Every other sync of the
 * run is an fdatasync of the event database, as the report and README
 * say: strace's fsync and syncfs calls are the report's figures. */
static void
test_fsync_count_matches_calls(void **state)
{
	(void)state;
	ms_ev_run *run = calloc(1, sizeof(*run));
	ms_ev_run_end end;
	phase_sum ps;
	assert_non_null(run);
	run_to_end("fsync-count", "skywalking", NULL, false, run, &end, &ps);
	uint64_t calls = atomic_load(&hook_syncs);
	print_message("fsync figures %llu + %llu before, calls %llu, pubs "
	              "%llu, merges %llu\n",
	              (unsigned long long)ps.fsyncs,
	              (unsigned long long)ps.before, (unsigned long long)calls,
	              (unsigned long long)end.publications,
	              (unsigned long long)end.merges_completed);
	assert_int_equal(ps.n, 2);
	assert_int_equal(ps.fsyncs + ps.before, calls);
	print_message("outside the shard: fsync and syncfs %lu, fdatasync "
	              "%lu\n",
	              atomic_load(&hook_else), atomic_load(&hook_else_data));
	assert_int_equal(atomic_load(&hook_else), 0);
	assert_true(atomic_load(&hook_else_data) > 0);
	/* Publications and merges are group-committed (the shard's
	 * defer_sync): what syncs in the phases is a commit (one syncfs and
	 * the shard directory's fsync) when 64 merged parts wait for their
	 * deletion, and the one that ends each phase. */
	uint64_t merges = end.merges_completed;
	assert_true(merges > 0);
	assert_true(ps.fsyncs >= 2);
	assert_true(ps.fsyncs < 2 * merges);
	/* The split is there: some anonymous memory in every run. */
	assert_true(ps.anon > 0);
	free(run);
}

/* Every publication of the run that ended with `end` was a rename of its
 * three staged files from the shard's tmp/ into parts/ (merge outputs
 * add 3 each): `renames` counted them. Before, the parts were staged at
 * their final paths and a publication renamed nothing (the renames were
 * the merges' alone). */
static void
assert_published_by_rename(unsigned long renames, const ms_ev_run_end *end)
{
	print_message("renames tmp/ -> parts/ %lu, publications %llu, merges "
	              "%llu\n",
	              renames, (unsigned long long)end->publications,
	              (unsigned long long)end->merges_completed);
	assert_true(end->publications > 0);
	assert_true(renames >= 3 * end->publications);
	assert_true(renames <=
	            3 * (end->publications + end->merges_completed));
}

/* Parts staged by hard link and by copy: the same run, and each says how
 * its parts got in; in both a publication is a rename. */
static void
test_staging_link_and_copy_same_run(void **state)
{
	(void)state;
	ms_ev_run *run = calloc(2, sizeof(*run));
	ms_ev_run_end end[2];
	phase_sum ps[2];
	assert_non_null(run);
	/* Beside the fixture, so that hard links work. */
	run_to_end("stage-link", "skywalking", rt.root, false, &run[0], &end[0],
	           &ps[0]);
	assert_published_by_rename(atomic_load(&hook_renames), &end[0]);
	run_to_end("stage-copy", "skywalking", rt.root, true, &run[1], &end[1],
	           &ps[1]);
	assert_published_by_rename(atomic_load(&hook_renames), &end[1]);
	assert_string_equal(run[0].clone_method, "link");
	assert_true(!strcmp(run[1].clone_method, "copy") ||
	            !strcmp(run[1].clone_method, "reflink"));
	assert_true(ps[0].staging_ns > 0 && ps[1].staging_ns > 0);
	for (int i = 0; i < 2; i++)
		assert_string_equal(end[i].status, "complete");
	assert_true(end[0].selection_fp[0] != '\0');
	assert_string_equal(end[0].selection_fp, end[1].selection_fp);
	assert_true(ms_ledger_set_equal(&end[0].final_ledger,
	                                &end[1].final_ledger));
	assert_true(ms_ledger_set_equal(&end[0].expected_ledger,
	                                &end[1].expected_ledger));
	assert_int_equal(end[0].merges_completed, end[1].merges_completed);
	assert_int_equal(end[0].publications, end[1].publications);
	/* The fixture is untouched by a run over links to its files: every
	 * part's hashes still match its manifest. */
	char plugin[PATH_MAX];
	snprintf(plugin, sizeof(plugin), "%s/skywalking.so", MS_PLUGIN_DIR);
	ms_errbuf eb = { { 0 } };
	int rc = ms_fixture_check(rt.fixture, plugin, NULL, NULL, NULL, &eb);
	if (rc)
		fprintf(stderr, "fixture check: %s\n", eb.msg);
	assert_int_equal(rc, 0);
	free(run);
}

/* The environment variable `name` set to value (unset when NULL). */
static void
set_env(const char *name, const char *value)
{
	if (value)
		assert_int_equal(setenv(name, value, 1), 0);
	else
		assert_int_equal(unsetenv(name), 0);
}

/* A shard directory whose file system cannot hold the day's parts as
 * they are copied there is refused before staging, naming it and both
 * figures (before, a 20 MiB tmpfs as --work-dir copied 510 of day-1x's
 * 1612 parts and failed at the next); linked parts take no room. */
static void
test_work_room(void **state)
{
	(void)state;
	ms_errbuf eb = { { 0 } };
	const uint64_t mib = 1ull << 20;
	assert_int_equal(ms__work_room_check("/w", 20 * mib, false, 60 * mib,
	                                     &eb),
	                 MS_ERR_NOSPACE);
	assert_non_null(strstr(eb.msg, "shard directory /w"));
	assert_non_null(strstr(eb.msg, "20.0 MiB free"));
	assert_non_null(strstr(eb.msg, "take 60.0 MiB there"));
	assert_non_null(strstr(eb.msg, "nothing was staged"));
	assert_int_equal(ms__work_room_check("/w", 20 * mib, true, 60 * mib,
	                                     &eb),
	                 0);
	assert_int_equal(ms__work_room_check("/w", 60 * mib, false, 60 * mib,
	                                     &eb),
	                 0);
	/* The day's parts are judged each in whole blocks: the test day's
	 * small files take more in 4 KiB blocks than their bytes, and a
	 * file system with room between the two is refused. */
	ms_fixture *fx = NULL;
	assert_int_equal(ms_fixture_open(&fx, rt.fixture, &eb), 0);
	uint64_t bytes = ms__fixture_day_bytes(fx);
	uint64_t blocks = ms__fixture_day_blocks(fx, 4096);
	assert_int_equal(ms__fixture_day_blocks(fx, 0), bytes);
	ms_fixture_close(fx);
	assert_true(blocks > bytes);
	assert_int_equal(blocks % 4096, 0);
	uint64_t between = bytes + (blocks - bytes) / 2;
	assert_int_equal(ms__work_room_check("/w", between, false, blocks, &eb),
	                 MS_ERR_NOSPACE);
	assert_int_equal(ms__work_room_check("/w", blocks, false, blocks, &eb),
	                 0);
}

/* A failed merge's line (the progress line on stderr, the gate
 * idle_no_leaks, a failed run's error) keeps the cause its error ends
 * with: a day-8x run on a full tmpfs said "... data: write: No space left
 * on de", its 192 bytes cut at the head alone. */
static void
test_failure_line_keeps_cause(void **state)
{
	(void)state;
	const char *err = "merge 982 failed at index: start_time index part "
	                  "0000000000003616 (/dev/shm/mergescope-0/"
	                  "t8.db.1561.shard/tmp/start_time-0000000000003616)"
	                  ": data: write: No space left on device";
	char line[192], ev[MS_EV_TEXT_MAX];
	ms__failure_line(line, sizeof(line), 982, "fast", err);
	assert_true(strlen(line) < sizeof(line));
	assert_true(strncmp(line, "merge #982 (fast): merge 982 failed", 35) ==
	            0);
	assert_non_null(strstr(line, " [...] "));
	assert_non_null(strstr(line, "data: write: No space left on device"));
	/* A line that fits is whole. */
	ms__failure_line(ev, sizeof(ev), 982, "fast", err);
	assert_null(strstr(ev, "[...]"));
	assert_non_null(strstr(ev, "No space left on device"));
	/* The event's text, from the merge's 512-byte message. */
	char big[600];
	memset(big, 'x', sizeof(big));
	snprintf(big + 400, sizeof(big) - 400, ": No space left on device");
	ms_msg_fit(ev, sizeof(ev), big);
	assert_int_equal(strlen(ev), sizeof(ev) - 1);
	assert_non_null(strstr(ev, "No space left on device"));
}

/* A --work-dir that can stage the day but not hold its merges beside
 * it is said to be short before the day starts, naming it and both
 * figures (before: nothing; a 6 MiB ext4 work dir ran the day with no
 * merge and a skipped finalize, and only the gates said so). */
static void
test_work_room_note(void **state)
{
	(void)state;
	const uint64_t mib = 1ull << 20;
	char buf[512];
	/* Copied: four times the day and 64 MiB (4 * 10 + 64 = 104 MiB). */
	assert_true(ms__work_room_note(buf, sizeof(buf), "/w", 103 * mib,
	                               false, 10 * mib));
	assert_non_null(strstr(buf, "shard directory /w: its file system "
	                            "has 103.0 MiB free, below the 104 MiB"));
	assert_non_null(strstr(buf, "finalize that does not fit is "
	                            "skipped"));
	assert_false(ms__work_room_note(buf, sizeof(buf), "/w", 104 * mib,
	                                false, 10 * mib));
	assert_string_equal(buf, "");
	/* Linked: the staged day takes no room there. */
	assert_false(ms__work_room_note(buf, sizeof(buf), "/w", 94 * mib,
	                                true, 10 * mib));
	assert_true(ms__work_room_note(buf, sizeof(buf), "/w", 93 * mib,
	                               true, 10 * mib));
}

/* ms__work_need_fn of a fixed need (arg), whatever the block size. */
static uint64_t
need_of(const void *arg, uint64_t block)
{
	(void)block;
	return *(const uint64_t *)arg;
}

/* A day of `files` small files (arg), 100 bytes each. */
static uint64_t
need_of_small_files(const void *arg, uint64_t block)
{
	uint64_t files = *(const uint64_t *)arg;
	uint64_t each = block ? (100 + block - 1) / block * block : 100;
	return ms__work_need_bytes(files * each);
}

/* The scratch root's room is judged with each file of the day in whole
 * blocks of its file system: a day of many small files that fits by the
 * sum of their bytes but not in blocks goes to the disk, saying so. The
 * byte sum was compared, as the --work-dir check did not (the smoke
 * day's parts take 6.6 MiB of a tmpfs for 5.6 MiB of bytes). */
static void
test_work_dir_choice_blocks(void **state)
{
	(void)state;
	char root[PATH_MAX];
	snprintf(root, sizeof(root), "%s/scratch-blocks", rt.root);
	assert_int_equal(ms_fs_mkdir_p(root, 0700, NULL), 0);
	struct statvfs sv;
	assert_int_equal(statvfs(root, &sv), 0);
	uint64_t avail = (uint64_t)sv.f_bavail * sv.f_frsize;
	/* 100-byte files whose bytes, twice, are 40% of the room (with
	 * 64 MiB, under it), and in blocks of 512 bytes or more, twice, over
	 * twice the room. */
	if (avail < (256ull << 20) || sv.f_frsize < 512)
		skip();
	uint64_t files = avail / 500;
	assert_true(ms__work_need_bytes(files * 100) < avail);
	ms__work_choice c;
	ms__work_dir_choose(root, true, need_of_small_files, &files, 0, "/disk",
	                    "run.db", &c);
	fprintf(stderr, "%s\n", c.why);
	assert_false(c.shm);
	assert_true(strncmp(c.dir, "/disk/run.db.", 13) == 0);
	assert_non_null(strstr(c.why, " has "));
	assert_non_null(strstr(c.why, "MiB free, the day needs about"));
	/* One such file fits in its block. */
	files = 1;
	ms__work_dir_choose(root, true, need_of_small_files, &files, 0, "/disk",
	                    "run.db", &c);
	assert_true(c.shm);
}

/* The shard beside the longest database name a directory takes (NAME_MAX
 * bytes) gets a name the directory takes too: it used to be
 * "<base>.<pid>.shard" whole, and the run failed to create it ("File name
 * too long") for a --db the user could create. */
static void
test_work_dir_long_db_name(void **state)
{
	(void)state;
	char base[NAME_MAX + 1], root[PATH_MAX];
	memset(base, 'd', NAME_MAX);
	memcpy(base + NAME_MAX - 3, ".db", 4);
	snprintf(root, sizeof(root), "%s/scratch-long", rt.root);
	ms__work_choice c;
	for (int named = 0; named < 2; named++) {
		/* In the root (named, room for the day), and on the disk. */
		ms__work_dir_choose(root, named, need_of,
		                    &(uint64_t){ named ? 1 : UINT64_MAX / 4 },
		                    0, rt.root, base, &c);
		assert_int_equal(c.shm, named);
		const char *last = strrchr(c.dir, '/') + 1;
		assert_true(strlen(last) <= NAME_MAX);
		assert_true(strncmp(last, "ddd", 3) == 0);
		char sfx[40];
		snprintf(sfx, sizeof(sfx), ".%ld.shard", (long)getpid());
		assert_string_equal(last + strlen(last) - strlen(sfx), sfx);
		if (mkdir(c.dir, 0700) != 0)
			fail_msg("mkdir %s: %s", c.dir, strerror(errno));
		assert_int_equal(rmdir(c.dir), 0);
	}
}

/* The device a run names for its work dir: the mount that covers it,
 * else (a chroot, whose mountinfo lists no mount at "/" nor any other
 * over the directory) its own device's numbers: the report's host line
 * and bench's conditions had an empty field. */
static void
test_device_name(void **state)
{
	(void)state;
	char info[PATH_MAX], dev[256], want[64];
	struct stat st;
	assert_int_equal(stat(rt.root, &st), 0);
	snprintf(info, sizeof(info), "%s/mountinfo", rt.root);
	FILE *f = fopen(info, "w");
	assert_non_null(f);
	fputs("20 1 0:5 / /proc rw - proc proc rw\n"
	      "21 1 0:6 / /nowhere/else rw - tmpfs tmpfs rw\n",
	      f);
	fclose(f);
	ms__device_name(rt.root, info, dev, sizeof(dev));
	snprintf(want, sizeof(want), "unknown (%u:%u)", major(st.st_dev),
	         minor(st.st_dev));
	assert_true(strncmp(dev, want, strlen(want)) == 0);
	/* A mount at "/" covers everything: its source and numbers. */
	f = fopen(info, "w");
	assert_non_null(f);
	fputs("19 0 254:1 / / rw - ext4 /dev/vda1 rw\n", f);
	fclose(f);
	ms__device_name(rt.root, info, dev, sizeof(dev));
	assert_true(strncmp(dev, "/dev/vda1 (254:1)", 17) == 0);
	unlink(info);
}

/* Where the scratch shard goes without --work-dir: the scratch root only
 * when it has room for the day (and is a tmpfs, unless MERGESCOPE_SCRATCH
 * chose it), else the disk; one line says why. */
static void
test_work_dir_choice(void **state)
{
	(void)state;
	assert_int_equal(ms__work_need_bytes(100ull << 20), 464ull << 20);
	assert_int_equal(ms__work_need_bytes(UINT64_MAX / 2), UINT64_MAX);
	assert_int_equal(ms__work_need_bytes(UINT64_MAX / 4), UINT64_MAX);
	/* The peaks of seed-1 days on a tmpfs (its used bytes sampled every
	 * 20 ms, load 4-5) against their days in 4 KiB blocks, MiB: the
	 * estimate was twice the day and 64 MiB, and a day-8x run on a
	 * tmpfs of just that size filled it (a merge failed "No space left
	 * on device", a gate failed). */
	static const struct {
		double day, peak;
	} seen[] = { { 62.5, 160.9 }, { 188.5, 535.4 }, { 501.0, 1496.1 } };
	for (size_t i = 0; i < sizeof(seen) / sizeof(seen[0]); i++) {
		uint64_t day = (uint64_t)(seen[i].day * 1048576.0);
		uint64_t peak = (uint64_t)(seen[i].peak * 1048576.0);
		/* With a quarter of the peak again to spare. */
		assert_true(ms__work_need_bytes(day) >= peak + peak / 4);
	}
	ms__work_choice c;
	char root[PATH_MAX], want[PATH_MAX + 16], fs[32];
	/* Not a tmpfs (the test's temporary directory is on a disk here,
	 * unless TMPDIR points at one): refused as the default root, taken
	 * when the user named it. */
	snprintf(root, sizeof(root), "%s/scratch-disk", rt.root);
	ms__fs_type_name(rt.root, fs, sizeof(fs));
	if (strcmp(fs, "tmpfs") != 0) {
		ms__work_dir_choose(root, false, need_of, &(uint64_t){ 1 }, 0,
		                    "/disk", "run.db", &c);
		assert_false(c.shm);
		assert_true(strncmp(c.dir, "/disk/run.db.", 13) == 0);
		assert_non_null(strstr(c.why, "(disk)"));
		assert_non_null(strstr(c.why, "is not a tmpfs"));
		assert_false(ms_fs_is_dir(root));
		ms__work_dir_choose(root, true, need_of, &(uint64_t){ 1 }, 0,
		                    "/disk", "run.db", &c);
		assert_true(c.shm);
		snprintf(want, sizeof(want), "%s/run.db.", root);
		assert_true(strncmp(c.dir, want, strlen(want)) == 0);
		assert_non_null(strstr(c.why, "(MERGESCOPE_SCRATCH, "));
		assert_true(ms_fs_is_dir(root));
	}
	/* A named root without room: the disk, saying what was free. */
	ms__work_dir_choose(root, true, need_of, &(uint64_t){ UINT64_MAX / 4 },
	                    0, "/disk", "run.db", &c);
	assert_false(c.shm);
	assert_true(strncmp(c.dir, "/disk/run.db.", 13) == 0);
	snprintf(want, sizeof(want), "(disk): %s has ", root);
	assert_non_null(strstr(c.why, want));
	/* One that cannot be made (below a file): the disk, saying so. */
	char file[PATH_MAX], below[PATH_MAX + 8];
	snprintf(file, sizeof(file), "%s/a-file", rt.root);
	assert_int_equal(ms_test_put(file, "x\n"), 0);
	snprintf(below, sizeof(below), "%s/sub", file);
	ms__work_dir_choose(below, true, need_of, &(uint64_t){ 1 }, 0, "/disk",
	                    "run.db", &c);
	assert_false(c.shm);
	assert_non_null(strstr(c.why, "cannot be created"));

	/* The default root follows MERGESCOPE_SCRATCH; a bad value is an
	 * error naming it. */
	char *old =
	        getenv(MS_SCRATCH_ENV) ? strdup(getenv(MS_SCRATCH_ENV)) : NULL;
	ms_errbuf eb = { { 0 } };
	snprintf(root, sizeof(root), "%s/scratch-env", rt.root);
	set_env(MS_SCRATCH_ENV, root);
	assert_int_equal(ms__work_dir_default(need_of, &(uint64_t){ 1 }, 0,
	                                      "/disk", "run.db", &c, &eb),
	                 0);
	snprintf(want, sizeof(want), "%s/run.db.", root);
	assert_true(strncmp(c.dir, want, strlen(want)) == 0);
	set_env(MS_SCRATCH_ENV, "relative/scratch");
	assert_int_equal(ms__work_dir_default(need_of, &(uint64_t){ 1 }, 0,
	                                      "/disk", "run.db", &c, &eb),
	                 MS_ERR_INVAL);
	assert_non_null(
	        strstr(eb.msg, "MERGESCOPE_SCRATCH \"relative/scratch\""));
	assert_non_null(strstr(eb.msg, "not an absolute path"));
	/* A file there: an error of the path looked at, not of the words
	 * (the command line exits 2 for it). */
	set_env(MS_SCRATCH_ENV, file);
	assert_int_equal(ms__work_dir_default(need_of, &(uint64_t){ 1 }, 0,
	                                      "/disk", "run.db", &c, &eb),
	                 MS_ERR_IO);
	assert_non_null(strstr(eb.msg, file));
	assert_non_null(strstr(eb.msg, "not a directory"));

	/* A replay opened without a work dir says where it went: in the
	 * named root when it has room (a disk choice would go under the
	 * cache directory: keep that here). */
	set_env(MS_SCRATCH_ENV, root);
	setenv("XDG_CACHE_HOME", rt.root, 1);
	rt_run run;
	rt_opts(&run, "choice", "disabled");
	run.o.work_dir = NULL;
	ms_replay *r = NULL;
	assert_int_equal(ms_replay_open(&r, &run.o, &eb), 0);
	const char *note = ms_replay_work_note(r);
	assert_non_null(strstr(note, "work dir "));
	assert_non_null(strstr(note, ms_replay_work_dir(r)));
	snprintf(want, sizeof(want), "%s/", root);
	assert_true(strncmp(ms_replay_work_dir(r), want, strlen(want)) == 0 ||
	            strstr(note, " has ") != NULL);
	ms_replay_close(r);
	set_env(MS_SCRATCH_ENV, "relative/scratch");
	rt_opts(&run, "choice-bad", "disabled");
	run.o.work_dir = NULL;
	assert_int_not_equal(ms_replay_open(&r, &run.o, &eb), 0);
	assert_null(r);
	assert_non_null(strstr(eb.msg, "MERGESCOPE_SCRATCH"));
	set_env(MS_SCRATCH_ENV, old);
	free(old);

	/* An event database inside the work directory, which the run
	 * deletes: refused, the directory left as it was. */
	rt_opts(&run, "db-inside", "disabled");
	assert_int_equal(mkdir(run.work, 0755), 0);
	char inside[PATH_MAX + 16];
	snprintf(inside, sizeof(inside), "%s/ev.db", run.work);
	run.o.db_path = inside;
	assert_int_equal(ms_replay_open(&r, &run.o, &eb), MS_ERR_INVAL);
	assert_null(r);
	assert_non_null(strstr(eb.msg, inside));
	assert_non_null(strstr(eb.msg, "deleted after the run"));
	struct stat wst;
	assert_int_equal(stat(run.work, &wst), 0);
	assert_int_equal(stat(inside, &wst), -1);
	assert_int_equal(rmdir(run.work), 0);

	/* The tmpfs rule on a tmpfs of this test's own (never the shared
	 * default root): room, then not enough. */
	ms__fs_type_name("/dev/shm", fs, sizeof(fs));
	if (strcmp(fs, "tmpfs") != 0 || strcmp(rt.shm, rt.root) == 0) {
		skip();
		return;
	}
	snprintf(root, sizeof(root), "%s/mergescope-%u", rt.shm,
	         (unsigned)getuid());
	ms__work_dir_choose(root, false, need_of, &(uint64_t){ 1 << 20 }, 0,
	                    "/disk", "run.db", &c);
	assert_true(c.shm);
	snprintf(want, sizeof(want), "%s/run.db.", root);
	assert_true(strncmp(c.dir, want, strlen(want)) == 0);
	assert_non_null(strstr(c.why, "(tmpfs)"));
	assert_non_null(strstr(c.why, "MiB free, the day needs about 1 MiB"));
	ms__work_dir_choose(root, false, need_of, &(uint64_t){ UINT64_MAX / 4 },
	                    0, "/disk", "run.db", &c);
	assert_false(c.shm);
	assert_true(strncmp(c.dir, "/disk/run.db.", 13) == 0);
	assert_non_null(strstr(c.why, "(disk): "));
	assert_non_null(strstr(c.why, "MiB free, the day needs about"));

	/* Under a memory limit a cgroup enforces, a tmpfs's pages are the
	 * run's: the day and the run's reserve must fit in the limit too.
	 * Before, a run with --profile mem=64m staged day-1x's 169 MiB into
	 * /dev/shm and the kernel killed it part way (exit 137, nothing
	 * recorded, the shard left behind). */
	const uint64_t mib = 1ull << 20;
	ms__work_dir_choose(root, false, need_of, &(uint64_t){ 170 * mib },
	                    256 * mib, "/disk", "run.db", &c);
	assert_false(c.shm);
	assert_true(strncmp(c.dir, "/disk/run.db.", 13) == 0);
	assert_non_null(strstr(c.why, "is a tmpfs, whose pages count against "
	                              "the run's memory limit of 256 MiB"));
	assert_non_null(strstr(c.why, "the day needs about 170 MiB"));
	ms__work_dir_choose(root, false, need_of, &(uint64_t){ 170 * mib },
	                    298 * mib, "/disk", "run.db", &c);
	assert_true(c.shm);
	/* A MERGESCOPE_SCRATCH root on a tmpfs is held to it as well. */
	ms__work_dir_choose(root, true, need_of, &(uint64_t){ 170 * mib },
	                    256 * mib, "/disk", "run.db", &c);
	assert_false(c.shm);
	/* A --work-dir on a tmpfs is refused before anything is staged;
	 * on a disk, or without a limit, it is not. */
	ms_errbuf meb = { { 0 } };
	assert_int_equal(ms__work_mem_check("/w", true, 64 * mib, 170 * mib,
	                                    &meb),
	                 MS_ERR_NOSPACE);
	assert_non_null(strstr(meb.msg, "shard directory /w is on a tmpfs"));
	assert_non_null(strstr(meb.msg, "memory limit of 64 MiB"));
	assert_non_null(strstr(meb.msg, "needs about 170 MiB"));
	assert_non_null(strstr(meb.msg, "nothing was staged"));
	assert_int_equal(
	        ms__work_mem_check("/w", false, 64 * mib, 170 * mib, &meb), 0);
	assert_int_equal(ms__work_mem_check("/w", true, 0, 170 * mib, &meb),
	                 0);
	assert_int_equal(
	        ms__work_mem_check("/w", true, 298 * mib, 170 * mib, &meb), 0);
	/* A default root that is a regular file: nothing can be made in
	 * it, so the disk, saying so. access(W_OK) passed it, and the run
	 * then failed making its shard there. */
	char froot[PATH_MAX];
	snprintf(froot, sizeof(froot), "%s/mergescope-file", rt.shm);
	assert_int_equal(ms_test_put(froot, "x\n"), 0);
	ms__work_dir_choose(froot, false, need_of, &(uint64_t){ 1 << 20 }, 0,
	                    "/disk", "run.db", &c);
	unlink(froot);
	assert_false(c.shm);
	assert_true(strncmp(c.dir, "/disk/run.db.", 13) == 0);
	assert_non_null(strstr(c.why, "has no directory we may write"));
}

/* ---- breakpoints and stepping ---------------------------------------- */

static ms_replay *
open_started(rt_run *run, const char *name, const char *variant, bool serial,
             bool paused, const char *bp)
{
	rt_opts(run, name, variant);
	run->o.serial = serial;
	run->o.start_paused = paused;
	ms_replay *r = rt_start(run, bp);
	assert_non_null(r);
	return r;
}

static void
test_break_mature(void **state)
{
	(void)state;
	rt_run run;
	ms_replay *r = open_started(&run, "bp-mature", "disabled", false, false,
	                            "mature");
	ms_replay_status *st = rt_status_new();
	assert_true(rt_wait_stop(r, st));
	assert_int_equal(st->state, MS_REPLAY_BREAK);
	assert_true(st->has_pending);
	assert_string_equal(st->break_why, "mature");
	assert_true(st->pending.mature_parts > 0);
	size_t mature = 0;
	for (size_t i = 0; i < st->pending.ninputs; i++) {
		const ms_dispatch_input *in = &st->pending.inputs[i];
		assert_int_equal(in->mature,
		                 in->max_ts <= st->pending.frontier_ns);
		mature += in->mature;
	}
	assert_int_equal(mature, st->pending.mature_parts);
	ms_breakpoint bps[4];
	assert_int_equal(ms_replay_breaks(r, bps, 4), 1);
	assert_int_equal(bps[0].hits, 1);
	ms_replay_close(r);
	free(st);
}

static void
test_break_merge_n(void **state)
{
	(void)state;
	for (uint64_t n = 1; n <= 5; n += 4) {
		rt_run run;
		char spec[32];
		snprintf(spec, sizeof(spec), "merge=%llu",
		         (unsigned long long)n);
		ms_replay *r = open_started(&run, "bp-merge", "disabled", false,
		                            false, spec);
		ms_replay_status *st = rt_status_new();
		assert_true(rt_wait_stop(r, st));
		assert_int_equal(st->state, MS_REPLAY_BREAK);
		assert_int_equal(st->pending.seq, n);
		/* Merge n has not started: at most n - 1 completed. */
		assert_true(st->merges_done <= n - 1);
		assert_true(st->pending.ninputs >= 2);
		ms_replay_close(r);
		free(st);
	}
}

/* The one integer a query of h returns. */
static int64_t
db_count(sqlite3 *h, const char *sql)
{
	sqlite3_stmt *q = NULL;
	assert_int_equal(sqlite3_prepare_v2(h, sql, -1, &q, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(q), SQLITE_ROW);
	int64_t n = sqlite3_column_int64(q, 0);
	sqlite3_finalize(q);
	return n;
}

/* Held at the barrier of the only merge in flight, the run costs
 * nothing: the live reader takes no reading while it is held (it read
 * every 50 ms before), nor does the controller's wait for merge-idle
 * look again (it did every 250 ms), and both go on once the merge is
 * released. The window is only watched: nothing waits for anything in
 * it. */
static void
test_break_costs_nothing(void **state)
{
	(void)state;
	rt_run run;
	ms_replay *r = open_started(&run, "bp-idle", "skywalking", true, false,
	                            "merge=1");
	ms_replay_status *st = rt_status_new();
	assert_true(rt_wait_stop(r, st));
	assert_int_equal(st->state, MS_REPLAY_BREAK);
	uint64_t held = ms__replay_live_reads(r);
	/* A wait slice under way as the run stopped ends within 250 ms:
	 * the window is longer. */
	struct timespec window = { 0, 300 * 1000000L };
	nanosleep(&window, NULL);
	uint64_t slices = ms__replay_slices(r);
	nanosleep(&window, NULL);
	assert_int_equal(ms__replay_live_reads(r), held);
	assert_int_equal(ms__replay_slices(r), slices);
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_replay_command(r, MS_RCMD_RUN, &eb), 0);
	assert_int_equal(ms_replay_wait(r, -1), 0);
	assert_true(ms__replay_live_reads(r) > held);
	assert_true(ms__replay_slices(r) > slices);
	ms_replay_close(r);
	free(st);
}

/* Held at the barrier of a merge that will sample (the `sampling`
 * breakpoint), the dispatch carries the staging plan that merge then
 * makes and records: the same estimate, batches and preferred limit. A
 * dispatch predicted not to sample (merge 1, hot) carries none. */
static void
test_break_sampling_carries_plan(void **state)
{
	(void)state;
	rt_run run;
	ms_replay *r = open_started(&run, "bp-plan", "skywalking", false, false,
	                            "merge=1");
	ms_replay_status *st = rt_status_new();
	assert_true(rt_wait_stop(r, st));
	assert_int_equal(st->state, MS_REPLAY_BREAK);
	assert_int_not_equal(st->pending.predict_class, MS_SAMPLING_EXECUTED);
	assert_int_equal(st->pending.plan_estimate, 0);
	assert_int_equal(st->pending.plan_batches, 0);
	assert_int_equal(st->pending.plan_preferred, 0);
	ms_replay_close(r);

	r = open_started(&run, "bp-plan2", "skywalking", false, false,
	                 "sampling");
	assert_true(rt_wait_stop(r, st));
	assert_int_equal(st->state, MS_REPLAY_BREAK);
	const ms_dispatch *d = &st->pending;
	assert_int_equal(d->predict_class, MS_SAMPLING_EXECUTED);
	assert_true(d->plan_batches >= 1);
	assert_true(d->plan_estimate >= d->bytes);
	assert_true(d->plan_preferred > 0 &&
	            d->plan_preferred <= st->staged_hard);
	uint64_t seq = d->seq, est = d->plan_estimate,
	         batches = d->plan_batches, pref = d->plan_preferred;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_replay_command(r, MS_RCMD_RUN, &eb), 0);
	assert_true(rt_wait_stop(r, st));
	ms_replay_close(r);
	free(st);
	sqlite3 *h = NULL;
	assert_int_equal(
	        sqlite3_open_v2(run.db, &h, SQLITE_OPEN_READONLY, NULL),
	        SQLITE_OK);
	char q[160];
	snprintf(q, sizeof(q),
	         "SELECT estimate_bytes = %llu AND batches_planned = %llu AND "
	         "preferred_limit_bytes = %llu FROM merge WHERE seq = %llu",
	         (unsigned long long)est, (unsigned long long)batches,
	         (unsigned long long)pref, (unsigned long long)seq);
	assert_int_equal(db_count(h, q), 1);
	sqlite3_close(h);
}

/* The database db of a run closed before its end: recorded aborted (its
 * end into *end); open read-only for the caller to query and close. */
static sqlite3 *
closed_aborted(const char *db, ms_ev_run_end *end)
{
	ms_evdb *d = NULL;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_evdb_open(&d, db, &eb), 0);
	bool has_end = false;
	assert_int_equal(ms_evdb_run(d, NULL, end, &has_end, &eb), 0);
	ms_evdb_close(d);
	assert_true(has_end);
	assert_string_equal(end->status, "aborted");
	sqlite3 *h = NULL;
	assert_int_equal(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL),
	                 SQLITE_OK);
	return h;
}

/* Closed while stopped at the finalize merge's dispatch barrier (where
 * `make run` stops; a quit or a stop signal there): the run did not end,
 * so the database says aborted and holds no gates, as the TUI and `run`
 * then print. The finalize held there never runs: the merges recorded
 * are those done when the run stopped. (Earlier the close released it,
 * it ran on, and the run was recorded complete with its gates; later it
 * still ran, after the end.) */
static void
test_close_at_finalize_barrier_aborted(void **state)
{
	(void)state;
	rt_run run;
	ms_replay *r = open_started(&run, "bp-fin-close", "skywalking", false,
	                            false, "lane=finalize");
	ms_replay_status *st = rt_status_new();
	assert_true(rt_wait_stop(r, st));
	assert_int_equal(st->state, MS_REPLAY_BREAK);
	assert_int_equal(st->phase, MS_RPHASE_FINALIZE);
	assert_true(st->has_pending);
	assert_true(st->pending.finalize);
	uint64_t done = st->merges_done;
	ms_replay_close(r);
	free(st);
	ms_ev_run_end end;
	sqlite3 *h = closed_aborted(run.db, &end);
	assert_int_equal(end.merges_completed, done);
	assert_int_equal(db_count(h, "SELECT count(*) FROM gate"), 0);
	assert_int_equal(db_count(h, "SELECT count(*) FROM merge WHERE "
	                             "lane = 'finalize'"),
	                 0);
	sqlite3_close(h);
}

/* Closed while merge 5 is held at its barrier in the primary phase: it
 * never runs, so the database has no event of it, and every merge it
 * records is one the engine completed (those under way on another lane
 * when the run stopped finish after the end, and are counted). */
static void
test_close_at_primary_barrier_drops_held(void **state)
{
	(void)state;
	rt_run run;
	ms_replay *r = open_started(&run, "bp-prim-close", "disabled", false,
	                            false, "merge=5");
	ms_replay_status *st = rt_status_new();
	assert_true(rt_wait_stop(r, st));
	assert_int_equal(st->state, MS_REPLAY_BREAK);
	assert_int_equal(st->pending.seq, 5);
	ms_replay_close(r);
	free(st);
	ms_ev_run_end end;
	sqlite3 *h = closed_aborted(run.db, &end);
	assert_int_equal(db_count(h, "SELECT count(*) FROM merge WHERE seq = 5"),
	                 0);
	assert_int_equal(db_count(h, "SELECT count(*) FROM merge WHERE err = 0"),
	                 end.merges_completed);
	sqlite3_close(h);
}

static void
test_break_time(void **state)
{
	(void)state;
	ms_fixture *fx = NULL;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_fixture_open(&fx, rt.fixture, &eb), 0);
	const ms_fixture_info *info = ms_fixture_get_info(fx);
	size_t ns = ms_fixture_nslots(fx);
	assert_true(ns > 4);
	/* A minute boundary after the middle slot's publication. */
	int64_t mid =
	        ms_fixture_slot_at(fx, ns / 2)->pub_ns - info->day_start_ns;
	int64_t minute = 60 * 1000000000LL;
	int64_t tod = (mid / minute + 1) * minute;
	size_t want = 0;
	while (want < ns &&
	       ms_fixture_slot_at(fx, want)->pub_ns < info->day_start_ns + tod)
		want++;
	assert_true(want < ns);
	char spec[32];
	snprintf(spec, sizeof(spec), "time=%02lld:%02lld",
	         (long long)(tod / (3600 * 1000000000LL)),
	         (long long)(tod / minute % 60));
	rt_run run;
	ms_replay *r =
	        open_started(&run, "bp-time", "disabled", false, false, spec);
	ms_replay_status *st = rt_status_new();
	assert_true(rt_wait_stop(r, st));
	/* A BREAK at the first dispatch barrier at or after T (slot `want`
	 * or a later one published), never a pause before it. */
	assert_int_equal(st->state, MS_REPLAY_BREAK);
	assert_true(st->has_pending);
	assert_true(st->pub_done > want);
	assert_int_equal(strncmp(st->break_why, spec, strlen(spec)), 0);
	assert_true(st->now >= info->day_start_ns + tod);
	assert_true(st->pending.now_ns >= info->day_start_ns + tod);
	ms_breakpoint bps[4];
	assert_int_equal(ms_replay_breaks(r, bps, 4), 1);
	assert_int_equal(bps[0].hits, 1);
	ms_replay_close(r);
	ms_fixture_close(fx);
	free(st);
}

/* A run-to target (`g`) stops where asked, says so, and is dropped when
 * the run stops for another reason first: it never stops the run later. */
static void
test_run_to_targets(void **state)
{
	(void)state;
	rt_run run;
	ms_replay *r =
	        open_started(&run, "goto", "disabled", true, true, "merge=2");
	ms_replay_status *st = rt_status_new();
	ms_errbuf eb = { { 0 } };
	assert_true(rt_wait_stop(r, st));
	assert_int_equal(st->state, MS_REPLAY_PAUSED);
	/* Merge #1 first: a go target. */
	assert_int_equal(ms_replay_run_to_merge(r, 1, &eb), 0);
	assert_true(rt_wait_stop(r, st));
	assert_int_equal(st->state, MS_REPLAY_BREAK);
	assert_int_equal(st->pending.seq, 1);
	assert_string_equal(st->break_why, "go #1");
	/* #6 is behind the user's merge=2: that stops first, the go target
	 * is gone. */
	assert_int_equal(ms_replay_run_to_merge(r, 6, &eb), 0);
	assert_true(rt_wait_stop(r, st));
	assert_int_equal(st->state, MS_REPLAY_BREAK);
	assert_int_equal(st->pending.seq, 2);
	assert_string_equal(st->break_why, "merge=2");
	ms_breakpoint bps[4];
	assert_int_equal(ms_replay_breaks(r, bps, 4), 1);
	assert_string_equal(bps[0].spec, "merge=2");
	/* A time target: paused before the first publication after it, the
	 * clock at or before it. */
	int64_t t = st->now + 3600 * 1000000000LL;
	assert_int_equal(ms_replay_run_to_time(r, t, &eb), 0);
	assert_true(rt_wait_stop(r, st));
	if (st->state == MS_REPLAY_PAUSED) {
		assert_true(st->now <= t);
	} else {
		assert_int_equal(st->state, MS_REPLAY_BREAK);
		assert_true(st->pending.now_ns >= t);
	}
	/* Named as the TUI's clocks name a time of the day. */
	char clock[24], go[32];
	snprintf(go, sizeof(go), "go %s",
	         ms_replay_fmt_clock(clock, sizeof(clock), t, st->day_start));
	assert_string_equal(st->break_why, go);
	assert_int_equal(ms_replay_breaks(r, bps, 4), 1);
	/* A publication target: paused with exactly that many published. */
	uint64_t k = st->pub_done + 3;
	assert_int_equal(ms_replay_run_to_pub(r, k, &eb), 0);
	assert_true(rt_wait_stop(r, st));
	assert_int_equal(st->state, MS_REPLAY_PAUSED);
	assert_int_equal(st->pub_done, k);
	char want[32];
	snprintf(want, sizeof(want), "go pub %llu", (unsigned long long)k);
	assert_string_equal(st->break_why, want);
	assert_int_equal(ms_replay_run_to_pub(r, st->pub_total, &eb),
	                 MS_ERR_RANGE);
	/* Nothing else stops the run now: it ends. */
	assert_int_equal(ms_replay_command(r, MS_RCMD_RUN, &eb), 0);
	assert_true(rt_wait_stop(r, st));
	assert_int_equal(st->state, MS_REPLAY_DONE);
	ms_replay_close(r);
	free(st);
}

/* Stopped before a publication by a time target, then sent to a later
 * time that is still before that publication: the run stays where it is
 * (that publication is still the first point past the target), the
 * clock at the point before, instead of publishing it and stopping one
 * publication past the target. */
static void
test_run_to_time_before_next_point(void **state)
{
	(void)state;
	rt_run run;
	ms_replay *r = open_started(&run, "goto-near", "disabled", true, true,
	                            NULL);
	ms_replay_status *st = rt_status_new();
	ms_errbuf eb = { { 0 } };
	assert_true(rt_wait_stop(r, st));
	assert_int_equal(st->state, MS_REPLAY_PAUSED);
	const ms_fixture_slot *prev = ms_fixture_slot_at(r->fx, 9);
	const ms_fixture_slot *next = ms_fixture_slot_at(r->fx, 10);
	int64_t t1 = next->pub_ns - 2000000000LL;
	int64_t t2 = next->pub_ns - 1000000000LL;
	assert_true(t1 > prev->pub_ns);
	assert_int_equal(ms_replay_run_to_time(r, t1, &eb), 0);
	assert_true(rt_wait_stop(r, st));
	assert_int_equal(st->state, MS_REPLAY_PAUSED);
	assert_int_equal(st->pub_done, 10);
	assert_int_equal(st->now, prev->pub_ns);
	assert_int_equal(ms_replay_run_to_time(r, t2, &eb), 0);
	assert_true(rt_wait_stop(r, st));
	assert_int_equal(st->state, MS_REPLAY_PAUSED);
	assert_int_equal(st->pub_done, 10);
	assert_int_equal(st->now, prev->pub_ns);
	assert_true(strncmp(st->break_why, "go ", 3) == 0);
	/* A step from there still moves on: one publication. */
	assert_int_equal(ms_replay_command(r, MS_RCMD_STEP, &eb), 0);
	assert_true(rt_wait_stop(r, st));
	assert_int_equal(st->pub_done, 11);
	ms_replay_close(r);
	free(st);
}

/* A time of day is HH:MM[:SS] as the status line shows one, the hour
 * possibly of one digit: signs, inner spaces and numbers that wrap around
 * are refused, not read as some other time (found by
 * tests/fuzz/fuzz_breakpoint), and so are minutes or seconds of one digit
 * ("1:2:3" was read as 01:02:03). */
static void
test_break_spec_time_of_day(void **state)
{
	(void)state;
	static const struct {
		const char *spec, *canon;
	} ok[] = { { "time=12:10", "time=12:10:00" },
		   { "time=9:05:07", "time=09:05:07" },
		   { " time=24:00 ", "time=24:00:00" } };
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		ms_breakpoint bp;
		ms_errbuf eb = { { 0 } };
		assert_int_equal(ms_bp_parse(ok[i].spec, &bp, &eb), 0);
		assert_string_equal(bp.spec, ok[i].canon);
	}
	static const char *const bad[] = {
		"time=4294967297:00", "time=-0:30",  "time=+1:00",
		"time= 1: 2",         "time=123:00", "time=12:00:",
		"time=1:2:3",         "time=12:5",   "time=12:05:7",
		"time=12:005",        "time=1:2",    "time=12:05:07:00"
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ms_breakpoint bp;
		ms_errbuf eb = { { 0 } };
		assert_int_equal(ms_bp_parse(bad[i], &bp, &eb), MS_ERR_INVAL);
		assert_non_null(strstr(eb.msg, "HH:MM"));
	}
}

/* A part ID is typed as the TUI shows it: hex digits, 16 or fewer when
 * leading zeros are left out. "part=0x10" was taken as part 16 through
 * strtoull's prefix, a form nothing shows (and refused once 16 digits
 * followed it); a sign, a space or a 17th digit is refused too. The
 * time's other form, time=@NS, takes decimal digits only. */
static void
test_break_spec_part_id(void **state)
{
	(void)state;
	static const struct {
		const char *spec, *canon;
	} ok[] = { { "part=a1", "part=00000000000000a1" },
		   { "part=00000000000000a1", "part=00000000000000a1" },
		   { "part=FFFFFFFFFFFFFFFF", "part=ffffffffffffffff" },
		   { "part=0", "part=0000000000000000" },
		   { "time=@1700006400000000000",
		     "time=@1700006400000000000" } };
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		ms_breakpoint bp;
		ms_errbuf eb = { { 0 } };
		if (ms_bp_parse(ok[i].spec, &bp, &eb) != 0)
			fail_msg("'%s' refused: %s", ok[i].spec, eb.msg);
		assert_string_equal(bp.spec, ok[i].canon);
	}
	static const struct {
		const char *spec, *needle;
	} bad[] = {
		{ "part=0x10", "expected part=HEX" },
		{ "part=0X10", "expected part=HEX" },
		{ "part=", "expected part=HEX" },
		{ "part=+1", "expected part=HEX" },
		{ "part=-1", "expected part=HEX" },
		{ "part= a1", "expected part=HEX" },
		{ "part=a1 b", "expected part=HEX" },
		{ "part=1234567890abcdef0", "1 to 16 hex digits" },
		{ "part=g1", "expected part=HEX" },
		{ "time=@0x10", "expected time=@NS" },
		{ "time=@+1", "expected time=@NS" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ms_breakpoint bp;
		ms_errbuf eb = { { 0 } };
		if (ms_bp_parse(bad[i].spec, &bp, &eb) == 0)
			fail_msg("'%s' accepted as %s", bad[i].spec, bp.spec);
		if (!strstr(eb.msg, bad[i].needle))
			fail_msg("'%s': '%s' not in: %s", bad[i].spec,
			         bad[i].needle, eb.msg);
	}
}

/* Every step from a stop moves to exactly the next point: the next
 * publication, or the next dispatch barrier (seq + 1). */
static void
test_step_one_point(void **state)
{
	(void)state;
	rt_run run;
	ms_replay *r = open_started(&run, "step", "disabled", true, true, NULL);
	ms_replay_status *st = rt_status_new();
	assert_true(rt_wait_stop(r, st));
	assert_int_equal(st->state, MS_REPLAY_PAUSED);
	assert_int_equal(st->pub_done, 0);
	uint64_t pub = 0, seq = 0;
	enum ms_replay_state prev = MS_REPLAY_PAUSED;
	unsigned barriers = 0, pubs = 0;
	ms_errbuf eb = { { 0 } };
	for (int i = 0; i < 60; i++) {
		assert_int_equal(ms_replay_command(r, MS_RCMD_STEP, &eb), 0);
		assert_true(rt_wait_stop(r, st));
		if (st->state == MS_REPLAY_BREAK) {
			/* The first barrier after publishing `pub`, or the
			 * one right after the previous barrier. */
			assert_int_equal(st->pending.seq, seq + 1);
			assert_int_equal(st->pub_done, prev == MS_REPLAY_PAUSED
			                                       ? pub + 1
			                                       : pub);
			seq = st->pending.seq;
			pub = st->pub_done;
			barriers++;
		} else {
			assert_int_equal(st->state, MS_REPLAY_PAUSED);
			assert_int_equal(st->pub_done, prev == MS_REPLAY_PAUSED
			                                       ? pub + 1
			                                       : pub);
			pub = st->pub_done;
			pubs++;
		}
		prev = st->state;
	}
	assert_true(barriers > 0);
	assert_true(pubs > 0);
	/* Merges completed so far are exactly the barriers passed (serial
	 * mode; the last barrier's merge has not started). */
	assert_true(st->merges_done <= seq);
	ms_replay_close(r);
	free(st);
}

/* A very slow speed (--speed takes any multiple above 0) paces the day
 * slowly: the wait for the next publication overflowed an integer and
 * the day ran at full speed. A close ends the wait. */
static void
test_slowest_speed_paces(void **state)
{
	(void)state;
	rt_run run;
	rt_opts(&run, "slowest", "disabled");
	run.o.speed = 1e-9;
	ms_replay *r = NULL;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_replay_open(&r, &run.o, &eb), 0);
	assert_int_equal(ms_replay_start(r, &eb), 0);
	struct timespec ts = { 0, 500 * 1000000L };
	nanosleep(&ts, NULL);
	ms_replay_status *st = rt_status_new();
	ms_replay_get_status(r, st);
	if (st->pub_done > 2)
		fail_msg("%" PRIu64 " of %" PRIu64
		         " publications done in 0.5 s at 1e-9x",
		         st->pub_done, st->pub_total);
	free(st);
	ms_replay_close(r);
}

/* ---- SIGKILL ---------------------------------------------------------- */

/* Whether a connection of its own reads at least n completed merges in
 * the database at path, asked until it does or deadline_s have passed. */
static bool
merges_committed(const char *path, uint64_t n, int deadline_s)
{
	int64_t end = ms_mono_ns() + (int64_t)deadline_s * 1000000000;
	sqlite3 *db = NULL;
	bool ok = false;
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK)
		sqlite3_busy_timeout(db, 1000);
	while (db && !ok && ms_mono_ns() < end) {
		sqlite3_stmt *s = NULL;
		if (sqlite3_prepare_v2(
		            db, "SELECT count(*) FROM merge WHERE err = 0", -1,
		            &s, NULL) == SQLITE_OK &&
		    sqlite3_step(s) == SQLITE_ROW)
			ok = (uint64_t)sqlite3_column_int64(s, 0) >= n;
		sqlite3_finalize(s);
		struct timespec ts = { 0, 10 * 1000000L };
		if (!ok)
			nanosleep(&ts, NULL);
	}
	sqlite3_close(db);
	return ok;
}

static void
child_run(int fd, const char *db, const char *work)
{
	rt_run run;
	rt_opts(&run, "kill", "alwayskeep");
	snprintf(run.db, sizeof(run.db), "%s", db);
	snprintf(run.work, sizeof(run.work), "%s", work);
	/* Paced so the day takes several seconds: the kill lands mid-run. */
	run.o.speed = 4000;
	ms_replay *r = NULL;
	ms_errbuf eb = { { 0 } };
	if (ms_replay_open(&r, &run.o, &eb) || ms_replay_start(r, &eb)) {
		fprintf(stderr, "child: %s\n", eb.msg);
		_exit(2);
	}
	ms_replay_status *st = rt_status_new();
	for (;;) {
		pthread_mutex_lock(&rt_mu);
		unsigned long t0 = rt_ticks;
		pthread_mutex_unlock(&rt_mu);
		ms_replay_get_status(r, st);
		if (st->merges_done >= 3 || rt_stopped(st->state))
			break;
		pthread_mutex_lock(&rt_mu);
		while (rt_ticks == t0)
			pthread_cond_wait(&rt_cv, &rt_mu);
		pthread_mutex_unlock(&rt_mu);
	}
	uint64_t done = st->merges_done;
	/* These merges are said committed once another connection reads
	 * them (the recorder commits within 100 ms of an event; the
	 * deadline is a hang guard, not a bound on that). */
	if (!merges_committed(db, done, 120))
		_exit(4);
	if (write(fd, &done, sizeof(done)) != (ssize_t)sizeof(done))
		_exit(3);
	for (;;)
		pause();
}

static int
integrity_ok(const char *path)
{
	sqlite3 *db = NULL;
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) !=
	    SQLITE_OK) {
		sqlite3_close(db);
		return 0;
	}
	sqlite3_stmt *s = NULL;
	int ok = 0;
	if (sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &s, NULL) ==
	            SQLITE_OK &&
	    sqlite3_step(s) == SQLITE_ROW)
		ok = !strcmp((const char *)sqlite3_column_text(s, 0), "ok");
	sqlite3_finalize(s);
	sqlite3_close(db);
	return ok;
}

/* The child of test_sigkill_mid_run: child_run into the database and
 * work directory arg names. */
static int
run_until_killed(void *arg, int fd)
{
	const char *const *dirs = arg;
	child_run(fd, dirs[0], dirs[1]);
	return 0;
}

static void
test_sigkill_mid_run(void **state)
{
	(void)state;
	char db[PATH_MAX], work[PATH_MAX];
	rt_path(db, sizeof(db), "killed.db");
	snprintf(work, sizeof(work), "%s/killed.shard", rt.shm);
	const char *dirs[2] = { db, work };
	int rfd;
	pid_t pid = ms_test_child(run_until_killed, dirs, &rfd);
	uint64_t reported = 0;
	ssize_t n = read(rfd, &reported, sizeof(reported));
	kill(pid, SIGKILL);
	int status = ms_test_child_wait(pid);
	close(rfd);
	assert_int_equal(n, (ssize_t)sizeof(reported));
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	assert_true(reported >= 3);

	assert_true(integrity_ok(db));
	ms_evdb *ev = NULL;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_evdb_open(&ev, db, &eb), 0);
	uint64_t merges = 0;
	assert_int_equal(
	        ms_evdb_each_merge(ev, NULL, count_merge, &merges, &eb), 0);
	assert_true(merges >= reported);
	ms_ev_run run;
	bool has_end = true;
	assert_int_equal(ms_evdb_run(ev, &run, NULL, &has_end, &eb), 0);
	assert_string_equal(run.variant, "alwayskeep");
	/* Paced, the day lasts over 5 s of wall time: the kill came first. */
	assert_false(has_end);
	ms_evdb_close(ev);
}

/* ---- bounded waits and failures -------------------------------------- */

/* The end record of a run's database: status and error. */
static void
run_end_of(const char *db, ms_ev_run_end *end)
{
	ms_evdb *ev = NULL;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_evdb_open(&ev, db, &eb), 0);
	bool has_end = false;
	assert_int_equal(ms_evdb_run(ev, NULL, end, &has_end, &eb), 0);
	assert_true(has_end);
	ms_evdb_close(ev);
}

/* Every Decide sleeps 100 ms (tp_slow) and a merge-idle wait may take 20
 * ms: the run fails at the first sampling merge, saying which wait gave up,
 * and the
 * database records the failure with that message. */
static void
test_wait_timeout_fails_run(void **state)
{
	(void)state;
	rt_run run;
	rt_opts(&run, "wait-timeout", "tp_slow");
	run.o.plugin_dir = MS_TEST_PLUGIN_DIR;
	run.o.wait_timeout_ns = 20 * 1000000LL;
	ms_replay *r = rt_start(&run, NULL);
	assert_non_null(r);
	assert_int_equal(ms_replay_wait(r, -1), 0);
	ms_replay_status *st = rt_status_new();
	ms_replay_get_status(r, st);
	fprintf(stderr, "run failed as expected: %s\n", st->error);
	assert_int_equal(st->state, MS_REPLAY_FAILED);
	/* Which wait depends on where Decide first runs (the finalize merge
	 * on this fixture); the message says. */
	assert_non_null(strstr(st->error, "waited 0.02 s for "));
	assert_non_null(strstr(st->error, "gave up (--wait-timeout)"));
	char error[sizeof(st->error)];
	snprintf(error, sizeof(error), "%s", st->error);
	free(st);
	ms_replay_close(r);
	ms_ev_run_end end;
	run_end_of(run.db, &end);
	assert_string_equal(end.status, "failed");
	assert_string_equal(end.error, error);
	assert_false(rt_exists(run.work));
}

/* A --profile that envelope auto cannot hold in a cgroup (here a
 * machine with no hierarchy: an empty cgroup root) is said as the run
 * starts, with the reason; before, only the report's envelope line at
 * the end said the limits were emulated. */
static void
test_profile_not_enforced_said_at_start(void **state)
{
	(void)state;
	rt_run run;
	rt_opts(&run, "no-cgroup", "alwayskeep");
	char root[PATH_MAX];
	rt_path(root, sizeof(root), "no-cgroup-root-%u", rt.serial);
	assert_int_equal(mkdir(root, 0700), 0);
	run.o.profile = "cpus=1,mem=1g";
	run.t.cgroup_root = root;
	ms_replay *r = NULL;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms__replay_open_test(&r, &run.o, &run.t, &eb), 0);
	const char *note = ms_replay_start_note(r);
	fprintf(stderr, "note: %s\n", note);
	assert_non_null(strstr(note, "--profile \"cpus=1,mem=1g\" is not "
	                             "enforced: "));
	assert_non_null(strstr(note, "envelope emulated"));
	ms_replay_close(r);
	rmdir(root);

	/* --envelope emulated asks for it: nothing to say. */
	rt_opts(&run, "emulated", "alwayskeep");
	run.o.profile = "cpus=1,mem=1g";
	run.o.envelope = "emulated";
	assert_int_equal(ms__replay_open_test(&r, &run.o, &run.t, &eb), 0);
	assert_string_equal(ms_replay_start_note(r), "");
	ms_replay_close(r);
}

/* The verdict oracle takes longer than --wait-timeout before the day
 * starts (its thread held back 3 s, as an oracle whose chain is slow on
 * every call, short of its Decide timeout):
 * the run fails saying what it waited for, records it, removes its
 * shard. Before, the day waited for the oracle without a deadline. */
static void
test_wait_timeout_covers_oracle(void **state)
{
	(void)state;
	rt_run run;
	rt_opts(&run, "wait-oracle", "alwayskeep");
	run.o.wait_timeout_ns = 200 * 1000000LL;
	run.t.oracle_delay_ns = 3000 * 1000000LL;
	ms_replay *r = rt_start(&run, NULL);
	assert_non_null(r);
	assert_int_equal(ms_replay_wait(r, -1), 0);
	ms_replay_status *st = rt_status_new();
	ms_replay_get_status(r, st);
	fprintf(stderr, "run ended %s: %s\n", ms_replay_state_name(st->state),
	        st->error);
	assert_int_equal(st->state, MS_REPLAY_FAILED);
	assert_int_equal(st->pub_done, 0);
	assert_non_null(strstr(st->error, "waited 0.2 s for the verdict "
	                                  "oracle (chain alwayskeep,"));
	assert_non_null(strstr(st->error, "gave up (--wait-timeout)"));
	char error[sizeof(st->error)];
	snprintf(error, sizeof(error), "%s", st->error);
	free(st);
	ms_replay_close(r);
	ms_ev_run_end end;
	run_end_of(run.db, &end);
	assert_string_equal(end.status, "failed");
	assert_string_equal(end.error, error);
	assert_false(rt_exists(run.work));
}

/* The oracle's cost is one figure rounded one way wherever it is
 * printed: its reconciliation rows and the verdict_oracle gate's text.
 * Figures of 108.6 ms (a test hook) read "oracle cpu ms 108" beside
 * "109 ms cpu", and "day waited for it ms 108" beside "the day waited
 * 109 ms": the rows cut, the text rounded. */
static void
test_oracle_cost_rounded_alike(void **state)
{
	(void)state;
	rt_run run;
	rt_opts(&run, "oracle-round", "alwayskeep");
	run.t.oracle_figures_ns = 108600000;
	ms_replay *r = rt_start(&run, NULL);
	assert_non_null(r);
	uint64_t merges = 0;
	bool ok = wait_done_clean(r, "oracle-round", &merges);
	ms_ev_gate g[32];
	unsigned failed = 0;
	size_t n = ms_replay_gates(r, g, 32, &failed);
	const char *detail = NULL;
	for (size_t i = 0; i < n && i < 32; i++)
		if (!strcmp(g[i].name, "verdict_oracle"))
			detail = g[i].detail;
	assert_non_null(detail);
	assert_non_null(strstr(detail, ": 109 ms wall, 109 ms cpu = "));
	assert_non_null(strstr(detail, "the day waited 109 ms and the gates "
	                               "109 ms"));
	/* Its share is of the wall before the gates, and says so: "the
	 * run's X s" read as the run's wall, which the report and the
	 * status line give at the run's end, later. */
	const char *of = strstr(detail, "% of the ");
	assert_non_null(of);
	char *end_fig = NULL;
	double before_gates = strtod(of + strlen("% of the "), &end_fig);
	assert_true(strncmp(end_fig, " s before the gates, ", 21) == 0);
	ms_replay_close(r);
	assert_true(ok);
	ms_ev_run_end end;
	run_end_of(run.db, &end);
	assert_true(before_gates <= (double)end.wall_ns / 1e9 + 0.005);
	ms_evdb *db = NULL;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_evdb_open(&db, run.db, &eb), 0);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	assert_non_null(f);
	assert_int_equal(ms_report_text(db, f, &failed, &eb), 0);
	fclose(f);
	ms_evdb_close(db);
	static const char *const rows[] = { "oracle wall ms", "oracle cpu ms",
		                            "day waited for it ms",
		                            "gates waited for it ms" };
	for (size_t i = 0; i < 4; i++) {
		const char *row = strstr(text, rows[i]);
		assert_non_null(row);
		const char *nl = strchr(row, '\n');
		const char *last = strstr(row, " 109");
		if (!last || last > nl)
			fail_msg("%.*s: not 109", (int)(nl - row), row);
	}
	free(text);
}

/* A deadline far shorter than the time the run is held at a barrier: the
 * held time does not count, and the run completes. */
static void
test_wait_deadline_skips_barrier(void **state)
{
	(void)state;
	rt_run run;
	rt_opts(&run, "wait-held", "alwayskeep");
	/* Any drain is far less, even under ThreadSanitizer on a loaded
	 * machine (3 s was once too little there). */
	run.o.wait_timeout_ns = 8000 * 1000000LL;
	ms_replay *r = rt_start(&run, "merge=2");
	assert_non_null(r);
	ms_replay_status *st = rt_status_new();
	assert_true(rt_wait_stop(r, st));
	assert_int_equal(st->state, MS_REPLAY_BREAK);
	struct timespec ts = { 9, 0 }; /* held longer than the deadline */
	nanosleep(&ts, NULL);
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_replay_command(r, MS_RCMD_RUN, &eb), 0);
	assert_int_equal(ms_replay_wait(r, -1), 0);
	ms_replay_get_status(r, st);
	if (st->state != MS_REPLAY_DONE)
		fprintf(stderr, "run ended %s: %s\n",
		        ms_replay_state_name(st->state), st->error);
	assert_int_equal(st->state, MS_REPLAY_DONE);
	free(st);
	ms_replay_close(r);
}

/* The event database's disk fills up mid-run (a VFS refusing writes after
 * 32 KiB): the run stops (no hang, no spin) with the database path and
 * SQLite's error, and the scratch shard is removed. */
static void
test_recorder_full_stops_run(void **state)
{
	(void)state;
	assert_int_equal(full_vfs_install(), SQLITE_OK);
	rt_run run;
	rt_opts(&run, "db-full", "alwayskeep");
	ms_replay *r = rt_start(&run, NULL);
	assert_non_null(r);
	full_vfs_arm(32 * 1024);
	assert_int_equal(ms_replay_wait(r, -1), 0);
	ms_replay_status *st = rt_status_new();
	ms_replay_get_status(r, st);
	fprintf(stderr, "run failed as expected: %s\n", st->error);
	assert_int_equal(st->state, MS_REPLAY_FAILED);
	assert_non_null(strstr(st->error, "cannot record events"));
	assert_non_null(strstr(st->error, run.db));
	assert_non_null(strstr(st->error, "database or disk is full"));
	assert_true(full_vfs_refused() >= 1);
	free(st);
	ms_replay_close(r);
	full_vfs_disarm();
	assert_false(rt_exists(run.work));
}

/* The event database's disk fills up just as the run records its end
 * (ms_rec_run_end wrapped, -Wl,--wrap, to fill the disk first): every
 * merge and gate was recorded, but the database says the run never
 * finished, so the run fails with the database path and SQLite's error
 * rather than ending as complete. */
static _Atomic bool full_at_end;

int __real_ms_rec_run_end(ms_rec *r, const ms_ev_run_end *e, ms_errbuf *eb);
int __wrap_ms_rec_run_end(ms_rec *r, const ms_ev_run_end *e, ms_errbuf *eb);
int
__wrap_ms_rec_run_end(ms_rec *r, const ms_ev_run_end *e, ms_errbuf *eb)
{
	if (atomic_load(&full_at_end))
		full_vfs_arm(0);
	return __real_ms_rec_run_end(r, e, eb);
}

static void
test_recorder_full_at_end_fails_run(void **state)
{
	(void)state;
	assert_int_equal(full_vfs_install(), SQLITE_OK);
	rt_run run;
	rt_opts(&run, "db-full-end", "alwayskeep");
	atomic_store(&full_at_end, true);
	ms_replay *r = rt_start(&run, NULL);
	assert_non_null(r);
	assert_int_equal(ms_replay_wait(r, -1), 0);
	ms_replay_status *st = rt_status_new();
	ms_replay_get_status(r, st);
	fprintf(stderr, "run ended %s: %s\n", ms_replay_state_name(st->state),
	        st->error);
	assert_int_equal(st->state, MS_REPLAY_FAILED);
	assert_non_null(strstr(st->error, "cannot record events"));
	assert_non_null(strstr(st->error, run.db));
	assert_non_null(strstr(st->error, "database or disk is full"));
	assert_true(full_vfs_refused() >= 1);
	free(st);
	ms_replay_close(r);
	atomic_store(&full_at_end, false);
	full_vfs_disarm();
	assert_false(rt_exists(run.work));
}

/* An event the run records as it closes (a merge that completes after
 * the end, a line a plugin logs in close()) whose insert fails: the
 * close says so, naming the database and the table, and returns an
 * error (`run` exits 2 with it). The fault: as the chain closes
 * (ms_pipeline_close wrapped, -Wl,--wrap), a second row of merge 1 is
 * queued, which the merge table's key refuses. Before, the failure
 * stayed inside the closed recorder: 0, and nothing said. */
static ms_replay *_Atomic dup_at_close;

void __real_ms_pipeline_close(ms_pipeline *p);
void __wrap_ms_pipeline_close(ms_pipeline *p);
void
__wrap_ms_pipeline_close(ms_pipeline *p)
{
	ms_replay *r = atomic_exchange(&dup_at_close, NULL);
	if (r) {
		ms_ev_merge m;
		memset(&m, 0, sizeof(m));
		m.seq = 1;
		assert_int_equal(ms_rec_merge(r->rec, &m, NULL), 0);
	}
	__real_ms_pipeline_close(p);
}

static void
test_recorder_fails_at_close(void **state)
{
	(void)state;
	rt_run run;
	rt_opts(&run, "lost-at-close", "alwayskeep");
	ms_replay *r = rt_start(&run, NULL);
	assert_non_null(r);
	assert_int_equal(ms_replay_wait(r, -1), 0);
	ms_replay_status *st = rt_status_new();
	ms_replay_get_status(r, st);
	assert_int_equal(st->state, MS_REPLAY_DONE);
	assert_true(st->merges_done >= 1);
	free(st);
	atomic_store(&dup_at_close, r);
	char db[PATH_MAX];
	ms_errbuf eb = { { 0 } }, left = { { 0 } };
	int rc = ms_replay_close_fold(r, db, sizeof(db), &eb, &left);
	fprintf(stderr, "closed: %d %s\n", rc, eb.msg);
	assert_null(atomic_load(&dup_at_close));
	assert_int_equal(rc, MS_ERR_IO);
	assert_non_null(strstr(eb.msg, "cannot record events: "));
	assert_non_null(strstr(eb.msg, run.db));
	assert_non_null(strstr(eb.msg, ": merge: UNIQUE constraint failed"));
	assert_string_equal(left.msg, "");
	assert_false(rt_exists(run.work));
}

/* A merge row the database refuses mid-run (a second row of merge 1,
 * queued while the run is held at merge 3's barrier): the run fails,
 * its error naming the database, the table and SQLite's reason, and its
 * close does not say it again. */
static void
test_recorder_insert_fails_run(void **state)
{
	(void)state;
	rt_run run;
	rt_opts(&run, "dup-row", "alwayskeep");
	ms_replay *r = rt_start(&run, "merge=3");
	assert_non_null(r);
	ms_replay_status *st = rt_status_new();
	assert_true(rt_wait_stop(r, st));
	assert_int_equal(st->state, MS_REPLAY_BREAK);
	ms_ev_merge m;
	memset(&m, 0, sizeof(m));
	m.seq = 1;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_rec_merge(r->rec, &m, &eb), 0);
	assert_int_equal(ms_replay_command(r, MS_RCMD_RUN, &eb), 0);
	assert_int_equal(ms_replay_wait(r, -1), 0);
	ms_replay_get_status(r, st);
	fprintf(stderr, "run failed as expected: %s\n", st->error);
	assert_int_equal(st->state, MS_REPLAY_FAILED);
	assert_non_null(strstr(st->error, "cannot record events: "));
	assert_non_null(strstr(st->error, run.db));
	assert_non_null(strstr(st->error, ": merge: UNIQUE constraint failed"));
	free(st);
	ms_errbuf left = { { 0 } };
	assert_int_equal(ms_replay_close_fold(r, NULL, 0, &eb, &left), 0);
	assert_string_equal(left.msg, "");
	assert_false(rt_exists(run.work));
}

/* No room for a thread (what `ulimit -v` leaves a run: pthread_create
 * failing with EAGAIN, thread_testlib.h): the start fails with the
 * thread, the system's reason and where to look, and the scratch shard
 * goes with the close. It said only "cannot start the oracle thread". */
static void
test_start_without_threads(void **state)
{
	(void)state;
	rt_run run;
	rt_opts(&run, "no-threads", "alwayskeep");
	ms_replay *r = NULL;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms__replay_open_test(&r, &run.o, &run.t, &eb), 0);
	tl_threads_fail_all(true);
	int rc = ms_replay_start(r, &eb);
	tl_threads_fail_all(false);
	fprintf(stderr, "refused as expected: %s\n", eb.msg);
	assert_true(rc < 0);
	assert_non_null(strstr(eb.msg, "cannot start the oracle thread: "));
	assert_non_null(strstr(eb.msg, strerror(EAGAIN)));
	assert_non_null(strstr(eb.msg, "ulimit -v"));
	ms_replay_close(r);
	assert_false(rt_exists(run.work));
}

/* A removal of the scratch shard that fails (as a busy mount point or an
 * immutable file would make it fail, even for root). */
static int
rm_fails(const char *path, ms_errbuf *eb)
{
	return ms_fail(eb, MS_ERR_IO, "remove %s/parts: %s", path,
	               strerror(EBUSY));
}

/* A scratch shard that cannot be removed at the end is named, with why,
 * for the caller to say: it was left behind without a word. */
static void
test_close_says_shard_left(void **state)
{
	(void)state;
	rt_run run;
	rt_opts(&run, "shard-left", "alwayskeep");
	run.t.rm_work_dir = rm_fails;
	ms_replay *r = NULL;
	ms_errbuf eb = { { 0 } }, left = { { 0 } };
	assert_int_equal(ms__replay_open_test(&r, &run.o, &run.t, &eb), 0);
	char db[PATH_MAX];
	assert_int_equal(ms_replay_close_fold(r, db, sizeof(db), &eb, &left),
	                 0);
	fprintf(stderr, "left: %s\n", left.msg);
	assert_non_null(strstr(left.msg, "was not removed"));
	assert_non_null(strstr(left.msg, run.work));
	assert_non_null(strstr(left.msg, strerror(EBUSY)));
	assert_true(rt_exists(run.work));
	assert_int_equal(ms_fs_rm_tree(run.work, NULL), 0);
	/* Removed as it should be: nothing to say. */
	rt_opts(&run, "shard-gone", "alwayskeep");
	assert_int_equal(ms__replay_open_test(&r, &run.o, &run.t, &eb), 0);
	assert_int_equal(ms_replay_close_fold(r, db, sizeof(db), &eb, &left),
	                 0);
	assert_string_equal(left.msg, "");
	assert_false(rt_exists(run.work));
}

/* In dir, what a run killed with its watcher leaves (`timeout -s KILL`
 * signals the whole process group): its scratch shard, whose owner record
 * names a process that is gone (a child that wrote it and exited); and
 * the file extra (NULL: none), which is not a shard's. */
static void
leave_dead_shard(const char *dir, const char *extra)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/parts", dir);
	assert_int_equal(ms_fs_mkdir_p(p, 0755, NULL), 0);
	snprintf(p, sizeof(p), "%s/tmp", dir);
	assert_int_equal(ms_fs_mkdir_p(p, 0755, NULL), 0);
	snprintf(p, sizeof(p), "%s/parts/0000000000000001.core", dir);
	assert_int_equal(ms_test_put(p, "part"), 0);
	snprintf(p, sizeof(p), "%s/snapshot", dir);
	assert_int_equal(ms_test_put(p, "snapshot"), 0);
	if (extra) {
		snprintf(p, sizeof(p), "%s/%s", dir, extra);
		assert_int_equal(ms_test_put(p, "mine"), 0);
	}
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(ms_owner_write(dir, "scratch", "/gone/run.db", NULL) ? 1
		                                                           : 0);
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* A --work-dir holding only the scratch shard of a run that is gone is
 * taken (its leftovers removed, one line saying so); one that also holds
 * anything else is refused with nothing removed. Before, both were
 * refused, and `clean` does not look outside the scratch root and the
 * cache: the user had to find and remove the dead run's shard. */
static void
test_work_dir_of_a_killed_run(void **state)
{
	(void)state;
	rt_run run;
	rt_opts(&run, "killed-shard", "alwayskeep");
	leave_dead_shard(run.work, NULL);
	ms_replay *r = NULL;
	ms_errbuf eb = { { 0 } };
	int rc = ms__replay_open_test(&r, &run.o, &run.t, &eb);
	if (rc)
		fprintf(stderr, "open: %s\n", eb.msg);
	assert_int_equal(rc, 0);
	const char *note = ms_replay_work_note(r);
	fprintf(stderr, "note: %s\n", note);
	assert_non_null(strstr(note, run.work));
	assert_non_null(strstr(note, "held the scratch shard of a run that "
	                             "is gone"));
	assert_non_null(strstr(note, "/gone/run.db"));
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/parts/0000000000000001.core", run.work);
	assert_false(rt_exists(p));
	ms_replay_close(r);
	assert_false(rt_exists(run.work));

	rt_opts(&run, "killed-shard-and-more", "alwayskeep");
	leave_dead_shard(run.work, "notes.txt");
	r = NULL;
	memset(&eb, 0, sizeof(eb));
	assert_int_equal(ms__replay_open_test(&r, &run.o, &run.t, &eb),
	                 MS_ERR_EXISTS);
	assert_non_null(strstr(eb.msg, "not an empty directory"));
	snprintf(p, sizeof(p), "%s/notes.txt", run.work);
	assert_true(rt_exists(p));
	snprintf(p, sizeof(p), "%s/snapshot", run.work);
	assert_true(rt_exists(p));
	assert_int_equal(ms_fs_rm_tree(run.work, NULL), 0);
}

/* The watcher of a killed run removes its shard (ms_replay_postmortem)
 * unless another run has taken the directory meanwhile (its --work-dir,
 * test_work_dir_of_a_killed_run): the owner record then names that run's
 * database and a live process. One whose record names the run's own
 * database is removed though its process lives (a plugin crashed in it:
 * the watcher cleans up before the process dies). */
static void
test_postmortem_leaves_a_taken_shard(void **state)
{
	(void)state;
	rt_run run;
	rt_opts(&run, "taken-shard", "alwayskeep");
	assert_int_equal(ms_fs_mkdir_p(run.work, 0755, NULL), 0);
	assert_int_equal(ms_owner_write(run.work, "scratch", run.db, NULL), 0);
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_replay_postmortem("/gone/run.db", run.work,
	                                      "killed", NULL, &eb),
	                 0);
	assert_true(rt_exists(run.work));
	assert_int_equal(ms_replay_postmortem(run.db, run.work, "crashed",
	                                      NULL, &eb),
	                 0);
	assert_false(rt_exists(run.work));
}

/* A replay that cannot be opened for lack of memory for its state, its
 * cache of checked blocks or its plugins' log lines says which and how
 * many bytes, and leaves no work directory: each said only "replay: out
 * of memory". */
static void
test_open_out_of_memory_says_what_for(void **state)
{
	(void)state;
	const struct {
		size_t size;
		const char *what;
	} c[] = {
		{ sizeof(ms_replay), "its state" },
		{ ms__blkcache_size(), "its cache of checked blocks" },
		{ (size_t)MS_EV_LINKS_MAX * MS_EV_PLOG_KEEP *
		          sizeof(ms__plog_line),
		  "the plugins' log lines" },
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(*c); i++) {
		rt_run run;
		rt_opts(&run, "oom-open", "alwayskeep");
		ms_replay *r = (ms_replay *)0x1;
		ms_errbuf eb = { { 0 } };
		tl_alloc.fail_size = c[i].size;
		int rc = ms__replay_open_test(&r, &run.o, &run.t, &eb);
		assert_true(tl_alloc_disarm());
		char want[200];
		snprintf(want, sizeof(want),
		         "replay: out of memory for %s (%zu bytes)", c[i].what,
		         c[i].size);
		if (rc != MS_ERR_NOMEM || strcmp(eb.msg, want) != 0)
			fail_msg("%d \"%s\"; expected \"%s\"", rc, eb.msg,
			         want);
		assert_null(r);
		assert_false(rt_exists(run.work));
	}
}

/* No room for the sampler of the resident set's split peaks (the first
 * thread a start makes): the run goes on and ends, and the start's note
 * says what it went without, why and where to look. The sampler failed
 * without a word and the peaks read 0. */
static void
test_start_without_rss_sampler(void **state)
{
	(void)state;
	rt_run run;
	rt_opts(&run, "no-rss-thread", "alwayskeep");
	ms_replay *r = NULL;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms__replay_open_test(&r, &run.o, &run.t, &eb), 0);
	assert_string_equal(ms_replay_start_note(r), "");
	tl_threads_fail_nth(1);
	int rc = ms_replay_start(r, &eb);
	tl_threads_fail_nth(0);
	if (rc)
		fail_msg("start: %s", eb.msg);
	const char *note = ms_replay_start_note(r);
	fprintf(stderr, "note: %s\n", note);
	assert_non_null(
	        strstr(note, "cannot start the RSS sampler's thread: "));
	assert_non_null(strstr(note, strerror(EAGAIN)));
	assert_non_null(strstr(note, "ulimit -v"));
	assert_non_null(strstr(note, "the run goes on without the split "
	                             "peaks"));
	assert_int_equal(ms_replay_wait(r, -1), 0);
	ms_replay_status *st = rt_status_new();
	ms_replay_get_status(r, st);
	assert_int_equal(st->state, MS_REPLAY_DONE);
	free(st);
	ms_replay_close(r);
}

/* ---- staging --------------------------------------------------------- */

/* Write text to path; false on failure. */
static bool
put_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return false;
	bool ok = fputs(text, f) >= 0;
	return fclose(f) == 0 && ok;
}

/* Whether the file at path holds exactly text. */
static bool
has_text(const char *path, const char *text)
{
	char buf[256];
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	return strcmp(buf, text) == 0;
}

/* Staging by copy between file systems that cannot copy_file_range
 * tries it once, not once a file: the rest of the day's files go
 * straight to read/write (it was tried, and failed, for each of the
 * 4,836 files of a day-1x). A part directory (an older format) is still
 * staged file by file, told from a file by the copy's own open. */
static void
test_stage_copy_tries_range_once(void **state)
{
	(void)state;
	char src[PATH_MAX], dst[PATH_MAX], a[PATH_MAX], b[PATH_MAX];
	char text[64];
	rt_path_in(src, sizeof(src), rt.shm, "stage-src");
	rt_path_in(dst, sizeof(dst), rt.shm, "stage-dst");
	assert_int_equal(mkdir(src, 0755), 0);
	assert_int_equal(mkdir(dst, 0755), 0);
	for (int i = 0; i < 4; i++) {
		rt_path_in(a, sizeof(a), src, "%016x", i);
		snprintf(text, sizeof(text), "part %d's bytes", i);
		assert_true(put_text(a, text));
	}
	rt_path_in(a, sizeof(a), src, "dir");
	assert_int_equal(mkdir(a, 0755), 0);
	rt_path_in(a, sizeof(a), src, "dir/data");
	assert_true(put_text(a, "a directory's file"));

	ms__stage_counts c = { 0 };
	ms_errbuf eb = { { 0 } };
	atomic_store(&cfr_calls, 0);
	atomic_store(&cfr_exdev, true);
	for (int i = 0; i < 4; i++) {
		rt_path_in(a, sizeof(a), src, "%016x", i);
		rt_path_in(b, sizeof(b), dst, "%016x", i);
		assert_int_equal(ms__stage_tree(a, b, false, &c, &eb), 0);
	}
	rt_path_in(a, sizeof(a), src, "dir");
	rt_path_in(b, sizeof(b), dst, "dir");
	int rc = ms__stage_tree(a, b, false, &c, &eb);
	atomic_store(&cfr_exdev, false);
	assert_int_equal(rc, 0);
	unsigned long calls = atomic_load(&cfr_calls);
	fprintf(stderr, "copy_file_range called %lu times for 5 files\n",
	        calls);
	assert_true(calls <= 1);
	assert_int_equal(c.copied + c.reflinked, 5);
	assert_int_equal(c.linked, 0);
	for (int i = 0; i < 4; i++) {
		rt_path_in(b, sizeof(b), dst, "%016x", i);
		snprintf(text, sizeof(text), "part %d's bytes", i);
		assert_true(has_text(b, text));
	}
	rt_path_in(b, sizeof(b), dst, "dir/data");
	assert_true(has_text(b, "a directory's file"));
	rt_rm(src);
	rt_rm(dst);
}

/* ---- bad input -------------------------------------------------------- */

/* Open must fail with a one-line message containing every `needle`, and
 * leave neither the database nor the shard directory behind. */
static void
expect_refused(rt_run *run, const char *n1, const char *n2)
{
	ms_replay *r = NULL;
	ms_errbuf eb = { { 0 } };
	int rc = ms_replay_open(&r, &run->o, &eb);
	if (rc == 0)
		ms_replay_close(r);
	assert_true(rc < 0);
	assert_null(r);
	fprintf(stderr, "refused as expected: %s\n", eb.msg);
	assert_true(eb.msg[0] != '\0');
	assert_null(strchr(eb.msg, '\n'));
	if (n1 && !strstr(eb.msg, n1)) {
		fprintf(stderr, "message lacks '%s'\n", n1);
		fail();
	}
	if (n2 && !strstr(eb.msg, n2)) {
		fprintf(stderr, "message lacks '%s'\n", n2);
		fail();
	}
	assert_false(rt_exists(run->work));
	if (strstr(run->db, "/not-a-dir/") == NULL)
		assert_false(rt_exists(run->db));
}

static void
test_bad_fixture_dir(void **state)
{
	(void)state;
	rt_run run;
	rt_opts(&run, "bad-fixture", "disabled");
	char missing[PATH_MAX];
	rt_path(missing, sizeof(missing), "no-such-fixture");
	run.o.fixture_dir = missing;
	expect_refused(&run, missing, NULL);
}

/* A copy of the test's fixture at <root>/<name>, to damage. */
static void
copy_fixture(const char *name, char *copy, size_t cap)
{
	char cmd[3 * PATH_MAX];
	rt_path(copy, cap, "%s", name);
	snprintf(cmd, sizeof(cmd), "cp -a '%s' '%s'", rt.fixture, copy);
	assert_int_equal(system(cmd), 0);
}

static void
test_bad_fixture_part_removed(void **state)
{
	(void)state;
	char copy[PATH_MAX];
	copy_fixture("fixture-damaged", copy, sizeof(copy));
	ms_fixture *fx = NULL;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_fixture_open(&fx, copy, &eb), 0);
	const ms_fixture_slot *s =
	        ms_fixture_slot_at(fx, ms_fixture_nslots(fx) / 3);
	char id[17], lat[PATH_MAX];
	ms_part_id_str(s->part_id, id);
	assert_int_equal(ms_fixture_slot_path(fx, ms_fixture_nslots(fx) / 3,
	                                      MS_KIND_LATENCY, lat,
	                                      sizeof(lat)),
	                 0);
	rt_rm(lat);
	ms_fixture_close(fx);
	rt_run run;
	rt_opts(&run, "bad-part", "disabled");
	run.o.fixture_dir = copy;
	expect_refused(&run, id, copy);
	rt_rm(copy);
}

/* A part that goes missing after the open fails the start in its
 * staging: the run is on record from before the staging (so that one
 * that dies there can be marked), and is recorded failed with the error
 * at close, its scratch shard removed. */
static void
test_start_fails_in_staging(void **state)
{
	(void)state;
	char copy[PATH_MAX];
	copy_fixture("fixture-vanishing", copy, sizeof(copy));
	rt_run run;
	rt_opts(&run, "stage-fails", "disabled");
	run.o.fixture_dir = copy;
	ms_replay *r = NULL;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_replay_open(&r, &run.o, &eb), 0);
	ms_fixture *fx = NULL;
	assert_int_equal(ms_fixture_open(&fx, copy, &eb), 0);
	char core[PATH_MAX];
	assert_int_equal(ms_fixture_slot_path(fx, ms_fixture_nslots(fx) / 2,
	                                      MS_KIND_CORE, core, sizeof(core)),
	                 0);
	ms_fixture_close(fx);
	rt_rm(core);
	assert_int_not_equal(ms_replay_start(r, &eb), 0);
	fprintf(stderr, "start failed as expected: %s\n", eb.msg);
	assert_non_null(strstr(eb.msg, core));
	ms_replay_close(r);
	assert_false(rt_exists(run.work));
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	assert_int_equal(
	        sqlite3_open_v2(run.db, &db, SQLITE_OPEN_READONLY, NULL),
	        SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db,
	                                    "SELECT status, error, "
	                                    "clone_method, wall_ns FROM run",
	                                    -1, &st, NULL),
	                 SQLITE_OK);
	assert_int_equal(sqlite3_step(st), SQLITE_ROW);
	assert_string_equal((const char *)sqlite3_column_text(st, 0), "failed");
	assert_non_null(strstr((const char *)sqlite3_column_text(st, 1), core));
	assert_string_equal((const char *)sqlite3_column_text(st, 2), "");
	assert_int_equal(sqlite3_column_int64(st, 3), 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
	rt_rm(copy);
}

/* A schedule edited after the build (one publication moved, the parts
 * intact) is refused before any work, naming the schedule and the slot. */
static void
edit_schedule(const char *dir, const char *sql)
{
	char path[PATH_MAX + 32];
	snprintf(path, sizeof(path), "%s/%s", dir, MS_FIXTURE_MANIFEST);
	sqlite3 *db = NULL;
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_changes(db), 1);
	sqlite3_close(db);
}

static void
test_bad_fixture_schedule_edited(void **state)
{
	(void)state;
	char copy[PATH_MAX];
	copy_fixture("fixture-edited", copy, sizeof(copy));
	/* Slot 5 published one hour earlier: before its own rows. */
	edit_schedule(copy, "UPDATE schedule SET pub_ns = pub_ns - "
	                    "3600000000000 WHERE slot = 5");
	rt_run run;
	rt_opts(&run, "edited", "disabled");
	run.o.fixture_dir = copy;
	expect_refused(&run, "schedule", "slot 5");
	rt_rm(copy);
	/* A one-nanosecond move later in the day, which keeps the slot
	 * consistent with its part: still refused, naming the slot. */
	copy_fixture("fixture-edited", copy, sizeof(copy));
	edit_schedule(copy, "UPDATE schedule SET pub_ns = pub_ns + 1 WHERE "
	                    "slot = 40");
	rt_opts(&run, "edited", "disabled");
	run.o.fixture_dir = copy;
	expect_refused(&run, "edited after the build", copy);
	expect_refused(&run, "slot 40 (part 0000000000000029): pub_ns is",
	               copy);
	rt_rm(copy);
}

static void
test_bad_variant(void **state)
{
	(void)state;
	rt_run run;
	rt_opts(&run, "bad-variant", "nosuchsampler");
	expect_refused(&run, "nosuchsampler", NULL);
}

static void
test_bad_chain_config(void **state)
{
	(void)state;
	rt_run run;
	rt_opts(&run, "bad-chain",
	        "skywalking:{\"durationThresholdMs\":500,\"keepErrors\":");
	expect_refused(&run, "skywalking", NULL);
	rt_opts(&run, "bad-chain", "skywalking:{\"noSuchKey\":1}");
	expect_refused(&run, "noSuchKey", NULL);
}

static void
test_bad_db_path(void **state)
{
	(void)state;
	char file[PATH_MAX];
	rt_path(file, sizeof(file), "plain-file");
	FILE *fp = fopen(file, "w");
	assert_non_null(fp);
	fclose(fp);
	rt_run run;
	rt_opts(&run, "bad-db", "disabled");
	/* A path under a regular file cannot be created, even by root. */
	rt_path(run.db, sizeof(run.db), "plain-file/not-a-dir/run.db");
	expect_refused(&run, run.db, NULL);
}

static bool
rss_quiet(ms__rsswatch *w)
{
	pthread_mutex_lock(&w->mu);
	bool q = w->quiet;
	pthread_mutex_unlock(&w->mu);
	return q;
}

/* The RSS sampler sleeps while the run is stopped (a paused TUI cost 200
 * reads of /proc a second) and samples while it runs. */
static void
test_rss_sampler_sleeps_while_stopped(void **state)
{
	(void)state;
	rt_run run;
	ms_replay *r = open_started(&run, "rssquiet", "disabled", true, true,
	                            "merge=2");
	ms_replay_status *st = rt_status_new();
	ms_errbuf eb = { { 0 } };
	assert_true(rt_wait_stop(r, st));
	assert_int_equal(st->state, MS_REPLAY_PAUSED);
	assert_true(rss_quiet(&r->rss));
	assert_int_equal(ms_replay_command(r, MS_RCMD_RUN, &eb), 0);
	assert_true(rt_wait_stop(r, st));
	assert_int_equal(st->state, MS_REPLAY_BREAK);
	assert_true(rss_quiet(&r->rss));
	assert_int_equal(ms_replay_command(r, MS_RCMD_RUN, &eb), 0);
	assert_int_equal(ms_replay_wait(r, -1), 0);
	assert_true(rss_quiet(&r->rss));
	ms_replay_close(r);
	free(st);
}

/* What a quiet sampler did not see still counts: a resident set that rose
 * and fell while it slept is the phase's total peak (the kernel's
 * high-water mark), not lost. */
static void
test_rss_quiet_keeps_peak(void **state)
{
	(void)state;
	ms__rsswatch w;
	assert_int_equal(ms__rsswatch_start(&w, 1, NULL), 0);
	ms_rusage ru;
	assert_int_equal(ms_rusage_sample(&ru, NULL), 0);
	/* Above the process's mark, whatever earlier tests made it. */
	size_t len = (size_t)(ru.peak_rss_bytes - ru.rss_bytes) + (64u << 20);
	ms__rss_peaks pk;
	ms__rsswatch_take(&w, &pk);
	ms__rsswatch_quiet(&w, true);
	pthread_mutex_lock(&w.mu);
	uint64_t before = w.samples;
	pthread_mutex_unlock(&w.mu);
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(p != MAP_FAILED);
	memset(p, 1, len);
	munmap(p, len);
	pthread_mutex_lock(&w.mu);
	/* Asleep: at most the one sample it may have been taking. */
	assert_true(w.samples <= before + 1);
	pthread_mutex_unlock(&w.mu);
	ms__rsswatch_quiet(&w, false);
	ms__rsswatch_take(&w, &pk);
	assert_true(pk.total >= ru.rss_bytes + (int64_t)len - (8 << 20));
	ms__rsswatch_stop(&w);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rss_quiet_keeps_peak),
		cmocka_unit_test(test_rss_sampler_sleeps_while_stopped),
		cmocka_unit_test(test_slowest_speed_paces),
		cmocka_unit_test(test_bad_fixture_dir),
		cmocka_unit_test(test_bad_fixture_part_removed),
		cmocka_unit_test(test_start_fails_in_staging),
		cmocka_unit_test(test_bad_fixture_schedule_edited),
		cmocka_unit_test(test_bad_variant),
		cmocka_unit_test(test_bad_chain_config),
		cmocka_unit_test(test_bad_db_path),
		cmocka_unit_test(test_run_disabled),
		cmocka_unit_test(test_run_alwayskeep),
		cmocka_unit_test(test_run_detdrop),
		cmocka_unit_test(test_oracle_spilled_until_gates),
		cmocka_unit_test(test_oracle_spill_removed_at_close),
		cmocka_unit_test(test_oracle_sorts_blocks_without_a_copy),
		cmocka_unit_test(test_oracle_cancel_stops_between_batches),
		cmocka_unit_test(test_run_skywalking),
		cmocka_unit_test(test_trace_policy_skywalking),
		cmocka_unit_test(test_trace_policy_detdrop),
		cmocka_unit_test(test_prediction_selection_policy),
		cmocka_unit_test(test_prediction_trace_policy),
		cmocka_unit_test(test_gates_one_definition),
		cmocka_unit_test(test_disabled_alwayskeep_identical),
		cmocka_unit_test(test_fsync_count_matches_calls),
		cmocka_unit_test(test_phase_rss_peak_own),
		cmocka_unit_test(test_staging_link_and_copy_same_run),
		cmocka_unit_test(test_device_name),
		cmocka_unit_test(test_work_dir_choice),
		cmocka_unit_test(test_work_dir_long_db_name),
		cmocka_unit_test(test_work_dir_choice_blocks),
		cmocka_unit_test(test_work_room),
		cmocka_unit_test(test_work_room_note),
		cmocka_unit_test(test_failure_line_keeps_cause),
		cmocka_unit_test(test_retain_reread_identical),
		cmocka_unit_test(test_day1x_finalize_cut_by_budget),
		cmocka_unit_test(test_break_mature),
		cmocka_unit_test(test_break_merge_n),
		cmocka_unit_test(test_break_sampling_carries_plan),
		cmocka_unit_test(test_break_costs_nothing),
		cmocka_unit_test(test_close_at_finalize_barrier_aborted),
		cmocka_unit_test(test_close_at_primary_barrier_drops_held),
		cmocka_unit_test(test_break_time),
		cmocka_unit_test(test_run_to_targets),
		cmocka_unit_test(test_run_to_time_before_next_point),
		cmocka_unit_test(test_break_spec_time_of_day),
		cmocka_unit_test(test_break_spec_part_id),
		cmocka_unit_test(test_step_one_point),
		cmocka_unit_test(test_sigkill_mid_run),
		cmocka_unit_test(test_wait_timeout_fails_run),
		cmocka_unit_test(test_wait_deadline_skips_barrier),
		cmocka_unit_test(test_wait_timeout_covers_oracle),
		cmocka_unit_test(test_profile_not_enforced_said_at_start),
		cmocka_unit_test(test_oracle_cost_rounded_alike),
		cmocka_unit_test(test_recorder_full_stops_run),
		cmocka_unit_test(test_recorder_full_at_end_fails_run),
		cmocka_unit_test(test_recorder_fails_at_close),
		cmocka_unit_test(test_recorder_insert_fails_run),
		cmocka_unit_test(test_start_without_threads),
		cmocka_unit_test(test_close_says_shard_left),
		cmocka_unit_test(test_work_dir_of_a_killed_run),
		cmocka_unit_test(test_postmortem_leaves_a_taken_shard),
		cmocka_unit_test(test_open_out_of_memory_says_what_for),
		cmocka_unit_test(test_start_without_rss_sampler),
		cmocka_unit_test(test_stage_copy_tries_range_once),
	};
	return cmocka_run_group_tests(tests, rt_setup, rt_teardown);
}
