/*
 * checkpoint.c - checkpoints of a run and seeking back to one in process
 * (ms_replay_seek_*), instead of a new replay from the day's start.
 *
 * Design:
 *  1. A checkpoint is taken at a publication point of the primary phase
 *     (the publication drained, the engine merge-idle, the part checker
 *     drained) at least ck_every_ns of logical time after the previous
 *     one. It is the core checkpoint of the shard and the engine
 *     (ms_checkpoint.h: hard links of the active parts, a snapshot copy,
 *     the engine's decision state) in <work_dir>.ckpt/NNNNNN, plus, in
 *     memory, what the controller has counted so far (the CK_FIELDS
 *     below, the exactly-once table, how many drops were reported) and
 *     where the event log stood (ms_rec_mark).
 *     One is also taken at every publication point where the run stopped
 *     (a step, pause or run-to target there: taken as it goes on, the
 *     state unchanged) and at the first one after a stop at a barrier (a
 *     breakpoint hit), where the user is looking, so stepping back there
 *     re-runs little.
 *  2. At most MAX_CKS are kept: when full, every second one is removed
 *     and the interval doubles (unless a stop asked for it), so they stay
 *     spread over the day.
 *  3. A seek is asked for from the front end's thread (ms_replay_seek_*):
 *     the latest checkpoint before the target is chosen, the run is
 *     released from any stop and runs, stopping nowhere, to its next
 *     publication point; there the controller restores (ms__rck_restore):
 *     event log rolled back (ms_rec_rollback, a `seek` row), engine and
 *     shard closed, the shard restored (ms_checkpoint_restore), reopened,
 *     the slots after the checkpoint left to be staged again as the
 *     re-run reaches them (a publication consumes its staged files, and
 *     the reopened shard removes the unlisted ones), the engine reopened with the saved state, the
 *     counters put back. Then the run stops at the checkpoint (PAUSED,
 *     "seek") and the seeker is answered; its run_to goes on from there.
 *  4. Checkpoints after the one restored are removed: the run re-takes
 *     them as it passes their points again.
 *  5. A seek is accepted in the primary phase, in the cooldown and after
 *     the end (DONE: the controller thread is started again; one asked
 *     for while the gates run waits for DONE). With no checkpoint before
 *     the target, MS_ERR_NOTFOUND and nothing moves (the front end starts
 *     a new replay). In the cooldown (the day boundary, the grace, the
 *     finalize) the run is released from any stop and goes, stopping
 *     nowhere, to its next point there (controller.c, run_cooldown): a
 *     drain or a running merge finishes; the finalize's dispatch, held
 *     at its barrier or dispatched after the seek, is dropped
 *     (ms_engine_release(seq, false): its parts unclaimed, nothing
 *     recorded). There the phase becomes primary again and the
 *     checkpoint is restored as in 3; the rollback removes the rows of
 *     the cooldown too (phase rows, merges, part events: SCHEMA.md).
 *     A restore that fails before it touched anything (a checkpoint that
 *     does not read back) stops the run where it was (PAUSED, "seek
 *     failed") and answers its error; in the cooldown, where no point is
 *     left to stop at, the checkpoint is checked before the seek is
 *     accepted (ms_checkpoint_check; refused, the run stays where it
 *     is), and one that fails to read back after all fails the run, as
 *     does a restore that fails once it touched anything. A restore
 *     that committed but left files it should have removed is a seek
 *     all the same; the status's checkpoint note says what was left
 *     (note_leftovers).
 *  6. Not rolled back, as documented in replay/SCHEMA.md: the plugins'
 *     own counters (plugin_stat) and the chain's counters (what removed
 *     stretches added is kept apart, link_calls_superseded for the
 *     plugin_health gate and links_gone for the status, which shows the
 *     merges on record as the report does: a restore puts back what was
 *     apart at the checkpoint and adds all the chain counted since, so
 *     a stretch an earlier seek removed is not counted out twice; their
 *     slowest call, links_max, goes back with the checkpoint), resource
 *     figures of the phase (its wall, CPU, I/O include the stretch that
 *     was re-run) and the wall spent checking parts.
 *  7. Room: a checkpoint's links keep parts the shard has deleted. While
 *     the work directory's file system has less free than the day's
 *     bytes plus 64 MiB (ms_replay_opts.checkpoint_room_bytes), they are
 *     thinned and none is taken (ck_room_ok; the status says so).
 */
#include "replay_int.h"

#include "ms_checkpoint.h"
#include "ms_owner.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_CKS 32

/* What the controller counts and the gates read, restored as it was. */
#define CK_FIELDS(X)                                                       \
	X(pub_done) X(pub_in) X(merges_done) X(merges_failed)              \
	X(pub_lost_slot) X(pub_lost_id) X(last_failure)                    \
	X(spark) X(nspark)                                                 \
	X(staged_peak) X(staged_preferred) X(track_dup) X(track_err)       \
	X(parts_introduced) X(parts_in) X(parts_ok) X(parts_bad)           \
	X(parts_gone)                                                      \
	X(check_submitted) X(check_by_hash) X(part_err)                    \
	X(merges_reconciled) X(merges_unreconciled) X(merge_err)           \
	X(rows_dropped) X(traces_dropped) X(drop_err) X(hot_decides) X(hot_decided)       \
	X(executed_merges) X(events_sampled) X(events_bypassed)            \
	X(decide_dup_traces) X(bounds_mismatch) X(decide_traces)           \
	X(pub_merges) X(health) X(nhealth) X(health_kinds)                 \
	X(health_total) X(link_calls_events) X(link_circuit_events)        \
	X(plugin_calls_events) X(attempts_discarded) X(recon) X(links_max) \
	X(link_calls_superseded) X(links_gone)

struct ms__rck {
	char dir[PATH_MAX];
	uint64_t pubs;      /* publications done */
	int64_t logical_ns; /* the clock then */
	uint64_t merge_seq; /* the engine's last dispatch */
	ms_rec_mark mark;
	size_t ndropped;
	ms_link_stats links[MS_EV_LINKS_MAX]; /* the chain's counters */
	ms__track_copy track;                 /* the lifecycle table */
	struct {
#define CK_DECL(f) __typeof__(((ms_replay *)0)->f) f;
		CK_FIELDS(CK_DECL)
#undef CK_DECL
	} t;
};

static void
ck_free(ms__rck *c, bool remove_dir)
{
	if (!c)
		return;
	if (remove_dir)
		ms_checkpoint_remove(c->dir, NULL);
	ms__track_copy_release(&c->track);
	free(c);
}

/* Remove checkpoints [from, ncks). mu held (or no other thread). */
static void
drop_from(ms_replay *r, size_t from)
{
	for (size_t i = from; i < r->ncks; i++)
		ck_free(r->cks[i], true);
	if (from < r->ncks)
		r->ncks = from;
}

/* Design 2: keep every second one, double the interval (unless the
 * list filled up with checkpoints at stops). mu held. */
static void
thin_out(ms_replay *r, bool longer)
{
	size_t k = 0;
	for (size_t i = 0; i < r->ncks; i++) {
		if (i % 2)
			ck_free(r->cks[i], true);
		else
			r->cks[k++] = r->cks[i];
	}
	r->ncks = k;
	if (longer)
		r->ck_every_ns *= 2;
}

static void
ck_off(ms_replay *r, const char *why, const ms_errbuf *eb)
{
	pthread_mutex_lock(&r->mu); /* the status reads the note */
	snprintf(r->ck_note, sizeof(r->ck_note), "checkpoints off: %s%s%s",
	         why, eb ? ": " : "", eb ? eb->msg : "");
	r->ck_note_leftovers = false;
	pthread_mutex_unlock(&r->mu);
	r->ck_every_ns = -1;
}

/*
 * Design 7: checkpoints keep the parts they list after the shard deleted
 * them, so they must not take the room the day's merges need (nor shrink
 * the picker's fan-out, which the free space bounds). While the file
 * system has less than ck_room bytes free, every second checkpoint is
 * removed and none is taken. Returns whether there is room. Controller
 * thread.
 */
static bool
ck_room_ok(ms_replay *r)
{
	if (!r->ck_room)
		r->ck_room = ms__fixture_day_bytes(r->fx) + (64ull << 20);
	uint64_t free_b;
	if (ms_fs_free_bytes(r->ck_root[0] ? r->ck_root : r->work_dir,
	                     &free_b) != 0)
		return true; /* taking one will say what is wrong */
	if (free_b >= r->ck_room)
		return true;
	pthread_mutex_lock(&r->mu);
	if (r->ncks > 1)
		thin_out(r, false);
	else
		drop_from(r, 0);
	r->ck_note_leftovers = false;
	snprintf(r->ck_note, sizeof(r->ck_note),
	         "checkpoints thinned to %zu: %.0f MiB free on the work "
	         "directory's file system, the day's merges may need %.0f MiB",
	         r->ncks, (double)free_b / (1024.0 * 1024.0),
	         (double)r->ck_room / (1024.0 * 1024.0));
	pthread_mutex_unlock(&r->mu);
	return false;
}

/* Each link's counters now (the chain is between Decide calls). */
static void
link_stats(ms_replay *r, ms_link_stats *out)
{
	ms_chain *ch;
	size_t n;
	memset(out, 0, MS_EV_LINKS_MAX * sizeof(*out));
	if (!ms__replay_links(r, &ch, &n))
		return;
	for (size_t i = 0; i < n; i++)
		ms_chain_link_stats(ch, i, &out[i]);
}

/* The controller's side of a checkpoint, under mu. */
static int
save_tallies(ms_replay *r, ms__rck *c, ms_errbuf *eb)
{
	pthread_mutex_lock(&r->mu);
#define CK_SAVE(f) memcpy(&c->t.f, &r->f, sizeof(r->f));
	CK_FIELDS(CK_SAVE)
#undef CK_SAVE
	c->ndropped = r->dropped.n;
	int rc = ms__replay_track_save(r, &c->track);
	if (rc)
		ms_fail(eb, rc,
		        "out of memory for a copy of the part table (%zu "
		        "parts)",
		        r->track_n);
	pthread_mutex_unlock(&r->mu);
	return rc;
}

void
ms__rck_maybe_take(ms_replay *r, uint64_t pubs, int64_t now_ns, bool stopped)
{
	if (r->ck_every_ns <= 0 || r->phase != MS_RPHASE_PRIMARY || !pubs ||
	    (r->ncks && r->cks[r->ncks - 1]->pubs >= pubs))
		return;
	if (!stopped && r->ncks && now_ns - r->ck_last_ns < r->ck_every_ns)
		return;
	if (!ck_room_ok(r))
		return;
	ms_errbuf eb = { { 0 } };
	if (!r->ck_root[0]) {
		snprintf(r->ck_root, sizeof(r->ck_root), "%s.ckpt",
		         r->work_dir);
		ms_fs_rm_tree(r->ck_root, NULL);
		/* Owned like the scratch shard: what a killed run leaves,
		 * `mergescope clean` finds and removes. */
		if (ms_fs_mkdir_p(r->ck_root, 0755, &eb) ||
		    ms_owner_write(r->ck_root, "scratch", r->db_path, &eb))
			return ck_off(r, "cannot make their directory", &eb);
	}
	char why[80];
	if (!r->cks && !(r->cks = calloc(MAX_CKS, sizeof(*r->cks)))) {
		snprintf(why, sizeof(why),
		         "out of memory for their list (%zu bytes)",
		         MAX_CKS * sizeof(*r->cks));
		return ck_off(r, why, NULL);
	}
	if (r->ncks == MAX_CKS) {
		/* Under mu: a seek reads the list from another thread. */
		pthread_mutex_lock(&r->mu);
		thin_out(r, !stopped);
		pthread_mutex_unlock(&r->mu);
	}
	ms__checker_drain(r);
	ms__rck *c = calloc(1, sizeof(*c));
	if (!c) {
		snprintf(why, sizeof(why), "out of memory for one (%zu bytes)",
		         sizeof(*c));
		return ck_off(r, why, NULL);
	}
	snprintf(c->dir, sizeof(c->dir), "%s/%06llu", r->ck_root,
	         (unsigned long long)pubs);
	c->pubs = pubs;
	c->logical_ns = now_ns;
	ms_engine_stats es;
	ms_engine_get_stats(r->engine, &es);
	c->merge_seq = es.selections; /* dispatch numbers are 1, 2, ... */
	link_stats(r, c->links);
	int rc = save_tallies(r, c, &eb);
	if (rc == 0)
		rc = ms_rec_mark_get(r->rec, pubs, c->merge_seq, &c->mark, &eb);
	if (rc == 0)
		rc = ms_checkpoint_take(c->dir, r->shard, r->engine, NULL, 0,
		                        &eb);
	if (rc) {
		ck_free(c, false);
		/* Not idle here (a warm opening goes in as one): the next
		 * point will do. Anything else turns them off. */
		if (rc != MS_ERR_STATE)
			ck_off(r, "taking one", &eb);
		return;
	}
	pthread_mutex_lock(&r->mu);
	r->cks[r->ncks++] = c;
	pthread_mutex_unlock(&r->mu);
	r->ck_last_ns = now_ns;
	r->ck_taken++;
}

bool
ms__rck_seek_pending(ms_replay *r)
{
	pthread_mutex_lock(&r->mu);
	bool p = r->seek_req;
	pthread_mutex_unlock(&r->mu);
	return p;
}

void
ms__rck_release(ms_replay *r)
{
	drop_from(r, 0);
	free(r->cks);
	r->cks = NULL;
	if (r->ck_root[0])
		ms_fs_rm_tree(r->ck_root, NULL);
}

/* ---- restoring (controller thread) ----------------------------------- */

/* Put the controller's counts back as they were at c. mu held. */
static int
put_tallies(ms_replay *r, const ms__rck *c)
{
#define CK_LOAD(f) memcpy(&r->f, &c->t.f, sizeof(r->f));
	CK_FIELDS(CK_LOAD)
#undef CK_LOAD
	if (ms__replay_track_load(r, &c->track))
		return MS_ERR_NOMEM;
	ms__dropped_truncate(&r->dropped, c->ndropped);
	/* The newest recent merges are those re-run: forget them. */
	while (r->recent.n &&
	       ms__recent_seq(&r->recent, r->recent.n - 1) > c->merge_seq)
		ms__recent_drop_newest(&r->recent);
	r->nclaims = 0;
	r->has_pending = false;
	r->past_seq = c->merge_seq;
	r->past_ns = c->logical_ns;
	/* A time breakpoint stops once; one whose time is after the
	 * checkpoint may stop the re-run again. */
	for (size_t i = 0; i < r->nbps; i++) {
		ms_breakpoint b = r->bps[i];
		b.enabled = true;
		if (b.kind == MS_BP_TIME &&
		    !ms_bp_match_time(&b, c->logical_ns, r->info->day_start_ns))
			r->bps[i].hits = 0;
	}
	return 0;
}

/* Answer the seeker with a failure now (design 5). mu held. */
static void
answer_fail(ms_replay *r, int rc, const ms_errbuf *e)
{
	r->seek_req = false;
	r->seek_stop = false;
	r->seek_rc = rc;
	r->seek_eb = *e;
	pthread_cond_broadcast(&r->cv);
}

/* The restore of c left entries in the shard it could not remove
 * (ms_checkpoint.h, design 3): the run goes on from c, and the status
 * says so, since while they stay the re-run may merge into other part
 * IDs than the first pass. A restore that left none clears that. */
static void
note_leftovers(ms_replay *r, const ms__rck *c, const ms_checkpoint *ck)
{
	const char *name = strrchr(c->dir, '/');
	char m[sizeof(ck->leftover.msg) + PATH_MAX + 256] = "";
	if (ck->leftovers)
		snprintf(m, sizeof(m),
		         "back at checkpoint %s, but %zu entr%s of the shard "
		         "could not be removed (%s): the re-run may merge into "
		         "other part IDs than the first pass",
		         name ? name + 1 : c->dir, ck->leftovers,
		         ck->leftovers == 1 ? "y" : "ies", ck->leftover.msg);
	pthread_mutex_lock(&r->mu); /* the status reads the note */
	if (ck->leftovers || r->ck_note_leftovers)
		ms_msg_fit(r->ck_note, sizeof(r->ck_note), m);
	r->ck_note_leftovers = ck->leftovers != 0;
	pthread_mutex_unlock(&r->mu);
}

/* Close the engine and the shard, restore the shard to c, reopen it
 * (the slots after c to be staged again), reopen the engine resuming c's
 * state. */
static int
reopen_at(ms_replay *r, const ms__rck *c, ms_errbuf *e)
{
	pthread_mutex_lock(&r->mu);
	ms_engine *eng = r->engine;
	ms_shard *sh = r->shard;
	r->engine = NULL;
	r->shard = NULL;
	pthread_mutex_unlock(&r->mu);
	ms_engine_close(eng);
	ms_shard_close(sh);
	ms_checkpoint ck;
	int rc = ms_checkpoint_restore(c->dir, r->work_dir, &ck, &r->io, e);
	if (rc)
		return rc;
	note_leftovers(r, c, &ck);
	ms_shard_opts so = ms__replay_shard_opts(r);
	sh = NULL;
	rc = ms_shard_open(&sh, &so, e);
	pthread_mutex_lock(&r->mu);
	r->shard = sh;
	pthread_mutex_unlock(&r->mu);
	/* The slots after c are staged as the re-run reaches them
	 * (controller.c, publish_slot). */
	r->staged_upto = (size_t)c->pubs;
	if (rc == 0)
		rc = ms__replay_open_engine(r, &ck.engine, e);
	ms_checkpoint_release(&ck);
	return rc;
}

/* Everything after the checkpoint read back (design 3): the log rolled
 * back, shard and engine restored, the counts put back, later
 * checkpoints removed. sk has the target and from_pubs. 0, or the error
 * in *e (the shard may be touched). */
static int
restore_at(ms_replay *r, size_t idx, ms_ev_seek *sk, ms_errbuf *e)
{
	ms__rck *c = r->cks[idx];
	ms__checker_drain(r);
	ms_engine_stats es;
	ms_engine_get_stats(r->engine, &es);
	sk->wall_ns = ms__replay_since_start(r);
	sk->logical_ns = c->logical_ns;
	sk->from_merge = es.selections;
	sk->to_pubs = c->pubs;
	sk->to_merge = c->merge_seq;
	int rc = ms_rec_rollback(r->rec, &c->mark, sk, e);
	if (rc == 0) {
		pthread_mutex_lock(&r->mu);
		r->end_recorded = false; /* the rollback took it back */
		pthread_mutex_unlock(&r->mu);
		rc = reopen_at(r, c, e);
	}
	pthread_mutex_lock(&r->mu);
	if (rc == 0 && (rc = put_tallies(r, c)) != 0)
		ms_fail(e, rc, "out of memory for the part table (%zu parts)",
		        c->track.n);
	pthread_mutex_unlock(&r->mu);
	if (rc) {
		ms_errbuf f;
		ms_fail(&f, rc, "seek back to %s: %s", c->dir, e->msg);
		*e = f;
		return rc;
	}
	ms_clock_set(&r->clock, c->logical_ns);
	ms__replay_links_rebase(r);
	ms_link_stats now[MS_EV_LINKS_MAX];
	link_stats(r, now);
	pthread_mutex_lock(&r->mu);
	/* What was off the record at the checkpoint (put back with the
	 * tallies) and what the chain counted since then, every later
	 * stretch, is off it now. */
	for (size_t i = 0; i < MS_EV_LINKS_MAX; i++) {
		r->link_calls_superseded[i] += now[i].calls - c->links[i].calls;
		ms__link_stats_acc(&r->links_gone[i], &now[i], &c->links[i]);
	}
	drop_from(r, idx + 1); /* design 4 */
	r->seeks++;
	pthread_mutex_unlock(&r->mu);
	r->ck_last_ns = c->logical_ns;
	return 0;
}

/* Checkpoint idx reads back and has its files (nothing touched yet
 * otherwise). */
static int
ck_readable(ms_replay *r, size_t idx, ms_errbuf *e)
{
	if (idx >= r->ncks)
		return ms_fail(e, MS_ERR_NOTFOUND, "no such checkpoint");
	return ms_checkpoint_check(r->cks[idx]->dir, e);
}

/* Stop at the next publication point and answer the seeker there with
 * result (controller.c). mu held. */
static void
stop_and_answer(ms_replay *r, int result, const ms_errbuf *e)
{
	r->seek_req = false;
	r->seek_stop = true;
	r->seek_result = result;
	if (e)
		r->seek_eb = *e;
}

/* The seek row's first fields, from the request. mu held. */
static void
seek_row(ms_replay *r, ms_ev_seek *sk)
{
	memset(sk, 0, sizeof(*sk));
	snprintf(sk->target, sizeof(sk->target), "%s", r->seek_target);
	sk->from_pubs = r->pub_done;
}

/* The seek row from the request, mu released, checkpoint idx checked
 * (ck_readable). mu held on entry, not on return. */
static int
begin_restore(ms_replay *r, size_t idx, ms_ev_seek *sk, ms_errbuf *e)
{
	seek_row(r, sk);
	pthread_mutex_unlock(&r->mu);
	return ck_readable(r, idx, e);
}

int
ms__rck_restore(ms_replay *r, size_t *next_slot, ms_errbuf *eb)
{
	pthread_mutex_lock(&r->mu);
	size_t idx = r->seek_ck;
	*next_slot = (size_t)r->pub_done;
	ms_ev_seek sk;
	ms_errbuf e = { { 0 } };
	int rc = begin_restore(r, idx, &sk, &e);
	bool touched = rc == 0;
	if (rc == 0)
		rc = restore_at(r, idx, &sk, &e);
	pthread_mutex_lock(&r->mu);
	if (rc == 0 || !touched) {
		/* Restored, or nothing touched: the run stops at the point
		 * and the seeker is answered there. */
		stop_and_answer(r, rc, &e);
		if (rc == 0)
			*next_slot = (size_t)r->cks[idx]->pubs;
		rc = 0;
	} else {
		answer_fail(r, rc, &e);
		*eb = e;
	}
	pthread_mutex_unlock(&r->mu);
	return rc;
}

/* Clear what the end of the run decided (mu held): the gates run again
 * at the re-run's end, which stops first at the checkpoint. */
static void
reopen_run(ms_replay *r)
{
	r->ngates = 0;
	r->gates_failed = 0;
	r->has_expected = false;
	r->phase = MS_RPHASE_PRIMARY;
	r->state = MS_REPLAY_RUNNING;
	r->break_why[0] = '\0';
	stop_and_answer(r, 0, NULL);
}

/* A seek from a finished run (DONE): the controller thread is over, so
 * this thread restores and starts the controller again at the
 * checkpoint, where it stops. mu held on entry and return (released
 * meanwhile). 0, or the error (in r->seek_eb; the run stays DONE when
 * nothing was touched, else it is FAILED). */
static int
seek_from_end(ms_replay *r, size_t idx)
{
	ms_ev_seek sk;
	ms_errbuf e = { { 0 } };
	int rc = begin_restore(r, idx, &sk, &e);
	bool touched = rc == 0;
	if (rc == 0) {
		pthread_mutex_lock(&r->mu);
		reopen_run(r);
		ms__replay_rss_follow(r);
		pthread_mutex_unlock(&r->mu);
		rc = restore_at(r, idx, &sk, &e);
	}
	if (rc == 0)
		rc = ms__replay_controller_restart(r, (size_t)r->cks[idx]->pubs,
		                                   &e);
	pthread_mutex_lock(&r->mu);
	if (rc) {
		answer_fail(r, rc, &e);
		if (touched) {
			r->state = MS_REPLAY_FAILED;
			snprintf(r->error, sizeof(r->error), "%s", e.msg);
		}
		ms__replay_rss_follow(r);
	}
	return rc;
}

/* ---- asking for a seek (front end's thread) --------------------------- */

enum target_kind { T_MERGE, T_PUB, T_TIME };

/* Does checkpoint c come before the target (design 3)? A checkpoint
 * stands after its publication's merges: a merge target must come later,
 * a time target after its time, a publication target at or after it. */
static bool
before(const ms__rck *c, enum target_kind k, int64_t v)
{
	switch (k) {
	case T_MERGE:
		return c->merge_seq < (uint64_t)v;
	case T_PUB:
		return c->pubs <= (uint64_t)v;
	case T_TIME:
		return c->logical_ns < v;
	}
	return false;
}

/* Whether a seek can be asked for now, and from where (design 5). Past
 * the run's last point (phase END: the gates run) it waits for DONE. mu
 * held. */
static bool
seekable(ms_replay *r, bool *done)
{
	while (r->started && r->phase == MS_RPHASE_END &&
	       r->state != MS_REPLAY_DONE && r->state != MS_REPLAY_FAILED &&
	       !r->abort_req)
		pthread_cond_wait(&r->cv, &r->mu);
	*done = r->started && r->state == MS_REPLAY_DONE;
	bool live = *done ||
	            (r->started && r->state != MS_REPLAY_FAILED &&
	             r->phase != MS_RPHASE_END);
	return live && !r->abort_req && !r->seek_req;
}

static int
seek(ms_replay *r, enum target_kind k, int64_t v, const char *what,
     ms_errbuf *eb)
{
	pthread_mutex_lock(&r->mu);
	bool done;
	bool live = seekable(r, &done);
	size_t i = r->ncks;
	while (i > 0 && !before(r->cks[i - 1], k, v))
		i--;
	if (!live || i == 0) {
		pthread_mutex_unlock(&r->mu);
		return ms_fail(eb, MS_ERR_NOTFOUND,
		               live ? "no checkpoint before %s"
		                    : "no seek back to %s: the run failed, "
		                      "is not started or is going back already",
		               what);
	}
	/* From the cooldown there is no publication point left to stay at
	 * if the checkpoint does not read back: it is checked first, and
	 * the run stays where it is when it does not. */
	ms_errbuf ce = { { 0 } };
	int crc = !done && r->phase != MS_RPHASE_PRIMARY
	                  ? ck_readable(r, i - 1, &ce)
	                  : 0;
	if (crc) {
		pthread_mutex_unlock(&r->mu);
		if (eb)
			*eb = ce;
		return crc;
	}
	r->seek_req = true;
	r->seek_ck = i - 1;
	r->seek_rc = 1;
	snprintf(r->seek_target, sizeof(r->seek_target), "%s", what);
	r->pause_req = false;
	r->mode = MODE_RUN;
	if (done) {
		/* The new controller stops only at the checkpoint. */
		int rc = seek_from_end(r, i - 1);
		if (rc) {
			if (eb)
				*eb = r->seek_eb;
			pthread_mutex_unlock(&r->mu);
			return rc;
		}
	} else if (r->state == MS_REPLAY_BREAK ||
	           r->state == MS_REPLAY_PAUSED) {
		/* Released from its stop, it runs to its next publication
		 * point without stopping again (controller.c). */
		r->state = MS_REPLAY_RUNNING;
		pthread_cond_broadcast(&r->cv);
	}
	while (r->seek_rc == 1 && r->state != MS_REPLAY_FAILED &&
	       r->state != MS_REPLAY_DONE && !r->abort_req)
		pthread_cond_wait(&r->cv, &r->mu);
	int rc = r->seek_rc == 1 ? MS_ERR_CANCELED : r->seek_rc;
	r->seek_fresh = rc == 0;
	if (rc && eb)
		*eb = r->seek_rc == 1 ? (ms_errbuf){ "seek back: the run "
			                             "stopped first" }
		                      : r->seek_eb;
	pthread_mutex_unlock(&r->mu);
	return rc;
}

int
ms_replay_seek_merge(ms_replay *r, uint64_t seq, ms_errbuf *eb)
{
	char what[40];
	snprintf(what, sizeof(what), "merge #%llu", (unsigned long long)seq);
	return seek(r, T_MERGE, (int64_t)seq, what, eb);
}

int
ms_replay_seek_pub(ms_replay *r, uint64_t k, ms_errbuf *eb)
{
	char what[40];
	snprintf(what, sizeof(what), "publication %llu", (unsigned long long)k);
	return seek(r, T_PUB, (int64_t)k, what, eb);
}

int
ms_replay_seek_time(ms_replay *r, int64_t t, ms_errbuf *eb)
{
	char what[40];
	snprintf(what, sizeof(what), "time %lld", (long long)t);
	return seek(r, T_TIME, t, what, eb);
}
