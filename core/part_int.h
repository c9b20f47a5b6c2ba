/*
 * part_int.h - private to the part format: the on-disk layout structs (each
 * checked by _Static_assert against core/FORMAT.md), limits, and helpers
 * shared by part_writer.c, part_reader.c, part_fs.c, bloom.c and sidx.c.
 *
 * The structs below are never read from or written to disk with memcpy:
 * encoders and decoders store each field little-endian at offsetof(), so
 * the struct is the written-down layout and the code is host-independent.
 */
#ifndef MS_PART_INT_H
#define MS_PART_INT_H

#include "ms_part.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_customMem, *_advanced */
#include <zstd.h>
#include <zstd_errors.h>

/* Section names of a part file, as errors name them. */
#define MS__F_DATA "data"
#define MS__F_INDEX "index"
#define MS__F_BLOOM "bloom"
#define MS__F_FOOTER "footer"

#define MS__FOOTER_MAGIC "MSPFOOT3"
#define MS__INDEX_MAGIC "MSPINDX1"
#define MS__BLOOM_MAGIC "MSPBLOM1"
#define MS__BLOCK_MAGIC "MSB1"
#define MS__CHUNK_MAGIC "MSX1"

/* Largest uncompressed unit (one row can carry a 16 MiB body plus 1024
 * tags of 64 KiB). */
#define MS__UNIT_MAX (128u << 20)
/* Zero bytes an iterator keeps after an inflated unit, so a decoder may
 * check a short string with whole-word loads (up to 32 bytes from its
 * start). */
#define MS__UNIT_PAD 32u
/* Rows in one block / index chunk, at most. */
#define MS__BLOCK_ROWS_MAX (1u << 20)
#define MS__CHUNK_ROWS 4096u
/* Read window of an iterator whose data file is not mapped (clamped to
 * the file). A merge then holds one per input: 256 KiB keeps 15 inputs
 * at ~4 MB instead of 15 MB, and reads from the page cache cost the same
 * per byte as 1 MiB ones (bench_merge). */
#define MS__READ_WINDOW (256u << 10)
/* A data file up to this size is read whole into its window's buffer at
 * the first read instead of being mapped: for a small file, mapping it,
 * faulting it in and unmapping it (page tables, and a TLB shootdown on
 * every CPU the process ran on) costs several times the copy. Most parts
 * are small (publications, young merge outputs, index parts), and a
 * replay opens each of them a few times (merges, checks). */
#define MS__MAP_MIN MS__READ_WINDOW

/* The footer: the last MS__FOOTER_SIZE bytes of a part file, after the
 * data (blocks or chunks, from offset 0), the index and the bloom
 * sections. */
struct ms__footer_disk {
	uint8_t magic[8];
	uint32_t version;
	uint32_t kind;
	uint64_t id;
	uint64_t compressed_bytes; /* = the file's size */
	uint64_t uncompressed_bytes;
	uint64_t rows;
	uint64_t blocks;
	uint64_t traces;
	int64_t min_ts;
	int64_t max_ts;
	uint32_t depth;
	uint32_t flags;
	uint64_t checksum;
	uint64_t data_bytes; /* the data section starts at 0 */
	uint64_t index_off;
	uint64_t index_bytes;
	uint64_t bloom_off;
	uint64_t bloom_bytes;
	uint64_t footer_off;
	uint64_t reserved;
	uint64_t footer_xxh; /* XXH64 (seed 0) of bytes 0..151 */
};
_Static_assert(offsetof(struct ms__footer_disk, version) == 8, "footer");
_Static_assert(offsetof(struct ms__footer_disk, id) == 16, "footer");
_Static_assert(offsetof(struct ms__footer_disk, min_ts) == 64, "footer");
_Static_assert(offsetof(struct ms__footer_disk, depth) == 80, "footer");
_Static_assert(offsetof(struct ms__footer_disk, checksum) == 88, "footer");
_Static_assert(offsetof(struct ms__footer_disk, data_bytes) == 96, "footer");
_Static_assert(offsetof(struct ms__footer_disk, bloom_off) == 120, "footer");
_Static_assert(offsetof(struct ms__footer_disk, footer_off) == 136,
               "footer");
_Static_assert(offsetof(struct ms__footer_disk, footer_xxh) == 152,
               "footer");
_Static_assert(sizeof(struct ms__footer_disk) == 160, "footer");
#define MS__FOOTER_SIZE 160u

/* data (core part): a block header, then unit A then unit B bytes. */
struct ms__block_disk {
	uint8_t magic[4];
	uint8_t tid_len;
	uint8_t flags;
	uint16_t reserved;
	uint32_t nrows;
	uint32_t a_stored;
	uint32_t a_raw;
	uint32_t b_stored;
	uint32_t b_raw;
	uint32_t dict_id; /* 0: no dictionary; else a shard dictionary's ID */
	int64_t min_ts;
	int64_t max_ts;
	int64_t max_end_ns;
	uint64_t span_bytes;
	uint64_t a_xxh;
	uint64_t b_xxh;
	uint8_t trace_id[MS_TRACE_ID_MAX];
	uint64_t header_xxh; /* XXH3_64bits of bytes 0..143 */
};
_Static_assert(offsetof(struct ms__block_disk, nrows) == 8, "block layout");
_Static_assert(offsetof(struct ms__block_disk, dict_id) == 28, "block layout");
_Static_assert(offsetof(struct ms__block_disk, min_ts) == 32, "block layout");
_Static_assert(offsetof(struct ms__block_disk, a_xxh) == 64, "block layout");
_Static_assert(offsetof(struct ms__block_disk, trace_id) == 80, "block layout");
_Static_assert(offsetof(struct ms__block_disk, header_xxh) == 144,
               "block layout");
_Static_assert(sizeof(struct ms__block_disk) == 152, "block layout");
#define MS__BLOCK_HDR 152u

/* Unit A starts with this many u32 column lengths. */
#define MS__A_COLS 9u

/* index section: header, entries, then XXH64 of everything before it. */
struct ms__index_hdr {
	uint8_t magic[8];
	uint32_t version;
	uint32_t kind;
	uint64_t count;
	uint64_t entry_size;
};
_Static_assert(sizeof(struct ms__index_hdr) == 32, "index layout");
#define MS__INDEX_HDR 32u

struct ms__index_entry {
	uint64_t offset;
	uint32_t stored;
	uint32_t nrows;
};
_Static_assert(sizeof(struct ms__index_entry) == 16, "index layout");

/* Index parts: the entry also bounds the chunk's rows. */
struct ms__sidx_entry {
	uint64_t offset;
	uint32_t stored;
	uint32_t nrows;
	uint64_t first_series;
	int64_t first_key;
	uint64_t last_series;
	int64_t last_key;
};
_Static_assert(offsetof(struct ms__sidx_entry, first_series) == 16,
               "sidx index layout");
_Static_assert(sizeof(struct ms__sidx_entry) == 48, "sidx index layout");

/* Index part chunk header; the zstd payload follows. */
struct ms__chunk_disk {
	uint8_t magic[4];
	uint32_t nrows;
	uint32_t stored;
	uint32_t raw;
	uint64_t payload_xxh;
	uint64_t header_xxh; /* XXH64 (seed 0) of bytes 0..23 */
};
_Static_assert(offsetof(struct ms__chunk_disk, payload_xxh) == 16,
               "chunk layout");
_Static_assert(sizeof(struct ms__chunk_disk) == 32, "chunk layout");
#define MS__CHUNK_HDR 32u

/* bloom section: header, nbits / 8 bytes of bits, XXH64 of all before. */
struct ms__bloom_hdr {
	uint8_t magic[8];
	uint32_t version;
	uint32_t k;
	uint64_t nbits;
	uint64_t items;
};
_Static_assert(sizeof(struct ms__bloom_hdr) == 32, "bloom layout");
#define MS__BLOOM_HDR 32u

/* ---- the opened part (part_reader.c), shared with sidx.c ---- */
struct ms_part {
	ms_mem *mem;
	char *dir;
	size_t dir_size;
	char name[17]; /* 16-hex ID */
	ms_part_meta meta;
	enum ms_part_kind kind;
	/* Index parts: the index section, read at open and kept (an entry
	 * per 4096 rows). Core parts keep neither section: both are checked
	 * at open through a bounded buffer, an iterator reads the entries
	 * it needs from the file, and the bloom section is read at the first
	 * ms_part_may_contain (part_reader.c, design 8). */
	uint8_t *sect;
	size_t sect_len;
	uint8_t *index; /* the index section (in sect); NULL for core */
	size_t index_len;
	uint64_t entry_size;
	/* Core: the bloom section once loaded (bits at MS__BLOOM_HDR),
	 * set once by whichever thread loads it first; bloom_bad: it could
	 * not be loaded again, every probe answers "may contain". */
	_Atomic(uint8_t *) bloom;
	_Atomic bool bloom_bad;
	size_t bloom_len;
	uint64_t nbits;
	uint64_t data_bytes;
	uint64_t file_bytes; /* the whole file: meta.compressed_bytes */
	const ms_part_dicts *dicts; /* a reference, or NULL */
	bool no_map; /* iterators read through a window (ms__part_no_map) */
};

/* Make iterators opened from now on read the data file through a window
 * instead of mapping it: the path taken when mapping fails, for tests. */
static inline void
ms__part_no_map(ms_part *p)
{
	p->no_map = true;
}

/* Entry i of an index part's index section (core parts keep none). */
static inline const uint8_t *
ms__part_entry(const ms_part *p, uint64_t i)
{
	return p->index + MS__INDEX_HDR + i * p->entry_size;
}

/* MS_ERR_CORRUPT naming the index unless the block directory's entries
 * cover exactly off bytes of data and rows rows as the footer says. */
int ms__part_check_cover(const ms_part *p, uint64_t off, uint64_t rows,
                         ms_errbuf *eb);
/* Fill eb with "part <id> (<dir>): <file>: <msg>" and return err. */
int ms__part_fail(const ms_part *p, ms_errbuf *eb, int err, const char *file,
                  const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* ms__part_fail on the data section for the unit (block, chunk) an
 * iterator read last, `next` being the index of the one after it:
 * "<unit> <next - 1>: <msg>" (unit 0 before any was read). */
int ms__part_unit_vfail(const ms_part *p, ms_errbuf *eb, int err,
                        const char *unit, uint64_t next, const char *fmt,
                        va_list ap) __attribute__((format(printf, 6, 0)));

/* The footer of a part whose data section is data_bytes long, followed
 * by index_bytes of index and bloom_bytes of bloom (part_writer.c). */
void ms__footer_encode(uint8_t out[MS__FOOTER_SIZE], const ms_part_meta *m,
                       enum ms_part_kind kind, uint64_t data_bytes,
                       uint64_t index_bytes, uint64_t bloom_bytes);

/* An index section is built in place (part_writer.c): ms__index_start puts
 * a placeholder header into an empty buffer, the writer appends `count`
 * entries of entry_size bytes, and ms__index_seal fills the header in and
 * appends the trailing XXH64. */
int ms__index_start(ms_buf *b);
int ms__index_seal(ms_buf *b, enum ms_part_kind kind, uint64_t count,
                   uint64_t entry_size);

/* A block header, parsed and checked (part_reader.c). */
typedef struct ms__block_hdr {
	uint8_t tid[MS_TRACE_ID_MAX];
	uint32_t tid_len;
	uint32_t nrows;
	uint32_t a_stored, a_raw, b_stored, b_raw;
	int64_t min_ts, max_ts, max_end_ns;
	uint64_t span_bytes;
	uint64_t a_xxh, b_xxh;
	uint64_t hdr_xxh; /* the header's own checksum (bytes 144..151) */
	uint32_t dict_id; /* 0, or the shard dictionary the units need */
	uint32_t stored;  /* whole block: header + units */
} ms__block_hdr;

/* Parse the block at p (len bytes available, which must equal its stored
 * size) and check its header checksum and every header field. On failure
 * write the reason into why and return false. */
bool ms__block_parse(const uint8_t *p, uint64_t len, ms__block_hdr *h,
                     char *why, size_t whylen);
/* Check both units' checksums of a parsed block. */
bool ms__block_units_ok(const uint8_t *p, const ms__block_hdr *h, char *why,
                        size_t whylen);

/* A sequential reader over a part's data file (part_reader.c). The file
 * is mapped read-only when the system lets it be (map != NULL): bytes are
 * handed out where they lie in the page cache, nothing is copied, and a
 * merge that reads an input twice (the trailing emit iterator of a
 * sampling merge) pays no second copy. Otherwise it is read through a
 * window: buf[0..len) holds file bytes [base, base + len). Either way
 * the file's size was checked against meta when it was opened, so no
 * mapped byte lies past its end. (A part file is never rewritten in
 * place: written once under a temporary name, renamed, later unlinked,
 * which leaves a mapping valid. Only someone truncating a published
 * part's file behind the engine's back could make a mapped read fault.) */
typedef struct ms__win {
	int fd;
	ms_mem *mem;
	ms_io *io;
	const uint8_t *map; /* size bytes, or NULL: read through buf */
	bool borrowed;      /* map belongs to another window (ms__win_share) */
	uint8_t *buf;
	size_t cap;
	uint64_t base;
	size_t len;
	uint64_t size;
	uint64_t bytes_read;
	uint64_t counted; /* mapped: file bytes [0, counted) counted read */
	size_t window;    /* read-ahead per refill; 0 = MS__READ_WINDOW */
	size_t want;      /* the last refill's size (for its message) */
	/* Mapped: pages before `released` were dropped from this process
	 * (they stay in the page cache), pages before `populated` were
	 * faulted in ahead, by this window. */
	uint64_t released, populated;
	/* Mapped: the page holding file offset keep_from and those after it
	 * are never released (ms_part_iter_keep_from); UINT64_MAX: none. */
	uint64_t keep_from;
} ms__win;

/* A mapped data file is resident only around where it is read: faulted in
 * up to MS__MAP_AHEAD ahead of the reader, and released, every
 * MS__MAP_STEP bytes read, down to MS__MAP_KEEP behind the reader (a
 * trailing re-read finds released pages again in the page cache). So a
 * merge of a whole day's parts holds at most about 384 KiB of each and
 * 192 KiB on average, not all of them, and a part under a MiB is
 * released as it is read too. A finalize reads a part per input, and a
 * longer day leaves it more inputs: every KiB kept per input is a KiB
 * more per input at the day's peak (a 64 KiB keep behind and a 256 KiB
 * read-ahead cost a day-4x finalize's 31 inputs 4 MiB more than these).
 * The step bounds the release calls (each one unmaps and flushes): a scan
 * at several GB/s spent a quarter more time releasing every 64 KiB. */
#define MS__MAP_AHEAD ((uint64_t)128 << 10)
#define MS__MAP_KEEP ((uint64_t)0)
#define MS__MAP_STEP ((uint64_t)256 << 10)

int ms__win_open(ms__win *w, const ms_part *p, ms_mem *mem, ms_io *io,
                 ms_errbuf *eb);
/* Point *out at file bytes [off, off + n), valid until the next call or
 * close: 0, or an error code (the caller names the part). */
int ms__win_get(ms__win *w, uint64_t off, size_t n, const uint8_t **out);
/* What ms__win_get's failure rc was, for a message: "file is short", the
 * refill's size when it found no memory, or ms_strerror(rc); written in
 * buf (n bytes) when it needs to be. */
const char *ms__win_why(const ms__win *w, int rc, char *buf, size_t n);
void ms__win_close(ms__win *w);
/* Open w over the mapping of `from` (which must be mapped and stay open
 * while w is). */
void ms__win_share(ms__win *w, const ms__win *from);
/* Tests: the file offset below which `it` (mapped) has released its
 * pages so far; 0 when it has released none or is not mapped. */
uint64_t ms__part_iter_released(const struct ms_part_iter *it);

/* ---- part_writer.c ---- */
/* Keep the writer's block directory and trace hashes in memory instead of
 * spilling them, or dropping the hashes where no temporary file can be
 * made (part_writer.c, design 6): for tests. Call right after open. */
void ms__part_writer_keep_lists(ms_part_writer *w);
/* Spill them even where the part's directory keeps its files in memory
 * (tmpfs), which a writer otherwise does not: for tests. Call right after
 * open. */
void ms__part_writer_spill_anywhere(ms_part_writer *w);

/* The writer's block directory as it holds it (part_writer.c, design 7):
 * per block a record of the block's stored size then its row count, each
 * an LEB128 uvarint of at most 5 bytes; a block's offset is the sum of the
 * stored sizes before it. ms__dir_put writes one record to rec and returns
 * its size. ms__dir_get reads the record at p[0..n): its size, 0 when it
 * does not end within n (the rest of it comes later: n is then at most
 * 9), or -1 when it is not a record (a varint longer than 5 bytes or
 * above 32 bits). */
#define MS__DIR_REC_MAX 10
size_t ms__dir_put(uint8_t rec[MS__DIR_REC_MAX], uint32_t stored,
                   uint32_t nrows);
int ms__dir_get(const uint8_t *p, size_t n, uint32_t *stored, uint32_t *nrows);
/* Bytes of the block directory the writer holds so far, in memory and
 * spilled: for tests. */
uint64_t ms__part_writer_dir_bytes(const ms_part_writer *w);

/* ---- row.c ---- */
/* A part file's name, "<16hex>.<kind>" (the last component of
 * ms_shard_part_path, in a shard or a checkpoint): its ID into *id, or
 * false for any other name. */
bool ms__part_file_id(const char *name, uint64_t *id);

/* ---- part_fs.c ---- */
/* Join dir and name into out (size n); false if it does not fit. */
bool ms__path(char *out, size_t n, const char *dir, const char *name);
/* A writer's failure message: "<what> <16hex> (<path>): <section>:
 * <text>". eb may be NULL. */
void ms__part_vfail(ms_errbuf *eb, int err, const char *what, uint64_t id,
                    const char *path, const char *file, const char *fmt,
                    va_list ap);

/* Discard a writer's unfinished part: close *fd (when >= 0; it becomes
 * -1) and remove path (when not NULL). */
void ms__part_discard(int *fd, const char *path);

/* Create the part file `path` for writing (it must not exist): the
 * descriptor, or an error named after `what` and `idstr` in eb. */
int ms__part_create(const char *path, const char *what, const char *idstr,
                    int *fd, ms_errbuf *eb);
/* End a part file whose data section has been written to fd: append
 * index, bloom (bloom_len 0: none) and the footer in one write, fsync fd
 * once unless no_sync, close it (fd is closed whatever the result). On
 * failure *section names what failed (MS__F_*). Counts io. */
int ms__part_seal(int fd, const void *index, size_t index_len,
                  const void *bloom, size_t bloom_len,
                  const uint8_t footer[MS__FOOTER_SIZE], bool no_sync,
                  ms_io *io, const char **section);

/* write() all of p to fd; counts io. */
int ms__write_all(int fd, const void *p, size_t n, ms_io *io);
/* The words for a failed write: strerror(errno) when rc came from a system
 * call (MS_ERR_IO, MS_ERR_NOSPACE) so the user sees "File too large" or
 * "No space left on device", else ms_strerror(rc). Call it before anything
 * else can change errno. */
const char *ms__write_err_text(int rc);
/* fsync a file descriptor / a directory by path; counts io. */
int ms__fsync_fd(int fd, ms_io *io);
int ms__fsync_dir(const char *dir, ms_io *io);
/* zstd allocation through an ms_mem (NULL = plain malloc). */
ZSTD_customMem ms__zstd_mem(ms_mem *mem);
/* Map a zstd error code to MS_ERR_NOMEM or MS_ERR_COMPRESS. */
int ms__zstd_err(size_t code);

/* ---- zctx.c (ms_zctx, ms_part.h) ---- */
/* The compression context of z for one writer on z's thread, reset to
 * zstd's defaults. NULL: z is NULL, the context is taken by another
 * writer, or out of memory; the writer then makes its own. Give it back
 * with ms__zctx_give when the writer closes. */
ZSTD_CCtx *ms__zctx_take(ms_zctx *z);
/* Give back c if it is one of z's (true), reset; false: c is not z's
 * (the caller frees it). */
bool ms__zctx_give(ms_zctx *z, ZSTD_CCtx *c);
/* The decompression context of z for one-shot calls on z's thread, reset
 * (not taken: every reader of the thread shares it); NULL: z is NULL or
 * out of memory. */
ZSTD_DCtx *ms__zctx_dctx(ms_zctx *z);
/* Make `it` (and every iterator sharing its context,
 * ms_part_iter_share_zstd) decompress with d, a thread's kept context
 * (ms__zctx_dctx; borrowed: it must outlive `it`), instead of its own.
 * Nothing changes when d is NULL or `it` shares another's context. */
void ms__part_iter_use_dctx(ms_part_iter *it, ZSTD_DCtx *d);

/* ---- part_dict.c ---- */
const ZSTD_CDict *ms__dict_cdict(const ms_part_dict *d);
const ZSTD_DDict *ms__dict_ddict(const ms_part_dict *d);
/* Take one more reference to s (may be NULL); returns s. */
const ms_part_dicts *ms__dicts_ref(const ms_part_dicts *s);

/* ---- bloom.c ---- */
/* Bits for `items` trace IDs: a multiple of 64, at least 64. */
uint64_t ms__bloom_nbits(uint64_t items);
/* The bloom section's bytes for `items` trace IDs: header, bits, XXH64. */
uint64_t ms__bloom_section_bytes(uint64_t items);
/* The two 64-bit hashes of a trace ID used for double hashing. */
void ms__bloom_hash(const uint8_t *tid, uint32_t len, uint64_t h[2]);
void ms__bloom_add(uint8_t *bits, uint64_t nbits, const uint64_t h[2]);
bool ms__bloom_test(const uint8_t *bits, uint64_t nbits, const uint64_t h[2]);

/* ---- sidx.c: per-kind verification used by part_reader.c ---- */
int ms__sidx_check_index(const ms_part *p, ms_errbuf *eb);
int ms__sidx_verify(const ms_part *p, ms_errbuf *eb);

/* ---- row.c ---- */
/* Encoded uncompressed bytes a row adds to a block (used for splitting). */
uint64_t ms__row_span_bytes(const ms_row *r);

#endif
