/*
 * fsutil.c - directory copies for the replay: a fixture's staged part is
 * cloned into the shard before it is published, and a frozen shard is copied
 * for every controlled re-run. Files are reflinked where the filesystem
 * allows (FICLONE), else copied with copy_file_range, else read/write.
 * Staging a fixture's parts into a shard links them where it can: a part
 * is immutable, so the shard and the fixture may share its files.
 */
#define _GNU_SOURCE
#include "replay_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

/* Whether err, from FICLONE or copy_file_range, says the file systems
 * cannot do it (for these two files, so for the rest of a tree), rather
 * than that this one copy failed. */
static bool
not_supported(int err)
{
	return err == EXDEV || err == EOPNOTSUPP || err == ENOTTY ||
	       err == EINVAL || err == ENOSYS;
}

/* Copy in (size bytes, both at offset 0) to out: a reflink, else
 * copy_file_range, else read/write, skipping a way *w records as
 * unsupported and recording one found so. */
static int
copy_fd(int in, int out, off_t size, ms__copy_way *w, bool *reflinked)
{
	if (!w->no_clone) {
		if (ioctl(out, FICLONE, in) == 0) {
			*reflinked = true;
			return 0;
		}
		w->no_clone = not_supported(errno);
	}
	off_t left = size;
	while (left > 0 && !w->no_range) {
		ssize_t n =
		        copy_file_range(in, NULL, out, NULL, (size_t)left, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			/* Only before the first byte: past it, the way
			 * works and this copy failed part way. */
			if (left == size)
				w->no_range = not_supported(errno);
			break;
		}
		if (n == 0)
			break;
		left -= n;
	}
	if (left == 0)
		return 0;
	/* Fallback: plain read/write from where we are (both descriptors
	 * are still at 0 when nothing was copied). */
	if (left != size && (lseek(in, size - left, SEEK_SET) < 0 ||
	                     lseek(out, size - left, SEEK_SET) < 0))
		return -1;
	char buf[1 << 16];
	while (left > 0) {
		ssize_t n = read(in, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		for (ssize_t k = 0; k < n;) {
			ssize_t m = write(out, buf + k, (size_t)(n - k));
			if (m < 0 && errno == EINTR)
				continue;
			if (m < 0)
				return -1;
			k += m;
		}
		left -= n;
	}
	return 0;
}

/* ms__copy_file, with the ways of copying found unsupported so far; 1,
 * copying nothing, when dir_back and `from` is a directory (the caller
 * walks it: the open and status the copy needs anyway tell a file from a
 * directory, without a stat of the path first). */
static int
copy_file_way(const char *from, const char *to, ms__copy_way *w, bool dir_back,
              bool *reflinked, ms_errbuf *eb)
{
	int in = open(from, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return ms_fail(eb, ms_err_from_errno(errno), "%s: %s", from,
		               strerror(errno));
	struct stat st;
	if (fstat(in, &st) < 0) {
		int e = errno;
		close(in);
		return ms_fail(eb, ms_err_from_errno(e), "%s: %s", from,
		               strerror(e));
	}
	if (dir_back && S_ISDIR(st.st_mode)) {
		close(in);
		return 1;
	}
	int out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (out < 0) {
		int e = errno;
		close(in);
		return ms_fail(eb, ms_err_from_errno(e), "%s: %s", to,
		               strerror(e));
	}
	bool rl = false;
	int rc = copy_fd(in, out, st.st_size, w, &rl);
	int e = errno;
	close(in);
	if (close(out) < 0 && rc == 0) {
		rc = -1;
		e = errno;
	}
	if (rc < 0) {
		unlink(to);
		return ms_fail(eb, ms_err_from_errno(e), "copying %s to %s: %s",
		               from, to, strerror(e));
	}
	if (reflinked && rl)
		*reflinked = true;
	return 0;
}

int
ms__copy_file(const char *from, const char *to, bool *reflinked, ms_errbuf *eb)
{
	ms__copy_way w = { false, false };
	return copy_file_way(from, to, &w, false, reflinked, eb);
}

/* from/name into a and to/name into b, PATH_MAX bytes each. */
static int
entry_paths(const char *from, const char *to, const char *name, char *a,
            char *b, ms_errbuf *eb)
{
	if ((size_t)snprintf(a, PATH_MAX, "%s/%s", from, name) >= PATH_MAX ||
	    (size_t)snprintf(b, PATH_MAX, "%s/%s", to, name) >= PATH_MAX)
		return ms_fail(eb, MS_ERR_RANGE, "%s: path too long", from);
	return 0;
}

/* Whether path is a regular file (a part of format 3 or later is one). */
static bool
is_file(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int
ms__copy_tree(const char *from, const char *to, bool *reflinked, ms_errbuf *eb)
{
	if (is_file(from))
		return ms__copy_file(from, to, reflinked, eb);
	if (mkdir(to, 0755) < 0)
		return ms_fail(eb, ms_err_from_errno(errno), "%s: %s", to,
		               strerror(errno));
	DIR *d = opendir(from);
	if (!d)
		return ms_fail(eb, ms_err_from_errno(errno), "%s: %s", from,
		               strerror(errno));
	int rc = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		char a[PATH_MAX], b[PATH_MAX];
		if ((rc = entry_paths(from, to, de->d_name, a, b, eb)))
			break;
		struct stat st;
		if (lstat(a, &st) < 0) {
			rc = ms_fail(eb, ms_err_from_errno(errno), "%s: %s", a,
			             strerror(errno));
			break;
		}
		if (S_ISDIR(st.st_mode))
			rc = ms__copy_tree(a, b, reflinked, eb);
		else if (S_ISREG(st.st_mode))
			rc = ms__copy_file(a, b, reflinked, eb);
		if (rc)
			break;
	}
	closedir(d);
	return rc;
}

/* Put the file `from` at `to`: a hard link when allow_link and the file
 * system allows, else a reflink or a copy. Counts in *c. 1, staging
 * nothing, when dir_back and `from` turns out to be a directory (known
 * only when it is copied: a caller that may pass one links only what it
 * knows to be a file). */
static int
stage_file(const char *a, const char *b, bool allow_link, bool dir_back,
           ms__stage_counts *c, ms_errbuf *eb)
{
	/* Another file system, or one without hard links: copy. */
	if (allow_link && !c->no_link) {
		if (link(a, b) == 0) {
			c->linked++;
			return 0;
		}
		if (errno != EXDEV && errno != EPERM && errno != EMLINK &&
		    errno != ENOTSUP)
			return ms_fail(eb, ms_err_from_errno(errno),
			               "stage %s as %s: link: %s", a, b,
			               strerror(errno));
		c->no_link = true;
	}
	bool reflinked = false;
	int rc = copy_file_way(a, b, &c->way, dir_back, &reflinked, eb);
	if (rc == 0) {
		if (reflinked)
			c->reflinked++;
		else
			c->copied++;
	}
	return rc;
}

int
ms__stage_tree(const char *from, const char *to, bool allow_link,
               ms__stage_counts *c, ms_errbuf *eb)
{
	/* A file is linked (when it is known to be one) or copied; a copy
	 * tells on its own whether from is a directory. */
	int rc = 1;
	if (!allow_link || c->no_link)
		rc = stage_file(from, to, false, true, c, eb);
	else if (is_file(from))
		rc = stage_file(from, to, allow_link, false, c, eb);
	if (rc <= 0)
		return rc;
	if (mkdir(to, 0755) < 0)
		return ms_fail(eb, ms_err_from_errno(errno), "stage %s: %s", to,
		               strerror(errno));
	DIR *d = opendir(from);
	if (!d)
		return ms_fail(eb, ms_err_from_errno(errno), "stage %s: %s",
		               from, strerror(errno));
	rc = 0;
	struct dirent *de;
	while (rc == 0 && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char a[PATH_MAX], b[PATH_MAX];
		if ((rc = entry_paths(from, to, de->d_name, a, b, eb)))
			break;
		rc = stage_file(a, b, allow_link, false, c, eb);
	}
	closedir(d);
	return rc;
}
