/*
 * zctx.c - zstd contexts one thread keeps from one part to the next
 * (ms_zctx, ms_part.h): a merge worker's, handed to every merge it runs.
 *
 * Design:
 *  1. Three contexts, each made at its first use and kept until
 *     ms_zctx_free, all allocated through z->mem: a compression context
 *     for core part writers (zstd grows its workspace as their units
 *     need), a static one for index part writers in one workspace sized
 *     for the level and any input (as such a writer makes for itself:
 *     sidx.c, design of its writer), and a decompression context.
 *  2. A compression context has one user at a time (`busy`): a writer
 *     takes it at open and gives it back at close; while it is taken, a
 *     second writer is refused (NULL) and makes its own, as it does with
 *     no ms_zctx. A core writer sets sticky parameters (level,
 *     dictionary, per-unit matcher settings): the context is reset to
 *     zstd's defaults, session and parameters, when taken and when given
 *     back, so no setting or dictionary reference outlives its writer and
 *     a writer starts from the state a fresh context has.
 *  3. The decompression context is only used by one-shot calls
 *     (ZSTD_decompressDCtx, ZSTD_decompress_usingDDict), which keep no
 *     state between calls: every reader on the thread may share it (a
 *     merge's iterators already share one). It is reset, session and
 *     parameters, each time it is handed out.
 *  4. The index writers' workspace is sized for the level last asked for
 *     when it was made; a writer at a level whose estimate is larger gets
 *     a new one (when the old one is not taken; else it makes its own).
 */
#include "part_int.h"

struct ms_zctx {
	ms_mem *mem;       /* borrowed */
	ZSTD_CCtx *core;   /* 1. core part writers' */
	ZSTD_CCtx *index;  /* 1. index part writers', in iws */
	void *iws;         /* its workspace */
	size_t iws_size;
	ZSTD_DCtx *dctx;   /* 1., 3. */
	bool core_busy, index_busy; /* 2. */
};

int
ms_zctx_new(ms_zctx **out, ms_mem *mem, ms_errbuf *eb)
{
	*out = ms_mem_calloc(mem, 1, sizeof(ms_zctx));
	if (!*out)
		return ms_fail(eb, MS_ERR_NOMEM,
		               "out of memory for a set of zstd contexts (%zu "
		               "bytes)",
		               sizeof(ms_zctx));
	(*out)->mem = mem;
	return 0;
}

void
ms_zctx_free(ms_zctx *z)
{
	if (!z)
		return;
	ZSTD_freeCCtx(z->core);
	if (z->iws)
		ms_mem_free(z->mem, z->iws, z->iws_size);
	ZSTD_freeDCtx(z->dctx);
	ms_mem_free(z->mem, z, sizeof(*z));
}

/* Design 4: the index writers' static context, sized for `level`. */
static ZSTD_CCtx *
index_cctx(ms_zctx *z, int level)
{
	size_t need = ZSTD_estimateCCtxSize(level);
	if (z->index && z->iws_size >= need)
		return z->index;
	void *ws = ms_mem_alloc(z->mem, need);
	ZSTD_CCtx *c = ws ? ZSTD_initStaticCCtx(ws, need) : NULL;
	if (!c) {
		if (ws)
			ms_mem_free(z->mem, ws, need);
		return NULL;
	}
	if (z->iws)
		ms_mem_free(z->mem, z->iws, z->iws_size);
	z->iws = ws;
	z->iws_size = need;
	z->index = c;
	return c;
}

ZSTD_CCtx *
ms__zctx_take(ms_zctx *z, bool index, int level)
{
	if (!z || (index ? z->index_busy : z->core_busy))
		return NULL;
	ZSTD_CCtx *c;
	if (index)
		c = index_cctx(z, level);
	else
		c = z->core ? z->core
		            : (z->core = ZSTD_createCCtx_advanced(
		                       ms__zstd_mem(z->mem)));
	if (!c)
		return NULL;
	ZSTD_CCtx_reset(c, ZSTD_reset_session_and_parameters);
	*(index ? &z->index_busy : &z->core_busy) = true;
	return c;
}

bool
ms__zctx_give(ms_zctx *z, ZSTD_CCtx *c)
{
	if (!z || !c || (c != z->core && c != z->index))
		return false;
	ZSTD_CCtx_reset(c, ZSTD_reset_session_and_parameters);
	*(c == z->index ? &z->index_busy : &z->core_busy) = false;
	return true;
}

ZSTD_DCtx *
ms__zctx_dctx(ms_zctx *z)
{
	if (!z)
		return NULL;
	if (!z->dctx)
		z->dctx = ZSTD_createDCtx_advanced(ms__zstd_mem(z->mem));
	if (z->dctx)
		ZSTD_DCtx_reset(z->dctx, ZSTD_reset_session_and_parameters);
	return z->dctx;
}
