/*
 * bench_tui.c - how long one TUI frame takes at 200x60: lay out and draw
 * every panel from a full view into the canvas, copy it to curses and
 * update a terminal whose output goes to /dev/null. The view changes every
 * frame (clock, staging, a new merge event, rotating parts) as it does in
 * a live replay, so rows really change.
 *
 * Prints medians and 90th percentiles of: canvas only, a frame as the
 * main loop draws it (unchanged rows skipped), and a frame with a full
 * repaint forced (as after ctrl-L or a resize), with ratios side by side;
 * FRAMES steps, each drawing a live frame and a full repaint, which one
 * goes first alternating.
 * Target: the live frame median <= 2 ms. Asserts nothing.
 *
 *   bench_tui [frames]      (default 2000)
 */
#include "ms_clock.h"
#include "tui_fake.h"
#include "tui_int.h"
#include "bench_args.h"
#include "bench_stats.h"

#include <locale.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define W 200
#define H 60

/* Move the scene on by one frame. */
static void
advance(ms_tui_view *v, int i)
{
	v->now += 1000000000LL;
	v->frontier += 1000000000LL;
	v->staging.live = (uint64_t)(i * 7919 % 30000000);
	v->staging.spark[i % MS_VIEW_SPARK] = (uint64_t)(i * 104729 % 30000000);
	ms_tui_event *e = &v->events[(size_t)i % v->nevents];
	e->seq = 100 + (uint64_t)i;
	e->rows_in += 1;
	v->events_total++;
	v->merges_done++;
	v->parts[(size_t)i % v->nparts].bytes += 4096;
	ms_tui_view_sort_parts(v);
}

static void
report(const char *what, int64_t *t, int n, double base)
{
	double med = (double)bench_median_i64(t, n) / 1e6; /* sorts t */
	double p90 = (double)t[n * 9 / 10] / 1e6;
	printf("%-34s median %7.3f ms   p90 %7.3f ms", what, med, p90);
	if (base > 0)
		printf("   %.2fx", med / base);
	printf("\n");
}

int
main(int argc, char **argv)
{
	static const char usage[] = "bench_tui [FRAMES 10..1000000]";
	if (argc > 2)
		bench_usage(usage);
	int frames = argc > 1 ? (int)bench_arg_ll(argv[1], 10, 1000000,
	                                          "bench_tui: FRAMES", usage)
	                      : 2000;
	if (!setlocale(LC_ALL, "C.UTF-8"))
		setlocale(LC_ALL, "C.utf8");
	FILE *out = fopen("/dev/null", "w"), *in = fopen("/dev/null", "r");
	if (!out || !in)
		return 1;
	ms_screen_opts so = {
		.out = out, .in = in, .term = "xterm-256color", .color = true
	};
	ms_screen *scr;
	ms_errbuf eb = { "" };
	if (ms_screen_open(&scr, &so, &eb)) {
		fprintf(stderr, "bench_tui: %s\n", eb.msg);
		return 1;
	}
	ms_screen_resize(scr, W, H);
	ms_tui_view *v = ms_tui_view_new();
	int64_t *canvas_t = calloc((size_t)frames, sizeof(int64_t));
	int64_t *live_t = calloc((size_t)frames, sizeof(int64_t));
	int64_t *full_t = calloc((size_t)frames, sizeof(int64_t));
	if (!v || !canvas_t || !live_t || !full_t)
		return 1;
	fake_scene_break(v);
	/* Fill the inventory and event log as on a busy afternoon. */
	for (size_t i = v->nparts; i < 300; i++) {
		v->parts[i] = v->parts[i % 20];
		v->parts[i].id = 0x1000 + i;
		v->parts[i].pending = false;
	}
	v->nparts = v->parts_total = 300;
	for (size_t i = v->nevents; i < MS_VIEW_MAX_EVENTS; i++) {
		v->events[i] = v->events[i % 57];
		v->events[i].seq = i + 1;
	}
	v->nevents = MS_VIEW_MAX_EVENTS;
	v->ui.ascii = false;
	v->ui.color = true;
	ms_canvas c;
	ms_canvas_init(&c);

	/* Each step draws a live frame and a full repaint, which goes first
	 * alternating, so that the machine's drift falls on both alike. */
	for (int i = 0; i < frames; i++) {
		for (int k = 0; k < 2; k++) {
			bool full = (k == 0) == (i % 2 == 1);
			advance(v, 2 * i + k);
			int64_t t0 = ms_mono_ns();
			ms_render_frame(&c, v, W, H);
			int64_t t1 = ms_mono_ns();
			if (full)
				ms_screen_invalidate(scr);
			ms_screen_draw(scr, &c);
			int64_t t2 = ms_mono_ns();
			if (full) {
				full_t[i] = t2 - t0;
			} else {
				canvas_t[i] = t1 - t0;
				live_t[i] = t2 - t0;
			}
		}
	}
	ms_screen_close(scr);

	printf("bench_tui: %d frames at %dx%d, %zu parts, %zu events, "
	       "Unicode glyphs, colour\n",
	       frames, W, H, v->nparts, v->nevents);
	double live_med = (double)bench_median_i64(live_t, frames) / 1e6;
	report("canvas only (layout + panels)", canvas_t, frames, live_med);
	report("frame as drawn live", live_t, frames, live_med);
	report("frame with full repaint", full_t, frames, live_med);
	printf("target: live frame median <= 2 ms; ratios are against the "
	       "live frame\n");
	ms_canvas_release(&c);
	ms_tui_view_free(v);
	free(canvas_t);
	free(live_t);
	free(full_t);
	fclose(out);
	fclose(in);
	return 0;
}
