/*
 * merge.c - the merge executor declared in ms_merge.h: k-way merge of a set
 * of core parts by trace ID into one output part, the two secondary-index
 * child merges into the same output ID, and one publication.
 *
 * Design:
 *  1. The merge pins one view of the shard for its whole run; every input
 *     must be active in it (else MS_ERR_CONFLICT before anything is written).
 *     The view keeps the inputs on disk until the merge is over, whatever
 *     happens to the inventory meanwhile.
 *  2. Inputs are read through one iterator each; a binary heap orders the
 *     iterators by their current block's trace ID (ties by input position,
 *     so the merge is deterministic). The group of iterators whose head has
 *     the minimum trace ID is that trace's complete set of fragments: each
 *     input is sorted, so an input holding the trace has it at its head.
 *  3. A group of one input is copied block by block as stored
 *     (ms_part_iter_raw + ms_part_writer_add_raw): no decompression, no
 *     re-encoding; a split trace stays split. A group of several inputs is
 *     decoded (all columns), its rows are copied into a per-trace arena,
 *     ordered by start_ns (ties: input position, then stored order — the
 *     order is therefore the same whatever merge tree produced the inputs),
 *     and written as one trace (one block unless over the split size).
 *  4. Output depth = 1 + max input depth. Rows and blocks come from the
 *     writer; for a lossless merge rows_out == rows_in. The output's time
 *     bounds are the inputs' (ms_part_writer_cover), also when the merge
 *     dropped the traces at either end of them, as in the reference,
 *     which sets its output's bounds from its inputs' metadata: so the
 *     output matures, sorts and meets the guards of later merges as its
 *     inputs would have.
 *  5. The latency and start_time index parts of the same inputs are merged
 *     into index parts with the output's ID (ms_sidx_merge), then core and
 *     both indexes are published by one ms_shard_replace: the commit point.
 *  6. Until that commit nothing is visible: any failure (read, write,
 *     allocation, index, publish, injected) aborts the writers, removes the
 *     temporary output directories and returns an error naming the part;
 *     the inputs stay active and untouched. Inputs are deleted by the shard
 *     after publication, when the last view pinning them is released.
 *  7. All memory of the merge comes from one child ms_mem of
 *     req->parent_mem; its figures are the result's allocation figures.
 *     I/O is counted in a merge-local ms_io, added to req->io at the end.
 *
 * Stages (res->err_stage on failure): pin -> read (heap merge, which also
 * writes) -> write (finish the core part) -> index -> publish -> done.
 *
 * Sampling (ms_pipeline.h; "HOOK" marks the places in the code):
 *  8. Whether a merge samples is decided once, after pinning
 *     (sampling_open: ms_sampling_predict over the selection's
 *     hot/mature inputs). If not, the class and reason are recorded and
 *     the merge is the lossless one above; the staging plan (estimate,
 *     limits, planned batches) is recorded only for a merge that stages
 *     and for its lossless retry, as the reference records it.
 *  9. HOOK A: a sampling merge stages every complete trace (the group of
 *     2.) without holding it: with a chain that reads no column the
 *     trace is described to the chain by its block headers alone (ID,
 *     rows, bounds), and only start and latency are decoded, to rebuild
 *     the bounds the stager checks the headers' against; else the
 *     projected columns plus start and latency are decoded. Either way
 *     every input block is decoded once while staging
 *     (ms_merge_sampling.decoded_cols, blocks_decoded).
 *     The cookie says which single input holds the trace, if one does.
 * 10. The stager emits every trace in the order added once its batch is
 *     decided (stage_emit). A second iterator per input trails the
 *     scan (sharing its mapping of the input's data file, so nothing is
 *     read or copied twice) and re-reads from the pinned input what a kept
 *     trace needs (ms_part_iter_open_reread: the scan has checked the
 *     headers, the order and the input's totals, so the re-read takes the
 *     headers as checked; a scan that decodes has checked the units too,
 *     a scan staged from headers defers them (ms_part_iter_defer_units)
 *     and the re-read checks each unit as it copies or decodes it): a
 *     single-input trace is copied raw, a fragmented one
 *     decoded and combined, so a kept trace is written byte for byte as
 *     the lossless merge writes it. Blocks of dropped traces are skipped.
 *     The merge thus holds no per-trace payload between staging and
 *     emission (extra_bytes 0): what it holds is bounded by the inputs'
 *     windows, not by the batch.
 * 11. Confirmed drops (the guard over the active parts outside the
 *     selection; the stager records them in the drop set, in merge order)
 *     are counted with their rows. HOOK B: index children prune rows
 *     whose trace is in the drop set (exact lookup). If every trace was
 *     dropped, no output is written and the inputs are simply removed in
 *     the publishing transaction.
 * 12. Before publication the guard revalidates against parts that became
 *     active meanwhile, and the merge publishes only on the inventory it
 *     revalidated (ms_shard_replace_at; a transaction in between is
 *     revalidated in turn). A conflict discards the attempt (outputs removed,
 *     nothing reported) and the merge is redone losslessly at once (reason
 *     lossless_retry), which cannot conflict: DESIGN.md's rule and the
 *     reference's, which retries without its filter after one rejected
 *     publication. It is not sampled again.
 * 13. Only after a successful publication is each confirmed drop reported
 *     to req->on_drop, once, in merge order, with its row count.
 * 14. Once the last trace is emitted, the stager, the hold arena and the
 *     trace scratch are freed (release_staging), before the output is
 *     closed: the index merges and the publication never run on top of
 *     a batch's payload.
 * 15. Retain mode (--staging retain, the default) keeps each staged
 *     trace's payload in the hold arena until its batch is decided and
 *     writes a kept trace from it: a fragmented trace's combined rows,
 *     or a single input's blocks as stored. A block's bytes that the
 *     scan iterator keeps in place until it closes (mapped, or the whole
 *     data section read at once: ms_part_iter_raw_stable) are referenced,
 *     others (a bounded read window) copied. The charge is the same
 *     either way (ms_arena_charge counts the bytes as if copied), so the
 *     batches are cut alike. Every reference dies with its batch, and
 *     the last batch is emitted by sampling_finish, before close_iters;
 *     on a failure nothing is written from the hold arena after the
 *     run, and release_ctx closes the iterators before the view.
 *     A mapped input's referenced pages stay resident until their batch
 *     is emitted: its scan keeps them from the batch's first reference
 *     on (ms_part_iter_keep_from, src.keep), where the release behind
 *     the scan stops, so a kept trace is written without faulting its
 *     pages in again (hold_batch_done moves or clears it). What stays
 *     resident of an input is what its scan read since then, blocks of
 *     traces staged in that open batch (or the trace being added), so
 *     the batch limits bound it as they bound the staged bytes.
 */
#include "ms_clock.h"
#include "ms_enum.h"
#include "ms_merge.h"
#include "ms_pipeline.h"
#include "ms_rusage.h"
#include "merge_int.h"
#include "pipeline_int.h"
#include "ms_sidx.h"
#include "part_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The per-trace arena: 64 KiB chunks, one kept across traces. */
#define ARENA_CHUNK (64u << 10)
/* Retain mode's hold arena (design 15): 256 KiB chunks. */
#define HOLD_CHUNK (256u << 10)
/* What a trace staged from block headers decodes of each block: the
 * columns its bounds are rebuilt from for the stager's check (design 9). */
#define HDR_CHECK_COLS (MS_COL_START | MS_COL_LATENCY)

static const char *const stage_names[MS_MERGE_STAGE_COUNT] = {
	"none", "pin", "read", "write", "index", "publish", "done",
};

const char *
ms_merge_stage_name(enum ms_merge_stage st)
{
	return MS_ENUM_NAME(stage_names, st, "unknown");
}

static const char *const staging_mode_names[] = {
	[MS_STAGING_RETAIN] = "retain",
	[MS_STAGING_REREAD] = "reread",
};

const char *
ms_staging_mode_name(enum ms_staging_mode m)
{
	return MS_ENUM_NAME(staging_mode_names, m, "unknown");
}

int
ms_staging_mode_parse(const char *s, enum ms_staging_mode *out)
{
	int v = MS_ENUM_PARSE(staging_mode_names, s);
	if (v < 0)
		return MS_ERR_INVAL;
	*out = (enum ms_staging_mode)v;
	return 0;
}

/* ---- the merge context ---- */

typedef struct src {
	const ms_part *part; /* core input, borrowed from the view */
	ms_part_iter *it;
	const ms_block_info *info; /* current head; NULL at end */
	/* Sampling: a second iterator trailing `it`, re-reading the blocks
	 * of traces whose batch is decided (HOOK A). */
	ms_part_iter *eit;
	const ms_block_info *einfo; /* its head; NULL at end */
	bool estarted;              /* eit has read its first block */
	/* Retain mode: the lowest offset of `it`'s data file a held block
	 * references (ms_part_iter_keep_from); UINT64_MAX: none. */
	uint64_t keep;
	size_t pos;                 /* position in req->inputs */
	char name[17];
} src;

/* A row being assembled, with its position for a stable order. */
typedef struct srow {
	ms_row row;
	size_t pos;
} srow;

/* Where one trace's rows are assembled: rows copied into the arena, then
 * ordered into flat[0..nrows). Reset for every trace. */
typedef struct scratch {
	ms_arena arena;
	srow *rows;
	size_t nrows, caprows;
	ms_row *flat;
	size_t capflat;
	int64_t hdr_min, hdr_end; /* bounds from the blocks' headers */
	int64_t hdr_max;          /* max of the blocks' max_ts */
} scratch;

/*
 * Retain mode: what a staged trace keeps in the merge's hold arena until
 * its batch is decided (design 15): the blocks of a single-input trace as
 * stored (info copied, bytes referenced or copied), or the rows of a
 * fragmented trace, decoded (all columns), ordered and copied. Written
 * from here if kept.
 */
typedef struct held {
	ms_raw_block *raw; /* nraw blocks as stored */
	uint32_t nraw, capraw;
	const ms_row *rows; /* or nrows combined rows */
	size_t nrows;
	uint64_t nblocks; /* input blocks behind the rows */
} held;

typedef struct merge_ctx {
	const ms_merge_req *req;
	ms_merge_result *res;
	ms_errbuf eb; /* detail of the first failure */
	ms_mem *mem;  /* the merge's own allocator (child) */
	ms_io *io;    /* the merge's own I/O counters */
	ms_view *view;
	src *srcs;
	size_t nsrcs;
	size_t *heap; /* min-heap of indexes into srcs */
	size_t nheap;
	size_t *group;          /* sources of the current trace */
	const ms_part **iparts; /* index inputs of one kind */
	size_t ngroup;
	ms_part_writer *writer;
	uint64_t out_id;
	char tmp[MS_KIND_COUNT][4096];
	scratch sc; /* the trace being read (lossless or staging) */
	uint8_t tid[MS_TRACE_ID_MAX]; /* the current trace ID */
	uint32_t tid_len;
	uint64_t blocks_read;
	uint64_t blocks_written;
	enum ms_merge_stage cur; /* the stage running (failed, on error) */
	enum ms_merge_stage fail_stage; /* overrides cur: a write failing
	                                 * inside the read/merge loop */
	int64_t t_stage;                /* when it started */
	/* Sampling (all NULL when the merge is lossless). */
	bool lossless; /* a lossless retry: the pipeline is ignored */
	ms_stager *stager;
	ms_guard *guard;
	ms_dropset *drops;
	unsigned stage_cols; /* ms_col bits decoded for staging; 0: none,
	                      * traces are staged from block headers */
	scratch esc;         /* the decided trace being written */
	size_t *egroup;      /* its sources (emit iterators) */
	size_t negroup;
	uint8_t etid[MS_TRACE_ID_MAX];
	uint32_t etid_len;
	/* The rows of each confirmed drop, in order, as uvarints (a byte or
	 * two each, where a u64 each had taken 1 MiB at a day-8x finalize's
	 * 104,517 drops). */
	ms_buf drop_rows;
	size_t ndrops;
	bool empty; /* every trace dropped: no output part */
	/* Retain mode (design 15): the staged payload of pending traces. */
	bool retain;
	ms_arena hold;
	ms_arena_mark hold_mark; /* before the trace being added */
	const held *adding;      /* that trace, during ms_stager_add */
	src *add_keep;           /* the input of its first referenced block, */
	uint64_t add_keep_off;   /* and its offset; NULL: none referenced */
	const ms_merge_hooks *hooks; /* tests only (merge_int.h) */
	ms_stager_test stest;        /* from the test hooks */
} merge_ctx;

/* Internal: the guard's revalidation failed; redo the merge. */
#define MERGE_RETRY 1
/* Revalidations of one attempt raced by another transaction before it is
 * discarded (publish). */
#define PUBLISH_TRIES 16

/* ---- test hook ---- */

static int
hook(merge_ctx *c, enum ms_merge_stage st, uint64_t detail)
{
	const ms_merge_hooks *h = c->hooks;
	if (!h || !h->stage)
		return 0;
	int rc = h->stage(h->arg, c->req, st, detail);
	if (rc < 0)
		return ms_fail(
		        &c->eb, rc, "injected failure at stage %s (%llu)",
		        ms_merge_stage_name(st), (unsigned long long)detail);
	return 0;
}

/* Move to stage st: account the previous stage's wall time, call the hook. */
static int
enter(merge_ctx *c, enum ms_merge_stage st)
{
	int64_t t = ms_mono_ns();
	c->res->stage_wall_ns[c->cur] += t - c->t_stage;
	c->cur = st;
	c->t_stage = t;
	return hook(c, st, 0);
}

/* ---- heap over sources, keyed by (head trace ID, input position) ---- */

static bool
src_less(const merge_ctx *c, size_t a, size_t b)
{
	const ms_block_info *x = c->srcs[a].info, *y = c->srcs[b].info;
	int r = ms_trace_id_cmp(x->trace_id, x->trace_id_len, y->trace_id,
	                        y->trace_id_len);
	if (r != 0)
		return r < 0;
	return c->srcs[a].pos < c->srcs[b].pos;
}

static void
heap_push(merge_ctx *c, size_t s)
{
	size_t i = c->nheap++;
	c->heap[i] = s;
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (!src_less(c, c->heap[i], c->heap[p]))
			break;
		size_t t = c->heap[i];
		c->heap[i] = c->heap[p];
		c->heap[p] = t;
		i = p;
	}
}

static size_t
heap_pop(merge_ctx *c)
{
	size_t top = c->heap[0];
	c->heap[0] = c->heap[--c->nheap];
	size_t i = 0;
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < c->nheap && src_less(c, c->heap[l], c->heap[m]))
			m = l;
		if (r < c->nheap && src_less(c, c->heap[r], c->heap[m]))
			m = r;
		if (m == i)
			break;
		size_t t = c->heap[i];
		c->heap[i] = c->heap[m];
		c->heap[m] = t;
		i = m;
	}
	return top;
}

static bool
head_is_tid(const merge_ctx *c, const src *s)
{
	return s->info && s->info->trace_id_len == c->tid_len &&
	       memcmp(s->info->trace_id, c->tid, c->tid_len) == 0;
}

/* Move source s to its next block; checks the trace-ID order. */
static int
src_advance(merge_ctx *c, src *s)
{
	const ms_block_info *info = NULL;
	int rc = ms_part_iter_next(s->it, &info, &c->eb);
	if (rc < 0) {
		s->info = NULL;
		return rc;
	}
	if (rc == 0) {
		s->info = NULL;
		return 0;
	}
	if (s->info && ms_trace_id_cmp(info->trace_id, info->trace_id_len,
	                               c->tid, c->tid_len) < 0) {
		s->info = NULL;
		return ms_fail(&c->eb, MS_ERR_CORRUPT,
		               "part %s: block %llu: trace IDs out of order",
		               s->name, (unsigned long long)c->blocks_read);
	}
	s->info = info;
	c->blocks_read++;
	c->res->blocks_in++;
	c->res->rows_in += info->nrows;
	return hook(c, MS_MERGE_STAGE_READ, c->blocks_read);
}

/* ---- assembling a fragmented trace ---- */

static int
rows_reserve(merge_ctx *c, scratch *sc, size_t extra)
{
	size_t need;
	if (!ms_add_ok(sc->nrows, extra, &need))
		return ms_fail(&c->eb, MS_ERR_RANGE, "trace too large");
	if (need <= sc->caprows)
		return 0;
	size_t cap = sc->caprows ? sc->caprows : 64;
	while (cap < need)
		if (!ms_mul_ok(cap, 2, &cap))
			return ms_fail(&c->eb, MS_ERR_RANGE, "trace too large");
	size_t ob, nb;
	if (!ms_mul_ok(sc->caprows, sizeof(srow), &ob) ||
	    !ms_mul_ok(cap, sizeof(srow), &nb))
		return ms_fail(&c->eb, MS_ERR_RANGE, "trace too large");
	srow *p = ms_mem_realloc(c->mem, sc->rows, ob, nb);
	if (!p)
		return ms_fail(&c->eb, MS_ERR_NOMEM,
		               "out of memory for %zu rows of one trace", need);
	sc->rows = p;
	sc->caprows = cap;
	return 0;
}

static int
srow_cmp(const void *pa, const void *pb)
{
	const srow *a = pa, *b = pb;
	if (a->row.start_ns != b->row.start_ns)
		return a->row.start_ns < b->row.start_ns ? -1 : 1;
	return a->pos < b->pos ? -1 : a->pos > b->pos;
}

/* ---- emitting one complete trace (HOOK A) ---- */

/* A failure of the output writer inside the merge loop is a write-stage
 * failure, although the loop runs in the read stage. */
static int
write_failed(merge_ctx *c, int rc)
{
	c->fail_stage = MS_MERGE_STAGE_WRITE;
	return rc;
}

/* The writer refused what input s (NULL: several or unknown) gave it.
 * Refused data (not a full disk or memory) comes back the same on every
 * try: the input is named in the message and in res->err_input. */
static int
write_refused(merge_ctx *c, int rc, const src *s)
{
	if (s && (rc == MS_ERR_INVAL || rc == MS_ERR_CORRUPT ||
	          rc == MS_ERR_FORMAT)) {
		c->res->err_input = c->req->inputs[s->pos];
		size_t l = strlen(c->eb.msg);
		snprintf(c->eb.msg + l, sizeof(c->eb.msg) - l,
		         " (writing a trace of input part %s)", s->name);
	}
	return write_failed(c, rc);
}

/* Copy one stored block of input s to the output. */
static int
write_raw(merge_ctx *c, const ms_raw_block *raw, const src *s)
{
	int rc = ms_part_writer_add_raw(c->writer, raw, &c->eb);
	if (rc < 0)
		return write_refused(c, rc, s);
	c->res->blocks_raw++;
	c->res->rows_out += raw->info->nrows;
	c->blocks_written++;
	if ((rc = hook(c, MS_MERGE_STAGE_WRITE, c->blocks_written)))
		return write_refused(c, rc, s);
	return 0;
}

/* The group holds every source whose head is c->tid, in input order. */
static int
emit_raw(merge_ctx *c, src *s)
{
	int rc;
	do {
		ms_raw_block raw;
		rc = ms_part_iter_raw(s->it, &raw, &c->eb);
		if (rc < 0)
			return rc;
		if ((rc = write_raw(c, &raw, s)) < 0)
			return rc;
		if ((rc = src_advance(c, s)) < 0)
			return rc;
	} while (head_is_tid(c, s));
	return 0;
}

/* Advance the emit iterator of s (the iterator checks the order). */
static int
eadvance(merge_ctx *c, src *s)
{
	const ms_block_info *info = NULL;
	int rc = ms_part_iter_next(s->eit, &info, &c->eb);
	s->estarted = true;
	s->einfo = rc == 1 ? info : NULL;
	return rc < 0 ? rc : 0;
}

static bool
ehead_is_tid(const merge_ctx *c, const src *s)
{
	return s->einfo && s->einfo->trace_id_len == c->etid_len &&
	       memcmp(s->einfo->trace_id, c->etid, c->etid_len) == 0;
}

/* Retain mode: a held block references s's data file from off on: keep
 * s's pages from the first such offset of the batch resident until the
 * batch is emitted (design 15). */
static void
hold_keep(src *s, uint64_t off)
{
	if (off < s->keep) {
		s->keep = off;
		ms_part_iter_keep_from(s->it, off);
	}
}

/* Retain mode: keep the scan's current block of s, as stored, in h. */
static int
hold_raw(merge_ctx *c, held *h, src *s)
{
	ms_part_iter *it = s->it;
	ms_raw_block rb;
	int rc = ms_part_iter_raw(it, &rb, &c->eb);
	if (rc < 0)
		return rc;
	if (h->nraw == h->capraw) {
		uint32_t cap = h->capraw ? 2 * h->capraw : 1;
		ms_raw_block *v = ms_arena_alloc(&c->hold, cap * sizeof(*v), 8);
		if (!v)
			goto nomem;
		if (h->nraw)
			memcpy(v, h->raw, h->nraw * sizeof(*v));
		h->raw = v;
		h->capraw = cap;
	}
	ms_block_info *bi =
	        ms_arena_dup(&c->hold, rb.info, sizeof(*rb.info), 8);
	if (!bi)
		goto nomem;
	/* Bytes the scan keeps in place until it closes are referenced,
	 * else copied; charged the same either way (design 15). */
	const uint8_t *by = rb.bytes;
	size_t n = (size_t)rb.info->stored_bytes;
	if (ms_part_iter_raw_stable(it)) {
		uint64_t off = ms_part_iter_raw_offset(it);
		ms_arena_charge(&c->hold, n, 8);
		hold_keep(s, off);
		if (!c->add_keep) {
			c->add_keep = s;
			c->add_keep_off = off;
		}
	} else if (!(by = ms_arena_dup(&c->hold, rb.bytes, n, 8)))
		goto nomem;
	h->raw[h->nraw++] = (ms_raw_block){ bi, by, rb.verified };
	h->nblocks++;
	return 0;
nomem:
	return ms_fail(&c->eb, MS_ERR_NOMEM,
	               "out of memory retaining a block of %llu bytes",
	               (unsigned long long)rb.info->stored_bytes);
}

/*
 * Decode every block of one trace from every source of a group (columns
 * `cols`), copy the rows into sc and order them by start_ns: sc->flat.
 * emit = false: the scan iterators, group c->group, trace c->tid;
 * emit = true: the emit iterators, group c->egroup, trace c->etid.
 * h (retain mode, scan only): a single input's blocks are also copied
 * as stored into h; a fragmented trace's rows are copied into the hold
 * arena instead of sc's (the caller then keeps sc->flat in h).
 */
static int
collect_trace(merge_ctx *c, scratch *sc, bool emit, unsigned cols, held *h)
{
	int rc;
	const size_t *group = emit ? c->egroup : c->group;
	size_t ngroup = emit ? c->negroup : c->ngroup;
	const uint8_t *tid = emit ? c->etid : c->tid;
	bool hold_rows = h && ngroup > 1;
	ms_arena *a = hold_rows ? &c->hold : &sc->arena;
	sc->nrows = 0;
	sc->hdr_min = INT64_MAX;
	sc->hdr_max = INT64_MIN;
	sc->hdr_end = INT64_MIN;
	if (hold_rows) {
		if (!(tid = ms_arena_dup(a, tid, c->tid_len, 1)))
			return ms_fail(&c->eb, MS_ERR_NOMEM,
			               "out of memory for the ID of a held "
			               "trace (%zu bytes)",
			               (size_t)c->tid_len);
	} else {
		ms_arena_reset(&sc->arena);
	}
	for (size_t g = 0; g < ngroup; g++) {
		src *s = &c->srcs[group[g]];
		ms_part_iter *it = emit ? s->eit : s->it;
		do {
			const ms_row *rows = NULL;
			const ms_block_info *bi = emit ? s->einfo : s->info;
			uint32_t n = bi->nrows;
			if (bi->min_ts < sc->hdr_min)
				sc->hdr_min = bi->min_ts;
			if (bi->max_end_ns > sc->hdr_end)
				sc->hdr_end = bi->max_end_ns;
			if (bi->max_ts > sc->hdr_max)
				sc->hdr_max = bi->max_ts;
			if (h && !hold_rows && (rc = hold_raw(c, h, s)) < 0)
				return rc;
			rc = ms_part_iter_decode(it, cols, &rows, &c->eb);
			if (rc < 0)
				return rc;
			if ((rc = rows_reserve(c, sc, n)) < 0)
				return rc;
			for (uint32_t i = 0; i < n; i++) {
				srow *r = &sc->rows[sc->nrows];
				/* A deep copy: the reader reuses its buffers. */
				if (ms_row_copy(a, tid, &rows[i], &r->row))
					return ms_fail(&c->eb, MS_ERR_NOMEM,
					               "out of memory copying a "
					               "row of a fragmented trace");
				r->pos = sc->nrows++;
			}
			/* Retained rows count as re-encoded when written,
			 * and as decoded for staging now: they are the
			 * rows the staged bounds are rebuilt from. */
			if (hold_rows)
				h->nblocks++;
			if (cols == MS_COL_ALL && !h)
				c->res->blocks_reencoded++;
			else
				c->res->sampling.blocks_decoded++;
			rc = emit ? eadvance(c, s) : src_advance(c, s);
			if (rc < 0)
				return rc;
		} while (emit ? ehead_is_tid(c, s) : head_is_tid(c, s));
	}
	qsort(sc->rows, sc->nrows, sizeof(srow), srow_cmp);
	if (sc->nrows > sc->capflat) {
		size_t ob, nb;
		if (!ms_mul_ok(sc->capflat, sizeof(ms_row), &ob) ||
		    !ms_mul_ok(sc->nrows, sizeof(ms_row), &nb))
			return ms_fail(&c->eb, MS_ERR_RANGE, "trace too large");
		ms_row *f = ms_mem_realloc(c->mem, sc->flat, ob, nb);
		if (!f)
			return ms_fail(&c->eb, MS_ERR_NOMEM,
			               "out of memory for %zu rows", sc->nrows);
		sc->flat = f;
		sc->capflat = sc->nrows;
	}
	for (size_t i = 0; i < sc->nrows; i++)
		sc->flat[i] = sc->rows[i].row;
	return 0;
}

/* Write one complete trace's rows as one trace of the output. */
static int
write_rows(merge_ctx *c, const ms_row *rows, size_t n, const src *s)
{
	int rc = ms_part_writer_add_trace(c->writer, rows, n, &c->eb);
	if (rc < 0)
		return write_refused(c, rc, s);
	c->res->rows_out += n;
	c->res->traces_out++;
	c->blocks_written++;
	rc = hook(c, MS_MERGE_STAGE_WRITE, c->blocks_written);
	return rc < 0 ? write_refused(c, rc, s) : 0;
}

/* HOOK A, lossless: the complete trace is c->sc.flat[0..nrows). */
static int
emit_combined(merge_ctx *c)
{
	int rc = collect_trace(c, &c->sc, false, MS_COL_ALL, NULL);
	return rc < 0 ? rc
	              : write_rows(c, c->sc.flat, c->sc.nrows,
	                           c->ngroup == 1 ? &c->srcs[c->group[0]]
	                                          : NULL);
}

/* Cookie of a staged trace: which input holds it when only one does
 * (its blocks are then copied raw at emit); 0 for a fragmented trace. */
static void *
cookie_of(const merge_ctx *c)
{
	if (c->ngroup != 1)
		return NULL;
	return (void *)(uintptr_t)(c->group[0] + 1);
}

/* A decided, kept trace: move the emit iterators of its inputs to it
 * (past the blocks of dropped traces) and write it exactly as the
 * lossless merge would: raw blocks from a single input, else decoded,
 * ordered and combined. */
static int
emit_kept(merge_ctx *c, const ms_stage_emit *e)
{
	int rc;
	memcpy(c->etid, e->trace_id, e->trace_id_len);
	c->etid_len = e->trace_id_len;
	size_t one = (size_t)(uintptr_t)e->cookie;
	size_t lo = one ? one - 1 : 0, hi = one ? one : c->nsrcs;
	c->negroup = 0;
	for (size_t i = lo; i < hi; i++) {
		src *s = &c->srcs[i];
		if (!s->estarted && (rc = eadvance(c, s)) < 0)
			return rc;
		/* Usually the head is the trace (nothing dropped before it):
		 * test that first, by length and bytes. */
		if (ehead_is_tid(c, s)) {
			c->egroup[c->negroup++] = i;
			continue;
		}
		int cmp = -1;
		while (s->einfo &&
		       (cmp = ms_trace_id_cmp(s->einfo->trace_id,
		                              s->einfo->trace_id_len, c->etid,
		                              c->etid_len)) < 0)
			if ((rc = eadvance(c, s)) < 0)
				return rc;
		if (s->einfo && cmp == 0)
			c->egroup[c->negroup++] = i;
	}
	if (c->negroup == 0) {
		char shown[MS_TRACE_ID_SHOW_MAX];
		return ms_fail(&c->eb, MS_ERR_STATE,
		               "trace %s: no input holds it on re-read",
		               ms_trace_id_show(shown, c->etid, c->etid_len));
	}
	if (c->negroup > 1) {
		/* Staged from block headers, the scan's scratch is idle. */
		scratch *sc = c->stage_cols ? &c->esc : &c->sc;
		rc = collect_trace(c, sc, true, MS_COL_ALL, NULL);
		return rc < 0 ? rc : write_rows(c, sc->flat, sc->nrows, NULL);
	}
	src *s = &c->srcs[c->egroup[0]];
	c->res->traces_out++;
	do {
		ms_raw_block raw;
		if ((rc = ms_part_iter_raw(s->eit, &raw, &c->eb)) < 0 ||
		    (rc = write_raw(c, &raw, s)) < 0)
			return rc;
		if ((rc = eadvance(c, s)) < 0)
			return rc;
	} while (ehead_is_tid(c, s));
	return 0;
}

/* Retain mode: write a kept trace from what was staged. */
static int
write_held(merge_ctx *c, const held *h)
{
	if (h->rows) {
		c->res->blocks_reencoded += h->nblocks;
		return write_rows(c, h->rows, h->nrows, NULL);
	}
	c->res->traces_out++;
	for (uint32_t i = 0; i < h->nraw; i++) {
		int rc = write_raw(c, &h->raw[i], NULL);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Retain mode, after the last trace of a batch went out: its payload is
 * dead, and so are the inputs' pages it kept resident. Unless a trace is
 * being added (the flush its add caused): its payload, since the mark,
 * lives on, and so do the pages it references. */
static void
hold_batch_done(merge_ctx *c, const ms_stage_emit *e)
{
	for (size_t i = 0; i < c->nsrcs; i++) {
		src *s = &c->srcs[i];
		if (s->keep != UINT64_MAX) {
			s->keep = UINT64_MAX;
			ms_part_iter_keep_from(s->it, UINT64_MAX);
		}
	}
	if (c->adding && e->cookie != c->adding) {
		ms_arena_trim(&c->hold, c->hold_mark);
		if (c->add_keep)
			hold_keep(c->add_keep, c->add_keep_off);
	} else {
		ms_arena_reset(&c->hold);
	}
}

/* HOOK A, sampling: the stager hands back every trace in the order added
 * with its verdict; a kept trace is written (retain: from what was
 * staged; reread: re-read from the inputs), a dropped one is only counted
 * (the stager has recorded it in the drop set; reread: its blocks are
 * skipped by the emit iterators). */
static int
stage_emit(void *ctx, const ms_stage_emit *e, ms_errbuf *eb)
{
	merge_ctx *c = ctx;
	if (e->keep) {
		int rc = c->retain ? write_held(c, e->cookie) : emit_kept(c, e);
		if (rc < 0) /* the reader or writer said why in c->eb */
			*eb = c->eb;
		if (c->retain && e->batch_end)
			hold_batch_done(c, e);
		return rc;
	}
	c->res->sampling.rows_dropped += e->nrows;
	if (ms_buf_append_uvarint(&c->drop_rows, e->nrows) != 0)
		return ms_fail(eb, MS_ERR_NOMEM,
		               "out of memory for the row counts of %zu drops",
		               c->ndrops + 1);
	c->ndrops++;
	if (c->retain && e->batch_end)
		hold_batch_done(c, e);
	return 0;
}

/* The bounds of a trace from its rows' own decoded timestamps: the
 * earliest and latest start and the latest start + latency. */
typedef struct rbounds {
	int64_t min_ts, max_ts, max_end;
} rbounds;

#define RBOUNDS_EMPTY { INT64_MAX, INT64_MIN, INT64_MIN }

static void
rows_bounds(const ms_row *rows, size_t n, rbounds *b)
{
	for (size_t i = 0; i < n; i++) {
		int64_t end = rows[i].start_ns +
		              (int64_t)rows[i].latency_ms * 1000000;
		if (rows[i].start_ns < b->min_ts)
			b->min_ts = rows[i].start_ns;
		if (rows[i].start_ns > b->max_ts)
			b->max_ts = rows[i].start_ns;
		if (end > b->max_end)
			b->max_end = end;
	}
}

/* Hand the staged trace to the stager (h: its retained payload, from
 * the hold arena since c->hold_mark, charged as extra bytes). rows NULL:
 * the summary t. */
static int
stage_add(merge_ctx *c, const ms_row *rows, size_t n, const ms_stage_summary *t,
          held *h, uint64_t held0)
{
	void *cookie = h ? (void *)h : cookie_of(c);
	uint64_t extra = h ? c->hold.used_bytes - held0 : 0;
	c->adding = h;
	int rc = rows ? ms_stager_add(c->stager, rows, n, cookie, extra, &c->eb)
	              : ms_stager_add_summary(c->stager, t, cookie, extra,
	                                      &c->eb);
	c->adding = NULL;
	return rc;
}

/* Sampling: stage the complete trace at the scan iterators' heads. With
 * no column to decode, its block headers describe it (ID, rows, bounds);
 * else only the projected columns (plus start and latency, which the
 * batch's trace bounds are built from) are decoded. Retain mode keeps the
 * trace's payload until its batch is decided (a single input's blocks as
 * stored, a fragmented trace decoded and combined); reread holds nothing
 * of it: its blocks are re-read when its batch is decided. */
static int
stage_trace(merge_ctx *c)
{
	int rc;
	held *h = NULL;
	uint64_t held0 = 0;
	if (c->retain) {
		c->hold_mark = ms_arena_mark_get(&c->hold);
		c->add_keep = NULL;
		held0 = c->hold.used_bytes;
		if (!(h = ms_arena_alloc(&c->hold, sizeof(*h), 8)))
			return ms_fail(&c->eb, MS_ERR_NOMEM,
			               "out of memory for the record of a held "
			               "trace (%zu bytes)",
			               sizeof(*h));
		memset(h, 0, sizeof(*h));
	}
	bool hold_rows = h && c->ngroup > 1;
	if (c->stage_cols || hold_rows) {
		rc = collect_trace(c, &c->sc, false,
		                   hold_rows ? MS_COL_ALL : c->stage_cols, h);
		if (rc < 0)
			return rc;
		if (hold_rows) {
			h->nrows = c->sc.nrows;
			h->rows = ms_arena_dup(&c->hold, c->sc.flat,
			                       c->sc.nrows * sizeof(ms_row), 8);
			if (!h->rows)
				return ms_fail(&c->eb, MS_ERR_NOMEM,
				               "out of memory for %zu rows",
				               c->sc.nrows);
		}
		/* The bounds the chain must see, rebuilt from the rows'
		 * own timestamps (not from the headers the batch uses). */
		rbounds b = RBOUNDS_EMPTY;
		rows_bounds(c->sc.flat, c->sc.nrows, &b);
		ms_stager_expect_bounds(c->stager, b.min_ts, b.max_ts,
		                        b.max_end);
		if (c->stage_cols)
			return stage_add(c, c->sc.flat, c->sc.nrows, NULL, h,
			                 held0);
		if (c->sc.nrows > UINT32_MAX)
			return ms_fail(&c->eb, MS_ERR_RANGE,
			               "trace with more than 2^32 rows");
		ms_stage_summary t = {
			c->tid,        c->tid_len,    (uint32_t)c->sc.nrows,
			c->sc.hdr_min, c->sc.hdr_max, c->sc.hdr_end
		};
		return stage_add(c, NULL, 0, &t, h, held0);
	}
	ms_stage_summary t = { c->tid,    c->tid_len, 0,
		               INT64_MAX, INT64_MIN,  INT64_MIN };
	rbounds b = RBOUNDS_EMPTY;
	for (size_t g = 0; g < c->ngroup; g++) {
		src *s = &c->srcs[c->group[g]];
		do {
			const ms_block_info *bi = s->info;
			/* The check's expected bounds come from the rows'
			 * decoded timestamps (two columns); the summary the
			 * chain gets from the headers. */
			const ms_row *rows = NULL;
			if (h && (rc = hold_raw(c, h, s)) < 0)
				return rc;
			rc = ms_part_iter_decode(s->it, HDR_CHECK_COLS, &rows,
			                         &c->eb);
			if (rc < 0)
				return rc;
			c->res->sampling.blocks_decoded++;
			rows_bounds(rows, bi->nrows, &b);
			if (bi->nrows > UINT32_MAX - t.nrows)
				return ms_fail(&c->eb, MS_ERR_RANGE,
				               "part %s: trace with more "
				               "than 2^32 rows",
				               s->name);
			t.nrows += bi->nrows;
			if (bi->min_ts < t.min_ts)
				t.min_ts = bi->min_ts;
			if (bi->max_ts > t.max_ts)
				t.max_ts = bi->max_ts;
			if (bi->max_end_ns > t.max_end_ns)
				t.max_end_ns = bi->max_end_ns;
			if ((rc = src_advance(c, s)) < 0)
				return rc;
		} while (head_is_tid(c, s));
	}
	ms_stager_expect_bounds(c->stager, b.min_ts, b.max_ts, b.max_end);
	return stage_add(c, NULL, 0, &t, h, held0);
}

/* Merge every input into the open writer. */
static int
merge_blocks(merge_ctx *c)
{
	int rc;
	for (size_t i = 0; i < c->nsrcs; i++) {
		c->tid_len = 0; /* no order check for the first block */
		src *s = &c->srcs[i];
		s->info = NULL;
		if ((rc = src_advance(c, s)) < 0)
			return rc;
		if (s->info)
			heap_push(c, i);
	}
	while (c->nheap > 0) {
		const ms_block_info *top = c->srcs[c->heap[0]].info;
		memcpy(c->tid, top->trace_id, top->trace_id_len);
		c->tid_len = top->trace_id_len;
		c->ngroup = 0;
		while (c->nheap > 0 && head_is_tid(c, &c->srcs[c->heap[0]]))
			c->group[c->ngroup++] = heap_pop(c);
		/* Popped in (trace ID, input position) order: the group is
		 * sorted by input position. */
		c->res->traces_in++;
		if (c->ngroup > 1)
			c->res->traces_fragmented++;
		if (c->stager) {
			rc = stage_trace(c);
		} else if (c->ngroup == 1) {
			c->res->traces_out++;
			rc = emit_raw(c, &c->srcs[c->group[0]]);
		} else {
			rc = emit_combined(c);
		}
		if (rc < 0)
			return rc;
		for (size_t g = 0; g < c->ngroup; g++)
			if (c->srcs[c->group[g]].info)
				heap_push(c, c->group[g]);
	}
	return 0;
}

/* ---- index children (HOOK B) ---- */

static bool
index_keep(void *ctx, const uint8_t *tid, uint32_t len)
{
	return !ms_dropset_contains(ctx, tid, len);
}

static int
merge_indexes(merge_ctx *c)
{
	static const enum ms_part_kind kinds[] = { MS_KIND_LATENCY,
		                                   MS_KIND_START_TIME };
	for (size_t k = 0; k < 2; k++) {
		enum ms_part_kind kind = kinds[k];
		ms_merge_index_stats *st = &c->res->index[kind];
		int64_t t0 = ms_mono_ns();
		const ms_part **parts = c->iparts;
		for (size_t i = 0; i < c->nsrcs; i++) {
			parts[i] =
			        ms_view_find(c->view, c->req->inputs[i], kind);
			if (!parts[i])
				return ms_fail(&c->eb, MS_ERR_NOTFOUND,
				               "part %s: no %s index part",
				               c->srcs[i].name,
				               ms_part_kind_name(kind));
			const ms_part_meta *m = ms_part_get_meta(parts[i]);
			st->rows_in += m->rows;
			st->blocks_in += m->blocks;
			st->bytes_in += m->compressed_bytes;
		}
		ms_part_writer_opts o = {
			.mem = c->mem,
			.io = c->io,
			.zstd_level = c->req->zstd_level,
			.depth = c->res->max_input_depth + 1,
			.no_sync = ms_shard_syncs_outputs(c->req->shard),
			.zctx = c->req->zctx,
		};
		ms_part_meta om;
		uint64_t pruned = 0;
		/* HOOK B: with confirmed drops, an index row is kept iff its
		 * trace is not in the drop set (exact lookup). */
		bool prune = c->drops && ms_dropset_count(c->drops) > 0;
		int rc = ms_sidx_merge(kind, (const ms_part *const *)parts,
		                       c->nsrcs, prune ? index_keep : NULL,
		                       prune ? c->drops : NULL, c->tmp[kind],
		                       c->out_id, &o, &om, &pruned, &c->eb);
		if (rc < 0)
			return rc;
		st->rows_out = om.rows;
		st->rows_pruned = pruned;
		st->blocks_out = om.blocks;
		st->bytes_out = om.compressed_bytes;
		st->wall_ns = ms_mono_ns() - t0;
		st->done = true;
	}
	return 0;
}

/* ---- setup and teardown ---- */

static int
check_req(const ms_merge_req *req, ms_errbuf *eb)
{
	if (!req || !req->shard || !req->inputs)
		return ms_fail(eb, MS_ERR_INVAL, "merge: no shard or inputs");
	size_t min = (req->flags & MS_MERGE_FINALIZE) ? 1 : 2;
	if (req->ninputs < min)
		return ms_fail(eb, MS_ERR_INVAL,
		               "merge: %zu input(s), at least %zu expected",
		               req->ninputs, min);
	for (size_t i = 0; i < req->ninputs; i++)
		for (size_t j = i + 1; j < req->ninputs; j++)
			if (req->inputs[i] == req->inputs[j]) {
				char id[17];
				ms_part_id_str(req->inputs[i], id);
				return ms_fail(eb, MS_ERR_INVAL,
				               "merge: part %s listed twice",
				               id);
			}
	return 0;
}

static int
pin_inputs(merge_ctx *c)
{
	const ms_merge_req *req = c->req;
	ms_merge_result *res = c->res;
	int rc = ms_shard_view(req->shard, &c->view, &c->eb);
	if (rc < 0)
		return rc;
	res->epoch_before = ms_view_epoch(c->view);
	size_t n = req->ninputs, nb;
	if (!ms_mul_ok(n, sizeof(src), &nb))
		return ms_fail(&c->eb, MS_ERR_RANGE, "too many inputs");
	c->nsrcs = n; /* the size every array below is freed with */
	c->srcs = ms_mem_calloc(c->mem, n, sizeof(src));
	c->heap = ms_mem_calloc(c->mem, n, sizeof(size_t));
	c->group = ms_mem_calloc(c->mem, n, sizeof(size_t));
	c->iparts = ms_mem_calloc(c->mem, n, sizeof(ms_part *));
	c->egroup = ms_mem_calloc(c->mem, n, sizeof(size_t));
	if (!c->srcs || !c->heap || !c->group || !c->iparts || !c->egroup)
		return ms_fail(&c->eb, MS_ERR_NOMEM,
		               "out of memory for %zu merge inputs", n);
	res->input_min_ts = INT64_MAX;
	res->input_max_ts = INT64_MIN;
	for (size_t i = 0; i < n; i++) {
		src *s = &c->srcs[i];
		s->pos = i;
		ms_part_id_str(req->inputs[i], s->name);
		s->part = ms_view_find(c->view, req->inputs[i], MS_KIND_CORE);
		if (!s->part)
			return ms_fail(&c->eb, MS_ERR_CONFLICT,
			               "part %s is not active (epoch %llu)",
			               s->name,
			               (unsigned long long)res->epoch_before);
		const ms_part_meta *m = ms_part_get_meta(s->part);
		res->input_compressed_bytes += m->compressed_bytes;
		res->input_uncompressed_bytes += m->uncompressed_bytes;
		if (m->depth > res->max_input_depth)
			res->max_input_depth = m->depth;
		if (m->rows > 0) {
			if (m->min_ts < res->input_min_ts)
				res->input_min_ts = m->min_ts;
			if (m->max_ts > res->input_max_ts)
				res->input_max_ts = m->max_ts;
		}
	}
	if (res->input_min_ts > res->input_max_ts)
		res->input_min_ts = res->input_max_ts = 0;
	return 0;
}

static int
open_output(merge_ctx *c)
{
	const ms_merge_req *req = c->req;
	int rc;
	c->out_id = req->output_id;
	if (c->out_id == 0 &&
	    (rc = ms_shard_new_id(req->shard, &c->out_id, &c->eb)) < 0)
		return rc;
	for (int k = 0; k < MS_KIND_COUNT; k++)
		if (ms_shard_tmp_path(req->shard, (enum ms_part_kind)k,
		                      c->out_id, c->tmp[k],
		                      sizeof(c->tmp[k])) < 0)
			return write_failed(c, ms_fail(&c->eb, MS_ERR_RANGE,
			                               "shard path too long"));
	/* Re-encoded blocks take the shard's dictionary; raw copies keep
	 * the one they name. */
	ms_part_writer_opts o = {
		.mem = c->mem,
		.io = c->io,
		.zstd_level = req->zstd_level,
		.depth = c->res->max_input_depth + 1,
		.dict = ms_shard_dict_newest(req->shard),
		.no_sync = ms_shard_syncs_outputs(req->shard),
		.zctx = req->zctx,
	};
	/* The output is the write stage's, opened here or not. */
	rc = ms_part_writer_open(&c->writer, c->tmp[MS_KIND_CORE], c->out_id,
	                         &o, &c->eb);
	return rc < 0 ? write_failed(c, rc) : 0;
}

/* Read-ahead of an emit iterator where the input's data file could not
 * be mapped (else it shares the scan's mapping): it trails the scan by up
 * to a batch, so it needs its own window, but a small one does (blocks
 * are read in order; a larger block is read whole). 16 KiB saved 0.7 MB
 * over 15 inputs but cost ~4% more merge CPU in reads (bench_pipeline). */
#define EMIT_WINDOW (64u << 10)

static int
open_iters(merge_ctx *c)
{
	for (size_t i = 0; i < c->nsrcs; i++) {
		src *s = &c->srcs[i];
		s->keep = UINT64_MAX;
		/* Window 0: the default read window, and a decompression
		 * context made at the first decode (a sampling merge that
		 * stages from block headers never decodes on this one). */
		int rc = ms_part_iter_open_window(&s->it, s->part, c->mem,
		                                  c->io, 0, &c->eb);
		if (rc < 0)
			return rc;
		if (c->stager && !c->retain &&
		    (rc = ms_part_iter_open_reread(&s->eit, s->it, EMIT_WINDOW,
		                                   &c->eb)) < 0)
			return rc;
		/* Staged from block headers, the scan reads no unit: the
		 * emit pass checks each unit as it copies or decodes it. */
		if (c->stager && !c->stage_cols)
			ms_part_iter_defer_units(s->it);
		/* One decompression context for the merge (the iterators
		 * decode one at a time, on this thread): the first input's
		 * scan iterator owns it (or borrows the thread's kept one,
		 * req->zctx), closed with the others at the end. */
		if (i == 0)
			ms__part_iter_use_dctx(s->it,
			                       ms__zctx_dctx(c->req->zctx));
		ms_part_iter_share_zstd(s->it, c->srcs[0].it);
		ms_part_iter_share_zstd(s->eit, c->srcs[0].it);
	}
	return 0;
}

static void
close_iters(merge_ctx *c)
{
	if (!c->srcs)
		return;
	for (size_t i = 0; i < c->nsrcs; i++) {
		ms_part_iter_close(c->srcs[i].eit); /* trails it */
		ms_part_iter_close(c->srcs[i].it);
		c->srcs[i].it = NULL;
		c->srcs[i].eit = NULL;
		c->srcs[i].einfo = NULL;
	}
}

/* Remove every temporary output; if the output is not in the inventory,
 * also any final directory of it a failed publication may have left. */
static void
remove_outputs(merge_ctx *c)
{
	if (c->out_id == 0)
		return;
	for (int k = 0; k < MS_KIND_COUNT; k++)
		if (c->tmp[k][0])
			ms_part_remove_dir(c->tmp[k], NULL);
}

static void
scratch_release(merge_ctx *c, scratch *sc)
{
	ms_arena_release(&sc->arena);
	ms_mem_free(c->mem, sc->rows, sc->caprows * sizeof(srow));
	ms_mem_free(c->mem, sc->flat, sc->capflat * sizeof(ms_row));
	sc->rows = NULL;
	sc->flat = NULL;
	sc->caprows = sc->capflat = sc->nrows = 0;
}

static void
release_ctx(merge_ctx *c)
{
	close_iters(c);
	ms_part_writer_abort(c->writer);
	c->writer = NULL;
	scratch_release(c, &c->sc);
	scratch_release(c, &c->esc);
	ms_arena_release(&c->hold);
	ms_buf_release(&c->drop_rows);
	ms_mem_free(c->mem, c->egroup, c->nsrcs * sizeof(size_t));
	c->egroup = NULL;
	ms_mem_free(c->mem, c->srcs, c->nsrcs * sizeof(src));
	ms_mem_free(c->mem, c->heap, c->nsrcs * sizeof(size_t));
	ms_mem_free(c->mem, c->group, c->nsrcs * sizeof(size_t));
	ms_mem_free(c->mem, c->iparts, c->nsrcs * sizeof(ms_part *));
	c->iparts = NULL;
	c->srcs = NULL;
	c->heap = c->group = NULL;
	ms_view_release(c->view);
	c->view = NULL;
}

static void
add_io(ms_io *to, const ms_io *from)
{
	if (!to)
		return;
	atomic_fetch_add(&to->bytes_read, atomic_load(&from->bytes_read));
	atomic_fetch_add(&to->bytes_written, atomic_load(&from->bytes_written));
	atomic_fetch_add(&to->fsyncs, atomic_load(&from->fsyncs));
}

/* ---- sampling set-up (pipeline layer: ms_pipeline.h) ---- */

static int64_t
frontier_of(const ms_merge_req *req)
{
	return ms_frontier_grace(req->now_ns, req->grace_ns);
}

/* Active parts of `v` outside the selection, as guard parts (memory from
 * the merge; *out NULL when there are none). */
static int
outside_parts(merge_ctx *c, const ms_view *v, ms_guard_part **out, size_t *n)
{
	size_t total = ms_view_count(v), k = 0;
	*out = NULL;
	*n = 0;
	ms_guard_part *gp =
	        ms_mem_calloc(c->mem, total ? total : 1, sizeof(ms_guard_part));
	if (!gp)
		return ms_fail(&c->eb, MS_ERR_NOMEM,
		               "out of memory for %zu guard parts", total);
	for (size_t i = 0; i < total; i++) {
		uint64_t id = ms_view_id(v, i);
		bool inside = false;
		for (size_t j = 0; j < c->req->ninputs && !inside; j++)
			inside = c->req->inputs[j] == id;
		if (!inside)
			ms_guard_part_from_core(
			        &gp[k++], ms_view_part(v, i, MS_KIND_CORE));
	}
	*out = gp;
	*n = k;
	return 0;
}

static void
record_plan(ms_merge_sampling *sm, const ms_stage_plan *plan)
{
	sm->estimate_bytes = plan->estimate;
	sm->hard_limit_bytes = plan->hard;
	sm->preferred_limit_bytes = plan->preferred;
	sm->batches_planned = plan->planned;
}

/* Close the stager, first copying the calls it made into the result:
 * a merge that fails after some Decide calls (while staging, or in
 * sampling_finish) reports them as one that completes does, for the
 * chain counted them (plugin_health reconciles the two). */
static void
stager_close(merge_ctx *c)
{
	if (!c->stager)
		return;
	const ms_stage_report *r = ms_stager_report(c->stager);
	ms_merge_sampling *sm = &c->res->sampling;
	sm->plugin_calls = r->decide_calls;
	memcpy(sm->link_calls, r->link_calls, sizeof(sm->link_calls));
	/* A merge that does not report one call of its first link. */
	if (c->hooks && c->hooks->lose_link_call && sm->link_calls[0])
		sm->link_calls[0]--;
	sm->decide_ns = (int64_t)r->decide_ns;
	ms_stager_close(c->stager);
	c->stager = NULL;
}

static void
sampling_close(merge_ctx *c)
{
	stager_close(c);
	ms_guard_close(c->guard);
	ms_dropset_close(c->drops);
	c->guard = NULL;
	c->drops = NULL;
}

/* Decide whether this merge samples; if so open the guard over the
 * active parts outside the selection, the drop set and the stager. */
static int
sampling_open(merge_ctx *c)
{
	const ms_merge_req *req = c->req;
	ms_merge_sampling *sm = &c->res->sampling;
	const ms_pipeline *p = req->pipeline;
	if (!p) {
		sm->klass = MS_SAMPLING_NOT_EXECUTED;
		sm->reason = MS_SREASON_PIPELINE_DISABLED;
		return 0;
	}
	int64_t frontier = frontier_of(req);
	ms_sampling_input in = {
		.pipeline_enabled = true,
		.nsamplers = ms_chain_len(ms_pipeline_chain(p)),
		.event_disabled = req->merge_event_disabled &&
		                  !(req->flags & MS_MERGE_FINALIZE),
		.policy = ms_pipeline_policy(p),
		.segment_min_ns = req->segment_min_ns,
		.segment_max_ns = req->segment_max_ns,
		.grace_ns = ms_grace_or_default(req->grace_ns),
	};
	ms_part_meta *metas =
	        ms_mem_calloc(c->mem, c->nsrcs, sizeof(ms_part_meta));
	if (!metas)
		return ms_fail(&c->eb, MS_ERR_NOMEM,
		               "out of memory for the metadata of %zu inputs "
		               "(%zu bytes)",
		               c->nsrcs, c->nsrcs * sizeof(ms_part_meta));
	for (size_t i = 0; i < c->nsrcs; i++) {
		metas[i] = *ms_part_get_meta(c->srcs[i].part);
		ms_sampling_input_add(&in, metas[i].rows, metas[i].min_ts,
		                      metas[i].max_ts, frontier);
	}
	ms_stage_plan plan;
	ms_pipeline_plan(p, metas, c->nsrcs, &plan);
	for (size_t i = 0; i < c->nsrcs; i++)
		plan.trace_hint += metas[i].blocks; /* >= the traces */
	ms_mem_free(c->mem, metas, c->nsrcs * sizeof(ms_part_meta));
	/* Reread: a chain that reads no column is staged from block
	 * headers: a trace is charged its descriptor only, so the byte
	 * limit (sized for decoded columns) would never cut and the merge
	 * would go to Decide in one batch holding every trace. Cut it into
	 * the planned number of batches by trace count instead: the batch
	 * buffers are then sized for one planned batch and reused by the
	 * next. Retain charges the payload it holds: the bytes cut. */
	uint32_t proj = ms_chain_projection(ms_pipeline_chain(p)) & MS_COL_ALL;
	if (!proj && req->staging == MS_STAGING_REREAD && plan.planned > 1 &&
	    plan.trace_hint > 0) {
		uint64_t per =
		        (plan.trace_hint + plan.planned - 1) / plan.planned;
		if (per < plan.trace_cap)
			plan.trace_cap = per;
	}
	/* The plan is the merge's only once it sets up sampling (the
	 * reference records it with the filter it builds): a merge that
	 * does not sample records none. A lossless retry follows sampling
	 * attempts that had this plan, and keeps it. */
	if (c->lossless) {
		record_plan(sm, &plan);
		sm->klass = MS_SAMPLING_NOT_EXECUTED;
		sm->reason = MS_SREASON_LOSSLESS_RETRY;
		return 0;
	}
	if (!ms_sampling_predict(&in, &sm->klass, &sm->reason))
		return 0;
	record_plan(sm, &plan);

	ms_guard_part *gp = NULL;
	size_t ngp = 0;
	int rc = outside_parts(c, c->view, &gp, &ngp);
	if (rc < 0)
		return rc;
	ms_guard_opts go = { .mem = c->mem,
		             .hard_ceiling = plan.hard,
		             .grace_ns = req->grace_ns };
	rc = ms_guard_open(&c->guard, gp, ngp, &go, &c->eb);
	ms_mem_free(c->mem, gp,
	            (ms_view_count(c->view) ? ms_view_count(c->view) : 1) *
	                    sizeof(ms_guard_part));
	if (rc < 0)
		return rc;
	/* A merge samples only with a segment known (ms_sampling_predict). */
	ms_guard_set_coverage(c->guard, req->segment_min_ns,
	                      req->segment_max_ns);
	/* The same ceiling for every sampling merge, primary or finalize. */
	ms_dropset_opts dso = { .mem = c->mem,
		                .budget = ms_pipeline_drop_set_budget(p) };
	if ((rc = ms_dropset_open(&c->drops, &dso, &c->eb)) < 0)
		return rc;
	ms_stager_opts so = {
		.mem = c->mem,
		.chain = ms_pipeline_chain(p),
		.guard = c->guard,
		.drops = c->drops,
		.plan = plan,
		.policy = in.policy,
		.frontier_ns = frontier,
		.copy_rows = false,
		.emit = stage_emit,
		.emit_ctx = c,
		.live_gauge = ms_pipeline_live_gauge((ms_pipeline *)p),
		.peak_gauge = ms_pipeline_peak_gauge((ms_pipeline *)p),
	};
	const ms_merge_hooks *h = c->hooks;
	if (h && (h->stage_decide_twice || h->stage_bounds_skew_ns ||
	          h->stage_frontier_skew_ns)) {
		c->stest.decide_twice = h->stage_decide_twice;
		c->stest.skew_end_ns = h->stage_bounds_skew_ns;
		c->stest.skew_frontier_ns = h->stage_frontier_skew_ns;
		so.test = &c->stest;
	}
	/* The projection bits are the reader's column bits (ms_plugin.h);
	 * the batch's trace bounds need start and latency too. */
	c->stage_cols = proj ? proj | MS_COL_START | MS_COL_LATENCY : 0;
	sm->decoded_cols = proj ? c->stage_cols : HDR_CHECK_COLS;
	/* Retain: the payload of one batch in chunks kept across batches
	 * (bounded by about the preferred limit). */
	c->retain = req->staging == MS_STAGING_RETAIN;
	ms_arena_init(&c->hold, c->mem, HOLD_CHUNK,
	              (size_t)(plan.preferred / HOLD_CHUNK) + 1);
	ms_pipeline_note_staging((ms_pipeline *)p, req->seq, plan.preferred);
	return ms_stager_open(&c->stager, &so, &c->eb);
}

/* After the last trace: flush, and copy the stager's report. */
static int
sampling_finish(merge_ctx *c)
{
	int rc = ms_stager_finish(c->stager, &c->eb);
	if (rc < 0)
		return rc;
	const ms_stage_report *r = ms_stager_report(c->stager);
	ms_merge_sampling *sm = &c->res->sampling;
	sm->klass = r->cls;
	sm->reason = r->reason;
	sm->traces_evaluated = r->evaluated;
	sm->traces_kept = r->kept;
	sm->traces_dropped = r->dropped;
	sm->traces_oversized = r->oversized;
	sm->traces_deferred = r->deferred;
	sm->traces_unevaluated = r->hot;
	sm->batches = r->batches;
	sm->peak_staged_bytes = r->peak_charged;
	sm->decide_dup_traces = r->decide_dup_traces;
	sm->bounds_mismatch = r->bounds_mismatch;
	sm->hot_decided = r->hot_decided;
	sm->peak_concurrent_bytes = r->peak_concurrent;
	sm->nbatch_recs = (uint32_t)(r->batches < MS_MERGE_BATCH_RECS
	                                     ? r->batches
	                                     : MS_MERGE_BATCH_RECS);
	for (uint32_t i = 0; i < sm->nbatch_recs; i++)
		sm->batch[i] = (ms_merge_batch){ r->batch[i].charged,
			                         r->batch[i].traces,
			                         r->batch[i].evaluated,
			                         (int)r->batch[i].reason };
	sm->arena_cold_bytes = c->hold.cold_bytes;
	sm->arena_reused_bytes = c->hold.reused_bytes;
	if (c->ndrops != ms_dropset_count(c->drops))
		return ms_fail(&c->eb, MS_ERR_STATE,
		               "%zu drops emitted, %zu in the drop set",
		               c->ndrops, ms_dropset_count(c->drops));
	ms_guard_stats gs;
	ms_guard_stats_get(c->guard, &gs);
	sm->guard_probes = gs.probes;
	sm->guard_deferred_positive = gs.reasons[MS_GUARD_FILTER_POSITIVE] +
	                              gs.reasons[MS_GUARD_NO_FILTER];
	sm->guard_deferred_budget = gs.reasons[MS_GUARD_PROBE_BUDGET] +
	                            gs.reasons[MS_GUARD_DROP_BUDGET];
	sm->guard_retained_edge = gs.reasons[MS_GUARD_SEGMENT_EDGE];
	sm->drop_set_budget = ms_dropset_budget_of(c->drops);
	sm->drop_set_full = r->drop_set_full;
	return 0;
}

/* Every trace has been read and emitted: what held or described traces
 * in flight (the stager's batch buffers, the retained payload of the hold
 * arena, the trace scratch) is dead. Free it before the output is closed,
 * so it is not held through the index merges and the publication. The
 * guard and the drop set stay: revalidation, the index children (HOOK B)
 * and report_drops still need them. */
static void
release_staging(merge_ctx *c)
{
	stager_close(c);
	ms_arena_release(&c->hold);
	scratch_release(c, &c->sc);
	scratch_release(c, &c->esc);
}

/* Before publication: parts that became active since the merge pinned its
 * view must not hold a dropped trace; else MERGE_RETRY (lossless redo).
 * *epoch: the epoch of the inventory checked (0: nothing to check). */
static int
sampling_revalidate(merge_ctx *c, uint64_t *epoch)
{
	*epoch = 0;
	if (!c->drops || ms_dropset_count(c->drops) == 0)
		return 0;
	ms_view *v = NULL;
	int rc = ms_shard_view(c->req->shard, &v, &c->eb);
	if (rc < 0)
		return rc;
	*epoch = ms_view_epoch(v);
	ms_guard_part *gp = NULL;
	size_t ngp = 0;
	rc = outside_parts(c, v, &gp, &ngp);
	if (rc == 0) {
		rc = ms_guard_revalidate(c->guard, gp, ngp, c->drops, &c->eb);
		if (rc == MS_ERR_CONFLICT)
			rc = MERGE_RETRY;
	}
	ms_mem_free(c->mem, gp,
	            (ms_view_count(v) ? ms_view_count(v) : 1) *
	                    sizeof(ms_guard_part));
	ms_view_release(v);
	return rc;
}

/* Publish the output, replacing the inputs. A dropping merge publishes
 * only on the inventory its guard revalidated: a transaction in between
 * (a publication, another merge) is revalidated in turn, and after
 * PUBLISH_TRIES such races the attempt is discarded (MERGE_RETRY). */
static int
publish(merge_ctx *c)
{
	const ms_merge_req *req = c->req;
	uint64_t out = c->empty ? 0 : c->out_id;
	for (unsigned tries = 1;; tries++) {
		uint64_t epoch;
		int rc = sampling_revalidate(c, &epoch);
		if (rc != 0)
			return rc;
		if (!epoch)
			return ms_shard_replace(req->shard, req->inputs,
			                        req->ninputs, out, &c->eb);
		if (c->hooks && c->hooks->revalidated)
			c->hooks->revalidated(c->hooks->arg);
		bool moved;
		rc = ms_shard_replace_at(req->shard, req->inputs, req->ninputs,
		                         out, epoch, &moved, &c->eb);
		if (!moved)
			return rc;
		if (tries >= PUBLISH_TRIES)
			return MERGE_RETRY;
	}
}

/* After publication: every confirmed drop, in merge order, to the
 * request's on_drop. */
static void
report_drops(merge_ctx *c)
{
	const ms_merge_req *req = c->req;
	if (!req->on_drop || !c->drops)
		return;
	ms_dropset_iter it;
	ms_dropset_iter_init(&it, c->drops);
	ms_rd rows;
	ms_rd_init(&rows, c->drop_rows.data, c->drop_rows.len);
	for (size_t i = 0; i < c->ndrops && ms_dropset_next(&it, NULL, NULL);
	     i++)
		req->on_drop(req->drop_arg, it.tid, it.len,
		             ms_rd_uvarint(&rows));
}

static int
run(merge_ctx *c)
{
	ms_merge_result *res = c->res;
	int rc;

	if ((rc = enter(c, MS_MERGE_STAGE_PIN)) < 0 ||
	    (rc = pin_inputs(c)) < 0 || (rc = sampling_open(c)) < 0)
		return rc;
	if ((rc = enter(c, MS_MERGE_STAGE_READ)) < 0 ||
	    (rc = open_output(c)) < 0 || (rc = open_iters(c)) < 0 ||
	    (rc = merge_blocks(c)) < 0)
		return rc;
	if (c->stager && (rc = sampling_finish(c)) < 0)
		return rc;
	close_iters(c);
	release_staging(c);
	if ((rc = enter(c, MS_MERGE_STAGE_WRITE)) < 0)
		return rc;
	ms_part_writer *w = c->writer;
	c->writer = NULL; /* finish frees it whatever happens */
	if (res->traces_out == 0 && res->traces_in > 0) {
		/* Every trace dropped: no output; the inputs just go. */
		ms_part_writer_abort(w);
		c->empty = true;
	} else {
		ms_part_writer_cover(w, res->input_min_ts, res->input_max_ts);
		if ((rc = ms_part_writer_finish(w, &res->output, &c->eb)) < 0)
			return write_failed(c, rc);
		res->blocks_out = res->output.blocks;
	}
	if ((rc = enter(c, MS_MERGE_STAGE_INDEX)) < 0 ||
	    (!c->empty && (rc = merge_indexes(c)) < 0))
		return rc;
	if ((rc = enter(c, MS_MERGE_STAGE_PUBLISH)) < 0 ||
	    (rc = publish(c)) != 0)
		return rc;
	res->output_id = c->empty ? 0 : c->out_id;
	res->epoch_after = ms_shard_epoch(c->req->shard);
	report_drops(c);
	enter(c, MS_MERGE_STAGE_DONE); /* hook result ignored: committed */
	return 0;
}

/* Reset the result for an attempt (figures of a discarded attempt are
 * not the merge's, except resources, which are kept across attempts). */
static void
result_begin(const ms_merge_req *req, ms_merge_result *res, int64_t wall0)
{
	memset(res, 0, sizeof(*res));
	res->started_mono_ns = wall0;
	res->seq = req->seq;
	res->flags = req->flags;
	const char *lane = req->lane;
	if (!lane)
		lane = (req->flags & MS_MERGE_FINALIZE) ? MS_LANE_FINALIZE : "";
	snprintf(res->lane, sizeof(res->lane), "%s", lane);
	res->inputs = req->inputs;
	res->ninputs = req->ninputs;
}

/* One attempt; returns 0, MERGE_RETRY or a negative ms_err. */
static int
attempt(const ms_merge_req *req, const ms_merge_hooks *hooks,
        ms_merge_result *res, ms_mem *mem, ms_io *io, bool lossless,
        int64_t wall0, ms_errbuf *eb)
{
	/* The context lives on the merging thread's stack (about 16 KiB);
	 * everything it points to comes from the merge's ms_mem. */
	merge_ctx c;
	memset(&c, 0, sizeof(c));
	result_begin(req, res, wall0);
	c.req = req;
	c.hooks = hooks;
	c.res = res;
	c.mem = mem;
	c.io = io;
	ms_arena_init(&c.sc.arena, mem, ARENA_CHUNK, 1);
	ms_arena_init(&c.esc.arena, mem, ARENA_CHUNK, 1);
	ms_buf_init(&c.drop_rows, mem, 0);
	c.lossless = lossless;
	c.t_stage = ms_mono_ns();

	int rc = run(&c);
	enum ms_merge_stage at = c.fail_stage ? c.fail_stage : c.cur;
	res->stage_wall_ns[c.cur] += ms_mono_ns() - c.t_stage;
	sampling_close(&c);
	release_ctx(&c);
	if (rc != 0)
		remove_outputs(&c);
	if (rc < 0) {
		res->output_id = 0;
		memset(&res->output, 0, sizeof(res->output));
		res->err = rc;
		res->err_stage = at;
		ms_fail(&res->error, rc, "merge %llu failed at %s: %s",
		        (unsigned long long)req->seq, ms_merge_stage_name(at),
		        c.eb.msg[0] ? c.eb.msg : ms_strerror(rc));
		if (eb)
			*eb = res->error;
	}
	return rc;
}

int
ms_merge_execute(const ms_merge_req *req, ms_merge_result *res, ms_errbuf *eb)
{
	return ms__merge_execute_hooked(req, NULL, res, eb);
}

/* The link calls of an attempt that is discarded, added to acc. */
static void
add_link_calls(uint64_t acc[MS_CHAIN_MAX_LINKS], const ms_merge_result *res)
{
	for (size_t i = 0; i < MS_CHAIN_MAX_LINKS; i++)
		acc[i] += res->sampling.link_calls[i];
}

int
ms__merge_execute_hooked(const ms_merge_req *req, const ms_merge_hooks *hooks,
                         ms_merge_result *res, ms_errbuf *eb)
{
	if (!res)
		return ms_fail(eb, MS_ERR_INVAL, "merge: no result");
	memset(res, 0, sizeof(*res));
	int64_t wall0 = ms_mono_ns();
	int64_t cpu0 = ms_rusage_thread_cpu_ns();
	res->started_mono_ns = wall0;
	int rc = check_req(req, &res->error);
	if (rc < 0) {
		res->err = rc;
		if (eb)
			*eb = res->error;
		return rc;
	}
	ms_mem mem;
	ms_io io;
	ms_mem_init(&mem, req->parent_mem);
	memset(&io, 0, sizeof(io));
	if (hooks && hooks->fail_alloc_at)
		ms_mem_fail_at(&mem, hooks->fail_alloc_at,
		               hooks->fail_alloc_every);

	/* A sampling attempt whose drops a newly active part may hold is
	 * discarded (MERGE_RETRY) and the merge redone losslessly, which
	 * cannot conflict (design 12). */
	uint32_t discarded = 0;
	uint64_t calls[MS_CHAIN_MAX_LINKS] = { 0 };
	rc = attempt(req, hooks, res, &mem, &io, false, wall0, eb);
	if (rc == MERGE_RETRY) {
		add_link_calls(calls, res);
		rc = attempt(req, hooks, res, &mem, &io, true, wall0, eb);
		discarded = 1;
	}
	res->sampling.attempts_discarded = discarded;
	/* The link calls of the attempts discarded were calls all the
	 * same: the chain counted them. */
	for (size_t i = 0; i < MS_CHAIN_MAX_LINKS; i++)
		res->sampling.link_calls[i] += calls[i];

	ms_mem_stats st;
	ms_mem_stats_get(&mem, &st);
	res->alloc_bytes = st.bytes;
	res->alloc_count = st.count;
	res->peak_live = st.peak_live;
	res->bytes_read = atomic_load(&io.bytes_read);
	res->bytes_written = atomic_load(&io.bytes_written);
	res->fsyncs = atomic_load(&io.fsyncs);
	add_io(req->io, &io);
	res->wall_ns = ms_mono_ns() - wall0;
	res->cpu_ns = ms_rusage_thread_cpu_ns() - cpu0;
	return rc;
}

int
ms_merge_finalize(const ms_merge_req *req, ms_merge_result *res, ms_errbuf *eb)
{
	return ms__merge_finalize_hooked(req, NULL, res, eb);
}

int
ms__merge_finalize_hooked(const ms_merge_req *req, const ms_merge_hooks *hooks,
                          ms_merge_result *res, ms_errbuf *eb)
{
	if (!req)
		return ms__merge_execute_hooked(req, hooks, res, eb);
	ms_merge_req r = *req;
	r.flags |= MS_MERGE_FINALIZE;
	if (!r.lane)
		r.lane = MS_LANE_FINALIZE;
	int rc = ms__merge_execute_hooked(&r, hooks, res, eb);
	if (res)
		res->inputs = req->inputs;
	return rc;
}
