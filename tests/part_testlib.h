/*
 * part_testlib.h - shared by the part, index and fuzz tests: deterministic
 * random rows with owned storage, row comparison, temporary directories and
 * reading a whole part back.
 */
#ifndef MS_PART_TESTLIB_H
#define MS_PART_TESTLIB_H

#include "testdir.h"
#include "ms_part.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct tl_rng {
	uint64_t s;
} tl_rng;

static inline uint64_t
tl_next(tl_rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* The value a generator seeded with x gives first: a stateless mix of x. */
static inline uint64_t
tl_mix(uint64_t x)
{
	tl_rng r = { x };
	return tl_next(&r);
}

static inline uint64_t
tl_below(tl_rng *r, uint64_t n)
{
	return n ? tl_next(r) % n : 0;
}

/* A set of rows that owns every byte they point to. */
typedef struct tl_rows {
	ms_row *rows;
	size_t n, cap;
	void **blobs;
	size_t nblobs, blobs_cap;
} tl_rows;

static inline void *
tl_keep(tl_rows *t, void *p)
{
	if (t->nblobs == t->blobs_cap) {
		t->blobs_cap = t->blobs_cap ? t->blobs_cap * 2 : 64;
		t->blobs = realloc(t->blobs, t->blobs_cap * sizeof(void *));
	}
	t->blobs[t->nblobs++] = p;
	return p;
}

static inline char *
tl_str(tl_rows *t, tl_rng *r, size_t len, const char *prefix)
{
	char *s = tl_keep(t, malloc(len + strlen(prefix) + 1));
	strcpy(s, prefix);
	size_t k = strlen(prefix);
	static const char al[] = "abcdefghijklmnopqrstuvwxyz0123456789-_/.";
	for (size_t i = 0; i < len; i++)
		s[k + i] = al[tl_below(r, sizeof(al) - 1)];
	s[k + len] = 0;
	return s;
}

static inline ms_row *
tl_add(tl_rows *t)
{
	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 64;
		t->rows = realloc(t->rows, t->cap * sizeof(ms_row));
	}
	ms_row *row = &t->rows[t->n++];
	memset(row, 0, sizeof(*row));
	return row;
}

typedef struct tl_shape {
	size_t traces;
	size_t rows_per_trace; /* max, random 1..max */
	size_t body_max;       /* random 0..body_max bytes */
	size_t tags_max;       /* random 0..tags_max tags */
	size_t tag_len;        /* value length */
	uint32_t tid_len;      /* 0 = random 1..64 */
} tl_shape;

/* Append rows of `traces` random traces (not sorted). */
static inline void
tl_gen(tl_rows *t, tl_rng *r, const tl_shape *s)
{
	static const char *svc[] = { "frontend", "checkout", "cart", "payment",
		                     "shipping" };
	for (size_t k = 0; k < s->traces; k++) {
		uint32_t tl = s->tid_len ? s->tid_len
		                         : (uint32_t)(1 + tl_below(r, 64));
		uint8_t *tid = tl_keep(t, malloc(tl));
		for (uint32_t i = 0; i < tl; i++)
			tid[i] = (uint8_t)tl_next(r);
		size_t nr = 1 + tl_below(r, s->rows_per_trace);
		int64_t base = 1700000000000000000ll +
		               (int64_t)tl_below(r, 86400000000000ull);
		for (size_t i = 0; i < nr; i++) {
			ms_row *row = tl_add(t);
			row->trace_id = tid;
			row->trace_id_len = tl;
			row->span_id = tl_next(r) >> tl_below(r, 64);
			row->segment_id = tl_str(t, r, 16, "seg-");
			row->service = svc[tl_below(r, 5)];
			row->instance = tl_str(t, r, tl_below(r, 8), "i-");
			row->endpoint = tl_str(t, r, tl_below(r, 30), "/api/");
			row->start_ns = base + (int64_t)tl_below(r, 5000000000);
			row->latency_ms = (uint32_t)tl_below(r, 3000);
			row->is_error = tl_below(r, 10) == 0;
			size_t nt = tl_below(r, s->tags_max + 1);
			const char **tags =
			        tl_keep(t, calloc(nt + 1, sizeof(char *)));
			for (size_t j = 0; j < nt; j++)
				tags[j] = tl_str(t, r, s->tag_len, "k=");
			row->tags = tags;
			row->ntags = (uint32_t)nt;
			size_t bl = tl_below(r, s->body_max + 1);
			if (bl) {
				uint8_t *b = tl_keep(t, malloc(bl));
				for (size_t j = 0; j < bl; j++)
					b[j] = (uint8_t)("{\"k\":1,}"[j % 8] +
					                 (tl_below(r, 4) == 0));
				row->body = b;
			}
			row->body_len = (uint32_t)bl;
		}
	}
}

static inline void
tl_free(tl_rows *t)
{
	for (size_t i = 0; i < t->nblobs; i++)
		free(t->blobs[i]);
	free(t->blobs);
	free(t->rows);
	memset(t, 0, sizeof(*t));
}

static inline bool
tl_streq(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "") == 0;
}

/* Compare the columns in `cols` of two rows; trace IDs always. */
static inline bool
tl_row_eq(const ms_row *a, const ms_row *b, unsigned cols)
{
	if (ms_trace_id_cmp(a->trace_id, a->trace_id_len, b->trace_id,
	                    b->trace_id_len))
		return false;
	if ((cols & MS_COL_SPAN_ID) && a->span_id != b->span_id)
		return false;
	if ((cols & MS_COL_SEGMENT_ID) &&
	    !tl_streq(a->segment_id, b->segment_id))
		return false;
	if ((cols & MS_COL_SERVICE) && !tl_streq(a->service, b->service))
		return false;
	if ((cols & MS_COL_INSTANCE) && !tl_streq(a->instance, b->instance))
		return false;
	if ((cols & MS_COL_ENDPOINT) && !tl_streq(a->endpoint, b->endpoint))
		return false;
	if ((cols & MS_COL_START) && a->start_ns != b->start_ns)
		return false;
	if ((cols & MS_COL_LATENCY) && a->latency_ms != b->latency_ms)
		return false;
	if ((cols & MS_COL_ERROR) && a->is_error != b->is_error)
		return false;
	if (cols & MS_COL_TAGS) {
		if (a->ntags != b->ntags)
			return false;
		for (uint32_t i = 0; i < a->ntags; i++)
			if (!tl_streq(a->tags[i], b->tags[i]))
				return false;
	}
	if (cols & MS_COL_BODY) {
		if (a->body_len != b->body_len)
			return false;
		if (a->body_len && memcmp(a->body, b->body, a->body_len))
			return false;
	}
	return true;
}

/* Sort a copy of rows the way a part stores them: by trace ID, stable. */
static inline int
tl_cmp_ptr(const void *x, const void *y)
{
	const ms_row *const *a = x, *const *b = y;
	int c = ms_trace_id_cmp((*a)->trace_id, (*a)->trace_id_len,
	                        (*b)->trace_id, (*b)->trace_id_len);
	if (c)
		return c;
	return *a < *b ? -1 : *a > *b;
}

static inline const ms_row **
tl_sorted(const tl_rows *t)
{
	const ms_row **v = malloc((t->n + 1) * sizeof(*v));
	for (size_t i = 0; i < t->n; i++)
		v[i] = &t->rows[i];
	qsort(v, t->n, sizeof(*v), tl_cmp_ptr);
	return v;
}

/* A fresh temporary directory; returns its path (static storage in out). */
static inline void
tl_tmpdir(char *out, size_t n, const char *tag)
{
	char t[64];
	snprintf(t, sizeof(t), "mspart-%s", tag);
	if (!ms_test_mkdtemp(out, n, t))
		abort();
}

static inline void
tl_rmrf(const char *dir)
{
	if (ms_test_rmtree(dir) != 0)
		abort();
}

/* Copy the block iterator it stands on to writer w as it is stored; 0 or
 * the first error (reason in eb). */
static inline int
tl_copy_block(ms_part_iter *it, ms_part_writer *w, ms_errbuf *eb)
{
	ms_raw_block raw;
	int rc = ms_part_iter_raw(it, &raw, eb);
	return rc ? rc : ms_part_writer_add_raw(w, &raw, eb);
}

/* Copy every block iterator it has not yet reached to writer w as it is
 * stored; 0 or the first error (reason in eb). */
static inline int
tl_copy_blocks(ms_part_iter *it, ms_part_writer *w, ms_errbuf *eb)
{
	const ms_block_info *bi;
	int rc;
	while ((rc = ms_part_iter_next(it, &bi, eb)) == 1)
		if ((rc = tl_copy_block(it, w, eb)) != 0)
			return rc;
	return rc;
}

#endif
