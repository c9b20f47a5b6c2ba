/*
 * pipeline_int.h - the sampling pipeline's internals, private to core (and
 * to the tests of core's modules): what the merge executor drives inside a
 * sampling merge (the staging budget, the fragment guard, the drop set,
 * the stager), the chain's per-batch call, the batch's reference counting,
 * and the helpers the pipeline's files share (ms__*). The public API is
 * ms_loader.h, ms_batch.h, ms_chain.h, ms_chain_spec.h and ms_pipeline.h;
 * nothing outside core includes this header.
 *
 * How a merge uses it (the merge executor owns the order of calls):
 *  1. ms_sampling_predict() (ms_sampling.h) decides from the selection
 *     whether this merge samples at all (else: not_executed + reason, no
 *     staging work).
 *  2. ms_stage_plan_make() turns the hard ceiling (ms_staging_hard_ceiling
 *     from ms_limits) and the inputs' estimate into batch limits.
 *  3. ms_guard_open() over the active parts outside the selection,
 *     ms_dropset_open(), ms_stager_open() with the chain.
 *  4. For every complete trace, in output (trace-ID) order:
 *     ms_stager_add(); the stager cuts batches at trace boundaries, runs
 *     the chain, asks the guard about every proposed drop, records
 *     confirmed drops, and emits every trace, in the order added, with its
 *     outcome through the emit callback (where the merge writes or skips).
 *  5. ms_stager_finish(), then the report; before publication
 *     ms_guard_revalidate() against the current inventory (MS_ERR_CONFLICT
 *     means: redo the merge losslessly, reason lossless_retry).
 *  6. Index pruning asks ms_dropset_contains() (exact).
 *
 * Ownership: every handle (ms_stager, ms_guard, ms_dropset) is a heap
 * object owned by whoever opened it and freed by its _close (NULL
 * accepted). Pointers returned by accessors are borrowed from the handle.
 */
#ifndef MS_PIPELINE_INT_H
#define MS_PIPELINE_INT_H

#include "ms_merge.h"
#include "ms_part.h"
#include "ms_pipeline.h"
#include "ms_row.h"

/* ------------------------------------------------------------------ */
/* Plugins (plugin_loader.c)                                           */

/* Take one more reference (a call the chain abandons keeps one). */
void ms__plugin_retain(ms_plugin *p);
/* A plugin name: 1-63 of [a-z0-9_-]. */
bool ms__plugin_name_valid(const char *s);
/* ms_plugin_load in three steps, so that the chain can run the steps that
 * execute the plugin's code on the thread of its choice (bounded there):
 * ms__plugin_new only allocates (never blocks); ms__plugin_load_file
 * opens the file once (the pin: kept open with the plugin), checksums
 * those bytes and dlopen()s that same file through its descriptor, calls
 * the entry point and checks the descriptor (config is not read);
 * ms__plugin_open calls open() with config. A plugin whose later step
 * failed is still the caller's to ms_plugin_unload (its close() is then
 * not called). *out is owned as from ms_plugin_load. */
int ms__plugin_new(ms_plugin **out, const char *path,
                   const ms_plugin_load_opts *opts, ms_errbuf *eb);
int ms__plugin_load_file(ms_plugin *p, ms_errbuf *eb);
/* ms__plugin_load_file on a file already open at fd (a plugin host's,
 * handed down by the workbench), which p owns from then on even on
 * failure; expect (NULL: none) is the checksum the run recorded: a file
 * whose bytes differ is refused, the message naming the path and both
 * checksums. */
int ms__plugin_load_fd(ms_plugin *p, int fd, const char *expect,
                       ms_errbuf *eb);
/* The pinned file's descriptor (-1 before a load). Owned by p. */
int ms__plugin_fd(const ms_plugin *p);
int ms__plugin_open(ms_plugin *p, const char *config, ms_errbuf *eb);
/* ms_plugin_unload in steps, so that the chain can bound close():
 * ms__plugin_drop drops one reference and says whether it was the last;
 * then, and only then, the caller calls ms__plugin_close_state (the
 * plugin's close(), if it was opened; on any thread) and ms__plugin_free
 * (dlclose and the memory), or leaves the plugin allocated for ever when
 * close() never returns. ms__plugin_has_close: is there a close() left
 * to call. */
bool ms__plugin_drop(ms_plugin *p);
bool ms__plugin_has_close(const ms_plugin *p);
void ms__plugin_close_state(ms_plugin *p);
void ms__plugin_free(ms_plugin *p);
/* The longest message of a plugin's open() shown, in bytes. */
#define MS_PLUGIN_MSG_MAX 200
/* Copy text a plugin wrote (at most srcmax bytes of src read; NULL
 * reads as "") into dst (cap bytes) as one printable line: a run of line
 * breaks and tabs becomes one space, any other byte outside printable
 * ASCII '?'; cut to cap - 1 bytes with "..." at the end when longer. */
void ms__plugin_text_clean(char *dst, size_t cap, const char *src,
                           size_t srcmax);

/* ------------------------------------------------------------------ */
/* Batches (staging.c)                                                 */

/* Bytes the batch holds (its allocations). */
uint64_t ms_batch_bytes(const ms_batch *b);
void ms_batch_retain(ms_batch *b);

/* Internal (chain.c): a timed-out call keeps the batch; its
 * memory is then freed through the ms_mem chosen when it was built (the
 * caller's for ms_batch_from_rows, the root of the stager's otherwise). */
void ms__batch_abandon(ms_batch *b);
/* Whether a timed-out call kept b (it is then never reused). */
bool ms__batch_abandoned(const ms_batch *b);

/* ------------------------------------------------------------------ */
/* Chain (chain.c)                                                     */

/* What one ms_chain_decide did. */
typedef struct ms_chain_call {
	size_t ntraces;
	size_t kept;
	size_t links_ok;      /* links whose verdicts were applied */
	size_t links_failed;  /* links bypassed (failed open) */
	uint16_t failed_mask; /* bit i: link i bypassed (MS_CHAIN_MAX_LINKS
	                       * is 16), every link's when the circuit is
	                       * open */
	/* Bit i: link i was called (not skipped by an open circuit; a call
	 * whose worker or host did not start counts), one call of its
	 * counter. */
	uint16_t called_mask;
	/* Bit i: link i's call overran the Decide timeout (also set in
	 * failed_mask). */
	uint16_t timeout_mask;
	bool circuit_open;    /* everything kept because the circuit is open */
	uint64_t decide_ns;   /* wall time of this call's Decide calls, summed
	                       * over the links (a timeout counts its wait) */
} ms_chain_call;

/*
 * Run every link on the same batch and AND their verdicts into keep
 * (ntraces bytes, 1 = keep). A failing link is bypassed (its verdicts are
 * ignored) and its reason recorded; a link that times out is abandoned on
 * its worker, which keeps a reference to b. Never fails open silently:
 * every bypass is in the link stats. Returns 0, or MS_ERR_INVAL for bad
 * arguments (then keep is all 1).
 */
int ms_chain_decide(ms_chain *c, ms_batch *b, uint8_t *keep,
                    ms_chain_call *res);

/* ------------------------------------------------------------------ */
/* Staging budget                                                      */

#define MS_STAGE_MIN_HARD (16ull << 20)
#define MS_STAGE_MAX_TRACES 65536u
/* Per-block runtime structure estimate added to the input estimate. */
#define MS_STAGE_BLOCK_ESTIMATE 256u

/* clamp(mem / (4 * cpus), 16 MiB, ms_lane_threshold(mem)); with mem 0
 * (no limit known) ms_lane_threshold(0), 32 MiB. */
uint64_t ms_staging_hard_ceiling(uint64_t mem, unsigned cpus);
/* E: max(sum compressed, sum uncompressed) + blocks * block estimate. */
uint64_t ms_stage_estimate(const ms_part_meta *inputs, size_t n);
/* The same from the inputs' totals. */
uint64_t ms_stage_estimate_totals(uint64_t compressed, uint64_t uncompressed,
                                  uint64_t blocks);

typedef struct ms_stage_plan {
	uint64_t estimate;      /* E */
	uint64_t hard;          /* the hard ceiling */
	uint64_t window;        /* W = hard / 8 */
	uint64_t planned;       /* P = ceil(E / W), >= 1 */
	uint64_t preferred;     /* ceil(E / P), never above hard */
	uint64_t trace_cap;     /* traces per batch, <= 65,536 */
	uint64_t oversized_cap; /* charged bytes above which a trace is
	                         * kept unevaluated */
	/* Traces the merge can stage at most (the inputs' block count: a
	 * trace has at least one block), 0 when unknown. The stager sizes
	 * its per-trace vectors once from min(this, trace_cap) instead of
	 * growing them by doubling. ms_stage_plan_make leaves it 0. */
	uint64_t trace_hint;
} ms_stage_plan;

/* Fill a plan. estimate 0 means unknown: preferred = hard. The oversized
 * cap defaults to the hard ceiling (a trace larger than the whole budget
 * cannot be staged); the trace cap is min(65,536, preferred / the smallest
 * possible trace charge). */
void ms_stage_plan_make(ms_stage_plan *out, uint64_t hard, uint64_t estimate);

/* ------------------------------------------------------------------ */
/* Pipeline (pipeline.c)                                               */

/* The gauge itself, for ms_stager_opts.live_gauge. */
_Atomic uint64_t *ms_pipeline_live_gauge(ms_pipeline *p);
/* The peak the figures of ms_pipeline_staging hold, for
 * ms_stager_opts.peak_gauge. */
_Atomic uint64_t *ms_pipeline_peak_gauge(ms_pipeline *p);
/* Merge seq starts staging under the preferred limit of its plan
 * (ms_pipeline_staging reads them; its peak starts again from the
 * gauge's present value). */
void ms_pipeline_note_staging(ms_pipeline *p, uint64_t seq, uint64_t preferred);
/* The plan for a merge of these inputs (ms_stage_estimate +
 * ms_stage_plan_make + the configured oversized cap). */
void ms_pipeline_plan(const ms_pipeline *p, const ms_part_meta *inputs,
                      size_t n, ms_stage_plan *out);
/* The same plan from the inputs' totals (what a dispatch knows). */
void ms_pipeline_plan_totals(const ms_pipeline *p, uint64_t compressed,
                             uint64_t uncompressed, uint64_t blocks,
                             ms_stage_plan *out);

/* ------------------------------------------------------------------ */
/* Fragment guard                                                      */

/* May the part hold this trace? false = certainly absent. */
typedef bool (*ms_guard_probe_fn)(const void *ctx, const uint8_t *tid,
                                  uint32_t len);

/* One active part outside the selection. ctx is borrowed and must stay
 * valid while the guard lives (the merge pins a view). */
typedef struct ms_guard_part {
	uint64_t id;
	int64_t min_ts, max_ts;
	ms_guard_probe_fn may_contain; /* NULL: no filter, always defers */
	const void *ctx;
} ms_guard_part;

static inline bool
ms__guard_part_probe(const void *ctx, const uint8_t *tid, uint32_t len)
{
	return ms_part_may_contain((const ms_part *)ctx, tid, len);
}

/* Describe a core part (its metadata range and Bloom filter). */
static inline void
ms_guard_part_from_core(ms_guard_part *gp, const ms_part *p)
{
	const ms_part_meta *m = ms_part_get_meta(p);
	gp->id = m->id;
	gp->min_ts = m->min_ts;
	gp->max_ts = m->max_ts;
	gp->may_contain = ms__guard_part_probe;
	gp->ctx = p;
}

enum ms_guard_reason {
	MS_GUARD_CONFIRMED = 0,
	MS_GUARD_FILTER_POSITIVE, /* an intersecting part may hold the ID */
	MS_GUARD_NO_FILTER,       /* an intersecting part has no filter */
	MS_GUARD_PROBE_BUDGET,    /* Bloom probe budget exhausted */
	MS_GUARD_DROP_BUDGET,     /* confirmed-drop budget exhausted */
	MS_GUARD_BAD_RANGE,       /* min > max or an empty ID */
	/* The boundary guard of the fragment-gap contract: [min - grace,
	 * max + grace] leaves the segment's coverage, or no coverage was
	 * given, so fragments could still arrive beyond an edge: retained
	 * (guard-retained). */
	MS_GUARD_SEGMENT_EDGE,
	MS_GUARD_REASON_COUNT
};
/* "confirmed", "filter_positive", "no_filter", "probe_budget",
 * "drop_budget", "bad_range", "segment_edge". */
const char *ms_guard_reason_name(enum ms_guard_reason r);

typedef struct ms_guard_opts {
	ms_mem *mem;
	uint64_t hard_ceiling; /* guard budget = max(this, 16 MiB) */
	int64_t grace_ns;      /* 0 = MS_GRACE_NS */
} ms_guard_opts;

typedef struct ms_guard_stats {
	uint64_t budget;       /* max(hard, 16 MiB) */
	uint64_t probe_budget; /* budget / 16 */
	uint64_t drop_budget;  /* budget / 64 */
	uint64_t outside_parts;
	uint64_t checks;
	uint64_t candidates; /* intersecting parts seen, summed */
	uint64_t probes;
	uint64_t confirmed;
	uint64_t deferred;
	uint64_t reasons[MS_GUARD_REASON_COUNT];
} ms_guard_stats;

typedef struct ms_guard ms_guard;
typedef struct ms_dropset ms_dropset;

/* Copy the outside parts (n may be 0: nothing outside, every drop in
 * range is confirmed). The guard confirms nothing until it is given the
 * segment with ms_guard_set_coverage. */
int ms_guard_open(ms_guard **out, const ms_guard_part *outside, size_t n,
                  const ms_guard_opts *opts, ms_errbuf *eb);
void ms_guard_close(ms_guard *g);
/* Give the guard the segment's coverage [min_ns, max_ns] (inclusive;
 * see ms_sampling_input), the boundary guard of the fragment-gap
 * contract. Until this is called the guard knows no edge, so it cannot
 * prove any trace clear of one: every proposed drop is retained
 * (MS_GUARD_SEGMENT_EDGE), as the reference does with no segment. */
void ms_guard_set_coverage(ms_guard *g, int64_t min_ns, int64_t max_ns);
/*
 * Should the proposed drop of this trace (its rows span [min_ts, max_ts])
 * stand? true only if [min_ts - grace, max_ts + grace] lies inside the
 * coverage given by ms_guard_set_coverage (no coverage given, or leaving
 * it: MS_GUARD_SEGMENT_EDGE), every outside part whose range intersects
 * that window says, through its filter, the ID is absent, and the
 * budgets allow. *why (may be NULL) gets the reason, and every deferral
 * is counted under it in ms_guard_stats.reasons.
 */
bool ms_guard_check(ms_guard *g, const uint8_t *tid, uint32_t len,
                    int64_t min_ts, int64_t max_ts, enum ms_guard_reason *why);
/*
 * Before publication: parts in `now` (the current active parts outside
 * the selection) that the guard did not know are checked against every
 * confirmed drop in `drops`. 0 when no new part may hold a dropped trace;
 * MS_ERR_CONFLICT naming the part and trace otherwise (redo losslessly).
 */
int ms_guard_revalidate(ms_guard *g, const ms_guard_part *now, size_t n,
                        const ms_dropset *drops, ms_errbuf *eb);
void ms_guard_stats_get(const ms_guard *g, ms_guard_stats *out);

/* ------------------------------------------------------------------ */
/* Drop set                                                            */

typedef uint64_t (*ms_dropset_hash_fn)(const uint8_t *tid, uint32_t len,
                                       void *ctx);

typedef struct ms_dropset_opts {
	ms_mem *mem;
	ms_dropset_hash_fn hash; /* NULL = XXH3-64; tests inject collisions */
	void *hash_ctx;
	/* The drop-set ceiling in bytes (ms_dropset_budget); 0 = none. */
	uint64_t budget;
} ms_dropset_opts;

/*
 * The drop-set ceiling, the reference's rule, held here and nowhere else.
 * A merge's drop set may hold budget / price(L) IDs, L the longest ID
 * recorded so far; once it holds that many it is full for the rest of the
 * merge, and every later proposed drop is kept (counted by the stager as
 * kept because the drop set was full), so the set stays the exact record
 * of the drops the merge performs. Every sampling merge, primary or
 * finalize, gets the same budget:
 *     budget = max(mem / (16 * cpus), 1 MiB); 16 MiB if mem is 0
 * mem standing for the reference's memory-protector limit as its merge
 * benchmark sets it (the container's limit, as the staging ceiling takes
 * it here); a production server's protector defaults to 75% of it.
 * An ID of L bytes is priced at 20 (string header and append slack)
 * + L rounded up to 16 (to 32 above 256 bytes) + 32 (four index slots):
 * 100 bytes for 42, 116 for 54. The first proposed drop is always
 * recorded; a longer ID re-prices (lowering the count) when recorded.
 */
#define MS_DROPSET_DIVISOR 16
#define MS_DROPSET_MIN_BUDGET (1ull << 20)
#define MS_DROPSET_DEFAULT_BUDGET (16ull << 20)
uint64_t ms_dropset_budget(uint64_t mem, unsigned cpus);
uint64_t ms_dropset_price(uint32_t id_len);
/* budget / ms_dropset_price(id_len), at least 1; 0 for a budget of 0. */
uint64_t ms_dropset_max_ids(uint64_t budget, uint32_t id_len);

int ms_dropset_open(ms_dropset **out, const ms_dropset_opts *opts,
                    ms_errbuf *eb);
void ms_dropset_close(ms_dropset *d);
/* Record a confirmed drop (merge order). MS_ERR_EXISTS if the ID is
 * already recorded; MS_ERR_INVAL for an empty or too long ID; MS_ERR_NOMEM,
 * or MS_ERR_RANGE past 2^31 drops; the set is unchanged on any error. */
int ms_dropset_add(ms_dropset *d, const uint8_t *tid, uint32_t len,
                   int64_t min_ts, int64_t max_ts, ms_errbuf *eb);
/* Exact: hash to a slot, then a full byte compare of the ID. */
bool ms_dropset_contains(const ms_dropset *d, const uint8_t *tid, uint32_t len);
size_t ms_dropset_count(const ms_dropset *d);
/* May one more drop be recorded under the budget? Once false, false for
 * the life of the set (full is one-way). Always true without a budget or
 * before the first drop (NULL d: true). */
bool ms_dropset_can_accept(ms_dropset *d);
/* The budget the set was opened with, and the IDs it holds at most under
 * it as priced now (0 when no budget or before the first drop). */
uint64_t ms_dropset_budget_of(const ms_dropset *d);
uint64_t ms_dropset_max_ids_of(const ms_dropset *d);
/* The i-th recorded drop (i < count), in the order added: its ID copied
 * to tid (*len bytes), its min_ts and max_ts exactly as added (either may
 * be NULL). Reads up to 7 records before it: to walk the set, use an
 * iterator. */
void ms_dropset_get(const ms_dropset *d, size_t i, uint8_t tid[MS_TRACE_ID_MAX],
                    uint32_t *len, int64_t *min_ts, int64_t *max_ts);
/* A walk over the drops in the order added, embedded by the caller
 * (ms_dropset_iter_init, NULL d: no drops). Each ms_dropset_next gives the
 * next drop: true, its ID in it->tid (it->len bytes, owned by the
 * iterator, overwritten by the next call) and its bounds (either may be
 * NULL); false after the last. The set must not change during the walk. */
typedef struct ms_dropset_iter {
	const ms_dropset *d; /* borrowed */
	size_t i;            /* entries read */
	size_t chunk, pos;   /* where the next record is */
	uint32_t len;
	uint8_t tid[MS_TRACE_ID_MAX];
} ms_dropset_iter;
void ms_dropset_iter_init(ms_dropset_iter *it, const ms_dropset *d);
bool ms_dropset_next(ms_dropset_iter *it, int64_t *min_ts, int64_t *max_ts);
/* Bytes the set has allocated (the handle included), what it costs in
 * memory. */
uint64_t ms_dropset_bytes(const ms_dropset *d);
/* A keep predicate for ms_sidx_merge: ctx is the ms_dropset; true when
 * the ID is not in the set. */
bool ms_dropset_keep(void *ctx, const uint8_t *tid, uint32_t len);

/* ------------------------------------------------------------------ */
/* Stager                                                              */

enum ms_trace_outcome {
	MS_TRACE_KEPT = 0,      /* evaluated, the chain kept it */
	MS_TRACE_DROPPED = 1,   /* evaluated, drop confirmed by the guard */
	MS_TRACE_DEFERRED = 2,  /* evaluated, drop proposed, guard kept it
	                         * (or the drop set was full) */
	MS_TRACE_OVERSIZED = 3, /* over the per-trace cap, not evaluated */
	MS_TRACE_HOT = 4,       /* trace policy: max ts > frontier */
};
const char *ms_trace_outcome_name(enum ms_trace_outcome o);

/* One trace going out of the stager, in the order it was added. */
typedef struct ms_stage_emit {
	const uint8_t *trace_id;
	uint32_t trace_id_len;
	/* The trace's rows: the stager's full copy with copy_rows, the
	 * caller's own rows for an oversized trace (emitted during the add
	 * call), else NULL. Valid during the callback only. */
	const ms_row *rows;
	size_t nrows;
	void *cookie; /* as given to ms_stager_add */
	enum ms_trace_outcome outcome;
	bool keep; /* outcome != MS_TRACE_DROPPED */
	int64_t min_ts, max_ts;
	/* The last trace of its batch (or an oversized trace, alone):
	 * nothing added before it is pending any more. */
	bool batch_end;
} ms_stage_emit;

/* Return 0 to go on; a negative ms_err stops the stager with it, and
 * the callback says what went wrong in eb (the stager's caller gets that
 * message; left empty, the stager writes one). */
typedef int (*ms_stage_emit_fn)(void *ctx, const ms_stage_emit *t,
                                ms_errbuf *eb);

/* Test hooks of the stager (NULL in production): they break what the
 * stager hands to the chain, so that the checks counted in
 * ms_stage_report (decide_dup_traces, bounds_mismatch) can be seen to
 * fail. */
typedef struct ms_stager_test {
	bool decide_twice;   /* hand every batch to the chain twice */
	int64_t skew_end_ns; /* added to every batch entry's max_end_ns */
	/* Added to the frontier the trace policy's hot test compares with
	 * (not to the one hot_decided is checked against). */
	int64_t skew_frontier_ns;
} ms_stager_test;

typedef struct ms_stager_opts {
	ms_mem *mem;        /* staging memory; its parent must outlive
	                     * the chain (abandoned batches move there) */
	ms_chain *chain;    /* borrowed, required */
	ms_guard *guard;    /* borrowed; NULL: every proposed drop defers */
	ms_dropset *drops;  /* borrowed; confirmed drops go here */
	ms_stage_plan plan; /* from ms_stage_plan_make */
	enum ms_grace_policy policy;
	/* The merge's frontier (now - grace), under either policy: under
	 * the trace policy a trace whose max ts is past it is kept hot,
	 * unevaluated; under both, hot_decided checks against it. */
	int64_t frontier_ns;
	bool copy_rows;      /* keep a full copy of each trace for emit */
	ms_stage_emit_fn emit;
	void *emit_ctx;
	const ms_stager_test *test; /* borrowed; NULL in production */
	/* Optional gauge shared by every stager of a pipeline: the stager
	 * adds each trace's charge when it stages it and takes it back when
	 * the batch is done or the stager closes (ms_pipeline_staged_live). */
	_Atomic uint64_t *live_gauge;
	/* Optional, with live_gauge: raised to the gauge's value after each
	 * add when that is higher (never lowered here; its owner resets
	 * it), so that it holds the batches' peak after they are done. */
	_Atomic uint64_t *peak_gauge;
} ms_stager_opts;

typedef struct ms_stage_batch_rec {
	uint64_t charged;   /* charged bytes of the batch */
	uint32_t traces;    /* traces in the batch (all outcomes) */
	uint32_t evaluated; /* of which reached Decide */
	enum ms_flush_reason reason;
} ms_stage_batch_rec;

#define MS_STAGE_BATCH_RECS 256

/* Per-merge staging figures. */
typedef struct ms_stage_report {
	ms_stage_plan plan;
	uint64_t batches;      /* flushed batches */
	uint64_t decide_calls; /* chain calls (batches with evaluations) */
	/* Calls of each link's plugin, as each chain call reported them
	 * (ms_chain_call.called_mask). */
	uint64_t link_calls[MS_CHAIN_MAX_LINKS];
	ms_stage_batch_rec batch[MS_STAGE_BATCH_RECS]; /* the first ones */
	uint64_t peak_charged; /* peak live charged bytes */
	/* Peak of opts.live_gauge seen after this stager's adds: what every
	 * stager of the pipeline charged at once (peak_charged without a
	 * gauge). */
	uint64_t peak_concurrent;
	uint64_t peak_alloc; /* peak live bytes allocated by staging */
	uint64_t total_charged;
	uint64_t traces, rows;
	uint64_t evaluated, kept, proposed_drops, dropped, deferred;
	/* Of deferred: proposed drops kept because the drop set was full
	 * (ms_dropset_can_accept); the guard never saw them. */
	uint64_t drop_set_full;
	uint64_t oversized, hot;
	uint64_t decide_ns; /* sum of the chain calls' decide_ns */
	enum ms_sampling_class cls;
	enum ms_sampling_reason reason;
	/* Checks of what reached the chain (DESIGN 4, end-of-run gates).
	 * decide_dup_traces: batch entries whose trace ID is not above
	 * every ID handed to the chain before by this stager (the merge
	 * stages in strictly ascending ID order, so such an entry is a
	 * trace handed to Decide a second time). bounds_mismatch: of the
	 * bounds_checked traces whose bounds the caller rebuilt from the
	 * trace's fragments (ms_stager_expect_bounds), those whose batch
	 * entry carries another min_start_ns or max_end_ns. hot_decided:
	 * of those, the batch entries whose rebuilt latest start is past
	 * opts.frontier_ns (a trace still within the grace reached Decide,
	 * under either policy). */
	uint64_t decide_dup_traces;
	uint64_t bounds_checked;
	uint64_t bounds_mismatch;
	uint64_t hot_decided;
	/* Batches whose buffers the next batch reused (a batch is reused
	 * only when its chain call returned: never after a timeout). */
	uint64_t batches_reused;
	uint64_t alloc_bytes; /* bytes allocated by the stager in total */
} ms_stage_report;

typedef struct ms_stager ms_stager;

int ms_stager_open(ms_stager **out, const ms_stager_opts *opts, ms_errbuf *eb);
/*
 * Bytes a trace is charged against the budget: projected column copies,
 * per-row and per-trace descriptors, tag and string index slots, verdict
 * state, the drop-set reserve, the full row copy when copy_rows, and
 * extra_bytes (payload the caller holds for the trace until its emit).
 */
uint64_t ms_stager_charge(const ms_stager *s, const ms_row *rows, size_t n,
                          uint64_t extra_bytes);
/*
 * Stage one complete trace (all its rows from all inputs; rows borrowed
 * for the call). Trace IDs must ascend strictly across calls. Traces are
 * emitted in the order added: a flush happens first when the trace would
 * pass the byte limit or the count limit; an oversized trace flushes what
 * is pending and is emitted at once, unevaluated.
 */
int ms_stager_add(ms_stager *s, const ms_row *rows, size_t n, void *cookie,
                  uint64_t extra_bytes, ms_errbuf *eb);
/*
 * Stage one complete trace known only by its block headers, when the
 * chain reads no row column (projection MS_PROJ_NONE) and copy_rows is
 * off: nothing of the trace has to be decoded. The batch gets the trace's
 * descriptor (ID, row count, bounds) exactly as ms_stager_add would build
 * it from the rows; the charge is the per-trace fixed part, the ID and
 * extra_bytes. Same ordering, limits and emission as ms_stager_add (emits
 * carry rows = NULL and nrows). MS_ERR_INVAL when the chain projects a
 * column, copy_rows is set, or the summary is malformed.
 */
typedef struct ms_stage_summary {
	const uint8_t *trace_id;
	uint32_t trace_id_len;
	uint32_t nrows;         /* >= 1 */
	int64_t min_ts, max_ts; /* over start_ns */
	int64_t max_end_ns;     /* max(start_ns + latency_ms * 1e6) */
} ms_stage_summary;
int ms_stager_add_summary(ms_stager *s, const ms_stage_summary *t, void *cookie,
                          uint64_t extra_bytes, ms_errbuf *eb);
/*
 * Optional, before the next ms_stager_add or ms_stager_add_summary: the
 * bounds of that trace as the caller rebuilt them independently from its
 * rows' own decoded timestamps (the minimum and maximum start_ns, and the
 * maximum start_ns + latency). If the trace reaches a batch and its entry
 * there carries another min_start_ns or max_end_ns, the report's
 * bounds_mismatch counts it; if it reaches a batch while max_ts is past
 * the frontier, hot_decided does. Applies to the next add only.
 */
void ms_stager_expect_bounds(ms_stager *s, int64_t min_ts, int64_t max_ts,
                             int64_t max_end_ns);
/* Flush what is pending and settle the classification. */
int ms_stager_finish(ms_stager *s, ms_errbuf *eb);
const ms_stage_report *ms_stager_report(const ms_stager *s);
/* Live charged bytes now (for a staging gauge). */
uint64_t ms_stager_live(const ms_stager *s);
void ms_stager_close(ms_stager *s);

#endif
