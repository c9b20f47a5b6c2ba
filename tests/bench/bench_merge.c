/*
 * bench_merge.c - throughput of one 15-input merge against the floor of
 * plain zstd decompress + compress of the same stored streams.
 *
 * Set-up (not timed): 36 raw parts of ~150,000 rows in total (about 4 rows
 * per trace, ~500 uncompressed bytes per row, random-looking trace IDs,
 * ~15% of traces with a fragment in the next raw part) are written into a
 * seed shard, then pre-merged into 15 inputs of mixed depth: 6 raw parts
 * (depth 0), 6 outputs of 3 raw parts (depth 1), 3 outputs of two depth-1
 * merges of 2 raw parts each (depth 2). Some traces stay fragmented across
 * the 15 inputs.
 *
 * Each repetition copies the seed shard, merges the 15 inputs into one
 * (core + both index children + publication) and, in the same run, times
 * the floor: every zstd unit of the inputs' core blocks (and of their index
 * chunks) decompressed and compressed again at the writer's level, from
 * memory. Prints medians of 5 repetitions and the ratio merge / floor.
 *
 * Usage: bench_merge [rows] [reps]     (defaults 150000, 5)
 */
#define _XOPEN_SOURCE 700 /* nftw */
#include "../merge_gen.h"
#include "ms_merge.h"
#include "ms_shard.h"
#include "ms_sidx.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#define NRAW 36
#define LEVEL 3

static int64_t
mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void
die(const char *what, const ms_errbuf *eb)
{
	fprintf(stderr, "bench_merge: %s: %s\n", what, eb ? eb->msg : "");
	exit(1);
}

static int
rm_cb(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(p);
}

static void
rm_tree(const char *dir)
{
	nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

static const char *copy_from, *copy_to;

static int
copy_cb(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)ftw;
	char dst[4096];
	snprintf(dst, sizeof(dst), "%s%s", copy_to, p + strlen(copy_from));
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

static void
copy_tree(const char *from, const char *to)
{
	copy_from = from;
	copy_to = to;
	if (nftw(from, copy_cb, 16, FTW_PHYS))
		die("copy shard", NULL);
}

static uint64_t
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

static uint64_t
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
static void
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

/* ---- the floor: the inputs' zstd units, decompressed and recompressed */

typedef struct unit {
	const uint8_t *p;
	size_t stored, raw;
} unit;

typedef struct floor_set {
	uint8_t *mem;
	size_t len, cap;
	unit *u;
	size_t n, ncap;
	size_t max_raw;
	uint64_t core_units;
} floor_set;

static void
floor_add_unit(floor_set *f, size_t off, size_t stored, size_t raw)
{
	if (f->n == f->ncap) {
		f->ncap = f->ncap ? f->ncap * 2 : 1024;
		f->u = realloc(f->u, f->ncap * sizeof(unit));
		if (!f->u)
			die("oom", NULL);
	}
	f->u[f->n].p = (const uint8_t *)(uintptr_t)off; /* fixed up later */
	f->u[f->n].stored = stored;
	f->u[f->n].raw = raw;
	f->n++;
	if (raw > f->max_raw)
		f->max_raw = raw;
}

static void
floor_append(floor_set *f, const uint8_t *p, size_t n)
{
	if (f->len + n > f->cap) {
		f->cap = (f->len + n) * 2;
		f->mem = realloc(f->mem, f->cap);
		if (!f->mem)
			die("oom", NULL);
	}
	memcpy(f->mem + f->len, p, n);
	f->len += n;
}

/* Core blocks through the iterator's raw view (layout: core/FORMAT.md,
 * "Part": a 152-byte block header with the stored/raw sizes of units A
 * and B at offsets 12..27, then the two zstd units). */
static void
floor_core(floor_set *f, const ms_part *p)
{
	ms_part_iter *it = NULL;
	ms_errbuf eb = { { 0 } };
	if (ms_part_iter_open(&it, p, NULL, NULL, &eb))
		die("iter", &eb);
	const ms_block_info *bi;
	int rc;
	while ((rc = ms_part_iter_next(it, &bi, &eb)) == 1) {
		ms_raw_block raw;
		if (ms_part_iter_raw(it, &raw, &eb))
			die("raw", &eb);
		const uint8_t *b = raw.bytes;
		size_t as = ms_le32(b + 12), ar = ms_le32(b + 16);
		size_t bs = ms_le32(b + 20), br = ms_le32(b + 24);
		size_t at = f->len;
		floor_append(f, b + 152, as + bs);
		floor_add_unit(f, at, as, ar);
		floor_add_unit(f, at + as, bs, br);
		f->core_units += 2;
	}
	if (rc < 0)
		die("iter next", &eb);
	ms_part_iter_close(it);
}

/* Index parts: the data file is a sequence of 32-byte chunk headers
 * (magic "MSX1", nrows, stored, raw, ...) each followed by its payload. */
static void
floor_index(floor_set *f, const ms_part *p)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/data", ms_part_dir(p));
	FILE *fp = fopen(path, "rb");
	if (!fp)
		die(path, NULL);
	uint8_t hdr[32];
	while (fread(hdr, 1, 32, fp) == 32 && memcmp(hdr, "MSX1", 4) == 0) {
		size_t stored = ms_le32(hdr + 8), raw = ms_le32(hdr + 12);
		uint8_t *buf = malloc(stored ? stored : 1);
		if (!buf || fread(buf, 1, stored, fp) != stored)
			die("index chunk", NULL);
		size_t at = f->len;
		floor_append(f, buf, stored);
		floor_add_unit(f, at, stored, raw);
		free(buf);
	}
	fclose(fp);
}

/* Decompress and recompress every unit; returns ns. */
static int64_t
floor_run(floor_set *f, bool with_index, uint64_t *out_bytes)
{
	ZSTD_DCtx *d = ZSTD_createDCtx();
	ZSTD_CCtx *c = ZSTD_createCCtx();
	size_t ccap = ZSTD_compressBound(f->max_raw);
	uint8_t *raw = malloc(f->max_raw + 1), *cmp = malloc(ccap);
	if (!d || !c || !raw || !cmp)
		die("oom", NULL);
	uint64_t total = 0;
	size_t n = with_index ? f->n : f->core_units;
	int64_t t0 = mono();
	for (size_t i = 0; i < n; i++) {
		const unit *u = &f->u[i];
		const uint8_t *src = f->mem + (uintptr_t)u->p;
		size_t r = ZSTD_decompressDCtx(d, raw, f->max_raw + 1, src,
		                               u->stored);
		if (ZSTD_isError(r)) /* a unit stored uncompressed */
			r = u->stored;
		size_t z = ZSTD_compressCCtx(c, cmp, ccap, raw, r, LEVEL);
		if (ZSTD_isError(z))
			die("zstd compress", NULL);
		total += z;
	}
	int64_t t = mono() - t0;
	*out_bytes = total;
	ZSTD_freeDCtx(d);
	ZSTD_freeCCtx(c);
	free(raw);
	free(cmp);
	return t;
}

/* The same bytes as one bulk stream: every unit decompressed into one
 * buffer (not timed), then compressed and decompressed in 1 MiB frames.
 * This is the floor without per-unit overhead, for context. */
static int64_t
floor_bulk(floor_set *f)
{
	ZSTD_DCtx *d = ZSTD_createDCtx();
	ZSTD_CCtx *c = ZSTD_createCCtx();
	size_t total = 0;
	for (size_t i = 0; i < f->core_units; i++)
		total += f->u[i].raw;
	uint8_t *all = malloc(total + f->max_raw + 1);
	size_t at = 0;
	for (size_t i = 0; i < f->core_units; i++) {
		size_t r = ZSTD_decompressDCtx(d, all + at, f->max_raw + 1,
		                               f->mem + (uintptr_t)f->u[i].p,
		                               f->u[i].stored);
		at += ZSTD_isError(r) ? 0 : r;
	}
	size_t frame = 1u << 20, ccap = ZSTD_compressBound(frame);
	uint8_t *cmp = malloc(ccap), *back = malloc(frame);
	if (!d || !c || !all || !cmp || !back)
		die("oom", NULL);
	int64_t t0 = mono();
	for (size_t off = 0; off < at; off += frame) {
		size_t n = at - off < frame ? at - off : frame;
		size_t z = ZSTD_compressCCtx(c, cmp, ccap, all + off, n, LEVEL);
		if (ZSTD_isError(z) ||
		    ZSTD_isError(ZSTD_decompressDCtx(d, back, frame, cmp, z)))
			die("zstd bulk", NULL);
	}
	int64_t t = mono() - t0;
	ZSTD_freeDCtx(d);
	ZSTD_freeCCtx(c);
	free(all);
	free(cmp);
	free(back);
	return t;
}

static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

static int64_t
median(int64_t *v, int n)
{
	qsort(v, (size_t)n, sizeof(int64_t), cmp_i64);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int
main(int argc, char **argv)
{
	size_t rows = argc > 1 ? strtoul(argv[1], NULL, 10) : 150000;
	int reps = argc > 2 ? atoi(argv[2]) : 5;
	if (reps < 1 || reps > 99 || rows < 1000)
		die("usage: bench_merge [rows>=1000] [reps 1..99]", NULL);
	const char *t = getenv("TMPDIR");
	char base[256], seed[300], run[300];
	snprintf(base, sizeof(base), "%s/ms-bench-merge-XXXXXX",
	         t ? t : "/tmp");
	if (!mkdtemp(base))
		die("mkdtemp", NULL);
	snprintf(seed, sizeof(seed), "%s/seed", base);
	snprintf(run, sizeof(run), "%s/run", base);
	uint64_t ids[15];
	int64_t tb = mono();
	build_seed(seed, rows, ids);
	printf("bench_merge: seed shard of 15 inputs built in %.2f s\n",
	       (double)(mono() - tb) / 1e9);

	int64_t mw[99], mc[99], fw[99], fwi[99], fb[99];
	ms_merge_result res;
	uint64_t fbytes = 0;
	for (int r = 0; r < reps; r++) {
		rm_tree(run);
		copy_tree(seed, run);
		ms_shard *s = NULL;
		ms_errbuf eb = { { 0 } };
		ms_shard_opts o = { .dir = run };
		if (ms_shard_open(&s, &o, &eb))
			die("open run shard", &eb);
		/* The floor's input: the same inputs' stored streams. */
		floor_set fs;
		memset(&fs, 0, sizeof(fs));
		ms_view *v = NULL;
		if (ms_shard_view(s, &v, &eb))
			die("view", &eb);
		for (int i = 0; i < 15; i++)
			floor_core(&fs, ms_view_find(v, ids[i], MS_KIND_CORE));
		for (int i = 0; i < 15; i++) {
			floor_index(&fs,
			            ms_view_find(v, ids[i], MS_KIND_LATENCY));
			floor_index(&fs, ms_view_find(v, ids[i],
			                              MS_KIND_START_TIME));
		}
		ms_view_release(v);
		ms_mem mem;
		ms_mem_init(&mem, NULL);
		ms_merge_req req = {
			.shard = s,
			.inputs = ids,
			.ninputs = 15,
			.seq = (uint64_t)r + 1,
			.lane = MS_LANE_SLOW,
			.parent_mem = &mem,
			.zstd_level = LEVEL,
		};
		/* Alternate the order so neither side always runs warm. */
		if (r % 2 == 0) {
			if (ms_merge_execute(&req, &res, &eb))
				die("merge", &eb);
			fw[r] = floor_run(&fs, false, &fbytes);
			fwi[r] = floor_run(&fs, true, &fbytes);
		} else {
			fw[r] = floor_run(&fs, false, &fbytes);
			fwi[r] = floor_run(&fs, true, &fbytes);
			if (ms_merge_execute(&req, &res, &eb))
				die("merge", &eb);
		}
		fb[r] = floor_bulk(&fs);
		mw[r] = res.wall_ns;
		mc[r] = res.cpu_ns;
		free(fs.mem);
		free(fs.u);
		ms_shard_close(s);
	}
	rm_tree(base);

	int64_t w = median(mw, reps), c = median(mc, reps);
	int64_t f = median(fw, reps), fi = median(fwi, reps);
	int64_t fbk = median(fb, reps);
	double secs = (double)w / 1e9;
	double in_mb = (double)res.input_compressed_bytes / 1e6;
	double in_umb = (double)res.input_uncompressed_bytes / 1e6;
	printf("inputs: 15 parts, depths 0-%u, %llu rows, %llu traces "
	       "(%llu fragmented over inputs), %.2f MB stored, %.2f MB "
	       "uncompressed\n",
	       res.max_input_depth, (unsigned long long)res.rows_in,
	       (unsigned long long)res.traces_in,
	       (unsigned long long)res.traces_fragmented, in_mb, in_umb);
	printf("blocks: %llu in, %llu copied raw (%.1f%%), %llu re-encoded, "
	       "%llu out\n",
	       (unsigned long long)res.blocks_in,
	       (unsigned long long)res.blocks_raw,
	       100.0 * (double)res.blocks_raw / (double)res.blocks_in,
	       (unsigned long long)res.blocks_reencoded,
	       (unsigned long long)res.blocks_out);
	printf("merge (median of %d): wall %.1f ms, thread cpu %.1f ms, "
	       "%.0f rows/s, %.1f MB/s stored, %.1f MB/s uncompressed\n",
	       reps, (double)w / 1e6, (double)c / 1e6,
	       (double)res.rows_in / secs, in_mb / secs, in_umb / secs);
	printf("merge split: read+write %.1f ms, finish %.1f ms, "
	       "indexes %.1f ms, publish %.1f ms (last rep)\n",
	       (double)res.stage_wall_ns[MS_MERGE_STAGE_READ] / 1e6,
	       (double)res.stage_wall_ns[MS_MERGE_STAGE_WRITE] / 1e6,
	       (double)res.stage_wall_ns[MS_MERGE_STAGE_INDEX] / 1e6,
	       (double)res.stage_wall_ns[MS_MERGE_STAGE_PUBLISH] / 1e6);
	printf("merge resources (last rep): %.1f MB allocated in %llu "
	       "allocations, peak live %.1f MB, %.1f MB read, %.1f MB "
	       "written, %llu fsyncs\n",
	       (double)res.alloc_bytes / 1e6,
	       (unsigned long long)res.alloc_count, (double)res.peak_live / 1e6,
	       (double)res.bytes_read / 1e6, (double)res.bytes_written / 1e6,
	       (unsigned long long)res.fsyncs);
	printf("floor zstd decompress+compress, core streams: %.1f ms; "
	       "core+index streams: %.1f ms\n",
	       (double)f / 1e6, (double)fi / 1e6);
	printf("ratio merge/floor: %.2fx (core streams), %.2fx (core+index "
	       "streams); target <= 2x\n",
	       (double)w / (double)f, (double)w / (double)fi);
	printf("context: the core bytes as one bulk stream (1 MiB frames) "
	       "take %.1f ms to compress+decompress; merge/bulk %.2fx\n",
	       (double)fbk / 1e6, (double)w / (double)fbk);
	return 0;
}
