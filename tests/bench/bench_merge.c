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
 * Most core blocks the merge copies raw, so that floor is far more zstd
 * work than the merge does; a second floor takes only the units the merge
 * re-encodes: the core blocks it did not copy (an input block whose stored
 * units are not among the output's, found after the first repetition's
 * merge, not timed) and the index chunks, each at its writer's level, and
 * the merge's wall is given against it too.
 *
 * Then the same for a small merge: 15 raw inputs of 10 rows each (150 rows,
 * as a fresh shard merges), and the merges' own allocation figures (bytes
 * and count allocated through the merge's ms_mem, peak live bytes; medians)
 * for both sizes side by side: what a merge costs in memory apart from its
 * data.
 *
 * Usage: bench_merge [rows] [reps]     (defaults 150000, 5)
 */
#define BENCH_NAME "bench_merge"
#include "bench_seed.h"
#include "bench_args.h"
#include "bench_pieces.h"
#include "merge_int.h"
#include "ms_rusage.h"

#include <xxhash.h>
#include <zstd.h>

/* The index stage's thread CPU time: the merge runs on this thread, and
 * its stage hook reads the thread's CPU clock as the index stage starts
 * and as the publication after it does (the hook is also called once per
 * block read and written, and returns at once then). */
typedef struct stage_cpu {
	int64_t at_index, index_ns;
} stage_cpu;

static int
stage_cpu_hook(void *arg, const ms_merge_req *req, enum ms_merge_stage st,
               uint64_t detail)
{
	(void)req;
	stage_cpu *sc = arg;
	if (detail)
		return 0;
	if (st == MS_MERGE_STAGE_INDEX)
		sc->at_index = ms_rusage_thread_cpu_ns();
	else if (st == MS_MERGE_STAGE_PUBLISH && sc->at_index)
		sc->index_ns = ms_rusage_thread_cpu_ns() - sc->at_index;
	return 0;
}

/* ---- the floor: the inputs' zstd units, decompressed and recompressed */

typedef struct unit {
	const uint8_t *p;
	size_t stored, raw;
	int level;      /* what the writer compresses it at */
	uint64_t block; /* core: its block's stored units (block_key) */
	bool reenc;     /* core: the merge re-encodes its block */
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
floor_add_unit(floor_set *f, size_t off, size_t stored, size_t raw, int level)
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
	f->u[f->n].level = level;
	f->u[f->n].block = 0;
	f->u[f->n].reenc = false;
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

/* A stored block's two units (b: its bytes, layout below): a block the
 * merge copies raw has the same key in its output. */
static uint64_t
block_key(const uint8_t *b, size_t as, size_t bs)
{
	return XXH3_64bits_withSeed(b + 152, as + bs, as);
}

/* Call fn(arg, block bytes, sizes of units A and B) for every block of
 * core part p, through the iterator's raw view (layout: core/FORMAT.md,
 * "Part": a 152-byte block header with the stored/raw sizes of units A
 * and B at offsets 12..27, then the two zstd units). */
static void
core_blocks(const ms_part *p,
            void (*fn)(void *arg, const uint8_t *b, size_t as, size_t bs),
            void *arg)
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
		fn(arg, raw.bytes, ms_le32(raw.bytes + 12),
		   ms_le32(raw.bytes + 20));
	}
	if (rc < 0)
		die("iter next", &eb);
	ms_part_iter_close(it);
}

static void
floor_core_block(void *arg, const uint8_t *b, size_t as, size_t bs)
{
	floor_set *f = arg;
	size_t ar = ms_le32(b + 16), br = ms_le32(b + 24);
	size_t at = f->len;
	uint64_t key = block_key(b, as, bs);
	floor_append(f, b + 152, as + bs);
	floor_add_unit(f, at, as, ar, LEVEL);
	floor_add_unit(f, at + as, bs, br, LEVEL);
	f->u[f->n - 2].block = f->u[f->n - 1].block = key;
	f->core_units += 2;
}

static void
floor_core(floor_set *f, const ms_part *p)
{
	core_blocks(p, floor_core_block, f);
}

/* The keys of the output's blocks, sorted: an input block among them was
 * copied raw, the others were re-encoded. */
typedef struct key_set {
	uint64_t *k;
	size_t n, cap;
} key_set;

static void
key_add(void *arg, const uint8_t *b, size_t as, size_t bs)
{
	key_set *ks = arg;
	if (ks->n == ks->cap) {
		ks->cap = ks->cap ? ks->cap * 2 : 4096;
		ks->k = realloc(ks->k, ks->cap * sizeof(*ks->k));
		if (!ks->k)
			die("oom", NULL);
	}
	ks->k[ks->n++] = block_key(b, as, bs);
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* Which of f's core blocks the merge re-encoded: those whose stored units
 * are not in output part out (core). Fills reenc[i] for core unit i;
 * returns the number of blocks copied raw. */
static uint64_t
mark_reencoded(const floor_set *f, const ms_part *out, bool *reenc)
{
	key_set ks = { 0 };
	core_blocks(out, key_add, &ks);
	if (ks.n > 1)
		qsort(ks.k, ks.n, sizeof(*ks.k), cmp_u64);
	uint64_t raw = 0;
	for (size_t i = 0; i < f->core_units; i += 2) {
		bool copied = ks.n && bsearch(&f->u[i].block, ks.k, ks.n,
		                              sizeof(*ks.k), cmp_u64);
		reenc[i] = reenc[i + 1] = !copied;
		raw += copied;
	}
	free(ks.k);
	return raw;
}

/* Index parts: the data section (from the file's start) is a sequence of
 * 32-byte chunk headers (magic "MSX1", nrows, stored, raw, ...) each
 * followed by its payload, 8 pieces (u8 codec, uvarint size, bytes) of
 * which codec 1 is a zstd frame, compressed at the index writer's default
 * level 1; the index section after it starts otherwise. */
static void
floor_index(floor_set *f, const ms_part *p)
{
	const char *path = ms_part_dir(p);
	FILE *fp = fopen(path, "rb");
	if (!fp)
		die(path, NULL);
	uint8_t hdr[32];
	while (fread(hdr, 1, 32, fp) == 32 && memcmp(hdr, "MSX1", 4) == 0) {
		size_t stored = ms_le32(hdr + 8);
		uint8_t *buf = malloc(stored ? stored : 1);
		if (!buf || fread(buf, 1, stored, fp) != stored)
			die("index chunk", NULL);
		size_t at = f->len;
		floor_append(f, buf, stored);
		for (size_t o = 0; o < stored;) {
			uint8_t codec;
			size_t size;
			if (!bench_piece(buf, stored, &o, &codec, &size))
				die("index chunk piece", NULL);
			unsigned long long raw =
			        ZSTD_getFrameContentSize(buf + o, size);
			if (codec == 1 && raw <= SIZE_MAX / 2)
				floor_add_unit(f, at + o, size, (size_t)raw, 1);
			o += size;
		}
		free(buf);
	}
	fclose(fp);
}

/* Decompress and recompress units [from, to) (the core's come first, then
 * the index chunks'), only those the merge re-encodes when reenc_only;
 * returns ns. */
static int64_t
floor_run(floor_set *f, size_t from, size_t to, bool reenc_only,
          uint64_t *out_bytes)
{
	ZSTD_DCtx *d = ZSTD_createDCtx();
	ZSTD_CCtx *c = ZSTD_createCCtx();
	size_t ccap = ZSTD_compressBound(f->max_raw);
	uint8_t *raw = malloc(f->max_raw + 1), *cmp = malloc(ccap);
	if (!d || !c || !raw || !cmp)
		die("oom", NULL);
	uint64_t total = 0;
	int64_t t0 = ms_mono_ns();
	for (size_t i = from; i < to; i++) {
		const unit *u = &f->u[i];
		if (reenc_only && !u->reenc)
			continue;
		const uint8_t *src = f->mem + (uintptr_t)u->p;
		size_t r = ZSTD_decompressDCtx(d, raw, f->max_raw + 1, src,
		                               u->stored);
		if (ZSTD_isError(r)) /* a unit stored uncompressed */
			r = u->stored;
		size_t z = ZSTD_compressCCtx(c, cmp, ccap, raw, r, u->level);
		if (ZSTD_isError(z))
			die("zstd compress", NULL);
		total += z;
	}
	int64_t t = ms_mono_ns() - t0;
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
	int64_t t0 = ms_mono_ns();
	for (size_t off = 0; off < at; off += frame) {
		size_t n = at - off < frame ? at - off : frame;
		size_t z = ZSTD_compressCCtx(c, cmp, ccap, all + off, n, LEVEL);
		if (ZSTD_isError(z) ||
		    ZSTD_isError(ZSTD_decompressDCtx(d, back, frame, cmp, z)))
			die("zstd bulk", NULL);
	}
	int64_t t = ms_mono_ns() - t0;
	ZSTD_freeDCtx(d);
	ZSTD_freeCCtx(c);
	free(all);
	free(cmp);
	free(back);
	return t;
}

/* The reference's own split of one merge's elapsed time, its only
 * figure for the index children's share (merge-optimization-plan.txt,
 * phase 6, the one-run diagnostic at 1% deletion): core and both
 * secondary-index children of its frozen 15-input selection of 147,126
 * rows, measured before phase 8 cut its core merge's CPU by 67.5%. */
#define REF_CORE_MS 2207.5
#define REF_INDEX_MS 401.7
#define REF_ROWS 147126.0

/* Prints the index stage beside the reference's: the share of the two
 * stages and each one's time per input row. core_ns and index_ns are
 * medians (core: read+write and finish). */
static void
reference_line(double core_ns, double index_ns, uint64_t rows)
{
	double n = (double)rows, core = core_ns / 1e6, idx = index_ns / 1e6;
	printf("beside the reference (its phase 6 diagnostic, 147126 rows): "
	       "core %.1f ms here, %.1f there; index %.1f ms here, %.1f "
	       "there; index share of the two %.1f%% here, %.1f%% there\n",
	       core, REF_CORE_MS, idx, REF_INDEX_MS, 100.0 * idx / (core + idx),
	       100.0 * REF_INDEX_MS / (REF_CORE_MS + REF_INDEX_MS));
	printf("  per input row: core %.3f us here, %.3f there (%.1fx "
	       "faster); index %.3f us here, %.3f there (%.1fx faster)\n",
	       1e3 * core / n, 1e3 * REF_CORE_MS / REF_ROWS,
	       (REF_CORE_MS / REF_ROWS) / (core / n), 1e3 * idx / n,
	       1e3 * REF_INDEX_MS / REF_ROWS,
	       (REF_INDEX_MS / REF_ROWS) / (idx / n));
}

/* Repetition r's merge of the 15 inputs ids of s on lane, with the zstd
 * contexts zc kept from merge to merge as an engine's worker keeps its
 * own (ms_merge_req.zctx). */
static ms_merge_req
merge_req(ms_shard *s, const uint64_t *ids, int r, const char *lane,
          ms_mem *mem, ms_zctx *zc)
{
	return (ms_merge_req){
		.zctx = zc,
		.shard = s,
		.inputs = ids,
		.ninputs = 15,
		.seq = (uint64_t)r + 1,
		.lane = lane,
		.parent_mem = mem,
		/* Each writer's default, as the engine merges: core blocks at
		 * LEVEL (3), index pieces at 1. */
		.zstd_level = 0,
	};
}

/* The small merge: a shard of 15 raw parts of `per` rows (3 spans per
 * trace) merged `reps` times from fresh copies; fills medians. */
#define SMALL_PER 10

typedef struct alloc_fig {
	int64_t bytes, count, peak, wall;
	uint64_t rows;
} alloc_fig;

static void
small_merge(const char *base, int reps, ms_zctx *zc, alloc_fig *out)
{
	char seed[400], run[400];
	snprintf(seed, sizeof(seed), "%s/small-seed", base);
	snprintf(run, sizeof(run), "%s/small-run", base);
	ms_shard *s = NULL;
	ms_errbuf eb = { { 0 } };
	ms_shard_opts o = { .dir = seed, .create = true };
	if (ms_shard_open(&s, &o, &eb))
		die("open small seed", &eb);
	uint64_t ids[15];
	for (int i = 0; i < 15; i++) {
		gen_set g;
		memset(&g, 0, sizeof(g));
		for (uint64_t t = 0; g.n < SMALL_PER; t++)
			for (uint32_t k = 0; k < 3 && g.n < SMALL_PER; k++)
				gen_add(&g,
				        gen_mix(1000 * (uint64_t)i + t) >> 16,
				        k, 350);
		ids[i] = put(s, &g);
		gen_free(&g);
	}
	ms_shard_close(s);
	int64_t b[99], c[99], pk[99], w[99];
	for (int r = 0; r < reps; r++) {
		s = fresh_run(seed, run, "open small run");
		ms_mem mem;
		ms_mem_init(&mem, NULL);
		ms_merge_req req = merge_req(s, ids, r, MS_LANE_FAST, &mem, zc);
		ms_merge_result res;
		if (ms_merge_execute(&req, &res, &eb))
			die("small merge", &eb);
		b[r] = (int64_t)res.alloc_bytes;
		c[r] = (int64_t)res.alloc_count;
		pk[r] = (int64_t)res.peak_live;
		w[r] = res.wall_ns;
		out->rows = res.rows_in;
		ms_shard_close(s);
	}
	out->bytes = bench_median_i64(b, reps);
	out->count = bench_median_i64(c, reps);
	out->peak = bench_median_i64(pk, reps);
	out->wall = bench_median_i64(w, reps);
}

int
main(int argc, char **argv)
{
	static const char usage[] =
	        "bench_merge [ROWS 1000..10000000 [REPS 1..99]]";
	if (argc > 3)
		bench_usage(usage);
	size_t rows = argc > 1
	                      ? (size_t)bench_arg_ll(argv[1], 1000, 10000000,
	                                             "bench_merge: ROWS", usage)
	                      : 150000;
	int reps = argc > 2 ? (int)bench_arg_ll(argv[2], 1, 99,
	                                        "bench_merge: REPS", usage)
	                    : 5;
	const char *t = getenv("TMPDIR");
	char base[256], seed[300], run[300];
	snprintf(base, sizeof(base), "%s/ms-bench-merge-XXXXXX",
	         t ? t : "/tmp");
	if (!mkdtemp(base))
		die("mkdtemp", NULL);
	snprintf(seed, sizeof(seed), "%s/seed", base);
	snprintf(run, sizeof(run), "%s/run", base);
	uint64_t ids[15];
	int64_t tb = ms_mono_ns();
	build_seed(seed, rows, ids);
	printf("bench_merge: seed shard of 15 inputs built in %.2f s\n",
	       (double)(ms_mono_ns() - tb) / 1e9);

	int64_t mw[99], mc[99], fw[99], fix[99], fwi[99], fb[99], ixw[99];
	int64_t ixc[99], srd[99], swr[99], spb[99];
	int64_t ab[99], ac[99], ap[99], fre[99], frei[99];
	ms_merge_result res;
	uint64_t fbytes = 0, ibytes = 0, rbytes = 0;
	/* Core units the merge re-encodes (by unit, as floor_core lists
	 * them; the same every repetition), known after the first merge. */
	bool *reenc = NULL;
	ms_zctx *zc = NULL;
	if (ms_zctx_new(&zc, NULL, NULL))
		die("zstd contexts", NULL);
	size_t nreenc = 0;
	uint64_t found_raw = 0, reenc_units = 0, reenc_rawb = 0;
	for (int r = 0; r < reps; r++) {
		ms_shard *s = fresh_run(seed, run, "open run shard");
		ms_errbuf eb = { { 0 } };
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
		if (reenc) {
			if (fs.core_units != nreenc)
				die("the inputs' core units differ between "
				    "repetitions",
				    NULL);
			for (size_t i = 0; i < nreenc; i++)
				fs.u[i].reenc = reenc[i];
		}
		ms_mem mem;
		ms_mem_init(&mem, NULL);
		ms_merge_req req = merge_req(s, ids, r, MS_LANE_SLOW, &mem, zc);
		stage_cpu sc = { 0, 0 };
		ms_merge_hooks hk = { .stage = stage_cpu_hook, .arg = &sc };
		/* Alternate the order so neither side always runs warm. */
		if (r % 2 == 0) {
			if (ms__merge_execute_hooked(&req, &hk, &res, &eb))
				die("merge", &eb);
			if (!reenc) { /* repetition 0, not timed */
				nreenc = fs.core_units;
				reenc = calloc(nreenc ? nreenc : 1, 1);
				if (!reenc || ms_shard_view(s, &v, &eb))
					die("view of the output", &eb);
				const ms_part *out = ms_view_find(
				        v, res.output_id, MS_KIND_CORE);
				if (!out)
					die("the merge's output is not in the "
					    "shard",
					    NULL);
				found_raw = mark_reencoded(&fs, out, reenc);
				ms_view_release(v);
				for (size_t i = 0; i < nreenc; i++) {
					fs.u[i].reenc = reenc[i];
					reenc_units += reenc[i];
					reenc_rawb +=
					        reenc[i] ? fs.u[i].raw : 0;
				}
			}
			fw[r] = floor_run(&fs, 0, fs.core_units, false,
			                  &fbytes);
			fix[r] = floor_run(&fs, fs.core_units, fs.n, false,
			                   &ibytes);
			fre[r] =
			        floor_run(&fs, 0, fs.core_units, true, &rbytes);
		} else {
			fw[r] = floor_run(&fs, 0, fs.core_units, false,
			                  &fbytes);
			fix[r] = floor_run(&fs, fs.core_units, fs.n, false,
			                   &ibytes);
			fre[r] =
			        floor_run(&fs, 0, fs.core_units, true, &rbytes);
			if (ms__merge_execute_hooked(&req, &hk, &res, &eb))
				die("merge", &eb);
		}
		/* Timed apart: a difference of two core+index runs was
		 * noise-sized beside the index's share of them. */
		fwi[r] = fw[r] + fix[r];
		frei[r] = fre[r] + fix[r];
		fbytes += ibytes;
		fb[r] = floor_bulk(&fs);
		mw[r] = res.wall_ns;
		mc[r] = res.cpu_ns;
		ixw[r] = res.stage_wall_ns[MS_MERGE_STAGE_INDEX];
		srd[r] = res.stage_wall_ns[MS_MERGE_STAGE_READ];
		swr[r] = res.stage_wall_ns[MS_MERGE_STAGE_WRITE];
		spb[r] = res.stage_wall_ns[MS_MERGE_STAGE_PUBLISH];
		ixc[r] = sc.index_ns;
		ab[r] = (int64_t)res.alloc_bytes;
		ac[r] = (int64_t)res.alloc_count;
		ap[r] = (int64_t)res.peak_live;
		free(fs.mem);
		free(fs.u);
		ms_shard_close(s);
	}
	/* The index stage's share per rep, paired before any median sorts
	 * mw (the median of the shares, not a ratio of medians). */
	int64_t share[99], cshare[99];
	for (int r = 0; r < reps; r++) {
		share[r] = mw[r] > 0 ? ixw[r] * 1000000 / mw[r] : 0;
		cshare[r] = mc[r] > 0 ? ixc[r] * 1000000 / mc[r] : 0;
	}
	/* The share an index stage would have if it did nothing but
	 * decompress and compress its chunks' pieces (the index streams'
	 * floor, timed on its own in the same repetition), the
	 * rest of the merge as measured. */
	int64_t ifloor[99], fshare[99];
	for (int r = 0; r < reps; r++) {
		ifloor[r] = fix[r];
		int64_t rest = mw[r] > ixw[r] ? mw[r] - ixw[r] : 0;
		fshare[r] = rest + ifloor[r] > 0
		                    ? ifloor[r] * 1000000 / (rest + ifloor[r])
		                    : 0;
	}
	/* The merge's wall over its re-encode floor, per repetition. */
	int64_t rratio[99];
	for (int r = 0; r < reps; r++)
		rratio[r] = frei[r] > 0 ? mw[r] * 1000 / frei[r] : 0;
	free(reenc);
	alloc_fig small = { 0 };
	small_merge(base, reps, zc, &small);
	ms_zctx_free(zc);
	rm_tree(base);

	int64_t w = bench_median_i64(mw, reps), c = bench_median_i64(mc, reps);
	int64_t f = bench_median_i64(fw, reps),
	        fi = bench_median_i64(fwi, reps);
	int64_t fbk = bench_median_i64(fb, reps);
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
	printf("merge split (medians of %d): read+write %.1f ms, finish "
	       "%.1f ms, indexes %.1f ms, publish %.1f ms\n",
	       reps, (double)bench_median_i64(srd, reps) / 1e6,
	       (double)bench_median_i64(swr, reps) / 1e6,
	       (double)bench_median_i64(ixw, reps) / 1e6,
	       (double)bench_median_i64(spb, reps) / 1e6);
	printf("index stage: %.1f ms median, %.1f%% of merge wall (median "
	       "of the per-repetition shares)\n",
	       (double)bench_median_i64(ixw, reps) / 1e6,
	       (double)bench_median_i64(share, reps) / 1e4);
	printf("index stage thread cpu: %.1f ms median, %.1f%% of the merge's "
	       "thread cpu (median of the per-repetition shares)\n",
	       (double)bench_median_i64(ixc, reps) / 1e6,
	       (double)bench_median_i64(cshare, reps) / 1e4);
	printf("index stage at its zstd floor: the index pieces alone take "
	       "%.1f ms to decompress+compress, %.1f%% of a merge whose index "
	       "stage did nothing else (medians of the per-repetition "
	       "figures)\n",
	       (double)bench_median_i64(ifloor, reps) / 1e6,
	       (double)bench_median_i64(fshare, reps) / 1e4);
	reference_line((double)(bench_median_i64(srd, reps) +
	                        bench_median_i64(swr, reps)),
	               (double)bench_median_i64(ixw, reps), res.rows_in);
	printf("merge resources (last rep): %.1f MB allocated in %llu "
	       "allocations, peak live %.1f MB, %.1f MB read, %.1f MB "
	       "written, %llu fsyncs\n",
	       (double)res.alloc_bytes / 1e6,
	       (unsigned long long)res.alloc_count, (double)res.peak_live / 1e6,
	       (double)res.bytes_read / 1e6, (double)res.bytes_written / 1e6,
	       (unsigned long long)res.fsyncs);
	printf("merge allocation (median of %d):\n", reps);
	printf("  %-26s %14s %14s\n", "15 inputs each", "large", "small");
	printf("  %-26s %14llu %14llu\n", "rows",
	       (unsigned long long)res.rows_in, (unsigned long long)small.rows);
	printf("  %-26s %14.3f %14.3f\n", "MB allocated per merge",
	       (double)bench_median_i64(ab, reps) / 1e6,
	       (double)small.bytes / 1e6);
	printf("  %-26s %14lld %14lld\n", "allocations per merge",
	       (long long)bench_median_i64(ac, reps), (long long)small.count);
	printf("  %-26s %14.3f %14.3f\n", "MB peak live",
	       (double)bench_median_i64(ap, reps) / 1e6,
	       (double)small.peak / 1e6);
	printf("  %-26s %14.1f %14.1f\n", "bytes allocated per row",
	       (double)bench_median_i64(ab, reps) / (double)res.rows_in,
	       (double)small.bytes / (double)small.rows);
	printf("  %-26s %14.2f %14.2f\n", "wall ms", (double)w / 1e6,
	       (double)small.wall / 1e6);
	printf("floor zstd decompress+compress, core streams: %.1f ms; "
	       "core+index streams: %.1f ms\n",
	       (double)f / 1e6, (double)fi / 1e6);
	printf("ratio merge/floor: %.2fx (core streams), %.2fx (core+index "
	       "streams); target <= 2x\n",
	       (double)w / (double)f, (double)w / (double)fi);
	printf("context: the core bytes as one bulk stream (1 MiB frames) "
	       "take %.1f ms to compress+decompress; merge/bulk %.2fx\n",
	       (double)fbk / 1e6, (double)w / (double)fbk);
	int64_t re = bench_median_i64(fre, reps),
	        rei = bench_median_i64(frei, reps);
	printf("floor of what the merge re-encodes: the %llu core blocks it "
	       "does not copy raw (%llu units, %.2f MB uncompressed; %llu "
	       "blocks of the inputs found unchanged in the output) at level "
	       "%d: %.1f ms; with the index chunks at level 1: %.1f ms\n",
	       (unsigned long long)(nreenc / 2 - found_raw),
	       (unsigned long long)reenc_units, (double)reenc_rawb / 1e6,
	       (unsigned long long)found_raw, LEVEL, (double)re / 1e6,
	       (double)rei / 1e6);
	printf("ratio merge/re-encode floor: %.2fx (medians), %.2fx (median "
	       "of the per-repetition ratios)\n",
	       (double)w / (double)rei,
	       (double)bench_median_i64(rratio, reps) / 1e3);
	return 0;
}
