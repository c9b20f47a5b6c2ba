/*
 * ms_batch.h - column-oriented batches as a plugin reads them (batch.c),
 * built from rows outside a merge: the fixtures, the oracle and the
 * benchmarks. Inside a merge the stager builds them (core-private).
 *
 * Ownership: an ms_batch is a heap object, reference counted; the caller
 * of ms_batch_from_rows owns one reference and drops it with
 * ms_batch_release (NULL accepted). A chain call that timed out keeps its
 * own reference while the plugin may still read the batch, so the memory
 * is freed only when that call returns; such a batch is never reused.
 * The view returned by ms_batch_view is borrowed from the batch.
 */
#ifndef MS_BATCH_H
#define MS_BATCH_H

#include "ms_err.h"
#include "ms_mem.h"
#include "ms_plugin.h"
#include "ms_row.h"

#include <stddef.h>
#include <stdint.h>

/* A read-only column-oriented batch (ms_plugin_batch) and the memory
 * behind it, as one reference-counted unit. */
typedef struct ms_batch ms_batch;

/* Build a batch from rows grouped by trace (consecutive rows with equal
 * trace IDs form one trace; traces must be in ascending ID order and
 * distinct), copying only the projected columns. mem must outlive every
 * chain the batch is given to (a timed-out call frees it late). */
int ms_batch_from_rows(ms_batch **out, ms_mem *mem, uint32_t projection,
                       const ms_row *rows, size_t nrows, ms_errbuf *eb);
const ms_plugin_batch *ms_batch_view(const ms_batch *b);
void ms_batch_release(ms_batch *b);

#endif
