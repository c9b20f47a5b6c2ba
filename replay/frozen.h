/*
 * frozen.h - the frozen-merge description shared by freeze.c (which writes
 * it at a dispatch barrier) and merge_once.c (which replays it): the parsed
 * form of DIR/frozen.txt. The file format is documented in freeze.c.
 *
 * It also re-runs the picker on that state (ms__frozen_check_pick), so a
 * frozen merge proves that its selection is the one the engine makes.
 *
 * Ownership: ms__frozen is caller-owned; its arrays are heap memory freed
 * by ms__frozen_release (a zeroed or released struct may be released
 * again).
 */
#ifndef MS_REPLAY_FROZEN_H
#define MS_REPLAY_FROZEN_H

#include "ms_err.h"
#include "ms_ledger.h"
#include "ms_picker.h"
#include "ms_pipeline.h"
#include "ms_shard.h"
#include "ms_replay.h"
#include "ms_replay_events.h"

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MS_FROZEN_FORMAT 3
#define MS_FROZEN_FILE "frozen.txt"
#define MS_FROZEN_SHARD "shard"
/* Sanity bound on the number of IDs a frozen file's list may hold. */
#define MS_FROZEN_MAX_INPUTS 65536

/* Part IDs of the frozen shard (heap array, owned by the ms__frozen). */
typedef struct ms__idlist {
	size_t n;
	uint64_t *ids;
} ms__idlist;

typedef struct ms__frozen {
	unsigned format;
	char fixture_dir[PATH_MAX];
	char fixture_preset[32];
	uint64_t fixture_seed;
	char schedule_hash[65], topology_hash[65];
	int64_t now_ns, frontier_ns;
	int64_t segment_min_ns, segment_max_ns; /* the boundary guard's */
	enum ms_grace_policy policy;
	char variant[MS_EV_SPEC_MAX];
	uint64_t seq;
	char lane[16];
	bool finalize;
	uint64_t output_id;
	uint64_t epoch;       /* epoch of the live shard's view when frozen */
	uint64_t shard_parts; /* active parts copied into DIR/shard */
	unsigned cpus;        /* limits in force in the run */
	uint64_t mem_limit;
	size_t ninputs;
	uint64_t *ids;          /* in selection (picker window) order */
	uint32_t *depths;       /* ninputs */
	ms_ledger_set *ledgers; /* ninputs: ledgers of each input part */
	uint64_t selection_fp;  /* ms_pick_fp_add(0, ids, ninputs) */
	/* What the picker saw when it chose the selection (format 3): the
	 * epoch and pass it ran in, the fan-out limit and options it used,
	 * and which parts of the frozen shard were no candidates: inputs of
	 * other merges in flight (claimed), quarantined parts, and parts
	 * published after the pick (unseen: outputs of merges that landed
	 * between the pick and the freeze). */
	uint64_t pick_epoch, pass, fan_out;
	uint32_t picker_max_parts;
	double picker_multiplier;
	ms__idlist claimed, quarantined, unseen;
} ms__frozen;

/* A selection as the picker makes it: IDs in window order (a finalize's
 * in inventory order); n may exceed the array (a finalize), then only
 * the first MS_PICKER_PARTS_LIMIT are held. */
typedef struct ms__pick_ids {
	size_t n;
	uint64_t ids[MS_PICKER_PARTS_LIMIT];
} ms__pick_ids;

/* Read and strictly validate DIR/frozen.txt into *f (zeroed first).
 * Errors name the file, the line and the key, and what was expected. */
int ms__frozen_read(const char *dir, ms__frozen *f, ms_errbuf *eb);
void ms__frozen_release(ms__frozen *f);

/* Re-run the engine's choice on the frozen state: the candidates are the
 * parts of view v (the frozen shard, or a copy of it) with rows that are
 * neither claimed, quarantined nor unseen; a finalize takes every one
 * whose max_ts is at or before frontier_ns, any other merge asks
 * ms_picker_select with the recorded fan-out and options. */
int ms__frozen_repick(const ms__frozen *f, ms_view *v, ms__pick_ids *out,
                      ms_errbuf *eb);
/* ms__frozen_repick, then compare with the recorded selection (IDs and
 * order): MS_ERR_CONFLICT naming both selections when they differ; `who`
 * starts the message ("freeze", "merge-once"). */
int ms__frozen_check_pick(const ms__frozen *f, ms_view *v, const char *who,
                          ms_errbuf *eb);

/* The reconciliation of a merge-once variant's output: for each kind,
 * the inputs' ledger (in) minus the ledger of the rows of its dropped
 * traces (gone; `traces` of them) must be the output's (out). true when
 * every kind is; else false and note (n bytes) names merge #seq, the
 * first kind that is not, the output's and the expected ledger and the
 * rows of both sides (or that the dropped rows exceed the inputs'). */
bool ms__merge_once_recon(uint64_t seq, const ms_ledger_set *in,
                          const ms_ledger_set *gone, uint64_t traces,
                          const ms_ledger_set *out, char *note, size_t n);

/* ms_merge_once with the oracle evaluating oracle_spec instead of each
 * variant's chain (NULL: theirs), so that a test sees a mismatch. */
int ms__merge_once_oracle(const ms_merge_once_opts *opts,
                          ms_merge_once_result *results,
                          const char *oracle_spec, ms_errbuf *eb);
/* ms__merge_once_oracle, and with forget_drop one dropped trace of each
 * variant left out of its reconciliation (which must then fail). */
int ms__merge_once_test(const ms_merge_once_opts *opts,
                        ms_merge_once_result *results,
                        const char *oracle_spec, bool forget_drop,
                        ms_errbuf *eb);

#endif
