/*
 * mouse.c - what the mouse does: a click focuses the panel under it and
 * selects the row clicked (an event, a part, a plugin link); the wheel
 * scrolls the list under the pointer three rows at a time, or the help,
 * the details or the breakpoint list open over them.
 * Panels and rows are found with the same layout and scroll positions the
 * panels draw with (ms__layout_view, ms__events_top,
 * ms__inventory_top), so a click lands on what is shown there.
 */
#include "tui_int.h"

#include <string.h>

static bool
inside(ms_rect r, int x, int y)
{
	return ms_rect_visible(r) && x >= r.x && x < r.x + r.w && y >= r.y &&
	       y < r.y + r.h;
}

/* A click on row `row` of the list (0 = the first line under the header). */
static void
click_events(ms_tui_session *s, ms_rect r, int row)
{
	ms_tui_view *v = s->view;
	if (v->state == MS_VIEW_DONE && v->ui.show_gates)
		return; /* the gate table: nothing to select */
	size_t idx[MS_VIEW_MAX_EVENTS];
	size_t n = ms_events_visible(v, idx);
	int rows = ms__events_rows(v, r.w - 2, r.h - 2);
	if (row < 0 || row >= rows)
		return;
	size_t k = ms__events_top(v, idx, n, rows) + (size_t)row;
	if (k < n)
		v->ui.event_sel = v->events[idx[k]].seq;
}

static void
click_row(ms_tui_session *s, enum ms_tui_focus f, ms_rect r, int row)
{
	ms_tui_ui *ui = &s->view->ui;
	int rows = r.h - 3; /* borders and the header */
	if (row < 0 || row >= rows)
		return;
	if (f == MS_FOCUS_INVENTORY) {
		size_t k = ms__inventory_top(s->view, rows) + (size_t)row;
		if (k < s->view->nparts)
			ui->part_sel = k;
	} else if (f == MS_FOCUS_PLUGINS) {
		int links = ms__plugins_rows(s->view, r.h - 2);
		size_t k = ms__plugins_top(s->view, links) + (size_t)row;
		if (row < links && k < s->view->nplugins)
			ui->plugin_sel = k;
	} else if (f == MS_FOCUS_EVENTS) {
		click_events(s, r, row);
	}
}

void
ms_session_mouse(ms_tui_session *s, const ms_mouse *m, int w, int h)
{
	ms_tui_ui *ui = &s->view->ui;
	/* The offer of the last session's breakpoints, open from the start,
	 * is declined by a click or the wheel as by any other key (the mouse
	 * did nothing until it was answered); a prompt being typed keeps
	 * the mouse out. */
	ms__offer_decline(s);
	if (ui->prompt != MS_PROMPT_NONE)
		return;
	int wheel = m->kind == MS_MOUSE_WHEEL_UP     ? MS_KEY_UP
	            : m->kind == MS_MOUSE_WHEEL_DOWN ? MS_KEY_DOWN
	                                             : 0;
	if (ui->overlay != MS_OVERLAY_NONE) {
		if ((ui->overlay == MS_OVERLAY_HELP ||
		     ui->overlay == MS_OVERLAY_DETAIL ||
		     ui->overlay == MS_OVERLAY_BREAKS) &&
		    wheel)
			for (int i = 0; i < 3; i++)
				ms_session_key(s, wheel);
		return;
	}
	ms_layout l;
	ms__layout_view(s->view, w, h, &l);
	if (l.too_small)
		return;
	static const struct {
		enum ms_panel_id panel;
		enum ms_tui_focus focus;
	} lists[] = {
		{ MS_PANEL_EVENTS, MS_FOCUS_EVENTS },
		{ MS_PANEL_INVENTORY, MS_FOCUS_INVENTORY },
		{ MS_PANEL_PLUGINS, MS_FOCUS_PLUGINS },
	};
	for (size_t i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
		ms_rect r = l.r[lists[i].panel];
		if (!inside(r, m->x, m->y))
			continue;
		ui->focus = lists[i].focus;
		if (wheel)
			for (int k = 0; k < 3; k++)
				ms_session_key(s, wheel);
		else
			click_row(s, lists[i].focus, r, m->y - r.y - 2);
		s->dirty = true;
		return;
	}
}
