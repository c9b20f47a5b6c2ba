/*
 * bench_html.c - a bench series as one self-contained HTML file: per phase
 * and metric a box plot per variant (whiskers at min and max, the box
 * from the first to the third quartile, a bar at the median, one dot per
 * valid run), then the summary table and the runs left out with their
 * reasons. Inline SVG only, every element closed: it opens offline and
 * parses as XML, like the run report (html.c).
 *
 * Quartiles interpolate linearly between the sorted values (the common
 * "type 7" definition); the table's p95 stays nearest-rank (ms_bench.h).
 */
#include "ev_private.h"
#include "ms_bench.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define BW 960.0   /* plot width, px */
#define ROW 28.0   /* height per variant */
#define LEFT 150.0 /* room for the variant names */
#define RIGHT 24.0

static int
cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Quantile q of sorted v[0..n), n > 0, by linear interpolation. */
static double
quantile(const double *v, size_t n, double q)
{
	double pos = q * (double)(n - 1);
	size_t i = (size_t)pos;
	if (i + 1 >= n)
		return v[n - 1];
	return v[i] + (pos - (double)i) * (v[i + 1] - v[i]);
}

/* The valid values of metric m in phase p for variant vi, sorted (a run
 * without a figure for m, NaN, has none). */
static size_t
values(const ms_bench_run *runs, size_t n, unsigned p, unsigned m, unsigned vi,
       double *out)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (runs[i].valid && runs[i].variant == vi &&
		    !isnan(runs[i].m[p][m]))
			out[k++] = runs[i].m[p][m];
	qsort(out, k, sizeof(*out), cmp_d);
	return k;
}

static void
box_plot(FILE *f, const ms_bench_run *runs, size_t n, const char *const *labels,
         size_t nv, unsigned p, unsigned m, double *buf)
{
	double lo = 0, hi = 0;
	bool any = false;
	for (unsigned vi = 0; vi < nv; vi++) {
		size_t k = values(runs, n, p, m, vi, buf);
		if (k == 0)
			continue;
		if (!any || buf[0] < lo)
			lo = buf[0];
		if (!any || buf[k - 1] > hi)
			hi = buf[k - 1];
		any = true;
	}
	const char *key = ms_bench_metric_key((enum ms_bench_metric)m);
	if (!any) {
		/* Said, rather than a plot of figures no run has (the
		 * cgroup's peak of runs without a cgroup). */
		fprintf(f,
		        "<h3>%s: %s</h3>\n<p id=\"box-%s-%s\" "
		        "class=\"no-figure\">no valid run has this "
		        "figure</p>\n",
		        ms_bench_row_name(p), key,
		        ms_bench_row_name(p), key);
		return;
	}
	double span = hi > lo ? hi - lo : (hi != 0 ? hi * 0.1 : 1);
	lo -= span * 0.05;
	hi += span * 0.05;
	double h = ROW * (double)nv + 34;
	fprintf(f,
	        "<h3>%s: %s</h3>\n<svg id=\"box-%s-%s\" "
	        "xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
	        "height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\">\n"
	        "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" "
	        "fill=\"#fff\" stroke=\"#ccc\"/>\n",
	        ms_bench_row_name(p), key,
	        ms_bench_row_name(p), key, BW, h, BW, h, BW,
	        h);
#define X(v) (LEFT + (BW - LEFT - RIGHT) * ((v)-lo) / (hi - lo))
	for (unsigned vi = 0; vi < nv; vi++) {
		size_t k = values(runs, n, p, m, vi, buf);
		double y = 14 + ROW * vi + ROW / 2;
		fprintf(f, "<text x=\"6\" y=\"%.1f\" font-size=\"12\">", y + 4);
		ms__html_esc(f, labels[vi]);
		fputs("</text>\n", f);
		if (k == 0)
			continue;
		double q1 = quantile(buf, k, 0.25), q3 = quantile(buf, k, 0.75);
		double med = quantile(buf, k, 0.5);
		fprintf(f,
		        "<g class=\"box\" data-variant=\"%u\" data-n=\"%zu\" "
		        "data-min=\"%.6g\" data-q1=\"%.6g\" "
		        "data-median=\"%.6g\" data-q3=\"%.6g\" "
		        "data-max=\"%.6g\">\n"
		        "<title>n %zu  min %.6g  q1 %.6g  median %.6g  q3 "
		        "%.6g  max %.6g</title>\n"
		        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
		        "stroke=\"#555\"/>\n"
		        "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
		        "height=\"%.1f\" fill=\"#cde\" stroke=\"#357\"/>\n"
		        "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
		        "stroke=\"#c33\" stroke-width=\"2\"/>\n",
		        vi, k, buf[0], q1, med, q3, buf[k - 1], k, buf[0], q1,
		        med, q3, buf[k - 1], X(buf[0]), y, X(buf[k - 1]), y,
		        X(q1), y - 8, X(q3) - X(q1) > 1 ? X(q3) - X(q1) : 1,
		        16.0, X(med), y - 9, X(med), y + 9);
		for (size_t i = 0; i < k; i++)
			fprintf(f,
			        "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" "
			        "fill=\"#222\"/>\n",
			        X(buf[i]), y);
		fputs("</g>\n", f);
	}
	fprintf(f,
	        "<text x=\"%.0f\" y=\"%.0f\" font-size=\"11\">%.6g</text>\n"
	        "<text x=\"%.0f\" y=\"%.0f\" font-size=\"11\" "
	        "text-anchor=\"end\">%.6g</text>\n</svg>\n",
	        LEFT, h - 6, lo, BW - RIGHT, h - 6, hi);
#undef X
}

int
ms_bench_html(const ms_bench_run *runs, size_t n, const char *const *labels,
              size_t nvariants, const char *title, FILE *f, ms_errbuf *eb)
{
	size_t bytes = (n ? n : 1) * sizeof(double);
	double *buf = malloc(bytes);
	if (!buf)
		return ms_fail(eb, MS_ERR_NOMEM,
		               "bench html: out of memory for the figures of "
		               "%zu runs (%zu bytes)",
		               n, bytes);
	char *table = NULL;
	size_t tlen = 0;
	FILE *m = open_memstream(&table, &tlen);
	if (!m) {
		free(buf);
		return ms_fail(eb, MS_ERR_NOMEM,
		               "bench html: out of memory for the summary "
		               "table");
	}
	int rc = ms_bench_summary(runs, n, labels, nvariants, m, NULL, eb);
	fclose(m);
	if (rc == 0) {
		size_t valid = 0;
		for (size_t i = 0; i < n; i++)
			valid += runs[i].valid;
		fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"
		      "<meta charset=\"utf-8\"/>\n<title>mergescope bench "
		      "series</title>\n</head>\n<body style=\"font-family:"
		      "sans-serif;margin:16px\">\n<h1>mergescope bench series"
		      "</h1>\n<p>",
		      f);
		ms__html_esc(f, title);
		fprintf(f,
		        " &#8212; %zu runs, %zu valid, %zu variants; boxes "
		        "from the first to the third quartile, whiskers at "
		        "min and max, the median in red, a dot per run</p>\n",
		        n, valid, nvariants);
		for (unsigned p = 0; p < MS_BENCH_ROWS; p++) {
			fprintf(f, "<h2>%s</h2>\n", ms_bench_row_name(p));
			for (unsigned k = 0; k < MS_BM_COUNT; k++)
				if (ms_bench_row_has(p,
				                     (enum ms_bench_metric)k))
					box_plot(f, runs, n, labels, nvariants,
					         p, k, buf);
		}
		fputs("<h2>Summary</h2>\n<pre id=\"summary\">", f);
		ms__html_esc(f, table);
		fputs("</pre>\n</body>\n</html>\n", f);
		if (ferror(f))
			rc = ms_fail(eb, MS_ERR_IO, "bench html: write failed");
	}
	free(buf);
	free(table);
	return rc;
}
