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

/* ms__grow for array `arr` (an lvalue pointer) and its size_t `cap`. */
#define MS__GROW(arr, cap, need, first)                                        \
	ms__grow(&(arr), &(cap), (need), sizeof(*(arr)), (first))

#endif
