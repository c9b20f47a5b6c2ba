/*
 * bin_testlib.h - the `mergescope` binary (MS_MERGESCOPE_BIN) in a child
 * process, for the tests that need a real process (test_cli_faults.c,
 * test_cli_bench.c): start it with its output redirected, wait for it with
 * a bound that only a hang reaches, read back what it wrote. Waiting and
 * reading back serve any child (test_bench_args.c runs the benchmarks);
 * bt_spawn is there only where MS_MERGESCOPE_BIN is defined.
 *
 * Include after <cmocka.h>: the helpers fail the test with cmocka's
 * assertions.
 */
#ifndef MS_BIN_TESTLIB_H
#define MS_BIN_TESTLIB_H

#include "child_testlib.h"

#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef MS_MERGESCOPE_BIN
/*
 * Start the binary with args (after "mergescope"; with shell, `sh -c
 * args[0]` instead). Standard output goes to out_path (or /dev/null);
 * standard error to err_path (or /dev/null), or, when err_pipe is given,
 * to a pipe whose read end is returned there. The child dies with the
 * test (ms_test_die_with). fsize > 0 limits the size of
 * every file the child writes (RLIMIT_FSIZE, SIGXFSZ ignored).
 */
static inline pid_t
bt_spawn(const char *const *args, bool shell, const char *out_path,
         const char *err_path, int *err_pipe, rlim_t fsize)
{
	int fds[2] = { -1, -1 };
	if (err_pipe)
		assert_int_equal(pipe(fds), 0);
	fflush(NULL);
	pid_t parent = getpid();
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		ms_test_die_with(parent); /* `sh -c` only: not its children */
		int o = open(out_path ? out_path : "/dev/null",
		             O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int e = err_pipe ? fds[1]
		                 : open(err_path ? err_path : "/dev/null",
		                        O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (o < 0 || e < 0)
			_exit(120);
		dup2(o, STDOUT_FILENO);
		dup2(e, STDERR_FILENO);
		if (err_pipe)
			close(fds[0]);
		if (fsize > 0) {
			struct rlimit rl = { fsize, fsize };
			signal(SIGXFSZ, SIG_IGN);
			if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
				_exit(121);
		}
		if (shell) {
			execl("/bin/sh", "sh", "-c", args[0], (char *)NULL);
			_exit(127);
		}
		const char *argv[32];
		int n = 0;
		argv[n++] = MS_MERGESCOPE_BIN;
		for (const char *const *a = args; *a && n < 31; a++)
			argv[n++] = *a;
		argv[n] = NULL;
		execv(MS_MERGESCOPE_BIN, (char *const *)argv);
		_exit(127);
	}
	if (err_pipe) {
		close(fds[1]);
		*err_pipe = fds[0];
	}
	return pid;
}
#endif

/* The parent of the process whose /proc entry is name (its pid as
 * text), from /proc/NAME/stat; -1 when it cannot be read. */
static inline long
bt_parent_of(const char *name)
{
	char path[300], st[512];
	snprintf(path, sizeof(path), "/proc/%s/stat", name);
	FILE *f = fopen(path, "r");
	if (!f)
		return -1;
	size_t n = fread(st, 1, sizeof(st) - 1, f);
	fclose(f);
	st[n] = '\0';
	/* pid (comm) state ppid ...: comm may hold blanks */
	const char *rp = strrchr(st, ')');
	char state;
	long ppid = -1;
	if (!rp || sscanf(rp + 1, " %c %ld", &state, &ppid) != 2)
		return -1;
	return ppid;
}

/* Wait for pid; a child still running after hung_s seconds is killed and
 * fails the test (a hang, not a timing assertion). Returns the wait
 * status. */
static inline int
bt_wait(pid_t pid, int hung_s)
{
	int status = 0;
	for (int i = 0; i < hung_s * 20; i++) {
		pid_t w = waitpid(pid, &status, WNOHANG);
		if (w == pid)
			return status;
		assert_int_equal(w, 0);
		struct timespec ts = { 0, 50000000 };
		nanosleep(&ts, NULL);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	fail_msg("child %ld still running after %d s: hung", (long)pid, hung_s);
	return status;
}

/* The files a child wrote its standard output (op) and error (ep) to,
 * into out and err (NUL-terminated, empty when missing); the error output
 * is echoed to this test's standard error for the log. Returns the exit
 * status of wait status st (128 + N after signal N). */
static inline int
bt_outputs(int st, const char *op, char *out, size_t on, const char *ep,
           char *err, size_t en)
{
	FILE *f;
	out[0] = err[0] = '\0';
	if ((f = fopen(op, "r"))) {
		out[fread(out, 1, on - 1, f)] = '\0';
		fclose(f);
	}
	if ((f = fopen(ep, "r"))) {
		err[fread(err, 1, en - 1, f)] = '\0';
		fclose(f);
	}
	fprintf(stderr, "%s", err);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

#endif
