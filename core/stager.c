/*
 * stager.c - the stager that feeds complete traces to the chain inside a
 * merge (staging.c says how the three staging files divide the work).
 * It charges each trace the bytes it makes the host hold (projected
 * column copies, descriptors, index slots, verdict state, drop-set
 * reserve, the row copy and the caller's payload), cuts batches only
 * between complete traces, and hands every trace back in the order it
 * came, with its outcome.
 *
 * Design (stager):
 *  1. Pending traces are emitted in the order they were added; nothing is
 *     emitted out of order, whatever its outcome. Between calls every
 *     trace added is pending or was emitted once with one outcome:
 *     traces = kept + dropped + deferred + oversized + hot + pending.
 *  2. live is the sum of the charges of the pending traces (each at least
 *     the fixed part), and so is what they add to the pipeline's gauge.
 *     A batch is cut once it has reached the preferred limit, before
 *     the next trace (the reference's rule): so without its last trace a
 *     batch of two or more is below the limit, and the last may carry it
 *     past, by at most one trace's charge. One pending trace may be up
 *     to the oversized cap (<= hard): a trace above that cap is never
 *     staged.
 *  3. A batch holds at most trace_cap traces that reach Decide.
 *  4. An oversized trace is never put in a batch: pending traces are
 *     flushed first (reason "oversized"), then it is emitted unevaluated.
 *  5. A batch whose chain call timed out is never reused (the abandoned
 *     plugin may still read it; it is freed when that call returns). Any
 *     other batch hands its buffers back to the builder once its traces
 *     are emitted, emptied, so the batches of one merge share one set of
 *     buffers; retention is bounded by twice the preferred limit and
 *     ends at ms_stager_finish (or close).
 *  6. A trace ID is stored once, out of line: in the batch's ID bytes
 *     (a pending entry refers to its batch entry, which also holds the
 *     row count and bounds) or, for a hot trace, in the hot ID bytes.
 *     Per-trace vectors are sized once from the plan's trace hint.
 *  7. Every batch entry is checked before it goes to the chain: its ID
 *     must be above every ID handed to the chain before (else it counts
 *     in decide_dup_traces) and, when the caller gave the trace's bounds
 *     rebuilt from its fragments, its bounds must equal them (else
 *     bounds_mismatch) and its rebuilt latest start must not be past
 *     the merge's frontier (else hot_decided).
 *  8. A batch whose chain call abandoned it is counted (abandoned) and
 *     never among batches_reused: reused + abandoned <= batches.
 *
 * States, as a table (stager_states below; engine.c keeps its job states
 * the same way). stager_move checks every move against it, and the
 * accounting of design 1-8 in every state but FAILED (ms__stager_check), in
 * debug builds (MS_DEBUG_INVARIANTS, ms_invariant.h):
 *
 *   state     meaning                       moves to (by)
 *   EMPTY     open, nothing pending         EMPTY (an oversized trace
 *                                           emitted at once: stage_one),
 *                                           PENDING (stage_one),
 *                                           FINISHED (ms_stager_finish),
 *                                           FAILED (stage_one, emit)
 *   PENDING   traces wait for their batch   PENDING (stage_one),
 *                                           FLUSHING (flush),
 *                                           FAILED (stage_one)
 *   FLUSHING  a batch is cut: decided and   EMPTY (end_batch),
 *             its traces emitted            FAILED (build_and_decide,
 *                                           decide, judge_drop, emit)
 *   FINISHED  ms_stager_finish returned     - (ms_stager_close)
 *   FAILED    an emit, chain or memory      - (ms_stager_close)
 *             error: adds are refused
 *
 * Modes, fixed at open: the grace policy (hot entries and the hot flag
 * bytes exist under the trace policy only), copy_rows (one row copy per
 * pending trace, else none) and the projection (ms_stager_add_summary
 * only with projection none and no row copy).
 */
#include "ms_clock.h"
#include "ms_invariant.h"
#include "staging_int.h"

#include <stdatomic.h>
#include <string.h>

/*
 * What one pending trace costs the stager, whatever its outcome: a
 * batch entry (or, for a hot trace under the trace policy, a hot entry,
 * which is smaller), its pending entry (the caller's cookie; the i-th
 * pending trace that is not hot is batch entry i, the others are hot
 * entries in order, told apart by one flag byte under the trace policy),
 * the keep byte and one link's verdict and check bytes (2 more per
 * further link), and the drop-set reserve (slot + ID vector entry). The
 * trace ID is stored once, out of line (the batch's ID bytes, or the hot
 * IDs), and charged by length.
 */
typedef struct pend {
	void *cookie; /* the pending entry: the rest is found in order */
} pend;

typedef struct hot_ent {
	uint32_t tid_off; /* in the stager's hot ID bytes */
	uint32_t tid_len;
	uint32_t nrows;
	int64_t min_ts, max_ts;
} hot_ent;

_Static_assert(sizeof(hot_ent) <= sizeof(ms_plugin_trace),
               "a hot entry is charged as a batch entry");

_Static_assert(sizeof(pend) == sizeof(void *),
               "MS__TRACE_FIXED charges one pointer per pending entry");

/* ------------------------------------------------------------------ */
/* Row copies (copy_rows): an arena of bounded chunks, reset after every
 * batch. Never seen by a plugin, so reusing it is safe. */

#define ARENA_CHUNK (256u << 10)
#define ARENA_KEEP 4

static size_t
slen(const char *s)
{
	return s ? strlen(s) + 1 : 0;
}

static ms_row *
copy_rows(ms_arena *a, const ms_row *rows, size_t n)
{
	ms_row *out = ms_arena_alloc(a, n * sizeof(ms_row), 16);
	uint8_t *tid = ms_arena_alloc(a, rows[0].trace_id_len, 16);
	if (!out || !tid)
		return NULL;
	memcpy(tid, rows[0].trace_id, rows[0].trace_id_len);
	for (size_t i = 0; i < n; i++)
		if (ms_row_copy(a, tid, &rows[i], &out[i]))
			return NULL;
	return out;
}

/* ------------------------------------------------------------------ */
/* Stager                                                              */

enum stager_state {
	ST_EMPTY,
	ST_PENDING,
	ST_FLUSHING,
	ST_FINISHED,
	ST_FAILED,
	ST_STATE_COUNT,
};

#define ST_TO(st) MS__STATE_TO(st)
static const ms__state stager_states[ST_STATE_COUNT] = {
	[ST_EMPTY] = { "empty", ST_TO(ST_EMPTY) | ST_TO(ST_PENDING) |
	                                ST_TO(ST_FINISHED) | ST_TO(ST_FAILED) },
	[ST_PENDING] = { "pending", ST_TO(ST_PENDING) | ST_TO(ST_FLUSHING) |
	                                    ST_TO(ST_FAILED) },
	[ST_FLUSHING] = { "flushing", ST_TO(ST_EMPTY) | ST_TO(ST_FAILED) },
	[ST_FINISHED] = { "finished", 0 },
	[ST_FAILED] = { "failed", 0 },
};

const ms__state *
ms__stager_state_table(int *n)
{
	*n = ST_STATE_COUNT;
	return stager_states;
}

struct ms_stager {
	ms_stager_opts o;
	ms_mem mem; /* child of o.mem: staging's own figures */
	uint32_t proj;
	uint64_t fixed; /* per-trace charge before ID and columns */
	ms__builder b;
	ms_arena ar;
	ms_buf pend; /* pend entries, in order */
	size_t npend;
	ms_buf hotflag;  /* trace policy: one byte per pending trace */
	ms_buf hot;      /* hot_ent, for pending hot traces */
	ms_buf hot_tids; /* their IDs */
	ms_buf prows;    /* copy_rows: ms_row * per pending trace */
	uint64_t last_charge; /* the charge of the last pending trace */
	uint64_t live;
	uint8_t last_tid[MS_TRACE_ID_MAX]; /* last staged */
	uint32_t last_tid_len;
	uint8_t dmax[MS_TRACE_ID_MAX]; /* highest ID handed to the chain */
	uint32_t dmax_len;
	bool expect; /* ms_stager_expect_bounds for the next add */
	int64_t exp_min, exp_max, exp_end;
	enum stager_state st;
	uint64_t abandoned; /* batches a timed-out call kept (design 8) */
	uint8_t *keep;
	size_t keepcap;
	ms_stage_report rep;
};

/* What the buffers of a batch may hold to be reused (design 5): twice
 * the preferred limit. */
static uint64_t
reuse_bound(const ms_stager *s)
{
	uint64_t p = s->o.plan.preferred;
	return p > UINT64_MAX / 2 ? UINT64_MAX : 2 * p;
}

/* Bytes the builder keeps between batches: its data buffers and its
 * spare pointer array (the larger, each bounded by design 5). */
static uint64_t
builder_retained(const ms__builder *b)
{
	uint64_t data = 0;
	for (int i = 0; i < C_NDATA; i++)
		data += b->buf[i].cap;
	return data > b->ptrs_size ? data : b->ptrs_size;
}

/*
 * The design rules that can be read off the stager's fields, in every
 * state but FAILED (a failure may stop a batch anywhere). NULL when they
 * hold, else the first broken one, led by its design number. O(1): no
 * walk over the pending traces.
 */
const char *
ms__stager_check(const ms_stager *s)
{
	const ms_stage_plan *pl = &s->o.plan;
	const ms_stage_report *r = &s->rep;
	if ((unsigned)s->st >= ST_STATE_COUNT)
		return "state out of range";
	if (s->st == ST_FAILED)
		return NULL;
	if (pl->preferred == 0 || pl->preferred > pl->hard ||
	    pl->oversized_cap == 0 || pl->oversized_cap > pl->hard ||
	    pl->trace_cap == 0 || pl->trace_cap > MS_STAGE_MAX_TRACES)
		return "2: plan: 0 < preferred, oversized cap <= hard, "
		       "1 <= trace cap <= 65,536";
	if ((s->npend == 0) != (s->st == ST_EMPTY || s->st == ST_FINISHED))
		return "states: nothing pending exactly when empty or finished";
	size_t nhot = s->hot.len / sizeof(hot_ent);
	if (s->pend.len != s->npend * sizeof(pend) ||
	    s->npend != s->b.ntraces + nhot)
		return "6: one pending entry and one batch or hot entry per "
		       "pending trace";
	if (s->o.policy == MS_GRACE_TRACE ? s->hotflag.len != s->npend
	                                  : s->hotflag.len != 0 || nhot != 0)
		return "modes: hot entries and one flag byte per pending trace "
		       "under the trace policy only";
	if (s->prows.len != (s->o.copy_rows ? s->npend * sizeof(ms_row *) : 0))
		return "modes: one row copy per pending trace with copy_rows "
		       "only";
	if (s->npend == 0 ? s->live != 0 : s->live < s->npend * s->fixed)
		return "2: live charge is the pending traces' charges, each "
		       "at least the fixed part";
	if (s->npend == 1
	            ? s->live > pl->oversized_cap
	            : s->npend > 1 && s->live - s->last_charge >= pl->preferred)
		return "2: a batch went on past the preferred limit (one "
		       "trace: above the oversized cap)";
	if (s->b.ntraces > pl->trace_cap)
		return "3: more batch entries than the trace cap";
	if (r->traces != r->kept + r->dropped + r->deferred + r->oversized +
	                         r->hot + s->npend ||
	    r->proposed_drops != r->dropped + r->deferred ||
	    r->drop_set_full > r->deferred)
		return "1: every trace staged is pending or was emitted once, "
		       "with one outcome";
	if (r->peak_charged < s->live || r->total_charged < s->live ||
	    (s->o.live_gauge && atomic_load(s->o.live_gauge) < s->live))
		return "2: the peak, the total and the pipeline's gauge hold "
		       "the live charge";
	if (r->batches_reused + s->abandoned > r->batches)
		return "5: a batch whose chain call timed out was reused";
	if (s->b.ntraces == 0 && builder_retained(&s->b) > reuse_bound(s))
		return "5: the builder retains more than twice the preferred "
		       "limit between batches";
	return NULL;
}

/* Move s to state `to` (the table above), then check its accounting
 * (debug builds only). */
static void
stager_move(ms_stager *s, enum stager_state to)
{
	MS_INVARIANT(ms__state_move_ok(stager_states, ST_STATE_COUNT,
	                               (int)s->st, (int)to),
	             "stager moves from %s to %s", stager_states[s->st].name,
	             stager_states[to].name);
	s->st = to;
	MS_INVARIANT(!ms__stager_check(s), "stager, %s: %s",
	             stager_states[to].name, ms__stager_check(s));
}

void
ms__stager_test_break(ms_stager *s, enum ms__stager_break what)
{
	switch (what) {
	case MS__STAGER_BREAK_CHARGE:
		s->live += s->o.plan.hard + 1;
		break;
	case MS__STAGER_BREAK_PENDING:
		s->npend++;
		break;
	case MS__STAGER_BREAK_OUTCOME:
		s->rep.kept++;
		break;
	case MS__STAGER_BREAK_REUSE:
		s->rep.batches_reused++;
		break;
	}
}

int
ms_stager_open(ms_stager **out, const ms_stager_opts *opts, ms_errbuf *eb)
{
	*out = NULL;
	if (!opts || !opts->chain || !opts->emit)
		return ms_fail(eb, MS_ERR_INVAL,
		               "stager: a chain and an emit callback are "
		               "required");
	ms_stager *s = ms_mem_calloc(opts->mem, 1, sizeof(*s));
	if (!s)
		return ms_fail(
		        eb, MS_ERR_NOMEM,
		        "stager: out of memory for its state (%zu bytes)",
		        sizeof(*s));
	s->o = *opts;
	ms_mem_init(&s->mem, opts->mem);
	ms_stage_plan *pl = &s->o.plan;
	if (pl->hard == 0) {
		uint64_t hint = pl->trace_hint;
		ms_stage_plan_make(pl, MS_STAGE_MIN_HARD, pl->estimate);
		pl->trace_hint = hint;
	}
	if (pl->preferred == 0 || pl->preferred > pl->hard)
		pl->preferred = pl->hard;
	if (pl->trace_cap == 0 || pl->trace_cap > MS_STAGE_MAX_TRACES)
		pl->trace_cap = MS_STAGE_MAX_TRACES;
	if (pl->oversized_cap == 0 || pl->oversized_cap > pl->hard)
		pl->oversized_cap = pl->hard;
	s->proj = ms_chain_projection(opts->chain);
	size_t links = ms_chain_len(opts->chain);
	s->fixed = MS__TRACE_FIXED + (links > 1 ? 2 * (links - 1) : 0) +
	           (opts->copy_rows ? sizeof(ms_row *) : 0) +
	           (opts->policy == MS_GRACE_TRACE ? 1 : 0);
	ms__builder_init(&s->b, &s->mem, s->proj);
	/* The stager's own ms_mem dies with it; a batch a timed-out plugin
	 * still reads is freed later through the root of opts->mem (or
	 * uncounted if there is none). */
	ms_mem *root = opts->mem;
	while (root && root->parent)
		root = root->parent;
	s->b.late_mem = root;
	ms_arena_init(&s->ar, &s->mem, ARENA_CHUNK, ARENA_KEEP);
	ms_buf_init(&s->pend, &s->mem, 0);
	ms_buf_init(&s->hotflag, &s->mem, 0);
	ms_buf_init(&s->hot, &s->mem, 0);
	ms_buf_init(&s->hot_tids, &s->mem, 0);
	ms_buf_init(&s->prows, &s->mem, 0);
	s->rep.plan = *pl;
	s->rep.cls = MS_SAMPLING_ENABLED_NO_EVALUATION;
	s->rep.reason = MS_SREASON_OTHER; /* until finish says */
	s->st = ST_EMPTY;
	MS_INVARIANT(!ms__stager_check(s), "stager opened: %s",
	             ms__stager_check(s));
	*out = s;
	return 0;
}

static uint64_t
str_charge(const char *s)
{
	return sizeof(size_t) + sizeof(char *) + (s ? strlen(s) : 0) + 1;
}

uint64_t
ms_stager_charge(const ms_stager *s, const ms_row *rows, size_t n,
                 uint64_t extra_bytes)
{
	uint32_t p = s->proj;
	uint64_t c = s->fixed + extra_bytes;
	if (n)
		c += rows[0].trace_id_len;
	if (p & MS_PROJ_TAGS)
		c += 8; /* the batch's closing tag offset, charged per trace */
	for (size_t i = 0; i < n; i++) {
		const ms_row *r = &rows[i];
		if (p & MS_PROJ_SPAN_ID)
			c += 8;
		if (p & MS_PROJ_START)
			c += 8;
		if (p & MS_PROJ_LATENCY)
			c += 4;
		if (p & MS_PROJ_ERROR)
			c += 1;
		if (p & MS_PROJ_SEGMENT_ID)
			c += str_charge(r->segment_id);
		if (p & MS_PROJ_SERVICE)
			c += str_charge(r->service);
		if (p & MS_PROJ_INSTANCE)
			c += str_charge(r->instance);
		if (p & MS_PROJ_ENDPOINT)
			c += str_charge(r->endpoint);
		if (p & MS_PROJ_TAGS) {
			c += 8;
			for (uint32_t k = 0; k < r->ntags; k++)
				c += str_charge(r->tags[k]) + 4;
		}
		if (p & MS_PROJ_BODY)
			c += sizeof(size_t) + sizeof(void *) + 4 + r->body_len;
		if (s->o.copy_rows) {
			c += sizeof(ms_row) + slen(r->segment_id) +
			     slen(r->service) + slen(r->instance) +
			     slen(r->endpoint) + r->body_len +
			     (uint64_t)r->ntags * sizeof(char *);
			for (uint32_t k = 0; k < r->ntags; k++)
				c += slen(r->tags[k]);
		}
	}
	if (s->o.copy_rows && n)
		c += rows[0].trace_id_len;
	return c;
}

void
ms_stager_expect_bounds(ms_stager *s, int64_t min_ts, int64_t max_ts,
                        int64_t max_end_ns)
{
	s->expect = true;
	s->exp_min = min_ts;
	s->exp_max = max_ts;
	s->exp_end = max_end_ns;
}

/* The staging memory's own peak and total: read when a batch is built
 * and at the end (the allocator keeps the running peak, so reading it
 * then misses nothing); the charged peak is followed per trace. */
static void
note_peak(ms_stager *s)
{
	if (s->live > s->rep.peak_charged)
		s->rep.peak_charged = s->live;
	ms_mem_stats ms;
	ms_mem_stats_get(&s->mem, &ms);
	if ((uint64_t)ms.peak_live > s->rep.peak_alloc)
		s->rep.peak_alloc = (uint64_t)ms.peak_live;
	s->rep.alloc_bytes = ms.bytes;
}

static int
emit(ms_stager *s, ms_stage_emit *e, ms_errbuf *eb)
{
	ms_errbuf own = { { 0 } };
	int rc = s->o.emit(s->o.emit_ctx, e, &own);
	if (rc) {
		stager_move(s, ST_FAILED);
		rc = rc < 0 ? rc : MS_ERR_CANCELED;
		if (own.msg[0])
			return ms_fail(eb, rc, "%s", own.msg);
		return ms_fail(eb, rc,
		               "stager: emit callback stopped the merge (%s)",
		               ms_strerror(rc));
	}
	return 0;
}

/* Count batch entries whose ID is not above every ID handed to the chain
 * before (one compare per entry; the highest ID is copied once). */
static void
check_decide_order(ms_stager *s, const ms_plugin_batch *v)
{
	const uint8_t *hi = s->dmax;
	uint32_t hi_len = s->dmax_len;
	for (size_t i = 0; i < v->ntraces; i++) {
		const ms_plugin_trace *t = &v->traces[i];
		if (hi_len && ms_trace_id_cmp(t->trace_id, t->trace_id_len, hi,
		                              hi_len) <= 0) {
			s->rep.decide_dup_traces++;
			continue;
		}
		hi = t->trace_id;
		hi_len = t->trace_id_len;
	}
	if (hi != s->dmax && hi_len <= MS_TRACE_ID_MAX) {
		memcpy(s->dmax, hi, hi_len);
		s->dmax_len = hi_len;
	}
}

static int
decide(ms_stager *s, ms_batch *bt, ms_errbuf *eb)
{
	const ms_plugin_batch *v = ms_batch_view(bt);
	size_t nb = v->ntraces;
	int calls = s->o.test && s->o.test->decide_twice ? 2 : 1;
	for (int k = 0; k < calls; k++) {
		check_decide_order(s, v);
		ms_chain_call call;
		int rc = ms_chain_decide(s->o.chain, bt, s->keep, &call);
		if (rc) {
			stager_move(s, ST_FAILED);
			return ms_fail(eb, rc, "stager: chain: %s",
			               ms_strerror(rc));
		}
		s->rep.decide_calls++;
		s->rep.decide_ns += call.decide_ns;
		for (size_t i = 0; i < MS_CHAIN_MAX_LINKS; i++)
			s->rep.link_calls[i] += (call.called_mask >> i) & 1u;
		if (call.links_ok > 0 && k == 0)
			s->rep.evaluated += nb;
	}
	return 0;
}

/* Finish the builder's batch, size the keep bytes for it and run the
 * chain on it: *bt is the batch (the caller releases it). */
static int
build_and_decide(ms_stager *s, size_t nb, ms_batch **bt, ms_errbuf *eb)
{
	int rc = ms__builder_finish(&s->b, bt);
	if (rc == MS_ERR_NOMEM) {
		stager_move(s, ST_FAILED);
		return ms_fail(
		        eb, rc,
		        "stager: out of memory for a batch of %zu traces "
		        "and %zu rows (its columns hold %zu bytes)",
		        s->b.ntraces, s->b.nrows, ms__builder_bytes(&s->b));
	}
	if (rc) {
		stager_move(s, ST_FAILED);
		return ms_fail(eb, rc, "stager: building a batch: %s",
		               ms_strerror(rc));
	}
	if (nb > s->keepcap) {
		uint8_t *k = ms_mem_realloc(&s->mem, s->keep, s->keepcap, nb);
		if (!k) {
			stager_move(s, ST_FAILED);
			return ms_fail(eb, MS_ERR_NOMEM,
			               "stager: out of memory for the verdicts "
			               "of a batch of %zu traces (%zu bytes)",
			               nb, nb);
		}
		s->keep = k;
		s->keepcap = nb;
	}
	note_peak(s);
	return decide(s, *bt, eb);
}

/* Pending trace i's emit record before its verdict: ID, rows and bounds
 * from its hot entry or its batch entry. */
static void
pending_emit(const ms_stager *s, size_t i, bool hot, size_t idx,
             const ms_plugin_trace *tr, ms_stage_emit *e)
{
	memset(e, 0, sizeof(*e));
	e->rows = s->o.copy_rows ? ((ms_row *const *)s->prows.data)[i] : NULL;
	e->cookie = ((const pend *)s->pend.data)[i].cookie;
	e->outcome = MS_TRACE_KEPT;
	e->keep = true;
	e->batch_end = i + 1 == s->npend;
	if (hot) {
		const hot_ent *h = &((const hot_ent *)s->hot.data)[idx];
		e->trace_id = s->hot_tids.data + h->tid_off;
		e->trace_id_len = h->tid_len;
		e->nrows = h->nrows;
		e->min_ts = h->min_ts;
		e->max_ts = h->max_ts;
	} else {
		const ms_plugin_trace *t = &tr[idx];
		e->trace_id = t->trace_id;
		e->trace_id_len = t->trace_id_len;
		e->nrows = t->row_count;
		e->min_ts = t->min_start_ns;
		e->max_ts = t->max_start_ns;
	}
}

/* A drop the chain proposed: kept if the drop set is full (before the
 * guard, as the reference: a kept trace needs no confirmation), else the
 * guard confirms it (recorded in the drop set) or defers it (kept). */
static int
judge_drop(ms_stager *s, ms_stage_emit *e, ms_errbuf *eb)
{
	s->rep.proposed_drops++;
	if (!ms_dropset_can_accept(s->o.drops)) {
		e->outcome = MS_TRACE_DEFERRED;
		s->rep.deferred++;
		s->rep.drop_set_full++;
		return 0;
	}
	enum ms_guard_reason why_g = MS_GUARD_NO_FILTER;
	bool ok = s->o.guard &&
	          ms_guard_check(s->o.guard, e->trace_id, e->trace_id_len,
	                         e->min_ts, e->max_ts, &why_g);
	if (ok && s->o.drops) {
		int rc =
		        ms_dropset_add(s->o.drops, e->trace_id, e->trace_id_len,
		                       e->min_ts, e->max_ts, eb);
		if (rc) {
			stager_move(s, ST_FAILED);
			return rc;
		}
	}
	if (ok) {
		e->outcome = MS_TRACE_DROPPED;
		e->keep = false;
		s->rep.dropped++;
	} else {
		e->outcome = MS_TRACE_DEFERRED;
		s->rep.deferred++;
	}
	return 0;
}

/* After a batch's traces are out: hand its buffers back to the builder
 * (design 5) and empty the pending state. */
static void
end_batch(ms_stager *s, ms_batch *bt)
{
	/* Reuse the batch's buffers for the next batch of this merge,
	 * bounded by twice the preferred limit: a batch that one large
	 * trace made bigger is freed instead. */
	if (bt && ms__builder_reclaim(&s->b, bt, reuse_bound(s)))
		s->rep.batches_reused++;
	ms_batch_release(bt);
	ms_buf_reset(&s->pend);
	ms_buf_reset(&s->hotflag);
	ms_buf_reset(&s->hot);
	ms_buf_reset(&s->hot_tids);
	ms_buf_reset(&s->prows);
	s->npend = 0;
	if (s->o.live_gauge)
		atomic_fetch_sub(s->o.live_gauge, s->live);
	s->live = 0;
	ms_arena_reset(&s->ar);
	if (s->st == ST_FLUSHING) /* else FAILED: stays so */
		stager_move(s, ST_EMPTY);
}

/* Cut the pending traces as one batch: decide the batch entries, emit
 * every pending trace in order with its outcome (design 1), record the
 * batch and end it. */
static int
flush(ms_stager *s, enum ms_flush_reason why, ms_errbuf *eb)
{
	if (s->npend == 0)
		return 0;
	stager_move(s, ST_FLUSHING);
	size_t nb = s->b.ntraces;
	ms_batch *bt = NULL;
	const ms_plugin_trace *tr = NULL;
	int rc = 0;
	if (nb) {
		if ((rc = build_and_decide(s, nb, &bt, eb))) {
			ms_batch_release(bt);
			return rc;
		}
		if (ms__batch_abandoned(bt))
			s->abandoned++;
		tr = ms_batch_view(bt)->traces;
	}
	ms_stage_batch_rec rec = { s->live, (uint32_t)s->npend, 0, why };
	if (s->rep.batches < MS_STAGE_BATCH_RECS)
		s->rep.batch[s->rep.batches] = rec;
	const uint8_t *hotflag = s->hotflag.len ? s->hotflag.data : NULL;
	size_t nbi = 0, nhi = 0; /* next batch entry, next hot entry */
	for (size_t i = 0; i < s->npend && !rc; i++) {
		bool hot = hotflag && hotflag[i];
		size_t idx = hot ? nhi++ : nbi++;
		ms_stage_emit e;
		pending_emit(s, i, hot, idx, tr, &e);
		if (hot) {
			e.outcome = MS_TRACE_HOT;
			s->rep.hot++;
		} else if (s->keep[idx]) {
			s->rep.kept++;
		} else if ((rc = judge_drop(s, &e, eb))) {
			break;
		}
		rc = emit(s, &e, eb);
	}
	if (s->rep.batches < MS_STAGE_BATCH_RECS)
		s->rep.batch[s->rep.batches].evaluated = (uint32_t)nb;
	s->rep.batches++;
	end_batch(s, bt);
	return rc;
}

/* Order check shared by both add paths: IDs ascend strictly. */
static int
check_order(ms_stager *s, const uint8_t *tid, uint32_t len, ms_errbuf *eb)
{
	if (s->last_tid_len &&
	    ms_trace_id_cmp(s->last_tid, s->last_tid_len, tid, len) >= 0)
		return ms_fail(eb, MS_ERR_INVAL,
		               "stager: trace IDs must ascend strictly "
		               "(merge order)");
	memcpy(s->last_tid, tid, len);
	s->last_tid_len = len;
	return 0;
}

/* Traces this batch may still hold, to size its vectors once. */
static size_t
batch_hint(const ms_stager *s)
{
	const ms_stage_plan *pl = &s->o.plan;
	if (pl->trace_hint == 0)
		return 0;
	uint64_t done = s->rep.traces ? s->rep.traces - 1 : 0;
	uint64_t left = pl->trace_hint > done ? pl->trace_hint - done : 1;
	return (size_t)(left < pl->trace_cap ? left : pl->trace_cap);
}

/* An allocation of `bytes` for `what` that failed with rc (MS_ERR_NOMEM,
 * or MS_ERR_RANGE past a vector's bound): the stager fails. */
static int
nomem(ms_stager *s, int rc, const char *what, size_t bytes, ms_errbuf *eb)
{
	stager_move(s, ST_FAILED);
	return ms_fail(eb, rc < 0 ? rc : MS_ERR_NOMEM,
	               "stager: out of memory for %s (%zu bytes)", what, bytes);
}

/* The gauge's value after an add is all: the peak gauge holds the
 * highest (design 2: it outlives the batch, as live does not). */
static void
raise_peak_gauge(ms_stager *s, uint64_t all)
{
	if (!s->o.peak_gauge || !s->o.live_gauge)
		return;
	uint64_t was = atomic_load(s->o.peak_gauge);
	while (all > was &&
	       !atomic_compare_exchange_weak(s->o.peak_gauge, &was, all))
		;
}

/* Whether the trace policy keeps a trace of max timestamp max_ts from
 * Decide: it is hot behind the frontier (moved by a test's skew). */
static bool
trace_hot(const ms_stager *s, int64_t max_ts)
{
	int64_t frontier = s->o.frontier_ns;
	if (s->o.test)
		frontier += s->o.test->skew_frontier_ns;
	return s->o.policy == MS_GRACE_TRACE &&
	       !ms_ts_mature(max_ts, frontier);
}

/* Stage one trace with charge c: rows (may be NULL with a summary) or
 * the summary ts goes into the batch. */
static int
stage_one(ms_stager *s, const ms_row *rows, const ms_stage_summary *ts,
          void *cookie, uint64_t c, ms_errbuf *eb)
{
	bool expect = s->expect;
	s->expect = false;
	const ms_stage_plan *pl = &s->o.plan;
	int rc;
	if (c > pl->oversized_cap) {
		rc = flush(s, MS_FLUSH_OVERSIZED, eb);
		if (rc)
			return rc;
		s->rep.traces++;
		s->rep.rows += ts->nrows;
		s->rep.oversized++;
		ms_stage_emit e = { ts->trace_id, ts->trace_id_len,
			            rows,         ts->nrows,
			            cookie,       MS_TRACE_OVERSIZED,
			            true,         ts->min_ts,
			            ts->max_ts,   true };
		if ((rc = emit(s, &e, eb)))
			return rc;
		stager_move(s, ST_EMPTY);
		return 0;
	}
	bool hot = trace_hot(s, ts->max_ts);
	if (s->npend && s->live >= pl->preferred) {
		rc = flush(s, MS_FLUSH_BYTES, eb);
		if (rc)
			return rc;
	}
	if (!hot && s->b.ntraces >= pl->trace_cap) {
		rc = flush(s, MS_FLUSH_TRACES, eb);
		if (rc)
			return rc;
	}
	/* Counted once no flush is left to come before it is pending
	 * (design 1 counts it pending from here). */
	s->rep.traces++;
	s->rep.rows += ts->nrows;
	size_t hint = batch_hint(s);
	if (hint && s->pend.cap == 0 &&
	    (rc = ms_buf_presize(&s->pend, hint * sizeof(pend))))
		return nomem(s, rc, "the pending traces of a batch",
		             hint * sizeof(pend), eb);
	pend p = { cookie };
	uint8_t hf = hot;
	if (s->o.policy == MS_GRACE_TRACE &&
	    (rc = ms_buf_append(&s->hotflag, &hf, 1)))
		return nomem(s, rc, "the pending traces' hot flags",
		             s->hotflag.len + 1, eb);
	if (s->o.copy_rows) {
		ms_row *copy = rows ? copy_rows(&s->ar, rows, ts->nrows) : NULL;
		if (rows && !copy)
			return nomem(
			        s, MS_ERR_NOMEM, "a copy of a trace's rows",
			        ts->nrows * sizeof(ms_row) + ts->trace_id_len,
			        eb);
		if ((rc = ms_buf_append(&s->prows, &copy, sizeof(copy))))
			return nomem(s, rc, "the pending traces' row copies",
			             s->prows.len + sizeof(copy), eb);
	}
	if (hot) {
		hot_ent h = { (uint32_t)s->hot_tids.len, ts->trace_id_len,
			      ts->nrows, ts->min_ts, ts->max_ts };
		if (s->hot_tids.len > UINT32_MAX - MS_TRACE_ID_MAX)
			return nomem(s, MS_ERR_RANGE,
			             "the hot traces' IDs (at most 4 GiB)",
			             s->hot_tids.len + ts->trace_id_len, eb);
		if ((rc = ms_buf_append(&s->hot_tids, ts->trace_id,
		                        ts->trace_id_len)))
			return nomem(s, rc, "the hot traces' IDs",
			             s->hot_tids.len + ts->trace_id_len, eb);
		if ((rc = ms_buf_append(&s->hot, &h, sizeof(h))))
			return nomem(s, rc, "the hot traces' bounds",
			             s->hot.len + sizeof(h), eb);
	} else {
		s->b.hint = hint;
		rc = rows ? ms__builder_add(&s->b, rows, ts->nrows)
		          : ms__builder_add_summary(&s->b, ts);
		if (rc) {
			stager_move(s, ST_FAILED);
			return ms_fail(eb, rc < 0 ? rc : MS_ERR_NOMEM,
			               "stager: out of memory for trace %zu "
			               "of the batch being built (%u rows; "
			               "its columns hold %zu bytes)",
			               s->b.ntraces + 1, (unsigned)ts->nrows,
			               ms__builder_bytes(&s->b));
		}
		/* The entry exactly as the chain will get it. */
		ms_plugin_trace *t =
		        (ms_plugin_trace *)s->b.buf[C_TRACES].data +
		        (s->b.ntraces - 1);
		if (s->o.test)
			t->max_end_ns += s->o.test->skew_end_ns;
		if (expect) {
			s->rep.bounds_checked++;
			if (t->min_start_ns != s->exp_min ||
			    t->max_end_ns != s->exp_end)
				s->rep.bounds_mismatch++;
			if (!ms_ts_mature(s->exp_max, s->o.frontier_ns))
				s->rep.hot_decided++;
		}
	}
	if ((rc = ms__buf_put(&s->pend, &p, sizeof(p))))
		return nomem(s, rc, "the pending traces",
		             s->pend.len + sizeof(p), eb);
	s->npend++;
	s->live += c;
	s->last_charge = c;
	uint64_t all = s->live;
	if (s->o.live_gauge)
		all = atomic_fetch_add(s->o.live_gauge, c) + c;
	raise_peak_gauge(s, all);
	if (all > s->rep.peak_concurrent)
		s->rep.peak_concurrent = all;
	s->rep.total_charged += c;
	if (s->live > s->rep.peak_charged)
		s->rep.peak_charged = s->live;
	stager_move(s, ST_PENDING);
	return 0;
}

int
ms_stager_add(ms_stager *s, const ms_row *rows, size_t n, void *cookie,
              uint64_t extra_bytes, ms_errbuf *eb)
{
	if (s->st == ST_FAILED || s->st == ST_FINISHED)
		return ms_fail(eb, MS_ERR_STATE, "stager: add after %s",
		               s->st == ST_FAILED ? "a failure" : "finish");
	if (n == 0 || !rows || !ms__valid_tid(&rows[0]))
		return ms_fail(eb, MS_ERR_INVAL,
		               "stager: a trace needs >= 1 row and a 1..%d "
		               "byte trace ID",
		               MS_TRACE_ID_MAX);
	if (n > UINT32_MAX)
		return ms_fail(eb, MS_ERR_RANGE, "stager: trace too long");
	for (size_t i = 1; i < n; i++)
		if (!ms__same_tid(&rows[0], &rows[i]))
			return ms_fail(eb, MS_ERR_INVAL,
			               "stager: row %zu belongs to another "
			               "trace; one call stages one trace",
			               i);
	int rc = check_order(s, rows[0].trace_id, rows[0].trace_id_len, eb);
	if (rc)
		return rc;
	ms_stage_summary ts = { rows[0].trace_id, rows[0].trace_id_len,
		                (uint32_t)n,      rows[0].start_ns,
		                rows[0].start_ns, 0 };
	for (size_t i = 1; i < n; i++) {
		if (rows[i].start_ns < ts.min_ts)
			ts.min_ts = rows[i].start_ns;
		if (rows[i].start_ns > ts.max_ts)
			ts.max_ts = rows[i].start_ns;
	}
	uint64_t c = ms_stager_charge(s, rows, n, extra_bytes);
	return stage_one(s, rows, &ts, cookie, c, eb);
}

int
ms_stager_add_summary(ms_stager *s, const ms_stage_summary *t, void *cookie,
                      uint64_t extra_bytes, ms_errbuf *eb)
{
	if (s->st == ST_FAILED || s->st == ST_FINISHED)
		return ms_fail(eb, MS_ERR_STATE, "stager: add after %s",
		               s->st == ST_FAILED ? "a failure" : "finish");
	if (s->proj != MS_PROJ_NONE || s->o.copy_rows)
		return ms_fail(eb, MS_ERR_INVAL,
		               "stager: a summary needs a chain that reads "
		               "no column and no row copy");
	if (!t || !t->trace_id || t->trace_id_len < 1 ||
	    t->trace_id_len > MS_TRACE_ID_MAX || t->nrows == 0 ||
	    t->min_ts > t->max_ts)
		return ms_fail(eb, MS_ERR_INVAL,
		               "stager: a summary needs >= 1 row, a 1..%d "
		               "byte trace ID and min_ts <= max_ts",
		               MS_TRACE_ID_MAX);
	int rc = check_order(s, t->trace_id, t->trace_id_len, eb);
	if (rc)
		return rc;
	uint64_t c = s->fixed + t->trace_id_len + extra_bytes;
	return stage_one(s, NULL, t, cookie, c, eb);
}

/* The buffers the batches shared and the per-batch vectors, empty once
 * the last batch is emitted: given back at finish, not at close, since a
 * merge writes its indexes and publishes between the two. Idempotent. */
static void
release_buffers(ms_stager *s)
{
	ms__builder_release(&s->b);
	ms_arena_release(&s->ar);
	ms_buf_release(&s->pend);
	ms_buf_release(&s->hotflag);
	ms_buf_release(&s->hot);
	ms_buf_release(&s->hot_tids);
	ms_buf_release(&s->prows);
	ms_mem_free(&s->mem, s->keep, s->keepcap);
	s->keep = NULL;
	s->keepcap = 0;
}

int
ms_stager_finish(ms_stager *s, ms_errbuf *eb)
{
	if (s->st == ST_FAILED || s->st == ST_FINISHED)
		return ms_fail(eb, MS_ERR_STATE,
		               "stager: finish twice or "
		               "after a failure");
	int rc = flush(s, MS_FLUSH_FINAL, eb);
	if (rc)
		return rc;
	note_peak(s);
	stager_move(s, ST_FINISHED);
	release_buffers(s);
	/* The reference's rule for a merge that staged: executed when the
	 * chain was called and evaluated a trace; otherwise any oversized
	 * trace names the reason, and every other case is "other" (the
	 * hot and oversized counters say how many of each). */
	ms_stage_report *r = &s->rep;
	if (r->decide_calls > 0 && r->evaluated > 0) {
		r->cls = MS_SAMPLING_EXECUTED;
		r->reason = MS_SREASON_NONE;
		return 0;
	}
	r->cls = MS_SAMPLING_ENABLED_NO_EVALUATION;
	r->reason = r->oversized > 0 ? MS_SREASON_ALL_TRACES_OVERSIZED
	                             : MS_SREASON_OTHER;
	return 0;
}

const ms_stage_report *
ms_stager_report(const ms_stager *s)
{
	return &s->rep;
}

uint64_t
ms_stager_live(const ms_stager *s)
{
	return s->live;
}

void
ms_stager_close(ms_stager *s)
{
	if (!s)
		return;
	if (s->o.live_gauge)
		atomic_fetch_sub(s->o.live_gauge, s->live);
	release_buffers(s);
	ms_mem_free(s->o.mem, s, sizeof(*s));
}
