/*
 * panel_inventory.c - the active parts in the order the picker sees them
 * (size ascending, newer first, then ID), one per line: ID, compressed
 * bytes, rows, merge depth, M(ature) or H(ot), and the merge holding it.
 * Inputs of the pending selection are highlighted; with the focus here,
 * the selected line is in reverse video. On wide screens the time bounds
 * of each part are shown too.
 */
#include "tui_int.h"

#include <inttypes.h>
#include <stdio.h>

size_t
ms__inventory_top(const ms_tui_view *v, int rows)
{
	if (rows > 0 && v->ui.part_sel >= (size_t)rows)
		return v->ui.part_sel - (size_t)rows + 1;
	return 0;
}

static void
draw(ms_canvas *c, ms_rect r, const ms_tui_view *v)
{
	char title[96];
	bool focus = v->ui.focus == MS_FOCUS_INVENTORY;
	snprintf(title, sizeof(title), "Inventory %zu part%s%s%s",
	         v->parts_total, v->parts_total == 1 ? "" : "s",
	         v->ui.part_sort ? ", " : "",
	         v->ui.part_sort ? ms_tui_part_sort_name(v->ui.part_sort) : "");
	ms_rect in = ms_canvas_box(c, r, title, focus);
	if (in.h < 2)
		return;
	bool wide = in.w >= 64;
	ms_canvas_printf(c, in.x, in.y, in.w, MS_C_MUTED | MS_A_UL,
	                 "%-16s %7s %7s %2s %1s %-5s%s", "part", "bytes",
	                 "rows", "d", "s", "claim",
	                 wide ? "  min-max time" : "");
	int rows = in.h - 1;
	size_t top = ms__inventory_top(v, rows);
	for (int i = 0; i < rows; i++) {
		size_t k = top + (size_t)i;
		if (k >= v->nparts)
			break;
		const ms_tui_part *p = &v->parts[k];
		char b[32], n[32], cl[32] = "", t0[32], t1[32];
		if (p->claimed_by)
			snprintf(cl, sizeof(cl), "#%" PRIu64, p->claimed_by);
		uint16_t a = p->pending ? (MS_C_ACCENT | MS_A_BOLD) : 0;
		int y = in.y + 1 + i;
		int x = in.x;
		x += ms_canvas_printf(
		        c, x, y, in.w, a, "%016" PRIx64 " %7s %7s %2u ", p->id,
		        ms_fmt_bytes(b, sizeof(b), p->bytes),
		        ms_fmt_count(n, sizeof(n), p->rows), p->depth);
		x += ms_canvas_text(
		        c, x, y, in.x + in.w - x, p->mature ? "M" : "H",
		        (uint16_t)(MS_A_BOLD |
		                   (p->mature ? MS_C_WARN : MS_C_HOT)));
		x += ms_canvas_printf(c, x, y, in.x + in.w - x, a, " %-5s", cl);
		/* The times only whole: "+1d 01:00:00" is wider than the
		 * day's clock, and a cut one reads as another time. */
		char span[80];
		int len = snprintf(
		        span, sizeof(span), "  %s-%s",
		        ms_fmt_clock(t0, sizeof(t0), p->min_ts, v->day_start),
		        ms_fmt_clock(t1, sizeof(t1), p->max_ts, v->day_start));
		if (wide && len <= in.x + in.w - x)
			ms_canvas_text(c, x, y, len, span, MS_C_MUTED);
		if (focus && k == v->ui.part_sel)
			ms_canvas_attr(c, in.x, y, in.w, MS_A_REV);
	}
	size_t shown = v->nparts > top ? v->nparts - top : 0;
	if (shown > (size_t)rows)
		shown = (size_t)rows;
	ms_canvas_more(c, r, title, top, v->nparts - top - shown);
	if (v->parts_total > v->nparts) {
		char more[48];
		snprintf(more, sizeof(more), " +%zu not shown ",
		         v->parts_total - v->nparts);
		ms_canvas_text(c, r.x + 2, r.y + r.h - 1, r.w - 4, more,
		               MS_C_MUTED);
	}
}

const ms_panel_class ms_panel_inventory = {
	.name = "inventory",
	.title = "Inventory",
	.slot = MS_PANEL_INVENTORY,
	.draw = draw,
};
