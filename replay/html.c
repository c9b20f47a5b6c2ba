/*
 * html.c - the run report as one self-contained HTML file: inline SVG
 * charts (merges per lane worker on the wall-clock timeline, inventory
 * parts and bytes over the logical day, staged bytes per merge, the
 * plugins' Decide latency histogram), then the text report (phase tables,
 * figures, gates) and, with a second run, the comparison tables. No
 * script, no style sheet, no image or font from anywhere else: the file
 * opens offline. Every element is closed (void elements self-close), so
 * the file also parses as XML.
 */
#include "ev_private.h"
#include "grow.h"
#include "labels.h"
#include "ms_replay_events.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define W 960.0 /* chart width, px */
#define H 220.0 /* chart height, px */
#define PAD 48.0

void
ms__html_esc(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '&':
			fputs("&amp;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		default:
			fputc(*s, f);
		}
	}
}

typedef struct pt {
	double x, y;
} pt;

#define TRACK_LANE 1000000LL /* a lane's tracks: lane x this + worker */

typedef struct mrg {
	uint64_t seq;
	long long track; /* lane * TRACK_LANE + worker */
	double start_s, dur_s, staged_mib;
	char label[160];
} mrg;

/* The inventory after a publication (kind 0) or a merge (kind 1), at
 * its logical time. */
typedef struct invpt {
	int64_t logical_ns;
	int kind;
	uint64_t seq, parts, bytes;
} invpt;

typedef struct hctx {
	mrg *m;
	size_t nm, mcap;
	invpt *inv;
	size_t ninv, icap;
	size_t npubs;
	pt *parts, *bytes; /* the inventory points in logical order */
	size_t np;
	uint64_t hist[MS_EV_LINKS_MAX * 2][MS_EV_HIST_BUCKETS];
	char links[MS_EV_LINKS_MAX * 2][MS__LINK_LABEL_MAX];
	size_t nlinks;
	ms__oom oom; /* the allocation that failed */
} hctx;

static int
lane_no(const char *lane)
{
	if (strcmp(lane, "fast") == 0)
		return 0;
	if (strcmp(lane, "slow") == 0)
		return 1;
	if (strcmp(lane, "finalize") == 0)
		return 2;
	return 3;
}

static int
take_inv(hctx *c, int64_t logical_ns, int kind, uint64_t seq, uint64_t parts,
         uint64_t bytes)
{
	if (MS__GROW_FOR(c->inv, c->icap, c->ninv + 1, 256, &c->oom,
	                 "the inventory points"))
		return MS_ERR_NOMEM;
	c->inv[c->ninv++] = (invpt){ logical_ns, kind, seq, parts, bytes };
	return 0;
}

static int
take_merge(void *ctx, const ms_ev_merge *m)
{
	hctx *c = ctx;
	if (MS__GROW_FOR(c->m, c->mcap, c->nm + 1, 256, &c->oom, "the merges"))
		return MS_ERR_NOMEM;
	/* A merge changes the inventory as a publication does: the
	 * cooldown's and the finalize's come after the last
	 * publication. */
	if (!m->err && take_inv(c, m->logical_ns, 1, m->seq, m->inv_parts,
	                        m->inv_bytes))
		return MS_ERR_NOMEM;
	mrg *x = &c->m[c->nm++];
	x->seq = m->seq;
	x->track = lane_no(m->lane) * TRACK_LANE +
	           (long long)(m->worker % TRACK_LANE);
	x->start_s = (double)m->wall_start_ns / 1e9;
	x->dur_s = (double)m->wall_ns / 1e9;
	x->staged_mib = (double)m->sampling.peak_staged_bytes / 1048576.0;
	snprintf(x->label, sizeof(x->label),
	         "merge #%llu %s #%u %s: %u inputs, %.3f ms%s",
	         (unsigned long long)m->seq, m->lane, m->worker,
	         ms_ev_class_name(m->sampling.klass), (unsigned)m->ninputs,
	         (double)m->wall_ns / 1e6, m->err ? ", failed" : "");
	for (uint32_t i = 0; i < m->nlinks; i++) {
		char label[MS__LINK_LABEL_MAX];
		ms__ev_link_label(m, i, label, sizeof(label));
		size_t k = 0;
		while (k < c->nlinks && strcmp(c->links[k], label))
			k++;
		if (k == c->nlinks) {
			if (c->nlinks == MS_EV_LINKS_MAX * 2)
				continue;
			snprintf(c->links[c->nlinks++], MS__LINK_LABEL_MAX,
			         "%s", label);
		}
		for (int b = 0; b < MS_EV_HIST_BUCKETS; b++)
			c->hist[k][b] += m->links[i].hist[b];
	}
	return 0;
}

static int
take_pub(void *ctx, const ms_ev_pub *p)
{
	hctx *c = ctx;
	c->npubs++;
	return take_inv(c, p->logical_ns, 0, p->seq, p->inv_parts,
	                p->inv_bytes);
}

/* Logical time, then a publication before the merges it triggered, then
 * in recorded order. */
static int
cmp_inv(const void *a, const void *b)
{
	const invpt *x = a, *y = b;
	if (x->logical_ns != y->logical_ns)
		return x->logical_ns < y->logical_ns ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind - y->kind;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

/* The inventory points in logical order, in hours from the first. */
static int
inv_series(hctx *c)
{
	if (c->ninv == 0)
		return 0;
	qsort(c->inv, c->ninv, sizeof(*c->inv), cmp_inv);
	c->parts = calloc(c->ninv, sizeof(*c->parts));
	c->bytes = calloc(c->ninv, sizeof(*c->bytes));
	if (!c->parts || !c->bytes)
		return ms__oom_note(&c->oom, "the inventory charts",
		                    c->ninv * sizeof(*c->parts));
	int64_t t0 = c->inv[0].logical_ns;
	for (size_t i = 0; i < c->ninv; i++) {
		double h = (double)(c->inv[i].logical_ns - t0) / 3.6e12;
		c->parts[i] = (pt){ h, (double)c->inv[i].parts };
		c->bytes[i] = (pt){ h, (double)c->inv[i].bytes / 1048576.0 };
	}
	c->np = c->ninv;
	return 0;
}

static double
max_y(const pt *v, size_t n)
{
	double m = 0;
	for (size_t i = 0; i < n; i++)
		m = v[i].y > m ? v[i].y : m;
	return m > 0 ? m : 1;
}

static double
max_x(const pt *v, size_t n)
{
	double m = 0;
	for (size_t i = 0; i < n; i++)
		m = v[i].x > m ? v[i].x : m;
	return m > 0 ? m : 1;
}

static void
svg_open(FILE *f, const char *id, const char *title, double h)
{
	fprintf(f,
	        "<h2>%s</h2>\n<svg id=\"%s\" "
	        "xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
	        "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\">\n"
	        "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" "
	        "fill=\"#fff\" stroke=\"#ccc\"/>\n",
	        title, id, W, h, W, h, W, h);
}

static void
axis_labels(FILE *f, double h, const char *x0, const char *x1, const char *ytop)
{
	fprintf(f,
	        "<text x=\"%.0f\" y=\"%.0f\" font-size=\"11\">%s</text>\n"
	        "<text x=\"%.0f\" y=\"%.0f\" font-size=\"11\" "
	        "text-anchor=\"end\">%s</text>\n"
	        "<text x=\"4\" y=\"%.0f\" font-size=\"11\">%s</text>\n",
	        PAD, h - 6, x0, W - 8, h - 6, x1, PAD - 30, ytop);
}

/* A polyline of v scaled into the chart; the points carry the data. */
static void
line_chart(FILE *f, const char *id, const char *title, const pt *v, size_t n,
           const char *xunit, const char *yunit)
{
	svg_open(f, id, title, H);
	double mx = max_x(v, n), my = max_y(v, n);
	fprintf(f, "<polyline class=\"series\" fill=\"none\" "
	           "stroke=\"#2a6\" stroke-width=\"1.5\" points=\"");
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s%.1f,%.1f", i ? " " : "",
		        PAD + (W - 2 * PAD) * v[i].x / mx,
		        H - PAD + 20 - (H - 2 * PAD) * v[i].y / my);
	fputs("\"/>\n", f);
	char a[64], b[64], c[64];
	snprintf(a, sizeof(a), "0 %s", xunit);
	snprintf(b, sizeof(b), "%.1f %s", mx, xunit);
	snprintf(c, sizeof(c), "max %.1f %s", my, yunit);
	axis_labels(f, H, a, b, c);
	fputs("</svg>\n", f);
}

static int
cmp_track(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;
	return (x > y) - (x < y);
}

/* One row per lane worker, however many; MS_ERR_NOMEM (noted in c->oom)
 * when the rows cannot be held. */
static int
timeline(FILE *f, hctx *c)
{
	size_t bytes = (c->nm ? c->nm : 1) * sizeof(long long);
	long long *tracks = malloc(bytes);
	if (!tracks)
		return ms__oom_note(&c->oom, "the timeline's rows", bytes);
	size_t nt = 0;
	double end = 0;
	for (size_t i = 0; i < c->nm; i++) {
		const mrg *m = &c->m[i];
		bool seen = false;
		for (size_t k = 0; k < nt && !seen; k++)
			seen = tracks[k] == m->track;
		if (!seen)
			tracks[nt++] = m->track;
		if (m->start_s + m->dur_s > end)
			end = m->start_s + m->dur_s;
	}
	qsort(tracks, nt, sizeof(*tracks), cmp_track);
	double row = 26, h = PAD + row * (double)(nt ? nt : 1) + 20;
	svg_open(f, "timeline", "Merges per lane worker (wall clock)", h);
	static const char *const lanes[] = { "fast", "slow", "finalize",
		                             "other" };
	static const char *const colors[] = { "#37c", "#c73", "#7a3", "#888" };
	for (size_t k = 0; k < nt; k++)
		fprintf(f,
		        "<text x=\"4\" y=\"%.0f\" font-size=\"11\">%s #%lld"
		        "</text>\n",
		        PAD + row * (double)k + 15,
		        lanes[tracks[k] / TRACK_LANE % 4], tracks[k] % TRACK_LANE);
	double scale = end > 0 ? (W - PAD - 70) / end : 1;
	for (size_t i = 0; i < c->nm; i++) {
		const mrg *m = &c->m[i];
		size_t k = 0;
		while (k < nt && tracks[k] != m->track)
			k++;
		double w = m->dur_s * scale;
		fprintf(f,
		        "<rect class=\"merge\" x=\"%.2f\" y=\"%.0f\" "
		        "width=\"%.2f\" height=\"18\" fill=\"%s\"><title>",
		        70 + m->start_s * scale, PAD + row * (double)k,
		        w < 0.5 ? 0.5 : w, colors[m->track / TRACK_LANE % 4]);
		ms__html_esc(f, m->label);
		fputs("</title></rect>\n", f);
	}
	char b[64];
	snprintf(b, sizeof(b), "%.3f s", end);
	axis_labels(f, h, "0 s", b, "");
	fputs("</svg>\n", f);
	free(tracks);
	return 0;
}

static void
staged(FILE *f, const hctx *c)
{
	pt *v = malloc((c->nm ? c->nm : 1) * sizeof(*v));
	if (!v)
		return;
	for (size_t i = 0; i < c->nm; i++)
		v[i] = (pt){ c->m[i].start_s, c->m[i].staged_mib };
	line_chart(f, "staged", "Peak staged bytes per merge (at its start)", v,
	           c->nm, "s", "MiB");
	free(v);
}

static void
latency(FILE *f, const hctx *c)
{
	if (!c->nlinks)
		return;
	double bh = 160, h = bh + PAD + 20;
	svg_open(f, "latency", "Decide latency (calls per bucket)", h);
	uint64_t mx = 1;
	for (size_t k = 0; k < c->nlinks; k++)
		for (int b = 0; b < MS_EV_HIST_BUCKETS; b++)
			mx = c->hist[k][b] > mx ? c->hist[k][b] : mx;
	double gw = (W - PAD * 2) / MS_EV_HIST_BUCKETS;
	double bw = (gw - 6) / (double)c->nlinks;
	static const char *const colors[] = { "#37c", "#c73", "#7a3", "#a3a" };
	for (int b = 0; b < MS_EV_HIST_BUCKETS; b++) {
		for (size_t k = 0; k < c->nlinks; k++) {
			double y = bh * (double)c->hist[k][b] / (double)mx;
			fprintf(f,
			        "<rect class=\"bucket\" x=\"%.1f\" y=\"%.1f\" "
			        "width=\"%.1f\" height=\"%.1f\" fill=\"%s\">"
			        "<title>",
			        PAD + gw * b + bw * (double)k, 20 + bh - y, bw,
			        y, colors[k % 4]);
			ms__html_esc(f, c->links[k]);
			fprintf(f, ": %llu calls</title></rect>\n",
			        (unsigned long long)c->hist[k][b]);
		}
		char lab[16];
		if (b < MS_EV_HIST_BUCKETS - 1)
			snprintf(lab, sizeof(lab), "&#8804;%g",
			         ms_ev_hist_bounds_ms[b]);
		else
			snprintf(lab, sizeof(lab), "&gt;1000");
		fprintf(f,
		        "<text x=\"%.1f\" y=\"%.0f\" font-size=\"10\">%s"
		        "</text>\n",
		        PAD + gw * b, h - 24, lab);
	}
	for (size_t k = 0; k < c->nlinks; k++) {
		fprintf(f,
		        "<text x=\"%.0f\" y=\"14\" font-size=\"11\" "
		        "fill=\"%s\">",
		        PAD + 120.0 * (double)k, colors[k % 4]);
		ms__html_esc(f, c->links[k]);
		fputs("</text>\n", f);
	}
	fprintf(f,
	        "<text x=\"%.0f\" y=\"%.0f\" font-size=\"11\" "
	        "text-anchor=\"end\">ms</text>\n</svg>\n",
	        W - 8, h - 6);
}

/* The text of fn(db...) as an escaped <pre>. */
static int
pre_of(FILE *f, const char *id,
       int (*fn)(ms_evdb *, FILE *, unsigned *, ms_errbuf *), ms_evdb *db,
       ms_errbuf *eb)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	if (!m)
		return ms_fail(eb, MS_ERR_NOMEM,
		               "html report of %s: out of memory for the "
		               "%s text",
		               ms_evdb_path(db), id);
	unsigned failed = 0;
	int rc = fn(db, m, &failed, eb);
	fclose(m);
	if (rc == 0) {
		fprintf(f, "<pre id=\"%s\">", id);
		ms__html_esc(f, buf);
		fputs("</pre>\n", f);
	}
	free(buf);
	return rc;
}

int
ms_report_html(ms_evdb *db, ms_evdb *vs, FILE *f, ms_errbuf *eb)
{
	hctx c;
	memset(&c, 0, sizeof(c));
	ms_ev_run run;
	int rc = ms_evdb_run(db, &run, NULL, NULL, eb);
	if (rc == 0)
		rc = ms_evdb_each_merge(db, NULL, take_merge, &c, eb);
	if (rc == 0)
		rc = ms_evdb_each_pub(db, take_pub, &c, eb);
	if (rc == 0)
		rc = inv_series(&c);
	if (rc == 0) {
		fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"
		      "<meta charset=\"utf-8\"/>\n<title>mergescope ",
		      f);
		ms__html_esc(f, run.variant);
		fputs(" run report</title>\n</head>\n<body style=\"font-family:"
		      "sans-serif;margin:16px\">\n<h1>mergescope run report: ",
		      f);
		ms__html_esc(f, run.variant);
		fputs("</h1>\n<p>", f);
		ms__html_esc(f, ms_evdb_path(db));
		fprintf(f, " &#8212; %zu merges, %zu publications</p>\n", c.nm,
		        c.npubs);
		rc = timeline(f, &c);
	}
	/* A walk's message stands; the callbacks' allocations are noted. */
	if (rc == MS_ERR_NOMEM && c.oom.what)
		rc = ms__oom_fail(eb, &c.oom, "html report of %s",
		                  ms_evdb_path(db));
	if (rc == 0) {
		line_chart(f, "inv_parts", "Inventory parts over the day",
		           c.parts, c.np, "h", "parts");
		line_chart(f, "inv_bytes", "Inventory bytes over the day",
		           c.bytes, c.np, "h", "MiB");
		staged(f, &c);
		latency(f, &c);
		fputs("<h2>Report</h2>\n", f);
		rc = pre_of(f, "report", ms_report_text, db, eb);
	}
	if (rc == 0 && vs) {
		char *buf = NULL;
		size_t len = 0;
		FILE *m = open_memstream(&buf, &len);
		bool mismatch = false;
		rc = m ? ms_report_compare(db, vs, m, &mismatch, eb)
		       : ms_fail(eb, MS_ERR_NOMEM,
		                 "html report of %s: out of memory for the "
		                 "comparison text",
		                 ms_evdb_path(db));
		if (m)
			fclose(m);
		if (rc == 0) {
			fputs("<h2>Against ", f);
			ms__html_esc(f, ms_evdb_path(vs));
			fputs("</h2>\n<pre id=\"compare\">", f);
			ms__html_esc(f, buf);
			fputs("</pre>\n", f);
		}
		free(buf);
	}
	if (rc == 0)
		fputs("</body>\n</html>\n", f);
	free(c.m);
	free(c.inv);
	free(c.parts);
	free(c.bytes);
	if (rc == 0 && ferror(f))
		rc = ms_fail(eb, MS_ERR_IO, "html report: write failed");
	return rc;
}
