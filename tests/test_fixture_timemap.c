/*
 * test_fixture_timemap.c - placing traces on the day: the latest constant
 * offset, and on a whole generated smoke day: deltas preserved, no
 * fragment from the future, at least one publication-aligned fragment per
 * trace (within one tick of the millisecond row clock, every timestamp a
 * whole tick), every fragment inside the two-hour grace when published; and the
 * shape of what is placed: trace IDs in the agent's global-ID form, a
 * one-span error trace a refused request (4xx, no exception log) while a
 * longer error trace carries the exception where it was thrown; a row's
 * tags are only the span's searchable ones while its body keeps them all;
 * a row's service, instance and endpoint are the OAP's entity IDs; and the
 * template copies: how many, which templates (fixed by the copy hash
 * alone), a copy's rows and fragments its template's, its ID sharing only
 * the family prefix, no ID twice.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fx_int.h"

static void
test_offset_vectors(void **state)
{
	const int64_t t = FX_CLOCK_NS; /* one tick of the row clock */
	int64_t pub1[] = { 1000 * t };
	int64_t rel1[] = { 250 * t };
	/* Fragment 0 published at 1000 with max 300; fragment 1 (later
	 * spans, max 400) published at 5000: fragment 0 binds. */
	int64_t pub2[] = { 1000 * t, 5000 * t };
	int64_t rel2[] = { 300 * t, 400 * t };
	/* A later fragment published earlier than its own max allows would
	 * bind instead (not produced by the generator, but the rule holds). */
	int64_t pub3[] = { 1000 * t, 1100 * t, 900 * t };
	int64_t rel3[] = { 100 * t, 900 * t, 50 * t };
	/* A publication between ticks: the offset is the tick below. */
	int64_t pub4[] = { 1000 * t + 123 };
	int64_t pub5[] = { 0 };
	int64_t rel5[] = { 1 };

	(void)state;
	assert_int_equal(ms__fx_timemap_offset(pub1, rel1, 1), 750 * t);
	assert_int_equal(ms__fx_timemap_offset(pub2, rel2, 2), 700 * t);
	assert_int_equal(ms__fx_timemap_offset(pub3, rel3, 3), 200 * t);
	assert_int_equal(ms__fx_timemap_offset(pub4, rel1, 1), 750 * t);
	/* Below zero the floor is still downwards. */
	assert_int_equal(ms__fx_timemap_offset(pub5, rel5, 1), -t);
	/* Negative relative maxima (not produced) and large values. */
	{
		int64_t p[] = { FX_DAY_START_NS, FX_DAY_START_NS + 60 };
		int64_t r[] = { 0, 61 };

		assert_int_equal(ms__fx_timemap_offset(p, r, 2),
		                 FX_DAY_START_NS - t);
	}
}

/* The smoke day of seed, an arena and room for any trace's rows. */
static void
smoke_open(fx_model *m, uint64_t seed, fx_arena **a, ms_row **rows)
{
	ms_errbuf eb = { { 0 } };
	const fx_preset *p = ms__fx_preset_find("smoke", NULL);

	assert_non_null(p);
	assert_int_equal(ms__fx_model_generate(m, p, seed, 0, NULL, &eb), 0);
	assert_int_equal(ms__fx_arena_new(a), 0);
	*rows = calloc(256, sizeof(**rows));
	assert_non_null(*rows);
}

/* Trace t's rows, every fragment, every column; their count. */
static size_t
trace_rows(const fx_model *m, size_t t, fx_arena *a, ms_row *rows)
{
	const fx_trace *tr = &m->traces[t];
	uint32_t fr[FX_FRAGS_MAX];
	ms_errbuf eb = { { 0 } };
	size_t n = 0;

	for (uint32_t j = 0; j < tr->nfrag; j++)
		fr[j] = tr->frag0 + j;
	ms__fx_arena_reset(a);
	assert_int_equal(ms__fx_materialize(m, fr, tr->nfrag, MS_COL_ALL, a,
	                                    rows, &n, &eb),
	                 0);
	return n;
}

static void
test_smoke_day_mapping(void **state)
{
	fx_model m;
	ms_errbuf eb = { { 0 } };
	fx_arena *a = NULL;
	ms_row *rows = NULL;
	size_t split_seen = 0;

	(void)state;
	smoke_open(&m, 7, &a, &rows);
	assert_int_equal(ms__fx_model_schedule(&m, &eb), 0);
	ms__fx_model_timemap(&m);

	for (size_t t = 0; t < m.ntraces; t++) {
		const fx_trace *tr = &m.traces[t];
		bool aligned = false;

		for (uint32_t j = 0; j < tr->nfrag; j++) {
			const fx_frag *f = &m.frags[tr->frag0 + j];
			int64_t pub = m.batches[f->batch].pub_ns;
			int64_t max = tr->off_ns + f->max_rel_ns;

			assert_int_equal(f->trace, t);
			assert_true(max <= pub);
			assert_true(pub - max < MS_GRACE_NS);
			aligned |= pub - max < FX_CLOCK_NS;
			assert_int_equal(max % FX_CLOCK_NS, 0);
			if (j > 0) {
				/* Later fragments: later writes. */
				assert_true(f->batch >
				            m.frags[tr->frag0 + j - 1].batch);
				split_seen++;
			}
		}
		assert_true(aligned);
	}
	assert_true(split_seen > 0);

	/* Materialized rows keep the generated deltas exactly. */
	for (size_t t = 0; t < m.ntraces; t += 97) {
		const fx_trace *tr = &m.traces[t];
		size_t n = trace_rows(&m, t, a, rows);

		assert_int_equal(n, tr->nrows);
		for (size_t i = 0; i < n; i++) {
			assert_int_equal(rows[i].start_ns - tr->off_ns,
			                 m.rows[tr->row0 + i].rel_ns);
			assert_int_equal(rows[i].start_ns - rows[0].start_ns,
			                 m.rows[tr->row0 + i].rel_ns -
			                         m.rows[tr->row0].rel_ns);
			assert_memory_equal(rows[i].trace_id, tr->id,
			                    FX_TID_LEN);
		}
	}
	free(rows);
	ms__fx_arena_free(a);
	ms__fx_model_free(&m);
}

/* Whether a SpanObject body has a top-level field 13 (logs). */
static bool
body_has_log(const uint8_t *b, uint32_t n)
{
	uint32_t i = 0;

	while (i < n) {
		uint64_t key = 0, len = 0;
		int sh = 0;

		while (i < n && (b[i] & 0x80))
			key |= (uint64_t)(b[i++] & 0x7f) << sh, sh += 7;
		assert_true(i < n);
		key |= (uint64_t)b[i++] << sh;
		if ((key & 7) == 0) {
			while (i < n && (b[i] & 0x80))
				i++;
			i++;
			continue;
		}
		assert_int_equal(key & 7, 2);
		if (key >> 3 == 13)
			return true;
		sh = 0;
		while (i < n && (b[i] & 0x80))
			len |= (uint64_t)(b[i++] & 0x7f) << sh, sh += 7;
		assert_true(i < n);
		len |= (uint64_t)b[i++] << sh;
		i += (uint32_t)len;
	}
	assert_int_equal(i, n);
	return false;
}

static const char *
status_tag(const ms_row *r)
{
	for (uint32_t k = 0; k < r->ntags; k++)
		if (strncmp(r->tags[k], "http.status_code=", 17) == 0)
			return r->tags[k] + 17;
	return NULL;
}

static void
test_ids_and_errors(void **state)
{
	fx_model m;
	fx_arena *a = NULL;
	ms_row *rows = NULL;
	size_t refused = 0, long_err = 0, long_err_logged = 0;
	int64_t day0_ms = FX_DAY_START_NS / FX_NS_PER_MS;

	(void)state;
	smoke_open(&m, 11, &a, &rows);
	for (size_t t = 0; t < m.ntraces; t++) {
		const fx_trace *tr = &m.traces[t];
		const char *id = tr->id, *stamp = id + FX_TID_FAMILY_HEX + 1 +
		                                  FX_TID_THREAD_DIGITS + 1;
		size_t n, logs = 0;
		long long v;

		/* <32 hex>.<3 digits>.<17 digits> */
		assert_int_equal(strlen(id), FX_TID_LEN);
		for (int i = 0; i < FX_TID_FAMILY_HEX; i++)
			assert_non_null(strchr("0123456789abcdef", id[i]));
		assert_int_equal(id[FX_TID_FAMILY_HEX], '.');
		assert_int_equal(stamp[-1], '.');
		for (int i = FX_TID_FAMILY_HEX + 1; i < FX_TID_LEN; i++)
			if (id + i != stamp - 1)
				assert_true(id[i] >= '0' && id[i] <= '9');
		v = atoll(stamp);
		assert_int_equal(v % 10000, (long long)(t % 10000));
		assert_true(v / 10000 >= day0_ms &&
		            v / 10000 < day0_ms + m.day_ns / FX_NS_PER_MS);
		if (!tr->error || tr->slow)
			continue;
		n = trace_rows(&m, t, a, rows);
		for (size_t i = 0; i < n; i++)
			logs += body_has_log(rows[i].body, rows[i].body_len);
		if (n == 1) {
			const char *st = status_tag(&rows[0]);

			/* Refused: an error, a 4xx status, nothing thrown. */
			assert_true(rows[0].is_error);
			assert_non_null(st);
			assert_int_equal(st[0], '4');
			assert_int_equal(logs, 0);
			refused++;
		} else {
			/* The exception is logged once, where it was thrown. */
			assert_int_equal(logs, 1);
			long_err++;
			long_err_logged += logs;
		}
	}
	assert_true(refused > 0);
	assert_true(long_err > 0 && long_err_logged == long_err);
	free(rows);
	ms__fx_arena_free(a);
	ms__fx_model_free(&m);
}

/* Decode standard padded base64 s[0..n) into out (NUL-terminated); the
 * decoded length, or -1 if s is not canonical padded base64. */
static int
unbase64(const char *s, size_t n, char *out, size_t cap)
{
	static const char al[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	                         "abcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t o = 0;

	if (n == 0 || n % 4 || n / 4 * 3 >= cap)
		return -1;
	for (size_t i = 0; i < n; i += 4) {
		uint32_t v = 0;
		int pad = 0;

		for (int k = 0; k < 4; k++) {
			const char *c = s[i + k] ? strchr(al, s[i + k]) : NULL;

			if (s[i + k] == '=' && i + 4 == n && k >= 2)
				pad++;
			else if (!c || pad)
				return -1;
			v = v << 6 | (uint32_t)(c ? c - al : 0);
		}
		out[o++] = (char)(v >> 16);
		if (pad < 2)
			out[o++] = (char)(v >> 8);
		if (pad < 1)
			out[o++] = (char)v;
	}
	out[o] = '\0';
	return (int)o;
}

/* "<service ID>_<base64 of a name>": the decoded name. */
static const char *
entity_name(const char *id, const char *service, char *buf, size_t cap)
{
	size_t sl = strlen(service);

	assert_int_equal(strncmp(id, service, sl), 0);
	assert_int_equal(id[sl], '_');
	assert_true(unbase64(id + sl + 1, strlen(id + sl + 1), buf, cap) > 0);
	return buf;
}

/* Rows carry the OAP's entity IDs (shape.h): the service ID is the
 * base64 of the service name and ".1"; instance and endpoint IDs are the
 * service ID, '_' and the base64 of their names. */
static void
test_entity_ids(void **state)
{
	fx_model m;
	fx_arena *a = NULL;
	ms_row *rows = NULL;
	char name[160];
	size_t checked = 0;

	(void)state;
	assert_int_equal(unbase64("Z2F0ZXdheS1zdmM=", 16, name, 160), 11);
	assert_string_equal(name, "gateway-svc");
	assert_int_equal(unbase64("Z2F0ZXdheQ==", 12, name, 160), 7);
	assert_int_equal(unbase64("Z2F0ZXdhe===", 12, name, 160), -1);
	smoke_open(&m, 5, &a, &rows);
	for (size_t t = 0; t < m.ntraces; t += 7) {
		size_t n = trace_rows(&m, t, a, rows);

		for (size_t i = 0; i < n; i++) {
			const ms_row *r = &rows[i];
			size_t sl = strlen(r->service);

			assert_true(sl > 2);
			assert_string_equal(r->service + sl - 2, ".1");
			assert_true(unbase64(r->service, sl - 2, name, 160) >
			            4);
			assert_string_equal(name + strlen(name) - 4, "-svc");
			entity_name(r->instance, r->service, name, 160);
			assert_non_null(strstr(name, "@10."));
			entity_name(r->endpoint, r->service, name, 160);
			assert_non_null(strstr(name, ":/api/v"));
			checked++;
		}
	}
	assert_true(checked > 100);
	free(rows);
	ms__fx_arena_free(a);
	ms__fx_model_free(&m);
}

/* The searchable keys of the reference OAP's shipped configuration. */
static bool
key_searchable(const char *t, size_t kl)
{
	static const char *const keys[] = {
		"http.method", "http.status_code", "rpc.status_code",
		"db.type",     "db.instance",      "mq.queue",
		"mq.topic",    "mq.broker",
	};

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (strlen(keys[i]) == kl && memcmp(keys[i], t, kl) == 0)
			return true;
	return false;
}

static uint64_t
pb_varint(const uint8_t *b, uint32_t n, uint32_t *i)
{
	uint64_t v = 0;
	int sh = 0;

	while (*i < n && (b[*i] & 0x80))
		v |= (uint64_t)(b[(*i)++] & 0x7f) << sh, sh += 7;
	assert_true(*i < n);
	v |= (uint64_t)b[(*i)++] << sh;
	return v;
}

/* The body's tags (top-level field 12, KeyStringValuePair) as
 * "key=value" strings in out[cap][128]; their count. */
static size_t
body_tags(const uint8_t *b, uint32_t n, char out[][128], size_t cap)
{
	uint32_t i = 0;
	size_t nt = 0;

	while (i < n) {
		uint64_t key = pb_varint(b, n, &i), len;

		if ((key & 7) == 0) {
			(void)pb_varint(b, n, &i);
			continue;
		}
		assert_int_equal(key & 7, 2);
		len = pb_varint(b, n, &i);
		assert_true(len <= n - i);
		if (key >> 3 == 12) {
			const uint8_t *kv = b + i;
			uint32_t j = 0, kn = (uint32_t)len;
			size_t o = 0;

			assert_true(nt < cap);
			for (int f = 1; f <= 2; f++) {
				uint64_t k = pb_varint(kv, kn, &j);
				uint64_t l = pb_varint(kv, kn, &j);

				assert_int_equal(k, ((uint64_t)f << 3) | 2);
				assert_true(l <= kn - j && o + l + 2 < 128);
				memcpy(out[nt] + o, kv + j, l);
				o += l;
				j += (uint32_t)l;
				if (f == 1)
					out[nt][o++] = '=';
			}
			assert_int_equal(j, kn);
			out[nt++][o] = '\0';
		}
		i += (uint32_t)len;
	}
	assert_int_equal(i, n);
	return nt;
}

static void
test_row_tags_searchable(void **state)
{
	fx_model m;
	fx_arena *a = NULL, *a2 = NULL;
	ms_row *rows = NULL, *bare = NULL;
	size_t rows_seen = 0, rows_tagged = 0, hidden = 0;
	bool url = false, statement = false, cache_key = false;

	(void)state;
	smoke_open(&m, 13, &a, &rows);
	assert_int_equal(ms__fx_arena_new(&a2), 0);
	bare = calloc(256, sizeof(*bare));
	assert_non_null(bare);
	for (size_t t = 0; t < m.ntraces; t++) {
		const fx_trace *tr = &m.traces[t];
		size_t n = trace_rows(&m, t, a, rows), n2 = 0;
		uint32_t fr[FX_FRAGS_MAX];
		ms_errbuf eb = { { 0 } };

		/* Without bodies a row's tags are the same. */
		for (uint32_t j = 0; j < tr->nfrag; j++)
			fr[j] = tr->frag0 + j;
		ms__fx_arena_reset(a2);
		assert_int_equal(ms__fx_materialize(&m, fr, tr->nfrag,
		                                    MS_COL_ALL & ~MS_COL_BODY,
		                                    a2, bare, &n2, &eb),
		                 0);
		assert_int_equal(n2, n);
		for (size_t i = 0; i < n; i++) {
			const ms_row *r = &rows[i];
			char bt[16][128];
			size_t nb = body_tags(r->body, r->body_len, bt, 16), k = 0;

			assert_null(bare[i].body);
			assert_int_equal(bare[i].ntags, r->ntags);
			for (uint32_t j = 0; j < r->ntags; j++)
				assert_string_equal(bare[i].tags[j], r->tags[j]);
			/* The row's tags: the body's searchable tags, in
			 * order, and nothing else. */
			for (size_t b = 0; b < nb; b++) {
				size_t kl = (size_t)(strchr(bt[b], '=') - bt[b]);

				if (!key_searchable(bt[b], kl)) {
					hidden++;
					url |= strncmp(bt[b], "url=", 4) == 0;
					statement |= strncmp(bt[b], "db.statement=",
					                     13) == 0;
					cache_key |= strncmp(bt[b], "cache.key=",
					                     10) == 0;
					continue;
				}
				assert_true(k < r->ntags);
				assert_string_equal(r->tags[k], bt[b]);
				k++;
			}
			assert_int_equal(k, r->ntags);
			rows_seen++;
			rows_tagged += r->ntags > 0;
		}
	}
	assert_true(rows_tagged > 0 && rows_tagged < rows_seen);
	assert_true(hidden > rows_seen / 2);
	assert_true(url && statement && cache_key);
	free(bare);
	free(rows);
	ms__fx_arena_free(a2);
	ms__fx_arena_free(a);
	ms__fx_model_free(&m);
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

static int
cmp_id(const void *a, const void *b)
{
	return memcmp(*(const char *const *)a, *(const char *const *)b,
	              FX_TID_LEN);
}

/* The copies of model m: ncopies of them after the base traces; their
 * templates base traces, each once, exactly those of the ncopies lowest
 * copy hashes; a copy's rows, class and fragment cut its template's, its
 * fragments arriving at its template's times right after them; its ID the
 * template's family prefix and another suffix; no ID twice in the day. */
static void
check_copies(const fx_model *m, size_t ncopies)
{
	size_t nb = m->ntraces - ncopies;
	uint64_t *h = malloc(nb * sizeof(*h)), cut;
	const char **ids = malloc(m->ntraces * sizeof(*ids));
	uint32_t *pos = malloc(m->nfrags * sizeof(*pos));
	const size_t pre = FX_TID_FAMILY_HEX + 1;

	assert_true(h && ids && pos);
	assert_int_equal(m->nbase, nb);
	assert_int_equal(ms__fx_copies_for(m->ntraces), ncopies);
	for (size_t t = 0; t < nb; t++) {
		assert_int_equal(m->traces[t].src, t);
		h[t] = ms__fx_copy_hash(m->key, t);
	}
	qsort(h, nb, sizeof(*h), cmp_u64);
	cut = h[ncopies - 1];
	assert_true(h[ncopies] > cut);
	for (size_t i = 0; i < m->nfrags; i++)
		pos[m->arrival[i]] = (uint32_t)i;
	for (size_t t = nb; t < m->ntraces; t++) {
		const fx_trace *c = &m->traces[t], *s = &m->traces[c->src];

		assert_true(c->src < nb);
		if (t > nb) /* in template order, so each template once */
			assert_true(c->src > m->traces[t - 1].src);
		assert_true(ms__fx_copy_hash(m->key, c->src) <= cut);
		assert_int_equal(c->nrows, s->nrows);
		assert_int_equal(c->nfrag, s->nfrag);
		assert_int_equal(c->error, s->error);
		assert_int_equal(c->slow, s->slow);
		assert_memory_equal(&m->rows[c->row0], &m->rows[s->row0],
		                    c->nrows * sizeof(fx_row));
		for (uint32_t j = 0; j < c->nfrag; j++) {
			const fx_frag *cf = &m->frags[c->frag0 + j];
			const fx_frag *sf = &m->frags[s->frag0 + j];

			assert_int_equal(cf->trace, t);
			assert_int_equal(cf->row0 - c->row0, sf->row0 - s->row0);
			assert_int_equal(cf->nrows, sf->nrows);
			assert_int_equal(cf->ordinal, j);
			assert_int_equal(cf->arrival_ns, sf->arrival_ns);
			assert_int_equal(cf->max_rel_ns, sf->max_rel_ns);
			assert_int_equal(pos[c->frag0 + j],
			                 pos[s->frag0 + j] + 1);
		}
		assert_memory_equal(c->id, s->id, pre);
		assert_memory_not_equal(c->id + pre, s->id + pre,
		                        FX_TID_LEN - pre);
	}
	for (size_t t = 0; t < m->ntraces; t++)
		ids[t] = m->traces[t].id;
	qsort(ids, m->ntraces, sizeof(*ids), cmp_id);
	for (size_t t = 1; t < m->ntraces; t++)
		assert_true(memcmp(ids[t - 1], ids[t], FX_TID_LEN) < 0);
	free(h);
	free(ids);
	free(pos);
}

/* A day-1x day holds the reference's 5,202 copies beside 32,086 base
 * traces; which traces are templates depends on the copy hash alone:
 * the class-blind test model (other classes and row counts, so other
 * verdicts) copies the same ones. */
static void
test_copies_day1x(void **state)
{
	const fx_preset *p = ms__fx_preset_find("day-1x", NULL);
	ms_errbuf eb = { { 0 } };
	fx_model m, d;

	(void)state;
	assert_non_null(p);
	assert_int_equal(ms__fx_copies_for(37288), 5202);
	assert_int_equal(ms__fx_copies_for(74576), 10404);
	assert_int_equal(ms__fx_model_generate(&m, p, 1, 0, NULL, &eb), 0);
	assert_int_equal(m.ntraces, 37288);
	check_copies(&m, 5202);
	assert_int_equal(ms__fx_model_generate(&d, p, 1, FX_MODEL_DECORRELATE,
	                                       NULL, &eb),
	                 0);
	check_copies(&d, 5202);
	{
		size_t differ = 0;

		for (size_t t = 0; t < m.nbase; t++)
			differ += m.traces[t].nrows != d.traces[t].nrows;
		assert_true(differ > 0);
	}
	for (size_t t = m.nbase; t < m.ntraces; t++)
		assert_int_equal(d.traces[t].src, m.traces[t].src);
	ms__fx_model_free(&d);
	ms__fx_model_free(&m);
}

/* A copy's materialized rows are its template's row for row but for the
 * identifiers: the trace ID, the segment IDs and, in a body, the caller
 * reference naming them; each instance has its own offset on the day, so
 * the bodies' absolute times are compared where the offsets agree. */
static void
test_copies_rows(void **state)
{
	fx_model m;
	ms_errbuf eb = { { 0 } };
	fx_arena *a = NULL, *a2 = NULL;
	ms_row *rows = NULL, *srows = calloc(256, sizeof(*srows));
	size_t same_off = 0, bodies = 0;

	(void)state;
	assert_non_null(srows);
	smoke_open(&m, 7, &a, &rows);
	assert_int_equal(ms__fx_arena_new(&a2), 0);
	assert_int_equal(ms__fx_model_schedule(&m, &eb), 0);
	ms__fx_model_timemap(&m);
	check_copies(&m, 558);
	for (size_t t = m.nbase; t < m.ntraces; t++) {
		const fx_trace *c = &m.traces[t], *s = &m.traces[c->src];
		size_t n = trace_rows(&m, t, a, rows);
		bool off = c->off_ns == s->off_ns;

		assert_int_equal(trace_rows(&m, c->src, a2, srows), n);
		same_off += off;
		for (size_t i = 0; i < n; i++) {
			const ms_row *x = &rows[i], *y = &srows[i];
			const fx_row *w = &m.rows[c->row0 + i];
			const char *dx = strchr(x->segment_id, '.');
			const char *dy = strchr(y->segment_id, '.');

			assert_memory_equal(x->trace_id, c->id, FX_TID_LEN);
			assert_memory_equal(y->trace_id, s->id, FX_TID_LEN);
			assert_non_null(dx);
			assert_non_null(dy);
			assert_string_equal(dx, dy);
			assert_string_not_equal(x->segment_id, y->segment_id);
			assert_int_equal(x->span_id, y->span_id);
			assert_string_equal(x->service, y->service);
			assert_string_equal(x->instance, y->instance);
			assert_string_equal(x->endpoint, y->endpoint);
			assert_int_equal(x->start_ns - c->off_ns,
			                 y->start_ns - s->off_ns);
			assert_int_equal(x->latency_ms, y->latency_ms);
			assert_int_equal(x->is_error, y->is_error);
			assert_int_equal(x->ntags, y->ntags);
			for (uint32_t k = 0; k < x->ntags; k++)
				assert_string_equal(x->tags[k], y->tags[k]);
			assert_int_equal(x->body_len, y->body_len);
			if (off && (i == 0 || w->layer != FX_LAYER_RPC_EXIT)) {
				assert_memory_equal(x->body, y->body,
				                    x->body_len);
				bodies++;
			}
		}
	}
	assert_true(same_off > 0);
	assert_true(bodies > 0);
	free(srows);
	free(rows);
	ms__fx_arena_free(a2);
	ms__fx_arena_free(a);
	ms__fx_model_free(&m);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_offset_vectors),
		cmocka_unit_test(test_smoke_day_mapping),
		cmocka_unit_test(test_ids_and_errors),
		cmocka_unit_test(test_entity_ids),
		cmocka_unit_test(test_row_tags_searchable),
		cmocka_unit_test(test_copies_day1x),
		cmocka_unit_test(test_copies_rows),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
