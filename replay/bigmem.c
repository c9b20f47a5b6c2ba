/*
 * bigmem.c - memory for the replay's large short-lived arrays (the verdict
 * oracle's rows and blocks of the whole day) taken from the kernel with
 * mmap and given back with munmap, and a merge sort that takes its scratch
 * the same way.
 *
 * Why not malloc: glibc raises its mmap threshold to the size of any
 * mapped chunk that is freed (up to 32 MiB). Once the oracle had freed its
 * day-sized arrays, every later allocation of the run below that size
 * (the merges' buffers, the finalize's) came from the allocator's heaps,
 * where freed memory stays resident: the peak RSS of the run grew with the
 * size of the day. Memory mapped here never passes through the allocator,
 * so its policy stays what it was. qsort is avoided for the same reason
 * (it mallocs a copy of the array it sorts).
 */
#include "replay_int.h"

#include <string.h>
#include <sys/mman.h>

void *
ms__big_alloc(size_t bytes)
{
	if (!bytes)
		bytes = 1;
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

void
ms__big_free(void *p, size_t bytes)
{
	if (p)
		munmap(p, bytes ? bytes : 1);
}

int
ms__big_reserve(void **p, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return 0;
	size_t nc = *cap > need / 2 ? *cap * 2 : need, bytes;
	if (nc < need || !size || nc > SIZE_MAX / size)
		return MS_ERR_NOMEM;
	bytes = nc * size;
	void *np = ms__big_alloc(bytes);
	if (!np)
		return MS_ERR_NOMEM;
	if (*p) {
		memcpy(np, *p, *cap * size);
		ms__big_free(*p, *cap * size);
	}
	*p = np;
	*cap = nc;
	return 0;
}

/* Merge the sorted runs src[lo, mid) and src[mid, hi) into dst[lo, hi),
 * the left run's element first among equal ones. */
static void
merge_runs(const unsigned char *src, unsigned char *dst, size_t lo,
           size_t mid, size_t hi, size_t size,
           int (*cmp)(const void *, const void *))
{
	size_t i = lo, j = mid, k = lo;
	while (i < mid && j < hi) {
		const unsigned char *a = src + i * size, *b = src + j * size;
		if (cmp(b, a) < 0) {
			memcpy(dst + k++ * size, b, size);
			j++;
		} else {
			memcpy(dst + k++ * size, a, size);
			i++;
		}
	}
	if (i < mid)
		memcpy(dst + k * size, src + i * size, (mid - i) * size);
	else if (j < hi)
		memcpy(dst + k * size, src + j * size, (hi - j) * size);
}

int
ms__big_sort(void *base, size_t n, size_t size,
             int (*cmp)(const void *, const void *))
{
	if (n < 2)
		return 0;
	if (!size || n > SIZE_MAX / size)
		return MS_ERR_NOMEM;
	size_t bytes = n * size;
	unsigned char *tmp = ms__big_alloc(bytes);
	if (!tmp)
		return MS_ERR_NOMEM;
	unsigned char *src = base, *dst = tmp;
	for (size_t w = 1; w < n; w = w > n / 2 ? n : w * 2) {
		for (size_t lo = 0; lo < n; lo += 2 * w) {
			size_t mid = n - lo > w ? lo + w : n;
			size_t hi = n - mid > w ? mid + w : n;
			merge_runs(src, dst, lo, mid, hi, size, cmp);
		}
		unsigned char *t = src;
		src = dst;
		dst = t;
	}
	if (src != base)
		memcpy(base, src, bytes);
	ms__big_free(tmp, bytes);
	return 0;
}
