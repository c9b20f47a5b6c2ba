/*
 * replay_ctl.c - the TUI's controller backed by the real replay: every
 * ms_tui_ctl operation maps onto ms_replay (replay/include/ms_replay.h), and
 * `snapshot` copies the replay's state into the view model. It is the only
 * file between the screen (app.c, the panels, the view model) and a
 * running replay; the commands that start replays, export and report
 * (cmd_*.c, cli_setup.c, supervise.c) use the replay layer directly, and
 * the view's filter borrows the event log's names (tui/README.md, "What
 * tui uses from the other layers").
 */
#include "ms_replay_ctl.h"

#include "ms_clock.h"
#include "ms_replay.h"
#include "ms_replay_events.h"

#include "ms_thread.h"

#include <inttypes.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The view keeps all a merge event holds: every link, and room in the
 * summary for every input kept and the error. */
_Static_assert(MS_VIEW_EVENT_LINKS >= MS_EV_LINKS_MAX, "event links");
_Static_assert(MS_VIEW_EVENT_INPUTS >= MS_REPLAY_RECENT_INPUTS, "inputs");
_Static_assert(sizeof(((ms_tui_event *)0)->summary) >=
                       128 + MS_REPLAY_RECENT_INPUTS * 17 + MS_EV_TEXT_MAX,
               "summary");

struct ms_replay_ctl {
	ms_replay *replay; /* borrowed; owned after a restart (see reopen) */
	ms_replay_reopen_fn reopen;
	void *reopen_arg;
	double speed; /* the last speed set, carried over a restart */
	bool speed_set;
	ms_replay_part *parts;      /* scratch, MS_VIEW_MAX_PARTS */
	ms_ev_merge *recent;        /* scratch, MS_VIEW_MAX_EVENTS */
	ms_ev_input *recent_inputs; /* scratch, MS_VIEW_MAX_EVENTS *
	                             * MS_REPLAY_RECENT_INPUTS */
	/* The user's breakpoints and the replay's run-to targets (`g`),
	 * which it holds on top of them. */
	ms_breakpoint breaks[MS_VIEW_MAX_BREAKS + 8];
	ms_ev_gate gates[MS_VIEW_MAX_GATES];
	/* The reconciliation table, read from the event database once the
	 * run is DONE (retried a few times until its rows are there). */
	size_t nrecon;
	ms_ev_recon recon[MS_VIEW_MAX_RECON];
	unsigned recon_tries;
	int64_t recon_last; /* when it was last tried (monotonic ns) */
	uint64_t recon_seeks; /* the replay's seeks when they were read */
	ms_replay_status st;
	/* The go on its way (if any) went back: it re-runs to its point. */
	bool go_rerun;
	/* The databases of the runs restarts replaced that were left in
	 * two files (ms_replay_close_fold failed), the first few by path. */
	size_t nkept;
	char kept[MS_REPLAY_CTL_KEPT][PATH_MAX];
	/* Every run restarts replaced, first first: its database (heap) and
	 * how it ended; nreplaced counts those out of memory left out. */
	struct replaced {
		char *db;
		const char *status;
	} *replaced;
	size_t nreplaced, replaced_cap, replaced_lost;
	/* Why the replay a restart opened did not start ("" when it did):
	 * it never runs; the commands that would run it say so. */
	ms_errbuf unstarted;
	/* The freeze on its own thread (c_freeze): under way from its start
	 * until c_freeze_done joins it (freezing); frozen says the thread
	 * is done with freeze_rc, freeze_eb and freeze_dir (set before). */
	struct {
		pthread_t thread;
		bool freezing;
		atomic_bool frozen;
		uint64_t seq;
		ms_replay *replay;
		int rc;
		ms_errbuf eb;
		char dir[PATH_MAX];
	} fz;
};

/* How the run r ends when it is closed now, as its database records it
 * (ms_replay_close_fold ends a run that is under way as aborted). */
static const char *
end_status(ms_replay *r, ms_replay_status *st)
{
	ms_replay_get_status(r, st);
	if (st->state == MS_REPLAY_DONE)
		return "complete";
	if (st->state == MS_REPLAY_FAILED && strcmp(st->error, "aborted"))
		return "failed";
	return "aborted";
}

/* Note the replaced run whose database is db (status: end_status). */
static void
note_replaced(ms_replay_ctl *c, const char *db, const char *status)
{
	if (c->nreplaced == c->replaced_cap) {
		size_t cap = c->replaced_cap ? 2 * c->replaced_cap : 8;
		struct replaced *g = realloc(c->replaced, cap * sizeof(*g));
		if (!g) {
			c->replaced_lost++;
			return;
		}
		c->replaced = g;
		c->replaced_cap = cap;
	}
	char *copy = strdup(db);
	if (!copy) {
		c->replaced_lost++;
		return;
	}
	c->replaced[c->nreplaced].db = copy;
	c->replaced[c->nreplaced++].status = status;
}

/* MS_ERR_STATE while a freeze copies the shard (the run stays at its
 * barrier until it is done: a seek would reopen the shard under it), or
 * when the replay a restart opened did not start. */
static int
started(const ms_replay_ctl *c, ms_errbuf *eb)
{
	if (c->fz.freezing)
		return ms_fail(eb, MS_ERR_STATE,
		               "freezing merge #%" PRIu64 ": the run stays at "
		               "its barrier until the copy is done",
		               c->fz.seq);
	if (!c->unstarted.msg[0])
		return 0;
	return ms_fail(eb, MS_ERR_STATE,
	               "the restarted run did not start (%s); r restarts "
	               "the day again",
	               c->unstarted.msg);
}

static int
c_cmd(void *self, enum ms_replay_cmd cmd, ms_errbuf *eb)
{
	ms_replay_ctl *c = self;
	int rc = started(c, eb);
	return rc ? rc : ms_replay_command(c->replay, cmd, eb);
}

static int
c_run(void *self, ms_errbuf *eb)
{
	return c_cmd(self, MS_RCMD_RUN, eb);
}

static int
c_pause(void *self, ms_errbuf *eb)
{
	return c_cmd(self, MS_RCMD_PAUSE, eb);
}

static int
c_step(void *self, ms_errbuf *eb)
{
	return c_cmd(self, MS_RCMD_STEP, eb);
}

static int
c_step_barrier(void *self, ms_errbuf *eb)
{
	return c_cmd(self, MS_RCMD_STEP_BARRIER, eb);
}

static int
c_run_to_breakpoint(void *self, ms_errbuf *eb)
{
	return c_cmd(self, MS_RCMD_RUN, eb);
}

/* A go replaces the one on its way: the replay's run-to target of that
 * one (`once`) would stop the run first, at a point no longer asked for
 * (`[` then `g #8` stopped at `[`'s merge, and said nothing). One that
 * went back goes on as it did, by the breakpoints on the way (c->go_rerun;
 * else those before the point it went back to stopped it). */
static void
drop_go_targets(ms_replay_ctl *c)
{
	size_t cap = sizeof(c->breaks) / sizeof(c->breaks[0]);
	size_t nb = ms_replay_breaks(c->replay, c->breaks, cap), dropped = 0;
	for (size_t i = 0; i < nb && i < cap; i++)
		if (c->breaks[i].once)
			dropped += ms_replay_break_delete(c->replay,
			                                  c->breaks[i].id,
			                                  NULL) == 0;
	if (dropped && c->go_rerun)
		ms_replay_rerun_next(c->replay);
	else
		c->go_rerun = false;
}

static int
c_run_to(void *self, const ms_tui_target *t, ms_errbuf *eb)
{
	ms_replay_ctl *c = self;
	int rc = started(c, eb);
	if (rc)
		return rc;
	drop_go_targets(c);
	if (t->kind == MS_TARGET_MERGE)
		rc = ms_replay_run_to_merge(c->replay, t->seq, eb);
	else if (t->kind == MS_TARGET_PUB)
		rc = ms_replay_run_to_pub(c->replay, t->pub, eb);
	else
		rc = ms_replay_run_to_time(c->replay, t->t, eb);
	return rc == MS_REPLAY_PASSED ? MS_TUI_PASSED : rc;
}

static int
c_set_speed(void *self, double multiple, ms_errbuf *eb)
{
	(void)eb;
	ms_replay_ctl *c = self;
	c->speed = multiple;
	c->speed_set = true;
	return ms_replay_set_speed(c->replay, multiple);
}

/* Back to target t in the running replay, from its latest checkpoint
 * before t (ms_replay_seek_*), stopped there. */
static int
seek_back(ms_replay_ctl *c, const ms_tui_target *t, ms_errbuf *eb)
{
	if (t->kind == MS_TARGET_MERGE)
		return ms_replay_seek_merge(c->replay, t->seq, eb);
	if (t->kind == MS_TARGET_PUB)
		return ms_replay_seek_pub(c->replay, t->pub, eb);
	return ms_replay_seek_time(c->replay, t->t, eb);
}

/* The restart's new replay n, now the adapter's: the breakpoints c->breaks
 * (nb of them) and the speed carried over, the target t set (NULL: none),
 * then started. On failure n never runs: the commands that would run it
 * say why (c->unstarted). */
static int
restart_new(ms_replay_ctl *c, ms_replay *n, const ms_tui_target *t, size_t nb,
            double speed, ms_errbuf *eb)
{
	int rc;
	for (size_t i = 0; i < nb; i++) {
		const ms_breakpoint *b = &c->breaks[i];
		int id;
		if (b->once)
			continue; /* a go target of the old run */
		rc = ms_replay_break_add(n, b->spec, &id, eb);
		if (rc == 0 && !b->enabled)
			rc = ms_replay_break_enable(n, id, false, eb);
		if (rc)
			return rc;
	}
	ms_replay_set_speed(n, speed);
	/* The target goes in before the start, so a fast run cannot pass it
	 * (and the replay was opened not to stop on its own before). It is
	 * behind where the user was: the breakpoints on the way do not stop
	 * the run there, as from a checkpoint. */
	if (t)
		ms_replay_rerun_next(n);
	if (t && (rc = c_run_to(c, t, eb)))
		return rc;
	return ms_replay_start(n, eb);
}

/*
 * Back to a target: in the running replay from a checkpoint when one
 * precedes it (the run stops there and runs to the target at full speed;
 * same database, the events after the checkpoint removed). Otherwise, or
 * when that restore fails, and always for `r` (t NULL), a restart.
 *
 * Restart: a new replay of the same options (the reopen callback opens it,
 * paused, recording to a new database), the user's breakpoints and speed
 * carried over, then started, and run to the target if there is one. The
 * old replay is closed once the new one is open, as a run that ends is
 * (ms_replay_close_fold: it records how far it got, frees its scratch
 * shard and folds its database's log in); a database it left in two files
 * is said in eb (after the error, when the new replay then fails), and
 * kept for ms_replay_ctl_kept.
 */
static int
c_restart(void *self, const ms_tui_target *t, char *db, size_t dbn,
          ms_errbuf *eb)
{
	ms_replay_ctl *c = self;
	ms_errbuf se = { "" }, note = { "" };
	if (db && dbn)
		db[0] = '\0';
	if (c->fz.freezing)
		return started(c, eb);
	if (t && seek_back(c, t, &se) == 0) {
		int rc = c_run_to(c, t, eb);
		c->go_rerun = rc == 0;
		return rc;
	}
	if (!c->reopen)
		return ms_fail(eb, MS_ERR_STATE, "restart is not available");
	size_t cap = sizeof(c->breaks) / sizeof(c->breaks[0]), user = 0;
	size_t nb = ms_replay_breaks(c->replay, c->breaks, cap);
	for (size_t i = 0; i < nb && i < cap; i++)
		user += !c->breaks[i].once;
	if (nb > cap || user > MS_VIEW_MAX_BREAKS) /* all carried, or none */
		return ms_fail(eb, MS_ERR_RANGE,
		               "restart: %zu breakpoints, at most %d carry "
		               "over; delete some first",
		               user, MS_VIEW_MAX_BREAKS);
	ms_replay_status *st = &c->st;
	ms_replay_get_status(c->replay, st);
	double speed = c->speed_set ? c->speed : st->speed;
	ms_replay *n = NULL;
	ms_errbuf oe = { "" };
	int rc = c->reopen(c->reopen_arg, t != NULL, &n, &oe);
	if (rc) /* the old replay is still there, as it was */
		return ms_fail(eb, rc,
		               "restart: the new run did not open (%s); this "
		               "run goes on",
		               oe.msg[0] ? oe.msg : ms_strerror(rc));
	char old[PATH_MAX];
	ms_errbuf left = { "" };
	const char *how = end_status(c->replay, st);
	int folded = ms_replay_close_fold(c->replay, old, sizeof(old), &note,
	                                  &left);
	note_replaced(c, old, how);
	if (folded) {
		if (c->nkept < MS_REPLAY_CTL_KEPT)
			memcpy(c->kept[c->nkept], old, sizeof(old));
		c->nkept++;
	} else if (left.msg[0]) {
		note = left; /* the replaced run's shard, said in the footer */
	}
	c->replay = n;
	c->nrecon = c->recon_tries = 0;
	if (db && dbn)
		snprintf(db, dbn, "%s", ms_replay_db_path(n));
	c->unstarted.msg[0] = '\0';
	rc = restart_new(c, n, t, nb, speed, &c->unstarted);
	c->go_rerun = rc == 0 && t;
	if (rc == 0)
		c->unstarted.msg[0] = '\0';
	else if (!c->unstarted.msg[0])
		snprintf(c->unstarted.msg, sizeof(c->unstarted.msg), "%s",
		         ms_strerror(rc));
	if (eb)
		snprintf(eb->msg, sizeof(eb->msg), "%s%s%s",
		         rc ? c->unstarted.msg : "",
		         rc && note.msg[0] ? "; " : "", note.msg);
	return rc;
}

static int
c_break_add(void *self, const char *spec, int *id, ms_errbuf *eb)
{
	ms_replay_ctl *c = self;
	return ms_replay_break_add(c->replay, spec, id, eb);
}

static int
c_break_enable(void *self, int id, bool enabled, ms_errbuf *eb)
{
	ms_replay_ctl *c = self;
	return ms_replay_break_enable(c->replay, id, enabled, eb);
}

static int
c_break_delete(void *self, int id, ms_errbuf *eb)
{
	ms_replay_ctl *c = self;
	return ms_replay_break_delete(c->replay, id, eb);
}

static void *
freeze_main(void *arg)
{
	ms_replay_ctl *c = arg;
	c->fz.rc = ms_replay_freeze(c->fz.replay, NULL, c->fz.dir,
	                            sizeof(c->fz.dir), &c->fz.eb);
	atomic_store(&c->fz.frozen, true);
	return NULL;
}

/* The copy on a thread of its own: the screen goes on answering keys
 * (on day-4x the finalize's took 0.7 s on tmpfs, 1.2 s on a disk, and
 * the screen stood still for it). ms_replay_freeze takes the barrier
 * under the run's lock; the run stays there (started() refuses what
 * would move it) until c_freeze_done has joined the thread. */
static int
c_freeze(void *self, ms_errbuf *eb)
{
	ms_replay_ctl *c = self;
	if (c->fz.freezing)
		return started(c, eb);
	ms_replay_status *st = &c->st;
	ms_replay_get_status(c->replay, st);
	if (st->state != MS_REPLAY_BREAK || !st->has_pending)
		return ms_fail(eb, MS_ERR_STATE,
		               "freeze needs a dispatch barrier (the run is "
		               "%s): add a breakpoint or step to one",
		               ms_replay_state_name(st->state));
	c->fz.seq = st->pending.seq;
	c->fz.replay = c->replay;
	c->fz.rc = 0;
	c->fz.eb.msg[0] = c->fz.dir[0] = '\0';
	atomic_store(&c->fz.frozen, false);
	int e = ms_thread_start(&c->fz.thread, MS_THREAD_STACK, freeze_main,
	                        c);
	if (e)
		return ms_thread_fail(eb, MS_ERR_IO, e,
		                      "freeze: cannot start the thread that "
		                      "copies the shard");
	c->fz.freezing = true;
	return 0;
}

static int
c_freeze_done(void *self, bool wait, char *dir, size_t n, ms_errbuf *eb)
{
	ms_replay_ctl *c = self;
	if (!c->fz.freezing)
		return ms_fail(eb, MS_ERR_STATE, "no freeze under way");
	if (!wait && !atomic_load(&c->fz.frozen))
		return MS_TUI_PENDING;
	pthread_join(c->fz.thread, NULL);
	c->fz.freezing = false;
	if (c->fz.rc) {
		if (eb)
			*eb = c->fz.eb;
		return c->fz.rc;
	}
	snprintf(dir, n, "%s", c->fz.dir);
	return 0;
}

int
ms_replay_ctl_filter(const ms_tui_filter *tf, struct ms_ev_filter *ef,
                     ms_errbuf *eb)
{
	memset(ef, 0, sizeof(*ef));
	if (!tf)
		return 0;
	ef->lane = tf->lane[0] ? tf->lane : NULL;
	if (tf->klass[0]) {
		int k = ms_ev_class_parse(tf->klass);
		if (k < 0)
			return ms_fail(eb, MS_ERR_INVAL,
			               "filter: unknown class '%s'", tf->klass);
		ef->klass = k + 1;
	}
	if (tf->reason[0]) {
		int k = ms_ev_reason_parse(tf->reason);
		if (k < 0)
			return ms_fail(eb, MS_ERR_INVAL,
			               "filter: unknown reason '%s'",
			               tf->reason);
		ef->reason = k + 1;
	}
	if (tf->phase[0])
		ef->phase = strcmp(tf->phase, "primary") == 0
		                    ? MS_EV_PHASE_PRIMARY + 1
		                    : MS_EV_PHASE_COOLDOWN + 1;
	ef->has_seq_range = tf->has_seq_range;
	ef->seq_min = tf->seq_min;
	ef->seq_max = tf->seq_max;
	ef->text = tf->text[0] ? tf->text : NULL;
	return 0;
}

static int
c_export(void *self, enum ms_tui_format f, const ms_tui_filter *tf,
         const char *path, bool overwrite, uint64_t *written, ms_errbuf *eb)
{
	ms_replay_ctl *c = self;
	ms_ev_filter ef;
	int rc = ms_replay_ctl_filter(tf, &ef, eb);
	if (rc)
		return rc;
	enum ms_export_format fmt = f == MS_FORMAT_CSV      ? MS_EXPORT_CSV
	                            : f == MS_FORMAT_CHROME ? MS_EXPORT_CHROME
	                                                    : MS_EXPORT_JSONL;
	ms_evdb *db = NULL;
	rc = ms_evdb_open(&db, ms_replay_db_path(c->replay), eb);
	if (rc)
		return rc;
	rc = ms_export_file(db, fmt, &ef, path, overwrite, written, eb);
	ms_evdb_close(db);
	return rc;
}

static void
copy_str(char *dst, size_t n, const char *src)
{
	snprintf(dst, n, "%s", src ? src : "");
}

static enum ms_tui_state
view_state(enum ms_replay_state s)
{
	switch (s) {
	case MS_REPLAY_READY:
	case MS_REPLAY_PAUSED:
		return MS_VIEW_PAUSED;
	case MS_REPLAY_RUNNING:
		return MS_VIEW_RUNNING;
	case MS_REPLAY_BREAK:
		return MS_VIEW_BREAK;
	case MS_REPLAY_DONE:
	case MS_REPLAY_FAILED:
		return MS_VIEW_DONE;
	}
	return MS_VIEW_PAUSED;
}

static void
fill_event(ms_tui_event *e, const ms_ev_merge *m)
{
	memset(e, 0, sizeof(*e));
	e->seq = m->seq;
	e->t = m->logical_ns;
	copy_str(e->lane, sizeof(e->lane), m->lane);
	e->ninputs = (uint32_t)m->ninputs;
	e->rows_in = m->rows_in;
	e->rows_out = m->rows_out;
	e->bytes_in = m->input_bytes;
	e->bytes_out = m->output.compressed_bytes;
	copy_str(e->phase, sizeof(e->phase), ms_ev_phase_name(m->phase));
	copy_str(e->klass, sizeof(e->klass),
	         ms_ev_class_name(m->sampling.klass));
	copy_str(e->reason, sizeof(e->reason),
	         ms_ev_reason_name(m->sampling.reason));
	e->wall_ns = m->wall_ns;
	e->output_id = m->output.id;
	e->depth_out = m->output.depth;
	e->mature_count = m->mature_parts;
	e->hot_count = m->hot_parts;
	e->traces_evaluated = m->sampling.traces_evaluated;
	e->traces_dropped = m->sampling.traces_dropped;
	e->traces_deferred = m->sampling.traces_deferred;
	e->drop_set_full = m->sampling.drop_set_full;
	e->traces_oversized = m->sampling.traces_oversized;
	e->traces_hot = m->sampling.traces_unevaluated;
	e->batches = m->sampling.batches;
	e->peak_staged = m->sampling.peak_staged_bytes;
	const ms_merge_sampling *sm = &m->sampling;
	e->batches_planned = sm->batches_planned;
	e->estimate = sm->estimate_bytes;
	e->hard = sm->hard_limit_bytes;
	e->preferred = sm->preferred_limit_bytes;
	e->peak_concurrent = sm->peak_concurrent_bytes;
	e->arena_cold = sm->arena_cold_bytes;
	e->arena_reused = sm->arena_reused_bytes;
	e->nbatch = sm->nbatch_recs < MS_VIEW_EVENT_BATCHES
	                    ? sm->nbatch_recs
	                    : MS_VIEW_EVENT_BATCHES;
	for (size_t i = 0; i < e->nbatch; i++) {
		e->batch[i].charged = sm->batch[i].charged_bytes;
		e->batch[i].traces = sm->batch[i].traces;
		copy_str(e->batch[i].reason, sizeof(e->batch[i].reason),
		         ms_flush_reason_name(sm->batch[i].reason));
	}
	e->cpu_ns = m->cpu_ns;
	e->alloc_bytes = m->alloc_bytes;
	e->fingerprint = m->output.checksum;
	e->nlinks = m->nlinks < MS_VIEW_EVENT_LINKS ? m->nlinks
	                                            : MS_VIEW_EVENT_LINKS;
	const char *names[MS_VIEW_EVENT_LINKS];
	for (size_t i = 0; i < e->nlinks; i++)
		names[i] = m->links[i].name;
	for (size_t i = 0; i < e->nlinks; i++) {
		const ms_ev_link *l = &m->links[i];
		/* "detdrop#2": the second link of one plugin. */
		ms_ev_link_label(names, i, e->links[i].name,
		                 sizeof(e->links[i].name));
		e->links[i].calls = l->calls;
		e->links[i].traces = l->traces;
		e->links[i].kept = l->kept;
		e->links[i].total_ns = l->total_ns;
	}
	size_t kept = m->ninputs < MS_REPLAY_RECENT_INPUTS
	                      ? m->ninputs
	                      : MS_REPLAY_RECENT_INPUTS;
	if (kept > MS_VIEW_EVENT_INPUTS)
		kept = MS_VIEW_EVENT_INPUTS;
	e->ninputs_kept = m->inputs ? (uint32_t)kept : 0;
	for (uint32_t i = 0; i < e->ninputs_kept; i++) {
		const ms_ev_input *in = &m->inputs[i];
		e->inputs[i].id = in->id;
		e->inputs[i].bytes = in->bytes;
		e->inputs[i].rows = in->rows;
		e->inputs[i].depth = in->depth;
		e->inputs[i].mature = in->mature;
		e->inputs[i].max_ts = in->max_ts;
	}
	e->failed = m->err != 0;
	copy_str(e->error, sizeof(e->error), m->error);
	/* The summary names the inputs the event holds: m->inputs has the
	 * first `kept` of them and no more. */
	if (m->inputs && m->ninputs > kept) {
		ms_ev_merge cut = *m;
		cut.ninputs = kept;
		ms_ev_merge_summary(&cut, e->summary, sizeof(e->summary));
	} else {
		ms_ev_merge_summary(m, e->summary, sizeof(e->summary));
	}
}

static int
add_recon(void *ctx, const ms_ev_recon *r)
{
	ms_replay_ctl *c = ctx;
	if (c->nrecon < MS_VIEW_MAX_RECON)
		c->recon[c->nrecon++] = *r;
	return 0;
}

/* Read the reconciliation rows once the run is over: at the first DONE
 * snapshot, then at the first snapshot a second or more after each try,
 * RECON_TRIES in all, while the recorder's last batch may not be
 * committed yet (the view says so: settling). It went by the snapshots'
 * count (every 30th), which a paused screen takes once a second. */
#define RECON_TRIES 5

static void
load_recon(ms_replay_ctl *c)
{
	int64_t now = ms_mono_ns();
	if (c->nrecon || c->recon_tries >= RECON_TRIES ||
	    (c->recon_tries && now - c->recon_last < 1000000000LL))
		return;
	c->recon_tries++;
	c->recon_last = now;
	ms_evdb *db = NULL;
	ms_errbuf eb = { "" };
	if (ms_evdb_open(&db, ms_replay_db_path(c->replay), &eb) == 0) {
		if (ms_evdb_each_recon(db, add_recon, c, &eb))
			c->nrecon = 0;
		ms_evdb_close(db);
	}
}

/* The replay's state line: what runs, where the day is, why it stopped. */
static void
snap_status(ms_tui_view *v, const ms_replay_status *st)
{
	v->state = view_state(st->state);
	copy_str(v->fixture, sizeof(v->fixture), st->fixture);
	copy_str(v->variant, sizeof(v->variant), st->variant);
	v->plugin_process = strcmp(st->plugin_host, "process") == 0;
	copy_str(v->phase, sizeof(v->phase), ms_replay_phase_name(st->phase));
	copy_str(v->db_path, sizeof(v->db_path), st->db_path);
	copy_str(v->checkpoint_note, sizeof(v->checkpoint_note),
	         st->checkpoint_note);
	v->day_start = st->day_start;
	v->day_end = st->day_end;
	v->now = st->now;
	v->frontier = st->frontier;
	v->now_ahead = st->now_shown > st->now ? st->now_shown - st->now : 0;
	v->pub_done = st->pub_done;
	v->pub_total = st->pub_total;
	v->preparing = st->preparing;
	v->merges_done = st->merges_done;
	v->merges_sampled = st->merges_sampled;
	v->merges_bypassed = st->merges_bypassed;
	v->epoch = st->epoch;
	v->speed = st->speed;
	v->run_failed = st->state == MS_REPLAY_FAILED;
	if (v->run_failed)
		copy_str(v->break_why, sizeof(v->break_why), st->error);
	else if (st->state == MS_REPLAY_PAUSED && st->pub_done == 0 &&
	         st->merges_done == 0 && strcmp(st->break_why, "step") == 0)
		/* --paused: stopped before the first publication, which the
		 * replay does as a step; no step was taken. */
		copy_str(v->break_why, sizeof(v->break_why), "the start");
	else
		copy_str(v->break_why, sizeof(v->break_why), st->break_why);
}

/* The inventory, pending inputs marked, sorted for the panel. */
static void
snap_inventory(ms_replay_ctl *c, ms_tui_view *v, const ms_replay_status *st)
{
	size_t n = ms_replay_inventory(c->replay, c->parts, MS_VIEW_MAX_PARTS);
	v->parts_total = n;
	v->nparts = n < MS_VIEW_MAX_PARTS ? n : MS_VIEW_MAX_PARTS;
	for (size_t i = 0; i < v->nparts; i++) {
		const ms_part_meta *m = &c->parts[i].meta;
		ms_tui_part *p = &v->parts[i];
		ms_tui_part_init(p, m->id, m->compressed_bytes, m->rows,
		                 m->depth, m->min_ts, m->max_ts);
		p->mature = ms_ts_mature(m->max_ts, st->frontier);
		p->claimed_by = c->parts[i].claimed_by;
		if (st->has_pending)
			for (size_t k = 0; k < st->pending.ninputs; k++)
				if (st->pending.inputs[k].id == m->id)
					p->pending = true;
	}
	ms_tui_view_sort_parts(v);
}

/* The pending merge: its lane, prediction, totals and inputs. */
static void
snap_selection(ms_tui_view *v, const ms_replay_status *st)
{
	ms_tui_selection *s = &v->sel;
	memset(s, 0, sizeof(*s));
	if (!st->has_pending)
		return;
	const ms_dispatch *d = &st->pending;
	s->present = true;
	s->seq = d->seq;
	copy_str(s->lane, sizeof(s->lane), ms_lane_name(d->lane));
	copy_str(s->predicted, sizeof(s->predicted),
	         ms_sampling_class_name(d->predict_class));
	copy_str(s->reason, sizeof(s->reason),
	         d->predict_class == MS_SAMPLING_EXECUTED
	                 ? ""
	                 : ms_sampling_reason_name(d->predict_reason));
	s->frontier = d->frontier_ns;
	s->bytes = d->bytes;
	s->rows = d->rows;
	s->mature_count = (uint32_t)d->mature_parts;
	s->mature_rows = d->mature_rows;
	s->hot_count = (uint32_t)d->hot_parts;
	s->hot_rows = d->hot_rows;
	s->max_depth = d->max_depth;
	s->plan_estimate = d->plan_estimate;
	s->plan_batches = d->plan_batches;
	s->plan_preferred = d->plan_preferred;
	s->inputs_total = d->ninputs;
	s->ninputs = d->ninputs < MS_VIEW_MAX_INPUTS ? d->ninputs
	                                             : MS_VIEW_MAX_INPUTS;
	for (size_t i = 0; i < s->ninputs; i++) {
		const ms_dispatch_input *in = &d->inputs[i];
		ms_tui_part *p = &s->inputs[i];
		ms_tui_part_init(p, in->id, in->bytes, in->rows, in->depth,
		                 in->min_ts, in->max_ts);
		p->mature = in->mature;
		p->pending = true;
		p->claimed_by = d->seq;
	}
}

/* The staging budget and its sparkline. */
static void
snap_staging(ms_tui_view *v, const ms_replay_status *st)
{
	v->staging.live = st->staged_live;
	v->staging.peak = st->staged_peak;
	v->staging.preferred = st->staged_preferred;
	/* Held before a merge that will sample, with nothing staging: the
	 * limit that merge will stage under. */
	if (st->has_pending && st->pending.plan_preferred &&
	    st->staged_live == 0)
		v->staging.preferred = st->pending.plan_preferred;
	v->staging.hard = st->staged_hard;
	v->staging.nspark =
	        st->nspark < MS_VIEW_SPARK ? st->nspark : MS_VIEW_SPARK;
	memcpy(v->staging.spark, st->spark,
	       v->staging.nspark * sizeof(v->staging.spark[0]));
}

/* The view holds a row for every link a chain can have. */
_Static_assert(MS_VIEW_MAX_PLUGINS == MS_CHAIN_MAX_LINKS,
               "a plugins row per chain link");

/* Link i's log: its counts and last lines. */
static void
snap_link_log(ms_replay_ctl *c, size_t i, ms_tui_plugin *p)
{
	ms_ev_plugin_log lines[MS_VIEW_LINK_LOG];
	ms_ev_plugin_log_count n;
	p->nlog =
	        ms_replay_plugin_log(c->replay, i, lines, MS_VIEW_LINK_LOG, &n);
	p->log_kept = n.lines;
	p->log_suppressed = n.suppressed;
	for (size_t k = 0; k < p->nlog; k++) {
		p->log[k].wall_ns = lines[k].wall_ns;
		snprintf(p->log[k].level, sizeof(p->log[k].level), "%s",
		         ms_ev_log_level_name(lines[k].level));
		snprintf(p->log[k].msg, sizeof(p->log[k].msg), "%s",
		         lines[k].message);
	}
}

/* Each chain link's calls, latency histogram, fail-open counts and log. */
static void
snap_plugins(ms_replay_ctl *c, ms_tui_view *v, const ms_replay_status *st)
{
	v->nplugins = st->nlinks < MS_VIEW_MAX_PLUGINS ? st->nlinks
	                                               : MS_VIEW_MAX_PLUGINS;
	const char *names[MS_VIEW_MAX_PLUGINS];
	for (size_t i = 0; i < v->nplugins; i++)
		names[i] = st->links[i].name;
	for (size_t i = 0; i < v->nplugins; i++) {
		const ms_link_stats *l = &st->links[i];
		ms_tui_plugin *p = &v->plugins[i];
		memset(p, 0, sizeof(*p));
		ms_ev_link_label(names, i, p->name, sizeof(p->name));
		p->calls = l->calls;
		p->traces = l->traces;
		p->total_ns = l->total_ns;
		p->max_ns = l->max_ns;
		for (size_t b = 0; b < MS_VIEW_HIST && b < MS_LINK_HIST_BUCKETS;
		     b++) {
			p->hist[b] = l->hist[b];
			p->hist_le_ns[b] = ms_link_hist_bound_ns(b);
		}
		p->failopen_error = l->results[MS_LINK_ERROR] +
		                    l->results[MS_LINK_HOST_ERROR];
		p->failopen_timeout = l->results[MS_LINK_TIMEOUT];
		p->failopen_verdict = l->results[MS_LINK_WRONG_LENGTH] +
		                      l->results[MS_LINK_BAD_VALUE];
		p->circuit_open = st->circuit_open;
		snap_link_log(c, i, p);
	}
}

/* The merge in progress: present while a merge in flight stages or calls
 * Decide (a bypassed merge does neither). */
static void
snap_live(ms_tui_view *v, const ms_replay_status *st)
{
	ms_tui_live *l = &v->live;
	memset(l, 0, sizeof(*l));
	if (!st->inflight || (!st->inflight_calls && !st->staged_live))
		return;
	l->present = true;
	l->seq = st->inflight_seq;
	l->inflight = (uint32_t)st->inflight;
	l->wall_ns = st->inflight_wall_ns;
	l->calls = st->inflight_calls;
	l->traces = st->inflight_traces;
	l->decide_ns = st->inflight_decide_ns;
}

/* The most recent merge events. */
static void
snap_events(ms_replay_ctl *c, ms_tui_view *v)
{
	uint64_t total = 0;
	size_t ne = ms_replay_recent(c->replay, c->recent, c->recent_inputs,
	                             MS_VIEW_MAX_EVENTS, &total);
	v->events_total = total;
	v->nevents = ne;
	for (size_t i = 0; i < ne; i++)
		fill_event(&v->events[i], &c->recent[i]);
}

/* The gates and the reconciliation table, once the run is over. */
static void
snap_gates(ms_replay_ctl *c, ms_tui_view *v, const ms_replay_status *st)
{
	v->ngates = 0;
	v->gates_failed = 0;
	if (st->state == MS_REPLAY_DONE) {
		size_t ng =
		        ms_replay_gates(c->replay, c->gates, MS_VIEW_MAX_GATES,
		                        &v->gates_failed);
		v->ngates = ng < MS_VIEW_MAX_GATES ? ng : MS_VIEW_MAX_GATES;
		for (size_t i = 0; i < v->ngates; i++) {
			copy_str(v->gates[i].name, sizeof(v->gates[i].name),
			         c->gates[i].name);
			v->gates[i].pass = c->gates[i].pass;
			v->gates[i].warn = c->gates[i].warn;
			copy_str(v->gates[i].detail, sizeof(v->gates[i].detail),
			         c->gates[i].detail);
		}
	}

	/* Rows read at an end are the database's until the run goes back
	 * (they leave it, and its next end records them again). */
	if (st->state != MS_REPLAY_DONE || st->seeks != c->recon_seeks) {
		c->nrecon = c->recon_tries = 0;
		c->recon_seeks = st->seeks;
	}
	if (st->state == MS_REPLAY_DONE)
		load_recon(c);
	v->settling = st->state == MS_REPLAY_DONE && !c->nrecon &&
	              c->recon_tries < RECON_TRIES;
	v->nrecon = c->nrecon;
	for (size_t i = 0; i < c->nrecon; i++) {
		copy_str(v->recon[i].name, sizeof(v->recon[i].name),
		         c->recon[i].name);
		memcpy(v->recon[i].v, c->recon[i].v, sizeof(v->recon[i].v));
		v->recon[i].ok = c->recon[i].ok;
		copy_str(v->recon[i].note, sizeof(v->recon[i].note),
		         c->recon[i].note);
	}
}

/* The breakpoints, in the replay's order. */
static void
snap_breaks(ms_replay_ctl *c, ms_tui_view *v)
{
	size_t nb = ms_replay_breaks(c->replay, c->breaks, MS_VIEW_MAX_BREAKS);
	v->nbreaks = nb < MS_VIEW_MAX_BREAKS ? nb : MS_VIEW_MAX_BREAKS;
	for (size_t i = 0; i < v->nbreaks; i++) {
		v->breaks[i].id = c->breaks[i].id;
		copy_str(v->breaks[i].spec, sizeof(v->breaks[i].spec),
		         c->breaks[i].spec);
		v->breaks[i].enabled = c->breaks[i].enabled;
		v->breaks[i].hits = c->breaks[i].hits;
	}
}

static int
c_snapshot(void *self, ms_tui_view *v, ms_errbuf *eb)
{
	(void)eb;
	ms_replay_ctl *c = self;
	ms_replay_status *st = &c->st;
	ms_replay_get_status(c->replay, st);
	snap_status(v, st);
	snap_inventory(c, v, st);
	snap_selection(v, st);
	snap_staging(v, st);
	snap_plugins(c, v, st);
	snap_live(v, st);
	snap_events(c, v);
	snap_gates(c, v, st);
	snap_breaks(c, v);
	return 0;
}

static const ms_tui_ctl_ops replay_ops = {
	.run = c_run,
	.pause = c_pause,
	.step = c_step,
	.step_to_barrier = c_step_barrier,
	.run_to_breakpoint = c_run_to_breakpoint,
	.run_to = c_run_to,
	.set_speed = c_set_speed,
	.break_add = c_break_add,
	.break_enable = c_break_enable,
	.break_delete = c_break_delete,
	.freeze = c_freeze,
	.freeze_done = c_freeze_done,
	.export_events = c_export,
	.snapshot = c_snapshot,
	.restart = c_restart,
};

int
ms_replay_ctl_new(ms_replay_ctl **out, ms_replay *replay, ms_tui_ctl *ctl)
{
	*out = NULL;
	ms_replay_ctl *c = calloc(1, sizeof(*c));
	if (!c)
		return MS_ERR_NOMEM;
	c->replay = replay;
	c->parts = calloc(MS_VIEW_MAX_PARTS, sizeof(*c->parts));
	c->recent = calloc(MS_VIEW_MAX_EVENTS, sizeof(*c->recent));
	c->recent_inputs =
	        calloc((size_t)MS_VIEW_MAX_EVENTS * MS_REPLAY_RECENT_INPUTS,
	               sizeof(*c->recent_inputs));
	if (!c->parts || !c->recent || !c->recent_inputs) {
		ms_replay_ctl_free(c);
		return MS_ERR_NOMEM;
	}
	ctl->ops = &replay_ops;
	ctl->self = c;
	*out = c;
	return 0;
}

void
ms_replay_ctl_set_reopen(ms_replay_ctl *c, ms_replay_reopen_fn fn, void *arg)
{
	c->reopen = fn;
	c->reopen_arg = arg;
}

struct ms_replay *
ms_replay_ctl_replay(const ms_replay_ctl *c)
{
	return c->replay;
}

size_t
ms_replay_ctl_kept(const ms_replay_ctl *c, const char **dbs, size_t cap)
{
	for (size_t i = 0; i < c->nkept && i < MS_REPLAY_CTL_KEPT && i < cap;
	     i++)
		dbs[i] = c->kept[i];
	return c->nkept;
}

size_t
ms_replay_ctl_replaced(const ms_replay_ctl *c, size_t i, const char **db,
                       const char **status)
{
	*db = i < c->nreplaced ? c->replaced[i].db : NULL;
	*status = i < c->nreplaced ? c->replaced[i].status : NULL;
	return c->nreplaced + c->replaced_lost;
}

void
ms_replay_ctl_free(ms_replay_ctl *c)
{
	if (!c)
		return;
	/* A freeze still under way is joined before the adapter goes (the
	 * screen waits for its own before it returns: ms_tui_run). */
	if (c->fz.freezing)
		pthread_join(c->fz.thread, NULL);
	for (size_t i = 0; i < c->nreplaced; i++)
		free(c->replaced[i].db);
	free(c->replaced);
	free(c->parts);
	free(c->recent);
	free(c->recent_inputs);
	free(c);
}
