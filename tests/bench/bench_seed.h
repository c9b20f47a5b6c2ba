/*
 * bench_seed.h - the seed shard shared by the merge benchmarks (bench-only,
 * header-only): 36 raw parts of generated rows (tests/merge_gen.h)
 * pre-merged into 15 inputs of depth 0, 1 and 2, plus helpers to copy a
 * shard directory, remove one, and take medians.
 *
 * The seed: ~4 spans per trace, ~500 uncompressed bytes per span, random-
 * order trace IDs spread over one day from GEN_T0, 15% of traces with a
 * fragment in the next raw part; raw parts 0..5 stay, 6..23 merge by 3
 * (depth 1), 24..35 merge by 2 and those by 2 (depth 2), so some traces
 * remain fragmented over the 15 inputs.
 *
 * The including file defines BENCH_NAME (for messages) before including.
 */
#ifndef MS_BENCH_SEED_H
#define MS_BENCH_SEED_H

#define _XOPEN_SOURCE 700 /* nftw */
#include "ms_clock.h"
#include "../merge_gen.h"
#include "ms_fs.h"
#include "ms_merge.h"
#include "ms_shard.h"
#include "ms_sidx.h"
#include "bench_stats.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef BENCH_NAME
#define BENCH_NAME "bench"
#endif
#define NRAW 36
#define LEVEL 3

static inline void
die(const char *what, const ms_errbuf *eb)
{
	fprintf(stderr, BENCH_NAME ": %s: %s\n", what, eb ? eb->msg : "");
	exit(1);
}

static inline void
rm_tree(const char *dir)
{
	ms_fs_rm_tree(dir, NULL);
}

static const char *bench_copy_from, *bench_copy_to;

static inline int
copy_cb(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)ftw;
	char dst[4096];
	snprintf(dst, sizeof(dst), "%s%s", bench_copy_to,
	         p + strlen(bench_copy_from));
	if (flag == FTW_D)
		return mkdir(dst, st->st_mode & 0777) && errno != EEXIST;
	int in = open(p, O_RDONLY), out = open(dst, O_WRONLY | O_CREAT, 0644);
	if (in < 0 || out < 0)
		return 1;
	char buf[1 << 16];
	ssize_t n;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			return 1;
	close(in);
	close(out);
	return 0;
}

static inline void
copy_tree(const char *from, const char *to)
{
	bench_copy_from = from;
	bench_copy_to = to;
	if (nftw(from, copy_cb, 16, FTW_PHYS))
		die("copy shard", NULL);
}

/* A fresh copy of the seed shard at run, opened (what dies says). */
static inline ms_shard *
fresh_run(const char *seed, const char *run, const char *what)
{
	rm_tree(run);
	copy_tree(seed, run);
	ms_shard *s = NULL;
	ms_errbuf eb = { { 0 } };
	ms_shard_opts o = { .dir = run };
	if (ms_shard_open(&s, &o, &eb))
		die(what, &eb);
	return s;
}

static inline uint64_t
put(ms_shard *s, gen_set *g)
{
	ms_errbuf eb = { { 0 } };
	uint64_t id;
	char tmp[MS_KIND_COUNT][4096];
	if (ms_shard_new_id(s, &id, &eb))
		die("new id", &eb);
	for (int k = 0; k < MS_KIND_COUNT; k++)
		ms_shard_tmp_path(s, (enum ms_part_kind)k, id, tmp[k], 4096);
	ms_part_writer_opts wo = { .zstd_level = LEVEL };
	ms_part_meta m;
	if (ms_part_write_rows(tmp[MS_KIND_CORE], id, gen_rows(g), g->n, &wo,
	                       &m, &eb))
		die("write core", &eb);
	for (int k = MS_KIND_LATENCY; k <= MS_KIND_START_TIME; k++)
		if (ms_sidx_write_rows((enum ms_part_kind)k, tmp[k], id,
		                       g->rows, g->n, &wo, &m, &eb))
			die("write index", &eb);
	if (ms_shard_introduce(s, id, &eb))
		die("introduce", &eb);
	return id;
}

static inline uint64_t
merge(ms_shard *s, const uint64_t *ids, size_t n, ms_merge_result *res)
{
	ms_errbuf eb = { { 0 } };
	ms_merge_req req = {
		.shard = s,
		.inputs = ids,
		.ninputs = n,
		.lane = MS_LANE_SLOW,
		.zstd_level = LEVEL,
	};
	if (ms_merge_execute(&req, res, &eb))
		die("merge", &eb);
	return res->output_id;
}

/* Build the seed shard; returns the 15 input IDs in *ids. */
static inline void
build_seed(const char *dir, size_t rows, uint64_t ids[15])
{
	ms_shard *s = NULL;
	ms_errbuf eb = { { 0 } };
	ms_shard_opts o = { .dir = dir, .create = true };
	if (ms_shard_open(&s, &o, &eb))
		die("open seed", &eb);
	gen_set g[NRAW];
	memset(g, 0, sizeof(g));
	size_t ntr = rows / 4;
	for (size_t t = 0; t < ntr; t++) {
		size_t home = t * NRAW / ntr;
		uint64_t h = gen_mix(t);
		uint64_t id = h >> 16; /* random order of trace IDs */
		uint32_t nsp = 2 + (uint32_t)(h % 5); /* 2..6, mean 4 */
		bool frag = (h >> 8) % 100 < 15 && home + 1 < NRAW;
		for (uint32_t k = 0; k < nsp; k++) {
			size_t at = (frag && k == nsp - 1) ? home + 1 : home;
			gen_add(&g[at], id, k,
			        330 + (uint32_t)((h >> 20) % 60));
		}
	}
	uint64_t raw[NRAW];
	for (int i = 0; i < NRAW; i++) {
		raw[i] = put(s, &g[i]);
		gen_free(&g[i]);
	}
	/* Raw parts 0..5 stay; 6..23 merge by 3 (depth 1); 24..35 merge by
	 * 2, then those by 2 (depth 2). Neighbours merge, so the fragments
	 * crossing into a neighbour are mostly reunited before the measured
	 * merge, as in a real shard; the rest stay fragmented. */
	size_t n = 0;
	for (int i = 0; i < 6; i++)
		ids[n++] = raw[i];
	ms_merge_result r;
	for (int i = 6; i < 24; i += 3)
		ids[n++] = merge(s, &raw[i], 3, &r);
	for (int i = 24; i < 36; i += 4) {
		uint64_t d1[2];
		d1[0] = merge(s, &raw[i], 2, &r);
		d1[1] = merge(s, &raw[i + 2], 2, &r);
		ids[n++] = merge(s, d1, 2, &r);
	}
	ms_shard_close(s);
}

#endif
