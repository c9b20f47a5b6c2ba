/*
 * testdir.h - where tests put their scratch shards and parts, and how
 * they remove them.
 *
 * Tests write thousands of small parts and fsync each one; on a disk that
 * makes the suite wait on the device for minutes. /dev/shm (tmpfs) runs
 * the same system calls without the wait, so scratch goes there when it is
 * writable and has room for the suite (MS_TEST_SHM_MIN free: a container's
 * 64 MiB /dev/shm does not); MS_TEST_DIR overrides (to run the suite on a
 * real disk), then TMPDIR, then /tmp.
 */
#ifndef MS_TESTDIR_H
#define MS_TESTDIR_H

#include "ms_fs.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

/* Free room /dev/shm must have for the tests to put scratch there: two
 * tests at a time each write up to a few hundred MiB of parts. */
#define MS_TEST_SHM_MIN (1024ull << 20)

/* "/dev/shm" when it is writable and has MS_TEST_SHM_MIN free, else NULL
 * (the tests then use the disk). */
static inline const char *
ms_test_shm(void)
{
	struct statvfs sv;
	if (access("/dev/shm", W_OK) != 0 || statvfs("/dev/shm", &sv) != 0)
		return NULL;
	if ((unsigned long long)sv.f_bavail * sv.f_frsize < MS_TEST_SHM_MIN)
		return NULL;
	return "/dev/shm";
}

/* Make a fresh directory "<base>/<tag>-XXXXXX" into buf; NULL on failure. */
static inline char *
ms_test_mkdtemp(char *buf, size_t n, const char *tag)
{
	const char *base = getenv("MS_TEST_DIR");
	if (!base || !*base)
		base = ms_test_shm();
	if (!base)
		base = getenv("TMPDIR");
	if (!base || !*base)
		base = "/tmp";
	if ((size_t)snprintf(buf, n, "%s/%s-XXXXXX", base, tag) >= n)
		return NULL;
	return mkdtemp(buf);
}

/* Make (or, make false, remove) the directories path/d/d/... `levels`
 * below path: a tree deeper than ms_fs_rm_tree descends, which it cannot
 * remove (an entry that stays whoever runs the test, root too). 0, or -1
 * when a mkdir or rmdir failed. */
static inline int
ms_test_deep_tree(const char *path, int levels, bool make)
{
	char p[MS_FS_PATH_MAX];
	size_t n = (size_t)snprintf(p, sizeof(p), "%s", path);
	if (n + 2 * (size_t)levels >= sizeof(p))
		return -1;
	for (int i = 0; i <= levels; i++) {
		if (make && mkdir(p, 0755) != 0)
			return -1;
		if (i < levels)
			n += (size_t)snprintf(p + n, sizeof(p) - n, "/d");
	}
	for (int i = levels; !make && i >= 0; i--) {
		if (rmdir(p) != 0)
			return -1;
		p[n -= (i ? 2 : 0)] = '\0';
	}
	return 0;
}

/* Remove dir and everything below it; 0, or -1 when that failed. */
static inline int
ms_test_rmtree(const char *dir)
{
	return ms_fs_rm_tree(dir, NULL) == 0 ? 0 : -1;
}

/* Write text to path (created or truncated); 0, or -1 when that failed. */
static inline int
ms_test_put(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	int rc = fputs(text, f) < 0 ? -1 : 0;
	if (fclose(f) != 0)
		rc = -1;
	return rc;
}

/* Write b[0..n) to path (created or truncated); 0, or -1 when that
 * failed. */
static inline int
ms_test_write(const char *path, const void *b, size_t n)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	int rc = fwrite(b, 1, n, f) == n ? 0 : -1;
	if (fclose(f) != 0)
		rc = -1;
	return rc;
}

/* The file at path and a NUL, in memory the caller frees: its first
 * cap - 1 bytes, or all of it when cap is 0; the bytes read into *len
 * when len is not NULL. NULL when it does not open. */
static inline char *
ms_test_read(const char *path, size_t cap, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	if (cap == 0) {
		fseek(f, 0, SEEK_END);
		long end = ftell(f);
		fseek(f, 0, SEEK_SET);
		cap = end > 0 ? (size_t)end + 1 : 1;
	}
	char *buf = malloc(cap);
	if (!buf)
		abort();
	size_t n = fread(buf, 1, cap - 1, f);
	buf[n] = '\0';
	fclose(f);
	if (len)
		*len = n;
	return buf;
}

/* One scratch directory for a whole test executable: defines `tmpdir`
 * and the group's `setup` (a fresh "<tag>-XXXXXX") and `teardown`
 * (removes it with all below). */
#define MS_TEST_TMPDIR(tag)                                                    \
	static char tmpdir[256];                                               \
	static int setup(void **state)                                         \
	{                                                                      \
		(void)state;                                                   \
		return ms_test_mkdtemp(tmpdir, sizeof(tmpdir), tag) ? 0 : -1;  \
	}                                                                      \
	static int teardown(void **state)                                      \
	{                                                                      \
		(void)state;                                                   \
		return ms_test_rmtree(tmpdir);                                 \
	}

#endif
