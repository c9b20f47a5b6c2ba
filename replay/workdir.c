/*
 * workdir.c - where a run's scratch shard goes when --work-dir is not
 * given. A replay publishes thousands of parts, and on a tmpfs its writes,
 * syncs and renames cost next to nothing; but a tmpfs is memory, and a
 * small one (a container's /dev/shm is 64 MiB by default) cannot hold a
 * day. So the shard goes to the scratch root (/dev/shm/mergescope-<uid>)
 * only when it is a writable tmpfs with room for the day, estimated from
 * the fixture's manifest with a margin, each file in whole blocks of that
 * file system (a day of small parts takes more than the sum of their
 * bytes); else to the cache directory on
 * disk. A root named in MERGESCOPE_SCRATCH is the user's choice: any file
 * system will do there, if it has the room. Under a memory limit a
 * cgroup enforces (`--profile mem=...`) a tmpfs's pages count against
 * the limit, so a tmpfs must also have the day fit in the limit, with the
 * run's own memory beside it: a run that filled it would be killed by
 * the kernel part way, with nothing recorded. The choice and its reason
 * are one line the run prints.
 */
#include "replay_int.h"

#include "ms_fs.h"
#include "ms_owner.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define TMPFS_MAGIC_NR 0x01021994UL
#define MIB (1024.0 * 1024.0)

int
ms_replay_dir_probe(const char *dir)
{
	char probe[PATH_MAX];
	if (snprintf(probe, sizeof(probe), "%s/.mergescope-probe-XXXXXX",
	             dir) >= (int)sizeof(probe))
		return ENAMETOOLONG;
	if (!mkdtemp(probe))
		return errno;
	rmdir(probe);
	return 0;
}

uint64_t
ms__work_need_bytes(uint64_t fixture_bytes)
{
	/* Every scheduled part is staged before the day starts (the day
	 * once), and a merge writes its output beside its inputs; the part
	 * checker pins what a merge took until it has read it, and gives
	 * way to the day, so on a busy machine inputs merged away stay on
	 * the file system long after (a tmpfs keeps their pages): up to
	 * all the merges wrote, about 2 days at day-1x to day-5x and 2.7
	 * at day-8x, with the finalize's output beside. Peaks measured on
	 * a tmpfs (seed 1, load 4-5): 2.6 days at day-1x, 2.8 at day-3x,
	 * 3.0 at day-8x. Four times the day, plus slack for the snapshot,
	 * directories and a part in flight. */
	uint64_t slack = 64ull << 20;
	if (fixture_bytes > (UINT64_MAX - slack) / MS__WORK_DAYS)
		return UINT64_MAX;
	return MS__WORK_DAYS * fixture_bytes + slack;
}

/* May the shard go in dir: a file system we may write (a tmpfs unless
 * any_fs), with how many bytes free, in blocks of how many bytes?
 * Writable means a directory made in it, as a run's own check does
 * (ms_replay_dir_probe): access(W_OK) passes a regular file where a
 * directory was expected, and asks for the real user, not the one that
 * writes. */
static bool
fs_room(const char *dir, bool any_fs, uint64_t *avail, uint64_t *block,
        const char **why)
{
	struct statfs sf;
	struct statvfs sv;
	*avail = 0;
	*block = 0;
	if (statfs(dir, &sf) != 0 || statvfs(dir, &sv) != 0) {
		*why = "cannot be read";
		return false;
	}
	if (!any_fs &&
	    ((unsigned long)sf.f_type & 0xFFFFFFFFUL) != TMPFS_MAGIC_NR) {
		*why = "is not a tmpfs";
		return false;
	}
	if (ms_replay_dir_probe(dir) != 0) {
		*why = "is not writable";
		return false;
	}
	*avail = (uint64_t)sv.f_bavail * sv.f_frsize;
	*block = sv.f_frsize;
	return true;
}

/* The directory whose file system and room are measured: the root once
 * it exists, else its parent (/dev/shm for the default root). */
static void
probe_dir(const char *root, char *buf, size_t n)
{
	snprintf(buf, n, "%s", root);
	if (ms_fs_is_dir(root))
		return;
	char *slash = strrchr(buf, '/');
	if (slash && slash != buf)
		*slash = '\0';
	else if (slash)
		slash[1] = '\0';
}

/* Room the memory limit leaves a tmpfs shard: mem_cap less the run's
 * own reserve (UINT64_MAX without a limit). */
static uint64_t
mem_room(uint64_t mem_cap)
{
	if (!mem_cap)
		return UINT64_MAX;
	return mem_cap > MS__WORK_MEM_RESERVE ? mem_cap - MS__WORK_MEM_RESERVE
	                                      : 0;
}

/* dir/<base>.<pid>.shard, base cut short where the last name would pass
 * NAME_MAX: any name --db takes gives a shard name the directory takes. */
static void
shard_name(char *buf, size_t n, const char *dir, const char *base)
{
	char sfx[40];
	int sl = snprintf(sfx, sizeof(sfx), ".%ld.shard", (long)getpid());
	size_t keep = strlen(base);
	if (keep + (size_t)sl > NAME_MAX)
		keep = NAME_MAX - (size_t)sl;
	snprintf(buf, n, "%s/%.*s%s", dir, (int)keep, base, sfx);
}

void
ms__work_dir_choose(const char *root, bool any_fs, ms__work_need_fn need_fn,
                    const void *need_arg, uint64_t mem_cap,
                    const char *disk_dir, const char *base,
                    ms__work_choice *out)
{
	memset(out, 0, sizeof(*out));
	uint64_t avail = 0, block = 0;
	const char *why = NULL;
	char probe[PATH_MAX], fs[32] = "";
	snprintf(probe, sizeof(probe), "%s", root);
	if (any_fs && ms_fs_mkdir_p(root, 0700, NULL) != 0) {
		why = "cannot be created";
	} else {
		probe_dir(root, probe, sizeof(probe));
		ms__fs_type_name(probe, fs, sizeof(fs));
	}
	bool ok = !why && fs_room(probe, any_fs, &avail, &block, &why);
	uint64_t need = need_fn(need_arg, block);
	bool capped = ok && strcmp(fs, "tmpfs") == 0 && need > mem_room(mem_cap);
	if (ok && avail >= need && !capped) {
		if ((mkdir(root, 0700) == 0 || errno == EEXIST) &&
		    ms_replay_dir_probe(root) == 0) {
			shard_name(out->dir, sizeof(out->dir), root, base);
			out->shm = true;
			snprintf(out->why, sizeof(out->why),
			         "work dir %s (%s%s): %.0f MiB free, the day "
			         "needs about %.0f MiB",
			         out->dir, any_fs ? MS_SCRATCH_ENV ", " : "",
			         fs, (double)avail / MIB, (double)need / MIB);
			return;
		}
		ok = false;
		why = "has no directory we may write";
	}
	shard_name(out->dir, sizeof(out->dir), disk_dir, base);
	if (capped)
		snprintf(out->why, sizeof(out->why),
		         "work dir %s (disk): %s is a tmpfs, whose pages count "
		         "against the run's memory limit of %.0f MiB (its "
		         "cgroup); the day needs about %.0f MiB there and the "
		         "run %.0f MiB beside it",
		         out->dir, probe, (double)mem_cap / MIB,
		         (double)need / MIB,
		         (double)MS__WORK_MEM_RESERVE / MIB);
	else if (ok)
		snprintf(out->why, sizeof(out->why),
		         "work dir %s (disk): %s has %.0f MiB free, the day "
		         "needs about %.0f MiB",
		         out->dir, probe, (double)avail / MIB,
		         (double)need / MIB);
	else
		snprintf(out->why, sizeof(out->why),
		         "work dir %s (disk): %s %s", out->dir, probe, why);
}

int
ms__work_dir_default(ms__work_need_fn need, const void *need_arg,
                     uint64_t mem_cap, const char *disk_dir, const char *base,
                     ms__work_choice *out, ms_errbuf *eb)
{
	char root[PATH_MAX];
	bool from_env = false;
	int rc = ms_scratch_root(root, sizeof(root), &from_env, eb);
	if (rc)
		return rc;
	ms__work_dir_choose(root, from_env, need, need_arg, mem_cap, disk_dir,
	                    base, out);
	return 0;
}

int
ms__work_room_check(const char *dir, uint64_t avail, bool links,
                    uint64_t day_bytes, ms_errbuf *eb)
{
	if (links || avail >= day_bytes)
		return 0;
	return ms_fail(eb, MS_ERR_NOSPACE,
	               "shard directory %s: its file system has %.1f MiB "
	               "free and the day's parts, copied there before the day "
	               "starts, take %.1f MiB there; give a --work-dir with "
	               "room for %u times that and more (%.0f MiB, merge "
	               "outputs beside their inputs) (nothing was staged)",
	               dir, (double)avail / MIB, (double)day_bytes / MIB,
	               MS__WORK_DAYS,
	               (double)ms__work_need_bytes(day_bytes) / MIB);
}

bool
ms__work_room_note(char *buf, size_t n, const char *dir, uint64_t avail,
                   bool links, uint64_t day_bytes)
{
	uint64_t need = links ? ms__work_need_bytes(day_bytes) - day_bytes
	                      : ms__work_need_bytes(day_bytes);
	if (n)
		buf[0] = '\0';
	if (avail >= need)
		return false;
	snprintf(buf, n,
	         "shard directory %s: its file system has %.1f MiB free, "
	         "below the %.0f MiB the day may need there (merge outputs "
	         "beside their inputs): a merge that does not fit waits, "
	         "and a finalize that does not fit is skipped (its gates "
	         "then fail)",
	         dir, (double)avail / MIB, (double)need / MIB);
	return true;
}

int
ms__work_mem_check(const char *dir, bool tmpfs, uint64_t mem_cap,
                   uint64_t need, ms_errbuf *eb)
{
	if (!tmpfs || need <= mem_room(mem_cap))
		return 0;
	return ms_fail(eb, MS_ERR_NOSPACE,
	               "shard directory %s is on a tmpfs, whose pages count "
	               "against the run's memory limit of %.0f MiB (--profile, "
	               "enforced by its cgroup): the day needs about %.0f MiB "
	               "there and the run %.0f MiB beside it, so the kernel "
	               "could kill the run part way; give a --work-dir on a "
	               "disk, a larger mem or --envelope emulated (nothing "
	               "was staged)",
	               dir, (double)mem_cap / MIB, (double)need / MIB,
	               (double)MS__WORK_MEM_RESERVE / MIB);
}

/* The names a run's scratch shard puts in its directory (core/shard.c,
 * the oracle's spill file, the owner record): a directory holding any
 * other is not only a shard. */
static bool
is_shard_entry(const char *name)
{
	static const char *const names[] = { "parts", "tmp", "snapshot",
		                             "dicts", MS__ORACLE_SPILL,
		                             MS_OWNER_FILE };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i]))
			return true;
	return false;
}

/* Call fn on every entry of dir but "." and ".." (stops at the first
 * that returns non-zero, and returns it); -1 when dir cannot be read. */
static int
each_entry(const char *dir, int (*fn)(const char *dir, const char *name,
                                      ms_errbuf *eb),
           ms_errbuf *eb)
{
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	struct dirent *de;
	int rc = 0;
	while (!rc && (de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			rc = fn(dir, de->d_name, eb);
	closedir(d);
	return rc;
}

static int
not_shard(const char *dir, const char *name, ms_errbuf *eb)
{
	(void)dir;
	(void)eb;
	return !is_shard_entry(name);
}

/* Remove dir/name, the owner record excepted (removed last). */
static int
remove_entry(const char *dir, const char *name, ms_errbuf *eb)
{
	char path[MS_FS_PATH_MAX];
	if (!strcmp(name, MS_OWNER_FILE))
		return 0;
	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >=
	    (int)sizeof(path))
		return ms_fail(eb, MS_ERR_RANGE, "shard directory %s: entry "
		               "%s: path too long", dir, name);
	return ms_fs_rm_tree(path, eb);
}

int
ms__work_reclaim(const char *dir, const char *db, char *note, size_t n,
                 ms_errbuf *eb)
{
	ms_owner o;
	if (ms_owner_read(dir, &o, NULL) != 0 ||
	    strcmp(o.kind, "scratch") != 0 || ms_owner_alive(&o) ||
	    each_entry(dir, not_shard, NULL) != 0)
		return 0;
	/* This run's record first: the dead run's watcher, if it is still
	 * on its way to remove the shard, leaves it alone from then on
	 * (ms_replay_postmortem). */
	int rc = ms_owner_write(dir, "scratch", db, eb);
	if (!rc)
		rc = each_entry(dir, remove_entry, eb);
	if (rc < 0) {
		ms_errbuf why;
		snprintf(why.msg, sizeof(why.msg), "%s",
		         eb && eb->msg[0] ? eb->msg : ms_strerror(rc));
		return ms_fail(eb, rc,
		               "shard directory %s holds the scratch shard of "
		               "a run that is gone (pid %d), which could not be "
		               "removed: %s",
		               dir, (int)o.pid, why.msg);
	}
	snprintf(note, n,
	         "shard directory %s held the scratch shard of a run that is "
	         "gone (pid %d, event database %s): removed it",
	         dir, (int)o.pid, o.note[0] ? o.note : "unknown");
	return 1;
}
