/*
 * scratch.c - what mergescope leaves on disk, found and removed: scratch
 * shards of runs, temporary directories of fixture builds and freezes,
 * frozen shards, run databases. Used by `mergescope clean` and, for the
 * leftovers of dead processes, at the start of every run.
 *
 * Where it looks: the scratch root (ms_scratch_root: the directory
 * MERGESCOPE_SCRATCH names, else /dev/shm/mergescope-<uid>; scratch shards,
 * frozen shards beside them), $XDG_CACHE_HOME/mergescope/runs/ (default
 * databases), $XDG_CACHE_HOME/mergescope/work/ (scratch shards when the
 * scratch root has no room) and $XDG_CACHE_HOME/mergescope/ (fixture
 * builds). Nowhere else: instances given different scratch roots (and
 * caches) never touch each other's leftovers. Directories given with
 * --work-dir or --db elsewhere are the user's to remove; but a fixture
 * build's staging directory beside its --out is removed by the next build
 * of that --out (ms__scratch_sweep_beside).
 *
 * What is what: a directory's owner record (core/include/ms_owner.h) says its
 * kind and whose it is. scratch, frozen-tmp and fixture-tmp directories
 * whose owner is gone are leftovers (a scratch one is a run's shard, its
 * checkpoints `*.ckpt` or a merge-once's copies); frozen ones are frozen
 * shards (also a `*.frozen-N` directory without a record, made before
 * records existed); `*.sqlite` files under runs/ are run databases, and a
 * run's owner record left under its temporary name (`DB-owner.tmp-PID`,
 * by a run killed before the rename) is a leftover once PID is gone, and
 * so is the empty `oracle.table-PID-XXXXXX` in the cache root that a run
 * killed while it spilled its verdict oracle's table left. Anything
 * whose owner still runs is never removed, nor what a live process uses:
 * a database its run records to (named by the run's scratch shard record,
 * or by the record beside the database, DB-owner, which the process that
 * writes it keeps while it runs, wherever its shard is), a frozen shard a
 * merge-once replays (named by the record of its copies). Everything else
 * there (a file of the user's, a directory without a record, one whose
 * record is cut short or unreadable: whose it is cannot be told) is listed
 * as MS__IT_OTHER and never touched; the cache root's own entries
 * (fixtures, their locks, runs/, work/, tui/, bench/) are passed over.
 *
 * Sizes are disk space as du counts it: each inode once in an item, and
 * once over the whole walk (checkpoints hard-link the shard's parts).
 */
#include "cli.h"

#include "ms_fixture.h"
#include "ms_owner.h"
#include "ms_replay.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Inodes already counted: files with more than one link (a checkpoint's
 * hard links of the shard's parts, parts linked from the fixture) are
 * counted once, as du counts them. Open addressing, grown at half full. */
typedef struct ino_set {
	struct ino_key {
		dev_t dev;
		ino_t ino;
	} *k;
	size_t n, cap;
} ino_set;

/* Add (dev, ino); true when it was not there yet (or memory ran out:
 * then it is counted again rather than not at all). */
static bool
ino_add(ino_set *s, dev_t dev, ino_t ino)
{
	if (2 * (s->n + 1) > s->cap) {
		size_t nc = s->cap ? 2 * s->cap : 64;
		struct ino_key *k = calloc(nc, sizeof(*k));
		if (!k)
			return true;
		for (size_t i = 0; i < s->cap; i++)
			if (s->k[i].ino) {
				size_t h = (size_t)(s->k[i].ino * 0x9e3779b97f4a7c15ull ^
				                    s->k[i].dev) & (nc - 1);
				while (k[h].ino)
					h = (h + 1) & (nc - 1);
				k[h] = s->k[i];
			}
		free(s->k);
		s->k = k;
		s->cap = nc;
	}
	size_t h = (size_t)(ino * 0x9e3779b97f4a7c15ull ^ dev) & (s->cap - 1);
	for (; s->k[h].ino; h = (h + 1) & (s->cap - 1))
		if (s->k[h].ino == ino && s->k[h].dev == dev)
			return false;
	s->k[h].dev = dev;
	s->k[h].ino = ino ? ino : 1;
	s->n++;
	return true;
}

static void
ino_clear(ino_set *s)
{
	free(s->k);
	memset(s, 0, sizeof(*s));
}

/* Disk space of a tree (allocated blocks, not following links) into
 * *bytes, each inode once (`du -s path`); what no earlier item counted
 * (all: every item's inodes so far) also into *fresh. */
static void
tree_bytes(const char *path, int depth, ino_set *mine, ino_set *all,
           uint64_t *bytes, uint64_t *fresh)
{
	struct stat st;
	if (lstat(path, &st) != 0)
		return;
	uint64_t n = (uint64_t)st.st_blocks * 512u;
	bool dir = S_ISDIR(st.st_mode);
	if (dir || st.st_nlink <= 1 || ino_add(mine, st.st_dev, st.st_ino)) {
		*bytes += n;
		if (dir || st.st_nlink <= 1 || ino_add(all, st.st_dev, st.st_ino))
			*fresh += n;
	}
	if (!dir || depth > MS_FS_MAX_DEPTH)
		return;
	DIR *d = opendir(path);
	if (!d)
		return;
	struct dirent *de;
	char sub[PATH_MAX];
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", path,
		                     de->d_name) < sizeof(sub))
			tree_bytes(sub, depth + 1, mine, all, bytes, fresh);
	}
	closedir(d);
}

/* Does name end in `tag` followed by one or more digits? */
static bool
ends_tag_digits(const char *name, const char *tag)
{
	const char *p = strstr(name, tag);
	if (!p)
		return false;
	for (const char *q; (q = strstr(p + 1, tag));)
		p = q;
	p += strlen(tag);
	if (!*p)
		return false;
	for (; *p; p++)
		if (*p < '0' || *p > '9')
			return false;
	return true;
}

static bool
ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);
	return a >= b && strcmp(s + a - b, suffix) == 0;
}

#define NPLACES 4

/* The places, in order, into out; *np of them filled; the cache root
 * itself into cache (empty when there is none). */
static int
places(char out[NPLACES][PATH_MAX], size_t *np, char *cache, ms_errbuf *eb)
{
	size_t n = 0;
	cache[0] = '\0';
	int rc = ms_scratch_root(out[n++], PATH_MAX, NULL, eb);
	if (rc)
		return rc;
	char root[PATH_MAX];
	static const char *const sub[] = { "/runs", "/work", "" };
	if (ms__cache_root(root, sizeof(root)) == 0) {
		snprintf(cache, PATH_MAX, "%s", root);
		for (size_t i = 0; i < sizeof(sub) / sizeof(sub[0]); i++)
			if ((size_t)snprintf(out[n], PATH_MAX, "%s%s", root,
			                     sub[i]) < PATH_MAX &&
			    strcmp(out[n], out[0]) != 0) /* walked once */
				n++;
	}
	*np = n;
	return 0;
}

/* What live processes use without owning it: the databases live runs
 * write to (named by their scratch shards' records) and the frozen
 * shards live merge-once commands read (named by the records of their
 * copies), each by its real path. */
typedef struct live_set {
	char (*path)[PATH_MAX];
	size_t n, cap;
} live_set;

static void
live_add(live_set *l, const char *path)
{
	char real[PATH_MAX];
	if (!path[0])
		return;
	if (!realpath(path, real))
		snprintf(real, sizeof(real), "%s", path);
	if (l->n == l->cap) {
		size_t nc = l->cap ? l->cap * 2 : 8;
		void *p = realloc(l->path, nc * sizeof(*l->path));
		if (!p)
			return;
		l->path = p;
		l->cap = nc;
	}
	snprintf(l->path[l->n++], PATH_MAX, "%s", real);
}

static bool
live_has(const live_set *l, const char *path)
{
	char real[PATH_MAX];
	if (!realpath(path, real))
		snprintf(real, sizeof(real), "%s", path);
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->path[i], real))
			return true;
	return false;
}

/* The record merge-once puts on its copies names the frozen shard it
 * reads after this (cmd_merge_once.c). */
#define MERGE_ONCE_NOTE "merge-once --frozen "

/* Known entries of the cache root that are not for `clean`: fixtures
 * (a directory with a manifest), their build locks, and the folders
 * walked on their own or kept by other commands. */
static bool
cache_own(const char *path, const char *name, const struct stat *st)
{
	static const char *const dirs[] = { "runs", "work", "tui", "bench" };
	if (S_ISREG(st->st_mode))
		return ends_with(name, ".lock");
	if (!S_ISDIR(st->st_mode))
		return false;
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		if (!strcmp(name, dirs[i]))
			return true;
	char m[PATH_MAX + 32];
	struct stat ms;
	snprintf(m, sizeof(m), "%s/manifest.sqlite", path);
	return stat(m, &ms) == 0;
}

/* A sidecar SQLite (or a run) keeps beside DB: the suffix, else NULL. */
static const char *
db_side(const char *name)
{
	static const char *const side[] = { "-wal", "-shm", "-journal",
		                            MS__DB_OWNER_SUFFIX };
	for (size_t i = 0; i < sizeof(side) / sizeof(side[0]); i++)
		if (ends_with(name, side[i]))
			return side[i];
	return NULL;
}

int
ms__db_owner_path(char *out, size_t n, const char *db)
{
	int rc = ms_fs_name_beside(out, n, db, MS__DB_OWNER_SUFFIX);
	if (rc)
		out[0] = '\0';
	return rc;
}

/* Whether path, a *.sqlite file in the cache's runs/ of size bytes, is
 * a database a run wrote: it has a run's owner record beside it (a run
 * live or killed), it is empty (a run killed before its schema: nothing
 * to lose), or it is an SQLite file whose header's user_version (big-
 * endian at byte 60) is set, as the recorder sets it to its schema
 * version. Anything else there, a user's own database or any other
 * file, is not mergescope's and is left alone. */
static bool
run_db(const char *path, off_t size)
{
	char own[PATH_MAX];
	struct stat st;
	if (size == 0 || (ms__db_owner_path(own, sizeof(own), path) == 0 &&
	                  lstat(own, &st) == 0 && S_ISREG(st.st_mode)))
		return true;
	uint8_t h[100];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = pread(fd, h, sizeof(h), 0);
	close(fd);
	return n == (ssize_t)sizeof(h) &&
	       memcmp(h, "SQLite format 3", 16) == 0 &&
	       (h[60] | h[61] | h[62] | h[63]) != 0;
}

/* The file beside run database db that side (db_side) names into out (n
 * bytes): SQLite's "<db><side>", or the run's owner record where
 * ms__db_owner_path puts it; "" if it does not fit. */
static void
side_path(char *out, size_t n, const char *db, const char *side)
{
	if (strcmp(side, MS__DB_OWNER_SUFFIX) == 0)
		(void)ms__db_owner_path(out, n, db);
	else if ((size_t)snprintf(out, n, "%s%s", db, side) >= n)
		out[0] = '\0';
}

/* The run database of the owner record at path, whose name ends in
 * path + stem (MS__DB_OWNER_SUFFIX, with ".tmp-PID" before its rename),
 * into db (n bytes): path up to there, or, where the database's name was
 * cut short for the record's (ms_owner_write_beside), the database the
 * record's note names in the same directory. */
static void
db_of_record(char *db, size_t n, const char *path, size_t stem)
{
	snprintf(db, n, "%.*s", (int)stem, path);
	ms_owner o;
	const char *slash = strrchr(path, '/');
	if (!slash || ms_owner_read_file(path, &o, NULL) != 0 ||
	    strcmp(o.kind, "database") != 0 || !o.note[0])
		return;
	const char *name = strrchr(o.note, '/');
	name = name ? name + 1 : o.note;
	char cand[PATH_MAX], rec[PATH_MAX + 32];
	if ((size_t)snprintf(cand, sizeof(cand), "%.*s/%s", (int)(slash - path),
	                     path, name) < sizeof(cand) &&
	    ms_fs_name_beside(rec, sizeof(rec), cand, path + stem) == 0 &&
	    strcmp(rec, path) == 0)
		snprintf(db, n, "%s", cand);
}

/* Is the run database db in use: written by a live run's scratch shard's
 * run, or by a live process still writing its record (both in the live
 * set), or its own record (DB-owner) names a live process? */
static bool
db_in_use(const char *db, const live_set *live, pid_t *pid)
{
	if (live_has(live, db))
		return true;
	char rec[PATH_MAX + 16];
	ms_owner o;
	if (ms__db_owner_path(rec, sizeof(rec), db) == 0 &&
	    ms_owner_read_file(rec, &o, NULL) == 0 && ms_owner_alive(&o)) {
		*pid = o.pid;
		return true;
	}
	return false;
}

#define TMP_TAG MS__DB_OWNER_SUFFIX ".tmp-"

bool
ms__scratch_owner_tmp(const char *name, pid_t *pid)
{
	static const char tag[] = TMP_TAG;
	if (!ends_tag_digits(name, tag))
		return false;
	const char *digits = strstr(name, tag);
	for (const char *q; (q = strstr(digits + 1, tag));)
		digits = q;
	errno = 0;
	char *end = NULL;
	long v = strtol(digits + strlen(tag), &end, 10);
	if (errno || *end || v <= 0 || v != (long)(pid_t)v)
		return false;
	*pid = (pid_t)v;
	return true;
}

bool
ms__scratch_frozen_name(const char *name)
{
	return ends_tag_digits(name, ".frozen-");
}

/* Is the process that wrote the temporary owner record at path, whose
 * name says pid, still running? By the record when it is whole and names
 * that pid (its start time tells a reused pid apart), else by the pid
 * alone. */
static bool
db_owner_tmp_alive(const char *path, pid_t pid)
{
	ms_owner o;
	if (ms_owner_read_file(path, &o, NULL) != 0 || o.pid != pid) {
		memset(&o, 0, sizeof(o));
		o.pid = pid;
	}
	return ms_owner_alive(&o);
}

/* Is name what the verdict oracle leaves in the cache root when killed
 * between making its table's file and removing the name
 * (MS_REPLAY_ORACLE_TMP: "oracle.table-PID-XXXXXX", or without "PID-"
 * from a build before the name held it; *pid 0 then)? mkstemp's six
 * characters are letters and digits. */
static bool
oracle_tmp_name(const char *name, pid_t *pid)
{
	static const char pre[] = MS_REPLAY_ORACLE_TMP;
	if (strncmp(name, pre, sizeof(pre) - 1) != 0)
		return false;
	const char *p = name + sizeof(pre) - 1, *dash = strchr(p, '-');
	*pid = 0;
	if (dash) {
		char *end = NULL;
		errno = 0;
		long v = strtol(p, &end, 10);
		if (errno || end != dash || p[0] < '1' || p[0] > '9' ||
		    v != (long)(pid_t)v)
			return false;
		*pid = (pid_t)v;
		p = dash + 1;
	}
	if (strlen(p) != 6)
		return false;
	for (; *p; p++)
		if (!((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
		      (*p >= 'A' && *p <= 'Z')))
			return false;
	return true;
}

/* An oracle table's file left under its name (oracle_tmp_name) in the
 * cache root: a leftover once its process is gone. The process writes
 * the file only after removing the name, so one that holds bytes is not
 * such a file: false then, and it stays not recognised. One without a
 * process ID in its name is a leftover at once: a run removes the name
 * the moment the file is open and uses only the open file, so removing
 * it under a run that has not yet costs that run nothing. */
static bool
oracle_leftover(const char *name, const struct stat *st, ms__scratch_item *it)
{
	pid_t pid;
	if (!S_ISREG(st->st_mode) || st->st_size != 0 ||
	    !oracle_tmp_name(name, &pid))
		return false;
	it->kind = MS__IT_LEFTOVER;
	snprintf(it->what, sizeof(it->what), "oracle table file");
	it->why[0] = '\0';
	it->pid = pid;
	if (pid) {
		ms_owner o;
		memset(&o, 0, sizeof(o));
		o.pid = pid;
		it->in_use = ms_owner_alive(&o);
	}
	return true;
}

/* What an entry is until a test below tells it: none of mergescope's
 * things. */
static void
not_recognised(ms__scratch_item *it, const struct stat *st)
{
	it->kind = MS__IT_OTHER;
	snprintf(it->what, sizeof(it->what), "not recognised");
	snprintf(it->why, sizeof(it->why), "%s",
	         S_ISDIR(st->st_mode) ? "a directory without an owner record"
	                              : "not a file mergescope makes here");
}

/* Classify one directory entry of dir (cache_top: the cache root);
 * false when it is to be passed over (the cache's own folders). An entry
 * that is none of mergescope's things is MS__IT_OTHER, with why. */
static bool
classify(const char *dir, const char *name, bool cache_top,
         const live_set *live, ms__scratch_item *it)
{
	char path[PATH_MAX];
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >=
	    sizeof(path))
		return false;
	struct stat st;
	if (lstat(path, &st) != 0)
		return false;
	if (cache_top && cache_own(path, name, &st))
		return false;
	memset(it, 0, sizeof(*it));
	snprintf(it->path, sizeof(it->path), "%s", path);
	time_t now = time(NULL);
	time_t newest = st.st_mtime;
	not_recognised(it, &st);
	bool runs = ends_with(dir, "/runs");
	if (cache_top && oracle_leftover(name, &st, it)) {
		/* kind, pid and use set */
	} else if (S_ISREG(st.st_mode) && runs && ends_with(name, ".sqlite") &&
	           !run_db(path, st.st_size)) {
		snprintf(it->why, sizeof(it->why),
		         "a file named like a run database that no run wrote "
		         "(no owner record, no schema version)");
	} else if (S_ISREG(st.st_mode) && runs && ends_with(name, ".sqlite")) {
		it->kind = MS__IT_RUN;
		snprintf(it->what, sizeof(it->what), "run database");
		it->why[0] = '\0';
		static const char *const side[] = { "-wal", "-shm", "-journal" };
		for (int i = 0; i < 3; i++) {
			char sp[PATH_MAX + 16];
			struct stat ss;
			snprintf(sp, sizeof(sp), "%s%s", path, side[i]);
			if (lstat(sp, &ss) == 0 && S_ISREG(ss.st_mode) &&
			    ss.st_mtime > newest)
				newest = ss.st_mtime;
		}
		it->in_use = db_in_use(path, live, &it->pid);
	} else if (S_ISREG(st.st_mode) && runs &&
	           ms__scratch_owner_tmp(name, &it->pid)) {
		/* A run's owner record not yet renamed into place: its
		 * process's while that runs, a leftover once it is gone. */
		it->kind = MS__IT_LEFTOVER;
		snprintf(it->what, sizeof(it->what), "unfinished owner");
		it->why[0] = '\0';
		it->in_use = db_owner_tmp_alive(path, it->pid);
	} else if (S_ISREG(st.st_mode) && runs && db_side(name)) {
		/* Beside its database: counted with it. Without one, a run's
		 * record is a leftover once its process is gone; SQLite's own
		 * files are left alone (a database removed by hand). */
		const char *suf = db_side(name);
		char db[PATH_MAX];
		struct stat ds;
		db_of_record(db, sizeof(db), path, strlen(path) - strlen(suf));
		if (stat(db, &ds) == 0)
			return false;
		ms_owner o;
		if (strcmp(suf, MS__DB_OWNER_SUFFIX) == 0 &&
		    ms_owner_read_file(path, &o, NULL) == 0) {
			it->kind = MS__IT_LEFTOVER;
			snprintf(it->what, sizeof(it->what), "run's owner file");
			it->why[0] = '\0';
			it->pid = o.pid;
			it->in_use = ms_owner_alive(&o);
		} else {
			snprintf(it->why, sizeof(it->why),
			         "beside no database %s", db);
		}
	} else if (S_ISDIR(st.st_mode)) {
		ms_owner o;
		ms_errbuf eb = { "" };
		int rc = ms_owner_read(path, &o, &eb);
		if (rc == 0) {
			it->pid = o.pid;
			it->in_use = ms_owner_alive(&o);
			it->why[0] = '\0';
			if (!strcmp(o.kind, "frozen")) {
				it->kind = MS__IT_FROZEN;
				snprintf(it->what, sizeof(it->what),
				         "frozen shard");
			} else if (!strcmp(o.kind, "scratch") ||
			           !strcmp(o.kind, "frozen-tmp") ||
			           !strcmp(o.kind, "fixture-tmp")) {
				it->kind = MS__IT_LEFTOVER;
				bool once = !strncmp(o.note, MERGE_ONCE_NOTE,
				                     strlen(MERGE_ONCE_NOTE));
				snprintf(it->what, sizeof(it->what), "%s",
				         !strcmp(o.kind, "frozen-tmp")
				                 ? "unfinished freeze"
				         : !strcmp(o.kind, "fixture-tmp")
				                 ? "unfinished fixture"
				         : once ? "merge-once copies"
				         : ends_with(name, ".ckpt")
				                 ? "checkpoints"
				                 : "scratch shard");
			} else {
				snprintf(it->why, sizeof(it->why),
				         "its owner record is of kind '%s', "
				         "not one clean removes",
				         o.kind);
				it->pid = 0;
				it->in_use = false;
			}
		} else if (rc == MS_ERR_NOTFOUND &&
		           ms__scratch_frozen_name(name)) {
			it->kind = MS__IT_FROZEN;
			snprintf(it->what, sizeof(it->what), "frozen shard");
			it->why[0] = '\0';
		} else if (rc != MS_ERR_NOTFOUND) {
			/* Whose it is cannot be told: it may be a live
			 * run's, so it stays. */
			snprintf(it->what, sizeof(it->what),
			         "unreadable owner");
			snprintf(it->why, sizeof(it->why), "%s", eb.msg);
		}
	}
	if (it->kind == MS__IT_FROZEN && !it->in_use && live_has(live, path))
		it->in_use = true; /* a merge-once reads it */
	it->age_s = now > newest ? (int64_t)(now - newest) : 0;
	return true;
}

int
ms__scratch_each(ms__scratch_fn fn, void *arg, bool others, ms_errbuf *eb)
{
	char where[NPLACES][PATH_MAX], cache[PATH_MAX];
	size_t nplaces = 0;
	int rc = places(where, &nplaces, cache, eb);
	if (rc)
		return rc;
	live_set live = { 0 };
	/* First what live processes use: the databases their runs write
	 * to, the frozen shards their merge-once commands read. */
	for (size_t p = 0; p < nplaces; p++) {
		DIR *d = opendir(where[p]);
		struct dirent *de;
		while (d && (de = readdir(d))) {
			char path[PATH_MAX];
			ms_owner o;
			if (!strcmp(de->d_name, ".") ||
			    !strcmp(de->d_name, "..") ||
			    (size_t)snprintf(path, sizeof(path), "%s/%s",
			                     where[p],
			                     de->d_name) >= sizeof(path))
				continue;
			pid_t tp;
			if (ms__scratch_owner_tmp(de->d_name, &tp)) {
				/* A live run writing its database's record
				 * (DB-owner.tmp-PID): that database is its. */
				if (db_owner_tmp_alive(path, tp)) {
					/* The last tag, as db_owner_tmp. */
					char *tag = strstr(path, TMP_TAG), *q;
					char db[PATH_MAX];
					while ((q = strstr(tag + 1, TMP_TAG)))
						tag = q;
					db_of_record(db, sizeof(db), path,
					             (size_t)(tag - path));
					live_add(&live, db);
				}
				continue;
			}
			if (ms_owner_read(path, &o, NULL) != 0 ||
			    strcmp(o.kind, "scratch") != 0 ||
			    !ms_owner_alive(&o))
				continue;
			if (!strncmp(o.note, MERGE_ONCE_NOTE,
			             strlen(MERGE_ONCE_NOTE)))
				live_add(&live,
				         o.note + strlen(MERGE_ONCE_NOTE));
			else
				live_add(&live, o.note);
		}
		if (d)
			closedir(d);
	}
	ino_set all = { 0 };
	for (size_t p = 0; p < nplaces && rc == 0; p++) {
		DIR *d = opendir(where[p]);
		struct dirent *de;
		bool top = cache[0] && !strcmp(where[p], cache);
		while (rc == 0 && d && (de = readdir(d))) {
			ms__scratch_item it;
			if (!strcmp(de->d_name, ".") ||
			    !strcmp(de->d_name, ".."))
				continue;
			if (!classify(where[p], de->d_name, top, &live, &it) ||
			    (it.kind == MS__IT_OTHER && !others))
				continue;
			ino_set mine = { 0 };
			tree_bytes(it.path, 0, &mine, &all, &it.bytes,
			           &it.fresh_bytes);
			if (it.kind == MS__IT_RUN) {
				static const char *const side[] = {
					"-wal", "-shm", "-journal",
					MS__DB_OWNER_SUFFIX
				};
				for (int i = 0; i < 4; i++) {
					char sp[PATH_MAX + 16];
					side_path(sp, sizeof(sp), it.path,
					          side[i]);
					tree_bytes(sp, MS_FS_MAX_DEPTH + 1,
					           &mine, &all, &it.bytes,
					           &it.fresh_bytes);
				}
			}
			ino_clear(&mine);
			rc = fn(arg, &it);
		}
		if (d)
			closedir(d);
	}
	ino_clear(&all);
	free(live.path);
	return rc;
}

/* Remove the directory dir with its owner record last, so that a removal
 * that fails part way (a process still writing there) leaves it a
 * leftover the next sweep or `clean` still finds. */
static int
remove_owned_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : ms_err_from_errno(errno);
	int rc = 0;
	struct dirent *de;
	while (rc == 0 && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    !strcmp(de->d_name, MS_OWNER_FILE))
			continue;
		char p[PATH_MAX];
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		rc = ms_fs_rm_tree(p, NULL);
	}
	closedir(d);
	return rc ? rc : ms_fs_rm_tree(dir, NULL);
}

int
ms__scratch_remove(const ms__scratch_item *it)
{
	if (it->in_use || it->kind == MS__IT_OTHER)
		return MS_ERR_STATE;
	struct stat st;
	if (lstat(it->path, &st) == 0 && !S_ISDIR(st.st_mode) &&
	    it->kind != MS__IT_RUN)
		/* A run's owner file left without its database, or under
		 * its temporary name. */
		return unlink(it->path) == 0 || errno == ENOENT
		               ? 0
		               : ms_err_from_errno(errno);
	if (it->kind == MS__IT_RUN) {
		/* The database, then what SQLite keeps beside it, the run's
		 * owner file last. */
		if (unlink(it->path) != 0 && errno != ENOENT)
			return ms_err_from_errno(errno);
		static const char *const side[] = { "-wal", "-shm", "-journal",
			                            MS__DB_OWNER_SUFFIX };
		for (int i = 0; i < 4; i++) {
			char sp[PATH_MAX + 16];
			side_path(sp, sizeof(sp), it->path, side[i]);
			if (sp[0] && unlink(sp) != 0 && errno != ENOENT)
				return ms_err_from_errno(errno);
		}
		return 0;
	}
	return remove_owned_dir(it->path);
}

struct sweep {
	unsigned n, failed;
	uint64_t bytes;
};

static int
sweep_one(void *arg, const ms__scratch_item *it)
{
	struct sweep *s = arg;
	if (it->kind != MS__IT_LEFTOVER || it->in_use)
		return 0;
	if (ms__scratch_remove(it) == 0) {
		s->n++;
		s->bytes += it->fresh_bytes;
	} else {
		s->failed++;
	}
	return 0;
}

/* The exit status for a MERGESCOPE_SCRATCH ms_scratch_root refused
 * with rc, by the rule for a path on the command line: 64 when the words
 * show it (not absolute, too long), 2 once the path is looked at (a file,
 * one the system will not let us look at; it was 64 too). */
static int
scratch_exit(int rc)
{
	return rc == MS_ERR_INVAL || rc == MS_ERR_RANGE ? MS_EXIT_USAGE
	                                                : MS_EXIT_ERROR;
}

int
ms__scratch_check(FILE *err, const char *cmd)
{
	char root[PATH_MAX];
	ms_errbuf eb = { { 0 } };
	int rc = ms_scratch_root(root, sizeof(root), NULL, &eb);
	if (rc == 0)
		return 0;
	fprintf(err, "mergescope %s: %s\n", cmd, eb.msg);
	return scratch_exit(rc);
}

int
ms__scratch_sweep(FILE *err, const char *cmd)
{
	struct sweep s = { 0 };
	ms_errbuf eb = { { 0 } };
	int rc = ms__scratch_each(sweep_one, &s, false, &eb);
	if (rc) {
		fprintf(err, "mergescope %s: %s\n", cmd, eb.msg);
		return scratch_exit(rc);
	}
	if (s.n == 0 && s.failed == 0)
		return 0;
	char b[32];
	ms_fmt_bytes(b, sizeof(b), s.bytes);
	fprintf(err,
	        "mergescope %s: removed %u leftover%s of killed runs and "
	        "builds, %s freed%s\n",
	        cmd, s.n, s.n == 1 ? "" : "s", b,
	        s.failed ? " (some could not be removed: see mergescope clean)"
	                 : "");
	return 0;
}

/* Does name start with the temporary name ms_fs_name_beside gives base
 * (a last name, no slash) for some pid? */
static bool
starts_tmp_of(const char *name, const char *base)
{
	static const char tag[] = ".tmp-";
	for (const char *t = strstr(name, tag); t; t = strstr(t + 1, tag)) {
		size_t i = (size_t)(t - name);
		const char *d = t + strlen(tag);
		if (strncmp(name, base, i) != 0 || *d < '0' || *d > '9')
			continue;
		char sfx[32], want[PATH_MAX];
		snprintf(sfx, sizeof(sfx), ".tmp-%ld", strtol(d, NULL, 10));
		if (ms_fs_name_beside(want, sizeof(want), base, sfx) == 0 &&
		    strncmp(name, want, strlen(want)) == 0)
			return true;
	}
	return false;
}

void
ms__scratch_sweep_beside(FILE *err, const char *cmd, const char *dir)
{
	char parent[PATH_MAX];
	const char *slash = strrchr(dir, '/');
	const char *base = slash ? slash + 1 : dir;
	if (slash == dir)
		snprintf(parent, sizeof(parent), "/");
	else if (slash)
		snprintf(parent, sizeof(parent), "%.*s", (int)(slash - dir),
		         dir);
	else
		snprintf(parent, sizeof(parent), ".");
	if (!*base)
		return;
	DIR *d = opendir(parent);
	if (!d)
		return;
	live_set none = { 0 };
	for (struct dirent *de; (de = readdir(d));) {
		ms__scratch_item it;
		/* "<base>.tmp-<pid>", or what that build put beside it. */
		if (!starts_tmp_of(de->d_name, base) ||
		    !classify(parent, de->d_name, false, &none, &it) ||
		    it.kind != MS__IT_LEFTOVER || it.in_use)
			continue;
		ino_set mine = { 0 }, all = { 0 };
		tree_bytes(it.path, 0, &mine, &all, &it.bytes,
		           &it.fresh_bytes);
		ino_clear(&mine);
		ino_clear(&all);
		char b[32];
		ms_fmt_bytes(b, sizeof(b), it.bytes);
		/* Named beside dir as dir is given. */
		const char *shown = slash ? it.path : de->d_name;
		int rc = ms__scratch_remove(&it);
		if (rc == 0)
			fprintf(err,
			        "mergescope %s: removed %s, the %s of a build "
			        "of %s that was killed (pid %ld), %s freed\n",
			        cmd, shown, it.what, dir, (long)it.pid, b);
		else
			fprintf(err,
			        "mergescope %s: cannot remove %s, the %s of a "
			        "build of %s that was killed: %s\n",
			        cmd, shown, it.what, dir, ms_strerror(rc));
	}
	closedir(d);
}

/* The owner records of run databases this process wrote (ms__db_owner_take),
 * removed when the command ends. The TUI's re-runs take theirs from the
 * session's thread, hence the lock. */
static pthread_mutex_t db_owner_mu = PTHREAD_MUTEX_INITIALIZER;
static char (*db_owner_paths)[PATH_MAX + 16];
static size_t db_owner_n, db_owner_cap;

/* Is db (a file that may not exist yet) in the cache's runs/? */
static bool
in_runs_dir(const char *db)
{
	char root[PATH_MAX], runs[PATH_MAX + 8], dir[PATH_MAX], a[PATH_MAX],
	        b[PATH_MAX];
	if (ms__cache_root(root, sizeof(root)) != 0)
		return false;
	snprintf(runs, sizeof(runs), "%s/runs", root);
	const char *slash = strrchr(db, '/');
	if (slash)
		snprintf(dir, sizeof(dir), "%.*s",
		         (int)(slash == db ? 1 : slash - db), db);
	else
		snprintf(dir, sizeof(dir), ".");
	return realpath(dir, a) && realpath(runs, b) && strcmp(a, b) == 0;
}

int
ms__db_owner_take(const char *db, ms_errbuf *eb)
{
	if (!db || !db[0] || !in_runs_dir(db))
		return 0;
	char rec[PATH_MAX + 16];
	if (ms__db_owner_path(rec, sizeof(rec), db) != 0)
		return ms_fail(eb, MS_ERR_RANGE,
		               "%s: path too long for its owner record", db);
	pthread_mutex_lock(&db_owner_mu);
	int rc = 0;
	if (db_owner_n == db_owner_cap) {
		size_t nc = db_owner_cap ? 2 * db_owner_cap : 4;
		void *p = realloc(db_owner_paths, nc * sizeof(*db_owner_paths));
		if (!p)
			rc = ms_fail(eb, MS_ERR_NOMEM,
			             "%s: out of memory for the list of owner "
			             "records to remove (%zu bytes)",
			             rec, nc * sizeof(*db_owner_paths));
		else
			db_owner_paths = p, db_owner_cap = nc;
	}
	if (rc == 0)
		rc = ms_owner_write_beside(db, MS__DB_OWNER_SUFFIX, "database",
		                           db, eb);
	if (rc == 0)
		snprintf(db_owner_paths[db_owner_n++], sizeof(*db_owner_paths),
		         "%s", rec);
	pthread_mutex_unlock(&db_owner_mu);
	return rc;
}

void
ms__db_owner_release(void)
{
	pthread_mutex_lock(&db_owner_mu);
	for (size_t i = 0; i < db_owner_n; i++)
		unlink(db_owner_paths[i]);
	free(db_owner_paths);
	db_owner_paths = NULL;
	db_owner_n = db_owner_cap = 0;
	pthread_mutex_unlock(&db_owner_mu);
}
