/*
 * ms_sampling.h - "will this merge sample?": the one rule, its inputs, the
 * grace policy, and the per-merge sampling classification with its names.
 *
 * The engine predicts a merge's classification at dispatch (the dispatch
 * hook, the `sampling` breakpoint and the event log's predict_class see
 * it); the merge executor decides at the start of the merge whether to
 * stage its traces. Both call ms_sampling_predict on an ms_sampling_input
 * built with ms_sampling_input_add from the inputs' metadata, so a
 * prediction can only differ from the merge's outcome where the outcome
 * depends on the traces themselves (see ms_sampling_predict).
 *
 * Nothing here allocates or keeps state; every function may be called
 * from any thread.
 */
#ifndef MS_SAMPLING_H
#define MS_SAMPLING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Per-merge sampling classification (exactly one per merge). */
enum ms_sampling_class {
	MS_SAMPLING_NOT_EXECUTED = 0,
	MS_SAMPLING_ENABLED_NO_EVALUATION = 1,
	MS_SAMPLING_EXECUTED = 2,
	MS_SAMPLING_CLASS_COUNT = 3,
};

/* Why sampling did not execute (NONE when it did). Every reason has a
 * path that reaches it and a test that sees it (tests/test_staging.c,
 * tests/test_merge.c). */
enum ms_sampling_reason {
	MS_SREASON_NONE = 0,
	MS_SREASON_PIPELINE_DISABLED = 1, /* no pipeline */
	MS_SREASON_NO_SAMPLER = 2,        /* a chain of 0 links */
	/* ms_merge_req.merge_event_disabled: ordinary merges off, the
	 * finalize samples */
	MS_SREASON_EVENT_DISABLED = 3,
	/* policy selection: a hot input; policy trace: every input young */
	MS_SREASON_MERGE_GRACE = 4,
	/* every input lies within the grace of its segment's edge: the
	 * boundary guard would retain every trace, so Decide is skipped */
	MS_SREASON_FRAGMENT_GAP_CONTRACT = 5,
	/* no segment is known, or it leaves no interior once the grace is
	 * taken off both edges: no drop could be proved clear of its edge */
	MS_SREASON_GUARD_UNAVAILABLE = 6,
	/* staged, no trace evaluated, at least one over the per-trace cap
	 * (the others hot under policy trace, say): as in the reference,
	 * any oversized trace names the reason */
	MS_SREASON_ALL_TRACES_OVERSIZED = 7,
	MS_SREASON_LOSSLESS_RETRY = 8, /* revalidation failed 3 times */
	MS_SREASON_EMPTY_INPUT = 9,    /* no input part at all */
	/* staged, no trace evaluated and none oversized: every trace hot
	 * under policy trace, no trace at all, or every chain call failed
	 * open (the merge's hot and oversized counters say which) */
	MS_SREASON_OTHER = 10,
	MS_SREASON_COUNT = 11,
};

/* "executed", "enabled_no_evaluation", "not_executed"; "unknown" out of
 * range. */
const char *ms_sampling_class_name(enum ms_sampling_class c);
/* "none", "pipeline_disabled", "no_sampler", ... as DESIGN spells them;
 * "unknown" out of range. */
const char *ms_sampling_reason_name(enum ms_sampling_reason r);
/* The enum value the name above spells, or -1 if s is NULL or unknown. */
int ms_sampling_class_parse(const char *s);
int ms_sampling_reason_parse(const char *s);

/* The grace policy (DESIGN: pipeline). */
enum ms_grace_policy {
	MS_GRACE_SELECTION = 0, /* any hot input: no sampling (default) */
	/* only traces with max ts <= frontier; no sampling when every
	 * input is young (min ts > frontier) */
	MS_GRACE_TRACE = 1,
};
/* "selection" or "trace"; any other value is the default policy and
 * named "selection". */
const char *ms_grace_policy_name(enum ms_grace_policy p);
/* "selection" or "trace"; MS_ERR_INVAL otherwise (*out unchanged). */
int ms_grace_policy_parse(const char *s, enum ms_grace_policy *out);

/* What is known about a merge before it starts. Zero it, set the first
 * four fields and the segment, then count every input with
 * ms_sampling_input_add. */
typedef struct ms_sampling_input {
	bool pipeline_enabled;
	size_t nsamplers;    /* links in the chain */
	bool event_disabled; /* sampling switched off for this merge */
	enum ms_grace_policy policy;
	size_t ninputs;
	uint64_t input_rows;
	size_t hot_inputs; /* inputs with rows and max ts > frontier */
	/* Inputs holding no trace at or before the frontier: no rows, or
	 * min ts > frontier (a trace's max ts is at least the min ts of every
	 * part holding a fragment of it). */
	size_t young_inputs;
	/* The boundary guard's segment, inclusive (both 0: none known, and
	 * then no guard can be set up: ms_merge_req.segment_min_ns), and
	 * the grace (0: MS_GRACE_NS): set them before the first
	 * ms_sampling_input_add, which then counts the inputs that lie
	 * wholly within the grace of the segment's edges (or hold no row):
	 * no trace with a fragment there can be dropped. */
	int64_t segment_min_ns, segment_max_ns;
	int64_t grace_ns;
	size_t edge_inputs;
} ms_sampling_input;

/* Count one input part (its row count and time bounds) judged against
 * frontier_ns. */
void ms_sampling_input_add(ms_sampling_input *in, uint64_t rows, int64_t min_ts,
                           int64_t max_ts, int64_t frontier_ns);

/*
 * The rule. Returns true when the merge stages its traces for the chain,
 * false when it does not sample at all.
 *
 * false: *cls = MS_SAMPLING_NOT_EXECUTED and *reason is the first match
 * of: empty_input (no input part), pipeline_disabled, no_sampler,
 * event_disabled, merge_grace (selection policy: any hot input; trace
 * policy: every input young, so no trace can be old enough for Decide and
 * nothing is staged), guard_unavailable (no segment known, or one with no
 * interior once the grace is taken off both edges), fragment_gap_contract
 * (every input within the grace of the segment's edges). The merge's
 * outcome is exactly this.
 *
 * true: the prediction, *cls = executed, *reason = none. The merge's
 * outcome is its stager's report, which differs from the prediction only
 * where the traces decide, by the reference's rule: no trace evaluated
 * is enabled_no_evaluation, with reason all_traces_oversized when any
 * trace was oversized and other otherwise (an input may hold a trace at
 * or before the frontier but none does, no trace at all, every chain
 * call failed open); or a merge redone losslessly after its guard found
 * a conflict (not_executed, lossless_retry).
 */
bool ms_sampling_predict(const ms_sampling_input *in,
                         enum ms_sampling_class *cls,
                         enum ms_sampling_reason *reason);

#endif
