/*
 * batch.c - the batch builder and the batches a plugin reads: complete
 * traces, one at a time, into column-oriented, read-only batches
 * (ms_plugin_batch), reference-counted so that a chain call that timed
 * out keeps its batch alive, abandoned, until it returns. Also
 * ms_batch_from_rows and ms_chain_evaluate_rows, which batch given rows
 * outside a merge (the fixture gate, the oracle).
 */
#include "ms_batch.h"
#include "staging_int.h"

#include <stdatomic.h>
#include <string.h>

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

void
ms__builder_init(ms__builder *b, ms_mem *mem, uint32_t proj)
{
	memset(b, 0, sizeof(*b));
	b->mem = mem;
	b->late_mem = mem;
	b->proj = proj & MS_PROJ_ALL;
	for (int i = 0; i < C_NBUF; i++)
		ms_buf_init(&b->buf[i], mem, 0);
}

void
ms__builder_release(ms__builder *b)
{
	for (int i = 0; i < C_NBUF; i++)
		ms_buf_release(&b->buf[i]);
	ms_mem_free(b->mem, b->ptrs, b->ptrs_size);
	b->ptrs = NULL;
	b->ptrs_size = 0;
	b->ntraces = b->nrows = b->ntags = 0;
}

/* First trace of a batch with a hint: size the per-trace columns once
 * (IDs at this trace's length; the generators use fixed-width IDs, and
 * longer ones make the buffer grow as usual). */
static int
builder_presize_now(ms__builder *b, uint32_t tid_len)
{
	size_t nt, ni;
	if (!ms_mul_ok(b->hint, sizeof(ms_plugin_trace), &nt) ||
	    !ms_mul_ok(b->hint, tid_len, &ni))
		return MS_ERR_RANGE;
	int rc = ms_buf_presize(&b->buf[C_TRACES], nt);
	if (!rc && b->buf[C_TIDS].cap == 0)
		rc = ms_buf_presize(&b->buf[C_TIDS], ni);
	return rc;
}

static inline int
builder_presize(ms__builder *b, uint32_t tid_len)
{
	if (b->hint == 0 || b->buf[C_TRACES].cap != 0)
		return 0;
	return builder_presize_now(b, tid_len);
}

static int
put_str(ms__builder *b, int col, const char *s)
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
int
ms__builder_add(ms__builder *b, const ms_row *rows, size_t n)
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
int
ms__builder_add_summary(ms__builder *b, const ms_stage_summary *ts)
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
		rc = ms__buf_put(&b->buf[C_TIDS], ts->trace_id,
		                 ts->trace_id_len);
	if (!rc)
		rc = ms__buf_put(&b->buf[C_TRACES], &t, sizeof(t));
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

/* The pointer slots a batch of b's rows needs: one per row for each
 * projected string column and the bodies, one per tag. */
static size_t
ptr_slots(const ms__builder *b)
{
	static const uint32_t per_row[] = { MS_PROJ_SEGMENT_ID, MS_PROJ_SERVICE,
		                            MS_PROJ_INSTANCE, MS_PROJ_ENDPOINT,
		                            MS_PROJ_BODY };
	size_t nstr = 0;
	for (size_t i = 0; i < sizeof(per_row) / sizeof(per_row[0]); i++)
		if (b->proj & per_row[i])
			nstr++;
	return nstr * b->nrows + ((b->proj & MS_PROJ_TAGS) ? b->ntags : 0);
}

/* Give bt its pointer array of psize bytes: the builder's spare when it
 * is large enough, else a new one. */
static int
take_ptrs(ms__builder *b, ms_batch *bt, size_t psize)
{
	if (psize && b->ptrs_size >= psize) {
		bt->ptrs = b->ptrs; /* the spare: large enough */
		bt->ptrs_size = b->ptrs_size;
		b->ptrs = NULL;
		b->ptrs_size = 0;
	} else if (psize) {
		bt->ptrs = ms_mem_alloc(b->mem, psize);
		if (!bt->ptrs)
			return MS_ERR_NOMEM;
		bt->ptrs_size = psize;
	}
	return 0;
}

/* Point the view's string, tag and body columns into bt's bytes, through
 * the offsets the builder kept (its scratch columns). */
static void
view_pointers(const ms__builder *b, ms_batch *bt)
{
	ms_plugin_batch *v = &bt->view;
	uint32_t p = b->proj;
	size_t nr = b->nrows;
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
}

/* The view of bt's columns (moved from b): trace entries with their IDs,
 * the fixed-width columns, then the pointer columns. */
static void
make_view(const ms__builder *b, ms_batch *bt)
{
	ms_plugin_batch *v = &bt->view;
	uint32_t p = b->proj;
	v->struct_size = sizeof(*v);
	v->projection = p;
	v->ntraces = b->ntraces;
	v->nrows = b->nrows;
	/* IDs were appended in trace order: entry i's ID follows i-1's. */
	ms_plugin_trace *tr = (ms_plugin_trace *)bt->buf[C_TRACES].data;
	const uint8_t *tid = bt->buf[C_TIDS].data;
	for (size_t i = 0; i < b->ntraces; i++) {
		tr[i].trace_id = tid;
		tid += tr[i].trace_id_len;
	}
	v->traces = tr;
	if (p & MS_PROJ_SPAN_ID)
		v->span_id = (const uint64_t *)bt->buf[C_SPAN].data;
	if (p & MS_PROJ_START)
		v->start_ns = (const int64_t *)bt->buf[C_START].data;
	if (p & MS_PROJ_LATENCY)
		v->latency_ms = (const uint32_t *)bt->buf[C_LAT].data;
	if (p & MS_PROJ_ERROR)
		v->is_error = bt->buf[C_ERR].data;
	view_pointers(b, bt);
}

size_t
ms__builder_bytes(const ms__builder *b)
{
	size_t n = 0;
	for (int i = 0; i < C_NBUF; i++)
		n += b->buf[i].len;
	return n;
}

/* Turn the ms__builder's data columns into a batch; the ms__builder keeps its
 * scratch (emptied) and starts the next batch with no data buffer, unless
 * ms__builder_reclaim hands this batch's back. */
int
ms__builder_finish(ms__builder *b, ms_batch **out)
{
	*out = NULL;
	ms_batch *bt = ms_mem_calloc(b->mem, 1, sizeof(*bt));
	if (!bt)
		return MS_ERR_NOMEM;
	atomic_init(&bt->refs, 1);
	bt->mem = b->mem;
	bt->late_mem = b->late_mem;
	size_t psize;
	int rc = 0;
	if (!ms_mul_ok(ptr_slots(b), sizeof(void *), &psize))
		rc = MS_ERR_RANGE;
	if (!rc && (b->proj & MS_PROJ_TAGS)) {
		uint64_t end = b->ntags;
		if (ms_buf_append(&b->buf[C_TAGFIRST], &end, 8))
			rc = MS_ERR_NOMEM;
	}
	if (!rc)
		rc = take_ptrs(b, bt, psize);
	if (rc) {
		ms_mem_free(b->mem, bt, sizeof(*bt));
		return rc;
	}
	memcpy(bt->buf, b->buf, sizeof(bt->buf));
	for (int i = 0; i < C_NDATA; i++)
		ms_buf_init(&b->buf[i], b->mem, 0);
	make_view(b, bt);
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
 * move them back into the ms__builder, emptied, for the next batch. Returns
 * whether it did; bt is released by the caller either way.
 */
bool
ms__builder_reclaim(ms__builder *b, ms_batch *bt, uint64_t bound)
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

bool
ms__batch_abandoned(const ms_batch *b)
{
	return b->abandoned;
}

int
ms_batch_from_rows(ms_batch **out, ms_mem *mem, uint32_t projection,
                   const ms_row *rows, size_t nrows, ms_errbuf *eb)
{
	*out = NULL;
	ms__builder b;
	ms__builder_init(&b, mem, projection);
	size_t i = 0;
	int rc = 0;
	while (i < nrows) {
		size_t j = i + 1;
		if (!ms__valid_tid(&rows[i])) {
			rc = ms_fail(eb, MS_ERR_INVAL,
			             "batch: row %zu: trace ID of %u bytes, "
			             "expected 1..%d",
			             i, rows[i].trace_id_len, MS_TRACE_ID_MAX);
			goto out;
		}
		while (j < nrows && ms__same_tid(&rows[i], &rows[j]))
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
		rc = ms__builder_add(&b, rows + i, j - i);
		if (rc) {
			rc = ms_fail(eb, rc,
			             "batch: out of memory for trace %zu (rows "
			             "%zu..%zu; its columns hold %zu bytes)",
			             b.ntraces + 1, i, j - 1,
			             ms__builder_bytes(&b));
			goto out;
		}
		i = j;
	}
	rc = ms__builder_finish(&b, out);
	if (rc)
		rc = ms_fail(eb, rc,
		             "batch: out of memory for a batch of %zu traces "
		             "and %zu rows (its columns hold %zu bytes)",
		             b.ntraces, b.nrows, ms__builder_bytes(&b));
out:
	ms__builder_release(&b);
	return rc;
}

/* The smallest batch ms_chain_evaluate_rows cuts a failed one into. */
#define EVAL_RETRY_MIN 64

/* The end of the trace whose first row is rows[i]. */
static size_t
trace_rows_end(const ms_row *rows, size_t nrows, size_t i)
{
	size_t k = i + 1;
	while (k < nrows && ms__valid_tid(&rows[i]) &&
	       ms__same_tid(&rows[i], &rows[k]))
		k++;
	return k;
}

/* The nt traces of rows[i..j) through the chain into keep (and failed):
 * a call on which a link failed open, the circuit still closed, is made
 * again on each half, down to EVAL_RETRY_MIN traces, unless a link timed
 * out on it: a timeout says nothing about which traces a link cannot
 * judge, and each half would wait for the timeout again (one timed-out
 * batch of 4096 traces cost up to seven timeouts). Its traces stay
 * unjudged (failed), as any the halves could not judge do. */
static int
evaluate_range(ms_chain *c, ms_mem *mem, uint32_t proj, const ms_row *rows,
               size_t i, size_t j, size_t nt, uint8_t *keep, uint16_t *failed,
               const _Atomic bool *cancel, ms_errbuf *eb)
{
	if (cancel && atomic_load(cancel))
		return ms_fail(eb, MS_ERR_CANCELED, "evaluate: cancelled");
	ms_batch *bt;
	int rc = ms_batch_from_rows(&bt, mem, proj, rows + i, j - i, eb);
	if (rc)
		return rc;
	ms_chain_call res;
	rc = ms_chain_decide(c, bt, keep, &res);
	ms_batch_release(bt);
	if (rc)
		return ms_fail(eb, rc, "evaluate: chain failed");
	if (res.failed_mask && !res.timeout_mask && !res.circuit_open &&
	    nt > EVAL_RETRY_MIN) {
		size_t half = nt / 2, m = i;
		for (size_t t = 0; t < half; t++)
			m = trace_rows_end(rows, j, m);
		rc = evaluate_range(c, mem, proj, rows, i, m, half, keep,
		                    failed, cancel, eb);
		if (!rc)
			rc = evaluate_range(c, mem, proj, rows, m, j, nt - half,
			                    keep + half,
			                    failed ? failed + half : NULL,
			                    cancel, eb);
		return rc;
	}
	for (size_t t = 0; failed && t < nt; t++)
		failed[t] = res.failed_mask;
	return 0;
}

int
ms_chain_evaluate_rows(ms_chain *c, ms_mem *mem, const ms_row *rows,
                       size_t nrows, size_t batch_traces, uint8_t *keep,
                       uint16_t *failed, size_t keep_cap, size_t *ntraces,
                       const _Atomic bool *cancel, ms_errbuf *eb)
{
	if (batch_traces == 0)
		batch_traces = 4096;
	*ntraces = 0;
	uint32_t proj = ms_chain_projection(c);
	size_t i = 0, done = 0;
	while (i < nrows) {
		size_t j = i, nt = 0;
		while (j < nrows && nt < batch_traces) {
			j = trace_rows_end(rows, nrows, j);
			nt++;
		}
		if (done + nt > keep_cap)
			return ms_fail(eb, MS_ERR_RANGE,
			               "evaluate: more than %zu traces",
			               keep_cap);
		if (i > 0 &&
		    ms_trace_id_cmp(rows[i - 1].trace_id,
		                    rows[i - 1].trace_id_len, rows[i].trace_id,
		                    rows[i].trace_id_len) >= 0)
			return ms_fail(eb, MS_ERR_INVAL,
			               "evaluate: row %zu: trace IDs must "
			               "ascend",
			               i);
		int rc = evaluate_range(
		        c, mem, proj, rows, i, j, nt, keep + done,
		        failed ? failed + done : NULL, cancel, eb);
		if (rc)
			return rc;
		done += nt;
		i = j;
	}
	*ntraces = done;
	return 0;
}
