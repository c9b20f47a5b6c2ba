/*
 * test_tui_keys.c - what the keys do, against a fake controller that
 * records each call: run/pause, step, run to breakpoint, speed steps up to
 * max, go to a time or merge, the breakpoint list, freeze only at a
 * barrier, filter and export of what the filter shows, the command line,
 * help, focus, quit; and one whole ms_tui_run session fed keys through a
 * pipe, which must drive the controller and give the terminal back.
 */
#include <setjmp.h>
#include <sys/stat.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tui_fake.h"
#include "tui_int.h"

#include <ctype.h>
#include <fcntl.h>
#include <locale.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct fx {
	ms_tui_view *model;
	fake_ctl fake;
	ms_tui_ctl ctl;
	ms_tui_session s;
} fx;

static int
setup(void **state)
{
	fx *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	f->model = ms_tui_view_new();
	assert_non_null(f->model);
	fake_scene_running(f->model);
	fake_init(&f->fake, &f->ctl, f->model);
	assert_int_equal(ms_session_init(&f->s, &f->ctl), 0);
	assert_int_equal(ms_session_snapshot(&f->s), 0);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	fx *f = *state;
	ms_session_release(&f->s);
	ms_tui_view_free(f->model);
	free(f);
	return 0;
}

static void
keys(fx *f, const char *s)
{
	for (; *s; s++)
		ms_session_key(&f->s, *s == '\n' ? MS_KEY_ENTER : *s);
	ms_session_snapshot(&f->s);
}

static void
test_run_pause_step(void **state)
{
	fx *f = *state;
	keys(f, " "); /* running -> pause */
	f->model->state = MS_VIEW_PAUSED;
	ms_session_snapshot(&f->s);
	keys(f, " "); /* paused -> run */
	keys(f, ".");
	ms_session_key(&f->s, MS_KEY_F(5));
	keys(f, "]n");
	ms_session_key(&f->s, MS_KEY_F(6));
	assert_string_equal(f->fake.log,
	                    "pause;run;step;step;tobreak;barrier;tobreak;");
}

/* A pause that lands before the screen's next look at the run (at 1200x
 * a publication comes every few ms): the run is first seen PAUSED, and
 * the footer's "pausing at the next publication or barrier" goes then
 * too. It stayed beside PAUSED until the run moved again. */
static void
test_pause_seen_landed_at_once(void **state)
{
	fx *f = *state;
	ms_session_key(&f->s, ' ');
	f->model->state = MS_VIEW_PAUSED;
	ms_session_snapshot(&f->s);
	assert_string_equal(f->fake.log, "pause;");
	assert_string_equal(f->s.view->ui.message, "");
	/* Any other message stays where the run stopped. */
	keys(f, "z");
	ms_session_snapshot(&f->s);
	assert_string_not_equal(f->s.view->ui.message, "");
}

/* A pause stops the run at its next point, which may be far (the verdict
 * oracle before the first publication, a long merge): a second space
 * while the view still shows RUNNING runs on, as the key says (it asked
 * for the pause again: two quick spaces left the run paused). The footer
 * says the run is pausing until it is seen stopped (it said "paused",
 * and only then: the message goes when the run moves). Once the run is
 * seen stopped, space runs and the next one pauses again. */
static void
test_space_again_before_the_pause_runs_on(void **state)
{
	fx *f = *state;
	keys(f, " "); /* running -> pause, not there yet */
	assert_string_equal(f->s.view->ui.message,
	                    "pausing at the next publication or barrier");
	keys(f, " "); /* still running: run on */
	assert_string_equal(f->fake.log, "pause;run;");
	assert_string_equal(f->s.view->ui.message,
	                    "running on: the pause asked for is dropped");
	f->fake.log[0] = '\0';
	keys(f, " "); /* pause */
	f->model->state = MS_VIEW_PAUSED;
	ms_session_snapshot(&f->s);
	assert_string_equal(f->s.view->ui.message, ""); /* it is there */
	keys(f, " "); /* paused -> run */
	f->model->state = MS_VIEW_RUNNING;
	ms_session_snapshot(&f->s);
	keys(f, " "); /* running -> pause */
	assert_string_equal(f->fake.log, "pause;run;pause;");
	/* In the finalize no publication is left: the pause lands at the
	 * finalize's barrier or at the end (it said "the next publication
	 * or barrier" while the finalize merge ran, and the run ended). */
	keys(f, " "); /* run on */
	snprintf(f->model->phase, sizeof(f->model->phase), "finalize");
	ms_session_snapshot(&f->s);
	keys(f, " ");
	assert_string_equal(f->s.view->ui.message,
	                    "pausing at the finalize merge's barrier, or at "
	                    "the end if it runs already");
	keys(f, " "); /* run on */
	snprintf(f->model->phase, sizeof(f->model->phase), "end");
	ms_session_snapshot(&f->s);
	keys(f, " ");
	assert_string_equal(f->s.view->ui.message,
	                    "pausing: the run is at its end, its gates are "
	                    "read");
}

static void
test_speed_steps(void **state)
{
	fx *f = *state;
	keys(f, "+");  /* 60 -> 120 */
	keys(f, "--"); /* -> 60 -> 30 */
	assert_string_equal(f->fake.log, "speed=120;speed=60;speed=30;");
	f->fake.log[0] = '\0';
	for (int i = 0; i < 20; i++)
		keys(f, "+");
	/* Ends at max (0) and stays there. */
	assert_non_null(strstr(f->fake.log, "speed=3600;speed=0;"));
	assert_true(f->s.view->speed == 0);
	char *last = strrchr(f->fake.log, '=');
	assert_string_equal(last, "=0;");
	f->fake.log[0] = '\0';
	for (int i = 0; i < 20; i++)
		keys(f, "-");
	assert_true(f->s.view->speed == 1);
	/* The default 1200x is on the ladder, between 600x and 1800x. */
	f->fake.log[0] = '\0';
	f->model->speed = 1200;
	ms_session_snapshot(&f->s);
	keys(f, "+--");
	assert_string_equal(f->fake.log, "speed=1800;speed=1200;speed=600;");
	/* A speed between two steps (:speed 1500): `+` and `-` each go to
	 * the nearer step on its side, 1800x and 1200x. */
	static const struct {
		double from;
		const char *key, *log;
	} between[] = {
		{ 1500, "+", "speed=1800;" }, { 1500, "-", "speed=1200;" },
		{ 45, "+", "speed=60;" },     { 45, "-", "speed=30;" },
		{ 0.5, "+", "speed=1;" },     { 4000, "+", "speed=0;" },
		{ 4000, "-", "speed=3600;" }, { 0, "-", "speed=3600;" },
	};
	for (size_t i = 0; i < sizeof(between) / sizeof(between[0]); i++) {
		f->fake.log[0] = '\0';
		f->model->speed = between[i].from;
		ms_session_snapshot(&f->s);
		keys(f, between[i].key);
		assert_string_equal(f->fake.log, between[i].log);
	}
	/* `:speed 1500` says the speed it set, as `+` and `-` do ("speed
	 * set" did not, and at 80 columns the status line has no room for
	 * it). */
	f->fake.log[0] = '\0';
	keys(f, ":speed 1500\n");
	assert_string_equal(f->fake.log, "speed=1500;");
	assert_string_equal(f->s.view->ui.message, "speed 1500x");
	/* Below 1x `-` keeps the speed: it never speeds up, and never sets
	 * 0 (max). */
	for (int k = 0; k < 2; k++) {
		f->fake.log[0] = '\0';
		f->model->speed = k ? 1 : 0.5;
		ms_session_snapshot(&f->s);
		keys(f, "-");
		assert_string_equal(f->fake.log, "");
		assert_true(f->s.view->speed == (k ? 1 : 0.5));
		assert_non_null(strstr(f->s.view->ui.message, "slowest"));
	}
}

static void
test_goto(void **state)
{
	fx *f = *state;
	/* Every `g` runs at full speed (0) ... */
	keys(f, "g12:30\n");
	keys(f, "g#80\n");
	keys(f, "g+1d 01:00\n");
	assert_string_equal(f->fake.log, "speed=0;runto=45000s;speed=0;"
	                                 "runto=#80;speed=0;runto=90000s;");
	assert_non_null(strstr(f->s.view->ui.message, "full speed"));
	keys(f, "gbogus\n");
	assert_true(f->s.view->ui.message_is_error);
	assert_non_null(strstr(f->s.view->ui.message, "bogus"));
	/* ... and the speed the user had (60x) comes back when the run
	 * stops, with the "running to" message gone. */
	f->fake.log[0] = '\0';
	keys(f, "g13:00\n");
	assert_non_null(strstr(f->s.view->ui.message, "running to 13:00:00"));
	f->model->state = MS_VIEW_PAUSED;
	f->model->now += 6 * FAKE_H;
	ms_session_snapshot(&f->s);
	assert_string_equal(f->fake.log, "speed=0;runto=46800s;speed=60;");
	assert_true(f->s.view->speed == 60);
	assert_string_equal(f->s.view->ui.message, "");
}

/* The status line of the session's view drawn w columns wide, into row. */
static void
status_row(fx *f, int w, char *row, size_t n)
{
	ms_canvas cv;
	ms_canvas_init(&cv);
	assert_int_equal(ms_render_frame(&cv, f->s.view, w, 30), 0);
	ms_canvas_row(&cv, 0, row, n);
	ms_canvas_release(&cv);
}

/* While a `g` runs, the status line says where to, even at 80 columns;
 * once the run stops, the target leaves it. */
static void
test_goto_target_on_status(void **state)
{
	fx *f = *state;
	char row[1024];
	keys(f, "g13:00\n");
	ms_session_snapshot(&f->s);
	status_row(f, 80, row, sizeof(row));
	assert_non_null(strstr(row, "RUNNING  to 13:00:00 t "));
	keys(f, "g#80\n");
	ms_session_snapshot(&f->s);
	status_row(f, 200, row, sizeof(row));
	assert_non_null(strstr(row, " to #80 "));
	f->model->state = MS_VIEW_PAUSED;
	ms_session_snapshot(&f->s);
	assert_string_equal(f->s.view->ui.go_target, "");
	status_row(f, 200, row, sizeof(row));
	assert_null(strstr(row, " to #80"));
	/* A `g` that fails sets no target. */
	f->model->state = MS_VIEW_RUNNING;
	ms_session_snapshot(&f->s);
	keys(f, "gbogus\n");
	assert_string_equal(f->s.view->ui.go_target, "");
	/* Nor does one the controller refuses while another is running. */
	keys(f, "g20:00\n");
	ms_session_snapshot(&f->s);
	f->fake.fail = 1;
	keys(f, "g21:00\n");
	assert_true(f->s.view->ui.message_is_error);
	assert_string_equal(f->s.view->ui.go_target, "20:00:00");
	f->fake.fail = 0;
}

/* Checkpoints thinned for lack of room: said once as the message, kept
 * until the next one; said again only when the note changes. */
static void
test_checkpoint_note_said(void **state)
{
	fx *f = *state;
	ms_session_snapshot(&f->s);
	assert_string_equal(f->s.view->ui.message, "");
	snprintf(f->model->checkpoint_note, sizeof(f->model->checkpoint_note),
	         "checkpoints thinned to 0: 12 MiB free");
	ms_session_snapshot(&f->s);
	assert_string_equal(f->s.view->ui.message,
	                    "checkpoints thinned to 0: 12 MiB free");
	f->s.view->ui.message[0] = '\0';
	f->model->pub_done++;
	ms_session_snapshot(&f->s);
	assert_string_equal(f->s.view->ui.message, "");
	f->model->checkpoint_note[0] = '\0';
	ms_session_snapshot(&f->s);
	assert_string_equal(f->s.view->ui.message, "");
}

static void type_line(fx *f, const char *text);

/* Whether any row of the session's view drawn at w x h holds text. */
static bool
screen_has_at(fx *f, int w, int h, const char *text)
{
	ms_canvas cv;
	ms_canvas_init(&cv);
	assert_int_equal(ms_render_frame(&cv, f->s.view, w, h), 0);
	char row[2048];
	bool found = false;
	for (int y = 0; y < h && !found; y++) {
		ms_canvas_row(&cv, y, row, sizeof(row));
		found = strstr(row, text) != NULL;
	}
	ms_canvas_release(&cv);
	return found;
}

/* The view drawn at w x h, on standard error (a failure's evidence). */
static void
screen_dump(fx *f, int w, int h)
{
	ms_canvas cv;
	ms_canvas_init(&cv);
	assert_int_equal(ms_render_frame(&cv, f->s.view, w, h), 0);
	char row[2048];
	for (int y = 0; y < h; y++) {
		ms_canvas_row(&cv, y, row, sizeof(row));
		fprintf(stderr, "%s\n", row);
	}
	ms_canvas_release(&cv);
}

static bool
screen_has(fx *f, const char *text)
{
	return screen_has_at(f, 200, 60, text);
}

/* At 80x24 the Pending panel is 32 columns wide: each line is shortened
 * whole, so the lane, the counts, the prediction and when the first hot
 * input matures all still show. */
static void
test_pending_narrow(void **state)
{
	fx *f = *state;
	fake_scene_break(f->model);
	ms_session_snapshot(&f->s);
	assert_true(screen_has_at(f, 80, 24, "lane fast"));
	assert_true(screen_has_at(f, 80, 24, "mature 3  hot 5"));
	/* "predicted not_executed (merge_grace)" needs 36 columns, the
	 * panel has 32 (it read "pred not_executed (merge_grace)"): the
	 * class whole, and the line under it says why, with no room for
	 * the reason's own line above an input. */
	assert_true(screen_has_at(f, 80, 24, "predicted not_executed  "));
	assert_false(screen_has_at(f, 80, 24, "pred not_executed"));
	assert_false(screen_has_at(f, 80, 24, "(merge_gr"));
	assert_true(screen_has_at(f, 80, 24, "5 hot, first matures "));
	assert_true(screen_has(f, "predicted not_executed (merge_grace)"));
	assert_true(screen_has(f, "bypassed (5 hot): oldest matures "));
	/* Both times wherever they fit: at 100 and 132 columns the line gave
	 * the first only ("bypassed (5 hot): first matures 07:12:30"). */
	assert_true(screen_has_at(f, 100, 34, "bypassed: 5 hot, mature "));
	assert_true(screen_has_at(f, 132, 44, "bypassed: 5 hot, mature "));
	assert_false(screen_has_at(f, 100, 34, "first matures"));
	assert_false(screen_has_at(f, 132, 44, "first matures"));
	assert_true(screen_has_at(f, 80, 24, "frontier 04:12:30  max depth 1"));
	f->s.view->sel.frontier = f->s.view->day_start - FAKE_H;
	assert_true(screen_has_at(f, 80, 24, "frontier -1d 23:00:00  depth 1"));
	assert_true(screen_has(f, "frontier -1d 23:00:00  max depth 1"));
	/* A reason too long to go beside the class gets its own line (it
	 * was cut: "pred not_executed (fragment_ga"), also at 132x44. */
	ms_tui_selection *sel = &f->s.view->sel;
	snprintf(sel->reason, sizeof(sel->reason), "fragment_gap_contract");
	assert_true(screen_has_at(f, 80, 24, "predicted not_executed  "));
	assert_true(screen_has_at(f, 80, 24, "reason fragment_gap_contract "));
	assert_false(screen_has_at(f, 80, 24, "(fragment"));
	assert_true(screen_has_at(f, 132, 44, "reason fragment_gap_contract "));
	assert_true(screen_has(
	        f, "predicted not_executed (fragment_gap_contract)"));
	snprintf(sel->reason, sizeof(sel->reason), "merge_grace");
	/* None pending: how to get to one, and after the end how to start
	 * again. */
	f->s.view->sel.present = false;
	assert_true(screen_has_at(f, 80, 24, "] runs to the next breakpoint"));
	f->s.view->state = MS_VIEW_DONE;
	assert_true(screen_has_at(f, 80, 24, "the day is over: r runs it"));
}

/* The pending panel drawn alone in a box of h rows (inside): whether a
 * row holds text. */
static bool
pending_has(const ms_tui_view *v, int h, const char *text)
{
	ms_canvas cv;
	ms_canvas_init(&cv);
	assert_int_equal(ms_canvas_reset(&cv, 50, h + 2), 0);
	cv.ascii = true;
	ms_rect r = { 0, 0, 50, h + 2 };
	ms_panel_selection.draw(&cv, r, v);
	char row[512];
	bool found = false;
	for (int y = 0; y < h + 2 && !found; y++) {
		ms_canvas_row(&cv, y, row, sizeof(row));
		found = strstr(row, text) != NULL;
	}
	ms_canvas_release(&cv);
	return found;
}

/* The pending inputs that do not show end the list as "... N more":
 * with room for one line only (it said nothing of the 8), and when the
 * view keeps fewer inputs than the selection has (the list just ended). */
static void
test_pending_more(void **state)
{
	fx *f = *state;
	fake_scene_break(f->model);
	ms_session_snapshot(&f->s);
	ms_tui_view *v = f->s.view;
	/* Five lines of figures, then the inputs. */
	assert_true(pending_has(v, 20, "0000000000000200"));
	assert_false(pending_has(v, 20, "more"));
	assert_true(pending_has(v, 9, "... 6 more"));
	/* Two lines: an input and the rest counted, no header over the
	 * count alone. */
	assert_true(pending_has(v, 7, "0000000000000200"));
	assert_true(pending_has(v, 7, "... 7 more"));
	assert_false(pending_has(v, 7, "rows  d s"));
	assert_true(pending_has(v, 6, "... 8 more"));
	assert_false(pending_has(v, 6, "rows  d s"));
	/* Five of 8 kept: all five show, then the rest is counted. */
	v->sel.ninputs = 5;
	assert_true(pending_has(v, 20, "... 3 more"));
	assert_true(pending_has(v, 9, "... 6 more"));
}

/* One merge, one part and one match are singular in the panel titles. */
static void
test_titles_singular(void **state)
{
	fx *f = *state;
	f->model->nevents = 1;
	f->model->events_total = 1;
	f->model->nparts = 1;
	f->model->parts_total = 1;
	ms_session_snapshot(&f->s);
	assert_true(screen_has(f, "Events 1 merge "));
	assert_true(screen_has(f, "Inventory 1 part "));
	keys(f, "/");
	type_line(f, "seq>=1\n");
	assert_true(screen_has(f, "Events 1 merge, 1 matches /seq>=1"));
	f->model->nevents = 2;
	f->model->events_total = 2;
	ms_session_snapshot(&f->s);
	assert_true(screen_has(f, "Events 2 merges, 2 match /seq>=1"));
}

/* The merge in Decide, on the Plugins panel: whole at 200 columns where
 * the panel is 78 wide (no word cut), and in full on a wider panel. */
static void
test_live_line_fits(void **state)
{
	fx *f = *state;
	ms_tui_live *l = &f->model->live;
	l->present = true;
	l->seq = 246;
	l->inflight = 1;
	l->wall_ns = 25130000000LL;
	l->calls = 2;
	l->traces = 74600;
	l->decide_ns = 3870000;
	ms_session_snapshot(&f->s);
	assert_true(screen_has(f, "merge #246 in Decide: 2 calls, 74.6k "
	                          "traces, 3.87ms, 25.13s elapsed"));
	assert_true(screen_has_at(f, 132, 46,
	                          "merge #246 in Decide: 2 calls, 74.6k "
	                          "traces, 3.87ms in Decide, 25.13s since "
	                          "dispatch"));
	/* Before its first Decide call it is staging, and says so
	 * (it said "in Decide: 0 calls"). */
	l->calls = l->traces = 0;
	l->decide_ns = 0;
	l->wall_ns = 669420000;
	ms_session_snapshot(&f->s);
	assert_true(screen_has_at(f, 132, 46,
	                          "merge #246 staging, no Decide call yet, "
	                          "669.42ms since dispatch"));
	assert_false(screen_has_at(f, 132, 46, "in Decide: 0 calls"));
	/* The first call: one, not "1 calls" (as the finalize of day-1x
	 * showed it). */
	l->calls = 1;
	l->traces = 37300;
	l->decide_ns = 10100000;
	ms_session_snapshot(&f->s);
	assert_true(screen_has_at(f, 132, 46,
	                          "merge #246 in Decide: 1 call, 37.3k "
	                          "traces, 10.10ms in Decide"));
	assert_true(screen_has(f, "merge #246 in Decide: 1 call, 37.3k "
	                          "traces, 10.10ms, "));
}

/* A mouse event of kind at (dx, dy) inside panel's rectangle at 132x44. */
static void
mouse_in(fx *f, enum ms_panel_id panel, enum ms_mouse_kind kind, int dx, int dy)
{
	ms_layout lo;
	ms_layout_compute(132, 44, &(ms_layout_opts){ 0 }, &lo);
	ms_rect r = lo.r[panel];
	ms_mouse m = { .kind = kind, .x = r.x + dx, .y = r.y + dy };
	ms_session_mouse(&f->s, &m, 132, 44);
}

/* ns per trace as `mergescope report` prints it: 1.666 ms over 37288
 * traces is 44.7 (the panel said 44), 5 s over 37288 is 134088. */
static void
test_plugin_mean_as_report(void **state)
{
	fx *f = *state;
	ms_tui_plugin *p = &f->model->plugins[0];
	p->traces = 37288;
	p->total_ns = 1666000;
	ms_session_snapshot(&f->s);
	assert_true(screen_has(f, "  1.67ms   44.7 "));
	p->total_ns = 4999800000ULL;
	ms_session_snapshot(&f->s);
	assert_true(screen_has(f, "  5.00s 134086 "));
}

/* A chain longer than the plugins band (four links at 132x44): the
 * title says which links show and the list follows the selection (links
 * five and six were not drawn and the selection went out of sight); a
 * click selects the link under it; the line of a merge in Decide keeps
 * its row. */
static void
test_long_chain_scrolls(void **state)
{
	fx *f = *state;
	static const char *const names[] = { "alwayskeep", "detdrop",
		                             "mask",       "slowlink",
		                             "skywalking", "lastlink" };
	f->model->nplugins = 6;
	for (size_t i = 0; i < 6; i++) {
		f->model->plugins[i] = f->model->plugins[0];
		snprintf(f->model->plugins[i].name,
		         sizeof(f->model->plugins[i].name), "%s", names[i]);
	}
	ms_session_snapshot(&f->s);
	assert_true(screen_has_at(f, 132, 44, "Plugins 6 links, 1-4 shown"));
	assert_false(screen_has_at(f, 132, 44, "lastlink"));
	f->s.view->ui.focus = MS_FOCUS_PLUGINS;
	ms_session_key(&f->s, MS_KEY_END);
	assert_int_equal(f->s.view->ui.plugin_sel, 5);
	assert_true(screen_has_at(f, 132, 44, "Plugins 6 links, 3-6 shown"));
	assert_true(screen_has_at(f, 132, 44, "lastlink"));
	assert_false(screen_has_at(f, 132, 44, "alwayskeep"));
	/* A click on the first link row (under the border and header). */
	mouse_in(f, MS_PANEL_PLUGINS, MS_MOUSE_CLICK, 5, 2);
	assert_int_equal(f->s.view->ui.plugin_sel, 2); /* "mask" */
	f->s.view->ui.plugin_sel = 5;
	f->model->live.present = true;
	f->model->live.seq = 77;
	f->model->live.inflight = 1;
	f->model->live.calls = 1;
	ms_session_snapshot(&f->s);
	assert_true(screen_has_at(f, 132, 44, "merge #77 in Decide"));
	assert_true(screen_has_at(f, 132, 44, "Plugins 6 links, 4-6 shown"));
	assert_true(screen_has_at(f, 132, 44, "lastlink"));
	/* Links in host processes: the title says so (their times hold
	 * the round trip). */
	f->model->plugin_process = true;
	ms_session_snapshot(&f->s);
	assert_true(screen_has_at(f, 132, 44,
	                          "Plugins in host processes 6 links, 4-6 "
	                          "shown"));
}

/* The replay at the finalize's barrier: two hours after the day, the
 * frontier at its end. */
static void
at_finalize(fx *f)
{
	f->model->now = f->model->day_end + 2 * FAKE_H;
	f->model->frontier = f->model->day_end;
	ms_session_snapshot(&f->s);
}

/* At the end of the day the frontier line stands on the axis's last
 * column: the "24" label stays whole beside it. */
static void
test_axis_end_label(void **state)
{
	fx *f = *state;
	at_finalize(f);
	f->s.view->ui.ascii = true;
	assert_true(screen_has(f, "23----24||"));
	assert_true(screen_has_at(f, 132, 46, "23-24||"));
}

/* The frontier line in the axis's second column (t 02:09, frontier
 * 00:09, 132 columns): the "00" label goes just right of it, as there is
 * no room left of it; it was left out (in the first column too). Where
 * the line crosses a label with room on its left, the label goes there,
 * as before. */
static void
test_axis_label_beside_frontier(void **state)
{
	fx *f = *state;
	f->model->now = f->model->day_start + 2 * FAKE_H + 9 * FAKE_MIN;
	f->model->frontier = f->model->day_start + 9 * FAKE_MIN;
	ms_session_snapshot(&f->s);
	f->s.view->ui.ascii = true;
	if (!screen_has_at(f, 132, 44, "|-|00-01----02")) {
		screen_dump(f, 132, 44);
		fail_msg("no \"00\" beside the frontier");
	}
	f->model->frontier = f->model->day_start + 5 * FAKE_H + 9 * FAKE_MIN;
	ms_session_snapshot(&f->s);
	assert_true(screen_has_at(f, 132, 44, "04--05|---06"));
	/* In the first column (t 02:00), the same. */
	f->model->frontier = f->model->day_start;
	ms_session_snapshot(&f->s);
	assert_true(screen_has_at(f, 132, 44, "||00--01----02"));
}

/* Zoomed, a tick label the frontier line crosses moves beside it, as
 * the day's hour labels do: at 6 h (t 12:00, 132 columns) the line at
 * 10:00 stands just right of "10:00", and one a column further in
 * (10:01) just left of "10:00" ... and at the axis's first column
 * (frontier 07:30, the window's start) just right of "07:30", there
 * being no room on its left. Each was left out. */
static void
test_axis_zoomed_label_beside_frontier(void **state)
{
	fx *f = *state;
	f->model->now = f->model->day_start + 12 * FAKE_H;
	f->model->frontier = f->model->day_start + 10 * FAKE_H;
	ms_session_snapshot(&f->s);
	f->s.view->ui.ascii = true;
	f->s.view->ui.zoom = 1;
	if (!screen_has_at(f, 132, 44, "-10:00|-")) {
		screen_dump(f, 132, 44);
		fail_msg("no \"10:00\" beside the frontier at 6 h");
	}
	f->model->frontier = f->model->day_start + 7 * FAKE_H + 30 * FAKE_MIN;
	ms_session_snapshot(&f->s);
	if (!screen_has_at(f, 132, 44, "||07:30-")) {
		screen_dump(f, 132, 44);
		fail_msg("no \"07:30\" beside the frontier at 6 h");
	}
	/* At 1 h (t 12:00, frontier 11:45): "11:45" beside it. */
	f->model->frontier = f->model->day_start + 11 * FAKE_H + 45 * FAKE_MIN;
	ms_session_snapshot(&f->s);
	f->s.view->ui.zoom = 2;
	if (!screen_has_at(f, 132, 44, "-11:45|-")) {
		screen_dump(f, 132, 44);
		fail_msg("no \"11:45\" beside the frontier at 1 h");
	}
}

/* At 80 columns, while every merge so far bypassed sampling, the count
 * still shows in its short form; with both kinds it gives way. */
static void
test_counts_short_form(void **state)
{
	fx *f = *state;
	char row[1024];
	f->s.view->merges_sampled = 0;
	f->s.view->merges_bypassed = 31;
	status_row(f, 80, row, sizeof(row));
	assert_non_null(strstr(row, " merges 57 (31 bypassed)"));
	status_row(f, 200, row, sizeof(row));
	assert_non_null(strstr(row, " (0 sampled, 31 bypassed)"));
	f->s.view->merges_sampled = 2;
	status_row(f, 80, row, sizeof(row));
	assert_null(strstr(row, "bypassed"));
	assert_non_null(strstr(row, " merges 57"));
}

/* At 80 columns the status line keeps what the run is (its variant)
 * over the publications count, which the time stands for: the variant was
 * the first to go once the counts were shown. What goes is left out
 * whole, and the wide line has every field. */
static void
test_status_80_keeps_variant(void **state)
{
	fx *f = *state;
	char row[1024];
	f->s.view->merges_sampled = 0;
	f->s.view->merges_bypassed = 31;
	status_row(f, 80, row, sizeof(row));
	assert_non_null(strstr(row, " t 06:12:30 frontier 04:12:30 merges 57 "
	                            "(31 bypassed) skywalking"));
	assert_null(strstr(row, "pub "));
	fake_scene_break(f->model);
	ms_session_snapshot(&f->s);
	status_row(f, 80, row, sizeof(row));
	assert_non_null(strstr(row, "at break 1: mature t "));
	assert_non_null(strstr(row, " skywalking"));
	status_row(f, 200, row, sizeof(row));
	assert_non_null(strstr(row, " pub "));
	assert_non_null(strstr(row, " speed "));
	assert_non_null(strstr(row, " primary"));
}

/* A variant too long for the 80-column line (a chain) is left out, and
 * the merges, which went before it, come back in the room it left: the
 * line read "t ... frontier ...  db ..." with no merge count. */
static void
test_status_80_long_variant_keeps_merges(void **state)
{
	fx *f = *state;
	char row[1024];
	f->s.view->merges_sampled = 0;
	f->s.view->merges_bypassed = 31;
	snprintf(f->s.view->variant, sizeof(f->s.view->variant), "%s",
	         "skywalking,detdrop:{\"percent\":35},alwayskeep");
	status_row(f, 80, row, sizeof(row));
	assert_non_null(strstr(row, " t 06:12:30 frontier 04:12:30 "));
	assert_non_null(strstr(row, " merges 57 (31 bypassed)"));
	assert_null(strstr(row, "detdrop"));
	status_row(f, 200, row, sizeof(row));
	assert_non_null(strstr(row, "skywalking,detdrop:{\"percent\":35},"
	                            "alwayskeep"));
}

/* A breakpoint hit names its spec on the status line at every width the
 * screen draws, before the counts that make room for it. */
static void
test_break_spec_on_status(void **state)
{
	fx *f = *state;
	char row[1024];
	fake_scene_break(f->model);
	ms_session_snapshot(&f->s);
	for (int w = 80; w <= 200; w += 40) {
		status_row(f, w, row, sizeof(row));
		assert_non_null(strstr(row, "BREAK    at break 1: mature t "));
	}
}

/* The status line's sampled / bypassed counts are the replay's, also
 * after going back: at `g #700` behind a run of 751 merges (the recent
 * events hold the last 512 of them, the database 699 merges, every one
 * bypassed) it read "bypassed 461", the merges it could count from the
 * recent events the screen was given. */
static void
test_sampling_counts(void **state)
{
	fx *f = *state;
	char row[1024];
	/* The scene's 57 merges, every 4th executed. */
	f->model->merges_sampled = 14;
	f->model->merges_bypassed = 43;
	ms_session_snapshot(&f->s);
	status_row(f, 200, row, sizeof(row));
	assert_non_null(strstr(row, "(14 sampled, 43 bypassed)"));
	/* The run at its end: 751 merges, the last one sampled. */
	f->model->events_total = 751;
	f->model->merges_done = 751;
	f->model->merges_sampled = 1;
	f->model->merges_bypassed = 750;
	ms_session_snapshot(&f->s);
	status_row(f, 200, row, sizeof(row));
	assert_non_null(strstr(row, "(1 sampled, 750 bypassed)"));
	/* Back at #700's barrier: 699 merges, the recent events the same
	 * 57 shown (of them 14 executed). */
	f->model->events_total = 699;
	f->model->merges_done = 699;
	f->model->merges_sampled = 0;
	f->model->merges_bypassed = 699;
	ms_session_snapshot(&f->s);
	status_row(f, 200, row, sizeof(row));
	assert_non_null(strstr(row, " merges 699 (699 bypassed)") ||
	                strstr(row, "(0 sampled, 699 bypassed)"));
}

/* A target behind the replay is re-run to (the controller's restart: from
 * a checkpoint, or the day's start) at full speed, never forward to the
 * end; `[` and `{` go one barrier or publication back; `r` restarts. */
static void
test_goto_back(void **state)
{
	fx *f = *state;
	keys(f, "g#40\n"); /* 57 merges done */
	assert_string_equal(f->fake.log, "speed=0;restart=#40;");
	assert_non_null(strstr(f->s.view->ui.message, "re-running to"));
	/* (The go to #40 is still on its way: set on it, it goes on to
	 * 05:00 if it is not past it yet, or says so.) */
	f->fake.log[0] = '\0';
	keys(f, "g05:00\n"); /* now 06:12:30 */
	assert_string_equal(f->fake.log, "speed=0;runto=18000s;");
	f->fake.passed = true;
	f->fake.log[0] = '\0';
	keys(f, "g05:00\n");
	assert_string_equal(f->fake.log,
	                    "speed=0;runto=18000s;passed;restart=18000s;");
	f->fake.passed = false;
	f->fake.log[0] = '\0';
	keys(f, "g+1d 02:30\n"); /* after the finalize at +1d 02:00 */
	assert_true(f->s.view->ui.message_is_error);
	assert_non_null(strstr(f->s.view->ui.message, "+1d 02:00:00"));
	assert_string_equal(f->fake.log, "");
	/* At the barrier of #58: one barrier back is #57, one publication
	 * back the point before publication 831 (832 done). */
	fake_scene_break(f->model);
	ms_session_snapshot(&f->s);
	f->fake.log[0] = '\0';
	keys(f, "[{");
	/* (`{` waits for where the go of `[` stops, there at once as the
	 * fake stays at BREAK: the speed comes back there first.) */
	assert_string_equal(f->fake.log, "speed=0;restart=#57;speed=60;"
	                                 "speed=0;restart=pub831;");
	ms_session_snapshot(&f->s);
	keys(f, "g#58\n"); /* where it is */
	assert_true(f->s.view->ui.message_is_error);
	assert_non_null(strstr(f->s.view->ui.message, "already at"));
	/* After the end every target is behind. */
	f->model->state = MS_VIEW_DONE;
	f->model->sel.present = false;
	ms_session_snapshot(&f->s);
	f->fake.log[0] = '\0';
	keys(f, "g23:00\nr");
	/* (r before the go stopped: the user's speed back first.) */
	assert_string_equal(f->fake.log,
	                    "speed=0;restart=82800s;speed=60;restart;");
	/* ... but not one after the run's last point, nor the end itself:
	 * they re-ran from the last checkpoint to the end, silently. */
	f->model->now = f->model->day_end + 2 * FAKE_H;
	f->model->frontier = f->model->day_end;
	ms_session_snapshot(&f->s);
	f->fake.log[0] = '\0';
	keys(f, "g+1d 05:00\n");
	assert_string_equal(f->fake.log, "");
	assert_true(f->s.view->ui.message_is_error);
	assert_non_null(strstr(f->s.view->ui.message,
	                       "after the run's last point (the finalize at "
	                       "+1d 02:00:00)"));
	keys(f, "g+1d 02:00\n");
	assert_string_equal(f->fake.log, "");
	assert_true(f->s.view->ui.message_is_error);
	assert_non_null(strstr(f->s.view->ui.message,
	                       "the run is over at +1d 02:00:00"));
	keys(f, "g+1d 01:00\n");
	assert_int_equal(strncmp(f->fake.log, "speed=0;restart=90000s;", 23),
	                 0);
}

/* A `g` ahead of the view that the run passed as it was set (it went on
 * while the key was handled): the controller says so, and the go goes
 * back to the point instead, and says that. The target was set behind
 * the run, which never stopped there: it went on to the end. */
static void
test_goto_passed_goes_back(void **state)
{
	fx *f = *state;
	fake_scene_break(f->model); /* at #58's barrier */
	ms_session_snapshot(&f->s);
	f->fake.passed = true;
	f->fake.log[0] = '\0';
	for (const char *k = "g#70\n"; *k; k++)
		ms_session_key(&f->s, *k == '\n' ? MS_KEY_ENTER : *k);
	assert_string_equal(f->fake.log,
	                    "speed=0;runto=#70;passed;restart=#70;");
	assert_true(f->s.go_active);
	assert_false(f->s.view->ui.message_is_error);
	assert_string_equal(f->s.view->ui.message,
	                    "the run passed merge #70 as it was asked for: "
	                    "re-running to it at full speed");
}

/* `[` pressed while the run is on its way to a stop whose merge is not
 * known yet (`]`, a go to a time) waits for that stop and counts back
 * from there, each one from the one before; a pause drops those waiting.
 * They counted back from the view, which still showed the way there:
 * `] [ [` at #58 with the next breakpoint at #64 went back to #57 and
 * #56. */
static void
test_back_keys_wait_for_stop(void **state)
{
	fx *f = *state;
	fake_scene_break(f->model);
	ms_session_snapshot(&f->s);
	f->fake.log[0] = '\0';
	ms_session_key(&f->s, ']');
	f->model->state = MS_VIEW_RUNNING; /* on its way, #58 released */
	f->model->sel.present = false;
	ms_session_snapshot(&f->s);
	keys(f, "[[");
	assert_string_equal(f->fake.log, "tobreak;");
	assert_false(f->s.view->ui.message_is_error);
	assert_string_equal(f->s.view->ui.message,
	                    "[: back one barrier from where the run stops (2 "
	                    "kept; space drops them)");
	/* Stopped at #64's barrier: #63, then #62 set on the go to #63. */
	fake_scene_break(f->model);
	f->model->sel.seq = 64;
	ms_session_snapshot(&f->s);
	assert_string_equal(f->fake.log, "tobreak;speed=0;restart=#63;"
	                                 "speed=0;runto=#62;");
	assert_true(f->s.go_active);
	assert_int_equal(f->s.go_tgt.seq, 62);
	f->model->sel.seq = 62;
	ms_session_snapshot(&f->s);
	/* A go to a time on its way: the barrier last passed where it
	 * stops. */
	fake_scene_running(f->model);
	f->model->speed = 60;
	ms_session_snapshot(&f->s);
	f->fake.log[0] = '\0';
	keys(f, "g08:00\n[");
	assert_string_equal(f->fake.log, "speed=0;runto=28800s;");
	f->model->state = MS_VIEW_PAUSED;
	f->model->now = FAKE_DAY0 + 8 * FAKE_H - FAKE_MIN;
	f->model->merges_done = 63;
	ms_session_snapshot(&f->s);
	assert_string_equal(f->fake.log, "speed=0;runto=28800s;speed=60;"
	                                 "speed=0;restart=#63;");
	ms_session_snapshot(&f->s); /* the go to #63 stops */
	/* A pause drops those waiting. */
	fake_scene_running(f->model);
	ms_session_snapshot(&f->s);
	f->fake.log[0] = '\0';
	ms_session_key(&f->s, ']');
	ms_session_snapshot(&f->s);
	keys(f, "[ ");
	f->model->state = MS_VIEW_PAUSED;
	ms_session_snapshot(&f->s);
	assert_string_equal(f->fake.log, "tobreak;pause;");
	assert_string_equal(f->s.view->ui.message,
	                    "paused; the 1 [ or { kept for the run's stop "
	                    "dropped");
}

/* `.` and `n` pressed again while the one before is on its way: the
 * replay took a step asked for while stepping as that same step, so
 * `...` at the keyboard went one publication on, not three. Each one
 * more is kept and asked for where the run stops; another key than the
 * one on its way (`.` during `]`) still goes at once; space drops those
 * kept. */
static void
test_step_keys_wait_for_stop(void **state)
{
	fx *f = *state;
	f->model->state = MS_VIEW_PAUSED;
	ms_session_snapshot(&f->s);
	f->fake.log[0] = '\0';
	ms_session_key(&f->s, '.');
	f->model->state = MS_VIEW_RUNNING; /* on its way to the next point */
	ms_session_snapshot(&f->s);
	keys(f, "..");
	assert_string_equal(f->fake.log, "step;");
	assert_false(f->s.view->ui.message_is_error);
	assert_string_equal(f->s.view->ui.message,
	                    ".: one more step from where the run stops (2 "
	                    "kept; space drops them)");
	f->model->state = MS_VIEW_PAUSED; /* the first step's stop */
	ms_session_snapshot(&f->s);
	assert_string_equal(f->fake.log, "step;step;");
	f->model->state = MS_VIEW_RUNNING;
	ms_session_snapshot(&f->s);
	f->model->state = MS_VIEW_PAUSED;
	ms_session_snapshot(&f->s);
	assert_string_equal(f->fake.log, "step;step;step;");
	f->model->state = MS_VIEW_RUNNING;
	ms_session_snapshot(&f->s);
	f->model->state = MS_VIEW_PAUSED;
	ms_session_snapshot(&f->s);
	assert_string_equal(f->fake.log, "step;step;step;");
	/* `n n`: the next merge, then the one after. */
	f->fake.log[0] = '\0';
	ms_session_key(&f->s, 'n');
	f->model->state = MS_VIEW_RUNNING;
	ms_session_snapshot(&f->s);
	keys(f, "n");
	assert_string_equal(f->fake.log, "barrier;");
	fake_scene_break(f->model);
	ms_session_snapshot(&f->s);
	assert_string_equal(f->fake.log, "barrier;barrier;");
	/* `.` during a `]` goes at once; space drops the steps kept. */
	f->fake.log[0] = '\0';
	ms_session_key(&f->s, ']');
	f->model->state = MS_VIEW_RUNNING;
	ms_session_snapshot(&f->s);
	keys(f, "..");
	assert_string_equal(f->fake.log, "tobreak;step;");
	keys(f, " ");
	assert_string_equal(f->fake.log, "tobreak;step;pause;");
	assert_string_equal(f->s.view->ui.message,
	                    "paused; the 1 steps kept for the run's stop "
	                    "dropped");
	f->model->state = MS_VIEW_PAUSED;
	ms_session_snapshot(&f->s);
	assert_string_equal(f->fake.log, "tobreak;step;pause;");
}

/* Going back to a point with no checkpoint before it re-runs the day
 * from its start into a new database: the message names it, as the run
 * begins and again where it stops (the message of the start is gone by
 * then), for `g` and `[` alike. It said only "re-running to ...". Back
 * from a checkpoint, in the same database, it names none. */
static void
test_goto_back_names_database(void **state)
{
	fx *f = *state;
	const char *db = "/home/u/.cache/mergescope/runs/"
	                 "day-2x-skywalking.rerun-1.db";
	snprintf(f->fake.restart_db, sizeof(f->fake.restart_db), "%s", db);
	keys(f, "g#40\n"); /* 57 merges done, running */
	assert_string_equal(f->fake.log, "speed=0;restart=#40;");
	assert_true(f->s.go_active);
	assert_false(f->s.view->ui.message_is_error);
	assert_string_equal(f->s.view->ui.message,
	                    "re-running to merge #40 at full speed from the "
	                    "day's start (no checkpoint before it), recording "
	                    "to /home/u/.cache/mergescope/runs/"
	                    "day-2x-skywalking.rerun-1.db");
	/* Stopped there. */
	fake_scene_break(f->model);
	f->model->sel.seq = 40;
	snprintf(f->model->break_why, sizeof(f->model->break_why), "go #40");
	ms_session_snapshot(&f->s);
	assert_false(f->s.go_active);
	assert_string_equal(f->s.view->ui.message,
	                    "back at merge #40, re-run from the day's start, "
	                    "recording to /home/u/.cache/mergescope/runs/"
	                    "day-2x-skywalking.rerun-1.db");
	/* `[` from there: the fake stays at the barrier, so the go stops
	 * at the first snapshot. */
	keys(f, "[");
	assert_false(f->s.go_active);
	assert_non_null(strstr(f->s.view->ui.message, "back at merge #39, "));
	assert_non_null(strstr(f->s.view->ui.message, db));
	/* From a checkpoint: no database named. */
	f->fake.restart_db[0] = '\0';
	f->model->state = MS_VIEW_RUNNING;
	ms_session_snapshot(&f->s);
	keys(f, "g#30\n");
	assert_true(f->s.go_active);
	assert_string_equal(f->s.view->ui.message,
	                    "re-running to merge #30 at full speed");
	f->model->state = MS_VIEW_BREAK;
	ms_session_snapshot(&f->s);
	assert_null(strstr(f->s.view->ui.message, "recording"));
}

/* `r` names the database the new run records to: the message sent the
 * user to the status line, which at 132 columns had no room for it; and
 * it stays until the next key. */
static void
test_restart_names_database(void **state)
{
	fx *f = *state;
	snprintf(f->model->db_path, sizeof(f->model->db_path),
	         "/home/u/.cache/mergescope/runs/day-2x-skywalking.rerun-1.db");
	keys(f, "r");
	assert_string_equal(f->fake.log, "restart;");
	assert_false(f->s.view->ui.message_is_error);
	assert_string_equal(f->s.view->ui.message,
	                    "restarted the day, recording to "
	                    "/home/u/.cache/mergescope/runs/"
	                    "day-2x-skywalking.rerun-1.db");
	/* It stays while the new run runs and where it stops (at its
	 * first breakpoint within a second it was gone), until a key. */
	f->model->state = MS_VIEW_RUNNING;
	ms_session_snapshot(&f->s);
	f->model->state = MS_VIEW_BREAK;
	f->model->pub_done = 3;
	ms_session_snapshot(&f->s);
	assert_non_null(strstr(f->s.view->ui.message, "rerun-1.db"));
	keys(f, "o");
	assert_null(strstr(f->s.view->ui.message, "rerun-1.db"));
	/* Other messages go as the replay moves on. */
	f->model->state = MS_VIEW_RUNNING;
	ms_session_snapshot(&f->s);
	assert_string_equal(f->s.view->ui.message, "");
}

/* A `g #N` past the day's last merge: run to the end (the last merge not
 * known yet), it says so there; once the last merge is known (the run
 * over, or at the finalize's barrier) it is refused, naming it. */
static void
test_goto_past_last_merge(void **state)
{
	fx *f = *state;
	keys(f, "g#500\n");
	assert_string_equal(f->fake.log, "speed=0;runto=#500;");
	f->model->state = MS_VIEW_DONE;
	f->model->merges_done = 58;
	f->model->events[f->model->nevents - 1].seq = 58;
	ms_session_snapshot(&f->s);
	assert_true(f->s.view->ui.message_is_error);
	assert_non_null(
	        strstr(f->s.view->ui.message, "the day ended at merge #58"));
	assert_non_null(strstr(f->s.view->ui.message, "no merge #500"));
	f->fake.log[0] = '\0';
	keys(f, "g#500\n");
	assert_string_equal(f->fake.log, "");
	assert_true(f->s.view->ui.message_is_error);
	assert_non_null(strstr(f->s.view->ui.message,
	                       "past the day's last merge, #58"));
	/* At the finalize's barrier, before the end. */
	fake_scene_break(f->model);
	snprintf(f->model->sel.lane, sizeof(f->model->sel.lane), "finalize");
	ms_session_snapshot(&f->s);
	keys(f, "g#59\n");
	assert_string_equal(f->fake.log, "");
	assert_non_null(strstr(f->s.view->ui.message, "last merge, #58"));
	keys(f, "g#40\n"); /* behind: still goes back */
	assert_int_equal(strncmp(f->fake.log, "speed=0;restart=#40;", 20), 0);
}

/* A time out of range and a speed of 0 are refused saying what is
 * taken: "99:99" was "neither a time HH:MM[:SS] nor a merge number", a
 * time's form, and "speed 0" was told "a multiple like 60", which 0 is. */
static void
test_goto_and_speed_refusals_say_the_range(void **state)
{
	fx *f = *state;
	keys(f, "g99:99\n");
	assert_true(f->s.view->ui.message_is_error);
	assert_non_null(strstr(f->s.view->ui.message,
	                       "(hours to 48, minutes and seconds to 59)"));
	keys(f, ":speed 0\n");
	assert_true(f->s.view->ui.message_is_error);
	assert_non_null(strstr(f->s.view->ui.message,
	                       "speed \"0\": expected a multiple of real "
	                       "time like 60 or 60x (more than 0, at most "
	                       "1000000000), or max"));
	assert_string_equal(f->fake.log, "");
}

/* g #0 (or 0, #000) names no merge: said as such, not as a form that
 * is neither a time nor a merge number. A g stopped on the way at a
 * breakpoint, which drops its target, says so (it said nothing). */
static void
test_goto_zero_and_stopped_on_the_way(void **state)
{
	fx *f = *state;
	static const char *const zeros[] = { "g#0\n", "g0\n", "g#000\n",
		                             "g #0\n" };
	for (size_t i = 0; i < sizeof(zeros) / sizeof(zeros[0]); i++) {
		keys(f, zeros[i]);
		assert_true(f->s.view->ui.message_is_error);
		assert_non_null(
		        strstr(f->s.view->ui.message, "there is no merge #0"));
		assert_non_null(strstr(f->s.view->ui.message, "from #1"));
	}
	assert_string_equal(f->fake.log, "");
	keys(f, "g#70\n");
	assert_string_equal(f->fake.log, "speed=0;runto=#70;");
	f->model->state = MS_VIEW_BREAK;
	snprintf(f->model->break_why, sizeof(f->model->break_why), "mature");
	ms_session_snapshot(&f->s);
	assert_false(f->s.view->ui.message_is_error);
	assert_non_null(strstr(f->s.view->ui.message,
	                       "go #70: stopped before it at breakpoint "
	                       "mature"));
	/* At the target itself nothing more is said. */
	f->model->state = MS_VIEW_RUNNING;
	ms_session_snapshot(&f->s);
	keys(f, "g#75\n");
	f->model->state = MS_VIEW_BREAK;
	snprintf(f->model->break_why, sizeof(f->model->break_why), "go #75");
	ms_session_snapshot(&f->s);
	assert_null(strstr(f->s.view->ui.message, "stopped before"));
	/* Nor when a breakpoint of the user's stops it there (merge=80 at
	 * #80, listed before the target): it said "stopped before it". */
	f->model->state = MS_VIEW_RUNNING;
	ms_session_snapshot(&f->s);
	keys(f, "g#80\n");
	fake_scene_break(f->model);
	f->model->sel.seq = 80;
	snprintf(f->model->break_why, sizeof(f->model->break_why), "merge=80");
	ms_session_snapshot(&f->s);
	assert_null(strstr(f->s.view->ui.message, "stopped before"));
}

/* A `g` to a time stops before the first point of the run after it, the
 * clock still at the point before; the footer says where it stopped and
 * why: in the cooldown, two hours pass in one step. */
static void
test_goto_time_stop_said(void **state)
{
	fx *f = *state;
	ms_tui_view *m = f->model;
	keys(f, "g+1d 01:00\n");
	m->state = MS_VIEW_PAUSED;
	snprintf(m->phase, sizeof(m->phase), "cooldown");
	snprintf(m->break_why, sizeof(m->break_why), "go +1d 01:00:00");
	m->now = m->day_end;
	m->frontier = m->now - 2 * FAKE_H;
	ms_session_snapshot(&f->s);
	const char *msg = f->s.view->ui.message;
	assert_non_null(strstr(msg, "go +1d 01:00:00: stopped at "
	                            "+1d 00:00:00, the day's end"));
	assert_non_null(strstr(msg, "until +1d 02:00:00"));
	/* In the primary phase: the publication before the target. */
	m->state = MS_VIEW_RUNNING;
	snprintf(m->phase, sizeof(m->phase), "primary");
	m->now = FAKE_DAY0 + 12 * FAKE_H;
	m->frontier = m->now - 2 * FAKE_H;
	ms_session_snapshot(&f->s);
	keys(f, "g13:00\n");
	m->state = MS_VIEW_PAUSED;
	snprintf(m->break_why, sizeof(m->break_why), "go 13:00:00");
	m->now = FAKE_DAY0 + 12 * FAKE_H + 59 * FAKE_MIN + 40000000000LL;
	ms_session_snapshot(&f->s);
	assert_non_null(strstr(f->s.view->ui.message,
	                       "go 13:00:00: stopped at 12:59:40, the last "
	                       "publication before it"));
	/* Stopped by a breakpoint on the way: nothing to explain. */
	m->state = MS_VIEW_RUNNING;
	ms_session_snapshot(&f->s);
	keys(f, "g14:00\n");
	m->state = MS_VIEW_BREAK;
	snprintf(m->break_why, sizeof(m->break_why), "sampling");
	ms_session_snapshot(&f->s);
	assert_null(strstr(f->s.view->ui.message, "stopped at"));
}

/* Without a restart operation nothing goes back, and nothing runs
 * forward instead. */
static void
test_goto_back_unavailable(void **state)
{
	fx *f = *state;
	ms_tui_ctl_ops ops = fake_ops;
	ops.restart = NULL;
	f->ctl.ops = &ops;
	keys(f, "g#40\n");
	assert_true(f->s.view->ui.message_is_error);
	keys(f, "[r");
	assert_true(f->s.view->ui.message_is_error);
	assert_string_equal(f->fake.log, "");
	f->ctl.ops = &fake_ops;
}

/* A speed the user picks while a `g` runs is kept when it stops. */
static void
test_goto_user_speed_kept(void **state)
{
	fx *f = *state;
	keys(f, "g12:30\n");
	keys(f, "-"); /* from max down one step */
	f->model->state = MS_VIEW_PAUSED;
	ms_session_snapshot(&f->s);
	assert_string_equal(f->fake.log, "speed=0;runto=45000s;speed=3600;");
}

/* Go-to numbers that do not fit are refused, not wrapped into another
 * time or merge (found by tests/fuzz/fuzz_tui_input), and so are minutes
 * or seconds of one digit, which --break time= refuses too. */
static void
test_goto_refuses_wrapped_numbers(void **state)
{
	fx *f = *state;
	static const char *const bad[] = { "g4294967297:00\n", "g#-1\n",
		                           "g#18446744073709551616\n",
		                           "g+-0d 01:00\n", "g12: 5\n",
		                           "g1:2:3\n", "g12:5\n",
		                           "g12:05:7\n" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		keys(f, bad[i]);
		assert_true(f->s.view->ui.message_is_error);
	}
	assert_string_equal(f->fake.log, "");
	keys(f, "g#18446744073709551615\n");
	assert_string_equal(f->fake.log,
	                    "speed=0;runto=#18446744073709551615;");
}

static void
test_breakpoints(void **state)
{
	fx *f = *state;
	keys(f, "b");
	assert_int_equal(f->s.view->ui.overlay, MS_OVERLAY_BREAKS);
	keys(f, "amature\n");
	keys(f, "amerge=40\n");
	assert_int_equal(f->s.view->nbreaks, 2);
	keys(f, " "); /* disable the first */
	assert_false(f->s.view->breaks[0].enabled);
	ms_session_key(&f->s, MS_KEY_DOWN);
	keys(f, "d"); /* delete the second */
	assert_int_equal(f->s.view->nbreaks, 1);
	assert_string_equal(f->fake.log,
	                    "break+mature;break+merge=40;break1=off;break-2;");
	/* A spec the controller refuses shows its message. */
	keys(f, "abogus\n");
	assert_true(f->s.view->ui.message_is_error);
	assert_non_null(strstr(f->s.view->ui.message, "bogus"));
	ms_session_key(&f->s, MS_KEY_ESC);
	assert_int_equal(f->s.view->ui.overlay, MS_OVERLAY_NONE);
	/* F10 (q's F-key) closes the list as it closes the help and the
	 * details (it did nothing here), and does not quit. */
	keys(f, "b");
	ms_session_key(&f->s, MS_KEY_F(10));
	assert_int_equal(f->s.view->ui.overlay, MS_OVERLAY_NONE);
	assert_false(f->s.quit);
}

/* ] with no breakpoint set (or none enabled) runs to the end and says
 * so; it said "running to the next breakpoint". */
static void
test_run_to_break_without_any(void **state)
{
	fx *f = *state;
	keys(f, "]");
	assert_string_equal(f->fake.log, "tobreak;");
	assert_string_equal(f->s.view->ui.message,
	                    "no breakpoint is set (b adds one): running to "
	                    "the end");
	keys(f, ":break mature\n");
	ms_session_snapshot(&f->s);
	keys(f, "]");
	assert_string_equal(f->s.view->ui.message,
	                    "running to the next breakpoint");
	keys(f, "b "); /* disabled: none to stop at */
	ms_session_key(&f->s, MS_KEY_ESC);
	ms_session_snapshot(&f->s);
	assert_false(f->s.view->breaks[0].enabled);
	keys(f, "]");
	assert_non_null(strstr(f->s.view->ui.message, "running to the end"));
}

/* A breakpoint behind the replay says so: merge=3 at merge #58 never
 * stops (it said "restored 1 breakpoint", or "breakpoint 2: merge=3"),
 * time=01:00 at 06:12:30 stops at the next barrier; one ahead, or the
 * merge held at its barrier, says nothing more. */
static void
test_breakpoint_behind(void **state)
{
	fx *f = *state;
	fake_scene_break(f->model); /* #58 held, 57 done, at 06:12:30 */
	ms_session_snapshot(&f->s);
	keys(f, ":break merge=3\n");
	assert_string_equal(f->fake.log, "break+merge=3;");
	assert_non_null(strstr(f->s.view->ui.message,
	                       "merge=3 is behind the replay: it stops only "
	                       "after going back before it"));
	keys(f, "batime=01:00\n");
	assert_non_null(strstr(f->s.view->ui.message,
	                       "time=01:00 is behind the replay: it stops at "
	                       "the next barrier"));
	ms_session_key(&f->s, MS_KEY_ESC);
	keys(f, ":break merge=58\n");
	assert_null(strstr(f->s.view->ui.message, "behind"));
	keys(f, ":break merge=60\n");
	assert_null(strstr(f->s.view->ui.message, "behind"));
	keys(f, ":break time=07:00\n");
	assert_null(strstr(f->s.view->ui.message, "behind"));
	/* Restored from the last session while the run went on. */
	const char *saved[] = { "mature", "merge=3", "merge=2" };
	ms__session_offer(&f->s, saved, 3, NULL);
	keys(f, "y");
	assert_string_equal(f->s.view->ui.message,
	                    "restored 3 breakpoints; merge=3 is behind the "
	                    "replay: it stops only after going back before "
	                    "it");
}

/* More breakpoints than the list's rows (twelve at 80x24): the list
 * follows the selection and the title says which show (the fourteenth
 * could be selected, toggled and deleted out of sight). */
static void
test_breakpoint_list_scrolls(void **state)
{
	fx *f = *state;
	keys(f, "b");
	for (int i = 1; i <= 14; i++) {
		char line[32];
		snprintf(line, sizeof(line), "amerge=%d\n", 100 + i);
		keys(f, line);
	}
	assert_int_equal(f->s.view->nbreaks, 14);
	f->s.view->ui.message[0] = '\0'; /* "breakpoint 14: merge=114" */
	assert_true(screen_has_at(f, 80, 24, "Breakpoints 14, 1-12 shown"));
	assert_false(screen_has_at(f, 80, 24, "merge=114"));
	for (int i = 0; i < 13; i++)
		ms_session_key(&f->s, MS_KEY_DOWN);
	assert_int_equal(f->s.view->ui.break_sel, 13);
	assert_true(screen_has_at(f, 80, 24, "Breakpoints 14, 3-14 shown"));
	assert_true(screen_has_at(f, 80, 24, "merge=114"));
	assert_false(screen_has_at(f, 80, 24, "merge=101"));
	/* Room for all of them: no range in the title. */
	assert_true(screen_has_at(f, 132, 44, "merge=101"));
	assert_false(screen_has_at(f, 132, 44, "Breakpoints 14,"));
	/* Home, End and the pages move in it as in every list (they did
	 * nothing, and space after End toggled the first one). */
	ms_session_key(&f->s, MS_KEY_HOME);
	assert_int_equal(f->s.view->ui.break_sel, 0);
	ms_session_key(&f->s, MS_KEY_PGDN);
	assert_int_equal(f->s.view->ui.break_sel, 10);
	ms_session_key(&f->s, MS_KEY_PGUP);
	assert_int_equal(f->s.view->ui.break_sel, 0);
	ms_session_key(&f->s, MS_KEY_END);
	assert_int_equal(f->s.view->ui.break_sel, 13);
	keys(f, " ");
	assert_true(f->s.view->breaks[0].enabled);
	assert_false(f->s.view->breaks[13].enabled);
	/* The wheel moves in it three rows at a time, as in every list (it
	 * did nothing). */
	ms_mouse m = { MS_MOUSE_WHEEL_UP, 40, 10 };
	ms_session_mouse(&f->s, &m, 80, 24);
	assert_int_equal(f->s.view->ui.break_sel, 10);
	assert_int_equal(f->s.view->ui.overlay, MS_OVERLAY_BREAKS);
}

/* The last session's breakpoints are offered in a prompt open from the
 * start: y restores them, n, Enter and Esc decline, and any other key
 * declines and does what it does. The first `f` at a breakpoint freezes
 * (it used to answer the offer, and nothing was frozen). */
/* Breakpoints offered from last time that the session refuses (one
 * that no longer parses, or past the most it holds) are named: "y" said
 * "restored 2 breakpoints" and dropped the third without a word. */
static void
test_offer_refused_said(void **state)
{
	fx *f = *state;
	const char *saved[] = { "merge=2", "bogus", "lane=slow" };
	ms__session_offer(&f->s, saved, 3, NULL);
	keys(f, "y");
	assert_string_equal(f->fake.log, "break+merge=2;break+lane=slow;");
	assert_true(f->s.view->ui.message_is_error);
	assert_non_null(strstr(f->s.view->ui.message,
	                       "restored 2 of 3 breakpoints; 1 not set "
	                       "(first \"bogus\": breakpoint \"bogus\""));
	/* All set: as before. */
	f->fake.log[0] = '\0';
	const char *good[] = { "mature" };
	ms__session_offer(&f->s, good, 1, NULL);
	keys(f, "y");
	assert_false(f->s.view->ui.message_is_error);
	assert_string_equal(f->s.view->ui.message, "restored 1 breakpoint");
}

static void
test_offer_never_eats_a_key(void **state)
{
	fx *f = *state;
	fake_scene_break(f->model);
	ms_session_snapshot(&f->s);
	const char *saved[] = { "merge=2", "lane=hot" };
	ms__session_offer(&f->s, saved, 2, NULL);
	assert_int_equal(f->s.view->ui.prompt, MS_PROMPT_RESTORE);
	keys(f, "f");
	assert_string_equal(f->fake.log, "freeze;");
	assert_int_equal(f->s.view->ui.prompt, MS_PROMPT_NONE);
	assert_non_null(strstr(f->s.view->ui.frozen_cmd, "merge-once"));
	keys(f, "y"); /* the offer is gone: y is an ordinary key now */
	assert_null(strstr(f->fake.log, "break+"));

	f->fake.log[0] = '\0';
	ms__session_offer(&f->s, saved, 2, NULL);
	keys(f, "y");
	assert_string_equal(f->fake.log, "break+merge=2;break+lane=hot;");
	assert_int_equal(f->s.view->ui.prompt, MS_PROMPT_NONE);

	const int declines[] = { 'n', 'N', MS_KEY_ENTER, MS_KEY_ESC };
	for (size_t i = 0; i < 4; i++) {
		f->fake.log[0] = '\0';
		ms__session_offer(&f->s, saved, 2, NULL);
		ms_session_key(&f->s, declines[i]);
		assert_string_equal(f->fake.log, "");
		assert_int_equal(f->s.view->ui.prompt, MS_PROMPT_NONE);
	}

	/* A click declines it too, and selects what it clicks (the mouse
	 * did nothing while the offer was open, the whole session if it was
	 * never answered). */
	ms__session_offer(&f->s, saved, 2, NULL);
	f->s.view->ui.focus = MS_FOCUS_EVENTS;
	f->fake.log[0] = '\0';
	mouse_in(f, MS_PANEL_INVENTORY, MS_MOUSE_CLICK, 3, 4);
	assert_int_equal(f->s.view->ui.prompt, MS_PROMPT_NONE);
	assert_int_equal(f->s.view->ui.focus, MS_FOCUS_INVENTORY);
	assert_int_equal(f->s.view->ui.part_sel, 2);
	assert_string_equal(f->fake.log, "");
	/* A prompt being typed keeps the mouse out. */
	keys(f, "/lane");
	mouse_in(f, MS_PANEL_INVENTORY, MS_MOUSE_CLICK, 3, 4);
	assert_int_equal(f->s.view->ui.prompt, MS_PROMPT_FILTER);
	assert_string_equal(f->s.view->ui.cmdline, "lane");
}

/* `f` begins the copy and returns: the footer says "freezing merge #58
 * ..." for as long as it goes on, and the keys go on working (the copy
 * ran inside the key, and the screen stood still for it: 0.3 s for
 * day-2x's finalize on tmpfs, 1.2 s for day-4x's on a disk). A second f
 * meanwhile is refused; the result shows at the first snapshot after the
 * copy is done. */
static void
test_freeze_keys_go_on(void **state)
{
	fx *f = *state;
	fake_scene_break(f->model);
	ms_session_snapshot(&f->s);
	f->fake.freeze_hold = true;
	keys(f, "f");
	assert_string_equal(f->fake.log, "freeze;");
	assert_true(f->s.freezing);
	assert_false(f->s.view->ui.message_is_error);
	assert_non_null(strstr(f->s.view->ui.message, "freezing merge #58 ..."));
	assert_true(screen_has(f, "freezing merge #58 ..."));
	assert_string_equal(f->s.view->ui.frozen_cmd, "");
	/* Keys answer meanwhile. */
	enum ms_tui_focus focus = f->s.view->ui.focus;
	keys(f, "j");
	ms_session_key(&f->s, MS_KEY_TAB);
	ms_session_snapshot(&f->s);
	assert_int_not_equal(f->s.view->ui.focus, focus);
	/* The footer still says it (each key cleared it). */
	assert_non_null(strstr(f->s.view->ui.message, "freezing merge #58 ..."));
	keys(f, "?");
	assert_int_equal(f->s.view->ui.overlay, MS_OVERLAY_HELP);
	ms_session_key(&f->s, MS_KEY_ESC);
	keys(f, "f");
	assert_true(f->s.view->ui.message_is_error);
	assert_non_null(strstr(f->s.view->ui.message,
	                       "still freezing merge #58"));
	assert_string_equal(f->fake.log, "freeze;");
	/* Still under way: nothing yet. */
	ms_session_snapshot(&f->s);
	assert_true(f->s.freezing);
	assert_null(f->s.frozen_all);
	/* Done: the next snapshot takes it. */
	f->fake.freeze_hold = false;
	ms_session_snapshot(&f->s);
	assert_false(f->s.freezing);
	assert_non_null(strstr(f->s.view->ui.message,
	                       "frozen merge #58 into /tmp/frozen-58"));
	assert_string_equal(f->s.view->ui.frozen_cmd,
	                    "mergescope merge-once --frozen /tmp/frozen-58 "
	                    "--variant skywalking");
	assert_string_equal(f->s.frozen_all,
	                    "mergescope merge-once --frozen /tmp/frozen-58 "
	                    "--variant skywalking\n");
}

/* Quitting while a freeze goes on waits for it, and its command is
 * printed with the others. */
static void
test_quit_waits_for_freeze(void **state)
{
	(void)state;
	ms_tui_view *model = ms_tui_view_new();
	assert_non_null(model);
	fake_scene_break(model);
	fake_ctl fake;
	ms_tui_ctl ctl;
	fake_init(&fake, &ctl, model);
	fake.freeze_hold = true;
	int p[2];
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], "fq", 2), 2);
	FILE *in = fdopen(p[0], "r");
	FILE *out = fopen("/dev/null", "w");
	assert_non_null(in);
	assert_non_null(out);
	char *frozen = NULL;
	ms_tui_opts o = { .in = in,
		          .out = out,
		          .term = "xterm-256color",
		          .ascii = true,
		          .frozen_cmds = &frozen };
	ms_errbuf eb = { "" };
	assert_int_equal(ms_tui_run(&ctl, &o, &eb), 0);
	assert_string_equal(fake.log, "freeze;freeze-wait;");
	assert_false(fake.freezing);
	assert_non_null(frozen);
	assert_string_equal(frozen,
	                    "mergescope merge-once --frozen /tmp/frozen-58 "
	                    "--variant skywalking\n");
	fclose(in);
	close(p[1]);
	fclose(out);
	free(frozen);
	ms_tui_view_free(model);
}

static void
test_freeze_only_at_barrier(void **state)
{
	fx *f = *state;
	keys(f, "f");
	assert_string_equal(f->fake.log, "");
	assert_true(f->s.view->ui.message_is_error);
	/* It names the key that gets to a barrier, n, as the help does. */
	assert_non_null(strstr(f->s.view->ui.message, "press n to run to the "
	                                              "next one"));
	keys(f, "?");
	assert_true(screen_has(f, "freeze the shard at this dispatch barrier "
	                          "(n gets to one)"));
	ms_session_key(&f->s, MS_KEY_ESC);
	fake_scene_break(f->model);
	ms_session_snapshot(&f->s);
	ms_session_key(&f->s, MS_KEY_F(9));
	assert_string_equal(f->fake.log, "freeze;");
	assert_non_null(strstr(f->s.view->ui.message, "/tmp/frozen-58"));
	/* The merge-once command stays after the message is gone, a
	 * chain spec quoted for the shell. */
	assert_string_equal(f->s.view->ui.frozen_cmd,
	                    "mergescope merge-once --frozen /tmp/frozen-58 "
	                    "--variant skywalking");
	keys(f, "j");
	assert_string_equal(f->s.view->ui.message, "");
	ms_canvas cv;
	ms_canvas_init(&cv);
	assert_int_equal(ms_render_frame(&cv, f->s.view, 132, 44), 0);
	bool shown = false;
	for (int y = 0; y < 44; y++) {
		char row[1024];
		ms_canvas_row(&cv, y, row, sizeof(row));
		shown |= strstr(row, "frozen: mergescope merge-once") != NULL;
	}
	assert_true(shown);
	ms_canvas_release(&cv);
	snprintf(f->model->variant, sizeof(f->model->variant),
	         "skywalking,detdrop:{\"percent\":35}");
	ms_session_snapshot(&f->s);
	keys(f, "f");
	assert_non_null(
	        strstr(f->s.view->ui.frozen_cmd,
	               "--variant 'skywalking,detdrop:{\"percent\":35}'"));
	/* Every freeze of the session is kept for the quit, in order, one
	 * per line (only the last one was printed). */
	assert_string_equal(f->s.frozen_all,
	                    "mergescope merge-once --frozen /tmp/frozen-58 "
	                    "--variant skywalking\n"
	                    "mergescope merge-once --frozen /tmp/frozen-58 "
	                    "--variant 'skywalking,detdrop:{\"percent\":35}'"
	                    "\n");
	/* All of them, however many (past 8 they were counted, not kept). */
	for (int i = 0; i < 80; i++)
		keys(f, "f");
	assert_int_equal(f->s.frozen_lost, 0);
	size_t lines = 0;
	for (const char *p = f->s.frozen_all; (p = strchr(p, '\n')); p++)
		lines++;
	assert_int_equal(lines, 82);
}

/* A path of n bytes: "/" and 63-byte names, the last with a blank. */
static char *
long_path(size_t n, char c)
{
	char *p = malloc(n + 1);
	assert_non_null(p);
	for (size_t i = 0; i < n; i++)
		p[i] = i % 64 == 0 ? '/' : c;
	p[n - 3] = ' ';
	p[n] = '\0';
	return p;
}

/* A frozen merge's command, whatever its length: a long work dir (3000
 * bytes) and program path (2000): past 4096 bytes in all. The path in
 * the view was cut at 255 bytes, the command at 511, the quit's copy at
 * 4095: a command that ran something else when pasted. Now each freeze's
 * command is on the screen and handed to the quit whole. */
static void
test_freeze_long_command_whole(void **state)
{
	(void)state;
	ms_tui_view *model = ms_tui_view_new();
	assert_non_null(model);
	fake_scene_break(model);
	fake_ctl fake;
	ms_tui_ctl ctl;
	fake_init(&fake, &ctl, model);
	char *dir = long_path(3000, 'd'), *prog = long_path(2000, 'p');
	fake.freeze_dir = dir;
	char *want = malloc(6000);
	assert_non_null(want);
	snprintf(want, 6000,
	         "'%s' merge-once --frozen '%s' --variant skywalking", prog,
	         dir);
	assert_true(strlen(want) > 5000);
	int p[2];
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], "ffq", 3), 3);
	FILE *in = fdopen(p[0], "r");
	FILE *out = fopen("/dev/null", "w");
	assert_non_null(in);
	assert_non_null(out);
	char *frozen = NULL;
	ms_tui_opts o = { .in = in,
		          .out = out,
		          .term = "xterm-256color",
		          .ascii = true,
		          .program = prog,
		          .frozen_cmds = &frozen };
	ms_errbuf eb = { "" };
	assert_int_equal(ms_tui_run(&ctl, &o, &eb), 0);
	assert_string_equal(fake.log, "freeze;freeze;");
	assert_non_null(frozen);
	assert_int_equal(strlen(frozen), 2 * (strlen(want) + 1));
	assert_memory_equal(frozen, want, strlen(want));
	assert_string_equal(frozen + strlen(want) + 1 + strlen(want), "\n");
	fclose(in);
	close(p[1]);
	fclose(out);
	free(frozen);
	free(want);
	free(dir);
	free(prog);
	ms_tui_view_free(model);
}

/* On the screen too: the view holds the whole command, and a freeze's
 * directory as long as a path may be. */
static void
test_freeze_long_command_shown(void **state)
{
	fx *f = *state;
	fake_scene_break(f->model);
	ms_session_snapshot(&f->s);
	char *dir = long_path(4000, 'd'), *prog = long_path(3000, 'p');
	f->fake.freeze_dir = dir;
	f->s.program = prog;
	keys(f, "f");
	assert_string_equal(f->s.view->ui.frozen_dir, dir);
	const char *cmd = f->s.view->ui.frozen_cmd;
	assert_int_equal(strncmp(cmd, "'", 1), 0);
	assert_int_equal(strncmp(cmd + 1, prog, strlen(prog)), 0);
	assert_non_null(strstr(cmd, dir));
	assert_int_equal(strlen(f->s.frozen_all), strlen(cmd) + 1);
	f->s.program = "mergescope";
	f->fake.freeze_dir = NULL;
	free(dir);
	free(prog);
}

static void
type_line(fx *f, const char *text)
{
	ms_session_key(&f->s, MS_KEY_CTRL('u'));
	keys(f, text);
}

static void
test_filter_and_export(void **state)
{
	fx *f = *state;
	keys(f, "/lane=slow\n");
	assert_string_equal(f->s.view->ui.filter, "lane=slow");
	size_t idx[MS_VIEW_MAX_EVENTS];
	assert_int_equal(ms_events_visible(f->s.view, idx), 6);
	/* Format first, prefilled with the last one (jsonl at first). */
	keys(f, "e");
	assert_int_equal(f->s.view->ui.prompt, MS_PROMPT_EXPORT);
	assert_string_equal(f->s.view->ui.cmdline, "jsonl");
	type_line(f, "csv\n");
	/* Then the path: next to the database, named after it. */
	assert_int_equal(f->s.view->ui.prompt, MS_PROMPT_EXPORT_PATH);
	assert_string_equal(f->s.view->ui.cmdline,
	                    "/home/u/.cache/mergescope/runs/"
	                    "day-2x-skywalking-filtered.csv");
	char dir[] = "/tmp/ms-keys-XXXXXX", out[128];
	assert_non_null(mkdtemp(dir));
	snprintf(out, sizeof(out), "%s/out.csv\n", dir);
	type_line(f, out);
	char want[256];
	snprintf(want, sizeof(want), "export=csv:%s/out.csv:lane=slow;", dir);
	assert_string_equal(f->fake.log, want);
	assert_string_equal(f->fake.last_filter.lane, "slow");
	assert_non_null(strstr(f->s.view->ui.message, "exported 7 merges"));
	/* The format is remembered; `:export FMT` asks for the path. */
	f->fake.log[0] = '\0';
	keys(f, "e");
	assert_string_equal(f->s.view->ui.cmdline, "csv");
	ms_session_key(&f->s, MS_KEY_ESC);
	keys(f, ":export chrome\n");
	assert_int_equal(f->s.view->ui.prompt, MS_PROMPT_EXPORT_PATH);
	assert_non_null(strstr(f->s.view->ui.cmdline, "-filtered.trace.json"));
	ms_session_key(&f->s, MS_KEY_ESC);
	assert_string_equal(f->fake.log, "");
	/* A bad filter is refused and the old one stays. */
	keys(f, "/");
	type_line(f, "class=bogus\n");
	assert_true(f->s.view->ui.message_is_error);
	assert_string_equal(f->s.view->ui.filter, "lane=slow");
	/* A bad format is refused before a path is asked for. */
	keys(f, "e");
	type_line(f, "xml\n");
	assert_int_equal(f->s.view->ui.prompt, MS_PROMPT_NONE);
	assert_string_equal(f->fake.log, "");
	assert_non_null(strstr(f->s.view->ui.message, "xml"));
	rmdir(dir);
}

/* An existing file is written over only after "y"; "~/" is the home
 * directory; Tab completes the path. */
static void
test_export_path_field(void **state)
{
	fx *f = *state;
	char dir[] = "/tmp/ms-keys-XXXXXX", line[256], want[512];
	assert_non_null(mkdtemp(dir));
	char file[128];
	snprintf(file, sizeof(file), "%s/kept.jsonl", dir);
	FILE *fp = fopen(file, "w");
	assert_non_null(fp);
	fputs("old\n", fp);
	fclose(fp);
	/* Refused: any key but y keeps the file. */
	keys(f, "e\n");
	snprintf(line, sizeof(line), "%s\n", file);
	type_line(f, line);
	assert_int_equal(f->s.view->ui.prompt, MS_PROMPT_CONFIRM);
	keys(f, "n");
	assert_int_equal(f->s.view->ui.prompt, MS_PROMPT_NONE);
	assert_string_equal(f->fake.log, "");
	assert_non_null(strstr(f->s.view->ui.message, "not exported"));
	/* Confirmed. */
	keys(f, "e\n");
	type_line(f, line);
	keys(f, "y");
	snprintf(want, sizeof(want), "export=jsonl:%s:lane=:overwrite;", file);
	assert_string_equal(f->fake.log, want);
	/* ~ expands to $HOME. */
	f->fake.log[0] = '\0';
	const char *old_home = getenv("HOME");
	char saved[256] = "";
	if (old_home)
		snprintf(saved, sizeof(saved), "%s", old_home);
	setenv("HOME", dir, 1);
	keys(f, "e\n");
	type_line(f, "~/new.jsonl\n");
	snprintf(want, sizeof(want), "export=jsonl:%s/new.jsonl:lane=;", dir);
	assert_string_equal(f->fake.log, want);
	/* Tab: "~/ke" completes to the one file that starts so. */
	keys(f, "e\n");
	type_line(f, "~/ke");
	ms_session_key(&f->s, MS_KEY_TAB);
	assert_string_equal(f->s.view->ui.cmdline, "~/kept.jsonl");
	ms_session_key(&f->s, MS_KEY_ESC);
	if (saved[0])
		setenv("HOME", saved, 1);
	else
		unsetenv("HOME");
	remove(file);
	rmdir(dir);
}

/* The session's view drawn at w x h into cv (initialised here); returns
 * where panel p is. */
static ms_rect
render_at(fx *f, ms_canvas *cv, int w, int h, enum ms_panel_id p)
{
	ms_canvas_init(cv);
	assert_int_equal(ms_render_frame(cv, f->s.view, w, h), 0);
	ms_layout l;
	ms__layout_view(f->s.view, w, h, &l);
	return l.r[p];
}

/* The footer of the session's view drawn at w x h, into row: its one
 * line, or a message's lines (each without its trailing blanks) joined
 * by a space. */
static void
footer_row(fx *f, int w, int h, char *row, size_t n)
{
	ms_canvas cv;
	ms_rect r = render_at(f, &cv, w, h, MS_PANEL_FOOTER);
	assert_int_equal(r.y + r.h, h);
	ms_canvas_row(&cv, r.y, row, n);
	for (int y = r.y + 1; y < h; y++) {
		size_t used = strlen(row);
		while (used && row[used - 1] == ' ')
			row[--used] = '\0';
		if (used + 2 < n) {
			row[used++] = ' ';
			ms_canvas_row(&cv, y, row + used, n - used);
		}
	}
	ms_canvas_release(&cv);
}

/* Input longer than its prompt's field scrolls with the cursor, and a
 * "<" or ">" at the field's edge says on which side the text goes on
 * (nothing said that part of it was out of sight). */
static void
test_prompt_scroll_marks(void **state)
{
	fx *f = *state;
	char row[1024], text[121];
	for (int i = 0; i < 120; i++)
		text[i] = (char)('a' + i % 26);
	text[120] = '\0';
	keys(f, ":");
	keys(f, text);
	assert_int_equal(f->s.view->ui.prompt, MS_PROMPT_COMMAND);
	/* At the end: "<" after the label, the text's end, the cursor. */
	footer_row(f, 80, 24, row, sizeof(row));
	assert_int_equal(strlen(row), 80);
	assert_memory_equal(row, ":<", 2);
	assert_memory_equal(row + 2, text + 120 - 77, 77);
	assert_int_equal(row[79], ' '); /* the cursor's cell */
	/* At the start: the text from its first character, ">" last. */
	ms_session_key(&f->s, MS_KEY_HOME);
	footer_row(f, 80, 24, row, sizeof(row));
	assert_memory_equal(row, ":", 1);
	assert_memory_equal(row + 1, text, 78);
	assert_int_equal(row[79], '>');
	/* In the middle: both. */
	for (int i = 0; i < 100; i++)
		ms_session_key(&f->s, MS_KEY_RIGHT);
	footer_row(f, 80, 24, row, sizeof(row));
	assert_memory_equal(row, ":<", 2);
	assert_int_equal(row[79], '>');
	assert_memory_equal(row + 2, text + 100 - 76, 77); /* to the cursor */
	/* Text that fits has no marks. */
	ms_session_key(&f->s, MS_KEY_ESC);
	keys(f, ":run");
	footer_row(f, 80, 24, row, sizeof(row));
	assert_non_null(strstr(row, ":run "));
	assert_null(strchr(row, '<'));
	assert_null(strchr(row, '>'));
}

/* Enter on a link of the plugins panel shows that link: its figures and
 * its Decide calls per latency bucket, each bucket with its bound (it
 * showed the selected merge instead). */
static void
test_details_of_a_link(void **state)
{
	fx *f = *state;
	static const uint64_t le[MS_VIEW_HIST] = {
		250000,    500000,     1000000,    2500000,   5000000,
		10000000,  25000000,   50000000,   100000000, 250000000,
		500000000, 1000000000, UINT64_MAX,
	};
	ms_tui_view *m = f->model;
	m->nplugins = 2;
	memcpy(m->plugins[0].hist_le_ns, le, sizeof(le));
	m->plugins[1] = m->plugins[0];
	ms_tui_plugin *p = &m->plugins[1];
	snprintf(p->name, sizeof(p->name), "detdrop");
	memset(p->hist, 0, sizeof(p->hist));
	p->hist[0] = 40;
	p->hist[2] = 2;
	p->hist[12] = 3;
	p->calls = 45;
	p->failopen_timeout = 3;
	ms_session_snapshot(&f->s);
	f->s.view->ui.focus = MS_FOCUS_PLUGINS;
	f->s.view->ui.plugin_sel = 1;
	keys(f, "\n");
	assert_int_equal(f->s.view->ui.overlay, MS_OVERLAY_DETAIL);
	assert_true(screen_has(f, "Link 2: detdrop"));
	assert_false(screen_has(f, "Merge #"));
	assert_true(screen_has(f, "0 error, 3 timeout, 0 bad verdict"));
	/* Every bucket, with its bound and its calls. */
	assert_true(screen_has(f, "<= 0.25 ms          40  88.9%"));
	assert_true(screen_has(f, "<= 0.5 ms            0   0.0%"));
	assert_true(screen_has(f, "<= 1 ms              2   4.4%"));
	assert_true(screen_has(f, "<= 1000 ms           0   0.0%"));
	assert_true(screen_has(f, "> 1000 ms            3   6.7%"));
	/* The first link's: its own figures. */
	ms_session_key(&f->s, MS_KEY_ESC);
	f->s.view->ui.plugin_sel = 0;
	keys(f, "\n");
	assert_true(screen_has(f, "Link 1: skywalking"));
	assert_true(screen_has(f, "<= 1 ms              8  42.1%"));
	/* No link at all: said, nothing opened. */
	ms_session_key(&f->s, MS_KEY_ESC);
	m->nplugins = 0;
	ms_session_snapshot(&f->s);
	keys(f, "\n");
	assert_int_equal(f->s.view->ui.overlay, MS_OVERLAY_NONE);
	assert_true(f->s.view->ui.message_is_error);
}

/* A long export path is never cut: the message after an export holds it
 * whole with a long filter (the message held 255 bytes, and lost the file
 * name), the footer shows its end; a database path too long to offer a
 * file next to it offers none (it offered a cut one) and says so. */
static void
test_export_long_paths(void **state)
{
	fx *f = *state;
	char path[MS_VIEW_TEXT], filter[200], line[MS_VIEW_TEXT + 8];
	int k = snprintf(path, sizeof(path), "/tmp/ms-keys-nonexistent/");
	memset(path + k, 'd', 180);
	snprintf(path + k + 180, sizeof(path) - (size_t)k - 180,
	         "/events-of-the-day.jsonl");
	k = snprintf(filter, sizeof(filter), "lane=slow ");
	memset(filter + k, 'w', 150);
	filter[k + 150] = '\0';
	keys(f, "/");
	snprintf(line, sizeof(line), "%s\n", filter);
	type_line(f, line);
	assert_string_equal(f->s.view->ui.filter, filter);
	keys(f, "e\n");
	assert_int_equal(f->s.view->ui.prompt, MS_PROMPT_EXPORT_PATH);
	snprintf(line, sizeof(line), "%s\n", path);
	type_line(f, line);
	assert_int_equal(f->s.view->ui.prompt, MS_PROMPT_NONE);
	assert_false(f->s.view->ui.message_is_error);
	assert_non_null(strstr(f->s.view->ui.message, path));
	char row[1024];
	footer_row(f, 132, 44, row, sizeof(row));
	assert_non_null(strstr(row, "exported 7 merges"));
	assert_non_null(strstr(row, "dddd/events-of-the-day.jsonl"));

	/* A database path of 255 bytes (the view's most: it may be cut). */
	ms_tui_view *m = f->model;
	k = snprintf(m->db_path, sizeof(m->db_path), "/tmp/");
	memset(m->db_path + k, 'r', sizeof(m->db_path) - 1 - (size_t)k - 7);
	snprintf(m->db_path + sizeof(m->db_path) - 8, 8, ".sqlite");
	assert_int_equal(strlen(m->db_path), sizeof(m->db_path) - 1);
	ms_session_snapshot(&f->s);
	f->fake.log[0] = '\0';
	keys(f, "e\n");
	assert_int_equal(f->s.view->ui.prompt, MS_PROMPT_NONE);
	assert_true(f->s.view->ui.message_is_error);
	assert_non_null(strstr(f->s.view->ui.message, "too long a path"));
	assert_non_null(strstr(f->s.view->ui.message, ":export jsonl PATH"));
	keys(f, ":export csv\n");
	assert_int_equal(f->s.view->ui.prompt, MS_PROMPT_NONE);
	assert_non_null(strstr(f->s.view->ui.message, ":export csv PATH"));
	assert_string_equal(f->fake.log, "");
}

/* The footer at w x 24 with question p open about `what` (put in
 * field), into row. */
static void
footer_asking(fx *f, enum ms_tui_prompt p, char *field, size_t fn,
              const char *what, int w, char *row, size_t n)
{
	f->s.view->ui.prompt = p;
	snprintf(field, fn, "%s", what);
	footer_row(f, w, 24, row, n);
}

/* The export's fields are offered defaults: the first character typed
 * replaces one (typing "csv" in the format field gave "jsonlcsv"), an
 * editing key edits it, and the footer shows it selected and says so. */
static void
test_export_prefilled_replaced(void **state)
{
	fx *f = *state;
	char row[1024];
	keys(f, "e");
	footer_row(f, 132, 40, row, sizeof(row));
	assert_non_null(strstr(row, "jsonl  (typing replaces it)"));
	int x = (int)(strstr(row, "): jsonl") - row) + 3;
	ms_canvas cv;
	ms_canvas_init(&cv);
	assert_int_equal(ms_render_frame(&cv, f->s.view, 132, 40), 0);
	assert_true(ms_canvas_at(&cv, x, 39).attr & MS_A_REV);
	ms_canvas_release(&cv);
	keys(f, "c");
	assert_string_equal(f->s.view->ui.cmdline, "c");
	keys(f, "sv\n");
	assert_int_equal(f->s.view->ui.prompt, MS_PROMPT_EXPORT_PATH);
	assert_non_null(strstr(f->s.view->ui.cmdline, "-skywalking.csv"));
	/* Backspace edits the offered path; typing then appends. */
	ms_session_key(&f->s, MS_KEY_BACKSPACE);
	keys(f, "x");
	assert_non_null(strstr(f->s.view->ui.cmdline, "-skywalking.csx"));
	ms_session_key(&f->s, MS_KEY_ESC);
	/* The format offered again (csv) gives way to "jsonl" typed. */
	keys(f, "ejsonl");
	assert_string_equal(f->s.view->ui.cmdline, "jsonl");
	ms_session_key(&f->s, MS_KEY_ESC);
	assert_string_equal(f->fake.log, "");
}

/* At 80 columns each prompt's question shows whole: an existing file's
 * long path is shortened from the left (it hid "write over it? (y/N)",
 * so the next key answered a question never seen), a long offer from
 * the right, and the break prompt's label no longer leaves the spec
 * typed two columns. */
static void
test_footer_questions_fit(void **state)
{
	fx *f = *state;
	char row[1024];
	ms_tui_ui *ui = &f->s.view->ui;
	footer_asking(f, MS_PROMPT_CONFIRM, ui->export_path,
	              sizeof(ui->export_path),
	              "/var/tmp/cache/mergescope/runs/"
	              "day-1x-skywalking-20261202-054559-8156.jsonl",
	              80, row, sizeof(row));
	assert_non_null(strstr(row, "exists: write over it? (y/N)"));
	assert_non_null(strstr(row, "...")); /* the path's start left out */
	assert_non_null(strstr(row, "-8156.jsonl exists"));
	footer_row(f, 200, 24, row, sizeof(row));
	assert_non_null(strstr(row, "/var/tmp/cache/mergescope/runs/day-1x"));
	footer_asking(f, MS_PROMPT_RESTORE, ui->offer, sizeof(ui->offer),
	              "break merge=4, time=02:00:00, lane=finalize, "
	              "depth>=3, sampling; filter /lane=fast",
	              80, row, sizeof(row));
	assert_non_null(strstr(row, "last time on this fixture: break"));
	assert_non_null(strstr(row, "...; again? (y/N)"));
	/* A long message wraps: its start and its end (the file name)
	 * show, the path whole on a line of its own. */
	ui->prompt = MS_PROMPT_NONE;
	ms_session_say(&f->s, false,
	               "exported 7 merges as jsonl to /var/tmp/cache/"
	               "mergescope/runs/day-1x-skywalking-20261202-8156.jsonl");
	footer_row(f, 80, 24, row, sizeof(row));
	assert_ptr_equal(strstr(row, ui->message), row);
	ui->message[0] = '\0';
	keys(f, "ba");
	assert_int_equal(ui->prompt, MS_PROMPT_BREAK);
	keys(f, "time=02:00");
	footer_row(f, 80, 24, row, sizeof(row));
	assert_non_null(strstr(row, "break on: time=02:00"));
	footer_row(f, 200, 24, row, sizeof(row));
	assert_non_null(strstr(row, "break on (mature, sampling, merge=N, "
	                            "time=HH:MM, part=HEX, lane=L, depth>=D): "
	                            "time=02:00"));
}

/* DONE with 13 gates and 20 reconciliation rows, the last a FAIL. */
static void
gates_scene(fx *f)
{
	f->model->state = MS_VIEW_DONE;
	f->model->ngates = 13;
	for (size_t i = 0; i < 13; i++) {
		snprintf(f->model->gates[i].name,
		         sizeof(f->model->gates[i].name), "gate_%02zu", i + 1);
		f->model->gates[i].pass = true;
	}
	f->model->nrecon = 20;
	for (size_t i = 0; i < 20; i++)
		snprintf(f->model->recon[i].name,
		         sizeof(f->model->recon[i].name), "recon_%02zu", i + 1);
	snprintf(f->model->recon[18].name, sizeof(f->model->recon[18].name),
	         "oracle drops in the final output");
	f->model->recon[19].ok = false; /* a FAIL at the very end */
	for (size_t i = 0; i < 19; i++)
		f->model->recon[i].ok = true;
	ms_session_snapshot(&f->s);
}

/* At DONE, thirteen gates and twenty reconciliation rows do not fit the
 * Events area at 132x44 (the last gate and the whole reconciliation were
 * cut off, nothing said so): the title says which lines show, and the
 * arrows, End and the wheel scroll them. */
static void
test_gates_scroll(void **state)
{
	fx *f = *state;
	gates_scene(f);
	ms_session_resize(&f->s, 132, 44);
	assert_true(f->s.view->ui.show_gates);
	assert_true(
	        screen_has_at(f, 132, 44, "Gates  13 pass, 0 fail, lines 1-"));
	assert_true(screen_has_at(f, 132, 44, ", down scrolls"));
	assert_false(screen_has_at(f, 132, 44, "recon_20"));
	ms_session_key(&f->s, MS_KEY_DOWN);
	ms_session_key(&f->s, MS_KEY_DOWN);
	assert_int_equal(f->s.view->ui.gates_scroll, 2);
	assert_false(screen_has_at(f, 132, 44, "gate_01")); /* line 2 */
	ms_session_key(&f->s, MS_KEY_END);
	assert_true(screen_has_at(f, 132, 44, "FAIL recon_20"));
	/* Long names whole where there is room (cut at 28 before). */
	assert_true(
	        screen_has_at(f, 132, 44, "oracle drops in the final output "));
	assert_false(screen_has_at(f, 132, 44, "down scrolls"));
	/* End stops at the last screenful: one Up shows one line more. */
	ms_session_key(&f->s, MS_KEY_UP);
	assert_true(screen_has_at(f, 132, 44, "down scrolls"));
	ms_session_key(&f->s, MS_KEY_HOME);
	assert_int_equal(f->s.view->ui.gates_scroll, 0);
	assert_true(screen_has_at(f, 132, 44, "gate_01"));
	/* The wheel over the area scrolls too. */
	mouse_in(f, MS_PANEL_EVENTS, MS_MOUSE_WHEEL_DOWN, 5, 3);
	assert_int_equal(f->s.view->ui.gates_scroll, 3);
}

/* The first inner row of the Events area at w x h. */
static void
gates_first_row(fx *f, int w, int h, char *row, size_t n)
{
	ms_canvas cv;
	ms_rect r = render_at(f, &cv, w, h, MS_PANEL_EVENTS);
	ms_canvas_row(&cv, r.y + 1, row, n);
	ms_canvas_release(&cv);
}

/* Scrolled, the gates keep their table's header on the first row: at
 * 80x24 the reconciliation's last rows showed figures under no column
 * names. */
static void
test_gates_header_stays(void **state)
{
	fx *f = *state;
	gates_scene(f);
	ms_session_resize(&f->s, 80, 24);
	char row[1024];
	gates_first_row(f, 80, 24, row, sizeof(row));
	assert_non_null(strstr(row, "gate"));
	assert_non_null(strstr(row, "detail"));
	ms_session_key(&f->s, MS_KEY_DOWN);
	ms_session_key(&f->s, MS_KEY_DOWN);
	gates_first_row(f, 80, 24, row, sizeof(row));
	assert_non_null(strstr(row, "detail"));
	ms_session_key(&f->s, MS_KEY_END);
	gates_first_row(f, 80, 24, row, sizeof(row));
	assert_non_null(strstr(row, "reconciliation"));
	assert_non_null(strstr(row, "primary"));
	assert_non_null(strstr(row, "total"));
	assert_true(screen_has_at(f, 80, 24, "FAIL recon_20"));
}

/* A gate's detail of 250 characters (the replay's hold up to 255; the
 * screen kept 159) and a reconciliation row's long rule wrap at the end
 * of the line, under where they start, at 132 and at 80 columns: they
 * were cut at the edge. */
static void
test_gates_wrap(void **state)
{
	fx *f = *state;
	f->model->state = MS_VIEW_DONE;
	f->model->ngates = 2;
	snprintf(f->model->gates[0].name, sizeof(f->model->gates[0].name),
	         "one_block_per_trace");
	f->model->gates[0].pass = true;
	char detail[251];
	for (size_t i = 0; i < 240; i++)
		detail[i] = i % 8 == 7 ? ' ' : (char)('a' + i / 8 % 26);
	snprintf(detail + 240, sizeof(detail) - 240, " THE_END_");
	snprintf(f->model->gates[0].detail, sizeof(f->model->gates[0].detail),
	         "%s", detail);
	assert_int_equal(strlen(f->model->gates[0].detail), 249);
	snprintf(f->model->gates[1].name, sizeof(f->model->gates[1].name),
	         "ledgers");
	f->model->gates[1].pass = true;
	snprintf(f->model->gates[1].detail, sizeof(f->model->gates[1].detail),
	         "short");
	f->model->nrecon = 1;
	snprintf(f->model->recon[0].name, sizeof(f->model->recon[0].name),
	         "finalize: proposed drops");
	f->model->recon[0].v[2] = f->model->recon[0].v[3] = 26202;
	f->model->recon[0].ok = true;
	snprintf(f->model->recon[0].note, sizeof(f->model->recon[0].note),
	         "dropped + deferred = oracle drops present in the inputs "
	         "of the finalize merge, as counted LAST_WORD");
	ms_session_snapshot(&f->s);
	static const int size[][2] = { { 132, 44 }, { 80, 24 } };
	for (size_t k = 0; k < 2; k++) {
		int w = size[k][0], h = size[k][1];
		ms_session_resize(&f->s, w, h);
		ms_layout_opts lo = { .overlay = false };
		ms_layout l;
		ms_layout_compute(w, h, &lo, &l);
		ms_rect r = l.r[MS_PANEL_EVENTS];
		/* Every word of the detail shows, each line starting under
		 * the first (the detail's column); the last lines scroll. */
		size_t lines = ms__gates_lines(f->s.view, r.w - 2);
		assert_true(lines > 5);
		ms_session_key(&f->s, MS_KEY_HOME);
		f->s.view->ui.ascii = true;
		char all[1 << 16] = "";
		ms_canvas cv;
		ms_canvas_init(&cv);
		for (size_t top = 0; top < lines; top += (size_t)r.h - 2) {
			f->s.view->ui.gates_scroll = top;
			assert_int_equal(ms_render_frame(&cv, f->s.view, w, h),
			                 0);
			for (int y = r.y + 1; y < r.y + r.h - 1; y++) {
				char row[2048];
				ms_canvas_row(&cv, y, row, sizeof(row));
				row[r.x + r.w - 1] = '\0';
				strncat(all, row + r.x + 1,
				        sizeof(all) - strlen(all) - 1);
				strncat(all, "\n",
				        sizeof(all) - strlen(all) - 1);
			}
		}
		ms_canvas_release(&cv);
		for (size_t i = 0; i + 8 <= 240; i += 8) {
			char word[8];
			memcpy(word, detail + i, 7);
			word[7] = '\0';
			if (!strstr(all, word))
				fail_msg("%dx%d: no \"%s\" of the detail", w, h,
				         word);
		}
		assert_non_null(strstr(all, "THE_END_"));
		assert_non_null(strstr(all, "LAST_WORD"));
		assert_non_null(strstr(all, "ok dropped + deferred"));
		/* A continuation starts in the detail's column (after
		 * "PASS one_block_per_trace "). */
		char cont[64];
		snprintf(cont, sizeof(cont), "\n%*s%.7s", 25, "",
		         detail + 8 * ((size_t)(r.w - 2 - 25 + 1) / 8));
		if (!strstr(all, cont))
			fail_msg("%dx%d: no line starting \"%s\"", w, h,
			         cont + 1);
	}
}

/* The inventory's min-max time column shows a part's times whole or not
 * at all, at every width: a part ending after the day ("+1d 01:00:00")
 * or starting before it is wider than the column, and showed cut
 * ("05:10:00-+1d 01:0"). */
static void
test_inventory_times_whole(void **state)
{
	fx *f = *state;
	ms_tui_view *m = f->model;
	/* Two of the small raw writes, listed first. */
	m->parts[10].min_ts = m->day_start - 90 * FAKE_MIN;
	m->parts[11].max_ts = m->day_end + 61 * FAKE_MIN;
	m->parts[11].min_ts = m->day_end - 10 * FAKE_MIN;
	ms_session_snapshot(&f->s);
	ms_tui_view *v = f->s.view;
	v->ui.ascii = true;
	size_t shown = 0, long_shown = 0;
	ms_canvas cv;
	ms_canvas_init(&cv);
	for (int w = 80; w <= 240; w++) {
		ms_layout_opts lo = { .overlay = false };
		ms_layout l;
		ms_layout_compute(w, 50, &lo, &l);
		ms_rect r = l.r[MS_PANEL_INVENTORY];
		assert_int_equal(ms_render_frame(&cv, v, w, 50), 0);
		for (int y = r.y + 2; y < r.y + r.h - 1; y++) {
			char row[2048];
			ms_canvas_row(&cv, y, row, sizeof(row));
			row[r.x + r.w - 1] = '\0';
			const char *in = row + r.x + 1;
			uint64_t id;
			if (sscanf(in, "%16" SCNx64, &id) != 1)
				continue;
			const ms_tui_part *p = NULL;
			for (size_t i = 0; i < v->nparts; i++)
				if (v->parts[i].id == id)
					p = &v->parts[i];
			assert_non_null(p);
			/* After "ID bytes rows d s claim": the times. */
			const char *t = in + 43;
			while (*t && *t != ' ')
				t++; /* a claim wider than its column */
			while (*t == ' ')
				t++;
			char want[64], a[32], b[32], got[256];
			snprintf(want, sizeof(want), "%s-%s",
			         ms_fmt_clock(a, sizeof(a), p->min_ts,
			                      v->day_start),
			         ms_fmt_clock(b, sizeof(b), p->max_ts,
			                      v->day_start));
			snprintf(got, sizeof(got), "%s", t);
			for (size_t e = strlen(got); e && got[e - 1] == ' ';)
				got[--e] = '\0';
			if (got[0] && strcmp(got, want) != 0)
				fail_msg("%dx50: part %016" PRIx64
				         " shows \"%s\" for \"%s\"",
				         w, id, got, want);
			shown += got[0] != '\0';
			long_shown += got[0] && strlen(want) > 17;
		}
	}
	ms_canvas_release(&cv);
	/* Not a test that shows nothing: the times show where they fit. */
	assert_true(shown > 0);
	assert_true(long_shown > 0);
}

/* At DONE the gates take the Events area; Tab shows the events, and
 * coming round again the gates. */
static void
test_gates_at_done(void **state)
{
	fx *f = *state;
	f->model->state = MS_VIEW_DONE;
	f->model->ngates = 2;
	f->model->gates_failed = 1;
	snprintf(f->model->gates[0].name, sizeof(f->model->gates[0].name),
	         "exactly_once");
	f->model->gates[0].pass = true;
	snprintf(f->model->gates[1].name, sizeof(f->model->gates[1].name),
	         "drop_oracle");
	snprintf(f->model->gates[1].detail, sizeof(f->model->gates[1].detail),
	         "3 traces differ");
	f->model->nrecon = 1;
	snprintf(f->model->recon[0].name, sizeof(f->model->recon[0].name),
	         "kept by verdict");
	f->model->recon[0].v[2] = 2585;
	f->model->recon[0].v[3] = 2585;
	f->model->recon[0].ok = true;
	f->s.view->ui.focus = MS_FOCUS_PLUGINS;
	ms_session_snapshot(&f->s);
	assert_true(f->s.view->ui.show_gates);
	assert_int_equal(f->s.view->ui.focus, MS_FOCUS_EVENTS);
	ms_canvas cv;
	ms_canvas_init(&cv);
	assert_int_equal(ms_render_frame(&cv, f->s.view, 132, 44), 0);
	char all[44 * 600] = "", row[600];
	for (int y = 0; y < 44; y++) {
		ms_canvas_row(&cv, y, row, sizeof(row));
		strncat(all, row, sizeof(all) - strlen(all) - 1);
	}
	assert_non_null(strstr(all, "Gates  1 pass, 1 fail"));
	/* The failure is listed first. */
	char *fail = strstr(all, "FAIL drop_oracle");
	char *pass = strstr(all, "PASS exactly_once");
	assert_non_null(fail);
	assert_non_null(pass);
	assert_true(fail < pass);
	assert_non_null(strstr(all, "3 traces differ"));
	/* The reconciliation table under the gates. */
	assert_non_null(strstr(all, "reconciliation"));
	assert_non_null(strstr(all, "kept by verdict"));
	assert_non_null(strstr(all, "2585"));
	/* Enter over the gates opens no merge out of sight. */
	ms_session_key(&f->s, MS_KEY_ENTER);
	assert_int_equal(f->s.view->ui.overlay, MS_OVERLAY_NONE);
	assert_string_equal(f->s.view->ui.message,
	                    "the gates have no details: Tab shows the events, "
	                    "whose Enter does");
	ms_session_key(&f->s, MS_KEY_TAB);
	assert_false(f->s.view->ui.show_gates);
	assert_int_equal(f->s.view->ui.focus, MS_FOCUS_EVENTS);
	assert_int_equal(ms_render_frame(&cv, f->s.view, 132, 44), 0);
	bool events = false;
	for (int y = 0; y < 44; y++) {
		ms_canvas_row(&cv, y, row, sizeof(row));
		events |= strstr(row, "Events 57 merges") != NULL;
	}
	assert_true(events);
	ms_canvas_release(&cv);
	for (int i = 0; i < 3; i++)
		ms_session_key(&f->s, MS_KEY_TAB);
	assert_true(f->s.view->ui.show_gates);
	assert_int_equal(f->s.view->ui.focus, MS_FOCUS_EVENTS);
}

/* A click focuses the panel under it and selects the row clicked; the
 * wheel moves the selection of the list under the pointer. */
static void
test_mouse(void **state)
{
	fx *f = *state;
	ms_layout l;
	ms_layout_opts lo = { .overlay = false };
	ms_layout_compute(132, 44, &lo, &l);
	ms_rect inv = l.r[MS_PANEL_INVENTORY], ev = l.r[MS_PANEL_EVENTS];
	ms_mouse m = { MS_MOUSE_CLICK, inv.x + 5, inv.y + 2 + 3 };
	ms_session_mouse(&f->s, &m, 132, 44);
	assert_int_equal(f->s.view->ui.focus, MS_FOCUS_INVENTORY);
	assert_int_equal(f->s.view->ui.part_sel, 3);
	/* The header and the borders select nothing. */
	m.y = inv.y + 1;
	ms_session_mouse(&f->s, &m, 132, 44);
	assert_int_equal(f->s.view->ui.part_sel, 3);
	/* The first event row shown is the oldest that fits. */
	int rows = ms__events_rows(f->s.view, ev.w - 2, ev.h - 2);
	m.x = ev.x + 3;
	m.y = ev.y + 2;
	ms_session_mouse(&f->s, &m, 132, 44);
	assert_int_equal(f->s.view->ui.focus, MS_FOCUS_EVENTS);
	assert_int_equal(f->s.view->ui.event_sel, 57 - (uint64_t)rows + 1);
	/* Wheel down three rows from there. */
	m.kind = MS_MOUSE_WHEEL_DOWN;
	ms_session_mouse(&f->s, &m, 132, 44);
	assert_int_equal(f->s.view->ui.event_sel, 57 - (uint64_t)rows + 4);
	/* The wheel over the inventory focuses it and scrolls it. */
	m.x = inv.x + 5;
	m.y = inv.y + 4;
	m.kind = MS_MOUSE_WHEEL_UP;
	ms_session_mouse(&f->s, &m, 132, 44);
	assert_int_equal(f->s.view->ui.focus, MS_FOCUS_INVENTORY);
	assert_int_equal(f->s.view->ui.part_sel, 0);
	assert_string_equal(f->fake.log, "");
}

/* s searches the focused list; ; and , walk the matches, wrapping. */
static void
test_search(void **state)
{
	fx *f = *state;
	/* Events: "slow" is in merges 9, 18, ... 54 (every 9th). */
	keys(f, "sslow\n");
	assert_false(f->s.view->ui.message_is_error);
	/* From the newest (57) on, wrapping: the first is #9. */
	assert_int_equal(f->s.view->ui.event_sel, 9);
	assert_non_null(strstr(f->s.view->ui.message, "match 1 of 6"));
	keys(f, ";;");
	assert_int_equal(f->s.view->ui.event_sel, 27);
	keys(f, ",");
	assert_int_equal(f->s.view->ui.event_sel, 18);
	keys(f, ",,");
	assert_int_equal(f->s.view->ui.event_sel, 54); /* wrapped */
	/* The inventory by part ID. */
	f->s.view->ui.focus = MS_FOCUS_INVENTORY;
	keys(f, "s0203\n");
	assert_int_equal(f->s.view->parts[f->s.view->ui.part_sel].id, 0x203);
	keys(f, "snothing-like-it\n");
	assert_true(f->s.view->ui.message_is_error);
	assert_string_equal(f->fake.log, "");
}

/* s in the event log finds what a row shows: its rows in>out, its time,
 * its wall. It matched the merge's summary only (lane, class, reason,
 * part IDs), so "1370", read off merge #10's row, was "not in this
 * list". */
static void
test_search_what_rows_show(void **state)
{
	fx *f = *state;
	for (size_t i = 0; i < f->model->nevents; i++) {
		ms_tui_event *e = &f->model->events[i];
		char sum[256];
		snprintf(sum, sizeof(sum),
		         "#%" PRIu64 " %s/0 primary %s %s in %016" PRIx64
		         " out %016" PRIx64,
		         e->seq, e->lane, e->klass, e->reason, e->inputs[0].id,
		         e->output_id);
		snprintf(e->summary, sizeof(e->summary), "%s", sum);
	}
	ms_session_snapshot(&f->s);
	f->s.view->ui.focus = MS_FOCUS_EVENTS;
	keys(f, "s1370\n"); /* merge #10: 1000 + 10 * 37 rows in */
	assert_false(f->s.view->ui.message_is_error);
	assert_int_equal(f->s.view->ui.event_sel, 10);
	char t[32], want[64];
	const ms_tui_event *e12 = &f->s.view->events[11];
	assert_int_equal(e12->seq, 12);
	ms_fmt_clock(t, sizeof(t), e12->t, f->s.view->day_start);
	snprintf(want, sizeof(want), "s%s\n", t);
	keys(f, want);
	assert_false(f->s.view->ui.message_is_error);
	assert_int_equal(f->s.view->ui.event_sel, 12);
	keys(f, "s3.09ms\n"); /* merge #12: 2 ms + 12 * 91 us */
	assert_false(f->s.view->ui.message_is_error);
	assert_int_equal(f->s.view->ui.event_sel, 12);
	assert_string_equal(f->fake.log, "");
}

/* Each prompt says what it does: the search names the list it searches
 * (it said "search the focused list", whichever that was), and an empty
 * `/` or `:`, whose label is the one character, says what it takes. */
static void
test_prompts_say_what(void **state)
{
	fx *f = *state;
	f->s.view->ui.focus = MS_FOCUS_INVENTORY;
	keys(f, "s");
	assert_true(screen_has_at(f, 132, 44, "search parts by ID (then ;"));
	assert_true(screen_has_at(f, 80, 24, "search parts: "));
	ms_session_key(&f->s, MS_KEY_ESC);
	f->s.view->ui.focus = MS_FOCUS_EVENTS;
	keys(f, "s");
	assert_true(screen_has_at(f, 132, 44, "search events (then ;"));
	ms_session_key(&f->s, MS_KEY_ESC);
	f->s.view->ui.focus = MS_FOCUS_PLUGINS;
	keys(f, "s");
	assert_true(screen_has_at(f, 132, 44, "search links by name"));
	ms_session_key(&f->s, MS_KEY_ESC);
	keys(f, "/");
	assert_true(screen_has_at(f, 132, 44,
	                          "filter the event log: lane= class="));
	assert_true(screen_has_at(f, 80, 24, "filter the event log"));
	keys(f, "x");
	assert_false(screen_has_at(f, 132, 44, "filter the event log"));
	ms_session_key(&f->s, MS_KEY_ESC);
	keys(f, ":");
	assert_true(screen_has_at(f, 132, 44, ":   run pause step next"));
	assert_true(screen_has_at(f, 80, 24, "freeze help quit"));
	ms_session_key(&f->s, MS_KEY_ESC);
	assert_string_equal(f->fake.log, "");
}

/* `:run` while running and `:pause` while stopped do nothing, and say
 * so (the prompt closed without a word). */
static void
test_run_pause_commands_said(void **state)
{
	fx *f = *state;
	keys(f, ":run\n");
	assert_string_equal(f->fake.log, "");
	assert_string_equal(f->s.view->ui.message, "already running");
	f->model->state = MS_VIEW_PAUSED;
	ms_session_snapshot(&f->s);
	keys(f, ":pause\n");
	assert_string_equal(f->fake.log, "");
	assert_string_equal(f->s.view->ui.message, "already stopped");
	keys(f, ":run\n");
	assert_string_equal(f->fake.log, "run;");
}

/* o cycles the inventory's order; the title says which. */
/* A merge of 32 inputs (the most an event keeps): s and the filter's
 * text find it by any of them, the last one too. The summary they match
 * held 192 characters (about seven inputs), the search's line 256. */
static void
test_search_every_input(void **state)
{
	fx *f = *state;
	ms_tui_event *e = &f->model->events[20];
	size_t len = (size_t)snprintf(e->summary, sizeof(e->summary),
	                              "#%" PRIu64 " slow/1 primary executed "
	                              "none in",
	                              e->seq);
	for (int i = 0; i < MS_VIEW_EVENT_INPUTS && len < sizeof(e->summary);
	     i++)
		len += (size_t)snprintf(e->summary + len,
		                        sizeof(e->summary) - len, "%s%016x",
		                        i ? "," : " ", 0xabc00 + i);
	ms_session_snapshot(&f->s);
	f->s.view->ui.focus = MS_FOCUS_EVENTS;
	keys(f, "s00000000000abc1f\n");
	assert_false(f->s.view->ui.message_is_error);
	assert_int_equal(f->s.view->ui.event_sel, e->seq);
	keys(f, "/00000000000abc1f\n");
	size_t idx[MS_VIEW_MAX_EVENTS];
	assert_int_equal(ms_events_visible(f->s.view, idx), 1);
	assert_int_equal(f->s.view->events[idx[0]].seq, e->seq);
}

static void
test_inventory_sort(void **state)
{
	fx *f = *state;
	keys(f, "o");
	assert_int_equal(f->s.view->ui.part_sort, MS_SORT_BYTES);
	const ms_tui_view *v = f->s.view;
	for (size_t i = 1; i < v->nparts; i++)
		assert_true(v->parts[i - 1].bytes >= v->parts[i].bytes);
	keys(f, "o");
	for (size_t i = 1; i < v->nparts; i++)
		assert_true(v->parts[i - 1].max_ts >= v->parts[i].max_ts);
	keys(f, "o");
	for (size_t i = 1; i < v->nparts; i++)
		assert_true(v->parts[i - 1].depth >= v->parts[i].depth);
	keys(f, "o");
	for (size_t i = 1; i < v->nparts; i++)
		assert_true(v->parts[i - 1].id < v->parts[i].id);
	ms_canvas cv;
	ms_canvas_init(&cv);
	assert_int_equal(ms_render_frame(&cv, f->s.view, 132, 44), 0);
	bool titled = false;
	for (int y = 0; y < 44; y++) {
		char row[1024];
		ms_canvas_row(&cv, y, row, sizeof(row));
		titled |= strstr(row, "Inventory 20 parts, by id") != NULL;
	}
	assert_true(titled);
	ms_canvas_release(&cv);
	keys(f, "o"); /* back to the picker's order */
	for (size_t i = 1; i < v->nparts; i++)
		assert_true(v->parts[i - 1].bytes <= v->parts[i].bytes);
}

/* A part selected below the first row stays selected while the
 * inventory changes around it (it was a row: with two new small parts
 * above it, the highlight and Enter's details moved to another part); a
 * part merged away leaves the selection on its row; the first row stays
 * the top of the list. */
static void
test_part_selection_follows_part(void **state)
{
	fx *f = *state;
	f->s.view->ui.focus = MS_FOCUS_INVENTORY;
	keys(f, "jjj");
	size_t row = f->s.view->ui.part_sel;
	uint64_t id = f->s.view->parts[row].id;
	/* Two parts smaller than any, new at the top in picker order. */
	for (int i = 0; i < 2; i++) {
		ms_tui_part *p = &f->model->parts[f->model->nparts++];
		*p = f->model->parts[0];
		p->id = 0x900 + (uint64_t)i;
		p->bytes = 100 + (uint64_t)i;
	}
	ms_session_snapshot(&f->s);
	assert_int_equal(f->s.view->parts[f->s.view->ui.part_sel].id, id);
	assert_int_equal(f->s.view->ui.part_sel, row + 2);
	/* At the first row the selection is the top of the list: new
	 * parts above the part there leave it at the top. */
	f->s.view->ui.part_sel = 0;
	ms_tui_part *p = &f->model->parts[f->model->nparts++];
	*p = f->model->parts[0];
	p->id = 0x902;
	p->bytes = 50;
	ms_session_snapshot(&f->s);
	assert_int_equal(f->s.view->ui.part_sel, 0);
	assert_int_equal(f->s.view->parts[0].id, 0x902);
	keys(f, "jjj");
	row = f->s.view->ui.part_sel;
	id = f->s.view->parts[row].id;
	/* Merged away: the row stays. */
	for (size_t i = 0; i < f->model->nparts; i++)
		if (f->model->parts[i].id == id)
			f->model->parts[i] =
			        f->model->parts[--f->model->nparts];
	ms_session_snapshot(&f->s);
	assert_int_equal(f->s.view->ui.part_sel, row);
	assert_true(f->s.view->parts[row].id != id);
}

/* Every "+1d"/"-1d" on the screen is a whole "+1d HH:MM" label. */
static void
assert_day_labels_whole(fx *f, int w, int h)
{
	ms_canvas cv;
	ms_canvas_init(&cv);
	assert_int_equal(ms_render_frame(&cv, f->s.view, w, h), 0);
	char row[2048];
	for (int y = 0; y < h; y++) {
		ms_canvas_row(&cv, y, row, sizeof(row));
		for (const char *p = row; (p = strstr(p, "1d")); p += 2) {
			if (p == row || (p[-1] != '+' && p[-1] != '-'))
				continue;
			if (!(p[2] == ' ' && isdigit((unsigned char)p[3]) &&
			      isdigit((unsigned char)p[4]) && p[5] == ':' &&
			      isdigit((unsigned char)p[6]) &&
			      isdigit((unsigned char)p[7])))
				fail_msg("a cut label at %dx%d: %s", w, h, row);
		}
	}
	ms_canvas_release(&cv);
}

/* Zoomed in the cooldown (the finalize at +1d 02:00, where `make run`
 * stops) or before the day, the axis labels are "+1d HH:MM" wide: they
 * ran into each other ("+1d 01:+1d 01:20"). */
static void
test_zoomed_axis_outside_the_day(void **state)
{
	fx *f = *state;
	at_finalize(f);
	for (int z = 1; z <= 2; z++) {
		f->s.view->ui.zoom = z;
		assert_day_labels_whole(f, 132, 44);
		assert_day_labels_whole(f, 80, 40);
		assert_day_labels_whole(f, 200, 60);
	}
	f->model->now = f->model->day_start + 20 * FAKE_MIN;
	f->model->frontier = f->model->now - 2 * FAKE_H;
	ms_session_snapshot(&f->s);
	for (int z = 1; z <= 2; z++) {
		f->s.view->ui.zoom = z;
		assert_day_labels_whole(f, 132, 44);
		assert_day_labels_whole(f, 80, 40);
	}
}

/* z zooms the timeline in (24 h, 6 h, 1 h), Z out, stopping at the
 * ends; where the timeline is not on the screen, they say so. */
static void
test_zoom_keys(void **state)
{
	fx *f = *state;
	keys(f, "z");
	assert_int_equal(f->s.view->ui.zoom, 1);
	assert_non_null(strstr(f->s.view->ui.message, "6 hours"));
	keys(f, "zz");
	assert_int_equal(f->s.view->ui.zoom, 2);
	keys(f, "Z");
	assert_int_equal(f->s.view->ui.zoom, 1);
	keys(f, "ZZZ");
	assert_int_equal(f->s.view->ui.zoom, 0);
	assert_string_equal(f->fake.log, "");
	/* At 80x24 the timeline is folded away: the key says so, where it
	 * seemed to do nothing; from 34 rows it shows. */
	ms_session_resize(&f->s, 80, 24);
	keys(f, "z");
	assert_int_equal(f->s.view->ui.zoom, 1);
	assert_string_equal(f->s.view->ui.message,
	                    "timeline: 6 hours around now (not on this "
	                    "screen: the timeline needs 34 rows, it has 24)");
	ms_session_resize(&f->s, 80, 34);
	keys(f, "Z");
	assert_string_equal(f->s.view->ui.message, "timeline: the whole day");
}

/* The help names shift-Tab beside Tab: it moves the focus back. */
static void
test_help_names_shift_tab(void **state)
{
	fx *f = *state;
	keys(f, "?");
	assert_true(screen_has_at(f, 132, 60, "shift-Tab"));
	keys(f, "?");
}

/* The word the help gives key k, into buf (16 bytes); "" for none. */
static const char *
key_word(int k, char *buf)
{
	static const struct {
		int key;
		const char *word;
	} names[] = {
		{ MS_KEY_UP, "Up" },       { MS_KEY_DOWN, "Down" },
		{ MS_KEY_LEFT, "Left" },   { MS_KEY_RIGHT, "Right" },
		{ MS_KEY_PGUP, "PgUp" },   { MS_KEY_PGDN, "PgDn" },
		{ MS_KEY_HOME, "Home" },   { MS_KEY_END, "End" },
		{ MS_KEY_ENTER, "Enter" }, { MS_KEY_BACKSPACE, "Backspace" },
		{ MS_KEY_DELETE, "Del" },  { MS_KEY_ESC, "Esc" },
		{ MS_KEY_TAB, "Tab" },     { MS_KEY_BTAB, "shift-Tab" },
		{ ' ', "space" },
	};
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (names[i].key == k)
			return names[i].word;
	if (k > ' ' && k < 0x7f)
		snprintf(buf, 16, "%c", k);
	else if (k > 0 && k < ' ')
		snprintf(buf, 16, "^%c", k + '@');
	else if (k > MS_KEY_F0 && k <= MS_KEY_F(12))
		snprintf(buf, 16, "F%d", k - MS_KEY_F0);
	else
		buf[0] = '\0';
	return buf;
}

/* Does the word b (bl bytes) name w: itself, without a leading '(' or
 * trailing punctuation when longer than one character ("(shift-Tab:"
 * is shift-Tab), or one of its parts between '/' (Up/Down). */
static bool
word_names(const char *b, size_t bl, const char *w)
{
	size_t wl = strlen(w);
	if (bl > 1 && *b == '(') {
		b++;
		bl--;
	}
	while (bl > 1 && strchr(":,;.)", b[bl - 1]))
		bl--;
	if (bl == wl && memcmp(b, w, wl) == 0)
		return true;
	if (bl < 2)
		return false;
	for (size_t i = 0; i < bl;) {
		size_t l = 0;
		while (i + l < bl && b[i + l] != '/')
			l++;
		if (l == wl && memcmp(b + i, w, wl) == 0)
			return true;
		i += l + 1;
	}
	return false;
}

/* Is w a word of the help text (words split at blanks). */
static bool
help_has_word(const char *text, const char *w)
{
	for (const char *p = text; *p;) {
		size_t l = strcspn(p, " \n");
		if (l && word_names(p, l, w))
			return true;
		p += l;
		p += *p != '\0';
	}
	return false;
}

/* The inside of the help box, every line of it scrolled through, as
 * text (malloc'd). */
static char *
help_text(fx *f)
{
	const int w = 132, h = 60;
	keys(f, "?");
	f->s.view->ui.ascii = true;
	size_t cap = 1 << 17, used = 0;
	char *all = calloc(1, cap);
	assert_non_null(all);
	ms_layout l;
	ms__layout_view(f->s.view, w, h, &l);
	ms_rect r = l.r[MS_PANEL_OVERLAY];
	for (size_t top = 0; top < ms__help_lines(); top += (size_t)r.h - 2) {
		f->s.view->ui.help_scroll = top;
		ms_canvas cv;
		ms_canvas_init(&cv);
		assert_int_equal(ms_render_frame(&cv, f->s.view, w, h), 0);
		for (int y = r.y + 1; y < r.y + r.h - 1; y++) {
			for (int x = r.x + 1; x < r.x + r.w - 1 && used + 2 < cap;
			     x++) {
				uint32_t ch = ms_canvas_at(&cv, x, y).ch;
				all[used++] = ch < 0x80 ? (char)ch : '?';
			}
			all[used++] = '\n';
		}
		ms_canvas_release(&cv);
	}
	keys(f, "?");
	return all;
}

/* Did key k do anything in normal mode, from a fresh session focused on
 * the events (the newest followed) or on the inventory (its second part
 * selected): a controller call, a change of the interface's state, a
 * quit or a redraw. */
static bool
key_acts(int k)
{
	for (int from = 0; from < 2; from++) {
		fx *f = NULL;
		setup((void **)&f);
		ms_tui_ui *ui = &f->s.view->ui;
		ui->message[0] = '\0';
		if (from == 1) {
			ui->focus = MS_FOCUS_INVENTORY;
			ui->part_sel = 1;
		}
		ms_tui_ui before = *ui;
		size_t logged = strlen(f->fake.log);
		ms_session_key(&f->s, k);
		bool acted = strlen(f->fake.log) != logged || f->s.quit ||
		             f->s.redraw || memcmp(&before, ui, sizeof(*ui)) != 0;
		teardown((void **)&f);
		if (acted)
			return true;
	}
	return false;
}

/* Every key the interface acts on in normal mode is named in the help,
 * found by pressing each one (not read from the key table): j and k
 * moved in the lists while the help named only the arrows. */
static void
test_help_names_every_key(void **state)
{
	fx *f = *state;
	char *text = help_text(f);
	int keys_seen = 0;
	for (int k = 1; k <= MS_KEY_F(12); k++) {
		if (k == 0x7f)
			k = MS_KEY_BASE; /* past ASCII: the named keys */
		if (k == MS_KEY_RESIZE || k == MS_KEY_MOUSE || k == MS_KEY_F0 ||
		    !key_acts(k))
			continue;
		keys_seen++;
		char buf[16];
		const char *w = key_word(k, buf);
		if (!*w || !help_has_word(text, w))
			fail_msg("key %d (%s) acts but the help does not name "
			         "it",
			         k, w);
	}
	/* The table's keys at least (space, [, {, F1 ...). */
	assert_true(keys_seen >= (int)ms_key_table_len);
	free(text);
}

/* The help scrolls with the arrows (and j/k) and starts at its top. */
static void
test_help_scrolls(void **state)
{
	fx *f = *state;
	keys(f, "?jjj");
	assert_int_equal(f->s.view->ui.overlay, MS_OVERLAY_HELP);
	assert_int_equal(f->s.view->ui.help_scroll, 3);
	ms_session_key(&f->s, MS_KEY_UP);
	assert_int_equal(f->s.view->ui.help_scroll, 2);
	ms_session_key(&f->s, MS_KEY_END);
	assert_int_equal(f->s.view->ui.help_scroll, ms__help_lines() - 1);
	ms_session_key(&f->s, MS_KEY_ESC);
	assert_int_equal(f->s.view->ui.overlay, MS_OVERLAY_NONE);
	keys(f, "?");
	assert_int_equal(f->s.view->ui.help_scroll, 0);
}

/* The first line the open box shows at w x h, from its title ("Help
 * 40-57 of 57"); its last in *last, the lines in *n. */
static size_t
overlay_shows(fx *f, int w, int h, size_t *last, size_t *n)
{
	ms_canvas cv;
	ms_canvas_init(&cv);
	assert_int_equal(ms_render_frame(&cv, f->s.view, w, h), 0);
	size_t first = 0;
	bool found = false;
	char row[4096];
	for (int y = 0; y < h && !found; y++) {
		ms_canvas_row(&cv, y, row, sizeof(row));
		const char *p = strstr(row, " of ");
		while (p && p > row && p[-1] >= '0' && p[-1] <= '9')
			p--;
		while (p && p > row && p[-1] != ' ')
			p--;
		found = p && sscanf(p, "%zu-%zu of %zu", &first, last, n) == 3;
	}
	ms_canvas_release(&cv);
	assert_true(found);
	return first;
}

/* At 80x24 Up after End moves the help and the details up a line: End
 * went to the last line itself, which the box showed at its foot, so
 * the next box-height of Up presses moved nothing. End shows the last
 * line at the box's foot, and Down there stays. */
static void
test_overlay_up_after_end(void **state)
{
	fx *f = *state;
	ms_session_resize(&f->s, 80, 24);
	ms_tui_event *e = &f->model->events[f->model->nevents - 1];
	e->ninputs = e->ninputs_kept = MS_VIEW_EVENT_INPUTS;
	ms_session_snapshot(&f->s);
	for (int i = 0; i < 2; i++) {
		ms_session_key(&f->s, i ? MS_KEY_ENTER : '?');
		assert_int_equal(f->s.view->ui.overlay,
		                 i ? MS_OVERLAY_DETAIL : MS_OVERLAY_HELP);
		size_t last, n;
		ms_session_key(&f->s, MS_KEY_END);
		size_t first = overlay_shows(f, 80, 24, &last, &n);
		assert_int_equal(last, n);
		assert_true(first > 1);
		ms_session_key(&f->s, MS_KEY_DOWN);
		assert_int_equal(overlay_shows(f, 80, 24, &last, &n), first);
		ms_session_key(&f->s, MS_KEY_UP);
		assert_int_equal(overlay_shows(f, 80, 24, &last, &n),
		                 first - 1);
		assert_int_equal(last, n - 1);
		ms_session_key(&f->s, MS_KEY_ESC);
	}
}

/* Tab and shift-Tab go round the panels on the screen: at 80x24 (no
 * plugins panel) Tab went to the hidden plugins, highlighting nothing
 * and searching links nobody saw; a screen shrunk under the plugins
 * takes the focus back to the events. */
static void
test_focus_skips_folded_panels(void **state)
{
	fx *f = *state;
	ms_session_resize(&f->s, 80, 24);
	static const struct {
		int key;
		enum ms_tui_focus then;
	} walk[] = {
		{ MS_KEY_TAB, MS_FOCUS_INVENTORY },
		{ MS_KEY_TAB, MS_FOCUS_EVENTS },
		{ MS_KEY_BTAB, MS_FOCUS_INVENTORY },
		{ MS_KEY_BTAB, MS_FOCUS_EVENTS },
	};
	assert_int_equal(f->s.view->ui.focus, MS_FOCUS_EVENTS);
	for (size_t i = 0; i < sizeof(walk) / sizeof(walk[0]); i++) {
		ms_session_key(&f->s, walk[i].key);
		assert_int_equal(f->s.view->ui.focus, walk[i].then);
	}
	ms_session_resize(&f->s, 132, 44);
	ms_session_key(&f->s, MS_KEY_BTAB);
	assert_int_equal(f->s.view->ui.focus, MS_FOCUS_PLUGINS);
	ms_session_resize(&f->s, 99, 44);
	assert_int_equal(f->s.view->ui.focus, MS_FOCUS_EVENTS);
	/* At DONE, coming round to the events shows the gates again. */
	f->model->state = MS_VIEW_DONE;
	f->model->ngates = 1;
	ms_session_snapshot(&f->s);
	f->s.view->ui.show_gates = false;
	ms_session_key(&f->s, MS_KEY_TAB);
	ms_session_key(&f->s, MS_KEY_TAB);
	assert_int_equal(f->s.view->ui.focus, MS_FOCUS_EVENTS);
	assert_true(f->s.view->ui.show_gates);
}

/* The details scroll the same way, the wheel too, and open at their
 * top; at 80x24 the merge's wall time and result come into view. */
static void
test_details_scroll(void **state)
{
	fx *f = *state;
	f->s.view->ui.focus = MS_FOCUS_EVENTS;
	keys(f, "\n");
	assert_int_equal(f->s.view->ui.overlay, MS_OVERLAY_DETAIL);
	assert_false(screen_has_at(f, 80, 24, "result "));
	ms_session_key(&f->s, MS_KEY_PGDN);
	ms_session_key(&f->s, MS_KEY_PGDN);
	assert_int_equal(f->s.view->ui.overlay, MS_OVERLAY_DETAIL);
	assert_int_equal(f->s.view->ui.detail_scroll, 20);
	assert_true(screen_has_at(f, 80, 24, "result "));
	keys(f, "k");
	assert_int_equal(f->s.view->ui.detail_scroll, 19);
	ms_mouse m = { .kind = MS_MOUSE_WHEEL_DOWN, .x = 40, .y = 10 };
	ms_session_mouse(&f->s, &m, 80, 24);
	assert_int_equal(f->s.view->ui.detail_scroll, 22);
	keys(f, "\n"); /* Enter still closes */
	assert_int_equal(f->s.view->ui.overlay, MS_OVERLAY_NONE);
	keys(f, "\n");
	assert_int_equal(f->s.view->ui.detail_scroll, 0);
	assert_string_equal(f->fake.log, "");
}

/* Every prompt remembers what it was given: up and down walk it. */
static void
test_prompt_history(void **state)
{
	fx *f = *state;
	keys(f, "/");
	type_line(f, "lane=fast\n");
	keys(f, "/");
	type_line(f, "lane=slow\n");
	keys(f, "/");
	ms_session_key(&f->s, MS_KEY_CTRL('u'));
	ms_session_key(&f->s, MS_KEY_UP);
	assert_string_equal(f->s.view->ui.cmdline, "lane=slow");
	ms_session_key(&f->s, MS_KEY_UP);
	assert_string_equal(f->s.view->ui.cmdline, "lane=fast");
	ms_session_key(&f->s, MS_KEY_UP); /* no older one: stays */
	assert_string_equal(f->s.view->ui.cmdline, "lane=fast");
	ms_session_key(&f->s, MS_KEY_DOWN);
	assert_string_equal(f->s.view->ui.cmdline, "lane=slow");
	ms_session_key(&f->s, MS_KEY_DOWN);
	assert_string_equal(f->s.view->ui.cmdline, "");
	ms_session_key(&f->s, MS_KEY_ESC);
	/* Another prompt has its own. */
	keys(f, "g");
	ms_session_key(&f->s, MS_KEY_UP);
	assert_string_equal(f->s.view->ui.cmdline, "");
	ms_session_key(&f->s, MS_KEY_ESC);
}

static void
test_filter_rules(void **state)
{
	(void)state;
	ms_tui_filter flt;
	char err[128];
	ms_tui_event e;
	memset(&e, 0, sizeof(e));
	e.seq = 12;
	snprintf(e.lane, sizeof(e.lane), "fast");
	snprintf(e.klass, sizeof(e.klass), "executed");
	snprintf(e.phase, sizeof(e.phase), "primary");
	snprintf(e.summary, sizeof(e.summary), "#12 fast/0 primary executed");
	assert_true(ms_tui_filter_parse("", &flt, err, sizeof(err)));
	assert_true(ms_tui_filter_empty(&flt));
	assert_true(ms_tui_filter_match(&flt, &e, 0));
	assert_true(ms_tui_filter_parse("lane=fast class=executed seq=10..12",
	                                &flt, err, sizeof(err)));
	assert_true(ms_tui_filter_match(&flt, &e, 0));
	assert_true(ms_tui_filter_parse("seq>12", &flt, err, sizeof(err)));
	assert_false(ms_tui_filter_match(&flt, &e, 0));
	assert_true(
	        ms_tui_filter_parse("#12 reason=none", &flt, err, sizeof(err)));
	assert_true(ms_tui_filter_match(&flt, &e, 0));
	assert_true(
	        ms_tui_filter_parse("FAST/0 primary", &flt, err, sizeof(err)));
	assert_string_equal(flt.text, "FAST/0 primary");
	assert_true(ms_tui_filter_match(&flt, &e, 0));
	assert_true(ms_tui_filter_parse("slow/0", &flt, err, sizeof(err)));
	assert_false(ms_tui_filter_match(&flt, &e, 0));
	/* Each word on its own, in any order (as a phrase, "fast
	 * executed" matched nothing: "primary" stands between them). */
	assert_true(ms_tui_filter_parse("executed  FAST", &flt, err,
	                                sizeof(err)));
	assert_true(ms_tui_filter_match(&flt, &e, 0));
	assert_true(ms_tui_filter_parse("fast cooldown", &flt, err,
	                                sizeof(err)));
	assert_false(ms_tui_filter_match(&flt, &e, 0));
	/* A key the filter does not know is refused, not taken for text
	 * that no summary holds. */
	assert_false(ms_tui_filter_parse("lane=fast worker=0", &flt, err,
	                                 sizeof(err)));
	assert_non_null(strstr(err, "unknown key worker="));
	assert_non_null(strstr(err, "lane=, class=, reason=, phase=, seq="));
	/* A range backwards is named as such, and the forms it takes are
	 * all listed (seq>N and seq<N were not). */
	assert_false(ms_tui_filter_parse("seq=5..2", &flt, err, sizeof(err)));
	assert_non_null(strstr(err, "seq=A..B (A at most B)"));
	assert_non_null(strstr(err, "seq>N"));
	assert_false(
	        ms_tui_filter_parse("lane=medium", &flt, err, sizeof(err)));
	assert_non_null(strstr(err, "medium"));
	/* The values it takes are named. */
	assert_non_null(strstr(err, "(fast, slow or finalize)"));
	assert_false(ms_tui_filter_parse("class=done", &flt, err, sizeof(err)));
	assert_non_null(strstr(err, "(not_executed, enabled_no_evaluation or "
	                            "executed)"));
	assert_false(ms_tui_filter_parse("seq=9..3", &flt, err, sizeof(err)));
	/* A key given twice with two values is refused (the last one was
	 * taken, so "lane=fast lane=finalize" showed the finalize only);
	 * the same value twice is that value. */
	assert_false(ms_tui_filter_parse("lane=fast lane=finalize", &flt, err,
	                                 sizeof(err)));
	assert_non_null(strstr(err, "lane= given twice (\"fast\" and "
	                            "\"finalize\")"));
	assert_false(ms_tui_filter_parse("class=executed class=not_executed",
	                                 &flt, err, sizeof(err)));
	assert_non_null(strstr(err, "class= given twice"));
	assert_true(ms_tui_filter_parse("phase=primary #12 phase=primary",
	                                &flt, err, sizeof(err)));
	assert_true(ms_tui_filter_match(&flt, &e, 0));
}

static void
test_command_line(void **state)
{
	fx *f = *state;
	keys(f, ":speed max\n");
	keys(f, ":break sampling\n");
	keys(f, ":step\n");
	keys(f, ":go 08:00\n");
	assert_string_equal(
	        f->fake.log,
	        "speed=0;break+sampling;step;speed=0;runto=28800s;");
	keys(f, ":frobnicate\n");
	assert_true(f->s.view->ui.message_is_error);
	assert_non_null(strstr(f->s.view->ui.message, "frobnicate"));
	/* A command that takes no argument is not run with one (`:step 3`
	 * did one step; `:quit now` quit). */
	keys(f, ":step 3\n");
	assert_string_equal(
	        f->fake.log,
	        "speed=0;break+sampling;step;speed=0;runto=28800s;");
	assert_true(f->s.view->ui.message_is_error);
	assert_non_null(strstr(f->s.view->ui.message,
	                       ":step takes no argument (\"3\" given)"));
	/* :speed reads its value as --speed does: "1e3" and "0x10" are
	 * refused (strtod took them as 1000 and 16), "90x" is taken. */
	const char *bad[] = { ":speed 1e3\n", ":speed 0x10\n", ":speed inf\n",
		              ":speed -5\n" };
	for (size_t i = 0; i < 4; i++) {
		keys(f, bad[i]);
		assert_true(f->s.view->ui.message_is_error);
		assert_non_null(strstr(f->s.view->ui.message,
		                       "\": expected a multiple of real time"));
	}
	keys(f, ":speed 90x\n");
	assert_non_null(strstr(f->fake.log, "speed=90;"));
	keys(f, ":quit now\n");
	assert_false(f->s.quit);
	keys(f, ":quit\n");
	assert_true(f->s.quit);
}

static void
test_prompt_editing(void **state)
{
	fx *f = *state;
	keys(f, "/abc");
	ms_session_key(&f->s, MS_KEY_LEFT);
	ms_session_key(&f->s, MS_KEY_BACKSPACE); /* removes b */
	keys(f, "X");
	assert_string_equal(f->s.view->ui.cmdline, "aXc");
	ms_session_key(&f->s, MS_KEY_ESC);
	assert_int_equal(f->s.view->ui.prompt, MS_PROMPT_NONE);
	assert_string_equal(f->s.view->ui.filter, ""); /* cancelled */
	/* Keys typed into a prompt never reach the key table. */
	assert_string_equal(f->fake.log, "");
}

/* A character beyond ASCII typed into a prompt is not taken (the line
 * ends up in file names and specs): the prompt says so, until the next
 * key. Before, it vanished without a word (a path typed with an "é"
 * lost it, and the user saw a key do nothing). */
static void
test_prompt_says_non_ascii_not_taken(void **state)
{
	fx *f = *state;
	char row[1024];
	keys(f, "/lane");
	ms_session_key(&f->s, 0xe9); /* é */
	assert_string_equal(f->s.view->ui.cmdline, "lane");
	footer_row(f, 100, 30, row, sizeof(row));
	assert_non_null(strstr(row, "/lane   (ASCII only: that character is "
	                            "not taken)"));
	keys(f, "=");
	assert_string_equal(f->s.view->ui.cmdline, "lane=");
	footer_row(f, 100, 30, row, sizeof(row));
	assert_null(strstr(row, "ASCII only"));
	ms_session_key(&f->s, 0x6f22); /* a CJK character */
	footer_row(f, 100, 30, row, sizeof(row));
	assert_non_null(strstr(row, "ASCII only"));
	ms_session_key(&f->s, MS_KEY_ESC);
	keys(f, "/");
	footer_row(f, 100, 30, row, sizeof(row));
	assert_null(strstr(row, "ASCII only"));
	ms_session_key(&f->s, MS_KEY_ESC);
}

static void
test_help_focus_details_quit(void **state)
{
	fx *f = *state;
	keys(f, "?");
	assert_int_equal(f->s.view->ui.overlay, MS_OVERLAY_HELP);
	keys(f, "q"); /* closes help, does not quit */
	assert_int_equal(f->s.view->ui.overlay, MS_OVERLAY_NONE);
	assert_false(f->s.quit);
	ms_session_key(&f->s, MS_KEY_F(1));
	assert_int_equal(f->s.view->ui.overlay, MS_OVERLAY_HELP);
	ms_session_key(&f->s, MS_KEY_ESC);

	assert_int_equal(f->s.view->ui.focus, MS_FOCUS_EVENTS);
	ms_session_key(&f->s, MS_KEY_TAB);
	assert_int_equal(f->s.view->ui.focus, MS_FOCUS_INVENTORY);
	ms_session_key(&f->s, MS_KEY_BTAB);
	assert_int_equal(f->s.view->ui.focus, MS_FOCUS_EVENTS);

	/* Up moves off the newest event; End follows the newest again. */
	ms_session_key(&f->s, MS_KEY_UP);
	assert_int_equal(f->s.view->ui.event_sel, 56);
	ms_session_key(&f->s, MS_KEY_ENTER);
	assert_int_equal(f->s.view->ui.overlay, MS_OVERLAY_DETAIL);
	ms_session_key(&f->s, MS_KEY_ESC);
	ms_session_key(&f->s, MS_KEY_END);
	assert_int_equal(f->s.view->ui.event_sel, 0);

	ms_session_key(&f->s, MS_KEY_F(10));
	assert_true(f->s.quit);
}

/* The rows of the open box's side at w x h: from its top-left corner,
 * found by its title, down to its bottom-left one; -1 if not there. */
static int
box_rows(fx *f, int w, int h, const char *title)
{
	ms_canvas cv;
	ms_canvas_init(&cv);
	assert_int_equal(ms_render_frame(&cv, f->s.view, w, h), 0);
	int top = -1, left = -1, rows = -1;
	char row[4096];
	for (int y = 0; y < h && top < 0; y++) {
		ms_canvas_row(&cv, y, row, sizeof(row));
		if (strstr(row, title))
			top = y;
	}
	for (int x = 0; top >= 0 && x < w && left < 0; x++)
		if (ms_canvas_at(&cv, x, top).ch == 0x250c)
			left = x;
	for (int y = top + 1; left >= 0 && y < h && rows < 0; y++)
		if (ms_canvas_at(&cv, left, y).ch != 0x2502)
			rows = ms_canvas_at(&cv, left, y).ch == 0x2514
			               ? y - top - 1
			               : -1;
	ms_canvas_release(&cv);
	return rows;
}

/* A part's details (seven lines) sit in a box as tall as they are: the
 * box took the screen's height (39 rows at 132x43), most of it blank.
 * A merge's, longer than the screen, still takes all of it. */
static void
test_details_box_fits_content(void **state)
{
	fx *f = *state;
	f->s.view->ui.focus = MS_FOCUS_INVENTORY;
	keys(f, "\n");
	assert_int_equal(f->s.view->ui.overlay, MS_OVERLAY_DETAIL);
	size_t lines = ms__detail_lines(f->s.view, ms_layout_overlay_w(132) - 2,
	                                NULL);
	assert_true(lines < 16);
	assert_int_equal(box_rows(f, 132, 43, "Part  (Esc closes)"),
	                 (int)lines);
	keys(f, "\n");
	f->s.view->ui.focus = MS_FOCUS_EVENTS;
	keys(f, "\n");
	assert_int_equal(f->s.view->ui.overlay, MS_OVERLAY_DETAIL);
	assert_int_equal(box_rows(f, 80, 24, "Merge #"), 24 - 4 - 2);
}

/* The details of a sampled merge show its staging: planned and cut
 * batches, the planner's limits, the arena, and each batch with its
 * charged bytes, traces and what cut it. */
static void
test_details_show_staged_batches(void **state)
{
	fx *f = *state;
	ms_tui_event *e = &f->model->events[f->model->nevents - 1];
	e->batches = 2;
	e->batches_planned = 3;
	e->estimate = 90u << 20;
	e->preferred = 30u << 20;
	e->hard = 256u << 20;
	e->peak_staged = 30u << 20;
	e->peak_concurrent = 31u << 20;
	e->arena_cold = 28u << 20;
	e->arena_reused = 27u << 20;
	e->nbatch = 3;
	e->batch[0].charged = 30u << 20;
	e->batch[0].traces = 16559;
	snprintf(e->batch[0].reason, sizeof(e->batch[0].reason), "bytes");
	e->batch[1].charged = 29u << 20;
	e->batch[1].traces = 65536;
	snprintf(e->batch[1].reason, sizeof(e->batch[1].reason), "traces");
	e->batch[2].charged = 12u << 20;
	e->batch[2].traces = 8264;
	snprintf(e->batch[2].reason, sizeof(e->batch[2].reason), "final");
	ms_session_snapshot(&f->s);
	ms_session_key(&f->s, MS_KEY_ENTER);
	assert_int_equal(f->s.view->ui.overlay, MS_OVERLAY_DETAIL);
	ms_canvas cv;
	ms_canvas_init(&cv);
	assert_int_equal(ms_render_frame(&cv, f->s.view, 200, 60), 0);
	/* What cut each, "(full)" after the limit it reached: the one cut
	 * at the trace limit read "65536 traces, traces". */
	static const char *const want[] = {
		"planned batches",
		"preferred / hard",
		"arena cold/reused",
		"batch 1",
		"30.0M (full), 16559 traces ",
		"29.0M, 65536 traces (full) ",
		"12.0M, 8264 traces, last ",
	};
	enum { NWANT = sizeof(want) / sizeof(want[0]) };
	bool seen[NWANT] = { false };
	char row[4096];
	for (int y = 0; y < 60; y++) {
		ms_canvas_row(&cv, y, row, sizeof(row));
		for (int k = 0; k < NWANT; k++)
			seen[k] = seen[k] || strstr(row, want[k]);
	}
	ms_canvas_release(&cv);
	for (int k = 0; k < NWANT; k++)
		if (!seen[k])
			fail_msg("details lack \"%s\"", want[k]);
}

/* The details of a merge count the traces it kept hot and oversized:
 * its reason (all_traces_oversized or other for a merge that evaluated
 * nothing) no longer says which. */
static void
test_details_show_hot_and_oversized(void **state)
{
	fx *f = *state;
	ms_tui_event *e = &f->model->events[f->model->nevents - 1];
	snprintf(e->klass, sizeof(e->klass), "enabled_no_evaluation");
	snprintf(e->reason, sizeof(e->reason), "other");
	e->traces_hot = 4321;
	e->traces_oversized = 17;
	ms_session_snapshot(&f->s);
	ms_session_key(&f->s, MS_KEY_ENTER);
	assert_int_equal(f->s.view->ui.overlay, MS_OVERLAY_DETAIL);
	ms_canvas cv;
	ms_canvas_init(&cv);
	assert_int_equal(ms_render_frame(&cv, f->s.view, 200, 60), 0);
	bool hot = false, over = false;
	char row[4096];
	for (int y = 0; y < 60; y++) {
		ms_canvas_row(&cv, y, row, sizeof(row));
		hot = hot ||
		      (strstr(row, "traces kept hot") && strstr(row, "4321"));
		over = over ||
		       (strstr(row, "traces oversized") && strstr(row, "17"));
	}
	ms_canvas_release(&cv);
	assert_true(hot);
	assert_true(over);
}

/* End in the details goes to their last line while what they show
 * changes under them (a scroll key no longer lays them out again when
 * nothing changed): the selected merge gains inputs and links, then
 * loses them, and the focus moves to a part. */
static void
test_detail_scroll_follows_content(void **state)
{
	fx *f = *state;
	ms_tui_event *e = &f->model->events[f->model->nevents - 1];
	e->ninputs = e->ninputs_kept = 0;
	e->nlinks = 0;
	ms_session_snapshot(&f->s);
	ms_session_key(&f->s, MS_KEY_ENTER);
	assert_int_equal(f->s.view->ui.overlay, MS_OVERLAY_DETAIL);
	ms_session_key(&f->s, MS_KEY_END);
	size_t few = f->s.view->ui.detail_scroll;
	assert_int_equal(few + 1, ms__detail_lines(f->s.view, 60, NULL));
	/* A key that does not scroll keeps the place. */
	ms_session_key(&f->s, MS_KEY_UP);
	ms_session_key(&f->s, MS_KEY_END);
	assert_int_equal(f->s.view->ui.detail_scroll, few);
	e->ninputs = e->ninputs_kept = MS_VIEW_EVENT_INPUTS;
	e->nlinks = 3;
	ms_session_snapshot(&f->s);
	ms_session_key(&f->s, MS_KEY_END);
	size_t many = f->s.view->ui.detail_scroll;
	assert_int_equal(many + 1, ms__detail_lines(f->s.view, 60, NULL));
	assert_true(many >= few + MS_VIEW_EVENT_INPUTS);
	e->ninputs = e->ninputs_kept = 0;
	e->nlinks = 0;
	ms_session_snapshot(&f->s);
	ms_session_key(&f->s, MS_KEY_END);
	assert_int_equal(f->s.view->ui.detail_scroll, few);
	/* Another kind of item: a part's details are shorter. */
	f->s.view->ui.focus = MS_FOCUS_INVENTORY;
	ms_session_key(&f->s, MS_KEY_END);
	assert_int_equal(f->s.view->ui.detail_scroll + 1,
	                 ms__detail_lines(f->s.view, 60, NULL));
	assert_true(f->s.view->ui.detail_scroll < few);
}

/* The details scrolled through at w x h, every row read into all. */
static void
details_text(fx *f, int w, int h, char *all, size_t cap)
{
	size_t used = 0;
	all[0] = '\0';
	ms_canvas cv;
	ms_canvas_init(&cv);
	for (size_t top = 0; top < ms__detail_lines(f->s.view, 60, NULL);
	     top += 4) {
		f->s.view->ui.detail_scroll = top;
		assert_int_equal(ms_render_frame(&cv, f->s.view, w, h), 0);
		char row[4096];
		for (int y = 0; y < h; y++) {
			ms_canvas_row(&cv, y, row, sizeof(row));
			size_t l = strlen(row);
			if (used + l + 2 < cap) {
				memcpy(all + used, row, l);
				used += l;
				all[used++] = '\n';
				all[used] = '\0';
			}
		}
	}
	ms_canvas_release(&cv);
}

/* At 80 columns a merge's inputs show their maturity whole: the table
 * was 72 columns in a box of 70 and its header read "maturi". */
static void
test_detail_inputs_whole_at_80(void **state)
{
	fx *f = *state;
	ms_tui_event *e = &f->model->events[f->model->nevents - 1];
	e->ninputs = e->ninputs_kept = 2;
	e->inputs[0].mature = true;
	e->inputs[1].mature = false;
	ms_session_snapshot(&f->s);
	ms_session_key(&f->s, MS_KEY_ENTER);
	assert_int_equal(f->s.view->ui.overlay, MS_OVERLAY_DETAIL);
	static char all[65536];
	details_text(f, 80, 24, all, sizeof(all));
	assert_non_null(strstr(all, "max time     maturity "));
	assert_non_null(strstr(all, "09:21:00     mature   "));
	assert_non_null(strstr(all, "     hot      "));
}

/* A merge's links (the link's name, its calls, traces, kept and time in
 * Decide, in a table of their own) are shown whole, and a failure's
 * message longer than the details' column wraps onto the lines after, at
 * 80 columns (one column) and at 200 (two): they were cut at the box's
 * edge, the link's time and most of the message not shown. */
static void
test_merge_details_long_values(void **state)
{
	fx *f = *state;
	ms_tui_event *e = &f->model->events[f->model->nevents - 1];
	e->nlinks = 2;
	snprintf(e->links[0].name, sizeof(e->links[0].name), "skywalking");
	snprintf(e->links[1].name, sizeof(e->links[1].name),
	         "detdrop-percent-35-long");
	for (int i = 0; i < 2; i++) {
		e->links[i].calls = 123456789;
		e->links[i].traces = 9876543210ULL;
		e->links[i].kept = 9876000000ULL;
		e->links[i].total_ns = 3543210000000LL + i * 10000000000LL;
	}
	e->failed = true;
	snprintf(e->error, sizeof(e->error),
	         "the output part could not be published: no space left on "
	         "device (ENOSPC) in latency.idx");
	ms_session_snapshot(&f->s);
	ms_session_key(&f->s, MS_KEY_ENTER);
	assert_int_equal(f->s.view->ui.overlay, MS_OVERLAY_DETAIL);
	static const int size[][2] = { { 80, 24 }, { 200, 60 }, { 100, 30 } };
	size_t cap = 1 << 18;
	char *all = malloc(cap);
	assert_non_null(all);
	for (size_t k = 0; k < 3; k++) {
		details_text(f, size[k][0], size[k][1], all, cap);
		static const char *const want[] = {
			"9876000000",  "3543.21s",
			"3553.21s",    "detdrop-percent-35-long",
			"latency.idx", "123456789",
			"output checksum",
		};
		for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
			if (!strstr(all, want[i]))
				fail_msg("%dx%d: the details lack \"%s\"",
				         size[k][0], size[k][1], want[i]);
	}
	free(all);
}

static void
test_every_fkey_has_a_letter(void **state)
{
	(void)state;
	int fkeys = 0;
	for (size_t i = 0; i < ms_key_table_len; i++) {
		const ms_key_binding *b = &ms_key_table[i];
		if (b->alt >= MS_KEY_F(1) && b->alt <= MS_KEY_F(12)) {
			fkeys++;
			assert_true(b->key > 0x20 && b->key < 0x7f);
			assert_ptr_equal(ms_keys_lookup(b->key), b);
			assert_ptr_equal(ms_keys_lookup(b->alt), b);
		}
	}
	assert_int_equal(fkeys, 10);      /* F1..F10 */
	assert_null(ms_keys_lookup('X')); /* unbound */
}

static void
test_controller_errors_shown(void **state)
{
	fx *f = *state;
	f->fake.fail = 1;
	keys(f, ".");
	assert_true(f->s.view->ui.message_is_error);
	assert_non_null(strstr(f->s.view->ui.message, "fake: step refused"));
}

/* A whole session: keys come through a pipe as if typed. */
static void
test_session_loop(void **state)
{
	(void)state;
	ms_tui_view *model = ms_tui_view_new();
	assert_non_null(model);
	fake_scene_running(model);
	fake_ctl fake;
	ms_tui_ctl ctl;
	fake_init(&fake, &ctl, model);
	int p[2];
	assert_int_equal(pipe(p), 0);
	const char typed[] = ". ]/lane=fast\rq";
	assert_int_equal(write(p[1], typed, sizeof(typed) - 1),
	                 (ssize_t)sizeof(typed) - 1);
	FILE *in = fdopen(p[0], "r");
	FILE *out = fopen("/dev/null", "w");
	assert_non_null(in);
	assert_non_null(out);
	ms_tui_opts o = {
		.in = in, .out = out, .term = "xterm-256color", .ascii = true
	};
	ms_errbuf eb = { "" };
	assert_int_equal(ms_tui_run(&ctl, &o, &eb), 0);
	assert_string_equal(fake.log, "step;pause;tobreak;");
	fclose(in);
	close(p[1]);
	fclose(out);
	ms_tui_view_free(model);
}

static bool
always_stop(void)
{
	return true;
}

/* A stop its caller noted (ms_tui_opts.stop_asked: cmd_tui's stopper
 * thread, which sends one SIGHUP, no longer one every 50 ms) ends the
 * session before its first wait: the keys typed are not read. */
static void
test_session_stop_asked(void **state)
{
	(void)state;
	ms_tui_view *model = ms_tui_view_new();
	assert_non_null(model);
	fake_scene_running(model);
	fake_ctl fake;
	ms_tui_ctl ctl;
	fake_init(&fake, &ctl, model);
	int p[2];
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], ".q", 2), 2);
	FILE *in = fdopen(p[0], "r");
	FILE *out = fopen("/dev/null", "w");
	assert_non_null(in);
	assert_non_null(out);
	ms_tui_opts o = { .in = in,
		          .out = out,
		          .term = "xterm-256color",
		          .ascii = true,
		          .stop_asked = always_stop };
	ms_errbuf eb = { "" };
	assert_int_equal(ms_tui_run(&ctl, &o, &eb), 0);
	assert_string_equal(fake.log, "");
	fclose(in);
	close(p[1]);
	fclose(out);
	ms_tui_view_free(model);
}

/* A session whose snapshots are counted; the test's thread wakes it and
 * types into it. */
static struct idle_watch {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	unsigned snapshots;
	fake_ctl *fake;
} idle_watch = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0,
	         NULL };

static int
counted_snapshot(void *self, ms_tui_view *v, ms_errbuf *eb)
{
	pthread_mutex_lock(&idle_watch.mu);
	idle_watch.snapshots++;
	pthread_cond_broadcast(&idle_watch.cv);
	pthread_mutex_unlock(&idle_watch.mu);
	return fake_snapshot(self, v, eb);
}

static unsigned
snapshots_seen(void)
{
	pthread_mutex_lock(&idle_watch.mu);
	unsigned n = idle_watch.snapshots;
	pthread_mutex_unlock(&idle_watch.mu);
	return n;
}

/* Wait (at most 30 s: a hang guard, far past any frame) for n snapshots. */
static bool
snapshots_reach(unsigned n)
{
	struct timespec end;
	clock_gettime(CLOCK_REALTIME, &end);
	end.tv_sec += 30;
	pthread_mutex_lock(&idle_watch.mu);
	int rc = 0;
	while (idle_watch.snapshots < n && rc == 0)
		rc = pthread_cond_timedwait(&idle_watch.cv, &idle_watch.mu,
		                            &end);
	bool ok = idle_watch.snapshots >= n;
	pthread_mutex_unlock(&idle_watch.mu);
	return ok;
}

struct idle_session {
	const ms_tui_ctl *ctl;
	ms_tui_opts o;
	int rc;
};

static void *
idle_session_main(void *arg)
{
	struct idle_session *x = arg;
	ms_errbuf eb = { "" };
	x->rc = ms_tui_run(x->ctl, &x->o, &eb);
	return NULL;
}

/* Stopped at a barrier with nothing changing, a session woken by its
 * controller's news (ms_tui_opts.wake_fd) takes no snapshot after the
 * first frame that draws nothing new: it took one at 33, 99, 231, 495
 * ms... and then every second. The news brings a frame at once, and a
 * key still ends the wait. The window is only watched: nothing waits for
 * anything in it. */
static void
test_session_idle_until_news(void **state)
{
	(void)state;
	ms_tui_view *model = ms_tui_view_new();
	assert_non_null(model);
	fake_scene_break(model);
	fake_ctl fake;
	ms_tui_ctl ctl;
	fake_init(&fake, &ctl, model);
	ms_tui_ctl_ops ops = *ctl.ops;
	ops.snapshot = counted_snapshot;
	ctl.ops = &ops;
	int keys_in[2], news[2];
	assert_int_equal(pipe(keys_in), 0);
	assert_int_equal(pipe(news), 0);
	assert_int_equal(fcntl(news[0], F_SETFL, O_NONBLOCK), 0);
	FILE *in = fdopen(keys_in[0], "r");
	FILE *out = fopen("/dev/null", "w");
	assert_non_null(in);
	assert_non_null(out);
	struct idle_session x = { .ctl = &ctl };
	x.o = (ms_tui_opts){ .in = in, .out = out, .term = "xterm-256color",
		             .ascii = true, .wake_fd = news[0] };
	idle_watch.snapshots = 0;
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, idle_session_main, &x), 0);
	/* Before the loop, the first frame, the frame that drew nothing
	 * new. */
	assert_true(snapshots_reach(3));
	struct timespec window = { 1, 200 * 1000000L };
	nanosleep(&window, NULL);
	assert_int_equal(snapshots_seen(), 3);
	assert_int_equal(write(news[1], "n", 1), 1);
	assert_true(snapshots_reach(4));
	assert_int_equal(write(keys_in[1], "q", 1), 1);
	pthread_join(t, NULL);
	assert_int_equal(x.rc, 0);
	fclose(in);
	close(keys_in[1]);
	close(news[0]);
	close(news[1]);
	fclose(out);
	ms_tui_view_free(model);
}

/* Paused or at a barrier while a merge released before goes on staging
 * and calling Decide, the Plugins and Staging panels move with each of
 * its batches: the screen is drawn at the frame rate, news or not. It
 * waited for news after the first frame that drew nothing new, and the
 * merge's figures stood still until its event (a minute at most). */
static void
test_session_draws_a_merge_under_way_while_stopped(void **state)
{
	(void)state;
	ms_tui_view *model = ms_tui_view_new();
	assert_non_null(model);
	fake_scene_break(model);
	model->live = (ms_tui_live){ .present = true, .seq = 57,
		                     .inflight = 1, .calls = 1,
		                     .traces = 4096 };
	fake_ctl fake;
	ms_tui_ctl ctl;
	fake_init(&fake, &ctl, model);
	ms_tui_ctl_ops ops = *ctl.ops;
	ops.snapshot = counted_snapshot;
	ctl.ops = &ops;
	int keys_in[2], news[2];
	assert_int_equal(pipe(keys_in), 0);
	assert_int_equal(pipe(news), 0);
	assert_int_equal(fcntl(news[0], F_SETFL, O_NONBLOCK), 0);
	FILE *in = fdopen(keys_in[0], "r");
	FILE *out = fopen("/dev/null", "w");
	assert_non_null(in);
	assert_non_null(out);
	struct idle_session x = { .ctl = &ctl };
	x.o = (ms_tui_opts){ .in = in, .out = out, .term = "xterm-256color",
		             .ascii = true, .wake_fd = news[0] };
	idle_watch.snapshots = 0;
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, idle_session_main, &x), 0);
	/* With no news and no key: frame after frame (30 a second). The
	 * session ends before the verdict: a q ends any wait. */
	bool drawn = snapshots_reach(12);
	assert_int_equal(write(keys_in[1], "q", 1), 1);
	pthread_join(t, NULL);
	assert_true(drawn);
	assert_int_equal(x.rc, 0);
	fclose(in);
	close(keys_in[1]);
	close(news[0]);
	close(news[1]);
	fclose(out);
	ms_tui_view_free(model);
}

/* Input at its end (a file, a terminal gone) is readable for ever: a
 * session waiting for a key or news does not spin on it (each wait would
 * end at once), it waits for news or a signal (SIGHUP ends it). The
 * window is only watched: nothing waits for anything in it. */
static void
test_session_input_at_end_waits(void **state)
{
	(void)state;
	ms_tui_view *model = ms_tui_view_new();
	assert_non_null(model);
	fake_scene_break(model);
	fake_ctl fake;
	ms_tui_ctl ctl;
	fake_init(&fake, &ctl, model);
	ms_tui_ctl_ops ops = *ctl.ops;
	ops.snapshot = counted_snapshot;
	ctl.ops = &ops;
	int news[2];
	assert_int_equal(pipe(news), 0);
	assert_int_equal(fcntl(news[0], F_SETFL, O_NONBLOCK), 0);
	FILE *in = fopen("/dev/null", "r");
	FILE *out = fopen("/dev/null", "w");
	assert_non_null(in);
	assert_non_null(out);
	struct idle_session x = { .ctl = &ctl };
	x.o = (ms_tui_opts){ .in = in, .out = out, .term = "xterm-256color",
		             .ascii = true, .wake_fd = news[0] };
	idle_watch.snapshots = 0;
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, idle_session_main, &x), 0);
	assert_true(snapshots_reach(3));
	struct timespec window = { 0, 500 * 1000000L };
	nanosleep(&window, NULL);
	unsigned long waits = ms__screen_waits;
	nanosleep(&window, NULL);
	assert_true(ms__screen_waits - waits <= 1);
	assert_int_equal(write(news[1], "n", 1), 1);
	assert_true(snapshots_reach(4));
	assert_int_equal(pthread_kill(t, SIGHUP), 0);
	pthread_join(t, NULL);
	assert_int_equal(x.rc, 0);
	fclose(in);
	close(news[0]);
	close(news[1]);
	fclose(out);
	ms_tui_view_free(model);
}

static void
test_incomplete_controller(void **state)
{
	(void)state;
	ms_tui_ctl_ops ops = fake_ops;
	ops.freeze = NULL;
	ms_tui_ctl ctl = { &ops, NULL };
	ms_errbuf eb = { "" };
	assert_int_equal(ms_tui_run(&ctl, NULL, &eb), MS_ERR_INVAL);
	assert_non_null(strstr(eb.msg, "controller"));
}

/* PgUp and PgDn move by what the list shows (they moved ten rows, more
 * than the inventory shows at 80x24), and a list cut at its panel's
 * height says how many rows are above and below it. */
static void
test_pages_are_a_screenful(void **state)
{
	fx *f = *state;
	ms_session_resize(&f->s, 80, 24);
	f->s.view->ui.focus = MS_FOCUS_INVENTORY;
	f->s.view->ui.part_sel = 0;
	/* 20 parts, 6 rows at 80x24. */
	assert_true(screen_has_at(f, 80, 24, " 14 more below "));
	ms_session_key(&f->s, MS_KEY_PGDN);
	assert_int_equal(f->s.view->ui.part_sel, 6);
	assert_true(screen_has_at(f, 80, 24, " 1 above, 13 below "));
	ms_session_key(&f->s, MS_KEY_PGUP);
	assert_int_equal(f->s.view->ui.part_sel, 0);
	/* A taller screen, a taller page. */
	ms_session_resize(&f->s, 200, 60);
	ms_session_key(&f->s, MS_KEY_PGDN);
	assert_true(f->s.view->ui.part_sel > 10);
	assert_false(screen_has_at(f, 200, 60, "more below"));
	/* The event log: 57 merges, the newest 10 shown at 80x24. */
	ms_session_resize(&f->s, 80, 24);
	f->s.view->ui.focus = MS_FOCUS_EVENTS;
	assert_true(screen_has_at(f, 80, 24, " 47 more above "));
	uint64_t newest = f->s.view->events[ms_events_selected(f->s.view)].seq;
	ms_session_key(&f->s, MS_KEY_PGUP);
	uint64_t sel = f->s.view->ui.event_sel;
	assert_int_equal(sel, newest - 10);
	assert_true(screen_has_at(f, 80, 24, "below"));
}

/* A Tab that matches several paths shows them after the path (it showed
 * nothing, and completed only their common start); F10, q's key, leaves
 * a prompt as Esc does (q is text there; F10 did nothing) and does not
 * quit. */
static void
test_tab_shows_matches_f10_leaves(void **state)
{
	fx *f = *state;
	char dir[] = "/tmp/ms-keys-XXXXXX", p[128], line[192];
	assert_non_null(mkdtemp(dir));
	const char *files[] = { "run-a.jsonl", "run-b.jsonl" };
	for (size_t i = 0; i < 2; i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, files[i]);
		FILE *fp = fopen(p, "w");
		assert_non_null(fp);
		fclose(fp);
	}
	snprintf(p, sizeof(p), "%s/runs", dir);
	assert_int_equal(mkdir(p, 0700), 0);
	keys(f, "e\n");
	assert_int_equal(f->s.view->ui.prompt, MS_PROMPT_EXPORT_PATH);
	snprintf(line, sizeof(line), "%s/ru", dir);
	type_line(f, line);
	ms_session_key(&f->s, MS_KEY_TAB);
	snprintf(line, sizeof(line), "%s/run", dir);
	assert_string_equal(f->s.view->ui.cmdline, line);
	assert_true(screen_has_at(f, 200, 60, "3 matches: "));
	assert_true(screen_has_at(f, 200, 60, "run-a.jsonl"));
	assert_true(screen_has_at(f, 200, 60, "run-b.jsonl"));
	assert_true(screen_has_at(f, 200, 60, "runs/"));
	/* Until the next key. */
	keys(f, "s");
	assert_false(screen_has_at(f, 200, 60, "3 matches: "));
	ms_session_key(&f->s, MS_KEY_TAB);
	assert_int_equal(f->s.view->ui.ncomplete, 0);
	ms_session_key(&f->s, MS_KEY_F(10));
	assert_int_equal(f->s.view->ui.prompt, MS_PROMPT_NONE);
	assert_false(f->s.quit);
	assert_string_equal(f->fake.log, "");
	/* Outside a prompt, F10 quits. */
	ms_session_key(&f->s, MS_KEY_F(10));
	assert_true(f->s.quit);
	rmdir(p);
	for (size_t i = 0; i < 2; i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, files[i]);
		remove(p);
	}
	rmdir(dir);
}

int
main(void)
{
	if (!setlocale(LC_ALL, "C.UTF-8"))
		setlocale(LC_ALL, "C.utf8");
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_pages_are_a_screenful),
		T(test_tab_shows_matches_f10_leaves),
		T(test_run_pause_step),
		T(test_pause_seen_landed_at_once),
		T(test_space_again_before_the_pause_runs_on),
		T(test_speed_steps),
		T(test_goto),
		T(test_goto_back),
		T(test_restart_names_database),
		T(test_goto_back_names_database),
		T(test_goto_passed_goes_back),
		T(test_back_keys_wait_for_stop),
		T(test_step_keys_wait_for_stop),
		T(test_goto_past_last_merge),
		T(test_goto_zero_and_stopped_on_the_way),
		T(test_goto_time_stop_said),
		T(test_goto_target_on_status),
		T(test_checkpoint_note_said),
		T(test_break_spec_on_status),
		T(test_titles_singular),
		T(test_pending_narrow),
		T(test_pending_more),
		T(test_live_line_fits),
		T(test_long_chain_scrolls),
		T(test_plugin_mean_as_report),
		T(test_axis_end_label),
		T(test_axis_label_beside_frontier),
		T(test_axis_zoomed_label_beside_frontier),
		T(test_counts_short_form),
		T(test_status_80_keeps_variant),
		T(test_status_80_long_variant_keeps_merges),
		T(test_goto_back_unavailable),
		T(test_sampling_counts),
		T(test_goto_user_speed_kept),
		T(test_goto_refuses_wrapped_numbers),
		T(test_breakpoints),
		T(test_freeze_only_at_barrier),
		T(test_freeze_keys_go_on),
		cmocka_unit_test(test_quit_waits_for_freeze),
		T(test_freeze_long_command_shown),
		cmocka_unit_test(test_freeze_long_command_whole),
		T(test_offer_never_eats_a_key),
		T(test_offer_refused_said),
		T(test_breakpoint_list_scrolls),
		T(test_breakpoint_behind),
		T(test_run_to_break_without_any),
		T(test_filter_and_export),
		T(test_export_path_field),
		T(test_export_long_paths),
		T(test_details_of_a_link),
		T(test_export_prefilled_replaced),
		T(test_footer_questions_fit),
		T(test_prompt_history),
		T(test_help_scrolls),
		T(test_overlay_up_after_end),
		T(test_help_names_shift_tab),
		T(test_help_names_every_key),
		T(test_goto_and_speed_refusals_say_the_range),
		T(test_details_scroll),
		T(test_details_box_fits_content),
		T(test_focus_skips_folded_panels),
		T(test_zoom_keys),
		T(test_mouse),
		T(test_search),
		T(test_search_every_input),
		T(test_search_what_rows_show),
		T(test_prompts_say_what),
		T(test_run_pause_commands_said),
		T(test_inventory_sort),
		T(test_zoomed_axis_outside_the_day),
		T(test_part_selection_follows_part),
		T(test_gates_at_done),
		T(test_gates_scroll),
		T(test_gates_header_stays),
		T(test_gates_wrap),
		T(test_inventory_times_whole),
		T(test_prompt_scroll_marks),
		cmocka_unit_test(test_filter_rules),
		T(test_command_line),
		T(test_prompt_says_non_ascii_not_taken),
		T(test_prompt_editing),
		T(test_help_focus_details_quit),
		T(test_details_show_staged_batches),
		T(test_details_show_hot_and_oversized),
		T(test_detail_scroll_follows_content),
		T(test_detail_inputs_whole_at_80),
		T(test_merge_details_long_values),
		cmocka_unit_test(test_every_fkey_has_a_letter),
		T(test_controller_errors_shown),
		cmocka_unit_test(test_session_loop),
		cmocka_unit_test(test_session_stop_asked),
		cmocka_unit_test(test_session_idle_until_news),
		cmocka_unit_test(
		        test_session_draws_a_merge_under_way_while_stopped),
		cmocka_unit_test(test_session_input_at_end_waits),
		cmocka_unit_test(test_incomplete_controller),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
