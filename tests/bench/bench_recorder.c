/*
 * bench_recorder.c - what recording a merge event costs, so that the
 * "recording costs < 3% of run wall" claim can be computed: a run's
 * recording overhead is about (merge events × per-event cost + other events
 * × their cost) / run wall, and ms_rec_stats.busy_ns measures the same
 * thing inside a real run.
 *
 * Prints medians over repetitions of: one merge event (12 inputs, 2 chain
 * links) with the default grouping (64 events / 100 ms), the same with a
 * commit after every event (the two alternating which goes first), one
 * publication event, and the median wall per day-2x-sized run (3,219
 * publications, 3,219 lifecycle events, 292 merges) against a 10 s run.
 * No time is asserted.
 */
#include "ms_clock.h"
#include "ev_fixture.h"
#include "ms_replay_events.h"
#include "bench_args.h"
#include "bench_stats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define REPS 7

static ms_rec *
open_rec(const char *path, uint32_t batch)
{
	ms_rec *r = NULL;
	ms_errbuf eb;
	ms_rec_opts o = { .path = path,
		          .overwrite = true,
		          .batch_events = batch };
	if (ms_rec_open(&r, &o, &eb) < 0) {
		fprintf(stderr, "%s\n", eb.msg);
		exit(1);
	}
	return r;
}

/* ns per merge event over n events, the recorder closed at the end. */
static int64_t
merges(const char *path, uint32_t batch, int n)
{
	ms_rec *r = open_rec(path, batch);
	ms_ev_input in[16];
	ms_errbuf eb;
	int64_t t0 = ms_mono_ns();
	for (int s = 1; s <= n; s++) {
		ms_ev_merge m;
		evf_merge(&m, in, (uint64_t)s, 1000000, true);
		m.ninputs = 12;
		if (ms_rec_merge(r, &m, &eb) < 0) {
			fprintf(stderr, "%s\n", eb.msg);
			exit(1);
		}
	}
	ms_rec_close(r, &eb);
	return (ms_mono_ns() - t0) / n;
}

static int64_t
pubs(const char *path, int n)
{
	ms_rec *r = open_rec(path, 0);
	ms_errbuf eb;
	int64_t t0 = ms_mono_ns();
	for (int s = 0; s < n; s++) {
		ms_ev_pub p;
		evf_pub(&p, (uint64_t)s);
		ms_rec_pub(r, &p, &eb);
	}
	ms_rec_close(r, &eb);
	return (ms_mono_ns() - t0) / n;
}

/* A day-2x-shaped run's events; returns the wall of recording them. */
static int64_t
day(const char *path)
{
	ms_rec *r = open_rec(path, 0);
	ms_errbuf eb;
	ms_ev_input in[16];
	ms_ev_run run;
	evf_run(&run, "skywalking");
	int64_t t0 = ms_mono_ns();
	ms_rec_run_begin(r, &run, &eb);
	for (int s = 0; s < 3219; s++) {
		ms_ev_pub p;
		evf_pub(&p, (uint64_t)s);
		ms_rec_pub(r, &p, &eb);
		ms_ev_part pe = { .what = MS_EV_PART_INTRODUCED,
			          .part_id = (uint64_t)s + 1 };
		ms_rec_part(r, &pe, &eb);
		if (s % 11 == 10) {
			ms_ev_merge m;
			evf_merge(&m, in, (uint64_t)s / 11 + 1, 300, true);
			ms_rec_merge(r, &m, &eb);
		}
	}
	ms_ev_run_end e;
	evf_end(&e, &run, 300);
	ms_rec_run_end(r, &e, &eb);
	ms_rec_close(r, &eb);
	return ms_mono_ns() - t0;
}

int
main(int argc, char **argv)
{
	if (argc > 2)
		bench_usage("bench_recorder [DIR]");
	char dir[256];
	if (argc > 1)
		snprintf(dir, sizeof(dir), "%s", argv[1]);
	else {
		snprintf(dir, sizeof(dir), "/tmp/ms-bench-recorder-XXXXXX");
		if (!mkdtemp(dir))
			return 1;
	}
	char path[512];
	snprintf(path, sizeof(path), "%s/bench.db", dir);
	int64_t grouped[REPS], each[REPS], pub[REPS], whole[REPS];
	for (int i = 0; i < REPS; i++) {
		/* Grouped and commit-each alternate which goes first. */
		if (i % 2 == 0) {
			grouped[i] = merges(path, 0, 2000);
			each[i] = merges(path, 1, 500);
		} else {
			each[i] = merges(path, 1, 500);
			grouped[i] = merges(path, 0, 2000);
		}
		pub[i] = pubs(path, 5000);
		whole[i] = day(path);
	}
	int64_t g = bench_median_i64(grouped, REPS),
	        e = bench_median_i64(each, REPS);
	int64_t p = bench_median_i64(pub, REPS),
	        w = bench_median_i64(whole, REPS);
	printf("bench_recorder (median of %d; database on %s)\n", REPS, dir);
	printf("  merge event, grouped commits   %8.1f us\n", (double)g / 1e3);
	printf("  merge event, commit each       %8.1f us   (%.1fx grouped)\n",
	       (double)e / 1e3, (double)e / (double)g);
	printf("  publication event, grouped     %8.1f us\n", (double)p / 1e3);
	printf("  day-2x event volume            %8.1f ms   = %.2f%% of a 10 s "
	       "run\n",
	       (double)w / 1e6, 100.0 * (double)w / 1e10);
	unlink(path);
	if (argc <= 1)
		rmdir(dir);
	return 0;
}
