/*
 * grow.h - the replay layer's growable arrays: room for more elements,
 * the capacity doubling.
 */
#ifndef MS_REPLAY_GROW_H
#define MS_REPLAY_GROW_H

#include "ms_err.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Make room for `need` elements of `size` bytes in the array whose
 * pointer (any object pointer, the memory realloc's) is at pv and whose
 * capacity is *cap: the capacity doubles, from `first`, until it holds
 * need. 0, or MS_ERR_NOMEM with the array and *cap as they were. */
static inline int
ms__grow(void *pv, size_t *cap, size_t need, size_t size, size_t first)
{
	if (need <= *cap)
		return 0;
	size_t nc = *cap ? *cap : first;
	while (nc < need) {
		if (nc > SIZE_MAX / 2)
			return MS_ERR_NOMEM;
		nc *= 2;
	}
	if (nc > SIZE_MAX / size)
		return MS_ERR_NOMEM;
	void *old;
	memcpy(&old, pv, sizeof(old));
	void *nv = realloc(old, nc * size);
	if (!nv)
		return MS_ERR_NOMEM;
	memcpy(pv, &nv, sizeof(nv));
	*cap = nc;
	return 0;
}

/* ms__grow for two arrays of one capacity *cap (elements of size1 and
 * size2 bytes): both hold need after 0; on MS_ERR_NOMEM *cap is as it
 * was (the first array may have grown alone, which costs nothing). */
static inline int
ms__grow2(void *pv1, size_t size1, void *pv2, size_t size2, size_t *cap,
          size_t need, size_t first)
{
	size_t cap1 = *cap;
	int rc = ms__grow(pv1, &cap1, need, size1, first);
	return rc ? rc : ms__grow(pv2, cap, need, size2, first);
}

/* ms__grow for array `arr` (an lvalue pointer) and its size_t `cap`. */
#define MS__GROW(arr, cap, need, first)                                        \
	ms__grow(&(arr), &(cap), (need), sizeof(*(arr)), (first))
/* ms__grow2 for arrays `a` and `b` and their one size_t `cap`. */
#define MS__GROW2(a, b, cap, need, first)                                      \
	ms__grow2(&(a), sizeof(*(a)), &(b), sizeof(*(b)), &(cap), (need),      \
	          (first))

#endif
