/*
 * ms_merge.h - the merge executor: one merge of a set of active parts of a
 * shard into one output part, core and both secondary indexes, published in
 * one transaction.
 *
 * The dispatcher (engine) decides what to merge and on which lane; this
 * module does the work on the calling thread and reports everything it
 * measured in an ms_merge_result. A merge is lossless unless a sampling
 * pipeline is given and decides to drop complete traces.
 *
 * Contract:
 *  - Every input must be active in the shard at the start (else
 *    MS_ERR_CONFLICT) and again at publication (the shard checks).
 *  - On success the output (core, latency, start_time, same ID) replaced the
 *    inputs in one ms_shard_replace; the shard deletes the inputs once no view
 *    pins them.
 *  - On failure at any stage nothing is published, every input stays active
 *    and unchanged, the temporary output directories are removed, and the
 *    error (code, stage, message naming the part) is in the result and in eb.
 *
 * Ownership: the request and everything it points to are borrowed for the
 * duration of the call. The result is caller-owned; its `inputs` pointer is
 * borrowed from req->inputs. No other pointer in the result outlives the call.
 * Threads: ms_merge_execute may run on several threads at once for disjoint
 * inputs of one shard; each call uses only its own memory and iterators.
 */
#ifndef MS_MERGE_H
#define MS_MERGE_H

#include "ms_chain_spec.h"
#include "ms_err.h"
#include "ms_mem.h"
#include "ms_part.h"
#include "ms_sampling.h"
#include "ms_shard.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Defined by the sampling layer; NULL in a request means "pipeline
 * disabled". */
struct ms_pipeline;
struct ms_merge_req;

/* Lane names (a request may carry any string; these are the usual ones). */
#define MS_LANE_FAST "fast"
#define MS_LANE_SLOW "slow"
#define MS_LANE_FINALIZE "finalize"

/* Request flags. */
enum ms_merge_flags {
	/* A finalize merge: forced by the controller, picker bypassed. Allows
	 * a single input (rewritten as one output). Lane defaults to
	 * "finalize". */
	MS_MERGE_FINALIZE = 1u << 0,
};

/* The stages of a merge, in order; a failure reports the stage it hit. */
enum ms_merge_stage {
	MS_MERGE_STAGE_NONE = 0,
	MS_MERGE_STAGE_PIN = 1,     /* pin a view, check inputs active */
	MS_MERGE_STAGE_READ = 2,    /* open iterators, read input blocks */
	MS_MERGE_STAGE_WRITE = 3,   /* write/finish the core output */
	MS_MERGE_STAGE_INDEX = 4,   /* merge the two secondary indexes */
	MS_MERGE_STAGE_PUBLISH = 5, /* ms_shard_replace */
	MS_MERGE_STAGE_DONE = 6,
	MS_MERGE_STAGE_COUNT = 7,
};

/* "none", "pin", "read", "write", "index", "publish", "done". */
const char *ms_merge_stage_name(enum ms_merge_stage st);

/* Why the stager cut a batch (recorded per batch, ms_merge_batch). */
enum ms_flush_reason {
	MS_FLUSH_BYTES = 0,     /* the batch reached the byte limit */
	MS_FLUSH_TRACES = 1,    /* the trace-count limit was reached */
	MS_FLUSH_OVERSIZED = 2, /* an oversized trace must go out in order */
	MS_FLUSH_FINAL = 3,     /* ms_stager_finish */
};
/* "bytes", "traces", "oversized", "final". */
const char *ms_flush_reason_name(enum ms_flush_reason r);

/* How a sampling merge writes the traces it keeps (DESIGN, Staging). */
enum ms_staging_mode {
	/* The stager retains each staged trace's payload (a single input's
	 * blocks as stored, a fragmented trace's combined rows), charged
	 * against the budget; kept traces are written from it. */
	MS_STAGING_RETAIN = 0,
	/* Only what Decide reads is staged; kept traces are re-read from
	 * the pinned inputs once their batch is decided. */
	MS_STAGING_REREAD = 1,
};
/* "retain", "reread"; "unknown" out of range. */
const char *ms_staging_mode_name(enum ms_staging_mode m);
/* 0 and *out set, or MS_ERR_INVAL for anything else (NULL too). */
int ms_staging_mode_parse(const char *s, enum ms_staging_mode *out);

typedef struct ms_merge_req {
	ms_shard *shard;        /* borrowed */
	const uint64_t *inputs; /* part IDs, >= 2 (>= 1 for finalize) */
	size_t ninputs;
	uint64_t output_id; /* 0 = reserve one with ms_shard_new_id */
	uint64_t seq;       /* merge sequence number (for results) */
	const char *lane;   /* "fast", "slow", "finalize"; NULL ok */
	unsigned flags;     /* enum ms_merge_flags */
	ms_mem *parent_mem; /* the merge's ms_mem reports here */
	ms_io *io;          /* engine-wide I/O counters; may be NULL */
	const struct ms_pipeline *pipeline; /* NULL = disabled */
	int64_t now_ns;                     /* logical clock at dispatch */
	int64_t grace_ns;             /* 0 = 2 h; frontier = now - grace */
	int zstd_level;               /* 0 = the part writer's default */
	enum ms_staging_mode staging; /* sampling merges; 0 = retain */
	/* The time segment the shard's parts belong to, inclusive, as the
	 * boundary guard's coverage (ms_guard_set_coverage). Both 0: not
	 * known; as in the reference no trace can then be proved clear of
	 * an edge, so the merge does not sample and drops nothing
	 * (not_executed, reason guard_unavailable). A coverage with no
	 * interior once the grace is taken off both edges makes the guard
	 * unavailable too. */
	int64_t segment_min_ns, segment_max_ns;
	/* The pipeline's ordinary-merge event is off: only a finalize
	 * samples (others: not_executed, event_disabled). */
	bool merge_event_disabled;
	/* Optional: called once per confirmed dropped trace, in merge
	 * (trace-ID) order, with the trace's row count, after the merge
	 * published successfully and before ms_merge_execute returns; never
	 * for a failed merge nor for an attempt discarded by revalidation.
	 * tid is valid during the call only. On the merging thread. */
	void (*on_drop)(void *arg, const uint8_t *tid, uint32_t tid_len,
	                uint64_t rows);
	void *drop_arg;
	/* Optional: the calling thread's kept zstd contexts (borrowed; the
	 * merge runs on that thread): its writers and readers use them
	 * instead of making their own. NULL: the merge makes its own. */
	ms_zctx *zctx;
} ms_merge_req;

/* Figures of one secondary-index child merge. */
typedef struct ms_merge_index_stats {
	uint64_t rows_in;
	uint64_t rows_out;
	uint64_t rows_pruned; /* rows of dropped traces removed */
	uint64_t blocks_in;
	uint64_t blocks_out;
	uint64_t bytes_in;  /* compressed bytes of the inputs */
	uint64_t bytes_out; /* compressed bytes of the output */
	int64_t wall_ns;
	bool done; /* the child merge completed */
} ms_merge_index_stats;

/* The classification (enum ms_sampling_class, enum ms_sampling_reason)
 * and its names are ms_sampling.h's. */

/* One decided batch of a sampling merge, as the stager cut it. */
typedef struct ms_merge_batch {
	uint64_t charged_bytes; /* the batch's charged bytes when cut */
	uint32_t traces;        /* traces in it, whatever their outcome */
	uint32_t evaluated;     /* of which reached Decide */
	int reason;             /* enum ms_flush_reason */
} ms_merge_batch;
#define MS_MERGE_BATCH_RECS 64

/* Sampling figures of one merge (all zero with the pipeline disabled,
 * except class/reason). */
typedef struct ms_merge_sampling {
	enum ms_sampling_class klass;
	enum ms_sampling_reason reason;
	/* In a batch at least one link judged (every link failing open
	 * leaves its traces kept and not evaluated). */
	uint64_t traces_evaluated;
	/* Kept by the verdict, or by a batch every link failed open. */
	uint64_t traces_kept;
	uint64_t traces_dropped;     /* confirmed drops (after the guard) */
	uint64_t traces_oversized;   /* kept without evaluation */
	/* Proposed drops kept: by the guard, or because the drop set was
	 * full (drop_set_full). */
	uint64_t traces_deferred;
	uint64_t traces_unevaluated; /* kept: hot under policy "trace" */
	uint64_t rows_dropped;
	/* The staging plan: batches_planned, estimate_bytes (E of the
	 * adaptive planner) and the two limits. 0 for a merge that does not
	 * sample (not_executed), except its lossless retry, which keeps the
	 * plan of the sampling attempts before it. */
	uint64_t batches_planned;
	uint64_t batches;
	uint64_t estimate_bytes;
	uint64_t hard_limit_bytes;
	uint64_t preferred_limit_bytes;
	uint64_t peak_staged_bytes;
	uint64_t guard_probes; /* Bloom probes made by the guard */
	uint64_t guard_deferred_positive;
	uint64_t guard_deferred_budget;
	/* Proposed drops the boundary guard retained: fragments could still
	 * arrive within the grace of the segment's edge. */
	uint64_t guard_retained_edge;
	/* The drop-set ceiling of the merge in bytes (the reference's rule,
	 * pipeline_int.h), and the proposed drops it kept because the drop
	 * set was full (counted in traces_deferred; the guard never saw
	 * them). 0 for a merge that does not sample. */
	uint64_t drop_set_budget;
	uint64_t drop_set_full;
	/* Decide calls of the chain: those a failed merge made before it
	 * failed too (the chain counted them). */
	uint64_t plugin_calls;
	/* Calls of each chain link's plugin (link i of the chain), as the
	 * chain reported them call by call: every attempt's, a discarded
	 * one's too, and a failed merge's (the chain's own counters count
	 * those as well). */
	uint64_t link_calls[MS_CHAIN_MAX_LINKS];
	int64_t decide_ns; /* total time inside Decide calls */
	/* Columns (enum ms_col bits) decoded while staging: the chain's
	 * projection plus start and latency. A chain that reads no column
	 * gets its traces from their block headers; start and latency are
	 * still decoded, for the bounds check (merge.c, design 9). Bodies
	 * and other columns are only decoded to combine a fragmented kept
	 * trace, as in a lossless merge. */
	uint32_t decoded_cols;
	/* Input blocks decoded while staging (each input block once; under
	 * retain a fragmented trace's blocks are decoded whole, to be held). */
	uint64_t blocks_decoded;
	/* Retain mode: capacity of the arena holding staged payload, newly
	 * allocated (cold) or taken back from the previous batch (reused). */
	uint64_t arena_cold_bytes;
	uint64_t arena_reused_bytes;
	/* The highest charged bytes staged by every merge of the pipeline
	 * at once, seen while this merge staged. */
	uint64_t peak_concurrent_bytes;
	/* The first MS_MERGE_BATCH_RECS batches (`batches` counts all). */
	uint32_t nbatch_recs;
	ms_merge_batch batch[MS_MERGE_BATCH_RECS];
	/* Sampling attempts discarded because a part that became active
	 * during the merge may hold a dropped trace: 0, or 1 when the
	 * merge was then redone losslessly (reason lossless_retry). */
	uint32_t attempts_discarded;
	/* Checks of the attempt that counted, each 0 in a correct merge
	 * (the end-of-run gates one_decide_per_trace, plugin_bounds and
	 * no_decide_when_hot): traces handed to Decide more than once (a
	 * batch entry whose ID is not above every ID handed before: the
	 * merge stages in strictly ascending ID order); traces whose bounds
	 * in the batch (min_start_ns, max_end_ns) differ from the bounds
	 * rebuilt from the rows' own decoded timestamps over every fragment
	 * of every input (the batch is built from the block headers); and
	 * traces handed to Decide whose rebuilt latest start is past the
	 * merge's frontier (now - grace), under either policy. */
	uint64_t decide_dup_traces;
	uint64_t bounds_mismatch;
	uint64_t hot_decided;
} ms_merge_sampling;

typedef struct ms_merge_result {
	uint64_t seq;
	char lane[16];
	unsigned flags;
	const uint64_t *inputs; /* borrowed from req->inputs */
	size_t ninputs;
	uint64_t output_id;    /* 0 if nothing was published */
	uint64_t epoch_before; /* epoch of the pinned view */
	uint64_t epoch_after;  /* epoch after publication */

	/* Input figures, from the inputs' metadata. */
	uint64_t input_compressed_bytes;
	uint64_t input_uncompressed_bytes;
	uint32_t max_input_depth;
	int64_t input_min_ts, input_max_ts;

	/* Core merge figures. */
	uint64_t rows_in, rows_out;
	uint64_t blocks_in;
	uint64_t blocks_out;
	uint64_t blocks_raw;       /* copied without decoding */
	uint64_t blocks_reencoded; /* input blocks decoded and rewritten */
	uint64_t traces_in;        /* distinct trace IDs over the inputs */
	uint64_t traces_out;
	uint64_t traces_fragmented; /* trace IDs present in >= 2 inputs */
	ms_part_meta output;        /* core output metadata (zero if none) */
	ms_merge_index_stats index[MS_KIND_COUNT]; /* [LATENCY], [START_TIME] */

	/* Resources. */
	int64_t started_mono_ns; /* CLOCK_MONOTONIC at entry */
	int64_t wall_ns;
	int64_t cpu_ns; /* CLOCK_THREAD_CPUTIME_ID of the merge */
	int64_t stage_wall_ns[MS_MERGE_STAGE_COUNT];
	uint64_t alloc_bytes; /* through the merge's own ms_mem */
	uint64_t alloc_count;
	int64_t peak_live;
	uint64_t bytes_read;
	uint64_t bytes_written;
	uint64_t fsyncs;

	ms_merge_sampling sampling;

	/* Outcome: err is 0 or a negative ms_err; stage is where it failed. */
	int err;
	enum ms_merge_stage err_stage;
	ms_errbuf error;
	/* On a failure of the input's own making (the output writer refused
	 * a trace of it: it will fail the same way every time): that input's
	 * ID, also named in error; else 0. */
	uint64_t err_input;
} ms_merge_result;

/*
 * Run one merge described by req on the calling thread. res is always
 * filled (also on failure). Returns 0 or the negative ms_err also stored in
 * res->err; eb (may be NULL) gets the same message.
 */
int ms_merge_execute(const ms_merge_req *req, ms_merge_result *res,
                     ms_errbuf *eb);

/* Finalize: ms_merge_execute with MS_MERGE_FINALIZE set and lane
 * "finalize" unless req->lane says otherwise. */
int ms_merge_finalize(const ms_merge_req *req, ms_merge_result *res,
                      ms_errbuf *eb);

#endif
