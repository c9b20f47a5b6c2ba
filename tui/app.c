/*
 * app.c - a TUI session and its main loop.
 *
 * The loop waits for a key at most until the next frame is due, handles
 * every key that is queued, and draws a frame at most `fps` times a second
 * from a fresh snapshot of the controller. Keys therefore take effect at
 * once and show within one frame (33 ms at the default 30 fps) however
 * busy the engine is: the engine runs on its own thread and the TUI only
 * ever holds the controller's lock for the copy in `snapshot`.
 *
 * A stopped run (paused, at a barrier, done) whose screen did not change
 * costs next to nothing: each frame that draws nothing new doubles the
 * wait for the next one, up to MS__IDLE_MAX_NS (ms__pace_next). A key or
 * a resize ends the wait at once and is drawn at once; a change the run
 * makes by itself while stopped (a merge of another lane ending, the
 * gates read at the end) shows within that second. With a wake
 * descriptor (ms_tui_opts.wake_fd: the replay's notify) the screen waits
 * for the controller's news instead: the first frame that draws nothing
 * new waits up to MS_TUI_IDLE_WAKE_MAX_S, and the news ends the wait and
 * is drawn at once (within a second while the view is settling).
 *
 * Ways out, all through ms_screen_close (which gives the terminal back):
 * q/F10, a signal (the handler sets a flag this loop polls, and so may
 * the caller: ms_tui_opts.stop_asked), or an error
 * opening the screen. The atexit handler in screen.c covers exit() calls.
 */
#include "ms_clock.h"
#include "tui_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int
ms_session_init(ms_tui_session *s, const ms_tui_ctl *ctl)
{
	memset(s, 0, sizeof(*s));
	s->ctl = ctl;
	s->view = ms_tui_view_new();
	if (!s->view)
		return MS_ERR_NOMEM;
	s->program = "mergescope";
	s->dirty = true;
	return 0;
}

void
ms_session_release(ms_tui_session *s)
{
	if (!s)
		return;
	ms_tui_view_free(s->view);
	s->view = NULL;
	free(s->frozen_all);
	s->frozen_all = NULL;
}

static void
clamp_sel(size_t *sel, size_t n)
{
	if (*sel >= n)
		*sel = n ? n - 1 : 0;
}

/* A part selected below the first row is a part, not a row: after a
 * snapshot it is found again by its ID (new parts come and merged ones go
 * above it, so the row it was on may now hold another; the details
 * showed that one). A part that is gone leaves the selection on its row.
 * The first row stays the top of the list, as it is until a key moves
 * the selection (following its part there scrolled the inventory away
 * from the smallest parts with nobody looking). */
static void
follow_part(ms_tui_view *v, uint64_t id)
{
	for (size_t i = 0; id && i < v->nparts; i++)
		if (v->parts[i].id == id) {
			v->ui.part_sel = i;
			return;
		}
}

int
ms_session_snapshot(ms_tui_session *s)
{
	ms_tui_view *old = s->view;
	uint64_t sel_id = old->ui.part_sel > 0 &&
	                                  old->ui.part_sel < old->nparts &&
	                                  old->nparts <= MS_VIEW_MAX_PARTS
	                          ? old->parts[old->ui.part_sel].id
	                          : 0;
	ms_tui_ui ui = s->view->ui;
	ms_errbuf eb = { "" };
	int rc = s->ctl->ops->snapshot(s->ctl->self, s->view, &eb);
	s->view->ui = ui; /* the controller never owns ui */
	if (s->view->nparts > MS_VIEW_MAX_PARTS)
		s->view->nparts = MS_VIEW_MAX_PARTS;
	if (s->view->nevents > MS_VIEW_MAX_EVENTS)
		s->view->nevents = MS_VIEW_MAX_EVENTS;
	if (s->view->nplugins > MS_VIEW_MAX_PLUGINS)
		s->view->nplugins = MS_VIEW_MAX_PLUGINS;
	if (s->view->nbreaks > MS_VIEW_MAX_BREAKS)
		s->view->nbreaks = MS_VIEW_MAX_BREAKS;
	if (s->view->sel.ninputs > MS_VIEW_MAX_INPUTS)
		s->view->sel.ninputs = MS_VIEW_MAX_INPUTS;
	ms_tui_view_sort_parts(s->view);
	follow_part(s->view, sel_id);
	clamp_sel(&s->view->ui.part_sel, s->view->nparts);
	clamp_sel(&s->view->ui.plugin_sel, s->view->nplugins);
	clamp_sel(&s->view->ui.break_sel, s->view->nbreaks);
	ms__session_freeze_poll(s, false);
	if (rc == 0)
		ms__session_observe(s);
	if (rc < 0)
		ms_session_say(s, true, "snapshot: %s",
		               eb.msg[0] ? eb.msg : ms_strerror(rc));
	return rc;
}

bool
ms__color_wanted(bool no_color_opt)
{
	const char *nc = getenv("NO_COLOR");
	return !no_color_opt && !(nc && *nc);
}

int64_t
ms__pace_next(ms__pacer *p, bool stopped, bool changed)
{
	if (!stopped || changed || p->wait_ns < p->frame_ns) {
		p->wait_ns = p->frame_ns;
		return p->wait_ns;
	}
	if (p->idle_ns > 0) {
		p->wait_ns = p->idle_ns;
		return p->wait_ns;
	}
	p->wait_ns = p->wait_ns > MS__IDLE_MAX_NS / 2 ? MS__IDLE_MAX_NS
	                                              : p->wait_ns * 2;
	return p->wait_ns;
}

/* Nothing on screen moves by itself: the run is stopped and no merge
 * still under way stages or calls Decide (paused or at a barrier, one
 * that was released goes on, and its figures move with each batch: the
 * screen is drawn at the frame rate until its event, as while running). */
static bool
view_stopped(const ms_tui_session *s)
{
	const ms_tui_view *v = s->view;
	return v->state != MS_VIEW_RUNNING && !v->live.present && !s->freezing;
}

/* Quitting with a freeze under way waits for it, saying so, so that its
 * command is printed with the others (a freeze is built beside its
 * directory and renamed to it at its end: one cut short looks like none,
 * and `clean` removes it). */
static void
wait_freeze(ms_tui_session *s)
{
	if (!s->freezing)
		return;
	ms_session_say(s, false,
	               "waiting for the freeze of merge #%" PRIu64
	               " to end ...",
	               s->freeze_seq);
	if (s->draw_now)
		s->draw_now(s->draw_arg);
	ms__session_freeze_poll(s, true);
}

/* The screen drawn in the middle of a key (ms_tui_session.draw_now). */
typedef struct app_draw {
	ms_screen *scr;
	ms_canvas *canvas;
	ms_tui_view *view;
} app_draw;

static void
app_draw_now(void *arg)
{
	app_draw *d = arg;
	int w, h;
	ms_screen_size(d->scr, &w, &h);
	if (ms_render_frame(d->canvas, d->view, w, h) == 0)
		ms_screen_draw(d->scr, d->canvas);
}

static bool
ops_complete(const ms_tui_ctl_ops *o)
{
	return o && o->run && o->pause && o->step && o->step_to_barrier &&
	       o->run_to_breakpoint && o->run_to && o->set_speed &&
	       o->break_add && o->break_enable && o->break_delete &&
	       o->freeze && o->freeze_done && o->export_events && o->snapshot;
}

/* The session's merge-once commands, for the quit to print: handed
 * over, whole. */
static void
give_frozen(const ms_tui_opts *opts, ms_tui_session *s)
{
	if (!opts->frozen_cmds)
		return;
	*opts->frozen_cmds = NULL;
	if (s->frozen_lost) {
		char more[64];
		int n = snprintf(more, sizeof(more), "(and %u more)\n",
		                 s->frozen_lost);
		char *all = realloc(s->frozen_all, s->frozen_all_len + n + 1);
		if (all) {
			memcpy(all + s->frozen_all_len, more, (size_t)n + 1);
			s->frozen_all = all;
		}
	}
	*opts->frozen_cmds = s->frozen_all;
	s->frozen_all = NULL;
}

int
ms_tui_run(const ms_tui_ctl *ctl, const ms_tui_opts *opts, ms_errbuf *eb)
{
	ms_tui_opts zero = { 0 };
	if (!opts)
		opts = &zero;
	if (!ctl || !ops_complete(ctl->ops))
		return ms_fail(eb, MS_ERR_INVAL,
		               "tui: controller is missing operations");
	bool color = ms__color_wanted(opts->no_color);
	int fps = opts->fps > 0 ? opts->fps : 30;
	int64_t frame_ns = 1000000000LL / fps;

	ms_tui_session s;
	int rc = ms_session_init(&s, ctl);
	if (rc)
		return ms_fail(eb, rc,
		               "tui: out of memory for its view (%zu bytes)",
		               sizeof(ms_tui_view));
	if (opts->program)
		s.program = opts->program;
	ms__session_offer(&s, opts->offer_breaks, opts->offer_nbreaks,
	                  opts->offer_filter);
	ms_screen_opts so = {
		.out = opts->out,
		.in = opts->in,
		.term = opts->term,
		.color = color,
		.signals = true,
		.wake_fd = opts->wake_fd,
	};
	ms_screen *scr;
	rc = ms_screen_open(&scr, &so, eb);
	if (rc) {
		ms_session_release(&s);
		return rc;
	}
	s.view->ui.ascii = opts->ascii || !ms_screen_unicode();
	s.view->ui.color = ms_screen_has_color(scr);

	ms_canvas canvas;
	ms_canvas_init(&canvas);
	app_draw drawer = { scr, &canvas, s.view };
	s.draw_now = app_draw_now;
	s.draw_arg = &drawer;
	ms__pacer pace = { .frame_ns = frame_ns, .wait_ns = frame_ns };
	if (opts->wake_fd > 0)
		pace.idle_ns = MS_TUI_IDLE_WAKE_MAX_S * 1000000000LL;
	int64_t next_frame = 0, last_frame = 0;
	ms_session_snapshot(&s); /* keys before the first frame see state */
	while (!s.quit && !ms_screen_interrupted() &&
	       !(opts->stop_asked && opts->stop_asked())) {
		int64_t now = ms_mono_ns();
		int wait_ms = next_frame > now
		                      ? (int)((next_frame - now) / 1000000) + 1
		                      : 0;
		/* News come many times a frame while the run runs: the
		 * screen listens for them only while it is stopped. */
		ms_screen_listen(scr, view_stopped(&s));
		int key = ms_screen_key(scr, wait_ms);
		/* What a key does, or news the controller woke the screen
		 * for, shows at once, within the frame rate. */
		if ((key != MS_KEY_NONE || ms_screen_woken(scr)) &&
		    next_frame > last_frame + frame_ns)
			next_frame = last_frame + frame_ns;
		while (key != MS_KEY_NONE && !s.quit) {
			if (key == MS_KEY_RESIZE) {
				int rw, rh;
				ms_screen_invalidate(scr);
				ms_screen_size(scr, &rw, &rh);
				ms_session_resize(&s, rw, rh);
			}
			if (key == MS_KEY_MOUSE) {
				ms_mouse m;
				int mw, mh;
				ms_screen_mouse(scr, &m);
				ms_screen_size(scr, &mw, &mh);
				ms_session_mouse(&s, &m, mw, mh);
			} else {
				ms_session_key(&s, key);
			}
			/* The next key must see what this one changed (two
			 * quick spaces are pause, then run). */
			ms_session_snapshot(&s);
			key = ms_screen_key(scr, 0);
		}
		if (s.quit)
			break;
		now = ms_mono_ns();
		if (now < next_frame)
			continue;
		ms_session_snapshot(&s);
		if (s.redraw) {
			ms_screen_invalidate(scr);
			s.redraw = false;
		}
		int w, h;
		ms_screen_size(scr, &w, &h);
		ms_session_resize(&s, w, h);
		s.view->ui.frame++;
		bool changed = ms_render_frame(&canvas, s.view, w, h) == 0 &&
		               ms_screen_draw(scr, &canvas);
		s.dirty = false;
		last_frame = now;
		int64_t wait =
		        ms__pace_next(&pace, view_stopped(&s), changed);
		if (s.view->settling && wait > MS__IDLE_MAX_NS)
			wait = MS__IDLE_MAX_NS;
		next_frame = now + wait;
	}
	wait_freeze(&s);
	ms_screen_close(scr);
	ms_canvas_release(&canvas);
	if (opts->filter_out && opts->filter_out_n)
		snprintf(opts->filter_out, opts->filter_out_n, "%s",
		         s.view->ui.filter);
	give_frozen(opts, &s);
	ms_session_release(&s);
	return 0;
}
