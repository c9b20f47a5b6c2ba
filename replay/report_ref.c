/*
 * report_ref.c - the run report's comparison with the reference replay:
 * the figures of the reference's day-2x pilot (primary merges,
 * mature-containing selections and their mature rows, selection ranges,
 * the median input part of the pure-hot selections, the deepest input,
 * the finalize merge, its staging estimate and the rows it left) beside this run's, from the fixtures layer's one table
 * of reference figures. Figures the reference knows at another scale only
 * are shown without a reference; the rows left are compared for the
 * SkyWalking variant and an empty opening only (the reference's). The
 * fixture's opening is read from its manifest when it is still there; a
 * run that did not finish is not compared (part of a day). A
 * difference here is a diagnostic, not a gate: the merge trajectory follows
 * from the fixture and the picker, and the generator is never tuned to it.
 */
#include "ev_private.h"
#include "ms_fixture.h"
#include "replay_int.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef struct ref_agg {
	uint64_t merges, mature, mature_rows;
	uint64_t parts_min, parts_max, rows_min, rows_max, depth_max;
	uint64_t bytes_min, bytes_max;
	uint64_t fin_parts, fin_calls, fin_rows_in, fin_rows_out, fin_estimate;
	bool finalized;
	/* The input parts' bytes of every pure-hot primary selection (no
	 * mature input), for their median; owned, freed by the caller. */
	uint64_t *hot_bytes;
	size_t nhot, hot_cap;
	const char *db_path;
	ms_errbuf *eb;
} ref_agg;

/* Add merge m's input bytes to a->hot_bytes. 0 or MS_ERR_NOMEM. */
static int
ref_hot_inputs(ref_agg *a, const ms_ev_merge *m)
{
	if (a->nhot + m->ninputs > a->hot_cap) {
		size_t nc = (a->nhot + m->ninputs) * 2;
		uint64_t *nb = realloc(a->hot_bytes, nc * sizeof(*nb));

		if (!nb)
			return ms_fail(a->eb, MS_ERR_NOMEM,
			               "event database %s: out of memory for "
			               "the input part sizes of merge %llu "
			               "(%zu bytes)",
			               a->db_path, (unsigned long long)m->seq,
			               nc * sizeof(*nb));
		a->hot_bytes = nb;
		a->hot_cap = nc;
	}
	for (size_t i = 0; i < m->ninputs; i++)
		a->hot_bytes[a->nhot++] = m->inputs[i].bytes;
	return 0;
}

static int
cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;

	return (a > b) - (a < b);
}

/* The median of v[0..n) (the lower middle of an even count); sorts v. */
static double
median_u64(uint64_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	return (double)v[(n - 1) / 2];
}

static int
ref_merge(void *ctx, const ms_ev_merge *m)
{
	ref_agg *a = ctx;

	if (m->err)
		return 0;
	if (strcmp(m->lane, "finalize") == 0) {
		a->finalized = true;
		a->fin_parts += m->ninputs;
		a->fin_calls += m->sampling.plugin_calls;
		a->fin_estimate += m->sampling.estimate_bytes;
		a->fin_rows_in += m->rows_in;
		a->fin_rows_out += m->rows_out;
		return 0;
	}
	if (m->phase != MS_EV_PHASE_PRIMARY)
		return 0;
	if (!a->merges || m->ninputs < a->parts_min)
		a->parts_min = m->ninputs;
	if (!a->merges || m->input_rows < a->rows_min)
		a->rows_min = m->input_rows;
	if (m->max_depth > a->depth_max)
		a->depth_max = m->max_depth;
	if (m->ninputs > a->parts_max)
		a->parts_max = m->ninputs;
	if (m->input_rows > a->rows_max)
		a->rows_max = m->input_rows;
	if (!a->merges || m->input_bytes < a->bytes_min)
		a->bytes_min = m->input_bytes;
	if (m->input_bytes > a->bytes_max)
		a->bytes_max = m->input_bytes;
	a->merges++;
	a->mature += m->mature_parts > 0;
	a->mature_rows += m->mature_parts > 0 ? m->mature_rows : 0;
	return m->mature_parts ? 0 : ref_hot_inputs(a, m);
}

/* The primary phase's selections beside the pilot's. */
static void
print_selections(FILE *out, double u, ref_agg *a)
{
	ms_fixture_ref_print(out, "primary_merges", u, (double)a->merges);
	ms_fixture_ref_print(out, "mature_selections", u, (double)a->mature);
	if (a->mature)
		ms_fixture_ref_print(out, "mature_rows", u,
		                     (double)a->mature_rows);
	if (!a->merges)
		return;
	ms_fixture_ref_print(out, "selection_parts_min", u,
	                     (double)a->parts_min);
	ms_fixture_ref_print(out, "selection_parts_max", u,
	                     (double)a->parts_max);
	ms_fixture_ref_print(out, "selection_rows_min", u,
	                     (double)a->rows_min);
	ms_fixture_ref_print(out, "selection_rows_max", u,
	                     (double)a->rows_max);
	ms_fixture_ref_print(out, "selection_bytes_min", u,
	                     (double)a->bytes_min);
	ms_fixture_ref_print(out, "selection_bytes_max", u,
	                     (double)a->bytes_max);
	if (a->nhot)
		ms_fixture_ref_print(out, "hot_part_bytes_median", u,
		                     median_u64(a->hot_bytes, a->nhot));
	ms_fixture_ref_print(out, "selection_depth_max", u,
	                     (double)a->depth_max);
}

int
ms__report_reference(ms_evdb *db, const ms_ev_run *run, FILE *out,
                     ms_errbuf *eb)
{
	const char *variant = run->variant, *fixture_dir = run->fixture_dir;
	const char *fixture_hash = run->fixture_hash;
	double u = ms_fixture_preset_units(run->fixture_preset);
	char opening[16] = "unknown", title[160];
	ms_fixture *fx = NULL;
	ms_errbuf feb = { { 0 } };
	ref_agg a;
	int rc;

	if (u <= 0)
		return 0; /* a fixture of no known scale */
	/* A run that stopped part way has fewer merges and no finalize:
	 * beside the reference's whole day that reads as OUTSIDE. */
	bool unfinished = false;
	char why[200];
	rc = ms_report_unfinished(db, &unfinished, why, sizeof(why), eb);
	if (rc)
		return rc;
	if (unfinished) {
		fprintf(out,
		        "  against the reference replay: not compared (the "
		        "run did not finish; its figures cover part of the "
		        "day)\n");
		return 0;
	}
	memset(&a, 0, sizeof(a));
	a.db_path = ms_evdb_path(db);
	a.eb = eb;
	rc = ms_evdb_each_merge(db, NULL, ref_merge, &a, eb);
	if (rc) {
		free(a.hot_bytes);
		return rc;
	}
	/* The opening, from the fixture's manifest when the fixture there
	 * is still the one the run replayed (its hash is the run's): one
	 * built again in the same directory with another opening gave its
	 * own ("this run: warm opening" of an empty day's run). */
	if (ms_fixture_open(&fx, fixture_dir, &feb) == 0) {
		const ms_fixture_info *i = ms_fixture_get_info(fx);
		char id[64];
		ms__fixture_identity(i, id, sizeof(id));
		if (strcmp(id, fixture_hash) == 0)
			snprintf(opening, sizeof(opening), "%s", i->opening);
	}
	ms_fixture_close(fx);
	snprintf(title, sizeof(title),
	         "against the reference replay (day-2x pilot, empty opening; "
	         "this run: %s opening; a diagnostic, not a gate)",
	         opening);
	ms_fixture_ref_header(out, title);
	print_selections(out, u, &a);
	free(a.hot_bytes);
	if (a.finalized) {
		ms_fixture_ref_print(out, "finalize_parts", u,
		                     (double)a.fin_parts);
		ms_fixture_ref_print(out, "finalize_calls", u,
		                     (double)a.fin_calls);
		if (a.fin_estimate)
			ms_fixture_ref_print(out, "finalize_estimate", u,
			                     (double)a.fin_estimate);
	} else {
		/* The engine skipped it, as the reference would: the
		 * reconciliation's "finalize skipped" row says why. */
		fprintf(out, "    finalize: not run (skipped; the row "
		             "\"finalize skipped\" above says why)\n");
	}
	/* The reference's rows figures are the SkyWalking default's over one
	 * day from an empty shard: not comparable after a warm opening. */
	if (a.finalized && strcmp(variant, "skywalking") == 0 &&
	    strcmp(opening, "empty") == 0) {
		ms_fixture_ref_print(out, "rows_left", u,
		                     (double)a.fin_rows_out);
		if (a.fin_rows_in)
			ms_fixture_ref_print(
			        out, "rows_removed", u,
			        1.0 - (double)a.fin_rows_out /
			                        (double)a.fin_rows_in);
	}
	return 0;
}
