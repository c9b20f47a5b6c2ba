/*
 * row.c - small helpers of the row and part vocabulary: trace-ID order,
 * the deep copy of a row, part-ID text, part-kind names and the size a row
 * adds to a block.
 */
#include "part_int.h"
#include "ms_enum.h"
#include "ms_err.h"
#include "ms_mem.h"

#include <string.h>

int
ms_row_copy(ms_arena *a, const uint8_t *tid, const ms_row *in, ms_row *out)
{
	*out = *in;
	out->trace_id = tid;
	out->segment_id = ms_arena_strdup(a, in->segment_id);
	out->service = ms_arena_strdup(a, in->service);
	out->instance = ms_arena_strdup(a, in->instance);
	out->endpoint = ms_arena_strdup(a, in->endpoint);
	if ((in->segment_id && !out->segment_id) ||
	    (in->service && !out->service) ||
	    (in->instance && !out->instance) ||
	    (in->endpoint && !out->endpoint))
		return MS_ERR_NOMEM;
	out->tags = NULL;
	if (in->ntags) {
		size_t nb;
		if (!ms_mul_ok(in->ntags, sizeof(char *), &nb))
			return MS_ERR_NOMEM;
		const char **tags = ms_arena_alloc(a, nb, sizeof(void *));
		if (!tags)
			return MS_ERR_NOMEM;
		for (uint32_t i = 0; i < in->ntags; i++) {
			tags[i] = ms_arena_strdup(a, in->tags[i]);
			if (in->tags[i] && !tags[i])
				return MS_ERR_NOMEM;
		}
		out->tags = tags;
	}
	out->body = NULL;
	if (in->body_len) {
		uint8_t *b = ms_arena_dup(a, in->body, in->body_len, 1);
		if (!b)
			return MS_ERR_NOMEM;
		out->body = b;
	}
	return 0;
}

int
ms_trace_id_cmp(const uint8_t *a, uint32_t alen, const uint8_t *b,
                uint32_t blen)
{
	uint32_t n = alen < blen ? alen : blen;
	int c = n ? memcmp(a, b, n) : 0;
	if (c)
		return c < 0 ? -1 : 1;
	return alen < blen ? -1 : alen > blen ? 1 : 0;
}

const char *
ms_trace_id_show(char out[MS_TRACE_ID_SHOW_MAX], const uint8_t *tid,
                 uint32_t len)
{
	if (len > MS_TRACE_ID_MAX)
		len = MS_TRACE_ID_MAX;
	bool plain = len > 0;
	for (uint32_t i = 0; i < len && plain; i++)
		plain = tid[i] > 0x20 && tid[i] < 0x7f;
	if (plain) {
		memcpy(out, tid, len);
		out[len] = '\0';
		return out;
	}
	static const char hex[] = "0123456789abcdef";
	char *o = out;
	*o++ = '0';
	*o++ = 'x';
	for (uint32_t i = 0; i < len; i++) {
		*o++ = hex[tid[i] >> 4];
		*o++ = hex[tid[i] & 15];
	}
	*o = '\0';
	return out;
}

void
ms_part_id_str(uint64_t id, char out[17])
{
	static const char hex[] = "0123456789abcdef";
	for (int i = 15; i >= 0; i--) {
		out[i] = hex[id & 0xf];
		id >>= 4;
	}
	out[16] = '\0';
}

static const char *const part_kind_names[MS_KIND_COUNT] = {
	[MS_KIND_CORE] = "core",
	[MS_KIND_LATENCY] = "latency",
	[MS_KIND_START_TIME] = "start_time",
};

const char *
ms_part_kind_name(enum ms_part_kind k)
{
	return MS_ENUM_NAME(part_kind_names, k, "unknown");
}

int
ms_part_kind_parse(const char *s)
{
	return MS_ENUM_PARSE(part_kind_names, s);
}

static uint64_t
str_bytes(const char *s)
{
	return (s ? strlen(s) : 0) + 2; /* length varint (short) + NUL */
}

uint64_t
ms__row_span_bytes(const ms_row *r)
{
	uint64_t n = 8 + 8 + 4 + 1 + 1; /* span, start, latency, error, ntags */
	n += str_bytes(r->segment_id) + str_bytes(r->service) +
	     str_bytes(r->instance) + str_bytes(r->endpoint);
	for (uint32_t i = 0; i < r->ntags; i++)
		n += str_bytes(r->tags[i]);
	return n + 2 + r->body_len;
}

bool
ms_part_id_parse(const char *s, uint64_t *v)
{
	if (strlen(s) != 16)
		return false;
	uint64_t x = 0;
	for (int i = 0; i < 16; i++) {
		char c = s[i];
		int d = c >= '0' && c <= '9'   ? c - '0'
		        : c >= 'a' && c <= 'f' ? c - 'a' + 10
		                               : -1;
		if (d < 0)
			return false;
		x = x << 4 | (uint64_t)d;
	}
	*v = x;
	return true;
}

bool
ms__part_file_id(const char *name, uint64_t *id)
{
	char hex[17];
	if (strnlen(name, 17) < 17 || name[16] != '.' ||
	    ms_part_kind_parse(name + 17) < 0)
		return false;
	memcpy(hex, name, 16);
	hex[16] = '\0';
	return ms_part_id_parse(hex, id);
}
