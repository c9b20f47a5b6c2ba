/*
 * workdir.c - where a run's scratch shard goes when --work-dir is not
 * given. A replay publishes thousands of parts, and on a tmpfs its writes,
 * syncs and renames cost next to nothing; but a tmpfs is memory, and a
 * small one (a container's /dev/shm is 64 MiB by default) cannot hold a
 * day. So the shard goes to /dev/shm only when it is a writable tmpfs with
 * room for the day, estimated from the fixture's manifest with a margin;
 * else to the cache directory on disk. The choice and its reason are one
 * line the run prints.
 */
#include "replay_int.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define TMPFS_MAGIC_NR 0x01021994UL
#define MIB (1024.0 * 1024.0)

uint64_t
ms__work_need_bytes(uint64_t fixture_bytes)
{
	/* Every scheduled part is staged before the day starts, and a merge
	 * writes its output beside its inputs: twice the day, plus slack
	 * for the snapshot, directories and a part in flight. */
	uint64_t slack = 64ull << 20;
	if (fixture_bytes > (UINT64_MAX - slack) / 2)
		return UINT64_MAX;
	return 2 * fixture_bytes + slack;
}

/* Is dir a tmpfs we may write, and how many bytes are free on it? */
static bool
tmpfs_room(const char *dir, uint64_t *avail, const char **why)
{
	struct statfs sf;
	struct statvfs sv;
	*avail = 0;
	if (statfs(dir, &sf) != 0 || statvfs(dir, &sv) != 0) {
		*why = "cannot be read";
		return false;
	}
	if (((unsigned long)sf.f_type & 0xFFFFFFFFUL) != TMPFS_MAGIC_NR) {
		*why = "is not a tmpfs";
		return false;
	}
	if (access(dir, W_OK) != 0) {
		*why = "is not writable";
		return false;
	}
	*avail = (uint64_t)sv.f_bavail * sv.f_frsize;
	return true;
}

void
ms__work_dir_choose(const char *shm, uint64_t need, const char *disk_dir,
                    const char *base, ms__work_choice *out)
{
	memset(out, 0, sizeof(*out));
	uint64_t avail = 0;
	const char *why = NULL;
	bool tmpfs = tmpfs_room(shm, &avail, &why);
	if (tmpfs && avail >= need) {
		char dir[PATH_MAX];
		snprintf(dir, sizeof(dir), "%s/mergescope-%u", shm,
		         (unsigned)getuid());
		if ((mkdir(dir, 0700) == 0 || errno == EEXIST) &&
		    access(dir, W_OK) == 0) {
			snprintf(out->dir, sizeof(out->dir), "%s/%s.%ld.shard",
			         dir, base, (long)getpid());
			out->shm = true;
			snprintf(out->why, sizeof(out->why),
			         "work dir %s (tmpfs): %.0f MiB free, the day "
			         "needs about %.0f MiB",
			         out->dir, (double)avail / MIB,
			         (double)need / MIB);
			return;
		}
		tmpfs = false;
		why = "has no directory we may write";
	}
	snprintf(out->dir, sizeof(out->dir), "%s/%s.%ld.shard", disk_dir, base,
	         (long)getpid());
	if (tmpfs)
		snprintf(out->why, sizeof(out->why),
		         "work dir %s (disk): %s has %.0f MiB free, the day "
		         "needs about %.0f MiB",
		         out->dir, shm, (double)avail / MIB,
		         (double)need / MIB);
	else
		snprintf(out->why, sizeof(out->why),
		         "work dir %s (disk): %s %s", out->dir, shm, why);
}
