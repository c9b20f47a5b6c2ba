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

/* Text drawn whole on row y, centred, or not at all (a word cut at the
 * edge read as another one: "t" on a 1x1 screen). */
static bool
whole_line(ms_canvas *c, int w, int h, int y, const char *text,
           uint16_t attr)
{
	int l = (int)strlen(text);
	if (l > w || y < 0 || y >= h)
		return false;
	ms_canvas_text(c, (w - l) / 2, y, w, text, attr);
	return true;
}

/* What size is needed, as one line, else three short ones, else "too
 * small" alone; below 9 columns nothing (no word fits whole). */
static void
too_small_notice(ms_canvas *c, int w, int h)
{
	const uint16_t a = MS_A_BOLD | MS_C_ALERT;
	char line[96], l2[32], l3[32];
	snprintf(line, sizeof(line), "too small: need %dx%d, have %dx%d",
	         MS_MIN_W, MS_MIN_H, w, h);
	if (whole_line(c, w, h, h / 2, line, a))
		return;
	snprintf(l2, sizeof(l2), "need %dx%d", MS_MIN_W, MS_MIN_H);
	snprintf(l3, sizeof(l3), "have %dx%d", w, h);
	int y0 = h / 2 - 1 < 0 ? 0 : h / 2 - 1;
	if (h >= 3 && (int)strlen(l2) <= w && (int)strlen(l3) <= w) {
		whole_line(c, w, h, y0, "too small", a);
		whole_line(c, w, h, y0 + 1, l2, a);
		whole_line(c, w, h, y0 + 2, l3, a);
		return;
	}
	whole_line(c, w, h, h / 2, "too small", a);
}

/* Smaller than the layout's minimum: the status line still says where
 * the replay is (it keeps running and every key works), and the middle
 * of the screen says what size is needed and how to get out (a prompt or
 * a box left open, which does not show, takes the first q); each line
 * whole or, where it does not fit, a shorter one or none. */
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
		if (!whole_line(c, w, h, h / 2 + 2, hint, MS_C_MUTED))
			whole_line(c, w, h, h / 2 + 2,
			           open ? "Esc, then q quits" : "q quits",
			           MS_C_MUTED);
	}
	too_small_notice(c, w, h);
}

void
ms__layout_view(const ms_tui_view *v, int w, int h, ms_layout *out)
{
	ms_layout_opts lo = {
		.overlay = v->ui.overlay != MS_OVERLAY_NONE,
		.footer_h = ms__footer_rows(v, w),
	};
	/* The details' box is as tall as they are, at most the screen's. */
	if (v->ui.overlay == MS_OVERLAY_DETAIL)
		lo.overlay_rows = (int)ms__detail_lines(
		        v, ms_layout_overlay_w(w) - 2, NULL);
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
