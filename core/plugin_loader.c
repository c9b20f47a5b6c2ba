/*
 * plugin_loader.c - one job: loading a sampler plugin. It turns a .so into
 * an opened ms_plugin: dlopen, the entry symbol, ABI and descriptor
 * checks, a checksum of the file, open() with the config. Running plugins
 * as a chain is chain.c's; parsing chain specs is chain_spec.c's.
 *
 * The file is pinned: it is opened once, its checksum is taken from that
 * descriptor and the library dlopen()ed through it (/proc/self/fd/N), so
 * the bytes checksummed are the bytes loaded, whatever is renamed over
 * the path meanwhile. The descriptor stays open with the plugin, so that
 * a plugin host (plugin_host.c) loads the same file, not what the path
 * names by then, and checks its checksum against the one recorded.
 *
 * An ms_plugin is reference counted: its owner holds one reference, every
 * call the chain abandoned after a timeout one more (ms__plugin_retain).
 * close() and dlclose() run when the count reaches 0, on whichever thread
 * drops it.
 */
#define _GNU_SOURCE /* dlinfo */
#define XXH_STATIC_LINKING_ONLY
#include "ms_loader.h"
#include "ms_clock.h"
#include "ms_enum.h"
#include "pipeline_int.h"

#include <xxhash.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

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
	int fd; /* the pinned file (-1 before the load) */
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

/* The plugin whose code runs on this thread, and in which callback. The
 * one piece of state in core outside an object, and necessarily so: a
 * fatal signal handler has nothing else to find the crashing call by. */
enum plugin_cb { CB_LOAD, CB_ENTRY, CB_OPEN, CB_DECIDE, CB_STATS, CB_CLOSE };
static const char *const cb_names[] = {
	[CB_LOAD] = "dlopen (its library constructors)",
	[CB_ENTRY] = "its entry point",
	[CB_OPEN] = "open()",
	[CB_DECIDE] = "Decide",
	[CB_STATS] = "stats()",
	[CB_CLOSE] = "close()",
};
static _Thread_local const char *in_plugin;
static _Thread_local enum plugin_cb in_callback;

const char *
ms_plugin_in_decide(void)
{
	return in_plugin && in_callback == CB_DECIDE ? in_plugin : NULL;
}

const char *
ms_plugin_in_callback(const char **callback)
{
	if (callback)
		*callback = in_plugin ? cb_names[in_callback] : NULL;
	return in_plugin;
}

/* Mark the thread as running callback cb of plugin name; returns what was
 * marked before, for plugin_leave. */
typedef struct plugin_mark {
	const char *plugin;
	enum plugin_cb callback;
} plugin_mark;

static plugin_mark
plugin_enter(const char *name, enum plugin_cb cb)
{
	plugin_mark outer = { in_plugin, in_callback };
	in_callback = cb;
	in_plugin = name;
	return outer;
}

static void
plugin_leave(plugin_mark outer)
{
	in_plugin = outer.plugin;
	in_callback = outer.callback;
}

void
ms__plugin_text_clean(char *dst, size_t cap, const char *src, size_t srcmax)
{
	if (!cap)
		return;
	size_t n = 0, len = src ? strnlen(src, srcmax) : 0;
	bool cut = false;
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)src[i];
		char out = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
		if (ch == '\n' || ch == '\r' || ch == '\t') {
			if (n == 0 || dst[n - 1] == ' ')
				continue; /* one space per run of breaks */
			out = ' ';
		}
		if (n + 1 >= cap) {
			cut = true;
			break;
		}
		dst[n++] = out;
	}
	if (len == srcmax)
		cut = true; /* no end within what may be read */
	while (n && dst[n - 1] == ' ')
		n--;
	if (cut && cap > 4) {
		if (n > cap - 4)
			n = cap - 4;
		memcpy(dst + n, "...", 3);
		n += 3;
	}
	dst[n] = '\0';
}

void
ms_plugin_text_clean(char *dst, size_t cap, const char *src, size_t srcmax)
{
	ms__plugin_text_clean(dst, cap, src, srcmax);
}

static void
host_log(void *ctx, int level, const char *plugin, const char *msg)
{
	ms_plugin *p = ctx;
	if (!p || !p->log)
		return;
	/* A plugin's words reach terminals: one printable line. The
	 * plugin argument is the plugin's own (its checked name). */
	char line[MS_PLUGIN_MSG_MAX + 1];
	ms__plugin_text_clean(line, sizeof(line), msg, 4096);
	(void)plugin;
	p->log(p->log_ctx, level, p->name, line);
}

static int64_t
host_now(void *ctx)
{
	(void)ctx;
	return ms_mono_ns();
}

/* The checksum of the file open at fd, read from its start whatever the
 * descriptor's offset (a host shares it with the workbench). */
static int
checksum_fd(int fd, const char *path, char out[33], ms_errbuf *eb)
{
	XXH3_state_t st;
	unsigned char buf[16384];
	XXH3_128bits_reset(&st);
	off_t at = 0;
	for (;;) {
		ssize_t n = pread(fd, buf, sizeof(buf), at);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return ms_fail(eb, ms_err_from_errno(errno),
			               "plugin %s: read error: %s", path,
			               strerror(errno));
		if (n == 0)
			break;
		XXH3_128bits_update(&st, buf, (size_t)n);
		at += n;
	}
	XXH128_hash_t h = XXH3_128bits_digest(&st);
	snprintf(out, 33, "%016llx%016llx", (unsigned long long)h.high64,
	         (unsigned long long)h.low64);
	return 0;
}

/* Open p's file once (the pin); everything of the load reads it there. */
static int
pin_file(ms_plugin *p, ms_errbuf *eb)
{
	int fd = open(p->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ms_fail(eb, ms_err_from_errno(errno),
		               "plugin %s: cannot read: %s", p->path,
		               strerror(errno));
	struct stat sb;
	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
		close(fd);
		return ms_fail(eb, MS_ERR_PLUGIN,
		               "plugin %s: not a regular file", p->path);
	}
	p->fd = fd;
	return 0;
}

void
ms__plugin_close_state(ms_plugin *p)
{
	if (!p->opened || !p->desc.close)
		return;
	plugin_mark outer = plugin_enter(p->name, CB_CLOSE);
	p->desc.close(p->state);
	plugin_leave(outer);
	p->opened = false;
}

bool
ms__plugin_has_close(const ms_plugin *p)
{
	return p->opened && p->desc.close;
}

void
ms__plugin_free(ms_plugin *p)
{
	if (!p)
		return;
	if (p->dl)
		dlclose(p->dl);
	if (p->fd >= 0)
		close(p->fd);
	ms_mem_free(p->mem, p->path, p->path_size);
	ms_mem_free(p->mem, p, sizeof(*p));
}

static void
plugin_destroy(ms_plugin *p)
{
	ms__plugin_close_state(p);
	ms__plugin_free(p);
}

bool
ms__plugin_drop(ms_plugin *p)
{
	return p && atomic_fetch_sub(&p->refs, 1) == 1;
}

void
ms__plugin_retain(ms_plugin *p)
{
	atomic_fetch_add(&p->refs, 1);
}

void
ms_plugin_unload(ms_plugin *p)
{
	if (!p)
		return;
	if (ms__plugin_drop(p))
		plugin_destroy(p);
}

bool
ms__plugin_name_valid(const char *s)
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

/* Is the object dl maps the file sb describes? Its dynamic section's
 * mapping in /proc/self/maps names the file's device and inode. */
static bool
loaded_from(void *dl, const struct stat *sb)
{
	struct link_map *lm = NULL;
	if (dlinfo(dl, RTLD_DI_LINKMAP, &lm) != 0 || !lm)
		return false;
	unsigned long at = (unsigned long)(uintptr_t)lm->l_ld, lo, hi, ino;
	unsigned maj, mnr;
	char line[512];
	bool same = false;
	FILE *f = fopen("/proc/self/maps", "re");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx %*s %*s %x:%x %lu", &lo, &hi, &maj,
		           &mnr, &ino) == 5 &&
		    at >= lo && at < hi) {
			same = maj == major(sb->st_dev) &&
			       mnr == minor(sb->st_dev) && ino == sb->st_ino;
			break;
		}
	if (f)
		fclose(f);
	return same;
}

/* The name to dlopen p's pinned file by, /proc/self/fd/N, into name. The
 * dynamic loader knows an object by the name it was opened by first, and
 * a descriptor number is reused once closed: a name that already stands
 * for another file (whose descriptor was N once) is left for a higher
 * descriptor of the same file. */
static int
pinned_name(ms_plugin *p, const struct stat *sb, char name[40], ms_errbuf *eb)
{
	for (int tries = 0; tries < 16; tries++) {
		snprintf(name, 40, "/proc/self/fd/%d", p->fd);
		void *known = dlopen(name, RTLD_LAZY | RTLD_NOLOAD);
		bool other = known && !loaded_from(known, sb);
		if (known)
			dlclose(known);
		if (!other)
			return 0;
		int fd = fcntl(p->fd, F_DUPFD_CLOEXEC, p->fd + 1);
		if (fd < 0)
			break;
		close(p->fd);
		p->fd = fd;
	}
	return ms_fail(eb, MS_ERR_PLUGIN,
	               "plugin %s: no descriptor name to load it by that the "
	               "dynamic loader does not know for another file",
	               p->path);
}

/* Step 1 of a load: dlopen the pinned file (through its descriptor), find
 * the entry symbol and let it fill the descriptor. */
static int
load_entry(ms_plugin *p, const char *path, ms_errbuf *eb)
{
	char pinned[40];
	struct stat sb;
	int rc;
	if (fstat(p->fd, &sb) != 0)
		return ms_fail(eb, ms_err_from_errno(errno),
		               "plugin %s: fstat: %s", path, strerror(errno));
	if ((rc = pinned_name(p, &sb, pinned, eb)))
		return rc;
	dlerror();
	plugin_mark outer = plugin_enter(path, CB_LOAD);
	p->dl = dlopen(pinned, RTLD_NOW | RTLD_LOCAL);
	plugin_leave(outer);
	if (!p->dl) {
		const char *e = dlerror();
		return ms_fail(eb, MS_ERR_PLUGIN,
		               "plugin %s: dlopen failed: %s", path,
		               e ? e : "unknown error");
	}
	if (!loaded_from(p->dl, &sb))
		return ms_fail(eb, MS_ERR_PLUGIN,
		               "plugin %s: the dynamic loader gave another "
		               "file than the one checksummed",
		               path);
	dlerror();
	void *sym = dlsym(p->dl, MS_PLUGIN_ENTRY_SYMBOL);
	if (!sym) {
		const char *e = dlerror();
		return ms_fail(eb, MS_ERR_PLUGIN,
		               "plugin %s: no entry symbol %s: %s", path,
		               MS_PLUGIN_ENTRY_SYMBOL, e ? e : "not found");
	}
	ms_plugin_entry_fn entry;
	memcpy(&entry, &sym, sizeof(entry)); /* object -> function pointer */
	memset(&p->desc, 0, sizeof(p->desc));
	outer = plugin_enter(p->path, CB_ENTRY);
	int refused = entry(&p->desc, sizeof(p->desc));
	plugin_leave(outer);
	if (refused != 0)
		return ms_fail(eb, MS_ERR_PLUGIN,
		               "plugin %s: entry point refused to load", path);
	return 0;
}

/* Step 2: the descriptor's size and ABI versions, its required fields
 * and name; then what the host keeps of it (name, version, projection),
 * with the optional callbacks it did not fill cleared. */
static int
check_desc(ms_plugin *p, const char *path, ms_errbuf *eb)
{
	ms_plugin_desc *d = &p->desc;
	if (d->struct_size > sizeof(*d))
		d->struct_size = sizeof(*d); /* never read past our copy */
	if (d->struct_size <
	    offsetof(ms_plugin_desc, abi_minor) + sizeof(d->abi_minor))
		return ms_fail(eb, MS_ERR_PLUGIN,
		               "plugin %s: descriptor too small (%u bytes)",
		               path, (unsigned)d->struct_size);
	if (d->abi_major != MS_PLUGIN_ABI_MAJOR)
		return ms_fail(eb, MS_ERR_PLUGIN,
		               "plugin %s: ABI major %u, host supports major "
		               "%u",
		               path, (unsigned)d->abi_major,
		               (unsigned)MS_PLUGIN_ABI_MAJOR);
	if (d->abi_minor > MS_PLUGIN_ABI_MINOR)
		return ms_fail(eb, MS_ERR_PLUGIN,
		               "plugin %s: ABI minor %u is newer than the "
		               "host's %u",
		               path, (unsigned)d->abi_minor,
		               (unsigned)MS_PLUGIN_ABI_MINOR);
	const char *missing = NULL;
	if (!DESC_HAS(d, name) || !d->name)
		missing = "name";
	else if (!DESC_HAS(d, open) || !d->open)
		missing = "open";
	else if (!DESC_HAS(d, decide) || !d->decide)
		missing = "decide";
	else if (!DESC_HAS(d, close) || !d->close)
		missing = "close";
	if (missing)
		return ms_fail(eb, MS_ERR_PLUGIN,
		               "plugin %s: descriptor lacks required field "
		               "'%s'",
		               path, missing);
	if (!ms__plugin_name_valid(d->name)) {
		/* Shown as one printable line, whatever the plugin put in
		 * it (the name is read up to 256 bytes, shown up to 80). */
		char shown[81];
		ms__plugin_text_clean(shown, sizeof(shown), d->name, 256);
		return ms_fail(eb, MS_ERR_PLUGIN,
		               "plugin %s: name \"%s\" refused: it must be "
		               "1-63 of [a-z0-9_-]",
		               path, shown);
	}
	snprintf(p->name, sizeof(p->name), "%s", d->name);
	if (DESC_HAS(d, version) && d->version)
		ms__plugin_text_clean(p->version, sizeof(p->version),
		                      d->version, 256);
	if (!DESC_HAS(d, projection_of))
		d->projection_of = NULL;
	if (!DESC_HAS(d, stats))
		d->stats = NULL;
	p->projection = DESC_HAS(d, projection) ? d->projection : 0;
	p->projection &= MS_PROJ_ALL;
	return 0;
}

/* Step 3: the host services table, then the plugin's open() with its
 * config (an open() that returns non-zero refused its config, as the
 * ABI has it: MS_ERR_CONFIG; MS_PLUGIN_OPEN_NOMEM ran out of memory:
 * MS_ERR_NOMEM); its projection_of() may narrow what it
 * reads. The chain calls
 * it on a worker thread of its own, bounded by its open timeout
 * (chain.c). */
int
ms__plugin_open(ms_plugin *p, const char *config, ms_errbuf *eb)
{
	ms_plugin_desc *d = &p->desc;
	p->host.struct_size = sizeof(p->host);
	p->host.abi_major = MS_PLUGIN_ABI_MAJOR;
	p->host.abi_minor = MS_PLUGIN_ABI_MINOR;
	p->host.ctx = p;
	p->host.log = host_log;
	p->host.now_ns = host_now;
	char err[512];
	err[0] = '\0';
	plugin_mark outer = plugin_enter(p->name, CB_OPEN);
	int rc = d->open(config ? config : "", &p->host, err, sizeof(err),
	                 &p->state);
	plugin_leave(outer);
	if (rc != 0) {
		/* The plugin's words, as one printable line of at most
		 * MS_PLUGIN_MSG_MAX bytes: they end up on a terminal. */
		char shown[MS_PLUGIN_MSG_MAX + 1];
		err[sizeof(err) - 1] = '\0';
		ms__plugin_text_clean(shown, sizeof(shown), err, sizeof(err));
		if (rc == MS_PLUGIN_OPEN_NOMEM)
			return ms_fail(eb, MS_ERR_NOMEM,
			               "plugin %s (%s): open: out of memory "
			               "(not its config): %s",
			               p->path, p->name,
			               shown[0] ? shown : "no message");
		return ms_fail(eb, MS_ERR_CONFIG, "plugin %s (%s): open: %s",
		               p->path, p->name, shown[0] ? shown : "failed");
	}
	p->opened = true;
	if (d->projection_of) {
		outer = plugin_enter(p->name, CB_OPEN);
		p->projection = d->projection_of(p->state) & p->projection;
		plugin_leave(outer);
	}
	return 0;
}

int
ms__plugin_new(ms_plugin **out, const char *path,
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
		return ms_fail(eb, MS_ERR_NOMEM,
		               "plugin %s: out of memory for its handle (%zu "
		               "bytes)",
		               path, sizeof(*p));
	atomic_init(&p->refs, 1);
	p->fd = -1;
	p->mem = opts->mem;
	p->log = opts->log;
	p->log_ctx = opts->log_ctx;
	p->path_size = strlen(path) + 1;
	p->path = ms_mem_dup(opts->mem, path, p->path_size);
	if (!p->path) {
		size_t want = p->path_size;
		ms_mem_free(p->mem, p, sizeof(*p));
		return ms_fail(
		        eb, MS_ERR_NOMEM,
		        "plugin %s: out of memory for a copy of its path "
		        "(%zu bytes)",
		        path, want);
	}
	*out = p;
	return 0;
}

/* Steps 1 and 2 on the pinned file: its checksum (refused when expect is
 * given and differs), dlopen through the descriptor, the descriptor. */
static int
load_pinned(ms_plugin *p, const char *expect, ms_errbuf *eb)
{
	int rc;
	if ((rc = checksum_fd(p->fd, p->path, p->checksum, eb)))
		return rc;
	if (expect && strcmp(expect, p->checksum) != 0)
		return ms_fail(eb, MS_ERR_PLUGIN,
		               "plugin %s: file changed since the run loaded "
		               "it (checksum %s then, %s now); not loaded",
		               p->path, expect, p->checksum);
	if ((rc = load_entry(p, p->path, eb)) ||
	    (rc = check_desc(p, p->path, eb)))
		return rc;
	return 0;
}

/* Steps 1 and 2: everything of a load but open(). */
int
ms__plugin_load_file(ms_plugin *p, ms_errbuf *eb)
{
	int rc = p->fd < 0 ? pin_file(p, eb) : 0;
	return rc ? rc : load_pinned(p, NULL, eb);
}

int
ms__plugin_load_fd(ms_plugin *p, int fd, const char *expect, ms_errbuf *eb)
{
	if (p->fd >= 0)
		close(p->fd);
	p->fd = fd;
	return load_pinned(p, expect, eb);
}

int
ms__plugin_fd(const ms_plugin *p)
{
	return p->fd;
}

int
ms_plugin_load(ms_plugin **out, const char *path,
               const ms_plugin_load_opts *opts, ms_errbuf *eb)
{
	ms_plugin *p;
	int rc = ms__plugin_new(&p, path, opts, eb);
	*out = NULL;
	if (rc)
		return rc;
	if ((rc = ms__plugin_load_file(p, eb)) ||
	    (rc = ms__plugin_open(p, opts ? opts->config : NULL, eb))) {
		plugin_destroy(p);
		return rc;
	}
	*out = p;
	return 0;
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
	plugin_mark outer = plugin_enter(p->name, CB_STATS);
	size_t k = p->desc.stats(p->state, out, cap);
	plugin_leave(outer);
	return k;
}

int64_t
ms_plugin_decide_direct(ms_plugin *p, const ms_plugin_batch *b,
                        uint8_t *verdict, size_t n)
{
	plugin_mark outer = plugin_enter(p->name, CB_DECIDE);
	int64_t ret = p->desc.decide(p->state, b, verdict, n);
	plugin_leave(outer);
	return ret;
}
