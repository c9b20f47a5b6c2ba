/*
 * test_export.c - the exports parse and hold what the database holds.
 *
 * The test carries its own strict JSON reader (RFC 8259: no trailing
 * commas, no bare words, no leading zeros, no control characters in
 * strings) and RFC 4180 CSV reader, reads every export back and compares it
 * field by field with the event log read through ms_evdb.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "alloc_testlib.h"
#include "ev_fixture.h"
#include "ev_private.h"
#include "evdb_testlib.h"
#include "locale_testlib.h"
#include "ms_replay_events.h"
#include "testdir.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "json_testlib.h"

static void
test_json_reader_is_strict(void **state)
{
	(void)state;
	static const char *bad[] = {
		"{\"a\":1,}", "[1,]",      "{a:1}", "[01]", "\"x\ny\"",
		"[1 2]",      "{\"a\" 1}", "tru",   "[1.]", "{\"a\":1}}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		jv v;
		jp s = { bad[i], false };
		bool ok = parse_value(&s, &v);
		ws(&s);
		assert_false(ok && !s.bad && *s.p == '\0');
		jfree(&v);
	}
	jv v;
	json_parse("{\"a\":[1,-2.5e3,\"q\\\"\\u0041\"],\"b\":null}", &v);
	assert_int_equal(jget(&v, "a")->n, 3);
	assert_string_equal(jget(&v, "a")->items[2].raw, "q\"A");
	jfree(&v);
}

/* ---- an RFC 4180 CSV reader ------------------------------------------- */

typedef struct csv_row {
	size_t n;
	char **f;
} csv_row;

/* Parse one record at *p (CRLF-terminated); NULL at end of input. */
static bool
csv_next(const char **pp, csv_row *row)
{
	const char *p = *pp;
	memset(row, 0, sizeof(*row));
	if (*p == '\0')
		return false;
	size_t cap = 0;
	for (;;) {
		size_t fcap = 16, n = 0;
		char *fld = malloc(fcap);
		if (*p == '"') {
			p++;
			for (;;) {
				if (*p == '\0')
					fail_msg("CSV: unterminated quote");
				if (*p == '"') {
					if (p[1] == '"') {
						p += 2;
						if (n + 2 > fcap)
							fld = realloc(
							        fld, fcap *= 2);
						fld[n++] = '"';
						continue;
					}
					p++;
					break;
				}
				if (n + 2 > fcap)
					fld = realloc(fld, fcap *= 2);
				fld[n++] = *p++;
			}
		} else {
			while (*p && *p != ',' && *p != '\r' && *p != '\n') {
				if (*p == '"')
					fail_msg(
					        "CSV: quote in unquoted field");
				if (n + 2 > fcap)
					fld = realloc(fld, fcap *= 2);
				fld[n++] = *p++;
			}
		}
		fld[n] = '\0';
		if (row->n == cap) {
			cap = cap ? cap * 2 : 64;
			row->f = realloc(row->f, cap * sizeof(*row->f));
		}
		row->f[row->n++] = fld;
		if (*p == ',') {
			p++;
			continue;
		}
		if (p[0] == '\r' && p[1] == '\n') {
			p += 2;
			break;
		}
		fail_msg("CSV: record not ended by CRLF near %.20s", p);
	}
	*pp = p;
	return true;
}

static void
csv_free(csv_row *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->f[i]);
	free(r->f);
}

/* ---- fixtures --------------------------------------------------------- */

static char tmpdir[256];
static char dbpath[512];
#define NMERGES 150

static int
setup(void **state)
{
	(void)state;
	if (!ms_test_mkdtemp(tmpdir, sizeof(tmpdir), "ms-test-export"))
		return -1;
	snprintf(dbpath, sizeof(dbpath), "%s/run.db", tmpdir);
	ms_errbuf eb;
	return evf_record(dbpath, "skywalking", NMERGES, &eb);
}

static int
teardown(void **state)
{
	(void)state;
	return ms_test_rmtree(tmpdir);
}

typedef struct export_arg {
	enum ms_export_format fmt;
	const ms_ev_filter *f;
	uint64_t *written;
} export_arg;

static int
write_export(ms_evdb *db, FILE *out, void *arg, ms_errbuf *eb)
{
	const export_arg *a = arg;
	return ms_export(db, a->fmt, a->f, out, a->written, eb);
}

/* Export into memory; returns the NUL-terminated text (caller frees). */
static char *
export_text(enum ms_export_format fmt, const ms_ev_filter *f, uint64_t *written)
{
	export_arg a = { fmt, f, written };
	return et_text(dbpath, write_export, &a);
}

/* The merges the database holds (deep copies). */
typedef struct held {
	ms_ev_merge m;
	ms_ev_input in[16];
} held;

struct held_list {
	held *v;
	size_t n;
};

static int
hold(void *ctx, const ms_ev_merge *m)
{
	struct held_list *l = ctx;
	l->v = realloc(l->v, (l->n + 1) * sizeof(*l->v));
	held *h = &l->v[l->n++];
	h->m = *m;
	assert_true(m->ninputs <= 16);
	memcpy(h->in, m->inputs, m->ninputs * sizeof(*m->inputs));
	return 0;
}

static struct held_list
held_merges(const ms_ev_filter *f)
{
	struct held_list l = { 0 };
	ms_evdb *db = NULL;
	ms_errbuf eb;
	assert_int_equal(ms_evdb_open(&db, dbpath, &eb), 0);
	assert_int_equal(ms_evdb_each_merge(db, f, hold, &l, &eb), 0);
	ms_evdb_close(db);
	for (size_t i = 0; i < l.n; i++) /* the array moved while growing */
		l.v[i].m.inputs = l.v[i].in;
	return l;
}

/* Does JSON value j hold exactly v? */
/* Part IDs are 16 hex digits everywhere outside SQLite. */
static bool
is_part_id(const char *name)
{
	return strcmp(name, "part_id") == 0 || strcmp(name, "out_id") == 0;
}

/* Columns whose values can exceed 2^53: JSON strings. */
static bool
is_big(const char *name)
{
	static const char *const big[] = { "logical_ns",   "frontier_ns",
		                           "input_min_ts", "input_max_ts",
		                           "out_min_ts",   "out_max_ts",
		                           "min_ts",       "max_ts",
		                           "out_checksum" };
	for (size_t i = 0; i < sizeof(big) / sizeof(big[0]); i++)
		if (strcmp(name, big[i]) == 0)
			return true;
	return false;
}

static void
assert_json_is(const jv *j, const ms__ev_val *v)
{
	assert_non_null(j);
	char want[64];
	switch (v->type) {
	case MS__EV_TEXT:
		assert_int_equal(j->t, J_STR);
		assert_string_equal(j->raw, v->s);
		return;
	case MS__EV_BOOL:
		assert_int_equal(j->t, J_BOOL);
		assert_int_equal(j->b, v->i != 0);
		return;
	case MS__EV_REAL:
		assert_int_equal(j->t, J_NUM);
		assert_true(j->num == v->d);
		return;
	case MS__EV_INT:
		snprintf(want, sizeof(want), "%lld", (long long)v->i);
		break;
	case MS__EV_UINT:
		snprintf(want, sizeof(want), "%llu", (unsigned long long)v->u);
		break;
	}
	if (is_part_id(v->name)) {
		snprintf(want, sizeof(want), "%016llx",
		         (unsigned long long)(v->type == MS__EV_INT
		                                      ? (uint64_t)v->i
		                                      : v->u));
		assert_int_equal(j->t, J_STR);
	} else if (is_big(v->name)) {
		assert_int_equal(j->t, J_STR);
	} else {
		/* every JSON number is exact in a double */
		assert_int_equal(j->t, J_NUM);
		assert_true(fabs(j->num) <= 9007199254740992.0);
	}
	assert_string_equal(j->raw, want);
}

/* ---- JSON Lines ------------------------------------------------------- */

static void
check_jsonl(const ms_ev_filter *f)
{
	uint64_t written = 0;
	char *text = export_text(MS_EXPORT_JSONL, f, &written);
	struct held_list l = held_merges(f);
	assert_int_equal(written, l.n);
	char *save = NULL;
	size_t lines = 0;
	for (char *line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save), lines++) {
		assert_true(lines < l.n);
		const ms_ev_merge *m = &l.v[lines].m;
		jv o;
		json_parse(line, &o);
		assert_int_equal(o.t, J_OBJ);
		for (size_t i = 0; i < ms__ev_ncols(MS__EV_MERGE); i++) {
			ms__ev_val v;
			ms__ev_value(MS__EV_MERGE, i, m, &v);
			assert_json_is(jget(&o, v.name), &v);
		}
		/* a few by name, independently of the column table */
		assert_true(jget(&o, "seq")->num == (double)m->seq);
		assert_string_equal(jget(&o, "lane")->raw, m->lane);
		assert_string_equal(jget(&o, "class")->raw,
		                    ms_ev_class_name(m->sampling.klass));
		assert_string_equal(jget(&o, "error")->raw, m->error);
		const jv *ins = jget(&o, "inputs");
		assert_int_equal(ins->t, J_ARR);
		assert_int_equal(ins->n, m->ninputs);
		for (size_t k = 0; k < m->ninputs; k++) {
			for (size_t i = 0; i < ms__ev_ncols(MS__EV_INPUT);
			     i++) {
				ms__ev_val v;
				ms__ev_value(MS__EV_INPUT, i, &m->inputs[k],
				             &v);
				assert_json_is(jget(&ins->items[k], v.name),
				               &v);
			}
			const jv *pid = jget(&ins->items[k], "part_id");
			assert_int_equal(pid->t, J_STR);
			assert_true(strlen(pid->raw) == 16 &&
			            strtoull(pid->raw, NULL, 16) ==
			                    m->inputs[k].id);
		}
		const jv *lk = jget(&o, "links");
		assert_int_equal(lk->n, m->nlinks);
		for (size_t k = 0; k < m->nlinks; k++)
			for (size_t i = 0; i < ms__ev_ncols(MS__EV_LINK); i++) {
				ms__ev_val v;
				ms__ev_value(MS__EV_LINK, i, &m->links[k], &v);
				assert_json_is(jget(&lk->items[k], v.name), &v);
			}
		/* the decided batches, as merge_batch holds them */
		const ms_merge_sampling *sm = &m->sampling;
		const jv *bt = jget(&o, "batch");
		assert_non_null(bt);
		assert_int_equal(bt->t, J_ARR);
		assert_int_equal(bt->n, sm->nbatch_recs);
		for (size_t k = 0; k < bt->n; k++) {
			const jv *b = &bt->items[k];
			assert_true(jget(b, "idx")->num == (double)k);
			assert_true(jget(b, "charged_bytes")->num ==
			            (double)sm->batch[k].charged_bytes);
			assert_true(jget(b, "traces")->num ==
			            (double)sm->batch[k].traces);
			assert_true(jget(b, "evaluated")->num ==
			            (double)sm->batch[k].evaluated);
			assert_string_equal(jget(b, "reason")->raw,
			                    ms_flush_reason_name(
			                            sm->batch[k].reason));
		}
		jfree(&o);
	}
	assert_int_equal(lines, l.n);
	free(l.v);
	free(text);
}

static void
test_jsonl_all(void **state)
{
	(void)state;
	check_jsonl(NULL);
}

static void
test_jsonl_filtered(void **state)
{
	(void)state;
	ms_ev_filter f = { .lane = MS_LANE_FAST,
		           .klass = MS_SAMPLING_EXECUTED + 1 };
	struct held_list l = held_merges(&f);
	assert_true(l.n > 5 && l.n < NMERGES);
	for (size_t i = 0; i < l.n; i++) {
		assert_string_equal(l.v[i].m.lane, "fast");
		assert_int_equal(l.v[i].m.sampling.klass, MS_SAMPLING_EXECUTED);
	}
	free(l.v);
	check_jsonl(&f);
}

/* The filter's words each match on their own, in any order and case;
 * a merge must hold every one. */
static void
test_filter_words(void **state)
{
	(void)state;
	const char *s = "#12 fast/0 primary executed none in 00a1 out 00b2";
	assert_true(ms_ev_text_match(s, NULL));
	assert_true(ms_ev_text_match(s, ""));
	assert_true(ms_ev_text_match(s, "  "));
	assert_true(ms_ev_text_match(s, "EXECUTED\tfast"));
	assert_true(ms_ev_text_match(s, "fast/0 primary"));
	assert_false(ms_ev_text_match(s, "fast cooldown"));
	ms_ev_filter f = { .text = "primary fast/" };
	struct held_list l = held_merges(&f);
	ms_ev_filter g = { .lane = MS_LANE_FAST,
		           .phase = MS_EV_PHASE_PRIMARY + 1 };
	struct held_list m = held_merges(&g);
	assert_true(l.n > 0);
	assert_int_equal(l.n, m.n);
	free(l.v);
	free(m.v);
}

/* ---- CSV -------------------------------------------------------------- */

static void
test_csv(void **state)
{
	(void)state;
	uint64_t written = 0;
	char *text = export_text(MS_EXPORT_CSV, NULL, &written);
	struct held_list l = held_merges(NULL);
	assert_int_equal(written, NMERGES);
	const char *p = text;
	csv_row hdr;
	assert_true(csv_next(&p, &hdr));
	size_t ncols = ms__ev_ncols(MS__EV_MERGE);
	assert_int_equal(hdr.n, ncols + 1);
	assert_string_equal(hdr.f[0], "seq");
	assert_string_equal(hdr.f[ncols], "input_ids");
	size_t rows = 0, quoted_errors = 0;
	csv_row r;
	while (csv_next(&p, &r)) {
		assert_true(rows < l.n);
		const ms_ev_merge *m = &l.v[rows].m;
		assert_int_equal(r.n, hdr.n);
		for (size_t i = 0; i < ncols; i++) {
			ms__ev_val v;
			ms__ev_value(MS__EV_MERGE, i, m, &v);
			assert_string_equal(hdr.f[i], v.name);
			char want[64];
			switch (v.type) {
			case MS__EV_TEXT:
				assert_string_equal(r.f[i], v.s);
				continue;
			case MS__EV_BOOL:
				snprintf(want, sizeof(want), "%d", (int)v.i);
				break;
			case MS__EV_REAL:
				assert_true(strtod(r.f[i], NULL) == v.d);
				continue;
			case MS__EV_INT:
				snprintf(want, sizeof(want), "%lld",
				         (long long)v.i);
				break;
			case MS__EV_UINT:
				snprintf(want, sizeof(want), "%llu",
				         (unsigned long long)v.u);
				break;
			}
			if (is_part_id(v.name))
				snprintf(
				        want, sizeof(want), "%016llx",
				        (unsigned long long)(v.type == MS__EV_INT
				                                     ? (uint64_t)
				                                               v.i
				                                     : v.u));
			assert_string_equal(r.f[i], want);
		}
		if (m->err)
			quoted_errors++;
		/* input IDs, space separated */
		char *s = r.f[ncols], *save = NULL;
		size_t k = 0;
		for (char *t = strtok_r(s, " ", &save); t;
		     t = strtok_r(NULL, " ", &save), k++)
			assert_true(strlen(t) == 16 &&
			            strtoull(t, NULL, 16) == m->inputs[k].id);
		assert_int_equal(k, m->ninputs);
		csv_free(&r);
		rows++;
	}
	assert_int_equal(rows, l.n);
	assert_true(quoted_errors > 0); /* "quoted", comma survived */
	csv_free(&hdr);
	free(l.v);
	free(text);
}

/* ---- Chrome trace ----------------------------------------------------- */

static int
hold_pub(void *ctx, const ms_ev_pub *p)
{
	struct {
		ms_ev_pub *v;
		size_t n;
	} *l = ctx;
	l->v = realloc(l->v, (l->n + 1) * sizeof(*l->v));
	l->v[l->n++] = *p;
	return 0;
}

/* A merge track's tid (10 + 10^6 x lane + worker, worker < 100 here) as
 * an index below 1000: 100 x lane + worker. */
static int
track_key(double tid)
{
	long long t = (long long)tid - 10;
	assert_true(t >= 0 && t % 1000000 < 100 && t / 1000000 < 10);
	return (int)(t / 1000000 * 100 + t % 1000000);
}

/* What a Chrome export holds, checked event by event against the
 * database: merges (all, or those f passes) on wall time in pid 1, the
 * publications and counters inside their ranges. */
static void
check_chrome(const ms_ev_filter *f)
{
	char *text = export_text(MS_EXPORT_CHROME, f, NULL);
	struct held_list l = held_merges(f);
	struct {
		ms_ev_pub *v;
		size_t n;
	} pubs = { 0 };
	ms_evdb *db = NULL;
	ms_errbuf eb;
	assert_int_equal(ms_evdb_open(&db, dbpath, &eb), 0);
	assert_int_equal(ms_evdb_each_pub(db, hold_pub, &pubs, &eb), 0);
	ms_evdb_close(db);
	/* the ranges the filtered merges cover, in µs */
	double wlo = 1e300, whi = -1e300, llo = 1e300, lhi = -1e300;
	for (size_t i = 0; i < l.n; i++) {
		const ms_ev_merge *m = &l.v[i].m;
		double w0 = (double)m->wall_start_ns / 1e3;
		double w1 = (double)(m->wall_start_ns + m->wall_ns) / 1e3;
		double lg = (double)m->logical_ns;
		wlo = w0 < wlo ? w0 : wlo;
		whi = w1 > whi ? w1 : whi;
		llo = lg < llo ? lg : llo;
		lhi = lg > lhi ? lg : lhi;
	}

	jv o;
	json_parse(text, &o);
	assert_int_equal(o.t, J_OBJ);
	assert_string_equal(jget(&o, "displayTimeUnit")->raw, "ms");
	const jv *other = jget(&o, "otherData");
	const jv *origin = jget(other, "logical_origin_unix_ns");
	assert_int_equal(origin->t, J_STR);
	double origin_ns = strtod(origin->raw, NULL);
	const jv *ev = jget(&o, "traceEvents");
	assert_int_equal(ev->t, J_ARR);

	size_t nx = 0, ni[3] = { 0 }, nproc = 0;
	int named[1000] = { 0 };
	int used[1000] = { 0 };
	int named_pubs = 0;
	for (size_t i = 0; i < ev->n; i++) {
		const jv *e = &ev->items[i];
		const jv *ph = jget(e, "ph");
		assert_non_null(ph);
		assert_int_equal(ph->t, J_STR);
		const jv *pidv = jget(e, "pid");
		assert_non_null(pidv);
		int pid = (int)pidv->num;
		assert_true(pid == 1 || pid == 2);
		assert_non_null(jget(e, "name"));
		const char *k = ph->raw;
		const jv *tsv = jget(e, "ts");
		double ts = tsv ? tsv->num : 0;
		/* pid 1 in wall µs, pid 2 in logical µs from the origin */
		double lg = origin_ns + ts * 1e3;
		bool in_range = pid == 1 ? ts >= wlo - 1e-3 && ts <= whi + 1e-3
		                         : lg >= llo - 1 && lg <= lhi + 1;
		if (strcmp(k, "X") == 0) {
			assert_int_equal(pid, 1);
			const jv *tid = jget(e, "tid"), *dur = jget(e, "dur"),
			         *args = jget(e, "args");
			assert_true(nx < l.n);
			const ms_ev_merge *m = &l.v[nx].m;
			assert_true(jget(args, "seq")->num == (double)m->seq);
			/* ts and dur both wall clock */
			assert_true(fabs(ts - (double)m->wall_start_ns / 1e3) <
			            1e-3);
			assert_true(fabs(dur->num - (double)m->wall_ns / 1e3) <
			            1e-3);
			const jv *lns = jget(args, "logical_ns");
			assert_int_equal(lns->t, J_STR);
			assert_true(strtoll(lns->raw, NULL, 10) ==
			            m->logical_ns);
			assert_true(jget(args, "worker")->num == m->worker);
			const jv *ids = jget(args, "input_ids");
			assert_int_equal(ids->n, m->ninputs);
			for (size_t q = 0; q < ids->n; q++) {
				assert_int_equal(strlen(ids->items[q].raw), 16);
				assert_true(strtoull(ids->items[q].raw, NULL,
				                     16) == m->inputs[q].id);
			}
			assert_int_equal(strlen(jget(args, "output_id")->raw),
			                 16);
			/* 10 + 10^6 x lane + worker */
			assert_true(tid->num >= 10);
			assert_true(fmod(tid->num - 10, 1e6) ==
			            (double)m->worker);
			used[track_key(tid->num)] = 1;
			nx++;
		} else if (strcmp(k, "i") == 0) {
			assert_non_null(jget(e, "s"));
			const jv *args = jget(e, "args");
			const ms_ev_pub *p =
			        &pubs.v[(size_t)jget(args, "seq")->num];
			if (pid == 1)
				assert_true(fabs(ts - (double)p->wall_ns /
				                              1e3) < 1e-3);
			else
				assert_true(fabs(lg - (double)p->logical_ns) <
				            1e3);
			assert_int_equal(strlen(jget(args, "part_id")->raw),
			                 16);
			if (f)
				assert_true(in_range);
			ni[pid]++;
		} else if (strcmp(k, "C") == 0) {
			const jv *args = jget(e, "args");
			assert_int_equal(args->t, J_OBJ);
			assert_int_equal(args->n, 1);
			assert_int_equal(args->items[0].t, J_NUM);
			if (f)
				assert_true(in_range);
		} else if (strcmp(k, "M") == 0) {
			const char *n = jget(e, "name")->raw;
			const jv *args = jget(e, "args");
			assert_non_null(args);
			if (strcmp(n, "process_name") == 0)
				nproc++;
			if (strcmp(n, "thread_name") == 0 && pid == 1) {
				assert_int_equal(jget(args, "name")->t, J_STR);
				double t = jget(e, "tid")->num;
				if (t == 1)
					named_pubs = 1;
				else
					named[track_key(t)] = 1;
			}
		} else {
			fail_msg("unexpected phase %s", k);
		}
	}
	assert_int_equal(nx, l.n);
	assert_int_equal(nproc, 2);
	if (!f) {
		assert_int_equal(ni[1], pubs.n);
		assert_int_equal(ni[2], pubs.n);
	} else {
		assert_true(ni[1] < pubs.n && ni[2] < pubs.n);
		assert_true(ni[1] > 0 && ni[2] > 0);
	}
	for (int t = 0; t < 1000; t++)
		if (used[t])
			assert_true(named[t]);
	assert_true(named_pubs);
	jfree(&o);
	free(text);
	free(l.v);
	free(pubs.v);
}

static void
test_chrome(void **state)
{
	(void)state;
	check_chrome(NULL);
}

static void
test_chrome_filtered(void **state)
{
	(void)state;
	ms_ev_filter f = { .has_seq_range = true, .seq_min = 2, .seq_max = 5 };
	check_chrome(&f);
}

/* The Chrome export of a run of n merges (evf_merge), each changed by
 * edit(m, seq) before it is recorded into tmpdir/name; the text parses as
 * JSON (caller frees). */
static char *
chrome_of(const char *name, uint64_t n, void (*edit)(ms_ev_merge *, uint64_t))
{
	char path[600];
	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	ms_rec *r = NULL;
	ms_errbuf eb;
	ms_ev_run run;
	assert_int_equal(evf_begin(&r, path, "skywalking", &run, &eb), 0);
	for (uint64_t s = 1; s <= n; s++) {
		ms_ev_input inputs[16];
		ms_ev_merge m;
		evf_merge(&m, inputs, s, n + 1, true);
		edit(&m, s);
		assert_int_equal(ms_rec_merge(r, &m, &eb), 0);
	}
	assert_int_equal(ms_rec_close(r, &eb), 0);
	export_arg a = { MS_EXPORT_CHROME, NULL, NULL };
	char *text = et_text(path, write_export, &a);
	jv v;
	json_parse(text, &v);
	jfree(&v);
	return text;
}

static void
odd_lane(ms_ev_merge *m, uint64_t seq)
{
	(void)seq;
	snprintf(m->lane, sizeof(m->lane), "odd\"lane\\");
	m->err = -5;
	snprintf(m->error, sizeof(m->error), "write \"x\": No space left");
}

/* Text read from the database (a lane of a foreign or damaged log, a
 * failed merge's error) is escaped wherever the Chrome export writes it:
 * the file still parses and holds the text as it was. */
static void
test_chrome_escapes_text(void **state)
{
	(void)state;
	char *text = chrome_of("odd-lane.db", 1, odd_lane);
	assert_non_null(strstr(text, "\"lane\":\"odd\\\"lane\\\\\""));
	/* A failed merge carries its error. */
	assert_non_null(strstr(text, "\"err\":-5,\"error\":\"write "
	                             "\\\"x\\\": No space left\"}}"));
	free(text);
}

/* s as ms__json_str writes it (caller frees). */
static char *
json_str_of(const char *s)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);
	assert_non_null(f);
	ms__json_str(f, s);
	fclose(f);
	return buf;
}

/* JSON is UTF-8: well-formed sequences pass as they are, and every byte
 * that does not begin one (Latin-1 text, a cut sequence, an overlong
 * form, a surrogate, past U+10FFFF) is written as \ufffd, one per byte. */
static void
test_json_str_utf8(void **state)
{
	(void)state;
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
		  "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"" },
		{ "/tmp/bad\xff\xc3(dir", "\"/tmp/bad\\ufffd\\ufffd(dir\"" },
		{ "caf\xe9", "\"caf\\ufffd\"" },                 /* Latin-1 */
		{ "\xe2\x82", "\"\\ufffd\\ufffd\"" },            /* cut short */
		{ "\xc0\xaf", "\"\\ufffd\\ufffd\"" },            /* overlong */
		{ "\xe0\x80\xaf", "\"\\ufffd\\ufffd\\ufffd\"" }, /* overlong */
		{ "\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\"" }, /* surrogate */
		{ "\xf4\x90\x80\x80",
		  "\"\\ufffd\\ufffd\\ufffd\\ufffd\"" }, /* past U+10FFFF */
		{ "\x80\"\x01", "\"\\ufffd\\\"\\u0001\"" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *got = json_str_of(cases[i].in);
		assert_string_equal(got, cases[i].out);
		free(got);
	}
}

static void
latin1_error(ms_ev_merge *m, uint64_t seq)
{
	(void)seq;
	m->err = -5;
	snprintf(m->error, sizeof(m->error), "write /tmp/caf\xe9/x: failed");
}

/* s as ms__json_fig writes v (caller frees). */
static char *
json_fig_of(double v)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	ms__json_fig(f, v);
	fclose(f);
	return buf;
}

/* A figure in the JSON reports (report --json, bench and --collect
 * summaries) reads back as the value: a count past a million keeps every
 * digit, a time keeps what the text shows of it. */
static void
test_json_fig_exact(void **state)
{
	(void)state;
	static const struct {
		double v;
		const char *want;
	} cases[] = {
		{ 1234567.0, "1234567" },
		{ 9007199254740992.0, "9007199254740992" },
		{ 1234.567, "1234.567" },
		{ 0.1, "0.1" },
		{ 0.0, "0" },
		{ -42.5, "-42.5" },
		{ NAN, "null" },
		{ INFINITY, "null" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *t = json_fig_of(cases[i].v);
		assert_string_equal(t, cases[i].want);
		free(t);
	}
	/* a ratio that 15 digits do not hold */
	double r = 2.0 / 3.0;
	char *t = json_fig_of(r);
	assert_true(strtod(t, NULL) == r);
	free(t);
}

/* A failed merge's error holding a byte that is not UTF-8 (a path in
 * another encoding): the Chrome export still parses as UTF-8 JSON. */
static void
test_chrome_not_utf8(void **state)
{
	(void)state;
	char *text = chrome_of("latin1.db", 1, latin1_error);
	assert_non_null(strstr(text, "\"error\":\"write /tmp/caf\\ufffd/x: "
	                             "failed\""));
	for (const unsigned char *p = (const unsigned char *)text; *p; p++)
		assert_true(*p < 0x80);
	free(text);
}

static void
mixed_error(ms_ev_merge *m, uint64_t seq)
{
	(void)seq;
	m->err = -5;
	snprintf(m->error, sizeof(m->error),
	         "write /tmp/caf\xe9/\"d\xc3\xa9j\xc3\xa0\", x\xff: failed");
}

/* The CSV is UTF-8 as the JSON is: a byte that does not begin a
 * well-formed sequence (a Latin-1 path) is written as U+FFFD, one per
 * byte; well-formed sequences, quoting and commas stay as they were (it
 * wrote the bytes as recorded, which spreadsheets and Python's csv
 * refuse). */
static void
test_csv_not_utf8(void **state)
{
	(void)state;
	char path[600];
	snprintf(path, sizeof(path), "%s/csv-latin1.db", tmpdir);
	ms_rec *r = NULL;
	ms_errbuf eb;
	ms_ev_run run;
	assert_int_equal(evf_begin(&r, path, "skywalking", &run, &eb), 0);
	ms_ev_input inputs[16];
	ms_ev_merge m;
	evf_merge(&m, inputs, 1, 2, true);
	mixed_error(&m, 1);
	assert_int_equal(ms_rec_merge(r, &m, &eb), 0);
	assert_int_equal(ms_rec_close(r, &eb), 0);
	export_arg a = { MS_EXPORT_CSV, NULL, NULL };
	char *text = et_text(path, write_export, &a);
	if (!strstr(text, ",\"write /tmp/caf\xef\xbf\xbd/\"\"d\xc3\xa9j\xc3"
	                  "\xa0\"\", x\xef\xbf\xbd: failed\","))
		fail_msg("%s", text);
	for (const unsigned char *p = (const unsigned char *)text; *p; p++)
		assert_true(*p != 0xe9 && *p != 0xff);
	free(text);
}

/* A real column that holds no number (the picker multiple m infinite):
 * an empty field in the CSV, as a value that is not there is in CSV
 * (an empty text), and null in the JSON (the CSV wrote JSON's null). A
 * NaN is recorded as 0 (SQLite would store NULL, which the NOT NULL
 * column refuses): 0 in both, and the JSON parses. */
static void
test_csv_not_finite_is_empty(void **state)
{
	(void)state;
	char path[600];
	snprintf(path, sizeof(path), "%s/csv-inf.db", tmpdir);
	ms_rec *r = NULL;
	ms_errbuf eb;
	ms_ev_run run;
	assert_int_equal(evf_begin(&r, path, "skywalking", &run, &eb), 0);
	const double ms[] = { INFINITY, -INFINITY, 2.5, NAN };
	for (size_t i = 0; i < 4; i++) {
		ms_ev_input inputs[16];
		ms_ev_merge m;
		evf_merge(&m, inputs, i + 1, 2, false);
		m.m = ms[i];
		assert_int_equal(ms_rec_merge(r, &m, &eb), 0);
	}
	assert_int_equal(ms_rec_close(r, &eb), 0);
	export_arg a = { MS_EXPORT_CSV, NULL, NULL };
	char *text = et_text(path, write_export, &a);
	const char *p = text;
	csv_row hdr, row;
	assert_true(csv_next(&p, &hdr));
	size_t k = 0;
	while (k < hdr.n && strcmp(hdr.f[k], "m") != 0)
		k++;
	assert_true(k < hdr.n);
	const char *want[] = { "", "", "2.5", "0" };
	for (size_t i = 0; i < 4; i++) {
		assert_true(csv_next(&p, &row));
		assert_int_equal(row.n, hdr.n);
		if (strcmp(row.f[k], want[i]) != 0)
			fail_msg("merge %zu: m \"%s\", expected \"%s\"", i + 1,
			         row.f[k], want[i]);
		csv_free(&row);
	}
	assert_null(strstr(text, "null"));
	csv_free(&hdr);
	free(text);
	export_arg j = { MS_EXPORT_JSONL, NULL, NULL };
	text = et_text(path, write_export, &j);
	char *save = NULL;
	size_t i = 0;
	for (char *line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save), i++) {
		jv o;
		json_parse(line, &o);
		const jv *mv = jget(&o, "m");
		assert_non_null(mv);
		assert_true(i < 4);
		if (want[i][0])
			assert_true(mv->t == J_NUM &&
			            mv->num == strtod(want[i], NULL));
		else
			assert_int_equal(mv->t, J_NULL);
		jfree(&o);
	}
	assert_int_equal(i, 4);
	free(text);
}

/* A REAL (the picker multiple m) reads back from the CSV and the JSON as
 * the double recorded, bit for bit: a ratio that 15 significant digits
 * do not hold, the largest and smallest doubles, a subnormal. */
static void
test_real_round_trip(void **state)
{
	(void)state;
	char path[600];
	snprintf(path, sizeof(path), "%s/real-trip.db", tmpdir);
	ms_rec *r = NULL;
	ms_errbuf eb;
	ms_ev_run run;
	assert_int_equal(evf_begin(&r, path, "skywalking", &run, &eb), 0);
	const double ms[] = { 2.0 / 3.0, 0.1 + 0.2, DBL_MAX, DBL_MIN,
		              5e-324, 1.0 + DBL_EPSILON };
	const size_t n = sizeof(ms) / sizeof(ms[0]);
	for (size_t i = 0; i < n; i++) {
		ms_ev_input inputs[16];
		ms_ev_merge m;
		evf_merge(&m, inputs, i + 1, 2, false);
		m.m = ms[i];
		assert_int_equal(ms_rec_merge(r, &m, &eb), 0);
	}
	assert_int_equal(ms_rec_close(r, &eb), 0);
	export_arg a = { MS_EXPORT_CSV, NULL, NULL };
	char *text = et_text(path, write_export, &a);
	const char *p = text;
	csv_row hdr, row;
	assert_true(csv_next(&p, &hdr));
	size_t k = 0;
	while (k < hdr.n && strcmp(hdr.f[k], "m") != 0)
		k++;
	assert_true(k < hdr.n);
	for (size_t i = 0; i < n; i++) {
		assert_true(csv_next(&p, &row));
		if (strtod(row.f[k], NULL) != ms[i])
			fail_msg("merge %zu: CSV m \"%s\", recorded %a", i + 1,
			         row.f[k], ms[i]);
		csv_free(&row);
	}
	csv_free(&hdr);
	free(text);
	export_arg j = { MS_EXPORT_JSONL, NULL, NULL };
	text = et_text(path, write_export, &j);
	char *save = NULL;
	size_t i = 0;
	for (char *line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save), i++) {
		jv o;
		json_parse(line, &o);
		const jv *mv = jget(&o, "m");
		assert_true(i < n);
		assert_int_equal(mv->t, J_NUM);
		if (mv->num != ms[i])
			fail_msg("merge %zu: JSON m %s, recorded %a", i + 1,
			         mv->raw, ms[i]);
		jfree(&o);
	}
	assert_int_equal(i, n);
	free(text);
}

/* Merge 1 on the fast lane from 1 ms, merge 2 on the slow lane from 5 ms,
 * 10 ms each, staging 100 and 200 bytes at their peaks. */
static void
overlapping(ms_ev_merge *m, uint64_t seq)
{
	snprintf(m->lane, sizeof(m->lane), "%s",
	         seq == 1 ? MS_LANE_FAST : MS_LANE_SLOW);
	m->worker = 0;
	m->err = 0;
	m->wall_start_ns = seq == 1 ? 1000000 : 5000000;
	m->wall_ns = 10000000;
	m->sampling.peak_staged_bytes = 100 * seq;
}

/* Two sampling merges staging at once on two lane workers: each has a
 * staged-bytes counter of its own, so the first to end does not reset
 * the other's to 0 while it still runs. */
static void
test_chrome_staged_per_worker(void **state)
{
	(void)state;
	char *text = chrome_of("staged.db", 2, overlapping);
	static const char *const want[] = {
		"\"name\":\"staged bytes fast #0\",\"ts\":1000.000,"
		"\"args\":{\"bytes\":100}",
		"\"name\":\"staged bytes slow #0\",\"ts\":5000.000,"
		"\"args\":{\"bytes\":200}",
		"\"name\":\"staged bytes fast #0\",\"ts\":11000.000,"
		"\"args\":{\"bytes\":0}",
		"\"name\":\"staged bytes slow #0\",\"ts\":15000.000,"
		"\"args\":{\"bytes\":0}",
	};
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		assert_non_null(strstr(text, want[i]));
	assert_null(strstr(text, "\"name\":\"staged bytes\","));
	free(text);
}

/* Merge seq on fast lane worker seq - 1 (a machine with many CPUs has
 * many fast workers), the last on the finalize lane's worker 0. */
#define MANY_WORKERS 130
static void
many_workers(ms_ev_merge *m, uint64_t seq)
{
	snprintf(m->lane, sizeof(m->lane), "%s",
	         seq == MANY_WORKERS ? MS_LANE_FINALIZE : MS_LANE_FAST);
	m->worker = seq == MANY_WORKERS ? 0 : (uint32_t)(seq - 1);
	m->err = 0;
}

/* Every lane worker has a track of its own, named for it, however many
 * workers there are: fast worker 100 does not share fast worker 0's, and
 * past 64 tracks a merge does not land on another worker's track. */
static void
test_chrome_track_per_worker(void **state)
{
	(void)state;
	char *text = chrome_of("workers.db", MANY_WORKERS, many_workers);
	jv o;
	json_parse(text, &o);
	const jv *ev = jget(&o, "traceEvents");
	double tids[MANY_WORKERS];
	size_t nx = 0;
	for (size_t i = 0; i < ev->n; i++) {
		const jv *e = &ev->items[i];
		if (strcmp(jget(e, "ph")->raw, "X") != 0)
			continue;
		const jv *args = jget(e, "args");
		double tid = jget(e, "tid")->num;
		assert_true(tid < 2147483648.0); /* 32 bits, as viewers read */
		for (size_t k = 0; k < nx; k++)
			assert_true(tids[k] != tid);
		assert_true(nx < MANY_WORKERS);
		tids[nx++] = tid;
		char want[64];
		snprintf(want, sizeof(want), "%s #%.0f",
		         jget(args, "lane")->raw, jget(args, "worker")->num);
		const char *name = NULL;
		for (size_t k = 0; k < ev->n; k++) {
			const jv *m = &ev->items[k];
			if (strcmp(jget(m, "ph")->raw, "M") == 0 &&
			    strcmp(jget(m, "name")->raw, "thread_name") == 0 &&
			    jget(m, "pid")->num == 1 &&
			    jget(m, "tid")->num == tid)
				name = jget(jget(m, "args"), "name")->raw;
		}
		assert_non_null(name);
		assert_string_equal(name, want);
	}
	assert_int_equal(nx, MANY_WORKERS);
	jfree(&o);
	free(text);
}

/* The logical day (pid 2) follows the inventory through the merges too:
 * its last "inventory parts" and "inventory bytes" counters are those the
 * last merge of the day (the finalize, after every publication) left,
 * at that merge's logical time. */
static void
test_chrome_logical_inventory(void **state)
{
	(void)state;
	char *text = export_text(MS_EXPORT_CHROME, NULL, NULL);
	struct held_list l = held_merges(NULL);
	const ms_ev_merge *last = NULL;
	for (size_t i = 0; i < l.n; i++)
		if (!l.v[i].m.err &&
		    (!last || l.v[i].m.logical_ns > last->logical_ns))
			last = &l.v[i].m;
	assert_non_null(last);
	jv o;
	json_parse(text, &o);
	double origin_ns =
	        strtod(jget(jget(&o, "otherData"), "logical_origin_unix_ns")
	                       ->raw,
	               NULL);
	const jv *ev = jget(&o, "traceEvents");
	double want_ts = ((double)last->logical_ns - origin_ns) / 1e3;
	const char *names[2] = { "inventory parts", "inventory bytes" };
	const char *keys[2] = { "parts", "bytes" };
	uint64_t want[2] = { last->inv_parts, last->inv_bytes };
	for (int k = 0; k < 2; k++) {
		const jv *latest = NULL;
		for (size_t i = 0; i < ev->n; i++) {
			const jv *e = &ev->items[i];
			if (strcmp(jget(e, "ph")->raw, "C") != 0 ||
			    jget(e, "pid")->num != 2 ||
			    strcmp(jget(e, "name")->raw, names[k]) != 0)
				continue;
			if (!latest ||
			    jget(e, "ts")->num >= jget(latest, "ts")->num)
				latest = e;
		}
		assert_non_null(latest);
		assert_true(fabs(jget(latest, "ts")->num - want_ts) < 1.0);
		assert_true(jget(jget(latest, "args"), keys[k])->num ==
		            (double)want[k]);
	}
	jfree(&o);
	free(text);
	free(l.v);
}

static void
test_export_file_errors(void **state)
{
	(void)state;
	ms_evdb *db = NULL;
	ms_errbuf eb;
	assert_int_equal(ms_evdb_open(&db, dbpath, &eb), 0);
	char path[600];
	snprintf(path, sizeof(path), "%s/no/such/dir/out.json", tmpdir);
	assert_true(ms_export_file(db, MS_EXPORT_CHROME, NULL, path, false,
	                           NULL, &eb) < 0);
	assert_non_null(strstr(eb.msg, path));
	snprintf(path, sizeof(path), "%s/out.csv", tmpdir);
	uint64_t n = 0;
	assert_int_equal(
	        ms_export_file(db, MS_EXPORT_CSV, NULL, path, false, &n, &eb),
	        0);
	assert_int_equal(n, NMERGES);
	assert_int_equal(ms_export_format_parse("csv"), MS_EXPORT_CSV);
	assert_int_equal(ms_export_format_parse("chrome"), MS_EXPORT_CHROME);
	assert_int_equal(ms_export_format_parse("xml"), -1);
	ms_evdb_close(db);
}

/* The whole of path (caller frees), or NULL when it does not exist. */
/* Number of entries in dir whose name starts with prefix. */
static int
entries_with(const char *dir, const char *prefix)
{
	char cmd[700];
	snprintf(cmd, sizeof(cmd), "ls -A '%s' | grep -c '^%s' > '%s/.count'",
	         dir, prefix, dir);
	(void)system(cmd);
	char path[600];
	snprintf(path, sizeof(path), "%s/.count", dir);
	char *t = ms_test_read(path, 1 << 20, NULL);
	assert_non_null(t);
	int n = atoi(t);
	free(t);
	unlink(path);
	return n;
}

/* Out of memory while naming the temporary file: MS_ERR_NOMEM, and no
 * file is removed. The temporary name's buffer was left unwritten and
 * then unlinked as a name, whatever it held (here another file's). */
static void
test_outfile_open_out_of_memory(void **state)
{
	(void)state;
	char path[600], victim[600];
	snprintf(path, sizeof(path), "%s/an-export-with-a-longer-name.csv",
	         tmpdir);
	snprintf(victim, sizeof(victim), "%s/v", tmpdir);
	assert_int_equal(ms_test_put(victim, "someone's\n"), 0);
	ms_outfile *o = (ms_outfile *)0x1;
	ms_errbuf eb = { "" };
	tl_alloc.fill = victim;
	tl_alloc.fail_size = strlen(path) + 1; /* the copy of the name */
	int rc = ms_outfile_open(&o, path, false, &eb);
	tl_alloc_disarm();
	assert_int_equal(rc, MS_ERR_NOMEM);
	assert_null(o);
	assert_non_null(strstr(eb.msg, "out of memory"));
	char *t = ms_test_read(victim, 1 << 20, NULL);
	if (!t)
		fail_msg("%s was removed", victim);
	assert_string_equal(t, "someone's\n");
	free(t);
	unlink(victim);
}

/* Open a file in the empty directory ctx, write a line and commit; on
 * failure the directory must be left empty. Both ways of opening. */
static int
call_outfile(void *ctx, ms_errbuf *eb)
{
	const char *dir = ctx;
	char path[600];
	snprintf(path, sizeof(path), "%s/out.txt", dir);
	int rc = 0;
	for (int nameless = 1; rc == 0 && nameless >= 0; nameless--) {
		ms_outfile *o = NULL;
		rc = ms__outfile_open_how(&o, path, false, nameless, eb);
		if (rc == 0) {
			fputs("a line\n", ms_outfile_stream(o));
			rc = ms_outfile_commit(o, eb);
		}
		if (rc == 0 && unlink(path) != 0)
			fail_msg("%s not written", path);
	}
	DIR *d = opendir(dir);
	assert_non_null(d);
	struct dirent *e;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			fail_msg("%s left in %s (\"%s\")", e->d_name, dir,
			         eb->msg);
	closedir(d);
	return rc;
}

/* An output file out of memory at each of its allocations says what the
 * memory was for and how many bytes, and leaves nothing in its
 * directory: it said only "<file>: out of memory". */
static void
test_outfile_out_of_memory_says_what_for(void **state)
{
	(void)state;
	char dir[600];
	snprintf(dir, sizeof(dir), "%s/outfile-oom", tmpdir);
	assert_int_equal(mkdir(dir, 0755), 0);
	assert_true(tl_alloc_sweep(call_outfile, dir, "/out.txt: ") >= 3);
	assert_int_equal(rmdir(dir), 0);
}

/* The longest name a directory takes (NAME_MAX bytes) is written: the
 * temporary file beside it used to be named ".<name>.<pid>-<hex>" whole,
 * past NAME_MAX, and the export failed with "File name too long" for a
 * name the user could create. */
static void
test_outfile_longest_name(void **state)
{
	(void)state;
	char base[NAME_MAX + 1], path[sizeof(tmpdir) + NAME_MAX + 2];
	memset(base, 'n', NAME_MAX);
	memcpy(base + NAME_MAX - 4, ".csv", 5);
	snprintf(path, sizeof(path), "%s/%s", tmpdir, base);
	ms_outfile *o = NULL;
	ms_errbuf eb = { "" };
	if (ms_outfile_open(&o, path, false, &eb))
		fail_msg("%s", eb.msg);
	fputs("a,b\n", ms_outfile_stream(o));
	if (ms_outfile_commit(o, &eb))
		fail_msg("%s", eb.msg);
	char *t = ms_test_read(path, 1 << 20, NULL);
	assert_non_null(t);
	assert_string_equal(t, "a,b\n");
	free(t);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(entries_with(tmpdir, ".nnnn"), 0);
}

struct export_call {
	ms_evdb *db;
	enum ms_export_format fmt;
	FILE *out;
};

static int
call_export(void *ctx, ms_errbuf *eb)
{
	const struct export_call *c = ctx;
	return ms_export(c->db, c->fmt, NULL, c->out, NULL, eb);
}

/* Out of memory anywhere in an export: the message names the database
 * and says what the memory was for ("export of X: no memory" said
 * neither). */
static void
test_export_out_of_memory(void **state)
{
	(void)state;
	struct export_call c = { NULL, MS_EXPORT_JSONL,
		                 fopen("/dev/null", "w") };
	assert_non_null(c.out);
	ms_errbuf eb;
	assert_int_equal(ms_evdb_open(&c.db, dbpath, &eb), 0);
	const enum ms_export_format fmts[] = { MS_EXPORT_JSONL, MS_EXPORT_CSV,
		                               MS_EXPORT_CHROME };
	for (size_t i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++) {
		c.fmt = fmts[i];
		assert_true(tl_alloc_sweep(call_export, &c, dbpath) > 0);
	}
	ms_evdb_close(c.db);
	fclose(c.out);
}

/* An export never replaces a file unless asked to, never writes over the
 * database it reads, and a failed or interrupted one leaves neither a
 * half file at the name nor its temporary file. */
static void
test_export_file_refuses_existing(void **state)
{
	(void)state;
	ms_evdb *db = NULL;
	ms_errbuf eb;
	assert_int_equal(ms_evdb_open(&db, dbpath, &eb), 0);
	char path[600];
	snprintf(path, sizeof(path), "%s/keep.jsonl", tmpdir);
	assert_int_equal(ms_test_put(path, "precious\n"), 0);
	/* Exists: refused, untouched, nothing left beside it. */
	eb.msg[0] = '\0';
	assert_int_equal(ms_export_file(db, MS_EXPORT_JSONL, NULL, path, false,
	                                NULL, &eb),
	                 MS_ERR_EXISTS);
	assert_non_null(strstr(eb.msg, path));
	assert_non_null(strstr(eb.msg, "--force"));
	char *t = ms_test_read(path, 1 << 20, NULL);
	assert_string_equal(t, "precious\n");
	free(t);
	assert_int_equal(entries_with(tmpdir, ".keep.jsonl."), 0);
	/* With force: replaced by the whole export. */
	uint64_t n = 0;
	assert_int_equal(
	        ms_export_file(db, MS_EXPORT_JSONL, NULL, path, true, &n, &eb),
	        0);
	assert_int_equal(n, NMERGES);
	t = ms_test_read(path, 1 << 20, NULL);
	assert_null(strstr(t, "precious"));
	size_t lines = 0;
	for (const char *p = t; *p; p++)
		lines += *p == '\n';
	assert_int_equal(lines, NMERGES);
	free(t);
	/* The database itself: refused even with force, and intact. */
	eb.msg[0] = '\0';
	assert_int_equal(ms_export_file(db, MS_EXPORT_CSV, NULL, dbpath, true,
	                                NULL, &eb),
	                 MS_ERR_INVAL);
	assert_non_null(strstr(eb.msg, "event database"));
	ms_evdb_close(db);
	db = NULL;
	assert_int_equal(ms_evdb_open(&db, dbpath, &eb), 0);

	/* A file created between the open and the commit is not replaced
	 * without force. */
	char late[600];
	snprintf(late, sizeof(late), "%s/late.csv", tmpdir);
	ms_outfile *o = NULL;
	assert_int_equal(ms_outfile_open(&o, late, false, &eb), 0);
	fputs("new text\n", ms_outfile_stream(o));
	assert_int_equal(ms_test_put(late, "written meanwhile\n"), 0);
	assert_int_equal(ms_outfile_commit(o, &eb), MS_ERR_EXISTS);
	t = ms_test_read(late, 1 << 20, NULL);
	assert_string_equal(t, "written meanwhile\n");
	free(t);
	assert_int_equal(entries_with(tmpdir, ".late.csv."), 0);

	/* A write that fails (the file size limit) over an existing file:
	 * the old file stays whole, no temporary file is left, and the
	 * error names the file and the system's reason, whichever of the
	 * export's writes failed first (each format's, and an export far
	 * larger than the limit, so the stream's buffer fails mid-way). */
	static const enum ms_export_format fmts[] = {
		MS_EXPORT_JSONL, MS_EXPORT_CSV, MS_EXPORT_CHROME
	};
	for (size_t i = 0; i < sizeof(fmts) / sizeof(*fmts); i++) {
		char ep[600];
		snprintf(ep, sizeof(ep), "%s/fsize.err", tmpdir);
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			signal(SIGXFSZ, SIG_IGN);
			struct rlimit rl = { 1024, 1024 };
			setrlimit(RLIMIT_FSIZE, &rl);
			ms_errbuf ceb = { "" };
			int rc = ms_export_file(db, fmts[i], NULL, path, true,
			                        NULL, &ceb);
			FILE *ef = fopen(ep, "w");
			if (ef) {
				fputs(ceb.msg, ef);
				fclose(ef);
			}
			_exit(rc < 0 ? 0 : 1);
		}
		int status = 0;
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
		char *msg = ms_test_read(ep, 1 << 16, NULL);
		assert_non_null(msg);
		fprintf(stderr, "format %zu: %s\n", i, msg);
		char want[700];
		snprintf(want, sizeof(want), "%s: write failed: %s", path,
		         strerror(EFBIG));
		assert_non_null(strstr(msg, want));
		free(msg);
	}
	int status = 0;
	pid_t pid;
	t = ms_test_read(path, 1 << 20, NULL);
	lines = 0;
	for (const char *p = t; *p; p++)
		lines += *p == '\n';
	assert_int_equal(lines, NMERGES); /* still the jsonl export */
	free(t);
	assert_int_equal(entries_with(tmpdir, ".keep.jsonl."), 0);

	/* Killed in the middle of writing: nothing at the name. */
	char killed[600];
	snprintf(killed, sizeof(killed), "%s/killed.json", tmpdir);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		ms_outfile *k = NULL;
		ms_errbuf ceb;
		if (ms_outfile_open(&k, killed, false, &ceb) == 0) {
			fputs("{\"half\":", ms_outfile_stream(k));
			fflush(ms_outfile_stream(k));
			raise(SIGKILL);
		}
		_exit(1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status));
	struct stat st;
	assert_int_equal(stat(killed, &st), -1);
	/* Nor beside it: the data had no name yet (an interrupted export
	 * used to leave ".killed.json.<pid>-<hex>" for good). */
	assert_int_equal(entries_with(tmpdir, ".killed.json."), 0);
	ms_evdb_close(db);
}

/* Both ways of writing (a file without a name, and the named temporary
 * file used where the file system cannot make one) give the same results:
 * the text at the name, a name created meanwhile kept without force and
 * replaced with it, nothing left beside it. */
static void
test_outfile_both_ways(void **state)
{
	(void)state;
	for (int nameless = 0; nameless <= 1; nameless++) {
		char path[600];
		snprintf(path, sizeof(path), "%s/both-%d.txt", tmpdir,
		         nameless);
		char prefix[64];
		snprintf(prefix, sizeof(prefix), ".both-%d.txt.", nameless);
		ms_errbuf eb = { "" };
		ms_outfile *o = NULL;
		assert_int_equal(
		        ms__outfile_open_how(&o, path, false, nameless, &eb),
		        0);
		fputs("first\n", ms_outfile_stream(o));
		assert_int_equal(ms_outfile_commit(o, &eb), 0);
		char *t = ms_test_read(path, 1 << 16, NULL);
		assert_string_equal(t, "first\n");
		free(t);
		/* Without force: refused at open, and at the commit for a
		 * name created meanwhile. */
		assert_int_equal(
		        ms__outfile_open_how(&o, path, false, nameless, &eb),
		        MS_ERR_EXISTS);
		unlink(path);
		assert_int_equal(
		        ms__outfile_open_how(&o, path, false, nameless, &eb),
		        0);
		fputs("second\n", ms_outfile_stream(o));
		assert_int_equal(ms_test_put(path, "meanwhile\n"), 0);
		assert_int_equal(ms_outfile_commit(o, &eb), MS_ERR_EXISTS);
		assert_non_null(strstr(eb.msg, "not overwritten"));
		t = ms_test_read(path, 1 << 16, NULL);
		assert_string_equal(t, "meanwhile\n");
		free(t);
		/* With force: replaced. */
		assert_int_equal(
		        ms__outfile_open_how(&o, path, true, nameless, &eb), 0);
		fputs("third\n", ms_outfile_stream(o));
		assert_int_equal(ms_outfile_commit(o, &eb), 0);
		t = ms_test_read(path, 1 << 16, NULL);
		assert_string_equal(t, "third\n");
		free(t);
		/* Abandoned: the name untouched. */
		assert_int_equal(
		        ms__outfile_open_how(&o, path, true, nameless, &eb), 0);
		fputs("fourth\n", ms_outfile_stream(o));
		ms_outfile_abort(o);
		t = ms_test_read(path, 1 << 16, NULL);
		assert_string_equal(t, "third\n");
		free(t);
		assert_int_equal(entries_with(tmpdir, prefix), 0);
		unlink(path);
	}
}

/* Exports are the same bytes in a locale with a decimal comma as in the C
 * locale (a comma would break JSON and add CSV columns). */
static void
test_export_decimal_comma_locale(void **state)
{
	(void)state;
	enum ms_export_format fmts[] = { MS_EXPORT_JSONL, MS_EXPORT_CSV,
		                         MS_EXPORT_CHROME };
	char *c_text[3];
	for (int i = 0; i < 3; i++)
		c_text[i] = export_text(fmts[i], NULL, NULL);
	/* The exports carry fractional numbers, so the test can fail. */
	bool fraction = false;
	for (const char *p = c_text[2]; *p && !fraction; p++)
		fraction = isdigit((unsigned char)p[0]) && p[1] == '.' &&
		           isdigit((unsigned char)p[2]);
	assert_true(fraction);
	assert_true(lt_use_comma_locale(tmpdir));
	char probe[16];
	snprintf(probe, sizeof(probe), "%.1f", 0.5);
	assert_string_equal(probe, "0,5"); /* the locale is in force */
	char *comma_text[3];
	for (int i = 0; i < 3; i++)
		comma_text[i] = export_text(fmts[i], NULL, NULL);
	setlocale(LC_ALL, "C");
	for (int i = 0; i < 3; i++) {
		assert_string_equal(comma_text[i], c_text[i]);
		free(comma_text[i]);
		free(c_text[i]);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_json_reader_is_strict),
		cmocka_unit_test(test_jsonl_all),
		cmocka_unit_test(test_jsonl_filtered),
		cmocka_unit_test(test_filter_words),
		cmocka_unit_test(test_csv),
		cmocka_unit_test(test_chrome),
		cmocka_unit_test(test_chrome_filtered),
		cmocka_unit_test(test_chrome_logical_inventory),
		cmocka_unit_test(test_chrome_track_per_worker),
		cmocka_unit_test(test_chrome_escapes_text),
		cmocka_unit_test(test_json_str_utf8),
		cmocka_unit_test(test_json_fig_exact),
		cmocka_unit_test(test_chrome_not_utf8),
		cmocka_unit_test(test_csv_not_utf8),
		cmocka_unit_test(test_csv_not_finite_is_empty),
		cmocka_unit_test(test_real_round_trip),
		cmocka_unit_test(test_chrome_staged_per_worker),
		cmocka_unit_test(test_export_file_errors),
		cmocka_unit_test(test_export_file_refuses_existing),
		cmocka_unit_test(test_outfile_open_out_of_memory),
		cmocka_unit_test(test_outfile_out_of_memory_says_what_for),
		cmocka_unit_test(test_outfile_longest_name),
		cmocka_unit_test(test_outfile_both_ways),
		cmocka_unit_test(test_export_out_of_memory),
		cmocka_unit_test(test_export_decimal_comma_locale),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
