/*
 * test_envelope.c - the run's real resource envelope (core/envelope.c):
 * fake cgroup v1 and v2 trees (the interface files a real cgroupfs makes
 * on mkdir are made by the test beforehand), the emulated fallback and
 * its reason, leftover groups of dead runs, and the real hierarchy of
 * this machine when the test may write it (root with a writable cgroup
 * mount).
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "ms_envelope.h"
#include "ms_limits.h"
#include "testdir.h"

static void
put(const char *dir, const char *name, const char *text)
{
	char p[1200];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	assert_int_equal(ms_test_put(p, text), 0);
}

static void
get(const char *dir, const char *name, char *buf, size_t n)
{
	char p[1200];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	FILE *f = fopen(p, "r");
	assert_non_null(f);
	size_t k = fread(buf, 1, n - 1, f);
	buf[k] = '\0';
	fclose(f);
}

/* dir/name holds exactly want. */
static void
expect_file(const char *dir, const char *name, const char *want)
{
	char b[256];
	get(dir, name, b, sizeof(b));
	assert_string_equal(b, want);
}

/* dir/cgroup.procs names pid (the first line). */
static void
expect_procs(const char *dir, long pid)
{
	char b[256];
	get(dir, "cgroup.procs", b, sizeof(b));
	assert_int_equal(atol(b), pid);
}

/* What the envelope reads back from its fake interface files. */
static void
expect_stats(const ms_envelope *e, uint64_t peak_bytes, uint64_t oom_events,
             uint64_t failcnt, uint64_t nr_throttled, int64_t throttled_ns)
{
	ms_envelope_stats s;
	ms_envelope_read(e, &s);
	assert_int_equal(s.peak_bytes, peak_bytes);
	assert_int_equal(s.oom_events, oom_events);
	assert_int_equal(s.failcnt, failcnt);
	assert_int_equal(s.nr_throttled, nr_throttled);
	assert_int_equal(s.throttled_ns, throttled_ns);
}

static void
mk(const char *dir)
{
	assert_true(mkdir(dir, 0755) == 0 || errno == EEXIST);
}

static void
rmtree(const char *dir)
{
	char cmd[1200];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

static bool
exists(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0;
}

/* A pid that surely belongs to no process: a child that has exited and
 * been reaped. */
static pid_t
dead_pid(void)
{
	pid_t p = fork();
	assert_true(p >= 0);
	if (p == 0)
		_exit(0);
	int st;
	assert_int_equal(waitpid(p, &st, 0), p);
	return p;
}

/* A fake v1 tree: cpu, memory, pids hierarchies, this process in /box of
 * cpu and memory and in / of pids, the new groups' files made ahead. */
static void
fake_v1(char *root, char *proc, size_t n)
{
	assert_non_null(mkdtemp(root));
	snprintf(proc, n, "%s/self-cgroup", root);
	put(root, "self-cgroup",
	    "9:pids:/\n4:memory:/box\n2:cpuacct:/\n1:cpu:/box\n0::/\n");
	char d[1200], g[1300];
	const char *const h[] = { "cpu", "memory", "pids" };
	for (int i = 0; i < 3; i++) {
		snprintf(d, sizeof(d), "%s/%s", root, h[i]);
		mk(d);
		if (i < 2) {
			snprintf(d, sizeof(d), "%s/%s/box", root, h[i]);
			mk(d);
		}
		put(d, "cgroup.procs", "");
		snprintf(g, sizeof(g), "%s/mergescope-%ld", d, (long)getpid());
		mk(g);
		put(g, "cgroup.procs", "");
	}
	snprintf(g, sizeof(g), "%s/cpu/box/mergescope-%ld", root,
	         (long)getpid());
	put(g, "cpu.cfs_period_us", "100000\n");
	put(g, "cpu.cfs_quota_us", "-1\n");
	put(g, "cpu.stat",
	    "nr_periods 9\nnr_throttled 3\nthrottled_time 7000\n");
	snprintf(g, sizeof(g), "%s/memory/box/mergescope-%ld", root,
	         (long)getpid());
	put(g, "memory.limit_in_bytes", "9223372036854771712\n");
	put(g, "memory.memsw.limit_in_bytes", "9223372036854771712\n");
	put(g, "memory.max_usage_in_bytes", "123456789\n");
	put(g, "memory.failcnt", "2\n");
	put(g, "memory.oom_control",
	    "oom_kill_disable 0\nunder_oom 0\noom_kill 1\n");
	snprintf(g, sizeof(g), "%s/pids/mergescope-%ld", root, (long)getpid());
	put(g, "pids.max", "max\n");
}

static void
test_v1_limits_written_and_read(void **st)
{
	(void)st;
	char root[] = "/tmp/ms-env-XXXXXX", proc[600], g[1300];
	fake_v1(root, proc, sizeof(proc));
	ms_envelope e;
	ms_errbuf eb = { "" };
	assert_int_equal(ms_envelope_enter(&e, root, proc, 1.5, 256ull << 20, 0,
	                                   true, &eb),
	                 0);
	assert_int_equal(e.mode, MS_ENVELOPE_CGROUP_V1);
	assert_string_equal(ms_envelope_mode_name(e.mode), "cgroup1");
	assert_string_equal(e.why, "");
	long pid = (long)getpid();
	snprintf(g, sizeof(g), "%s/cpu/box/mergescope-%ld", root, pid);
	assert_string_equal(e.dir[0], g);
	expect_file(g, "cpu.cfs_quota_us", "150000");
	expect_procs(g, pid);
	snprintf(g, sizeof(g), "%s/memory/box/mergescope-%ld", root, pid);
	expect_file(g, "memory.limit_in_bytes", "268435456");
	expect_file(g, "memory.memsw.limit_in_bytes", "268435456");
	snprintf(g, sizeof(g), "%s/pids/mergescope-%ld", root, pid);
	expect_file(g, "pids.max", "512");

	expect_stats(&e, 123456789, 1, 2, 3, 7000);

	/* A group that cannot be removed (a fake one still has files) is
	 * named; the process is moved home all the same. */
	assert_int_equal(ms_envelope_leave(&e, &eb), MS_ERR_IO);
	assert_non_null(strstr(eb.msg, "leaving cgroup"));
	assert_non_null(strstr(eb.msg, "mergescope-"));
	snprintf(g, sizeof(g), "%s/memory/box", root);
	expect_procs(g, pid);
	assert_int_equal(e.mode, MS_ENVELOPE_EMULATED);
	rmtree(root);
}

/* Limits no profile gives are refused before a group is joined: a NaN or
 * tiny cpus (a quota the kernel refuses), a count too large to convert,
 * a memory limit below what a merge needs. */
static void
test_bad_limits_refused(void **st)
{
	(void)st;
	char root[] = "/tmp/ms-env-XXXXXX", proc[600], g[1300];
	fake_v1(root, proc, sizeof(proc));
	const double cpus[] = { 0.001, -1, 1e300, NAN, 2 };
	const uint64_t mem[] = { 256ull << 20, 256ull << 20, 256ull << 20,
		                 256ull << 20, 1 };
	for (size_t i = 0; i < sizeof(cpus) / sizeof(cpus[0]); i++) {
		ms_envelope e;
		ms_errbuf eb = { "" };
		assert_int_equal(ms_envelope_enter(&e, root, proc, cpus[i],
		                                   mem[i], 0, true, &eb),
		                 MS_ERR_INVAL);
		assert_non_null(strstr(eb.msg, "expected 0 (no limit)"));
		snprintf(g, sizeof(g), "%s/cpu/box/mergescope-%ld", root,
		         (long)getpid());
		expect_file(g, "cpu.cfs_quota_us", "-1\n");
		char b[256];
		get(g, "cgroup.procs", b, sizeof(b));
		assert_string_equal(b, "");
	}
	rmtree(root);
}

static void
test_v1_leave_removes_groups(void **st)
{
	(void)st;
	char root[] = "/tmp/ms-env-XXXXXX", proc[600], g[1300];
	fake_v1(root, proc, sizeof(proc));
	ms_envelope e;
	ms_errbuf eb = { "" };
	assert_int_equal(ms_envelope_enter(&e, root, proc, 0, 512ull << 20, 64,
	                                   true, &eb),
	                 0);
	/* No CPU limit asked: the quota is left as it was. */
	expect_file(e.dir[0], "cpu.cfs_quota_us", "-1\n");
	expect_file(e.dir[2], "pids.max", "64");
	/* Empty the fake groups as the kernel would on rmdir. */
	char dirs[3][MS_ENVELOPE_PATH_MAX];
	for (int i = 0; i < 3; i++) {
		snprintf(dirs[i], sizeof(dirs[i]), "%s", e.dir[i]);
		snprintf(g, sizeof(g), "rm -f '%s'/*", e.dir[i]);
		assert_int_equal(system(g), 0);
	}
	assert_int_equal(ms_envelope_leave(&e, &eb), 0);
	for (int i = 0; i < 3; i++)
		assert_false(exists(dirs[i]));
	rmtree(root);
}

static void
test_v2_limits_written_and_read(void **st)
{
	(void)st;
	char root[] = "/tmp/ms-env-XXXXXX", proc[600], d[1200], g[1300];
	char b[256];
	assert_non_null(mkdtemp(root));
	snprintf(proc, sizeof(proc), "%s/self-cgroup", root);
	put(root, "self-cgroup", "0::/job\n");
	put(root, "cgroup.controllers", "cpuset cpu io memory pids\n");
	snprintf(d, sizeof(d), "%s/job", root);
	mk(d);
	put(d, "cgroup.controllers", "cpu io memory pids\n");
	put(d, "cgroup.subtree_control", "\n");
	put(d, "cgroup.procs", "");
	snprintf(g, sizeof(g), "%s/mergescope-%ld", d, (long)getpid());
	mk(g);
	const char *const files[] = { "cpu.max", "memory.max",
		                      "memory.swap.max", "pids.max",
		                      "cgroup.procs" };
	for (size_t i = 0; i < 5; i++)
		put(g, files[i], "max\n");
	put(g, "memory.peak", "4096\n");
	put(g, "memory.events", "low 0\nhigh 0\nmax 5\noom 1\noom_kill 1\n");
	put(g, "cpu.stat",
	    "usage_usec 10\nnr_periods 4\nnr_throttled 2\n"
	    "throttled_usec 30\n");
	ms_envelope e;
	ms_errbuf eb = { "" };
	assert_int_equal(
	        ms_envelope_enter(&e, root, proc, 2, 4ull << 30, 0, true, &eb),
	        0);
	assert_int_equal(e.mode, MS_ENVELOPE_CGROUP_V2);
	assert_string_equal(e.dir[0], g);
	assert_string_equal(e.home[0], d);
	expect_file(d, "cgroup.subtree_control", "+cpu +memory +pids");
	expect_file(g, "cpu.max", "200000 100000");
	expect_file(g, "memory.max", "4294967296");
	expect_file(g, "memory.swap.max", "0");
	expect_file(g, "pids.max", "512");
	expect_stats(&e, 4096, 1, 5, 2, 30000);
	snprintf(b, sizeof(b), "rm -f '%s'/*", g);
	assert_int_equal(system(b), 0);
	assert_int_equal(ms_envelope_leave(&e, &eb), 0);
	assert_false(exists(g));
	expect_procs(d, (long)getpid());
	rmtree(root);
}

static void
test_emulated_says_why(void **st)
{
	(void)st;
	char root[] = "/tmp/ms-env-XXXXXX", proc[600], d[1200];
	assert_non_null(mkdtemp(root));
	snprintf(proc, sizeof(proc), "%s/self-cgroup", root);
	put(root, "self-cgroup", "0::/job\n");
	/* A pure v2 machine without the memory controller below us. */
	put(root, "cgroup.controllers", "cpu io\n");
	snprintf(d, sizeof(d), "%s/job", root);
	mk(d);
	put(d, "cgroup.controllers", "cpu io\n");
	ms_envelope e;
	ms_errbuf eb = { "" };
	assert_int_equal(
	        ms_envelope_enter(&e, root, proc, 2, 1ull << 30, 0, false, &eb),
	        0);
	assert_int_equal(e.mode, MS_ENVELOPE_EMULATED);
	assert_non_null(strstr(e.why, "/job/cgroup.controllers"));
	assert_string_equal(ms_envelope_mode_name(e.mode), "emulated");
	ms_envelope_stats s;
	ms_envelope_read(&e, &s);
	assert_int_equal(s.peak_bytes, 0);
	assert_int_equal(ms_envelope_leave(&e, &eb), 0);
	/* Required: an error naming the file and what was expected. */
	assert_int_equal(
	        ms_envelope_enter(&e, root, proc, 2, 1ull << 30, 0, true, &eb),
	        MS_ERR_IO);
	assert_non_null(strstr(eb.msg, "/job/cgroup.controllers"));
	assert_non_null(strstr(eb.msg, "expected a writable cgroup"));
	/* Nothing was left behind. */
	char g[1300];
	snprintf(g, sizeof(g), "%s/mergescope-%ld", d, (long)getpid());
	assert_false(exists(g));
	rmtree(root);
}

static void
test_leftover_of_dead_run_removed(void **st)
{
	(void)st;
	char root[] = "/tmp/ms-env-XXXXXX", proc[600], g[1300];
	fake_v1(root, proc, sizeof(proc));
	char dead[1300], alive[1300];
	snprintf(dead, sizeof(dead), "%s/memory/box/mergescope-%ld", root,
	         (long)dead_pid());
	mk(dead);
	snprintf(alive, sizeof(alive), "%s/memory/box/mergescope-1", root);
	mk(alive);
	ms_envelope e;
	ms_errbuf eb = { "" };
	assert_int_equal(ms_envelope_enter(&e, root, proc, 1, 0, 0, true, &eb),
	                 0);
	assert_false(exists(dead));
	assert_true(exists(alive));
	for (int i = 0; i < 3; i++) {
		snprintf(g, sizeof(g), "rm -f '%s'/*", e.dir[i]);
		assert_int_equal(system(g), 0);
	}
	assert_int_equal(ms_envelope_leave(&e, &eb), 0);
	rmtree(root);
}

/* May this process make groups in the real hierarchy? */
static bool
real_writable(void)
{
	if (geteuid() != 0)
		return false;
	return access("/sys/fs/cgroup/memory", W_OK) == 0 ||
	       access("/sys/fs/cgroup/cgroup.subtree_control", W_OK) == 0;
}

static bool
in_group_named(const char *needle)
{
	FILE *f = fopen("/proc/self/cgroup", "r");
	assert_non_null(f);
	char line[1024];
	bool found = false;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, needle))
			found = true;
	fclose(f);
	return found;
}

/* A throttled time past what int64 nanoseconds hold reads as the most
 * they hold: the product overflowed (undefined; found by fuzz_proc). */
static void
test_throttled_time_saturates(void **st)
{
	(void)st;
	char root[] = "/tmp/ms-env-XXXXXX";
	assert_non_null(mkdtemp(root));
	ms_envelope e;
	memset(&e, 0, sizeof(e));
	e.mode = MS_ENVELOPE_CGROUP_V2;
	snprintf(e.dir[0], sizeof(e.dir[0]), "%s", root);
	put(root, "cpu.stat",
	    "nr_throttled 3\nthrottled_usec 9223372036854776\n");
	expect_stats(&e, 0, 0, 0, 3, INT64_MAX);
	put(root, "cpu.stat", "throttled_usec 9223372036854775\n");
	expect_stats(&e, 0, 0, 0, 0, 9223372036854775000);
	e.mode = MS_ENVELOPE_CGROUP_V1;
	put(root, "cpu.stat", "throttled_time 18446744073709551615\n");
	expect_stats(&e, 0, 0, 0, 0, INT64_MAX);
	rmtree(root);
}

/* A memory.max line longer than the reader's buffer is no limit: its
 * first bytes read as one ("000...0005" as a limit of 0 bytes; found by
 * fuzz_proc). */
static void
test_limit_line_too_long(void **st)
{
	(void)st;
	char root[] = "/tmp/ms-env-XXXXXX", proc[600], line[200];
	assert_non_null(mkdtemp(root));
	snprintf(proc, sizeof(proc), "%s/self-cgroup", root);
	put(root, "self-cgroup", "0::/\n");
	put(root, "cgroup.controllers", "cpu memory pids\n");
	memset(line, '0', 150);
	memcpy(line + 150, "5\n", 3);
	put(root, "memory.max", line);
	ms_limits l;
	ms_limits_detect(&l, root, proc);
	assert_int_equal(l.mem_source, MS_LIMIT_MACHINE);
	assert_true(l.detected_mem > 0);
	put(root, "memory.max", "1073741824\n");
	ms_limits_detect(&l, root, proc);
	assert_int_equal(l.mem_source, MS_LIMIT_CGROUP_V2);
	assert_int_equal(l.detected_mem, 1073741824);
	rmtree(root);
}

static void
test_real_hierarchy(void **st)
{
	(void)st;
	if (!real_writable()) {
		print_message("no writable cgroup hierarchy here (not root, or "
		              "read-only): the real path is not run\n");
		skip();
	}
	ms_envelope e;
	ms_errbuf eb = { "" };
	assert_int_equal(
	        ms_envelope_enter(&e, NULL, NULL, 1, 1ull << 30, 0, true, &eb),
	        0);
	assert_int_not_equal(e.mode, MS_ENVELOPE_EMULATED);
	assert_true(in_group_named("mergescope-"));
	/* Inside, detection finds the group's limits as the engine would. */
	ms_limits l;
	ms_limits_detect(&l, NULL, NULL);
	assert_int_equal(l.detected_mem, 1ull << 30);
	assert_true(l.detected_cpus > 0.99 && l.detected_cpus < 1.01);
	/* Memory touched inside is the group's peak. */
	size_t n = 64u << 20;
	char *p = malloc(n);
	assert_non_null(p);
	memset(p, 1, n);
	ms_envelope_stats s;
	ms_envelope_read(&e, &s);
	assert_true(s.peak_bytes >= n);
	assert_int_equal(s.oom_events, 0);
	free(p);
	char dirs[MS_ENVELOPE_DIRS][MS_ENVELOPE_PATH_MAX];
	memcpy(dirs, e.dir, sizeof(dirs));
	assert_int_equal(ms_envelope_leave(&e, &eb), 0);
	assert_false(in_group_named("mergescope-"));
	for (int i = 0; i < MS_ENVELOPE_DIRS; i++)
		if (dirs[i][0])
			assert_false(exists(dirs[i]));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_v1_limits_written_and_read),
		cmocka_unit_test(test_v1_leave_removes_groups),
		cmocka_unit_test(test_bad_limits_refused),
		cmocka_unit_test(test_v2_limits_written_and_read),
		cmocka_unit_test(test_emulated_says_why),
		cmocka_unit_test(test_leftover_of_dead_run_removed),
		cmocka_unit_test(test_throttled_time_saturates),
		cmocka_unit_test(test_limit_line_too_long),
		cmocka_unit_test(test_real_hierarchy),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
