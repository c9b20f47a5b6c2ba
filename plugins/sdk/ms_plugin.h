/*
 * ms_plugin.h - the mergescope sampler plugin ABI: the one header a plugin
 * includes, and the only one the host and a plugin share.
 *
 * A plugin is a shared object that exports exactly one symbol,
 * MS_PLUGIN_ENTRY_SYMBOL ("ms_plugin_entry"), of type ms_plugin_entry_fn.
 * The host calls it once after dlopen; it fills an ms_plugin_desc: name,
 * projection (the columns the plugin reads) and the open/decide/close
 * callbacks. During a merge the host hands decide() read-only,
 * column-oriented batches of complete traces and gets one verdict byte per
 * trace back (MS_VERDICT_KEEP or MS_VERDICT_DROP).
 *
 * Versioning (the SQLite / GStreamer rules):
 *  - abi_major must equal the host's MS_PLUGIN_ABI_MAJOR, abi_minor must not
 *    exceed the host's MS_PLUGIN_ABI_MINOR; the host rejects anything else.
 *  - Structures only ever grow at the end. Every structure that crosses the
 *    boundary starts with struct_size; a reader never touches a field that
 *    lies beyond the struct_size the writer set.
 *
 * Plugins link against nothing of the host: whatever the host offers
 * (logging, a clock) comes through the const ms_plugin_host table passed to
 * open(). Only standard C and POSIX may be used.
 *
 * Threads: decide() is called from a host worker thread, never concurrently
 * for one state except in one case: when a call overruns the host's Decide
 * timeout the host abandons it and may call decide() again (on another
 * thread, with another batch) while the abandoned call is still running.
 * State a plugin changes inside decide() must therefore be updated
 * atomically (counters) or kept per call. close() is only called once no
 * call is running. Every callback (and the library's constructors) runs
 * on a host thread with the C library's default stack size for new
 * threads, the soft `ulimit -s` (8 MiB on most systems; 2 MiB with glibc
 * when unlimited), or, with a plugin host process, on that process's main
 * thread: a plugin that needs a deep stack says so to its users.
 *
 * Memory: the batch and everything it points to belong to the host and are
 * read-only; they stay valid until decide() returns, even if the host has
 * given up waiting. The verdict array belongs to the host too (n bytes;
 * a call that writes past them fails open as if it returned the wrong
 * count). Every callback is bounded: the load (library constructors, the
 * entry point), open() and stats() by the host's open timeout, close() by
 * a short grace, after which the host goes on without it.
 * Strings a plugin returns (name, stat names) must stay valid until close()
 * (static storage is the norm).
 */
#ifndef MS_PLUGIN_H
#define MS_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#define MS_PLUGIN_ABI_MAJOR 1
#define MS_PLUGIN_ABI_MINOR 0
#define MS_PLUGIN_ENTRY_SYMBOL "ms_plugin_entry"

/* Mark the entry point: the only symbol a plugin makes visible. */
#if defined(__GNUC__)
#define MS_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define MS_PLUGIN_EXPORT
#endif

/* What open() returns when it ran out of memory: the host reports out of
 * memory, not a refused config. Any other non-zero return refuses the
 * config. (Hosts before this value took it for a refused config too.) */
#define MS_PLUGIN_OPEN_NOMEM (-12)

/* Verdict values: anything else is a broken verdict (the link fails open). */
#define MS_VERDICT_DROP 0
#define MS_VERDICT_KEEP 1

/*
 * Projection: the row columns a plugin reads. The host decodes and copies
 * only these; the batch pointers of other columns are NULL. Trace IDs and
 * the per-trace descriptors are always present. The bit values equal the
 * host's column bits (MS_COL_* in core/include/ms_row.h).
 */
enum ms_proj {
	MS_PROJ_NONE = 0,
	MS_PROJ_SPAN_ID = 1u << 0,
	MS_PROJ_SEGMENT_ID = 1u << 1,
	MS_PROJ_SERVICE = 1u << 2,
	MS_PROJ_INSTANCE = 1u << 3,
	MS_PROJ_ENDPOINT = 1u << 4,
	MS_PROJ_START = 1u << 5,
	MS_PROJ_LATENCY = 1u << 6,
	MS_PROJ_ERROR = 1u << 7,
	MS_PROJ_TAGS = 1u << 8,
	MS_PROJ_BODY = 1u << 9,
	MS_PROJ_ALL = (1u << 10) - 1,
};

/* One complete trace of a batch: all its rows from every merge input. */
typedef struct ms_plugin_trace {
	const uint8_t *trace_id; /* 1..64 bytes, not NUL-terminated */
	uint32_t trace_id_len;
	uint32_t row_count; /* rows [row_first, row_first + row_count) */
	uint64_t row_first;
	int64_t min_start_ns; /* min start over the trace's rows */
	int64_t max_start_ns; /* max start over the trace's rows */
	int64_t max_end_ns;   /* max(start + latency) over the trace's rows */
} ms_plugin_trace;

/*
 * A batch: traces sorted by trace ID, each complete, rows of one trace
 * contiguous. Row columns are arrays of nrows entries; a column that is
 * not projected is NULL. Strings are NUL-terminated.
 * Tags are flattened: row r owns tags[tag_first[r] .. tag_first[r + 1]),
 * each a "key=value" string of tag_len[i] bytes (tag_first has nrows + 1
 * entries).
 */
typedef struct ms_plugin_batch {
	uint32_t struct_size;
	uint32_t projection; /* enum ms_proj bits actually present */
	size_t ntraces;
	const ms_plugin_trace *traces;
	size_t nrows;
	const uint64_t *span_id;
	const char *const *segment_id;
	const char *const *service;
	const char *const *instance;
	const char *const *endpoint;
	const int64_t *start_ns;
	const uint32_t *latency_ms;
	const uint8_t *is_error; /* 0 or 1 */
	const uint64_t *tag_first;
	const char *const *tags;
	const uint32_t *tag_len;
	size_t ntags;
	const uint8_t *const *body; /* NULL entries for empty bodies */
	const uint32_t *body_len;
} ms_plugin_batch;

enum ms_plugin_log_level {
	MS_PLUGIN_LOG_ERROR = 0,
	MS_PLUGIN_LOG_WARN = 1,
	MS_PLUGIN_LOG_INFO = 2,
	MS_PLUGIN_LOG_DEBUG = 3,
};

/* What the host offers a plugin. Valid from open() until close(). */
typedef struct ms_plugin_host {
	uint32_t struct_size;
	uint16_t abi_major;
	uint16_t abi_minor;
	void *ctx; /* pass back to the callbacks */
	/* Log one line (no newline needed); plugin is the plugin's name.
	 * May be called from any thread. */
	void (*log)(void *ctx, int level, const char *plugin, const char *msg);
	/* Monotonic time in nanoseconds. */
	int64_t (*now_ns)(void *ctx);
} ms_plugin_host;

/* One named counter a plugin exports (see ms_plugin_desc.stats). */
typedef struct ms_plugin_stat {
	const char *name; /* static, e.g. "duration.reached" */
	uint64_t value;
} ms_plugin_stat;

/*
 * The descriptor the entry point fills. Required: name, open, decide,
 * close. Optional (NULL allowed): version, projection_of, stats.
 */
typedef struct ms_plugin_desc {
	uint32_t
	        struct_size; /* sizeof(ms_plugin_desc) as the plugin knows it */
	uint16_t abi_major;
	uint16_t abi_minor;
	const char *name;    /* [a-z0-9_-]+, the key of the plugin's stats */
	const char *version; /* free text, may be NULL */
	uint32_t projection; /* enum ms_proj: every column it may read */
	/*
	 * Parse config (NUL-terminated; "" when none was given) and create a
	 * state. On failure return non-zero and write a NUL-terminated message
	 * naming the offending key into err (errlen bytes, at least 256):
	 * MS_PLUGIN_OPEN_NOMEM when memory ran out (the config is not to
	 * blame), any other non-zero value for a config refused.
	 */
	int (*open)(const char *config, const ms_plugin_host *host, char *err,
	            size_t errlen, void **state);
	/*
	 * Decide batch->ntraces traces: write verdict[i] for traces[i], i < n
	 * (n == batch->ntraces) and return how many verdicts were written;
	 * a negative return is an error. Anything but n, or a verdict other
	 * than MS_VERDICT_KEEP/DROP, makes the host ignore the whole call and
	 * keep every trace.
	 */
	int64_t (*decide)(void *state, const ms_plugin_batch *batch,
	                  uint8_t *verdict, size_t n);
	void (*close)(void *state);
	/* Optional: the columns this state reads (a subset of projection),
	 * e.g. tags only when tag rules are configured. */
	uint32_t (*projection_of)(void *state);
	/* Optional: copy up to cap counters into out, return how many exist.
	 * Safe to call between decide() calls. */
	size_t (*stats)(void *state, ms_plugin_stat *out, size_t cap);
} ms_plugin_desc;

/*
 * The entry point: fill the first desc_size bytes of *desc (the host has
 * zeroed it) and set desc->struct_size to the number of bytes filled
 * (never more than desc_size). Return 0, or non-zero to refuse loading.
 */
typedef int (*ms_plugin_entry_fn)(ms_plugin_desc *desc, size_t desc_size);

/*
 * Helper for plugins: fill the host's descriptor from a complete static
 * one, copying only what the host has room for.
 */
static inline int
ms_plugin_fill(ms_plugin_desc *desc, size_t desc_size,
               const ms_plugin_desc *mine)
{
	const unsigned char *src = (const unsigned char *)mine;
	unsigned char *dst = (unsigned char *)desc;
	size_t n = desc_size < sizeof(*mine) ? desc_size : sizeof(*mine);
	if (n < sizeof(uint32_t))
		return -1;
	for (size_t i = 0; i < n; i++)
		dst[i] = src[i];
	desc->struct_size = (uint32_t)n;
	return 0;
}

/*
 * Define the exported entry point of a plugin whose descriptor is one
 * complete static struct, handed to the host through ms_plugin_fill:
 *
 *   static const ms_plugin_desc my_desc = { .struct_size = ..., ... };
 *   MS_PLUGIN_DEFINE(my_desc)
 *
 * Plain C over the declarations above; the ABI does not depend on it.
 */
#define MS_PLUGIN_DEFINE(desc)                                                 \
	MS_PLUGIN_EXPORT int ms_plugin_entry(ms_plugin_desc *ms_desc_,         \
	                                     size_t ms_desc_size_);            \
	int ms_plugin_entry(ms_plugin_desc *ms_desc_, size_t ms_desc_size_)    \
	{                                                                      \
		return ms_plugin_fill(ms_desc_, ms_desc_size_, &(desc));       \
	}

#endif
