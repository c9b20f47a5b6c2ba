/*
 * report.c - the run report and the variant comparison, read from an event
 * log: what `mergescope run` prints at the end, `report --db A`, its
 * `--json` twin, and `report --db A --vs B`.
 *
 * Everything is computed from the database alone (phase records, merge
 * events, gates), so a report of a finished run and the report printed by
 * the run itself are the same text. Primary and cooldown are kept apart in
 * every table (finalize merges belong to cooldown). Gates come last, one
 * PASS/FAIL line each.
 */
#include "ms_bench.h"
#include "ev_private.h"
#include "grow.h"
#include "figures.h"
#include "labels.h"
#include "ms_engine.h"
#include "ms_fixture.h"
#include "ms_gates.h"
#include "ms_loader.h"
#include "ms_part.h"
#include "ms_picker.h"
#include "ms_pipeline.h"
#include "ms_replay_events.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1024.0 * 1024.0)
#define NLANES (MS_LANE_KIND_COUNT + 1) /* the engine's lanes, then other */

static const char *
lane_name(int l)
{
	return l < MS_LANE_KIND_COUNT ? ms_lane_name((enum ms_lane_kind)l)
	                              : "other";
}

typedef struct link_agg {
	char name[MS__LINK_LABEL_MAX]; /* ms_ev_link_label */
	uint64_t calls, traces, kept, fail_open;
	uint64_t fails[MS_EV_FAIL_KINDS];
	int64_t total_ns, max_ns;
	uint64_t hist[MS_EV_HIST_BUCKETS];
} link_agg;

typedef struct phase_agg {
	bool has_phase;
	ms_ev_phase ph;
	uint64_t merges, failed;
	uint64_t by_lane[NLANES];
	uint64_t by_class[MS_SAMPLING_CLASS_COUNT];
	uint64_t by_reason[MS_SREASON_COUNT];
	uint64_t in_bytes, out_bytes, idx_in_bytes, idx_out_bytes;
	uint64_t rows_in, rows_out;
	int64_t merge_wall_ns, merge_cpu_ns;
	/* the index stage (both index children) of the completed merges, and
	 * those merges' whole wall: its share of merge wall */
	int64_t idx_wall_ns, done_wall_ns;
	uint64_t evaluated, kept, dropped, oversized, hot, deferred, calls;
	uint64_t edge; /* deferred by the boundary guard */
	uint64_t full; /* deferred: the merge's drop set was full */
	uint64_t batches, planned, peak_staged;
	uint64_t mature_merges, hot_merges;
} phase_agg;

/* A sampled merge's staging, for the staged-batches section. */
typedef struct staged_merge {
	uint64_t seq;
	char lane[16];
	ms_merge_sampling s;
} staged_merge;
#define STAGED_SHOWN 32 /* sampled merges listed, the first ones */

/* A fail-open or bypass event of one merge (the plugin_health section). */
typedef struct health_ev {
	uint64_t seq;
	char link[MS__LINK_LABEL_MAX]; /* "-" for a merge-wide bypass */
	const char *kind;
	uint64_t count;
	/* "" or the cause of the kind's last call (ms_ev_link.fail_why),
	 * one printable line: the database may come from anywhere. */
	char why[sizeof(((ms_ev_link *)0)->fail_why)];
} health_ev;

typedef struct report {
	ms_ev_run run;
	ms_ev_run_end end;
	bool has_end;
	bool wal_missing; /* ms_evdb_wal_missing */
	phase_agg ph[MS_EV_PHASE_COUNT];
	phase_agg before; /* the phase table's staging row, no merges */
	link_agg links[MS_EV_LINKS_MAX * 2];
	size_t nlinks;
	ms_ev_gate *gates;
	size_t ngates, gcap;
	health_ev *health;
	size_t nhealth, hcap;
	ms_ev_recon *recon;
	size_t nrecon, rcap;
	staged_merge *staged; /* the first STAGED_SHOWN sampled merges */
	size_t nstaged, nsampled;
	/* Readiness figures of the primary phase (the reference's, shown as
	 * figures, never as gates). */
	struct {
		uint64_t grace, executed, executed_deep;
		uint64_t mature_sel, mature_rows, mature_bytes;
		uint64_t mature_rows_deep; /* in selections with an input at
		                              depth >= 1 */
		uint64_t precompacted;     /* every input at depth >= 1 */
		uint32_t max_depth;
		uint64_t raw_bytes; /* compressed core bytes published */
	} ready;
	ms__oom oom; /* an allocation that failed (what NULL: none) */
	/* derived-gate inputs */
	uint64_t merges_ok, merges_err;
	uint64_t bad_class;
	uint64_t hot_decide;  /* merges: ms_gate_merge_hot_decide */
	uint64_t hot_decided; /* traces: ms_merge_sampling.hot_decided */
	uint64_t decide_traces;
	uint64_t rows_dropped; /* core rows the completed merges dropped */
} report;

static int
lane_idx(const char *l)
{
	for (int i = 0; i < NLANES - 1; i++)
		if (strcmp(l, lane_name(i)) == 0)
			return i;
	return NLANES - 1;
}

static void
health_add(report *r, uint64_t seq, const char *link, const char *kind,
           uint64_t count, const char *why)
{
	if (MS__GROW_FOR(r->health, r->hcap, r->nhealth + 1, 16, &r->oom,
	                 "the plugin-health events"))
		return;
	health_ev *h = &r->health[r->nhealth++];
	h->seq = seq;
	snprintf(h->link, sizeof(h->link), "%s", link);
	h->kind = kind;
	h->count = count;
	ms_plugin_text_clean(h->why, sizeof(h->why), why, strlen(why) + 1);
}

static int
staged_add(report *r, const ms_ev_merge *m)
{
	r->nsampled++;
	if (r->nstaged >= STAGED_SHOWN)
		return 0;
	if (!r->staged &&
	    !(r->staged = calloc(STAGED_SHOWN, sizeof(*r->staged))))
		return ms__oom_note(&r->oom, "the sampled merges",
		                    STAGED_SHOWN * sizeof(*r->staged));
	staged_merge *sm = &r->staged[r->nstaged++];
	sm->seq = m->seq;
	snprintf(sm->lane, sizeof(sm->lane), "%s", m->lane);
	sm->s = m->sampling;
	return 0;
}

/* Adds a merge's chain links to the per-link rows (a link is one row:
 * the same plugin twice in a chain is two, "detdrop" and "detdrop#2"),
 * and each kind of failed call to the health rows. */
static void
agg_links(report *r, const ms_ev_merge *m)
{
	for (uint32_t i = 0; i < m->nlinks; i++) {
		const ms_ev_link *l = &m->links[i];
		char label[MS__LINK_LABEL_MAX];
		ms__ev_link_label(m, i, label, sizeof(label));
		link_agg *g = NULL;
		for (size_t j = 0; j < r->nlinks && !g; j++)
			if (strcmp(r->links[j].name, label) == 0)
				g = &r->links[j];
		if (!g) {
			if (r->nlinks == sizeof(r->links) / sizeof(r->links[0]))
				continue;
			g = &r->links[r->nlinks++];
			snprintf(g->name, sizeof(g->name), "%s", label);
		}
		g->calls += l->calls;
		g->traces += l->traces;
		g->kept += l->kept;
		g->total_ns += l->total_ns;
		if (l->max_ns > g->max_ns)
			g->max_ns = l->max_ns;
		for (unsigned k = 0; k < MS_EV_FAIL_KINDS; k++) {
			g->fail_open += l->fails[k]; /* calls, not merges */
			g->fails[k] += l->fails[k];
			/* Of its kinds, the last to fail has its cause. */
			const char *kind = ms_ev_fail_kind_name(k);
			if (l->fails[k])
				health_add(r, m->seq, label, kind, l->fails[k],
				           strcmp(kind, l->fail_open)
				                   ? ""
				                   : l->fail_why);
		}
		for (int b = 0; b < MS_EV_HIST_BUCKETS; b++)
			g->hist[b] += l->hist[b];
	}
}

static int
agg_merge(void *ctx, const ms_ev_merge *m)
{
	report *r = ctx;
	phase_agg *a = &r->ph[(unsigned)m->phase < MS_EV_PHASE_COUNT
	                              ? m->phase
	                              : MS_EV_PHASE_PRIMARY];
	const ms_merge_sampling *s = &m->sampling;
	a->merges++;
	if (m->err) {
		a->failed++;
		r->merges_err++;
	} else {
		r->merges_ok++;
	}
	a->by_lane[lane_idx(m->lane)]++;
	if ((unsigned)s->klass < MS_SAMPLING_CLASS_COUNT)
		a->by_class[s->klass]++;
	if ((unsigned)s->reason < MS_SREASON_COUNT)
		a->by_reason[s->reason]++;
	bool executed = s->klass == MS_SAMPLING_EXECUTED;
	if (ms_gate_merge_bad_class(m))
		r->bad_class++;
	if (ms_gate_merge_hot_decide(m))
		r->hot_decide++;
	if (!m->err) { /* as the run counts them: merges that completed */
		r->hot_decided += s->hot_decided;
		r->decide_traces += s->traces_evaluated;
		r->rows_dropped += s->rows_dropped;
	}
	ms__ev_io io = ms__ev_merge_io(m);
	a->in_bytes += io.core_in;
	a->out_bytes += io.core_out;
	a->idx_in_bytes += io.idx_in;
	a->idx_out_bytes += io.idx_out;
	if (!m->err) {
		for (int k = MS_KIND_LATENCY; k <= MS_KIND_START_TIME; k++)
			a->idx_wall_ns += m->index[k].wall_ns;
		a->done_wall_ns += m->wall_ns;
	}
	if (m->phase == MS_EV_PHASE_PRIMARY && strcmp(m->lane, "finalize")) {
		bool deep = m->ninputs > 0 && m->min_depth >= 1;
		bool any_deep = m->max_depth >= 1;
		if (s->reason == MS_SREASON_MERGE_GRACE)
			r->ready.grace++;
		if (executed) {
			r->ready.executed++;
			r->ready.executed_deep += deep;
		}
		if (m->mature_parts) {
			r->ready.mature_sel++;
			r->ready.mature_rows += m->mature_rows;
			for (size_t i = 0; i < m->ninputs; i++)
				if (m->inputs[i].mature)
					r->ready.mature_bytes +=
					        m->inputs[i].bytes;
			if (any_deep)
				r->ready.mature_rows_deep += m->mature_rows;
			r->ready.precompacted += deep;
			if (m->max_depth > r->ready.max_depth)
				r->ready.max_depth = m->max_depth;
		}
	}
	if (s->reason == MS_SREASON_LOSSLESS_RETRY)
		health_add(r, m->seq, "-", "lossless_retry", 1, "");
	if (s->traces_oversized)
		health_add(r, m->seq, "-", "oversized", s->traces_oversized,
		           "");
	a->rows_in += m->rows_in;
	a->rows_out += m->rows_out;
	a->merge_wall_ns += m->wall_ns;
	a->merge_cpu_ns += m->cpu_ns;
	a->evaluated += s->traces_evaluated;
	a->kept += s->traces_kept;
	a->dropped += s->traces_dropped;
	a->oversized += s->traces_oversized;
	a->hot += s->traces_unevaluated;
	a->deferred += s->traces_deferred;
	a->edge += s->guard_retained_edge;
	a->full += s->drop_set_full;
	a->calls += s->plugin_calls;
	/* Planned and cut over the same merges: those that cut a batch
	 * (a merge that staged no trace, or was redone losslessly, holds a
	 * plan and cut none). */
	a->batches += s->batches;
	if (s->batches)
		a->planned += s->batches_planned;
	if (s->klass == MS_SAMPLING_EXECUTED)
		(void)staged_add(r, m); /* a failure is noted in r->oom */
	if (s->peak_staged_bytes > a->peak_staged)
		a->peak_staged = s->peak_staged_bytes;
	if (m->mature_parts)
		a->mature_merges++;
	if (m->hot_parts)
		a->hot_merges++;
	agg_links(r, m);
	return 0;
}

static int
agg_phase(void *ctx, const ms_ev_phase *p)
{
	report *r = ctx;
	phase_agg *a = (unsigned)p->phase < MS_EV_PHASE_COUNT ? &r->ph[p->phase]
	               : p->phase == MS_EV_PHASE_STAGING    ? &r->before
	                                                    : NULL;
	if (a) {
		a->has_phase = true;
		a->ph = *p;
	}
	return 0;
}

static int
agg_gate(void *ctx, const ms_ev_gate *g)
{
	report *r = ctx;
	if (MS__GROW_FOR(r->gates, r->gcap, r->ngates + 1, 16, &r->oom,
	                 "the gates"))
		return MS_ERR_NOMEM;
	r->gates[r->ngates++] = *g;
	return 0;
}

static int
agg_recon(void *ctx, const ms_ev_recon *c)
{
	report *r = ctx;
	if (MS__GROW_FOR(r->recon, r->rcap, r->nrecon + 1, 32, &r->oom,
	                 "the reconciliations"))
		return MS_ERR_NOMEM;
	r->recon[r->nrecon++] = *c;
	return 0;
}

static int
agg_pub(void *ctx, const ms_ev_pub *p)
{
	report *r = ctx;
	r->ready.raw_bytes += p->bytes;
	return 0;
}

static int
report_load(ms_evdb *db, report *r, ms_errbuf *eb)
{
	memset(r, 0, sizeof(*r));
	r->wal_missing = ms_evdb_wal_missing(db);
	int rc = ms_evdb_run(db, &r->run, &r->end, &r->has_end, eb);
	if (rc == 0)
		rc = ms_evdb_each_merge(db, NULL, agg_merge, r, eb);
	if (rc == 0)
		rc = ms_evdb_each_phase(db, agg_phase, r, eb);
	if (rc == 0)
		rc = ms_evdb_each_gate(db, agg_gate, r, eb);
	if (rc == 0)
		rc = ms_evdb_each_recon(db, agg_recon, r, eb);
	if (rc == 0)
		rc = ms_evdb_each_pub(db, agg_pub, r, eb);
	/* A walk's message stands; the callbacks' allocations are noted. */
	if ((rc == 0 || rc == MS_ERR_NOMEM) && r->oom.what)
		rc = ms__oom_fail(eb, &r->oom, "report of %s",
		                  ms_evdb_path(db));
	return rc;
}

static void
report_free(report *r)
{
	free(r->gates);
	free(r->health);
	free(r->recon);
	free(r->staged);
}

/* A run is finished when it recorded its end with status "complete":
 * only then were its end-of-run gates checked. */
static bool
run_unfinished(const report *r, char *why, size_t n)
{
	if (!r->has_end && r->wal_missing) {
		snprintf(why, n,
		         "the run's end is not in this file (no end record), "
		         "and the file is in WAL mode with no write-ahead log "
		         "beside it: a copy made without its -wal lacks what "
		         "the run wrote last (copy the two together); or the "
		         "run was killed or is still running");
		return true;
	}
	if (!r->has_end) {
		snprintf(why, n,
		         "the run did not finish (no end record: killed or "
		         "still running); its end-of-run gates were never "
		         "checked");
		return true;
	}
	if (strcmp(r->end.status, "complete") != 0) {
		snprintf(why, n,
		         "the run did not finish (status %s); its end-of-run "
		         "gates were never checked",
		         r->end.status[0] ? r->end.status : "empty");
		return true;
	}
	return false;
}

/* The gate run_finished, the one gate no run records (a run that did not
 * finish never reached its gates), defined here for every report (text,
 * JSON, the failed-gate count): for an unfinished run, true and g failed,
 * its detail saying why; false (g untouched) for a finished one. */
static bool
run_finished_gate(const report *r, ms_ev_gate *g)
{
	char why[MS_EV_TEXT_MAX];
	if (!run_unfinished(r, why, sizeof(why)))
		return false;
	memset(g, 0, sizeof(*g));
	snprintf(g->name, sizeof(g->name), "run_finished");
	snprintf(g->detail, sizeof(g->detail), "%s", why);
	return true;
}

/* The i-th gate of a report: run_finished first when rf (its gate, for
 * an unfinished run), then the recorded ones. */
static const ms_ev_gate *
gate_at(const report *r, const ms_ev_gate *rf, size_t i)
{
	if (!rf)
		return &r->gates[i];
	return i ? &r->gates[i - 1] : rf;
}

int
ms_report_unfinished(ms_evdb *db, bool *unfinished, char *why, size_t n,
                     ms_errbuf *eb)
{
	ms_ev_run_end end;
	bool has_end = false;
	report r;
	memset(&r, 0, sizeof(r));
	int rc = ms_evdb_run(db, NULL, &end, &has_end, eb);
	if (rc)
		return rc;
	r.has_end = has_end;
	r.end = end;
	r.wal_missing = ms_evdb_wal_missing(db);
	*unfinished = run_unfinished(&r, why, n);
	return 0;
}

/* ---- derived gates ---------------------------------------------------- */

struct life {
	uint64_t *intro, *removed;
	size_t nintro, nremoved, cap_i, cap_r;
	ms__oom oom; /* the allocation that failed */
};

static int
collect_life(void *ctx, const ms_ev_part *p)
{
	struct life *l = ctx;
	uint64_t **v;
	size_t *n, *cap;
	if (p->what == MS_EV_PART_INTRODUCED) {
		v = &l->intro;
		n = &l->nintro;
		cap = &l->cap_i;
	} else if (p->what == MS_EV_PART_REMOVED) {
		v = &l->removed;
		n = &l->nremoved;
		cap = &l->cap_r;
	} else {
		return 0;
	}
	if (*n == *cap) {
		size_t nc = *cap ? *cap * 2 : 1024;
		uint64_t *nv = realloc(*v, nc * sizeof(*nv));
		if (!nv)
			return ms__oom_note(&l->oom,
			                    p->what == MS_EV_PART_INTRODUCED
			                            ? "the introduced parts"
			                            : "the removed parts",
			                    nc * sizeof(*nv));
		*v = nv;
		*cap = nc;
	}
	(*v)[(*n)++] = p->part_id;
	return 0;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* How many times id is in v[0..n), sorted; v is NULL when n is 0 (no
 * part event of that kind was recorded), which bsearch may not be given. */
static size_t
count_in(const uint64_t *v, size_t n, uint64_t id)
{
	const uint64_t *p = n ? bsearch(&id, v, n, sizeof(*v), cmp_u64) : NULL;
	if (!p)
		return 0;
	while (p > v && p[-1] == id)
		p--;
	size_t c = 0;
	while (p < v + n && *p == id)
		p++, c++;
	return c;
}

struct life_check {
	const struct life *l;
	uint64_t bad_inputs, bad_outputs;
	uint64_t first_bad;
};

static int
check_life(void *ctx, const ms_ev_merge *m)
{
	struct life_check *c = ctx;
	if (m->err)
		return 0;
	for (size_t i = 0; i < m->ninputs; i++)
		if (count_in(c->l->removed, c->l->nremoved, m->inputs[i].id) !=
		    1) {
			if (!c->bad_inputs && !c->bad_outputs)
				c->first_bad = m->seq;
			c->bad_inputs++;
		}
	/* A merge that dropped every trace publishes no part (ID 0). */
	bool none = m->output.id == 0 && m->output.rows == 0;
	if (!none && count_in(c->l->intro, c->l->nintro, m->output.id) != 1) {
		if (!c->bad_inputs && !c->bad_outputs)
			c->first_bad = m->seq;
		c->bad_outputs++;
	}
	return 0;
}

/* The gates a report recomputes from the event log alone, in the order
 * ms_report_derive_gates lists them; their definitions are ms_gates.h's. */
static const enum ms_gate derived_gates[] = {
	MS_GATE_EVENT_COUNT,
	MS_GATE_ONE_CLASSIFICATION,
	MS_GATE_NO_DECIDE_WHEN_HOT,
	MS_GATE_LIFECYCLE,
	MS_GATE_LEDGERS,
};

/*
 * The ledgers gate of a log compares the final ledgers with a source of
 * their own, never with what the run wrote beside them unexamined:
 *  - no merge dropped a row: the fixture's ledgers the run recorded at its
 *    start;
 *  - rows dropped: the expected ledgers the run recorded at its end (the
 *    fixture's minus the oracle's drops), which must hold, kind by kind,
 *    the fixture's rows minus the rows the log's merges dropped (each core
 *    row has one row in each index) -- a run that could not reconcile its
 *    drops recorded the fixture's, or the final, ledgers there;
 *  - no end, or no fixture ledgers recorded (the run never read its
 *    fixture): nothing to compare with, not checked (a FAIL that says so).
 */
enum led_source { LED_NO_END, LED_NO_INPUT, LED_INPUT, LED_EXPECTED };

static enum led_source
ledgers_source(const report *r)
{
	if (!r->has_end)
		return LED_NO_END;
	bool input = false;
	for (int k = 0; k < MS_KIND_COUNT; k++)
		input = input || r->run.input_ledger.kind[k].rows;
	if (!input)
		return LED_NO_INPUT;
	return r->rows_dropped ? LED_EXPECTED : LED_INPUT;
}

/* The first kind (or -1) whose expected rows are not the fixture's
 * minus the rows the merges dropped. */
static int
ledgers_rows_off(const report *r)
{
	for (int k = 0; k < MS_KIND_COUNT; k++) {
		uint64_t in = r->run.input_ledger.kind[k].rows;
		if (in < r->rows_dropped ||
		    r->end.expected_ledger.kind[k].rows != in - r->rows_dropped)
			return k;
	}
	return -1;
}

static const ms_ledger_set *
ledgers_want(const report *r)
{
	return ledgers_source(r) == LED_INPUT ? &r->run.input_ledger
	                                      : &r->end.expected_ledger;
}

/* The first kind (or -1) whose final ledger is not the one wanted. */
static int
ledgers_kind_off(const report *r)
{
	const ms_ledger_set *w = ledgers_want(r);
	for (int k = 0; k < MS_KIND_COUNT; k++)
		if (!ms_ledger_equal(&r->end.final_ledger.kind[k], &w->kind[k]))
			return k;
	return -1;
}

static void
ledgers_facts(const report *r, ms_gate_facts *f)
{
	enum led_source src = ledgers_source(r);
	f->ledgers_known = src == LED_INPUT || src == LED_EXPECTED;
	f->ledgers_equal = f->ledgers_known && ledgers_kind_off(r) < 0 &&
	                   (src != LED_EXPECTED || ledgers_rows_off(r) < 0);
}

static void
ledgers_detail(const report *r, char *d, size_t n)
{
	enum led_source src = ledgers_source(r);
	if (src == LED_NO_END || src == LED_NO_INPUT) {
		snprintf(d, n,
		         "not checked: %s, nothing independent of the final "
		         "ledgers to compare them with",
		         src == LED_NO_END ? "the run did not end"
		                           : "the log records no fixture "
		                             "ledgers (the fixture was not read)");
		return;
	}
	int off = ledgers_kind_off(r);
	char what[160] = "";
	if (off >= 0)
		snprintf(what, sizeof(what), "; %s: %llu rows, expected %llu%s",
		         ms_part_kind_name((enum ms_part_kind)off),
		         (unsigned long long)r->end.final_ledger.kind[off].rows,
		         (unsigned long long)ledgers_want(r)->kind[off].rows,
		         r->end.final_ledger.kind[off].rows ==
		                         ledgers_want(r)->kind[off].rows
		                 ? " (other sums)"
		                 : "");
	if (src == LED_INPUT) {
		snprintf(d, n,
		         "final core, latency, start_time ledgers %s the "
		         "fixture's, recorded at the start (no merge dropped "
		         "a row)%s",
		         off < 0 ? "equal" : "differ from", what);
		return;
	}
	int rk = ledgers_rows_off(r);
	int k = rk < 0 ? MS_KIND_CORE : rk;
	snprintf(d, n,
	         "final core, latency, start_time ledgers %s the expected "
	         "(the fixture's minus the oracle's drops)%s; %s: the "
	         "fixture's %llu rows minus the %llu the merges dropped %s "
	         "the expected %llu",
	         off < 0 ? "equal" : "differ from", what,
	         ms_part_kind_name((enum ms_part_kind)k),
	         (unsigned long long)r->run.input_ledger.kind[k].rows,
	         (unsigned long long)r->rows_dropped, rk < 0 ? "=" : "!=",
	         (unsigned long long)r->end.expected_ledger.kind[k].rows);
}

static void
derive_detail(enum ms_gate id, const report *r, const struct life_check *lc,
              const ms_gate_facts *f, char *d, size_t n)
{
	switch (id) {
	case MS_GATE_EVENT_COUNT:
		snprintf(d, n,
		         "%llu completed merges in the log, the run row "
		         "counts %llu (%s); %llu failed in the log (the log "
		         "records no count of failures to check them "
		         "against)",
		         (unsigned long long)r->merges_ok,
		         (unsigned long long)r->end.merges_completed,
		         !r->has_end ? "run did not end"
		         : strcmp(r->end.status, "complete")
		                 ? "the engine's count, or the rows if more: "
		                   "the run stopped"
		                 : "the engine's own count",
		         (unsigned long long)r->merges_err);
		break;
	case MS_GATE_ONE_CLASSIFICATION:
		snprintf(d, n,
		         "%llu events without exactly one classification "
		         "and reason",
		         (unsigned long long)r->bad_class);
		break;
	case MS_GATE_NO_DECIDE_WHEN_HOT:
		ms_gate_hot_detail(f, r->decide_traces, d, n);
		break;
	case MS_GATE_LIFECYCLE:
		if (!f->lifecycle_known)
			snprintf(d, n, "no part lifecycle events recorded");
		else if (!f->unexplained)
			snprintf(d, n,
			         "every input removed and every output "
			         "introduced exactly once");
		else
			snprintf(d, n,
			         "%llu inputs not removed exactly once, %llu "
			         "outputs not introduced exactly once; first "
			         "at merge #%llu",
			         (unsigned long long)lc->bad_inputs,
			         (unsigned long long)lc->bad_outputs,
			         (unsigned long long)lc->first_bad);
		break;
	case MS_GATE_LEDGERS:
		ledgers_detail(r, d, n);
		break;
	default:
		d[0] = '\0';
		break;
	}
}

#define NDERIVED (sizeof(derived_gates) / sizeof(derived_gates[0]))

/* The gates of db recomputed from its log alone (derived_gates, r its
 * loaded report) into g (room for NDERIVED), their number into *n. */
static int
derive_from(ms_evdb *db, const report *r, ms_ev_gate *g, size_t *n,
            ms_errbuf *eb)
{
	struct life l = { 0 };
	int rc = ms_evdb_each_part(db, collect_life, &l, eb);
	if (rc == MS_ERR_NOMEM && l.oom.what)
		rc = ms__oom_fail(eb, &l.oom, "gates of %s", ms_evdb_path(db));
	struct life_check lc = { .l = &l };
	if (rc == 0) {
		/* NULL when no part was introduced or removed (a run of
		 * no merge): qsort may not be given it. */
		if (l.nintro)
			qsort(l.intro, l.nintro, sizeof(*l.intro), cmp_u64);
		if (l.nremoved)
			qsort(l.removed, l.nremoved, sizeof(*l.removed),
			      cmp_u64);
		rc = ms_evdb_each_merge(db, NULL, check_life, &lc, eb);
	}
	*n = 0;
	if (rc == 0) {
		bool trace = strcmp(r->run.grace_policy, "trace") == 0;
		ms_gate_facts f = {
			.policy = trace ? MS_GRACE_TRACE : MS_GRACE_SELECTION,
			.ended = r->has_end,
			.merge_events = r->merges_ok + r->merges_err,
			.merges_done = r->merges_ok,
			.merges_failed = r->merges_err,
			.engine_merges_done = r->end.merges_completed,
			.events_from_rows = true,
			.bad_class = r->bad_class,
			.hot_decides = trace ? 0 : r->hot_decide,
			.hot_decided = r->hot_decided,
			.lifecycle_known = l.nintro || l.nremoved,
			.unexplained = lc.bad_inputs + lc.bad_outputs,
		};
		ledgers_facts(r, &f);
		for (size_t i = 0; i < NDERIVED; i++) {
			if (!ms_gate_eval(derived_gates[i], &f, &g[*n]))
				continue;
			derive_detail(derived_gates[i], r, &lc, &f,
			              g[*n].detail, sizeof(g[*n].detail));
			(*n)++;
		}
	}
	free(l.intro);
	free(l.removed);
	return rc;
}

int
ms_report_derive_gates(ms_evdb *db, ms_ev_gate *gates, size_t max,
                       ms_errbuf *eb)
{
	report r;
	int rc = report_load(db, &r, eb);
	ms_ev_gate g[NDERIVED];
	size_t n = 0;
	if (rc == 0)
		rc = derive_from(db, &r, g, &n, eb);
	report_free(&r);
	if (rc < 0)
		return rc;
	size_t k = n < max ? n : max;
	memcpy(gates, g, k * sizeof(*g));
	return (int)k;
}

/* The recorded gate called name, or NULL. */
static ms_ev_gate *
recorded_gate(report *r, const char *name)
{
	for (size_t i = 0; i < r->ngates; i++)
		if (!strcmp(r->gates[i].name, name))
			return &r->gates[i];
	return NULL;
}

/*
 * A report holds a finished run's recorded gates to its event log: each
 * gate it can recompute from the log (derived_gates) that fails there
 * although the run recorded it passing (a log edited, or damaged, since)
 * is shown failing, its detail what the log holds; one the run does not
 * record (one_classification) is added when it fails. An unfinished
 * run has run_finished failing and no gates to hold.
 */
static int
check_log(ms_evdb *db, report *r, ms_errbuf *eb)
{
	char why[8];
	if (run_unfinished(r, why, sizeof(why)))
		return 0;
	ms_ev_gate g[NDERIVED];
	size_t n = 0;
	int rc = derive_from(db, r, g, &n, eb);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		ms_ev_gate *rec = recorded_gate(r, g[i].name);
		if (g[i].pass || (rec && !rec->pass))
			continue;
		if (!rec) {
			rc = agg_gate(r, &g[i]);
			continue;
		}
		char d[sizeof(rec->detail)];
		snprintf(d, sizeof(d),
		         "recorded PASS, but the event log says otherwise: %s",
		         g[i].detail);
		memcpy(rec->detail, d, sizeof(d));
		rec->pass = false;
		rec->warn = false;
	}
	if (rc == MS_ERR_NOMEM && r->oom.what)
		rc = ms__oom_fail(eb, &r->oom, "report of %s",
		                  ms_evdb_path(db));
	return rc;
}

/* report_load, the recorded gates held to the log (check_log). */
static int
report_load_checked(ms_evdb *db, report *r, ms_errbuf *eb)
{
	int rc = report_load(db, r, eb);
	return rc ? rc : check_log(db, r, eb);
}

/* ---- text ------------------------------------------------------------- */

static double
mib(uint64_t b)
{
	return (double)b / MIB;
}

static double
sec(int64_t ns)
{
	return (double)ns / 1e9;
}

static double
ratio(uint64_t a, uint64_t b)
{
	return b ? (double)a / (double)b : 0.0;
}

/* The index stage's share of the wall of the merges that completed, in
 * percent (the reference's per-child elapsed time over the merge's). */
static double
idx_share(const phase_agg *a)
{
	return a->done_wall_ns > 0 ? 100.0 * (double)a->idx_wall_ns /
	                                     (double)a->done_wall_ns
	                           : 0.0;
}

static void
row_f(FILE *f, const char *name, const char *unit, double a, double b, int prec)
{
	char la[32];
	snprintf(la, sizeof(la), "%s%s%s", name, unit[0] ? " " : "", unit);
	fprintf(f, "  %-28s %14.*f %14.*f\n", la, prec, a, prec, b);
}

static void
row_u(FILE *f, const char *name, uint64_t a, uint64_t b)
{
	fprintf(f, "  %-28s %14llu %14llu\n", name, (unsigned long long)a,
	        (unsigned long long)b);
}

/* How the profile was held: a real cgroup with what it kept, emulated
 * with why, or the host's own limits. */
static void
envelope_line(FILE *f, const report *r)
{
	const ms_ev_run *u = &r->run;
	const char *m = u->limits_mode[0] ? u->limits_mode : "host";
	if (ms__ev_run_in_cgroup(u)) {
		fprintf(f, "  envelope     %s, pids.max %u", m, u->pids_max);
		if (r->has_end)
			fprintf(f,
			        ": peak %.1f MiB  throttled %llu periods %.3f s"
			        "  OOM kills %llu  limit hits %llu",
			        (double)r->end.cgroup_peak_bytes / MIB,
			        (unsigned long long)r->end.cgroup_nr_throttled,
			        sec(r->end.cgroup_throttled_ns),
			        (unsigned long long)r->end.cgroup_oom_kills,
			        (unsigned long long)r->end.cgroup_limit_hits);
		fputc('\n', f);
	} else if (strcmp(m, "emulated") == 0) {
		fprintf(f,
		        "  envelope     emulated: sized from the profile, not "
		        "enforced (%s)\n",
		        u->limits_why[0] ? u->limits_why : "no cgroup");
	} else {
		fprintf(f, "  envelope     host: no profile, the detected "
		           "limits\n");
	}
	char what[160];
	if (u->profile[0] &&
	    ms_limits_beyond(u->emulated_cpus, u->emulated_mem_bytes,
	                     u->detected_cpus, u->detected_mem_bytes, what,
	                     sizeof(what)))
		fprintf(f,
		        "  beyond       the profile asks %s: the engine was "
		        "sized for the profile but ran on what there is (no "
		        "envelope gives more), so these figures are not the "
		        "profile's\n",
		        what);
}

/* The engine's workers as the run record has them; 0 fast + 0 slow is
 * one worker in a serial run (it has no lanes), and none in another run
 * that ended before it started (the record is written at the open, the
 * figures at the start). */
static void
workers_text(char *buf, size_t n, const ms_ev_run *u)
{
	bool none = u->fast_workers == 0 && u->slow_workers == 0;
	if (none && u->serial)
		snprintf(buf, n, "1 (serial)");
	else if (none)
		snprintf(buf, n, "none: the run ended before it started");
	else
		snprintf(buf, n, "%u fast + %u slow", u->fast_workers,
		         u->slow_workers);
}

/* s, or "-" when the run did not record it. */
static const char *
or_dash(const char *s)
{
	return s[0] ? s : "-";
}

/* What made the figures besides the host: the binary, its commit and
 * compiler, the CPU and the page cache the run started from (`bench`
 * holds them equal within a series; a report read on its own, or its
 * HTML page, says them). */
static void
build_lines(FILE *f, const ms_ev_run *u)
{
	fprintf(f,
	        "  build        binary %s  commit %s  compiler %s\n"
	        "  cpu          %s  cache %s\n",
	        or_dash(u->binary_checksum), or_dash(u->git_commit),
	        or_dash(u->compiler), or_dash(u->cpu_model),
	        or_dash(u->cache_label));
}

static void
print_header(FILE *f, const report *r, const char *path)
{
	const ms_ev_run *u = &r->run;
	fprintf(f, "mergescope run report\n");
	fprintf(f, "  database     %s\n", path);
	fprintf(f, "  version      %s\n", u->version);
	fprintf(f, "  fixture      %s seed %llu  %s\n", u->fixture_preset,
	        (unsigned long long)u->fixture_seed, u->fixture_dir);
	fprintf(f, "  fixture hash %s  parts %s\n", u->fixture_hash,
	        u->fixture_parts_hash);
	/* The staging and the plugin host are named when they are not the
	 * defaults (retain, inproc). */
	bool reread = u->staging[0] && strcmp(u->staging, "retain") != 0;
	bool host = u->plugin_host[0] && strcmp(u->plugin_host, "inproc") != 0;
	fprintf(f, "  variant      %s  policy %s  %s%s%s%s%s%s%s\n",
	        u->variant, u->grace_policy, reread ? "staging " : "",
	        reread ? u->staging : "", reread ? "  " : "",
	        u->serial ? "serial" : "lanes",
	        host ? "  plugin host " : "", host ? u->plugin_host : "",
	        u->allow_fail_open ? "  --allow-fail-open" : "");
	if (u->chain[0])
		fprintf(f, "  chain        %s\n", u->chain);
	for (uint32_t i = 0; i < u->nplugins; i++)
		fprintf(f, "  plugin %u     %s  %s  checksum %s\n", i,
		        u->plugins[i].name, u->plugins[i].path,
		        u->plugins[i].checksum);
	char workers[64];
	workers_text(workers, sizeof(workers), u);
	fprintf(f,
	        "  host         %s  %s  %s%s%s  clone %s\n"
	        "  limits       detected %u cpus %.2f GiB  profile (%s) %u "
	        "cpus %.2f GiB  workers %s\n",
	        u->hostname, u->kernel, u->filesystem,
	        u->device[0] ? " on " : "", u->device,
	        u->clone_method[0] ? u->clone_method : "(not staged)",
	        u->detected_cpus, (double)u->detected_mem_bytes / (MIB * 1024),
	        u->profile, u->emulated_cpus,
	        (double)u->emulated_mem_bytes / (MIB * 1024), workers);
	build_lines(f, u);
	envelope_line(f, r);
	if (r->has_end)
		fprintf(f,
		        "  status       %s  publications %llu  merges %llu  "
		        "wall %.3f s  recording %.3f s (%.2f%%)\n"
		        "  fingerprint  %s\n",
		        r->end.status, (unsigned long long)r->end.publications,
		        /* the completed merge events the tables list, as
		         * `export` writes them (run.merges_completed lacked
		         * a merge that completed while the run was closed
		         * before ms_rec_merge counted it; event_count
		         * compares the two) */
		        (unsigned long long)r->merges_ok, sec(r->end.wall_ns),
		        sec(r->end.record_ns),
		        r->end.wall_ns ? 100.0 * (double)r->end.record_ns /
		                                 (double)r->end.wall_ns
		                       : 0.0,
		        r->end.selection_fp);
	else
		fprintf(f, "  status       unfinished (no end record)\n");
	/* Why a failed or aborted run ended. */
	if (r->has_end && r->end.error[0])
		fprintf(f, "  error        %s\n", r->end.error);
}

/* What the resource rows count, under them: a reader who counts the
 * process's syncs with strace sees the event database's as well. */
static void
print_phase_notes(FILE *f, const phase_agg *p, const phase_agg *c,
                  const phase_agg *b)
{
	fprintf(f,
	        "  (peak RSS in phase: the highest resident set while the "
	        "phase ran: the\n   process's high-water mark when the phase "
	        "raised it, else sampled every\n   5 ms; anon, file and shmem: "
	        "each kind's own peak in it, sampled every 5 ms;\n   before: "
	        "the same from the run's start, through the staging and the\n"
	        "   oracle, to the primary phase's start)\n");
	if (!b->has_phase)
		fprintf(f, "  (no record of the time before the primary phase: "
		           "its peaks read 0)\n");
	fprintf(f, "  (fsyncs: every fsync and syncfs of the shard and its "
	           "parts; before: the\n   shard's creation and the staging. "
	           "The event database's own syncs,\n   SQLite's fdatasync "
	           "calls, are not counted)\n");
	if (!p->has_phase || !c->has_phase)
		fprintf(f, "  (no phase record for%s%s)\n",
		        p->has_phase ? "" : " primary",
		        c->has_phase ? "" : " cooldown");
}

static void
print_phases(FILE *f, const report *r)
{
	const phase_agg *p = &r->ph[0], *c = &r->ph[1], *b = &r->before;
	fprintf(f, "\n%-30s %14s %14s\n", "resources", "primary", "cooldown");
	row_f(f, "staging before", "s", sec(p->ph.staging_ns),
	      sec(c->ph.staging_ns), 3);
	row_u(f, "fsyncs before", p->ph.staging_fsyncs, c->ph.staging_fsyncs);
	row_f(f, "peak RSS before", "MiB", mib(b->ph.rss_peak), 0, 2);
	row_f(f, "  anon peak before", "MiB", mib(b->ph.rss_anon_peak), 0, 2);
	row_f(f, "  file peak before", "MiB", mib(b->ph.rss_file_peak), 0, 2);
	row_f(f, "  shmem peak before", "MiB", mib(b->ph.rss_shmem_peak), 0,
	      2);
	row_f(f, "wall", "s", sec(p->ph.wall_ns), sec(c->ph.wall_ns), 3);
	row_f(f, "cpu", "s", sec(p->ph.cpu_ns), sec(c->ph.cpu_ns), 3);
	row_f(f, "effective cores", "",
	      p->ph.wall_ns ? (double)p->ph.cpu_ns / (double)p->ph.wall_ns : 0,
	      c->ph.wall_ns ? (double)c->ph.cpu_ns / (double)c->ph.wall_ns : 0,
	      2);
	row_f(f, "allocated", "MiB", mib(p->ph.alloc_bytes),
	      mib(c->ph.alloc_bytes), 2);
	row_u(f, "allocations", p->ph.alloc_count, c->ph.alloc_count);
	row_f(f, "peak live", "MiB", mib((uint64_t)p->ph.peak_live),
	      mib((uint64_t)c->ph.peak_live), 2);
	row_f(f, "peak RSS in phase", "MiB", mib(p->ph.rss_peak),
	      mib(c->ph.rss_peak), 2);
	row_f(f, "  anon peak in phase", "MiB", mib(p->ph.rss_anon_peak),
	      mib(c->ph.rss_anon_peak), 2);
	row_f(f, "  file peak in phase", "MiB", mib(p->ph.rss_file_peak),
	      mib(c->ph.rss_file_peak), 2);
	row_f(f, "  shmem peak in phase", "MiB", mib(p->ph.rss_shmem_peak),
	      mib(c->ph.rss_shmem_peak), 2);
	row_f(f, "read", "MiB", mib(p->ph.bytes_read), mib(c->ph.bytes_read),
	      2);
	row_f(f, "written", "MiB", mib(p->ph.bytes_written),
	      mib(c->ph.bytes_written), 2);
	row_u(f, "fsyncs", p->ph.fsyncs, c->ph.fsyncs);
	row_f(f, "final drain", "s", sec(p->ph.drain_ns), sec(c->ph.drain_ns),
	      3);
	row_f(f, "merge wall (sum)", "s", sec(p->merge_wall_ns),
	      sec(c->merge_wall_ns), 3);
	row_f(f, "merge cpu (sum)", "s", sec(p->merge_cpu_ns),
	      sec(c->merge_cpu_ns), 3);
	row_f(f, "index wall (sum)", "s", sec(p->idx_wall_ns),
	      sec(c->idx_wall_ns), 3);
	row_f(f, "index share of merge wall", "%", idx_share(p), idx_share(c),
	      1);
	row_f(f, "core input", "MiB", mib(p->in_bytes), mib(c->in_bytes), 2);
	row_f(f, "core output", "MiB", mib(p->out_bytes), mib(c->out_bytes), 2);
	row_f(f, "index input", "MiB", mib(p->idx_in_bytes),
	      mib(c->idx_in_bytes), 2);
	row_f(f, "index output", "MiB", mib(p->idx_out_bytes),
	      mib(c->idx_out_bytes), 2);
	row_f(f, "write amplification core", "x",
	      ratio(p->out_bytes, p->in_bytes),
	      ratio(c->out_bytes, c->in_bytes), 4);
	row_f(f, "write amplification all", "x",
	      ratio(p->out_bytes + p->idx_out_bytes,
	            p->in_bytes + p->idx_in_bytes),
	      ratio(c->out_bytes + c->idx_out_bytes,
	            c->in_bytes + c->idx_in_bytes),
	      4);
	print_phase_notes(f, p, c, b);

	fprintf(f, "\n%-30s %14s %14s\n", "merges", "primary", "cooldown");
	row_u(f, "total", p->merges, c->merges);
	row_u(f, "failed", p->failed, c->failed);
	for (int l = 0; l < NLANES; l++)
		if (p->by_lane[l] || c->by_lane[l] || l < 3) {
			char n[40];
			snprintf(n, sizeof(n), "lane %s", lane_name(l));
			row_u(f, n, p->by_lane[l], c->by_lane[l]);
		}
	row_u(f, "mature-containing", p->mature_merges, c->mature_merges);
	row_u(f, "hot", p->hot_merges, c->hot_merges);
	static const int order[3] = { MS_SAMPLING_EXECUTED,
		                      MS_SAMPLING_ENABLED_NO_EVALUATION,
		                      MS_SAMPLING_NOT_EXECUTED };
	for (int i = 0; i < 3; i++)
		row_u(f, ms_ev_class_name(order[i]), p->by_class[order[i]],
		      c->by_class[order[i]]);
	for (int k = 1; k < MS_SREASON_COUNT; k++)
		if (p->by_reason[k] || c->by_reason[k]) {
			char n[48];
			snprintf(n, sizeof(n), "  reason %s",
			         ms_ev_reason_name(k));
			row_u(f, n, p->by_reason[k], c->by_reason[k]);
		}

	fprintf(f, "\n%-30s %14s %14s\n", "sampling", "primary", "cooldown");
	row_u(f, "plugin calls", p->calls, c->calls);
	row_u(f, "traces evaluated", p->evaluated, c->evaluated);
	row_u(f, "traces kept", p->kept, c->kept);
	row_u(f, "traces dropped", p->dropped, c->dropped);
	row_u(f, "traces oversized", p->oversized, c->oversized);
	row_u(f, "traces kept hot", p->hot, c->hot);
	row_u(f, "traces deferred", p->deferred, c->deferred);
	row_u(f, "  guard-retained at the edge", p->edge, c->edge);
	row_u(f, "  kept: drop set full", p->full, c->full);
	row_u(f, "batches", p->batches, c->batches);
	row_f(f, "peak staged", "MiB", mib(p->peak_staged), mib(c->peak_staged),
	      2);
	row_f(f, "deletion ratio", "%", 100.0 * ratio(p->dropped, p->evaluated),
	      100.0 * ratio(c->dropped, c->evaluated), 2);
}

/* Each sampled merge's staging (the first STAGED_SHOWN): the planner's
 * figures, planned and actual batches, peaks, the hold arena's cold and
 * reused capacity, then every recorded batch with its flush reason. */
static void
print_staging(FILE *f, const report *r)
{
	if (r->nsampled == 0)
		return;
	fprintf(f, "\nstaged batches (staging %s; %zu sampled merges%s)\n",
	        r->run.staging[0] ? r->run.staging : "?", r->nsampled,
	        r->nsampled > r->nstaged ? ", the first listed" : "");
	for (size_t i = 0; i < r->nstaged; i++) {
		const staged_merge *m = &r->staged[i];
		const ms_merge_sampling *s = &m->s;
		fprintf(f,
		        "  merge %llu %s: estimate %.2f MiB, hard %.2f MiB, "
		        "preferred %.2f MiB\n"
		        "    batches planned %llu, cut %llu; peak staged %.2f "
		        "MiB (all merges at once %.2f MiB); arena cold %.2f "
		        "MiB, reused %.2f MiB\n",
		        (unsigned long long)m->seq, m->lane,
		        mib(s->estimate_bytes), mib(s->hard_limit_bytes),
		        mib(s->preferred_limit_bytes),
		        (unsigned long long)s->batches_planned,
		        (unsigned long long)s->batches,
		        mib(s->peak_staged_bytes),
		        mib(s->peak_concurrent_bytes), mib(s->arena_cold_bytes),
		        mib(s->arena_reused_bytes));
		if (s->nbatch_recs)
			fprintf(f, "    %5s %12s %9s %9s  %s\n", "batch",
			        "charged MiB", "traces", "evaluated", "reason");
		for (uint32_t k = 0; k < s->nbatch_recs; k++) {
			const ms_merge_batch *b = &s->batch[k];
			fprintf(f, "    %5u %12.2f %9u %9u  %s\n", k + 1,
			        mib(b->charged_bytes), b->traces, b->evaluated,
			        ms_flush_reason_name(b->reason));
		}
		/* The event log keeps a merge's first MS_MERGE_BATCH_RECS
		 * batches: say so rather than end the list short. */
		if (s->batches > s->nbatch_recs)
			fprintf(f,
			        "    batches %u to %llu not recorded (the "
			        "event log keeps the first %d of a merge)\n",
			        s->nbatch_recs + 1,
			        (unsigned long long)s->batches,
			        MS_MERGE_BATCH_RECS);
	}
}

static void
print_plugins(FILE *f, const report *r)
{
	if (!r->nlinks) {
		fprintf(f, "\nplugins: none called\n");
		return;
	}
	fprintf(f, "\n%-17s %10s %12s %12s %12s %12s %10s %9s\n", "plugins",
	        "calls", "traces", "kept", "total ms", "ns/trace", "max ms",
	        "fail-open");
	/* (fail-open: merges in which the link failed open at least once;
	 * the calls by kind follow the histogram.) */
	for (size_t i = 0; i < r->nlinks; i++) {
		const link_agg *g = &r->links[i];
		fprintf(f,
		        "  %-15s %10llu %12llu %12llu %12.3f %12.1f %10.3f "
		        "%9llu\n",
		        g->name, (unsigned long long)g->calls,
		        (unsigned long long)g->traces,
		        (unsigned long long)g->kept, (double)g->total_ns / 1e6,
		        g->traces ? (double)g->total_ns / (double)g->traces : 0,
		        (double)g->max_ns / 1e6,
		        (unsigned long long)g->fail_open);
	}
	fprintf(f, "  Decide latency (calls per bucket, upper bound in ms)\n");
	fprintf(f, "  %-15s", "");
	for (int b = 0; b < MS_EV_HIST_BUCKETS - 1; b++)
		fprintf(f, " %6g", ms_ev_hist_bounds_ms[b]);
	fprintf(f, " %6s\n", ">1000");
	for (size_t i = 0; i < r->nlinks; i++) {
		fprintf(f, "  %-15s", r->links[i].name);
		for (int b = 0; b < MS_EV_HIST_BUCKETS; b++)
			fprintf(f, " %6llu",
			        (unsigned long long)r->links[i].hist[b]);
		fputc('\n', f);
	}
	fprintf(f, "  Calls failed open by kind\n  %-15s", "");
	for (unsigned k = 0; k < MS_EV_FAIL_KINDS; k++)
		fprintf(f, " %12s", ms_ev_fail_kind_name(k));
	fputc('\n', f);
	for (size_t i = 0; i < r->nlinks; i++) {
		fprintf(f, "  %-15s", r->links[i].name);
		for (unsigned k = 0; k < MS_EV_FAIL_KINDS; k++)
			fprintf(f, " %12llu",
			        (unsigned long long)r->links[i].fails[k]);
		fputc('\n', f);
	}
}

/* The run reconciled with the verdict oracle (gate verdict_oracle): a
 * figure per phase and for the run; rows that state an identity say
 * whether it holds. */
static void
print_recon(FILE *f, const report *r)
{
	if (!r->nrecon)
		return;
	fprintf(f, "\n%-34s %10s %10s %10s %10s\n",
	        "reconciliation with the oracle", "primary", "cooldown",
	        "finalize", "run");
	for (size_t i = 0; i < r->nrecon; i++) {
		const ms_ev_recon *c = &r->recon[i];
		fprintf(f, "  %-32s", c->name);
		for (int k = 0; k < MS_EV_RECON_COLS; k++)
			fprintf(f, " %10llu", (unsigned long long)c->v[k]);
		if (c->note[0] == '(')
			fprintf(f, "  %s", c->note);
		else if (c->note[0])
			fprintf(f, "  %s %s", c->ok ? "ok" : "FAIL", c->note);
		else if (!c->ok)
			fprintf(f, "  FAIL");
		fputc('\n', f);
	}
}

static double
pct(uint64_t a, uint64_t b)
{
	return b ? 100.0 * (double)a / (double)b : 0.0;
}

/* The reference's readiness figures for the primary phase (before the
 * cooldown), beside its thresholds: figures to read, not gates. */
static void
print_readiness(FILE *f, const report *r)
{
	uint64_t rows = r->run.input_ledger.kind[MS_KIND_CORE].rows;
	fprintf(f,
	        "\n%-48s %12s  %s\n"
	        "  %-46s %12llu  >= 10\n"
	        "  %-46s %12llu  >= 10\n"
	        "  %-46s %12llu  all executed\n"
	        "  %-46s %12llu  >= 10 (the ten-round threshold)\n"
	        "  %-46s %11.1f%%  >= 30%%\n"
	        "  %-46s %11.1f%%  >= 30%%\n"
	        "  %-46s %11.1f%%  >= 95%%\n"
	        "  %-46s %12llu  (diagnostic)\n"
	        "  %-46s %12u\n",
	        "readiness, primary phase (figures, not gates)", "run",
	        "reference", "merges bypassed: merge_grace",
	        (unsigned long long)r->ready.grace, "merges executed",
	        (unsigned long long)r->ready.executed,
	        "  executed with every input at depth >= 1",
	        (unsigned long long)r->ready.executed_deep,
	        "mature-containing selections",
	        (unsigned long long)r->ready.mature_sel,
	        "  their mature input rows, of fixture rows",
	        pct(r->ready.mature_rows, rows),
	        "  their mature core bytes, of raw core bytes",
	        pct(r->ready.mature_bytes, r->ready.raw_bytes),
	        "  mature rows with an input at depth >= 1",
	        pct(r->ready.mature_rows_deep, r->ready.mature_rows),
	        "  fully precompacted (every input depth >= 1)",
	        (unsigned long long)r->ready.precompacted, "  deepest input",
	        r->ready.max_depth);
}

static ms_gate_health_key
health_key(const void *evs, size_t j)
{
	const health_ev *h = (const health_ev *)evs + j;
	return (ms_gate_health_key){ h->link, h->kind, h->why };
}

/* Every fail-open call and sampling bypass, by merge, link and kind; the
 * cause of each kind of failure where it first shows. */
static void
print_health(FILE *f, const report *r)
{
	fprintf(f,
	        "\nplugin health: %zu event%s (fail-open calls by kind, "
	        "lossless retries, oversized traces kept unevaluated)\n",
	        r->nhealth, r->nhealth == 1 ? "" : "s");
	for (size_t i = 0; i < r->nhealth; i++) {
		const health_ev *h = &r->health[i];
		fprintf(f, "  merge #%-6llu link %-15s %-15s x%llu",
		        (unsigned long long)h->seq, h->link, h->kind,
		        (unsigned long long)h->count);
		if (ms_gate_health_first_why(r->health, i, health_key))
			fprintf(f, "  %s", h->why);
		fputc('\n', f);
	}
}

/* ---- the plugins' log (the plugin_log tables) ------------------------- */

static int
count_line(void *ctx, const ms_ev_plugin_log_count *c)
{
	FILE *f = ctx;
	fprintf(f, "  %-18s %10llu %10llu\n", c->label,
	        (unsigned long long)c->lines,
	        (unsigned long long)c->suppressed);
	return 0;
}

static int
log_line(void *ctx, const ms_ev_plugin_log *l)
{
	FILE *f = ctx;
	fprintf(f, "  %+11.3f s  %-18s %-5s  %s\n", (double)l->wall_ns / 1e9,
	        l->label, ms_ev_log_level_name(l->level), l->message);
	return 0;
}

static int
count_total(void *ctx, const ms_ev_plugin_log_count *c)
{
	uint64_t *t = ctx;
	t[0] += c->lines;
	t[1] += c->suppressed;
	return 0;
}

/* What the plugins logged: each link's lines kept and suppressed, then
 * every line kept (time since the run started, link, level, line). */
static int
print_plugin_log(FILE *f, ms_evdb *db, ms_errbuf *eb)
{
	uint64_t t[2] = { 0, 0 };
	int rc = ms_evdb_each_plugin_log_count(db, count_total, t, eb);
	if (rc < 0)
		return rc;
	if (!t[0] && !t[1]) {
		fprintf(f, "\nplugin log: nothing logged\n");
		return 0;
	}
	fprintf(f,
	        "\nplugin log: %llu line%s kept, %llu suppressed (the first "
	        "%d of each link are kept)\n",
	        (unsigned long long)t[0], t[0] == 1 ? "" : "s",
	        (unsigned long long)t[1], MS_EV_PLOG_KEEP);
	fprintf(f, "  %-18s %10s %10s\n", "link", "kept", "suppressed");
	rc = ms_evdb_each_plugin_log_count(db, count_line, f, eb);
	if (rc == 0 && t[0])
		rc = ms_evdb_each_plugin_log(db, log_line, f, eb);
	return rc;
}

static unsigned
print_gates(FILE *f, const report *r)
{
	ms_ev_gate rf;
	bool unfinished = run_finished_gate(r, &rf);
	fprintf(f, "\ngates\n");
	if (!unfinished && !r->ngates)
		fprintf(f, "  (none recorded)\n");
	unsigned failed = 0;
	for (size_t i = 0; i < r->ngates + unfinished; i++) {
		const ms_ev_gate *g = gate_at(r, unfinished ? &rf : NULL, i);
		fprintf(f, "  %s  %-24s %s\n",
		        !g->pass  ? "FAIL"
		        : g->warn ? "WARN"
		                  : "PASS",
		        g->name, g->detail);
		failed += !g->pass;
	}
	fprintf(f, "  %zu gates, %u failed%s\n", r->ngates + unfinished,
	        failed, unfinished ? " (the run did not finish)" : "");
	return failed;
}

int
ms_report_text(ms_evdb *db, FILE *out, unsigned *failed, ms_errbuf *eb)
{
	report r;
	int rc = report_load_checked(db, &r, eb);
	if (rc == 0) {
		print_header(out, &r, ms_evdb_path(db));
		print_phases(out, &r);
		print_staging(out, &r);
		print_plugins(out, &r);
		ms__figures fg;
		rc = ms__figures_load(db, &fg, eb);
		if (rc == 0)
			ms__figures_text(out, &fg);
	}
	if (rc == 0)
		rc = print_plugin_log(out, db, eb);
	if (rc == 0) {
		print_health(out, &r);
		print_readiness(out, &r);
		print_recon(out, &r);
		rc = ms__report_reference(db, &r.run, out, eb);
	}
	if (rc == 0) {
		unsigned nf = print_gates(out, &r);
		if (failed)
			*failed = nf;
	}
	report_free(&r);
	return rc;
}

/* ---- JSON ------------------------------------------------------------- */

static void
jkey(FILE *f, const char *k, bool *first)
{
	if (!*first)
		fputc(',', f);
	*first = false;
	ms__json_str(f, k);
	fputc(':', f);
}

static void
ju(FILE *f, const char *k, uint64_t v, bool *first)
{
	jkey(f, k, first);
	fprintf(f, "%llu", (unsigned long long)v);
}

static void
ji(FILE *f, const char *k, int64_t v, bool *first)
{
	jkey(f, k, first);
	fprintf(f, "%lld", (long long)v);
}

static void
jd(FILE *f, const char *k, double v, bool *first)
{
	jkey(f, k, first);
	fprintf(f, "%.6f", v);
}

static void
js(FILE *f, const char *k, const char *v, bool *first)
{
	jkey(f, k, first);
	ms__json_str(f, v);
}

static void
json_phase(FILE *f, const phase_agg *a)
{
	bool first = true;
	fputc('{', f);
	ji(f, "wall_ns", a->ph.wall_ns, &first);
	ji(f, "cpu_ns", a->ph.cpu_ns, &first);
	ju(f, "alloc_bytes", a->ph.alloc_bytes, &first);
	ju(f, "alloc_count", a->ph.alloc_count, &first);
	ji(f, "peak_live", a->ph.peak_live, &first);
	ju(f, "rss_peak", a->ph.rss_peak, &first);
	ju(f, "rss_anon_peak", a->ph.rss_anon_peak, &first);
	ju(f, "rss_file_peak", a->ph.rss_file_peak, &first);
	ju(f, "rss_shmem_peak", a->ph.rss_shmem_peak, &first);
	ji(f, "staging_ns", a->ph.staging_ns, &first);
	ju(f, "staging_fsyncs", a->ph.staging_fsyncs, &first);
	ju(f, "bytes_read", a->ph.bytes_read, &first);
	ju(f, "bytes_written", a->ph.bytes_written, &first);
	ju(f, "fsyncs", a->ph.fsyncs, &first);
	ji(f, "drain_ns", a->ph.drain_ns, &first);
	ju(f, "merges", a->merges, &first);
	ju(f, "failed", a->failed, &first);
	ji(f, "merge_wall_ns", a->merge_wall_ns, &first);
	ji(f, "merge_cpu_ns", a->merge_cpu_ns, &first);
	ji(f, "index_wall_ns", a->idx_wall_ns, &first);
	jd(f, "index_share_of_merge_wall", idx_share(a) / 100.0, &first);
	ju(f, "core_input_bytes", a->in_bytes, &first);
	ju(f, "core_output_bytes", a->out_bytes, &first);
	ju(f, "index_input_bytes", a->idx_in_bytes, &first);
	ju(f, "index_output_bytes", a->idx_out_bytes, &first);
	jd(f, "write_amplification_core", ratio(a->out_bytes, a->in_bytes),
	   &first);
	jd(f, "write_amplification_all",
	   ratio(a->out_bytes + a->idx_out_bytes,
	         a->in_bytes + a->idx_in_bytes),
	   &first);
	ju(f, "mature_merges", a->mature_merges, &first);
	ju(f, "hot_merges", a->hot_merges, &first);
	jkey(f, "by_lane", &first);
	fputc('{', f);
	bool f2 = true;
	for (int l = 0; l < NLANES; l++)
		ju(f, lane_name(l), a->by_lane[l], &f2);
	fputc('}', f);
	jkey(f, "by_class", &first);
	fputc('{', f);
	f2 = true;
	for (int c = 0; c < MS_SAMPLING_CLASS_COUNT; c++)
		ju(f, ms_ev_class_name(c), a->by_class[c], &f2);
	fputc('}', f);
	jkey(f, "by_reason", &first);
	fputc('{', f);
	f2 = true;
	for (int k = 0; k < MS_SREASON_COUNT; k++)
		ju(f, ms_ev_reason_name(k), a->by_reason[k], &f2);
	fputc('}', f);
	ju(f, "plugin_calls", a->calls, &first);
	ju(f, "traces_evaluated", a->evaluated, &first);
	ju(f, "traces_kept", a->kept, &first);
	ju(f, "traces_dropped", a->dropped, &first);
	ju(f, "traces_oversized", a->oversized, &first);
	ju(f, "traces_deferred", a->deferred, &first);
	ju(f, "traces_drop_set_full", a->full, &first);
	ju(f, "batches", a->batches, &first);
	ju(f, "batches_planned", a->planned, &first);
	ju(f, "peak_staged_bytes", a->peak_staged, &first);
	fputc('}', f);
}

static int report_json(ms_evdb *db, FILE *out, unsigned *failed, ms_errbuf *eb);

int
ms_report_json(ms_evdb *db, FILE *out, unsigned *failed, ms_errbuf *eb)
{
	ms__c_numeric cn;
	ms__c_numeric_begin(&cn);
	int rc = report_json(db, out, failed, eb);
	ms__c_numeric_end(&cn);
	return rc;
}

/* The JSON report's sections, one function each, in report order. */
static void
json_links(FILE *f, const report *r)
{
	fputc('[', f);
	for (size_t i = 0; i < r->nlinks; i++) {
		const link_agg *g = &r->links[i];
		bool f2 = true;
		fputs(i ? ",{" : "{", f);
		js(f, "name", g->name, &f2);
		ju(f, "calls", g->calls, &f2);
		ju(f, "traces", g->traces, &f2);
		ju(f, "kept", g->kept, &f2);
		ji(f, "total_ns", g->total_ns, &f2);
		ji(f, "max_ns", g->max_ns, &f2);
		jd(f, "ns_per_trace",
		   g->traces ? (double)g->total_ns / (double)g->traces : 0,
		   &f2);
		ju(f, "fail_open", g->fail_open, &f2);
		for (unsigned k = 0; k < MS_EV_FAIL_KINDS; k++) {
			char key[40];
			snprintf(key, sizeof(key), "fail_%s",
			         ms_ev_fail_kind_name(k));
			ju(f, key, g->fails[k], &f2);
		}
		jkey(f, "histogram", &f2);
		fputc('[', f);
		for (int b = 0; b < MS_EV_HIST_BUCKETS; b++)
			fprintf(f, "%s%llu", b ? "," : "",
			        (unsigned long long)g->hist[b]);
		fputs("]}", f);
	}
	fputc(']', f);
}

/* A walk that writes one JSON array's elements. */
typedef struct json_walk {
	FILE *f;
	size_t n;
} json_walk;

static void
json_health(FILE *f, const report *r)
{
	fputc('[', f);
	for (size_t i = 0; i < r->nhealth; i++) {
		bool f2 = true;
		fputs(i ? ",{" : "{", f);
		ju(f, "merge", r->health[i].seq, &f2);
		js(f, "link", r->health[i].link, &f2);
		js(f, "kind", r->health[i].kind, &f2);
		ju(f, "count", r->health[i].count, &f2);
		js(f, "cause", r->health[i].why, &f2);
		fputc('}', f);
	}
	fputc(']', f);
}

static void
json_readiness(FILE *f, const report *r)
{
	bool f2 = true;
	uint64_t rows = r->run.input_ledger.kind[MS_KIND_CORE].rows;
	fputc('{', f);
	ju(f, "merge_grace", r->ready.grace, &f2);
	ju(f, "executed", r->ready.executed, &f2);
	ju(f, "executed_all_inputs_deep", r->ready.executed_deep, &f2);
	ju(f, "mature_selections", r->ready.mature_sel, &f2);
	ju(f, "mature_selection_threshold", 10, &f2);
	ju(f, "mature_rows", r->ready.mature_rows, &f2);
	jd(f, "mature_rows_pct", pct(r->ready.mature_rows, rows), &f2);
	ju(f, "mature_core_bytes", r->ready.mature_bytes, &f2);
	jd(f, "mature_core_bytes_pct",
	   pct(r->ready.mature_bytes, r->ready.raw_bytes), &f2);
	jd(f, "mature_rows_with_deep_input_pct",
	   pct(r->ready.mature_rows_deep, r->ready.mature_rows), &f2);
	ju(f, "precompacted_mature_selections", r->ready.precompacted, &f2);
	ju(f, "max_mature_depth", r->ready.max_depth, &f2);
	fputc('}', f);
}

static void
json_recon(FILE *f, const report *r)
{
	fputc('[', f);
	for (size_t i = 0; i < r->nrecon; i++) {
		const ms_ev_recon *c = &r->recon[i];
		bool f2 = true;
		fputs(i ? ",{" : "{", f);
		js(f, "name", c->name, &f2);
		ju(f, "primary", c->v[MS_EV_RECON_PRIMARY], &f2);
		ju(f, "cooldown", c->v[MS_EV_RECON_COOLDOWN], &f2);
		ju(f, "finalize", c->v[MS_EV_RECON_FINALIZE], &f2);
		ju(f, "run", c->v[MS_EV_RECON_TOTAL], &f2);
		jkey(f, "ok", &f2);
		fputs(c->ok ? "true" : "false", f);
		js(f, "check", c->note, &f2);
		fputc('}', f);
	}
	fputc(']', f);
}

static int
json_log_count(void *ctx, const ms_ev_plugin_log_count *c)
{
	json_walk *w = ctx;
	bool f2 = true;
	fputs(w->n++ ? ",{" : "{", w->f);
	ju(w->f, "link", c->link, &f2);
	js(w->f, "label", c->label, &f2);
	ju(w->f, "kept", c->lines, &f2);
	ju(w->f, "suppressed", c->suppressed, &f2);
	fputc('}', w->f);
	return 0;
}

static int
json_log_line(void *ctx, const ms_ev_plugin_log *l)
{
	json_walk *w = ctx;
	bool f2 = true;
	fputs(w->n++ ? ",{" : "{", w->f);
	ji(w->f, "wall_ns", l->wall_ns, &f2);
	/* A logical time can exceed 2^53: a string (SCHEMA.md). */
	char t[24];
	snprintf(t, sizeof(t), "%lld", (long long)l->logical_ns);
	js(w->f, "logical_ns", t, &f2);
	ju(w->f, "link", l->link, &f2);
	js(w->f, "label", l->label, &f2);
	js(w->f, "level", ms_ev_log_level_name(l->level), &f2);
	js(w->f, "message", l->message, &f2);
	fputc('}', w->f);
	return 0;
}

/* "plugin_log":{"keep_per_link":100,"links":[...],"lines":[...]} */
static int
json_plugin_log(FILE *f, ms_evdb *db, ms_errbuf *eb)
{
	json_walk w = { f, 0 };
	fprintf(f, "{\"keep_per_link\":%d,\"links\":[", MS_EV_PLOG_KEEP);
	int rc = ms_evdb_each_plugin_log_count(db, json_log_count, &w, eb);
	fputs("],\"lines\":[", f);
	w.n = 0;
	if (rc == 0)
		rc = ms_evdb_each_plugin_log(db, json_log_line, &w, eb);
	fputs("]}", f);
	return rc;
}

/* The gates (a run that did not finish fails run_finished first,
 * run_finished_gate); returns how many failed. */
static unsigned
json_gates(FILE *f, const report *r)
{
	ms_ev_gate rf;
	bool unfinished = run_finished_gate(r, &rf);
	fputc('[', f);
	unsigned nf = 0;
	for (size_t i = 0; i < r->ngates + unfinished; i++) {
		const ms_ev_gate *g = gate_at(r, unfinished ? &rf : NULL, i);
		bool f2 = true;
		fputs(i ? ",{" : "{", f);
		js(f, "name", g->name, &f2);
		jkey(f, "pass", &f2);
		fputs(g->pass ? "true" : "false", f);
		jkey(f, "warn", &f2);
		fputs(g->warn ? "true" : "false", f);
		js(f, "detail", g->detail, &f2);
		fputc('}', f);
		nf += !g->pass;
	}
	fputc(']', f);
	return nf;
}

/* ms_report_json in the C numeric locale. */
static int
report_json(ms_evdb *db, FILE *out, unsigned *failed, ms_errbuf *eb)
{
	report r;
	int rc = report_load_checked(db, &r, eb);
	if (rc < 0) {
		report_free(&r);
		return rc;
	}
	FILE *f = out;
	bool first = true;
	fputc('{', f);
	js(f, "database", ms_evdb_path(db), &first);
	js(f, "version", r.run.version, &first);
	js(f, "fixture_dir", r.run.fixture_dir, &first);
	js(f, "fixture_preset", r.run.fixture_preset, &first);
	/* A seed is any 64-bit number: a string of its digits, as the
	 * exports write the integers that can exceed 2^53 (SCHEMA.md). */
	char seed[24];
	snprintf(seed, sizeof(seed), "%llu",
	         (unsigned long long)r.run.fixture_seed);
	js(f, "fixture_seed", seed, &first);
	js(f, "fixture_hash", r.run.fixture_hash, &first);
	js(f, "variant", r.run.variant, &first);
	js(f, "chain", r.run.chain, &first);
	js(f, "grace_policy", r.run.grace_policy, &first);
	js(f, "staging", r.run.staging, &first);
	js(f, "plugin_host", r.run.plugin_host, &first);
	js(f, "hostname", r.run.hostname, &first);
	js(f, "kernel", r.run.kernel, &first);
	js(f, "filesystem", r.run.filesystem, &first);
	js(f, "device", r.run.device, &first);
	js(f, "binary_checksum", r.run.binary_checksum, &first);
	js(f, "git_commit", r.run.git_commit, &first);
	js(f, "compiler", r.run.compiler, &first);
	js(f, "cpu_model", r.run.cpu_model, &first);
	js(f, "cache_label", r.run.cache_label, &first);
	js(f, "profile", r.run.profile, &first);
	js(f, "limits_mode", r.run.limits_mode, &first);
	js(f, "limits_why", r.run.limits_why, &first);
	/* Measured only in a cgroup of the run's own: else null. */
	if (ms__ev_run_in_cgroup(&r.run)) {
		ji(f, "cgroup_peak_bytes", (int64_t)r.end.cgroup_peak_bytes,
		   &first);
		ji(f, "cgroup_throttled_ns", r.end.cgroup_throttled_ns, &first);
	} else {
		jkey(f, "cgroup_peak_bytes", &first);
		fputs("null", f);
		jkey(f, "cgroup_throttled_ns", &first);
		fputs("null", f);
	}
	jkey(f, "allow_fail_open", &first);
	fputs(r.run.allow_fail_open ? "true" : "false", f);
	jkey(f, "serial", &first);
	fputs(r.run.serial ? "true" : "false", f);
	js(f, "status", r.has_end ? r.end.status : "", &first);
	js(f, "error", r.has_end ? r.end.error : "", &first);
	ju(f, "publications", r.end.publications, &first);
	ju(f, "merges_completed", r.merges_ok, &first); /* as the text */
	ji(f, "wall_ns", r.end.wall_ns, &first);
	ji(f, "record_ns", r.end.record_ns, &first);
	js(f, "selection_fp", r.end.selection_fp, &first);
	jkey(f, "phases", &first);
	fputs("{\"primary\":", f);
	json_phase(f, &r.ph[0]);
	fputs(",\"cooldown\":", f);
	json_phase(f, &r.ph[1]);
	fputs(",\"staging\":", f);
	json_phase(f, &r.before);
	fputc('}', f);
	jkey(f, "plugins", &first);
	json_links(f, &r);
	jkey(f, "plugin_health", &first);
	json_health(f, &r);
	jkey(f, "plugin_log", &first);
	if ((rc = json_plugin_log(f, db, eb)) < 0) {
		report_free(&r);
		return rc;
	}
	jkey(f, "readiness", &first);
	json_readiness(f, &r);
	jkey(f, "reconciliation", &first);
	json_recon(f, &r);
	jkey(f, "histogram_bounds_ms", &first);
	fputc('[', f);
	for (int b = 0; b < MS_EV_HIST_BUCKETS - 1; b++)
		fprintf(f, "%s%g", b ? "," : "", ms_ev_hist_bounds_ms[b]);
	fputc(']', f);
	ms_ev_gate rf;
	bool unfinished = run_finished_gate(&r, &rf);
	jkey(f, "finished", &first);
	fputs(unfinished ? "false" : "true", f);
	ms__figures fg;
	rc = ms__figures_load(db, &fg, eb);
	if (rc < 0) {
		report_free(&r);
		return rc;
	}
	ms__figures_json(f, &fg);
	jkey(f, "gates", &first);
	unsigned nf = json_gates(f, &r);
	ju(f, "gates_failed", nf, &first);
	fputs("}\n", f);
	if (failed)
		*failed = nf;
	report_free(&r);
	return 0;
}

/* ---- comparison ------------------------------------------------------- */

/* How many of r's recorded gates failed (an unfinished run: its
 * run_finished gate, counted by the caller). */
static unsigned
gates_failed(const report *r)
{
	unsigned n = 0;
	for (size_t i = 0; i < r->ngates; i++)
		n += !r->gates[i].pass;
	return n;
}

/* "  A  13 gates, 1 failed: ledgers" */
static void
cmp_gates(FILE *f, const char *side, const report *r)
{
	unsigned n = gates_failed(r);
	fprintf(f, "  %s  %zu gates, %u failed", side, r->ngates, n);
	const char *sep = ": ";
	for (size_t i = 0; i < r->ngates; i++) {
		if (r->gates[i].pass)
			continue;
		fprintf(f, "%s%s", sep, r->gates[i].name);
		sep = ", ";
	}
	fputc('\n', f);
}

int
ms_report_failed_gates(ms_evdb *db, unsigned *failed, ms_errbuf *eb)
{
	report r;
	*failed = 0;
	int rc = report_load_checked(db, &r, eb);
	ms_ev_gate rf;
	if (rc == 0)
		*failed = gates_failed(&r) + run_finished_gate(&r, &rf);
	report_free(&r);
	return rc;
}

/* B against A in %: one rule for every row, a difference that shows as
 * zero is "0.0%" without a sign (equal runs read "0.0%" whether their
 * figure is 0 or not; a tiny difference is not "+0.0%" or "-0.0%"),
 * any other is signed; "n/a" when A is 0 and B is not. */
static void
cmp_row(FILE *f, const char *name, double a, double b, int prec)
{
	fprintf(f, "  %-28s %14.*f %14.*f ", name, prec, a, prec, b);
	double d = a == 0.0 ? 0.0 : 100.0 * (b - a) / a;
	if (a == 0.0 && b != 0.0)
		fprintf(f, "%9s\n", "n/a");
	else if (fabs(d) < 0.05)
		fprintf(f, "%9s\n", "0.0%");
	else
		fprintf(f, "%+8.1f%%\n", d);
}

static void
cmp_phase(FILE *f, const char *title, const phase_agg *a, const phase_agg *b)
{
	fprintf(f, "\n%-30s %14s %14s %9s\n", title, "A", "B", "delta");
	cmp_row(f, "wall s", sec(a->ph.wall_ns), sec(b->ph.wall_ns), 3);
	cmp_row(f, "cpu s", sec(a->ph.cpu_ns), sec(b->ph.cpu_ns), 3);
	cmp_row(f, "allocated MiB", mib(a->ph.alloc_bytes),
	        mib(b->ph.alloc_bytes), 2);
	cmp_row(f, "allocations", (double)a->ph.alloc_count,
	        (double)b->ph.alloc_count, 0);
	cmp_row(f, "peak live MiB", mib((uint64_t)a->ph.peak_live),
	        mib((uint64_t)b->ph.peak_live), 2);
	cmp_row(f, "peak RSS in phase MiB", mib(a->ph.rss_peak),
	        mib(b->ph.rss_peak), 2);
	cmp_row(f, "read MiB", mib(a->ph.bytes_read), mib(b->ph.bytes_read), 2);
	cmp_row(f, "written MiB", mib(a->ph.bytes_written),
	        mib(b->ph.bytes_written), 2);
	cmp_row(f, "merge wall (sum) s", sec(a->merge_wall_ns),
	        sec(b->merge_wall_ns), 3);
	cmp_row(f, "index wall (sum) s", sec(a->idx_wall_ns),
	        sec(b->idx_wall_ns), 3);
	cmp_row(f, "write amplification all x",
	        ratio(a->out_bytes + a->idx_out_bytes,
	              a->in_bytes + a->idx_in_bytes),
	        ratio(b->out_bytes + b->idx_out_bytes,
	              b->in_bytes + b->idx_in_bytes),
	        4);
	cmp_row(f, "merges", (double)a->merges, (double)b->merges, 0);
	cmp_row(f, "plugin calls", (double)a->calls, (double)b->calls, 0);
	cmp_row(f, "traces evaluated", (double)a->evaluated,
	        (double)b->evaluated, 0);
	cmp_row(f, "traces kept", (double)a->kept, (double)b->kept, 0);
	cmp_row(f, "traces dropped", (double)a->dropped, (double)b->dropped, 0);
	cmp_row(f, "traces deferred", (double)a->deferred, (double)b->deferred,
	        0);
	cmp_row(f, "kept: drop set full", (double)a->full, (double)b->full, 0);
	cmp_row(f, "batches planned", (double)a->planned, (double)b->planned,
	        0);
	cmp_row(f, "batches", (double)a->batches, (double)b->batches, 0);
	cmp_row(f, "peak staged MiB", mib(a->peak_staged), mib(b->peak_staged),
	        2);
}

/* A figure one run has and the other lacks: "-" on the missing side. */
static void
cmp_row_opt(FILE *f, const char *name, bool ha, double a, bool hb, double b,
            int prec)
{
	if (ha && hb) {
		cmp_row(f, name, a, b, prec);
		return;
	}
	char x[32] = "-", y[32] = "-";
	if (ha)
		snprintf(x, sizeof(x), "%.*f", prec, a);
	if (hb)
		snprintf(y, sizeof(y), "%.*f", prec, b);
	fprintf(f, "  %-28s %14s %14s %9s\n", name, x, y, "n/a");
}

static const link_agg *
find_link(const report *r, const char *name)
{
	for (size_t i = 0; i < r->nlinks; i++)
		if (strcmp(r->links[i].name, name) == 0)
			return &r->links[i];
	return NULL;
}

/* Each plugin's calls, traces, kept traces and Decide time in both runs,
 * matched by plugin name; a plugin only one run has shows "-" on the
 * other side. */
static void
cmp_links(FILE *f, const report *a, const report *b)
{
	if (!a->nlinks && !b->nlinks)
		return;
	fprintf(f, "\n%-30s %14s %14s %9s\n", "plugins", "A", "B", "delta");
	for (int side = 0; side < 2; side++) {
		const report *r = side ? b : a;
		for (size_t i = 0; i < r->nlinks; i++) {
			const char *name = r->links[i].name;
			if (side && find_link(a, name))
				continue; /* listed with A's */
			const link_agg *x = find_link(a, name);
			const link_agg *y = find_link(b, name);
			static const char *const what[] = { "calls", "traces",
				                            "kept",
				                            "decide ms" };
			for (int k = 0; k < 4; k++) {
				double v[2] = { 0, 0 };
				for (int s = 0; s < 2; s++) {
					const link_agg *l = s ? y : x;
					if (!l)
						continue;
					v[s] = k == 0   ? (double)l->calls
					       : k == 1 ? (double)l->traces
					       : k == 2 ? (double)l->kept
					                : (double)l->total_ns /
					                          1e6;
				}
				char n[MS_EV_NAME_MAX + 16];
				snprintf(n, sizeof(n), "%s %s", name, what[k]);
				cmp_row_opt(f, n, x != NULL, v[0], y != NULL,
				            v[1], k == 3 ? 3 : 0);
			}
		}
	}
}

/* Counter i of g named for matching across runs: its plugin's name,
 * "#N" for the N-th link of that plugin in the chain when N > 1 (the
 * same plugin twice in one chain), and the counter's name. */
static void
counter_label(const ms__figures *g, size_t i, char *buf, size_t n)
{
	const ms_ev_plugin_stat *s = &g->stats[i];
	char l[MS__LINK_LABEL_MAX];
	ms__figures_link_label(g, s->link, l, sizeof(l));
	snprintf(buf, n, "%s %s", l, s->name);
}

static bool
find_counter(const ms__figures *g, const char *label, uint64_t *v)
{
	char l[2 * MS_EV_NAME_MAX + 16];
	for (size_t i = 0; i < g->nstats; i++) {
		counter_label(g, i, l, sizeof(l));
		if (strcmp(l, label) == 0) {
			*v = g->stats[i].value;
			return true;
		}
	}
	return false;
}

/* The plugins' own counters (SkyWalking's per-rule reached and kept,
 * DeterministicDrop's configured and observed ratios, ...) of both runs
 * side by side, matched by plugin and counter name; a counter only one
 * run has shows "-" on the other side. */
static void
cmp_counters(FILE *f, const ms__figures *a, const ms__figures *b)
{
	if (!a->nstats && !b->nstats)
		return;
	fprintf(f, "\n%-30s %14s %14s %9s\n", "plugin counters", "A", "B",
	        "delta");
	char l[2 * MS_EV_NAME_MAX + 16];
	for (int side = 0; side < 2; side++) {
		const ms__figures *g = side ? b : a;
		for (size_t i = 0; i < g->nstats; i++) {
			counter_label(g, i, l, sizeof(l));
			uint64_t va = 0, vb = 0;
			bool ha = find_counter(a, l, &va);
			bool hb = find_counter(b, l, &vb);
			if (side && ha)
				continue; /* listed with A's */
			cmp_row_opt(f, l, ha, (double)va, hb, (double)vb, 0);
		}
	}
}

/* What the run record's fixture hashes do not tell apart, read from the
 * fixture's manifest while it is still there: "empty opening" or "warm
 * opening", with ", dictionary" when its parts use one; "" when the
 * manifest is gone. */
static void
fixture_kind(const char *dir, char *buf, size_t n)
{
	ms_fixture *fx = NULL;
	ms_errbuf eb = { { 0 } };
	buf[0] = '\0';
	if (ms_fixture_open(&fx, dir, &eb) == 0) {
		const ms_fixture_info *i = ms_fixture_get_info(fx);
		snprintf(buf, n, "%s opening%s", i->opening,
		         i->dict_id ? ", dictionary" : "");
	}
	ms_fixture_close(fx);
}

/* Runs that must end alike: disabled and alwayskeep, or one variant
 * under both stagings. */
static bool
is_pair(const ms_ev_run *x, const ms_ev_run *y)
{
	const char *a = x->variant, *b = y->variant;
	if (strcmp(a, b) == 0)
		return strcmp(x->staging, y->staging) != 0 &&
		       strcmp(x->grace_policy, y->grace_policy) == 0;
	return (strcmp(a, "disabled") == 0 && strcmp(b, "alwayskeep") == 0) ||
	       (strcmp(a, "alwayskeep") == 0 && strcmp(b, "disabled") == 0);
}

/* The selection fingerprint (ms_engine_stats.fingerprint) over the
 * picker's selections alone, the finalize's left out: recomputed from the
 * merge events in dispatch order. */
typedef struct picker_sel {
	uint64_t seq;
	size_t n;
	uint64_t ids[MS_PICKER_PARTS_LIMIT];
} picker_sel;

typedef struct picker_fp {
	picker_sel *v;
	size_t n, cap;
	bool finalized, too_big;
} picker_fp;

static int
picker_fp_merge(void *ctx, const ms_ev_merge *m)
{
	picker_fp *p = ctx;
	if (strcmp(m->lane, MS_LANE_FINALIZE) == 0) {
		p->finalized = true;
		return 0;
	}
	if (m->ninputs > MS_PICKER_PARTS_LIMIT) {
		p->too_big = true;
		return 0;
	}
	if (p->n == p->cap) {
		size_t cap = p->cap ? 2 * p->cap : 256;
		picker_sel *v = realloc(p->v, cap * sizeof(*v));
		if (!v)
			return MS_ERR_NOMEM;
		p->v = v;
		p->cap = cap;
	}
	picker_sel *e = &p->v[p->n++];
	e->seq = m->seq;
	e->n = m->ninputs;
	for (size_t i = 0; i < m->ninputs; i++)
		e->ids[i] = m->inputs[i].id;
	return 0;
}

static int
cmp_sel_seq(const void *x, const void *y)
{
	uint64_t a = ((const picker_sel *)x)->seq;
	uint64_t b = ((const picker_sel *)y)->seq;
	return a < b ? -1 : a > b;
}

/* *fp over the picker's selections of db; *finalized whether a finalize
 * merge ran. false (no figure) when a selection could not be read back. */
static bool
picker_fingerprint(ms_evdb *db, uint64_t *fp, bool *finalized)
{
	picker_fp p = { 0 };
	ms_errbuf eb;
	bool ok = ms_evdb_each_merge(db, NULL, picker_fp_merge, &p, &eb) == 0 &&
	          !p.too_big;
	if (ok) {
		qsort(p.v, p.n, sizeof(*p.v), cmp_sel_seq);
		*fp = 0;
		for (size_t i = 0; i < p.n; i++)
			*fp = ms_pick_fp_add(*fp, p.v[i].ids, p.v[i].n);
		*finalized = p.finalized;
	}
	free(p.v);
	return ok;
}

/* When exactly one of da and db ran its finalize (the other skipped it,
 * as the reference does without a sampler), their whole-run fingerprints
 * differ by the finalize's selection alone: compare the picker's, print
 * the line and set *fp. false when that does not apply. */
static bool
cmp_picker_fp(FILE *f, ms_evdb *da, ms_evdb *db, bool *fp)
{
	uint64_t pa, pb;
	bool fa, fb;
	if (!picker_fingerprint(da, &pa, &fa) ||
	    !picker_fingerprint(db, &pb, &fb) || fa == fb)
		return false;
	*fp = pa == pb;
	fprintf(f,
	        "  %s  selection fingerprints  %016llx %s %016llx (the "
	        "picker's: %c skipped its finalize)\n",
	        *fp ? "PASS" : "FAIL", (unsigned long long)pa,
	        *fp ? "==" : "!=", (unsigned long long)pb, fa ? 'B' : 'A');
	return true;
}

/* The conditions a bench series holds equal (ms_bench_difference) on
 * which runs a and b differ, each named with both values: their deltas
 * include the difference (a profile of 1 CPU against 2 doubles the wall
 * by itself). The fixture has its own note and the grace policy is in
 * the header. */
static void
note_conditions(FILE *f, const ms_ev_run *a, const ms_ev_run *b)
{
	char va[MS_EV_TEXT_MAX], vb[MS_EV_TEXT_MAX];
	const char *what;
	bool any = false;
	for (unsigned k = 0;
	     (what = ms_bench_difference(a, b, k, va, vb, sizeof(va)));
	     k++) {
		if (strncmp(what, "fixture", 7) == 0 ||
		    strcmp(what, "grace policy") == 0)
			continue;
		if (!any)
			fprintf(f, "  note: A and B ran under different "
			           "conditions; the deltas include them:\n");
		any = true;
		fprintf(f, "    %-20s A \"%.200s\"  B \"%.200s\"\n", what, va,
		        vb);
	}
}

int
ms_report_compare(ms_evdb *da, ms_evdb *db, FILE *out, bool *mismatch,
                  ms_errbuf *eb)
{
	report a, b;
	int rc = report_load_checked(da, &a, eb);
	if (rc == 0)
		rc = report_load_checked(db, &b, eb);
	else
		memset(&b, 0, sizeof(b));
	if (mismatch)
		*mismatch = false;
	if (rc < 0)
		goto out;
	FILE *f = out;
	fprintf(f, "mergescope comparison\n");
	for (int side = 0; side < 2; side++) {
		const report *r = side ? &b : &a;
		fprintf(f,
		        "  %c  %s  %s  %s  policy %s  staging %s  plugin host "
		        "%s\n",
		        side ? 'B' : 'A', ms_evdb_path(side ? db : da),
		        r->run.variant, r->run.fixture_preset,
		        r->run.grace_policy[0] ? r->run.grace_policy : "-",
		        r->run.staging,
		        r->run.plugin_host[0] ? r->run.plugin_host : "-");
	}
	char wa[MS_EV_TEXT_MAX], wb[MS_EV_TEXT_MAX];
	bool ua = run_unfinished(&a, wa, sizeof(wa));
	bool ub = run_unfinished(&b, wb, sizeof(wb));
	if (ua || ub) {
		if (ua)
			fprintf(f, "  A is unfinished: %s\n", wa);
		if (ub)
			fprintf(f, "  B is unfinished: %s\n", wb);
		fprintf(f, "  no deltas: an unfinished run's figures cover "
		           "only part of its day\n");
		if (mismatch)
			*mismatch = true;
		goto out;
	}
	/* A run records the fixture's schedule hash, with its opening and
	 * dictionary folded in where it has them (ms_ev_run.fixture_hash);
	 * databases recorded before that have the empty day's hash for a
	 * warm one: the manifests, while they are there, tell them apart. */
	char ka[64], kb[64];
	fixture_kind(a.run.fixture_dir, ka, sizeof(ka));
	fixture_kind(b.run.fixture_dir, kb, sizeof(kb));
	bool same_fixture =
	        strcmp(a.run.fixture_hash, b.run.fixture_hash) == 0 &&
	        (!ka[0] || !kb[0] || strcmp(ka, kb) == 0);
	if (!same_fixture)
		fprintf(f,
		        "  note: different fixtures (%s%s%s vs %s%s%s); "
		        "the picker trajectories are not comparable\n",
		        a.run.fixture_hash, ka[0] ? ", " : "", ka,
		        b.run.fixture_hash, kb[0] ? ", " : "", kb);
	note_conditions(f, &a.run, &b.run);
	cmp_phase(f, "primary", &a.ph[0], &b.ph[0]);
	cmp_phase(f, "cooldown", &a.ph[1], &b.ph[1]);
	cmp_links(f, &a, &b);
	ms__figures *fa = malloc(sizeof(*fa)), *fb = malloc(sizeof(*fb));
	if (!fa || !fb)
		rc = ms_fail(eb, MS_ERR_NOMEM,
		             "comparison of %s: out of memory for the figures "
		             "(%zu bytes)",
		             ms_evdb_path(da), sizeof(*fa));
	if (rc == 0)
		rc = ms__figures_load(da, fa, eb);
	if (rc == 0)
		rc = ms__figures_load(db, fb, eb);
	if (rc == 0)
		cmp_counters(f, fa, fb);
	free(fa);
	free(fb);
	if (rc < 0)
		goto out;

	fprintf(f, "\ngates\n");
	cmp_gates(f, "A", &a);
	cmp_gates(f, "B", &b);

	fprintf(f, "\nequivalence\n");
	if (!is_pair(&a.run, &b.run) || !same_fixture) {
		fprintf(f, "  not applicable: needs a disabled and an "
		           "alwayskeep run of one fixture, or one variant "
		           "retained and re-read\n");
		goto out;
	}
	bool led = a.has_end && b.has_end;
	for (int k = 0; led && k < MS_KIND_COUNT; k++)
		led = ms_ledger_equal(&a.end.final_ledger.kind[k],
		                      &b.end.final_ledger.kind[k]);
	bool fp = a.has_end && b.has_end &&
	          strcmp(a.end.selection_fp, b.end.selection_fp) == 0;
	if (fp || !a.has_end || !b.has_end || !cmp_picker_fp(f, da, db, &fp))
		fprintf(f, "  %s  selection fingerprints  %s %s %s\n",
		        fp ? "PASS" : "FAIL", a.end.selection_fp,
		        fp ? "==" : "!=", b.end.selection_fp);
	fprintf(f,
	        "  %s  logical outputs         final ledgers (core, "
	        "latency, start_time) %s\n",
	        led ? "PASS" : "FAIL", led ? "identical" : "differ");
	if (mismatch)
		*mismatch = !fp || !led;
out:
	report_free(&a);
	report_free(&b);
	return rc;
}
