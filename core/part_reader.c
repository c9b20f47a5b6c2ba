/*
 * part_reader.c - opens a part of any kind, checks its metadata, index and
 * Bloom filter, and iterates a core part's blocks in trace-ID order,
 * decoding only the columns asked for or handing out the stored bytes for
 * a raw copy. Layout: core/FORMAT.md.
 *
 * Nothing read from disk is trusted: the file's size must match its
 * footer, every section and block carries a checksum that is checked
 * before its bytes are used, and every length is bounded before it sizes
 * anything. An
 * iterator that reaches the end has also checked the part checksum and the
 * row, trace and byte totals against meta, so a full read of a damaged part
 * always fails.
 *
 * Iterator design:
 *  1. cur_ok is true only after next() returned 1 and the block's header
 *     matched (and its units, unless 7. or 5. say otherwise: a_unchecked
 *     / b_unchecked then mark each unit not yet checked over these
 *     bytes, which raw() and inflate() check before handing it out).
 *  2. a_ok / b_ok: unit A / B of the current block is decompressed in ua /
 *     ub (reset by next()).
 *  3. content has absorbed the header checksum of every block returned so
 *     far, in file order.
 *  4. After an error the iterator is `failed` and every call returns
 *     MS_ERR_STATE.
 *  5. A re-read iterator (ms_part_iter_open_reread) trails one that checks
 *     everything over the same part: cur_ok then means the header (and
 *     its index entry) matched; its units are checked when handed out
 *     raw or decompressed; the trace-ID order, 3. and the end-of-part
 *     totals are left to the other iterator.
 *  6. A re-read iterator that shares its lead's mapping reads the very
 *     bytes the lead read. A block the lead has already returned
 *     (index < lead->checked: header, units, index entry and bounds all
 *     checked) is then trusted: its header fields are taken without
 *     checking them again, and so are its units when the lead checked
 *     them. Any other block is checked as 5. says.
 *  7. An iterator told to defer units (ms_part_iter_defer_units, a scan
 *     that stages from block headers) checks everything of 3. and 5.
 *     except the units: each unit is checked when it is handed out raw
 *     or decompressed, by it or by a re-read trailing it, so the bytes
 *     are hashed on the pass that copies them and a unit nobody hands
 *     out (a dropped trace's) is never read.
 *
 * What an open part holds (design 8): a core part's index (16 bytes a
 * block) and bloom (2 bytes a trace) sections are checked at open through
 * a buffer of at most SECT_WINDOW bytes, as FORMAT.md says ("Checked at
 * open"), and not kept: a shard keeps every active part open for the
 * whole run, and a day's parts would otherwise hold 18 bytes a trace
 * each. An iterator reads the entries it walks from the file, ITER_ENTS
 * at a time, and checks each again (its offset follows the previous
 * block, its sizes are in range) before using it; the bloom section is
 * read at the first ms_part_may_contain, checked as at open and kept
 * (parts outside a sampling merge's selection are probed by its guard;
 * the inputs of a finalize never are). Index parts keep their index
 * section (an entry per 4096 rows).
 */
#define XXH_INLINE_ALL
#include "ms_fs.h"
#include "part_int.h"
#include "ms_invariant.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

int
ms__part_fail(const ms_part *p, ms_errbuf *eb, int err, const char *file,
              const char *fmt, ...)
{
	if (eb) {
		char what[400];
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(what, sizeof(what), fmt, ap);
		va_end(ap);
		if (p->name[0])
			ms_fail(eb, err, "part %s (%s): %s: %s", p->name,
			        p->dir, file, what);
		else
			ms_fail(eb, err, "part %s: %s: %s", p->dir, file, what);
	}
	return err;
}

int
ms__part_unit_vfail(const ms_part *p, ms_errbuf *eb, int err, const char *unit,
                    uint64_t next, const char *fmt, va_list ap)
{
	char what[360];
	vsnprintf(what, sizeof(what), fmt, ap);
	return ms__part_fail(p, eb, err, MS__F_DATA, "%s %llu: %s", unit,
	                     (unsigned long long)(next ? next - 1 : 0), what);
}

/* ---- block header ---- */

static bool why_fail(char *why, size_t n, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

static bool
why_fail(char *why, size_t n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, n, fmt, ap);
	va_end(ap);
	return false;
}

/* The header's fields, unchecked. */
static inline void
block_fields(const uint8_t *p, uint64_t len, ms__block_hdr *h)
{
#define G32(f) ms_le32(p + offsetof(struct ms__block_disk, f))
#define G64(f) ms_le64(p + offsetof(struct ms__block_disk, f))
	h->tid_len = p[offsetof(struct ms__block_disk, tid_len)];
	h->nrows = G32(nrows);
	h->a_stored = G32(a_stored);
	h->a_raw = G32(a_raw);
	h->b_stored = G32(b_stored);
	h->b_raw = G32(b_raw);
	h->dict_id = G32(dict_id);
	h->min_ts = (int64_t)G64(min_ts);
	h->max_ts = (int64_t)G64(max_ts);
	h->max_end_ns = (int64_t)G64(max_end_ns);
	h->span_bytes = G64(span_bytes);
	h->a_xxh = G64(a_xxh);
	h->b_xxh = G64(b_xxh);
	h->hdr_xxh = G64(header_xxh);
#undef G32
#undef G64
	memcpy(h->tid, p + offsetof(struct ms__block_disk, trace_id),
	       MS_TRACE_ID_MAX);
	h->stored = (uint32_t)len;
}

bool
ms__block_parse(const uint8_t *p, uint64_t len, ms__block_hdr *h, char *why,
                size_t whylen)
{
	if (len < MS__BLOCK_HDR)
		return why_fail(why, whylen,
		                "block of %llu bytes is shorter "
		                "than its header",
		                (unsigned long long)len);
	if (memcmp(p, MS__BLOCK_MAGIC, 4) != 0)
		return why_fail(why, whylen, "bad block magic");
	uint64_t x = ms_le64(p + offsetof(struct ms__block_disk, header_xxh));
	if (x != XXH3_64bits(p, offsetof(struct ms__block_disk, header_xxh)))
		return why_fail(why, whylen, "block header checksum mismatch");
	block_fields(p, len, h);
	const uint8_t *tid = p + offsetof(struct ms__block_disk, trace_id);
	if (p[5] || p[6] || p[7])
		return why_fail(why, whylen, "reserved header bytes not zero");
	if (h->tid_len < 1 || h->tid_len > MS_TRACE_ID_MAX)
		return why_fail(why, whylen, "trace ID length %u", h->tid_len);
	static const uint8_t zero[MS_TRACE_ID_MAX];
	if (memcmp(tid + h->tid_len, zero, MS_TRACE_ID_MAX - h->tid_len))
		return why_fail(why, whylen, "trace ID padding not zero");
	if (h->nrows < 1 || h->nrows > MS__BLOCK_ROWS_MAX)
		return why_fail(why, whylen, "%u rows", h->nrows);
	if (h->a_raw > MS__UNIT_MAX || h->b_raw > MS__UNIT_MAX)
		return why_fail(why, whylen, "unit of %u/%u bytes too large",
		                h->a_raw, h->b_raw);
	if (h->span_bytes != (uint64_t)h->a_raw + h->b_raw)
		return why_fail(why, whylen, "span bytes %llu != units",
		                (unsigned long long)h->span_bytes);
	if ((h->a_raw == 0) != (h->a_stored == 0) ||
	    (h->b_raw == 0) != (h->b_stored == 0) ||
	    h->a_stored > ZSTD_COMPRESSBOUND(h->a_raw) ||
	    h->b_stored > ZSTD_COMPRESSBOUND(h->b_raw))
		return why_fail(why, whylen,
		                "stored unit sizes %u/%u do not "
		                "fit raw sizes %u/%u",
		                h->a_stored, h->b_stored, h->a_raw, h->b_raw);
	if (h->a_raw < MS__A_COLS * 4 || h->b_raw < h->nrows)
		return why_fail(why, whylen, "units too small for %u rows",
		                h->nrows);
	if ((uint64_t)MS__BLOCK_HDR + h->a_stored + h->b_stored != len)
		return why_fail(why, whylen,
		                "block is %llu bytes, header says %llu",
		                (unsigned long long)len,
		                (unsigned long long)MS__BLOCK_HDR +
		                        h->a_stored + h->b_stored);
	if (h->min_ts > h->max_ts || h->max_end_ns < h->max_ts)
		return why_fail(why, whylen,
		                "time range min %lld max %lld "
		                "end %lld",
		                (long long)h->min_ts, (long long)h->max_ts,
		                (long long)h->max_end_ns);
	return true;
}

bool
ms__block_units_ok(const uint8_t *p, const ms__block_hdr *h, char *why,
                   size_t whylen)
{
	const uint8_t *a = p + MS__BLOCK_HDR, *b = a + h->a_stored;
	if (XXH3_64bits(a, h->a_stored) != h->a_xxh)
		return why_fail(why, whylen, "unit A checksum mismatch");
	if (XXH3_64bits(b, h->b_stored) != h->b_xxh)
		return why_fail(why, whylen, "unit B checksum mismatch");
	return true;
}

/* ---- open ---- */

static void
part_free(ms_part *p)
{
	if (!p)
		return;
	ms_mem_free(p->mem, p->sect, p->sect_len);
	ms_mem_free(p->mem, atomic_load(&p->bloom), p->bloom_len);
	ms_part_dicts_free(p->dicts);
	ms_mem_free(p->mem, p->dir, p->dir_size);
	ms_mem_free(p->mem, p, sizeof(*p));
}

void
ms_part_close(ms_part *p)
{
	part_free(p);
}

/* The sizes of the sections, as the footer gives them. */
struct sections {
	uint64_t data, index, bloom;
};

/* A part directory of format 1 or 2 (a `meta` file inside): name its
 * version, so the user learns the part is of an older build, not
 * damaged. */
static int
old_layout(ms_part *p, ms_errbuf *eb)
{
	char path[4096];
	uint8_t m[12];
	int fd = ms__path(path, sizeof(path), p->dir, "meta")
	                 ? open(path, O_RDONLY | O_CLOEXEC)
	                 : -1;
	bool old = fd >= 0 && ms_fs_pread_all(fd, m, sizeof(m), 0) == 0 &&
	           memcmp(m, "MSPMETA1", 8) == 0;
	if (fd >= 0)
		close(fd);
	if (old)
		return ms__part_fail(p, eb, MS_ERR_FORMAT, MS__F_FOOTER,
		                     "format version %u (a part directory), "
		                     "expected %u (one file); written by an "
		                     "older build",
		                     ms_le32(m + 8), MS_PART_FORMAT_VERSION);
	return ms__part_fail(p, eb, MS_ERR_FORMAT, MS__F_FOOTER,
	                     "a directory, not a part file");
}

/* Decode the footer's identity (magic, checksum, version, kind) and
 * fields into p->meta and *sz. */
static int
footer_decode(ms_part *p, const uint8_t *m, struct sections *sz,
              ms_errbuf *eb)
{
	const char *f = MS__F_FOOTER;
#define G32(x) ms_le32(m + offsetof(struct ms__footer_disk, x))
#define G64(x) ms_le64(m + offsetof(struct ms__footer_disk, x))
	if (memcmp(m, MS__FOOTER_MAGIC, 8) != 0)
		return ms__part_fail(p, eb, MS_ERR_FORMAT, f,
		                     "bad magic (not a part file, or one "
		                     "whose writing was cut short)");
	if (G64(footer_xxh) !=
	    XXH64(m, offsetof(struct ms__footer_disk, footer_xxh), 0))
		return ms__part_fail(p, eb, MS_ERR_CORRUPT, f,
		                     "checksum mismatch");
	if (G32(version) != MS_PART_FORMAT_VERSION)
		return ms__part_fail(p, eb, MS_ERR_FORMAT, f,
		                     "format version %u, expected %u",
		                     G32(version), MS_PART_FORMAT_VERSION);
	uint32_t kind = G32(kind);
	if (kind >= MS_KIND_COUNT || G32(flags) != 0 || G64(reserved) != 0)
		return ms__part_fail(p, eb, MS_ERR_FORMAT, f,
		                     "kind %u flags %u reserved %llu", kind,
		                     G32(flags),
		                     (unsigned long long)G64(reserved));
	p->kind = (enum ms_part_kind)kind;
	ms_part_meta *mt = &p->meta;
	mt->id = G64(id);
	mt->compressed_bytes = G64(compressed_bytes);
	mt->uncompressed_bytes = G64(uncompressed_bytes);
	mt->rows = G64(rows);
	mt->blocks = G64(blocks);
	mt->traces = G64(traces);
	mt->min_ts = (int64_t)G64(min_ts);
	mt->max_ts = (int64_t)G64(max_ts);
	mt->depth = G32(depth);
	mt->checksum = G64(checksum);
	sz->data = G64(data_bytes);
	sz->index = G64(index_bytes);
	sz->bloom = G64(bloom_bytes);
	ms_part_id_str(mt->id, p->name);
	/* The sections lie back to back, the footer last. */
	uint64_t io = G64(index_off), bo = G64(bloom_off), fo = G64(footer_off);
	if (io != sz->data || bo < io || bo - io != sz->index || fo < bo ||
	    fo - bo != sz->bloom || fo > UINT64_MAX - MS__FOOTER_SIZE ||
	    fo + MS__FOOTER_SIZE != mt->compressed_bytes)
		return ms__part_fail(p, eb, MS_ERR_CORRUPT, f,
		                     "sections at %llu/%llu/%llu do not lie "
		                     "back to back in %llu bytes",
		                     (unsigned long long)io,
		                     (unsigned long long)bo,
		                     (unsigned long long)fo,
		                     (unsigned long long)mt->compressed_bytes);
#undef G32
#undef G64
	return 0;
}

/* The file name, when it is an ID (optionally followed by ".<kind>"),
 * must be this part's. */
static int
footer_check_name(ms_part *p, ms_errbuf *eb)
{
	const char *base = strrchr(p->dir, '/');
	base = base ? base + 1 : p->dir;
	char hex[17];
	uint64_t id;
	if (strnlen(base, 17) < 16)
		return 0;
	memcpy(hex, base, 16);
	hex[16] = '\0';
	if (!ms_part_id_parse(hex, &id) || (base[16] && base[16] != '.'))
		return 0;
	if (id != p->meta.id)
		return ms__part_fail(p, eb, MS_ERR_CORRUPT, MS__F_FOOTER,
		                     "records ID %s, file name says %s",
		                     p->name, base);
	int k = base[16] ? ms_part_kind_parse(base + 17) : -1;
	if (k >= 0 && k != (int)p->kind)
		return ms__part_fail(p, eb, MS_ERR_CORRUPT, MS__F_FOOTER,
		                     "records kind %s, file name says %s",
		                     ms_part_kind_name(p->kind), base);
	return 0;
}

/* The footer's counts and time range agree with each other. */
static int
footer_check_counts(ms_part *p, const struct sections *sz, ms_errbuf *eb)
{
	const ms_part_meta *mt = &p->meta;
	const char *f = MS__F_FOOTER;
	if (mt->min_ts > mt->max_ts)
		return ms__part_fail(p, eb, MS_ERR_CORRUPT, f,
		                     "min timestamp %lld > max %lld",
		                     (long long)mt->min_ts,
		                     (long long)mt->max_ts);
	bool core = p->kind == MS_KIND_CORE;
	if (mt->blocks > mt->rows || (mt->rows && !mt->blocks) ||
	    (core &&
	     (mt->traces > mt->blocks || (mt->blocks && !mt->traces))) ||
	    (!core && mt->traces != 0))
		return ms__part_fail(p, eb, MS_ERR_CORRUPT, f,
		                     "inconsistent counts: %llu rows, %llu "
		                     "blocks, %llu traces",
		                     (unsigned long long)mt->rows,
		                     (unsigned long long)mt->blocks,
		                     (unsigned long long)mt->traces);
	if (mt->rows == 0 &&
	    (mt->min_ts || mt->max_ts || sz->data || mt->uncompressed_bytes))
		return ms__part_fail(p, eb, MS_ERR_CORRUPT, f,
		                     "an empty part with a time range or data");
	return 0;
}

/* The sections' sizes fit the counts; sets p->entry_size. */
static int
footer_check_sizes(ms_part *p, const struct sections *sz, ms_errbuf *eb)
{
	const ms_part_meta *mt = &p->meta;
	const char *f = MS__F_FOOTER;
	bool core = p->kind == MS_KIND_CORE;
	uint64_t esz = core ? sizeof(struct ms__index_entry)
	                    : sizeof(struct ms__sidx_entry);
	uint64_t ib;
	if (__builtin_mul_overflow(mt->blocks, esz, &ib) ||
	    __builtin_add_overflow(ib, MS__INDEX_HDR + 8, &ib) ||
	    ib != sz->index)
		return ms__part_fail(p, eb, MS_ERR_CORRUPT, f,
		                     "index size %llu does not fit %llu blocks",
		                     (unsigned long long)sz->index,
		                     (unsigned long long)mt->blocks);
	uint64_t want_bloom =
	        core ? MS__BLOOM_HDR + ms__bloom_nbits(mt->traces) / 8 + 8 : 0;
	if (sz->bloom != want_bloom ||
	    (core && want_bloom == MS__BLOOM_HDR + 8))
		return ms__part_fail(p, eb, MS_ERR_CORRUPT, f,
		                     "bloom size %llu, expected %llu%s",
		                     (unsigned long long)sz->bloom,
		                     (unsigned long long)want_bloom,
		                     core ? "" : " (index parts have none)");
	if (mt->blocks &&
	    sz->data / mt->blocks < (core ? MS__BLOCK_HDR : MS__CHUNK_HDR))
		return ms__part_fail(p, eb, MS_ERR_CORRUPT, f,
		                     "%llu data bytes cannot hold %llu blocks",
		                     (unsigned long long)sz->data,
		                     (unsigned long long)mt->blocks);
	p->entry_size = esz;
	return 0;
}

static int scan_core_sections(ms_part *p, int fd, const struct sections *sz,
                              const uint8_t *pre, ms_errbuf *eb);

/* Open reads this many bytes from the end of a part file at once: the
 * footer and, for all but large parts, the index and bloom sections that
 * lie just before it, so that an open costs one read, not two (a day
 * opens tens of thousands of parts: at publication, as merge inputs and
 * outputs, in checks). */
#define TAIL_READ 4096u

/* Read the footer at the end of the open file fd of `size` bytes, check
 * it, then check a core part's index and bloom sections (design 8) or
 * read an index part's index section into p->sect. */
static int
read_footer_and_sections(ms_part *p, int fd, uint64_t size, ms_errbuf *eb)
{
	uint8_t tail[TAIL_READ];
	if (size < MS__FOOTER_SIZE)
		return ms__part_fail(p, eb, MS_ERR_CORRUPT, MS__F_FOOTER,
		                     "file of %llu bytes has no footer (not a "
		                     "part, or one whose writing was cut "
		                     "short)",
		                     (unsigned long long)size);
	size_t t = size < TAIL_READ ? (size_t)size : TAIL_READ;
	int rc = ms_fs_pread_all(fd, tail, t, size - t);
	if (rc)
		return ms__part_fail(p, eb, rc, MS__F_FOOTER, "read: %s",
		                     rc == MS_ERR_CORRUPT ? "file shrank"
		                                          : strerror(errno));
	const uint8_t *m = tail + t - MS__FOOTER_SIZE;
	struct sections sz = { 0, 0, 0 };
	if ((rc = footer_decode(p, m, &sz, eb)) ||
	    (rc = footer_check_name(p, eb)) ||
	    (rc = footer_check_counts(p, &sz, eb)) ||
	    (rc = footer_check_sizes(p, &sz, eb)))
		return rc;
	if (p->meta.compressed_bytes != size)
		return ms__part_fail(p, eb, MS_ERR_CORRUPT, MS__F_FOOTER,
		                     "file is %llu bytes, footer says %llu",
		                     (unsigned long long)size,
		                     (unsigned long long)p->meta.compressed_bytes);
	p->data_bytes = sz.data;
	p->file_bytes = size;
	/* The sections end where the footer starts (footer_decode checked
	 * that they lie back to back, and the size that the footer ends
	 * the file): in the tail read when they fit before the footer. */
	uint64_t n = sz.index + sz.bloom;
	const uint8_t *pre = n <= t - MS__FOOTER_SIZE ? m - n : NULL;
	if (p->kind == MS_KIND_CORE)
		return scan_core_sections(p, fd, &sz, pre, eb);
	if (n > SIZE_MAX / 2)
		return ms__part_fail(p, eb, MS_ERR_RANGE, MS__F_INDEX,
		                     "too large");
	p->sect = ms_mem_alloc(p->mem, (size_t)n);
	if (!p->sect)
		return ms__part_fail(p, eb, MS_ERR_NOMEM, MS__F_INDEX,
		                     "out of memory for %llu bytes",
		                     (unsigned long long)n);
	p->sect_len = (size_t)n;
	if (pre)
		memcpy(p->sect, pre, p->sect_len);
	else
		rc = ms_fs_pread_all(fd, p->sect, p->sect_len, sz.data);
	if (rc)
		return ms__part_fail(p, eb, rc, MS__F_INDEX, "read: %s",
		                     rc == MS_ERR_CORRUPT ? "file shrank"
		                                          : strerror(errno));
	p->index = p->sect;
	p->index_len = (size_t)sz.index;
	return 0;
}

/* The index section's magic, checksum (sum_ok: its XXH64 matched) and
 * header x (its first MS__INDEX_HDR bytes), checked in this order. */
static int
index_head_check(ms_part *p, const uint8_t *x, bool sum_ok, ms_errbuf *eb)
{
	const char *f = MS__F_INDEX;
	if (memcmp(x, MS__INDEX_MAGIC, 8) != 0)
		return ms__part_fail(p, eb, MS_ERR_FORMAT, f, "bad magic");
	if (!sum_ok)
		return ms__part_fail(p, eb, MS_ERR_CORRUPT, f,
		                     "checksum mismatch");
	if (ms_le32(x + offsetof(struct ms__index_hdr, version)) !=
	            MS_PART_FORMAT_VERSION ||
	    ms_le32(x + offsetof(struct ms__index_hdr, kind)) !=
	            (uint32_t)p->kind ||
	    ms_le64(x + offsetof(struct ms__index_hdr, count)) !=
	            p->meta.blocks ||
	    ms_le64(x + offsetof(struct ms__index_hdr, entry_size)) !=
	            p->entry_size)
		return ms__part_fail(p, eb, MS_ERR_CORRUPT, f,
		                     "header does not match the footer");
	return 0;
}

/* An index part's index section, read at open into p->index. */
static int
check_index(ms_part *p, ms_errbuf *eb)
{
	const uint8_t *x = p->index;
	size_t n = p->index_len;
	int rc = index_head_check(p, x, ms_le64(x + n - 8) == XXH64(x, n - 8, 0),
	                          eb);
	return rc ? rc : ms__sidx_check_index(p, eb);
}

/* A core index entry (offset o, st stored bytes, nr rows) that does not
 * start at off, right after the previous one, or whose sizes are out of
 * range. */
static bool
core_entry_bad(const ms_part *p, uint64_t off, uint64_t o, uint32_t st,
               uint32_t nr)
{
	return o != off || st < MS__BLOCK_HDR || nr < 1 ||
	       nr > MS__BLOCK_ROWS_MAX || st > p->data_bytes - off;
}

int
ms__part_check_cover(const ms_part *p, uint64_t off, uint64_t rows,
                     ms_errbuf *eb)
{
	if (off != p->data_bytes || rows != p->meta.rows)
		return ms__part_fail(p, eb, MS_ERR_CORRUPT, MS__F_INDEX,
		                     "entries cover %llu bytes and %llu rows, "
		                     "footer says %llu and %llu",
		                     (unsigned long long)off,
		                     (unsigned long long)rows,
		                     (unsigned long long)p->data_bytes,
		                     (unsigned long long)p->meta.rows);
	return 0;
}

/* The bloom section's magic, checksum (sum_ok: its XXH64 matched) and
 * header b (its first MS__BLOOM_HDR bytes) for a section of n bytes,
 * checked in this order; *nbits: the header's. */
static int
bloom_head_check(const ms_part *p, const uint8_t *b, size_t n, bool sum_ok,
                 uint64_t *nbits, ms_errbuf *eb)
{
	const char *f = MS__F_BLOOM;
	if (memcmp(b, MS__BLOOM_MAGIC, 8) != 0)
		return ms__part_fail(p, eb, MS_ERR_FORMAT, f, "bad magic");
	if (!sum_ok)
		return ms__part_fail(p, eb, MS_ERR_CORRUPT, f,
		                     "checksum mismatch");
	*nbits = ms_le64(b + offsetof(struct ms__bloom_hdr, nbits));
	if (ms_le32(b + offsetof(struct ms__bloom_hdr, version)) !=
	            MS_PART_FORMAT_VERSION ||
	    ms_le32(b + offsetof(struct ms__bloom_hdr, k)) != MS_BLOOM_K ||
	    ms_le64(b + offsetof(struct ms__bloom_hdr, items)) !=
	            p->meta.traces ||
	    *nbits != ms__bloom_nbits(p->meta.traces) ||
	    *nbits / 8 != n - MS__BLOOM_HDR - 8)
		return ms__part_fail(p, eb, MS_ERR_CORRUPT, f,
		                     "header does not match the footer");
	return 0;
}

/* A core part's sections are read at open through a buffer of at most
 * this many bytes (a multiple of the entry size, 16). */
#define SECT_WINDOW (64u << 10)

/* One section being checked as its bytes go past, in any pieces. */
typedef struct sect_scan {
	uint64_t len;               /* the section's bytes */
	XXH64_state_t x;            /* over all but its last 8 bytes */
	uint8_t head[MS__INDEX_HDR]; /* its first bytes (= MS__BLOOM_HDR) */
	uint8_t sum[8];             /* its last 8 bytes: the XXH64 */
	bool entries;               /* a core index: check its entries */
	uint64_t off, rows;         /* covered by the entries before bad */
	bool bad;                   /* entry bad_i is out of order */
	uint64_t bad_i, bad_o;
	uint32_t bad_st, bad_nr;
} sect_scan;

/* Bytes [pos, pos + n) of the section. Entries never straddle two pieces:
 * a core index starts the range read and pieces are SECT_WINDOW long
 * (or one piece holds both sections). */
static void
sect_feed(const ms_part *p, sect_scan *s, const uint8_t *b, uint64_t pos,
          size_t n)
{
	uint64_t body = s->len - 8, end = pos + n;
	if (pos < body)
		XXH64_update(&s->x, b, (size_t)((end < body ? end : body) - pos));
	if (pos < MS__INDEX_HDR)
		memcpy(s->head + pos, b,
		       (size_t)((end < MS__INDEX_HDR ? end : MS__INDEX_HDR) -
		                pos));
	for (uint64_t q = pos > body ? pos : body; q < end; q++)
		s->sum[q - body] = b[q - pos];
	if (!s->entries)
		return;
	const uint64_t esz = sizeof(struct ms__index_entry);
	for (uint64_t q = pos < MS__INDEX_HDR ? MS__INDEX_HDR : pos;
	     !s->bad && q + esz <= end && q + esz <= body; q += esz) {
		const uint8_t *e = b + (q - pos);
		uint64_t o = ms_le64(e);
		uint32_t st = ms_le32(e + 8), nr = ms_le32(e + 12);
		if (core_entry_bad(p, s->off, o, st, nr)) {
			s->bad = true;
			s->bad_i = (q - MS__INDEX_HDR) / esz;
			s->bad_o = o;
			s->bad_st = st;
			s->bad_nr = nr;
			return;
		}
		s->off += st;
		s->rows += nr;
	}
}

/* Check a core part's index and bloom sections (design 8), reading them
 * from fd through a bounded buffer (or taking them from pre, which holds
 * both when not NULL), and report the first failure in the order a check
 * of both sections held in memory would: the index's magic, checksum,
 * header, entries and cover, then the bloom's magic, checksum and
 * header. */
static int
scan_core_sections(ms_part *p, int fd, const struct sections *sz,
                   const uint8_t *pre, ms_errbuf *eb)
{
	uint64_t total = sz->index + sz->bloom;
	size_t cap = total < SECT_WINDOW ? (size_t)total : SECT_WINDOW;
	uint8_t *buf = pre ? NULL : ms_mem_alloc(p->mem, cap);
	if (!pre && !buf)
		return ms__part_fail(p, eb, MS_ERR_NOMEM, MS__F_INDEX,
		                     "out of memory for %zu bytes", cap);
	sect_scan ix = { .len = sz->index, .entries = true };
	sect_scan bl = { .len = sz->bloom };
	XXH64_reset(&ix.x, 0);
	XXH64_reset(&bl.x, 0);
	int rc = 0;
	for (uint64_t pos = 0; pos < total && rc == 0;) {
		size_t n = total - pos < cap ? (size_t)(total - pos) : cap;
		if (pre)
			n = (size_t)total; /* one piece: all of it */
		else
			rc = ms_fs_pread_all(fd, buf, n, sz->data + pos);
		if (rc)
			break;
		const uint8_t *b = pre ? pre : buf;
		if (pos < ix.len)
			sect_feed(
			        p, &ix, b, pos,
			        (size_t)(ix.len - pos < n ? ix.len - pos : n));
		if (pos + n > ix.len) {
			uint64_t from = pos > ix.len ? pos : ix.len;
			sect_feed(p, &bl, b + (from - pos), from - ix.len,
			          (size_t)(pos + n - from));
		}
		pos += n;
	}
	if (buf)
		ms_mem_free(p->mem, buf, cap);
	if (rc)
		return ms__part_fail(p, eb, rc, MS__F_INDEX, "read: %s",
		                     rc == MS_ERR_CORRUPT ? "file shrank"
		                                          : strerror(errno));
	p->index_len = (size_t)sz->index;
	p->bloom_len = (size_t)sz->bloom;
	rc = index_head_check(p, ix.head,
	                      XXH64_digest(&ix.x) == ms_le64(ix.sum), eb);
	if (rc)
		return rc;
	if (ix.bad)
		return ms__part_fail(p, eb, MS_ERR_CORRUPT, MS__F_INDEX,
		                     "entry %llu: offset %llu, %u bytes, %u "
		                     "rows",
		                     (unsigned long long)ix.bad_i,
		                     (unsigned long long)ix.bad_o, ix.bad_st,
		                     ix.bad_nr);
	if ((rc = ms__part_check_cover(p, ix.off, ix.rows, eb)))
		return rc;
	return bloom_head_check(p, bl.head, p->bloom_len,
	                        XXH64_digest(&bl.x) == ms_le64(bl.sum),
	                        &p->nbits, eb);
}

/* Open the file at p->dir and read what ms_part_open keeps of it. */
static int
read_part_file(ms_part *p, ms_errbuf *eb)
{
	int fd = open(p->dir, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		return ms__part_fail(
		        p, eb,
		        e == ENOENT ? MS_ERR_NOTFOUND : ms_err_from_errno(e),
		        "file", "%s", e == ENOENT ? "missing" : strerror(e));
	}
	struct stat st;
	int rc;
	if (fstat(fd, &st) != 0)
		rc = ms__part_fail(p, eb, ms_err_from_errno(errno), "file",
		                   "stat: %s", strerror(errno));
	else if (S_ISDIR(st.st_mode))
		rc = old_layout(p, eb);
	else if (!S_ISREG(st.st_mode))
		rc = ms__part_fail(p, eb, MS_ERR_FORMAT, "file",
		                   "not a regular file");
	else
		rc = read_footer_and_sections(p, fd, (uint64_t)st.st_size, eb);
	close(fd);
	return rc;
}

int
ms_part_open(ms_part **out, const char *path, ms_mem *mem, ms_errbuf *eb)
{
	return ms_part_open_dicts(out, path, NULL, mem, eb);
}

int
ms_part_open_dicts(ms_part **out, const char *path, const ms_part_dicts *dicts,
                   ms_mem *mem, ms_errbuf *eb)
{
	*out = NULL;
	ms_part *p = ms_mem_calloc(mem, 1, sizeof(*p));
	if (!p)
		return ms_fail(eb, MS_ERR_NOMEM,
		               "part %s: open: out of memory for its handle "
		               "(%zu bytes)",
		               path, sizeof(*p));
	p->mem = mem;
	p->dir_size = strlen(path) + 1;
	p->dir = ms_mem_dup(mem, path, p->dir_size);
	if (!p->dir) {
		size_t want = p->dir_size;
		ms_mem_free(mem, p, sizeof(*p));
		return ms_fail(eb, MS_ERR_NOMEM,
		               "part %s: open: out of memory for its path "
		               "(%zu bytes)",
		               path, want);
	}
	p->dicts = ms__dicts_ref(dicts);
	int rc = read_part_file(p, eb);
	if (rc == 0 && p->kind != MS_KIND_CORE)
		rc = check_index(p, eb);
	if (rc) {
		part_free(p);
		return rc;
	}
	*out = p;
	return 0;
}

const ms_part_meta *
ms_part_get_meta(const ms_part *p)
{
	return &p->meta;
}

const char *
ms_part_dir(const ms_part *p)
{
	return p->dir;
}

enum ms_part_kind
ms_part_kind_of(const ms_part *p)
{
	return p->kind;
}

/* Read a core part's bloom section again and check it as open did into
 * *out: 0, MS_ERR_NOMEM, or another error (the file can no longer be
 * read, or its bytes changed since open). */
static int
bloom_load(const ms_part *p, uint8_t **out)
{
	size_t n = p->bloom_len;
	uint8_t *b = ms_mem_alloc(p->mem, n);
	if (!(*out = b))
		return MS_ERR_NOMEM;
	int fd = open(p->dir, O_RDONLY | O_CLOEXEC);
	int rc = fd < 0 ? MS_ERR_IO
	                : ms_fs_pread_all(fd, b, n,
	                                  p->data_bytes + p->index_len);
	if (fd >= 0)
		close(fd);
	uint64_t nbits = 0;
	if (rc == 0)
		rc = bloom_head_check(p, b, n,
		                      ms_le64(b + n - 8) == XXH64(b, n - 8, 0),
		                      &nbits, NULL);
	if (rc == 0 && nbits != p->nbits)
		rc = MS_ERR_CORRUPT;
	if (rc) {
		ms_mem_free(p->mem, b, n);
		*out = NULL;
	}
	return rc;
}

/* The bloom section of a core part, read at the first call (design 8):
 * set once, by whichever thread gets there first; NULL when it could not
 * be loaded (for good, unless memory ran out: then a later call tries
 * again). */
static const uint8_t *
bloom_get(const ms_part *cp)
{
	/* The loaded section is a cache of what open checked: filling it
	 * in does not change the part. */
	ms_part *p = (ms_part *)(uintptr_t)cp;
	uint8_t *b = atomic_load_explicit(&p->bloom, memory_order_acquire);
	if (b || atomic_load_explicit(&p->bloom_bad, memory_order_relaxed))
		return b;
	int rc = bloom_load(p, &b);
	if (rc) {
		if (rc != MS_ERR_NOMEM)
			atomic_store_explicit(&p->bloom_bad, true,
			                      memory_order_relaxed);
		return NULL;
	}
	uint8_t *none = NULL;
	if (!atomic_compare_exchange_strong_explicit(
	            &p->bloom, &none, b, memory_order_acq_rel,
	            memory_order_acquire)) {
		ms_mem_free(p->mem, b, p->bloom_len);
		return none;
	}
	return b;
}

bool
ms_part_may_contain(const ms_part *p, const uint8_t *tid, uint32_t len)
{
	if (p->kind != MS_KIND_CORE)
		return true;
	if (p->meta.traces == 0)
		return false;
	/* A section that cannot be loaded again filters nothing: "may
	 * contain" is always a safe answer. */
	const uint8_t *b = bloom_get(p);
	if (!b)
		return true;
	uint64_t h[2];
	ms__bloom_hash(tid, len, h);
	return ms__bloom_test(b + MS__BLOOM_HDR, p->nbits, h);
}

/* ---- read window ---- */

/* keep_fd: keep the descriptor open when the file is mapped too (a core
 * iterator reads its index entries with it). */
static int
win_open(ms__win *w, const ms_part *p, ms_mem *mem, ms_io *io, bool keep_fd,
         ms_errbuf *eb)
{
	memset(w, 0, sizeof(*w));
	w->fd = -1;
	w->mem = mem;
	w->io = io;
	w->size = p->data_bytes;
	w->keep_from = UINT64_MAX;
	w->fd = open(p->dir, O_RDONLY | O_CLOEXEC);
	if (w->fd < 0) {
		int e = errno;
		return ms__part_fail(p, eb,
		                     e == ENOENT ? MS_ERR_NOTFOUND
		                                 : ms_err_from_errno(e),
		                     MS__F_DATA, "%s",
		                     e == ENOENT ? "missing" : strerror(e));
	}
	/* The size was checked when the part was opened; check it again on
	 * this descriptor: a mapping must never reach past the file's end. */
	struct stat st;
	if (fstat(w->fd, &st) != 0) {
		int e = errno;
		return ms__part_fail(p, eb, ms_err_from_errno(e), MS__F_DATA,
		                     "%s", strerror(e));
	}
	if ((uint64_t)st.st_size != p->file_bytes)
		return ms__part_fail(p, eb, MS_ERR_CORRUPT, MS__F_DATA,
		                     "file is %llu bytes, footer says %llu",
		                     (unsigned long long)st.st_size,
		                     (unsigned long long)p->file_bytes);
	if (w->size <= MS__MAP_MIN || w->size > SIZE_MAX || p->no_map)
		return 0;
	/* Not populated at once: a finalize maps every part of the day, and
	 * a populated mapping would hold all of it resident (as shared
	 * memory on a tmpfs). ms__win_get faults it in ahead of the reader,
	 * a stretch per call (cheaper than page by page), and releases what
	 * lies far behind. */
	void *m = mmap(NULL, (size_t)w->size, PROT_READ, MAP_SHARED, w->fd, 0);
	if (m == MAP_FAILED)
		return 0; /* read through the window instead */
	w->map = m;
	if (!keep_fd) {
		close(w->fd);
		w->fd = -1;
	}
	return 0;
}

int
ms__win_open(ms__win *w, const ms_part *p, ms_mem *mem, ms_io *io,
             ms_errbuf *eb)
{
	return win_open(w, p, mem, io, false, eb);
}

void
ms__win_share(ms__win *w, const ms__win *from)
{
	memset(w, 0, sizeof(*w));
	w->fd = -1;
	w->mem = from->mem;
	w->io = from->io;
	w->map = from->map;
	w->borrowed = true;
	w->size = from->size;
	w->keep_from = UINT64_MAX;
}

/* Mapped: count the bytes from off to the end of the stretch a window
 * read would have fetched, once each, so bytes_read means what it means
 * for a window read (and io is touched once per window, not per block). */
static void
win_count(ms__win *w, uint64_t off, size_t n)
{
	uint64_t end = off + n;
	if (end <= w->counted)
		return;
	size_t window = w->window ? w->window : MS__READ_WINDOW;
	uint64_t from = off > w->counted ? off : w->counted;
	uint64_t upto = end - from < window ? from + window : end;
	if (upto > w->size)
		upto = w->size;
	w->counted = upto;
	w->bytes_read += upto - from;
	if (w->io)
		atomic_fetch_add(&w->io->bytes_read, upto - from);
}

/* Mapped: keep the resident part of the mapping near [off, off + n). */
static void
win_residency(ms__win *w, uint64_t off, size_t n)
{
	uint64_t page = 4096, end = off + n;
	if (end > w->populated) {
		uint64_t from = w->populated & ~(page - 1);
		uint64_t upto = end + MS__MAP_AHEAD;
		if (upto > w->size)
			upto = w->size;
#ifdef MADV_POPULATE_READ
		/* Best effort: an older kernel faults page by page. */
		(void)madvise((void *)(uintptr_t)(w->map + from),
		              (size_t)(upto - from), MADV_POPULATE_READ);
#endif
		w->populated = upto;
	}
	/* A trailing re-read (borrowed mapping) releases behind itself as
	 * well: the lead is past those pages; pages the lead released ahead
	 * of the trailing one are faulted in again from the page cache.
	 * Never the page holding keep_from or any after it: a caller still
	 * points at those bytes (ms_part_iter_keep_from). */
	if (off > w->released + MS__MAP_KEEP + MS__MAP_STEP) {
		uint64_t upto = (off - MS__MAP_KEEP) & ~(page - 1);
		uint64_t from = w->released & ~(page - 1);
		if (upto > (w->keep_from & ~(page - 1)))
			upto = w->keep_from & ~(page - 1);
		if (upto > from) {
			(void)madvise((void *)(uintptr_t)(w->map + from),
			              (size_t)(upto - from), MADV_DONTNEED);
			w->released = upto;
		}
	}
}

const char *
ms__win_why(const ms__win *w, int rc, char *buf, size_t n)
{
	if (rc == MS_ERR_CORRUPT)
		return "file is short";
	if (rc != MS_ERR_NOMEM)
		return ms_strerror(rc);
	snprintf(buf, n, "out of memory for a read window (%zu bytes)",
	         w->want);
	return buf;
}

int
ms__win_get(ms__win *w, uint64_t off, size_t n, const uint8_t **out)
{
	if (w->map) {
		if (off > w->size || n > w->size - off)
			return MS_ERR_CORRUPT;
		win_count(w, off, n);
		win_residency(w, off, n);
		*out = w->map + off;
		return 0;
	}
	if (off >= w->base && off - w->base <= w->len &&
	    n <= w->len - (off - w->base)) {
		*out = w->buf + (off - w->base);
		return 0;
	}
	if (off > w->size || n > w->size - off)
		return MS_ERR_CORRUPT;
	size_t window = w->window ? w->window : MS__READ_WINDOW;
	uint64_t want = n > window ? n : window;
	if (want > w->size - off)
		want = w->size - off;
	w->want = (size_t)want;
	if (want > w->cap) {
		ms_mem_free(w->mem, w->buf, w->cap);
		w->buf = NULL;
		w->cap = 0;
		w->len = 0;
		w->buf = ms_mem_alloc(w->mem, (size_t)want);
		if (!w->buf)
			return MS_ERR_NOMEM;
		w->cap = (size_t)want;
	}
	w->len = 0;
	int rc = ms_fs_pread_all(w->fd, w->buf, (size_t)want, off);
	if (rc)
		return rc;
	w->base = off;
	w->len = (size_t)want;
	w->bytes_read += want;
	if (w->io)
		atomic_fetch_add(&w->io->bytes_read, want);
	*out = w->buf;
	return 0;
}

void
ms__win_close(ms__win *w)
{
	if (w->map && !w->borrowed)
		munmap((void *)(uintptr_t)w->map, (size_t)w->size);
	w->map = NULL;
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
	ms_mem_free(w->mem, w->buf, w->cap);
	w->buf = NULL;
	w->cap = w->len = 0;
}

/* ---- iterator ---- */

/* Index entries an iterator reads from the file at a time (design 8). */
#define ITER_ENTS 256u

struct ms_part_iter {
	const ms_part *p;
	ms_mem *mem;
	ms__win win;
	ZSTD_DCtx *dctx;
	bool dctx_kept;       /* dctx is a thread's kept one (not owned) */
	ms_part_iter *zowner; /* decompress with its dctx (not owned) */
	uint64_t next;        /* index of the next block */
	bool cur_ok, a_ok, b_ok, failed, done;
	bool reread;      /* design 5 */
	bool trusted;     /* design 6: the current block was checked by lead */
	bool defer_units; /* design 7 */
	bool a_unchecked, b_unchecked; /* design 1 */
	const ms_part_iter *lead;      /* re-read: the iterator it trails */
	uint64_t checked; /* not re-read: blocks returned and checked */
	const uint8_t *cur;
	ms__block_hdr h;
	ms_block_info info;
	uint32_t acol[MS__A_COLS]; /* column offsets in ua */
	ms_buf ua, ub;
	ms_row *rows;
	size_t rows_cap;
	const char **tagv;
	size_t tagv_cap;
	XXH64_state_t content;
	uint64_t rows_seen, span_seen, traces_seen;
	uint8_t last[MS_TRACE_ID_MAX];
	uint32_t last_len;
	/* Index entries [ents_from, ents_from + ents_n), read with efd (the
	 * window's descriptor, or the lead's when the mapping is shared);
	 * next_off: where block `next` starts (design 8). */
	int efd;
	uint64_t ents_from;
	uint32_t ents_n;
	uint64_t next_off;
	uint8_t ents[ITER_ENTS * sizeof(struct ms__index_entry)];
};

/* ---- iterator modes (design 5-7), checked in debug builds ---- */

/*
 * An iterator is in one of three modes, set when it is opened; the only
 * change is check -> defer, before the first block. What each mode checks
 * when next() returns a block, and what it leaves for later:
 *
 *   mode    opened by / set by         units at next()   order, totals
 *   check   ms_part_iter_open[_window] yes               yes (checked)
 *   defer   ms_part_iter_defer_units   no: when handed   yes (checked)
 *   reread  ms_part_iter_open_reread   no: when handed   its lead's
 *                                      (design 6: trusted blocks)
 *
 * iter_check holds an iterator to its mode's row at every next().
 */
enum iter_mode { ITER_CHECK, ITER_DEFER, ITER_REREAD, ITER_MODE_COUNT };

static const struct {
	const char *name;
	bool lead;          /* trails a lead iterator */
	bool units_at_next; /* a returned block's units are checked */
	bool counts;        /* order, content and totals are its own */
} iter_modes[ITER_MODE_COUNT] = {
	[ITER_CHECK] = { "check", false, true, true },
	[ITER_DEFER] = { "defer", false, false, true },
	[ITER_REREAD] = { "reread", true, false, false },
};

static enum iter_mode
iter_mode(const ms_part_iter *it)
{
	return it->reread        ? ITER_REREAD
	       : it->defer_units ? ITER_DEFER
	                         : ITER_CHECK;
}

const char *
ms__part_iter_mode_name(const ms_part_iter *it)
{
	return iter_modes[iter_mode(it)].name;
}

#ifdef MS_DEBUG_INVARIANTS
static void
iter_check(const ms_part_iter *it)
{
	enum iter_mode m = iter_mode(it);
	const char *mn = iter_modes[m].name;
	unsigned long long at = (unsigned long long)it->next;
	MS_INVARIANT(!(it->reread && it->defer_units), "%s iterator", mn);
	MS_INVARIANT(iter_modes[m].lead == (it->lead != NULL),
	             "%s iterator at block %llu", mn, at);
	MS_INVARIANT(!it->trusted || iter_modes[m].lead,
	             "%s iterator trusts block %llu", mn, at);
	MS_INVARIANT(!it->cur_ok || !iter_modes[m].units_at_next ||
	                     (!it->a_unchecked && !it->b_unchecked),
	             "%s iterator: block %llu has unchecked units", mn, at);
	MS_INVARIANT(it->failed ||
	                     it->checked ==
	                             (iter_modes[m].counts ? it->next : 0),
	             "%s iterator: %llu blocks checked of %llu returned", mn,
	             (unsigned long long)it->checked, at);
	MS_INVARIANT(!it->done ||
	                     (!it->cur_ok && it->next >= it->p->meta.blocks),
	             "%s iterator done at block %llu", mn, at);
}
#define ITER_CHECK(it) iter_check(it)
#else
#define ITER_CHECK(it) ((void)(it))
#endif

static int iter_open(ms_part_iter **out, const ms_part *p, ms_mem *mem,
                     ms_io *io, size_t window, const ms_part_iter *lead,
                     ms_errbuf *eb);

int
ms_part_iter_open_reread(ms_part_iter **out, const ms_part_iter *lead,
                         size_t window, ms_errbuf *eb)
{
	if (window == 0)
		window = MS__READ_WINDOW;
	int rc = iter_open(out, lead->p, lead->mem, lead->win.io, window, lead,
	                   eb);
	if (rc == 0) {
		(*out)->reread = true;
		(*out)->lead = lead;
	}
	return rc;
}

int
ms_part_iter_open(ms_part_iter **out, const ms_part *p, ms_mem *mem, ms_io *io,
                  ms_errbuf *eb)
{
	return iter_open(out, p, mem, io, 0, NULL, eb);
}

int
ms_part_iter_open_window(ms_part_iter **out, const ms_part *p, ms_mem *mem,
                         ms_io *io, size_t window, ms_errbuf *eb)
{
	if (window == 0)
		window = MS__READ_WINDOW;
	return iter_open(out, p, mem, io, window, NULL, eb);
}

/* window 0: the default window and a decompression context made now;
 * else that window and a context made at the first decode. With a lead
 * whose file is mapped, its mapping is shared instead of mapping or
 * reading the file again. */
static int
iter_open(ms_part_iter **out, const ms_part *p, ms_mem *mem, ms_io *io,
          size_t window, const ms_part_iter *lead, ms_errbuf *eb)
{
	*out = NULL;
	if (p->kind != MS_KIND_CORE)
		return ms__part_fail(p, eb, MS_ERR_INVAL, MS__F_DATA,
		                     "a %s part has no blocks to iterate",
		                     ms_part_kind_name(p->kind));
	ms_part_iter *it = ms_mem_calloc(mem, 1, sizeof(*it));
	if (!it)
		return ms__part_fail(p, eb, MS_ERR_NOMEM, MS__F_DATA,
		                     "out of memory for an iterator");
	it->p = p;
	it->mem = mem;
	ms_buf_init(&it->ua, mem, MS__UNIT_MAX + MS__UNIT_PAD);
	ms_buf_init(&it->ub, mem, MS__UNIT_MAX + MS__UNIT_PAD);
	XXH64_reset(&it->content, 0);
	int rc = lead && lead->win.map
	                 ? (ms__win_share(&it->win, &lead->win), 0)
	                 : win_open(&it->win, p, mem, io, true, eb);
	if (rc)
		goto fail;
	it->efd = it->win.fd >= 0 ? it->win.fd : lead->efd;
	it->win.window = window;
	if (window)
		goto done;
	it->dctx = ZSTD_createDCtx_advanced(ms__zstd_mem(mem));
	if (!it->dctx) {
		rc = ms__part_fail(p, eb, MS_ERR_NOMEM, MS__F_DATA,
		                   "out of memory for a zstd context");
		goto fail;
	}
done:
	*out = it;
	return 0;
fail:
	ms_part_iter_close(it);
	return rc;
}

void
ms_part_iter_close(ms_part_iter *it)
{
	if (!it)
		return;
	ms__win_close(&it->win);
	if (!it->dctx_kept)
		ZSTD_freeDCtx(it->dctx);
	ms_buf_release(&it->ua);
	ms_buf_release(&it->ub);
	ms_mem_free(it->mem, it->rows, it->rows_cap * sizeof(ms_row));
	ms_mem_free(it->mem, it->tagv, it->tagv_cap * sizeof(char *));
	ms_mem_free(it->mem, it, sizeof(*it));
}

void
ms_part_iter_defer_units(ms_part_iter *it)
{
	if (it && !it->reread && it->next == 0)
		it->defer_units = true;
}

void
ms_part_iter_share_zstd(ms_part_iter *it, ms_part_iter *owner)
{
	if (!it || !owner || it == owner || owner->zowner)
		return;
	if (!it->dctx_kept)
		ZSTD_freeDCtx(it->dctx);
	it->dctx = NULL;
	it->dctx_kept = false;
	it->zowner = owner;
}

void
ms__part_iter_use_dctx(ms_part_iter *it, ZSTD_DCtx *d)
{
	if (!it || !d || it->zowner)
		return;
	if (!it->dctx_kept)
		ZSTD_freeDCtx(it->dctx);
	it->dctx = d;
	it->dctx_kept = true;
}

uint64_t
ms_part_iter_bytes_read(const ms_part_iter *it)
{
	return it ? it->win.bytes_read : 0;
}

static int ifail(ms_part_iter *it, ms_errbuf *eb, int err, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

static int
ifail(ms_part_iter *it, ms_errbuf *eb, int err, const char *fmt, ...)
{
	it->failed = true;
	it->cur_ok = false;
	va_list ap;
	va_start(ap, fmt);
	int rc =
	        ms__part_unit_vfail(it->p, eb, err, "block", it->next, fmt, ap);
	va_end(ap);
	return rc;
}

static int
finish_checks(ms_part_iter *it, ms_errbuf *eb)
{
	const ms_part_meta *m = &it->p->meta;
	it->failed = true;
	if (XXH64_digest(&it->content) != m->checksum)
		return ms__part_fail(it->p, eb, MS_ERR_CORRUPT, MS__F_DATA,
		                     "part checksum mismatch");
	if (it->rows_seen != m->rows || it->traces_seen != m->traces ||
	    it->span_seen != m->uncompressed_bytes)
		return ms__part_fail(it->p, eb, MS_ERR_CORRUPT, MS__F_DATA,
		                     "blocks hold %llu rows, %llu traces, "
		                     "%llu bytes; footer says %llu, %llu, %llu",
		                     (unsigned long long)it->rows_seen,
		                     (unsigned long long)it->traces_seen,
		                     (unsigned long long)it->span_seen,
		                     (unsigned long long)m->rows,
		                     (unsigned long long)m->traces,
		                     (unsigned long long)m->uncompressed_bytes);
	it->failed = false;
	it->done = true;
	return 0;
}

static int block_out(ms_part_iter *it, const ms_block_info **info);

/* How many blocks ahead a mapped iterator prefetches a header. */
#define HDR_AHEAD 4

/* Make entries i .. i + 1 + HDR_AHEAD (those that exist: the block next()
 * returns and the one it prefetches) readable in it->ents: read
 * ITER_ENTS from i when they are not. */
static int
iter_entries(ms_part_iter *it, uint64_t i)
{
	const ms_part *p = it->p;
	uint64_t end = it->ents_from + it->ents_n;
	if (i >= it->ents_from && i < end &&
	    (i + 1 + HDR_AHEAD < end || end == p->meta.blocks))
		return 0;
	uint64_t n = p->meta.blocks - i < ITER_ENTS ? p->meta.blocks - i
	                                            : ITER_ENTS;
	const uint64_t esz = sizeof(struct ms__index_entry);
	it->ents_n = 0;
	int rc = ms_fs_pread_all(it->efd, it->ents, (size_t)(n * esz),
	                         p->data_bytes + MS__INDEX_HDR + i * esz);
	if (rc)
		return rc;
	it->ents_from = i;
	it->ents_n = (uint32_t)n;
	return 0;
}

static const uint8_t *
iter_entry(const ms_part_iter *it, uint64_t i)
{
	return it->ents + (i - it->ents_from) * sizeof(struct ms__index_entry);
}

int
ms_part_iter_next(ms_part_iter *it, const ms_block_info **info, ms_errbuf *eb)
{
	if (info)
		*info = NULL;
	ITER_CHECK(it);
	if (it->failed)
		return ms__part_fail(it->p, eb, MS_ERR_STATE, MS__F_DATA,
		                     "iterator failed before");
	it->cur_ok = it->a_ok = it->b_ok = false;
	const ms_part *p = it->p;
	if (it->done)
		return 0;
	if (it->next >= p->meta.blocks) {
		if (!it->reread)
			return finish_checks(it, eb);
		it->done = true;
		return 0;
	}
	int rc = iter_entries(it, it->next);
	if (rc) {
		it->failed = true;
		return ms__part_fail(p, eb, rc, MS__F_INDEX,
		                     "entry %llu: read: %s",
		                     (unsigned long long)it->next,
		                     rc == MS_ERR_CORRUPT ? "file shrank"
		                                          : strerror(errno));
	}
	const uint8_t *e = iter_entry(it, it->next);
	uint64_t off = ms_le64(e);
	uint32_t stored = ms_le32(e + 8), nrows = ms_le32(e + 12);
	/* Checked at open; read again, so checked again before use. */
	if (core_entry_bad(p, it->next_off, off, stored, nrows)) {
		it->failed = true;
		return ms__part_fail(p, eb, MS_ERR_CORRUPT, MS__F_INDEX,
		                     "entry %llu: offset %llu, %u bytes, %u "
		                     "rows (changed since the part was opened)",
		                     (unsigned long long)it->next,
		                     (unsigned long long)off, stored, nrows);
	}
	it->next_off = off + stored;
	it->trusted = it->lead && it->win.map &&
	              it->win.map == it->lead->win.map &&
	              it->next < it->lead->checked;
	it->next++;
	if (it->win.map && it->next + HDR_AHEAD < p->meta.blocks) {
		/* Headers lie a block apart: ask for one a few blocks ahead
		 * (a scan that reads headers only would wait on each). */
		const uint8_t *ah =
		        it->win.map +
		        ms_le64(iter_entry(it, it->next + HDR_AHEAD));
		__builtin_prefetch(ah);
		__builtin_prefetch(ah + 64);
		__builtin_prefetch(ah + 128);
	}
	rc = ms__win_get(&it->win, off, stored, &it->cur);
	char wwhy[64];
	if (rc)
		return ifail(it, eb, rc, "read at offset %llu: %s",
		             (unsigned long long)off,
		             ms__win_why(&it->win, rc, wwhy, sizeof(wwhy)));
	ms__block_hdr *h = &it->h;
	if (it->trusted) {
		block_fields(it->cur, stored, h);
		it->a_unchecked = it->b_unchecked = it->lead->defer_units;
		return block_out(it, info);
	}
	char why[200];
	bool units = !it->reread && !it->defer_units;
	if (!ms__block_parse(it->cur, stored, h, why, sizeof(why)) ||
	    (units && !ms__block_units_ok(it->cur, h, why, sizeof(why))))
		return ifail(it, eb, MS_ERR_CORRUPT, "%s", why);
	it->a_unchecked = it->b_unchecked = !units;
	if (h->dict_id && !ms_part_dicts_find(p->dicts, h->dict_id))
		return ifail(it, eb, MS_ERR_FORMAT,
		             "dictionary ID %u: no dictionary of this shard "
		             "has it",
		             h->dict_id);
	if (h->nrows != nrows)
		return ifail(it, eb, MS_ERR_CORRUPT, "%u rows, index says %u",
		             h->nrows, nrows);
	if (h->min_ts < p->meta.min_ts || h->max_ts > p->meta.max_ts)
		return ifail(it, eb, MS_ERR_CORRUPT,
		             "time range outside the part's");
	/* Re-read: the order was checked over these bytes (design 5). */
	int cmp = it->reread        ? 0
	          : it->traces_seen ? ms_trace_id_cmp(h->tid, h->tid_len,
	                                              it->last, it->last_len)
	                            : 1;
	if (cmp < 0)
		return ifail(it, eb, MS_ERR_CORRUPT, "trace IDs out of order");
	if (cmp > 0) {
		it->traces_seen++;
		memcpy(it->last, h->tid, h->tid_len);
		it->last_len = h->tid_len;
	}
	if (!it->reread)
		XXH64_update(
		        &it->content,
		        it->cur + offsetof(struct ms__block_disk, header_xxh),
		        8);
	it->rows_seen += h->nrows;
	it->span_seen += h->span_bytes;
	if (!it->reread)
		it->checked = it->next;
	return block_out(it, info);
}

/* Publish the current block's header as *info. */
static int
block_out(ms_part_iter *it, const ms_block_info **info)
{
	const ms__block_hdr *h = &it->h;
	ms_block_info *bi = &it->info;
	memcpy(bi->trace_id, h->tid, MS_TRACE_ID_MAX);
	bi->trace_id_len = h->tid_len;
	bi->nrows = h->nrows;
	bi->min_ts = h->min_ts;
	bi->max_ts = h->max_ts;
	bi->max_end_ns = h->max_end_ns;
	bi->span_bytes = h->span_bytes;
	bi->stored_bytes = h->stored;
	it->cur_ok = true;
	if (info)
		*info = bi;
	return 1;
}

int
ms_part_iter_raw(ms_part_iter *it, ms_raw_block *raw, ms_errbuf *eb)
{
	if (!it->cur_ok)
		return ms__part_fail(it->p, eb, MS_ERR_STATE, MS__F_DATA,
		                     "no current block");
	if (it->a_unchecked || it->b_unchecked) {
		char why[64];
		if (!ms__block_units_ok(it->cur, &it->h, why, sizeof(why)))
			return ifail(it, eb, MS_ERR_CORRUPT, "%s", why);
		it->a_unchecked = it->b_unchecked = false;
	}
	raw->info = &it->info;
	raw->bytes = it->cur;
	/* Its units were checked over these bytes: by next(), by raw() just
	 * now, or by the lead this iterator trails (design 6). */
	raw->verified = true;
	return 0;
}

bool
ms_part_iter_raw_stable(const ms_part_iter *it)
{
	const ms__win *w = &it->win;
	if (!it->cur_ok)
		return false;
	if (w->map)
		return true;
	/* Read whole from offset 0: ms__win_get serves every read in range
	 * from the buffer and never refills, reallocates or frees it before
	 * ms__win_close. */
	return w->base == 0 && w->size > 0 && w->len == w->size;
}

uint64_t
ms_part_iter_raw_offset(const ms_part_iter *it)
{
	return it->cur_ok ? it->next_off - it->h.stored : UINT64_MAX;
}

void
ms_part_iter_keep_from(ms_part_iter *it, uint64_t off)
{
	it->win.keep_from = off;
}

uint64_t
ms__part_iter_released(const ms_part_iter *it)
{
	return it->win.map ? it->win.released : 0;
}

static int
inflate(ms_part_iter *it, ms_buf *dst, const uint8_t *src, uint32_t stored,
        uint32_t raw, const char *unit, ms_errbuf *eb)
{
	ms_buf_reset(dst);
	if (raw == 0)
		return 0;
	bool *unchecked = *unit == 'A' ? &it->a_unchecked : &it->b_unchecked;
	if (*unchecked && XXH3_64bits(src, stored) !=
	                          (*unit == 'A' ? it->h.a_xxh : it->h.b_xxh))
		return ifail(it, eb, MS_ERR_CORRUPT,
		             "unit %s checksum mismatch", unit);
	*unchecked = false;
	int rc = ms_buf_reserve(dst, (size_t)raw + MS__UNIT_PAD);
	if (rc)
		return ifail(it, eb, rc, "unit %s: %s for %u bytes", unit,
		             ms_strerror(rc), raw);
	memset(dst->data + raw, 0, MS__UNIT_PAD);
	ms_part_iter *zi = it->zowner ? it->zowner : it;
	if (!zi->dctx &&
	    !(zi->dctx = ZSTD_createDCtx_advanced(ms__zstd_mem(zi->mem))))
		return ifail(it, eb, MS_ERR_NOMEM,
		             "out of memory for a zstd context");
	/* next() resolved the block's dictionary (or its lead did). */
	const ms_part_dict *d = ms_part_dicts_find(it->p->dicts, it->h.dict_id);
	size_t k = d ? ZSTD_decompress_usingDDict(zi->dctx, dst->data, raw, src,
	                                          stored, ms__dict_ddict(d))
	             : ZSTD_decompressDCtx(zi->dctx, dst->data, raw, src,
	                                   stored);
	if (ZSTD_isError(k))
		return ifail(it, eb, ms__zstd_err(k), "unit %s: zstd: %s%s",
		             unit,
		             ms__zstd_err(k) == MS_ERR_NOMEM ? "out of memory: "
		                                             : "",
		             ZSTD_getErrorName(k));
	if (k != raw)
		return ifail(it, eb, MS_ERR_CORRUPT,
		             "unit %s inflated to %zu bytes, expected %u", unit,
		             k, raw);
	dst->len = raw;
	return 0;
}

static int
load_a(ms_part_iter *it, ms_errbuf *eb)
{
	if (it->a_ok)
		return 0;
	const ms__block_hdr *h = &it->h;
	int rc = inflate(it, &it->ua, it->cur + MS__BLOCK_HDR, h->a_stored,
	                 h->a_raw, "A", eb);
	if (rc)
		return rc;
	uint64_t off = MS__A_COLS * 4;
	for (unsigned c = 0; c < MS__A_COLS; c++) {
		it->acol[c] = (uint32_t)off;
		off += ms_le32(it->ua.data + 4 * c);
	}
	if (off != h->a_raw)
		return ifail(it, eb, MS_ERR_CORRUPT,
		             "unit A columns add up to %llu bytes, not %u",
		             (unsigned long long)off, h->a_raw);
	it->a_ok = true;
	return 0;
}

static void
col_rd(const ms_part_iter *it, unsigned c, ms_rd *r)
{
	uint32_t start = it->acol[c];
	uint32_t end =
	        c + 1 < MS__A_COLS ? it->acol[c + 1] : (uint32_t)it->ua.len;
	ms_rd_init(r, it->ua.data + start, end - start);
}

/* ms_rd_uvarint with the one-byte case inline (most lengths and counts). */
static inline uint64_t
rd_uv(ms_rd *r)
{
	if (!r->bad && r->left && r->p[0] < 0x80) {
		r->left--;
		return *r->p++;
	}
	return ms_rd_uvarint(r);
}

/* Whether s[0..n) holds a 0 byte: 8 bytes at a time (the last word may
 * overlap the one before it). Under 8 bytes, one word whose bytes from n
 * on are forced non-zero: s lies in an inflated unit, which has
 * MS__UNIT_PAD readable bytes after its end. */
static inline bool
has_nul(const uint8_t *s, size_t n)
{
	const uint64_t lo = 0x0101010101010101u, hi = 0x8080808080808080u;
	uint64_t v;
	if (n < 8) {
		v = ms_le64(s) | (n ? ~0ull << (8 * n) : ~0ull);
		return ((v - lo) & ~v & hi) != 0;
	}
	for (size_t i = 0; i + 8 <= n; i += 8) {
		memcpy(&v, s + i, 8);
		if ((v - lo) & ~v & hi)
			return true;
	}
	memcpy(&v, s + n - 8, 8);
	return ((v - lo) & ~v & hi) != 0;
}

/* s[0..n) holds no 0 byte and s[n] is 0. Under 32 bytes, one pass of two
 * 16-byte compares where the machine has them (the bit of every zero
 * byte among s[0..32): only bit n may be set below n + 1), which a string
 * of a few dozen bytes needs no loop or branch for; s lies in an inflated
 * unit, with MS__UNIT_PAD readable bytes after its end. */
static inline bool
str_ok(const uint8_t *s, size_t n)
{
#if defined(__SSE2__)
	if (n < 32) {
		const __m128i z = _mm_setzero_si128();
		__m128i a = _mm_loadu_si128((const __m128i *)(const void *)s);
		__m128i b = _mm_loadu_si128(
		        (const __m128i *)(const void *)(s + 16));
		uint32_t m = (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(a, z)) |
		             (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(b, z))
		                     << 16;
		uint32_t upto = n == 31 ? UINT32_MAX : (2u << n) - 1;
		return (m & upto) == 1u << n;
	}
#endif
	return s[n] == 0 && !has_nul(s, n);
}

/* A string: uvarint length n <= max, n bytes without NUL, then a NUL. */
static inline const char *
rd_str(ms_rd *r, size_t max)
{
	uint64_t n = rd_uv(r);
	if (r->bad || n > max || n >= r->left) {
		r->bad = true;
		return NULL;
	}
	const uint8_t *s = r->p;
	if (!str_ok(s, (size_t)n)) {
		r->bad = true;
		return NULL;
	}
	r->p += n + 1;
	r->left -= n + 1;
	return (const char *)s;
}

static const char *const col_names[MS__A_COLS] = {
	"span_id", "segment_id", "service", "instance", "endpoint",
	"start",   "latency",    "error",   "tags",
};

/* Parse the tags column into it->tagv (grown as needed) and point each
 * row's tags into it: 0, MS_ERR_CORRUPT (malformed) or MS_ERR_NOMEM. */
static int
parse_tags(ms_part_iter *it, ms_row *out)
{
	ms_rd r;
	col_rd(it, 8, &r);
	size_t k = 0;
	for (uint32_t i = 0; i < it->h.nrows; i++) {
		uint64_t nt = rd_uv(&r);
		if (r.bad || nt > MS_TAGS_MAX)
			return MS_ERR_CORRUPT;
		out[i].ntags = (uint32_t)nt;
		if (k + nt > it->tagv_cap) {
			size_t cap = it->tagv_cap ? 2 * it->tagv_cap : 64;
			while (cap < k + nt)
				cap *= 2;
			const char **nv =
			        ms_mem_realloc(it->mem, it->tagv,
			                       it->tagv_cap * sizeof(char *),
			                       cap * sizeof(char *));
			if (!nv)
				return MS_ERR_NOMEM;
			it->tagv = nv;
			it->tagv_cap = cap;
		}
		for (uint64_t t = 0; t < nt; t++) {
			const char *s = rd_str(&r, MS_TAG_MAX);
			if (!s)
				return MS_ERR_CORRUPT;
			it->tagv[k++] = s;
		}
	}
	if (r.bad || r.left)
		return MS_ERR_CORRUPT;
	k = 0;
	for (uint32_t i = 0; i < it->h.nrows; i++) {
		out[i].tags = out[i].ntags ? it->tagv + k : NULL;
		k += out[i].ntags;
	}
	return 0;
}

/* Decoding a block is done column by column in the steps below. Each
 * decode_* step fills its columns of out[0..n) and returns the index of
 * the first column it found malformed, or MS__A_COLS when all were fine. */

/* Inflate the units `cols` needs and size the row array: 0 or an error
 * (already reported through ifail). */
static int
decode_prepare(ms_part_iter *it, unsigned cols, ms_errbuf *eb)
{
	const ms__block_hdr *h = &it->h;
	uint32_t n = h->nrows;
	int rc;
	if (cols & (MS_COL_ALL & ~(unsigned)MS_COL_BODY)) {
		rc = load_a(it, eb);
		if (rc)
			return rc;
	}
	if ((cols & MS_COL_BODY) && !it->b_ok) {
		rc = inflate(it, &it->ub, it->cur + MS__BLOCK_HDR + h->a_stored,
		             h->b_stored, h->b_raw, "B", eb);
		if (rc)
			return rc;
		it->b_ok = true;
	}
	if (n > it->rows_cap) {
		ms_row *nr = ms_mem_realloc(it->mem, it->rows,
		                            it->rows_cap * sizeof(ms_row),
		                            (size_t)n * sizeof(ms_row));
		if (!nr)
			return ifail(it, eb, MS_ERR_NOMEM,
			             "out of memory for %u rows", n);
		it->rows = nr;
		it->rows_cap = n;
	}
	ms_row *out = it->rows;
	memset(out, 0, (size_t)n * sizeof(ms_row));
	for (uint32_t i = 0; i < n; i++) {
		out[i].trace_id = it->info.trace_id;
		out[i].trace_id_len = h->tid_len;
	}
	return 0;
}

/* span_id and the four string columns. */
static unsigned
decode_ids(ms_part_iter *it, unsigned cols, ms_row *out)
{
	uint32_t n = it->h.nrows;
	ms_rd r;
	if (cols & MS_COL_SPAN_ID) {
		col_rd(it, 0, &r);
		for (uint32_t i = 0; i < n; i++)
			out[i].span_id = rd_uv(&r);
		if (r.bad || r.left)
			return 0;
	}
	static const unsigned str_cols[4] = { MS_COL_SEGMENT_ID, MS_COL_SERVICE,
		                              MS_COL_INSTANCE,
		                              MS_COL_ENDPOINT };
	static const size_t str_off[4] = { offsetof(ms_row, segment_id),
		                           offsetof(ms_row, service),
		                           offsetof(ms_row, instance),
		                           offsetof(ms_row, endpoint) };
	for (unsigned c = 0; c < 4; c++) {
		if (!(cols & str_cols[c]))
			continue;
		col_rd(it, 1 + c, &r);
		char *field = (char *)out + str_off[c];
		for (uint32_t i = 0; i < n; i++, field += sizeof(ms_row))
			*(const char **)(void *)field = rd_str(&r, MS_STR_MAX);
		if (r.bad || r.left)
			return 1 + c;
	}
	return MS__A_COLS;
}

/* start_ns (checked against the header's range) and latency_ms (with
 * start_ns, checked against its max_end_ns). */
static unsigned
decode_times(ms_part_iter *it, unsigned cols, ms_row *out)
{
	const ms__block_hdr *h = &it->h;
	uint32_t n = h->nrows;
	ms_rd r;
	if (cols & MS_COL_START) {
		col_rd(it, 5, &r);
		uint64_t prev = 0;
		int64_t mn = INT64_MAX, mx = INT64_MIN;
		for (uint32_t i = 0; i < n; i++) {
			uint64_t z = rd_uv(&r);
			prev += (z >> 1) ^ (0 - (z & 1));
			int64_t s = (int64_t)prev;
			out[i].start_ns = s;
			mn = s < mn ? s : mn;
			mx = s > mx ? s : mx;
		}
		if (r.bad || r.left || mn != h->min_ts || mx != h->max_ts)
			return 5;
	}
	if (!(cols & MS_COL_LATENCY))
		return MS__A_COLS;
	col_rd(it, 6, &r);
	for (uint32_t i = 0; i < n; i++) {
		uint64_t v = rd_uv(&r);
		if (v > UINT32_MAX)
			r.bad = true;
		out[i].latency_ms = (uint32_t)v;
	}
	if (r.bad || r.left)
		return 6;
	if (!(cols & MS_COL_START))
		return MS__A_COLS;
	int64_t me = INT64_MIN;
	for (uint32_t i = 0; i < n; i++) {
		int64_t lat = (int64_t)out[i].latency_ms * 1000000, e;
		if (__builtin_add_overflow(out[i].start_ns, lat, &e))
			e = INT64_MAX;
		me = e > me ? e : me;
	}
	return me == h->max_end_ns ? MS__A_COLS : 6;
}

/* is_error and tags; *nomem is set when the tag vector could not grow. */
static unsigned
decode_flags(ms_part_iter *it, unsigned cols, ms_row *out, bool *nomem)
{
	uint32_t n = it->h.nrows;
	if (cols & MS_COL_ERROR) {
		ms_rd r;
		col_rd(it, 7, &r);
		const uint8_t *b = ms_rd_bytes(&r, n);
		if (!b || r.left)
			return 7;
		for (uint32_t i = 0; i < n; i++) {
			if (b[i] > 1)
				return 7;
			out[i].is_error = b[i] == 1;
		}
	}
	if (cols & MS_COL_TAGS) {
		int rc = parse_tags(it, out);
		*nomem = rc == MS_ERR_NOMEM;
		if (rc)
			return 8;
	}
	return MS__A_COLS;
}

/* Unit B: the body lengths, then the bodies. */
static int
decode_body(ms_part_iter *it, ms_row *out, ms_errbuf *eb)
{
	uint32_t n = it->h.nrows;
	ms_rd r;
	ms_rd_init(&r, it->ub.data, it->ub.len);
	uint64_t sum = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t l = rd_uv(&r);
		if (l > MS_BODY_MAX)
			r.bad = true;
		out[i].body_len = (uint32_t)l;
		sum += l;
	}
	if (r.bad || sum != r.left)
		return ifail(it, eb, MS_ERR_CORRUPT, "column body malformed");
	const uint8_t *b = r.p;
	for (uint32_t i = 0; i < n; i++) {
		out[i].body = out[i].body_len ? b : NULL;
		b += out[i].body_len;
	}
	return 0;
}

int
ms_part_iter_decode(ms_part_iter *it, unsigned cols, const ms_row **rows,
                    ms_errbuf *eb)
{
	if (rows)
		*rows = NULL;
	if (!it->cur_ok)
		return ms__part_fail(it->p, eb, MS_ERR_STATE, MS__F_DATA,
		                     "no current block to decode");
	int rc = decode_prepare(it, cols, eb);
	if (rc)
		return rc;
	ms_row *out = it->rows;
	bool nomem = false;
	unsigned bad = decode_ids(it, cols, out);
	if (bad == MS__A_COLS)
		bad = decode_times(it, cols, out);
	if (bad == MS__A_COLS)
		bad = decode_flags(it, cols, out, &nomem);
	if (nomem)
		return ifail(it, eb, MS_ERR_NOMEM,
		             "out of memory for the tags of %u rows",
		             it->h.nrows);
	if (bad < MS__A_COLS)
		return ifail(it, eb, MS_ERR_CORRUPT, "column %s malformed",
		             col_names[bad]);
	if ((cols & MS_COL_BODY) && (rc = decode_body(it, out, eb)) != 0)
		return rc;
	if (rows)
		*rows = out;
	return 0;
}

int
ms_part_verify(const ms_part *p, ms_errbuf *eb)
{
	if (p->kind != MS_KIND_CORE)
		return ms__sidx_verify(p, eb);
	ms_part_iter *it;
	int rc = ms_part_iter_open(&it, p, p->mem, NULL, eb);
	if (rc)
		return rc;
	const ms_block_info *bi;
	while ((rc = ms_part_iter_next(it, &bi, eb)) == 1) {
		rc = ms_part_iter_decode(it, MS_COL_ALL, NULL, eb);
		if (rc)
			break;
	}
	ms_part_iter_close(it);
	return rc;
}
