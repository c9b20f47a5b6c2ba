/*
 * cli_setup.c - what `mergescope tui` and `mergescope run` share before a
 * replay starts: where the plugins are, which fixture to replay (the
 * preset's cached fixture, built once with a progress bar when missing),
 * where the event database goes, and a check of every option that can be
 * checked before any work starts, so a typo costs one line of error and
 * not a fixture build.
 *
 * Cache layout ($XDG_CACHE_HOME, else ~/.cache):
 *   mergescope/<preset>-<seed>/     a fixture (ms_fixture_cache_dir)
 *   mergescope/<preset>-<seed>.lock the build lock of that fixture
 *   mergescope/runs/<preset>-<variant>-<YYYYmmdd-HHMMSS>-<pid>.sqlite
 *                                   an event database per run
 */
#include "cli.h"

#include "ms_fixture.h"
#include "ms_fs.h"
#include "ms_limits.h"
#include "ms_mem.h"
#include "ms_pipeline.h"
#include "ms_replay.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef MS_BUILD_PLUGIN_DIR
#define MS_BUILD_PLUGIN_DIR ""
#endif

void
ms__plugin_dir(char *buf, size_t n)
{
	char exe[4096];
	ssize_t k = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (k > 0) {
		exe[k] = '\0';
		char *slash = strrchr(exe, '/');
		if (slash) {
			*slash = '\0';
			/* A build tree, then an installed one (make
			 * install). */
			static const char *const rel[] = {
				"../plugins", "../lib/mergescope/plugins"
			};
			for (size_t i = 0; i < 2; i++) {
				char cand[4200];
				snprintf(cand, sizeof(cand), "%s/%s", exe,
				         rel[i]);
				char real[PATH_MAX];
				if (ms_fs_is_dir(cand) && realpath(cand, real)) {
					snprintf(buf, n, "%s", real);
					return;
				}
			}
		}
	}
	if (ms_fs_is_dir(MS_BUILD_PLUGIN_DIR)) {
		snprintf(buf, n, "%s", MS_BUILD_PLUGIN_DIR);
		return;
	}
	const char *env = getenv("MERGESCOPE_PLUGIN_DIR");
	if (env && *env) {
		snprintf(buf, n, "%s", env);
		return;
	}
	/* Nothing exists: name the build's directory so errors say where
	 * the plugins were expected. */
	snprintf(buf, n, "%s",
	         *MS_BUILD_PLUGIN_DIR ? MS_BUILD_PLUGIN_DIR : "plugins");
}

int
ms__cache_root(char *buf, size_t n)
{
	const char *xdg = getenv("XDG_CACHE_HOME");
	const char *home = getenv("HOME");
	int k;
	if (xdg && *xdg)
		k = snprintf(buf, n, "%s/mergescope", xdg);
	else if (home && *home)
		k = snprintf(buf, n, "%s/.cache/mergescope", home);
	else
		return MS_ERR_NOTFOUND;
	return k < 0 || (size_t)k >= n ? MS_ERR_RANGE : 0;
}

/* Keep [A-Za-z0-9._-] of a variant or chain spec for a file name. */
static void
file_word(char *dst, size_t n, const char *src)
{
	size_t j = 0;
	bool sep = false;
	for (const char *s = src; *s && j + 1 < n && j < 40; s++) {
		char c = *s;
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		          (c >= '0' && c <= '9') || c == '.' || c == '-' ||
		          c == '_';
		if (ok) {
			dst[j++] = c;
			sep = false;
		} else if (!sep && j > 0) {
			dst[j++] = '_';
			sep = true;
		}
	}
	while (j > 0 && dst[j - 1] == '_')
		j--;
	dst[j] = '\0';
	if (j == 0)
		snprintf(dst, n, "run");
}

int
ms__default_db(char *buf, size_t n, const char *preset, const char *variant,
               ms_errbuf *eb)
{
	char dir[4096];
	int rc = ms__cache_root(dir, sizeof(dir));
	if (rc)
		return ms_fail(eb, rc,
		               "no place for the event database: set "
		               "XDG_CACHE_HOME or HOME, or give --db FILE");
	size_t len = strlen(dir);
	if (len + 6 >= sizeof(dir))
		return ms_fail(eb, MS_ERR_RANGE, "%s: path too long", dir);
	memcpy(dir + len, "/runs", 6);
	if (ms_fs_mkdir_p(dir, 0777, NULL) < 0)
		return ms_fail(eb, ms_err_from_errno(errno),
		               "cannot create %s for the event database: %s "
		               "(give --db FILE)",
		               dir, strerror(errno));
	char word[48], stamp[32];
	file_word(word, sizeof(word), variant);
	time_t now = time(NULL);
	struct tm tm;
	localtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
	/* The pid keeps processes apart; within one process, each call
	 * takes the next number, so two names given out in one second
	 * differ even before either database exists. */
	static atomic_uint calls;
	unsigned first = atomic_fetch_add(&calls, 1) + 1;
	for (unsigned i = first; i < first + 1000; i++) {
		char suffix[16] = "";
		if (i > 1)
			snprintf(suffix, sizeof(suffix), "-%u", i);
		int k = snprintf(buf, n, "%s/%s-%s-%s-%ld%s.sqlite", dir,
		                 preset, word, stamp, (long)getpid(), suffix);
		if (k < 0 || (size_t)k >= n)
			return ms_fail(eb, MS_ERR_RANGE, "%s: path too long",
			               dir);
		struct stat st;
		if (stat(buf, &st) < 0)
			return 0;
	}
	return ms_fail(eb, MS_ERR_EXISTS, "%s: too many runs this second", dir);
}

/* An output path must not be a directory, its directory must exist and
 * be writable; with fresh, the file must not exist. */
static int
check_out_path(const ms__run_args *a, const char *opt, const char *path,
               bool fresh, FILE *err)
{
	struct stat st;
	if (!*path) {
		fprintf(err, "mergescope %s: %s: expected a file name\n",
		        a->cmd, opt);
		return MS_EXIT_ERROR;
	}
	if (stat(path, &st) == 0) {
		if (S_ISDIR(st.st_mode)) {
			fprintf(err,
			        "mergescope %s: %s %s: is a directory; expected "
			        "a file name\n",
			        a->cmd, opt, path);
			return MS_EXIT_ERROR;
		}
		if (fresh) {
			fprintf(err,
			        "mergescope %s: %s %s: exists; give a new file "
			        "name (a run never overwrites an event "
			        "database)\n",
			        a->cmd, opt, path);
			return MS_EXIT_ERROR;
		}
	}
	char dir[4096];
	snprintf(dir, sizeof(dir), "%s", path);
	char *slash = strrchr(dir, '/');
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == dir)
		dir[1] = '\0';
	else
		*slash = '\0';
	errno = 0;
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		fprintf(err, "mergescope %s: %s %s: directory %s %s\n", a->cmd,
		        opt, path, dir,
		        errno == ENOENT ? "does not exist"
		                        : "is not a directory");
		return MS_EXIT_ERROR;
	}
	/* Writable as the run writes it: a directory made in it (access()
	 * asks for the real user, and passes what a write then refuses). */
	int we = ms_replay_dir_probe(dir);
	if (we) {
		fprintf(err,
		        "mergescope %s: %s %s: cannot create a file in "
		        "directory %s: %s\n",
		        a->cmd, opt, path, dir, strerror(we));
		return MS_EXIT_ERROR;
	}
	return 0;
}

/* One NAME.so of the plugin directory: " NAME," into the runnable list
 * when it opens as a file, else " NAME.so (why)," into the broken one (a
 * link whose target is gone is no variant to offer). */
static void
hint_entry(const char *dir, const char *file, char *ok, size_t *okn,
           char *bad, size_t *badn, size_t n)
{
	char path[PATH_MAX], to[PATH_MAX];
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	struct stat st;
	const char *why = NULL;
	if (stat(path, &st) != 0)
		why = strerror(errno);
	else if (!S_ISREG(st.st_mode))
		why = "not a file";
	if (!why) {
		size_t l = strlen(file) - 3;
		*okn += (size_t)snprintf(
		        ok + *okn, n - *okn, " %.*s%s,", (int)l, file,
		        strcmp(file, "detdrop.so") == 0 ? ":PCT" : "");
		return;
	}
	ssize_t k = readlink(path, to, sizeof(to) - 1);
	if (k > 0) {
		to[k] = '\0';
		*badn += (size_t)snprintf(bad + *badn, n - *badn,
		                          " %s (a link to %s: %s),", file, to,
		                          why);
	} else {
		*badn += (size_t)snprintf(bad + *badn, n - *badn, " %s (%s),",
		                          file, why);
	}
}

void
ms__variants_hint(char *buf, size_t n, const char *spec,
                  const char *plugin_dir)
{
	buf[0] = '\0';
	char name[128], path[PATH_MAX];
	size_t len = strcspn(spec, ":,{");
	if (len == 0 || len >= sizeof(name))
		return;
	memcpy(name, spec, len);
	name[len] = '\0';
	snprintf(path, sizeof(path), "%s/%s.so", plugin_dir, name);
	if (access(path, R_OK) == 0)
		return;
	DIR *d = opendir(plugin_dir);
	if (!d)
		return;
	char ok[512] = "", bad[512] = "";
	size_t okn = 0, badn = 0;
	const struct dirent *e;
	while ((e = readdir(d)) && okn < sizeof(ok) && badn < sizeof(bad)) {
		size_t l = strlen(e->d_name);
		if (l > 3 && strcmp(e->d_name + l - 3, ".so") == 0)
			hint_entry(plugin_dir, e->d_name, ok, &okn, bad, &badn,
			           sizeof(ok));
	}
	closedir(d);
	if (badn >= 2 && badn < sizeof(bad))
		bad[badn - 1] = '\0'; /* the last comma */
	snprintf(buf, n, "; the variants in %s are%s disabled%s%s", plugin_dir,
	         okn < sizeof(ok) ? ok : "", bad[0] ? "; not runnable:" : "",
	         bad);
}

/* A path copied into a buffer of cap bytes must fit whole: a longer one
 * is refused, never cut (PATH_MAX is what the system opens anyway). */
static int
path_fits(const ms__run_args *a, const char *opt, const char *path, size_t cap,
          FILE *err)
{
	size_t n = strlen(path);
	if (n < cap)
		return 0;
	fprintf(err,
	        "mergescope %s: %s: the path is %zu bytes; at most %zu are "
	        "accepted\n",
	        a->cmd, opt, n, cap - 1);
	return MS_EXIT_USAGE;
}

/* Where check_variant's chain says what went wrong beyond its open's
 * result (a plugin's close() that never returned): one line on err. */
typedef struct check_log {
	FILE *err;
	const char *cmd;
} check_log;

static void
check_log_line(void *ctx, const ms_chain_log_line *ln)
{
	const check_log *cl = ctx;
	if (ln->level == MS_PLUGIN_LOG_ERROR && ln->msg)
		fprintf(cl->err, "mergescope %s: %s\n", cl->cmd, ln->msg);
}

/* Open the chain (loading every plugin with its config) and close it. */
static int
check_variant(const ms__run_args *a, const char *spec, const char *plugin_dir,
              const ms_limits *lim, enum ms_grace_policy policy, FILE *err)
{
	if (strcmp(spec, "disabled") == 0)
		return 0;
	ms_mem mem;
	ms_mem_init(&mem, NULL);
	/* A spec that does not parse, or a config a plugin refuses, is a
	 * value the option does not take (64); a plugin that will not load
	 * or open for another reason is the run's error (2). */
	ms_chain_spec cs;
	ms_errbuf eb = { "" };
	int rc = ms_chain_spec_parse(&cs, spec, plugin_dir, &mem, &eb);
	ms_chain_spec_release(&cs);
	if (rc) {
		fprintf(err, "mergescope %s: %s \"%s\": %s\n", a->cmd,
		        a->variant_opt ? a->variant_opt : "variant", spec,
		        eb.msg[0] ? eb.msg : ms_strerror(rc));
		return MS_EXIT_USAGE;
	}
	ms_pipeline_opts po;
	memset(&po, 0, sizeof(po));
	po.spec = spec;
	po.plugin_dir = plugin_dir;
	po.policy = policy;
	po.limits = lim;
	po.mem = &mem;
	check_log cl = { err, a->cmd };
	po.log = check_log_line;
	po.log_ctx = &cl;
	ms_pipeline *pipe = NULL;
	rc = ms_pipeline_open(&pipe, &po, &eb);
	ms_pipeline_close(pipe);
	if (rc == MS_ERR_CONFIG) {
		/* A config its plugin refuses (out of range, unknown key) is
		 * a value the option does not take; the plugin's words say
		 * what it accepts. */
		fprintf(err, "mergescope %s: %s \"%s\": %s\n", a->cmd,
		        a->variant_opt ? a->variant_opt : "variant", spec,
		        eb.msg);
		return MS_EXIT_USAGE;
	}
	if (rc) {
		char hint[512];
		ms__variants_hint(hint, sizeof(hint), spec, plugin_dir);
		fprintf(err, "mergescope %s: %s \"%s\": %s%s\n", a->cmd,
		        a->variant_opt ? a->variant_opt : "variant", spec,
		        eb.msg[0] ? eb.msg : ms_strerror(rc), hint);
		/* A plugin's load left running (a library constructor that
		 * never returns) may hold the dynamic loader's lock, which
		 * exit() would wait for for ever (ms_chain_open): end
		 * without it. */
		if (rc == MS_ERR_TIMEOUT) {
			fflush(NULL);
			quick_exit(MS_EXIT_ERROR);
		}
		return MS_EXIT_ERROR;
	}
	return 0;
}

void
ms__say_presets(FILE *err)
{
	fputs("expected ", err);
	for (const char *const *n = ms_fixture_presets(); *n; n++)
		fprintf(err, "%s, ", *n);
	fprintf(err, "or day-<N>x (N from 1 to %u)\n", MS_FIXTURE_SCALE_MAX);
}

static bool
known_preset(const char *p)
{
	for (const char *const *n = ms_fixture_presets(); *n; n++)
		if (strcmp(*n, p) == 0)
			return true;
	return ms_fixture_preset_units(p) > 0; /* day-<N>x */
}

struct build_ctx {
	ms__progress prog;
};

static void
build_progress(void *ctx, const char *stage, uint64_t done, uint64_t total)
{
	struct build_ctx *b = ctx;
	char what[48];
	snprintf(what, sizeof(what), "fixture %s", stage);
	ms__progress_update(&b->prog, what, done, total, NULL);
}

void
ms__fixture_differences(char *buf, size_t n,
                        const struct ms_fixture_info *have, const char *asked,
                        const char *preset, uint64_t seed, const char *opening,
                        bool dictionary)
{
	size_t used = 0;
	char a[32], b[32];
	struct {
		const char *what, *got, *want;
	} d[4] = {
		{ "preset", have->preset, preset },
		{ "seed", a, b },
		{ "opening", have->opening, opening },
		{ "dictionary", have->dict_id ? "one" : "none",
		  dictionary ? "one" : "none" },
	};
	snprintf(a, sizeof(a), "%llu", (unsigned long long)have->seed);
	snprintf(b, sizeof(b), "%llu", (unsigned long long)seed);
	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(d) / sizeof(d[0]) && used < n; i++) {
		if (strcmp(d[i].got, d[i].want) == 0)
			continue;
		used += (size_t)snprintf(
		        buf + used, n - used, "%s%s %s (%s: %s)",
		        used ? ", " : "", d[i].what, d[i].got, asked, d[i].want);
	}
}

int
ms__mkdir_parent(const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash || slash == path)
		return 0;
	size_t n = (size_t)(slash - path);
	char *dir = malloc(n + 1);
	if (!dir)
		return -1;
	memcpy(dir, path, n);
	dir[n] = '\0';
	int rc = ms_fs_mkdir_p(dir, 0777, NULL) < 0 ? -1 : 0;
	free(dir);
	return rc;
}

/*
 * The build lock of a fixture directory: "<dir>.lock" (lock_path), an
 * flock, there only while a build of dir runs or waits. The holder removes the
 * file before it releases the lock (ms__fixture_unlock), so a finished build
 * leaves nothing beside the fixture. A process that was waiting on the
 * removed file then holds a lock nobody else can see: it checks, once it
 * has the lock, that the path still names the file it locked, and starts
 * again on the path's new file when not. So at most one process holds
 * the lock of the file the path names, and only that one goes on. The
 * file of a build killed before it could remove it is taken over by the
 * next build, which removes it when done.
 */
/* "<dir>.lock", dir's last name cut short to keep it within NAME_MAX
 * (ms_fs_name_beside), allocated; NULL without memory. */
static char *
lock_path(const char *dir)
{
	size_t n = strlen(dir) + sizeof(".lock");
	char *path = malloc(n);
	if (path)
		(void)ms_fs_name_beside(path, n, dir, ".lock");
	return path;
}

int
ms__fixture_lock(const char *cmd, const char *dir, FILE *err)
{
	char *path = lock_path(dir);
	bool said = false;
	if (!path) {
		(void)ms__say_oom(err, cmd, strlen(dir) + sizeof(".lock"),
		                  "the name of the lock of %s", dir);
		return -1;
	}
	for (;;) {
		int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
		if (fd < 0) {
			fprintf(err,
			        "mergescope %s: cannot create the build lock "
			        "%s: %s\n",
			        cmd, path, strerror(errno));
			free(path);
			return -1;
		}
		if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
			if (errno == EWOULDBLOCK && !said) {
				fprintf(err,
				        "mergescope %s: another process holds "
				        "the build lock of %s; waiting for it "
				        "(lock %s)\n",
				        cmd, dir, path);
				fflush(err);
				said = true;
			}
			int rc;
			while ((rc = flock(fd, LOCK_EX)) < 0 && errno == EINTR)
				;
			if (rc < 0) {
				fprintf(err, "mergescope %s: lock %s: %s\n",
				        cmd, path, strerror(errno));
				close(fd);
				free(path);
				return -1;
			}
		}
		struct stat held, named;
		if (fstat(fd, &held) == 0 && stat(path, &named) == 0 &&
		    held.st_dev == named.st_dev &&
		    held.st_ino == named.st_ino) {
			free(path);
			return fd;
		}
		/* Removed by the holder it waited for: lock the path's
		 * file anew. */
		close(fd);
	}
}

void
ms__fixture_unlock(int fd, const char *dir)
{
	if (fd < 0)
		return;
	char *path = lock_path(dir);
	/* Removed while still held: whoever locks the path next makes a
	 * new file (see ms__fixture_lock). Without memory the file stays,
	 * for the next build to take over. */
	if (path) {
		unlink(path);
		free(path);
	}
	close(fd);
}

/* The preset's cached fixture, built when missing or unreadable, under
 * the fixture's build lock: a second run that finds a build under way
 * waits for it and then opens what it built. */
static int cached_fixture(const ms__run_args *a, ms__run_cfg *cfg,
                          const char *dir, FILE *err);

static int
cached_fixture_locked(const ms__run_args *a, ms__run_cfg *cfg, FILE *err)
{
	char dir[4096];
	int rc = ms_fixture_cache_dir(dir, sizeof(dir), cfg->preset,
	                              MS_FIXTURE_SEED);
	if (rc) {
		fprintf(err,
		        "mergescope %s: no fixture cache: set XDG_CACHE_HOME "
		        "or HOME, or give --fixture DIR\n",
		        a->cmd);
		return MS_EXIT_ERROR;
	}
	/* The cache's directory must exist for the lock file. */
	if (ms__mkdir_parent(dir) < 0) {
		fprintf(err,
		        "mergescope %s: cannot create the directory of %s: "
		        "%s\n",
		        a->cmd, dir, strerror(errno));
		return MS_EXIT_ERROR;
	}
	/* A built fixture is immutable: one that opens needs no lock. */
	ms_fixture *f = NULL;
	ms_errbuf eb = { "" };
	struct stat st;
	if (stat(dir, &st) == 0 && ms_fixture_open(&f, dir, &eb) == 0) {
		/* The preset's cached day is its default build: the preset's
		 * day of the default seed, an empty opening and no
		 * dictionary. Another day put there (fixture build --out) is
		 * not taken for it. */
		char what[512];
		ms__fixture_differences(what, sizeof(what),
		                        ms_fixture_get_info(f), "the default",
		                        cfg->preset, MS_FIXTURE_SEED, "empty",
		                        false);
		ms_fixture_close(f);
		if (what[0]) {
			fprintf(err,
			        "mergescope %s: the cached fixture %s is not "
			        "the preset's default build: %s; give it as "
			        "--fixture %s, or move it and run again to "
			        "build the default\n",
			        a->cmd, dir, what, dir);
			return MS_EXIT_ERROR;
		}
		snprintf(cfg->fixture_dir, sizeof(cfg->fixture_dir), "%s", dir);
		return 0;
	}
	int fd = ms__fixture_lock(a->cmd, dir, err);
	if (fd < 0)
		return MS_EXIT_ERROR;
	rc = cached_fixture(a, cfg, dir, err);
	ms__fixture_unlock(fd, dir);
	return rc;
}

static int
cached_fixture(const ms__run_args *a, ms__run_cfg *cfg, const char *dir,
               FILE *err)
{
	int rc;
	snprintf(cfg->fixture_dir, sizeof(cfg->fixture_dir), "%s", dir);
	struct stat st;
	if (stat(dir, &st) == 0) {
		ms_fixture *f = NULL;
		ms_errbuf eb = { "" };
		rc = ms_fixture_open(&f, dir, &eb);
		ms_fixture_close(f);
		if (rc == 0)
			return 0;
		char aside[4200], stamp[32];
		time_t now = time(NULL);
		struct tm tm;
		localtime_r(&now, &tm);
		strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
		snprintf(aside, sizeof(aside), "%s.broken-%s", dir, stamp);
		if (rename(dir, aside) < 0) {
			fprintf(err,
			        "mergescope %s: the cached fixture %s does not "
			        "open (%s) and cannot be moved aside: %s\n",
			        a->cmd, dir, eb.msg, strerror(errno));
			return MS_EXIT_ERROR;
		}
		fprintf(err,
		        "mergescope %s: the cached fixture %s does not open "
		        "(%s); moved it to %s and building a fresh one\n",
		        a->cmd, dir, eb.msg, aside);
	}
	fprintf(err,
	        "building the %s fixture (seed %d) once into %s; later runs "
	        "reuse it\n",
	        cfg->preset, MS_FIXTURE_SEED, dir);
	struct build_ctx b;
	ms__progress_init(&b.prog, err, -1);
	ms_fixture_build_opts bo;
	memset(&bo, 0, sizeof(bo));
	bo.preset = cfg->preset;
	bo.seed = MS_FIXTURE_SEED;
	bo.out_dir = dir;
	char plugin[4200];
	snprintf(plugin, sizeof(plugin), "%s/skywalking.so", cfg->plugin_dir);
	bo.plugin_path = plugin;
	bo.progress = build_progress;
	bo.progress_ctx = &b;
	ms_fixture_report *rep = calloc(1, sizeof(*rep));
	if (!rep)
		return ms__say_oom(err, a->cmd, sizeof(*rep),
		                   "the report of the fixture build");
	ms_errbuf eb = { "" };
	rc = ms_fixture_build(&bo, rep, &eb);
	ms__progress_end(&b.prog);
	if (rc) {
		fprintf(err, "mergescope %s: building the %s fixture: %s\n",
		        a->cmd, cfg->preset,
		        eb.msg[0] ? eb.msg : ms_strerror(rc));
	} else {
		fprintf(err,
		        "fixture %s ready: %llu writes, %llu rows, all "
		        "gates passed (%.1f s)\n",
		        cfg->preset, (unsigned long long)rep->writes,
		        (unsigned long long)rep->rows, rep->seconds);
	}
	free(rep);
	return rc ? MS_EXIT_ERROR : 0;
}

int
ms__say_fixture_error(FILE *err, const char *cmd, const char *dir, int rc,
                      const ms_errbuf *eb)
{
	/* A wrong path is named as given, with what it is and what is
	 * expected ("--fixture X is a file, ..."), as `fixture check` names
	 * it. */
	const char *msg = eb->msg[0] ? eb->msg : ms_strerror(rc);
	size_t n = strlen(dir);
	bool named =
	        strncmp(msg, dir, n) == 0 && (msg[n] == ' ' || msg[n] == ':');
	/* "fixture DIR: part ... changed" (the replay's check) as is */
	bool fixture_named = strncmp(msg, "fixture ", 8) == 0 &&
	                     strncmp(msg + 8, dir, n) == 0 && msg[8 + n] == ':';
	fprintf(err, "mergescope %s: %s%s%s%s\n", cmd,
	        fixture_named ? "" : "--fixture ",
	        named || fixture_named ? "" : dir,
	        named || fixture_named ? "" : ": ", msg);
	return MS_EXIT_ERROR;
}

/* The fixture directory as the run records it (run.fixture_dir,
 * frozen.txt, the TUI's memory): absolute, so a report, the printed
 * merge-once command or the next session finds the same fixture from
 * any working directory. A relative --fixture was recorded as given, and
 * merge-once run from elsewhere could not find it. The path as given
 * when it cannot be resolved (it opened a moment ago). */
static void
fixture_abs(char *dst, size_t n, const char *given)
{
	char abs[PATH_MAX];
	const char *p = realpath(given, abs) ? abs : given;
	snprintf(dst, n, "%s", p);
}

int
ms__run_check(const ms__run_args *a, ms__run_cfg *cfg, FILE *err)
{
	memset(cfg, 0, sizeof(*cfg));
	ms__plugin_dir(cfg->plugin_dir, sizeof(cfg->plugin_dir));
	ms__self_exe(cfg->host_exe, sizeof(cfg->host_exe));
	cfg->variant = a->variant ? a->variant : MS_DEFAULT_VARIANT;
	if (strlen(cfg->variant) >= MS_EV_SPEC_MAX) {
		fprintf(err,
		        "mergescope %s: %s: the chain spec is %zu bytes; at "
		        "most %d are accepted\n",
		        a->cmd, a->variant_opt ? a->variant_opt : "variant",
		        strlen(cfg->variant), MS_EV_SPEC_MAX - 1);
		return MS_EXIT_USAGE;
	}
	ms_errbuf eb = { "" };
	int rc;

	enum ms_grace_policy policy = MS_GRACE_SELECTION;
	if (a->grace && ms_grace_policy_parse(a->grace, &policy)) {
		fprintf(err,
		        "mergescope %s: --grace-policy \"%s\": expected "
		        "selection or trace\n",
		        a->cmd, a->grace);
		return MS_EXIT_USAGE;
	}
	/* The fixture: a given directory must open; a preset must exist. */
	if (a->fixture) {
		ms_fixture *f = NULL;
		rc = ms_fixture_open(&f, a->fixture, &eb);
		if (rc)
			return ms__say_fixture_error(err, a->cmd, a->fixture,
			                             rc, &eb);
		snprintf(cfg->preset, sizeof(cfg->preset), "%s",
		         ms_fixture_get_info(f)->preset);
		ms_fixture_close(f);
		if ((rc = path_fits(a, "--fixture", a->fixture,
		                    sizeof(cfg->fixture_dir), err)))
			return rc;
		fixture_abs(cfg->fixture_dir, sizeof(cfg->fixture_dir),
		            a->fixture);
	} else {
		const char *p =
		        a->preset ? a->preset : MS_FIXTURE_DEFAULT_PRESET;
		if (!known_preset(p)) {
			fprintf(err, "mergescope %s: --preset \"%s\": ",
			        a->cmd, p);
			ms__say_presets(err);
			return MS_EXIT_USAGE;
		}
		snprintf(cfg->preset, sizeof(cfg->preset), "%s", p);
	}

	/* Then the variant with its plugins, and the limits. */
	ms_limits lim;
	ms_limits_detect(&lim, NULL, NULL);
	if (a->profile && ms_limits_apply_profile(&lim, a->profile, &eb)) {
		fprintf(err, "mergescope %s: --profile \"%s\": %s\n", a->cmd,
		        a->profile, eb.msg);
		return MS_EXIT_USAGE;
	}
	return check_variant(a, cfg->variant, cfg->plugin_dir, &lim, policy,
	                     err);
}

void
ms__profile_note(const char *cmd, const char *profile, FILE *err)
{
	ms_limits lim;
	char what[160];
	ms_limits_detect(&lim, NULL, NULL);
	if (profile && ms_limits_apply_profile(&lim, profile, NULL) == 0 &&
	    ms_limits_beyond(lim.profile_cpus, lim.profile_mem,
	                     lim.detected_cpus, lim.detected_mem, what,
	                     sizeof(what)))
		fprintf(err,
		        "mergescope %s: note: --profile \"%s\" asks %s: the "
		        "engine is sized for the profile but runs on what "
		        "there "
		        "is (no envelope gives more), so the figures are not "
		        "the profile's\n",
		        cmd, profile, what);
}

int
ms__run_prepare(const ms__run_args *a, ms__run_cfg *cfg, FILE *err)
{
	int rc = ms__run_check(a, cfg, err);
	if (rc)
		return rc;
	ms__profile_note(a->cmd, a->profile, err);
	ms_errbuf eb = { "" };

	/* Outputs. */
	if (a->json) {
		if ((rc = check_out_path(a, "--json", a->json, false, err)))
			return rc;
		if ((rc = ms_outfile_check(a->json, a->force, &eb)))
			return ms__say_out_error(err, a->cmd, "--json",
			                         a->json, rc, &eb);
	}
	size_t name_len = 0;
	if (a->db && !ms_evdb_name_fits(a->db, &name_len)) {
		fprintf(err,
		        "mergescope %s: --db %s: its file name is %zu bytes; "
		        "at most %d, as SQLite keeps files named after it with "
		        "-journal, -wal and -shm added beside it, and a file "
		        "name has at most 255 bytes\n",
		        a->cmd, a->db, name_len, MS_EV_DB_NAME_MAX);
		return MS_EXIT_USAGE;
	}
	size_t most = 0;
	if (a->db && !ms_evdb_path_fits(a->db, &name_len, &most)) {
		fprintf(err,
		        "mergescope %s: --db %s: its path is %zu bytes; SQLite "
		        "opens an event database of at most %zu (with "
		        "-journal added, its limit)\n",
		        a->cmd, a->db, name_len, most);
		return MS_EXIT_USAGE;
	}
	if (a->db) {
		if ((rc = check_out_path(a, "--db", a->db, true, err)) ||
		    (rc = path_fits(a, "--db", a->db, sizeof(cfg->db), err)))
			return rc;
		snprintf(cfg->db, sizeof(cfg->db), "%s", a->db);
	} else if ((rc = ms__default_db(cfg->db, sizeof(cfg->db), cfg->preset,
	                                cfg->variant, &eb))) {
		fprintf(err, "mergescope %s: %s\n", a->cmd, eb.msg);
		return MS_EXIT_ERROR;
	}
	/* A database in the cache's runs/ is this process's until it ends:
	 * `mergescope clean --runs` in another terminal leaves it alone. */
	if ((rc = ms__db_owner_take(cfg->db, &eb))) {
		fprintf(err, "mergescope %s: %s\n", a->cmd, eb.msg);
		return MS_EXIT_ERROR;
	}

	/* The JSON report never goes over the database the run writes. */
	if (a->json && ms_evdb_path_is_db(cfg->db, a->json)) {
		fprintf(err,
		        "mergescope %s: --json %s: that is the event database "
		        "of --db %s or a file SQLite keeps beside it (-wal, "
		        "-shm, -journal); choose another file\n",
		        a->cmd, a->json, cfg->db);
		return MS_EXIT_USAGE;
	}

	/* The work directory is deleted after the run, with whatever was
	 * written inside it. */
	const struct {
		const char *opt, *path;
	} outs[] = { { "--db", cfg->db }, { "--json", a->json } };
	for (size_t i = 0; a->work_dir && i < sizeof(outs) / sizeof(outs[0]);
	     i++) {
		if (!outs[i].path ||
		    !ms_fs_path_within(outs[i].path, a->work_dir))
			continue;
		fprintf(err,
		        "mergescope %s: %s %s lies inside --work-dir %s, which "
		        "is deleted after the run; give a path outside it\n",
		        a->cmd, outs[i].opt, outs[i].path, a->work_dir);
		return MS_EXIT_USAGE;
	}

	/* Work starts here: first what killed runs left behind, then the
	 * cached fixture, built when missing. */
	if ((rc = ms__scratch_sweep(err, a->cmd)))
		return rc;
	if (!a->fixture)
		return cached_fixture_locked(a, cfg, err);
	return 0;
}

int
ms__envelope_check(const char *cmd, const char *envelope, const char *profile,
                   FILE *err)
{
	if (!envelope || profile)
		return 0;
	fprintf(err,
	        "mergescope %s: --envelope %s needs --profile SPEC: the "
	        "envelope holds the profile's limits (e.g. --profile "
	        "cpus=2,mem=4g); without --profile a run has none\n",
	        cmd, envelope);
	return MS_EXIT_USAGE;
}

int
ms__run_opts_check(const ms_cmd *c, const ms__cmd_args *a, FILE *err)
{
	const ms__opt *o = a->o;
	int erc = ms__envelope_check(c->name, o[MS__RO_ENVELOPE].value,
	                             o[MS__RO_PROFILE].value, err);
	if (erc)
		return erc;
	if (o[MS__RO_FIXTURE].count && o[MS__RO_PRESET].count) {
		fprintf(err,
		        "mergescope %s: give --fixture or --preset, not both\n",
		        c->name);
		return MS_EXIT_USAGE;
	}
	if (o[MS__RO_VARIANT].count && o[MS__RO_CHAIN].count) {
		fprintf(err,
		        "mergescope %s: give --variant or --chain, not both\n",
		        c->name);
		return MS_EXIT_USAGE;
	}
	int64_t ns;
	const ms__opt *d = &o[MS__RO_WAIT_TIMEOUT];
	if (d->count &&
	    !(ms__parse_duration(d->value, MS__DURATION_MAX_S, &ns) &&
	      ns > 0)) {
		fprintf(err,
		        "mergescope %s: %s \"%s\": expected a duration, a "
		        "number with a unit s, m, h or d, like 90s, 10m or 1h "
		        "(more than 0, at most %lldd)\n",
		        c->name, d->name, d->value, MS__DURATION_MAX_S / 86400);
		return MS_EXIT_USAGE;
	}
	d = &o[MS__RO_CHECKPOINT_EVERY];
	if (d->count && !ms__parse_checkpoint_every(d->value, &ns)) {
		fprintf(err,
		        "mergescope %s: %s \"%s\": expected a duration, a "
		        "number with a unit s, m, h or d, like 90s, 10m or 1h "
		        "(0 for none, at most %lldd)\n",
		        c->name, d->name, d->value, MS__DURATION_MAX_S / 86400);
		return MS_EXIT_USAGE;
	}
	/* --speed in `run` too (which ignores it): a typo is named. */
	double x;
	d = &o[MS__RO_SPEED];
	if (d->count && !ms__parse_speed(d->value, &x)) {
		fprintf(err,
		        "mergescope %s: --speed \"%s\": expected a multiple "
		        "of real time like 60 or 60x (more than 0, at most "
		        "%.0f), or max\n",
		        c->name, d->value, MS__SPEED_MAX);
		return MS_EXIT_USAGE;
	}
	/* The --profile spec, before any input is looked at. */
	d = &o[MS__RO_PROFILE];
	if (d->count) {
		ms_limits lim;
		ms_errbuf eb = { "" };
		memset(&lim, 0, sizeof(lim));
		if (ms_limits_apply_profile(&lim, d->value, &eb)) {
			fprintf(err, "mergescope %s: --profile \"%s\": %s\n",
			        c->name, d->value, eb.msg);
			return MS_EXIT_USAGE;
		}
	}
	/* Every --break parses, in `run` too (which ignores them): a typo
	 * is named, not silently dropped. */
	size_t n = (size_t)o[MS__RO_BREAK].count;
	const char **v = n ? malloc(n * sizeof(*v)) : NULL;
	if (n && !v)
		return ms__say_oom(err, c->name, n * sizeof(*v),
		                   "its %zu --break options", n);
	n = ms__cmd_values(a, MS__RO_BREAK, v, n);
	int rc = 0;
	/* The replay holds MS__MAX_BREAKS: the TUI dropped the rest. */
	if (n > MS__MAX_BREAKS) {
		fprintf(err,
		        "mergescope %s: --break \"%s\": breakpoint %zu; "
		        "expected at most %d\n",
		        c->name, v[MS__MAX_BREAKS], (size_t)MS__MAX_BREAKS + 1,
		        MS__MAX_BREAKS);
		rc = MS_EXIT_USAGE;
	}
	for (size_t i = 0; i < n && rc == 0; i++) {
		ms_breakpoint bp;
		ms_errbuf eb = { "" };
		if (ms_bp_parse(v[i], &bp, &eb)) {
			fprintf(err, "mergescope %s: --break \"%s\": %s\n",
			        c->name, v[i], eb.msg);
			rc = MS_EXIT_USAGE;
		}
	}
	free(v);
	return rc;
}

bool
ms__parse_duration(const char *s, int64_t max_s, int64_t *ns)
{
	/* Integers only: strtod would also take "1e1", "0x10", "inf" and
	 * a leading sign or space, and round what it reads. */
	const char *p = s;
	uint64_t whole = 0, frac = 0, scale = 1;
	bool frac_rest = false; /* a non-zero digit past the ninth */
	if (!p || *p < '0' || *p > '9' || max_s < 0 ||
	    max_s > INT64_MAX / 1000000000)
		return false;
	for (; *p >= '0' && *p <= '9'; p++) {
		whole = whole * 10 + (uint64_t)(*p - '0');
		if (whole > (uint64_t)max_s)
			return false;
	}
	if (*p == '.') {
		p++;
		if (*p < '0' || *p > '9')
			return false;
		for (; *p >= '0' && *p <= '9'; p++)
			if (scale < 1000000000u) {
				frac = frac * 10 + (uint64_t)(*p - '0');
				scale *= 10;
			} else if (*p != '0') {
				frac_rest = true;
			}
	}
	uint64_t unit = 1;
	if (*p == 's')
		p++;
	else if (*p == 'm')
		unit = 60, p++;
	else if (*p == 'h')
		unit = 3600, p++;
	else if (*p == 'd')
		unit = 86400, p++;
	if (*p || whole * unit > (uint64_t)max_s)
		return false;
	/* frac / scale of a unit, in nanoseconds: exact, as 1e9 / scale is
	 * whole and frac * (1e9 / scale) < 1e9. */
	uint64_t total = whole * unit * 1000000000u +
	                 frac * (1000000000u / scale) * unit + frac_rest;
	if (total > (uint64_t)max_s * 1000000000u)
		return false;
	*ns = (int64_t)total;
	return true;
}

bool
ms__parse_checkpoint_every(const char *s, int64_t *ns)
{
	*ns = 0;
	return ms__parse_duration(s, MS__DURATION_MAX_S, ns);
}

void
ms__run_args_from(ms__run_args *a, const ms_cmd *c, const ms__opt *o)
{
	*a = (ms__run_args){
		.cmd = c->name,
		.fixture = o[MS__RO_FIXTURE].value,
		.preset = o[MS__RO_PRESET].value,
		.variant = o[MS__RO_VARIANT].count ? o[MS__RO_VARIANT].value
		                                   : o[MS__RO_CHAIN].value,
		.variant_opt = o[MS__RO_VARIANT].count ? "--variant"
		               : o[MS__RO_CHAIN].count ? "--chain"
		                                       : NULL,
		.grace = o[MS__RO_GRACE].value,
		.staging = o[MS__RO_STAGING].value,
		.profile = o[MS__RO_PROFILE].value,
		.work_dir = o[MS__RO_WORKDIR].value,
		.db = o[MS__RO_DB].value,
		.json = o[MS__RO_JSON].value,
		.force = o[MS__RO_FORCE].count > 0,
		.freeze_at = o[MS__RO_FREEZE_AT].value,
		.serial = o[MS__RO_SERIAL].count > 0,
		.allow_fail_open = o[MS__RO_ALLOW_FAIL_OPEN].count > 0,
		.cache = o[MS__RO_CACHE].value,
		.envelope = o[MS__RO_ENVELOPE].value,
	};
	if (o[MS__RO_WAIT_TIMEOUT].count)
		ms__parse_duration(o[MS__RO_WAIT_TIMEOUT].value,
		                   MS__DURATION_MAX_S, &a->wait_timeout_ns);
	a->checkpoint_every_set = o[MS__RO_CHECKPOINT_EVERY].count > 0;
	a->checkpoint_every_ns = 0;
	if (a->checkpoint_every_set)
		ms__parse_checkpoint_every(o[MS__RO_CHECKPOINT_EVERY].value,
		                           &a->checkpoint_every_ns);
	a->plugin_host = ms__plugin_host_mode(o[MS__RO_PLUGIN_HOST].value);
}

ms__run_cfg *
ms__run_begin(const ms_cmd *c, const ms__opt *o, ms__run_args *a, FILE *err,
              int *rc)
{
	ms__run_args_from(a, c, o);
	ms__run_cfg *cfg = malloc(sizeof(*cfg));
	if (!cfg) {
		*rc = ms__say_oom(err, c->name, sizeof(*cfg),
		                  "the run's configuration");
		return NULL;
	}
	*rc = ms__run_prepare(a, cfg, err);
	if (*rc) {
		free(cfg);
		return NULL;
	}
	return cfg;
}

void
ms__rerun_name(char *buf, size_t n, const char *path, unsigned k, bool ext,
               size_t name_max)
{
	const char *slash = strrchr(path, '/');
	size_t base = slash ? (size_t)(slash - path) + 1 : 0;
	size_t len = strlen(path);
	const char *dot = ext ? strrchr(path + base, '.') : NULL;
	if (dot == path + base)
		dot = NULL; /* a hidden file's name, not an extension */
	char sfx[24];
	size_t sl = (size_t)snprintf(sfx, sizeof(sfx), ".rerun-%u", k);
	const char *tail = dot ? dot : "";
	if (strlen(tail) + sl >= name_max)
		tail = "";
	else if (dot)
		len = (size_t)(dot - path);
	size_t tl = strlen(tail);
	if (len - base + sl + tl > name_max)
		len = base + name_max - sl - tl;
	snprintf(buf, n, "%.*s%s%s", (int)len, path, sfx, tail);
}

void
ms__rerun_db_name(char *buf, size_t n, const char *path, unsigned k)
{
	size_t len = 0, most = 0;
	ms__rerun_name(buf, n, path, k, true, MS_EV_DB_NAME_MAX);
	if (ms_evdb_path_fits(buf, &len, &most))
		return;
	const char *slash = strrchr(buf, '/');
	size_t name = strlen(slash ? slash + 1 : buf), over = len - most;
	char sfx[24];
	size_t sl = (size_t)snprintf(sfx, sizeof(sfx), ".rerun-%u", k);
	/* --db fitted, so the suffix is what passes; keep a byte of stem. */
	if (name > over + sl)
		ms__rerun_name(buf, n, path, k, true, name - over);
}

void
ms__replay_opts_from(ms_replay_opts *ro, const ms__run_args *a,
                     const ms__run_cfg *cfg)
{
	memset(ro, 0, sizeof(*ro));
	ro->fixture_dir = cfg->fixture_dir;
	ro->db_path = cfg->db;
	ro->variant = cfg->variant;
	ro->plugin_dir = cfg->plugin_dir;
	ro->grace_policy = a->grace;
	ro->staging = a->staging;
	ro->serial = a->serial;
	ro->allow_fail_open = a->allow_fail_open;
	ro->profile = a->profile;
	ro->work_dir = a->work_dir;
	ro->wait_timeout_ns = a->wait_timeout_ns;
	ro->cache_label = a->cache;
	ro->envelope = a->envelope;
	ro->plugin_host = a->plugin_host;
	ro->plugin_host_exe = cfg->host_exe;
	ro->created = ms__supervise_created;
}

enum ms_plugin_host_mode
ms__plugin_host_mode(const char *value)
{
	/* The parser let only the option's choices through. */
	enum ms_plugin_host_mode m = MS_PLUGIN_HOST_INPROC;
	ms_plugin_host_mode_parse(value ? value : MS_DEFAULT_PLUGIN_HOST, &m);
	return m;
}

void
ms__self_exe(char *buf, size_t n)
{
	ssize_t k = n ? readlink("/proc/self/exe", buf, n - 1) : -1;
	if (k < 0)
		k = 0;
	if (n)
		buf[k] = '\0';
}

void
ms__shell_word(FILE *f, const char *s, bool always)
{
	if (!always && *s &&
	    strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	              "0123456789_@%+=:,./-") == strlen(s)) {
		fputs(s, f);
		return;
	}
	fputc('\'', f);
	for (; *s; s++)
		if (*s == '\'')
			fputs("'\\''", f);
		else
			fputc(*s, f);
	fputc('\'', f);
}

int
ms__say_oom(FILE *err, const char *cmd, size_t bytes, const char *fmt, ...)
{
	char what[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	fprintf(err, "mergescope %s: out of memory for %s (%zu bytes)\n", cmd,
	        what, bytes);
	return MS_EXIT_ERROR;
}

bool
ms__msg_names_path(const char *m, const char *path)
{
	size_t k = path ? strlen(path) : 0;
	if (k && strncmp(m, path, k) == 0 && m[k] == ':')
		return true;
	/* Cut between its head and its cause (ms_fail): a head of the
	 * path, then " [...] ". */
	const char *gap = strstr(m, " [...] ");
	size_t h = gap ? (size_t)(gap - m) : 0;
	return h && h < k && strncmp(m, path, h) == 0;
}

int
ms__say_out_error(FILE *err, const char *cmd, const char *opt,
                  const char *path, int rc, const ms_errbuf *eb)
{
	const char *m = eb && eb->msg[0] ? eb->msg : ms_strerror(rc);
	if (ms__msg_names_path(m, path))
		fprintf(err, "mergescope %s: %s %s\n", cmd, opt, m);
	else
		fprintf(err, "mergescope %s: %s\n", cmd, m);
	return MS_EXIT_ERROR;
}

void
ms__run_failed_text(char *line, size_t n, const ms_replay_status *st)
{
	if (st->preparing)
		snprintf(line, n, "the run failed: %s (before the day began)",
		         st->error);
	else
		snprintf(line, n,
		         "the run failed: %s (in the %s phase, after %llu of "
		         "%llu publications and %llu merges)",
		         st->error, ms_replay_phase_name(st->phase),
		         (unsigned long long)st->pub_done,
		         (unsigned long long)st->pub_total,
		         (unsigned long long)st->merges_done);
}

int
ms__say_db_error(FILE *err, const char *cmd, const char *opt,
                 const char *path, int rc, const ms_errbuf *eb)
{
	static const char lead[] = "event database ";
	const char *m = eb && eb->msg[0] ? eb->msg : ms_strerror(rc);
	size_t k = sizeof(lead) - 1, n = strlen(path);
	if (strncmp(m, lead, k) == 0 && strncmp(m + k, path, n) == 0 &&
	    m[k + n] == ':' && m[k + n + 1] == ' ')
		m += k + n + 2;
	fprintf(err, "mergescope %s: %s %s: %s\n", cmd, opt, path, m);
	return MS_EXIT_ERROR;
}

void
ms__say_replay_error(FILE *err, const ms__run_args *a, int rc,
                     const ms_errbuf *eb)
{
	const char *msg = eb->msg[0] ? eb->msg : ms_strerror(rc);
	/* The replay names the shard directory: when it is the one given
	 * with --work-dir, the line names the option instead. */
	static const char lead[] = "shard directory ";
	size_t k = sizeof(lead) - 1;
	size_t w = a->work_dir ? strlen(a->work_dir) : 0;
	if (w && strncmp(msg, lead, k) == 0 &&
	    strncmp(msg + k, a->work_dir, w) == 0 &&
	    (msg[k + w] == ' ' || msg[k + w] == ':'))
		fprintf(err, "mergescope %s: --work-dir %s\n", a->cmd, msg + k);
	else
		fprintf(err, "mergescope %s: %s\n", a->cmd, msg);
}
