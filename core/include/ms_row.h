/*
 * ms_row.h - the row model: one span of a trace.
 *
 * A row never owns its memory: every pointer in it is borrowed from whoever
 * produced the row (a generator, or a part reader's decoded block, valid until
 * that reader moves on). Strings are NUL-terminated UTF-8.
 */
#ifndef MS_ROW_H
#define MS_ROW_H

#include <stdbool.h>
#include <stdint.h>

#define MS_TRACE_ID_MAX 64      /* bytes; trace IDs are 1..64 bytes */
#define MS_STR_MAX 4096         /* longest service/instance/endpoint/segment */
#define MS_TAGS_MAX 1024        /* most tags on one row */
#define MS_TAG_MAX 65536        /* longest "key=value" tag */
#define MS_BODY_MAX (16u << 20) /* largest span body */

typedef struct ms_row {
	const uint8_t *trace_id; /* 1..MS_TRACE_ID_MAX bytes */
	uint32_t trace_id_len;
	uint64_t span_id;
	const char *segment_id;
	const char *service;
	const char *instance;
	const char *endpoint;
	int64_t start_ns; /* unix ns; the row's timestamp */
	uint32_t latency_ms;
	bool is_error;
	const char *const *tags; /* ntags "key=value" strings */
	uint32_t ntags;
	const uint8_t *body; /* opaque span body; may be NULL if 0 */
	uint32_t body_len;
} ms_row;

/* Columns a reader can decode; trace ID is always available. */
enum ms_col {
	MS_COL_SPAN_ID = 1u << 0,
	MS_COL_SEGMENT_ID = 1u << 1,
	MS_COL_SERVICE = 1u << 2,
	MS_COL_INSTANCE = 1u << 3,
	MS_COL_ENDPOINT = 1u << 4,
	MS_COL_START = 1u << 5,
	MS_COL_LATENCY = 1u << 6,
	MS_COL_ERROR = 1u << 7,
	MS_COL_TAGS = 1u << 8,
	MS_COL_BODY = 1u << 9,
	MS_COL_ALL = (1u << 10) - 1,
};

/* Compare two trace IDs: memcmp order, shorter first on a common prefix. */
int ms_trace_id_cmp(const uint8_t *a, uint32_t alen, const uint8_t *b,
                    uint32_t blen);

/* Room for ms_trace_id_show: "0x", two hex digits a byte, a NUL. */
#define MS_TRACE_ID_SHOW_MAX (2 * MS_TRACE_ID_MAX + 3)
/* Trace ID tid (len bytes; past MS_TRACE_ID_MAX cut there) as every
 * message shows one, into out (caller-owned): as it is when each byte is
 * printable ASCII other than a space, else "0x" and its bytes in hex, so
 * that a NUL or a control byte neither cuts nor garbles the message.
 * Returns out. */
const char *ms_trace_id_show(char out[MS_TRACE_ID_SHOW_MAX],
                             const uint8_t *tid, uint32_t len);

struct ms_arena;
/* Deep-copy row `in` into *out: its strings, tags and body are copied into
 * arena a (ms_mem.h) and live as long as the arena's memory; trace_id is
 * set to tid (borrowed: the caller's one copy of the trace's ID). A NULL
 * string stays NULL; a row without tags or body gets NULL for them.
 * 0, or MS_ERR_NOMEM (then *out is partly written and must not be used). */
int ms_row_copy(struct ms_arena *a, const uint8_t *tid, const ms_row *in,
                ms_row *out);

#endif
