/*
 * guard.c - the fragment guard: one job, deciding whether a proposed drop
 * may stand. The drop set it fills is dropset.c.
 *
 * A sampler sees a complete trace only as far as the merge's inputs hold
 * it; fragments of the same trace may sit in active parts outside the
 * selection. Dropping the trace's rows here while a fragment survives
 * elsewhere would leave a partial trace. The guard therefore lets a
 * proposed drop stand only when every outside part whose time range comes
 * within the merge grace of the trace says, through its Bloom filter, that
 * the ID is certainly absent. A Bloom "maybe" never authorises anything:
 * it defers (keeps) the trace. Confirmed drops go to the drop set, an exact
 * structure that index pruning consults.
 *
 * Design:
 *  1. The outside parts are copied at open and never change; their probe
 *     contexts are borrowed (the caller pins them).
 *  2. probes <= probe_budget and confirmed <= drop_budget at every moment;
 *     a check that would pass a budget defers.
 *  3. A check confirms only if the trace, widened by the grace on both
 *     sides, lies inside the segment given by ms_guard_set_coverage (none
 *     given: nothing confirms), and every intersecting part was probed
 *     and answered "absent"; a part without a filter defers.
 */
#include "ms_clock.h"
#include "ms_enum.h"
#include "pipeline_int.h"

#include <xxhash.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Guard                                                               */

struct ms_guard {
	ms_mem *mem;
	ms_guard_part *parts;
	size_t nparts;
	uint64_t *known; /* sorted IDs of parts, for revalidation */
	int64_t grace;
	bool cov_known; /* a segment was given; else nothing confirms */
	int64_t cov_min, cov_max;
	ms_guard_stats st;
};

static const char *const guard_reason_names[MS_GUARD_REASON_COUNT] = {
	[MS_GUARD_CONFIRMED] = "confirmed",
	[MS_GUARD_FILTER_POSITIVE] = "filter_positive",
	[MS_GUARD_NO_FILTER] = "no_filter",
	[MS_GUARD_PROBE_BUDGET] = "probe_budget",
	[MS_GUARD_DROP_BUDGET] = "drop_budget",
	[MS_GUARD_BAD_RANGE] = "bad_range",
	[MS_GUARD_SEGMENT_EDGE] = "segment_edge",
};

const char *
ms_guard_reason_name(enum ms_guard_reason r)
{
	return MS_ENUM_NAME(guard_reason_names, r, "unknown");
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int
ms_guard_open(ms_guard **out, const ms_guard_part *outside, size_t n,
              const ms_guard_opts *opts, ms_errbuf *eb)
{
	static const ms_guard_opts none;
	*out = NULL;
	if (!opts)
		opts = &none;
	if (n && !outside)
		return ms_fail(eb, MS_ERR_INVAL, "guard: parts missing");
	ms_guard *g = ms_mem_calloc(opts->mem, 1, sizeof(*g));
	if (!g)
		return ms_fail(eb, MS_ERR_NOMEM,
		               "guard: out of memory for its state (%zu bytes)",
		               sizeof(*g));
	g->mem = opts->mem;
	g->grace = ms_grace_or_default(opts->grace_ns);
	if (n) {
		g->parts = ms_mem_calloc(g->mem, n, sizeof(*g->parts));
		g->known = ms_mem_calloc(g->mem, n, sizeof(*g->known));
		if (!g->parts || !g->known) {
			bool parts = !g->parts;
			g->nparts = n;
			ms_guard_close(g);
			return ms_fail(
			        eb, MS_ERR_NOMEM,
			        "guard: out of memory for %s of %zu parts "
			        "(%zu bytes)",
			        parts ? "the bounds" : "the sorted IDs", n,
			        n * (parts ? sizeof(*g->parts)
			                   : sizeof(*g->known)));
		}
		memcpy(g->parts, outside, n * sizeof(*outside));
		for (size_t i = 0; i < n; i++)
			g->known[i] = outside[i].id;
		qsort(g->known, n, sizeof(*g->known), cmp_u64);
	}
	g->nparts = n;
	uint64_t budget = opts->hard_ceiling > MS_STAGE_MIN_HARD
	                          ? opts->hard_ceiling
	                          : MS_STAGE_MIN_HARD;
	g->st.budget = budget;
	g->st.probe_budget = budget / 16;
	g->st.drop_budget = budget / 64;
	g->st.outside_parts = n;
	*out = g;
	return 0;
}

void
ms_guard_close(ms_guard *g)
{
	if (!g)
		return;
	ms_mem_free(g->mem, g->parts, g->nparts * sizeof(*g->parts));
	ms_mem_free(g->mem, g->known, g->nparts * sizeof(*g->known));
	ms_mem_free(g->mem, g, sizeof(*g));
}

static bool
intersects(const ms_guard_part *p, int64_t lo, int64_t hi)
{
	return p->min_ts <= hi && p->max_ts >= lo;
}

static bool
defer(ms_guard *g, enum ms_guard_reason r, enum ms_guard_reason *why)
{
	g->st.deferred++;
	g->st.reasons[r]++;
	if (why)
		*why = r;
	return false;
}

void
ms_guard_set_coverage(ms_guard *g, int64_t min_ns, int64_t max_ns)
{
	g->cov_known = true;
	g->cov_min = min_ns;
	g->cov_max = max_ns;
}

bool
ms_guard_check(ms_guard *g, const uint8_t *tid, uint32_t len, int64_t min_ts,
               int64_t max_ts, enum ms_guard_reason *why)
{
	g->st.checks++;
	if (!tid || len == 0 || len > MS_TRACE_ID_MAX || min_ts > max_ts)
		return defer(g, MS_GUARD_BAD_RANGE, why);
	int64_t lo = ms_ts_add(min_ts, -g->grace);
	int64_t hi = ms_ts_add(max_ts, g->grace);
	/* The fragment-gap contract: a trace's fragments lie within the
	 * grace of each other, so one within the grace of the segment's
	 * edge may still have fragments beyond it, where this guard sees no
	 * part: it is retained. Without a segment no trace is known to be
	 * clear of an edge: every one is retained. */
	if (!g->cov_known || lo < g->cov_min || hi > g->cov_max)
		return defer(g, MS_GUARD_SEGMENT_EDGE, why);
	if (g->st.confirmed >= g->st.drop_budget)
		return defer(g, MS_GUARD_DROP_BUDGET, why);
	/* Count first, so a budget overrun defers before any probe. */
	size_t cand = 0;
	for (size_t i = 0; i < g->nparts; i++) {
		if (!intersects(&g->parts[i], lo, hi))
			continue;
		cand++;
		if (!g->parts[i].may_contain) {
			g->st.candidates += cand;
			return defer(g, MS_GUARD_NO_FILTER, why);
		}
	}
	g->st.candidates += cand;
	if (g->st.probes + cand > g->st.probe_budget)
		return defer(g, MS_GUARD_PROBE_BUDGET, why);
	for (size_t i = 0; i < g->nparts; i++) {
		const ms_guard_part *p = &g->parts[i];
		if (!intersects(p, lo, hi))
			continue;
		g->st.probes++;
		if (p->may_contain(p->ctx, tid, len))
			return defer(g, MS_GUARD_FILTER_POSITIVE, why);
	}
	g->st.confirmed++;
	g->st.reasons[MS_GUARD_CONFIRMED]++;
	if (why)
		*why = MS_GUARD_CONFIRMED;
	return true;
}

int
ms_guard_revalidate(ms_guard *g, const ms_guard_part *now, size_t n,
                    const ms_dropset *drops, ms_errbuf *eb)
{
	for (size_t i = 0; i < n; i++) {
		const ms_guard_part *p = &now[i];
		if (g->nparts && bsearch(&p->id, g->known, g->nparts,
		                         sizeof(uint64_t), cmp_u64))
			continue;
		ms_dropset_iter it;
		ms_dropset_iter_init(&it, drops);
		int64_t mn, mx;
		while (ms_dropset_next(&it, &mn, &mx)) {
			const uint8_t *tid = it.tid;
			uint32_t len = it.len;
			if (!intersects(p, ms_ts_add(mn, -g->grace),
			                ms_ts_add(mx, g->grace)))
				continue;
			if (p->may_contain && !p->may_contain(p->ctx, tid, len))
				continue;
			char idhex[17], shown[MS_TRACE_ID_SHOW_MAX];
			ms_part_id_str(p->id, idhex);
			return ms_fail(eb, MS_ERR_CONFLICT,
			               "guard: part %s appeared during the "
			               "merge and may hold dropped trace "
			               "%s; redo the merge losslessly",
			               idhex, ms_trace_id_show(shown, tid, len));
		}
	}
	return 0;
}

void
ms_guard_stats_get(const ms_guard *g, ms_guard_stats *out)
{
	*out = g->st;
}
