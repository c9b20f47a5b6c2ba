/*
 * part_fs.c - the file-system side of parts: creating and sealing a part
 * file, publication by atomic rename, removal, bounded reads, and routing
 * zstd's allocations through ms_mem so merges count them.
 *
 * Durability rule: a part is one file, written with write() and fsync()ed
 * once when its writer closes it; publication renames the synced file and
 * then fsyncs the directory it was renamed into, so after a crash either
 * the whole part is there under its final name or only the temporary file
 * is. A file whose footer is missing or damaged is not a part.
 */
#include "ms_fs.h"
#include "part_int.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
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

const char *
ms__write_err_text(int rc)
{
	if ((rc == MS_ERR_IO || rc == MS_ERR_NOSPACE || rc == MS_ERR_LIMIT) &&
	    errno != 0)
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
ms__part_create(const char *path, const char *what, const char *idstr,
                int *fd, ms_errbuf *eb)
{
	*fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (*fd >= 0)
		return 0;
	int e = errno;
	int rc = e == EEXIST ? MS_ERR_EXISTS : ms_err_from_errno(e);
	return ms_fail(eb, rc, "%s %s (%s): create: %s", what, idstr, path,
	               strerror(e));
}

/* writev() all of v[0..n) (the iovecs are advanced as they are written);
 * counts io. */
static int
writev_all(int fd, struct iovec *v, int n, ms_io *io)
{
	while (n > 0) {
		ssize_t k = writev(fd, v, n);
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
		size_t left = (size_t)k;
		while (n > 0 && left >= v->iov_len) {
			left -= v->iov_len;
			v++;
			n--;
		}
		if (n > 0) {
			v->iov_base = (uint8_t *)v->iov_base + left;
			v->iov_len -= left;
		}
	}
	return 0;
}

int
ms__write_all(int fd, const void *p, size_t n, ms_io *io)
{
	struct iovec v = { (void *)(uintptr_t)p, n };
	return writev_all(fd, &v, n ? 1 : 0, io);
}

int
ms__part_seal(int fd, const void *index, size_t index_len, const void *bloom,
              size_t bloom_len, const uint8_t footer[MS__FOOTER_SIZE],
              bool no_sync, ms_io *io, const char **section)
{
	struct iovec v[3];
	int n = 0;
	v[n++] = (struct iovec){ (void *)(uintptr_t)index, index_len };
	if (bloom_len)
		v[n++] = (struct iovec){ (void *)(uintptr_t)bloom, bloom_len };
	v[n++] = (struct iovec){ (void *)(uintptr_t)footer, MS__FOOTER_SIZE };
	*section = MS__F_FOOTER;
	int rc = writev_all(fd, v, n, io);
	if (rc == 0 && !no_sync)
		rc = ms__fsync_fd(fd, io);
	int e = errno;
	if (close(fd) != 0 && rc == 0) {
		e = errno;
		rc = ms_err_from_errno(e);
	}
	errno = e;
	return rc;
}

/* fsync the regular file at path; counts io. */
static int
sync_file(const char *path, ms_io *io, ms_errbuf *eb)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ms_fail(eb,
		               ms_err_from_open_errno(errno),
		               "%s: open: %s", path, strerror(errno));
	int rc = 0;
	if (ms__fsync_fd(fd, io) != 0)
		rc = ms_fail(eb, ms_err_from_errno(errno), "%s: fsync: %s",
		             path, strerror(errno));
	close(fd);
	return rc;
}

/* A directory: fsync every file in it, then the directory. */
static int
sync_dir_tree(const char *dir, ms_io *io, ms_errbuf *eb)
{
	DIR *d = opendir(dir);
	if (!d)
		return ms_fail(eb, ms_err_from_errno(errno),
		               "%s: open directory: %s", dir, strerror(errno));
	int rc = 0;
	struct dirent *de;
	while (rc == 0 && (de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		char path[4096];
		if (!ms__path(path, sizeof(path), dir, de->d_name))
			rc = ms_fail(eb, MS_ERR_RANGE, "%s: path too long",
			             dir);
		else
			rc = sync_file(path, io, eb);
	}
	closedir(d);
	if (rc == 0 && ms__fsync_dir(dir, io) != 0)
		rc = ms_fail(eb, ms_err_from_errno(errno), "%s: fsync: %s", dir,
		             strerror(errno));
	return rc;
}

int
ms_part_sync_tree(const char *path, ms_io *io, ms_errbuf *eb)
{
	struct stat st;
	if (stat(path, &st) != 0)
		return ms_fail(eb,
		               ms_err_from_open_errno(errno),
		               "%s: %s", path, strerror(errno));
	return S_ISDIR(st.st_mode) ? sync_dir_tree(path, io, eb)
	                           : sync_file(path, io, eb);
}

int
ms_part_publish(const char *tmp_path, const char *final_path, ms_io *io,
                ms_errbuf *eb)
{
	struct stat st;
	if (lstat(final_path, &st) == 0)
		return ms_fail(eb, MS_ERR_EXISTS, "publish %s: %s exists",
		               tmp_path, final_path);
	int rc = ms_part_sync_tree(tmp_path, io, eb);
	if (rc)
		return rc;
	if (rename(tmp_path, final_path) != 0)
		return ms_fail(eb, ms_err_from_errno(errno),
		               "publish %s as %s: rename: %s", tmp_path,
		               final_path, strerror(errno));
	char parent[4096];
	if (ms_fs_parent(parent, sizeof(parent), final_path) != 0)
		return ms_fail(eb, MS_ERR_RANGE, "%s: path too long",
		               final_path);
	if (ms__fsync_dir(parent, io) != 0)
		return ms_fail(eb, ms_err_from_errno(errno),
		               "publish %s: fsync %s: %s", final_path, parent,
		               strerror(errno));
	return 0;
}

int
ms_part_remove_dir(const char *path, ms_errbuf *eb)
{
	/* A part is a file: one unlink. Anything else (a directory left
	 * by an older format, say) is removed as a tree. */
	if (unlink(path) == 0 || errno == ENOENT)
		return 0;
	return ms_fs_rm_tree(path, eb);
}

void
ms__part_discard(int *fd, const char *path)
{
	if (*fd >= 0) {
		close(*fd);
		*fd = -1;
	}
	if (path)
		ms_part_remove_dir(path, NULL);
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
               const char *path, const char *file, const char *fmt,
               va_list ap)
{
	if (!eb)
		return;
	char idstr[17], text[384];
	vsnprintf(text, sizeof(text), fmt, ap);
	ms_part_id_str(id, idstr);
	ms_fail(eb, err, "%s %s (%s): %s: %s", what, idstr, path, file, text);
}
