/*
 * panel_selection.c - the selection waiting at a dispatch barrier: its
 * merge number and lane, how many inputs are mature and hot (and their
 * rows), the predicted sampling classification (and, when it samples, the
 * staging plan it will make), the frontier it was judged against, then the
 * inputs themselves. Without one, it says so and how to get to one.
 */
#include "tui_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* Without a selection: say so, and how to get to one (after the end,
 * by starting the day again); with breakpoints set, how many (it said
 * "b sets one" under a --break). */
static void
draw_none(ms_canvas *c, ms_rect in, const ms_tui_view *v)
{
	bool done = v->state == MS_VIEW_DONE;
	size_t on = 0;
	for (size_t i = 0; i < v->nbreaks; i++)
		on += v->breaks[i].enabled;
	char how[64];
	if (on)
		snprintf(how, sizeof(how), "%zu set, b lists them", on);
	else if (v->nbreaks)
		snprintf(how, sizeof(how), "none enabled: b lists them");
	else
		snprintf(how, sizeof(how), "b sets one (e.g. \"mature\")");
	ms_canvas_text(c, in.x, in.y, in.w, "none pending", MS_C_MUTED);
	if (in.h >= 3)
		ms_canvas_text(c, in.x, in.y + 2, in.w,
		               done ? "the day is over: r runs it again"
		                    : "] runs to the next breakpoint,",
		               MS_C_MUTED);
	if (in.h >= 4)
		ms_canvas_text(c, in.x, in.y + 3, in.w,
		               done ? "with the same breakpoints" : how,
		               MS_C_MUTED);
}

/* Line y: the inputs, their bytes and rows, the lane; narrow, the rows
 * are left out so the lane stays. */
static void
draw_size(ms_canvas *c, ms_rect in, int y, const ms_tui_selection *s)
{
	char b[32], n[32], rest[96];
	int x = in.x;
	x += ms_canvas_printf(c, x, y, in.w, MS_A_BOLD, "%zu inputs ",
	                      s->inputs_total);
	ms_fmt_bytes(b, sizeof(b), s->bytes);
	int len = snprintf(rest, sizeof(rest), "%s %s rows  lane %s", b,
	                   ms_fmt_count(n, sizeof(n), s->rows), s->lane);
	if (len > in.x + in.w - x)
		snprintf(rest, sizeof(rest), "%s  lane %s", b, s->lane);
	ms_canvas_text(c, x, y, in.x + in.w - x, rest, 0);
}

/* Line y: how many inputs are mature and hot, and their rows (narrow,
 * the counts alone). */
static void
draw_maturity(ms_canvas *c, ms_rect in, int y, const ms_tui_selection *s)
{
	char mr[32], hr[32], m[64], h[64];
	ms_fmt_count(mr, sizeof(mr), s->mature_rows);
	ms_fmt_count(hr, sizeof(hr), s->hot_rows);
	int lm = snprintf(m, sizeof(m), "mature %u (%s rows)", s->mature_count,
	                  mr);
	int lh = snprintf(h, sizeof(h), "  hot %u (%s rows)", s->hot_count, hr);
	if (lm + lh > in.w) {
		snprintf(m, sizeof(m), "mature %u", s->mature_count);
		snprintf(h, sizeof(h), "  hot %u", s->hot_count);
	}
	int x = in.x;
	x += ms_canvas_text(
	        c, x, y, in.w, m,
	        (uint16_t)(s->mature_count ? MS_C_WARN | MS_A_BOLD : 0));
	ms_canvas_text(c, x, y, in.x + in.w - x, h,
	               (uint16_t)(s->hot_count ? MS_C_HOT | MS_A_BOLD : 0));
}

/* Line y: the predicted sampling classification and its reason; where
 * that does not fit (80 columns: "predicted not_executed (merge_grace)"
 * is 36 wide, the panel 32; it read "pred not_executed (merge_grace)"),
 * the reason on the next line when split allows it and there is one
 * before end. Else the reason is
 * left out, never cut: the caller allows no split only when the bypass
 * line ("5 hot, first matures ...") says why. Returns the lines used. */
static int
draw_predicted(ms_canvas *c, ms_rect in, int y, int end, bool split,
               const ms_tui_selection *s)
{
	size_t len = strlen("predicted ") + strlen(s->predicted) +
	             (s->reason[0] ? strlen(s->reason) + 3 : 0);
	int x = in.x +
	        ms_canvas_text(c, in.x, y, in.w, "predicted ", MS_C_MUTED);
	x += ms_canvas_text(
	        c, x, y, in.x + in.w - x, s->predicted,
	        (uint16_t)(ms__class_attr(s->predicted, false) | MS_A_BOLD));
	if (!s->reason[0])
		return 1;
	if (len <= (size_t)in.w) {
		ms_canvas_printf(c, x, y, in.x + in.w - x, 0, " (%s)",
		                 s->reason);
		return 1;
	}
	if (!split || y + 1 >= end ||
	    strlen("reason ") + strlen(s->reason) > (size_t)in.w)
		return 1;
	x = in.x + ms_canvas_text(c, in.x, y + 1, in.w, "reason ", MS_C_MUTED);
	ms_canvas_text(c, x, y + 1, in.x + in.w - x, s->reason, 0);
	return 2;
}

/* Line y, when sampling is bypassed for the merge grace: until when. An
 * input is hot until the frontier (now - grace) passes its newest row,
 * so it matures at max_ts + grace. False when there is nothing to say. */
static bool
bypass_times(const ms_tui_selection *s, int64_t *oldest, int64_t *newest)
{
	size_t hot = 0;
	*oldest = *newest = 0;
	for (size_t i = 0; i < s->ninputs; i++) {
		const ms_tui_part *p = &s->inputs[i];
		if (p->mature)
			continue;
		if (hot++ == 0 || p->max_ts < *oldest)
			*oldest = p->max_ts;
		if (p->max_ts > *newest)
			*newest = p->max_ts;
	}
	return hot && strcmp(s->reason, "merge_grace") == 0;
}

/* The bypass line: the most it can say in w columns, both times first
 * ("bypassed (5 hot): oldest matures 07:12:30, all 07:55:00"), in
 * fewer words, then without "bypassed" (the prediction above says it),
 * then with the first time only: at 100 and 132 columns it gave the
 * first only, with room for both. One time when all mature together. */
static void
bypass_line(char *line, size_t n, int w, unsigned hot, const char *t1,
            const char *t2)
{
	if (strcmp(t1, t2) == 0) {
		if (snprintf(line, n, "bypassed: %u hot, all mature %s", hot,
		             t1) > w)
			snprintf(line, n, "%u hot, all mature %s", hot, t1);
		return;
	}
	if (snprintf(line, n, "bypassed (%u hot): oldest matures %s, all %s",
	             hot, t1, t2) <= w ||
	    snprintf(line, n, "bypassed: %u hot, mature %s to %s", hot, t1,
	             t2) <= w ||
	    snprintf(line, n, "%u hot, mature %s to %s", hot, t1, t2) <= w ||
	    snprintf(line, n, "%u hot, first matures %s", hot, t1) <= w)
		return;
	/* "+1d 01:00:00" at 80 columns */
	snprintf(line, n, "%u hot, 1st mature %s", hot, t1);
}

static bool
draw_bypass(ms_canvas *c, ms_rect in, int y, const ms_tui_view *v)
{
	const ms_tui_selection *s = &v->sel;
	int64_t oldest, newest;
	if (!bypass_times(s, &oldest, &newest))
		return false;
	int64_t grace = v->now - v->frontier;
	char t1[32], t2[32], line[128];
	ms_fmt_clock(t1, sizeof(t1), oldest + grace, v->day_start);
	ms_fmt_clock(t2, sizeof(t2), newest + grace, v->day_start);
	bypass_line(line, sizeof(line), in.w, s->hot_count, t1, t2);
	ms_canvas_text(c, in.x, y, in.w, line, MS_C_HOT);
	return true;
}

/* Line y, when the merge is predicted to sample: the staging plan it
 * will make, in words (the estimated staged bytes, the planned decision
 * batches and the preferred limit of a batch, the estimate over the
 * batches: "will stage ~160M in 3 batches of ~53.4M"), shorter where
 * that does not fit; never "est 160M 3x pref 53.4M", which read as a
 * riddle. False when there is none. */
static bool
draw_plan(ms_canvas *c, ms_rect in, int y, const ms_tui_selection *s)
{
	if (!s->plan_batches)
		return false;
	char e[32], p[32], each[48] = "", line[128];
	ms_fmt_bytes(e, sizeof(e), s->plan_estimate);
	ms_fmt_bytes(p, sizeof(p), s->plan_preferred);
	const char *unit = s->plan_batches == 1 ? "batch" : "batches";
	/* One batch is the whole estimate: its size says nothing more. */
	if (s->plan_batches > 1)
		snprintf(each, sizeof(each), " of ~%s", p);
	uint64_t n = s->plan_batches;
	int len = snprintf(line, sizeof(line),
	                   "will stage ~%s in %" PRIu64 " %s%s", e, n, unit,
	                   each);
	if (len > in.w)
		len = snprintf(line, sizeof(line),
		               "stages ~%s in %" PRIu64 " %s%s", e, n, unit,
		               each);
	if (len > in.w)
		len = snprintf(line, sizeof(line),
		               "stages ~%s in %" PRIu64 " %s", e, n, unit);
	if (len > in.w)
		snprintf(line, sizeof(line), "~%s in %" PRIu64 " %s", e, n,
		         unit);
	ms_canvas_text(c, in.x, y, in.w, line, MS_C_ACCENT);
	return true;
}

/* From line y to end: the inputs' header, then one input a line. What
 * does not fit (or is not kept) ends the list as "... N more", never cut
 * without a word; with room for one line only, that line says it. The
 * header comes only with an input under it: with two lines and more than
 * one input, an input and the "more" line (a header and "... N more"
 * read as an empty list). */
static void
draw_inputs(ms_canvas *c, ms_rect in, int y, int end, const ms_tui_selection *s)
{
	char b[32], n[32];
	bool narrow = in.w < 37; /* leave out the rows column */
	size_t total =
	        s->inputs_total > s->ninputs ? s->inputs_total : s->ninputs;
	if (y == end - 1 && total > 0) {
		ms_canvas_printf(c, in.x, y, in.w, MS_C_MUTED, "... %zu more",
		                 total);
		return;
	}
	bool header = end - y >= 3 || total <= 1;
	if (!header)
		y--; /* the first input on line y */
	else if (narrow)
		ms_canvas_printf(c, in.x, y, in.w, MS_C_MUTED | MS_A_UL,
		                 "%-16s %7s %2s %1s", "input", "bytes", "d",
		                 "s");
	else
		ms_canvas_printf(c, in.x, y, in.w, MS_C_MUTED | MS_A_UL,
		                 "%-16s %7s %7s %2s %1s", "input", "bytes",
		                 "rows", "d", "s");
	for (size_t i = 0; i < total && ++y < end; i++) {
		if (i == s->ninputs || (y == end - 1 && i + 1 < total)) {
			ms_canvas_printf(c, in.x, y, in.w, MS_C_MUTED,
			                 "... %zu more", total - i);
			break;
		}
		const ms_tui_part *p = &s->inputs[i];
		ms_fmt_bytes(b, sizeof(b), p->bytes);
		ms_fmt_count(n, sizeof(n), p->rows);
		int x;
		if (narrow)
			x = in.x + ms_canvas_printf(c, in.x, y, in.w, 0,
			                            "%016" PRIx64 " %7s %2u ",
			                            p->id, b, p->depth);
		else
			x = in.x + ms_canvas_printf(c, in.x, y, in.w, 0,
			                            "%016" PRIx64
			                            " %7s %7s %2u ",
			                            p->id, b, n, p->depth);
		ms_canvas_text(c, x, y, in.x + in.w - x, p->mature ? "M" : "H",
		               (uint16_t)(MS_A_BOLD |
		                          (p->mature ? MS_C_WARN : MS_C_HOT)));
	}
}

static void
draw(ms_canvas *c, ms_rect r, const ms_tui_view *v)
{
	const ms_tui_selection *s = &v->sel;
	char title[64], fr[32];
	if (s->present)
		snprintf(title, sizeof(title), "Pending selection #%" PRIu64,
		         s->seq);
	else
		snprintf(title, sizeof(title), "Pending selection");
	/* Never drawn as focused: it takes no keys, and a second focused
	 * border would hide which panel does. */
	ms_rect in = ms_canvas_box(c, r, title, false);
	if (in.h < 1)
		return;
	if (!s->present) {
		draw_none(c, in, v);
		return;
	}
	int y = in.y, end = in.y + in.h;
	draw_size(c, in, y, s);
	if (++y >= end)
		return;
	draw_maturity(c, in, y, s);
	if (++y >= end)
		return;
	/* The reason on a line of its own (where it does not fit beside
	 * the class) unless that leaves no room for an input above "...
	 * N more", when the bypass line that follows says why. */
	int64_t o, n;
	bool bypass = bypass_times(s, &o, &n);
	int after = (bypass || s->plan_batches ? 1 : 0) + 1 + 2;
	y += draw_predicted(c, in, y, end, !bypass || end - y - 2 >= after, s);
	if (y >= end)
		return;
	if ((draw_bypass(c, in, y, v) || draw_plan(c, in, y, s)) && ++y >= end)
		return;
	ms_fmt_clock(fr, sizeof(fr), s->frontier, v->day_start);
	char line[96];
	if (snprintf(line, sizeof(line), "frontier %s  max depth %u", fr,
	             s->max_depth) > in.w)
		snprintf(line, sizeof(line), "frontier %s  depth %u", fr,
		         s->max_depth);
	ms_canvas_text(c, in.x, y, in.w, line, 0);
	if (++y >= end)
		return;
	draw_inputs(c, in, y, end, s);
}

const ms_panel_class ms_panel_selection = {
	.name = "selection",
	.title = "Pending selection",
	.slot = MS_PANEL_SELECTION,
	.draw = draw,
};
