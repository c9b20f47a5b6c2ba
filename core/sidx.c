/*
 * sidx.c - secondary index parts (latency, start_time): building index rows
 * from core rows, writing them in chunks of columns each compressed on its
 * own, reading them back in order, and merging index parts with pruning of
 * dropped traces.
 * Layout: core/FORMAT.md, "Index part".
 *
 * Writer design:
 *  1. Rows arrive in non-decreasing (series, key, value) order (checked).
 *  2. `chunk` holds nchunk <= chunk_cap <= MS__CHUNK_ROWS rows not yet
 *     written, their tag values copied into `vals` back to back in row
 *     order (the caller's strings are borrowed only during the add);
 *     chunk_cap starts at the row hint (or small) and doubles. A chunk
 *     full of rows or of tag values (CHUNK_VALS) is encoded into `raw`
 *     (sized to a bound, piece_end marking where each column ends), its
 *     columns compressed one by one into `out` and written at once, so
 *     `out` holds one chunk at most.
 *  3. data_off is the byte length of the data section including `out`;
 *     `content` has absorbed exactly those bytes.
 *  4. After a failure the writer is `failed`; finish removes the file.
 *  5. The footer is written last (after the index section), and the file
 *     fsynced once as it is closed.
 *  6. A row sorts after the previous one added: the chunk's last row, or
 *     `last` (kept by flush_chunk) when the chunk is empty.
 *  7. A merge's row may say which entries of its input chunk's
 *     dictionaries its values are (struct wsrc); encoding a column then
 *     hashes each entry's value once, at its first row (put_bytes_col,
 *     with the remaps at the start of `tmp`).
 */
#define XXH_INLINE_ALL
#include "ms_sidx.h"
#include "part_int.h"
#include "sidx_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

/* Inlined into its callers whatever the compiler estimates (writer_add
 * and next_row in the merge's loop, where each runs once a row, and
 * where the merge's arguments make most of writer_add's cases fall
 * away). */
#if defined(__GNUC__) || defined(__clang__)
#define ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define ALWAYS_INLINE inline
#endif

/* Fewest payload bytes a row takes: series, key, ID length, one ID byte,
 * and at least one byte in each of the four tag columns. */
#define ROW_MIN_BYTES 8u
/* Largest chunk payload a reader accepts: a chunk is cut once its tag
 * values pass CHUNK_VALS, so only one huge row (a tag list can reach
 * MS_TAGS_MAX x MS_TAG_MAX bytes) comes near this. */
#define RAW_MAX (256u << 20)
/* Tag-value bytes after which a writer cuts the chunk. */
#define CHUNK_VALS (1u << 20)
/* Distinct values a column's dictionary holds at most. */
#define DICT_MAX 256u
/* Longest encoded tag list. */
#define TAGLIST_MAX ((uint64_t)MS_TAGS_MAX * (MS_TAG_MAX + 3) + 3)

/* Column modes of a byte-valued tag column. */
enum { COL_PLAIN = 0, COL_DICT = 1 };
/* A chunk payload's pieces, one per column: series, key, ID lengths,
 * IDs, instance, endpoint, other, tags. */
#define NPIECES 8u
/* Codecs of a piece, and the size from which a writer compresses one
 * (the reference compresses a block's pieces from 128 bytes on). */
enum { PIECE_STORED = 0, PIECE_ZSTD = 1 };
#define PIECE_ZSTD_MIN 128u
/* zstd level of the pieces unless the options name one: the reference
 * compresses its index blocks at level 1. */
#define PIECE_LEVEL 1

uint64_t
ms_sidx_series(const char *service, bool is_error)
{
	/* The service's bytes then the flag byte: hashed in one call when
	 * they fit a small buffer (the same hash as streamed). */
	uint8_t e = is_error ? 1 : 0, b[256];
	size_t n = service ? strlen(service) : 0;
	if (n < sizeof(b)) {
		if (n)
			memcpy(b, service, n);
		b[n] = e;
		return XXH3_64bits(b, n + 1);
	}
	XXH3_state_t st;
	XXH3_64bits_reset(&st);
	XXH3_64bits_update(&st, service, n);
	XXH3_64bits_update(&st, &e, 1);
	return XXH3_64bits_digest(&st);
}

void
ms_sidx_row_of(enum ms_part_kind kind, const ms_row *r, ms_sidx_row *out)
{
	memset(out, 0, sizeof(*out));
	out->series = ms_sidx_series(r->service, r->is_error);
	if (kind == MS_KIND_LATENCY) {
		out->key = (int64_t)r->latency_ms;
		out->other = r->start_ns;
	} else {
		out->key = r->start_ns;
		out->other = (int64_t)r->latency_ms;
	}
	out->instance = r->instance;
	out->endpoint = r->endpoint;
	out->tags = r->tags;
	out->ntags = r->tags ? r->ntags : 0;
	out->tid_len = r->trace_id_len;
	memcpy(out->tid, r->trace_id, r->trace_id_len);
}

static int
str_cmp(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "");
}

/* The whole order, tags included: sorts rows that ms_sidx_row_cmp ties
 * the same way every time, so a part's bytes depend only on its rows. */
static int
row_cmp_full(const ms_sidx_row *a, const ms_sidx_row *b)
{
	int c = ms_sidx_row_cmp(a, b);
	if (c)
		return c;
	if (a->other != b->other)
		return a->other < b->other ? -1 : 1;
	if ((c = str_cmp(a->instance, b->instance)) != 0 ||
	    (c = str_cmp(a->endpoint, b->endpoint)) != 0)
		return c;
	uint32_t na = a->tags ? a->ntags : 0, nb = b->tags ? b->ntags : 0;
	if (na != nb)
		return na < nb ? -1 : 1;
	for (uint32_t i = 0; i < na; i++)
		if ((c = str_cmp(a->tags[i], b->tags[i])) != 0)
			return c;
	return 0;
}

int
ms_sidx_row_cmp(const ms_sidx_row *a, const ms_sidx_row *b)
{
	if (a->series != b->series)
		return a->series < b->series ? -1 : 1;
	if (a->key != b->key)
		return a->key < b->key ? -1 : 1;
	return ms_trace_id_cmp(a->tid, a->tid_len, b->tid, b->tid_len);
}

/* A big-endian 8-byte word of a trace ID array: comparing these words
 * in order compares the bytes. */
static inline uint64_t
tid_word(const uint8_t *p)
{
	return (uint64_t)p[0] << 56 | (uint64_t)p[1] << 48 |
	       (uint64_t)p[2] << 40 | (uint64_t)p[3] << 32 |
	       (uint64_t)p[4] << 24 | (uint64_t)p[5] << 16 |
	       (uint64_t)p[6] << 8 | (uint64_t)p[7];
}

_Static_assert(MS_TRACE_ID_MAX % 8 == 0, "trace IDs compare by words");

/*
 * ms_trace_id_cmp for trace IDs whose arrays (MS_TRACE_ID_MAX bytes) are
 * zero past their length, as every row this file decodes or stores is.
 * The words covering the shorter ID are compared: the first that differs
 * decides (past the shorter ID's end its zero byte is below the other's
 * byte, as a prefix sorts first); with none differing the shorter ID is
 * a prefix of the other and comes first.
 */
static inline int
tid_cmp_padded(const uint8_t *a, uint32_t alen, const uint8_t *b,
               uint32_t blen)
{
	uint32_t n = alen < blen ? alen : blen;
	for (uint32_t i = 0; i < n; i += 8) {
		uint64_t x = tid_word(a + i), y = tid_word(b + i);
		if (x != y)
			return x < y ? -1 : 1;
	}
	return alen < blen ? -1 : alen > blen ? 1 : 0;
}

/* ms_sidx_row_cmp for rows with zero-padded trace IDs. */
static inline int
row_cmp_padded(const ms_sidx_row *a, const ms_sidx_row *b)
{
	if (a->series != b->series)
		return a->series < b->series ? -1 : 1;
	if (a->key != b->key)
		return a->key < b->key ? -1 : 1;
	return tid_cmp_padded(a->tid, a->tid_len, b->tid, b->tid_len);
}

size_t
ms_sidx_value(const ms_sidx_row *r, uint8_t out[1 + MS_TRACE_ID_MAX])
{
	out[0] = 0x01;
	memcpy(out + 1, r->tid, r->tid_len);
	return 1 + (size_t)r->tid_len;
}

static bool
is_index_kind(enum ms_part_kind kind)
{
	return kind == MS_KIND_LATENCY || kind == MS_KIND_START_TIME;
}

/* The part ID as text into idstr (17 bytes, for messages); MS_ERR_INVAL,
 * naming the part, when kind is not an index kind. */
static int
check_index_kind(enum ms_part_kind kind, uint64_t id, char idstr[17],
                 ms_errbuf *eb)
{
	ms_part_id_str(id, idstr);
	if (!is_index_kind(kind))
		return ms_fail(eb, MS_ERR_INVAL,
		               "index part %s: kind %d is not an index", idstr,
		               (int)kind);
	return 0;
}

/* ---- writer ---- */

/* A row waiting in the writer's chunk: its tag strings are copied to
 * w->vals (instance, endpoint, then the encoded tag list) right after
 * the previous row's. */
typedef struct wrow {
	uint64_t series;
	int64_t key, other;
	uint32_t len[3]; /* instance, endpoint, encoded tag list */
	uint32_t tid_len;
	/* Where a merge took the row's values from (struct wsrc): dmask
	 * bit k set when value k is entry didx[k] of the dictionary of
	 * input chunk dkey. */
	uint32_t dkey;
	uint8_t dmask;
	uint8_t didx[3];
	uint8_t tid[MS_TRACE_ID_MAX]; /* zero past tid_len */
} wrow;
_Static_assert(sizeof(wrow) <= 112, "a chunk of rows: 112 bytes a row at most");

/* The dictionaries a merged row's instance, endpoint and tag list come
 * from: bit k of mask set when value k (0 instance, 1 endpoint, 2 tag
 * list) is entry idx[k] of the dictionary of the input chunk `key`,
 * which no other chunk read by the same merge shares (never 0). Equal
 * (key, entry) pairs are equal bytes: put_bytes_col looks each pair up
 * once per column instead of hashing every row's value. */
struct wsrc {
	uint32_t key;
	uint8_t mask;
	uint8_t idx[3];
};

/* Output index of the values of one input chunk's dictionary in the
 * column being encoded: slot[j] - 1 for its entry j, 0 when not met yet.
 * REMAPS of them, picked by key; one taken by another key is reset, up
 * to the highest entry set since it was last reset (hi): a merge of more
 * input chunks than REMAPS takes one every few rows, and clearing all
 * its slots each time was a tenth of encoding a column. Keys are
 * numbered as chunks are loaded, so a merge of up to about REMAPS inputs
 * keeps one for each input chunk it is reading (16 made a 26-input merge
 * reset them every few rows). */
typedef struct remap {
	uint32_t key; /* wrow.dkey; 0: none */
	uint16_t hi;  /* slots from hi on are 0 */
	uint16_t slot[DICT_MAX];
} remap;
#define REMAPS 32u
_Static_assert(REMAPS * sizeof(remap) % sizeof(void *) == 0,
               "the values after the remaps in tmp are aligned");

/* A value of a byte-valued column. */
typedef struct bval {
	const uint8_t *p;
	uint32_t len;
} bval;

struct ms_sidx_writer {
	ms_mem *mem;
	ms_io *io;
	bool no_sync; /* opts.no_sync: the caller syncs */
	int level;
	enum ms_part_kind kind;
	char *path; /* the part file being written */
	size_t path_size;
	int fd;
	/* A writer expecting full chunks compresses with a static context
	 * in one workspace (cws) sized for the level and any input: its
	 * pieces range from bytes to hundreds of KiB, and a context that
	 * grows with them would reallocate several times. A smaller part
	 * lets zstd size the context (cws NULL). */
	ZSTD_CCtx *cctx; /* in cws, its own, or taken from zctx */
	void *cws;
	size_t cws_size;
	ms_zctx *zctx; /* opts.zctx (borrowed) */
	wrow *chunk;
	size_t nchunk, chunk_cap;
	ms_buf raw, out, index;
	ms_buf vals; /* the chunk rows' tag values */
	ms_buf tmp;  /* column values and dictionaries while encoding */
	bool remaps; /* a row came with a wsrc: tmp holds REMAPS first */
	size_t piece_end[NPIECES]; /* where each column ends in `raw` */
	uint64_t data_off;
	XXH64_state_t content;
	ms_part_meta meta;
	wrow last; /* the last row of the last chunk flushed */
	bool failed;
};

static int swfail(ms_sidx_writer *w, ms_errbuf *eb, int err, const char *file,
                  const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static int
swfail(ms_sidx_writer *w, ms_errbuf *eb, int err, const char *file,
       const char *fmt, ...)
{
	w->failed = true;
	char kind[32];
	snprintf(kind, sizeof(kind), "%s index part",
	         ms_part_kind_name(w->kind));
	va_list ap;
	va_start(ap, fmt);
	ms__part_vfail(eb, err, kind, w->meta.id, w->path, file, fmt, ap);
	va_end(ap);
	return err;
}

static void
swriter_free(ms_sidx_writer *w)
{
	if (!w)
		return;
	if (w->fd >= 0)
		close(w->fd);
	if (w->cws)
		ms_mem_free(w->mem, w->cws, w->cws_size);
	else if (!ms__zctx_give(w->zctx, w->cctx))
		ZSTD_freeCCtx(w->cctx);
	ms_buf_release(&w->raw);
	ms_buf_release(&w->out);
	ms_buf_release(&w->index);
	ms_buf_release(&w->vals);
	ms_buf_release(&w->tmp);
	ms_mem_free(w->mem, w->chunk, w->chunk_cap * sizeof(wrow));
	ms_mem_free(w->mem, w->path, w->path_size);
	ms_mem_free(w->mem, w, sizeof(*w));
}

void
ms_sidx_writer_abort(ms_sidx_writer *w)
{
	if (!w)
		return;
	ms__part_discard(&w->fd, w->path);
	swriter_free(w);
}

/* First chunk capacity without a row hint; it doubles up to a full chunk. */
#define CHUNK_START 256u

/* rows_hint: rows the part will probably hold (0 = unknown); it sizes the
 * first chunk buffer, so a small part never pays for a full one. */
static int
swriter_open(ms_sidx_writer **out, enum ms_part_kind kind, const char *tmp_path,
             uint64_t id, const ms_part_writer_opts *opts, uint64_t rows_hint,
             ms_errbuf *eb)
{
	*out = NULL;
	ms_part_writer_opts o = { 0 };
	if (opts)
		o = *opts;
	char idstr[17];
	if (check_index_kind(kind, id, idstr, eb))
		return MS_ERR_INVAL;
	if (o.zstd_level == 0)
		o.zstd_level = PIECE_LEVEL;
	if (o.zstd_level < ZSTD_minCLevel() || o.zstd_level > ZSTD_maxCLevel())
		return ms_fail(eb, MS_ERR_INVAL, "index part %s: zstd level %d",
		               idstr, o.zstd_level);
	ms_sidx_writer *w = ms_mem_calloc(o.mem, 1, sizeof(*w));
	if (!w)
		return ms_fail(eb, MS_ERR_NOMEM,
		               "index part %s: out of memory for its writer "
		               "(%zu bytes)",
		               idstr, sizeof(*w));
	w->mem = o.mem;
	w->io = o.io;
	w->no_sync = o.no_sync;
	w->level = o.zstd_level;
	w->kind = kind;
	w->fd = -1;
	w->meta.id = id;
	w->meta.depth = o.depth;
	ms_buf_init(&w->raw, o.mem, 0);
	ms_buf_init(&w->out, o.mem, 0);
	ms_buf_init(&w->index, o.mem, 0);
	ms_buf_init(&w->vals, o.mem, 0);
	ms_buf_init(&w->tmp, o.mem, 0);
	XXH64_reset(&w->content, 0);
	int rc;
	w->path_size = strlen(tmp_path) + 1;
	w->path = ms_mem_dup(o.mem, tmp_path, w->path_size);
	w->chunk_cap = rows_hint == 0               ? CHUNK_START
	               : rows_hint > MS__CHUNK_ROWS ? MS__CHUNK_ROWS
	                                            : (size_t)rows_hint;
	w->chunk = ms_mem_alloc(o.mem, w->chunk_cap * sizeof(wrow));
	w->zctx = o.zctx;
	if ((w->cctx = ms__zctx_take(o.zctx)) != NULL) {
		/* the thread's kept context (ms_zctx): its workspace,
		 * kept from writer to writer, grows once, not per writer */
	} else if (rows_hint >= MS__CHUNK_ROWS) {
		w->cws_size = ZSTD_estimateCCtxSize(o.zstd_level);
		w->cws = ms_mem_alloc(o.mem, w->cws_size);
		w->cctx = w->cws ? ZSTD_initStaticCCtx(w->cws, w->cws_size)
		                 : NULL;
	} else {
		w->cctx = ZSTD_createCCtx_advanced(ms__zstd_mem(o.mem));
	}
	if (!w->path || !w->chunk || !w->cctx) {
		/* Which allocation failed, and its size where it is known. */
		size_t ask = !w->path    ? w->path_size
		             : !w->chunk ? w->chunk_cap * sizeof(wrow)
		             : w->cws    ? w->cws_size
		                         : ZSTD_estimateCCtxSize(o.zstd_level);
		rc = ms_fail(
		        eb, MS_ERR_NOMEM,
		        "index part %s: out of memory for %s (%s%zu bytes)",
		        idstr,
		        !w->path    ? "its path"
		        : !w->chunk ? "its chunk of rows"
		                    : "a zstd compression context",
		        w->path && w->chunk && !w->cws ? "about " : "", ask);
		goto fail;
	}
	rc = ms__index_start(&w->index);
	if (rc) {
		rc = ms_fail(eb, rc,
		             "index part %s: out of memory for its index's "
		             "header (%u bytes)",
		             idstr, MS__INDEX_HDR);
		goto fail;
	}
	char what[32];
	snprintf(what, sizeof(what), "%s index part", ms_part_kind_name(kind));
	rc = ms__part_create(tmp_path, what, idstr, &w->fd, eb);
	if (rc)
		goto fail;
	*out = w;
	return 0;
fail:
	swriter_free(w);
	return rc;
}

int
ms_sidx_writer_open(ms_sidx_writer **out, enum ms_part_kind kind,
                    const char *tmp_path, uint64_t id,
                    const ms_part_writer_opts *opts, ms_errbuf *eb)
{
	return swriter_open(out, kind, tmp_path, id, opts, 0, eb);
}

/* ms__pack7 undone: the low 56 bits of x spread 7 to a byte. */
static inline uint64_t
spread7(uint64_t x)
{
	x = ((x & 0x00fffffff0000000ull) << 4) | (x & 0x000000000fffffffull);
	x = ((x & 0x0fffc0000fffc000ull) << 2) | (x & 0x00003fff00003fffull);
	return ((x & 0x3f803f803f803f80ull) << 1) |
	       (x & 0x007f007f007f007full);
}

/* ms_put_uvarint for a column of a chunk payload being encoded, which has 8
 * bytes of room past what it holds: a value under 128 (most series deltas,
 * and most key deltas of the latency index) is its one byte; a longer one
 * under 2^56 is stored as one 8-byte word (bytes past the varint are
 * overwritten by what follows), without a branch on its length. The same
 * bytes as ms_put_uvarint. */
static inline uint8_t *
put_uv_col(uint8_t *p, uint64_t v)
{
	if (v < 0x80) {
		*p = (uint8_t)v;
		return p + 1;
	}
	if (v >> 56)
		return ms_put_uvarint(p, v);
	unsigned n = v ? (unsigned)(63 - __builtin_clzll(v)) / 7 + 1 : 1;
	uint64_t more = 0x8080808080808080ull & ((1ull << (8 * (n - 1))) - 1);
	ms_put_le64(p, spread7(v) | more);
	return p + n;
}

static inline uint8_t *
put_sv(uint8_t *p, uint64_t d)
{
	return put_uv_col(p, (d << 1) ^ (uint64_t)((int64_t)d >> 63));
}

/* Bytes put_bytes_col may write for n values of `bytes` bytes in all. */
static size_t
bytes_col_bound(size_t n, size_t bytes)
{
	return 2 + DICT_MAX * 5 + n * 5 + bytes + n;
}

static inline uint64_t
load64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

/* The n bytes at a and b are the same; from 8 to 64 bytes by words (the
 * last one may overlap), never reading past n. */
static inline bool
bytes_eq(const uint8_t *a, const uint8_t *b, size_t n)
{
	if (n >= 8 && n <= 64) {
		uint64_t d = load64(a + n - 8) ^ load64(b + n - 8);
		for (size_t i = 0; i + 8 < n; i += 8)
			d |= load64(a + i) ^ load64(b + i);
		return d == 0;
	}
	return n == 0 || memcmp(a, b, n) == 0;
}

/* A slot for a value in put_bytes_col's table: only its spread counts
 * (equal values are found by comparing them), so a value of 8 to 64
 * bytes is hashed by three of its words (first, middle, last), others
 * with XXH3. */
static inline uint32_t
val_hash(const uint8_t *p, size_t n)
{
	if (n < 8 || n > 64)
		return (uint32_t)XXH3_64bits(p, n);
	uint64_t h = load64(p) * 0x9e3779b97f4a7c15ull;
	h ^= load64(p + n / 2 - 4) * 0xc2b2ae3d27d4eb4full;
	h ^= load64(p + n - 8) * 0x165667b19e3779f9ull;
	h ^= n;
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	return (uint32_t)(h >> 32);
}

/* The remap of row r's input chunk for its value k, *di its entry
 * there; NULL when the value came from no input dictionary. */
static inline remap *
remap_of(remap *rm, const wrow *r, unsigned k, unsigned *di)
{
	if (!(r->dmask >> k & 1))
		return NULL;
	remap *m = &rm[r->dkey % REMAPS];
	*di = r->didx[k];
	if (m->key != r->dkey) {
		m->key = r->dkey;
		memset(m->slot, 0, m->hi * sizeof(m->slot[0]));
		m->hi = 0;
	}
	return m;
}

/*
 * A byte-valued column of n values at p: a dictionary of the distinct
 * values when there are at most DICT_MAX (mode, count - 1, the values'
 * uvarint lengths, their bytes, one index byte per row), else plain (mode,
 * n uvarint lengths, the bytes). slots: 2 x DICT_MAX entries of scratch,
 * dist: DICT_MAX, idx: n. rm (REMAPS, or NULL): a row whose value k came
 * from an input dictionary takes the index its entry was given at its
 * first row, without hashing; the first row of each entry is hashed as
 * any, so the column is the same bytes either way. Each value is copied
 * as ms__copy_short copies it: MS__COPY_SLACK bytes are readable past
 * each, and the column is followed by that much room (encode_payload).
 */
static uint8_t *
put_bytes_col(uint8_t *p, const bval *v, size_t n, uint16_t *slots, bval *dist,
              uint8_t *idx, const wrow *rows, unsigned k, remap *rm)
{
	const uint32_t mask = 2 * DICT_MAX - 1;
	uint32_t nd = 0;
	memset(slots, 0, 2 * DICT_MAX * sizeof(*slots));
	for (unsigned j = 0; rm && j < REMAPS; j++)
		rm[j].key = 0;
	for (size_t i = 0; i < n && nd <= DICT_MAX; i++) {
		unsigned di = 0;
		remap *m = rm ? remap_of(rm, &rows[i], k, &di) : NULL;
		if (m && m->slot[di]) {
			idx[i] = (uint8_t)(m->slot[di] - 1);
			continue;
		}
		uint32_t h = val_hash(v[i].p, v[i].len) & mask;
		for (;;) {
			uint16_t sl = slots[h];
			if (sl == 0) {
				if (nd == DICT_MAX) {
					nd++; /* too many: plain */
					break;
				}
				dist[nd] = v[i];
				slots[h] = (uint16_t)++nd;
				idx[i] = (uint8_t)(nd - 1);
				break;
			}
			const bval *d = &dist[sl - 1];
			if (d->len == v[i].len &&
			    bytes_eq(d->p, v[i].p, v[i].len)) {
				idx[i] = (uint8_t)(sl - 1);
				break;
			}
			h = (h + 1) & mask;
		}
		if (m && nd <= DICT_MAX) {
			m->slot[di] = (uint16_t)(idx[i] + 1);
			m->hi = di < m->hi ? m->hi : (uint16_t)(di + 1);
		}
	}
	if (nd <= DICT_MAX) {
		*p++ = COL_DICT;
		*p++ = (uint8_t)(nd - 1);
		for (uint32_t j = 0; j < nd; j++)
			p = ms_put_uvarint(p, dist[j].len);
		for (uint32_t j = 0; j < nd; j++)
			p = ms__copy_short(p, dist[j].p, dist[j].len);
		memcpy(p, idx, n);
		return p + n;
	}
	*p++ = COL_PLAIN;
	for (size_t i = 0; i < n; i++)
		p = ms_put_uvarint(p, v[i].len);
	for (size_t i = 0; i < n; i++)
		p = ms__copy_short(p, v[i].p, v[i].len);
	return p;
}

/* A chunk's n rows as its uncompressed payload in w->raw: series and key
 * deltas, trace ID lengths and bytes, then the four tag columns. */
static int
encode_payload(ms_sidx_writer *w, size_t n, ms_errbuf *eb)
{
	/* Series and key deltas (at most 10 bytes each), ID lengths and IDs
	 * (at most MS_TRACE_ID_MAX bytes each, a bound rather than their sum:
	 * a pass over the rows to size a buffer that is kept from chunk to
	 * chunk costs more than the room); tag columns: instance, endpoint,
	 * other (as 8-byte values on the latency index, at most 10 varint
	 * bytes on the other), tags. */
	size_t need = n * (21 + MS_TRACE_ID_MAX) + 4 * bytes_col_bound(n, 0) +
	              w->vals.len + n * 18 + MS_TRACE_ID_MAX + 8;
	ms_buf_reset(&w->raw);
	ms_buf_reset(&w->tmp);
	size_t rm_size = w->remaps ? REMAPS * sizeof(remap) : 0;
	size_t tmp = rm_size + n * (sizeof(bval) + 1 + 8) +
	             DICT_MAX * (sizeof(bval) + 4) + MS__COPY_SLACK;
	int rc = ms_buf_reserve(&w->raw, need);
	if (rc == MS_ERR_NOMEM)
		return swfail(w, eb, rc, MS__F_DATA,
		              "out of memory for a chunk's payload of %zu "
		              "rows (%zu bytes)",
		              n, need);
	if (rc == 0 && (rc = ms_buf_presize(&w->tmp, tmp)) == MS_ERR_NOMEM)
		return swfail(w, eb, rc, MS__F_DATA,
		              "out of memory for a chunk's tag dictionaries "
		              "of %zu rows (%zu bytes)",
		              n, tmp);
	if (rc)
		return swfail(w, eb, rc, MS__F_DATA, "chunk buffer: %s",
		              ms_strerror(rc));
	remap *rm = w->remaps ? (remap *)(void *)w->tmp.data : NULL;
	for (unsigned j = 0; rm && j < REMAPS; j++) {
		rm[j].key = 0; /* what tmp held before is not known */
		rm[j].hi = DICT_MAX;
	}
	bval *v = (bval *)(void *)(w->tmp.data + rm_size);
	bval *dist = v + n;
	uint16_t *slots = (uint16_t *)(void *)(dist + DICT_MAX);
	uint8_t *idx = (uint8_t *)(slots + 2 * DICT_MAX);
	uint8_t *ts = idx + n;
	uint8_t *p = w->raw.data;
	uint64_t prev = 0;
	size_t *end = w->piece_end;
	for (size_t i = 0; i < n; i++) {
		p = put_uv_col(p, w->chunk[i].series - prev);
		prev = w->chunk[i].series;
	}
	end[0] = (size_t)(p - w->raw.data);
	prev = 0;
	for (size_t i = 0; i < n; i++) {
		p = put_sv(p, (uint64_t)w->chunk[i].key - prev);
		prev = (uint64_t)w->chunk[i].key;
	}
	end[1] = (size_t)(p - w->raw.data);
	for (size_t i = 0; i < n; i++)
		*p++ = (uint8_t)w->chunk[i].tid_len;
	end[2] = (size_t)(p - w->raw.data);
	/* Whole ID arrays, each overwritten from its length on by the
	 * next (`need` has room for the last one's). */
	for (size_t i = 0; i < n; i++) {
		memcpy(p, w->chunk[i].tid, MS_TRACE_ID_MAX);
		p += w->chunk[i].tid_len;
	}
	end[3] = (size_t)(p - w->raw.data);
	for (unsigned c = 0; c < 2; c++) {
		const uint8_t *q = w->vals.data;
		for (size_t i = 0; i < n; i++) {
			const wrow *r = &w->chunk[i];
			v[i].p = q + (c ? r->len[0] : 0);
			v[i].len = r->len[c];
			q += (size_t)r->len[0] + r->len[1] + r->len[2];
		}
		p = put_bytes_col(p, v, n, slots, dist, idx, w->chunk, c, rm);
		end[4 + c] = (size_t)(p - w->raw.data);
	}
	if (w->kind == MS_KIND_LATENCY) {
		for (size_t i = 0; i < n; i++) {
			ms_put_le64(ts + 8 * i, (uint64_t)w->chunk[i].other);
			v[i].p = ts + 8 * i;
			v[i].len = 8;
		}
		p = put_bytes_col(p, v, n, slots, dist, idx, NULL, 0, NULL);
	} else {
		prev = 0;
		for (size_t i = 0; i < n; i++) {
			p = put_sv(p, (uint64_t)w->chunk[i].other - prev);
			prev = (uint64_t)w->chunk[i].other;
		}
	}
	end[6] = (size_t)(p - w->raw.data);
	const uint8_t *q = w->vals.data;
	for (size_t i = 0; i < n; i++) {
		const wrow *r = &w->chunk[i];
		v[i].p = q + r->len[0] + r->len[1];
		v[i].len = r->len[2];
		q += (size_t)r->len[0] + r->len[1] + r->len[2];
	}
	p = put_bytes_col(p, v, n, slots, dist, idx, w->chunk, 2, rm);
	w->raw.len = end[7] = (size_t)(p - w->raw.data);
	return 0;
}

/* The payload's pieces (w->raw cut at w->piece_end) at z, each a codec
 * byte, a uvarint size and its bytes: a zstd frame from PIECE_ZSTD_MIN
 * bytes on, else the bytes as they are. z has room for
 * pieces_bound(w); *len is the payload's size. */
static size_t
pieces_bound(const ms_sidx_writer *w)
{
	size_t b = 0, at = 0;
	for (unsigned c = 0; c < NPIECES; c++) {
		b += 1 + 10 + ZSTD_compressBound(w->piece_end[c] - at);
		at = w->piece_end[c];
	}
	return b;
}

static int
put_pieces(ms_sidx_writer *w, uint8_t *z, size_t *len, ms_errbuf *eb)
{
	uint8_t *p = z;
	size_t at = 0;
	for (unsigned c = 0; c < NPIECES; c++) {
		const uint8_t *src = w->raw.data + at;
		size_t n = w->piece_end[c] - at;
		at = w->piece_end[c];
		if (n < PIECE_ZSTD_MIN) {
			*p++ = PIECE_STORED;
			p = ms_put_uvarint(p, n);
			if (n)
				memcpy(p, src, n);
			p += n;
			continue;
		}
		/* Compressed after room for the longest size varint, then
		 * moved down next to the size actually written. */
		size_t bound = ZSTD_compressBound(n);
		size_t room = ms_uvarint_len(bound);
		uint8_t *body = p + 1 + room;
		size_t k = ZSTD_compressCCtx(w->cctx, body, bound, src, n,
		                             w->level);
		if (ZSTD_isError(k) && ms__zstd_err(k) == MS_ERR_NOMEM)
			return swfail(w, eb, MS_ERR_NOMEM, MS__F_DATA,
			              "out of memory for zstd's workspace "
			              "(about %zu bytes)",
			              ZSTD_estimateCCtxSize(w->level));
		if (ZSTD_isError(k))
			return swfail(w, eb, ms__zstd_err(k), MS__F_DATA,
			              "zstd: %s", ZSTD_getErrorName(k));
		*p++ = PIECE_ZSTD;
		p = ms_put_uvarint(p, k);
		if (p != body)
			memmove(p, body, k);
		p += k;
	}
	*len = (size_t)(p - z);
	return 0;
}

static int
flush_chunk(ms_sidx_writer *w, ms_errbuf *eb)
{
	size_t n = w->nchunk;
	if (n == 0)
		return 0;
	int rc = encode_payload(w, n, eb);
	if (rc)
		return rc;

	ms_buf_reset(&w->out);
	size_t bound = MS__CHUNK_HDR + pieces_bound(w);
	rc = ms_buf_reserve(&w->out, bound);
	if (rc == MS_ERR_NOMEM)
		return swfail(
		        w, eb, rc, MS__F_DATA,
		        "out of memory for a compressed chunk of %zu rows "
		        "(%zu bytes)",
		        n, bound);
	if (rc)
		return swfail(w, eb, rc, MS__F_DATA, "chunk buffer: %s",
		              ms_strerror(rc));
	size_t at = w->out.len;
	uint8_t *h = w->out.data + at;
	size_t k = 0;
	rc = put_pieces(w, h + MS__CHUNK_HDR, &k, eb);
	if (rc)
		return rc;
	memcpy(h, MS__CHUNK_MAGIC, 4);
	ms_put_le32(h + offsetof(struct ms__chunk_disk, nrows), (uint32_t)n);
	ms_put_le32(h + offsetof(struct ms__chunk_disk, stored), (uint32_t)k);
	ms_put_le32(h + offsetof(struct ms__chunk_disk, raw),
	            (uint32_t)w->raw.len);
	ms_put_le64(h + offsetof(struct ms__chunk_disk, payload_xxh),
	            XXH64(h + MS__CHUNK_HDR, k, 0));
	ms_put_le64(h + offsetof(struct ms__chunk_disk, header_xxh),
	            XXH64(h, offsetof(struct ms__chunk_disk, header_xxh), 0));
	size_t len = MS__CHUNK_HDR + k;

	uint8_t e[sizeof(struct ms__sidx_entry)];
#define PUT64(f, v) ms_put_le64(e + offsetof(struct ms__sidx_entry, f), v)
	PUT64(offset, w->data_off);
	ms_put_le32(e + offsetof(struct ms__sidx_entry, stored), (uint32_t)len);
	ms_put_le32(e + offsetof(struct ms__sidx_entry, nrows), (uint32_t)n);
	PUT64(first_series, w->chunk[0].series);
	PUT64(first_key, (uint64_t)w->chunk[0].key);
	PUT64(last_series, w->chunk[n - 1].series);
	PUT64(last_key, (uint64_t)w->chunk[n - 1].key);
#undef PUT64
	rc = ms_buf_append(&w->index, e, sizeof(e));
	if (rc == MS_ERR_NOMEM)
		return swfail(w, eb, rc, MS__F_INDEX,
		              "out of memory for the entry of chunk %llu "
		              "(%zu bytes)",
		              (unsigned long long)w->meta.blocks + 1,
		              w->index.len + sizeof(e));
	if (rc)
		return swfail(w, eb, rc, MS__F_INDEX, "%s", ms_strerror(rc));
	XXH64_update(&w->content, h, len);
	w->data_off += len;
	w->meta.blocks++;
	w->meta.uncompressed_bytes += w->raw.len;
	w->last = w->chunk[n - 1];
	w->nchunk = 0;
	ms_buf_reset(&w->vals);
	/* A chunk is tens of KiB: written at once, `out` stays one chunk. */
	rc = ms__write_all(w->fd, h, len, w->io);
	if (rc)
		return swfail(w, eb, rc, MS__F_DATA, "write: %s",
		              strerror(errno));
	return 0;
}

/* Order of a row against a stored one (series, key, value). */
static inline int
wrow_cmp(const ms_sidx_row *a, const wrow *b, bool padded)
{
	if (a->series != b->series)
		return a->series < b->series ? -1 : 1;
	if (a->key != b->key)
		return a->key < b->key ? -1 : 1;
	return padded ? tid_cmp_padded(a->tid, a->tid_len, b->tid, b->tid_len)
	              : ms_trace_id_cmp(a->tid, a->tid_len, b->tid,
	                                b->tid_len);
}

/* Room for one more row in the chunk being built: the chunk is written
 * out once it is full (rows or tag values), and its row array grows by
 * doubling up to a chunk's rows. */
static int
writer_room(ms_sidx_writer *w, ms_errbuf *eb)
{
	if (w->nchunk == MS__CHUNK_ROWS || w->vals.len >= CHUNK_VALS) {
		int rc = flush_chunk(w, eb);
		if (rc)
			return rc;
	}
	if (w->nchunk < w->chunk_cap)
		return 0;
	size_t nc = w->chunk_cap * 2 > MS__CHUNK_ROWS ? MS__CHUNK_ROWS
	                                               : w->chunk_cap * 2;
	wrow *c = ms_mem_realloc(w->mem, w->chunk, w->chunk_cap * sizeof(wrow),
	                         nc * sizeof(wrow));
	if (!c)
		return swfail(w, eb, MS_ERR_NOMEM, MS__F_DATA,
		              "out of memory for a chunk of %zu rows (%zu bytes)",
		              nc, nc * sizeof(wrow));
	w->chunk = c;
	w->chunk_cap = nc;
	return 0;
}

/* raw: NULL, or the row's instance, endpoint and tag list already
 * encoded (by a reader that checked them as this function does) and
 * lying in its payload buffer; then the row is an iterator's, its trace
 * ID zero past its length, src (may be NULL) says which of them came
 * from its chunk's dictionaries. Every row's order is checked, a
 * merge's too: its rows come in order by construction (merge design 2),
 * and this is what says so if that construction is ever wrong. */
static ALWAYS_INLINE int
writer_add(ms_sidx_writer *w, const ms_sidx_row *row, const bval *raw,
           const struct wsrc *src, ms_errbuf *eb)
{
	if (!w || w->failed)
		return ms_fail(eb, MS_ERR_STATE,
		               "index part writer: failed before");
	unsigned long long at = (unsigned long long)w->meta.rows;
	if (row->tid_len < 1 || row->tid_len > MS_TRACE_ID_MAX)
		return swfail(w, eb, MS_ERR_INVAL, "rows",
		              "row %llu: trace ID of %u bytes, expected 1..%d "
		              "bytes",
		              at, row->tid_len, MS_TRACE_ID_MAX);
	if (w->meta.rows && wrow_cmp(row, w->nchunk ? &w->chunk[w->nchunk - 1]
	                                            : &w->last,
	                             raw != NULL) < 0)
		return swfail(w, eb, MS_ERR_INVAL, "rows",
		              "row %llu sorts before the previous one", at);
	size_t li, le, lt = 0;
	uint32_t nt = 0;
	if (raw) {
		li = raw[0].len;
		le = raw[1].len;
		lt = raw[2].len;
	} else {
		li = row->instance ? strlen(row->instance) : 0;
		le = row->endpoint ? strlen(row->endpoint) : 0;
		nt = row->tags ? row->ntags : 0;
	}
	if (li > MS_STR_MAX || le > MS_STR_MAX)
		return swfail(w, eb, MS_ERR_INVAL, "rows",
		              "row %llu: instance of %zu or endpoint of %zu "
		              "bytes, at most %d",
		              at, li, le, MS_STR_MAX);
	if (nt > MS_TAGS_MAX)
		return swfail(w, eb, MS_ERR_INVAL, "rows",
		              "row %llu: %u tags, at most %d", at, nt,
		              MS_TAGS_MAX);
	if (w->kind == MS_KIND_START_TIME &&
	    (row->other < 0 || row->other > (int64_t)UINT32_MAX))
		return swfail(w, eb, MS_ERR_INVAL, "rows",
		              "row %llu: latency %lld outside 0..%u", at,
		              (long long)row->other, UINT32_MAX);
	if (!raw)
		lt = ms_uvarint_len(nt);
	for (uint32_t i = 0; i < nt; i++) {
		size_t l = row->tags[i] ? strlen(row->tags[i]) : 0;
		if (!row->tags[i] || l > MS_TAG_MAX)
			return swfail(w, eb, MS_ERR_INVAL, "rows",
			              "row %llu: tag %u is NULL or longer "
			              "than %d bytes",
			              at, i, MS_TAG_MAX);
		lt += ms_uvarint_len(l) + l;
	}
	if (w->nchunk == MS__CHUNK_ROWS || w->vals.len >= CHUNK_VALS ||
	    w->nchunk == w->chunk_cap) {
		int rc = writer_room(w, eb);
		if (rc)
			return rc;
	}
	int rc = li + le + lt + MS__COPY_SLACK <= w->vals.cap - w->vals.len
	                 ? 0
	                 : ms_buf_reserve(&w->vals,
	                                  li + le + lt + MS__COPY_SLACK);
	if (rc == MS_ERR_NOMEM)
		return swfail(w, eb, rc, MS__F_DATA,
		              "out of memory for the tag values of a chunk "
		              "(%zu bytes)",
		              w->vals.len + li + le + lt + MS__COPY_SLACK);
	if (rc)
		return swfail(w, eb, rc, MS__F_DATA, "tag values: %s",
		              ms_strerror(rc));
	wrow *c = &w->chunk[w->nchunk++];
	c->series = row->series;
	c->key = row->key;
	c->other = row->other;
	c->len[0] = (uint32_t)li;
	c->len[1] = (uint32_t)le;
	c->len[2] = (uint32_t)lt;
	c->tid_len = row->tid_len;
	c->dmask = 0;
	if (src && src->mask) {
		w->remaps = true;
		c->dkey = src->key;
		c->dmask = src->mask;
		memcpy(c->didx, src->idx, sizeof(c->didx));
	}
	if (raw) {
		memcpy(c->tid, row->tid, MS_TRACE_ID_MAX);
	} else {
		memcpy(c->tid, row->tid, row->tid_len);
		memset(c->tid + row->tid_len, 0,
		       MS_TRACE_ID_MAX - row->tid_len);
	}
	uint8_t *p = w->vals.data + w->vals.len;
	if (raw) {
		for (unsigned k = 0; k < 3; k++)
			p = ms__copy_short(p, raw[k].p, raw[k].len);
	} else {
		memcpy(p, row->instance ? row->instance : "", li);
		memcpy(p + li, row->endpoint ? row->endpoint : "", le);
		p = ms_put_uvarint(p + li + le, nt);
		for (uint32_t i = 0; i < nt; i++) {
			size_t l = strlen(row->tags[i]);
			p = ms_put_uvarint(p, l);
			memcpy(p, row->tags[i], l);
			p += l;
		}
	}
	w->vals.len += li + le + lt;
	if (w->meta.rows == 0 || row->key < w->meta.min_ts)
		w->meta.min_ts = row->key;
	if (w->meta.rows == 0 || row->key > w->meta.max_ts)
		w->meta.max_ts = row->key;
	w->meta.rows++;
	return 0;
}

/* Room in w->vals for the first full chunk of a merge of `rows` rows at
 * once: the tag values a chunk takes are about the inputs' payload bytes
 * a row (raw of rows) times a chunk's rows, at most CHUNK_VALS. Grown
 * value by value, the buffer was reallocated and copied a dozen times in
 * each merge. Only a first size: a chunk whose values take more grows it
 * as before; a merge of less than a chunk grows it as before too (its
 * buffer is small, and sized to what it holds). */
static int
vals_presize(ms_sidx_writer *w, uint64_t rows, uint64_t raw, ms_errbuf *eb)
{
	if (rows < MS__CHUNK_ROWS)
		return 0;
	uint64_t per_row = raw / rows;
	uint64_t want = per_row > CHUNK_VALS / MS__CHUNK_ROWS
	                        ? CHUNK_VALS
	                        : per_row * MS__CHUNK_ROWS;
	want += MS__COPY_SLACK;
	int rc = ms_buf_presize(&w->vals, (size_t)want);
	if (rc == MS_ERR_NOMEM)
		return swfail(w, eb, rc, MS__F_DATA,
		              "out of memory for the tag values of a chunk "
		              "(%llu bytes)",
		              (unsigned long long)want);
	if (rc)
		return swfail(w, eb, rc, MS__F_DATA, "tag values: %s",
		              ms_strerror(rc));
	return 0;
}

int
ms_sidx_writer_add(ms_sidx_writer *w, const ms_sidx_row *row, ms_errbuf *eb)
{
	return writer_add(w, row, NULL, NULL, eb);
}

int
ms_sidx_writer_finish(ms_sidx_writer *w, ms_part_meta *meta, ms_errbuf *eb)
{
	if (!w)
		return ms_fail(eb, MS_ERR_INVAL, "index part writer: NULL");
	if (w->failed) {
		ms_sidx_writer_abort(w);
		return ms_fail(eb, MS_ERR_STATE,
		               "index part writer: an earlier add failed");
	}
	int rc = flush_chunk(w, eb);
	if (rc)
		goto out;
	ms_buf *idx = &w->index;
	rc = ms__index_seal(idx, w->kind, w->meta.blocks,
	                    sizeof(struct ms__sidx_entry));
	if (rc == MS_ERR_NOMEM) {
		rc = swfail(w, eb, rc, MS__F_INDEX,
		            "out of memory for its checksum (%zu bytes)",
		            idx->len + 8);
		goto out;
	}
	if (rc) {
		rc = swfail(w, eb, rc, MS__F_INDEX, "%s", ms_strerror(rc));
		goto out;
	}
	w->meta.checksum = XXH64_digest(&w->content);
	w->meta.compressed_bytes = w->data_off + idx->len + MS__FOOTER_SIZE;
	uint8_t f[MS__FOOTER_SIZE];
	ms__footer_encode(f, &w->meta, w->kind, w->data_off, idx->len, 0);
	/* Index and footer through the descriptor that wrote the chunks,
	 * fsynced once as it is closed. */
	const char *file;
	int fd = w->fd;
	w->fd = -1;
	rc = ms__part_seal(fd, idx->data, idx->len, NULL, 0, f, w->no_sync,
	                   w->io, &file);
	if (rc)
		rc = swfail(w, eb, rc, file, "%s", ms__write_err_text(rc));
	if (rc == 0 && meta)
		*meta = w->meta;
out:
	if (rc)
		ms_sidx_writer_abort(w);
	else
		swriter_free(w);
	return rc;
}

static int
row_cmp_qsort(const void *a, const void *b)
{
	return row_cmp_full(a, b);
}

int
ms_sidx_write_rows(enum ms_part_kind kind, const char *tmp_path, uint64_t id,
                   const ms_row *rows, size_t n,
                   const ms_part_writer_opts *opts, ms_part_meta *meta,
                   ms_errbuf *eb)
{
	ms_mem *mem = opts ? opts->mem : NULL;
	char idstr[17];
	if (check_index_kind(kind, id, idstr, eb))
		return MS_ERR_INVAL;
	size_t bytes;
	if (!ms_mul_ok(n, sizeof(ms_sidx_row), &bytes))
		return ms_fail(eb, MS_ERR_RANGE, "index part %s: %zu rows",
		               idstr, n);
	for (size_t i = 0; i < n; i++)
		if (!rows[i].trace_id || rows[i].trace_id_len < 1 ||
		    rows[i].trace_id_len > MS_TRACE_ID_MAX)
			return ms_fail(eb, MS_ERR_INVAL,
			               "%s index part %s: row %zu: trace ID "
			               "length %u",
			               ms_part_kind_name(kind), idstr, i,
			               rows[i].trace_id_len);
	ms_sidx_row *v = ms_mem_alloc(mem, bytes);
	if (!v)
		return ms_fail(eb, MS_ERR_NOMEM,
		               "%s index part %s: out of memory for %zu rows "
		               "(%zu bytes)",
		               ms_part_kind_name(kind), idstr, n, bytes);
	for (size_t i = 0; i < n; i++)
		ms_sidx_row_of(kind, &rows[i], &v[i]);
	qsort(v, n, sizeof(*v), row_cmp_qsort);
	ms_sidx_writer *w;
	int rc = swriter_open(&w, kind, tmp_path, id, opts, n, eb);
	for (size_t i = 0; rc == 0 && i < n; i++)
		rc = ms_sidx_writer_add(w, &v[i], eb);
	if (rc == 0)
		rc = ms_sidx_writer_finish(w, meta, eb);
	else if (w)
		ms_sidx_writer_abort(w);
	ms_mem_free(mem, v, bytes);
	return rc;
}

/* ---- reading ---- */

static void
entry_first_last(const uint8_t *e, ms_sidx_row *first, ms_sidx_row *last)
{
	memset(first, 0, sizeof(*first));
	memset(last, 0, sizeof(*last));
	first->series =
	        ms_le64(e + offsetof(struct ms__sidx_entry, first_series));
	first->key = (int64_t)ms_le64(
	        e + offsetof(struct ms__sidx_entry, first_key));
	last->series =
	        ms_le64(e + offsetof(struct ms__sidx_entry, last_series));
	last->key =
	        (int64_t)ms_le64(e + offsetof(struct ms__sidx_entry, last_key));
}

/* (series, key) order only. */
static int
sk_cmp(const ms_sidx_row *a, const ms_sidx_row *b)
{
	if (a->series != b->series)
		return a->series < b->series ? -1 : 1;
	if (a->key != b->key)
		return a->key < b->key ? -1 : 1;
	return 0;
}

int
ms__sidx_check_index(const ms_part *p, ms_errbuf *eb)
{
	uint64_t off = 0, rows = 0;
	ms_sidx_row prev_last = { 0 };
	for (uint64_t i = 0; i < p->meta.blocks; i++) {
		const uint8_t *e = ms__part_entry(p, i);
		uint64_t o = ms_le64(e);
		uint32_t st = ms_le32(e + 8), nr = ms_le32(e + 12);
		ms_sidx_row f, l;
		entry_first_last(e, &f, &l);
		if (o != off || st < MS__CHUNK_HDR || nr < 1 ||
		    nr > MS__CHUNK_ROWS || st > p->data_bytes - off ||
		    sk_cmp(&f, &l) > 0 || (i && sk_cmp(&prev_last, &f) > 0))
			return ms__part_fail(p, eb, MS_ERR_CORRUPT, MS__F_INDEX,
			                     "entry %llu: offset %llu, %u "
			                     "bytes, %u rows, or key order",
			                     (unsigned long long)i,
			                     (unsigned long long)o, st, nr);
		prev_last = l;
		off += st;
		rows += nr;
	}
	return ms__part_check_cover(p, off, rows, eb);
}

/*
 * Iterator design:
 *  1. A loaded chunk is kept uncompressed in `raw` only (its pieces
 *     inflated there back to back): its columns
 *     (series deltas, key deltas, ID lengths, IDs, then the tag columns)
 *     are located by load_chunk, which also checks their lengths, every ID
 *     length and every tag value, and copies the dictionaries' values into
 *     `arena` as NUL-terminated strings (tag lists as pointer arrays in
 *     `ptrs`); rows are decoded one at a time by next_row, a plain value
 *     copied into the same arena then, so an iterator holds no row array.
 *     arena and ptrs are sized at load for the whole chunk and never move
 *     until the next load: a row's strings live until the next call.
 *  2. pos rows of the loaded chunk (nrows) have been returned;
 *     row[ci] is the last one returned and row[ci ^ 1] the one before it
 *     (in this chunk or the previous one), which it had to sort after.
 *  3. The last row of a chunk is checked against the index entry and the
 *     columns must then be used up exactly.
 *  4. dctx is borrowed (shared by the iterators of one merge, which
 *     decompress one chunk at a time on one thread) or owned.
 *  5. `raw` holds MS_TRACE_ID_MAX zero bytes past the payload, so that
 *     a decoder may read whole words or whole ID arrays from any position
 *     inside it (col_uv, decode_row, mat_str, ms__copy_short in a
 *     merge's writer and in the ledger of a part).
 *  6. Every row returned has its trace ID zero past its length.
 */
/* A decoded tag value. */
typedef union rval {
	const char *s;
	int64_t i;
	struct {
		const char *const *t;
		uint32_t n;
	} tl;
} rval;

/* A byte-valued tag column of the loaded chunk. */
struct rcol {
	uint8_t mode;
	uint32_t ndict;        /* COL_DICT: values in the dictionary */
	const uint8_t *idx;     /* COL_DICT: one index per row */
	const uint8_t *lp, *bp; /* COL_PLAIN: length and byte cursors */
	rval *dict; /* COL_DICT: ndict values, in the iterator's `dicts` */
	bval *rd; /* COL_DICT on a passthru chunk: the values' encoded
	           * bytes instead of `dict` (columns 0, 1, 3) */
};

struct ms_sidx_iter {
	const ms_part *p;
	ms_mem *mem;
	ms__win win;
	ZSTD_DCtx *dctx;
	bool own_dctx;
	ms_buf raw;
	ms_buf arena; /* the loaded chunk's strings, NUL-terminated */
	ms_buf ptrs;  /* its tag lists: arrays of pointers into arena */
	ms_buf dicts; /* its columns' dictionaries (rval) */
	/* Tag columns: instance, endpoint, other (latency index), tags. */
	struct rcol cols[4];
	const uint8_t *op; /* other as svarint deltas (start_time index) */
	uint64_t po;
	/* Cursors into the series, key and ID columns and their ends. */
	const uint8_t *sp, *kp, *tp, *s_end, *k_end, *t_end;
	const uint8_t *lens;  /* ID length column */
	const uint8_t *entry; /* index entry of the loaded chunk */
	uint64_t ps, pk;      /* series and key of the previous row */
	uint32_t nrows, pos;
	uint64_t next; /* next chunk */
	uint64_t rows_seen, raw_seen;
	int64_t min_key, max_key;
	ms_sidx_row row[2];
	/* Encoded instance, endpoint and tag list of row[i], in `raw`, and
	 * the dictionary entries they are (passthru chunks). */
	bval rv[2][3];
	struct wsrc rs[2];
	/* A merge's count of the chunks its iterators loaded (borrowed;
	 * NULL outside a merge): the loaded chunk's wsrc key is its value
	 * after this chunk's load, `dmask` which of its columns 0, 1, 3
	 * (bits 0, 1, 2) are dictionaries, 0 unless passthru. */
	uint32_t *chunk_seq;
	uint32_t dkey;
	uint8_t dmask;
	unsigned ci;
	/* raw_mode: set by a merge, which copies tag values encoded; then a
	 * chunk whose tag lists are all canonically encoded is `passthru`:
	 * its rows carry rv only (instance, endpoint, tags NULL). */
	bool raw_mode, passthru;
	XXH64_state_t content;
	bool failed, done;
};

/* dctx: borrowed decompression context, or NULL to own one (made at the
 * first chunk). */
static int
siter_open(ms_sidx_iter **out, const ms_part *p, ms_mem *mem, ms_io *io,
           ZSTD_DCtx *dctx, ms_errbuf *eb)
{
	*out = NULL;
	if (!is_index_kind(p->kind))
		return ms__part_fail(p, eb, MS_ERR_INVAL, MS__F_DATA,
		                     "a %s part is not an index part",
		                     ms_part_kind_name(p->kind));
	ms_sidx_iter *it = ms_mem_calloc(mem, 1, sizeof(*it));
	if (!it)
		return ms__part_fail(
		        p, eb, MS_ERR_NOMEM, MS__F_DATA,
		        "out of memory for an iterator (%zu bytes)",
		        sizeof(*it));
	it->p = p;
	it->mem = mem;
	it->win.fd = -1;
	it->dctx = dctx;
	it->own_dctx = dctx == NULL;
	ms_buf_init(&it->raw, mem, RAW_MAX + MS_TRACE_ID_MAX);
	ms_buf_init(&it->arena, mem, RAW_MAX + MS__COPY_SLACK);
	ms_buf_init(&it->ptrs, mem, 0);
	ms_buf_init(&it->dicts, mem, 0);
	XXH64_reset(&it->content, 0);
	int rc = ms__win_open(&it->win, p, mem, io, eb);
	if (rc) {
		ms_sidx_iter_close(it);
		return rc;
	}
	*out = it;
	return 0;
}

int
ms_sidx_iter_open(ms_sidx_iter **out, const ms_part *p, ms_mem *mem, ms_io *io,
                  ms_errbuf *eb)
{
	return siter_open(out, p, mem, io, NULL, eb);
}

void
ms_sidx_iter_close(ms_sidx_iter *it)
{
	if (!it)
		return;
	ms__win_close(&it->win);
	if (it->own_dctx)
		ZSTD_freeDCtx(it->dctx);
	ms_buf_release(&it->raw);
	ms_buf_release(&it->arena);
	ms_buf_release(&it->ptrs);
	ms_buf_release(&it->dicts);
	ms_mem_free(it->mem, it, sizeof(*it));
}

static int sifail(ms_sidx_iter *it, ms_errbuf *eb, int err, const char *fmt,
                  ...) __attribute__((format(printf, 4, 5)));

static int
sifail(ms_sidx_iter *it, ms_errbuf *eb, int err, const char *fmt, ...)
{
	it->failed = true;
	va_list ap;
	va_start(ap, fmt);
	int rc =
	        ms__part_unit_vfail(it->p, eb, err, "chunk", it->next, fmt, ap);
	va_end(ap);
	return rc;
}

/* Skip n varints of r (as ms_rd_uvarint reads them, at most 10 bytes
 * each); false if they do not fit. Whole words are taken while they end
 * fewer varints than are left (the length of each only matters through
 * its run of continuation bytes), then the bytes one by one. */
static bool
skip_varints(ms_rd *r, uint32_t n)
{
	const uint8_t *p = r->p, *end = r->p + r->left;
	unsigned k = 0; /* bytes of the varint under way */
	while (end - p >= 8) {
		uint64_t stop = ~ms_le64(p) & 0x8080808080808080ull;
		/* Their count: one bit a byte, summed by the multiply into
		 * the top byte (no popcount instruction is assumed). */
		unsigned c =
		        (unsigned)(((stop >> 7) * 0x0101010101010101ull) >> 56);
		if (c >= n)
			break;
		if (stop == 0) {
			k += 8;
		} else {
			if (k + (unsigned)__builtin_ctzll(stop) / 8 >= 10)
				return false;
			k = 7 - (unsigned)(63 - __builtin_clzll(stop)) / 8;
		}
		if (k >= 10)
			return false;
		n -= c;
		p += 8;
	}
	for (; n > 0; n--, k = 0)
		for (;;) {
			if (p == end || k == 10)
				return false;
			k++;
			if (!(*p++ & 0x80))
				break;
		}
	r->left = (size_t)(end - p);
	r->p = p;
	return true;
}

/* One varint of the loaded chunk that load_chunk has bounded (at most 10
 * bytes, inside its column), read as ms_rd_uvarint reads it: the payload
 * has MS_TRACE_ID_MAX bytes of room past its end, so the first 8 bytes
 * are read as one word. */
static inline uint64_t
col_uv(const uint8_t **pp)
{
	const uint8_t *p = *pp;
	uint64_t w = ms_le64(p);
	if (!(w & 0x80)) { /* one byte: most lengths, deltas and counts */
		*pp = p + 1;
		return w & 0x7f;
	}
	uint64_t stop = ~w & 0x8080808080808080ull;
	if (!stop)
		return ms__get_uv(pp);
	unsigned bits = (unsigned)__builtin_ctzll(stop) + 1;
	if (bits < 64)
		w &= (1ull << bits) - 1;
	*pp = p + bits / 8;
	return ms__pack7(w);
}

/* A uvarint at *pp, which lies before end, read as ms_rd_uvarint reads
 * it (the one-byte case first: most lengths and counts of a chunk's
 * columns are under 128): false when it is malformed or runs past end.
 * The cursor is a local pointer, not a reader in memory. */
static inline bool
get_uv(const uint8_t **pp, const uint8_t *end, uint64_t *v)
{
	const uint8_t *p = *pp;
	if (p < end && *p < 0x80) {
		*v = *p;
		*pp = p + 1;
		return true;
	}
	ms_rd r;
	ms_rd_init(&r, p, (size_t)(end - p));
	*v = ms_rd_uvarint(&r);
	*pp = r.p;
	return !r.bad;
}

/* Copy n bytes of the payload to the arena as a NUL-terminated string
 * (room was made at load, MS__COPY_SLACK bytes more than the strings
 * take), a short one as one fixed-size block (the payload has
 * MS_TRACE_ID_MAX bytes past its end). */
static const char *
mat_str(ms_sidx_iter *it, const uint8_t *p, size_t n)
{
	char *d = (char *)it->arena.data + it->arena.len;
	ms__copy_short((uint8_t *)d, p, n);
	d[n] = 0;
	it->arena.len += n + 1;
	return d;
}

/* A tag list checked by check_taglist, into the arena and ptrs. */
static void
mat_tags(ms_sidx_iter *it, const uint8_t *p, rval *out)
{
	uint32_t n = (uint32_t)col_uv(&p);
	const char **t =
	        n ? (const char **)(void *)(it->ptrs.data + it->ptrs.len)
	          : NULL;
	for (uint32_t i = 0; i < n; i++) {
		size_t l = (size_t)col_uv(&p);
		t[i] = mat_str(it, p, l);
		p += l;
	}
	it->ptrs.len += n * sizeof(*t);
	out->tl.t = t;
	out->tl.n = n;
}

/* The value of row it->pos in byte column c: from the dictionary, or the
 * next plain value decoded as column c decodes. */
static rval
col_value(ms_sidx_iter *it, unsigned c, bval *raw)
{
	struct rcol *col = &it->cols[c];
	rval v = { 0 };
	if (col->mode == COL_DICT) {
		uint8_t d = col->idx[it->pos];
		if (!it->passthru || c == 2)
			return col->dict[d];
		*raw = col->rd[d];
		return v;
	}
	size_t l = (size_t)col_uv(&col->lp);
	if (raw && it->passthru)
		*raw = (bval){ col->bp, (uint32_t)l };
	if (c == 2)
		v.i = (int64_t)ms_le64(col->bp);
	else if (it->passthru)
		v.tl.n = 0;
	else if (c == 3)
		mat_tags(it, col->bp, &v);
	else
		v.s = mat_str(it, col->bp, l);
	col->bp += l;
	return v;
}

/*
 * A merge reads its inputs' chunks in turns, each one's columns a few
 * bytes a row: with tens of inputs, far more streams than the hardware
 * follows, and a row's trace ID or plain tag value missed the cache at
 * nearly every line (in a 26-input index merge its copy was a tenth of
 * the merge's time). The trace ID and plain value cursors ask for the
 * bytes two lines ahead, which their input's next turns read. Only a
 * hint: the address (computed as an integer, it may lie past the
 * payload) is never dereferenced and cannot fault.
 */
#if defined(__GNUC__) || defined(__clang__)
#define PREFETCH_AHEAD(p)                                                      \
	__builtin_prefetch((const void *)((uintptr_t)(p) + 128))
#else
#define PREFETCH_AHEAD(p) ((void)(p))
#endif

/* The encoded bytes of row it->pos in byte column c (0, 1, 3) of a
 * passthru chunk: col_value's `raw` alone; *di its dictionary entry when
 * the column is a dictionary. */
static inline bval
raw_value(ms_sidx_iter *it, unsigned c, uint8_t *di)
{
	struct rcol *col = &it->cols[c];
	if (col->mode == COL_DICT) {
		*di = col->idx[it->pos];
		return col->rd[*di];
	}
	bval b = { col->bp, (uint32_t)col_uv(&col->lp) };
	col->bp += b.len;
	PREFETCH_AHEAD(col->bp);
	return b;
}

/* The latency index's other (start_ns) of row it->pos: col_value's for
 * column 2, without its cases for the other columns. */
static inline int64_t
other_value(ms_sidx_iter *it)
{
	struct rcol *col = &it->cols[2];
	if (col->mode == COL_DICT)
		return col->dict[col->idx[it->pos]].i;
	size_t l = (size_t)col_uv(&col->lp);
	int64_t v = (int64_t)ms_le64(col->bp);
	col->bp += l;
	return v;
}

/* Decode the next row of the loaded chunk into v. The columns were
 * bounded and checked by load_chunk: each holds exactly nrows values,
 * and `raw` has MS_TRACE_ID_MAX bytes of room past the payload. */
static void
decode_row(ms_sidx_iter *it, ms_sidx_row *v)
{
	uint32_t len = it->lens[it->pos];
	uint64_t z;
	it->ps += col_uv(&it->sp);
	z = col_uv(&it->kp);
	it->pk += (uint64_t)((int64_t)(z >> 1) ^ -(int64_t)(z & 1));
	v->series = it->ps;
	v->key = (int64_t)it->pk;
	v->tid_len = len;
	memcpy(v->tid, it->tp, MS_TRACE_ID_MAX);
	memset(v->tid + len, 0, MS_TRACE_ID_MAX - len);
	it->tp += len;
	PREFETCH_AHEAD(it->tp);
	bval *rv = it->rv[v - it->row];
	struct wsrc *rs = &it->rs[v - it->row];
	if (it->passthru) {
		rs->key = it->dkey;
		rs->mask = it->dmask;
		rv[0] = raw_value(it, 0, &rs->idx[0]);
		rv[1] = raw_value(it, 1, &rs->idx[1]);
		v->instance = v->endpoint = NULL;
	} else {
		v->instance = col_value(it, 0, &rv[0]).s;
		v->endpoint = col_value(it, 1, &rv[1]).s;
	}
	if (it->p->kind == MS_KIND_LATENCY) {
		v->other = other_value(it);
	} else {
		z = col_uv(&it->op);
		it->po += (uint64_t)((int64_t)(z >> 1) ^ -(int64_t)(z & 1));
		v->other = (int64_t)it->po;
	}
	if (it->passthru) {
		rv[2] = raw_value(it, 3, &rs->idx[2]);
		v->tags = NULL;
		v->ntags = 0;
		return;
	}
	rval t = col_value(it, 3, &rv[2]);
	v->tags = t.tl.t;
	v->ntags = t.tl.n;
}

/* Some byte of the n at p is 0: memchr, a tag's 8 to 64 bytes by words
 * (the last one may overlap) without a call, never reading past n. */
static inline bool
has_nul(const uint8_t *p, size_t n)
{
	if (n < 8 || n > 64)
		return n && memchr(p, 0, n) != NULL;
	const uint64_t lo = 0x0101010101010101ull, hi = lo << 7;
	uint64_t w = load64(p + n - 8), z = (w - lo) & ~w & hi;
	for (size_t i = 0; i + 8 < n; i += 8) {
		w = load64(p + i);
		z |= (w - lo) & ~w & hi;
	}
	return z != 0;
}

/* Check one encoded tag list (the values of byte column 3); add to *strs
 * the arena bytes and to *ntags the pointers it needs. */
static bool
check_taglist(const uint8_t *p, uint64_t len, uint64_t *strs, uint64_t *ntags,
              bool *canon)
{
	const uint8_t *end = p + len, *at = p;
	uint64_t n;
	if (!get_uv(&p, end, &n) || n > MS_TAGS_MAX)
		return false;
	if ((size_t)(p - at) != ms_uvarint_len(n))
		*canon = false;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t l;
		at = p;
		if (!get_uv(&p, end, &l) || l > MS_TAG_MAX ||
		    l > (uint64_t)(end - p))
			return false;
		if ((size_t)(p - at) != ms_uvarint_len(l))
			*canon = false;
		if (has_nul(p, (size_t)l))
			return false;
		p += l;
		*strs += l + 1;
	}
	*ntags += n;
	return p == end;
}

/* Locate byte column c of nrows values at r, checking every value: a
 * string of column 0 or 1 holds no NUL (the column's bytes, all of them
 * values, are searched at once) and its arena bytes are added to *strs;
 * column 2's values (start_ns) are 8 bytes each; column 3's are tag lists
 * (check_taglist). */
static bool
parse_col(struct rcol *col, unsigned c, ms_rd *r, uint32_t nrows,
          uint64_t *strs, uint64_t *ntags, bool *canon)
{
	uint64_t max = c < 2 ? MS_STR_MAX : c == 2 ? 8 : TAGLIST_MAX;
	uint8_t mode = ms_rd_u8(r);
	uint32_t m = mode == COL_PLAIN ? nrows : 1u + ms_rd_u8(r);
	if (r->bad || mode > COL_DICT || m > nrows)
		return false;
	col->mode = mode;
	col->lp = r->p;
	uint64_t total = 0;
	const uint8_t *q = r->p, *end = r->p + r->left;
	for (uint32_t j = 0; j < m; j++) {
		uint64_t l;
		if (!get_uv(&q, end, &l) || l > max || (c == 2 && l != 8))
			return false;
		total += l;
	}
	r->left = (size_t)(end - q);
	r->p = q;
	const uint8_t *lp = col->lp;
	const uint8_t *bp = ms_rd_bytes(r, total);
	if (!bp)
		return false;
	col->bp = bp;
	if (c < 2) {
		*strs += total + m;
		if (total && memchr(bp, 0, (size_t)total))
			return false;
	}
	for (uint32_t j = 0; c == 3 && j < m; j++) {
		uint64_t l = col_uv(&lp);
		if (!check_taglist(bp, l, strs, ntags, canon))
			return false;
		bp += l;
	}
	if (mode == COL_PLAIN)
		return true;
	col->idx = ms_rd_bytes(r, nrows);
	if (!col->idx)
		return false;
	for (uint32_t i = 0; i < nrows; i++)
		if (col->idx[i] >= m)
			return false;
	col->ndict = m;
	return true;
}

/* Copy the dictionary values of column c into the arena; on a passthru
 * chunk, only locate them (rd) unless c is 2. A dictionary takes ndict
 * x sizeof(rval) of `dicts` either way. */
_Static_assert(sizeof(bval) <= sizeof(rval), "rd fits in dict's room");
static void
mat_dict(ms_sidx_iter *it, unsigned c)
{
	struct rcol *col = &it->cols[c];
	const uint8_t *lp = col->lp, *bp = col->bp;
	void *room = it->dicts.data + it->dicts.len;
	it->dicts.len += col->ndict * sizeof(rval);
	bool locate = it->passthru && c != 2;
	col->dict = locate ? NULL : room;
	col->rd = locate ? room : NULL;
	for (uint32_t j = 0; j < col->ndict; j++) {
		size_t l = (size_t)col_uv(&lp);
		if (locate)
			col->rd[j] = (bval){ bp, (uint32_t)l };
		else if (c == 2)
			col->dict[j].i = (int64_t)ms_le64(bp);
		else if (c == 3)
			mat_tags(it, bp, &col->dict[j]);
		else
			col->dict[j].s = mat_str(it, bp, l);
		bp += l;
	}
}

/* Inflate the NPIECES pieces of a payload z of hs bytes back to back into
 * it->raw (room for hr bytes made): together exactly hr bytes, the
 * payload used up exactly. Each zstd piece is one frame with its content
 * size set. */
static int
inflate_pieces(ms_sidx_iter *it, const uint8_t *z, uint32_t hs, uint32_t hr,
               ms_errbuf *eb)
{
	ms_rd r;
	ms_rd_init(&r, z, hs);
	size_t pos = 0;
	for (unsigned c = 0; c < NPIECES; c++) {
		uint8_t codec = ms_rd_u8(&r);
		uint64_t size = ms_rd_uvarint(&r);
		const uint8_t *b = r.bad ? NULL : ms_rd_bytes(&r, size);
		if (!b || codec > PIECE_ZSTD)
			return sifail(it, eb, MS_ERR_CORRUPT,
			              "piece %u malformed", c);
		uint8_t *dst = it->raw.data + pos;
		if (codec == PIECE_STORED) {
			if (size > hr - pos)
				return sifail(it, eb, MS_ERR_CORRUPT,
				              "piece %u longer than the payload",
				              c);
			if (size)
				memcpy(dst, b, (size_t)size);
			pos += (size_t)size;
			continue;
		}
		unsigned long long n = ZSTD_getFrameContentSize(b, size);
		if (n == ZSTD_CONTENTSIZE_ERROR ||
		    n == ZSTD_CONTENTSIZE_UNKNOWN || n > hr - pos ||
		    ZSTD_findFrameCompressedSize(b, size) != size)
			return sifail(it, eb, MS_ERR_CORRUPT,
			              "piece %u: not one zstd frame of at "
			              "most %zu bytes",
			              c, hr - pos);
		if (!it->dctx && !(it->dctx = ZSTD_createDCtx_advanced(
		                           ms__zstd_mem(it->mem))))
			return sifail(it, eb, MS_ERR_NOMEM,
			              "out of memory for a zstd context");
		size_t k = ZSTD_decompressDCtx(it->dctx, dst, (size_t)n, b,
		                               size);
		if (ZSTD_isError(k))
			return sifail(it, eb, ms__zstd_err(k),
			              "piece %u: zstd: %s%s", c,
			              ms__zstd_err(k) == MS_ERR_NOMEM
			                      ? "out of memory: "
			                      : "",
			              ZSTD_getErrorName(k));
		if (k != n)
			return sifail(it, eb, MS_ERR_CORRUPT,
			              "piece %u inflated to %zu bytes, not %llu",
			              c, k, n);
		pos += k;
	}
	if (r.left != 0 || pos != hr)
		return sifail(it, eb, MS_ERR_CORRUPT,
		              "pieces hold %zu bytes in %u, header says %u in "
		              "%u",
		              pos, hs - (uint32_t)r.left, hr, hs);
	return 0;
}

/* Read chunk bytes [off, off + stored), check its header against the index
 * entry (nrows) and its checksums, and inflate its payload into it->raw;
 * *cout is the chunk as read, *hrout the payload size. */
static int
inflate_chunk(ms_sidx_iter *it, uint64_t off, uint32_t stored,
              uint32_t nrows, const uint8_t **cout, uint32_t *hrout,
              ms_errbuf *eb)
{
	const uint8_t *c;
	int rc = ms__win_get(&it->win, off, stored, &c);
	char why[64];
	if (rc)
		return sifail(it, eb, rc, "read at offset %llu: %s",
		              (unsigned long long)off,
		              ms__win_why(&it->win, rc, why, sizeof(why)));
	if (memcmp(c, MS__CHUNK_MAGIC, 4) != 0)
		return sifail(it, eb, MS_ERR_CORRUPT, "bad chunk magic");
	if (ms_le64(c + offsetof(struct ms__chunk_disk, header_xxh)) !=
	    XXH64(c, offsetof(struct ms__chunk_disk, header_xxh), 0))
		return sifail(it, eb, MS_ERR_CORRUPT,
		              "chunk header checksum mismatch");
	uint32_t hn = ms_le32(c + offsetof(struct ms__chunk_disk, nrows));
	uint32_t hs = ms_le32(c + offsetof(struct ms__chunk_disk, stored));
	uint32_t hr = ms_le32(c + offsetof(struct ms__chunk_disk, raw));
	if (hn != nrows || (uint64_t)hs + MS__CHUNK_HDR != stored ||
	    hr < ROW_MIN_BYTES * nrows || hr > RAW_MAX || hs == 0)
		return sifail(it, eb, MS_ERR_CORRUPT,
		              "header (%u rows, %u stored, %u raw) does not "
		              "match its index entry",
		              hn, hs, hr);
	const uint8_t *z = c + MS__CHUNK_HDR;
	if (XXH64(z, hs, 0) !=
	    ms_le64(c + offsetof(struct ms__chunk_disk, payload_xxh)))
		return sifail(it, eb, MS_ERR_CORRUPT,
		              "payload checksum mismatch");
	ms_buf_reset(&it->raw);
	rc = ms_buf_reserve(&it->raw, (size_t)hr + MS_TRACE_ID_MAX);
	if (rc)
		return sifail(it, eb, rc, "%s for %u bytes", ms_strerror(rc),
		              hr);
	/* decode_row copies whole ID arrays: defined bytes past the end. */
	memset(it->raw.data + hr, 0, MS_TRACE_ID_MAX);
	rc = inflate_pieces(it, z, hs, hr, eb);
	if (rc)
		return rc;
	it->raw.len = hr;
	*cout = c;
	*hrout = hr;
	return 0;
}

/* Read, verify and locate the columns of chunk it->next. */
static int
load_chunk(ms_sidx_iter *it, ms_errbuf *eb)
{
	const ms_part *p = it->p;
	const uint8_t *e = ms__part_entry(p, it->next);
	uint64_t off = ms_le64(e);
	uint32_t stored = ms_le32(e + 8), nrows = ms_le32(e + 12);
	it->next++;
	const uint8_t *c = NULL;
	uint32_t hr = 0;
	int rc = inflate_chunk(it, off, stored, nrows, &c, &hr, eb);
	if (rc)
		return rc;
	/* Locate the columns: nrows varints, nrows varints, nrows
	 * lengths, the sum of the lengths in ID bytes, then the tag
	 * columns, which end the payload exactly. */
	ms_rd r;
	ms_rd_init(&r, it->raw.data, hr);
	const uint8_t *series = r.p;
	bool ok = skip_varints(&r, nrows);
	const uint8_t *keys = r.p;
	ok = ok && skip_varints(&r, nrows);
	const uint8_t *keys_end = r.p;
	const uint8_t *lens = ok ? ms_rd_bytes(&r, nrows) : NULL;
	uint64_t tids = 0;
	for (uint32_t i = 0; lens && i < nrows; i++) {
		if (lens[i] < 1 || lens[i] > MS_TRACE_ID_MAX)
			lens = NULL;
		else
			tids += lens[i];
	}
	const uint8_t *tp = lens ? ms_rd_bytes(&r, tids) : NULL;
	uint64_t strs = 0, ntags = 0;
	bool canon = true;
	ok = tp != NULL;
	for (unsigned col = 0; ok && col < 4; col++) {
		if (col == 2 && p->kind == MS_KIND_START_TIME) {
			/* latency: svarint deltas, each 0..UINT32_MAX */
			it->op = r.p;
			const uint8_t *q = r.p;
			uint64_t v = 0;
			ok = skip_varints(&r, nrows);
			for (uint32_t i = 0; ok && i < nrows; i++) {
				uint64_t zz = col_uv(&q);
				v += (uint64_t)((int64_t)(zz >> 1) ^
				                -(int64_t)(zz & 1));
				ok = v <= UINT32_MAX;
			}
			continue;
		}
		ok = parse_col(&it->cols[col], col, &r, nrows, &strs, &ntags,
		               &canon);
	}
	if (!ok || r.left != 0)
		return sifail(it, eb, MS_ERR_CORRUPT, "payload malformed");
	/* Room for every string and tag pointer of the chunk (at most
	 * the payload's size), made once so that none moves. */
	size_t nd = 0;
	for (unsigned col = 0; col < 4; col++)
		if (it->cols[col].mode == COL_DICT &&
		    (col != 2 || p->kind == MS_KIND_LATENCY))
			nd += it->cols[col].ndict;
	ms_buf_reset(&it->arena);
	ms_buf_reset(&it->ptrs);
	ms_buf_reset(&it->dicts);
	rc = ms_buf_reserve(&it->arena, (size_t)strs + MS__COPY_SLACK);
	if (rc == 0)
		rc = ms_buf_reserve(&it->ptrs, (size_t)ntags * sizeof(char *));
	if (rc == 0)
		rc = ms_buf_reserve(&it->dicts, nd * sizeof(rval));
	if (rc)
		return sifail(it, eb, rc, "%s for %llu tag bytes",
		              ms_strerror(rc), (unsigned long long)strs);
	it->passthru = it->raw_mode && canon;
	it->dmask = 0;
	if (it->passthru && it->chunk_seq && *it->chunk_seq < UINT32_MAX) {
		it->dkey = ++*it->chunk_seq;
		for (unsigned k = 0; k < 3; k++)
			if (it->cols[k < 2 ? k : 3].mode == COL_DICT)
				it->dmask |= (uint8_t)(1u << k);
	}
	for (unsigned col = 0; col < 4; col++)
		if (it->cols[col].mode == COL_DICT &&
		    (col != 2 || p->kind == MS_KIND_LATENCY))
			mat_dict(it, col);
	it->po = 0;
	it->sp = series;
	it->s_end = keys;
	it->kp = keys;
	it->k_end = keys_end;
	it->tp = tp;
	it->t_end = tp + tids;
	it->lens = lens;
	it->entry = e;
	it->ps = it->pk = 0;
	it->nrows = nrows;
	it->pos = 0;
	XXH64_update(&it->content, c, stored);
	it->rows_seen += nrows;
	it->raw_seen += hr;
	return 0;
}

/* Decode and check the next row of the loaded chunk (design 2, 3). */
static ALWAYS_INLINE int
next_row(ms_sidx_iter *it, ms_errbuf *eb)
{
	const ms_part *p = it->p;
	uint32_t i = it->pos;
	ms_sidx_row *v = &it->row[it->ci ^ 1];
	decode_row(it, v);
	if (i == 0 || i + 1 == it->nrows) {
		ms_sidx_row f, l;
		entry_first_last(it->entry, &f, &l);
		if ((i == 0 && sk_cmp(&f, v)) ||
		    (i + 1 == it->nrows && sk_cmp(&l, v)))
			return sifail(it, eb, MS_ERR_CORRUPT,
			              "first/last keys differ from the index "
			              "entry");
		if (i + 1 == it->nrows &&
		    (it->sp != it->s_end || it->kp != it->k_end ||
		     it->tp != it->t_end))
			return sifail(it, eb, MS_ERR_CORRUPT,
			              "payload malformed");
	}
	bool first = it->rows_seen == it->nrows && i == 0;
	if (!first && row_cmp_padded(&it->row[it->ci], v) > 0)
		return sifail(it, eb, MS_ERR_CORRUPT, "row %u out of order", i);
	if (v->key < p->meta.min_ts || v->key > p->meta.max_ts)
		return sifail(it, eb, MS_ERR_CORRUPT,
		              "row %u key outside the part's range", i);
	if (first) {
		it->min_key = it->max_key = v->key;
	} else {
		it->min_key = v->key < it->min_key ? v->key : it->min_key;
		it->max_key = v->key > it->max_key ? v->key : it->max_key;
	}
	it->ci ^= 1;
	it->pos++;
	return 0;
}

int
ms_sidx_iter_next(ms_sidx_iter *it, const ms_sidx_row **row, ms_errbuf *eb)
{
	if (row)
		*row = NULL;
	if (it->failed)
		return ms__part_fail(it->p, eb, MS_ERR_STATE, MS__F_DATA,
		                     "iterator failed before");
	if (it->pos == it->nrows) {
		if (it->done)
			return 0;
		const ms_part *p = it->p;
		if (it->next >= p->meta.blocks) {
			const ms_part_meta *m = &p->meta;
			it->failed = true;
			if (XXH64_digest(&it->content) != m->checksum)
				return ms__part_fail(p, eb, MS_ERR_CORRUPT,
				                     MS__F_DATA,
				                     "part checksum mismatch");
			if (it->rows_seen != m->rows ||
			    it->raw_seen != m->uncompressed_bytes ||
			    (m->rows && (it->min_key != m->min_ts ||
			                 it->max_key != m->max_ts)))
				return ms__part_fail(
				        p, eb, MS_ERR_CORRUPT, MS__F_DATA,
				        "chunks hold %llu rows, %llu bytes, "
				        "keys %lld..%lld; meta differs",
				        (unsigned long long)it->rows_seen,
				        (unsigned long long)it->raw_seen,
				        (long long)it->min_key,
				        (long long)it->max_key);
			it->failed = false;
			it->done = true;
			return 0;
		}
		int rc = load_chunk(it, eb);
		if (rc)
			return rc;
	}
	int rc = next_row(it, eb);
	if (rc)
		return rc;
	if (row)
		*row = &it->row[it->ci];
	return 1;
}

/* ms_sidx_iter_next for a merge: a row of the loaded chunk inline, the
 * rest (a chunk to load, the end, a failed iterator) through it. */
static inline int
siter_next(ms_sidx_iter *it, const ms_sidx_row **row, ms_errbuf *eb)
{
	if (it->pos == it->nrows || it->failed)
		return ms_sidx_iter_next(it, row, eb);
	int rc = next_row(it, eb);
	*row = rc ? NULL : &it->row[it->ci];
	return rc ? rc : 1;
}

void
ms__sidx_iter_raw(ms_sidx_iter *it)
{
	it->raw_mode = true;
}

bool
ms__sidx_row_enc(const ms_sidx_iter *it, const ms_sidx_row *r,
                 const uint8_t *v[3], uint32_t len[3])
{
	if (!it->passthru || r != &it->row[it->ci])
		return false;
	const bval *rv = it->rv[it->ci];
	for (unsigned k = 0; k < 3; k++) {
		v[k] = rv[k].p;
		len[k] = rv[k].len;
	}
	return true;
}

int
ms__sidx_verify(const ms_part *p, ms_errbuf *eb)
{
	ms_sidx_iter *it;
	int rc = ms_sidx_iter_open(&it, p, p->mem, NULL, eb);
	if (rc)
		return rc;
	/* Every value is checked as a chunk loads: its rows need no
	 * strings made. */
	ms__sidx_iter_raw(it);
	while ((rc = ms_sidx_iter_next(it, NULL, eb)) == 1)
		;
	ms_sidx_iter_close(it);
	return rc;
}

/* A row of ms_sidx_read_all keeps its strings in one block at r->tags:
 * ntags pointers, then instance, endpoint and the tags, NUL-terminated. */
static size_t
row_block_size(const ms_sidx_row *r)
{
	size_t b = r->ntags * sizeof(char *) + strlen(r->instance) + 1 +
	           strlen(r->endpoint) + 1;
	for (uint32_t i = 0; i < r->ntags; i++)
		b += strlen(r->tags[i]) + 1;
	return b;
}

static char *
put_str(char *d, const char *s)
{
	size_t l = strlen(s) + 1;
	memcpy(d, s, l);
	return d + l;
}

/* Copy r's strings into a block of its own (row_block_size). */
static int
row_own(ms_mem *mem, const ms_sidx_row *r, ms_sidx_row *out)
{
	*out = *r;
	void *blk = ms_mem_alloc(mem, row_block_size(r));
	if (!blk)
		return MS_ERR_NOMEM;
	const char **t = blk;
	char *d = (char *)(t + r->ntags);
	out->instance = d;
	d = put_str(d, r->instance);
	out->endpoint = d;
	d = put_str(d, r->endpoint);
	for (uint32_t i = 0; i < r->ntags; i++) {
		t[i] = d;
		d = put_str(d, r->tags[i]);
	}
	out->tags = t;
	return 0;
}

void
ms_sidx_rows_free(ms_mem *mem, ms_sidx_row *rows, size_t n)
{
	if (!rows)
		return;
	for (size_t i = 0; i < n; i++)
		ms_mem_free(mem, (void *)rows[i].tags,
		            row_block_size(&rows[i]));
	ms_mem_free(mem, rows, n * sizeof(ms_sidx_row));
}

int
ms_sidx_read_all(const ms_part *p, ms_mem *mem, ms_sidx_row **rows, size_t *n,
                 ms_errbuf *eb)
{
	*rows = NULL;
	*n = 0;
	uint64_t total = p->meta.rows;
	size_t bytes;
	if (total > SIZE_MAX ||
	    !ms_mul_ok((size_t)total, sizeof(ms_sidx_row), &bytes))
		return ms__part_fail(p, eb, MS_ERR_RANGE, MS__F_DATA,
		                     "%llu rows", (unsigned long long)total);
	if (total == 0) {
		int rc = ms__sidx_verify(p, eb);
		return rc;
	}
	ms_sidx_iter *it;
	int rc = ms_sidx_iter_open(&it, p, mem, NULL, eb);
	if (rc)
		return rc;
	ms_sidx_row *v = ms_mem_alloc(mem, bytes);
	if (!v) {
		ms_sidx_iter_close(it);
		return ms__part_fail(p, eb, MS_ERR_NOMEM, MS__F_DATA,
		                     "out of memory for %llu rows (%zu bytes)",
		                     (unsigned long long)total, bytes);
	}
	size_t k = 0;
	const ms_sidx_row *r;
	while ((rc = ms_sidx_iter_next(it, &r, eb)) == 1) {
		/* The index check bounds the rows to meta.rows. */
		if (row_own(mem, r, &v[k])) {
			rc = ms__part_fail(
			        p, eb, MS_ERR_NOMEM, MS__F_DATA,
			        "out of memory for row %zu (%zu bytes)", k,
			        row_block_size(r));
			break;
		}
		k++;
	}
	ms_sidx_iter_close(it);
	if (rc) {
		for (size_t i = 0; i < k; i++)
			ms_mem_free(mem, (void *)v[i].tags,
			            row_block_size(&v[i]));
		ms_mem_free(mem, v, bytes);
		return rc;
	}
	*rows = v;
	*n = k;
	return 0;
}

/* ---- merge ---- */

/*
 * Merge design:
 *  1. Each input is read by its own iterator (raw_mode); src[i].cur is
 *     its current row, NULL once it is used up.
 *  2. The next row out is the least current row in the order (row,
 *     input position), a strict total order, so the output is the same
 *     whatever structure finds it. A tournament tree of losers finds it:
 *     t[0] is the winner; node k in 1..n-1 holds the source that lost
 *     the match played there, between the winners of nodes 2k and 2k + 1
 *     (source i is the leaf n + i). When the winner's source moves on,
 *     only the matches on its leaf's path are played again: about log2 n
 *     comparisons a row, half of what sifting a binary heap takes.
 */
typedef struct merge_src {
	/* cur's series, key (its sign bit flipped so that it compares as
	 * unsigned) and first two words of trace ID (tid_word); all ones
	 * once the source is used up. */
	uint64_t series, key, w0, w1;
	const ms_sidx_row *cur;
	ms_sidx_iter *it;
} merge_src;

static inline void
src_cache(merge_src *s)
{
	const ms_sidx_row *r = s->cur;
	s->series = r ? r->series : UINT64_MAX;
	s->key = r ? (uint64_t)r->key ^ (1ull << 63) : UINT64_MAX;
	s->w0 = r ? tid_word(r->tid) : UINT64_MAX;
	s->w1 = r ? tid_word(r->tid + 8) : UINT64_MAX;
}

/* Source a comes before source b (design 2); a used-up source after
 * every other. The cached words are compared in turn, a branch each: the
 * sources' current rows nearly always share their series (the inputs walk
 * the series in the same order), and the key decides, or where keys often
 * tie (the latency index) the first trace ID words. Rows from iterators
 * have zero-padded trace IDs (tid_cmp_padded's argument): only when all
 * four words are equal does the rest of the trace ID, then the position,
 * decide. */
static bool src_tie(const merge_src *s, size_t a, size_t b);

static inline bool
src_less(const merge_src *s, size_t a, size_t b)
{
	const merge_src *x = &s[a], *y = &s[b];
	if (__builtin_expect(x->series != y->series, 0))
		return x->series < y->series;
	if (__builtin_expect(x->key != y->key, 1))
		return x->key < y->key;
	if (x->w0 != y->w0)
		return x->w0 < y->w0;
	if (x->w1 != y->w1)
		return x->w1 < y->w1;
	return src_tie(s, a, b);
}

/* src_less for sources whose cached words are all equal (the same
 * first 16 trace ID bytes, or both used up): out of line, so that the
 * common case inlines into the tree's matches. */
static bool
src_tie(const merge_src *s, size_t a, size_t b)
{
	const merge_src *x = &s[a], *y = &s[b];
	if (!y->cur)
		return x->cur != NULL;
	if (!x->cur)
		return false;
	/* Their first two words are equal: compare from the third. */
	const ms_sidx_row *u = x->cur, *v = y->cur;
	uint32_t n = u->tid_len < v->tid_len ? u->tid_len : v->tid_len;
	for (uint32_t i = 16; i < n; i += 8) {
		uint64_t p = tid_word(u->tid + i), q = tid_word(v->tid + i);
		if (p != q)
			return p < q;
	}
	return u->tid_len < v->tid_len || (u->tid_len == v->tid_len && a < b);
}

/* Play the matches under node k; returns their winner. */
static size_t
tree_build(const merge_src *s, size_t *t, size_t n, size_t k)
{
	if (k >= n)
		return k - n;
	size_t a = tree_build(s, t, n, 2 * k);
	size_t b = tree_build(s, t, n, 2 * k + 1);
	if (src_less(s, b, a)) {
		t[k] = a;
		return b;
	}
	t[k] = b;
	return a;
}

/* The winner's source has moved on: play its path again. */
static inline void
tree_replay(const merge_src *s, size_t *t, size_t n)
{
	size_t w = t[0];
	for (size_t k = (w + n) / 2; k > 0; k /= 2) {
		/* Without a branch: which side wins is not predictable. */
		size_t l = t[k];
		size_t x = (l ^ w) & ((size_t)0 - (size_t)src_less(s, l, w));
		t[k] = l ^ x;
		w ^= x;
	}
	t[0] = w;
}

int
ms_sidx_merge(enum ms_part_kind kind, const ms_part *const *inputs, size_t n,
              bool (*keep)(void *ctx, const uint8_t *tid, uint32_t len),
              void *ctx, const char *tmp_path, uint64_t id,
              const ms_part_writer_opts *opts, ms_part_meta *meta,
              uint64_t *rows_pruned, ms_errbuf *eb)
{
	ms_mem *mem = opts ? opts->mem : NULL;
	ms_io *io = opts ? opts->io : NULL;
	char idstr[17];
	ms_part_id_str(id, idstr);
	if (rows_pruned)
		*rows_pruned = 0;
	if (!is_index_kind(kind))
		return ms_fail(eb, MS_ERR_INVAL,
		               "index merge %s: kind %d is not an index", idstr,
		               (int)kind);
	for (size_t i = 0; i < n; i++)
		if (inputs[i]->kind != kind)
			return ms_fail(eb, MS_ERR_INVAL,
			               "index merge %s: input %s is a %s part",
			               idstr, inputs[i]->name,
			               ms_part_kind_name(inputs[i]->kind));
	size_t bs, bh;
	if (!ms_mul_ok(n, sizeof(merge_src), &bs) ||
	    !ms_mul_ok(n, sizeof(size_t), &bh))
		return ms_fail(eb, MS_ERR_RANGE, "index merge %s: %zu inputs",
		               idstr, n);
	merge_src *src = ms_mem_calloc(mem, n ? n : 1, sizeof(merge_src));
	size_t *tree = ms_mem_calloc(mem, n ? n : 1, sizeof(size_t));
	/* One decompression context for every input: they decompress one
	 * chunk at a time on this thread. The thread's kept one if it has
	 * one (opts->zctx), else the merge's own. */
	ZSTD_DCtx *kept = ms__zctx_dctx(opts ? opts->zctx : NULL);
	ZSTD_DCtx *dctx =
	        kept ? kept : ZSTD_createDCtx_advanced(ms__zstd_mem(mem));
	ms_sidx_writer *w = NULL;
	uint64_t pruned = 0, rows_hint = 0, raw_hint = 0;
	uint32_t chunk_seq = 0;
	int rc = 0;
	if (!src || !tree || !dctx) {
		rc = ms_fail(eb, MS_ERR_NOMEM,
		             "index merge %s: out of memory for %zu inputs",
		             idstr, n);
		goto out;
	}
	for (size_t i = 0; i < n && rc == 0; i++) {
		rows_hint += inputs[i]->meta.rows;
		raw_hint += inputs[i]->meta.uncompressed_bytes;
		rc = siter_open(&src[i].it, inputs[i], mem, io, dctx, eb);
		if (rc == 0) {
			ms__sidx_iter_raw(src[i].it);
			src[i].it->chunk_seq = &chunk_seq;
			rc = ms_sidx_iter_next(src[i].it, &src[i].cur, eb);
			rc = rc < 0 ? rc : 0;
			src_cache(&src[i]);
		}
	}
	if (rc)
		goto out;
	if (n)
		tree[0] = tree_build(src, tree, n, 1);
	rc = swriter_open(&w, kind, tmp_path, id, opts, rows_hint, eb);
	if (rc == 0)
		rc = vals_presize(w, rows_hint, raw_hint, eb);
	while (rc == 0 && n && src[tree[0]].cur) {
		merge_src *s = &src[tree[0]];
		const ms_sidx_row *r = s->cur;
		size_t ri = (size_t)(r - s->it->row);
		if (!keep || keep(ctx, r->tid, r->tid_len))
			rc = s->it->passthru ? writer_add(w, r, s->it->rv[ri],
			                                  &s->it->rs[ri], eb)
			                     : writer_add(w, r, NULL, NULL, eb);
		else
			pruned++;
		if (rc)
			break;
		rc = siter_next(s->it, &s->cur, eb);
		if (rc < 0)
			break;
		rc = 0;
		src_cache(s);
		tree_replay(src, tree, n);
	}
	if (rc == 0) {
		rc = ms_sidx_writer_finish(w, meta, eb);
		w = NULL;
	}
out:
	if (w)
		ms_sidx_writer_abort(w);
	for (size_t i = 0; src && i < n; i++)
		ms_sidx_iter_close(src[i].it);
	if (dctx != kept)
		ZSTD_freeDCtx(dctx);
	ms_mem_free(mem, src, (n ? n : 1) * sizeof(merge_src));
	ms_mem_free(mem, tree, (n ? n : 1) * sizeof(size_t));
	if (rc == 0 && rows_pruned)
		*rows_pruned = pruned;
	return rc;
}
