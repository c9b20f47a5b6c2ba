/*
 * chain.c - running the sampler plugins of a merge as a chain: one job,
 * the chain with its workers and its circuit breaker.
 *
 * The chain runs its links over one batch each, ANDs their keep masks and
 * makes every way a plugin can misbehave (error, wrong verdict count,
 * verdicts written past n, caught by guard bytes after the verdict
 * buffer, values other than 0/1, overrunning the Decide timeout) fail
 * open, recorded per link. Calls run on one worker thread per link so the
 * caller can stop waiting; a call that overruns is abandoned to its
 * worker, which owns the batch reference, the verdict buffer and a plugin
 * reference until the call returns. The plugin's load (dlopen with its
 * library constructors, its entry point) and open() run the same way, on
 * a worker started for them and bounded by the open timeout: a plugin
 * that never returns from them fails the chain's open instead of holding
 * it. So does its stats() (on the link's worker, bounded by the open
 * timeout), and its close() runs on a thread of its own, bounded by the
 * close grace. That worker is stopped and joined as soon as open() has returned, and
 * Decide gets a worker of its own when first called: an exited thread's
 * malloc arena goes back to the C library's free list for the next
 * thread that allocates, where a worker kept from open() on would hold
 * one for the run (with more than one arena, which threads share which
 * decides several MiB of a run's finalize peak: tests/bench/README.md,
 * bench_day; mergescope keeps one, tui/main.c). Plugins are loaded by
 * plugin_loader.c, chain specs parsed by chain_spec.c.
 *
 * Design:
 *  1. An ms_plugin is reference counted (plugin_loader.c): its owner holds
 *     one reference, every abandoned call one more. close() and dlclose()
 *     run when the count reaches 0, on whichever thread drops it.
 *  2. A link's worker is either idle (waiting for a request), running a
 *     call the caller waits for (open() or Decide), or abandoned. An
 *     abandoned worker is detached and never receives another request;
 *     the link starts a new worker for its next call. The worker that
 *     runs open() runs nothing else; a link whose open() was abandoned
 *     has no next call: the chain's open fails.
 *  3. The memory of a batch an abandoned call may read is released only by
 *     that call's worker after the call returns (the batch reference).
 *  4. consecutive_timeouts counts timed-out (and crashed) calls since the
 *     last batch in which none timed out or crashed; reaching circuit_after
 *     (N, default 3) opens the circuit. So does a sustained failure rate:
 *     recent_batches holds, one bit per batch that reached a link (newest
 *     in bit 0), whether a call in it timed out or crashed; N of the last
 *     2N such batches opens the circuit (a plugin that overruns on every
 *     other call opens it on its Nth overrun, one that overruns on every
 *     third call does not). The reference counts timeouts in a row only
 *     (its chain lives for one merge); the rate rule is ours, since our
 *     chain lives for the run. The circuit stays open for the chain's
 *     life: every later batch keeps everything.
 *  5. ms_chain_close waits at most close_grace_ns for abandoned calls to
 *     return, then leaves the rest behind: their workers are detached and
 *     marked orphaned in the chain's abandon record, which outlives the
 *     chain (it is counted by the chain and by every running abandoned
 *     call, and freed by whichever drops the last count). A call that
 *     never returns therefore never blocks closing or process exit.
 *  6. An orphaned call that returns frees nothing and calls nothing: the
 *     memory it holds (its worker, verdict buffer and batch) may belong to
 *     allocators its owners have torn down, so it is left allocated. Its
 *     plugin reference is never dropped either, so the plugin is neither
 *     close()d nor dlclose()d while the thread may still run its code.
 *
 *  7. Every log line of a link (its plugin's, in process or from its host,
 *     and the chain's own about it) goes through the chain's log relay,
 *     one line at a time under the relay's lock. ms_chain_close mutes the
 *     relay last, so the caller's sink is never called after it returns;
 *     the relay itself is plain memory freed then, unless a plugin was
 *     left running (an abandoned call, a close() that overran): it may
 *     still log, so the muted relay stays allocated, as its worker does.
 *
 * With MS_PLUGIN_HOST_PROCESS a link's Decide calls go to a plugin host
 * process (plugin_host.c), so invariants 2, 5 and 6 apply to its open()
 * only and invariant 3 not at all; a host that overruns is killed, never
 * abandoned, and one that dies in Decide fails the link open as
 * "crashed". The plugin is still loaded and opened here as well (name,
 * checksum, projection, config errors at open), its open() on a worker
 * as in process, but its Decide never runs in this process.
 */
#include "ms_chain.h"
#include "ms_clock.h"
#include "ms_enum.h"
#include "ms_limits.h"
#include "ms_rusage.h"
#include "ms_thread.h"
#include "pipeline_int.h"
#include "plugin_host.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------------ */
/* Workers                                                             */

enum worker_state { W_IDLE, W_REQUEST, W_DONE, W_QUIT };
/* What a request asks the worker to call: the plugin's load and open()
 * (the one request of the worker ms_chain_open starts per link), Decide,
 * or stats(). */
enum worker_job { JOB_DECIDE, JOB_OPEN, JOB_STATS };
/* How far a JOB_OPEN got: what the plugin is running when it overruns. */
enum open_stage { STAGE_LOAD, STAGE_OPEN };
/* Verdict guard: bytes after the n verdicts a call may write, set to
 * GUARD_BYTE before it and checked after it. */
#define GUARD_LEN 64
#define GUARD_BYTE 0x5A
/* The stack of a link's worker and of a closer: they run a plugin's code
 * (library constructors, open(), Decide, stats(), close()), which is
 * another author's, built and tested as any program's threads are, so it
 * gets what any program's threads get (ms_thread.h; ms_plugin.h tells
 * plugin authors). A smaller stack would save address space only while a
 * plugin runs (one worker per link during a sampling merge, the closer at
 * unload), at the price of a crash of the whole run, in process, for a
 * plugin whose need nobody measured. (The shipped plugins' workers
 * touch at most 28 KiB, their closers 8 KiB, measured as in ms_thread.h.) */
#define PLUGIN_STACK MS_THREAD_STACK_DEFAULT
/* The most plugin counters a stats() call on a worker copies. */
#define WORKER_STATS 64

/* The chain's abandon record (invariants 5 and 6). Plain malloc memory
 * (a NULL ms_mem): it may outlive every allocator of the chain. */
typedef struct abandon_ctl {
	pthread_mutex_t mu;
	pthread_cond_t cv; /* broadcast when an abandoned call returns */
	unsigned refs;  /* the chain's one + one per running abandoned call */
	size_t running; /* abandoned calls that have not returned */
	bool closed;    /* the chain is gone: returning calls free nothing */
} abandon_ctl;

static abandon_ctl *
abandon_ctl_new(void)
{
	abandon_ctl *a = ms_mem_calloc(NULL, 1, sizeof(*a));
	if (!a)
		return NULL;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_mutex_init(&a->mu, NULL);
	pthread_cond_init(&a->cv, &ca);
	pthread_condattr_destroy(&ca);
	a->refs = 1;
	return a;
}

/* Drop one count; call with a->mu held. Unlocks (and frees on the last). */
static void
abandon_ctl_put_locked(abandon_ctl *a)
{
	bool last = --a->refs == 0;
	pthread_mutex_unlock(&a->mu);
	if (last) {
		pthread_cond_destroy(&a->cv);
		pthread_mutex_destroy(&a->mu);
		ms_mem_free(NULL, a, sizeof(*a));
	}
}

typedef struct worker {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	enum worker_state state;
	enum worker_job job;
	bool abandoned;
	ms_plugin *plugin;
	/* JOB_OPEN: the config, borrowed from the link while the caller
	 * waits and the worker's own (config_size bytes, c->mem) once the
	 * call is abandoned; what open() said when it failed. */
	char *config;
	size_t config_size;
	ms_errbuf open_eb;
	_Atomic int stage;                  /* enum open_stage */
	ms_plugin_stat stats[WORKER_STATS]; /* JOB_STATS: what it copied */
	ms_batch *batch;
	uint8_t *verdict;
	size_t vcap;
	size_t n;
	int64_t ret;
	struct ms_chain *chain; /* invalid once ctl->closed */
	abandon_ctl *ctl;       /* set when abandoned */
} worker;

/* The chain's log relay (invariant 7) and, per link, what its loader and
 * its host are given as the log context. */
typedef struct log_relay log_relay;
typedef struct relay_slot {
	log_relay *relay;
	size_t link;
} relay_slot;
struct log_relay {
	pthread_mutex_t mu;
	ms_chain_log_fn fn; /* NULL: muted */
	void *ctx;
	relay_slot slot[MS_CHAIN_MAX_LINKS];
};

typedef struct link {
	ms_plugin *plugin;
	worker *w;
	ms__phost *host; /* process mode: the running host, if any */
	/* Process mode: the counters the last host reported with its last
	 * reply, and how many hosts were started. */
	ms__phost_stats hstats;
	unsigned host_starts;
	char *path, *config;
	size_t path_size, config_size;
	ms_link_stats st;
	uint8_t *tmp; /* verdict copy for checks */
	size_t tmpcap;
	bool stats_dead; /* stats() overran once: never called again */
} link_t;

struct ms_chain {
	ms_mem *mem;
	uint64_t timeout_ns;
	unsigned circuit_after;
	link_t *links;
	size_t n;
	size_t nalloc;
	unsigned consecutive_timeouts;
	uint64_t recent_batches; /* invariant 4: bit set = a timeout/crash */
	bool circuit_open;
	char circuit_reason[192];
	uint64_t close_grace_ns;
	uint64_t open_timeout_ns;
	log_relay *relay;
	enum ms_plugin_host_mode host_mode;
	char *host_exe;
	size_t host_exe_size;
	uint64_t host_mem_max; /* ms_chain_opts.host_mem_max, resolved */
	abandon_ctl *ctl;
	pthread_mutex_t mu; /* serializes decide and stats reads */
};

static void
relay_send(relay_slot *s, const ms_chain_log_line *ln)
{
	log_relay *r = s->relay;
	pthread_mutex_lock(&r->mu);
	if (r->fn)
		r->fn(r->ctx, ln);
	pthread_mutex_unlock(&r->mu);
}

/* The log service the loader gives a link's plugin (ms_log_fn). */
static void
relay_line(void *ctx, int level, const char *plugin, const char *msg)
{
	relay_slot *s = ctx;
	ms_chain_log_line ln = { s->link, level, plugin, msg, 0 };
	relay_send(s, &ln);
}

/* Lines a link's plugin host could not send. */
static void
relay_lost(void *ctx, uint64_t n)
{
	relay_slot *s = ctx;
	ms_chain_log_line ln = { s->link, MS_PLUGIN_LOG_WARN, "", NULL, n };
	relay_send(s, &ln);
}

static log_relay *
relay_new(ms_chain_log_fn fn, void *ctx)
{
	log_relay *r = ms_mem_calloc(NULL, 1, sizeof(*r));
	if (!r)
		return NULL;
	pthread_mutex_init(&r->mu, NULL);
	r->fn = fn;
	r->ctx = ctx;
	for (size_t i = 0; i < MS_CHAIN_MAX_LINKS; i++)
		r->slot[i] = (relay_slot){ r, i };
	return r;
}

/* Mute r (the sink is not called again once this returns) and free it
 * unless a plugin left running may still log through it. */
static void
relay_close(log_relay *r, bool left_running)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->mu);
	r->fn = NULL;
	pthread_mutex_unlock(&r->mu);
	if (left_running)
		return;
	pthread_mutex_destroy(&r->mu);
	ms_mem_free(NULL, r, sizeof(*r));
}

static void
worker_free(worker *w)
{
	ms_mem *mem = w->chain->mem;
	ms_mem_free(mem, w->verdict, w->vcap);
	if (w->config_size)
		ms_mem_free(mem, w->config, w->config_size);
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
	ms_mem_free(mem, w, sizeof(*w));
}

static void *
worker_main(void *arg)
{
	worker *w = arg;
	ms_rusage_name_thread("ms-plugin-call");
	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (w->state != W_REQUEST && w->state != W_QUIT)
			pthread_cond_wait(&w->cv, &w->mu);
		if (w->state == W_QUIT)
			break;
		enum worker_job job = w->job;
		pthread_mutex_unlock(&w->mu);
		int64_t ret;
		if (job == JOB_OPEN) {
			ret = ms__plugin_load_file(w->plugin, &w->open_eb);
			atomic_store(&w->stage, STAGE_OPEN);
			if (ret == 0)
				ret = ms__plugin_open(w->plugin, w->config,
				                      &w->open_eb);
		} else if (job == JOB_STATS) {
			ret = (int64_t)ms_plugin_stats(w->plugin, w->stats,
			                               WORKER_STATS);
		} else {
			ret = ms_plugin_decide_direct(w->plugin,
			                              ms_batch_view(w->batch),
			                              w->verdict, w->n);
		}
		pthread_mutex_lock(&w->mu);
		w->ret = ret;
		if (w->abandoned) {
			/* Nobody waits: this thread owns everything now,
			 * unless the chain is gone (invariant 6). The frees
			 * run under ctl->mu so the chain's close cannot
			 * finish, and its allocator go, half-way. */
			pthread_mutex_unlock(&w->mu);
			abandon_ctl *a = w->ctl;
			pthread_mutex_lock(&a->mu);
			if (!a->closed) {
				ms_batch_release(w->batch);
				ms_plugin_unload(w->plugin);
				worker_free(w);
			}
			a->running--;
			pthread_cond_broadcast(&a->cv);
			abandon_ctl_put_locked(a);
			return NULL;
		}
		w->state = W_DONE;
		pthread_cond_broadcast(&w->cv);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/* A new idle worker for p, or NULL with why in eb (no memory for it, or
 * its thread did not start), the message ending in what_for. */
static worker *
worker_start(struct ms_chain *c, ms_plugin *p, const char *what_for,
             ms_errbuf *eb)
{
	worker *w = ms_mem_calloc(c->mem, 1, sizeof(*w));
	if (!w) {
		ms_fail(eb, MS_ERR_NOMEM,
		        "out of memory for a worker%s (%zu bytes)", what_for,
		        sizeof(*w));
		return NULL;
	}
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, &ca);
	pthread_condattr_destroy(&ca);
	w->state = W_IDLE;
	w->plugin = p;
	w->chain = c;
	int e = ms_thread_start(&w->thread, PLUGIN_STACK, worker_main, w);
	if (e) {
		ms_thread_fail(eb, MS_ERR_NOMEM, e,
		               "could not start a worker thread%s", what_for);
		pthread_cond_destroy(&w->cv);
		pthread_mutex_destroy(&w->mu);
		ms_mem_free(c->mem, w, sizeof(*w));
		return NULL;
	}
	return w;
}

/* Hand w the request set up in it and wait for it until deadline (the
 * monotonic clock, ns). Call with w->mu held; it stays held. True when
 * the call returned (w->state is W_DONE). */
static bool
worker_call_locked(worker *w, int64_t deadline)
{
	struct timespec dl = ms_mono_timespec(deadline);
	w->state = W_REQUEST;
	pthread_cond_broadcast(&w->cv);
	while (w->state != W_DONE) {
		int rc = pthread_cond_timedwait(&w->cv, &w->mu, &dl);
		if (rc == ETIMEDOUT && w->state != W_DONE)
			break;
	}
	return w->state == W_DONE;
}

/* Leave l's worker to the call that overran (invariant 2): it keeps a
 * plugin reference until the call returns, and counts in the chain's
 * abandon record. Call with w->mu held; unlocks it. */
static void
worker_abandon(struct ms_chain *c, link_t *l)
{
	worker *w = l->w;
	w->abandoned = true;
	ms__plugin_retain(l->plugin);
	w->ctl = c->ctl;
	pthread_mutex_lock(&c->ctl->mu);
	c->ctl->refs++;
	c->ctl->running++;
	pthread_mutex_unlock(&c->ctl->mu);
	pthread_detach(w->thread);
	pthread_mutex_unlock(&w->mu);
	l->w = NULL;
}

static void
worker_stop(worker *w)
{
	pthread_mutex_lock(&w->mu);
	w->state = W_QUIT;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->thread, NULL);
	worker_free(w);
}

/* ------------------------------------------------------------------ */
/* Chain                                                               */

_Static_assert(MS_CHAIN_MAX_LINKS <= 16,
               "ms_chain_call.failed_mask has a bit per link");

static const uint64_t hist_bounds_ns[MS_LINK_HIST_BUCKETS - 1] = {
	250000ull,    500000ull,    1000000ull,   2500000ull,
	5000000ull,   10000000ull,  25000000ull,  50000000ull,
	100000000ull, 250000000ull, 500000000ull, 1000000000ull,
};

uint64_t
ms_link_hist_bound_ns(size_t i)
{
	return i < MS_LINK_HIST_BUCKETS - 1 ? hist_bounds_ns[i] : UINT64_MAX;
}

static const char *const link_result_names[MS_LINK_RESULT_COUNT] = {
	[MS_LINK_OK] = "ok",
	[MS_LINK_ERROR] = "error",
	[MS_LINK_WRONG_LENGTH] = "wrong_length",
	[MS_LINK_BAD_VALUE] = "bad_value",
	[MS_LINK_TIMEOUT] = "timeout",
	[MS_LINK_CIRCUIT_OPEN] = "circuit_open",
	[MS_LINK_HOST_ERROR] = "host_error",
	[MS_LINK_CRASHED] = "crashed",
};

const char *
ms_link_result_name(enum ms_link_result r)
{
	return MS_ENUM_NAME(link_result_names, r, "unknown");
}

static const char *const host_mode_names[] = {
	[MS_PLUGIN_HOST_INPROC] = "inproc",
	[MS_PLUGIN_HOST_PROCESS] = "process",
};

const char *
ms_plugin_host_mode_name(enum ms_plugin_host_mode m)
{
	/* Any value but process is the default, in-process hosting. */
	return MS_ENUM_NAME(host_mode_names, m, "inproc");
}

bool
ms_plugin_host_mode_parse(const char *s, enum ms_plugin_host_mode *out)
{
	int v = MS_ENUM_PARSE(host_mode_names, s);
	if (v < 0)
		return false;
	*out = (enum ms_plugin_host_mode)v;
	return true;
}

/* Load l's plugin (dlopen, with the library's constructors, and its entry
 * point) and call its open() on a worker started for it, waiting at most
 * timeout_ns for both, and stop the worker once they have returned. A
 * load or open() that overruns is abandoned with its worker, which takes
 * over l's config (invariant 2). */
static int
link_open(ms_chain *c, link_t *l, uint64_t timeout_ns, ms_errbuf *eb)
{
	ms_errbuf why;
	worker *w = worker_start(c, l->plugin, " for its open()", &why);
	if (!w)
		return ms_fail(eb, MS_ERR_NOMEM, "plugin %s (%s): %s", l->path,
		               ms_plugin_name(l->plugin), why.msg);
	l->w = w;
	pthread_mutex_lock(&w->mu);
	w->job = JOB_OPEN;
	w->config = l->config;
	if (!worker_call_locked(w, ms_mono_ns() + (int64_t)timeout_ns)) {
		bool loading = atomic_load(&w->stage) == STAGE_LOAD;
		w->config_size = l->config_size;
		l->config = NULL;
		worker_abandon(c, l);
		if (loading) /* see ms_chain_open on MS_ERR_TIMEOUT */
			return ms_fail(eb, MS_ERR_TIMEOUT,
			               "plugin %s: loading it (dlopen, its "
			               "library constructors, its entry point) "
			               "did not return within %.3f s; left "
			               "running, the plugin is not used",
			               l->path, (double)timeout_ns / 1e9);
		return ms_fail(eb, MS_ERR_PLUGIN,
		               "plugin %s (%s): open() did not return within "
		               "%.3f s; left running, the plugin is not used",
		               l->path, ms_plugin_name(l->plugin),
		               (double)timeout_ns / 1e9);
	}
	int rc = (int)w->ret;
	if (rc)
		*eb = w->open_eb;
	pthread_mutex_unlock(&w->mu);
	worker_stop(w);
	l->w = NULL;
	return rc;
}

/* MS_ERR_NOMEM for ms_chain_open: `bytes` for `what` could not be had. */
static int
nomem(ms_errbuf *eb, const char *what, size_t bytes)
{
	return ms_fail(eb, MS_ERR_NOMEM,
	               "chain: out of memory for %s (%zu bytes)", what, bytes);
}

int
ms_chain_open(ms_chain **out, const ms_chain_link_spec *links, size_t n,
              const ms_chain_opts *opts, ms_errbuf *eb)
{
	static const ms_chain_opts none;
	*out = NULL;
	if (!opts)
		opts = &none;
	if (n > MS_CHAIN_MAX_LINKS)
		return ms_fail(eb, MS_ERR_RANGE, "chain: %zu links, at most %d",
		               n, MS_CHAIN_MAX_LINKS);
	ms_chain *c = ms_mem_calloc(opts->mem, 1, sizeof(*c));
	if (!c)
		return nomem(eb, "its state", sizeof(*c));
	c->mem = opts->mem;
	c->timeout_ns = opts->decide_timeout_ns ? opts->decide_timeout_ns
	                                        : 5000000000ull;
	c->circuit_after = opts->circuit_after ? opts->circuit_after : 3;
	if (c->circuit_after > 32) /* the rate window is 2N batches */
		c->circuit_after = 32;
	c->close_grace_ns =
	        opts->close_grace_ns ? opts->close_grace_ns : 2000000000ull;
	uint64_t open_timeout_ns = opts->open_timeout_ns
	                                   ? opts->open_timeout_ns
	                                   : MS_CHAIN_OPEN_TIMEOUT_NS;
	c->open_timeout_ns = open_timeout_ns;
	pthread_mutex_init(&c->mu, NULL);
	c->host_mode = opts->host_mode;
	if (c->host_mode == MS_PLUGIN_HOST_PROCESS && n) {
		if (!opts->host_exe || !*opts->host_exe) {
			ms_chain_close(c);
			return ms_fail(eb, MS_ERR_INVAL,
			               "chain: process plugin host without a "
			               "host executable");
		}
		c->host_exe_size = strlen(opts->host_exe) + 1;
		c->host_exe =
		        ms_mem_dup(c->mem, opts->host_exe, c->host_exe_size);
		if (!c->host_exe) {
			size_t want = c->host_exe_size;
			c->host_exe_size = 0;
			ms_chain_close(c);
			return nomem(eb, "the host executable's path", want);
		}
		c->host_mem_max = opts->host_mem_max;
		if (!c->host_mem_max) {
			ms_limits lim;
			ms_limits_detect(&lim, NULL, NULL);
			c->host_mem_max = lim.mem / 4;
		}
	}
	c->ctl = abandon_ctl_new();
	if (!c->ctl) {
		ms_chain_close(c);
		return nomem(eb, "its abandon record", sizeof(abandon_ctl));
	}
	c->relay = relay_new(opts->log, opts->log_ctx);
	if (!c->relay) {
		ms_chain_close(c);
		return nomem(eb, "its log relay", sizeof(log_relay));
	}
	if (n) {
		c->links = ms_mem_calloc(c->mem, n, sizeof(*c->links));
		if (!c->links) {
			ms_chain_close(c);
			return nomem(eb, "its links", n * sizeof(*c->links));
		}
		c->nalloc = n;
	}
	for (size_t i = 0; i < n; i++) {
		ms_plugin_load_opts lo = { links[i].config, c->mem, relay_line,
			                   &c->relay->slot[i] };
		ms_errbuf sub;
		int rc = ms__plugin_new(&c->links[i].plugin, links[i].path, &lo,
		                        &sub);
		if (rc) {
			ms_chain_close(c);
			return ms_fail(eb, rc, "chain link %zu: %s", i + 1,
			               sub.msg);
		}
		c->n = i + 1;
		link_t *l = &c->links[i];
		const char *cfg = links[i].config ? links[i].config : "";
		l->path_size = strlen(links[i].path) + 1;
		l->config_size = strlen(cfg) + 1;
		l->path = ms_mem_dup(c->mem, links[i].path, l->path_size);
		l->config = ms_mem_dup(c->mem, cfg, l->config_size);
		if (!l->path || !l->config) {
			bool path = !l->path;
			size_t want = path ? l->path_size : l->config_size;
			ms_chain_close(c);
			return ms_fail(
			        eb, MS_ERR_NOMEM,
			        "chain link %zu: out of memory for a copy "
			        "of its %s (%zu bytes)",
			        i + 1, path ? "path" : "config", want);
		}
		if ((rc = link_open(c, l, open_timeout_ns, &sub))) {
			ms_chain_close(c);
			return ms_fail(eb, rc, "chain link %zu: %s", i + 1,
			               sub.msg);
		}
		snprintf(c->links[i].st.name, sizeof(c->links[i].st.name), "%s",
		         ms_plugin_name(c->links[i].plugin));
	}
	c->n = n;
	*out = c;
	return 0;
}

/* A close() call on a thread of its own (link_unload). Plain malloc
 * memory: it outlives the chain when close() never returns. */
typedef struct closer {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	ms_plugin *plugin;
	bool done;
	unsigned refs; /* the waiter's and the thread's */
} closer;

static void
closer_put_locked(closer *k)
{
	bool last = --k->refs == 0;
	pthread_mutex_unlock(&k->mu);
	if (last) {
		pthread_cond_destroy(&k->cv);
		pthread_mutex_destroy(&k->mu);
		ms_mem_free(NULL, k, sizeof(*k));
	}
}

static void *
closer_main(void *arg)
{
	closer *k = arg;
	ms_rusage_name_thread("ms-plugin-close");
	ms__plugin_close_state(k->plugin);
	pthread_mutex_lock(&k->mu);
	k->done = true;
	pthread_cond_broadcast(&k->cv);
	closer_put_locked(k);
	return NULL;
}

static void chain_log(ms_chain *c, const link_t *l, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* Tell the chain's log sink about link l (an error: something the run
 * should show). */
static void
chain_log(ms_chain *c, const link_t *l, const char *fmt, ...)
{
	if (!c->relay)
		return;
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	relay_slot *s = &c->relay->slot[(size_t)(l - c->links)];
	ms_chain_log_line ln = { s->link, MS_PLUGIN_LOG_ERROR, l->st.name, msg,
		                 0 };
	relay_send(s, &ln);
}

/* Drop the chain's reference to l's plugin. When it is the last, the
 * plugin's close() runs on a thread of its own, waited for at most
 * close_grace_ns: one that overruns is left running and logged, and the
 * plugin is then never dlclose()d nor freed (it may still run its code),
 * so that a hanging close() never holds the chain's close. True when it
 * did (the plugin is left running). */
static bool
link_unload(ms_chain *c, link_t *l)
{
	ms_plugin *p = l->plugin;
	if (!ms__plugin_drop(p))
		return false; /* an abandoned call closes it (invariant 1) */
	if (!ms__plugin_has_close(p)) {
		ms__plugin_free(p);
		return false;
	}
	closer *k = ms_mem_calloc(NULL, 1, sizeof(*k));
	pthread_t t;
	if (k) {
		pthread_condattr_t ca;
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_mutex_init(&k->mu, NULL);
		pthread_cond_init(&k->cv, &ca);
		pthread_condattr_destroy(&ca);
		k->plugin = p;
		k->refs = 2;
	}
	int e = k ? ms_thread_start(&t, PLUGIN_STACK, closer_main, k) : 0;
	if (!k || e) {
		ms_errbuf why;
		if (k) {
			pthread_cond_destroy(&k->cv);
			pthread_mutex_destroy(&k->mu);
			ms_mem_free(NULL, k, sizeof(*k));
			ms_thread_fail(
			        &why, MS_ERR_IO, e,
			        "could not start a thread for its close()");
		} else {
			ms_fail(&why, MS_ERR_NOMEM,
			        "out of memory for the record of its close() "
			        "thread (%zu bytes)",
			        sizeof(*k));
		}
		chain_log(c, l,
		          "plugin %s (%s): %s; close() runs on the closing "
		          "thread, without a time bound",
		          l->path ? l->path : "?", l->st.name, why.msg);
		ms__plugin_close_state(p);
		ms__plugin_free(p);
		return false;
	}
	struct timespec dl =
	        ms_mono_timespec(ms_mono_ns() + (int64_t)c->close_grace_ns);
	pthread_mutex_lock(&k->mu);
	while (!k->done &&
	       pthread_cond_timedwait(&k->cv, &k->mu, &dl) != ETIMEDOUT)
		;
	bool done = k->done;
	closer_put_locked(k);
	if (done) {
		pthread_join(t, NULL);
		ms__plugin_free(p);
		return false;
	}
	pthread_detach(t);
	chain_log(c, l,
	          "plugin %s (%s): close() did not return within %.3f s; "
	          "left running, the plugin stays loaded",
	          l->path ? l->path : "?", l->st.name,
	          (double)c->close_grace_ns / 1e9);
	return true;
}

void
ms_chain_close(ms_chain *c)
{
	if (!c)
		return;
	bool left_running = false;
	for (size_t i = 0; i < c->n; i++) {
		link_t *l = &c->links[i];
		if (l->w)
			worker_stop(l->w);
		if (l->host) {
			char why[200] = "";
			if (ms__phost_stop(l->host, c->close_grace_ns, why,
			                   sizeof(why)))
				chain_log(c, l,
				          "plugin %s (%s): plugin host %s",
				          l->path ? l->path : "?", l->st.name,
				          why);
		}
		left_running |= link_unload(c, l);
		if (l->path)
			ms_mem_free(c->mem, l->path, l->path_size);
		if (l->config)
			ms_mem_free(c->mem, l->config, l->config_size);
		ms_mem_free(c->mem, l->tmp, l->tmpcap);
	}
	if (c->ctl) {
		/* Wait a bounded time for abandoned calls, then leave the
		 * rest behind (invariants 5 and 6). */
		abandon_ctl *a = c->ctl;
		struct timespec dl = ms_mono_timespec(
		        ms_mono_ns() + (int64_t)c->close_grace_ns);
		pthread_mutex_lock(&a->mu);
		while (a->running > 0 &&
		       pthread_cond_timedwait(&a->cv, &a->mu, &dl) != ETIMEDOUT)
			;
		left_running |= a->running > 0;
		a->closed = true;
		abandon_ctl_put_locked(a);
	}
	relay_close(c->relay, left_running);
	pthread_mutex_destroy(&c->mu);
	if (c->host_exe)
		ms_mem_free(c->mem, c->host_exe, c->host_exe_size);
	if (c->links)
		ms_mem_free(c->mem, c->links, c->nalloc * sizeof(*c->links));
	ms_mem_free(c->mem, c, sizeof(*c));
}

size_t
ms_chain_len(const ms_chain *c)
{
	return c ? c->n : 0;
}

ms_plugin *
ms_chain_plugin(const ms_chain *c, size_t i)
{
	return i < c->n ? c->links[i].plugin : NULL;
}

uint32_t
ms_chain_projection(const ms_chain *c)
{
	uint32_t p = 0;
	for (size_t i = 0; c && i < c->n; i++)
		p |= ms_plugin_projection(c->links[i].plugin);
	return p;
}

void
ms_chain_link_stats(const ms_chain *c, size_t i, ms_link_stats *out)
{
	ms_chain *m = (ms_chain *)c;
	pthread_mutex_lock(&m->mu);
	if (i < c->n)
		*out = c->links[i].st;
	else
		memset(out, 0, sizeof(*out));
	pthread_mutex_unlock(&m->mu);
}

/* The plugin's stats() on l's worker (started if l has none), waited for
 * at most the open timeout: one that overruns is abandoned like a Decide
 * call and the link's counters read as none from then on. Call with
 * c->mu held. */
static size_t
link_plugin_stats(ms_chain *c, link_t *l, ms_plugin_stat *out, size_t cap)
{
	if (l->stats_dead)
		return 0;
	if (!l->w && !(l->w = worker_start(c, l->plugin, "", NULL)))
		return 0;
	worker *w = l->w;
	pthread_mutex_lock(&w->mu);
	w->job = JOB_STATS;
	bool done = worker_call_locked(w, ms_mono_ns() +
	                                          (int64_t)c->open_timeout_ns);
	if (!done) {
		l->stats_dead = true;
		worker_abandon(c, l);
		chain_log(c, l,
		          "plugin %s (%s): stats() did not return within "
		          "%.3f s; left running, its counters are not read "
		          "again",
		          l->path, l->st.name,
		          (double)c->open_timeout_ns / 1e9);
		return 0;
	}
	w->state = W_IDLE;
	size_t k = (size_t)w->ret;
	for (size_t j = 0; j < k && j < cap && j < WORKER_STATS; j++)
		out[j] = w->stats[j];
	pthread_mutex_unlock(&w->mu);
	return k;
}

size_t
ms_chain_link_plugin_stats(const ms_chain *c, size_t i, ms_plugin_stat *out,
                           size_t cap, unsigned *host_starts)
{
	ms_chain *m = (ms_chain *)c;
	size_t k = 0;
	pthread_mutex_lock(&m->mu);
	if (host_starts)
		*host_starts = i < c->n ? c->links[i].host_starts : 0;
	if (i < c->n && c->host_mode == MS_PLUGIN_HOST_PROCESS) {
		const ms__phost_stats *hs = &c->links[i].hstats;
		k = hs->n;
		for (size_t j = 0; j < k && j < cap; j++)
			out[j] = (ms_plugin_stat){ hs->name[j], hs->value[j] };
	} else if (i < c->n) {
		k = link_plugin_stats(m, &m->links[i], out, cap);
	}
	pthread_mutex_unlock(&m->mu);
	return k;
}

bool
ms_chain_circuit_is_open(const ms_chain *c)
{
	ms_chain *m = (ms_chain *)c;
	pthread_mutex_lock(&m->mu);
	bool open = c->circuit_open;
	pthread_mutex_unlock(&m->mu);
	return open;
}

const char *
ms_chain_circuit_reason(const ms_chain *c)
{
	return c->circuit_reason;
}

size_t
ms_chain_abandoned(const ms_chain *c)
{
	abandon_ctl *a = c->ctl;
	pthread_mutex_lock(&a->mu);
	size_t n = a->running;
	pthread_mutex_unlock(&a->mu);
	return n;
}

static void record(link_t *l, enum ms_link_result r, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

static void
record(link_t *l, enum ms_link_result r, const char *fmt, ...)
{
	l->st.results[r]++;
	l->st.last_result = r;
	if (fmt) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(l->st.last_fail, sizeof(l->st.last_fail), fmt, ap);
		va_end(ap);
	}
}

static void
time_call(link_t *l, uint64_t ns)
{
	l->st.total_ns += ns;
	if (ns > l->st.max_ns)
		l->st.max_ns = ns;
	size_t b = 0;
	while (b < MS_LINK_HIST_BUCKETS - 1 && ns > hist_bounds_ns[b])
		b++;
	l->st.hist[b]++;
}

/* The bytes grow() asks for to hold `need`. */
static size_t
grow_size(size_t need)
{
	return need < 64 ? 64 : need;
}

static int
grow(ms_mem *mem, uint8_t **p, size_t *cap, size_t need)
{
	if (need <= *cap && *p)
		return 0;
	size_t nc = grow_size(need);
	uint8_t *q = ms_mem_realloc(mem, *p, *cap, nc);
	if (!q)
		return MS_ERR_NOMEM;
	*p = q;
	*cap = nc;
	return 0;
}

/* No memory to grow a verdict buffer to `bytes` for a batch of n traces:
 * the call fails open. */
static enum ms_link_result
verdicts_nomem(link_t *l, size_t n, size_t bytes)
{
	record(l, MS_LINK_HOST_ERROR,
	       "out of memory for the verdicts of %zu traces (%zu bytes)", n,
	       grow_size(bytes));
	return MS_LINK_HOST_ERROR;
}

/* Did a call write into the GUARD_LEN bytes after its verdicts? */
static bool
guard_broken(const uint8_t *guard)
{
	for (size_t i = 0; i < GUARD_LEN; i++)
		if (guard[i] != GUARD_BYTE)
			return true;
	return false;
}

/* A call that wrote past its n verdicts: whatever it returned, its
 * verdicts are not used (the wrong length, as a count other than n). */
static enum ms_link_result
record_overrun(link_t *l, size_t n)
{
	record(l, MS_LINK_WRONG_LENGTH,
	       "Decide wrote past its %zu verdicts (into the guard bytes "
	       "after them)",
	       n);
	return MS_LINK_WRONG_LENGTH;
}

/* Check what Decide returned and wrote into l->tmp. */
static enum ms_link_result
check_verdicts(link_t *l, int64_t ret, size_t n)
{
	if (ret < 0) {
		record(l, MS_LINK_ERROR, "Decide returned error %lld",
		       (long long)ret);
		return MS_LINK_ERROR;
	}
	if ((uint64_t)ret != n) {
		record(l, MS_LINK_WRONG_LENGTH,
		       "Decide returned %lld verdicts for %zu traces",
		       (long long)ret, n);
		return MS_LINK_WRONG_LENGTH;
	}
	for (size_t i = 0; i < n; i++) {
		if (l->tmp[i] > 1) {
			record(l, MS_LINK_BAD_VALUE,
			       "verdict %zu is %u, expected 0 or 1", i,
			       (unsigned)l->tmp[i]);
			return MS_LINK_BAD_VALUE;
		}
	}
	return MS_LINK_OK;
}

/*
 * Run one link. On success its checked verdicts are in l->tmp and the
 * result is MS_LINK_OK; otherwise the link failed open.
 */
static enum ms_link_result
run_link(ms_chain *c, link_t *l, ms_batch *b, size_t n, uint64_t *ns)
{
	if (!l->w) {
		ms_errbuf why;
		l->w = worker_start(c, l->plugin, "", &why);
		if (!l->w) {
			record(l, MS_LINK_HOST_ERROR, "%s", why.msg);
			return MS_LINK_HOST_ERROR;
		}
	}
	worker *w = l->w;
	if (grow(c->mem, &w->verdict, &w->vcap, n + GUARD_LEN))
		return verdicts_nomem(l, n, n + GUARD_LEN);
	if (grow(c->mem, &l->tmp, &l->tmpcap, n))
		return verdicts_nomem(l, n, n);
	memset(w->verdict, 0xA5, n); /* unwritten bytes read as bad values */
	memset(w->verdict + n, GUARD_BYTE, GUARD_LEN);
	int64_t t0 = ms_mono_ns();
	l->st.traces += n;
	pthread_mutex_lock(&w->mu);
	w->job = JOB_DECIDE;
	w->batch = b;
	w->n = n;
	if (!worker_call_locked(w, t0 + (int64_t)c->timeout_ns)) {
		/* Abandon: the worker keeps the batch, the verdict buffer
		 * and a plugin reference until the call returns. */
		ms_batch_retain(b);
		ms__batch_abandon(b);
		worker_abandon(c, l);
		*ns = (uint64_t)(ms_mono_ns() - t0);
		time_call(l, *ns);
		record(l, MS_LINK_TIMEOUT,
		       "Decide overran the %.3f ms timeout on %zu traces; "
		       "call abandoned",
		       (double)c->timeout_ns / 1e6, n);
		return MS_LINK_TIMEOUT;
	}
	w->state = W_IDLE;
	w->batch = NULL;
	int64_t ret = w->ret;
	memcpy(l->tmp, w->verdict, n);
	bool overran = guard_broken(w->verdict + n);
	pthread_mutex_unlock(&w->mu);
	*ns = (uint64_t)(ms_mono_ns() - t0);
	time_call(l, *ns);
	if (overran)
		return record_overrun(l, n);
	return check_verdicts(l, ret, n);
}

/* A process-mode link's stats() overran timeout_ns in its host: said once
 * in the plugin log, naming the plugin and the call; its next hosts never
 * call it (the counters read as the last ones read), so that it costs one
 * wait of the timeout, not one for every host started. c->mu held. */
static void
host_stats_dead(ms_chain *c, link_t *l, uint64_t timeout_ns)
{
	if (l->stats_dead)
		return;
	l->stats_dead = true;
	chain_log(c, l,
	          "plugin %s (%s): stats() did not return within %.3f s in "
	          "its plugin host; host killed, its counters are not read "
	          "again",
	          l->path, l->st.name, (double)timeout_ns / 1e9);
}

/* The stats() a host runs after Decide hung or died (why, from
 * ms__phost_decide) once Decide had returned its verdicts: they stand,
 * the host is gone, and the link's next hosts never call stats(). Said
 * once, naming the plugin. c->mu held. */
static void
host_stats_after_decide(ms_chain *c, link_t *l, const char *why)
{
	ms__phost_free(l->host);
	l->host = NULL;
	if (l->stats_dead)
		return;
	l->stats_dead = true;
	chain_log(c, l,
	          "plugin %s (%s): stats() after Decide %s; its verdicts "
	          "stand, its counters are not read again",
	          l->path, l->st.name, why);
}

/* Start l's host: loading, open() and the first stats() in the new host
 * get the open timeout; a host that hangs or dies there counts as a
 * timeout or a crash (toward the circuit), except in stats(): a stats()
 * that hangs costs no call, in process as here (it is not the plugin's
 * verdict: plugin_health does not count it): the host is killed, the
 * plugin log says so once, and the link's hosts no longer call it. Then
 * MS_LINK_OK with no host: the caller starts one again. */
static enum ms_link_result
link_host_start(ms_chain *c, link_t *l)
{
	ms_errbuf eb = { "" };
	enum ms__phost_result how;
	relay_slot *slot = &c->relay->slot[(size_t)(l - c->links)];
	ms__phost_log hl = { relay_line, relay_lost, slot, l->st.name };
	bool in_stats = false;
	ms__phost_start_opts so = { c->open_timeout_ns, c->host_mem_max,
		                    &hl,       l->stats_dead,
		                    &in_stats, l->plugin };
	if (ms__phost_start(&l->host, c->host_exe, l->path, l->config, &so,
	                    &how, &eb) == 0) {
		l->host_starts++;
		return MS_LINK_OK;
	}
	if (in_stats && how == MS__PHOST_TIMEOUT) {
		host_stats_dead(c, l, c->open_timeout_ns);
		return MS_LINK_OK;
	}
	enum ms_link_result r = how == MS__PHOST_TIMEOUT   ? MS_LINK_TIMEOUT
	                        : how == MS__PHOST_CRASHED ? MS_LINK_CRASHED
	                                                   : MS_LINK_HOST_ERROR;
	record(l, r, "%s", eb.msg);
	return r;
}

/* run_link in process mode: the call goes to the link's host process,
 * started first if the link has none (at the start, or after a crash or
 * a timeout killed the previous one). */
static enum ms_link_result
run_link_process(ms_chain *c, link_t *l, ms_batch *b, size_t n, uint64_t *ns)
{
	if (grow(c->mem, &l->tmp, &l->tmpcap, n))
		return verdicts_nomem(l, n, n);
	if (!l->host) {
		enum ms_link_result r = link_host_start(c, l);
		if (r == MS_LINK_OK && !l->host)
			r = link_host_start(c, l); /* without stats() */
		if (r != MS_LINK_OK)
			return r;
	}
	l->st.traces += n;
	int64_t t0 = ms_mono_ns(), ret = 0;
	char why[160] = "";
	enum ms__phost_result r =
	        ms__phost_decide(l->host, ms_batch_view(b), l->tmp, n,
	                         c->timeout_ns, &ret, &l->hstats, why,
	                         sizeof(why));
	*ns = (uint64_t)(ms_mono_ns() - t0);
	time_call(l, *ns);
	/* Decide (a hang or death in the stats() after it is
	 * AFTER_DECIDE). */
	const char *ph = ms__phost_phase(l->host);
	if (r == MS__PHOST_TIMEOUT || r == MS__PHOST_CRASHED) {
		ms__phost_free(l->host);
		l->host = NULL;
	}
	switch (r) {
	case MS__PHOST_TIMEOUT:
		record(l, MS_LINK_TIMEOUT,
		       "%s overran the %.3f ms Decide timeout on %zu traces; "
		       "plugin host killed",
		       ph, (double)c->timeout_ns / 1e6, n);
		return MS_LINK_TIMEOUT;
	case MS__PHOST_CRASHED:
		record(l, MS_LINK_CRASHED,
		       "plugin host %s in %s on %zu traces (its host lets "
		       "it allocate %.0f MiB)",
		       why, ph, n, (double)c->host_mem_max / 1048576.0);
		return MS_LINK_CRASHED;
	case MS__PHOST_ERROR:
		record(l, MS_LINK_HOST_ERROR, "plugin host: %s", why);
		return MS_LINK_HOST_ERROR;
	case MS__PHOST_OVERRUN:
		return record_overrun(l, n);
	case MS__PHOST_AFTER_DECIDE:
		host_stats_after_decide(c, l, why);
		break;
	case MS__PHOST_OK:
		break;
	}
	enum ms_link_result res = check_verdicts(l, ret, n);
	if (res == MS_LINK_ERROR) {
		/* A plugin refused memory over its host's cap often says
		 * no more than that it failed. */
		size_t k = strlen(l->st.last_fail);
		snprintf(l->st.last_fail + k, sizeof(l->st.last_fail) - k,
		         " (its host lets it allocate %.0f MiB)",
		         (double)c->host_mem_max / 1048576.0);
	}
	return res;
}

/* Open c's circuit (invariant 4) because of link l's call. */
static void
circuit_trip(ms_chain *c, const link_t *l, const char *rate)
{
	c->circuit_open = true;
	if (rate[0])
		snprintf(c->circuit_reason, sizeof(c->circuit_reason),
		         "%s (last on link '%s')", rate, l->st.name);
	else
		snprintf(c->circuit_reason, sizeof(c->circuit_reason),
		         "%u consecutive Decide timeouts or crashes (last on "
		         "link '%s')",
		         c->consecutive_timeouts, l->st.name);
}

/* The rate rule of invariant 4, after a batch that reached a link: bad
 * is the last link whose call in it timed out or crashed (NULL: none). */
static void
circuit_rate(ms_chain *c, const link_t *bad)
{
	unsigned window = 2 * c->circuit_after, k = 0;
	c->recent_batches = (c->recent_batches << 1) | (bad ? 1u : 0u);
	if (window < 64)
		c->recent_batches &= (1ull << window) - 1;
	for (uint64_t m = c->recent_batches; m; m &= m - 1)
		k++;
	if (!bad || k < c->circuit_after)
		return;
	char rate[96];
	snprintf(rate, sizeof(rate),
	         "Decide timeouts or crashes in %u of the last %u batches", k,
	         window);
	circuit_trip(c, bad, rate);
}

static int chain_decide_locked(ms_chain *c, ms_batch *b, uint8_t *keep,
                               ms_chain_call *res);

int
ms_chain_decide(ms_chain *c, ms_batch *b, uint8_t *keep, ms_chain_call *res)
{
	if (!c)
		return MS_ERR_INVAL;
	pthread_mutex_lock(&c->mu);
	int rc = chain_decide_locked(c, b, keep, res);
	pthread_mutex_unlock(&c->mu);
	return rc;
}

static int
chain_decide_locked(ms_chain *c, ms_batch *b, uint8_t *keep, ms_chain_call *res)
{
	ms_chain_call dummy;
	if (!res)
		res = &dummy;
	memset(res, 0, sizeof(*res));
	if (!c || !b || !keep)
		return MS_ERR_INVAL;
	size_t n = ms_batch_view(b)->ntraces;
	res->ntraces = n;
	memset(keep, 1, n);
	if (n == 0)
		return 0;
	bool timed_out = false;
	const link_t *bad = NULL; /* the last link that timed out, crashed */
	for (size_t i = 0; i < c->n; i++) {
		link_t *l = &c->links[i];
		if (c->circuit_open) {
			record(l, MS_LINK_CIRCUIT_OPEN, "circuit open: %s",
			       c->circuit_reason);
			res->links_failed++;
			res->failed_mask |= (uint16_t)(1u << i);
			continue;
		}
		/* A call, whatever becomes of it: one whose worker or host
		 * does not start, or that has no memory for its verdicts,
		 * fails open as one that reached the plugin does, and has
		 * its result; only an open circuit skips the link. */
		uint64_t ns = 0;
		l->st.calls++;
		res->called_mask |= (uint16_t)(1u << i);
		enum ms_link_result r =
		        c->host_mode == MS_PLUGIN_HOST_PROCESS
		                ? run_link_process(c, l, b, n, &ns)
		                : run_link(c, l, b, n, &ns);
		res->decide_ns += ns;
		if (r == MS_LINK_TIMEOUT)
			res->timeout_mask |= (uint16_t)(1u << i);
		if (r == MS_LINK_TIMEOUT || r == MS_LINK_CRASHED) {
			timed_out = true;
			bad = l;
			if (++c->consecutive_timeouts >= c->circuit_after)
				circuit_trip(c, l, "");
		}
		if (r != MS_LINK_OK) {
			res->links_failed++;
			res->failed_mask |= (uint16_t)(1u << i);
			continue;
		}
		record(l, MS_LINK_OK, NULL);
		res->links_ok++;
		for (size_t k = 0; k < n; k++) {
			keep[k] &= l->tmp[k];
			if (l->tmp[k])
				l->st.kept++;
			else
				l->st.dropped++;
		}
	}
	/* A batch in which no link timed out ends a timeout streak. */
	if (!timed_out && !c->circuit_open)
		c->consecutive_timeouts = 0;
	if (res->called_mask && !c->circuit_open)
		circuit_rate(c, bad);
	if (c->circuit_open) {
		memset(keep, 1, n);
		res->circuit_open = true;
		res->failed_mask = (uint16_t)((1u << c->n) - 1);
	}
	for (size_t k = 0; k < n; k++)
		res->kept += keep[k];
	return 0;
}
