/*
 * checkpoint.c - checkpoints of a shard and its engine, and restoring a
 * shard to one (ms_checkpoint.h; the state file is "Checkpoint" in
 * core/FORMAT.md).
 */
#define XXH_INLINE_ALL
#include "checkpoint_int.h"
#include "part_int.h"
#include "ms_fs.h"

#include <xxhash.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* DIR/parts/<16hex>.<kind>, in a shard or a checkpoint alike. */
static int
part_file(char *out, const char *dir, uint64_t id, int kind, ms_errbuf *eb)
{
	char name[64];
	snprintf(name, sizeof(name), "parts/%016llx.%s",
	         (unsigned long long)id,
	         ms_part_kind_name((enum ms_part_kind)kind));
	return ms__ck_path(out, dir, name, eb);
}

/* fsync directory dir, counted in io (may be NULL) as every sync of a
 * part or shard is (ms__fsync_dir); a failure named in eb. */
static int
sync_dir(const char *dir, ms_io *io, ms_errbuf *eb)
{
	int rc = ms__fsync_dir(dir, io);
	if (rc)
		return ms_fail(eb, rc, "%s: fsync: %s", dir, strerror(errno));
	return 0;
}

/* Write n bytes to a new file at path (ms__write_all); fsync it
 * (counted in io, may be NULL) when sync. */
static int
write_all(const char *path, const void *buf, size_t n, bool sync,
          ms_io *io, ms_errbuf *eb)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return ms_fail(eb, ms_err_from_errno(errno), "%s: %s", path,
		               strerror(errno));
	const char *what = "write";
	int rc = ms__write_all(fd, buf, n, NULL);
	if (rc == 0 && sync) {
		what = "fsync";
		rc = ms__fsync_fd(fd, io);
	}
	if (rc) {
		int e = errno;
		close(fd);
		return ms_fail(eb, rc, "%s: %s: %s", path, what, strerror(e));
	}
	if (close(fd) != 0)
		return ms_fail(eb, ms_err_from_errno(errno), "%s: close: %s",
		               path, strerror(errno));
	return 0;
}

static int
link_file(const char *from, const char *to, ms_errbuf *eb)
{
	if (link(from, to) != 0)
		return ms_fail(eb, ms_err_from_errno(errno), "link %s -> %s: %s",
		               from, to, strerror(errno));
	return 0;
}

/* The epoch, next_id and part count of a version-1 or -2 snapshot's
 * bytes (its checksum and entries are the shard's to check at open; the
 * two versions differ only in what an entry's last field means). */
static int
snap_fields(const uint8_t *p, size_t n, const char *name, uint64_t *epoch,
            uint64_t *next_id, uint64_t *nparts, ms_errbuf *eb)
{
	if (n < SNAP_HEAD || memcmp(p, "MSSHARD\n", 8) != 0 ||
	    (ms_le32(p + 8) != 1 && ms_le32(p + 8) != 2))
		return ms_fail(eb, MS_ERR_FORMAT,
		               "%s: not a version-1 or -2 shard snapshot",
		               name);
	*epoch = ms_le64(p + 16);
	*next_id = ms_le64(p + 24);
	*nparts = ms_le64(p + 32);
	if (*nparts > CK_COUNT_MAX || n != SNAP_HEAD + 16 * *nparts)
		return ms_fail(eb, MS_ERR_CORRUPT,
		               "%s: %zu bytes for %llu parts", name, n,
		               (unsigned long long)*nparts);
	return 0;
}

/* ---- taking one ------------------------------------------------------- */

/* 8 lowercase hex digits: a dictionary's file name. */
static bool
dict_name(const char *s)
{
	size_t i = 0;
	for (; s[i]; i++)
		if (i >= 8 || !((s[i] >= '0' && s[i] <= '9') ||
		                 (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return i == 8;
}

/* Open directory dir/sub (its path into path): 0 with *dh NULL when it
 * does not exist. */
static int
open_sub(char *path, const char *dir, const char *sub, DIR **dh,
         ms_errbuf *eb)
{
	*dh = NULL;
	int rc = ms__ck_path(path, dir, sub, eb);
	if (rc)
		return rc;
	*dh = opendir(path);
	if (!*dh && errno != ENOENT)
		return ms_fail(eb, ms_err_from_errno(errno), "%s: %s", path,
		               strerror(errno));
	return 0;
}

/* Link every dictionary of from/dicts missing in to/dicts. */
static int
link_dicts(const char *from, const char *to, ms_errbuf *eb)
{
	ck_path fd, td;
	DIR *d;
	int rc = ms__ck_path(td, to, "dicts", eb);
	if (rc || (rc = open_sub(fd, from, "dicts", &d, eb)) || !d)
		return rc;
	struct dirent *de;
	while (rc == 0 && (de = readdir(d)) != NULL) {
		ck_path a, b;
		if (!dict_name(de->d_name))
			continue;
		if ((rc = ms__ck_path(a, fd, de->d_name, eb)) ||
		    (rc = ms__ck_path(b, td, de->d_name, eb)))
			break;
		if (access(b, F_OK) == 0)
			continue;
		rc = link_file(a, b, eb);
	}
	closedir(d);
	return rc;
}

/* The shard's part-ID counter into snapshot bytes snap (n of them,
 * checked by snap_fields): its next_id field, resealed. */
static void
snap_set_next_id(uint8_t *snap, size_t n, uint64_t next_id)
{
	ms_put_le64(snap + 24, next_id);
	ms_put_le64(snap + n - 8, XXH64(snap, n - 8, 0));
}

/* Links of every active part of view v into CK/parts; the snapshot's
 * bytes checked against v (design 1), with the shard's part-ID counter
 * `counter` as next_id (design 5), into CK/snapshot. */
static int
take_files(const char *dir, ms_shard *s, const ms_view *v, uint64_t counter,
           ms_checkpoint *c, ms_errbuf *eb)
{
	ck_path a, b;
	int rc = 0;
	for (size_t i = 0; i < c->nparts && rc == 0; i++)
		for (int k = 0; k < MS_KIND_COUNT && rc == 0; k++) {
			if (ms_shard_part_path(s, (enum ms_part_kind)k,
			                       c->parts[i], a, sizeof(a)))
				return ms_fail(eb, MS_ERR_RANGE,
				               "part %016llx: path too long",
				               (unsigned long long)c->parts[i]);
			if ((rc = part_file(b, dir, c->parts[i], k, eb)) == 0)
				rc = link_file(a, b, eb);
		}
	if (rc || (rc = link_dicts(ms_shard_get_dir(s), dir, eb)))
		return rc;
	uint8_t *snap;
	size_t n;
	uint64_t np;
	if ((rc = ms__ck_path(a, ms_shard_get_dir(s), "snapshot", eb)) ||
	    (rc = ms__ck_read_all(a, SNAP_MAX, &snap, &n, eb)))
		return rc;
	rc = snap_fields(snap, n, a, &c->epoch, &c->next_id, &np, eb);
	if (rc == 0 && (c->epoch != ms_view_epoch(v) || np != c->nparts))
		rc = ms_fail(eb, MS_ERR_STATE,
		             "%s: epoch %llu with %llu parts, the shard is at "
		             "epoch %llu with %zu: it changed while the "
		             "checkpoint was taken",
		             a, (unsigned long long)c->epoch,
		             (unsigned long long)np,
		             (unsigned long long)ms_view_epoch(v), c->nparts);
	/* Never below the snapshot's: the counter only grows. */
	if (rc == 0 && counter > c->next_id) {
		snap_set_next_id(snap, n, counter);
		c->next_id = counter;
	}
	if (rc == 0 && (rc = ms__ck_path(b, dir, "snapshot", eb)) == 0)
		rc = write_all(b, snap, n, false, NULL, eb);
	free(snap);
	return rc;
}

static int
make_dirs(const char *dir, ms_errbuf *eb)
{
	ck_path p;
	if (mkdir(dir, 0755) != 0)
		return ms_fail(eb,
		               errno == EEXIST ? MS_ERR_EXISTS
		                               : ms_err_from_errno(errno),
		               "checkpoint %s: %s", dir, strerror(errno));
	int rc = ms__ck_path(p, dir, "parts", eb);
	if (rc == 0 && mkdir(p, 0755) != 0)
		rc = ms_fail(eb, ms_err_from_errno(errno), "%s: %s", p,
		             strerror(errno));
	if (rc == 0 && (rc = ms__ck_path(p, dir, "dicts", eb)) == 0 &&
	    mkdir(p, 0755) != 0)
		rc = ms_fail(eb, ms_err_from_errno(errno), "%s: %s", p,
		             strerror(errno));
	return rc;
}

static int
write_state(const char *dir, const ms_checkpoint *c, ms_errbuf *eb)
{
	ck_path p;
	ms_buf b;
	ms_buf_init(&b, NULL, 0);
	int rc = ms__ck_path(p, dir, "state", eb);
	if (rc == 0 && (rc = ms__ck_encode(c, &b)) != 0)
		rc = ms_fail(eb, rc, "%s: encoding: %s", p, ms_strerror(rc));
	if (rc == 0)
		rc = write_all(p, b.data, b.len, false, NULL, eb);
	ms_buf_release(&b);
	return rc;
}

int
ms_checkpoint_take(const char *dir, ms_shard *s, ms_engine *e,
                   const void *user, size_t user_len, ms_errbuf *eb)
{
	if (user_len > MS_CHECKPOINT_USER_MAX)
		return ms_fail(eb, MS_ERR_RANGE,
		               "checkpoint %s: %zu bytes of caller state, at "
		               "most %u",
		               dir, user_len, MS_CHECKPOINT_USER_MAX);
	ms_checkpoint c;
	memset(&c, 0, sizeof(c));
	int rc = ms_engine_save(e, &c.engine, eb);
	if (rc)
		return rc;
	/* The snapshot on disk is copied below: with group commit
	 * (defer_sync) it is made current first. */
	ms_view *v = NULL;
	if ((rc = ms_shard_sync(s, eb)) != 0 ||
	    (rc = ms_shard_view(s, &v, eb)) != 0) {
		ms_engine_state_release(&c.engine);
		return rc;
	}
	c.nparts = ms_view_count(v);
	c.parts = malloc((c.nparts ? c.nparts : 1) * sizeof(uint64_t));
	if (!c.parts)
		rc = ms_fail(
		        eb, MS_ERR_NOMEM,
		        "checkpoint %s: out of memory for its %zu part IDs",
		        dir, c.nparts);
	for (size_t i = 0; rc == 0 && i < c.nparts; i++)
		c.parts[i] = ms_view_id(v, i);
	c.user = (void *)user;
	c.user_len = user_len;
	bool made = false;
	if (rc == 0 && (rc = make_dirs(dir, eb)) == 0)
		made = true;
	if (rc == 0)
		rc = take_files(dir, s, v, ms_shard_next_id(s), &c, eb);
	if (rc == 0)
		rc = write_state(dir, &c, eb);
	if (rc == 0 && ms_shard_epoch(s) != ms_view_epoch(v))
		rc = ms_fail(eb, MS_ERR_STATE,
		             "checkpoint %s: the shard moved from epoch %llu "
		             "to %llu while it was taken",
		             dir, (unsigned long long)ms_view_epoch(v),
		             (unsigned long long)ms_shard_epoch(s));
	if (rc && made)
		ms_fs_rm_tree(dir, NULL);
	ms_view_release(v);
	c.user = NULL;
	ms_checkpoint_release(&c);
	return rc;
}

/* ---- restoring -------------------------------------------------------- */

static int
cmp_id(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

static bool
listed(const ms_checkpoint *c, uint64_t id)
{
	return c->nparts &&
	       bsearch(&id, c->parts, c->nparts, sizeof(id), cmp_id) != NULL;
}

/* Every file the checkpoint lists is there (design 2: before anything in
 * the shard changes). */
static int
check_files(const char *dir, const ms_checkpoint *c, ms_errbuf *eb)
{
	ck_path p;
	struct stat st;
	for (size_t i = 0; i < c->nparts; i++)
		for (int k = 0; k < MS_KIND_COUNT; k++) {
			int rc = part_file(p, dir, c->parts[i], k, eb);
			if (rc)
				return rc;
			errno = 0;
			if (stat(p, &st) != 0 || !S_ISREG(st.st_mode))
				return ms_fail(eb, MS_ERR_NOTFOUND,
				               "checkpoint %s: part %016llx: "
				               "%s: %s",
				               dir,
				               (unsigned long long)c->parts[i],
				               p,
				               errno ? strerror(errno)
				                     : "not a file");
		}
	return 0;
}

int
ms_checkpoint_check(const char *dir, ms_errbuf *eb)
{
	ms_checkpoint c;
	int rc = ms_checkpoint_read(dir, &c, eb);
	if (rc == 0) {
		rc = check_files(dir, &c, eb);
		ms_checkpoint_release(&c);
	}
	return rc;
}

/* Link the checkpoint's part files into the shard where the shard does
 * not hold that very file (same inode). */
static int
link_back(const char *dir, const char *shard, const ms_checkpoint *c,
          ms_errbuf *eb)
{
	ck_path a, b;
	struct stat sa, sb;
	for (size_t i = 0; i < c->nparts; i++)
		for (int k = 0; k < MS_KIND_COUNT; k++) {
			int rc = part_file(a, dir, c->parts[i], k, eb);
			if (rc || (rc = part_file(b, shard, c->parts[i], k, eb)))
				return rc;
			if (stat(a, &sa) != 0)
				return ms_fail(eb, ms_err_from_errno(errno),
				               "%s: %s", a, strerror(errno));
			if (lstat(b, &sb) == 0) {
				if (sb.st_dev == sa.st_dev &&
				    sb.st_ino == sa.st_ino)
					continue;
				if (unlink(b) != 0)
					return ms_fail(
					        eb, ms_err_from_errno(errno),
					        "%s: %s", b, strerror(errno));
			}
			if ((rc = link_file(a, b, eb)) != 0)
				return rc;
		}
	return 0;
}

/* The commit (design 2): the checkpoint's snapshot over the shard's; its
 * two fsyncs counted in io (may be NULL). */
static int
commit_snapshot(const char *dir, const char *shard, const ms_checkpoint *c,
                ms_io *io, ms_errbuf *eb)
{
	ck_path a, tmp, snap;
	uint8_t *buf;
	size_t n;
	uint64_t epoch, next_id, np;
	int rc = ms__ck_path(a, dir, "snapshot", eb);
	if (rc || (rc = ms__ck_read_all(a, SNAP_MAX, &buf, &n, eb)))
		return rc;
	rc = snap_fields(buf, n, a, &epoch, &next_id, &np, eb);
	if (rc == 0 && (epoch != c->epoch || next_id != c->next_id ||
	                np != c->nparts))
		rc = ms_fail(eb, MS_ERR_CORRUPT,
		             "%s: epoch %llu, next ID %llu, %llu parts; the "
		             "state says %llu, %llu, %zu",
		             a, (unsigned long long)epoch,
		             (unsigned long long)next_id,
		             (unsigned long long)np,
		             (unsigned long long)c->epoch,
		             (unsigned long long)c->next_id, c->nparts);
	if (rc == 0 && (rc = ms__ck_path(tmp, shard, "tmp/snapshot.new", eb)) == 0)
		rc = ms__ck_path(snap, shard, "snapshot", eb);
	if (rc == 0)
		rc = write_all(tmp, buf, n, true, io, eb);
	free(buf);
	if (rc)
		return rc;
	if (rename(tmp, snap) != 0)
		return ms_fail(eb, ms_err_from_errno(errno), "rename %s -> %s: %s",
		               tmp, snap, strerror(errno));
	return sync_dir(shard, io, eb);
}

/* An entry of the shard that the tidying could not remove (eb says
 * which and why): counted in c, the first one's message kept. */
static void
note_leftover(ms_checkpoint *c, const ms_errbuf *eb)
{
	if (c->leftovers++ == 0)
		c->leftover = *eb;
}

/* In directory sub of the shard, remove each entry `drop` says to; one
 * that cannot be removed (or sub, when it cannot be listed) is noted in
 * c and the others are still removed. */
static void
prune(const char *shard, const char *sub, const char *ckdir,
      bool (*drop)(const char *name, const char *ckdir,
                   const ms_checkpoint *c),
      ms_checkpoint *c)
{
	ck_path d;
	DIR *dh;
	ms_errbuf eb;
	if (open_sub(d, shard, sub, &dh, &eb) != 0) {
		note_leftover(c, &eb);
		return;
	}
	if (!dh)
		return;
	struct dirent *de;
	while ((de = readdir(dh)) != NULL) {
		ck_path p;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    !drop(de->d_name, ckdir, c))
			continue;
		if (ms__ck_path(p, d, de->d_name, &eb) != 0 ||
		    ms_fs_rm_tree(p, &eb) != 0)
			note_leftover(c, &eb);
	}
	closedir(dh);
}

static bool
drop_part(const char *name, const char *ckdir, const ms_checkpoint *c)
{
	(void)ckdir;
	uint64_t id;
	return ms__part_file_id(name, &id) && !listed(c, id);
}

static bool
drop_any(const char *name, const char *ckdir, const ms_checkpoint *c)
{
	(void)name, (void)ckdir, (void)c;
	return true;
}

static bool
drop_dict(const char *name, const char *ckdir, const ms_checkpoint *c)
{
	(void)c;
	char rel[32];
	ck_path p;
	snprintf(rel, sizeof(rel), "dicts/%.8s", name);
	return dict_name(name) && ms__ck_path(p, ckdir, rel, NULL) == 0 &&
	       access(p, F_OK) != 0;
}

int
ms_checkpoint_restore(const char *dir, const char *shard_dir,
                      ms_checkpoint *out, ms_io *io, ms_errbuf *eb)
{
	ck_path p;
	int rc = ms_checkpoint_read(dir, out, eb);
	if (rc)
		return rc;
	if ((rc = ms__ck_path(p, shard_dir, "snapshot", eb)) == 0 &&
	    !ms_fs_is_file(p))
		rc = ms_fail(eb, MS_ERR_NOTFOUND, "shard %s: no snapshot %s",
		             shard_dir, p);
	if (rc == 0)
		rc = check_files(dir, out, eb);
	if (rc == 0)
		rc = link_back(dir, shard_dir, out, eb);
	if (rc == 0)
		rc = link_dicts(dir, shard_dir, eb);
	if (rc == 0 && (rc = ms__ck_path(p, shard_dir, "parts", eb)) == 0)
		rc = sync_dir(p, io, eb);
	if (rc == 0 && (rc = ms__ck_path(p, shard_dir, "dicts", eb)) == 0 &&
	    ms_fs_is_dir(p))
		rc = sync_dir(p, io, eb);
	if (rc == 0)
		rc = commit_snapshot(dir, shard_dir, out, io, eb);
	if (rc) {
		ms_checkpoint_release(out);
		return rc;
	}
	/* Committed: the shard is the checkpoint's and what follows only
	 * tidies (design 3); what it leaves is the caller's to say. */
	prune(shard_dir, "parts", dir, drop_part, out);
	prune(shard_dir, "tmp", dir, drop_any, out);
	prune(shard_dir, "dicts", dir, drop_dict, out);
	return 0;
}

int
ms_checkpoint_remove(const char *dir, ms_errbuf *eb)
{
	return ms_fs_rm_tree(dir, eb);
}
