/*
 * refenc.h - a model of how the reference engine (BanyanDB's trace part
 * writer) would encode our rows, counting the bytes its block writer
 * counts as a part's compressed size, so that the generated content can
 * be compared with the reference's figure like for like (bench_refbytes;
 * the rules and every choice the model makes are in tests/bench/README.md,
 * "bench_refbytes").
 *
 * The reference's trace part is a set of files; its compressed size is the
 * sum of the bytes its writers wrote: the span file (per block, the span
 * IDs then the span payloads, each a bytes block), per tag a data file and
 * a metadata file, the primary file (block metadata, zstd-compressed in
 * pieces of about 128 KiB) and the meta file (the list of those pieces,
 * zstd-compressed). The trace-ID filter and the part metadata are written
 * beside it and not counted.
 *
 * The encoders below reproduce the reference's byte layouts:
 *   varuint      LEB128, 7 bits a byte, low first
 *   varint       zigzag, then varuint
 *   bytes        varuint length, then the bytes
 *   uint64 list  one type byte (0: 1 byte, 1: 2, 2: 4, 3: 8 bytes a value,
 *                by the largest value), then each value big-endian
 *   block        under 128 bytes: 0x00, one length byte, the bytes;
 *                else 0x01, varuint length, a zstd frame (level 1)
 *   bytes block  block(uint64 list of lengths + 1, 0 for a nil value),
 *                then block(the values concatenated)
 *   int64 list   const (nothing), delta-const (varint delta), delta of
 *                delta (varint first delta, varint second differences),
 *                delta (varint differences); the type and the first value
 *                are the caller's
 * Tag columns: an int64 tag is its encoding type byte, the first value
 * (8 bytes, sign-flipped big-endian), then the int64 list; any other tag
 * is a dictionary (type 10: varuint count, bytes block of the distinct
 * values, bit-packed run lengths of the indices) when a block has at most
 * 256 distinct values, else plain (type 9: a bytes block).
 *
 * Ownership: every buffer and context here is owned by the struct holding
 * it and freed by its _free/_release; out-of-memory ends the process (a
 * benchmark tool, never linked into the library).
 */
#ifndef MS_REFENC_H
#define MS_REFENC_H

#include "ms_row.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A growable byte buffer. */
typedef struct re_buf {
	uint8_t *p;
	size_t n, cap;
} re_buf;
void re_buf_put(re_buf *b, const void *p, size_t n);
void re_buf_byte(re_buf *b, uint8_t c);
void re_buf_free(re_buf *b);

/* One value of a column: p NULL is the reference's nil (a missing value,
 * length code 0), else n bytes (n may be 0: an empty value, code 1). */
typedef struct re_val {
	const uint8_t *p;
	size_t n;
} re_val;

/* The encoding types the reference writes in front of a column. */
enum re_enc {
	RE_ENC_CONST = 1,
	RE_ENC_DELTA_CONST = 2,
	RE_ENC_DELTA = 3,
	RE_ENC_DELTA_OF_DELTA = 4,
	RE_ENC_PLAIN = 9,
	RE_ENC_DICT = 10,
};

void re_varuint(re_buf *b, uint64_t u);
void re_varint(re_buf *b, int64_t v);
/* Length-prefixed bytes (the reference's EncodeBytes). */
void re_bytes(re_buf *b, const void *p, size_t n);
/* An int64 as the reference stores a tag value: big-endian with the sign
 * bit flipped, so that the bytes sort as the numbers do. */
void re_int64_bytes(uint8_t out[8], int64_t v);
void re_uint64_list(re_buf *b, const uint64_t *a, size_t n);

/* zstd at the reference's level, counting what it compressed. */
typedef struct re_zstd re_zstd;
re_zstd *re_zstd_new(int level);
void re_zstd_free(re_zstd *z);
/* Append one frame of src; returns its size. */
size_t re_zstd_frame(re_zstd *z, re_buf *b, const void *src, size_t n);
/* Frames made so far and their input bytes. */
uint64_t re_zstd_frames(const re_zstd *z);
uint64_t re_zstd_in_bytes(const re_zstd *z);
/* Record every frame's input in f (borrowed; NULL: none), one record a
 * frame: the kind (enum re_dump_kind), 1 when the frame is stored inside
 * a block (behind 0x01 and a varuint length) else 0, the input length
 * and the frame's length (both u32 little-endian), then the input: what
 * another zstd encoder needs to be compared on the same frames. */
void re_zstd_dump(re_zstd *z, void *f);
enum re_dump_kind {
	RE_DUMP_SPAN_IDS = 0,
	RE_DUMP_SPANS = 1,
	RE_DUMP_TAG0 = 2, /* + enum re_tag */
	RE_DUMP_PRIMARY = RE_DUMP_TAG0 + 7,
	RE_DUMP_META,
	RE_DUMP_PRIMARY_BOUNDS, /* the RE_BOUNDS layout's */
	RE_DUMP_META_BOUNDS,
};
void re_zstd_kind(re_zstd *z, int kind);

void re_block(re_zstd *z, re_buf *b, const void *src, size_t n);
void re_bytes_block(re_zstd *z, re_buf *b, const re_val *v, size_t n);
/* The int64 list of a (n >= 1) appended to b; its type and *first. */
enum re_enc re_int64_list(re_buf *b, const int64_t *a, size_t n,
                          int64_t *first);
/* An int64 tag column. */
enum re_enc re_tag_int64(re_buf *b, const int64_t *a, size_t n);
/* Any other tag column: dictionary or plain. */
enum re_enc re_tag_values(re_zstd *z, re_buf *b, const re_val *v, size_t n);
/* One tag's metadata entry for a block: where its values went. */
void re_tag_meta(re_buf *b, uint64_t offset, uint64_t size);

/* The stored tags of a SkyWalking segment, in name order (the order the
 * block metadata lists them in). */
enum re_tag {
	RE_TAG_ENDPOINT,  /* endpoint_id, string */
	RE_TAG_IS_ERROR,  /* is_error, int64 */
	RE_TAG_LATENCY,   /* latency, int64 */
	RE_TAG_SERVICE,   /* service_id, string */
	RE_TAG_INSTANCE,  /* service_instance_id, string */
	RE_TAG_START,     /* start_time, timestamp (ns) */
	RE_TAG_TAGS,      /* tags, string array */
	RE_NTAGS
};
extern const char *const re_tag_name[RE_NTAGS];

/* One block's metadata as the primary file holds it. */
typedef struct re_block_meta {
	const uint8_t *trace_id;
	size_t trace_id_len;
	uint64_t span_bytes; /* uncompressed span payload bytes */
	uint64_t count;
	int64_t min_ts, max_ts;
	uint64_t spans_offset, spans_size;
	uint64_t tag_offset[RE_NTAGS], tag_size[RE_NTAGS]; /* in the .tm */
} re_block_meta;
/* Marshal m; with bounds, the timestamp-bounds fields (a marker and the
 * min and max) the reference added after its shard was written. */
void re_block_meta_marshal(re_buf *b, const re_block_meta *m, bool bounds);

/* The primary file's layout variants a part is counted in. */
enum re_layout {
	RE_LEGACY, /* the block metadata of the reference shard's era */
	RE_BOUNDS, /* with the timestamp bounds of the current code */
	RE_NLAYOUTS
};

/* Bytes a part's writers wrote, by file. */
typedef struct re_counts {
	uint64_t span_ids, spans; /* spans.bin: the two bytes blocks */
	uint64_t tag_data[RE_NTAGS], tag_meta[RE_NTAGS];
	uint64_t primary[RE_NLAYOUTS], meta[RE_NLAYOUTS];
	uint64_t blocks, rows, split_traces, dict_columns, plain_columns;
} re_counts;
/* The part's compressed size in a layout. */
uint64_t re_counts_total(const re_counts *c, enum re_layout l);
void re_counts_add(re_counts *to, const re_counts *c);

/* One part being written. */
typedef struct re_part {
	re_zstd *z; /* borrowed */
	re_counts c;
	re_buf prim[RE_NLAYOUTS], meta[RE_NLAYOUTS], first[RE_NLAYOUTS];
	bool open[RE_NLAYOUTS];
	re_buf scratch, vals;
} re_part;
void re_part_init(re_part *p, re_zstd *z);
/* Add one trace's rows (all of one trace ID, which sorts after the last
 * one added), in the order given: one block, or consecutive blocks when
 * its span payloads pass 2 MiB, cut as the reference's flush cuts. */
void re_part_add_trace(re_part *p, const ms_row *rows, size_t n);
/* Flush the last primary piece and write the meta file. */
void re_part_finish(re_part *p);
void re_part_release(re_part *p);

#endif
