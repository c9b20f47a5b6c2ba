/*
 * test_fs.c - the shared file-system helpers (core/ms_fs.h): mkdir -p,
 * rm -r, the parent of a path and directory fsync, with the messages and
 * errno a caller words its own error from.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ms_fs.h"
#include "testdir.h"

static char base[4096];

static int
setup(void **state)
{
	(void)state;
	return ms_test_mkdtemp(base, sizeof(base), "ms-fs") ? 0 : -1;
}

static int
teardown(void **state)
{
	(void)state;
	return ms_fs_rm_tree(base, NULL) == 0 ? 0 : -1;
}

static bool
is_dir(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool
exists(const char *p)
{
	struct stat st;
	return lstat(p, &st) == 0;
}

static void
touch(const char *p)
{
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "x", 1), 1);
	close(fd);
}

static void
test_mkdir_p_creates_every_level(void **state)
{
	(void)state;
	char p[4200];
	snprintf(p, sizeof(p), "%s/a/b/c", base);
	assert_int_equal(ms_fs_mkdir_p(p, 0755, NULL), 0);
	assert_true(is_dir(p));
	/* Again: an existing directory is success. */
	assert_int_equal(ms_fs_mkdir_p(p, 0755, NULL), 0);
	/* A trailing slash is the same directory. */
	strcat(p, "/");
	assert_int_equal(ms_fs_mkdir_p(p, 0755, NULL), 0);
}

static void
test_mkdir_p_names_the_blocking_file(void **state)
{
	(void)state;
	char f[4200], p[4300];
	snprintf(f, sizeof(f), "%s/file", base);
	touch(f);
	ms_errbuf eb = { "" };
	/* The file itself: it exists but is no directory. */
	errno = 0;
	int rc = ms_fs_mkdir_p(f, 0755, &eb);
	assert_int_equal(rc, MS_ERR_IO);
	assert_int_equal(errno, ENOTDIR);
	assert_non_null(strstr(eb.msg, f));
	/* Below it: the failing component is named. */
	snprintf(p, sizeof(p), "%s/sub/dir", f);
	errno = 0;
	rc = ms_fs_mkdir_p(p, 0755, &eb);
	assert_true(rc < 0);
	assert_int_equal(errno, ENOTDIR);
	char want[4400];
	snprintf(want, sizeof(want), "%s/sub: %s", f, strerror(ENOTDIR));
	assert_string_equal(eb.msg, want);
	assert_int_equal(ms_fs_mkdir_p("", 0755, &eb), MS_ERR_INVAL);
}

static void
test_rm_tree_removes_everything(void **state)
{
	(void)state;
	char root[4200], p[4300];
	snprintf(root, sizeof(root), "%s/tree", base);
	snprintf(p, sizeof(p), "%s/x/y/z", root);
	assert_int_equal(ms_fs_mkdir_p(p, 0755, NULL), 0);
	snprintf(p, sizeof(p), "%s/x/y/z/f", root);
	touch(p);
	snprintf(p, sizeof(p), "%s/top", root);
	touch(p);
	/* A link to something outside is removed, not followed. */
	char outside[4200], link[4300];
	snprintf(outside, sizeof(outside), "%s/outside", base);
	touch(outside);
	snprintf(link, sizeof(link), "%s/x/link", root);
	assert_int_equal(symlink(outside, link), 0);
	assert_int_equal(ms_fs_rm_tree(root, NULL), 0);
	assert_false(exists(root));
	assert_true(exists(outside));
	/* Gone already, and a plain file. */
	assert_int_equal(ms_fs_rm_tree(root, NULL), 0);
	assert_int_equal(ms_fs_rm_tree(outside, NULL), 0);
	assert_false(exists(outside));
}

/* rmdir, and for the directory named by late_dir (once) a file created
 * in it just before: what a writer still working in a tree being removed
 * does (the other threads of a process dying of a plugin's crash, while
 * its watcher removes the scratch shard). */
int __real_rmdir(const char *path);
int __wrap_rmdir(const char *path);
static char late_dir[4300];
static int late_files;

int
__wrap_rmdir(const char *path)
{
	if (late_dir[0] && !strcmp(path, late_dir) && late_files < 1) {
		char p[4400];
		snprintf(p, sizeof(p), "%s/late-%d", path, late_files++);
		touch(p);
	}
	return __real_rmdir(path);
}

/* An entry created in a directory while rm_tree walks it is removed too:
 * the directory is walked again. Before, the removal stopped with
 * "Directory not empty" and left the tree (a crash's watcher said so
 * about the scratch shard in one run of two). */
static void
test_rm_tree_removes_entries_created_meanwhile(void **state)
{
	(void)state;
	char root[4200], p[4300];
	snprintf(root, sizeof(root), "%s/busy", base);
	snprintf(late_dir, sizeof(late_dir), "%s/parts", root);
	assert_int_equal(ms_fs_mkdir_p(late_dir, 0755, NULL), 0);
	snprintf(p, sizeof(p), "%s/parts/a", root);
	touch(p);
	ms_errbuf eb = { "" };
	int rc = ms_fs_rm_tree(root, &eb);
	late_dir[0] = '\0';
	if (rc)
		fail_msg("rm_tree: %s", eb.msg);
	assert_int_equal(late_files, 1);
	assert_false(exists(root));
}

static void
test_rm_tree_stops_at_the_depth_limit(void **state)
{
	(void)state;
	char root[4200], p[4200];
	snprintf(root, sizeof(root), "%s/deep", base);
	size_t n = (size_t)snprintf(p, sizeof(p), "%s", root);
	for (int i = 0; i <= MS_FS_MAX_DEPTH; i++)
		n += (size_t)snprintf(p + n, sizeof(p) - n, "/d");
	assert_int_equal(ms_fs_mkdir_p(p, 0755, NULL), 0);
	ms_errbuf eb = { "" };
	assert_int_equal(ms_fs_rm_tree(root, &eb), MS_ERR_RANGE);
	/* Said as it is, not as the ELOOP that errno holds. */
	assert_non_null(strstr(eb.msg, "remove "));
	assert_non_null(strstr(eb.msg, ": more than 16 directory levels below "
	                               "the one removed: left in place"));
	assert_null(strstr(eb.msg, strerror(ELOOP)));
	assert_true(exists(p));
	/* One level less is within the limit. */
	p[strlen(p) - 2] = '\0';
	assert_int_equal(ms_fs_rm_tree(p, NULL), 0);
	assert_int_equal(ms_fs_rm_tree(root, NULL), 0);
	assert_false(exists(root));
}

static void
test_parent(void **state)
{
	(void)state;
	static const struct {
		const char *path, *parent;
	} v[] = {
		{ "a/b/c", "a/b" }, { "a/b/", "a" },  { "name", "." },
		{ "name/", "." },   { "/a", "/" },    { "/", "/" },
		{ "/x/y", "/x" },   { "a//b", "a/" },
	};
	char out[64];
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		assert_int_equal(ms_fs_parent(out, sizeof(out), v[i].path), 0);
		assert_string_equal(out, v[i].parent);
	}
	char tiny[3];
	assert_int_equal(ms_fs_parent(tiny, sizeof(tiny), "abc/d"),
	                 MS_ERR_RANGE);
}

static void
test_count_entries(void **state)
{
	(void)state;
	char d[4200], p[4300];
	snprintf(d, sizeof(d), "%s/count", base);
	/* Missing: 0. */
	assert_int_equal(ms_fs_count_entries(d), 0);
	assert_int_equal(ms_fs_mkdir_p(d, 0755, NULL), 0);
	assert_int_equal(ms_fs_count_entries(d), 0);
	snprintf(p, sizeof(p), "%s/.hidden", d);
	touch(p);
	snprintf(p, sizeof(p), "%s/sub", d);
	assert_int_equal(ms_fs_mkdir_p(p, 0755, NULL), 0);
	/* A dot file and a directory count; "." and ".." do not. */
	assert_int_equal(ms_fs_count_entries(d), 2);
}

static void
test_fsync_dir(void **state)
{
	(void)state;
	char p[4200];
	assert_int_equal(ms_fs_fsync_dir(base, NULL), 0);
	snprintf(p, sizeof(p), "%s/file", base);
	touch(p);
	assert_int_equal(ms_fs_fsync_parent(p, NULL), 0);
	ms_errbuf eb = { "" };
	snprintf(p, sizeof(p), "%s/missing", base);
	errno = 0;
	assert_int_equal(ms_fs_fsync_dir(p, &eb), MS_ERR_IO);
	assert_int_equal(errno, ENOENT);
	char want[4300];
	snprintf(want, sizeof(want), "%s: fsync: %s", p, strerror(ENOENT));
	assert_string_equal(eb.msg, want);
}

/* Inside or not, through symbolic links, relative paths and parts of
 * either path that do not exist yet. */
static void
test_path_within(void **state)
{
	(void)state;
	char w[4200], p[4300], l[4200], q[4300];
	snprintf(w, sizeof(w), "%s/work", base);
	assert_int_equal(ms_fs_mkdir_p(w, 0755, NULL), 0);

	snprintf(p, sizeof(p), "%s/ev.db", w);
	assert_true(ms_fs_path_within(p, w));
	assert_true(ms_fs_path_within(w, w));
	snprintf(p, sizeof(p), "%s/not/yet/ev.db", w);
	assert_true(ms_fs_path_within(p, w));
	snprintf(p, sizeof(p), "%s/./sub/../ev.db", w);
	assert_true(ms_fs_path_within(p, w));
	/* A sibling whose name starts with the directory's is outside. */
	snprintf(p, sizeof(p), "%s/work2/ev.db", base);
	assert_false(ms_fs_path_within(p, w));
	snprintf(p, sizeof(p), "%s/ev.db", base);
	assert_false(ms_fs_path_within(p, w));
	snprintf(p, sizeof(p), "%s/../ev.db", w);
	assert_false(ms_fs_path_within(p, w));

	/* Through a link to the directory, either way round. */
	snprintf(l, sizeof(l), "%s/link", base);
	assert_int_equal(symlink(w, l), 0);
	snprintf(p, sizeof(p), "%s/ev.db", l);
	assert_true(ms_fs_path_within(p, w));
	snprintf(q, sizeof(q), "%s/ev.db", w);
	assert_true(ms_fs_path_within(q, l));

	/* A directory that does not exist yet holds what is written below
	 * it. */
	snprintf(l, sizeof(l), "%s/new", base);
	snprintf(p, sizeof(p), "%s/new/x/ev.db", base);
	assert_true(ms_fs_path_within(p, l));
	assert_false(ms_fs_path_within(w, l));

	/* Relative paths, from the working directory. */
	char cwd[4096];
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	assert_int_equal(chdir(base), 0);
	assert_true(ms_fs_path_within("work/ev.db", w));
	assert_true(ms_fs_path_within("ev.db", base));
	assert_false(ms_fs_path_within("ev.db", "work"));
	assert_true(ms_fs_path_within("./work/ev.db", "work/"));
	assert_int_equal(chdir(cwd), 0);

	assert_true(ms_fs_path_within(p, "/"));
	assert_false(ms_fs_path_within("", w));
	assert_false(ms_fs_path_within(NULL, w));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mkdir_p_creates_every_level),
		cmocka_unit_test(test_mkdir_p_names_the_blocking_file),
		cmocka_unit_test(test_rm_tree_removes_everything),
		cmocka_unit_test(
		        test_rm_tree_removes_entries_created_meanwhile),
		cmocka_unit_test(test_rm_tree_stops_at_the_depth_limit),
		cmocka_unit_test(test_parent),
		cmocka_unit_test(test_fsync_dir),
		cmocka_unit_test(test_count_entries),
		cmocka_unit_test(test_path_within),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
