/*
 * staging.c - the staging budget and the adaptive planner, and the names
 * of the staging enums (the grace policy's are sampling.c's). The rule that
 * says whether a merge stages at all is sampling.c's (ms_sampling_predict).
 *
 * Staging is three files, one per job:
 *   staging.c  the budget: three independent limits (the hard ceiling
 *              derived from memory and CPUs, the trace count per batch,
 *              the per-trace oversized cap) and the planner, which picks
 *              a preferred batch size under the hard ceiling from the
 *              inputs' estimate so that large merges are decided in a few
 *              balanced batches instead of one large one;
 *   batch.c    the batch builder: one complete trace at a time into the
 *              read-only, column-oriented batch a plugin sees;
 *   stager.c   the stager: charges each trace, cuts batches between
 *              complete traces, calls the chain and hands every trace
 *              back in order with its outcome.
 * staging_int.h holds what two of them share.
 *
 * Rounding (the planner): planned batches P = ceil(E / W), W = hard / 8,
 * and the preferred limit ceil(E / P), both rounded up in integers. The
 * public engine rounds P to the nearest integer instead (halves up) and
 * the limit up. Both give the reference figures: with W = 33,554,432 the
 * estimates 85,716,327 (2.55 W) and 190,169,855 (5.67 W) give 3 x
 * 28,572,109 and 6 x 31,694,976 (tests/test_staging.c). They differ when
 * E / W has a fraction below one half: 1.4 W is one batch of 1.4 W to
 * the public engine, two of 0.7 W here. DESIGN.md's ceil is kept: no
 * planned batch passes the nominal window (the preferred limit is at
 * most W, so the batches of one merge stay within the retention the
 * builder's reuse allows, 2 x preferred); the cost is at most one more
 * Decide call. Two more rules of the public engine are not taken, for
 * the same reason (DESIGN.md states W = hard / 8): its W is at least
 * 32 MiB (twice its 16 MiB arena pool) and at most the hard ceiling,
 * and it never prefers less than min(16 MiB, hard), so an estimate of
 * 0 gives W there and the hard ceiling here. At 256 MiB the windows
 * agree; below it ours is smaller. test_staging.c holds its vectors.
 * The hard ceiling's upper bound, and its value without a memory limit
 * (0), is the fast/slow lane threshold, ms_lane_threshold (lane.c).
 */
#include "ms_engine.h"
#include "ms_enum.h"
#include "ms_pipeline.h"
#include "pipeline_int.h"
#include "staging_int.h"

#include <string.h>

/* ------------------------------------------------------------------ */
/* Names                                                               */

static const char *const flush_reason_names[] = {
	[MS_FLUSH_BYTES] = "bytes",
	[MS_FLUSH_TRACES] = "traces",
	[MS_FLUSH_OVERSIZED] = "oversized",
	[MS_FLUSH_FINAL] = "final",
};

const char *
ms_flush_reason_name(enum ms_flush_reason r)
{
	return MS_ENUM_NAME(flush_reason_names, r, "unknown");
}

static const char *const trace_outcome_names[] = {
	[MS_TRACE_KEPT] = "kept",         [MS_TRACE_DROPPED] = "dropped",
	[MS_TRACE_DEFERRED] = "deferred", [MS_TRACE_OVERSIZED] = "oversized",
	[MS_TRACE_HOT] = "hot",
};

const char *
ms_trace_outcome_name(enum ms_trace_outcome o)
{
	return MS_ENUM_NAME(trace_outcome_names, o, "unknown");
}

/* ------------------------------------------------------------------ */
/* Budget and planner                                                  */

uint64_t
ms_staging_hard_ceiling(uint64_t mem, unsigned cpus)
{
	/* The upper bound, and the ceiling with no limit known, is the
	 * lane threshold: the public engine's one small-merge threshold. */
	uint64_t hi = ms_lane_threshold(mem);
	if (mem == 0)
		return hi;
	if (cpus == 0)
		cpus = 1;
	uint64_t v = mem / (4ull * cpus);
	if (v < MS_STAGE_MIN_HARD)
		v = MS_STAGE_MIN_HARD;
	if (v > hi)
		v = hi;
	return v;
}

uint64_t
ms_stage_estimate(const ms_part_meta *inputs, size_t n)
{
	uint64_t comp = 0, unc = 0, blocks = 0;
	for (size_t i = 0; i < n; i++) {
		comp += inputs[i].compressed_bytes;
		unc += inputs[i].uncompressed_bytes;
		blocks += inputs[i].blocks;
	}
	return ms_stage_estimate_totals(comp, unc, blocks);
}

uint64_t
ms_stage_estimate_totals(uint64_t compressed, uint64_t uncompressed,
                         uint64_t blocks)
{
	return (compressed > uncompressed ? compressed : uncompressed) +
	       blocks * MS_STAGE_BLOCK_ESTIMATE;
}

/* ms_stage_plan_make's trace cap: a batch of traces charged at least
 * their fixed part (stager.c) holds no more than preferred / that. */
void
ms_stage_plan_make(ms_stage_plan *out, uint64_t hard, uint64_t estimate)
{
	memset(out, 0, sizeof(*out));
	if (hard == 0)
		hard = MS_STAGE_MIN_HARD;
	out->hard = hard;
	out->estimate = estimate;
	out->window = hard / 8 ? hard / 8 : 1;
	if (estimate == 0) {
		out->planned = 1;
		out->preferred = hard;
	} else {
		out->planned = (estimate + out->window - 1) / out->window;
		if (out->planned == 0)
			out->planned = 1;
		out->preferred = (estimate + out->planned - 1) / out->planned;
		if (out->preferred > hard)
			out->preferred = hard;
	}
	uint64_t by_bytes = out->preferred / (MS__TRACE_FIXED + 1);
	if (by_bytes == 0)
		by_bytes = 1;
	out->trace_cap =
	        by_bytes < MS_STAGE_MAX_TRACES ? by_bytes : MS_STAGE_MAX_TRACES;
	out->oversized_cap = hard;
}
