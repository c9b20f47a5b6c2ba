/*
 * ms_replay.h - the replay controller: drives one fixture's day through the
 * real engine, stops where the user asks, records every merge, and checks the
 * run's correctness gates at the end.
 *
 * A run has phases: primary (for each publication slot: clock = P, publish
 * the slot's part by copy + atomic rename + introduction, wait for
 * epoch-aware merge-idle with the clock held at P; then clock = end of day
 * and drain), cooldown (clock += grace, trigger, drain) and finalize (one
 * forced merge of every mature part, drain). The controller runs on its own
 * thread; merges run on the engine's workers.
 *
 * Stepping: the controller can stop at two kinds of points, before a
 * publication and at a dispatch barrier (the engine's dispatch hook, just
 * before a merge starts). `pause` stops at the next point of either kind;
 * `step` runs to the next point and stops there; breakpoints stop at
 * matching barriers (or, for time breakpoints, publications).
 *
 * Design:
 *  1. The controller holds one lock (mu) over its state; the engine's
 *     dispatch hook and event callback take it briefly and never call the
 *     engine while holding it.
 *  2. While stopped at a barrier the dispatch hook blocks on a condition
 *     variable; merges already running go on, so BREAK means "this selection
 *     has not started".
 *  3. States: READY -(run/step)-> RUNNING -(pause point reached)-> PAUSED or
 *     BREAK -(run/step)-> RUNNING ... -> DONE or FAILED. Only
 *     ms_replay_command moves RUNNING <-> stopped states; the controller
 *     thread moves to DONE/FAILED.
 *
 * Ownership: ms_replay is a heap object owned by the caller of
 * ms_replay_open. Strings in the options are copied. Snapshot structs are
 * caller-owned plain data.
 */
#ifndef MS_REPLAY_H
#define MS_REPLAY_H

#include "ms_engine.h"
#include "ms_envelope.h"
#include "ms_err.h"
#include "ms_ledger.h"
#include "ms_merge.h"
#include "ms_pipeline.h"
#include "ms_replay_events.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- Breakpoints ------------------------------------------------------ */

enum ms_bp_kind {
	MS_BP_MATURE = 0,   /* any mature-containing selection */
	MS_BP_SAMPLING = 1, /* sampling is predicted to execute */
	MS_BP_MERGE = 2,    /* merge sequence number N */
	MS_BP_TIME = 3,     /* the first barrier at logical time >= T */
	MS_BP_PART = 4,     /* a selection containing part ID */
	MS_BP_LANE = 5,     /* a selection on lane L */
	MS_BP_DEPTH = 6,    /* a selection with an input of depth >= d */
};

typedef struct ms_breakpoint {
	int id;
	enum ms_bp_kind kind;
	uint64_t n;    /* merge number, part ID, depth */
	int64_t t;     /* logical time (TIME: time of day ns if !absolute) */
	bool absolute; /* TIME given as unix ns, not time of day */
	char lane[16];
	char spec[64]; /* canonical spelling */
	bool enabled;
	bool once; /* delete after the first hit (run-to targets) */
	uint64_t hits;
} ms_breakpoint;

/*
 * Parse a breakpoint spec: "mature", "sampling", "merge=N" (or "seq=N"),
 * "time=HH:MM[:SS]" (time of day of the logical day; the hour may have one
 * digit) or "time=@NS" (logical unix ns), "part=HEX" (1 to 16 hex digits,
 * no 0x), "lane=fast|slow|finalize", "depth>=D". Errors name the spec and
 * what was expected.
 */
int ms_bp_parse(const char *spec, ms_breakpoint *out, ms_errbuf *eb);
/* Does bp match dispatch d (day_start anchors time-of-day specs)? */
bool ms_bp_match_dispatch(const ms_breakpoint *bp, const ms_dispatch *d,
                          int64_t day_start);
/* Does a time breakpoint fire for a publication at logical time t? */
bool ms_bp_match_time(const ms_breakpoint *bp, int64_t t, int64_t day_start);

/* ---- Controller ------------------------------------------------------- */

enum ms_replay_state {
	MS_REPLAY_READY = 0, /* opened, not started */
	MS_REPLAY_RUNNING = 1,
	MS_REPLAY_PAUSED = 2, /* stopped before a publication */
	MS_REPLAY_BREAK = 3,  /* stopped at a dispatch barrier */
	MS_REPLAY_DONE = 4,
	MS_REPLAY_FAILED = 5,
};
const char *ms_replay_state_name(enum ms_replay_state s);

enum ms_replay_phase {
	MS_RPHASE_PRIMARY = 0,
	MS_RPHASE_BOUNDARY = 1, /* clock at end of day, draining */
	MS_RPHASE_COOLDOWN = 2,
	MS_RPHASE_FINALIZE = 3,
	MS_RPHASE_END = 4,
};
const char *ms_replay_phase_name(enum ms_replay_phase p);

#define MS_REPLAY_WAIT_TIMEOUT_DEFAULT_NS (600 * 1000000000LL)

/* The name the verdict oracle's table has for a moment in the cache
 * directory, where the file system has no O_TMPFILE: this prefix, the
 * run's process ID, '-' and six characters of mkstemp's, e.g.
 * "oracle.table-4242-a1B2c3". The run removes the name as soon as the
 * file is open and writes it only then, so one seen with bytes in it is
 * not a run's; one a run killed in between left is empty, and `clean`
 * removes it once that process is gone. */
#define MS_REPLAY_ORACLE_TMP "oracle.table-"

typedef struct ms_replay_opts {
	const char *fixture_dir; /* required; never written */
	const char *db_path;     /* required */
	bool db_overwrite;
	const char *work_dir; /* scratch shard; NULL = chosen
	                         (ms_replay_work_note) */
	bool keep_shard;      /* keep work_dir after the run */
	/* Stage the fixture's parts into the shard by copy (or reflink)
	 * even where hard links would work. */
	bool stage_copy;
	const char *variant;      /* NULL = "disabled"; or a chain spec */
	const char *plugin_dir;   /* NULL = MS_PLUGIN_DIR of the build */
	const char *grace_policy; /* NULL = "selection" */
	const char *staging;      /* "retain" (NULL) or "reread" */
	bool serial;              /* one merge at a time */
	bool allow_fail_open;     /* plugin_health WARNs instead of FAILing */
	const char *profile;      /* "cpus=2,mem=4g"; NULL = detected */
	/* How a profile is held (ms_envelope.h): NULL or "auto" = a real
	 * cgroup where one is writable, else emulated; "cgroup" = a real
	 * cgroup or the run fails; "emulated" = sized from the profile,
	 * nothing enforced. Ignored without a profile. */
	const char *envelope;
	/* Page cache before the run: "warm" (the fixture read once),
	 * "cold" (its pages dropped), NULL or "uncontrolled" (neither). */
	const char *cache_label;
	uint64_t decide_timeout_ns; /* 0 = 5 s */
	/* Charged bytes above which a trace is kept without evaluation
	 * (an oversized bypass); 0 = the hard staging ceiling. */
	uint64_t oversized_cap;
	/* Each sampling merge's drop-set ceiling in bytes; 0 = from the
	 * limits (ms_pipeline_opts.drop_set_budget). */
	uint64_t drop_set_budget;
	/* The longest the controller waits for merge-idle (after a
	 * publication, at the day boundary, in cooldown, for the finalize
	 * merge) while the run is running; time stopped at a barrier or
	 * pause does not count. Past it the run fails naming the wait.
	 * 0 = MS_REPLAY_WAIT_TIMEOUT_DEFAULT_NS. */
	int64_t wait_timeout_ns;
	/* Where the chain's links run (ms_pipeline.h); plugin_host_exe is
	 * the host executable of process mode. */
	enum ms_plugin_host_mode plugin_host;
	const char *plugin_host_exe;
	bool start_paused; /* stop before the first publication */
	/* A checkpoint (shard, engine, controller and event-log position;
	 * ms_replay_seek_*) is kept at the first publication point and then
	 * at the first one at least this much logical time after the
	 * previous one, in the primary phase. 0 = none (a headless run never
	 * goes back); the TUI uses MS_REPLAY_CHECKPOINT_EVERY_DEFAULT_NS. */
	int64_t checkpoint_every_ns;
	/* Checkpoints hold the parts they list after the shard deleted them:
	 * while the work directory's file system has less than this many
	 * bytes free, every second one is removed and none is taken (the
	 * status's checkpoint_note says so). 0 = the day's bytes plus 64 MiB,
	 * room for any merge of the day. */
	uint64_t checkpoint_room_bytes;
	double speed;      /* logical s per wall s; 0 = flat out */
	/* Called (from any thread, no lock held) whenever something worth
	 * redrawing happened. NULL = none. */
	void (*notify)(void *arg);
	void *notify_arg;
	/* Progress lines for headless runs; NULL = none. */
	void (*progress)(void *arg, uint64_t done, uint64_t total,
	                 const char *what);
	void *progress_arg;
	/* Called (in ms_replay_open's thread) the moment the replay has
	 * made something a process killed from then on leaves behind: what
	 * is "scratch" (the shard directory, taken, still empty) or "db"
	 * (the event database, still empty; it holds the run record from
	 * its first commit on). NULL = none. */
	void (*created)(void *arg, const char *what, const char *path);
	void *created_arg;
} ms_replay_opts;

typedef struct ms_replay ms_replay;

/* Without opts.work_dir: the one line saying where the scratch shard went
 * and why ("work dir /dev/shm/... (tmpfs): 23000 MiB free, the day needs
 * about 700 MiB", or "(disk): /dev/shm has 60 MiB free, ..."); "" when the
 * caller chose. Owned by r. */
const char *ms_replay_work_note(const ms_replay *r);

/* After ms_replay_start: the one line saying what the run goes on
 * without (the fixture's block ledgers, when its build recorded them and
 * they cannot be used: why, and that every part is read; the sampler of
 * the resident set's split peaks, when its thread could not start: why,
 * and that those peaks read 0); "" when nothing. Owned by r. */
const char *ms_replay_start_note(const ms_replay *r);

/* Validate everything that can be validated before work starts (fixture
 * and manifest, variant and chain, plugins load, database path writable)
 * and prepare the run. Each failure is one line naming what and where. */
int ms_replay_open(ms_replay **out, const ms_replay_opts *opts, ms_errbuf *eb);
/* The fixture check ms_replay_open makes, alone: the manifest opens, the
 * schedule, part records and every scheduled part's files are as built
 * (ms_fixture_verify) and there. For a caller that starts several runs
 * of one fixture (`bench`): one line in eb naming the fixture and what is
 * damaged or missing, before any run. */
int ms_replay_check_fixture(const char *dir, ms_errbuf *eb);
/* Can this process write in the directory dir? Tried, not judged from
 * its mode: a directory made in it and removed at once (root too is kept
 * out of a read-only file system). 0, or the errno of the attempt
 * (EROFS, EACCES, ENOENT, ...). The one test of `run --work-dir` and
 * `fixture build --out`, made before their room is judged: the room of
 * a directory nothing can be written in says nothing of it. */
int ms_replay_dir_probe(const char *dir);
/* Start the controller thread (RUNNING, or PAUSED with start_paused). */
int ms_replay_start(ms_replay *r, ms_errbuf *eb);
/* Stop the run if it is still going (it ends "aborted"), join, close. A
 * replay closed before ms_replay_start was called ran nothing: its event
 * database (and its -wal and -shm) is removed. */
void ms_replay_close(ms_replay *r);
/* How a run ends, whether the user quits, it ends or it is replaced by a
 * restart: ms_replay_close, then the write-ahead log its close could not
 * fold into the event database (a full disk) folded once more, now that
 * the scratch shard, which may share that disk, is gone
 * (ms_evdb_fold_wal). db[0..n) (db may be NULL) gets the database's path.
 * 0 when the database file alone holds every event, else MS_ERR_IO from
 * ms_evdb_fold_wal (naming the database and its -wal, which must be kept
 * together, and why), or MS_ERR_IO when events are missing from the
 * database and the run has not said so: one it recorded as it closed (a
 * merge completing after the end, a plugin's close() logging) failed to
 * be written, or the log failed in a run that was stopped ("cannot record
 * events: event database PATH: TABLE: why (the events after it are
 * missing)", then a -wal left beside it after "; "); r is closed either
 * way. r NULL: 0. left (may be
 * NULL) gets "" or, when the scratch shard could not be removed, one line
 * naming it and why (the run's results are whole; the space is not
 * given back). */
int ms_replay_close_fold(ms_replay *r, char *db, size_t n, ms_errbuf *eb,
                         ms_errbuf *left);

/* Wait until the run is DONE or FAILED; timeout_ns < 0 waits forever.
 * 0, or MS_ERR_TIMEOUT. */
int ms_replay_wait(ms_replay *r, int64_t timeout_ns);

enum ms_replay_cmd {
	MS_RCMD_RUN = 0,          /* run until a breakpoint, pause or end */
	MS_RCMD_PAUSE = 1,        /* stop at the next point */
	MS_RCMD_STEP = 2,         /* to the next publication or barrier */
	MS_RCMD_STEP_BARRIER = 3, /* to the next barrier */
};
int ms_replay_command(ms_replay *r, enum ms_replay_cmd cmd, ms_errbuf *eb);
/* Run to merge number seq (BREAK at its barrier, break_why "go #N") or to
 * logical time t (PAUSED before the first publication after t, or BREAK at
 * a barrier at or after t; break_why "go HH:MM:SS"). The target is
 * dropped when the run stops for any other reason first.
 * MS_REPLAY_PASSED (positive; nothing set, the run goes on or stays as it
 * was) when the run is past the target as it is set: merge seq
 * dispatched, or a point where t would have stopped it gone by (held at
 * its barrier counts as past; held at the publication point t stops at,
 * not). A caller that saw the run before the target goes back to it
 * (ms_replay_seek_*). */
#define MS_REPLAY_PASSED 1
int ms_replay_run_to_merge(ms_replay *r, uint64_t seq, ms_errbuf *eb);
int ms_replay_run_to_time(ms_replay *r, int64_t t, ms_errbuf *eb);
/* Logical time t as the clock of the replayed day that starts at
 * day_start, in whole seconds rounded down: "HH:MM:SS" within the day,
 * "+1d HH:MM:SS" on a later day, "-1d HH:MM:SS" (the clock of the day
 * before) before it. The one form of a day's time: the TUI's clocks and
 * run_to_time's break_why print it. At most 12 columns for a week either
 * side; buf (n bytes, caller-owned) is returned. */
char *ms_replay_fmt_clock(char *buf, size_t n, int64_t t, int64_t day_start);
/* Run to the publication point before publication k (0-based: PAUSED with
 * k publications done, break_why "go pub K"); MS_ERR_RANGE past the day's
 * last, MS_REPLAY_PASSED as above. For seeking back: a new replay of the
 * same options runs there. */
int ms_replay_run_to_pub(ms_replay *r, uint64_t k, ms_errbuf *eb);
int ms_replay_set_speed(ms_replay *r, double speed);

/* 60 logical minutes between checkpoints. */
#define MS_REPLAY_CHECKPOINT_EVERY_DEFAULT_NS (3600LL * 1000000000LL)
/*
 * Go back in this run, in process: to the latest checkpoint before merge
 * seq's barrier / before publication k / before logical time t, restored
 * (shard, engine, the controller's counters and gates' tallies, the event
 * log rolled back: replay/SCHEMA.md, "Going back in time"), and stop
 * there (PAUSED, break_why "seek"); run_to then goes on to the target at
 * full speed. In the primary phase, the cooldown (a finalize merge held
 * at its dispatch barrier is dropped, one running finishes first; the
 * phase is primary again) or DONE (asked for while the gates run, it
 * waits for DONE). MS_ERR_NOTFOUND (nothing changed) when no checkpoint
 * precedes the target or the run failed or is not started, for the
 * caller to start a new replay instead. A checkpoint that does not read
 * back is its error, the run stopped where it was (PAUSED, "seek failed";
 * a DONE run stays DONE; in the cooldown it is refused before anything
 * moves). Another error is a restore that failed part way: the run
 * is FAILED with that error. A restore that committed but could not
 * remove every file the checkpoint does not list is a seek all the
 * same: the status's checkpoint_note says what was left. Not to be
 * called while another call on r runs (the status, the inventory): the
 * caller waits for the restore.
 */
int ms_replay_seek_merge(ms_replay *r, uint64_t seq, ms_errbuf *eb);
int ms_replay_seek_pub(ms_replay *r, uint64_t k, ms_errbuf *eb);
int ms_replay_seek_time(ms_replay *r, int64_t t, ms_errbuf *eb);
/* After a seek, the next run_to (its target) is where the run went back
 * to: the run there goes by the user's breakpoints, as the first pass did
 * (a time one it goes by counts as passed). ms_replay_rerun_next says the
 * same of the next run_to of a new replay that runs the day again to a
 * point an earlier one was at (going back without a checkpoint). Any
 * other command first ends it. */
void ms_replay_rerun_next(ms_replay *r);

/* At most 64 breakpoints (MS_ERR_RANGE past them); the run-to targets of
 * the run_to calls (`once`, at most 8 at a time) do not count. */
int ms_replay_break_add(ms_replay *r, const char *spec, int *id, ms_errbuf *eb);
int ms_replay_break_enable(ms_replay *r, int id, bool on, ms_errbuf *eb);
int ms_replay_break_delete(ms_replay *r, int id, ms_errbuf *eb);
/* Copy up to cap breakpoints, run-to targets included (at most 72 in
 * all); returns how many there are. */
size_t ms_replay_breaks(ms_replay *r, ms_breakpoint *out, size_t cap);

/* At a barrier: copy the shard, the pending selection and the clock into
 * a new directory `dir` (NULL = <work_dir>.frozen-<seq>); the chosen path
 * is written to out_dir. */
int ms_replay_freeze(ms_replay *r, const char *dir, char *out_dir, size_t n,
                     ms_errbuf *eb);

/* What the screen and the headless progress show. Plain data. */
#define MS_REPLAY_RECENT 512
/* Inputs kept per recent merge (a finalize may have more). */
#define MS_REPLAY_RECENT_INPUTS 32
#define MS_REPLAY_SPARK 64
typedef struct ms_replay_status {
	enum ms_replay_state state;
	enum ms_replay_phase phase;
	/* Running, but the day has not begun: it waits for the verdict
	 * oracle, which must end before the primary phase's clock starts. */
	bool preparing;
	char fixture[64];
	char variant[128];
	/* Where the links' Decide runs (ms_plugin_host_mode_name). */
	char plugin_host[16];
	char db_path[512];
	char break_why[64];
	int64_t day_start, day_end;
	int64_t now, frontier;
	/* What a clock on screen shows: now, or, while the run waits at its
	 * speed for its next publication, the replay time the wait has
	 * reached (now <= now_shown <= that publication's time), so that
	 * at 1x the time goes on between publications (it stood still for
	 * the gap, 27 s on the default day). Only to show: the run is at
	 * now. */
	int64_t now_shown;
	uint64_t pub_done, pub_total;
	uint64_t merges_done, merges_failed;
	/* Of the merges recorded (failed ones too): those that ran the
	 * sampler (class executed) and those that bypassed it for hot
	 * data (reason merge_grace), as the event database counts them;
	 * after a seek back, those up to where the run is. */
	uint64_t merges_sampled, merges_bypassed;
	uint64_t epoch;
	double speed;
	bool has_pending;
	ms_dispatch pending; /* inputs point into pending_inputs */
	ms_dispatch_input pending_inputs[MS_PICKER_PARTS_LIMIT];
	/* Staging: live bytes now (0 between batches); while the merge
	 * that began staging last is in flight, its peak so far and its
	 * preferred limit (held between its batches and after its last
	 * until its event); else the last recorded merge's that staged. */
	uint64_t staged_live, staged_peak, staged_preferred, staged_hard;
	size_t nspark;
	uint64_t spark[MS_REPLAY_SPARK];
	/* Chain links (cumulative), as the replay last read them: every
	 * 50 ms while merges run, when the chain is between two Decide
	 * calls (it is locked through each), and exactly after each
	 * recorded merge. Reading the status never waits for a plugin. */
	size_t nlinks;
	ms_link_stats links[MS_EV_LINKS_MAX];
	bool circuit_open;
	/* Merges dispatched and not recorded yet: how many, the oldest one
	 * (seq, wall time since it was released to run: 0 while it is held
	 * at its dispatch barrier), and the chain's Decide calls,
	 * traces and time since the last recorded merge, over every link
	 * (the merge in progress's, when one runs at a time). */
	size_t inflight;
	uint64_t inflight_seq;
	int64_t inflight_wall_ns;
	uint64_t inflight_calls, inflight_traces, inflight_decide_ns;
	/* Checkpoints kept, and seeks back that restored one. */
	uint64_t checkpoints, seeks;
	/* Why checkpoints are off or thinned for lack of room, or what the
	 * last seek's restore could not remove from the shard ("" = none
	 * of these). */
	char checkpoint_note[256];
	/* The error of a FAILED run. */
	char error[512];
	/* Why the finalize was skipped (as the report's sampling_exercised
	 * gate says), once it was; else "". */
	char finalize_skip[192];
	/* The last failed merge, "merge #N (lane): error", or "" (see
	 * merges_failed); parts quarantined (after their third failed
	 * merge in a row) and the last one's ID. */
	char last_failure[192];
	uint64_t quarantined, last_quarantined;
} ms_replay_status;

void ms_replay_get_status(ms_replay *r, ms_replay_status *st);
/* The most recent merges (oldest first); returns how many were copied;
 * *total gets how many completed in all. inputs: NULL (then every
 * out[i].inputs is NULL), or room for cap * MS_REPLAY_RECENT_INPUTS
 * entries: out[i].inputs then points at merge i's first
 * min(out[i].ninputs, MS_REPLAY_RECENT_INPUTS) inputs there (ninputs
 * stays the merge's own count). */
size_t ms_replay_recent(ms_replay *r, ms_ev_merge *out, ms_ev_input *inputs,
                        size_t cap, uint64_t *total);
/* Which merge (seq) currently claims part id, 0 if none. */
typedef struct ms_replay_part {
	ms_part_meta meta;
	uint64_t claimed_by;
} ms_replay_part;
/* Copy the active inventory (up to cap parts); returns how many are
 * active. */
size_t ms_replay_inventory(ms_replay *r, ms_replay_part *out, size_t cap);
/* What link `link`'s plugin logged (ms_ev_plugin_log): its last cap of
 * the lines the run kept, oldest first, into out; returns how many were
 * copied. *count (NULL ok) gets the link's lines kept and suppressed.
 * Never waits for a plugin. */
size_t ms_replay_plugin_log(ms_replay *r, size_t link, ms_ev_plugin_log *out,
                            size_t cap, ms_ev_plugin_log_count *count);
/* The run's event database path. */
const char *ms_replay_db_path(const ms_replay *r);
/* The run's scratch shard directory (removed at close unless kept). */
const char *ms_replay_work_dir(const ms_replay *r);
/* The run's resource envelope (its cgroup, or emulated). */
const ms_envelope *ms_replay_envelope(const ms_replay *r);
/* What ms_replay_postmortem did to the database. */
enum ms_postmortem {
	MS_PM_NONE = 0,     /* nothing: no file, or the run had ended */
	MS_PM_RECORDED = 1, /* recorded the run as aborted */
	/* removed it: an empty file with no tables, the process killed
	 * before the first commit (ms_rec_opts.run), no run to record */
	MS_PM_REMOVED = 2,
};
/*
 * Clean up after a run whose process is dying or died without recording
 * its end (a plugin crashed or called exit() inside Decide; the process
 * was killed), from another process: record status "aborted" with reason
 * in db_path (unless the run already ended), or remove db_path when the
 * process died before anything was in it; *done (may be NULL) says which.
 * Then remove the scratch shard work_dir and its checkpoints
 * (<work_dir>.ckpt). Either path may be NULL.
 */
int ms_replay_postmortem(const char *db_path, const char *work_dir,
                         const char *reason, enum ms_postmortem *done,
                         ms_errbuf *eb);

/* After DONE: number of failed gates and the gates (up to cap). */
size_t ms_replay_gates(ms_replay *r, ms_ev_gate *out, size_t cap,
                       unsigned *failed);

/* ---- Controlled single merges (freeze + merge-once) ------------------- */

typedef struct ms_merge_once_opts {
	const char *frozen_dir; /* from ms_replay_freeze */
	const char **variants;  /* alternated per repetition */
	size_t nvariants;
	unsigned reps; /* per variant; 0 = 5 */
	const char *plugin_dir;
	const char *grace_policy; /* NULL = "trace": every input is matured */
	const char *staging;      /* "retain" (NULL) or "reread" */
	/* The run's own clock at the barrier (a hot selection stays hot:
	 * under policy selection it must not reach Decide) instead of
	 * every input matured. */
	bool run_clock;
	const char *scratch_dir; /* NULL = a new $TMPDIR/mergescope-once-*,
	                          * removed after; frozen_dir is only read */
	FILE *out;               /* the table; NULL = none */
	/* Where the chain's links run (ms_pipeline.h); host_exe for
	 * process mode. */
	enum ms_plugin_host_mode plugin_host;
	const char *plugin_host_exe;
	/* This program: each repetition runs as `self_exe __merge-once-rep
	 * ...` (ms_merge_once_rep_main), a fresh process. NULL: in the
	 * calling process. */
	const char *self_exe;
} ms_merge_once_opts;

typedef struct ms_merge_once_result {
	const char *variant; /* borrowed from the options' variants */
	unsigned reps;
	double wall_median_ns, wall_cv;
	double cpu_median_ns, cpu_cv;
	double alloc_median, alloc_cv;
	double peak_median, peak_cv;
	/* Medians: allocations, bytes read and written by the merge, its
	 * write amplification (bytes written over its input parts' bytes,
	 * core part and both indexes, from their metadata), and its output
	 * parts' bytes over the same input bytes; neither ratio depends on
	 * whether staging retains or rereads (reread reads more, not more
	 * input). */
	double count_median, read_median, written_median, wa_median;
	double outin_median;
	/* Peak resident set of the repetition's process (fresh process:
	 * its whole life; in-process: since a reset at its start). */
	double rss_median, rss_cv;
	/* The last repetition's sampling: class, reason, Decide calls. */
	enum ms_sampling_class klass;
	enum ms_sampling_reason reason;
	uint64_t plugin_calls;
	uint64_t rows_in, rows_out, traces_dropped;
	ms_ledger_set out_ledger; /* of the output part (last rep) */
	ms_ledger_set in_ledger;  /* sum of the frozen inputs' ledgers */
	bool ledgers_stable;      /* every rep gave the same output ledgers */
	/* The first repetition's output ledgers (all three kinds) equal the
	 * inputs' minus the rows of the traces it dropped, read from the
	 * frozen inputs (true when it dropped nothing: then they must equal
	 * the inputs', or the call fails). */
	bool ledgers_reconciled;
	/* When not reconciled: the first kind whose ledger differs, with
	 * the output's and the expected (rows and sums) and the rows the
	 * inputs held and the dropped traces took; "" otherwise. */
	char recon_note[320];
	/* The verdict oracle (variants with a chain): the first
	 * repetition's dropped traces the oracle keeps or does not know,
	 * whole traces kept that it drops, the traces the merge kept for a
	 * reason, and what the table says (naming a few trace IDs). */
	bool oracle_checked, oracle_match;
	uint64_t oracle_bad_drops, oracle_kept_drops, oracle_reasons;
	/* Matured clock only: drops of traces with rows published after the
	 * freeze, judged on the rows it holds (not counted as bad). */
	uint64_t oracle_later;
	/* Drops of traces the oracle kept with a link failed open on them
	 * (that link did not judge them): not counted as bad. */
	uint64_t oracle_unjudged;
	char oracle_note[400];
} ms_merge_once_result;

/* Replay the frozen merge from fresh copies; results[nvariants]. Refuses
 * (MS_ERR_CONFLICT) when the picker re-run on the frozen state does not
 * give the frozen selection. An oracle mismatch is no error: see
 * oracle_match. */
int ms_merge_once(const ms_merge_once_opts *opts, ms_merge_once_result *results,
                  ms_errbuf *eb);
/* The entry point of one repetition's process: `EXE __merge-once-rep`
 * and the arguments ms_merge_once gives it. Returns the exit status. */
int ms_merge_once_rep_main(int argc, char **argv);

/* What this build is, in one line for `mergescope --version`: the
 * version, the source commit (with "-dirty" when built from changed
 * files), the event database's schema and the part format, into out
 * (n bytes, NUL-terminated, cut to fit). */
void ms_build_describe(char *out, size_t n);

#endif
