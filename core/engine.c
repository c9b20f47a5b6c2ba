/*
 * engine.c - the merge engine of one shard (ms_engine.h): dispatcher,
 * lanes and workers, merge-idle, dispatch hook, backoff, quarantine and
 * finalize. The merges themselves are ms_merge_execute (merge.c); the
 * choice of inputs is ms_picker_select (picker.c).
 *
 * Design:
 *  1. A job is one claimed selection. It is listed in e->jobs (sequence
 *     order) from the picker pass that creates it until its last event has
 *     been delivered, or until it is dropped or discarded at close; its
 *     inputs are claimed exactly while it is listed, so claimed sets are
 *     always disjoint and never contain a quarantined part.
 *  2. Job states and who moves them:
 *       HOOK    created by pick_run (or ms_engine_finalize)
 *       INHOOK  dispatcher_main, while the dispatch hook runs
 *       HELD    dispatcher_main, when the hook answered HOLD
 *       QUEUED  dispatcher_main (GO) or ms_engine_release (run)
 *       RUNNING worker_main, until the merge ends
 *       ENDING  worker_main / job_drop, while its events are delivered
 *     then removed (worker_main, job_drop).
 *  3. The picker runs only with e->mu held and no backoff active, on one
 *     pinned view of the shard; picked_epoch is that view's epoch. A run
 *     does passes until one returns fewer than 2 parts.
 *  4. When a merge completes, the worker that ran it runs the picker
 *     before it takes another job, so with one worker per lane the
 *     sequence of selections does not depend on thread timing.
 *  5. idle <=> !trigger && !backing_off && picked &&
 *     picked_epoch == shard epoch && no job listed. A caller waiting for
 *     idle with no job listed probes the picker run itself (under e->mu,
 *     on the same state the dispatcher would see): a run that finds
 *     nothing needs no hand-off; one that finds a selection is left to
 *     the dispatcher, so jobs are made and hooked on its thread only.
 *  6. Once `fatal` is set (design note Failures in ms_engine.h) nothing
 *     is picked, hooked or started again; running merges finish.
 *  7. Nothing sleeps for a fixed time: threads wait on cv_disp, cv_work
 *     and cv_idle (CLOCK_MONOTONIC); the only timed waits are a backoff's
 *     expiry (dispatcher) and a caller's wait_idle timeout.
 *  8. Callbacks run without e->mu held; events are serialized by ev_mu.
 */
#include "merge_int.h"
#include "ms_engine.h"
#include "ms_enum.h"
#include "ms_fs.h"
#include "ms_invariant.h"
#include "ms_pipeline.h"
#include "ms_rusage.h"
#include "ms_thread.h"
#include "pipeline_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

enum job_state {
	JOB_HOOK,
	JOB_INHOOK,
	JOB_HELD,
	JOB_QUEUED,
	JOB_RUNNING,
	JOB_ENDING,
	JOB_STATE_COUNT,
};

/*
 * The moves of design 2 as a table (SQLite's pager.c keeps its states the
 * same way): job_move checks every move against it in debug builds
 * (MS_DEBUG_INVARIANTS, ms_invariant.h), and a job leaves the list only
 * from ENDING, or from any state when ms_engine_close discards it.
 *
 *   from     to                       by
 *   HOOK     INHOOK                   dispatcher_main
 *   INHOOK   HELD, QUEUED, ENDING     dispatcher_main (HOLD, GO or an
 *                                     early release; drop: job_drop)
 *   HELD     QUEUED, ENDING           ms_engine_release (run; drop)
 *   QUEUED   RUNNING                  worker_main
 *   RUNNING  ENDING                   run_job
 */
#define JOB_TO(st) MS__STATE_TO(st)
static const ms__state job_states[JOB_STATE_COUNT] = {
	[JOB_HOOK] = { "hook", JOB_TO(JOB_INHOOK) },
	[JOB_INHOOK] = { "inhook", JOB_TO(JOB_HELD) | JOB_TO(JOB_QUEUED) |
	                                   JOB_TO(JOB_ENDING) },
	[JOB_HELD] = { "held", JOB_TO(JOB_QUEUED) | JOB_TO(JOB_ENDING) },
	[JOB_QUEUED] = { "queued", JOB_TO(JOB_RUNNING) },
	[JOB_RUNNING] = { "running", JOB_TO(JOB_ENDING) },
	[JOB_ENDING] = { "ending", 0 },
};

int
ms__engine_job_states(void)
{
	return JOB_STATE_COUNT;
}

const char *
ms__engine_job_state_name(int st)
{
	return ms__state_name(job_states, JOB_STATE_COUNT, st);
}

bool
ms__engine_job_move_ok(int from, int to)
{
	return ms__state_move_ok(job_states, JOB_STATE_COUNT, from, to);
}

typedef struct job {
	struct job *prev, *next;
	enum job_state st;
	bool early;     /* released from inside its own hook */
	bool early_run; /* ... with run = true */
	ms_dispatch d;
	ms_dispatch_input *in;
	uint64_t *ids;
	size_t n;
	/* Bytes of free disk the job holds from when a worker starts it
	 * until it leaves the list: its input bytes, or 0 when they did
	 * not fit beside what running jobs hold (reserve_on_start). */
	uint64_t reserved;
} job;

typedef struct failcnt {
	uint64_t id;
	uint32_t n;
} failcnt;

typedef struct worker {
	ms_engine *e;
	unsigned lanes; /* bit per enum ms_lane_kind */
	unsigned index; /* within its lanes: fast 0..n-1, slow 0, serial 0 */
	pthread_t th;
	bool started;
	/* The zstd contexts of this worker's merges, kept from one to the
	 * next (ms_merge_req.zctx): made, used and freed by its thread
	 * alone (worker_main); NULL if they could not be made (each merge
	 * then makes its own). */
	ms_zctx *zctx;
} worker;

struct ms_engine {
	ms_engine_opts o;
	const ms_merge_hooks *merge_hooks; /* tests only (merge_int.h) */
	ms_mem *mem;
	pthread_mutex_t mu, ev_mu;
	pthread_cond_t cv_disp, cv_work, cv_idle;
	pthread_t disp;
	bool disp_started;
	worker *workers;
	unsigned nworkers, fast_workers, slow_workers;
	/* Fast and slow merges running, and how many may run at once: one a
	 * CPU, as the reference limits its merges process-wide (a finalize
	 * is not counted, as the reference's round takes no such slot). */
	unsigned merging, max_merging;

	job *head, *tail;
	bool stop, trigger, picked, backing_off;
	int64_t backoff_until; /* ms_mono_ns */
	uint32_t backoff_ms;   /* last step; 0 after a success */
	uint64_t picked_epoch;
	uint64_t seq;
	uint64_t fp;
	uint64_t picker_runs, selections, merges_done, merges_failed, dropped;
	uint64_t lane_merges[MS_LANE_KIND_COUNT];
	uint64_t finalize_skipped; /* ms_engine_stats */
	enum ms_sampling_reason finalize_skip_reason;
	uint64_t finalize_skip_need, finalize_skip_free;

	uint64_t *quar; /* ascending */
	size_t nquar, capquar;
	failcnt *fails;
	size_t nfails, capfails;
	uint32_t disk_fails; /* unblamed failures in a row (file system,
	                      * descriptors, memory, refused data) */
	int fatal;           /* 0, or the error the engine stopped on */
	ms_errbuf fatal_msg;
};

/* ---- small helpers ---------------------------------------------------- */

static bool
is_quarantined(const ms_engine *e, uint64_t id)
{
	size_t lo = 0, hi = e->nquar;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (e->quar[mid] == id)
			return true;
		if (e->quar[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

static bool
is_claimed(const ms_engine *e, uint64_t id)
{
	for (const job *j = e->head; j; j = j->next)
		for (size_t i = 0; i < j->n; i++)
			if (j->ids[i] == id)
				return true;
	return false;
}

/* ms_pick_excluded_fn of the engine: a part claimed by a listed job or
 * quarantined is no candidate (design 1). e->mu held. */
static bool
not_candidate(const void *arg, uint64_t id)
{
	const ms_engine *e = arg;

	return is_claimed(e, id) || is_quarantined(e, id);
}

/* What the running jobs hold of the free disk (DESIGN "picker": the
 * fan-out is free disk minus the bytes reserved by running merges). A
 * selection waiting in its hook, held or queued holds nothing yet, as in
 * the reference, where a merge reserves when its worker starts it. */
static uint64_t
reserved_bytes(const ms_engine *e)
{
	uint64_t r = 0;

	for (const job *j = e->head; j; j = j->next)
		r += j->reserved;
	return r;
}

static bool
idle_locked(ms_engine *e)
{
	return !e->trigger && !e->backing_off && e->picked && !e->head &&
	       e->picked_epoch == ms_shard_epoch(e->o.shard);
}

static void
deliver(ms_engine *e, const ms_engine_event *ev)
{
	if (!e->o.event)
		return;
	pthread_mutex_lock(&e->ev_mu);
	e->o.event(e->o.event_arg, ev);
	pthread_mutex_unlock(&e->ev_mu);
}

/* ---- jobs ------------------------------------------------------------- */

static void
job_free(ms_engine *e, job *j)
{
	if (!j)
		return;
	ms_mem_free(e->mem, j->in, j->n * sizeof(*j->in));
	ms_mem_free(e->mem, j->ids, j->n * sizeof(*j->ids));
	ms_mem_free(e->mem, j, sizeof(*j));
}

static void
job_unlink(ms_engine *e, job *j)
{
	MS_INVARIANT(j->st == JOB_ENDING || e->stop,
	             "merge #%llu leaves the job list in state %s",
	             (unsigned long long)j->d.seq, job_states[j->st].name);
	if (j->prev)
		j->prev->next = j->next;
	else
		e->head = j->next;
	if (j->next)
		j->next->prev = j->prev;
	else
		e->tail = j->prev;
	j->prev = j->next = NULL;
}

/* Move job j to state `to` (design 2; e->mu held). */
static void
job_move(job *j, enum job_state to)
{
	MS_INVARIANT(ms__engine_job_move_ok((int)j->st, (int)to),
	             "merge #%llu moves from %s to %s",
	             (unsigned long long)j->d.seq, job_states[j->st].name,
	             job_states[to].name);
	j->st = to;
}

static void
job_append(ms_engine *e, job *j)
{
	j->prev = e->tail;
	j->next = NULL;
	if (e->tail)
		e->tail->next = j;
	else
		e->head = j;
	e->tail = j;
}

/* What the sampling rule (ms_sampling.h) knows of a merge of this engine
 * before its inputs are counted: what run_job's request tells the merge
 * (the pipeline, the segment, the default grace, no event switched off). */
static ms_sampling_input
sampling_base(const ms_engine *e)
{
	const ms_pipeline *p = e->o.pipeline;
	return (ms_sampling_input){
		.pipeline_enabled = p != NULL,
		.nsamplers = p ? ms_chain_len(ms_pipeline_chain(p)) : 0,
		.policy = p ? ms_pipeline_policy(p) : MS_GRACE_SELECTION,
		.segment_min_ns = e->o.segment_min_ns,
		.segment_max_ns = e->o.segment_max_ns,
	};
}

/* The predicted sampling decision of d: the rule the merge applies when
 * it starts (ms_sampling.h), over the same inputs and frontier. */
static void
predict(const ms_engine *e, ms_dispatch *d)
{
	const ms_pipeline *p = e->o.pipeline;
	ms_sampling_input in = sampling_base(e);
	for (size_t i = 0; i < d->ninputs; i++)
		ms_sampling_input_add(&in, d->inputs[i].rows,
		                      d->inputs[i].min_ts, d->inputs[i].max_ts,
		                      d->frontier_ns);
	ms_sampling_predict(&in, &d->predict_class, &d->predict_reason);
	d->plan_estimate = d->plan_batches = d->plan_preferred = 0;
	if (d->predict_class != MS_SAMPLING_EXECUTED)
		return;
	uint64_t unc = 0, blocks = 0;
	for (size_t i = 0; i < d->ninputs; i++) {
		unc += d->inputs[i].uncompressed_bytes;
		blocks += d->inputs[i].blocks;
	}
	ms_stage_plan plan;
	ms_pipeline_plan_totals(p, d->bytes, unc, blocks, &plan);
	d->plan_estimate = plan.estimate;
	d->plan_batches = plan.planned;
	d->plan_preferred = plan.preferred;
}

/*
 * Build a job from n parts of view v (indices vidx[], in selection order).
 * Reserves the output ID. Called with e->mu held.
 */
static int
job_make(ms_engine *e, ms_view *v, const size_t *vidx, size_t n, bool fin,
         double m, uint64_t fan, uint64_t pass, job **out, ms_errbuf *eb)
{
	job *j;

	*out = NULL;
	j = ms_mem_calloc(e->mem, 1, sizeof(*j));
	if (!j)
		return ms_fail(
		        eb, MS_ERR_NOMEM,
		        "engine: out of memory to dispatch %zu parts (%zu "
		        "bytes)",
		        n, sizeof(*j));
	j->n = n;
	j->in = ms_mem_calloc(e->mem, n, sizeof(*j->in));
	j->ids = ms_mem_calloc(e->mem, n, sizeof(*j->ids));
	if (!j->in || !j->ids) {
		job_free(e, j);
		return ms_fail(
		        eb, MS_ERR_NOMEM,
		        "engine: out of memory to dispatch %zu parts (%zu "
		        "bytes)",
		        n, n * (sizeof(*j->in) + sizeof(*j->ids)));
	}
	ms_dispatch *d = &j->d;
	d->now_ns = ms_clock_now(e->o.clock);
	d->frontier_ns = ms_frontier(d->now_ns);
	d->min_ts = INT64_MAX;
	d->max_ts = INT64_MIN;
	d->min_depth = UINT32_MAX;
	for (size_t i = 0; i < n; i++) {
		const ms_part_meta *pm = ms_part_get_meta(
		        ms_view_part(v, vidx[i], MS_KIND_CORE));
		ms_dispatch_input *in = &j->in[i];
		in->id = pm->id;
		in->bytes = pm->compressed_bytes;
		in->uncompressed_bytes = pm->uncompressed_bytes;
		in->rows = pm->rows;
		in->blocks = pm->blocks;
		in->depth = pm->depth;
		in->min_ts = pm->min_ts;
		in->max_ts = pm->max_ts;
		in->mature = ms_ts_mature(pm->max_ts, d->frontier_ns);
		j->ids[i] = pm->id;
		d->bytes += in->bytes;
		d->rows += in->rows;
		if (in->depth < d->min_depth)
			d->min_depth = in->depth;
		if (in->depth > d->max_depth)
			d->max_depth = in->depth;
		if (in->min_ts < d->min_ts)
			d->min_ts = in->min_ts;
		if (in->max_ts > d->max_ts)
			d->max_ts = in->max_ts;
		if (in->mature) {
			d->mature_parts++;
			d->mature_rows += in->rows;
		} else {
			d->hot_parts++;
			d->hot_rows += in->rows;
		}
	}
	int rc = ms_shard_new_id(e->o.shard, &d->output_id, eb);
	if (rc < 0) {
		job_free(e, j);
		return rc;
	}
	d->seq = ++e->seq;
	d->finalize = fin;
	d->lane = fin ? MS_LANE_KIND_FINALIZE
	              : ms_lane_for(d->bytes, e->o.mem_limit);
	d->epoch = ms_view_epoch(v);
	d->pass = pass;
	d->m = m;
	d->max_fan_out = fan;
	d->ninputs = n;
	d->inputs = j->in;
	predict(e, d);
	j->st = JOB_HOOK;
	e->fp = ms_pick_fp_add(e->fp, j->ids, n);
	e->selections++;
	*out = j;
	return 0;
}

/* ---- the picker run --------------------------------------------------- */

static uint64_t
free_disk(ms_engine *e)
{
	uint64_t fr;

	if (e->o.free_disk)
		return e->o.free_disk(e->o.free_disk_arg);
	if (ms_fs_free_bytes(ms_shard_get_dir(e->o.shard), &fr) != 0)
		return UINT64_MAX; /* unknown: do not throttle */
	return fr;
}

/* The disk headroom: the free disk less what running jobs reserve, 0
 * when they reserve more. The fan-out, a worker's reservation and the
 * finalize's disk gate all measure against it. e->mu held. */
static uint64_t
disk_headroom(ms_engine *e)
{
	uint64_t fr = free_disk(e), res = reserved_bytes(e);

	return fr > res ? fr - res : 0;
}

/* A worker starts j: it reserves its input bytes when the headroom is
 * more than those; otherwise it runs holding nothing (the reference's
 * tryReserveDiskSpace). e->mu held. */
static void
reserve_on_start(ms_engine *e, job *j)
{
	j->reserved = disk_headroom(e) > j->d.bytes ? j->d.bytes : 0;
}

static uint64_t
fan_out(ms_engine *e)
{
	uint64_t fan = disk_headroom(e);

	if (e->o.max_fan_out && fan > e->o.max_fan_out)
		fan = e->o.max_fan_out;
	return fan;
}

/* One picker run: passes until fewer than 2 parts come back. e->mu held.
 * A probe (found not NULL) stops at the first selection without making
 * its job: *found says there is one, and the trigger stays set for the
 * dispatcher's run; a probe that finds nothing is that run. */
static int
pick_run(ms_engine *e, bool *found, ms_errbuf *eb)
{
	ms_view *v = NULL;
	ms_pick_cand *cands = NULL, *rest = NULL;
	size_t *vidx = NULL, *ridx = NULL, nv = 0, nc = 0;
	bool *taken = NULL;
	int rc;

	e->trigger = false;
	rc = ms_shard_view(e->o.shard, &v, eb);
	if (rc < 0)
		return rc;
	nv = ms_view_count(v);
	size_t cb = (nv ? nv : 1) * sizeof(ms_pick_cand);
	size_t ib = (nv ? nv : 1) * sizeof(size_t);
	cands = ms_mem_alloc(e->mem, cb);
	rest = ms_mem_alloc(e->mem, cb);
	vidx = ms_mem_alloc(e->mem, ib);
	ridx = ms_mem_alloc(e->mem, ib);
	taken = ms_mem_calloc(e->mem, nv ? nv : 1, sizeof(bool));
	if (!cands || !rest || !vidx || !ridx || !taken) {
		rc = ms_fail(
		        eb, MS_ERR_NOMEM,
		        "engine: out of memory to pick over %zu parts (%zu "
		        "bytes)",
		        nv, 2 * cb + 2 * ib + (nv ? nv : 1) * sizeof(bool));
		goto out;
	}
	ms_pick_scope sc = { .excluded = not_candidate, .arg = e };
	nc = ms_pick_candidates(v, &sc, cands, vidx);
	for (uint64_t pass = 1;; pass++) {
		size_t nr = 0;
		for (size_t i = 0; i < nc; i++) {
			if (taken[i])
				continue;
			rest[nr] = cands[i];
			ridx[nr++] = i;
		}
		uint64_t fan = fan_out(e);
		ms_pick pk;
		rc = ms_picker_select(&e->o.picker, rest, nr, fan, e->mem, &pk,
		                      eb);
		if (rc < 0 || pk.n < 2)
			break;
		if (found) {
			*found = true;
			e->trigger = true;
			goto out;
		}
		size_t sel[MS_PICKER_PARTS_LIMIT];
		for (size_t t = 0; t < pk.n; t++) {
			size_t ci = ridx[pk.idx[t]];
			taken[ci] = true;
			sel[t] = vidx[ci];
		}
		job *j;
		rc = job_make(e, v, sel, pk.n, false, pk.m, fan, pass, &j, eb);
		if (rc < 0)
			break;
		job_append(e, j);
	}
	if (rc == 0) {
		e->picked = true;
		e->picked_epoch = ms_view_epoch(v);
		e->picker_runs++;
	}
out:
	ms_mem_free(e->mem, cands, cb);
	ms_mem_free(e->mem, rest, cb);
	ms_mem_free(e->mem, vidx, ib);
	ms_mem_free(e->mem, ridx, ib);
	ms_mem_free(e->mem, taken, (nv ? nv : 1) * sizeof(bool));
	ms_view_release(v);
	pthread_cond_broadcast(&e->cv_disp);
	pthread_cond_broadcast(&e->cv_idle);
	return rc;
}

/* Start (or extend) the shard's backoff after a failure. e->mu held. */
static uint32_t
backoff_start(ms_engine *e)
{
	uint32_t base = e->o.backoff_base_ms, max = e->o.backoff_max_ms;

	if (e->backoff_ms == 0)
		e->backoff_ms = base;
	else if (e->backoff_ms > max / 2)
		e->backoff_ms = max;
	else
		e->backoff_ms *= 2;
	if (e->backoff_ms > max)
		e->backoff_ms = max;
	e->backing_off = true;
	e->backoff_until = ms_mono_ns() + (int64_t)e->backoff_ms * 1000000;
	pthread_cond_broadcast(&e->cv_disp);
	return e->backoff_ms;
}

/* A merge succeeded: end any backoff and restart its steps at the base,
 * as the reference does (merge_control.go recordOutcome). With two lanes,
 * a failure on one does not hold back the picks that the other lane's
 * success triggers; the failed inputs are picked again with them. e->mu
 * held. */
static void
backoff_clear(ms_engine *e)
{
	e->backoff_ms = 0;
	if (e->backing_off) {
		e->backing_off = false;
		pthread_cond_broadcast(&e->cv_disp);
	}
}

/* Run the picker; on failure back off and report. e->mu held (released
 * and re-taken around the event). */
static void
pick_and_report(ms_engine *e)
{
	ms_errbuf eb = { { 0 } };
	int rc = pick_run(e, NULL, &eb);

	if (rc == 0)
		return;
	ms_engine_event ev = { .type = MS_EV_PICK_FAILED,
		               .err = rc,
		               .error = eb.msg,
		               .backoff_ms = backoff_start(e) };
	pthread_mutex_unlock(&e->mu);
	deliver(e, &ev);
	pthread_mutex_lock(&e->mu);
}

/* ---- dispatcher ------------------------------------------------------- */

/* Drop a job that has not run: deliver MS_EV_DROPPED, unlink, free.
 * e->mu held (released around the event). */
static void
job_drop(ms_engine *e, job *j)
{
	job_move(j, JOB_ENDING);
	e->dropped++;
	pthread_mutex_unlock(&e->mu);
	ms_engine_event ev = { .type = MS_EV_DROPPED,
		               .dispatch = &j->d,
		               .error = "" };
	deliver(e, &ev);
	pthread_mutex_lock(&e->mu);
	job_unlink(e, j);
	job_free(e, j);
	pthread_cond_broadcast(&e->cv_idle);
}

static job *
first_in_state(ms_engine *e, enum job_state st)
{
	for (job *j = e->head; j; j = j->next)
		if (j->st == st)
			return j;
	return NULL;
}

static void *
dispatcher_main(void *arg)
{
	ms_engine *e = arg;
	ms_rusage_name_thread("ms-dispatch");

	pthread_mutex_lock(&e->mu);
	while (!e->stop) {
		if (e->backing_off && ms_mono_ns() >= e->backoff_until) {
			e->backing_off = false;
			e->trigger = true; /* the retry */
		}
		if (e->trigger && !e->backing_off && !e->fatal) {
			pick_and_report(e);
			continue;
		}
		job *j = e->fatal ? NULL : first_in_state(e, JOB_HOOK);
		if (j) {
			job_move(j, JOB_INHOOK);
			pthread_mutex_unlock(&e->mu);
			enum ms_dispatch_verdict vd = MS_DISPATCH_GO;
			if (e->o.dispatch_hook)
				vd = e->o.dispatch_hook(e->o.dispatch_arg,
				                        &j->d);
			pthread_mutex_lock(&e->mu);
			bool run = vd == MS_DISPATCH_GO;
			if (j->early)
				run = j->early_run;
			if (vd == MS_DISPATCH_HOLD && !j->early) {
				job_move(j, JOB_HELD);
			} else if (run) {
				job_move(j, JOB_QUEUED);
				pthread_cond_broadcast(&e->cv_work);
			} else {
				job_drop(e, j);
			}
			pthread_cond_broadcast(&e->cv_idle);
			continue;
		}
		if (e->backing_off && !e->fatal) {
			struct timespec dl = ms_mono_timespec(e->backoff_until);
			pthread_cond_timedwait(&e->cv_disp, &e->mu, &dl);
		} else {
			pthread_cond_wait(&e->cv_disp, &e->mu);
		}
	}
	pthread_mutex_unlock(&e->mu);
	return NULL;
}

/* ---- workers ---------------------------------------------------------- */

static failcnt *
fail_slot(ms_engine *e, uint64_t id)
{
	for (size_t i = 0; i < e->nfails; i++)
		if (e->fails[i].id == id)
			return &e->fails[i];
	if (e->nfails == e->capfails) {
		size_t nc = e->capfails ? e->capfails * 2 : 16;
		failcnt *p = ms_mem_realloc(e->mem, e->fails,
		                            e->capfails * sizeof(*p),
		                            nc * sizeof(*p));
		if (!p)
			return NULL;
		e->fails = p;
		e->capfails = nc;
	}
	e->fails[e->nfails] = (failcnt){ .id = id, .n = 0 };
	return &e->fails[e->nfails++];
}

static void
fail_forget(ms_engine *e, uint64_t id)
{
	for (size_t i = 0; i < e->nfails; i++) {
		if (e->fails[i].id == id) {
			e->fails[i] = e->fails[--e->nfails];
			return;
		}
	}
}

static bool
quarantine_add(ms_engine *e, uint64_t id)
{
	if (is_quarantined(e, id))
		return false;
	if (e->nquar == e->capquar) {
		size_t nc = e->capquar ? e->capquar * 2 : 8;
		uint64_t *p =
		        ms_mem_realloc(e->mem, e->quar, e->capquar * sizeof(*p),
		                       nc * sizeof(*p));
		if (!p)
			return false;
		e->quar = p;
		e->capquar = nc;
	}
	size_t i = e->nquar;
	while (i > 0 && e->quar[i - 1] > id) {
		e->quar[i] = e->quar[i - 1];
		i--;
	}
	e->quar[i] = id;
	e->nquar++;
	return true;
}

/*
 * After a failure while reading or writing, find which inputs are
 * unreadable: the one whose trace the output writer refused
 * (res->err_input), else every kind of each input is verified from disk
 * (a raw block copy meets a bad checksum in the write stage). When none
 * fails verification and the failure was in a read stage, the input named
 * in the merge's error message (if exactly one is) is blamed. Marks
 * blame[i]. No lock held.
 */
static void
find_bad_inputs(ms_engine *e, const job *j, const ms_merge_result *res,
                bool *blame)
{
	ms_view *v = NULL;
	size_t found = 0;

	for (size_t i = 0; res->err_input && i < j->n; i++) {
		if (j->ids[i] == res->err_input) {
			blame[i] = true;
			return;
		}
	}
	if (ms_shard_view(e->o.shard, &v, NULL) == 0) {
		for (size_t i = 0; i < j->n; i++) {
			for (int k = 0; k < MS_KIND_COUNT; k++) {
				const ms_part *p = ms_view_find(
				        v, j->ids[i], (enum ms_part_kind)k);
				if (!p || ms_part_verify(p, NULL) < 0) {
					blame[i] = true;
					found++;
					break;
				}
			}
		}
		ms_view_release(v);
	}
	if (found || res->err_stage == MS_MERGE_STAGE_WRITE)
		return;
	size_t hit = SIZE_MAX, hits = 0;
	for (size_t i = 0; i < j->n; i++) {
		char hex[17];
		ms_part_id_str(j->ids[i], hex);
		if (strstr(res->error.msg, hex)) {
			hit = i;
			hits++;
		}
	}
	if (hits == 1)
		blame[hit] = true;
}

/* The first queued job of lanes that may start now: a fast or slow one
 * only while fewer than max_merging run. *capped: one of lanes was left
 * queued for that. e->mu held. */
static job *
next_job(ms_engine *e, unsigned lanes, bool *capped)
{
	*capped = false;
	if (e->fatal)
		return NULL;
	for (job *j = e->head; j; j = j->next) {
		if (j->st != JOB_QUEUED || !(lanes & (1u << j->d.lane)))
			continue;
		if (!j->d.finalize && e->merging >= e->max_merging) {
			*capped = true;
			continue;
		}
		return j;
	}
	return NULL;
}

/* Stop the engine on merge j's repeated failure (design 6). e->mu held;
 * fatal_msg is written once, before `fatal` is set, and never again. */
static bool
engine_fail(ms_engine *e, const job *j, int rc, const char *msg)
{
	char out[17], lim[128] = "";
	ms_part_id_str(j->d.output_id, out);
	struct rlimit rl;
	if (rc == MS_ERR_LIMIT && getrlimit(RLIMIT_NOFILE, &rl) == 0 &&
	    rl.rlim_cur != RLIM_INFINITY)
		snprintf(lim, sizeof(lim),
		         "; the process may have %llu files open (ulimit -n)",
		         (unsigned long long)rl.rlim_cur);
	else if (rc == MS_ERR_NOMEM && getrlimit(RLIMIT_AS, &rl) == 0 &&
	         rl.rlim_cur != RLIM_INFINITY)
		snprintf(lim, sizeof(lim),
		         "; the process may use %llu MiB of address space "
		         "(ulimit -v)",
		         (unsigned long long)(rl.rlim_cur >> 20));
	/* Every message of a failed allocation should say so; one that
	 * does not still names the cause here. */
	const char *nomem =
	        rc == MS_ERR_NOMEM && msg[0] && !strstr(msg, "memory")
	                ? " (out of memory)"
	                : "";
	ms_fail(&e->fatal_msg, rc,
	        "merge #%llu (%s lane, %zu inputs -> part %s): %s%s; %u "
	        "failures in a row, not retried (inputs unchanged)%s",
	        (unsigned long long)j->d.seq, ms_lane_name(j->d.lane), j->n,
	        out, msg[0] ? msg : ms_strerror(rc), nomem, e->disk_fails, lim);
	e->fatal = rc;
	e->backing_off = false;
	e->trigger = false;
	pthread_cond_broadcast(&e->cv_disp);
	pthread_cond_broadcast(&e->cv_work);
	pthread_cond_broadcast(&e->cv_idle);
	return true;
}

/* Whether a failure rc no input is blamed for is one that retrying
 * rarely fixes: the file system, descriptors, memory, or data refused
 * (invalid, corrupt, of another format, out of range) that would be
 * refused the same way for as long as anyone waited. */
static bool
retry_futile(int rc)
{
	return rc == MS_ERR_IO || rc == MS_ERR_NOSPACE || rc == MS_ERR_LIMIT ||
	       rc == MS_ERR_NOMEM || rc == MS_ERR_INVAL ||
	       rc == MS_ERR_CORRUPT || rc == MS_ERR_FORMAT ||
	       rc == MS_ERR_RANGE;
}

/* Count merge j's failure rc (e->mu held): each input blamed (bl[i])
 * one more failure, quarantined at quarantine_after (its ID added to
 * newq); an unblamed failure one more in a row when retry_futile. True
 * when that stopped the engine (engine_fail). */
static bool
count_failure(ms_engine *e, const job *j, int rc, const char *msg,
              const bool *bl, uint64_t *newq, size_t *nnewq)
{
	bool blamed = false;
	for (size_t i = 0; bl && i < j->n; i++) {
		if (!bl[i])
			continue;
		blamed = true;
		failcnt *fc = fail_slot(e, j->ids[i]);
		if (fc && ++fc->n >= e->o.quarantine_after &&
		    quarantine_add(e, j->ids[i])) {
			fail_forget(e, j->ids[i]);
			if (*nnewq < MS_PICKER_PARTS_LIMIT)
				newq[(*nnewq)++] = j->ids[i];
		}
	}
	if (blamed || !retry_futile(rc))
		e->disk_fails = 0;
	else if (++e->disk_fails >= e->o.fatal_after && !e->fatal)
		return engine_fail(e, j, rc, msg);
	return false;
}

static void
run_job(ms_engine *e, job *j, const worker *w)
{
	unsigned windex = w->index;
	ms_merge_req req = {
		.shard = e->o.shard,
		.inputs = j->ids,
		.ninputs = j->n,
		.output_id = j->d.output_id,
		.seq = j->d.seq,
		.lane = ms_lane_name(j->d.lane),
		.flags = j->d.finalize ? MS_MERGE_FINALIZE : 0,
		.parent_mem = e->mem,
		.io = e->o.io,
		.pipeline = e->o.pipeline,
		.now_ns = j->d.now_ns,
		.grace_ns = 0,
		.zstd_level = e->o.zstd_level,
		.staging = e->o.staging,
		.segment_min_ns = e->o.segment_min_ns,
		.segment_max_ns = e->o.segment_max_ns,
		.on_drop = e->o.on_drop,
		.drop_arg = e->o.drop_arg,
		.zctx = w->zctx,
	};
	ms_merge_result res;
	ms_errbuf eb = { { 0 } };
	bool blame[MS_PICKER_PARTS_LIMIT] = { false };
	bool *bl = blame;
	uint64_t newq[MS_PICKER_PARTS_LIMIT];
	size_t nnewq = 0;
	bool fatal = false;

	memset(&res, 0, sizeof(res));
	int rc = ms__merge_execute_hooked(&req, e->merge_hooks, &res, &eb);
	if (rc < 0 && res.err == 0) {
		res.err = rc;
		memcpy(&res.error, &eb, sizeof(eb));
	}
	if (j->n > MS_PICKER_PARTS_LIMIT) /* a large finalize */
		bl = ms_mem_calloc(e->mem, j->n, sizeof(bool));
	/* Out of descriptors or of memory, the process is to blame, not an
	 * input (and verifying the inputs would fail the same way). */
	if (rc < 0 && rc != MS_ERR_LIMIT && rc != MS_ERR_NOMEM && bl &&
	    (res.err_stage == MS_MERGE_STAGE_READ ||
	     res.err_stage == MS_MERGE_STAGE_WRITE ||
	     res.err_stage == MS_MERGE_STAGE_INDEX))
		find_bad_inputs(e, j, &res, bl);

	pthread_mutex_lock(&e->mu);
	ms_engine_event ev = { .dispatch = &j->d,
		               .result = &res,
		               .worker = windex,
		               .err = rc,
		               .error = rc < 0 ? res.error.msg : "" };
	if (rc == 0) {
		ev.type = MS_EV_MERGE_DONE;
		e->merges_done++;
		e->lane_merges[j->d.lane]++;
		backoff_clear(e);
		for (size_t i = 0; i < j->n; i++)
			fail_forget(e, j->ids[i]);
		e->disk_fails = 0;
	} else {
		ev.type = MS_EV_MERGE_FAILED;
		e->merges_failed++;
		fatal = count_failure(e, j, rc, res.error.msg, bl, newq,
		                      &nnewq);
		if (!e->fatal)
			ev.backoff_ms = backoff_start(e);
		/* A quarantine sets the failures' cause aside: the next
		 * failure (another bad part) starts again at the base step
		 * rather than where this part's three left the backoff.
		 * The reference keeps doubling; with a few bad parts in a
		 * row that outlasts a replay's wait for idle (README). */
		if (nnewq)
			e->backoff_ms = 0;
	}
	job_move(j, JOB_ENDING);
	if (!j->d.finalize) {
		e->merging--;
		pthread_cond_broadcast(&e->cv_work);
	}
	pthread_mutex_unlock(&e->mu);

	deliver(e, &ev);
	if (fatal) {
		ms_engine_event f = { .type = MS_EV_ENGINE_FAILED,
			              .dispatch = &j->d,
			              .err = rc,
			              .error = e->fatal_msg.msg };
		deliver(e, &f);
	}
	for (size_t i = 0; i < nnewq; i++) {
		ms_engine_event q = { .type = MS_EV_QUARANTINED,
			              .err = rc,
			              .error = res.error.msg,
			              .part_id = newq[i] };
		deliver(e, &q);
	}
	if (bl != blame)
		ms_mem_free(e->mem, bl, j->n * sizeof(bool));

	pthread_mutex_lock(&e->mu);
	job_unlink(e, j);
	job_free(e, j);
	/* The epoch moved: pick again now, before this worker takes another
	 * job (design 4). Set only here so no pick sees a finished merge
	 * before its event. */
	if (rc == 0)
		e->trigger = true;
	/* A failed merge whose backoff ran out while its event was being
	 * delivered: the retry's pick saw its inputs still claimed. They are
	 * free now, so that pick does not count: pick again. */
	if (rc != 0 && !e->backing_off)
		e->trigger = true;
	if (e->trigger && !e->backing_off && !e->stop && !e->fatal)
		pick_and_report(e);
	pthread_cond_broadcast(&e->cv_work);
	pthread_cond_broadcast(&e->cv_idle);
}

static void *
worker_main(void *arg)
{
	worker *w = arg;
	ms_engine *e = w->e;
	ms_rusage_name_thread(
	        w->lanes == 1u << MS_LANE_KIND_FAST  ? "ms-merge-fast"
	        : w->lanes & 1u << MS_LANE_KIND_FAST ? "ms-merge"
	                                             : "ms-merge-slow");
	if (ms_zctx_new(&w->zctx, e->mem, NULL) != 0)
		w->zctx = NULL;

	pthread_mutex_lock(&e->mu);
	while (!e->stop) {
		bool capped;
		job *j = next_job(e, w->lanes, &capped);
		if (!j) {
			if (capped && e->merge_hooks && e->merge_hooks->capped)
				e->merge_hooks->capped(e->merge_hooks->arg);
			pthread_cond_wait(&e->cv_work, &e->mu);
			continue;
		}
		if (!j->d.finalize)
			e->merging++;
		job_move(j, JOB_RUNNING);
		reserve_on_start(e, j);
		pthread_mutex_unlock(&e->mu);
		run_job(e, j, w); /* returns with e->mu held */
	}
	pthread_mutex_unlock(&e->mu);
	ms_zctx_free(w->zctx);
	w->zctx = NULL;
	return NULL;
}

/* ---- public API ------------------------------------------------------- */

/* A thread pthread_create could not start (error err): which, the
 * system's reason and where to look (ms_thread_fail). */
static int
thread_failed(ms_errbuf *eb, const char *what, unsigned i, int err)
{
	char n[16] = "";
	if (strcmp(what, "worker") == 0)
		snprintf(n, sizeof(n), " %u", i);
	return ms_thread_fail(eb, MS_ERR_IO, err,
	                      "engine: cannot start its %s%s thread", what, n);
}

static unsigned
online_cpus(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (unsigned)n : 1;
}

static int engine_resume(ms_engine *e, const ms_engine_state *st,
                         ms_errbuf *eb);

unsigned
ms_engine_fast_workers(unsigned cpus)
{
	return cpus / 2 ? cpus / 2 : 1;
}

int
ms_engine_open(ms_engine **out, const ms_engine_opts *opts, ms_errbuf *eb)
{
	return ms__engine_open_hooked(out, opts, NULL, eb);
}

int
ms__engine_open_hooked(ms_engine **out, const ms_engine_opts *opts,
                       const ms_merge_hooks *hooks, ms_errbuf *eb)
{
	ms_engine *e;
	pthread_condattr_t ca;
	int rc;

	*out = NULL;
	if (!opts || !opts->shard)
		return ms_fail(eb, MS_ERR_INVAL, "engine: no shard given");
	ms_pick probe;
	rc = ms_picker_select(&opts->picker, NULL, 0, 0, NULL, &probe, eb);
	if (rc < 0)
		return rc;
	e = ms_mem_calloc(opts->mem, 1, sizeof(*e));
	if (!e)
		return ms_fail(
		        eb, MS_ERR_NOMEM,
		        "engine: out of memory for its state (%zu bytes)",
		        sizeof(*e));
	e->o = *opts;
	e->merge_hooks = hooks;
	e->mem = opts->mem;
	if (!e->o.backoff_base_ms)
		e->o.backoff_base_ms = 1000;
	if (!e->o.backoff_max_ms)
		e->o.backoff_max_ms = 60000;
	if (e->o.backoff_max_ms < e->o.backoff_base_ms)
		e->o.backoff_max_ms = e->o.backoff_base_ms;
	if (!e->o.quarantine_after)
		e->o.quarantine_after = 3;
	if (!e->o.fatal_after)
		e->o.fatal_after = 3;
	unsigned cpus = e->o.cpus ? e->o.cpus : online_cpus();

	pthread_mutex_init(&e->mu, NULL);
	pthread_mutex_init(&e->ev_mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&e->cv_disp, &ca);
	pthread_cond_init(&e->cv_work, &ca);
	pthread_cond_init(&e->cv_idle, &ca);
	pthread_condattr_destroy(&ca);

	if (opts->resume && (rc = engine_resume(e, opts->resume, eb)) != 0) {
		ms_engine_close(e);
		return rc;
	}
	e->o.resume = NULL;
	if (e->o.serial) {
		e->nworkers = 1;
	} else {
		e->fast_workers = ms_engine_fast_workers(cpus);
		e->slow_workers = 1;
		e->nworkers = e->fast_workers + e->slow_workers;
	}
	e->max_merging = cpus ? cpus : 1;
	e->workers = ms_mem_calloc(e->mem, e->nworkers, sizeof(worker));
	if (!e->workers) {
		/* The figures are read before the engine is freed. */
		unsigned nw = e->nworkers;
		ms_engine_close(e);
		return ms_fail(eb, MS_ERR_NOMEM,
		               "engine: out of memory for %u worker%s (%zu "
		               "bytes)",
		               nw, nw == 1 ? "" : "s", nw * sizeof(worker));
	}
	for (unsigned i = 0; i < e->nworkers; i++) {
		worker *w = &e->workers[i];
		w->e = e;
		w->index = !e->o.serial && i < e->fast_workers ? i : 0;
		if (e->o.serial)
			w->lanes = (1u << MS_LANE_KIND_COUNT) - 1;
		else if (i < e->fast_workers)
			w->lanes = 1u << MS_LANE_KIND_FAST |
			           (i == 0 ? 1u << MS_LANE_KIND_FINALIZE : 0);
		else
			w->lanes = 1u << MS_LANE_KIND_SLOW;
		rc = ms_thread_start(&w->th, MS_THREAD_STACK, worker_main, w);
		if (rc != 0) {
			ms_engine_close(e);
			return thread_failed(eb, "worker", i, rc);
		}
		w->started = true;
	}
	rc = ms_thread_start(&e->disp, MS_THREAD_STACK, dispatcher_main, e);
	if (rc != 0) {
		ms_engine_close(e);
		return thread_failed(eb, "dispatcher", 0, rc);
	}
	e->disp_started = true;
	*out = e;
	return 0;
}

void
ms_engine_close(ms_engine *e)
{
	if (!e)
		return;
	pthread_mutex_lock(&e->mu);
	e->stop = true;
	pthread_cond_broadcast(&e->cv_disp);
	pthread_cond_broadcast(&e->cv_work);
	pthread_cond_broadcast(&e->cv_idle);
	pthread_mutex_unlock(&e->mu);
	if (e->disp_started)
		pthread_join(e->disp, NULL);
	for (unsigned i = 0; e->workers && i < e->nworkers; i++)
		if (e->workers[i].started)
			pthread_join(e->workers[i].th, NULL);
	while (e->head) {
		job *j = e->head;
		job_unlink(e, j);
		job_free(e, j);
	}
	ms_mem_free(e->mem, e->workers, e->nworkers * sizeof(worker));
	ms_mem_free(e->mem, e->quar, e->capquar * sizeof(*e->quar));
	ms_mem_free(e->mem, e->fails, e->capfails * sizeof(*e->fails));
	pthread_cond_destroy(&e->cv_disp);
	pthread_cond_destroy(&e->cv_work);
	pthread_cond_destroy(&e->cv_idle);
	pthread_mutex_destroy(&e->mu);
	pthread_mutex_destroy(&e->ev_mu);
	ms_mem_free(e->mem, e, sizeof(*e));
}

void
ms_engine_trigger(ms_engine *e)
{
	pthread_mutex_lock(&e->mu);
	e->trigger = true;
	pthread_cond_broadcast(&e->cv_disp);
	pthread_mutex_unlock(&e->mu);
}

void
ms_engine_trigger_for_wait(ms_engine *e)
{
	pthread_mutex_lock(&e->mu);
	e->trigger = true;
	pthread_mutex_unlock(&e->mu);
}

bool
ms_engine_is_idle(ms_engine *e)
{
	pthread_mutex_lock(&e->mu);
	bool idle = idle_locked(e);
	pthread_mutex_unlock(&e->mu);
	return idle;
}

int
ms_engine_wait_idle(ms_engine *e, int64_t timeout_ns)
{
	struct timespec deadline;
	int rc = 0;

	if (timeout_ns >= 0) {
		deadline = ms_mono_timespec(ms_mono_ns() + timeout_ns);
	}
	pthread_mutex_lock(&e->mu);
	/* A stopped engine never gets idle: say so even when nothing is
	 * listed (design 6). */
	while (!idle_locked(e) || e->fatal) {
		if (e->stop) {
			rc = MS_ERR_CANCELED;
			break;
		}
		if (e->fatal) {
			rc = e->fatal;
			break;
		}
		/* An epoch nobody told us about: pick on it. */
		if (!e->trigger && !e->backing_off && !e->head &&
		    (!e->picked ||
		     e->picked_epoch != ms_shard_epoch(e->o.shard)))
			e->trigger = true;
		if (e->trigger && !e->backing_off) {
			/* Nothing listed: the run the dispatcher would do
			 * next, probed here (design 3 holds: e->mu is held).
			 * When it finds nothing that is the run; a selection,
			 * or a run that fails, is left to the dispatcher, which
			 * runs it again (the same state, the same result),
			 * makes the jobs and reports. */
			bool found = false;
			if (!e->head) {
				ms_errbuf peb = { { 0 } };
				if (pick_run(e, &found, &peb) != 0)
					e->trigger = true;
				else if (!found)
					continue;
			}
			pthread_cond_broadcast(&e->cv_disp);
		}
		if (timeout_ns < 0) {
			pthread_cond_wait(&e->cv_idle, &e->mu);
		} else if (pthread_cond_timedwait(&e->cv_idle, &e->mu,
		                                  &deadline) == ETIMEDOUT) {
			if (!idle_locked(e))
				rc = MS_ERR_TIMEOUT;
			break;
		}
	}
	pthread_mutex_unlock(&e->mu);
	return rc;
}

int
ms_engine_failed(ms_engine *e, ms_errbuf *eb)
{
	pthread_mutex_lock(&e->mu);
	int rc = e->fatal;
	if (rc && eb)
		*eb = e->fatal_msg;
	pthread_mutex_unlock(&e->mu);
	return rc;
}

int
ms_engine_release(ms_engine *e, uint64_t seq, bool run)
{
	int rc = MS_ERR_NOTFOUND;

	pthread_mutex_lock(&e->mu);
	for (job *j = e->head; j; j = j->next) {
		if (j->d.seq != seq)
			continue;
		if (j->st == JOB_INHOOK || j->st == JOB_HOOK) {
			j->early = true;
			j->early_run = run;
			rc = 0;
		} else if (j->st == JOB_HELD) {
			rc = 0;
			if (run) {
				job_move(j, JOB_QUEUED);
				pthread_cond_broadcast(&e->cv_work);
			} else {
				job_drop(e, j);
			}
		} else {
			rc = MS_ERR_STATE;
		}
		break;
	}
	pthread_mutex_unlock(&e->mu);
	return rc;
}

/*
 * Why the finalize over the nsel parts sel[] of v is skipped, or
 * MS_SREASON_NONE with *need = 0 when it runs. The checks go in the
 * reference's order (finalizer.go runFinalizeRoundNamed): no round
 * without a sampler (a pipeline off has none); then the disk-headroom
 * gate, when the free disk less what running merges reserve is below the
 * selection's bytes (the rewrite needs about that much beside its
 * inputs: an accepted miss rather than a full disk), told by
 * MS_SREASON_NONE with *need and *fr set; then no round when the
 * fragment guard cannot be set up (no segment known, or one with no
 * interior once the grace is off both edges). Each would otherwise
 * rewrite every mature part unsampled or into a full disk. e->mu held.
 */
static enum ms_sampling_reason
finalize_skip_why(ms_engine *e, ms_view *v, const size_t *sel, size_t nsel,
                  int64_t frontier, uint64_t *need, uint64_t *fr)
{
	ms_sampling_input in = sampling_base(e);
	uint64_t bytes = 0;
	for (size_t i = 0; i < nsel; i++) {
		const ms_part_meta *pm =
		        ms_part_get_meta(ms_view_part(v, sel[i], MS_KIND_CORE));
		ms_sampling_input_add(&in, pm->rows, pm->min_ts, pm->max_ts,
		                      frontier);
		bytes += pm->compressed_bytes;
	}
	enum ms_sampling_class c;
	enum ms_sampling_reason r = MS_SREASON_NONE;
	*need = *fr = 0;
	if (ms_sampling_predict(&in, &c, &r))
		r = MS_SREASON_NONE;
	if (r == MS_SREASON_PIPELINE_DISABLED || r == MS_SREASON_NO_SAMPLER)
		return r;
	uint64_t free_b = disk_headroom(e);
	if (free_b < bytes) {
		*need = bytes;
		*fr = free_b;
		return MS_SREASON_NONE;
	}
	return r == MS_SREASON_GUARD_UNAVAILABLE ? r : MS_SREASON_NONE;
}

/* Whether the finalize over sel[] is skipped (finalize_skip_why), and
 * if so counted, with its reason, for ms_engine_stats. e->mu held. */
static bool
finalize_skipped(ms_engine *e, ms_view *v, const size_t *sel, size_t nsel,
                 int64_t frontier)
{
	uint64_t need, fr;
	enum ms_sampling_reason r =
	        finalize_skip_why(e, v, sel, nsel, frontier, &need, &fr);
	if (r == MS_SREASON_NONE && need == 0)
		return false;
	e->finalize_skipped++;
	e->finalize_skip_reason = r;
	e->finalize_skip_need = need;
	e->finalize_skip_free = fr;
	return true;
}

int
ms_engine_finalize(ms_engine *e, uint64_t *seq, ms_errbuf *eb)
{
	ms_view *v = NULL;
	size_t *sel = NULL, nsel = 0, nv = 0;
	int rc;

	*seq = 0;
	pthread_mutex_lock(&e->mu);
	if (e->fatal) {
		rc = e->fatal;
		if (eb)
			*eb = e->fatal_msg;
		pthread_mutex_unlock(&e->mu);
		return rc;
	}
	rc = ms_shard_view(e->o.shard, &v, eb);
	if (rc < 0)
		goto out;
	nv = ms_view_count(v);
	sel = ms_mem_alloc(e->mem, (nv ? nv : 1) * sizeof(*sel));
	if (!sel) {
		rc = ms_fail(eb, MS_ERR_NOMEM,
		             "engine: out of memory for the finalize over %zu "
		             "parts (%zu bytes)",
		             nv, (nv ? nv : 1) * sizeof(*sel));
		goto out;
	}
	int64_t frontier = ms_clock_frontier(e->o.clock);
	ms_pick_scope sc = { .finalize = true,
		             .frontier_ns = frontier,
		             .excluded = not_candidate,
		             .arg = e };
	nsel = ms_pick_candidates(v, &sc, NULL, sel);
	if (nsel > 0 && !finalize_skipped(e, v, sel, nsel, frontier)) {
		job *j;
		rc = job_make(e, v, sel, nsel, true, 0, 0, 1, &j, eb);
		if (rc == 0) {
			job_append(e, j);
			*seq = j->d.seq;
			pthread_cond_broadcast(&e->cv_disp);
		}
	}
out:
	ms_mem_free(e->mem, sel, (nv ? nv : 1) * sizeof(*sel));
	ms_view_release(v);
	pthread_mutex_unlock(&e->mu);
	return rc;
}

void
ms_engine_get_stats(ms_engine *e, ms_engine_stats *st)
{
	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(&e->mu);
	st->picked_epoch = e->picked_epoch;
	st->picker_runs = e->picker_runs;
	st->selections = e->selections;
	st->merges_done = e->merges_done;
	st->merges_failed = e->merges_failed;
	st->dropped = e->dropped;
	st->finalize_skipped = e->finalize_skipped;
	st->finalize_skip_reason = e->finalize_skip_reason;
	st->finalize_skip_need = e->finalize_skip_need;
	st->finalize_skip_free = e->finalize_skip_free;
	memcpy(st->lane_merges, e->lane_merges, sizeof(st->lane_merges));
	for (job *j = e->head; j; j = j->next) {
		switch (j->st) {
		case JOB_HOOK:
		case JOB_INHOOK:
			st->pending_hook++;
			break;
		case JOB_HELD:
			st->held++;
			break;
		case JOB_QUEUED:
			st->queued++;
			break;
		case JOB_RUNNING:
		case JOB_ENDING:
			st->running++;
			break;
		case JOB_STATE_COUNT:
			break;
		}
		st->claimed_parts += j->n;
		st->reserved_bytes += j->reserved;
	}
	st->quarantined = e->nquar;
	st->trigger_pending = e->trigger;
	st->backing_off = e->backing_off;
	st->backoff_ms = e->backing_off ? e->backoff_ms : 0;
	st->failed = e->fatal != 0;
	st->fingerprint = e->fp;
	st->fast_workers = e->fast_workers;
	st->slow_workers = e->slow_workers;
	st->serial = e->o.serial;
	pthread_mutex_unlock(&e->mu);
}

size_t
ms_engine_quarantined(ms_engine *e, uint64_t *ids, size_t cap)
{
	pthread_mutex_lock(&e->mu);
	size_t n = e->nquar;
	for (size_t i = 0; i < n && i < cap; i++)
		ids[i] = e->quar[i];
	pthread_mutex_unlock(&e->mu);
	return n;
}

/* ---- saved state (ms_engine_save, ms_engine_opts.resume) -------------- */

/* The counters a saved state carries: (its field, the engine's). */
#define STATE_COUNTERS(X)                                                  \
	X(seq, seq) X(fingerprint, fp) X(picker_runs, picker_runs)         \
	X(selections, selections) X(merges_done, merges_done)              \
	X(merges_failed, merges_failed) X(dropped, dropped)                \
	X(lane_merges, lane_merges) X(backoff_ms, backoff_ms)              \
	X(disk_fails, disk_fails)
#define SAME_SIZE(sf, en)                                                  \
	_Static_assert(sizeof(((ms_engine_state *)0)->sf) ==               \
	                       sizeof(((ms_engine *)0)->en),               \
	               "engine state field " #sf);
STATE_COUNTERS(SAME_SIZE)
#undef SAME_SIZE

int
ms_engine_save(ms_engine *e, ms_engine_state *out, ms_errbuf *eb)
{
	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&e->mu);
	int rc = 0;
	if (e->fatal || !idle_locked(e)) {
		rc = ms_fail(eb, MS_ERR_STATE,
		             "engine: state saved only at merge-idle (%s)",
		             e->fatal     ? "it stopped after failures"
		             : e->head    ? "a selection is in flight"
		             : e->trigger ? "a picker run is pending"
		             : e->backing_off
		                     ? "it is backing off"
		                     : "the shard's epoch was not picked on");
		goto out;
	}
	out->quarantined = e->nquar ? malloc(e->nquar * sizeof(uint64_t))
	                            : NULL;
	out->fails = e->nfails ? malloc(e->nfails * sizeof(*out->fails))
	                       : NULL;
	if ((e->nquar && !out->quarantined) || (e->nfails && !out->fails)) {
		ms_engine_state_release(out);
		rc = ms_fail(eb, MS_ERR_NOMEM,
		             "engine: out of memory saving its state (%zu "
		             "quarantined, %zu failure counts)",
		             e->nquar, e->nfails);
		goto out;
	}
	if (e->nquar)
		memcpy(out->quarantined, e->quar, e->nquar * sizeof(uint64_t));
	out->nquarantined = e->nquar;
	for (size_t i = 0; i < e->nfails; i++)
		out->fails[i] = (ms_engine_failcount){ .id = e->fails[i].id,
		                                       .n = e->fails[i].n };
	out->nfails = e->nfails;
#define SAVE(st, en) memcpy(&out->st, &e->en, sizeof(out->st));
	STATE_COUNTERS(SAVE)
#undef SAVE
out:
	pthread_mutex_unlock(&e->mu);
	return rc;
}

void
ms_engine_state_release(ms_engine_state *st)
{
	if (!st)
		return;
	free(st->quarantined);
	free(st->fails);
	memset(st, 0, sizeof(*st));
}

/* Take over a saved state (ms_engine_opts.resume) at open, before any
 * thread runs. */
static int
engine_resume(ms_engine *e, const ms_engine_state *st, ms_errbuf *eb)
{
	for (size_t i = 0; i < st->nquarantined; i++)
		if (!quarantine_add(e, st->quarantined[i]) &&
		    !is_quarantined(e, st->quarantined[i]))
			return ms_fail(eb, MS_ERR_NOMEM,
			               "engine: out of memory resuming its "
			               "quarantine of %zu parts",
			               st->nquarantined);
	for (size_t i = 0; i < st->nfails; i++) {
		failcnt *f = fail_slot(e, st->fails[i].id);
		if (!f)
			return ms_fail(
			        eb, MS_ERR_NOMEM,
			        "engine: out of memory resuming %zu failure "
			        "counts",
			        st->nfails);
		f->n = st->fails[i].n;
	}
#define LOAD(sf, en) memcpy(&e->en, &st->sf, sizeof(e->en));
	STATE_COUNTERS(LOAD)
#undef LOAD
	return 0;
}
