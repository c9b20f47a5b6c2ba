/*
 * ledger_part.c - ledgers of whole parts and views: reads every row of a
 * part (core rows through ms_part_iter, index rows through ms_sidx_iter)
 * and sums them (ms_ledger.h; encodings in core/FORMAT.md, "Ledger");
 * and the check of a part as it enters a shard (ms_ledger_check_part),
 * shared by the fixture build and the replay so that both check alike.
 *
 * Kept apart from ledger.c so that row-level ledgers need nothing of the
 * part reader.
 */
#include "ms_ledger.h"
#include "ms_shard.h"
#include "ms_sidx.h"
#include "sidx_int.h"

#include <string.h>

#include <xxhash.h>

void
ms_ledger_set_add_row(ms_ledger_set *s, const ms_row *r)
{
	ms_sidx_row ir;
	ms_ledger_add_row(&s->kind[MS_KIND_CORE], r);
	ms_sidx_row_of(MS_KIND_LATENCY, r, &ir);
	ms_ledger_add_index_row(&s->kind[MS_KIND_LATENCY], &ir);
	/* The start_time row differs from the latency row only in key and
	 * other, swapped (ms_sidx_row_of): its series is not hashed again. */
	ir.key = r->start_ns;
	ir.other = (int64_t)r->latency_ms;
	ms_ledger_add_index_row(&s->kind[MS_KIND_START_TIME], &ir);
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
	/* The tag values are hashed as stored where the chunk allows it:
	 * no strings are made for them. */
	ms__sidx_iter_raw(it);
	const ms_sidx_row *r;
	const uint8_t *v[3];
	uint32_t len[3];
	while ((rc = ms_sidx_iter_next(it, &r, eb)) == 1)
		if (ms__sidx_row_enc(it, r, v, len))
			ms__ledger_add_index_enc(l, r, v, len);
		else
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
ms_ledger_block_key(ms_part_iter *it, const ms_block_info *bi, uint64_t *lo,
                    uint64_t *hi, ms_errbuf *eb)
{
	ms_raw_block raw;
	int rc = ms_part_iter_raw(it, &raw, eb);
	if (rc < 0)
		return rc;
	/* The stored bytes, seeded with the trace ID and rows. */
	uint64_t seed = XXH3_64bits(bi->trace_id, bi->trace_id_len) ^ bi->nrows;
	XXH128_hash_t key =
	        XXH3_128bits_withSeed(raw.bytes, bi->stored_bytes, seed);
	*lo = key.low64;
	*hi = key.high64;
	return 0;
}

int
ms_ledger_block_decode(ms_part_iter *it, const ms_block_info *bi,
                       ms_ledger_set *out, ms_errbuf *eb)
{
	const ms_row *r;
	int rc = ms_part_iter_decode(it, MS_COL_ALL, &r, eb);
	if (rc < 0)
		return rc;
	ms_ledger_set_init(out);
	for (uint32_t k = 0; k < bi->nrows; k++)
		ms_ledger_set_add_row(out, &r[k]);
	return 0;
}

/* The deferred blocks of a check (ord: their numbers in the part,
 * ascending; left: which flush left unanswered), answered: flush, then
 * each block it left decoded through `re`, an iterator trailing `it`
 * (opened at the first such block; re_at blocks passed). */
typedef struct core_later {
	uint32_t *ord;
	bool *left;
	size_t n, max;
	ms_part_iter *re;
	uint64_t re_at;
} core_later;

static int
later_answer(core_later *d, const ms_block_batch *b, void *arg,
             ms_part_iter *it, ms_ledger_set *derived, ms_errbuf *eb)
{
	memset(d->left, 0, d->n * sizeof(*d->left));
	int rc = b->flush(arg, derived, d->left, eb);
	const ms_block_info *bi = NULL;

	for (size_t j = 0; j < d->n && rc >= 0; j++) {
		if (!d->left[j])
			continue;
		if (!d->re) {
			if ((rc = ms_part_iter_open_reread(&d->re, it, 0, eb)))
				break;
			/* One decompression context for the check. */
			ms_part_iter_share_zstd(d->re, it);
		}
		while (d->re_at <= d->ord[j] && rc >= 0) {
			rc = ms_part_iter_next(d->re, &bi, eb);
			if (!rc)
				rc = ms_fail(eb, MS_ERR_CORRUPT,
				             "block %u not found again",
				             (unsigned)d->ord[j]);
			d->re_at++;
		}
		if (rc < 0)
			break;
		ms_ledger_set bl;
		rc = b->decode ? b->decode(arg, d->re, bi, &bl, eb)
		               : ms_ledger_block_decode(d->re, bi, &bl, eb);
		if (rc >= 0)
			ms_ledger_set_add(derived, &bl);
	}
	d->n = 0;
	return rc < 0 ? rc : 0;
}

/* rc with the core reader's message inner, said of part `id`: as it is
 * when it already starts by naming that part (the reader's "part ID
 * (path): ..."), else after "part ID: ". Naming the part twice would
 * push the cause out of the callers' bounded messages. */
static int
fail_of_part(ms_errbuf *eb, int rc, const char *id, const char *inner)
{
	size_t n = strlen(id);
	if (!strncmp(inner, "part ", 5) && !strncmp(inner + 5, id, n) &&
	    (inner[5 + n] == ' ' || inner[5 + n] == ':'))
		return ms_fail(eb, rc, "%s", inner);
	return ms_fail(eb, rc, "part %s: %s", id, inner);
}

/* The core part's blocks: one per trace, ascending, and its rows'
 * ledgers summed into derived. */
static int
check_core(const ms_part *p, const char *id, const ms_block_batch *b, void *arg,
           ms_ledger_set *derived, ms_errbuf *eb)
{
	ms_part_iter *it = NULL;
	ms_errbuf ieb = { { 0 } };
	core_later d = { .max = b->flush ? b->max : 0 };
	size_t cap = d.max; /* of ord and left */
	/* With the default window and a decompression context made at the
	 * first decode: a part whose blocks are all known decodes none. */
	int rc = ms_part_iter_open_window(&it, p, NULL, NULL, 0, &ieb);
	if (rc)
		return fail_of_part(eb, rc, id, ieb.msg);
	if (cap) {
		d.ord = ms_mem_calloc(NULL, cap, sizeof(*d.ord));
		d.left = ms_mem_calloc(NULL, cap, sizeof(*d.left));
		if (!d.ord || !d.left)
			d.max = 0; /* every block answered at once */
	}
	uint8_t prev[MS_TRACE_ID_MAX];
	uint32_t prev_len = 0;
	uint64_t prev_span = 0, rows = 0, at = 0;
	bool first = true;
	const ms_block_info *bi;
	while ((rc = ms_part_iter_next(it, &bi, &ieb)) == 1) {
		if (!first) {
			int c = ms_trace_id_cmp(prev, prev_len, bi->trace_id,
			                        bi->trace_id_len);
			if (c > 0 ||
			    (c == 0 && prev_span < MS_BLOCK_SPLIT_BYTES / 2)) {
				char shown[MS_TRACE_ID_SHOW_MAX];
				rc = ms_fail(eb, MS_ERR_CORRUPT,
				             "part %s: trace %s %s", id,
				             ms_trace_id_show(shown, bi->trace_id,
				                              bi->trace_id_len),
				             c > 0 ? "out of order"
				                   : "has two blocks");
				goto out;
			}
		}
		memcpy(prev, bi->trace_id, bi->trace_id_len);
		prev_len = bi->trace_id_len;
		prev_span = bi->span_bytes;
		first = false;
		ms_ledger_set bl;
		bool defer = d.max && d.n < d.max && at <= UINT32_MAX;
		if (!b->take)
			rc = ms_ledger_block_decode(it, bi, &bl, &ieb);
		else if (defer)
			rc = b->take(arg, it, bi, &bl, &ieb);
		else /* no room to defer: answered now */
			rc = (b->decode ? b->decode : b->take)(arg, it, bi, &bl,
			                                       &ieb);
		if (rc < 0)
			break;
		if (rc == MS_BLOCK_LEDGER_LATER && !defer) {
			rc = ms_fail(&ieb, MS_ERR_INVAL,
			             "block %llu deferred past the batch",
			             (unsigned long long)at);
			break;
		}
		if (rc == MS_BLOCK_LEDGER_LATER)
			d.ord[d.n++] = (uint32_t)at;
		else
			ms_ledger_set_add(derived, &bl);
		rows += bi->nrows;
		at++;
		if (d.max && d.n == d.max &&
		    (rc = later_answer(&d, b, arg, it, derived, &ieb)) < 0)
			break;
	}
	if (rc >= 0 && d.n)
		rc = later_answer(&d, b, arg, it, derived, &ieb);
	if (rc < 0)
		rc = fail_of_part(eb, rc, id, ieb.msg);
	else if (rows != ms_part_get_meta(p)->rows)
		rc = ms_fail(eb, MS_ERR_CORRUPT,
		             "part %s: %llu rows in its blocks, %llu in its "
		             "metadata",
		             id, (unsigned long long)rows,
		             (unsigned long long)ms_part_get_meta(p)->rows);
out:
	ms_part_iter_close(d.re);
	ms_part_iter_close(it);
	ms_mem_free(NULL, d.ord, cap * sizeof(*d.ord));
	ms_mem_free(NULL, d.left, cap * sizeof(*d.left));
	return rc < 0 ? rc : 0;
}

int
ms_ledger_check_part(const ms_part *core, const ms_part *lat,
                     const ms_part *st, ms_block_ledger_fn block, void *arg,
                     ms_ledger_set *out, ms_errbuf *eb)
{
	const ms_block_batch one = { .take = block };
	return ms_ledger_check_part_batch(core, lat, st, &one, arg, out, eb);
}

int
ms_ledger_check_part_batch(const ms_part *core, const ms_part *lat,
                           const ms_part *st, const ms_block_batch *block,
                           void *arg, ms_ledger_set *out, ms_errbuf *eb)
{
	char id[17];
	ms_part_id_str(ms_part_get_meta(core)->id, id);
	ms_ledger_set d;
	ms_ledger_set_init(&d);
	int rc = check_core(core, id, block, arg, &d, eb);
	if (rc)
		return rc;
	const ms_part *idx[MS_KIND_COUNT] = { core, lat, st };
	for (int k = MS_KIND_LATENCY; k <= MS_KIND_START_TIME; k++) {
		const char *kn = ms_part_kind_name((enum ms_part_kind)k);
		if (!idx[k])
			return ms_fail(eb, MS_ERR_CORRUPT,
			               "part %s: no %s index part", id, kn);
		ms_ledger l;
		ms_errbuf ieb = { { 0 } };
		if ((rc = ms_ledger_of_part(idx[k], &l, NULL, &ieb)))
			return ms_fail(eb, rc, "part %s: %s index: %s", id, kn,
			               ieb.msg);
		if (!ms_ledger_equal(&l, &d.kind[k])) {
			char a[MS_LEDGER_STR_MAX], b[MS_LEDGER_STR_MAX];
			return ms_fail(eb, MS_ERR_CORRUPT,
			               "part %s: %s index ledger %s, its core "
			               "rows make %s",
			               id, kn, ms_ledger_format(&l, a),
			               ms_ledger_format(&d.kind[k], b));
		}
	}
	*out = d;
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
