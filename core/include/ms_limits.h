/*
 * ms_limits.h - the resources the engine sizes itself from: memory limit
 * and CPU count, detected from cgroup v2 (memory.max, cpu.max), else cgroup
 * v1 (memory.limit_in_bytes, cpu.cfs_quota_us / cpu.cfs_period_us), else the
 * machine (physical memory, online CPUs). An explicit profile such as
 * "cpus=2,mem=4g" (the reference container) may override what was detected;
 * both are kept so a run can record what it found and what it used.
 *
 * Ownership: ms_limits is a plain value filled by the caller's calls.
 */
#ifndef MS_LIMITS_H
#define MS_LIMITS_H

#include "ms_err.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where a detected figure came from. */
enum ms_limit_source {
	MS_LIMIT_MACHINE = 0, /* sysconf: no cgroup limit applied */
	MS_LIMIT_CGROUP_V2 = 1,
	MS_LIMIT_CGROUP_V1 = 2,
	MS_LIMIT_PROFILE = 3, /* set by an explicit profile */
};

typedef struct ms_limits {
	/* What the machine and cgroups say. */
	uint64_t detected_mem; /* bytes */
	double detected_cpus;  /* may be fractional (cpu.max 150000/100000) */
	enum ms_limit_source mem_source;
	enum ms_limit_source cpu_source;
	/* The explicit profile, when one was applied (else zero / ""). */
	bool has_profile;
	char profile[64];
	uint64_t profile_mem;
	double profile_cpus;
	/* What the engine uses: the profile's values where set, else the
	 * detected ones. cpus is at least 1. */
	uint64_t mem;
	unsigned cpus;
} ms_limits;

/* "machine", "cgroup2", "cgroup1", "profile". */
const char *ms_limit_source_name(enum ms_limit_source s);

/*
 * Detect limits. cgroup_root is the cgroup mount point ("/sys/fs/cgroup"
 * when NULL) and proc_self_cgroup the file naming this process's cgroups
 * ("/proc/self/cgroup" when NULL); tests pass fake trees. A limit of "max"
 * or an unreadable file means "no limit at this level". Never fails: the
 * machine's figures are the fallback.
 */
void ms_limits_detect(ms_limits *out, const char *cgroup_root,
                      const char *proc_self_cgroup);

/*
 * Apply an explicit profile "cpus=N,mem=SIZE" (either key may be absent;
 * SIZE is bytes or takes a k/m/g/t suffix, powers of 1024; cpus may be
 * fractional). Unknown keys, a key given twice (both values named), bad
 * numbers, a memory outside MS_PROFILE_MEM_MIN..MS_PROFILE_MEM_MAX and
 * cpus outside MS_PROFILE_CPUS_MIN..MS_PROFILE_CPUS_MAX are refused with a
 * message naming the key, the value and what is accepted. On failure *l
 * is unchanged.
 */
#define MS_PROFILE_MEM_MIN (64ull << 20) /* a merge's buffers need it */
/* The most physical memory Linux maps on x86-64 with 4-level page
 * tables: a larger limit is no limit on any machine it runs on. */
#define MS_PROFILE_MEM_MAX (64ull << 40)
/* The kernel's smallest CPU quota, 1000 us per 100000 us period (cgroup
 * v2 cpu.max, v1 cpu.cfs_quota_us): a smaller one cannot be enforced. */
#define MS_PROFILE_CPUS_MIN 0.01
#define MS_PROFILE_CPUS_MAX 65535
int ms_limits_apply_profile(ms_limits *l, const char *profile, ms_errbuf *eb);

/*
 * Whether a profile asks more than there is: want_cpus CPUs over
 * have_cpus, or want_mem bytes over have_mem by more than a cgroup's page
 * rounding (1 MiB); a want of 0 asks nothing. No envelope gives more than
 * the machine has, so such a run is sized for the profile but runs on
 * less. When it does, buf (n bytes) gets what is short, e.g. "64 CPUs
 * where there are 2, 1024.00 GiB where there are 23.54 GiB", and the
 * result is true.
 */
bool ms_limits_beyond(double want_cpus, uint64_t want_mem, double have_cpus,
                      uint64_t have_mem, char *buf, size_t n);

/* Parse "4g", "512m", "1073741824" into bytes. 0 or MS_ERR_INVAL. */
int ms_parse_size(const char *s, uint64_t *out);

#endif
