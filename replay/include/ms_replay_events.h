/*
 * ms_replay_events.h - the replay's event model, the SQLite event log that
 * records it, the readers over a recorded log, the exporters (JSON Lines,
 * CSV, Chrome trace-event JSON) and the run report.
 *
 * One run writes one database. The controller fills the plain structs below
 * from the engine's dispatch hook and merge results and hands them to the
 * recorder (ms_rec_*). Everything afterwards (TUI event log, exports,
 * `mergescope report`) reads the database back through ms_evdb_*. The table
 * layout is documented in replay/SCHEMA.md and versioned by
 * MS_EV_SCHEMA_VERSION (stored as PRAGMA user_version).
 *
 * Ownership: every struct here is plain data owned by whoever declared it.
 * The only pointers are ms_ev_merge.inputs (an array of ninputs entries) and
 * the string pointers of ms_ev_filter; they are borrowed by every function
 * that takes the struct, for the duration of the call only (the recorder
 * copies what it needs). Structs passed to ms_evdb_each_* callbacks,
 * including their inputs arrays, belong to the reader and are valid only
 * until the callback returns.
 * Threads: one ms_rec may be used from several threads (it serializes calls
 * with its own lock); an ms_evdb belongs to one thread.
 */
#ifndef MS_REPLAY_EVENTS_H
#define MS_REPLAY_EVENTS_H

#include "ms_err.h"
#include "ms_ledger.h"
#include "ms_merge.h"
#include "ms_part.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define MS_EV_SCHEMA_VERSION 14
#define MS_EV_LINKS_MAX 8     /* links of one sampler chain */
#define MS_EV_HIST_BUCKETS 13 /* 12 bounds + overflow */
#define MS_EV_HEX_MAX 65      /* 64 hex digits + NUL (SHA-256/XXH3 sized) */
#define MS_EV_NAME_MAX 64
#define MS_EV_TEXT_MAX 256
/* A chain spec or a path as the user gave it, recorded whole: the
 * longest accepted is one byte less (ms_replay_open refuses longer). */
#define MS_EV_SPEC_MAX 4096
/* The longest last name of an event database file: SQLite keeps
 * NAME-journal (the longest), NAME-wal and NAME-shm beside it, and a file
 * name has at most 255 bytes (NAME_MAX on Linux). ms_rec_open refuses a
 * longer one. */
#define MS_EV_DB_NAME_MAX (255 - 8)
/* Whether an event database may be named path (its last name at most
 * MS_EV_DB_NAME_MAX bytes); *len (NULL ok) gets that name's length. */
bool ms_evdb_name_fits(const char *path, size_t *len);
/* Whether SQLite can open an event database at path: its absolute path
 * (path, or the working directory and path when relative) with
 * "-journal" added must fit SQLite's longest path name (mxPathname of
 * its default file system, 512 bytes on Unix), far below PATH_MAX.
 * *len (NULL ok) gets the absolute path's length, *max (NULL ok) the
 * longest that fits. */
bool ms_evdb_path_fits(const char *path, size_t *len, size_t *max);

/* Upper bounds (inclusive) of the Decide latency histogram, in ms:
 * 0.25 0.5 1 2.5 5 10 25 50 100 250 500 1000, then overflow. */
extern const double ms_ev_hist_bounds_ms[MS_EV_HIST_BUCKETS - 1];
/* The bucket (0..MS_EV_HIST_BUCKETS-1) a Decide call of ns falls in. */
unsigned ms_ev_hist_bucket(int64_t ns);
/* Chain link i's name in a table, written in buf (n bytes): names[i],
 * with "#N" added when it is the N-th link of that plugin (N > 1) among
 * names[0..i], the chain's plugin names in order: "detdrop" and
 * "detdrop#2" in `detdrop:35,detdrop:50`. */
void ms_ev_link_label(const char *const *names, size_t i, char *buf, size_t n);

/* Replay phases. Finalize merges belong to cooldown (their lane says
 * "finalize"). MS_EV_PHASE_COUNT counts the phases merges run in;
 * MS_EV_PHASE_STAGING is the phase table's row for the time before the
 * primary phase (the run's start, the staging, the oracle): resource
 * figures only, no merge is in it, and readers of the merge phases stop
 * below MS_EV_PHASE_COUNT. */
enum ms_ev_phase_id {
	MS_EV_PHASE_PRIMARY = 0,
	MS_EV_PHASE_COOLDOWN = 1,
	MS_EV_PHASE_COUNT = 2,
	MS_EV_PHASE_STAGING = 2,
	MS_EV_PHASE_ROWS = 3,
};
/* "primary", "cooldown", "staging". */
const char *ms_ev_phase_name(enum ms_ev_phase_id p);
/* ms_sampling_class_name / ms_sampling_reason_name, but "?" out of range. */
const char *ms_ev_class_name(enum ms_sampling_class c);
const char *ms_ev_reason_name(enum ms_sampling_reason r);
/* ms_sampling_class_parse / ms_sampling_reason_parse: -1 if unknown. */
int ms_ev_class_parse(const char *s);
int ms_ev_reason_parse(const char *s);

/* One link of the sampler chain as loaded for the run. */
typedef struct ms_ev_plugin {
	char name[MS_EV_NAME_MAX];
	char path[MS_EV_TEXT_MAX];
	char config[MS_EV_TEXT_MAX];
	char checksum[MS_EV_HEX_MAX]; /* hex of the .so's checksum */
} ms_ev_plugin;

/* The run record, written once at the start (ms_rec_run_begin). */
typedef struct ms_ev_run {
	char version[32];        /* mergescope version */
	int64_t started_unix_ns; /* real clock */
	char fixture_dir[MS_EV_SPEC_MAX];
	char fixture_preset[32];
	uint64_t fixture_seed;
	/* The fixture's schedule hash (manifest schedule_hash) when its day
	 * opens empty and its core parts use no dictionary; else an XXH3-128
	 * of it with the opening, its part count, the dictionary ID and the
	 * verdict checksum: runs of one day have one hash. */
	char fixture_hash[MS_EV_HEX_MAX];
	char fixture_parts_hash[MS_EV_HEX_MAX]; /* hash over staged parts */
	char variant[MS_EV_SPEC_MAX]; /* "disabled", "alwayskeep", a chain */
	char chain[MS_EV_SPEC_MAX];   /* the chain spec as given */
	char grace_policy[16];        /* "selection" or "trace" */
	char staging[16];             /* "retain" or "reread" */
	bool serial;                  /* one merge at a time */
	bool allow_fail_open;         /* plugin_health WARNs, not FAILs */
	uint32_t nplugins;
	ms_ev_plugin plugins[MS_EV_LINKS_MAX];
	/* Limits: detected on the host, and the emulated profile in force. */
	uint32_t detected_cpus;
	uint64_t detected_mem_bytes;
	uint64_t detected_disk_free_bytes;
	char profile[32];
	uint32_t emulated_cpus;
	uint64_t emulated_mem_bytes;
	uint32_t fast_workers, slow_workers;
	/* Host. */
	char hostname[MS_EV_NAME_MAX];
	char kernel[MS_EV_NAME_MAX];
	char filesystem[32]; /* statfs type of the work dir: "tmpfs" */
	/* How parts were staged: "link", "reflink", "copy", or two of them
	 * joined by '+' ("link+copy"). */
	char clone_method[16];
	/* Build and machine (version 4). */
	char binary_checksum[MS_EV_HEX_MAX]; /* of /proc/self/exe */
	char git_commit[48];        /* of the source tree at configure time */
	char compiler[64];          /* "gcc 12.2.0" */
	char cpu_model[128];        /* /proc/cpuinfo "model name" */
	char cache_label[16];       /* "warm", "cold" or "uncontrolled" */
	ms_ledger_set input_ledger; /* the fixture's ledgers */
	char plugin_host[16];       /* "inproc" or "process" */
	/* How the profile was held (version 6): "host" (no profile: the
	 * detected limits), "emulated" (sized from it, not enforced) or
	 * "cgroup1" / "cgroup2" (a real cgroup with its limits); why, when
	 * emulated. */
	char device[192]; /* under the work dir: "/dev/vda1 (254:1) MODEL" */
	char limits_mode[16];
	char limits_why[256];
	uint32_t pids_max; /* the cgroup's pid limit; 0 without one */
} ms_ev_run;

/* What is known only at the end (ms_rec_run_end). */
typedef struct ms_ev_run_end {
	char status[16]; /* "complete", "failed", "aborted" */
	int64_t ended_unix_ns;
	int64_t wall_ns; /* whole run */
	uint64_t publications;
	uint64_t merges_completed;        /* the engine's own counter (and
	                                   * merges recorded after it) */
	char selection_fp[MS_EV_HEX_MAX]; /* fingerprint over dispatch order */
	ms_ledger_set final_ledger;
	ms_ledger_set expected_ledger; /* input - confirmed drops */
	/* Recorder's own cost, for "recording < 3% of wall". */
	int64_t record_ns;
	char error[512]; /* why a failed run failed; "" otherwise */
	/* What the run's cgroup kept (zeros unless limits_mode is cgroup1 or
	 * cgroup2; version 6): peak memory charged to it (RSS plus the page
	 * cache and tmpfs pages the run wrote), CFS periods throttled and
	 * the time throttled, OOM kills and limit hits. */
	uint64_t cgroup_peak_bytes;
	uint64_t cgroup_nr_throttled;
	int64_t cgroup_throttled_ns;
	uint64_t cgroup_oom_kills;
	uint64_t cgroup_limit_hits;
} ms_ev_run_end;

/* One publication of a scheduled part. */
typedef struct ms_ev_pub {
	uint64_t seq;       /* 0-based slot index */
	int64_t logical_ns; /* P */
	int64_t wall_ns;    /* since run start, when published */
	uint64_t part_id;
	uint64_t bytes; /* compressed core bytes */
	uint64_t rows;
	int64_t min_ts, max_ts;
	uint64_t epoch;                /* epoch after introduction */
	int64_t publish_ns;            /* rename + introduction */
	int64_t idle_ns;               /* publication to merge-idle */
	uint64_t merges;               /* merges completed during its drain */
	uint64_t inv_parts, inv_bytes; /* inventory after the drain */
} ms_ev_pub;

/* One input of a merge, as the dispatch hook saw it (ms_dispatch_input). */
typedef struct ms_ev_input {
	uint64_t id;
	uint64_t bytes; /* compressed core bytes */
	uint64_t uncompressed_bytes;
	uint64_t rows;
	uint64_t blocks;
	uint32_t depth;
	int64_t min_ts, max_ts;
	bool mature; /* max_ts <= frontier */
} ms_ev_input;

/* How a link call failed open, in the order of enum ms_link_result from
 * MS_LINK_ERROR on, named by ms_link_result_name: "error", "wrong_length",
 * "bad_value", "timeout", "circuit_open" (not called), "host_error",
 * "crashed" (the plugin host process died in Decide). */
#define MS_EV_FAIL_KINDS 7
const char *ms_ev_fail_kind_name(unsigned k);

/* One chain link's figures in one merge. */
typedef struct ms_ev_link {
	char name[MS_EV_NAME_MAX];
	uint64_t calls;
	uint64_t traces; /* traces passed to Decide */
	uint64_t kept;   /* verdicts of 1 */
	int64_t total_ns;
	int64_t max_ns;
	uint64_t hist[MS_EV_HIST_BUCKETS]; /* Decide calls per bucket */
	int result; /* 0, or the ms_err of the last failure */
	/* "" or the last fail-open reason of the merge's calls, named by
	 * ms_link_result_name (ms_pipeline.h): "error", "wrong_length",
	 * "bad_value", "timeout", "circuit_open", "host_error", "crashed". */
	char fail_open[32];
	/* "" or the cause of that last failure in the chain's words
	 * (ms_link_stats.last_fail: "Decide returned error -3", "out of
	 * memory for verdicts", a plugin host's error), one printable line
	 * (ms_plugin_text_clean), cut to fit; version 12. */
	char fail_why[96];
	/* Calls that failed open, per kind (ms_ev_fail_kind_name). Under
	 * lanes a link's counters are read when a merge completes, so a
	 * concurrent merge's calls may land in this one's figures; the run's
	 * sums are exact. */
	uint64_t fails[MS_EV_FAIL_KINDS];
} ms_ev_link;

/* One merge: dispatch fields (named as in ms_dispatch), then completion
 * (named as in ms_merge_result). */
typedef struct ms_ev_merge {
	/* Dispatch (from the dispatch hook). */
	uint64_t seq; /* the engine's dispatch seq (1, 2, ...) */
	enum ms_ev_phase_id phase;
	char lane[16];         /* MS_LANE_FAST / _SLOW / _FINALIZE */
	uint32_t worker;       /* worker index within the lane */
	int64_t logical_ns;    /* clock at dispatch (ms_dispatch.now_ns) */
	int64_t frontier_ns;   /* logical_ns - grace */
	uint64_t epoch_before; /* epoch the picker ran on */
	uint64_t pass;         /* picker pass within that epoch */
	double m;              /* picker multiple (0 for finalize) */
	uint64_t max_fan_out;
	size_t ninputs;
	const ms_ev_input *inputs;        /* borrowed, ninputs entries */
	uint64_t input_bytes, input_rows; /* ms_dispatch.bytes / .rows */
	uint32_t min_depth, max_depth;
	int64_t input_min_ts, input_max_ts;
	uint32_t mature_parts, hot_parts;
	uint64_t mature_rows, hot_rows;
	enum ms_sampling_class predict_class; /* predicted at dispatch */
	enum ms_sampling_reason predict_reason;
	int64_t wall_dispatch_ns; /* since run start */
	int64_t queue_ns;         /* dispatch to start */

	/* Completion (from ms_merge_result). */
	int err; /* 0 or the merge's ms_err */
	char error[MS_EV_TEXT_MAX];
	ms_merge_sampling sampling; /* class, reason and counters */
	uint32_t nlinks;
	ms_ev_link links[MS_EV_LINKS_MAX];
	ms_part_meta output; /* id 0 when nothing was published */
	ms_merge_index_stats index[MS_KIND_COUNT]; /* [LATENCY],[START_TIME] */
	uint64_t epoch_after;
	uint64_t rows_in, rows_out;
	uint64_t traces_in, traces_out;
	int64_t wall_start_ns; /* since run start */
	int64_t wall_ns;
	int64_t cpu_ns;         /* merge thread */
	int64_t process_cpu_ns; /* process delta (exact in serial mode) */
	uint64_t alloc_bytes, alloc_count;
	int64_t peak_live;
	uint64_t rss_peak; /* process peak RSS after the merge */
	uint64_t bytes_read, bytes_written;
	uint64_t fsyncs;
	uint64_t inv_parts, inv_bytes; /* inventory after publication */
} ms_ev_merge;

/* Part lifecycle. */
enum ms_ev_part_kind {
	MS_EV_PART_INTRODUCED = 0, /* published into the inventory */
	MS_EV_PART_REMOVED = 1,    /* left the inventory (merge input) */
	MS_EV_PART_DELETED = 2,    /* files removed from disk */
	MS_EV_PART_KIND_COUNT = 3,
};
/* "introduced", "removed", "deleted". */
const char *ms_ev_part_kind_name(enum ms_ev_part_kind k);

/* One event of a part: its core part and both index parts at once (they
 * are introduced and removed together). */
typedef struct ms_ev_part {
	enum ms_ev_part_kind what;
	uint64_t part_id;
	int64_t logical_ns;
	int64_t wall_ns;
	uint64_t epoch;
	char cause[16];     /* "publication", "merge", "finalize" */
	uint64_t cause_seq; /* publication or merge sequence */
	/* Each kind's file (index MS_KIND_*): its bytes on disk and rows;
	 * 0 for a removal. An index part a merge did not write is 0. */
	uint64_t bytes[MS_KIND_COUNT], rows[MS_KIND_COUNT];
	uint32_t depth;
} ms_ev_part;

/* A periodic resource sample. */
typedef struct ms_ev_sample {
	int64_t wall_ns; /* since run start */
	int64_t logical_ns;
	enum ms_ev_phase_id phase;
	uint64_t inv_parts, inv_bytes;
	uint64_t staged_bytes;
	int64_t live_bytes;
	uint64_t rss_bytes;
	int64_t cpu_ns; /* process, since run start */
	uint32_t running, queued;
} ms_ev_sample;

/* Resource figures of one phase, written at its end. */
typedef struct ms_ev_phase {
	enum ms_ev_phase_id phase;
	int64_t logical_start_ns, logical_end_ns;
	int64_t wall_ns;
	int64_t cpu_ns; /* process */
	uint64_t alloc_bytes, alloc_count;
	int64_t peak_live;
	/* The highest resident set while the phase ran: the process's
	 * high-water mark when the phase raised it, else the highest
	 * sampled sum of the kinds below (earlier builds: the process's
	 * high-water mark at the phase's end). */
	uint64_t rss_peak;
	uint64_t bytes_read, bytes_written;
	uint64_t fsyncs;
	int64_t drain_ns; /* final drain of the phase */
	/* Peaks of the resident set by kind (RssAnon, RssFile, RssShmem)
	 * sampled every 5 ms while the phase ran (version 7). */
	uint64_t rss_anon_peak, rss_file_peak, rss_shmem_peak;
	/* Primary only (0 in cooldown and staging): the staging of every scheduled part
	 * into the shard before the phase, and the fsyncs the run made
	 * before the phase (the shard's creation, the staging's syncfs). */
	int64_t staging_ns;
	uint64_t staging_fsyncs;
} ms_ev_phase;

/* One counter a plugin exports (ms_plugin_desc.stats), read at the end
 * of the run (version 4). */
typedef struct ms_ev_plugin_stat {
	uint32_t link; /* chain position, as run_plugin.link */
	char name[MS_EV_NAME_MAX];
	uint64_t value;
} ms_ev_plugin_stat;

/* A line a chain link's plugin logged through the host's log service
 * (ms_plugin_host.log), in process or from its plugin host, or that the
 * chain said about the link (a close() that overran); version 11. A run
 * keeps the first MS_EV_PLOG_KEEP lines of each link and counts the rest
 * (ms_ev_plugin_log_count), so a plugin that logs in a loop costs neither
 * disk nor time. */
#define MS_EV_PLOG_KEEP 100
#define MS_EV_LABEL_MAX (MS_EV_NAME_MAX + 12) /* ms_ev_link_label */
typedef struct ms_ev_plugin_log {
	int64_t wall_ns;             /* since the run started; < 0: before it */
	int64_t logical_ns;          /* the replay clock then */
	uint32_t link;               /* chain position, as run_plugin.link */
	char label[MS_EV_LABEL_MAX]; /* ms_ev_link_label: "detdrop#2" */
	int level; /* enum ms_plugin_log_level, stored as its name */
	char message[MS_EV_TEXT_MAX]; /* one printable line */
} ms_ev_plugin_log;
/* "error", "warn", "info", "debug"; "?" for any other level. */
const char *ms_ev_log_level_name(int level);
/* Per link: the lines kept and those not kept (logged after the first
 * MS_EV_PLOG_KEEP, or lost on the way from a plugin host). */
typedef struct ms_ev_plugin_log_count {
	uint32_t link;
	char label[MS_EV_LABEL_MAX];
	uint64_t lines, suppressed;
} ms_ev_plugin_log_count;

/* One seek back (version 9): the run went back to a checkpoint and its
 * events after it were removed (ms_rec_rollback). */
typedef struct ms_ev_seek {
	int64_t wall_ns;    /* since the run started, when it went back */
	int64_t logical_ns; /* the checkpoint's logical time */
	uint64_t from_pubs, from_merge; /* publications done, last merge */
	uint64_t to_pubs, to_merge;     /* the same at the checkpoint */
	char target[MS_EV_NAME_MAX];    /* where it runs to, "go merge 10" */
	uint64_t removed;               /* rows removed (filled by the call) */
} ms_ev_seek;

/* One correctness gate. */
typedef struct ms_ev_gate {
	char name[MS_EV_NAME_MAX];
	bool pass;
	bool warn; /* passed only because the run allowed it (WARN) */
	char detail[MS_EV_TEXT_MAX];
} ms_ev_gate;

/* One row of the run's reconciliation against the verdict oracle (the
 * gate verdict_oracle): a figure for the primary phase, the cooldown
 * merges, the finalize merge and the whole run, and whether the identity
 * the row states holds (ok; always true for a plain figure). */
enum {
	MS_EV_RECON_PRIMARY = 0,
	MS_EV_RECON_COOLDOWN = 1,
	MS_EV_RECON_FINALIZE = 2,
	MS_EV_RECON_TOTAL = 3,
	MS_EV_RECON_COLS = 4,
};
typedef struct ms_ev_recon {
	char name[MS_EV_NAME_MAX];
	uint64_t v[MS_EV_RECON_COLS];
	bool ok;
	char note[MS_EV_TEXT_MAX]; /* what the row must satisfy, or "" */
} ms_ev_recon;

/* ---------------------------------------------------------------------- */
/* Recorder. */

typedef struct ms_rec ms_rec;
#define MS_REC_QUEUE_BYTES (4u << 20) /* ms_rec_opts.queue_bytes default */
typedef struct ms_rec_opts {
	const char *path;      /* database file (copied) */
	bool overwrite;        /* replace an existing file */
	uint32_t batch_events; /* commit after this many; 0 = 256 */
	uint32_t batch_ms;     /* and at most this late; 0 = 100 */
	/* Bytes the queue of events not yet in SQLite may hold (with those
	 * being moved into it); a call that finds it full waits for room.
	 * 0 = MS_REC_QUEUE_BYTES. */
	size_t queue_bytes;
	/* The run record (copied), written in the transaction that
	 * creates the schema: the file is never an event log without its
	 * run, so a process killed at any instant after that commit leaves
	 * a run row with no status for ms_evdb_mark_ended to mark, and
	 * before it an empty file (no tables). NULL: no run row until
	 * ms_rec_run_begin. */
	const ms_ev_run *run;
	/* Called once the file exists at path, before anything is in it:
	 * from then on a process killed leaves it behind. NULL: none. */
	void (*created)(void *arg, const char *path);
	void *created_arg;
} ms_rec_opts;

/* Cost of recording so far. */
typedef struct ms_rec_stats {
	uint64_t events; /* rows inserted (all tables) */
	uint64_t merges; /* merge events accepted */
	uint64_t merges_committed;
	uint64_t commits;
	/* The cost of recording to the run: the callers' wall time in the
	 * queue (copying their events, and waiting for room: wait_ns) plus
	 * the CPU time (CLOCK_THREAD_CPUTIME_ID) of the recorder's thread
	 * draining the queue into SQLite and of the calls that use the
	 * database themselves (statements and commits, counted once). Not
	 * the time a caller waited for the database's lock (it waited for
	 * recording work counted here). */
	int64_t busy_ns;
	int64_t queue_ns; /* of busy_ns: the callers' time in the queue */
	int64_t wait_ns;  /* of queue_ns: callers waiting for room */
	uint64_t failed_statements; /* SQLite statements that failed */
} ms_rec_stats;

/*
 * Create the database at opts->path (WAL, schema MS_EV_SCHEMA_VERSION, the
 * run record when opts->run is given) and start the commit timer. Errors (one
 * line, naming the path): the directory is not writable; the file exists
 * (MS_ERR_EXISTS unless overwrite); the file is a database of another schema
 * version (MS_ERR_FORMAT).
 */
int ms_rec_open(ms_rec **out, const ms_rec_opts *opts, ms_errbuf *eb);
/* Commit pending events, stop the timer, fold the write-ahead log into the
 * database file and close. Every event accepted before is in the file
 * afterwards. When the log cannot be folded in (a full disk), the events
 * are in the file and its -wal together: MS_ERR_IO saying so, naming both
 * files and why (ms_evdb_fold_wal can try again later). NULL is accepted
 * (returns 0). */
int ms_rec_close(ms_rec *r, ms_errbuf *eb);
/* After the recorder closed (or died): fold what path's -wal still holds
 * into path and go back to a rollback journal (also when the log is
 * empty but the file is still in WAL mode, as a killed run leaves it),
 * so that path alone is the whole log and readers leave no -wal or -shm
 * beside it (unless another connection has it open). 0 when path alone
 * is the whole log (no -wal, an empty one, or folded now); else MS_ERR_IO
 * naming path and its -wal, saying they must be kept together, and why
 * the fold failed. */
int ms_evdb_fold_wal(const char *path, ms_errbuf *eb);
const char *ms_rec_path(const ms_rec *r);
/* Remove the event database at path with the files SQLite keeps beside
 * it (-wal, -shm, -journal); for a database its caller made. */
void ms_evdb_remove(const char *path);

/* Each call adds one event. Merge, publication, part, sample and plugin
 * log events are copied (a merge with its inputs) into a queue and the
 * call returns: the recorder's thread moves the queue into SQLite in the
 * order the calls were accepted, committing after batch_events events,
 * or batch_ms after the oldest was accepted, and the call never waits for
 * SQLite (only for room when the queue is full, ms_rec_opts.queue_bytes).
 * So a SIGKILL loses at most the last batch_ms of events. As such an event
 * reaches SQLite after its call returned, a failure to write it is
 * returned by the next call (any of this recorder's, from any thread),
 * by ms_rec_flush and ms_rec_close, and reported by ms_rec_failed; from
 * then on every call returns that first error. run_begin, run_staged,
 * run_end, phase, gate, recon and plugin_stat first move the queue into
 * SQLite, then write and commit at once on the caller's thread, as do
 * flush, merge_rows, mark_get, rollback and close before they read or
 * change the database. run_begin replaces the run record written at
 * the open (ms_rec_opts.run), if any, and its plugins. */
int ms_rec_run_begin(ms_rec *r, const ms_ev_run *run, ms_errbuf *eb);
/* How the parts were staged (ms_ev_run.clone_method), once they are: the
 * run is recorded before its staging, so that a run that dies while its
 * parts are staged is on record. Commits at once. */
int ms_rec_run_staged(ms_rec *r, const char *clone_method, ms_errbuf *eb);
int ms_rec_pub(ms_rec *r, const ms_ev_pub *p, ms_errbuf *eb);
/* One merge with its inputs, links and batches. A completed merge (err 0)
 * recorded after ms_rec_run_end (a merge that was under way when the run
 * was closed) also adds one to the run's merges_completed, in the same
 * transaction. */
int ms_rec_merge(ms_rec *r, const ms_ev_merge *m, ms_errbuf *eb);
int ms_rec_part(ms_rec *r, const ms_ev_part *p, ms_errbuf *eb);
int ms_rec_sample(ms_rec *r, const ms_ev_sample *s, ms_errbuf *eb);
int ms_rec_phase(ms_rec *r, const ms_ev_phase *p, ms_errbuf *eb);
int ms_rec_gate(ms_rec *r, const ms_ev_gate *g, ms_errbuf *eb);
int ms_rec_recon(ms_rec *r, const ms_ev_recon *c, ms_errbuf *eb);
int ms_rec_plugin_stat(ms_rec *r, const ms_ev_plugin_stat *s, ms_errbuf *eb);
/* A plugin log line (grouped like a publication) and a link's line
 * counts (the last record of a link wins). */
int ms_rec_plugin_log(ms_rec *r, const ms_ev_plugin_log *l, ms_errbuf *eb);
int ms_rec_plugin_log_count(ms_rec *r, const ms_ev_plugin_log_count *c,
                            ms_errbuf *eb);
/* The end columns of the run row. For a run that did not complete (status
 * other than "complete") merges_completed is at least the completed merges
 * recorded: the engine counts a merge only after it is recorded. */
int ms_rec_run_end(ms_rec *r, const ms_ev_run_end *e, ms_errbuf *eb);
/* Commit now. */
int ms_rec_flush(ms_rec *r, ms_errbuf *eb);
/* Commit now and build the index part_event_by_part, which inserts do not
 * keep (SCHEMA.md): the run calls it as it ends, before it reads its
 * recording time (which counts it); ms_rec_close does it when the run
 * did not. Once built, later inserts keep it. */
int ms_rec_index(ms_rec *r, ms_errbuf *eb);
/* Commit what is pending and count the merge rows the database holds
 * (*out; 0 on error): the event_count gate's rows, read back rather than
 * counted as they were accepted. */
int ms_rec_merge_rows(ms_rec *r, uint64_t *out, ms_errbuf *eb);

/* Where the log stands (ms_rec_mark_get): the events a later rollback
 * keeps. */
typedef struct ms_rec_mark {
	uint64_t pubs;      /* publication rows with seq < pubs */
	uint64_t merge_seq; /* merge rows (and their inputs, links, batches)
	                       with seq <= merge_seq */
	int64_t part_id;    /* part_event rows with id <= part_id */
	int64_t sample_id;  /* sample rows with id <= sample_id */
} ms_rec_mark;
/* Commit what is pending and mark the log now: pubs and merge_seq are the
 * caller's (the publications done, the engine's last dispatch), the row
 * IDs are read. */
int ms_rec_mark_get(ms_rec *r, uint64_t pubs, uint64_t merge_seq,
                    ms_rec_mark *m, ms_errbuf *eb);
/*
 * Go back to mark m: in one transaction, remove every publication, merge
 * (with its inputs, links and batches), part and sample event recorded
 * after it, and add s as a row of table seek (s->removed: the rows
 * removed). The log then reads as if the run had gone straight to the
 * mark, plus the seek rows (replay/SCHEMA.md, "Going back in time").
 */
int ms_rec_rollback(ms_rec *r, const ms_rec_mark *m, ms_ev_seek *s,
                    ms_errbuf *eb);
/*
 * Record the end of a run whose process died without one (postmortem.c):
 * set status and error of the run record if it has no status yet, with
 * its publications (the rows recorded) and its wall until now; a run
 * that already ended is left as it is. *changed (may be NULL) says which.
 * For another process than the recorder's. Waits up to 10 s for a lock.
 */
int ms_evdb_mark_ended(const char *path, const char *status, const char *reason,
                       bool *changed, ms_errbuf *eb);
/* 0 while the recorder can write; after its first SQLite failure, that
 * error for good ("event database PATH: commit: database or disk is full"
 * in eb), and every recording call returns it without touching SQLite. */
int ms_rec_failed(ms_rec *r, ms_errbuf *eb);
void ms_rec_stats_get(ms_rec *r, ms_rec_stats *out);

/* ---------------------------------------------------------------------- */
/* Reading a recorded log. */

typedef struct ms_evdb ms_evdb;
/* Open read-only; checks the schema version (MS_ERR_FORMAT, naming the
 * path, the version found and the one expected). Works while a recorder
 * is still writing (WAL readers). */
int ms_evdb_open(ms_evdb **out, const char *path, ms_errbuf *eb);
void ms_evdb_close(ms_evdb *db);
const char *ms_evdb_path(const ms_evdb *db);
/* Whether the database, when opened, was in WAL mode with no write-ahead
 * log beside it (none, or an empty one): what a copy made without its
 * -wal looks like, and such a copy lacks what the log held. */
bool ms_evdb_wal_missing(const ms_evdb *db);

/* The run record; *has_end tells whether run_end was recorded (if not,
 * *end is zeroed). Either out pointer may be NULL. */
int ms_evdb_run(ms_evdb *db, ms_ev_run *run, ms_ev_run_end *end, bool *has_end,
                ms_errbuf *eb);

/* Which merges a reader, an export or the TUI's event log shows. Zeroed
 * means "all". */
typedef struct ms_ev_filter {
	const char *lane; /* NULL = any */
	int klass;        /* enum ms_sampling_class + 1; 0 = any */
	int reason;       /* enum ms_sampling_reason + 1; 0 = any */
	int phase;        /* enum ms_ev_phase_id + 1; 0 = any */
	bool has_seq_range;
	uint64_t seq_min, seq_max; /* inclusive */
	/* Words (separated by spaces), each a case-insensitive substring
	 * of the summary, in any order (ms_ev_text_match). */
	const char *text;
} ms_ev_filter;

/* Whether every space-separated word of words occurs in hay, ignoring
 * case ("" and NULL words match anything): the text part of the event
 * filter, in the TUI's log and in exports alike. */
bool ms_ev_text_match(const char *hay, const char *words);

/* The one-line summary the text filter matches, e.g. "#12 fast/0 primary
 * executed none in 0000000000000003,... out 00000000000000a1". */
void ms_ev_merge_summary(const ms_ev_merge *m, char *buf, size_t n);
/* Does m pass f (NULL f passes everything)? */
bool ms_ev_filter_match(const ms_ev_filter *f, const ms_ev_merge *m);

/* Callbacks return 0 to continue, anything else stops the walk and is
 * returned. Events come in ascending sequence (or insertion) order. */
typedef int (*ms_ev_merge_fn)(void *ctx, const ms_ev_merge *m);
typedef int (*ms_ev_pub_fn)(void *ctx, const ms_ev_pub *p);
typedef int (*ms_ev_part_fn)(void *ctx, const ms_ev_part *p);
typedef int (*ms_ev_sample_fn)(void *ctx, const ms_ev_sample *s);
typedef int (*ms_ev_phase_fn)(void *ctx, const ms_ev_phase *p);
typedef int (*ms_ev_gate_fn)(void *ctx, const ms_ev_gate *g);
typedef int (*ms_ev_recon_fn)(void *ctx, const ms_ev_recon *c);
typedef int (*ms_ev_plugin_stat_fn)(void *ctx, const ms_ev_plugin_stat *s);
typedef int (*ms_ev_plugin_log_fn)(void *ctx, const ms_ev_plugin_log *l);
typedef int (*ms_ev_plugin_log_count_fn)(void *ctx,
                                         const ms_ev_plugin_log_count *c);

int ms_evdb_each_merge(ms_evdb *db, const ms_ev_filter *f, ms_ev_merge_fn fn,
                       void *ctx, ms_errbuf *eb);
int ms_evdb_each_pub(ms_evdb *db, ms_ev_pub_fn fn, void *ctx, ms_errbuf *eb);
int ms_evdb_each_part(ms_evdb *db, ms_ev_part_fn fn, void *ctx, ms_errbuf *eb);
int ms_evdb_each_sample(ms_evdb *db, ms_ev_sample_fn fn, void *ctx,
                        ms_errbuf *eb);
int ms_evdb_each_phase(ms_evdb *db, ms_ev_phase_fn fn, void *ctx,
                       ms_errbuf *eb);
int ms_evdb_each_gate(ms_evdb *db, ms_ev_gate_fn fn, void *ctx, ms_errbuf *eb);
int ms_evdb_each_recon(ms_evdb *db, ms_ev_recon_fn fn, void *ctx,
                       ms_errbuf *eb);
int ms_evdb_each_plugin_stat(ms_evdb *db, ms_ev_plugin_stat_fn fn, void *ctx,
                             ms_errbuf *eb);
/* Plugin log lines in the order they were logged; line counts by link. */
int ms_evdb_each_plugin_log(ms_evdb *db, ms_ev_plugin_log_fn fn, void *ctx,
                            ms_errbuf *eb);
int ms_evdb_each_plugin_log_count(ms_evdb *db, ms_ev_plugin_log_count_fn fn,
                                  void *ctx, ms_errbuf *eb);

/* ---------------------------------------------------------------------- */
/* Output files the user names (replay/outfile.c): exports, JSON reports. */

/* Written to a temporary file beside the name, fsynced, then renamed over
 * it; an existing name is refused unless force. Heap object. */
typedef struct ms_outfile ms_outfile;
/* Whether path may be written: not a directory, and (unless force) not an
 * existing file. For checks before long work; ms_outfile_open checks again.
 * 0, MS_ERR_EXISTS ("... exists; not overwritten (give --force ...)"),
 * MS_ERR_INVAL or MS_ERR_IO. */
int ms_outfile_check(const char *path, bool force, ms_errbuf *eb);
/* Check path, then create the temporary file. *out = NULL on error. */
int ms_outfile_open(ms_outfile **out, const char *path, bool force,
                    ms_errbuf *eb);
/* The stream to write to (owned by o). */
FILE *ms_outfile_stream(ms_outfile *o);
/* Flush, fsync and rename the temporary file to the name (without force,
 * never over a file created meanwhile), then free o. On error the
 * temporary file is removed and the name untouched. */
int ms_outfile_commit(ms_outfile *o, ms_errbuf *eb);
/* Drop what was written (removes the temporary file) and free o. NULL
 * is fine. */
void ms_outfile_abort(ms_outfile *o);
/* Abort o after its writer failed with rc (not 0). When a write to the
 * file failed (a full disk), the error is replaced by one naming the file
 * and the system's reason ("PATH: write failed: No space left on
 * device"), which a writer that only sees ferror() on its stream cannot
 * give; otherwise eb is left as the writer set it. Returns the error. */
int ms_outfile_fail(ms_outfile *o, int rc, ms_errbuf *eb);

/* ---------------------------------------------------------------------- */
/* Exports (replay/export.c). */

/* Whether path names the event database at db_path or a file SQLite keeps
 * beside it (db_path with -wal, -shm or -journal appended), whether or
 * not they exist yet: the same file, or the same name in the same
 * directory. No output may be written there (an export, a JSON or HTML
 * report): replacing the -wal of a database loses its last events. */
bool ms_evdb_path_is_db(const char *db_path, const char *path);

enum ms_export_format {
	MS_EXPORT_JSONL = 0,  /* one merge per line */
	MS_EXPORT_CSV = 1,    /* RFC 4180, header line, CRLF */
	MS_EXPORT_CHROME = 2, /* Chrome trace-event JSON object */
};
/* "jsonl", "csv", "chrome" -> format; -1 if unknown. */
int ms_export_format_parse(const char *s);
/* The format's name as ms_export_format_parse reads it; "?" if none. */
const char *ms_export_format_name(enum ms_export_format f);

/* Write the merges that pass f (NULL = all) to out. The Chrome export also
 * carries publications and inventory/staged counters (publications are not
 * filtered). *written (may be NULL) gets the number of merges written. */
int ms_export(ms_evdb *db, enum ms_export_format fmt, const ms_ev_filter *f,
              FILE *out, uint64_t *written, ms_errbuf *eb);
/* The same into a file path, through ms_outfile: refused if path exists
 * unless force; an interrupted or failed export leaves no file at path.
 * Writing over the database db itself, or a file SQLite keeps beside it
 * (ms_evdb_path_is_db), is refused even with force. */
int ms_export_file(ms_evdb *db, enum ms_export_format fmt,
                   const ms_ev_filter *f, const char *path, bool force,
                   uint64_t *written, ms_errbuf *eb);

/* ---------------------------------------------------------------------- */
/* Reports (replay/report.c). */

/*
 * Gates that follow from the event log alone, evaluated with the run's own
 * definitions (ms_gates.h), in this order: event_count, one_classification
 * (the log's own: every merge has exactly one classification and a reason
 * when not executed), no_decide_when_hot (selection policy only),
 * lifecycle (every input removed and every output introduced exactly
 * once), ledgers (the final ledgers against the fixture's recorded at
 * the start when no merge dropped a row, else against the expected ones,
 * which must be the fixture's minus the rows the merges dropped; a log
 * with no fixture ledgers fails it as not checked). Fills up to max
 * gates, returns how many (or a negative ms_err).
 */
int ms_report_derive_gates(ms_evdb *db, ms_ev_gate *gates, size_t max,
                           ms_errbuf *eb);

/* Did the run of db end with status "complete"? When not (no end record:
 * killed or still running; or status "aborted"/"failed"), *unfinished is
 * set and why gets one line saying so. */
int ms_report_unfinished(ms_evdb *db, bool *unfinished, char *why, size_t n,
                         ms_errbuf *eb);

/* The run report: run header, primary and cooldown tables, merges by lane,
 * classification and reason, plugin table with histogram, then every
 * recorded gate as PASS/FAIL. *failed (may be NULL) gets the number of
 * failing gates; an unfinished run (ms_report_unfinished) counts one more,
 * shown as the failing gate run_finished. */
int ms_report_text(ms_evdb *db, FILE *out, unsigned *failed, ms_errbuf *eb);
/* The same figures as one JSON object. */
int ms_report_json(ms_evdb *db, FILE *out, unsigned *failed, ms_errbuf *eb);
/*
 * Compare two runs: per phase, each figure of A and B with the delta of B
 * over A in %; then, when one run is "disabled" and the other "alwayskeep"
 * on the same fixture, the check that their selection fingerprints and final
 * ledgers are identical; then each run's gates, naming those that failed.
 * *mismatch (may be NULL) is set when that check applies and fails, and
 * when either run is unfinished: then no deltas are printed, only which
 * side did not finish.
 */
int ms_report_compare(ms_evdb *a, ms_evdb *b, FILE *out, bool *mismatch,
                      ms_errbuf *eb);
/* *failed = the gates db's run failed, plus one when the run did not
 * finish (the run_finished gate of ms_report_text). */
int ms_report_failed_gates(ms_evdb *db, unsigned *failed, ms_errbuf *eb);
/* The run report of db as one self-contained HTML file (replay/html.c):
 * inline SVG charts (merges per lane worker on wall time, inventory parts
 * and bytes over the day, staged bytes, Decide latency), the text report
 * and, when vs is given, the comparison with it. Nothing is loaded from
 * anywhere else. */
int ms_report_html(ms_evdb *db, ms_evdb *vs, FILE *out, ms_errbuf *eb);

#endif
