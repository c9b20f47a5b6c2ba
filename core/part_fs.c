/*
 * part_fs.c - the file-system side of parts: writing and syncing files,
 * publication by atomic rename, removal, bounded reads, and routing zstd's
 * allocations through ms_mem so merges count them.
 *
 * Durability rule: a file is written with write() and fsync()ed before its
 * directory is fsync()ed; publication renames a synced temporary directory
 * and then fsyncs the parent, so after a crash either the whole part is
 * there under its final name or only the temporary directory is.
 */
#include "ms_fs.h"
#include "part_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

bool
ms__path(char *out, size_t n, const char *dir, const char *name)
{
	int k = snprintf(out, n, "%s/%s", dir, name);
	return k > 0 && (size_t)k < n;
}

static void
io_add(_Atomic uint64_t *c, uint64_t n, ms_io *io)
{
	if (io)
		atomic_fetch_add(c, n);
}

int
ms__write_all(int fd, const void *p, size_t n, ms_io *io)
{
	const uint8_t *b = p;
	while (n) {
		ssize_t k = write(fd, b, n);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			return ms_err_from_errno(errno);
		}
		if (k == 0) {
			errno = ENOSPC;
			return MS_ERR_NOSPACE;
		}
		if (io)
			io_add(&io->bytes_written, (uint64_t)k, io);
		b += k;
		n -= (size_t)k;
	}
	return 0;
}

const char *
ms__write_err_text(int rc)
{
	if ((rc == MS_ERR_IO || rc == MS_ERR_NOSPACE) && errno != 0)
		return strerror(errno);
	return ms_strerror(rc);
}

int
ms__fsync_fd(int fd, ms_io *io)
{
	/* Counted whether it succeeds or not: every call costs. */
	if (io)
		io_add(&io->fsyncs, 1, io);
	if (fsync(fd) != 0)
		return ms_err_from_errno(errno);
	return 0;
}

int
ms__fsync_dir(const char *dir, ms_io *io)
{
	/* Counted whether it succeeds or not, as ms__fsync_fd. */
	if (io)
		io_add(&io->fsyncs, 1, io);
	return ms_fs_fsync_dir(dir, NULL);
}

int
ms__write_file(const char *dir, const char *name, const void *p, size_t n,
               bool no_sync, ms_io *io, ms_errbuf *eb)
{
	char path[4096];
	if (!ms__path(path, sizeof(path), dir, name))
		return ms_fail(eb, MS_ERR_RANGE, "%s/%s: path too long", dir,
		               name);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0) {
		int rc = errno == EEXIST ? MS_ERR_EXISTS
		                         : ms_err_from_errno(errno);
		return ms_fail(eb, rc, "%s: create: %s", path, strerror(errno));
	}
	int rc = ms__write_all(fd, p, n, io);
	if (rc == 0 && !no_sync)
		rc = ms__fsync_fd(fd, io);
	int e = errno;
	if (close(fd) != 0 && rc == 0) {
		e = errno;
		rc = ms_err_from_errno(e);
	}
	if (rc)
		return ms_fail(eb, rc, "%s: write: %s", path, strerror(e));
	return 0;
}

void
ms__syncset_add(ms__syncset *ss, int fd, const char *name)
{
	ss->fd[ss->n] = fd;
	ss->name[ss->n] = name;
	ss->n++;
}

int
ms__syncset_write(ms__syncset *ss, const char *dir, const char *name,
                  const void *p, size_t n, ms_io *io, ms_errbuf *eb)
{
	char path[4096];
	if (ss->n >= MS__SYNCSET_MAX)
		return ms_fail(eb, MS_ERR_RANGE, "%s/%s: too many files", dir,
		               name);
	if (!ms__path(path, sizeof(path), dir, name))
		return ms_fail(eb, MS_ERR_RANGE, "%s/%s: path too long", dir,
		               name);
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0) {
		int rc = errno == EEXIST ? MS_ERR_EXISTS
		                         : ms_err_from_errno(errno);
		return ms_fail(eb, rc, "%s: create: %s", path, strerror(errno));
	}
	int rc = ms__write_all(fd, p, n, io);
	if (rc) {
		int e = errno;
		close(fd);
		return ms_fail(eb, rc, "%s: write: %s", path, strerror(e));
	}
	ms__syncset_add(ss, fd, name);
	return 0;
}

int
ms__syncset_sync(ms__syncset *ss, const char *dir, ms_io *io, const char **file)
{
	int rc = 0;
	for (int i = 0; i < ss->n; i++) {
		if (rc == 0 && (rc = ms__fsync_fd(ss->fd[i], io)) != 0)
			*file = ss->name[i];
		int e = errno;
		if (close(ss->fd[i]) != 0 && rc == 0) {
			e = errno;
			rc = ms_err_from_errno(e);
			*file = ss->name[i];
		}
		errno = e;
	}
	ss->n = 0;
	if (rc == 0 && (rc = ms__fsync_dir(dir, io)) != 0)
		*file = ".";
	return rc;
}

void
ms__syncset_close(ms__syncset *ss)
{
	for (int i = 0; i < ss->n; i++)
		close(ss->fd[i]);
	ss->n = 0;
}

int
ms__pread_all(int fd, void *p, size_t n, uint64_t off)
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
ms_part_sync_tree(const char *dir, ms_io *io, ms_errbuf *eb)
{
	DIR *d = opendir(dir);
	if (!d)
		return ms_fail(eb,
		               errno == ENOENT ? MS_ERR_NOTFOUND
		                               : ms_err_from_errno(errno),
		               "%s: open directory: %s", dir, strerror(errno));
	int rc = 0;
	struct dirent *de;
	while (rc == 0 && (de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		char path[4096];
		if (!ms__path(path, sizeof(path), dir, de->d_name)) {
			rc = ms_fail(eb, MS_ERR_RANGE, "%s: path too long",
			             dir);
			break;
		}
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			rc = ms_fail(eb, ms_err_from_errno(errno),
			             "%s: open: %s", path, strerror(errno));
			break;
		}
		if (ms__fsync_fd(fd, io) != 0)
			rc = ms_fail(eb, ms_err_from_errno(errno),
			             "%s: fsync: %s", path, strerror(errno));
		close(fd);
	}
	closedir(d);
	if (rc == 0 && ms__fsync_dir(dir, io) != 0)
		rc = ms_fail(eb, ms_err_from_errno(errno), "%s: fsync: %s", dir,
		             strerror(errno));
	return rc;
}

int
ms_part_publish(const char *tmp_dir, const char *final_dir, ms_io *io,
                ms_errbuf *eb)
{
	struct stat st;
	if (lstat(final_dir, &st) == 0)
		return ms_fail(eb, MS_ERR_EXISTS, "publish %s: %s exists",
		               tmp_dir, final_dir);
	int rc = ms_part_sync_tree(tmp_dir, io, eb);
	if (rc)
		return rc;
	if (rename(tmp_dir, final_dir) != 0)
		return ms_fail(eb, ms_err_from_errno(errno),
		               "publish %s as %s: rename: %s", tmp_dir,
		               final_dir, strerror(errno));
	char parent[4096];
	if (ms_fs_parent(parent, sizeof(parent), final_dir) != 0)
		return ms_fail(eb, MS_ERR_RANGE, "%s: path too long",
		               final_dir);
	if (ms__fsync_dir(parent, io) != 0)
		return ms_fail(eb, ms_err_from_errno(errno),
		               "publish %s: fsync %s: %s", final_dir, parent,
		               strerror(errno));
	return 0;
}

int
ms_part_remove_dir(const char *dir, ms_errbuf *eb)
{
	return ms_fs_rm_tree(dir, eb);
}

/* zstd allocations carry their size in a 16-byte prefix because
 * ms_mem_free wants it and ZSTD_freeFunction does not give it. */
static void *
zalloc(void *opaque, size_t size)
{
	size_t total;
	if (!ms_add_ok(size, 16, &total))
		return NULL;
	uint8_t *p = ms_mem_alloc(opaque, total);
	if (!p)
		return NULL;
	memcpy(p, &size, sizeof(size));
	return p + 16;
}

static void
zfree(void *opaque, void *addr)
{
	if (!addr)
		return;
	uint8_t *p = (uint8_t *)addr - 16;
	size_t size;
	memcpy(&size, p, sizeof(size));
	ms_mem_free(opaque, p, size + 16);
}

ZSTD_customMem
ms__zstd_mem(ms_mem *mem)
{
	ZSTD_customMem cm = { zalloc, zfree, mem };
	return cm;
}

int
ms__zstd_err(size_t code)
{
	return ZSTD_getErrorCode(code) == ZSTD_error_memory_allocation
	               ? MS_ERR_NOMEM
	               : MS_ERR_COMPRESS;
}

void
ms__part_vfail(ms_errbuf *eb, int err, const char *what, uint64_t id,
               const char *dir, const char *file, const char *fmt, va_list ap)
{
	if (!eb)
		return;
	char idstr[17], text[384];
	vsnprintf(text, sizeof(text), fmt, ap);
	ms_part_id_str(id, idstr);
	ms_fail(eb, err, "%s %s (%s): %s: %s", what, idstr, dir, file, text);
}
