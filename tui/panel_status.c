/*
 * panel_status.c - the status line: the replay state in a reverse-video
 * block at the far left (its name is spelled out, so it reads without
 * colour), then logical time, frontier, publications k/N, merges done,
 * fixture, variant, phase, speed, and where events are recorded.
 *
 * When the line is too narrow the least important fields are left out
 * whole (never cut mid-word), in this order: phase, speed (+ and - say
 * it when they change it), fixture, publications k/N (the time says
 * where the day is), the sampled/bypassed counts, merges, variant,
 * frontier. The state, why it stopped and the time always stay. At 80
 * columns that keeps the variant, the run's subject, which went before
 * the counts and the publications; a variant that cannot fit (a chain)
 * goes alone, and the fields that went before it come back. The database
 * path comes last and is shortened from the left if it does not fit.
 */
#include "tui_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

struct piece {
	char text[160];
	uint16_t attr;
	int prio; /* lower is more important */
	bool on;
};

/* Turn pieces left out back on, most important first, while they fit in
 * the room the ones after them left, passing over a piece that could
 * never fit beside the state, the time and the frontier (a long variant:
 * a chain), so that the merges, which went before it, come back; the
 * first other piece that does not fit ends it, so what goes still goes
 * in order. */
static void
refill(struct piece *p, int n, int w, int total)
{
	int kept = 0;
	for (int i = 0; i < n; i++)
		if (p[i].on && p[i].prio <= 2)
			kept += ms_canvas_cols(p[i].text);
	for (int prio = 3; prio < 16; prio++)
		for (int i = 0; i < n; i++) {
			if (p[i].on || p[i].prio != prio)
				continue;
			int cols = ms_canvas_cols(p[i].text);
			if (kept + cols > w)
				continue;
			if (total + cols > w)
				return;
			p[i].on = true;
			total += cols;
		}
}

/* Turn pieces off, least important first, until they fit in w columns;
 * before that, the counts piece (index counts, or -1) takes its short
 * form when it has one. */
static void
fit(struct piece *p, int n, int w, int counts, const char *short_counts)
{
	int total = 0;
	for (int i = 0; i < n; i++) {
		p[i].on = true;
		total += ms_canvas_cols(p[i].text);
	}
	if (total > w && counts >= 0 && short_counts[0]) {
		total -= ms_canvas_cols(p[counts].text);
		snprintf(p[counts].text, sizeof(p[counts].text), "%s",
		         short_counts);
		total += ms_canvas_cols(short_counts);
	}
	while (total > w) {
		int worst = -1;
		for (int i = 0; i < n; i++)
			if (p[i].on && (worst < 0 || p[i].prio > p[worst].prio))
				worst = i;
		if (worst <= 0)
			break;
		p[worst].on = false;
		total -= ms_canvas_cols(p[worst].text);
	}
	refill(p, n, w, total);
}

/* Where events are recorded: the rest of the line from column x. */
static void
draw_db(ms_canvas *c, ms_rect r, int x, const ms_tui_view *v)
{
	const char *db = v->db_path[0] ? v->db_path : "(not recording)";
	int room = r.x + r.w - x - 5;
	if (room < 12)
		return;
	int len = (int)strlen(db);
	/* Too long, its tail from a '/' on (".../runs/x.db"): cut inside a
	 * name ("...uns/x.db", "...0-db/s.db") it read as a cut word. With
	 * no room for the file's name, nothing: the event log's border
	 * names the database whole. */
	const char *tail = db;
	if (len > room) {
		tail = strchr(db + len - (room - 3), '/');
		if (!tail)
			return;
	}
	x += ms_canvas_text(c, x, r.y, 5, "  db ", MS_C_MUTED);
	if (tail != db)
		x += ms_canvas_text(c, x, r.y, 3, "...", MS_C_MUTED);
	ms_canvas_text(c, x, r.y, room, tail, 0);
}

static void
draw(ms_canvas *c, ms_rect r, const ms_tui_view *v)
{
	char t[32], f[32], sp[32];
	struct piece p[12];
	int n = 0;

	uint16_t sa = MS_A_REV | MS_A_BOLD;
	const char *mark;
	/* A run that failed is over too, but not DONE: said as such, and
	 * why, as a breakpoint is. */
	bool failed = v->state == MS_VIEW_DONE && v->run_failed;
	switch (v->state) {
	case MS_VIEW_RUNNING:
		sa |= MS_C_OK;
		mark = c->ascii ? ">>" : "\u25b6";
		break;
	case MS_VIEW_BREAK:
		sa |= MS_C_ALERT;
		mark = "!!";
		break;
	case MS_VIEW_DONE:
		sa |= failed ? MS_C_ALERT : MS_C_ACCENT;
		mark = failed ? "!!" : "--";
		break;
	default:
		sa |= MS_C_WARN;
		mark = "||";
		break;
	}
	snprintf(p[n].text, sizeof(p[n].text), " %s %-7s ", mark,
	         failed ? "FAILED" : ms__state_name(v->state));
	p[n].attr = sa;
	p[n++].prio = 0;
	if (failed && v->break_why[0]) {
		snprintf(p[n].text, sizeof(p[n].text), " %s", v->break_why);
		p[n].attr = MS_C_ALERT | MS_A_BOLD;
		p[n++].prio = 1;
	}
	/* Why it stopped: the breakpoint's spec at a BREAK, the `g` target
	 * or step at a pause (a plain pause says nothing more); where a `g`
	 * is running to. Kept before everything but the time. */
	if ((v->state == MS_VIEW_BREAK || v->state == MS_VIEW_PAUSED) &&
	    v->break_why[0] && strcmp(v->break_why, "pause") != 0) {
		snprintf(p[n].text, sizeof(p[n].text), " at %s", v->break_why);
		p[n].attr = MS_C_ALERT | MS_A_BOLD;
		p[n++].prio = 1;
	} else if (v->state == MS_VIEW_RUNNING && v->preparing) {
		snprintf(p[n].text, sizeof(p[n].text),
		         " preparing: verdict oracle");
		p[n].attr = MS_C_WARN | MS_A_BOLD;
		p[n++].prio = 1;
	} else if (v->state == MS_VIEW_RUNNING && v->ui.go_target[0]) {
		snprintf(p[n].text, sizeof(p[n].text), " to %s",
		         v->ui.go_target);
		p[n].attr = MS_C_ALERT | MS_A_BOLD;
		p[n++].prio = 1;
	}
	snprintf(p[n].text, sizeof(p[n].text), " t %s",
	         ms_fmt_clock(t, sizeof(t), v->now + v->now_ahead,
	                      v->day_start));
	p[n].attr = MS_A_BOLD;
	p[n++].prio = 1;
	snprintf(p[n].text, sizeof(p[n].text), " frontier %s",
	         ms_fmt_clock(f, sizeof(f), v->frontier + v->now_ahead,
	                      v->day_start));
	p[n].attr = MS_C_ALERT;
	p[n++].prio = 2;
	snprintf(p[n].text, sizeof(p[n].text), " pub %" PRIu64 "/%" PRIu64,
	         v->pub_done, v->pub_total);
	p[n].attr = 0;
	p[n++].prio = 6;
	snprintf(p[n].text, sizeof(p[n].text), " merges %" PRIu64,
	         v->merges_done);
	p[n].attr = 0;
	p[n++].prio = 4;
	/* What sampling did: the default day bypasses it for almost every
	 * merge (a hot input in the selection), which nothing else says.
	 * Each count is written figure first, in both forms; narrow, a zero
	 * count is left out: "(0 sampled, 245 bypassed)" is "(245
	 * bypassed)", the same figure with the same words. */
	int counts = -1;
	char short_counts[64] = "";
	if (v->merges_sampled + v->merges_bypassed) {
		snprintf(p[n].text, sizeof(p[n].text),
		         " (%" PRIu64 " sampled, %" PRIu64 " bypassed)",
		         v->merges_sampled, v->merges_bypassed);
		if (v->merges_sampled == 0 || v->merges_bypassed == 0)
			snprintf(short_counts, sizeof(short_counts),
			         " (%" PRIu64 " %s)",
			         v->merges_sampled ? v->merges_sampled
			                           : v->merges_bypassed,
			         v->merges_sampled ? "sampled" : "bypassed");
		p[n].attr = MS_C_MUTED;
		counts = n;
		p[n++].prio = 5;
	}
	snprintf(p[n].text, sizeof(p[n].text), " %s", v->fixture);
	p[n].attr = MS_C_ACCENT;
	p[n++].prio = 7;
	snprintf(p[n].text, sizeof(p[n].text), " %s", v->variant);
	p[n].attr = MS_C_ACCENT | MS_A_BOLD;
	p[n++].prio = 3;
	snprintf(p[n].text, sizeof(p[n].text), " %s", v->phase);
	p[n].attr = MS_C_MUTED;
	p[n++].prio = 9;
	snprintf(p[n].text, sizeof(p[n].text), " speed %s",
	         ms_fmt_speed(sp, sizeof(sp), v->speed));
	p[n].attr = 0;
	p[n++].prio = 8;

	fit(p, n, r.w, counts, short_counts);
	int x = r.x;
	for (int i = 0; i < n; i++)
		if (p[i].on)
			x += ms_canvas_text(c, x, r.y, r.x + r.w - x, p[i].text,
			                    p[i].attr);
	draw_db(c, r, x, v);
}

const ms_panel_class ms_panel_status = {
	.name = "status",
	.title = NULL,
	.slot = MS_PANEL_STATUS,
	.draw = draw,
};
