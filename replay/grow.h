/*
 * grow.h - the replay layer's growable arrays: room for more elements,
 * the capacity doubling; and the note of an allocation that failed (what
 * it was for, how many bytes), kept by code that cannot write the
 * message itself (a walk's callback) for the caller that does.
 */
#ifndef MS_REPLAY_GROW_H
#define MS_REPLAY_GROW_H

#include "ms_err.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An allocation that failed: what for ("the merges", static text; NULL
 * while none failed) and the bytes it asked (0: more than a size_t
 * holds). */
typedef struct ms__oom {
	const char *what;
	size_t bytes;
} ms__oom;

/* Note in oom (if non-NULL) that the allocation of `bytes` for `what`
 * failed; returns MS_ERR_NOMEM, for `return ms__oom_note(...)`. */
static inline int
ms__oom_note(ms__oom *oom, const char *what, size_t bytes)
{
	if (oom) {
		oom->what = what;
		oom->bytes = bytes;
	}
	return MS_ERR_NOMEM;
}

/* MS_ERR_NOMEM, with eb reading "<prefix>: out of memory for <what>
 * (<bytes> bytes)", the prefix formatted from fmt. */
static inline int ms__oom_fail(ms_errbuf *eb, const ms__oom *oom,
                               const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static inline int
ms__oom_fail(ms_errbuf *eb, const ms__oom *oom, const char *fmt, ...)
{
	char prefix[sizeof(eb->msg)];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	const char *what = oom->what ? oom->what : "an allocation";
	if (oom->bytes)
		return ms_fail(eb, MS_ERR_NOMEM,
		               "%s: out of memory for %s (%zu bytes)", prefix,
		               what, oom->bytes);
	return ms_fail(eb, MS_ERR_NOMEM,
	               "%s: out of memory for %s (more than the address "
	               "space)",
	               prefix, what);
}

/* Make room for `need` elements of `size` bytes in the array whose
 * pointer (any object pointer, the memory realloc's) is at pv and whose
 * capacity is *cap: the capacity doubles, from `first`, until it holds
 * need. 0, or MS_ERR_NOMEM with the array and *cap as they were and, in
 * oom (if non-NULL), `what` and the bytes asked. */
static inline int
ms__grow_for(void *pv, size_t *cap, size_t need, size_t size, size_t first,
             ms__oom *oom, const char *what)
{
	if (need <= *cap)
		return 0;
	size_t nc = *cap ? *cap : first;
	while (nc < need) {
		if (nc > SIZE_MAX / 2)
			return ms__oom_note(oom, what, 0);
		nc *= 2;
	}
	if (nc > SIZE_MAX / size)
		return ms__oom_note(oom, what, 0);
	void *old;
	memcpy(&old, pv, sizeof(old));
	void *nv = realloc(old, nc * size);
	if (!nv)
		return ms__oom_note(oom, what, nc * size);
	memcpy(pv, &nv, sizeof(nv));
	*cap = nc;
	return 0;
}

/* ms__grow_for without a note. */
static inline int
ms__grow(void *pv, size_t *cap, size_t need, size_t size, size_t first)
{
	return ms__grow_for(pv, cap, need, size, first, NULL, NULL);
}

/* ms__grow_for for two arrays of one capacity *cap (elements of size1
 * and size2 bytes): both hold need after 0; on MS_ERR_NOMEM *cap is as
 * it was (the first array may have grown alone, which costs nothing). */
static inline int
ms__grow2_for(void *pv1, size_t size1, void *pv2, size_t size2, size_t *cap,
              size_t need, size_t first, ms__oom *oom, const char *what)
{
	size_t cap1 = *cap;
	int rc = ms__grow_for(pv1, &cap1, need, size1, first, oom, what);
	return rc ? rc : ms__grow_for(pv2, cap, need, size2, first, oom, what);
}

/* ms__grow for array `arr` (an lvalue pointer) and its size_t `cap`. */
#define MS__GROW(arr, cap, need, first)                                        \
	ms__grow(&(arr), &(cap), (need), sizeof(*(arr)), (first))
/* The same, noting a failure in the ms__oom at oom. */
#define MS__GROW_FOR(arr, cap, need, first, oom, what)                         \
	ms__grow_for(&(arr), &(cap), (need), sizeof(*(arr)), (first), (oom),   \
	             (what))
/* ms__grow2_for without a note. */
#define MS__GROW2(a, b, cap, need, first)                                      \
	MS__GROW2_FOR(a, b, cap, need, first, NULL, NULL)
/* ms__grow2_for for arrays `a` and `b` and their one size_t `cap`. */
#define MS__GROW2_FOR(a, b, cap, need, first, oom, what)                       \
	ms__grow2_for(&(a), sizeof(*(a)), &(b), sizeof(*(b)), &(cap), (need),  \
	              (first), (oom), (what))

#endif
