/*
 * alloc_testlib.h - failing allocations of the program's own code: the
 * wrappers of malloc, calloc and realloc for a test linked with
 * -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc (ms_alloc_fail_test in
 * tests/CMakeLists.txt). The libraries loaded beside it (libc's own
 * calls, SQLite, zstd) allocate unwrapped. Once armed, the wrappers fail
 * the nth allocation from then on, or the first one of a given size; the
 * sweep below walks a call through every allocation it makes. Include
 * once per test, after <cmocka.h>.
 */
#ifndef MS_ALLOC_TESTLIB_H
#define MS_ALLOC_TESTLIB_H

#include "ms_err.h"
#include "sweep_testlib.h"

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t n);

static struct {
	long nth;         /* allocations to let through before one fails;
	                     -1: none fails */
	size_t fail_size; /* 0, or the size whose first request fails */
	const char *fill; /* after a fail_size failure: the next
	                     allocation comes back holding this, as fresh
	                     heap memory may hold anything */
	bool fired;       /* an allocation was failed since armed */
} tl_alloc = { -1, 0, NULL, false };

/* Whether this request of n bytes is the one to fail. */
static bool
tl_alloc_fails(size_t n)
{
	if (tl_alloc.fail_size && n == tl_alloc.fail_size) {
		tl_alloc.fail_size = 0;
		tl_alloc.fired = true;
		return true;
	}
	if (tl_alloc.nth < 0)
		return false;
	if (tl_alloc.nth-- > 0)
		return false;
	tl_alloc.fired = true;
	return true; /* nth is now -1: this one only */
}

void *
__wrap_malloc(size_t n)
{
	if (tl_alloc_fails(n))
		return NULL;
	void *p = __real_malloc(n);
	if (p && tl_alloc.fill && !tl_alloc.fail_size) {
		size_t len = strlen(tl_alloc.fill) + 1;
		memcpy(p, tl_alloc.fill, len < n ? len : n);
		tl_alloc.fill = NULL;
	}
	return p;
}

void *
__wrap_calloc(size_t n, size_t size)
{
	return tl_alloc_fails(n * size) ? NULL : __real_calloc(n, size);
}

void *
__wrap_realloc(void *p, size_t n)
{
	return tl_alloc_fails(n) ? NULL : __real_realloc(p, n);
}

/* Fail the nth allocation from now (0: the next one), once. */
static inline void
tl_alloc_fail_nth(long nth)
{
	tl_alloc.nth = nth;
	tl_alloc.fired = false;
}

/* Let every allocation through again; whether one was failed. */
static inline bool
tl_alloc_disarm(void)
{
	bool fired = tl_alloc.fired;
	tl_alloc.nth = -1;
	tl_alloc.fail_size = 0;
	tl_alloc.fill = NULL;
	tl_alloc.fired = false;
	return fired;
}

/* tl_alloc_sweep's call and its argument. */
typedef struct tl_alloc_call {
	int (*call)(void *ctx, ms_errbuf *eb);
	void *ctx;
} tl_alloc_call;

/* A tl_sweep step: the call with the nth allocation from now failing. */
static inline int
tl_alloc_step(void *ctx, uint64_t n, ms_errbuf *eb, bool *fired)
{
	const tl_alloc_call *c = ctx;
	tl_alloc_fail_nth((long)n);
	int rc = c->call(c->ctx, eb);
	*fired = tl_alloc_disarm();
	return rc;
}

/* Calls call(ctx, eb) with its first allocation failing, then its
 * second, and so on until a call makes no allocation that fails, which
 * must succeed (tl_sweep). Each call that fails must return MS_ERR_NOMEM
 * with a message that names `name` (the file) and says "out of memory
 * for" something (a call that copes with the failure may succeed).
 * Returns how many calls failed. */
static inline unsigned
tl_alloc_sweep(int (*call)(void *ctx, ms_errbuf *eb), void *ctx,
               const char *name)
{
	tl_alloc_call c = { call, ctx };
	tl_sweep_want w = { name, false, false };
	return tl_sweep(tl_alloc_step, &c, &w);
}

#endif
