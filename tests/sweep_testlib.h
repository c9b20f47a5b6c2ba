/*
 * sweep_testlib.h - the loop of an allocation sweep, shared by the sweep
 * over an ms_mem (tl_mem_sweep, mem_testlib.h) and the one over the
 * malloc wrappers (tl_alloc_sweep, alloc_testlib.h): a call is run with
 * its first allocation failing, then its second, and so on until a run
 * meets no failure, which must succeed; each run that fails must fail
 * out of memory saying what for. The two differ only in how a run's
 * allocation is made to fail, which a step function does. Include after
 * <cmocka.h>.
 */
#ifndef MS_SWEEP_TESTLIB_H
#define MS_SWEEP_TESTLIB_H

#include "ms_err.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* Runs the call under test with its allocation n (0: the first) made to
 * fail, and checks what a run must leave behind; *fired: whether an
 * allocation was failed. Returns the call's result. */
typedef int (*tl_sweep_step)(void *ctx, uint64_t n, ms_errbuf *eb, bool *fired);

/* What the message of a run that fails must say. */
typedef struct tl_sweep_want {
	const char *name; /* the part that failed */
	bool at_start;    /* name starts the message (else anywhere) */
	bool bytes;       /* it ends in how many bytes: "(N bytes)" */
} tl_sweep_want;

/* The loop described above over step(ctx, n, ...). A run that copes with
 * its failure may succeed. Returns how many runs failed. */
static inline unsigned
tl_sweep(tl_sweep_step step, void *ctx, const tl_sweep_want *w)
{
	const char *oom = ": out of memory for ";
	unsigned failed = 0;
	for (uint64_t n = 0;; n++) {
		ms_errbuf eb = { "" };
		bool fired = false;
		int rc = step(ctx, n, &eb, &fired);
		if (!fired) {
			if (rc != 0)
				fail_msg("no allocation failed, yet: %s",
				         eb.msg);
			return failed;
		}
		if (rc == 0)
			continue;
		failed++;
		const char *at = strstr(eb.msg, w->name);
		if (rc != MS_ERR_NOMEM || !at ||
		    (w->at_start && at != eb.msg) || !strstr(eb.msg, oom) ||
		    (w->bytes && !strstr(eb.msg, " bytes)")))
			fail_msg("allocation %llu failed: %d \"%s\"; expected "
			         "\"%s%s...%s...%s\"",
			         (unsigned long long)n + 1, rc, eb.msg,
			         w->at_start ? "" : "...", w->name, oom,
			         w->bytes ? " (N bytes)" : "");
	}
}

#endif
