/*
 * test_own_scratch.c - a test executable started by hand without
 * MERGESCOPE_SCRATCH runs in a scratch root of its own (own_scratch.c),
 * not in the program's default /dev/shm/mergescope-<uid> that every
 * other test started by hand, and the user's own runs, share.
 *
 * The test runs this executable again (the child reports the root it
 * was given and exits): two children at once get two roots, neither the
 * default; each is gone once its process ends, even when a process it
 * forked exits first; a root named in MERGESCOPE_SCRATCH is kept.
 * A start removes the roots of processes that died without removing
 * theirs, and nothing else.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ms_fixture.h"
#include "testdir.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static char self[PATH_MAX];
static char tmpdir[256];

/* The child: the scratch root ms_scratch_root gives, whether it exists,
 * and whether it still does after a forked child exit()s; one line in
 * file out. */
static int
child_report(const char *out)
{
	char root[PATH_MAX];
	struct stat st;
	if (ms_scratch_root(root, sizeof(root), NULL, NULL) != 0)
		return 3;
	bool made = stat(root, &st) == 0 && S_ISDIR(st.st_mode);
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0)
		exit(0); /* runs the atexit handlers */
	int status = 0;
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return 4;
	bool kept = stat(root, &st) == 0;
	FILE *f = fopen(out, "w");
	if (!f)
		return 5;
	fprintf(f, "%ld %d %d %s\n", (long)getpid(), made, kept, root);
	return fclose(f) == 0 ? 0 : 6;
}

typedef struct report {
	long pid;
	int made, kept;
	char root[PATH_MAX];
} report;

/* Start this executable as a child reporting into out, with
 * MERGESCOPE_SCRATCH=scratch (unset when NULL). */
static pid_t
start_child(const char *out, const char *scratch)
{
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* its own root and its sweep in tmpdir, away from the
		 * roots of tests run beside this one */
		setenv("MS_OWN_SCRATCH_BASE", tmpdir, 1);
		if (scratch)
			setenv("MERGESCOPE_SCRATCH", scratch, 1);
		else
			unsetenv("MERGESCOPE_SCRATCH");
		execl(self, self, "--report", out, (char *)NULL);
		_exit(127);
	}
	return pid;
}

static void
finish_child(pid_t pid, const char *out, report *r)
{
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	FILE *f = fopen(out, "r");
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%ld %d %d %4095s", &r->pid, &r->made,
	                        &r->kept, r->root),
	                 4);
	fclose(f);
	fprintf(stderr, "child %ld: scratch root %s\n", r->pid, r->root);
}

static void
test_by_hand(void **state)
{
	(void)state;
	char out[2][PATH_MAX], def[64];
	report r[2];
	pid_t pid[2];
	snprintf(def, sizeof(def), "/dev/shm/mergescope-%u",
	         (unsigned)getuid());
	for (int i = 0; i < 2; i++) {
		snprintf(out[i], sizeof(out[i]), "%s/report-%d", tmpdir, i);
		pid[i] = start_child(out[i], NULL);
	}
	for (int i = 0; i < 2; i++)
		finish_child(pid[i], out[i], &r[i]);
	for (int i = 0; i < 2; i++) {
		char want[64];
		snprintf(want, sizeof(want), ".%ld", r[i].pid);
		assert_string_not_equal(r[i].root, def);
		const char *dot = strrchr(r[i].root, '.');
		assert_non_null(dot);
		assert_string_equal(dot, want);
		assert_true(r[i].made);
		assert_true(r[i].kept); /* a forked child's exit left it */
		struct stat st;
		assert_int_not_equal(stat(r[i].root, &st), 0); /* removed */
	}
	assert_string_not_equal(r[0].root, r[1].root);
}

static void
test_named_root_kept(void **state)
{
	(void)state;
	char out[PATH_MAX], named[PATH_MAX];
	report r;
	snprintf(out, sizeof(out), "%s/report-named", tmpdir);
	snprintf(named, sizeof(named), "%s/named", tmpdir);
	assert_int_equal(mkdir(named, 0700), 0);
	finish_child(start_child(out, named), out, &r);
	assert_string_equal(r.root, named);
	struct stat st;
	assert_int_equal(stat(named, &st), 0); /* not removed */
}

/* A pid no process has: a child's, once it has exited and been waited
 * for. */
static long
dead_pid(void)
{
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(0);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	return (long)pid;
}

/* Make directory base/name with a file in it; its path into path. */
static void
make_root(const char *base, const char *name, char *path, size_t n)
{
	snprintf(path, n, "%s/%s", base, name);
	assert_int_equal(mkdir(path, 0700), 0);
	char f[PATH_MAX + 8];
	snprintf(f, sizeof(f), "%s/left", path);
	FILE *fp = fopen(f, "w");
	assert_non_null(fp);
	fclose(fp);
}

/* A test killed by a signal left its root behind: the next test started
 * by hand removes it. It keeps a root whose process is alive, one whose
 * lock is held (its process in another pid namespace), and anything not
 * named exactly mergescope-test-<uid>.<pid>. */
static void
test_dead_roots_swept(void **state)
{
	(void)state;
	const char *base = tmpdir; /* MS_OWN_SCRATCH_BASE (start_child) */
	unsigned uid = (unsigned)getuid();
	char name[128], dead[PATH_MAX], keep[5][PATH_MAX];
	snprintf(name, sizeof(name), "mergescope-test-%u.%ld", uid, dead_pid());
	make_root(base, name, dead, sizeof(dead));
	/* alive: this process's parent (this process has a root of its
	 * own when started by hand) */
	snprintf(name, sizeof(name), "mergescope-test-%u.%ld", uid,
	         (long)getppid());
	make_root(base, name, keep[0], sizeof(keep[0]));
	/* dead but locked */
	snprintf(name, sizeof(name), "mergescope-test-%u.%ld", uid, dead_pid());
	make_root(base, name, keep[1], sizeof(keep[1]));
	int lock = open(keep[1], O_RDONLY | O_DIRECTORY);
	assert_true(lock >= 0);
	assert_int_equal(flock(lock, LOCK_SH), 0);
	/* not the pattern: another uid, a suffix, a leading zero */
	long pid = dead_pid();
	snprintf(name, sizeof(name), "mergescope-test-%u.%ld", uid + 1, pid);
	make_root(base, name, keep[2], sizeof(keep[2]));
	snprintf(name, sizeof(name), "mergescope-test-%u.%ld.x", uid, pid);
	make_root(base, name, keep[3], sizeof(keep[3]));
	snprintf(name, sizeof(name), "mergescope-test-%u.0%ld", uid, pid);
	make_root(base, name, keep[4], sizeof(keep[4]));

	char out[PATH_MAX];
	report r;
	snprintf(out, sizeof(out), "%s/report-sweep", tmpdir);
	finish_child(start_child(out, NULL), out, &r);
	struct stat st;
	bool left = stat(dead, &st) == 0;
	close(lock);
	for (int i = 0; i < 5; i++) {
		if (stat(keep[i], &st) != 0)
			fail_msg("%s was removed", keep[i]);
		assert_int_equal(ms_test_rmtree(keep[i]), 0);
	}
	if (left) {
		ms_test_rmtree(dead);
		fail_msg("%s was left", dead);
	}
}

static int
setup(void **state)
{
	(void)state;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return -1;
	self[n] = '\0';
	return ms_test_mkdtemp(tmpdir, sizeof(tmpdir), "own-scratch") ? 0 : -1;
}

static int
teardown(void **state)
{
	(void)state;
	return ms_test_rmtree(tmpdir);
}

int
main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "--report") == 0)
		return child_report(argv[2]);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_by_hand),
		cmocka_unit_test(test_named_root_kept),
		cmocka_unit_test(test_dead_roots_swept),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
