/*
 * ms_bench.h - a bench series: the figures of many run databases of the
 * same fixture (one per process and variant), summarised per variant and
 * phase as median, p95, min, max and coefficient of variation, with the
 * delta of each median against the first variant's. `mergescope bench`
 * runs the series (tui/cmd_bench.c); this is the part that reads the
 * databases and writes the table and the JSON.
 *
 * A run that breaks a validity condition (not complete, a failed gate,
 * another fixture, version, binary, commit, compiler, CPU model, cache
 * label, profile, limits, envelope, serial, grace policy, host, kernel
 * or work-dir file system than the conditions most of the series' valid
 * runs share) is listed by name with the reason and left out of every
 * figure.
 */
#ifndef MS_BENCH_H
#define MS_BENCH_H

#include "ms_err.h"
#include "ms_replay_events.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* The metrics of one run, in this order: per phase, but the cgroup's
 * peak, which is the whole run's (ms_bench_row_has). */
enum ms_bench_metric {
	MS_BM_WALL_S = 0,  /* phase wall, seconds */
	MS_BM_CPU_S,       /* process CPU, seconds */
	MS_BM_ALLOC_MIB,   /* bytes allocated, MiB */
	MS_BM_ALLOCS,      /* allocations */
	MS_BM_RSS_MIB,     /* peak RSS, MiB */
	MS_BM_READ_MIB,    /* bytes read, MiB */
	MS_BM_WRITTEN_MIB, /* bytes written, MiB */
	MS_BM_WRITE_AMP,   /* merge output / merge input (core + index) */
	MS_BM_CG_PEAK_MIB, /* the run cgroup's peak memory (the run row) */
	MS_BM_COUNT
};

/* "wall_s", "cpu_s", ... (the JSON key). */
const char *ms_bench_metric_key(enum ms_bench_metric m);

/* The rows of ms_bench_run.m: one per phase (enum ms_ev_phase_id), then
 * MS_BENCH_RUN for the figures measured once for the whole run. */
#define MS_BENCH_RUN MS_EV_PHASE_COUNT
#define MS_BENCH_ROWS (MS_EV_PHASE_COUNT + 1)

/* Row's name: the phase's ("primary", "cooldown"), or "run". */
const char *ms_bench_row_name(unsigned row);

/* Whether row has a figure for metric m: the cgroup's peak (one
 * high-water mark kept for the whole run) only the run row, every other
 * metric only the phases. */
bool ms_bench_row_has(unsigned row, enum ms_bench_metric m);

typedef struct ms_bench_run {
	char db[4096];              /* database path */
	unsigned rep;               /* repetition, from 0 */
	unsigned variant;           /* index into the series' variants */
	char label[MS_EV_TEXT_MAX]; /* run.variant or run.chain */
	bool valid;                 /* counted in the figures */
	char why[512];              /* why not, when !valid */
	ms_ev_run run;              /* the run record */
	/* A finalize merge completed; false when the engine skipped it (as
	 * the reference runs none without a sampler): its cooldown then
	 * holds no merge, and the bench says so beside the deltas. */
	bool finalized;
	/* The metrics per phase, then of the whole run (MS_BENCH_RUN: the
	 * cgroup's peak); NaN where the run has no figure (a metric its row
	 * does not have, ms_bench_row_has, or the cgroup's peak of a run
	 * without a cgroup of its own), which the statistics leave out. */
	double m[MS_BENCH_ROWS][MS_BM_COUNT];
} ms_bench_run;

/*
 * Read the figures of the database at r->db into r (r->rep and
 * r->variant are kept). A database that cannot be read is not an error:
 * r->valid is false and r->why says why. Returns 0, or MS_ERR_NOMEM.
 */
int ms_bench_load(ms_bench_run *r, ms_errbuf *eb);

/*
 * Check the validity conditions over runs[0..n) (after ms_bench_load):
 * the reference is the earliest valid run of the conditions most valid
 * runs share (the earliest such set on a tie); every other run that
 * differs from it gets valid = false and a why naming the difference.
 */
void ms_bench_validate(ms_bench_run *runs, size_t n);

/*
 * The k-th (from 0) validity condition on which run b differs from run
 * a, as ms_bench_validate judges them ("profile", "limits envelope",
 * "host", ...), or NULL when there are no more than k; the two values go
 * to va (a's) and vb (b's), n bytes each. `report --vs` names them.
 */
const char *ms_bench_difference(const ms_ev_run *a, const ms_ev_run *b,
                                unsigned k, char *va, char *vb, size_t n);

/* Summary statistics of v[0..n) (v is sorted in place). n == 0 gives
 * zeros. p95 is the nearest-rank percentile; cv the sample standard
 * deviation over the mean (0 for n < 2 or a zero mean). */
typedef struct ms_bench_stat {
	size_t n;
	double median, p95, min, max, cv;
} ms_bench_stat;
void ms_bench_stat_of(double *v, size_t n, ms_bench_stat *out);

/* The first variant (index below nvariants) none of whose runs is valid,
 * or -1 when every variant has a valid run. */
int ms_bench_empty_variant(const ms_bench_run *runs, size_t n,
                           size_t nvariants);

/*
 * Write the series summary: text (a table per phase, then one of the
 * whole run's figures: one line per metric and variant) to text, JSON
 * to json (either may be NULL; per variant "phases" and "run"). labels
 * names
 * the nvariants variants in series order; the first is the base of the
 * deltas. A variant without a valid run, or a metric none of its valid
 * runs has a figure for, has no figures: "-" in the text, null in the
 * JSON. Returns 0, MS_ERR_NOMEM or MS_ERR_IO.
 */
int ms_bench_summary(const ms_bench_run *runs, size_t n,
                     const char *const *labels, size_t nvariants, FILE *text,
                     FILE *json, ms_errbuf *eb);

/*
 * Write the series as one self-contained HTML file to f: per phase (and
 * the whole run) and metric a box plot per variant (quartiles, min, max, median, a dot per
 * valid run), then the summary table (which names the runs left out).
 * title heads the page (the series directories). Returns 0,
 * MS_ERR_NOMEM or MS_ERR_IO.
 */
int ms_bench_html(const ms_bench_run *runs, size_t n,
                  const char *const *labels, size_t nvariants,
                  const char *title, FILE *f, ms_errbuf *eb);

#endif
