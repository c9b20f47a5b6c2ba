/*
 * bench.c - the figures of a bench series (ms_bench.h): each run database
 * read into one row of metrics per phase, the validity conditions checked
 * against the conditions most runs share, and per variant and phase the median,
 * p95, min, max and CV of every metric with the delta of the median against the
 * first variant.
 */
#include "ms_bench.h"

#include "ev_private.h"
#include "labels.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1024.0 * 1024.0)

static const struct {
	const char *key, *name, *unit;
	int prec;
} metrics[MS_BM_COUNT] = {
	[MS_BM_WALL_S] = { "wall_s", "wall", "s", 3 },
	[MS_BM_CPU_S] = { "cpu_s", "cpu", "s", 3 },
	[MS_BM_ALLOC_MIB] = { "alloc_mib", "allocated", "MiB", 1 },
	[MS_BM_ALLOCS] = { "allocs", "allocations", "", 0 },
	[MS_BM_RSS_MIB] = { "rss_peak_mib", "peak RSS", "MiB", 1 },
	[MS_BM_READ_MIB] = { "read_mib", "read", "MiB", 1 },
	[MS_BM_WRITTEN_MIB] = { "written_mib", "written", "MiB", 1 },
	[MS_BM_WRITE_AMP] = { "write_amp", "write amp", "x", 4 },
	[MS_BM_CG_PEAK_MIB] = { "cgroup_peak_mib", "cgroup peak", "MiB", 1 },
};

const char *
ms_bench_metric_key(enum ms_bench_metric m)
{
	return (unsigned)m < MS_BM_COUNT ? metrics[m].key : "?";
}

const char *
ms_bench_row_name(unsigned row)
{
	return row == MS_BENCH_RUN ? "run"
	                           : ms_ev_phase_name((enum ms_ev_phase_id)row);
}

bool
ms_bench_row_has(unsigned row, enum ms_bench_metric m)
{
	return (row == MS_BENCH_RUN) == (m == MS_BM_CG_PEAK_MIB);
}

/* Merge bytes in and out per phase, for the write amplification. */
typedef struct io_sum {
	double in[MS_EV_PHASE_COUNT], out[MS_EV_PHASE_COUNT];
	bool finalized;
} io_sum;

static int
sum_merge(void *ctx, const ms_ev_merge *m)
{
	io_sum *s = ctx;
	unsigned p = ms__ev_merge_phase(m);
	if (m->err)
		return 0;
	s->finalized |= strcmp(m->lane, MS_LANE_FINALIZE) == 0;
	ms__ev_io io = ms__ev_merge_io(m);
	s->in[p] += (double)io.core_in + (double)io.idx_in;
	s->out[p] += (double)io.core_out + (double)io.idx_out;
	return 0;
}

typedef struct load_ctx {
	ms_bench_run *r;
	bool seen[MS_EV_PHASE_COUNT];
	char failed_gate[MS_EV_NAME_MAX];
} load_ctx;

static int
take_phase(void *ctx, const ms_ev_phase *p)
{
	load_ctx *c = ctx;
	if ((unsigned)p->phase >= MS_EV_PHASE_COUNT)
		return 0;
	double *m = c->r->m[p->phase];
	c->seen[p->phase] = true;
	m[MS_BM_WALL_S] = (double)p->wall_ns / 1e9;
	m[MS_BM_CPU_S] = (double)p->cpu_ns / 1e9;
	m[MS_BM_ALLOC_MIB] = (double)p->alloc_bytes / MIB;
	m[MS_BM_ALLOCS] = (double)p->alloc_count;
	m[MS_BM_RSS_MIB] = (double)p->rss_peak / MIB;
	m[MS_BM_READ_MIB] = (double)p->bytes_read / MIB;
	m[MS_BM_WRITTEN_MIB] = (double)p->bytes_written / MIB;
	return 0;
}

static int
take_gate(void *ctx, const ms_ev_gate *g)
{
	load_ctx *c = ctx;
	if (!g->pass && !c->failed_gate[0])
		snprintf(c->failed_gate, sizeof(c->failed_gate), "%s", g->name);
	return 0;
}

static void
invalid(ms_bench_run *r, const char *why)
{
	r->valid = false;
	snprintf(r->why, sizeof(r->why), "%s", why);
}

int
ms_bench_load(ms_bench_run *r, ms_errbuf *eb)
{
	ms_evdb *db = NULL;
	ms_errbuf e = { "" };
	ms_ev_run_end end;
	bool has_end = false;
	load_ctx c = { .r = r };
	io_sum io = { { 0 }, { 0 }, false };
	memset(r->m, 0, sizeof(r->m));
	r->valid = true;
	r->why[0] = '\0';
	int rc = ms_evdb_open(&db, r->db, &e);
	if (rc == 0)
		rc = ms_evdb_run(db, &r->run, &end, &has_end, &e);
	if (rc == 0)
		rc = ms_evdb_each_phase(db, take_phase, &c, &e);
	if (rc == 0)
		rc = ms_evdb_each_merge(db, NULL, sum_merge, &io, &e);
	if (rc == 0)
		rc = ms_evdb_each_gate(db, take_gate, &c, &e);
	ms_evdb_close(db);
	if (rc == MS_ERR_NOMEM) { /* the database's message names it */
		if (eb)
			*eb = e;
		return rc;
	}
	if (rc) {
		invalid(r, e.msg[0] ? e.msg : ms_strerror(rc));
		return 0;
	}
	snprintf(r->label, sizeof(r->label), "%s",
	         r->run.variant[0] ? r->run.variant : r->run.chain);
	r->finalized = io.finalized;
	for (unsigned p = 0; p < MS_EV_PHASE_COUNT; p++) {
		r->m[p][MS_BM_WRITE_AMP] =
		        io.in[p] > 0 ? io.out[p] / io.in[p] : 0;
		r->m[p][MS_BM_CG_PEAK_MIB] = NAN;
	}
	/* The cgroup keeps one high-water mark for the whole run: a figure
	 * of the run, not of a phase; a run without one has no figure (not
	 * a peak of 0). */
	for (unsigned k = 0; k < MS_BM_COUNT; k++)
		r->m[MS_BENCH_RUN][k] = NAN;
	r->m[MS_BENCH_RUN][MS_BM_CG_PEAK_MIB] =
	        has_end && ms__ev_run_in_cgroup(&r->run)
	                ? (double)end.cgroup_peak_bytes / MIB
	                : NAN;
	char why[512];
	if (!has_end || strcmp(end.status, "complete") != 0) {
		snprintf(why, sizeof(why), "run status \"%s\", not complete",
		         has_end ? end.status : "unfinished");
		invalid(r, why);
	} else if (!c.seen[MS_EV_PHASE_PRIMARY] ||
	           !c.seen[MS_EV_PHASE_COOLDOWN]) {
		invalid(r, "no phase record for primary or cooldown");
	} else if (c.failed_gate[0]) {
		snprintf(why, sizeof(why), "gate %s failed", c.failed_gate);
		invalid(r, why);
	}
	return 0;
}

const char *
ms_bench_difference(const ms_ev_run *a, const ms_ev_run *b, unsigned k,
                    char *va, char *vb, size_t n)
{
#define STR(field, what)                                                       \
	if (strcmp(a->field, b->field) != 0 && k-- == 0) {                     \
		snprintf(va, n, "%s", a->field);                               \
		snprintf(vb, n, "%s", b->field);                               \
		return what;                                                   \
	}
#define NUM(field, what)                                                       \
	if (a->field != b->field && k-- == 0) {                                \
		snprintf(va, n, "%llu", (unsigned long long)a->field);         \
		snprintf(vb, n, "%llu", (unsigned long long)b->field);         \
		return what;                                                   \
	}
	STR(fixture_hash, "fixture");
	STR(fixture_parts_hash, "fixture parts");
	STR(version, "mergescope version");
	STR(binary_checksum, "binary");
	STR(git_commit, "commit");
	STR(compiler, "compiler");
	STR(cpu_model, "CPU model");
	STR(cache_label, "cache label");
	STR(profile, "profile");
	NUM(emulated_cpus, "emulated cpus");
	NUM(emulated_mem_bytes, "emulated memory");
	STR(limits_mode, "limits envelope");
	NUM(pids_max, "pid limit");
	NUM(fast_workers, "fast workers");
	NUM(slow_workers, "slow workers");
	NUM(serial, "serial");
	STR(grace_policy, "grace policy");
	STR(hostname, "host");
	STR(kernel, "kernel");
	STR(filesystem, "work-dir file system");
	STR(device, "storage device");
#undef STR
#undef NUM
	return NULL;
}

/* Whether valid runs a and b were made under the same conditions. */
static bool
same_conditions(const ms_bench_run *a, const ms_bench_run *b)
{
	char va[MS_EV_TEXT_MAX], vb[MS_EV_TEXT_MAX];
	return ms_bench_difference(&a->run, &b->run, 0, va, vb, sizeof(va)) ==
	       NULL;
}

/* The reference run: the earliest of the conditions most valid runs
 * share (the earliest such set on a tie), so one odd run at the start
 * does not leave the rest out. NULL when no run is valid. */
static const ms_bench_run *
reference(const ms_bench_run *runs, size_t n)
{
	const ms_bench_run *ref = NULL;
	size_t best = 0;
	for (size_t i = 0; i < n; i++) {
		if (!runs[i].valid)
			continue;
		/* Only the first run of each set of conditions counts it. */
		bool seen = false;
		for (size_t j = 0; j < i && !seen; j++)
			seen = runs[j].valid &&
			       same_conditions(&runs[j], &runs[i]);
		size_t k = 0;
		for (size_t j = i; j < n && !seen; j++)
			k += runs[j].valid &&
			     same_conditions(&runs[i], &runs[j]);
		if (k > best) {
			best = k;
			ref = &runs[i];
		}
	}
	return ref;
}

void
ms_bench_validate(ms_bench_run *runs, size_t n)
{
	const ms_bench_run *ref = reference(runs, n);
	if (!ref)
		return;
	for (size_t i = 0; i < n; i++) {
		ms_bench_run *r = &runs[i];
		if (!r->valid || r == ref)
			continue;
		char va[MS_EV_TEXT_MAX], vb[MS_EV_TEXT_MAX];
		const char *what = ms_bench_difference(&ref->run, &r->run, 0,
		                                       va, vb, sizeof(va));
		if (what)
			snprintf(r->why, sizeof(r->why),
			         "%s \"%.200s\" differs from \"%.200s\" of %s",
			         what, vb, va, ref->db);
		r->valid = what == NULL;
	}
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

void
ms_bench_stat_of(double *v, size_t n, ms_bench_stat *out)
{
	memset(out, 0, sizeof(*out));
	out->n = n;
	if (n == 0)
		return;
	qsort(v, n, sizeof(*v), cmp_double);
	out->min = v[0];
	out->max = v[n - 1];
	out->median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	size_t rank = (size_t)ceil(0.95 * (double)n);
	out->p95 = v[rank ? rank - 1 : 0];
	if (n < 2)
		return;
	double mean = 0, ss = 0;
	for (size_t i = 0; i < n; i++)
		mean += v[i];
	mean /= (double)n;
	for (size_t i = 0; i < n; i++)
		ss += (v[i] - mean) * (v[i] - mean);
	if (mean != 0)
		out->cv = sqrt(ss / (double)(n - 1)) / fabs(mean);
}

/* Statistics of metric k in phase p over the valid runs of variant vi
 * that have a figure for it. */
static int
stat_for(const ms_bench_run *runs, size_t n, unsigned vi, unsigned p,
         unsigned k, ms_bench_stat *st)
{
	double *v = malloc((n ? n : 1) * sizeof(*v));
	if (!v)
		return MS_ERR_NOMEM;
	size_t c = 0;
	for (size_t i = 0; i < n; i++)
		if (runs[i].valid && runs[i].variant == vi &&
		    !isnan(runs[i].m[p][k]))
			v[c++] = runs[i].m[p][k];
	ms_bench_stat_of(v, c, st);
	free(v);
	return 0;
}

/* The change of x against base in %: none from 0 to 0, and no figure
 * (NaN: "n/a" in the table, null in the JSON) from 0 to anything else,
 * which no percentage measures. */
static double
delta_pct(double base, double x)
{
	if (base == 0)
		return x == 0 ? 0 : NAN;
	return 100.0 * (x - base) / base;
}

/* Whether variant vi's valid runs ran their finalize: 1 all, 0 none, -1
 * some, -2 no valid run. */
static int
variant_finalized(const ms_bench_run *runs, size_t n, unsigned vi)
{
	size_t yes = 0, all = 0;
	for (size_t i = 0; i < n; i++)
		if (runs[i].valid && runs[i].variant == vi) {
			all++;
			yes += runs[i].finalized;
		}
	return all == 0 ? -2 : yes == all ? 1 : yes == 0 ? 0 : -1;
}

/* A variant whose runs ran no finalize (skipped: no sampler, as in the
 * reference) beside one whose runs did: the cooldown deltas between them
 * count the whole finalize merge, not a sampler's cost. Say so. */
static void
note_unfinalized(const ms_bench_run *runs, size_t n,
                 const char *const *labels, size_t nv, FILE *f)
{
	bool any_ran = false;
	for (unsigned vi = 0; vi < nv; vi++)
		any_ran |= variant_finalized(runs, n, vi) == 1;
	for (unsigned vi = 0; vi < nv && any_ran; vi++) {
		int fin = variant_finalized(runs, n, vi);
		if (fin == 0 || fin == -1)
			fprintf(f,
			        "\nnote: %s: %s of its runs ran no finalize "
			        "(skipped, as the reference does without a "
			        "sampler): cooldown deltas against it count "
			        "the whole finalize merge\n",
			        labels[vi], fin == 0 ? "all" : "some");
	}
}

/* s, or "-" when the runs did not record it. */
static const char *
or_dash(const char *s)
{
	return s[0] ? s : "-";
}

/* The conditions the figures were made under (those of the reference
 * run, which every valid run shares): above all whether the profile's
 * limits were enforced by a cgroup or only emulated, and why. */
static void
conditions_text(const ms_bench_run *runs, size_t n, FILE *f)
{
	const ms_bench_run *ref = reference(runs, n);
	if (!ref)
		return;
	const ms_ev_run *u = &ref->run;
	const char *mode = u->limits_mode[0] ? u->limits_mode : "host";
	bool emulated = strcmp(mode, "emulated") == 0;
	fprintf(f,
	        "conditions: fixture %s %s  profile %s  cache %s  host %s  "
	        "commit %s\nenvelope: %s%s%s%s\n",
	        or_dash(u->fixture_preset), or_dash(u->fixture_hash),
	        or_dash(u->profile), or_dash(u->cache_label),
	        or_dash(u->hostname), or_dash(u->git_commit), mode,
	        emulated ? ": sized from the profile, not enforced (" : "",
	        emulated ? or_dash(u->limits_why) : "", emulated ? ")" : "");
}

static void
conditions_json(const ms_bench_run *runs, size_t n, FILE *f)
{
	const ms_bench_run *ref = reference(runs, n);
	if (!ref) {
		fputs("null", f);
		return;
	}
	const ms_ev_run *u = &ref->run;
	const char *const kv[][2] = {
		{ "fixture_preset", u->fixture_preset },
		{ "fixture_hash", u->fixture_hash },
		{ "profile", u->profile },
		{ "limits_mode", u->limits_mode[0] ? u->limits_mode : "host" },
		{ "limits_why", u->limits_why },
		{ "cache_label", u->cache_label },
		{ "hostname", u->hostname },
		{ "git_commit", u->git_commit },
	};
	for (size_t i = 0; i < sizeof(kv) / sizeof(kv[0]); i++) {
		fprintf(f, "%s\"%s\":", i ? "," : "{", kv[i][0]);
		ms__json_str(f, kv[i][1]);
	}
	fputc('}', f);
}

static int
write_text(const ms_bench_run *runs, size_t n, const char *const *labels,
           size_t nv, FILE *f)
{
	size_t valid = 0;
	for (size_t i = 0; i < n; i++)
		valid += runs[i].valid;
	fprintf(f, "bench series: %zu runs, %zu valid, %zu variants\n", n,
	        valid, nv);
	conditions_text(runs, n, f);
	/* The variant column: at least 14 wide, the specs whole up to 40. */
	ms__labels l = ms__labels_of(labels, nv, 14, 40);
	int w = l.width;
	char lb[24];
	if (l.numbered) {
		fputc('\n', f);
		ms__labels_legend(&l, f);
	}
	for (unsigned p = 0; p < MS_BENCH_ROWS; p++) {
		fprintf(f, "\n%-18s %-*s %3s %12s %12s %12s %12s %7s %8s\n",
		        ms_bench_row_name(p), w, "variant", "n", "median", "p95",
		        "min", "max", "cv%", "delta%");
		for (unsigned k = 0; k < MS_BM_COUNT; k++) {
			ms_bench_stat base;
			if (!ms_bench_row_has(p, (enum ms_bench_metric)k))
				continue;
			int rc = stat_for(runs, n, 0, p, k, &base);
			for (unsigned vi = 0; vi < nv && rc == 0; vi++) {
				ms_bench_stat st;
				rc = stat_for(runs, n, vi, p, k, &st);
				if (rc)
					break;
				char name[40] = "";
				if (vi == 0)
					snprintf(name, sizeof(name), "%s%s%s",
					         metrics[k].name,
					         metrics[k].unit[0] ? " " : "",
					         metrics[k].unit);
				int pr = metrics[k].prec;
				if (st.n == 0) {
					fprintf(f,
					        "%-18s %-*s %3zu %12s %12s "
					        "%12s %12s %7s\n",
					        name, w, ms__label(&l, vi, lb), st.n, "-", "-",
					        "-", "-", "-");
					continue;
				}
				/* One run has no spread: n/a, not a cv of 0. */
				char cv[16];
				if (st.n < 2)
					snprintf(cv, sizeof(cv), "%7s", "n/a");
				else
					snprintf(cv, sizeof(cv), "%7.2f",
					         100.0 * st.cv);
				fprintf(f,
				        "%-18s %-*s %3zu %12.*f %12.*f "
				        "%12.*f %12.*f %s",
				        name, w, ms__label(&l, vi, lb), st.n,
				        pr, st.median, pr, st.p95, pr, st.min,
				        pr, st.max, cv);
				double d = delta_pct(base.median, st.median);
				if (vi == 0 || !base.n || !st.n)
					fputc('\n', f);
				else if (isnan(d))
					fprintf(f, " %8s\n", "n/a");
				else if (fabs(d) < 0.005) /* as report --vs */
					fprintf(f, " %8s\n", "0.00");
				else
					fprintf(f, " %+8.2f\n", d);
			}
			if (rc)
				return rc;
		}
	}
	note_unfinalized(runs, n, labels, nv, f);
	if (valid < n) {
		fprintf(f, "\nleft out of every figure:\n");
		for (size_t i = 0; i < n; i++)
			if (!runs[i].valid)
				fprintf(f, "  %s: %s\n", runs[i].db,
				        runs[i].why);
	}
	return 0;
}

/* The statistics of variant vi's metrics of row p, as JSON members
 * ("wall_s":{"n":..,"median":..,...}); MS_ERR_NOMEM or 0. */
static int
json_row(const ms_bench_run *runs, size_t n, unsigned vi, unsigned p, FILE *f)
{
	static const char *const fk[] = { "median", "p95", "min", "max",
		                          "cv" };
	bool first = true;

	for (unsigned k = 0; k < MS_BM_COUNT; k++) {
		ms_bench_stat st, base;
		if (!ms_bench_row_has(p, (enum ms_bench_metric)k))
			continue;
		if (stat_for(runs, n, vi, p, k, &st) ||
		    stat_for(runs, n, 0, p, k, &base))
			return MS_ERR_NOMEM;
		fprintf(f, "%s\"%s\":{\"n\":%zu", first ? "" : ",",
		        metrics[k].key, st.n);
		first = false;
		const double fv[] = { st.median, st.p95, st.min, st.max,
			              st.cv };
		for (size_t j = 0; j < 5; j++) {
			fprintf(f, ",\"%s\":", fk[j]);
			/* The cv (the last) needs two runs. */
			size_t need = j == 4 ? 2 : 1;
			if (st.n >= need)
				ms__json_fig(f, fv[j]);
			else
				fputs("null", f);
		}
		fprintf(f, ",\"delta_pct\":");
		if (base.n && st.n)
			ms__json_fig(f, delta_pct(base.median, st.median));
		else
			fputs("null", f);
		fprintf(f, "}");
	}
	return 0;
}

static int
write_json(const ms_bench_run *runs, size_t n, const char *const *labels,
           size_t nv, FILE *f)
{
	fprintf(f, "{\"format\":\"mergescope-bench\",\"version\":1,"
	           "\"base\":");
	ms__json_str(f, nv ? labels[0] : "");
	fprintf(f, ",\"conditions\":");
	conditions_json(runs, n, f);
	fprintf(f, ",\"runs\":[");
	for (size_t i = 0; i < n; i++) {
		const ms_bench_run *r = &runs[i];
		fprintf(f, "%s{\"db\":", i ? "," : "");
		ms__json_str(f, r->db);
		fprintf(f, ",\"rep\":%u,\"variant\":", r->rep);
		ms__json_str(f, r->variant < nv ? labels[r->variant] : "");
		fprintf(f, ",\"valid\":%s", r->valid ? "true" : "false");
		if (!r->valid) {
			fprintf(f, ",\"why\":");
			ms__json_str(f, r->why);
		}
		fprintf(f, "}");
	}
	fprintf(f, "],\"variants\":[");
	for (unsigned vi = 0; vi < nv; vi++) {
		fprintf(f, "%s{\"name\":", vi ? "," : "");
		ms__json_str(f, labels[vi]);
		int fin = variant_finalized(runs, n, vi);
		fprintf(f, ",\"finalized\":%s,\"phases\":{",
		        fin == 1 ? "true" : fin == 0 ? "false" : "null");
		for (unsigned p = 0; p < MS_BENCH_ROWS; p++) {
			if (p == MS_BENCH_RUN)
				fprintf(f, "},\"run\":{");
			else
				fprintf(f, "%s\"%s\":{", p ? "," : "",
				        ms_bench_row_name(p));
			if (json_row(runs, n, vi, p, f))
				return MS_ERR_NOMEM;
			if (p != MS_BENCH_RUN)
				fprintf(f, "}");
		}
		fprintf(f, "}}");
	}
	fprintf(f, "]}\n");
	return 0;
}

int
ms_bench_empty_variant(const ms_bench_run *runs, size_t n, size_t nvariants)
{
	for (size_t vi = 0; vi < nvariants; vi++) {
		bool any = false;
		for (size_t i = 0; i < n && !any; i++)
			any = runs[i].valid && runs[i].variant == vi;
		if (!any)
			return (int)vi;
	}
	return -1;
}

int
ms_bench_summary(const ms_bench_run *runs, size_t n, const char *const *labels,
                 size_t nvariants, FILE *text, FILE *json, ms_errbuf *eb)
{
	int rc = 0;
	if (text)
		rc = write_text(runs, n, labels, nvariants, text);
	if (rc == 0 && json)
		rc = write_json(runs, n, labels, nvariants, json);
	if (rc == MS_ERR_NOMEM) /* stat_for's copy of the figures */
		return ms_fail(eb, rc,
		               "bench summary: out of memory for the figures "
		               "of %zu runs (%zu bytes)",
		               n, (n ? n : 1) * sizeof(double));
	if (rc == 0 && ((text && ferror(text)) || (json && ferror(json))))
		return ms_fail(eb, MS_ERR_IO, "bench summary: write failed");
	return rc;
}
