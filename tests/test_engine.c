/*
 * test_engine.c - the merge engine over real shards and real merges:
 * merge-idle that never returns early (a blocked merge and a racing
 * publication), the dispatch hook as a barrier (hold, release, drop), two
 * lanes merging at once, failure injection with backoff, quarantine of an
 * unreadable part, finalize, and a 500-publication sequence whose selection
 * fingerprint repeats and whose ledgers match in serial and lane modes.
 *
 * Waits in this file are on condition variables with generous liveness
 * bounds (a hang fails instead of blocking the suite); nothing asserts a
 * duration.
 */
#include "testdir.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "mem_testlib.h"
#include "thread_testlib.h"
#include "merge_int.h"
#include "ms_checkpoint.h"
#include "ms_clock.h"
#include "ms_engine.h"
#include "ms_fs.h"
#include "ms_invariant.h"
#include "ms_ledger.h"
#include "ms_picker.h"
#include "ms_pipeline.h"
#include "ms_shard.h"
#include "ms_sidx.h"

#include <xxhash.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SEC 1000000000LL
#define LIVENESS (120 * SEC) /* only to fail instead of hanging */
#define T0 1785283200000000000LL
#define TID_LEN 16

/* ---- rows ------------------------------------------------------------- */

typedef struct span {
	uint8_t tid[TID_LEN];
	char service[16];
	uint8_t *body;
	uint32_t body_len;
	int64_t start_ns;
	uint32_t latency_ms;
	uint64_t span_id;
} span;

typedef struct rowset {
	span *s;
	ms_row *r;
	size_t n, cap;
} rowset;

static uint64_t
mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

/* Add one span of trace `trace`; body bytes are noise when `noisy` (so
 * parts are as big as their bodies), a repeated pattern otherwise. */
static void
rs_add(rowset *rs, uint64_t trace, uint64_t k, int64_t start, uint32_t body_len,
       bool noisy)
{
	if (rs->n == rs->cap) {
		rs->cap = rs->cap ? rs->cap * 2 : 16;
		rs->s = realloc(rs->s, rs->cap * sizeof(*rs->s));
		rs->r = realloc(rs->r, rs->cap * sizeof(*rs->r));
		assert_non_null(rs->s);
		assert_non_null(rs->r);
	}
	span *s = &rs->s[rs->n++];
	char buf[TID_LEN + 1];
	snprintf(buf, sizeof(buf), "t%015llx", (unsigned long long)trace);
	memcpy(s->tid, buf, TID_LEN);
	snprintf(s->service, sizeof(s->service), "svc-%u",
	         (unsigned)(mix(trace) % 5));
	s->body_len = body_len;
	s->body = malloc(body_len ? body_len : 1);
	assert_non_null(s->body);
	uint64_t x = mix(trace * 977 + k);
	for (uint32_t i = 0; i < body_len; i++) {
		if (noisy && i % 8 == 0)
			x = mix(x);
		s->body[i] = noisy ? (uint8_t)(x >> (8 * (i % 8)))
		                   : (uint8_t)("spanbody"[i % 8]);
	}
	s->start_ns = start;
	s->latency_ms = (uint32_t)(x % 700);
	s->span_id = trace * 100 + k;
}

static ms_row *
rs_rows(rowset *rs)
{
	for (size_t i = 0; i < rs->n; i++) {
		span *s = &rs->s[i];
		rs->r[i] = (ms_row){ .trace_id = s->tid,
			             .trace_id_len = TID_LEN,
			             .span_id = s->span_id,
			             .segment_id = "seg",
			             .service = s->service,
			             .instance = "i-1",
			             .endpoint = "/x",
			             .start_ns = s->start_ns,
			             .latency_ms = s->latency_ms,
			             .body = s->body,
			             .body_len = s->body_len };
	}
	return rs->r;
}

static void
rs_free(rowset *rs)
{
	for (size_t i = 0; i < rs->n; i++)
		free(rs->s[i].body);
	free(rs->s);
	free(rs->r);
	memset(rs, 0, sizeof(*rs));
}

/* Add the rows' ledgers (core and both indexes) to *l. */
static void
rs_ledger(rowset *rs, ms_ledger_set *l)
{
	ms_row *r = rs_rows(rs);
	for (size_t i = 0; i < rs->n; i++) {
		ms_ledger_add_row(&l->kind[MS_KIND_CORE], &r[i]);
		for (int k = MS_KIND_LATENCY; k <= MS_KIND_START_TIME; k++) {
			ms_sidx_row ir;
			ms_sidx_row_of((enum ms_part_kind)k, &r[i], &ir);
			ms_ledger_add_index_row(&l->kind[k], &ir);
		}
	}
}

/* ---- shards ----------------------------------------------------------- */

static void
rm_rf(const char *path)
{
	assert_int_equal(ms_fs_rm_tree(path, NULL), 0);
}

static ms_shard *
shard_new(char *dir, size_t n)
{
	ms_shard *s = NULL;
	ms_errbuf eb;

	assert_non_null(ms_test_mkdtemp(dir, n, "ms-test-engine"));
	ms_shard_opts o = { .dir = dir, .create = true };
	if (ms_shard_open(&s, &o, &eb) != 0)
		fail_msg("shard open: %s", eb.msg);
	return s;
}

/* Write the rows as part `id` (core + both indexes; 0: a new ID) and
 * introduce it. */
static uint64_t
publish_as(ms_shard *s, rowset *rs, uint64_t id)
{
	char p[4096];
	ms_errbuf eb;
	ms_part_meta meta;
	ms_part_writer_opts wo = { 0 };
	ms_row *r = rs_rows(rs);

	if (id == 0)
		assert_int_equal(ms_shard_new_id(s, &id, &eb), 0);
	ms_shard_tmp_path(s, MS_KIND_CORE, id, p, sizeof(p));
	if (ms_part_write_rows(p, id, r, rs->n, &wo, &meta, &eb) != 0)
		fail_msg("write core: %s", eb.msg);
	for (int k = MS_KIND_LATENCY; k <= MS_KIND_START_TIME; k++) {
		ms_shard_tmp_path(s, (enum ms_part_kind)k, id, p, sizeof(p));
		if (ms_sidx_write_rows((enum ms_part_kind)k, p, id, r, rs->n,
		                       &wo, &meta, &eb) != 0)
			fail_msg("write index: %s", eb.msg);
	}
	if (ms_shard_introduce(s, id, &eb) != 0)
		fail_msg("introduce: %s", eb.msg);
	return id;
}

static uint64_t
publish(ms_shard *s, rowset *rs)
{
	return publish_as(s, rs, 0);
}

/* A part of `traces` traces of one span each, `body` bytes per span. All
 * parts made with the same arguments have (nearly) the same size. */
static uint64_t
publish_uniform_as(ms_shard *s, uint64_t id, uint64_t first_trace,
                   size_t traces, uint32_t body, bool noisy, int64_t ts,
                   ms_ledger_set *l)
{
	rowset rs = { 0 };
	for (size_t t = 0; t < traces; t++)
		rs_add(&rs, first_trace + t, 0, ts + (int64_t)t, body, noisy);
	if (l)
		rs_ledger(&rs, l);
	id = publish_as(s, &rs, id);
	rs_free(&rs);
	return id;
}

static uint64_t
publish_uniform(ms_shard *s, uint64_t first_trace, size_t traces, uint32_t body,
                bool noisy, int64_t ts, ms_ledger_set *l)
{
	return publish_uniform_as(s, 0, first_trace, traces, body, noisy, ts,
	                          l);
}

static void
view_ids(ms_shard *s, uint64_t *ids, size_t *n)
{
	ms_view *v;
	assert_int_equal(ms_shard_view(s, &v, NULL), 0);
	*n = ms_view_count(v);
	for (size_t i = 0; i < *n; i++)
		ids[i] = ms_view_id(v, i);
	ms_view_release(v);
}

static void
shard_ledger(ms_shard *s, ms_ledger_set *l)
{
	ms_view *v;
	ms_errbuf eb;
	assert_int_equal(ms_shard_view(s, &v, NULL), 0);
	if (ms_ledger_of_view(v, l, NULL, &eb) != 0)
		fail_msg("ledger: %s", eb.msg);
	ms_view_release(v);
}

/* What the picker would choose on the shard now (no claims). */
static size_t
picker_now(ms_shard *s)
{
	ms_view *v;
	ms_pick_cand c[1024];
	ms_pick p;
	ms_pick_scope sc = { 0 };
	assert_int_equal(ms_shard_view(s, &v, NULL), 0);
	assert_true(ms_view_count(v) <= 1024);
	size_t n = ms_pick_candidates(v, &sc, c, NULL);
	ms_view_release(v);
	assert_int_equal(
	        ms_picker_select(NULL, c, n, UINT64_MAX, NULL, &p, NULL), 0);
	return p.n;
}

static size_t
tmp_entries(const char *dir)
{
	char p[4200];
	snprintf(p, sizeof(p), "%s/tmp", dir);
	return ms_fs_count_entries(p);
}

/* ---- what the test sees of the engine --------------------------------- */

#define MAXREC 4096

typedef struct rec {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	/* events */
	size_t done, failed, quarantined, dropped, pick_failed, engine_failed;
	size_t capped; /* the engine's capped hook */
	uint32_t backoff[64];
	size_t nbackoff;
	uint64_t quarantined_id;
	char last_error[512];
	uint64_t done_seq[MAXREC];
	int done_lane[MAXREC];
	pthread_t done_thread[MAXREC]; /* the worker that reported it */
	/* dispatches seen by the hook */
	size_t nseen;
	uint64_t seen_seq[MAXREC];
	int seen_lane[MAXREC];
	size_t seen_n[MAXREC];
	bool seen_finalize[MAXREC];
	size_t seen_mature[MAXREC], seen_hot[MAXREC];
	uint64_t seen_bytes[MAXREC], seen_fan[MAXREC];
	uint64_t fin_in[16]; /* the last finalize's first inputs, in order */
	/* hook behaviour */
	bool hold_all; /* answer HOLD */
	int hold_lane; /* answer HOLD for this lane only (-1) */
	/* merge stage hook behaviour */
	bool gate_closed; /* block merges at PIN while closed */
	size_t gate_from; /* ... from this attempt on (1-based) */
	size_t in_merge;  /* merges inside the PIN hook */
	size_t max_in_merge;
	bool lanes_in[MS_LANE_KIND_COUNT];
	int fail_writes; /* fail this many merges at WRITE */
	int fail_slow;   /* ... this many slow-lane merges only */
	int fail_err;    /* ... with this error (0 = MS_ERR_IO) */
	uint64_t fail_block; /* fail every merge at this output block with
	                      * fail_err, as the writer refusing it (0: no) */
	size_t attempts;
	int fail_event_ms; /* a failure's event takes this long */
	/* sampling: predicted at dispatch and reported by the merge, by
	 * sequence number (the engine has a pipeline: any prediction) */
	bool pipeline;
	int pred_class[MAXREC], pred_reason[MAXREC];
	int res_class[MAXREC], res_reason[MAXREC];
} rec;

static void
rec_init(rec *r)
{
	memset(r, 0, sizeof(*r));
	pthread_mutex_init(&r->mu, NULL);
	pthread_cond_init(&r->cv, NULL);
	r->hold_lane = -1;
}

static void
rec_destroy(rec *r)
{
	pthread_mutex_destroy(&r->mu);
	pthread_cond_destroy(&r->cv);
}

static void
on_event(void *arg, const ms_engine_event *ev)
{
	rec *r = arg;
	pthread_mutex_lock(&r->mu);
	switch (ev->type) {
	case MS_EV_MERGE_DONE:
		assert_non_null(ev->result);
		assert_int_equal(ev->result->err, 0);
		assert_int_equal(ev->result->seq, ev->dispatch->seq);
		if (r->done < MAXREC) {
			r->done_seq[r->done] = ev->dispatch->seq;
			r->done_lane[r->done] = ev->dispatch->lane;
			r->done_thread[r->done] = pthread_self();
		}
		if (ev->dispatch->seq < MAXREC) {
			r->res_class[ev->dispatch->seq] =
			        (int)ev->result->sampling.klass;
			r->res_reason[ev->dispatch->seq] =
			        (int)ev->result->sampling.reason;
		}
		r->done++;
		break;
	case MS_EV_MERGE_FAILED:
		if (r->fail_event_ms) {
			struct timespec ts = { 0, r->fail_event_ms * 1000000L };
			nanosleep(&ts, NULL);
		}
		r->failed++;
		if (r->nbackoff < 64)
			r->backoff[r->nbackoff++] = ev->backoff_ms;
		snprintf(r->last_error, sizeof(r->last_error), "%s", ev->error);
		break;
	case MS_EV_QUARANTINED:
		r->quarantined++;
		r->quarantined_id = ev->part_id;
		break;
	case MS_EV_DROPPED:
		r->dropped++;
		break;
	case MS_EV_PICK_FAILED:
		r->pick_failed++;
		break;
	case MS_EV_ENGINE_FAILED:
		assert_non_null(ev->dispatch);
		r->engine_failed++;
		snprintf(r->last_error, sizeof(r->last_error), "%s", ev->error);
		break;
	}
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

static enum ms_dispatch_verdict
on_dispatch(void *arg, const ms_dispatch *d)
{
	rec *r = arg;
	enum ms_dispatch_verdict v = MS_DISPATCH_GO;
	pthread_mutex_lock(&r->mu);
	size_t i = r->nseen++;
	if (i < MAXREC) {
		r->seen_seq[i] = d->seq;
		r->seen_lane[i] = d->lane;
		r->seen_n[i] = d->ninputs;
		r->seen_finalize[i] = d->finalize;
		r->seen_mature[i] = d->mature_parts;
		r->seen_hot[i] = d->hot_parts;
		r->seen_bytes[i] = d->bytes;
		r->seen_fan[i] = d->max_fan_out;
	}
	for (size_t k = 0; d->finalize && k < d->ninputs && k < 16; k++)
		r->fin_in[k] = d->inputs[k].id;
	/* Sanity of the dispatch fields. */
	uint64_t bytes = 0, rows = 0;
	for (size_t k = 0; k < d->ninputs; k++) {
		bytes += d->inputs[k].bytes;
		rows += d->inputs[k].rows;
		assert_true(d->inputs[k].mature ==
		            (d->inputs[k].max_ts <= d->frontier_ns));
	}
	assert_int_equal(bytes, d->bytes);
	assert_int_equal(rows, d->rows);
	assert_int_equal(d->mature_parts + d->hot_parts, d->ninputs);
	assert_int_equal(d->mature_rows + d->hot_rows, d->rows);
	if (!r->pipeline)
		assert_int_equal(d->predict_reason,
		                 MS_SREASON_PIPELINE_DISABLED);
	if (d->seq < MAXREC) {
		r->pred_class[d->seq] = (int)d->predict_class;
		r->pred_reason[d->seq] = (int)d->predict_reason;
	}
	if (r->hold_all || (int)d->lane == r->hold_lane)
		v = MS_DISPATCH_HOLD;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
	return v;
}

static int
on_stage(void *arg, const ms_merge_req *req, enum ms_merge_stage st,
         uint64_t detail)
{
	rec *r = arg;
	int rc = 0;
	(void)detail;
	if (st != MS_MERGE_STAGE_PIN && st != MS_MERGE_STAGE_WRITE)
		return 0;
	pthread_mutex_lock(&r->mu);
	if (st == MS_MERGE_STAGE_PIN) {
		r->attempts++;
		int lane = !strcmp(req->lane, MS_LANE_SLOW)       ? 1
		           : !strcmp(req->lane, MS_LANE_FINALIZE) ? 2
		                                                  : 0;
		r->in_merge++;
		r->lanes_in[lane] = true;
		if (r->in_merge > r->max_in_merge)
			r->max_in_merge = r->in_merge;
		pthread_cond_broadcast(&r->cv);
		while (r->gate_closed && r->attempts >= r->gate_from)
			pthread_cond_wait(&r->cv, &r->mu);
		r->in_merge--;
	} else if (r->fail_block && detail == r->fail_block) {
		rc = r->fail_err;
	} else if (r->fail_writes > 0 && detail == 0) {
		r->fail_writes--;
		rc = r->fail_err ? r->fail_err : MS_ERR_IO;
	} else if (r->fail_slow > 0 && detail == 0 &&
	           !strcmp(req->lane, MS_LANE_SLOW)) {
		r->fail_slow--;
		rc = r->fail_err ? r->fail_err : MS_ERR_IO;
	}
	pthread_mutex_unlock(&r->mu);
	return rc;
}

/* The engine's hook: a worker left a queued merge for the limit of merges
 * running at once (rec.capped counts). */
static void
on_capped(void *arg)
{
	rec *r = arg;
	pthread_mutex_lock(&r->mu);
	r->capped++;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

/* Wait (liveness-bounded) until *counter >= want. */
static void
rec_wait(rec *r, size_t *counter, size_t want)
{
	struct timespec dl;
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += LIVENESS / SEC;
	pthread_mutex_lock(&r->mu);
	while (*counter < want) {
		if (pthread_cond_timedwait(&r->cv, &r->mu, &dl) == ETIMEDOUT) {
			pthread_mutex_unlock(&r->mu);
			fail_msg("waited too long for %zu (have %zu)", want,
			         *counter);
		}
	}
	pthread_mutex_unlock(&r->mu);
}

static void
gate(rec *r, bool closed)
{
	pthread_mutex_lock(&r->mu);
	r->gate_closed = closed;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

typedef struct fixture {
	char dir[256];
	ms_shard *shard;
	ms_engine *eng;
	ms_clock clock;
	ms_mem mem;
	ms_merge_hooks hooks;
	rec r;
	/* The engine's free-disk callback (NULL: statvfs of the shard). */
	uint64_t (*free_disk)(void *arg);
	void *free_disk_arg;
	/* The engine's pipeline (closed by fx_close) and segment. */
	ms_pipeline *pipe;
	int64_t seg_min, seg_max;
} fixture;

/* Open f's engine on f->shard (resuming `resume` when not NULL). */
static void
fx_engine(fixture *f, bool serial, unsigned cpus, uint32_t backoff_ms,
          const ms_engine_state *resume)
{
	ms_errbuf eb;
	f->hooks = (ms_merge_hooks){ .stage = on_stage,
		                     .capped = on_capped,
		                     .arg = &f->r };
	ms_engine_opts o = {
		.shard = f->shard,
		.clock = &f->clock,
		.mem = &f->mem,
		.serial = serial,
		.cpus = cpus,
		.mem_limit = 256u << 20, /* lane threshold: 32 MiB */
		.backoff_base_ms = backoff_ms,
		.dispatch_hook = on_dispatch,
		.dispatch_arg = &f->r,
		.event = on_event,
		.event_arg = &f->r,
		.resume = resume,
		.free_disk = f->free_disk,
		.free_disk_arg = f->free_disk_arg,
		.pipeline = f->pipe,
		.segment_min_ns = f->seg_min,
		.segment_max_ns = f->seg_max,
	};
	if (ms__engine_open_hooked(&f->eng, &o, &f->hooks, &eb) != 0)
		fail_msg("engine open: %s", eb.msg);
}

/* f with its shard, its clock at T0 + 1 h and no engine yet. */
static void
fx_init(fixture *f)
{
	memset(f, 0, sizeof(*f));
	rec_init(&f->r);
	ms_mem_init(&f->mem, NULL);
	ms_clock_init_logical(&f->clock, T0 + 3600 * SEC);
	f->shard = shard_new(f->dir, sizeof(f->dir));
}

static void
fx_open(fixture *f, bool serial, unsigned cpus, uint32_t backoff_ms)
{
	fx_init(f);
	fx_engine(f, serial, cpus, backoff_ms, NULL);
}

/* fx_open with the chain spec (a shipped plugin, or "disabled": no
 * sampler) as the engine's pipeline and the segment [seg_min, seg_max]
 * (both 0: none known). */
static void
fx_open_chain(fixture *f, const char *spec, bool serial, unsigned cpus,
              int64_t seg_min, int64_t seg_max)
{
	fx_init(f);
	ms_errbuf eb = { { 0 } };
	ms_pipeline_opts po = { .spec = spec,
		                .plugin_dir = MS_PLUGIN_DIR,
		                .hard_ceiling = 64u << 20,
		                .mem = &f->mem };
	if (ms_pipeline_open(&f->pipe, &po, &eb) != 0)
		fail_msg("pipeline %s: %s", spec, eb.msg);
	f->r.pipeline = true;
	f->seg_min = seg_min;
	f->seg_max = seg_max;
	fx_engine(f, serial, cpus, 10, NULL);
}

/* A serial engine with the shipped alwayskeep plugin as its pipeline. */
static void
fx_open_pipeline(fixture *f, int64_t seg_min, int64_t seg_max)
{
	fx_open_chain(f, "alwayskeep", true, 1, seg_min, seg_max);
}

/* A segment of T0 -+ 10 h: the finalize's fragment guard can be set up. */
#define SEG_MIN (T0 - 10 * 3600 * SEC)
#define SEG_MAX (T0 + 10 * 3600 * SEC)

/* f with its shard and no engine yet, and in o the options of a serial
 * engine on it: for tests of ms_engine_open itself. */
static void
fx_unopened(fixture *f, ms_engine_opts *o)
{
	memset(f, 0, sizeof(*f));
	rec_init(&f->r);
	ms_mem_init(&f->mem, NULL);
	ms_clock_init_logical(&f->clock, T0);
	f->shard = shard_new(f->dir, sizeof(f->dir));
	*o = (ms_engine_opts){
		.shard = f->shard,
		.clock = &f->clock,
		.mem = &f->mem,
		.serial = true,
		.event = on_event,
		.event_arg = &f->r,
	};
}

static void
fx_close(fixture *f)
{
	ms_engine_close(f->eng);
	ms_pipeline_close(f->pipe);
	ms_shard_close(f->shard);
	tl_assert_no_live(&f->mem); /* nothing leaked by engine or merges */
	rm_rf(f->dir);
	rec_destroy(&f->r);
}

static void
idle(fixture *f)
{
	int rc = ms_engine_wait_idle(f->eng, LIVENESS);
	if (rc != 0)
		fail_msg("not idle: %s", ms_strerror(rc));
}

/* Wait (liveness-bounded) until the engine holds `want` jobs. The hook
 * having answered HOLD does not mean the job is held yet: the dispatcher
 * moves it once the hook has returned and it has the engine's lock back,
 * which on a loaded machine may be long after. */
static void
held_wait(fixture *f, size_t want, ms_engine_stats *st)
{
	int64_t give_up = ms_mono_ns() + LIVENESS;
	for (;;) {
		ms_engine_get_stats(f->eng, st);
		if (st->held >= want)
			return;
		if (ms_mono_ns() > give_up)
			fail_msg("waited too long for %zu held (have %zu, %zu "
			         "in the hook)",
			         want, st->held, st->pending_hook);
		struct timespec ts = { 0, 1000000L };
		nanosleep(&ts, NULL);
	}
}

/* ---- tests ------------------------------------------------------------ */

static void
test_lanes_rule(void **state)
{
	(void)state;
	const uint64_t mib = 1024 * 1024;
	/* 4 GiB: the threshold is 256 MiB. */
	assert_int_equal(ms_lane_for(256 * mib - 1, 4096 * mib),
	                 MS_LANE_KIND_FAST);
	assert_int_equal(ms_lane_for(256 * mib, 4096 * mib), MS_LANE_KIND_SLOW);
	/* No limit known (0): the public engine's default, 32 MiB. */
	assert_int_equal(ms_lane_for(32 * mib - 1, 0), MS_LANE_KIND_FAST);
	assert_int_equal(ms_lane_for(32 * mib, 0), MS_LANE_KIND_SLOW);
	/* Small memory: never below 32 MiB. */
	assert_int_equal(ms_lane_for(32 * mib - 1, 64 * mib),
	                 MS_LANE_KIND_FAST);
	assert_int_equal(ms_lane_for(32 * mib, 64 * mib), MS_LANE_KIND_SLOW);
	assert_string_equal(ms_lane_name(MS_LANE_KIND_FINALIZE), "finalize");
}

static void
test_idle_empty_and_seven_then_eight(void **state)
{
	(void)state;
	fixture f;
	ms_engine_stats st;
	ms_ledger_set want, got;
	uint64_t ids[64];
	size_t n;

	fx_open(&f, false, 2, 10);
	idle(&f); /* an empty shard is idle once the picker has run */
	ms_engine_get_stats(f.eng, &st);
	assert_true(st.picker_runs >= 1);
	assert_int_equal(st.fast_workers, 1);
	assert_int_equal(st.slow_workers, 1);

	ms_ledger_set_init(&want);
	for (int i = 0; i < 7; i++)
		publish_uniform(f.shard, 100 * (uint64_t)i, 20, 200, false, T0,
		                &want);
	ms_engine_trigger(f.eng);
	ms_engine_trigger(f.eng); /* coalesces */
	idle(&f);
	assert_int_equal(f.r.done, 0);
	view_ids(f.shard, ids, &n);
	assert_int_equal(n, 7);

	publish_uniform(f.shard, 700, 20, 200, false, T0, &want);
	ms_engine_trigger(f.eng);
	idle(&f);
	assert_int_equal(f.r.done, 1);
	assert_int_equal(f.r.nseen, 1);
	assert_int_equal(f.r.seen_n[0], 8);
	view_ids(f.shard, ids, &n);
	assert_int_equal(n, 1);
	shard_ledger(f.shard, &got);
	assert_true(ms_ledger_set_equal(&want, &got));
	ms_engine_get_stats(f.eng, &st);
	assert_int_equal(st.picked_epoch, ms_shard_epoch(f.shard));
	assert_int_equal(st.merges_done, 1);
	assert_int_equal(st.claimed_parts, 0);
	fx_close(&f);
}

/* Which thread ran the last picker pass: the free-disk callback is asked
 * once a pass. */
typedef struct picker_thread {
	pthread_mutex_t mu;
	pthread_t last;
	unsigned calls;
} picker_thread;

static uint64_t
on_free_disk(void *arg)
{
	picker_thread *pt = arg;
	pthread_mutex_lock(&pt->mu);
	pt->last = pthread_self();
	pt->calls++;
	pthread_mutex_unlock(&pt->mu);
	return UINT64_MAX; /* unknown: no throttle */
}

/* ms_engine_trigger_for_wait: with nothing listed, the wait runs the
 * picker on the caller's thread (no hand-off to the dispatcher); what it
 * selects still goes through the dispatcher's hook and a worker, and the
 * merges and idle are as after ms_engine_trigger. */
static void
test_trigger_for_wait(void **state)
{
	(void)state;
	fixture f;
	picker_thread pt = { .mu = PTHREAD_MUTEX_INITIALIZER };
	uint64_t ids[64];
	size_t n;

	fx_open(&f, false, 2, 10);
	idle(&f);
	ms_engine_close(f.eng);
	f.free_disk = on_free_disk;
	f.free_disk_arg = &pt;
	fx_engine(&f, false, 2, 10, NULL);
	idle(&f);

	for (int i = 0; i < 7; i++)
		publish_uniform(f.shard, 100 * (uint64_t)i, 20, 200, false, T0,
		                NULL);
	pthread_mutex_lock(&pt.mu);
	unsigned before = pt.calls;
	pthread_mutex_unlock(&pt.mu);
	ms_engine_trigger_for_wait(f.eng);
	idle(&f);
	pthread_mutex_lock(&pt.mu);
	assert_int_equal(pt.calls, before + 1);
	assert_true(pthread_equal(pt.last, pthread_self()));
	pthread_mutex_unlock(&pt.mu);
	assert_int_equal(f.r.done, 0);

	/* The eighth part makes a selection: hooked and merged. */
	publish_uniform(f.shard, 700, 20, 200, false, T0, NULL);
	ms_engine_trigger_for_wait(f.eng);
	idle(&f);
	assert_int_equal(f.r.done, 1);
	assert_int_equal(f.r.nseen, 1);
	assert_int_equal(f.r.seen_n[0], 8);
	view_ids(f.shard, ids, &n);
	assert_int_equal(n, 1);
	fx_close(&f);
}

static uint64_t
on_free_disk_fixed(void *arg)
{
	return __atomic_load_n((uint64_t *)arg, __ATOMIC_SEQ_CST);
}

/* Eight uniform parts from trace `first` on: one selection. */
static void
publish_eight(fixture *f, uint64_t first)
{
	for (uint64_t i = 0; i < 8; i++)
		publish_uniform(f->shard, first + 100 * i, 20, 200, false, T0,
		                NULL);
}

/* The picker's fan-out is the free disk minus what running merges
 * reserve (DESIGN "picker"). A selection held in its hook reserves
 * nothing; a merge reserves its input bytes when its worker starts it,
 * or nothing when the free disk has no more than that beside the others
 * (as the reference's merges reserve). */
static void
test_fan_out_reserves_running_only(void **state)
{
	(void)state;
	fixture f;
	ms_engine_stats st;
	uint64_t free_b = 1ull << 30;

	fx_open(&f, false, 2, 10);
	ms_engine_close(f.eng);
	f.free_disk = on_free_disk_fixed;
	f.free_disk_arg = &free_b;
	fx_engine(&f, false, 2, 10, NULL);
	idle(&f);

	/* Held: the next selection sees the whole free disk. */
	publish_eight(&f, 0);
	f.r.hold_all = true;
	ms_engine_trigger(f.eng);
	rec_wait(&f.r, &f.r.nseen, 1);
	assert_int_equal(f.r.seen_fan[0], free_b);
	publish_eight(&f, 10000);
	ms_engine_trigger(f.eng);
	rec_wait(&f.r, &f.r.nseen, 2);
	assert_int_equal(f.r.seen_fan[1], free_b);
	/* Waiting in its hook or held (the move to held may still be on
	 * its way): either way it reserves nothing. */
	ms_engine_get_stats(f.eng, &st);
	assert_int_equal(st.reserved_bytes, 0);
	held_wait(&f, 2, &st);
	assert_int_equal(st.reserved_bytes, 0);

	/* The first runs (blocked inside): it holds its input bytes. */
	f.r.hold_all = false;
	gate(&f.r, true);
	assert_int_equal(ms_engine_release(f.eng, f.r.seen_seq[0], true), 0);
	rec_wait(&f.r, &f.r.in_merge, 1);
	ms_engine_get_stats(f.eng, &st);
	assert_int_equal(st.reserved_bytes, f.r.seen_bytes[0]);
	publish_eight(&f, 20000);
	ms_engine_trigger(f.eng);
	rec_wait(&f.r, &f.r.nseen, 3);
	assert_int_equal(f.r.seen_fan[2], free_b - f.r.seen_bytes[0]);
	gate(&f.r, false);
	assert_int_equal(ms_engine_release(f.eng, f.r.seen_seq[1], true), 0);
	idle(&f);
	assert_int_equal(f.r.done, 3);

	/* A merge whose inputs take all the free disk runs holding
	 * nothing. */
	publish_eight(&f, 30000);
	f.r.hold_all = true;
	ms_engine_trigger(f.eng);
	rec_wait(&f.r, &f.r.nseen, 4);
	__atomic_store_n(&free_b, f.r.seen_bytes[3], __ATOMIC_SEQ_CST);
	f.r.hold_all = false;
	gate(&f.r, true);
	assert_int_equal(ms_engine_release(f.eng, f.r.seen_seq[3], true), 0);
	rec_wait(&f.r, &f.r.in_merge, 1);
	ms_engine_get_stats(f.eng, &st);
	assert_int_equal(st.running, 1);
	assert_int_equal(st.reserved_bytes, 0);
	gate(&f.r, false);
	idle(&f);
	assert_int_equal(f.r.done, 4);
	fx_close(&f);
}

static void
test_slow_merge_racing_publication(void **state)
{
	(void)state;
	fixture f;
	ms_engine_stats st;
	uint64_t ids[64];
	size_t n;

	fx_open(&f, false, 2, 10);
	for (int i = 0; i < 8; i++)
		publish_uniform(f.shard, 100 * (uint64_t)i, 20, 200, false, T0,
		                NULL);
	gate(&f.r, true);
	ms_engine_trigger(f.eng);
	rec_wait(&f.r, &f.r.in_merge, 1); /* the merge is running, blocked */

	/* A publication races it, first without a trigger. */
	publish_uniform(f.shard, 5000, 20, 200, false, T0, NULL);
	assert_false(ms_engine_is_idle(f.eng));
	assert_int_equal(ms_engine_wait_idle(f.eng, SEC / 20), MS_ERR_TIMEOUT);
	ms_engine_trigger(f.eng);
	assert_int_equal(ms_engine_wait_idle(f.eng, SEC / 20), MS_ERR_TIMEOUT);
	assert_false(ms_engine_is_idle(f.eng));
	ms_engine_get_stats(f.eng, &st);
	assert_int_equal(st.running, 1);
	assert_int_equal(st.claimed_parts, 8);
	assert_int_equal(f.r.done, 0);

	gate(&f.r, false);
	idle(&f);
	/* Idle means: the picker saw the last epoch and finds nothing. */
	ms_engine_get_stats(f.eng, &st);
	assert_int_equal(st.picked_epoch, ms_shard_epoch(f.shard));
	assert_int_equal(st.running + st.queued + st.held + st.pending_hook, 0);
	assert_int_equal(f.r.done, 1);
	view_ids(f.shard, ids, &n);
	assert_int_equal(n, 2);
	assert_int_equal(picker_now(f.shard), 0);
	fx_close(&f);
}

static void
test_hold_release_and_drop(void **state)
{
	(void)state;
	fixture f;
	ms_engine_stats st;
	uint64_t ids[64];
	size_t n;

	fx_open(&f, true, 2, 10);
	for (int i = 0; i < 8; i++)
		publish_uniform(f.shard, 100 * (uint64_t)i, 20, 200, false, T0,
		                NULL);
	f.r.hold_all = true;
	ms_engine_trigger(f.eng);
	rec_wait(&f.r, &f.r.nseen, 1);
	/* Held: claimed, not running, never idle. */
	held_wait(&f, 1, &st);
	assert_int_equal(ms_engine_wait_idle(f.eng, SEC / 20), MS_ERR_TIMEOUT);
	ms_engine_get_stats(f.eng, &st);
	assert_int_equal(st.held, 1);
	assert_int_equal(st.claimed_parts, 8);
	assert_int_equal(f.r.attempts, 0);
	uint64_t seq = f.r.seen_seq[0];
	assert_int_equal(ms_engine_release(f.eng, seq + 1, true),
	                 MS_ERR_NOTFOUND);

	/* Drop: parts stay, nothing merged, idle (until the next trigger). */
	assert_int_equal(ms_engine_release(f.eng, seq, false), 0);
	idle(&f);
	assert_int_equal(f.r.dropped, 1);
	assert_int_equal(f.r.done, 0);
	view_ids(f.shard, ids, &n);
	assert_int_equal(n, 8);

	/* Trigger again: the same selection comes back; release it. */
	ms_engine_trigger(f.eng);
	rec_wait(&f.r, &f.r.nseen, 2);
	assert_int_equal(f.r.seen_n[1], 8);
	assert_int_equal(ms_engine_release(f.eng, f.r.seen_seq[1], true), 0);
	idle(&f);
	assert_int_equal(f.r.done, 1);
	assert_int_equal(ms_engine_release(f.eng, f.r.seen_seq[1], true),
	                 MS_ERR_NOTFOUND);
	view_ids(f.shard, ids, &n);
	assert_int_equal(n, 1);
	ms_engine_get_stats(f.eng, &st);
	assert_int_equal(st.selections, 2);
	assert_int_equal(st.dropped, 1);
	fx_close(&f);
}

/* With one CPU the two lanes' workers (one fast, one slow) run one merge
 * at a time: the reference lets no more merges run at once than there are
 * CPUs, whatever their lanes. The slow worker finds its merge queued while
 * the fast one merges and leaves it queued; it starts it once the fast one
 * is over. Both used to run at once. */
static void
test_one_cpu_one_merge_at_a_time(void **state)
{
	(void)state;
	fixture f;
	fx_open(&f, false, 1, 10);
	for (int i = 0; i < 8; i++)
		publish_uniform(f.shard, 1000 + 10 * (uint64_t)i, 3,
		                1500 * 1024, true, T0, NULL);
	for (int i = 0; i < 8; i++)
		publish_uniform(f.shard, 100 * (uint64_t)i, 20, 200, false, T0,
		                NULL);
	gate(&f.r, true);
	ms_engine_trigger(f.eng);
	rec_wait(&f.r, &f.r.max_in_merge, 1);
	/* Either the other worker declines its merge (one at a time) or it
	 * enters it beside the first (two at once): whichever comes. */
	struct timespec dl;
	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += LIVENESS / SEC;
	pthread_mutex_lock(&f.r.mu);
	while (f.r.capped == 0 && f.r.max_in_merge < 2)
		if (pthread_cond_timedwait(&f.r.cv, &f.r.mu, &dl) == ETIMEDOUT)
			break;
	size_t most = f.r.max_in_merge, capped = f.r.capped;
	pthread_mutex_unlock(&f.r.mu);
	assert_true(capped > 0);
	assert_int_equal(most, 1);
	ms_engine_stats st;
	ms_engine_get_stats(f.eng, &st);
	assert_int_equal(st.running, 1);
	gate(&f.r, false);
	idle(&f);
	assert_int_equal(f.r.done, 2);
	assert_int_equal(f.r.max_in_merge, 1);
	assert_true(f.r.lanes_in[MS_LANE_KIND_FAST]);
	assert_true(f.r.lanes_in[MS_LANE_KIND_SLOW]);
	fx_close(&f);
}

/* Two selections in one trigger: 8 big parts (slow lane, > 32 MiB) and 8
 * small ones (fast lane). Both merges must be inside the executor at the
 * same time; holding the slow one must not stop the fast one. */
static void
test_two_lanes_at_once(void **state)
{
	(void)state;
	fixture f;
	ms_ledger_set want, got;
	uint64_t ids[64];
	size_t n;

	fx_open(&f, false, 4, 10);
	ms_ledger_set_init(&want);
	for (int i = 0; i < 8; i++)
		publish_uniform(f.shard, 1000 + 10 * (uint64_t)i, 3,
		                1500 * 1024, true, T0, &want);
	for (int i = 0; i < 8; i++)
		publish_uniform(f.shard, 100 * (uint64_t)i, 20, 200, false, T0,
		                &want);

	/* First: hold the slow selection; the fast one completes anyway. */
	f.r.hold_lane = MS_LANE_KIND_SLOW;
	ms_engine_trigger(f.eng);
	rec_wait(&f.r, &f.r.done, 1);
	assert_int_equal(f.r.done_lane[0], MS_LANE_KIND_FAST);
	ms_engine_stats st;
	ms_engine_get_stats(f.eng, &st);
	assert_int_equal(st.held, 1);
	assert_false(ms_engine_is_idle(f.eng));
	uint64_t slow_seq = 0;
	for (size_t i = 0; i < f.r.nseen; i++)
		if (f.r.seen_lane[i] == MS_LANE_KIND_SLOW)
			slow_seq = f.r.seen_seq[i];
	assert_true(slow_seq != 0);
	assert_int_equal(ms_engine_release(f.eng, slow_seq, true), 0);
	idle(&f);
	assert_int_equal(f.r.done, 2);
	shard_ledger(f.shard, &got);
	assert_true(ms_ledger_set_equal(&want, &got));
	fx_close(&f);

	/* Second: both run at once (each waits at PIN for the other). */
	fx_open(&f, false, 4, 10);
	for (int i = 0; i < 8; i++)
		publish_uniform(f.shard, 1000 + 10 * (uint64_t)i, 3,
		                1500 * 1024, true, T0, NULL);
	for (int i = 0; i < 8; i++)
		publish_uniform(f.shard, 100 * (uint64_t)i, 20, 200, false, T0,
		                NULL);
	gate(&f.r, true);
	ms_engine_trigger(f.eng);
	rec_wait(&f.r, &f.r.max_in_merge, 2);
	assert_true(f.r.lanes_in[MS_LANE_KIND_FAST]);
	assert_true(f.r.lanes_in[MS_LANE_KIND_SLOW]);
	ms_engine_get_stats(f.eng, &st);
	assert_int_equal(st.running, 2);
	assert_int_equal(st.claimed_parts, 16);
	gate(&f.r, false);
	idle(&f);
	assert_int_equal(f.r.done, 2);
	view_ids(f.shard, ids, &n);
	assert_int_equal(n, 2);
	fx_close(&f);
}

static void
test_failure_backoff_inventory_unchanged(void **state)
{
	(void)state;
	fixture f;
	ms_ledger_set before, after;
	uint64_t ids0[64], ids1[64];
	size_t n0, n1;

	fx_open(&f, true, 2, 20);
	for (int i = 0; i < 8; i++)
		publish_uniform(f.shard, 100 * (uint64_t)i, 20, 200, false, T0,
		                NULL);
	view_ids(f.shard, ids0, &n0);
	shard_ledger(f.shard, &before);
	uint64_t epoch0 = ms_shard_epoch(f.shard);

	/* Two failing attempts, then the third blocks at PIN. */
	pthread_mutex_lock(&f.r.mu);
	f.r.fail_writes = 2;
	f.r.gate_from = 3;
	pthread_mutex_unlock(&f.r.mu);
	gate(&f.r, true);
	ms_engine_trigger(f.eng);
	rec_wait(&f.r, &f.r.failed, 1);
	assert_false(ms_engine_is_idle(f.eng)); /* backing off, not idle */
	rec_wait(&f.r, &f.r.attempts, 3);

	/* Inputs active and unchanged, nothing published, no temporary
	 * leftovers. */
	view_ids(f.shard, ids1, &n1);
	assert_int_equal(n1, n0);
	assert_memory_equal(ids0, ids1, n0 * sizeof(uint64_t));
	shard_ledger(f.shard, &after);
	assert_true(ms_ledger_set_equal(&before, &after));
	assert_int_equal(ms_shard_epoch(f.shard), epoch0);
	assert_int_equal(tmp_entries(f.dir), 0);
	assert_int_equal(f.r.failed, 2);
	assert_int_equal(f.r.backoff[0], 20);
	assert_int_equal(f.r.backoff[1], 40);
	assert_non_null(strstr(f.r.last_error, "inject"));

	gate(&f.r, false);
	idle(&f);
	assert_int_equal(f.r.done, 1);
	assert_int_equal(f.r.quarantined, 0); /* write failures blame no part */
	ms_engine_stats st;
	ms_engine_get_stats(f.eng, &st);
	assert_int_equal(st.merges_failed, 2);
	assert_int_equal(st.backoff_ms, 0);
	fx_close(&f);
}

/* Two lanes, the slow one failing: a success on the fast lane ends the
 * backoff the failure started (as the reference's recordOutcome does),
 * and the failed selection is picked again at once, not after its step
 * (ten minutes here, longer than the test waits). */
static void
test_success_ends_backoff(void **state)
{
	(void)state;
	fixture f;
	ms_ledger_set want, got;
	ms_engine_stats st;

	fx_open(&f, false, 4, 600000);
	ms_ledger_set_init(&want);
	for (int i = 0; i < 8; i++)
		publish_uniform(f.shard, 1000 + 10 * (uint64_t)i, 3,
		                1500 * 1024, true, T0, &want);
	for (int i = 0; i < 8; i++)
		publish_uniform(f.shard, 100 * (uint64_t)i, 20, 200, false, T0,
		                &want);
	/* The fast selection waits at the barrier until the slow merge has
	 * failed and its backoff runs. */
	f.r.hold_lane = MS_LANE_KIND_FAST;
	f.r.fail_slow = 1;
	ms_engine_trigger(f.eng);
	rec_wait(&f.r, &f.r.failed, 1);
	assert_int_equal(f.r.backoff[0], 600000);
	held_wait(&f, 1, &st);
	assert_true(st.backing_off);
	uint64_t fast_seq = 0;
	for (size_t i = 0; i < f.r.nseen; i++)
		if (f.r.seen_lane[i] == MS_LANE_KIND_FAST)
			fast_seq = f.r.seen_seq[i];
	assert_true(fast_seq != 0);
	pthread_mutex_lock(&f.r.mu);
	f.r.hold_lane = -1;
	pthread_mutex_unlock(&f.r.mu);
	assert_int_equal(ms_engine_release(f.eng, fast_seq, true), 0);
	rec_wait(&f.r, &f.r.done, 1);
	/* The success's event comes after the engine has taken it in. */
	ms_engine_get_stats(f.eng, &st);
	assert_false(st.backing_off);
	assert_int_equal(st.backoff_ms, 0);
	idle(&f);
	assert_int_equal(f.r.done, 2);
	assert_int_equal(f.r.failed, 1);
	shard_ledger(f.shard, &got);
	assert_true(ms_ledger_set_equal(&want, &got));
	fx_close(&f);
}

/* A merge that keeps failing with a disk error (ENOSPC) is tried three
 * times, then the engine stops: wait_idle returns the error instead of
 * waiting forever, the message names the merge and its error, nothing is
 * tried again, and the inputs are untouched. */
static void
test_disk_error_stops_engine(void **state)
{
	(void)state;
	fixture f;
	ms_ledger_set before, after;
	uint64_t ids0[64], ids1[64];
	size_t n0, n1;

	fx_open(&f, true, 2, 20);
	for (int i = 0; i < 8; i++)
		publish_uniform(f.shard, 100 * (uint64_t)i, 20, 200, false, T0,
		                NULL);
	view_ids(f.shard, ids0, &n0);
	shard_ledger(f.shard, &before);
	pthread_mutex_lock(&f.r.mu);
	f.r.fail_writes = 1000;
	f.r.fail_err = MS_ERR_NOSPACE;
	pthread_mutex_unlock(&f.r.mu);
	ms_engine_trigger(f.eng);
	assert_int_equal(ms_engine_wait_idle(f.eng, LIVENESS), MS_ERR_NOSPACE);
	rec_wait(&f.r, &f.r.engine_failed, 1);

	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_engine_failed(f.eng, &eb), MS_ERR_NOSPACE);
	fprintf(stderr, "engine stopped: %s\n", eb.msg);
	/* Each retry is a new selection of the same inputs: the third. */
	assert_non_null(strstr(eb.msg, "merge #3 "));
	assert_non_null(strstr(eb.msg, "inject"));
	assert_non_null(strstr(eb.msg, "3 failures in a row"));
	assert_string_equal(eb.msg, f.r.last_error);
	/* No fourth attempt, however long one waits: asking again, a
	 * trigger and a finalize all answer with the same error. */
	ms_engine_trigger(f.eng);
	assert_int_equal(ms_engine_wait_idle(f.eng, 0), MS_ERR_NOSPACE);
	uint64_t seq = 1;
	assert_int_equal(ms_engine_finalize(f.eng, &seq, NULL), MS_ERR_NOSPACE);
	assert_int_equal(seq, 0);
	ms_engine_stats st;
	ms_engine_get_stats(f.eng, &st);
	assert_true(st.failed);
	assert_int_equal(st.merges_failed, 3);
	assert_false(st.backing_off);
	assert_int_equal(f.r.attempts, 3);
	assert_int_equal(f.r.failed, 3);
	assert_int_equal(f.r.engine_failed, 1);
	assert_int_equal(f.r.quarantined, 0);

	view_ids(f.shard, ids1, &n1);
	assert_int_equal(n1, n0);
	assert_memory_equal(ids0, ids1, n0 * sizeof(uint64_t));
	shard_ledger(f.shard, &after);
	assert_true(ms_ledger_set_equal(&before, &after));
	assert_int_equal(tmp_entries(f.dir), 0);
	fx_close(&f);
}

/* Merges that run out of memory (the merge's allocator fails every
 * allocation from the `at`th on, as under `ulimit -v`): the third failure
 * in a row stops the engine as a disk error does, naming the merge and
 * "out of memory", blaming (and quarantining) no input, and the inputs
 * stay in place. They used to be retried with longer and longer backoffs
 * for as long as anyone waited. */
static void
oom_stops_engine(uint64_t at)
{
	fixture f;
	ms_ledger_set before, after;
	uint64_t ids0[64], ids1[64];
	size_t n0, n1;

	fx_open(&f, true, 2, 5);
	for (int i = 0; i < 8; i++)
		publish_uniform(f.shard, 100 * (uint64_t)i, 20, 2000, true, T0,
		                NULL);
	view_ids(f.shard, ids0, &n0);
	shard_ledger(f.shard, &before);
	f.hooks.fail_alloc_at = at;
	f.hooks.fail_alloc_every = true;
	ms_engine_trigger(f.eng);
	/* Bounded so that the old endless retrying fails the test. */
	assert_int_equal(ms_engine_wait_idle(f.eng, 30 * SEC), MS_ERR_NOMEM);
	rec_wait(&f.r, &f.r.engine_failed, 1);

	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_engine_failed(f.eng, &eb), MS_ERR_NOMEM);
	fprintf(stderr, "engine stopped (alloc %llu): %s\n",
	        (unsigned long long)at, eb.msg);
	assert_non_null(strstr(eb.msg, "merge #3 "));
	assert_non_null(strstr(eb.msg, "out of memory"));
	assert_non_null(strstr(eb.msg, "3 failures in a row"));
	assert_int_equal(f.r.failed, 3);
	assert_int_equal(f.r.quarantined, 0);
	view_ids(f.shard, ids1, &n1);
	assert_int_equal(n1, n0);
	assert_memory_equal(ids0, ids1, n0 * sizeof(uint64_t));
	shard_ledger(f.shard, &after);
	assert_true(ms_ledger_set_equal(&before, &after));
	assert_int_equal(tmp_entries(f.dir), 0);
	fx_close(&f);
}

static void
test_out_of_memory_stops_engine(void **state)
{
	(void)state;
	/* From the merge's first allocation to its writing of the output;
	 * each failure says "out of memory" (a writer's said "zstd
	 * context"). */
	for (uint64_t at = 1; at < 40; at += 3)
		oom_stops_engine(at);
}

/* Two merges in a row out of memory (injected at WRITE), then memory
 * again: the merge is retried and runs; the engine does not stop. */
static void
test_out_of_memory_once_retried(void **state)
{
	(void)state;
	fixture f;
	uint64_t ids[64];
	size_t n;

	fx_open(&f, true, 2, 5);
	for (int i = 0; i < 8; i++)
		publish_uniform(f.shard, 100 * (uint64_t)i, 20, 200, false, T0,
		                NULL);
	pthread_mutex_lock(&f.r.mu);
	f.r.fail_writes = 2;
	f.r.fail_err = MS_ERR_NOMEM;
	pthread_mutex_unlock(&f.r.mu);
	ms_engine_trigger(f.eng);
	idle(&f);
	assert_int_equal(f.r.failed, 2);
	assert_int_equal(f.r.done, 1);
	assert_int_equal(f.r.engine_failed, 0);
	assert_int_equal(ms_engine_failed(f.eng, NULL), 0);
	view_ids(f.shard, ids, &n);
	assert_int_equal(n, 1);
	fx_close(&f);
}

/* No room for a thread (what `ulimit -v` leaves a process:
 * pthread_create failing its Nth call with EAGAIN, thread_testlib.h):
 * the open fails naming the thread, the system's reason and where to
 * look, and leaves nothing running. It said only "engine: starting
 * dispatcher: Resource temporarily unavailable". */
static void
test_open_without_threads(void **state)
{
	(void)state;
	/* Serial: one worker (the first thread), then the dispatcher. */
	static const char *const want[] = { "its worker 0 thread: ",
		                            "its dispatcher thread: " };
	for (unsigned k = 0; k < 2; k++) {
		fixture f;
		ms_engine_opts o;
		fx_unopened(&f, &o);
		ms_errbuf eb = { { 0 } };
		tl_threads_fail_nth(k + 1);
		int rc = ms_engine_open(&f.eng, &o, &eb);
		tl_threads_fail_nth(0);
		fprintf(stderr, "refused as expected: %s\n", eb.msg);
		assert_true(rc < 0);
		assert_null(f.eng);
		assert_non_null(strstr(eb.msg, "engine: cannot start "));
		assert_non_null(strstr(eb.msg, want[k]));
		assert_non_null(strstr(eb.msg, strerror(EAGAIN)));
		assert_non_null(strstr(eb.msg, "ulimit -v"));
		fx_close(&f);
	}
}

/* An engine that cannot allocate while it opens says "out of memory",
 * what for and the size ("engine: state" and "engine: 1 workers" said
 * neither). */
static void
test_open_out_of_memory(void **state)
{
	(void)state;
	fixture f;
	ms_engine_opts o;
	fx_unopened(&f, &o);
	size_t failures = 0, state_said = 0, workers_said = 0;
	for (uint64_t n = 1;; n++) {
		ms_errbuf eb = { { 0 } };
		ms_mem_fail_at(&f.mem, n, false);
		int rc = ms_engine_open(&f.eng, &o, &eb);
		ms_mem_fail_at(&f.mem, 0, false);
		if (rc == 0)
			break;
		failures++;
		assert_int_equal(rc, MS_ERR_NOMEM);
		assert_null(f.eng);
		if (!strstr(eb.msg, "out of memory"))
			fail_msg("allocation %llu: %s", (unsigned long long)n,
			         eb.msg);
		state_said += strstr(eb.msg, "engine: out of memory for its "
		                             "state (") != NULL;
		workers_said += strstr(eb.msg, "engine: out of memory for 1 "
		                               "worker (") != NULL;
	}
	assert_true(failures >= 2);
	assert_int_equal(state_said, 1);
	assert_int_equal(workers_said, 1);
	fx_close(&f);
}

/* Flip the bits `mask` of the byte at `at` of a file. */
static void
flip_byte(const char *path, off_t at, uint8_t mask)
{
	int fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	uint8_t b;
	assert_int_equal(pread(fd, &b, 1, at), 1);
	b ^= mask;
	assert_int_equal(pwrite(fd, &b, 1, at), 1);
	close(fd);
}

static void
corrupt_part(const char *dir, uint64_t id)
{
	char hex[17], p[4200];
	struct stat sb;
	ms_part_id_str(id, hex);
	snprintf(p, sizeof(p), "%s/parts/%s.core", dir, hex);
	int fd = open(p, O_RDWR);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &sb), 0);
	assert_true(sb.st_size > 64 + 160);
	/* The middle of the data section, whose size the footer (the last
	 * 160 bytes) holds at 96 (core/FORMAT.md). */
	uint8_t le[8];
	assert_int_equal(pread(fd, le, 8, sb.st_size - 160 + 96), 8);
	off_t data = 0;
	for (int i = 7; i >= 0; i--)
		data = data << 8 | le[i];
	close(fd);
	flip_byte(p, data / 2, 0x5a);
}

/* Eight parts, the fourth corrupt, a 5 ms backoff, each failure's event
 * taking event_ms: merge until idle; the corrupt part's ID. */
static uint64_t
quarantine_run(fixture *f, int event_ms)
{
	uint64_t ids[64];
	size_t n;
	fx_open(f, true, 2, 5);
	f->r.fail_event_ms = event_ms;
	for (int i = 0; i < 8; i++)
		publish_uniform(f->shard, 100 * (uint64_t)i, 20, 2000, true, T0,
		                NULL);
	view_ids(f->shard, ids, &n);
	corrupt_part(f->dir, ids[3]);
	ms_engine_trigger(f->eng);
	idle(f);
	return ids[3];
}

static void
test_quarantine_after_three_read_failures(void **state)
{
	(void)state;
	fixture f;
	uint64_t ids[64], q[4];
	size_t n;

	uint64_t bad = quarantine_run(&f, 0);
	assert_int_equal(f.r.failed, 3);
	assert_int_equal(f.r.backoff[0], 5);
	assert_int_equal(f.r.backoff[1], 10);
	assert_int_equal(f.r.backoff[2], 20);
	assert_int_equal(f.r.quarantined, 1);
	assert_int_equal(f.r.quarantined_id, bad);
	assert_int_equal(ms_engine_quarantined(f.eng, q, 4), 1);
	assert_int_equal(q[0], bad);
	assert_int_equal(f.r.done, 0);
	/* The shard still holds all eight; the picker (without the bad part)
	 * has seven, which is not enough. */
	view_ids(f.shard, ids, &n);
	assert_int_equal(n, 8);
	assert_int_equal(tmp_entries(f.dir), 0);

	/* An eighth good part: merged without the quarantined one. */
	publish_uniform(f.shard, 9000, 20, 2000, true, T0, NULL);
	ms_engine_trigger(f.eng);
	idle(&f);
	assert_int_equal(f.r.done, 1);
	view_ids(f.shard, ids, &n);
	assert_int_equal(n, 2);
	assert_true(ids[0] == bad || ids[1] == bad);
	fx_close(&f);
}

/* After a quarantine, a second corrupt part's failures start the backoff
 * again at its base step: each bad part costs its own three steps, not a
 * wait that grew with every part before it. */
static void
test_quarantine_restarts_backoff(void **state)
{
	(void)state;
	fixture f;
	uint64_t ids[64];
	size_t n;

	uint64_t bad = quarantine_run(&f, 0);
	assert_int_equal(f.r.failed, 3);
	assert_int_equal(f.r.quarantined, 1);
	/* A ninth part, corrupt too: the next merge takes it and fails. */
	publish_uniform(f.shard, 9000, 20, 2000, true, T0, NULL);
	view_ids(f.shard, ids, &n);
	uint64_t second = 0;
	for (size_t i = 0; i < n; i++)
		if (ids[i] > second)
			second = ids[i];
	assert_true(second != bad);
	corrupt_part(f.dir, second);
	ms_engine_trigger(f.eng);
	idle(&f);
	assert_int_equal(f.r.failed, 6);
	assert_int_equal(f.r.backoff[3], 5);
	assert_int_equal(f.r.backoff[4], 10);
	assert_int_equal(f.r.backoff[5], 20);
	assert_int_equal(f.r.quarantined, 2);
	assert_int_equal(f.r.done, 0);
	fx_close(&f);
}

/* The same, with each failure's event taking longer than the backoff: the
 * retry's pick runs while the failed merge still claims its inputs, and
 * must be done again once they are free (not taken for merge-idle). */
static void
test_quarantine_slow_failure_events(void **state)
{
	(void)state;
	fixture f;
	uint64_t bad = quarantine_run(&f, 30);
	assert_int_equal(f.r.failed, 3);
	assert_int_equal(f.r.quarantined, 1);
	assert_int_equal(f.r.quarantined_id, bad);
	assert_int_equal(f.r.done, 0);
	fx_close(&f);
}

/* An input the output writer refuses a trace of (trace IDs out of order,
 * say) fails its merge the same way every time: it is blamed, named and
 * quarantined at its third failure, as a corrupt input is, instead of
 * being retried with ever longer backoffs until the run's wait timed out.
 * The bound on the wait only makes the old behaviour fail sooner. */
static void
test_refused_input_quarantined(void **state)
{
	(void)state;
	fixture f;
	uint64_t ids[64];
	size_t n;
	char hex[17];

	fx_open(&f, true, 2, 5);
	for (int i = 0; i < 8; i++)
		publish_uniform(f.shard, 100 * (uint64_t)i, 20, 2000, true, T0,
		                NULL);
	view_ids(f.shard, ids, &n);
	pthread_mutex_lock(&f.r.mu);
	f.r.fail_block = 25; /* the second part's fifth trace */
	f.r.fail_err = MS_ERR_INVAL;
	pthread_mutex_unlock(&f.r.mu);
	ms_engine_trigger(f.eng);
	assert_int_equal(ms_engine_wait_idle(f.eng, 30 * SEC), 0);
	assert_int_equal(f.r.failed, 3);
	assert_int_equal(f.r.quarantined, 1);
	assert_int_equal(f.r.quarantined_id, ids[1]);
	assert_int_equal(f.r.engine_failed, 0);
	ms_part_id_str(ids[1], hex);
	assert_non_null(strstr(f.r.last_error, hex));
	assert_non_null(strstr(f.r.last_error, "at write"));
	/* Nothing lost: all eight parts still in the shard. */
	view_ids(f.shard, ids, &n);
	assert_int_equal(n, 8);
	assert_int_equal(tmp_entries(f.dir), 0);
	fx_close(&f);
}

/* Data refused with no input to blame (here at the start of the write
 * stage) fails the same way every time too: the third failure in a row
 * stops the engine, as a full disk does, rather than retrying forever. */
static void
test_unblamed_refusal_stops_engine(void **state)
{
	(void)state;
	fixture f;

	fx_open(&f, true, 2, 5);
	for (int i = 0; i < 8; i++)
		publish_uniform(f.shard, 100 * (uint64_t)i, 20, 200, false, T0,
		                NULL);
	pthread_mutex_lock(&f.r.mu);
	f.r.fail_writes = 1000;
	f.r.fail_err = MS_ERR_INVAL;
	pthread_mutex_unlock(&f.r.mu);
	ms_engine_trigger(f.eng);
	assert_int_equal(ms_engine_wait_idle(f.eng, 30 * SEC), MS_ERR_INVAL);
	rec_wait(&f.r, &f.r.engine_failed, 1);
	assert_int_equal(f.r.failed, 3);
	assert_int_equal(f.r.quarantined, 0);
	assert_non_null(strstr(f.r.last_error, "3 failures in a row"));
	fx_close(&f);
}

/* The finalize runs on the first fast worker, the thread that ran the
 * day's fast merges, not on the slow worker: the memory its allocator
 * kept from those merges serves the finalize instead of staying beside
 * it. */
static void
test_finalize_on_fast_worker(void **state)
{
	(void)state;
	fixture f;
	ms_errbuf eb;
	uint64_t seq;
	ms_ledger_set want;

	fx_open_chain(&f, "alwayskeep", false, 2, SEG_MIN, SEG_MAX);
	ms_ledger_set_init(&want);
	int64_t now = ms_clock_now(&f.clock);
	for (int i = 0; i < 8; i++)
		publish_uniform(f.shard, 100 * (uint64_t)i, 20, 200, false,
		                now - 3 * 3600 * SEC, &want);
	ms_engine_trigger(f.eng);
	idle(&f);
	assert_true(f.r.done >= 1);
	assert_int_equal(f.r.done_lane[0], MS_LANE_KIND_FAST);
	for (int i = 0; i < 2; i++)
		publish_uniform(f.shard, 5000 + 100 * (uint64_t)i, 10, 200,
		                false, now - 3 * 3600 * SEC, &want);
	size_t before = f.r.done;
	assert_int_equal(ms_engine_finalize(f.eng, &seq, &eb), 0);
	idle(&f);
	assert_int_equal(f.r.done, before + 1);
	assert_int_equal(f.r.done_lane[before], MS_LANE_KIND_FINALIZE);
	assert_true(pthread_equal(f.r.done_thread[0], f.r.done_thread[before]));
	fx_close(&f);
}

static bool
excluded_id(const void *arg, uint64_t id)
{
	return id == *(const uint64_t *)arg;
}

/* The candidate rule the engine and a frozen shard's re-pick share
 * (ms_pick_candidates): rows >= 1, not excluded by the caller, in view
 * order; a finalize keeps a part whose max_ts is exactly the frontier
 * and leaves one a nanosecond past it. */
static void
test_pick_candidates(void **state)
{
	(void)state;
	char dir[4096];
	ms_shard *s = shard_new(dir, sizeof(dir));
	uint64_t id[4];
	int64_t fr = T0 - 2 * 3600 * SEC;
	/* One-span parts 10 s apart, oldest first; their max_ts is read
	 * back from the view. */
	for (int i = 0; i < 4; i++)
		id[i] = publish_uniform(s, 10 * (uint64_t)i, 1, 100, false,
		                        fr - 10 * SEC * (3 - i), NULL);
	ms_view *v;
	assert_int_equal(ms_shard_view(s, &v, NULL), 0);
	int64_t mx[4];
	for (size_t i = 0; i < 4; i++)
		mx[i] = ms_part_get_meta(ms_view_part(v, i, MS_KIND_CORE))
		                ->max_ts;
	ms_pick_cand c[4];
	size_t vi[4];
	ms_pick_scope sc = { .excluded = excluded_id, .arg = &id[1] };
	assert_int_equal(ms_pick_candidates(v, &sc, c, vi), 3);
	assert_true(c[0].id == id[0] && c[1].id == id[2] && c[2].id == id[3]);
	assert_true(vi[0] == 0 && vi[1] == 2 && vi[2] == 3);
	assert_int_equal(c[1].rows, 1);
	sc = (ms_pick_scope){ .finalize = true, .frontier_ns = mx[2] };
	assert_int_equal(ms_pick_candidates(v, &sc, NULL, vi), 3);
	assert_true(vi[0] == 0 && vi[1] == 1 && vi[2] == 2);
	sc.frontier_ns = mx[2] - 1;
	assert_int_equal(ms_pick_candidates(v, &sc, c, NULL), 2);
	assert_true(c[0].id == id[0] && c[1].id == id[1]);
	ms_view_release(v);
	ms_shard_close(s);
	rm_rf(dir);
}

static void
test_finalize(void **state)
{
	(void)state;
	fixture f;
	ms_errbuf eb;
	uint64_t seq, ids[64];
	size_t n;
	ms_ledger_set want, got;

	fx_open_chain(&f, "alwayskeep", false, 2, SEG_MIN, SEG_MAX);
	ms_ledger_set_init(&want);
	int64_t now = ms_clock_now(&f.clock);
	/* Three mature parts (max_ts <= now - 2h) and two hot ones. */
	for (int i = 0; i < 3; i++)
		publish_uniform(f.shard, 100 * (uint64_t)i, 10, 200, false,
		                now - 3 * 3600 * SEC, &want);
	for (int i = 0; i < 2; i++)
		publish_uniform(f.shard, 1000 + 100 * (uint64_t)i, 10, 200,
		                false, now - 60 * SEC, &want);
	ms_engine_trigger(f.eng);
	idle(&f);
	assert_int_equal(f.r.done, 0);

	assert_int_equal(ms_engine_finalize(f.eng, &seq, &eb), 0);
	assert_true(seq != 0);
	idle(&f);
	assert_int_equal(f.r.done, 1);
	assert_int_equal(f.r.done_lane[0], MS_LANE_KIND_FINALIZE);
	assert_true(f.r.seen_finalize[0]);
	assert_int_equal(f.r.seen_n[0], 3);
	assert_int_equal(f.r.seen_mature[0], 3);
	assert_int_equal(f.r.seen_hot[0], 0);
	view_ids(f.shard, ids, &n);
	assert_int_equal(n, 3);
	shard_ledger(f.shard, &got);
	assert_true(ms_ledger_set_equal(&want, &got));

	/* Move past everything: the three remaining parts (the first
	 * output and the two formerly hot parts) become one. */
	ms_clock_advance(&f.clock, 3 * 3600 * SEC);
	assert_int_equal(ms_engine_finalize(f.eng, &seq, &eb), 0);
	idle(&f);
	view_ids(f.shard, ids, &n);
	assert_int_equal(n, 1);
	/* A single mature part is rewritten alone. */
	assert_int_equal(ms_engine_finalize(f.eng, &seq, &eb), 0);
	assert_true(seq != 0);
	idle(&f);
	assert_int_equal(f.r.done, 3);
	assert_int_equal(f.r.seen_n[2], 1);
	uint64_t before = ids[0];
	view_ids(f.shard, ids, &n);
	assert_int_equal(n, 1);
	assert_true(ids[0] != before);
	shard_ledger(f.shard, &got);
	assert_true(ms_ledger_set_equal(&want, &got));
	/* Nothing mature: nothing dispatched. */
	ms_clock_advance(&f.clock, -10 * 3600 * SEC);
	assert_int_equal(ms_engine_finalize(f.eng, &seq, &eb), 0);
	assert_int_equal(seq, 0);
	fx_close(&f);
}

/* The finalize takes its inputs in the order they entered the
 * inventory, as the reference walks its snapshot's parts: a merge output
 * that entered before a raw part of a lower ID (an ID reserved before
 * the merge, as the replay's parts are staged before the day) comes
 * before it, not in ID order. */
static void
test_finalize_entry_order(void **state)
{
	(void)state;
	fixture f;
	ms_errbuf eb;
	uint64_t seq, ids[64], x, out;
	size_t n;
	ms_ledger_set want, got;

	fx_open_chain(&f, "alwayskeep", false, 2, SEG_MIN, SEG_MAX);
	ms_ledger_set_init(&want);
	int64_t old = ms_clock_now(&f.clock) - 3 * 3600 * SEC;
	for (int i = 0; i < 8; i++)
		publish_uniform(f.shard, 100 * (uint64_t)i, 10, 200, false,
		                old, &want);
	assert_int_equal(ms_shard_new_id(f.shard, &x, &eb), 0);
	ms_engine_trigger(f.eng);
	idle(&f);
	assert_int_equal(f.r.done, 1);
	view_ids(f.shard, ids, &n);
	assert_int_equal(n, 1);
	out = ids[0];
	assert_true(x < out);
	/* x enters after the merge's output; c after both. */
	publish_uniform_as(f.shard, x, 900, 10, 200, false, old, &want);
	uint64_t c = publish_uniform(f.shard, 1000, 10, 200, false, old,
	                             &want);
	ms_engine_trigger(f.eng); /* three parts: nothing to pick */
	idle(&f);
	char ck[300];
	snprintf(ck, sizeof(ck), "%s.ck", f.dir);
	assert_int_equal(ms_checkpoint_take(ck, f.shard, f.eng, NULL, 0, &eb),
	                 0);
	ms_engine_stats st1, st2;
	for (int round = 0; round < 2; round++) {
		memset(f.r.fin_in, 0, sizeof(f.r.fin_in));
		assert_int_equal(ms_engine_finalize(f.eng, &seq, &eb), 0);
		assert_true(seq != 0);
		idle(&f);
		assert_int_equal(f.r.done, 2 + (size_t)round);
		assert_true(f.r.seen_finalize[1 + round]);
		assert_int_equal(f.r.seen_n[1 + round], 3);
		assert_int_equal(f.r.fin_in[0], out);
		assert_int_equal(f.r.fin_in[1], x);
		assert_int_equal(f.r.fin_in[2], c);
		shard_ledger(f.shard, &got);
		assert_true(ms_ledger_set_equal(&want, &got));
		ms_engine_get_stats(f.eng, round ? &st2 : &st1);
		if (round)
			break;
		/* A seek: the checkpoint restored and the shard reopened
		 * keep the order, so the re-run's fingerprint is the same. */
		ms_checkpoint cp;
		ms_engine_close(f.eng);
		ms_shard_close(f.shard);
		/* Its syncs are counted as the shard counts its own: the
		 * parts/ directory, the new snapshot and the shard
		 * directory (this shard has no dicts/). */
		ms_io io = { 0 };
		assert_int_equal(ms_checkpoint_restore(ck, f.dir, &cp, &io, &eb),
		                 0);
		assert_int_equal(atomic_load(&io.fsyncs), 3);
		ms_shard_opts so = { .dir = f.dir };
		assert_int_equal(ms_shard_open(&f.shard, &so, &eb), 0);
		fx_engine(&f, false, 2, 10, &cp.engine);
		ms_checkpoint_release(&cp);
	}
	assert_true(st1.fingerprint == st2.fingerprint);
	assert_int_equal(ms_checkpoint_remove(ck, &eb), 0);
	fx_close(&f);
}

/* fx_open_pipeline with a segment of T0 -+ 10 h (known) or none, and
 * nparts parts of `traces` traces each, 3 h older than the clock. */
static void
fx_open_mature(fixture *f, bool known, int nparts, size_t traces)
{
	fx_open_pipeline(f, known ? SEG_MIN : 0, known ? SEG_MAX : 0);
	int64_t now = ms_clock_now(&f->clock);
	for (int i = 0; i < nparts; i++)
		publish_uniform(f->shard, 100 * (uint64_t)i, traces, 200, false,
		                now - 3 * 3600 * SEC, NULL);
}

/* The engine predicts at dispatch what the merge decides when it starts,
 * with the merge's own rule (ms_sampling_predict): a pipeline without a
 * segment known can set up no fragment guard, so the merge runs unsampled
 * (not_executed, guard_unavailable) and the dispatch says so; it used to
 * predict executed. With a segment both say executed. */
static void
test_predict_matches_merge(void **state)
{
	(void)state;
	for (int known = 0; known < 2; known++) {
		fixture f;
		fx_open_mature(&f, known, 8, 20);
		ms_engine_trigger(f.eng);
		idle(&f);
		assert_true(f.r.done >= 1);
		for (size_t i = 0; i < f.r.done; i++) {
			uint64_t seq = f.r.done_seq[i];
			assert_true(seq < MAXREC);
			assert_int_equal(f.r.pred_class[seq],
			                 known ? MS_SAMPLING_EXECUTED
			                       : MS_SAMPLING_NOT_EXECUTED);
			assert_int_equal(f.r.pred_reason[seq],
			                 known ? MS_SREASON_NONE
			                       : MS_SREASON_GUARD_UNAVAILABLE);
			assert_int_equal(f.r.res_class[seq],
			                 f.r.pred_class[seq]);
			assert_int_equal(f.r.res_reason[seq],
			                 f.r.pred_reason[seq]);
		}
		fx_close(&f);
	}
}

/* As in the reference, a finalize whose fragment guard cannot be set up
 * (a pipeline and no segment known) is skipped, not run unsampled: no
 * dispatch, no merge, every part in place, and the engine's stats count
 * it with the reason guard_unavailable. With a segment the same finalize
 * runs and samples, as its dispatch predicted. */
static void
test_finalize_skipped_without_segment(void **state)
{
	(void)state;
	for (int known = 0; known < 2; known++) {
		fixture f;
		ms_errbuf eb;
		uint64_t seq, ids[64], before[64];
		size_t n, nbefore;
		ms_engine_stats st;
		fx_open_mature(&f, known, 3, 10);
		ms_engine_trigger(f.eng);
		idle(&f);
		assert_int_equal(f.r.done, 0);
		view_ids(f.shard, before, &nbefore);
		assert_int_equal(nbefore, 3);

		assert_int_equal(ms_engine_finalize(f.eng, &seq, &eb), 0);
		idle(&f);
		ms_engine_get_stats(f.eng, &st);
		view_ids(f.shard, ids, &n);
		if (!known) {
			assert_int_equal(seq, 0);
			assert_int_equal(f.r.nseen, 0);
			assert_int_equal(f.r.done, 0);
			assert_int_equal(st.selections, 0);
			assert_int_equal(st.finalize_skipped, 1);
			assert_int_equal(st.finalize_skip_reason,
			                 MS_SREASON_GUARD_UNAVAILABLE);
			assert_int_equal(n, nbefore);
			assert_memory_equal(ids, before, n * sizeof(ids[0]));
		} else {
			assert_true(seq != 0 && seq < MAXREC);
			assert_int_equal(f.r.done, 1);
			assert_true(f.r.seen_finalize[0]);
			assert_int_equal(st.finalize_skipped, 0);
			assert_int_equal(st.finalize_skip_reason,
			                 MS_SREASON_NONE);
			assert_int_equal(f.r.pred_class[seq],
			                 MS_SAMPLING_EXECUTED);
			assert_int_equal(f.r.res_class[seq],
			                 MS_SAMPLING_EXECUTED);
			assert_int_equal(n, 1);
		}
		fx_close(&f);
	}
}

/* Three mature parts (3 h older than the clock) in an engine with the
 * chain spec, or with no pipeline at all when spec is NULL. */
static void
fx_open_mature_chain(fixture *f, const char *spec, int nparts)
{
	if (spec)
		fx_open_chain(f, spec, true, 1, SEG_MIN, SEG_MAX);
	else
		fx_open(f, true, 1, 10);
	int64_t now = ms_clock_now(&f->clock);
	for (int i = 0; i < nparts; i++)
		publish_uniform(f->shard, 100 * (uint64_t)i, 10, 200, false,
		                now - 3 * 3600 * SEC, NULL);
}

/* The finalize of f is skipped: no dispatch, no merge, every part in
 * place, counted once with reason r. */
static void
assert_finalize_skipped(fixture *f, enum ms_sampling_reason r)
{
	uint64_t seq = 1, ids[64], before[64];
	size_t n, nbefore;
	ms_errbuf eb;
	ms_engine_stats st;

	view_ids(f->shard, before, &nbefore);
	assert_int_equal(ms_engine_finalize(f->eng, &seq, &eb), 0);
	idle(f);
	ms_engine_get_stats(f->eng, &st);
	view_ids(f->shard, ids, &n);
	assert_int_equal(seq, 0);
	assert_int_equal(f->r.nseen, 0);
	assert_int_equal(f->r.done, 0);
	assert_int_equal(st.selections, 0);
	assert_int_equal(st.finalize_skipped, 1);
	assert_int_equal(st.finalize_skip_reason, r);
	assert_int_equal(n, nbefore);
	assert_memory_equal(ids, before, n * sizeof(ids[0]));
}

/* As in the reference (no finalize round without a sampler), a finalize
 * with no pipeline or a pipeline of no link is skipped, not run
 * unsampled rewriting every mature part; it used to dispatch. */
static void
test_finalize_skipped_without_sampler(void **state)
{
	(void)state;
	const char *specs[] = { NULL, "disabled" };
	const enum ms_sampling_reason want[] = {
		MS_SREASON_PIPELINE_DISABLED, MS_SREASON_NO_SAMPLER
	};
	for (size_t k = 0; k < 2; k++) {
		fixture f;
		ms_engine_stats st;
		fx_open_mature_chain(&f, specs[k], 3);
		ms_engine_trigger(f.eng);
		idle(&f);
		assert_finalize_skipped(&f, want[k]);
		ms_engine_get_stats(f.eng, &st);
		assert_int_equal(st.finalize_skip_need, 0);
		fx_close(&f);
	}
}

/* As the reference's disk-headroom gate: a finalize whose selection's
 * bytes exceed the free disk is skipped (counted with both figures), not
 * run into a full disk; with just enough free it runs. It used to
 * dispatch and run whatever the free disk. */
static void
test_finalize_skipped_without_disk(void **state)
{
	(void)state;
	fixture f;
	uint64_t free_b = UINT64_MAX, need = 0, seq;
	ms_errbuf eb;
	ms_engine_stats st;

	fx_open_mature_chain(&f, "alwayskeep", 0);
	ms_engine_close(f.eng);
	f.free_disk = on_free_disk_fixed;
	f.free_disk_arg = &free_b;
	fx_engine(&f, true, 1, 10, NULL);
	int64_t now = ms_clock_now(&f.clock);
	for (int i = 0; i < 3; i++)
		publish_uniform(f.shard, 100 * (uint64_t)i, 10, 200, false,
		                now - 3 * 3600 * SEC, NULL);
	ms_view *v = NULL;
	assert_int_equal(ms_shard_view(f.shard, &v, &eb), 0);
	for (size_t i = 0; i < ms_view_count(v); i++)
		need += ms_part_get_meta(ms_view_part(v, i, MS_KIND_CORE))
		                ->compressed_bytes;
	ms_view_release(v);
	__atomic_store_n(&free_b, need - 1, __ATOMIC_SEQ_CST);
	assert_finalize_skipped(&f, MS_SREASON_NONE);
	ms_engine_get_stats(f.eng, &st);
	assert_int_equal(st.finalize_skip_need, need);
	assert_int_equal(st.finalize_skip_free, need - 1);

	__atomic_store_n(&free_b, need, __ATOMIC_SEQ_CST);
	assert_int_equal(ms_engine_finalize(f.eng, &seq, &eb), 0);
	assert_true(seq != 0);
	idle(&f);
	assert_int_equal(f.r.done, 1);
	assert_true(f.r.seen_finalize[0]);
	ms_engine_get_stats(f.eng, &st);
	assert_int_equal(st.finalize_skipped, 1);
	fx_close(&f);
}

/* An engine with the chain spec (NULL: no pipeline) over the segment
 * [seg_min, seg_max] (both 0: none known), its free disk read from
 * *free_b, and three mature parts; *need is their compressed bytes. */
static void
fx_open_mature_disk(fixture *f, const char *spec, int64_t seg_min,
                    int64_t seg_max, uint64_t *free_b, uint64_t *need)
{
	ms_errbuf eb;
	if (spec) {
		fx_open_chain(f, spec, true, 1, seg_min, seg_max);
		ms_engine_close(f->eng);
	} else {
		fx_init(f);
	}
	f->free_disk = on_free_disk_fixed;
	f->free_disk_arg = free_b;
	fx_engine(f, true, 1, 10, NULL);
	int64_t now = ms_clock_now(&f->clock);
	for (int i = 0; i < 3; i++)
		publish_uniform(f->shard, 100 * (uint64_t)i, 10, 200, false,
		                now - 3 * 3600 * SEC, NULL);
	ms_view *v = NULL;
	assert_int_equal(ms_shard_view(f->shard, &v, &eb), 0);
	*need = 0;
	for (size_t i = 0; i < ms_view_count(v); i++)
		*need += ms_part_get_meta(ms_view_part(v, i, MS_KIND_CORE))
		                 ->compressed_bytes;
	ms_view_release(v);
}

/* When two skip rules apply, the reason recorded is the one the
 * reference checks first (finalizer.go runFinalizeRoundNamed: samplers,
 * then disk headroom, then the fragment guard): no pipeline or no
 * sampler beats a short disk, and a short disk beats a guard that cannot
 * be set up (no segment known). The guard's rule used to be checked
 * before the disk, so the last case read guard_unavailable. */
static void
test_finalize_skip_reason_order(void **state)
{
	(void)state;
	const struct {
		const char *spec;
		int64_t seg_min, seg_max;
		enum ms_sampling_reason want;
		bool disk;
	} c[] = {
		{ NULL, SEG_MIN, SEG_MAX, MS_SREASON_PIPELINE_DISABLED, false },
		{ "disabled", SEG_MIN, SEG_MAX, MS_SREASON_NO_SAMPLER, false },
		{ "alwayskeep", 0, 0, MS_SREASON_NONE, true },
	};
	for (size_t k = 0; k < sizeof(c) / sizeof(c[0]); k++) {
		fixture f;
		uint64_t free_b = UINT64_MAX, need;
		ms_engine_stats st;
		fx_open_mature_disk(&f, c[k].spec, c[k].seg_min, c[k].seg_max,
		                    &free_b, &need);
		__atomic_store_n(&free_b, need - 1, __ATOMIC_SEQ_CST);
		assert_finalize_skipped(&f, c[k].want);
		ms_engine_get_stats(f.eng, &st);
		assert_int_equal(st.finalize_skip_need, c[k].disk ? need : 0);
		assert_int_equal(st.finalize_skip_free,
		                 c[k].disk ? need - 1 : 0);
		fx_close(&f);
	}
}

/* The random publications of the sequence tests: a generator state that
 * a checkpoint can carry (its caller blob). */
typedef struct gen {
	uint64_t x, next_trace;
} gen;

/* Publication `pub` of the sequence: a small random part at minute pub,
 * introduced with the clock there, its rows added to *want (may be
 * NULL); then the engine is triggered and waited for. */
static void
publish_random(fixture *f, int pub, gen *g, ms_ledger_set *want)
{
	rowset rs = { 0 };
	g->x = mix(g->x);
	size_t traces = 1 + g->x % 6;
	int64_t ts = T0 + (int64_t)pub * 60 * SEC;
	for (size_t t = 0; t < traces; t++) {
		g->x = mix(g->x);
		/* Some traces continue an earlier one (fragments). */
		uint64_t tr = (g->x % 5 == 0 && g->next_trace > 10)
		                      ? g->next_trace - 1 - (g->x >> 8) % 10
		                      : g->next_trace++;
		size_t spans = 1 + (g->x >> 16) % 4;
		for (size_t k = 0; k < spans; k++) {
			g->x = mix(g->x);
			rs_add(&rs, tr, (uint64_t)pub * 10 + k,
			       ts + (int64_t)(g->x % SEC),
			       (uint32_t)(20 + g->x % 3000), g->x % 3 == 0);
		}
	}
	if (want)
		rs_ledger(&rs, want);
	ms_clock_set(&f->clock, ts);
	publish(f->shard, &rs);
	rs_free(&rs);
	ms_engine_trigger(f->eng);
	idle(f);
}

/*
 * 500 small random parts introduced one by one, idle after each. Returns
 * the engine's selection fingerprint; fills the final and expected ledgers.
 */
static uint64_t
run_sequence(bool serial, unsigned cpus, ms_ledger_set *final,
             ms_ledger_set *want, uint64_t *merges)
{
	fixture f;
	gen g = { .x = 12345, .next_trace = 1 };

	fx_open(&f, serial, cpus, 10);
	ms_ledger_set_init(want);
	for (int pub = 0; pub < 500; pub++)
		publish_random(&f, pub, &g, want);
	ms_engine_stats st;
	ms_engine_get_stats(f.eng, &st);
	shard_ledger(f.shard, final);
	assert_int_equal(st.merges_failed, 0);
	assert_int_equal(f.r.done, st.merges_done);
	assert_int_equal(picker_now(f.shard), 0);
	*merges = st.merges_done;
	fx_close(&f);
	return st.fingerprint;
}

static void
test_sequence_500_deterministic(void **state)
{
	(void)state;
	ms_ledger_set fin[4], want[4];
	uint64_t fp[4], merges[4];

	fp[0] = run_sequence(true, 2, &fin[0], &want[0], &merges[0]);
	fp[1] = run_sequence(true, 2, &fin[1], &want[1], &merges[1]);
	fp[2] = run_sequence(false, 2, &fin[2], &want[2], &merges[2]);
	/* Two fast workers: merges of one drain may overlap and finish in
	 * any order, so only the ledgers must agree. */
	fp[3] = run_sequence(false, 4, &fin[3], &want[3], &merges[3]);
	print_message("500 publications: %llu merges, fingerprint "
	              "%016llx\n",
	              (unsigned long long)merges[0], (unsigned long long)fp[0]);
	assert_true(merges[0] > 20);
	assert_true(fp[0] == fp[1]);
	/* One worker per lane and small parts: lane mode follows the same
	 * trajectory. */
	assert_true(fp[0] == fp[2]);
	for (int i = 0; i < 4; i++) {
		assert_true(ms_ledger_set_equal(&fin[i], &want[i]));
		assert_true(ms_ledger_set_equal(&fin[i], &fin[0]));
	}
}

/* The job-state table (engine.c design 2) allows exactly the moves the
 * design lists; debug builds check every move against it. */
static void
test_job_state_table(void **state)
{
	(void)state;
	static const char *const moves[] = {
		"hook>inhook",    "inhook>held",    "inhook>queued",
		"inhook>ending",  "held>queued",    "held>ending",
		"queued>running", "running>ending",
	};
	int n = ms__engine_job_states();
	assert_int_equal(n, 6);
	assert_null(ms__engine_job_state_name(n));
	assert_null(ms__engine_job_state_name(-1));
	size_t allowed = 0;
	for (int a = 0; a < n; a++)
		for (int b = 0; b < n; b++) {
			char mv[40];
			snprintf(mv, sizeof(mv), "%s>%s",
			         ms__engine_job_state_name(a),
			         ms__engine_job_state_name(b));
			bool want = false;
			for (size_t k = 0; k < sizeof(moves) / sizeof(moves[0]);
			     k++)
				want = want || !strcmp(moves[k], mv);
			if (ms__engine_job_move_ok(a, b) != want)
				fail_msg("move %s: table says %d", mv, !want);
			allowed += want;
		}
	assert_int_equal(allowed, sizeof(moves) / sizeof(moves[0]));
	assert_false(ms__engine_job_move_ok(0, n));
}

/* ---- checkpoints (ms_checkpoint.h) ------------------------------------ */

/* Where a sequence stood at one publication point. */
typedef struct seq_end {
	ms_engine_stats st;
	uint64_t ids[256];
	size_t nids;
	ms_ledger_set led;
} seq_end;

static void
seq_end_take(fixture *f, seq_end *e)
{
	ms_engine_get_stats(f->eng, &e->st);
	view_ids(f->shard, e->ids, &e->nids);
	shard_ledger(f->shard, &e->led);
}

static void
seq_end_equal(const seq_end *a, const seq_end *b)
{
	assert_true(a->st.fingerprint == b->st.fingerprint);
	assert_int_equal(a->st.selections, b->st.selections);
	assert_int_equal(a->st.merges_done, b->st.merges_done);
	assert_int_equal(a->st.picker_runs, b->st.picker_runs);
	assert_int_equal(a->nids, b->nids);
	assert_memory_equal(a->ids, b->ids, a->nids * sizeof(a->ids[0]));
	assert_true(ms_ledger_set_equal(&a->led, &b->led));
}

static void
ck_take(fixture *f, const char *dir, int pub, const gen *g)
{
	ms_errbuf eb;
	struct {
		int pub;
		gen g;
	} blob = { pub, *g };
	if (ms_checkpoint_take(dir, f->shard, f->eng, &blob, sizeof(blob),
	                       &eb) != 0)
		fail_msg("checkpoint at %d: %s", pub, eb.msg);
}

/* Reopen f's shard, restored to checkpoint c, and its engine with c's
 * engine state; returns the publication c was taken after and the
 * generator state then. c is released. */
static int
ck_reopen(fixture *f, ms_checkpoint *c, gen *g)
{
	ms_errbuf eb;
	ms_shard_opts so = { .dir = f->dir };
	if (ms_shard_open(&f->shard, &so, &eb) != 0)
		fail_msg("reopen: %s", eb.msg);
	assert_int_equal(ms_shard_epoch(f->shard), c->epoch);
	fx_engine(f, true, 2, 10, &c->engine);
	struct {
		int pub;
		gen g;
	} blob;
	assert_int_equal(c->user_len, sizeof(blob));
	memcpy(&blob, c->user, sizeof(blob));
	ms_engine_stats st;
	ms_engine_get_stats(f->eng, &st);
	assert_true(st.fingerprint == c->engine.fingerprint);
	assert_int_equal(st.selections, c->engine.selections);
	ms_checkpoint_release(c);
	*g = blob.g;
	return blob.pub;
}

/* Close f's engine and shard, restore checkpoint dir (`times` times in a
 * row: restoring again is harmless, as after a crash in the tidying),
 * reopen both with the saved engine state (ck_reopen). */
static int
ck_restore(fixture *f, const char *dir, int times, gen *g)
{
	ms_errbuf eb;
	ms_checkpoint c;
	ms_engine_close(f->eng);
	ms_shard_close(f->shard);
	for (int i = 0; i < times; i++) {
		if (i)
			ms_checkpoint_release(&c);
		if (ms_checkpoint_restore(dir, f->dir, &c, NULL, &eb) != 0)
			fail_msg("restore %s: %s", dir, eb.msg);
		assert_int_equal(c.leftovers, 0);
	}
	int pub = ck_reopen(f, &c, g);
	/* Nothing the checkpoint did not list was left for recovery. */
	assert_string_equal(ms_shard_recovery_note(f->shard), "");
	return pub;
}

/*
 * 120 publications with checkpoints after publications 40 and 80; then
 * restoring either and publishing the rest again reaches the same
 * selection fingerprint, counters, active part IDs and ledgers as the
 * original run (the engine resumes exactly where it stood); removing a
 * checkpoint leaves the shard intact.
 */
static void
test_checkpoint_restore_same_fingerprint(void **state)
{
	(void)state;
	fixture f;
	gen g = { .x = 777, .next_trace = 1 };
	char ck[2][300];
	seq_end orig, again, at40;
	fx_open(&f, true, 2, 10);
	snprintf(ck[0], sizeof(ck[0]), "%s.ck40", f.dir);
	snprintf(ck[1], sizeof(ck[1]), "%s.ck80", f.dir);
	for (int pub = 0; pub < 120; pub++) {
		publish_random(&f, pub, &g, NULL);
		if (pub == 40) {
			seq_end_take(&f, &at40);
			ck_take(&f, ck[0], pub, &g);
		}
		if (pub == 80)
			ck_take(&f, ck[1], pub, &g);
	}
	seq_end_take(&f, &orig);
	assert_true(orig.st.merges_done > at40.st.merges_done);
	for (int round = 0; round < 3; round++) {
		/* 40, 80, then 40 again after a later checkpoint. */
		const char *dir = ck[round == 1];
		int from = ck_restore(&f, dir, round == 2 ? 2 : 1, &g);
		assert_int_equal(from, round == 1 ? 80 : 40);
		if (from == 40) {
			seq_end_take(&f, &again);
			seq_end_equal(&again, &at40);
		}
		for (int pub = from + 1; pub < 120; pub++)
			publish_random(&f, pub, &g, NULL);
		seq_end_take(&f, &again);
		seq_end_equal(&again, &orig);
	}
	for (int i = 0; i < 2; i++) {
		assert_int_equal(ms_checkpoint_remove(ck[i], NULL), 0);
		assert_false(ms_fs_is_dir(ck[i]));
	}
	/* The shard still holds every part it lists. */
	ms_shard_close(f.shard);
	ms_errbuf eb;
	ms_shard_opts so = { .dir = f.dir };
	if (ms_shard_open(&f.shard, &so, &eb) != 0)
		fail_msg("reopen after removal: %s", eb.msg);
	fx_close(&f);
}

/* A checkpoint is taken only at merge-idle: with a publication the engine
 * has not picked on, it is refused and nothing is left behind. */
static void
test_checkpoint_refused_unless_idle(void **state)
{
	(void)state;
	fixture f;
	gen g = { .x = 5, .next_trace = 1 };
	char ck[300];
	ms_errbuf eb;
	fx_open(&f, true, 2, 10);
	snprintf(ck, sizeof(ck), "%s.ck", f.dir);
	publish_random(&f, 0, &g, NULL);
	publish_uniform(f.shard, 1000, 3, 50, false, T0, NULL);
	assert_int_equal(ms_checkpoint_take(ck, f.shard, f.eng, NULL, 0, &eb),
	                 MS_ERR_STATE);
	assert_non_null(strstr(eb.msg, "merge-idle"));
	assert_false(ms_fs_is_dir(ck));
	idle(&f);
	assert_int_equal(ms_checkpoint_take(ck, f.shard, f.eng, NULL, 0, &eb),
	                 0);
	assert_int_equal(ms_checkpoint_take(ck, f.shard, f.eng, NULL, 0, &eb),
	                 MS_ERR_EXISTS);
	assert_int_equal(ms_checkpoint_remove(ck, NULL), 0);
	fx_close(&f);
}

/* Reopen f's shard and engine after a restore that failed before its
 * commit: the shard is at epoch with the parts of *before, as it was. */
static void
reopen_unchanged(fixture *f, uint64_t epoch, const seq_end *before)
{
	ms_errbuf eb;
	seq_end after;
	ms_shard_opts so = { .dir = f->dir };
	if (ms_shard_open(&f->shard, &so, &eb) != 0)
		fail_msg("reopen: %s", eb.msg);
	assert_int_equal(ms_shard_epoch(f->shard), epoch);
	fx_engine(f, true, 2, 10, NULL);
	view_ids(f->shard, after.ids, &after.nids);
	assert_int_equal(after.nids, before->nids);
	assert_memory_equal(after.ids, before->ids,
	                    before->nids * sizeof(before->ids[0]));
}

/* A damaged checkpoint (its state's checksum, or a part file gone) is
 * refused with an error naming the file, and the shard is left as it
 * was: it reopens at the same epoch with the same parts. */
static void
test_checkpoint_bad_restore_leaves_shard(void **state)
{
	(void)state;
	fixture f;
	gen g = { .x = 99, .next_trace = 1 };
	char ck[300], p[400];
	ms_errbuf eb;
	ms_checkpoint c;
	seq_end before;
	fx_open(&f, true, 2, 10);
	snprintf(ck, sizeof(ck), "%s.ck", f.dir);
	for (int pub = 0; pub < 30; pub++) {
		publish_random(&f, pub, &g, NULL);
		if (pub == 10)
			ck_take(&f, ck, pub, &g);
	}
	seq_end_take(&f, &before);
	uint64_t epoch = ms_shard_epoch(f.shard);
	ms_engine_close(f.eng);
	ms_shard_close(f.shard);
	snprintf(p, sizeof(p), "%s/state", ck);
	flip_byte(p, 20, 0x40);
	assert_int_equal(ms_checkpoint_restore(ck, f.dir, &c, NULL, &eb),
	                 MS_ERR_CORRUPT);
	assert_non_null(strstr(eb.msg, p));
	flip_byte(p, 20, 0x40);
	assert_int_equal(ms_checkpoint_read(ck, &c, &eb), 0);
	snprintf(p, sizeof(p), "%s/parts/%016llx.latency", ck,
	         (unsigned long long)c.parts[0]);
	ms_checkpoint_release(&c);
	assert_int_equal(unlink(p), 0);
	assert_int_equal(ms_checkpoint_restore(ck, f.dir, &c, NULL, &eb),
	                 MS_ERR_NOTFOUND);
	assert_non_null(strstr(eb.msg, p));
	reopen_unchanged(&f, epoch, &before);
	assert_string_equal(ms_shard_recovery_note(f.shard), "");
	assert_int_equal(ms_checkpoint_remove(ck, NULL), 0);
	fx_close(&f);
}

/*
 * Once its snapshot is committed the shard is the checkpoint's: an entry
 * the tidying after the commit cannot remove (a part-named tree in
 * parts/ deeper than removal descends) does not fail the restore. It is
 * counted and named, the rest is still tidied (tmp/ emptied), nothing
 * the checkpoint lists is lost, and the reopened shard re-runs to the
 * same fingerprint, part IDs and ledgers as the first pass.
 */
static void
test_checkpoint_restore_leftover_after_commit(void **state)
{
	(void)state;
	fixture f;
	gen g = { .x = 4242, .next_trace = 1 };
	char ck[300], deep[400], junk[400];
	seq_end at40, orig, again;
	ms_errbuf eb;
	ms_checkpoint c;
	fx_open(&f, true, 2, 10);
	snprintf(ck, sizeof(ck), "%s.ck", f.dir);
	for (int pub = 0; pub < 70; pub++) {
		publish_random(&f, pub, &g, NULL);
		if (pub == 40) {
			seq_end_take(&f, &at40);
			ck_take(&f, ck, pub, &g);
		}
	}
	seq_end_take(&f, &orig);
	ms_engine_close(f.eng);
	ms_shard_close(f.shard);
	/* An ID the checkpoint does not list, below its counter, so a
	 * reopen does not count it into the IDs it hands out. */
	assert_int_equal(ms_checkpoint_read(ck, &c, &eb), 0);
	uint64_t id = 1;
	for (size_t i = 0; i < c.nparts && c.parts[i] <= id; i++)
		if (c.parts[i] == id)
			id++;
	assert_true(at40.st.merges_done > 0 && id < c.next_id);
	ms_checkpoint_release(&c);
	snprintf(deep, sizeof(deep), "%s/parts/%016llx.core", f.dir,
	         (unsigned long long)id);
	assert_int_equal(ms_test_deep_tree(deep, MS_FS_MAX_DEPTH + 2, true), 0);
	snprintf(junk, sizeof(junk), "%s/tmp/junk", f.dir);
	int fd = open(junk, O_WRONLY | O_CREAT | O_EXCL, 0644);
	assert_true(fd >= 0);
	close(fd);

	if (ms_checkpoint_restore(ck, f.dir, &c, NULL, &eb) != 0)
		fail_msg("restore with a leftover: %s", eb.msg);
	assert_int_equal(c.leftovers, 1);
	assert_non_null(strstr(c.leftover.msg, deep));
	assert_false(ms_fs_is_file(junk));

	assert_int_equal(ck_reopen(&f, &c, &g), 40);
	/* The reopened shard could not remove it either, and says so. */
	assert_non_null(strstr(ms_shard_recovery_note(f.shard),
	                       "1 could not be removed"));
	seq_end_take(&f, &again);
	seq_end_equal(&again, &at40);
	for (int pub = 41; pub < 70; pub++)
		publish_random(&f, pub, &g, NULL);
	seq_end_take(&f, &again);
	seq_end_equal(&again, &orig);
	assert_int_equal(ms_test_deep_tree(deep, MS_FS_MAX_DEPTH + 2, false),
	                 0);
	assert_int_equal(ms_checkpoint_remove(ck, NULL), 0);
	fx_close(&f);
}

/* Run fn(arg) with the process's file size limit at `bytes`: a write
 * past it fails with EFBIG, as one on a full disk fails with ENOSPC. */
static int
with_file_limit(rlim_t bytes, int (*fn)(void *arg), void *arg)
{
	struct rlimit old, lim;
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, SIG_IGN);
	lim = old;
	lim.rlim_cur = bytes;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	int rc = fn(arg);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	return rc;
}

typedef struct ck_call {
	fixture *f;
	const char *dir;
	ms_checkpoint c;
	ms_errbuf eb;
} ck_call;

static int
ck_call_take(void *arg)
{
	ck_call *a = arg;
	return ms_checkpoint_take(a->dir, a->f->shard, a->f->eng, NULL, 0,
	                          &a->eb);
}

static int
ck_call_restore(void *arg)
{
	ck_call *a = arg;
	return ms_checkpoint_restore(a->dir, a->f->dir, &a->c, NULL, &a->eb);
}

/*
 * A checkpoint's write that the file system refuses (a file size limit:
 * EFBIG, as ENOSPC on a full disk) is an error naming the file and the
 * system's reason. A take leaves nothing behind; a restore fails before
 * its commit (writing the shard's tmp/snapshot.new) and the shard reopens
 * as it was. Without the limit both work.
 */
static void
test_checkpoint_write_refused(void **state)
{
	(void)state;
	fixture f;
	gen g = { .x = 31, .next_trace = 1 };
	char ck[300], p[400];
	seq_end before;
	fx_open(&f, true, 2, 10);
	snprintf(ck, sizeof(ck), "%s.ck", f.dir);
	for (int pub = 0; pub < 40; pub++)
		publish_random(&f, pub, &g, NULL);
	ck_call a = { .f = &f, .dir = ck };
	assert_int_equal(with_file_limit(64, ck_call_take, &a), MS_ERR_IO);
	snprintf(p, sizeof(p), "%s/snapshot: write: %s", ck, strerror(EFBIG));
	assert_non_null(strstr(a.eb.msg, p));
	assert_false(ms_fs_is_dir(ck));

	ck_take(&f, ck, 39, &g);
	for (int pub = 40; pub < 80; pub++)
		publish_random(&f, pub, &g, NULL);
	seq_end_take(&f, &before);
	uint64_t epoch = ms_shard_epoch(f.shard);
	ms_engine_close(f.eng);
	ms_shard_close(f.shard);
	assert_int_equal(with_file_limit(64, ck_call_restore, &a), MS_ERR_IO);
	snprintf(p, sizeof(p), "%s/tmp/snapshot.new: write: %s", f.dir,
	         strerror(EFBIG));
	assert_non_null(strstr(a.eb.msg, p));
	assert_null(a.c.parts);
	reopen_unchanged(&f, epoch, &before);
	assert_int_equal(ck_restore(&f, ck, 1, &g), 39);
	assert_int_equal(ms_checkpoint_remove(ck, NULL), 0);
	fx_close(&f);
}

/* Checkpoint state file path's version field set to `version`, the
 * checksum resealed (a state file as that version wrote it). */
static void
set_state_version(const char *path, uint32_t version)
{
	uint8_t buf[4096];
	FILE *fp = fopen(path, "r+b");
	assert_non_null(fp);
	size_t n = fread(buf, 1, sizeof(buf), fp);
	assert_true(n > 16 && n < sizeof(buf));
	ms_put_le32(buf + 8, version);
	ms_put_le64(buf + n - 8, XXH64(buf, n - 8, 0));
	assert_int_equal(fseek(fp, 0, SEEK_SET), 0);
	assert_int_equal(fwrite(buf, 1, n, fp), n);
	assert_int_equal(fclose(fp), 0);
}

/*
 * A merge that fails has its output's ID handed out and commits nothing:
 * after three failures on a corrupt part (then quarantined) the shard's
 * part-ID counter stands three above its snapshot's next ID. A checkpoint
 * taken there and restored hands out the IDs the original went on with:
 * the next publication and the merge it allows get the part IDs they got
 * the first time. A version-1 state file, which held the snapshot's next
 * ID instead of the counter, is refused and says so.
 */
static void
test_checkpoint_restores_part_id_counter(void **state)
{
	(void)state;
	fixture f;
	gen g = { .x = 3, .next_trace = 1 };
	char ck[300], p[400];
	uint64_t orig[64], again[64];
	size_t norig, nagain;
	ms_errbuf eb;
	ms_checkpoint c;
	quarantine_run(&f, 0);
	assert_int_equal(f.r.failed, 3);
	snprintf(ck, sizeof(ck), "%s.ck", f.dir);
	ck_take(&f, ck, 0, &g);
	for (int round = 0; round < 2; round++) {
		if (round)
			ck_restore(&f, ck, 1, &g);
		publish_uniform(f.shard, 9000, 20, 2000, true, T0, NULL);
		ms_engine_trigger(f.eng);
		idle(&f);
		view_ids(f.shard, round ? again : orig,
		         round ? &nagain : &norig);
	}
	assert_int_equal(norig, 2);
	assert_int_equal(nagain, norig);
	assert_memory_equal(again, orig, norig * sizeof(orig[0]));

	snprintf(p, sizeof(p), "%s/state", ck);
	set_state_version(p, 1);
	assert_int_equal(ms_checkpoint_read(ck, &c, &eb), MS_ERR_FORMAT);
	assert_non_null(strstr(eb.msg, p));
	assert_non_null(strstr(eb.msg, "version 1"));
	assert_non_null(strstr(eb.msg, "take the checkpoint again"));
	assert_null(c.parts);
	set_state_version(p, MS_CHECKPOINT_VERSION);
	assert_int_equal(ms_checkpoint_read(ck, &c, &eb), 0);
	ms_checkpoint_release(&c);
	assert_int_equal(ms_checkpoint_remove(ck, NULL), 0);
	fx_close(&f);
}

/* The saved engine state carries the quarantine: an engine resumed from
 * it does not pick the quarantined part either. */
static void
test_engine_save_resume_quarantine(void **state)
{
	(void)state;
	ms_engine_state st = { 0 }, st2 = { 0 };
	fixture f;
	ms_errbuf eb;
	fx_open(&f, true, 2, 10);
	ms_engine_close(f.eng);
	uint64_t q[2] = { 7, 9 };
	ms_engine_failcount fc = { .id = 11, .n = 2 };
	st.quarantined = q;
	st.nquarantined = 2;
	st.fails = &fc;
	st.nfails = 1;
	st.seq = 41;
	st.fingerprint = 0x1234;
	st.merges_done = 40;
	st.backoff_ms = 20;
	fx_engine(&f, true, 2, 10, &st);
	idle(&f);
	assert_int_equal(ms_engine_save(f.eng, &st2, &eb), 0);
	assert_int_equal(st2.nquarantined, 2);
	assert_int_equal(st2.quarantined[1], 9);
	assert_int_equal(st2.nfails, 1);
	assert_int_equal(st2.fails[0].n, 2);
	assert_int_equal(st2.seq, 41);
	assert_int_equal(st2.merges_done, 40);
	assert_int_equal(st2.backoff_ms, 20);
	assert_true(st2.fingerprint == 0x1234);
	uint64_t ids[4];
	assert_int_equal(ms_engine_quarantined(f.eng, ids, 4), 2);
	ms_engine_state_release(&st2);
	assert_null(st2.quarantined);
	fx_close(&f);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lanes_rule),
		cmocka_unit_test(test_job_state_table),
		cmocka_unit_test(test_idle_empty_and_seven_then_eight),
		cmocka_unit_test(test_trigger_for_wait),
		cmocka_unit_test(test_fan_out_reserves_running_only),
		cmocka_unit_test(test_slow_merge_racing_publication),
		cmocka_unit_test(test_hold_release_and_drop),
		cmocka_unit_test(test_two_lanes_at_once),
		cmocka_unit_test(test_one_cpu_one_merge_at_a_time),
		cmocka_unit_test(test_failure_backoff_inventory_unchanged),
		cmocka_unit_test(test_success_ends_backoff),
		cmocka_unit_test(test_disk_error_stops_engine),
		cmocka_unit_test(test_out_of_memory_stops_engine),
		cmocka_unit_test(test_out_of_memory_once_retried),
		cmocka_unit_test(test_open_without_threads),
		cmocka_unit_test(test_open_out_of_memory),
		cmocka_unit_test(test_quarantine_after_three_read_failures),
		cmocka_unit_test(test_quarantine_slow_failure_events),
		cmocka_unit_test(test_quarantine_restarts_backoff),
		cmocka_unit_test(test_refused_input_quarantined),
		cmocka_unit_test(test_unblamed_refusal_stops_engine),
		cmocka_unit_test(test_pick_candidates),
		cmocka_unit_test(test_finalize),
		cmocka_unit_test(test_finalize_entry_order),
		cmocka_unit_test(test_finalize_on_fast_worker),
		cmocka_unit_test(test_predict_matches_merge),
		cmocka_unit_test(test_finalize_skipped_without_segment),
		cmocka_unit_test(test_finalize_skipped_without_sampler),
		cmocka_unit_test(test_finalize_skipped_without_disk),
		cmocka_unit_test(test_finalize_skip_reason_order),
		cmocka_unit_test(test_sequence_500_deterministic),
		cmocka_unit_test(test_checkpoint_restore_same_fingerprint),
		cmocka_unit_test(test_checkpoint_refused_unless_idle),
		cmocka_unit_test(test_checkpoint_bad_restore_leaves_shard),
		cmocka_unit_test(test_checkpoint_restore_leftover_after_commit),
		cmocka_unit_test(test_checkpoint_write_refused),
		cmocka_unit_test(test_checkpoint_restores_part_id_counter),
		cmocka_unit_test(test_engine_save_resume_quarantine),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
