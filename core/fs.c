/*
 * fs.c - mkdir -p, rm -r and directory fsync for every layer (ms_fs.h).
 *
 * Each helper records the first failure with the path it concerns and
 * leaves errno at that failure's cause before returning, because callers in
 * the upper layers word their own messages from errno.
 */
#include "ms_fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/vfs.h>
#include <unistd.h>

/* ms_fail, then errno = e (formatting may clobber it). */
static int
fail_errno(ms_errbuf *eb, int e, int err, const char *what, const char *path)
{
	ms_fail(eb, err, "%s%s: %s", what, path, strerror(e));
	errno = e;
	return err;
}

int
ms_fs_mkdir_p(const char *path, mode_t mode, ms_errbuf *eb)
{
	char buf[MS_FS_PATH_MAX];
	size_t n = strlen(path);
	if (n == 0)
		return fail_errno(eb, ENOENT, MS_ERR_INVAL, "", "(empty path)");
	if (n >= sizeof(buf))
		return fail_errno(eb, ENAMETOOLONG, MS_ERR_RANGE, "", path);
	memcpy(buf, path, n + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		int rc = mkdir(buf, mode);
		int e = errno;
		if (rc != 0 && e != EEXIST)
			return fail_errno(eb, e, ms_err_from_errno(e), "", buf);
		*p = '/';
	}
	if (mkdir(buf, mode) == 0)
		return 0;
	int e = errno;
	struct stat st;
	if (e != EEXIST)
		return fail_errno(eb, e, ms_err_from_errno(e), "", buf);
	if (stat(buf, &st) != 0)
		return fail_errno(eb, errno, ms_err_from_errno(errno), "", buf);
	if (!S_ISDIR(st.st_mode))
		return fail_errno(eb, ENOTDIR, MS_ERR_IO, "", buf);
	return 0;
}

/* How many times rm_walk walks a directory again whose rmdir found new
 * entries in it. */
#define RM_REWALKS 8

/* One removal: the path being worked on (extended and cut back in place
 * as the walk descends) and the first failure. */
struct rm {
	char path[MS_FS_PATH_MAX];
	int rc, e;
	ms_errbuf *eb;
};

/* The first failure: err, errno e, and why (strerror(e) when NULL). */
static void
rm_fail(struct rm *r, int err, int e, const char *why)
{
	if (r->rc)
		return;
	r->rc = err;
	r->e = e;
	ms_fail(r->eb, err, "remove %s: %s", r->path, why ? why : strerror(e));
}

/* The system call failed with errno: a vanished entry is not an error. */
static void
rm_errno(struct rm *r)
{
	int e = errno;
	if (e != ENOENT)
		rm_fail(r, ms_err_from_errno(e), e, NULL);
}

static void
rm_walk(struct rm *r, size_t len, int depth)
{
	struct stat st;
	if (lstat(r->path, &st) != 0) {
		rm_errno(r);
		return;
	}
	if (!S_ISDIR(st.st_mode)) {
		if (unlink(r->path) != 0)
			rm_errno(r);
		return;
	}
	if (depth > MS_FS_MAX_DEPTH) {
		char why[96];
		snprintf(why, sizeof(why),
		         "more than %d directory levels below the one removed: "
		         "left in place",
		         MS_FS_MAX_DEPTH);
		rm_fail(r, MS_ERR_RANGE, ELOOP, why);
		return;
	}
	/* Entries created while the directory is walked (a writer still at
	 * work in it, such as the other threads of a process that is dying
	 * while its scratch shard is removed) fail its rmdir with ENOTEMPTY:
	 * it is walked again, RM_REWALKS times at most. */
	for (int pass = 0;; pass++) {
		DIR *d = opendir(r->path);
		if (!d) {
			rm_errno(r);
			return;
		}
		struct dirent *de;
		while ((de = readdir(d))) {
			if (!strcmp(de->d_name, ".") ||
			    !strcmp(de->d_name, ".."))
				continue;
			size_t k = strlen(de->d_name);
			if (len + 1 + k >= sizeof(r->path)) {
				rm_fail(r, MS_ERR_RANGE, ENAMETOOLONG, NULL);
				continue;
			}
			r->path[len] = '/';
			memcpy(r->path + len + 1, de->d_name, k + 1);
			rm_walk(r, len + 1 + k, depth + 1);
			r->path[len] = '\0';
		}
		closedir(d);
		if (rmdir(r->path) == 0)
			return;
		if (errno != ENOTEMPTY || r->rc || pass == RM_REWALKS) {
			rm_errno(r);
			return;
		}
	}
}

int
ms_fs_rm_tree(const char *path, ms_errbuf *eb)
{
	struct rm r = { .eb = eb };
	size_t n = strlen(path);
	if (n >= sizeof(r.path))
		return fail_errno(eb, ENAMETOOLONG, MS_ERR_RANGE, "remove ",
		                  path);
	memcpy(r.path, path, n + 1);
	rm_walk(&r, n, 0);
	if (r.rc)
		errno = r.e;
	return r.rc;
}

int
ms_fs_fsync_dir(const char *dir, ms_errbuf *eb)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fsync(fd) != 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		ms_fail(eb, ms_err_from_errno(e), "%s: fsync: %s", dir,
		        strerror(e));
		errno = e;
		return ms_err_from_errno(e);
	}
	close(fd);
	return 0;
}

int
ms_fs_parent(char *out, size_t n, const char *path)
{
	size_t len = strlen(path);
	while (len > 1 && path[len - 1] == '/')
		len--;
	size_t cut = len;
	while (cut > 0 && path[cut - 1] != '/')
		cut--;
	const char *src = path;
	if (cut == 0) { /* no slash: the current directory */
		src = ".";
		cut = 1;
	} else if (cut > 1) {
		cut--; /* drop the slash before the last name */
	}
	if (cut >= n) {
		errno = ENAMETOOLONG;
		return MS_ERR_RANGE;
	}
	memcpy(out, src, cut);
	out[cut] = '\0';
	return 0;
}

int
ms_fs_name_beside(char *out, size_t n, const char *path, const char *suffix)
{
	size_t sl = strlen(suffix);
	const char *slash = strrchr(path, '/');
	size_t dlen = slash ? (size_t)(slash + 1 - path) : 0;
	size_t keep = strlen(path + dlen);
	if (keep + sl > NAME_MAX)
		keep = sl < NAME_MAX ? NAME_MAX - sl : 0;
	if ((size_t)snprintf(out, n, "%.*s%.*s%s", (int)dlen, path, (int)keep,
	                     path + dlen, suffix) >= n) {
		errno = ENAMETOOLONG;
		return MS_ERR_RANGE;
	}
	return 0;
}

int
ms_fs_fsync_parent(const char *path, ms_errbuf *eb)
{
	char dir[MS_FS_PATH_MAX];
	if (ms_fs_parent(dir, sizeof(dir), path) != 0)
		return fail_errno(eb, ENAMETOOLONG, MS_ERR_RANGE, "", path);
	return ms_fs_fsync_dir(dir, eb);
}

bool
ms_fs_is_dir(const char *path)
{
	struct stat st;
	return path && *path && stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

bool
ms_fs_is_file(const char *path)
{
	struct stat st;
	return path && *path && stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

size_t
ms_fs_count_entries(const char *path)
{
	DIR *d = opendir(path);
	if (!d)
		return 0;
	size_t n = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

int
ms_fs_pread_all(int fd, void *p, size_t n, uint64_t off)
{
	uint8_t *b = p;
	while (n) {
		ssize_t k = pread(fd, b, n, (off_t)off);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return ms_err_from_errno(errno);
		}
		if (k == 0)
			return MS_ERR_CORRUPT;
		b += k;
		n -= (size_t)k;
		off += (uint64_t)k;
	}
	return 0;
}

int
ms_fs_write_all(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;
	while (n) {
		ssize_t k = write(fd, b, n);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return ms_err_from_errno(errno);
		}
		if (k == 0)
			return MS_ERR_IO;
		b += k;
		n -= (size_t)k;
	}
	return 0;
}

/* statfs f_type of tmpfs and ramfs (linux/magic.h). */
#define MS__TMPFS_MAGIC 0x01021994UL
#define MS__RAMFS_MAGIC 0x858458F6UL

static bool
type_in_memory(const struct statfs *sf)
{
	unsigned long t = (unsigned long)sf->f_type & 0xFFFFFFFFUL;
	return t == MS__TMPFS_MAGIC || t == MS__RAMFS_MAGIC;
}

bool
ms_fs_in_memory(const char *path)
{
	struct statfs sf;
	return path && statfs(path, &sf) == 0 && type_in_memory(&sf);
}

int
ms_fs_free_bytes(const char *path, uint64_t *out)
{
	struct statvfs sv;
	if (statvfs(path, &sv) != 0)
		return -errno;
	*out = (uint64_t)sv.f_bavail * (uint64_t)sv.f_frsize;
	return 0;
}

bool
ms_fs_fd_in_memory(int fd)
{
	struct statfs sf;
	return fstatfs(fd, &sf) == 0 && type_in_memory(&sf);
}

/* path made absolute and resolved as far as it exists: the longest prefix
 * that realpath resolves, then the remaining components taken lexically
 * ("." dropped, ".." going up). false when it does not fit. */
static bool
resolve_loose(const char *path, char out[MS_FS_PATH_MAX])
{
	char abs[MS_FS_PATH_MAX];
	int n;
	if (path[0] == '/') {
		n = snprintf(abs, sizeof(abs), "%s", path);
	} else {
		char cwd[MS_FS_PATH_MAX];
		if (!getcwd(cwd, sizeof(cwd)))
			return false;
		n = snprintf(abs, sizeof(abs), "%s/%s", cwd, path);
	}
	if (n < 0 || (size_t)n >= sizeof(abs))
		return false;
	/* Cut at each '/' from the end until a prefix resolves. */
	size_t cut = strlen(abs);
	char head[MS_FS_PATH_MAX];
	char real[PATH_MAX];
	for (;;) {
		memcpy(head, abs, cut);
		head[cut] = '\0';
		if (realpath(cut ? head : "/", real))
			break;
		while (cut > 0 && abs[cut - 1] != '/')
			cut--;
		while (cut > 1 && abs[cut - 1] == '/')
			cut--;
		if (cut <= 1) {
			cut = 0;
			if (!realpath("/", real))
				return false;
			break;
		}
	}
	size_t len = strlen(real);
	if (len >= MS_FS_PATH_MAX)
		return false;
	memcpy(out, real, len + 1);
	const char *rest = abs + cut;
	while (*rest) {
		while (*rest == '/')
			rest++;
		size_t c = strcspn(rest, "/");
		if (c == 0)
			break;
		if (c == 1 && rest[0] == '.') {
			/* nothing */
		} else if (c == 2 && rest[0] == '.' && rest[1] == '.') {
			char *slash = strrchr(out, '/');
			if (slash && slash != out)
				*slash = '\0';
			else
				out[1] = '\0'; /* up from "/" or "/x": "/" */
		} else {
			len = strlen(out);
			bool root = len == 1;
			if (len + !root + c + 1 > MS_FS_PATH_MAX)
				return false;
			if (!root)
				out[len++] = '/';
			memcpy(out + len, rest, c);
			out[len + c] = '\0';
		}
		rest += c;
	}
	return true;
}

bool
ms_fs_path_within(const char *path, const char *dir)
{
	char p[MS_FS_PATH_MAX], d[MS_FS_PATH_MAX];
	if (!path || !dir || !*path || !*dir || !resolve_loose(path, p) ||
	    !resolve_loose(dir, d))
		return false;
	size_t n = strlen(d);
	if (n == 1) /* "/": everything */
		return true;
	return strncmp(p, d, n) == 0 && (p[n] == '\0' || p[n] == '/');
}
