/*
 * ms_part.h - immutable parts: writing, opening, iterating blocks, raw copy.
 *
 * A part holds the rows of many traces, one block per trace ID (a trace with
 * more than MS_BLOCK_SPLIT_BYTES of span bodies spans consecutive blocks),
 * blocks in ascending trace-ID order (ms_trace_id_cmp). Each block is a
 * self-contained compressed unit with its own xxHash checksum, so a merge can
 * copy a block it does not need to change without decoding it. The byte
 * layout is in core/FORMAT.md (section "Part"), versioned by
 * MS_PART_FORMAT_VERSION.
 *
 * A part is one file: its blocks, a block directory, a Bloom filter and a
 * footer at the end. Writers write it at a temporary path the caller
 * names and fsync it once as they close it; publication (atomic rename,
 * fsync of the directory) is the shard's (ms_shard.h) or ms_part_publish.
 *
 * Ownership: ms_part_writer, ms_part and ms_part_iter are heap objects owned
 * by the caller of their _open and freed by their _close/_abort (NULL is
 * accepted). Pointers returned by ms_part_iter_* are owned by the iterator
 * and valid until its next call; only the stored bytes of a raw block that
 * ms_part_iter_raw_stable vouches for stay valid longer (until close).
 * Threads: an ms_part may be used by several threads at once (it is read-
 * only after open); an iterator belongs to one thread.
 */
#ifndef MS_PART_H
#define MS_PART_H

#include "ms_err.h"
#include "ms_mem.h"
#include "ms_row.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MS_PART_FORMAT_VERSION 4
#define MS_BLOCK_SPLIT_BYTES (2u << 20) /* span-body bytes per block */
#define MS_BLOOM_K 10
#define MS_BLOOM_BITS_PER_ITEM 16

/* A core part holds rows; an index part holds (series, key, 0x01||traceID)
 * rows of one secondary index (ms_sidx.h) and carries its core part's ID. */
enum ms_part_kind {
	MS_KIND_CORE = 0,
	MS_KIND_LATENCY = 1,
	MS_KIND_START_TIME = 2,
	MS_KIND_COUNT = 3,
};

/* "core", "latency", "start_time". */
const char *ms_part_kind_name(enum ms_part_kind k);
/* The kind named s (as ms_part_kind_name spells it), or -1. */
int ms_part_kind_parse(const char *s);

/* What a part says about itself (stored in its metadata). */
typedef struct ms_part_meta {
	uint64_t id;
	uint64_t compressed_bytes;   /* bytes of the part's file on disk */
	uint64_t uncompressed_bytes; /* uncompressed span bytes (all columns) */
	uint64_t rows;
	uint64_t blocks;
	uint64_t traces;   /* distinct trace IDs */
	int64_t min_ts;    /* min start_ns over rows */
	int64_t max_ts;    /* max start_ns over rows */
	uint32_t depth;    /* 0 = raw write; merge = 1 + max input */
	uint64_t checksum; /* core: XXH64 over the blocks' header checksums;
	                    * index parts: XXH64 of all chunks' bytes */
} ms_part_meta;

/* A part's payload bytes, counted as the reference engine counts a part's
 * compressed size (its block writer's bytes written: data and block
 * metadata): m->compressed_bytes without the footer (the reference's
 * metadata file) and, for a core part, without the Bloom filter (the
 * reference writes its trace-ID filter beside the part, uncounted). What
 * the density figures compare (fixtures/consolidate.c). */
uint64_t ms_part_payload_bytes(enum ms_part_kind kind, const ms_part_meta *m);

/* One block's header: readable without decompressing the block. */
typedef struct ms_block_info {
	uint8_t trace_id[MS_TRACE_ID_MAX];
	uint32_t trace_id_len;
	uint32_t nrows;
	int64_t min_ts, max_ts; /* over start_ns of the block's rows */
	int64_t max_end_ns;     /* max(start_ns + latency_ms * 1e6) */
	uint64_t span_bytes;    /* uncompressed bytes of the block */
	uint64_t stored_bytes;  /* compressed bytes, as copied raw */
} ms_block_info;

/* A block exactly as stored: what ms_part_writer_add_raw copies. */
typedef struct ms_raw_block {
	const ms_block_info *info;
	const uint8_t *bytes; /* stored_bytes bytes, borrowed */
	/* Set by ms_part_iter_raw: the header and unit checksums of these
	 * bytes were checked when they were read and info was parsed from
	 * them, so ms_part_writer_add_raw copies them without checking them
	 * again. False (as zero-initialised): the writer checks them. */
	bool verified;
} ms_raw_block;

/* I/O counters a caller can hand to writers and iterators (atomic: shared
 * by threads). Borrowed everywhere; NULL means "not counted". */
typedef struct ms_io {
	_Atomic uint64_t bytes_read;
	_Atomic uint64_t bytes_written;
	_Atomic uint64_t fsyncs;
} ms_io;

/* ---- dictionaries a shard shares among its parts ----
 * A block compressed with a zstd dictionary names it by a non-zero 32-bit
 * ID; the dictionary belongs to the shard (ms_shard_add_dict), so a merge
 * still copies such a block raw. A reader resolves the ID through the set
 * its part was opened with (ms_part_open_dicts). Ownership: an
 * ms_part_dict is owned by its creator until added to a set, then by the
 * set; a set is reference counted (its creator's reference is dropped by
 * ms_part_dicts_free, each part opened with it holds one until closed).
 * Threads: a set may be searched while one thread adds to it. */
#define MS_PART_DICTS_MAX 64
typedef struct ms_part_dict ms_part_dict;
typedef struct ms_part_dicts ms_part_dicts;
/* Dictionary `id` (non-zero) from its bytes (copied; a zstd dictionary,
 * e.g. from ms_part_dict_train) for writers at zstd level (0 = 3). */
int ms_part_dict_new(ms_part_dict **out, uint32_t id, const void *bytes,
                     size_t n, int level, ms_mem *mem, ms_errbuf *eb);
/* Train dictionary bytes (at most cap) on the units a writer makes of
 * rows, each row taken as a block of its own: *out (malloc'ed from mem,
 * *n bytes, freed with ms_mem_free(mem, *out, *n)). MS_ERR_INVAL when the
 * rows are too few to learn from. */
int ms_part_dict_train(const ms_row *rows, size_t n, size_t cap, uint8_t **out,
                       size_t *out_n, ms_mem *mem, ms_errbuf *eb);
uint32_t ms_part_dict_id(const ms_part_dict *d);
const uint8_t *ms_part_dict_bytes(const ms_part_dict *d, size_t *n);
void ms_part_dict_free(ms_part_dict *d);
int ms_part_dicts_new(ms_part_dicts **out, ms_mem *mem, ms_errbuf *eb);
/* Add d to the set, which owns it from now on (freed on failure too);
 * MS_ERR_EXISTS for an ID already there, MS_ERR_RANGE past
 * MS_PART_DICTS_MAX. */
int ms_part_dicts_add(ms_part_dicts *s, ms_part_dict *d, ms_errbuf *eb);
/* The dictionary `id` of the set (s may be NULL), or NULL. */
const ms_part_dict *ms_part_dicts_find(const ms_part_dicts *s, uint32_t id);
/* The largest ID in the set (0: none). */
uint32_t ms_part_dicts_max_id(const ms_part_dicts *s);
void ms_part_dicts_free(const ms_part_dicts *s);

/* zstd contexts that one thread keeps from one part to the next (a merge
 * worker's, ms_merge_req.zctx): a writer or merge given them compresses
 * and decompresses with them instead of making and freeing contexts of
 * its own; the bytes written are the same. A writer takes a compression
 * context for as long as it is open (a second writer open at the same
 * time makes its own). Owned by its maker; used by one thread only, never
 * by two at once; free it after the last writer and reader that used it
 * has closed. */
typedef struct ms_zctx ms_zctx;
/* An empty set (each context is made at its first use), allocated
 * through mem (borrowed, must outlive it; NULL = uncounted malloc). */
int ms_zctx_new(ms_zctx **out, ms_mem *mem, ms_errbuf *eb);
void ms_zctx_free(ms_zctx *z);

typedef struct ms_part_writer ms_part_writer;
typedef struct ms_part_writer_opts {
	ms_mem *mem;    /* borrowed; NULL = uncounted malloc */
	ms_io *io;      /* borrowed; NULL = not counted */
	int zstd_level; /* 0 = 3 (core blocks), 1 (index chunk pieces) */
	uint32_t depth; /* merge depth to record */
	/* Skip every fsync: for bulk builds (a fixture) that write many
	 * parts into a staging directory and make them durable with one
	 * syncfs before their own commit rename, and for the outputs of a
	 * shard whose commit syncs them (ms_shard_syncs_outputs). Never
	 * for any other shard. */
	bool no_sync;
	/* Core parts: compress every block's units with this dictionary of
	 * the shard (borrowed; its ID goes into each block header). NULL:
	 * none. Index parts ignore it. */
	const ms_part_dict *dict;
	/* Compress with this thread's kept contexts (borrowed; NULL: the
	 * writer makes its own). */
	ms_zctx *zctx;
} ms_part_writer_opts;

/* Start writing part `id` as the file `tmp_path` (created; must not
 * exist). */
int ms_part_writer_open(ms_part_writer **out, const char *tmp_path,
                        uint64_t id, const ms_part_writer_opts *opts,
                        ms_errbuf *eb);
/* Append one trace's rows (all with the same trace ID, which must sort after
 * every trace already added). Rows are stored in the given order; a trace
 * over MS_BLOCK_SPLIT_BYTES becomes consecutive blocks. */
int ms_part_writer_add_trace(ms_part_writer *w, const ms_row *rows, size_t n,
                             ms_errbuf *eb);
/* Append a stored block without decoding it; its trace ID must sort after
 * the last one added (or equal it, continuing a split trace). The bytes'
 * checksum is verified before they are copied. */
int ms_part_writer_add_raw(ms_part_writer *w, const ms_raw_block *raw,
                           ms_errbuf *eb);
/* Record at least [min_ts, max_ts] as the part's time bounds when it is
 * finished (its blocks' own range otherwise): a merge's output takes its
 * inputs' range whatever rows it dropped (DESIGN.md "Merge", as the
 * reference engine records it). Its blocks must lie inside that range, as
 * blocks taken from those inputs do. Ignored when min_ts > max_ts and for
 * a part finished without a block. */
void ms_part_writer_cover(ms_part_writer *w, int64_t min_ts, int64_t max_ts);
/* Write the index, the Bloom filter and the footer, fsync the file once,
 * close it and fill *meta. The writer is freed whatever the result; on
 * failure the file is removed. Nothing syncs the directory it is in: its
 * publication does (a rename and one directory fsync). */
int ms_part_writer_finish(ms_part_writer *w, ms_part_meta *meta, ms_errbuf *eb);
/* Drop an unfinished part: free the writer, remove its file. */
void ms_part_writer_abort(ms_part_writer *w);

/* Convenience for generators: sort rows by trace ID (stable), group them and
 * write one part as the file tmp_path. */
int ms_part_write_rows(const char *tmp_path, uint64_t id, const ms_row *rows,
                       size_t n, const ms_part_writer_opts *opts,
                       ms_part_meta *meta, ms_errbuf *eb);

/* fsync the part file at path (a directory: every file in it, then the
 * directory): what a caller that copied or linked a part in does before a
 * shard publishes it (a writer syncs its own part at close). Counted in
 * io (may be NULL). */
int ms_part_sync_tree(const char *path, ms_io *io, ms_errbuf *eb);
/* fsync tmp_path, rename it to final_path atomically, fsync the parent.
 * final_path must not exist. Every fsync is counted in io (may be NULL). */
int ms_part_publish(const char *tmp_path, const char *final_path, ms_io *io,
                    ms_errbuf *eb);
/* Remove a part file (one unlink; a directory is removed with everything
 * in it). Best effort, idempotent. */
int ms_part_remove_dir(const char *path, ms_errbuf *eb);

typedef struct ms_part ms_part;
/* Open the part file at `path`, of whichever kind it is (index parts:
 * min_ts and max_ts hold the min and max key; blocks/traces/uncompressed
 * as the index format defines): read and verify its footer, index and
 * Bloom filter (block data is verified as it is read). A part of another
 * format version (a part directory of version 2) is refused with
 * MS_ERR_FORMAT. Errors name the part, the section and what was wrong.
 * mem (borrowed) counts the part's own memory. */
int ms_part_open(ms_part **out, const char *path, ms_mem *mem, ms_errbuf *eb);
/* The same, resolving the blocks' dictionary IDs through `dicts` (may be
 * NULL: a block that names a dictionary is then refused with
 * MS_ERR_FORMAT). The part holds a reference to the set until closed. */
int ms_part_open_dicts(ms_part **out, const char *path,
                       const ms_part_dicts *dicts, ms_mem *mem,
                       ms_errbuf *eb);
void ms_part_close(ms_part *p);
const ms_part_meta *ms_part_get_meta(const ms_part *p);
/* The path the part was opened from (its file). */
const char *ms_part_dir(const ms_part *p);
enum ms_part_kind ms_part_kind_of(const ms_part *p);
/* Bloom filter test: false means the trace ID is certainly absent. */
bool ms_part_may_contain(const ms_part *p, const uint8_t *tid, uint32_t len);
/* Read the whole data section and verify every block checksum and the
 * part checksum (used by fixture checks and recovery tests). */
int ms_part_verify(const ms_part *p, ms_errbuf *eb);

typedef struct ms_part_iter ms_part_iter;
/* Iterate blocks in trace-ID order. mem (borrowed) counts the iterator's
 * buffers; it may differ from the part's (a merge passes its own). */
int ms_part_iter_open(ms_part_iter **out, const ms_part *p, ms_mem *mem,
                      ms_io *io, ms_errbuf *eb);
/* The same with a decompression context made only at the first decode
 * (a merge's scan, which may never decode, shares one context among its
 * inputs) and, where the data file cannot be mapped, a read window of
 * `window` bytes (0 = the default, 256 KiB; a block larger than the
 * window is read whole). */
int ms_part_iter_open_window(ms_part_iter **out, const ms_part *p, ms_mem *mem,
                             ms_io *io, size_t window, ms_errbuf *eb);
/* A trailing iterator over the part of `lead`, a full iterator over the
 * same immutable, pinned part that checks each block before this one
 * reaches it: the second pass of a sampling merge. It shares lead's
 * mapping of the data file when lead has one (else it reads through its
 * own window, as ms_part_iter_open_window). A block lead has already
 * returned, read through the shared mapping, is taken as lead checked it;
 * any other block's header is checked again (checksum, fields, index
 * entry). Units not checked over the same bytes (by lead, unless lead
 * defers them) are checked when handed out raw or decompressed. The
 * trace-ID order and the part's totals are left to lead. Raw blocks are
 * handed out as verified. Memory and I/O counters are lead's. lead is
 * borrowed and used from the same thread: close it after this one. */
int ms_part_iter_open_reread(ms_part_iter **out, const ms_part_iter *lead,
                             size_t window, ms_errbuf *eb);
/* Advance: 1 and *info set when there is a block, 0 at the end, <0 error. */
int ms_part_iter_next(ms_part_iter *it, const ms_block_info **info,
                      ms_errbuf *eb);
/* Decode the current block's columns in `cols` (enum ms_col bits); other
 * fields of the returned rows are zero/NULL. */
int ms_part_iter_decode(ms_part_iter *it, unsigned cols, const ms_row **rows,
                        ms_errbuf *eb);
/* The current block as stored, for ms_part_writer_add_raw. */
int ms_part_iter_raw(ms_part_iter *it, ms_raw_block *raw, ms_errbuf *eb);
/* Whether the current block's stored bytes (raw->bytes of
 * ms_part_iter_raw) stay valid, at the same address and unchanged, until
 * `it` is closed, past any later call: true when the data file is mapped
 * (pages released behind the reader fault in again from the file, which
 * the pinned part keeps unchanged; a re-read sharing its lead's mapping
 * counts on the lead being closed after it, as required) or when the
 * whole data section was read into the window at once (a file no larger
 * than the window: every later read is served from it). False with no
 * current block and for a bounded read window, whose buffer the next
 * refill overwrites or reallocates. raw->info stays the iterator's:
 * valid until the next call, as always. The bytes remain the
 * iterator's: a caller may keep a pointer to them, not free them. */
bool ms_part_iter_raw_stable(const ms_part_iter *it);
/* The data file offset of the current block's stored bytes; UINT64_MAX
 * with no current block. For ms_part_iter_keep_from. */
uint64_t ms_part_iter_raw_offset(const ms_part_iter *it);
/* Keep the pages of a mapped data file from offset `off` on resident in
 * this process: the reader releases pages behind its scan (part_int.h,
 * MS__MAP_KEEP) but then never the page holding off or any after it,
 * until keep_from is moved or cleared (UINT64_MAX, as opened). For a
 * caller that still points at stable bytes (ms_part_iter_raw_stable)
 * from off on and will read them again: they stay mapped instead of
 * being faulted in anew. What stays resident is everything this
 * iterator scanned from off on, so the caller bounds it by how long it
 * keeps off. Only this iterator's releases are held back (not those of
 * a re-read sharing its mapping); a window read releases nothing. */
void ms_part_iter_keep_from(ms_part_iter *it, uint64_t off);
/* Make `it` (a full iterator, before its first next) check each block's
 * header, the order and the part's totals as always, but not the block's
 * units: a unit is checked when it is handed out raw or decompressed, by
 * `it` or by a re-read iterator trailing it. For a scan that only reads
 * block headers and leaves the copying to a second pass, which then
 * hashes the bytes it copies: each unit is read once, and a unit nobody
 * hands out (a dropped trace's) is not read at all. */
void ms_part_iter_defer_units(ms_part_iter *it);
/* Make `it` decompress with the zstd context of `owner` (made at owner's
 * or any sharer's first decode) and drop its own: the iterators of one
 * merge share one context. owner must be used from the same thread and
 * closed after the last decode through `it`; an owner that itself shares
 * is refused (nothing changes). */
void ms_part_iter_share_zstd(ms_part_iter *it, ms_part_iter *owner);
/* Bytes read from disk by this iterator so far. */
uint64_t ms_part_iter_bytes_read(const ms_part_iter *it);
void ms_part_iter_close(ms_part_iter *it);

/* Format a part ID as 16 lowercase hex digits plus NUL. */
void ms_part_id_str(uint64_t id, char out[17]);
/* Parse exactly 16 lowercase hex digits (what ms_part_id_str writes);
 * false, leaving *v alone, for anything else. */
bool ms_part_id_parse(const char *s, uint64_t *v);

#endif
