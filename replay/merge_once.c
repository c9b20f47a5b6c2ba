/*
 * merge_once.c - `mergescope merge-once`: replay exactly one frozen merge
 * (freeze.c) from fresh copies of its shard, under one or more variants,
 * several times each, and report medians and coefficients of variation.
 *
 * Every run is independent: DIR/shard is copied into a scratch directory,
 * the copy is opened, the variant's pipeline is built (variant "disabled"
 * means no pipeline at all, as in a replay), and ms_merge_execute runs the
 * frozen inputs, in their selection order, into the output ID the run had
 * reserved, with a fresh ms_mem so the allocation figures are the merge's
 * own. The copy is removed afterwards.
 *
 * The clock: now = max(max_ts of the selected inputs) + grace (2 h), so
 * every selected input is mature and sampling is not skipped for a hot
 * input. This is deliberately not the run's clock: a controlled re-run
 * measures the merge with sampling on its whole input. A run whose merge
 * had no hot input sees the same decisions (the fragment guard looks at
 * the other active parts, which are frozen with the shard, not at the
 * clock), so its output ledgers match the run's.
 *
 * Order: repetition r runs the variants forward when r is even and in
 * reverse when r is odd (A B B A ...), so slow drift of the machine weighs
 * on every variant alike.
 *
 * Checks: the output part's ledgers (all three kinds, ms_ledger_of_part)
 * must be identical across the repetitions of a variant (ledgers_stable);
 * a variant that dropped nothing must give the sum of the inputs' ledgers
 * recorded in frozen.txt (otherwise the call fails).
 */
#define _GNU_SOURCE
#include "frozen.h"
#include "replay_int.h"
#include "ms_fs.h"

#include "ms_picker.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef MS_DEFAULT_PLUGIN_DIR
#define MS_DEFAULT_PLUGIN_DIR "plugins"
#endif

#define DEFAULT_REPS 5

/* What one repetition measured: wall ns, cpu ns, allocated bytes, peak
 * live bytes, allocations, bytes read, bytes written, write
 * amplification (core + index output bytes over their input bytes). */
enum { S_WALL, S_CPU, S_ALLOC, S_PEAK, S_COUNT, S_READ, S_WRITTEN, S_WA, S_N };
typedef struct sample {
	double v[S_N];
} sample;

typedef struct once_ctx {
	const ms_merge_once_opts *o;
	const ms__frozen *f;
	char shard_src[PATH_MAX];
	char scratch[PATH_MAX];
	const char *plugin_dir;
	enum ms_grace_policy policy;
	enum ms_staging_mode staging;
	ms_limits limits;
} once_ctx;

static void
log_nowhere(void *ctx, int level, const char *plugin, const char *msg)
{
	(void)ctx;
	(void)level;
	(void)plugin;
	(void)msg;
}

static int
open_pipeline(const once_ctx *c, const char *variant, ms_mem *mem,
              ms_pipeline **out, ms_errbuf *eb)
{
	*out = NULL;
	if (!strcmp(variant, "disabled"))
		return 0;
	ms_pipeline_opts po;
	memset(&po, 0, sizeof(po));
	po.spec = variant;
	po.plugin_dir = c->plugin_dir;
	po.host_mode = c->o->plugin_host;
	po.host_exe = c->o->plugin_host_exe;
	po.policy = c->policy;
	po.limits = &c->limits;
	po.mem = mem;
	po.log = log_nowhere;
	return ms_pipeline_open(out, &po, eb);
}

/* One repetition of one variant. */
static int
run_once(const once_ctx *c, const char *variant, unsigned rep, size_t vi,
         ms_merge_result *res, ms_ledger_set *out_ledger, ms_errbuf *eb)
{
	const ms__frozen *f = c->f;
	char dir[PATH_MAX];
	if ((size_t)snprintf(dir, sizeof(dir), "%s/run-%ld-%u-%zu", c->scratch,
	                     (long)getpid(), rep, vi) >= sizeof(dir))
		return ms_fail(eb, MS_ERR_RANGE,
		               "merge-once: path too long: %s", c->scratch);
	ms_fs_rm_tree(dir, NULL);
	bool reflinked = false;
	int rc = ms__copy_tree(c->shard_src, dir, &reflinked, eb);
	if (rc)
		return rc;

	ms_mem shard_mem, pipe_mem, merge_mem, ledger_mem;
	ms_mem_init(&shard_mem, NULL);
	ms_mem_init(&pipe_mem, NULL);
	ms_mem_init(&merge_mem, NULL);
	ms_mem_init(&ledger_mem, NULL);
	ms_shard *s = NULL;
	ms_pipeline *pipe = NULL;
	ms_view *v = NULL;
	ms_shard_opts so = { .dir = dir, .create = false, .mem = &shard_mem };
	if ((rc = ms_shard_open(&s, &so, eb)))
		goto out;
	if ((rc = open_pipeline(c, variant, &pipe_mem, &pipe, eb)))
		goto out;

	/* The clock: every selected input mature. */
	if ((rc = ms_shard_view(s, &v, eb)))
		goto out;
	int64_t max_ts = INT64_MIN;
	for (size_t i = 0; i < f->ninputs; i++) {
		const ms_part *p = ms_view_find(v, f->ids[i], MS_KIND_CORE);
		if (!p) {
			rc = ms_fail(eb, MS_ERR_NOTFOUND,
			             "merge-once: input %016" PRIx64
			             " is not in the frozen shard %s",
			             f->ids[i], c->shard_src);
			goto out;
		}
		const ms_part_meta *m = ms_part_get_meta(p);
		if (m->depth != f->depths[i]) {
			rc = ms_fail(eb, MS_ERR_CORRUPT,
			             "merge-once: input %016" PRIx64
			             " has depth %" PRIu32
			             " in %s, frozen.txt says %" PRIu32,
			             f->ids[i], m->depth, c->shard_src,
			             f->depths[i]);
			goto out;
		}
		if (m->max_ts > max_ts)
			max_ts = m->max_ts;
	}
	ms_view_release(v);
	v = NULL;

	ms_merge_req req;
	memset(&req, 0, sizeof(req));
	req.shard = s;
	req.inputs = f->ids;
	req.ninputs = f->ninputs;
	req.output_id = f->output_id;
	req.seq = f->seq;
	req.lane = f->lane;
	req.flags = f->finalize ? MS_MERGE_FINALIZE : 0;
	req.parent_mem = &merge_mem;
	req.pipeline = pipe;
	req.staging = c->staging;
	req.segment_min_ns = f->segment_min_ns;
	req.segment_max_ns = f->segment_max_ns;
	req.now_ns = c->o->run_clock ? f->now_ns : max_ts + MS_GRACE_NS;
	req.grace_ns = MS_GRACE_NS;
	rc = f->finalize ? ms_merge_finalize(&req, res, eb)
	                 : ms_merge_execute(&req, res, eb);
	if (rc) {
		char msg[sizeof(eb->msg)];
		snprintf(msg, sizeof(msg), "%s", eb ? eb->msg : "");
		rc = ms_fail(eb, rc, "merge-once: %s, repetition %u: %s",
		             variant, rep + 1, msg[0] ? msg : ms_strerror(rc));
		goto out;
	}

	/* The output's ledgers. */
	ms_ledger_set_init(out_ledger);
	if (res->output_id) {
		if ((rc = ms_shard_view(s, &v, eb)))
			goto out;
		for (int k = 0; k < MS_KIND_COUNT && rc == 0; k++) {
			const ms_part *p = ms_view_find(v, res->output_id,
			                                (enum ms_part_kind)k);
			if (!p) {
				rc = ms_fail(eb, MS_ERR_STATE,
				             "merge-once: output %016" PRIx64
				             " (%s) is not active after the "
				             "merge",
				             res->output_id,
				             ms_part_kind_name(
				                     (enum ms_part_kind)k));
				break;
			}
			rc = ms_ledger_of_part(p, &out_ledger->kind[k],
			                       &ledger_mem, eb);
		}
	}
out:
	ms_view_release(v);
	ms_shard_close(s);
	ms_pipeline_close(pipe);
	ms_fs_rm_tree(dir, NULL);
	return rc;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Median and coefficient of variation (sample stddev / mean). */
static void
stats_of(const sample *s, size_t n, size_t field, double *median, double *cv)
{
	double *v = malloc(n * sizeof(*v));
	if (!v) {
		*median = *cv = 0;
		return;
	}
	double sum = 0;
	for (size_t i = 0; i < n; i++) {
		v[i] = s[i].v[field];
		sum += v[i];
	}
	qsort(v, n, sizeof(*v), cmp_double);
	*median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	double mean = sum / (double)n, ss = 0;
	for (size_t i = 0; i < n; i++)
		ss += (v[i] - mean) * (v[i] - mean);
	*cv = n > 1 && mean != 0 ? sqrt(ss / (double)(n - 1)) / mean : 0;
	free(v);
}

static double
ratio(double a, double b)
{
	return b != 0 ? a / b : 0;
}

static void
print_table(FILE *out, const once_ctx *c, const ms_merge_once_result *res,
            size_t nv)
{
	const ms__frozen *f = c->f;
	uint64_t in_rows = res[0].in_ledger.kind[MS_KIND_CORE].rows;
	fprintf(out,
	        "merge-once: merge #%" PRIu64 " (%s lane, %zu inputs, %" PRIu64
	        " rows%s) frozen in %s\n",
	        f->seq, f->lane, f->ninputs, in_rows,
	        f->finalize ? ", finalize" : "", c->o->frozen_dir);
	fprintf(out,
	        "clock: %s; grace policy %s; %u repetitions per variant, "
	        "alternating\n\n",
	        c->o->run_clock ? "the run's at the barrier"
	                        : "max input max_ts + 2 h (every input mature)",
	        ms_grace_policy_name(c->policy), res[0].reps);
	fprintf(out,
	        "%-24s %10s %6s %10s %6s %11s %6s %10s %6s %9s %9s "
	        "%8s %s\n",
	        "variant", "wall ms", "cv%", "cpu ms", "cv%", "alloc MiB",
	        "cv%", "peak MiB", "cv%", "rows in", "rows out", "dropped",
	        "ledgers");
	for (size_t i = 0; i < nv; i++) {
		const ms_merge_once_result *r = &res[i];
		fprintf(out,
		        "%-24.24s %10.3f %6.1f %10.3f %6.1f %11.3f %6.1f "
		        "%10.3f %6.1f %9" PRIu64 " %9" PRIu64 " %8" PRIu64
		        " %s\n",
		        r->variant, r->wall_median_ns / 1e6, r->wall_cv * 100,
		        r->cpu_median_ns / 1e6, r->cpu_cv * 100,
		        r->alloc_median / 1048576.0, r->alloc_cv * 100,
		        r->peak_median / 1048576.0, r->peak_cv * 100,
		        r->rows_in, r->rows_out, r->traces_dropped,
		        r->ledgers_stable ? "stable" : "DIFFER");
	}
	fprintf(out, "\n%-24s %12s %10s %13s %8s %8s  %s\n",
	        "variant (medians)", "allocations", "read MiB", "written MiB",
	        "WA", "decides", "sampling");
	for (size_t i = 0; i < nv; i++) {
		const ms_merge_once_result *r = &res[i];
		fprintf(out,
		        "%-24.24s %12.0f %10.3f %13.3f %8.4f %8" PRIu64
		        "  %s%s%s\n",
		        r->variant, r->count_median, r->read_median / 1048576.0,
		        r->written_median / 1048576.0, r->wa_median,
		        r->plugin_calls, ms_sampling_class_name(r->klass),
		        r->reason ? " " : "",
		        r->reason ? ms_sampling_reason_name(r->reason) : "");
	}
	if (nv < 2)
		return;
	fprintf(out, "\nratio to %-15.15s %10s %10s %11s %10s\n",
	        res[0].variant, "wall", "cpu", "alloc", "peak");
	for (size_t i = 1; i < nv; i++) {
		const ms_merge_once_result *r = &res[i];
		fprintf(out, "%-24.24s %9.3fx %9.3fx %10.3fx %9.3fx\n",
		        r->variant,
		        ratio(r->wall_median_ns, res[0].wall_median_ns),
		        ratio(r->cpu_median_ns, res[0].cpu_median_ns),
		        ratio(r->alloc_median, res[0].alloc_median),
		        ratio(r->peak_median, res[0].peak_median));
	}
}

/* Options, the frozen file, the scratch directory (made), the run's limits
 * and every variant loading: all checked before any merge runs. On
 * failure c->f (if read) is released by the caller. */
static int
once_setup(once_ctx *c, const ms_merge_once_opts *opts, ms__frozen *f,
           ms_errbuf *eb)
{
	memset(c, 0, sizeof(*c));
	c->o = opts;
	c->plugin_dir =
	        opts->plugin_dir ? opts->plugin_dir : MS_DEFAULT_PLUGIN_DIR;
	c->policy = MS_GRACE_TRACE;
	if (opts->grace_policy &&
	    ms_grace_policy_parse(opts->grace_policy, &c->policy))
		return ms_fail(eb, MS_ERR_INVAL,
		               "merge-once: grace policy '%s': expected "
		               "selection or trace",
		               opts->grace_policy);
	if (opts->staging && ms_staging_mode_parse(opts->staging, &c->staging))
		return ms_fail(eb, MS_ERR_INVAL,
		               "merge-once: --staging '%s': expected retain "
		               "or reread",
		               opts->staging);
	int rc = ms__frozen_read(opts->frozen_dir, f, eb);
	if (rc)
		return rc;
	c->f = f;
	snprintf(c->shard_src, sizeof(c->shard_src), "%s/%s", opts->frozen_dir,
	         MS_FROZEN_SHARD);
	/* Scratch copies go to the given directory, else to a new one under
	 * $TMPDIR (removed afterwards): the frozen directory is only read,
	 * so it may be read-only. */
	const char *tmp = getenv("TMPDIR");
	if (!tmp || !*tmp)
		tmp = "/tmp";
	if (opts->scratch_dir
	            ? (size_t)snprintf(c->scratch, sizeof(c->scratch), "%s",
	                               opts->scratch_dir) >= sizeof(c->scratch)
	            : (size_t)snprintf(c->scratch, sizeof(c->scratch),
	                               "%s/mergescope-once-XXXXXX",
	                               tmp) >= sizeof(c->scratch))
		return ms_fail(eb, MS_ERR_RANGE,
		               "merge-once: path too long: %s",
		               opts->frozen_dir);
	struct stat st;
	if (stat(c->shard_src, &st) < 0 || !S_ISDIR(st.st_mode))
		return ms_fail(eb, MS_ERR_NOTFOUND,
		               "merge-once: %s: the frozen shard is missing",
		               c->shard_src);
	/* The run's limits (they size the staging budget). */
	ms_limits_detect(&c->limits, NULL, NULL);
	char profile[64];
	snprintf(profile, sizeof(profile), "cpus=%u,mem=%" PRIu64, f->cpus,
	         f->mem_limit);
	if ((rc = ms_limits_apply_profile(&c->limits, profile, eb)))
		return rc;
	/* Every variant must load before any work. */
	for (size_t i = 0; i < opts->nvariants; i++) {
		ms_mem m;
		ms_mem_init(&m, NULL);
		ms_pipeline *p = NULL;
		const char *v = opts->variants[i];
		if (!v || !*v)
			return ms_fail(eb, MS_ERR_INVAL,
			               "merge-once: variant %zu is empty",
			               i + 1);
		if ((rc = open_pipeline(c, v, &m, &p, eb)))
			return rc;
		ms_pipeline_close(p);
	}
	if (opts->scratch_dir ? ms_fs_mkdir_p(c->scratch, 0755, NULL) < 0
	                      : mkdtemp(c->scratch) == NULL)
		return ms_fail(eb, ms_err_from_errno(errno),
		               "merge-once: cannot create %s: %s", c->scratch,
		               strerror(errno));
	return 0;
}

/* Repetition r of variant vi into its result and sample; the output's
 * ledgers must repeat, and equal the inputs' when nothing was dropped. */
static int
once_rep(const once_ctx *c, unsigned r, size_t vi, sample *sm,
         ms_ledger_set *first, const ms_ledger_set *in_sum,
         ms_merge_once_result *out, ms_errbuf *eb)
{
	const ms_merge_once_opts *opts = c->o;
	ms_merge_result mr;
	ms_ledger_set led;
	int rc = run_once(c, opts->variants[vi], r, vi, &mr, &led, eb);
	if (rc)
		return rc;
	uint64_t in = mr.input_compressed_bytes,
	         outb = mr.output.compressed_bytes;
	for (int k = MS_KIND_LATENCY; k <= MS_KIND_START_TIME; k++) {
		in += mr.index[k].bytes_in;
		outb += mr.index[k].bytes_out;
	}
	*sm = (sample){ {
		(double)mr.wall_ns,
		(double)mr.cpu_ns,
		(double)mr.alloc_bytes,
		(double)mr.peak_live,
		(double)mr.alloc_count,
		(double)mr.bytes_read,
		(double)mr.bytes_written,
		in ? (double)outb / (double)in : 0,
	} };
	out->rows_in = mr.rows_in;
	out->rows_out = mr.rows_out;
	out->traces_dropped = mr.sampling.traces_dropped;
	out->klass = mr.sampling.klass;
	out->reason = mr.sampling.reason;
	out->plugin_calls = mr.sampling.plugin_calls;
	out->out_ledger = led;
	if (r == 0)
		*first = led;
	else if (!ms_ledger_set_equal(first, &led))
		out->ledgers_stable = false;
	if (mr.sampling.traces_dropped == 0 && mr.sampling.rows_dropped == 0 &&
	    !ms_ledger_set_equal(&led, in_sum)) {
		char a[MS_LEDGER_STR_MAX], b[MS_LEDGER_STR_MAX];
		return ms_fail(eb, MS_ERR_CORRUPT,
		               "merge-once: %s dropped nothing but its "
		               "output ledger (core %s) differs from the "
		               "inputs' (core %s) recorded in %s",
		               opts->variants[vi],
		               ms_ledger_format(&led.kind[MS_KIND_CORE], a),
		               ms_ledger_format(&in_sum->kind[MS_KIND_CORE], b),
		               opts->frozen_dir);
	}
	return 0;
}

/* Every repetition of every variant, alternating (see Order above), then
 * the medians and the table. */
static int
once_measure(const once_ctx *c, ms_merge_once_result *results, ms_errbuf *eb)
{
	const ms_merge_once_opts *opts = c->o;
	const ms__frozen *f = c->f;
	unsigned reps = opts->reps ? opts->reps : DEFAULT_REPS;
	size_t nv = opts->nvariants;
	sample *samples = calloc(nv * reps, sizeof(*samples));
	ms_ledger_set *first = calloc(nv, sizeof(*first));
	if (!samples || !first) {
		free(samples);
		free(first);
		return ms_fail(eb, MS_ERR_NOMEM, "merge-once: out of memory");
	}
	ms_ledger_set in_sum;
	ms_ledger_set_init(&in_sum);
	for (size_t i = 0; i < f->ninputs; i++)
		ms_ledger_set_add(&in_sum, &f->ledgers[i]);
	for (size_t i = 0; i < nv; i++) {
		memset(&results[i], 0, sizeof(results[i]));
		results[i].variant = opts->variants[i];
		results[i].reps = reps;
		results[i].ledgers_stable = true;
		results[i].in_ledger = in_sum;
	}
	int rc = 0;
	for (unsigned r = 0; r < reps && rc == 0; r++)
		for (size_t k = 0; k < nv && rc == 0; k++) {
			size_t vi = r % 2 ? nv - 1 - k : k;
			rc = once_rep(c, r, vi, &samples[vi * reps + r],
			              &first[vi], &in_sum, &results[vi], eb);
		}
	if (rc == 0) {
		for (size_t i = 0; i < nv; i++) {
			const sample *s = &samples[i * reps];
			ms_merge_once_result *o = &results[i];
			double cv;
			stats_of(s, reps, S_WALL, &o->wall_median_ns,
			         &o->wall_cv);
			stats_of(s, reps, S_CPU, &o->cpu_median_ns, &o->cpu_cv);
			stats_of(s, reps, S_ALLOC, &o->alloc_median,
			         &o->alloc_cv);
			stats_of(s, reps, S_PEAK, &o->peak_median, &o->peak_cv);
			stats_of(s, reps, S_COUNT, &o->count_median, &cv);
			stats_of(s, reps, S_READ, &o->read_median, &cv);
			stats_of(s, reps, S_WRITTEN, &o->written_median, &cv);
			stats_of(s, reps, S_WA, &o->wa_median, &cv);
		}
		if (opts->out)
			print_table(opts->out, c, results, nv);
	}
	free(samples);
	free(first);
	return rc;
}

int
ms_merge_once(const ms_merge_once_opts *opts, ms_merge_once_result *results,
              ms_errbuf *eb)
{
	if (!opts || !opts->frozen_dir || !opts->variants ||
	    opts->nvariants == 0 || !results)
		return ms_fail(eb, MS_ERR_INVAL,
		               "merge-once: a frozen directory and at least "
		               "one variant are required");
	once_ctx c;
	ms__frozen f;
	memset(&f, 0, sizeof(f));
	bool made = false;
	int rc = once_setup(&c, opts, &f, eb);
	if (rc == 0) {
		made = true;
		rc = once_measure(&c, results, eb);
	}
	if (made && !opts->scratch_dir)
		ms_fs_rm_tree(c.scratch, NULL);
	ms__frozen_release(&f);
	return rc;
}
