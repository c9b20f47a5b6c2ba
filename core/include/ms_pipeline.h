/*
 * ms_pipeline.h - sampling inside merges, the public side: the plugin
 * loader (plugin_loader.c), the chain of links with fail-open and a
 * circuit breaker (chain.c), column-oriented batches as the fixtures and
 * tools build them, the chain-spec parser (chain_spec.c), and the pipeline
 * an engine is configured with (pipeline.c).
 *
 * What a merge does with them inside core (the staging budget and stager,
 * the fragment guard, the drop set, the per-batch chain call) is private
 * to core: pipeline_int.h.
 *
 * Ownership: every handle (ms_plugin, ms_chain, ms_batch, ms_pipeline) is
 * a heap object owned by whoever opened it and freed by its
 * _close/_release/_unload (NULL accepted). Pointers returned by accessors
 * are borrowed from the handle.
 */
#ifndef MS_PIPELINE_H
#define MS_PIPELINE_H

#include "ms_clock.h"
#include "ms_err.h"
#include "ms_limits.h"
#include "ms_mem.h"
#include "ms_merge.h"
#include "ms_part.h"
#include "ms_plugin.h"
#include "ms_row.h"
#include "ms_sampling.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------ */
/* Classification                                                      */

/* The classification, the grace policy enum and the rule that decides
 * whether a merge samples (ms_sampling_predict) are ms_sampling.h's. */
const char *ms_grace_policy_name(enum ms_grace_policy p);
/* "selection" or "trace"; MS_ERR_INVAL otherwise. */
int ms_grace_policy_parse(const char *s, enum ms_grace_policy *out);

/* ------------------------------------------------------------------ */
/* Plugin loader                                                       */

typedef struct ms_plugin ms_plugin;

/* A log sink for plugins and the loader; may be called from any thread. */
typedef void (*ms_log_fn)(void *ctx, int level, const char *plugin,
                          const char *msg);

typedef struct ms_plugin_load_opts {
	const char *config; /* NULL or "" = none */
	ms_mem *mem;        /* borrowed; must outlive the plugin */
	ms_log_fn log;      /* NULL = discard */
	void *log_ctx;
} ms_plugin_load_opts;

/*
 * dlopen(path, RTLD_NOW | RTLD_LOCAL), find MS_PLUGIN_ENTRY_SYMBOL, check
 * the ABI (major equal, minor <= host), required fields (name, open,
 * decide, close: a missing one is named), checksum the file (XXH3-128),
 * and open the plugin with config. Every failure closes the handle and
 * returns MS_ERR_PLUGIN (MS_ERR_IO when the file cannot be read) with a
 * message naming the path and, where it applies, dlerror() text, the
 * missing callback, the versions, or the plugin's own open() message.
 */
int ms_plugin_load(ms_plugin **out, const char *path,
                   const ms_plugin_load_opts *opts, ms_errbuf *eb);
/*
 * Drop the caller's reference. The plugin's close() and dlclose() run when
 * no abandoned (timed-out) call is still running; if one is, the last
 * such call to return does it on its worker thread.
 */
void ms_plugin_unload(ms_plugin *p);
const char *ms_plugin_name(const ms_plugin *p);
const char *ms_plugin_path(const ms_plugin *p);
const char *ms_plugin_version(const ms_plugin *p); /* "" when none */
/* XXH3-128 of the .so file as 32 lowercase hex digits. */
const char *ms_plugin_checksum(const ms_plugin *p);
uint16_t ms_plugin_abi_minor(const ms_plugin *p);
/* Columns the opened plugin reads (projection_of() if it has one). */
uint32_t ms_plugin_projection(const ms_plugin *p);
/* The plugin's own counters (see ms_plugin_desc.stats); 0 when none. */
size_t ms_plugin_stats(const ms_plugin *p, ms_plugin_stat *out, size_t cap);
/* Call decide() on the calling thread, no timeout, no checks (benchmarks
 * and fixture gates that time the plugin alone). */
int64_t ms_plugin_decide_direct(ms_plugin *p, const ms_plugin_batch *b,
                                uint8_t *verdict, size_t n);
/* The name of the plugin whose Decide is running on the calling thread (a
 * chain worker), or NULL. Async-signal-safe: a handler of a fatal signal
 * uses it to name the plugin that crashed, and an exit hook to notice a
 * plugin calling exit(). */
const char *ms_plugin_in_decide(void);

/* ------------------------------------------------------------------ */
/* Batches                                                             */

/*
 * A read-only column-oriented batch (ms_plugin_batch) and the memory
 * behind it, as one reference-counted unit: the chain keeps a reference
 * while a timed-out call may still read it, so the memory is freed only
 * when that call returns; it is never reused.
 */
typedef struct ms_batch ms_batch;

/* Build a batch from rows grouped by trace (consecutive rows with equal
 * trace IDs form one trace; traces must be in ascending ID order and
 * distinct), copying only the projected columns. mem must outlive every
 * chain the batch is given to (a timed-out call frees it late). */
int ms_batch_from_rows(ms_batch **out, ms_mem *mem, uint32_t projection,
                       const ms_row *rows, size_t nrows, ms_errbuf *eb);
const ms_plugin_batch *ms_batch_view(const ms_batch *b);
void ms_batch_release(ms_batch *b);
/* ------------------------------------------------------------------ */
/* Chain                                                               */

enum ms_link_result {
	MS_LINK_OK = 0,
	MS_LINK_ERROR = 1,        /* decide() returned < 0 */
	MS_LINK_WRONG_LENGTH = 2, /* returned a count other than n */
	MS_LINK_BAD_VALUE = 3,    /* a verdict other than 0/1 */
	MS_LINK_TIMEOUT = 4,      /* overran the Decide timeout */
	MS_LINK_CIRCUIT_OPEN = 5, /* not called: the chain's circuit is open */
	MS_LINK_HOST_ERROR = 6,   /* the host could not run the call */
	MS_LINK_CRASHED = 7,      /* the plugin host process died in Decide */
	MS_LINK_RESULT_COUNT = 8
};
/* The one table of fail-open reason names, as the event log stores them:
 * "ok", "error", "wrong_length", "bad_value", "timeout", "circuit_open",
 * "host_error", "crashed". */
const char *ms_link_result_name(enum ms_link_result r);

#define MS_LINK_HIST_BUCKETS 13 /* 12 bounds + overflow */
/* Upper bound (inclusive, ns) of histogram bucket i < 12: 0.25, 0.5, 1,
 * 2.5, 5, 10, 25, 50, 100, 250, 500, 1000 ms; UINT64_MAX for the last. */
uint64_t ms_link_hist_bound_ns(size_t i);

/* Per-link figures, keyed by the plugin's name. */
typedef struct ms_link_stats {
	char name[64];
	uint64_t calls;    /* decide() calls started */
	uint64_t traces;   /* traces handed to those calls */
	uint64_t total_ns; /* Decide wall time (a timeout counts its wait) */
	uint64_t max_ns;
	uint64_t hist[MS_LINK_HIST_BUCKETS];
	uint64_t results[MS_LINK_RESULT_COUNT];
	uint64_t kept, dropped; /* verdicts of successful calls */
	enum ms_link_result last_result;
	char last_fail[192]; /* last fail-open reason, "" if none */
} ms_link_stats;

typedef struct ms_chain_link_spec {
	const char *path;   /* the .so */
	const char *config; /* NULL = "" */
} ms_chain_link_spec;

/* Where a chain's links run Decide. */
enum ms_plugin_host_mode {
	/* On a worker thread of this process (a crash takes it down). */
	MS_PLUGIN_HOST_INPROC = 0,
	/* In a child host process per link (plugin_host.c): a crash, abort,
	 * exit or hang fails the link open ("crashed" or "timeout") and the
	 * host is started again for the next call. */
	MS_PLUGIN_HOST_PROCESS = 1,
};
/* "inproc", "process"; parse returns false for anything else. */
const char *ms_plugin_host_mode_name(enum ms_plugin_host_mode m);
bool ms_plugin_host_mode_parse(const char *s, enum ms_plugin_host_mode *out);

/* The entry point of the host process: `EXE __plugin-host PATH CONFIG`
 * with the control socket on fd 3 (see plugin_host.c). Returns the exit
 * status. */
int ms_plugin_host_main(int argc, char **argv);

typedef struct ms_chain_opts {
	ms_mem *mem;                /* borrowed; outlives the chain */
	uint64_t decide_timeout_ns; /* 0 = 5 s */
	unsigned circuit_after;     /* consecutive timeouts; 0 = 3 */
	ms_log_fn log;
	void *log_ctx;
	/* How long ms_chain_close waits for calls abandoned after a timeout
	 * before leaving them behind; 0 = 2 s. */
	uint64_t close_grace_ns;
	enum ms_plugin_host_mode host_mode;
	/* The executable that serves as plugin host (process mode): it must
	 * call ms_plugin_host_main for `__plugin-host`. Borrowed, copied. */
	const char *host_exe;
} ms_chain_opts;

typedef struct ms_chain ms_chain;

/* Load and open every link (in order). Fails, loading nothing, if any
 * link fails to load; the message names the link. n may be 0. */
int ms_chain_open(ms_chain **out, const ms_chain_link_spec *links, size_t n,
                  const ms_chain_opts *opts, ms_errbuf *eb);
/* Unload every link and wait up to close_grace_ns for abandoned calls still
 * running (their batches are freed through the chain's memory accounting).
 * Calls still running after that are left behind and never block: each
 * keeps its worker, verdict buffer, batch and plugin reference allocated
 * for the life of the process, and its plugin is never closed nor
 * dlclose()d, since the call may still be executing the plugin's code. */
void ms_chain_close(ms_chain *c);
size_t ms_chain_len(const ms_chain *c);
ms_plugin *ms_chain_plugin(const ms_chain *c, size_t i);
/* OR of the links' projections. */
uint32_t ms_chain_projection(const ms_chain *c);
void ms_chain_link_stats(const ms_chain *c, size_t i, ms_link_stats *out);
bool ms_chain_circuit_is_open(const ms_chain *c);
/* Why the circuit opened ("" while closed). */
const char *ms_chain_circuit_reason(const ms_chain *c);
/* Calls abandoned after a timeout that have not returned yet. */
size_t ms_chain_abandoned(const ms_chain *c);

/*
 * Evaluate complete traces given as rows through the chain: rows grouped
 * by trace in ascending trace-ID order (as ms_batch_from_rows), cut into
 * batches of at most batch_traces traces (0 = 4096) with the chain's
 * projection. Writes one keep byte per trace into keep (keep_cap bytes)
 * and the trace count into *ntraces. No guard: these are the plugins'
 * verdicts. For fixture gates and tools that run the real sampler.
 */
int ms_chain_evaluate_rows(ms_chain *c, ms_mem *mem, const ms_row *rows,
                           size_t nrows, size_t batch_traces, uint8_t *keep,
                           size_t keep_cap, size_t *ntraces, ms_errbuf *eb);

/* A parsed chain spec: "disabled", "alwayskeep", "detdrop:35",
 * "skywalking", "skywalking:{json}", "detdrop:{\"percent\":35}", or
 * several joined by commas. */
#define MS_CHAIN_MAX_LINKS 16
typedef struct ms_chain_spec {
	size_t n; /* 0 for "disabled" */
	char names[MS_CHAIN_MAX_LINKS][64];
	char *paths[MS_CHAIN_MAX_LINKS];              /* owned */
	char *configs[MS_CHAIN_MAX_LINKS];            /* owned */
	ms_chain_link_spec links[MS_CHAIN_MAX_LINKS]; /* views of the above */
	ms_mem *mem;
} ms_chain_spec;

/*
 * Parse spec; plugin paths are plugin_dir/<name>.so. Names are
 * [a-z0-9_-]+. "detdrop:PCT" becomes {"percent":PCT}; "skywalking" alone
 * gets the default SkyWalking config. Errors name the position and what
 * was expected. Release with ms_chain_spec_release (also after failure).
 */
int ms_chain_spec_parse(ms_chain_spec *out, const char *spec,
                        const char *plugin_dir, ms_mem *mem, ms_errbuf *eb);
void ms_chain_spec_release(ms_chain_spec *s);

#define MS_SKYWALKING_DEFAULT_CONFIG                                           \
	"{\"durationThresholdMs\":500,\"keepErrors\":true,"                    \
	"\"healthySampleRate\":0.1}"

/* ------------------------------------------------------------------ */
/* Pipeline: what an engine is configured with                         */

/*
 * struct ms_pipeline (declared in ms_merge.h and ms_engine.h) is the
 * configured sampling pipeline: the chain, the grace policy, the limits
 * and the staging ceilings derived from them. One pipeline may serve
 * several merges at once: chain calls are serialized inside the chain.
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
	ms_mem *mem;                /* borrowed; outlives the pipeline */
	ms_log_fn log;
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
/* Bytes charged right now by every merge staging through p (a gauge for
 * screens; 0 between sampling merges). */
uint64_t ms_pipeline_staged_live(const ms_pipeline *p);
#endif
