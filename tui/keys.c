/*
 * keys.c - what every key does.
 *
 * Normal mode walks ms_key_table: each binding names a key, optionally an
 * F-key for the same action (every F-key has a letter), the label the help
 * and the footer show, and the action, which calls the controller. The
 * help overlay and the footer are drawn from this table, so they cannot
 * drift from what the keys do.
 *
 * Modes, checked in this order by ms_session_key:
 *  1. a footer prompt is open (filter, command line, go-to, export, new
 *     breakpoint): keys edit the line, Enter submits, Esc cancels;
 *  2. the breakpoint list is open: its own keys (add, toggle, delete);
 *  3. help or details are open: Esc, q, Enter or their key close them;
 *  4. normal mode: the key table, then navigation of the focused panel.
 * Every key that changes something marks the session dirty so the next
 * frame is drawn at once rather than at the next tick.
 */
#include "tui_int.h"
#include "cli.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 1200x is the default speed (a day in 72 s): `+`/`-` come back to it. */
const double ms_speed_steps[] = { 1,   2,   5,    10,   30,   60, 120,
	                          300, 600, 1200, 1800, 3600, 0 };
const size_t ms_speed_steps_len =
        sizeof(ms_speed_steps) / sizeof(ms_speed_steps[0]);

void
ms_session_say(ms_tui_session *s, bool error, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->view->ui.message, sizeof(s->view->ui.message), fmt, ap);
	va_end(ap);
	s->view->ui.message_is_error = error;
	s->msg_stamped = false;
	s->msg_keep = false;
	s->pausing_said = false;
	s->dirty = true;
}

/* Where the replay is, as far as a footer message cares: running (any
 * point), or stopped at a given publication count and barrier. */
static uint64_t
replay_where(const ms_tui_view *v)
{
	if (v->state == MS_VIEW_RUNNING)
		return 1;
	uint64_t h = (uint64_t)v->state * 0x9e3779b97f4a7c15ULL;
	h ^= v->pub_done * 0xff51afd7ed558ccdULL;
	h ^= (v->sel.present ? v->sel.seq : 0) * 0xc4ceb9fe1a85ec53ULL;
	return h | 2; /* never 1 */
}

static uint64_t go_merge_position(const ms_tui_view *v);

/* The day's last merge, where the view shows it: the run is over, or
 * stopped at the finalize's barrier; else what the session saw before
 * (0: not known yet). */
static uint64_t
day_last_merge(ms_tui_session *s)
{
	const ms_tui_view *v = s->view;
	if (v->state == MS_VIEW_DONE && v->merges_done)
		s->day_last_merge = go_merge_position(v);
	else if (v->state == MS_VIEW_BREAK && v->sel.present &&
	         strcmp(v->sel.lane, "finalize") == 0)
		s->day_last_merge = v->sel.seq;
	return s->day_last_merge;
}

/* A `g` has stopped: say so where the stop is not plainly its target. A
 * time target stops before the first point of the run after it (a
 * publication, the day's end, the end of the grace after it), where the
 * clock still reads that point's time before: nothing happens in
 * between, so the state is the target's, but the clock is not; a merge
 * target the day never reaches ends the run. True when it said
 * something. */
static bool
go_stopped(ms_tui_session *s)
{
	const ms_tui_view *v = s->view;
	const ms_tui_target *t = &s->go_tgt;
	char tb[32], nb[32], nx[32];
	if (t->kind == MS_TARGET_MERGE && v->state == MS_VIEW_DONE) {
		ms_session_say(s, true,
		               "go to #%" PRIu64
		               ": the day ended at merge #%" PRIu64
		               ", its last (the finalize): there is no merge "
		               "#%" PRIu64,
		               t->seq, day_last_merge(s), t->seq);
		return true;
	}
	/* Stopped on the way by a breakpoint, which drops the target; one
	 * at the target itself (a merge=N there, or a barrier at or after
	 * the time) stopped it there, not before it. */
	bool there = t->kind == MS_TARGET_MERGE
	                     ? v->sel.present && v->sel.seq == t->seq
	                     : t->kind == MS_TARGET_TIME && v->now >= t->t;
	if (v->state == MS_VIEW_BREAK && v->break_why[0] && !there &&
	    strncmp(v->break_why, "go ", 3) != 0) {
		if (t->kind == MS_TARGET_MERGE)
			snprintf(tb, sizeof(tb), "#%" PRIu64, t->seq);
		else
			ms_fmt_clock(tb, sizeof(tb), t->t, v->day_start);
		ms_session_say(s, false,
		               "go %s: stopped before it at breakpoint %s; g "
		               "again goes on",
		               tb, v->break_why);
		return true;
	}
	if (t->kind != MS_TARGET_TIME || strncmp(v->break_why, "go ", 3) != 0 ||
	    v->now >= t->t)
		return false;
	ms_fmt_clock(tb, sizeof(tb), t->t, v->day_start);
	ms_fmt_clock(nb, sizeof(nb), v->now, v->day_start);
	if (strcmp(v->phase, "cooldown") == 0)
		ms_session_say(s, false,
		               "go %s: stopped at %s, the day's end: nothing "
		               "happens until %s, the cooldown's next point "
		               "(every part aged by the grace)",
		               tb, nb,
		               ms_fmt_clock(nx, sizeof(nx),
		                            v->day_end + (v->now - v->frontier),
		                            v->day_start));
	else if (strcmp(v->phase, "boundary") == 0)
		ms_session_say(
		        s, false,
		        "go %s: stopped at %s, the day's last "
		        "publication: nothing happens until the day's "
		        "end, %s",
		        tb, nb,
		        ms_fmt_clock(nx, sizeof(nx), v->day_end, v->day_start));
	else
		ms_session_say(s, false,
		               "go %s: stopped at %s, the last publication "
		               "before it: nothing happens until the next one",
		               tb, nb);
	return true;
}

/* Target t as the footer names it: "merge #5", "publication 3",
 * "09:00:00". */
static const char *
target_name(const ms_tui_session *s, const ms_tui_target *t, char *tb, size_t n)
{
	if (t->kind == MS_TARGET_MERGE)
		snprintf(tb, n, "merge #%" PRIu64, t->seq);
	else if (t->kind == MS_TARGET_PUB)
		snprintf(tb, n, "publication %" PRIu64, t->pub);
	else
		ms_fmt_clock(tb, n, t->t, s->view->day_start);
	return tb;
}

/* A `g` that re-ran the day from its start has stopped: the database it
 * records to, said again there (the message that named it as the run
 * began is gone once it stops), after what go_stopped said if it did. */
static void
go_stopped_db(ms_tui_session *s, bool said)
{
	ms_tui_ui *ui = &s->view->ui;
	char tb[48];
	if (!s->go_db[0])
		return;
	if (said) {
		size_t l = strlen(ui->message);
		snprintf(ui->message + l, sizeof(ui->message) - l,
		         " (re-ran from the day's start, recording to %s)",
		         s->go_db);
	} else {
		target_name(s, &s->go_tgt, tb, sizeof(tb));
		ms_session_say(s, false,
		               "back at %s, re-run from the day's start, "
		               "recording to %s",
		               tb, s->go_db);
	}
	s->go_db[0] = '\0';
}

static void act_barrier_back(ms_tui_session *s);
static void act_pub_back(ms_tui_session *s);
static void act_step(ms_tui_session *s);
static void act_next_barrier(ms_tui_session *s);

/* The `[` and `{` kept for the stop of the run on its way, once it is
 * seen stopped: each as if pressed now, in order (one may be kept again
 * for the stop of the go the one before it starts, and the rest after
 * it). */
static void
back_keys_run(ms_tui_session *s)
{
	if (!s->nback || s->go_inflight || s->stop_inflight)
		return;
	char keys[sizeof(s->back_keys)];
	size_t n = s->nback;
	memcpy(keys, s->back_keys, n);
	s->nback = 0;
	for (size_t i = 0; i < n; i++)
		(keys[i] == '['   ? act_barrier_back
		 : keys[i] == '{' ? act_pub_back
		 : keys[i] == '.' ? act_step
		                  : act_next_barrier)(s);
}

void
ms__session_observe(ms_tui_session *s)
{
	ms_tui_view *v = s->view;
	if (v->state != MS_VIEW_RUNNING) {
		s->go_inflight = s->stop_inflight = s->pause_asked = false;
		if (s->pausing_said) {
			s->pausing_said = false;
			v->ui.message[0] = '\0';
			s->dirty = true;
		}
	}
	if (s->go_active && v->state != MS_VIEW_RUNNING) {
		ms_errbuf eb = { "" };
		s->go_active = false;
		if (s->ctl->ops->set_speed(s->ctl->self, s->go_speed, &eb) == 0)
			v->speed = s->go_speed;
		go_stopped_db(s, go_stopped(s));
	}
	(void)day_last_merge(s);
	if (!s->go_active)
		v->ui.go_target[0] = '\0';
	/* The run just ended: its gates take the Events area. */
	if (v->state == MS_VIEW_DONE && s->last_state != MS_VIEW_DONE &&
	    v->ngates) {
		v->ui.show_gates = true;
		v->ui.gates_scroll = 0;
		v->ui.focus = MS_FOCUS_EVENTS;
	}
	if (v->state != MS_VIEW_DONE)
		v->ui.show_gates = false;
	s->last_state = v->state;
	/* Checkpoints thinned or off: said once, kept until the next
	 * message (going back may restart the day instead). */
	if (strcmp(v->checkpoint_note, s->last_ck_note) != 0) {
		snprintf(s->last_ck_note, sizeof(s->last_ck_note), "%s",
		         v->checkpoint_note);
		if (v->checkpoint_note[0])
			ms_session_say(s, true, "%s", v->checkpoint_note);
	}
	uint64_t where = replay_where(v);
	if (!s->msg_stamped) {
		s->msg_stamped = true;
		s->msg_where = where;
	} else if (where != s->msg_where && v->ui.message[0] &&
	           !v->ui.message_is_error && !s->msg_keep) {
		v->ui.message[0] = '\0';
		s->dirty = true;
	}
	back_keys_run(s);
}

/* Report a controller result: its error text, or `ok` on success. */
static void
report(ms_tui_session *s, int rc, const ms_errbuf *eb, const char *ok)
{
	if (rc < 0)
		ms_session_say(s, true, "%s",
		               eb->msg[0] ? eb->msg : ms_strerror(rc));
	else if (ok)
		ms_session_say(s, false, "%s", ok);
}

void
ms__prompt_open(ms_tui_session *s, enum ms_tui_prompt p, const char *init)
{
	ms_tui_ui *ui = &s->view->ui;
	s->hist_pos = 0;
	ui->prompt = p;
	snprintf(ui->cmdline, sizeof(ui->cmdline), "%s", init ? init : "");
	ui->cursor = strlen(ui->cmdline);
	ui->prefilled = false;
	ui->not_ascii = false;
	ui->message[0] = '\0';
	s->dirty = true;
}

void
ms__prompt_offer(ms_tui_session *s, enum ms_tui_prompt p, const char *init)
{
	ms__prompt_open(s, p, init);
	s->view->ui.prefilled = s->view->ui.cmdline[0] != '\0';
}

/* ---- Actions ------------------------------------------------------------ */

/* What the keys kept for the run's stop are, for the message that drops
 * them. */
static const char *
kept_keys_name(const ms_tui_session *s)
{
	bool back = false, fwd = false;
	for (size_t i = 0; i < s->nback; i++) {
		if (s->back_keys[i] == '[' || s->back_keys[i] == '{')
			back = true;
		else
			fwd = true;
	}
	return !fwd ? "[ or {" : back ? "keys" : "steps";
}

/* Where a pause asked for now lands: after the cooldown no publication
 * is left, and the finalize's barrier at most (it said "the next
 * publication or barrier" while the finalize merge ran, and the run
 * then ended instead). */
static const char *
pause_where(const ms_tui_view *v)
{
	if (strcmp(v->phase, "end") == 0)
		return "pausing: the run is at its end, its gates are read";
	if (strcmp(v->phase, "finalize") == 0)
		return "pausing at the finalize merge's barrier, or at the "
		       "end if it runs already";
	return "pausing at the next publication or barrier";
}

static void
act_run_pause(ms_tui_session *s)
{
	ms_errbuf eb = { "" };
	if (s->view->state == MS_VIEW_RUNNING && s->pause_asked) {
		s->pause_asked = false;
		report(s, s->ctl->ops->run(s->ctl->self, &eb), &eb,
		       "running on: the pause asked for is dropped");
	} else if (s->view->state == MS_VIEW_RUNNING) {
		/* `[` then counts from the stop; those kept for the stop of
		 * the run on its way are dropped with it. */
		size_t dropped = s->nback;
		const char *what = kept_keys_name(s);
		s->go_inflight = s->stop_inflight = false;
		s->nback = 0;
		int rc = s->ctl->ops->pause(s->ctl->self, &eb);
		s->pause_asked = rc == 0;
		if (rc == 0 && dropped) {
			ms_session_say(s, false,
			               "paused; the %zu %s kept for the "
			               "run's stop dropped",
			               dropped, what);
			s->msg_keep = true; /* past the stop it asks for */
		} else { /* cleared once the run is seen stopped */
			report(s, rc, &eb, pause_where(s->view));
			s->pausing_said = rc == 0;
		}
	} else if (s->view->state == MS_VIEW_DONE) {
		ms_session_say(s, true, "the run is over; nothing to resume");
	} else {
		report(s, s->ctl->ops->run(s->ctl->self, &eb), &eb, "running");
	}
}

/* A command that runs to a stop not known before it is there (rc its
 * answer), given by key: `[` and `{` wait for that stop. */
static int
stop_set(ms_tui_session *s, int rc, char key)
{
	if (rc == 0) {
		s->stop_inflight = true;
		s->stop_key = key;
	}
	return rc;
}

/* Keep key, pressed while the run is on its way to a stop, to run from
 * there (`what` it will do, said back); one beyond the room is said and
 * dropped. True: the key is dealt with. */
static bool
keep_key(ms_tui_session *s, char key, const char *what)
{
	if (s->nback == sizeof(s->back_keys)) {
		ms_session_say(s, true,
		               "%c: %zu are kept for the run's stop already",
		               key, s->nback);
		return true;
	}
	s->back_keys[s->nback++] = key;
	ms_session_say(s, false,
	               "%c: %s from where the run stops (%zu kept; space "
	               "drops them)",
	               key, what, s->nback);
	return true;
}

/* `.` or `n` pressed again while the one before is on its way (the
 * replay takes a step while stepping as the same step: `...` went one
 * point on, not three): kept for the run's stop, as `[` is, and done
 * there (back_keys_run). True when kept (or refused, with more than it
 * keeps). */
static bool
step_key_kept(ms_tui_session *s, char key)
{
	if (!s->stop_inflight || s->stop_key != key)
		return false;
	return keep_key(s, key, key == '.' ? "one more step" : "one more merge");
}

static void
act_step(ms_tui_session *s)
{
	ms_errbuf eb = { "" };
	if (step_key_kept(s, '.'))
		return;
	report(s, stop_set(s, s->ctl->ops->step(s->ctl->self, &eb), '.'), &eb,
	       NULL);
}

static void
act_next_barrier(ms_tui_session *s)
{
	ms_errbuf eb = { "" };
	if (step_key_kept(s, 'n'))
		return;
	report(s,
	       stop_set(s, s->ctl->ops->step_to_barrier(s->ctl->self, &eb),
	                'n'),
	       &eb, "running to the next merge (its dispatch barrier)");
}

static void
act_run_to_break(ms_tui_session *s)
{
	ms_errbuf eb = { "" };
	/* With none to stop at, the run goes to the end: "running to the
	 * next breakpoint" promised a stop that never came. */
	bool any = false;
	for (size_t i = 0; i < s->view->nbreaks && !any; i++)
		any = s->view->breaks[i].enabled;
	report(s,
	       stop_set(s, s->ctl->ops->run_to_breakpoint(s->ctl->self, &eb),
	                ']'),
	       &eb,
	       any ? "running to the next breakpoint"
	           : "no breakpoint is set (b adds one): running to the end");
}

/* The speed steps just above and just below the speed sp (0 is max): a
 * speed between two steps (`:speed 1500`) goes to the nearer step on
 * either side, never past it. Below 1x there is no slower step: `-` keeps
 * the speed (it never speeds up, and never reaches 0, which means max). */
static size_t
faster_speed_step(double sp)
{
	for (size_t i = 0; sp > 0 && i + 1 < ms_speed_steps_len; i++)
		if (ms_speed_steps[i] > sp)
			return i;
	return ms_speed_steps_len - 1;
}

static bool
slower_speed_step(double sp, size_t *step)
{
	if (sp <= 0) {
		*step = ms_speed_steps_len - 2;
		return true;
	}
	bool found = false;
	for (size_t i = 0; i + 1 < ms_speed_steps_len; i++)
		if (ms_speed_steps[i] < sp) {
			*step = i;
			found = true;
		}
	return found;
}

static void
set_speed_step(ms_tui_session *s, size_t step)
{
	ms_errbuf eb = { "" };
	char buf[32], msg[48];
	double sp = ms_speed_steps[step];
	snprintf(msg, sizeof(msg), "speed %s",
	         ms_fmt_speed(buf, sizeof(buf), sp));
	int rc = s->ctl->ops->set_speed(s->ctl->self, sp, &eb);
	if (rc == 0) {
		s->view->speed = sp; /* shown before the next snapshot */
		s->speed_step = step;
		s->go_active = false; /* the user's speed from now on */
	}
	report(s, rc, &eb, msg);
}

static void
act_faster(ms_tui_session *s)
{
	set_speed_step(s, faster_speed_step(s->view->speed));
}

static void
act_slower(ms_tui_session *s)
{
	size_t i;
	char buf[32];
	if (slower_speed_step(s->view->speed, &i))
		set_speed_step(s, i);
	else
		ms_session_say(s, false, "speed %s: the slowest step",
		               ms_fmt_speed(buf, sizeof(buf), s->view->speed));
}

static void
act_goto(ms_tui_session *s)
{
	ms__prompt_open(s, MS_PROMPT_GOTO, "");
}

static uint64_t go_merge_position(const ms_tui_view *v);
static void go_to(ms_tui_session *s, const ms_tui_target *t, bool back,
                  const char *msg);

/* The target of the go on its way (s->go_inflight) when it is of kind k,
 * else NULL. */
static const ms_tui_target *
go_on_its_way(const ms_tui_session *s, enum ms_tui_target_kind k)
{
	return s->go_inflight && s->go_tgt.kind == k ? &s->go_tgt : NULL;
}

/* Key k (`[` or `{`, counting back in targets of kind k) pressed while
 * the run is on its way to a stop it cannot count back from: kept for
 * that stop (back_keys_run), as are those after one kept. True when
 * kept (or refused, with more than it keeps). */
static bool
back_key_kept(ms_tui_session *s, char key, enum ms_tui_target_kind k)
{
	bool other = s->go_inflight && s->go_tgt.kind != k;
	if (!other && !s->stop_inflight && !s->nback)
		return false;
	return keep_key(s, key,
	                key == '[' ? "back one barrier" : "back one publication");
}

/* `[`: the barrier before this one (at a barrier), or the last one
 * passed (elsewhere); while a go to a merge is on its way, the barrier
 * before that merge; while the run is on its way elsewhere, the barrier
 * before where it stops (back_key_kept). */
static void
act_barrier_back(ms_tui_session *s)
{
	const ms_tui_view *v = s->view;
	if (back_key_kept(s, '[', MS_TARGET_MERGE))
		return;
	uint64_t at = go_merge_position(v);
	uint64_t want = v->state == MS_VIEW_BREAK && v->sel.present
	                        ? v->sel.seq - 1
	                        : at;
	const ms_tui_target *g = go_on_its_way(s, MS_TARGET_MERGE);
	if (g)
		want = g->seq - 1;
	if (want == 0) {
		ms_session_say(s, true,
		               "no dispatch barrier before this point");
		return;
	}
	ms_tui_target t = { .kind = MS_TARGET_MERGE, .seq = want };
	char msg[96];
	snprintf(msg, sizeof(msg),
	         "back one barrier: re-running to merge #%" PRIu64, want);
	go_to(s, &t, true, msg);
}

/* `{`: the point before the last publication; while a go to a
 * publication point is on its way, the one before that; while the run is
 * on its way elsewhere, the one before where it stops. */
static void
act_pub_back(ms_tui_session *s)
{
	const ms_tui_view *v = s->view;
	if (back_key_kept(s, '{', MS_TARGET_PUB))
		return;
	const ms_tui_target *g = go_on_its_way(s, MS_TARGET_PUB);
	uint64_t at = g ? g->pub : v->pub_done;
	if (at == 0) {
		ms_session_say(s, true, "no publication before this point");
		return;
	}
	ms_tui_target t = { .kind = MS_TARGET_PUB, .pub = at - 1 };
	char msg[96];
	snprintf(msg, sizeof(msg),
	         "back one publication: re-running to publication "
	         "%" PRIu64,
	         t.pub);
	go_to(s, &t, true, msg);
}

/* `r`: the day again from its start, same options and breakpoints. */
static void
act_restart(ms_tui_session *s)
{
	if (!s->ctl->ops->restart) {
		ms_session_say(s, true, "restart is not available here");
		return;
	}
	ms_errbuf eb = { "" };
	/* A go on its way runs at full speed: the restarted run carries the
	 * user's speed, the one the go puts back where it stops (it ran at
	 * max). */
	if (s->go_active &&
	    s->ctl->ops->set_speed(s->ctl->self, s->go_speed, &eb) == 0)
		s->view->speed = s->go_speed;
	s->go_active = s->go_inflight = s->stop_inflight = false;
	s->nback = 0;
	s->view->ui.event_sel = 0;
	int rc = s->ctl->ops->restart(s->ctl->self, NULL, NULL, 0, &eb);
	if (rc < 0) {
		report(s, rc, &eb, NULL);
		return;
	}
	/* The new database by name: the status line often has no room for
	 * it (none at 132 columns once the counts are on it). Then what
	 * ending the replaced run left undone, as an error. */
	ms_session_snapshot(s);
	ms_session_say(s, eb.msg[0] != '\0',
	               "restarted the day, recording to %s%s%s",
	               s->view->db_path[0] ? s->view->db_path : "no database",
	               eb.msg[0] ? "; " : "", eb.msg);
	s->msg_keep = true;
}

static void
act_search(ms_tui_session *s)
{
	ms__prompt_open(s, MS_PROMPT_SEARCH, "");
}

static void
act_search_next(ms_tui_session *s)
{
	ms__search_step(s, 1, false);
}

static void
act_search_prev(ms_tui_session *s)
{
	ms__search_step(s, -1, false);
}

/* `o`: the inventory's next order. */
static void
act_sort(ms_tui_session *s)
{
	ms_tui_ui *ui = &s->view->ui;
	ui->part_sort =
	        (enum ms_tui_part_sort)((ui->part_sort + 1) % MS_SORT_COUNT);
	ui->part_sel = 0;
	ms_tui_view_sort_parts(s->view);
	ms_session_say(s, false, "inventory: %s",
	               ms_tui_part_sort_name(ui->part_sort));
}

static void
zoom_to(ms_tui_session *s, int z)
{
	static const char *const names[] = { "the whole day", "6 hours",
		                             "1 hour" };
	s->view->ui.zoom = z < 0 ? 0 : z > 2 ? 2 : z;
	/* The timeline folds away on a short screen (80x24): there the
	 * key seemed to do nothing. */
	bool shown = true;
	if (s->screen_w > 0 && s->screen_h > 0) {
		ms_layout l;
		ms__layout_view(s->view, s->screen_w, s->screen_h, &l);
		shown = l.too_small || ms_rect_visible(l.r[MS_PANEL_TIMELINE]);
	}
	if (shown)
		ms_session_say(s, false, "timeline: %s%s",
		               names[s->view->ui.zoom],
		               s->view->ui.zoom ? " around now" : "");
	else
		ms_session_say(s, false,
		               "timeline: %s%s (not on this screen: the "
		               "timeline needs %d rows, it has %d)",
		               names[s->view->ui.zoom],
		               s->view->ui.zoom ? " around now" : "",
		               MS_TIMELINE_MIN_H, s->screen_h);
}

static void
act_zoom_in(ms_tui_session *s)
{
	zoom_to(s, s->view->ui.zoom + 1);
}

static void
act_zoom_out(ms_tui_session *s)
{
	zoom_to(s, s->view->ui.zoom - 1);
}

static void
act_breaks(ms_tui_session *s)
{
	s->view->ui.overlay = MS_OVERLAY_BREAKS;
	s->dirty = true;
}

/* w as one shell word at buf (room for 4 * strlen(w) + 3 bytes): as it
 * is when it is plain, else in single quotes. The bytes written. */
static size_t
shell_word(char *buf, const char *w)
{
	size_t len = strlen(w);
	if (len &&
	    strspn(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	              "0123456789._-/:=,+@%") == len) {
		memcpy(buf, w, len + 1);
		return len;
	}
	size_t o = 0;
	buf[o++] = '\'';
	for (; *w; w++) {
		if (*w == '\'') {
			memcpy(buf + o, "'\\''", 4);
			o += 4;
		} else {
			buf[o++] = *w;
		}
	}
	buf[o++] = '\'';
	buf[o] = '\0';
	return o;
}

/* "PROGRAM merge-once --frozen DIR --variant SPEC", each word quoted for
 * the shell, whole however long: allocated, NULL without memory. */
static char *
merge_once_cmd(const char *program, const char *dir, const char *variant)
{
	const char *w[] = { program, " merge-once --frozen ", dir,
		            " --variant ", variant };
	size_t n = 1;
	for (size_t i = 0; i < 5; i++)
		n += 4 * strlen(w[i]) + 3;
	char *cmd = malloc(n);
	if (!cmd)
		return NULL;
	size_t o = 0;
	for (size_t i = 0; i < 5; i++) {
		if (i % 2) {
			size_t len = strlen(w[i]);
			memcpy(cmd + o, w[i], len + 1);
			o += len;
		} else {
			o += shell_word(cmd + o, w[i]);
		}
	}
	return cmd;
}

/* cmd as the session's next line for the quit (frozen_lost counts one
 * that finds no memory). */
static void
keep_frozen(ms_tui_session *s, const char *cmd)
{
	size_t len = cmd ? strlen(cmd) : 0;
	char *all = cmd ? realloc(s->frozen_all, s->frozen_all_len + len + 2)
	                : NULL;
	if (!all) {
		s->frozen_lost++;
		return;
	}
	memcpy(all + s->frozen_all_len, cmd, len);
	s->frozen_all_len += len;
	all[s->frozen_all_len++] = '\n';
	all[s->frozen_all_len] = '\0';
	s->frozen_all = all;
}

/* What the events panel shows after a freeze into dir: its command, or,
 * when even the view's room is short, where the command will be. */
static void
show_frozen(ms_tui_session *s, const char *dir, const char *cmd)
{
	ms_tui_ui *ui = &s->view->ui;
	snprintf(ui->frozen_dir, sizeof(ui->frozen_dir), "%s", dir);
	if (cmd && strlen(cmd) < sizeof(ui->frozen_cmd))
		snprintf(ui->frozen_cmd, sizeof(ui->frozen_cmd), "%s", cmd);
	else
		snprintf(ui->frozen_cmd, sizeof(ui->frozen_cmd),
		         "(the merge-once command for %s is %s: it is printed "
		         "whole when the screen quits)",
		         dir, cmd ? "too long to show here" : "out of memory");
}

/* The freeze's result: its command on screen and kept for the quit. */
static void
freeze_finish(ms_tui_session *s, const char *dir)
{
	char *cmd = merge_once_cmd(s->program, dir, s->view->variant);
	show_frozen(s, dir, cmd);
	keep_frozen(s, cmd);
	free(cmd);
	ms_session_say(s, false, "frozen merge #%" PRIu64 " into %s",
	               s->freeze_seq, dir);
}

static void
say_freezing(ms_tui_session *s)
{
	ms_session_say(s, false,
	               "freezing merge #%" PRIu64 " ... (the run stays at "
	               "this barrier until the copy is done)",
	               s->freeze_seq);
}

void
ms__session_freeze_poll(ms_tui_session *s, bool wait)
{
	if (!s->freezing)
		return;
	ms_errbuf eb = { "" };
	char dir[MS_VIEW_PATH] = "";
	int rc = s->ctl->ops->freeze_done(s->ctl->self, wait, dir, sizeof(dir),
	                                  &eb);
	if (rc == MS_TUI_PENDING) {
		/* A key cleared the footer: it says so again. */
		if (!s->view->ui.message[0])
			say_freezing(s);
		return;
	}
	s->freezing = false;
	s->dirty = true;
	if (rc < 0)
		report(s, rc, &eb, NULL);
	else
		freeze_finish(s, dir);
}

/* `f`: the copy goes on off the screen's thread (0.3 s for day-2x's
 * finalize on tmpfs, 1.2 s for day-4x's on a disk: the screen stood
 * still for it); the footer says so until it is done, and keys go on
 * working (the controller keeps the run at the barrier meanwhile). */
static void
act_freeze(ms_tui_session *s)
{
	if (s->freezing) {
		ms_session_say(s, true,
		               "still freezing merge #%" PRIu64
		               " (one freeze at a time)",
		               s->freeze_seq);
		return;
	}
	if (s->view->state != MS_VIEW_BREAK) {
		ms_session_say(s, true,
		               "freeze needs a dispatch barrier: press n to "
		               "run to the next one (or ] to a breakpoint) "
		               "first");
		return;
	}
	ms_errbuf eb = { "" };
	int rc = s->ctl->ops->freeze(s->ctl->self, &eb);
	if (rc < 0) {
		report(s, rc, &eb, NULL);
		return;
	}
	s->freezing = true;
	s->freeze_seq = s->view->sel.seq;
	say_freezing(s);
	ms__session_freeze_poll(s, false);
}

/* Whether focus f has a panel on the screen: the plugins fold away on
 * small screens (below 100 columns, 42 rows), and Tab went to them
 * there, highlighting nothing. */
static bool
focus_shown(const ms_tui_session *s, enum ms_tui_focus f)
{
	if (f != MS_FOCUS_PLUGINS || s->screen_w <= 0 || s->screen_h <= 0)
		return true;
	ms_layout l;
	ms__layout_view(s->view, s->screen_w, s->screen_h, &l);
	return l.too_small || ms_rect_visible(l.r[MS_PANEL_PLUGINS]);
}

/* The next focus with a panel on screen, forward (dir 1) or back (-1). */
static enum ms_tui_focus
next_focus(const ms_tui_session *s, enum ms_tui_focus f, int dir)
{
	for (int i = 0; i < MS_FOCUS_COUNT; i++) {
		f = (enum ms_tui_focus)(((int)f + MS_FOCUS_COUNT + dir) %
		                        MS_FOCUS_COUNT);
		if (focus_shown(s, f))
			break;
	}
	return f;
}

void
ms_session_resize(ms_tui_session *s, int w, int h)
{
	s->screen_w = w;
	s->screen_h = h;
	if (!focus_shown(s, s->view->ui.focus)) {
		s->view->ui.focus = MS_FOCUS_EVENTS;
		s->dirty = true;
	}
}

static void
act_focus(ms_tui_session *s)
{
	ms_tui_ui *ui = &s->view->ui;
	enum ms_tui_focus next = next_focus(s, ui->focus, 1);
	/* At DONE the Events area has two faces: the gates, then (Tab)
	 * the events; Tab coming round to it shows the gates again. */
	if (s->view->state == MS_VIEW_DONE && s->view->ngates) {
		if (ui->focus == MS_FOCUS_EVENTS && ui->show_gates) {
			ui->show_gates = false;
			s->dirty = true;
			return;
		}
		if (next == MS_FOCUS_EVENTS)
			ui->show_gates = true;
	}
	ui->focus = next;
	s->dirty = true;
}

static void
act_focus_back(ms_tui_session *s)
{
	ms_tui_ui *ui = &s->view->ui;
	ui->focus = next_focus(s, ui->focus, -1);
	s->dirty = true;
}

static void
act_details(ms_tui_session *s)
{
	ms_tui_ui *ui = &s->view->ui;
	/* Over the gate table the selected merge is out of sight: its
	 * details came up over a table that has none. */
	if (ui->focus == MS_FOCUS_EVENTS && ui->show_gates &&
	    s->view->state == MS_VIEW_DONE && s->view->ngates) {
		ms_session_say(s, true,
		               "the gates have no details: Tab shows the "
		               "events, whose Enter does");
		return;
	}
	if (ui->focus == MS_FOCUS_EVENTS && ms_events_selected(s->view) < 0) {
		ms_session_say(s, true, "no event selected");
		return;
	}
	if (ui->focus == MS_FOCUS_INVENTORY && s->view->nparts == 0) {
		ms_session_say(s, true, "no part selected");
		return;
	}
	if (ui->focus == MS_FOCUS_PLUGINS && s->view->nplugins == 0) {
		ms_session_say(s, true, "no sampler link to show");
		return;
	}
	ui->overlay = MS_OVERLAY_DETAIL;
	ui->detail_scroll = 0;
	s->dirty = true;
}

static void
act_filter(ms_tui_session *s)
{
	ms__prompt_open(s, MS_PROMPT_FILTER, s->view->ui.filter);
}

static void
act_command(ms_tui_session *s)
{
	ms__prompt_open(s, MS_PROMPT_COMMAND, "");
}

static void
act_export(ms_tui_session *s)
{
	ms__export_begin(s);
}

static void
act_help(ms_tui_session *s)
{
	s->view->ui.help_scroll = 0;
	s->view->ui.overlay = MS_OVERLAY_HELP;
	s->view->ui.help_visible = true;
	s->dirty = true;
}

static void
act_quit(ms_tui_session *s)
{
	s->quit = true;
}

static void
act_redraw(ms_tui_session *s)
{
	s->redraw = true;
	s->dirty = true;
}

const ms_key_binding ms_key_table[] = {
	{ ' ', MS_KEY_NONE, "space", NULL, "run / pause", act_run_pause },
	{ '.', MS_KEY_F(5), ". F5", "Step",
	  "one step: to the next publication or barrier", act_step },
	{ 'n', MS_KEY_NONE, "n", NULL,
	  "run to the next merge (its dispatch barrier)", act_next_barrier },
	{ ']', MS_KEY_F(6), "] F6", "ToBrk", "run to the next breakpoint",
	  act_run_to_break },
	{ '+', MS_KEY_F(8), "+ F8", "Fast", "faster (up to max)", act_faster },
	{ '-', MS_KEY_F(7), "- F7", "Slow", "slower (down to real time)",
	  act_slower },
	{ 'g', MS_KEY_NONE, "g", NULL,
	  "go to a time HH:MM or merge #N (behind: goes back to it)",
	  act_goto },
	{ '[', MS_KEY_NONE, "[", NULL, "back one dispatch barrier",
	  act_barrier_back },
	{ '{', MS_KEY_NONE, "{", NULL, "back one publication", act_pub_back },
	{ 'r', MS_KEY_NONE, "r", NULL,
	  "restart the day (same options and breakpoints)", act_restart },
	{ 's', MS_KEY_NONE, "s", NULL,
	  "search the focused list (events, parts, links)", act_search },
	{ ';', MS_KEY_NONE, ";", NULL, "next match of the search",
	  act_search_next },
	{ ',', MS_KEY_NONE, ",", NULL, "previous match of the search",
	  act_search_prev },
	{ 'o', MS_KEY_NONE, "o", NULL,
	  "inventory order: picker, largest, newest, deepest, id", act_sort },
	{ 'z', MS_KEY_NONE, "z", NULL,
	  "timeline zoom in: 24 h, 6 h, 1 h around now", act_zoom_in },
	{ 'Z', MS_KEY_NONE, "Z", NULL, "timeline zoom out", act_zoom_out },
	{ 'b', MS_KEY_F(2), "b F2", "Break",
	  "breakpoints: add, enable, delete, hits", act_breaks },
	{ 'f', MS_KEY_F(9), "f F9", "Freeze",
	  "freeze the shard at this dispatch barrier (n gets to one)",
	  act_freeze },
	{ MS_KEY_TAB, MS_KEY_BTAB, "Tab", NULL,
	  "focus the next panel (shift-Tab: the one before)", act_focus },
	{ MS_KEY_ENTER, MS_KEY_NONE, "Enter", NULL,
	  "details of the selected merge, part or link", act_details },
	{ '/', MS_KEY_F(3), "/ F3", "Filter", "filter the event log",
	  act_filter },
	{ ':', MS_KEY_NONE, ":", NULL, "command line", act_command },
	{ 'e', MS_KEY_F(4), "e F4", "Export",
	  "export what the filter shows (jsonl, csv, chrome)", act_export },
	{ '?', MS_KEY_F(1), "? F1", "Help", "this help", act_help },
	{ MS_KEY_CTRL('l'), MS_KEY_NONE, "^L", NULL, "redraw the screen",
	  act_redraw },
	{ 'q', MS_KEY_F(10), "q F10", "Quit", "quit", act_quit },
};
const size_t ms_key_table_len = sizeof(ms_key_table) / sizeof(ms_key_table[0]);

const ms_key_binding *
ms_keys_lookup(int k)
{
	if (k == MS_KEY_BTAB)
		return NULL; /* handled as "focus back" below */
	for (size_t i = 0; i < ms_key_table_len; i++)
		if (ms_key_table[i].key == k || ms_key_table[i].alt == k)
			return &ms_key_table[i];
	return NULL;
}

/* ---- Navigation --------------------------------------------------------- */

static void
move_event(ms_tui_session *s, long delta, bool home, bool end)
{
	size_t idx[MS_VIEW_MAX_EVENTS];
	size_t n = ms_events_visible(s->view, idx);
	ms_tui_ui *ui = &s->view->ui;
	if (n == 0)
		return;
	if (end) {
		ui->event_sel = 0;
		return;
	}
	long cur = ms_events_selected(s->view);
	long pos = (long)n - 1;
	for (size_t i = 0; i < n; i++)
		if ((long)idx[i] == cur)
			pos = (long)i;
	pos = home ? 0 : pos + delta;
	if (pos < 0)
		pos = 0;
	if (pos >= (long)n - 1 && !home) {
		ui->event_sel = 0; /* back to following the newest */
		return;
	}
	ui->event_sel = s->view->events[idx[pos]].seq;
}

static void
move_index(size_t *sel, size_t n, long delta, bool home, bool end)
{
	if (n == 0) {
		*sel = 0;
		return;
	}
	long pos = (long)*sel + delta;
	if (home)
		pos = 0;
	if (end)
		pos = (long)n - 1;
	if (pos < 0)
		pos = 0;
	if (pos >= (long)n)
		pos = (long)n - 1;
	*sel = (size_t)pos;
}

/* At DONE the gates and the reconciliation scroll in the Events area,
 * down to their last screenful. */
static void
scroll_gates(ms_tui_session *s, long delta, bool home, bool end)
{
	ms_tui_ui *ui = &s->view->ui;
	ms_layout l;
	ms__layout_view(s->view, s->screen_w, s->screen_h, &l);
	/* Lines as wrapped at the area's width. */
	size_t last = ms__gates_lines(s->view, l.r[MS_PANEL_EVENTS].w - 2) - 1;
	int eh = l.r[MS_PANEL_EVENTS].h - 2;
	if (!l.too_small && eh > 0 && (size_t)eh <= last)
		last = last + 1 - (size_t)eh;
	long top = home ? 0 : end ? (long)last : (long)ui->gates_scroll + delta;
	ui->gates_scroll = top < 0              ? 0
	                   : (size_t)top > last ? last
	                                        : (size_t)top;
}

/* While the screen's size is not known (no frame yet): what PgUp and
 * PgDn move by. */
#define PAGE_UNKNOWN 10

/* The rows the focused list shows on the session's screen: what PgUp and
 * PgDn move by (a screenful). */
static long
list_page(const ms_tui_session *s)
{
	if (s->screen_w <= 0 || s->screen_h <= 0)
		return PAGE_UNKNOWN;
	const ms_tui_view *v = s->view;
	ms_layout l;
	ms__layout_view(v, s->screen_w, s->screen_h, &l);
	enum ms_panel_id slot = v->ui.focus == MS_FOCUS_EVENTS ? MS_PANEL_EVENTS
	                        : v->ui.focus == MS_FOCUS_INVENTORY
	                                ? MS_PANEL_INVENTORY
	                                : MS_PANEL_PLUGINS;
	ms_rect r = l.r[slot];
	int w = r.w - 2, h = r.h - 2, rows = h - 1; /* below the header */
	if (slot == MS_PANEL_EVENTS)
		rows = v->state == MS_VIEW_DONE && v->ui.show_gates && v->ngates
		               ? h
		               : ms__events_rows(v, w, h);
	return l.too_small || rows < 1 ? 1 : rows;
}

static bool
navigate(ms_tui_session *s, int key)
{
	long d;
	bool home = false, end = false;
	switch (key) {
	case MS_KEY_UP:
	case 'k':
		d = -1;
		break;
	case MS_KEY_DOWN:
	case 'j':
		d = 1;
		break;
	case MS_KEY_PGUP:
		d = -list_page(s);
		break;
	case MS_KEY_PGDN:
		d = list_page(s);
		break;
	case MS_KEY_HOME:
		d = 0;
		home = true;
		break;
	case MS_KEY_END:
		d = 0;
		end = true;
		break;
	default:
		return false;
	}
	ms_tui_ui *ui = &s->view->ui;
	switch (ui->focus) {
	case MS_FOCUS_EVENTS:
		if (s->view->state == MS_VIEW_DONE && ui->show_gates &&
		    s->view->ngates)
			scroll_gates(s, d, home, end);
		else
			move_event(s, d, home, end);
		break;
	case MS_FOCUS_INVENTORY:
		move_index(&ui->part_sel, s->view->nparts, d, home, end);
		break;
	default:
		move_index(&ui->plugin_sel, s->view->nplugins, d, home, end);
		break;
	}
	s->dirty = true;
	return true;
}

/* ---- Prompts ------------------------------------------------------------ */

/* The last merge the replay has dispatched: the one waiting at a barrier,
 * else the newest recorded. A `g #N` below it would need going back. */
static uint64_t
go_merge_position(const ms_tui_view *v)
{
	uint64_t at = v->merges_done;
	if (v->sel.present && v->sel.seq > at)
		at = v->sel.seq;
	for (size_t i = 0; i < v->nevents; i++)
		if (v->events[i].seq > at)
			at = v->events[i].seq;
	return at;
}

/* Target t set on the way by the controller: run_to, or back through its
 * restart (going back to a checkpoint of the run when it can, else
 * running the day again, recording to a new database: db then names it).
 * A go back while a go is on its way is first set on that one, which
 * goes on to it if it has not passed it yet: quick `[ [ [` going back
 * with no checkpoint re-ran the day three times, each into a new
 * database. A go forward the run passed as it was set (it went on past
 * it) goes back to it. *passed says so; *retarget that it was set on
 * the go on its way. */
static int
go_set(ms_tui_session *s, const ms_tui_target *t, bool back, char *db,
       size_t dbn, bool *retarget, bool *passed, ms_errbuf *eb)
{
	const ms_tui_ctl *c = s->ctl;
	int rc = MS_TUI_PASSED;
	*retarget = *passed = false;
	if (!back || s->go_inflight) {
		rc = c->ops->run_to(c->self, t, eb);
		*retarget = s->go_inflight && rc == 0;
		*passed = !back && rc == MS_TUI_PASSED;
	}
	if (rc == 0 || (!back && rc != MS_TUI_PASSED))
		return rc;
	eb->msg[0] = '\0';
	if (!c->ops->restart)
		return ms_fail(eb, MS_ERR_STATE,
		               "go to: the run passed it as it was asked for, "
		               "and this controller only runs forward");
	return c->ops->restart(c->self, t, db, dbn, eb);
}

/* Full speed to target t, the user's speed back when it stops
 * (ms__session_observe): forward, or back (behind the replay, or after
 * the end), as go_set says. msg says what it does (the status line often
 * has no room for the new database it names). */
static void
go_to(ms_tui_session *s, const ms_tui_target *t, bool back, const char *msg)
{
	ms_errbuf eb = { "" };
	char db[sizeof(s->go_db)] = "", tb[48], pm[160];
	double before = s->go_active ? s->go_speed : s->view->speed;
	bool retarget = false, passed = false;
	if (back && !s->ctl->ops->restart) {
		ms_session_say(s, true,
		               "go to: that is behind the replay, and this "
		               "controller only runs forward");
		return;
	}
	int rc = s->ctl->ops->set_speed(s->ctl->self, 0, &eb);
	if (rc == 0) {
		s->view->speed = 0;
		rc = go_set(s, t, back, db, sizeof(db), &retarget, &passed,
		            &eb);
		if (rc == 0) {
			s->go_active = s->go_inflight = true;
			s->stop_inflight = false; /* its stop is the go's */
			s->go_speed = before;
			s->go_tgt = *t;
			/* Set on the go on its way: still its database. */
			if (!retarget)
				snprintf(s->go_db, sizeof(s->go_db), "%s", db);
		} else {
			ms_errbuf eb2 = { "" };
			if (s->ctl->ops->set_speed(s->ctl->self, before,
			                           &eb2) == 0)
				s->view->speed = before;
		}
	}
	if (passed) {
		snprintf(pm, sizeof(pm),
		         "the run passed %s as it was asked for: re-running to "
		         "it at full speed",
		         target_name(s, t, tb, sizeof(tb)));
		msg = pm;
	}
	if (rc == 0 && db[0])
		ms_session_say(s, eb.msg[0] != '\0',
		               "%s from the day's start (no checkpoint before "
		               "it), recording to %s%s%s",
		               msg, db, eb.msg[0] ? "; " : "", eb.msg);
	else
		report(s, rc, &eb, msg);
}

/* "#0", "0", "#000": a merge number, but of no merge. */
static bool
is_merge_zero(const char *arg)
{
	while (*arg == ' ')
		arg++;
	if (*arg == '#')
		arg++;
	if (*arg != '0')
		return false;
	while (*arg == '0')
		arg++;
	while (*arg == ' ')
		arg++;
	return *arg == '\0';
}

static void
do_goto(ms_tui_session *s, const char *arg)
{
	ms_tui_target t;
	if (is_merge_zero(arg)) {
		ms_session_say(s, true,
		               "go to: there is no merge #0: merges are "
		               "numbered from #1");
		return;
	}
	if (!ms_parse_target(arg, s->view->day_start, &t)) {
		ms_session_say(s, true,
		               "go to: \"%s\" is neither a time HH:MM[:SS] "
		               "(hours to 48, minutes and seconds to 59) nor a "
		               "merge number #N",
		               arg);
		return;
	}
	ms_tui_view *v = s->view;
	char msg[128], tb[32], nb[32], where[32];
	bool back = v->state == MS_VIEW_DONE;
	if (t.kind == MS_TARGET_MERGE) {
		uint64_t at = go_merge_position(v);
		if (t.seq == at && v->state == MS_VIEW_BREAK) {
			ms_session_say(s, true,
			               "go to: already at merge #%" PRIu64, at);
			return;
		}
		uint64_t last = day_last_merge(s);
		if (last && t.seq > last) {
			ms_session_say(s, true,
			               "go to: merge #%" PRIu64 " is past the "
			               "day's last merge, #%" PRIu64
			               " (the finalize)",
			               t.seq, last);
			return;
		}
		back = back || t.seq <= at;
		snprintf(where, sizeof(where), "#%" PRIu64, t.seq);
		snprintf(msg, sizeof(msg),
		         "%s merge #%" PRIu64 " at full speed",
		         back ? "re-running to" : "running to", t.seq);
	} else {
		ms_fmt_clock(tb, sizeof(tb), t.t, v->day_start);
		snprintf(where, sizeof(where), "%s", tb);
		/* The last point the run stops at is the finalize, a grace
		 * (now - frontier) after the day's end. */
		int64_t last = v->day_end + (v->now - v->frontier);
		/* At the end too (going back from there re-ran the stretch
		 * since the last checkpoint, to end where it was, and said
		 * nothing). */
		if (v->day_end > v->day_start && t.t > last) {
			ms_session_say(
			        s, true,
			        "go to: %s is after the run's last point "
			        "(the finalize at %s)",
			        tb,
			        ms_fmt_clock(nb, sizeof(nb), last,
			                     v->day_start));
			return;
		}
		if (v->state == MS_VIEW_DONE && t.t >= last) {
			ms_session_say(s, true,
			               "go to: the run is over at %s, where it "
			               "is; an earlier time goes back",
			               tb);
			return;
		}
		back = back || t.t <= v->now;
		snprintf(msg, sizeof(msg), "%s %s at full speed",
		         back ? "re-running to" : "running to", tb);
	}
	s->nback = 0; /* a g replaces the `[` and `{` kept for a stop */
	go_to(s, &t, back, msg);
	if (s->go_active && !v->ui.message_is_error)
		snprintf(v->ui.go_target, sizeof(v->ui.go_target), "%s", where);
}

/* What to say of a breakpoint the replay has gone past, "" for one still
 * ahead: merge=N of a merge dispatched already stops only after going
 * back before it, and time=T of a time passed stops at the next barrier
 * (both said nothing: "restored 1 breakpoint" of a merge=3 restored at
 * merge #5 never stopped). */
static void
behind_note(const ms_tui_view *v, const char *spec, char *buf, size_t n)
{
	ms_tui_target t;
	bool done = v->state == MS_VIEW_DONE, behind = false;
	buf[0] = '\0';
	if (strncmp(spec, "merge=", 6) == 0 &&
	    ms_parse_target(spec + 6, v->day_start, &t) &&
	    t.kind == MS_TARGET_MERGE) {
		uint64_t at = go_merge_position(v);
		/* Held at its barrier: where it would stop. */
		bool here = v->sel.present && v->sel.seq == t.seq;
		behind = done || (!here && t.seq <= at);
	} else if (strncmp(spec, "time=", 5) == 0 &&
	           ms_parse_target(spec + 5, v->day_start, &t) &&
	           t.kind == MS_TARGET_TIME && t.t <= v->now) {
		if (!done) {
			snprintf(buf, n,
			         "%s is behind the replay: it stops at the "
			         "next barrier",
			         spec);
			return;
		}
		behind = true;
	}
	if (behind)
		snprintf(buf, n,
		         "%s is behind the replay: it stops only after going "
		         "back before it",
		         spec);
}

static void
do_break_add(ms_tui_session *s, const char *spec)
{
	ms_errbuf eb = { "" };
	int id = 0;
	char note[160];
	int rc = s->ctl->ops->break_add(s->ctl->self, spec, &id, &eb);
	behind_note(s->view, spec, note, sizeof(note));
	if (rc < 0)
		report(s, rc, &eb, NULL);
	else if (note[0])
		ms_session_say(s, false, "breakpoint %d: %s", id, note);
	else
		ms_session_say(s, false, "breakpoint %d: %s", id, spec);
}

/* Here, beside the speed steps, for --speed (cli_setup.c) and :speed. */
bool
ms__parse_speed(const char *s, double *x)
{
	if (s && strcmp(s, "max") == 0) {
		*x = 0;
		return true;
	}
	/* Digits only, read the same way in every locale ("1,5" is
	 * refused everywhere), as strtod would take "1e3", "0x10", "inf"
	 * and a leading sign or space. */
	const char *p = s;
	double v = 0, scale = 1;
	if (!p || *p < '0' || *p > '9')
		return false;
	for (; *p >= '0' && *p <= '9'; p++)
		if ((v = v * 10 + (*p - '0')) > MS__SPEED_MAX)
			return false;
	if (*p == '.') {
		p++;
		if (*p < '0' || *p > '9')
			return false;
		for (; *p >= '0' && *p <= '9'; p++)
			v += (*p - '0') * (scale /= 10);
	}
	if (*p == 'x' || *p == 'X')
		p++;
	if (*p || !(v > 0) || v > MS__SPEED_MAX)
		return false;
	*x = v;
	return true;
}

static void
do_speed(ms_tui_session *s, const char *arg)
{
	if (strcmp(arg, "max") == 0) {
		set_speed_step(s, ms_speed_steps_len - 1);
		return;
	}
	/* Read as --speed is (ms__parse_speed): "1e3", "0x10", " 60" and
	 * "inf" are refused here too. */
	double v = 0;
	if (!ms__parse_speed(arg, &v)) {
		ms_session_say(s, true,
		               "speed \"%s\": expected a multiple of real time "
		               "like 60 or 60x (more than 0, at most %.0f), or "
		               "max",
		               arg, MS__SPEED_MAX);
		return;
	}
	/* Said as `+` and `-` say it: "speed set" did not say which, and
	 * at 80 columns the status line has no room for the speed. */
	ms_errbuf eb = { "" };
	char buf[32], msg[48];
	snprintf(msg, sizeof(msg), "speed %s",
	         ms_fmt_speed(buf, sizeof(buf), v));
	int rc = s->ctl->ops->set_speed(s->ctl->self, v, &eb);
	if (rc == 0) {
		s->view->speed = v;
		s->go_active = false;
	}
	report(s, rc, &eb, msg);
}

struct command {
	const char *name;
	bool takes_arg;
	void (*simple)(ms_tui_session *s);
	void (*with_arg)(ms_tui_session *s, const char *arg);
};

static void
do_filter(ms_tui_session *s, const char *arg)
{
	ms_tui_filter f;
	char err[MS_VIEW_TEXT];
	if (!ms_tui_filter_parse(arg, &f, err, sizeof(err))) {
		ms_session_say(s, true, "%s", err);
		return;
	}
	snprintf(s->view->ui.filter, sizeof(s->view->ui.filter), "%s", arg);
	s->view->ui.filt = f;
	s->view->ui.event_sel = 0;
}

static const struct command commands[] = {
	{ "run", false, act_run_pause, NULL },
	{ "pause", false, act_run_pause, NULL },
	{ "step", false, act_step, NULL },
	{ "next", false, act_next_barrier, NULL },
	{ "continue", false, act_run_to_break, NULL },
	{ "break", true, NULL, do_break_add },
	{ "go", true, NULL, do_goto },
	{ "speed", true, NULL, do_speed },
	{ "export", true, NULL, ms__export_command },
	{ "filter", true, NULL, do_filter },
	{ "freeze", false, act_freeze, NULL },
	{ "help", false, act_help, NULL },
	{ "quit", false, act_quit, NULL },
};

static void
do_command(ms_tui_session *s, const char *line)
{
	while (isspace((unsigned char)*line))
		line++;
	size_t n = strcspn(line, " \t");
	const char *arg = line + n;
	while (isspace((unsigned char)*arg))
		arg++;
	if (n == 0)
		return;
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		const struct command *c = &commands[i];
		if (strlen(c->name) != n || strncmp(c->name, line, n) != 0)
			continue;
		/* run/pause both map to the toggle; only act if needed,
		 * and say so (nothing happened, and nothing said why). */
		bool running = s->view->state == MS_VIEW_RUNNING;
		if ((strcmp(c->name, "run") == 0 && running) ||
		    (strcmp(c->name, "pause") == 0 && !running)) {
			ms_session_say(s, false, "already %s",
			               running ? "running" : "stopped");
			return;
		}
		if (c->takes_arg) {
			if (!*arg && strcmp(c->name, "filter") != 0) {
				ms_session_say(s, true, ":%s needs an argument",
				               c->name);
				return;
			}
			c->with_arg(s, arg);
		} else if (*arg) {
			/* `:step 3` would do one step: say so, do nothing */
			ms_session_say(s, true,
			               ":%s takes no argument (\"%s\" given)",
			               c->name, arg);
		} else {
			c->simple(s);
		}
		return;
	}
	ms_session_say(s, true,
	               "unknown command \"%.*s\" (run, pause, step, next, "
	               "continue, break, go, speed, export, filter, freeze, "
	               "help, quit)",
	               (int)n, line);
}

static void
history_add(ms_tui_session *s, enum ms_tui_prompt p, const char *line)
{
	if ((unsigned)p >= MS_PROMPT_COUNT || !line[0])
		return;
	size_t n = s->hist_n[p];
	if (n && strcmp(s->hist[p][n - 1], line) == 0)
		return;
	if (n == MS_HIST_MAX) {
		memmove(s->hist[p][0], s->hist[p][1],
		        (MS_HIST_MAX - 1) * sizeof(s->hist[p][0]));
		n--;
	}
	snprintf(s->hist[p][n], sizeof(s->hist[p][n]), "%s", line);
	s->hist_n[p] = n + 1;
}

/* Up (back = true) or down through what this prompt was given before;
 * down past the newest gives an empty line. */
static void
history_move(ms_tui_session *s, bool back)
{
	ms_tui_ui *ui = &s->view->ui;
	enum ms_tui_prompt p = ui->prompt;
	size_t n = s->hist_n[p];
	if (back && s->hist_pos < n)
		s->hist_pos++;
	else if (!back && s->hist_pos > 0)
		s->hist_pos--;
	else
		return;
	snprintf(ui->cmdline, sizeof(ui->cmdline), "%s",
	         s->hist_pos ? s->hist[p][n - s->hist_pos] : "");
	ui->cursor = strlen(ui->cmdline);
	ui->prefilled = false;
}

static void do_filter(ms_tui_session *s, const char *arg);

void
ms__session_offer(ms_tui_session *s, const char *const *breaks, size_t nbreaks,
                  const char *filter)
{
	if (!nbreaks && !(filter && *filter))
		return;
	s->offer_breaks = breaks;
	s->offer_nbreaks = nbreaks;
	s->offer_filter = filter;
	char *o = s->view->ui.offer;
	size_t n = sizeof(s->view->ui.offer), used = 0;
	o[0] = '\0';
	for (size_t i = 0; i < nbreaks && used < n; i++)
		used += (size_t)snprintf(o + used, n - used, "%s%s",
		                         i ? ", " : "break ", breaks[i]);
	if (filter && *filter && used < n)
		snprintf(o + used, n - used, "%sfilter /%s", used ? "; " : "",
		         filter);
	ms__prompt_open(s, MS_PROMPT_RESTORE, "");
}

static void
restore_offer(ms_tui_session *s, bool yes)
{
	size_t added = 0;
	if (yes) {
		/* One that is refused (past the most a session holds) is
		 * named, not left out without a word. */
		ms_errbuf refused = { "" };
		const char *first_refused = NULL;
		char note[160] = "";
		for (size_t i = 0; i < s->offer_nbreaks; i++) {
			ms_errbuf eb = { "" };
			int id;
			if (s->ctl->ops->break_add(s->ctl->self,
			                           s->offer_breaks[i], &id,
			                           &eb) == 0) {
				added++;
				/* The run went on while the offer was
				 * open: the first one it went past. */
				if (!note[0])
					behind_note(s->view, s->offer_breaks[i],
					            note, sizeof(note));
			} else if (!first_refused) {
				first_refused = s->offer_breaks[i];
				refused = eb;
			}
		}
		s->view->ui.message_is_error = false;
		if (s->offer_filter && *s->offer_filter)
			do_filter(s, s->offer_filter); /* says what is wrong */
		if (first_refused)
			ms_session_say(
			        s, true,
			        "restored %zu of %zu breakpoints; %zu not "
			        "set (first \"%s\": %s)",
			        added, s->offer_nbreaks,
			        s->offer_nbreaks - added, first_refused,
			        refused.msg);
		else if (!s->view->ui.message_is_error)
			ms_session_say(
			        s, false, "restored %zu breakpoint%s%s%s%s",
			        added, added == 1 ? "" : "s",
			        s->view->ui.filter[0] ? " and the filter" : "",
			        note[0] ? "; " : "", note);
	}
	s->offer_breaks = NULL;
	s->offer_nbreaks = 0;
	s->offer_filter = NULL;
}

void
ms__offer_decline(ms_tui_session *s)
{
	ms_tui_ui *ui = &s->view->ui;
	if (ui->prompt != MS_PROMPT_RESTORE)
		return;
	ui->prompt = MS_PROMPT_NONE;
	ui->cmdline[0] = '\0';
	ui->cursor = 0;
	restore_offer(s, false);
	s->dirty = true;
}

static void
submit_prompt(ms_tui_session *s)
{
	ms_tui_ui *ui = &s->view->ui;
	char line[MS_VIEW_TEXT];
	snprintf(line, sizeof(line), "%s", ui->cmdline);
	enum ms_tui_prompt p = ui->prompt;
	ui->prompt = MS_PROMPT_NONE;
	ui->cmdline[0] = '\0';
	ui->cursor = 0;
	if (p != MS_PROMPT_CONFIRM && p != MS_PROMPT_RESTORE)
		history_add(s, p, line);
	switch (p) {
	case MS_PROMPT_FILTER:
		do_filter(s, line);
		break;
	case MS_PROMPT_COMMAND:
		do_command(s, line);
		break;
	case MS_PROMPT_GOTO:
		do_goto(s, line);
		break;
	case MS_PROMPT_EXPORT:
	case MS_PROMPT_EXPORT_PATH:
	case MS_PROMPT_CONFIRM:
		ms__export_submit(s, p, line);
		break;
	case MS_PROMPT_BREAK:
		do_break_add(s, line);
		break;
	case MS_PROMPT_SEARCH:
		if (line[0])
			ms__search_submit(s, line);
		break;
	case MS_PROMPT_RESTORE:
		restore_offer(s, strcmp(line, "y") == 0);
		break;
	default:
		break;
	}
	s->dirty = true;
}

/* The keys that answer the offer to restore the last session's
 * breakpoints and filter. */
static bool
offer_answer(int key)
{
	return key == 'y' || key == 'Y' || key == 'n' || key == 'N' ||
	       key == MS_KEY_ENTER || key == MS_KEY_ESC;
}

static void
prompt_key(ms_tui_session *s, int key)
{
	ms_tui_ui *ui = &s->view->ui;
	size_t len = strlen(ui->cmdline);
	if (ui->cursor > len)
		ui->cursor = len;
	if (ui->prompt == MS_PROMPT_RESTORE && !offer_answer(key)) {
		/* Any other key declines the offer and does what it always
		 * does: the offer, open from the start, must not eat the
		 * first command (an `f` at the first breakpoint). */
		ms__offer_decline(s);
		ms_session_key(s, key);
		return;
	}
	if (ui->prompt == MS_PROMPT_CONFIRM ||
	    ui->prompt == MS_PROMPT_RESTORE) {
		/* One key answers: y writes over the file, anything else
		 * keeps it. */
		snprintf(ui->cmdline, sizeof(ui->cmdline), "%s",
		         key == 'y' || key == 'Y' ? "y" : "n");
		submit_prompt(s);
		s->dirty = true;
		return;
	}
	/* An offered default is replaced by the first character typed;
	 * any other key keeps it, now as ordinary text. */
	bool replace = ui->prefilled;
	ui->prefilled = false;
	ui->not_ascii = key >= 0x80 && key < MS_KEY_BASE;
	ui->ncomplete = 0; /* the candidates last until the next key */
	switch (key) {
	case MS_KEY_ESC:
	case MS_KEY_F(10): /* q's F-key: q is text here, F10 leaves */
		ui->prompt = MS_PROMPT_NONE;
		ui->cmdline[0] = '\0';
		ui->cursor = 0;
		break;
	case MS_KEY_UP:
		history_move(s, true);
		break;
	case MS_KEY_DOWN:
		history_move(s, false);
		break;
	case MS_KEY_TAB:
		if (ui->prompt == MS_PROMPT_EXPORT_PATH)
			ui->ncomplete = ms__path_complete(
			        ui->cmdline, sizeof(ui->cmdline), &ui->cursor,
			        ui->complete, sizeof(ui->complete));
		if (ui->ncomplete < 2)
			ui->ncomplete = 0;
		break;
	case MS_KEY_ENTER:
		submit_prompt(s);
		break;
	case MS_KEY_BACKSPACE:
		if (ui->cursor > 0) {
			memmove(ui->cmdline + ui->cursor - 1,
			        ui->cmdline + ui->cursor, len - ui->cursor + 1);
			ui->cursor--;
		}
		break;
	case MS_KEY_DELETE:
		if (ui->cursor < len)
			memmove(ui->cmdline + ui->cursor,
			        ui->cmdline + ui->cursor + 1, len - ui->cursor);
		break;
	case MS_KEY_LEFT:
		if (ui->cursor > 0)
			ui->cursor--;
		break;
	case MS_KEY_RIGHT:
		if (ui->cursor < len)
			ui->cursor++;
		break;
	case MS_KEY_HOME:
	case MS_KEY_CTRL('a'):
		ui->cursor = 0;
		break;
	case MS_KEY_END:
	case MS_KEY_CTRL('e'):
		ui->cursor = len;
		break;
	case MS_KEY_CTRL('u'):
		ui->cmdline[0] = '\0';
		ui->cursor = 0;
		break;
	default:
		/* Printable ASCII only: the line ends up in file names and
		 * specs. */
		if (replace && key >= 0x20 && key < 0x7f) {
			ui->cmdline[0] = '\0';
			ui->cursor = len = 0;
		}
		if (key >= 0x20 && key < 0x7f &&
		    len + 1 < sizeof(ui->cmdline)) {
			memmove(ui->cmdline + ui->cursor + 1,
			        ui->cmdline + ui->cursor, len - ui->cursor + 1);
			ui->cmdline[ui->cursor++] = (char)key;
		}
		break;
	}
	s->dirty = true;
}

/* ---- Overlays ----------------------------------------------------------- */

/* The moves of the breakpoint list: those of every list (the help says
 * so; Home, End and the pages did nothing here, and the space after End
 * toggled the first breakpoint). */
static ms_rect overlay_inner(const ms_tui_session *s);

/* page: the rows the list shows (panel_breakpoints.c: the box's inner
 * height less its six other lines). */
static void
breaks_move(ms_tui_ui *ui, size_t n, int key, long page)
{
	switch (key) {
	case MS_KEY_UP:
	case 'k':
		move_index(&ui->break_sel, n, -1, false, false);
		break;
	case MS_KEY_DOWN:
	case 'j':
		move_index(&ui->break_sel, n, 1, false, false);
		break;
	case MS_KEY_PGUP:
		move_index(&ui->break_sel, n, -page, false, false);
		break;
	case MS_KEY_PGDN:
		move_index(&ui->break_sel, n, page, false, false);
		break;
	case MS_KEY_HOME:
		move_index(&ui->break_sel, n, 0, true, false);
		break;
	case MS_KEY_END:
		move_index(&ui->break_sel, n, 0, false, true);
		break;
	default:
		break;
	}
}

static void
breaks_key(ms_tui_session *s, int key)
{
	ms_tui_ui *ui = &s->view->ui;
	ms_errbuf eb = { "" };
	size_t n = s->view->nbreaks;
	const ms_tui_break *b =
	        ui->break_sel < n ? &s->view->breaks[ui->break_sel] : NULL;
	switch (key) {
	case MS_KEY_ESC:
	case 'q':
	case MS_KEY_F(10): /* q's F-key, as in the help and the details */
	case 'b':
	case MS_KEY_F(2):
		ui->overlay = MS_OVERLAY_NONE;
		break;
	case 'a':
		ms__prompt_open(s, MS_PROMPT_BREAK, "");
		break;
	case ' ':
	case MS_KEY_ENTER:
		if (b) {
			bool on = !b->enabled;
			int rc = s->ctl->ops->break_enable(s->ctl->self, b->id,
			                                   on, &eb);
			if (rc == 0)
				s->view->breaks[ui->break_sel].enabled = on;
			report(s, rc, &eb,
			       on ? "breakpoint enabled"
			          : "breakpoint disabled");
		}
		break;
	case 'd':
	case MS_KEY_DELETE:
		if (b) {
			int id = b->id;
			int rc = s->ctl->ops->break_delete(s->ctl->self, id,
			                                   &eb);
			if (rc == 0) {
				memmove(&s->view->breaks[ui->break_sel],
				        &s->view->breaks[ui->break_sel + 1],
				        (n - ui->break_sel - 1) *
				                sizeof(ms_tui_break));
				s->view->nbreaks--;
				if (ui->break_sel > 0 &&
				    ui->break_sel >= s->view->nbreaks)
					ui->break_sel--;
			}
			report(s, rc, &eb, "breakpoint deleted");
		}
		break;
	default:
		breaks_move(ui, n, key,
		            overlay_inner(s).h > 7   ? overlay_inner(s).h - 6
		            : overlay_inner(s).h > 0 ? 1
		                                     : PAGE_UNKNOWN);
		break;
	}
	s->dirty = true;
}

/* The inner rectangle of the help or details box on the session's
 * screen; 0 x 0 while its size is not known or too small. */
static ms_rect
overlay_inner(const ms_tui_session *s)
{
	ms_rect none = { 0, 0, 0, 0 };
	if (s->screen_w <= 0 || s->screen_h <= 0)
		return none;
	ms_layout l;
	ms__layout_view(s->view, s->screen_w, s->screen_h, &l);
	ms_rect r = l.r[MS_PANEL_OVERLAY];
	if (l.too_small || r.w < 3 || r.h < 3)
		return none;
	return (ms_rect){ r.x + 1, r.y + 1, r.w - 2, r.h - 2 };
}

/* Up/down/PgUp/PgDn/Home/End (and j/k) scroll the help or the details;
 * true if key was one of them. The first line shown goes no further
 * than the one that shows the last line at the foot of the box (it went
 * to the last line itself, which the box showed as that, and Up after
 * End then moved nothing for a box's height of presses); the details
 * are counted as wide as the box is. */
static bool
overlay_scroll(ms_tui_session *s, int key)
{
	ms_tui_ui *ui = &s->view->ui;
	bool help = ui->overlay == MS_OVERLAY_HELP;
	size_t *top = help ? &ui->help_scroll : &ui->detail_scroll;
	ms_rect in = overlay_inner(s);
	size_t lines = help ? ms__help_lines()
	                    : ms__detail_lines(s->view, in.w > 0 ? in.w : 60,
	                                       &s->detail_memo);
	size_t page = in.h > 0 ? (size_t)in.h : 1;
	size_t last = lines > page ? lines - page : 0;
	size_t step = in.h > 0 ? page : PAGE_UNKNOWN; /* a screenful */
	switch (key) {
	case MS_KEY_UP:
	case 'k':
		if (*top > last)
			*top = last;
		if (*top > 0)
			(*top)--;
		break;
	case MS_KEY_DOWN:
	case 'j':
		*top = *top < last ? *top + 1 : last;
		break;
	case MS_KEY_PGUP:
		*top = *top > step ? *top - step : 0;
		break;
	case MS_KEY_PGDN:
		*top = *top + step < last ? *top + step : last;
		break;
	case MS_KEY_HOME:
		*top = 0;
		break;
	case MS_KEY_END:
		*top = last;
		break;
	default:
		return false;
	}
	s->dirty = true;
	return true;
}

void
ms_session_key(ms_tui_session *s, int key)
{
	ms_tui_ui *ui = &s->view->ui;
	if (key == MS_KEY_NONE)
		return;
	if (key == MS_KEY_RESIZE) {
		s->dirty = true;
		return;
	}
	if (ui->prompt != MS_PROMPT_NONE) {
		prompt_key(s, key);
		return;
	}
	if (key != MS_KEY_CTRL('l'))
		ui->message[0] = '\0';
	if (ui->overlay == MS_OVERLAY_BREAKS) {
		breaks_key(s, key);
		return;
	}
	if ((ui->overlay == MS_OVERLAY_HELP ||
	     ui->overlay == MS_OVERLAY_DETAIL) &&
	    overlay_scroll(s, key))
		return;
	if (ui->overlay != MS_OVERLAY_NONE) {
		if (key == MS_KEY_ESC || key == 'q' || key == '?' ||
		    key == MS_KEY_ENTER || key == MS_KEY_F(1) ||
		    key == MS_KEY_F(10)) {
			ui->overlay = MS_OVERLAY_NONE;
			ui->help_visible = false;
			s->dirty = true;
		}
		return;
	}
	if (key == MS_KEY_BTAB) {
		act_focus_back(s);
		return;
	}
	if (key == MS_KEY_ESC) {
		s->dirty = true;
		return;
	}
	const ms_key_binding *b = ms_keys_lookup(key);
	if (b) {
		b->act(s);
		s->dirty = true;
		return;
	}
	navigate(s, key);
}
