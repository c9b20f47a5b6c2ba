/*
 * bench_recorder.c - what recording a merge event costs, so that the
 * "recording costs < 3% of run wall" claim can be computed: a run's
 * recording overhead is about (merge events × per-event cost + other events
 * × their cost) / run wall, and ms_rec_stats.busy_ns measures the same
 * thing inside a real run.
 *
 * Prints medians over repetitions of: one merge event (12 inputs, 2 chain
 * links) with the default grouping (256 events / 100 ms), the same with a
 * commit after every event (the two alternating which goes first), one
 * publication event, and the median wall of recording a day-2x run's
 * events (below) as a share of a run's wall (RUN_WALL_S, default 2 s,
 * about what day-2x takes on tmpfs), with the recorder's own figure for
 * it (ms_rec_stats.busy_ns, what a run reports as its recording time)
 * and the callers' share of that (queue_ns: the time the calls took,
 * the SQLite work being on the recorder's thread).
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

/* The day-2x run's event volume (skywalking, cpus=2,mem=4g: 3,219
 * publications, 252 merges of 3,470 inputs, and a lifecycle row per part
 * event: introduced per publication and per merge output, removed per
 * input, 6,941 rows), in the run's order: a merge after every 12 or 13
 * publications. */
#define DAY_PUBS 3219
#define DAY_MERGES 252
#define DAY_INPUTS 3470

static void
day_parts(ms_rec *r, enum ms_ev_part_kind what, uint64_t id,
          const char *cause, uint64_t seq)
{
	ms_errbuf eb;
	ms_ev_part pe = { .what = what, .part_id = id, .cause_seq = seq };
	snprintf(pe.cause, sizeof(pe.cause), "%s", cause);
	ms_rec_part(r, &pe, &eb);
}

static void
day_merge(ms_rec *r, uint64_t seq, uint64_t *next_in, uint64_t out_id)
{
	ms_errbuf eb;
	ms_ev_input in[16];
	ms_ev_merge m;
	evf_merge(&m, in, seq, DAY_MERGES, true);
	/* 3,470 inputs over 252 merges: 194 of 14 and 58 of 13 (evf_merge
	 * made 8 to 15; more are copies of its first). */
	size_t made = m.ninputs;
	m.ninputs = seq <= 194 ? 14 : 13;
	for (size_t i = made; i < m.ninputs; i++)
		in[i] = in[i - made];
	for (size_t i = 0; i < m.ninputs; i++)
		day_parts(r, MS_EV_PART_REMOVED, (*next_in)++, "merge", seq);
	day_parts(r, MS_EV_PART_INTRODUCED, out_id, "merge", seq);
	/* As the run does: its parts, the merge, and a commit before the
	 * engine counts the merge done (the merge is durable once done). */
	ms_rec_merge(r, &m, &eb);
	ms_rec_flush(r, &eb);
}

/* Returns the wall of recording the day's events; *busy and *queue: the
 * recorder's busy_ns and queue_ns for them. */
static int64_t
day(const char *path, int64_t *busy, int64_t *queue)
{
	ms_rec *r = open_rec(path, 0);
	ms_errbuf eb;
	ms_ev_run run;
	evf_run(&run, "skywalking");
	int64_t t0 = ms_mono_ns();
	ms_rec_run_begin(r, &run, &eb);
	uint64_t next_in = 1, seq = 0;
	for (int s = 0; s < DAY_PUBS; s++) {
		ms_ev_pub p;
		evf_pub(&p, (uint64_t)s);
		ms_rec_pub(r, &p, &eb);
		day_parts(r, MS_EV_PART_INTRODUCED, (uint64_t)s + 1,
		          "publication", (uint64_t)s);
		if (seq < DAY_MERGES &&
		    (uint64_t)(s + 1) * DAY_MERGES / DAY_PUBS > seq) {
			seq++;
			day_merge(r, seq, &next_in, DAY_PUBS + seq);
		}
	}
	ms_ev_run_end e;
	evf_end(&e, &run, DAY_MERGES);
	ms_rec_run_end(r, &e, &eb); /* the queue is written before it */
	ms_rec_index(r, &eb); /* as the run does, before reading its time */
	ms_rec_stats st;
	ms_rec_stats_get(r, &st);
	*busy = st.busy_ns;
	*queue = st.queue_ns;
	ms_rec_close(r, &eb);
	return ms_mono_ns() - t0;
}

int
main(int argc, char **argv)
{
	/* The run the share is of: a day-2x run's wall (its report's status
	 * line gives it; about 2 s on tmpfs at cpus=2,mem=4g). */
	double run_s = 2.0;
	char *end = NULL;
	if (argc > 2)
		run_s = strtod(argv[2], &end);
	if (argc > 3 || (argc > 2 && (end == argv[2] || *end)) ||
	    !(run_s > 0 && run_s <= 86400))
		bench_usage("bench_recorder [DIR [RUN_WALL_S]]  (RUN_WALL_S: "
		            "seconds, above 0)");
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
	int64_t busy[REPS], queue[REPS];
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
		whole[i] = day(path, &busy[i], &queue[i]);
	}
	int64_t g = bench_median_i64(grouped, REPS),
	        e = bench_median_i64(each, REPS);
	int64_t p = bench_median_i64(pub, REPS),
	        w = bench_median_i64(whole, REPS);
	int64_t b = bench_median_i64(busy, REPS),
	        q = bench_median_i64(queue, REPS);
	printf("bench_recorder (median of %d; database on %s)\n", REPS, dir);
	printf("  merge event, grouped commits   %8.1f us\n", (double)g / 1e3);
	printf("  merge event, commit each       %8.1f us   (%.1fx grouped)\n",
	       (double)e / 1e3, (double)e / (double)g);
	printf("  publication event, grouped     %8.1f us\n", (double)p / 1e3);
	printf("  day-2x event volume            %8.1f ms   = %.2f%% of a "
	       "%.2f s run (%d events)\n",
	       (double)w / 1e6, 100.0 * (double)w / (run_s * 1e9), run_s,
	       DAY_PUBS * 2 + DAY_MERGES * 2 + DAY_INPUTS);
	printf("  its recording time (busy_ns)   %8.1f ms   = %.2f%%, of which "
	       "the calls %.1f ms\n",
	       (double)b / 1e6, 100.0 * (double)b / (run_s * 1e9),
	       (double)q / 1e6);
	unlink(path);
	if (argc <= 1)
		rmdir(dir);
	return 0;
}
