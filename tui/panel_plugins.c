/*
 * panel_plugins.c - one line per link of the sampler chain: Decide calls,
 * traces decided, total time in Decide, mean nanoseconds per trace, the
 * slowest call, the call-latency histogram as 13 bars, and how often the
 * link failed open (error / timeout / bad verdict), with OPEN when its
 * circuit has opened. While a sampled merge runs, a last line says what
 * it has done so far (the counters above move with it), or that it is
 * staging before its first Decide call. A chain longer
 * than the box scrolls to the selected link, and the title says which
 * links show.
 */
#include "tui_int.h"

#include <inttypes.h>
#include <stdio.h>

int
ms__plugins_rows(const ms_tui_view *v, int inner_h)
{
	int rows = inner_h - 1; /* the header */
	if (v->live.present && (int)v->nplugins >= rows && rows > 1)
		rows--;
	return rows > 0 ? rows : 0;
}

size_t
ms__plugins_top(const ms_tui_view *v, int rows)
{
	if (rows > 0 && v->ui.plugin_sel >= (size_t)rows)
		return v->ui.plugin_sel - (size_t)rows + 1;
	return 0;
}

/* The merge in progress, on the line after the links shown when there
 * is one. */
static void
draw_live(ms_canvas *c, ms_rect in, int y, const ms_tui_view *v)
{
	const ms_tui_live *l = &v->live;
	if (!l->present || y >= in.y + in.h)
		return;
	char calls[32], tr[32], dns[32], wall[32], line[256];
	ms_fmt_count(calls, sizeof(calls), l->calls);
	ms_fmt_count(tr, sizeof(tr), l->traces);
	ms_fmt_ns(dns, sizeof(dns), l->decide_ns);
	ms_fmt_ns(wall, sizeof(wall),
	          l->wall_ns > 0 ? (uint64_t)l->wall_ns : 0);
	const char *more = l->inflight > 1 ? " (more in flight)" : "";
	if (l->calls == 0) {
		/* Staging its first batch: "in Decide: 0 calls" was not
		 * what it was doing. */
		int n = snprintf(line, sizeof(line),
		                 "merge #%" PRIu64 " staging, no Decide call "
		                 "yet, %s since dispatch%s",
		                 l->seq, wall, more);
		if (n > in.w)
			snprintf(line, sizeof(line),
			         "merge #%" PRIu64 " staging, no Decide call "
			         "yet, %s elapsed%s",
			         l->seq, wall,
			         l->inflight > 1 ? " (more)" : "");
		ms_canvas_text(c, in.x, y, in.w, line, MS_C_ACCENT);
		return;
	}
	/* One call, one batch's traces: "1 calls" read as a slip. */
	const char *cs = l->calls == 1 ? "" : "s";
	const char *ts = l->traces == 1 ? "" : "s";
	int len =
	        snprintf(line, sizeof(line),
	                 "merge #%" PRIu64 " in Decide: %s call%s, %s trace%s, "
	                 "%s in Decide, %s since dispatch%s",
	                 l->seq, calls, cs, tr, ts, dns, wall, more);
	/* Narrower: the same figures, fewer words. */
	if (len > in.w)
		snprintf(line, sizeof(line),
		         "merge #%" PRIu64
		         " in Decide: %s call%s, %s trace%s, %s, "
		         "%s elapsed%s",
		         l->seq, calls, cs, tr, ts, dns, wall,
		         l->inflight > 1 ? " (more)" : "");
	ms_canvas_text(c, in.x, y, in.w, line, MS_C_ACCENT);
}

static void
draw(ms_canvas *c, ms_rect r, const ms_tui_view *v)
{
	bool focus = v->ui.focus == MS_FOCUS_PLUGINS;
	/* Process hosts are named: their times include the round trip. */
	const char *where = v->plugin_process ? " in host processes" : "";
	char title[96];
	snprintf(title, sizeof(title), "Plugins%s", where);
	ms_rect in = ms_canvas_box(c, r, title, focus);
	if (in.h < 1)
		return;
	int rows = ms__plugins_rows(v, in.h);
	size_t top = ms__plugins_top(v, rows);
	size_t end = top + (size_t)rows < v->nplugins ? top + (size_t)rows
	                                              : v->nplugins;
	if (top > 0 || end < v->nplugins) {
		snprintf(title, sizeof(title),
		         "Plugins%s %zu links, %zu-%zu shown", where,
		         v->nplugins, top + 1, end);
		in = ms_canvas_box(c, r, title, focus);
	}
	if (v->nplugins == 0) {
		ms_canvas_text(c, in.x, in.y, in.w,
		               "no sampler links (pipeline disabled)",
		               MS_C_MUTED);
		return;
	}
	/* 77 columns in all: the panel's width at 200 columns. */
	ms_canvas_printf(c, in.x, in.y, in.w, MS_C_MUTED | MS_A_UL,
	                 "%-12s %6s %7s %8s %6s %8s %-13s %s", "link", "calls",
	                 "traces", "total", "ns/tr", "max", "histogram",
	                 "fail e/t/v");
	for (size_t i = top; i < end; i++) {
		const ms_tui_plugin *p = &v->plugins[i];
		int y = in.y + 1 + (int)(i - top);
		char calls[32], tr[32], tot[32], mean[32], mx[32];
		/* As `mergescope report` gives it: one decimal (44.7, not
		 * the 44 a division of integers gave); rounded from 1000. */
		double m =
		        p->traces ? (double)p->total_ns / (double)p->traces : 0;
		snprintf(mean, sizeof(mean),
		         m > 0 && m < 999.95 ? "%.1f" : "%.0f", m);
		int x = in.x +
		        ms_canvas_printf(
		                c, in.x, y, in.w, 0,
		                "%-12.12s %6s %7s %8s %6s %8s ", p->name,
		                ms_fmt_count(calls, sizeof(calls), p->calls),
		                ms_fmt_count(tr, sizeof(tr), p->traces),
		                ms_fmt_ns(tot, sizeof(tot), p->total_ns), mean,
		                ms_fmt_ns(mx, sizeof(mx), p->max_ns));
		uint64_t hmax = 0;
		for (int b = 0; b < MS_VIEW_HIST; b++)
			if (p->hist[b] > hmax)
				hmax = p->hist[b];
		for (int b = 0; b < MS_VIEW_HIST; b++) {
			int level =
			        hmax ? (int)((p->hist[b] * 7 + hmax - 1) / hmax)
			             : 0;
			uint32_t g = p->hist[b] ? ms_spark_glyph(c, level)
			                        : (uint32_t)' ';
			ms_canvas_put(c, x + b, y, g, MS_C_ACCENT);
		}
		x += MS_VIEW_HIST + 1;
		uint64_t fo = p->failopen_error + p->failopen_timeout +
		              p->failopen_verdict;
		x += ms_canvas_printf(
		        c, x, y, in.x + in.w - x,
		        (uint16_t)(fo ? MS_C_ALERT | MS_A_BOLD : 0),
		        "%" PRIu64 "/%" PRIu64 "/%" PRIu64, p->failopen_error,
		        p->failopen_timeout, p->failopen_verdict);
		if (p->circuit_open)
			ms_canvas_text(c, x, y, in.x + in.w - x, " OPEN",
			               MS_C_ALERT | MS_A_BOLD | MS_A_REV);
		if (focus && i == v->ui.plugin_sel)
			ms_canvas_attr(c, in.x, y, in.w, MS_A_REV);
	}
	draw_live(c, in, in.y + 1 + (int)(end - top), v);
}

const ms_panel_class ms_panel_plugins = {
	.name = "plugins",
	.title = "Plugins",
	.slot = MS_PANEL_PLUGINS,
	.draw = draw,
};
