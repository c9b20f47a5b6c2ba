/*
 * ledger.c - ledger arithmetic and the canonical row encodings hashed into
 * a ledger (core/FORMAT.md, section "Ledger").
 *
 * The encoding is streamed into XXH3-128 through a small staging buffer, so
 * hashing a row allocates nothing and a row that fits the buffer is hashed
 * in one call.
 */
#define XXH_INLINE_ALL
#include "ms_ledger.h"
#include "sidx_int.h"

#include <xxhash.h>

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* Canonical-encoding sink: stages small fields, streams large ones. */
struct enc {
	XXH3_state_t st;
	bool streaming;
	size_t len;
	uint8_t buf[1024];
};

static void
enc_init(struct enc *e)
{
	e->streaming = false;
	e->len = 0;
}

/* Hand the staged bytes to the stream, starting it if need be. */
static void
enc_flush(struct enc *e)
{
	if (!e->streaming) {
		XXH3_128bits_reset(&e->st);
		e->streaming = true;
	}
	XXH3_128bits_update(&e->st, e->buf, e->len);
	e->len = 0;
}

static void
enc_put(struct enc *e, const void *p, size_t n)
{
	if (n <= sizeof(e->buf) - e->len) {
		if (n)
			memcpy(e->buf + e->len, p, n);
		e->len += n;
		return;
	}
	enc_flush(e);
	if (n <= sizeof(e->buf)) {
		memcpy(e->buf, p, n);
		e->len = n;
	} else {
		XXH3_128bits_update(&e->st, p, n);
	}
}

/* n (<= 8) staged bytes to write in place: fixed-width fields are stored
 * straight into the buffer, not copied through memcpy. The bytes hashed
 * are the same however they reach the stream. */
static uint8_t *
enc_room(struct enc *e, size_t n)
{
	if (n > sizeof(e->buf) - e->len)
		enc_flush(e);
	uint8_t *p = e->buf + e->len;
	e->len += n;
	return p;
}

static void
enc_u8(struct enc *e, uint8_t v)
{
	*enc_room(e, 1) = v;
}

static void
enc_u32(struct enc *e, uint32_t v)
{
	ms_put_le32(enc_room(e, 4), v);
}

static void
enc_u64(struct enc *e, uint64_t v)
{
	ms_put_le64(enc_room(e, 8), v);
}

/* u32le length then the bytes; a NULL pointer encodes as length 0. */
static void
enc_bytes(struct enc *e, const void *p, size_t n)
{
	if (!p)
		n = 0;
	enc_u32(e, (uint32_t)n);
	enc_put(e, p, n);
}

static void
enc_str(struct enc *e, const char *s)
{
	enc_bytes(e, s, s ? strlen(s) : 0);
}

static XXH128_hash_t
enc_end(struct enc *e)
{
	if (!e->streaming)
		return XXH3_128bits(e->buf, e->len);
	XXH3_128bits_update(&e->st, e->buf, e->len);
	return XXH3_128bits_digest(&e->st);
}

/* Encoding tags keep the core and index domains apart. */
#define ENC_CORE_ROW 0x01
#define ENC_INDEX_ROW 0x02

static void
add_hash(ms_ledger *l, XXH128_hash_t h)
{
	uint64_t lo = l->sum_lo + h.low64;
	l->sum_hi += h.high64 + (lo < l->sum_lo);
	l->sum_lo = lo;
	l->rows++;
}

void
ms_ledger_init(ms_ledger *l)
{
	memset(l, 0, sizeof(*l));
}

void
ms_ledger_set_init(ms_ledger_set *s)
{
	memset(s, 0, sizeof(*s));
}

static XXH128_hash_t
row_hash(const ms_row *r)
{
	struct enc e;
	enc_init(&e);
	enc_u8(&e, ENC_CORE_ROW);
	enc_bytes(&e, r->trace_id, r->trace_id_len);
	enc_u64(&e, r->span_id);
	enc_str(&e, r->segment_id);
	enc_str(&e, r->service);
	enc_str(&e, r->instance);
	enc_str(&e, r->endpoint);
	enc_u64(&e, (uint64_t)r->start_ns);
	enc_u32(&e, r->latency_ms);
	enc_u8(&e, r->is_error ? 1 : 0);
	uint32_t ntags = r->tags ? r->ntags : 0;
	enc_u32(&e, ntags);
	for (uint32_t i = 0; i < ntags; i++)
		enc_str(&e, r->tags[i]);
	enc_bytes(&e, r->body, r->body_len);
	return enc_end(&e);
}

void
ms_ledger_row_hash(const ms_row *r, uint64_t *lo, uint64_t *hi)
{
	XXH128_hash_t h = row_hash(r);
	*lo = h.low64;
	*hi = h.high64;
}

void
ms_ledger_add_row(ms_ledger *l, const ms_row *r)
{
	add_hash(l, row_hash(r));
}

/*
 * An index row's encoding written straight into one buffer and hashed in
 * one call, for a row that fits it (nearly every row): the same bytes as
 * the enc stream above takes field by field, so the same hash (XXH3 of
 * the bytes, however they reach it). FLAT_MAX bytes of room.
 */
#define FLAT_MAX 1024u

static inline uint8_t *
flat_u32(uint8_t *p, uint32_t v)
{
	ms_put_le32(p, v);
	return p + 4;
}

static inline uint8_t *
flat_u64(uint8_t *p, uint64_t v)
{
	ms_put_le64(p, v);
	return p + 8;
}

/* u32le length then the bytes (enc_bytes). */
static inline uint8_t *
flat_bytes(uint8_t *p, const void *v, uint32_t n)
{
	p = flat_u32(p, n);
	if (n)
		memcpy(p, v, n);
	return p + n;
}

/* The fields up to the instance: tag, series, key, the value (0x01 ||
 * trace ID) as one byte string, other. FLAT_HEAD + tid_len bytes. */
#define FLAT_HEAD (1u + 8 + 8 + 4 + 1 + 8)
static inline uint8_t *
flat_head(uint8_t *p, const ms_sidx_row *r)
{
	*p++ = ENC_INDEX_ROW;
	p = flat_u64(p, r->series);
	p = flat_u64(p, (uint64_t)r->key);
	p = flat_u32(p, 1 + r->tid_len);
	*p++ = 0x01;
	p = ms__copy_short(p, r->tid, r->tid_len); /* a whole array */
	return flat_u64(p, (uint64_t)r->other);
}

static XXH128_hash_t
index_row_hash(const ms_sidx_row *r)
{
	uint8_t val[1 + MS_TRACE_ID_MAX];
	size_t n = ms_sidx_value(r, val);
	struct enc e;
	enc_init(&e);
	enc_u8(&e, ENC_INDEX_ROW);
	enc_u64(&e, r->series);
	enc_u64(&e, (uint64_t)r->key);
	enc_bytes(&e, val, n);
	enc_u64(&e, (uint64_t)r->other);
	enc_str(&e, r->instance);
	enc_str(&e, r->endpoint);
	uint32_t ntags = r->tags ? r->ntags : 0;
	enc_u32(&e, ntags);
	for (uint32_t i = 0; i < ntags; i++)
		enc_str(&e, r->tags[i]);
	return enc_end(&e);
}

void
ms_ledger_add_index_row(ms_ledger *l, const ms_sidx_row *r)
{
	/* The strings' lengths first: a row whose encoding passes FLAT_MAX
	 * goes through the stream. */
	uint8_t b[FLAT_MAX + MS__COPY_SLACK];
	uint32_t ntags = r->tags ? r->ntags : 0;
	size_t li = r->instance ? strlen(r->instance) : 0;
	size_t le = r->endpoint ? strlen(r->endpoint) : 0;
	size_t room = FLAT_MAX - FLAT_HEAD - MS_TRACE_ID_MAX - 12;
	if (li + le + 4 * (size_t)ntags > room) {
		add_hash(l, index_row_hash(r));
		return;
	}
	room -= li + le + 4 * (size_t)ntags;
	uint8_t *p = flat_head(b, r);
	p = flat_bytes(p, r->instance, (uint32_t)li);
	p = flat_bytes(p, r->endpoint, (uint32_t)le);
	p = flat_u32(p, ntags);
	for (uint32_t i = 0; i < ntags; i++) {
		const char *t = r->tags[i];
		size_t n = t ? strlen(t) : 0;
		if (n > room) {
			add_hash(l, index_row_hash(r));
			return;
		}
		room -= n;
		p = flat_bytes(p, t, (uint32_t)n);
	}
	add_hash(l, XXH3_128bits(b, (size_t)(p - b)));
}

void
ms__ledger_add_index_enc(ms_ledger *l, const ms_sidx_row *r,
                         const uint8_t *const v[3], const uint32_t len[3])
{
	/* The bytes ms_ledger_add_index_row encodes: the value (0x01 ||
	 * trace ID) as one byte string, the strings' lengths from the
	 * stored values (which hold no NUL), each tag's length as u32.
	 * A tag list of len[2] bytes holds at most len[2] tags, each
	 * encoded in at most 4 times its stored bytes (a length varint
	 * of at least one byte becomes 4): bounded by 4 + 4 x len[2]. */
	uint8_t b[FLAT_MAX + MS__COPY_SLACK];
	const uint8_t *t = v[2];
	uint32_t ntags = len[2] ? (uint32_t)ms__get_uv(&t) : 0;
	if ((uint64_t)len[0] + len[1] + 4 * (uint64_t)len[2] <=
	    FLAT_MAX - FLAT_HEAD - MS_TRACE_ID_MAX - 12) {
		/* The values have MS_TRACE_ID_MAX bytes readable past
		 * them (sidx_int.h): copied as fixed-size blocks. */
		uint8_t *p = flat_head(b, r);
		p = ms__copy_short(flat_u32(p, len[0]), v[0], len[0]);
		p = ms__copy_short(flat_u32(p, len[1]), v[1], len[1]);
		p = flat_u32(p, ntags);
		for (uint32_t i = 0; i < ntags; i++) {
			uint32_t n = (uint32_t)ms__get_uv(&t);
			p = ms__copy_short(flat_u32(p, n), t, n);
			t += n;
		}
		add_hash(l, XXH3_128bits(b, (size_t)(p - b)));
		return;
	}
	struct enc e;
	enc_init(&e);
	enc_u8(&e, ENC_INDEX_ROW);
	enc_u64(&e, r->series);
	enc_u64(&e, (uint64_t)r->key);
	enc_u32(&e, 1 + r->tid_len);
	enc_u8(&e, 0x01);
	enc_put(&e, r->tid, r->tid_len);
	enc_u64(&e, (uint64_t)r->other);
	enc_bytes(&e, v[0], len[0]);
	enc_bytes(&e, v[1], len[1]);
	enc_u32(&e, ntags);
	for (uint32_t i = 0; i < ntags; i++) {
		size_t n = (size_t)ms__get_uv(&t);
		enc_bytes(&e, t, n);
		t += n;
	}
	add_hash(l, enc_end(&e));
}

void
ms_ledger_add(ms_ledger *acc, const ms_ledger *b)
{
	uint64_t lo = acc->sum_lo + b->sum_lo;
	acc->sum_hi += b->sum_hi + (lo < acc->sum_lo);
	acc->sum_lo = lo;
	acc->rows += b->rows;
}

int
ms_ledger_sub(ms_ledger *acc, const ms_ledger *b)
{
	if (b->rows > acc->rows)
		return MS_ERR_RANGE;
	uint64_t lo = acc->sum_lo - b->sum_lo;
	acc->sum_hi -= b->sum_hi + (acc->sum_lo < b->sum_lo);
	acc->sum_lo = lo;
	acc->rows -= b->rows;
	return 0;
}

bool
ms_ledger_equal(const ms_ledger *a, const ms_ledger *b)
{
	return a->rows == b->rows && a->sum_lo == b->sum_lo &&
	       a->sum_hi == b->sum_hi;
}

void
ms_ledger_set_add(ms_ledger_set *acc, const ms_ledger_set *b)
{
	for (int k = 0; k < MS_KIND_COUNT; k++)
		ms_ledger_add(&acc->kind[k], &b->kind[k]);
}

int
ms_ledger_set_sub(ms_ledger_set *acc, const ms_ledger_set *b)
{
	for (int k = 0; k < MS_KIND_COUNT; k++)
		if (b->kind[k].rows > acc->kind[k].rows)
			return MS_ERR_RANGE;
	for (int k = 0; k < MS_KIND_COUNT; k++)
		ms_ledger_sub(&acc->kind[k], &b->kind[k]);
	return 0;
}

bool
ms_ledger_set_equal(const ms_ledger_set *a, const ms_ledger_set *b)
{
	for (int k = 0; k < MS_KIND_COUNT; k++)
		if (!ms_ledger_equal(&a->kind[k], &b->kind[k]))
			return false;
	return true;
}

char *
ms_ledger_format(const ms_ledger *l, char out[MS_LEDGER_STR_MAX])
{
	snprintf(out, MS_LEDGER_STR_MAX,
	         "%" PRIu64 ":%016" PRIx64 "%016" PRIx64, l->rows, l->sum_hi,
	         l->sum_lo);
	return out;
}

static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int
ms_ledger_parse(ms_ledger *l, const char *s)
{
	uint64_t rows = 0;
	const char *p = s;
	if (*p < '0' || *p > '9')
		return MS_ERR_INVAL;
	for (; *p >= '0' && *p <= '9'; p++) {
		uint64_t d = (uint64_t)(*p - '0');
		if (rows > (UINT64_MAX - d) / 10)
			return MS_ERR_INVAL;
		rows = rows * 10 + d;
	}
	if (*p++ != ':')
		return MS_ERR_INVAL;
	uint64_t half[2] = { 0, 0 };
	for (int i = 0; i < 32; i++) {
		int v = hexval(p[i]);
		if (v < 0)
			return MS_ERR_INVAL;
		half[i / 16] = half[i / 16] << 4 | (uint64_t)v;
	}
	if (p[32] != '\0')
		return MS_ERR_INVAL;
	l->rows = rows;
	l->sum_hi = half[0];
	l->sum_lo = half[1];
	return 0;
}
