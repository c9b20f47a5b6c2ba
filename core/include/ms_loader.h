/*
 * ms_loader.h - the plugin loader (plugin_loader.c): a sampler .so turned
 * into an opened ms_plugin, its identity and its own counters. Running
 * plugins as a chain is ms_chain.h's.
 *
 * Ownership: an ms_plugin is a heap object owned by whoever loaded it and
 * dropped by ms_plugin_unload (NULL accepted). It is reference counted:
 * a chain call abandoned after a timeout keeps one more reference, so the
 * plugin's close() and dlclose() run when the last holder lets go.
 * Strings returned by the accessors are borrowed from the plugin.
 * Threads: the accessors may be called from any thread; decide() runs on
 * one thread at a time (the chain serializes its calls). ms_plugin_load
 * calls open() on the calling thread; a chain calls it on the worker
 * thread that runs the link's Decide.
 */
#ifndef MS_LOADER_H
#define MS_LOADER_H

#include "ms_err.h"
#include "ms_mem.h"
#include "ms_plugin.h"

#include <stddef.h>
#include <stdint.h>

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
 * returns MS_ERR_PLUGIN (MS_ERR_IO when the file cannot be read,
 * MS_ERR_CONFIG when the plugin's open() refused config) with a message
 * naming the path and, where it applies, dlerror() text, the missing
 * callback, the versions, or the plugin's own open() message.
 * What the plugin wrote (its open() message, a refused name, its version,
 * what it logs) is passed on as one line of printable ASCII, bounded.
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
/* What a plugin wrote (src, at most srcmax bytes read) as the loader
 * passes it on: one line of printable ASCII in dst (cap bytes, NUL
 * included); each run of line breaks and tabs is one space, any other byte
 * outside 0x20-0x7e is '?', and a line cut short ends in "...". For what
 * a plugin wrote that reaches a terminal or a file elsewhere (its
 * counters' names in an event database). */
void ms_plugin_text_clean(char *dst, size_t cap, const char *src,
                          size_t srcmax);
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
/* The same for any of the plugin's code the loader runs on the calling
 * thread: the plugin's name (its path while it is being loaded, before
 * its name is known), or NULL; *callback (NULL ok) gets which code:
 * "dlopen (its library constructors)", "its entry point", "open()",
 * "Decide", "stats()" or "close()" (static strings). Async-signal-safe. */
const char *ms_plugin_in_callback(const char **callback);

#endif
