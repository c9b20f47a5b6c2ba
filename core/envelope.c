/*
 * envelope.c - a run's real resource envelope: a fresh cgroup with the
 * profile's limits that the process moves into, read and removed at the
 * end. See ms_envelope.h.
 *
 * The group is made below the process's own group in each hierarchy (so
 * it stays inside whatever container the process is already in) and is
 * named "mergescope-<pid>"; a group of that form whose process is gone
 * is a leftover of a run that died and is removed when the next one
 * enters. v2 is preferred when the unified hierarchy offers the cpu,
 * memory and pids controllers below this process; v1 needs the cpu,
 * memory and pids hierarchies mounted and writable.
 */
#include "ms_envelope.h"
#include "limits_int.h"
#include "ms_enum.h"
#include "ms_fs.h"
#include "ms_limits.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CFS_PERIOD_US 100000u

static const char *const envelope_mode_names[] = {
	[MS_ENVELOPE_EMULATED] = "emulated",
	[MS_ENVELOPE_CGROUP_V1] = "cgroup1",
	[MS_ENVELOPE_CGROUP_V2] = "cgroup2",
};

const char *
ms_envelope_mode_name(enum ms_envelope_mode m)
{
	return MS_ENUM_NAME(envelope_mode_names, m, "unknown");
}

/* Write text to dir/name (an existing cgroup interface file); 0 or an
 * errno. */
static int
put(const char *dir, const char *name, const char *text)
{
	char p[MS_ENVELOPE_PATH_MAX + 64];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	/* No O_CREAT: a file the group does not offer is an error. */
	int fd = open(p, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return errno ? errno : EIO;
	size_t len = strlen(text);
	ssize_t w = write(fd, text, len);
	int rc = w == (ssize_t)len ? 0 : (w < 0 && errno ? errno : EIO);
	if (close(fd) != 0 && rc == 0)
		rc = errno ? errno : EIO;
	return rc;
}

static bool
read_u64(const char *dir, const char *name, uint64_t *out)
{
	char p[MS_ENVELOPE_PATH_MAX + 64], b[64];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	FILE *f = fopen(p, "r");
	if (!f)
		return false;
	bool ok = fgets(b, sizeof(b), f) != NULL;
	fclose(f);
	if (!ok || b[0] < '0' || b[0] > '9')
		return false;
	*out = strtoull(b, NULL, 10);
	return true;
}

/* The value of "key N" in a flat keyed file (cpu.stat, memory.events). */
static bool
read_key(const char *dir, const char *name, const char *key, uint64_t *out)
{
	char p[MS_ENVELOPE_PATH_MAX + 64], line[256];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	FILE *f = fopen(p, "r");
	if (!f)
		return false;
	size_t kl = strlen(key);
	bool found = false;
	while (!found && fgets(line, sizeof(line), f))
		if (strncmp(line, key, kl) == 0 && line[kl] == ' ') {
			*out = strtoull(line + kl + 1, NULL, 10);
			found = true;
		}
	fclose(f);
	return found;
}

/* Remove groups "mergescope-<pid>" in base whose process is gone. */
static void
sweep(const char *base)
{
	DIR *d = opendir(base);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		long pid;
		int end = 0;
		if (sscanf(de->d_name, "mergescope-%ld%n", &pid, &end) != 1 ||
		    de->d_name[end] != '\0' || pid <= 0 || pid == getpid())
			continue;
		if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		char p[MS_ENVELOPE_PATH_MAX + 300];
		snprintf(p, sizeof(p), "%s/%s", base, de->d_name);
		(void)rmdir(p); /* fails harmlessly if it still has tasks */
	}
	closedir(d);
}

/* rmdir, retrying briefly while the kernel still counts the group busy
 * (a task that just left, v1 memory reparenting). */
static int
remove_group(const char *dir)
{
	for (int i = 0; i < 50; i++) {
		if (rmdir(dir) == 0 || errno == ENOENT)
			return 0;
		if (errno != EBUSY)
			return errno;
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	return EBUSY;
}

/* base = hierarchy + this process's path in it (the hierarchy itself
 * when that path is not visible, as inside a cgroup namespace). */
static bool
own_group(const char *hier, const char *proc, const char *ctrl, char *out,
          size_t n)
{
	char path[MS_ENVELOPE_PATH_MAX];
	if (!ms__cgroup_path(proc, ctrl, path, sizeof(path)))
		return false;
	const char *rel = strcmp(path, "/") == 0 ? "" : path;
	int w = snprintf(out, n, "%s%s", hier, rel);
	if (w < 0 || (size_t)w >= n)
		return false;
	if (!ms_fs_is_dir(out))
		snprintf(out, n, "%s", hier);
	return true;
}

/* Undo a partial enter: back home, groups removed. */
static void
unwind(ms_envelope *e)
{
	char pid[32];
	snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
	for (int i = 0; i < MS_ENVELOPE_DIRS; i++) {
		if (!e->dir[i][0])
			continue;
		if (e->home[i][0])
			(void)put(e->home[i], "cgroup.procs", pid);
		(void)remove_group(e->dir[i]);
		e->dir[i][0] = e->home[i][0] = '\0';
	}
}

/* Make the group base/mergescope-<pid> as slot i. 0 or an errno. */
static int
make_group(ms_envelope *e, int i, const char *base)
{
	sweep(base);
	int w = snprintf(e->dir[i], sizeof(e->dir[i]), "%s/mergescope-%ld",
	                 base, (long)getpid());
	if (w < 0 || (size_t)w >= sizeof(e->dir[i]))
		return ENAMETOOLONG;
	snprintf(e->home[i], sizeof(e->home[i]), "%s", base);
	if (mkdir(e->dir[i], 0755) != 0 && errno != EEXIST) {
		int rc = errno;
		e->dir[i][0] = e->home[i][0] = '\0';
		return rc;
	}
	return 0;
}

/* Where the step failed, for why / the error. */
typedef struct fault {
	char where[MS_ENVELOPE_PATH_MAX + 64];
	int err;
} fault;

static int
note(fault *f, const char *dir, const char *what, int err)
{
	snprintf(f->where, sizeof(f->where), "%s%s%s", dir, what[0] ? "/" : "",
	         what);
	f->err = err;
	return err;
}

/* put, with a failure noted in f: 0 or the errno. */
static int
set_ctl(fault *f, const char *dir, const char *name, const char *text)
{
	int rc = put(dir, name, text);
	return rc ? note(f, dir, name, rc) : 0;
}

/* set_ctl of a file the kernel may not offer (swap accounting): nothing
 * when it is absent. */
static int
set_ctl_if_any(fault *f, const char *dir, const char *name, const char *text)
{
	char p[MS_ENVELOPE_PATH_MAX + 64];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return ms_fs_is_file(p) ? set_ctl(f, dir, name, text) : 0;
}

static bool
has_words(const char *dir, const char *file, const char *const *words)
{
	char p[MS_ENVELOPE_PATH_MAX + 64], line[512];
	snprintf(p, sizeof(p), "%s/%s", dir, file);
	FILE *f = fopen(p, "r");
	if (!f)
		return false;
	bool ok = fgets(line, sizeof(line), f) != NULL;
	fclose(f);
	if (!ok)
		return false;
	for (; *words; words++) {
		bool found = false;
		char tmp[512];
		snprintf(tmp, sizeof(tmp), "%s", line);
		for (char *sv, *t = strtok_r(tmp, " \n", &sv); t && !found;
		     t = strtok_r(NULL, " \n", &sv))
			found = strcmp(t, *words) == 0;
		if (!found)
			return false;
	}
	return true;
}

static const char *const v2_ctrls[] = { "cpu", "memory", "pids", NULL };

static int
enter_v2(ms_envelope *e, const char *hier, const char *proc, fault *f)
{
	char base[MS_ENVELOPE_PATH_MAX];
	if (!own_group(hier, proc, NULL, base, sizeof(base)))
		return note(f, proc, "", ENOENT);
	if (!has_words(base, "cgroup.controllers", v2_ctrls))
		return note(f, base, "cgroup.controllers", ENOTSUP);
	if (!has_words(base, "cgroup.subtree_control", v2_ctrls)) {
		int rc = set_ctl(f, base, "cgroup.subtree_control",
		                 "+cpu +memory +pids");
		if (rc)
			return rc;
	}
	int rc = make_group(e, 0, base);
	if (rc)
		return note(f, base, "", rc);
	char v[64];
	if (e->cpus > 0) {
		snprintf(v, sizeof(v), "%llu %u",
		         (unsigned long long)(e->cpus * CFS_PERIOD_US + 0.5),
		         CFS_PERIOD_US);
		if ((rc = set_ctl(f, e->dir[0], "cpu.max", v)))
			return rc;
	}
	if (e->mem_bytes) {
		snprintf(v, sizeof(v), "%llu",
		         (unsigned long long)e->mem_bytes);
		if ((rc = set_ctl(f, e->dir[0], "memory.max", v)))
			return rc;
		if ((rc = set_ctl_if_any(f, e->dir[0], "memory.swap.max", "0")))
			return rc;
	}
	snprintf(v, sizeof(v), "%u", e->pids_max);
	if ((rc = set_ctl(f, e->dir[0], "pids.max", v)))
		return rc;
	snprintf(v, sizeof(v), "%ld\n", (long)getpid());
	if ((rc = set_ctl(f, e->dir[0], "cgroup.procs", v)))
		return rc;
	e->mode = MS_ENVELOPE_CGROUP_V2;
	return 0;
}

/* v1 slots: 0 cpu, 1 memory, 2 pids. */
static int
enter_v1(ms_envelope *e, const char *root, const char *proc, fault *f)
{
	static const char *const ctrl[MS_ENVELOPE_DIRS] = { "cpu", "memory",
		                                            "pids" };
	char hier[MS_ENVELOPE_DIRS][MS_ENVELOPE_PATH_MAX];
	for (int i = 0; i < MS_ENVELOPE_DIRS; i++) {
		snprintf(hier[i], sizeof(hier[i]), "%s/%s", root, ctrl[i]);
		if (i == 0 && !ms_fs_is_dir(hier[i]))
			snprintf(hier[i], sizeof(hier[i]), "%s/cpu,cpuacct",
			         root);
		if (!ms_fs_is_dir(hier[i]))
			return note(f, hier[i], "", ENOENT);
	}
	int rc;
	for (int i = 0; i < MS_ENVELOPE_DIRS; i++) {
		char base[MS_ENVELOPE_PATH_MAX];
		if (!own_group(hier[i], proc, ctrl[i], base, sizeof(base)))
			return note(f, proc, "", ENOENT);
		if ((rc = make_group(e, i, base)))
			return note(f, base, "", rc);
	}
	char v[64];
	if (e->cpus > 0) {
		snprintf(v, sizeof(v), "%u", CFS_PERIOD_US);
		if ((rc = set_ctl(f, e->dir[0], "cpu.cfs_period_us", v)))
			return rc;
		snprintf(v, sizeof(v), "%llu",
		         (unsigned long long)(e->cpus * CFS_PERIOD_US + 0.5));
		if ((rc = set_ctl(f, e->dir[0], "cpu.cfs_quota_us", v)))
			return rc;
	}
	if (e->mem_bytes) {
		snprintf(v, sizeof(v), "%llu",
		         (unsigned long long)e->mem_bytes);
		if ((rc = set_ctl(f, e->dir[1], "memory.limit_in_bytes", v)))
			return rc;
		/* memory+swap equal to memory: no swap beyond the limit
		 * (absent when the kernel has no swap accounting). */
		if ((rc = set_ctl_if_any(f, e->dir[1],
		                         "memory.memsw.limit_in_bytes", v)))
			return rc;
	}
	snprintf(v, sizeof(v), "%u", e->pids_max);
	if ((rc = set_ctl(f, e->dir[2], "pids.max", v)))
		return rc;
	snprintf(v, sizeof(v), "%ld\n", (long)getpid());
	for (int i = 0; i < MS_ENVELOPE_DIRS; i++)
		if ((rc = set_ctl(f, e->dir[i], "cgroup.procs", v)))
			return rc;
	e->mode = MS_ENVELOPE_CGROUP_V1;
	return 0;
}

int
ms_envelope_enter(ms_envelope *e, const char *cgroup_root,
                  const char *proc_self_cgroup, double cpus, uint64_t mem_bytes,
                  uint32_t pids_max, bool required, ms_errbuf *eb)
{
	const char *root = cgroup_root ? cgroup_root : "/sys/fs/cgroup";
	const char *proc =
	        proc_self_cgroup ? proc_self_cgroup : "/proc/self/cgroup";
	memset(e, 0, sizeof(*e));
	/* What a group can be given: the limits a profile accepts (a quota
	 * under the kernel's 1 ms a period is refused, a count past it
	 * would not convert), or 0 for none. */
	if (!(cpus == 0 ||
	      (cpus >= MS_PROFILE_CPUS_MIN && cpus <= MS_PROFILE_CPUS_MAX)))
		return ms_fail(eb, MS_ERR_INVAL,
		               "cgroup: cpus %g; expected 0 (no limit) or "
		               "%g to %d",
		               cpus, MS_PROFILE_CPUS_MIN, MS_PROFILE_CPUS_MAX);
	if (mem_bytes &&
	    (mem_bytes < MS_PROFILE_MEM_MIN || mem_bytes > MS_PROFILE_MEM_MAX))
		return ms_fail(eb, MS_ERR_INVAL,
		               "cgroup: memory %llu bytes; expected 0 (no "
		               "limit) or %llu MiB to %llu TiB",
		               (unsigned long long)mem_bytes,
		               MS_PROFILE_MEM_MIN >> 20,
		               MS_PROFILE_MEM_MAX >> 40);
	e->cpus = cpus;
	e->mem_bytes = mem_bytes;
	e->pids_max = pids_max ? pids_max : MS_ENVELOPE_PIDS_DEFAULT;

	/* The unified hierarchy: at the root (pure v2) or beside v1. */
	char v2[MS_ENVELOPE_PATH_MAX], probe[MS_ENVELOPE_PATH_MAX + 32];
	snprintf(v2, sizeof(v2), "%s", root);
	snprintf(probe, sizeof(probe), "%s/cgroup.controllers", v2);
	if (!ms_fs_is_file(probe))
		snprintf(v2, sizeof(v2), "%s/unified", root);
	fault f2 = { "", 0 }, f1 = { "", 0 };
	if (enter_v2(e, v2, proc, &f2) == 0)
		return 0;
	unwind(e);
	if (enter_v1(e, root, proc, &f1) == 0)
		return 0;
	unwind(e);
	e->mode = MS_ENVELOPE_EMULATED;
	/* The v1 fault is the telling one where v1 is mounted, the v2 one
	 * on a pure v2 machine. */
	const fault *f = ms_fs_is_file(probe) ? &f2 : &f1;
	snprintf(e->why, sizeof(e->why), "%.200s: %s", f->where,
	         strerror(f->err));
	if (required)
		return ms_fail(eb, MS_ERR_IO,
		               "no cgroup to hold the limits: %s (expected a "
		               "writable cgroup v2 with cpu, memory and pids, "
		               "or v1 cpu, memory and pids hierarchies)",
		               e->why);
	return 0;
}

void
ms_envelope_read(const ms_envelope *e, ms_envelope_stats *out)
{
	memset(out, 0, sizeof(*out));
	uint64_t v;
	if (e->mode == MS_ENVELOPE_CGROUP_V2) {
		const char *d = e->dir[0];
		if (read_u64(d, "memory.peak", &v))
			out->peak_bytes = v;
		if (read_key(d, "memory.events", "oom_kill", &v))
			out->oom_events = v;
		if (read_key(d, "memory.events", "max", &v))
			out->failcnt = v;
		if (read_key(d, "cpu.stat", "nr_throttled", &v))
			out->nr_throttled = v;
		if (read_key(d, "cpu.stat", "throttled_usec", &v))
			out->throttled_ns = v <= INT64_MAX / 1000
			                            ? (int64_t)v * 1000
			                            : INT64_MAX;
	} else if (e->mode == MS_ENVELOPE_CGROUP_V1) {
		if (read_key(e->dir[0], "cpu.stat", "nr_throttled", &v))
			out->nr_throttled = v;
		if (read_key(e->dir[0], "cpu.stat", "throttled_time", &v))
			out->throttled_ns =
			        v <= INT64_MAX ? (int64_t)v : INT64_MAX;
		if (read_u64(e->dir[1], "memory.max_usage_in_bytes", &v))
			out->peak_bytes = v;
		if (read_u64(e->dir[1], "memory.failcnt", &v))
			out->failcnt = v;
		if (read_key(e->dir[1], "memory.oom_control", "oom_kill", &v))
			out->oom_events = v;
	}
}

int
ms_envelope_leave(ms_envelope *e, ms_errbuf *eb)
{
	if (e->mode == MS_ENVELOPE_EMULATED)
		return 0;
	char pid[32];
	snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
	int rc = 0;
	char bad[MS_ENVELOPE_PATH_MAX + 64] = "";
	for (int i = 0; i < MS_ENVELOPE_DIRS; i++) {
		if (!e->dir[i][0])
			continue;
		int r = put(e->home[i], "cgroup.procs", pid);
		if (r == 0)
			r = remove_group(e->dir[i]);
		if (r && rc == 0) {
			rc = r;
			snprintf(bad, sizeof(bad), "%s", e->dir[i]);
		}
		e->dir[i][0] = e->home[i][0] = '\0';
	}
	e->mode = MS_ENVELOPE_EMULATED;
	if (rc)
		return ms_fail(eb, MS_ERR_IO, "leaving cgroup %s: %s", bad,
		               strerror(rc));
	return 0;
}
