/*
 * fuzz_proc.c - libFuzzer harness for the readers of /proc and cgroup
 * files: the RSS split of /proc/PID/status (core/rusage.c,
 * ms__proc_status_split), /proc/PID/statm (ms__proc_statm_parse), the
 * start time and state in /proc/PID/stat (core/owner.c,
 * ms__proc_stat_start), the cgroup v2 limits memory.max and cpu.max
 * (core/limits.c, ms_limits_detect over a cgroup tree of the harness's
 * own) and the run's cgroup figures memory.peak, memory.events and
 * cpu.stat (core/envelope.c, ms_envelope_read).
 *
 * Input: byte 0 picks the reader (mod 5), the rest is the text; the
 * cgroup readers cut it at NUL bytes into their files, in the order
 * named above. What must hold, beside no crash, leak or sanitizer report:
 *  - status: each figure is what a strict reading of the first line
 *    starting with its key gives ("KEY:", blanks, digits: the digits
 *    times 1024), else -1.
 *  - statm: both figures -1 or both a non-negative multiple of the page.
 *  - stat: a start time read is the digits of field 22, fields counted
 *    after the last ')' and cut at single spaces; the state is the
 *    character after ") ".
 *  - limits: a cgroup limit is below the machine's, the memory one the
 *    number memory.max starts with, the CPU one a positive quota over
 *    period.
 *  - envelope: an OOM count or throttle figure comes from a line of its
 *    file that starts with the key and a space.
 */
#include "ms_envelope.h"
#include "ms_limits.h"
#include "procfs_int.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { MAX_TEXT = 8192 };

/* Strict reading of "KEY:" at a line start in t: blanks, then digits
 * that fit in bytes; -1 when no line starts with key or it does not
 * read. */
static int64_t
strict_kb(const char *t, const char *key)
{
	size_t kl = strlen(key);
	for (const char *l = t; l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		if (strncmp(l, key, kl) != 0)
			continue;
		const char *p = l + kl;
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p < '0' || *p > '9')
			return -1;
		int64_t v = 0;
		for (; *p >= '0' && *p <= '9'; p++) {
			if (v > (INT64_MAX / 1024 - 9) / 10)
				return -1;
			v = v * 10 + (*p - '0');
		}
		return v * 1024;
	}
	return -1;
}

static void
check_status(const char *t)
{
	int64_t hwm, anon, file, shmem;
	ms__proc_status_split(t, &hwm, &anon, &file, &shmem);
	int64_t h = strict_kb(t, "VmHWM:");
	if (hwm != (h > 0 ? h : -1) || anon != strict_kb(t, "RssAnon:") ||
	    file != strict_kb(t, "RssFile:") ||
	    shmem != strict_kb(t, "RssShmem:"))
		abort();
}

static void
check_statm(const char *t)
{
	const long page = 4096;
	int64_t mapped, rss;
	ms__proc_statm_parse(t, page, &mapped, &rss);
	if ((mapped < 0) != (rss < 0))
		abort();
	if (mapped >= 0 && (mapped % page || rss % page))
		abort();
	if (mapped < 0 && (mapped != -1 || rss != -1))
		abort();
}

static void
check_stat(const char *t)
{
	char state = 'x';
	uint64_t start = ms__proc_stat_start(t, &state);
	const char *p = strrchr(t, ')');
	if (!p) {
		if (start || state)
			abort();
		return;
	}
	if (state != (p[1] == ' ' ? p[2] : '\0'))
		abort();
	if (!start)
		return;
	/* Field 22: 20 single spaces after the ')'. */
	const char *f = p + 1;
	for (int k = 0; k < 20; k++) {
		f = strchr(f, ' ');
		if (!f)
			abort();
		f++;
	}
	uint64_t v = 0;
	const char *d = f;
	for (; *d >= '0' && *d <= '9'; d++) {
		uint64_t k = (uint64_t)(*d - '0');
		if (v > (UINT64_MAX - k) / 10)
			abort(); /* past 2^64-1: no start time */
		v = v * 10 + k;
	}
	if (d == f || (*d && *d != ' ' && *d != '\n') || v != start)
		abort();
}

static char dir[128];

static void
cleanup(void)
{
	static const char *const names[] = {
		"cgroup.controllers", "memory.max",    "cpu.max", "cg",
		"memory.peak",        "memory.events", "cpu.stat"
	};
	char p[256];
	for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
		unlink(p);
	}
	rmdir(dir);
}

static void
put(const char *name, const char *text, size_t n)
{
	char p[256];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	if (!f || fwrite(text, 1, n, f) != n || fclose(f) != 0)
		abort();
}

/* The next NUL-cut piece of t[*at..n), or "" past the end. */
static const char *
piece(const char *t, size_t n, size_t *at, size_t *len)
{
	if (*at > n) {
		*len = 0;
		return "";
	}
	const char *s = t + *at;
	*len = strlen(s);
	*at += *len + 1;
	return s;
}

/* Does a line of t start with key and a space? */
static bool
has_key_line(const char *t, const char *key)
{
	size_t kl = strlen(key);
	for (const char *l = t; l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
		if (strncmp(l, key, kl) == 0 && l[kl] == ' ')
			return true;
	return false;
}

static void
check_limits(const char *t, size_t n)
{
	size_t at = 0, ml, cl;
	const char *mem = piece(t, n, &at, &ml);
	const char *cpu = piece(t, n, &at, &cl);
	put("cgroup.controllers", "cpu memory pids\n", 16);
	put("memory.max", mem, ml);
	put("cpu.max", cpu, cl);
	put("cg", "0::/\n", 5);
	char cg[256];
	snprintf(cg, sizeof(cg), "%s/cg", dir);
	ms_limits machine, l;
	ms_limits_detect(&machine, "/nonexistent-cgroup-root", cg);
	ms_limits_detect(&l, dir, cg);
	if (l.mem_source == MS_LIMIT_CGROUP_V2 &&
	    (mem[0] < '0' || mem[0] > '9' ||
	     l.detected_mem != strtoull(mem, NULL, 10) ||
	     l.detected_mem >= machine.detected_mem))
		abort();
	if (l.mem_source != MS_LIMIT_CGROUP_V2 &&
	    l.detected_mem != machine.detected_mem)
		abort();
	if (l.cpu_source == MS_LIMIT_CGROUP_V2 &&
	    !(l.detected_cpus > 0 && l.detected_cpus < machine.detected_cpus))
		abort();
}

static void
check_envelope(const char *t, size_t n)
{
	size_t at = 0, pl, el, sl;
	const char *peak = piece(t, n, &at, &pl);
	const char *events = piece(t, n, &at, &el);
	const char *stat = piece(t, n, &at, &sl);
	put("memory.peak", peak, pl);
	put("memory.events", events, el);
	put("cpu.stat", stat, sl);
	ms_envelope e;
	memset(&e, 0, sizeof(e));
	e.mode = MS_ENVELOPE_CGROUP_V2;
	snprintf(e.dir[0], sizeof(e.dir[0]), "%s", dir);
	ms_envelope_stats s;
	ms_envelope_read(&e, &s);
	if ((s.oom_events && !has_key_line(events, "oom_kill")) ||
	    (s.failcnt && !has_key_line(events, "max")) ||
	    (s.nr_throttled && !has_key_line(stat, "nr_throttled")) ||
	    (s.throttled_ns && !has_key_line(stat, "throttled_usec")) ||
	    (s.peak_bytes && (peak[0] < '0' || peak[0] > '9')))
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > MAX_TEXT)
		return 0;
	if (!dir[0]) {
		const char *root =
		        access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
		snprintf(dir, sizeof(dir), "%s/msfuzz-proc-%d", root,
		         (int)getpid());
		mkdir(dir, 0755);
		atexit(cleanup);
	}
	/* The text, NUL-terminated after its last byte. */
	static char t[MAX_TEXT + 1];
	size_t n = size - 1;
	memcpy(t, data + 1, n);
	t[n] = '\0';
	switch (data[0] % 5) {
	case 0:
		check_status(t);
		break;
	case 1:
		check_statm(t);
		break;
	case 2:
		check_stat(t);
		break;
	case 3:
		check_limits(t, n);
		break;
	default:
		check_envelope(t, n);
		break;
	}
	return 0;
}
