/*
 * gates.c - the end-of-run correctness gates of a replay (DESIGN §4): each
 * is checked against the shard and the controller's own tallies, recorded
 * in the event log and kept for the report.
 */
#include "replay_int.h"

#include "ms_fs.h"
#include "ms_gates.h"
#include "ms_loader.h"
#include "ms_ledger.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void gate(ms_replay *r, enum ms_gate id, const ms_gate_facts *f,
                 const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Evaluate gate id over f (its one definition, ms_gates.h) and, when it
 * applies to this run, record it with the detail line fmt. */
static void
gate(ms_replay *r, enum ms_gate id, const ms_gate_facts *f, const char *fmt,
     ...)
{
	ms_ev_gate g;
	if (!ms_gate_eval(id, f, &g))
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(g.detail, sizeof(g.detail), fmt, ap);
	va_end(ap);
	ms_rec_gate(r->rec, &g, NULL);
	pthread_mutex_lock(&r->mu);
	if (r->ngates < sizeof(r->gates) / sizeof(r->gates[0]))
		r->gates[r->ngates++] = g;
	if (!g.pass)
		r->gates_failed++;
	pthread_mutex_unlock(&r->mu);
}

/* A cause in the gate's text: at most this many bytes, "..." when cut,
 * so that a few events fit in MS_EV_TEXT_MAX. */
#define HEALTH_WHY_SHOWN 48

static ms_gate_health_key
health_key(const void *evs, size_t j)
{
	const ms__health_ev *h = (const ms__health_ev *)evs + j;
	return (ms_gate_health_key){ h->link, h->kind, h->why };
}

/* The cause of health event i shortened into why (n bytes), when it is
 * the first of its link and kind to have one
 * (ms_gate_health_first_why). */
static bool
health_first_why(const ms__health_ev *h, size_t i, char *why, size_t n)
{
	if (!ms_gate_health_first_why(h, i, health_key))
		return false;
	ms_plugin_text_clean(why, n, h[i].why, sizeof(h[i].why));
	return true;
}

/* Is health event i the first of its link and kind? */
static bool
health_first_of_kind(const ms__health_ev *h, size_t i)
{
	for (size_t j = 0; j < i; j++)
		if (!strcmp(h[j].link, h[i].link) &&
		    !strcmp(h[j].kind, h[i].kind))
			return false;
	return true;
}

/* plugin_health's detail into d (n bytes): "N events", the events that
 * fit whole (with only_first, only the first of each link and kind),
 * "+M more" for the others, and tail, which always fits: cut mid-list,
 * the detail lost the reason for its verdict. Did every event fit? */
static bool
health_list(const ms_replay *r, char *d, size_t n, const char *tail,
            bool only_first)
{
	size_t k = (size_t)snprintf(d, n, "%llu events",
	                            (unsigned long long)r->health_kinds);
	const size_t more_room = sizeof(", +18446744073709551615 more");
	uint64_t shown = 0;
	for (size_t i = 0; i < r->nhealth; i++) {
		const ms__health_ev *h = &r->health[i];
		if (only_first && !health_first_of_kind(r->health, i))
			continue;
		char item[sizeof(h->link) + sizeof(h->kind) + HEALTH_WHY_SHOWN +
		          64];
		int m = snprintf(item, sizeof(item), "%s #%llu %s %s x%llu",
		                 shown ? "," : ":", (unsigned long long)h->seq,
		                 h->link, h->kind,
		                 (unsigned long long)h->count);
		char why[HEALTH_WHY_SHOWN];
		if (m > 0 && (size_t)m < sizeof(item) &&
		    health_first_why(r->health, i, why, sizeof(why)))
			snprintf(item + m, sizeof(item) - (size_t)m, " (%s)",
			         why);
		size_t len = strlen(item);
		if (k + len + more_room + strlen(tail) >= n)
			break;
		memcpy(d + k, item, len + 1);
		k += len;
		shown++;
	}
	if (shown < r->health_kinds)
		k += (size_t)snprintf(
		        d + k, n - k, "%s +%llu more", shown ? "," : ":",
		        (unsigned long long)(r->health_kinds - shown));
	snprintf(d + k, n - k, "%s", tail);
	return shown == r->health_kinds;
}

/* plugin_health: no link failed open (error, timeout, malformed verdict,
 * open circuit, host error), no merge took a lossless retry or kept
 * oversized traces unevaluated; and the link calls reconcile with the
 * merge events (ms_gate_link_calls_ok: calls, circuit-open skips and one
 * result per Decide call, so that a failure the chain did not count
 * shows). The detail lists the events, each kind of a link's failures
 * with its cause where it first shows. */
static void
gate_plugin_health(ms_replay *r, ms_gate_facts *f)
{
	ms_chain *c;
	size_t n;
	if (!ms__replay_links(r, &c, &n))
		return;
	bool calls_ok = true;
	char cw[128] = "";
	for (size_t i = 0; i < n; i++) {
		ms_link_stats st;
		ms_chain_link_stats(c, i, &st);
		/* Not on record: what stretches a seek removed counted. */
		ms_link_stats gone = r->links_gone[i];
		gone.calls = r->link_calls_superseded[i];
		const ms_gate_link_calls l = {
			.st = &st,
			.gone = &gone,
			.ev_calls = r->link_calls_events[i],
			.ev_circuit = r->link_circuit_events[i],
			.decide = r->plugin_calls_events,
			.discarded = r->attempts_discarded > 0,
		};
		char why[sizeof(cw)];
		if (!ms_gate_link_calls_ok(&l, why, sizeof(why)) && calls_ok) {
			memcpy(cw, why, sizeof(cw));
			calls_ok = false;
		}
	}
	char tail[192];
	snprintf(tail, sizeof(tail), "; %s%s",
	         calls_ok ? "link calls reconcile with the merge events" : cw,
	         r->health_kinds && r->opts.allow_fail_open
	                 ? "; allowed by --allow-fail-open"
	                 : "");
	char d[MS_EV_TEXT_MAX];
	if (!health_list(r, d, sizeof(d), tail, false))
		health_list(r, d, sizeof(d), tail, true);
	f->link_calls_ok = calls_ok;
	f->health_kinds = r->health_kinds;
	f->allow_fail_open = r->opts.allow_fail_open;
	gate(r, MS_GATE_PLUGIN_HEALTH, f, "%s", d);
}

/* ---- the verdict oracle and the reconciliation ----------------------- */

static void
recon_row(ms_replay *r, const char *name, uint64_t p, uint64_t c, uint64_t f,
          uint64_t t, bool ok, const char *note)
{
	ms_ev_recon row;
	memset(&row, 0, sizeof(row));
	snprintf(row.name, sizeof(row.name), "%s", name);
	row.v[MS_EV_RECON_PRIMARY] = p;
	row.v[MS_EV_RECON_COOLDOWN] = c;
	row.v[MS_EV_RECON_FINALIZE] = f;
	row.v[MS_EV_RECON_TOTAL] = t;
	row.ok = ok;
	snprintf(row.note, sizeof(row.note), "%s", note ? note : "");
	ms_rec_recon(r->rec, &row, NULL);
}

static const char *
oracle_spec(const ms_replay *r)
{
	return r->test.oracle_spec ? r->test.oracle_spec
	       : r->pipe           ? ms_pipeline_spec(r->pipe)
	                           : NULL;
}

/* A per-phase figure: the three phases and their sum. */
#define PHASES(field)                                                          \
	r->recon[0].field, r->recon[1].field, r->recon[2].field,               \
	        r->recon[0].field + r->recon[1].field + r->recon[2].field

/*
 * verdict_oracle: the run reconciled with the oracle's verdicts, from the
 * merge events, per phase and exactly:
 *  - in every phase, kept + dropped + deferred = evaluated + the traces
 *    kept because every link failed open on their batch (a merge counts
 *    them kept, each trace it staged having one outcome, but not
 *    evaluated: no link judged them), which is 0 in a phase where no
 *    link failed open; and no more drops proposed than traces evaluated;
 *  - every dropped trace is one the oracle drops (none it keeps, none it
 *    does not know);
 *  - the final output holds the oracle's traces minus the dropped ones;
 *  - at the finalize (every trace complete and mature), the proposed
 *    drops (dropped + deferred, by the guard or because the merge's
 *    drop set was full, counted apart) are exactly the oracle's
 *    drops still present and the kept verdicts exactly the oracle's keeps,
 *    unless traces were kept unevaluated there (oversized, hot, a merge
 *    that did not sample, a link that failed open): then the oracle drops
 *    still present may exceed the proposed drops by at most those.
 * So every oracle drop in the final output was deferred by the guard,
 * kept because its merge's drop set was full, or kept unevaluated for a
 * recorded reason.
 *
 * The steps below write the reconciliation table row by row in the order
 * the report prints it; the first failed check is the gate's detail.
 */

/* The checks of one reconciliation: all passed so far, and the first
 * failure's text. */
typedef struct {
	bool ok;
	char bad[320];
} vo_check;

static void vo_require(vo_check *c, bool cond, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

static void
vo_require(vo_check *c, bool cond, const char *fmt, ...)
{
	if (cond)
		return;
	if (c->ok) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(c->bad, sizeof(c->bad), fmt, ap);
		va_end(ap);
	}
	c->ok = false;
}

/* What the dropped traces were to the oracle, per phase. */
typedef struct {
	uint64_t agree[MS__RP_COUNT]; /* the oracle drops them */
	/* The oracle keeps them, but a link of its chain that failed open
	 * on them did not judge them, one that drops traces in the run. */
	uint64_t unjudged[MS__RP_COUNT];
	uint64_t wrong[MS__RP_COUNT]; /* the oracle keeps them */
	uint64_t unknown;             /* not in the fixture */
	uint64_t total;               /* all dropped traces */
	/* Dropped at the finalize with rows outside the day: complete
	 * there, such a trace is one the boundary guard retains. */
	uint64_t edge;
} vo_drops;

/* The links of the run's chain that dropped a trace (bit i: link i):
 * the ones whose verdict a dropped trace may carry. */
static uint16_t
dropping_links(const ms_replay *r)
{
	ms_chain *c;
	size_t n;
	uint16_t m = 0;
	if (!ms__replay_links(r, &c, &n))
		return 0;
	for (size_t i = 0; i < n && i < 16; i++) {
		ms_link_stats st;
		ms_chain_link_stats(c, i, &st);
		if (st.dropped)
			m |= (uint16_t)(1u << i);
	}
	return m;
}

/* The traces of phase R that a merge kept because every link failed open
 * on their batch: a merge counts them kept (each trace it staged leaves
 * with one outcome) but not evaluated (no link judged them). Only where a
 * link failed open in the phase, else 0. */
static uint64_t
kept_failed_open(const ms__recon *R)
{
	uint64_t kdd = R->kept + R->dropped + R->deferred;
	return R->failed_open && kdd > R->evaluated ? kdd - R->evaluated : 0;
}

/* The merges' own per-phase counts, and kept + dropped + deferred =
 * evaluated + kept unevaluated because every link failed open, in every
 * phase (the latter 0 where no link failed open), no more proposed drops
 * than traces evaluated. */
static void
vo_phase_rows(ms_replay *r, vo_check *chk)
{
	const ms__recon *R = r->recon;
	recon_row(r, "merges", PHASES(merges), true, "");
	recon_row(r, "traces in merges", PHASES(traces_in), true, "");
	recon_row(r, "evaluated", PHASES(evaluated), true, "");
	recon_row(r, "kept by verdict", PHASES(kept), true, "");
	recon_row(r, "dropped", PHASES(dropped), true, "");
	recon_row(r, "deferred", PHASES(deferred), true, "");
	bool full_ok = true;
	for (int p = 0; p < MS__RP_COUNT; p++)
		full_ok &= R[p].drop_set_full <= R[p].deferred;
	recon_row(r, "of which: drop set full", PHASES(drop_set_full),
	          full_ok, "<= deferred; the rest the guard kept");
	vo_require(chk, full_ok,
	           "kept because the drop set was full: more than deferred "
	           "in a phase");
	uint64_t kdd[MS__RP_COUNT], fo[MS__RP_COUNT];
	bool ident = true;
	for (int p = 0; p < MS__RP_COUNT; p++) {
		kdd[p] = R[p].kept + R[p].dropped + R[p].deferred;
		fo[p] = kept_failed_open(&R[p]);
		if (kdd[p] != R[p].evaluated + fo[p] ||
		    R[p].dropped + R[p].deferred > R[p].evaluated) {
			vo_require(chk, false,
			           "phase %d: evaluated %llu + kept failing "
			           "open %llu != kept + dropped + deferred "
			           "%llu",
			           p, (unsigned long long)R[p].evaluated,
			           (unsigned long long)fo[p],
			           (unsigned long long)kdd[p]);
			ident = false;
		}
	}
	recon_row(r, "kept unevaluated: failed open", fo[0], fo[1], fo[2],
	          fo[0] + fo[1] + fo[2], true,
	          "(every link failed open on their batch)");
	recon_row(r, "kept + dropped + deferred", kdd[0], kdd[1], kdd[2],
	          kdd[0] + kdd[1] + kdd[2], ident,
	          "= evaluated + kept failing open");
	recon_row(r, "kept unevaluated: oversized", PHASES(oversized), true,
	          "");
	recon_row(r, "kept unevaluated: hot", PHASES(hot), true,
	          "(grace bypass per trace)");
	recon_row(r, "in merges not sampling", PHASES(not_executed), true,
	          "(grace bypass per merge, lossless retry, no chain)");
	recon_row(r, "  of which lossless retry", PHASES(lossless), true, "");
	/* Each trace of a merge has one of those outcomes: the rows add up
	 * to the traces in merges. */
	uint64_t sum[MS__RP_COUNT];
	bool adds = true;
	for (int p = 0; p < MS__RP_COUNT; p++) {
		sum[p] = R[p].evaluated + fo[p] + R[p].oversized + R[p].hot +
		         R[p].not_executed;
		if (sum[p] != R[p].traces_in) {
			vo_require(chk, false,
			           "phase %d: evaluated + kept failing open + "
			           "kept unevaluated + not sampling %llu != "
			           "traces in merges %llu",
			           p, (unsigned long long)sum[p],
			           (unsigned long long)R[p].traces_in);
			adds = false;
		}
	}
	recon_row(r, "  sum of the outcomes", sum[0], sum[1], sum[2],
	          sum[0] + sum[1] + sum[2], adds, "= traces in merges");
	recon_row(r, "merges with a fail-open link", PHASES(failed_open), true,
	          "");
}

/* The traces evaluated against the links' own counters: a trace is
 * evaluated when at least one link judged it, and each link counts the
 * verdicts of its successful calls (kept + dropped, those on record).
 * So the merges' evaluated traces are at most the links' verdicts summed
 * and, with every trace handed to the chain once (no attempt discarded,
 * no trace handed to Decide twice, no merge that failed after its Decide
 * calls: its event is in no phase's figures), at least the verdicts of
 * any one link: a batch no link judged (every call failed open) counted as
 * evaluated shows. */
static void
vo_judged_rows(ms_replay *r, vo_check *chk)
{
	ms_chain *c;
	size_t n;
	if (!ms__replay_links(r, &c, &n))
		return;
	uint64_t sum = 0, max = 0;
	for (size_t i = 0; i < n; i++) {
		ms_link_stats st;
		ms_chain_link_stats(c, i, &st);
		const ms_link_stats *g = &r->links_gone[i];
		uint64_t v = st.kept + st.dropped - g->kept - g->dropped;
		sum += v;
		max = v > max ? v : max;
	}
	const ms__recon *R = r->recon;
	uint64_t ev = R[0].evaluated + R[1].evaluated + R[2].evaluated;
	bool once = !r->attempts_discarded && !r->decide_dup_traces &&
	            !r->merges_failed;
	bool ok = ev <= sum && (!once || ev >= max);
	recon_row(r, "link verdicts, all links", 0, 0, 0, sum, ev <= sum,
	          ">= evaluated");
	recon_row(r, "link verdicts, most of one link", 0, 0, 0, max,
	          !once || ev >= max,
	          once ? "<= evaluated"
	               : "(not compared: traces handed to Decide again or "
	                 "by a failed merge)");
	vo_require(chk, ok,
	           "%llu traces evaluated, the links judged %llu (the most "
	           "of one link %llu)%s",
	           (unsigned long long)ev, (unsigned long long)sum,
	           (unsigned long long)max,
	           ev > sum ? ": traces no link judged counted as evaluated"
	                    : "");
}

/* Every dropped trace against the oracle. */
static void
vo_drop_rows(ms_replay *r, vo_check *chk, vo_drops *dr)
{
	const ms__oracle *o = &r->oracle;
	const ms__recon *R = r->recon;
	memset(dr, 0, sizeof(*dr));
	char ex[120] = "", edge_ex[160] = "", shown[MS_TRACE_ID_SHOW_MAX];
	uint16_t dropping = o->unjudged ? dropping_links(r) : 0;
	for (size_t i = 0; i < r->dropped.n; i++) {
		const ms__drop_ent *d = &r->dropped.ent[i];
		const ms__oracle_ent *e = ms__oracle_find(o, d->tid, d->len);
		unsigned p = d->phase < MS__RP_COUNT ? d->phase : 0;
		if (e && e->edge && p == MS__RP_FINALIZE && !dr->edge++)
			snprintf(edge_ex, sizeof(edge_ex),
			         "trace %s has rows outside the day and was "
			         "dropped at the finalize (the boundary guard "
			         "retains it)",
			         ms_trace_id_show(shown, d->tid, d->len));
		if (e && !e->keep) {
			dr->agree[p]++;
			continue;
		}
		if (e && (e->failed & dropping)) {
			dr->unjudged[p]++;
			continue;
		}
		if (e)
			dr->wrong[p]++;
		else
			dr->unknown++;
		if (!ex[0])
			snprintf(ex, sizeof(ex), "trace %s %s",
			         ms_trace_id_show(shown, d->tid, d->len),
			         e ? "is kept by the oracle"
			           : "is not in the fixture");
	}
	const uint64_t *agree = dr->agree, *wrong = dr->wrong,
	               *unj = dr->unjudged;
	bool agree_ok = true;
	for (int p = 0; p < MS__RP_COUNT; p++)
		agree_ok = agree_ok && agree[p] + unj[p] == R[p].dropped;
	dr->total = agree[0] + agree[1] + agree[2] + unj[0] + unj[1] + unj[2] +
	            wrong[0] + wrong[1] + wrong[2] + dr->unknown;
	if (o->unjudged) {
		recon_row(r, "dropped the oracle drops", agree[0], agree[1],
		          agree[2], agree[0] + agree[1] + agree[2], agree_ok,
		          "+ the next = dropped");
		recon_row(r, "dropped, oracle could not judge", unj[0], unj[1],
		          unj[2], unj[0] + unj[1] + unj[2], true,
		          "(a link that failed open on them in the oracle)");
	} else {
		recon_row(r, "dropped the oracle drops", agree[0], agree[1],
		          agree[2], agree[0] + agree[1] + agree[2], agree_ok,
		          "= dropped");
	}
	recon_row(r, "dropped the oracle keeps", wrong[0], wrong[1], wrong[2],
	          wrong[0] + wrong[1] + wrong[2],
	          wrong[0] + wrong[1] + wrong[2] == 0, "= 0");
	recon_row(r, "dropped, not in the fixture", 0, 0, 0, dr->unknown,
	          dr->unknown == 0, "= 0");
	recon_row(r, "dropped past the day's edge", 0, 0, dr->edge, dr->edge,
	          dr->edge == 0, "= 0 at the finalize (guard-retained)");
	vo_require(chk, wrong[0] + wrong[1] + wrong[2] + dr->unknown == 0, "%s",
	           ex);
	vo_require(chk, dr->edge == 0, "%s", edge_ex);
	vo_require(chk, agree_ok,
	           "dropped traces the oracle drops or could not judge "
	           "%llu/%llu/%llu, merges report %llu/%llu/%llu",
	           (unsigned long long)(agree[0] + unj[0]),
	           (unsigned long long)(agree[1] + unj[1]),
	           (unsigned long long)(agree[2] + unj[2]),
	           (unsigned long long)R[0].dropped,
	           (unsigned long long)R[1].dropped,
	           (unsigned long long)R[2].dropped);
}

/* The day's traces and what is left of them. */
static void
vo_final_rows(ms_replay *r, vo_check *chk, const vo_drops *dr,
              uint64_t final_traces, bool have_final)
{
	const ms__oracle *o = &r->oracle;
	recon_row(r, "oracle traces", 0, 0, 0, o->n, true, "");
	recon_row(r, "oracle keeps", 0, 0, 0, o->keep, true, "");
	recon_row(r, "oracle drops", 0, 0, 0, o->drop, true, "");
	/* Each part's traces summed: a skipped finalize leaves the day in
	 * several parts, where a trace split among them counts in each (the
	 * ledgers gate checks their rows exactly). */
	bool split = r->finalize_skip[0] != '\0';
	bool fin_ok = have_final && (split ? final_traces + dr->total >= o->n
	                                   : final_traces + dr->total == o->n);
	recon_row(r, "final output traces", 0, 0, 0, final_traces, fin_ok,
	          split ? ">= oracle traces - dropped (per part: the "
	                  "finalize was skipped)"
	                : "= oracle traces - dropped");
	vo_require(chk, fin_ok,
	           "final output %llu traces, oracle %llu minus %llu dropped",
	           (unsigned long long)final_traces, (unsigned long long)o->n,
	           (unsigned long long)dr->total);
}

/* The finalize: every trace complete and mature. */
static void
vo_finalize_rows(ms_replay *r, vo_check *chk, const vo_drops *dr)
{
	const ms__oracle *o = &r->oracle;
	const ms__recon *F = &r->recon[MS__RP_FINALIZE];
	uint64_t before = dr->agree[0] + dr->agree[1];
	uint64_t present = o->drop > before ? o->drop - before : 0;
	/* Traces the oracle could not judge, still present: the finalize
	 * may propose them or not. */
	uint64_t ubefore = dr->unjudged[0] + dr->unjudged[1];
	uint64_t upresent = o->unjudged > ubefore ? o->unjudged - ubefore : 0;
	uint64_t proposed = F->dropped + F->deferred;
	/* Where a link failed open, every trace it was to judge may be a
	 * drop it did not make: those evaluated by the other links and
	 * those no link judged (fo, a merge that failed open on every call
	 * included; each trace counts in one of these rows only). */
	uint64_t fo = kept_failed_open(F);
	uint64_t unevaluated = F->oversized + F->hot + F->not_executed +
	                       (F->failed_open ? F->evaluated + fo : 0);
	bool clean = F->merges > 0 && F->executed == F->merges &&
	             !F->oversized && !F->hot && !F->failed_open &&
	             !o->unjudged;
	bool prop_ok, kept_ok;
	if (!r->pipe) {
		prop_ok = kept_ok = o->drop == 0 && dr->total == 0;
	} else if (clean) {
		prop_ok = proposed == present;
		kept_ok = F->kept == o->keep;
	} else {
		prop_ok = proposed <= present + upresent &&
		          (present > proposed ? present - proposed : 0) <=
		                  unevaluated;
		kept_ok = true;
	}
	recon_row(r, "finalize: proposed drops", 0, 0, proposed, present,
	          prop_ok,
	          clean      ? "dropped + deferred = oracle drops present"
	          : upresent ? "oracle drops present - proposed <= kept "
	                       "unevaluated; proposed <= present + not judged"
	                     : "oracle drops present - proposed <= kept "
	                       "unevaluated");
	recon_row(r, "finalize: kept by verdict", 0, 0, F->kept, o->keep,
	          kept_ok,
	          clean ? "= oracle keeps"
	                : "not checked: traces kept "
	                  "unevaluated at the finalize");
	vo_require(chk, prop_ok,
	           "finalize proposed %llu drops, %llu oracle drops present "
	           "(and %llu it could not judge), %llu kept unevaluated",
	           (unsigned long long)proposed, (unsigned long long)present,
	           (unsigned long long)upresent,
	           (unsigned long long)unevaluated);
	vo_require(chk, kept_ok,
	           "finalize kept %llu by verdict, oracle keeps %llu",
	           (unsigned long long)F->kept, (unsigned long long)o->keep);
	if (r->finalize_skip[0])
		recon_row(r, "finalize skipped", 0, 0, 1, 1, true,
		          r->finalize_skip);
	uint64_t agreed = dr->agree[0] + dr->agree[1] + dr->agree[2];
	uint64_t retained = o->drop > agreed ? o->drop - agreed : 0;
	recon_row(r, "oracle drops in the final output", 0, 0, F->deferred,
	          retained, !clean || retained == F->deferred,
	          "deferred at the finalize, or kept unevaluated there");
}

/* What the oracle cost, in whole milliseconds rounded to the nearest
 * (half up): its wall and CPU time, and how long the day and the gates
 * waited for it. One rounding for the reconciliation rows and the gate's
 * text, which printed "oracle cpu ms 108" beside "109 ms cpu". */
typedef struct vo_cost {
	uint64_t wall_ms, cpu_ms, day_wait_ms, gates_wait_ms;
} vo_cost;

static uint64_t
ms_nearest(int64_t ns)
{
	if (ns <= 0)
		return 0;
	return ((uint64_t)ns + 500000u) / 1000000u;
}

static vo_cost
vo_cost_of(const ms_replay *r)
{
	const ms__oracle *o = &r->oracle;
	int64_t t = r->test.oracle_figures_ns;
	vo_cost c = { ms_nearest(t ? t : o->ns), ms_nearest(t ? t : o->cpu_ns),
		      ms_nearest(t ? t : r->oracle_prewait_ns),
		      ms_nearest(t ? t : r->oracle_wait_ns) };
	return c;
}

/* The fixture's own record of the default sampler's verdicts, and what
 * the oracle cost. */
static void
vo_checksum_rows(ms_replay *r, vo_check *chk, const char *spec)
{
	const ms__oracle *o = &r->oracle;
	bool sky = spec && !strcmp(spec, "skywalking") &&
	           r->info->verdict_checksum && r->info->verdict_checksum[0];
	if (sky) {
		bool eq = !strcmp(o->checksum, r->info->verdict_checksum);
		char note[80];
		snprintf(note, sizeof(note), "= 1 (fixture %s, oracle %s)",
		         r->info->verdict_checksum, o->checksum);
		recon_row(r, "verdicts = fixture's (checksum)", 0, 0, 0, eq, eq,
		          note);
		vo_require(chk, eq, "oracle verdict checksum %s, fixture %s",
		           o->checksum, r->info->verdict_checksum);
	}
	vo_cost c = vo_cost_of(r);
	recon_row(r, "oracle wall ms", 0, 0, 0, c.wall_ms, true,
	          "(on its own thread, beside the staging)");
	recon_row(r, "oracle cpu ms", 0, 0, 0, c.cpu_ms, true, "");
	recon_row(r, "day waited for it ms", 0, 0, 0, c.day_wait_ms, true,
	          "(before the primary phase's clock)");
	recon_row(r, "gates waited for it ms", 0, 0, 0, c.gates_wait_ms, true,
	          "");
}

/* The oracle's plugins are the run's: each link's file, as the oracle
 * loaded it, has the checksum the run's had when the run loaded it (the
 * oracle opens the files again, by path, after the run did; a file
 * rewritten in between would have the run judged by another plugin).
 * Not when a test gave the oracle a chain of its own. First, so that a
 * mismatch it explains is named as this. */
static void
vo_plugins(ms_replay *r, vo_check *chk)
{
	const ms__oracle *o = &r->oracle;
	ms_chain *c;
	size_t n;

	if (r->test.oracle_spec || !ms__replay_links(r, &c, &n))
		return;
	for (size_t i = 0; i < n && i < o->nlinks; i++) {
		const ms_plugin *p = ms_chain_plugin(c, i);

		vo_require(chk, !strcmp(o->link_checksum[i],
		                        ms_plugin_checksum(p)),
		           "the oracle's link %zu plugin has checksum %s, the "
		           "run's %s: %s changed after the run loaded it, and "
		           "the oracle judged with another plugin",
		           i + 1, o->link_checksum[i], ms_plugin_checksum(p),
		           ms_plugin_path(p));
	}
	vo_require(chk, o->nlinks == n,
	           "the oracle's chain has %zu links, the run's %zu",
	           o->nlinks, n);
}

static void
gate_verdict_oracle(ms_replay *r, ms_gate_facts *f, uint64_t final_traces,
                    bool have_final)
{
	ms__oracle *o = &r->oracle;
	const char *spec = oracle_spec(r);
	if (!o->ok) {
		f->oracle_ok = false;
		gate(r, MS_GATE_VERDICT_ORACLE, f, "oracle failed: %s", o->why);
		return;
	}
	vo_check chk = { .ok = true, .bad = "" };
	vo_drops dr;
	vo_plugins(r, &chk);
	vo_phase_rows(r, &chk);
	vo_judged_rows(r, &chk);
	vo_drop_rows(r, &chk, &dr);
	vo_final_rows(r, &chk, &dr, final_traces, have_final);
	vo_finalize_rows(r, &chk, &dr);
	vo_checksum_rows(r, &chk, spec);
	double w = r->oracle_wall > 0 ? (double)r->oracle_wall : 1.0;
	char unj[160] = "";
	if (o->unjudged)
		snprintf(unj, sizeof(unj),
		         "; its chain failed open, and could not judge %llu "
		         "traces (the run dropped %llu of them)",
		         (unsigned long long)o->unjudged,
		         (unsigned long long)(dr.unjudged[0] + dr.unjudged[1] +
		                              dr.unjudged[2]));
	else if (o->link_failures)
		snprintf(unj, sizeof(unj), "; its chain failed open");
	char skip[sizeof(r->finalize_skip) + 24] = "";
	if (r->finalize_skip[0])
		snprintf(skip, sizeof(skip), "; finalize skipped: %s",
		         r->finalize_skip);
	f->oracle_ok = chk.ok;
	vo_cost c = vo_cost_of(r);
	/* What it judged before what it cost: the text is cut at
	 * MS_EV_TEXT_MAX. Its CPU's share is of the wall until the gates,
	 * not of the run's (the status line's and the report's, later). */
	gate(r, MS_GATE_VERDICT_ORACLE, f,
	     "%s; oracle %zu traces, %llu keep, %llu drop (%s)%s%s: %llu ms "
	     "wall, %llu ms cpu = %.1f%% of the %.2f s before the gates, the "
	     "day waited %llu ms and the gates %llu ms",
	     chk.ok ? "run reconciles exactly" : chk.bad, o->n,
	     (unsigned long long)o->keep, (unsigned long long)o->drop,
	     spec ? spec : "no chain", unj, skip,
	     (unsigned long long)c.wall_ms, (unsigned long long)c.cpu_ms,
	     100.0 * (double)o->cpu_ns / w, w / 1e9,
	     (unsigned long long)c.day_wait_ms,
	     (unsigned long long)c.gates_wait_ms);
}

/* Wait for the checker and the verdict oracle (they ran beside the
 * replay) and find the dropped rows' ledger, which the ledgers gate
 * uses. */
static void
join_oracle(ms_replay *r)
{
	int64_t w0 = ms__replay_since_start(r);
	ms__checker_drain(r);
	r->check_wait_ns = ms__replay_since_start(r) - w0;
	w0 = ms__replay_since_start(r);
	int orc = ms__oracle_join(r);
	r->oracle_wall = ms__replay_since_start(r);
	r->oracle_wait_ns = r->oracle_wall - w0;
	if (orc == 0 && r->oracle.ok)
		orc = ms__oracle_dropped(&r->oracle, &r->dropped, r->blocks);
	if (orc && !r->oracle.why[0])
		snprintf(r->oracle.why, sizeof(r->oracle.why), "%s",
		         ms_strerror(orc));
}

/* ledgers: lossless runs end with the fixture's ledgers; dropping runs
 * with input minus the dropped rows' ledgers (from the independent oracle
 * over the dropped trace IDs). */
static void
gate_ledgers(ms_replay *r, ms_gate_facts *f, const ms_view *v)
{
	ms_ledger_set fin, want = r->info->ledgers, dropped;
	ms_errbuf leb = { { 0 } };
	char owhy[200] = "";
	int rc = ms_ledger_of_view(v, &fin, NULL, &leb);
	if (rc == 0 && r->drop_err)
		rc = ms_fail(&leb, MS_ERR_NOMEM,
		             "a dropped trace could not "
		             "be recorded");
	if (rc == 0 && !r->oracle.ok) {
		rc = MS_ERR_STATE;
		ms_fail(&leb, rc, "oracle: %s", r->oracle.why);
	}
	if (rc == 0) {
		dropped = r->oracle.dropped_led;
		rc = ms__drop_check(&r->dropped, r->oracle.drop_found, owhy,
		                    sizeof(owhy));
		if (rc)
			ms_fail(&leb, rc, "drop oracle: %s", owhy);
	}
	if (rc == 0 && r->dropped.n)
		rc = ms_ledger_set_sub(&want, &dropped);
	if (rc) {
		f->ledgers_known = false;
		gate(r, MS_GATE_LEDGERS, f, "cannot reconcile: %s",
		     leb.msg[0] ? leb.msg : ms_strerror(rc));
	} else {
		r->expected = want;
		r->has_expected = true;
		f->ledgers_known = true;
		f->ledgers_equal = ms_ledger_set_equal(&fin, &want);
		char d[MS_EV_TEXT_MAX];
		ms_gate_ledgers_detail(&fin, &want, r->dropped.n,
		                       dropped.kind[0].rows, d, sizeof(d));
		gate(r, MS_GATE_LEDGERS, f, "%s", d);
	}
}

/* lifecycle: every input removed and every output introduced exactly
 * once, core and both index parts alike, and the inventory v is what
 * those events leave. */
static void
gate_lifecycle(ms_replay *r, ms_gate_facts *f, const ms_view *v)
{
	size_t nparts = ms_view_count(v);
	size_t live[MS_KIND_COUNT] = { 0 }, present[MS_KIND_COUNT] = { 0 };
	size_t missing = 0;
	for (size_t i = 0; i < r->track_n; i++)
		for (int k = 0; k < MS_KIND_COUNT; k++)
			if (r->track[i].introduced[k] > r->track[i].removed[k])
				live[k]++;
	for (size_t i = 0; i < nparts; i++) {
		uint64_t id = ms_view_id(v, i);
		const track_ent *t = NULL;
		for (size_t h = 0; h < r->track_n && !t; h++)
			if (r->track[h].id == id)
				t = &r->track[h];
		for (int k = 0; k < MS_KIND_COUNT; k++) {
			if (!ms_view_part(v, i, (enum ms_part_kind)k))
				continue;
			present[k]++;
			if (!t || t->introduced[k] != 1 || t->removed[k] != 0)
				missing++;
		}
	}
	bool live_ok = true;
	for (int k = 0; k < MS_KIND_COUNT; k++)
		live_ok = live_ok && live[k] == present[k];
	f->lifecycle_known = true;
	f->lifecycle_twice = r->track_dup;
	f->unexplained = missing + !live_ok;
	gate(r, MS_GATE_LIFECYCLE, f,
	     "%s; active parts core/latency/start_time %zu/%zu/%zu, "
	     "expected from events %zu/%zu/%zu, %zu unexplained",
	     r->track_dup ? r->track_err
	                  : "no part introduced or removed twice",
	     present[0], present[1], present[2], live[0], live[1], live[2],
	     missing);
}

/* The gates the controller tallied merge by merge: one_block_per_trace,
 * part_ledgers, no_decide_when_hot, one_decide_per_trace,
 * plugin_bounds. */
static void
gate_tallies(ms_replay *r, ms_gate_facts *f)
{
	/* Every part that entered the shard, checked as it entered (core
	 * blocks one per trace in order, rows, both index parts). */
	ms__blkcache_figs bf;
	ms__blkcache_figures(r->blocks, &bf);
	/* Lookups the fixture's block ledger file could not answer (a
	 * group changed or unreadable since the open: those blocks were
	 * decoded) are said first, and only then: the detail is near its
	 * MS_EV_TEXT_MAX, and that the file changed under the run matters
	 * more than its tail. */
	char changed[80] = "";
	if (bf.file_refused)
		snprintf(changed, sizeof(changed),
		         "block ledger file changed: %llu lookups unanswered; ",
		         (unsigned long long)bf.file_refused);
	f->parts_introduced = r->parts_introduced;
	f->parts_in = r->parts_in;
	f->parts_checked = r->check_submitted;
	f->parts_ok = r->parts_ok;
	/* Parts introduced but never handed to the checker (or handed
	 * without taking effect) are said before the first failure. */
	char unsub[96] = "";
	if (f->parts_checked != f->parts_introduced)
		snprintf(unsub, sizeof(unsub),
		         "%llu parts introduced, %llu handed to the checker; ",
		         (unsigned long long)f->parts_introduced,
		         (unsigned long long)f->parts_checked);
	/* The first part that failed, and why, come before the figures:
	 * the detail is cut at MS_EV_TEXT_MAX, and a path in the cause
	 * would otherwise push the cause itself past it. */
	gate(r, MS_GATE_ONE_BLOCK_PER_TRACE, f,
	     "%s%s%s%s%s%llu of %llu parts checked as introduced (core and "
	     "both indexes: one block per trace, order, index ledgers); "
	     "checker %.0f ms, waited %.0f+%.0f ms (cooldown+gates), "
	     "%llu publications read agreeing with their fixture's record, "
	     "%llu of %llu blocks decoded",
	     changed, unsub, r->part_err,
	     r->part_err[0] && r->parts_gone ? " (left before it was read)"
	                                     : "",
	     r->part_err[0] ? "; " : "", (unsigned long long)r->parts_ok,
	     (unsigned long long)r->parts_introduced,
	     (double)atomic_load(&r->check_ns) / 1e6,
	     (double)r->check_prewait_ns / 1e6, (double)r->check_wait_ns / 1e6,
	     (unsigned long long)r->check_by_hash,
	     (unsigned long long)bf.misses,
	     (unsigned long long)(bf.hits + bf.misses));
	/* Each merge's output ledgers are its inputs' minus what it
	 * dropped. */
	f->merges_done = r->merges_done;
	f->merges_failed = r->merges_failed;
	f->merges_reconciled = r->merges_reconciled;
	f->merges_unreconciled = r->merges_unreconciled;
	/* A merge whose output or an input failed its part check is
	 * neither reconciled nor not: say so, or the gate fails unexplained
	 * when no merge's ledgers disagreed. */
	uint64_t unchecked =
	        r->merges_done - r->merges_reconciled - r->merges_unreconciled;
	char skipped[120] = "";
	if (r->merges_reconciled + r->merges_unreconciled < r->merges_done)
		snprintf(skipped, sizeof(skipped),
		         "; %llu not reconciled: their output or an input "
		         "failed its part check (one_block_per_trace)",
		         (unsigned long long)unchecked);
	gate(r, MS_GATE_PART_LEDGERS, f,
	     "%llu of %llu merges: output = inputs - dropped rows, per "
	     "kind%s%s%s",
	     (unsigned long long)r->merges_reconciled,
	     (unsigned long long)r->merges_done, r->merge_err[0] ? "; " : "",
	     r->merge_err, skipped);

	/* No Decide for a hot selection under the selection policy, and
	 * under either policy no trace whose rows start past its merge's
	 * frontier handed to Decide (each merge checks every trace it hands
	 * to the chain against its rows' decoded start times). */
	f->hot_decides = r->hot_decides;
	f->hot_decided = r->hot_decided;
	char hd[MS_EV_TEXT_MAX];
	ms_gate_hot_detail(f, r->decide_traces, hd, sizeof(hd));
	gate(r, MS_GATE_NO_DECIDE_WHEN_HOT, f, "%s", hd);

	/* One Decide entry per trace per merge, and the bounds a plugin
	 * sees equal those rebuilt from the trace's fragments (each merge
	 * checks every trace it hands to the chain). */
	f->decide_dup_traces = r->decide_dup_traces;
	f->bounds_mismatch = r->bounds_mismatch;
	gate(r, MS_GATE_ONE_DECIDE_PER_TRACE, f,
	     "%llu traces handed to Decide twice in one merge, of %llu "
	     "evaluated",
	     (unsigned long long)r->decide_dup_traces,
	     (unsigned long long)r->decide_traces);
	gate(r, MS_GATE_PLUGIN_BOUNDS, f,
	     "%llu traces with MinTS/MaxTS other than their fragments' "
	     "bounds, of %llu evaluated",
	     (unsigned long long)r->bounds_mismatch,
	     (unsigned long long)r->decide_traces);
}

/* event_count: the merge rows read back from the database, against the
 * merge events the controller received and the engine's own counts of
 * merges done and failed (three sources, none counting for another). */
static void
gate_event_count(ms_replay *r, ms_gate_facts *f, const ms_engine_stats *es)
{
	uint64_t rows = 0;
	ms_errbuf eb = { { 0 } };
	char why[MS_EV_TEXT_MAX] = "";
	if (ms_rec_merge_rows(r->rec, &rows, &eb) < 0)
		snprintf(why, sizeof(why), "; rows not counted: %s", eb.msg);
	f->merge_events = rows;
	f->engine_merges_done = es->merges_done;
	f->engine_merges_failed = es->merges_failed;
	gate(r, MS_GATE_EVENT_COUNT, f,
	     "%llu merge rows in the database for %llu merge events "
	     "received (%llu completed, %llu failed); the engine counts "
	     "%llu completed, %llu failed%s",
	     (unsigned long long)rows,
	     (unsigned long long)(f->merges_done + f->merges_failed),
	     (unsigned long long)f->merges_done,
	     (unsigned long long)f->merges_failed,
	     (unsigned long long)es->merges_done,
	     (unsigned long long)es->merges_failed, why);
}

/* idle_no_leaks and event_count: the engine and the event log at the
 * end. */
static void
gate_idle_events(ms_replay *r, ms_gate_facts *f)
{
	/* Idle with nothing leaked. */
	ms_engine_stats es;
	ms_engine_get_stats(r->engine, &es);
	char tmp[PATH_MAX];
	snprintf(tmp, sizeof(tmp), "%s/tmp", r->work_dir);
	size_t leftovers = ms_fs_count_entries(tmp);
	bool idle = ms_engine_is_idle(r->engine) && es.queued == 0 &&
	            es.running == 0 && es.held == 0 && es.claimed_parts == 0 &&
	            es.pending_hook == 0;
	f->engine_idle = idle;
	f->tmp_leftovers = leftovers;
	f->quarantined = es.quarantined;
	/* Nothing in parts/ but the active parts' files. A removed part is
	 * deleted when its last view goes (the reaper's deletions are
	 * waited for): a view another thread holds for a moment (the TUI's
	 * snapshot) is waited out, up to about a second. */
	size_t strays = 0;
	char stray[256] = "", serr[MS_EV_TEXT_MAX] = "";
	for (int tries = 0; tries < 50; tries++) {
		ms_errbuf seb = { { 0 } };
		ms_shard_settle(r->shard);
		if (ms_shard_strays(r->shard, &strays, stray, sizeof(stray),
		                    &seb)) {
			snprintf(serr, sizeof(serr), "; %s", seb.msg);
			strays = 1;
			break;
		}
		if (!strays)
			break;
		struct timespec ts = { 0, 20 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	f->parts_strays = strays;
	char strays_txt[sizeof(stray) + sizeof(serr) + 64];
	if (serr[0])
		snprintf(strays_txt, sizeof(strays_txt), "parts/ unchecked%s",
		         serr);
	else
		snprintf(strays_txt, sizeof(strays_txt),
		         "%zu stray in parts/%s%s%s", strays,
		         strays ? " (" : "", stray, strays ? ")" : "");
	/* A failed merge the engine made again is no data lost, but the
	 * run was not clean: the gate says why the last one failed. */
	char last[sizeof(r->last_failure)] = "";
	pthread_mutex_lock(&r->mu);
	uint64_t failed = r->merges_failed;
	if (failed)
		snprintf(last, sizeof(last), "%s", r->last_failure);
	pthread_mutex_unlock(&r->mu);
	char d[MS_EV_TEXT_MAX];
	ms_gate_idle_detail(f, es.claimed_parts, strays_txt, failed, last, d,
	                    sizeof(d));
	gate(r, MS_GATE_IDLE_NO_LEAKS, f, "%s", d);
	gate_event_count(r, f, &es);
}

/* Publications: the parts that were in the inventory right after their
 * introduction (pub_in), not the slots the day went past (pub_done); the
 * detail says how many of those did not take effect. */
static void
gate_publications(ms_replay *r, ms_gate_facts *f)
{
	char lost[160] = "";
	if (r->pub_done > r->pub_in)
		snprintf(lost, sizeof(lost),
		         "; %llu publications not in the inventory after "
		         "their introduction (the first: slot %llu, part "
		         "%016llx)",
		         (unsigned long long)(r->pub_done - r->pub_in),
		         (unsigned long long)r->pub_lost_slot,
		         (unsigned long long)r->pub_lost_id);
	gate(r, MS_GATE_PUBLICATIONS, f,
	     "%llu of %llu scheduled parts published%s",
	     (unsigned long long)f->published,
	     (unsigned long long)f->slots, lost);
}

int
ms__replay_gates(ms_replay *r, ms_errbuf *eb)
{
	size_t nslots = ms_fixture_nslots(r->fx);
	join_oracle(r);
	ms_gate_facts f = {
		.policy = r->policy,
		.pipeline = r->pipe != NULL,
		.chain =
		        r->pipe && ms_chain_len(ms_pipeline_chain(r->pipe)) > 0,
		.ended = true,
		.slots = nslots,
		.published = r->pub_in,
	};
	gate_publications(r, &f);

	ms_view *v = NULL;
	int rc = ms_shard_view(r->shard, &v, eb);
	if (rc)
		return rc;
	uint64_t final_traces = 0;
	for (size_t i = 0; i < ms_view_count(v); i++)
		final_traces +=
		        ms_part_get_meta(ms_view_part(v, i, MS_KIND_CORE))
		                ->traces;
	gate_ledgers(r, &f, v);
	gate_lifecycle(r, &f, v);
	ms_view_release(v);
	gate_tallies(r, &f);
	gate_plugin_health(r, &f);
	gate_verdict_oracle(r, &f, final_traces, true);

	/* Sampling exercised: a chain that never evaluated anything did not
	 * test what it was configured for; allowed to fail open, a merge
	 * that reached Decide with every call failing open did (the failure
	 * is plugin_health's WARN). */
	f.allow_fail_open = r->opts.allow_fail_open;
	f.executed_merges = r->executed_merges;
	f.open_merges = r->recon[0].open_merges + r->recon[1].open_merges +
	                r->recon[2].open_merges;
	gate(r, MS_GATE_SAMPLING_EXERCISED, &f,
	     "%llu merge%s executed sampling, %llu reached Decide and failed "
	     "open on every call%s%s",
	     (unsigned long long)r->executed_merges,
	     r->executed_merges == 1 ? "" : "s",
	     (unsigned long long)f.open_merges,
	     r->finalize_skip[0] ? "; finalize skipped: " : "",
	     r->finalize_skip);
	gate_idle_events(r, &f);
	return 0;
}
