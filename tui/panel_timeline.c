/*
 * panel_timeline.c - the parts on the day's time axis.
 *
 * Each active part is a horizontal span from its min to its max timestamp,
 * packed into as few lines as possible (first line where it does not touch
 * the previous span). Spans of mature parts are drawn heavy, hot ones
 * light, inputs of the pending selection as solid blocks; the frontier is a
 * vertical line through every line, and the bottom line is the hour axis.
 * Parts that do not fit in the lines available are counted in the title,
 * and so, zoomed, are those outside the window.
 * `z`/`Z` zoom from the whole day to 6 h and 1 h windows around now
 * (ui.zoom), which move with the replay.
 */
#include "tui_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LANES 64

static int
col_of(int64_t t, int64_t t0, int64_t t1, ms_rect in)
{
	if (t1 <= t0)
		return in.x;
	double f = (double)(t - t0) / (double)(t1 - t0);
	if (f < 0)
		f = 0;
	if (f > 1)
		f = 1;
	return in.x + (int)(f * (in.w - 1) + 0.5);
}

static int
by_start(const void *pa, const void *pb)
{
	const ms_tui_part *a = *(const ms_tui_part *const *)pa;
	const ms_tui_part *b = *(const ms_tui_part *const *)pb;
	if (a->min_ts != b->min_ts)
		return a->min_ts < b->min_ts ? -1 : 1;
	return a->id < b->id ? -1 : a->id > b->id;
}

static int day_hours(int64_t t0, int64_t t1);
static void axis_day(ms_canvas *c, ms_rect in, int ay, int64_t t0, int64_t t1,
                     int fx);
static void axis_zoomed(ms_canvas *c, ms_rect in, int ay, int64_t t0,
                        int64_t t1, int64_t day_start, int fx);

static void
draw(ms_canvas *c, ms_rect r, const ms_tui_view *v)
{
	char title[160], fr[32], now[32];
	int64_t t0 = v->day_start;
	int64_t t1 = v->day_end > t0 ? v->day_end : t0 + 86400000000000LL;
	int64_t span = ms__timeline_span(v->ui.zoom);
	bool zoomed = v->ui.zoom > 0;
	/* The time shown: between publications, as far as the run's wait
	 * for the next has got (as the status line's). */
	int64_t now_t = v->now + v->now_ahead;
	int64_t front = v->frontier + v->now_ahead;
	if (zoomed) {
		/* A window around now that moves with it: now three quarters
		 * across, the frontier (2 h back) in view at 6 h. */
		t0 = now_t - span * 3 / 4;
		t1 = t0 + span;
	}
	ms_rect in = { r.x + 1, r.y + 1, r.w - 2, r.h - 2 };
	int lanes = in.h - 1;
	if (lanes > MAX_LANES)
		lanes = MAX_LANES;
	int lane_end[MAX_LANES];
	for (int i = 0; i < MAX_LANES; i++)
		lane_end[i] = -1;

	/* Draw spans first (into the inner area), then the box and title. */
	size_t hidden = 0, outside = 0;
	const ms_tui_part *order[MS_VIEW_MAX_PARTS];
	size_t np =
	        v->nparts < MS_VIEW_MAX_PARTS ? v->nparts : MS_VIEW_MAX_PARTS;
	for (size_t k = 0; k < np; k++)
		order[k] = &v->parts[k];
	qsort(order, np, sizeof(order[0]), by_start);
	for (size_t k = 0; k < np && lanes > 0; k++) {
		const ms_tui_part *p = order[k];
		if (zoomed && (p->max_ts < t0 || p->min_ts > t1)) {
			outside++; /* counted in the title */
			continue;
		}
		int x0 = col_of(p->min_ts, t0, t1, in);
		int x1 = col_of(p->max_ts, t0, t1, in);
		int lane = 0;
		while (lane < lanes && lane_end[lane] >= x0)
			lane++;
		if (lane == lanes) {
			hidden++;
			continue;
		}
		lane_end[lane] = x1 + 1; /* keep one column between spans */
		uint32_t g;
		uint16_t a;
		if (p->pending) {
			g = ms_glyph(c, MS_G_FULL);
			a = MS_C_ACCENT | MS_A_BOLD;
		} else if (p->mature) {
			g = ms_glyph(c, MS_G_SPAN);
			a = MS_C_WARN;
		} else {
			g = ms_glyph(c, MS_G_HLINE);
			a = MS_C_HOT;
		}
		for (int x = x0; x <= x1; x++)
			ms_canvas_put(c, x, in.y + lane, g, a);
	}
	hidden += v->parts_total > v->nparts ? v->parts_total - v->nparts : 0;

	/* Hour axis: ticks every 1, 2, 3 or 6 hours, whatever fits. */
	int ay = in.y + in.h - 1;
	for (int x = in.x; x < in.x + in.w; x++)
		ms_canvas_put(c, x, ay, ms_glyph(c, MS_G_HLINE), MS_C_MUTED);
	/* The frontier line, over everything (when it is in the window). */
	bool frontier_shown = front >= t0 && front <= t1;
	int fx = frontier_shown ? col_of(front, t0, t1, in) : -1;
	if (zoomed)
		axis_zoomed(c, in, ay, t0, t1, v->day_start, fx);
	else
		axis_day(c, in, ay, t0, t1, fx);
	if (frontier_shown) {
		for (int y = in.y; y < in.y + in.h; y++)
			ms_canvas_put(c, fx, y, ms_glyph(c, MS_G_FRONT),
			              MS_C_ALERT | MS_A_BOLD);
	}
	bool now_on_axis = now_t >= t0 && now_t <= t1;

	char whole[16];
	snprintf(whole, sizeof(whole), "%dh", day_hours(t0, t1));
	snprintf(title, sizeof(title), "Timeline %s frontier %s  now %s",
	         zoomed ? (v->ui.zoom == 1 ? "6h" : "1h") : whole,
	         ms_fmt_clock(fr, sizeof(fr), front, v->day_start),
	         ms_fmt_clock(now, sizeof(now), now_t, v->day_start));
	if (hidden) {
		size_t l = strlen(title);
		snprintf(title + l, sizeof(title) - l, "  +%zu not shown",
		         hidden);
	}
	/* Zoomed, the parts out of the window: at the finalize's barrier
	 * the 1 h window held none of the 16 and the timeline was blank. */
	if (outside) {
		size_t l = strlen(title);
		snprintf(title + l, sizeof(title) - l, "  %zu outside",
		         outside);
	}
	ms_canvas_box(c, r, title, false);
	/* "now" points up at the axis from the bottom border. */
	if (now_on_axis)
		ms_canvas_put(c, col_of(now_t, t0, t1, in), r.y + r.h - 1, '^',
		              MS_A_BOLD);
}

int64_t
ms__timeline_span(int zoom)
{
	static const int64_t hours[] = { 24, 6, 1 };
	int z = zoom < 0 ? 0 : zoom > 2 ? 2 : zoom;
	return hours[z] * 3600000000000LL;
}

/* The day's length in whole hours (24 for the day presets, 6 for the
 * smoke fixture's day). */
static int
day_hours(int64_t t0, int64_t t1)
{
	int64_t h = (t1 - t0 + 3599999999999LL) / 3600000000000LL;
	return h < 1 ? 1 : h > 24 * 7 ? 24 * 7 : (int)h;
}

/* Where the label after this one may start at the earliest: hour hr's
 * column (two left of it for the day's last hour, which may move there),
 * or past the axis when there is none. */
static int
next_label(ms_rect in, int64_t t0, int64_t t1, int hr, int hours)
{
	if (hr > hours)
		return in.x + in.w + 1;
	int x = col_of(t0 + (int64_t)hr * 3600000000000LL, t0, t1, in);
	return hr == hours ? x - 2 : x;
}

/* Where a label w columns wide that the frontier line at column fx
 * would cross goes: just left of the line when that leaves a gap after
 * the label before (ending at prev_end), else just right of it when that
 * leaves a gap before the next (from next): in the axis's second column
 * the line left no room on its left, and the day's first label ("00")
 * was left out. */
static int
dodge_front(int fx, int w, int prev_end, int next)
{
	if (fx - w >= prev_end + 2)
		return fx - w;
	if (fx + w + 2 <= next)
		return fx + 1;
	return -1;
}

/* The whole day: hour labels every 1, 2, 3, 6 or 12 hours, up to the
 * day's last hour (a 6-hour day's axis ran "04 05 24", every hour past
 * its end drawn on its last column). A label the frontier line at column
 * fx would cross ("0|" for 04) moves beside it (dodge_front), or, with
 * room on neither side, is left out. */
static void
axis_day(ms_canvas *c, ms_rect in, int ay, int64_t t0, int64_t t1, int fx)
{
	static const int steps[] = { 1, 2, 3, 6, 12 };
	int hours = day_hours(t0, t1), step = 12;
	for (size_t i = 0; i < 5; i++) {
		if ((in.w - 1) * steps[i] / hours >= 4) {
			step = steps[i];
			break;
		}
	}
	int prev = in.x - 3; /* where the label before starts */
	for (int hr = 0; hr <= hours; hr += step) {
		int x = col_of(t0 + (int64_t)hr * 3600000000000LL, t0, t1, in);
		char lab[16];
		snprintf(lab, sizeof(lab), "%02d", hr % 100);
		int lx = x - 1 < in.x ? in.x : x;
		/* The last hour ("24") ends left of the day's last column
		 * (where the frontier line stands at the end of the day) when
		 * that leaves a gap after the label before it. */
		if (hr == hours)
			lx = x - 2 >= prev + 3 ? x - 2 : x - 1;
		if (fx == lx || fx == lx + 1) {
			lx = dodge_front(fx, 2, prev + 1,
			                 next_label(in, t0, t1, hr + step,
			                            hours));
			if (lx < in.x || lx + 2 > in.x + in.w)
				continue;
		}
		prev = lx;
		ms_canvas_text(c, lx, ay, 2, lab, MS_C_MUTED);
	}
}

/* The label of tick t: "HH:MM" of the day's clock, or "+1d HH:MM"
 * after the day ("-1d HH:MM" before it). */
static int
tick_label(char *lab, size_t n, int64_t t, int64_t day_start)
{
	ms_fmt_clock(lab, n, t, day_start);
	size_t l = strlen(lab);
	if (l >= 3)
		lab[l - 3] = '\0'; /* the seconds */
	return (int)strlen(lab);
}

/* Where the label of tick t starts (lab receives it, *w its width):
 * centred on its column, within the axis; past the axis when t is
 * after t1. */
static int
tick_x(ms_rect in, int64_t t, int64_t t0, int64_t t1, int64_t day_start,
       char *lab, size_t n, int *w)
{
	*w = tick_label(lab, n, t, day_start);
	if (t > t1)
		return in.x + in.w + 1;
	int lx = col_of(t, t0, t1, in) - *w / 2;
	if (lx < in.x)
		lx = in.x;
	if (lx + *w > in.x + in.w)
		lx = in.x + in.w - *w;
	return lx;
}

/* The finest round step, from 5 minutes to 3 hours, that leaves room
 * between labels (a "+1d HH:MM" is wider than an "HH:MM": in the
 * cooldown they ran into each other). */
static int64_t
zoomed_step(ms_rect in, int64_t t0, int64_t t1, int64_t day_start)
{
	static const int64_t mins[] = { 5, 10, 15, 30, 60, 120, 180 };
	const int64_t min_ns = 60000000000LL;
	char lab[32];
	int w0 = tick_label(lab, sizeof(lab), t0, day_start);
	int w1 = tick_label(lab, sizeof(lab), t1, day_start);
	int room = (w0 > w1 ? w0 : w1) + 3;
	for (size_t i = 0; i < sizeof(mins) / sizeof(mins[0]); i++) {
		int64_t st = mins[i] * min_ns;
		if ((double)(in.w - 1) * (double)st / (double)(t1 - t0) >=
		    room)
			return st;
	}
	return mins[6] * min_ns;
}

/* A zoomed window: labels on round steps (zoomed_step); a label that
 * would still touch the one before it is left out, and one the frontier
 * line at column fx would cross ("+1d |0:00") moves beside it, as the
 * day's do (dodge_front): it was left out, and at 6 h the line crossed
 * one label in three. */
static void
axis_zoomed(ms_canvas *c, ms_rect in, int ay, int64_t t0, int64_t t1,
            int64_t day_start, int fx)
{
	int64_t step = zoomed_step(in, t0, t1, day_start);
	/* The first tick at or after t0, on the day's clock. */
	int64_t k = (t0 - day_start) / step;
	int64_t t = day_start + k * step;
	while (t < t0)
		t += step;
	int prev_end = in.x - 2; /* one column after the last label */
	char lab[32], next[32];
	for (; t <= t1; t += step) {
		int w, nw;
		int lx = tick_x(in, t, t0, t1, day_start, lab, sizeof(lab), &w);
		if (fx >= lx && fx < lx + w) {
			int nx = tick_x(in, t + step, t0, t1, day_start, next,
			                sizeof(next), &nw);
			lx = dodge_front(fx, w, prev_end, nx);
			if (lx < in.x || lx + w > in.x + in.w)
				continue;
		}
		if (lx <= prev_end + 1)
			continue;
		ms_canvas_text(c, lx, ay, w, lab, MS_C_MUTED);
		prev_end = lx + w - 1;
	}
}

const ms_panel_class ms_panel_timeline = {
	.name = "timeline",
	.title = "Timeline",
	.slot = MS_PANEL_TIMELINE,
	.draw = draw,
};
