/*
 * merge_once.c - `mergescope merge-once`: replay exactly one frozen merge
 * (freeze.c) from fresh copies of its shard, under one or more variants,
 * several times each, and report every repetition, the medians and the
 * coefficients of variation.
 *
 * The selection proves itself: every repetition re-runs the picker on its
 * copy of the frozen shard with what the picker saw at the barrier
 * (ms__frozen_check_pick) and refuses, naming both selections, when it
 * does not give the frozen one.
 *
 * Every repetition is independent: DIR/shard is copied into a scratch
 * directory, the copy is opened, the variant's pipeline is built (variant
 * "disabled" means no pipeline at all, as in a replay), and
 * ms_merge_execute runs the frozen inputs, in their selection order, into
 * the output ID the run had reserved, with a fresh ms_mem so the
 * allocation figures are the merge's own. The copy is removed afterwards.
 *
 * A fresh process per repetition (opts->self_exe): the repetition runs as
 * `EXE __merge-once-rep ...`, forked and exec'd, and writes what it
 * measured to a result file in the scratch directory. Exec rather than a
 * bare fork, so that no repetition inherits the allocator's arenas, the
 * loaded plugins, the page tables or the heap of the process that started
 * it (a forked child starts with its parent's resident set, which would
 * count in its peak): each starts as the reference's do, cold. Its peak
 * RSS is its own high-water mark (VmHWM, read by the child at its end,
 * which after exec counts only the new image). Without self_exe (library
 * callers, some tests) repetitions run in the calling process and the peak
 * is the high-water mark since a reset at the repetition's start.
 *
 * The clock: now = max(max_ts of the selected inputs) + grace (2 h), so
 * every selected input is mature and sampling is not skipped for a hot
 * input. This is deliberately not the run's clock: a controlled re-run
 * measures the merge with sampling on its whole input. A run whose merge
 * had no hot input sees the same decisions (the fragment guard looks at
 * the other active parts, which are frozen with the shard, not at the
 * clock), so its output ledgers match the run's. --clock run uses the
 * run's clock at the barrier instead.
 *
 * Order: repetition r runs the variants forward when r is even and in
 * reverse when r is odd (A B B A ...), so slow drift of the machine weighs
 * on every variant alike.
 *
 * Checks: the output part's ledgers (all three kinds, ms_ledger_of_part)
 * must be identical across the repetitions of a variant (ledgers_stable);
 * a variant that dropped nothing must give the sum of the inputs' ledgers
 * recorded in frozen.txt (otherwise the call fails). A variant with a
 * chain is checked against the verdict oracle (oracle.c), which evaluates
 * every complete trace of the frozen run's fixture with a chain of its
 * own: every trace the merge dropped (first repetition) must be one the
 * oracle drops, and the traces the merge kept although the oracle drops
 * them, among those the selection holds whole, may number no more than
 * the traces the merge reports kept for a reason (deferred by the guard,
 * those retained at the segment's edge among them, hot, oversized; each
 * counted once); with sampling not
 * executed every trace is kept for that reason. One exception, counted
 * apart: under the matured clock a dropped trace some of whose rows were
 * published after the freeze (in no part of the frozen shard) was judged
 * on the rows the freeze holds, which the run's clock would still have
 * waited for; the oracle judges it whole.
 */
#define _GNU_SOURCE
#include "frozen.h"
#include "grow.h"
#include "labels.h"
#include "replay_int.h"
#include "ms_fs.h"

#include "ms_picker.h"
#include "ms_rusage.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef MS_DEFAULT_PLUGIN_DIR
#define MS_DEFAULT_PLUGIN_DIR "plugins"
#endif

#define DEFAULT_REPS 5
/* Trace IDs a mismatch names. */
#define NAMED_IDS 3

/* What one repetition measured and how its merge sampled: the numbers a
 * child writes to its result file, one key each. */
enum {
	R_WALL, R_CPU, R_ALLOC, R_PEAK, R_COUNT, R_READ, R_WRITTEN,
	R_IO_IN, R_IO_OUT, R_RSS, R_ROWS_IN, R_ROWS_OUT, R_TRACES_DROPPED,
	R_ROWS_DROPPED, R_CALLS, R_DEFERRED, R_UNEVALUATED, R_OVERSIZED,
	R_EDGE, R_CLASS, R_REASON, R_N
};
static const char *const rep_keys[R_N] = {
	"wall_ns", "cpu_ns", "alloc_bytes", "peak_live", "alloc_count",
	"bytes_read", "bytes_written", "io_in_bytes", "io_out_bytes",
	"rss_peak_bytes", "rows_in", "rows_out", "traces_dropped",
	"rows_dropped", "plugin_calls", "traces_deferred",
	"traces_unevaluated", "traces_oversized", "guard_retained_edge",
	"class", "reason",
};

/* The figures the table shows per repetition. S_WA, the write
 * amplification, is the bytes the merge wrote over the bytes of its input
 * parts (core + indexes, from their metadata), as the reference measures
 * it (merged output over the selected inputs): not over the bytes it
 * read, which reread staging doubles. S_OUTIN is its output parts' bytes
 * (from their metadata) over the same input bytes. Both are the same in
 * both staging modes. */
enum {
	S_WALL, S_CPU, S_ALLOC, S_PEAK, S_COUNT, S_READ, S_WRITTEN, S_WA,
	S_RSS, S_OUTIN, S_N
};
typedef struct sample {
	double v[S_N];
} sample;

/* One dropped trace, as the merge confirmed it. */
typedef struct drop_rec {
	uint8_t tid[MS_TRACE_ID_MAX];
	uint8_t len;
	uint64_t rows;
} drop_rec;

typedef struct drop_list {
	drop_rec *v;
	size_t n, cap;
	bool nomem;
} drop_list;

typedef struct rep_out {
	uint64_t v[R_N];
	ms_ledger_set led; /* of the output part */
	drop_list drops;   /* when asked for */
} rep_out;

/* A variant's plugins as merge-once began: each link's checksum and path.
 * The oracle opens them again by path at the end; its copies must be
 * these (a file replaced meanwhile would judge with another plugin). */
typedef struct once_sums {
	size_t n;
	char sum[MS_EV_LINKS_MAX][33];
	char path[MS_EV_LINKS_MAX][PATH_MAX];
} once_sums;

typedef struct once_ctx {
	const ms_merge_once_opts *o;
	once_sums *sums; /* one per variant (once_setup's), or NULL */
	const ms__frozen *f;
	char shard_src[PATH_MAX];
	char scratch[PATH_MAX];
	const char *plugin_dir;
	enum ms_grace_policy policy;
	enum ms_staging_mode staging;
	ms_limits limits;
	const char *oracle_spec; /* tests: the oracle's chain; NULL: each
	                            variant's own */
	/* tests: one dropped trace of each variant is left out of its
	 * reconciliation, which must then fail. */
	bool forget_drop;
	char checked[PATH_MAX];  /* the parent's copy verify_copy checked, read
	                            by the oracle ("" in a repetition) */
} once_ctx;

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
	return ms_pipeline_open(out, &po, eb);
}

static void
on_drop(void *arg, const uint8_t *tid, uint32_t tid_len, uint64_t rows)
{
	drop_list *d = arg;
	if (MS__GROW(d->v, d->cap, d->n + 1, 1024)) {
		d->nomem = true;
		return;
	}
	drop_rec *r = &d->v[d->n++];
	r->len = (uint8_t)(tid_len < MS_TRACE_ID_MAX ? tid_len
	                                             : MS_TRACE_ID_MAX);
	memcpy(r->tid, tid, r->len);
	r->rows = rows;
}

static void
drops_free(drop_list *d)
{
	free(d->v);
	memset(d, 0, sizeof(*d));
}

/* The frozen inputs in the copy's view v: present, at their depths; the
 * latest max_ts among them; and the selection the picker makes there. */
static int
check_inputs(const once_ctx *c, ms_view *v, int64_t *max_ts, ms_errbuf *eb)
{
	const ms__frozen *f = c->f;
	*max_ts = INT64_MIN;
	for (size_t i = 0; i < f->ninputs; i++) {
		const ms_part *p = ms_view_find(v, f->ids[i], MS_KIND_CORE);
		if (!p)
			return ms_fail(eb, MS_ERR_NOTFOUND,
			               "merge-once: input %016" PRIx64
			               " is not in the frozen shard %s",
			               f->ids[i], c->shard_src);
		const ms_part_meta *m = ms_part_get_meta(p);
		if (m->depth != f->depths[i])
			return ms_fail(eb, MS_ERR_CORRUPT,
			               "merge-once: input %016" PRIx64
			               " has depth %" PRIu32
			               " in %s, frozen.txt says %" PRIu32,
			               f->ids[i], m->depth, c->shard_src,
			               f->depths[i]);
		if (m->max_ts > *max_ts)
			*max_ts = m->max_ts;
	}
	return ms__frozen_check_pick(f, v, "merge-once", eb);
}

/* The output's ledgers, all three kinds. */
static int
output_ledgers(ms_shard *s, uint64_t id, ms_ledger_set *out, ms_errbuf *eb)
{
	ms_ledger_set_init(out);
	if (!id)
		return 0;
	ms_mem mem;
	ms_mem_init(&mem, NULL);
	ms_view *v = NULL;
	int rc = ms_shard_view(s, &v, eb);
	for (int k = 0; k < MS_KIND_COUNT && rc == 0; k++) {
		const ms_part *p = ms_view_find(v, id, (enum ms_part_kind)k);
		if (!p) {
			rc = ms_fail(eb, MS_ERR_STATE,
			             "merge-once: output %016" PRIx64
			             " (%s) is not active after the merge",
			             id, ms_part_kind_name((enum ms_part_kind)k));
			break;
		}
		rc = ms_ledger_of_part(p, &out->kind[k], &mem, eb);
	}
	ms_view_release(v);
	return rc;
}

static void
rep_fill(rep_out *o, const ms_merge_result *mr)
{
	uint64_t in = mr->input_compressed_bytes,
	         outb = mr->output.compressed_bytes;
	for (int k = MS_KIND_LATENCY; k <= MS_KIND_START_TIME; k++) {
		in += mr->index[k].bytes_in;
		outb += mr->index[k].bytes_out;
	}
	const ms_merge_sampling *sm = &mr->sampling;
	uint64_t *v = o->v;
	v[R_WALL] = (uint64_t)mr->wall_ns;
	v[R_CPU] = (uint64_t)mr->cpu_ns;
	v[R_ALLOC] = mr->alloc_bytes;
	v[R_PEAK] = mr->peak_live > 0 ? (uint64_t)mr->peak_live : 0;
	v[R_COUNT] = mr->alloc_count;
	v[R_READ] = mr->bytes_read;
	v[R_WRITTEN] = mr->bytes_written;
	v[R_IO_IN] = in;
	v[R_IO_OUT] = outb;
	v[R_ROWS_IN] = mr->rows_in;
	v[R_ROWS_OUT] = mr->rows_out;
	v[R_TRACES_DROPPED] = sm->traces_dropped;
	v[R_ROWS_DROPPED] = sm->rows_dropped;
	v[R_CALLS] = sm->plugin_calls;
	v[R_DEFERRED] = sm->traces_deferred;
	v[R_UNEVALUATED] = sm->traces_unevaluated;
	v[R_OVERSIZED] = sm->traces_oversized;
	v[R_EDGE] = sm->guard_retained_edge;
	v[R_CLASS] = (uint64_t)sm->klass;
	v[R_REASON] = (uint64_t)sm->reason;
}

/* An error about a file of the copy at `copy` names the frozen shard's
 * file instead (`src`): the copy is removed before anyone reads the
 * message, and the file to look at is the one in the frozen directory. */
static void
name_frozen_file(ms_errbuf *eb, const char *copy, const char *src)
{
	size_t cl = strlen(copy);
	if (!eb || !cl || !strstr(eb->msg, copy))
		return;
	char msg[sizeof(eb->msg)];
	size_t n = 0;
	for (const char *at = eb->msg; *at && n + 1 < sizeof(msg);) {
		if (!strncmp(at, copy, cl)) {
			n += (size_t)snprintf(msg + n, sizeof(msg) - n, "%s",
			                      src);
			if (n >= sizeof(msg))
				n = sizeof(msg) - 1;
			at += cl;
		} else {
			msg[n++] = *at++;
		}
	}
	msg[n] = '\0';
	snprintf(eb->msg, sizeof(eb->msg), "%s", msg);
}

/* One repetition of one variant on a fresh copy of the frozen shard, in
 * this process. The peak RSS is this process's high-water mark: from the
 * reset at the start when reset_peak, else since the process began. */
static int
run_once(const once_ctx *c, const char *variant, unsigned rep, size_t vi,
         bool reset_peak, rep_out *o, ms_errbuf *eb)
{
	const ms__frozen *f = c->f;
	if (reset_peak)
		ms_rusage_reset_peak(NULL); /* where refused: since start */
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

	ms_mem shard_mem, pipe_mem, merge_mem;
	ms_mem_init(&shard_mem, NULL);
	ms_mem_init(&pipe_mem, NULL);
	ms_mem_init(&merge_mem, NULL);
	ms_shard *s = NULL;
	ms_pipeline *pipe = NULL;
	ms_view *v = NULL;
	int64_t max_ts = INT64_MIN;
	ms_shard_opts so = { .dir = dir, .create = false, .mem = &shard_mem };
	if ((rc = ms_shard_open(&s, &so, eb)) ||
	    (rc = open_pipeline(c, variant, &pipe_mem, &pipe, eb)) ||
	    (rc = ms_shard_view(s, &v, eb)) ||
	    (rc = check_inputs(c, v, &max_ts, eb)))
		goto out;
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
	req.on_drop = on_drop;
	req.drop_arg = &o->drops;
	ms_merge_result mr;
	rc = f->finalize ? ms_merge_finalize(&req, &mr, eb)
	                 : ms_merge_execute(&req, &mr, eb);
	if (rc) {
		char msg[sizeof(eb->msg)];
		snprintf(msg, sizeof(msg), "%s", eb ? eb->msg : "");
		rc = ms_fail(eb, rc, "merge-once: %s, repetition %u: %s",
		             variant, rep + 1, msg[0] ? msg : ms_strerror(rc));
		goto out;
	}
	if (o->drops.nomem) {
		rc = ms_fail(eb, MS_ERR_NOMEM,
		             "merge-once: out of memory for the dropped traces");
		goto out;
	}
	rep_fill(o, &mr);
	rc = output_ledgers(s, mr.output_id, &o->led, eb);
	ms_rusage ru;
	if (rc == 0 && ms_rusage_sample(&ru, NULL) == 0 &&
	    ru.peak_rss_bytes > 0)
		o->v[R_RSS] = (uint64_t)ru.peak_rss_bytes;
out:
	ms_view_release(v);
	ms_shard_close(s);
	ms_pipeline_close(pipe);
	ms_fs_rm_tree(dir, NULL);
	if (rc)
		name_frozen_file(eb, dir, c->shard_src);
	return rc;
}

/* Before any repetition, on a copy of the frozen shard of its own (the
 * frozen directory is only read: opening a shard recovers it, which
 * removes temporary and unlisted files): the copy opens, holds the
 * shard_parts parts frozen.txt counts, and each input holds the rows of
 * the ledgers frozen.txt records for it, all three kinds (the reference's
 * gate: the cloned snapshot's ledgers match the frozen seed). A part that
 * cannot be read or does not match is named in the frozen directory. The
 * copy stays for the oracle (frozen_traces). */
static int
verify_copy(once_ctx *c, ms_errbuf *eb)
{
	const ms__frozen *f = c->f;
	if ((size_t)snprintf(c->checked, sizeof(c->checked), "%s/checked",
	                     c->scratch) >= sizeof(c->checked))
		return ms_fail(eb, MS_ERR_RANGE,
		               "merge-once: path too long: %s", c->scratch);
	ms_fs_rm_tree(c->checked, NULL);
	bool reflinked = false;
	int rc = ms__copy_tree(c->shard_src, c->checked, &reflinked, eb);
	if (rc)
		return rc;
	ms_mem mem;
	ms_mem_init(&mem, NULL);
	ms_shard *s = NULL;
	ms_view *v = NULL;
	ms_shard_opts so = { .dir = c->checked, .mem = &mem };
	if ((rc = ms_shard_open(&s, &so, eb)) ||
	    (rc = ms_shard_view(s, &v, eb)))
		goto out;
	if (ms_view_count(v) != f->shard_parts) {
		rc = ms_fail(eb, MS_ERR_CORRUPT,
		             "%s/%s: key 'shard_parts' says %" PRIu64
		             " parts, the frozen shard %s holds %zu",
		             c->o->frozen_dir, MS_FROZEN_FILE, f->shard_parts,
		             c->checked, ms_view_count(v));
		goto out;
	}
	for (size_t i = 0; rc == 0 && i < f->ninputs; i++) {
		for (int k = 0; rc == 0 && k < MS_KIND_COUNT; k++) {
			enum ms_part_kind kind = (enum ms_part_kind)k;
			const ms_part *p = ms_view_find(v, f->ids[i], kind);
			if (!p) {
				rc = ms_fail(
				        eb, MS_ERR_NOTFOUND,
				        "merge-once: input %016" PRIx64
				        " (%s) is not in the frozen shard %s",
				        f->ids[i], ms_part_kind_name(kind),
				        c->checked);
				break;
			}
			ms_ledger l;
			if ((rc = ms_ledger_of_part(p, &l, &mem, eb)))
				break;
			const ms_ledger *want = &f->ledgers[i].kind[k];
			if (ms_ledger_equal(&l, want))
				continue;
			char a[MS_LEDGER_STR_MAX], b[MS_LEDGER_STR_MAX];
			rc = ms_fail(eb, MS_ERR_CORRUPT,
			             "%s/%s: key 'ledger.%016" PRIx64
			             ".%s' says %s, but the part %s/parts/"
			             "%016" PRIx64 ".%s holds %s",
			             c->o->frozen_dir, MS_FROZEN_FILE,
			             f->ids[i], ms_part_kind_name(kind),
			             ms_ledger_format(want, a), c->checked,
			             f->ids[i], ms_part_kind_name(kind),
			             ms_ledger_format(&l, b));
		}
	}
out:
	ms_view_release(v);
	ms_shard_close(s);
	if (rc)
		name_frozen_file(eb, c->checked, c->shard_src);
	return rc;
}

/* ---- a repetition in a fresh process ---------------------------------- */

/* A repetition's exit status when it could not write its result file
 * (a full disk): what it found is lost, and its standard error says why. */
#define REP_UNWRITTEN 3

/* The child's result file: `key=value` lines (rep_keys, ledger.KIND,
 * drop=HEX:ROWS per dropped trace), or error=CODE MESSAGE. 0, or the
 * errno of what failed (a full disk). */
static int
rep_write(const char *path, const rep_out *o, int rc, const ms_errbuf *eb)
{
	FILE *fp = fopen(path, "w");
	if (!fp)
		return errno ? errno : EIO;
	if (rc) {
		fprintf(fp, "error=%d %s\n", rc,
		        eb->msg[0] ? eb->msg : ms_strerror(rc));
	} else {
		for (int k = 0; k < R_N; k++)
			fprintf(fp, "%s=%" PRIu64 "\n", rep_keys[k], o->v[k]);
		for (int k = 0; k < MS_KIND_COUNT; k++) {
			char l[MS_LEDGER_STR_MAX];
			fprintf(fp, "ledger.%s=%s\n",
			        ms_part_kind_name((enum ms_part_kind)k),
			        ms_ledger_format(&o->led.kind[k], l));
		}
		for (size_t i = 0; i < o->drops.n; i++) {
			const drop_rec *d = &o->drops.v[i];
			fputs("drop=", fp);
			for (uint8_t j = 0; j < d->len; j++)
				fprintf(fp, "%02x", d->tid[j]);
			fprintf(fp, ":%" PRIu64 "\n", d->rows);
		}
	}
	errno = 0;
	bool bad = fflush(fp) != 0 || ferror(fp);
	int e = errno;
	if (fclose(fp) != 0 && !bad) {
		bad = true;
		e = errno;
	}
	return bad ? (e ? e : EIO) : 0;
}

static int
hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	                              : -1;
}

static bool
parse_drop(const char *val, drop_list *d)
{
	const char *colon = strchr(val, ':');
	size_t hl = colon ? (size_t)(colon - val) : 0;
	if (!colon || hl == 0 || hl % 2 || hl / 2 > MS_TRACE_ID_MAX)
		return false;
	uint8_t tid[MS_TRACE_ID_MAX];
	for (size_t j = 0; j < hl / 2; j++) {
		int a = hexval(val[2 * j]), b = hexval(val[2 * j + 1]);
		if (a < 0 || b < 0)
			return false;
		tid[j] = (uint8_t)(a << 4 | b);
	}
	char *end;
	errno = 0;
	unsigned long long rows = strtoull(colon + 1, &end, 10);
	if (errno || *end || !colon[1])
		return false;
	on_drop(d, tid, (uint32_t)(hl / 2), rows);
	return !d->nomem;
}

/* One line of a child's result file into o; *seen gets the bit of its
 * figure (1 << k) or ledger (1 << (R_N + kind)). */
static bool
rep_line(char *line, rep_out *o, uint64_t *seen)
{
	char *eq = strchr(line, '=');
	if (!eq)
		return false;
	*eq = '\0';
	const char *key = line, *val = eq + 1;
	if (!strcmp(key, "drop"))
		return parse_drop(val, &o->drops);
	if (!strncmp(key, "ledger.", 7)) {
		for (int k = 0; k < MS_KIND_COUNT; k++)
			if (!strcmp(key + 7,
			            ms_part_kind_name((enum ms_part_kind)k))) {
				*seen |= 1ull << (R_N + k);
				return ms_ledger_parse(&o->led.kind[k], val) ==
				       0;
			}
		return false;
	}
	for (int k = 0; k < R_N; k++) {
		if (strcmp(key, rep_keys[k]))
			continue;
		char *end;
		errno = 0;
		o->v[k] = strtoull(val, &end, 10);
		*seen |= 1ull << k;
		return !errno && !*end && *val;
	}
	return false;
}

/* The child's result: every line ended by its newline (a file cut short
 * could end in a number cut short), then either its error or every
 * figure and ledger rep_write writes. */
static int
rep_read(const char *path, rep_out *o, ms_errbuf *eb)
{
	FILE *fp = fopen(path, "r");
	if (!fp)
		return ms_fail(eb, ms_err_from_errno(errno),
		               "merge-once: the repetition left no result "
		               "%s: %s",
		               path, strerror(errno));
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int rc = 0;
	unsigned lineno = 0;
	uint64_t seen = 0;
	const uint64_t all = (1ull << (R_N + MS_KIND_COUNT)) - 1;
	while (rc == 0 && (len = getline(&line, &cap, fp)) > 0) {
		lineno++;
		if (line[len - 1] != '\n') {
			rc = ms_fail(eb, MS_ERR_FORMAT,
			             "merge-once: %s:%u: the line is cut short "
			             "(no newline)",
			             path, lineno);
			break;
		}
		line[--len] = '\0';
		if (!strncmp(line, "error=", 6)) {
			/* "error=CODE MESSAGE": the child's error, as is,
			 * when CODE is one; a number that is none (cut to an
			 * int, it could read as 0, success) is an I/O
			 * error. */
			char *msg;
			errno = 0;
			long code = strtol(line + 6, &msg, 10);
			int err = MS_ERR_IO;
			if (!errno && code < 0 && code >= INT_MIN &&
			    strcmp(ms_strerror((int)code),
			           ms_strerror(INT_MIN)) != 0)
				err = (int)code;
			if (*msg == ' ')
				msg++;
			rc = *msg ? ms_fail(eb, err, "%s", msg)
			          : ms_fail(eb, err,
			                    "merge-once: %s:%u: the repetition "
			                    "failed (%s) without saying why",
			                    path, lineno, ms_strerror(err));
		} else if (!rep_line(line, o, &seen)) {
			rc = ms_fail(eb, MS_ERR_FORMAT,
			             "merge-once: %s:%u: not a result line",
			             path, lineno);
		}
	}
	free(line);
	fclose(fp);
	if (rc == 0 && seen != all) {
		int k = 0;
		while (seen >> k & 1)
			k++;
		char key[32];
		snprintf(key, sizeof(key), "%s%s", k < R_N ? "" : "ledger.",
		         k < R_N ? rep_keys[k]
		                 : ms_part_kind_name(
		                           (enum ms_part_kind)(k - R_N)));
		rc = ms_fail(eb, MS_ERR_FORMAT,
		             "merge-once: %s: no %s line; expected every "
		             "figure and ledger of the repetition",
		             path, key);
	}
	return rc;
}

/* Repetition `rep` of variant vi as `EXE __merge-once-rep ...`. */
static int
rep_exec(const once_ctx *c, const char *variant, unsigned rep, size_t vi,
         bool want_drops, rep_out *o, ms_errbuf *eb)
{
	const ms_merge_once_opts *opts = c->o;
	char res[PATH_MAX], srep[16], svi[24];
	if ((size_t)snprintf(res, sizeof(res), "%s/rep-%u-%zu.txt", c->scratch,
	                     rep, vi) >= sizeof(res))
		return ms_fail(eb, MS_ERR_RANGE,
		               "merge-once: path too long: %s", c->scratch);
	snprintf(srep, sizeof(srep), "%u", rep);
	snprintf(svi, sizeof(svi), "%zu", vi);
	unlink(res);
	char *argv[] = {
		(char *)opts->self_exe,
		(char *)"__merge-once-rep",
		(char *)opts->frozen_dir,
		(char *)c->scratch,
		(char *)variant,
		srep,
		svi,
		(char *)ms_staging_mode_name(c->staging),
		(char *)ms_grace_policy_name(c->policy),
		(char *)(opts->run_clock ? "run" : "mature"),
		(char *)c->plugin_dir,
		(char *)ms_plugin_host_mode_name(opts->plugin_host),
		(char *)(opts->plugin_host_exe ? opts->plugin_host_exe : ""),
		res,
		(char *)(want_drops ? "1" : "0"),
		NULL,
	};
	fflush(NULL);
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0)
		return ms_fail(eb, ms_err_from_errno(errno),
		               "merge-once: fork: %s", strerror(errno));
	if (pid == 0) {
		/* A repetition ends with the merge-once that waits for it
		 * (killed, it would go on writing into the scratch copy
		 * that `clean` is to remove). */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 ||
		    getppid() != parent)
			_exit(127);
		execv(opts->self_exe, argv);
		_exit(127);
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return ms_fail(eb, ms_err_from_errno(errno),
			               "merge-once: waitpid: %s",
			               strerror(errno));
	int rc = rep_read(res, o, eb);
	unlink(res);
	if (WIFEXITED(st) && WEXITSTATUS(st) == REP_UNWRITTEN)
		rc = ms_fail(eb, MS_ERR_IO,
		             "merge-once: %s, repetition %u: its result %s "
		             "could not be written (the line above says why)",
		             variant, rep + 1, res);
	else if (rc == 0 && !(WIFEXITED(st) && WEXITSTATUS(st) == 0))
		rc = ms_fail(eb, MS_ERR_IO,
		             "merge-once: %s, repetition %u: the process %s "
		             "%d",
		             variant, rep + 1,
		             WIFEXITED(st) ? "exited with" : "died of signal",
		             WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	else if (rc && WIFEXITED(st) && WEXITSTATUS(st) == 127)
		rc = ms_fail(eb, MS_ERR_IO,
		             "merge-once: cannot run %s for repetition %u",
		             opts->self_exe, rep + 1);
	return rc;
}

static int ctx_init(once_ctx *c, const ms_merge_once_opts *opts,
                    ms__frozen *f, ms_errbuf *eb);

int
ms_merge_once_rep_main(int argc, char **argv)
{
	if (argc != 15) {
		fprintf(stderr, "%s __merge-once-rep: %d arguments, expected "
		                "13 (merge-once starts this itself)\n",
		        argv[0], argc - 2);
		return 2;
	}
	ms_merge_once_opts mo;
	memset(&mo, 0, sizeof(mo));
	mo.frozen_dir = argv[2];
	mo.scratch_dir = argv[3];
	mo.staging = argv[7];
	mo.grace_policy = argv[8];
	mo.run_clock = !strcmp(argv[9], "run");
	mo.plugin_dir = argv[10];
	if (!ms_plugin_host_mode_parse(argv[11], &mo.plugin_host))
		mo.plugin_host = MS_PLUGIN_HOST_INPROC;
	mo.plugin_host_exe = argv[12][0] ? argv[12] : NULL;
	unsigned rep = (unsigned)strtoul(argv[5], NULL, 10);
	size_t vi = (size_t)strtoul(argv[6], NULL, 10);
	once_ctx c;
	ms__frozen f;
	memset(&f, 0, sizeof(f));
	rep_out o;
	memset(&o, 0, sizeof(o));
	ms_errbuf eb = { "" };
	int rc = ctx_init(&c, &mo, &f, &eb);
	if (rc == 0) {
		snprintf(c.scratch, sizeof(c.scratch), "%s", argv[3]);
		rc = run_once(&c, argv[4], rep, vi, false, &o, &eb);
		if (strcmp(argv[14], "1"))
			o.drops.n = 0; /* not asked for */
	}
	int wrc = rep_write(argv[13], &o, rc, &eb);
	drops_free(&o.drops);
	ms__frozen_release(&f);
	if (wrc) {
		fprintf(stderr, "merge-once repetition: cannot write %s: %s\n",
		        argv[13], strerror(wrc));
		return REP_UNWRITTEN;
	}
	return rc ? 1 : 0;
}

/* ---- the oracle ---------------------------------------------------------- */

/* A trace the selection holds: its rows over every input. */
typedef struct sel_trace {
	uint8_t tid[MS_TRACE_ID_MAX];
	uint8_t len;
	bool dropped;
	uint64_t rows;
} sel_trace;

typedef struct sel_list {
	sel_trace *v;
	size_t n, cap;
} sel_list;

/* What the oracle's verdicts are compared with: the selection's traces,
 * the whole frozen shard's, and whether every input was matured. */
typedef struct oracle_in {
	sel_list *sel;
	const sel_list *all;
	bool matured;
} oracle_in;

static int
cmp_sel(const void *a, const void *b)
{
	const sel_trace *x = a, *y = b;
	return ms_trace_id_cmp(x->tid, x->len, y->tid, y->len);
}

static int
cmp_drop(const void *a, const void *b)
{
	const drop_rec *x = a, *y = b;
	return ms_trace_id_cmp(x->tid, x->len, y->tid, y->len);
}

/* Every block of part p (ID id, one block per trace) appended to l. */
static int
part_traces(const ms_part *p, uint64_t id, sel_list *l, ms_errbuf *eb)
{
	ms_part_iter *it = NULL;
	int rc = ms_part_iter_open(&it, p, NULL, NULL, eb);
	const ms_block_info *bi;
	while (rc == 0 && (rc = ms_part_iter_next(it, &bi, eb)) == 1) {
		rc = 0;
		ms__oom oom = { NULL, 0 };
		if (MS__GROW_FOR(l->v, l->cap, l->n + 1, 4096, &oom,
		                 "the list of traces the oracle checks")) {
			rc = ms__oom_fail(eb, &oom,
			                  "merge-once: part %016" PRIx64, id);
			break;
		}
		sel_trace *t = &l->v[l->n++];
		memset(t, 0, sizeof(*t));
		t->len = (uint8_t)bi->trace_id_len;
		memcpy(t->tid, bi->trace_id, t->len);
		t->rows = bi->nrows;
	}
	ms_part_iter_close(it);
	return rc;
}

static void
sel_sort_merge(sel_list *l)
{
	if (!l->n)
		return;
	qsort(l->v, l->n, sizeof(*l->v), cmp_sel);
	size_t k = 0;
	for (size_t i = 0; i < l->n; i++) {
		if (k && !cmp_sel(&l->v[k - 1], &l->v[i]))
			l->v[k - 1].rows += l->v[i].rows;
		else
			l->v[k++] = l->v[i];
	}
	l->n = k;
}

/* The traces of the frozen inputs (sel) and of the whole frozen shard
 * (all), in ID order, each once with its rows, read from the copy
 * verify_copy checked (opening a shard may clean it: never the frozen
 * one). */
static int
frozen_traces(const once_ctx *c, sel_list *sel, sel_list *all, ms_errbuf *eb)
{
	const ms__frozen *f = c->f;
	ms_shard *s = NULL;
	ms_view *v = NULL;
	ms_shard_opts so = { .dir = c->checked };
	int rc = ms_shard_open(&s, &so, eb);
	if (rc == 0)
		rc = ms_shard_view(s, &v, eb);
	size_t found = 0;
	for (size_t i = 0; rc == 0 && v && i < ms_view_count(v); i++) {
		const ms_part *p = ms_view_part(v, i, MS_KIND_CORE);
		uint64_t id = ms_view_id(v, i);
		bool input = false;
		for (size_t j = 0; j < f->ninputs && !input; j++)
			input = f->ids[j] == id;
		found += input;
		rc = part_traces(p, id, all, eb);
		if (rc == 0 && input)
			rc = part_traces(p, id, sel, eb);
	}
	ms_view_release(v);
	ms_shard_close(s);
	if (rc == 0 && found != f->ninputs)
		rc = ms_fail(eb, MS_ERR_NOTFOUND,
		             "merge-once: %zu of the %zu inputs are in %s", found,
		             f->ninputs, c->shard_src);
	if (rc)
		return rc;
	sel_sort_merge(sel);
	sel_sort_merge(all);
	return 0;
}

/* Append a trace ID to a list: as text when every byte is printable
 * (and no comma), else as hex. */
static void
name_tid(char *buf, size_t n, size_t *at, const uint8_t *tid, uint8_t len)
{
	bool text = len > 0;
	for (uint8_t j = 0; j < len; j++)
		text &= tid[j] > 0x20 && tid[j] < 0x7f && tid[j] != ',';
	if (*at + 2 >= n)
		return;
	if (*at)
		buf[(*at)++] = ',';
	for (uint8_t j = 0; j < len && *at + 3 < n; j++)
		*at += (size_t)snprintf(buf + *at, n - *at, text ? "%c" : "%02x",
		                        tid[j]);
	buf[*at] = '\0';
}

/* The first repetition's drops and kept traces against the oracle's
 * verdicts (see Checks above) into res. */
static sel_trace *
sel_find(const sel_list *l, const uint8_t *tid, uint8_t len)
{
	if (!l->n)
		return NULL;
	sel_trace key;
	memcpy(key.tid, tid, len);
	key.len = len;
	return bsearch(&key, l->v, l->n, sizeof(*l->v), cmp_sel);
}

static void
oracle_compare(const ms__oracle *or, const oracle_in *in, drop_list *d,
               const rep_out *o, ms_merge_once_result *res)
{
	sel_list *sel = in->sel;
	char bad[200] = "", kept[200] = "";
	size_t nb = 0, nk = 0;
	uint64_t bad_drops = 0, kept_drops = 0, later = 0, unjudged = 0;
	if (d->n)
		qsort(d->v, d->n, sizeof(*d->v), cmp_drop);
	for (size_t i = 0; i < sel->n; i++)
		sel->v[i].dropped = false;
	for (size_t i = 0; i < d->n; i++) {
		const drop_rec *x = &d->v[i];
		sel_trace *t = sel_find(sel, x->tid, x->len);
		if (t)
			t->dropped = true;
		const ms__oracle_ent *e = ms__oracle_find(or, x->tid, x->len);
		if (e && !e->keep)
			continue;
		if (e && e->failed) {
			unjudged++;
			continue;
		}
		/* Rows published after the freeze: the matured clock drops
		 * what the run's would still have waited for. */
		const sel_trace *a = sel_find(in->all, x->tid, x->len);
		if (e && in->matured && (!a || a->rows < e->rows)) {
			later++;
			continue;
		}
		if (bad_drops++ < NAMED_IDS)
			name_tid(bad, sizeof(bad), &nb, x->tid, x->len);
	}
	for (size_t i = 0; i < sel->n; i++) {
		const sel_trace *t = &sel->v[i];
		if (t->dropped)
			continue;
		const ms__oracle_ent *e = ms__oracle_find(or, t->tid, t->len);
		if (!e || e->keep || e->rows != t->rows)
			continue;
		if (kept_drops++ < NAMED_IDS)
			name_tid(kept, sizeof(kept), &nk, t->tid, t->len);
	}
	const uint64_t *v = o->v;
	/* R_EDGE is not added: a trace retained at the segment's edge is
	 * one of the guard's deferred (R_DEFERRED) already. */
	uint64_t reasons = v[R_CLASS] != MS_SAMPLING_EXECUTED
	                           ? kept_drops
	                           : v[R_DEFERRED] + v[R_UNEVALUATED] +
	                                     v[R_OVERSIZED];
	res->oracle_checked = true;
	res->oracle_bad_drops = bad_drops;
	res->oracle_kept_drops = kept_drops;
	res->oracle_reasons = reasons;
	res->oracle_later = later;
	res->oracle_unjudged = unjudged;
	res->oracle_match = bad_drops == 0 && kept_drops <= reasons;
	char also[200] = "";
	size_t na = 0;
	if (later)
		na += (size_t)snprintf(also, sizeof(also),
		                       " (%" PRIu64 " more with rows published "
		                       "after the freeze, which the matured "
		                       "clock cannot wait for)",
		                       later);
	if (unjudged && na < sizeof(also))
		snprintf(also + na, sizeof(also) - na,
		         " (%" PRIu64 " more the oracle's chain could not "
		         "judge: a link failed open on them)",
		         unjudged);
	if (res->oracle_match)
		snprintf(res->oracle_note, sizeof(res->oracle_note),
		         "match: %zu dropped, %zu dropped by the oracle%s; "
		         "%" PRIu64 " kept that the oracle drops, within the "
		         "%" PRIu64 " kept for a reason",
		         d->n, d->n - (size_t)(later + unjudged), also,
		         kept_drops, reasons);
	else if (bad_drops)
		snprintf(res->oracle_note, sizeof(res->oracle_note),
		         "MISMATCH: %" PRIu64 " of %zu dropped traces are "
		         "kept or unknown by the oracle (%s%s)",
		         bad_drops, d->n, bad, bad_drops > NAMED_IDS ? ",..." : "");
	else
		snprintf(res->oracle_note, sizeof(res->oracle_note),
		         "MISMATCH: %" PRIu64 " whole traces kept that the "
		         "oracle drops, only %" PRIu64 " kept for a reason "
		         "(%s%s)",
		         kept_drops, reasons, kept,
		         kept_drops > NAMED_IDS ? ",..." : "");
}

/* The ledgers of the rows of the traces in d (sorted by cmp_drop) that
 * the frozen inputs hold, read from the checked copy: the blocks of those
 * traces decoded, core rows and the index rows they make. */
static int
drop_ledgers(const once_ctx *c, const drop_list *d, ms_ledger_set *out,
             ms_errbuf *eb)
{
	const ms__frozen *f = c->f;
	ms_ledger_set_init(out);
	ms_mem mem;
	ms_mem_init(&mem, NULL);
	ms_shard *s = NULL;
	ms_view *v = NULL;
	ms_shard_opts so = { .dir = c->checked, .mem = &mem };
	int rc = ms_shard_open(&s, &so, eb);
	if (rc == 0)
		rc = ms_shard_view(s, &v, eb);
	for (size_t i = 0; rc == 0 && i < f->ninputs; i++) {
		const ms_part *p = ms_view_find(v, f->ids[i], MS_KIND_CORE);
		if (!p) {
			rc = ms_fail(eb, MS_ERR_NOTFOUND,
			             "merge-once: input %016" PRIx64
			             " is not in %s",
			             f->ids[i], c->shard_src);
			break;
		}
		ms_part_iter *it = NULL;
		const ms_block_info *bi;
		rc = ms_part_iter_open(&it, p, &mem, NULL, eb);
		while (rc == 0 && (rc = ms_part_iter_next(it, &bi, eb)) == 1) {
			rc = 0;
			drop_rec key;
			key.len = (uint8_t)bi->trace_id_len;
			memcpy(key.tid, bi->trace_id, key.len);
			if (!d->n ||
			    !bsearch(&key, d->v, d->n, sizeof(*d->v), cmp_drop))
				continue;
			ms_ledger_set bl;
			ms_ledger_set_init(&bl);
			if ((rc = ms_ledger_block_decode(it, bi, &bl, eb)) < 0)
				break;
			rc = 0;
			ms_ledger_set_add(out, &bl);
		}
		ms_part_iter_close(it);
	}
	ms_view_release(v);
	ms_shard_close(s);
	return rc;
}

bool
ms__merge_once_recon(uint64_t seq, const ms_ledger_set *in,
                     const ms_ledger_set *gone, uint64_t traces,
                     const ms_ledger_set *out, char *note, size_t n)
{
	char a[MS_LEDGER_STR_MAX], b[MS_LEDGER_STR_MAX];
	for (int k = 0; k < MS_KIND_COUNT; k++) {
		const char *kn = ms_part_kind_name((enum ms_part_kind)k);
		ms_ledger want = in->kind[k];
		if (ms_ledger_sub(&want, &gone->kind[k])) {
			snprintf(note, n,
			         "merge #%" PRIu64 ": its %" PRIu64 " dropped "
			         "traces hold %" PRIu64 " %s rows, more than "
			         "its inputs' %" PRIu64,
			         seq, traces, gone->kind[k].rows, kn,
			         want.rows);
			return false;
		}
		if (ms_ledger_equal(&want, &out->kind[k]))
			continue;
		snprintf(note, n,
		         "merge #%" PRIu64 ": the output's %s ledger is %s, "
		         "expected %s (the inputs' %" PRIu64 " rows minus the "
		         "%" PRIu64 " rows of its %" PRIu64 " dropped traces)",
		         seq, kn, ms_ledger_format(&out->kind[k], a),
		         ms_ledger_format(&want, b), in->kind[k].rows,
		         gone->kind[k].rows, traces);
		return false;
	}
	if (n)
		note[0] = '\0';
	return true;
}

/* Each variant's first repetition's output ledgers against the inputs'
 * minus what it dropped (results[i].ledgers_reconciled, recon_note). */
static int
reconcile(const once_ctx *c, drop_list *drops, const rep_out *first,
          ms_merge_once_result *results, ms_errbuf *eb)
{
	for (size_t i = 0; i < c->o->nvariants; i++) {
		ms_merge_once_result *r = &results[i];
		r->ledgers_reconciled = true;
		r->recon_note[0] = '\0';
		if (first[i].v[R_TRACES_DROPPED] == 0)
			continue; /* equal to the inputs': once_rep checked */
		drop_list *d = &drops[i];
		if (d->n)
			qsort(d->v, d->n, sizeof(*d->v), cmp_drop);
		ms_ledger_set gone;
		int rc = drop_ledgers(c, d, &gone, eb);
		if (rc)
			return rc;
		r->ledgers_reconciled = ms__merge_once_recon(
		        c->f->seq, &r->in_ledger, &gone,
		        first[i].v[R_TRACES_DROPPED], &first[i].led,
		        r->recon_note, sizeof(r->recon_note));
	}
	return 0;
}

/* The oracle's plugins for variant vi are the ones merge-once began with
 * (once_sums), as the run's verdict-oracle gate checks its own: else an
 * error naming the link, the file and both checksums. */
static int
oracle_plugins(const once_ctx *c, size_t vi, const ms__oracle *or,
               ms_errbuf *eb)
{
	const once_sums *s = &c->sums[vi];
	const char *v = c->o->variants[vi];
	for (size_t i = 0; i < s->n && i < or->nlinks; i++)
		if (strcmp(s->sum[i], or->link_checksum[i]) != 0)
			return ms_fail(
			        eb, MS_ERR_CONFLICT,
			        "merge-once: the oracle for %s: link %zu "
			        "plugin %s has checksum %s, the repetitions "
			        "ran checksum %s: the file changed while "
			        "merge-once ran, and the oracle would judge "
			        "with another plugin; run merge-once again",
			        v, i + 1, s->path[i], or->link_checksum[i],
			        s->sum[i]);
	if (s->n != or->nlinks)
		return ms_fail(eb, MS_ERR_CONFLICT,
		               "merge-once: the oracle for %s has %zu links, "
		               "the repetitions' chain %zu",
		               v, or->nlinks, s->n);
	return 0;
}

/* The oracle of each variant with a chain, against its first
 * repetition's drops. The fixture must be the frozen run's. */
static int
oracle_check(const once_ctx *c, drop_list *drops, const rep_out *first,
             ms_merge_once_result *results, ms_errbuf *eb)
{
	const ms_merge_once_opts *opts = c->o;
	bool any = false;
	for (size_t i = 0; i < opts->nvariants; i++)
		any |= strcmp(opts->variants[i], "disabled") != 0;
	if (!any)
		return 0;
	const ms__frozen *f = c->f;
	ms_fixture *fx = NULL;
	sel_list sel = { NULL, 0, 0 };
	int rc = ms_fixture_open(&fx, f->fixture_dir, eb);
	if (rc)
		return rc;
	sel_list all = { NULL, 0, 0 };
	oracle_in in = { &sel, &all, !opts->run_clock };
	const ms_fixture_info *fi = ms_fixture_get_info(fx);
	if (fi->seed != f->fixture_seed ||
	    strcmp(fi->schedule_hash ? fi->schedule_hash : "",
	           f->schedule_hash))
		rc = ms_fail(eb, MS_ERR_CONFLICT,
		             "merge-once: the fixture %s is not the frozen "
		             "run's (seed %" PRIu64 ", frozen %" PRIu64
		             "; or another schedule)",
		             f->fixture_dir, fi->seed, f->fixture_seed);
	if (rc == 0)
		rc = frozen_traces(c, &sel, &all, eb);
	const char *spec = c->oracle_spec;
	for (size_t i = 0; rc == 0 && i < opts->nvariants; i++) {
		if (!strcmp(opts->variants[i], "disabled"))
			continue;
		ms__oracle or;
		rc = ms__oracle_run(&or, fx, spec ? spec : opts->variants[i],
		                    c->plugin_dir, 0, opts->plugin_host,
		                    opts->plugin_host_exe, NULL, false);
		if (rc)
			rc = ms_fail(eb, rc, "merge-once: the oracle for %s: %s",
			             opts->variants[i], or.why);
		else if (spec || !(rc = oracle_plugins(c, i, &or, eb)))
			oracle_compare(&or, &in, &drops[i], &first[i],
			               &results[i]);
		ms__oracle_release(&or);
	}
	free(sel.v);
	free(all.v);
	ms_fixture_close(fx);
	return rc;
}

/* ---- figures --------------------------------------------------------------- */

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

static sample
sample_of(const rep_out *o)
{
	const uint64_t *v = o->v;
	return (sample){ {
		(double)v[R_WALL],
		(double)v[R_CPU],
		(double)v[R_ALLOC],
		(double)v[R_PEAK],
		(double)v[R_COUNT],
		(double)v[R_READ],
		(double)v[R_WRITTEN],
		v[R_IO_IN] ? (double)v[R_WRITTEN] / (double)v[R_IO_IN] : 0,
		(double)v[R_RSS],
		v[R_IO_IN] ? (double)v[R_IO_OUT] / (double)v[R_IO_IN] : 0,
	} };
}

#define MIB(x) ((x) / 1048576.0)

/* The variant column: at least 24 wide, the specs whole up to 40. */
enum { LABEL_MIN = 24, LABEL_MAX = 40 };

/* Every repetition, in the order the variants are listed. */
static void
print_reps(FILE *out, const once_ctx *c, const ms__labels *l, const sample *s,
           unsigned reps)
{
	const ms_merge_once_opts *opts = c->o;
	int w = l->width;
	char lb[24];
	fprintf(out, "%-*s %4s %10s %10s %10s %10s %9s %9s %11s %8s\n", w,
	        "variant", "rep", "wall ms", "cpu ms", "alloc MiB",
	        "allocs", "RSS MiB", "read MiB", "written MiB", "WA");
	for (size_t i = 0; i < opts->nvariants; i++)
		for (unsigned r = 0; r < reps; r++) {
			const double *v = s[i * reps + r].v;
			fprintf(out,
			        "%-*s %4u %10.3f %10.3f %10.3f %10.0f "
			        "%9.2f %9.3f %11.3f %8.4f\n",
			        w, ms__label(l, i, lb), r + 1, v[S_WALL] / 1e6,
			        v[S_CPU] / 1e6, MIB(v[S_ALLOC]), v[S_COUNT],
			        MIB(v[S_RSS]), MIB(v[S_READ]),
			        MIB(v[S_WRITTEN]), v[S_WA]);
		}
	fputc('\n', out);
}

/* A coefficient of variation in percent, in a column n wide: "n/a" for
 * a single repetition, whose spread is not known (not 0.0). */
static const char *
cv_pct(char *buf, size_t bn, int width, double cv, unsigned reps)
{
	if (reps < 2)
		snprintf(buf, bn, "%*s", width, "n/a");
	else
		snprintf(buf, bn, "%*.1f", width, cv * 100);
	return buf;
}

static void
print_medians(FILE *out, const ms__labels *l, const ms_merge_once_result *res,
              size_t nv)
{
	int w = l->width;
	char lb[24], cw[16], cc[16], ca[16], cp[16];
	fprintf(out,
	        "%-*s %10s %6s %10s %6s %11s %6s %10s %6s %9s %9s "
	        "%8s %s\n",
	        w, "variant", "wall ms", "cv%", "cpu ms", "cv%", "alloc MiB",
	        "cv%", "peak MiB", "cv%", "rows in", "rows out", "dropped",
	        "ledgers");
	for (size_t i = 0; i < nv; i++) {
		const ms_merge_once_result *r = &res[i];
		fprintf(out,
		        "%-*s %10.3f %s %10.3f %s %11.3f %s "
		        "%10.3f %s %9" PRIu64 " %9" PRIu64 " %8" PRIu64
		        " %s\n",
		        w, ms__label(l, i, lb), r->wall_median_ns / 1e6,
		        cv_pct(cw, sizeof(cw), 6, r->wall_cv, r->reps),
		        r->cpu_median_ns / 1e6,
		        cv_pct(cc, sizeof(cc), 6, r->cpu_cv, r->reps),
		        MIB(r->alloc_median),
		        cv_pct(ca, sizeof(ca), 6, r->alloc_cv, r->reps),
		        MIB(r->peak_median),
		        cv_pct(cp, sizeof(cp), 6, r->peak_cv, r->reps),
		        r->rows_in, r->rows_out,
		        r->traces_dropped,
		        !r->ledgers_stable       ? "DIFFER"
		        : !r->ledgers_reconciled ? "UNRECONCILED"
		        : r->traces_dropped      ? "stable, reconciled"
		                                 : "stable");
	}
	for (size_t i = 0; i < nv; i++)
		if (!res[i].ledgers_reconciled)
			fprintf(out, "%-*s UNRECONCILED: %s\n", w,
			        ms__label(l, i, lb), res[i].recon_note);
	fprintf(out, "\n%-*s %12s %9s %10s %13s %8s %8s %8s  %s\n", w,
	        "variant (medians)", "allocations", "RSS MiB", "read MiB",
	        "written MiB", "WA", "out/in", "decides", "sampling");
	for (size_t i = 0; i < nv; i++) {
		const ms_merge_once_result *r = &res[i];
		fprintf(out,
		        "%-*s %12.0f %9.2f %10.3f %13.3f %8.4f %8.4f "
		        "%8" PRIu64 "  %s%s%s\n",
		        w, ms__label(l, i, lb), r->count_median,
		        MIB(r->rss_median), MIB(r->read_median),
		        MIB(r->written_median), r->wa_median, r->outin_median,
		        r->plugin_calls, ms_sampling_class_name(r->klass),
		        r->reason ? " " : "",
		        r->reason ? ms_sampling_reason_name(r->reason) : "");
	}
	fprintf(out,
	        "(WA: bytes written over the input parts' bytes, core + "
	        "indexes;\n out/in: output parts' bytes over the same; neither "
	        "depends on --staging)\n");
}

static void
print_table(FILE *out, const once_ctx *c, const ms_merge_once_result *res,
            const sample *s)
{
	const ms__frozen *f = c->f;
	const ms_merge_once_opts *o = c->o;
	size_t nv = o->nvariants;
	uint64_t in_rows = res[0].in_ledger.kind[MS_KIND_CORE].rows;
	ms__labels l = ms__labels_of((const char *const *)o->variants, nv,
	                             LABEL_MIN, LABEL_MAX);
	int w = l.width;
	char lb[24];
	fprintf(out,
	        "merge-once: merge #%" PRIu64 " (%s lane, %zu inputs, %" PRIu64
	        " rows%s) frozen in %s\n",
	        f->seq, f->lane, f->ninputs, in_rows,
	        f->finalize ? ", finalize" : "", o->frozen_dir);
	fprintf(out,
	        "selection: the %s re-run on the frozen state (pass %" PRIu64
	        ", %zu claimed, %zu quarantined, %zu unseen) gives the same "
	        "%zu parts\n",
	        f->finalize ? "finalize rule" : "picker", f->pass,
	        f->claimed.n, f->quarantined.n, f->unseen.n, f->ninputs);
	fprintf(out,
	        "clock: %s; grace policy %s; staging %s; %u repetition%s per "
	        "variant, alternating, %s\n\n",
	        o->run_clock ? "the run's at the barrier"
	                     : "max input max_ts + 2 h (every input mature)",
	        ms_grace_policy_name(c->policy),
	        ms_staging_mode_name(c->staging), res[0].reps,
	        res[0].reps == 1 ? "" : "s",
	        o->self_exe ? "each in a fresh process" : "in this process");
	if (l.numbered) {
		ms__labels_legend(&l, out);
		fputc('\n', out);
	}
	print_reps(out, c, &l, s, res[0].reps);
	print_medians(out, &l, res, nv);
	/* "oracle LABEL": the notes start in one column, under the
	 * variant column's end unless a label is longer than fits there. */
	int ow = w - 7;
	for (size_t i = 0; i < nv; i++)
		if (res[i].oracle_checked &&
		    strlen(ms__label(&l, i, lb)) > (size_t)ow)
			ow = (int)strlen(ms__label(&l, i, lb));
	bool first = true;
	for (size_t i = 0; i < nv; i++)
		if (res[i].oracle_checked) {
			fprintf(out, "%soracle %-*s %s\n", first ? "\n" : "",
			        ow, ms__label(&l, i, lb), res[i].oracle_note);
			first = false;
		}
	if (nv >= 2) {
		/* "ratio to BASE" heads the variant column, or stands on a
		 * line of its own above it when BASE does not fit there. */
		char lb0[24];
		const char *base = ms__label(&l, 0, lb0);
		if (strlen(base) + 9 > (size_t)w)
			fprintf(out, "\nratio to %s\n%-*s", base, w, "");
		else
			fprintf(out, "\nratio to %-*s", w - 9, base);
		fprintf(out, " %10s %10s %11s %10s %10s\n", "wall", "cpu",
		        "alloc", "peak", "RSS");
		for (size_t i = 1; i < nv; i++) {
			const ms_merge_once_result *r = &res[i];
			fprintf(out,
			        "%-*s %9.3fx %9.3fx %10.3fx %9.3fx %9.3fx\n",
			        w, ms__label(&l, i, lb),
			        ratio(r->wall_median_ns, res[0].wall_median_ns),
			        ratio(r->cpu_median_ns, res[0].cpu_median_ns),
			        ratio(r->alloc_median, res[0].alloc_median),
			        ratio(r->peak_median, res[0].peak_median),
			        ratio(r->rss_median, res[0].rss_median));
		}
	}
}

/* ---- the whole round ----------------------------------------------------- */

/* What parent and child both need: options, the frozen file, the run's
 * limits. c->scratch is left to the caller. */
static int
ctx_init(once_ctx *c, const ms_merge_once_opts *opts, ms__frozen *f,
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
	if (rc) {
		/* Named by the option, as every path the user gave is. */
		char why[sizeof(eb->msg)];
		snprintf(why, sizeof(why), "%s", eb ? eb->msg : "");
		return ms_fail(eb, rc, "merge-once: --frozen %s: %s",
		               opts->frozen_dir,
		               why[0] ? why : ms_strerror(rc));
	}
	c->f = f;
	snprintf(c->shard_src, sizeof(c->shard_src), "%s/%s", opts->frozen_dir,
	         MS_FROZEN_SHARD);
	struct stat st;
	if (stat(c->shard_src, &st) < 0 || !S_ISDIR(st.st_mode))
		return ms_fail(eb, MS_ERR_NOTFOUND,
		               "merge-once: --frozen %s: %s: the frozen shard "
		               "is missing",
		               opts->frozen_dir, c->shard_src);
	/* The run's limits (they size the staging budget). */
	ms_limits_detect(&c->limits, NULL, NULL);
	char profile[64];
	snprintf(profile, sizeof(profile), "cpus=%u,mem=%" PRIu64, f->cpus,
	         f->mem_limit);
	return ms_limits_apply_profile(&c->limits, profile, eb);
}

/* The checksum and path of each link's plugin of p (NULL: none). */
static void
note_sums(once_sums *s, const ms_pipeline *p)
{
	const ms_chain *ch = p ? ms_pipeline_chain(p) : NULL;
	size_t n = ch ? ms_chain_len(ch) : 0;
	s->n = n < MS_EV_LINKS_MAX ? n : MS_EV_LINKS_MAX;
	for (size_t i = 0; i < s->n; i++) {
		const ms_plugin *pl = ms_chain_plugin(ch, i);
		snprintf(s->sum[i], sizeof(s->sum[i]), "%s",
		         ms_plugin_checksum(pl));
		snprintf(s->path[i], sizeof(s->path[i]), "%s",
		         ms_plugin_path(pl));
	}
}

/* ctx_init, every variant loading and the scratch directory (made): all
 * checked before any merge runs. On failure c->f (if read) is released
 * by the caller. */
static int
once_setup(once_ctx *c, const ms_merge_once_opts *opts, ms__frozen *f,
           ms_errbuf *eb)
{
	int rc = ctx_init(c, opts, f, eb);
	if (rc)
		return rc;
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
	/* Every variant must load before any work. */
	c->sums = calloc(opts->nvariants, sizeof(*c->sums));
	if (!c->sums)
		return ms_fail(eb, MS_ERR_NOMEM,
		               "merge-once: out of memory for the plugins' "
		               "checksums of %zu variants (%zu bytes)",
		               opts->nvariants,
		               opts->nvariants * sizeof(*c->sums));
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
		note_sums(&c->sums[i], p);
		ms_pipeline_close(p);
	}
	if (opts->scratch_dir ? ms_fs_mkdir_p(c->scratch, 0755, NULL) < 0
	                      : mkdtemp(c->scratch) == NULL)
		return ms_fail(eb, ms_err_from_errno(errno),
		               "merge-once: cannot create %s: %s", c->scratch,
		               strerror(errno));
	return 0;
}

/* Repetition r of variant vi (in a fresh process when the options name
 * the program) into its result, sample and *o; the output's ledgers must
 * repeat, and equal the inputs' when nothing was dropped. */
static int
once_rep(const once_ctx *c, unsigned r, size_t vi, sample *sm,
         const ms_ledger_set *in_sum, rep_out *o, ms_merge_once_result *out,
         ms_errbuf *eb)
{
	const ms_merge_once_opts *opts = c->o;
	const char *variant = opts->variants[vi];
	bool want_drops = r == 0 && strcmp(variant, "disabled") != 0;
	rep_out mine;
	memset(&mine, 0, sizeof(mine));
	int rc = opts->self_exe
	                 ? rep_exec(c, variant, r, vi, want_drops, &mine, eb)
	                 : run_once(c, variant, r, vi, true, &mine, eb);
	if (rc) {
		drops_free(&mine.drops);
		return rc;
	}
	*sm = sample_of(&mine);
	const uint64_t *v = mine.v;
	out->rows_in = v[R_ROWS_IN];
	out->rows_out = v[R_ROWS_OUT];
	out->traces_dropped = v[R_TRACES_DROPPED];
	out->klass = (enum ms_sampling_class)v[R_CLASS];
	out->reason = (enum ms_sampling_reason)v[R_REASON];
	out->plugin_calls = v[R_CALLS];
	out->out_ledger = mine.led;
	if (r == 0) {
		if (!want_drops)
			drops_free(&mine.drops);
		*o = mine; /* the first repetition's, drops and all */
	} else {
		drops_free(&mine.drops);
		if (!ms_ledger_set_equal(&o->led, &mine.led))
			out->ledgers_stable = false;
	}
	if (v[R_TRACES_DROPPED] == 0 && v[R_ROWS_DROPPED] == 0 &&
	    !ms_ledger_set_equal(&mine.led, in_sum)) {
		char a[MS_LEDGER_STR_MAX], b[MS_LEDGER_STR_MAX];
		return ms_fail(eb, MS_ERR_CORRUPT,
		               "merge-once: %s dropped nothing but its "
		               "output ledger (core %s) differs from the "
		               "inputs' (core %s) recorded in %s",
		               variant,
		               ms_ledger_format(&mine.led.kind[MS_KIND_CORE], a),
		               ms_ledger_format(&in_sum->kind[MS_KIND_CORE], b),
		               opts->frozen_dir);
	}
	return 0;
}

static void
results_init(const once_ctx *c, unsigned reps, ms_merge_once_result *results)
{
	ms_ledger_set in_sum;
	ms_ledger_set_init(&in_sum);
	for (size_t i = 0; i < c->f->ninputs; i++)
		ms_ledger_set_add(&in_sum, &c->f->ledgers[i]);
	for (size_t i = 0; i < c->o->nvariants; i++) {
		memset(&results[i], 0, sizeof(results[i]));
		results[i].variant = c->o->variants[i];
		results[i].reps = reps;
		results[i].ledgers_stable = true;
		results[i].in_ledger = in_sum;
	}
}

static void
medians(const sample *s, unsigned reps, ms_merge_once_result *o)
{
	double cv;
	stats_of(s, reps, S_WALL, &o->wall_median_ns, &o->wall_cv);
	stats_of(s, reps, S_CPU, &o->cpu_median_ns, &o->cpu_cv);
	stats_of(s, reps, S_ALLOC, &o->alloc_median, &o->alloc_cv);
	stats_of(s, reps, S_PEAK, &o->peak_median, &o->peak_cv);
	stats_of(s, reps, S_COUNT, &o->count_median, &cv);
	stats_of(s, reps, S_READ, &o->read_median, &cv);
	stats_of(s, reps, S_WRITTEN, &o->written_median, &cv);
	stats_of(s, reps, S_WA, &o->wa_median, &cv);
	stats_of(s, reps, S_RSS, &o->rss_median, &o->rss_cv);
	stats_of(s, reps, S_OUTIN, &o->outin_median, &cv);
}

/* Every repetition of every variant, alternating (see Order above), then
 * the medians, the oracle's check and the table. */
static int
once_measure(const once_ctx *c, ms_merge_once_result *results, ms_errbuf *eb)
{
	const ms_merge_once_opts *opts = c->o;
	unsigned reps = opts->reps ? opts->reps : DEFAULT_REPS;
	size_t nv = opts->nvariants;
	sample *samples = calloc(nv * reps, sizeof(*samples));
	rep_out *first = calloc(nv, sizeof(*first));
	drop_list *drops = calloc(nv, sizeof(*drops));
	if (!samples || !first || !drops) {
		ms__oom oom = {
			!samples ? "the samples of every repetition"
			: !first ? "the first repetition of each variant"
			         : "the dropped traces of each variant",
			!samples ? nv * reps * sizeof(*samples)
			: !first ? nv * sizeof(*first)
			         : nv * sizeof(*drops),
		};
		free(samples);
		free(first);
		free(drops);
		return ms__oom_fail(eb, &oom, "merge-once of merge #%" PRIu64,
		                    c->f->seq);
	}
	results_init(c, reps, results);
	const ms_ledger_set *in_sum = &results[0].in_ledger;
	int rc = 0;
	for (unsigned r = 0; r < reps && rc == 0; r++)
		for (size_t k = 0; k < nv && rc == 0; k++) {
			size_t vi = r % 2 ? nv - 1 - k : k;
			rc = once_rep(c, r, vi, &samples[vi * reps + r], in_sum,
			              &first[vi], &results[vi], eb);
		}
	for (size_t i = 0; i < nv; i++) {
		drops[i] = first[i].drops;
		memset(&first[i].drops, 0, sizeof(first[i].drops));
		if (rc == 0)
			medians(&samples[i * reps], reps, &results[i]);
	}
	for (size_t i = 0; c->forget_drop && i < nv; i++)
		drops[i].n -= drops[i].n > 0;
	if (rc == 0)
		rc = reconcile(c, drops, first, results, eb);
	if (rc == 0)
		rc = oracle_check(c, drops, first, results, eb);
	if (rc == 0 && opts->out)
		print_table(opts->out, c, results, samples);
	for (size_t i = 0; i < nv; i++)
		drops_free(&drops[i]);
	free(samples);
	free(first);
	free(drops);
	return rc;
}

int
ms_merge_once(const ms_merge_once_opts *opts, ms_merge_once_result *results,
              ms_errbuf *eb)
{
	return ms__merge_once_oracle(opts, results, NULL, eb);
}

int
ms__merge_once_oracle(const ms_merge_once_opts *opts,
                      ms_merge_once_result *results, const char *oracle_spec,
                      ms_errbuf *eb)
{
	return ms__merge_once_test(opts, results, oracle_spec, false, eb);
}

int
ms__merge_once_test(const ms_merge_once_opts *opts,
                    ms_merge_once_result *results, const char *oracle_spec,
                    bool forget_drop, ms_errbuf *eb)
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
	c.oracle_spec = oracle_spec;
	c.forget_drop = forget_drop;
	if (rc == 0) {
		made = true;
		rc = verify_copy(&c, eb);
	}
	if (rc == 0)
		rc = once_measure(&c, results, eb);
	if (c.checked[0])
		ms_fs_rm_tree(c.checked, NULL);
	if (made && !opts->scratch_dir)
		ms_fs_rm_tree(c.scratch, NULL);
	free(c.sums);
	ms__frozen_release(&f);
	return rc;
}
