/*
 * lane.c - the lanes of ms_engine.h: their names, and the small-merge
 * threshold that splits the fast lane from the slow one.
 *
 * The threshold is also the upper bound of a merge's staging ceiling
 * (ms_staging_hard_ceiling, staging.c) and its value without a memory
 * limit, as in the public engine, where one function serves both: the
 * lane split and the staging budget can never disagree on it.
 */
#include "ms_engine.h"
#include "ms_enum.h"

#define LANE_MIN_THRESHOLD (32ull << 20) /* 32 MiB: the public default */

static const char *const lane_names[MS_LANE_KIND_COUNT] = {
	[MS_LANE_KIND_FAST] = MS_LANE_FAST,
	[MS_LANE_KIND_SLOW] = MS_LANE_SLOW,
	[MS_LANE_KIND_FINALIZE] = MS_LANE_FINALIZE,
};

const char *
ms_lane_name(enum ms_lane_kind k)
{
	return MS_ENUM_NAME(lane_names, k, "?");
}

uint64_t
ms_lane_threshold(uint64_t mem_limit)
{
	uint64_t thr = mem_limit / 16;

	return thr < LANE_MIN_THRESHOLD ? LANE_MIN_THRESHOLD : thr;
}

enum ms_lane_kind
ms_lane_for(uint64_t bytes, uint64_t mem_limit)
{
	return bytes < ms_lane_threshold(mem_limit) ? MS_LANE_KIND_FAST
	                                            : MS_LANE_KIND_SLOW;
}
