/*
 * outfile.c - a file the user named for output (an export, a JSON report),
 * written so that no existing file is lost by accident and no reader ever
 * sees half of one.
 *
 * The data goes to a file without a name in the target's directory
 * (O_TMPFILE), is flushed and fsynced, and only then gets the name: linked
 * to it without force, so the link itself refuses a name created
 * meanwhile; with force linked to a temporary name beside it and renamed
 * over the name. A process killed before the commit (an interrupted
 * export) leaves nothing at all: the kernel frees a file no name points
 * at. Where the file system has no O_TMPFILE (or /proc is not mounted to
 * link it), the data goes to a fresh named temporary file instead
 * (".<name>.<pid>-<hex>", <name> cut short where the whole would pass
 * NAME_MAX), renamed over the name at the end; without force the rename
 * refuses an existing name (RENAME_NOREPLACE, or link + unlink where the
 * file system has no such rename). Either way the rename or link cannot
 * cross file systems, and a failure never leaves a half-written target;
 * ms_outfile_abort removes a named temporary file, but a process killed
 * on that path leaves it.
 *
 * The stream writes through a cookie that keeps the errno of the first
 * write that failed: the writers check ferror() at their end, long after
 * errno has been overwritten, so only this can say why ("No space left on
 * device") and name the file (ms_outfile_commit, ms_outfile_fail).
 */
#define _GNU_SOURCE
#include "ms_clock.h"
#include "ms_fs.h"
#include "ev_private.h"
#include "ms_replay.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

struct ms_outfile {
	FILE *f;
	int fd;   /* the temporary file; -1 once closed */
	int werr; /* errno of the first write that failed, else 0 */
	bool force;
	bool anon;  /* fd has no name yet (O_TMPFILE) */
	char *path; /* the name the user gave */
	char *tmp;  /* the temporary file beside it; "" when none */
	size_t tmp_cap, dlen; /* tmp's size; the length of path's directory */
};

/* The stream's write: all of buf, or the errno kept and 0 returned. */
static ssize_t
cookie_write(void *c, const char *buf, size_t n)
{
	ms_outfile *o = c;
	size_t done = 0;
	while (done < n) {
		ssize_t k = write(o->fd, buf + done, n - done);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			if (!o->werr)
				o->werr = k < 0 ? errno : EIO;
			return (ssize_t)done;
		}
		done += (size_t)k;
	}
	return (ssize_t)n;
}

static int
cookie_close(void *c)
{
	ms_outfile *o = c;
	int rc = o->fd >= 0 ? close(o->fd) : 0;
	o->fd = -1;
	return rc;
}

/* The error of a write that failed, naming the file. */
static int
write_error(const ms_outfile *o, ms_errbuf *eb)
{
	int e = o->werr ? o->werr : EIO;
	return ms_fail(eb, ms_err_from_errno(e), "%s: write failed: %s",
	               o->path, strerror(e));
}

/* The error for an existing target, shared by open and commit. Every
 * message about the file begins "PATH: ", which the command line puts
 * after the option that named it. */
static int
exists_error(const char *path, ms_errbuf *eb)
{
	return ms_fail(eb, MS_ERR_EXISTS,
	               "%s: exists; not overwritten (give --force to replace "
	               "it)",
	               path);
}

static char *
dup_str(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = malloc(n);
	if (d)
		memcpy(d, s, n);
	return d;
}

/* The directory path is in, as named ("." when none), into buf. */
static void
dir_of(const char *path, char *buf, size_t n)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		snprintf(buf, n, ".");
	else if (slash == path)
		snprintf(buf, n, "/");
	else
		snprintf(buf, n, "%.*s", (int)(slash - path), path);
}

/* path does not exist (stat said e): its directory is to blame when it is
 * missing or not one, else the system's reason. */
static int
missing_error(const char *path, int e, ms_errbuf *eb)
{
	char dir[PATH_MAX];
	struct stat st;
	dir_of(path, dir, sizeof(dir));
	int de = stat(dir, &st) != 0 ? errno : 0;
	if (de == ENOENT)
		return ms_fail(eb, MS_ERR_NOTFOUND,
		               "%s: directory %s does not exist", path, dir);
	if (de == 0 && !S_ISDIR(st.st_mode))
		return ms_fail(eb, MS_ERR_INVAL,
		               "%s: directory %s is not a directory", path,
		               dir);
	return ms_fail(eb, ms_err_from_errno(e), "%s: %s", path, strerror(e));
}

int
ms_outfile_check(const char *path, bool force, ms_errbuf *eb)
{
	struct stat st;
	if (!path || !*path)
		return ms_fail(eb, MS_ERR_INVAL,
		               "output: expected a file name");
	if (stat(path, &st) == 0) {
		if (S_ISDIR(st.st_mode))
			return ms_fail(eb, MS_ERR_INVAL,
			               "%s: is a directory; expected a file "
			               "name",
			               path);
		if (!force)
			return exists_error(path, eb);
		if (!S_ISREG(st.st_mode))
			return ms_fail(eb, MS_ERR_INVAL,
			               "%s: exists and is not a regular file; "
			               "not replaced",
			               path);
	} else if (errno != ENOENT) {
		return missing_error(path, errno, eb);
	} else {
		char dir[PATH_MAX];
		dir_of(path, dir, sizeof(dir));
		if (!ms_fs_is_dir(dir))
			return missing_error(path, ENOENT, eb);
	}
	return 0;
}

/* A file without a name in path's directory (its first dlen bytes), for
 * writing, or -1 where the file system cannot make one or it could not be
 * linked later (no /proc/self/fd to name it by). */
static int
open_anon(const char *path, size_t dlen)
{
	if (access("/proc/self/fd", X_OK) != 0)
		return -1;
	char *dir = malloc(dlen + 2);
	if (!dir)
		return -1;
	if (dlen == 0)
		strcpy(dir, ".");
	else
		snprintf(dir, dlen + 1, "%s", path); /* keeps a lone "/" */
	int fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
	free(dir);
	return fd;
}

/* Give the open file fd the name to, never replacing an existing one. */
static int
link_fd(int fd, const char *to)
{
	char proc[64];
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	return linkat(AT_FDCWD, proc, AT_FDCWD, to, AT_SYMLINK_FOLLOW);
}

/* A fresh temporary name beside path in o->tmp (n bytes): created
 * exclusively and opened when link_to < 0, else the open file link_to
 * linked to it. Returns the new fd (or 0 for a link), -1 with errno. */
static int
make_tmp_name(ms_outfile *o, const char *path, size_t dlen, size_t n,
              int link_to)
{
	const char *base = path + dlen;
	uint64_t salt = (uint64_t)ms_mono_ns() * 0x9e3779b97f4a7c15ull;
	for (unsigned i = 0; i < 100; i++) {
		char sfx[48];
		int sl = snprintf(
		        sfx, sizeof(sfx), ".%ld-%016llx", (long)getpid(),
		        (unsigned long long)(salt + i * 0x632be59bd9b4e019ull));
		/* Any name the directory accepts gets a temporary name it
		 * accepts too: the base is cut to leave room for the dot
		 * and the suffix within NAME_MAX. */
		size_t keep = strlen(base);
		if (1 + keep + (size_t)sl > NAME_MAX)
			keep = NAME_MAX - 1 - (size_t)sl;
		snprintf(o->tmp, n, "%.*s.%.*s%s", (int)dlen, path, (int)keep,
		         base, sfx);
		int fd = link_to >= 0
		                 ? link_fd(link_to, o->tmp)
		                 : open(o->tmp,
		                        O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
		                        0666);
		if (fd >= 0 || errno != EEXIST)
			return fd;
	}
	return -1;
}

int
ms_outfile_open(ms_outfile **out, const char *path, bool force, ms_errbuf *eb)
{
	return ms__outfile_open_how(out, path, force, true, eb);
}

int
ms__outfile_open_how(ms_outfile **out, const char *path, bool force,
                     bool nameless, ms_errbuf *eb)
{
	*out = NULL;
	int rc = ms_outfile_check(path, force, eb);
	if (rc)
		return rc;
	ms_outfile *o = calloc(1, sizeof(*o));
	if (!o)
		return ms_fail(eb, MS_ERR_NOMEM,
		               "%s: out of memory for its state (%zu bytes)",
		               path, sizeof(*o));
	o->force = force;
	o->fd = -1;
	o->path = dup_str(path);
	/* dir + "/." + base + "." + pid + "-" + 16 hex digits */
	const char *slash = strrchr(path, '/');
	size_t dlen = slash ? (size_t)(slash - path) + 1 : 0;
	const char *base = path + dlen;
	size_t n = dlen + 1 + strlen(base) + 48;
	o->tmp = calloc(1, n); /* "": no file to remove if the copy failed */
	o->tmp_cap = n;
	o->dlen = dlen;
	if (!o->path || !o->tmp) {
		bool name = !o->path;
		ms_outfile_abort(o);
		return ms_fail(eb, MS_ERR_NOMEM,
		               "%s: out of memory for %s (%zu bytes)", path,
		               name ? "a copy of its name"
		                    : "its temporary name",
		               name ? strlen(path) + 1 : n);
	}
	/* A file without a name first; else a new name created
	 * exclusively. Either with the usual mode under the umask (mkstemp
	 * would make it 0600). */
	int fd = nameless ? open_anon(path, dlen) : -1;
	o->anon = fd >= 0;
	if (fd < 0)
		fd = make_tmp_name(o, path, dlen, n, -1);
	if (fd < 0) {
		int e = errno;
		char dir[PATH_MAX];
		dir_of(path, dir, sizeof(dir));
		rc = ms_fail(eb, ms_err_from_errno(e),
		             "%s: cannot create a file in directory %s: %s",
		             path, dir, strerror(e));
		o->tmp[0] = '\0';
		ms_outfile_abort(o);
		return rc;
	}
	o->fd = fd;
	cookie_io_functions_t io = { .write = cookie_write,
		                     .close = cookie_close };
	o->f = fopencookie(o, "w", io);
	if (!o->f) {
		rc = ms_fail(eb, ms_err_from_errno(errno), "%s: %s", path,
		             strerror(errno));
		ms_outfile_abort(o);
		return rc;
	}
	*out = o;
	return 0;
}

FILE *
ms_outfile_stream(ms_outfile *o)
{
	return o ? o->f : NULL;
}

/* Rename tmp to path, never replacing an existing path. */
static int
rename_noreplace(const char *tmp, const char *path)
{
	if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -1;
	if (link(tmp, path) < 0)
		return -1;
	unlink(tmp);
	return 0;
}

/* Give the nameless file its name: linked to it (refused if it exists)
 * or, with force, linked beside it and renamed over it. */
static int
name_anon(ms_outfile *o)
{
	if (!o->force)
		return link_fd(o->fd, o->path);
	if (make_tmp_name(o, o->path, o->dlen, o->tmp_cap, o->fd) < 0) {
		o->tmp[0] = '\0';
		return -1;
	}
	return rename(o->tmp, o->path);
}

int
ms_outfile_commit(ms_outfile *o, ms_errbuf *eb)
{
	if (!o)
		return ms_fail(eb, MS_ERR_INVAL, "output: no file");
	int rc = 0;
	FILE *f = o->f;
	o->f = NULL;
	if (fflush(f) != 0 || ferror(f))
		rc = write_error(o, eb);
	else if (fsync(o->fd) != 0)
		rc = ms_fail(eb, ms_err_from_errno(errno),
		             "%s: write failed: %s", o->path, strerror(errno));
	/* A nameless file is named while still open; its data is on disk
	 * already (fsync above), so the close below can lose nothing. */
	int r = 0, rerr = 0;
	if (rc == 0 && o->anon) {
		r = name_anon(o);
		rerr = errno;
	}
	if (fclose(f) != 0 && rc == 0 && !o->anon)
		rc = ms_fail(eb, ms_err_from_errno(errno),
		             "%s: write failed: %s", o->path, strerror(errno));
	if (rc == 0 && !o->anon) {
		r = o->force ? rename(o->tmp, o->path)
		             : rename_noreplace(o->tmp, o->path);
		rerr = errno;
	}
	if (rc == 0 && r != 0 && rerr == EEXIST)
		rc = exists_error(o->path, eb);
	else if (rc == 0 && r != 0 && o->anon)
		rc = ms_fail(eb, ms_err_from_errno(rerr),
		             "%s: naming the written file failed: %s", o->path,
		             strerror(rerr));
	else if (rc == 0 && r != 0)
		rc = ms_fail(eb, ms_err_from_errno(rerr),
		             "%s: rename from %s failed: %s", o->path, o->tmp,
		             strerror(rerr));
	else if (rc == 0)
		o->tmp[0] = '\0'; /* nothing left to remove */
	if (rc == 0)
		/* Best effort: the rename has happened either way. */
		(void)ms_fs_fsync_parent(o->path, NULL);
	ms_outfile_abort(o);
	return rc;
}

int
ms_outfile_fail(ms_outfile *o, int rc, ms_errbuf *eb)
{
	if (o && o->f && ferror(o->f))
		rc = write_error(o, eb);
	ms_outfile_abort(o);
	return rc;
}

void
ms_outfile_abort(ms_outfile *o)
{
	if (!o)
		return;
	if (o->f)
		fclose(o->f);
	else if (o->fd >= 0)
		close(o->fd);
	if (o->tmp && o->tmp[0])
		unlink(o->tmp);
	free(o->tmp);
	free(o->path);
	free(o);
}
