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

#include <stdio.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* Fork a child that runs fn(arg, fd), fd the write end of a pipe, and
 * ends with _exit(what fn returned). The test gets the child's pid and
 * the read end of the pipe in *rfd (its to close). Buffered output is
 * flushed first, so that the child does not write it again. */
static inline pid_t
ms_test_child(int (*fn)(void *arg, int fd), void *arg, int *rfd)
{
	int fds[2];
	assert_int_equal(pipe(fds), 0);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
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
