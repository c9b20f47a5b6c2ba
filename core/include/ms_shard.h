/*
 * ms_shard.h - a shard directory: the inventory of active parts, its epoch,
 * the snapshot file, crash recovery, and pinned views.
 *
 * Layout (see core/FORMAT.md, section "Shard"):
 *   DIR/snapshot                  active part IDs, epoch, next ID, depths,
 *                                 the order the parts entered
 *   DIR/parts/<16hex>.core        core parts (one file each)
 *   DIR/parts/<16hex>.latency     latency index parts (same ID as core)
 *   DIR/parts/<16hex>.start_time  start_time index parts
 *   DIR/dicts/<8hex>              zstd dictionaries blocks may name
 *   DIR/tmp/                      anything being written
 * The snapshot is replaced by write-to-temp, fsync, rename, fsync(DIR): that
 * rename is the commit point of every transaction (of several, with
 * defer_sync; the fsync is one syncfs with commit_syncfs).
 *
 * Design:
 *  1. Every transaction (introduce one part; replace a set of inputs by one
 *     output, core and both indexes together) bumps the epoch by exactly 1
 *     and is durable before the call returns, except in a shard opened
 *     with defer_sync: there it is committed in memory (views see it) and
 *     becomes durable at the next durability point: ms_shard_sync, close,
 *     or a transaction that would leave more than defer_max_parts removed
 *     parts waiting for one (that transaction is then durable itself).
 *  2. A part is in the inventory iff it is listed in the snapshot.
 *  3. A part removed from the inventory is deleted from disk when the last
 *     view pinning it is released and a snapshot without it is durable
 *     (never before its replacement is
 *     published); with opts.reap_async by the shard's reaper thread, so
 *     the transaction that removed it does not wait for the deletion.
 *  4. Opening recovers: temporary leftovers and part files the
 *     snapshot does not list are removed, and what was cleaned is said in
 *     ms_shard_recovery_note. A snapshot listing a part that is missing or
 *     unreadable is an error naming the part; nothing is deleted then.
 *  5. A part handed to a transaction at its tmp paths is already durable:
 *     whoever put it there synced it (the part writer at close, a caller
 *     that copies or links parts in with ms_part_sync_tree or one
 *     syncfs), unless the shard syncs it itself (commit_syncfs).
 *     Publication itself is three renames, one fsync of the parts
 *     directory, and the snapshot commit (with defer_sync, the renames
 *     only; the fsync and the commit wait for the next durability
 *     point).
 *  6. A shard of an older part format (part directories under DIR/core/)
 *     is refused at open with MS_ERR_FORMAT.
 *
 * Ownership: ms_shard and ms_view are heap objects owned by the caller of
 * _open / ms_shard_view; parts returned by a view are borrowed from it. A
 * view may be released after its shard is closed; the ms_mem given at open
 * must outlive both.
 * Threads: every function may be called from any thread; the shard
 * serializes transactions with its own lock.
 */
#ifndef MS_SHARD_H
#define MS_SHARD_H

#include "ms_err.h"
#include "ms_mem.h"
#include "ms_part.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ms_shard ms_shard;
typedef struct ms_shard_opts {
	const char *dir; /* the shard directory (copied) */
	bool create;     /* create an empty shard if DIR has no snapshot */
	ms_mem *mem;     /* borrowed; NULL = uncounted */
	ms_io *io;       /* borrowed; NULL = not counted */
	/* IDs from ms_shard_new_id are at least this (0: no floor). A caller
	 * that introduces parts with IDs of its own (a replay publishing a
	 * fixture's parts) reserves them by setting it above the largest. */
	uint64_t first_new_id;
	/* Delete removed parts in a thread of the shard's own instead of in
	 * the call that removed them (or the view release that unpinned
	 * them); ms_shard_settle waits for it, close finishes it. Open
	 * fails (MS_ERR_IO, saying why) when that thread cannot start. */
	bool reap_async;
	/* Group commit (design point 1): a transaction syncs nothing and
	 * writes no snapshot; the next durability point commits all of them
	 * with one snapshot. The parts they removed stay on disk until then.
	 * A crash before it loses them (recovery returns to the last durable
	 * snapshot, whose parts are all still there, and removes the
	 * outputs' files as unlisted), never anything durable. For a caller
	 * that needs its transactions durable only at a boundary of its own
	 * (a replay: at the end of each phase), not at each call. */
	bool defer_sync;
	/* With defer_sync: the most removed parts that may wait on disk for
	 * the next durability point (0 = 64); a transaction that would
	 * exceed it is a durability point. Bounds the disk and memory the
	 * waiting parts hold. */
	size_t defer_max_parts;
	/* Make a commit durable with one syncfs of the shard's file system
	 * (output files, their renames into parts/ and the new snapshot
	 * together) instead of an fsync of parts/ and of the snapshot: a
	 * commit is then 2 syncs whatever it publishes, and its output's
	 * writers need not sync (ms_shard_syncs_outputs). For a file system
	 * the shard has to itself: syncfs also writes whatever else is
	 * dirty on it. */
	bool commit_syncfs;
} ms_shard_opts;

int ms_shard_open(ms_shard **out, const ms_shard_opts *opts, ms_errbuf *eb);
/* Close. Transactions deferred by defer_sync are made durable first, as
 * by ms_shard_sync, whose failure is lost here: call it before closing to
 * see it. */
void ms_shard_close(ms_shard *s);
/* The durability point of a defer_sync shard: every transaction committed
 * so far is on disk when it returns 0 (an fsync of parts/ if a deferred
 * transaction renamed files into it, then one snapshot commit; nothing
 * when nothing is pending, and always nothing without defer_sync), and
 * the parts they removed are deleted as in design point 3. On failure
 * the deferred transactions stay committed in memory and pending; the
 * snapshot on disk is the last durable one or this one. */
int ms_shard_sync(ms_shard *s, ms_errbuf *eb);
/* True when the shard's commits make the files of the part they publish
 * durable themselves (opts.commit_syncfs): a writer of a part for one of
 * its transactions may then skip its own fsync (no_sync). */
bool ms_shard_syncs_outputs(const ms_shard *s);
/* What recovery did at open, e.g. "recovered epoch 41: removed 2 temporary
 * directories, 1 unpublished part (00000000000000a3)"; "" when nothing. */
const char *ms_shard_recovery_note(const ms_shard *s);
const char *ms_shard_get_dir(const ms_shard *s);
uint64_t ms_shard_epoch(const ms_shard *s);

/* Reserve a fresh part ID (monotonic per shard; persisted with the next
 * committed transaction, and never below an ID seen on disk at open). */
int ms_shard_new_id(ms_shard *s, uint64_t *id, ms_errbuf *eb);
/* The ID ms_shard_new_id would hand out next. It may be above the
 * snapshot's next_id on disk: IDs handed out since the last commit (the
 * output of a merge that failed or was dropped) are in it, not there. */
uint64_t ms_shard_next_id(const ms_shard *s);
/* Path of the file where a new part of `kind` with `id` is to be written
 * before it is introduced or used as a merge output:
 * DIR/tmp/<kind>-<16hex>. */
int ms_shard_tmp_path(const ms_shard *s, enum ms_part_kind kind, uint64_t id,
                      char *buf, size_t n);
/* Final path of a part: DIR/parts/<16hex>.<kind>. */
int ms_shard_part_path(const ms_shard *s, enum ms_part_kind kind, uint64_t id,
                       char *buf, size_t n);

/* Introduce a part whose three kinds are written at their tmp paths: publish
 * them, open them, add the part to the inventory, commit. The ID need not
 * come from ms_shard_new_id (a fixture's staged part keeps its own); later
 * IDs are handed out above it. On failure nothing is published and the tmp
 * directories are left where they were. */
int ms_shard_introduce(ms_shard *s, uint64_t id, ms_errbuf *eb);
/* Introduce a part whose three kinds were staged at their final paths
 * (ms_shard_part_path) beforehand and made durable there, unlisted: the
 * introduction alone, a snapshot commit, publishes it, with no rename (a
 * replay stages at the tmp paths and uses ms_shard_introduce). A staged
 * part that was never introduced is unlisted, and the next open removes
 * it. On failure the part stays where it is, unlisted. */
int ms_shard_introduce_placed(ms_shard *s, uint64_t id, ms_errbuf *eb);
/* One transaction: remove `inputs` from the inventory and (if output != 0)
 * introduce `output`, whose three kinds are at their tmp paths. Fails with
 * MS_ERR_CONFLICT, changing nothing, if an input is not active. On any
 * failure the inventory, snapshot and the inputs on disk are unchanged. */
int ms_shard_replace(ms_shard *s, const uint64_t *inputs, size_t ninputs,
                     uint64_t output, ms_errbuf *eb);
/* ms_shard_replace only while the inventory is still at `epoch` (the
 * ms_view_epoch of a view the caller checked it on): when another
 * transaction came first, nothing changes, *moved is set and
 * MS_ERR_CONFLICT names both epochs (*moved is false on every other
 * outcome). */
int ms_shard_replace_at(ms_shard *s, const uint64_t *inputs, size_t ninputs,
                        uint64_t output, uint64_t epoch, bool *moved,
                        ms_errbuf *eb);

/* The counterpart of ms_shard_introduce for a merge that produced nothing
 * (every row dropped): remove `inputs` in one transaction. Same as
 * ms_shard_replace(s, inputs, ninputs, 0, eb). */
int ms_shard_remove(ms_shard *s, const uint64_t *inputs, size_t ninputs,
                    ms_errbuf *eb);
/* Add a zstd dictionary (bytes copied; e.g. from ms_part_dict_train) to
 * the shard: written to DIR/dicts/<8hex> and synced before it is
 * visible, named by the next ID (*id). Parts whose blocks name it are
 * read through it from then on, and after every reopen. */
int ms_shard_add_dict(ms_shard *s, const void *bytes, size_t n, uint32_t *id,
                      ms_errbuf *eb);
/* Dictionary `id` of the shard, for a writer (ms_part_writer_opts.dict);
 * NULL if there is none. Valid while the shard is open. */
const ms_part_dict *ms_shard_dict(const ms_shard *s, uint32_t id);
/* The dictionary added last (the largest ID), what merges compress their
 * re-encoded blocks with; NULL for a shard without one. */
const ms_part_dict *ms_shard_dict_newest(const ms_shard *s);

/* Number of active parts now. */
size_t ms_shard_count(const ms_shard *s);
/* Entries of DIR/parts that are no file of an active part: a removed
 * part not deleted (yet, or ever), a staged part never introduced, any
 * other name. *n gets their number, first (firstn bytes, may be 0) the
 * name of one of them ("" when none). After ms_shard_sync and
 * ms_shard_settle, with no view left that pins a removed part, a shard
 * that leaks nothing has none. MS_ERR_IO, naming the directory, when it
 * cannot be listed. */
int ms_shard_strays(ms_shard *s, size_t *n, char *first, size_t firstn,
                    ms_errbuf *eb);
/* Wait until every removed part whose deletion was handed to the reaper
 * (opts.reap_async) is deleted. No-op without it. */
void ms_shard_settle(ms_shard *s);

/* Test seam: the steps of a transaction, in order, after which a crash
 * leaves a state that recovery must bring back to a committed snapshot.
 * The hook runs after each step (`index`: the kind renamed, the input
 * deleted, or what a deferred transaction removed); a recovery test forks,
 * makes the hook end the child at one step and reopens the shard. */
enum ms_shard_step {
	MS_SHARD_STEP_RENAMED = 1,   /* one kind's tmp file renamed (index k) */
	MS_SHARD_STEP_DIRS_SYNCED,   /* the parts directory fsynced */
	MS_SHARD_STEP_SNAP_WRITTEN,  /* tmp/snapshot.new written and synced */
	MS_SHARD_STEP_COMMITTED,     /* renamed over snapshot (the commit) */
	MS_SHARD_STEP_SNAP_SYNCED,   /* DIR fsynced after the commit */
	MS_SHARD_STEP_INPUT_DELETED, /* one input's files removed */
	MS_SHARD_STEP_DEFERRED,      /* defer_sync: a transaction committed
	                                in memory only (snapshot unchanged;
	                                index: the parts it removed) */
};
typedef void (*ms_shard_step_fn)(void *arg, enum ms_shard_step step,
                                 unsigned index);
void ms_shard_set_step_hook(ms_shard *s, ms_shard_step_fn fn, void *arg);

/* Test seam: make the next snapshot commit fail at one step with errno
 * `err` (0 = EIO), as a full disk or a failing rename would. One-shot. */
enum ms_shard_fault {
	MS_SHARD_FAULT_NONE = 0,
	MS_SHARD_FAULT_OPEN,    /* creating tmp/snapshot.new */
	MS_SHARD_FAULT_WRITE,   /* writing it (ENOSPC: disk full) */
	MS_SHARD_FAULT_FSYNC,   /* fsync of the file */
	MS_SHARD_FAULT_RENAME,  /* rename over DIR/snapshot */
	MS_SHARD_FAULT_DIRSYNC, /* fsync of DIR after the rename */
};
void ms_shard_inject_fault(ms_shard *s, enum ms_shard_fault where, int err);

/* A pinned, consistent view of the inventory at one epoch. Parts are sorted
 * by ID. */
typedef struct ms_view ms_view;
int ms_shard_view(ms_shard *s, ms_view **out, ms_errbuf *eb);
/* A view of only the parts among ids[0..n) that are in the inventory now
 * (in ID order; an ID not there, or named twice, is left out): it pins
 * those parts and no other, so a view held for long (a part waiting for
 * its check) does not keep the rest of the inventory's merged-away parts
 * open and their files undeleted. ids is borrowed for the call. */
int ms_shard_view_of(ms_shard *s, const uint64_t *ids, size_t n,
                     ms_view **out, ms_errbuf *eb);
void ms_view_release(ms_view *v);
uint64_t ms_view_epoch(const ms_view *v);
size_t ms_view_count(const ms_view *v);
/* The i-th part (0 <= i < count) of each kind; borrowed from the view. */
const ms_part *ms_view_part(const ms_view *v, size_t i, enum ms_part_kind kind);
/* The ID of the i-th part (0 if i is out of range). */
uint64_t ms_view_id(const ms_view *v, size_t i);
/* Find a part by ID in the view; NULL if absent. */
const ms_part *ms_view_find(const ms_view *v, uint64_t id,
                            enum ms_part_kind kind);
/* The index i (as for ms_view_part) of the part that entered the
 * inventory k-th among the view's parts, 0 <= k < count (count if k is
 * out of range). A part enters when its introduction commits, a merge's
 * output when its merge commits, after every part already there; the
 * snapshot keeps the order across a reopen (a version-1 snapshot, which
 * does not hold it, gives ascending ID). The finalize takes its inputs
 * in this order, as the reference engine walks its snapshot's parts. */
size_t ms_view_entered(const ms_view *v, size_t k);

#endif
