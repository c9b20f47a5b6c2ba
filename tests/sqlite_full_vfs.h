/*
 * sqlite_full_vfs.h - a full disk for SQLite, in tests: a VFS over the
 * default one that passes everything through until `full_vfs_arm(n)` has
 * let n more bytes be written, then refuses every write with SQLITE_FULL
 * (what SQLite's unix VFS answers on ENOSPC). Registered as the default
 * VFS, it reaches the recorder without any change to the code under test.
 * Counts the writes it refused, so a test can see whether anything keeps
 * trying. `full_vfs_cap_main(n)` instead lets every file grow but the
 * main database files, which stay within n bytes: a disk with room for a
 * write-ahead log and none for the checkpoint that folds it in.
 */
#ifndef MS_SQLITE_FULL_VFS_H
#define MS_SQLITE_FULL_VFS_H

#include <errno.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

typedef struct full_file {
	sqlite3_file base;
	sqlite3_file *real; /* the default VFS's file, right after this */
	bool main_db;       /* opened with SQLITE_OPEN_MAIN_DB */
	const char *name;   /* SQLite's, valid until the file closes */
} full_file;

static sqlite3_vfs *full_base;
static sqlite3_vfs full_vfs;
static sqlite3_io_methods full_methods;
static _Atomic bool full_armed;
static _Atomic long long full_left;
static _Atomic unsigned long full_refused;
static _Atomic long long full_main_cap = -1; /* -1: no cap */
/* The cap holds for the main file of this name only ("": every one). */
static char full_cap_name[4096];

#define FULL_REAL(f) (((full_file *)(f))->real)

static int
full_close(sqlite3_file *f)
{
	return FULL_REAL(f)->pMethods->xClose(FULL_REAL(f));
}
static int
full_read(sqlite3_file *f, void *p, int n, sqlite3_int64 off)
{
	return FULL_REAL(f)->pMethods->xRead(FULL_REAL(f), p, n, off);
}
static int
full_write(sqlite3_file *f, const void *p, int n, sqlite3_int64 off)
{
	long long cap = atomic_load(&full_main_cap);
	if (cap >= 0 && ((full_file *)f)->main_db && off + n > cap &&
	    (!full_cap_name[0] ||
	     (((full_file *)f)->name &&
	      strcmp(((full_file *)f)->name, full_cap_name) == 0))) {
		atomic_fetch_add(&full_refused, 1);
		return SQLITE_FULL;
	}
	if (atomic_load(&full_armed) &&
	    atomic_fetch_sub(&full_left, n) - n < 0) {
		atomic_store(&full_left, 0);
		atomic_fetch_add(&full_refused, 1);
		return SQLITE_FULL;
	}
	return FULL_REAL(f)->pMethods->xWrite(FULL_REAL(f), p, n, off);
}
static int
full_truncate(sqlite3_file *f, sqlite3_int64 size)
{
	return FULL_REAL(f)->pMethods->xTruncate(FULL_REAL(f), size);
}
static int
full_sync(sqlite3_file *f, int flags)
{
	return FULL_REAL(f)->pMethods->xSync(FULL_REAL(f), flags);
}
static int
full_size(sqlite3_file *f, sqlite3_int64 *size)
{
	return FULL_REAL(f)->pMethods->xFileSize(FULL_REAL(f), size);
}
static int
full_lock(sqlite3_file *f, int l)
{
	return FULL_REAL(f)->pMethods->xLock(FULL_REAL(f), l);
}
static int
full_unlock(sqlite3_file *f, int l)
{
	return FULL_REAL(f)->pMethods->xUnlock(FULL_REAL(f), l);
}
static int
full_check_lock(sqlite3_file *f, int *out)
{
	return FULL_REAL(f)->pMethods->xCheckReservedLock(FULL_REAL(f), out);
}
static int
full_fcntl(sqlite3_file *f, int op, void *arg)
{
	return FULL_REAL(f)->pMethods->xFileControl(FULL_REAL(f), op, arg);
}
static int
full_sector(sqlite3_file *f)
{
	return FULL_REAL(f)->pMethods->xSectorSize(FULL_REAL(f));
}
static int
full_devchar(sqlite3_file *f)
{
	return FULL_REAL(f)->pMethods->xDeviceCharacteristics(FULL_REAL(f));
}
/* With full_shm set, growing the WAL index fails as the unix VFS fails
 * on a full disk: the -shm file is made, but not grown
 * (SQLITE_IOERR_SHMSIZE, errno ENOSPC). */
static _Atomic bool full_shm;
static int
full_shm_map(sqlite3_file *f, int pg, int sz, int extend, void volatile **p)
{
	if (atomic_load(&full_armed) && atomic_load(&full_shm) && extend) {
		int rc = FULL_REAL(f)->pMethods->xShmMap(FULL_REAL(f), pg, sz,
		                                         0, p);
		if (rc != SQLITE_OK)
			return rc;
		*p = NULL;
		atomic_fetch_add(&full_refused, 1);
		errno = ENOSPC;
		return SQLITE_IOERR_SHMSIZE;
	}
	return FULL_REAL(f)->pMethods->xShmMap(FULL_REAL(f), pg, sz, extend, p);
}
static int
full_shm_lock(sqlite3_file *f, int off, int n, int flags)
{
	return FULL_REAL(f)->pMethods->xShmLock(FULL_REAL(f), off, n, flags);
}
static void
full_shm_barrier(sqlite3_file *f)
{
	FULL_REAL(f)->pMethods->xShmBarrier(FULL_REAL(f));
}
static int
full_shm_unmap(sqlite3_file *f, int del)
{
	return FULL_REAL(f)->pMethods->xShmUnmap(FULL_REAL(f), del);
}
/* No memory-mapped reads: every page goes through xRead/xWrite. */
static int
full_fetch(sqlite3_file *f, sqlite3_int64 off, int n, void **pp)
{
	(void)f;
	(void)off;
	(void)n;
	*pp = NULL;
	return SQLITE_OK;
}
static int
full_unfetch(sqlite3_file *f, sqlite3_int64 off, void *p)
{
	(void)f;
	(void)off;
	(void)p;
	return SQLITE_OK;
}

static int
full_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags,
          int *out_flags)
{
	(void)vfs;
	full_file *ff = (full_file *)f;
	ff->real = (sqlite3_file *)(ff + 1);
	ff->main_db = (flags & SQLITE_OPEN_MAIN_DB) != 0;
	ff->name = name;
	memset(ff->real, 0, (size_t)full_base->szOsFile);
	int rc = full_base->xOpen(full_base, name, ff->real, flags, out_flags);
	/* Our methods only when the real file has some (xClose then runs). */
	f->pMethods = ff->real->pMethods ? &full_methods : NULL;
	return rc;
}

#define FULL_PASS(name, ...) full_base->name(full_base, __VA_ARGS__)
static int
full_delete(sqlite3_vfs *v, const char *n, int sync)
{
	(void)v;
	return FULL_PASS(xDelete, n, sync);
}
static int
full_access(sqlite3_vfs *v, const char *n, int flags, int *out)
{
	(void)v;
	return FULL_PASS(xAccess, n, flags, out);
}
static int
full_fullpath(sqlite3_vfs *v, const char *n, int size, char *out)
{
	(void)v;
	return FULL_PASS(xFullPathname, n, size, out);
}
static int
full_random(sqlite3_vfs *v, int n, char *out)
{
	(void)v;
	return FULL_PASS(xRandomness, n, out);
}
static int
full_sleep(sqlite3_vfs *v, int us)
{
	(void)v;
	return FULL_PASS(xSleep, us);
}
static int
full_time(sqlite3_vfs *v, double *out)
{
	(void)v;
	return FULL_PASS(xCurrentTime, out);
}
static int
full_last_error(sqlite3_vfs *v, int n, char *out)
{
	(void)v;
	return FULL_PASS(xGetLastError, n, out);
}
static int
full_time64(sqlite3_vfs *v, sqlite3_int64 *out)
{
	(void)v;
	return FULL_PASS(xCurrentTimeInt64, out);
}
#undef FULL_PASS

/* Register the VFS as SQLite's default (once). 0 or an SQLite code. */
static __attribute__((unused)) int
full_vfs_install(void)
{
	if (full_base)
		return SQLITE_OK;
	full_base = sqlite3_vfs_find(NULL);
	if (!full_base)
		return SQLITE_ERROR;
	full_methods = (sqlite3_io_methods){
		.iVersion = 3,
		.xClose = full_close,
		.xRead = full_read,
		.xWrite = full_write,
		.xTruncate = full_truncate,
		.xSync = full_sync,
		.xFileSize = full_size,
		.xLock = full_lock,
		.xUnlock = full_unlock,
		.xCheckReservedLock = full_check_lock,
		.xFileControl = full_fcntl,
		.xSectorSize = full_sector,
		.xDeviceCharacteristics = full_devchar,
		.xShmMap = full_shm_map,
		.xShmLock = full_shm_lock,
		.xShmBarrier = full_shm_barrier,
		.xShmUnmap = full_shm_unmap,
		.xFetch = full_fetch,
		.xUnfetch = full_unfetch,
	};
	full_vfs = (sqlite3_vfs){
		.iVersion = 2,
		.szOsFile = (int)sizeof(full_file) + full_base->szOsFile,
		.mxPathname = full_base->mxPathname,
		.zName = "ms-test-full",
		.xOpen = full_open,
		.xDelete = full_delete,
		.xAccess = full_access,
		.xFullPathname = full_fullpath,
		.xDlOpen = NULL,
		.xRandomness = full_random,
		.xSleep = full_sleep,
		.xCurrentTime = full_time,
		.xGetLastError = full_last_error,
		.xCurrentTimeInt64 = full_time64,
	};
	return sqlite3_vfs_register(&full_vfs, 1);
}

/* From now on, let `bytes` more bytes be written, then refuse. */
static __attribute__((unused)) void
full_vfs_arm(long long bytes)
{
	atomic_store(&full_left, bytes);
	atomic_store(&full_refused, 0);
	atomic_store(&full_armed, true);
}

/* Writes pass again (and the WAL index and main files grow again). */
static __attribute__((unused)) void
full_vfs_disarm(void)
{
	atomic_store(&full_armed, false);
	atomic_store(&full_shm, false);
	atomic_store(&full_main_cap, -1);
	full_cap_name[0] = '\0';
}

/* From now on, refuse every write that would take a main database file
 * past `bytes` (its -wal, -shm and journals still grow). */
static __attribute__((unused)) void
full_vfs_cap_main(long long bytes)
{
	atomic_store(&full_refused, 0);
	atomic_store(&full_main_cap, bytes);
}

/* The same for the main database file at path (as SQLite names it:
 * absolute) only; others are written in full. */
static __attribute__((unused)) void
full_vfs_cap_file(const char *path, long long bytes)
{
	snprintf(full_cap_name, sizeof(full_cap_name), "%s", path);
	full_vfs_cap_main(bytes);
}

/* Armed, also refuse to grow the WAL index (-shm), as a full tmpfs does. */
static __attribute__((unused)) void
full_vfs_arm_shm(void)
{
	atomic_store(&full_shm, true);
	full_vfs_arm(1LL << 40);
}

static __attribute__((unused)) unsigned long
full_vfs_refused(void)
{
	return atomic_load(&full_refused);
}

#endif
