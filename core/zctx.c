/*
 * zctx.c - zstd contexts one thread keeps from one part to the next
 * (ms_zctx, ms_part.h): a merge worker's, handed to every merge it runs.
 *
 * Design:
 *  1. Two contexts, each made at its first use and kept until
 *     ms_zctx_free, allocated through z->mem: one compression context
 *     for part and index part writers (zstd sizes its workspace for the
 *     largest input and level it has been given, and keeps it), and one
 *     decompression context. A merge's core writer is closed before its
 *     index writers open, so one compression context serves them all.
 *  2. The compression context has one user at a time (`busy`): a writer
 *     takes it at open and gives it back at close; while it is taken, a
 *     second writer is refused (NULL) and makes its own, as it does with
 *     no ms_zctx. A core writer sets sticky parameters (level,
 *     dictionary, per-unit matcher settings): the context is reset to
 *     zstd's defaults, session and parameters, when taken and when given
 *     back, so no setting or dictionary reference outlives its writer and
 *     a writer starts from the state a fresh context has (an index writer
 *     passes its level with every call, ZSTD_compressCCtx).
 *  3. The decompression context is only used by one-shot calls
 *     (ZSTD_decompressDCtx, ZSTD_decompress_usingDDict), which keep no
 *     state between calls: every reader on the thread may share it (a
 *     merge's iterators already share one). It is reset, session and
 *     parameters, each time it is handed out.
 */
#include "part_int.h"

struct ms_zctx {
	ms_mem *mem;     /* borrowed */
	ZSTD_CCtx *cctx; /* 1., 2. */
	ZSTD_DCtx *dctx; /* 1., 3. */
	bool busy;       /* 2. */
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
	ZSTD_freeCCtx(z->cctx);
	ZSTD_freeDCtx(z->dctx);
	ms_mem_free(z->mem, z, sizeof(*z));
}

ZSTD_CCtx *
ms__zctx_take(ms_zctx *z)
{
	if (!z || z->busy)
		return NULL;
	if (!z->cctx &&
	    !(z->cctx = ZSTD_createCCtx_advanced(ms__zstd_mem(z->mem))))
		return NULL;
	ZSTD_CCtx_reset(z->cctx, ZSTD_reset_session_and_parameters);
	z->busy = true;
	return z->cctx;
}

bool
ms__zctx_give(ms_zctx *z, ZSTD_CCtx *c)
{
	if (!z || !c || c != z->cctx)
		return false;
	ZSTD_CCtx_reset(c, ZSTD_reset_session_and_parameters);
	z->busy = false;
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
