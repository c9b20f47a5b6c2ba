/*
 * test_tui_live.c - the screen's figures while a merge runs, through the
 * real replay and the TUI's controller (tui/replay_ctl.c): the smoke
 * fixture's sampled merge (the finalize, in four batches under a small
 * staging ceiling) is held inside its fourth Decide call by tp_slow, which
 * waits for a gate file (the first three take 100 ms each); meanwhile the
 * TUI's snapshot must return at once (a frame never waits for a plugin;
 * the chain holds its lock through a call) and show the merge in
 * progress: calls counted for the link, bytes staged, and the merge
 * named, before any event says it is done. The frame drawn from that
 * snapshot shows the figures too. (A call is counted once it returns and
 * the replay's reader takes the chain's lock between two batches: three
 * batch boundaries give it three chances, which a loaded machine can take
 * from it; the calls are checked when it got one.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "replay_testlib.h"

#include "merge_int.h"
#include "ms_replay_ctl.h"
#include "ms_pipeline.h"
#include "tui_int.h"

#include "sqlite_full_vfs.h"

#include <fcntl.h>
#include <inttypes.h>
#include <sqlite3.h>

/* A snapshot taken on its own thread, so that the test can say it did not
 * return rather than hang. */
typedef struct snap_job {
	ms_tui_ctl *ctl;
	ms_tui_view *view;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool done;
	int rc;
} snap_job;

static void *
snap_main(void *arg)
{
	snap_job *j = arg;
	ms_errbuf eb = { "" };
	int rc = j->ctl->ops->snapshot(j->ctl->self, j->view, &eb);
	pthread_mutex_lock(&j->mu);
	j->rc = rc;
	j->done = true;
	pthread_cond_broadcast(&j->cv);
	pthread_mutex_unlock(&j->mu);
	return NULL;
}

/* Snapshot within limit_ms, or false (the thread is then left waiting for
 * the held call; the caller releases the gate and joins it). */
static bool
snapshot_within(snap_job *j, pthread_t *th, int limit_ms)
{
	j->done = false;
	assert_int_equal(pthread_create(th, NULL, snap_main, j), 0);
	struct timespec end;
	clock_gettime(CLOCK_REALTIME, &end);
	end.tv_nsec += (long)(limit_ms % 1000) * 1000000L;
	end.tv_sec += limit_ms / 1000 + end.tv_nsec / 1000000000L;
	end.tv_nsec %= 1000000000L;
	pthread_mutex_lock(&j->mu);
	int rc = 0;
	while (!j->done && rc == 0)
		rc = pthread_cond_timedwait(&j->cv, &j->mu, &end);
	bool done = j->done;
	pthread_mutex_unlock(&j->mu);
	return done;
}

static bool
frame_has(const ms_canvas *c, const char *needle)
{
	for (int y = 0; y < c->h; y++) {
		char row[1024];
		ms_canvas_row(c, y, row, sizeof(row));
		if (strstr(row, needle))
			return true;
	}
	return false;
}

/* A replay under the TUI's controller, and a view for its snapshots. */
typedef struct live {
	ms_replay *r; /* the controller's current replay */
	ms_tui_ctl ctl;
	ms_replay_ctl *rc;
	ms_tui_view *v;
} live;

/* Start run's replay (and wait for its end when to_end), its controller
 * and an empty view. */
static void
live_open_at(live *l, rt_run *run, const char *bp, bool to_end)
{
	l->r = rt_start(run, bp);
	assert_non_null(l->r);
	if (to_end)
		assert_int_equal(ms_replay_wait(l->r, -1), 0);
	l->rc = NULL;
	assert_int_equal(ms_replay_ctl_new(&l->rc, l->r, &l->ctl), 0);
	l->v = ms_tui_view_new();
	assert_non_null(l->v);
}

static void
live_open(live *l, rt_run *run, bool to_end)
{
	live_open_at(l, run, NULL, to_end);
}

/* The view from a snapshot of the controller. */
static void
live_snapshot(live *l)
{
	ms_errbuf eb = { "" };
	assert_int_equal(l->ctl.ops->snapshot(l->ctl.self, l->v, &eb), 0);
}

static void
live_close(live *l)
{
	ms_tui_view_free(l->v);
	ms_replay_ctl_free(l->rc);
	ms_replay_close(l->r);
}

static void
test_figures_move_during_decide(void **state)
{
	(void)state;
	char gate[PATH_MAX], spec[PATH_MAX + 64];
	rt_path(gate, sizeof(gate), "decide-gate");
	snprintf(spec, sizeof(spec), "tp_slow:{\"slow\":\"100/1>3@%s\"}", gate);
	rt_run run;
	rt_opts(&run, "live", spec);
	run.o.plugin_dir = MS_TEST_PLUGIN_DIR;
	/* The held call and the waits around it must outlast the test. */
	run.o.decide_timeout_ns = 60 * 1000000000LL;
	run.o.wait_timeout_ns = 120 * 1000000000LL;
	run.o.speed = 0;
	/* A 16 MiB staging ceiling: the finalize merge of the smoke day
	 * stages in several batches, so Decide is called more than once. */
	run.o.profile = "cpus=2,mem=128m";
	run.o.envelope = "emulated";
	live l;
	live_open(&l, &run, false);
	ms_replay *r = l.r;
	snap_job j = { .ctl = &l.ctl, .view = l.v };
	pthread_mutex_init(&j.mu, NULL);
	pthread_cond_init(&j.cv, NULL);

	/* Wait (without touching the chain) until the sampled merge stages;
	 * then snapshots for 2 s (its first three calls take 300 ms), until
	 * a call shows. Every snapshot must return at once (within 10 s: the
	 * held call waits for a file forever, so any bound tells the two
	 * apart, and 2 s is short for a sanitizer build on a loaded machine). */
	struct timespec tick = { 0, 10 * 1000000L };
	for (int i = 0; i < 6000 && !ms_pipeline_staged_live(r->pipe); i++)
		nanosleep(&tick, NULL);
	assert_true(ms_pipeline_staged_live(r->pipe) > 0);
	bool present = false, called = false;
	pthread_t th;
	for (int i = 0; i < 200 && !called; i++) {
		bool returned = snapshot_within(&j, &th, 10000);
		if (!returned) {
			int fd = open(gate, O_CREAT | O_WRONLY, 0644);
			close(fd);
			pthread_join(th, NULL);
			fail_msg(
			        "the snapshot waited for the held Decide call");
		}
		pthread_join(th, NULL);
		assert_int_equal(j.rc, 0);
		present = j.view->live.present;
		called = present && j.view->nplugins == 1 &&
		         j.view->plugins[0].calls >= 1;
		if (!called)
			nanosleep(&tick, NULL);
	}
	ms_tui_view *v = j.view;
	fprintf(stderr,
	        "held merge #%" PRIu64 ": link calls %" PRIu64
	        " traces %" PRIu64 ", staged live %" PRIu64 " peak %" PRIu64
	        ", merges done %" PRIu64 "\n",
	        v->live.seq, v->plugins[0].calls, v->plugins[0].traces,
	        v->staging.live, v->staging.peak, v->merges_done);
	assert_true(present);
	/* The merge is still running: no event has counted it. */
	assert_true(v->state == MS_VIEW_RUNNING);
	uint64_t done_before = v->merges_done;
	assert_true(v->live.seq > done_before);
	assert_true(v->live.wall_ns > 0);
	assert_true(v->staging.live > 0);
	assert_true(v->staging.peak >= v->staging.live);
	uint64_t held_seq = v->live.seq, held_pref = v->staging.preferred;
	if (called) {
		/* The calls of this merge, and no more than the link's. */
		assert_true(v->live.calls >= 1);
		assert_true(v->live.traces >= 1);
		assert_true(v->plugins[0].calls >= v->live.calls);
		assert_true(v->plugins[0].traces >= v->live.traces);
	} else {
		/* The chain holds its lock through every call, and a busy
		 * machine can keep the reader off it between all three. */
		fprintf(stderr, "no call was read between the batches\n");
	}
	assert_int_equal(v->nevents, v->events_total);
	for (size_t i = 0; i < v->nevents; i++)
		assert_true(v->events[i].seq != v->live.seq);

	/* The frame says it too. */
	ms_canvas cv;
	ms_canvas_init(&cv);
	v->ui.ascii = true;
	assert_int_equal(ms_render_frame(&cv, v, 200, 60), 0);
	char want[64];
	snprintf(want, sizeof(want), "merge #%" PRIu64 " %s", v->live.seq,
	         v->live.calls ? "in Decide" : "staging, no Decide call");
	if (!frame_has(&cv, want))
		fail_msg("no '%s' on the frame", want);
	assert_false(frame_has(&cv, "live 0 B"));
	ms_canvas_release(&cv);

	/* Released: the merge completes, and the live line goes. */
	int fd = open(gate, O_CREAT | O_WRONLY, 0644);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(ms_replay_wait(r, -1), 0);
	assert_true(snapshot_within(&j, &th, 10000));
	pthread_join(th, NULL);
	assert_true(v->state == MS_VIEW_DONE);
	assert_false(v->live.present);
	assert_true(v->plugins[0].calls >= 1);
	assert_true(v->merges_done > done_before);
	/* While it staged, the gauge's limit was the held merge's own
	 * preferred limit, not the one of the merge recorded before it. */
	static ms_ev_merge recent[MS_REPLAY_RECENT];
	uint64_t total = 0;
	size_t nr = ms_replay_recent(r, recent, NULL, MS_REPLAY_RECENT, &total);
	bool found = false;
	for (size_t i = 0; i < nr; i++)
		if (recent[i].seq == held_seq) {
			found = true;
			assert_int_equal(
			        held_pref,
			        recent[i].sampling.preferred_limit_bytes);
		}
	assert_true(found);

	pthread_mutex_destroy(&j.mu);
	pthread_cond_destroy(&j.cv);
	live_close(&l);
	unlink(gate);
}

/* The gates' area of a w x h frame scrolled through page by page: its
 * inner text, every run of blanks one space. Scrolled, the first row
 * holds the header of the table in view, over the line scrolled under
 * it, the last line of the page before: pages step by a page less a
 * line and their first row is left out. */
static void
gates_text(ms_tui_view *v, int w, int h, char *out, size_t cap)
{
	ms_layout_opts lo = { .overlay = false };
	ms_layout l;
	ms_layout_compute(w, h, &lo, &l);
	ms_rect r = l.r[MS_PANEL_EVENTS];
	size_t lines = ms__gates_lines(v, r.w - 2), page = (size_t)r.h - 2;
	v->ui.ascii = true;
	v->ui.show_gates = true;
	v->ui.focus = MS_FOCUS_EVENTS;
	ms_canvas cv;
	ms_canvas_init(&cv);
	size_t used = 0;
	out[0] = '\0';
	for (size_t top = 0; top < lines; top += page - 1) {
		v->ui.gates_scroll = top;
		assert_int_equal(ms_render_frame(&cv, v, w, h), 0);
		for (int y = r.y + (top ? 2 : 1); y < r.y + r.h - 1; y++) {
			char row[1024];
			ms_canvas_row(&cv, y, row, sizeof(row));
			row[r.x + r.w - 1] = '\0';
			for (const char *p = row + r.x + 1; *p; p++) {
				bool blank = *p == ' ';
				if (blank &&
				    (used == 0 || out[used - 1] == ' '))
					continue;
				if (used + 2 < cap)
					out[used++] = *p;
			}
			if (used && out[used - 1] != ' ' && used + 2 < cap)
				out[used++] = ' ';
		}
	}
	out[used] = '\0';
	ms_canvas_release(&cv);
}

/* At the end of a run the screen shows every row of the reconciliation
 * with the oracle that the database holds (29; the screen took 24, the
 * last five never shown), each with its figures and the rule it must
 * satisfy (or its remark) as `mergescope report` prints it, at 132x44
 * and 80x24, scrolling. */
static void
test_every_recon_row(void **state)
{
	(void)state;
	rt_run run;
	rt_opts(&run, "recon", "skywalking");
	run.o.speed = 0;
	live l;
	live_open(&l, &run, true);
	live_snapshot(&l);
	ms_tui_view *v = l.v;
	assert_int_equal(v->state, MS_VIEW_DONE);
	assert_true(v->ngates > 0);

	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	assert_int_equal(
	        sqlite3_open_v2(run.db, &db, SQLITE_OPEN_READONLY, NULL),
	        SQLITE_OK);
	assert_int_equal(
	        sqlite3_prepare_v2(db,
	                           "SELECT name, primary_n, cooldown_n, "
	                           "finalize_n, total_n, ok, note FROM "
	                           "reconcile ORDER BY id",
	                           -1, &st, NULL),
	        SQLITE_OK);
	size_t cap = 1 << 18, n = 0;
	char *at132 = malloc(cap), *at80 = malloc(cap);
	assert_non_null(at132);
	assert_non_null(at80);
	gates_text(v, 132, 44, at132, cap);
	gates_text(v, 80, 24, at80, cap);
	for (; sqlite3_step(st) == SQLITE_ROW; n++) {
		const char *name = (const char *)sqlite3_column_text(st, 0);
		const char *note = (const char *)sqlite3_column_text(st, 6);
		bool ok = sqlite3_column_int(st, 5) != 0;
		while (*name == ' ')
			name++;
		char rule[600], want[1024];
		if (note[0] == '(')
			snprintf(rule, sizeof(rule), " %s", note);
		else if (note[0])
			snprintf(rule, sizeof(rule), " %s %s",
			         ok ? "ok" : "FAIL", note);
		else
			snprintf(rule, sizeof(rule), "%s", ok ? "" : " FAIL");
		snprintf(want, sizeof(want), "%s %lld %lld %lld %lld%s", name,
		         (long long)sqlite3_column_int64(st, 1),
		         (long long)sqlite3_column_int64(st, 2),
		         (long long)sqlite3_column_int64(st, 3),
		         (long long)sqlite3_column_int64(st, 4), rule);
		assert_true(n < v->nrecon);
		assert_string_equal(v->recon[n].note, note);
		if (!strstr(at132, want))
			fail_msg("132x44 lacks \"%s\"", want);
		if (!strstr(at80, want))
			fail_msg("80x24 lacks \"%s\"", want);
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
	fprintf(stderr, "%zu reconciliation rows\n", n);
	assert_true(n >= 29);
	assert_int_equal(v->nrecon, n);
	free(at132);
	free(at80);
	live_close(&l);
}

/* The reconciliation rows of the database at path: how many, and whether
 * each equals v's row of its place. */
static size_t
recon_rows_match(const char *path, const ms_tui_view *v, bool *same)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL),
	                 SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db,
	                                    "SELECT name, primary_n, "
	                                    "cooldown_n, finalize_n, "
	                                    "total_n, ok, note FROM "
	                                    "reconcile ORDER BY id",
	                                    -1, &st, NULL),
	                 SQLITE_OK);
	size_t n = 0;
	*same = true;
	for (; sqlite3_step(st) == SQLITE_ROW; n++) {
		if (n >= v->nrecon) {
			*same = false;
			continue;
		}
		const char *name = (const char *)sqlite3_column_text(st, 0);
		const char *note = (const char *)sqlite3_column_text(st, 6);
		*same = *same && !strcmp(v->recon[n].name, name) &&
		        !strcmp(v->recon[n].note, note) &&
		        v->recon[n].ok == (sqlite3_column_int(st, 5) != 0);
		for (int k = 0; k < 4; k++) {
			int64_t x = sqlite3_column_int64(st, k + 1);
			*same = *same && v->recon[n].v[k] == (uint64_t)x;
		}
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
	return n;
}

/* Gone back from the end (the reconciliation's rows leave the database)
 * and run to the end again (they are recorded again): the screen shows
 * no reconciliation while the run is not over, and after the second end
 * the rows the database holds. It kept the rows it read at the first
 * end, whatever the database said after. */
static void
test_recon_after_seek_back(void **state)
{
	(void)state;
	rt_run run;
	rt_opts(&run, "recon-seek", "skywalking");
	run.o.speed = 0;
	run.o.serial = true;
	run.o.checkpoint_every_ns = 3600 * 1000000000LL;
	live l;
	live_open(&l, &run, true);
	ms_replay *r = l.r;
	ms_tui_view *v = l.v;
	ms_errbuf eb = { "" };
	live_snapshot(&l);
	bool same = false;
	size_t n = recon_rows_match(run.db, v, &same);
	assert_true(n > 0);
	assert_true(same);
	assert_int_equal(v->nrecon, n);

	/* Back to merge #3: the run is not over, and its database holds no
	 * reconciliation. */
	if (ms_replay_seek_merge(r, 3, &eb))
		fail_msg("seek: %s", eb.msg);
	live_snapshot(&l);
	assert_true(v->state != MS_VIEW_DONE);
	assert_int_equal(recon_rows_match(run.db, v, &same), 0);
	assert_int_equal(v->nrecon, 0);

	/* To the end again, in one step between two snapshots. */
	assert_int_equal(ms_replay_command(r, MS_RCMD_RUN, &eb), 0);
	assert_int_equal(ms_replay_wait(r, -1), 0);
	live_snapshot(&l);
	assert_int_equal(v->state, MS_VIEW_DONE);
	n = recon_rows_match(run.db, v, &same);
	assert_true(n > 0);
	assert_int_equal(v->nrecon, n);
	assert_true(same);

	/* From the end straight to the end again: back and forward between
	 * two snapshots, the screen never seeing the run not over. */
	if (ms_replay_seek_merge(r, 3, &eb))
		fail_msg("seek: %s", eb.msg);
	assert_int_equal(ms_replay_command(r, MS_RCMD_RUN, &eb), 0);
	assert_int_equal(ms_replay_wait(r, -1), 0);
	live_snapshot(&l);
	n = recon_rows_match(run.db, v, &same);
	assert_int_equal(v->nrecon, n);
	assert_true(same);
	live_close(&l);
}

/* The restart's reopen: a new replay of the run's options, paused at its
 * first publication, recording to a new database (the adapter closes the
 * old one). */
static int
reopen_paused(void *arg, bool running, ms_replay **out, ms_errbuf *eb)
{
	rt_run *run = arg;
	rt_opts(run, "kept-rerun", "skywalking");
	run->o.start_paused = !running;
	return ms_replay_open(out, &run->o, eb);
}

/* The breakpoints of view v are merge=1001.. merge=1064, every fifth
 * off, and the replay r holds them (and no more but run-to targets). */
static void
assert_64_kept(ms_replay *r, const ms_tui_view *v)
{
	assert_int_equal(v->nbreaks, 64);
	for (size_t i = 0; i < v->nbreaks; i++) {
		char spec[32];
		snprintf(spec, sizeof(spec), "merge=%zu", 1001 + i);
		assert_string_equal(v->breaks[i].spec, spec);
		assert_int_equal(v->breaks[i].enabled, (i + 1) % 5 != 0);
	}
	ms_breakpoint *b = calloc(128, sizeof(*b));
	assert_non_null(b);
	size_t n = ms_replay_breaks(r, b, 128), user = 0;
	for (size_t i = 0; i < n; i++)
		user += !b[i].once;
	assert_int_equal(user, 64);
	free(b);
}

/* A session holds 64 breakpoints (as many as --break gives and the
 * replay holds): the screen lists every one, and a restart (r, or going
 * back with no checkpoint before the point) carries every one over, each
 * enabled or not as it was; going to a merge, ahead or back, works with
 * all 64 set. The screen held 32 and the restart kept 32; with 64 set a
 * `g` was refused ("at most 64 breakpoints"), and going back left a new
 * run that never started. */
static void
test_every_breakpoint_kept(void **state)
{
	(void)state;
	rt_run *run = calloc(2, sizeof(*run));
	assert_non_null(run);
	rt_opts(&run[0], "kept", "skywalking");
	run[0].o.start_paused = true;
	live l;
	live_open(&l, &run[0], false);
	ms_tui_ctl ctl = l.ctl;
	ms_replay_ctl_set_reopen(l.rc, reopen_paused, &run[1]);
	ms_errbuf eb = { "" };
	for (int i = 1; i <= 64; i++) {
		char spec[32];
		snprintf(spec, sizeof(spec), "merge=%d", 1000 + i);
		int id = 0;
		assert_int_equal(ctl.ops->break_add(ctl.self, spec, &id, &eb),
		                 0);
		if (i % 5 == 0)
			assert_int_equal(
			        ctl.ops->break_enable(ctl.self, id, false, &eb),
			        0);
	}
	ms_tui_view *v = l.v;
	assert_int_equal(ctl.ops->snapshot(ctl.self, v, &eb), 0);
	assert_64_kept(l.r, v);
	/* r: the day again, paused at its start. */
	assert_int_equal(ctl.ops->restart(ctl.self, NULL, NULL, 0, &eb), 0);
	l.r = ms_replay_ctl_replay(l.rc);
	char rerun1[PATH_MAX];
	snprintf(rerun1, sizeof(rerun1), "%s", ms_replay_db_path(l.r));
	assert_int_equal(ctl.ops->snapshot(ctl.self, v, &eb), 0);
	assert_64_kept(l.r, v);
	/* Back to merge #3 (no checkpoint before it: a restart), then
	 * ahead to #5. */
	ms_replay_status *st = rt_status_new();
	ms_tui_target t = { .kind = MS_TARGET_MERGE, .seq = 3 };
	char db[512] = "unset";
	if (ctl.ops->restart(ctl.self, &t, db, sizeof(db), &eb))
		fail_msg("back to #3: %s", eb.msg);
	l.r = ms_replay_ctl_replay(l.rc);
	/* It says the new database it records to. */
	assert_string_equal(db, ms_replay_db_path(l.r));
	assert_true(rt_wait_stop(l.r, st));
	assert_int_equal(st->state, MS_REPLAY_BREAK);
	assert_string_equal(st->break_why, "go #3");
	assert_int_equal(ctl.ops->snapshot(ctl.self, v, &eb), 0);
	assert_64_kept(l.r, v);
	t.seq = 5;
	if (ctl.ops->run_to(ctl.self, &t, &eb))
		fail_msg("ahead to #5: %s", eb.msg);
	struct timespec tick = { 0, 10 * 1000000L };
	for (int i = 0; i < 12000; i++) {
		assert_true(rt_wait_stop(l.r, st));
		if (strcmp(st->break_why, "go #5") == 0)
			break;
		nanosleep(&tick, NULL);
	}
	assert_string_equal(st->break_why, "go #5");
	assert_int_equal(ctl.ops->snapshot(ctl.self, v, &eb), 0);
	assert_64_kept(l.r, v);
	/* The two runs the restarts replaced, first first, each with its
	 * database, both stopped before their end (the quit line named only
	 * the last run's database). */
	const char *rdb, *how;
	assert_int_equal(ms_replay_ctl_replaced(l.rc, 0, &rdb, &how), 2);
	assert_string_equal(rdb, run[0].db);
	assert_string_equal(how, "aborted");
	assert_int_equal(ms_replay_ctl_replaced(l.rc, 1, &rdb, &how), 2);
	assert_string_equal(rdb, rerun1);
	assert_string_equal(how, "aborted");
	assert_int_equal(ms_replay_ctl_replaced(l.rc, 2, &rdb, &how), 2);
	assert_null(rdb);
	free(st);
	live_close(&l);
	free(run);
}

/* A run that ended before `r` replaced it is named at quit as complete,
 * as its database records it (not as stopped before its end). */
static void
test_replaced_run_ended_complete(void **state)
{
	(void)state;
	rt_run *run = calloc(2, sizeof(*run));
	assert_non_null(run);
	rt_opts(&run[0], "ended", "skywalking");
	live l;
	live_open(&l, &run[0], true);
	ms_replay_ctl_set_reopen(l.rc, reopen_paused, &run[1]);
	ms_errbuf eb = { "" };
	const char *db, *how;
	assert_int_equal(ms_replay_ctl_replaced(l.rc, 0, &db, &how), 0);
	assert_null(db);
	if (l.ctl.ops->restart(l.ctl.self, NULL, NULL, 0, &eb))
		fail_msg("restart: %s", eb.msg);
	l.r = ms_replay_ctl_replay(l.rc);
	assert_int_equal(ms_replay_ctl_replaced(l.rc, 0, &db, &how), 1);
	assert_string_equal(db, run[0].db);
	assert_string_equal(how, "complete");
	live_close(&l);
	free(run);
}

/* A session over run[0]'s replay (called name), paused at its start, whose
 * restarts open their replays with fn(run + 1); the full disk installed,
 * not armed. */
static ms_tui_session *
restart_session(live *l, rt_run *run, const char *name, ms_replay_reopen_fn fn)
{
	rt_opts(&run[0], name, "skywalking");
	run[0].o.start_paused = true;
	assert_int_equal(full_vfs_install(), SQLITE_OK);
	live_open(l, &run[0], false);
	ms_replay_ctl_set_reopen(l->rc, fn, &run[1]);
	ms_replay_status *st = rt_status_new();
	assert_true(rt_wait_stop(l->r, st));
	free(st);
	ms_tui_session *s = calloc(1, sizeof(*s));
	assert_non_null(s);
	assert_int_equal(ms_session_init(s, &l->ctl), 0);
	assert_int_equal(ms_session_snapshot(s), 0);
	return s;
}

/* `r` on a disk with room for the write-ahead log and none to fold it into
 * the database file: the run it replaces ends as any run ends, its log
 * folded in or, as here, the screen saying (as an error, after the new
 * database) that its events are in the database and its -wal, to be kept
 * together; the adapter keeps that for the end of the session. Once there
 * is room the database file alone is whole again. Before, the replaced run
 * was closed without the fold's retry or a word: the screen said only
 * "restarted the day", and the events were left in the -wal unsaid. */
static void
test_restart_says_database_in_two_files(void **state)
{
	(void)state;
	rt_run *run = calloc(2, sizeof(*run));
	assert_non_null(run);
	live l;
	ms_tui_session *s = restart_session(&l, run, "fold", reopen_paused);
	/* No room for the replaced run's database file to grow (the new
	 * one, whose first commit writes its schema and run record in the
	 * file itself, is written in full). */
	full_vfs_cap_file(run[0].db, 4096);
	ms_session_key(s, 'r');
	full_vfs_disarm();
	ms_session_snapshot(s);
	const char *msg = s->view->ui.message;
	fprintf(stderr, "message: %s\n", msg);
	char wal[PATH_MAX + 8];
	snprintf(wal, sizeof(wal), "%s-wal", run[0].db);
	assert_true(s->view->ui.message_is_error);
	assert_non_null(strstr(msg, "restarted the day, recording to "));
	assert_non_null(strstr(msg, run[1].db));
	assert_non_null(strstr(msg, wal));
	assert_non_null(strstr(msg, "database or disk is full"));
	assert_non_null(strstr(msg, "keep, copy and move the two files"));
	const char *kept[MS_REPLAY_CTL_KEPT];
	assert_int_equal(ms_replay_ctl_kept(l.rc, kept, MS_REPLAY_CTL_KEPT), 1);
	assert_string_equal(kept[0], run[0].db);
	/* Room again: the replaced run's database file is whole alone. */
	ms_errbuf eb = { "" };
	assert_int_equal(ms_evdb_fold_wal(run[0].db, &eb), 0);
	struct stat sb;
	assert_true(stat(wal, &sb) != 0 || sb.st_size == 0);
	ms_session_release(s);
	free(s);
	l.r = ms_replay_ctl_replay(l.rc);
	live_close(&l);
	free(run);
}

/* The restart's reopen when the new run cannot be opened (its database
 * exists, as a reopen says it). */
static int
reopen_exists(void *arg, bool running, ms_replay **out, ms_errbuf *eb)
{
	(void)arg;
	(void)running;
	*out = NULL;
	return ms_fail(eb, MS_ERR_EXISTS,
	               "event database /x/run.rerun-1.sqlite: exists; "
	               "expected a new path");
}

/* `r` whose new run cannot open: the footer says, as an error, that it was
 * the restart that failed, why, and that the run on screen goes on, which
 * it does (the same replay, still paused). The footer said only why, as
 * if something else had failed. */
static void
test_restart_open_fails_says_restart(void **state)
{
	(void)state;
	rt_run *run = calloc(2, sizeof(*run));
	assert_non_null(run);
	live l;
	ms_tui_session *s = restart_session(&l, run, "noopen", reopen_exists);
	ms_replay *before = ms_replay_ctl_replay(l.rc);
	ms_session_key(s, 'r');
	ms_session_snapshot(s);
	const char *msg = s->view->ui.message;
	assert_true(s->view->ui.message_is_error);
	assert_non_null(strstr(msg, "restart: the new run did not open ("
	                            "event database /x/run.rerun-1.sqlite: "
	                            "exists; expected a new path); this run "
	                            "goes on"));
	assert_ptr_equal(ms_replay_ctl_replay(l.rc), before);
	const char *rdb, *how;
	assert_int_equal(ms_replay_ctl_replaced(l.rc, 0, &rdb, &how), 0);
	ms_replay_status *st = rt_status_new();
	ms_replay_get_status(before, st);
	assert_int_equal(st->state, MS_REPLAY_PAUSED);
	free(st);
	ms_session_release(s);
	free(s);
	live_close(&l);
	free(run);
}

/* The restart's reopen, after which the disk is full: the new replay opens,
 * then nothing more can be written (the replaced run's fold, the new
 * run's start). */
static int
reopen_then_full(void *arg, bool running, ms_replay **out, ms_errbuf *eb)
{
	int rc = reopen_paused(arg, running, out, eb);
	if (rc == 0)
		full_vfs_arm(0);
	return rc;
}

/* `r` when the disk fills between opening the new run and starting it: the
 * footer says both why the new run did not start and that the replaced
 * run's database is in two files; the new run never runs, and space says
 * so (it said "running" while nothing ran) and that r restarts again,
 * which, with room again, works. */
static void
test_restart_not_started_says_why(void **state)
{
	(void)state;
	rt_run *run = calloc(3, sizeof(*run));
	assert_non_null(run);
	live l;
	ms_tui_session *s = restart_session(&l, run, "full", reopen_then_full);
	ms_replay_status *st = rt_status_new();
	ms_session_key(s, 'r');
	full_vfs_disarm();
	ms_session_snapshot(s);
	fprintf(stderr, "message: %s\n", s->view->ui.message);
	char wal[PATH_MAX + 8], want[PATH_MAX + 64];
	snprintf(wal, sizeof(wal), "%s-wal", run[0].db);
	snprintf(want, sizeof(want), "event database %s: ", run[1].db);
	assert_true(s->view->ui.message_is_error);
	assert_non_null(strstr(s->view->ui.message, want));
	assert_non_null(strstr(s->view->ui.message, wal));
	ms_session_key(s, ' ');
	ms_session_snapshot(s);
	fprintf(stderr, "message: %s\n", s->view->ui.message);
	assert_true(s->view->ui.message_is_error);
	assert_non_null(strstr(s->view->ui.message,
	                       "the restarted run did not start ("));
	assert_non_null(strstr(s->view->ui.message, want));
	assert_non_null(strstr(s->view->ui.message, "r restarts the day"));
	/* Room again: r opens a third run, which starts and runs. */
	ms_replay_ctl_set_reopen(l.rc, reopen_paused, &run[2]);
	ms_session_key(s, 'r');
	ms_session_snapshot(s);
	assert_false(s->view->ui.message_is_error);
	l.r = ms_replay_ctl_replay(l.rc);
	assert_string_equal(ms_replay_db_path(l.r), run[2].db);
	assert_true(rt_wait_stop(l.r, st));
	ms_session_snapshot(s);
	ms_session_key(s, ' ');
	ms_session_snapshot(s);
	assert_false(s->view->ui.message_is_error);
	struct timespec tick = { 0, 10 * 1000000L };
	for (int i = 0; i < 12000; i++) {
		ms_replay_get_status(l.r, st);
		if (st->state != MS_REPLAY_PAUSED)
			break;
		nanosleep(&tick, NULL);
	}
	assert_int_not_equal(st->state, MS_REPLAY_PAUSED);
	ms_session_release(s);
	free(s);
	free(st);
	live_close(&l);
	free(run);
}

/* A session stopped at the breakpoint merge=5 of a replay at full speed
 * (a checkpoint every ck_ns of the day, 0: none), whose restarts open
 * their replays with reopen_paused(run + 1), running to their targets. */
typedef struct back_fx {
	rt_run *run;
	live l;
	ms_tui_session *s;
} back_fx;

static void
back_open(back_fx *b, const char *name, int64_t ck_ns)
{
	b->run = calloc(2, sizeof(*b->run));
	assert_non_null(b->run);
	rt_opts(&b->run[0], name, "skywalking");
	b->run[0].o.speed = 0;
	b->run[0].o.checkpoint_every_ns = ck_ns;
	live_open_at(&b->l, &b->run[0], "merge=5", false);
	ms_replay_ctl_set_reopen(b->l.rc, reopen_paused, &b->run[1]);
	ms_replay_status *st = rt_status_new();
	assert_true(rt_wait_stop(b->l.r, st));
	assert_string_equal(st->break_why, "merge=5");
	free(st);
	b->s = calloc(1, sizeof(*b->s));
	assert_non_null(b->s);
	assert_int_equal(ms_session_init(b->s, &b->l.ctl), 0);
	assert_int_equal(ms_session_snapshot(b->s), 0);
}

static void
back_close(back_fx *b)
{
	ms_session_release(b->s);
	free(b->s);
	b->l.r = ms_replay_ctl_replay(b->l.rc);
	live_close(&b->l);
	free(b->run);
}

/* The keys of k ('\n': Enter) back to back, as the screen's loop takes a
 * burst of keys: each handled, then a snapshot for the next (the run on
 * its way meanwhile). None may say an error. */
static void
keys_burst(ms_tui_session *s, const char *k)
{
	for (; *k; k++) {
		ms_session_key(s, *k == '\n' ? MS_KEY_ENTER : *k);
		ms_session_snapshot(s);
		if (s->view->ui.message_is_error)
			fail_msg("%c: %s", *k, s->view->ui.message);
	}
}

/* Wait for the session's replay to stop, and view it. */
static void
back_wait_stop(back_fx *b)
{
	ms_replay_status *st = rt_status_new();
	b->l.r = ms_replay_ctl_replay(b->l.rc);
	assert_true(rt_wait_stop(b->l.r, st));
	free(st);
	assert_int_equal(ms_session_snapshot(b->s), 0);
	fprintf(stderr, "stopped at %s: %s\n", b->s->view->break_why,
	        b->s->view->ui.message);
}

/* `[ [ [` in one burst at merge #5's barrier goes back three merges, to
 * #2, whether going back restarts the day (no checkpoints) or seeks to a
 * checkpoint: each press counts back from where the one before goes.
 * The second press saw the run on its way to #4, near the day's start
 * or at a checkpoint, and went back from there (or said there was no
 * barrier before it): the burst ended at #4, or at #1. */
static void
test_barrier_back_burst(void **state)
{
	(void)state;
	const int64_t cks[] = { 0, 3600 * 1000000000LL };
	for (size_t i = 0; i < sizeof(cks) / sizeof(cks[0]); i++) {
		back_fx b;
		back_open(&b, "burst", cks[i]);
		keys_burst(b.s, "[[[");
		back_wait_stop(&b);
		const ms_tui_view *v = b.s->view;
		assert_int_equal(v->state, MS_VIEW_BREAK);
		assert_string_equal(v->break_why, "go #2");
		assert_true(v->sel.present);
		assert_int_equal(v->sel.seq, 2);
		assert_false(v->ui.message_is_error);
		back_close(&b);
	}
}

/* `{ { {` in one burst goes back three publications: the second press
 * counted from the run on its way back, near the day's start. */
static void
test_pub_back_burst(void **state)
{
	(void)state;
	back_fx b;
	back_open(&b, "pubburst", 0);
	uint64_t pubs = b.s->view->pub_done;
	assert_true(pubs > 3);
	keys_burst(b.s, "{{{");
	back_wait_stop(&b);
	/* Stopped at a publication point, not a barrier. */
	assert_int_equal(b.s->view->state, MS_VIEW_PAUSED);
	char want[32];
	snprintf(want, sizeof(want), "go pub %" PRIu64, pubs - 3);
	assert_string_equal(b.s->view->break_why, want);
	assert_int_equal(b.s->view->pub_done, pubs - 3);
	back_close(&b);
}

/* `g #8` right after `[` at merge #5 (the go back to #4 still on its
 * way) stops at #8: the new go replaces the one on its way. The replay
 * kept the first go's target, which stopped the run first, at #4, and
 * nothing was said. */
static void
test_goto_replaces_go_on_its_way(void **state)
{
	(void)state;
	back_fx b;
	back_open(&b, "gogo", 0);
	keys_burst(b.s, "[g#8\n");
	back_wait_stop(&b);
	assert_int_equal(b.s->view->state, MS_VIEW_BREAK);
	assert_string_equal(b.s->view->break_why, "go #8");
	assert_int_equal(b.s->view->sel.seq, 8);
	back_close(&b);
}

/* The restart's reopen for test_back_burst_one_rerun: counted, the new
 * replay's day held (ms__replay_test.hold_day) until the test lets it
 * begin, so that it cannot reach a target before the burst is over. */
typedef struct held_reopen {
	rt_run *run;
	int n;
} held_reopen;

static int
reopen_held(void *arg, bool running, ms_replay **out, ms_errbuf *eb)
{
	held_reopen *h = arg;
	h->n++;
	rt_opts(h->run, "held-rerun", "skywalking");
	h->run->o.start_paused = !running;
	h->run->t.hold_day = true;
	return ms__replay_open_test(out, &h->run->o, &h->run->t, eb);
}

/* `[ [ [` in one burst with no checkpoint re-runs the day once, to the
 * last press's target (#2), into one new database: each press after the
 * first is set on the re-run on its way, which has not passed it. Each
 * press restarted the day again, into rerun databases 1, 2 and 3. */
static void
test_back_burst_one_rerun(void **state)
{
	(void)state;
	back_fx b;
	back_open(&b, "burst1", 0);
	held_reopen h = { b.run + 1, 0 };
	ms_replay_ctl_set_reopen(b.l.rc, reopen_held, &h);
	keys_burst(b.s, "[[[");
	assert_int_equal(h.n, 1);
	ms__replay_release_day(ms_replay_ctl_replay(b.l.rc));
	back_wait_stop(&b);
	const ms_tui_view *v = b.s->view;
	assert_int_equal(v->state, MS_VIEW_BREAK);
	assert_string_equal(v->break_why, "go #2");
	assert_int_equal(v->sel.seq, 2);
	assert_non_null(strstr(v->ui.message, "back at merge #2, re-run from "
	                                      "the day's start, recording "
	                                      "to "));
	assert_int_equal(h.n, 1);
	back_close(&b);
}

/* `g #6` seen from merge #5's barrier, while the run has gone on to #7
 * (the screen's view not yet refreshed: the run went by #6 as the key
 * was handled) goes back to #6 and stops there, with a checkpoint or
 * without. The target was set behind the run, which went on to the end
 * at full speed. */
static void
test_goto_passed_as_set(void **state)
{
	(void)state;
	const int64_t cks[] = { 0, 3600 * 1000000000LL };
	for (size_t i = 0; i < sizeof(cks) / sizeof(cks[0]); i++) {
		back_fx b;
		back_open(&b, "gopassed", cks[i]);
		ms_errbuf eb = { "" };
		ms_replay *r = b.l.r;
		assert_int_equal(ms_replay_break_add(r, "merge=7", NULL, &eb),
		                 0);
		assert_int_equal(ms_replay_command(r, MS_RCMD_RUN, &eb), 0);
		ms_replay_status *st = rt_status_new();
		assert_true(rt_wait_stop(r, st));
		assert_string_equal(st->break_why, "merge=7");
		free(st);
		assert_int_equal(b.s->view->sel.seq, 5); /* the screen's */
		for (const char *k = "g#6\n"; *k; k++)
			ms_session_key(b.s, *k == '\n' ? MS_KEY_ENTER : *k);
		assert_false(b.s->view->ui.message_is_error);
		assert_non_null(strstr(b.s->view->ui.message,
		                       "the run passed merge #6 as it was "
		                       "asked for"));
		back_wait_stop(&b);
		assert_int_equal(b.s->view->state, MS_VIEW_BREAK);
		assert_string_equal(b.s->view->break_why, "go #6");
		assert_int_equal(b.s->view->sel.seq, 6);
		back_close(&b);
	}
}

/* `r` right after `[` (the go back still on its way, at full speed):
 * the restarted run goes at the user's speed, 300x here, as the go would
 * have put it back where it stopped. It ran at max. */
static void
test_restart_during_go_keeps_speed(void **state)
{
	(void)state;
	back_fx b;
	back_open(&b, "gospeed", 0);
	ms_errbuf eb = { "" };
	assert_int_equal(b.l.ctl.ops->set_speed(b.l.ctl.self, 300, &eb), 0);
	assert_int_equal(ms_session_snapshot(b.s), 0);
	keys_burst(b.s, "[r");
	assert_true(b.s->view->speed == 300);
	ms_replay_status *st = rt_status_new();
	ms_replay_get_status(ms_replay_ctl_replay(b.l.rc), st);
	assert_true(st->speed == 300);
	free(st);
	back_close(&b);
}

/* The status line of view v drawn w columns wide, into row. */
static void
status_row(ms_tui_view *v, int w, char *row, size_t n)
{
	ms_canvas cv;
	ms_canvas_init(&cv);
	v->ui.ascii = true;
	assert_int_equal(ms_render_frame(&cv, v, w, 46), 0);
	ms_canvas_row(&cv, 0, row, n);
	ms_canvas_release(&cv);
}

/* A run that fails (here its event database cannot grow: a full disk) is
 * over, but the status line says FAILED and why, not DONE: it said DONE,
 * and the failure came out only on quitting. */
static void
test_failed_run_says_failed(void **state)
{
	(void)state;
	rt_run run;
	rt_opts(&run, "fails", "skywalking");
	run.o.start_paused = true;
	assert_int_equal(full_vfs_install(), SQLITE_OK);
	live l;
	live_open(&l, &run, false);
	ms_replay_status *st = rt_status_new();
	assert_true(rt_wait_stop(l.r, st));
	full_vfs_arm(0);
	ms_errbuf eb = { "" };
	assert_int_equal(l.ctl.ops->run(l.ctl.self, &eb), 0);
	while (rt_wait_stop(l.r, st) && st->state != MS_REPLAY_FAILED &&
	       st->state != MS_REPLAY_DONE)
		;
	full_vfs_disarm();
	assert_int_equal(st->state, MS_REPLAY_FAILED);
	live_snapshot(&l);
	char row[1024];
	status_row(l.v, 200, row, sizeof(row));
	fprintf(stderr, "status: %s\n", row);
	assert_non_null(strstr(row, "!! FAILED "));
	assert_null(strstr(row, "DONE"));
	assert_non_null(strstr(row, "cannot record events"));
	free(st);
	live_close(&l);
}

/* --paused: the status says the run is paused at the start, not at a
 * step (it read "PAUSED at step", as if one had been taken); the first
 * step then reads as one, and an `n` after it as the next merge. */
static void
test_paused_at_the_start(void **state)
{
	(void)state;
	rt_run run;
	rt_opts(&run, "paused", "skywalking");
	run.o.start_paused = true;
	live l;
	live_open(&l, &run, false);
	ms_replay *r = l.r;
	ms_replay_status *st = rt_status_new();
	assert_true(rt_wait_stop(r, st));
	ms_tui_ctl ctl = l.ctl;
	ms_tui_view *v = l.v;
	ms_errbuf eb = { "" };
	live_snapshot(&l);
	char row[1024];
	status_row(v, 132, row, sizeof(row));
	if (!strstr(row, "PAUSED   at the start t 00:00:00") ||
	    strstr(row, "step"))
		fail_msg("status: %s", row);
	assert_int_equal(v->pub_done, 0);
	/* One step: the first publication, a step taken. */
	assert_int_equal(ctl.ops->step(ctl.self, &eb), 0);
	/* (It reads as stopped until the step begins: a hung run fails
	 * after 120 s, not a timing assertion.) */
	struct timespec tick = { 0, 10 * 1000000L };
	for (int i = 0; i < 12000; i++) {
		assert_true(rt_wait_stop(r, st));
		if (st->pub_done > 0)
			break;
		nanosleep(&tick, NULL);
	}
	assert_true(st->pub_done > 0);
	assert_int_equal(ctl.ops->snapshot(ctl.self, v, &eb), 0);
	status_row(v, 132, row, sizeof(row));
	if (!strstr(row, "PAUSED   at step") || strstr(row, "the start"))
		fail_msg("status after a step: %s", row);
	/* n: at the next merge's barrier, named so (it read "BREAK at
	 * step", as a `.` reads). */
	assert_int_equal(ctl.ops->step_to_barrier(ctl.self, &eb), 0);
	for (int i = 0; i < 12000; i++) {
		assert_true(rt_wait_stop(r, st));
		if (st->state == MS_REPLAY_BREAK)
			break;
		nanosleep(&tick, NULL);
	}
	assert_int_equal(st->state, MS_REPLAY_BREAK);
	assert_int_equal(ctl.ops->snapshot(ctl.self, v, &eb), 0);
	status_row(v, 132, row, sizeof(row));
	if (!strstr(row, "BREAK    at next merge t ") || strstr(row, "step"))
		fail_msg("status after n: %s", row);
	live_close(&l);
	free(st);
}

/* `.` at a slow speed goes to the next point at once: each step reads
 * PAUSED at step with one more publication out. It waited for the gap to
 * the next publication at the run's speed, standing RUNNING meanwhile
 * (27 s at 1x on the default day; here, at 1e-9x, for ever: a hung step
 * fails after RT_STOP_TIMEOUT_S, not a timing assertion). */
static void
test_step_does_not_wait_for_speed(void **state)
{
	(void)state;
	rt_run run;
	rt_opts(&run, "slowstep", "disabled");
	run.o.start_paused = true;
	run.o.speed = 1e-9;
	live l;
	live_open(&l, &run, false);
	ms_replay_status *st = rt_status_new();
	assert_true(rt_wait_stop(l.r, st));
	ms_errbuf eb = { "" };
	for (uint64_t k = 1; k <= 3; k++) {
		assert_int_equal(l.ctl.ops->step(l.ctl.self, &eb), 0);
		/* (It reads as stopped until the step begins.) */
		struct timespec tick = { 0, 10 * 1000000L };
		for (int i = 0; i < 12000; i++) {
			assert_true(rt_wait_stop(l.r, st));
			if (st->pub_done >= k)
				break;
			nanosleep(&tick, NULL);
		}
		if (st->state != MS_REPLAY_PAUSED || st->pub_done != k)
			fail_msg("step %" PRIu64 ": state %d, %" PRIu64
			         " publications out",
			         k, (int)st->state, st->pub_done);
		char row[1024];
		live_snapshot(&l);
		status_row(l.v, 132, row, sizeof(row));
		if (!strstr(row, "PAUSED   at step"))
			fail_msg("status after step %" PRIu64 ": %s", k, row);
	}
	live_close(&l);
	free(st);
}

/* Poll (10 ms ticks, bounded) until the controller has begun a wait
 * before a publication after its n-th, or the run stopped; returns the
 * status then. */
static void
wait_pacing(ms_replay *r, uint64_t n, ms_replay_status *st)
{
	struct timespec tick = { 0, 10 * 1000000L };
	for (int i = 0; i < 12000; i++) {
		ms_replay_get_status(r, st);
		if (ms__replay_paces(r) > n || rt_stopped(st->state))
			return;
		nanosleep(&tick, NULL);
	}
	fail_msg("no wait before a publication began");
}

/* A pause freezes the replay's time: resumed, the run waits out the rest
 * of the gap to the next publication before it publishes. It published
 * at once (pause 1 s after a publication at 1x on the default day: the
 * next came at once, not 26 s later). At 1e-9x the gap is for ever, so
 * the run, resumed, must be waiting again with the same publications
 * out; the old code published the next one first. */
static void
test_pause_keeps_the_wait(void **state)
{
	(void)state;
	rt_run run;
	rt_opts(&run, "pausewait", "disabled");
	run.o.start_paused = true;
	run.o.speed = 1e-9;
	live l;
	live_open(&l, &run, false);
	ms_replay_status *st = rt_status_new();
	assert_true(rt_wait_stop(l.r, st));
	ms_errbuf eb = { "" };
	uint64_t n = ms__replay_paces(l.r);
	assert_int_equal(l.ctl.ops->run(l.ctl.self, &eb), 0);
	wait_pacing(l.r, n, st);
	assert_int_equal(st->pub_done, 1);
	assert_int_equal(l.ctl.ops->pause(l.ctl.self, &eb), 0);
	assert_true(rt_wait_stop(l.r, st));
	assert_int_equal(st->state, MS_REPLAY_PAUSED);
	assert_int_equal(st->pub_done, 1);
	n = ms__replay_paces(l.r);
	assert_int_equal(l.ctl.ops->run(l.ctl.self, &eb), 0);
	wait_pacing(l.r, n, st);
	if (st->state != MS_REPLAY_RUNNING || st->pub_done != 1)
		fail_msg("resumed: state %d, %" PRIu64 " publications out",
		         (int)st->state, st->pub_done);
	live_close(&l);
	free(st);
}

/* A go to a time before the next publication, asked while the run,
 * resumed from a pause, waits out the rest of the gap to it, is ahead of
 * the run: it is set, and the run stops at that publication's point with
 * it not yet out. It was refused as passed (the point had been reached
 * once, at the pause), which sends the screen's `g` back to a checkpoint
 * to re-run the day up to a time the run had not yet reached. */
static void
test_go_while_wait_goes_on(void **state)
{
	(void)state;
	rt_run run;
	rt_opts(&run, "gowait", "disabled");
	run.o.start_paused = true;
	run.o.speed = 1e-9;
	live l;
	live_open(&l, &run, false);
	ms_replay_status *st = rt_status_new();
	assert_true(rt_wait_stop(l.r, st));
	ms_errbuf eb = { "" };
	uint64_t n = ms__replay_paces(l.r);
	assert_int_equal(l.ctl.ops->run(l.ctl.self, &eb), 0);
	wait_pacing(l.r, n, st);
	assert_int_equal(l.ctl.ops->pause(l.ctl.self, &eb), 0);
	assert_true(rt_wait_stop(l.r, st));
	n = ms__replay_paces(l.r);
	assert_int_equal(l.ctl.ops->run(l.ctl.self, &eb), 0);
	wait_pacing(l.r, n, st);
	assert_int_equal(st->state, MS_REPLAY_RUNNING);
	assert_int_equal(st->pub_done, 1);
	/* The run's clock is at the first publication: 1 ns after it. */
	int rc = ms_replay_run_to_time(l.r, st->now + 1, &eb);
	if (rc != 0)
		fail_msg("go 1 ns ahead of the run: %d (%s)", rc, eb.msg);
	ms_replay_set_speed(l.r, 0);
	assert_true(rt_wait_stop(l.r, st));
	assert_int_equal(st->state, MS_REPLAY_PAUSED);
	assert_int_equal(st->pub_done, 1);
	live_close(&l);
	free(st);
}

/* The status line's time ("t HH:MM:SS") in row, into t; false if none. */
static bool
row_time(const char *row, char *t, size_t n)
{
	const char *p = strstr(row, " t ");
	if (!p || n < 9)
		return false;
	snprintf(t, n, "%.8s", p + 3);
	return strlen(t) == 8;
}

/* At a set speed the time on screen goes on between publications, as
 * the replay's wait for the next one does: it stood still at the last
 * publication's for the whole gap (27 s at 1x on the default day), then
 * jumped. At 10x on the smoke day (publications 125 s apart, a 12.5 s
 * wait), the status line's t and the timeline's "now" leave the first
 * publication's time while no second one is out; a pause keeps the time
 * the wait had reached (the rest of the wait is kept too), not the
 * publication's. Polled in 10 ms ticks, bounded far inside the gap. */
static void
test_time_goes_on_between_publications(void **state)
{
	(void)state;
	rt_run run;
	rt_opts(&run, "clockon", "disabled");
	run.o.start_paused = true;
	run.o.speed = 10;
	live l;
	live_open(&l, &run, false);
	ms_replay_status *st = rt_status_new();
	assert_true(rt_wait_stop(l.r, st));
	ms_errbuf eb = { "" };
	uint64_t n = ms__replay_paces(l.r);
	assert_int_equal(l.ctl.ops->run(l.ctl.self, &eb), 0);
	wait_pacing(l.r, n, st);
	assert_int_equal(st->pub_done, 1);
	int64_t pub = st->now;
	char at_pub[32], row[1024], t[16] = "", seen[16] = "";
	ms_fmt_clock(at_pub, sizeof(at_pub), pub, st->day_start);
	struct timespec tick = { 0, 10 * 1000000L };
	for (int i = 0; i < 500 && !seen[0]; i++) {
		live_snapshot(&l);
		if (l.v->pub_done != 1 || l.v->now != pub)
			fail_msg("publication %" PRIu64 " came before the "
			         "time on screen moved from %s",
			         l.v->pub_done, at_pub);
		status_row(l.v, 200, row, sizeof(row));
		assert_true(row_time(row, t, sizeof(t)));
		if (strcmp(t, at_pub) != 0)
			snprintf(seen, sizeof(seen), "%s", t);
		else
			nanosleep(&tick, NULL);
	}
	if (!seen[0])
		fail_msg("t stood at %s for 5 s of a 12.5 s wait: %s", at_pub,
		         row);
	char now_label[32];
	snprintf(now_label, sizeof(now_label), "now %s", seen);
	ms_canvas cv;
	ms_canvas_init(&cv);
	assert_int_equal(ms_render_frame(&cv, l.v, 200, 46), 0);
	if (!frame_has(&cv, now_label))
		fail_msg("the timeline does not say \"%s\"", now_label);
	ms_canvas_release(&cv);
	/* Paused: where the wait had got, not back at the publication. */
	assert_int_equal(l.ctl.ops->pause(l.ctl.self, &eb), 0);
	assert_true(rt_wait_stop(l.r, st));
	assert_int_equal(st->pub_done, 1);
	live_snapshot(&l);
	status_row(l.v, 200, row, sizeof(row));
	assert_true(row_time(row, t, sizeof(t)));
	if (strcmp(t, seen) < 0)
		fail_msg("paused at %s after %s on screen: %s", t, seen, row);
	assert_int_equal(l.v->now, pub);
	live_close(&l);
	free(st);
}

/* The controller's freeze runs on a thread of its own: freeze returns
 * at once, and until freeze_done has given the result, what would move
 * the run (run, step, a go, a restart, which would reopen the shard
 * under the copy) is refused, saying why; a second freeze too. The
 * result is given once: the frozen directory, whole (frozen.txt in it)
 * with nothing half-built beside it; then the run goes on. */
static void
test_freeze_off_the_screen_thread(void **state)
{
	(void)state;
	rt_run run;
	rt_opts(&run, "fzthread", "skywalking");
	live l;
	live_open_at(&l, &run, "sampling", false);
	ms_replay_status *st = rt_status_new();
	assert_true(rt_wait_stop(l.r, st));
	assert_int_equal(st->state, MS_REPLAY_BREAK);
	const ms_tui_ctl_ops *ops = l.ctl.ops;
	ms_errbuf eb = { "" };
	char dir[PATH_MAX] = "";
	assert_int_equal(ops->freeze_done(l.ctl.self, false, dir, sizeof(dir),
	                                  &eb),
	                 MS_ERR_STATE);
	assert_int_equal(ops->freeze(l.ctl.self, &eb), 0);
	eb.msg[0] = '\0';
	assert_int_equal(ops->run(l.ctl.self, &eb), MS_ERR_STATE);
	assert_non_null(strstr(eb.msg, "freezing merge #"));
	assert_int_equal(ops->step(l.ctl.self, &eb), MS_ERR_STATE);
	ms_tui_target t = { .kind = MS_TARGET_MERGE, .seq = 1 };
	assert_int_equal(ops->run_to(l.ctl.self, &t, &eb), MS_ERR_STATE);
	assert_int_equal(ops->restart(l.ctl.self, &t, NULL, 0, &eb),
	                 MS_ERR_STATE);
	assert_int_equal(ops->freeze(l.ctl.self, &eb), MS_ERR_STATE);
	live_snapshot(&l); /* the screen reads the run meanwhile */
	assert_int_equal(l.v->state, MS_VIEW_BREAK);
	int rc = ops->freeze_done(l.ctl.self, true, dir, sizeof(dir), &eb);
	if (rc)
		fail_msg("freeze: %d (%s)", rc, eb.msg);
	char path[PATH_MAX + 32];
	snprintf(path, sizeof(path), "%s/frozen.txt", dir);
	assert_int_equal(access(path, F_OK), 0);
	snprintf(path, sizeof(path), "%s.tmp-%ld", dir, (long)getpid());
	assert_int_not_equal(access(path, F_OK), 0);
	assert_int_equal(ops->freeze_done(l.ctl.self, false, dir, sizeof(dir),
	                                  &eb),
	                 MS_ERR_STATE);
	assert_int_equal(ops->run(l.ctl.self, &eb), 0);
	assert_int_equal(ms_replay_wait(l.r, -1), 0);
	live_close(&l);
	assert_int_equal(ms_fs_rm_tree(dir, NULL), 0);
	free(st);
}

/* What a link's plugin logged, in the link's details (Enter in the
 * plugins panel): its lines kept and suppressed and its last lines, at
 * 132x44 and 80x24. A chain of a plugin that logs 300 lines in each
 * Decide call and the same plugin logging one: the first link kept 100
 * and suppressed the rest, the second (tp_log#2) kept all. The screen
 * had no plugin log. */
static void
test_link_log_in_details(void **state)
{
	(void)state;
	rt_run run;
	rt_opts(&run, "plog", "tp_log:{\"log\":\"300\"},tp_log");
	run.o.plugin_dir = MS_TEST_PLUGIN_DIR;
	run.o.speed = 0;
	live l;
	live_open(&l, &run, true);
	ms_tui_view *v = l.v;
	live_snapshot(&l);
	assert_int_equal(v->nplugins, 2);
	const ms_tui_plugin *a = &v->plugins[0], *b = &v->plugins[1];
	assert_true(a->calls >= 1);
	assert_int_equal(a->log_kept, 100);
	/* open() and 300 lines a call */
	assert_int_equal(a->log_kept + a->log_suppressed, 1 + 300 * a->calls);
	assert_int_equal(a->nlog, MS_VIEW_LINK_LOG);
	assert_string_equal(b->name, "tp_log#2");
	assert_int_equal(b->log_kept, 1 + b->calls);
	assert_int_equal(b->log_suppressed, 0);
	assert_string_equal(b->log[0].msg, "opened ?[31mred");
	assert_string_equal(b->log[0].level, "info");
	char want[128];
	snprintf(want, sizeof(want),
	         "log: %" PRIu64 " lines kept, 0 suppressed", b->log_kept);
	static const int sizes[2][2] = { { 132, 44 }, { 80, 24 } };
	for (int s = 0; s < 2; s++) {
		v->ui.ascii = true;
		v->ui.focus = MS_FOCUS_PLUGINS;
		v->ui.plugin_sel = 1;
		v->ui.overlay = MS_OVERLAY_DETAIL;
		v->ui.detail_scroll = 0;
		ms_canvas cv;
		ms_canvas_init(&cv);
		int w = sizes[s][0], h = sizes[s][1];
		assert_int_equal(ms_render_frame(&cv, v, w, h), 0);
		if (!frame_has(&cv, "Link 2: tp_log#2"))
			fail_msg("%dx%d: no title", w, h);
		/* the log is below the buckets: scroll to it */
		v->ui.detail_scroll = 1000;
		assert_int_equal(ms_render_frame(&cv, v, w, h), 0);
		if (!frame_has(&cv, want) ||
		    !frame_has(&cv, "info   opened ?[31mred") ||
		    !frame_has(&cv, "error  call 0 line 0"))
			fail_msg("%dx%d: no log lines", w, h);
		v->ui.plugin_sel = 0;
		v->ui.detail_scroll = 1000;
		assert_int_equal(ms_render_frame(&cv, v, w, h), 0);
		snprintf(want, sizeof(want),
		         "log: 100 lines kept, %" PRIu64
		         " suppressed; the last shown",
		         a->log_suppressed);
		if (!frame_has(&cv, want))
			fail_msg("%dx%d: no \"%s\"", w, h, want);
		snprintf(want, sizeof(want),
		         "log: %" PRIu64 " lines kept, 0 suppressed",
		         b->log_kept);
		ms_canvas_release(&cv);
	}
	live_close(&l);
}

/* A merge's details hold the whole of its event: every link of an
 * eight-link chain (the most an event records), and a summary (what the
 * filter's text and the search match) naming every input kept, so a
 * part is found in any merge it went into. The screen kept four links
 * and a summary of 192 characters: about seven inputs. */
static void
test_event_details_whole(void **state)
{
	(void)state;
	rt_run run;
	rt_opts(&run, "whole",
	        "skywalking,detdrop:5,detdrop:10,detdrop:15,detdrop:20,"
	        "detdrop:25,detdrop:30,detdrop:35");
	run.o.speed = 0;
	live l;
	live_open(&l, &run, true);
	live_snapshot(&l);
	ms_tui_view *v = l.v;
	assert_true(v->nevents > 0);
	/* The merge with the most inputs, and one that called the chain. */
	size_t wi = 0, si = v->nevents;
	for (size_t i = 0; i < v->nevents; i++) {
		const ms_tui_event *e = &v->events[i];
		if (e->ninputs_kept > v->events[wi].ninputs_kept)
			wi = i;
		if (si == v->nevents && e->nlinks && e->links[0].calls)
			si = i;
	}
	assert_true(si < v->nevents);
	const ms_tui_event *wide = &v->events[wi], *sampled = &v->events[si];
	assert_int_equal(sampled->nlinks, 8);
	assert_string_equal(sampled->links[0].name, "skywalking");
	/* Each link named apart, in the details and the plugins panel:
	 * "detdrop", then "detdrop#2" ... "detdrop#7" (all seven were
	 * "detdrop"). */
	assert_int_equal(v->nplugins, 8);
	assert_string_equal(v->plugins[0].name, "skywalking");
	for (size_t i = 1; i < 8; i++) {
		char want[16] = "detdrop";
		if (i > 1)
			snprintf(want, sizeof(want), "detdrop#%zu", i);
		assert_string_equal(sampled->links[i].name, want);
		assert_string_equal(v->plugins[i].name, want);
	}
	fprintf(stderr, "merge #%" PRIu64 ": %u inputs kept of %u\n", wide->seq,
	        wide->ninputs_kept, wide->ninputs);
	assert_true(wide->ninputs_kept > 8);
	for (uint32_t i = 0; i < wide->ninputs_kept; i++) {
		char id[24];
		snprintf(id, sizeof(id), "%016" PRIx64, wide->inputs[i].id);
		if (!strstr(wide->summary, id))
			fail_msg("input %u (%s) not in the summary of #%" PRIu64
			         ": %s",
			         i + 1, id, wide->seq, wide->summary);
		ms_tui_filter f;
		char err[MS_VIEW_TEXT];
		assert_true(ms_tui_filter_parse(id, &f, err, sizeof(err)));
		assert_true(ms_tui_filter_match(&f, wide, v->day_start));
	}

	/* The details on the screen list every link. */
	v->ui.ascii = true;
	v->ui.focus = MS_FOCUS_EVENTS;
	v->ui.event_sel = sampled->seq;
	v->ui.overlay = MS_OVERLAY_DETAIL;
	ms_canvas cv;
	ms_canvas_init(&cv);
	assert_int_equal(ms_render_frame(&cv, v, 200, 70), 0);
	for (size_t i = 0; i < sampled->nlinks; i++)
		if (!frame_has(&cv, sampled->links[i].name))
			fail_msg("link %zu (%s) not in the details", i + 1,
			         sampled->links[i].name);
	/* At 132 columns too, each with its figures whole. */
	assert_int_equal(ms_render_frame(&cv, v, 132, 46), 0);
	for (size_t i = 0; i < sampled->nlinks; i++) {
		char want[128];
		snprintf(want, sizeof(want),
		         "%-3zu %-23s %9" PRIu64 " %9" PRIu64 " %9" PRIu64,
		         i + 1, sampled->links[i].name, sampled->links[i].calls,
		         sampled->links[i].traces, sampled->links[i].kept);
		if (!frame_has(&cv, want))
			fail_msg("no '%s' in the details at 132x46", want);
	}
	ms_canvas_release(&cv);

	live_close(&l);
}

/* Held at the barrier of a merge that will sample, with nothing
 * staging: the Staging gauge marks the preferred limit that merge will
 * stage under (the last merge's, or 0 when none staged yet, said nothing
 * of the one about to run), and the Pending panel says its plan. */
static void
test_gauge_at_sampling_barrier(void **state)
{
	(void)state;
	rt_run run;
	rt_opts(&run, "plan", "skywalking");
	live l;
	live_open_at(&l, &run, "sampling", false);
	ms_replay_status *st = rt_status_new();
	assert_true(rt_wait_stop(l.r, st));
	assert_int_equal(st->state, MS_REPLAY_BREAK);
	assert_int_equal(st->pending.predict_class, MS_SAMPLING_EXECUTED);
	live_snapshot(&l);
	ms_tui_view *v = l.v;
	assert_int_equal(v->staging.live, 0);
	assert_true(v->sel.plan_preferred > 0);
	assert_int_equal(v->staging.preferred, v->sel.plan_preferred);
	assert_int_equal(v->sel.plan_batches, st->pending.plan_batches);
	ms_canvas cv;
	ms_canvas_init(&cv);
	assert_int_equal(ms_render_frame(&cv, v, 132, 46), 0);
	if (!frame_has(&cv, "will stage ~"))
		fail_msg("no staging plan in the Pending panel");
	ms_canvas_release(&cv);
	live_close(&l);
	free(st);
}

/* The finalize merge, held when its batches are done and its core output
 * written (at its index stage), until the test lets it go. */
typedef struct hold_at {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool held, go;
	uint64_t seq;
} hold_at;

static int
hold_finalize(void *arg, const ms_merge_req *req, enum ms_merge_stage st,
              uint64_t detail)
{
	(void)detail;
	hold_at *h = arg;
	if (st != MS_MERGE_STAGE_INDEX || !req->lane ||
	    strcmp(req->lane, "finalize"))
		return 0;
	pthread_mutex_lock(&h->mu);
	h->held = true;
	h->seq = req->seq;
	pthread_cond_broadcast(&h->cv);
	while (!h->go)
		pthread_cond_wait(&h->cv, &h->mu);
	pthread_mutex_unlock(&h->mu);
	return 0;
}

static int
open_hooked(const void *arg, ms_engine **out, const ms_engine_opts *o,
            ms_errbuf *eb)
{
	return ms__engine_open_hooked(out, o, arg, eb);
}

/* The Staging panel between a merge's last batch and its event: the
 * stager has given its bytes back (live 0), and the panel holds that
 * merge's figures, its peak and its preferred limit, the same as its
 * event records a moment later; not "peak 0 B preferred -" (nothing
 * recorded yet) or the figures of the merge recorded before it. */
static void
test_staging_holds_after_last_batch(void **state)
{
	(void)state;
	hold_at h = { .mu = PTHREAD_MUTEX_INITIALIZER,
		      .cv = PTHREAD_COND_INITIALIZER };
	ms_merge_hooks hooks = { .stage = hold_finalize, .arg = &h };
	rt_run run;
	rt_opts(&run, "held", "alwayskeep");
	run.t.engine_open = open_hooked;
	run.t.engine_open_arg = &hooks;
	run.o.wait_timeout_ns = 600 * 1000000000LL;
	run.o.speed = 0;
	run.o.profile = "cpus=2,mem=128m"; /* several batches */
	run.o.envelope = "emulated";
	live l;
	live_open(&l, &run, false);

	/* Bounded only so that a merge that never comes fails the test. */
	struct timespec end;
	clock_gettime(CLOCK_REALTIME, &end);
	end.tv_sec += 600;
	pthread_mutex_lock(&h.mu);
	while (!h.held &&
	       pthread_cond_timedwait(&h.cv, &h.mu, &end) != ETIMEDOUT)
		;
	bool held = h.held;
	pthread_mutex_unlock(&h.mu);
	assert_true(held);

	live_snapshot(&l);
	ms_tui_view *v = l.v;
	ms_tui_staging was = v->staging;
	fprintf(stderr,
	        "held merge #%" PRIu64 " after its batches: live %" PRIu64
	        " peak %" PRIu64 " preferred %" PRIu64 "\n",
	        h.seq, was.live, was.peak, was.preferred);
	assert_int_equal(was.live, 0);
	assert_true(was.peak > 0);
	assert_true(was.preferred > 0);
	ms_canvas cv;
	ms_canvas_init(&cv);
	v->ui.ascii = true;
	assert_int_equal(ms_render_frame(&cv, v, 200, 60), 0);
	assert_true(frame_has(&cv, "Staging"));
	assert_false(frame_has(&cv, "peak 0 B"));
	assert_false(frame_has(&cv, "preferred -"));
	/* Narrow, the panel puts the limits on a line of their own. */
	assert_int_equal(ms_render_frame(&cv, v, 100, 30), 0);
	assert_true(frame_has(&cv, "Staging"));
	assert_false(frame_has(&cv, "peak 0 B"));
	assert_false(frame_has(&cv, "pref -"));
	ms_canvas_release(&cv);

	pthread_mutex_lock(&h.mu);
	h.go = true;
	pthread_cond_broadcast(&h.cv);
	pthread_mutex_unlock(&h.mu);
	assert_int_equal(ms_replay_wait(l.r, -1), 0);

	/* The figures held are the ones the merge's event records. */
	static ms_ev_merge recent[MS_REPLAY_RECENT];
	size_t nr = ms_replay_recent(l.r, recent, NULL, MS_REPLAY_RECENT, NULL);
	bool found = false;
	for (size_t i = 0; i < nr; i++) {
		if (recent[i].seq != h.seq)
			continue;
		found = true;
		assert_int_equal(was.peak,
		                 recent[i].sampling.peak_staged_bytes);
		assert_int_equal(was.preferred,
		                 recent[i].sampling.preferred_limit_bytes);
		assert_true(recent[i].sampling.batches > 1);
	}
	assert_true(found);
	live_close(&l);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_figures_move_during_decide),
		cmocka_unit_test(test_every_recon_row),
		cmocka_unit_test(test_recon_after_seek_back),
		cmocka_unit_test(test_every_breakpoint_kept),
		cmocka_unit_test(test_replaced_run_ended_complete),
		cmocka_unit_test(test_restart_says_database_in_two_files),
		cmocka_unit_test(test_restart_not_started_says_why),
		cmocka_unit_test(test_restart_open_fails_says_restart),
		cmocka_unit_test(test_barrier_back_burst),
		cmocka_unit_test(test_pub_back_burst),
		cmocka_unit_test(test_restart_during_go_keeps_speed),
		cmocka_unit_test(test_back_burst_one_rerun),
		cmocka_unit_test(test_goto_passed_as_set),
		cmocka_unit_test(test_goto_replaces_go_on_its_way),
		cmocka_unit_test(test_event_details_whole),
		cmocka_unit_test(test_link_log_in_details),
		cmocka_unit_test(test_paused_at_the_start),
		cmocka_unit_test(test_step_does_not_wait_for_speed),
		cmocka_unit_test(test_pause_keeps_the_wait),
		cmocka_unit_test(test_go_while_wait_goes_on),
		cmocka_unit_test(test_time_goes_on_between_publications),
		cmocka_unit_test(test_freeze_off_the_screen_thread),
		cmocka_unit_test(test_failed_run_says_failed),
		cmocka_unit_test(test_gauge_at_sampling_barrier),
		cmocka_unit_test(test_staging_holds_after_last_batch),
	};
	return cmocka_run_group_tests(tests, rt_setup, rt_teardown);
}
