/*
 * part_dict.c - zstd dictionaries shared by the parts of a shard
 * (core/FORMAT.md, "Dictionaries"): one dictionary's compression and
 * decompression handles, and the set a part resolves its blocks'
 * dictionary IDs through.
 *
 * Design:
 *  1. A dictionary belongs to a shard, never to one part: a block names it
 *     by ID, so a merge copies the block raw into another part of the same
 *     shard and it keeps its meaning.
 *  2. A set holds at most MS_PART_DICTS_MAX dictionaries in a fixed array:
 *     adding one never moves another, so readers find dictionaries while
 *     one is added (n is published after the slot is filled).
 *  3. A set is reference counted: its creator holds one reference, each
 *     part opened with it one more, so a part outlives the shard that
 *     opened it (a view released after close) without a dangling set.
 *  4. A compression dictionary lives in a workspace allocated here and
 *     emplaced by zstd (ZSTD_initStaticCDict): ZSTD_createCDict_advanced
 *     of zstd before 1.5.6 dereferences NULL when its first allocation
 *     fails (zstd pull request 3847), and core must survive running out
 *     of memory.
 */
#include "part_int.h"

#include <stdatomic.h>
#include <string.h>

struct ms_part_dict {
	ms_mem *mem;
	uint32_t id;
	uint8_t *bytes;
	size_t n;
	const ZSTD_CDict *cdict; /* in cwork (design 4.) */
	void *cwork;
	size_t cwork_n;
	ZSTD_DDict *ddict;
};

struct ms_part_dicts {
	ms_mem *mem;
	_Atomic uint32_t refs;
	_Atomic size_t n;
	ms_part_dict *d[MS_PART_DICTS_MAX];
};

int
ms_part_dict_new(ms_part_dict **out, uint32_t id, const void *bytes, size_t n,
                 int level, ms_mem *mem, ms_errbuf *eb)
{
	*out = NULL;
	if (id == 0 || n == 0)
		return ms_fail(eb, MS_ERR_INVAL,
		               "dictionary %u: an ID and bytes are needed", id);
	ms_part_dict *d = ms_mem_calloc(mem, 1, sizeof(*d));
	if (!d)
		return ms_fail(eb, MS_ERR_NOMEM,
		               "dictionary %u: out of memory for its handle "
		               "(%zu bytes)",
		               id, sizeof(*d));
	d->mem = mem;
	d->id = id;
	d->n = n;
	d->bytes = ms_mem_dup(mem, bytes, n);
	if (!d->bytes) {
		ms_part_dict_free(d);
		return ms_fail(eb, MS_ERR_NOMEM,
		               "dictionary %u: out of memory for its %zu bytes",
		               id, n);
	}
	/* zstd says only NULL: a refused allocation in between tells out
	 * of memory from bytes zstd would not take. */
	ms_mem_stats before, after;
	ms_mem_stats_get(mem, &before);
	ZSTD_compressionParameters cp =
	        ZSTD_getCParams(level ? level : 3, 0, n);
	d->cwork_n = ZSTD_estimateCDictSize_advanced(n, cp, ZSTD_dlm_byRef);
	d->cwork = ms_mem_alloc(mem, d->cwork_n);
	if (!d->cwork) {
		size_t want = d->cwork_n;
		d->cwork_n = 0;
		ms_part_dict_free(d);
		return ms_fail(eb, MS_ERR_NOMEM,
		               "dictionary %u: out of memory for its zstd "
		               "compression tables (%zu bytes)",
		               id, want);
	}
	d->cdict = ZSTD_initStaticCDict(d->cwork, d->cwork_n, d->bytes, n,
	                                ZSTD_dlm_byRef, ZSTD_dct_auto, cp);
	d->ddict = ZSTD_createDDict_advanced(d->bytes, n, ZSTD_dlm_byRef,
	                                     ZSTD_dct_auto, ms__zstd_mem(mem));
	ms_mem_stats_get(mem, &after);
	if (!d->cdict || !d->ddict) {
		const char *what = d->cdict ? "decompression" : "compression";
		ms_part_dict_free(d);
		if (after.failed > before.failed)
			return ms_fail(eb, MS_ERR_NOMEM,
			               "dictionary %u: out of memory for its "
			               "zstd %s tables (%zu dictionary bytes)",
			               id, what, n);
		return ms_fail(eb, MS_ERR_COMPRESS,
		               "dictionary %u: zstd would not take its %zu "
		               "bytes%s",
		               id, n, mem ? "" : " (or out of memory)");
	}
	*out = d;
	return 0;
}

uint32_t
ms_part_dict_id(const ms_part_dict *d)
{
	return d->id;
}

const uint8_t *
ms_part_dict_bytes(const ms_part_dict *d, size_t *n)
{
	*n = d->n;
	return d->bytes;
}

void
ms_part_dict_free(ms_part_dict *d)
{
	if (!d)
		return;
	ms_mem_free(d->mem, d->cwork, d->cwork_n); /* holds d->cdict */
	ZSTD_freeDDict(d->ddict);
	ms_mem_free(d->mem, d->bytes, d->n);
	ms_mem_free(d->mem, d, sizeof(*d));
}

const ZSTD_CDict *
ms__dict_cdict(const ms_part_dict *d)
{
	return d->cdict;
}

const ZSTD_DDict *
ms__dict_ddict(const ms_part_dict *d)
{
	return d->ddict;
}

int
ms_part_dicts_new(ms_part_dicts **out, ms_mem *mem, ms_errbuf *eb)
{
	*out = ms_mem_calloc(mem, 1, sizeof(**out));
	if (!*out)
		return ms_fail(
		        eb, MS_ERR_NOMEM,
		        "dictionary set: out of memory for its table (%zu "
		        "bytes)",
		        sizeof(**out));
	(*out)->mem = mem;
	atomic_init(&(*out)->refs, 1);
	atomic_init(&(*out)->n, 0);
	return 0;
}

int
ms_part_dicts_add(ms_part_dicts *s, ms_part_dict *d, ms_errbuf *eb)
{
	size_t n = atomic_load(&s->n);
	if (ms_part_dicts_find(s, d->id)) {
		uint32_t id = d->id;
		ms_part_dict_free(d);
		return ms_fail(eb, MS_ERR_EXISTS, "dictionary %u: already there",
		               id);
	}
	if (n == MS_PART_DICTS_MAX) {
		uint32_t id = d->id;
		ms_part_dict_free(d);
		return ms_fail(eb, MS_ERR_RANGE,
		               "dictionary %u: a shard holds at most %d", id,
		               MS_PART_DICTS_MAX);
	}
	s->d[n] = d;
	atomic_store(&s->n, n + 1);
	return 0;
}

const ms_part_dict *
ms_part_dicts_find(const ms_part_dicts *s, uint32_t id)
{
	if (!s || id == 0)
		return NULL;
	size_t n = atomic_load(&((ms_part_dicts *)s)->n);
	for (size_t i = 0; i < n; i++)
		if (s->d[i]->id == id)
			return s->d[i];
	return NULL;
}

uint32_t
ms_part_dicts_max_id(const ms_part_dicts *s)
{
	uint32_t m = 0;
	size_t n = s ? atomic_load(&((ms_part_dicts *)s)->n) : 0;
	for (size_t i = 0; i < n; i++)
		m = s->d[i]->id > m ? s->d[i]->id : m;
	return m;
}

const ms_part_dicts *
ms__dicts_ref(const ms_part_dicts *s)
{
	if (s)
		atomic_fetch_add(&((ms_part_dicts *)s)->refs, 1);
	return s;
}

void
ms_part_dicts_free(const ms_part_dicts *cs)
{
	ms_part_dicts *s = (ms_part_dicts *)cs;
	if (!s || atomic_fetch_sub(&s->refs, 1) != 1)
		return;
	size_t n = atomic_load(&s->n);
	for (size_t i = 0; i < n; i++)
		ms_part_dict_free(s->d[i]);
	ms_mem_free(s->mem, s, sizeof(*s));
}
