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
 * TMPDIR, else /tmp), made at once (or taken over from a process of
 * that pid killed before it could remove it) and removed with all below it when
 * the process exits (not when a forked child of it does). A root the
 * caller names is used as it is. The program's default is unchanged.
 */
#ifndef _XOPEN_SOURCE
#define _XOPEN_SOURCE 700 /* nftw */
#endif
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
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

__attribute__((constructor)) static void
own_scratch(void)
{
	const char *set = getenv("MERGESCOPE_SCRATCH");
	if (set && *set)
		return;
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : NULL;
	if (!base)
		base = getenv("TMPDIR");
	if (!base || !*base)
		base = "/tmp";
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
	atexit(own_scratch_remove);
}
