/*
 * export.c - recorded merges out of the event log, for analysis elsewhere:
 * JSON Lines (one merge per line, every column plus its inputs, links
 * and decided batches),
 * RFC 4180 CSV (one merge per row, every column plus the input IDs), and
 * the Chrome trace-event JSON object that Perfetto and chrome://tracing
 * open.
 *
 * Every export takes the same ms_ev_filter the TUI's event log uses, so
 * "export what the filter shows" is one call. Field names are the database
 * column names (replay/SCHEMA.md), taken from the recorder's column tables.
 *
 * Chrome layout, two processes. pid 1 is the run on wall time: ts is
 * microseconds since the run started, so a merge is a complete ("X")
 * event whose ts and dur are both wall clock, on one track per lane
 * worker (tid = 10 + 10^6 x lane + worker, so no two workers share
 * one); publications are instants on track 1; counters "inventory
 * parts" and "inventory bytes" follow them, and "staged bytes <worker>"
 * holds each sampling merge's peak staged bytes while it runs, one
 * counter per lane worker. A merge's logical time is in its args. pid 2
 * is the logical day: publications as instants and the inventory
 * counters after each publication and each merge at their logical time
 * (microseconds from the first logical instant of the run). With a
 * filter, only the merges it passes are written, and only the
 * publications and counters inside their range (wall range in pid 1,
 * logical range in pid 2).
 *
 * Outside SQLite, part IDs are always 16 lowercase hex digits (as the TUI
 * shows them), in JSON as strings; integers that can exceed 2^53
 * (logical and unix nanosecond times, timestamps, checksums) are JSON
 * strings of their decimal digits, so JavaScript and jq keep every digit.
 * CSV writes them as digits (part IDs as hex). Every JSON string goes
 * through ms__json_str, which writes valid UTF-8 whatever the bytes: each
 * byte that does not begin a well-formed UTF-8 sequence (a path in
 * another encoding) is written as \ufffd; a CSV field (csv_text) the
 * same way, U+FFFD as UTF-8.
 */
#include "ev_private.h"
#include "grow.h"
#include "ms_enum.h"
#include "ms_replay_events.h"

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *const format_names[] = {
	[MS_EXPORT_JSONL] = "jsonl",
	[MS_EXPORT_CSV] = "csv",
	[MS_EXPORT_CHROME] = "chrome",
};

const char *
ms_export_format_name(enum ms_export_format f)
{
	return MS_ENUM_NAME(format_names, f, "?");
}

int
ms_export_format_parse(const char *s)
{
	return MS_ENUM_PARSE(format_names, s);
}

void
ms__json_fig(FILE *f, double v)
{
	if (!isfinite(v)) {
		fputs("null", f);
		return;
	}
	/* The shortest of 15 or 17 significant digits that reads back as
	 * v: counts up to 2^53 keep every digit (1234567 allocations, not
	 * 1.23457e+06), and a figure holds at least what the text report
	 * shows of it. */
	char buf[40];
	snprintf(buf, sizeof(buf), "%.15g", v);
	if (strtod(buf, NULL) != v)
		snprintf(buf, sizeof(buf), "%.17g", v);
	fputs(buf, f);
}

/* The length of the well-formed UTF-8 sequence at p (1 to 4; Unicode's
 * table 3-7: no overlong forms, no surrogates, nothing past U+10FFFF), 0
 * when p does not start one. p is NUL-terminated: a NUL ends any
 * sequence early. */
static size_t
utf8_len(const unsigned char *p)
{
	unsigned char c = p[0];
	if (c < 0x80)
		return 1;
	size_t n;
	unsigned char lo = 0x80, hi = 0xbf;
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		if (c == 0xe0)
			lo = 0xa0; /* overlong below */
		else if (c == 0xed)
			hi = 0x9f; /* surrogates above */
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		if (c == 0xf0)
			lo = 0x90; /* overlong below */
		else if (c == 0xf4)
			hi = 0x8f; /* past U+10FFFF above */
	} else {
		return 0; /* a continuation byte, C0, C1, F5..FF */
	}
	if (p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (p[i] < 0x80 || p[i] > 0xbf)
			return 0;
	return n;
}

void
ms__json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p >= 0x80) {
			/* Paths, plugin names and error texts are bytes;
			 * JSON is UTF-8. A byte that does not begin a
			 * well-formed sequence becomes U+FFFD, one for each
			 * such byte. */
			size_t n = utf8_len(p);
			if (n == 0) {
				fputs("\\ufffd", f);
				continue;
			}
			fwrite(p, 1, n, f);
			p += n - 1;
			continue;
		}
		switch (*p) {
		case '"':
			fputs("\\\"", f);
			break;
		case '\\':
			fputs("\\\\", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\r':
			fputs("\\r", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		default:
			if (*p < 0x20)
				fprintf(f, "\\u%04x", *p);
			else
				fputc(*p, f);
		}
	}
	fputc('"', f);
}

void
ms__json_val(FILE *f, const ms__ev_val *v)
{
	switch (v->type) {
	case MS__EV_INT:
		fprintf(f, "%lld", (long long)v->i);
		break;
	case MS__EV_UINT:
		fprintf(f, "%llu", (unsigned long long)v->u);
		break;
	case MS__EV_REAL:
		if (isfinite(v->d))
			fprintf(f, "%.17g", v->d);
		else
			fputs("null", f);
		break;
	case MS__EV_BOOL:
		fputs(v->i ? "true" : "false", f);
		break;
	case MS__EV_TEXT:
		ms__json_str(f, v->s ? v->s : "");
		break;
	}
}

static bool
ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), t = strlen(tail);
	return n >= t && strcmp(s + n - t, tail) == 0;
}

enum ms__col_kind
ms__col_kind(const char *name)
{
	if (strcmp(name, "part_id") == 0 || ends_with(name, "_id"))
		return MS__COL_PART_ID;
	if (strstr(name, "checksum") || strcmp(name, "logical_ns") == 0 ||
	    strcmp(name, "frontier_ns") == 0 || ends_with(name, "_ts") ||
	    ends_with(name, "_unix_ns") || strcmp(name, "fixture_seed") == 0)
		return MS__COL_BIG;
	return MS__COL_PLAIN;
}

static uint64_t
val_bits(const ms__ev_val *v)
{
	return v->type == MS__EV_INT ? (uint64_t)v->i : v->u;
}

void
ms__json_col(FILE *f, const ms__ev_val *v)
{
	bool integer = v->type == MS__EV_INT || v->type == MS__EV_UINT;
	switch (integer ? ms__col_kind(v->name) : MS__COL_PLAIN) {
	case MS__COL_PART_ID:
		fprintf(f, "\"%016llx\"", (unsigned long long)val_bits(v));
		break;
	case MS__COL_BIG:
		fputc('"', f);
		ms__json_val(f, v);
		fputc('"', f);
		break;
	default:
		ms__json_val(f, v);
	}
}

/* {"name": value, ...} over all columns of record w. */
static void
json_record(FILE *f, enum ms__ev_rec w, const void *obj, bool close)
{
	size_t n = ms__ev_ncols(w);
	fputc('{', f);
	for (size_t i = 0; i < n; i++) {
		ms__ev_val v;
		ms__ev_value(w, i, obj, &v);
		if (i)
			fputc(',', f);
		ms__json_str(f, v.name);
		fputc(':', f);
		ms__json_col(f, &v);
	}
	if (close)
		fputc('}', f);
}

struct exp {
	FILE *f;
	uint64_t n;
	/* chrome */
	int64_t origin_ns;
	struct track {
		long long tid;
		char name[32];
	} *tracks;
	size_t ntracks, tcap;
	ms__oom oom; /* the allocation that failed */
};

/* A stream a write to has failed (a full disk, a reader that closed the
 * pipe): the walk stops there instead of formatting the rest of the
 * merges into it; export_c says why. */
static bool
stream_failed(const struct exp *x)
{
	return ferror(x->f) != 0;
}

static int
jsonl_merge(void *ctx, const ms_ev_merge *m)
{
	struct exp *x = ctx;
	if (stream_failed(x))
		return MS_ERR_IO;
	json_record(x->f, MS__EV_MERGE, m, false);
	fputs(",\"inputs\":[", x->f);
	for (size_t i = 0; i < m->ninputs; i++) {
		if (i)
			fputc(',', x->f);
		json_record(x->f, MS__EV_INPUT, &m->inputs[i], true);
	}
	fputs("],\"links\":[", x->f);
	for (uint32_t i = 0; i < m->nlinks; i++) {
		if (i)
			fputc(',', x->f);
		json_record(x->f, MS__EV_LINK, &m->links[i], true);
	}
	/* The decided batches as merge_batch holds them (the first
	 * MS_MERGE_BATCH_RECS; "batches" counts all). */
	fputs("],\"batch\":[", x->f);
	const ms_merge_sampling *s = &m->sampling;
	for (uint32_t i = 0;
	     i < s->nbatch_recs && i < MS_MERGE_BATCH_RECS; i++) {
		const ms_merge_batch *b = &s->batch[i];
		fprintf(x->f,
		        "%s{\"idx\":%u,\"charged_bytes\":%llu,\"traces\":%u,"
		        "\"evaluated\":%u,\"reason\":",
		        i ? "," : "", i, (unsigned long long)b->charged_bytes,
		        b->traces, b->evaluated);
		ms__json_str(x->f, ms_flush_reason_name(
		                           (enum ms_flush_reason)b->reason));
		fputc('}', x->f);
	}
	fputs("]}\n", x->f);
	x->n++;
	return 0;
}

/* A CSV field: quoted when it holds a comma, quote, CR or LF. Valid
 * UTF-8 as the JSON is (ms__json_str): a byte that does not begin a
 * well-formed sequence becomes U+FFFD (EF BF BD), one for each such
 * byte, so a spreadsheet or a UTF-8 reader takes the file whole. */
static void
csv_text(FILE *f, const char *s)
{
	bool quote = strpbrk(s, ",\"\r\n") != NULL;
	if (quote)
		fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		size_t n = utf8_len(p);
		if (n == 0) {
			fputs("\xef\xbf\xbd", f);
			continue;
		}
		if (*p == '"')
			fputc('"', f);
		fwrite(p, 1, n, f);
		p += n - 1;
	}
	if (quote)
		fputc('"', f);
}

static void
csv_header(FILE *f)
{
	size_t n = ms__ev_ncols(MS__EV_MERGE);
	ms_ev_merge z;
	memset(&z, 0, sizeof(z));
	for (size_t i = 0; i < n; i++) {
		ms__ev_val v;
		ms__ev_value(MS__EV_MERGE, i, &z, &v);
		fputs(v.name, f);
		fputc(',', f);
	}
	fputs("input_ids\r\n", f);
}

static int
csv_merge(void *ctx, const ms_ev_merge *m)
{
	struct exp *x = ctx;
	if (stream_failed(x))
		return MS_ERR_IO;
	size_t n = ms__ev_ncols(MS__EV_MERGE);
	for (size_t i = 0; i < n; i++) {
		ms__ev_val v;
		ms__ev_value(MS__EV_MERGE, i, m, &v);
		switch (v.type) {
		case MS__EV_TEXT:
			csv_text(x->f, v.s ? v.s : "");
			break;
		case MS__EV_BOOL:
			fputs(v.i ? "1" : "0", x->f);
			break;
		default:
			if (ms__col_kind(v.name) == MS__COL_PART_ID)
				fprintf(x->f, "%016llx",
				        (unsigned long long)val_bits(&v));
			else if (v.type == MS__EV_REAL && !isfinite(v.d))
				; /* no value: an empty field, as an empty
				   * text is (JSON's null is no CSV) */
			else
				ms__json_val(x->f, &v);
		}
		fputc(',', x->f);
	}
	for (size_t i = 0; i < m->ninputs; i++)
		fprintf(x->f, "%s%016llx", i ? " " : "",
		        (unsigned long long)m->inputs[i].id);
	fputs("\r\n", x->f);
	x->n++;
	return 0;
}

/* ---- Chrome ----------------------------------------------------------- */

#define PID_WALL 1
#define PID_LOGICAL 2

static int
lane_index(const char *lane)
{
	if (strcmp(lane, MS_LANE_FAST) == 0)
		return 0;
	if (strcmp(lane, MS_LANE_SLOW) == 0)
		return 1;
	if (strcmp(lane, MS_LANE_FINALIZE) == 0)
		return 2;
	return 3;
}

/* The track of a merge's lane worker: tid 10 + 10^6 x lane + worker, one
 * for every worker of every lane (a tid stays within 32 bits, which
 * trace viewers read it as); NULL without memory. */
static struct track *
track_for(struct exp *x, const ms_ev_merge *m)
{
	long long tid = 10 + 1000000LL * lane_index(m->lane) +
	                (long long)(m->worker % 1000000);
	for (size_t i = 0; i < x->ntracks; i++)
		if (x->tracks[i].tid == tid)
			return &x->tracks[i];
	if (MS__GROW_FOR(x->tracks, x->tcap, x->ntracks + 1, 16, &x->oom,
	                 "the lane workers' tracks"))
		return NULL;
	struct track *t = &x->tracks[x->ntracks++];
	t->tid = tid;
	snprintf(t->name, sizeof(t->name), "%s #%u", m->lane[0] ? m->lane : "?",
	         m->worker);
	return t;
}

static double
us_of(struct exp *x, int64_t logical_ns)
{
	return (double)(logical_ns - x->origin_ns) / 1000.0;
}

static void
chrome_counter(FILE *f, int pid, const char *name, const char *key, double ts,
               uint64_t v)
{
	fprintf(f, ",\n{\"ph\":\"C\",\"pid\":%d,\"tid\":0,\"name\":", pid);
	ms__json_str(f, name);
	fprintf(f, ",\"ts\":%.3f,\"args\":{\"%s\":%llu}}", ts, key,
	        (unsigned long long)v);
}

static int
chrome_merge(void *ctx, const ms_ev_merge *m)
{
	struct exp *x = ctx;
	if (stream_failed(x))
		return MS_ERR_IO;
	FILE *f = x->f;
	struct track *t = track_for(x, m);
	if (!t)
		return MS_ERR_NOMEM;
	double ts = (double)m->wall_start_ns / 1000.0;
	double dur = (double)m->wall_ns / 1000.0;
	fprintf(f,
	        ",\n{\"ph\":\"X\",\"pid\":%d,\"tid\":%lld,\"ts\":%.3f,"
	        "\"dur\":%.3f,\"name\":\"merge #%llu %s\",\"cat\":",
	        PID_WALL, t->tid, ts, dur, (unsigned long long)m->seq,
	        ms_ev_class_name(m->sampling.klass));
	ms__json_str(f, m->lane);
	fprintf(f, ",\"args\":{\"seq\":%llu,\"lane\":",
	        (unsigned long long)m->seq);
	ms__json_str(f, m->lane);
	fprintf(f,
	        ",\"worker\":%u,"
	        "\"phase\":\"%s\",\"class\":\"%s\",\"reason\":\"%s\","
	        "\"logical_ns\":\"%lld\",\"logical_s\":%.6f,"
	        "\"inputs\":%zu,\"input_ids\":[",
	        m->worker, ms_ev_phase_name(m->phase),
	        ms_ev_class_name(m->sampling.klass),
	        ms_ev_reason_name(m->sampling.reason), (long long)m->logical_ns,
	        us_of(x, m->logical_ns) / 1e6, m->ninputs);
	for (size_t i = 0; i < m->ninputs; i++)
		fprintf(f, "%s\"%016llx\"", i ? "," : "",
		        (unsigned long long)m->inputs[i].id);
	fprintf(f,
	        "],\"input_bytes\":%llu,"
	        "\"input_rows\":%llu,\"mature_parts\":%u,\"hot_parts\":%u,"
	        "\"max_depth\":%u,\"output_id\":\"%016llx\","
	        "\"output_bytes\":%llu,\"traces_evaluated\":%llu,"
	        "\"traces_dropped\":%llu,\"plugin_calls\":%llu,"
	        "\"wall_ms\":%.3f,\"cpu_ms\":%.3f,\"queue_ms\":%.3f,"
	        "\"alloc_bytes\":%llu,\"alloc_count\":%llu,"
	        "\"peak_live\":%lld,\"rss_peak\":%llu,\"bytes_read\":%llu,"
	        "\"bytes_written\":%llu,\"err\":%d",
	        (unsigned long long)m->input_bytes,
	        (unsigned long long)m->input_rows, m->mature_parts,
	        m->hot_parts, m->max_depth, (unsigned long long)m->output.id,
	        (unsigned long long)m->output.compressed_bytes,
	        (unsigned long long)m->sampling.traces_evaluated,
	        (unsigned long long)m->sampling.traces_dropped,
	        (unsigned long long)m->sampling.plugin_calls,
	        (double)m->wall_ns / 1e6, (double)m->cpu_ns / 1e6,
	        (double)m->queue_ns / 1e6, (unsigned long long)m->alloc_bytes,
	        (unsigned long long)m->alloc_count, (long long)m->peak_live,
	        (unsigned long long)m->rss_peak,
	        (unsigned long long)m->bytes_read,
	        (unsigned long long)m->bytes_written, m->err);
	if (m->err) { /* a failed merge says why */
		fputs(",\"error\":", f);
		ms__json_str(f, m->error);
	}
	fputs("}}", f);
	if (m->sampling.peak_staged_bytes) {
		/* One counter per lane worker: merges staging at once on
		 * two workers do not reset each other's. */
		char name[64];
		snprintf(name, sizeof(name), "staged bytes %s", t->name);
		chrome_counter(f, PID_WALL, name, "bytes", ts,
		               m->sampling.peak_staged_bytes);
		chrome_counter(f, PID_WALL, name, "bytes", ts + dur, 0);
	}
	if (!m->err) {
		chrome_counter(f, PID_WALL, "inventory parts", "parts",
		               ts + dur, m->inv_parts);
		chrome_counter(f, PID_WALL, "inventory bytes", "bytes",
		               ts + dur, m->inv_bytes);
		/* The logical day's inventory changes with merges too: the
		 * cooldown's and the finalize's come after the last
		 * publication, so without these the day would end on the
		 * inventory before them. */
		double lts = us_of(x, m->logical_ns);
		chrome_counter(f, PID_LOGICAL, "inventory parts", "parts", lts,
		               m->inv_parts);
		chrome_counter(f, PID_LOGICAL, "inventory bytes", "bytes", lts,
		               m->inv_bytes);
	}
	x->n++;
	return 0;
}

struct pubs {
	ms_ev_pub *v;
	size_t n, cap;
	int64_t min_logical;
	ms__oom oom; /* the allocation that failed */
};

static int
collect_pub(void *ctx, const ms_ev_pub *p)
{
	struct pubs *ps = ctx;
	if (MS__GROW_FOR(ps->v, ps->cap, ps->n + 1, 256, &ps->oom,
	                 "the publications"))
		return MS_ERR_NOMEM;
	ps->v[ps->n++] = *p;
	if (ps->n == 1 || p->logical_ns < ps->min_logical)
		ps->min_logical = p->logical_ns;
	return 0;
}

static int
first_merge(void *ctx, const ms_ev_merge *m)
{
	*(int64_t *)ctx = m->logical_ns;
	return 1; /* stop */
}

/* The wall and logical range of the merges a filter passes. */
struct range {
	bool any;
	int64_t wall_lo, wall_hi, log_lo, log_hi;
};

static int
widen(void *ctx, const ms_ev_merge *m)
{
	struct range *r = ctx;
	int64_t w0 = m->wall_start_ns, w1 = m->wall_start_ns + m->wall_ns;
	if (!r->any) {
		r->wall_lo = w0;
		r->wall_hi = w1;
		r->log_lo = r->log_hi = m->logical_ns;
		r->any = true;
		return 0;
	}
	r->wall_lo = w0 < r->wall_lo ? w0 : r->wall_lo;
	r->wall_hi = w1 > r->wall_hi ? w1 : r->wall_hi;
	r->log_lo = m->logical_ns < r->log_lo ? m->logical_ns : r->log_lo;
	r->log_hi = m->logical_ns > r->log_hi ? m->logical_ns : r->log_hi;
	return 0;
}

static void
chrome_pub(struct exp *x, const ms_ev_pub *p, int pid, double ts)
{
	FILE *f = x->f;
	fprintf(f,
	        ",\n{\"ph\":\"i\",\"s\":\"t\",\"pid\":%d,\"tid\":1,"
	        "\"ts\":%.3f,\"name\":\"publish %016llx\","
	        "\"args\":{\"seq\":%llu,\"part_id\":\"%016llx\","
	        "\"logical_ns\":\"%lld\",\"wall_ms\":%.3f,"
	        "\"bytes\":%llu,\"rows\":%llu,\"epoch\":%llu,"
	        "\"publish_ms\":%.3f,\"idle_ms\":%.3f,"
	        "\"merges\":%llu}}",
	        pid, ts, (unsigned long long)p->part_id,
	        (unsigned long long)p->seq, (unsigned long long)p->part_id,
	        (long long)p->logical_ns, (double)p->wall_ns / 1e6,
	        (unsigned long long)p->bytes, (unsigned long long)p->rows,
	        (unsigned long long)p->epoch, (double)p->publish_ns / 1e6,
	        (double)p->idle_ns / 1e6, (unsigned long long)p->merges);
	chrome_counter(f, pid, "inventory parts", "parts", ts, p->inv_parts);
	chrome_counter(f, pid, "inventory bytes", "bytes", ts, p->inv_bytes);
}

static void
chrome_meta(FILE *f, int pid, long long tid, const char *what,
            const char *name)
{
	fprintf(f,
	        ",\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%lld,\"name\":\"%s\","
	        "\"args\":{\"name\":",
	        pid, tid, what);
	ms__json_str(f, name);
	fputs("}}", f);
}

static int
export_chrome(ms_evdb *db, const ms_ev_filter *flt, struct exp *x,
              ms_errbuf *eb)
{
	FILE *f = x->f;
	struct pubs ps = { 0 };
	struct range rg = { 0 };
	int rc = ms_evdb_each_pub(db, collect_pub, &ps, eb);
	if (rc == MS_ERR_NOMEM && ps.oom.what)
		rc = ms__oom_fail(eb, &ps.oom, "export of %s",
		                  ms_evdb_path(db));
	int64_t first = 0;
	if (rc == 0) {
		int r2 = ms_evdb_each_merge(db, NULL, first_merge, &first, eb);
		if (r2 < 0)
			rc = r2;
		else if (r2 == 0)
			first = ps.n ? ps.min_logical : 0;
	}
	if (rc == 0 && flt)
		rc = ms_evdb_each_merge(db, flt, widen, &rg, eb);
	ms_ev_run run;
	if (rc == 0)
		rc = ms_evdb_run(db, &run, NULL, NULL, eb);
	if (rc < 0) {
		free(ps.v);
		return rc;
	}
	x->origin_ns = ps.n && ps.min_logical < first ? ps.min_logical : first;

	fprintf(f,
	        "{\"displayTimeUnit\":\"ms\",\"otherData\":{"
	        "\"clock\":\"pid %d: wall microseconds since the run "
	        "started; pid %d: logical microseconds since "
	        "logical_origin_unix_ns\","
	        "\"logical_origin_unix_ns\":\"%lld\",\"filtered\":%s,"
	        "\"variant\":",
	        PID_WALL, PID_LOGICAL, (long long)x->origin_ns,
	        flt ? "true" : "false");
	ms__json_str(f, run.variant);
	fputs(",\"fixture\":", f);
	ms__json_str(f, run.fixture_dir);
	fputs("},\"traceEvents\":[\n", f);
	char pname[MS_EV_NAME_MAX + 48];
	snprintf(pname, sizeof(pname), "mergescope %s (wall)", run.variant);
	fprintf(f,
	        "{\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"name\":"
	        "\"process_name\",\"args\":{\"name\":",
	        PID_WALL);
	ms__json_str(f, pname);
	fputs("}}", f);
	snprintf(pname, sizeof(pname), "mergescope %s (logical day)",
	         run.variant);
	chrome_meta(f, PID_LOGICAL, 0, "process_name", pname);
	chrome_meta(f, PID_WALL, 1, "thread_name", "publications");
	chrome_meta(f, PID_LOGICAL, 1, "thread_name", "publications");
	for (size_t i = 0; i < ps.n; i++) {
		const ms_ev_pub *p = &ps.v[i];
		if (!flt || (rg.any && p->wall_ns >= rg.wall_lo &&
		             p->wall_ns <= rg.wall_hi))
			chrome_pub(x, p, PID_WALL, (double)p->wall_ns / 1000.0);
		if (!flt || (rg.any && p->logical_ns >= rg.log_lo &&
		             p->logical_ns <= rg.log_hi))
			chrome_pub(x, p, PID_LOGICAL, us_of(x, p->logical_ns));
	}
	rc = ms_evdb_each_merge(db, flt, chrome_merge, x, eb);
	if (rc == MS_ERR_NOMEM && x->oom.what)
		rc = ms__oom_fail(eb, &x->oom, "export of %s",
		                  ms_evdb_path(db));
	for (size_t i = 0; rc == 0 && i < x->ntracks; i++) {
		chrome_meta(f, PID_WALL, x->tracks[i].tid, "thread_name",
		            x->tracks[i].name);
		fprintf(f,
		        ",\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%lld,\"name\":"
		        "\"thread_sort_index\",\"args\":{\"sort_index\":%lld}}",
		        PID_WALL, x->tracks[i].tid, x->tracks[i].tid);
	}
	fputs("\n]}\n", f);
	free(ps.v);
	free(x->tracks);
	x->tracks = NULL;
	return rc;
}

void
ms__c_numeric_begin(ms__c_numeric *n)
{
	locale_t c = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
	n->c = c;
	n->old = c ? uselocale(c) : NULL;
}

void
ms__c_numeric_end(ms__c_numeric *n)
{
	if (!n->c)
		return;
	uselocale((locale_t)n->old);
	freelocale((locale_t)n->c);
	n->c = NULL;
}

static int export_c(ms_evdb *db, enum ms_export_format fmt,
                    const ms_ev_filter *f, FILE *out, uint64_t *written,
                    ms_errbuf *eb);

int
ms_export(ms_evdb *db, enum ms_export_format fmt, const ms_ev_filter *f,
          FILE *out, uint64_t *written, ms_errbuf *eb)
{
	ms__c_numeric cn;
	ms__c_numeric_begin(&cn);
	int rc = export_c(db, fmt, f, out, written, eb);
	ms__c_numeric_end(&cn);
	return rc;
}

/* ms_export in the C numeric locale. */
static int
export_c(ms_evdb *db, enum ms_export_format fmt, const ms_ev_filter *f,
         FILE *out, uint64_t *written, ms_errbuf *eb)
{
	struct exp x;
	memset(&x, 0, sizeof(x));
	x.f = out;
	if (written)
		*written = 0;
	int rc;
	switch (fmt) {
	case MS_EXPORT_JSONL:
		rc = ms_evdb_each_merge(db, f, jsonl_merge, &x, eb);
		break;
	case MS_EXPORT_CSV:
		csv_header(out);
		rc = ms_evdb_each_merge(db, f, csv_merge, &x, eb);
		break;
	case MS_EXPORT_CHROME:
		rc = export_chrome(db, f, &x, eb);
		break;
	default:
		return ms_fail(eb, MS_ERR_INVAL,
		               "export: unknown format %d; expected jsonl, "
		               "csv or chrome",
		               (int)fmt);
	}
	/* A stream that failed keeps its buffer: this flush fails again
	 * with the reason (also when the walk stopped for it). */
	errno = 0;
	if ((rc == 0 || ferror(out)) && (fflush(out) != 0 || ferror(out))) {
		int e = errno;
		rc = ms_fail(eb, e ? ms_err_from_errno(e) : MS_ERR_IO,
		             "export of %s: write failed%s%s",
		             ms_evdb_path(db), e ? ": " : "",
		             e ? strerror(e) : "");
	}
	if (written)
		*written = x.n;
	return rc;
}

/* Whether a and b name one directory entry: the same file when both
 * exist, else the same name in the same directory (so a file not made
 * yet, such as a database's -wal, is recognised too). */
static bool
same_entry(const char *a, const char *b)
{
	struct stat sa, sb;
	bool ea = stat(a, &sa) == 0, eb = stat(b, &sb) == 0;
	if (ea && eb)
		return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
	if (ea != eb)
		return false;
	const char *ba = strrchr(a, '/'), *bb = strrchr(b, '/');
	const char *na = ba ? ba + 1 : a, *nb = bb ? bb + 1 : b;
	if (strcmp(na, nb) != 0)
		return false;
	char da[4096], db[4096];
	snprintf(da, sizeof(da), "%.*s", ba ? (int)(ba - a) + 1 : 1,
	         ba ? a : ".");
	snprintf(db, sizeof(db), "%.*s", bb ? (int)(bb - b) + 1 : 1,
	         bb ? b : ".");
	return stat(da, &sa) == 0 && stat(db, &sb) == 0 &&
	       sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

bool
ms_evdb_path_is_db(const char *db_path, const char *path)
{
	static const char *const companions[] = { "", "-wal", "-shm",
		                                  "-journal" };
	if (!db_path || !path || !*db_path || !*path)
		return false;
	char f[4200];
	for (size_t i = 0; i < sizeof(companions) / sizeof(companions[0]);
	     i++) {
		int n = snprintf(f, sizeof(f), "%s%s", db_path, companions[i]);
		if (n > 0 && (size_t)n < sizeof(f) && same_entry(path, f))
			return true;
	}
	return false;
}

int
ms_export_file(ms_evdb *db, enum ms_export_format fmt, const ms_ev_filter *f,
               const char *path, bool force, uint64_t *written, ms_errbuf *eb)
{
	if (ms_evdb_path_is_db(ms_evdb_path(db), path))
		return ms_fail(eb, MS_ERR_INVAL,
		               "%s: that is the event database being "
		               "exported or a file SQLite keeps beside it "
		               "(-wal, -shm, -journal); choose another file",
		               path);
	ms_outfile *o = NULL;
	int rc = ms_outfile_open(&o, path, force, eb);
	if (rc)
		return rc;
	rc = ms_export(db, fmt, f, ms_outfile_stream(o), written, eb);
	if (rc == 0)
		return ms_outfile_commit(o, eb);
	return ms_outfile_fail(o, rc, eb);
}
