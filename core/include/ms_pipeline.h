/*
 * ms_pipeline.h - the sampling pipeline an engine is configured with
 * (pipeline.c): the chain opened from a spec, the grace policy, the
 * limits and the staging ceilings derived from them. The pieces it is
 * made of have their own headers, included here for its callers:
 *
 *   ms_loader.h      the plugin loader (plugin_loader.c)
 *   ms_batch.h       column batches built from rows (batch.c)
 *   ms_chain.h       the chain: links, fail-open, circuit (chain.c)
 *   ms_chain_spec.h  the chain-spec parser (chain_spec.c)
 *   ms_sampling.h    the sampling rule and the grace policy (sampling.c)
 *
 * What a merge does with a pipeline inside core (the staging budget and
 * stager, the fragment guard, the drop set, the per-batch chain call) is
 * private to core: pipeline_int.h.
 *
 * Ownership: an ms_pipeline is a heap object owned by whoever opened it
 * and freed by ms_pipeline_close (NULL accepted); it owns its chain. The
 * chain, spec and limits returned by the accessors are borrowed from it.
 * opts->mem must outlive the pipeline; opts' strings are copied.
 * Threads: one pipeline may serve several merges at once (chain calls
 * are serialized inside the chain; the staging gauge is atomic).
 */
#ifndef MS_PIPELINE_H
#define MS_PIPELINE_H

#include "ms_batch.h"
#include "ms_chain.h"
#include "ms_chain_spec.h"
#include "ms_err.h"
#include "ms_limits.h"
#include "ms_loader.h"
#include "ms_mem.h"
#include "ms_sampling.h"

#include <stdint.h>

/*
 * struct ms_pipeline (declared in ms_merge.h and ms_engine.h) is the
 * configured sampling pipeline.
 */
typedef struct ms_pipeline ms_pipeline;

typedef struct ms_pipeline_opts {
	const char *spec;       /* chain spec; NULL or "disabled" = no links */
	const char *plugin_dir; /* where <name>.so live (required with links) */
	enum ms_grace_policy policy;
	uint64_t decide_timeout_ns; /* 0 = 5 s */
	unsigned circuit_after;     /* 0 = 3 */
	const ms_limits *limits;    /* NULL = ms_limits_detect() */
	uint64_t hard_ceiling;      /* 0 = from the limits */
	uint64_t oversized_cap;     /* 0 = the hard ceiling */
	/* Each sampling merge's drop-set ceiling in bytes; 0 = from the
	 * limits, the reference's rule (max(mem / (16 * cpus), 1 MiB)). */
	uint64_t drop_set_budget;
	ms_mem *mem;                /* borrowed; outlives the pipeline */
	ms_chain_log_fn log;        /* see ms_chain_opts */
	void *log_ctx;
	enum ms_plugin_host_mode host_mode; /* see ms_chain_opts */
	const char *host_exe;
} ms_pipeline_opts;

int ms_pipeline_open(ms_pipeline **out, const ms_pipeline_opts *opts,
                     ms_errbuf *eb);
void ms_pipeline_close(ms_pipeline *p);
/* The chain (never NULL; it may have 0 links). */
ms_chain *ms_pipeline_chain(const ms_pipeline *p);
const char *ms_pipeline_spec(const ms_pipeline *p);
enum ms_grace_policy ms_pipeline_policy(const ms_pipeline *p);
const ms_limits *ms_pipeline_limits(const ms_pipeline *p);
uint64_t ms_pipeline_hard_ceiling(const ms_pipeline *p);
uint64_t ms_pipeline_drop_set_budget(const ms_pipeline *p);
/* Bytes charged right now by every merge staging through p (a gauge for
 * screens; 0 between sampling merges). */
uint64_t ms_pipeline_staged_live(const ms_pipeline *p);
/* The merge that began staging last, as a screen shows it: its
 * sequence number (ms_merge_req.seq), the preferred limit it stages
 * under (0 before the first merge that stages: then all three are 0),
 * and the peak of the staged bytes since it began, which holds after
 * its batches are done (staged_live falls to 0 at each batch's end). */
typedef struct ms_pipeline_stage {
	uint64_t seq;
	uint64_t preferred;
	uint64_t peak;
} ms_pipeline_stage;
void ms_pipeline_staging(const ms_pipeline *p, ms_pipeline_stage *out);

#endif
