/*
 * dropset.c - the replay's record of every trace a merge confirmed as
 * dropped. The ledger of the dropped rows is computed from the fixture's
 * own raw parts by the oracle's pass over them (oracle.c; never from merge
 * outputs), so `final == input - dropped` proves that exactly the reported
 * traces left, whole, and nothing else did; ms__drop_check proves each was
 * reported once with all its rows.
 */
#include "replay_int.h"
#include "grow.h"

#include "ms_ledger.h"

#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

void *
ms__chunks_add(ms__chunks *c, size_t bytes)
{
	if (MS__GROW(c->p, c->cap, c->n + 1, 64))
		return NULL;
	void *m = malloc(bytes);
	if (m)
		c->p[c->n++] = m;
	return m;
}

void
ms__chunks_release(ms__chunks *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->p[i]);
	free(c->p);
	memset(c, 0, sizeof(*c));
}

const uint8_t *
ms__idpool_add(ms__idpool *p, const uint8_t *id, size_t len)
{
	if (len > MS_TRACE_ID_MAX)
		return NULL;
	if (!p->ch.n || p->used + len > MS__IDPOOL_CHUNK) {
		if (!ms__chunks_add(&p->ch, MS__IDPOOL_CHUNK))
			return NULL;
		p->used = 0;
	}
	uint8_t *d = (uint8_t *)p->ch.p[p->ch.n - 1] + p->used;
	memcpy(d, id, len);
	p->used += len;
	return d;
}

void
ms__idpool_release(ms__idpool *p)
{
	ms__chunks_release(&p->ch);
	p->used = 0;
}

/* The entries are dense, in the order they were first reported
 * (d->ent[0..n)); d->idx is an open-addressing table of entry numbers + 1
 * (0 = empty) over d->cap slots, at most half full. */
static uint32_t *
slot_of(const ms__dropped *d, uint32_t *idx, size_t cap, const uint8_t *tid,
        uint32_t len)
{
	size_t h = (size_t)XXH3_64bits(tid, len) & (cap - 1);
	while (idx[h]) {
		const ms__drop_ent *e = &d->ent[idx[h] - 1];
		if (e->len == len && !memcmp(e->tid, tid, len))
			break;
		h = (h + 1) & (cap - 1);
	}
	return &idx[h];
}

static int
grow(ms__dropped *d)
{
	if (d->n >= UINT32_MAX - 1)
		return MS_ERR_NOMEM;
	if (MS__GROW(d->ent, d->ecap, d->n + 1, 512))
		return MS_ERR_NOMEM;
	if ((d->n + 1) * 2 <= d->cap)
		return 0;
	size_t ncap = d->cap ? d->cap * 2 : 1024;
	uint32_t *ni = calloc(ncap, sizeof(*ni));
	if (!ni)
		return MS_ERR_NOMEM;
	for (size_t i = 0; i < d->n; i++)
		*slot_of(d, ni, ncap, d->ent[i].tid, d->ent[i].len) =
		        (uint32_t)i + 1;
	free(d->idx);
	d->idx = ni;
	d->cap = ncap;
	return 0;
}

static ms__drop_ent *
find(const ms__dropped *d, const uint8_t *tid, uint32_t len)
{
	if (!d->cap)
		return NULL;
	uint32_t s = *slot_of(d, d->idx, d->cap, tid, len);
	return s ? &d->ent[s - 1] : NULL;
}

int
ms__dropped_add(ms__dropped *d, const uint8_t *tid, uint32_t len, uint64_t rows,
                enum ms__rphase phase)
{
	if (len == 0 || len > MS_TRACE_ID_MAX)
		return MS_ERR_INVAL;
	ms__drop_ent *e = find(d, tid, len);
	if (e) {
		e->times++;
		e->rows += rows;
		return 0;
	}
	if (grow(d))
		return MS_ERR_NOMEM;
	const uint8_t *copy = ms__idpool_add(&d->ids, tid, len);
	if (!copy)
		return MS_ERR_NOMEM;
	uint32_t *s = slot_of(d, d->idx, d->cap, tid, len);
	e = &d->ent[d->n];
	memset(e, 0, sizeof(*e));
	e->tid = copy;
	e->len = (uint8_t)len;
	e->rows = rows;
	e->times = 1;
	e->phase = (uint8_t)phase;
	*s = (uint32_t)++d->n;
	return 0;
}

void
ms__dropped_release(ms__dropped *d)
{
	free(d->ent);
	free(d->idx);
	ms__idpool_release(&d->ids);
	memset(d, 0, sizeof(*d));
}

const ms__drop_ent *
ms__dropped_find(const ms__dropped *d, const uint8_t *tid, uint32_t len)
{
	return find(d, tid, len);
}

int
ms__drop_check(const ms__dropped *d, const uint64_t *found, char *why, size_t n)
{
	why[0] = '\0';
	/* A dropped trace must have been dropped once, and whole. */
	for (size_t i = 0; i < d->n; i++) {
		const ms__drop_ent *e = &d->ent[i];
		uint64_t f = found ? found[i] : 0;
		if (e->times != 1 || e->rows != f) {
			char shown[MS_TRACE_ID_SHOW_MAX];
			snprintf(why, n,
			         "trace %s: dropped %u times, %llu rows "
			         "reported, %llu in the fixture",
			         ms_trace_id_show(shown, e->tid, e->len), e->times,
			         (unsigned long long)e->rows,
			         (unsigned long long)f);
			return MS_ERR_STATE;
		}
	}
	return 0;
}

void
ms__dropped_truncate(ms__dropped *d, size_t n)
{
	if (n >= d->n)
		return;
	d->n = n;
	if (d->cap)
		memset(d->idx, 0, d->cap * sizeof(*d->idx));
	for (size_t i = 0; i < n; i++)
		*slot_of(d, d->idx, d->cap, d->ent[i].tid, d->ent[i].len) =
		        (uint32_t)i + 1;
}
