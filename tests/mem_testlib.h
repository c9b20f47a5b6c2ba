/*
 * mem_testlib.h - shared by the tests that account memory through an
 * ms_mem: the check that nothing is left allocated, and a sweep that
 * fails each allocation of a call in turn. Include after <cmocka.h>.
 */
#ifndef MS_MEM_TESTLIB_H
#define MS_MEM_TESTLIB_H

#include "ms_err.h"
#include "ms_mem.h"

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

/* Calls call(ctx, mem, eb) with a fresh mem whose first allocation
 * fails, then its second, and so on until a call meets no failure, which
 * must succeed. call must free whatever it got before returning; nothing
 * may be left in mem either way. Each call that fails must return
 * MS_ERR_NOMEM with a message that starts with `prefix` (the part that
 * failed), says "out of memory for" something and how many bytes
 * (" bytes)"). A call that copes with the failure may succeed. Returns
 * how many calls failed. */
static inline unsigned
tl_mem_sweep(int (*call)(void *ctx, ms_mem *mem, ms_errbuf *eb), void *ctx,
             const char *prefix)
{
	const char *want = ": out of memory for ";
	unsigned failed = 0;
	for (uint64_t n = 1;; n++) {
		ms_mem mem;
		ms_mem_init(&mem, NULL);
		ms_mem_fail_at(&mem, n, false);
		ms_errbuf eb = { "" };
		int rc = call(ctx, &mem, &eb);
		ms_mem_stats st;
		ms_mem_stats_get(&mem, &st);
		if (st.live != 0)
			fail_msg("allocation %llu failed: %lld bytes left "
			         "(\"%s\")",
			         (unsigned long long)n, (long long)st.live,
			         eb.msg);
		if (st.failed == 0) {
			if (rc != 0)
				fail_msg("no allocation failed, yet: %s",
				         eb.msg);
			return failed;
		}
		if (rc == 0)
			continue;
		failed++;
		if (rc != MS_ERR_NOMEM ||
		    strncmp(eb.msg, prefix, strlen(prefix)) != 0 ||
		    !strstr(eb.msg, want) || !strstr(eb.msg, " bytes)"))
			fail_msg("allocation %llu failed: %d \"%s\"; "
			         "expected \"%s...%s... (N bytes)\"",
			         (unsigned long long)n, rc, eb.msg, prefix,
			         want);
	}
}

#endif
