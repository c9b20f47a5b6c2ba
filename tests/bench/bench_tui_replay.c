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
 * Then one more TUI run measures how fast keys answer while the replay
 * runs flat out (target 50 ms): a presser thread types space (run/pause)
 * PRESSES times into the input pipe, each 20-80 ms (irregular, fixed seed)
 * after the previous press has fully settled, alternating pause and run so
 * the day still finishes. Per press it takes three times from the write():
 * until the TUI calls the controller's run/pause (the ops table is wrapped
 * and the call timestamped: the key is answered), until the first terminal
 * output after that call (the next frame, read from the output pipe by a
 * drain thread), and until the replay's state is the one asked for (status
 * polled every 0.2 ms; a pause takes effect at the engine's next
 * publication or dispatch point, PAUSED or BREAK).
 * That run is not part of the headless-vs-TUI comparison.
 *
 * usage: bench_tui_replay [PRESET [REPS [PRESSES [seek]]]]
 *   default: day-2x 3 50
 * PRESSES 0 skips the key-latency run.
 *
 * With `seek` only going back is measured: from a finished run, `g #10`
 * and `g #240` (merge targets) as the TUI did before checkpoints (a new
 * replay of the same options, the old one closed, run to the target from
 * the day's start) and as it does now (ms_replay_seek_merge: back to the
 * run's latest checkpoint before the target, then run to it), each timed
 * from the key to the stop at the target's barrier, alternated, REPS
 * times; after each the run goes on to its end (not timed).
 * The fixture is the one `mergescope` caches (built once if missing).
 */
#include "ms_clock.h"
#include "ms_fixture.h"
#include "ms_replay.h"
#include "ms_replay_ctl.h"
#include "ms_tui.h"
#include "bench_args.h"
#include "bench_stats.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static const char *fixture;
static char work[256];

static ms_replay *
open_replay_ck(const char *tag, int rep, int64_t checkpoint_every_ns)
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
	ro.checkpoint_every_ns = checkpoint_every_ns;
	ms_replay *r = NULL;
	ms_errbuf eb = { "" };
	if (ms_replay_open(&r, &ro, &eb)) {
		fprintf(stderr, "bench_tui_replay: %s\n", eb.msg);
		exit(1);
	}
	return r;
}

static ms_replay *
open_replay(const char *tag, int rep)
{
	return open_replay_ck(tag, rep, 0);
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
	int64_t t0 = ms_mono_ns();
	if (ms_replay_start(r, &eb)) {
		fprintf(stderr, "bench_tui_replay: %s\n", eb.msg);
		exit(1);
	}
	ms_replay_wait(r, -1);
	double s = (double)(ms_mono_ns() - t0) / 1e9;
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
	w->t_done = ms_mono_ns();
	if (write(w->fd, "q", 1) != 1)
		perror("bench_tui_replay: write q");
	return NULL;
}

/* ---- key latency ----------------------------------------------------- */

enum { OP_NONE = 0, OP_PAUSE = 1, OP_RUN = 2 };

/* Shared between the TUI thread (the wrapped ops), the drain thread and the
 * presser thread. */
static struct {
	const ms_tui_ctl_ops *real;
	ms_tui_ctl_ops timed;
	_Atomic int64_t t_op;    /* when run/pause was last called */
	_Atomic int op;          /* which one */
	_Atomic int64_t t_frame; /* first output after the last op call */
	_Atomic int64_t t_out;   /* last output of any kind */
} kl;

static int
timed_run(void *self, ms_errbuf *eb)
{
	atomic_store(&kl.op, OP_RUN);
	atomic_store(&kl.t_op, ms_mono_ns());
	return kl.real->run(self, eb);
}

static int
timed_pause(void *self, ms_errbuf *eb)
{
	atomic_store(&kl.op, OP_PAUSE);
	atomic_store(&kl.t_op, ms_mono_ns());
	return kl.real->pause(self, eb);
}

/* Reads the terminal's output; the first read after an op call is the next
 * frame that call could show in. */
static void *
drain(void *arg)
{
	int fd = *(int *)arg;
	static char buf[1 << 16];
	int64_t seen = 0;
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n <= 0)
			break;
		int64_t t = ms_mono_ns();
		int64_t op = atomic_load(&kl.t_op);
		if (op > seen && t > op) {
			atomic_store(&kl.t_frame, t);
			seen = op;
		}
		atomic_store(&kl.t_out, t);
	}
	return NULL;
}

static void
sleep_ns(int64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000LL),
		               (long)(ns % 1000000000LL) };
	nanosleep(&ts, NULL);
}

#define KL_MAX 1000

struct presser {
	ms_replay *r;
	int fd; /* write end of the terminal's input */
	int presses;
	int n;           /* presses measured */
	int nrepeat;     /* presses answered with the same op as before */
	int nstate_miss; /* state never became the asked one (run ended) */
	double op_ms[KL_MAX], frame_ms[KL_MAX];
	double paused_ms[KL_MAX], running_ms[KL_MAX];
	int nframe, npaused, nrunning;
	enum ms_replay_state miss_state; /* what it was instead */
	double slow_ms;                  /* the slowest stop, and where */
	enum ms_replay_phase slow_phase;
	uint64_t slow_pub, slow_pubs, slow_merges;
	int64_t t0, t_done;
};

static enum ms_replay_state
replay_state(ms_replay *r, ms_replay_status *st)
{
	ms_replay_get_status(r, st);
	return st->state;
}

/* Wait until *v > after, polling every 0.1 ms; false after 2 s. */
static bool
wait_after(_Atomic int64_t *v, int64_t after)
{
	int64_t limit = ms_mono_ns() + 2000000000LL;
	while (atomic_load(v) <= after) {
		if (ms_mono_ns() > limit)
			return false;
		sleep_ns(100000);
	}
	return true;
}

static void *
press_keys(void *arg)
{
	struct presser *p = arg;
	ms_replay_status *st = malloc(sizeof(*st));
	if (!st) {
		perror("bench_tui_replay");
		exit(1);
	}
	uint32_t rng = 0x9e3779b9u;
	/* Let the session come up and draw. */
	wait_after(&kl.t_out, 0);
	sleep_ns(200000000LL);
	int last_op = OP_NONE;
	for (int i = 0; i < p->presses && i < KL_MAX; i++) {
		rng ^= rng << 13;
		rng ^= rng >> 17;
		rng ^= rng << 5;
		sleep_ns((20 + (int64_t)(rng % 61)) * 1000000LL);
		if (replay_state(p->r, st) == MS_REPLAY_DONE)
			break;
		int64_t t_prev = atomic_load(&kl.t_op);
		int64_t tw = ms_mono_ns();
		if (write(p->fd, " ", 1) != 1) {
			perror("bench_tui_replay: write space");
			break;
		}
		if (!wait_after(&kl.t_op, t_prev)) {
			fprintf(stderr,
			        "bench_tui_replay: press %d: no "
			        "run/pause call within 2 s\n",
			        i + 1);
			break;
		}
		int64_t top = atomic_load(&kl.t_op);
		int op = atomic_load(&kl.op);
		p->op_ms[p->n] = (double)(top - tw) / 1e6;
		if (op == last_op)
			p->nrepeat++;
		last_op = op;
		/* The state asked for (or the end of the run): a pause stops
		 * at the next publication (PAUSED) or dispatch (BREAK). */
		int64_t limit = ms_mono_ns() + 2000000000LL;
		enum ms_replay_state now_st;
		bool got;
		for (;;) {
			now_st = replay_state(p->r, st);
			got = op == OP_PAUSE ? now_st == MS_REPLAY_PAUSED ||
			                               now_st == MS_REPLAY_BREAK
			                     : now_st == MS_REPLAY_RUNNING;
			if (got || now_st == MS_REPLAY_DONE ||
			    ms_mono_ns() > limit)
				break;
			sleep_ns(200000);
		}
		int64_t ts = ms_mono_ns();
		double ms = (double)(ts - tw) / 1e6;
		if (!got) {
			p->nstate_miss++;
			p->miss_state = now_st;
		} else if (op == OP_PAUSE) {
			p->paused_ms[p->npaused++] = ms;
			if (ms > p->slow_ms) {
				p->slow_ms = ms;
				p->slow_phase = st->phase;
				p->slow_pub = st->pub_done;
				p->slow_pubs = st->pub_total;
				p->slow_merges = st->merges_done;
			}
		} else {
			p->running_ms[p->nrunning++] = ms;
		}
		/* The next frame after the call, then one drawn after the
		 * state changed, so the next press sees the new state. */
		if (wait_after(&kl.t_frame, top - 1))
			p->frame_ms[p->nframe++] =
			        (double)(atomic_load(&kl.t_frame) - tw) / 1e6;
		wait_after(&kl.t_out, ts);
		p->n++;
	}
	/* Leave it running so the day finishes. */
	for (int k = 0; k < 20 && replay_state(p->r, st) != MS_REPLAY_RUNNING &&
	                st->state != MS_REPLAY_DONE;
	     k++) {
		if (write(p->fd, " ", 1) != 1)
			break;
		sleep_ns(100000000LL);
	}
	free(st);
	ms_replay_wait(p->r, -1);
	p->t_done = ms_mono_ns();
	if (write(p->fd, "q", 1) != 1)
		perror("bench_tui_replay: write q");
	return NULL;
}

static double
pct(double *v, int n, double q)
{
	qsort(v, (size_t)n, sizeof(*v), bench_cmp_d);
	int i = (int)(q * (double)(n - 1) + 0.5);
	return v[i];
}

static void
print_lat(const char *what, double *v, int n)
{
	if (n == 0) {
		printf("  %-28s no samples\n", what);
		return;
	}
	double med = bench_median_d(v, n);
	double p90 = pct(v, n, 0.9), mx = pct(v, n, 1.0);
	int over = 0;
	for (int i = 0; i < n; i++)
		over += v[i] > 50.0;
	printf("  %-28s median %6.2f ms  p90 %6.2f ms  max %6.2f ms  "
	       "(%d/%d over 50 ms)\n",
	       what, med, p90, mx, over, n);
}

static void
run_keylat(int presses)
{
	ms_replay *r = open_replay("keys", 0);
	ms_tui_ctl ctl;
	ms_replay_ctl *adapter = NULL;
	if (ms_replay_ctl_new(&adapter, r, &ctl)) {
		fprintf(stderr, "bench_tui_replay: out of memory\n");
		exit(1);
	}
	kl.real = ctl.ops;
	kl.timed = *ctl.ops;
	kl.timed.run = timed_run;
	kl.timed.pause = timed_pause;
	ctl.ops = &kl.timed;
	atomic_store(&kl.t_op, 0);
	atomic_store(&kl.t_frame, 0);
	atomic_store(&kl.t_out, 0);

	int pi[2], po[2];
	if (pipe(pi) < 0 || pipe(po) < 0) {
		perror("pipe");
		exit(1);
	}
	FILE *in = fdopen(pi[0], "r");
	FILE *out = fdopen(po[1], "w");
	if (!in || !out) {
		perror("bench_tui_replay: terminal");
		exit(1);
	}
	ms_tui_opts o = { .in = in, .out = out, .term = "xterm-256color" };
	ms_errbuf eb = { "" };
	struct presser *p = calloc(1, sizeof(*p));
	if (!p) {
		perror("bench_tui_replay");
		exit(1);
	}
	p->r = r;
	p->fd = pi[1];
	p->presses = presses;
	pthread_t td, tp;
	pthread_create(&td, NULL, drain, &po[0]);
	p->t0 = ms_mono_ns();
	if (ms_replay_start(r, &eb)) {
		fprintf(stderr, "bench_tui_replay: %s\n", eb.msg);
		exit(1);
	}
	pthread_create(&tp, NULL, press_keys, p);
	int rc = ms_tui_run(&ctl, &o, &eb);
	pthread_join(tp, NULL);
	fclose(out); /* the drain thread sees the end */
	pthread_join(td, NULL);
	if (rc) {
		fprintf(stderr, "bench_tui_replay: tui: %s\n", eb.msg);
		exit(1);
	}
	bool ok = finished_ok(r);
	printf("key latency: %d space presses (pause/run alternating, 20-80 "
	       "ms apart) during the speed-max replay (%.3f s wall)\n",
	       p->n, (double)(p->t_done - p->t0) / 1e9);
	print_lat("key -> run/pause called", p->op_ms, p->n);
	print_lat("key -> next frame written", p->frame_ms, p->nframe);
	print_lat("key -> replay stopped", p->paused_ms, p->npaused);
	print_lat("key -> replay RUNNING", p->running_ms, p->nrunning);
	if (p->npaused)
		printf("  slowest stop %.2f ms: phase %s, publication "
		       "%llu/%llu, "
		       "%llu merges done\n",
		       p->slow_ms, ms_replay_phase_name(p->slow_phase),
		       (unsigned long long)p->slow_pub,
		       (unsigned long long)p->slow_pubs,
		       (unsigned long long)p->slow_merges);
	if (p->nrepeat || p->nstate_miss)
		printf("  (%d presses repeated the previous op; %d never saw "
		       "the state asked for within 2 s, last one %s)\n",
		       p->nrepeat, p->nstate_miss,
		       ms_replay_state_name(p->miss_state));
	printf("  target: keys answer within 50 ms\n");
	ms_replay_ctl_free(adapter);
	ms_replay_close(r);
	fclose(in);
	close(pi[1]);
	close(po[0]);
	free(p);
	if (!ok)
		exit(1);
}

static double
run_tui(int rep)
{
	/* As `mergescope tui` runs it: keeping its checkpoints. */
	ms_replay *r = open_replay_ck("tui", rep,
	                              MS_REPLAY_CHECKPOINT_EVERY_DEFAULT_NS);
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
	w.t0 = ms_mono_ns();
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

/* ---- seeking back ---------------------------------------------------- */

/* Poll until the run is stopped (or over); its state. */
static enum ms_replay_state
wait_stopped(ms_replay *r)
{
	ms_replay_status *st = malloc(sizeof(*st));
	if (!st)
		exit(1);
	enum ms_replay_state s;
	for (;;) {
		ms_replay_get_status(r, st);
		s = st->state;
		if (s == MS_REPLAY_BREAK || s == MS_REPLAY_PAUSED ||
		    s == MS_REPLAY_DONE || s == MS_REPLAY_FAILED)
			break;
		sleep_ns(200000);
	}
	free(st);
	return s;
}

static void
must(int rc, const ms_errbuf *eb, const char *what)
{
	if (rc) {
		fprintf(stderr, "bench_tui_replay: %s: %s\n", what, eb->msg);
		exit(1);
	}
}

/* From the stop at the target to the end of the day (not timed). */
static void
to_end(ms_replay *r)
{
	ms_errbuf eb = { "" };
	must(ms_replay_command(r, MS_RCMD_RUN, &eb), &eb, "run");
	ms_replay_wait(r, -1);
	if (!finished_ok(r))
		exit(1);
}

/* Before: a new replay from the day's start to merge n (what the TUI's
 * restart does: open it, close the old one, target, start). */
static double
back_restart(ms_replay **rp, uint64_t n, int k)
{
	ms_errbuf eb = { "" };
	int64_t t0 = ms_mono_ns();
	ms_replay *nr = open_replay("restart", k);
	ms_replay_close(*rp);
	*rp = nr;
	must(ms_replay_run_to_merge(nr, n, &eb), &eb, "run to");
	must(ms_replay_start(nr, &eb), &eb, "start");
	if (wait_stopped(nr) != MS_REPLAY_BREAK)
		exit(1);
	double s = (double)(ms_mono_ns() - t0) / 1e9;
	to_end(nr);
	return s;
}

/* After: back to the latest checkpoint before merge n, then to it. */
static double
back_checkpoint(ms_replay *r, uint64_t n)
{
	ms_errbuf eb = { "" };
	int64_t t0 = ms_mono_ns();
	must(ms_replay_seek_merge(r, n, &eb), &eb, "seek");
	must(ms_replay_run_to_merge(r, n, &eb), &eb, "run to");
	if (wait_stopped(r) != MS_REPLAY_BREAK)
		exit(1);
	double s = (double)(ms_mono_ns() - t0) / 1e9;
	to_end(r);
	return s;
}

static void
run_seek(int reps)
{
	static const uint64_t targets[] = { 10, 240 };
	ms_replay *a = open_replay("seek-restart", 0);
	ms_replay *b = open_replay_ck("seek-ckpt", 0,
	                              MS_REPLAY_CHECKPOINT_EVERY_DEFAULT_NS);
	ms_errbuf eb = { "" };
	/* One after the other: the first day, without and with taking
	 * checkpoints (one sample each: what keeping them costs). */
	int64_t t0 = ms_mono_ns();
	must(ms_replay_start(a, &eb), &eb, "start");
	ms_replay_wait(a, -1);
	int64_t t1 = ms_mono_ns();
	must(ms_replay_start(b, &eb), &eb, "start");
	ms_replay_wait(b, -1);
	int64_t t2 = ms_mono_ns();
	if (!finished_ok(a) || !finished_ok(b))
		exit(1);
	printf("  the day: without checkpoints %.3f s, with %.3f s\n",
	       (double)(t1 - t0) / 1e9, (double)(t2 - t1) / 1e9);
	double *x = calloc((size_t)reps, sizeof(double));
	double *y = calloc((size_t)reps, sizeof(double));
	if (!x || !y)
		exit(1);
	int k = 1;
	for (size_t t = 0; t < 2; t++) {
		for (int i = 0; i < reps; i++) {
			if (i % 2 == 0) {
				x[i] = back_restart(&a, targets[t], k++);
				y[i] = back_checkpoint(b, targets[t]);
			} else {
				y[i] = back_checkpoint(b, targets[t]);
				x[i] = back_restart(&a, targets[t], k++);
			}
			printf("  g #%llu from the end, rep %d: restart %.3f s"
			       "  checkpoint %.3f s\n",
			       (unsigned long long)targets[t], i + 1, x[i],
			       y[i]);
			fflush(stdout);
		}
		double mx = bench_median_d(x, reps);
		double my = bench_median_d(y, reps);
		printf("median g #%llu from the end: restart %.3f s  "
		       "checkpoint %.3f s  (%.1fx faster)\n",
		       (unsigned long long)targets[t], mx, my,
		       my > 0 ? mx / my : 0);
		fflush(stdout);
	}
	ms_replay_close(a);
	ms_replay_close(b);
	free(x);
	free(y);
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
	static const char usage[] =
	        "bench_tui_replay [PRESET [REPS 1..50 [PRESSES 0..1000 "
	        "[seek]]]]   (default: day-2x 3 50)";
	if (argc > 5 || (argc > 4 && strcmp(argv[4], "seek") != 0))
		bench_usage(usage);
	const char *preset = argc > 1 ? argv[1] : "day-2x";
	int reps = argc > 2 ? (int)bench_arg_ll(argv[2], 1, 50,
	                                        "bench_tui_replay: REPS", usage)
	                    : 3;
	int presses =
	        argc > 3 ? (int)bench_arg_ll(argv[3], 0, KL_MAX,
	                                     "bench_tui_replay: PRESSES", usage)
	                 : 50;
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

	if (argc > 4 && strcmp(argv[4], "seek") == 0) {
		printf("bench_tui_replay: %s, skywalking, speed max, going "
		       "back, %d reps (alternating)\n",
		       preset, reps);
		run_seek(reps);
		char rm[400];
		snprintf(rm, sizeof(rm), "rm -rf '%s'", work);
		return system(rm) != 0;
	}
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
	double mh = bench_median_d(h, reps), mt = bench_median_d(t, reps);
	printf("median   headless %.3f s  tui %.3f s  tui/headless %.3fx "
	       "(target <= 1.15x)\n",
	       mh, mt, mt / mh);
	fflush(stdout);
	if (presses > 0)
		run_keylat(presses);
	char cmd[400];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", work);
	if (system(cmd) != 0)
		fprintf(stderr, "bench_tui_replay: could not remove %s\n",
		        work);
	free(h);
	free(t);
	return 0;
}
