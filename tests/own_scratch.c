/*
 * own_scratch.c - linked into every test executable (ms_add_test): a
 * test started by hand gets a scratch root of its own.
 *
 * Without MERGESCOPE_SCRATCH the program's scratch root is
 * /dev/shm/mergescope-<uid>, shared by every instance the user runs. The
 * tests kill runs on purpose and then look for what they left, every run
 * they start sweeps dead owners' leftovers first, and `clean --frozen`
 * removes frozen shards: two test executables started by hand at once
 * (test_cli_faults beside test_cli_run), or one beside the user's own
 * runs, would remove each other's directories and the user's frozen
 * shards. ctest names one root per build tree and orders those tests with
 * a lock (tests/CMakeLists.txt, tests/cmake/zz_scratch_lock.cmake). By
 * hand, with MERGESCOPE_SCRATCH unset or empty, this sets it before main
 * to DIR/mergescope-test-<uid>.<pid> (DIR: /dev/shm when writable, else
 * TMPDIR, else /tmp; MS_OWN_SCRATCH_BASE when set), made at once (or taken over
 * from a process of that pid killed before it could remove it) and removed with
 * all below it when the process exits (not when a forked child of it does). A
 * root the caller names is used as it is. The program's default is unchanged.
 *
 * A process killed by a signal (SIGKILL, a timeout) cannot remove its
 * root, so each start first sweeps DIR: a directory named exactly
 * mergescope-test-<uid>.<pid>, of this uid, owned by it, whose pid is not
 * alive and whose lock no process holds, is removed. The lock is a shared
 * flock(2) on the root that its process takes when it makes it and holds
 * until it exits (forked children share it): a live owner in another
 * pid namespace, whose pid means nothing here, keeps its root. Nothing
 * else in DIR is touched.
 */
#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700 /* nftw */
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

static char own_root[256];
static pid_t own_pid;

static int
rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

static void
own_scratch_remove(void)
{
	if (own_root[0] && getpid() == own_pid)
		nftw(own_root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* The pid of name when it is exactly mergescope-test-<uid>.<pid> for
 * this uid (decimal, no sign, no leading zero), else 0. */
static long
own_scratch_pid_of(const char *name)
{
	char prefix[64];
	int k = snprintf(prefix, sizeof(prefix), "mergescope-test-%u.",
	                 (unsigned)getuid());
	if (k < 0 || (size_t)k >= sizeof(prefix) ||
	    strncmp(name, prefix, (size_t)k) != 0)
		return 0;
	const char *d = name + k;
	if (*d < '1' || *d > '9' || strlen(d) > 9)
		return 0;
	long pid = 0;
	for (; *d; d++) {
		if (*d < '0' || *d > '9')
			return 0;
		pid = pid * 10 + (*d - '0');
	}
	return pid;
}

/* Remove the roots in base that processes killed before their exit left
 * (the file's opening comment says which). */
static void
own_scratch_sweep(const char *base)
{
	DIR *dir = opendir(base);
	if (!dir)
		return;
	struct dirent *e;
	while ((e = readdir(dir))) {
		long pid = own_scratch_pid_of(e->d_name);
		if (!pid || pid == (long)getpid() || kill((pid_t)pid, 0) == 0 ||
		    errno != ESRCH)
			continue; /* not one, or its process is alive */
		char path[sizeof(own_root)];
		int n = snprintf(path, sizeof(path), "%s/%s", base, e->d_name);
		if (n < 0 || (size_t)n >= sizeof(path))
			continue;
		int fd = open(path,
		              O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		struct stat st;
		if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) &&
		    st.st_uid == getuid() && flock(fd, LOCK_EX | LOCK_NB) == 0)
			nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
		close(fd);
	}
	closedir(dir);
}

__attribute__((constructor)) static void
own_scratch(void)
{
	const char *set = getenv("MERGESCOPE_SCRATCH");
	if (set && *set)
		return;
	/* MS_OWN_SCRATCH_BASE: DIR, for test_own_scratch's children,
	 * whose sweep must not reach the roots of tests run beside it. */
	const char *base = getenv("MS_OWN_SCRATCH_BASE");
	if (!base || !*base)
		base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : NULL;
	if (!base)
		base = getenv("TMPDIR");
	if (!base || !*base)
		base = "/tmp";
	own_scratch_sweep(base);
	own_pid = getpid();
	int n = snprintf(own_root, sizeof(own_root),
	                 "%s/mergescope-test-%u.%ld", base, (unsigned)getuid(),
	                 (long)own_pid);
	if (n < 0 || (size_t)n >= sizeof(own_root) ||
	    (mkdir(own_root, 0700) != 0 && errno != EEXIST) ||
	    setenv("MERGESCOPE_SCRATCH", own_root, 1) != 0) {
		fprintf(stderr, "cannot make a scratch root for this test "
		                "(set MERGESCOPE_SCRATCH)\n");
		_exit(1);
	}
	/* Held until the process exits: the root is in use. The
	 * descriptor stays open for that, on purpose. */
	int lock = open(own_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (lock < 0 || flock(lock, LOCK_SH) != 0) {
		fprintf(stderr,
		        "cannot lock the scratch root %s of this "
		        "test (set MERGESCOPE_SCRATCH)\n",
		        own_root);
		_exit(1);
	}
	atexit(own_scratch_remove);
}
