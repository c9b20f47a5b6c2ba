/*
 * layout.c - where each panel goes, as a pure function of the screen size.
 *
 * Rows from top to bottom: the status line; the frontier timeline (full
 * width); a middle band with the inventory, the pending selection and (on
 * wide screens) the staging gauge side by side; the staging gauge as its own
 * band when the screen is narrower; the plugin table as a band, or beside
 * the event log on very wide screens; the event log; the footer (keys,
 * prompt, messages), one line, or up to three for a message wider than
 * the screen.
 *
 * Optional panels fold away in a fixed order as the screen shrinks: plugins
 * first, then the timeline, then staging. Each needs a minimum height (and
 * plugins a minimum width); the thresholds grow along the fold order, so the
 * set shown is always a prefix of (staging, timeline, plugins). Below
 * MS_MIN_W x MS_MIN_H nothing is laid out and the frame shows a notice.
 */
#include "tui_int.h"

#include <string.h>

const enum ms_panel_id ms_layout_fold_order[3] = {
	MS_PANEL_PLUGINS,
	MS_PANEL_TIMELINE,
	MS_PANEL_STAGING,
};

const enum ms_panel_id ms_layout_required[5] = {
	MS_PANEL_STATUS, MS_PANEL_INVENTORY, MS_PANEL_SELECTION,
	MS_PANEL_EVENTS, MS_PANEL_FOOTER,
};

/* Minimum screen sizes of the optional panels. */
#define STAGING_MIN_H 28
#define PLUGINS_MIN_H 42
#define PLUGINS_MIN_W 100
/* Widths from which panels sit side by side instead of stacking. */
#define STAGING_SIDE_W 120
#define PLUGINS_SIDE_W 180
#define STAGING_BAND_H 5
#define PLUGINS_BAND_H 7

static int
clampi(int v, int lo, int hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

static ms_rect
rect(int x, int y, int w, int h)
{
	ms_rect r = { x, y, w, h };
	return r;
}

int
ms_layout_overlay_w(int w)
{
	return clampi(w - 6, 60, 100);
}

void
ms_layout_compute(int w, int h, const ms_layout_opts *o, ms_layout *out)
{
	memset(out, 0, sizeof(*out));
	out->w = w;
	out->h = h;
	if (w < MS_MIN_W || h < MS_MIN_H) {
		out->too_small = true;
		return;
	}

	int fh = o && o->footer_h > 1 ? o->footer_h : 1;
	if (fh > MS_FOOTER_MAX_H)
		fh = MS_FOOTER_MAX_H;
	int body_h = h - 1 - fh;
	bool staging = h >= STAGING_MIN_H;
	bool timeline = h >= MS_TIMELINE_MIN_H;
	bool plugins = h >= PLUGINS_MIN_H && w >= PLUGINS_MIN_W;
	bool staging_side = staging && w >= STAGING_SIDE_W;
	bool plugins_side = plugins && w >= PLUGINS_SIDE_W;

	out->r[MS_PANEL_STATUS] = rect(0, 0, w, 1);
	out->r[MS_PANEL_FOOTER] = rect(0, h - fh, w, fh);

	int y = 1;
	int th = timeline ? clampi(body_h / 5, 7, 14) : 0;
	int rest = body_h - th;
	if (staging && !staging_side)
		rest -= STAGING_BAND_H;
	if (plugins && !plugins_side)
		rest -= PLUGINS_BAND_H;
	int mh = clampi(rest * 45 / 100, 8, rest - 6);
	int eh = rest - mh;

	if (timeline) {
		out->r[MS_PANEL_TIMELINE] = rect(0, y, w, th);
		y += th;
	}

	/* Middle band. */
	int iw = clampi(w * 2 / 5, 46, 72);
	int sw = staging_side ? clampi(w / 4, 30, 48) : 0;
	out->r[MS_PANEL_INVENTORY] = rect(0, y, iw, mh);
	out->r[MS_PANEL_SELECTION] = rect(iw, y, w - iw - sw, mh);
	if (staging_side)
		out->r[MS_PANEL_STAGING] = rect(w - sw, y, sw, mh);
	y += mh;
	if (staging && !staging_side) {
		out->r[MS_PANEL_STAGING] = rect(0, y, w, STAGING_BAND_H);
		y += STAGING_BAND_H;
	}

	/* Bottom band. */
	if (plugins && !plugins_side) {
		out->r[MS_PANEL_PLUGINS] = rect(0, y, w, PLUGINS_BAND_H);
		y += PLUGINS_BAND_H;
	}
	if (plugins_side) {
		int pw = clampi(w * 2 / 5, 80, 110);
		out->r[MS_PANEL_EVENTS] = rect(0, y, w - pw, eh);
		out->r[MS_PANEL_PLUGINS] = rect(w - pw, y, pw, eh);
	} else {
		out->r[MS_PANEL_EVENTS] = rect(0, y, w, eh);
	}

	if (o && o->overlay) {
		int ow = ms_layout_overlay_w(w);
		int oh = clampi(h - 4, 18, 44);
		/* As tall as its content, when that is shorter (a part's
		 * seven lines sat in a box of the screen's height). */
		if (o->overlay_rows > 0 && o->overlay_rows + 2 < oh)
			oh = o->overlay_rows + 2;
		/* Centred, above a footer taller than a line. */
		int oy = (h - oh) / 2;
		if (oy + oh > h - fh)
			oy = h - fh - oh > 1 ? h - fh - oh : 1;
		out->r[MS_PANEL_OVERLAY] = rect((w - ow) / 2, oy, ow, oh);
	}
}
