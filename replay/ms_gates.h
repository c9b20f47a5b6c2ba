/*
 * ms_gates.h - the end-of-run correctness gates of a replay, each defined
 * once: its name (as the event log, the reports and README spell it), what
 * it expects, and its predicate over the facts of a run.
 *
 * A run (replay/gates.c) fills the facts from the shard and its own
 * tallies and records every gate that applies, in enum order, with a
 * detail line of its evidence. A report (ms_report_derive_gates) fills the
 * facts it can from the event log alone and evaluates, with the same
 * predicates, the gates marked from_log. Tests walk the table. The one
 * gate outside it, run_finished (a report's, of a run that did not reach
 * its gates), is defined once in report.c (run_finished_gate).
 */
#ifndef MS_GATES_H
#define MS_GATES_H

#include "ms_chain.h"
#include "ms_ledger.h"
#include "ms_replay_events.h"
#include "ms_sampling.h"

#include <stdbool.h>
#include <stdint.h>

/* In the order a run records them. */
enum ms_gate {
	MS_GATE_PUBLICATIONS = 0,
	MS_GATE_LEDGERS,
	MS_GATE_LIFECYCLE,
	MS_GATE_ONE_BLOCK_PER_TRACE,
	MS_GATE_PART_LEDGERS,
	MS_GATE_NO_DECIDE_WHEN_HOT,
	MS_GATE_ONE_DECIDE_PER_TRACE,
	MS_GATE_PLUGIN_BOUNDS,
	MS_GATE_PLUGIN_HEALTH,
	MS_GATE_VERDICT_ORACLE,
	MS_GATE_SAMPLING_EXERCISED,
	MS_GATE_IDLE_NO_LEAKS,
	MS_GATE_EVENT_COUNT,
	MS_GATE_ONE_CLASSIFICATION,
	MS_GATE_COUNT,
};

/* What the predicates read. Zero means "nothing wrong seen" for every
 * count; a source fills the fields of the gates it evaluates. */
typedef struct ms_gate_facts {
	enum ms_grace_policy policy;
	bool chain;     /* a chain with at least one link is configured */
	bool pipeline;  /* a pipeline is configured (plugin_health) */
	bool ended;     /* the run ended (a log without an end has not) */
	uint64_t slots; /* publications: scheduled parts */
	uint64_t published;
	bool ledgers_known;   /* the expected ledgers could be computed */
	bool ledgers_equal;   /* final = expected, core and both indexes */
	bool lifecycle_known; /* part lifecycle was tracked or recorded */
	bool lifecycle_twice; /* a part introduced or removed twice */
	uint64_t unexplained; /* parts the lifecycle does not explain */
	/* Core parts that entered the shard: publications that took effect
	 * and merge outputs introduced, counted as they entered. */
	uint64_t parts_introduced;
	uint64_t parts_checked; /* parts handed to the part checker */
	uint64_t parts_in;      /* checks finished */
	uint64_t parts_ok;      /* checks passed */
	uint64_t merges_done; /* completed merges (events received) */
	uint64_t merges_failed;
	uint64_t merges_reconciled; /* output ledgers = inputs - dropped */
	uint64_t merges_unreconciled;
	uint64_t hot_decides; /* ms_gate_merge_hot_decide merges */
	/* Traces handed to Decide whose rows start past their merge's
	 * frontier (ms_merge_sampling.hot_decided, summed). */
	uint64_t hot_decided;
	uint64_t decide_dup_traces;
	uint64_t bounds_mismatch;
	bool link_calls_ok;    /* link call counters reconcile */
	uint64_t health_kinds; /* fail-open, retry and oversized events */
	bool allow_fail_open;
	bool oracle_ok; /* the run reconciles with the verdict oracle */
	uint64_t executed_merges;
	/* Merges that reached Decide with every call failing open
	 * (sampling_exercised counts them under allow_fail_open). */
	uint64_t open_merges;
	bool engine_idle; /* idle, nothing queued, running, held, claimed */
	uint64_t tmp_leftovers;
	uint64_t parts_strays; /* entries of parts/ that are no active part's */
	uint64_t quarantined;
	/* event_count: merge rows the event database holds, against the
	 * merge events received (merges_done + merges_failed) and the
	 * engine's own counts. A log has only its rows (events_from_rows):
	 * there merges_done/merges_failed are the rows, checking them
	 * against the rows would prove nothing, and the engine's failures
	 * are not recorded; only engine_merges_done (the run row's count,
	 * the engine's own) is compared. */
	uint64_t merge_events;       /* merge rows in the database */
	uint64_t engine_merges_done; /* the engine's own count */
	uint64_t engine_merges_failed;
	bool events_from_rows;
	uint64_t bad_class;          /* ms_gate_merge_bad_class merges */
} ms_gate_facts;

typedef struct ms_gate_def {
	const char *name;   /* as recorded; unique */
	const char *expect; /* what must hold, one line */
	bool run;           /* a run records it */
	bool from_log;      /* ms_report_derive_gates recomputes it */
	/* NULL = always; else the gate exists only for such runs. */
	bool (*applies)(const ms_gate_facts *f);
	bool (*pass)(const ms_gate_facts *f);
	/* NULL = never; else a passing gate that is a WARN. */
	bool (*warn)(const ms_gate_facts *f);
} ms_gate_def;

/* The definition of gate g; NULL out of range. */
const ms_gate_def *ms_gate_def_of(enum ms_gate g);
/* The gate called name, or -1. */
int ms_gate_parse(const char *name);

/* Evaluate gate g over f into out: name, pass, warn; detail "". Returns
 * false (out untouched) when the gate does not apply to f's run. */
bool ms_gate_eval(enum ms_gate g, const ms_gate_facts *f, ms_ev_gate *out);

/* The detail of no_decide_when_hot into d (n bytes), given the traces
 * evaluated: "0 of 812 traces evaluated started past the frontier",
 * after "N hot selections called Decide; " under the selection policy. */
void ms_gate_hot_detail(const ms_gate_facts *f, uint64_t evaluated, char *d,
                        size_t n);
/* The detail of the ledgers gate into d (n bytes): the final core ledger
 * against the expected one (input minus the oracle's dropped rows), "="
 * or "!=", then each index that differs named with its rows and the rows
 * expected ("indexes equal" when both are), then the dropped traces and
 * rows. */
void ms_gate_ledgers_detail(const ms_ledger_set *fin, const ms_ledger_set *want,
                            size_t dropped_traces, uint64_t dropped_rows,
                            char *d, size_t n);
/* The detail of idle_no_leaks into d (n bytes): idle, the parts still
 * claimed, temporary entries, strays (strays_txt), quarantined parts and
 * failed merges. With failed merges their count and the last one's cause
 * (last, may be "") come first, so a long cause is not cut off by the
 * figures before it. */
void ms_gate_idle_detail(const ms_gate_facts *f, size_t claimed,
                         const char *strays_txt, uint64_t failed,
                         const char *last, char *d, size_t n);
/* A merge of a hot selection that called Decide (no_decide_when_hot). */
bool ms_gate_merge_hot_decide(const ms_ev_merge *m);
/* A merge without exactly one classification: an unknown class, or a
 * reason other than none with executed (or none without) (the gate
 * one_classification). */
bool ms_gate_merge_bad_class(const ms_ev_merge *m);

/* One link's counters as plugin_health reconciles them with the merge
 * events: the chain's own (st), what of them stretches a seek removed
 * counted (gone: not on record), and what the merge events on record
 * report: the calls each merge counted as the chain answered its Decide
 * calls (ms_merge_sampling.link_calls, every attempt's), a tally of its
 * own, not the chain's counters read around the merge. */
typedef struct ms_gate_link_calls {
	const ms_link_stats *st;
	const ms_link_stats *gone;
	uint64_t ev_calls;   /* link calls the merges report */
	uint64_t ev_circuit; /* circuit-open skips they report */
	uint64_t decide;     /* Decide calls of the merges */
	bool discarded;      /* a merge discarded an attempt (its calls are
	                      * in no merge's figures) */
} ms_gate_link_calls;
/* Do the link's calls reconcile? Its call counter equals the calls the
 * merge events report; calls plus circuit-open skips equal the merges'
 * Decide calls; and every Decide call left exactly one result for the
 * link (ok or a fail-open kind), so its results add up to the Decide
 * calls too: a failure the chain did not count is one result short.
 * With discarded, "equal the Decide calls" reads "at least". When not,
 * why (n bytes) says which figures differ. */
bool ms_gate_link_calls_ok(const ms_gate_link_calls *l, char *why, size_t n);

/* A plugin-health event as the rule below reads it: its link, its kind
 * and its cause ("" when none). */
typedef struct ms_gate_health_key {
	const char *link, *kind, *why;
} ms_gate_health_key;
/* Each kind of a link's failures has its cause named once, where it
 * first shows (plugin_health's detail, the report's health section): is
 * event i of the events at evs, event j read by key(evs, j), the first
 * of its link and kind with a cause? */
bool ms_gate_health_first_why(const void *evs, size_t i,
                              ms_gate_health_key (*key)(const void *evs,
                                                        size_t j));

#endif
