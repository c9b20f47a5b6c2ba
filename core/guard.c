/*
 * guard.c - the fragment guard and the drop set.
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
 * Design (guard):
 *  1. The outside parts are copied at open and never change; their probe
 *     contexts are borrowed (the caller pins them).
 *  2. probes <= probe_budget and confirmed <= drop_budget at every moment;
 *     a check that would pass a budget defers.
 *  3. A check confirms only if every intersecting part was probed and
 *     answered "absent"; a part without a filter defers.
 * Design (drop set):
 *  1. Every ID is recorded at most once, in the order added; entry i never
 *     moves.
 *  2. The slot table is open-addressed with linear probing, at most half
 *     full; a slot holds a 32-bit fingerprint and entry index + 1 (0 =
 *     empty). A fingerprint match is always followed by a full byte
 *     comparison, so a hash collision can never answer "contains".
 */
#include "ms_pipeline.h"
#include "ms_enum.h"

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
	bool cov_known; /* the boundary guard is on */
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
		return ms_fail(eb, MS_ERR_NOMEM, "guard: out of memory");
	g->mem = opts->mem;
	g->grace = opts->grace_ns > 0 ? opts->grace_ns : MS_GRACE_NS;
	if (n) {
		g->parts = ms_mem_calloc(g->mem, n, sizeof(*g->parts));
		g->known = ms_mem_calloc(g->mem, n, sizeof(*g->known));
		if (!g->parts || !g->known) {
			g->nparts = n;
			ms_guard_close(g);
			return ms_fail(eb, MS_ERR_NOMEM,
			               "guard: out of memory for %zu parts", n);
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

static int64_t
sat_add(int64_t a, int64_t b)
{
	if (b > 0 && a > INT64_MAX - b)
		return INT64_MAX;
	if (b < 0 && a < INT64_MIN - b)
		return INT64_MIN;
	return a + b;
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
	int64_t lo = sat_add(min_ts, -g->grace);
	int64_t hi = sat_add(max_ts, g->grace);
	/* The fragment-gap contract: a trace's fragments lie within the
	 * grace of each other, so one within the grace of the segment's
	 * edge may still have fragments beyond it, where this guard sees no
	 * part: it is retained. */
	if (g->cov_known && (lo < g->cov_min || hi > g->cov_max))
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
	size_t nd = drops ? ms_dropset_count(drops) : 0;
	for (size_t i = 0; i < n; i++) {
		const ms_guard_part *p = &now[i];
		if (g->nparts && bsearch(&p->id, g->known, g->nparts,
		                         sizeof(uint64_t), cmp_u64))
			continue;
		for (size_t k = 0; k < nd; k++) {
			const uint8_t *tid;
			uint32_t len;
			int64_t mn, mx;
			ms_dropset_get(drops, k, &tid, &len, &mn, &mx);
			if (!intersects(p, sat_add(mn, -g->grace),
			                sat_add(mx, g->grace)))
				continue;
			if (p->may_contain && !p->may_contain(p->ctx, tid, len))
				continue;
			char idhex[17];
			ms_part_id_str(p->id, idhex);
			return ms_fail(eb, MS_ERR_CONFLICT,
			               "guard: part %s appeared during the "
			               "merge and may hold dropped trace "
			               "%.*s; redo the merge losslessly",
			               idhex, (int)len, (const char *)tid);
		}
	}
	return 0;
}

void
ms_guard_stats_get(const ms_guard *g, ms_guard_stats *out)
{
	*out = g->st;
}

/* ------------------------------------------------------------------ */
/* Drop set                                                            */

typedef struct drop_entry {
	uint64_t off; /* into ids */
	uint64_t hash;
	int64_t min_ts, max_ts;
	uint32_t len;
} drop_entry;

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
	return e->len == len && memcmp(d->ids.data + e->off, tid, len) == 0;
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
	for (size_t i = 0; i < d->n; i++)
		slot_put(s, ns, entry_at(d, i)->hash, (uint32_t)(i + 1));
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
	drop_entry e = { d->ids.len, d->hash(tid, len, d->hash_ctx), min_ts,
		         max_ts, len };
	int rc = ms_buf_append(&d->ids, tid, len);
	if (!rc)
		rc = ms_buf_append(&d->entries, &e, sizeof(e));
	if (rc) {
		d->ids.len = e.off;
		return ms_fail(eb, rc, "drop set: out of memory");
	}
	slot_put(d->slots, d->nslots, e.hash, (uint32_t)(d->n + 1));
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
	*tid = d->ids.data + e->off;
	*len = e->len;
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
