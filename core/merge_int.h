/*
 * merge_int.h - the merge's test hooks, private to core: tests reach a
 * merge's stages through them, directly (ms__merge_execute_hooked) or
 * through an engine (ms__engine_open_hooked). Nothing in production sets
 * them; the public option structs (ms_merge_req, ms_engine_opts) carry no
 * test field. Included by merge.c, engine.c and the tests that need it.
 */
#ifndef MS_MERGE_INT_H
#define MS_MERGE_INT_H

#include "ms_engine.h"
#include "ms_merge.h"

/*
 * Test hooks (NULL in production). `stage` is called at the start of every
 * stage on the merging thread, and additionally once per input block read
 * (stage MS_MERGE_STAGE_READ, `detail` = blocks read so far) and once per
 * output block written (MS_MERGE_STAGE_WRITE). Returning a negative ms_err
 * fails the merge there, exactly as a real error would (message says
 * "injected"). It may block (a slow merge for dispatcher tests) — the merge
 * holds no shard lock while calling it.
 * fail_alloc_at (> 0) makes the merge's own allocator fail its Nth
 * allocation (and every later one with fail_alloc_every).
 */
typedef struct ms_merge_hooks {
	int (*stage)(void *arg, const struct ms_merge_req *req,
	             enum ms_merge_stage st, uint64_t detail);
	void *arg;
	uint64_t fail_alloc_at;
	bool fail_alloc_every;
	/* Break what a sampling merge hands to the chain, so that the
	 * checks behind ms_merge_sampling.decide_dup_traces and
	 * bounds_mismatch can be seen to fail: every batch handed to the
	 * chain twice; every batch entry's max_end_ns shifted by this. And
	 * hot_decided: the frontier the trace policy's hot test compares
	 * with shifted by this (the check's frontier stays). */
	bool stage_decide_twice;
	int64_t stage_bounds_skew_ns;
	int64_t stage_frontier_skew_ns;
	/* Each sampling merge reports one call of its first link fewer than
	 * the chain made (ms_merge_sampling.link_calls), so that
	 * plugin_health can be seen to compare the two. */
	bool lose_link_call;
	/* Called (with arg) once the guard has revalidated a dropping merge
	 * against the inventory, just before it publishes: a part
	 * introduced here appears between the two. NULL = none. */
	void (*revalidated)(void *arg);
	/* Engine only: called (with arg, the engine's lock held) when a
	 * worker finds a queued merge of its lanes that it may not start
	 * because as many merges as the limit allows are running. NULL =
	 * none. */
	void (*capped)(void *arg);
} ms_merge_hooks;

/* ms_merge_execute and ms_merge_finalize with test hooks (NULL: none,
 * exactly the public functions). hooks is borrowed for the call. */
int ms__merge_execute_hooked(const ms_merge_req *req,
                             const ms_merge_hooks *hooks, ms_merge_result *res,
                             ms_errbuf *eb);
int ms__merge_finalize_hooked(const ms_merge_req *req,
                              const ms_merge_hooks *hooks, ms_merge_result *res,
                              ms_errbuf *eb);

/* ms_engine_open whose every merge runs with hooks (borrowed; must outlive
 * the engine). NULL: exactly ms_engine_open. */
int ms__engine_open_hooked(ms_engine **out, const ms_engine_opts *opts,
                           const ms_merge_hooks *hooks, ms_errbuf *eb);

#endif
