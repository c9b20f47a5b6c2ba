/*
 * test_clock.c - the clock seam (real and logical), the maturity rule, and
 * the resource counters.
 */
#define _GNU_SOURCE /* memfd_create */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "ms_clock.h"
#include "ms_rusage.h"
#include "procfs_int.h"

static int64_t
realtime_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void
test_logical_holds_what_is_set(void **state)
{
	(void)state;
	ms_clock c;
	ms_clock_init_logical(&c, 1000);
	assert_true(ms_clock_is_logical(&c));
	assert_int_equal(ms_clock_now(&c), 1000);
	assert_int_equal(ms_clock_now(&c), 1000);
	assert_int_equal(ms_clock_set(&c, 5 * MS_GRACE_NS), 0);
	assert_int_equal(ms_clock_now(&c), 5 * MS_GRACE_NS);
	assert_int_equal(ms_clock_advance(&c, -MS_GRACE_NS), 0);
	assert_int_equal(ms_clock_now(&c), 4 * MS_GRACE_NS);
	assert_int_equal(ms_clock_frontier(&c), 3 * MS_GRACE_NS);
	/* Overflow is refused and leaves the clock alone. */
	assert_int_equal(ms_clock_set(&c, INT64_MAX - 5), 0);
	assert_int_equal(ms_clock_advance(&c, 6), MS_ERR_RANGE);
	assert_int_equal(ms_clock_now(&c), INT64_MAX - 5);
}

static void
test_real_follows_system(void **state)
{
	(void)state;
	ms_clock c;
	ms_clock_init_real(&c);
	assert_false(ms_clock_is_logical(&c));
	int64_t a = realtime_ns();
	int64_t n = ms_clock_now(&c);
	int64_t b = realtime_ns();
	assert_true(a <= n && n <= b);
	assert_true(ms_clock_now(NULL) >= n);
	assert_int_equal(ms_clock_set(&c, 1), MS_ERR_STATE);
	assert_int_equal(ms_clock_advance(&c, 1), MS_ERR_STATE);
}

static void
test_maturity_boundary(void **state)
{
	(void)state;
	int64_t now = 100 * MS_GRACE_NS;
	assert_int_equal(MS_GRACE_NS, 7200000000000LL);
	assert_int_equal(ms_frontier(now), now - MS_GRACE_NS);
	/* At the frontier: mature; one ns later: hot. */
	assert_true(ms_is_mature(now - MS_GRACE_NS, now));
	assert_false(ms_is_mature(now - MS_GRACE_NS + 1, now));
	assert_true(ms_is_mature(INT64_MIN, now));
	assert_false(ms_is_mature(now, now));
	/* Saturation near the bottom of the range. */
	assert_int_equal(ms_frontier(INT64_MIN + 5), INT64_MIN);
	assert_true(ms_is_mature(INT64_MIN, INT64_MIN + 5));
	assert_false(ms_is_mature(INT64_MIN + 1, INT64_MIN + 5));
	/* The same rule against a frontier already taken. */
	assert_true(ms_ts_mature(now - MS_GRACE_NS, ms_frontier(now)));
	assert_false(ms_ts_mature(now - MS_GRACE_NS + 1, ms_frontier(now)));
}

/* A configured grace: 0 (or less) is the default; the frontier with it
 * saturates as the default's does (merge and guard read it so). */
static void
test_configured_grace(void **state)
{
	(void)state;
	assert_int_equal(ms_grace_or_default(0), MS_GRACE_NS);
	assert_int_equal(ms_grace_or_default(-1), MS_GRACE_NS);
	assert_int_equal(ms_grace_or_default(60), 60);
	assert_int_equal(ms_frontier_grace(1000, 60), 940);
	assert_int_equal(ms_frontier_grace(1000, 0), 1000 - MS_GRACE_NS);
	assert_int_equal(ms_frontier_grace(INT64_MIN + 59, 60), INT64_MIN);
	assert_int_equal(ms_frontier_grace(INT64_MIN + 60, 60), INT64_MIN);
	assert_int_equal(ms_frontier_grace(INT64_MIN + 61, 60),
	                 INT64_MIN + 1);
	assert_int_equal(ms_frontier_grace(INT64_MIN + 5, 0), INT64_MIN);
}

/* The one monotonic clock: never goes back, agrees with CLOCK_MONOTONIC,
 * and converts to the timespec a timed wait takes. */
static void
test_mono_clock(void **state)
{
	(void)state;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	int64_t sys = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	int64_t a = ms_mono_ns(), b = ms_mono_ns();
	assert_true(sys <= a && a <= b);
	assert_true(ms_mono_s() >= (double)b / 1e9);
	ts = ms_mono_timespec(1500000000);
	assert_int_equal(ts.tv_sec, 1);
	assert_int_equal(ts.tv_nsec, 500000000);
	ts = ms_mono_timespec(-1);
	assert_int_equal(ts.tv_sec, -1);
	assert_int_equal(ts.tv_nsec, 999999999);
	ts = ms_mono_timespec(b);
	assert_int_equal((int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec, b);
	assert_true(ms_rusage_thread_cpu_ns() >= 0);
}

static void
test_rusage_moves(void **state)
{
	(void)state;
	ms_rusage a, b, d;
	ms_errbuf eb;
	assert_int_equal(ms_rusage_sample(&a, &eb), 0);
	assert_true(a.peak_rss_bytes > 0);
	assert_true(a.rss_bytes > 0);
	/* Touch 64 MiB and burn some CPU: both must show. */
	size_t n = 64u << 20;
	volatile unsigned char *p = malloc(n);
	assert_non_null(p);
	for (size_t i = 0; i < n; i += 4096)
		p[i] = (unsigned char)i;
	volatile uint64_t x = 0;
	for (uint64_t i = 0; i < 20000000; i++)
		x += i * i;
	assert_true(x > 0);
	assert_int_equal(ms_rusage_sample(&b, &eb), 0);
	ms_rusage_diff(&a, &b, &d);
	assert_true(d.wall_ns > 0);
	assert_true(d.cpu_ns > 0);
	assert_true(d.thread_cpu_ns > 0);
	assert_true(d.thread_cpu_ns <= d.cpu_ns + 1000000);
	assert_true(b.peak_rss_bytes >= a.peak_rss_bytes + (int64_t)(n / 2));
	assert_true(b.rss_bytes >= (int64_t)(n / 2));
	free((void *)p);
	/* After a reset (where the kernel allows it) the peak is back near the
	 * current level instead of remembering the freed 64 MiB. */
	if (ms_rusage_reset_peak(&eb) == 0) {
		ms_rusage c;
		assert_int_equal(ms_rusage_sample(&c, &eb), 0);
		assert_true(c.peak_rss_bytes - c.rss_bytes < (int64_t)(n / 2));
	}
}

/* The split by kind moves with what was touched: anonymous memory shows
 * in anon, a mapped file on a tmpfs in shmem, and the kinds add up to the
 * resident set. */
static void
test_rusage_split(void **state)
{
	(void)state;
	ms_rusage a, b;
	ms_errbuf eb;
	assert_int_equal(ms_rusage_sample(&a, &eb), 0);
	assert_true(a.rss_anon_bytes > 0);
	assert_true(a.rss_file_bytes >= 0);
	assert_true(a.rss_shmem_bytes >= 0);
	int64_t sum = a.rss_anon_bytes + a.rss_file_bytes + a.rss_shmem_bytes;
	/* Sampled by two reads, so allow a little drift between them. */
	assert_true(sum >= a.rss_bytes - (1 << 20) &&
	            sum <= a.rss_bytes + (1 << 20));
	size_t n = 32u << 20;
	volatile unsigned char *p = malloc(n);
	assert_non_null(p);
	for (size_t i = 0; i < n; i += 4096)
		p[i] = (unsigned char)(i | 1);
	int64_t an, fi, sh;
	assert_int_equal(ms_rusage_rss_split(&an, &fi, &sh), 0);
	assert_true(an >= a.rss_anon_bytes + (int64_t)(n / 2));
	free((void *)p);
	/* Shared memory: a memory file (memfd), mapped and touched. Not a
	 * file on /dev/shm: a 64 MiB one that the suite has filled takes
	 * the file but faults on its pages (SIGBUS). */
	int fd = memfd_create("ms-test-rss", MFD_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)n), 0);
	unsigned char *m =
	        mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	assert_true(m != MAP_FAILED);
	for (size_t i = 0; i < n; i += 4096)
		m[i] = 1;
	assert_int_equal(ms_rusage_sample(&b, &eb), 0);
	assert_true(b.rss_shmem_bytes >= a.rss_shmem_bytes + (int64_t)(n / 2));
	munmap(m, n);
	close(fd);
}

/* The /proc texts are read strictly: a status key counts at a line start
 * only (the Name line is the command's name: "RssAnon: 7" is a valid
 * one), and a figure past what fits, negative or after a sign is no
 * figure (the product overflowed). Found by fuzz_proc. */
static void
test_proc_texts_strict(void **state)
{
	(void)state;
	int64_t hwm, anon, file, shmem;
	ms__proc_status_split("Name:\tRssAnon: 7\nVmHWM:\t 8 kB\n"
	                      "RssAnon:\t 5 kB\nRssFile:\t0 kB\n"
	                      "RssShmem:\t1 kB\n",
	                      &hwm, &anon, &file, &shmem);
	assert_int_equal(hwm, 8 * 1024);
	assert_int_equal(anon, 5 * 1024);
	assert_int_equal(file, 0);
	assert_int_equal(shmem, 1024);
	ms__proc_status_split("Name:\tx\nRssAnon:\t99999999999999999999 kB\n"
	                      "RssFile:\t9007199254740993 kB\n",
	                      &hwm, &anon, &file, &shmem);
	assert_int_equal(hwm, -1);
	assert_int_equal(anon, -1);
	assert_int_equal(file, -1);
	assert_int_equal(shmem, -1);
	int64_t mapped, rss;
	ms__proc_statm_parse("29153 10040 2590 1 0 19036 0\n", 4096, &mapped,
	                     &rss);
	assert_int_equal(mapped, 29153 * 4096LL);
	assert_int_equal(rss, 10040 * 4096LL);
	ms__proc_statm_parse("-3 9223372036854775807\n", 4096, &mapped, &rss);
	assert_int_equal(mapped, -1);
	assert_int_equal(rss, -1);
	char st;
#define STAT_TO_21 "7 (a) b) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 "
	assert_int_equal(ms__proc_stat_start(STAT_TO_21 "8812345 0\n", &st),
	                 8812345);
	assert_int_equal(st, 'S');
	assert_int_equal(ms__proc_stat_start(STAT_TO_21 "-5 0\n", &st), 0);
	assert_int_equal(ms__proc_stat_start(STAT_TO_21 " 5 0\n", &st), 0);
	assert_int_equal(ms__proc_stat_start(STAT_TO_21 "88\x19"
	                                                "5 0\n",
	                                     &st),
	                 0);
	assert_int_equal(
	        ms__proc_stat_start("7 (a)\"S 1 1 1 0 -1 0 0 0 0 0 0 0 "
	                            "0 0 20 0 1 0 8 9 0\n",
	                            &st),
	        0);
	assert_int_equal(
	        ms__proc_stat_start(STAT_TO_21 "18446744073709551616 0", &st),
	        0);
#undef STAT_TO_21
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_logical_holds_what_is_set),
		cmocka_unit_test(test_real_follows_system),
		cmocka_unit_test(test_maturity_boundary),
		cmocka_unit_test(test_configured_grace),
		cmocka_unit_test(test_mono_clock),
		cmocka_unit_test(test_rusage_moves),
		cmocka_unit_test(test_rusage_split),
		cmocka_unit_test(test_proc_texts_strict),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
