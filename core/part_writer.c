/*
 * part_writer.c - writes one immutable part as one file at a temporary
 * path: blocks of zstd-compressed, column-oriented rows in trace-ID order
 * (the data section, from offset 0), then the block directory (index), a
 * Bloom filter over trace IDs (bloom) and the footer, fsync()ed once at
 * close. Layout: core/FORMAT.md, "Part".
 *
 * Design:
 *  1. Blocks reach the data section in strictly ascending trace-ID order,
 *     except that consecutive blocks of one trace (split past
 *     MS_BLOCK_SPLIT_BYTES, or copied raw) share an ID.
 *  2. data_off is the byte length of the data section including bytes
 *     still pending in `out`; every index entry's offset is the data_off
 *     before its block.
 *  3. `content` has absorbed the header checksum of exactly the blocks
 *     before data_off, in order.
 *  4. After any failed add the writer is `failed`: later calls return
 *     MS_ERR_STATE and finish removes the file.
 *  5. The footer is written last: a file without a valid footer is not a
 *     part.
 *  6. The block directory and the trace hashes the Bloom filter is built
 *     from at close (16 bytes a trace) are lists read back once, in
 *     order, at finish: each keeps its last SPILL_AT bytes in memory and
 *     the rest in an unlinked temporary file next to the part (spill), so
 *     a writer of a day's traces holds a few hundred KiB, not 32 bytes
 *     per trace. The part's bytes are the same either way. Where no such
 *     file can be had (the part's directory keeps its files in memory,
 *     or takes no O_TMPFILE), the lists stay in memory, but the trace
 *     hashes only up to HASHES_KEPT_MAX bytes: past that they are dropped
 *     and the Bloom filter is built at finish from the trace IDs in the
 *     data section's block headers, read back from the part file
 *     (bloom_from_data): the same bits, as the filter is sized from the
 *     final trace count. A day's finalize on a tmpfs no longer holds 16
 *     bytes for each trace it writes (4 MiB at day-8x); reading the data
 *     back costs about 0.25 ms a MB, which is why smaller parts keep
 *     their hashes.
 *  7. The block directory is held packed (ms__dir_put: the stored size
 *     and row count as uvarints, about 3 bytes a block instead of the
 *     section's 16): a block's offset is the sum of the stored sizes
 *     before it (2.), so it is not kept. At finish the section is
 *     expanded from it, entry by entry, through `out`.
 * States: open (ms_part_writer_open) -> adding (add_trace/add_raw) ->
 * freed (finish or abort).
 */
#define _GNU_SOURCE /* O_TMPFILE */
#define XXH_INLINE_ALL
#include "ms_fs.h"
#include "part_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>
#include <zdict.h>

/*
 * Units below MS__HUFF_MIN bytes are compressed without Huffman-coded
 * literals: for a block of a few KiB, building and reading the literal
 * table costs more time than it saves bytes (decoding runs about 2x faster
 * for ~25% more bytes on ~2 KiB units). At levels whose matcher for a
 * 128 KiB input is zstd's fast or double-fast one (levels up to 4), they
 * are matched with the fast strategy (one hash table) and a minimum match
 * of MS__SMALL_MML bytes: with raw literals, the second table of
 * double-fast finds nothing worth its time on units of a few hundred
 * bytes to a few KiB. On bench_part's units (~500-byte column units,
 * ~1.3 KiB body units) that compresses 25% faster (159 vs 212 ms per
 * 44 MB) and decompresses 6% faster (29.8 vs 31.7 ms) for 1.5% more
 * bytes than double-fast with minimum match 5 (the level's own for a
 * 128 KiB input; zstd would pick 4 for tiny inputs, which finds more,
 * shorter, slower matches). Higher levels keep their strategy and use
 * the minimum match they use for a 128 KiB input. Readers need not know:
 * every frame describes itself.
 */
#define MS__HUFF_MIN (16u << 10)
#define MS__SMALL_MML 6

/* `out` is written when the next block would take it past FLUSH_AT, so it
 * stays one FLUSH_AT buffer; a block larger than that is written alone. */
#define FLUSH_AT (256u << 10)

/*
 * A list of records appended one by one and read back once, in order
 * (design 6). Records stay in `mem` until it reaches SPILL_AT bytes, which
 * then go to `fd`, an unlinked file (O_TMPFILE) made in the part's
 * directory at the first spill: nothing of it outlives the writer or a
 * crash. Where no such file can be made or written, or the directory is
 * on a file system that keeps its files in memory (tmpfs: the file would
 * be RAM the process no longer counts, not RAM saved), the records stay
 * in memory: a spill changes what the writer holds, never what it writes.
 * Invariant: the list is fd's bytes [0, spilled) followed by mem's.
 * SPILL_AT is a multiple of the hashes' record size (16); the block
 * directory's records (design 7) are read back as a byte stream.
 */
#define SPILL_AT (64u << 10)
/* The most of the trace hashes kept in memory where they cannot spill
 * (design 6): 65,536 traces. */
#define HASHES_KEPT_MAX (1u << 20)

typedef struct spill {
	ms_buf mem;
	int fd;           /* -1: nothing spilled */
	uint64_t spilled; /* bytes in fd */
	bool keep;        /* no file: every record stays in mem */
	bool anywhere;    /* spill even to an in-memory file system (tests) */
	/* Kept in memory (no file): past drop_at bytes (0: never) the
	 * records are dropped, and all later ones (the trace hashes, which
	 * finish can rebuild, design 6); `dropped` once they were. */
	size_t drop_at;
	bool dropped;
} spill;

struct ms_part_writer {
	ms_mem *mem;
	ms_io *io;
	bool no_sync; /* opts.no_sync: the caller syncs */
	int level;
	char *path; /* the part file being written */
	size_t path_size;
	int fd;
	ZSTD_CCtx *cctx; /* the writer's own, or taken from zctx */
	ms_zctx *zctx;   /* opts.zctx (borrowed) */
	ms_buf out;    /* data bytes not yet written */
	ms_buf ua, ub; /* a block's uncompressed units */
	spill index;   /* the block directory, packed (design 7) */
	spill hashes;  /* two u64 Bloom hashes per trace */
	ms_buf lens;   /* u32 string lengths of the trace being added */
	ms_buf ptrs;   /* row pointers of add_trace */
	uint64_t data_off;
	XXH64_state_t content;
	ms_part_meta meta;
	bool cover;                /* ms_part_writer_cover was called */
	int64_t cover_min, cover_max; /* ... with these bounds */
	int lit_mode;    /* ZSTD_c_literalCompressionMode now set */
	int small_mml;   /* ZSTD_c_minMatch for units under MS__HUFF_MIN */
	int small_strat; /* ZSTD_c_strategy for them (0: the level's) */
	uint32_t dict_id; /* opts.dict's ID (referenced by cctx), or 0 */
	uint8_t last[MS_TRACE_ID_MAX];
	uint32_t last_len;
	bool failed;
	/* The allocation that last failed (oom): what for and its bytes,
	 * for wfail's message; NULL while none has. */
	const char *oom_what;
	size_t oom_bytes;
};

static int wfail(ms_part_writer *w, ms_errbuf *eb, int err, const char *file,
                 const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static int
wfail(ms_part_writer *w, ms_errbuf *eb, int err, const char *file,
      const char *fmt, ...)
{
	w->failed = true;
	if (err == MS_ERR_NOMEM && w->oom_what) {
		const char *what = w->oom_what;
		w->oom_what = NULL;
		return wfail(w, eb, err, file,
		             "out of memory for %s (%zu bytes)", what,
		             w->oom_bytes);
	}
	va_list ap;
	va_start(ap, fmt);
	ms__part_vfail(eb, err, "part", w->meta.id, w->path, file, fmt, ap);
	va_end(ap);
	return err;
}

/* rc, having noted (when it is MS_ERR_NOMEM) that `bytes` for `what`
 * could not be had, for wfail to say. */
static int
oom(ms_part_writer *w, int rc, const char *what, size_t bytes)
{
	if (rc == MS_ERR_NOMEM) {
		w->oom_what = what;
		w->oom_bytes = bytes;
	}
	return rc;
}

/* ms_buf_reserve(b, extra), noting what for when memory fails. */
static int
reserve(ms_part_writer *w, ms_buf *b, size_t extra, const char *what)
{
	return oom(w, ms_buf_reserve(b, extra), what, b->len + extra);
}

static void
spill_init(spill *s, ms_mem *mem)
{
	ms_buf_init(&s->mem, mem, 0);
	s->fd = -1;
	s->spilled = 0;
	s->keep = false;
	s->anywhere = false;
	s->drop_at = 0;
	s->dropped = false;
}

static void
spill_release(spill *s)
{
	ms_buf_release(&s->mem);
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}

/* Make the unlinked file next to the part file `path`; -1 when it cannot
 * be made or (unless `anywhere`) would live in memory. */
static int
spill_open(const char *path, bool anywhere)
{
	char dir[4096];
	const char *slash = strrchr(path, '/');
	size_t n = !slash ? 0 : slash == path ? 1 : (size_t)(slash - path);
	if (n >= sizeof(dir))
		return -1;
	memcpy(dir, n ? path : ".", n ? n : 1);
	dir[n ? n : 1] = '\0';
	int fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd >= 0 && !anywhere && ms_fs_fd_in_memory(fd)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Append n bytes of records; when they would take the bytes in memory
 * past SPILL_AT, move those to the file first (so `mem` never grows past
 * SPILL_AT). With no file, they stay in memory, up to drop_at bytes when
 * set: past it they are dropped, and every later record. Fails only when
 * memory does. */
static int
spill_append(spill *s, const char *path, ms_io *io, const void *rec,
             size_t n)
{
	if (s->dropped)
		return 0;
	if (s->keep && s->drop_at && n > s->drop_at - s->mem.len) {
		s->dropped = true;
		ms_buf_release(&s->mem);
		return 0;
	}
	if (s->keep || s->mem.len == 0 || s->mem.len + n <= SPILL_AT)
		return ms_buf_append(&s->mem, rec, n);
	if (s->fd < 0 && (s->fd = spill_open(path, s->anywhere)) < 0)
		s->keep = true;
	/* A failed write leaves bytes past `spilled` that are never read. */
	else if (ms__write_all(s->fd, s->mem.data, s->mem.len, io) != 0)
		s->keep = true;
	else {
		s->spilled += s->mem.len;
		s->mem.len = 0;
	}
	return ms_buf_append(&s->mem, rec, n);
}

/* Read the spilled bytes [off, off + n) into buf. */
static int
spill_read(const spill *s, uint8_t *buf, uint64_t off, size_t *n)
{
	uint64_t left = s->spilled - off;
	*n = left < SPILL_AT ? (size_t)left : SPILL_AT;
	return ms_fs_pread_all(s->fd, buf, *n, off);
}

static void
writer_free(ms_part_writer *w)
{
	if (!w)
		return;
	if (w->fd >= 0)
		close(w->fd);
	if (!ms__zctx_give(w->zctx, w->cctx))
		ZSTD_freeCCtx(w->cctx);
	ms_buf_release(&w->out);
	ms_buf_release(&w->ua);
	ms_buf_release(&w->ub);
	spill_release(&w->index);
	spill_release(&w->hashes);
	ms_buf_release(&w->lens);
	ms_buf_release(&w->ptrs);
	ms_mem *mem = w->mem;
	ms_mem_free(mem, w->path, w->path_size);
	ms_mem_free(mem, w, sizeof(*w));
}

void
ms__part_writer_keep_lists(ms_part_writer *w)
{
	w->index.keep = w->hashes.keep = true;
	w->hashes.drop_at = 0;
}

void
ms__part_writer_spill_anywhere(ms_part_writer *w)
{
	w->index.anywhere = w->hashes.anywhere = true;
}

int
ms_part_writer_open(ms_part_writer **out, const char *tmp_path, uint64_t id,
                    const ms_part_writer_opts *opts, ms_errbuf *eb)
{
	*out = NULL;
	ms_part_writer_opts o = { 0 };
	if (opts)
		o = *opts;
	char idstr[17];
	ms_part_id_str(id, idstr);
	if (o.zstd_level == 0)
		o.zstd_level = 3;
	if (o.zstd_level < ZSTD_minCLevel() || o.zstd_level > ZSTD_maxCLevel())
		return ms_fail(eb, MS_ERR_INVAL, "part %s: zstd level %d",
		               idstr, o.zstd_level);
	ms_part_writer *w = ms_mem_calloc(o.mem, 1, sizeof(*w));
	if (!w)
		return ms_fail(eb, MS_ERR_NOMEM,
		               "part %s: out of memory for its writer (%zu "
		               "bytes)",
		               idstr, sizeof(*w));
	w->mem = o.mem;
	w->io = o.io;
	w->no_sync = o.no_sync;
	w->level = o.zstd_level;
	w->fd = -1;
	w->meta.id = id;
	w->meta.depth = o.depth;
	ms_buf_init(&w->out, o.mem, 0);
	ms_buf_init(&w->ua, o.mem, MS__UNIT_MAX);
	ms_buf_init(&w->ub, o.mem, MS__UNIT_MAX);
	spill_init(&w->index, o.mem);
	spill_init(&w->hashes, o.mem);
	w->hashes.drop_at = HASHES_KEPT_MAX;
	ms_buf_init(&w->lens, o.mem, 0);
	ms_buf_init(&w->ptrs, o.mem, 0);
	XXH64_reset(&w->content, 0);
	w->path_size = strlen(tmp_path) + 1;
	w->path = ms_mem_dup(o.mem, tmp_path, w->path_size);
	int rc;
	if (!w->path) {
		rc = ms_fail(eb, MS_ERR_NOMEM,
		             "part %s: out of memory for its path (%zu bytes)",
		             idstr, w->path_size);
		goto fail;
	}
	w->zctx = o.zctx;
	w->cctx = ms__zctx_take(o.zctx);
	if (!w->cctx)
		w->cctx = ZSTD_createCCtx_advanced(ms__zstd_mem(o.mem));
	if (!w->cctx) {
		rc = ms_fail(eb, MS_ERR_NOMEM,
		             "part %s: out of memory for a zstd context (%zu "
		             "bytes)",
		             idstr, ZSTD_estimateCCtxSize(o.zstd_level));
		goto fail;
	}
	w->lit_mode = ZSTD_ps_auto;
	ZSTD_compressionParameters cp =
	        ZSTD_getCParams(o.zstd_level, 128u << 10, 0);
	w->small_strat = cp.strategy <= ZSTD_dfast ? ZSTD_fast : 0;
	w->small_mml = w->small_strat ? MS__SMALL_MML : (int)cp.minMatch;
	size_t ze = ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_compressionLevel,
	                                   o.zstd_level);
	if (ZSTD_isError(ze)) {
		rc = ms_fail(eb, ms__zstd_err(ze), "part %s: zstd level %d",
		             idstr, o.zstd_level);
		goto fail;
	}
	if (o.dict) {
		ze = ZSTD_CCtx_refCDict(w->cctx, ms__dict_cdict(o.dict));
		if (ZSTD_isError(ze)) {
			rc = ms_fail(eb, ms__zstd_err(ze),
			             "part %s: dictionary %u", idstr,
			             ms_part_dict_id(o.dict));
			goto fail;
		}
		w->dict_id = ms_part_dict_id(o.dict);
	}
	rc = ms__part_create(tmp_path, "part", idstr, &w->fd, eb);
	if (rc)
		goto fail;
	*out = w;
	return 0;
fail:
	writer_free(w);
	return rc;
}

/* ---- row validation and encoding ---- */

static size_t
slen(const char *s)
{
	return s ? strnlen(s, MS_STR_MAX + 1) : 0;
}

/* Refuse row i of a trace when it has more tags than a row may, or a
 * tag count without a tag array. */
static int
check_ntags(ms_part_writer *w, const ms_row *r, size_t i, ms_errbuf *eb)
{
	if (r->ntags > MS_TAGS_MAX || (r->ntags && !r->tags))
		return wfail(w, eb, MS_ERR_RANGE, "rows",
		             "row %zu: %u tags%s, at most %d", i, r->ntags,
		             r->tags ? "" : " (NULL)", MS_TAGS_MAX);
	return 0;
}

/* Check row i of a trace and store its string lengths at L: segment_id,
 * service, instance, endpoint, then each tag (4 + ntags values; ntags
 * was checked by the caller). */
static int
check_row(ms_part_writer *w, const ms_row *r, const ms_row *first, size_t i,
          uint32_t *L, ms_errbuf *eb)
{
	if (r->trace_id_len < 1 || r->trace_id_len > MS_TRACE_ID_MAX ||
	    !r->trace_id)
		return wfail(w, eb, MS_ERR_INVAL, "rows",
		             "row %zu: trace ID of %u bytes%s, expected 1..%d "
		             "bytes",
		             i, r->trace_id_len, r->trace_id ? "" : " (NULL)",
		             MS_TRACE_ID_MAX);
	if (r != first &&
	    (r->trace_id_len != first->trace_id_len ||
	     memcmp(r->trace_id, first->trace_id, r->trace_id_len) != 0))
		return wfail(w, eb, MS_ERR_INVAL, "rows",
		             "row %zu: trace ID differs from row 0", i);
	size_t l0 = slen(r->segment_id), l1 = slen(r->service),
	       l2 = slen(r->instance), l3 = slen(r->endpoint);
	if (l0 > MS_STR_MAX || l1 > MS_STR_MAX || l2 > MS_STR_MAX ||
	    l3 > MS_STR_MAX)
		return wfail(w, eb, MS_ERR_RANGE, "rows",
		             "row %zu: string longer than %u bytes", i,
		             MS_STR_MAX);
	L[0] = (uint32_t)l0;
	L[1] = (uint32_t)l1;
	L[2] = (uint32_t)l2;
	L[3] = (uint32_t)l3;
	for (uint32_t t = 0; t < r->ntags; t++) {
		size_t lt = r->tags[t] ? strnlen(r->tags[t], MS_TAG_MAX + 1)
		                       : MS_TAG_MAX + 1;
		if (lt > MS_TAG_MAX)
			return wfail(w, eb, MS_ERR_RANGE, "rows",
			             "row %zu: tag %u missing or longer than "
			             "%u bytes",
			             i, t, MS_TAG_MAX);
		L[4 + t] = (uint32_t)lt;
	}
	if (r->body_len > MS_BODY_MAX || (r->body_len && !r->body))
		return wfail(w, eb, MS_ERR_RANGE, "rows",
		             "row %zu: body of %u bytes%s, at most %u", i,
		             r->body_len, r->body ? "" : " (NULL)",
		             MS_BODY_MAX);
	return 0;
}

/* A row's encoded size for block splitting, from its lengths L: the same
 * figure as ms__row_span_bytes (fixed fields, each string as length, bytes
 * and NUL counted as its length + 2, tag count and body length as 2). */
static uint64_t
row_span(const ms_row *r, const uint32_t *L)
{
	uint64_t n = 8 + 8 + 4 + 1 + 1 + 2 + (uint64_t)r->body_len;
	for (uint32_t k = 0; k < 4 + r->ntags; k++)
		n += (uint64_t)L[k] + 2;
	return n;
}

static inline uint8_t *
put_str(uint8_t *p, const char *s, uint32_t n)
{
	p = ms_put_uvarint(p, n);
	if (n)
		memcpy(p, s, n);
	p[n] = 0;
	return p + n + 1;
}

static int64_t
end_ns(const ms_row *r)
{
	int64_t lat = (int64_t)r->latency_ms * 1000000, e;
	if (__builtin_add_overflow(r->start_ns, lat, &e))
		return INT64_MAX;
	return e;
}

/* Encode the rows rp[0..n) into ua (unit A) and ub (unit B); L holds
 * their string lengths (check_row). */
static int
encode_units(ms_part_writer *w, const ms_row *const *rp, size_t n,
             const uint32_t *L)
{
	size_t bound = MS__A_COLS * 4 + n * (10 + 10 + 5 + 1 + 5), bb = n * 5;
	const uint32_t *l = L;
	for (size_t i = 0; i < n; i++) {
		const ms_row *r = rp[i];
		bound += 4 * 6;
		for (uint32_t k = 0; k < 4 + r->ntags; k++)
			bound += 6 + (size_t)l[k];
		l += 4 + r->ntags;
		bb += r->body_len;
		if (bound > MS__UNIT_MAX || bb > MS__UNIT_MAX)
			return MS_ERR_RANGE;
	}
	ms_buf_reset(&w->ua);
	ms_buf_reset(&w->ub);
	int rc = reserve(w, &w->ua, bound, "a block's columns");
	if (rc == 0)
		rc = reserve(w, &w->ub, bb, "a block's bodies");
	if (rc)
		return rc;

	uint8_t *base = w->ua.data, *p = base + MS__A_COLS * 4, *c0;
	uint32_t col = 0;
#define COL_END()                                                              \
	do {                                                                   \
		ms_put_le32(base + 4 * col++, (uint32_t)(p - c0));             \
	} while (0)
	c0 = p;
	for (size_t i = 0; i < n; i++)
		p = ms_put_uvarint(p, rp[i]->span_id);
	COL_END();
	for (unsigned k = 0; k < 4; k++) {
		c0 = p;
		l = L;
		for (size_t i = 0; i < n; i++) {
			const ms_row *r = rp[i];
			const char *str = k == 0   ? r->segment_id
			                  : k == 1 ? r->service
			                  : k == 2 ? r->instance
			                           : r->endpoint;
			p = put_str(p, str, l[k]);
			l += 4 + r->ntags;
		}
		COL_END();
	}
	c0 = p;
	uint64_t prev = 0;
	for (size_t i = 0; i < n; i++) {
		uint64_t d = (uint64_t)rp[i]->start_ns - prev;
		prev = (uint64_t)rp[i]->start_ns;
		p = ms_put_uvarint(p, (d << 1) ^ (uint64_t)((int64_t)d >> 63));
	}
	COL_END();
	c0 = p;
	for (size_t i = 0; i < n; i++)
		p = ms_put_uvarint(p, rp[i]->latency_ms);
	COL_END();
	c0 = p;
	for (size_t i = 0; i < n; i++)
		*p++ = rp[i]->is_error ? 1 : 0;
	COL_END();
	c0 = p;
	l = L;
	for (size_t i = 0; i < n; i++) {
		const ms_row *r = rp[i];
		p = ms_put_uvarint(p, r->ntags);
		for (uint32_t t = 0; t < r->ntags; t++)
			p = put_str(p, r->tags[t], l[4 + t]);
		l += 4 + r->ntags;
	}
	COL_END();
#undef COL_END
	w->ua.len = (size_t)(p - base);

	p = w->ub.data;
	for (size_t i = 0; i < n; i++)
		p = ms_put_uvarint(p, rp[i]->body_len);
	for (size_t i = 0; i < n; i++) {
		if (rp[i]->body_len)
			memcpy(p, rp[i]->body, rp[i]->body_len);
		p += rp[i]->body_len;
	}
	w->ub.len = (size_t)(p - w->ub.data);
	return 0;
}

static int
flush_out(ms_part_writer *w)
{
	if (w->out.len == 0)
		return 0;
	int rc = ms__write_all(w->fd, w->out.data, w->out.len, w->io);
	w->out.len = 0;
	return rc;
}

static void
note_trace(ms_part_writer *w, const uint8_t *tid, uint32_t len, int *rc)
{
	uint64_t h[2];
	ms__bloom_hash(tid, len, h);
	*rc = spill_append(&w->hashes, w->path, w->io, h, sizeof(h));
	if (*rc) {
		oom(w, *rc, "the traces' Bloom hashes",
		    w->hashes.mem.len + sizeof(h));
		return;
	}
	memcpy(w->last, tid, len);
	w->last_len = len;
	w->meta.traces++;
}

/* Make room for a block of `len` bytes in `out`: write what is pending
 * first when the block would take `out` past FLUSH_AT. */
static int
out_room(ms_part_writer *w, size_t len)
{
	if (w->out.len && len > FLUSH_AT - w->out.len) {
		int rc = flush_out(w);
		if (rc)
			return rc;
	}
	return reserve(w, &w->out, len, "the data buffer");
}

/* Account for a block of `len` bytes just appended at out.data + at. */
static int
commit_block(ms_part_writer *w, size_t at, size_t len, uint32_t nrows,
             int64_t min_ts, int64_t max_ts, uint64_t span)
{
	uint8_t e[MS__DIR_REC_MAX];
	size_t n = ms__dir_put(e, (uint32_t)len, nrows);
	int rc = spill_append(&w->index, w->path, w->io, e, n);
	if (rc) {
		oom(w, rc, "the block directory", w->index.mem.len + n);
		w->out.len = at;
		return rc;
	}
	/* The part checksum chains the blocks' header checksums (which
	 * cover their units' checksums): FORMAT.md, meta.checksum. */
	XXH64_update(&w->content,
	             w->out.data + at +
	                     offsetof(struct ms__block_disk, header_xxh),
	             8);
	if (w->meta.blocks == 0 || min_ts < w->meta.min_ts)
		w->meta.min_ts = min_ts;
	if (w->meta.blocks == 0 || max_ts > w->meta.max_ts)
		w->meta.max_ts = max_ts;
	w->data_off += len;
	w->meta.blocks++;
	w->meta.rows += nrows;
	w->meta.uncompressed_bytes += span;
	if (w->out.len >= FLUSH_AT)
		return flush_out(w);
	return 0;
}

static int
compress_unit(ms_part_writer *w, uint8_t *dst, size_t cap, const ms_buf *u,
              size_t *stored)
{
	if (u->len == 0) {
		*stored = 0;
		return 0;
	}
	int lit = u->len < MS__HUFF_MIN ? ZSTD_ps_disable : ZSTD_ps_auto;
	if (lit != w->lit_mode) {
		/* minMatch and strategy 0: the level's own for the unit. */
		bool small = lit == ZSTD_ps_disable;
		size_t e = ZSTD_CCtx_setParameter(
		        w->cctx, ZSTD_c_literalCompressionMode, lit);
		if (!ZSTD_isError(e))
			e = ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_minMatch,
			                           small ? w->small_mml : 0);
		if (!ZSTD_isError(e))
			e = ZSTD_CCtx_setParameter(w->cctx, ZSTD_c_strategy,
			                           small ? w->small_strat : 0);
		if (ZSTD_isError(e))
			return ms__zstd_err(e);
		w->lit_mode = lit;
	}
	size_t k = ZSTD_compress2(w->cctx, dst, cap, u->data, u->len);
	if (ZSTD_isError(k))
		return oom(w, ms__zstd_err(k), "zstd's workspace",
		           ZSTD_estimateCCtxSize(w->level));
	*stored = k;
	return 0;
}

static int
write_block(ms_part_writer *w, const ms_row *const *rows, size_t n,
            const uint32_t *L, ms_errbuf *eb)
{
	int rc = encode_units(w, rows, n, L);
	if (rc)
		return wfail(w, eb, rc, MS__F_DATA,
		             "encoding a block of %zu rows: %s", n,
		             ms_strerror(rc));
	size_t ba = ZSTD_compressBound(w->ua.len);
	size_t bb = ZSTD_compressBound(w->ub.len);
	rc = out_room(w, MS__BLOCK_HDR + ba + bb);
	if (rc)
		return wfail(w, eb, rc, MS__F_DATA, "block buffer: %s",
		             ms_strerror(rc));
	size_t at = w->out.len, sa = 0, sb = 0;
	uint8_t *h = w->out.data + at;
	rc = compress_unit(w, h + MS__BLOCK_HDR, ba, &w->ua, &sa);
	if (rc == 0)
		rc = compress_unit(w, h + MS__BLOCK_HDR + sa, bb, &w->ub, &sb);
	if (rc)
		return wfail(w, eb, rc, MS__F_DATA, "zstd: %s",
		             ms_strerror(rc));
	if (sa > UINT32_MAX - MS__BLOCK_HDR - sb)
		return wfail(w, eb, MS_ERR_RANGE, MS__F_DATA, "block too big");

	int64_t mn = rows[0]->start_ns, mx = mn, me = end_ns(rows[0]);
	for (size_t i = 1; i < n; i++) {
		int64_t s = rows[i]->start_ns, e = end_ns(rows[i]);
		mn = s < mn ? s : mn;
		mx = s > mx ? s : mx;
		me = e > me ? e : me;
	}
	memset(h, 0, MS__BLOCK_HDR);
	memcpy(h, MS__BLOCK_MAGIC, 4);
	h[offsetof(struct ms__block_disk, tid_len)] =
	        (uint8_t)rows[0]->trace_id_len;
#define PUT32(f, v) ms_put_le32(h + offsetof(struct ms__block_disk, f), v)
#define PUT64(f, v) ms_put_le64(h + offsetof(struct ms__block_disk, f), v)
	PUT32(nrows, (uint32_t)n);
	PUT32(a_stored, (uint32_t)sa);
	PUT32(a_raw, (uint32_t)w->ua.len);
	PUT32(b_stored, (uint32_t)sb);
	PUT32(b_raw, (uint32_t)w->ub.len);
	PUT32(dict_id, w->dict_id);
	PUT64(min_ts, (uint64_t)mn);
	PUT64(max_ts, (uint64_t)mx);
	PUT64(max_end_ns, (uint64_t)me);
	uint64_t span = (uint64_t)w->ua.len + w->ub.len;
	PUT64(span_bytes, span);
	PUT64(a_xxh, XXH3_64bits(h + MS__BLOCK_HDR, sa));
	PUT64(b_xxh, XXH3_64bits(h + MS__BLOCK_HDR + sa, sb));
	memcpy(h + offsetof(struct ms__block_disk, trace_id), rows[0]->trace_id,
	       rows[0]->trace_id_len);
	PUT64(header_xxh,
	      XXH3_64bits(h, offsetof(struct ms__block_disk, header_xxh)));
#undef PUT32
#undef PUT64
	size_t len = MS__BLOCK_HDR + sa + sb;
	w->out.len += len;
	rc = commit_block(w, at, len, (uint32_t)n, mn, mx, span);
	if (rc)
		return wfail(w, eb, rc, MS__F_DATA, "%s",
		             ms__write_err_text(rc));
	return 0;
}

/* Add one trace given as row pointers (add_trace, ms_part_write_rows). */
static int
add_trace_ptrs(ms_part_writer *w, const ms_row *const *rp, size_t n,
               ms_errbuf *eb)
{
	size_t nl = 0;
	for (size_t i = 0; i < n; i++) {
		const ms_row *r = rp[i];
		int rc = check_ntags(w, r, i, eb);
		if (rc)
			return rc;
		nl += 4 + r->ntags;
	}
	size_t lb;
	if (!ms_mul_ok(nl, sizeof(uint32_t), &lb))
		return wfail(w, eb, MS_ERR_RANGE, "rows", "%zu rows", n);
	ms_buf_reset(&w->lens);
	int rc = reserve(w, &w->lens, lb, "the string lengths of a trace");
	if (rc)
		return wfail(w, eb, rc, "rows", "%s", ms_strerror(rc));
	uint32_t *L = (uint32_t *)(void *)w->lens.data, *l = L;
	for (size_t i = 0; i < n; i++) {
		rc = check_row(w, rp[i], rp[0], i, l, eb);
		if (rc)
			return rc;
		l += 4 + rp[i]->ntags;
	}
	const ms_row *r0 = rp[0];
	if (w->meta.traces && ms_trace_id_cmp(r0->trace_id, r0->trace_id_len,
	                                      w->last, w->last_len) <= 0)
		return wfail(w, eb, MS_ERR_INVAL, "rows",
		             "trace IDs out of order: a trace's ID must sort "
		             "after the previous trace's");
	note_trace(w, r0->trace_id, r0->trace_id_len, &rc);
	if (rc)
		return wfail(w, eb, rc, MS__F_BLOOM, "%s", ms_strerror(rc));
	size_t i = 0;
	const uint32_t *cl = L;
	while (i < n) {
		size_t j = i;
		uint64_t sz = 0;
		const uint32_t *lj = cl;
		while (j < n && j - i < MS__BLOCK_ROWS_MAX) {
			uint64_t rs = row_span(rp[j], lj);
			if (j > i && sz + rs > MS_BLOCK_SPLIT_BYTES)
				break;
			sz += rs;
			lj += 4 + rp[j]->ntags;
			j++;
		}
		rc = write_block(w, rp + i, j - i, cl, eb);
		if (rc)
			return rc;
		i = j;
		cl = lj;
	}
	return 0;
}

int
ms_part_writer_add_trace(ms_part_writer *w, const ms_row *rows, size_t n,
                         ms_errbuf *eb)
{
	if (!w || w->failed)
		return ms_fail(eb, MS_ERR_STATE, "part writer: failed before");
	if (n == 0 || !rows)
		return wfail(w, eb, MS_ERR_INVAL, "rows", "no rows");
	size_t pb;
	if (!ms_mul_ok(n, sizeof(ms_row *), &pb))
		return wfail(w, eb, MS_ERR_RANGE, "rows", "%zu rows", n);
	ms_buf_reset(&w->ptrs);
	int rc = reserve(w, &w->ptrs, pb, "the row pointers of a trace");
	if (rc)
		return wfail(w, eb, rc, "rows", "%s", ms_strerror(rc));
	const ms_row **rp = (const ms_row **)(void *)w->ptrs.data;
	for (size_t i = 0; i < n; i++)
		rp[i] = &rows[i];
	return add_trace_ptrs(w, rp, n, eb);
}

int
ms_part_writer_add_raw(ms_part_writer *w, const ms_raw_block *raw,
                       ms_errbuf *eb)
{
	if (!w || w->failed)
		return ms_fail(eb, MS_ERR_STATE, "part writer: failed before");
	if (!raw || !raw->info || !raw->bytes)
		return wfail(w, eb, MS_ERR_INVAL, "raw", "no block");
	const ms_block_info *bi = raw->info;
	ms__block_hdr hd;
	if (raw->verified) {
		/* The iterator checked these bytes and parsed bi from them. */
		if (bi->trace_id_len < 1 ||
		    bi->trace_id_len > MS_TRACE_ID_MAX ||
		    bi->stored_bytes < MS__BLOCK_HDR ||
		    bi->stored_bytes > UINT32_MAX)
			return wfail(w, eb, MS_ERR_INVAL, "raw block",
			             "block info out of range");
		memcpy(hd.tid, bi->trace_id, bi->trace_id_len);
		hd.tid_len = bi->trace_id_len;
		hd.nrows = bi->nrows;
		hd.min_ts = bi->min_ts;
		hd.max_ts = bi->max_ts;
		hd.span_bytes = bi->span_bytes;
		hd.stored = (uint32_t)bi->stored_bytes;
	} else {
		char why[160];
		if (!ms__block_parse(raw->bytes, bi->stored_bytes, &hd, why,
		                     sizeof(why)) ||
		    !ms__block_units_ok(raw->bytes, &hd, why, sizeof(why)))
			return wfail(w, eb, MS_ERR_CORRUPT, "raw block", "%s",
			             why);
		if (hd.tid_len != bi->trace_id_len ||
		    memcmp(hd.tid, bi->trace_id, hd.tid_len) != 0 ||
		    hd.nrows != bi->nrows)
			return wfail(w, eb, MS_ERR_INVAL, "raw block",
			             "bytes do not match the block info");
		if (hd.dict_id && hd.dict_id != w->dict_id)
			return wfail(w, eb, MS_ERR_FORMAT, "raw block",
			             "dictionary ID %u: no dictionary of this "
			             "shard has it",
			             hd.dict_id);
	}
	int cmp = w->meta.blocks ? ms_trace_id_cmp(hd.tid, hd.tid_len, w->last,
	                                           w->last_len)
	                         : 1;
	if (cmp < 0)
		return wfail(w, eb, MS_ERR_INVAL, "raw block",
		             "trace IDs out of order");
	int rc = 0;
	if (cmp > 0)
		note_trace(w, hd.tid, hd.tid_len, &rc);
	if (rc == 0)
		rc = out_room(w, hd.stored);
	if (rc == 0) {
		size_t at = w->out.len;
		memcpy(w->out.data + at, raw->bytes, hd.stored);
		w->out.len += hd.stored;
		rc = commit_block(w, at, hd.stored, hd.nrows, hd.min_ts,
		                  hd.max_ts, hd.span_bytes);
	}
	if (rc)
		return wfail(w, eb, rc, MS__F_DATA, "%s",
		             ms__write_err_text(rc));
	return 0;
}

void
ms__footer_encode(uint8_t out[MS__FOOTER_SIZE], const ms_part_meta *m,
                  enum ms_part_kind kind, uint64_t data_bytes,
                  uint64_t index_bytes, uint64_t bloom_bytes)
{
	memset(out, 0, MS__FOOTER_SIZE);
	memcpy(out, MS__FOOTER_MAGIC, 8);
#define PUT32(f, v) ms_put_le32(out + offsetof(struct ms__footer_disk, f), v)
#define PUT64(f, v) ms_put_le64(out + offsetof(struct ms__footer_disk, f), v)
	PUT32(version, MS_PART_FORMAT_VERSION);
	PUT32(kind, (uint32_t)kind);
	PUT64(id, m->id);
	PUT64(compressed_bytes, m->compressed_bytes);
	PUT64(uncompressed_bytes, m->uncompressed_bytes);
	PUT64(rows, m->rows);
	PUT64(blocks, m->blocks);
	PUT64(traces, m->traces);
	PUT64(min_ts, (uint64_t)m->min_ts);
	PUT64(max_ts, (uint64_t)m->max_ts);
	PUT32(depth, m->depth);
	PUT64(checksum, m->checksum);
	PUT64(data_bytes, data_bytes);
	PUT64(index_off, data_bytes);
	PUT64(index_bytes, index_bytes);
	PUT64(bloom_off, data_bytes + index_bytes);
	PUT64(bloom_bytes, bloom_bytes);
	PUT64(footer_off, data_bytes + index_bytes + bloom_bytes);
	PUT64(footer_xxh,
	      XXH64(out, offsetof(struct ms__footer_disk, footer_xxh), 0));
#undef PUT32
#undef PUT64
}

int
ms__index_start(ms_buf *b)
{
	static const uint8_t zero[MS__INDEX_HDR];
	ms_buf_reset(b);
	return ms_buf_append(b, zero, sizeof(zero));
}

static void
index_header(uint8_t h[MS__INDEX_HDR], enum ms_part_kind kind, uint64_t count,
             uint64_t entry_size)
{
	memcpy(h, MS__INDEX_MAGIC, 8);
	ms_put_le32(h + offsetof(struct ms__index_hdr, version),
	            MS_PART_FORMAT_VERSION);
	ms_put_le32(h + offsetof(struct ms__index_hdr, kind), (uint32_t)kind);
	ms_put_le64(h + offsetof(struct ms__index_hdr, count), count);
	ms_put_le64(h + offsetof(struct ms__index_hdr, entry_size), entry_size);
}

/* Make "<magic><version><kind><count><entry size> entries <xxh64>" of the
 * placeholder and the entries after it, without copying the entries. */
int
ms__index_seal(ms_buf *b, enum ms_part_kind kind, uint64_t count,
               uint64_t entry_size)
{
	if (b->len != MS__INDEX_HDR + count * entry_size)
		return MS_ERR_STATE;
	index_header(b->data, kind, count, entry_size);
	return ms_buf_append_le64(b, XXH64(b->data, b->len, 0));
}

/* ---- the packed block directory (design 7) ---- */

size_t
ms__dir_put(uint8_t rec[MS__DIR_REC_MAX], uint32_t stored, uint32_t nrows)
{
	uint8_t *p = ms_put_uvarint(rec, stored);
	return (size_t)(ms_put_uvarint(p, nrows) - rec);
}

/* One uvarint of at most 32 bits at *p (before end): 1, 0 when it does
 * not end before end, -1 as soon as a byte makes it longer than 5 bytes
 * or above 32 bits (a fifth byte above 0x0f). */
static int
get_u32(const uint8_t **p, const uint8_t *end, uint32_t *v)
{
	uint32_t x = 0;
	const uint8_t *q = *p;
	for (unsigned s = 0;; s += 7) {
		if (q == end)
			return 0;
		uint8_t b = *q++;
		if (s == 28 && b > 0x0f)
			return -1;
		x |= (uint32_t)(b & 0x7f) << s;
		if (b < 0x80)
			break;
	}
	*v = x;
	*p = q;
	return 1;
}

int
ms__dir_get(const uint8_t *p, size_t n, uint32_t *stored, uint32_t *nrows)
{
	const uint8_t *q = p, *end = p + n;
	int rc = get_u32(&q, end, stored);
	if (rc == 1)
		rc = get_u32(&q, end, nrows);
	return rc == 1 ? (int)(q - p) : rc;
}

uint64_t
ms__part_writer_dir_bytes(const ms_part_writer *w)
{
	return w->index.spilled + w->index.mem.len;
}

/* Where the expansion of the directory stands: the next entry's offset
 * and how many entries were written. */
typedef struct dir_pos {
	uint64_t off, count;
	XXH64_state_t xxh; /* of the section so far */
} dir_pos;

/* Hash what `out` holds into the index section's XXH64. Not inlined:
 * inlined into index_out, GCC at -O3 takes the length's range from the
 * FLUSH_AT test and warns about a memcpy inside XXH64_update that the
 * range cannot reach (-Wstringop-overflow, a false positive). */
__attribute__((noinline)) static void
index_hash(dir_pos *d, const ms_buf *out)
{
	XXH64_update(&d->xxh, out->data, out->len);
}

/* Append n bytes of the index section to `out`, writing it (and hashing
 * what is written) once it holds FLUSH_AT bytes. */
static int
index_out(ms_part_writer *w, dir_pos *d, const void *p, size_t n)
{
	int rc = oom(w, ms_buf_append(&w->out, p, n), "the index section",
	             w->out.len + n);
	if (rc == 0 && w->out.len >= FLUSH_AT) {
		index_hash(d, &w->out);
		rc = flush_out(w);
	}
	return rc;
}

/* Expand the whole records of p[0..n) into index entries; *used: the
 * bytes they took (a record cut by the end of p is left for the next
 * call). */
static int
index_expand(ms_part_writer *w, dir_pos *d, const uint8_t *p, size_t n,
             size_t *used)
{
	size_t at = 0;
	int k;
	uint32_t stored, nrows;
	while ((k = ms__dir_get(p + at, n - at, &stored, &nrows)) > 0) {
		uint8_t e[sizeof(struct ms__index_entry)];
		ms_put_le64(e + offsetof(struct ms__index_entry, offset),
		            d->off);
		ms_put_le32(e + offsetof(struct ms__index_entry, stored),
		            stored);
		ms_put_le32(e + offsetof(struct ms__index_entry, nrows), nrows);
		int rc = index_out(w, d, e, sizeof(e));
		if (rc)
			return rc;
		d->off += stored;
		d->count++;
		at += (size_t)k;
	}
	*used = at;
	return k < 0 ? MS_ERR_STATE : 0;
}

/* Write the index section from the packed directory, all but its
 * trailing XXH64 (into tail): the header, then the entries, through
 * `out`. The directory's bytes, spilled ones first, pass through buf
 * (SPILL_AT + MS__DIR_REC_MAX bytes), which carries a record cut by the
 * end of one read into the next. */
static int
index_write(ms_part_writer *w, uint8_t *buf, uint8_t tail[8])
{
	const spill *s = &w->index;
	dir_pos d = { 0 };
	XXH64_reset(&d.xxh, 0);
	uint8_t h[MS__INDEX_HDR];
	index_header(h, MS_KIND_CORE, w->meta.blocks,
	             sizeof(struct ms__index_entry));
	int rc = index_out(w, &d, h, sizeof(h));
	uint64_t total = s->spilled + s->mem.len;
	size_t carry = 0;
	for (uint64_t off = 0; rc == 0 && off < total;) {
		size_t n, used;
		if (off < s->spilled) {
			rc = spill_read(s, buf + carry, off, &n);
		} else {
			uint64_t left = total - off;
			n = left < SPILL_AT ? (size_t)left : SPILL_AT;
			memcpy(buf + carry, s->mem.data + (off - s->spilled),
			       n);
		}
		if (rc == 0)
			rc = index_expand(w, &d, buf, carry + n, &used);
		if (rc)
			break;
		off += n;
		carry = carry + n - used;
		memmove(buf, buf + used, carry);
	}
	if (rc == 0 &&
	    (carry || d.count != w->meta.blocks || d.off != w->data_off))
		rc = MS_ERR_STATE;
	if (rc)
		return rc;
	index_hash(&d, &w->out);
	ms_put_le64(tail, XXH64_digest(&d.xxh));
	return flush_out(w);
}

static void
bloom_add_all(uint8_t *bits, uint64_t nbits, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i + 16 <= n; i += 16) {
		uint64_t h[2];
		memcpy(h, p + i, 16);
		ms__bloom_add(bits, nbits, h);
	}
}

/* The trace IDs of the data section [0, data_off), read back from the
 * part file through buf (bufsize bytes) block header by block header,
 * into the filter bits[0..nbits / 8): each trace's first block, as
 * note_trace saw them (design 6). The file is the writer's own, fully
 * written: anything out of place is MS_ERR_STATE. */
static int
bloom_from_data(ms_part_writer *w, uint8_t *bits, uint64_t nbits,
                uint8_t *buf, size_t bufsize)
{
	int fd = open(w->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ms_err_from_errno(errno);
	uint8_t last[MS_TRACE_ID_MAX];
	uint32_t last_len = 0;
	uint64_t traces = 0, off = 0, base = 0, have = 0;
	int rc = 0;
	while (rc == 0 && off < w->data_off) {
		if (off + MS__BLOCK_HDR > base + have) {
			uint64_t left = w->data_off - off;
			size_t n = left < bufsize ? (size_t)left : bufsize;
			if (n < MS__BLOCK_HDR ||
			    (rc = ms_fs_pread_all(fd, buf, n, off)))
				break;
			base = off;
			have = n;
		}
		const uint8_t *p = buf + (off - base);
		uint32_t len = p[offsetof(struct ms__block_disk, tid_len)];
		const uint8_t *tid =
		        p + offsetof(struct ms__block_disk, trace_id);
		if (memcmp(p, MS__BLOCK_MAGIC, 4) != 0 || len < 1 ||
		    len > MS_TRACE_ID_MAX)
			break;
		if (len != last_len || memcmp(tid, last, len) != 0) {
			uint64_t h[2];
			ms__bloom_hash(tid, len, h);
			ms__bloom_add(bits, nbits, h);
			memcpy(last, tid, len);
			last_len = len;
			traces++;
		}
		off += MS__BLOCK_HDR +
		       (uint64_t)ms_le32(p + offsetof(struct ms__block_disk,
		                                      a_stored)) +
		       ms_le32(p + offsetof(struct ms__block_disk, b_stored));
	}
	close(fd);
	if (rc == 0 && (off != w->data_off || traces != w->meta.traces))
		rc = MS_ERR_STATE;
	return rc;
}

/* The trace hashes into the filter bits[0..nbits / 8), spilled ones read
 * through buf. */
static int
bloom_from_hashes(const spill *s, uint64_t traces, uint8_t *bits,
                  uint64_t nbits, uint8_t *buf)
{
	if (s->spilled + s->mem.len != traces * 16)
		return MS_ERR_STATE;
	for (uint64_t off = 0; off < s->spilled;) {
		size_t k;
		int rc = spill_read(s, buf, off, &k);
		if (rc)
			return rc;
		bloom_add_all(bits, nbits, buf, k);
		off += k;
	}
	bloom_add_all(bits, nbits, s->mem.data, s->mem.len);
	return 0;
}

/* The bloom section from the trace hashes, or from the data section when
 * they were dropped (design 6); buf: SPILL_AT bytes to read through. */
static int
build_bloom(ms_part_writer *w, ms_buf *dst, uint8_t *buf)
{
	uint64_t nbits = ms__bloom_nbits(w->meta.traces);
	size_t n = ms__bloom_section_bytes(w->meta.traces) - 8;
	int rc = reserve(w, dst, n + 8, "the Bloom filter");
	if (rc)
		return rc;
	uint8_t *b = dst->data;
	memset(b, 0, n);
	memcpy(b, MS__BLOOM_MAGIC, 8);
	ms_put_le32(b + offsetof(struct ms__bloom_hdr, version),
	            MS_PART_FORMAT_VERSION);
	ms_put_le32(b + offsetof(struct ms__bloom_hdr, k), MS_BLOOM_K);
	ms_put_le64(b + offsetof(struct ms__bloom_hdr, nbits), nbits);
	ms_put_le64(b + offsetof(struct ms__bloom_hdr, items), w->meta.traces);
	uint8_t *bits = b + MS__BLOOM_HDR;
	rc = w->hashes.dropped
	             ? bloom_from_data(w, bits, nbits, buf, SPILL_AT)
	             : bloom_from_hashes(&w->hashes, w->meta.traces, bits,
	                                 nbits, buf);
	if (rc)
		return rc;
	dst->len = n;
	return ms_buf_append_le64(dst, XXH64(b, n, 0));
}

void
ms_part_writer_cover(ms_part_writer *w, int64_t min_ts, int64_t max_ts)
{
	if (!w || min_ts > max_ts)
		return;
	w->cover = true;
	w->cover_min = min_ts;
	w->cover_max = max_ts;
}

int
ms_part_writer_finish(ms_part_writer *w, ms_part_meta *meta, ms_errbuf *eb)
{
	if (!w)
		return ms_fail(eb, MS_ERR_INVAL, "part writer: NULL");
	if (w->failed) {
		ms_part_writer_abort(w);
		return ms_fail(eb, MS_ERR_STATE,
		               "part writer: an earlier add failed");
	}
	ms_buf bloom;
	ms_buf_init(&bloom, w->mem, 0);
	/* Read-back buffer of the lists (design 6, 7). */
	const size_t bufsize = SPILL_AT + MS__DIR_REC_MAX;
	uint8_t *buf = ms_mem_alloc(w->mem, bufsize);
	/* The data section, then index, bloom and footer through the same
	 * descriptor, which is fsynced once and closed: nothing re-opened to
	 * write (a Bloom filter built from the data, design 6, opens the
	 * file to read its block headers back). */
	const char *file = MS__F_DATA;
	int rc = flush_out(w);
	if (rc) {
		rc = wfail(w, eb, rc, file, "write: %s", strerror(errno));
		goto out;
	}
	file = MS__F_INDEX;
	uint8_t tail[8];
	rc = buf ? index_write(w, buf, tail)
	         : oom(w, MS_ERR_NOMEM, "the read-back buffer", bufsize);
	if (rc == 0) {
		file = MS__F_BLOOM;
		rc = build_bloom(w, &bloom, buf);
	}
	if (rc) {
		rc = wfail(w, eb, rc, file, "%s", ms__write_err_text(rc));
		goto out;
	}
	w->meta.checksum = XXH64_digest(&w->content);
	if (w->cover && w->meta.blocks > 0) {
		if (w->cover_min < w->meta.min_ts)
			w->meta.min_ts = w->cover_min;
		if (w->cover_max > w->meta.max_ts)
			w->meta.max_ts = w->cover_max;
	}
	uint64_t index_bytes = MS__INDEX_HDR +
	                       w->meta.blocks * sizeof(struct ms__index_entry) +
	                       sizeof(tail);
	w->meta.compressed_bytes =
	        w->data_off + index_bytes + bloom.len + MS__FOOTER_SIZE;
	uint8_t f[MS__FOOTER_SIZE];
	ms__footer_encode(f, &w->meta, MS_KIND_CORE, w->data_off, index_bytes,
	                  bloom.len);
	int fd = w->fd;
	w->fd = -1;
	rc = ms__part_seal(fd, tail, sizeof(tail), bloom.data, bloom.len, f,
	                   w->no_sync, w->io, &file);
	if (rc) {
		rc = wfail(w, eb, rc, file, "%s", ms__write_err_text(rc));
		goto out;
	}
	if (meta)
		*meta = w->meta;
out:
	ms_buf_release(&bloom);
	ms_mem_free(w->mem, buf, bufsize);
	if (rc)
		ms_part_writer_abort(w);
	else
		writer_free(w);
	return rc;
}

void
ms_part_writer_abort(ms_part_writer *w)
{
	if (!w)
		return;
	ms__part_discard(&w->fd, w->path);
	writer_free(w);
}

/* ---- dictionary training ---- */

/* Every row's units, as a one-row block would hold them, appended to
 * samples with their sizes (size_t each) in sizes. w is a writer that
 * has no file: only its checks and unit buffers are used. */
static int
dict_samples(ms_part_writer *w, const ms_row *rows, size_t n, ms_buf *samples,
             ms_buf *sizes, ms_errbuf *eb)
{
	for (size_t i = 0; i < n; i++) {
		const ms_row *r = &rows[i];
		uint32_t L[4 + MS_TAGS_MAX];
		int rc = check_ntags(w, r, i, eb);
		if (rc == 0)
			rc = check_row(w, r, r, i, L, eb);
		if (rc)
			return rc;
		rc = encode_units(w, &r, 1, L);
		const ms_buf *u[2] = { &w->ua, &w->ub };
		for (int k = 0; rc == 0 && k < 2; k++) {
			size_t len = u[k]->len;
			if (len == 0)
				continue;
			rc = oom(w, ms_buf_append(samples, u[k]->data, len),
			         "the training samples", samples->len + len);
			if (rc == 0)
				rc = oom(
				        w,
				        ms_buf_append(sizes, &len, sizeof(len)),
				        "the training samples' sizes",
				        sizes->len + sizeof(len));
		}
		if (rc)
			return wfail(w, eb, rc, "rows", "row %zu: %s", i,
			             ms_strerror(rc));
	}
	return 0;
}

int
ms_part_dict_train(const ms_row *rows, size_t n, size_t cap, uint8_t **out,
                   size_t *out_n, ms_mem *mem, ms_errbuf *eb)
{
	*out = NULL;
	*out_n = 0;
	ms_part_writer w = { .mem = mem, .fd = -1 };
	w.path = (char *)"(dictionary training)";
	ms_buf samples, sizes;
	ms_buf_init(&w.ua, mem, MS__UNIT_MAX);
	ms_buf_init(&w.ub, mem, MS__UNIT_MAX);
	ms_buf_init(&samples, mem, 0);
	ms_buf_init(&sizes, mem, 0);
	uint8_t *d = cap ? ms_mem_alloc(mem, cap) : NULL;
	int rc = d     ? dict_samples(&w, rows, n, &samples, &sizes, eb)
	         : cap ? ms_fail(eb, MS_ERR_NOMEM,
	                         "dictionary: out of memory for its "
	                         "buffer (%zu bytes)",
	                         cap)
	               : ms_fail(eb, MS_ERR_INVAL, "dictionary of 0 bytes");
	size_t ns = sizes.len / sizeof(size_t);
	if (rc == 0 && ns > UINT32_MAX)
		rc = ms_fail(eb, MS_ERR_RANGE, "dictionary: %zu samples", ns);
	if (rc == 0) {
		size_t k = ZDICT_trainFromBuffer(d, cap, samples.data,
		                                 (const size_t *)(void *)
		                                         sizes.data,
		                                 (unsigned)ns);
		if (ZDICT_isError(k))
			rc = ms_fail(eb, MS_ERR_INVAL,
			             "dictionary from %zu rows: %s", n,
			             ZDICT_getErrorName(k));
		else
			*out_n = k;
	}
	if (rc == 0) {
		*out = ms_mem_dup(mem, d, *out_n);
		if (!*out)
			rc = ms_fail(eb, MS_ERR_NOMEM,
			             "dictionary: out of memory for a copy "
			             "(%zu bytes)",
			             *out_n);
	}
	ms_mem_free(mem, d, cap);
	ms_buf_release(&w.ua);
	ms_buf_release(&w.ub);
	ms_buf_release(&samples);
	ms_buf_release(&sizes);
	return rc;
}

/* ---- ms_part_write_rows ---- */

/*
 * Rows are ordered by trace ID, stably, with a merge sort over (key, row)
 * entries: k0/k1 hold the ID's first 16 bytes big-endian, zero padded, so
 * most comparisons are integer compares (IDs of up to 16 bytes with equal
 * keys are ordered by length, longer ones by ms_trace_id_cmp; zero padding
 * never orders IDs wrongly, it only ties). Input already in order (one
 * pass to see it) is not sorted. The writer gets row pointers: rows are
 * never copied.
 */
typedef struct sort_ent {
	uint64_t k0, k1;
	const ms_row *r;
} sort_ent;

static inline int
ent_cmp(const sort_ent *x, const sort_ent *y)
{
	if (x->k0 != y->k0)
		return x->k0 < y->k0 ? -1 : 1;
	if (x->k1 != y->k1)
		return x->k1 < y->k1 ? -1 : 1;
	uint32_t a = x->r->trace_id_len, b = y->r->trace_id_len;
	if (a <= 16 && b <= 16)
		return a < b ? -1 : a > b;
	return ms_trace_id_cmp(x->r->trace_id, a, y->r->trace_id, b);
}

static void
ent_init(sort_ent *e, const ms_row *r)
{
	uint8_t b[16] = { 0 };
	memcpy(b, r->trace_id, r->trace_id_len < 16 ? r->trace_id_len : 16);
	e->k0 = e->k1 = 0;
	for (int i = 0; i < 8; i++) {
		e->k0 = e->k0 << 8 | b[i];
		e->k1 = e->k1 << 8 | b[8 + i];
	}
	e->r = r;
}

/* Stable bottom-up merge sort of a[0..n) using tmp[0..n); returns the
 * array holding the result (a or tmp). */
static sort_ent *
ent_sort(sort_ent *a, sort_ent *tmp, size_t n)
{
	const size_t run = 16;
	for (size_t lo = 0; lo < n; lo += run) {
		size_t hi = lo + run < n ? lo + run : n;
		for (size_t i = lo + 1; i < hi; i++) {
			sort_ent v = a[i];
			size_t j = i;
			while (j > lo && ent_cmp(&a[j - 1], &v) > 0) {
				a[j] = a[j - 1];
				j--;
			}
			a[j] = v;
		}
	}
	sort_ent *src = a, *dst = tmp;
	for (size_t w = run; w < n; w *= 2) {
		for (size_t lo = 0; lo < n; lo += 2 * w) {
			size_t mid = lo + w < n ? lo + w : n;
			size_t hi = lo + 2 * w < n ? lo + 2 * w : n;
			size_t i = lo, j = mid, k = lo;
			if (mid == hi ||
			    ent_cmp(&src[mid - 1], &src[mid]) <= 0) {
				memcpy(dst + lo, src + lo,
				       (hi - lo) * sizeof(sort_ent));
				continue;
			}
			while (i < mid && j < hi)
				dst[k++] = ent_cmp(&src[j], &src[i]) < 0
				                   ? src[j++]
				                   : src[i++];
			while (i < mid)
				dst[k++] = src[i++];
			while (j < hi)
				dst[k++] = src[j++];
		}
		sort_ent *t = src;
		src = dst;
		dst = t;
	}
	return src;
}

/*
 * Rows come in any order from anywhere in the caller's memory, and each
 * row's strings are separate objects: checking and encoding them in
 * trace-ID order waits on memory row after row (prefetching took a
 * 100,000-row write of bench_part from ~270 to ~260 ms). The writer asks
 * ahead of the
 * row it encodes, in three steps so that each step only dereferences what
 * an earlier one fetched: the row structs 2 x PF_AHEAD rows ahead, their
 * strings, tag array and body PF_AHEAD rows ahead, the tag strings
 * PF_AHEAD / 2 rows ahead. A prefetch never faults; a NULL tag array
 * (refused later by check_row) is not followed.
 */
#define PF_AHEAD 12

typedef struct prefetcher {
	size_t row, str, tag; /* next row of each step */
} prefetcher;

static inline void
prefetch_to(prefetcher *pf, const ms_row *const *rp, size_t n, size_t upto)
{
	for (; pf->row < n && pf->row < upto + 2 * PF_AHEAD; pf->row++)
		__builtin_prefetch(rp[pf->row]);
	for (; pf->str < n && pf->str < upto + PF_AHEAD; pf->str++) {
		const ms_row *r = rp[pf->str];
		__builtin_prefetch(r->trace_id);
		__builtin_prefetch(r->segment_id);
		__builtin_prefetch(r->service);
		__builtin_prefetch(r->instance);
		__builtin_prefetch(r->endpoint);
		__builtin_prefetch(r->tags);
		__builtin_prefetch(r->body);
	}
	for (; pf->tag < n && pf->tag < upto + PF_AHEAD / 2; pf->tag++) {
		const ms_row *r = rp[pf->tag];
		for (uint32_t t = 0; r->tags && t < r->ntags && t < 8; t++)
			__builtin_prefetch(r->tags[t]);
	}
}

int
ms_part_write_rows(const char *tmp_path, uint64_t id, const ms_row *rows,
                   size_t n, const ms_part_writer_opts *opts,
                   ms_part_meta *meta, ms_errbuf *eb)
{
	ms_mem *mem = opts ? opts->mem : NULL;
	char idstr[17];
	ms_part_id_str(id, idstr);
	for (size_t i = 0; i < n; i++)
		if (!rows[i].trace_id || rows[i].trace_id_len < 1 ||
		    rows[i].trace_id_len > MS_TRACE_ID_MAX)
			return ms_fail(eb, MS_ERR_INVAL,
			               "part %s: row %zu: trace ID of %u "
			               "bytes%s, expected 1..%d bytes",
			               idstr, i, rows[i].trace_id_len,
			               rows[i].trace_id ? "" : " (NULL)",
			               MS_TRACE_ID_MAX);
	size_t bytes;
	if (!ms_mul_ok(n, 2 * sizeof(sort_ent), &bytes) ||
	    !ms_mul_ok(n, sizeof(ms_row *), &bytes))
		return ms_fail(eb, MS_ERR_RANGE, "part %s: %zu rows", idstr, n);
	sort_ent *ix = ms_mem_alloc(mem, 2 * n * sizeof(sort_ent));
	const ms_row **rp = ms_mem_alloc(mem, n * sizeof(ms_row *));
	ms_part_writer *w = NULL;
	int rc = 0;
	if (!ix || !rp) {
		rc = ms_fail(eb, MS_ERR_NOMEM,
		             "part %s: out of memory for sorting %zu rows (%zu "
		             "bytes)",
		             idstr, n,
		             ix ? n * sizeof(ms_row *)
		                : 2 * n * sizeof(sort_ent));
		goto out;
	}
	bool in_order = true;
	for (size_t i = 0; i < n; i++) {
		if (i + 2 * PF_AHEAD < n) /* a trace ID is its own object */
			__builtin_prefetch(rows[i + 2 * PF_AHEAD].trace_id);
		ent_init(&ix[i], &rows[i]);
		if (i && in_order && ent_cmp(&ix[i - 1], &ix[i]) > 0)
			in_order = false;
	}
	const sort_ent *ord = in_order ? ix : ent_sort(ix, ix + n, n);
	for (size_t i = 0; i < n; i++)
		rp[i] = ord[i].r;
	rc = ms_part_writer_open(&w, tmp_path, id, opts, eb);
	if (rc)
		goto out;
	prefetcher pf = { 0, 0, 0 };
	for (size_t i = 0; i < n && rc == 0;) {
		size_t j = i + 1;
		while (j < n && ent_cmp(&ord[j], &ord[i]) == 0)
			j++;
		prefetch_to(&pf, rp, n, j);
		rc = add_trace_ptrs(w, rp + i, j - i, eb);
		i = j;
	}
	if (rc == 0)
		rc = ms_part_writer_finish(w, meta, eb);
	else
		ms_part_writer_abort(w);
out:
	ms_mem_free(mem, ix, 2 * n * sizeof(sort_ent));
	ms_mem_free(mem, rp, n * sizeof(ms_row *));
	return rc;
}

uint64_t
ms_part_payload_bytes(enum ms_part_kind kind, const ms_part_meta *m)
{
	uint64_t skip = MS__FOOTER_SIZE;
	if (kind == MS_KIND_CORE)
		skip += ms__bloom_section_bytes(m->traces);
	return m->compressed_bytes > skip ? m->compressed_bytes - skip : 0;
}
