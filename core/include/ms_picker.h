/*
 * ms_picker.h - the size-based merge picker and the selection fingerprint.
 *
 * The picker is the production policy, unchanged: among the candidate parts
 * it looks for the run of 8..15 size-neighbours whose merged size is the
 * largest multiple of its biggest input, and proposes it only when that
 * multiple reaches max(maxParts / 2, multiplier) = 7.5 with the defaults.
 * It is pure: no I/O, no clock, no shared state; the same candidates always
 * give the same selection.
 *
 * Algorithm (DESIGN §2 "The picker"):
 *   n < 2                               -> nothing
 *   drop candidates with size > (uint64)(max_fan_out / multiplier), and
 *   candidates of size 0 (a part with rows has bytes; a zero size would
 *   make the multiple undefined)
 *   sort by size ascending, then min_ts descending (newer first), then
 *   part ID ascending (full ties: equal size and equal min_ts)
 *   maxSrc = min(maxParts, n); minSrc = max((maxSrc + 1) / 2, 2)
 *   for win = minSrc..maxSrc, for j = 0..n-win, a = sorted[j .. j+win-1]:
 *     skip if a[0].size * win < a[last].size          (unbalanced)
 *     out = sum of sizes; if out > max_fan_out: end this j loop (break)
 *     m = (double)out / a[last].size; skip if m < best m
 *     best = a (equal m replaces: the later window wins)
 *   nothing if best m < max((double)maxParts / 2, multiplier)
 * Products, sums and the size cap max_fan_out / multiplier saturate at
 * UINT64_MAX instead of wrapping: the cap reaches it with an unbounded
 * fan-out (UINT64_MAX) and a multiplier of 1 or less; the others cannot
 * with real part sizes.
 *
 * Candidates (DESIGN §2 "The picker" and "Finalize"), ms_pick_candidates:
 * the core parts of a pinned view with rows >= 1 that the caller does not
 * exclude (the engine: claimed by a listed merge or quarantined; a frozen
 * shard's re-pick: those recorded as claimed, quarantined or unseen), in
 * view order (ascending ID); a finalize keeps only the mature ones
 * (max_ts <= frontier) and takes them all in the order they entered the
 * inventory (ms_view_entered, the reference's snapshot order), bypassing
 * ms_picker_select.
 *
 * Ownership: inputs are borrowed for the call; the result is caller-owned
 * and holds no pointers.
 */
#ifndef MS_PICKER_H
#define MS_PICKER_H

#include "ms_err.h"
#include "ms_mem.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MS_PICKER_MAX_PARTS 15   /* default window maximum */
#define MS_PICKER_MULTIPLIER 1.7 /* default minMergeMultiplier */
#define MS_PICKER_PARTS_LIMIT 64 /* largest max_parts accepted */

/* One candidate part, as the picker sees it. */
typedef struct ms_pick_cand {
	uint64_t id;
	uint64_t size; /* compressed bytes of the part */
	int64_t min_ts;
	int64_t max_ts;
	uint64_t rows;
	uint32_t depth;
} ms_pick_cand;

/* Zeroed options mean the defaults. */
typedef struct ms_picker_opts {
	uint32_t max_parts; /* 0 = 15; at most MS_PICKER_PARTS_LIMIT */
	double multiplier;  /* 0 = 1.7; must be > 0 */
} ms_picker_opts;

/* A selection: n == 0 means "nothing to merge". */
typedef struct ms_pick {
	size_t n;
	uint64_t ids[MS_PICKER_PARTS_LIMIT]; /* in window (sorted) order */
	size_t idx[MS_PICKER_PARTS_LIMIT];   /* index into the candidates */
	uint64_t out_bytes;                  /* sum of the selected sizes */
	double m;          /* out_bytes / largest selected size */
	double best_m;     /* best m seen, also when it was below required */
	double required_m; /* max(max_parts / 2, multiplier) */
} ms_pick;

/*
 * Run the picker over cands[0..n) with fan-out limit max_fan_out (bytes).
 * Fills *out (n = 0 when nothing qualifies). Scratch memory (n candidates)
 * comes from mem (borrowed, may be NULL). Returns 0, MS_ERR_INVAL for bad
 * options, or MS_ERR_NOMEM; *out is then empty.
 */
int ms_picker_select(const ms_picker_opts *opts, const ms_pick_cand *cands,
                     size_t n, uint64_t max_fan_out, ms_mem *mem, ms_pick *out,
                     ms_errbuf *eb);

struct ms_view;

/* Whether part id is no candidate for a reason the view does not hold
 * (claimed, quarantined, unseen); arg is the caller's. */
typedef bool ms_pick_excluded_fn(const void *arg, uint64_t id);

/* What a pick may take besides "rows >= 1"; zeroed: every such part. */
typedef struct ms_pick_scope {
	bool finalize;        /* only parts with max_ts <= frontier_ns */
	int64_t frontier_ns;  /* the maturity frontier (ms_clock_frontier) */
	ms_pick_excluded_fn *excluded; /* NULL: nothing excluded */
	const void *arg;               /* passed to excluded */
} ms_pick_scope;

/*
 * The candidates of view v (borrowed) under scope s, in view order (a
 * finalize's: in entry order, ms_view_entered):
 * cands[k] describes the k-th candidate's core part and vidx[k] is its
 * index in v; either array may be NULL (not wanted), else it has room for
 * ms_view_count(v) entries (caller-owned). Returns the number of
 * candidates. A finalize's selection is every candidate, in this order.
 */
size_t ms_pick_candidates(const struct ms_view *v, const ms_pick_scope *s,
                          ms_pick_cand *cands, size_t *vidx);

/*
 * Selection fingerprint: an order-sensitive XXH3-64 chain over selected ID
 * sets. Start from 0; for each selection in dispatch order,
 *   fp = XXH3_64bits_withSeed(LE64(n) || LE64(id[0]) || ... ||
 *                             LE64(id[n-1]), fp)
 * with the IDs in selection (window) order. Identical sequences of
 * selections give identical fingerprints.
 */
uint64_t ms_pick_fp_add(uint64_t fp, const uint64_t *ids, size_t n);

#endif
