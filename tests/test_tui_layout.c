/*
 * test_tui_layout.c - the layout function over every screen size from
 * 80x24 to 250x70: panels stay inside the screen, never overlap and tile
 * it without gaps, the required panels are always there, optional panels
 * fold away in the documented order, growing the screen never hides a
 * panel, and anything smaller than 80x24 gets the "too small" notice.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tui_int.h"

#include <stdio.h>
#include <string.h>

#define MAX_W 250
#define MAX_H 70

static const enum ms_panel_id tiled[] = {
	MS_PANEL_STATUS,    MS_PANEL_TIMELINE, MS_PANEL_INVENTORY,
	MS_PANEL_SELECTION, MS_PANEL_STAGING,  MS_PANEL_PLUGINS,
	MS_PANEL_EVENTS,    MS_PANEL_FOOTER,
};
#define NTILED (sizeof(tiled) / sizeof(tiled[0]))

static unsigned char owner[MAX_H][MAX_W];

/* The layout of a w x h screen whose footer takes fh rows (a message
 * wrapped). */
static void
check_size(int w, int h, int fh)
{
	ms_layout l;
	ms_layout_opts o = { .footer_h = fh };
	ms_layout_compute(w, h, &o, &l);
	char where[64];
	snprintf(where, sizeof(where), "%dx%d, footer %d", w, h, fh);
	if (l.too_small)
		fail_msg("%s: reported too small", where);

	memset(owner, 0, sizeof(owner));
	for (size_t i = 0; i < NTILED; i++) {
		ms_rect r = l.r[tiled[i]];
		if (!ms_rect_visible(r))
			continue;
		if (r.x < 0 || r.y < 0 || r.x + r.w > w || r.y + r.h > h)
			fail_msg("%s: panel %d outside the screen", where,
			         (int)tiled[i]);
		for (int y = r.y; y < r.y + r.h; y++)
			for (int x = r.x; x < r.x + r.w; x++) {
				if (owner[y][x])
					fail_msg("%s: panels %d and %d overlap "
					         "at %d,%d",
					         where, owner[y][x] - 1,
					         (int)tiled[i], x, y);
				owner[y][x] = (unsigned char)(tiled[i] + 1);
			}
	}
	for (int y = 0; y < h; y++)
		for (int x = 0; x < w; x++)
			if (!owner[y][x])
				fail_msg("%s: cell %d,%d belongs to no panel",
				         where, x, y);

	for (size_t i = 0; i < 5; i++)
		if (!ms_rect_visible(l.r[ms_layout_required[i]]))
			fail_msg("%s: required panel %d missing", where,
			         (int)ms_layout_required[i]);

	/* Fold order: a panel later in the order (folds later) is shown
	 * whenever an earlier one is. */
	for (size_t i = 0; i < 3; i++)
		for (size_t j = i + 1; j < 3; j++)
			if (ms_rect_visible(l.r[ms_layout_fold_order[i]]) &&
			    !ms_rect_visible(l.r[ms_layout_fold_order[j]]))
				fail_msg("%s: panel %d shown but %d folded",
				         where, (int)ms_layout_fold_order[i],
				         (int)ms_layout_fold_order[j]);

	/* Panels are big enough to say something. */
	if (l.r[MS_PANEL_STATUS].h != 1 || l.r[MS_PANEL_FOOTER].h != fh)
		fail_msg("%s: status one line, footer %d", where, fh);
	if (l.r[MS_PANEL_STATUS].y != 0 || l.r[MS_PANEL_FOOTER].y != h - fh)
		fail_msg("%s: status on top, footer at the bottom", where);
	if (l.r[MS_PANEL_INVENTORY].h < 8 || l.r[MS_PANEL_INVENTORY].w < 46)
		fail_msg("%s: inventory too small", where);
	if (l.r[MS_PANEL_SELECTION].w < 34)
		fail_msg("%s: selection too narrow", where);
	if (l.r[MS_PANEL_EVENTS].h < 6 || l.r[MS_PANEL_EVENTS].w < 80)
		fail_msg("%s: event log too small", where);
	if (ms_rect_visible(l.r[MS_PANEL_PLUGINS]) &&
	    (l.r[MS_PANEL_PLUGINS].w < 80 || l.r[MS_PANEL_PLUGINS].h < 4))
		fail_msg("%s: plugin table too small", where);
	if (ms_rect_visible(l.r[MS_PANEL_TIMELINE]) &&
	    l.r[MS_PANEL_TIMELINE].h < 5)
		fail_msg("%s: timeline too short", where);
	if (ms_rect_visible(l.r[MS_PANEL_OVERLAY]))
		fail_msg("%s: overlay without being asked", where);
}

static void
test_every_size(void **state)
{
	(void)state;
	for (int w = MS_MIN_W; w <= MAX_W; w++)
		for (int h = MS_MIN_H; h <= MAX_H; h++)
			for (int fh = 1; fh <= MS_FOOTER_MAX_H; fh++)
				check_size(w, h, fh);
}

static int
visible_count(int w, int h)
{
	ms_layout l;
	ms_layout_compute(w, h, NULL, &l);
	int n = 0;
	for (size_t i = 0; i < NTILED; i++)
		n += ms_rect_visible(l.r[tiled[i]]);
	return n;
}

static bool
shows(int w, int h, enum ms_panel_id p)
{
	ms_layout l;
	ms_layout_compute(w, h, NULL, &l);
	return ms_rect_visible(l.r[p]);
}

static void
test_growing_never_hides(void **state)
{
	(void)state;
	for (int w = MS_MIN_W; w <= MAX_W; w++)
		for (int h = MS_MIN_H; h <= MAX_H; h++)
			for (size_t i = 0; i < NTILED; i++) {
				if (!shows(w, h, tiled[i]))
					continue;
				if (w < MAX_W && !shows(w + 1, h, tiled[i]))
					fail_msg("%dx%d -> %dx%d hides %d", w,
					         h, w + 1, h, (int)tiled[i]);
				if (h < MAX_H && !shows(w, h + 1, tiled[i]))
					fail_msg("%dx%d -> %dx%d hides %d", w,
					         h, w, h + 1, (int)tiled[i]);
			}
}

static void
test_extremes(void **state)
{
	(void)state;
	/* The smallest screen shows exactly the required panels. */
	assert_int_equal(visible_count(80, 24), 5);
	assert_false(shows(80, 24, MS_PANEL_STAGING));
	/* Staging comes first, then the timeline, then plugins. */
	assert_true(shows(80, 28, MS_PANEL_STAGING));
	assert_false(shows(80, 28, MS_PANEL_TIMELINE));
	assert_true(shows(80, 34, MS_PANEL_TIMELINE));
	assert_false(shows(99, 70, MS_PANEL_PLUGINS)); /* narrow: folded */
	assert_true(shows(100, 42, MS_PANEL_PLUGINS));
	/* The biggest shows everything. */
	assert_int_equal(visible_count(250, 70), (int)NTILED);
}

static void
test_too_small(void **state)
{
	(void)state;
	static const int sizes[][2] = { { 79, 24 },  { 80, 23 }, { 79, 70 },
		                        { 250, 23 }, { 1, 1 },   { 0, 0 } };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		ms_layout l;
		ms_layout_compute(sizes[i][0], sizes[i][1], NULL, &l);
		assert_true(l.too_small);
		for (int p = 0; p < MS_PANEL_COUNT; p++)
			assert_false(ms_rect_visible(l.r[p]));
	}
}

static void
test_overlay_inside(void **state)
{
	(void)state;
	for (int fh = 1; fh <= MS_FOOTER_MAX_H; fh++)
		for (int w = MS_MIN_W; w <= MAX_W; w += 7)
			for (int h = MS_MIN_H; h <= MAX_H; h += 5) {
				ms_layout_opts o = { .overlay = true,
					             .footer_h = fh };
				ms_layout l;
				ms_layout_compute(w, h, &o, &l);
				ms_rect r = l.r[MS_PANEL_OVERLAY];
				assert_true(ms_rect_visible(r));
				assert_true(r.x >= 0 && r.y >= 1);
				/* Above the footer: a wrapped message
				 * shows whole. */
				assert_true(r.x + r.w <= w &&
				            r.y + r.h <= h - fh);
				assert_true(r.h >= 18 && r.w >= 60);
			}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_size),
		cmocka_unit_test(test_growing_never_hides),
		cmocka_unit_test(test_extremes),
		cmocka_unit_test(test_too_small),
		cmocka_unit_test(test_overlay_inside),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
