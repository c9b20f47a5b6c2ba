/*
 * replay_int.h - internals shared by the replay controller's files.
 */
#ifndef MS_REPLAY_INT_H
#define MS_REPLAY_INT_H

#include "ms_err.h"
#include "ms_fixture.h"
#include "ms_envelope.h"
#include "ms_fs.h"
#include "ms_limits.h"
#include "ms_rusage.h"
#include "ms_replay.h"
#include "ms_thread.h"

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>

#include <stdbool.h>
#include <time.h>

/* The stack of the controller thread (ms-replay): four times core's
 * (ms_thread.h, where the replay's threads' measured needs are), as it
 * touches 80 KiB of it copying a part in from another file system (the
 * 64 KiB buffer of fsutil.c's copy_fd). The replay's other threads take
 * MS_THREAD_STACK. */
#define MS__CONTROLLER_STACK (4 * MS_THREAD_STACK)

/* The run's plugin log (plog.c): the chain's log sink, what it kept and
 * counted, and how much of it is in the database. */
typedef struct ms__plog_line {
	int64_t mono_ns, logical_ns;
	uint32_t link;
	int level;
	char msg[MS_EV_TEXT_MAX];
} ms__plog_line;
typedef struct ms__plog {
	pthread_mutex_t mu;
	bool inited;
	const ms_clock *clock; /* borrowed */
	ms__plog_line *lines;  /* [0, n) kept, cap allocated */
	size_t n, cap, recorded;
	size_t nlinks, nseen; /* links named; highest link seen + 1 */
	char label[MS_EV_LINKS_MAX][MS_EV_LABEL_MAX];
	uint64_t kept[MS_EV_LINKS_MAX], suppressed[MS_EV_LINKS_MAX];
	bool changed; /* the counts changed since they were recorded */
} ms__plog;
int ms__plog_init(ms__plog *p, const ms_clock *clock);
void ms__plog_release(ms__plog *p); /* an ms__plog never inited: nothing */
/* The chain's log sink (ms_chain_log_fn); ctx is the ms__plog. */
void ms__plog_sink(void *ctx, const ms_chain_log_line *ln);
/* The chain's plugin names in order, for the links' labels. */
void ms__plog_set_names(ms__plog *p, const char *const *names, size_t n);
/* Record what is not recorded yet (lines, changed counts) into rec; wall
 * times from t0_mono (the run's start). Not on a merge's thread. */
void ms__plog_record(ms__plog *p, ms_rec *rec, int64_t t0_mono);
/* ms_replay_plugin_log's work. */
size_t ms__plog_link(ms__plog *p, size_t link, int64_t t0_mono,
                     ms_ev_plugin_log *out, size_t cap,
                     ms_ev_plugin_log_count *count);

/* Copy one file / a directory tree (a file given as the tree: that file;
 * to must not exist). *reflinked is set when any file was cloned rather
 * than copied. */
int ms__copy_file(const char *from, const char *to, bool *reflinked,
                  ms_errbuf *eb);
int ms__copy_tree(const char *from, const char *to, bool *reflinked,
                  ms_errbuf *eb);
/* The ways of copying a file that failed because the file systems do
 * not do them (a reflink, copy_file_range), so that the rest of a tree's
 * files are copied without trying them again. */
typedef struct ms__copy_way {
	bool no_clone, no_range;
} ms__copy_way;
/* How staged files got into the shard; no_link is set once a link failed
 * because the file systems differ (or do not link), so the rest are
 * copied without trying again, and way likewise for the copies. */
typedef struct ms__stage_counts {
	uint64_t linked, reflinked, copied;
	bool no_link;
	ms__copy_way way;
} ms__stage_counts;
/* Put the part `from` at `to`: its file (part format 3 and later), or
 * every file of a part directory in a new directory `to`: a hard link
 * when allow_link and the file system allows, else a reflink or a copy.
 * Counts in *c. Syncs nothing (the caller syncs once). */
int ms__stage_tree(const char *from, const char *to, bool allow_link,
                   ms__stage_counts *c, ms_errbuf *eb);
/* The scratch shard's place when --work-dir is not given (workdir.c). */
typedef struct ms__work_choice {
	char dir[PATH_MAX];
	char why[PATH_MAX + 160]; /* one line: where and why */
	bool shm; /* in the scratch root, not on the disk fallback */
} ms__work_choice;
/* "merge #SEQ (LANE): ERROR" into dst[n]; a line longer than that keeps
 * its head and its tail, where the error says its cause, around
 * " [...] " (ms_msg_fit). */
void ms__failure_line(char *dst, size_t n, uint64_t seq, const char *lane,
                      const char *error);
/* Bytes the shard of a day needs at most: MS__WORK_DAYS times the
 * fixture's part bytes (all staged, plus merge outputs beside their
 * inputs, and inputs merged away that the part checker still holds) and
 * 64 MiB; UINT64_MAX when that does not fit. */
#define MS__WORK_DAYS 4u
uint64_t ms__work_need_bytes(uint64_t fixture_bytes);
/* Bytes of every scheduled part of the fixture, all kinds. */
uint64_t ms__fixture_day_bytes(const ms_fixture *fx);
/* The same with each file rounded up to whole blocks of `block` bytes
 * (0: as bytes): what the day's parts take on a file system of that
 * block size (statvfs f_frsize; 4 KiB pages on a tmpfs). */
uint64_t ms__fixture_day_blocks(const ms_fixture *fx, uint64_t block);
/* Bytes the shard of a day needs on a file system of `block`-byte
 * blocks (ms__work_need_bytes of the day's files in those blocks). */
typedef uint64_t (*ms__work_need_fn)(const void *arg, uint64_t block);
/* 0 when the shard directory dir, whose file system has avail bytes
 * free, can take the day's parts (day_bytes, in its blocks) as they are
 * staged: always
 * when they are linked from the fixture (links: one file system), else
 * when they fit; MS_ERR_NOSPACE naming dir and both figures otherwise (a
 * run that could not even stage its day, refused before it copies). */
int ms__work_room_check(const char *dir, uint64_t avail, bool links,
                        uint64_t day_bytes, ms_errbuf *eb);
/* A shard directory the user gave (--work-dir) that can stage the day
 * but has less free (avail) than the day's merges may need there
 * (ms__work_need_bytes of day_bytes, less the staged day when it is
 * linked): true with a line into buf[n] naming dir, both figures and
 * what follows (merges wait, the finalize may be skipped); else false
 * and buf "". */
/* A --work-dir found not empty may hold just what a killed run left (its
 * watcher killed with it: `timeout -s KILL` signals the whole process
 * group): its scratch shard, with the owner record (ms_owner.h, kind
 * scratch) of a process that is gone. Then the record is replaced by this
 * process's (note db, this run's event database), the shard's other
 * entries are removed, the directory itself kept (the caller holds its
 * lock), and note (n bytes) says so: 1. 0 when dir holds anything else
 * (left as it is); negative, with eb naming the shard and the error, when
 * removing failed part way. */
int ms__work_reclaim(const char *dir, const char *db, char *note, size_t n,
                     ms_errbuf *eb);
bool ms__work_room_note(char *buf, size_t n, const char *dir, uint64_t avail,
                        bool links, uint64_t day_bytes);
/* What a run keeps for its own memory beside a shard on a tmpfs under an
 * enforced memory limit: a tmpfs's pages are charged to the cgroup of
 * the process that writes them, so the shard and the run share the
 * limit. */
#define MS__WORK_MEM_RESERVE (128ull << 20)
/* The scratch root (e.g. /dev/shm/mergescope-<uid>) when its file system
 * is writable with need(need_arg, its block size) bytes free and a tmpfs
 * (any file system when
 * any_fs: a root the user chose), and, when that file system is a tmpfs
 * and mem_cap (the memory limit a cgroup enforces on the run; 0: none)
 * is set, when need fits in mem_cap less MS__WORK_MEM_RESERVE:
 * <root>/<base>.<pid>.shard, the root made (mode 0700) and out->shm set;
 * else <disk_dir>/<base>.<pid>.shard. out->why says which and why. */
void ms__work_dir_choose(const char *root, bool any_fs, ms__work_need_fn need,
                         const void *need_arg, uint64_t mem_cap,
                         const char *disk_dir, const char *base,
                         ms__work_choice *out);
/* The same for the root ms_scratch_root names (MERGESCOPE_SCRATCH, any
 * file system; else the default, a tmpfs only). Returns 0, or the error
 * of a bad MERGESCOPE_SCRATCH, with eb naming it. */
int ms__work_dir_default(ms__work_need_fn need, const void *need_arg,
                         uint64_t mem_cap, const char *disk_dir,
                         const char *base, ms__work_choice *out, ms_errbuf *eb);
/* 0 unless the shard directory dir is on a tmpfs (tmpfs) and the day's
 * shard (need bytes) and MS__WORK_MEM_RESERVE do not fit in mem_cap, the
 * memory limit a cgroup enforces on the run (0: none): then
 * MS_ERR_NOSPACE naming dir, the limit and the need (a run the kernel
 * could kill part way, refused before it starts). */
int ms__work_mem_check(const char *dir, bool tmpfs, uint64_t mem_cap,
                       uint64_t need, ms_errbuf *eb);

/* Peaks of the resident set by kind, in bytes (rsswatch.c), each its own
 * (they need not fall on one sample), and total, the highest sum of the
 * three at one sample: the sampled peak of the whole resident set. */
typedef struct ms__rss_peaks {
	int64_t anon, file, shmem, total;
} ms__rss_peaks;

/* A thread that samples /proc/self/status every period_ms and keeps the
 * peak of each kind; while quiet (the run stopped) it sleeps. Embedded;
 * start, take and quiet any number of times, stop. */
typedef struct ms__rsswatch {
	pthread_t th;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	unsigned period_ms;
	bool stop, started;
	bool quiet;        /* asleep until unquieted (ms__rsswatch_quiet) */
	int64_t quiet_hwm; /* VmHWM when it went quiet */
	uint64_t samples;  /* samples taken, for tests */
	ms__rss_peaks peak;
} ms__rsswatch;

/* Start sampling (period 0 = 5 ms). 0, or an error saying what could not
 * be made and the system's reason (ms_thread_fail); then takes report
 * zeros. */
int ms__rsswatch_start(ms__rsswatch *w, unsigned period_ms, ms_errbuf *eb);
/* The peaks since the start or the previous take; restarts them. */
void ms__rsswatch_take(ms__rsswatch *w, ms__rss_peaks *out);
/* Stop the thread (no-op when not started). */
void ms__rsswatch_stop(ms__rsswatch *w);
/* The run stopped (quiet) or goes on: a quiet sampler takes one sample
 * and sleeps until unquieted, then samples at once. Nothing it skipped
 * is lost from the total: a VmHWM risen meanwhile is the highest whole
 * resident set in between, and counts as the total peak. */
void ms__rsswatch_quiet(ms__rsswatch *w, bool quiet);

/* Where a run stands, for per-phase figures: the two recorded phases
 * and the finalize merge (recorded in cooldown) apart. */
enum ms__rphase {
	MS__RP_PRIMARY = 0,
	MS__RP_COOLDOWN = 1,
	MS__RP_FINALIZE = 2,
	MS__RP_COUNT = 3,
};

typedef struct ms__blkcache ms__blkcache;

/* Memory in chunks that never move, so a pointer into one stays valid as
 * more are added (dropset.c). Zero-initialized is empty. */
typedef struct ms__chunks {
	void **p;
	size_t n, cap;
} ms__chunks;
/* A new chunk of `bytes` at p[n++] (owned by c); NULL when there is no
 * memory. */
void *ms__chunks_add(ms__chunks *c, size_t bytes);
void ms__chunks_release(ms__chunks *c);

/* Large arrays straight from the kernel, never through malloc (bigmem.c
 * says why). ms__big_alloc: `bytes` of zeroed memory owned by the caller,
 * NULL when there is none; ms__big_free takes it back (NULL is fine) with
 * the size it was allocated with. ms__big_reserve: room for `need`
 * elements of `size` bytes in the array at *p of capacity *cap (both 0 and
 * NULL at first; the capacity at least doubles, the contents are kept);
 * 0, or MS_ERR_NOMEM with *p and *cap as they were. */
void *ms__big_alloc(size_t bytes);
void ms__big_free(void *p, size_t bytes);
int ms__big_reserve(void **p, size_t *cap, size_t need, size_t size);
/* Sort n elements of `size` bytes at base by cmp (stable: a merge sort
 * whose scratch, n * size bytes, comes from ms__big_alloc). 0 or
 * MS_ERR_NOMEM, base then unchanged. */
int ms__big_sort(void *base, size_t n, size_t size,
                 int (*cmp)(const void *, const void *));

/* The ring of recent merges (recent.c): the last MS_REPLAY_RECENT merge
 * events, oldest first, each with its first MS_REPLAY_RECENT_INPUTS
 * inputs. A record is the event's bytes and its inputs' with their runs
 * of zeros left out (an event is mostly zeros: the unused links, the
 * empty error text, a lossless merge's sampling figures), packed in push
 * order in chunks of MS__RECENT_CHUNK bytes of one block mapped at init
 * and left untouched: a record written touches its own bytes only, so the
 * ring's resident memory follows the records it holds, not its capacity.
 * Ownership: the ring owns its block and copies what it is given (an
 * event's inputs included); nothing it returns points into it. Not
 * locked: the replay holds its mu around every call. */
#define MS__RECENT_CHUNK ((size_t)32768)
/* The largest record: a whole event and MS_REPLAY_RECENT_INPUTS inputs,
 * each with 4 bytes of packing, rounded up to 8. */
#define MS__RECENT_REC_MAX                                                     \
	((sizeof(ms_ev_merge) +                                                \
	  MS_REPLAY_RECENT_INPUTS * sizeof(ms_ev_input) + 8 + 7) &             \
	 ~(size_t)7)
/* Chunks in the block: room for every record at its largest (recent.c,
 * design 3). */
#define MS__RECENT_NCHUNKS                                                     \
	(MS_REPLAY_RECENT / (MS__RECENT_CHUNK / MS__RECENT_REC_MAX) + 2)
#define MS__RECENT_BLOCK (MS__RECENT_NCHUNKS * MS__RECENT_CHUNK)

typedef struct ms__recent_slot {
	uint32_t off;     /* the record's offset in the block */
	uint32_t size;    /* its bytes, a multiple of 8 */
	uint16_t ev_len;  /* bytes of the packed event; its inputs follow */
	uint16_t ninputs; /* inputs kept */
} ms__recent_slot;

typedef struct ms__recent_chunk {
	uint32_t used; /* bytes written from its start */
	uint32_t live; /* records held in it */
} ms__recent_chunk;

typedef struct ms__recent {
	unsigned char *block; /* MS__RECENT_BLOCK bytes (ms__big_alloc) */
	/* A ring of records: the oldest at (head - n), the newest at
	 * (head - 1), modulo MS_REPLAY_RECENT. */
	ms__recent_slot slot[MS_REPLAY_RECENT];
	size_t head, n;
	ms__recent_chunk chunk[MS__RECENT_NCHUNKS];
	uint32_t spare[MS__RECENT_NCHUNKS]; /* chunks emptied, taken first */
	size_t nspare;
	uint32_t fresh;    /* chunks ever taken: [0, fresh) */
	uint32_t tail;     /* the chunk records are appended to */
	size_t live_bytes; /* bytes of the records held */
	size_t touched;    /* the highest block offset ever written, + 1 */
} ms__recent;

/* Map the block (untouched); the ring is empty. 0 or MS_ERR_NOMEM. */
int ms__recent_init(ms__recent *rg);
/* Unmap the block; a zeroed or released ring is fine. */
void ms__recent_release(ms__recent *rg);
/* Append a copy of m and of its first MS_REPLAY_RECENT_INPUTS inputs
 * (none when m->inputs is NULL), dropping the oldest record when the ring
 * is full. Never fails. */
void ms__recent_push(ms__recent *rg, const ms_ev_merge *m);
/* Record i (0 = the oldest, i < rg->n) into *out: byte for byte the event
 * pushed, but out->inputs, which is NULL when inputs is NULL, else inputs:
 * room for MS_REPLAY_RECENT_INPUTS entries that gets the first
 * min(out->ninputs, MS_REPLAY_RECENT_INPUTS) inputs (those not kept
 * zeroed). */
void ms__recent_get(const ms__recent *rg, size_t i, ms_ev_merge *out,
                    ms_ev_input *inputs);
/* The seq of record i (0 = the oldest, i < rg->n). */
uint64_t ms__recent_seq(const ms__recent *rg, size_t i);
/* Forget the newest record (rg->n > 0). */
void ms__recent_drop_newest(ms__recent *rg);
/* The ring's memory: bytes of the records held (*live), and the return:
 * bytes of its block ever written, what it can have made resident. */
size_t ms__recent_bytes(const ms__recent *rg, size_t *live);

/* Trace IDs packed in chunks (dropset.c). Zero-initialized is empty. */
typedef struct ms__idpool {
	ms__chunks ch;
	size_t used; /* bytes used in the last chunk */
} ms__idpool;
/* The bytes of each chunk of an ms__idpool. */
#define MS__IDPOOL_CHUNK ((size_t)65536)
/* A copy of the len bytes of id (len <= MS_TRACE_ID_MAX) in the pool,
 * owned by it; NULL when out of memory. */
const uint8_t *ms__idpool_add(ms__idpool *p, const uint8_t *id, size_t len);
void ms__idpool_release(ms__idpool *p);

/* The traces merges confirmed as dropped (a set by trace ID). */
typedef struct ms__drop_ent {
	const uint8_t *tid; /* in ms__dropped.ids */
	uint64_t rows;      /* rows the merges said they dropped */
	uint32_t times;     /* how often it was reported (must be 1) */
	uint8_t len;
	uint8_t phase; /* enum ms__rphase of its (first) drop */
} ms__drop_ent;

typedef struct ms__dropped {
	ms__drop_ent *ent; /* dense: ent[0..n), in order of first report */
	size_t n, ecap;
	ms__idpool ids;
	uint32_t *idx; /* cap slots: entry number + 1, 0 = empty */
	size_t cap;
} ms__dropped;

int ms__dropped_add(ms__dropped *d, const uint8_t *tid, uint32_t len,
                    uint64_t rows, enum ms__rphase phase);
/* Keep the first n entries only (a seek back: the drops reported after a
 * checkpoint are forgotten); n > d->n changes nothing. */
void ms__dropped_truncate(ms__dropped *d, size_t n);
void ms__dropped_release(ms__dropped *d);
const ms__drop_ent *ms__dropped_find(const ms__dropped *d, const uint8_t *tid,
                                     uint32_t len);
/* Each dropped trace was reported once with all its rows: found[i] is
 * the number of fixture rows of the trace d->ent[i] (NULL: none found).
 * 0, or MS_ERR_STATE and `why`. */
int ms__drop_check(const ms__dropped *d, const uint64_t *found, char *why,
                   size_t n);

/* The cause in a link's failure message, past a process host's "plugin
 * host for PATH: " (controller.c); msg itself when it has none. */
const char *ms__link_fail_cause(const char *msg);

/* One fail-open or bypass event of a merge (plugin_health). */
#define MS__HEALTH_MAX 64
typedef struct ms__health_ev {
	uint64_t seq;
	char link[64]; /* "-" when no link is concerned */
	char kind[24]; /* ms_ev_fail_kind_name, lossless_retry, oversized */
	uint64_t count;
	char why[96]; /* "" or the cause (ms_ev_link.fail_why) */
} ms__health_ev;

/* The verdict oracle (oracle.c): every complete trace of the fixture with
 * the verdict the chain gives it, by the 128-bit hash of its trace ID
 * (ms__oracle_find; the IDs themselves are not kept). */
typedef struct ms__oracle_ent {
	uint64_t key_lo, key_hi; /* XXH3-128 of the trace ID */
	uint32_t rows;
	uint32_t frag0, nfrags; /* its blocks in ms__oracle.frags */
	bool keep;
	/* Rows outside the fixture's day: the boundary guard of the
	 * fragment-gap contract must retain it once it is complete (the
	 * segment is the day with the grace on both sides). */
	bool edge;
	/* A kept trace's links that failed open on its smallest batch (bit
	 * i: link i; ms_chain_evaluate_rows): those links did not judge it,
	 * so the keep is only the other links'. 0 when every link judged
	 * it, and for a dropped trace (one link's drop is the chain's). */
	uint16_t failed;
} ms__oracle_ent;

/* One block of a trace in the raw parts: its cache key (ms__block_key). */
typedef struct ms__oracle_frag {
	uint64_t lo, hi;
} ms__oracle_frag;

typedef struct ms__oracle {
	ms__oracle_ent *ent; /* ascending by key: every trace of the day,
	                        or (shed) only those the chain drops or
	                        kept with links failed open */
	size_t nent;
	size_t n;               /* the day's traces */
	ms__oracle_frag *frags; /* the blocks of ent's traces */
	size_t nfrags;
	bool shed;            /* ent holds the dropped traces only */
	const ms_fixture *fx; /* read again to undo a shed */
	uint64_t keep, drop;
	uint64_t link_failures; /* link calls of the oracle's chain that
	                           failed (their verdicts were bypassed) */
	uint64_t unjudged;      /* kept traces with failed links (ent) */
	int64_t ns, decide_ns;  /* wall: all of it, the Decide calls */
	int64_t cpu_ns;         /* CPU of the thread that ran it */
	/* Bytes of the arrays it holds for the whole day (blocks, IDs, rows'
	 * columns, verdicts, keys, the table, any sort's scratch; the
	 * chain's batch of rows aside): now, at most, and once the day's
	 * blocks and rows were read. */
	size_t held, held_peak, held_read;
	/* The dropped traces (the run's drop set, ms__oracle_dropped):
	 * the ledger of their fixture rows, and per slot of the set the
	 * rows found. */
	ms_ledger_set dropped_led;
	uint64_t *drop_found;
	char checksum[17]; /* XXH64 of (ID, verdict) in ID order */
	/* The checksum of each link's plugin file as its chain loaded it,
	 * held against the run's at the gates (a file rewritten after the
	 * run loaded it is another plugin). */
	size_t nlinks;
	char link_checksum[MS_EV_LINKS_MAX][33];
	bool ok;
	char why[200];
	/* Not empty: ent and frags are not in memory but in this file
	 * (ms__oracle_spill), nent and nfrags what it holds; or, with
	 * spill_unlinked, in the file without a name open as spill_fd
	 * (ms__oracle_spill_unlinked), spill naming its directory. */
	char spill[PATH_MAX];
	int spill_fd;
	bool spill_unlinked;
	/* Tests: ms__oracle_spill_unlinked takes the named way, as where
	 * the file system has no O_TMPFILE (MS__ORACLE_TEST_NAMED), and
	 * leaves the name, as a kill between its open and its unlink
	 * would (MS__ORACLE_TEST_NAME_LEFT). 0: neither. */
	int test_tmp;
} ms__oracle;
#define MS__ORACLE_TEST_NAMED 1
#define MS__ORACLE_TEST_NAME_LEFT 2

/* Read every raw core part of fx, gather each trace's rows, and evaluate
 * the complete traces with a chain of its own built from spec (NULL or
 * "disabled": every trace kept), its links running where the run's do
 * (host, host_exe: see ms_chain_opts). 0, or an ms_err with o->why.
 * Release with ms__oracle_release in every case.
 * drops_only: the table keeps only the traces the chain drops (o->shed),
 * which is all a run that agrees with the oracle looks up
 * (ms__oracle_find, ms__oracle_dropped); a replay holds the table from
 * the oracle's end to its gates, and most traces are kept.
 * ms__oracle_dropped reads the fixture again for the whole table when a
 * dropped trace is not in it. fx must outlive o. cancel (may be NULL)
 * is looked at between the fixture's parts and after every batch the
 * chain evaluates: once set, MS_ERR_CANCELED ("oracle: cancelled") after
 * at most the part or the chain call in progress. */
int ms__oracle_run(ms__oracle *o, const ms_fixture *fx, const char *spec,
                   const char *plugin_dir, uint64_t decide_timeout_ns,
                   enum ms_plugin_host_mode host, const char *host_exe,
                   const _Atomic bool *cancel, bool drops_only);
/* The ledger of the fixture rows of the run's dropped traces and the rows
 * of each (o->dropped_led, o->drop_found), from the oracle's traces, the
 * ledgers of all their blocks asked of blocks at once
 * (ms__blkcache_get_many). 0; MS_ERR_STATE when a block has no ledger
 * (o->why names the first such trace in d's order; drop_found holds
 * only the rows of the traces before it, dropped_led nothing); or
 * another ms_err. */
int ms__oracle_dropped(ms__oracle *o, const ms__dropped *d,
                       ms__blkcache *blocks);
/* The trace with ID tid, or NULL: in a shed table (o->shed) NULL also
 * for a trace the chain keeps. The table must be in memory (not spilled,
 * or read back by ms__oracle_unspill). */
const ms__oracle_ent *ms__oracle_find(const ms__oracle *o, const uint8_t *tid,
                                      uint32_t len);
/* Release everything, removing the spilled table's file if there is one. */
void ms__oracle_release(ms__oracle *o);
/* Write the table to the new file `path` (format in oracle.c) and free
 * it: o->spill names the file until ms__oracle_unspill or
 * ms__oracle_release removes it. 0, or an ms_err with the table still in
 * memory and no file left (MS_ERR_STATE: spilled already). */
int ms__oracle_spill(ms__oracle *o, const char *path);
/* As ms__oracle_spill, to a file in directory dir that has no name (held
 * open until ms__oracle_unspill or ms__oracle_release closes it: nothing
 * is left behind on any path, a killed process's included). MS_ERR_INVAL
 * when the file would be in memory (a tmpfs): then the table stays. */
int ms__oracle_spill_unlinked(ms__oracle *o, const char *dir);
/* Read a spilled table back (no-op when not spilled), checked against
 * its length and checksum, and remove its file. 0; or an ms_err with the
 * table empty, o->ok false and o->why naming the file and what is
 * wrong with it. */
int ms__oracle_unspill(ms__oracle *o);
/* Bytes of the table in memory (0 while spilled). */
size_t ms__oracle_resident_bytes(const ms__oracle *o);

/* Per-phase figures the merge events report, for the reconciliation. */
typedef struct ms__recon {
	uint64_t merges, executed, failed_open; /* merges */
	uint64_t traces_in, evaluated, kept, dropped, deferred;
	/* Of deferred: kept because the merge's drop set was full
	 * (merge.drop_set_full); the rest the guard kept. */
	uint64_t drop_set_full;
	uint64_t oversized, hot; /* kept without evaluation */
	/* Traces merges that did not sample passed through unstaged
	 * (grace bypass per merge, lossless retry, no chain): not those
	 * counted hot, oversized or kept failing open. */
	uint64_t not_executed;
	uint64_t lossless; /* of those: lossless retries */
	/* Merges that staged and reached Decide, every call failing open
	 * (enabled_no_evaluation, reason other); their traces count in
	 * kept, not in not_executed. */
	uint64_t open_merges;
} ms__recon;

#define MAX_BPS 64   /* the user's breakpoints (--break: 64) */
#define MAX_RUN_TO 8 /* run-to targets (`g`) on top of them */
#define MAX_CLAIMS 64
#define SAMPLE_EVERY 64 /* publications between resource samples */

enum run_mode {
	MODE_RUN = 0,
	MODE_STEP = 1,
	MODE_STEP_BARRIER = 2,
};

/* Lifecycle of one part ID (its core and both index parts), for the
 * "exactly once" gates, and its ledgers once checked (ms__part_check)
 * until the merge that took it as an input is reconciled with them. */
typedef struct track_ent {
	uint64_t id; /* 0 = empty slot */
	uint32_t introduced[MS_KIND_COUNT];
	uint32_t removed[MS_KIND_COUNT];
	uint32_t led; /* its ledgers: ms_replay.track_led[led - 1]; 0 = none
	                 (not checked, or reconciled with its merge) */
	bool checked; /* passed ms__part_check */
} track_ent;

/* A copy of the lifecycle table (a checkpoint's): the entries in use,
 * their led numbers into the copy's own packed ledgers. */
typedef struct ms__track_copy {
	track_ent *ent;
	size_t n;
	ms_ledger_set *led;
	size_t nled;
} ms__track_copy;

/* Check a part entering the shard: core blocks one per trace in
 * ascending order, rows as its metadata says, both index parts present
 * and holding exactly the index rows its core rows make. 0 and *out =
 * its ledgers, or -1 and why (naming the part). */
int ms__part_check(const ms_part *core, const ms_part *lat, const ms_part *st,
                   ms__blkcache *cache, ms_ledger_set *out, char *why,
                   size_t n);
/* One part waiting for its check (checker.c): the view that pins it,
 * and for a merge's output its inputs and the rows it dropped, so that
 * its ledgers are reconciled with theirs. id 0: a merge that published
 * nothing (everything dropped). */
typedef struct ms__check_job {
	struct ms__check_job *next;
	ms_view *view; /* owned; NULL when id is 0 */
	uint64_t id;
	size_t slot;      /* a publication's fixture slot, else SIZE_MAX */
	bool merge;       /* a merge's output (or its empty result) */
	bool lost_inputs; /* out of memory to keep the inputs: not reconciled */
	uint64_t seq, rows_dropped;
	size_t ninputs;
	uint64_t inputs[];
} ms__check_job;
/* Lower the calling thread's priority (nice 10). For the threads that
 * run beside the replay's critical path (the checker, the verdict
 * oracle): where the process has fewer CPUs than runnable threads they
 * give way to the controller and the merges, which each publication waits
 * for, and catch up while those wait; the day begins once the oracle has
 * ended, the cooldown once the checker has caught up, and the gates wait
 * for its last checks.
 * Best effort: if it cannot be lowered the thread keeps the process's. */
void ms__give_way(void);

/* Start the checker's thread (0 or MS_ERR_IO). */
int ms__checker_start(ms_replay *r);
/* Queue part `id` (pinned by v, whose ownership passes) for its check;
 * slot: the fixture slot it was published from, or SIZE_MAX; d: the
 * merge that made it, or NULL for a publication. Never fails: with no
 * memory to queue it, the part is checked at once. */
void ms__checker_submit(ms_replay *r, ms_view *v, uint64_t id, size_t slot,
                        const ms_dispatch *d, uint64_t rows_dropped);
/* Wait until every part submitted so far is checked. */
void ms__checker_drain(ms_replay *r);
/* The same for at most ns: true when every part submitted so far is
 * checked (or the checker stopped), false when the time ran out. */
bool ms__checker_idle_within(ms_replay *r, int64_t ns);
/* Stop the thread; parts still queued are released unread. */
void ms__checker_stop(ms_replay *r);
void ms__checker_release(ms_replay *r);
/* Check one queued part and count it (controller.c). */
void ms__replay_check(ms_replay *r, const ms__check_job *j);

/* The ledgers of blocks already checked (partcheck.c), shared by the
 * checks of one run (thread-safe); NULL: every block is decoded. */
int ms__blkcache_new(ms__blkcache **out);
/* The bytes ms__blkcache_new allocates. */
size_t ms__blkcache_size(void);
void ms__blkcache_free(ms__blkcache *c);
/* Answer the blocks of the fixture's block ledger file too, from the
 * file (fx: owned by c from the call on, closed by ms__blkcache_free;
 * NULL: none). Call before the run's threads look up. */
void ms__blkcache_attach(ms__blkcache *c, ms_fixture_blocks *fx);
typedef struct ms__blkcache_figs {
	/* The part check's lookups (ms__block_ledger) answered (hits: from
	 * memory or the file) and not (misses: the block was decoded). */
	uint64_t hits, misses;
	uint64_t resident;     /* entries held in memory: blocks decoded */
	uint64_t file_entries; /* entries of the attached file */
	uint64_t file_lookups; /* keys the file was asked (every caller; a
	                          part check asks its keys in batches) */
	uint64_t file_refused; /* of them, a group that could not be read
	                          or changed since the open: no answer */
	uint64_t file_reads;   /* the file's reads (preads) for them */
} ms__blkcache_figs;
void ms__blkcache_figures(ms__blkcache *c, ms__blkcache_figs *out);
/* The ledgers (core and the index rows its rows make) of the block `it`
 * is at: from the cache when a block with the same stored bytes was
 * decoded before, else decoded (and cached). 0 or an ms_err. */
/* The cache key of the block `it` is at (a hash of its verified stored
 * bytes, trace ID and rows), and a lookup by key (the blocks the run
 * decoded, then the attached file; false also when the file's group of
 * the key changed since it was opened). */
int ms__block_key(ms_part_iter *it, const ms_block_info *bi, uint64_t *lo,
                  uint64_t *hi, ms_errbuf *eb);
bool ms__blkcache_get(ms__blkcache *c, uint64_t lo, uint64_t hi,
                      ms_ledger_set *out);
/* The n keys k (borrowed, reordered) looked up as ms__blkcache_get
 * looks up each, fn called once for each key (in no set order) with 0
 * and its ledgers, or with MS_ERR_NOTFOUND (nowhere), MS_ERR_IO or
 * MS_ERR_CORRUPT (its group of the file unreadable or changed) and
 * NULL: the blocks in memory first, then the others asked of the file
 * sorted by key (ms_fixture_blocks_get_many), as a part check asks it.
 * 0, or the first nonzero return of fn (no later key answered). */
int ms__blkcache_get_many(ms__blkcache *c, ms_fixture_block_key *k, size_t n,
                          ms_fixture_block_answer_fn fn, void *arg);
int ms__block_ledger(ms__blkcache *cache, ms_part_iter *it,
                     const ms_block_info *bi, ms_ledger_set *out,
                     ms_errbuf *eb);

/* One checkpoint of the run (checkpoint.c). */
typedef struct ms__rck ms__rck;

typedef struct claim {
	uint64_t seq;
	size_t n;
	uint64_t ids[MS_PICKER_PARTS_LIMIT];
	bool finalize_big;     /* finalize selections may exceed the array */
	int64_t dispatch_mono; /* when the dispatch hook saw it */
	int64_t release_mono;  /* when it went on to run (0: held) */
} claim;

/* Test hooks of a run (tests only; zero in every other use), given to
 * ms__replay_open_test so that the public ms_replay_opts carry none. */
typedef struct ms__replay_test {
	/* Opens the run's engine in place of ms_engine_open, so that a test
	 * can hand every merge its hooks (core's merge_int.h,
	 * ms__engine_open_hooked) and see a gate fail. NULL: ms_engine_open. */
	int (*engine_open)(const void *arg, ms_engine **out,
	                   const ms_engine_opts *opts, ms_errbuf *eb);
	const void *engine_open_arg;
	/* The chain the verdict oracle evaluates instead of the run's, so
	 * that the gate can be seen to fail (borrowed for the run). NULL:
	 * the run's chain. */
	const char *oracle_spec;
	/* The oracle's thread sleeps this long before it starts: a slow
	 * oracle, as on a busy machine. 0: none. */
	int64_t oracle_delay_ns;
	/* The oracle's wall and CPU time and the day's and the gates' wait
	 * for it are reported as this many ns (its real figures are
	 * measured all the same): a figure whose milliseconds end past a
	 * half, which each place that prints it must round alike. 0: the
	 * real figures. */
	int64_t oracle_figures_ns;
	/* The checker's thread sleeps this long before each part: a
	 * checker that falls behind. 0: none. */
	int64_t check_delay_ns;
	/* The day does not begin (the run stays RUNNING before its first
	 * publication) until ms__replay_release_day or a close: a run held
	 * where it cannot pass any target. */
	bool hold_day;
	/* 1 + the slot whose publication does not take effect: its part
	 * is never introduced, as a publication lost on the way (the
	 * publications gate must fail). 0: none. */
	size_t lose_slot;
	/* 1 + the slot whose part, introduced, is not handed to the part
	 * checker: a part never checked (one_block_per_trace must fail).
	 * 0: none. */
	size_t skip_check_slot;
	/* 1 + the slot whose files are taken as hashing to the ones its
	 * fixture's record holds, whatever they hold: a manifest forged to
	 * match damaged files (one_block_per_trace must still read them).
	 * 0: none. */
	size_t forged_proof_slot;
	/* The seq (from 1) of the merge whose row is deleted from the event
	 * database right after it is recorded, its counts left as they
	 * were: a row lost on the way (the event_count gate must fail).
	 * 0: none. */
	uint64_t lose_merge_row;
	/* The seq (from 1) of the completed merge the controller tallies
	 * twice: its count of merges done is not the engine's (event_count
	 * must fail; the run row records the engine's own count). 0: none. */
	uint64_t double_tally_seq;
	/* Removes the scratch shard at the close in place of ms_fs_rm_tree
	 * (same contract): a removal that fails, even as root. NULL: none. */
	int (*rm_work_dir)(const char *path, ms_errbuf *eb);
	/* The cgroup mount point a --profile's envelope is made under, in
	 * place of /sys/fs/cgroup (ms_envelope_enter's cgroup_root): an
	 * empty directory is a machine where no group can be made. NULL:
	 * the real one. */
	const char *cgroup_root;
} ms__replay_test;

/* Let a run opened with hold_day begin its day. */
void ms__replay_release_day(ms_replay *r);

/* How many readings the live reader has taken so far: none while every
 * merge in flight is held at its barrier. */
uint64_t ms__replay_live_reads(ms_replay *r);
/* How many slices the controller's waits for merge-idle have taken: none
 * while the run stands at a barrier with no merge running. */
uint64_t ms__replay_slices(ms_replay *r);
/* How many waits before a publication (at the run's speed) the controller
 * has begun: one more when it starts to wait, or goes on waiting after a
 * pause or a change of speed. */
uint64_t ms__replay_paces(ms_replay *r);

/* A test hook's delay: sleep ns (nothing when ns <= 0). */
static inline void
ms__test_delay(int64_t ns)
{
	if (ns <= 0)
		return;
	struct timespec d = { (time_t)(ns / 1000000000),
		              (long)(ns % 1000000000) };
	nanosleep(&d, NULL);
}

/* ms_replay_open with test hooks (NULL: none, exactly ms_replay_open). */
int ms__replay_open_test(ms_replay **out, const ms_replay_opts *opts,
                         const ms__replay_test *test, ms_errbuf *eb);

struct ms_replay {
	/* Options, copied. */
	char fixture_dir[PATH_MAX];
	char db_path[PATH_MAX];
	char work_dir[PATH_MAX];
	char plugin_dir[PATH_MAX];
	char *variant; /* the chain spec, whole (malloc) */
	char profile[64];
	enum ms_grace_policy policy;
	enum ms_staging_mode staging;
	bool keep_shard, serial;
	bool work_created; /* work_dir made by this run (removed at close) */
	/* work_dir opened and flock()ed by this run from before it was found
	 * empty until close, so two runs given one directory cannot both
	 * take it; -1 before open_work_dir. */
	int work_lock;
	enum ms_plugin_host_mode plugin_host;
	ms_replay_opts opts;
	ms__replay_test test; /* zero unless ms__replay_open_test */

	ms_mem mem;
	ms_io io;
	ms_clock clock;
	ms_limits limits;
	ms_envelope env;      /* the real cgroup holding the profile, if any */
	char limits_mode[16]; /* "host", "emulated", "cgroup1", "cgroup2" */
	ms_fixture *fx;
	const ms_fixture_info *info;
	ms_pipeline *pipe;
	ms_rec *rec;
	ms_shard *shard;
	ms_engine *engine;
	char work_why[PATH_MAX + 320]; /* the default work dir's choice, or
	                                  a given one short of room */
	/* What the start went on without (ms_replay_start_note), or "". */
	char start_note[2 * sizeof(((ms_errbuf *)0)->msg) + 256];
	char clone_method[16]; /* how parts were staged: link, reflink, copy */
	char cache_label[16];  /* warm, cold, uncontrolled */
	/* Staging before the primary phase: its wall, and the fsyncs the run
	 * made before the primary phase (the shard's creation, the staging's
	 * one syncfs). */
	int64_t staging_ns;
	uint64_t staging_fsyncs;
	ms__stage_counts staged;
	ms__rsswatch rss;
	/* The resource figures at the run's start, from which the phase
	 * table's `staging` row (the time before the primary phase) is
	 * counted. */
	ms_rusage before_ru;
	ms_mem_stats before_mem;
	ms_io before_io;
	ms_ev_phase before_ph; /* that row, taken as the primary begins */
	bool has_before;
	int64_t t0_mono; /* run start, CLOCK_MONOTONIC */

	int64_t wait_timeout_ns;
	pthread_t thread;
	bool started;
	bool start_called; /* ms_replay_start was called (ms_replay_close) */
	bool run_recorded; /* its run record is in the event database */
	/* The end of a complete run, recorded as it completed (controller
	 * thread, before DONE); a seek back clears it (mu). */
	bool end_recorded;
	/* The event log's failure is the run's error (recorder_check said
	 * it); else ms_replay_close_fold says it. */
	_Atomic bool rec_fail_said;
	pthread_mutex_t mu;
	pthread_cond_t cv;

	/* Protected by mu. */
	enum ms_replay_state state;
	enum ms_replay_phase phase;
	enum run_mode mode;
	bool pause_req;
	bool abort_req;
	uint64_t stops; /* times the run stopped at a point (wait deadlines) */
	double speed;
	char break_why[64];
	bool has_pending;
	ms_dispatch pending;
	ms_dispatch_input pending_inputs[MS_PICKER_PARTS_LIMIT];
	ms_breakpoint bps[MAX_BPS + MAX_RUN_TO];
	size_t nbps;
	int next_bp_id;
	uint64_t pub_done; /* slots the day went past */
	/* Publications that took effect: their part was in the shard's
	 * inventory right after its introduction (the publications gate;
	 * not pub_done, which counts slots gone past). */
	uint64_t pub_in;
	/* The first publication that did not take effect (pub_lost_id 0:
	 * none): its slot and part. */
	uint64_t pub_lost_slot, pub_lost_id;
	uint64_t merges_done, merges_failed;
	/* The last failed merge, "merge #N (lane): error" (under mu): the
	 * idle_no_leaks gate says why a merge failed. */
	char last_failure[192];
	/* Parts the engine quarantined, and the last one's ID (under mu). */
	uint64_t quarantined, last_quarantined;
	claim claims[MAX_CLAIMS];
	size_t nclaims;
	ms__recent recent; /* the last merges, with their inputs */
	uint64_t spark[MS_REPLAY_SPARK];
	size_t nspark;
	uint64_t staged_peak, staged_preferred;
	ms_link_stats links_prev[MS_EV_LINKS_MAX];
	ms__plog plog; /* what the plugins log (plog.c) */
	/* Live link figures (controller.c, design 6): the chain's counters as
	 * last read by the live reader or a merge's event, never by the
	 * status (the chain holds its lock through every Decide call).
	 * live_base: the reading of the last recorded merge, so that
	 * live - base is what the merges in flight did so far. Under mu. */
	size_t live_nlinks;
	ms_link_stats live_links[MS_EV_LINKS_MAX];
	ms_link_stats live_base[MS_EV_LINKS_MAX];
	bool live_circuit;
	bool live_stop, live_started;
	pthread_cond_t live_cv; /* a merge was released, or stop */
	uint64_t live_reads; /* the live reader's readings (a test's) */
	uint64_t idle_slices; /* merge-idle's wait slices (a test's) */
	uint64_t paces; /* waits begun before a publication (a test's) */
	/* The wait under way before a publication at pace_to (pacing;
	 * mu): begun at monotonic pace_mono0 with the replay's time at
	 * pace_from, at pace_speed. The status's now_shown goes on from
	 * there. Cut short by a pause (pace_held): the replay's time stands
	 * at pace_from until the wait goes on or the publication is out. */
	bool pacing, pace_held;
	int64_t pace_mono0, pace_from, pace_to;
	double pace_speed;
	pthread_t live_thread;
	/* The lifecycle table (controller.c): entries packed in the order
	 * their IDs were first seen, track[0, track_n) of track_cap
	 * allocated, found through track_idx, an open-addressed table of
	 * entry numbers + 1 (0 = empty) over track_nidx slots, at most half
	 * full. */
	track_ent *track;
	size_t track_cap, track_n;
	uint32_t *track_idx;
	size_t track_nidx;
	/* The entries' ledgers (track_ent.led), held only from a part's
	 * check to its merge's reconciliation: slots [0, track_led_n) of
	 * track_led_cap used or free, the free ones' numbers stacked in
	 * track_led_free (track_led_nfree of them). */
	ms_ledger_set *track_led;
	size_t track_led_n, track_led_cap;
	uint32_t *track_led_free;
	size_t track_led_nfree;
	bool track_dup; /* an ID introduced or removed twice */
	char track_err[128];
	/* Every part entering the shard is checked (ms__part_check): how
	 * many entered, passed, failed or left before they could be read,
	 * with the first failure; merges whose output ledgers equal their
	 * inputs' minus the rows they dropped, and the first that did not. */
	uint64_t parts_in, parts_ok, parts_bad, parts_gone;
	/* Core parts introduced into the shard (publications that took
	 * effect, merge outputs), counted under mu as they entered: every
	 * one must be handed to the checker (check_submitted). */
	uint64_t parts_introduced;
	_Atomic int64_t check_ns; /* wall spent checking parts */
	/* Publications taken as checked because their files hash to what
	 * the fixture's build checked (ms_fixture_slot_proof); the checker's
	 * thread only. */
	uint64_t check_by_hash;
	bool fx_proven; /* the fixture's block ledgers are in `blocks` */
	/* The checker's queue (checker.c); check_mu guards the queue. */
	pthread_t check_thread;
	pthread_mutex_t check_mu;
	pthread_cond_t check_cv;
	ms__check_job *check_head, *check_tail;
	bool check_init, check_started, check_busy, check_stop;
	int64_t check_wait_ns;    /* the gates' wait for the last checks */
	int64_t check_prewait_ns; /* the cooldown's wait for them, before
	                             its clock starts (run_cooldown) */
	size_t check_queued_cooldown; /* parts queued when it started */
	int64_t cooldown_mono;        /* when the cooldown's clock started */
	uint64_t check_submitted; /* parts queued (id != 0), check_mu */
	ms__blkcache *blocks;     /* ledgers of checked blocks */
	char part_err[200];
	uint64_t merges_reconciled, merges_unreconciled;
	char merge_err[200];
	uint64_t rows_dropped, traces_dropped;
	ms__dropped dropped;    /* every confirmed drop */
	int drop_err;           /* a drop could not be recorded */
	bool has_expected;      /* the gates computed `expected` */
	ms_ledger_set expected; /* input - oracle(dropped) */
	uint64_t hot_decides;   /* hot selections that called Decide */
	uint64_t hot_decided;   /* traces past the frontier that reached it */
	uint64_t executed_merges;
	/* Merge events recorded (failed ones too, as the report counts
	 * them) of class executed, and of reason merge_grace. */
	uint64_t events_sampled, events_bypassed;
	/* Summed over completed merges: traces handed to Decide more than
	 * once in one merge, and traces whose bounds in the batch differ
	 * from those rebuilt from their fragments (ms_merge_sampling). */
	uint64_t decide_dup_traces;
	uint64_t bounds_mismatch;
	uint64_t decide_traces; /* traces_evaluated, summed */
	uint64_t pub_merges;    /* merges completed during this drain */
	char error[512];
	/* plugin_health: the first MS__HEALTH_MAX events, their number and
	 * total count; per link the calls (and circuit-open skips) the merge
	 * events report; Decide calls the merges report; attempts they
	 * discarded (their calls are not in plugin_calls). */
	ms__health_ev health[MS__HEALTH_MAX];
	size_t nhealth;
	uint64_t health_kinds, health_total;
	uint64_t link_calls_events[MS_EV_LINKS_MAX];
	uint64_t link_circuit_events[MS_EV_LINKS_MAX];
	uint64_t plugin_calls_events;
	uint64_t attempts_discarded;
	ms__recon recon[MS__RP_COUNT];
	/* The oracle runs on its own thread beside the staging (it needs
	 * the fixture only); the day begins once it has ended (run_day),
	 * the gates join it. */
	ms__oracle oracle;
	pthread_t oracle_thread;
	bool oracle_started, oracle_joined;
	bool oracle_done; /* its thread has ended; mu */
	bool day_released; /* ms__replay_release_day (test.hold_day); mu */
	bool preparing;   /* the day waits for the oracle; mu */
	int oracle_rc;
	int64_t oracle_end_mono;   /* when its thread ended (ms_mono_ns) */
	int64_t oracle_prewait_ns; /* the day's wait for it */
	int64_t primary_mono;      /* when the primary phase's clock started */
	int64_t finalize_mono;     /* when the finalize was asked for */
	/* Why the engine skipped the last finalize it was asked for ("":
	 * it ran), as the reconciliation and the verdict_oracle gate say. */
	char finalize_skip[192];
	_Atomic bool oracle_cancel;
	int64_t oracle_wall;    /* the run's wall when the gates began */
	int64_t oracle_wait_ns; /* the gates waited this long for it (0
	                           since the day waits first) */
	ms_ev_gate gates[32];
	size_t ngates;
	unsigned gates_failed;
	enum ms_ev_phase_id rec_phase;
	/* Checkpoints (checkpoint.c): oldest first, in <work_dir>.ckpt/;
	 * every ck_every_ns logical (< 0: off). Controller thread, except
	 * the seek request fields, under mu. */
	ms__rck **cks;
	size_t ncks;
	int64_t ck_every_ns, ck_last_ns;
	uint64_t ck_taken;
	uint64_t ck_room; /* checkpoint_room_bytes, resolved at open */
	char ck_root[PATH_MAX];
	char ck_note[256];
	/* ck_note says what the last restore left (note_leftovers): the
	 * next restore that leaves nothing clears it. */
	bool ck_note_leftovers;
	bool seek_req;          /* under mu */
	bool seek_stop;         /* under mu: restored, stop at the point */
	/* under mu: a seek just stopped the run at its checkpoint, so the
	 * next run-to target is where it went back to (run_to_bp) */
	bool seek_fresh;
	/* under mu: running to that target; the user's breakpoints, which
	 * the first pass went by, do not stop it (on_dispatch) */
	bool rerun;
	/* Under mu: how far the run has gone, for a run-to target set
	 * behind it (run_to_bp: the TUI saw the run before it, and the run
	 * went by while it was being set). A merge target N is behind when
	 * N <= past_seq, the last merge whose dispatch went by the targets;
	 * a time target T when T < past_ns (a publication point gone through
	 * at p makes it p, a dispatch at now now + 1), unless the run is held
	 * at a publication point after T (held_ns, 0: none), where a target
	 * before it stops (publication_point). A restore puts past_seq and
	 * past_ns back (checkpoint.c). */
	uint64_t past_seq;
	int64_t past_ns, held_ns;
	int seek_result;        /* under mu: what to answer at that stop */
	size_t seek_ck;         /* under mu: the checkpoint to restore */
	int seek_rc;            /* under mu: 1 = pending, else the result */
	char seek_target[64];   /* under mu */
	ms_errbuf seek_eb;      /* under mu */
	uint64_t seeks;         /* under mu */
	size_t resume_slot;     /* where run_day starts (a seek at the end) */
	size_t staged_upto;     /* slots [staged_upto, n) are not staged */
	/* Per link, the calls of stretches a seek back removed (the chain
	 * counted them; no recorded merge reports them). */
	uint64_t link_calls_superseded[MS_EV_LINKS_MAX];
	/* The same stretches' additive counters (calls, traces, time,
	 * histogram, results, verdicts): the status shows the chain's
	 * counters less these, the figures of the merges on record. Under
	 * mu. */
	ms_link_stats links_gone[MS_EV_LINKS_MAX];
	/* Per link, the slowest call of the merges on record (the largest
	 * merge_link.max_ns): the chain's own max may be a removed
	 * stretch's. Under mu; goes back with a checkpoint. */
	uint64_t links_max[MS_EV_LINKS_MAX];
};

/* ---- checkpoints and seeks back (checkpoint.c) ---- */
/* At publication point `pubs` (that many done, the engine idle): take a
 * checkpoint if one is due, or `stopped` (the run stopped here or at a
 * barrier since the last point). A failure to take one is not the run's:
 * it turns checkpoints off for the run (r->ck_note says why). Controller
 * thread. */
void ms__rck_maybe_take(ms_replay *r, uint64_t pubs, int64_t now_ns,
                        bool stopped);
/* A seek was requested (under mu). */
bool ms__rck_seek_pending(ms_replay *r);
/* Restore the requested checkpoint (controller thread, at a publication
 * point, the engine idle): *next_slot = the slot to publish next. 0, or
 * the error (the run cannot go on when the shard was touched). The
 * requester is answered either way. */
int ms__rck_restore(ms_replay *r, size_t *next_slot, ms_errbuf *eb);
/* Remove every checkpoint (at close). */
void ms__rck_release(ms_replay *r);
/* controller.c, for the restore: open the engine (resuming resume when
 * not NULL), stage slots [from, to) of the fixture into the shard (counts
 * in *c, one syncfs), and read the chain's link counters as the base of
 * the next merge's deltas. */
/* The options of the run's shard (controller.c), for opening it and for
 * reopening it after a seek back. */
ms_shard_opts ms__replay_shard_opts(ms_replay *r);
int ms__replay_open_engine(ms_replay *r, const ms_engine_state *resume,
                           ms_errbuf *eb);
int ms__replay_stage_range(ms_replay *r, size_t from, size_t to,
                           ms__stage_counts *c, ms_errbuf *eb);
void ms__replay_links_rebase(ms_replay *r);
/* acc += a - b over the additive counters of a link (modulo 2^64, so
 * a = 0 subtracts b); the name and the last result stay acc's. */
void ms__link_stats_acc(ms_link_stats *acc, const ms_link_stats *a,
                        const ms_link_stats *b);
int ms__replay_controller_restart(ms_replay *r, size_t from, ms_errbuf *eb);
/* Put the RSS sampler to sleep while the run is stopped, wake it while it
 * runs (controller.c). mu held. */
void ms__replay_rss_follow(ms_replay *r);
/* A copy of the exactly-once table into *out (mu held); release it with
 * ms__track_copy_release. 0 or MS_ERR_NOMEM (*out then empty). */
int ms__replay_track_save(const ms_replay *r, ms__track_copy *out);
/* Replace the exactly-once table by the copy c (mu held). 0 or
 * MS_ERR_NOMEM (the table then empty). */
int ms__replay_track_load(ms_replay *r, const ms__track_copy *c);
void ms__track_copy_release(ms__track_copy *c);
/* Bytes the exactly-once table holds: entries, index and ledgers
 * allocated; the ledgers in use into *leds when not NULL. */
size_t ms__replay_track_bytes(const ms_replay *r, size_t *leds);

/* Check the end-of-run gates, record them, and keep them in r->gates. */
int ms__replay_gates(ms_replay *r, ms_errbuf *eb);
/* Wait for the oracle's thread (once); its ms__oracle_run result, and
 * its table read back (ms__oracle_unspill; a failure to is the result). */
int ms__oracle_join(ms_replay *r);
/* Wait for the oracle's thread (once) and leave its table where it is
 * (tests; the close). Its ms__oracle_run result. */
int ms__oracle_wait(ms_replay *r);
/* The file the oracle's thread spills its table to, in the work dir. */
#define MS__ORACLE_SPILL "oracle.table"
/* Run to absolute time t: a one-shot breakpoint named spec. */
int ms__replay_run_to_abs(ms_replay *r, int64_t t, const char *spec,
                          ms_errbuf *eb);
/* False without a pipeline; else true, the pipeline's chain (NULL for
 * none) into *c and its links into *n, at most MS_EV_LINKS_MAX (what a
 * merge event records). */
bool ms__replay_links(const ms_replay *r, ms_chain **c, size_t *n);
/* Wall-clock ns since the run started. */
int64_t ms__replay_since_start(const ms_replay *r);
/* The segment the boundary guard covers: the fixture's day with the
 * grace on both sides (as the reference's benchmark gives it), so a
 * trace with a fragment outside the day is retained at the edge. */
void ms__replay_segment(const ms_replay *r, int64_t *min_ns, int64_t *max_ns);

/* environ.c: the statfs type name of dir ("tmpfs", "ext4", or 0xHEX);
 * the build and machine columns of a run record (file system of
 * work_dir, binary checksum, commit, compiler, CPU model); the page-cache
 * state of the fixture before a run (label warm, cold, uncontrolled or
 * NULL; anything else is MS_ERR_INVAL naming --cache). */
void ms__fs_type_name(const char *dir, char *buf, size_t n);
/* The device under dir, from mountinfo ("/proc/self/mountinfo" when
 * NULL): "SOURCE (MAJOR:MINOR) MODEL", or "unknown (MAJOR:MINOR) MODEL"
 * from dir's own device when no mount listed covers it (a chroot); ""
 * when dir cannot be looked at. */
void ms__device_name(const char *dir, const char *mountinfo, char *out,
                     size_t n);
void ms__run_environment(ms_ev_run *run, const char *work_dir);
int ms__cache_prepare(const char *fixture_dir, const char *label,
                      ms_errbuf *eb);

/* The run record's fixture hash (run.fixture_hash, 32 hex digits and a
 * NUL in out, n >= 33) of the fixture i describes (controller.c). */
void ms__fixture_identity(const ms_fixture_info *i, char *out, size_t n);

#endif
