/*
 * ms_engine.h - the merge engine of one shard: the dispatcher that runs the
 * picker, the fast/slow/finalize lanes and their worker threads, the
 * epoch-aware merge-idle barrier, the dispatch hook, failure backoff and
 * part quarantine, and the forced finalize merge.
 *
 * The engine decides what to merge and when; ms_merge_execute (ms_merge.h)
 * does each merge on a worker thread. A caller publishes parts into the
 * shard (ms_shard_introduce) and then calls ms_engine_trigger; the engine
 * runs picker passes on the new epoch, dispatches what they select, and
 * re-triggers itself whenever a merge completes, until the picker finds
 * nothing: that is merge-idle, which ms_engine_wait_idle waits for.
 *
 * Lanes: a selection whose inputs total less than
 * max(32 MiB, mem_limit / 16) compressed bytes runs on a fast worker
 * (max(1, cpus / 2) of them), anything larger on the one slow worker; a
 * finalize merge runs on lane "finalize", served by the first fast
 * worker: the thread that ran most of the day's merges, so the memory its
 * allocator kept from them serves the finalize instead of staying
 * resident beside it (the slow worker runs the rare large merges). No
 * more fast and slow merges run at once than there are CPUs (the
 * reference's process-wide limit: with one CPU the two lanes take turns);
 * the finalize is not counted. In serial mode one worker serves every
 * lane: exactly one merge at a time.
 *
 * Failures: a merge that fails is retried after a backoff (1, 2, 4 ... s);
 * a merge that succeeds, on any lane, ends the backoff and restarts its
 * steps, as in the reference;
 * an input that fails verification repeatedly, or whose trace the output
 * writer refuses (ms_merge_result.err_input), is quarantined. A failure
 * that names no bad input and comes from the file system (MS_ERR_IO,
 * MS_ERR_NOSPACE: ENOSPC, EDQUOT, EFBIG, EIO, EROFS ...), or from the
 * process being out of file descriptors (MS_ERR_LIMIT: EMFILE, ENFILE)
 * or of memory (MS_ERR_NOMEM; neither is ever blamed on an input), or
 * data refused (MS_ERR_INVAL, MS_ERR_CORRUPT, MS_ERR_FORMAT,
 * MS_ERR_RANGE), is one
 * that retrying rarely fixes: after fatal_after of them in a row the engine
 * stops merging for good (MS_EV_ENGINE_FAILED; ms_engine_wait_idle and
 * ms_engine_failed return the error). Its inputs stay in place.
 *
 * The dispatch hook sees every selection before it runs and may hold it
 * (return MS_DISPATCH_HOLD, later ms_engine_release): this is the barrier
 * of the replay controller and the TUI. A held selection keeps its parts
 * claimed and keeps the engine from being idle; merges already released
 * keep running on their lanes.
 *
 * Ownership: ms_engine is a heap object owned by the caller of
 * ms_engine_open. The shard, clock, allocator, I/O counters and pipeline
 * named in the options are borrowed and must outlive the engine. Structs passed
 * to callbacks (and every pointer in them) are owned by the engine and valid
 * only during the callback. Threads: every function may be called from any
 * thread except from inside an engine callback, where only ms_engine_release,
 * ms_engine_trigger and ms_engine_get_stats are allowed. The callbacks run
 * on the engine's threads, whose stacks are MS_THREAD_STACK bytes
 * (ms_thread.h): a callback needing more hands its work to a thread of its
 * own.
 */
#ifndef MS_ENGINE_H
#define MS_ENGINE_H

#include "ms_clock.h"
#include "ms_err.h"
#include "ms_mem.h"
#include "ms_merge.h"
#include "ms_part.h"
#include "ms_picker.h"
#include "ms_shard.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ms_engine ms_engine;

enum ms_lane_kind {
	MS_LANE_KIND_FAST = 0,
	MS_LANE_KIND_SLOW = 1,
	MS_LANE_KIND_FINALIZE = 2,
	MS_LANE_KIND_COUNT = 3,
};

/* MS_LANE_FAST, MS_LANE_SLOW, MS_LANE_FINALIZE ("fast", ...). */
const char *ms_lane_name(enum ms_lane_kind k);

/* The small-merge threshold for a process with mem_limit bytes (0: none
 * known): max(32 MiB, mem_limit / 16), so 32 MiB without a limit, the
 * public engine's default. It splits the lanes and bounds the staging
 * ceiling (ms_staging_hard_ceiling); lane.c is its one place. */
uint64_t ms_lane_threshold(uint64_t mem_limit);

/* The lane of a merge of `bytes` compressed input bytes: fast below
 * ms_lane_threshold(mem_limit), else slow. */
enum ms_lane_kind ms_lane_for(uint64_t bytes, uint64_t mem_limit);

/* One input of a pending selection. */
typedef struct ms_dispatch_input {
	uint64_t id;
	uint64_t bytes;              /* compressed core bytes */
	uint64_t uncompressed_bytes; /* uncompressed span bytes */
	uint64_t rows;
	uint64_t blocks;
	uint32_t depth;
	int64_t min_ts, max_ts;
	bool mature; /* max_ts <= frontier */
} ms_dispatch_input;

/* A selection about to be dispatched, with everything the hook, the event
 * recorder and the TUI show. */
typedef struct ms_dispatch {
	uint64_t seq; /* 1, 2, 3 ... per engine, in pick order */
	enum ms_lane_kind lane;
	bool finalize;       /* forced by ms_engine_finalize */
	uint64_t output_id;  /* reserved for the output */
	uint64_t epoch;      /* shard epoch the picker ran on */
	uint64_t pass;       /* picker pass within that run (1-based) */
	int64_t now_ns;      /* clock at pick time */
	int64_t frontier_ns; /* now - grace */
	size_t ninputs;
	const ms_dispatch_input *inputs; /* in picker (window) order */
	uint64_t bytes;                  /* sum of input bytes */
	uint64_t rows;                   /* sum of input rows */
	uint32_t min_depth, max_depth;
	int64_t min_ts, max_ts; /* envelope of the inputs */
	size_t mature_parts, hot_parts;
	uint64_t mature_rows, hot_rows;
	double m;             /* picker multiple (0 for finalize) */
	uint64_t max_fan_out; /* fan-out limit the picker used */
	/* Predicted sampling decision (ms_sampling_predict over the
	 * inputs, the frontier and the engine's pipeline and segment). */
	enum ms_sampling_class predict_class;
	enum ms_sampling_reason predict_reason;
	/* The staging plan the merge will make when it samples (the
	 * prediction is `executed`; all 0 otherwise): the estimate of its
	 * staged bytes, the planned decision batches and the preferred
	 * limit of a batch. */
	uint64_t plan_estimate, plan_batches, plan_preferred;
} ms_dispatch;

static inline bool
ms_dispatch_mature_containing(const ms_dispatch *d)
{
	return d->mature_parts > 0;
}

static inline bool
ms_dispatch_hot(const ms_dispatch *d)
{
	return d->hot_parts > 0;
}

/* What a dispatch hook answers. */
enum ms_dispatch_verdict {
	MS_DISPATCH_GO = 0,   /* run it now */
	MS_DISPATCH_HOLD = 1, /* wait for ms_engine_release(seq) */
};

enum ms_engine_event_type {
	MS_EV_MERGE_DONE = 1,   /* dispatch + result */
	MS_EV_MERGE_FAILED = 2, /* dispatch + result + error + backoff_ms */
	MS_EV_QUARANTINED = 3,  /* part_id + error of its last failure */
	MS_EV_DROPPED = 4,      /* dispatch released with run = false */
	MS_EV_PICK_FAILED = 5,  /* error + backoff_ms (e.g. no memory) */
	/* dispatch + err + error: the merge failed fatal_after times in a
	 * row with a file-system error; the engine has stopped merging. */
	MS_EV_ENGINE_FAILED = 6,
};

typedef struct ms_engine_event {
	enum ms_engine_event_type type;
	const ms_dispatch *dispatch;   /* NULL for QUARANTINED, PICK_FAILED */
	const ms_merge_result *result; /* DONE and FAILED only */
	uint32_t worker;     /* DONE and FAILED: the worker within its lane
	                        (fast 0..n-1; slow and serial 0) */
	int err;             /* 0 or a negative ms_err */
	const char *error;   /* "" when err == 0 */
	uint64_t part_id;    /* QUARANTINED */
	uint32_t backoff_ms; /* FAILED, PICK_FAILED */
} ms_engine_event;

typedef struct ms_engine_opts {
	ms_shard *shard;       /* required, borrowed, opened by the caller */
	const ms_clock *clock; /* borrowed; NULL = the real clock */
	ms_mem *mem;           /* borrowed; parent of every merge's ms_mem */
	ms_io *io;             /* borrowed; engine-wide I/O counters */
	ms_picker_opts picker; /* zero = 15 parts, 1.7 */
	uint64_t max_fan_out;  /* configured max (bytes); 0 = no limit */
	/* Free bytes on the shard's disk; NULL = statvfs of the shard dir.
	 * The picker's fan-out is min(free - reserved, max_fan_out), where
	 * reserved sums the input bytes of the running merges (a merge
	 * reserves them when a worker starts it, if free has room for them
	 * beside the others; a merge waiting in its hook, held or queued
	 * reserves nothing). The finalize is skipped when free - reserved
	 * is below its selection's bytes (ms_engine_finalize). */
	uint64_t (*free_disk)(void *arg);
	void *free_disk_arg;
	uint64_t mem_limit;        /* 0 = none known; the lane threshold */
	unsigned cpus;             /* 0 = online CPUs; max(1, cpus/2) fast */
	bool serial;               /* one merge at a time, one worker */
	uint32_t backoff_base_ms;  /* 0 = 1000: 1, 2, 4 ... steps */
	uint32_t backoff_max_ms;   /* 0 = 60000 */
	uint32_t quarantine_after; /* 0 = 3 consecutive read failures */
	/* 0 = 3: merges failing in a row with an error no input is blamed
	 * for before the engine stops (see Failures). */
	uint32_t fatal_after;
	const struct ms_pipeline *pipeline; /* NULL = disabled */
	enum ms_staging_mode staging;       /* sampling merges; 0 = retain */
	/* The segment the shard holds, inclusive (ms_merge_req); both 0:
	 * unknown, and then no merge samples (guard_unavailable): no drop
	 * can be proved clear of the segment's edge; with a pipeline no
	 * finalize runs either (ms_engine_finalize). */
	int64_t segment_min_ns, segment_max_ns;
	int zstd_level;                    /* 0 = writer default */
	/* Passed to every merge (ms_merge_req.on_drop): each confirmed dropped
	 * trace, on the merging thread. NULL = none. */
	void (*on_drop)(void *arg, const uint8_t *tid, uint32_t tid_len,
	                uint64_t rows);
	void *drop_arg;

	/* Called before every dispatch on the engine's dispatcher thread,
	 * with no engine lock held, in sequence order. It may block (merges
	 * already released keep running; later selections wait for it) or
	 * return MS_DISPATCH_HOLD and release later. NULL = always GO. */
	enum ms_dispatch_verdict (*dispatch_hook)(void *arg,
	                                          const ms_dispatch *d);
	void *dispatch_arg;
	/* Completion, failure, quarantine and drop events, one at a time
	 * (serialized), on the thread where they happen. A merge counts as
	 * running until its event callback has returned. NULL = none. */
	void (*event)(void *arg, const ms_engine_event *ev);
	void *event_arg;
	/* Resume where an earlier engine on this shard's content stood
	 * (ms_engine_save, ms_checkpoint.h): its selection sequence,
	 * fingerprint, counters, quarantine, failure counts and backoff
	 * step. Borrowed for the call to ms_engine_open only (copied).
	 * NULL = a fresh engine. */
	const struct ms_engine_state *resume;
} ms_engine_opts;

/* The fast merge workers an engine starts for `cpus` CPUs (not serial):
 * max(1, cpus / 2); beside them one slow worker. */
unsigned ms_engine_fast_workers(unsigned cpus);

/*
 * Start an engine over opts->shard: spawns the dispatcher and the workers.
 * It does nothing until the first trigger. Errors: MS_ERR_INVAL (no shard,
 * bad picker options), MS_ERR_NOMEM, MS_ERR_IO (thread creation).
 */
int ms_engine_open(ms_engine **out, const ms_engine_opts *opts, ms_errbuf *eb);
/*
 * Stop: running merges finish (their events are delivered), queued and
 * held selections are discarded without running (their parts stay active),
 * threads are joined. A dispatch hook that is blocking must return first.
 */
void ms_engine_close(ms_engine *e);

/* Ask for a picker run on the shard's current epoch. Never blocks;
 * triggers that arrive before the run starts coalesce into one. */
void ms_engine_trigger(ms_engine *e);
/* The same for a caller that calls ms_engine_wait_idle next: the
 * dispatcher is not woken, and the wait runs the picker on the caller's
 * thread when no selection is listed (a run then depends on the shard's
 * state alone), so a publication that selects nothing is idle without a
 * hand-off between threads. With selections listed, or a run that fails,
 * the dispatcher runs it as after ms_engine_trigger. */
void ms_engine_trigger_for_wait(ms_engine *e);

/*
 * Wait for merge-idle: the picker ran on the shard's current epoch and
 * found nothing, no merge finished since, and nothing is pending a hook,
 * held, queued, running, claimed or backing off. An epoch the engine was
 * not told about (publication without ms_engine_trigger) triggers a run
 * here. Waits on a condition variable; timeout_ns < 0 waits forever.
 * 0, MS_ERR_TIMEOUT, MS_ERR_CANCELED (closing), or the error of an engine
 * that stopped after repeated failures (ms_engine_failed says which).
 */
int ms_engine_wait_idle(ms_engine *e, int64_t timeout_ns);
/* 0 while the engine works; after it stopped on repeated file-system
 * failures, that error, with "merge #N (lane, K inputs -> part ID): the
 * merge's message; ..." in eb. */
int ms_engine_failed(ms_engine *e, ms_errbuf *eb);
/* The same predicate, without waiting. */
bool ms_engine_is_idle(ms_engine *e);

/*
 * Release held dispatch `seq`: run it (run = true) or drop it (run =
 * false: its parts are unclaimed, an MS_EV_DROPPED event is sent, and they
 * are picked again only on a later trigger). Calling it from the hook
 * before it returns HOLD is allowed. MS_ERR_NOTFOUND if no such pending
 * dispatch, MS_ERR_STATE if it is already queued or running.
 */
int ms_engine_release(ms_engine *e, uint64_t seq, bool run);

/*
 * Finalize: one forced merge of every active, unclaimed, unquarantined part
 * whose max timestamp is at or before the frontier, bypassing the picker,
 * on lane "finalize" (through the dispatch hook like any dispatch). A
 * single mature part is rewritten alone (it may still need sampling); with
 * none, nothing is dispatched and *seq = 0. As in the reference, a
 * finalize is skipped, for the first of these that holds, in the
 * reference's order: no pipeline or no sampler in it; the free disk
 * (free_disk less the running merges' reservations) below the
 * selection's bytes; a fragment guard that cannot be set up (no segment
 * known, or one with no interior once the grace is off both edges: the
 * sampling rule's guard_unavailable). Skipped: nothing is dispatched,
 * *seq = 0, returns 0, and ms_engine_stats counts it with its reason.
 * Returns once dispatched; wait for completion with ms_engine_wait_idle.
 */
int ms_engine_finalize(ms_engine *e, uint64_t *seq, ms_errbuf *eb);

typedef struct ms_engine_stats {
	uint64_t picked_epoch; /* epoch of the last picker run */
	uint64_t picker_runs;  /* runs (each of one or more passes) */
	uint64_t selections;   /* dispatches created (incl. finalize) */
	uint64_t merges_done;
	uint64_t merges_failed;
	uint64_t dropped;
	uint64_t lane_merges[MS_LANE_KIND_COUNT]; /* completed, per lane */
	/* ms_engine_finalize calls that dispatched nothing because the
	 * finalize could not sample or had no disk headroom (since
	 * ms_engine_open; not saved by ms_engine_save), and of the last:
	 * the sampling rule's reason (pipeline_disabled, no_sampler,
	 * guard_unavailable), or MS_SREASON_NONE with finalize_skip_need
	 * > 0 for the disk: free bytes (less the running merges'
	 * reservations) finalize_skip_free below the selection's bytes
	 * finalize_skip_need. All zero before the first skip. */
	uint64_t finalize_skipped;
	enum ms_sampling_reason finalize_skip_reason;
	uint64_t finalize_skip_need, finalize_skip_free;
	size_t pending_hook, held, queued, running;
	size_t claimed_parts;
	uint64_t reserved_bytes;
	size_t quarantined;
	bool trigger_pending;
	bool backing_off;
	uint32_t backoff_ms;  /* current step (0 = none) */
	bool failed;          /* stopped (ms_engine_failed) */
	uint64_t fingerprint; /* ms_pick_fp_add over every selection */
	unsigned fast_workers, slow_workers;
	bool serial;
} ms_engine_stats;

void ms_engine_get_stats(ms_engine *e, ms_engine_stats *st);

/* A part's consecutive failed merges (not yet quarantined). */
typedef struct ms_engine_failcount {
	uint64_t id;
	uint32_t n;
} ms_engine_failcount;

/*
 * The decision state of an engine at merge-idle: everything a later
 * engine needs to pick exactly what this one would pick next, given the
 * same shard content (ms_engine_opts.resume). Plugins keep no decision
 * state across merges, so this and the shard's active parts are all of it.
 * The arrays are heap memory owned by the struct (ms_engine_state_release).
 */
typedef struct ms_engine_state {
	uint64_t seq;         /* last dispatch sequence number handed out */
	uint64_t fingerprint; /* ms_engine_stats.fingerprint */
	uint64_t picker_runs, selections, merges_done, merges_failed, dropped;
	uint64_t lane_merges[MS_LANE_KIND_COUNT];
	uint32_t backoff_ms; /* last backoff step (0 after a success) */
	uint32_t disk_fails; /* unblamed failures in a row (file system,
	                      * descriptors, memory) */
	uint64_t *quarantined; /* ascending */
	size_t nquarantined;
	ms_engine_failcount *fails;
	size_t nfails;
} ms_engine_state;

/*
 * Save the engine's decision state into *out (initialized by the call).
 * Only at merge-idle (ms_engine_is_idle): otherwise MS_ERR_STATE, naming
 * what is in flight. An engine that stopped on repeated failures is
 * MS_ERR_STATE too. MS_ERR_NOMEM. On failure *out holds nothing.
 */
int ms_engine_save(ms_engine *e, ms_engine_state *out, ms_errbuf *eb);
/* Free the arrays of st and zero it (NULL or zeroed: no-op). */
void ms_engine_state_release(ms_engine_state *st);
/* Copy up to cap quarantined part IDs (ascending); returns how many are
 * quarantined in all. */
size_t ms_engine_quarantined(ms_engine *e, uint64_t *ids, size_t cap);

#endif
