/*
 * tui_fake.h - a fake replay controller for the TUI tests and the frame
 * benchmark: it records every call in a log string and serves a view
 * filled with fixed, made-up figures (never used by the product).
 *
 * Two scenes: "running" (mid-day, merges flowing, nothing pending) and
 * "break" (stopped at the dispatch barrier of merge #58 whose selection
 * holds 3 mature and 5 hot inputs).
 */
#ifndef MS_TESTS_TUI_FAKE_H
#define MS_TESTS_TUI_FAKE_H

#include "tui_int.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Not every test uses every helper. */
#define MS_FAKE __attribute__((unused))

#define FAKE_DAY0 (1700006400LL * 1000000000LL) /* a UTC midnight */
#define FAKE_H (3600LL * 1000000000LL)
#define FAKE_MIN (60LL * 1000000000LL)

typedef struct fake_ctl {
	ms_tui_view *model; /* what snapshot copies (ui excluded) */
	char log[4096];
	int fail; /* when set, every operation fails with MS_ERR_STATE */
	int next_break;
	ms_tui_filter last_filter;
	/* What restart says it records to: "" = back in the same database
	 * (from a checkpoint), else a new one. */
	char restart_db[512];
	/* When set, run_to says the run is past its target (MS_TUI_PASSED)
	 * and sets nothing. */
	bool passed;
	/* Where freeze says it froze to: NULL = "/tmp/frozen-58". */
	const char *freeze_dir;
	/* A freeze begun and not yet given; freeze_hold keeps it under way
	 * (freeze_done answers MS_TUI_PENDING) until it is cleared. */
	bool freezing, freeze_hold;
} fake_ctl;

MS_FAKE static void fake_log(fake_ctl *f, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));

MS_FAKE static void
fake_log(fake_ctl *f, const char *fmt, ...)
{
	size_t l = strlen(f->log);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(f->log + l, sizeof(f->log) - l, fmt, ap);
	va_end(ap);
}

#define FAKE_OP(name, text)                                                    \
	MS_FAKE static int fake_##name(void *self, ms_errbuf *eb)              \
	{                                                                      \
		fake_ctl *f = self;                                            \
		if (f->fail)                                                   \
			return ms_fail(eb, MS_ERR_STATE, "fake: %s refused",   \
			               text);                                  \
		fake_log(f, "%s;", text);                                      \
		return 0;                                                      \
	}

FAKE_OP(run, "run")
FAKE_OP(pause, "pause")
FAKE_OP(step, "step")
FAKE_OP(step_to_barrier, "barrier")
FAKE_OP(run_to_breakpoint, "tobreak")

MS_FAKE static int
fake_run_to(void *self, const ms_tui_target *t, ms_errbuf *eb)
{
	fake_ctl *f = self;
	if (f->fail)
		return ms_fail(eb, MS_ERR_STATE, "fake: run to refused");
	if (t->kind == MS_TARGET_MERGE)
		fake_log(f, "runto=#%" PRIu64 ";", t->seq);
	else if (t->kind == MS_TARGET_PUB)
		fake_log(f, "runto=pub%" PRIu64 ";", t->pub);
	else
		fake_log(
		        f, "runto=%" PRId64 "s;",
		        (int64_t)((t->t - f->model->day_start) / 1000000000LL));
	if (f->passed) {
		fake_log(f, "passed;");
		return MS_TUI_PASSED;
	}
	return 0;
}

MS_FAKE static int
fake_set_speed(void *self, double m, ms_errbuf *eb)
{
	fake_ctl *f = self;
	(void)eb;
	fake_log(f, "speed=%g;", m);
	f->model->speed = m;
	return 0;
}

MS_FAKE static int
fake_break_add(void *self, const char *spec, int *id, ms_errbuf *eb)
{
	fake_ctl *f = self;
	if (strcmp(spec, "bogus") == 0)
		return ms_fail(eb, MS_ERR_INVAL,
		               "breakpoint \"bogus\": expected mature, "
		               "sampling, merge=N, ...");
	*id = ++f->next_break;
	fake_log(f, "break+%s;", spec);
	ms_tui_break *b = &f->model->breaks[f->model->nbreaks++];
	b->id = *id;
	snprintf(b->spec, sizeof(b->spec), "%s", spec);
	b->enabled = true;
	return 0;
}

MS_FAKE static int
fake_break_enable(void *self, int id, bool on, ms_errbuf *eb)
{
	fake_ctl *f = self;
	(void)eb;
	fake_log(f, "break%d=%s;", id, on ? "on" : "off");
	for (size_t i = 0; i < f->model->nbreaks; i++)
		if (f->model->breaks[i].id == id)
			f->model->breaks[i].enabled = on;
	return 0;
}

MS_FAKE static int
fake_break_delete(void *self, int id, ms_errbuf *eb)
{
	fake_ctl *f = self;
	(void)eb;
	fake_log(f, "break-%d;", id);
	for (size_t i = 0; i < f->model->nbreaks; i++)
		if (f->model->breaks[i].id == id) {
			memmove(&f->model->breaks[i], &f->model->breaks[i + 1],
			        (f->model->nbreaks - i - 1) *
			                sizeof(ms_tui_break));
			f->model->nbreaks--;
			break;
		}
	return 0;
}

MS_FAKE static int
fake_freeze(void *self, ms_errbuf *eb)
{
	fake_ctl *f = self;
	(void)eb;
	fake_log(f, "freeze;");
	if (f->freezing)
		return MS_ERR_STATE;
	f->freezing = true;
	return 0;
}

/* Done at once, unless freeze_hold: under way until it is cleared, or
 * until asked to wait ("freeze-wait;"). */
MS_FAKE static int
fake_freeze_done(void *self, bool wait, char *dir, size_t n, ms_errbuf *eb)
{
	fake_ctl *f = self;
	(void)eb;
	if (!f->freezing)
		return MS_ERR_STATE;
	if (f->freeze_hold && !wait)
		return MS_TUI_PENDING;
	if (wait)
		fake_log(f, "freeze-wait;");
	f->freezing = false;
	snprintf(dir, n, "%s",
	         f->freeze_dir ? f->freeze_dir : "/tmp/frozen-58");
	return 0;
}

MS_FAKE static int
fake_export(void *self, enum ms_tui_format fmt, const ms_tui_filter *flt,
            const char *path, bool overwrite, uint64_t *written, ms_errbuf *eb)
{
	fake_ctl *f = self;
	(void)eb;
	f->last_filter = *flt;
	fake_log(f, "export=%s:%s:lane=%s%s;", ms_tui_format_name(fmt), path,
	         flt->lane, overwrite ? ":overwrite" : "");
	*written = 7;
	return 0;
}

MS_FAKE static int
fake_snapshot(void *self, ms_tui_view *v, ms_errbuf *eb)
{
	fake_ctl *f = self;
	(void)eb;
	ms_tui_ui ui = v->ui;
	memcpy(v, f->model, sizeof(*v));
	v->ui = ui;
	return 0;
}

MS_FAKE static int
fake_restart(void *self, const ms_tui_target *t, char *db, size_t n,
             ms_errbuf *eb)
{
	fake_ctl *f = self;
	(void)eb;
	if (db && n)
		snprintf(db, n, "%s", f->restart_db);
	if (!t)
		fake_log(f, "restart;");
	else if (t->kind == MS_TARGET_MERGE)
		fake_log(f, "restart=#%" PRIu64 ";", t->seq);
	else if (t->kind == MS_TARGET_PUB)
		fake_log(f, "restart=pub%" PRIu64 ";", t->pub);
	else
		fake_log(
		        f, "restart=%" PRId64 "s;",
		        (int64_t)((t->t - f->model->day_start) / 1000000000LL));
	return 0;
}

MS_FAKE static const ms_tui_ctl_ops fake_ops = {
	.run = fake_run,
	.pause = fake_pause,
	.step = fake_step,
	.step_to_barrier = fake_step_to_barrier,
	.run_to_breakpoint = fake_run_to_breakpoint,
	.run_to = fake_run_to,
	.set_speed = fake_set_speed,
	.break_add = fake_break_add,
	.break_enable = fake_break_enable,
	.break_delete = fake_break_delete,
	.freeze = fake_freeze,
	.freeze_done = fake_freeze_done,
	.export_events = fake_export,
	.snapshot = fake_snapshot,
	.restart = fake_restart,
};

/* A small deterministic generator for the made-up figures. */
MS_FAKE static uint64_t
fake_rand(uint64_t *s)
{
	*s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
	return *s >> 33;
}

MS_FAKE static void
fake_part(ms_tui_part *p, uint64_t id, uint64_t bytes, uint64_t rows,
          uint32_t depth, int64_t min_ts, int64_t max_ts, int64_t frontier)
{
	ms_tui_part_init(p, id, bytes, rows, depth, min_ts, max_ts);
	p->mature = max_ts <= frontier;
}

/* The "running" scene: 06:12:30, 57 merges done, 20 parts. */
MS_FAKE static void
fake_scene_running(ms_tui_view *v)
{
	ms_tui_ui ui = v->ui;
	memset(v, 0, sizeof(*v));
	v->ui = ui;
	uint64_t seed = 42;
	v->state = MS_VIEW_RUNNING;
	snprintf(v->fixture, sizeof(v->fixture), "day-2x");
	snprintf(v->variant, sizeof(v->variant), "skywalking");
	snprintf(v->phase, sizeof(v->phase), "primary");
	snprintf(v->db_path, sizeof(v->db_path),
	         "/home/u/.cache/mergescope/runs/day-2x-skywalking.db");
	v->day_start = FAKE_DAY0;
	v->day_end = FAKE_DAY0 + 24 * FAKE_H;
	v->now = FAKE_DAY0 + 6 * FAKE_H + 12 * FAKE_MIN + 30000000000LL;
	v->frontier = v->now - 2 * FAKE_H;
	v->pub_done = 832;
	v->pub_total = 3219;
	v->merges_done = 57;
	v->epoch = 946;
	v->speed = 60;

	/* Four merged, mature parts covering the early morning. */
	for (int i = 0; i < 4; i++) {
		int64_t a = FAKE_DAY0 + i * 55 * FAKE_MIN;
		fake_part(&v->parts[v->nparts++], 0x100 + (uint64_t)i,
		          3000000 + (uint64_t)i * 410000,
		          9000 + (uint64_t)i * 1200, 2, a, a + 60 * FAKE_MIN,
		          v->frontier);
	}
	/* Depth-1 parts around and after the frontier. */
	for (int i = 0; i < 6; i++) {
		int64_t a = FAKE_DAY0 + 3 * FAKE_H + i * 25 * FAKE_MIN;
		fake_part(&v->parts[v->nparts++], 0x200 + (uint64_t)i,
		          700000 + fake_rand(&seed) % 300000,
		          2000 + fake_rand(&seed) % 900, 1, a,
		          a + 30 * FAKE_MIN, v->frontier);
	}
	/* Raw writes of the last hour: small and hot. */
	for (int i = 0; i < 10; i++) {
		int64_t a = v->now - 60 * FAKE_MIN + i * 6 * FAKE_MIN;
		fake_part(&v->parts[v->nparts++], 0x340 + (uint64_t)i,
		          60000 + fake_rand(&seed) % 40000,
		          90 + fake_rand(&seed) % 60, 0, a - 2 * FAKE_MIN, a,
		          v->frontier);
	}
	v->parts[13].claimed_by = 58;
	v->parts_total = v->nparts;

	v->staging.live = 12 * 1048576;
	v->staging.peak = 28 * 1048576 + 123456;
	v->staging.preferred = 28572109;
	v->staging.hard = 256 * 1048576ULL;
	v->staging.nspark = 40;
	for (size_t i = 0; i < v->staging.nspark; i++)
		v->staging.spark[i] =
		        i % 3 ? 0 : 4000000 + fake_rand(&seed) % 26000000;

	v->nplugins = 1;
	ms_tui_plugin *p = &v->plugins[0];
	snprintf(p->name, sizeof(p->name), "skywalking");
	p->calls = 19;
	p->traces = 74300;
	p->total_ns = 16950000;
	p->max_ns = 3543000;
	static const uint64_t hist[MS_VIEW_HIST] = { 1, 4, 8, 5, 1 };
	memcpy(p->hist, hist, sizeof(hist));

	for (uint64_t s = 1; s <= 57; s++) {
		ms_tui_event *e = &v->events[v->nevents++];
		memset(e, 0, sizeof(*e));
		e->seq = s;
		e->t = FAKE_DAY0 + (int64_t)s * 6 * FAKE_MIN + 11 * FAKE_H / 3;
		snprintf(e->lane, sizeof(e->lane), "%s",
		         s % 9 ? "fast" : "slow");
		snprintf(e->phase, sizeof(e->phase), "primary");
		e->ninputs = 8 + (uint32_t)(s % 5);
		e->rows_in = 1000 + s * 37;
		bool mature = s % 4 == 0;
		e->rows_out = mature ? e->rows_in * 65 / 100 : e->rows_in;
		e->bytes_in = 400000 + s * 1000;
		e->bytes_out = e->bytes_in * 9 / 10;
		snprintf(e->klass, sizeof(e->klass), "%s",
		         mature ? "executed" : "not_executed");
		snprintf(e->reason, sizeof(e->reason), "%s",
		         mature ? "" : "merge_grace");
		e->wall_ns = 2000000 + (int64_t)(s * 91000);
		e->output_id = 0x400 + s;
		e->depth_out = 1;
		e->fingerprint = 0x9e3779b97f4a7c15ULL * s;
		e->ninputs_kept = e->ninputs;
		for (uint32_t i = 0; i < e->ninputs; i++) {
			ms_tui_input *in = &e->inputs[i];
			in->id = 0x100 + s * 16 + i;
			in->bytes = 40000 + i * 1000;
			in->rows = 100 + i;
			in->depth = i % 3;
			in->mature = mature && i < 3;
			in->max_ts = e->t - (int64_t)(i + 1) * FAKE_MIN;
		}
	}
	v->events_total = 57;
}

/* The "break" scene: paused at the barrier of merge #58, a selection of
 * 3 mature and 5 hot parts pending, one breakpoint that hit. */
MS_FAKE static void
fake_scene_break(ms_tui_view *v)
{
	fake_scene_running(v);
	v->state = MS_VIEW_BREAK;
	v->speed = 0;
	snprintf(v->break_why, sizeof(v->break_why), "break 1: mature");
	ms_tui_selection *s = &v->sel;
	s->present = true;
	s->seq = 58;
	snprintf(s->lane, sizeof(s->lane), "fast");
	snprintf(s->predicted, sizeof(s->predicted), "not_executed");
	snprintf(s->reason, sizeof(s->reason), "merge_grace");
	s->frontier = v->frontier;
	/* Inputs: three depth-1 mature parts and five raw hot ones. */
	static const size_t pick[8] = { 4, 5, 6, 10, 11, 12, 13, 14 };
	for (size_t i = 0; i < 8; i++) {
		ms_tui_part *p = &v->parts[pick[i]];
		p->mature = i < 3;
		p->max_ts = p->mature
		                    ? v->frontier - FAKE_MIN * (int64_t)(i + 1)
		                    : p->max_ts;
		p->pending = true;
		p->claimed_by = 58;
		s->inputs[s->ninputs++] = *p;
		s->bytes += p->bytes;
		s->rows += p->rows;
		if (p->mature) {
			s->mature_count++;
			s->mature_rows += p->rows;
		} else {
			s->hot_count++;
			s->hot_rows += p->rows;
		}
		if (p->depth > s->max_depth)
			s->max_depth = p->depth;
	}
	s->inputs_total = s->ninputs;
	v->nbreaks = 1;
	v->breaks[0].id = 1;
	snprintf(v->breaks[0].spec, sizeof(v->breaks[0].spec), "mature");
	v->breaks[0].enabled = true;
	v->breaks[0].hits = 3;
}

MS_FAKE static void
fake_init(fake_ctl *f, ms_tui_ctl *ctl, ms_tui_view *model)
{
	memset(f, 0, sizeof(*f));
	f->model = model;
	f->next_break = (int)model->nbreaks;
	ctl->ops = &fake_ops;
	ctl->self = f;
}

#endif
