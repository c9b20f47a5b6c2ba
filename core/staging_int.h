/*
 * staging_int.h - what the three staging files share (staging.c, batch.c,
 * stager.c): the fixed charge of a pending trace, and the batch builder
 * the stager fills. Private to core/.
 */
#ifndef MS_STAGING_INT_H
#define MS_STAGING_INT_H

#include "ms_pipeline.h"
#include "pipeline_int.h"

#include <string.h>

/* What one pending trace costs the stager before its ID and columns:
 * its batch entry, its pending entry (one pointer), the keep byte, one
 * link's verdict and check bytes, and the drop-set reserve (slot + ID
 * vector entry). stager.c says what each is. */
#define MS__DROP_RESERVE 24u
#define MS__TRACE_FIXED                                                        \
	(sizeof(ms_plugin_trace) + sizeof(void *) + 3u + MS__DROP_RESERVE)

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

/*
 * Builds one batch. The data columns move into the batch when it is
 * finished; the stager may hand them back afterwards (ms__builder_reclaim),
 * emptied, so that the batches of one merge share one set of buffers.
 * hint > 0: the per-trace columns are first sized for that many traces.
 */
typedef struct ms__builder {
	ms_mem *mem;
	ms_mem *late_mem;
	uint32_t proj;
	ms_buf buf[C_NBUF];
	size_t ntraces, nrows, ntags;
	size_t hint;
	void *ptrs; /* a spare pointer array handed back by a batch */
	size_t ptrs_size;
} ms__builder;

void ms__builder_init(ms__builder *b, ms_mem *mem, uint32_t proj);
void ms__builder_release(ms__builder *b);
/* Append one trace (rows share one trace ID) / one trace known by its
 * descriptor alone (projection none). 0 or a negative ms_err. */
int ms__builder_add(ms__builder *b, const ms_row *rows, size_t n);
int ms__builder_add_summary(ms__builder *b, const ms_stage_summary *ts);
/* Turn the builder's data columns into a batch (one reference). */
int ms__builder_finish(ms__builder *b, ms_batch **out);
/* The bytes the columns of the batch being built hold (for messages). */
size_t ms__builder_bytes(const ms__builder *b);
/* After the chain call on bt returned: hand its buffers back to the
 * builder if no timed-out call kept it and they hold at most `bound`
 * bytes. Returns whether it did; the caller releases bt either way. */
bool ms__builder_reclaim(ms__builder *b, ms_batch *bt, uint64_t bound);

/* ms_buf_append with the common case inline: the vectors sized from the
 * plan's hint seldom grow, so most appends are a bounds test and a copy. */
static inline int
ms__buf_put(ms_buf *b, const void *p, size_t n)
{
	if (n <= b->cap - b->len) {
		memcpy(b->data + b->len, p, n);
		b->len += n;
		return 0;
	}
	return ms_buf_append(b, p, n);
}

static inline bool
ms__same_tid(const ms_row *a, const ms_row *b)
{
	return a->trace_id_len == b->trace_id_len &&
	       memcmp(a->trace_id, b->trace_id, a->trace_id_len) == 0;
}

static inline bool
ms__valid_tid(const ms_row *r)
{
	return r->trace_id && r->trace_id_len >= 1 &&
	       r->trace_id_len <= MS_TRACE_ID_MAX;
}

#endif
