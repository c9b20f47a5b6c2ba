/*
 * ledger_part.c - ledgers of whole parts and views: reads every row of a
 * part (core rows through ms_part_iter, index rows through ms_sidx_iter)
 * and sums them (ms_ledger.h; encodings in core/FORMAT.md, "Ledger").
 *
 * Kept apart from ledger.c so that row-level ledgers need nothing of the
 * part reader.
 */
#include "ms_ledger.h"
#include "ms_shard.h"
#include "ms_sidx.h"

void
ms_ledger_set_add_row(ms_ledger_set *s, const ms_row *r)
{
	ms_sidx_row ir;
	ms_ledger_add_row(&s->kind[MS_KIND_CORE], r);
	for (int k = MS_KIND_LATENCY; k <= MS_KIND_START_TIME; k++) {
		ms_sidx_row_of((enum ms_part_kind)k, r, &ir);
		ms_ledger_add_index_row(&s->kind[k], &ir);
	}
}

static int
core_ledger(const ms_part *p, ms_ledger *l, ms_mem *mem, ms_errbuf *eb)
{
	ms_part_iter *it;
	int rc = ms_part_iter_open(&it, p, mem, NULL, eb);
	if (rc)
		return rc;
	const ms_block_info *info;
	while ((rc = ms_part_iter_next(it, &info, eb)) == 1) {
		const ms_row *rows;
		rc = ms_part_iter_decode(it, MS_COL_ALL, &rows, eb);
		if (rc)
			break;
		for (uint32_t i = 0; i < info->nrows; i++)
			ms_ledger_add_row(l, &rows[i]);
	}
	ms_part_iter_close(it);
	return rc < 0 ? rc : 0;
}

static int
index_ledger(const ms_part *p, ms_ledger *l, ms_mem *mem, ms_errbuf *eb)
{
	ms_sidx_iter *it;
	int rc = ms_sidx_iter_open(&it, p, mem, NULL, eb);
	if (rc)
		return rc;
	const ms_sidx_row *r;
	while ((rc = ms_sidx_iter_next(it, &r, eb)) == 1)
		ms_ledger_add_index_row(l, r);
	ms_sidx_iter_close(it);
	return rc < 0 ? rc : 0;
}

int
ms_ledger_of_part(const ms_part *p, ms_ledger *out, ms_mem *mem, ms_errbuf *eb)
{
	ms_ledger l;
	ms_ledger_init(&l);
	int rc = ms_part_kind_of(p) == MS_KIND_CORE
	                 ? core_ledger(p, &l, mem, eb)
	                 : index_ledger(p, &l, mem, eb);
	if (rc)
		return rc;
	if (l.rows != ms_part_get_meta(p)->rows)
		return ms_fail(eb, MS_ERR_CORRUPT,
		               "part %016llx (%s): read %llu rows, meta says "
		               "%llu",
		               (unsigned long long)ms_part_get_meta(p)->id,
		               ms_part_dir(p), (unsigned long long)l.rows,
		               (unsigned long long)ms_part_get_meta(p)->rows);
	*out = l;
	return 0;
}

int
ms_ledger_of_view(const struct ms_view *v, ms_ledger_set *out, ms_mem *mem,
                  ms_errbuf *eb)
{
	ms_ledger_set s;
	ms_ledger_set_init(&s);
	for (size_t i = 0; i < ms_view_count(v); i++)
		for (int k = 0; k < MS_KIND_COUNT; k++) {
			ms_ledger l;
			int rc = ms_ledger_of_part(
			        ms_view_part(v, i, (enum ms_part_kind)k), &l,
			        mem, eb);
			if (rc)
				return rc;
			ms_ledger_add(&s.kind[k], &l);
		}
	*out = s;
	return 0;
}
