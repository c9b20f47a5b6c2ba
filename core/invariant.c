/*
 * invariant.c - the failure path of MS_INVARIANT (ms_invariant.h): a bug
 * in core found by a debug build's invariant check.
 */
#include "ms_invariant.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void
ms__invariant_failed(const char *file, int line, const char *cond,
                     const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "%s:%d: invariant failed: %s: ", file, line, cond);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}
