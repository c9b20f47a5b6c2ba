/*
 * picker.c - the size-based merge picker, its candidate rule and the
 * selection fingerprint declared in ms_picker.h. Pure computation: the
 * engine (and a frozen shard's re-pick in replay/) takes the candidates of
 * a pinned view with ms_pick_candidates and calls ms_picker_select, the
 * engine under its own lock.
 */
#include "ms_picker.h"
#include "ms_clock.h"
#include "ms_part.h"
#include "ms_shard.h"

#include <stdlib.h>
#include <string.h>

#define XXH_STATIC_LINKING_ONLY
#include <xxhash.h>

typedef struct pick_ent {
	uint64_t id;
	uint64_t size;
	int64_t min_ts;
	size_t idx;
} pick_ent;

/* Size ascending, then min_ts descending (newer first), then ID ascending. */
static int
pick_ent_cmp(const void *pa, const void *pb)
{
	const pick_ent *a = pa, *b = pb;

	if (a->size != b->size)
		return a->size < b->size ? -1 : 1;
	if (a->min_ts != b->min_ts)
		return a->min_ts > b->min_ts ? -1 : 1;
	if (a->id != b->id)
		return a->id < b->id ? -1 : 1;
	return 0;
}

static uint64_t
sat_mul(uint64_t a, uint64_t b)
{
	if (a != 0 && b > UINT64_MAX / a)
		return UINT64_MAX;
	return a * b;
}

static uint64_t
sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* fan / mult as an integer, saturating at UINT64_MAX: with an unbounded
 * fan-out and a multiplier of 1 or less the quotient is 2^64 or more,
 * which no uint64_t holds (converting it is undefined; on x86-64 it gave
 * 0, so every candidate was dropped). */
static uint64_t
sat_div_mult(uint64_t fan, double mult)
{
	double q = (double)fan / mult;
	/* 0x1p64 is the first double past UINT64_MAX. */
	return q >= 0x1p64 ? UINT64_MAX : (uint64_t)q;
}

int
ms_picker_select(const ms_picker_opts *opts, const ms_pick_cand *cands,
                 size_t n, uint64_t max_fan_out, ms_mem *mem, ms_pick *out,
                 ms_errbuf *eb)
{
	uint32_t max_parts = MS_PICKER_MAX_PARTS;
	double mult = MS_PICKER_MULTIPLIER;

	memset(out, 0, sizeof(*out));
	if (opts && opts->max_parts)
		max_parts = opts->max_parts;
	if (opts && opts->multiplier != 0)
		mult = opts->multiplier;
	if (max_parts < 2 || max_parts > MS_PICKER_PARTS_LIMIT)
		return ms_fail(eb, MS_ERR_INVAL,
		               "picker: max_parts %u outside 2..%d", max_parts,
		               MS_PICKER_PARTS_LIMIT);
	if (!(mult > 0))
		return ms_fail(eb, MS_ERR_INVAL,
		               "picker: multiplier must be > 0");
	out->required_m = (double)max_parts / 2.0;
	if (out->required_m < mult)
		out->required_m = mult;
	if (n < 2)
		return 0;

	size_t bytes;
	if (!ms_mul_ok(n, sizeof(pick_ent), &bytes))
		return ms_fail(eb, MS_ERR_RANGE, "picker: %zu candidates", n);
	pick_ent *ents = ms_mem_alloc(mem, bytes);
	if (!ents)
		return ms_fail(eb, MS_ERR_NOMEM,
		               "picker: scratch for %zu candidates", n);

	uint64_t max_in = sat_div_mult(max_fan_out, mult);
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (cands[i].size > max_in || cands[i].size == 0)
			continue;
		ents[k].id = cands[i].id;
		ents[k].size = cands[i].size;
		ents[k].min_ts = cands[i].min_ts;
		ents[k].idx = i;
		k++;
	}
	qsort(ents, k, sizeof(*ents), pick_ent_cmp);

	size_t max_src = k < max_parts ? k : max_parts;
	size_t min_src = (max_src + 1) / 2;
	if (min_src < 2)
		min_src = 2;
	double max_m = 0;
	size_t best_j = 0, best_win = 0;
	uint64_t best_out = 0;
	for (size_t win = min_src; win <= max_src; win++) {
		for (size_t j = 0; j + win <= k; j++) {
			const pick_ent *a = ents + j;
			uint64_t last = a[win - 1].size;
			if (sat_mul(a[0].size, win) < last)
				continue;
			uint64_t sum = 0;
			for (size_t t = 0; t < win; t++)
				sum = sat_add(sum, a[t].size);
			if (sum > max_fan_out)
				break;
			double m = (double)sum / (double)last;
			if (m < max_m)
				continue;
			max_m = m;
			best_j = j;
			best_win = win;
			best_out = sum;
		}
	}
	out->best_m = max_m;
	if (best_win > 0 && max_m >= out->required_m) {
		out->n = best_win;
		out->out_bytes = best_out;
		out->m = max_m;
		for (size_t t = 0; t < best_win; t++) {
			out->ids[t] = ents[best_j + t].id;
			out->idx[t] = ents[best_j + t].idx;
		}
	}
	ms_mem_free(mem, ents, bytes);
	return 0;
}

uint64_t
ms_pick_fp_add(uint64_t fp, const uint64_t *ids, size_t n)
{
	uint8_t buf[8 * (MS_PICKER_PARTS_LIMIT + 1)];
	XXH3_state_t st;

	/* Stream in chunks so any n works without allocating. The reset
	 * with a seed compares the state's old seed and secret with the new
	 * ones before it writes them: zero the state so it never reads
	 * (and, when the garbage matches, keeps) stack bytes. */
	memset(&st, 0, sizeof(st));
	XXH3_64bits_reset_withSeed(&st, fp);
	ms_put_le64(buf, (uint64_t)n);
	XXH3_64bits_update(&st, buf, 8);
	for (size_t i = 0; i < n;) {
		size_t c = 0;
		while (i < n && c < MS_PICKER_PARTS_LIMIT)
			ms_put_le64(buf + 8 * c++, ids[i++]);
		XXH3_64bits_update(&st, buf, 8 * c);
	}
	return XXH3_64bits_digest(&st);
}

/* Whether the part pm of a view is a candidate under s. */
static bool
is_candidate(const ms_part_meta *pm, const ms_pick_scope *s)
{
	if (pm->rows < 1)
		return false;
	if (s->finalize && !ms_ts_mature(pm->max_ts, s->frontier_ns))
		return false;
	return !s->excluded || !s->excluded(s->arg, pm->id);
}

size_t
ms_pick_candidates(const ms_view *v, const ms_pick_scope *s,
                   ms_pick_cand *cands, size_t *vidx)
{
	size_t nv = ms_view_count(v), nc = 0;

	for (size_t k = 0; k < nv; k++) {
		size_t i = s->finalize ? ms_view_entered(v, k) : k;
		const ms_part_meta *pm =
		        ms_part_get_meta(ms_view_part(v, i, MS_KIND_CORE));
		if (!is_candidate(pm, s))
			continue;
		if (cands)
			cands[nc] =
			        (ms_pick_cand){ .id = pm->id,
				                .size = pm->compressed_bytes,
				                .min_ts = pm->min_ts,
				                .max_ts = pm->max_ts,
				                .rows = pm->rows,
				                .depth = pm->depth };
		if (vidx)
			vidx[nc] = i;
		nc++;
	}
	return nc;
}
