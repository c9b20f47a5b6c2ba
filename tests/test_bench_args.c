/*
 * test_bench_args.c - every benchmark under tests/bench refuses a bad
 * argument: exit status 2, its usage on standard error, nothing on
 * standard output, before it builds or runs anything. Each is run as a
 * child process from the build tree (the benchmarks themselves are not
 * run by the suite: only their argument checks are).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "testdir.h"
#include "bin_testlib.h"
#include "bench/bench_args.h"

#include <fcntl.h>
#include <string.h>
#include <sys/resource.h>

/* Run build/tests/args[0] with args in a fresh directory (its TMPDIR,
 * cache and scratch root too, so that a benchmark that does not refuse
 * writes nowhere else); returns its exit status (128 + N after signal N)
 * and what it wrote to out and err. A child still running after 60 s is
 * killed and fails the test (a hang guard; a refusal takes
 * milliseconds). */
static int
run_bench(const char *const *args, char *out, size_t on, char *err, size_t en)
{
	char dir[256], op[300], ep[300], path[512];
	assert_non_null(ms_test_mkdtemp(dir, sizeof(dir), "bench-args"));
	snprintf(op, sizeof(op), "%s/out", dir);
	snprintf(ep, sizeof(ep), "%s/err", dir);
	snprintf(path, sizeof(path), "%s/tests/%s", MS_BINARY_DIR, args[0]);
	assert_int_equal(access(path, X_OK), 0);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char cache[300], scratch[300];
		snprintf(cache, sizeof(cache), "%s/cache", dir);
		snprintf(scratch, sizeof(scratch), "%s/scratch", dir);
		int o = open(op, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int e = open(ep, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		/* A benchmark that runs instead of refusing ends here. */
		struct rlimit cpu = { 20, 20 };
		if (o < 0 || e < 0 || chdir(dir) != 0 ||
		    setrlimit(RLIMIT_CPU, &cpu) != 0)
			_exit(120);
		dup2(o, STDOUT_FILENO);
		dup2(e, STDERR_FILENO);
		setenv("TMPDIR", dir, 1);
		setenv("XDG_CACHE_HOME", cache, 1);
		setenv("MERGESCOPE_SCRATCH", scratch, 1);
		execv(path, (char *const *)args);
		_exit(127);
	}
	int st = bt_wait(pid, 60);
	fprintf(stderr, "%s: ", args[0]);
	int rc = bt_outputs(st, op, out, on, ep, err, en);
	ms_test_rmtree(dir);
	return rc;
}

/* The benchmark refuses args: status 2, nothing on standard output,
 * "usage: NAME" on standard error, and `says` there too if given. */
static void
refuses(const char *says, const char *const *args)
{
	char out[4096], err[4096], usage[128];
	int rc = run_bench(args, out, sizeof(out), err, sizeof(err));
	snprintf(usage, sizeof(usage), "usage: %s", args[0]);
	if (rc != 2 || out[0] || !strstr(err, usage) ||
	    (says && !strstr(err, says)))
		fail_msg("%s %s: exit %d, stdout '%.200s', stderr '%.200s'",
		         args[0], args[1] ? args[1] : "", rc, out, err);
}

#define REFUSES(says, ...)                                                     \
	do {                                                                   \
		const char *const a_[] = { __VA_ARGS__, NULL };                \
		refuses(says, a_);                                             \
	} while (0)

/* The argument reader itself: whole decimal integers within the range. */
static void
test_parse(void **state)
{
	(void)state;
	long long v = 0;
	uint64_t u = 0;
	assert_int_equal(bench_parse_ll("150000", 1000, 10000000, &v), 0);
	assert_int_equal(v, 150000);
	assert_int_equal(bench_parse_ll("-3", -5, 5, &v), 0);
	assert_int_equal(v, -3);
	assert_int_equal(bench_parse_ll("0", 0, 0, &v), 0);
	static const char *const bad[] = {
		"",  "abc",  "5x",  " 5",  "5 ", "-",
		"+", "0x10", "1e5", "999", "-1", "99999999999999999999"
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(bench_parse_ll(bad[i], 0, 100, &v), -1);
	assert_int_equal(bench_parse_ll(NULL, 0, 100, &v), -1);
	assert_int_equal(bench_parse_u64("18446744073709551615", &u), 0);
	assert_true(u == UINT64_MAX);
	assert_int_equal(bench_parse_u64("18446744073709551616", &u), -1);
	assert_int_equal(bench_parse_u64("-1", &u), -1);
	assert_int_equal(bench_parse_u64("+1", &u), -1);
	assert_int_equal(bench_parse_u64("1x", &u), -1);
}

/* Counts that strtoul/atoi read as 0, as a huge number or as their
 * leading digits. */
static void
test_counts(void **state)
{
	(void)state;
	REFUSES("ROWS", "bench_merge", "abc");
	REFUSES("ROWS", "bench_merge", "0");
	REFUSES("ROWS", "bench_merge", "-5");
	REFUSES("REPS", "bench_merge", "150000", "-1");
	REFUSES("REPS", "bench_merge", "150000", "5x");
	REFUSES("ROWS", "bench_pipeline", "-5");
	REFUSES("REPS", "bench_pipeline", "150000", "0");
	REFUSES("TRACES", "bench_part", "abc");
	REFUSES("TRACES", "bench_part", "-1");
	REFUSES("REPS", "bench_part", "100", ".", "-3");
	REFUSES("FRAMES", "bench_tui", "abc");
	REFUSES("FRAMES", "bench_tui", "-5");
	REFUSES("REPS", "bench_fixture", "smoke", "abc");
	REFUSES("SEED", "bench_fixture", "smoke", "1", "-1");
	REFUSES("SEED", "bench_fixture", "smoke", "1", "seven");
	REFUSES("REPS", "bench_tui_replay", "smoke", "abc");
	REFUSES("PRESSES", "bench_tui_replay", "smoke", "1", "-1");
	REFUSES("REPS", "bench_sidx", "-r", "3x", "part");
	REFUSES("LEVEL", "bench_refbytes", "-z", "abc", "fixture");
	REFUSES("--reps", "bench_day", "--reps", "3x", "--bin", "x",
	        "--fixture", "a=b", "--work", "c=d");
}

/* Words where none is taken, and one argument too many. */
static void
test_extra(void **state)
{
	(void)state;
	REFUSES(NULL, "bench_pipeline", "1000", "1", "nosuchvariant");
	REFUSES(NULL, "bench_tui_replay", "smoke", "1", "0", "seeek");
	REFUSES(NULL, "bench_merge", "1000", "1", "extra");
	REFUSES(NULL, "bench_tui", "100", "extra");
	REFUSES(NULL, "bench_sidx", "-r", "3");
	REFUSES(NULL, "bench_picker", "extra");
	REFUSES(NULL, "bench_dropset", "extra");
	REFUSES(NULL, "bench_shard", ".", "extra");
	REFUSES(NULL, "bench_recorder", ".", "extra");
	REFUSES("RUN_WALL_S", "bench_recorder", ".", "0");
	REFUSES("RUN_WALL_S", "bench_recorder", ".", "2s");
	REFUSES(NULL, "bench_recorder", ".", "2", "extra");
	REFUSES(NULL, "bench_checkpoint", ".", "extra");
	REFUSES(NULL, "bench_decide", ".", "extra");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_counts),
		cmocka_unit_test(test_extra),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
