/*
 * refenc.c - the reference trace part encoding model (refenc.h): the
 * byte layouts of the reference's encoders and its block writer's
 * accounting, re-expressed for our rows.
 */
#include "refenc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#define RE_PLAIN_BELOW 128                /* a block stays plain below */
#define RE_PRIMARY_PIECE (128u * 1024)    /* primary piece flushed past */
#define RE_SPLIT_BYTES (2u * 1024 * 1024) /* span payload per block */
#define RE_DICT_MAX 256                   /* distinct values a dictionary */

const char *const re_tag_name[RE_NTAGS] = {
	"endpoint_id", "is_error",            "latency", "service_id",
	"service_instance_id", "start_time", "tags",
};

static void
oom(void)
{
	fputs("refenc: out of memory\n", stderr);
	exit(1);
}

static void
reserve(re_buf *b, size_t more)
{
	if (b->cap - b->n >= more)
		return;
	size_t cap = b->cap ? b->cap : 256;
	while (cap - b->n < more)
		cap *= 2;
	uint8_t *p = realloc(b->p, cap);
	if (!p)
		oom();
	b->p = p;
	b->cap = cap;
}

void
re_buf_put(re_buf *b, const void *p, size_t n)
{
	if (!n)
		return;
	reserve(b, n);
	memcpy(b->p + b->n, p, n);
	b->n += n;
}

void
re_buf_byte(re_buf *b, uint8_t c)
{
	reserve(b, 1);
	b->p[b->n++] = c;
}

void
re_buf_free(re_buf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

void
re_varuint(re_buf *b, uint64_t u)
{
	while (u > 0x7f) {
		re_buf_byte(b, (uint8_t)(0x80 | (u & 0x7f)));
		u >>= 7;
	}
	re_buf_byte(b, (uint8_t)u);
}

void
re_varint(re_buf *b, int64_t v)
{
	re_varuint(b, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

void
re_bytes(re_buf *b, const void *p, size_t n)
{
	re_varuint(b, n);
	re_buf_put(b, p, n);
}

static void
be64(uint8_t out[8], uint64_t u)
{
	for (int i = 0; i < 8; i++)
		out[i] = (uint8_t)(u >> (56 - 8 * i));
}

void
re_int64_bytes(uint8_t out[8], int64_t v)
{
	be64(out, (uint64_t)v ^ (1ull << 63));
}

void
re_uint64_list(re_buf *b, const uint64_t *a, size_t n)
{
	uint64_t max = 0;
	unsigned w, type;

	for (size_t i = 0; i < n; i++)
		if (a[i] > max)
			max = a[i];
	type = max < (1ull << 8) ? 0 : max < (1ull << 16) ? 1
	                                : max < (1ull << 32) ? 2
	                                                     : 3;
	w = 1u << type;
	re_buf_byte(b, (uint8_t)type);
	reserve(b, n * w);
	for (size_t i = 0; i < n; i++)
		for (unsigned k = 0; k < w; k++)
			b->p[b->n++] = (uint8_t)(a[i] >> (8 * (w - 1 - k)));
}

struct re_zstd {
	ZSTD_CCtx *cctx;
	uint64_t frames, in;
	FILE *dump;
	int kind;
	bool in_block;
};

re_zstd *
re_zstd_new(int level)
{
	re_zstd *z = calloc(1, sizeof(*z));

	if (!z || !(z->cctx = ZSTD_createCCtx()))
		oom();
	ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_compressionLevel, level);
	ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_checksumFlag, 0);
	ZSTD_CCtx_setParameter(z->cctx, ZSTD_c_contentSizeFlag, 1);
	return z;
}

void
re_zstd_free(re_zstd *z)
{
	if (!z)
		return;
	ZSTD_freeCCtx(z->cctx);
	free(z);
}

size_t
re_zstd_frame(re_zstd *z, re_buf *b, const void *src, size_t n)
{
	size_t bound = ZSTD_compressBound(n), got;

	reserve(b, bound);
	got = ZSTD_compress2(z->cctx, b->p + b->n, bound, src, n);
	if (ZSTD_isError(got)) {
		fprintf(stderr, "refenc: zstd: %s\n", ZSTD_getErrorName(got));
		exit(1);
	}
	if (z->dump) {
		uint8_t h[10] = { (uint8_t)z->kind, z->in_block };
		for (int i = 0; i < 4; i++) {
			h[2 + i] = (uint8_t)(n >> (8 * i));
			h[6 + i] = (uint8_t)(got >> (8 * i));
		}
		if (fwrite(h, 1, sizeof(h), z->dump) != sizeof(h) ||
		    (n && fwrite(src, 1, n, z->dump) != n)) {
			fputs("refenc: cannot write the dump\n", stderr);
			exit(1);
		}
	}
	b->n += got;
	z->frames++;
	z->in += n;
	return got;
}

void
re_zstd_dump(re_zstd *z, void *f)
{
	z->dump = f;
}

void
re_zstd_kind(re_zstd *z, int kind)
{
	z->kind = kind;
}

uint64_t
re_zstd_frames(const re_zstd *z)
{
	return z->frames;
}

uint64_t
re_zstd_in_bytes(const re_zstd *z)
{
	return z->in;
}

void
re_block(re_zstd *z, re_buf *b, const void *src, size_t n)
{
	if (n < RE_PLAIN_BELOW) {
		re_buf_byte(b, 0);
		re_buf_byte(b, (uint8_t)n);
		re_buf_put(b, src, n);
		return;
	}
	re_buf tmp = { 0 };
	z->in_block = true;
	re_zstd_frame(z, &tmp, src, n);
	z->in_block = false;
	re_buf_byte(b, 1);
	re_bytes(b, tmp.p, tmp.n);
	re_buf_free(&tmp);
}

void
re_bytes_block(re_zstd *z, re_buf *b, const re_val *v, size_t n)
{
	uint64_t *lens = malloc((n ? n : 1) * sizeof(*lens));
	re_buf list = { 0 }, cat = { 0 };

	if (!lens)
		oom();
	for (size_t i = 0; i < n; i++) {
		lens[i] = v[i].p ? v[i].n + 1 : 0;
		if (v[i].p)
			re_buf_put(&cat, v[i].p, v[i].n);
	}
	re_uint64_list(&list, lens, n);
	re_block(z, b, list.p, list.n);
	re_block(z, b, cat.p, cat.n);
	free(lens);
	re_buf_free(&list);
	re_buf_free(&cat);
}

static void
varint_list(re_buf *b, const int64_t *d, size_t n)
{
	for (size_t i = 0; i < n; i++)
		re_varint(b, d[i]);
}

/* Monotonic with one sign of difference throughout (a zero difference
 * counts as ascending); *cst when every difference is the first. */
static bool
is_delta(const int64_t *a, size_t n, bool *cst)
{
	*cst = false;
	if (n < 2)
		return false;
	int64_t d1 = a[1] - a[0];
	bool neg = d1 < 0, c = true;
	for (size_t i = 2; i < n; i++) {
		int64_t d = a[i] - a[i - 1];
		if ((d < 0) != neg)
			return false;
		if (d != d1)
			c = false;
	}
	*cst = c;
	return true;
}

/* Mostly rising: at most two resets (or fewer than n/8), each to a
 * non-negative value at most an eighth of the one before. */
static bool
is_incremental(const int64_t *a, size_t n)
{
	size_t resets = 0;

	if (n < 2)
		return false;
	if (a[0] < 0)
		return true;
	for (size_t i = 1; i < n; i++)
		if (a[i] < a[i - 1]) {
			if (a[i] < 0 || a[i] > (a[i - 1] >> 3))
				return false;
			resets++;
		}
	return resets <= 2 || resets < (n >> 3);
}

static void
delta_of_delta(re_buf *b, const int64_t *a, size_t n)
{
	int64_t d1 = a[1] - a[0], v = a[1];

	re_varint(b, d1);
	for (size_t i = 2; i < n; i++) {
		int64_t d2 = a[i] - v - d1;
		d1 += d2;
		v += d1;
		re_varint(b, d2);
	}
}

enum re_enc
re_int64_list(re_buf *b, const int64_t *a, size_t n, int64_t *first)
{
	bool cst, c = true;

	*first = a[0];
	for (size_t i = 1; i < n && c; i++)
		c = a[i] == a[0];
	if (c)
		return RE_ENC_CONST;
	bool delta = is_delta(a, n, &cst);
	if (cst) {
		re_varint(b, a[1] - a[0]);
		return RE_ENC_DELTA_CONST;
	}
	if (delta || is_incremental(a, n)) {
		delta_of_delta(b, a, n);
		return RE_ENC_DELTA_OF_DELTA;
	}
	int64_t *d = malloc(n * sizeof(*d));
	if (!d)
		oom();
	for (size_t i = 1; i < n; i++)
		d[i - 1] = a[i] - a[i - 1];
	varint_list(b, d, n - 1);
	free(d);
	return RE_ENC_DELTA;
}

enum re_enc
re_tag_int64(re_buf *b, const int64_t *a, size_t n)
{
	re_buf list = { 0 };
	uint8_t fb[8];
	int64_t first;
	enum re_enc t = re_int64_list(&list, a, n, &first);

	re_buf_byte(b, (uint8_t)t);
	re_int64_bytes(fb, first);
	re_buf_put(b, fb, 8);
	re_buf_put(b, list.p, list.n);
	re_buf_free(&list);
	return t;
}

static bool
val_eq(const re_val *x, const re_val *y)
{
	if (!x->p || !y->p)
		return !x->p && !y->p;
	return x->n == y->n && memcmp(x->p, y->p, x->n) == 0;
}

/* MSB-first bit writer, the last byte padded with zero bits. */
typedef struct bits {
	re_buf *b;
	uint8_t cur;
	unsigned used;
} bits;

static void
bits_put(bits *w, uint64_t v, unsigned nbits)
{
	while (nbits--) {
		w->cur = (uint8_t)(w->cur << 1 | ((v >> nbits) & 1));
		if (++w->used == 8) {
			re_buf_byte(w->b, w->cur);
			w->cur = 0;
			w->used = 0;
		}
	}
}

static void
bits_flush(bits *w)
{
	if (w->used)
		re_buf_byte(w->b, (uint8_t)(w->cur << (8 - w->used)));
	w->cur = 0;
	w->used = 0;
}

static void
dict_encode(re_zstd *z, re_buf *b, const re_val *uniq, size_t nu,
            const uint32_t *idx, size_t n)
{
	uint32_t *rle = malloc(2 * n * sizeof(*rle)), max = 0;
	size_t nr = 0;
	unsigned width = 1;
	bits w = { b, 0, 0 };

	if (!rle)
		oom();
	re_varuint(b, nu);
	re_bytes_block(z, b, uniq, nu);
	for (size_t i = 0; i < n; i++) {
		if (nr && rle[nr - 2] == idx[i]) {
			rle[nr - 1]++;
			continue;
		}
		rle[nr++] = idx[i];
		rle[nr++] = 1;
	}
	for (size_t i = 0; i < nr; i++)
		if (rle[i] > max)
			max = rle[i];
	if (max)
		for (width = 0; max >> width; width++)
			;
	bits_put(&w, nr, 32);
	bits_put(&w, width, 8);
	for (size_t i = 0; i < nr; i++)
		bits_put(&w, rle[i], width);
	bits_flush(&w);
	free(rle);
}

enum re_enc
re_tag_values(re_zstd *z, re_buf *b, const re_val *v, size_t n)
{
	re_val uniq[RE_DICT_MAX] = { { NULL, 0 } };
	uint32_t *idx = malloc((n ? n : 1) * sizeof(*idx));
	size_t nu = 0;

	if (!idx)
		oom();
	for (size_t i = 0; i < n; i++) {
		size_t k = 0;
		while (k < nu && !val_eq(&uniq[k], &v[i]))
			k++;
		if (k == nu) {
			if (nu == RE_DICT_MAX) {
				free(idx);
				re_buf_byte(b, RE_ENC_PLAIN);
				re_bytes_block(z, b, v, n);
				return RE_ENC_PLAIN;
			}
			uniq[nu++] = v[i];
		}
		idx[i] = (uint32_t)k;
	}
	re_buf_byte(b, RE_ENC_DICT);
	dict_encode(z, b, uniq, nu, idx, n);
	free(idx);
	return RE_ENC_DICT;
}

void
re_tag_meta(re_buf *b, uint64_t offset, uint64_t size)
{
	re_varuint(b, offset);
	re_varuint(b, size);
	re_varuint(b, 0); /* min: empty */
	re_varuint(b, 0); /* max: empty */
	re_varuint(b, 0); /* filter block offset */
	re_varuint(b, 0); /* filter block size */
}

void
re_block_meta_marshal(re_buf *b, const re_block_meta *m, bool bounds)
{
	re_bytes(b, m->trace_id, m->trace_id_len);
	re_varuint(b, m->span_bytes);
	re_varuint(b, m->count);
	if (bounds) {
		re_varuint(b, 1);
		re_varint(b, m->min_ts);
		re_varint(b, m->max_ts);
	}
	re_varuint(b, m->spans_offset);
	re_varuint(b, m->spans_size);
	re_varuint(b, RE_NTAGS);
	for (int t = 0; t < RE_NTAGS; t++) {
		re_bytes(b, re_tag_name[t], strlen(re_tag_name[t]));
		re_varuint(b, m->tag_offset[t]);
		re_varuint(b, m->tag_size[t]);
	}
}

uint64_t
re_counts_total(const re_counts *c, enum re_layout l)
{
	uint64_t n = c->span_ids + c->spans + c->primary[l] + c->meta[l];

	for (int t = 0; t < RE_NTAGS; t++)
		n += c->tag_data[t] + c->tag_meta[t];
	return n;
}

void
re_counts_add(re_counts *to, const re_counts *c)
{
	to->span_ids += c->span_ids;
	to->spans += c->spans;
	for (int t = 0; t < RE_NTAGS; t++) {
		to->tag_data[t] += c->tag_data[t];
		to->tag_meta[t] += c->tag_meta[t];
	}
	for (int l = 0; l < RE_NLAYOUTS; l++) {
		to->primary[l] += c->primary[l];
		to->meta[l] += c->meta[l];
	}
	to->blocks += c->blocks;
	to->rows += c->rows;
	to->split_traces += c->split_traces;
	to->dict_columns += c->dict_columns;
	to->plain_columns += c->plain_columns;
}

void
re_part_init(re_part *p, re_zstd *z)
{
	memset(p, 0, sizeof(*p));
	p->z = z;
}

static void
flush_primary(re_part *p, int l)
{
	re_buf frame = { 0 };
	uint8_t u[8];

	if (!p->prim[l].n)
		return;
	re_zstd_kind(p->z, l == RE_LEGACY ? RE_DUMP_PRIMARY
	                                  : RE_DUMP_PRIMARY_BOUNDS);
	re_zstd_frame(p->z, &frame, p->prim[l].p, p->prim[l].n);
	re_bytes(&p->meta[l], p->first[l].p, p->first[l].n);
	be64(u, p->c.primary[l]);
	re_buf_put(&p->meta[l], u, 8);
	be64(u, frame.n);
	re_buf_put(&p->meta[l], u, 8);
	p->c.primary[l] += frame.n;
	re_buf_free(&frame);
	p->prim[l].n = 0;
	p->open[l] = false;
}

static re_val
str_val(const char *s)
{
	re_val v = { (const uint8_t *)s, s ? strlen(s) : 0 };
	return v;
}

/* One tag column of the block's rows into the tag's two files. */
static void
put_tag(re_part *p, re_block_meta *bm, int t, const ms_row *rows, size_t n,
        re_val *vals, int64_t *ints, uint8_t (*ts)[8])
{
	re_buf *col = &p->scratch, meta = { 0 };
	enum re_enc e;

	col->n = 0;
	re_zstd_kind(p->z, RE_DUMP_TAG0 + t);
	switch (t) {
	case RE_TAG_IS_ERROR:
	case RE_TAG_LATENCY:
		for (size_t i = 0; i < n; i++)
			ints[i] = t == RE_TAG_IS_ERROR ? rows[i].is_error
			                               : rows[i].latency_ms;
		e = re_tag_int64(col, ints, n);
		break;
	default:
		for (size_t i = 0; i < n; i++) {
			const ms_row *r = &rows[i];
			switch (t) {
			case RE_TAG_ENDPOINT:
				vals[i] = str_val(r->endpoint);
				break;
			case RE_TAG_SERVICE:
				vals[i] = str_val(r->service);
				break;
			case RE_TAG_INSTANCE:
				vals[i] = str_val(r->instance);
				break;
			case RE_TAG_START:
				re_int64_bytes(ts[i], r->start_ns);
				vals[i].p = ts[i];
				vals[i].n = 8;
				break;
			default:
				break; /* tags: set by the caller */
			}
		}
		e = re_tag_values(p->z, col, vals, n);
		break;
	}
	p->c.dict_columns += e == RE_ENC_DICT;
	p->c.plain_columns += e == RE_ENC_PLAIN;
	re_tag_meta(&meta, p->c.tag_data[t], col->n);
	p->c.tag_data[t] += col->n;
	bm->tag_offset[t] = p->c.tag_meta[t];
	bm->tag_size[t] = meta.n;
	p->c.tag_meta[t] += meta.n;
	re_buf_free(&meta);
}

/* The rows' tag lists as the reference marshals a string array: each
 * value followed by '|', with '|' and '\\' escaped by '\\'; an empty
 * list is nil. */
static void
tag_lists(re_buf *cat, const ms_row *rows, size_t n, re_val *vals)
{
	size_t *off = malloc((n ? n : 1) * sizeof(*off));

	if (!off)
		oom();
	cat->n = 0;
	for (size_t i = 0; i < n; i++) {
		off[i] = cat->n;
		for (uint32_t k = 0; k < rows[i].ntags; k++) {
			for (const char *s = rows[i].tags[k]; *s; s++) {
				if (*s == '|' || *s == '\\')
					re_buf_byte(cat, '\\');
				re_buf_byte(cat, (uint8_t)*s);
			}
			re_buf_byte(cat, '|');
		}
	}
	for (size_t i = 0; i < n; i++) {
		vals[i].p = rows[i].ntags ? cat->p + off[i] : NULL;
		vals[i].n = (i + 1 < n ? off[i + 1] : cat->n) - off[i];
	}
	free(off);
}

static void
add_block(re_part *p, const ms_row *rows, size_t n)
{
	re_block_meta bm = { .trace_id = rows[0].trace_id,
		             .trace_id_len = rows[0].trace_id_len,
		             .count = n,
		             .min_ts = rows[0].start_ns,
		             .max_ts = rows[0].start_ns };
	re_val *vals = calloc(n, sizeof(*vals));
	int64_t *ints = malloc(n * sizeof(*ints));
	uint8_t(*ts)[8] = malloc(n * sizeof(*ts));
	re_buf spans = { 0 };

	if (!vals || !ints || !ts)
		oom();
	/* spans.bin: the span IDs, then the span payloads. */
	for (size_t i = 0; i < n; i++) {
		vals[i] = str_val(rows[i].segment_id);
		bm.span_bytes += rows[i].body_len;
		if (rows[i].start_ns < bm.min_ts)
			bm.min_ts = rows[i].start_ns;
		if (rows[i].start_ns > bm.max_ts)
			bm.max_ts = rows[i].start_ns;
	}
	re_zstd_kind(p->z, RE_DUMP_SPAN_IDS);
	re_bytes_block(p->z, &spans, vals, n);
	p->c.span_ids += spans.n;
	size_t ids = spans.n;
	for (size_t i = 0; i < n; i++) {
		vals[i].p = rows[i].body ? rows[i].body : (const uint8_t *)"";
		vals[i].n = rows[i].body_len;
	}
	re_zstd_kind(p->z, RE_DUMP_SPANS);
	re_bytes_block(p->z, &spans, vals, n);
	p->c.spans += spans.n - ids;
	bm.spans_offset = p->c.span_ids + p->c.spans - spans.n;
	bm.spans_size = spans.n;
	re_buf_free(&spans);

	for (int t = 0; t < RE_NTAGS; t++) {
		if (t == RE_TAG_TAGS)
			tag_lists(&p->vals, rows, n, vals);
		put_tag(p, &bm, t, rows, n, vals, ints, ts);
	}
	for (int l = 0; l < RE_NLAYOUTS; l++) {
		if (!p->open[l]) {
			p->first[l].n = 0;
			re_buf_put(&p->first[l], bm.trace_id, bm.trace_id_len);
			p->open[l] = true;
		}
		re_block_meta_marshal(&p->prim[l], &bm, l == RE_BOUNDS);
		if (p->prim[l].n > RE_PRIMARY_PIECE)
			flush_primary(p, l);
	}
	p->c.blocks++;
	p->c.rows += n;
	free(vals);
	free(ints);
	free(ts);
}

void
re_part_add_trace(re_part *p, const ms_row *rows, size_t n)
{
	size_t lo = 0;
	uint64_t acc = 0;

	for (size_t i = 0; i < n; i++) {
		if (acc >= RE_SPLIT_BYTES) {
			add_block(p, rows + lo, i - lo);
			lo = i;
			acc = 0;
		}
		acc += rows[i].body_len;
	}
	p->c.split_traces += lo > 0;
	if (n > lo)
		add_block(p, rows + lo, n - lo);
}

void
re_part_finish(re_part *p)
{
	for (int l = 0; l < RE_NLAYOUTS; l++) {
		re_buf frame = { 0 };

		flush_primary(p, l);
		re_zstd_kind(p->z, l == RE_LEGACY ? RE_DUMP_META
		                                  : RE_DUMP_META_BOUNDS);
		re_zstd_frame(p->z, &frame, p->meta[l].p, p->meta[l].n);
		p->c.meta[l] = frame.n;
		re_buf_free(&frame);
	}
}

void
re_part_release(re_part *p)
{
	for (int l = 0; l < RE_NLAYOUTS; l++) {
		re_buf_free(&p->prim[l]);
		re_buf_free(&p->meta[l]);
		re_buf_free(&p->first[l]);
	}
	re_buf_free(&p->scratch);
	re_buf_free(&p->vals);
}
