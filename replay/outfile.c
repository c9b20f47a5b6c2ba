/*
 * outfile.c - a file the user named for output (an export, a JSON report),
 * written so that no existing file is lost by accident and no reader ever
 * sees half of one.
 *
 * The data goes to a fresh temporary file in the same directory
 * (".<name>.<pid>-<hex>", so the rename cannot cross file systems; <name>
 * cut short where the whole would pass NAME_MAX), is flushed and fsynced,
 * and is then renamed over the name. Without force
 * the name must not exist, checked when the file is opened and again,
 * atomically, by the rename itself (RENAME_NOREPLACE, or link + unlink
 * where the file system has no such rename): a file created meanwhile is
 * never replaced.
 * Anything that fails on the way, including an interrupted process that
 * never reaches the commit, leaves at most the temporary file, never a
 * half-written target; ms_outfile_abort removes the temporary file.
 *
 * The stream writes through a cookie that keeps the errno of the first
 * write that failed: the writers check ferror() at their end, long after
 * errno has been overwritten, so only this can say why ("No space left on
 * device") and name the file (ms_outfile_commit, ms_outfile_fail).
 */
#define _GNU_SOURCE
#include "ms_clock.h"
#include "ms_fs.h"
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
	char *path; /* the name the user gave */
	char *tmp;  /* the temporary file beside it */
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

/* The error for an existing target, shared by open and commit. */
static int
exists_error(const char *path, ms_errbuf *eb)
{
	return ms_fail(eb, MS_ERR_EXISTS,
	               "%s exists; not overwritten (give --force to replace "
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
			               "%s is a directory; expected a file "
			               "name",
			               path);
		if (!force)
			return exists_error(path, eb);
		if (!S_ISREG(st.st_mode))
			return ms_fail(eb, MS_ERR_INVAL,
			               "%s exists and is not a regular file; "
			               "not replaced",
			               path);
	} else if (errno != ENOENT) {
		return ms_fail(eb, ms_err_from_errno(errno), "%s: %s", path,
		               strerror(errno));
	}
	return 0;
}

int
ms_outfile_open(ms_outfile **out, const char *path, bool force, ms_errbuf *eb)
{
	*out = NULL;
	int rc = ms_outfile_check(path, force, eb);
	if (rc)
		return rc;
	ms_outfile *o = calloc(1, sizeof(*o));
	if (!o)
		return ms_fail(eb, MS_ERR_NOMEM, "%s: out of memory", path);
	o->force = force;
	o->fd = -1;
	o->path = dup_str(path);
	/* dir + "/." + base + "." + pid + "-" + 16 hex digits */
	const char *slash = strrchr(path, '/');
	size_t dlen = slash ? (size_t)(slash - path) + 1 : 0;
	const char *base = path + dlen;
	size_t n = dlen + 1 + strlen(base) + 48;
	o->tmp = calloc(1, n); /* "": no file to remove if the copy failed */
	if (!o->path || !o->tmp) {
		ms_outfile_abort(o);
		return ms_fail(eb, MS_ERR_NOMEM, "%s: out of memory", path);
	}
	/* A new name created exclusively, with the usual mode under the
	 * umask (mkstemp would make it 0600). */
	int fd = -1;
	uint64_t salt = (uint64_t)ms_mono_ns() * 0x9e3779b97f4a7c15ull;
	for (unsigned i = 0; i < 100 && fd < 0; i++) {
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
		fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
		          0666);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	if (fd < 0) {
		rc = ms_fail(eb, ms_err_from_errno(errno),
		             "%s: cannot create a file in its directory: %s",
		             path, strerror(errno));
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
	if (fclose(f) != 0 && rc == 0)
		rc = ms_fail(eb, ms_err_from_errno(errno),
		             "%s: write failed: %s", o->path, strerror(errno));
	if (rc == 0) {
		int r = o->force ? rename(o->tmp, o->path)
		                 : rename_noreplace(o->tmp, o->path);
		if (r != 0)
			rc = errno == EEXIST
			             ? exists_error(o->path, eb)
			             : ms_fail(eb, ms_err_from_errno(errno),
			                       "%s: rename from %s failed: %s",
			                       o->path, o->tmp,
			                       strerror(errno));
		else
			o->tmp[0] = '\0'; /* nothing left to remove */
	}
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
