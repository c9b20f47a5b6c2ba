/*
 * plugin_host.h - the parent's side of an out-of-process plugin host
 * (plugin_host.c), used by the chain (chain.c) for links that run
 * with MS_PLUGIN_HOST_PROCESS.
 */
#ifndef MS_PLUGIN_HOST_INT_H
#define MS_PLUGIN_HOST_INT_H

#include "ms_err.h"
#include "ms_loader.h"
#include "ms_plugin.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ms__phost ms__phost;

/* The plugin's own counters (ms_plugin_stats) as a host reports them with
 * every reply: at most MS__PHOST_STATS, names cut to 47 bytes. */
#define MS__PHOST_STATS 16
typedef struct ms__phost_stats {
	uint32_t n;
	char name[MS__PHOST_STATS][48];
	uint64_t value[MS__PHOST_STATS];
} ms__phost_stats;

enum ms__phost_result {
	MS__PHOST_OK = 0,      /* *ret and the verdicts are the plugin's */
	MS__PHOST_TIMEOUT = 1, /* no reply in time; the host was killed */
	MS__PHOST_CRASHED = 2, /* the host died; why says how */
	MS__PHOST_ERROR = 3,   /* the call could not be made; why says why */
	MS__PHOST_OVERRUN = 4, /* as OK, but the plugin wrote past its n
	                          verdicts (the guard bytes after them) */
	MS__PHOST_AFTER_DECIDE = 5, /* *ret and the verdicts are the
	                               plugin's, but its host then hung past
	                               the timeout (killed) or died in the
	                               stats() after Decide: why says which;
	                               the host is gone, *stats unchanged */
};

/* Where a host's plugin's log lines go (borrowed; outlives the host):
 * line(ctx, level, plugin, msg) for each line, msg cleaned to one
 * printable line here; lost(ctx, n) for n lines the host could not send
 * (its channel was full: the host never waits to log). Both are called
 * on the thread that waits for the host (start, Decide). */
typedef struct ms__phost_log {
	ms_log_fn line;
	void (*lost)(void *ctx, uint64_t n);
	void *ctx;
	const char *plugin;
} ms__phost_log;

typedef struct ms__phost_start_opts {
	uint64_t timeout_ns; /* bounds the start: load, open(), stats() */
	/* What the plugin may map beyond what the host holds once it runs
	 * (RLIMIT_DATA set to that much more); 0 = no cap. */
	uint64_t mem_max;
	const ms__phost_log *log; /* NULL ok */
	bool no_stats; /* the host never calls the plugin's stats() */
	/* NULL ok: set to whether a start that timed out was in stats(). */
	bool *in_stats;
	/* NULL ok: the run's own load of the plugin. The host loads its
	 * pinned file (ms__plugin_fd), not what the path names by then, and
	 * refuses it (ERROR, naming both checksums) if its bytes differ from
	 * the checksum recorded (ms_plugin_checksum). NULL: the host opens
	 * the path. */
	const ms_plugin *pinned;
} ms__phost_start_opts;

/* Spawn exe as a plugin host for the .so at path with config and wait (up
 * to o->timeout_ns) until it has loaded and opened the plugin and read its
 * counters. *how (NULL ok) gets OK, or how it failed: TIMEOUT (no answer
 * in time: killed; MS_ERR_TIMEOUT), CRASHED (it died) or ERROR (the load
 * failed, or no host could be started). The message names the part of
 * the plugin the host was running (its load, open(), stats()). The host
 * makes itself the kernel's first choice when memory runs out
 * (oom_score_adj 1000) before it loads the plugin. */
int ms__phost_start(ms__phost **out, const char *exe, const char *path,
                    const char *config, const ms__phost_start_opts *o,
                    enum ms__phost_result *how, ms_errbuf *eb);
/* What of the plugin h ran last or was running when a call ended
 * (TIMEOUT, CRASHED): "Decide" or "stats()" after a call. Static. */
const char *ms__phost_phase(const ms__phost *h);
/* One Decide call through the host. After TIMEOUT or CRASHED the host is
 * gone: free it and start another for the next call. On OK, *stats (NULL
 * ok) gets the plugin's counters after the call. */
enum ms__phost_result ms__phost_decide(ms__phost *h, const ms_plugin_batch *b,
                                       uint8_t *verdict, size_t n,
                                       uint64_t timeout_ns, int64_t *ret,
                                       ms__phost_stats *stats, char *why,
                                       size_t whylen);
/* Stop the host (killing it if it still runs), reap it, free. NULL ok. */
void ms__phost_free(ms__phost *h);
/* ms__phost_free with a report: the host is told to close its plugin and
 * given grace_ns to end. True, with why saying what happened in close(),
 * when it did not end in time (it is killed) or ended by a signal or a
 * status other than 0. */
bool ms__phost_stop(ms__phost *h, uint64_t grace_ns, char *why, size_t whylen);

#endif
