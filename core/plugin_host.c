/*
 * plugin_host.c - running one chain link's Decide in a child process, so
 * that a plugin that crashes, aborts, exits or hangs costs a fail-open and
 * not the workbench (`--plugin-host process`).
 *
 * The parent (ms__phost_*) spawns the host executable (the `mergescope`
 * binary, command `__plugin-host`), which loads the plugin with the same
 * loader and checks as in process and then serves Decide calls
 * (ms_plugin_host_main). Batches travel through a shared memory region
 * (memfd_create + mmap, handed over with SCM_RIGHTS whenever it is
 * replaced by a larger one); the host writes the verdicts into the same
 * region. A SOCK_SEQPACKET socket pair carries one small message each way
 * per call.
 *
 * Design:
 *  1. One host process per link; a host serves one call at a time.
 *  2. A call ends in one of three ways: a reply (OK), no reply before the
 *     timeout (the host is killed with SIGKILL and reaped: TIMEOUT), or the
 *     socket closing first (the host died; reaped, its end named: CRASHED;
 *     a host that broke it, sending something else, and lives on is
 *     killed within a second).
 *     After TIMEOUT or CRASHED the host is gone; the chain starts a fresh
 *     one for the link's next call. The host says when Decide has
 *     returned (REP_DECIDED), before it calls stats(): a call that then
 *     times out or whose host dies keeps the verdicts (AFTER_DECIDE).
 *  3. The region is only written by the parent before a request and by
 *     the host before its reply, so no lock is needed.
 *  4. Before each part of the plugin it runs outside Decide (its load,
 *     open(), stats()) the host says so (a REP_PHASE message, not an
 *     answer): a host that dies or hangs is named by the part it was in.
 *     The start (load, open(), the first stats()) is bounded by the
 *     chain's open timeout; a Decide call and the stats() after it by
 *     the Decide timeout; a stop (close()) by the close grace. A host
 *     started with no_stats never calls stats() (its link's stats()
 *     overran once: the chain reads the counters no more).
 *  5. What the plugin logs travels as REP_LOG messages (not answers) on
 *     the same channel, sent without waiting: a line that does not fit in
 *     the channel waits in the host's log queue (HOST_LOG_QUEUE lines,
 *     in order: while it holds any, new lines join it), which the host
 *     sends, waiting, before its next answer; a line that finds the queue
 *     full is counted, and the count comes with that answer
 *     (wire_rep.log_lost). So logging never holds the plugin for the
 *     channel, and a plugin that logs in a loop loses its later lines,
 *     not its first. The parent passes lines on while it waits for an
 *     answer (recv_rep).
 *  6. A host is the kernel's first choice when memory runs out, and its
 *     plugin may allocate only the chain's host_mem_max beyond what the
 *     host held once started (host_limit_memory): a leak fails in the
 *     host, not in the workbench's cgroup.
 *
 * Region layout (native byte order, every array 8-byte aligned, offsets
 * from the region's start): a wire_hdr, then the arrays the batch's
 * projection holds (wire_trace[ntraces], then per column an array of
 * nrows values; string columns as uint64 offsets of NUL-terminated
 * strings, a NULL body as UINT64_MAX), then the string bytes, then n
 * verdict bytes at verdict_off, then GUARD_LEN guard bytes.
 */
#define _GNU_SOURCE
#include "ms_chain.h"
#include "ms_clock.h"
#include "ms_fs.h"
#include "ms_loader.h"
#include "ms_mem.h"
#include "ms_thread.h"
#include "pipeline_int.h"
#include "plugin_host.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define WIRE_MAGIC 0x6d7370686f737431ull /* "msphost1" */
#define HOST_FD 3
#define PLUGIN_FD 4 /* the host's copy of the run's pinned plugin file */

enum wire_col {
	W_TRACES,
	W_SPAN,
	W_SEG,
	W_SVC,
	W_INST,
	W_ENDP,
	W_START,
	W_LAT,
	W_ERR,
	W_TAGFIRST,
	W_TAGS,
	W_TAGLEN,
	W_BODY,
	W_BODYLEN,
	W_COUNT
};

typedef struct wire_hdr {
	uint64_t magic;
	uint32_t projection;
	uint32_t pad;
	uint64_t ntraces, nrows, ntags;
	uint64_t off[W_COUNT]; /* 0 = column absent */
	uint64_t verdict_off;
} wire_hdr;

typedef struct wire_trace {
	uint64_t id_off;
	uint32_t id_len;
	uint32_t row_count;
	uint64_t row_first;
	int64_t min_start_ns, max_start_ns, max_end_ns;
} wire_trace;

/* One message each way. */
typedef struct wire_req {
	uint64_t region_size; /* the size of the region (new fd attached when
	                         it changed) */
	uint64_t n;
} wire_req;

/* What the host is about to run of the plugin (a REP_PHASE message), so
 * that the parent can name it when the host dies or hangs there. */
enum wire_phase {
	PH_LOAD,   /* dlopen (library constructors), entry point, checks */
	PH_OPEN,   /* open() */
	PH_STATS,  /* stats() */
	PH_DECIDE, /* Decide (set by the parent when it sends a request) */
	PH_CLOSE,  /* close() (set by the parent when it stops the host) */
	PH_COUNT
};
static const char *const phase_names[PH_COUNT] = {
	/* In parentheses: one name, not a comma forgotten between two. */
	[PH_LOAD] = ("loading (dlopen, its library constructors, its entry "
	             "point)"),
	[PH_OPEN] = "open()",
	[PH_STATS] = "stats()",
	[PH_DECIDE] = "Decide",
	[PH_CLOSE] = "close()",
};

enum wire_kind {
	REP_FINAL = 0, /* the answer to the start or to a request */
	REP_PHASE = 1, /* not an answer: phase says what runs next */
	REP_LOG = 2,   /* not an answer: a line the plugin logged, its
	                  level in phase, the line in msg */
	REP_DECIDED = 3, /* not an answer: Decide returned ret, its verdicts
	                    are in the region; stats() runs next */
};

typedef struct wire_rep {
	uint32_t kind;  /* enum wire_kind */
	uint32_t phase; /* REP_PHASE: enum wire_phase */
	int64_t ret;
	char msg[400];         /* the load error of the first reply, else "" */
	ms__phost_stats stats; /* the plugin's counters after the call */
	uint64_t log_lost;     /* REP_FINAL: lines not sent since the last */
} wire_rep;

/* Guard: bytes after the n verdicts of the region, set by the parent
 * before a request and checked after the reply. */
#define GUARD_LEN 64
#define GUARD_BYTE 0x5A

struct ms__phost {
	pid_t pid;
	int sock;
	int memfd;
	uint8_t *map;
	size_t size;
	bool sent_fd;       /* the host has the current region */
	enum wire_phase ph; /* what the host said it runs (or was asked) */
	ms__phost_log log;  /* line NULL: none */
	bool decided;       /* this call's Decide has returned (REP_DECIDED) */
	int64_t decided_ret; /* what it returned */
};

const char *
ms__phost_phase(const ms__phost *h)
{
	return h && h->ph < PH_COUNT ? phase_names[h->ph] : "Decide";
}

static size_t
al8(size_t x)
{
	return (x + 7) & ~(size_t)7;
}

/* ------------------------------------------------------------------ */
/* Serializing a batch                                                 */

static size_t
str_bytes(const char *const *col, size_t n)
{
	size_t s = 0;
	for (size_t i = 0; col && i < n; i++)
		s += (col[i] ? strlen(col[i]) : 0) + 1;
	return s;
}

/* Bytes the region needs for b and n verdicts; *blob_at gets where the
 * string bytes start. */
static size_t
wire_size(const ms_plugin_batch *b, size_t n, size_t *blob_at)
{
	size_t at = al8(sizeof(wire_hdr));
	at += al8(b->ntraces * sizeof(wire_trace));
	const void *cols8[] = { b->span_id,  b->segment_id, b->service,
		                b->instance, b->endpoint,   b->start_ns,
		                b->body };
	for (size_t i = 0; i < sizeof(cols8) / sizeof(*cols8); i++)
		if (cols8[i])
			at += al8(b->nrows * 8);
	if (b->latency_ms)
		at += al8(b->nrows * 4);
	if (b->is_error)
		at += al8(b->nrows);
	if (b->tag_first)
		at += al8((b->nrows + 1) * 8);
	if (b->tags)
		at += al8(b->ntags * 8);
	if (b->tag_len)
		at += al8(b->ntags * 4);
	if (b->body_len)
		at += al8(b->nrows * 4);
	*blob_at = at;
	size_t blob = 0;
	for (size_t i = 0; i < b->ntraces; i++)
		blob += b->traces[i].trace_id_len;
	blob += str_bytes(b->segment_id, b->nrows);
	blob += str_bytes(b->service, b->nrows);
	blob += str_bytes(b->instance, b->nrows);
	blob += str_bytes(b->endpoint, b->nrows);
	if (b->tags)
		for (size_t i = 0; i < b->ntags; i++)
			blob += b->tag_len ? b->tag_len[i] + 1
			                   : strlen(b->tags[i]) + 1;
	if (b->body && b->body_len)
		for (size_t i = 0; i < b->nrows; i++)
			blob += b->body[i] ? b->body_len[i] : 0;
	return al8(at + blob) + n + GUARD_LEN;
}

typedef struct wbuf {
	uint8_t *base;
	size_t at;   /* next array */
	size_t blob; /* next string byte */
} wbuf;

static uint64_t
put_bytes(wbuf *w, const void *p, size_t len, bool nul)
{
	uint64_t off = w->blob;
	memcpy(w->base + w->blob, p, len);
	w->blob += len;
	if (nul)
		w->base[w->blob++] = '\0';
	return off;
}

static uint64_t
put_array(wbuf *w, const void *src, size_t bytes)
{
	uint64_t off = w->at;
	memcpy(w->base + w->at, src, bytes);
	w->at += al8(bytes);
	return off;
}

static uint64_t
put_strs(wbuf *w, const char *const *col, size_t n)
{
	uint64_t off = w->at;
	uint64_t *o = (uint64_t *)(void *)(w->base + w->at);
	for (size_t i = 0; i < n; i++) {
		const char *s = col[i] ? col[i] : "";
		o[i] = put_bytes(w, s, strlen(s), true);
	}
	w->at += al8(n * 8);
	return off;
}

static void
wire_write(uint8_t *base, const ms_plugin_batch *b, size_t blob_at)
{
	wire_hdr *h = (wire_hdr *)(void *)base;
	memset(h, 0, sizeof(*h));
	h->magic = WIRE_MAGIC;
	h->projection = b->projection;
	h->ntraces = b->ntraces;
	h->nrows = b->nrows;
	h->ntags = b->ntags;
	wbuf w = { base, al8(sizeof(wire_hdr)), blob_at };
	h->off[W_TRACES] = w.at;
	wire_trace *t = (wire_trace *)(void *)(base + w.at);
	for (size_t i = 0; i < b->ntraces; i++) {
		const ms_plugin_trace *s = &b->traces[i];
		t[i] = (wire_trace){ put_bytes(&w, s->trace_id, s->trace_id_len,
			                       false),
			             s->trace_id_len,
			             s->row_count,
			             s->row_first,
			             s->min_start_ns,
			             s->max_start_ns,
			             s->max_end_ns };
	}
	w.at += al8(b->ntraces * sizeof(wire_trace));
	size_t r = b->nrows;
	if (b->span_id)
		h->off[W_SPAN] = put_array(&w, b->span_id, r * 8);
	if (b->segment_id)
		h->off[W_SEG] = put_strs(&w, b->segment_id, r);
	if (b->service)
		h->off[W_SVC] = put_strs(&w, b->service, r);
	if (b->instance)
		h->off[W_INST] = put_strs(&w, b->instance, r);
	if (b->endpoint)
		h->off[W_ENDP] = put_strs(&w, b->endpoint, r);
	if (b->start_ns)
		h->off[W_START] = put_array(&w, b->start_ns, r * 8);
	if (b->latency_ms)
		h->off[W_LAT] = put_array(&w, b->latency_ms, r * 4);
	if (b->is_error)
		h->off[W_ERR] = put_array(&w, b->is_error, r);
	if (b->tag_first)
		h->off[W_TAGFIRST] = put_array(&w, b->tag_first, (r + 1) * 8);
	if (b->tags) {
		h->off[W_TAGS] = w.at;
		uint64_t *o = (uint64_t *)(void *)(base + w.at);
		for (size_t i = 0; i < b->ntags; i++)
			o[i] = put_bytes(&w, b->tags[i],
			                 b->tag_len ? b->tag_len[i]
			                            : strlen(b->tags[i]),
			                 true);
		w.at += al8(b->ntags * 8);
	}
	if (b->tag_len)
		h->off[W_TAGLEN] = put_array(&w, b->tag_len, b->ntags * 4);
	if (b->body) {
		h->off[W_BODY] = w.at;
		uint64_t *o = (uint64_t *)(void *)(base + w.at);
		for (size_t i = 0; i < r; i++)
			o[i] = b->body[i] && b->body_len
			               ? put_bytes(&w, b->body[i],
			                           b->body_len[i], false)
			               : UINT64_MAX;
		w.at += al8(r * 8);
	}
	if (b->body_len)
		h->off[W_BODYLEN] = put_array(&w, b->body_len, r * 4);
	h->verdict_off = al8(w.blob);
}

/* ------------------------------------------------------------------ */
/* Parent side                                                         */

static int
send_req(ms__phost *h, const wire_req *rq, int fd)
{
	struct iovec iov = { (void *)rq, sizeof(*rq) };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct msghdr m;
	memset(&m, 0, sizeof(m));
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	if (fd >= 0) {
		memset(&u, 0, sizeof(u));
		m.msg_control = u.buf;
		m.msg_controllen = sizeof(u.buf);
		struct cmsghdr *c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	ssize_t w;
	do
		w = sendmsg(h->sock, &m, MSG_NOSIGNAL);
	while (w < 0 && errno == EINTR);
	return w == (ssize_t)sizeof(*rq) ? 0 : -1;
}

/* How a host that ended with wait status st ended, into why. */
static void
describe_end(int st, char *why, size_t n)
{
	if (WIFSIGNALED(st))
		snprintf(why, n, "killed by signal %d (%s)", WTERMSIG(st),
		         strsignal(WTERMSIG(st)));
	else if (WIFEXITED(st))
		snprintf(why, n, "exited with status %d", WEXITSTATUS(st));
}

/* Reap the host; describe how it ended into why. */
static void
reap(ms__phost *h, bool kill_first, char *why, size_t n)
{
	if (h->pid <= 0)
		return;
	if (kill_first)
		kill(h->pid, SIGKILL);
	int st = 0;
	pid_t r;
	do
		r = waitpid(h->pid, &st, 0);
	while (r < 0 && errno == EINTR);
	if (why && r == h->pid)
		describe_end(st, why, n);
	h->pid = -1;
}

/* The channel closed or broke before a reply: the host has died, or its
 * plugin wrote into the channel (or closed it) and goes on. Wait for it
 * to end
 * until `until` (mono ns), then kill it: a host that is still there is
 * not waited for without end. why says which. */
static void
reap_gone(ms__phost *h, int64_t until, char *why, size_t n)
{
	while (h->pid > 0) {
		int st = 0;
		pid_t r = waitpid(h->pid, &st, WNOHANG);
		if (r == h->pid) {
			h->pid = -1;
			describe_end(st, why, n);
			return;
		}
		if (r < 0 && errno != EINTR)
			break;
		if (ms_mono_ns() >= until) {
			reap(h, true, NULL, 0);
			snprintf(why, n,
			         "broke its channel to the workbench (no "
			         "answer) and did not end; plugin host killed");
			return;
		}
		struct timespec ts = { 0, 2000000L };
		nanosleep(&ts, NULL);
	}
	reap(h, true, why, n);
}

/* Wait for a reply until deadline (mono ns). 1 = reply, 0 = timeout,
 * -1 = the host is gone. */
static int
recv_rep(ms__phost *h, wire_rep *rep, int64_t deadline)
{
	for (;;) {
		int64_t left = deadline - ms_mono_ns();
		if (left <= 0)
			return 0;
		struct pollfd pf = { h->sock, POLLIN, 0 };
		int ms = (int)((left + 999999) / 1000000);
		int pr = poll(&pf, 1, ms);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr < 0)
			return -1;
		if (pr == 0)
			continue;
		ssize_t r = recv(h->sock, rep, sizeof(*rep), 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r != (ssize_t)sizeof(*rep))
			return -1;
		if (rep->kind == REP_PHASE) {
			if (rep->phase < PH_COUNT)
				h->ph = (enum wire_phase)rep->phase;
			continue;
		}
		if (rep->kind == REP_DECIDED) {
			h->ph = PH_STATS;
			h->decided = true;
			h->decided_ret = rep->ret;
			continue;
		}
		if (rep->kind == REP_LOG) {
			if (h->log.line) {
				char line[MS_PLUGIN_MSG_MAX + 1];
				ms__plugin_text_clean(line, sizeof(line),
				                      rep->msg,
				                      sizeof(rep->msg));
				h->log.line(h->log.ctx, (int)rep->phase,
				            h->log.plugin, line);
			}
			continue;
		}
		if (rep->log_lost && h->log.lost)
			h->log.lost(h->log.ctx, rep->log_lost);
		return 1;
	}
}

bool
ms__phost_stop(ms__phost *h, uint64_t grace_ns, char *why, size_t whylen)
{
	if (!h)
		return false;
	bool bad = false;
	if (h->sock >= 0)
		close(h->sock);
	h->sock = -1;
	/* A host told nothing more ends by itself (closing its plugin);
	 * one that does not within the grace is killed. */
	h->ph = PH_CLOSE;
	int64_t until = ms_mono_ns() + (int64_t)grace_ns;
	while (h->pid > 0) {
		int st;
		pid_t r = waitpid(h->pid, &st, WNOHANG);
		if (r == h->pid) {
			h->pid = -1;
			if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
				char end[128] = "";
				describe_end(st, end, sizeof(end));
				if (why)
					snprintf(why, whylen, "%s in close()",
					         end);
				bad = true;
			}
		} else if (r < 0 && errno != EINTR) {
			h->pid = -1;
		} else if (ms_mono_ns() >= until) {
			reap(h, true, NULL, 0);
			if (why)
				snprintf(why, whylen,
				         "close() did not return within %.3f "
				         "s; plugin host killed",
				         (double)grace_ns / 1e9);
			bad = true;
		} else {
			struct timespec ts = { 0, 10000000L };
			nanosleep(&ts, NULL);
		}
	}
	if (h->map)
		munmap(h->map, h->size);
	if (h->memfd >= 0)
		close(h->memfd);
	ms_mem_free(NULL, h, sizeof(*h));
	return bad;
}

void
ms__phost_free(ms__phost *h)
{
	(void)ms__phost_stop(h, 1000000000ull, NULL, 0);
}

/* The file to execute for host executable exe: /proc/self/exe when exe
 * names this process's own executable (as the kernel shows it, with
 * " (deleted)" once it was removed or replaced), so that every host of a
 * run is the binary the run started as, whatever happened to its path
 * since (a rebuild writes a new file there, or none while it links). */
static const char *
spawn_file(const char *exe)
{
	char self[MS_FS_PATH_MAX];
	ssize_t k = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (k <= 0)
		return exe;
	self[k] = '\0';
	const char *gone = " (deleted)";
	size_t n = strlen(exe), g = strlen(gone);
	if ((size_t)k > g && !strcmp(self + (size_t)k - g, gone))
		self[(size_t)k - g] = '\0';
	if (n > g && !strcmp(exe + n - g, gone))
		n -= g;
	return strlen(self) == n && !strncmp(self, exe, n) ? "/proc/self/exe"
	                                                   : exe;
}

/* A host's load error without the "plugin PATH: " it starts with: the
 * parent's "plugin host for PATH: " names the file already. */
static const char *
unprefixed(const char *msg, const char *path)
{
	size_t n = strlen(path);
	if (strncmp(msg, "plugin ", 7) == 0 && strncmp(msg + 7, path, n) == 0 &&
	    strncmp(msg + 7 + n, ": ", 2) == 0)
		return msg + 7 + n + 2;
	return msg;
}

int
ms__phost_start(ms__phost **out, const char *exe, const char *path,
                const char *config, const ms__phost_start_opts *o,
                enum ms__phost_result *how, ms_errbuf *eb)
{
	const uint64_t timeout_ns = o->timeout_ns;
	const ms__phost_log *log = o->log;
	*out = NULL;
	enum ms__phost_result ignored;
	if (!how)
		how = &ignored;
	*how = MS__PHOST_ERROR;
	if (!exe || !*exe)
		return ms_fail(eb, MS_ERR_INVAL,
		               "plugin host for %s: no host executable", path);
	ms__phost *h = ms_mem_calloc(NULL, 1, sizeof(*h));
	if (!h)
		return ms_fail(eb, MS_ERR_NOMEM,
		               "plugin host for %s: out of memory for its "
		               "state (%zu bytes)",
		               path, sizeof(*h));
	h->pid = -1;
	h->sock = h->memfd = -1;
	if (log)
		h->log = *log;
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		ms_mem_free(NULL, h, sizeof(*h));
		return ms_fail(eb, ms_err_from_errno(errno),
		               "plugin host for %s: socketpair: %s", path,
		               strerror(errno));
	}
	/* The run's own copy of the plugin file, at PLUGIN_FD in the host:
	 * from a descriptor above both targets, so that neither dup2
	 * overwrites the other's source. */
	int pin = o->pinned ? ms__plugin_fd(o->pinned) : -1;
	int pfd = pin >= 0 ? fcntl(pin, F_DUPFD_CLOEXEC, PLUGIN_FD + 1) : -1;
	if (pin >= 0 && pfd < 0) {
		int e = errno;
		close(sv[0]);
		close(sv[1]);
		ms_mem_free(NULL, h, sizeof(*h));
		return ms_fail(eb, ms_err_from_errno(e),
		               "plugin host for %s: cannot hand it the plugin "
		               "file: %s",
		               path, strerror(e));
	}
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, sv[1], HOST_FD);
	if (pfd >= 0)
		posix_spawn_file_actions_adddup2(&fa, pfd, PLUGIN_FD);
	char mem_max[24];
	snprintf(mem_max, sizeof(mem_max), "%llu",
	         (unsigned long long)o->mem_max);
	char *argv[] = { (char *)exe,
		         (char *)"__plugin-host",
		         (char *)path,
		         (char *)(config ? config : ""),
		         mem_max,
		         (char *)(o->no_stats ? "nostats" : ""),
		         (char *)(pfd >= 0 ? ms_plugin_checksum(o->pinned) : ""),
		         NULL };
	int rc = posix_spawn(&h->pid, spawn_file(exe), &fa, NULL, argv,
	                     environ);
	posix_spawn_file_actions_destroy(&fa);
	if (pfd >= 0)
		close(pfd);
	close(sv[1]);
	h->sock = sv[0];
	if (rc != 0) {
		h->pid = -1;
		ms__phost_free(h);
		return ms_fail(eb, MS_ERR_PLUGIN,
		               "plugin host for %s: cannot start %s: %s", path,
		               exe, strerror(rc));
	}
	/* The host answers once the plugin is loaded and opened. */
	wire_rep rep;
	h->ph = PH_LOAD;
	int got = recv_rep(h, &rep, ms_mono_ns() + (int64_t)timeout_ns);
	if (got != 1 || rep.ret != 0) {
		char why[128] = "", msg[sizeof(rep.msg) + 1];
		reap(h, true, why, sizeof(why));
		const char *ph = phase_names[h->ph];
		if (got == 1) {
			ms__plugin_text_clean(msg, sizeof(msg), rep.msg,
			                      sizeof(rep.msg));
			/* a refused config stays one, and an open() out
			 * of memory one (ms__plugin_open) */
			rc = ms_fail(eb,
			             rep.ret == MS_ERR_CONFIG ||
			                             rep.ret == MS_ERR_NOMEM
			                     ? rep.ret
			                     : MS_ERR_PLUGIN,
			             "plugin host for %s: %s", path,
			             unprefixed(msg, path));
		} else if (got == 0) {
			*how = MS__PHOST_TIMEOUT;
			if (o->in_stats)
				*o->in_stats = h->ph == PH_STATS;
			rc = ms_fail(eb, MS_ERR_TIMEOUT,
			             "plugin host for %s: no answer from its "
			             "plugin's %s within %.3f s; plugin host "
			             "killed",
			             path, ph, (double)timeout_ns / 1e9);
		} else {
			*how = MS__PHOST_CRASHED;
			rc = ms_fail(
			        eb, MS_ERR_PLUGIN,
			        "plugin host for %s: %s in its plugin's %s",
			        path, why[0] ? why : "ended", ph);
		}
		ms__phost_free(h);
		return rc;
	}
	*how = MS__PHOST_OK;
	*out = h;
	return 0;
}

/* The verdicts of a call whose Decide has returned, from the region into
 * verdict: ERROR if the plugin wrote over the batch's header before
 * them (sent: the header as the parent wrote it), OVERRUN if past them
 * into the guard, else OK. */
static enum ms__phost_result
take_verdicts(ms__phost *h, const wire_hdr *sent, uint8_t *verdict, size_t n,
              char *why, size_t whylen)
{
	if (memcmp(h->map, sent, sizeof(*sent)) != 0) {
		snprintf(why, whylen,
		         "Decide wrote outside its %zu verdicts, over the "
		         "batch's header before them in the shared region",
		         n);
		return MS__PHOST_ERROR;
	}
	const size_t voff = sent->verdict_off;
	memcpy(verdict, h->map + voff, n);
	bool overran = false;
	for (size_t i = 0; i < GUARD_LEN; i++)
		overran |= h->map[voff + n + i] != GUARD_BYTE;
	return overran ? MS__PHOST_OVERRUN : MS__PHOST_OK;
}

/* Decide returned (REP_DECIDED) but no answer followed: the host hung
 * past the deadline (got 0) or died (got < 0) in the stats() it runs
 * after Decide. It is killed if need be and reaped before the region is
 * read, so nothing writes the verdicts while they are taken; they and
 * Decide's return are the plugin's (AFTER_DECIDE), unless they are
 * broken as take_verdicts says. */
static enum ms__phost_result
after_decide(ms__phost *h, int got, const wire_hdr *sent, uint8_t *verdict,
             size_t n, int64_t *ret, uint64_t timeout_ns, char *why,
             size_t whylen)
{
	char end[96] = "";
	reap(h, true, end, sizeof(end));
	*ret = h->decided_ret;
	enum ms__phost_result res =
	        take_verdicts(h, sent, verdict, n, why, whylen);
	if (res != MS__PHOST_OK)
		return res;
	if (got == 0)
		snprintf(why, whylen,
		         "did not return within the %.3f s Decide timeout "
		         "(the call's); plugin host killed",
		         (double)timeout_ns / 1e9);
	else
		snprintf(why, whylen, "ended its plugin host (%s)",
		         end[0] ? end : "it closed its channel");
	return MS__PHOST_AFTER_DECIDE;
}

enum ms__phost_result
ms__phost_decide(ms__phost *h, const ms_plugin_batch *b, uint8_t *verdict,
                 size_t n, uint64_t timeout_ns, int64_t *ret,
                 ms__phost_stats *stats, char *why, size_t whylen)
{
	int64_t deadline = ms_mono_ns() + (int64_t)timeout_ns;
	size_t blob_at;
	size_t need = wire_size(b, n, &blob_at);
	if (need > h->size) {
		size_t sz = h->size ? h->size : 1u << 20;
		while (sz < need)
			sz *= 2;
		int fd = memfd_create("ms-batch", MFD_CLOEXEC);
		uint8_t *map = NULL;
		if (fd >= 0 && ftruncate(fd, (off_t)sz) == 0)
			map = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED,
			           fd, 0);
		if (fd < 0 || !map || map == MAP_FAILED) {
			snprintf(why, whylen, "shared memory of %zu bytes: %s",
			         sz, strerror(errno));
			if (fd >= 0)
				close(fd);
			return MS__PHOST_ERROR;
		}
		if (h->map)
			munmap(h->map, h->size);
		if (h->memfd >= 0)
			close(h->memfd);
		h->map = map;
		h->memfd = fd;
		h->size = sz;
		h->sent_fd = false;
	}
	wire_write(h->map, b, blob_at);
	/* The region is the host's to write while it runs the call, header
	 * included: what the parent reads back (where the verdicts are) is
	 * its own copy, never the region's word for it. */
	wire_hdr sent;
	memcpy(&sent, h->map, sizeof(sent));
	const size_t voff = sent.verdict_off;
	memset(h->map + voff, 0xA5, n);
	memset(h->map + voff + n, GUARD_BYTE, GUARD_LEN);
	h->ph = PH_DECIDE;
	wire_req rq = { h->size, n };
	if (send_req(h, &rq, h->sent_fd ? -1 : h->memfd) < 0) {
		reap(h, true, why, whylen);
		return MS__PHOST_CRASHED;
	}
	h->sent_fd = true;
	wire_rep rep;
	h->decided = false;
	int got = recv_rep(h, &rep, deadline);
	if (got <= 0 && h->decided)
		return after_decide(h, got, &sent, verdict, n, ret,
		                    timeout_ns, why, whylen);
	if (got == 0) {
		reap(h, true, NULL, 0);
		return MS__PHOST_TIMEOUT;
	}
	if (got < 0) {
		/* A host that died is reaped at once; one still running gets
		 * what is left of the call's time (at least 100 ms, at most a
		 * second) to end. */
		int64_t now = ms_mono_ns(), until = deadline;
		if (until < now + 100000000ll)
			until = now + 100000000ll;
		if (until > now + 1000000000ll)
			until = now + 1000000000ll;
		reap_gone(h, until, why, whylen);
		return MS__PHOST_CRASHED;
	}
	*ret = rep.ret;
	enum ms__phost_result res =
	        take_verdicts(h, &sent, verdict, n, why, whylen);
	if (res != MS__PHOST_OK)
		return res;
	if (stats) {
		*stats = rep.stats;
		if (stats->n > MS__PHOST_STATS)
			stats->n = MS__PHOST_STATS;
		for (uint32_t i = 0; i < stats->n; i++)
			stats->name[i][sizeof(stats->name[i]) - 1] = '\0';
	}
	return MS__PHOST_OK;
}

/* ------------------------------------------------------------------ */
/* Host side                                                           */

typedef struct host_batch {
	ms_plugin_batch b;
	ms_plugin_trace *traces;
	const char **strs[4]; /* segment, service, instance, endpoint */
	const char **tags;
	const uint8_t **body;
	size_t cap_traces, cap_rows, cap_tags;
} host_batch;

static void *
grow_arr(void *p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap && p)
		return p;
	size_t nc = need ? need : 1;
	void *q = ms_mem_realloc(NULL, p, *cap * elem, nc * elem);
	if (q)
		*cap = nc;
	return q;
}

/* Rebuild the batch's pointers over the mapping. Offsets come from the
 * parent, which the host trusts as much as its own memory. */
static int
host_read(host_batch *hb, const uint8_t *base, size_t size)
{
	const wire_hdr *h = (const wire_hdr *)(const void *)base;
	if (size < sizeof(*h) || h->magic != WIRE_MAGIC)
		return -1;
	ms_plugin_batch *b = &hb->b;
	memset(b, 0, sizeof(*b));
	b->struct_size = sizeof(*b);
	b->projection = h->projection;
	b->ntraces = h->ntraces;
	b->nrows = h->nrows;
	b->ntags = h->ntags;
	size_t ct = hb->cap_traces;
	ms_plugin_trace *t = grow_arr(hb->traces, &ct, b->ntraces, sizeof(*t));
	if (!t)
		return -1;
	hb->traces = t;
	hb->cap_traces = ct;
	const wire_trace *wt =
	        (const wire_trace *)(const void *)(base + h->off[W_TRACES]);
	for (size_t i = 0; i < b->ntraces; i++)
		t[i] = (ms_plugin_trace){
			base + wt[i].id_off, wt[i].id_len,
			wt[i].row_count,     wt[i].row_first,
			wt[i].min_start_ns,  wt[i].max_start_ns,
			wt[i].max_end_ns
		};
	b->traces = t;
	size_t r = b->nrows;
	if (r + 1 > hb->cap_rows || !hb->body) {
		size_t nc = r + 1;
		for (int k = 0; k < 4; k++) {
			const char **q =
			        ms_mem_realloc(NULL, hb->strs[k],
			                       hb->cap_rows * sizeof(char *),
			                       nc * sizeof(char *));
			if (!q)
				return -1;
			hb->strs[k] = q;
		}
		const uint8_t **q = ms_mem_realloc(NULL, hb->body,
		                                   hb->cap_rows * sizeof(*q),
		                                   nc * sizeof(*q));
		if (!q)
			return -1;
		hb->body = q;
		hb->cap_rows = nc;
	}
	static const enum wire_col scol[4] = { W_SEG, W_SVC, W_INST, W_ENDP };
	const char *const **dst[4] = { &b->segment_id, &b->service,
		                       &b->instance, &b->endpoint };
	for (int k = 0; k < 4; k++) {
		if (!h->off[scol[k]])
			continue;
		const uint64_t *o =
		        (const uint64_t *)(const void *)(base +
		                                         h->off[scol[k]]);
		for (size_t i = 0; i < r; i++)
			hb->strs[k][i] = (const char *)base + o[i];
		*dst[k] = hb->strs[k];
	}
#define COL(field, wc, type)                                                   \
	if (h->off[wc])                                                        \
	b->field = (type)(const void *)(base + h->off[wc])
	COL(span_id, W_SPAN, const uint64_t *);
	COL(start_ns, W_START, const int64_t *);
	COL(latency_ms, W_LAT, const uint32_t *);
	COL(is_error, W_ERR, const uint8_t *);
	COL(tag_first, W_TAGFIRST, const uint64_t *);
	COL(tag_len, W_TAGLEN, const uint32_t *);
	COL(body_len, W_BODYLEN, const uint32_t *);
#undef COL
	if (h->off[W_TAGS]) {
		size_t ctg = hb->cap_tags;
		const char **tg =
		        grow_arr(hb->tags, &ctg, b->ntags, sizeof(char *));
		if (!tg)
			return -1;
		hb->tags = tg;
		hb->cap_tags = ctg;
		const uint64_t *o =
		        (const uint64_t *)(const void *)(base + h->off[W_TAGS]);
		for (size_t i = 0; i < b->ntags; i++)
			tg[i] = (const char *)base + o[i];
		b->tags = tg;
	}
	if (h->off[W_BODY]) {
		const uint64_t *o =
		        (const uint64_t *)(const void *)(base + h->off[W_BODY]);
		for (size_t i = 0; i < r; i++)
			hb->body[i] = o[i] == UINT64_MAX ? NULL : base + o[i];
		b->body = hb->body;
	}
	return 0;
}

static int
host_recv(int sock, wire_req *rq, int *fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { rq, sizeof(*rq) };
	struct msghdr m;
	memset(&m, 0, sizeof(m));
	m.msg_iov = &iov;
	m.msg_iovlen = 1;
	m.msg_control = u.buf;
	m.msg_controllen = sizeof(u.buf);
	ssize_t r;
	do
		r = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
	while (r < 0 && errno == EINTR);
	if (r != (ssize_t)sizeof(*rq))
		return -1;
	*fd = -1;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
			memcpy(fd, CMSG_DATA(c), sizeof(int));
	return 0;
}

/* A message that is not an answer: kind REP_PHASE (what of the plugin
 * runs next) or REP_DECIDED (Decide returned ret). */
static void
host_note(int sock, enum wire_kind kind, enum wire_phase ph, int64_t ret)
{
	wire_rep rep;
	memset(&rep, 0, sizeof(rep));
	rep.kind = kind;
	rep.phase = ph;
	rep.ret = ret;
	ssize_t w;
	do
		w = send(sock, &rep, sizeof(rep), MSG_NOSIGNAL);
	while (w < 0 && errno == EINTR);
}

/* Say what of the plugin runs next (a REP_PHASE message). */
static void
host_phase(int sock, enum wire_phase ph)
{
	host_note(sock, REP_PHASE, ph, 0);
}

/* The host's log queue (design 5): lines that did not fit in the channel,
 * oldest at head; lines lost since the last reply. Under host_log_mu. */
#define HOST_LOG_QUEUE 256
static pthread_mutex_t host_log_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
	int level;
	char msg[MS_PLUGIN_MSG_MAX + 1];
} host_log_q[HOST_LOG_QUEUE];
static size_t host_log_head, host_log_n;
static uint64_t host_log_lost;

/* Send one line as a REP_LOG message; true when it went. */
static bool
host_log_put(int sock, int level, const char *msg, int flags)
{
	wire_rep rep;
	memset(&rep, 0, sizeof(rep));
	rep.kind = REP_LOG;
	rep.phase = (uint32_t)level;
	snprintf(rep.msg, sizeof(rep.msg), "%s", msg);
	ssize_t w;
	do
		w = send(sock, &rep, sizeof(rep), MSG_NOSIGNAL | flags);
	while (w < 0 && errno == EINTR);
	return w == (ssize_t)sizeof(rep);
}

/* Send queued lines, oldest first, until the queue is empty or a send
 * fails (flags MSG_DONTWAIT: the channel is full). Under host_log_mu. */
static void
host_log_drain_locked(int sock, int flags)
{
	while (host_log_n) {
		if (!host_log_put(sock, host_log_q[host_log_head].level,
		                  host_log_q[host_log_head].msg, flags)) {
			if (!(flags & MSG_DONTWAIT)) {
				/* The channel is gone: nobody reads them. */
				host_log_lost += host_log_n;
				host_log_n = 0;
			}
			return;
		}
		host_log_head = (host_log_head + 1) % HOST_LOG_QUEUE;
		host_log_n--;
	}
}

/* The plugin's log service in the host (ms_log_fn): each line, already
 * cleaned by the loader, sent without waiting, or queued (design 5). */
static void
host_log_send(void *ctx, int level, const char *plugin, const char *msg)
{
	int sock = *(const int *)ctx;
	(void)plugin;
	pthread_mutex_lock(&host_log_mu);
	host_log_drain_locked(sock, MSG_DONTWAIT);
	if (host_log_n == 0 &&
	    host_log_put(sock, level, msg ? msg : "", MSG_DONTWAIT)) {
		pthread_mutex_unlock(&host_log_mu);
		return;
	}
	if (host_log_n < HOST_LOG_QUEUE) {
		size_t at = (host_log_head + host_log_n++) % HOST_LOG_QUEUE;
		host_log_q[at].level = level;
		snprintf(host_log_q[at].msg, sizeof(host_log_q[at].msg), "%s",
		         msg ? msg : "");
	} else {
		host_log_lost++;
	}
	pthread_mutex_unlock(&host_log_mu);
}

/* Before an answer: every queued line, waiting for the parent to read
 * them (it does while it waits for the answer); the lines lost since the
 * last answer. */
static uint64_t
host_log_flush(int sock)
{
	pthread_mutex_lock(&host_log_mu);
	host_log_drain_locked(sock, 0);
	uint64_t lost = host_log_lost;
	host_log_lost = 0;
	pthread_mutex_unlock(&host_log_mu);
	return lost;
}

/* Whether the host runs its plugin (host_watch). */
static _Atomic bool host_in_plugin;

/* A reply: ret, msg (NULL: none) and the counters of p (NULL: none). */
static void
host_reply(int sock, int64_t ret, const char *msg, ms_plugin *p)
{
	wire_rep rep;
	if (p)
		host_phase(sock, PH_STATS);
	memset(&rep, 0, sizeof(rep));
	rep.kind = REP_FINAL;
	rep.ret = ret;
	if (msg)
		snprintf(rep.msg, sizeof(rep.msg), "%s", msg);
	ms_plugin_stat st[MS__PHOST_STATS];
	/* A workbench that ends while stats() hangs ends the host too. */
	atomic_store(&host_in_plugin, p != NULL);
	size_t k = p ? ms_plugin_stats(p, st, MS__PHOST_STATS) : 0;
	atomic_store(&host_in_plugin, false);
	/* What stats() logged too goes before the answer. */
	rep.log_lost = host_log_flush(sock);
	rep.stats.n = (uint32_t)(k < MS__PHOST_STATS ? k : MS__PHOST_STATS);
	for (uint32_t i = 0; i < rep.stats.n; i++) {
		snprintf(rep.stats.name[i], sizeof(rep.stats.name[i]), "%s",
		         st[i].name ? st[i].name : "");
		rep.stats.value[i] = st[i].value;
	}
	ssize_t w;
	do
		w = send(sock, &rep, sizeof(rep), MSG_NOSIGNAL);
	while (w < 0 && errno == EINTR);
}

/* The host's watch on its channel: while the plugin runs (loading,
 * opening, deciding), the workbench ending (killed, crashed: its end of
 * the channel closes) ends the host at once, rather than leaving it
 * behind in a Decide that may never return, for ever, under init. Between
 * calls the main loop sees the channel close itself and closes the
 * plugin. */
static void *
host_watch(void *arg)
{
	int sock = *(const int *)arg;
	for (;;) {
		struct pollfd pf = { sock, POLLRDHUP, 0 };
		int r = poll(&pf, 1, -1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 || (pf.revents & (POLLHUP | POLLRDHUP | POLLERR |
		                            POLLNVAL))) {
			if (atomic_load(&host_in_plugin))
				_exit(1);
			return NULL;
		}
	}
}

/* The host, not the workbench, is what the kernel kills first when
 * memory runs out (raising one's own oom_score_adj needs no privilege),
 * and its plugin may map at most max bytes more than the host holds now
 * (VmData, which counts a sanitizer's shadow already mapped): a leaking
 * plugin's malloc fails in its own process before the run's memory is
 * gone. Best effort: a host that cannot do either still serves. */
static void
host_limit_memory(uint64_t max)
{
	int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		(void)!write(fd, "1000", 4);
		close(fd);
	}
	if (!max)
		return;
	uint64_t data_kb = 0;
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "VmData: %" SCNu64, &data_kb) == 1)
			break;
	if (f)
		fclose(f);
	uint64_t lim = data_kb * 1024 + max;
	if (lim < max) /* wrapped */
		return;
	struct rlimit rl;
	if (getrlimit(RLIMIT_DATA, &rl) == 0 &&
	    (rl.rlim_cur == RLIM_INFINITY || lim < rl.rlim_cur)) {
		rl.rlim_cur = (rlim_t)lim;
		(void)setrlimit(RLIMIT_DATA, &rl);
	}
}

/* Load the plugin: from the file the workbench pinned (PLUGIN_FD, its
 * recorded checksum in argv[6]) when it handed one down, else by path. */
static int
host_load(ms_plugin *p, int argc, char **argv, ms_errbuf *eb)
{
	if (argc > 6 && argv[6][0]) {
		int fd = fcntl(PLUGIN_FD, F_DUPFD_CLOEXEC, PLUGIN_FD + 1);
		if (fd < 0)
			return ms_fail(eb, MS_ERR_PLUGIN,
			               "plugin %s: the plugin host was not "
			               "handed its file: %s",
			               argv[2], strerror(errno));
		close(PLUGIN_FD);
		return ms__plugin_load_fd(p, fd, argv[6], eb);
	}
	return ms__plugin_load_file(p, eb);
}

int
ms_plugin_host_main(int argc, char **argv)
{
	if (argc < 4)
		return 64;
	host_limit_memory(argc > 4 ? strtoull(argv[4], NULL, 10) : 0);
	static int sock = HOST_FD;
	atomic_store(&host_in_plugin, true);
	pthread_t watcher;
	if (ms_thread_start(&watcher, MS_THREAD_STACK, host_watch, &sock) == 0)
		pthread_detach(watcher);
	signal(SIGPIPE, SIG_IGN);
	/* Keys the terminal sends to the whole group are for the workbench,
	 * which ends its hosts itself. */
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	ms_plugin *p = NULL, *sp = NULL; /* sp: whose stats() to call */
	bool stats = !(argc > 5 && strcmp(argv[5], "nostats") == 0);
	ms_plugin_load_opts lo = { argv[3], NULL, host_log_send, &sock };
	ms_errbuf eb = { "" };
	host_phase(sock, PH_LOAD);
	int rc = ms__plugin_new(&p, argv[2], &lo, &eb);
	if (rc == 0 && (rc = host_load(p, argc, argv, &eb)) == 0) {
		host_phase(sock, PH_OPEN);
		rc = ms__plugin_open(p, argv[3], &eb);
	}
	if (rc) {
		ms_plugin_unload(p);
		host_reply(sock, rc, eb.msg, NULL);
		return 1;
	}
	atomic_store(&host_in_plugin, false);
	sp = stats ? p : NULL;
	host_reply(sock, 0, NULL, sp);
	host_batch hb;
	memset(&hb, 0, sizeof(hb));
	uint8_t *map = NULL;
	size_t size = 0;
	for (;;) {
		wire_req rq;
		int fd;
		if (host_recv(sock, &rq, &fd) < 0)
			break; /* the chain closed the link */
		if (fd >= 0) {
			if (map)
				munmap(map, size);
			size = rq.region_size;
			map = mmap(NULL, size, PROT_READ | PROT_WRITE,
			           MAP_SHARED, fd, 0);
			close(fd);
			if (map == MAP_FAILED) {
				map = NULL;
				break;
			}
		}
		if (!map || host_read(&hb, map, size) < 0)
			break;
		const wire_hdr *h = (const wire_hdr *)(const void *)map;
		if (h->verdict_off + rq.n > size)
			break;
		atomic_store(&host_in_plugin, true);
		int64_t ret = ms_plugin_decide_direct(
		        p, &hb.b, map + h->verdict_off, rq.n);
		atomic_store(&host_in_plugin, false);
		/* The verdicts are written: said before stats() runs, so
		 * that a stats() that hangs or crashes cannot lose them. */
		host_note(sock, REP_DECIDED, PH_STATS, ret);
		host_reply(sock, ret, NULL, sp);
	}
	ms_plugin_unload(p);
	if (map)
		munmap(map, size);
	ms_mem_free(NULL, hb.traces, hb.cap_traces * sizeof(*hb.traces));
	for (int k = 0; k < 4; k++)
		ms_mem_free(NULL, hb.strs[k], hb.cap_rows * sizeof(char *));
	ms_mem_free(NULL, hb.tags, hb.cap_tags * sizeof(char *));
	ms_mem_free(NULL, hb.body, hb.cap_rows * sizeof(*hb.body));
	return 0;
}
