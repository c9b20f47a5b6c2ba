/*
 * bench_tui_replay.c - what watching costs: the same replay (a preset's
 * cached fixture, skywalking, as fast as the engine goes) run headless and
 * driven by the real TUI session loop (ms_tui_run over the replay-backed
 * controller, drawing to a 200x60 virtual terminal on /dev/null at its
 * 30 frames a second), alternated in one process, with the medians of the
 * replay's wall time side by side and their ratio (target <= 1.15x).
 *
 * The TUI run ends as a user would end it: a watcher thread waits for the
 * replay to finish and types `q` into the terminal's input pipe. Wall time
 * is measured from ms_replay_start to DONE in both cases, so opening the
 * replay (fixture checks, plugin loading) is outside it.
 *
 * usage: bench_tui_replay [PRESET [REPS]]   default: day-2x 3
 * The fixture is the one `mergescope` caches (built once if missing).
 */
#include "ms_fixture.h"
#include "ms_replay.h"
#include "ms_replay_ctl.h"
#include "ms_tui.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int64_t
mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double
median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static const char *fixture;
static char work[256];

static ms_replay *
open_replay(const char *tag, int rep)
{
	char db[400];
	snprintf(db, sizeof(db), "%s/%s-%d.sqlite", work, tag, rep);
	ms_replay_opts ro;
	memset(&ro, 0, sizeof(ro));
	ro.fixture_dir = fixture;
	ro.db_path = db;
	ro.variant = "skywalking";
	ro.plugin_dir = MS_PLUGIN_DIR;
	ro.speed = 0;
	ms_replay *r = NULL;
	ms_errbuf eb = { "" };
	if (ms_replay_open(&r, &ro, &eb)) {
		fprintf(stderr, "bench_tui_replay: %s\n", eb.msg);
		exit(1);
	}
	return r;
}

static bool
finished_ok(ms_replay *r)
{
	ms_replay_status *st = malloc(sizeof(*st));
	if (!st)
		return false;
	ms_replay_get_status(r, st);
	bool ok = st->state == MS_REPLAY_DONE;
	if (!ok)
		fprintf(stderr, "bench_tui_replay: run ended %s: %s\n",
		        ms_replay_state_name(st->state), st->error);
	free(st);
	return ok;
}

static double
run_headless(int rep)
{
	ms_replay *r = open_replay("headless", rep);
	ms_errbuf eb = { "" };
	int64_t t0 = mono_ns();
	if (ms_replay_start(r, &eb)) {
		fprintf(stderr, "bench_tui_replay: %s\n", eb.msg);
		exit(1);
	}
	ms_replay_wait(r, -1);
	double s = (double)(mono_ns() - t0) / 1e9;
	if (!finished_ok(r))
		exit(1);
	ms_replay_close(r);
	return s;
}

struct watcher {
	ms_replay *r;
	int fd; /* write end of the terminal's input */
	int64_t t0, t_done;
};

static void *
watch(void *arg)
{
	struct watcher *w = arg;
	ms_replay_wait(w->r, -1);
	w->t_done = mono_ns();
	if (write(w->fd, "q", 1) != 1)
		perror("bench_tui_replay: write q");
	return NULL;
}

static double
run_tui(int rep)
{
	ms_replay *r = open_replay("tui", rep);
	ms_tui_ctl ctl;
	ms_replay_ctl *adapter = NULL;
	if (ms_replay_ctl_new(&adapter, r, &ctl)) {
		fprintf(stderr, "bench_tui_replay: out of memory\n");
		exit(1);
	}
	int p[2];
	if (pipe(p) < 0) {
		perror("pipe");
		exit(1);
	}
	FILE *in = fdopen(p[0], "r");
	FILE *out = fopen("/dev/null", "w");
	if (!in || !out) {
		perror("bench_tui_replay: terminal");
		exit(1);
	}
	ms_tui_opts o = { .in = in, .out = out, .term = "xterm-256color" };
	ms_errbuf eb = { "" };
	struct watcher w = { .r = r, .fd = p[1] };
	w.t0 = mono_ns();
	if (ms_replay_start(r, &eb)) {
		fprintf(stderr, "bench_tui_replay: %s\n", eb.msg);
		exit(1);
	}
	pthread_t th;
	pthread_create(&th, NULL, watch, &w);
	int rc = ms_tui_run(&ctl, &o, &eb);
	pthread_join(th, NULL);
	if (rc) {
		fprintf(stderr, "bench_tui_replay: tui: %s\n", eb.msg);
		exit(1);
	}
	double s = (double)(w.t_done - w.t0) / 1e9;
	if (!finished_ok(r))
		exit(1);
	ms_replay_ctl_free(adapter);
	ms_replay_close(r);
	fclose(in);
	close(p[1]);
	fclose(out);
	return s;
}

static void
progress(void *ctx, const char *stage, uint64_t done, uint64_t total)
{
	(void)ctx;
	if (done == total)
		fprintf(stderr, "  fixture %s done\n", stage);
}

int
main(int argc, char **argv)
{
	const char *preset = argc > 1 ? argv[1] : "day-2x";
	int reps = argc > 2 ? atoi(argv[2]) : 3;
	if (reps < 1 || reps > 50)
		reps = 3;
	static char dir[4096];
	if (ms_fixture_cache_dir(dir, sizeof(dir), preset, 1)) {
		fprintf(stderr, "bench_tui_replay: no cache directory\n");
		return 1;
	}
	struct stat st;
	if (stat(dir, &st) != 0) {
		fprintf(stderr, "building the %s fixture into %s\n", preset,
		        dir);
		ms_fixture_build_opts bo = { .preset = preset,
			                     .seed = 1,
			                     .out_dir = dir,
			                     .plugin_path = MS_PLUGIN_DIR
			                     "/skywalking.so",
			                     .progress = progress };
		ms_errbuf eb = { "" };
		if (ms_fixture_build(&bo, NULL, &eb)) {
			fprintf(stderr, "bench_tui_replay: %s\n", eb.msg);
			return 1;
		}
	}
	fixture = dir;
	snprintf(work, sizeof(work), "/tmp/ms-bench-tui-XXXXXX");
	if (!mkdtemp(work)) {
		perror("mkdtemp");
		return 1;
	}
	/* A 200x60 terminal (ncurses reads these before the terminfo). */
	setenv("COLUMNS", "200", 1);
	setenv("LINES", "60", 1);

	double *h = calloc((size_t)reps, sizeof(double));
	double *t = calloc((size_t)reps, sizeof(double));
	if (!h || !t)
		return 1;
	printf("bench_tui_replay: %s, skywalking, speed max, %d reps "
	       "(alternating)\n",
	       preset, reps);
	for (int i = 0; i < reps; i++) {
		/* Alternate the order so warm caches favour neither. */
		if (i % 2 == 0) {
			h[i] = run_headless(i);
			t[i] = run_tui(i);
		} else {
			t[i] = run_tui(i);
			h[i] = run_headless(i);
		}
		printf("  rep %d  headless %.3f s  tui %.3f s\n", i + 1, h[i],
		       t[i]);
		fflush(stdout);
	}
	double mh = median(h, reps), mt = median(t, reps);
	printf("median   headless %.3f s  tui %.3f s  tui/headless %.3fx "
	       "(target <= 1.15x)\n",
	       mh, mt, mt / mh);
	char cmd[400];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", work);
	if (system(cmd) != 0)
		fprintf(stderr, "bench_tui_replay: could not remove %s\n",
		        work);
	free(h);
	free(t);
	return 0;
}
