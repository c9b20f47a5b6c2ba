/*
 * environ.c - what a run record says about the build and the machine (the
 * work dir's file system, the binary's checksum, the source commit, the
 * compiler, the CPU model), and the page-cache state a run starts from:
 * "warm" reads every fixture file once before the run, "cold" asks the
 * kernel to drop the fixture's cached pages (POSIX_FADV_DONTNEED, which
 * needs no privilege for clean pages), "uncontrolled" does neither.
 */
#define _GNU_SOURCE
#include "replay_int.h"

#include "ms_git_commit.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <xxhash.h>

static const struct {
	unsigned long magic;
	const char *name;
} fs_names[] = {
	{ 0x01021994UL, "tmpfs" },   { 0xEF53UL, "ext4" },
	{ 0x58465342UL, "xfs" },     { 0x9123683EUL, "btrfs" },
	{ 0x794C7630UL, "overlay" }, { 0x6969UL, "nfs" },
	{ 0x2FC12FC1UL, "zfs" },     { 0xF2F52010UL, "f2fs" },
	{ 0x65735546UL, "fuse" },    { 0x858458F6UL, "ramfs" },
};

void
ms__fs_type_name(const char *dir, char *buf, size_t n)
{
	struct statfs sf;
	if (statfs(dir, &sf) != 0) {
		snprintf(buf, n, "unknown");
		return;
	}
	unsigned long t = (unsigned long)sf.f_type & 0xFFFFFFFFUL;
	for (size_t i = 0; i < sizeof(fs_names) / sizeof(fs_names[0]); i++)
		if (fs_names[i].magic == t) {
			snprintf(buf, n, "%s", fs_names[i].name);
			return;
		}
	snprintf(buf, n, "0x%lx", t);
}

/* XXH3-128 of the file at path as 32 hex digits; "" if unreadable. */
static void
checksum_file(const char *path, char *out, size_t n)
{
	unsigned char buf[65536];
	XXH3_state_t *st = XXH3_createState();
	FILE *f = fopen(path, "rb");
	out[0] = '\0';
	if (!f || !st || XXH3_128bits_reset(st) != XXH_OK) {
		if (f)
			fclose(f);
		XXH3_freeState(st);
		return;
	}
	size_t k;
	while ((k = fread(buf, 1, sizeof(buf), f)) > 0)
		XXH3_128bits_update(st, buf, k);
	if (!ferror(f)) {
		XXH128_hash_t h = XXH3_128bits_digest(st);
		snprintf(out, n, "%016llx%016llx", (unsigned long long)h.high64,
		         (unsigned long long)h.low64);
	}
	fclose(f);
	XXH3_freeState(st);
}

static void
cpu_model(char *out, size_t n)
{
	char line[512];
	FILE *f = fopen("/proc/cpuinfo", "r");
	out[0] = '\0';
	while (f && fgets(line, sizeof(line), f)) {
		if (strncmp(line, "model name", 10) != 0)
			continue;
		const char *v = strchr(line, ':');
		if (!v)
			continue;
		v++;
		while (*v == ' ' || *v == '\t')
			v++;
		snprintf(out, n, "%.*s", (int)strcspn(v, "\n"), v);
		break;
	}
	if (f)
		fclose(f);
}

/* " MODEL" of block device dev ("MAJOR:MINOR") added to out, from sysfs
 * (its disk's for a partition), when it has one. */
static void
add_model(const char *dev, char *out, size_t n)
{
	char model[128] = "", p[128];
	snprintf(p, sizeof(p), "/sys/dev/block/%s/device/model", dev);
	FILE *m = fopen(p, "r");
	if (!m) {
		/* a partition: its disk's model */
		snprintf(p, sizeof(p), "/sys/dev/block/%s/../device/model", dev);
		m = fopen(p, "r");
	}
	if (m) {
		if (fgets(model, sizeof(model), m))
			model[strcspn(model, "\n")] = '\0';
		fclose(m);
	}
	size_t k = strlen(model);
	while (k && model[k - 1] == ' ')
		model[--k] = '\0';
	if (k) {
		size_t used = strlen(out);
		snprintf(out + used, n - used, " %s", model);
	}
}

/* dir's device by its numbers alone, "unknown (MAJOR:MINOR) MODEL", when
 * no mount names it: in a chroot the mounts outside it are not listed,
 * and a directory on the root's file system has none. "" when dir
 * cannot be looked at either. */
static void
device_by_numbers(const char *dir, char *out, size_t n)
{
	struct stat st;
	out[0] = '\0';
	if (stat(dir, &st) != 0)
		return;
	char dev[32];
	snprintf(dev, sizeof(dev), "%u:%u", major(st.st_dev), minor(st.st_dev));
	snprintf(out, n, "unknown (%s)", dev);
	add_model(dev, out, n);
}

/*
 * The device under dir, from a mountinfo file (/proc/self/mountinfo):
 * the mount whose mount point is the longest prefix of dir's real path,
 * as "SOURCE (MAJOR:MINOR)", with the block device's model from sysfs
 * when it has one ("/dev/vda1 (254:1) QEMU HARDDISK"); when no mount
 * covers it (a chroot), "unknown (MAJOR:MINOR)" from dir's own device.
 * "" if unknown.
 */
void
ms__device_name(const char *dir, const char *mountinfo, char *out, size_t n)
{
	char real[PATH_MAX];
	out[0] = '\0';
	if (!realpath(dir, real))
		return;
	FILE *f = fopen(mountinfo ? mountinfo : "/proc/self/mountinfo", "r");
	if (!f) {
		device_by_numbers(real, out, n);
		return;
	}
	char line[4096];
	size_t best = 0;
	while (fgets(line, sizeof(line), f)) {
		char mnt[PATH_MAX], dev[32], src[256], *dash;
		unsigned id, parent;
		if (sscanf(line, "%u %u %31s %*s %4095s", &id, &parent, dev,
		           mnt) != 4 ||
		    !(dash = strstr(line, " - ")) ||
		    sscanf(dash + 3, "%*s %255s", src) != 1)
			continue;
		size_t ml = strlen(mnt);
		bool under = strcmp(mnt, "/") == 0 ||
		             (strncmp(real, mnt, ml) == 0 &&
		              (real[ml] == '/' || real[ml] == '\0'));
		if (!under || ml < best)
			continue;
		best = ml;
		snprintf(out, n, "%s (%s)", src, dev);
		add_model(dev, out, n);
	}
	fclose(f);
	if (!out[0])
		device_by_numbers(real, out, n);
}

void
ms_build_describe(char *out, size_t n)
{
	snprintf(out, n,
	         "mergescope %s (commit %s, event database schema %d, part "
	         "format %d)",
	         MS_VERSION_STRING, MS_GIT_COMMIT, MS_EV_SCHEMA_VERSION,
	         MS_PART_FORMAT_VERSION);
}

void
ms__run_environment(ms_ev_run *run, const char *work_dir)
{
	ms__fs_type_name(work_dir, run->filesystem, sizeof(run->filesystem));
	ms__device_name(work_dir, NULL, run->device, sizeof(run->device));
	checksum_file("/proc/self/exe", run->binary_checksum,
	              sizeof(run->binary_checksum));
	snprintf(run->git_commit, sizeof(run->git_commit), "%s", MS_GIT_COMMIT);
#if defined(__clang__)
	snprintf(run->compiler, sizeof(run->compiler), "clang %s",
	         __clang_version__);
#elif defined(__GNUC__)
	snprintf(run->compiler, sizeof(run->compiler), "gcc %s", __VERSION__);
#else
	snprintf(run->compiler, sizeof(run->compiler), "unknown");
#endif
	cpu_model(run->cpu_model, sizeof(run->cpu_model));
}

/* Warm or cool every regular file below dir. */
static int
cache_walk(const char *dir, bool warm, ms_errbuf *eb)
{
	DIR *d = opendir(dir);
	if (!d)
		return ms_fail(eb, ms_err_from_errno(errno), "--cache: %s: %s",
		               dir, strerror(errno));
	int rc = 0;
	struct dirent *e;
	while (rc == 0 && (e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		char p[PATH_MAX];
		if ((size_t)snprintf(p, sizeof(p), "%s/%s", dir, e->d_name) >=
		    sizeof(p))
			continue;
		struct stat st;
		if (lstat(p, &st) != 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			rc = cache_walk(p, warm, eb);
			continue;
		}
		if (!S_ISREG(st.st_mode))
			continue;
		int fd = open(p, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (warm) {
			char buf[65536];
			while (read(fd, buf, sizeof(buf)) > 0)
				;
		} else {
			int a = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
			if (a != 0)
				rc = ms_fail(eb, MS_ERR_IO,
				             "--cache cold: %s: %s", p,
				             strerror(a));
		}
		close(fd);
	}
	closedir(d);
	return rc;
}

int
ms__cache_prepare(const char *fixture_dir, const char *label, ms_errbuf *eb)
{
	if (!label || strcmp(label, "uncontrolled") == 0)
		return 0;
	if (strcmp(label, "warm") == 0)
		return cache_walk(fixture_dir, true, eb);
	if (strcmp(label, "cold") == 0)
		return cache_walk(fixture_dir, false, eb);
	return ms_fail(eb, MS_ERR_INVAL,
	               "--cache \"%s\": expected warm, cold or uncontrolled",
	               label);
}
