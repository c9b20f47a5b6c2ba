/*
 * limits.c - memory and CPU limits from cgroups or the machine, and the
 * explicit resource profile.
 *
 * The staging ceiling and the lane threshold are derived from the memory
 * limit and CPU count the engine really has. Inside a container that is
 * the cgroup's limit, not the machine's, so detection reads the unified
 * hierarchy (cgroup v2: memory.max, cpu.max) along this process's cgroup
 * path up to the root, keeping the smallest limit found; without v2 it
 * reads the v1 memory and cpu controllers the same way; without either it
 * uses the machine. A profile string pins the figures for a reproducible
 * run; the detected figures are kept next to it.
 */
#include "ms_limits.h"
#include "limits_int.h"
#include "ms_enum.h"
#include "ms_fs.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const limit_source_names[] = {
	[MS_LIMIT_MACHINE] = "machine",
	[MS_LIMIT_CGROUP_V2] = "cgroup2",
	[MS_LIMIT_CGROUP_V1] = "cgroup1",
	[MS_LIMIT_PROFILE] = "profile",
};

const char *
ms_limit_source_name(enum ms_limit_source s)
{
	return MS_ENUM_NAME(limit_source_names, s, "unknown");
}

/* Read the first line of a small file into buf; false if unreadable or
 * longer than buf. */
static bool
read_line(const char *path, char *buf, size_t n)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	bool ok = fgets(buf, (int)n, f) != NULL;
	/* A line longer than buf is no value: its first bytes could read
	 * as another number ("000...0005" as 0). */
	if (ok && !strchr(buf, '\n') && fgetc(f) != EOF)
		ok = false;
	fclose(f);
	if (ok)
		buf[strcspn(buf, "\n")] = '\0';
	return ok;
}

/* Parse a decimal unsigned; false on anything else. */
static bool
parse_u64(const char *s, uint64_t *out)
{
	if (!s || *s < '0' || *s > '9')
		return false;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (*end != '\0' && *end != ' ')
		return false;
	*out = v;
	return true;
}

/*
 * Find this process's path for a controller in the cgroup file. v2: the
 * "0::" line (want NULL). v1: the line whose controller list contains
 * want. Returns false when absent.
 */
bool
ms__cgroup_path(const char *proc_file, const char *want, char *out, size_t n)
{
	FILE *f = fopen(proc_file, "r");
	if (!f)
		return false;
	char line[1024];
	bool found = false;
	while (!found && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		char *c1 = strchr(line, ':');
		char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		*c2 = '\0';
		const char *ctrls = c1 + 1;
		const char *path = c2 + 1;
		if (!want) {
			if (strncmp(line, "0", 1) == 0 && c1 == line + 1 &&
			    *ctrls == '\0')
				found = true;
		} else {
			char tmp[256];
			snprintf(tmp, sizeof(tmp), "%s", ctrls);
			for (char *sv, *t = strtok_r(tmp, ",", &sv); t;
			     t = strtok_r(NULL, ",", &sv))
				if (strcmp(t, want) == 0)
					found = true;
		}
		if (found)
			snprintf(out, n, "%s", path);
	}
	fclose(f);
	return found;
}

/*
 * Walk from base/rel up to base, calling fn on each directory, keeping
 * the smallest value it reports. If base/rel does not exist (a namespaced
 * path) only base is visited.
 */
typedef bool (*level_fn)(const char *dir, double *value);

static bool
walk_min(const char *base, const char *rel, level_fn fn, double *out)
{
	char dir[4096];
	bool any = false;
	double best = 0;
	snprintf(dir, sizeof(dir), "%s%s", base, rel);
	if (!ms_fs_is_dir(dir))
		snprintf(dir, sizeof(dir), "%s", base);
	size_t blen = strlen(base);
	for (;;) {
		double v;
		if (fn(dir, &v) && (!any || v < best)) {
			best = v;
			any = true;
		}
		size_t len = strlen(dir);
		if (len <= blen)
			break;
		char *slash = strrchr(dir, '/');
		if (!slash || (size_t)(slash - dir) < blen)
			break;
		*slash = '\0';
		if (strlen(dir) < blen)
			break;
	}
	if (any)
		*out = best;
	return any;
}

/* The first line of dir/name into b (n bytes); false if unreadable. */
static bool
read_ctl(const char *dir, const char *name, char *b, size_t n)
{
	char p[4200];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return read_line(p, b, n);
}

/* The decimal number dir/name starts with; false if unreadable or not a
 * number ("max", "-1"). */
static bool
read_ctl_u64(const char *dir, const char *name, uint64_t *x)
{
	char b[128];
	return read_ctl(dir, name, b, sizeof(b)) && parse_u64(b, x);
}

static bool
v2_mem(const char *dir, double *v)
{
	uint64_t x;
	if (!read_ctl_u64(dir, "memory.max", &x))
		return false; /* absent or "max" */
	*v = (double)x;
	return true;
}

static bool
v2_cpu(const char *dir, double *v)
{
	char b[128];
	uint64_t quota, period;
	if (!read_ctl(dir, "cpu.max", b, sizeof(b)) || !parse_u64(b, &quota))
		return false;
	const char *sp = strchr(b, ' ');
	if (!sp || !parse_u64(sp + 1, &period) || period == 0 || quota == 0)
		return false;
	*v = (double)quota / (double)period;
	return true;
}

static bool
v1_mem(const char *dir, double *v)
{
	uint64_t x;
	if (!read_ctl_u64(dir, "memory.limit_in_bytes", &x))
		return false;
	if (x >= (1ull << 62)) /* "unlimited" is a page-rounded INT64_MAX */
		return false;
	*v = (double)x;
	return true;
}

static bool
v1_cpu(const char *dir, double *v)
{
	uint64_t quota, period;
	/* "-1" (no quota) is not a number: no limit. */
	if (!read_ctl_u64(dir, "cpu.cfs_quota_us", &quota) || quota == 0 ||
	    !read_ctl_u64(dir, "cpu.cfs_period_us", &period) || period == 0)
		return false;
	*v = (double)quota / (double)period;
	return true;
}

static unsigned
to_cpus(double c)
{
	double r = ceil(c - 1e-9);
	if (r < 1)
		r = 1;
	if (r > 65535)
		r = 65535;
	return (unsigned)r;
}

void
ms_limits_detect(ms_limits *out, const char *cgroup_root,
                 const char *proc_self_cgroup)
{
	const char *root = cgroup_root ? cgroup_root : "/sys/fs/cgroup";
	const char *proc =
	        proc_self_cgroup ? proc_self_cgroup : "/proc/self/cgroup";
	memset(out, 0, sizeof(*out));
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGE_SIZE);
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	double machine_mem =
	        pages > 0 && psz > 0 ? (double)pages * psz : 4.0 * (1ull << 30);
	double machine_cpus = ncpu > 0 ? (double)ncpu : 1.0;
	out->detected_mem = (uint64_t)machine_mem;
	out->detected_cpus = machine_cpus;
	out->mem_source = out->cpu_source = MS_LIMIT_MACHINE;

	char path[2048], probe[4200];
	double v;
	snprintf(probe, sizeof(probe), "%s/cgroup.controllers", root);
	if (ms_fs_is_file(probe)) {
		if (!ms__cgroup_path(proc, NULL, path, sizeof(path)))
			snprintf(path, sizeof(path), "/");
		const char *rel = strcmp(path, "/") == 0 ? "" : path;
		if (walk_min(root, rel, v2_mem, &v) && v < machine_mem) {
			out->detected_mem = (uint64_t)v;
			out->mem_source = MS_LIMIT_CGROUP_V2;
		}
		if (walk_min(root, rel, v2_cpu, &v) && v < machine_cpus) {
			out->detected_cpus = v;
			out->cpu_source = MS_LIMIT_CGROUP_V2;
		}
	} else {
		char base[2100];
		snprintf(base, sizeof(base), "%s/memory", root);
		if (ms_fs_is_dir(base)) {
			if (!ms__cgroup_path(proc, "memory", path, sizeof(path)))
				snprintf(path, sizeof(path), "/");
			const char *rel = strcmp(path, "/") == 0 ? "" : path;
			if (walk_min(base, rel, v1_mem, &v) &&
			    v < machine_mem) {
				out->detected_mem = (uint64_t)v;
				out->mem_source = MS_LIMIT_CGROUP_V1;
			}
		}
		static const char *const cpudirs[] = { "cpu,cpuacct", "cpu" };
		for (size_t i = 0; i < 2; i++) {
			snprintf(base, sizeof(base), "%s/%s", root, cpudirs[i]);
			if (!ms_fs_is_dir(base))
				continue;
			if (!ms__cgroup_path(proc, "cpu", path, sizeof(path)))
				snprintf(path, sizeof(path), "/");
			const char *rel = strcmp(path, "/") == 0 ? "" : path;
			if (walk_min(base, rel, v1_cpu, &v) &&
			    v < machine_cpus) {
				out->detected_cpus = v;
				out->cpu_source = MS_LIMIT_CGROUP_V1;
			}
			break;
		}
	}
	out->mem = out->detected_mem;
	out->cpus = to_cpus(out->detected_cpus);
}

/* A non-negative decimal ("2", "1.5"), independent of the locale. */
static bool
parse_decimal(const char *s, double *out, const char **end)
{
	double v = 0, scale = 1;
	bool digits = false;
	for (; *s >= '0' && *s <= '9'; s++, digits = true)
		v = v * 10 + (*s - '0');
	if (*s == '.') {
		s++;
		for (; *s >= '0' && *s <= '9'; s++, digits = true)
			v += (*s - '0') * (scale /= 10);
	}
	*out = v;
	*end = s;
	return digits;
}

int
ms_parse_size(const char *s, uint64_t *out)
{
	if (!s || *s < '0' || *s > '9')
		return MS_ERR_INVAL;
	const char *end;
	double v;
	if (!parse_decimal(s, &v, &end))
		return MS_ERR_INVAL;
	uint64_t mul = 1;
	switch (*end) {
	case 'k':
	case 'K':
		mul = 1ull << 10;
		end++;
		break;
	case 'm':
	case 'M':
		mul = 1ull << 20;
		end++;
		break;
	case 'g':
	case 'G':
		mul = 1ull << 30;
		end++;
		break;
	case 't':
	case 'T':
		mul = 1ull << 40;
		end++;
		break;
	default:
		break;
	}
	if ((*end == 'i' || *end == 'I') && mul > 1)
		end++;
	if ((*end == 'b' || *end == 'B'))
		end++;
	if (*end != '\0' || !(v >= 0) || v * (double)mul >= 1.8e19)
		return MS_ERR_INVAL;
	*out = (uint64_t)(v * (double)mul);
	return 0;
}

int
ms_limits_apply_profile(ms_limits *l, const char *profile, ms_errbuf *eb)
{
	if (!profile || !*profile)
		return ms_fail(eb, MS_ERR_INVAL, "profile: empty");
	if (strlen(profile) >= sizeof(l->profile))
		return ms_fail(eb, MS_ERR_RANGE, "profile: too long");
	char tmp[64];
	snprintf(tmp, sizeof(tmp), "%s", profile);
	uint64_t mem = 0;
	double cpus = 0;
	bool seen_mem = false, seen_cpus = false;
	const char *mem_val = NULL, *cpus_val = NULL; /* as given, in tmp */
	/* strtok_r skips empty items: ",", "cpus=2," and "cpus=2,,mem=4g"
	 * are refused here instead of read as fewer keys. */
	size_t n = strlen(tmp);
	if (tmp[0] == ',' || tmp[n - 1] == ',' || strstr(tmp, ",,"))
		return ms_fail(eb, MS_ERR_INVAL,
		               "profile: an empty item; expected key=value "
		               "items separated by single commas, like "
		               "cpus=2,mem=4g");
	for (char *sv, *t = strtok_r(tmp, ",", &sv); t;
	     t = strtok_r(NULL, ",", &sv)) {
		char *eq = strchr(t, '=');
		if (!eq)
			return ms_fail(eb, MS_ERR_INVAL,
			               "profile: '%s': expected key=value", t);
		*eq = '\0';
		const char *val = eq + 1;
		bool *seen = strcmp(t, "mem") == 0    ? &seen_mem
		             : strcmp(t, "cpus") == 0 ? &seen_cpus
		                                      : NULL;
		const char **seen_val =
		        seen == &seen_mem ? &mem_val : &cpus_val;
		if (seen && *seen)
			return ms_fail(eb, MS_ERR_INVAL,
			               "profile: %s given twice ('%s' and "
			               "'%s'); expected each key once",
			               t, *seen_val, val);
		if (seen) {
			*seen = true;
			*seen_val = val;
		}
		if (strcmp(t, "mem") == 0) {
			if (ms_parse_size(val, &mem))
				return ms_fail(
				        eb, MS_ERR_INVAL,
				        "profile: mem '%s': expected a "
				        "size from %llum to %llut: bytes, "
				        "or a number with k, m, g or t "
				        "(powers of 1024) such as 4g or "
				        "512m",
				        val, MS_PROFILE_MEM_MIN >> 20,
				        MS_PROFILE_MEM_MAX >> 40);
			if (mem < MS_PROFILE_MEM_MIN)
				return ms_fail(eb, MS_ERR_INVAL,
				               "profile: mem '%s': expected at "
				               "least %llum (a merge's buffers "
				               "need it) and at most %llut",
				               val, MS_PROFILE_MEM_MIN >> 20,
				               MS_PROFILE_MEM_MAX >> 40);
			if (mem > MS_PROFILE_MEM_MAX)
				return ms_fail(eb, MS_ERR_INVAL,
				               "profile: mem '%s': expected at "
				               "most %llut (the most memory "
				               "Linux maps on x86-64) and at "
				               "least %llum",
				               val, MS_PROFILE_MEM_MAX >> 40,
				               MS_PROFILE_MEM_MIN >> 20);
		} else if (strcmp(t, "cpus") == 0) {
			const char *end;
			/* cpus * 100000 us is the cgroup's quota, which the
			 * kernel takes from 1000 us on ("0.01" read in
			 * binary may fall a hair short of the constant). */
			if (!parse_decimal(val, &cpus, &end) || *end ||
			    !(cpus >= MS_PROFILE_CPUS_MIN - 1e-12) ||
			    cpus > MS_PROFILE_CPUS_MAX)
				return ms_fail(
				        eb, MS_ERR_INVAL,
				        "profile: cpus '%s': expected a "
				        "number of CPUs from 0.01 to %d, "
				        "such as 2 or 0.5 (a cgroup's "
				        "CPU quota is at least 1%% of a "
				        "CPU)",
				        val, MS_PROFILE_CPUS_MAX);
		} else {
			return ms_fail(eb, MS_ERR_INVAL,
			               "profile: unknown key '%s' (expected "
			               "cpus or mem)",
			               t);
		}
	}
	snprintf(l->profile, sizeof(l->profile), "%s", profile);
	l->has_profile = true;
	l->profile_mem = mem;
	l->profile_cpus = cpus;
	l->mem = mem ? mem : l->detected_mem;
	l->cpus = to_cpus(cpus > 0 ? cpus : l->detected_cpus);
	return 0;
}

bool
ms_limits_beyond(double want_cpus, uint64_t want_mem, double have_cpus,
                 uint64_t have_mem, char *buf, size_t n)
{
	bool cpus = want_cpus > have_cpus + 1e-9;
	bool mem = want_mem > have_mem && want_mem - have_mem > (1ull << 20);
	if (n)
		buf[0] = '\0';
	if (cpus && n)
		snprintf(buf, n, "%g CPUs where there are %g", want_cpus,
		         have_cpus);
	if (mem && n) {
		size_t k = strlen(buf);
		snprintf(buf + k, n - k, "%s%.2f GiB where there are %.2f GiB",
		         cpus ? ", " : "",
		         (double)want_mem / (1024.0 * 1024 * 1024),
		         (double)have_mem / (1024.0 * 1024 * 1024));
	}
	return cpus || mem;
}
