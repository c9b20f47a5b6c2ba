/*
 * plugin_loader.c - loading sampler plugins and running them as a chain.
 *
 * The loader turns a .so into an opened ms_plugin: dlopen, the entry
 * symbol, ABI and descriptor checks, a checksum of the file, open() with
 * the config. The chain runs its links over one batch each, ANDs their
 * keep masks and makes every way a plugin can misbehave (error, wrong
 * verdict count, values other than 0/1, overrunning the Decide timeout)
 * fail open, recorded per link. Calls run on one worker thread per link so
 * the caller can stop waiting; a call that overruns is abandoned to its
 * worker, which owns the batch reference, the verdict buffer and a plugin
 * reference until the call returns.
 *
 * Design:
 *  1. An ms_plugin is reference counted: its owner holds one reference,
 *     every abandoned call one more. close() and dlclose() run when the
 *     count reaches 0, on whichever thread drops it.
 *  2. A link's worker is either idle (waiting for a request), running a
 *     call the caller waits for, or abandoned. An abandoned worker is
 *     detached and never receives another request; the link starts a new
 *     worker for its next call.
 *  3. The memory of a batch an abandoned call may read is released only by
 *     that call's worker after the call returns (the batch reference).
 *  4. consecutive_timeouts counts timed-out (and crashed) calls since the
 *     last batch in which none timed out or crashed; reaching circuit_after
 * opens the circuit, which stays open for the chain's life: every later batch
 * keeps everything.
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
 * With MS_PLUGIN_HOST_PROCESS a link has no worker: its calls go to a
 * plugin host process (plugin_host.c), so invariants 2, 3, 5 and 6 do not
 * apply; a host that overruns is killed, never abandoned, and one that
 * dies in Decide fails the link open as "crashed". The plugin is still
 * loaded and opened here as well (name, checksum, projection, config
 * errors at open), but its Decide never runs in this process.
 */
#define XXH_STATIC_LINKING_ONLY
#include "ms_clock.h"
#include "ms_enum.h"
#include "ms_pipeline.h"
#include "plugin_host.h"

#include <xxhash.h>

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* The SDK's projection bits are the host's column bits. */
_Static_assert(
        (unsigned)MS_PROJ_SPAN_ID == (unsigned)MS_COL_SPAN_ID &&
                (unsigned)MS_PROJ_SEGMENT_ID == (unsigned)MS_COL_SEGMENT_ID &&
                (unsigned)MS_PROJ_SERVICE == (unsigned)MS_COL_SERVICE &&
                (unsigned)MS_PROJ_INSTANCE == (unsigned)MS_COL_INSTANCE &&
                (unsigned)MS_PROJ_ENDPOINT == (unsigned)MS_COL_ENDPOINT &&
                (unsigned)MS_PROJ_START == (unsigned)MS_COL_START &&
                (unsigned)MS_PROJ_LATENCY == (unsigned)MS_COL_LATENCY &&
                (unsigned)MS_PROJ_ERROR == (unsigned)MS_COL_ERROR &&
                (unsigned)MS_PROJ_TAGS == (unsigned)MS_COL_TAGS &&
                (unsigned)MS_PROJ_BODY == (unsigned)MS_COL_BODY &&
                (unsigned)MS_PROJ_ALL == (unsigned)MS_COL_ALL,
        "projection bits must equal column bits");

/* ------------------------------------------------------------------ */
/* Plugins                                                             */

struct ms_plugin {
	_Atomic unsigned refs;
	void *dl;
	ms_plugin_desc desc;
	void *state;
	bool opened;
	char *path;
	size_t path_size;
	char name[64];
	char version[64];
	char checksum[33];
	uint32_t projection;
	ms_plugin_host host;
	ms_mem *mem;
	ms_log_fn log;
	void *log_ctx;
};

/* The plugin whose Decide runs on this thread. The one piece of state in
 * core outside an object, and necessarily so: a fatal signal handler has
 * nothing else to find the crashing call by. */
static _Thread_local const char *in_decide;

const char *
ms_plugin_in_decide(void)
{
	return in_decide;
}

static void
host_log(void *ctx, int level, const char *plugin, const char *msg)
{
	ms_plugin *p = ctx;
	if (p && p->log)
		p->log(p->log_ctx, level, plugin ? plugin : p->name,
		       msg ? msg : "");
}

static int64_t
host_now(void *ctx)
{
	(void)ctx;
	return ms_mono_ns();
}

static int
checksum_file(const char *path, char out[33], ms_errbuf *eb)
{
	XXH3_state_t st;
	unsigned char buf[16384];
	FILE *f = fopen(path, "rb");
	if (!f)
		return ms_fail(eb, ms_err_from_errno(errno),
		               "plugin %s: cannot read: %s", path,
		               strerror(errno));
	XXH3_128bits_reset(&st);
	size_t n;
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		XXH3_128bits_update(&st, buf, n);
	int bad = ferror(f);
	fclose(f);
	if (bad)
		return ms_fail(eb, MS_ERR_IO, "plugin %s: read error", path);
	XXH128_hash_t h = XXH3_128bits_digest(&st);
	snprintf(out, 33, "%016llx%016llx", (unsigned long long)h.high64,
	         (unsigned long long)h.low64);
	return 0;
}

static void
plugin_destroy(ms_plugin *p)
{
	if (p->opened && p->desc.close)
		p->desc.close(p->state);
	if (p->dl)
		dlclose(p->dl);
	ms_mem_free(p->mem, p->path, p->path_size);
	ms_mem_free(p->mem, p, sizeof(*p));
}

static void
plugin_retain(ms_plugin *p)
{
	atomic_fetch_add(&p->refs, 1);
}

void
ms_plugin_unload(ms_plugin *p)
{
	if (!p)
		return;
	if (atomic_fetch_sub(&p->refs, 1) == 1)
		plugin_destroy(p);
}

static bool
valid_name(const char *s)
{
	if (!s || !*s || strlen(s) >= 64)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
		      *s == '_' || *s == '-'))
			return false;
	return true;
}

/* Is field [off, off + size) inside what the plugin filled? */
#define DESC_HAS(d, field)                                                     \
	((d)->struct_size >=                                                   \
	 offsetof(ms_plugin_desc, field) + sizeof((d)->field))

int
ms_plugin_load(ms_plugin **out, const char *path,
               const ms_plugin_load_opts *opts, ms_errbuf *eb)
{
	static const ms_plugin_load_opts none;
	*out = NULL;
	if (!opts)
		opts = &none;
	if (!path || !*path)
		return ms_fail(eb, MS_ERR_INVAL, "plugin: empty path");
	ms_plugin *p = ms_mem_calloc(opts->mem, 1, sizeof(*p));
	if (!p)
		return ms_fail(eb, MS_ERR_NOMEM, "plugin %s: out of memory",
		               path);
	atomic_init(&p->refs, 1);
	p->mem = opts->mem;
	p->log = opts->log;
	p->log_ctx = opts->log_ctx;
	p->path_size = strlen(path) + 1;
	p->path = ms_mem_dup(opts->mem, path, p->path_size);
	int rc;
	if (!p->path) {
		p->path_size = 0;
		rc = ms_fail(eb, MS_ERR_NOMEM, "plugin %s: out of memory",
		             path);
		goto fail;
	}
	rc = checksum_file(path, p->checksum, eb);
	if (rc)
		goto fail;
	dlerror();
	p->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!p->dl) {
		const char *e = dlerror();
		rc = ms_fail(eb, MS_ERR_PLUGIN, "plugin %s: dlopen failed: %s",
		             path, e ? e : "unknown error");
		goto fail;
	}
	dlerror();
	void *sym = dlsym(p->dl, MS_PLUGIN_ENTRY_SYMBOL);
	if (!sym) {
		const char *e = dlerror();
		rc = ms_fail(eb, MS_ERR_PLUGIN,
		             "plugin %s: no entry symbol %s: %s", path,
		             MS_PLUGIN_ENTRY_SYMBOL, e ? e : "not found");
		goto fail;
	}
	ms_plugin_entry_fn entry;
	memcpy(&entry, &sym, sizeof(entry)); /* object -> function pointer */
	memset(&p->desc, 0, sizeof(p->desc));
	if (entry(&p->desc, sizeof(p->desc)) != 0) {
		rc = ms_fail(eb, MS_ERR_PLUGIN,
		             "plugin %s: entry point refused to load", path);
		goto fail;
	}
	ms_plugin_desc *d = &p->desc;
	if (d->struct_size > sizeof(*d))
		d->struct_size = sizeof(*d); /* never read past our copy */
	if (d->struct_size <
	    offsetof(ms_plugin_desc, abi_minor) + sizeof(d->abi_minor)) {
		rc = ms_fail(eb, MS_ERR_PLUGIN,
		             "plugin %s: descriptor too small (%u bytes)", path,
		             (unsigned)d->struct_size);
		goto fail;
	}
	if (d->abi_major != MS_PLUGIN_ABI_MAJOR) {
		rc = ms_fail(eb, MS_ERR_PLUGIN,
		             "plugin %s: ABI major %u, host supports major %u",
		             path, (unsigned)d->abi_major,
		             (unsigned)MS_PLUGIN_ABI_MAJOR);
		goto fail;
	}
	if (d->abi_minor > MS_PLUGIN_ABI_MINOR) {
		rc = ms_fail(eb, MS_ERR_PLUGIN,
		             "plugin %s: ABI minor %u is newer than the "
		             "host's %u",
		             path, (unsigned)d->abi_minor,
		             (unsigned)MS_PLUGIN_ABI_MINOR);
		goto fail;
	}
	const char *missing = NULL;
	if (!DESC_HAS(d, name) || !d->name)
		missing = "name";
	else if (!DESC_HAS(d, open) || !d->open)
		missing = "open";
	else if (!DESC_HAS(d, decide) || !d->decide)
		missing = "decide";
	else if (!DESC_HAS(d, close) || !d->close)
		missing = "close";
	if (missing) {
		rc = ms_fail(eb, MS_ERR_PLUGIN,
		             "plugin %s: descriptor lacks required field "
		             "'%s'",
		             path, missing);
		goto fail;
	}
	if (!valid_name(d->name)) {
		rc = ms_fail(eb, MS_ERR_PLUGIN,
		             "plugin %s: name must be 1-63 of [a-z0-9_-]",
		             path);
		goto fail;
	}
	snprintf(p->name, sizeof(p->name), "%s", d->name);
	if (DESC_HAS(d, version) && d->version)
		snprintf(p->version, sizeof(p->version), "%s", d->version);
	if (!DESC_HAS(d, projection_of))
		d->projection_of = NULL;
	if (!DESC_HAS(d, stats))
		d->stats = NULL;
	p->projection = DESC_HAS(d, projection) ? d->projection : 0;
	p->projection &= MS_PROJ_ALL;

	p->host.struct_size = sizeof(p->host);
	p->host.abi_major = MS_PLUGIN_ABI_MAJOR;
	p->host.abi_minor = MS_PLUGIN_ABI_MINOR;
	p->host.ctx = p;
	p->host.log = host_log;
	p->host.now_ns = host_now;
	char err[512];
	err[0] = '\0';
	if (d->open(opts->config ? opts->config : "", &p->host, err,
	            sizeof(err), &p->state) != 0) {
		err[sizeof(err) - 1] = '\0';
		rc = ms_fail(eb, MS_ERR_PLUGIN, "plugin %s (%s): open: %s",
		             path, p->name, err[0] ? err : "failed");
		goto fail;
	}
	p->opened = true;
	if (d->projection_of)
		p->projection = d->projection_of(p->state) & p->projection;
	*out = p;
	return 0;
fail:
	plugin_destroy(p);
	return rc;
}

const char *
ms_plugin_name(const ms_plugin *p)
{
	return p->name;
}

const char *
ms_plugin_path(const ms_plugin *p)
{
	return p->path;
}

const char *
ms_plugin_version(const ms_plugin *p)
{
	return p->version;
}

const char *
ms_plugin_checksum(const ms_plugin *p)
{
	return p->checksum;
}

uint16_t
ms_plugin_abi_minor(const ms_plugin *p)
{
	return p->desc.abi_minor;
}

uint32_t
ms_plugin_projection(const ms_plugin *p)
{
	return p->projection;
}

size_t
ms_plugin_stats(const ms_plugin *p, ms_plugin_stat *out, size_t cap)
{
	if (!p->desc.stats)
		return 0;
	return p->desc.stats(p->state, out, cap);
}

int64_t
ms_plugin_decide_direct(ms_plugin *p, const ms_plugin_batch *b,
                        uint8_t *verdict, size_t n)
{
	const char *outer = in_decide;
	in_decide = p->name;
	int64_t ret = p->desc.decide(p->state, b, verdict, n);
	in_decide = outer;
	return ret;
}

/* ------------------------------------------------------------------ */
/* Workers                                                             */

enum worker_state { W_IDLE, W_REQUEST, W_DONE, W_QUIT };

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
	bool abandoned;
	ms_plugin *plugin;
	ms_batch *batch;
	uint8_t *verdict;
	size_t vcap;
	size_t n;
	int64_t ret;
	struct ms_chain *chain; /* invalid once ctl->closed */
	abandon_ctl *ctl;       /* set when abandoned */
} worker;

typedef struct link {
	ms_plugin *plugin;
	worker *w;
	ms__phost *host; /* process mode: the running host, if any */
	char *path, *config;
	size_t path_size, config_size;
	ms_link_stats st;
	uint8_t *tmp; /* verdict copy for checks */
	size_t tmpcap;
} link_t;

struct ms_chain {
	ms_mem *mem;
	uint64_t timeout_ns;
	unsigned circuit_after;
	link_t *links;
	size_t n;
	size_t nalloc;
	unsigned consecutive_timeouts;
	bool circuit_open;
	char circuit_reason[192];
	uint64_t close_grace_ns;
	enum ms_plugin_host_mode host_mode;
	char *host_exe;
	size_t host_exe_size;
	abandon_ctl *ctl;
	pthread_mutex_t mu; /* serializes decide and stats reads */
};

static void
worker_free(worker *w)
{
	ms_mem *mem = w->chain->mem;
	ms_mem_free(mem, w->verdict, w->vcap);
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
	ms_mem_free(mem, w, sizeof(*w));
}

static void *
worker_main(void *arg)
{
	worker *w = arg;
	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (w->state != W_REQUEST && w->state != W_QUIT)
			pthread_cond_wait(&w->cv, &w->mu);
		if (w->state == W_QUIT)
			break;
		pthread_mutex_unlock(&w->mu);
		in_decide = w->plugin->name;
		int64_t ret = w->plugin->desc.decide(w->plugin->state,
		                                     ms_batch_view(w->batch),
		                                     w->verdict, w->n);
		in_decide = NULL;
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

static worker *
worker_start(struct ms_chain *c, ms_plugin *p)
{
	worker *w = ms_mem_calloc(c->mem, 1, sizeof(*w));
	if (!w)
		return NULL;
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cv, &ca);
	pthread_condattr_destroy(&ca);
	w->state = W_IDLE;
	w->plugin = p;
	w->chain = c;
	if (pthread_create(&w->thread, NULL, worker_main, w) != 0) {
		pthread_cond_destroy(&w->cv);
		pthread_mutex_destroy(&w->mu);
		ms_mem_free(c->mem, w, sizeof(*w));
		return NULL;
	}
	return w;
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
		return ms_fail(eb, MS_ERR_NOMEM, "chain: out of memory");
	c->mem = opts->mem;
	c->timeout_ns = opts->decide_timeout_ns ? opts->decide_timeout_ns
	                                        : 5000000000ull;
	c->circuit_after = opts->circuit_after ? opts->circuit_after : 3;
	c->close_grace_ns =
	        opts->close_grace_ns ? opts->close_grace_ns : 2000000000ull;
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
			c->host_exe_size = 0;
			ms_chain_close(c);
			return ms_fail(eb, MS_ERR_NOMEM,
			               "chain: out of memory");
		}
	}
	c->ctl = abandon_ctl_new();
	if (!c->ctl) {
		ms_chain_close(c);
		return ms_fail(eb, MS_ERR_NOMEM, "chain: out of memory");
	}
	if (n) {
		c->links = ms_mem_calloc(c->mem, n, sizeof(*c->links));
		if (!c->links) {
			ms_chain_close(c);
			return ms_fail(eb, MS_ERR_NOMEM,
			               "chain: out of memory");
		}
		c->nalloc = n;
	}
	for (size_t i = 0; i < n; i++) {
		ms_plugin_load_opts lo = { links[i].config, c->mem, opts->log,
			                   opts->log_ctx };
		ms_errbuf sub;
		int rc = ms_plugin_load(&c->links[i].plugin, links[i].path, &lo,
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
			ms_chain_close(c);
			return ms_fail(eb, MS_ERR_NOMEM,
			               "chain: out of memory");
		}
		snprintf(c->links[i].st.name, sizeof(c->links[i].st.name), "%s",
		         ms_plugin_name(c->links[i].plugin));
	}
	c->n = n;
	*out = c;
	return 0;
}

void
ms_chain_close(ms_chain *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++) {
		link_t *l = &c->links[i];
		if (l->w)
			worker_stop(l->w);
		ms__phost_free(l->host);
		if (l->path)
			ms_mem_free(c->mem, l->path, l->path_size);
		if (l->config)
			ms_mem_free(c->mem, l->config, l->config_size);
		ms_mem_free(c->mem, l->tmp, l->tmpcap);
		ms_plugin_unload(l->plugin);
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
		a->closed = true;
		abandon_ctl_put_locked(a);
	}
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

static int
grow(ms_mem *mem, uint8_t **p, size_t *cap, size_t need)
{
	if (need <= *cap && *p)
		return 0;
	size_t nc = need < 64 ? 64 : need;
	uint8_t *q = ms_mem_realloc(mem, *p, *cap, nc);
	if (!q)
		return MS_ERR_NOMEM;
	*p = q;
	*cap = nc;
	return 0;
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
		l->w = worker_start(c, l->plugin);
		if (!l->w) {
			record(l, MS_LINK_HOST_ERROR,
			       "could not start a worker thread");
			return MS_LINK_HOST_ERROR;
		}
	}
	worker *w = l->w;
	if (grow(c->mem, &w->verdict, &w->vcap, n) ||
	    grow(c->mem, &l->tmp, &l->tmpcap, n)) {
		record(l, MS_LINK_HOST_ERROR, "out of memory for verdicts");
		return MS_LINK_HOST_ERROR;
	}
	memset(w->verdict, 0xA5, n); /* unwritten bytes read as bad values */
	int64_t t0 = ms_mono_ns();
	struct timespec dl = ms_mono_timespec(t0 + (int64_t)c->timeout_ns);
	l->st.calls++;
	l->st.traces += n;
	pthread_mutex_lock(&w->mu);
	w->batch = b;
	w->n = n;
	w->state = W_REQUEST;
	pthread_cond_broadcast(&w->cv);
	while (w->state != W_DONE) {
		int rc = pthread_cond_timedwait(&w->cv, &w->mu, &dl);
		if (rc == ETIMEDOUT && w->state != W_DONE)
			break;
	}
	if (w->state != W_DONE) {
		/* Abandon: the worker keeps the batch, the verdict buffer
		 * and a plugin reference until the call returns. */
		w->abandoned = true;
		ms_batch_retain(b);
		ms__batch_abandon(b);
		plugin_retain(l->plugin);
		w->ctl = c->ctl;
		pthread_mutex_lock(&c->ctl->mu);
		c->ctl->refs++;
		c->ctl->running++;
		pthread_mutex_unlock(&c->ctl->mu);
		pthread_detach(w->thread);
		pthread_mutex_unlock(&w->mu);
		l->w = NULL;
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
	pthread_mutex_unlock(&w->mu);
	*ns = (uint64_t)(ms_mono_ns() - t0);
	time_call(l, *ns);
	return check_verdicts(l, ret, n);
}

/* run_link in process mode: the call goes to the link's host process,
 * started first if the link has none (at the start, or after a crash or
 * a timeout killed the previous one). */
static enum ms_link_result
run_link_process(ms_chain *c, link_t *l, ms_batch *b, size_t n, uint64_t *ns)
{
	if (grow(c->mem, &l->tmp, &l->tmpcap, n)) {
		record(l, MS_LINK_HOST_ERROR, "out of memory for verdicts");
		return MS_LINK_HOST_ERROR;
	}
	if (!l->host) {
		ms_errbuf eb = { "" };
		if (ms__phost_start(&l->host, c->host_exe, l->path, l->config,
		                    c->timeout_ns, &eb)) {
			record(l, MS_LINK_HOST_ERROR, "%s", eb.msg);
			return MS_LINK_HOST_ERROR;
		}
	}
	l->st.calls++;
	l->st.traces += n;
	int64_t t0 = ms_mono_ns(), ret = 0;
	char why[160] = "";
	enum ms__phost_result r =
	        ms__phost_decide(l->host, ms_batch_view(b), l->tmp, n,
	                         c->timeout_ns, &ret, why, sizeof(why));
	*ns = (uint64_t)(ms_mono_ns() - t0);
	time_call(l, *ns);
	if (r != MS__PHOST_OK && r != MS__PHOST_ERROR) {
		ms__phost_free(l->host);
		l->host = NULL;
	}
	switch (r) {
	case MS__PHOST_TIMEOUT:
		record(l, MS_LINK_TIMEOUT,
		       "Decide overran the %.3f ms timeout on %zu traces; "
		       "plugin host killed",
		       (double)c->timeout_ns / 1e6, n);
		return MS_LINK_TIMEOUT;
	case MS__PHOST_CRASHED:
		record(l, MS_LINK_CRASHED,
		       "plugin host %s in Decide on %zu traces", why, n);
		return MS_LINK_CRASHED;
	case MS__PHOST_ERROR:
		record(l, MS_LINK_HOST_ERROR, "plugin host: %s", why);
		return MS_LINK_HOST_ERROR;
	case MS__PHOST_OK:
		break;
	}
	return check_verdicts(l, ret, n);
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
	for (size_t i = 0; i < c->n; i++) {
		link_t *l = &c->links[i];
		if (c->circuit_open) {
			record(l, MS_LINK_CIRCUIT_OPEN, "circuit open: %s",
			       c->circuit_reason);
			res->links_failed++;
			continue;
		}
		uint64_t ns = 0;
		enum ms_link_result r =
		        c->host_mode == MS_PLUGIN_HOST_PROCESS
		                ? run_link_process(c, l, b, n, &ns)
		                : run_link(c, l, b, n, &ns);
		res->decide_ns += ns;
		if (r == MS_LINK_TIMEOUT || r == MS_LINK_CRASHED) {
			timed_out = true;
			if (++c->consecutive_timeouts >= c->circuit_after) {
				c->circuit_open = true;
				snprintf(c->circuit_reason,
				         sizeof(c->circuit_reason),
				         "%u consecutive Decide timeouts "
				         "or crashes (last on link '%s')",
				         c->consecutive_timeouts, l->st.name);
			}
		}
		if (r != MS_LINK_OK) {
			res->links_failed++;
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
	if (c->circuit_open) {
		memset(keep, 1, n);
		res->circuit_open = true;
	}
	for (size_t k = 0; k < n; k++)
		res->kept += keep[k];
	return 0;
}

/* ------------------------------------------------------------------ */
/* Chain specs                                                         */

static void
spec_free_strings(ms_chain_spec *s)
{
	for (size_t i = 0; i < MS_CHAIN_MAX_LINKS; i++) {
		if (s->paths[i])
			ms_mem_free(s->mem, s->paths[i],
			            strlen(s->paths[i]) + 1);
		if (s->configs[i])
			ms_mem_free(s->mem, s->configs[i],
			            strlen(s->configs[i]) + 1);
		s->paths[i] = s->configs[i] = NULL;
	}
	s->n = 0;
}

void
ms_chain_spec_release(ms_chain_spec *s)
{
	if (s)
		spec_free_strings(s);
}

static char *
dup_range(ms_mem *mem, const char *p, size_t n)
{
	char *s = ms_mem_alloc(mem, n + 1);
	if (s) {
		memcpy(s, p, n);
		s[n] = '\0';
	}
	return s;
}

/* Length of one link at spec[i..]: up to a comma outside braces and
 * strings. -1 if braces or quotes do not balance. */
static long
link_extent(const char *s, size_t i)
{
	int depth = 0;
	bool str = false;
	size_t k = i;
	for (; s[k]; k++) {
		char ch = s[k];
		if (str) {
			if (ch == '\\' && s[k + 1])
				k++;
			else if (ch == '"')
				str = false;
			continue;
		}
		if (ch == '"')
			str = true;
		else if (ch == '{' || ch == '[')
			depth++;
		else if (ch == '}' || ch == ']') {
			if (--depth < 0)
				return -1;
		} else if (ch == ',' && depth == 0)
			break;
	}
	if (str || depth != 0)
		return -1;
	return (long)(k - i);
}

static bool
is_space(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

static int
spec_link(ms_chain_spec *out, const char *tok, size_t len, size_t pos,
          const char *dir, ms_errbuf *eb)
{
	while (len && is_space(*tok)) {
		tok++;
		len--;
		pos++;
	}
	while (len && is_space(tok[len - 1]))
		len--;
	size_t nl = 0;
	while (nl < len && tok[nl] != ':')
		nl++;
	if (nl == 0 || nl >= 64)
		return ms_fail(eb, MS_ERR_INVAL,
		               "chain spec: offset %zu: expected a plugin "
		               "name",
		               pos);
	char name[64];
	memcpy(name, tok, nl);
	name[nl] = '\0';
	if (!valid_name(name))
		return ms_fail(eb, MS_ERR_INVAL,
		               "chain spec: offset %zu: plugin name '%s' "
		               "must be [a-z0-9_-]",
		               pos, name);
	if (strcmp(name, "disabled") == 0)
		return ms_fail(eb, MS_ERR_INVAL,
		               "chain spec: 'disabled' cannot be combined "
		               "with other links");
	const char *arg = nl < len ? tok + nl + 1 : NULL;
	size_t alen = arg ? len - nl - 1 : 0;
	while (arg && alen && is_space(*arg)) {
		arg++;
		alen--;
	}
	if (out->n >= MS_CHAIN_MAX_LINKS)
		return ms_fail(eb, MS_ERR_RANGE,
		               "chain spec: more than %d links",
		               MS_CHAIN_MAX_LINKS);
	size_t i = out->n;
	char cfg[96];
	const char *cp = "";
	size_t clen = 0;
	if (arg && alen && arg[0] == '{') {
		cp = arg;
		clen = alen;
	} else if (arg && strcmp(name, "detdrop") == 0) {
		/* detdrop:PCT - a plain number 0..100 */
		size_t k = 0, dots = 0;
		for (; k < alen; k++) {
			if (arg[k] == '.')
				dots++;
			else if (arg[k] < '0' || arg[k] > '9')
				break;
		}
		if (alen == 0 || k != alen || dots > 1 || arg[0] == '.' ||
		    alen > 12)
			return ms_fail(eb, MS_ERR_INVAL,
			               "chain spec: offset %zu: detdrop "
			               "expects a percentage (detdrop:35) or "
			               "a JSON config",
			               pos);
		snprintf(cfg, sizeof(cfg), "{\"percent\":%.*s}", (int)alen,
		         arg);
		cp = cfg;
		clen = strlen(cfg);
	} else if (arg) {
		return ms_fail(eb, MS_ERR_INVAL,
		               "chain spec: offset %zu: plugin '%s' expects "
		               "a JSON object config after ':'",
		               pos, name);
	} else if (strcmp(name, "skywalking") == 0) {
		cp = MS_SKYWALKING_DEFAULT_CONFIG;
		clen = strlen(cp);
	}
	size_t dl = strlen(dir), plen;
	if (!ms_add_ok(dl, nl + 5, &plen))
		return ms_fail(eb, MS_ERR_RANGE, "chain spec: path too long");
	out->paths[i] = ms_mem_alloc(out->mem, plen);
	out->configs[i] = dup_range(out->mem, cp, clen);
	if (!out->paths[i] || !out->configs[i])
		return ms_fail(eb, MS_ERR_NOMEM, "chain spec: out of memory");
	snprintf(out->paths[i], plen, "%s/%s.so", dir, name);
	snprintf(out->names[i], sizeof(out->names[i]), "%s", name);
	out->links[i].path = out->paths[i];
	out->links[i].config = out->configs[i];
	out->n++;
	return 0;
}

int
ms_chain_spec_parse(ms_chain_spec *out, const char *spec,
                    const char *plugin_dir, ms_mem *mem, ms_errbuf *eb)
{
	memset(out, 0, sizeof(*out));
	out->mem = mem;
	if (!spec || !plugin_dir)
		return ms_fail(eb, MS_ERR_INVAL, "chain spec: missing");
	size_t len = strlen(spec), a = 0, b = len;
	while (a < b && is_space(spec[a]))
		a++;
	while (b > a && is_space(spec[b - 1]))
		b--;
	if (a == b)
		return ms_fail(eb, MS_ERR_INVAL, "chain spec: empty");
	if (b - a == 8 && memcmp(spec + a, "disabled", 8) == 0)
		return 0;
	size_t i = 0;
	for (;;) {
		long ext = link_extent(spec, i);
		if (ext < 0) {
			spec_free_strings(out);
			return ms_fail(eb, MS_ERR_INVAL,
			               "chain spec: offset %zu: unbalanced "
			               "braces or quotes",
			               i);
		}
		int rc = spec_link(out, spec + i, (size_t)ext, i, plugin_dir,
		                   eb);
		if (rc) {
			spec_free_strings(out);
			return rc;
		}
		i += (size_t)ext;
		if (!spec[i])
			break;
		i++; /* the comma */
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Pipeline                                                            */

struct ms_pipeline {
	ms_mem *mem;
	ms_chain *chain;
	char *spec;
	size_t spec_size;
	enum ms_grace_policy policy;
	ms_limits limits;
	uint64_t hard;
	uint64_t oversized_cap;
	_Atomic uint64_t staged_live; /* sum of the stagers' live charges */
};

uint64_t
ms_pipeline_staged_live(const ms_pipeline *p)
{
	return p ? atomic_load(&((ms_pipeline *)p)->staged_live) : 0;
}

_Atomic uint64_t *
ms_pipeline_live_gauge(ms_pipeline *p)
{
	return p ? &p->staged_live : NULL;
}

int
ms_pipeline_open(ms_pipeline **out, const ms_pipeline_opts *opts, ms_errbuf *eb)
{
	*out = NULL;
	if (!opts)
		return ms_fail(eb, MS_ERR_INVAL, "pipeline: options missing");
	ms_pipeline *p = ms_mem_calloc(opts->mem, 1, sizeof(*p));
	if (!p)
		return ms_fail(eb, MS_ERR_NOMEM, "pipeline: out of memory");
	p->mem = opts->mem;
	p->policy = opts->policy;
	const char *spec = opts->spec ? opts->spec : "disabled";
	p->spec_size = strlen(spec) + 1;
	p->spec = ms_mem_dup(p->mem, spec, p->spec_size);
	if (!p->spec) {
		p->spec_size = 0;
		ms_pipeline_close(p);
		return ms_fail(eb, MS_ERR_NOMEM, "pipeline: out of memory");
	}
	if (opts->limits)
		p->limits = *opts->limits;
	else
		ms_limits_detect(&p->limits, NULL, NULL);
	p->hard = opts->hard_ceiling ? opts->hard_ceiling
	                             : ms_staging_hard_ceiling(p->limits.mem,
	                                                       p->limits.cpus);
	p->oversized_cap = opts->oversized_cap && opts->oversized_cap < p->hard
	                           ? opts->oversized_cap
	                           : p->hard;
	ms_chain_spec cs;
	int rc = ms_chain_spec_parse(&cs, spec,
	                             opts->plugin_dir ? opts->plugin_dir : ".",
	                             p->mem, eb);
	if (rc) {
		ms_chain_spec_release(&cs);
		ms_pipeline_close(p);
		return rc;
	}
	ms_chain_opts co = {
		.mem = p->mem,
		.decide_timeout_ns = opts->decide_timeout_ns,
		.circuit_after = opts->circuit_after,
		.log = opts->log,
		.log_ctx = opts->log_ctx,
		.host_mode = opts->host_mode,
		.host_exe = opts->host_exe,
	};
	rc = ms_chain_open(&p->chain, cs.links, cs.n, &co, eb);
	ms_chain_spec_release(&cs);
	if (rc) {
		ms_pipeline_close(p);
		return rc;
	}
	*out = p;
	return 0;
}

void
ms_pipeline_close(ms_pipeline *p)
{
	if (!p)
		return;
	ms_chain_close(p->chain);
	ms_mem_free(p->mem, p->spec, p->spec_size);
	ms_mem_free(p->mem, p, sizeof(*p));
}

ms_chain *
ms_pipeline_chain(const ms_pipeline *p)
{
	return p->chain;
}

const char *
ms_pipeline_spec(const ms_pipeline *p)
{
	return p->spec;
}

enum ms_grace_policy
ms_pipeline_policy(const ms_pipeline *p)
{
	return p->policy;
}

const ms_limits *
ms_pipeline_limits(const ms_pipeline *p)
{
	return &p->limits;
}

uint64_t
ms_pipeline_hard_ceiling(const ms_pipeline *p)
{
	return p->hard;
}

void
ms_pipeline_plan(const ms_pipeline *p, const ms_part_meta *inputs, size_t n,
                 ms_stage_plan *out)
{
	ms_stage_plan_make(out, p->hard, ms_stage_estimate(inputs, n));
	out->oversized_cap = p->oversized_cap;
}
