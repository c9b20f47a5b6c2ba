/*
 * staging.c - the staging budget, column-oriented batches and the stager
 * that feeds complete traces to the chain inside a merge.
 *
 * The budget has three independent limits: the hard ceiling derived from
 * memory and CPUs, the trace count per batch, and the per-trace oversized
 * cap. The adaptive planner picks a preferred batch size under the hard
 * ceiling from the inputs' estimate, so large merges are decided in a few
 * balanced batches instead of one large one. The stager charges each trace
 * the bytes it makes the host hold (projected column copies, descriptors,
 * index slots, verdict state, drop-set reserve, the row copy and the
 * caller's payload), cuts batches only between complete traces, and hands
 * every trace back in the order it came, with its outcome.
 *
 * Design (stager):
 *  1. Pending traces are emitted in the order they were added; nothing is
 *     emitted out of order, whatever its outcome.
 *  2. live_charged is the sum of the charges of the pending traces; it
 *     never exceeds max(preferred limit, the charge of one trace) and a
 *     trace is only staged if its charge is <= the oversized cap (<= hard).
 *  3. A batch holds at most trace_cap traces that reach Decide.
 *  4. An oversized trace is never put in a batch: pending traces are
 *     flushed first (reason "oversized"), then it is emitted unevaluated.
 *  5. A batch whose chain call timed out is never reused (the abandoned
 *     plugin may still read it; it is freed when that call returns). Any
 *     other batch hands its buffers back to the builder once its traces
 *     are emitted, emptied, so the batches of one merge share one set of
 *     buffers; retention is bounded by twice the preferred limit and
 *     ends with the stager.
 *  6. A trace ID is stored once, out of line: in the batch's ID bytes
 *     (a pending entry refers to its batch entry, which also holds the
 *     row count and bounds) or, for a hot trace, in the hot ID bytes.
 *     Per-trace vectors are sized once from the plan's trace hint.
 *  7. Every batch entry is checked before it goes to the chain: its ID
 *     must be above every ID handed to the chain before (else it counts
 *     in decide_dup_traces) and, when the caller gave the trace's bounds
 *     rebuilt from its fragments, its bounds must equal them (else
 *     bounds_mismatch).
 * States: open (adding) -> finished (ms_stager_finish) -> closed; after an
 * emit or chain error the stager is failed and refuses further adds.
 */
#include "ms_pipeline.h"
#include "pipeline_int.h"

#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Names                                                               */

const char *
ms_grace_policy_name(enum ms_grace_policy p)
{
	return p == MS_GRACE_TRACE ? "trace" : "selection";
}

int
ms_grace_policy_parse(const char *s, enum ms_grace_policy *out)
{
	if (s && strcmp(s, "selection") == 0)
		*out = MS_GRACE_SELECTION;
	else if (s && strcmp(s, "trace") == 0)
		*out = MS_GRACE_TRACE;
	else
		return MS_ERR_INVAL;
	return 0;
}

const char *
ms_flush_reason_name(enum ms_flush_reason r)
{
	switch (r) {
	case MS_FLUSH_BYTES:
		return "bytes";
	case MS_FLUSH_TRACES:
		return "traces";
	case MS_FLUSH_OVERSIZED:
		return "oversized";
	case MS_FLUSH_FINAL:
		return "final";
	}
	return "unknown";
}

const char *
ms_trace_outcome_name(enum ms_trace_outcome o)
{
	switch (o) {
	case MS_TRACE_KEPT:
		return "kept";
	case MS_TRACE_DROPPED:
		return "dropped";
	case MS_TRACE_DEFERRED:
		return "deferred";
	case MS_TRACE_OVERSIZED:
		return "oversized";
	case MS_TRACE_HOT:
		return "hot";
	}
	return "unknown";
}

/* ------------------------------------------------------------------ */
/* Budget and planner                                                  */

uint64_t
ms_staging_hard_ceiling(uint64_t mem, unsigned cpus)
{
	if (cpus == 0)
		cpus = 1;
	uint64_t v = mem / (4ull * cpus);
	uint64_t hi = mem / 16;
	if (hi < (32ull << 20))
		hi = 32ull << 20;
	if (v < MS_STAGE_MIN_HARD)
		v = MS_STAGE_MIN_HARD;
	if (v > hi)
		v = hi;
	return v;
}

uint64_t
ms_stage_estimate(const ms_part_meta *inputs, size_t n)
{
	uint64_t comp = 0, unc = 0, blocks = 0;
	for (size_t i = 0; i < n; i++) {
		comp += inputs[i].compressed_bytes;
		unc += inputs[i].uncompressed_bytes;
		blocks += inputs[i].blocks;
	}
	return (comp > unc ? comp : unc) + blocks * MS_STAGE_BLOCK_ESTIMATE;
}

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

#define DROP_RESERVE 24u
#define TRACE_FIXED (sizeof(ms_plugin_trace) + sizeof(pend) + 3u + DROP_RESERVE)

void
ms_stage_plan_make(ms_stage_plan *out, uint64_t hard, uint64_t estimate)
{
	memset(out, 0, sizeof(*out));
	if (hard == 0)
		hard = MS_STAGE_MIN_HARD;
	out->hard = hard;
	out->estimate = estimate;
	out->window = hard / 8 ? hard / 8 : 1;
	if (estimate == 0) {
		out->planned = 1;
		out->preferred = hard;
	} else {
		out->planned = (estimate + out->window - 1) / out->window;
		if (out->planned == 0)
			out->planned = 1;
		out->preferred = (estimate + out->planned - 1) / out->planned;
		if (out->preferred > hard)
			out->preferred = hard;
	}
	uint64_t by_bytes = out->preferred / (TRACE_FIXED + 1);
	if (by_bytes == 0)
		by_bytes = 1;
	out->trace_cap =
	        by_bytes < MS_STAGE_MAX_TRACES ? by_bytes : MS_STAGE_MAX_TRACES;
	out->oversized_cap = hard;
}

/* ------------------------------------------------------------------ */
/* Batches                                                             */

/* Columns a batch owns (C_NDATA of them), then builder scratch: offsets
 * that become pointers when the batch is finished. */
enum {
	C_TRACES,
	C_TIDS,
	C_SPAN,
	C_START,
	C_LAT,
	C_ERR,
	C_TAGFIRST,
	C_TAGLEN,
	C_STRS,
	C_BODYLEN,
	C_BODIES,
	C_NDATA,
	C_TAGOFF = C_NDATA,
	C_SEG,
	C_SVC,
	C_INST,
	C_EP,
	C_BODYOFF,
	C_NBUF
};

struct ms_batch {
	_Atomic unsigned refs;
	ms_mem *mem;
	ms_mem *late_mem; /* takes over the accounting when abandoned */
	bool abandoned;   /* a timed-out call keeps it: never reused */
	ms_plugin_batch view;
	ms_buf buf[C_NDATA];
	void *ptrs;
	size_t ptrs_size;
	uint64_t bytes;
};

/*
 * Builds one batch. The data columns move into the batch when it is
 * finished; the stager may hand them back afterwards (builder_reclaim),
 * emptied, so that the batches of one merge share one set of buffers.
 * hint > 0: the per-trace columns are first sized for that many traces.
 */
typedef struct builder {
	ms_mem *mem;
	ms_mem *late_mem;
	uint32_t proj;
	ms_buf buf[C_NBUF];
	size_t ntraces, nrows, ntags;
	size_t hint;
	void *ptrs; /* a spare pointer array handed back by a batch */
	size_t ptrs_size;
} builder;

static void
builder_init(builder *b, ms_mem *mem, uint32_t proj)
{
	memset(b, 0, sizeof(*b));
	b->mem = mem;
	b->late_mem = mem;
	b->proj = proj & MS_PROJ_ALL;
	for (int i = 0; i < C_NBUF; i++)
		ms_buf_init(&b->buf[i], mem, 0);
}

static void
builder_release(builder *b)
{
	for (int i = 0; i < C_NBUF; i++)
		ms_buf_release(&b->buf[i]);
	ms_mem_free(b->mem, b->ptrs, b->ptrs_size);
	b->ptrs = NULL;
	b->ptrs_size = 0;
	b->ntraces = b->nrows = b->ntags = 0;
}

/* Give b room for n bytes in total, exactly (ms_buf_reserve rounds up
 * to a power of two, which for a vector sized from a plan is waste). */
static int
buf_presize(ms_buf *b, size_t n)
{
	if (n <= b->cap)
		return 0;
	size_t max = b->max ? b->max : SIZE_MAX / 2;
	if (n > max)
		return MS_ERR_RANGE;
	uint8_t *d = ms_mem_realloc(b->mem, b->data, b->cap, n);
	if (!d)
		return MS_ERR_NOMEM;
	b->data = d;
	b->cap = n;
	return 0;
}

/* ms_buf_append with the common case inline: the vectors sized from the
 * plan's hint seldom grow, so most appends are a bounds test and a copy. */
static inline int
buf_put(ms_buf *b, const void *p, size_t n)
{
	if (n <= b->cap - b->len) {
		memcpy(b->data + b->len, p, n);
		b->len += n;
		return 0;
	}
	return ms_buf_append(b, p, n);
}

/* First trace of a batch with a hint: size the per-trace columns once
 * (IDs at this trace's length; the generators use fixed-width IDs, and
 * longer ones make the buffer grow as usual). */
static int
builder_presize_now(builder *b, uint32_t tid_len)
{
	size_t nt, ni;
	if (!ms_mul_ok(b->hint, sizeof(ms_plugin_trace), &nt) ||
	    !ms_mul_ok(b->hint, tid_len, &ni))
		return MS_ERR_RANGE;
	int rc = buf_presize(&b->buf[C_TRACES], nt);
	if (!rc && b->buf[C_TIDS].cap == 0)
		rc = buf_presize(&b->buf[C_TIDS], ni);
	return rc;
}

static inline int
builder_presize(builder *b, uint32_t tid_len)
{
	if (b->hint == 0 || b->buf[C_TRACES].cap != 0)
		return 0;
	return builder_presize_now(b, tid_len);
}

static int
put_str(builder *b, int col, const char *s)
{
	size_t off = b->buf[C_STRS].len;
	size_t len = s ? strlen(s) : 0;
	int rc = ms_buf_append(&b->buf[col], &off, sizeof(off));
	if (!rc)
		rc = ms_buf_append(&b->buf[C_STRS], s ? s : "", len);
	if (!rc)
		rc = ms_buf_append_u8(&b->buf[C_STRS], 0);
	return rc;
}

/* Append one trace (rows share one trace ID). */
static int
builder_add(builder *b, const ms_row *rows, size_t n)
{
	uint32_t p = b->proj;
	ms_plugin_trace t;
	memset(&t, 0, sizeof(t));
	t.trace_id_len = rows[0].trace_id_len;
	t.row_first = b->nrows;
	t.row_count = (uint32_t)n;
	t.min_start_ns = rows[0].start_ns;
	t.max_start_ns = rows[0].start_ns;
	t.max_end_ns = INT64_MIN;
	int rc = builder_presize(b, rows[0].trace_id_len);
	if (!rc)
		rc = ms_buf_append(&b->buf[C_TIDS], rows[0].trace_id,
		                   rows[0].trace_id_len);
	for (size_t i = 0; i < n && !rc; i++) {
		const ms_row *r = &rows[i];
		int64_t end = r->start_ns + (int64_t)r->latency_ms * 1000000;
		if (r->start_ns < t.min_start_ns)
			t.min_start_ns = r->start_ns;
		if (r->start_ns > t.max_start_ns)
			t.max_start_ns = r->start_ns;
		if (end > t.max_end_ns)
			t.max_end_ns = end;
		if (p & MS_PROJ_SPAN_ID)
			rc |= ms_buf_append(&b->buf[C_SPAN], &r->span_id, 8);
		if (p & MS_PROJ_START)
			rc |= ms_buf_append(&b->buf[C_START], &r->start_ns, 8);
		if (p & MS_PROJ_LATENCY)
			rc |= ms_buf_append(&b->buf[C_LAT], &r->latency_ms, 4);
		if (p & MS_PROJ_ERROR)
			rc |= ms_buf_append_u8(&b->buf[C_ERR],
			                       r->is_error ? 1 : 0);
		if (p & MS_PROJ_SEGMENT_ID)
			rc |= put_str(b, C_SEG, r->segment_id);
		if (p & MS_PROJ_SERVICE)
			rc |= put_str(b, C_SVC, r->service);
		if (p & MS_PROJ_INSTANCE)
			rc |= put_str(b, C_INST, r->instance);
		if (p & MS_PROJ_ENDPOINT)
			rc |= put_str(b, C_EP, r->endpoint);
		if (p & MS_PROJ_TAGS) {
			uint64_t first = b->ntags;
			rc |= ms_buf_append(&b->buf[C_TAGFIRST], &first, 8);
			for (uint32_t k = 0; k < r->ntags && !rc; k++) {
				const char *tg = r->tags[k] ? r->tags[k] : "";
				size_t off = b->buf[C_STRS].len;
				uint32_t tl = (uint32_t)strlen(tg);
				rc |= ms_buf_append(&b->buf[C_TAGOFF], &off,
				                    sizeof(off));
				rc |= ms_buf_append(&b->buf[C_TAGLEN], &tl, 4);
				rc |= ms_buf_append(&b->buf[C_STRS], tg, tl);
				rc |= ms_buf_append_u8(&b->buf[C_STRS], 0);
				b->ntags++;
			}
		}
		if (p & MS_PROJ_BODY) {
			size_t off = b->buf[C_BODIES].len;
			rc |= ms_buf_append(&b->buf[C_BODYOFF], &off,
			                    sizeof(off));
			rc |= ms_buf_append(&b->buf[C_BODYLEN], &r->body_len,
			                    4);
			if (r->body_len)
				rc |= ms_buf_append(&b->buf[C_BODIES], r->body,
				                    r->body_len);
		}
		b->nrows++;
	}
	if (!rc)
		rc = ms_buf_append(&b->buf[C_TRACES], &t, sizeof(t));
	if (rc)
		return rc < 0 ? rc : MS_ERR_NOMEM;
	b->ntraces++;
	return 0;
}

/* Append one trace known by its descriptor alone (projection none: no
 * row column to fill). */
static int
builder_add_summary(builder *b, const ms_stage_summary *ts)
{
	ms_plugin_trace t = {
		.trace_id_len = ts->trace_id_len,
		.row_count = ts->nrows,
		.row_first = b->nrows,
		.min_start_ns = ts->min_ts,
		.max_start_ns = ts->max_ts,
		.max_end_ns = ts->max_end_ns,
	};
	int rc = builder_presize(b, ts->trace_id_len);
	if (!rc)
		rc = buf_put(&b->buf[C_TIDS], ts->trace_id, ts->trace_id_len);
	if (!rc)
		rc = buf_put(&b->buf[C_TRACES], &t, sizeof(t));
	if (rc)
		return rc < 0 ? rc : MS_ERR_NOMEM;
	b->nrows += ts->nrows;
	b->ntraces++;
	return 0;
}

static void
batch_destroy(ms_batch *bt)
{
	ms_mem *m = bt->mem;
	for (int i = 0; i < C_NDATA; i++)
		ms_mem_free(m, bt->buf[i].data, bt->buf[i].cap);
	ms_mem_free(m, bt->ptrs, bt->ptrs_size);
	ms_mem_free(m, bt, sizeof(*bt));
}

/* Turn the builder's data columns into a batch; the builder keeps its
 * scratch (emptied) and starts the next batch with no data buffer, unless
 * builder_reclaim hands this batch's back. */
static int
builder_finish(builder *b, ms_batch **out)
{
	*out = NULL;
	ms_batch *bt = ms_mem_calloc(b->mem, 1, sizeof(*bt));
	if (!bt)
		return MS_ERR_NOMEM;
	atomic_init(&bt->refs, 1);
	bt->mem = b->mem;
	bt->late_mem = b->late_mem;
	size_t nstr = 0, nr = b->nrows;
	uint32_t p = b->proj;
	if (p & MS_PROJ_SEGMENT_ID)
		nstr++;
	if (p & MS_PROJ_SERVICE)
		nstr++;
	if (p & MS_PROJ_INSTANCE)
		nstr++;
	if (p & MS_PROJ_ENDPOINT)
		nstr++;
	if (p & MS_PROJ_BODY)
		nstr++;
	size_t slots = nstr * nr + ((p & MS_PROJ_TAGS) ? b->ntags : 0);
	size_t psize;
	if (!ms_mul_ok(slots, sizeof(void *), &psize)) {
		ms_mem_free(b->mem, bt, sizeof(*bt));
		return MS_ERR_RANGE;
	}
	if (p & MS_PROJ_TAGS) {
		uint64_t end = b->ntags;
		if (ms_buf_append(&b->buf[C_TAGFIRST], &end, 8)) {
			ms_mem_free(b->mem, bt, sizeof(*bt));
			return MS_ERR_NOMEM;
		}
	}
	if (psize && b->ptrs_size >= psize) {
		bt->ptrs = b->ptrs; /* the spare: large enough */
		bt->ptrs_size = b->ptrs_size;
		b->ptrs = NULL;
		b->ptrs_size = 0;
	} else if (psize) {
		bt->ptrs = ms_mem_alloc(b->mem, psize);
		if (!bt->ptrs) {
			ms_mem_free(b->mem, bt, sizeof(*bt));
			return MS_ERR_NOMEM;
		}
		bt->ptrs_size = psize;
	}
	memcpy(bt->buf, b->buf, sizeof(bt->buf));
	for (int i = 0; i < C_NDATA; i++)
		ms_buf_init(&b->buf[i], b->mem, 0);

	ms_plugin_batch *v = &bt->view;
	v->struct_size = sizeof(*v);
	v->projection = p;
	v->ntraces = b->ntraces;
	v->nrows = nr;
	/* IDs were appended in trace order: entry i's ID follows i-1's. */
	ms_plugin_trace *tr = (ms_plugin_trace *)bt->buf[C_TRACES].data;
	const uint8_t *tid = bt->buf[C_TIDS].data;
	for (size_t i = 0; i < b->ntraces; i++) {
		tr[i].trace_id = tid;
		tid += tr[i].trace_id_len;
	}
	v->traces = tr;
	const char *strs = (const char *)bt->buf[C_STRS].data;
	void **slot = bt->ptrs;
	static const int strcols[4] = { C_SEG, C_SVC, C_INST, C_EP };
	static const uint32_t strbits[4] = { MS_PROJ_SEGMENT_ID,
		                             MS_PROJ_SERVICE, MS_PROJ_INSTANCE,
		                             MS_PROJ_ENDPOINT };
	const char *const *strptr[4] = { NULL, NULL, NULL, NULL };
	for (int c = 0; c < 4; c++) {
		if (!(p & strbits[c]))
			continue;
		const size_t *off = (const size_t *)b->buf[strcols[c]].data;
		const char **arr = (const char **)slot;
		for (size_t r = 0; r < nr; r++)
			arr[r] = strs + off[r];
		strptr[c] = arr;
		slot += nr;
	}
	v->segment_id = strptr[0];
	v->service = strptr[1];
	v->instance = strptr[2];
	v->endpoint = strptr[3];
	if (p & MS_PROJ_SPAN_ID)
		v->span_id = (const uint64_t *)bt->buf[C_SPAN].data;
	if (p & MS_PROJ_START)
		v->start_ns = (const int64_t *)bt->buf[C_START].data;
	if (p & MS_PROJ_LATENCY)
		v->latency_ms = (const uint32_t *)bt->buf[C_LAT].data;
	if (p & MS_PROJ_ERROR)
		v->is_error = bt->buf[C_ERR].data;
	if (p & MS_PROJ_TAGS) {
		const size_t *off = (const size_t *)b->buf[C_TAGOFF].data;
		const char **arr = (const char **)slot;
		for (size_t k = 0; k < b->ntags; k++)
			arr[k] = strs + off[k];
		slot += b->ntags;
		v->tags = arr;
		v->ntags = b->ntags;
		v->tag_first = (const uint64_t *)bt->buf[C_TAGFIRST].data;
		v->tag_len = (const uint32_t *)bt->buf[C_TAGLEN].data;
	}
	if (p & MS_PROJ_BODY) {
		const size_t *off = (const size_t *)b->buf[C_BODYOFF].data;
		const uint32_t *bl = (const uint32_t *)bt->buf[C_BODYLEN].data;
		const uint8_t **arr = (const uint8_t **)slot;
		for (size_t r = 0; r < nr; r++)
			arr[r] = bl[r] ? bt->buf[C_BODIES].data + off[r] : NULL;
		v->body = arr;
		v->body_len = bl;
	}
	/* Offsets were only needed to build the pointers. */
	for (int i = C_NDATA; i < C_NBUF; i++)
		ms_buf_reset(&b->buf[i]);
	bt->bytes = sizeof(*bt) + bt->ptrs_size;
	for (int i = 0; i < C_NDATA; i++)
		bt->bytes += bt->buf[i].cap;
	b->ntraces = b->nrows = b->ntags = 0;
	*out = bt;
	return 0;
}

/*
 * After the chain call on bt returned: if no timed-out call kept it (we
 * hold the only reference) and its buffers hold at most `bound` bytes,
 * move them back into the builder, emptied, for the next batch. Returns
 * whether it did; bt is released by the caller either way.
 */
static bool
builder_reclaim(builder *b, ms_batch *bt, uint64_t bound)
{
	if (bt->abandoned || atomic_load(&bt->refs) != 1)
		return false;
	uint64_t cap = bt->ptrs_size;
	for (int i = 0; i < C_NDATA; i++)
		cap += bt->buf[i].cap;
	if (cap > bound)
		return false;
	for (int i = 0; i < C_NDATA; i++) {
		if (b->buf[i].cap != 0)
			continue;
		b->buf[i] = bt->buf[i];
		ms_buf_reset(&b->buf[i]);
		ms_buf_init(&bt->buf[i], bt->mem, 0);
	}
	if (!b->ptrs) {
		b->ptrs = bt->ptrs;
		b->ptrs_size = bt->ptrs_size;
		bt->ptrs = NULL;
		bt->ptrs_size = 0;
	}
	return true;
}

const ms_plugin_batch *
ms_batch_view(const ms_batch *b)
{
	return &b->view;
}

uint64_t
ms_batch_bytes(const ms_batch *b)
{
	return b->bytes;
}

void
ms_batch_retain(ms_batch *b)
{
	atomic_fetch_add(&b->refs, 1);
}

void
ms_batch_release(ms_batch *b)
{
	if (b && atomic_fetch_sub(&b->refs, 1) == 1)
		batch_destroy(b);
}

void
ms__batch_abandon(ms_batch *b)
{
	b->abandoned = true;
	b->mem = b->late_mem;
}

static bool
same_tid(const ms_row *a, const ms_row *b)
{
	return a->trace_id_len == b->trace_id_len &&
	       memcmp(a->trace_id, b->trace_id, a->trace_id_len) == 0;
}

static bool
valid_tid(const ms_row *r)
{
	return r->trace_id && r->trace_id_len >= 1 &&
	       r->trace_id_len <= MS_TRACE_ID_MAX;
}

int
ms_batch_from_rows(ms_batch **out, ms_mem *mem, uint32_t projection,
                   const ms_row *rows, size_t nrows, ms_errbuf *eb)
{
	*out = NULL;
	builder b;
	builder_init(&b, mem, projection);
	size_t i = 0;
	int rc = 0;
	while (i < nrows) {
		size_t j = i + 1;
		if (!valid_tid(&rows[i])) {
			rc = ms_fail(eb, MS_ERR_INVAL,
			             "batch: row %zu: trace ID of %u bytes, "
			             "expected 1..%d",
			             i, rows[i].trace_id_len, MS_TRACE_ID_MAX);
			goto out;
		}
		while (j < nrows && same_tid(&rows[i], &rows[j]))
			j++;
		if (i > 0 &&
		    ms_trace_id_cmp(rows[i - 1].trace_id,
		                    rows[i - 1].trace_id_len, rows[i].trace_id,
		                    rows[i].trace_id_len) >= 0) {
			rc = ms_fail(eb, MS_ERR_INVAL,
			             "batch: row %zu: trace IDs must ascend "
			             "and each trace be contiguous",
			             i);
			goto out;
		}
		if (j - i > UINT32_MAX) {
			rc = ms_fail(eb, MS_ERR_RANGE,
			             "batch: trace with too many rows");
			goto out;
		}
		rc = builder_add(&b, rows + i, j - i);
		if (rc) {
			rc = ms_fail(eb, rc, "batch: out of memory");
			goto out;
		}
		i = j;
	}
	rc = builder_finish(&b, out);
	if (rc)
		rc = ms_fail(eb, rc, "batch: out of memory");
out:
	builder_release(&b);
	return rc;
}

int
ms_chain_evaluate_rows(ms_chain *c, ms_mem *mem, const ms_row *rows,
                       size_t nrows, size_t batch_traces, uint8_t *keep,
                       size_t keep_cap, size_t *ntraces, ms_errbuf *eb)
{
	if (batch_traces == 0)
		batch_traces = 4096;
	*ntraces = 0;
	uint32_t proj = ms_chain_projection(c);
	size_t i = 0, done = 0;
	while (i < nrows) {
		size_t j = i, nt = 0;
		while (j < nrows && nt < batch_traces) {
			size_t k = j + 1;
			while (k < nrows && valid_tid(&rows[j]) &&
			       same_tid(&rows[j], &rows[k]))
				k++;
			j = k;
			nt++;
		}
		if (done + nt > keep_cap)
			return ms_fail(eb, MS_ERR_RANGE,
			               "evaluate: more than %zu traces",
			               keep_cap);
		ms_batch *bt;
		int rc =
		        ms_batch_from_rows(&bt, mem, proj, rows + i, j - i, eb);
		if (rc)
			return rc;
		if (i > 0 &&
		    ms_trace_id_cmp(rows[i - 1].trace_id,
		                    rows[i - 1].trace_id_len, rows[i].trace_id,
		                    rows[i].trace_id_len) >= 0) {
			ms_batch_release(bt);
			return ms_fail(eb, MS_ERR_INVAL,
			               "evaluate: row %zu: trace IDs must "
			               "ascend",
			               i);
		}
		rc = ms_chain_decide(c, bt, keep + done, NULL);
		ms_batch_release(bt);
		if (rc)
			return ms_fail(eb, rc, "evaluate: chain failed");
		done += nt;
		i = j;
	}
	*ntraces = done;
	return 0;
}

/* ------------------------------------------------------------------ */
/* Row-copy arena: bounded chunks, reset after every batch. Never seen
 * by a plugin, so reusing it is safe. */

typedef struct chunk {
	struct chunk *next;
	size_t cap, used;
	/* data follows */
} chunk;

#define ARENA_CHUNK (256u << 10)
#define ARENA_KEEP 4

typedef struct arena {
	ms_mem *mem;
	chunk *head; /* current chunk first */
	chunk *spare;
	size_t nspare;
} arena;

static void
chunk_free(ms_mem *m, chunk *c)
{
	ms_mem_free(m, c, sizeof(*c) + c->cap);
}

static void *
arena_alloc(arena *a, size_t size)
{
	size = (size + 15) & ~(size_t)15;
	if (!a->head || a->head->cap - a->head->used < size) {
		chunk *c = NULL;
		if (size <= ARENA_CHUNK && a->spare) {
			c = a->spare;
			a->spare = c->next;
			a->nspare--;
		} else {
			size_t cap = size > ARENA_CHUNK ? size : ARENA_CHUNK;
			size_t total;
			if (!ms_add_ok(sizeof(chunk), cap, &total))
				return NULL;
			c = ms_mem_alloc(a->mem, total);
			if (!c)
				return NULL;
			c->cap = cap;
		}
		c->used = 0;
		c->next = a->head;
		a->head = c;
	}
	void *p = (uint8_t *)(a->head + 1) + a->head->used;
	a->head->used += size;
	return p;
}

static void
arena_reset(arena *a)
{
	while (a->head) {
		chunk *c = a->head;
		a->head = c->next;
		if (c->cap == ARENA_CHUNK && a->nspare < ARENA_KEEP) {
			c->next = a->spare;
			a->spare = c;
			a->nspare++;
		} else {
			chunk_free(a->mem, c);
		}
	}
}

static void
arena_release(arena *a)
{
	arena_reset(a);
	while (a->spare) {
		chunk *c = a->spare;
		a->spare = c->next;
		chunk_free(a->mem, c);
	}
	a->nspare = 0;
}

static size_t
slen(const char *s)
{
	return s ? strlen(s) + 1 : 0;
}

static char *
arena_str(arena *a, const char *s)
{
	if (!s)
		return NULL;
	size_t n = strlen(s) + 1;
	char *d = arena_alloc(a, n);
	if (d)
		memcpy(d, s, n);
	return d;
}

static ms_row *
copy_rows(arena *a, const ms_row *rows, size_t n)
{
	ms_row *out = arena_alloc(a, n * sizeof(ms_row));
	uint8_t *tid = arena_alloc(a, rows[0].trace_id_len);
	if (!out || !tid)
		return NULL;
	memcpy(tid, rows[0].trace_id, rows[0].trace_id_len);
	for (size_t i = 0; i < n; i++) {
		const ms_row *r = &rows[i];
		ms_row *o = &out[i];
		*o = *r;
		o->trace_id = tid;
		o->segment_id = arena_str(a, r->segment_id);
		o->service = arena_str(a, r->service);
		o->instance = arena_str(a, r->instance);
		o->endpoint = arena_str(a, r->endpoint);
		if ((r->segment_id && !o->segment_id) ||
		    (r->service && !o->service) ||
		    (r->instance && !o->instance) ||
		    (r->endpoint && !o->endpoint))
			return NULL;
		if (r->ntags) {
			const char **tg =
			        arena_alloc(a, r->ntags * sizeof(char *));
			if (!tg)
				return NULL;
			for (uint32_t k = 0; k < r->ntags; k++) {
				tg[k] = arena_str(a, r->tags[k]);
				if (r->tags[k] && !tg[k])
					return NULL;
			}
			o->tags = tg;
		}
		if (r->body_len) {
			uint8_t *bd = arena_alloc(a, r->body_len);
			if (!bd)
				return NULL;
			memcpy(bd, r->body, r->body_len);
			o->body = bd;
		}
	}
	return out;
}

/* ------------------------------------------------------------------ */
/* Stager                                                              */

struct ms_stager {
	ms_stager_opts o;
	ms_mem mem; /* child of o.mem: staging's own figures */
	uint32_t proj;
	uint64_t fixed; /* per-trace charge before ID and columns */
	builder b;
	arena ar;
	ms_buf pend; /* pend entries, in order */
	size_t npend;
	ms_buf hotflag;  /* trace policy: one byte per pending trace */
	ms_buf hot;      /* hot_ent, for pending hot traces */
	ms_buf hot_tids; /* their IDs */
	ms_buf prows;    /* copy_rows: ms_row * per pending trace */
	uint64_t live;
	uint8_t last_tid[MS_TRACE_ID_MAX]; /* last staged */
	uint32_t last_tid_len;
	uint8_t dmax[MS_TRACE_ID_MAX]; /* highest ID handed to the chain */
	uint32_t dmax_len;
	bool expect; /* ms_stager_expect_bounds for the next add */
	int64_t exp_min, exp_end;
	bool finished, failed;
	uint8_t *keep;
	size_t keepcap;
	ms_stage_report rep;
};

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
		return ms_fail(eb, MS_ERR_NOMEM, "stager: out of memory");
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
	s->fixed = TRACE_FIXED + (links > 1 ? 2 * (links - 1) : 0) +
	           (opts->copy_rows ? sizeof(ms_row *) : 0) +
	           (opts->policy == MS_GRACE_TRACE ? 1 : 0);
	builder_init(&s->b, &s->mem, s->proj);
	/* The stager's own ms_mem dies with it; a batch a timed-out plugin
	 * still reads is freed later through the root of opts->mem (or
	 * uncounted if there is none). */
	ms_mem *root = opts->mem;
	while (root && root->parent)
		root = root->parent;
	s->b.late_mem = root;
	s->ar.mem = &s->mem;
	ms_buf_init(&s->pend, &s->mem, 0);
	ms_buf_init(&s->hotflag, &s->mem, 0);
	ms_buf_init(&s->hot, &s->mem, 0);
	ms_buf_init(&s->hot_tids, &s->mem, 0);
	ms_buf_init(&s->prows, &s->mem, 0);
	s->rep.plan = *pl;
	s->rep.cls = MS_SAMPLING_ENABLED_NO_EVALUATION;
	s->rep.reason = MS_SREASON_EMPTY_INPUT;
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
ms_stager_expect_bounds(ms_stager *s, int64_t min_ts, int64_t max_end_ns)
{
	s->expect = true;
	s->exp_min = min_ts;
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
		s->failed = true;
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
	size_t nb = bt->view.ntraces;
	int calls = s->o.test && s->o.test->decide_twice ? 2 : 1;
	for (int k = 0; k < calls; k++) {
		check_decide_order(s, &bt->view);
		ms_chain_call call;
		int rc = ms_chain_decide(s->o.chain, bt, s->keep, &call);
		if (rc) {
			s->failed = true;
			return ms_fail(eb, rc, "stager: chain: %s",
			               ms_strerror(rc));
		}
		s->rep.decide_calls++;
		s->rep.decide_ns += call.decide_ns;
		if (call.links_ok > 0 && k == 0)
			s->rep.evaluated += nb;
	}
	return 0;
}

static int
flush(ms_stager *s, enum ms_flush_reason why, ms_errbuf *eb)
{
	if (s->npend == 0)
		return 0;
	const pend *pe = (const pend *)s->pend.data;
	const hot_ent *he = (const hot_ent *)s->hot.data;
	ms_row *const *prows = (ms_row *const *)s->prows.data;
	size_t nb = s->b.ntraces;
	ms_batch *bt = NULL;
	const ms_plugin_trace *tr = NULL;
	int rc = 0;
	if (nb) {
		rc = builder_finish(&s->b, &bt);
		if (rc) {
			s->failed = true;
			return ms_fail(eb, rc, "stager: building a batch: %s",
			               ms_strerror(rc));
		}
		if (nb > s->keepcap) {
			uint8_t *k = ms_mem_realloc(&s->mem, s->keep,
			                            s->keepcap, nb);
			if (!k) {
				ms_batch_release(bt);
				s->failed = true;
				return ms_fail(eb, MS_ERR_NOMEM,
				               "stager: out of memory");
			}
			s->keep = k;
			s->keepcap = nb;
		}
		note_peak(s);
		if ((rc = decide(s, bt, eb))) {
			ms_batch_release(bt);
			return rc;
		}
		tr = bt->view.traces;
	}
	ms_stage_batch_rec rec = { s->live, (uint32_t)s->npend, 0, why };
	if (s->rep.batches < MS_STAGE_BATCH_RECS)
		s->rep.batch[s->rep.batches] = rec;
	const uint8_t *hotflag = s->hotflag.len ? s->hotflag.data : NULL;
	size_t nbi = 0, nhi = 0; /* next batch entry, next hot entry */
	for (size_t i = 0; i < s->npend && !rc; i++) {
		const pend *p = &pe[i];
		bool hot = hotflag && hotflag[i];
		size_t idx = hot ? nhi++ : nbi++;
		ms_stage_emit e;
		memset(&e, 0, sizeof(e));
		e.rows = s->o.copy_rows ? prows[i] : NULL;
		e.cookie = p->cookie;
		e.outcome = MS_TRACE_KEPT;
		e.keep = true;
		if (hot) {
			const hot_ent *h = &he[idx];
			e.trace_id = s->hot_tids.data + h->tid_off;
			e.trace_id_len = h->tid_len;
			e.nrows = h->nrows;
			e.min_ts = h->min_ts;
			e.max_ts = h->max_ts;
		} else {
			const ms_plugin_trace *t = &tr[idx];
			e.trace_id = t->trace_id;
			e.trace_id_len = t->trace_id_len;
			e.nrows = t->row_count;
			e.min_ts = t->min_start_ns;
			e.max_ts = t->max_start_ns;
		}
		if (hot) {
			e.outcome = MS_TRACE_HOT;
			s->rep.hot++;
		} else if (s->keep[idx]) {
			s->rep.kept++;
		} else {
			s->rep.proposed_drops++;
			enum ms_guard_reason why_g = MS_GUARD_NO_FILTER;
			bool ok = s->o.guard &&
			          ms_guard_check(s->o.guard, e.trace_id,
			                         e.trace_id_len, e.min_ts,
			                         e.max_ts, &why_g);
			if (ok && s->o.drops) {
				rc = ms_dropset_add(s->o.drops, e.trace_id,
				                    e.trace_id_len, e.min_ts,
				                    e.max_ts, eb);
				if (rc) {
					s->failed = true;
					break;
				}
			}
			if (ok) {
				e.outcome = MS_TRACE_DROPPED;
				e.keep = false;
				s->rep.dropped++;
			} else {
				e.outcome = MS_TRACE_DEFERRED;
				s->rep.deferred++;
			}
		}
		rc = emit(s, &e, eb);
	}
	if (s->rep.batches < MS_STAGE_BATCH_RECS)
		s->rep.batch[s->rep.batches].evaluated = (uint32_t)nb;
	s->rep.batches++;
	/* Reuse the batch's buffers for the next batch of this merge,
	 * bounded by twice the preferred limit: a batch that one large
	 * trace made bigger is freed instead. */
	uint64_t bound = s->o.plan.preferred;
	bound = bound > UINT64_MAX / 2 ? UINT64_MAX : 2 * bound;
	if (bt && builder_reclaim(&s->b, bt, bound))
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
	arena_reset(&s->ar);
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

static int
nomem(ms_stager *s, int rc, ms_errbuf *eb)
{
	s->failed = true;
	return ms_fail(eb, rc < 0 ? rc : MS_ERR_NOMEM, "stager: out of memory");
}

/* Stage one trace with charge c: rows (may be NULL with a summary) or
 * the summary ts goes into the batch. */
static int
stage_one(ms_stager *s, const ms_row *rows, const ms_stage_summary *ts,
          void *cookie, uint64_t c, ms_errbuf *eb)
{
	bool expect = s->expect;
	s->expect = false;
	s->rep.traces++;
	s->rep.rows += ts->nrows;
	const ms_stage_plan *pl = &s->o.plan;
	int rc;
	if (c > pl->oversized_cap) {
		rc = flush(s, MS_FLUSH_OVERSIZED, eb);
		if (rc)
			return rc;
		s->rep.oversized++;
		ms_stage_emit e = { ts->trace_id, ts->trace_id_len,
			            rows,         ts->nrows,
			            cookie,       MS_TRACE_OVERSIZED,
			            true,         ts->min_ts,
			            ts->max_ts };
		return emit(s, &e, eb);
	}
	bool hot =
	        s->o.policy == MS_GRACE_TRACE && ts->max_ts > s->o.frontier_ns;
	if (s->npend && s->live + c > pl->preferred) {
		rc = flush(s, MS_FLUSH_BYTES, eb);
		if (rc)
			return rc;
	}
	if (!hot && s->b.ntraces >= pl->trace_cap) {
		rc = flush(s, MS_FLUSH_TRACES, eb);
		if (rc)
			return rc;
	}
	size_t hint = batch_hint(s);
	if (hint && s->pend.cap == 0 &&
	    (rc = buf_presize(&s->pend, hint * sizeof(pend))))
		return nomem(s, rc, eb);
	pend p = { cookie };
	uint8_t hf = hot;
	if (s->o.policy == MS_GRACE_TRACE &&
	    (rc = ms_buf_append(&s->hotflag, &hf, 1)))
		return nomem(s, rc, eb);
	if (s->o.copy_rows) {
		ms_row *copy = rows ? copy_rows(&s->ar, rows, ts->nrows) : NULL;
		if (rows && !copy)
			return nomem(s, MS_ERR_NOMEM, eb);
		if ((rc = ms_buf_append(&s->prows, &copy, sizeof(copy))))
			return nomem(s, rc, eb);
	}
	if (hot) {
		hot_ent h = { (uint32_t)s->hot_tids.len, ts->trace_id_len,
			      ts->nrows, ts->min_ts, ts->max_ts };
		if (s->hot_tids.len > UINT32_MAX - MS_TRACE_ID_MAX)
			return nomem(s, MS_ERR_RANGE, eb);
		if ((rc = ms_buf_append(&s->hot_tids, ts->trace_id,
		                        ts->trace_id_len)) ||
		    (rc = ms_buf_append(&s->hot, &h, sizeof(h))))
			return nomem(s, rc, eb);
	} else {
		s->b.hint = hint;
		rc = rows ? builder_add(&s->b, rows, ts->nrows)
		          : builder_add_summary(&s->b, ts);
		if (rc)
			return nomem(s, rc, eb);
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
		}
	}
	if ((rc = buf_put(&s->pend, &p, sizeof(p))))
		return nomem(s, rc, eb);
	s->npend++;
	s->live += c;
	if (s->o.live_gauge)
		atomic_fetch_add(s->o.live_gauge, c);
	s->rep.total_charged += c;
	if (s->live > s->rep.peak_charged)
		s->rep.peak_charged = s->live;
	return 0;
}

int
ms_stager_add(ms_stager *s, const ms_row *rows, size_t n, void *cookie,
              uint64_t extra_bytes, ms_errbuf *eb)
{
	if (s->failed || s->finished)
		return ms_fail(eb, MS_ERR_STATE, "stager: add after %s",
		               s->failed ? "a failure" : "finish");
	if (n == 0 || !rows || !valid_tid(&rows[0]))
		return ms_fail(eb, MS_ERR_INVAL,
		               "stager: a trace needs >= 1 row and a 1..%d "
		               "byte trace ID",
		               MS_TRACE_ID_MAX);
	if (n > UINT32_MAX)
		return ms_fail(eb, MS_ERR_RANGE, "stager: trace too long");
	for (size_t i = 1; i < n; i++)
		if (!same_tid(&rows[0], &rows[i]))
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
	if (s->failed || s->finished)
		return ms_fail(eb, MS_ERR_STATE, "stager: add after %s",
		               s->failed ? "a failure" : "finish");
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

int
ms_stager_finish(ms_stager *s, ms_errbuf *eb)
{
	if (s->failed || s->finished)
		return ms_fail(eb, MS_ERR_STATE,
		               "stager: finish twice or "
		               "after a failure");
	int rc = flush(s, MS_FLUSH_FINAL, eb);
	if (rc)
		return rc;
	s->finished = true;
	note_peak(s);
	ms_stage_report *r = &s->rep;
	if (r->evaluated > 0) {
		r->cls = MS_SAMPLING_EXECUTED;
		r->reason = MS_SREASON_NONE;
		return 0;
	}
	r->cls = MS_SAMPLING_ENABLED_NO_EVALUATION;
	if (r->traces == 0)
		r->reason = MS_SREASON_EMPTY_INPUT;
	else if (r->oversized == r->traces)
		r->reason = MS_SREASON_ALL_TRACES_OVERSIZED;
	else if (r->hot + r->oversized == r->traces)
		r->reason = MS_SREASON_MERGE_GRACE;
	else if (ms_chain_len(s->o.chain) == 0)
		r->reason = MS_SREASON_NO_SAMPLER;
	else
		r->reason = MS_SREASON_OTHER;
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
	builder_release(&s->b);
	arena_release(&s->ar);
	ms_buf_release(&s->pend);
	ms_buf_release(&s->hotflag);
	ms_buf_release(&s->hot);
	ms_buf_release(&s->hot_tids);
	ms_buf_release(&s->prows);
	ms_mem_free(&s->mem, s->keep, s->keepcap);
	ms_mem_free(s->o.mem, s, sizeof(*s));
}
