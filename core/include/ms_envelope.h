/*
 * ms_envelope.h - a real resource envelope for a run: a fresh cgroup
 * below this process's own, holding the profile's CPU quota, memory limit
 * (swap included: no swap beyond it) and a pid limit, that the process
 * moves into; at the end the figures the cgroup kept (peak memory, CPU
 * throttling, OOM events) and a move back out that removes it.
 *
 * cgroup v2 is used where the unified hierarchy has the cpu, memory and
 * pids controllers; else cgroup v1 (the cpu, memory and pids hierarchies
 * each get the new group). Where neither is writable the envelope is
 * "emulated": the engine still sizes itself from the profile, nothing
 * enforces it, and `why` says what was missing.
 *
 * Ownership: ms_envelope is a plain value owned by the caller. After a
 * successful ms_envelope_enter in a cgroup mode, ms_envelope_leave must
 * be called (it is a no-op for the emulated mode).
 */
#ifndef MS_ENVELOPE_H
#define MS_ENVELOPE_H

#include "ms_err.h"

#include <stdbool.h>
#include <stdint.h>

enum ms_envelope_mode {
	MS_ENVELOPE_EMULATED = 0,
	MS_ENVELOPE_CGROUP_V1 = 1,
	MS_ENVELOPE_CGROUP_V2 = 2,
};

/* "emulated", "cgroup1", "cgroup2". */
const char *ms_envelope_mode_name(enum ms_envelope_mode m);

/* The hierarchies a v1 envelope spans: cpu, memory, pids. */
#define MS_ENVELOPE_DIRS 3
#define MS_ENVELOPE_PATH_MAX 1024

/* The default pid limit: the reference container's. */
#define MS_ENVELOPE_PIDS_DEFAULT 512u

typedef struct ms_envelope {
	enum ms_envelope_mode mode;
	char why[256]; /* emulated: why not real; else "" */
	/* The created groups and the groups the process came from (v2: one
	 * of each), "" where unused. */
	char dir[MS_ENVELOPE_DIRS][MS_ENVELOPE_PATH_MAX];
	char home[MS_ENVELOPE_DIRS][MS_ENVELOPE_PATH_MAX];
	/* The limits written (0 = that key was not limited). */
	double cpus;
	uint64_t mem_bytes;
	uint32_t pids_max;
} ms_envelope;

/* What the cgroup kept, read by ms_envelope_read. */
typedef struct ms_envelope_stats {
	uint64_t peak_bytes;   /* memory high-water mark in the group */
	uint64_t nr_throttled; /* CFS periods throttled */
	int64_t throttled_ns;  /* time throttled */
	uint64_t oom_events;   /* OOM kills (v2 oom_kill; v1 oom_kill) */
	uint64_t failcnt;      /* v1: times the memory limit was hit */
} ms_envelope_stats;

/*
 * Create the group and move the whole process (every thread) into it.
 * cgroup_root is the cgroup mount point ("/sys/fs/cgroup" when NULL) and
 * proc_self_cgroup the file naming this process's groups
 * ("/proc/self/cgroup" when NULL); tests pass fake trees. cpus and
 * mem_bytes of 0 leave that resource unlimited; other values outside
 * what a profile takes (ms_limits.h: MS_PROFILE_CPUS_MIN..MAX,
 * MS_PROFILE_MEM_MIN..MAX) fail with MS_ERR_INVAL before anything is
 * created. A leftover group of a
 * dead process beside the new one is removed first.
 *
 * When no hierarchy can take the group: if required, fails with
 * MS_ERR_IO and a message naming the path and what was expected;
 * otherwise succeeds with mode MS_ENVELOPE_EMULATED and e->why set.
 * A failure half way leaves the process where it was and removes what
 * was created.
 */
int ms_envelope_enter(ms_envelope *e, const char *cgroup_root,
                      const char *proc_self_cgroup, double cpus,
                      uint64_t mem_bytes, uint32_t pids_max, bool required,
                      ms_errbuf *eb);

/* Read the group's figures (zeros for the emulated mode or unreadable
 * files). */
void ms_envelope_read(const ms_envelope *e, ms_envelope_stats *out);

/*
 * Move the process back to the groups it came from and remove the
 * created ones. Returns 0, or MS_ERR_IO naming the group that could not
 * be left or removed (the process is moved back whatever happens).
 */
int ms_envelope_leave(ms_envelope *e, ms_errbuf *eb);

#endif
