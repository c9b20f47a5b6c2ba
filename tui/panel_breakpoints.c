/*
 * panel_breakpoints.c - the breakpoint list (b or F2): number, enabled,
 * hits so far and the spec as typed, with the keys that change it and the
 * forms a spec can take. A list longer than the box scrolls to the
 * selected breakpoint, and the title says which show.
 */
#include "tui_int.h"

#include <inttypes.h>
#include <stdio.h>

static void
draw(ms_canvas *c, ms_rect r, const ms_tui_view *v)
{
	ms_rect in = ms_canvas_box(c, r, "Breakpoints", true);
	int y = in.y, end = in.y + in.h;
	/* Rows for the list: below the keys and the header, above the
	 * specs' two lines and a blank. */
	int rows = in.h - 6;
	size_t top = rows > 0 && v->ui.break_sel >= (size_t)rows
	                     ? v->ui.break_sel - (size_t)rows + 1
	                     : 0;
	if (rows > 0 && v->nbreaks > (size_t)rows) {
		char title[64];
		size_t last = top + (size_t)rows;
		snprintf(title, sizeof(title), "Breakpoints %zu, %zu-%zu shown",
		         v->nbreaks, top + 1,
		         last < v->nbreaks ? last : v->nbreaks);
		in = ms_canvas_box(c, r, title, true);
	}
	ms_canvas_text(c, in.x, y++, in.w,
	               "a add   space toggle   d delete   Esc close",
	               MS_C_MUTED);
	if (y >= end)
		return;
	ms_canvas_printf(c, in.x, y++, in.w, MS_C_MUTED | MS_A_UL,
	                 "%4s %-3s %8s  %s", "id", "on", "hits", "spec");
	if (v->nbreaks == 0 && y < end)
		ms_canvas_text(c, in.x, y++, in.w,
		               "none yet: press a, then e.g. mature",
		               MS_C_MUTED);
	for (size_t i = top; i < v->nbreaks && y < end - 4; i++, y++) {
		const ms_tui_break *b = &v->breaks[i];
		ms_canvas_printf(c, in.x, y, in.w,
		                 (uint16_t)(b->enabled ? 0 : MS_C_MUTED),
		                 "%4d %-3s %8" PRIu64 "  %s", b->id,
		                 b->enabled ? "on" : "off", b->hits, b->spec);
		if (i == v->ui.break_sel)
			ms_canvas_attr(c, in.x, y, in.w, MS_A_REV);
	}
	y = end - 3;
	if (y > in.y + 2) {
		ms_canvas_text(c, in.x, y++, in.w,
		               "specs: mature | sampling | merge=N | "
		               "time=HH:MM[:SS]",
		               MS_C_MUTED);
		ms_canvas_text(c, in.x, y++, in.w,
		               "       part=HEX | lane=fast|slow|finalize | "
		               "depth>=D",
		               MS_C_MUTED);
	}
}

const ms_panel_class ms_panel_breakpoints = {
	.name = "breakpoints",
	.title = "Breakpoints",
	.slot = MS_PANEL_OVERLAY,
	.draw = draw,
};
