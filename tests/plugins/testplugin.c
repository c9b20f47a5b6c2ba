/*
 * testplugin.c - misbehaving and scripted sampler plugins for the loader
 * and chain tests, one source built into several modules: TP_KIND selects
 * what the module does (see tests/cmake/plugins.cmake for the list).
 *
 *  slow      config "MS" or "MS/K": sleeps MS milliseconds in every decide
 *            (or only in calls 1, 1+K, 1+2K ...), then reads the whole
 *            batch (so a freed batch would be caught) and keeps all.
 *            "MS/K@PATH": those calls wait until the file PATH exists
 *            instead (at most 60 s), and read the batch before and
 *            after: stats "checked" counts such calls, "changed" those
 *            that found the batch changed meanwhile. "MS/K>F@PATH": the
 *            calls before call F (0-based) sleep MS milliseconds, the
 *            later ones wait for PATH as above. In a chain spec:
 *            tp_slow:{"slow":"CONFIG"}
 *  fail      decide returns an error
 *  short     returns one verdict fewer than asked
 *  badval    writes verdict 2
 *  badabi    declares ABI major 99
 *  newminor  declares an ABI minor newer than the host's
 *  nodecide  leaves decide NULL
 *  openfail  open refuses its config, naming a key
 *  mask      drops traces whose ID ends in a character listed in config
 *  olddesc   fills a descriptor that ends after close (an older minor)
 *  noentry   exports no entry symbol
 *  loop      decide never returns (sleeps in a loop)
 *  segv      decide writes to a page mapped without access (SIGSEGV)
 *  abort     decide calls abort() (SIGABRT)
 *  exit      decide calls exit(3)
 *  garble    decide writes three bytes into descriptor 3 (in a plugin
 *            host, its channel to the workbench: not an answer), then
 *            never returns; for --plugin-host process only (in process it
 *            would write into one of the workbench's files)
 *  openhang  open never returns (sleeps in a loop); config "MS" (digits)
 *            makes it return after MS milliseconds instead (decide keeps
 *            all)
 *  liar      lies in the way its config names (in a chain spec
 *            tp_liar:{"liar":"CONFIG"}): "parity:CHARS" drops the
 *            traces whose ID ends in one of CHARS on odd calls only
 *            (call 1, 3, ...); "first" drops the first trace of every
 *            batch; "rand:PCT" drops PCT% at random. Two write into the
 *            batch they were given: "renameid:CHARS" drops as mask and
 *            points each dropped entry's trace_id at the next entry's
 *            (when that one is kept); "narrow:CHARS" drops as mask and
 *            moves each dropped entry's bounds to one instant six hours
 *            before its start
 *  For loop, segv, abort, exit and garble, config "K" makes calls 0..K-1
 *  keep everything and only call K (and later ones) misbehave.
 *  openmsg   open fails with a message of several lines, control bytes
 *            (an escape sequence) and 400 more bytes
 *  closehang close never returns (sleeps in a loop)
 *  ctorhang  a library constructor never returns (at dlopen)
 *  entryhang the entry point never returns
 *  statshang stats never returns; config "CHARS": only once a decide
 *            has run, and decide drops as mask; "!CHARS": as "CHARS",
 *            but stats faults (SIGSEGV) instead of hanging
 *  overrun   decide writes n + 8 verdicts (keep) and returns n
 *  badname   declares a name with a newline and an escape sequence
 *  cbcrash   config "WHERE" or "WHERE@host" (in a chain spec
 *            tp_cbcrash:{"where":"CONFIG"}): SIGSEGV in open(), stats()
 *            or close() (WHERE is open, stats or close); with "@host"
 *            only in a plugin host process (`__plugin-host` in its
 *            command line), so that a chain's own copy in the workbench
 *            runs on
 *  log       logs through the host's log service: at open "opened",
 *            with a line break and an escape sequence in it ("opened\n
 *            \x1b[31mred"), then in every decide config "N" lines (1
 *            without a config; in a chain spec tp_log:{"log":"N"}),
 *            "call C line I", and keeps all; stats "logged" counts
 *            every line it logged, in this process
 *  underrun  decide keeps all and, in a plugin host, scribbles over
 *            everything before its verdicts in their mapping (the
 *            shared region's header and batch)
 *  spin      decide never returns and never sleeps (a busy loop, no
 *            system call)
 *  hog       decide allocates and touches config "MB" MiB (64 without a
 *            config) in every call and never frees it (a leak)
 *  bigcount  decide keeps all and returns INT64_MAX (more verdicts than
 *            it was asked for)
 */
#include "ms_plugin.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define K_SLOW 1
#define K_FAIL 2
#define K_SHORT 3
#define K_BADVAL 4
#define K_BADABI 5
#define K_NEWMINOR 6
#define K_NODECIDE 7
#define K_OPENFAIL 8
#define K_MASK 9
#define K_OLDDESC 10
#define K_NOENTRY 11
#define K_LOOP 12
#define K_SEGV 13
#define K_ABORT 14
#define K_EXIT 15
#define K_GARBLE 16
#define K_OPENHANG 17
#define K_LIAR 18
#define K_OPENMSG 19
#define K_CLOSEHANG 20
#define K_CTORHANG 21
#define K_ENTRYHANG 22
#define K_STATSHANG 23
#define K_OVERRUN 24
#define K_BADNAME 25
#define K_CBCRASH 26
#define K_LOG 27
#define K_UNDERRUN 28
#define K_SPIN 29
#define K_HOG 30
#define K_BIGCOUNT 31

#ifndef TP_KIND
#error TP_KIND must be set
#endif

/* Sleep for ever (the hang kinds). */
static void
hang(void)
{
	for (;;) {
		struct timespec ts = { 0, 50000000L };
		nanosleep(&ts, NULL);
	}
}

/* A real fault, on a page mapped without access (not a null store, which
 * the sanitizers would stop before it faults). */
static void
fault(void)
{
	volatile uint8_t *page =
	        mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	*page = 1;
}

/* Is this process a plugin host (`EXE __plugin-host ...`)? */
static bool
in_plugin_host(void)
{
	char buf[4096];
	int fd = open("/proc/self/cmdline", O_RDONLY);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	for (ssize_t i = 0; i < n; i++)
		if (!buf[i])
			buf[i] = ' ';
	buf[n] = '\0';
	return strstr(buf, "__plugin-host") != NULL;
}

/* cbcrash: fault if config (where[@host]) names callback cb. */
static void
crash_in(const char *where, const char *cb)
{
	if (TP_KIND != K_CBCRASH)
		return;
	size_t k = strlen(cb);
	if (strncmp(where, cb, k) != 0 || (where[k] && where[k] != '@'))
		return;
	if (where[k] == '@' && !in_plugin_host())
		return;
	fault();
}

#if TP_KIND == K_CTORHANG
__attribute__((constructor)) static void
tp_ctor(void)
{
	hang();
}
#endif

typedef struct tp_state {
	long sleep_ms;
	long every;
	long from; /* first call that misbehaves (loop, segv, abort, exit) */
	char drop_last[64];
	_Atomic uint64_t sum; /* checksum over batches read */
	_Atomic uint64_t calls;
	char gate[512]; /* slow: wait for this file, not MS; fail: the
	                   suffix of the IDs it fails on; cbcrash: where */
	_Atomic uint64_t checked, changed;
	const ms_plugin_host *host; /* log: its log service */
	_Atomic uint64_t logged;
} tp_state;

static int
tp_open(const char *config, const ms_plugin_host *host, char *err,
        size_t errlen, void **state)
{
	(void)host;
	if (TP_KIND == K_OPENHANG) {
		bool num = config && *config >= '0' && *config <= '9';
		long ms = num ? atol(config) : -1;
		struct timespec t = { 0, 10 * 1000000L };
		for (long waited = 0; ms < 0 || waited < ms; waited += 10)
			nanosleep(&t, NULL);
	}
	if (TP_KIND == K_OPENFAIL && config && !strcmp(config, "nomem")) {
		snprintf(err, errlen, "no memory for its tables");
		return MS_PLUGIN_OPEN_NOMEM;
	}
	if (TP_KIND == K_OPENFAIL) {
		strncpy(err, "unknown key \"bogus\"", errlen - 1);
		err[errlen - 1] = '\0';
		return -1;
	}
	if (TP_KIND == K_OPENMSG) {
		size_t k = (size_t)snprintf(
		        err, errlen,
		        "bad key \"x\"\n\x1b[2J\x1b[31mred\r\n\tnext "
		        "line\x07\x7f\x9b;");
		for (; k + 1 < errlen && k < 420; k++)
			err[k] = 'z';
		err[k < errlen ? k : errlen - 1] = '\0';
		return -1;
	}
	tp_state *s = calloc(1, sizeof(*s));
	if (!s)
		return -1;
	/* In a chain spec a config is a JSON object: {"slow":"CONFIG"},
	 * {"fail":"CONFIG"}, {"liar":"CONFIG"}. */
	char inner[600];
	const char *js = config ? strstr(config, "\":\"") : NULL;
	if ((TP_KIND == K_SLOW || TP_KIND == K_FAIL || TP_KIND == K_LIAR ||
	     TP_KIND == K_CBCRASH || TP_KIND == K_LOG || TP_KIND == K_HOG) &&
	    config && config[0] == '{' && js) {
		js += 3;
		size_t k = 0;
		while (js[k] && js[k] != '"' && k < sizeof(inner) - 1) {
			inner[k] = js[k];
			k++;
		}
		inner[k] = '\0';
		config = inner;
	}
	if (TP_KIND == K_SLOW) {
		s->sleep_ms = config && *config ? atol(config) : 100;
		const char *sl = config ? strchr(config, '/') : NULL;
		s->every = sl ? atol(sl + 1) : 1;
		if (s->every < 1)
			s->every = 1;
		const char *at = config ? strchr(config, '@') : NULL;
		if (at)
			strncpy(s->gate, at + 1, sizeof(s->gate) - 1);
		const char *gt = config ? strchr(config, '>') : NULL;
		if (gt && (!at || gt < at))
			s->from = atol(gt + 1);
	}
	/* fail: "DROP/MAX[/SUFFIX]" drops the traces whose ID ends in one
	 * of the characters DROP and fails every call of more than MAX
	 * traces, and every call with a trace whose ID ends in SUFFIX;
	 * without a config every call fails. */
	if (TP_KIND == K_FAIL && config && *config) {
		const char *sl = strchr(config, '/');
		size_t k = sl ? (size_t)(sl - config) : strlen(config);
		if (k >= sizeof(s->drop_last))
			k = sizeof(s->drop_last) - 1;
		memcpy(s->drop_last, config, k);
		s->every = sl ? atol(sl + 1) : 0;
		const char *sf = sl ? strchr(sl + 1, '/') : NULL;
		if (sf)
			strncpy(s->gate, sf + 1, sizeof(s->gate) - 1);
		s->from = 1; /* configured */
	}
	if (TP_KIND >= K_LOOP && config && *config)
		s->from = atol(config);
	if (TP_KIND == K_HOG)
		s->every = config && *config ? atol(config) : 64;
	if (TP_KIND == K_LIAR && config) {
		size_t k = strlen(config);
		memcpy(s->gate, config,
		       k < sizeof(s->gate) ? k : sizeof(s->gate) - 1);
		const char *c = strchr(config, ':');
		k = c ? strlen(c + 1) : 0;
		if (c)
			memcpy(s->drop_last, c + 1,
			       k < sizeof(s->drop_last)
			               ? k
			               : sizeof(s->drop_last) - 1);
		srand((unsigned)time(NULL) ^ (unsigned)getpid());
	}
	if ((TP_KIND == K_MASK || TP_KIND == K_STATSHANG) && config) {
		strncpy(s->drop_last, config, sizeof(s->drop_last) - 1);
	}
	if (TP_KIND == K_CBCRASH && config) {
		snprintf(s->gate, sizeof(s->gate), "%.100s", config);
		crash_in(s->gate, "open");
	}
	if (TP_KIND == K_LOG) {
		s->host = host;
		s->every = config && *config ? atol(config) : 1;
		host->log(host->ctx, MS_PLUGIN_LOG_INFO, TP_NAME,
		          "opened\n\x1b[31mred");
		atomic_fetch_add(&s->logged, 1);
	}
	*state = s;
	return 0;
}

/* Over everything a batch with no projection holds: each entry's ID,
 * row range and bounds. */
static uint64_t
batch_sum(const ms_plugin_batch *b)
{
	uint64_t sum = b->ntraces;
	for (size_t i = 0; i < b->ntraces; i++) {
		const ms_plugin_trace *t = &b->traces[i];
		for (uint32_t k = 0; k < t->trace_id_len; k++)
			sum = sum * 31 + t->trace_id[k];
		sum = sum * 31 + t->row_first;
		sum = sum * 31 + t->row_count;
		sum = sum * 31 + (uint64_t)t->min_start_ns;
		sum = sum * 31 + (uint64_t)t->max_end_ns;
	}
	return sum;
}

/* Drop the traces whose ID ends in one of s->drop_last. */
static void
drop_by_last(const tp_state *s, const ms_plugin_batch *b, uint8_t *verdict,
             size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const ms_plugin_trace *t = &b->traces[i];
		char last = (char)t->trace_id[t->trace_id_len - 1];
		if (last && strchr(s->drop_last, last))
			verdict[i] = MS_VERDICT_DROP;
	}
}

/* Where the mapping that holds p starts (/proc/self/maps); NULL if none. */
static uint8_t *
mapping_start(const void *p)
{
	FILE *f = fopen("/proc/self/maps", "r");
	if (!f)
		return NULL;
	char line[512];
	uint8_t *found = NULL;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 &&
		    (uintptr_t)p >= lo && (uintptr_t)p < hi)
			found = (uint8_t *)(uintptr_t)lo;
	}
	fclose(f);
	return found;
}

static int64_t
tp_decide(void *state, const ms_plugin_batch *b, uint8_t *verdict, size_t n)
{
	tp_state *s = state;
	uint64_t call = atomic_fetch_add(&s->calls, 1);
	memset(verdict, MS_VERDICT_KEEP, n);
	switch (TP_KIND) {
	case K_SLOW: {
		struct timespec ts = { s->sleep_ms / 1000,
			               (s->sleep_ms % 1000) * 1000000L };
		bool slow = call % (uint64_t)s->every == 0;
		bool gated = s->gate[0] && call >= (uint64_t)s->from;
		uint64_t before = batch_sum(b);
		if (slow && gated) {
			struct timespec tick = { 0, 10000000L };
			for (int i = 0; i < 6000 && access(s->gate, F_OK); i++)
				nanosleep(&tick, NULL);
		} else if (slow) {
			nanosleep(&ts, NULL);
		}
		uint64_t sum = batch_sum(b);
		if (slow && gated) {
			atomic_fetch_add(&s->checked, 1);
			if (sum != before)
				atomic_fetch_add(&s->changed, 1);
		}
		atomic_fetch_add(&s->sum, sum);
		return (int64_t)n;
	}
	case K_FAIL:
		if (!s->from || n > (size_t)s->every)
			return -3;
		for (size_t i = 0; s->gate[0] && i < n; i++) {
			const ms_plugin_trace *t = &b->traces[i];
			size_t sl = strlen(s->gate);
			if (t->trace_id_len >= sl &&
			    !memcmp(t->trace_id + t->trace_id_len - sl, s->gate,
			            sl))
				return -3;
		}
		drop_by_last(s, b, verdict, n);
		return (int64_t)n;
	case K_SHORT:
		return (int64_t)n - 1;
	case K_BADVAL:
		if (n)
			verdict[n - 1] = 2;
		return (int64_t)n;
	case K_OVERRUN:
		memset(verdict, MS_VERDICT_KEEP, n + 8);
		return (int64_t)n;
	case K_UNDERRUN:
		/* In a plugin host, whatever lies before the verdicts in
		 * their mapping (the shared region, from its start) is
		 * scribbled over; in process the verdicts are the chain's
		 * heap buffer, and nothing is. */
		if (in_plugin_host()) {
			uint8_t *start = mapping_start(verdict);
			if (start)
				memset(start, 0xEE, (size_t)(verdict - start));
		}
		return (int64_t)n;
	case K_MASK:
	case K_STATSHANG:
		drop_by_last(s, b, verdict, n);
		return (int64_t)n;
	case K_LIAR: {
		ms_plugin_trace *w = (ms_plugin_trace *)b->traces;
		if (!strncmp(s->gate, "parity:", 7)) {
			if (call % 2)
				drop_by_last(s, b, verdict, n);
		} else if (!strcmp(s->gate, "first")) {
			if (n)
				verdict[0] = MS_VERDICT_DROP;
		} else if (!strncmp(s->gate, "rand:", 5)) {
			long pct = atol(s->gate + 5);
			for (size_t i = 0; i < n; i++)
				if (rand() % 100 < pct)
					verdict[i] = MS_VERDICT_DROP;
		} else if (!strncmp(s->gate, "renameid:", 9)) {
			drop_by_last(s, b, verdict, n);
			for (size_t i = 0; i + 1 < n; i++)
				if (verdict[i] == MS_VERDICT_DROP &&
				    verdict[i + 1] == MS_VERDICT_KEEP) {
					w[i].trace_id = w[i + 1].trace_id;
					w[i].trace_id_len =
					        w[i + 1].trace_id_len;
				}
		} else if (!strncmp(s->gate, "narrow:", 7)) {
			drop_by_last(s, b, verdict, n);
			for (size_t i = 0; i < n; i++)
				if (verdict[i] == MS_VERDICT_DROP) {
					int64_t t = w[i].min_start_ns -
					            6 * 3600 * 1000000000LL;
					w[i].min_start_ns = t;
					w[i].max_start_ns = t;
					w[i].max_end_ns = t;
				}
		}
		return (int64_t)n;
	}
	case K_LOOP:
		while (call >= (uint64_t)s->from) {
			struct timespec ts = { 0, 50000000L };
			nanosleep(&ts, NULL);
		}
		return (int64_t)n;
	case K_SEGV:
		if (call >= (uint64_t)s->from) {
			/* A real fault, on a page mapped without access (not
			 * a null store, which the sanitizers would stop
			 * before it faults). */
			volatile uint8_t *page =
			        mmap(NULL, 4096, PROT_NONE,
			             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			*page = 1;
		}
		return (int64_t)n;
	case K_ABORT:
		if (call >= (uint64_t)s->from)
			abort();
		return (int64_t)n;
	case K_EXIT:
		if (call >= (uint64_t)s->from)
			exit(3);
		return (int64_t)n;
	case K_SPIN:
		for (volatile uint64_t k = 0;; k++)
			;
	case K_HOG: {
		size_t len = (size_t)s->every << 20;
		uint8_t *p = malloc(len);
		for (size_t i = 0; p && i < len; i += 4096)
			p[i] = 1;
		return p ? (int64_t)n : -1;
	}
	case K_BIGCOUNT:
		return INT64_MAX;
	case K_LOG:
		for (long i = 0; i < s->every; i++) {
			char line[64];
			snprintf(line, sizeof(line), "call %llu line %ld",
			         (unsigned long long)call, i);
			s->host->log(s->host->ctx, (int)(i % 4), TP_NAME, line);
			atomic_fetch_add(&s->logged, 1);
		}
		return (int64_t)n;
	case K_GARBLE:
		if (call >= (uint64_t)s->from) {
			if (write(3, "bad", 3) != 3)
				abort();
			for (;;) {
				struct timespec ts = { 0, 50000000L };
				nanosleep(&ts, NULL);
			}
		}
		return (int64_t)n;
	default:
		return (int64_t)n;
	}
}

static void
tp_close(void *state)
{
	tp_state *s = state;
	if (TP_KIND == K_CLOSEHANG)
		hang();
	crash_in(s->gate, "close");
	free(state);
}

static size_t
tp_stats(void *state, ms_plugin_stat *out, size_t cap)
{
	tp_state *s = state;
	if (TP_KIND == K_STATSHANG &&
	    (!s->drop_last[0] || atomic_load(&s->calls) > 0)) {
		if (s->drop_last[0] == '!')
			fault();
		hang();
	}
	crash_in(s->gate, "stats");
	if (cap >= 1)
		out[0] = (ms_plugin_stat){ "calls", atomic_load(&s->calls) };
	if (cap >= 2)
		out[1] = (ms_plugin_stat){ "sum", atomic_load(&s->sum) };
	if (TP_KIND == K_LOG && cap >= 3)
		out[2] = (ms_plugin_stat){ "logged", atomic_load(&s->logged) };
	if (TP_KIND == K_LOG)
		return 3;
	if (TP_KIND != K_SLOW)
		return 2;
	if (cap >= 3)
		out[2] =
		        (ms_plugin_stat){ "checked", atomic_load(&s->checked) };
	if (cap >= 4)
		out[3] =
		        (ms_plugin_stat){ "changed", atomic_load(&s->changed) };
	return 4;
}

#define STR2(x) #x
#define STR(x) STR2(x)

static const ms_plugin_desc tp_desc = {
	.struct_size = sizeof(ms_plugin_desc),
	.abi_major = TP_KIND == K_BADABI ? 99 : MS_PLUGIN_ABI_MAJOR,
	.abi_minor = TP_KIND == K_NEWMINOR ? MS_PLUGIN_ABI_MINOR + 1
	                                   : MS_PLUGIN_ABI_MINOR,
	.name = TP_KIND == K_BADNAME ? "tp_bad\nname\x1b[2J" : TP_NAME,
	.version = "test",
	.projection = MS_PROJ_NONE,
	.open = tp_open,
	.decide = TP_KIND == K_NODECIDE ? NULL : tp_decide,
	.close = tp_close,
	.stats = tp_stats,
};

#if TP_KIND == K_NOENTRY
MS_PLUGIN_EXPORT int not_the_entry(void);

int
not_the_entry(void)
{
	return tp_desc.abi_major;
}
#else
MS_PLUGIN_EXPORT int ms_plugin_entry(ms_plugin_desc *desc, size_t desc_size);

int
ms_plugin_entry(ms_plugin_desc *desc, size_t desc_size)
{
	if (TP_KIND == K_ENTRYHANG)
		hang();
	int rc = ms_plugin_fill(desc, desc_size, &tp_desc);
	if (rc == 0 && TP_KIND == K_OLDDESC)
		desc->struct_size =
		        (uint32_t)offsetof(ms_plugin_desc, projection_of);
	return rc;
}
#endif
