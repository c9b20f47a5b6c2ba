/*
 * dropset.c - the replay's record of every trace a merge confirmed as
 * dropped. The ledger of the dropped rows is computed from the fixture's
 * own raw parts by the oracle's pass over them (oracle.c; never from merge
 * outputs), so `final == input - dropped` proves that exactly the reported
 * traces left, whole, and nothing else did; ms__drop_check proves each was
 * reported once with all its rows.
 */
#include "replay_int.h"

#include "ms_ledger.h"

#include <stdlib.h>
#include <string.h>

#include <xxhash.h>

static size_t
slot_of(const ms__dropped *d, const uint8_t *tid, uint32_t len)
{
	return (size_t)XXH3_64bits(tid, len) & (d->cap - 1);
}

static int
grow(ms__dropped *d)
{
	size_t ncap = d->cap ? d->cap * 2 : 1024;
	ms__drop_ent *ne = calloc(ncap, sizeof(*ne));
	if (!ne)
		return MS_ERR_NOMEM;
	ms__dropped nd = { .ent = ne, .cap = ncap, .n = 0 };
	for (size_t i = 0; i < d->cap; i++) {
		ms__drop_ent *e = &d->ent[i];
		if (!e->len)
			continue;
		size_t h = slot_of(&nd, e->tid, e->len);
		while (ne[h].len)
			h = (h + 1) & (ncap - 1);
		ne[h] = *e;
		nd.n++;
	}
	free(d->ent);
	*d = nd;
	return 0;
}

static ms__drop_ent *
find(const ms__dropped *d, const uint8_t *tid, uint32_t len)
{
	if (!d->cap)
		return NULL;
	size_t h = slot_of(d, tid, len);
	while (d->ent[h].len) {
		if (d->ent[h].len == len && !memcmp(d->ent[h].tid, tid, len))
			return &d->ent[h];
		h = (h + 1) & (d->cap - 1);
	}
	return NULL;
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
	if ((d->n + 1) * 2 > d->cap && grow(d))
		return MS_ERR_NOMEM;
	size_t h = slot_of(d, tid, len);
	while (d->ent[h].len)
		h = (h + 1) & (d->cap - 1);
	e = &d->ent[h];
	memcpy(e->tid, tid, len);
	e->len = len;
	e->rows = rows;
	e->times = 1;
	e->phase = (uint8_t)phase;
	d->n++;
	return 0;
}

void
ms__dropped_release(ms__dropped *d)
{
	free(d->ent);
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
	for (size_t i = 0; i < d->cap; i++) {
		const ms__drop_ent *e = &d->ent[i];
		if (!e->len)
			continue;
		uint64_t f = found ? found[i] : 0;
		if (e->times != 1 || e->rows != f) {
			snprintf(why, n,
			         "trace %.*s: dropped %u times, %llu rows "
			         "reported, %llu in the fixture",
			         (int)e->len, (const char *)e->tid, e->times,
			         (unsigned long long)e->rows,
			         (unsigned long long)f);
			return MS_ERR_STATE;
		}
	}
	return 0;
}
