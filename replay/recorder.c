/*
 * recorder.c - the SQLite event log: the recorder that writes one run's
 * events, and the reader (ms_evdb) that exports, reports and the TUI use.
 *
 * Both sides are driven by one set of column tables (below, over the
 * mechanism in fixtures/ms_sqltab.h that the fixture manifest uses too): a
 * table's CREATE, INSERT and SELECT statements are generated from them, so
 * a struct field and its column cannot drift apart. replay/SCHEMA.md shows
 * the resulting schema; a change to any table bumps MS_EV_SCHEMA_VERSION.
 *
 * Design (recorder):
 *  0. The run's threads do no SQLite work for the events of a run (pub,
 *     merge, part, sample, plugin log lines and counts): a call copies its
 *     event whole (a merge with its inputs; every string is an array inside
 *     the struct) into the queue and returns. The recorder's own thread
 *     (the drain) moves the queue into SQLite in the order the calls were
 *     accepted. Every other call (run begin and end, staging, phase, gate,
 *     reconcile, plugin stat, flush, the counts, mark, rollback, close)
 *     first drains the queue on the caller's thread, under the connection
 *     lock, then works as before: what it reads or writes comes after
 *     every event accepted before it.
 *  1. Every accepted event is in the queue, in the open transaction of a
 *     drain, or committed: a drain commits what it moved before it lets
 *     the connection go, so outside a drain no transaction is open.
 *  2. The drain thread drains when batch_events events wait, when the
 *     oldest has waited batch_ms, or when a caller waits for room; a drain
 *     commits after every batch_events events and at its end. Calls that
 *     commit at once (run_begin/staged/phase/gate/recon/plugin_stat/
 *     run_end, flush, close) drain first. So a SIGKILL loses at most the
 *     events of the last batch_ms (and of a drain under way), and a clean
 *     close loses none.
 *  3. The database is in WAL mode with synchronous=NORMAL: a commit appends
 *     to the WAL with write(2) and needs no fsync, which is what makes a
 *     commit every 100 ms cheap. A committed transaction survives the death
 *     of the process (the kernel has the bytes); only a power loss or
 *     kernel crash can take back the last commits. That is the trade-off we
 *     accept for an event log: recording stays well under the run's cost.
 *  4. All use of the connection happens under r->lock; the queue is under
 *     r->qlock, taken after r->lock when both are held. r->dead is written
 *     under both, so either lock reads it.
 *  5. The first SQLite failure (an insert, a commit, a drain's), or an
 *     event that cannot be accepted for want of memory for its copy
 *     (after the events accepted before it are committed), makes the
 *     recorder failed for good: the open transaction is rolled back, the
 *     events still queued are dropped, nothing is sent to SQLite again,
 *     and every later call returns that first error ("event database PATH:
 *     commit: database or disk is full"), which ms_rec_failed also
 *     reports. A queued event is accepted before it reaches SQLite, so a
 *     caller learns of a failure at its next call, or at flush or close.
 *     A full disk costs one failed statement, never a loop.
 *  6. The file is never an event log without its run: the schema and the
 *     run record (ms_rec_opts.run) are one transaction, the first, made
 *     in a rollback journal before the switch to WAL (create_locked).
 *  7. The queue's memory is bounded (ms_rec_opts.queue_bytes, counting
 *     events queued and those a drain is moving): a call that finds it
 *     full wakes the drain and waits for room.
 *  8. busy_ns is the recording's cost to the run: the callers' time in
 *     the queue (copying, and waiting for room: wall time, as the caller
 *     is held up for it) plus the time of every section holding the
 *     connection (drains, the calls that commit at once): the CPU time
 *     of the thread that held it (CLOCK_THREAD_CPUTIME_ID, read at the
 *     start and the end of the section), not its wall time, which on
 *     cores shared with the run counts the time the run's own threads
 *     preempted the drain. A commit needs no fsync (design 3): its
 *     write(2) is CPU time too.
 * States: open (timer running) -> failed (first SQLite error) -> closed
 * (ms_rec_close).
 */
#include "ev_private.h"
#include "ms_clock.h"
#include "ms_enum.h"
#include "ms_rusage.h"
#include "ms_sqltab.h"
#include "ms_thread.h"
#include "ms_pipeline.h"
#include "ms_replay_events.h"

#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <limits.h>
#include <unistd.h>

const double ms_ev_hist_bounds_ms[MS_EV_HIST_BUCKETS - 1] = {
	0.25, 0.5, 1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000,
};

unsigned
ms_ev_hist_bucket(int64_t ns)
{
	for (unsigned i = 0; i < MS_EV_HIST_BUCKETS - 1; i++)
		if ((double)ns <= ms_ev_hist_bounds_ms[i] * 1e6)
			return i;
	return MS_EV_HIST_BUCKETS - 1;
}

static const char *const phase_names[MS_EV_PHASE_ROWS] = {
	[MS_EV_PHASE_PRIMARY] = "primary",
	[MS_EV_PHASE_COOLDOWN] = "cooldown",
	[MS_EV_PHASE_STAGING] = "staging",
};
static const char *const part_what_names[MS_EV_PART_KIND_COUNT] = {
	[MS_EV_PART_INTRODUCED] = "introduced",
	[MS_EV_PART_REMOVED] = "removed",
	[MS_EV_PART_DELETED] = "deleted",
};

const char *
ms_ev_phase_name(enum ms_ev_phase_id p)
{
	return MS_ENUM_NAME(phase_names, p, "?");
}

const char *
ms_ev_class_name(enum ms_sampling_class c)
{
	return (unsigned)c < MS_SAMPLING_CLASS_COUNT ? ms_sampling_class_name(c)
	                                             : "?";
}

const char *
ms_ev_reason_name(enum ms_sampling_reason r)
{
	return (unsigned)r < MS_SREASON_COUNT ? ms_sampling_reason_name(r)
	                                      : "?";
}

const char *
ms_ev_part_kind_name(enum ms_ev_part_kind k)
{
	return MS_ENUM_NAME(part_what_names, k, "?");
}

int
ms_ev_class_parse(const char *s)
{
	return ms_sampling_class_parse(s);
}

int
ms_ev_reason_parse(const char *s)
{
	return ms_sampling_reason_parse(s);
}

/* ---------------------------------------------------------------------- */
/* Column tables (the mechanism is fixtures/ms_sqltab.h, shared with the
 * fixture manifest; col, ev_table, COL and C_* are its names here). */

typedef ms_sqlcol col;
typedef ms_sqltab ev_table;
#define COL(st, n, t, f) MS_SQLCOL(st, n, t, f)

static const char *
class_name(int v)
{
	return ms_ev_class_name((enum ms_sampling_class)v);
}

static const char *
reason_name(int v)
{
	return ms_ev_reason_name((enum ms_sampling_reason)v);
}

static const char *
phase_name(int v)
{
	return ms_ev_phase_name((enum ms_ev_phase_id)v);
}

static int
phase_index(const char *s)
{
	return MS_ENUM_PARSE(phase_names, s);
}

static const char *
what_name(int v)
{
	return ms_ev_part_kind_name((enum ms_ev_part_kind)v);
}

static int
what_index(const char *s)
{
	return MS_ENUM_PARSE(part_what_names, s);
}

/* ms_flush_reason_name's names, parsed back on read. */
static const char *const flush_names[] = {
	[MS_FLUSH_BYTES] = "bytes",
	[MS_FLUSH_TRACES] = "traces",
	[MS_FLUSH_OVERSIZED] = "oversized",
	[MS_FLUSH_FINAL] = "final",
};

static const char *
flush_name(int v)
{
	return MS_ENUM_NAME(flush_names, v, "?");
}

static int
flush_index(const char *s)
{
	return MS_ENUM_PARSE(flush_names, s);
}

static const ms_sqltype class_type = { MS_SQLT_ENUM, class_name,
	                               ms_ev_class_parse, NULL, NULL };
static const ms_sqltype reason_type = { MS_SQLT_ENUM, reason_name,
	                                ms_ev_reason_parse, NULL, NULL };
static const ms_sqltype phase_type = { MS_SQLT_ENUM, phase_name, phase_index,
	                               NULL, NULL };
static const ms_sqltype what_type = { MS_SQLT_ENUM, what_name, what_index, NULL,
	                              NULL };
static const char *const level_names[] = {
	[MS_PLUGIN_LOG_ERROR] = "error",
	[MS_PLUGIN_LOG_WARN] = "warn",
	[MS_PLUGIN_LOG_INFO] = "info",
	[MS_PLUGIN_LOG_DEBUG] = "debug",
};

const char *
ms_ev_log_level_name(int level)
{
	return MS_ENUM_NAME(level_names, level, "?");
}

static int
level_index(const char *s)
{
	return MS_ENUM_PARSE(level_names, s);
}

static const ms_sqltype level_type = { MS_SQLT_ENUM, ms_ev_log_level_name,
	                               level_index, NULL, NULL };
static const ms_sqltype flush_type = { MS_SQLT_ENUM, flush_name, flush_index,
	                               NULL, NULL };

#define C_U64 (&ms_sqlt_u64)        /* uint64_t, its int64 bit pattern */
#define C_I64 (&ms_sqlt_i64)        /* int64_t */
#define C_U32 (&ms_sqlt_u32)        /* uint32_t */
#define C_INT (&ms_sqlt_int)        /* int */
#define C_BOOL (&ms_sqlt_bool)      /* bool */
#define C_STR (&ms_sqlt_str)        /* char[size], NUL-terminated */
#define C_SUM (&ms_sqlt_sum)        /* an ms_ledger's sum, 32 hex digits */
#define C_F64 (&ms_sqlt_f64)        /* double */
#define C_CLASS (&class_type)       /* enum ms_sampling_class, its name */
#define C_REASON (&reason_type)     /* enum ms_sampling_reason, its name */
#define C_PHASE (&phase_type)       /* enum ms_ev_phase_id, its name */
#define C_WHAT (&what_type)         /* enum ms_ev_part_kind, its name */
#define C_FLUSH (&flush_type)       /* enum ms_flush_reason, its name */
#define C_LEVEL (&level_type)       /* enum ms_plugin_log_level, its name */

#define RUN(n, t, f) COL(ms_ev_run, n, t, f)
static const col run_cols[] = {
	RUN("version", C_STR, version),
	RUN("started_unix_ns", C_I64, started_unix_ns),
	RUN("fixture_dir", C_STR, fixture_dir),
	RUN("fixture_preset", C_STR, fixture_preset),
	RUN("fixture_seed", C_U64, fixture_seed),
	RUN("fixture_hash", C_STR, fixture_hash),
	RUN("fixture_parts_hash", C_STR, fixture_parts_hash),
	RUN("variant", C_STR, variant),
	RUN("chain", C_STR, chain),
	RUN("grace_policy", C_STR, grace_policy),
	RUN("staging", C_STR, staging),
	RUN("serial", C_BOOL, serial),
	RUN("allow_fail_open", C_BOOL, allow_fail_open),
	RUN("detected_cpus", C_U32, detected_cpus),
	RUN("detected_mem_bytes", C_U64, detected_mem_bytes),
	RUN("detected_disk_free_bytes", C_U64, detected_disk_free_bytes),
	RUN("profile", C_STR, profile),
	RUN("emulated_cpus", C_U32, emulated_cpus),
	RUN("emulated_mem_bytes", C_U64, emulated_mem_bytes),
	RUN("fast_workers", C_U32, fast_workers),
	RUN("slow_workers", C_U32, slow_workers),
	RUN("hostname", C_STR, hostname),
	RUN("kernel", C_STR, kernel),
	RUN("filesystem", C_STR, filesystem),
	RUN("clone_method", C_STR, clone_method),
	RUN("binary_checksum", C_STR, binary_checksum),
	RUN("git_commit", C_STR, git_commit),
	RUN("compiler", C_STR, compiler),
	RUN("cpu_model", C_STR, cpu_model),
	RUN("cache_label", C_STR, cache_label),
	RUN("input_core_rows", C_U64, input_ledger.kind[MS_KIND_CORE].rows),
	RUN("input_core_sum", C_SUM, input_ledger.kind[MS_KIND_CORE]),
	RUN("input_latency_rows", C_U64,
	    input_ledger.kind[MS_KIND_LATENCY].rows),
	RUN("input_latency_sum", C_SUM, input_ledger.kind[MS_KIND_LATENCY]),
	RUN("input_start_time_rows", C_U64,
	    input_ledger.kind[MS_KIND_START_TIME].rows),
	RUN("input_start_time_sum", C_SUM,
	    input_ledger.kind[MS_KIND_START_TIME]),
	RUN("plugin_host", C_STR, plugin_host),
	RUN("device", C_STR, device),
	RUN("limits_mode", C_STR, limits_mode),
	RUN("limits_why", C_STR, limits_why),
	RUN("pids_max", C_U32, pids_max),
};

#define END(n, t, f) COL(ms_ev_run_end, n, t, f)
static const col end_cols[] = {
	END("status", C_STR, status),
	END("ended_unix_ns", C_I64, ended_unix_ns),
	END("wall_ns", C_I64, wall_ns),
	END("publications", C_U64, publications),
	END("merges_completed", C_U64, merges_completed),
	END("selection_fp", C_STR, selection_fp),
	END("final_core_rows", C_U64, final_ledger.kind[MS_KIND_CORE].rows),
	END("final_core_sum", C_SUM, final_ledger.kind[MS_KIND_CORE]),
	END("final_latency_rows", C_U64,
	    final_ledger.kind[MS_KIND_LATENCY].rows),
	END("final_latency_sum", C_SUM, final_ledger.kind[MS_KIND_LATENCY]),
	END("final_start_time_rows", C_U64,
	    final_ledger.kind[MS_KIND_START_TIME].rows),
	END("final_start_time_sum", C_SUM,
	    final_ledger.kind[MS_KIND_START_TIME]),
	END("expected_core_rows", C_U64,
	    expected_ledger.kind[MS_KIND_CORE].rows),
	END("expected_core_sum", C_SUM, expected_ledger.kind[MS_KIND_CORE]),
	END("expected_latency_rows", C_U64,
	    expected_ledger.kind[MS_KIND_LATENCY].rows),
	END("expected_latency_sum", C_SUM,
	    expected_ledger.kind[MS_KIND_LATENCY]),
	END("expected_start_time_rows", C_U64,
	    expected_ledger.kind[MS_KIND_START_TIME].rows),
	END("expected_start_time_sum", C_SUM,
	    expected_ledger.kind[MS_KIND_START_TIME]),
	END("record_ns", C_I64, record_ns),
	END("error", C_STR, error),
	END("cgroup_peak_bytes", C_U64, cgroup_peak_bytes),
	END("cgroup_nr_throttled", C_U64, cgroup_nr_throttled),
	END("cgroup_throttled_ns", C_I64, cgroup_throttled_ns),
	END("cgroup_oom_kills", C_U64, cgroup_oom_kills),
	END("cgroup_limit_hits", C_U64, cgroup_limit_hits),
};

#define PLG(n, t, f) COL(ms_ev_plugin, n, t, f)
static const col plugin_cols[] = {
	PLG("name", C_STR, name),
	PLG("path", C_STR, path),
	PLG("config", C_STR, config),
	PLG("checksum", C_STR, checksum),
};

#define PUB(n, t, f) COL(ms_ev_pub, n, t, f)
static const col pub_cols[] = {
	PUB("seq", C_U64, seq),
	PUB("logical_ns", C_I64, logical_ns),
	PUB("wall_ns", C_I64, wall_ns),
	PUB("part_id", C_U64, part_id),
	PUB("bytes", C_U64, bytes),
	PUB("rows", C_U64, rows),
	PUB("min_ts", C_I64, min_ts),
	PUB("max_ts", C_I64, max_ts),
	PUB("epoch", C_U64, epoch),
	PUB("publish_ns", C_I64, publish_ns),
	PUB("idle_ns", C_I64, idle_ns),
	PUB("merges", C_U64, merges),
	PUB("inv_parts", C_U64, inv_parts),
	PUB("inv_bytes", C_U64, inv_bytes),
};

#define MRG(n, t, f) COL(ms_ev_merge, n, t, f)
#define MIDX(p, k)                                                             \
	MRG(p "_rows_in", C_U64, index[k].rows_in),                            \
	        MRG(p "_rows_out", C_U64, index[k].rows_out),                  \
	        MRG(p "_rows_pruned", C_U64, index[k].rows_pruned),            \
	        MRG(p "_blocks_in", C_U64, index[k].blocks_in),                \
	        MRG(p "_blocks_out", C_U64, index[k].blocks_out),              \
	        MRG(p "_bytes_in", C_U64, index[k].bytes_in),                  \
	        MRG(p "_bytes_out", C_U64, index[k].bytes_out),                \
	        MRG(p "_wall_ns", C_I64, index[k].wall_ns),                    \
	        MRG(p "_done", C_BOOL, index[k].done)
static const col merge_cols[] = {
	MRG("seq", C_U64, seq),
	MRG("phase", C_PHASE, phase),
	MRG("lane", C_STR, lane),
	MRG("worker", C_U32, worker),
	MRG("logical_ns", C_I64, logical_ns),
	MRG("frontier_ns", C_I64, frontier_ns),
	MRG("epoch_before", C_U64, epoch_before),
	MRG("pass", C_U64, pass),
	MRG("m", C_F64, m),
	MRG("max_fan_out", C_U64, max_fan_out),
	MRG("ninputs", C_U64, ninputs),
	MRG("input_bytes", C_U64, input_bytes),
	MRG("input_rows", C_U64, input_rows),
	MRG("min_depth", C_U32, min_depth),
	MRG("max_depth", C_U32, max_depth),
	MRG("input_min_ts", C_I64, input_min_ts),
	MRG("input_max_ts", C_I64, input_max_ts),
	MRG("mature_parts", C_U32, mature_parts),
	MRG("hot_parts", C_U32, hot_parts),
	MRG("mature_rows", C_U64, mature_rows),
	MRG("hot_rows", C_U64, hot_rows),
	MRG("predict_class", C_CLASS, predict_class),
	MRG("predict_reason", C_REASON, predict_reason),
	MRG("wall_dispatch_ns", C_I64, wall_dispatch_ns),
	MRG("queue_ns", C_I64, queue_ns),
	MRG("err", C_INT, err),
	MRG("error", C_STR, error),
	MRG("class", C_CLASS, sampling.klass),
	MRG("reason", C_REASON, sampling.reason),
	MRG("traces_evaluated", C_U64, sampling.traces_evaluated),
	MRG("traces_kept", C_U64, sampling.traces_kept),
	MRG("traces_dropped", C_U64, sampling.traces_dropped),
	MRG("traces_oversized", C_U64, sampling.traces_oversized),
	MRG("traces_deferred", C_U64, sampling.traces_deferred),
	MRG("traces_unevaluated", C_U64, sampling.traces_unevaluated),
	MRG("rows_dropped", C_U64, sampling.rows_dropped),
	MRG("batches_planned", C_U64, sampling.batches_planned),
	MRG("batches", C_U64, sampling.batches),
	MRG("estimate_bytes", C_U64, sampling.estimate_bytes),
	MRG("hard_limit_bytes", C_U64, sampling.hard_limit_bytes),
	MRG("preferred_limit_bytes", C_U64, sampling.preferred_limit_bytes),
	MRG("peak_staged_bytes", C_U64, sampling.peak_staged_bytes),
	MRG("peak_concurrent_bytes", C_U64, sampling.peak_concurrent_bytes),
	MRG("arena_cold_bytes", C_U64, sampling.arena_cold_bytes),
	MRG("arena_reused_bytes", C_U64, sampling.arena_reused_bytes),
	MRG("guard_probes", C_U64, sampling.guard_probes),
	MRG("guard_deferred_positive", C_U64, sampling.guard_deferred_positive),
	MRG("guard_deferred_budget", C_U64, sampling.guard_deferred_budget),
	MRG("guard_retained_edge", C_U64, sampling.guard_retained_edge),
	MRG("drop_set_budget", C_U64, sampling.drop_set_budget),
	MRG("drop_set_full", C_U64, sampling.drop_set_full),
	MRG("plugin_calls", C_U64, sampling.plugin_calls),
	MRG("decide_ns", C_I64, sampling.decide_ns),
	MRG("decide_dup_traces", C_U64, sampling.decide_dup_traces),
	MRG("bounds_mismatch", C_U64, sampling.bounds_mismatch),
	MRG("hot_decided", C_U64, sampling.hot_decided),
	MRG("nlinks", C_U32, nlinks),
	MRG("out_id", C_U64, output.id),
	MRG("out_bytes", C_U64, output.compressed_bytes),
	MRG("out_uncompressed_bytes", C_U64, output.uncompressed_bytes),
	MRG("out_rows", C_U64, output.rows),
	MRG("out_blocks", C_U64, output.blocks),
	MRG("out_traces", C_U64, output.traces),
	MRG("out_min_ts", C_I64, output.min_ts),
	MRG("out_max_ts", C_I64, output.max_ts),
	MRG("out_depth", C_U32, output.depth),
	MRG("out_checksum", C_U64, output.checksum),
	MIDX("latency", MS_KIND_LATENCY),
	MIDX("start_time", MS_KIND_START_TIME),
	MRG("epoch_after", C_U64, epoch_after),
	MRG("rows_in", C_U64, rows_in),
	MRG("rows_out", C_U64, rows_out),
	MRG("traces_in", C_U64, traces_in),
	MRG("traces_out", C_U64, traces_out),
	MRG("wall_start_ns", C_I64, wall_start_ns),
	MRG("wall_ns", C_I64, wall_ns),
	MRG("cpu_ns", C_I64, cpu_ns),
	MRG("process_cpu_ns", C_I64, process_cpu_ns),
	MRG("alloc_bytes", C_U64, alloc_bytes),
	MRG("alloc_count", C_U64, alloc_count),
	MRG("peak_live", C_I64, peak_live),
	MRG("rss_peak", C_U64, rss_peak),
	MRG("bytes_read", C_U64, bytes_read),
	MRG("bytes_written", C_U64, bytes_written),
	MRG("fsyncs", C_U64, fsyncs),
	MRG("inv_parts", C_U64, inv_parts),
	MRG("inv_bytes", C_U64, inv_bytes),
};

#define INP(n, t, f) COL(ms_ev_input, n, t, f)
static const col input_cols[] = {
	INP("part_id", C_U64, id),
	INP("bytes", C_U64, bytes),
	INP("uncompressed_bytes", C_U64, uncompressed_bytes),
	INP("rows", C_U64, rows),
	INP("blocks", C_U64, blocks),
	INP("depth", C_U32, depth),
	INP("min_ts", C_I64, min_ts),
	INP("max_ts", C_I64, max_ts),
	INP("mature", C_BOOL, mature),
};

#define LNK(n, t, f) COL(ms_ev_link, n, t, f)
static const col link_cols[] = {
	LNK("name", C_STR, name),
	LNK("calls", C_U64, calls),
	LNK("traces", C_U64, traces),
	LNK("kept", C_U64, kept),
	LNK("total_ns", C_I64, total_ns),
	LNK("max_ns", C_I64, max_ns),
	LNK("le_0_25ms", C_U64, hist[0]),
	LNK("le_0_5ms", C_U64, hist[1]),
	LNK("le_1ms", C_U64, hist[2]),
	LNK("le_2_5ms", C_U64, hist[3]),
	LNK("le_5ms", C_U64, hist[4]),
	LNK("le_10ms", C_U64, hist[5]),
	LNK("le_25ms", C_U64, hist[6]),
	LNK("le_50ms", C_U64, hist[7]),
	LNK("le_100ms", C_U64, hist[8]),
	LNK("le_250ms", C_U64, hist[9]),
	LNK("le_500ms", C_U64, hist[10]),
	LNK("le_1000ms", C_U64, hist[11]),
	LNK("gt_1000ms", C_U64, hist[12]),
	LNK("result", C_INT, result),
	LNK("fail_open", C_STR, fail_open),
	LNK("fail_why", C_STR, fail_why),
	LNK("fail_error", C_U64, fails[0]),
	LNK("fail_wrong_length", C_U64, fails[1]),
	LNK("fail_bad_value", C_U64, fails[2]),
	LNK("fail_timeout", C_U64, fails[3]),
	LNK("fail_circuit_open", C_U64, fails[4]),
	LNK("fail_host_error", C_U64, fails[5]),
	LNK("fail_crashed", C_U64, fails[6]),
};

const char *
ms_ev_fail_kind_name(unsigned k)
{
	/* The names live in one place: the chain's. */
	_Static_assert(MS_EV_FAIL_KINDS == MS_LINK_RESULT_COUNT - 1,
	               "one fail kind per link result but ok");
	return k < MS_EV_FAIL_KINDS
	               ? ms_link_result_name((enum ms_link_result)(k + 1))
	               : "?";
}

#define PRT(n, t, f) COL(ms_ev_part, n, t, f)
static const col part_cols[] = {
	PRT("what", C_WHAT, what),
	PRT("part_id", C_U64, part_id),
	PRT("logical_ns", C_I64, logical_ns),
	PRT("wall_ns", C_I64, wall_ns),
	PRT("epoch", C_U64, epoch),
	PRT("cause", C_STR, cause),
	PRT("cause_seq", C_U64, cause_seq),
	PRT("core_bytes", C_U64, bytes[MS_KIND_CORE]),
	PRT("core_rows", C_U64, rows[MS_KIND_CORE]),
	PRT("latency_bytes", C_U64, bytes[MS_KIND_LATENCY]),
	PRT("latency_rows", C_U64, rows[MS_KIND_LATENCY]),
	PRT("start_time_bytes", C_U64, bytes[MS_KIND_START_TIME]),
	PRT("start_time_rows", C_U64, rows[MS_KIND_START_TIME]),
	PRT("depth", C_U32, depth),
};

#define SMP(n, t, f) COL(ms_ev_sample, n, t, f)
static const col sample_cols[] = {
	SMP("wall_ns", C_I64, wall_ns),
	SMP("logical_ns", C_I64, logical_ns),
	SMP("phase", C_PHASE, phase),
	SMP("inv_parts", C_U64, inv_parts),
	SMP("inv_bytes", C_U64, inv_bytes),
	SMP("staged_bytes", C_U64, staged_bytes),
	SMP("live_bytes", C_I64, live_bytes),
	SMP("rss_bytes", C_U64, rss_bytes),
	SMP("cpu_ns", C_I64, cpu_ns),
	SMP("running", C_U32, running),
	SMP("queued", C_U32, queued),
};

#define PHS(n, t, f) COL(ms_ev_phase, n, t, f)
static const col phase_cols[] = {
	PHS("phase", C_PHASE, phase),
	PHS("logical_start_ns", C_I64, logical_start_ns),
	PHS("logical_end_ns", C_I64, logical_end_ns),
	PHS("wall_ns", C_I64, wall_ns),
	PHS("cpu_ns", C_I64, cpu_ns),
	PHS("alloc_bytes", C_U64, alloc_bytes),
	PHS("alloc_count", C_U64, alloc_count),
	PHS("peak_live", C_I64, peak_live),
	PHS("rss_peak", C_U64, rss_peak),
	PHS("bytes_read", C_U64, bytes_read),
	PHS("bytes_written", C_U64, bytes_written),
	PHS("fsyncs", C_U64, fsyncs),
	PHS("drain_ns", C_I64, drain_ns),
	PHS("rss_anon_peak", C_U64, rss_anon_peak),
	PHS("rss_file_peak", C_U64, rss_file_peak),
	PHS("rss_shmem_peak", C_U64, rss_shmem_peak),
	PHS("staging_ns", C_I64, staging_ns),
	PHS("staging_fsyncs", C_U64, staging_fsyncs),
};

#define GTE(n, t, f) COL(ms_ev_gate, n, t, f)
static const col gate_cols[] = {
	GTE("name", C_STR, name),
	GTE("pass", C_BOOL, pass),
	GTE("warn", C_BOOL, warn),
	GTE("detail", C_STR, detail),
};

#define RCN(n, t, f) COL(ms_ev_recon, n, t, f)
static const col recon_cols[] = {
	RCN("name", C_STR, name),
	RCN("primary_n", C_U64, v[MS_EV_RECON_PRIMARY]),
	RCN("cooldown_n", C_U64, v[MS_EV_RECON_COOLDOWN]),
	RCN("finalize_n", C_U64, v[MS_EV_RECON_FINALIZE]),
	RCN("total_n", C_U64, v[MS_EV_RECON_TOTAL]),
	RCN("ok", C_BOOL, ok),
	RCN("note", C_STR, note),
};

#define PST(n, t, f) COL(ms_ev_plugin_stat, n, t, f)
static const col pstat_cols[] = {
	PST("link", C_U32, link),
	PST("name", C_STR, name),
	PST("value", C_U64, value),
};

#define PLG_LOG(n, t, f) COL(ms_ev_plugin_log, n, t, f)
static const col plog_cols[] = {
	PLG_LOG("wall_ns", C_I64, wall_ns),
	PLG_LOG("logical_ns", C_I64, logical_ns),
	PLG_LOG("link", C_U32, link),
	PLG_LOG("label", C_STR, label),
	PLG_LOG("level", C_LEVEL, level),
	PLG_LOG("message", C_STR, message),
};

#define PLG_CNT(n, t, f) COL(ms_ev_plugin_log_count, n, t, f)
static const col plogc_cols[] = {
	PLG_CNT("label", C_STR, label),
	PLG_CNT("lines", C_U64, lines),
	PLG_CNT("suppressed", C_U64, suppressed),
};

#define SEEK(n, t, f) COL(ms_ev_seek, n, t, f)
static const col seek_cols[] = {
	SEEK("wall_ns", C_I64, wall_ns),
	SEEK("logical_ns", C_I64, logical_ns),
	SEEK("from_pubs", C_U64, from_pubs),
	SEEK("from_merge", C_U64, from_merge),
	SEEK("to_pubs", C_U64, to_pubs),
	SEEK("to_merge", C_U64, to_merge),
	SEEK("target", C_STR, target),
	SEEK("removed", C_U64, removed),
};

#define NCOLS(a) (sizeof(a) / sizeof((a)[0]))

#define BAT(n, t, f) COL(ms_merge_batch, n, t, f)
static const col batch_cols[] = {
	BAT("charged_bytes", C_U64, charged_bytes),
	BAT("traces", C_U32, traces),
	BAT("evaluated", C_U32, evaluated),
	BAT("reason", C_FLUSH, reason),
};

enum {
	T_RUN,
	T_PLUGIN,
	T_PUB,
	T_MERGE,
	T_INPUT,
	T_LINK,
	T_BATCH,
	T_PART,
	T_SAMPLE,
	T_PHASE,
	T_GATE,
	T_RECON,
	T_PSTAT,
	T_SEEK,
	T_PLOG,
	T_PLOGC,
	T_COUNT
};

static const ev_table tables[T_COUNT] = {
	[T_RUN] = { "run", "id INTEGER PRIMARY KEY CHECK (id = 1)", 1, run_cols,
	            NCOLS(run_cols), "", "", "id", end_cols, NCOLS(end_cols) },
	[T_PLUGIN] = { "run_plugin", "link INTEGER PRIMARY KEY", 1, plugin_cols,
	               NCOLS(plugin_cols), "", "", "link", NULL, 0 },
	[T_PUB] = { "publication", "", 0, pub_cols, NCOLS(pub_cols),
	            ", PRIMARY KEY (seq)", "", "seq", NULL, 0 },
	[T_MERGE] = { "merge", "", 0, merge_cols, NCOLS(merge_cols),
	              ", PRIMARY KEY (seq)", "", "seq", NULL, 0 },
	[T_INPUT] = { "merge_input",
	              "seq INTEGER NOT NULL, idx INTEGER NOT NULL", 2,
	              input_cols, NCOLS(input_cols), ", PRIMARY KEY (seq, idx)",
	              " WITHOUT ROWID", "seq, idx", NULL, 0 },
	[T_LINK] = { "merge_link", "seq INTEGER NOT NULL, idx INTEGER NOT NULL",
	             2, link_cols, NCOLS(link_cols), ", PRIMARY KEY (seq, idx)",
	             " WITHOUT ROWID", "seq, idx", NULL, 0 },
	[T_BATCH] = { "merge_batch",
	              "seq INTEGER NOT NULL, idx INTEGER NOT NULL", 2,
	              batch_cols, NCOLS(batch_cols), ", PRIMARY KEY (seq, idx)",
	              " WITHOUT ROWID", "seq, idx", NULL, 0 },
	[T_PART] = { "part_event", "id INTEGER PRIMARY KEY", 0, part_cols,
	             NCOLS(part_cols), "", "", "id", NULL, 0 },
	[T_SAMPLE] = { "sample", "id INTEGER PRIMARY KEY", 0, sample_cols,
	               NCOLS(sample_cols), "", "", "id", NULL, 0 },
	[T_PHASE] = { "phase", "", 0, phase_cols, NCOLS(phase_cols),
	              ", PRIMARY KEY (phase)", "",
	              "CASE phase WHEN 'primary' THEN 0 ELSE 1 END", NULL, 0 },
	[T_RECON] = { "reconcile", "id INTEGER PRIMARY KEY", 0, recon_cols,
	              NCOLS(recon_cols), "", "", "id", NULL, 0 },
	[T_PSTAT] = { "plugin_stat", "id INTEGER PRIMARY KEY", 0, pstat_cols,
	              NCOLS(pstat_cols), "", "", "id", NULL, 0 },
	[T_GATE] = { "gate", "id INTEGER PRIMARY KEY", 0, gate_cols,
	             NCOLS(gate_cols), "", "", "id", NULL, 0 },
	[T_SEEK] = { "seek", "id INTEGER PRIMARY KEY", 0, seek_cols,
	             NCOLS(seek_cols), "", "", "id", NULL, 0 },
	[T_PLOG] = { "plugin_log", "id INTEGER PRIMARY KEY", 0, plog_cols,
	             NCOLS(plog_cols), "", "", "id", NULL, 0 },
	[T_PLOGC] = { "plugin_log_count", "link INTEGER PRIMARY KEY", 1,
	              plogc_cols, NCOLS(plogc_cols), "", "", "link", NULL, 0 },
};

/* What file_schema_version and user_version found: a version, or none
 * (user_version is any 32-bit value, -1 included, so these are outside
 * it). */
#define UV_UNREADABLE INT64_MIN /* not an SQLite database */
#define UV_LOCKED (INT64_MIN + 1) /* another process holds it locked */

/* user_version of an existing database file, UV_UNREADABLE if the file
 * is not one (msg gets SQLite's words), UV_LOCKED if another process
 * holds it locked. */
static int64_t
file_schema_version(const char *path, char *msg, size_t n)
{
	sqlite3 *db = NULL;
	int64_t v = UV_UNREADABLE;
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) ==
	    SQLITE_OK) {
		sqlite3_stmt *st = NULL;
		if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st,
		                       NULL) == SQLITE_OK &&
		    sqlite3_step(st) == SQLITE_ROW)
			v = sqlite3_column_int64(st, 0);
		else if ((sqlite3_errcode(db) & 0xff) == SQLITE_BUSY ||
		         (sqlite3_errcode(db) & 0xff) == SQLITE_LOCKED)
			v = UV_LOCKED;
		else
			snprintf(msg, n, "%s", sqlite3_errmsg(db));
		sqlite3_finalize(st);
	} else {
		snprintf(msg, n, "%s",
		         db ? sqlite3_errmsg(db)
		            : "out of memory for its SQLite connection");
	}
	sqlite3_close(db);
	return v;
}

/* ---------------------------------------------------------------------- */
/* Recorder. */

enum {
	S_RUN,
	S_RUN_END,
	S_PLUGIN,
	S_PUB,
	S_MERGE,
	S_INPUT,
	S_LINK,
	S_BATCH,
	S_PART,
	S_SAMPLE,
	S_PHASE,
	S_GATE,
	S_RECON,
	S_PSTAT,
	S_SEEK,
	S_PLOG,
	S_PLOGC,
	S_STAGED,
	S_LATE_MERGE,
	S_RECOUNT,
	S_BEGIN,
	S_COMMIT,
	S_COUNT
};

/* One event in the queue (design 0): its kind and a copy of its object,
 * a merge's inputs after the merge. */
enum qkind { Q_PUB, Q_MERGE, Q_PART, Q_SAMPLE, Q_PLOG, Q_PLOGC, Q_KINDS };
struct qev {
	struct qev *next;
	enum qkind kind;
	size_t bytes; /* the allocation, as counted in ms_rec.q_bytes */
	_Alignas(16) unsigned char obj[];
};
_Static_assert(sizeof(ms_ev_merge) % _Alignof(ms_ev_input) == 0,
               "a merge's inputs follow it in its queue entry");

struct ms_rec {
	sqlite3 *db;
	sqlite3_stmt *st[S_COUNT];
	char *path;
	uint32_t batch_events;
	int64_t batch_ns;

	pthread_mutex_t lock; /* the connection and the fields to "dead" */
	pthread_t timer;      /* the drain thread */
	bool timer_started;

	bool ended; /* the run end is recorded (ms_rec_run_end) */

	uint32_t pending; /* events in the open transaction */
	uint32_t pending_merges;
	int dead; /* 0, or the first failure (design 5) */
	ms_errbuf dead_msg;
	uint64_t failed_statements;

	uint64_t events, commits;
	_Atomic uint64_t merges_committed;
	int64_t busy_ns; /* sections holding the connection (design 8) */

	pthread_mutex_t qlock; /* the fields below */
	pthread_cond_t wake;   /* the drain thread waits on it */
	pthread_cond_t space;  /* callers waiting for room */
	bool stop;
	bool hold; /* ms__rec_hold: the drain thread waits */
	struct qev *q_head, *q_tail;
	uint32_t q_n;          /* events queued */
	size_t q_bytes, q_cap; /* queued and being drained; the bound */
	int64_t q_first_ns;    /* monotonic, when the oldest was queued */
	uint32_t q_waiters;    /* callers waiting for room */
	uint64_t merges;       /* merge events accepted */
	int64_t q_busy_ns;     /* callers' time in the queue (design 8) */
	int64_t q_wait_ns;     /* of which waiting for room */
};

/* The first SQLite failure: remembered for good, the batch dropped
 * (design 5). Caller holds the lock (or is opening). */
static int
sql_fail(ms_rec *r, ms_errbuf *eb, const char *what)
{
	ms_errbuf e;
	int rc = ms_fail(&e, MS_ERR_IO, "event database %s: %s: %s", r->path,
	                 what, sqlite3_errmsg(r->db));
	r->failed_statements++;
	pthread_mutex_lock(&r->qlock);
	if (!r->dead) {
		r->dead = rc;
		r->dead_msg = e;
	}
	pthread_cond_broadcast(&r->space); /* a waiter gets the error */
	pthread_mutex_unlock(&r->qlock);
	if (r->db && !sqlite3_get_autocommit(r->db))
		sqlite3_exec(r->db, "ROLLBACK", NULL, NULL, NULL);
	r->pending = 0;
	r->pending_merges = 0;
	if (eb)
		*eb = e;
	return rc;
}

/* The sticky failure, if any, into eb. Caller holds either lock. */
static int
dead_err(ms_rec *r, ms_errbuf *eb)
{
	if (r->dead && eb)
		*eb = r->dead_msg;
	return r->dead;
}

static int
run_stmt(ms_rec *r, sqlite3_stmt *st, ms_errbuf *eb, const char *what)
{
	int rc = sqlite3_step(st);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (rc != SQLITE_DONE)
		return sql_fail(r, eb, what);
	return 0;
}

/* Commit the open transaction, if any. Caller holds the lock. */
static int
commit_locked(ms_rec *r, ms_errbuf *eb)
{
	if (r->pending == 0)
		return 0;
	int rc = run_stmt(r, r->st[S_COMMIT], eb, "commit");
	if (rc < 0)
		return rc;
	r->commits++;
	atomic_fetch_add(&r->merges_committed, r->pending_merges);
	r->pending = 0;
	r->pending_merges = 0;
	return 0;
}

static int insert_event(ms_rec *r, const struct qev *n);

/* Move the queue into SQLite and commit it (design 0-2); after the
 * first failure the queued events are dropped (design 5). Lock held. */
static void
drain_locked(ms_rec *r)
{
	pthread_mutex_lock(&r->qlock);
	struct qev *n = r->q_head;
	r->q_head = r->q_tail = NULL;
	r->q_n = 0;
	pthread_mutex_unlock(&r->qlock);
	if (!n)
		return;
	size_t freed = 0;
	while (n) {
		struct qev *next = n->next;
		if (!r->dead)
			(void)insert_event(r, n); /* kept in r->dead */
		freed += n->bytes;
		free(n);
		n = next;
	}
	if (!r->dead)
		(void)commit_locked(r, NULL);
	pthread_mutex_lock(&r->qlock);
	r->q_bytes -= freed;
	pthread_cond_broadcast(&r->space);
	pthread_mutex_unlock(&r->qlock);
}

/* Take the connection (design 4) after draining the queue into it, so
 * what the caller does comes after every event accepted before. Returns
 * the thread's CPU time then, for db_unlock (design 8). */
static int64_t
db_lock(ms_rec *r)
{
	pthread_mutex_lock(&r->lock);
	int64_t c0 = ms_rusage_thread_cpu_ns();
	drain_locked(r);
	return c0;
}

static void
db_unlock(ms_rec *r, int64_t c0)
{
	int64_t c1 = ms_rusage_thread_cpu_ns();
	if (c0 >= 0 && c1 >= c0)
		r->busy_ns += c1 - c0;
	pthread_mutex_unlock(&r->lock);
}

/* Whether the drain thread drains now (design 2); else *due is when it
 * must (0: when woken). qlock held. */
static bool
drain_due(ms_rec *r, int64_t *due)
{
	*due = 0;
	if (!r->q_head || r->hold)
		return false;
	if (r->q_n >= r->batch_events || r->q_waiters)
		return true;
	*due = r->q_first_ns + r->batch_ns;
	return ms_mono_ns() >= *due;
}

static void *
timer_main(void *arg)
{
	ms_rec *r = arg;
	ms_rusage_name_thread("ms-recorder");
	pthread_mutex_lock(&r->qlock);
	while (!r->stop) {
		int64_t due;
		if (drain_due(r, &due)) {
			pthread_mutex_unlock(&r->qlock);
			db_unlock(r, db_lock(r));
			pthread_mutex_lock(&r->qlock);
		} else if (due) {
			struct timespec ts = ms_mono_timespec(due);
			pthread_cond_timedwait(&r->wake, &r->qlock, &ts);
		} else {
			pthread_cond_wait(&r->wake, &r->qlock);
		}
	}
	pthread_mutex_unlock(&r->qlock);
	return NULL;
}

static int
exec(ms_rec *r, const char *sql, ms_errbuf *eb)
{
	char *err = NULL;
	if (sqlite3_exec(r->db, sql, NULL, NULL, &err) != SQLITE_OK) {
		int rc = ms_fail(eb, MS_ERR_IO, "event database %s: %s",
		                 r->path, err ? err : sqlite3_errmsg(r->db));
		sqlite3_free(err);
		return rc;
	}
	return 0;
}

static int
prepare(ms_rec *r, int slot, const char *sql, ms_errbuf *eb)
{
	if (sqlite3_prepare_v3(r->db, sql, -1, SQLITE_PREPARE_PERSISTENT,
	                       &r->st[slot], NULL) != SQLITE_OK)
		return sql_fail(r, eb, "prepare");
	return 0;
}

static void
rec_free(ms_rec *r)
{
	for (int i = 0; i < S_COUNT; i++)
		sqlite3_finalize(r->st[i]);
	sqlite3_close(r->db);
	while (r->q_head) {
		struct qev *n = r->q_head;
		r->q_head = n->next;
		free(n);
	}
	pthread_mutex_destroy(&r->lock);
	pthread_mutex_destroy(&r->qlock);
	pthread_cond_destroy(&r->wake);
	pthread_cond_destroy(&r->space);
	free(r->path);
	free(r);
}

/* The tables and the schema version; inside the caller's transaction.
 * The index is built at the end (ms_rec_index). */
static int
create_schema(ms_rec *r, ms_errbuf *eb)
{
	char sql[8192];
	int rc = 0;
	for (int t = 0; rc == 0 && t < T_COUNT; t++) {
		if (!ms_sqltab_create_sql(&tables[t], " (", sql, sizeof(sql)))
			return ms_fail(eb, MS_ERR_RANGE,
			               "schema text too long");
		rc = exec(r, sql, eb);
	}
	if (rc == 0) {
		snprintf(sql, sizeof(sql), "PRAGMA user_version = %d",
		         MS_EV_SCHEMA_VERSION);
		rc = exec(r, sql, eb);
	}
	return rc;
}

static int
prepare_all(ms_rec *r, ms_errbuf *eb)
{
	static const struct {
		int slot, table;
	} ins[] = {
		{ S_RUN, T_RUN },       { S_PLUGIN, T_PLUGIN },
		{ S_PUB, T_PUB },       { S_MERGE, T_MERGE },
		{ S_INPUT, T_INPUT },   { S_LINK, T_LINK },
		{ S_BATCH, T_BATCH },   { S_PART, T_PART },
		{ S_SAMPLE, T_SAMPLE }, { S_PHASE, T_PHASE },
		{ S_GATE, T_GATE },     { S_RECON, T_RECON },
		{ S_PSTAT, T_PSTAT },   { S_SEEK, T_SEEK },
		{ S_PLOG, T_PLOG },     { S_PLOGC, T_PLOGC },
	};
	char sql[8192];
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < NCOLS(ins); i++) {
		/* a phase, a link's log counts, the run (written at the
		 * open, again at the start) may be recorded again: the last
		 * record wins */
		const char *verb = ins[i].slot == S_PHASE ||
		                                   ins[i].slot == S_PLOGC ||
		                                   ins[i].slot == S_RUN ||
		                                   ins[i].slot == S_PLUGIN
		                           ? "INSERT OR REPLACE"
		                           : "INSERT";
		if (!ms_sqltab_insert_sql(&tables[ins[i].table], verb, sql,
		                          sizeof(sql)))
			return ms_fail(eb, MS_ERR_RANGE, "insert too long");
		rc = prepare(r, ins[i].slot, sql, eb);
	}
	/* UPDATE run SET a = ?, b = ? ... WHERE id = 1 */
	size_t len = 0;
	bool ok = ms_sql_cat(sql, sizeof(sql), &len, "UPDATE run SET ");
	for (size_t i = 0; i < NCOLS(end_cols); i++)
		ok = ok &&
		     (i == 0 || ms_sql_cat(sql, sizeof(sql), &len, ", ")) &&
		     ms_sql_cat(sql, sizeof(sql), &len, end_cols[i].name) &&
		     ms_sql_cat(sql, sizeof(sql), &len, " = ?");
	ok = ok && ms_sql_cat(sql, sizeof(sql), &len, " WHERE id = 1");
	if (!ok)
		return ms_fail(eb, MS_ERR_RANGE, "update too long");
	if (rc == 0)
		rc = prepare(r, S_RUN_END, sql, eb);
	if (rc == 0)
		rc = prepare(r, S_STAGED,
		             "UPDATE run SET clone_method = ?1 WHERE id = 1",
		             eb);
	/* A merge completed after the run end was recorded counts in it. */
	if (rc == 0)
		rc = prepare(r, S_LATE_MERGE,
		             "UPDATE run SET merges_completed = "
		             "merges_completed + 1 WHERE id = 1",
		             eb);
	if (rc == 0)
		rc = prepare(
		        r, S_RECOUNT,
		        "UPDATE run SET merges_completed = "
		        "max(merges_completed, (SELECT count(*) FROM merge "
		        "WHERE err = 0)) WHERE id = 1",
		        eb);
	if (rc == 0)
		rc = prepare(r, S_BEGIN, "BEGIN", eb);
	if (rc == 0)
		rc = prepare(r, S_COMMIT, "COMMIT", eb);
	return rc;
}

/* A database another process holds locked is its database. */
/* SQLite's words for db's last failure, and the system's when it gave
 * one. */
static void
sqlite_why(sqlite3 *db, char *buf, size_t n)
{
	int se = db ? sqlite3_system_errno(db) : 0;
	snprintf(buf, n, "%s%s%s%s",
	         db ? sqlite3_errmsg(db)
	            : "out of memory for its SQLite "
	              "connection",
	         se > 0 ? " (" : "", se > 0 ? strerror(se) : "",
	         se > 0 ? ")" : "");
}

static int
locked_error(ms_errbuf *eb, const char *path)
{
	return ms_fail(eb, MS_ERR_EXISTS,
	               "event database %s: locked by another process (another "
	               "run is writing it); expected a new path",
	               path);
}

bool
ms_evdb_name_fits(const char *path, size_t *len)
{
	const char *slash = strrchr(path, '/');
	size_t n = strlen(slash ? slash + 1 : path);
	if (len)
		*len = n;
	return n <= MS_EV_DB_NAME_MAX;
}

bool
ms_evdb_path_fits(const char *path, size_t *len, size_t *max)
{
	char cwd[PATH_MAX];
	size_t n = strlen(path);
	if (path[0] != '/' && getcwd(cwd, sizeof(cwd)))
		n += strlen(cwd) + 1;
	sqlite3_vfs *vfs = sqlite3_vfs_find(NULL);
	size_t most = vfs && vfs->mxPathname > 8
	                      ? (size_t)vfs->mxPathname - 8 /* "-journal" */
	                      : 0;
	if (len)
		*len = n;
	if (max)
		*max = most;
	return n <= most;
}

void
ms_evdb_remove(const char *path)
{
	static const char *const sides[] = { "-wal", "-shm", "-journal" };
	char side[4096];
	unlink(path);
	for (size_t i = 0; i < sizeof(sides) / sizeof(*sides); i++)
		if (snprintf(side, sizeof(side), "%s%s", path, sides[i]) <
		    (int)sizeof(side))
			unlink(side);
}

/* An existing file at path is refused unless it is an event log of this
 * schema (or an empty SQLite file) and overwrite is set; then it and its
 * WAL files are removed. */
static int
clear_existing(const char *path, bool overwrite, ms_errbuf *eb)
{
	if (access(path, F_OK) != 0)
		return 0;
	char msg[256] = "";
	int64_t v = file_schema_version(path, msg, sizeof(msg));
	if (v == UV_LOCKED)
		return locked_error(eb, path);
	if (v == UV_UNREADABLE)
		return ms_fail(eb, MS_ERR_FORMAT,
		               "event database %s: exists and is not "
		               "an SQLite database (%s); expected a "
		               "new path or an event log",
		               path, msg);
	if (v != MS_EV_SCHEMA_VERSION && v != 0)
		return ms_fail(eb, MS_ERR_FORMAT,
		               "event database %s: an SQLite database of "
		               "schema version %" PRId64 ", expected %d; "
		               "choose a new path",
		               path, v, MS_EV_SCHEMA_VERSION);
	if (!overwrite)
		return ms_fail(eb, MS_ERR_EXISTS,
		               "event database %s: exists; expected a "
		               "new path",
		               path);
	ms_evdb_remove(path);
	return 0;
}

/* Columns of the run table that the end record fills; they exist from the
 * start (NOT NULL), so run_begin writes their zero values. */
static const ms_ev_run_end zero_end;

static int write_run(ms_rec *r, const ms_ev_run *run, ms_errbuf *eb);
static int check_run(const char *path, const ms_ev_run *run, ms_errbuf *eb);

/*
 * The schema and (run not NULL) the run row in one transaction, in the
 * rollback journal a new file starts in; then WAL (design 3). Until that
 * commit the file is empty (a process killed meanwhile leaves an empty
 * file, or one with a -journal that rolls it back to empty: no tables,
 * which ms_replay_postmortem removes); from it on, the file holds the
 * run. WAL comes after: setting it writes the file's first page, which
 * would be a database with no tables before the commit.
 */
static int
create_locked(ms_rec *r, const ms_ev_run *run, ms_errbuf *eb)
{
	int rc = exec(r, "PRAGMA foreign_keys = OFF; BEGIN", eb);
	if (rc == 0)
		rc = create_schema(r, eb);
	if (rc == 0)
		rc = prepare_all(r, eb);
	if (rc == 0 && run)
		rc = write_run(r, run, eb);
	if (rc == 0)
		rc = exec(r, "COMMIT", eb);
	if (rc < 0 && r->db && !sqlite3_get_autocommit(r->db))
		sqlite3_exec(r->db, "ROLLBACK", NULL, NULL, NULL);
	/* And a write transaction in WAL mode, which takes its index (the
	 * -shm a full tmpfs cannot grow): refused here, before any work,
	 * not at the first event. */
	if (rc == 0)
		rc = exec(r,
		          "PRAGMA journal_mode = WAL; PRAGMA synchronous = "
		          "NORMAL; BEGIN IMMEDIATE; COMMIT",
		          eb);
	return rc;
}

int
ms_rec_open(ms_rec **out, const ms_rec_opts *opts, ms_errbuf *eb)
{
	*out = NULL;
	if (!opts || !opts->path || !opts->path[0])
		return ms_fail(eb, MS_ERR_INVAL, "event database: no path");
	const char *path = opts->path;
	size_t name_len = 0;
	if (!ms_evdb_name_fits(path, &name_len))
		return ms_fail(
		        eb, MS_ERR_RANGE,
		        "event database %s: its file name is %zu bytes; "
		        "at most %d, as SQLite keeps files named after it "
		        "with -journal, -wal and -shm added beside it, and "
		        "a file name has at most 255 bytes",
		        path, name_len, MS_EV_DB_NAME_MAX);
	size_t most = 0;
	if (!ms_evdb_path_fits(path, &name_len, &most))
		return ms_fail(eb, MS_ERR_RANGE,
		               "event database %s: its path is %zu bytes; "
		               "SQLite opens one of at most %zu (with -journal "
		               "added, its limit)",
		               path, name_len, most);
	int rc = opts->run ? check_run(path, opts->run, eb) : 0;
	if (rc == 0)
		rc = clear_existing(path, opts->overwrite, eb);
	if (rc)
		return rc;

	ms_rec *r = calloc(1, sizeof(*r));
	if (!r)
		return ms_fail(eb, MS_ERR_NOMEM,
		               "event database %s: out of memory for its "
		               "recorder (%zu bytes)",
		               path, sizeof(*r));
	pthread_mutex_init(&r->lock, NULL);
	pthread_mutex_init(&r->qlock, NULL);
	pthread_cond_init(&r->space, NULL);
	r->q_cap = opts->queue_bytes ? opts->queue_bytes : MS_REC_QUEUE_BYTES;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&r->wake, &ca);
	pthread_condattr_destroy(&ca);
	r->batch_events = opts->batch_events ? opts->batch_events : 256;
	r->batch_ns =
	        (int64_t)(opts->batch_ms ? opts->batch_ms : 100) * 1000000;
	r->path = strdup(path);
	if (!r->path) {
		rec_free(r);
		return ms_fail(eb, MS_ERR_NOMEM,
		               "event database %s: out of memory for its path "
		               "(%zu bytes)",
		               path, strlen(path) + 1);
	}
	if (sqlite3_open_v2(path, &r->db,
	                    SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
	                            SQLITE_OPEN_NOMUTEX,
	                    NULL) != SQLITE_OK) {
		rc = ms_fail(eb, MS_ERR_IO,
		             "event database %s: cannot create: %s; expected "
		             "a writable file in an existing directory",
		             path,
		             r->db ? sqlite3_errmsg(r->db)
		                   : "out of memory for its SQLite connection");
		rec_free(r);
		return rc;
	}
	if (opts->created)
		opts->created(opts->created_arg, path);
	/* A reader (the TUI's export, `report`) holding a lock for a
	 * moment is waited for, boundedly, before a statement fails (and
	 * with it the recorder, design 5). */
	sqlite3_busy_timeout(r->db, 5000);
	/* A page cache of a fixed size: SQLite's default (2,000 KiB) fills
	 * as the database grows with the day, and all of it is resident
	 * through the finalize's peak. Best effort: a connection that
	 * cannot set it keeps the default. */
	sqlite3_exec(r->db, "PRAGMA cache_size = -" MS__REC_CACHE_KIB, NULL,
	             NULL, NULL);
	rc = create_locked(r, opts->run, eb);
	int te =
	        rc ? 0
	           : ms_thread_start(&r->timer, MS_THREAD_STACK, timer_main, r);
	if (te)
		rc = ms_thread_fail(
		        eb, MS_ERR_IO, te,
		        "event database %s: cannot start its commit "
		        "timer",
		        path);
	int ec = r->db ? sqlite3_errcode(r->db) & 0xff : 0;
	if (rc < 0 && (ec == SQLITE_BUSY || ec == SQLITE_LOCKED)) {
		/* Another process has the file: it is its database, so it
		 * is neither ours to remove nor a reason to say more. */
		rc = locked_error(eb, path);
		rec_free(r);
		return rc;
	}
	if (rc < 0) {
		/* SQLite says "disk I/O error" where the system said why
		 * (a WAL index that a full disk cannot grow). */
		char why[512];
		sqlite_why(r->db, why, sizeof(why));
		if (ec == SQLITE_CANTOPEN || ec == SQLITE_READONLY ||
		    ec == SQLITE_PERM || ec == SQLITE_IOERR ||
		    ec == SQLITE_FULL || ec == SQLITE_NOTADB)
			rc = ms_fail(eb, MS_ERR_IO,
			             "event database %s: cannot create: %s; "
			             "expected a writable file in an existing "
			             "directory",
			             path, why);
		rec_free(r);
		/* The file was new (or removed above): it and the WAL files
		 * the failed set-up made are ours. */
		ms_evdb_remove(path);
		return rc;
	}
	r->timer_started = true;
	*out = r;
	return 0;
}

const char *
ms_rec_path(const ms_rec *r)
{
	return r->path;
}

/* Start (or join) the batch; caller holds the lock. */
static int
batch_begin(ms_rec *r, ms_errbuf *eb)
{
	if (r->dead)
		return dead_err(r, eb);
	if (r->pending == 0)
		return run_stmt(r, r->st[S_BEGIN], eb, "begin");
	return 0;
}

/* After a failed insert: if the batch holds nothing else, roll the open
 * transaction back so invariant 1 holds. Caller holds the lock. */
static void
batch_abort(ms_rec *r)
{
	if (r->pending == 0 && r->db && !sqlite3_get_autocommit(r->db))
		sqlite3_exec(r->db, "ROLLBACK", NULL, NULL, NULL);
}

/* Count one event in the batch and commit when it is full (or now); a
 * drain commits the rest at its end. */
static int
batch_end(ms_rec *r, bool now, ms_errbuf *eb)
{
	r->pending++;
	r->events++;
	if (now || r->pending >= r->batch_events)
		return commit_locked(r, eb);
	return 0;
}

static int
insert(ms_rec *r, int slot, int table, const int64_t *keys, const void *obj,
       ms_errbuf *eb)
{
	const ev_table *t = &tables[table];
	sqlite3_stmt *st = r->st[slot];
	for (unsigned k = 0; k < t->nkeys; k++)
		sqlite3_bind_int64(st, (int)k + 1, keys[k]);
	if (ms_sqlcols_bind(st, (int)t->nkeys + 1, t->cols, t->ncols, obj) !=
	    SQLITE_OK) {
		sqlite3_reset(st);
		return sql_fail(r, eb, t->name);
	}
	return run_stmt(r, st, eb, t->name);
}

/* End the event whose statements went as rc says: the batch takes it
 * (committing it when due) or, if they failed, is rolled back. Their
 * time is counted with the section holding the lock (design 8). Lock
 * held. */
static int
event_end(ms_rec *r, int rc, bool commit_now, ms_errbuf *eb)
{
	if (rc == 0)
		return batch_end(r, commit_now, eb);
	batch_abort(r);
	return rc;
}

/* Insert one object as one event of the batch; lock held. */
static int
record_locked(ms_rec *r, int slot, int table, const int64_t *keys,
              const void *obj, bool commit_now, ms_errbuf *eb)
{
	int rc = batch_begin(r, eb);
	if (rc == 0)
		rc = insert(r, slot, table, keys, obj, eb);
	return event_end(r, rc, commit_now, eb);
}

/* An event that commits at once, after the queue (design 0). */
static int
record_now(ms_rec *r, int slot, int table, const void *obj, ms_errbuf *eb)
{
	if (!r || !obj)
		return ms_fail(eb, MS_ERR_INVAL, "event database: no event");
	int64_t c0 = db_lock(r);
	int rc = record_locked(r, slot, table, NULL, obj, true, eb);
	db_unlock(r, c0);
	return rc;
}

static const struct {
	int slot, table;
	size_t size;
} qkinds[Q_KINDS] = {
	[Q_PUB] = { S_PUB, T_PUB, sizeof(ms_ev_pub) },
	[Q_MERGE] = { S_MERGE, T_MERGE, sizeof(ms_ev_merge) },
	[Q_PART] = { S_PART, T_PART, sizeof(ms_ev_part) },
	[Q_SAMPLE] = { S_SAMPLE, T_SAMPLE, sizeof(ms_ev_sample) },
	[Q_PLOG] = { S_PLOG, T_PLOG, sizeof(ms_ev_plugin_log) },
	[Q_PLOGC] = { S_PLOGC, T_PLOGC, sizeof(ms_ev_plugin_log_count) },
};

/* n as a new entry of r's queue, once there is room (design 7), or the
 * recorder's failure. qlock held. */
static int
queue_put(ms_rec *r, struct qev *n, ms_errbuf *eb)
{
	int64_t w0 = 0;
	while (!r->dead && r->q_bytes > 0 && r->q_bytes + n->bytes > r->q_cap) {
		if (!w0)
			w0 = ms_mono_ns();
		r->q_waiters++;
		pthread_cond_signal(&r->wake);
		pthread_cond_wait(&r->space, &r->qlock);
		r->q_waiters--;
	}
	if (w0)
		r->q_wait_ns += ms_mono_ns() - w0;
	if (r->dead)
		return dead_err(r, eb);
	if (r->q_tail) {
		r->q_tail->next = n;
	} else {
		r->q_head = n;
		r->q_first_ns = ms_mono_ns();
	}
	r->q_tail = n;
	r->q_bytes += n->bytes;
	if (n->kind == Q_MERGE)
		r->merges++;
	if (++r->q_n == 1 || r->q_n == r->batch_events)
		pthread_cond_signal(&r->wake);
	return 0;
}

/* An event not accepted for want of memory (e): the log would lack it,
 * so the recorder fails for good (design 5), after committing every
 * event accepted before it. */
static int
accept_fail(ms_rec *r, const ms_errbuf *e, int rc, ms_errbuf *eb)
{
	int64_t c0 = db_lock(r);
	if (!r->dead)
		(void)commit_locked(r, NULL);
	pthread_mutex_lock(&r->qlock);
	if (!r->dead) {
		r->dead = rc;
		r->dead_msg = *e;
	}
	pthread_cond_broadcast(&r->space);
	pthread_mutex_unlock(&r->qlock);
	db_unlock(r, c0);
	if (eb)
		*eb = *e;
	return rc;
}

/* Accept obj, an event of kind k: a copy of it into the queue (design
 * 0), its time counted as recording time (design 8). */
static int
enqueue(ms_rec *r, enum qkind k, const void *obj, ms_errbuf *eb)
{
	int64_t t0 = ms_mono_ns();
	size_t size = qkinds[k].size;
	const ms_ev_merge *m = k == Q_MERGE ? obj : NULL;
	size_t nin = m ? m->ninputs : 0;
	size_t bytes = sizeof(struct qev) + size + nin * sizeof(ms_ev_input);
	struct qev *n = malloc(bytes);
	if (!n) {
		ms_errbuf e;
		int rc =
		        ms_fail(&e, MS_ERR_NOMEM,
		                "event database %s: out of memory for an event "
		                "(%zu bytes)",
		                r->path, bytes);
		return accept_fail(r, &e, rc, eb);
	}
	n->next = NULL;
	n->kind = k;
	n->bytes = bytes;
	memcpy(n->obj, obj, size);
	if (m) {
		ms_ev_input *in = (ms_ev_input *)(void *)(n->obj + size);
		if (nin)
			memcpy(in, m->inputs, nin * sizeof(*in));
		((ms_ev_merge *)(void *)n->obj)->inputs = nin ? in : NULL;
	}
	pthread_mutex_lock(&r->qlock);
	int rc = queue_put(r, n, eb);
	r->q_busy_ns += ms_mono_ns() - t0;
	pthread_mutex_unlock(&r->qlock);
	if (rc)
		free(n);
	return rc;
}

static int
queue_event(ms_rec *r, enum qkind k, const void *obj, ms_errbuf *eb)
{
	if (!r || !obj)
		return ms_fail(eb, MS_ERR_INVAL, "event database: no event");
	return enqueue(r, k, obj, eb);
}

/* The run row (its end columns at zero values, replacing one written
 * before) and its plugins, inside the open transaction. Caller holds the
 * lock (or is opening). */
static int
write_run(ms_rec *r, const ms_ev_run *run, ms_errbuf *eb)
{
	int64_t key = 1;
	int rc = insert(r, S_RUN, T_RUN, &key, run, eb);
	if (rc == 0) {
		sqlite3_stmt *st = r->st[S_RUN_END];
		if (ms_sqlcols_bind(st, 1, end_cols, NCOLS(end_cols),
		                    &zero_end) != SQLITE_OK)
			rc = sql_fail(r, eb, "run");
		else
			rc = run_stmt(r, st, eb, "run");
	}
	for (uint32_t i = 0; rc == 0 && i < run->nplugins; i++) {
		key = i;
		rc = insert(r, S_PLUGIN, T_PLUGIN, &key, &run->plugins[i], eb);
	}
	return rc;
}

static int
check_run(const char *path, const ms_ev_run *run, ms_errbuf *eb)
{
	if (!run)
		return ms_fail(eb, MS_ERR_INVAL, "event database: no run");
	if (run->nplugins > MS_EV_LINKS_MAX)
		return ms_fail(eb, MS_ERR_RANGE,
		               "event database %s: %u plugins, at most %d",
		               path, run->nplugins, MS_EV_LINKS_MAX);
	return 0;
}

int
ms_rec_run_begin(ms_rec *r, const ms_ev_run *run, ms_errbuf *eb)
{
	if (!r)
		return ms_fail(eb, MS_ERR_INVAL, "event database: no run");
	int rc = check_run(r->path, run, eb);
	if (rc)
		return rc;
	int64_t c0 = db_lock(r);
	rc = batch_begin(r, eb);
	if (rc == 0)
		rc = write_run(r, run, eb);
	rc = event_end(r, rc, true, eb);
	db_unlock(r, c0);
	return rc;
}

/* One UPDATE of the run row (the statement in slot, bound by bind) in a
 * transaction of its own; what names it in errors. */
static int
update_run_row(ms_rec *r, int slot, int (*bind)(sqlite3_stmt *, const void *),
               const void *arg, const char *what, ms_errbuf *eb)
{
	int64_t c0 = db_lock(r);
	int rc = batch_begin(r, eb);
	if (rc == 0) {
		sqlite3_stmt *st = r->st[slot];
		if (bind(st, arg) != SQLITE_OK)
			rc = sql_fail(r, eb, what);
		else
			rc = run_stmt(r, st, eb, what);
	}
	if (rc == 0 && sqlite3_changes(r->db) != 1)
		rc = ms_fail(eb, MS_ERR_STATE,
		             "event database %s: %s without run begin", r->path,
		             what);
	rc = event_end(r, rc, true, eb);
	db_unlock(r, c0);
	return rc;
}

static int
bind_staged(sqlite3_stmt *st, const void *clone_method)
{
	return sqlite3_bind_text(st, 1, clone_method, -1, SQLITE_TRANSIENT);
}

static int
bind_end(sqlite3_stmt *st, const void *e)
{
	return ms_sqlcols_bind(st, 1, end_cols, NCOLS(end_cols), e);
}

int
ms_rec_run_staged(ms_rec *r, const char *clone_method, ms_errbuf *eb)
{
	if (!r || !clone_method)
		return ms_fail(eb, MS_ERR_INVAL,
		               "event database: no staging method");
	return update_run_row(r, S_STAGED, bind_staged, clone_method,
	                      "staging recorded", eb);
}

int
ms_rec_run_end(ms_rec *r, const ms_ev_run_end *e, ms_errbuf *eb)
{
	if (!r || !e)
		return ms_fail(eb, MS_ERR_INVAL, "event database: no run end");
	int rc = update_run_row(r, S_RUN_END, bind_end, e, "run end", eb);
	int64_t c0 = db_lock(r);
	if (rc == 0 && strcmp(e->status, "complete") != 0) {
		/* A run stopped with a merge under way may have recorded
		 * that merge before the engine counted it: the run row then
		 * counts the completed merges it holds. A complete run has
		 * none under way, and keeps the engine's count for the
		 * event_count gate to compare. */
		rc = batch_begin(r, eb);
		if (rc == 0)
			rc = run_stmt(r, r->st[S_RECOUNT], eb, "run end");
		rc = event_end(r, rc, true, eb);
	}
	if (rc == 0)
		r->ended = true;
	db_unlock(r, c0);
	return rc;
}

int
ms_rec_pub(ms_rec *r, const ms_ev_pub *p, ms_errbuf *eb)
{
	return queue_event(r, Q_PUB, p, eb);
}

int
ms_rec_merge(ms_rec *r, const ms_ev_merge *m, ms_errbuf *eb)
{
	if (!r || !m)
		return ms_fail(eb, MS_ERR_INVAL, "event database: no merge");
	if (m->nlinks > MS_EV_LINKS_MAX || (m->ninputs && !m->inputs))
		return ms_fail(eb, MS_ERR_INVAL,
		               "event database %s: merge %llu: %u links "
		               "(at most %d), %zu inputs%s",
		               r->path, (unsigned long long)m->seq, m->nlinks,
		               MS_EV_LINKS_MAX, m->ninputs,
		               m->ninputs && !m->inputs ? " without array"
		                                        : "");
	return enqueue(r, Q_MERGE, m, eb);
}

/* The rows of merge m (its inputs, links and batches) in the batch.
 * Lock held. */
static int
insert_merge(ms_rec *r, const ms_ev_merge *m)
{
	int rc = batch_begin(r, NULL);
	if (rc == 0)
		rc = insert(r, S_MERGE, T_MERGE, NULL, m, NULL);
	for (size_t i = 0; rc == 0 && i < m->ninputs; i++) {
		int64_t keys[2] = { (int64_t)m->seq, (int64_t)i };
		rc = insert(r, S_INPUT, T_INPUT, keys, &m->inputs[i], NULL);
	}
	for (uint32_t i = 0; rc == 0 && i < m->nlinks; i++) {
		int64_t keys[2] = { (int64_t)m->seq, (int64_t)i };
		rc = insert(r, S_LINK, T_LINK, keys, &m->links[i], NULL);
	}
	const ms_merge_sampling *sm = &m->sampling;
	for (uint32_t i = 0;
	     rc == 0 && i < sm->nbatch_recs && i < MS_MERGE_BATCH_RECS; i++) {
		int64_t keys[2] = { (int64_t)m->seq, (int64_t)i };
		rc = insert(r, S_BATCH, T_BATCH, keys, &sm->batch[i], NULL);
	}
	/* A run closed while a merge was under way records its end before
	 * the engine has finished that merge: when it completes, the run's
	 * count takes it in, so the run row agrees with the merge table
	 * (ms_rec_run_end counted those recorded before it). */
	if (rc == 0 && r->ended && !m->err)
		rc = run_stmt(r, r->st[S_LATE_MERGE], NULL, "late merge");
	if (rc == 0)
		r->pending_merges++;
	return event_end(r, rc, false, NULL);
}

/* A queued event into the batch (a drain); a failure is kept in r->dead
 * (design 5). Lock held. */
static int
insert_event(ms_rec *r, const struct qev *n)
{
	if (n->kind == Q_MERGE)
		return insert_merge(r,
		                    (const ms_ev_merge *)(const void *)n->obj);
	int64_t key = 0;
	if (n->kind == Q_PLOGC)
		key = ((const ms_ev_plugin_log_count *)(const void *)n->obj)
		              ->link;
	return record_locked(r, qkinds[n->kind].slot, qkinds[n->kind].table,
	                     &key, n->obj, false, NULL);
}

int
ms_rec_part(ms_rec *r, const ms_ev_part *p, ms_errbuf *eb)
{
	return queue_event(r, Q_PART, p, eb);
}

int
ms_rec_sample(ms_rec *r, const ms_ev_sample *s, ms_errbuf *eb)
{
	return queue_event(r, Q_SAMPLE, s, eb);
}

int
ms_rec_phase(ms_rec *r, const ms_ev_phase *p, ms_errbuf *eb)
{
	return record_now(r, S_PHASE, T_PHASE, p, eb);
}

int
ms_rec_gate(ms_rec *r, const ms_ev_gate *g, ms_errbuf *eb)
{
	return record_now(r, S_GATE, T_GATE, g, eb);
}

int
ms_rec_recon(ms_rec *r, const ms_ev_recon *c, ms_errbuf *eb)
{
	return record_now(r, S_RECON, T_RECON, c, eb);
}

int
ms_rec_plugin_stat(ms_rec *r, const ms_ev_plugin_stat *s, ms_errbuf *eb)
{
	return record_now(r, S_PSTAT, T_PSTAT, s, eb);
}

int
ms_rec_plugin_log(ms_rec *r, const ms_ev_plugin_log *l, ms_errbuf *eb)
{
	return queue_event(r, Q_PLOG, l, eb);
}

int
ms_rec_plugin_log_count(ms_rec *r, const ms_ev_plugin_log_count *c,
                        ms_errbuf *eb)
{
	return queue_event(r, Q_PLOGC, c, eb);
}

/* Commit what the queue holds and, if sql, run it after (what names it
 * in an error): holding the connection throughout (design 4, 8). */
static int
commit_then(ms_rec *r, const char *sql, const char *what, ms_errbuf *eb)
{
	if (!r)
		return 0;
	int64_t c0 = db_lock(r);
	int rc = dead_err(r, eb);
	if (rc == 0)
		rc = commit_locked(r, eb);
	if (rc == 0 && sql &&
	    sqlite3_exec(r->db, sql, NULL, NULL, NULL) != SQLITE_OK)
		rc = sql_fail(r, eb, what);
	db_unlock(r, c0);
	return rc;
}

/* Nothing reads part_event by part while the run writes it, and keeping
 * an index of its rows (~7,000 on day-2x) up to date insert by insert
 * (the removed parts' IDs land all over it, each commit rewriting those
 * pages) cost more than building it once, at the end. */
int
ms_rec_index(ms_rec *r, ms_errbuf *eb)
{
	return commit_then(r,
	                   "CREATE INDEX IF NOT EXISTS part_event_by_part ON "
	                   "part_event(part_id)",
	                   "part_event index", eb);
}

int
ms_rec_flush(ms_rec *r, ms_errbuf *eb)
{
	return commit_then(r, NULL, NULL, eb);
}

/* The one integer `sql` (a query over table `table`, named in an error)
 * answers. Lock held. */
static int
int_query(ms_rec *r, const char *sql, const char *table, int64_t *out,
          ms_errbuf *eb)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(r->db, sql, -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_ROW) {
		sqlite3_finalize(st);
		return sql_fail(r, eb, table);
	}
	*out = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return 0;
}

/* max(id) of a table with an id column (0 when empty). Lock held. */
static int
max_id(ms_rec *r, const char *table, int64_t *out, ms_errbuf *eb)
{
	char sql[96];
	snprintf(sql, sizeof(sql), "SELECT coalesce(max(id), 0) FROM %s",
	         table);
	return int_query(r, sql, table, out, eb);
}

/* count(*) of a table. Lock held. */
static int
count_rows(ms_rec *r, const char *table, int64_t *out, ms_errbuf *eb)
{
	char sql[96];
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s", table);
	return int_query(r, sql, table, out, eb);
}

int
ms_rec_merge_rows(ms_rec *r, uint64_t *out, ms_errbuf *eb)
{
	*out = 0;
	if (!r)
		return ms_fail(eb, MS_ERR_INVAL, "event database: none open");
	int64_t n = 0;
	int64_t c0 = db_lock(r);
	int rc = dead_err(r, eb);
	if (rc == 0)
		rc = commit_locked(r, eb);
	if (rc == 0)
		rc = count_rows(r, "merge", &n, eb);
	db_unlock(r, c0);
	*out = (uint64_t)n;
	return rc;
}

void
ms__rec_hold(ms_rec *r, bool hold)
{
	pthread_mutex_lock(&r->qlock);
	r->hold = hold;
	pthread_cond_signal(&r->wake);
	pthread_mutex_unlock(&r->qlock);
}

size_t
ms__rec_cache_bytes(ms_rec *r)
{
	int cur = 0, hi = 0;
	int64_t c0 = db_lock(r);
	if (r->db)
		sqlite3_db_status(r->db, SQLITE_DBSTATUS_CACHE_USED, &cur, &hi,
		                  0);
	db_unlock(r, c0);
	return cur > 0 ? (size_t)cur : 0;
}

uint32_t
ms__rec_waiters(ms_rec *r)
{
	pthread_mutex_lock(&r->qlock);
	uint32_t n = r->q_waiters;
	pthread_mutex_unlock(&r->qlock);
	return n;
}

void
ms__rec_forget_merge(ms_rec *r, uint64_t seq)
{
	sqlite3_stmt *st = NULL;
	int64_t c0 = db_lock(r);
	if (commit_locked(r, NULL) == 0 &&
	    sqlite3_prepare_v2(r->db, "DELETE FROM merge WHERE seq = ?", -1,
	                       &st, NULL) == SQLITE_OK) {
		sqlite3_bind_int64(st, 1, (int64_t)seq);
		(void)sqlite3_step(st);
	}
	sqlite3_finalize(st);
	db_unlock(r, c0);
}

int
ms_rec_mark_get(ms_rec *r, uint64_t pubs, uint64_t merge_seq,
                ms_rec_mark *m, ms_errbuf *eb)
{
	memset(m, 0, sizeof(*m));
	m->pubs = pubs;
	m->merge_seq = merge_seq;
	int64_t c0 = db_lock(r);
	int rc = dead_err(r, eb);
	if (rc == 0)
		rc = commit_locked(r, eb);
	if (rc == 0)
		rc = max_id(r, "part_event", &m->part_id, eb);
	if (rc == 0)
		rc = max_id(r, "sample", &m->sample_id, eb);
	db_unlock(r, c0);
	return rc;
}

/* DELETE FROM table WHERE key > v; adds the rows removed. Lock held. */
static int
delete_after(ms_rec *r, const char *table, const char *key, int64_t v,
             uint64_t *removed, ms_errbuf *eb)
{
	char sql[128];
	sqlite3_stmt *st = NULL;
	snprintf(sql, sizeof(sql), "DELETE FROM %s WHERE %s > ?", table, key);
	if (sqlite3_prepare_v2(r->db, sql, -1, &st, NULL) != SQLITE_OK) {
		sqlite3_finalize(st);
		return sql_fail(r, eb, table);
	}
	sqlite3_bind_int64(st, 1, v);
	int step = sqlite3_step(st);
	sqlite3_finalize(st);
	if (step != SQLITE_DONE)
		return sql_fail(r, eb, table);
	*removed += (uint64_t)sqlite3_changes(r->db);
	return 0;
}

int
ms_rec_rollback(ms_rec *r, const ms_rec_mark *m, ms_ev_seek *s,
                ms_errbuf *eb)
{
	static const char *const by_seq[] = { "merge", "merge_input",
		                              "merge_link", "merge_batch" };
	int64_t c0 = db_lock(r);
	s->removed = 0;
	int rc = dead_err(r, eb);
	if (rc == 0)
		rc = commit_locked(r, eb);
	if (rc == 0)
		rc = batch_begin(r, eb);
	/* The publication rows kept are seq 0 .. pubs - 1. */
	if (rc == 0)
		rc = delete_after(r, "publication", "seq", (int64_t)m->pubs - 1,
		                  &s->removed, eb);
	for (size_t i = 0; rc == 0 && i < NCOLS(by_seq); i++) {
		uint64_t before = s->removed;
		rc = delete_after(r, by_seq[i], "seq", (int64_t)m->merge_seq,
		                  &s->removed, eb);
		if (rc == 0 && i == 0) {
			/* The merge events counted (ms_rec_stats, the
			 * event_count gate) are the live ones. */
			uint64_t gone = s->removed - before;
			pthread_mutex_lock(&r->qlock);
			r->merges -= gone < r->merges ? gone : r->merges;
			pthread_mutex_unlock(&r->qlock);
			atomic_fetch_sub(&r->merges_committed, gone);
		}
	}
	if (rc == 0)
		rc = delete_after(r, "part_event", "id", m->part_id,
		                  &s->removed, eb);
	if (rc == 0)
		rc = delete_after(r, "sample", "id", m->sample_id, &s->removed,
		                  eb);
	/* Records of phases and of the run's end, all after any mark (one
	 * is taken in the primary phase): the re-run records them again. A
	 * complete run records its end as it completes, so one gone back
	 * from there has its status taken back (the run has not ended). */
	static const char *const ends[] = { "phase", "gate", "reconcile",
		                            "plugin_stat" };
	for (size_t i = 0; rc == 0 && i < NCOLS(ends); i++)
		rc = delete_after(r, ends[i], "rowid", 0, &s->removed, eb);
	if (rc == 0 && r->ended) {
		rc = exec(r, "UPDATE run SET status = '', error = '' "
		             "WHERE id = 1",
		          eb);
		if (rc == 0)
			r->ended = false;
	}
	if (rc == 0) {
		/* The removals are one event of the batch the seek row
		 * joins and commits. */
		r->pending++;
		rc = record_locked(r, S_SEEK, T_SEEK, NULL, s, true, eb);
	} else {
		batch_abort(r);
	}
	db_unlock(r, c0);
	return rc;
}

int
ms_rec_failed(ms_rec *r, ms_errbuf *eb)
{
	if (!r)
		return 0;
	pthread_mutex_lock(&r->qlock);
	int rc = dead_err(r, eb);
	pthread_mutex_unlock(&r->qlock);
	return rc;
}

void
ms_rec_stats_get(ms_rec *r, ms_rec_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!r)
		return;
	/* merges_committed is atomic so a poller need not take the lock */
	out->merges_committed = atomic_load(&r->merges_committed);
	pthread_mutex_lock(&r->lock);
	out->events = r->events;
	out->commits = r->commits;
	out->busy_ns = r->busy_ns;
	out->failed_statements = r->failed_statements;
	pthread_mutex_lock(&r->qlock);
	out->merges = r->merges;
	out->busy_ns += r->q_busy_ns;
	out->queue_ns = r->q_busy_ns;
	out->wait_ns = r->q_wait_ns;
	pthread_mutex_unlock(&r->qlock);
	pthread_mutex_unlock(&r->lock);
}

/* ---------------------------------------------------------------------- */
/* The write-ahead log at the end of a run. */

/* Whether path's write-ahead log holds nothing: no -wal file, or an
 * empty one. */
static bool
wal_empty(const char *path)
{
	char wal[4200];
	struct stat st;
	snprintf(wal, sizeof(wal), "%s-wal", path);
	if (stat(wal, &st) != 0)
		return errno == ENOENT;
	return S_ISREG(st.st_mode) && st.st_size == 0;
}

/* Whether path is an SQLite database in WAL mode (file format bytes 18
 * and 19 are 2). */
static bool
wal_mode(const char *path)
{
	unsigned char h[20];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	bool wal = fd >= 0 &&
	           pread(fd, h, sizeof(h), 0) == (ssize_t)sizeof(h) &&
	           memcmp(h, "SQLite format 3", 16) == 0 && h[18] == 2 &&
	           h[19] == 2;
	if (fd >= 0)
		close(fd);
	return wal;
}

/*
 * Fold db's write-ahead log into path's main file (a truncating
 * checkpoint), then go back to a rollback journal, so that path alone is
 * the whole log and readers (report, export, bench) leave no empty -wal
 * and -shm beside it. Left in WAL mode, harmlessly, when another
 * connection still has the file open (the -wal is then empty). When the
 * checkpoint cannot finish (a full disk: the main file cannot grow to take
 * the log's pages), every event is still there, but only in the two files
 * together: MS_ERR_IO saying so, and why.
 */
/* Whether path's -wal is empty; if not, MS_ERR_IO saying that the events
 * are in the database and its -wal together, and why (what failed). */
static int
wal_left(const char *path, const char *why, ms_errbuf *eb)
{
	if (wal_empty(path))
		return 0;
	char wal[4200];
	struct stat st;
	snprintf(wal, sizeof(wal), "%s-wal", path);
	double mib = stat(wal, &st) == 0 ? (double)st.st_size / 1048576 : 0;
	return ms_fail(eb, MS_ERR_IO,
	               "event database %s: its events are in it and in "
	               "its write-ahead log %s (%.1f MiB), not in the file "
	               "alone (folding the log in failed: %s); keep, copy "
	               "and move the two files together",
	               path, wal, mib, why);
}

/*
 * Fold db's write-ahead log into path's main file (a truncating
 * checkpoint), then go back to a rollback journal, so that path alone is
 * the whole log and readers (report, export, bench) leave no empty -wal
 * and -shm beside it. Left in WAL mode, harmlessly, when another
 * connection still has the file open (the -wal is then empty). When the
 * checkpoint cannot finish (a full disk: the main file cannot grow to take
 * the log's pages), every event is still there, but only in the two files
 * together: MS_ERR_IO saying so, and why.
 */
static int
wal_fold(sqlite3 *db, const char *path, ms_errbuf *eb)
{
	char why[512] = "another process has it open";
	if (sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_TRUNCATE,
	                              NULL, NULL) == SQLITE_OK)
		sqlite3_exec(db, "PRAGMA journal_mode = DELETE", NULL, NULL,
		             NULL);
	else
		sqlite_why(db, why, sizeof(why));
	return wal_left(path, why, eb);
}

int
ms_evdb_fold_wal(const char *path, ms_errbuf *eb)
{
	if (!path || !path[0])
		return ms_fail(eb, MS_ERR_INVAL, "event database: no path");
	/* Nothing to fold, and no reader will leave a -wal: a database
	 * whose last writer died in WAL mode still goes back to a rollback
	 * journal. */
	if (wal_empty(path) && !wal_mode(path))
		return 0;
	sqlite3 *db = NULL;
	int rc;
	/* Read first: a connection that has not, does not know the file is
	 * in WAL mode and checkpoints nothing. */
	if (sqlite3_open_v2(path, &db,
	                    SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
	                    NULL) == SQLITE_OK &&
	    sqlite3_busy_timeout(db, 5000) == SQLITE_OK &&
	    sqlite3_exec(db, "SELECT count(*) FROM sqlite_master", NULL, NULL,
	                 NULL) == SQLITE_OK) {
		rc = wal_fold(db, path, eb);
	} else {
		char why[512];
		sqlite_why(db, why, sizeof(why));
		rc = wal_left(path, why, eb);
	}
	sqlite3_close(db);
	return rc;
}

int
ms_rec_close(ms_rec *r, ms_errbuf *eb)
{
	if (!r)
		return 0;
	if (r->timer_started) {
		pthread_mutex_lock(&r->qlock);
		r->stop = true;
		pthread_cond_signal(&r->wake);
		pthread_mutex_unlock(&r->qlock);
		pthread_join(r->timer, NULL);
	}
	/* every event accepted is in the queue or committed: drain it, and
	 * build the index if the run did not */
	int rc = ms_rec_index(r, eb);
	/* a failed flush leaves a transaction open: roll it back cleanly */
	if (rc < 0 && !sqlite3_get_autocommit(r->db))
		sqlite3_exec(r->db, "ROLLBACK", NULL, NULL, NULL);
	for (int i = 0; i < S_COUNT; i++) {
		sqlite3_finalize(r->st[i]);
		r->st[i] = NULL;
	}
	/* The run is over: its log into the database file, back to a
	 * rollback journal (after a failure, ms_evdb_fold_wal can do it
	 * once the disk has room again). */
	if (rc == 0)
		rc = wal_fold(r->db, r->path, eb);
	if (sqlite3_close(r->db) != SQLITE_OK && rc == 0)
		rc = ms_fail(eb, MS_ERR_IO, "event database %s: close: %s",
		             r->path, sqlite3_errmsg(r->db));
	r->db = NULL;
	rec_free(r);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* Reader. */

struct ms_evdb {
	sqlite3 *db;
	char *path;
	bool wal_missing; /* in WAL mode, no write-ahead log beside it */
};

static int
db_fail(ms_evdb *d, ms_errbuf *eb, const char *what)
{
	return ms_fail(eb, MS_ERR_IO, "event database %s: %s: %s", d->path,
	               what, sqlite3_errmsg(d->db));
}

/* PRAGMA user_version, or UV_UNREADABLE when it cannot be read. */
static int64_t
user_version(sqlite3 *db)
{
	sqlite3_stmt *st = NULL;
	int64_t v = UV_UNREADABLE;
	if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL) ==
	            SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

/* Whether db has a table named run (every event log has one). */
static bool
has_run_table(sqlite3 *db)
{
	sqlite3_stmt *st = NULL;
	bool yes = sqlite3_prepare_v2(db,
	                              "SELECT 1 FROM sqlite_master WHERE "
	                              "type = 'table' AND name = 'run'",
	                              -1, &st, NULL) == SQLITE_OK &&
	           sqlite3_step(st) == SQLITE_ROW;
	sqlite3_finalize(st);
	return yes;
}

/* Whether path is an SQLite database with no -wal file beside it (or an
 * empty one, which a reader makes) that is in WAL mode (file format bytes
 * 18 and 19 are 2): a copy made without its write-ahead log, which may
 * lack any event the log held. */
static bool
wal_missing(const char *path)
{
	return wal_mode(path) && wal_empty(path);
}

/* Why ms_evdb_open refuses a database of user_version v (UV_UNREADABLE:
 * none), or 0 when it is an event log of this schema. A version no
 * mergescope writes (a negative one: user_version is signed) is said to
 * be another SQLite database's, not an older or a newer log's. */
static int
version_refused(sqlite3 *db, const char *path, int64_t v, ms_errbuf *eb)
{
	if (v == UV_UNREADABLE)
		return ms_fail(eb, MS_ERR_FORMAT,
		               "event database %s: not an SQLite database "
		               "(%s); expected an event log of schema "
		               "version %d",
		               path, sqlite3_errmsg(db), MS_EV_SCHEMA_VERSION);
	if (v == MS_EV_SCHEMA_VERSION)
		return 0;
	if (v == 0 && !has_run_table(db))
		return ms_fail(eb, MS_ERR_FORMAT,
		               "event database %s: not an event database (an "
		               "empty file or another SQLite database: no run "
		               "table); expected one written by `mergescope "
		               "run`",
		               path);
	/* A version no mergescope writes, or any without the run table
	 * every event log has (another program's database). */
	if (v < 0 || !has_run_table(db))
		return ms_fail(eb, MS_ERR_FORMAT,
		               "event database %s: an SQLite database of "
		               "schema version %" PRId64 ", not one "
		               "mergescope writes; expected an event log of "
		               "schema version %d",
		               path, v, MS_EV_SCHEMA_VERSION);
	return ms_fail(eb, MS_ERR_FORMAT,
	               "event database %s: schema version %" PRId64
	               ", expected %d (%s)",
	               path, v, MS_EV_SCHEMA_VERSION,
	               v < MS_EV_SCHEMA_VERSION
	                       ? "recorded by an older mergescope: run "
	                         "the variant again to read it here"
	                       : "recorded by a newer mergescope: read it "
	                         "with that one");
}

/*
 * Open path read-only as an immutable SQLite URI: no -wal or -shm file is
 * made or read. For a database in WAL mode in a directory this process
 * cannot write (a read-only mount, another user's runs/): a reader needs
 * those files and cannot make them there. Used only when the -wal is
 * empty or absent, so the main file is the whole database.
 */
static int
open_immutable(sqlite3 **db, const char *path)
{
	size_t n = strlen(path);
	char *uri = malloc(3 * n + 32);
	if (!uri)
		return SQLITE_NOMEM;
	char *u = uri + sprintf(uri, path[0] == '/' ? "file://" : "file:");
	for (const char *p = path; *p; p++)
		u += strchr("%?#", *p) ? sprintf(u, "%%%02X", (unsigned)*p)
		                       : sprintf(u, "%c", *p);
	strcpy(u, "?immutable=1");
	int rc = sqlite3_open_v2(uri, db,
	                         SQLITE_OPEN_READONLY | SQLITE_OPEN_URI |
	                                 SQLITE_OPEN_NOMUTEX,
	                         NULL);
	free(uri);
	return rc;
}

/* Why ms_evdb_open cannot read path (access failed with e): a missing
 * file is said to be expected from `mergescope run`; a file this user may
 * not read is said to be that, with its mode and owner (the file is not
 * taken for something else); anything else with its cause. */
static int
unreadable(const char *path, int e, ms_errbuf *eb)
{
	struct stat st;
	if (e == ENOENT)
		return ms_fail(eb, MS_ERR_NOTFOUND,
		               "event database %s: %s; expected a database "
		               "written by `mergescope run`",
		               path, strerror(e));
	if (e == EACCES && stat(path, &st) == 0)
		return ms_fail(eb, MS_ERR_IO,
		               "event database %s: this user (uid %u) may not "
		               "read it (%s: mode %04o, owner uid %u); read "
		               "it as its owner or make it readable",
		               path, (unsigned)geteuid(), strerror(e),
		               (unsigned)(st.st_mode & 07777),
		               (unsigned)st.st_uid);
	if (e == EACCES)
		return ms_fail(eb, MS_ERR_IO,
		               "event database %s: this user (uid %u) may not "
		               "reach it (%s: a directory on its path is not "
		               "searchable)",
		               path, (unsigned)geteuid(), strerror(e));
	return ms_fail(eb, MS_ERR_IO, "event database %s: cannot read it (%s)",
	               path, strerror(e));
}

int
ms_evdb_open(ms_evdb **out, const char *path, ms_errbuf *eb)
{
	*out = NULL;
	if (!path || !path[0])
		return ms_fail(eb, MS_ERR_INVAL, "event database: no path");
	if (access(path, R_OK) != 0)
		return unreadable(path, errno, eb);
	struct stat st;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return ms_fail(eb, MS_ERR_INVAL,
		               "event database %s: is a directory; expected a "
		               "database written by `mergescope run`",
		               path);
	ms_evdb *d = calloc(1, sizeof(*d));
	if (!d || !(d->path = strdup(path))) {
		bool had = d != NULL;
		free(d);
		return ms_fail(eb, MS_ERR_NOMEM,
		               "event database %s: out of memory for its %s "
		               "(%zu bytes)",
		               path, had ? "path" : "reader",
		               had ? strlen(path) + 1 : sizeof(*d));
	}
	int rc = 0;
	if (sqlite3_open_v2(path, &d->db,
	                    SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX,
	                    NULL) != SQLITE_OK) {
		rc = ms_fail(eb, MS_ERR_IO,
		             "event database %s: cannot open: %s", path,
		             d->db ? sqlite3_errmsg(d->db)
		                   : "out of memory for its SQLite connection");
		goto fail;
	}
	sqlite3_busy_timeout(d->db, 5000);
	int64_t v = user_version(d->db);
	int why = sqlite3_errcode(d->db) & 0xff;
	if (v == UV_UNREADABLE &&
	    (why == SQLITE_CANTOPEN || why == SQLITE_READONLY)) {
		if (!wal_empty(path)) {
			rc = ms_fail(
			        eb, MS_ERR_IO,
			        "event database %s: cannot read its "
			        "write-ahead log %s-wal here (%s); copy the "
			        "database with its -wal file to a directory "
			        "you can write",
			        path, path, sqlite3_errmsg(d->db));
			goto fail;
		}
		sqlite3_close(d->db);
		d->db = NULL;
		if (open_immutable(&d->db, path) == SQLITE_OK)
			v = user_version(d->db);
	}
	if (v == UV_UNREADABLE && (why == SQLITE_BUSY || why == SQLITE_LOCKED)) {
		rc = ms_fail(eb, MS_ERR_TIMEOUT,
		             "event database %s: locked by another process "
		             "(one writing it) for over 5 s; expected it free "
		             "to read: try again once that process is done",
		             path);
		goto fail;
	}
	if ((v == UV_UNREADABLE || (v == 0 && !has_run_table(d->db))) &&
	    wal_missing(path)) {
		rc = ms_fail(eb, MS_ERR_FORMAT,
		             "event database %s: unreadable alone (%s): it was "
		             "left in WAL mode and its write-ahead log %s-wal, "
		             "which holds events, is not beside it; expected "
		             "the database with its -wal file",
		             path,
		             v == UV_UNREADABLE ? sqlite3_errmsg(d->db)
		                                : "no run table",
		             path);
		goto fail;
	}
	if ((rc = version_refused(d->db, path, v, eb)))
		goto fail;
	d->wal_missing = wal_missing(path);
	*out = d;
	return 0;
fail:
	ms_evdb_close(d);
	return rc;
}

bool
ms_evdb_wal_missing(const ms_evdb *d)
{
	return d->wal_missing;
}

void
ms_evdb_close(ms_evdb *d)
{
	if (!d)
		return;
	sqlite3_close(d->db);
	free(d->path);
	free(d);
}

const char *
ms_evdb_path(const ms_evdb *d)
{
	return d->path;
}

static int
select_prepare(ms_evdb *d, int table, const char *where, sqlite3_stmt **st,
               ms_errbuf *eb)
{
	char sql[8192];
	if (!ms_sqltab_select_sql(&tables[table], where, sql, sizeof(sql)))
		return ms_fail(eb, MS_ERR_RANGE, "select too long");
	if (sqlite3_prepare_v2(d->db, sql, -1, st, NULL) != SQLITE_OK)
		return db_fail(d, eb, tables[table].name);
	return 0;
}

static int
corrupt(ms_evdb *d, ms_errbuf *eb, const char *table)
{
	return ms_fail(eb, MS_ERR_CORRUPT,
	               "event database %s: table %s holds a value this "
	               "version does not know",
	               d->path, table);
}

int
ms_evdb_run(ms_evdb *d, ms_ev_run *run, ms_ev_run_end *end, bool *has_end,
            ms_errbuf *eb)
{
	ms_ev_run tmp_run;
	ms_ev_run_end tmp_end;
	if (!run)
		run = &tmp_run;
	if (!end)
		end = &tmp_end;
	memset(run, 0, sizeof(*run));
	memset(end, 0, sizeof(*end));
	if (has_end)
		*has_end = false;
	sqlite3_stmt *st = NULL;
	int rc = select_prepare(d, T_RUN, NULL, &st, eb);
	if (rc < 0)
		return rc;
	int s = sqlite3_step(st);
	if (s != SQLITE_ROW) {
		sqlite3_finalize(st);
		if (s == SQLITE_DONE)
			return ms_fail(eb, MS_ERR_NOTFOUND,
			               "event database %s: no run record",
			               d->path);
		return db_fail(d, eb, "run");
	}
	if (!ms_sqlcols_read(st, 0, run_cols, NCOLS(run_cols), run))
		rc = corrupt(d, eb, "run");
	sqlite3_finalize(st);
	if (rc < 0)
		return rc;

	/* the end columns */
	char sql[4096];
	size_t len = 0;
	bool ok = ms_sql_cat(sql, sizeof(sql), &len, "SELECT ");
	for (size_t i = 0; i < NCOLS(end_cols); i++)
		ok = ok &&
		     (i == 0 || ms_sql_cat(sql, sizeof(sql), &len, ", ")) &&
		     ms_sql_cat(sql, sizeof(sql), &len, end_cols[i].name);
	ok = ok && ms_sql_cat(sql, sizeof(sql), &len, " FROM run WHERE id = 1");
	if (!ok)
		return ms_fail(eb, MS_ERR_RANGE, "select too long");
	if (sqlite3_prepare_v2(d->db, sql, -1, &st, NULL) != SQLITE_OK)
		return db_fail(d, eb, "run");
	if (sqlite3_step(st) == SQLITE_ROW &&
	    !ms_sqlcols_read(st, 0, end_cols, NCOLS(end_cols), end))
		rc = corrupt(d, eb, "run");
	sqlite3_finalize(st);
	if (rc < 0)
		return rc;
	if (has_end)
		*has_end = end->status[0] != '\0';

	rc = select_prepare(d, T_PLUGIN, NULL, &st, eb);
	if (rc < 0)
		return rc;
	while (sqlite3_step(st) == SQLITE_ROW &&
	       run->nplugins < MS_EV_LINKS_MAX) {
		if (!ms_sqlcols_read(st, 0, plugin_cols, NCOLS(plugin_cols),
		                     &run->plugins[run->nplugins++]))
			rc = corrupt(d, eb, "run_plugin");
	}
	sqlite3_finalize(st);
	return rc;
}

void
ms_ev_merge_summary(const ms_ev_merge *m, char *buf, size_t n)
{
	if (!n)
		return;
	int w = snprintf(buf, n, "#%llu %s/%u %s %s %s in",
	                 (unsigned long long)m->seq, m->lane, m->worker,
	                 ms_ev_phase_name(m->phase),
	                 ms_ev_class_name(m->sampling.klass),
	                 ms_ev_reason_name(m->sampling.reason));
	size_t len = w < 0 ? 0 : (size_t)w;
	for (size_t i = 0; m->inputs && i < m->ninputs && len < n; i++) {
		w = snprintf(buf + len, n - len, "%s%016llx", i ? "," : " ",
		             (unsigned long long)m->inputs[i].id);
		len += w < 0 ? 0 : (size_t)w;
	}
	if (len < n)
		snprintf(buf + len, n - len, " out %016llx%s%s",
		         (unsigned long long)m->output.id,
		         m->err ? " error " : "", m->err ? m->error : "");
}

/* Whether needle[0..nl) occurs in hay, ignoring case. */
static bool
contains_ci(const char *hay, const char *needle, size_t nl)
{
	if (nl == 0)
		return true;
	for (; *hay; hay++)
		if (strncasecmp(hay, needle, nl) == 0)
			return true;
	return false;
}

bool
ms_ev_text_match(const char *hay, const char *words)
{
	for (const char *w = words; w && *w;) {
		w += strspn(w, " \t");
		size_t wl = strcspn(w, " \t");
		if (wl && !contains_ci(hay, w, wl))
			return false;
		w += wl;
	}
	return true;
}

bool
ms_ev_filter_match(const ms_ev_filter *f, const ms_ev_merge *m)
{
	if (!f)
		return true;
	if (f->lane && f->lane[0] && strcmp(f->lane, m->lane) != 0)
		return false;
	if (f->klass && f->klass - 1 != (int)m->sampling.klass)
		return false;
	if (f->reason && f->reason - 1 != (int)m->sampling.reason)
		return false;
	if (f->phase && f->phase - 1 != (int)m->phase)
		return false;
	if (f->has_seq_range && (m->seq < f->seq_min || m->seq > f->seq_max))
		return false;
	if (f->text && f->text[0]) {
		/* summaries of large finalize merges can be long */
		size_t n = 128 + m->ninputs * 17 + MS_EV_TEXT_MAX;
		char *buf = malloc(n);
		if (!buf)
			return true;
		ms_ev_merge_summary(m, buf, n);
		bool hit = ms_ev_text_match(buf, f->text);
		free(buf);
		return hit;
	}
	return true;
}

int
ms_evdb_each_merge(ms_evdb *d, const ms_ev_filter *f, ms_ev_merge_fn fn,
                   void *ctx, ms_errbuf *eb)
{
	sqlite3_stmt *st = NULL, *in = NULL, *ln = NULL, *bt = NULL;
	ms_ev_input *inputs = NULL;
	size_t cap = 0;
	int rc = select_prepare(d, T_MERGE, NULL, &st, eb);
	if (rc == 0)
		rc = select_prepare(d, T_INPUT, "seq = ?", &in, eb);
	if (rc == 0)
		rc = select_prepare(d, T_LINK, "seq = ?", &ln, eb);
	if (rc == 0)
		rc = select_prepare(d, T_BATCH, "seq = ?", &bt, eb);
	int s;
	while (rc == 0 && (s = sqlite3_step(st)) == SQLITE_ROW) {
		ms_ev_merge m;
		memset(&m, 0, sizeof(m));
		if (!ms_sqlcols_read(st, 0, merge_cols, NCOLS(merge_cols),
		                     &m)) {
			rc = corrupt(d, eb, "merge");
			break;
		}
		size_t want = m.ninputs;
		m.ninputs = 0;
		m.nlinks = 0;
		sqlite3_bind_int64(in, 1, (sqlite3_int64)m.seq);
		while (sqlite3_step(in) == SQLITE_ROW) {
			if (m.ninputs == cap) {
				size_t nc = cap ? cap * 2 : 32;
				ms_ev_input *ni =
				        realloc(inputs, nc * sizeof(*ni));
				if (!ni) {
					rc = ms_fail(eb, MS_ERR_NOMEM,
					             "event database %s: out "
					             "of memory for merge "
					             "%llu's inputs (%zu "
					             "bytes)",
					             d->path,
					             (unsigned long long)m.seq,
					             nc * sizeof(*ni));
					break;
				}
				inputs = ni;
				cap = nc;
			}
			memset(&inputs[m.ninputs], 0, sizeof(*inputs));
			ms_sqlcols_read(in, 0, input_cols, NCOLS(input_cols),
			                &inputs[m.ninputs++]);
		}
		sqlite3_reset(in);
		if (rc < 0)
			break;
		if (m.ninputs != want) {
			rc = ms_fail(eb, MS_ERR_CORRUPT,
			             "event database %s: merge %llu lists %zu "
			             "inputs, expected %zu",
			             d->path, (unsigned long long)m.seq,
			             m.ninputs, want);
			break;
		}
		m.inputs = inputs;
		sqlite3_bind_int64(ln, 1, (sqlite3_int64)m.seq);
		while (sqlite3_step(ln) == SQLITE_ROW &&
		       m.nlinks < MS_EV_LINKS_MAX)
			if (!ms_sqlcols_read(ln, 0, link_cols, NCOLS(link_cols),
			                     &m.links[m.nlinks++]))
				rc = corrupt(d, eb, "merge_link");
		sqlite3_reset(ln);
		/* nbatch_recs is not a column: the rows say how many. */
		ms_merge_sampling *sm = &m.sampling;
		sm->nbatch_recs = 0;
		sqlite3_bind_int64(bt, 1, (sqlite3_int64)m.seq);
		while (rc == 0 && sqlite3_step(bt) == SQLITE_ROW &&
		       sm->nbatch_recs < MS_MERGE_BATCH_RECS)
			if (!ms_sqlcols_read(bt, 0, batch_cols,
			                     NCOLS(batch_cols),
			                     &sm->batch[sm->nbatch_recs++]))
				rc = corrupt(d, eb, "merge_batch");
		sqlite3_reset(bt);
		if (rc < 0)
			break;
		if (ms_ev_filter_match(f, &m))
			rc = fn(ctx, &m);
	}
	if (rc == 0 && s != SQLITE_DONE)
		rc = db_fail(d, eb, "merge");
	sqlite3_finalize(st);
	sqlite3_finalize(in);
	sqlite3_finalize(ln);
	sqlite3_finalize(bt);
	free(inputs);
	return rc;
}

/* Generic walk over a one-struct table. */
struct adapt;
static int adapt_call(void *c, const void *o, int table);

static int
each_simple(ms_evdb *d, int table, size_t size, struct adapt *ctx,
            ms_errbuf *eb)
{
	sqlite3_stmt *st = NULL;
	int rc = select_prepare(d, table, NULL, &st, eb);
	if (rc < 0)
		return rc;
	/* the largest simple struct is small; keep it on the stack */
	_Alignas(max_align_t) char obj[1024];
	if (size > sizeof(obj)) {
		sqlite3_finalize(st);
		return ms_fail(eb, MS_ERR_RANGE, "struct too large");
	}
	int s;
	while (rc == 0 && (s = sqlite3_step(st)) == SQLITE_ROW) {
		memset(obj, 0, size);
		if (!ms_sqlcols_read(st, 0, tables[table].cols,
		                     tables[table].ncols, obj))
			rc = corrupt(d, eb, tables[table].name);
		else
			rc = adapt_call(ctx, obj, table);
	}
	if (rc == 0 && s != SQLITE_DONE)
		rc = db_fail(d, eb, tables[table].name);
	sqlite3_finalize(st);
	return rc;
}

/* Typed callbacks over each_simple's untyped one. */
struct adapt {
	ms_ev_pub_fn pub;
	ms_ev_part_fn part;
	ms_ev_sample_fn sample;
	ms_ev_phase_fn phase;
	ms_ev_gate_fn gate;
	ms_ev_recon_fn recon;
	ms_ev_plugin_stat_fn pstat;
	ms_ev_plugin_log_fn plog;
	ms_ev_plugin_log_count_fn plogc;
	void *ctx;
};

static int
adapt_call(void *c, const void *o, int table)
{
	const struct adapt *a = c;
	switch (table) {
	case T_PUB:
		return a->pub(a->ctx, o);
	case T_PART:
		return a->part(a->ctx, o);
	case T_SAMPLE:
		return a->sample(a->ctx, o);
	case T_PHASE:
		return a->phase(a->ctx, o);
	case T_RECON:
		return a->recon(a->ctx, o);
	case T_PSTAT:
		return a->pstat(a->ctx, o);
	case T_PLOG:
		return a->plog(a->ctx, o);
	case T_PLOGC:
		return a->plogc(a->ctx, o);
	default:
		return a->gate(a->ctx, o);
	}
}

int
ms_evdb_each_pub(ms_evdb *d, ms_ev_pub_fn fn, void *ctx, ms_errbuf *eb)
{
	struct adapt a = { .pub = fn, .ctx = ctx };
	return each_simple(d, T_PUB, sizeof(ms_ev_pub), &a, eb);
}

int
ms_evdb_each_part(ms_evdb *d, ms_ev_part_fn fn, void *ctx, ms_errbuf *eb)
{
	struct adapt a = { .part = fn, .ctx = ctx };
	return each_simple(d, T_PART, sizeof(ms_ev_part), &a, eb);
}

int
ms_evdb_each_sample(ms_evdb *d, ms_ev_sample_fn fn, void *ctx, ms_errbuf *eb)
{
	struct adapt a = { .sample = fn, .ctx = ctx };
	return each_simple(d, T_SAMPLE, sizeof(ms_ev_sample), &a, eb);
}

int
ms_evdb_each_phase(ms_evdb *d, ms_ev_phase_fn fn, void *ctx, ms_errbuf *eb)
{
	struct adapt a = { .phase = fn, .ctx = ctx };
	return each_simple(d, T_PHASE, sizeof(ms_ev_phase), &a, eb);
}

int
ms_evdb_each_gate(ms_evdb *d, ms_ev_gate_fn fn, void *ctx, ms_errbuf *eb)
{
	struct adapt a = { .gate = fn, .ctx = ctx };
	return each_simple(d, T_GATE, sizeof(ms_ev_gate), &a, eb);
}

int
ms_evdb_each_recon(ms_evdb *d, ms_ev_recon_fn fn, void *ctx, ms_errbuf *eb)
{
	struct adapt a = { .recon = fn, .ctx = ctx };
	return each_simple(d, T_RECON, sizeof(ms_ev_recon), &a, eb);
}

int
ms_evdb_each_plugin_stat(ms_evdb *d, ms_ev_plugin_stat_fn fn, void *ctx,
                         ms_errbuf *eb)
{
	struct adapt a = { .pstat = fn, .ctx = ctx };
	return each_simple(d, T_PSTAT, sizeof(ms_ev_plugin_stat), &a, eb);
}

int
ms_evdb_each_plugin_log(ms_evdb *d, ms_ev_plugin_log_fn fn, void *ctx,
                        ms_errbuf *eb)
{
	struct adapt a = { .plog = fn, .ctx = ctx };
	return each_simple(d, T_PLOG, sizeof(ms_ev_plugin_log), &a, eb);
}

int
ms_evdb_each_plugin_log_count(ms_evdb *d, ms_ev_plugin_log_count_fn fn,
                              void *ctx, ms_errbuf *eb)
{
	/* The link is the table's key, which the generated SELECT leaves
	 * out: read it first. */
	char sql[512];
	size_t len = 0;
	int rc = 0;
	sqlite3_stmt *st = NULL;
	if (!ms_sql_cat(sql, sizeof(sql), &len, "SELECT link, ") ||
	    !ms_sqlcols_list(plogc_cols, NCOLS(plogc_cols), NULL, sql,
	                     sizeof(sql), &len) ||
	    !ms_sql_cat(sql, sizeof(sql), &len,
	                " FROM plugin_log_count ORDER BY link"))
		return ms_fail(eb, MS_ERR_RANGE, "select too long");
	if (sqlite3_prepare_v2(d->db, sql, -1, &st, NULL) != SQLITE_OK)
		return db_fail(d, eb, tables[T_PLOGC].name);
	int s;
	while (rc == 0 && (s = sqlite3_step(st)) == SQLITE_ROW) {
		ms_ev_plugin_log_count c;
		memset(&c, 0, sizeof(c));
		c.link = (uint32_t)sqlite3_column_int64(st, 0);
		if (!ms_sqlcols_read(st, 1, plogc_cols, NCOLS(plogc_cols), &c))
			rc = corrupt(d, eb, tables[T_PLOGC].name);
		else
			rc = fn(ctx, &c);
	}
	if (rc == 0 && s != SQLITE_DONE)
		rc = db_fail(d, eb, tables[T_PLOGC].name);
	sqlite3_finalize(st);
	return rc;
}

/* ---------------------------------------------------------------------- */
/* Named values for the exporters (ev_private.h). */

static const col *
rec_cols(enum ms__ev_rec w, size_t *n)
{
	switch (w) {
	case MS__EV_MERGE:
		*n = NCOLS(merge_cols);
		return merge_cols;
	case MS__EV_INPUT:
		*n = NCOLS(input_cols);
		return input_cols;
	case MS__EV_LINK:
		*n = NCOLS(link_cols);
		return link_cols;
	case MS__EV_PUB:
		*n = NCOLS(pub_cols);
		return pub_cols;
	}
	*n = 0;
	return NULL;
}

size_t
ms__ev_ncols(enum ms__ev_rec w)
{
	size_t n;
	rec_cols(w, &n);
	return n;
}

void
ms__ev_value(enum ms__ev_rec w, size_t i, const void *obj, ms__ev_val *v)
{
	size_t n;
	const col *c = rec_cols(w, &n);
	memset(v, 0, sizeof(*v));
	if (i >= n)
		return;
	c += i;
	const char *p = (const char *)obj + c->off;
	v->name = c->name;
	uint32_t u32;
	int iv;
	char text[MS_SQLT_TEXT_MAX];
	switch (c->type->kind) {
	case MS_SQLT_U64:
		v->type = MS__EV_UINT;
		memcpy(&v->u, p, 8);
		break;
	case MS_SQLT_I64:
		v->type = MS__EV_INT;
		memcpy(&v->i, p, 8);
		break;
	case MS_SQLT_U32:
		v->type = MS__EV_UINT;
		memcpy(&u32, p, 4);
		v->u = u32;
		break;
	case MS_SQLT_INT:
		v->type = MS__EV_INT;
		memcpy(&iv, p, sizeof(iv));
		v->i = iv;
		break;
	case MS_SQLT_BOOL: {
		bool b;
		memcpy(&b, p, sizeof(b));
		v->type = MS__EV_BOOL;
		v->i = b;
		break;
	}
	case MS_SQLT_F64:
		v->type = MS__EV_REAL;
		memcpy(&v->d, p, sizeof(v->d));
		break;
	case MS_SQLT_STR:
		v->type = MS__EV_TEXT;
		v->s = p;
		break;
	case MS_SQLT_STRP:
		v->type = MS__EV_TEXT;
		memcpy(&v->s, p, sizeof(v->s));
		break;
	case MS_SQLT_ENUM:
		v->type = MS__EV_TEXT;
		memcpy(&iv, p, sizeof(iv));
		v->s = c->type->name(iv);
		break;
	case MS_SQLT_TEXT:
		snprintf(v->buf, sizeof(v->buf), "%s",
		         c->type->format(p, text));
		v->type = MS__EV_TEXT;
		v->s = v->buf;
		break;
	}
}
