/*
 * merge_gen.h - deterministic span rows and shard set-up shared by the merge
 * tests and the merge benchmark (test-only, header-only).
 *
 * A gen_set owns its rows: each span keeps its strings, tags and body in its
 * own storage, and gen_rows() builds an ms_row array pointing into them
 * (valid until the next gen_add). Trace IDs are fixed-width (24 bytes) and
 * sort in trace-number order, so a test can reason about block order.
 */
#ifndef MS_TEST_MERGE_GEN_H
#define MS_TEST_MERGE_GEN_H

#include "ms_ledger.h"
#include "ms_part.h"
#include "ms_row.h"
#include "ms_shard.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GEN_TID_LEN 24
#define GEN_T0 1785283200000000000LL /* a fixed day, unix ns */

typedef struct gen_span {
	uint8_t tid[GEN_TID_LEN];
	uint64_t trace;
	uint64_t span_id;
	char seg[32];
	char service[24];
	char instance[32];
	char endpoint[48];
	int64_t start_ns;
	uint32_t latency_ms;
	bool is_error;
	char tagbuf[3][40];
	const char *tags[3];
	uint32_t ntags;
	uint8_t *body;
	uint32_t body_len;
} gen_span;

typedef struct gen_set {
	gen_span *v;
	size_t n, cap;
	ms_row *rows; /* built by gen_rows */
} gen_set;

static inline uint64_t
gen_mix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static inline void
gen_tid(uint64_t trace, uint8_t out[GEN_TID_LEN])
{
	char buf[GEN_TID_LEN + 1];
	snprintf(buf, sizeof(buf), "tr%022llx", (unsigned long long)trace);
	memcpy(out, buf, GEN_TID_LEN);
}

/* Add span `k` of trace `trace`: ~body_len bytes of body plus ~150 bytes
 * of strings and tags. Everything is a function of (trace, k). */
static inline void
gen_add(gen_set *g, uint64_t trace, uint32_t k, uint32_t body_len)
{
	if (g->n == g->cap) {
		g->cap = g->cap ? g->cap * 2 : 256;
		g->v = realloc(g->v, g->cap * sizeof(gen_span));
		if (!g->v)
			abort();
	}
	gen_span *s = &g->v[g->n++];
	memset(s, 0, sizeof(*s));
	uint64_t h = gen_mix(trace * 131 + k);
	gen_tid(trace, s->tid);
	s->trace = trace;
	s->span_id = trace * 1000 + k;
	snprintf(s->seg, sizeof(s->seg), "seg-%llx-%u",
	         (unsigned long long)trace, k / 2);
	snprintf(s->service, sizeof(s->service), "svc-%u", (unsigned)(h % 12));
	snprintf(s->instance, sizeof(s->instance), "inst-%u@10.0.%u.%u",
	         (unsigned)(h % 3), (unsigned)(h >> 8) % 8,
	         (unsigned)(h >> 16) % 200);
	snprintf(s->endpoint, sizeof(s->endpoint), "/api/v1/orders/%u",
	         (unsigned)(h >> 24) % 40);
	s->start_ns = GEN_T0 + (int64_t)(trace % 86400) * 1000000000LL +
	              (int64_t)k * 1500000 + (int64_t)(h % 1000);
	s->latency_ms = (uint32_t)((h >> 32) % 900);
	s->is_error = (h >> 40) % 17 == 0;
	s->ntags = 1 + (uint32_t)((h >> 44) % 3);
	for (uint32_t i = 0; i < s->ntags; i++) {
		static const char *const keys[] = { "http.method",
			                            "status_code", "db.type" };
		static const char *const vals[] = { "GET",  "200", "mysql",
			                            "POST", "503", "redis" };
		snprintf(s->tagbuf[i], sizeof(s->tagbuf[i]), "%s=%s", keys[i],
		         vals[(h >> (48 + i)) % 6]);
	}
	s->body_len = body_len;
	s->body = malloc(body_len ? body_len : 1);
	if (!s->body)
		abort();
	/* Semi-compressible: words from a small vocabulary and some noise. */
	static const char *const words[] = {
		"span", "db.statement", "SELECT",     "orders", "user_id",
		"peer", "component",    "HttpClient", "layer",  "Database"
	};
	uint64_t x = h;
	for (uint32_t i = 0; i < body_len;) {
		x = gen_mix(x);
		const char *w = words[x % 10];
		size_t wl = strlen(w);
		if (x % 7 == 0) {
			s->body[i++] = (uint8_t)(x >> 8);
			continue;
		}
		for (size_t j = 0; j < wl && i < body_len; j++)
			s->body[i++] = (uint8_t)w[j];
		if (i < body_len)
			s->body[i++] = ' ';
	}
}

/* Build (or rebuild) g->rows over g->v[0..n). */
static inline ms_row *
gen_rows(gen_set *g)
{
	free(g->rows);
	g->rows = calloc(g->n ? g->n : 1, sizeof(ms_row));
	if (!g->rows)
		abort();
	for (size_t i = 0; i < g->n; i++) {
		gen_span *s = &g->v[i];
		ms_row *r = &g->rows[i];
		for (uint32_t t = 0; t < s->ntags; t++)
			s->tags[t] = s->tagbuf[t];
		r->trace_id = s->tid;
		r->trace_id_len = GEN_TID_LEN;
		r->span_id = s->span_id;
		r->segment_id = s->seg;
		r->service = s->service;
		r->instance = s->instance;
		r->endpoint = s->endpoint;
		r->start_ns = s->start_ns;
		r->latency_ms = s->latency_ms;
		r->is_error = s->is_error;
		r->tags = s->tags;
		r->ntags = s->ntags;
		r->body = s->body;
		r->body_len = s->body_len;
	}
	return g->rows;
}

static inline void
gen_reset(gen_set *g)
{
	for (size_t i = 0; i < g->n; i++)
		free(g->v[i].body);
	g->n = 0;
}

static inline void
gen_free(gen_set *g)
{
	gen_reset(g);
	free(g->v);
	free(g->rows);
	memset(g, 0, sizeof(*g));
}

#endif
