/*
 * frozen.h - the frozen-merge description shared by freeze.c (which writes
 * it at a dispatch barrier) and merge_once.c (which replays it): the parsed
 * form of DIR/frozen.txt. The file format is documented in freeze.c.
 *
 * Ownership: ms__frozen is caller-owned; its arrays are heap memory freed
 * by ms__frozen_release (a zeroed or released struct may be released
 * again).
 */
#ifndef MS_REPLAY_FROZEN_H
#define MS_REPLAY_FROZEN_H

#include "ms_err.h"
#include "ms_ledger.h"
#include "ms_pipeline.h"
#include "ms_replay_events.h"

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MS_FROZEN_FORMAT 2
#define MS_FROZEN_FILE "frozen.txt"
#define MS_FROZEN_SHARD "shard"
/* Sanity bound on the number of inputs a frozen file may list. */
#define MS_FROZEN_MAX_INPUTS 65536

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
} ms__frozen;

/* Read and strictly validate DIR/frozen.txt into *f (zeroed first).
 * Errors name the file, the line and the key, and what was expected. */
int ms__frozen_read(const char *dir, ms__frozen *f, ms_errbuf *eb);
void ms__frozen_release(ms__frozen *f);

#endif
