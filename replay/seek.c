/*
 * seek.c - run-to targets beyond merges and times: the publication point
 * before a given publication, which the TUI's "one publication back" (`{`)
 * re-runs to. Kept apart from controller.c: it only adds a `once` time
 * breakpoint the controller already knows how to stop at.
 */
#include "replay_int.h"

#include <stdio.h>

int
ms_replay_run_to_pub(ms_replay *r, uint64_t k, ms_errbuf *eb)
{
	size_t n = ms_fixture_nslots(r->fx);
	if (k >= n)
		return ms_fail(eb, MS_ERR_RANGE,
		               "publication %llu: the day has %zu (0..%zu)",
		               (unsigned long long)k, n, n - 1);
	/* The controller stops at the first publication point whose time is
	 * after the target: before slot k when the target is just under its
	 * time (slots sharing one time stop at the first of them). */
	int64_t t = ms_fixture_slot_at(r->fx, k)->pub_ns - 1;
	char spec[32];
	snprintf(spec, sizeof(spec), "go pub %llu", (unsigned long long)k);
	return ms__replay_run_to_abs(r, t, spec, eb);
}
