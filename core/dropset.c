/*
 * dropset.c - the drop set: one job, the exact record of the traces a
 * sampling merge confirmed as dropped (the fragment guard, guard.c, decides
 * which), in merge order. Index pruning and the guard's revalidation
 * consult it; a hash collision can never make it answer "contains".
 *
 * Design:
 *  1. Every ID is recorded at most once, in the order added; entry i never
 *     moves.
 *  2. The slot table is open-addressed with linear probing, at most half
 *     full; a slot holds a 32-bit fingerprint and entry index + 1 (0 =
 *     empty). A fingerprint match is always followed by a full byte
 *     comparison, so a hash collision can never answer "contains".
 */
#include "pipeline_int.h"

#include <xxhash.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Drop set                                                            */

/* 24 bytes an entry: the ID's offset into ids and its length share one
 * word (an ID is at most MS_TRACE_ID_MAX bytes); the hash is not kept but
 * computed again for the few entries a growing slot table moves. */
#define DROP_LEN_BITS 8
typedef struct drop_entry {
	int64_t min_ts, max_ts;
	uint64_t off_len; /* offset into ids << DROP_LEN_BITS | length */
} drop_entry;
_Static_assert(MS_TRACE_ID_MAX < (1 << DROP_LEN_BITS),
               "a trace ID's length fits in DROP_LEN_BITS");

static uint64_t
entry_off(const drop_entry *e)
{
	return e->off_len >> DROP_LEN_BITS;
}

static uint32_t
entry_len(const drop_entry *e)
{
	return (uint32_t)(e->off_len & ((1u << DROP_LEN_BITS) - 1));
}

typedef struct drop_slot {
	uint32_t fp;
	uint32_t idx1; /* entry index + 1; 0 = empty */
} drop_slot;

struct ms_dropset {
	ms_mem *mem;
	ms_dropset_hash_fn hash;
	void *hash_ctx;
	ms_buf ids;
	ms_buf entries;
	size_t n;
	drop_slot *slots;
	size_t nslots; /* power of two or 0 */
};

static uint64_t
default_hash(const uint8_t *tid, uint32_t len, void *ctx)
{
	(void)ctx;
	return XXH3_64bits(tid, len);
}

int
ms_dropset_open(ms_dropset **out, const ms_dropset_opts *opts, ms_errbuf *eb)
{
	static const ms_dropset_opts none;
	*out = NULL;
	if (!opts)
		opts = &none;
	ms_dropset *d = ms_mem_calloc(opts->mem, 1, sizeof(*d));
	if (!d)
		return ms_fail(eb, MS_ERR_NOMEM, "drop set: out of memory");
	d->mem = opts->mem;
	d->hash = opts->hash ? opts->hash : default_hash;
	d->hash_ctx = opts->hash_ctx;
	ms_buf_init(&d->ids, d->mem, 0);
	ms_buf_init(&d->entries, d->mem, 0);
	*out = d;
	return 0;
}

void
ms_dropset_close(ms_dropset *d)
{
	if (!d)
		return;
	ms_buf_release(&d->ids);
	ms_buf_release(&d->entries);
	ms_mem_free(d->mem, d->slots, d->nslots * sizeof(*d->slots));
	ms_mem_free(d->mem, d, sizeof(*d));
}

static const drop_entry *
entry_at(const ms_dropset *d, size_t i)
{
	return (const drop_entry *)d->entries.data + i;
}

static bool
entry_is(const ms_dropset *d, const drop_entry *e, const uint8_t *tid,
         uint32_t len)
{
	return entry_len(e) == len &&
	       memcmp(d->ids.data + entry_off(e), tid, len) == 0;
}

static void
slot_put(drop_slot *slots, size_t nslots, uint64_t h, uint32_t idx1)
{
	size_t mask = nslots - 1;
	size_t i = (size_t)h & mask;
	while (slots[i].idx1)
		i = (i + 1) & mask;
	slots[i].fp = (uint32_t)(h >> 32);
	slots[i].idx1 = idx1;
}

static int
grow_slots(ms_dropset *d)
{
	size_t ns = d->nslots ? d->nslots * 2 : 64, bytes;
	if (!ms_mul_ok(ns, sizeof(drop_slot), &bytes) || ns > (1ull << 32))
		return MS_ERR_RANGE;
	drop_slot *s = ms_mem_calloc(d->mem, ns, sizeof(drop_slot));
	if (!s)
		return MS_ERR_NOMEM;
	for (size_t i = 0; i < d->n; i++) {
		const drop_entry *e = entry_at(d, i);
		slot_put(s, ns,
		         d->hash(d->ids.data + entry_off(e), entry_len(e),
		                 d->hash_ctx),
		         (uint32_t)(i + 1));
	}
	ms_mem_free(d->mem, d->slots, d->nslots * sizeof(*d->slots));
	d->slots = s;
	d->nslots = ns;
	return 0;
}

bool
ms_dropset_contains(const ms_dropset *d, const uint8_t *tid, uint32_t len)
{
	if (!d || d->n == 0 || !tid)
		return false;
	uint64_t h = d->hash(tid, len, d->hash_ctx);
	uint32_t fp = (uint32_t)(h >> 32);
	size_t mask = d->nslots - 1;
	for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
		const drop_slot *s = &d->slots[i];
		if (!s->idx1)
			return false;
		if (s->fp == fp &&
		    entry_is(d, entry_at(d, s->idx1 - 1), tid, len))
			return true;
	}
}

int
ms_dropset_add(ms_dropset *d, const uint8_t *tid, uint32_t len, int64_t min_ts,
               int64_t max_ts, ms_errbuf *eb)
{
	if (!tid || len == 0 || len > MS_TRACE_ID_MAX)
		return ms_fail(eb, MS_ERR_INVAL,
		               "drop set: trace ID of %u bytes, expected "
		               "1..%d",
		               len, MS_TRACE_ID_MAX);
	if (ms_dropset_contains(d, tid, len))
		return ms_fail(eb, MS_ERR_EXISTS,
		               "drop set: trace %.*s recorded twice", (int)len,
		               (const char *)tid);
	if (d->n >= UINT32_MAX - 1)
		return ms_fail(eb, MS_ERR_RANGE, "drop set: full");
	if ((d->n + 1) * 2 > d->nslots) {
		int rc = grow_slots(d);
		if (rc)
			return ms_fail(eb, rc, "drop set: cannot grow: %s",
			               ms_strerror(rc));
	}
	size_t off = d->ids.len;
	if (off > UINT64_MAX >> DROP_LEN_BITS)
		return ms_fail(eb, MS_ERR_RANGE, "drop set: full");
	drop_entry e = { min_ts, max_ts,
		         (uint64_t)off << DROP_LEN_BITS | len };
	int rc = ms_buf_append(&d->ids, tid, len);
	if (!rc)
		rc = ms_buf_append(&d->entries, &e, sizeof(e));
	if (rc) {
		d->ids.len = off;
		return ms_fail(eb, rc, "drop set: out of memory");
	}
	slot_put(d->slots, d->nslots, d->hash(tid, len, d->hash_ctx),
	         (uint32_t)(d->n + 1));
	d->n++;
	return 0;
}

size_t
ms_dropset_count(const ms_dropset *d)
{
	return d ? d->n : 0;
}

void
ms_dropset_get(const ms_dropset *d, size_t i, const uint8_t **tid,
               uint32_t *len, int64_t *min_ts, int64_t *max_ts)
{
	const drop_entry *e = entry_at(d, i);
	*tid = d->ids.data + entry_off(e);
	*len = entry_len(e);
	if (min_ts)
		*min_ts = e->min_ts;
	if (max_ts)
		*max_ts = e->max_ts;
}

uint64_t
ms_dropset_bytes(const ms_dropset *d)
{
	return sizeof(*d) + d->ids.cap + d->entries.cap +
	       d->nslots * sizeof(drop_slot);
}

bool
ms_dropset_keep(void *ctx, const uint8_t *tid, uint32_t len)
{
	return !ms_dropset_contains(ctx, tid, len);
}
