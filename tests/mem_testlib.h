/*
 * mem_testlib.h - shared by the tests that account memory through an
 * ms_mem: the check that nothing is left allocated, and a sweep that
 * fails each allocation of a call in turn. Include after <cmocka.h>.
 */
#ifndef MS_MEM_TESTLIB_H
#define MS_MEM_TESTLIB_H

#include "ms_err.h"
#include "ms_mem.h"
#include "sweep_testlib.h"

#include <stdint.h>
#include <string.h>

/* Fails the test unless every byte allocated through m was freed. */
static inline void
tl_assert_no_live(const ms_mem *m)
{
	ms_mem_stats st;
	ms_mem_stats_get(m, &st);
	assert_int_equal(st.live, 0);
}

/* tl_mem_sweep's call and its argument. */
typedef struct tl_mem_call {
	int (*call)(void *ctx, ms_mem *mem, ms_errbuf *eb);
	void *ctx;
} tl_mem_call;

/* A tl_sweep step: the call with a fresh mem whose allocation n + 1
 * fails, which must leave nothing allocated in it. */
static inline int
tl_mem_step(void *ctx, uint64_t n, ms_errbuf *eb, bool *fired)
{
	const tl_mem_call *c = ctx;
	ms_mem mem;
	ms_mem_init(&mem, NULL);
	ms_mem_fail_at(&mem, n + 1, false);
	int rc = c->call(c->ctx, &mem, eb);
	ms_mem_stats st;
	ms_mem_stats_get(&mem, &st);
	if (st.live != 0)
		fail_msg("allocation %llu failed: %lld bytes left (\"%s\")",
		         (unsigned long long)n + 1, (long long)st.live,
		         eb->msg);
	*fired = st.failed != 0;
	return rc;
}

/* Calls call(ctx, mem, eb) with a fresh mem whose first allocation
 * fails, then its second, and so on until a call meets no failure, which
 * must succeed (tl_sweep). call must free whatever it got before
 * returning; nothing may be left in mem either way. Each call that fails
 * must return MS_ERR_NOMEM with a message that starts with `prefix` (the
 * part that failed), says "out of memory for" something and how many
 * bytes (" bytes)"). A call that copes with the failure may succeed.
 * Returns how many calls failed. */
static inline unsigned
tl_mem_sweep(int (*call)(void *ctx, ms_mem *mem, ms_errbuf *eb), void *ctx,
             const char *prefix)
{
	tl_mem_call c = { call, ctx };
	tl_sweep_want w = { prefix, true, true };
	return tl_sweep(tl_mem_step, &c, &w);
}

#endif
