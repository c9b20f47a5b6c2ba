/*
 * test_staging.c - the staging budget (core/staging.c), the batch builder
 * (core/batch.c) and the stager (core/stager.c):
 * the hard ceiling formula, the adaptive planner's vectors, batches cut
 * only between complete traces at exactly the byte and count limits,
 * oversized traces kept without ever reaching Decide, the trace grace
 * policy, proposed drops going through the guard into the drop set, every
 * trace emitted once in order, and the per-merge classification.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "mem_testlib.h"
#include "ms_fs.h"
#include "ms_invariant.h"
#include "ms_pipeline.h"
#include "pipeline_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define MIB (1ull << 20)
#define GIB (1ull << 30)

static void
test_hard_ceiling(void **st)
{
	(void)st;
	assert_int_equal(ms_staging_hard_ceiling(4 * GIB, 2), 256 * MIB);
	assert_int_equal(ms_staging_hard_ceiling(256 * MIB, 1), 32 * MIB);
	assert_int_equal(ms_staging_hard_ceiling(64 * MIB, 4), 16 * MIB);
	assert_int_equal(ms_staging_hard_ceiling(64 * GIB, 2), 4 * GIB);
	assert_int_equal(ms_staging_hard_ceiling(16 * GIB, 16), 256 * MIB);
	assert_int_equal(ms_staging_hard_ceiling(4 * GIB, 0), 256 * MIB);
	/* No memory limit known: the public engine's 32 MiB default. */
	assert_int_equal(ms_staging_hard_ceiling(0, 2), 32 * MIB);
	assert_int_equal(ms_staging_hard_ceiling(0, 0), 32 * MIB);
}

static void
test_planner_vectors(void **st)
{
	(void)st;
	ms_stage_plan p;
	uint64_t hard = 8ull * 33554432; /* W = 33,554,432 */
	ms_stage_plan_make(&p, hard, 85716327);
	assert_int_equal(p.window, 33554432);
	assert_int_equal(p.planned, 3);
	assert_int_equal(p.preferred, 28572109);
	ms_stage_plan_make(&p, hard, 190169855);
	assert_int_equal(p.planned, 6);
	assert_int_equal(p.preferred, 31694976);
	/* Small merges stay one batch; no estimate means the hard limit. */
	ms_stage_plan_make(&p, hard, 1000);
	assert_int_equal(p.planned, 1);
	assert_int_equal(p.preferred, 1000);
	ms_stage_plan_make(&p, hard, 0);
	assert_int_equal(p.preferred, hard);
	assert_int_equal(p.trace_cap, MS_STAGE_MAX_TRACES);
	assert_int_equal(p.oversized_cap, hard);
	/* A window exactly filled is one batch, one byte more is two. */
	ms_stage_plan_make(&p, hard, 33554432);
	assert_int_equal(p.planned, 1);
	ms_stage_plan_make(&p, hard, 33554433);
	assert_int_equal(p.planned, 2);
	assert_int_equal(p.preferred, 16777217);
}

/* The public engine's own planner vectors (banyand/trace
 * pipeline_chain_filter_test.go, TestAdaptiveDecisionBatchPlan...: hard
 * ceiling 256 MiB) and the default day's finalize, beside what this
 * planner makes of them. Where the two differ the public engine's answer
 * is in the comment: it rounds P to the nearest integer, takes W as
 * max(16 MiB, 32 MiB, hard / 8) and never prefers less than
 * min(16 MiB, hard); DESIGN.md's P = ceil(E / W) and W = hard / 8 are
 * kept (staging.c, README "the reference's planner"). */
static void
test_planner_public_engine_vectors(void **st)
{
	(void)st;
	ms_stage_plan p;
	const uint64_t hard = 256 * MIB;

	/* "small merge stays in one decision batch": 20 MiB, 1 x 20 MiB. */
	ms_stage_plan_make(&p, hard, 20 * MIB);
	assert_int_equal(p.window, 32 * MIB);
	assert_int_equal(p.planned, 1);
	assert_int_equal(p.preferred, 20 * MIB);
	/* "production shaped merge is balanced around reusable window":
	 * 98 MiB, there 3 x 34,253,483 (the nearest); here 4 x 24.5 MiB. */
	ms_stage_plan_make(&p, hard, 98 * MIB);
	assert_int_equal(p.planned, 4);
	assert_int_equal(p.preferred, 25690112);
	/* "compressed size covers absent uncompressed metadata": 12 MiB,
	 * there 1 x 16 MiB (the floor); here 1 x 12 MiB. */
	ms_stage_plan_make(&p, hard, 12 * MIB);
	assert_int_equal(p.planned, 1);
	assert_int_equal(p.preferred, 12 * MIB);
	/* "missing metadata uses nominal reusable window": there 32 MiB;
	 * here the hard ceiling. */
	ms_stage_plan_make(&p, hard, 0);
	assert_int_equal(p.planned, 1);
	assert_int_equal(p.preferred, hard);
	/* Day-2x seed 1's finalize at cpus=2,mem=4g, E = 5.008 W: there
	 * 5 x 33,608,884; here 6 x 28,007,403 (both cut 4 batches). */
	ms_stage_plan_make(&p, hard, 168044418);
	assert_int_equal(p.planned, 6);
	assert_int_equal(p.preferred, 28007403);
	/* A smaller ceiling: mem=2g,cpus=2 gives 128 MiB, W = 16 MiB here,
	 * 32 MiB there. */
	ms_stage_plan_make(&p, ms_staging_hard_ceiling(2 * GIB, 2), 0);
	assert_int_equal(p.hard, 128 * MIB);
	assert_int_equal(p.window, 16 * MIB);
}

static void
test_estimate(void **st)
{
	(void)st;
	ms_part_meta m[2];
	memset(m, 0, sizeof(m));
	m[0].compressed_bytes = 100;
	m[0].uncompressed_bytes = 1000;
	m[0].blocks = 2;
	m[1].compressed_bytes = 50;
	m[1].uncompressed_bytes = 500;
	m[1].blocks = 1;
	assert_int_equal(ms_stage_estimate(m, 2),
	                 1500 + 3 * MS_STAGE_BLOCK_ESTIMATE);
}

/* ---- stager fixture ---- */

#define MAXT 64

typedef struct trace_in {
	char id[16];
	ms_row rows[3];
	const char *tags[1];
} trace_in;

typedef struct out_rec {
	char id[16];
	enum ms_trace_outcome outcome;
	bool keep;
	size_t nrows;
	void *cookie;
} out_rec;

typedef struct fx {
	ms_mem mem;
	ms_chain *c;
	char path[512];
	trace_in t[MAXT];
	out_rec out[MAXT];
	size_t nout;
	ms_stager *s;
	ms_stager_opts o;
	bool check_rows;
} fx;

static int
on_emit(void *ctx, const ms_stage_emit *e, ms_errbuf *eb)
{
	(void)eb;
	fx *f = ctx;
	out_rec *r = &f->out[f->nout++];
	snprintf(r->id, sizeof(r->id), "%.*s", (int)e->trace_id_len,
	         (const char *)e->trace_id);
	r->outcome = e->outcome;
	r->keep = e->keep;
	r->nrows = e->nrows;
	r->cookie = e->cookie;
	if (f->check_rows && e->rows) {
		/* The copy matches what was staged. */
		trace_in *t = e->cookie;
		assert_int_equal(e->nrows, 3);
		for (size_t i = 0; i < 3; i++) {
			assert_string_equal(e->rows[i].service,
			                    t->rows[i].service);
			assert_int_equal(e->rows[i].start_ns,
			                 t->rows[i].start_ns);
			assert_int_equal(e->rows[i].ntags, 1);
			assert_string_equal(e->rows[i].tags[0], "k=v");
			assert_memory_equal(e->rows[i].trace_id, t->id,
			                    strlen(t->id));
		}
	}
	return 0;
}

/* Trace i: "tr-NN", three rows at start 1000 + i (ns). */
static void
make_traces(fx *f)
{
	for (int i = 0; i < MAXT; i++) {
		trace_in *t = &f->t[i];
		snprintf(t->id, sizeof(t->id), "tr-%02d", i);
		t->tags[0] = "k=v";
		for (int k = 0; k < 3; k++) {
			ms_row *r = &t->rows[k];
			memset(r, 0, sizeof(*r));
			r->trace_id = (const uint8_t *)t->id;
			r->trace_id_len = (uint32_t)strlen(t->id);
			r->start_ns = 1000 + i + k;
			r->latency_ms = 2;
			r->service = "svc";
			r->tags = t->tags;
			r->ntags = 1;
		}
	}
}

static void
fx_open(fx *f, const char *plugin, const char *config)
{
	memset(f, 0, sizeof(*f));
	ms_mem_init(&f->mem, NULL);
	if (strncmp(plugin, "tp_", 3) == 0)
		snprintf(f->path, sizeof(f->path), "%s/%s.so",
		         MS_TEST_PLUGIN_DIR, plugin);
	else
		snprintf(f->path, sizeof(f->path), "%s/%s.so", MS_PLUGIN_DIR,
		         plugin);
	ms_chain_link_spec l = { f->path, config };
	ms_chain_opts co = { &f->mem, 0, 0, NULL, NULL, 0, 0, NULL, 0, 0 };
	ms_errbuf eb;
	if (ms_chain_open(&f->c, &l, 1, &co, &eb))
		fail_msg("%s", eb.msg);
	make_traces(f);
	f->o.mem = &f->mem;
	f->o.chain = f->c;
	f->o.emit = on_emit;
	f->o.emit_ctx = f;
	f->o.frontier_ns = INT64_MAX; /* every trace mature */
	ms_stage_plan_make(&f->o.plan, 16 * MIB, 0);
}

static void
fx_start(fx *f)
{
	ms_errbuf eb;
	if (ms_stager_open(&f->s, &f->o, &eb))
		fail_msg("%s", eb.msg);
}

static void
add(fx *f, int i, uint64_t extra)
{
	ms_errbuf eb;
	if (ms_stager_add(f->s, f->t[i].rows, 3, &f->t[i], extra, &eb))
		fail_msg("add %d: %s", i, eb.msg);
}

static const ms_stage_report *
finish(fx *f)
{
	ms_errbuf eb;
	if (ms_stager_finish(f->s, &eb))
		fail_msg("finish: %s", eb.msg);
	return ms_stager_report(f->s);
}

static void
fx_close(fx *f)
{
	ms_stager_close(f->s);
	ms_chain_close(f->c);
	tl_assert_no_live(&f->mem);
}

static uint64_t
traces_seen_by(fx *f)
{
	ms_link_stats ls;
	ms_chain_link_stats(f->c, 0, &ls);
	return ls.traces;
}

/* One stager over 40 traces with allocation n of its memory (sm) failing:
 * 0, or what the open, the adds or the finish returned. *fired: whether
 * allocation n was reached. Everything is freed either way. */
static int
stage_failing_at(fx *f, ms_mem *sm, uint64_t n, bool *fired, ms_errbuf *eb)
{
	ms_mem_init(sm, NULL);
	f->o.mem = sm;
	f->nout = 0;
	ms_mem_fail_at(sm, n, false);
	ms_stager *s = NULL;
	int rc = ms_stager_open(&s, &f->o, eb);
	for (int i = 0; i < 40 && !rc; i++)
		rc = ms_stager_add(s, f->t[i].rows, 3, &f->t[i], 0, eb);
	if (!rc)
		rc = ms_stager_finish(s, eb);
	ms_stager_close(s);
	ms_mem_stats st;
	ms_mem_stats_get(sm, &st);
	*fired = st.failed > 0;
	tl_assert_no_live(sm);
	return rc;
}

/* A stager out of memory at each of its allocations, copying rows (the
 * selection policy) or with hot traces held back (the trace policy),
 * fails with MS_ERR_NOMEM saying what the memory was for and how many
 * bytes: it said only "stager: out of memory". */
static void
test_stager_out_of_memory(void **st)
{
	(void)st;
	for (int pol = 0; pol < 2; pol++) {
		fx f;
		fx_open(&f, "alwayskeep", "");
		f.o.plan.trace_cap = 8; /* several batches */
		f.o.plan.trace_hint = 40;
		if (pol == 0) {
			f.o.copy_rows = true;
		} else {
			f.o.policy = MS_GRACE_TRACE;
			f.o.frontier_ns = 1000 + 30; /* the last ones hot */
		}
		ms_mem sm;
		unsigned failures = 0;
		for (uint64_t n = 1;; n++) {
			ms_errbuf eb = { { 0 } };
			bool fired;
			int rc = stage_failing_at(&f, &sm, n, &fired, &eb);
			if (!fired) {
				if (rc)
					fail_msg("nothing failed: %s", eb.msg);
				assert_int_equal(f.nout, 40);
				break;
			}
			if (rc == 0)
				continue;
			failures++;
			if (rc != MS_ERR_NOMEM ||
			    !strstr(eb.msg, "stager: out of memory for ") ||
			    !strstr(eb.msg, " bytes)"))
				fail_msg("allocation %llu: %d \"%s\"",
				         (unsigned long long)n, rc, eb.msg);
		}
		assert_true(failures > 3);
		ms_chain_close(f.c);
		tl_assert_no_live(&f.mem);
	}
}

static void
test_byte_limit_reached_cuts_the_batch(void **st)
{
	(void)st;
	fx f;
	fx_open(&f, "alwayskeep", "");
	fx_start(&f);
	uint64_t c0 = ms_stager_charge(f.s, f.t[0].rows, 3, 0);
	assert_true(c0 > 3 * sizeof(ms_plugin_trace) / 3);
	ms_stager_close(f.s);

	/* A batch is cut once it reaches the limit, as the reference cuts
	 * it: three traces whose charges sum exactly to the limit make a
	 * batch, and the fourth starts the next. */
	f.o.plan.preferred = 3 * c0;
	fx_start(&f);
	for (int i = 0; i < 4; i++)
		add(&f, i, 0);
	const ms_stage_report *r = finish(&f);
	assert_int_equal(r->batches, 2);
	assert_int_equal(r->batch[0].reason, MS_FLUSH_BYTES);
	assert_int_equal(r->batch[0].traces, 3);
	assert_int_equal(r->batch[0].charged, 3 * c0);
	assert_int_equal(r->batch[1].reason, MS_FLUSH_FINAL);
	assert_int_equal(r->batch[1].charged, c0);
	assert_int_equal(r->peak_charged, 3 * c0);
	assert_int_equal(r->decide_calls, 2);
	ms_stager_close(f.s);

	/* One byte short of it after three: the fourth trace still joins
	 * the batch, which passes the limit by less than that trace. */
	f.o.plan.preferred = 3 * c0 + 1;
	fx_start(&f);
	for (int i = 0; i < 3; i++)
		add(&f, i, 0);
	add(&f, 3, 1);
	r = finish(&f);
	assert_int_equal(r->batches, 1);
	assert_int_equal(r->batch[0].reason, MS_FLUSH_FINAL);
	assert_int_equal(r->batch[0].traces, 4);
	assert_int_equal(r->batch[0].charged, 4 * c0 + 1);
	assert_int_equal(r->peak_charged, 4 * c0 + 1);
	assert_int_equal(r->evaluated, 4);
	assert_int_equal(r->cls, MS_SAMPLING_EXECUTED);
	fx_close(&f);
}

static void
test_trace_count_limit(void **st)
{
	(void)st;
	fx f;
	fx_open(&f, "alwayskeep", "");
	f.o.plan.trace_cap = 2;
	fx_start(&f);
	for (int i = 0; i < 5; i++)
		add(&f, i, 0);
	const ms_stage_report *r = finish(&f);
	assert_int_equal(r->batches, 3);
	assert_int_equal(r->batch[0].reason, MS_FLUSH_TRACES);
	assert_int_equal(r->batch[1].reason, MS_FLUSH_TRACES);
	assert_int_equal(r->batch[2].reason, MS_FLUSH_FINAL);
	assert_int_equal(r->batch[2].traces, 1);
	assert_int_equal(f.nout, 5);
	for (int i = 0; i < 5; i++)
		assert_string_equal(f.out[i].id, f.t[i].id);
	fx_close(&f);
}

static void
test_oversized_never_reaches_decide(void **st)
{
	(void)st;
	fx f;
	/* The plugin would drop every trace it sees. */
	fx_open(&f, "tp_mask", "0123456789");
	fx_start(&f);
	uint64_t c0 = ms_stager_charge(f.s, f.t[0].rows, 3, 0);
	ms_stager_close(f.s);
	f.o.plan.oversized_cap = c0 + 10;
	fx_start(&f);
	add(&f, 0, 0);
	add(&f, 1, 10); /* exactly at the cap: evaluated */
	add(&f, 2, 11); /* one byte over: kept unevaluated */
	add(&f, 3, 0);
	const ms_stage_report *r = finish(&f);
	assert_int_equal(f.nout, 4);
	assert_int_equal(f.out[0].outcome, MS_TRACE_DEFERRED); /* no guard */
	assert_int_equal(f.out[1].outcome, MS_TRACE_DEFERRED);
	assert_int_equal(f.out[2].outcome, MS_TRACE_OVERSIZED);
	assert_true(f.out[2].keep);
	assert_int_equal(f.out[2].nrows, 3); /* the caller's rows */
	assert_int_equal(f.out[3].outcome, MS_TRACE_DEFERRED);
	for (int i = 0; i < 4; i++)
		assert_string_equal(f.out[i].id, f.t[i].id);
	assert_int_equal(r->oversized, 1);
	assert_int_equal(r->evaluated, 3);
	assert_int_equal(traces_seen_by(&f), 3);
	assert_int_equal(r->batches, 2);
	assert_int_equal(r->batch[0].reason, MS_FLUSH_OVERSIZED);
	assert_int_equal(r->proposed_drops, 3);
	assert_int_equal(r->dropped, 0);
	fx_close(&f);
}

/* Every chain call failed open (the one link errors): traces went to
 * Decide but none was evaluated, and no other reason fits: the merge is
 * enabled_no_evaluation, reason other; everything is kept. */
static void
test_failed_chain_classification(void **st)
{
	(void)st;
	fx f;
	fx_open(&f, "tp_fail", "");
	fx_start(&f);
	for (int i = 0; i < 4; i++)
		add(&f, i, 0);
	const ms_stage_report *r = finish(&f);
	assert_int_equal(r->cls, MS_SAMPLING_ENABLED_NO_EVALUATION);
	assert_int_equal(r->reason, MS_SREASON_OTHER);
	assert_int_equal(r->evaluated, 0);
	assert_int_equal(r->decide_calls, 1);
	assert_int_equal(r->dropped, 0);
	assert_int_equal(f.nout, 4);
	fx_close(&f);
}

static void
test_all_oversized_classification(void **st)
{
	(void)st;
	fx f;
	fx_open(&f, "alwayskeep", "");
	f.o.plan.oversized_cap = 10;
	fx_start(&f);
	for (int i = 0; i < 3; i++)
		add(&f, i, 0);
	const ms_stage_report *r = finish(&f);
	assert_int_equal(r->cls, MS_SAMPLING_ENABLED_NO_EVALUATION);
	assert_int_equal(r->reason, MS_SREASON_ALL_TRACES_OVERSIZED);
	assert_int_equal(traces_seen_by(&f), 0);
	assert_int_equal(r->decide_calls, 0);
	fx_close(&f);
}

/* Staging set up (the reference's filter is built) but no trace comes:
 * enabled_no_evaluation, reason other. empty_input is a merge of no
 * input part, told before staging is set up (ms_sampling_predict). */
static void
test_no_trace_classification(void **st)
{
	(void)st;
	fx f;
	fx_open(&f, "alwayskeep", "");
	fx_start(&f);
	const ms_stage_report *r = finish(&f);
	assert_int_equal(r->cls, MS_SAMPLING_ENABLED_NO_EVALUATION);
	assert_int_equal(r->reason, MS_SREASON_OTHER);
	assert_int_equal(r->traces, 0);
	assert_int_equal(r->decide_calls, 0);
	assert_int_equal(f.nout, 0);
	fx_close(&f);
}

/* Under the trace policy, a staged merge whose traces are all hot (past
 * the frontier) evaluates none: as in the reference, that is
 * enabled_no_evaluation, reason other (merge_grace is only the reason of
 * a merge that does not stage at all); the hot counter says why. */
static void
test_trace_policy_all_hot_classification(void **st)
{
	(void)st;
	fx f;
	fx_open(&f, "tp_mask", "0000");
	f.o.policy = MS_GRACE_TRACE;
	f.o.frontier_ns = 1000; /* trace i's max start is 1002 + i */
	fx_start(&f);
	for (int i = 0; i < 4; i++)
		add(&f, i, 0);
	const ms_stage_report *r = finish(&f);
	assert_int_equal(r->cls, MS_SAMPLING_ENABLED_NO_EVALUATION);
	assert_int_equal(r->reason, MS_SREASON_OTHER);
	assert_int_equal(r->hot, 4);
	assert_int_equal(r->oversized, 0);
	assert_int_equal(r->evaluated, 0);
	assert_int_equal(r->decide_calls, 0);
	assert_int_equal(traces_seen_by(&f), 0);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(f.out[i].outcome, MS_TRACE_HOT);
		assert_true(f.out[i].keep);
	}
	fx_close(&f);
}

/* Hot traces and an oversized one, nothing evaluated: as in the
 * reference, any oversized trace makes the reason all_traces_oversized
 * (it was merge_grace here, and all_traces_oversized only with every
 * trace oversized); the counters keep the split. */
static void
test_hot_and_oversized_classification(void **st)
{
	(void)st;
	fx f;
	fx_open(&f, "tp_mask", "0000");
	f.o.policy = MS_GRACE_TRACE;
	f.o.frontier_ns = 1000;
	fx_start(&f);
	uint64_t c0 = ms_stager_charge(f.s, f.t[0].rows, 3, 0);
	ms_stager_close(f.s);
	f.o.plan.oversized_cap = c0 + 10;
	fx_start(&f);
	add(&f, 0, 0);
	add(&f, 1, 11); /* over the cap */
	add(&f, 2, 0);
	const ms_stage_report *r = finish(&f);
	assert_int_equal(r->cls, MS_SAMPLING_ENABLED_NO_EVALUATION);
	assert_int_equal(r->reason, MS_SREASON_ALL_TRACES_OVERSIZED);
	assert_int_equal(r->hot, 2);
	assert_int_equal(r->oversized, 1);
	assert_int_equal(r->evaluated, 0);
	assert_int_equal(f.out[1].outcome, MS_TRACE_OVERSIZED);
	fx_close(&f);

	/* One trace evaluated beside them: executed. */
	fx_open(&f, "tp_mask", "1111");
	f.o.policy = MS_GRACE_TRACE;
	f.o.frontier_ns = 1002; /* trace 0 (max start 1002) is mature */
	f.o.plan.oversized_cap = c0 + 10;
	fx_start(&f);
	add(&f, 0, 0);
	add(&f, 1, 11);
	add(&f, 2, 0);
	r = finish(&f);
	assert_int_equal(r->cls, MS_SAMPLING_EXECUTED);
	assert_int_equal(r->reason, MS_SREASON_NONE);
	assert_int_equal(r->evaluated, 1);
	assert_int_equal(r->oversized, 1);
	assert_int_equal(r->hot, 1);
	fx_close(&f);
}

static void
test_trace_policy_keeps_hot_unevaluated(void **st)
{
	(void)st;
	fx f;
	fx_open(&f, "tp_mask", "0123456789");
	f.o.policy = MS_GRACE_TRACE;
	f.o.frontier_ns = 1003; /* trace i's max start is 1002 + i */
	fx_start(&f);
	for (int i = 0; i < 4; i++)
		add(&f, i, 0);
	const ms_stage_report *r = finish(&f);
	assert_int_equal(f.out[0].outcome, MS_TRACE_DEFERRED);
	assert_int_equal(f.out[1].outcome, MS_TRACE_DEFERRED);
	assert_int_equal(f.out[2].outcome, MS_TRACE_HOT);
	assert_int_equal(f.out[3].outcome, MS_TRACE_HOT);
	assert_int_equal(r->hot, 2);
	assert_int_equal(traces_seen_by(&f), 2);
	fx_close(&f);
}

/* A fake outside part whose filter says "maybe" for one ID only. */
static bool
maybe_tr01(const void *ctx, const uint8_t *tid, uint32_t len)
{
	(void)ctx;
	return len == 5 && memcmp(tid, "tr-01", 5) == 0;
}

static void
test_drops_through_guard_and_dropset(void **st)
{
	(void)st;
	fx f;
	fx_open(&f, "tp_mask", "13"); /* proposes tr-01, tr-03 */
	ms_guard_part gp = { 7, 0, 5000, maybe_tr01, NULL };
	ms_guard *g;
	ms_dropset *d;
	ms_errbuf eb;
	ms_guard_opts go = { &f.mem, 16 * MIB, 0 };
	assert_int_equal(ms_guard_open(&g, &gp, 1, &go, &eb), 0);
	/* A segment wide enough that no trace is near its edge. */
	ms_guard_set_coverage(g, INT64_MIN, INT64_MAX);
	ms_dropset_opts dopts = { &f.mem, NULL, NULL, 0 };
	assert_int_equal(ms_dropset_open(&d, &dopts, &eb), 0);
	f.o.guard = g;
	f.o.drops = d;
	f.o.copy_rows = true;
	f.check_rows = true;
	f.o.plan.trace_cap = 3;
	fx_start(&f);
	for (int i = 0; i < 6; i++)
		add(&f, i, 0);
	const ms_stage_report *r = finish(&f);
	assert_int_equal(f.nout, 6);
	assert_int_equal(f.out[1].outcome, MS_TRACE_DEFERRED);
	assert_true(f.out[1].keep);
	assert_int_equal(f.out[3].outcome, MS_TRACE_DROPPED);
	assert_false(f.out[3].keep);
	assert_ptr_equal(f.out[3].cookie, &f.t[3]);
	assert_int_equal(r->dropped, 1);
	assert_int_equal(r->deferred, 1);
	assert_int_equal(r->kept, 4);
	assert_int_equal(ms_dropset_count(d), 1);
	assert_true(ms_dropset_contains(d, (const uint8_t *)"tr-03", 5));
	assert_false(ms_dropset_contains(d, (const uint8_t *)"tr-01", 5));
	ms_guard_stats gs;
	ms_guard_stats_get(g, &gs);
	assert_int_equal(gs.reasons[MS_GUARD_FILTER_POSITIVE], 1);
	assert_int_equal(gs.confirmed, 1);
	ms_stager_close(f.s);
	f.s = NULL;
	ms_guard_close(g);
	ms_dropset_close(d);
	fx_close(&f);
}

/* A merge's drop set with a budget of two 5-byte IDs (68 bytes each):
 * the first two proposed drops are confirmed and recorded, every later
 * one is kept before the guard sees it (deferred, and counted in
 * drop_set_full), across batches. */
static void
test_drop_set_full_keeps_later_drops(void **st)
{
	(void)st;
	fx f;
	fx_open(&f, "tp_mask", "0123456789"); /* proposes every trace */
	ms_guard *g;
	ms_dropset *d;
	ms_errbuf eb;
	ms_guard_opts go = { &f.mem, 16 * MIB, 0 };
	assert_int_equal(ms_guard_open(&g, NULL, 0, &go, &eb), 0);
	ms_guard_set_coverage(g, INT64_MIN, INT64_MAX);
	ms_dropset_opts dopts = { &f.mem, NULL, NULL,
		                  2 * ms_dropset_price(5) + 67 };
	assert_int_equal(ms_dropset_open(&d, &dopts, &eb), 0);
	f.o.guard = g;
	f.o.drops = d;
	f.o.plan.trace_cap = 3;
	fx_start(&f);
	for (int i = 0; i < 7; i++)
		add(&f, i, 0);
	const ms_stage_report *r = finish(&f);
	assert_int_equal(f.nout, 7);
	for (int i = 0; i < 7; i++) {
		assert_string_equal(f.out[i].id, f.t[i].id);
		assert_int_equal(f.out[i].outcome,
		                 i < 2 ? MS_TRACE_DROPPED : MS_TRACE_DEFERRED);
		assert_int_equal(f.out[i].keep, i >= 2);
	}
	assert_int_equal(r->proposed_drops, 7);
	assert_int_equal(r->dropped, 2);
	assert_int_equal(r->deferred, 5);
	assert_int_equal(r->drop_set_full, 5);
	assert_int_equal(ms_dropset_count(d), 2);
	assert_false(ms_dropset_contains(d, (const uint8_t *)"tr-02", 5));
	ms_guard_stats gs;
	ms_guard_stats_get(g, &gs);
	assert_int_equal(gs.checks, 2); /* the guard never saw the rest */
	assert_int_equal(gs.deferred, 0);
	ms_stager_close(f.s);
	f.s = NULL;
	ms_guard_close(g);
	ms_dropset_close(d);
	fx_close(&f);
}

static void
test_order_and_inputs_checked(void **st)
{
	(void)st;
	fx f;
	fx_open(&f, "alwayskeep", "");
	fx_start(&f);
	add(&f, 2, 0);
	ms_errbuf eb;
	/* Going back in trace-ID order is refused. */
	assert_int_equal(ms_stager_add(f.s, f.t[1].rows, 3, NULL, 0, &eb),
	                 MS_ERR_INVAL);
	assert_non_null(strstr(eb.msg, "ascend"));
	/* Rows of two traces in one call are refused. */
	ms_row mix[2] = { f.t[5].rows[0], f.t[6].rows[0] };
	assert_int_equal(ms_stager_add(f.s, mix, 2, NULL, 0, &eb),
	                 MS_ERR_INVAL);
	finish(&f);
	assert_int_equal(ms_stager_add(f.s, f.t[9].rows, 3, NULL, 0, &eb),
	                 MS_ERR_STATE);
	fx_close(&f);
}

/* Trace i of make_traces: start 1000 + i .. 1002 + i, latency 2 ms. */
static void
expect_bounds_of(fx *f, int i, int64_t shift)
{
	ms_stager_expect_bounds(f->s, 1000 + i + shift, 1002 + i,
	                        1002 + i + 2000000);
}

static void
test_decide_once_and_bounds_checks(void **st)
{
	(void)st;
	fx f;
	/* A correct stager: every entry checked, nothing counted. */
	fx_open(&f, "alwayskeep", "");
	f.o.plan.trace_cap = 2;
	fx_start(&f);
	for (int i = 0; i < 6; i++) {
		expect_bounds_of(&f, i, 0);
		add(&f, i, 0);
	}
	const ms_stage_report *r = finish(&f);
	assert_int_equal(r->batches, 3);
	assert_int_equal(r->bounds_checked, 6);
	assert_int_equal(r->bounds_mismatch, 0);
	assert_int_equal(r->decide_dup_traces, 0);
	ms_stager_close(f.s);

	/* Bounds the caller rebuilt otherwise: that trace is counted; the
	 * expectation holds for one add only. */
	fx_start(&f);
	expect_bounds_of(&f, 0, 0);
	add(&f, 0, 0);
	expect_bounds_of(&f, 1, -1);
	add(&f, 1, 0);
	add(&f, 2, 0);
	r = finish(&f);
	assert_int_equal(r->bounds_checked, 2);
	assert_int_equal(r->bounds_mismatch, 1);
	ms_stager_close(f.s);

	/* Hooks: every batch handed twice, every entry's end shifted. */
	ms_stager_test t = { .decide_twice = true, .skew_end_ns = 5 };
	f.o.test = &t;
	fx_start(&f);
	for (int i = 0; i < 5; i++) {
		expect_bounds_of(&f, i, 0);
		add(&f, i, 0);
	}
	r = finish(&f);
	assert_int_equal(r->evaluated, 5);
	assert_int_equal(r->decide_dup_traces, 5);
	assert_int_equal(r->bounds_mismatch, 5);
	assert_int_equal(traces_seen_by(&f), 6 + 3 + 10);
	assert_int_equal(f.nout, 6 + 3 + 5); /* each emitted once */
	fx_close(&f);

	/* Hot traces (trace policy) never reach Decide: not checked. */
	fx_open(&f, "alwayskeep", "");
	f.o.policy = MS_GRACE_TRACE;
	f.o.frontier_ns = 1003;
	fx_start(&f);
	for (int i = 0; i < 4; i++) {
		expect_bounds_of(&f, i, 0);
		add(&f, i, 0);
	}
	r = finish(&f);
	assert_int_equal(r->hot, 2);
	assert_int_equal(r->bounds_checked, 2);
	assert_int_equal(r->bounds_mismatch, 0);
	assert_int_equal(r->hot_decided, 0);
	for (int i = 0; i < 4; i++)
		assert_string_equal(f.out[i].id, f.t[i].id);
	ms_stager_close(f.s);

	/* The hot test compares with a frontier 10 ns late: traces 2 and 3,
	 * whose rows start past the real frontier, reach Decide, and
	 * hot_decided counts them. */
	ms_stager_test late = { .skew_frontier_ns = 10 };
	f.o.test = &late;
	fx_start(&f);
	for (int i = 0; i < 4; i++) {
		expect_bounds_of(&f, i, 0);
		add(&f, i, 0);
	}
	r = finish(&f);
	assert_int_equal(r->hot, 0);
	assert_int_equal(r->evaluated, 4);
	assert_int_equal(r->hot_decided, 2);
	assert_int_equal(r->bounds_mismatch, 0);
	fx_close(&f);

	/* Under the selection policy the stager tests no trace: a trace
	 * past the frontier that reaches it (a hot selection sampled) is
	 * counted all the same. */
	fx_open(&f, "alwayskeep", "");
	f.o.frontier_ns = 1003;
	fx_start(&f);
	for (int i = 0; i < 4; i++) {
		expect_bounds_of(&f, i, 0);
		add(&f, i, 0);
	}
	r = finish(&f);
	assert_int_equal(r->evaluated, 4);
	assert_int_equal(r->hot_decided, 2);
	fx_close(&f);
}

/* The batches of one stager share one set of buffers, except a batch
 * whose call timed out: the abandoned plugin reads it after the stager
 * went on (tp_slow reads the whole batch after sleeping; under ASan a
 * reused or freed batch is caught), and the traces of every batch are
 * still emitted with their own IDs, in order. */
static void
test_batches_reuse_buffers_unless_abandoned(void **st)
{
	(void)st;
	fx f;
	fx_open(&f, "alwayskeep", "");
	f.o.plan.trace_cap = 2;
	ms_mem_stats before, opened, done, closed;
	ms_mem_stats_get(&f.mem, &before);
	fx_start(&f);
	ms_mem_stats_get(&f.mem, &opened);
	for (int i = 0; i < 7; i++)
		add(&f, i, 0);
	const ms_stage_report *r = finish(&f);
	assert_int_equal(r->batches, 4);
	assert_int_equal(r->batches_reused, 4);
	/* The shared buffers end with the last batch: once finished, the
	 * stager holds what it held when it opened (a merge writes its
	 * indexes and publishes before it closes the stager). */
	ms_mem_stats_get(&f.mem, &done);
	ms_stager_close(f.s);
	f.s = NULL;
	ms_mem_stats_get(&f.mem, &closed);
	assert_true(done.peak_live > opened.live);
	assert_int_equal(done.live - closed.live, opened.live - before.live);
	fx_close(&f);

	memset(&f, 0, sizeof(f));
	ms_mem_init(&f.mem, NULL);
	snprintf(f.path, sizeof(f.path), "%s/tp_slow.so", MS_TEST_PLUGIN_DIR);
	/* Calls 1, 3, 5 sleep 1.5 s against a 250 ms timeout: the timeout
	 * is per call, so calls 2 and 4 must finish within it on a loaded
	 * machine too (20 ms was once too little). */
	ms_chain_link_spec l = { f.path, "1500/2" };
	ms_chain_opts co = {
		&f.mem, 250000000, 10, NULL, NULL, 0, 0, NULL, 0, 0
	};
	ms_errbuf eb;
	if (ms_chain_open(&f.c, &l, 1, &co, &eb))
		fail_msg("%s", eb.msg);
	make_traces(&f);
	f.o.mem = &f.mem;
	f.o.chain = f.c;
	f.o.emit = on_emit;
	f.o.emit_ctx = &f;
	ms_stage_plan_make(&f.o.plan, 16 * MIB, 0);
	f.o.plan.trace_cap = 2;
	fx_start(&f);
	for (int i = 0; i < 10; i++)
		add(&f, i, 0);
	r = finish(&f);
	assert_int_equal(r->batches, 5);
	assert_int_equal(r->batches_reused, 2); /* calls 2 and 4 */
	/* The 3 abandoned batches and the 2 reused ones are all 5: the
	 * stager's accounting holds at its bound. */
	assert_null(ms__stager_check(f.s));
	assert_int_equal(f.nout, 10);
	for (int i = 0; i < 10; i++) {
		assert_string_equal(f.out[i].id, f.t[i].id);
		assert_true(f.out[i].keep);
	}
	ms_link_stats ls;
	ms_chain_link_stats(f.c, 0, &ls);
	assert_int_equal(ls.results[MS_LINK_TIMEOUT], 3);
	fx_close(&f); /* waits for the abandoned calls; nothing leaks */
}

/* What the stager allocates stays within what it charges: with the plan's
 * trace hint, the per-trace vectors are sized once, exactly. */
static void
test_allocation_within_charge(void **st)
{
	(void)st;
	fx f;
	fx_open(&f, "alwayskeep", "");
	f.o.plan.trace_hint = MAXT;
	fx_start(&f);
	for (int i = 0; i < MAXT; i++)
		add(&f, i, 0);
	const ms_stage_report *r = finish(&f);
	assert_int_equal(r->batches, 1);
	/* The batch header and the stager's bookkeeping aside. */
	assert_true(r->peak_alloc <= r->peak_charged + 512);
	uint64_t hinted = r->alloc_bytes;
	ms_stager_close(f.s);

	f.o.plan.trace_hint = 0; /* no hint: vectors grow by doubling */
	f.nout = 0;
	fx_start(&f);
	for (int i = 0; i < MAXT; i++)
		add(&f, i, 0);
	r = finish(&f);
	assert_true(hinted < r->alloc_bytes);
	fx_close(&f);
}

/* The live gauge a screen reads: each staged trace's charge while it waits
 * for its batch, nothing once the batch is decided or the stager closes
 * (also when it closes with traces still pending). */
static void
test_live_gauge(void **st)
{
	(void)st;
	fx f;
	_Atomic uint64_t gauge = 0, peak = 0;
	fx_open(&f, "alwayskeep", "");
	f.o.live_gauge = &gauge;
	f.o.peak_gauge = &peak;
	fx_start(&f);
	add(&f, 0, 0);
	uint64_t one = atomic_load(&gauge);
	assert_true(one > 0);
	assert_int_equal(atomic_load(&peak), one);
	add(&f, 1, 0);
	assert_true(atomic_load(&gauge) > one);
	const ms_stage_report *r = finish(&f);
	assert_int_equal(atomic_load(&gauge), 0);
	assert_true(r->peak_charged >= one);
	/* The peak gauge holds the batch's peak once it is done. */
	assert_int_equal(atomic_load(&peak), r->peak_concurrent);
	ms_stager_close(f.s);
	f.nout = 0;
	fx_start(&f);
	add(&f, 0, 0);
	assert_int_equal(atomic_load(&gauge), one);
	ms_stager_close(f.s); /* never finished */
	assert_int_equal(atomic_load(&gauge), 0);
	f.s = NULL;
	fx_close(&f);
}

static int
stop_emit(void *ctx, const ms_stage_emit *e, ms_errbuf *eb)
{
	(void)ctx;
	(void)e;
	return ms_fail(eb, MS_ERR_IO, "the output disk failed");
}

/* A callback that fails without saying why. */
static int
mute_emit(void *ctx, const ms_stage_emit *e, ms_errbuf *eb)
{
	(void)ctx;
	(void)e;
	(void)eb;
	return MS_ERR_IO;
}

static void
test_emit_error_stops(void **st)
{
	(void)st;
	fx f;
	fx_open(&f, "alwayskeep", "");
	f.o.emit = stop_emit;
	fx_start(&f);
	add(&f, 0, 0);
	ms_errbuf eb;
	assert_int_equal(ms_stager_finish(f.s, &eb), MS_ERR_IO);
	/* The callback's own words reach the caller. */
	assert_string_equal(eb.msg, "the output disk failed");
	assert_int_equal(ms_stager_add(f.s, f.t[1].rows, 3, NULL, 0, &eb),
	                 MS_ERR_STATE);
	fx_close(&f);

	fx_open(&f, "alwayskeep", "");
	f.o.emit = mute_emit;
	fx_start(&f);
	add(&f, 0, 0);
	assert_int_equal(ms_stager_finish(f.s, &eb), MS_ERR_IO);
	assert_non_null(strstr(eb.msg, "emit callback stopped"));
	fx_close(&f);
}

/* The stager's state table is its design block's, move for move. */
static void
test_stager_state_table(void **st)
{
	(void)st;
	static const char *const names[] = { "empty", "pending", "flushing",
		                             "finished", "failed" };
	/* want[a][b]: the design block allows a -> b. */
	static const bool want[5][5] = {
		{ true, true, false, true, true },     /* empty */
		{ false, true, true, false, true },    /* pending */
		{ true, false, false, false, true },   /* flushing */
		{ false, false, false, false, false }, /* finished */
		{ false, false, false, false, false }, /* failed */
	};
	int n = 0;
	const ms__state *t = ms__stager_state_table(&n);
	assert_int_equal(n, 5);
	assert_null(ms__state_name(t, n, n));
	assert_null(ms__state_name(t, n, -1));
	for (int a = 0; a < n; a++) {
		assert_string_equal(ms__state_name(t, n, a), names[a]);
		for (int b = 0; b < n; b++)
			if (ms__state_move_ok(t, n, a, b) != want[a][b])
				fail_msg("move %s -> %s: want %d", names[a],
				         names[b], want[a][b]);
	}
	assert_false(ms__state_move_ok(t, n, 0, n));
	assert_false(ms__state_move_ok(t, n, -1, 0));
}

/* A stager of fixture f with 5 traces staged by 2 (two batches cut and
 * reused, one trace pending), its accounting intact. */
static void
stager_midway(fx *f)
{
	fx_open(f, "alwayskeep", "");
	f->o.plan.trace_cap = 2;
	fx_start(f);
	for (int i = 0; i < 5; i++)
		add(f, i, 0);
	const ms_stage_report *r = ms_stager_report(f->s);
	assert_int_equal(r->batches, 2);
	assert_int_equal(r->batches_reused, 2);
	assert_null(ms__stager_check(f->s));
}

/* The checker catches each broken rule: ms__stager_check names it (any
 * build), and a debug build (MS_DEBUG_INVARIANTS) stops at the stager's
 * next move, aborting with the rule in its message. */
static void
test_stager_check_catches_broken_rules(void **st)
{
	(void)st;
	static const struct {
		enum ms__stager_break what;
		const char *rule; /* the design number leading the answer */
	} cases[] = {
		{ MS__STAGER_BREAK_CHARGE, "2: " },
		{ MS__STAGER_BREAK_PENDING, "6: " },
		{ MS__STAGER_BREAK_OUTCOME, "1: " },
		{ MS__STAGER_BREAK_REUSE, "5: " },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fx f;
		stager_midway(&f);
#ifdef MS_DEBUG_INVARIANTS
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			/* The next add moves the stager: it must abort. */
			ms__stager_test_break(f.s, cases[i].what);
			ms_errbuf eb;
			(void)ms_stager_add(f.s, f.t[5].rows, 3, NULL, 0, &eb);
			_exit(0);
		}
		int status = 0;
		assert_int_equal(waitpid(pid, &status, 0), pid);
		if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGABRT)
			fail_msg("break %zu: the debug check did not abort "
			         "(status %d)",
			         i, status);
#endif
		ms__stager_test_break(f.s, cases[i].what);
		const char *why = ms__stager_check(f.s);
		if (!why || strncmp(why, cases[i].rule, 3) != 0)
			fail_msg("break %zu: want rule %s, got %s", i,
			         cases[i].rule, why ? why : "(none)");
		ms_stager_close(f.s);
		f.s = NULL;
		fx_close(&f);
	}
}

static void
test_names(void **st)
{
	(void)st;
	assert_string_equal(ms_flush_reason_name(MS_FLUSH_OVERSIZED),
	                    "oversized");
	assert_string_equal(ms_trace_outcome_name(MS_TRACE_DEFERRED),
	                    "deferred");
	assert_string_equal(ms_grace_policy_name(MS_GRACE_SELECTION),
	                    "selection");
}

/* ---- limits: fake cgroup trees ---- */

static void
put(const char *dir, const char *name, const char *text)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void
mkdirs(const char *base, const char *rel)
{
	char p[512];
	snprintf(p, sizeof(p), "%s%s", base, rel);
	assert_int_equal(ms_fs_mkdir_p(p, 0755, NULL), 0);
}

static void
rmtree(const char *dir)
{
	assert_int_equal(ms_fs_rm_tree(dir, NULL), 0);
}

static void
test_limits_cgroup_v2(void **st)
{
	(void)st;
	char root[] = "/tmp/ms-cg-XXXXXX";
	assert_non_null(mkdtemp(root));
	char proc[600], d[600];
	snprintf(proc, sizeof(proc), "%s/self-cgroup", root);
	put(root, "self-cgroup", "0::/box/job\n");
	put(root, "cgroup.controllers", "cpu memory\n");
	mkdirs(root, "/box/job");
	snprintf(d, sizeof(d), "%s/box", root);
	/* The parent is tighter on memory, the child on CPU. */
	put(d, "memory.max", "268435456\n");
	put(d, "cpu.max", "max 100000\n");
	snprintf(d, sizeof(d), "%s/box/job", root);
	put(d, "memory.max", "max\n");
	put(d, "cpu.max", "50000 100000\n");
	ms_limits l;
	ms_limits_detect(&l, root, proc);
	assert_int_equal(l.mem_source, MS_LIMIT_CGROUP_V2);
	assert_int_equal(l.detected_mem, 256 * MIB);
	assert_int_equal(l.cpu_source, MS_LIMIT_CGROUP_V2);
	assert_true(l.detected_cpus > 0.49 && l.detected_cpus < 0.51);
	assert_int_equal(l.cpus, 1);
	assert_int_equal(l.mem, 256 * MIB);
	assert_string_equal(ms_limit_source_name(l.mem_source), "cgroup2");
	rmtree(root);
}

static void
test_limits_cgroup_v1_and_machine(void **st)
{
	(void)st;
	char root[] = "/tmp/ms-cg-XXXXXX";
	assert_non_null(mkdtemp(root));
	char proc[600], d[600];
	snprintf(proc, sizeof(proc), "%s/self-cgroup", root);
	put(root, "self-cgroup",
	    "4:memory:/docker/abc\n3:cpu,cpuacct:/docker/abc\n0::/\n");
	mkdirs(root, "/memory/docker/abc");
	mkdirs(root, "/cpu,cpuacct/docker/abc");
	snprintf(d, sizeof(d), "%s/memory/docker/abc", root);
	put(d, "memory.limit_in_bytes", "134217728\n");
	snprintf(d, sizeof(d), "%s/memory", root);
	put(d, "memory.limit_in_bytes", "9223372036854771712\n");
	snprintf(d, sizeof(d), "%s/cpu,cpuacct/docker/abc", root);
	put(d, "cpu.cfs_quota_us", "50000\n");
	put(d, "cpu.cfs_period_us", "100000\n");
	ms_limits l;
	ms_limits_detect(&l, root, proc);
	assert_int_equal(l.mem_source, MS_LIMIT_CGROUP_V1);
	assert_int_equal(l.detected_mem, 128 * MIB);
	assert_int_equal(l.cpu_source, MS_LIMIT_CGROUP_V1);
	assert_int_equal(l.cpus, 1);
	rmtree(root);

	/* No cgroup files at all: the machine. */
	ms_limits_detect(&l, "/nonexistent-cgroup-root", "/nonexistent");
	assert_int_equal(l.mem_source, MS_LIMIT_MACHINE);
	assert_int_equal(l.cpu_source, MS_LIMIT_MACHINE);
	assert_true(l.mem > 0);
	assert_true(l.cpus >= 1);
	assert_int_equal(l.cpus, (unsigned)sysconf(_SC_NPROCESSORS_ONLN));
}

static void
test_limits_profile(void **st)
{
	(void)st;
	ms_limits l;
	ms_limits_detect(&l, "/nonexistent-cgroup-root", "/nonexistent");
	uint64_t det = l.detected_mem;
	ms_errbuf eb;
	assert_int_equal(ms_limits_apply_profile(&l, "cpus=2,mem=4g", &eb), 0);
	assert_true(l.has_profile);
	assert_string_equal(l.profile, "cpus=2,mem=4g");
	assert_int_equal(l.mem, 4ull << 30);
	assert_int_equal(l.cpus, 2);
	assert_int_equal(l.detected_mem, det); /* kept alongside */
	assert_int_equal(ms_staging_hard_ceiling(l.mem, l.cpus), 256 * MIB);
	/* Only one key: the other stays detected. */
	assert_int_equal(ms_limits_apply_profile(&l, "mem=512m", &eb), 0);
	assert_int_equal(l.mem, 512 * MIB);
	assert_int_equal(l.profile_cpus, 0);
	static const struct {
		const char *p, *needle;
	} bad[] = {
		{ "cpus=0", "cpus" },
		{ "mem=lots", "mem" },
		{ "gpus=1", "unknown key 'gpus'" },
		{ "cpus", "key=value" },
		{ "", "empty" },
		{ "mem=1", "at least 64m" },
		{ "mem=63m", "at least 64m" },
		/* Both values are named. */
		{ "cpus=2,cpus=4", "cpus given twice ('2' and '4')" },
		{ "mem=4g,cpus=1,mem=1g", "mem given twice ('4g' and '1g')" },
		/* 16000000t (17.6e18 bytes, just under 2^64) and 0.0001
		 * CPUs (a 10 us quota per 100 ms the kernel refuses) were
		 * taken; the range and the units are named. */
		{ "mem=16000000t", "expected at most 64t" },
		{ "mem=65t", "expected at most 64t" },
		{ "mem=4x", "bytes, or a number with k, m, g or t" },
		{ "mem=0", "at least 64m" },
		{ "cpus=0.0001", "from 0.01 to 65535" },
		{ "cpus=0.009", "from 0.01 to 65535" },
		{ "cpus=65536", "from 0.01 to 65535" },
		{ "cpus=2x", "from 0.01 to 65535" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ms_limits before = l;
		eb.msg[0] = '\0';
		assert_int_equal(ms_limits_apply_profile(&l, bad[i].p, &eb),
		                 MS_ERR_INVAL);
		if (!strstr(eb.msg, bad[i].needle))
			fail_msg("%s: %s", bad[i].p, eb.msg);
		assert_memory_equal(&before, &l, sizeof(l));
	}
	/* The ends of the ranges pass. */
	assert_int_equal(ms_limits_apply_profile(&l, "cpus=0.01,mem=64t", &eb),
	                 0);
	assert_true(l.profile_cpus > 0.0099 && l.profile_cpus < 0.0101);
	assert_int_equal(l.mem, 64ull << 40);
	assert_int_equal(
	        ms_limits_apply_profile(&l, "cpus=65535,mem=64MiB", &eb), 0);
	assert_int_equal(l.mem, 64 * MIB);
	uint64_t v;
	assert_int_equal(ms_parse_size("1.5k", &v), 0);
	assert_int_equal(v, 1536);
	assert_int_equal(ms_parse_size("7", &v), 0);
	assert_int_equal(v, 7);
	assert_int_equal(ms_parse_size("2GiB", &v), 0);
	assert_int_equal(v, 2ull << 30);
	assert_int_equal(ms_parse_size("-1", &v), MS_ERR_INVAL);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hard_ceiling),
		cmocka_unit_test(test_planner_vectors),
		cmocka_unit_test(test_planner_public_engine_vectors),
		cmocka_unit_test(test_estimate),
		cmocka_unit_test(test_stager_out_of_memory),
		cmocka_unit_test(test_byte_limit_reached_cuts_the_batch),
		cmocka_unit_test(test_trace_count_limit),
		cmocka_unit_test(test_oversized_never_reaches_decide),
		cmocka_unit_test(test_all_oversized_classification),
		cmocka_unit_test(test_no_trace_classification),
		cmocka_unit_test(test_trace_policy_all_hot_classification),
		cmocka_unit_test(test_hot_and_oversized_classification),
		cmocka_unit_test(test_failed_chain_classification),
		cmocka_unit_test(test_trace_policy_keeps_hot_unevaluated),
		cmocka_unit_test(test_drops_through_guard_and_dropset),
		cmocka_unit_test(test_drop_set_full_keeps_later_drops),
		cmocka_unit_test(test_order_and_inputs_checked),
		cmocka_unit_test(test_emit_error_stops),
		cmocka_unit_test(test_decide_once_and_bounds_checks),
		cmocka_unit_test(test_batches_reuse_buffers_unless_abandoned),
		cmocka_unit_test(test_allocation_within_charge),
		cmocka_unit_test(test_live_gauge),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_stager_state_table),
		cmocka_unit_test(test_stager_check_catches_broken_rules),
		cmocka_unit_test(test_limits_cgroup_v2),
		cmocka_unit_test(test_limits_cgroup_v1_and_machine),
		cmocka_unit_test(test_limits_profile),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
