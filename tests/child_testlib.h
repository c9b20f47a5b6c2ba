/*
 * child_testlib.h - a child process that reports to the test on a pipe,
 * for what must run where it may hang for good or be killed: a library
 * constructor that never returns, a recorder or a replay killed mid-run.
 */
#ifndef MS_CHILD_TESTLIB_H
#define MS_CHILD_TESTLIB_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* In a child just forked by parent: die with it (SIGKILL when the test
 * ends, however: a test killed on its timeout left its children running,
 * a replay or a TUI among them), also across an exec. A parent gone
 * before this ends the child at once. */
static inline void
ms_test_die_with(pid_t parent)
{
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
		_exit(125);
}

/* Fork a child that runs fn(arg, fd), fd the write end of a pipe, and
 * ends with _exit(what fn returned); it dies with the test. The test gets the child's pid and
 * the read end of the pipe in *rfd (its to close). Buffered output is
 * flushed first, so that the child does not write it again. */
static inline pid_t
ms_test_child(int (*fn)(void *arg, int fd), void *arg, int *rfd)
{
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	fflush(NULL);
	pid_t parent = getpid();
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		ms_test_die_with(parent);
		close(fds[0]);
		_exit(fn(arg, fds[1]));
	}
	close(fds[1]);
	*rfd = fds[0];
	return pid;
}

/* Reap child pid: its wait status. */
static inline int
ms_test_child_wait(pid_t pid)
{
	int status = 0;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return status;
}

#endif
