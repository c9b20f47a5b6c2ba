/*
 * ms_sidx.h - secondary index parts: the `latency` and `start_time` indexes.
 *
 * An index part holds one row per span of its core part: (series, key,
 * value, tags). series = XXH3_64bits (seed 0) over the bytes of the span's
 * service value (the service ID the fixture's rows carry, as the reference's
 * service_id) without its NUL ("" when absent) followed by one byte, 1 if
 * the span is an error and 0 if not; key = latency_ms (kind
 * MS_KIND_LATENCY) or start_ns (MS_KIND_START_TIME) as a signed 64-bit
 * integer; value = the byte 0x01 followed by the trace ID. The tags are the
 * span's instance, endpoint and tag list, and the other index's key (`other`:
 * start_ns on the latency index, latency_ms on the start_time index).
 * Rows are in non-decreasing (series, key, value) order (ms_sidx_row_cmp;
 * value by ms_trace_id_cmp order, which is memcmp order of 0x01||ID); rows
 * equal in that order are all kept, in the order they were added (a merge:
 * by input), and ms_sidx_write_rows sorts them by their tags (other, then
 * instance, endpoint and the tag list, strings by strcmp). The byte layout
 * is in core/FORMAT.md, section "Index part".
 *
 * Index parts are ms_part handles (ms_part_open opens them; ms_part_kind_of
 * tells the kind). Their meta: rows = index rows, blocks = chunks, traces =
 * 0, min_ts/max_ts = the min and max key (0 and 0 when empty),
 * uncompressed_bytes = the chunks' uncompressed payload bytes, depth = the
 * core part's depth (ms_part_writer_opts.depth).
 *
 * Ownership: writers and iterators are heap objects owned by the caller of
 * their _open and freed by _finish/_abort/_close (NULL accepted). A row's
 * strings and tag list are borrowed: from the core row (ms_sidx_row_of), or
 * owned by the iterator (ms_sidx_iter_next: valid until its next call). A
 * writer copies what it is given. Rows from ms_sidx_read_all and their
 * strings belong to the caller (free with ms_sidx_rows_free).
 */
#ifndef MS_SIDX_H
#define MS_SIDX_H

#include "ms_part.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ms_sidx_row {
	uint64_t series;
	int64_t key;
	/* The other index's key: start_ns (latency index) or latency_ms
	 * (start_time index, 0..UINT32_MAX). */
	int64_t other;
	const char *instance; /* borrowed; NULL counts as "" */
	const char *endpoint; /* borrowed; NULL counts as "" */
	const char *const *tags; /* borrowed; ntags "key=value" strings */
	uint32_t ntags;          /* 0..MS_TAGS_MAX */
	uint32_t tid_len;        /* 1..MS_TRACE_ID_MAX */
	uint8_t tid[MS_TRACE_ID_MAX];
} ms_sidx_row;

/* The series of a service value (NULL counts as "") and error flag. */
uint64_t ms_sidx_series(const char *service, bool is_error);
/* Fill *out with the index row of core row r for kind (latency or
 * start_time); its strings are borrowed from r. r's trace ID must be
 * 1..MS_TRACE_ID_MAX bytes. */
void ms_sidx_row_of(enum ms_part_kind kind, const ms_row *r, ms_sidx_row *out);
/* Order of index rows: series, key, value; the tags do not take part.
 * <0, 0, >0. */
int ms_sidx_row_cmp(const ms_sidx_row *a, const ms_sidx_row *b);
/* The row's value bytes (0x01 || trace ID); returns their length. */
size_t ms_sidx_value(const ms_sidx_row *r, uint8_t out[1 + MS_TRACE_ID_MAX]);

/* Build the index rows of core rows rows[0..n) for kind, sort them (ties
 * by their tags, so the bytes depend only on the rows) and
 * write index part `id` as the file tmp_path (created; must not exist);
 * fill *meta. On failure tmp_path is removed. */
int ms_sidx_write_rows(enum ms_part_kind kind, const char *tmp_path, uint64_t id,
                       const ms_row *rows, size_t n,
                       const ms_part_writer_opts *opts, ms_part_meta *meta,
                       ms_errbuf *eb);

/* Streaming writer for rows already in order. */
typedef struct ms_sidx_writer ms_sidx_writer;
int ms_sidx_writer_open(ms_sidx_writer **out, enum ms_part_kind kind,
                        const char *tmp_path, uint64_t id,
                        const ms_part_writer_opts *opts, ms_errbuf *eb);
/* Append a row (its strings are copied); it must not sort before the
 * previous one, its strings must be at most MS_STR_MAX bytes, its tags at
 * most MS_TAGS_MAX of at most MS_TAG_MAX bytes, none NULL, and on the
 * start_time index other must be 0..UINT32_MAX (else MS_ERR_INVAL). */
int ms_sidx_writer_add(ms_sidx_writer *w, const ms_sidx_row *row,
                       ms_errbuf *eb);
/* Write the index and the footer, fsync the file once, close it, fill
 * *meta (may be NULL). The writer is freed whatever the result; on
 * failure the file is removed. */
int ms_sidx_writer_finish(ms_sidx_writer *w, ms_part_meta *meta, ms_errbuf *eb);
void ms_sidx_writer_abort(ms_sidx_writer *w);

/* Iterate an index part's rows in order; every chunk is verified before
 * use, and reaching the end (0) also checks the part checksum, row count
 * and key range against meta. */
typedef struct ms_sidx_iter ms_sidx_iter;
int ms_sidx_iter_open(ms_sidx_iter **out, const ms_part *p, ms_mem *mem,
                      ms_io *io, ms_errbuf *eb);
/* 1 and *row set, 0 at the end, <0 on error. */
int ms_sidx_iter_next(ms_sidx_iter *it, const ms_sidx_row **row, ms_errbuf *eb);
void ms_sidx_iter_close(ms_sidx_iter *it);

/* Load all rows of an index part (memory from mem). *rows is NULL when
 * there are none. */
int ms_sidx_read_all(const ms_part *p, ms_mem *mem, ms_sidx_row **rows,
                     size_t *n, ms_errbuf *eb);
void ms_sidx_rows_free(ms_mem *mem, ms_sidx_row *rows, size_t n);

/* Merge index parts (all of kind `kind`) into one part `id`, the file
 * tmp_path, dropping every row whose trace ID keep() rejects (keep NULL
 * keeps all); *rows_pruned (may be NULL) gets how many were dropped.
 * opts->depth is recorded. On failure tmp_path is removed and nothing is
 * published. */
int ms_sidx_merge(enum ms_part_kind kind, const ms_part *const *inputs,
                  size_t n,
                  bool (*keep)(void *ctx, const uint8_t *tid, uint32_t len),
                  void *ctx, const char *tmp_path, uint64_t id,
                  const ms_part_writer_opts *opts, ms_part_meta *meta,
                  uint64_t *rows_pruned, ms_errbuf *eb);

#endif
