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

static int
copy_fd(int in, int out, off_t size, bool *reflinked)
{
	if (ioctl(out, FICLONE, in) == 0) {
		*reflinked = true;
		return 0;
	}
	off_t left = size;
	while (left > 0) {
		ssize_t n =
		        copy_file_range(in, NULL, out, NULL, (size_t)left, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (n == 0)
			break;
		left -= n;
	}
	if (left == 0)
		return 0;
	/* Fallback: plain read/write from where we are. */
	if (lseek(in, size - left, SEEK_SET) < 0 ||
	    lseek(out, size - left, SEEK_SET) < 0)
		return -1;
	char buf[1 << 16];
	while (left > 0) {
		ssize_t n = read(in, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		for (ssize_t w = 0; w < n;) {
			ssize_t k = write(out, buf + w, (size_t)(n - w));
			if (k < 0 && errno == EINTR)
				continue;
			if (k < 0)
				return -1;
			w += k;
		}
		left -= n;
	}
	return 0;
}

int
ms__copy_file(const char *from, const char *to, bool *reflinked, ms_errbuf *eb)
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
	int out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (out < 0) {
		int e = errno;
		close(in);
		return ms_fail(eb, ms_err_from_errno(e), "%s: %s", to,
		               strerror(e));
	}
	bool rl = false;
	int rc = copy_fd(in, out, st.st_size, &rl);
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
 * system allows, else a reflink or a copy. Counts in *c. */
static int
stage_file(const char *a, const char *b, bool allow_link, ms__stage_counts *c,
           ms_errbuf *eb)
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
	int rc = ms__copy_file(a, b, &reflinked, eb);
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
	if (is_file(from))
		return stage_file(from, to, allow_link, c, eb);
	if (mkdir(to, 0755) < 0)
		return ms_fail(eb, ms_err_from_errno(errno), "stage %s: %s", to,
		               strerror(errno));
	DIR *d = opendir(from);
	if (!d)
		return ms_fail(eb, ms_err_from_errno(errno), "stage %s: %s",
		               from, strerror(errno));
	int rc = 0;
	struct dirent *de;
	while (rc == 0 && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		char a[PATH_MAX], b[PATH_MAX];
		if ((rc = entry_paths(from, to, de->d_name, a, b, eb)))
			break;
		rc = stage_file(a, b, allow_link, c, eb);
	}
	closedir(d);
	return rc;
}
