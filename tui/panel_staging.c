/*
 * panel_staging.c - staged bytes of the sampling pipeline: live and peak
 * against the preferred limit (adaptive, per merge) and the hard ceiling,
 * as figures and as a gauge scaled to the hard ceiling, then a sparkline
 * of the peak staged bytes of recent merges.
 *
 * Gauge glyphs: solid up to live, shaded from live to peak, `|` at the
 * preferred limit; the gauge turns to the alert colour when live passes
 * the preferred limit. Until a merge has sampled there is no preferred
 * limit: it reads "-" and the gauge has no mark. A run with no sampler
 * has no ceiling either, and the panel says so instead.
 */
#include "tui_int.h"

#include <stdio.h>

static void
gauge(ms_canvas *c, int x, int y, int w, const ms_tui_staging *s)
{
	uint64_t scale = s->hard;
	if (scale == 0)
		scale = s->peak > s->preferred ? s->peak : s->preferred;
	if (scale == 0)
		scale = 1;
	int live = (int)((double)s->live / (double)scale * w + 0.5);
	int peak = (int)((double)s->peak / (double)scale * w + 0.5);
	int pref = s->preferred
	                   ? (int)((double)s->preferred / (double)scale * w)
	                   : -1;
	uint16_t fa =
	        s->preferred && s->live > s->preferred ? MS_C_ALERT : MS_C_OK;
	for (int i = 0; i < w; i++) {
		if (i < live)
			ms_canvas_put(c, x + i, y, ms_glyph(c, MS_G_FULL), fa);
		else if (i < peak)
			ms_canvas_put(c, x + i, y, ms_glyph(c, MS_G_SHADE),
			              MS_C_WARN);
		else
			ms_canvas_put(c, x + i, y, c->ascii ? '.' : 0x00b7,
			              MS_C_MUTED);
	}
	if (pref >= 0) {
		if (pref >= w)
			pref = w - 1;
		ms_canvas_put(c, x + pref, y, '|', MS_C_ACCENT | MS_A_BOLD);
	}
}

static void
draw(ms_canvas *c, ms_rect r, const ms_tui_view *v)
{
	const ms_tui_staging *s = &v->staging;
	ms_rect in = ms_canvas_box(c, r, "Staging", false);
	if (in.h < 1)
		return;
	/* No hard ceiling: the run has no sampler (the disabled variant),
	 * and nothing is ever staged. It read "hard 0B" over an empty
	 * gauge, as if the limit were nothing. */
	if (s->hard == 0 && s->peak == 0) {
		ms_canvas_wrap(c, in.x, in.y, in.w,
		               "no sampler in this run: nothing is staged",
		               MS_C_MUTED);
		return;
	}
	char l[32], p[32], pr[32], h[32];
	ms_fmt_bytes(l, sizeof(l), s->live);
	ms_fmt_bytes(p, sizeof(p), s->peak);
	/* No preferred limit before the first merge that samples sets one
	 * (the gauge has no mark then): "-", not a limit of "0B". */
	if (s->preferred)
		ms_fmt_bytes(pr, sizeof(pr), s->preferred);
	else
		snprintf(pr, sizeof(pr), "-");
	ms_fmt_bytes(h, sizeof(h), s->hard);
	int y = in.y, end = in.y + in.h;
	if (in.w >= 60 || in.h < 4) {
		ms_canvas_printf(c, in.x, y++, in.w, 0,
		                 "live %s  peak %s  preferred %s  hard %s", l,
		                 p, pr, h);
	} else {
		ms_canvas_printf(c, in.x, y++, in.w, 0, "live %s  peak %s", l,
		                 p);
		ms_canvas_printf(c, in.x, y++, in.w, 0, "pref %s  hard %s", pr,
		                 h);
	}
	if (y >= end)
		return;
	gauge(c, in.x, y++, in.w, s);
	if (y >= end)
		return;

	/* Sparkline of recent merges' peaks, newest at the right. */
	int lw = ms_canvas_text(c, in.x, y, in.w, "recent ", MS_C_MUTED);
	int room = in.w - lw;
	size_t n = s->nspark < MS_VIEW_SPARK ? s->nspark : MS_VIEW_SPARK;
	size_t first = n > (size_t)room ? n - (size_t)room : 0;
	uint64_t max = 0;
	for (size_t i = first; i < n; i++)
		if (s->spark[i] > max)
			max = s->spark[i];
	if (n == 0) {
		ms_canvas_text(c, in.x + lw, y, room, "no merges yet",
		               MS_C_MUTED);
		return;
	}
	/* None of them staged a byte (on the default day every merge
	 * before the finalize bypasses sampling): said in words, where a
	 * row of the lowest bars read as small peaks. */
	static const char none[] = "merges staged nothing";
	if (max == 0 && ms_canvas_cols(none) <= room) {
		ms_canvas_text(c, in.x + lw, y, room, none, MS_C_MUTED);
		return;
	}
	for (size_t i = first; i < n; i++) {
		int level = max ? (int)((s->spark[i] * 7 + max - 1) / max) : 0;
		ms_canvas_put(c, in.x + lw + (int)(i - first), y,
		              ms_spark_glyph(c, level), MS_C_ACCENT);
	}
}

const ms_panel_class ms_panel_staging = {
	.name = "staging",
	.title = "Staging",
	.slot = MS_PANEL_STAGING,
	.draw = draw,
};
