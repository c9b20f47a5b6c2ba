/*
 * bench_checkpoint.c - what a checkpoint costs (core/checkpoint.c): taking
 * one of a shard of N active parts at merge-idle (links, a snapshot copy,
 * the state file), and going back to it (closing the engine and the
 * shard, restoring, reopening both with the saved state). Prints medians
 * of REPS runs for N = 30 (what a replay's shard holds at most) and 300;
 * asserts nothing.
 *
 * Run: build the `benches` target, then `build/tests/bench_checkpoint
 * [DIR]` (DIR: where the shard goes, default $TMPDIR or /tmp; its file
 * system decides the fsync costs of a restore).
 */
#include "ms_checkpoint.h"
#include "ms_clock.h"
#include "ms_engine.h"
#include "ms_fs.h"
#include "ms_shard.h"
#include "bench_args.h"
#include "bench_stats.h"
#include "shard_testlib.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define REPS 15

static void
die(const char *what, const ms_errbuf *eb)
{
	fprintf(stderr, "bench_checkpoint: %s: %s\n", what, eb->msg);
	exit(1);
}

/* n parts of 4 rows each, introduced. */
static void
fill(ms_shard *s, size_t n)
{
	ms_errbuf eb;
	for (size_t p = 0; p < n; p++) {
		ms_row rows[4];
		char tid[4][32];
		for (size_t i = 0; i < 4; i++) {
			memset(&rows[i], 0, sizeof(rows[i]));
			snprintf(tid[i], 32, "trace-%06zu-%zu", p, i);
			rows[i].trace_id = (const uint8_t *)tid[i];
			rows[i].trace_id_len = (uint32_t)strlen(tid[i]);
			rows[i].span_id = p * 4 + i;
			rows[i].service = "svc";
			rows[i].start_ns = 1700000000000000000LL +
			                   (int64_t)(p * 4 + i) * 1000;
		}
		uint64_t id;
		if (ms_shard_new_id(s, &id, &eb) ||
		    sh_write_tmp_kinds(s, id, rows, 4, NULL, &eb) ||
		    ms_shard_introduce(s, id, &eb))
			die("fill", &eb);
	}
}

static ms_engine *
engine(ms_shard *s, const ms_clock *clk, const ms_engine_state *resume)
{
	ms_errbuf eb;
	ms_engine *e;
	/* A multiple no selection reaches: the parts stay as they are. */
	ms_engine_opts o = { .shard = s,
		             .clock = clk,
		             .serial = true,
		             .picker = { .multiplier = 1e9 },
		             .resume = resume };
	if (ms_engine_open(&e, &o, &eb))
		die("engine", &eb);
	if (ms_engine_wait_idle(e, -1))
		die("idle", &eb);
	return e;
}

static void
one_size(const char *root, size_t nparts)
{
	char dir[4096], ck[4200];
	ms_errbuf eb;
	ms_shard *s;
	ms_clock clk;
	snprintf(dir, sizeof(dir), "%s/bench-ck-%d.shard", root, (int)getpid());
	snprintf(ck, sizeof(ck), "%s.ck", dir);
	ms_fs_rm_tree(dir, NULL);
	ms_fs_rm_tree(ck, NULL);
	ms_clock_init_logical(&clk, 1700000000000000000LL);
	ms_shard_opts so = { .dir = dir, .create = true };
	if (ms_shard_open(&s, &so, &eb))
		die("shard", &eb);
	fill(s, nparts);
	ms_engine *e = engine(s, &clk, NULL);
	double take[REPS], back[REPS];
	for (int r = 0; r < REPS; r++) {
		int64_t t0 = ms_mono_ns();
		if (ms_checkpoint_take(ck, s, e, "blob", 4, &eb))
			die("take", &eb);
		int64_t t1 = ms_mono_ns();
		ms_checkpoint c;
		ms_engine_close(e);
		ms_shard_close(s);
		if (ms_checkpoint_restore(ck, dir, &c, NULL, &eb))
			die("restore", &eb);
		so.create = false;
		if (ms_shard_open(&s, &so, &eb))
			die("reopen", &eb);
		e = engine(s, &clk, &c.engine);
		int64_t t2 = ms_mono_ns();
		ms_checkpoint_release(&c);
		ms_checkpoint_remove(ck, NULL);
		take[r] = (double)(t1 - t0) / 1e6;
		back[r] = (double)(t2 - t1) / 1e6;
	}
	printf("%4zu active parts: take %.3f ms, back (close, restore, "
	       "reopen, resume) %.3f ms (medians of %d)\n",
	       ms_shard_count(s), bench_median_d(take, REPS),
	       bench_median_d(back, REPS), REPS);
	ms_engine_close(e);
	ms_shard_close(s);
	ms_fs_rm_tree(dir, NULL);
}

int
main(int argc, char **argv)
{
	if (argc > 2)
		bench_usage("bench_checkpoint [DIR]");
	const char *root = argc > 1 ? argv[1] : getenv("TMPDIR");
	if (!root || !*root)
		root = "/tmp";
	one_size(root, 30);
	one_size(root, 300);
	return 0;
}
