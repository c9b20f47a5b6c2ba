/*
 * test_cli_fixture.c - `mergescope fixture build` through ms_cli_main, as
 * the binary runs it, in a directory of its own (the current directory and
 * XDG_CACHE_HOME both inside it, so whatever a command leaves behind is
 * seen): what it refuses before anything is created (a seed that is not
 * a plain decimal in range, an unknown preset, an empty --out, an --out
 * under a file), each with one line naming the option or path and what
 * was expected, and no lock file or directory left; no build leaves its
 * lock file beside the fixture, and the lock keeps one build of a
 * directory at a time although its file goes; a build stopped by SIGINT
 * or SIGTERM removes what it made and says so, exiting 128 + N, and what
 * a build killed with SIGKILL left is removed, named, by the next build
 * of the same directory; a check stopped by SIGINT, SIGTERM or SIGHUP
 * likewise removes its scratch shard and exits 128 + N; every error of
 * `fixture build` names "fixture build", and an --out that cannot be
 * made is refused for that first; a fixture already at
 * --out or in the cache reused only when every build option matches and
 * every part file is as built, and otherwise refused naming what differs
 * and the directory, or the damage and how to build it again; a wrong
 * --fixture path named by `run` and `tui` as `fixture check` names it;
 * a manifest missing a table named as a damaged fixture; and the run
 * options' errors naming --chain or --variant as given.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cli.h"
#include "cli_testlib.h"
#include "ms_fixture.h"
#include "ms_tui.h"
#include "testdir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sqlite3.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define EXIT_USAGE 64
#define EXIT_ERROR 2

static char root[256], cwd[300], cache[300], home[4096];
static char out_text[65536], err_text[16384];

/* Run the CLI on a NULL-terminated argument list; capture both streams. */
#define cli(...)                                                               \
	ct_cli(out_text, sizeof(out_text), err_text, sizeof(err_text),         \
	       __VA_ARGS__)

static int
cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The names in dir, sorted, separated by one space ("" when empty or
 * missing). */
static const char *
listing(const char *dir)
{
	static char buf[4096];
	char *names[64];
	size_t n = 0, used = 0;
	DIR *d = opendir(dir);
	buf[0] = '\0';
	if (!d)
		return buf;
	for (struct dirent *e; (e = readdir(d)) && n < 64;)
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			names[n++] = strdup(e->d_name);
	closedir(d);
	qsort(names, n, sizeof(names[0]), cmp_str);
	for (size_t i = 0; i < n; i++) {
		used += (size_t)snprintf(buf + used, sizeof(buf) - used, "%s%s",
		                         i ? " " : "", names[i]);
		free(names[i]);
	}
	return buf;
}

/* The cache's mergescope directory. */
static const char *
cache_dir(void)
{
	static char buf[400];
	snprintf(buf, sizeof(buf), "%s/mergescope", cache);
	return buf;
}

/* One smoke fixture, seed 1, empty opening, at cwd/s1, built by the
 * command under test. */
static int
setup(void **state)
{
	(void)state;
	if (!getcwd(home, sizeof(home)) ||
	    !ms_test_mkdtemp(root, sizeof(root), "cli-fixture"))
		return -1;
	snprintf(cwd, sizeof(cwd), "%s/cwd", root);
	snprintf(cache, sizeof(cache), "%s/cache", root);
	if (mkdir(cwd, 0777) || mkdir(cache, 0777) || chdir(cwd))
		return -1;
	setenv("XDG_CACHE_HOME", cache, 1);
	int rc = cli("fixture", "build", "--preset", "smoke", "--seed", "1",
	             "--out", "s1", NULL);
	if (rc) {
		fprintf(stderr, "%s", err_text);
		return -1;
	}
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	if (chdir(home))
		return -1;
	return ms_test_rmtree(root);
}

/* The fixture at dir: its opening ("" when it does not open). */
static const char *
opening_of(const char *dir)
{
	static char buf[16];
	ms_fixture *f = NULL;
	ms_errbuf eb = { "" };
	buf[0] = '\0';
	if (ms_fixture_open(&f, dir, &eb) == 0)
		snprintf(buf, sizeof(buf), "%s",
		         ms_fixture_get_info(f)->opening);
	ms_fixture_close(f);
	return buf;
}

/* A seed is a plain decimal from 0 to 2^64-1: no sign, space, leading
 * zero or other base, and nothing out of range is clamped. */
static void
test_seed_plain_decimal(void **state)
{
	(void)state;
	static const char *const bad[] = {
		"18446744073709551616",
		"99999999999999999999",
		" 5",
		"5 ",
		"+5",
		"-1",
		"05",
		"0x5",
		"5e3",
		"",
		"\t5",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(cli("fixture", "build", "--preset", "smoke",
		                     "--seed", bad[i], "--out", "x", NULL),
		                 EXIT_USAGE);
		char want[64];
		snprintf(want, sizeof(want), "--seed \"%s\": expected", bad[i]);
		assert_non_null(strstr(err_text, want));
		assert_non_null(
		        strstr(err_text, "from 0 to 18446744073709551615"));
		assert_string_equal(out_text, "");
	}
	/* Both ends of the range pass the parser: refused only after it,
	 * for the file at --out. */
	assert_int_equal(ms_test_put("f", "x\n"), 0);
	static const char *const good[] = { "0", "18446744073709551615" };
	for (size_t i = 0; i < 2; i++) {
		assert_int_equal(cli("fixture", "build", "--preset", "smoke",
		                     "--seed", good[i], "--out", "f", NULL),
		                 EXIT_ERROR);
		assert_non_null(strstr(err_text, "--out f exists and does not "
		                                 "open as a fixture (not a "
		                                 "directory)"));
	}
	assert_int_equal(unlink("f"), 0);
	assert_string_equal(listing("."), "s1");
	assert_string_equal(listing(cache_dir()), "");
}

/* --out under a regular file: one line naming the path and why, and
 * nothing made. */
static void
test_out_under_a_file(void **state)
{
	(void)state;
	assert_int_equal(ms_test_put("a", "x\n"), 0);
	assert_int_equal(cli("fixture", "build", "--preset", "smoke", "--seed",
	                     "1", "--out", "a/b", NULL),
	                 EXIT_ERROR);
	assert_non_null(strstr(err_text, "--out a/b: "));
	assert_non_null(strstr(err_text, "a: Not a directory"));
	assert_int_equal(cli("fixture", "build", "--preset", "smoke", "--seed",
	                     "1", "--out", "a/c/b", NULL),
	                 EXIT_ERROR);
	assert_non_null(strstr(err_text, "--out a/c/b: "));
	assert_non_null(strstr(err_text, "Not a directory"));
	assert_int_equal(unlink("a"), 0);
	assert_string_equal(listing("."), "s1");
}

/* --out '' is a usage error naming the option; no ".lock" appears. */
static void
test_out_empty(void **state)
{
	(void)state;
	assert_int_equal(cli("fixture", "build", "--preset", "smoke", "--seed",
	                     "1", "--out", "", NULL),
	                 EXIT_USAGE);
	assert_string_equal(err_text, "mergescope fixture build: --out \"\": "
	                              "expected a directory name\n");
	assert_int_equal(cli("fixture", "build", "--preset", "smoke", "--seed",
	                     "1", "--out=", NULL),
	                 EXIT_USAGE);
	assert_string_equal(listing("."), "s1");
}

/* An unknown preset is refused before the cache (or --out) gets a lock
 * of its name, with the real range and the named presets. */
static void
test_unknown_preset(void **state)
{
	(void)state;
	static const char *const bad[] = { "day-0x",  "bogus", "day-1001x",
		                           "day-01x", "",      "day-2X" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(cli("fixture", "build", "--preset", bad[i],
		                     "--seed", "1", NULL),
		                 EXIT_USAGE);
		char want[64];
		snprintf(want, sizeof(want), "--preset \"%s\": expected",
		         bad[i]);
		assert_non_null(strstr(err_text, want));
		/* in the words run and bench use (one command said "for N
		 * from", the other "one of day-1x day-2x smoke or") */
		assert_non_null(strstr(err_text, "expected day-1x, day-2x, "
		                                 "smoke, or day-<N>x (N from "
		                                 "1 to 1000)\n"));
		assert_null(strstr(err_text, ">="));
		assert_int_equal(cli("fixture", "build", "--preset", bad[i],
		                     "--seed", "1", "--out", "p", NULL),
		                 EXIT_USAGE);
	}
	assert_string_equal(listing(cache_dir()), "");
	assert_string_equal(listing("."), "s1");
	/* --scale says the same range. */
	assert_int_equal(
	        cli("fixture", "build", "--scale", "1001", "--seed", "1", NULL),
	        EXIT_USAGE);
	assert_non_null(strstr(err_text, "from 1 to 1000"));
	assert_string_equal(listing(cache_dir()), "");
}

/* Every line err_text holds begins with prefix. */
static void
assert_each_line_begins(const char *prefix)
{
	size_t n = strlen(prefix);
	assert_true(err_text[0] != '\0');
	for (const char *l = err_text; *l;) {
		if (strncmp(l, prefix, n) != 0)
			fail_msg("expected \"%s\" at the start of: %s", prefix,
			         l);
		const char *nl = strchr(l, '\n');
		l = nl ? nl + 1 : l + strlen(l);
	}
}

/* Every refusal of `fixture build`, the parser's and the build's own,
 * names the command "fixture build"; `fixture check`'s name "fixture
 * check". */
static void
test_errors_name_the_subcommand(void **state)
{
	(void)state;
	static const char *const cases[][8] = {
		{ "--preset", "smoke" },
		{ "--seed", "1" },
		{ "--preset", "smoke", "--seed", "1", "--bogus" },
		{ "--preset", "smoke", "--seed", "1", "--opening", "cold" },
		{ "--preset", "smoke", "--seed", "1", "--seed", "2" },
		{ "--preset", "smoke", "--seed" },
		{ "--preset", "smoke", "--seed", "1", "--dictionary=yes" },
		{ "--preset", "bogus", "--seed", "1" },
		{ "--scale", "0", "--seed", "1" },
		{ "--preset", "smoke", "--seed", "x" },
		{ "--preset", "smoke", "--scale", "1", "--seed", "1" },
		{ "--preset", "smoke", "--seed", "1", "--out", "" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *const *a = cases[i];
		assert_int_equal(cli("fixture", "build", a[0], a[1], a[2], a[3],
		                     a[4], a[5], a[6], a[7], NULL),
		                 EXIT_USAGE);
		assert_each_line_begins("mergescope fixture build: ");
	}
	/* The parser's own words, named as the build's. */
	assert_int_equal(cli("fixture", "build", "--preset", "smoke", NULL),
	                 EXIT_USAGE);
	assert_string_equal(err_text, "mergescope fixture build: option "
	                              "--seed N is required\n");
	/* A value given wrong is named before an option left out: `--scale
	 * abc` without --seed said only that --seed was required. */
	assert_int_equal(cli("fixture", "build", "--scale", "abc", "--out",
	                     "d", NULL),
	                 EXIT_USAGE);
	assert_string_equal(err_text, "mergescope fixture build: --scale "
	                              "\"abc\": expected a whole number from "
	                              "1 to 1000\n");
	assert_int_equal(cli("fixture", "build", "--preset", "nope", NULL),
	                 EXIT_USAGE);
	assert_non_null(strstr(err_text, "--preset \"nope\": expected "));
	assert_int_equal(cli("fixture", "build", "--opening", "cold",
	                     "--preset", "smoke", NULL),
	                 EXIT_USAGE);
	assert_non_null(strstr(err_text, "--opening \"cold\": expected "));
	/* The same in the parser of every command: a choice before a
	 * required option (`export --format xml` said --db was required). */
	assert_int_equal(cli("export", "--format", "xml", NULL), EXIT_USAGE);
	assert_string_equal(err_text, "mergescope export: --format \"xml\": "
	                              "expected jsonl, csv or chrome\n");
	assert_int_equal(cli("fixture", "check", NULL), EXIT_USAGE);
	assert_each_line_begins("mergescope fixture check: ");
	/* An empty name is no directory: it was looked for as one, and
	 * "/manifest.sqlite" was said missing (exit 2). */
	assert_int_equal(cli("fixture", "check", "", NULL), EXIT_USAGE);
	assert_string_equal(err_text, "mergescope fixture check: \"\": "
	                              "expected a directory name\n");
	assert_string_equal(listing("."), "s1");
	assert_string_equal(listing(cache_dir()), "");
}

/* An --out whose directory cannot be made is refused for that, naming
 * the path and the system's reason, before the room of an ancestor is
 * judged (/proc has no room, and nothing can be made in it). */
static void
test_out_cannot_be_made(void **state)
{
	(void)state;
	assert_int_equal(cli("fixture", "build", "--preset", "smoke", "--seed",
	                     "1", "--out", "/proc/nope/x", NULL),
	                 EXIT_ERROR);
	assert_non_null(strstr(err_text, "mergescope fixture build: --out "
	                                 "/proc/nope/x: cannot make the "
	                                 "directory it goes in (/proc/nope: "));
	assert_null(strstr(err_text, "free"));
	/* That one line only. */
	assert_ptr_equal(strchr(err_text, '\n'),
	                 err_text + strlen(err_text) - 1);
	assert_string_equal(out_text, "");
	/* A directory there that nothing can be written in (read-only, no
	 * permission; /proc takes no new file, from root either) is
	 * refused for that, not for its room: this read "smoke needs about
	 * 7.2 MiB for its files and /proc has 0.0 MiB free". */
	assert_int_equal(cli("fixture", "build", "--preset", "smoke", "--seed",
	                     "1", "--out", "/proc/x", NULL),
	                 EXIT_ERROR);
	assert_non_null(strstr(err_text, "mergescope fixture build: --out "
	                                 "/proc/x: cannot write in the "
	                                 "directory it goes in (/proc: "));
	assert_null(strstr(err_text, "free"));
	assert_ptr_equal(strchr(err_text, '\n'),
	                 err_text + strlen(err_text) - 1);
}

/* The reused fixture's `fixture check` command is one to paste: its
 * directory quoted for the shell when it holds a space or a quote. */
static void
test_reuse_command_quoted(void **state)
{
	(void)state;
	assert_int_equal(rename("s1", "it's s1"), 0);
	int rc = cli("fixture", "build", "--preset", "smoke", "--seed", "1",
	             "--out", "it's s1", NULL);
	assert_int_equal(rename("it's s1", "s1"), 0);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out_text, "(preset smoke, seed 1) is already "
	                                 "built; reusing it"));
	assert_non_null(strstr(out_text, "`mergescope fixture check "
	                                 "'it'\\''s s1'` re-validates it all)\n"));
}

/* A fixture at --out is reused only when every build option matches;
 * otherwise the build is refused naming each difference and the
 * directory, which stays as it was, with no lock added. */
static void
test_reuse_only_the_same_fixture(void **state)
{
	(void)state;
	assert_string_equal(listing("."), "s1");
	assert_int_equal(cli("fixture", "build", "--preset", "smoke", "--seed",
	                     "1", "--out", "s1", NULL),
	                 0);
	assert_non_null(strstr(out_text, "already built; reusing it"));
	/* "s1/" is s1 (its lock is beside it, not inside). */
	assert_int_equal(cli("fixture", "build", "--preset", "smoke", "--seed",
	                     "1", "--out", "s1/", NULL),
	                 0);
	assert_non_null(strstr(out_text, "already built; reusing it"));
	static const struct {
		const char *argv[8]; /* after "fixture build --out s1" */
		const char *diff;
	} cases[] = {
		{ { "--preset", "smoke", "--seed", "1", "--opening", "warm" },
		  "opening empty (this build: warm)" },
		{ { "--preset", "smoke", "--seed", "1", "--dictionary" },
		  "dictionary none (this build: one)" },
		{ { "--preset", "smoke", "--seed", "2" },
		  "seed 1 (this build: 2)" },
		{ { "--preset", "day-1x", "--seed", "1" },
		  "preset smoke (this build: day-1x)" },
		{ { "--scale", "1", "--seed", "1" },
		  "preset smoke (this build: day-1x)" },
		{ { "--preset", "smoke", "--seed", "3", "--opening", "warm",
		    "--dictionary" },
		  "seed 1 (this build: 3), opening empty (this build: warm), "
		  "dictionary none (this build: one)" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *const *a = cases[i].argv;
		int rc = cli("fixture", "build", "--out", "s1", a[0], a[1],
		             a[2], a[3], a[4], a[5], a[6], a[7], NULL);
		assert_int_equal(rc, EXIT_ERROR);
		char want[256];
		snprintf(want, sizeof(want),
		         "mergescope fixture build: --out s1 holds another "
		         "fixture: %s; nothing was built or removed",
		         cases[i].diff);
		assert_non_null(strstr(err_text, want));
		assert_null(strstr(out_text, "reusing"));
		assert_string_equal(opening_of("s1"), "empty");
	}
	assert_string_equal(listing("."), "s1");
	/* A directory that holds no fixture is not built over either. */
	assert_int_equal(mkdir("d", 0777), 0);
	assert_int_equal(cli("fixture", "build", "--preset", "smoke", "--seed",
	                     "1", "--out", "d", NULL),
	                 EXIT_ERROR);
	assert_non_null(strstr(err_text, "--out d exists and does not open as "
	                                 "a fixture (d holds no "
	                                 "manifest.sqlite: not a fixture "
	                                 "directory"));
	assert_string_equal(listing("d"), "");
	assert_int_equal(rmdir("d"), 0);
	assert_string_equal(listing("."), "s1");
}

/* The same in the cache's place: the warm fixture's name holding an
 * empty-opening fixture is refused, naming the directory. */
static void
test_reuse_in_the_cache(void **state)
{
	(void)state;
	char warm[600];
	snprintf(warm, sizeof(warm), "%s/smoke-1-warm", cache_dir());
	assert_int_equal(mkdir(cache_dir(), 0777), 0);
	assert_int_equal(rename("s1", warm), 0);
	assert_int_equal(cli("fixture", "build", "--preset", "smoke", "--seed",
	                     "1", "--opening", "warm", NULL),
	                 EXIT_ERROR);
	char want[800];
	snprintf(want, sizeof(want),
	         "the cache's directory %s holds another fixture: opening "
	         "empty (this build: warm); nothing was built or removed",
	         warm);
	assert_non_null(strstr(err_text, want));
	assert_null(strstr(out_text, "reusing"));
	assert_string_equal(opening_of(warm), "empty");
	assert_string_equal(listing(cache_dir()), "smoke-1-warm");
	assert_int_equal(rename(warm, "s1"), 0);
	assert_int_equal(rmdir(cache_dir()), 0);
}

/* A copy of s1 at dir (which must not exist); its first core part's
 * file into core (n bytes) when core is not NULL. */
static void
copy_s1(const char *dir, char *core, size_t n)
{
	char cmd[200];
	snprintf(cmd, sizeof(cmd), "cp -a s1 %s", dir);
	assert_int_equal(system(cmd), 0);
	if (!core)
		return;
	ms_fixture *f = NULL;
	ms_errbuf eb = { "" };
	assert_int_equal(ms_fixture_open(&f, dir, &eb), 0);
	assert_int_equal(ms_fixture_slot_path(f, 0, MS_KIND_CORE, core, n), 0);
	ms_fixture_close(f);
}

/* fixture check names a changed part with its path, and the command
 * once. */
static void
test_check_names_the_path(void **state)
{
	(void)state;
	char core[600];
	copy_s1("c2", core, sizeof(core));
	FILE *p = fopen(core, "r+b");
	assert_non_null(p);
	assert_int_equal(fseek(p, 100, SEEK_SET), 0);
	int c = fgetc(p);
	assert_int_equal(fseek(p, 100, SEEK_SET), 0);
	fputc(c ^ 0x20, p);
	assert_int_equal(fclose(p), 0);
	assert_int_equal(cli("fixture", "check", "c2", NULL), 1);
	assert_non_null(strstr(err_text, "mergescope fixture check c2: changed "
	                                 "core part 0000000000000001 "
	                                 "(parts/core/0000000000000001): "));
	assert_null(strstr(err_text, "fixture check: fixture check"));
	assert_int_equal(ms_test_rmtree("c2"), 0);
	assert_string_equal(listing("."), "s1");
}

/* A fixture at --out that is the one asked for is reused only when every
 * part file is as built: one truncated or removed is named, with how to
 * build the fixture again, and the fixture is not reused (exit 1, as
 * `fixture check` exits for it); nothing is removed. */
static void
test_reuse_refuses_damaged(void **state)
{
	(void)state;
	char core[600];
	copy_s1("d1", core, sizeof(core));
	assert_int_equal(truncate(core, 100), 0);
	static const char rebuild[] =
	        "; the fixture is damaged: remove it and build it again "
	        "(mergescope fixture build --preset smoke --seed 1 --out "
	        "d1)\n";
	assert_int_equal(cli("fixture", "build", "--preset", "smoke", "--seed",
	                     "1", "--out", "d1", NULL),
	                 1);
	assert_non_null(strstr(err_text, "mergescope fixture build: --out d1: "
	                                 "not reused: core part "
	                                 "0000000000000001 (d1/parts/core/"
	                                 "0000000000000001) changed since it "
	                                 "was built, truncated: 100 bytes"));
	assert_non_null(strstr(err_text, rebuild));
	assert_null(strstr(out_text, "reusing"));
	assert_int_equal(unlink(core), 0);
	assert_int_equal(cli("fixture", "build", "--preset", "smoke", "--seed",
	                     "1", "--out", "d1", NULL),
	                 1);
	assert_non_null(strstr(err_text, "mergescope fixture build: --out d1: "
	                                 "not reused: core part "
	                                 "0000000000000001 is missing "
	                                 "(d1/parts/core/0000000000000001)"));
	assert_non_null(strstr(err_text, rebuild));
	assert_null(strstr(out_text, "reusing"));
	assert_string_equal(listing("."), "d1 s1");
	assert_int_equal(ms_test_rmtree("d1"), 0);
}

/* Nor when its block ledgers file is missing or cut short, which `fixture
 * check` calls damage (a replay would decode every part without it). */
static void
test_reuse_refuses_damaged_block_ledgers(void **state)
{
	(void)state;
	static const char *const said[] = {
		"mergescope fixture build: --out d2: not reused: changed block "
		"ledgers block_ledgers.bin: ",
		"mergescope fixture build: --out d2: not reused: missing block "
		"ledgers block_ledgers.bin (the manifest records ",
	};
	copy_s1("d2", NULL, 0);
	for (int i = 0; i < 2; i++) {
		if (i == 0)
			assert_int_equal(truncate("d2/block_ledgers.bin", 50),
			                 0);
		else
			assert_int_equal(unlink("d2/block_ledgers.bin"), 0);
		assert_int_equal(cli("fixture", "build", "--preset", "smoke",
		                     "--seed", "1", "--out", "d2", NULL),
		                 1);
		assert_non_null(strstr(err_text, said[i]));
		assert_non_null(strstr(err_text,
		                       "; the fixture is damaged: remove it "
		                       "and build it again (mergescope fixture "
		                       "build --preset smoke --seed 1 --out "
		                       "d2)\n"));
		assert_null(strstr(out_text, "reusing"));
	}
	assert_int_equal(ms_test_rmtree("d2"), 0);
}

/* `run` and `tui` given a wrong --fixture path name the path as given,
 * what it is and what is expected, as `fixture check` does (not the
 * manifest path made from it). */
static void
test_run_names_a_wrong_fixture_path(void **state)
{
	(void)state;
	assert_int_equal(ms_test_put("f", "x\n"), 0);
	assert_int_equal(mkdir("e", 0777), 0);
	static const struct {
		const char *path, *said;
	} cases[] = {
		{ "s1/manifest.sqlite",
		  "s1/manifest.sqlite is a fixture's manifest, not its "
		  "directory; give the directory that holds it (s1)" },
		{ "f", "f is a file, not a fixture directory (one holding "
		       "manifest.sqlite)" },
		{ "e", "e holds no manifest.sqlite: not a fixture directory "
		       "(build one with `mergescope fixture build`)" },
		{ "nope", "nope: No such file or directory; expected a "
		          "fixture directory (one holding manifest.sqlite)" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char want[400];
		assert_int_equal(cli("fixture", "check", cases[i].path, NULL),
		                 EXIT_ERROR);
		snprintf(want, sizeof(want), "mergescope fixture check: %s\n",
		         cases[i].said);
		assert_string_equal(err_text, want);
		assert_int_equal(cli("run", "--headless", "--fixture",
		                     cases[i].path, NULL),
		                 EXIT_ERROR);
		snprintf(want, sizeof(want), "mergescope run: --fixture %s\n",
		         cases[i].said);
		assert_string_equal(err_text, want);
		/* `tui` off a terminal runs as `run` does (and is named so). */
		assert_int_equal(cli("tui", "--fixture", cases[i].path, NULL),
		                 EXIT_ERROR);
		assert_string_equal(err_text, want);
	}
	assert_int_equal(unlink("f"), 0);
	assert_int_equal(rmdir("e"), 0);
	assert_string_equal(listing("."), "s1");
}

/* A manifest that is a directory or not a database: `run` says what it
 * is as `fixture check` does (it said "open: disk I/O error" and "file
 * is not a database", from the part reader it opens first). */
static void
test_run_names_a_bad_manifest(void **state)
{
	(void)state;
	static const char *const said[] = {
		"m2/manifest.sqlite: a directory, expected the fixture's "
		"manifest (an SQLite database file)\n",
		"m2/manifest.sqlite: not a readable fixture manifest (file is "
		"not a database)\n",
	};
	for (int i = 0; i < 2; i++) {
		char want[300];
		copy_s1("m2", NULL, 0);
		assert_int_equal(unlink("m2/manifest.sqlite"), 0);
		if (i == 0)
			assert_int_equal(mkdir("m2/manifest.sqlite", 0777), 0);
		else
			assert_int_equal(ms_test_put("m2/manifest.sqlite",
			                             "not a database, not at "
			                             "all, not even close\n"),
			                 0);
		assert_int_equal(
		        cli("run", "--headless", "--fixture", "m2", NULL),
		        EXIT_ERROR);
		snprintf(want, sizeof(want), "mergescope run: --fixture m2: %s",
		         said[i]);
		assert_string_equal(err_text, want);
		assert_int_equal(cli("fixture", "check", "m2", NULL),
		                 EXIT_ERROR);
		snprintf(want, sizeof(want), "mergescope fixture check: %s",
		         said[i]);
		assert_string_equal(err_text, want);
		assert_int_equal(ms_test_rmtree("m2"), 0);
	}
}

/* A manifest missing one of its tables is a damaged fixture: `run`,
 * `fixture check` and a build into it name the table and say how to
 * build the fixture again. */
static void
test_manifest_missing_table(void **state)
{
	(void)state;
	static const char *const drop[] = { "gate", "schedule", "part",
		                            "sampler_stat" };
	for (size_t i = 0; i < sizeof(drop) / sizeof(drop[0]); i++) {
		char sql[64], want[300];
		sqlite3 *db = NULL;
		copy_s1("m1", NULL, 0);
		assert_int_equal(sqlite3_open("m1/manifest.sqlite", &db),
		                 SQLITE_OK);
		snprintf(sql, sizeof(sql), "DROP TABLE %s", drop[i]);
		assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL),
		                 SQLITE_OK);
		sqlite3_close(db);
		snprintf(want, sizeof(want),
		         "m1/manifest.sqlite: table %s is missing: the "
		         "fixture's manifest is incomplete; the fixture is "
		         "damaged: remove it and build it again (mergescope "
		         "fixture build --preset smoke --seed 1 --out m1)\n",
		         drop[i]);
		assert_int_equal(
		        cli("run", "--headless", "--fixture", "m1", NULL),
		        EXIT_ERROR);
		assert_non_null(strstr(err_text, want));
		assert_int_equal(cli("fixture", "check", "m1", NULL), 1);
		assert_non_null(strstr(err_text, want));
		assert_int_equal(cli("fixture", "build", "--preset", "smoke",
		                     "--seed", "1", "--out", "m1", NULL),
		                 1);
		assert_non_null(strstr(err_text, want));
		assert_int_equal(ms_test_rmtree("m1"), 0);
	}
	assert_string_equal(listing("."), "s1");
}

/* A finished build leaves the fixture and nothing beside it: no
 * "<dir>.lock" at --out or in the cache, nor the lock file a killed build
 * left, which the next build takes over. */
static void
test_build_leaves_no_lock(void **state)
{
	(void)state;
	assert_int_equal(cli("fixture", "build", "--preset", "smoke", "--seed",
	                     "1", NULL),
	                 0);
	assert_string_equal(listing(cache_dir()), "smoke-1");
	/* A killed build's lock file: taken over, then removed. */
	assert_int_equal(ms_test_put("s2.lock", ""), 0);
	assert_int_equal(cli("fixture", "build", "--preset", "smoke", "--seed",
	                     "1", "--out", "s2", NULL),
	                 0);
	assert_non_null(strstr(out_text, "fixture written to s2"));
	assert_string_equal(listing("."), "s1 s2");
	/* Reusing a fixture takes no lock and leaves none. */
	assert_int_equal(cli("fixture", "build", "--preset", "smoke", "--seed",
	                     "1", "--out", "s2", NULL),
	                 0);
	assert_string_equal(listing("."), "s1 s2");
	assert_int_equal(ms_test_rmtree("s2"), 0);
	assert_int_equal(ms_test_rmtree(cache_dir()), 0);
}

typedef struct waiter {
	FILE *err; /* the pipe's write end: "waiting" shows there */
	int fd;
} waiter;

static void *
wait_for_lock(void *arg)
{
	waiter *w = arg;
	w->fd = ms__fixture_lock("test", "L", w->err);
	fclose(w->err);
	return NULL;
}

/* A builder waiting on the lock while the holder removes its file goes
 * on only once it holds the lock of the file the path names: the lock it
 * was waiting for is not the lock any more, and a third process must see
 * the path locked. */
static void
test_lock_waiter_relocks(void **state)
{
	(void)state;
	FILE *quiet = tmpfile();
	assert_non_null(quiet);
	int held = ms__fixture_lock("test", "L", quiet);
	assert_true(held >= 0);
	int p[2];
	assert_int_equal(pipe(p), 0);
	waiter w = { .err = fdopen(p[1], "w"), .fd = -1 };
	assert_non_null(w.err);
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, wait_for_lock, &w), 0);
	/* Its line says it waits (read, not timed). */
	char line[512];
	FILE *r = fdopen(p[0], "r");
	assert_non_null(r);
	assert_non_null(fgets(line, sizeof(line), r));
	assert_non_null(strstr(line, "another process holds the build lock "
	                             "of L; waiting for it (lock L.lock)"));
	ms__fixture_unlock(held, "L");
	assert_int_equal(pthread_join(th, NULL), 0);
	fclose(r);
	assert_true(w.fd >= 0);
	/* The waiter holds the file at the path, not the removed one. */
	struct stat a, b;
	assert_int_equal(fstat(w.fd, &a), 0);
	assert_int_equal(stat("L.lock", &b), 0);
	assert_true(a.st_ino == b.st_ino && a.st_dev == b.st_dev);
	int other = open("L.lock", O_RDWR | O_CLOEXEC);
	assert_true(other >= 0);
	assert_int_equal(flock(other, LOCK_EX | LOCK_NB), -1);
	assert_int_equal(errno, EWOULDBLOCK);
	close(other);
	ms__fixture_unlock(w.fd, "L");
	assert_int_equal(access("L.lock", F_OK), -1);
	fclose(quiet);
	assert_string_equal(listing("."), "s1");
}

/* `mergescope ARGV...` (argc words) in a child process (the command
 * line as the binary runs it), with MERGESCOPE_SCRATCH=scratch unless
 * NULL, whose standard error comes back on *errf; returns its pid once
 * a progress line starting with `stage` was read ("what" names that
 * point in the failure). */
static pid_t
spawn_cli_at(char **argv, int argc, const char *scratch, const char *stage,
             const char *what, FILE **errf)
{
	int p[2];
	assert_int_equal(pipe(p), 0);
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		if (scratch)
			setenv("MERGESCOPE_SCRATCH", scratch, 1);
		FILE *o = fopen("/dev/null", "w"), *e = fdopen(p[1], "w");
		if (!o || !e)
			_exit(99);
		setvbuf(e, NULL, _IONBF, 0);
		_exit(ms_cli_main(argc, argv, o, e));
	}
	close(p[1]);
	*errf = fdopen(p[0], "r");
	assert_non_null(*errf);
	char line[512];
	while (fgets(line, sizeof(line), *errf))
		if (strncmp(line, stage, strlen(stage)) == 0)
			return pid;
	fail_msg("the command ended before it %s", what);
	return -1;
}

/* `fixture build --scale 1 --seed 2 --out dir`, once it has begun
 * writing parts (its first "write:" progress line: a day-1x then has
 * more than a thousand parts to go). */
static pid_t
spawn_build_writing(const char *dir, FILE **errf)
{
	char *argv[] = { "mergescope", "fixture", "build", "--scale",   "1",
		         "--seed",     "2",       "--out", (char *)dir, NULL };
	return spawn_cli_at(argv, 9, NULL, "write: ", "wrote a part", errf);
}

/* The rest of f into buf; f closed. */
static void
drain(FILE *f, char *buf, size_t n)
{
	size_t used = 0;
	char line[512];
	buf[0] = '\0';
	while (fgets(line, sizeof(line), f))
		if (used + strlen(line) < n) {
			memcpy(buf + used, line, strlen(line) + 1);
			used += strlen(line);
		}
	fclose(f);
}

/* SIGINT or SIGTERM while a build writes its parts: it stops, removes
 * what it made (nothing at --out or beside it), says so naming the
 * signal and the directory, and exits 128 + the signal. */
static void
test_build_stopped_by_signal(void **state)
{
	(void)state;
	static const int sigs[] = { SIGINT, SIGTERM };
	static const char *const names[] = { "SIGINT", "SIGTERM" };
	for (size_t i = 0; i < 2; i++) {
		FILE *e = NULL;
		pid_t pid = spawn_build_writing("k", &e);
		assert_int_equal(kill(pid, sigs[i]), 0);
		drain(e, err_text, sizeof(err_text));
		int st = 0;
		assert_int_equal(waitpid(pid, &st, 0), pid);
		if (!WIFEXITED(st))
			fail_msg("%s: the build died of signal %d", names[i],
			         WIFSIGNALED(st) ? WTERMSIG(st) : -1);
		assert_int_equal(WEXITSTATUS(st), 128 + sigs[i]);
		char want[200];
		snprintf(want, sizeof(want),
		         "mergescope fixture build: --out k: stopped by %s; "
		         "nothing was written",
		         names[i]);
		assert_non_null(strstr(err_text, want));
		assert_string_equal(listing("."), "s1");
	}
}

/* `fixture check DIR` with MERGESCOPE_SCRATCH=scratch, once it has
 * begun consolidating (its first "consolidate:" progress line: its
 * scratch shard exists, and the merges and the recheck of every raw part
 * are to come). */
static pid_t
spawn_check_consolidating(const char *dir, const char *scratch, FILE **errf)
{
	char *argv[] = { "mergescope", "fixture", "check", (char *)dir, NULL };
	return spawn_cli_at(argv, 4, scratch, "consolidate: ", "consolidated",
	                    errf);
}

/* SIGINT, SIGTERM or SIGHUP while a check consolidates: it stops as a
 * build does, removes its scratch shard (nothing is left in the scratch
 * directory for a later sweep), says so naming the signal and the
 * directory, and exits 128 + the signal. */
static void
test_check_stopped_by_signal(void **state)
{
	(void)state;
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };
	static const char *const names[] = { "SIGINT", "SIGTERM", "SIGHUP" };
	char scratch[400];
	snprintf(scratch, sizeof(scratch), "%s/scratch", root);
	assert_int_equal(mkdir(scratch, 0700), 0);
	for (size_t i = 0; i < 3; i++) {
		FILE *e = NULL;
		pid_t pid = spawn_check_consolidating("s1", scratch, &e);
		assert_int_equal(kill(pid, sigs[i]), 0);
		drain(e, err_text, sizeof(err_text));
		int st = 0;
		assert_int_equal(waitpid(pid, &st, 0), pid);
		if (!WIFEXITED(st))
			fail_msg("%s: the check died of signal %d", names[i],
			         WIFSIGNALED(st) ? WTERMSIG(st) : -1);
		assert_int_equal(WEXITSTATUS(st), 128 + sigs[i]);
		char want[200];
		snprintf(want, sizeof(want),
		         "mergescope fixture check s1: stopped by %s; ",
		         names[i]);
		if (!strstr(err_text, want))
			fail_msg("expected \"%s\" in: %s", want, err_text);
		assert_string_equal(listing(scratch), "");
	}
	assert_int_equal(rmdir(scratch), 0);
	/* The fixture is as it was. */
	assert_int_equal(cli("fixture", "check", "s1", NULL), 0);
	assert_string_equal(listing("."), "s1");
}

/* A build of out killed with SIGKILL leaves its staging directory; the
 * next build of out removes it and names it. */
static void
killed_build_leftover_removed(const char *out)
{
	FILE *e = NULL;
	pid_t pid = spawn_build_writing(out, &e);
	assert_int_equal(kill(pid, SIGKILL), 0);
	drain(e, err_text, sizeof(err_text));
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFSIGNALED(st));
	/* "<out>.tmp-<pid>", out cut short to keep it within NAME_MAX. */
	char tmp[NAME_MAX + 1], sfx[32], want[1024], names[NAME_MAX + 8];
	int sl = snprintf(sfx, sizeof(sfx), ".tmp-%ld", (long)pid);
	int keep = (int)strlen(out);
	if (keep + sl > NAME_MAX)
		keep = NAME_MAX - sl;
	snprintf(tmp, sizeof(tmp), "%.*s%s", keep, out, sfx);
	assert_int_equal(access(tmp, F_OK), 0);
	assert_int_equal(cli("fixture", "build", "--preset", "smoke", "--seed",
	                     "1", "--out", out, NULL),
	                 0);
	snprintf(want, sizeof(want),
	         "mergescope fixture build: removed %s, the unfinished "
	         "fixture of a build of %s that was killed (pid %ld)",
	         tmp, out, (long)pid);
	if (!strstr(err_text, want))
		fail_msg("expected \"%s\" in: %s", want, err_text);
	snprintf(names, sizeof(names), "%s s1", out);
	assert_string_equal(listing("."), names);
	assert_int_equal(ms_test_rmtree(out), 0);
}

static void
test_killed_build_leftover_removed(void **state)
{
	(void)state;
	killed_build_leftover_removed("k");
}

/* An --out of NAME_MAX bytes, which the directory accepts, is built
 * (its staging directory's name, "<out>.tmp-<pid>", was too long), and
 * what a killed build of it left is found and removed. */
static void
test_build_longest_out_name(void **state)
{
	(void)state;
	char out[NAME_MAX + 1];
	memset(out, 'j', NAME_MAX);
	out[NAME_MAX] = '\0';
	killed_build_leftover_removed(out);
	/* Again with a scratch root that takes nothing (one that cannot be
	 * made), as a small /dev/shm takes nothing: the consolidation's
	 * scratch shard goes beside the build, its name cut short as well
	 * (it was "File name too long"). */
	assert_int_equal(ms_test_rmtree(out), 0);
	char *was = getenv("MERGESCOPE_SCRATCH");
	char keep[PATH_MAX];
	snprintf(keep, sizeof(keep), "%s", was ? was : "");
	setenv("MERGESCOPE_SCRATCH", "/proc/ms-test-no-scratch", 1);
	int rc = cli("fixture", "build", "--preset", "smoke", "--seed", "1",
	             "--out", out, NULL);
	if (was)
		setenv("MERGESCOPE_SCRATCH", keep, 1);
	else
		unsetenv("MERGESCOPE_SCRATCH");
	if (rc != 0)
		fail_msg("exit %d: %s", rc, err_text);
	char names[NAME_MAX + 8];
	snprintf(names, sizeof(names), "%s s1", out);
	assert_string_equal(listing("."), names);
}

/* A chain or variant that does not open is named by the option given. */
static void
test_run_names_chain(void **state)
{
	(void)state;
	assert_int_equal(cli("run", "--headless", "--fixture", "s1", "--chain",
	                     "nosuchplugin", NULL),
	                 EXIT_ERROR);
	assert_non_null(strstr(err_text, "mergescope run: --chain "
	                                 "\"nosuchplugin\": "));
	assert_null(strstr(err_text, "variant \"nosuchplugin\""));
	assert_int_equal(cli("run", "--headless", "--fixture", "s1",
	                     "--variant", "nosuchplugin", NULL),
	                 EXIT_ERROR);
	assert_non_null(strstr(err_text, "mergescope run: --variant "
	                                 "\"nosuchplugin\": "));
	/* A spec that does not parse is a bad value (64), not a plugin
	 * that failed (2). */
	assert_int_equal(cli("run", "--headless", "--fixture", "s1", "--chain",
	                     "skywalking,detdrop:{\"percent\":", NULL),
	                 EXIT_USAGE);
	assert_non_null(strstr(err_text, "--chain \"skywalking,detdrop:"));
	/* A stray space is named where it is (it was trimmed away and the
	 * run went ahead as detdrop:35). */
	assert_int_equal(cli("run", "--headless", "--fixture", "s1",
	                     "--variant", "detdrop:35 ", NULL),
	                 EXIT_USAGE);
	assert_string_equal(err_text,
	                    "mergescope run: --variant \"detdrop:35 \": "
	                    "chain spec: offset 10 (link 1): a space; "
	                    "expected none outside a JSON config (like "
	                    "skywalking,detdrop:35)\n");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_seed_plain_decimal),
		cmocka_unit_test(test_out_under_a_file),
		cmocka_unit_test(test_out_empty),
		cmocka_unit_test(test_unknown_preset),
		cmocka_unit_test(test_errors_name_the_subcommand),
		cmocka_unit_test(test_out_cannot_be_made),
		cmocka_unit_test(test_reuse_only_the_same_fixture),
		cmocka_unit_test(test_reuse_command_quoted),
		cmocka_unit_test(test_reuse_in_the_cache),
		cmocka_unit_test(test_check_names_the_path),
		cmocka_unit_test(test_reuse_refuses_damaged),
		cmocka_unit_test(test_reuse_refuses_damaged_block_ledgers),
		cmocka_unit_test(test_run_names_a_wrong_fixture_path),
		cmocka_unit_test(test_manifest_missing_table),
		cmocka_unit_test(test_run_names_a_bad_manifest),
		cmocka_unit_test(test_build_leaves_no_lock),
		cmocka_unit_test(test_lock_waiter_relocks),
		cmocka_unit_test(test_build_stopped_by_signal),
		cmocka_unit_test(test_check_stopped_by_signal),
		cmocka_unit_test(test_killed_build_leftover_removed),
		cmocka_unit_test(test_build_longest_out_name),
		cmocka_unit_test(test_run_names_chain),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
