/*
 * ms_chain.h - the chain (chain.c): sampler plugins run one after another
 * over the same batch, their keep masks ANDed, every misbehaving link
 * failed open and counted, a circuit breaker after repeated timeouts,
 * and Decide on worker threads or in a plugin host process
 * (plugin_host.c). Parsing a spec into links is ms_chain_spec.h's.
 *
 * Ownership: an ms_chain is a heap object owned by whoever opened it and
 * freed by ms_chain_close (NULL accepted); it owns its links' plugins.
 * ms_chain_plugin returns a plugin borrowed from the chain; names and
 * reasons returned are borrowed from it or static. Link specs and
 * host_exe are borrowed for the call and copied.
 * Threads: one pipeline may share a chain between merges; calls into it
 * are serialized inside the chain.
 */
#ifndef MS_CHAIN_H
#define MS_CHAIN_H

#include "ms_err.h"
#include "ms_loader.h"
#include "ms_mem.h"
#include "ms_row.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum ms_link_result {
	MS_LINK_OK = 0,
	MS_LINK_ERROR = 1,        /* decide() returned < 0 */
	MS_LINK_WRONG_LENGTH = 2, /* returned a count other than n, or
	                           * wrote past its n verdicts */
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
	/* Decide calls made to the link: one per chain call the circuit
	 * did not skip, those whose worker or plugin host did not start
	 * (or that had no memory for their verdicts) too, each with its
	 * result in results[]. */
	uint64_t calls;
	uint64_t traces;   /* traces handed to the plugin by those calls */
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

/* One line for a chain's log sink (ms_chain_opts.log): what a link's
 * plugin logged through the host's log service (ms_plugin_host.log), in
 * process or from its plugin host, or what the chain says about a link
 * (level MS_PLUGIN_LOG_ERROR). */
typedef struct ms_chain_log_line {
	size_t link;        /* the link's index in the chain, from 0 */
	int level;          /* enum ms_plugin_log_level */
	const char *plugin; /* the link's plugin's name */
	/* One printable line of at most 200 bytes (the loader cleans what
	 * the plugin wrote); NULL when the line only counts lost lines. */
	const char *msg;
	/* With msg NULL: this many of the link's lines were lost on the way
	 * (its plugin host's channel was full); else 0. */
	uint64_t lost;
} ms_chain_log_line;
/* A chain's log sink. Called from any thread (the chain's workers, a
 * plugin's own threads, the merge thread that reads a host's replies),
 * one call at a time, the line borrowed for the call. It must return
 * quickly and never call into the chain: a plugin logging in Decide
 * waits for it. Never called once ms_chain_close has returned. In
 * process mode a host's lines reach the sink while the chain waits for
 * that host (its start, a Decide call): lines its plugin's own threads
 * log between calls arrive with the next call, and what it logs in the
 * host's close() is not passed on. */
typedef void (*ms_chain_log_fn)(void *ctx, const ms_chain_log_line *line);

/* How long a link's open() may take by default. */
#define MS_CHAIN_OPEN_TIMEOUT_NS 5000000000ull

typedef struct ms_chain_opts {
	ms_mem *mem;                /* borrowed; outlives the chain */
	uint64_t decide_timeout_ns; /* 0 = 5 s */
	/* N: timeouts (or host crashes) in a row, or in N of the last 2N
	 * batches, that open the circuit (chain.c, design 4); 0 = 3. */
	unsigned circuit_after;
	ms_chain_log_fn log;        /* NULL = discard */
	void *log_ctx;
	/* How long ms_chain_close waits for calls abandoned after a timeout
	 * before leaving them behind, and for each plugin's close() (in
	 * process mode: each host's) before leaving it running (logged);
	 * 0 = 2 s. */
	uint64_t close_grace_ns;
	enum ms_plugin_host_mode host_mode;
	/* The executable that serves as plugin host (process mode): it must
	 * call ms_plugin_host_main for `__plugin-host`. Borrowed, copied. */
	const char *host_exe;
	/* How long ms_chain_open waits for each link's load and open(),
	 * which run on a worker thread; 0 = MS_CHAIN_OPEN_TIMEOUT_NS. One
	 * that overruns fails the chain's open (MS_ERR_PLUGIN; a load,
	 * MS_ERR_TIMEOUT) and is abandoned like a Decide call that overran
	 * (see ms_chain_close). It also bounds a call of the plugin's
	 * stats() (ms_chain_link_plugin_stats) and, in process mode, the
	 * start of a host (load, open(), the first stats()). */
	uint64_t open_timeout_ns;
	/* Process mode: how much memory (bytes) each host's plugin may map
	 * beyond what the host holds once started (its RLIMIT_DATA); a
	 * plugin that asks for more is refused it (its malloc fails). 0 = a
	 * quarter of the memory ms_limits_detect finds (the cgroup the
	 * chain is opened in, else the machine). Hosts also volunteer as
	 * the kernel's first victim when memory runs out (oom_score_adj
	 * 1000), so a leaking plugin is the one killed, not the workbench. */
	uint64_t host_mem_max;
} ms_chain_opts;

typedef struct ms_chain ms_chain;

/* Load and open every link (in order), each link's load (dlopen with the
 * library's constructors, the entry point) and open() on a worker thread
 * of the chain, waited for at most open_timeout_ns. Fails, loading
 * nothing, if any link fails to load or its open() fails or overruns; the
 * message names the link and the plugin's file. An open() that returns
 * non-zero refused its config: MS_ERR_CONFIG. A load that overruns
 * fails with MS_ERR_TIMEOUT: it may hold the dynamic loader's lock for
 * good, and then exit() (which takes it) never returns, so the process
 * should end with _exit() or quick_exit(). n may be 0. */
int ms_chain_open(ms_chain **out, const ms_chain_link_spec *links, size_t n,
                  const ms_chain_opts *opts, ms_errbuf *eb);
/* Unload every link, each plugin's close() given up to close_grace_ns (one
 * that overruns is left running, its plugin never dlclose()d nor freed,
 * and the chain's log told), and wait up to close_grace_ns for abandoned
 * calls still running (their batches are freed through the chain's
 * memory accounting). Calls still running after that are left behind and never
 * block: each keeps its worker, verdict buffer, batch and plugin reference
 * allocated (an open() that overran: its worker, config copy and plugin
 * reference) for the life of the process, and its plugin is never closed nor
 * dlclose()d, since the call may still be executing the plugin's code. */
void ms_chain_close(ms_chain *c);
size_t ms_chain_len(const ms_chain *c);
ms_plugin *ms_chain_plugin(const ms_chain *c, size_t i);
/* OR of the links' projections. */
uint32_t ms_chain_projection(const ms_chain *c);
void ms_chain_link_stats(const ms_chain *c, size_t i, ms_link_stats *out);
/*
 * The plugin's own counters of link i (see ms_plugin_stats), up to cap
 * into out; returns how many exist. In-process, the plugin's. In process
 * mode, those its host reported after its last Decide call: the counters
 * of the host started last (a crash or a timeout ends a host and the next
 * call starts another, which counts from zero), none before the first
 * call. *host_starts (NULL ok) gets how many hosts were started. Names
 * are borrowed from the chain, valid until its next call or close.
 * In process, stats() runs on the link's worker, waited for at most
 * open_timeout_ns: one that overruns is abandoned (as a Decide call that
 * overran), logged, and the link's counters read as none from then on.
 */
size_t ms_chain_link_plugin_stats(const ms_chain *c, size_t i,
                                  ms_plugin_stat *out, size_t cap,
                                  unsigned *host_starts);
bool ms_chain_circuit_is_open(const ms_chain *c);
/* Why the circuit opened ("" while closed). */
const char *ms_chain_circuit_reason(const ms_chain *c);
/* Calls abandoned after a timeout that have not returned yet. */
size_t ms_chain_abandoned(const ms_chain *c);

/*
 * Evaluate complete traces given as rows through the chain (batch.c, next
 * to the batch builder it uses): rows grouped by trace in ascending
 * trace-ID order (as ms_batch_from_rows), cut into batches of at most
 * batch_traces traces (0 = 4096) with the chain's projection. Writes one
 * keep byte per trace into keep (keep_cap bytes) and the trace count into
 * *ntraces. No guard: these are the plugins' verdicts. For fixture gates
 * and tools that run the real sampler.
 *
 * A batch on which a link fails open (error, timeout, crash, malformed
 * verdict) is evaluated again in halves while the circuit is closed, down
 * to 64 traces, so a link that fails on some batches only (their size,
 * one trace in them) still judges the others. failed (NULL, or keep_cap
 * entries) gets per trace the links that failed open on the smallest
 * batch it was in (bit i for link i; every link's while the circuit is
 * open); 0 means every link judged it. cancel (NULL ok) is looked at
 * before every call: once set, MS_ERR_CANCELED after the call in
 * progress.
 */
int ms_chain_evaluate_rows(ms_chain *c, ms_mem *mem, const ms_row *rows,
                           size_t nrows, size_t batch_traces, uint8_t *keep,
                           uint16_t *failed, size_t keep_cap, size_t *ntraces,
                           const _Atomic bool *cancel, ms_errbuf *eb);

#endif
