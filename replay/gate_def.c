/*
 * gate_def.c - the one definition of each end-of-run gate (ms_gates.h):
 * name, expectation and predicate, shared by the run (gates.c), the
 * reports (report.c) and the tests.
 */
#include "ms_gates.h"
#include "ms_part.h"

#include <stdio.h>
#include <string.h>

static bool
has_chain(const ms_gate_facts *f)
{
	return f->chain;
}

static bool
has_pipeline(const ms_gate_facts *f)
{
	return f->pipeline;
}

static bool
publications(const ms_gate_facts *f)
{
	return f->published == f->slots;
}

static bool
ledgers(const ms_gate_facts *f)
{
	return f->ledgers_known && f->ledgers_equal;
}

static bool
lifecycle(const ms_gate_facts *f)
{
	return f->lifecycle_known && !f->lifecycle_twice && !f->unexplained;
}

static bool
one_block_per_trace(const ms_gate_facts *f)
{
	/* Every part introduced handed to the checker, every check
	 * finished, every one passed. */
	return f->parts_checked == f->parts_introduced &&
	       f->parts_in == f->parts_checked && f->parts_ok == f->parts_in;
}

static bool
part_ledgers(const ms_gate_facts *f)
{
	return f->merges_unreconciled == 0 &&
	       f->merges_reconciled + f->merges_unreconciled == f->merges_done;
}

static bool
no_decide_when_hot(const ms_gate_facts *f)
{
	return f->hot_decides == 0 && f->hot_decided == 0;
}

static bool
one_decide_per_trace(const ms_gate_facts *f)
{
	return f->decide_dup_traces == 0;
}

static bool
plugin_bounds(const ms_gate_facts *f)
{
	return f->bounds_mismatch == 0;
}

static bool
plugin_health(const ms_gate_facts *f)
{
	return f->link_calls_ok && (f->health_kinds == 0 || f->allow_fail_open);
}

static bool
plugin_health_warn(const ms_gate_facts *f)
{
	return f->link_calls_ok && f->health_kinds != 0;
}

static bool
verdict_oracle(const ms_gate_facts *f)
{
	return f->oracle_ok;
}

static bool
sampling_exercised(const ms_gate_facts *f)
{
	return f->executed_merges > 0 ||
	       (f->allow_fail_open && f->open_merges > 0);
}

static bool
idle_no_leaks(const ms_gate_facts *f)
{
	return f->engine_idle && f->tmp_leftovers == 0 &&
	       f->parts_strays == 0 && f->quarantined == 0 &&
	       f->merges_failed == 0;
}

static bool
event_count(const ms_gate_facts *f)
{
	if (f->events_from_rows)
		return f->ended && f->engine_merges_done == f->merges_done;
	return f->ended &&
	       f->merge_events == f->merges_done + f->merges_failed &&
	       f->engine_merges_done == f->merges_done &&
	       f->engine_merges_failed == f->merges_failed;
}

static bool
one_classification(const ms_gate_facts *f)
{
	return f->bad_class == 0;
}

static const ms_gate_def defs[MS_GATE_COUNT] = {
	[MS_GATE_PUBLICATIONS] = { "publications",
	                           "every scheduled part published", true,
	                           false, NULL, publications, NULL },
	[MS_GATE_LEDGERS] = { "ledgers",
	                      "final ledgers = the fixture's minus the "
	                      "dropped traces' rows",
	                      true, true, NULL, ledgers, NULL },
	[MS_GATE_LIFECYCLE] = { "lifecycle",
	                        "every input removed and every output "
	                        "introduced exactly once",
	                        true, true, NULL, lifecycle, NULL },
	[MS_GATE_ONE_BLOCK_PER_TRACE] = { "one_block_per_trace",
	                                  "every part checked as it entered: "
	                                  "one block per trace, in order",
	                                  true, false, NULL,
	                                  one_block_per_trace, NULL },
	[MS_GATE_PART_LEDGERS] = { "part_ledgers",
	                           "each merge's output = its inputs minus "
	                           "its dropped rows",
	                           true, false, NULL, part_ledgers, NULL },
	[MS_GATE_NO_DECIDE_WHEN_HOT] = { "no_decide_when_hot",
	                                 "no Decide for a hot selection "
	                                 "(selection policy) nor for a trace "
	                                 "whose rows start past the frontier",
	                                 true, true, NULL, no_decide_when_hot,
	                                 NULL },
	[MS_GATE_ONE_DECIDE_PER_TRACE] = { "one_decide_per_trace",
	                                   "each trace handed to Decide once "
	                                   "per merge",
	                                   true, false, NULL,
	                                   one_decide_per_trace, NULL },
	[MS_GATE_PLUGIN_BOUNDS] = { "plugin_bounds",
	                            "MinTS/MaxTS as rebuilt from the "
	                            "fragments",
	                            true, false, NULL, plugin_bounds, NULL },
	[MS_GATE_PLUGIN_HEALTH] = { "plugin_health",
	                            "no link failed open (unless "
	                            "--allow-fail-open); link calls reconcile",
	                            true, false, has_pipeline, plugin_health,
	                            plugin_health_warn },
	[MS_GATE_VERDICT_ORACLE] = { "verdict_oracle",
	                             "the run reconciles exactly with an "
	                             "independent oracle",
	                             true, false, NULL, verdict_oracle, NULL },
	[MS_GATE_SAMPLING_EXERCISED] = { "sampling_exercised",
	                                 "a configured chain evaluated "
	                                 "something (or, allowed to fail "
	                                 "open, was called)",
	                                 true, false, has_chain,
	                                 sampling_exercised, NULL },
	[MS_GATE_IDLE_NO_LEAKS] = { "idle_no_leaks",
	                            "engine idle; nothing claimed, left in "
	                            "tmp/ or parts/, quarantined or failed",
	                            true, false, NULL, idle_no_leaks, NULL },
	[MS_GATE_EVENT_COUNT] = { "event_count",
	                          "one merge row per merge event; the engine "
	                          "counts the same", true,
	                          true, NULL, event_count, NULL },
	[MS_GATE_ONE_CLASSIFICATION] = { "one_classification",
	                                 "every merge has exactly one "
	                                 "classification, a reason iff not "
	                                 "executed",
	                                 false, true, NULL, one_classification,
	                                 NULL },
};

const ms_gate_def *
ms_gate_def_of(enum ms_gate g)
{
	return (unsigned)g < MS_GATE_COUNT ? &defs[g] : NULL;
}

int
ms_gate_parse(const char *name)
{
	for (int g = 0; name && g < MS_GATE_COUNT; g++)
		if (strcmp(defs[g].name, name) == 0)
			return g;
	return -1;
}

bool
ms_gate_eval(enum ms_gate g, const ms_gate_facts *f, ms_ev_gate *out)
{
	const ms_gate_def *d = ms_gate_def_of(g);
	if (!d || (d->applies && !d->applies(f)))
		return false;
	memset(out, 0, sizeof(*out));
	snprintf(out->name, sizeof(out->name), "%s", d->name);
	out->pass = d->pass(f);
	out->warn = out->pass && d->warn && d->warn(f);
	return true;
}

void
ms_gate_hot_detail(const ms_gate_facts *f, uint64_t evaluated, char *d,
                   size_t n)
{
	char sel[64] = "";
	if (f->policy == MS_GRACE_SELECTION)
		snprintf(sel, sizeof(sel),
		         "%llu hot selections called Decide; ",
		         (unsigned long long)f->hot_decides);
	snprintf(d, n,
	         "%s%llu of %llu traces evaluated started past the "
	         "frontier",
	         sel, (unsigned long long)f->hot_decided,
	         (unsigned long long)evaluated);
}

void
ms_gate_ledgers_detail(const ms_ledger_set *fin, const ms_ledger_set *want,
                       size_t dropped_traces, uint64_t dropped_rows, char *d,
                       size_t n)
{
	char a[MS_LEDGER_STR_MAX], b[MS_LEDGER_STR_MAX];
	ms_ledger_format(&fin->kind[MS_KIND_CORE], a);
	ms_ledger_format(&want->kind[MS_KIND_CORE], b);
	/* The core ledgers in full; an index that differs by its rows (its
	 * sums would not fit the event's text beside the core's). */
	char idx[160] = "";
	size_t used = 0;
	for (int k = MS_KIND_CORE + 1; k < MS_KIND_COUNT; k++) {
		const ms_ledger *got = &fin->kind[k], *exp = &want->kind[k];
		if (ms_ledger_equal(got, exp) || used >= sizeof(idx))
			continue;
		int w = snprintf(
		        idx + used, sizeof(idx) - used,
		        "%s%s index DIFFERS (%llu rows, expected %llu%s)",
		        used ? ", " : "",
		        ms_part_kind_name((enum ms_part_kind)k),
		        (unsigned long long)got->rows,
		        (unsigned long long)exp->rows,
		        got->rows == exp->rows ? ", other sums" : "");
		used += w > 0 ? (size_t)w : 0;
	}
	snprintf(d, n,
	         "core %s %s input minus oracle %s; %s; %zu traces (%llu rows) "
	         "dropped",
	         a,
	         ms_ledger_equal(&fin->kind[MS_KIND_CORE],
	                         &want->kind[MS_KIND_CORE])
	                 ? "="
	                 : "!=",
	         b, idx[0] ? idx : "indexes equal", dropped_traces,
	         (unsigned long long)dropped_rows);
}

bool
ms_gate_merge_hot_decide(const ms_ev_merge *m)
{
	return m->hot_parts > 0 && (m->sampling.plugin_calls > 0 ||
	                            m->sampling.traces_evaluated > 0);
}

bool
ms_gate_health_first_why(const void *evs, size_t i,
                         ms_gate_health_key (*key)(const void *evs, size_t j))
{
	ms_gate_health_key e = key(evs, i);
	if (!e.why[0])
		return false;
	for (size_t j = 0; j < i; j++) {
		ms_gate_health_key o = key(evs, j);
		if (o.why[0] && !strcmp(o.link, e.link) &&
		    !strcmp(o.kind, e.kind))
			return false;
	}
	return true;
}

bool
ms_gate_merge_bad_class(const ms_ev_merge *m)
{
	const ms_merge_sampling *s = &m->sampling;
	bool executed = s->klass == MS_SAMPLING_EXECUTED;
	return (unsigned)s->klass >= MS_SAMPLING_CLASS_COUNT ||
	       executed != (s->reason == MS_SREASON_NONE);
}

void
ms_gate_idle_detail(const ms_gate_facts *f, size_t claimed,
                    const char *strays_txt, uint64_t failed, const char *last,
                    char *d, size_t n)
{
	char head[MS_EV_TEXT_MAX] = "";
	if (failed)
		snprintf(head, sizeof(head), "%llu failed merges%s%s%s; ",
		         (unsigned long long)failed,
		         last[0] ? " (the last: " : "", last,
		         last[0] ? ")" : "");
	snprintf(d, n,
	         "%sidle %s, %zu claimed, %llu temporary entries, %s, %llu "
	         "quarantined%s",
	         head, f->engine_idle ? "yes" : "no", claimed,
	         (unsigned long long)f->tmp_leftovers, strays_txt,
	         (unsigned long long)f->quarantined,
	         failed ? "" : ", 0 failed merges");
}

/* The results a link's counters hold on record. */
static uint64_t
results_on_record(const ms_gate_link_calls *l)
{
	uint64_t n = 0;
	for (int k = 0; k < MS_LINK_RESULT_COUNT; k++)
		n += l->st->results[k] - (l->gone ? l->gone->results[k] : 0);
	return n;
}

bool
ms_gate_link_calls_ok(const ms_gate_link_calls *l, char *why, size_t n)
{
	uint64_t calls = l->st->calls - (l->gone ? l->gone->calls : 0);
	uint64_t seen = l->ev_calls + l->ev_circuit;
	uint64_t results = results_on_record(l);
	bool counted_ok = calls == l->ev_calls;
	bool calls_ok = counted_ok &&
	                (l->discarded ? seen >= l->decide : seen == l->decide);
	bool results_ok =
	        l->discarded ? results >= l->decide : results == l->decide;
	if (!counted_ok)
		snprintf(why, n,
		         "link %s: the chain counts %llu calls, the merges "
		         "report %llu",
		         l->st->name, (unsigned long long)calls,
		         (unsigned long long)l->ev_calls);
	else if (!calls_ok)
		snprintf(why, n,
		         "link %s: %llu calls, merge events %llu + %llu "
		         "skipped, Decide %llu",
		         l->st->name, (unsigned long long)calls,
		         (unsigned long long)l->ev_calls,
		         (unsigned long long)l->ev_circuit,
		         (unsigned long long)l->decide);
	else if (!results_ok)
		snprintf(why, n,
		         "link %s: %llu results counted (ok or failed open) "
		         "for %llu Decide calls, expected one each",
		         l->st->name, (unsigned long long)results,
		         (unsigned long long)l->decide);
	return calls_ok && results_ok;
}
