/*
 * render.c - one frame: lay out the screen for its size, then let each
 * visible panel draw its rectangle from the view, then the overlay (help,
 * details or breakpoints) on top. Below the minimum size the frame is only
 * a notice saying what size is needed.
 *
 * The panel table is walked in order; adding a panel is a descriptor and a
 * row here, not a new branch.
 */
#include "tui_int.h"
#include "ms_enum.h"

#include <stdio.h>
#include <string.h>

static const ms_panel_class *const panels[] = {
	&ms_panel_status,    &ms_panel_timeline, &ms_panel_inventory,
	&ms_panel_selection, &ms_panel_staging,  &ms_panel_plugins,
	&ms_panel_events,    &ms_panel_footer,
};

static const ms_panel_class *
overlay_panel(enum ms_tui_overlay o)
{
	switch (o) {
	case MS_OVERLAY_HELP:
		return &ms_panel_help;
	case MS_OVERLAY_DETAIL:
		return &ms_panel_detail;
	case MS_OVERLAY_BREAKS:
		return &ms_panel_breakpoints;
	default:
		return NULL;
	}
}

static const char *const state_names[] = {
	[MS_VIEW_RUNNING] = "RUNNING",
	[MS_VIEW_PAUSED] = "PAUSED",
	[MS_VIEW_BREAK] = "BREAK",
	[MS_VIEW_DONE] = "DONE",
};

const char *
ms__state_name(enum ms_tui_state st)
{
	return MS_ENUM_NAME(state_names, st, "?");
}

uint16_t
ms__class_attr(const char *klass, bool failed)
{
	if (failed)
		return MS_C_ALERT | MS_A_BOLD;
	if (strcmp(klass, "executed") == 0)
		return MS_C_OK;
	if (strcmp(klass, "enabled_no_evaluation") == 0)
		return MS_C_WARN;
	return 0;
}

/* Smaller than the layout's minimum: the status line still says where
 * the replay is (it keeps running and every key works), and the middle
 * of the screen says what size is needed and how to get out (a prompt or
 * a box left open, which does not show, takes the first q). */
static void
too_small(ms_canvas *c, const ms_tui_view *v, int w, int h)
{
	if (h >= 5)
		ms_panel_status.draw(c, (ms_rect){ 0, 0, w, 1 }, v);
	if (h >= 7) {
		bool open = v->ui.prompt != MS_PROMPT_NONE ||
		            v->ui.overlay != MS_OVERLAY_NONE;
		const char *hint =
		        open ? "enlarge the terminal; Esc closes what is open, "
		               "then q quits"
		             : "enlarge the terminal, or q quits";
		int l = (int)strlen(hint);
		ms_canvas_text(c, l < w ? (w - l) / 2 : 0, h / 2 + 2, w, hint,
		               MS_C_MUTED);
	}
	char line[96];
	snprintf(line, sizeof(line), "too small: need %dx%d, have %dx%d",
	         MS_MIN_W, MS_MIN_H, w, h);
	int len = (int)strlen(line);
	if (len <= w) {
		ms_canvas_text(c, (w - len) / 2, h / 2, w, line,
		               MS_A_BOLD | MS_C_ALERT);
		return;
	}
	/* Very narrow: one short line each. */
	char l2[32], l3[32];
	snprintf(l2, sizeof(l2), "need %dx%d", MS_MIN_W, MS_MIN_H);
	snprintf(l3, sizeof(l3), "have %dx%d", w, h);
	const char *lines[3] = { "too small", l2, l3 };
	int y0 = h / 2 - 1 < 0 ? 0 : h / 2 - 1;
	for (int i = 0; i < 3; i++) {
		int l = (int)strlen(lines[i]);
		ms_canvas_text(c, l < w ? (w - l) / 2 : 0, y0 + i, w, lines[i],
		               MS_A_BOLD | MS_C_ALERT);
	}
}

void
ms__layout_view(const ms_tui_view *v, int w, int h, ms_layout *out)
{
	ms_layout_opts lo = {
		.overlay = v->ui.overlay != MS_OVERLAY_NONE,
		.footer_h = ms__footer_rows(v, w),
	};
	ms_layout_compute(w, h, &lo, out);
}

int
ms_render_frame(ms_canvas *c, const ms_tui_view *v, int w, int h)
{
	int rc = ms_canvas_reset(c, w, h);
	if (rc)
		return rc;
	c->ascii = v->ui.ascii;
	ms_layout l;
	ms__layout_view(v, w, h, &l);
	if (l.too_small) {
		too_small(c, v, w, h);
		return 0;
	}
	for (size_t i = 0; i < sizeof(panels) / sizeof(panels[0]); i++) {
		ms_rect r = l.r[panels[i]->slot];
		if (ms_rect_visible(r))
			panels[i]->draw(c, r, v);
	}
	const ms_panel_class *ov = overlay_panel(v->ui.overlay);
	if (ov && ms_rect_visible(l.r[MS_PANEL_OVERLAY])) {
		ms_canvas_fill(c, l.r[MS_PANEL_OVERLAY], ' ', 0);
		ov->draw(c, l.r[MS_PANEL_OVERLAY], v);
	}
	return 0;
}
