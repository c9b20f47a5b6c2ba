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
 * whose owner is gone are leftovers; frozen ones are frozen shards (also a
 * `*.frozen-N` directory without a record, made before records existed);
 * `*.sqlite` files under runs/ are run databases, in use while a live
 * scratch shard names them. Anything whose owner still runs is never
 * removed.
 */
#include "cli.h"

#include "ms_fixture.h"
#include "ms_owner.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Disk space of a tree (allocated blocks), not following links. */
static uint64_t
tree_bytes(const char *path, int depth)
{
	struct stat st;
	if (lstat(path, &st) != 0)
		return 0;
	uint64_t n = (uint64_t)st.st_blocks * 512u;
	if (!S_ISDIR(st.st_mode) || depth > 16)
		return n;
	DIR *d = opendir(path);
	if (!d)
		return n;
	struct dirent *de;
	char sub[PATH_MAX];
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", path,
		                     de->d_name) < sizeof(sub))
			n += tree_bytes(sub, depth + 1);
	}
	closedir(d);
	return n;
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

/* The places, in order, into out; *np of them filled. */
static int
places(char out[NPLACES][PATH_MAX], size_t *np, ms_errbuf *eb)
{
	size_t n = 0;
	int rc = ms_scratch_root(out[n++], PATH_MAX, NULL, eb);
	if (rc)
		return rc;
	char root[PATH_MAX];
	static const char *const sub[] = { "/runs", "/work", "" };
	if (ms__cache_root(root, sizeof(root)) == 0)
		for (size_t i = 0; i < sizeof(sub) / sizeof(sub[0]); i++)
			if ((size_t)snprintf(out[n], PATH_MAX, "%s%s", root,
			                     sub[i]) < PATH_MAX &&
			    strcmp(out[n], out[0]) != 0) /* walked once */
				n++;
	*np = n;
	return 0;
}

/* Live scratch shards name their database: is `db` one of them? */
typedef struct live_dbs {
	char (*path)[PATH_MAX];
	size_t n, cap;
} live_dbs;

static void
live_add(live_dbs *l, const char *db)
{
	if (!db[0])
		return;
	if (l->n == l->cap) {
		size_t nc = l->cap ? l->cap * 2 : 8;
		void *p = realloc(l->path, nc * sizeof(*l->path));
		if (!p)
			return;
		l->path = p;
		l->cap = nc;
	}
	snprintf(l->path[l->n++], PATH_MAX, "%s", db);
}

static bool
live_has(const live_dbs *l, const char *db)
{
	for (size_t i = 0; i < l->n; i++)
		if (!strcmp(l->path[i], db))
			return true;
	return false;
}

/* Classify one directory entry; false when it is none of ours. */
static bool
classify(const char *dir, const char *name, const live_dbs *live,
         ms__scratch_item *it)
{
	char path[PATH_MAX];
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >=
	    sizeof(path))
		return false;
	struct stat st;
	if (lstat(path, &st) != 0)
		return false;
	memset(it, 0, sizeof(*it));
	snprintf(it->path, sizeof(it->path), "%s", path);
	time_t now = time(NULL);
	if (S_ISREG(st.st_mode)) {
		if (!ends_with(dir, "/runs") || !ends_with(name, ".sqlite"))
			return false;
		it->kind = MS__IT_RUN;
		snprintf(it->what, sizeof(it->what), "run database");
		it->bytes = (uint64_t)st.st_blocks * 512u;
		time_t newest = st.st_mtime;
		static const char *const side[] = { "-wal", "-shm" };
		for (int i = 0; i < 2; i++) {
			char sp[PATH_MAX + 8];
			struct stat ss;
			snprintf(sp, sizeof(sp), "%s%s", path, side[i]);
			if (stat(sp, &ss) == 0) {
				it->bytes += (uint64_t)ss.st_blocks * 512u;
				if (ss.st_mtime > newest)
					newest = ss.st_mtime;
			}
		}
		it->age_s = now > newest ? (int64_t)(now - newest) : 0;
		it->in_use = live_has(live, path);
		return true;
	}
	if (!S_ISDIR(st.st_mode))
		return false;
	ms_owner o;
	int rc = ms_owner_read(path, &o, NULL);
	if (rc == 0) {
		it->pid = o.pid;
		it->in_use = ms_owner_alive(&o);
		if (!strcmp(o.kind, "frozen")) {
			it->kind = MS__IT_FROZEN;
			snprintf(it->what, sizeof(it->what), "frozen shard");
		} else if (!strcmp(o.kind, "scratch") ||
		           !strcmp(o.kind, "frozen-tmp") ||
		           !strcmp(o.kind, "fixture-tmp")) {
			it->kind = MS__IT_LEFTOVER;
			snprintf(it->what, sizeof(it->what), "%s",
			         !strcmp(o.kind, "scratch") ? "scratch shard"
			         : !strcmp(o.kind, "frozen-tmp")
			                 ? "unfinished freeze"
			                 : "unfinished fixture");
		} else {
			return false;
		}
	} else if (rc == MS_ERR_NOTFOUND && ends_tag_digits(name, ".frozen-")) {
		it->kind = MS__IT_FROZEN;
		snprintf(it->what, sizeof(it->what), "frozen shard");
	} else {
		return false;
	}
	it->bytes = tree_bytes(path, 0);
	it->age_s = now > st.st_mtime ? (int64_t)(now - st.st_mtime) : 0;
	return true;
}

int
ms__scratch_each(ms__scratch_fn fn, void *arg, ms_errbuf *eb)
{
	char where[NPLACES][PATH_MAX];
	size_t nplaces = 0;
	int rc = places(where, &nplaces, eb);
	if (rc)
		return rc;
	live_dbs live = { 0 };
	/* First the databases live runs write to. */
	for (size_t p = 0; p < nplaces; p++) {
		DIR *d = opendir(where[p]);
		struct dirent *de;
		while (d && (de = readdir(d))) {
			char path[PATH_MAX];
			ms_owner o;
			if (de->d_name[0] == '.' ||
			    (size_t)snprintf(path, sizeof(path), "%s/%s",
			                     where[p],
			                     de->d_name) >= sizeof(path))
				continue;
			if (ms_owner_read(path, &o, NULL) == 0 &&
			    !strcmp(o.kind, "scratch") && ms_owner_alive(&o))
				live_add(&live, o.note);
		}
		if (d)
			closedir(d);
	}
	for (size_t p = 0; p < nplaces && rc == 0; p++) {
		DIR *d = opendir(where[p]);
		struct dirent *de;
		while (rc == 0 && d && (de = readdir(d))) {
			ms__scratch_item it;
			if (de->d_name[0] == '.')
				continue;
			if (classify(where[p], de->d_name, &live, &it))
				rc = fn(arg, &it);
		}
		if (d)
			closedir(d);
	}
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
	if (it->in_use)
		return MS_ERR_STATE;
	if (it->kind == MS__IT_RUN) {
		char side[PATH_MAX + 8];
		snprintf(side, sizeof(side), "%s-wal", it->path);
		unlink(side);
		snprintf(side, sizeof(side), "%s-shm", it->path);
		unlink(side);
		return unlink(it->path) == 0 || errno == ENOENT
		               ? 0
		               : ms_err_from_errno(errno);
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
		s->bytes += it->bytes;
	} else {
		s->failed++;
	}
	return 0;
}

int
ms__scratch_check(FILE *err, const char *cmd)
{
	char root[PATH_MAX];
	ms_errbuf eb = { { 0 } };
	if (ms_scratch_root(root, sizeof(root), NULL, &eb) == 0)
		return 0;
	fprintf(err, "mergescope %s: %s\n", cmd, eb.msg);
	return MS_EXIT_USAGE;
}

int
ms__scratch_sweep(FILE *err, const char *cmd)
{
	struct sweep s = { 0 };
	ms_errbuf eb = { { 0 } };
	if (ms__scratch_each(sweep_one, &s, &eb)) {
		fprintf(err, "mergescope %s: %s\n", cmd, eb.msg);
		return MS_EXIT_USAGE;
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

void
ms__scratch_sweep_beside(FILE *err, const char *cmd, const char *dir)
{
	char parent[PATH_MAX], prefix[PATH_MAX];
	const char *slash = strrchr(dir, '/');
	const char *base = slash ? slash + 1 : dir;
	if (slash == dir)
		snprintf(parent, sizeof(parent), "/");
	else if (slash)
		snprintf(parent, sizeof(parent), "%.*s", (int)(slash - dir),
		         dir);
	else
		snprintf(parent, sizeof(parent), ".");
	if (!*base || (size_t)snprintf(prefix, sizeof(prefix), "%s.tmp-",
	                               base) >= sizeof(prefix))
		return;
	size_t np = strlen(prefix);
	DIR *d = opendir(parent);
	if (!d)
		return;
	live_dbs none = { 0 };
	for (struct dirent *de; (de = readdir(d));) {
		ms__scratch_item it;
		/* "<base>.tmp-<pid>", or what that build put beside it. */
		if (strncmp(de->d_name, prefix, np) != 0 ||
		    de->d_name[np] < '0' || de->d_name[np] > '9' ||
		    !classify(parent, de->d_name, &none, &it) ||
		    it.kind != MS__IT_LEFTOVER || it.in_use)
			continue;
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
