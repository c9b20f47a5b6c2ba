/*
 * partcheck.c - the check every part gets when it enters the replay's
 * shard (a publication or a merge output), for the gates
 * one_block_per_trace and part_ledgers: its core blocks hold one block per
 * trace in ascending trace-ID order (a trace split past
 * MS_BLOCK_SPLIT_BYTES continues in the next block), its rows are what its
 * metadata says, and its two index parts hold exactly the index rows its
 * core rows make (their ledgers equal the ones derived from the core rows).
 * The part's ledgers are handed back so that a merge can be reconciled
 * with its inputs.
 */
#include "replay_int.h"

#include "ms_ledger.h"

#include <stdio.h>
#include <string.h>

/* One block per trace, ascending; the core ledger and the index ledgers
 * derived from the rows. */
static int
check_core(const ms_part *p, const char *id, ms_ledger_set *derived, char *why,
           size_t n)
{
	ms_part_iter *it = NULL;
	ms_errbuf eb = { { 0 } };
	if (ms_part_iter_open(&it, p, NULL, NULL, &eb)) {
		snprintf(why, n, "part %s: %s", id, eb.msg);
		return -1;
	}
	uint8_t prev[MS_TRACE_ID_MAX];
	uint32_t prev_len = 0;
	uint64_t prev_span = 0, rows = 0;
	bool first = true;
	const ms_block_info *bi;
	int rc, bad = 0;
	while ((rc = ms_part_iter_next(it, &bi, &eb)) == 1) {
		if (!first) {
			int c = ms_trace_id_cmp(prev, prev_len, bi->trace_id,
			                        bi->trace_id_len);
			if (c > 0 ||
			    (c == 0 && prev_span < MS_BLOCK_SPLIT_BYTES / 2)) {
				snprintf(why, n, "part %s: trace %.*s %s", id,
				         (int)bi->trace_id_len,
				         (const char *)bi->trace_id,
				         c > 0 ? "out of order"
				               : "has two blocks");
				bad = 1;
				break;
			}
		}
		memcpy(prev, bi->trace_id, bi->trace_id_len);
		prev_len = bi->trace_id_len;
		prev_span = bi->span_bytes;
		first = false;
		const ms_row *r;
		if ((rc = ms_part_iter_decode(it, MS_COL_ALL, &r, &eb)) < 0)
			break;
		for (uint32_t k = 0; k < bi->nrows; k++)
			ms_ledger_set_add_row(derived, &r[k]);
		rows += bi->nrows;
	}
	if (rc < 0 && !bad) {
		snprintf(why, n, "part %s: %s", id, eb.msg);
		bad = 1;
	}
	if (!bad && rows != ms_part_get_meta(p)->rows) {
		snprintf(why, n,
		         "part %s: %llu rows in its blocks, %llu in its "
		         "metadata",
		         id, (unsigned long long)rows,
		         (unsigned long long)ms_part_get_meta(p)->rows);
		bad = 1;
	}
	ms_part_iter_close(it);
	return bad ? -1 : 0;
}

int
ms__part_check(const ms_part *core, const ms_part *lat, const ms_part *st,
               ms_ledger_set *out, char *why, size_t n)
{
	char id[17];
	ms_part_id_str(ms_part_get_meta(core)->id, id);
	ms_ledger_set d;
	ms_ledger_set_init(&d);
	why[0] = '\0';
	if (check_core(core, id, &d, why, n))
		return -1;
	const ms_part *idx[MS_KIND_COUNT] = { core, lat, st };
	for (int k = MS_KIND_LATENCY; k <= MS_KIND_START_TIME; k++) {
		const char *kn = ms_part_kind_name((enum ms_part_kind)k);
		if (!idx[k]) {
			snprintf(why, n, "part %s: no %s index part", id, kn);
			return -1;
		}
		ms_ledger l;
		ms_errbuf eb = { { 0 } };
		if (ms_ledger_of_part(idx[k], &l, NULL, &eb)) {
			snprintf(why, n, "part %s: %s index: %s", id, kn,
			         eb.msg);
			return -1;
		}
		if (!ms_ledger_equal(&l, &d.kind[k])) {
			char a[MS_LEDGER_STR_MAX], b[MS_LEDGER_STR_MAX];
			snprintf(why, n,
			         "part %s: %s index ledger %s, its core rows "
			         "make %s",
			         id, kn, ms_ledger_format(&l, a),
			         ms_ledger_format(&d.kind[k], b));
			return -1;
		}
	}
	*out = d;
	return 0;
}
