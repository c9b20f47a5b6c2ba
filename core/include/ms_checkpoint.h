/*
 * ms_checkpoint.h - a cheap checkpoint of a shard and its merge engine at
 * merge-idle, and putting the shard back to it.
 *
 * Parts are immutable files (DIR/parts/<16hex>.<kind>, core/FORMAT.md), so
 * a checkpoint copies no part: it is a directory
 *   CK/snapshot           a copy of the shard's committed snapshot
 *   CK/parts/<16hex>.<kind>  hard links of every active part's files
 *   CK/dicts/<8hex>       hard links of the shard's dictionaries
 *   CK/state              the engine's decision state and a caller's blob
 * (format "Checkpoint" in core/FORMAT.md). CK must be on the shard's file
 * system (hard links) and outside the shard directory. With ~30 active
 * parts, taking one is ~90 links, a 1 KiB copy and a small file.
 *
 * Design:
 *  1. A checkpoint is taken only at merge-idle with no transaction in
 *     flight (the caller publishes nothing meanwhile): ms_engine_save
 *     refuses otherwise, and the shard's epoch must be the same before and
 *     after the links and equal the copied snapshot's, else MS_ERR_STATE
 *     and nothing is left behind.
 *  2. Restoring needs the shard closed (and its engine closed). Nothing
 *     in the shard changes until the whole checkpoint has been read and
 *     checked (every listed part file present). Then its parts are linked
 *     back into DIR/parts where missing, parts/ and dicts/ are synced, and
 *     its snapshot is written to DIR/tmp/snapshot.new, synced and renamed
 *     over DIR/snapshot: that rename is the commit, as for every shard
 *     transaction. A crash before it leaves the shard as it was (the links
 *     are unlisted files, removed at the next open); after it, the shard
 *     is the checkpoint's.
 *  3. After the commit, files the restored snapshot does not list are
 *     removed from parts/ and tmp/, and dictionaries it did not have from
 *     dicts/, so the reopened shard hands out the same part IDs as at the
 *     checkpoint (open would otherwise count them into next_id). A crash
 *     in this step leaves a valid shard; restoring again finishes it.
 *     An entry that cannot be removed does not make the restore fail
 *     (the shard is the checkpoint's once committed): the others are
 *     still removed, and the restore says how many were left and why
 *     (ms_checkpoint.leftovers, .leftover) for the caller to tell.
 *  4. The restored engine state (ms_checkpoint.engine) goes to
 *     ms_engine_opts.resume of the engine opened on the reopened shard:
 *     from then on it picks exactly what the original picked, given the
 *     same publications at the same times.
 *  5. The part-ID counter goes back too: CK/snapshot holds, as its
 *     next_id, the shard's counter at the take (ms_shard_next_id), which
 *     may be above DIR/snapshot's (IDs handed out since that was last
 *     written, to a merge that failed or was dropped). The reopened
 *     shard then hands out the IDs the original handed out after the
 *     checkpoint, so a re-run's merges get the same output part IDs.
 *     Version 1 state files (DIR/snapshot's next_id) are refused with
 *     MS_ERR_FORMAT.
 *
 * Ownership: ms_checkpoint is caller-owned; its engine arrays and user
 * blob are heap memory released by ms_checkpoint_release. The shard and
 * engine given to ms_checkpoint_take are borrowed for the call.
 * Threads: any thread, none of them from inside an engine callback.
 */
#ifndef MS_CHECKPOINT_H
#define MS_CHECKPOINT_H

#include "ms_engine.h"
#include "ms_err.h"
#include "ms_shard.h"

#include <stddef.h>
#include <stdint.h>

/* Version of CK/state (core/FORMAT.md, "Checkpoint"). */
#define MS_CHECKPOINT_VERSION 2
/* Largest caller blob a checkpoint keeps. */
#define MS_CHECKPOINT_USER_MAX (1u << 20)

typedef struct ms_checkpoint {
	uint64_t epoch;   /* the shard's epoch it was taken at */
	uint64_t next_id; /* the shard's part-ID counter (design 5) */
	uint64_t *parts;  /* active part IDs, ascending (heap) */
	size_t nparts;
	ms_engine_state engine;
	void *user; /* the caller's blob (heap; NULL when user_len is 0) */
	size_t user_len;
	/* Set by ms_checkpoint_restore (design 3): entries of the shard it
	 * should have removed after the commit and could not, and why the
	 * first of them could not ("remove PATH: reason"; "" when
	 * leftovers is 0). While they stay, the reopened shard may hand
	 * out other part IDs than after the checkpoint. */
	size_t leftovers;
	ms_errbuf leftover;
} ms_checkpoint;

/*
 * Take a checkpoint of shard s and engine e (at merge-idle, design 1)
 * into directory dir, which must not exist (MS_ERR_EXISTS); user (may be
 * NULL) is kept as is. On failure dir is removed again. Errors:
 * MS_ERR_STATE (not idle, or the shard moved meanwhile), MS_ERR_RANGE
 * (user_len > MS_CHECKPOINT_USER_MAX), MS_ERR_IO/NOSPACE (naming the file),
 * MS_ERR_NOMEM.
 */
int ms_checkpoint_take(const char *dir, ms_shard *s, ms_engine *e,
                       const void *user, size_t user_len, ms_errbuf *eb);

/* Read and check checkpoint dir's state file into *out (initialized by
 * the call; on failure it holds nothing). MS_ERR_NOTFOUND, MS_ERR_FORMAT
 * (another version), MS_ERR_CORRUPT (checksum, sizes, order), naming the
 * file. */
int ms_checkpoint_read(const char *dir, ms_checkpoint *out, ms_errbuf *eb);

/* Read checkpoint dir's state file and check that every part file it
 * lists is there (what a restore checks before it changes anything):
 * 0, or the error naming the file. */
int ms_checkpoint_check(const char *dir, ms_errbuf *eb);

/* Decode a state file's bytes (what ms_checkpoint_read does after reading
 * it; `name` is used in messages). */
int ms_checkpoint_decode(const void *buf, size_t n, const char *name,
                         ms_checkpoint *out, ms_errbuf *eb);

/*
 * Put the closed shard at shard_dir back to checkpoint dir (design 2 and
 * 3); *out receives the checkpoint (as ms_checkpoint_read), whose engine
 * state is what the next engine resumes from. On an error before the
 * commit the shard is unchanged (the message names the checkpoint file or
 * the shard file that failed) and *out holds nothing. Once committed it
 * returns 0, whatever the tidying after it left (out->leftovers). Every
 * fsync it makes (the shard's parts/ and dicts/ directories, the new
 * snapshot and the shard directory) is counted in io (borrowed; may be
 * NULL: not counted), as the shard counts its own.
 */
int ms_checkpoint_restore(const char *dir, const char *shard_dir,
                          ms_checkpoint *out, ms_io *io, ms_errbuf *eb);

/* Remove checkpoint dir (its links only: parts still active in a shard
 * stay there). A missing dir is success. */
int ms_checkpoint_remove(const char *dir, ms_errbuf *eb);

void ms_checkpoint_release(ms_checkpoint *c);

#endif
