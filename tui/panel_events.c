/*
 * panel_events.c - the event log: one line per recorded merge, newest at
 * the bottom, limited to what the filter (`/`) matches. The log follows
 * the newest event until the user moves the selection; Enter opens every
 * field of the selected merge.
 */
#include "tui_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

size_t
ms_events_visible(const ms_tui_view *v, size_t *idx)
{
	size_t n = 0;
	size_t ne = v->nevents < MS_VIEW_MAX_EVENTS ? v->nevents
	                                            : MS_VIEW_MAX_EVENTS;
	for (size_t i = 0; i < ne; i++)
		if (ms_tui_filter_match(&v->ui.filt, &v->events[i],
		                        v->day_start))
			idx[n++] = i;
	return n;
}

long
ms_events_selected(const ms_tui_view *v)
{
	size_t idx[MS_VIEW_MAX_EVENTS];
	size_t n = ms_events_visible(v, idx);
	if (n == 0)
		return -1;
	if (v->ui.event_sel == 0)
		return (long)idx[n - 1];
	for (size_t i = 0; i < n; i++)
		if (v->events[idx[i]].seq == v->ui.event_sel)
			return (long)idx[i];
	return (long)idx[n - 1];
}

static const char *
short_class(const char *k)
{
	if (strcmp(k, "executed") == 0)
		return "exec";
	if (strcmp(k, "enabled_no_evaluation") == 0)
		return "no_eval";
	if (strcmp(k, "not_executed") == 0)
		return "not_exec";
	return k;
}

/* The frozen command's lines: "frozen: " and the command, wrapped at
 * spaces (ms_canvas_wrap) into buf. */
static void
frozen_text(const ms_tui_view *v, char *buf, size_t n)
{
	snprintf(buf, n, "frozen: %s", v->ui.frozen_cmd);
}

int
ms__events_rows(const ms_tui_view *v, int inner_w, int inner_h)
{
	int rows = inner_h - 1;
	if (v->ui.frozen_cmd[0] && inner_w > 0) {
		/* "frozen: " and the command, wrapped at spaces at the
		 * inner width; at least two event rows stay. */
		char text[sizeof(v->ui.frozen_cmd) + 8];
		frozen_text(v, text, sizeof(text));
		int lines = ms_canvas_wrap(NULL, 0, 0, inner_w, text, 0);
		if (rows - lines >= 2)
			rows -= lines;
		else if (rows > 3)
			rows = 2;
	}
	return rows;
}

size_t
ms__events_top(const ms_tui_view *v, const size_t *idx, size_t n, int rows)
{
	/* The first line keeps the selection visible, tail-aligned. */
	long sel = ms_events_selected(v);
	size_t pos = n ? n - 1 : 0;
	for (size_t i = 0; i < n; i++)
		if ((long)idx[i] == sel)
			pos = i;
	size_t top = rows > 0 && n > (size_t)rows ? n - (size_t)rows : 0;
	if (pos < top)
		top = pos;
	return top;
}

/* The rule a reconciliation row states, as `mergescope report` prints it:
 * "ok = dropped" (or FAIL), a remark "(...)" as it is, "FAIL" for a row
 * that fails with none, or "". */
static void
recon_rule(char *buf, size_t n, const char *note, bool ok)
{
	if (note[0] == '(')
		snprintf(buf, n, "%s", note);
	else if (note[0])
		snprintf(buf, n, "%s %s", ok ? "ok" : "FAIL", note);
	else
		snprintf(buf, n, "%s", ok ? "" : "FAIL");
}

/* At DONE: the run's correctness gates, failures first, then the
 * reconciliation with the verdict oracle with each row's rule, laid out
 * whole from the top of doc, w columns wide (doc NULL: only counted). A
 * gate's detail and a row's rule wrap a column short of the end of the
 * line (they were cut there), under where they start; so does a row's name
 * where the line has no room for it whole. Returns the rows used, and in
 * *recon_head the row of the reconciliation's header (-1: none). */
static int
layout_gates(ms_canvas *doc, const ms_tui_view *v, int w, int *recon_head)
{
	/* One column kept clear before the border: a wrapped detail ran
	 * into it ("...0977;|"). */
	w--;
	int nw = 12;
	for (size_t i = 0; i < v->ngates; i++) {
		int l = (int)strlen(v->gates[i].name);
		if (l > nw)
			nw = l < 28 ? l : 28;
	}
	if (doc)
		ms_canvas_printf(doc, 0, 0, w, MS_C_MUTED | MS_A_UL,
		                 "%-4s %-*s %s", "", nw, "gate", "detail");
	int y = 1;
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < v->ngates; i++) {
			if (v->gates[i].pass != (pass == 1))
				continue;
			bool ok = v->gates[i].pass;
			if (doc) {
				int x = ms_canvas_text(
				        doc, 0, y, w,
				        !ok                ? "FAIL"
				        : v->gates[i].warn ? "WARN"
				                           : "PASS",
				        (uint16_t)(MS_A_BOLD |
				                   (ok ? MS_C_OK
				                       : MS_C_ALERT |
				                                    MS_A_REV)));
				ms_canvas_printf(doc, x, y, w - x, 0, " %-*.*s",
				                 nw, nw, v->gates[i].name);
			}
			int lines = ms_canvas_wrap(doc, nw + 6, y, w - nw - 6,
			                           v->gates[i].detail, 0);
			y += lines > 0 ? lines : 1;
		}
	/* Then the reconciliation with the verdict oracle, as the report
	 * prints it: every row, and what it must equal. */
	*recon_head = -1;
	if (v->nrecon == 0)
		return y;
	y++;
	/* The names whole where the line has room for them ("oracle drops
	 * in the final output" was cut to "... final ou"), else wrapped. */
	int rw = 20, digits = 8; /* "finalize" */
	for (size_t i = 0; i < v->nrecon; i++) {
		int l = (int)strlen(v->recon[i].name);
		if (l > rw)
			rw = l;
		for (int k = 0; k < 4; k++) {
			char num[24];
			l = snprintf(num, sizeof(num), "%" PRIu64,
			             v->recon[i].v[k]);
			if (l > digits)
				digits = l;
		}
	}
	/* Figures 12 wide, narrower where the names would not fit. */
	int numw = 5 + rw + 4 * 13 <= w ? 12 : digits;
	int nums = 4 * (numw + 1);
	if (5 + rw + nums > w)
		rw = w - 5 - nums > 20 ? w - 5 - nums : 20;
	/* The rule after the figures when a rule of 24 columns fits there,
	 * else on the lines under the row's name. */
	int rx = 5 + rw + nums + 2;
	bool beside = w - rx >= 24;
	if (doc)
		ms_canvas_printf(doc, 0, y, w, MS_C_MUTED | MS_A_UL,
		                 "%-4s %-*s %*s %*s %*s %*s%s", "", rw,
		                 "reconciliation", numw, "primary", numw,
		                 "cooldown", numw, "finalize", numw, "total",
		                 beside ? "  rule" : "");
	*recon_head = y++;
	for (size_t i = 0; i < v->nrecon; i++) {
		uint16_t attr =
		        (uint16_t)(v->recon[i].ok ? 0 : MS_C_ALERT | MS_A_BOLD);
		char rule[MS_VIEW_TEXT + 8];
		recon_rule(rule, sizeof(rule), v->recon[i].note,
		           v->recon[i].ok);
		if (doc) {
			ms_canvas_text(doc, 0, y, 4,
			               v->recon[i].ok ? "" : "FAIL", attr);
			ms_canvas_printf(
			        doc, 5 + rw, y, w - 5 - rw, attr,
			        " %*" PRIu64 " %*" PRIu64 " %*" PRIu64
			        " %*" PRIu64,
			        numw, v->recon[i].v[0], numw, v->recon[i].v[1],
			        numw, v->recon[i].v[2], numw, v->recon[i].v[3]);
		}
		/* A sub-row's name keeps its indent ("  of which ..."). */
		const char *name = v->recon[i].name;
		int ind = (int)strspn(name, " ");
		if (ind > rw / 2)
			ind = 0;
		int nl = ms_canvas_wrap(doc, 5 + ind, y, rw - ind, name, attr);
		int rl = 0;
		if (rule[0] && beside)
			rl = ms_canvas_wrap(doc, rx, y, w - rx, rule, attr);
		else if (rule[0])
			nl += ms_canvas_wrap(doc, 7, y + (nl > 0 ? nl : 1),
			                     w - 7, rule, attr);
		int lines = nl > rl ? nl : rl;
		y += lines > 0 ? lines : 1;
	}
	return y;
}

size_t
ms__gates_lines(const ms_tui_view *v, int w)
{
	int head;
	int n = layout_gates(NULL, v, w > 0 ? w : 80, &head);
	return n > 0 ? (size_t)n : 1;
}

/* Where the events are recorded, on the area's bottom border (right),
 * under the events or the gates: the status line has room for it only
 * on the widest screens. */
static void
draw_db(ms_canvas *c, ms_rect r, const ms_tui_view *v)
{
	const char *db = v->db_path[0] ? v->db_path : "not recording";
	int room = r.w - 12;
	if (room <= 10)
		return;
	int len = (int)strlen(db);
	int show = len < room ? len : room;
	int x0 = r.x + r.w - 2 - show - 8;
	x0 += ms_canvas_text(c, x0, r.y + r.h - 1, 8, " events ", MS_C_MUTED);
	ms_canvas_text_tail(c, x0, r.y + r.h - 1, show, db, 0);
	ms_canvas_put(c, x0 + show, r.y + r.h - 1, ' ', 0);
}

/* The gates and the reconciliation in the Events area, scrolled to
 * ui.gates_scroll when they do not fit (at 132x44 the last gate and the
 * whole reconciliation were cut off, with nothing to say so). Scrolled,
 * the header of the table in view stays on the first row, over the line
 * scrolled under it: the reconciliation's figures at the end had no
 * column names on screen. */
static void
draw_gates(ms_canvas *c, ms_rect r, const ms_tui_view *v)
{
	char title[128], more[48] = "";
	bool focus = v->ui.focus == MS_FOCUS_EVENTS;
	ms_rect in = ms_canvas_box(c, r, "", focus);
	if (in.h < 2)
		return;
	ms_canvas doc;
	ms_canvas_init(&doc);
	doc.ascii = c->ascii;
	size_t rows = ms__gates_lines(v, in.w), h = (size_t)in.h;
	int head = -1;
	if (ms_canvas_reset(&doc, in.w, (int)rows) == 0)
		layout_gates(&doc, v, in.w, &head);
	size_t top = v->ui.gates_scroll;
	if (top + h > rows)
		top = rows > h ? rows - h : 0;
	long pin = -1; /* the header row kept on top */
	if (head >= 0 && top > (size_t)head)
		pin = head;
	else if (top > 0 && (head < 0 || top < (size_t)head))
		pin = 0;
	if (rows > h)
		snprintf(more, sizeof(more), ", lines %zu-%zu of %zu%s",
		         top + (pin >= 0 ? 2 : 1), top + h, rows,
		         top + h < rows ? ", down scrolls" : "");
	snprintf(title, sizeof(title),
	         "Gates  %zu pass, %u fail%s  (Tab: the events)",
	         v->ngates - v->gates_failed, v->gates_failed, more);
	ms_canvas_box(c, r, title, focus);
	draw_db(c, r, v);
	ms_canvas_blit(c, in, &doc, top);
	if (pin >= 0)
		ms_canvas_blit(c, (ms_rect){ in.x, in.y, in.w, 1 }, &doc,
		               (size_t)pin);
	ms_canvas_release(&doc);
}

static void
draw(ms_canvas *c, ms_rect r, const ms_tui_view *v)
{
	if (v->state == MS_VIEW_DONE && v->ui.show_gates && v->ngates) {
		draw_gates(c, r, v);
		return;
	}
	size_t idx[MS_VIEW_MAX_EVENTS];
	size_t n = ms_events_visible(v, idx);
	long sel = ms_events_selected(v);
	bool focus = v->ui.focus == MS_FOCUS_EVENTS;
	char title[MS_VIEW_TEXT + 64];
	const char *es = v->events_total == 1 ? "" : "s";
	if (v->ui.filter[0])
		snprintf(title, sizeof(title),
		         "Events %" PRIu64 " merge%s, %zu match%s /%s",
		         v->events_total, es, n, n == 1 ? "es" : "",
		         v->ui.filter);
	else
		snprintf(title, sizeof(title), "Events %" PRIu64 " merge%s",
		         v->events_total, es);
	ms_rect in = ms_canvas_box(c, r, title, focus);
	if (in.h < 2)
		return;
	draw_db(c, r, v);
	/* The time column widens for "+1d 02:00:00" (the finalize) when one
	 * of the listed merges is outside the day. */
	int tw = 8, kl_max = 5, rs_max = 1;
	for (size_t i = 0; i < n; i++) {
		const ms_tui_event *e = &v->events[idx[i]];
		if (e->t < v->day_start ||
		    (v->day_end > v->day_start && e->t >= v->day_end))
			tw = MS_CLOCK_WIDE;
		int kl = (int)strlen(e->failed ? "FAILED" : e->klass);
		int rs = (int)strlen(e->reason);
		kl_max = kl > kl_max ? kl : kl_max;
		rs_max = rs > rs_max ? rs : rs_max;
	}
	/* Reason comes last so that only it is cut on narrow screens. There
	 * the class column is as wide as the listed classes when they and
	 * their reasons fit whole ("not_executed merge_grace" at 80
	 * columns), else the classes are abbreviated. */
	bool narrow = in.w < 100;
	int cw = narrow ? 8 : 21;
	/* 44 + tw: the columns before the class, seq to wall with their
	 * blanks (6 1 tw 1 8 1 3 1 13 1 8 1). */
	if (narrow && 44 + tw + kl_max + 1 + rs_max <= in.w) {
		narrow = false;
		cw = kl_max;
	}
	ms_canvas_printf(c, in.x, in.y, in.w, MS_C_MUTED | MS_A_UL,
	                 "%6s %*s %-8s %3s %13s %8s %-*s %s", "seq", tw, "time",
	                 "lane", "in", "rows in>out", "wall", cw, "class",
	                 "reason");
	int rows = ms__events_rows(v, in.w, in.h);
	/* After a freeze, its last lines: the frozen directory's merge-once
	 * command, whole (wrapped at spaces), until the next freeze. */
	if (rows < in.h - 1) {
		/* Laid out whole, shown as far as the area goes. */
		char text[sizeof(v->ui.frozen_cmd) + 8];
		frozen_text(v, text, sizeof(text));
		ms_canvas doc;
		ms_canvas_init(&doc);
		doc.ascii = c->ascii;
		int y = in.y + rows + 1;
		int lines = ms_canvas_wrap(NULL, 0, 0, in.w, text, 0);
		if (ms_canvas_reset(&doc, in.w, lines) == 0) {
			ms_canvas_wrap(&doc, 0, 0, in.w, text, MS_C_ACCENT);
			ms_canvas_attr(&doc, 0, 0, 7, MS_A_BOLD);
			ms_canvas_blit(
			        c, (ms_rect){ in.x, y, in.w, in.y + in.h - y },
			        &doc, 0);
		}
		ms_canvas_release(&doc);
	}
	if (n == 0) {
		ms_canvas_text(c, in.x, in.y + 1, in.w,
		               v->ui.filter[0] ? "no event matches the filter"
		                               : "no merges yet",
		               MS_C_MUTED);
		return;
	}
	size_t top = ms__events_top(v, idx, n, rows);
	size_t shown = rows > 0 ? n - top : 0;
	if (shown > (size_t)(rows > 0 ? rows : 0))
		shown = (size_t)rows;
	ms_canvas_more(c, r, title, top, n - top - shown);
	for (int i = 0; i < rows && top + (size_t)i < n; i++) {
		size_t k = idx[top + (size_t)i];
		const ms_tui_event *e = &v->events[k];
		int y = in.y + 1 + i;
		char t[32], ri[32], ro[32], rio[72], wall[32];
		snprintf(rio, sizeof(rio), "%s>%s",
		         ms_fmt_count(ri, sizeof(ri), e->rows_in),
		         ms_fmt_count(ro, sizeof(ro), e->rows_out));
		const char *kl = e->failed ? "FAILED" : e->klass;
		if (narrow && !e->failed)
			kl = short_class(kl);
		int x = in.x +
		        ms_canvas_printf(
		                c, in.x, y, in.w, 0,
		                "%6" PRIu64 " %*s %-8s %3u %13s %8s ", e->seq,
		                tw,
		                ms_fmt_clock(t, sizeof(t), e->t, v->day_start),
		                e->lane, e->ninputs, rio,
		                ms_fmt_ns(wall, sizeof(wall),
		                          e->wall_ns > 0 ? (uint64_t)e->wall_ns
		                                         : 0));
		x += ms_canvas_printf(c, x, y, in.x + in.w - x,
		                      ms__class_attr(e->klass, e->failed),
		                      "%-*s ", cw, kl);
		ms_canvas_text(c, x, y, in.x + in.w - x,
		               e->reason[0] ? e->reason : "-", 0);
		if ((long)k == sel && (focus || v->ui.event_sel))
			ms_canvas_attr(c, in.x, y, in.w,
			               focus ? MS_A_REV : MS_A_BOLD);
	}
}

void
ms__event_row_text(char *buf, size_t n, const ms_tui_event *e,
                   int64_t day_start)
{
	char t[32], ri[32], ro[32], wall[32];
	snprintf(buf, n, "%s %s %u %s>%s %s %s %s",
	         ms_fmt_clock(t, sizeof(t), e->t, day_start), e->lane,
	         e->ninputs, ms_fmt_count(ri, sizeof(ri), e->rows_in),
	         ms_fmt_count(ro, sizeof(ro), e->rows_out),
	         ms_fmt_ns(wall, sizeof(wall),
	                   e->wall_ns > 0 ? (uint64_t)e->wall_ns : 0),
	         e->failed ? "FAILED" : e->klass,
	         e->reason[0] ? e->reason : "-");
}

const ms_panel_class ms_panel_events = {
	.name = "events",
	.title = "Events",
	.slot = MS_PANEL_EVENTS,
	.draw = draw,
};
