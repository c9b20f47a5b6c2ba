/*
 * rusage.c - sampling the process and thread resource counters of
 * ms_rusage.h from clock_gettime, /proc/self and getrusage.
 */
#include "ms_clock.h"
#include "ms_rusage.h"
#include "procfs_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif
#include <time.h>
#include <unistd.h>

static int64_t
clock_ns(clockid_t id)
{
	struct timespec ts;
	if (clock_gettime(id, &ts) != 0)
		return -1;
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t
ms_rusage_thread_cpu_ns(void)
{
	return clock_ns(CLOCK_THREAD_CPUTIME_ID);
}

/* Read a small /proc file into buf (NUL-terminated); bytes read or -1. */
static ssize_t
read_small(const char *path, char *buf, size_t n)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t got = 0;
	while (got + 1 < n) {
		ssize_t r = read(fd, buf + got, n - 1 - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	buf[got] = '\0';
	return (ssize_t)got;
}

/* The value of "key:" (kB) at the start of a line of a /proc status
 * text, in bytes, or -1 (absent, not a number, or past INT64_MAX bytes).
 * Only a line start counts: the Name line holds the command's name, any
 * 15 bytes ("RssAnon: 9"). */
static int64_t
status_kb(const char *buf, const char *key)
{
	size_t kl = strlen(key);
	const char *p = buf;
	while (strncmp(p, key, kl) != 0) {
		p = strchr(p, '\n');
		if (!p)
			return -1;
		p++;
	}
	p += kl;
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p < '0' || *p > '9')
		return -1;
	errno = 0;
	char *end;
	long long kb = strtoll(p, &end, 10);
	return errno == 0 && kb <= INT64_MAX / 1024 ? (int64_t)kb * 1024 : -1;
}

void
ms__proc_status_split(const char *text, int64_t *hwm, int64_t *anon,
                      int64_t *file, int64_t *shmem)
{
	int64_t h = status_kb(text, "VmHWM:");
	*hwm = h > 0 ? h : -1;
	*anon = status_kb(text, "RssAnon:");
	*file = status_kb(text, "RssFile:");
	*shmem = status_kb(text, "RssShmem:");
}

/* VmHWM and the RSS split from one read of /proc/self/status. */
static void
proc_status(int64_t *hwm, int64_t *anon, int64_t *file, int64_t *shmem)
{
	char buf[4096];
	*hwm = *anon = *file = *shmem = -1;
	if (read_small("/proc/self/status", buf, sizeof(buf)) <= 0)
		return;
	ms__proc_status_split(buf, hwm, anon, file, shmem);
}

int
ms_rusage_rss_split(int64_t *anon, int64_t *file, int64_t *shmem)
{
	int64_t hwm;
	proc_status(&hwm, anon, file, shmem);
	return *anon < 0 || *file < 0 || *shmem < 0 ? MS_ERR_IO : 0;
}

void
ms__proc_statm_parse(const char *text, long page, int64_t *mapped, int64_t *rss)
{
	long long size = 0, res = 0;
	*mapped = *rss = -1;
	if (sscanf(text, "%lld %lld", &size, &res) != 2 || page <= 0 ||
	    size < 0 || res < 0 || size > INT64_MAX / page ||
	    res > INT64_MAX / page)
		return;
	*mapped = (int64_t)size * page;
	*rss = (int64_t)res * page;
}

/* The process's mapped size (VmSize) and resident set in bytes, from
 * /proc/self/statm; -1 where unreadable. */
static void
proc_statm(int64_t *mapped, int64_t *rss)
{
	char buf[256];
	*mapped = *rss = -1;
	if (read_small("/proc/self/statm", buf, sizeof(buf)) <= 0)
		return;
	ms__proc_statm_parse(buf, sysconf(_SC_PAGESIZE), mapped, rss);
}

static int64_t
proc_rss(void)
{
	int64_t mapped, rss;
	proc_statm(&mapped, &rss);
	return rss;
}

uint64_t
ms_rusage_address_room(void)
{
	struct rlimit rl;
	int64_t mapped, rss;
	if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
		return UINT64_MAX;
	proc_statm(&mapped, &rss);
	if (mapped < 0)
		return UINT64_MAX;
	return (uint64_t)mapped < rl.rlim_cur ? rl.rlim_cur - (uint64_t)mapped
	                                      : 0;
}

int
ms_rusage_sample(ms_rusage *out, ms_errbuf *eb)
{
	out->wall_ns = ms_mono_ns();
	out->cpu_ns = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	out->thread_cpu_ns = ms_rusage_thread_cpu_ns();
	proc_status(&out->peak_rss_bytes, &out->rss_anon_bytes,
	            &out->rss_file_bytes, &out->rss_shmem_bytes);
	if (out->peak_rss_bytes < 0) {
		struct rusage ru;
		if (getrusage(RUSAGE_SELF, &ru) == 0)
			out->peak_rss_bytes = (int64_t)ru.ru_maxrss * 1024;
	}
	out->rss_bytes = proc_rss();
	if (out->wall_ns < 0 || out->cpu_ns < 0 || out->thread_cpu_ns < 0)
		return ms_fail(eb, MS_ERR_IO, "rusage: a CPU clock failed");
	if (out->peak_rss_bytes < 0 || out->rss_bytes < 0)
		return ms_fail(eb, MS_ERR_IO,
		               "rusage: /proc/self memory figures unreadable");
	return 0;
}

void
ms_rusage_diff(const ms_rusage *before, const ms_rusage *after, ms_rusage *d)
{
	ms_rusage r = *after;
	r.wall_ns = after->wall_ns - before->wall_ns;
	r.cpu_ns = after->cpu_ns - before->cpu_ns;
	r.thread_cpu_ns = after->thread_cpu_ns - before->thread_cpu_ns;
	*d = r;
}

int
ms_rusage_reset_peak(ms_errbuf *eb)
{
	int fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return ms_fail(eb, MS_ERR_IO,
		               "rusage: /proc/self/clear_refs: %s",
		               strerror(errno));
	ssize_t w = write(fd, "5", 1);
	int e = errno;
	close(fd);
	if (w != 1)
		return ms_fail(eb, MS_ERR_IO,
		               "rusage: resetting peak RSS refused: %s",
		               strerror(e));
	return 0;
}

void
ms_rusage_name_thread(const char *name)
{
#ifdef __linux__
	char comm[16];
	snprintf(comm, sizeof(comm), "%s", name ? name : "");
	(void)prctl(PR_SET_NAME, (unsigned long)comm, 0, 0, 0);
#else
	(void)name;
#endif
}
