/*
 * dropset.c - the replay's record of every trace a merge confirmed as
 * dropped, and the independent oracle over it: the ledger of the dropped
 * rows is computed from the fixture's own raw parts (never from merge
 * outputs), so `final == input - oracle` proves that exactly the reported
 * traces left, whole, and nothing else did.
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

int
ms__drop_oracle(const ms__dropped *d, const ms_fixture *fx, ms_ledger_set *out,
                char *why, size_t n)
{
	ms_ledger_set_init(out);
	why[0] = '\0';
	if (!d->n)
		return 0;
	/* Rows of each dropped trace as the fixture holds them. */
	uint64_t *found = calloc(d->cap, sizeof(*found));
	if (!found)
		return MS_ERR_NOMEM;
	int rc = 0;
	ms_errbuf eb = { { 0 } };
	for (size_t i = 0; i < ms_fixture_nslots(fx) && !rc; i++) {
		const ms_fixture_slot *s = ms_fixture_slot_at(fx, i);
		ms_part *p = NULL;
		ms_part_iter *it = NULL;
		if ((rc = ms_part_open(&p, s->path[MS_KIND_CORE], NULL, &eb)) ||
		    (rc = ms_part_iter_open(&it, p, NULL, NULL, &eb))) {
			snprintf(why, n, "%s", eb.msg);
			ms_part_close(p);
			break;
		}
		const ms_block_info *bi;
		while ((rc = ms_part_iter_next(it, &bi, &eb)) == 1) {
			ms__drop_ent *e =
			        find(d, bi->trace_id, bi->trace_id_len);
			if (!e)
				continue;
			const ms_row *rows;
			if ((rc = ms_part_iter_decode(it, MS_COL_ALL, &rows,
			                              &eb)))
				break;
			for (uint32_t k = 0; k < bi->nrows; k++)
				ms_ledger_set_add_row(out, &rows[k]);
			found[e - d->ent] += bi->nrows;
		}
		if (rc < 0)
			snprintf(why, n, "%s", eb.msg);
		else
			rc = 0;
		ms_part_iter_close(it);
		ms_part_close(p);
	}
	/* A dropped trace must have been dropped once, and whole. */
	for (size_t i = 0; i < d->cap && !rc; i++) {
		const ms__drop_ent *e = &d->ent[i];
		if (!e->len)
			continue;
		if (e->times != 1 || e->rows != found[i]) {
			snprintf(why, n,
			         "trace %.*s: dropped %u times, %llu rows "
			         "reported, %llu in the fixture",
			         (int)e->len, (const char *)e->tid, e->times,
			         (unsigned long long)e->rows,
			         (unsigned long long)found[i]);
			rc = MS_ERR_STATE;
		}
	}
	free(found);
	return rc;
}
