/*
 * bench_pipeline.c - what sampling inside a merge costs: one 15-input merge
 * of ~150,000 rows run with the pipeline disabled and with the alwayskeep
 * plugin (the real .so from the build's plugin directory), side by side,
 * plus the SkyWalking default sampler and detdrop:35 for reference.
 *
 * Set-up (not timed): the seed shard of bench_seed.h (15 inputs of depth
 * 0..2, some traces fragmented over inputs). The logical clock is ten days
 * after the rows, so every input is mature and sampling executes. Staging
 * limits come from the reference container profile (cpus=2, mem=4g: a
 * 256 MiB hard ceiling), so the figures do not depend on this machine.
 *
 * Each repetition copies the seed into a fresh shard per variant and runs
 * the one merge; the order of the variants is reversed every other
 * repetition. The figures are the merge's own (ms_merge_result): wall,
 * thread CPU, bytes and count allocated through its allocator, peak live
 * bytes. Prints the medians per variant and the overhead ratios against
 * disabled (targets for alwayskeep: wall <= 1.05x, allocated bytes <=
 * 1.10x) and where each sampling variant's extra allocation goes (the
 * retained payload's arena against the rest, and the blocks decoded
 * while staging), and checks
 * that alwayskeep wrote byte-identical output (data checksum) and that
 * no sampling run handed a trace to Decide twice or with bounds other
 * than its fragments' (ms_merge_sampling checks). Last, per variant, the
 * index stage (both secondary-index children): its median wall, its
 * share of the merge's wall, its cost per index row and the rest of the
 * merge's per core row, beside the same figures of the reference's own
 * sampled merge (core and SIDX elapsed of its deletion sweep).
 *
 * Usage: bench_pipeline [rows] [reps] [variant]  (defaults 150000, 5)
 * With a variant name (disabled, alwayskeep, ...) only that variant runs,
 * once per rep, and only its figures are printed: for profiling one path
 * (valgrind --tool=callgrind --toggle-collect=ms_merge_execute).
 * TMPDIR decides the disk (default /dev/shm when present, else /tmp).
 * BENCH_STAGING=reread runs the sampling merges with --staging reread
 * (default retain, as mergescope runs them).
 */
#define BENCH_NAME "bench_pipeline"
#include "bench_seed.h"
#include "bench_args.h"
#include "ms_limits.h"
#include "ms_pipeline.h"

#include <string.h>

#define NVAR 4
#define MAXREP 99

static const char *const variants[NVAR] = { "disabled", "alwayskeep",
	                                    "skywalking", "detdrop:35" };

typedef struct sample {
	int64_t wall, cpu, bytes, count, peak;
	int64_t idx;   /* the index stage's wall (both children) */
	int64_t share; /* idx / wall, in millionths */
} sample;

/* The reference's own split of a sampled mature merge into core and
 * secondary-index time (merge-optimization-plan, the one-run diagnostic
 * of its deletion sweep: 147,126 rows, deterministic deletion at 1%, 35%
 * and 99%), ms. detdrop:35 is the like-for-like variant here. */
static const struct {
	const char *what;
	double core_ms, sidx_ms;
} ref_split[] = {
	{ "1%", 2207.5, 401.7 },
	{ "35%", 2138.1, 374.0 },
	{ "99%", 1936.0, 206.5 },
};
#define REF_ROWS 147126.0

static enum ms_staging_mode
staging_mode(void)
{
	enum ms_staging_mode m = MS_STAGING_RETAIN;
	const char *e = getenv("BENCH_STAGING");
	if (e && ms_staging_mode_parse(e, &m))
		fprintf(stderr,
		        "BENCH_STAGING=%s: expected retain or reread; "
		        "using retain\n",
		        e);
	return m;
}

static void
run_one(const char *seed, const char *run, const uint64_t ids[15], int v,
        int rep, const ms_limits *lim, sample *out, ms_merge_result *res)
{
	ms_shard *s = fresh_run(seed, run, "open run shard");
	ms_errbuf eb = { { 0 } };
	ms_mem pmem, mem;
	ms_mem_init(&pmem, NULL);
	ms_mem_init(&mem, NULL);
	ms_pipeline *p = NULL;
	if (v > 0) {
		ms_pipeline_opts po = {
			.spec = variants[v],
			.plugin_dir = MS_PLUGIN_DIR,
			.limits = lim,
			.mem = &pmem,
		};
		if (ms_pipeline_open(&p, &po, &eb))
			die(variants[v], &eb);
	}
	ms_merge_req req = {
		.shard = s,
		.inputs = ids,
		.ninputs = 15,
		.seq = (uint64_t)rep + 1,
		.lane = MS_LANE_SLOW,
		.parent_mem = &mem,
		.pipeline = p,
		.now_ns = GEN_T0 + 10LL * 86400 * 1000000000,
		/* A segment far from every generated trace: a merge given
		 * none does not sample (guard_unavailable). */
		.segment_min_ns = GEN_T0 - 30LL * 86400 * 1000000000,
		.segment_max_ns = GEN_T0 + 30LL * 86400 * 1000000000,
		.zstd_level = LEVEL,
		.staging = staging_mode(),
	};
	if (ms_merge_execute(&req, res, &eb))
		die("merge", &eb);
	out->wall = res->wall_ns;
	out->cpu = res->cpu_ns;
	out->bytes = (int64_t)res->alloc_bytes;
	out->count = (int64_t)res->alloc_count;
	out->peak = res->peak_live;
	out->idx = res->stage_wall_ns[MS_MERGE_STAGE_INDEX];
	out->share = res->wall_ns > 0 ? out->idx * 1000000 / res->wall_ns : 0;
	ms_pipeline_close(p);
	ms_shard_close(s);
}

static int64_t
med_of(sample *s, int n, size_t off)
{
	int64_t v[MAXREP];
	for (int i = 0; i < n; i++)
		v[i] = *(int64_t *)((char *)&s[i] + off);
	return bench_median_i64(v, n);
}

int
main(int argc, char **argv)
{
	static const char usage[] =
	        "bench_pipeline [ROWS 1000..10000000 [REPS 1..99 [VARIANT]]]"
	        "\n  VARIANT: disabled, alwayskeep, skywalking or detdrop:35";
	if (argc > 4)
		bench_usage(usage);
	size_t rows =
	        argc > 1 ? (size_t)bench_arg_ll(argv[1], 1000, 10000000,
	                                        "bench_pipeline: ROWS", usage)
	                 : 150000;
	int reps = argc > 2 ? (int)bench_arg_ll(argv[2], 1, MAXREP,
	                                        "bench_pipeline: REPS", usage)
	                    : 5;
	int only = -1;
	for (int v = 0; argc > 3 && v < NVAR; v++)
		if (strcmp(argv[3], variants[v]) == 0)
			only = v;
	if (argc > 3 && only < 0)
		bench_usage(usage);
	const char *t = getenv("TMPDIR");
	if (!t)
		t = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	char base[256], seed[300], run[300];
	snprintf(base, sizeof(base), "%s/ms-bench-pipeline-XXXXXX", t);
	if (!mkdtemp(base))
		die("mkdtemp", NULL);
	snprintf(seed, sizeof(seed), "%s/seed", base);
	snprintf(run, sizeof(run), "%s/run", base);

	ms_limits lim;
	ms_errbuf eb = { { 0 } };
	ms_limits_detect(&lim, NULL, NULL);
	if (ms_limits_apply_profile(&lim, "cpus=2,mem=4g", &eb))
		die("limits profile", &eb);

	uint64_t ids[15];
	int64_t tb = ms_mono_ns();
	build_seed(seed, rows, ids);
	if (only >= 0) {
		sample one[MAXREP];
		ms_merge_result r1;
		for (int rep = 0; rep < reps; rep++)
			run_one(seed, run, ids, only, rep, &lim, &one[rep],
			        &r1);
		rm_tree(base);
		printf("%s: %d run(s), median wall %.1f ms, cpu %.1f ms, "
		       "alloc %.2f MB in %lld allocations, peak %.2f MB\n",
		       variants[only], reps,
		       (double)med_of(one, reps, offsetof(sample, wall)) / 1e6,
		       (double)med_of(one, reps, offsetof(sample, cpu)) / 1e6,
		       (double)med_of(one, reps, offsetof(sample, bytes)) / 1e6,
		       (long long)med_of(one, reps, offsetof(sample, count)),
		       (double)med_of(one, reps, offsetof(sample, peak)) / 1e6);
		return 0;
	}
	printf("bench_pipeline: seed shard of 15 inputs built in %.2f s in "
	       "%s\n",
	       (double)(ms_mono_ns() - tb) / 1e9, t);

	static sample sm[NVAR][MAXREP];
	static ms_merge_result res[NVAR];
	ms_merge_result r;
	bool identical = true;
	uint64_t checks_bad = 0; /* decide-once and bounds checks */
	for (int rep = 0; rep < reps; rep++) {
		/* The order of the variants is reversed every other
		 * repetition: each ratio against disabled is of runs side by
		 * side, neither always first. */
		for (int k = 0; k < NVAR; k++) {
			int v = rep % 2 ? NVAR - 1 - k : k;
			run_one(seed, run, ids, v, rep, &lim, &sm[v][rep], &r);
			res[v] = r;
		}
		identical &= res[0].output.checksum == res[1].output.checksum &&
		             res[0].rows_out == res[1].rows_out;
		for (int v = 1; v < NVAR; v++)
			checks_bad += res[v].sampling.decide_dup_traces +
			              res[v].sampling.bounds_mismatch;
	}
	rm_tree(base);

	const ms_merge_result *d = &res[0];
	printf("inputs: 15 parts, depths 0-%u, %llu rows, %llu traces "
	       "(%llu fragmented over inputs), %.2f MB stored, %.2f MB "
	       "uncompressed; clock: all inputs mature\n",
	       d->max_input_depth, (unsigned long long)d->rows_in,
	       (unsigned long long)d->traces_in,
	       (unsigned long long)d->traces_fragmented,
	       (double)d->input_compressed_bytes / 1e6,
	       (double)d->input_uncompressed_bytes / 1e6);
	printf("staging %s: hard ceiling %.1f MiB (profile cpus=2,mem=4g), "
	       "estimate %.1f MB, preferred limit %.1f MB, %llu batch(es) "
	       "planned, %llu cut, peak staged %.1f MB\n",
	       ms_staging_mode_name(staging_mode()),
	       (double)res[1].sampling.hard_limit_bytes / 1048576.0,
	       (double)res[1].sampling.estimate_bytes / 1e6,
	       (double)res[1].sampling.preferred_limit_bytes / 1e6,
	       (unsigned long long)res[1].sampling.batches_planned,
	       (unsigned long long)res[1].sampling.batches,
	       (double)res[1].sampling.peak_staged_bytes / 1e6);
	printf("\nmedians of %d runs (fresh shard copy per run):\n", reps);
	printf("%-12s %9s %9s %10s %10s %9s %7s %7s %8s %8s %9s %8s\n",
	       "variant", "wall ms", "cpu ms", "alloc MB", "allocs", "peak MB",
	       "raw", "reenc", "evald", "dropped", "staged MB", "decide ms");
	int64_t m[NVAR][5];
	for (int v = 0; v < NVAR; v++) {
		m[v][0] = med_of(sm[v], reps, offsetof(sample, wall));
		m[v][1] = med_of(sm[v], reps, offsetof(sample, cpu));
		m[v][2] = med_of(sm[v], reps, offsetof(sample, bytes));
		m[v][3] = med_of(sm[v], reps, offsetof(sample, count));
		m[v][4] = med_of(sm[v], reps, offsetof(sample, peak));
		const ms_merge_result *x = &res[v];
		printf("%-12s %9.1f %9.1f %10.2f %10lld %9.2f %7llu %7llu "
		       "%8llu %8llu %9.2f %8.2f\n",
		       variants[v], (double)m[v][0] / 1e6,
		       (double)m[v][1] / 1e6, (double)m[v][2] / 1e6,
		       (long long)m[v][3], (double)m[v][4] / 1e6,
		       (unsigned long long)x->blocks_raw,
		       (unsigned long long)x->blocks_reencoded,
		       (unsigned long long)x->sampling.traces_evaluated,
		       (unsigned long long)x->sampling.traces_dropped,
		       (double)x->sampling.peak_staged_bytes / 1e6,
		       (double)x->sampling.decide_ns / 1e6);
	}
	printf("\noverhead against disabled (median / median):\n");
	printf("%-12s %8s %8s %10s %8s %8s\n", "variant", "wall", "cpu",
	       "alloc B", "allocs", "peak");
	for (int v = 1; v < NVAR; v++)
		printf("%-12s %7.3fx %7.3fx %9.3fx %7.3fx %7.3fx\n",
		       variants[v], (double)m[v][0] / (double)m[0][0],
		       (double)m[v][1] / (double)m[0][1],
		       (double)m[v][2] / (double)m[0][2],
		       (double)m[v][3] / (double)m[0][3],
		       (double)m[v][4] / (double)m[0][4]);
	/* Where each sampling variant's extra allocation and work go: the
	 * arena retaining the staged payload (retain) against the rest
	 * (batch, stager, chain, guard and drop set), and the input blocks
	 * decoded while staging (start and latency at least, for the
	 * bounds check, even for a chain that reads no column). */
	printf("\nbeyond disabled (alloc: medians; the rest: last run):\n");
	printf("%-12s %9s %11s %9s %9s %9s %8s\n", "variant", "alloc MB",
	       "payload MB", "rest MB", "decoded", "of blocks", "batches");
	for (int v = 1; v < NVAR; v++) {
		const ms_merge_sampling *x = &res[v].sampling;
		double extra = (double)(m[v][2] - m[0][2]) / 1e6;
		double held = (double)x->arena_cold_bytes / 1e6;
		printf("%-12s %9.2f %11.2f %9.2f %9llu %9llu %8llu\n",
		       variants[v], extra, held, extra - held,
		       (unsigned long long)x->blocks_decoded,
		       (unsigned long long)res[v].blocks_in,
		       (unsigned long long)x->batches);
	}
	/* The index stage beside the reference's: the share of the merge's
	 * wall and the cost per index row (two children, one row per span
	 * each). */
	printf("\nindex stage (both children), medians; the reference's "
	       "sampled merge of %.0f rows beside it:\n",
	       REF_ROWS);
	printf("%-14s %9s %9s %12s %12s\n", "variant", "index ms", "share",
	       "ns/index row", "rest ns/row");
	for (int v = 0; v < NVAR; v++) {
		double nrow = (double)res[v].rows_in;
		double ix = (double)med_of(sm[v], reps, offsetof(sample, idx));
		double sh = (double)med_of(sm[v], reps,
		                           offsetof(sample, share)) /
		            1e4;
		printf("%-14s %9.1f %8.1f%% %12.0f %12.0f\n", variants[v],
		       ix / 1e6, sh, ix / (2.0 * nrow),
		       ((double)m[v][0] - ix) / nrow);
	}
	for (size_t i = 0; i < sizeof(ref_split) / sizeof(ref_split[0]);
	     i++) {
		char name[32];
		snprintf(name, sizeof(name), "ref drop %s", ref_split[i].what);
		double c = ref_split[i].core_ms, x = ref_split[i].sidx_ms;
		printf("%-14s %9.1f %8.1f%% %12.0f %12.0f\n", name, x,
		       100.0 * x / (c + x), x * 1e6 / (2.0 * REF_ROWS),
		       c * 1e6 / REF_ROWS);
	}
	printf("targets for alwayskeep: wall <= 1.050x (%s), allocated bytes "
	       "<= 1.100x (%s)\n",
	       (double)m[1][0] <= 1.05 * (double)m[0][0] ? "met" : "MISSED",
	       (double)m[1][2] <= 1.10 * (double)m[0][2] ? "met" : "MISSED");
	printf("alwayskeep output byte-identical to disabled in every run: "
	       "%s\n",
	       identical ? "yes" : "NO");
	printf("traces handed to Decide twice or with bounds other than "
	       "their fragments': %llu\n",
	       (unsigned long long)checks_bad);
	return identical && checks_bad == 0 ? 0 : 1;
}
