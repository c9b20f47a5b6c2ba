/*
 * test_tui_cli.c - the `mergescope` command table: the command list and
 * --help of every command, option errors that name the option and what it
 * expects (exit 64), and one-line errors naming the missing input (exit 2)
 * before any work starts.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "alloc_testlib.h"

#include "cli.h"
#include "cli_testlib.h"
#include "testdir.h"
#include "ms_part.h"
#include "ms_replay.h"
#include "ms_replay_events.h"
#include "ms_tui.h"
#include "tui_int.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char out_text[16384], err_text[16384];

/* Run the CLI on a NULL-terminated argument list; capture both streams. */
static int
cli(const char *first, ...)
{
	va_list ap;
	va_start(ap, first);
	int rc = ct_vcli(out_text, sizeof(out_text), NULL, err_text,
	                 sizeof(err_text), first, ap);
	va_end(ap);
	return rc;
}

static void
test_command_list(void **state)
{
	(void)state;
	assert_int_equal(cli("--help", NULL), 0);
	static char list[sizeof(out_text)];
	memcpy(list, out_text, sizeof(list));
	static const char *const names[] = { "tui",    "run",    "fixture",
		                             "export", "report", "merge-once",
		                             "clean",  "bench" };
	const size_t n = sizeof(names) / sizeof(names[0]);
	/* The list holds these and no other: one line each. */
	const char *from = strstr(list, "commands:\n");
	const char *to = strstr(list, "\nenvironment:");
	assert_non_null(from);
	assert_non_null(to);
	size_t lines = 0;
	for (const char *c = from + strlen("commands:\n"); c < to; c++)
		lines += *c == '\n';
	assert_int_equal(lines, n);
	for (size_t i = 0; i < n; i++) {
		char want[32];
		snprintf(want, sizeof(want), "  %s ", names[i]);
		assert_non_null(strstr(list, want));
		/* and each has its own --help */
		assert_int_equal(cli(names[i], "--help", NULL), 0);
		snprintf(want, sizeof(want), "usage: mergescope %s", names[i]);
		assert_non_null(strstr(out_text, want));
	}
	assert_int_equal(cli("help", "export", NULL), 0);
	assert_non_null(strstr(out_text, "--format"));
}

/* Does text name option o whole (not "--variant" in "--variants")? */
static bool
names_option(const char *text, const char *o)
{
	size_t n = strlen(o);
	for (const char *p = strstr(text, o); p; p = strstr(p + 1, o))
		if (!strchr("abcdefghijklmnopqrstuvwxyz-", p[n]) || !p[n])
			return true;
	return false;
}

/* Every option a command takes is in its --help: `tui --help` left out
 * --cache (which README's table gives tui as well), and `run --help` the
 * tui options it takes and ignores (--paused, --speed,
 * --checkpoint-every, --no-color, --ascii). `help COMMAND` of a command
 * there is not is refused as an unknown command (it printed the command
 * list, exit 0). */
static void
test_help_lists_every_option(void **state)
{
	(void)state;
	const ms_cmd *const cmds[] = { &ms_cmd_tui,        &ms_cmd_run,
		                       &ms_cmd_export,     &ms_cmd_report,
		                       &ms_cmd_merge_once, &ms_cmd_clean,
		                       &ms_cmd_bench,      &ms_cmd_fixture };
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		const ms_cmd *c = cmds[i];
		assert_int_equal(cli(c->name, "--help", NULL), 0);
		for (size_t k = 0; k < c->nopts; k++)
			if (!names_option(out_text, c->opts[k].name))
				fail_msg("%s --help lacks %s", c->name,
				         c->opts[k].name);
		/* and says what its exit statuses mean (export and
		 * clean said none) */
		if (!strstr(out_text, "xit status"))
			fail_msg("%s --help says no exit status", c->name);
		/* and the usage error's (tui, report, merge-once and
		 * fixture left it out) */
		if (!strstr(out_text, "64 for a usage error") &&
		    !strstr(out_text, "64 for a usage\nerror"))
			fail_msg("%s --help does not say 64", c->name);
	}
	/* `help --help` and `help -h`: the command list (they were an
	 * unknown command "--help", exit 64). */
	assert_int_equal(cli("help", "--help", NULL), 0);
	assert_non_null(strstr(out_text, "usage: mergescope [COMMAND]"));
	assert_int_equal(cli("help", "-h", NULL), 0);
	assert_non_null(strstr(out_text, "usage: mergescope [COMMAND]"));
	assert_int_equal(cli("help", "help", NULL), 0);
	assert_non_null(strstr(out_text, "usage: mergescope [COMMAND]"));
	assert_int_equal(cli("help", "nosuch", NULL), MS_EXIT_USAGE);
	assert_non_null(strstr(err_text, "unknown command \"nosuch\""));
	/* one command: a word after it is refused (it was ignored) */
	assert_int_equal(cli("help", "run", "extra", NULL), MS_EXIT_USAGE);
	assert_non_null(strstr(err_text, "unexpected argument \"extra\""));
}

/* `run --help` and `tui --help` say how many links a chain holds, for
 * --chain and --variant (which takes a chain too); they did not. */
static void
test_help_says_chain_link_limit(void **state)
{
	(void)state;
	static const char *const cmds[] = { "run", "tui" };
	for (size_t i = 0; i < 2; i++) {
		assert_int_equal(cli(cmds[i], "--help", NULL), 0);
		char want[64];
		snprintf(want, sizeof(want),
		         "sampler links in order, at most %d",
		         MS_CHAIN_MAX_LINKS);
		if (!strstr(out_text, want) ||
		    !strstr(out_text, "skywalking (default) or a chain as "
		                      "--chain"))
			fail_msg("%s --help: %s", cmds[i], out_text);
	}
}

/* `run --help` and `tui --help` give the room the default work dir needs
 * as the run judges it (MS__WORK_DAYS, four times the day) and as README
 * does; they said twice the day. */
static void
test_help_work_dir_room(void **state)
{
	(void)state;
	static const char *const cmds[] = { "run", "tui" };
	for (size_t i = 0; i < 2; i++) {
		assert_int_equal(cli(cmds[i], "--help", NULL), 0);
		if (!strstr(out_text, "for four times the day (by default\n"))
			fail_msg("%s --help: %s", cmds[i], out_text);
	}
}

/* `bench --help` names the default series directory as bench makes it,
 * <time>-<pid> (two series started in one second get their own); it said
 * <time>. */
static void
test_help_bench_default_out(void **state)
{
	(void)state;
	assert_int_equal(cli("bench", "--help", NULL), 0);
	if (!strstr(out_text, "$XDG_CACHE_HOME/mergescope/bench/<time>-<pid>)"))
		fail_msg("bench --help: %s", out_text);
}

/* `mergescope --version` says which build this is: the version, the
 * source commit, the schema and part format it writes. It was handed to
 * the TUI as one of its options and refused as unknown. */
static void
test_version(void **state)
{
	(void)state;
	assert_int_equal(cli("--version", NULL), 0);
	char want[96];
	snprintf(want, sizeof(want), "event database schema %d, part format %d)",
	         MS_EV_SCHEMA_VERSION, MS_PART_FORMAT_VERSION);
	if (strncmp(out_text, "mergescope ", 11) || !strstr(out_text, "(commit ") ||
	    !strstr(out_text, want))
		fail_msg("--version: %s", out_text);
	assert_int_equal(cli("--help", NULL), 0);
	assert_non_null(strstr(out_text, "`mergescope --version`"));
	assert_non_null(strstr(out_text, "exits 64 before anything runs"));
	/* With more words: refused as --version's, not as the TUI's. */
	assert_int_equal(cli("--version", "x", NULL), MS_EXIT_USAGE);
	assert_string_equal(err_text, "mergescope: --version takes no other "
	                              "argument (got \"x\")\n");
}

static void
test_unknown(void **state)
{
	(void)state;
	assert_int_equal(cli("frobnicate", NULL), MS_EXIT_USAGE);
	assert_non_null(strstr(err_text, "unknown command \"frobnicate\""));
	assert_int_equal(cli("report", "--db", "x.db", "--colour", NULL),
	                 MS_EXIT_USAGE);
	assert_non_null(strstr(err_text, "unknown option \"--colour\""));
	/* A word that is no option (a file name given without its
	 * option) is called what it is; it read 'unknown option
	 * "out.csv"'. */
	assert_int_equal(cli("export", "out.csv", "--db", "x.db", "--format",
	                     "csv", NULL),
	                 MS_EXIT_USAGE);
	assert_string_equal(err_text,
	                    "mergescope export: unexpected argument "
	                    "\"out.csv\": the command takes options only "
	                    "(see mergescope export --help)\n");
}

/* "--" ends the options, in every command (the POSIX convention): it
 * was an unknown option everywhere, so `fixture check` could not be
 * given a directory that begins with '-', and `--db --` named the
 * database "--". */
static void
test_end_of_options(void **state)
{
	(void)state;
	/* Last, it ends nothing: the options before it stand. */
	assert_int_equal(cli("export", "--db", "/nonexistent.db", "--format",
	                     "csv", "--", NULL),
	                 MS_EXIT_ERROR);
	assert_null(strstr(err_text, "\"--\""));
	assert_non_null(strstr(err_text, "--db /nonexistent.db: "));
	/* An option after it is a word, not the option. */
	assert_int_equal(cli("export", "--db", "x.db", "--", "--format", "csv",
	                     NULL),
	                 MS_EXIT_USAGE);
	assert_string_equal(err_text,
	                    "mergescope export: unexpected argument "
	                    "\"--format\": the command takes options only "
	                    "(see mergescope export --help)\n");
	/* Never an option's value: --db=-- says that. */
	assert_int_equal(cli("report", "--db", "--", NULL), MS_EXIT_USAGE);
	assert_string_equal(err_text,
	                    "mergescope report: option --db expects FILE, not "
	                    "the end of the options \"--\" (a value that "
	                    "starts like an option is written --db=VALUE)\n");
	assert_int_equal(cli("report", "--db=--", NULL), MS_EXIT_ERROR);
	assert_non_null(strstr(err_text, "--db --: "));
	/* --help after it is a word too. */
	assert_int_equal(cli("clean", "--", "--help", NULL), MS_EXIT_USAGE);
	assert_non_null(strstr(err_text, "unexpected argument \"--help\""));
	/* fixture check: the directory after it, whatever it begins with. */
	assert_int_equal(cli("fixture", "check", "-x", NULL), MS_EXIT_USAGE);
	assert_non_null(strstr(err_text, "written after \"--\""));
	assert_int_equal(cli("fixture", "check", "--", "-no-such-dir", NULL),
	                 MS_EXIT_ERROR);
	assert_non_null(strstr(err_text, "mergescope fixture check: "
	                                 "-no-such-dir: "));
	assert_int_equal(cli("fixture", "check", "--", NULL), MS_EXIT_USAGE);
	assert_int_equal(cli("fixture", "check", "--", "a", "b", NULL),
	                 MS_EXIT_USAGE);
	/* and says how many it got (it said only "expected one"). */
	assert_string_equal(err_text, "mergescope fixture check: expected one "
	                              "fixture directory, got 2 words\n");
	/* "-" alone is said as such at once, not sent after "--" first. */
	assert_int_equal(cli("fixture", "check", "-", NULL), MS_EXIT_USAGE);
	assert_non_null(strstr(err_text, "check: -: \"-\" stands for"));
}

/* An output path near PATH_MAX whose error is cut around " [...] " (its
 * head and its cause kept) is still named with its option: the line
 * lost "--out" as the cut message no longer began with the whole path. */
static void
test_long_out_path_named(void **state)
{
	(void)state;
	static char path[4000];
	size_t at = (size_t)snprintf(path, sizeof(path), "/nonexistent");
	while (at + 202 < sizeof(path) - 16) {
		path[at++] = '/';
		memset(path + at, 'q', 200);
		at += 200;
	}
	snprintf(path + at, sizeof(path) - at, "/out.csv");
	assert_int_equal(cli("export", "--db", "x.db", "--format", "csv",
	                     "--out", path, NULL),
	                 MS_EXIT_ERROR);
	assert_true(strncmp(err_text, "mergescope export: --out /nonexistent/",
	                    38) == 0);
	assert_non_null(strstr(err_text, " [...] "));
	assert_non_null(strstr(err_text, "does not exist\n"));
}

/* A count (bench --reps and --jobs, merge-once --reps) is digits only,
 * as README says of every number: "+3", " 3" and "03" were taken. */
static void
test_counts_plain(void **state)
{
	(void)state;
	const char *bad[] = { "+3", " 3", "03", "3 ", "0", "-1", "" };
	char want[128];
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(cli("merge-once", "--frozen", "/nonexistent",
		                     "--variant", "nosuch", "--reps", bad[i],
		                     NULL),
		                 MS_EXIT_USAGE);
		snprintf(want, sizeof(want), "--reps \"%s\": expected", bad[i]);
		assert_non_null(strstr(err_text, want));
		assert_int_equal(cli("bench", "--variants", "nosuch", "--reps",
		                     bad[i], NULL),
		                 MS_EXIT_USAGE);
		assert_non_null(strstr(err_text, want));
		assert_int_equal(cli("bench", "--variants", "nosuch", "--jobs",
		                     bad[i], NULL),
		                 MS_EXIT_USAGE);
		snprintf(want, sizeof(want), "--jobs \"%s\": expected", bad[i]);
		assert_non_null(strstr(err_text, want));
	}
	unsigned long n = 0;
	assert_true(ms__parse_count("1000000", 1, 1000000, &n));
	assert_int_equal(n, 1000000);
	assert_false(ms__parse_count("1000001", 1, 1000000, &n));
	assert_false(ms__parse_count("18446744073709551617", 1, 1000, &n));
}

/* "-" is standard output for export --out only: `run --db -` and `tui
 * --db -` made a database named "-" in the working directory, and every
 * other file or directory option looked for one (exit 2), while report
 * --html and run --json refused it. One rule, in the parser, naming the
 * option. */
static void
test_dash_one_rule(void **state)
{
	(void)state;
	static const char *const argv[][9] = {
		{ "run", "--headless", "--preset", "nonesuch", "--db", "-" },
		{ "tui", "--preset", "nonesuch", "--db", "-" },
		{ "run", "--headless", "--preset", "nonesuch", "--json", "-" },
		{ "run", "--headless", "--preset", "nonesuch", "--work-dir",
		  "-" },
		{ "run", "--headless", "--fixture", "-" },
		{ "export", "--format", "csv", "--db", "-" },
		{ "report", "--db", "/nonexistent.db", "--html", "-" },
		{ "report", "--db", "/nonexistent.db", "--vs", "-" },
		{ "report", "--collect", "-" },
		{ "merge-once", "--variant", "nosuch", "--frozen", "-" },
		{ "fixture", "build", "--preset", "nonesuch", "--seed", "1",
		  "--out", "-" },
		{ "bench", "--variants", "nosuch", "--out", "-" },
		{ "bench", "--variants", "nosuch", "--fixture", "-" },
		{ "bench", "--collect", "-" },
	};
	char want[160];
	for (size_t i = 0; i < sizeof(argv) / sizeof(argv[0]); i++) {
		const char *const *a = argv[i];
		size_t n = 0;
		while (a[n])
			n++;
		int rc = cli(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7],
		             a[8], NULL);
		snprintf(want, sizeof(want),
		         ": %s -: \"-\" stands for standard output only in "
		         "export --out; give a ",
		         a[n - 2]);
		if (rc != MS_EXIT_USAGE || !strstr(err_text, want))
			fail_msg("%s %s %s: exit %d: %s", a[0], a[n - 2],
			         a[n - 1], rc, err_text);
	}
	assert_int_equal(cli("report", "--db", "/nonexistent.db", "--html",
	                     "-", NULL),
	                 MS_EXIT_USAGE);
	assert_string_equal(err_text,
	                    "mergescope report: --html -: \"-\" stands for "
	                    "standard output only in export --out; give a "
	                    "file name (./- for one named -)\n");
	assert_int_equal(cli("fixture", "check", "--", "-", NULL),
	                 MS_EXIT_USAGE);
	assert_non_null(strstr(err_text, "give a directory name (./- for"));
	/* Each value of a repeated option (the last one only was looked
	 * at), and an empty one likewise. */
	assert_int_equal(cli("report", "--collect", "-", "--collect",
	                     "/nonexistent", NULL),
	                 MS_EXIT_USAGE);
	assert_non_null(strstr(err_text, "--collect -: \"-\" stands for"));
	assert_int_equal(cli("report", "--collect", "", "--collect",
	                     "/nonexistent", NULL),
	                 MS_EXIT_USAGE);
	assert_non_null(strstr(err_text, "--collect \"\": expected a "
	                                 "directory name"));
	/* --db=- as well; export --out - is standard output. */
	assert_int_equal(cli("export", "--format", "csv", "--db=-", NULL),
	                 MS_EXIT_USAGE);
	assert_int_equal(cli("export", "--format", "csv", "--db",
	                     "/nonexistent.db", "--out", "-", NULL),
	                 MS_EXIT_ERROR);
	assert_non_null(strstr(err_text, "--db /nonexistent.db: "));
	struct stat st;
	assert_int_equal(stat("-", &st), -1);
}

/* --help and -h are found where an option may stand, as the parser reads
 * the words: `export --filter -h` printed the help (exit 0) instead of
 * filtering on "-h"; a value left out before --help is help. */
static void
test_help_where_an_option_stands(void **state)
{
	(void)state;
	assert_int_equal(cli("export", "--db", "/nonexistent.db", "--format",
	                     "csv", "--filter", "-h", NULL),
	                 MS_EXIT_ERROR);
	assert_string_equal(out_text, "");
	assert_non_null(strstr(err_text, "--db /nonexistent.db: "));
	/* A value "-h", then a word no option: the parser's error. */
	assert_int_equal(cli("clean", "--older-than", "-h", NULL),
	                 MS_EXIT_USAGE);
	assert_string_equal(out_text, "");
	assert_non_null(strstr(err_text, "--older-than \"-h\""));
	assert_int_equal(cli("fixture", "build", "--preset", "nonesuch",
	                     "--seed", "1", "--out", "-h", NULL),
	                 MS_EXIT_USAGE);
	assert_string_equal(out_text, "");
	/* Where an option stands: help. */
	assert_int_equal(cli("export", "--db", "--help", NULL), 0);
	assert_non_null(strstr(out_text, "usage: mergescope export"));
	assert_int_equal(cli("export", "--filter", "x", "-h", NULL), 0);
	assert_non_null(strstr(out_text, "usage: mergescope export"));
	assert_int_equal(cli("fixture", "build", "--out", "d", "-h", NULL), 0);
	assert_non_null(strstr(out_text, "usage: mergescope fixture"));
	assert_int_equal(cli("fixture", "check", "--help", NULL), 0);
	assert_non_null(strstr(out_text, "usage: mergescope fixture"));
	/* After "--", a word. */
	assert_int_equal(cli("fixture", "check", "--", "-h", NULL),
	                 MS_EXIT_ERROR);
	assert_string_equal(out_text, "");
}

/* A line that asks for help is still the command's options: a stray
 * word, an unknown option or a word after "--" beside --help is refused
 * as the parser refuses it, as `help run extra` and `--version extra`
 * are (`--help extra`, `run --help extra` printed the help, exit 0). */
static void
test_help_takes_no_stray_word(void **state)
{
	(void)state;
	static const char *const lines[][4] = {
		{ "--help", "extra" },
		{ "-h", "run" },
		{ "run", "--help", "extra" },
		{ "tui", "-h", "extra" },
		{ "--headless", "--help", "extra" },
		{ "export", "--bogus", "--help" },
		{ "export", "--help", "--", "x" },
		{ "fixture", "--help", "extra" },
		{ "fixture", "build", "--help", "extra" },
		{ "help", "--help", "extra" },
	};
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		const char *const *l = lines[i];
		int rc = cli(l[0], l[1], l[2], l[3], NULL);
		if (rc != MS_EXIT_USAGE || out_text[0])
			fail_msg("%s %s %s: exit %d, out %.60s", l[0], l[1],
			         l[2] ? l[2] : "", rc, out_text);
	}
	/* `fixture check`'s words beside --help: its one directory (not
	 * looked at), else refused as without --help (`check --help a b`
	 * printed the help). */
	assert_int_equal(cli("fixture", "check", "--help", "a", "b", NULL),
	                 MS_EXIT_USAGE);
	assert_string_equal(out_text, "");
	assert_string_equal(err_text, "mergescope fixture check: expected one "
	                              "fixture directory, got 2 words\n");
	assert_int_equal(cli("fixture", "check", "-h", "--bogus", NULL),
	                 MS_EXIT_USAGE);
	assert_string_equal(out_text, "");
	assert_int_equal(cli("fixture", "check", "--help", "x", "--", "y",
	                     NULL),
	                 MS_EXIT_USAGE);
	assert_string_equal(out_text, "");
	assert_int_equal(cli("fixture", "check", "--help", "/nonexistent/fx",
	                     NULL),
	                 0);
	assert_non_null(strstr(out_text, "usage: mergescope fixture"));
	assert_int_equal(cli("fixture", "check", "--help", "--", "-x", NULL),
	                 0);
	assert_non_null(strstr(out_text, "usage: mergescope fixture"));
	assert_int_equal(cli("--help", "extra", NULL), MS_EXIT_USAGE);
	assert_string_equal(err_text,
	                    "mergescope: --help takes no other argument "
	                    "(got \"extra\"); a command's help: mergescope "
	                    "help COMMAND\n");
	assert_int_equal(cli("run", "--help", "extra", NULL), MS_EXIT_USAGE);
	assert_string_equal(err_text,
	                    "mergescope run: unexpected argument \"extra\": "
	                    "the command takes options only (see mergescope "
	                    "run --help)\n");
	assert_int_equal(cli("fixture", "--help", "extra", NULL),
	                 MS_EXIT_USAGE);
	assert_string_equal(err_text, "mergescope fixture: --help takes no "
	                              "other argument (got \"extra\")\n");
	/* Beside the command's own options (values unchecked), help. */
	assert_int_equal(cli("run", "--db", "x", "--help", "--serial", NULL),
	                 0);
	assert_non_null(strstr(out_text, "usage: mergescope run"));
	assert_int_equal(cli("export", "--help", "--", NULL), 0);
	assert_non_null(strstr(out_text, "usage: mergescope export"));
}

static void
test_option_errors_name_the_option(void **state)
{
	(void)state;
	assert_int_equal(cli("export", "--db", "x.db", "--format", "xml", NULL),
	                 MS_EXIT_USAGE);
	assert_non_null(strstr(err_text, "--format \"xml\""));
	assert_non_null(strstr(err_text, "jsonl"));
	assert_int_equal(cli("export", "--format", "csv", NULL), MS_EXIT_USAGE);
	assert_non_null(strstr(err_text, "--db FILE is required"));
	/* --filter's mistake before --db left out (it said --db was
	 * required). */
	assert_int_equal(cli("export", "--filter", "foo=1", "--format", "csv",
	                     NULL),
	                 MS_EXIT_USAGE);
	assert_non_null(strstr(err_text, "--filter \"foo=1\""));
	assert_null(strstr(err_text, "required"));
	assert_int_equal(cli("export", "--db", "x.db", NULL), MS_EXIT_USAGE);
	assert_string_equal(err_text, "mergescope export: option --format "
	                              "jsonl|csv|chrome is required\n");
	assert_int_equal(cli("export", "--db", NULL), MS_EXIT_USAGE);
	assert_non_null(strstr(err_text, "--db expects FILE"));
	assert_int_equal(
	        cli("fixture", "build", "--seed", "1", "--out", "d", NULL),
	        MS_EXIT_USAGE);
	assert_non_null(strstr(err_text, "--preset P is required"));
	assert_int_equal(cli("fixture", "build", "--preset", "day-2x", "--seed",
	                     "-3", "--out", "d", NULL),
	                 MS_EXIT_USAGE);
	assert_non_null(strstr(err_text, "unsigned integer"));
	assert_int_equal(cli("fixture", "build", "--preset", "day-2x",
	                     "--scale", "4", "--seed", "1", "--out", "d", NULL),
	                 MS_EXIT_USAGE);
	assert_non_null(strstr(err_text, "not both"));
	const char *bad_scales[] = { "0", "-2", "04", "2.5", "x", "1001", "" };
	for (size_t i = 0; i < sizeof(bad_scales) / sizeof(bad_scales[0]);
	     i++) {
		assert_int_equal(cli("fixture", "build", "--scale",
		                     bad_scales[i], "--seed", "1", "--out", "d",
		                     NULL),
		                 MS_EXIT_USAGE);
		assert_non_null(strstr(err_text, "--scale"));
	}
	assert_int_equal(cli("fixture", "make", NULL), MS_EXIT_USAGE);
	assert_non_null(strstr(err_text, "\"build\""));
	assert_int_equal(cli("merge-once", "--frozen", "d", "--variant",
	                     "skywalking", "--reps", "0", NULL),
	                 MS_EXIT_USAGE);
	assert_non_null(strstr(err_text, "--reps \"0\""));
	/* A wrong value is named before --frozen or --variant left out
	 * (`--variant bogus` said --frozen was required). */
	assert_int_equal(cli("merge-once", "--variant", "bogus", NULL), 2);
	assert_non_null(strstr(err_text, "--variant \"bogus\""));
	assert_null(strstr(err_text, "required"));
	assert_int_equal(cli("merge-once", "--reps", "abc", NULL),
	                 MS_EXIT_USAGE);
	assert_string_equal(err_text, "mergescope merge-once: --reps \"abc\": "
	                              "expected a count from 1 to 1000000\n");
	assert_int_equal(cli("merge-once", "--variant", "skywalking", NULL),
	                 MS_EXIT_USAGE);
	assert_string_equal(err_text, "mergescope merge-once: option --frozen "
	                              "DIR is required\n");
	assert_int_equal(cli("merge-once", "--frozen", "d", NULL),
	                 MS_EXIT_USAGE);
	assert_string_equal(err_text, "mergescope merge-once: option "
	                              "--variant V is required\n");
	assert_int_equal(cli("tui", "--grace-policy", "loose", NULL),
	                 MS_EXIT_USAGE);
	assert_non_null(strstr(err_text, "selection or trace"));
	assert_int_equal(cli("run", "--headless", "--staging", "twice", NULL),
	                 MS_EXIT_USAGE);
	assert_non_null(strstr(err_text, "--staging \"twice\""));
	assert_int_equal(cli("merge-once", "--frozen", "d", "--variant",
	                     "skywalking", "--staging", "keep", NULL),
	                 MS_EXIT_USAGE);
	assert_non_null(strstr(err_text, "retain or reread"));
	assert_int_equal(cli("tui", "--checkpoint-every", "-1", NULL),
	                 MS_EXIT_USAGE);
	assert_non_null(strstr(err_text, "--checkpoint-every \"-1\""));
	/* Zero in any unit means no checkpoints, as "0" does (before,
	 * "0s" was refused as not a duration). */
	int64_t ns = -1;
	assert_true(ms__parse_checkpoint_every("0s", &ns) && ns == 0);
	assert_true(ms__parse_checkpoint_every("0", &ns) && ns == 0);
	assert_true(ms__parse_checkpoint_every("0.0m", &ns) && ns == 0);
	assert_true(ms__parse_checkpoint_every("90", &ns) &&
	            ns == 90000000000LL);
	assert_false(ms__parse_checkpoint_every("0x", &ns));
	assert_false(ms__parse_checkpoint_every("-0", &ns));
	assert_int_equal(cli("tui", "--checkpoint-every", "0s", "--fixture",
	                     "/nonexistent/fixture", NULL),
	                 2);
	assert_null(strstr(err_text, "--checkpoint-every \""));
	assert_int_equal(cli("tui", "--variant", "a", "--chain", "b", NULL),
	                 MS_EXIT_USAGE);
	assert_int_equal(cli("report", "--db", "a", "--db", "b", NULL),
	                 MS_EXIT_USAGE);
	assert_non_null(strstr(err_text, "given twice"));
}

/* An option that takes a value followed by another of the command's
 * options: the second is not taken as the value (`run --db --serial` made
 * a database named "--serial" and ran without --serial; `bench --out
 * --jobs` wrote the series into "./--jobs"). The value can still be given
 * with `=`. */
static void
test_option_not_taken_as_value(void **state)
{
	(void)state;
	/* The missing fixture keeps the old parse from starting a run. */
	assert_int_equal(cli("run", "--headless", "--db", "--serial",
	                     "--fixture", "/nonexistent/fixture", NULL),
	                 MS_EXIT_USAGE);
	assert_non_null(strstr(err_text, "--db expects FILE"));
	assert_non_null(strstr(err_text, "\"--serial\""));
	assert_int_equal(cli("bench", "--variants", "disabled,skywalking",
	                     "--out", "--jobs", "2", NULL),
	                 MS_EXIT_USAGE);
	assert_non_null(strstr(err_text, "--out expects DIR"));
	assert_int_equal(cli("bench", "--variants", "disabled,skywalking",
	                     "--reps", "--emit", "parallel", NULL),
	                 MS_EXIT_USAGE);
	assert_non_null(strstr(err_text, "--reps expects N"));
	assert_non_null(strstr(err_text, "\"--emit\""));
	assert_int_equal(cli("report", "--db", "--json=x", NULL),
	                 MS_EXIT_USAGE);
	assert_non_null(strstr(err_text, "--db expects FILE"));
	/* A value that is no option of the command, "-" included, is a
	 * value as before. */
	assert_int_equal(cli("report", "--db", "/nonexistent/x.db", NULL), 2);
	assert_int_equal(cli("export", "--db", "/nonexistent/x.db", "--format",
	                     "csv", "--out", "-", NULL),
	                 2);
	assert_null(strstr(err_text, "expects"));
}

static void
test_errors_before_work(void **state)
{
	(void)state;
	/* Valid invocations whose inputs do not exist: one line naming the
	 * option and the path, exit status 2, nothing on stdout. */
	assert_int_equal(cli("export", "--db=/nonexistent/x.db",
	                     "--format=chrome", NULL),
	                 2);
	assert_non_null(strstr(err_text, "--db /nonexistent/x.db"));
	assert_int_equal(cli("report", "--db", "/nonexistent/x.db", "--vs",
	                     "y.db", NULL),
	                 2);
	assert_non_null(strstr(err_text, "/nonexistent/x.db"));
	assert_int_equal(cli("merge-once", "--frozen", "/nonexistent/d",
	                     "--variant", "skywalking", "--reps", "5", NULL),
	                 2);
	assert_non_null(strstr(err_text, "--frozen /nonexistent/d"));
	/* A directory that is not a frozen merge, and a file: named by
	 * the option too (the first said only "DIR/frozen.txt: cannot
	 * open", the second "no such directory"). */
	char dir[] = "/tmp/ms-notfrozen-XXXXXX", file[64];
	assert_non_null(mkdtemp(dir));
	assert_int_equal(cli("merge-once", "--frozen", dir, "--variant",
	                     "alwayskeep", NULL),
	                 2);
	char want[128];
	snprintf(want, sizeof(want), "merge-once: --frozen %s: %s/frozen.txt",
	         dir, dir);
	if (!strstr(err_text, want))
		fail_msg("said: %s", err_text);
	snprintf(file, sizeof(file), "%s/f", dir);
	assert_int_equal(ms_test_put(file, "x\n"), 0);
	assert_int_equal(cli("merge-once", "--frozen", file, "--variant",
	                     "alwayskeep", NULL),
	                 2);
	snprintf(want, sizeof(want), "--frozen %s: not a directory", file);
	if (!strstr(err_text, want))
		fail_msg("said: %s", err_text);
	/* and how to make one: with f in the TUI, or headless (it named
	 * the TUI's key only). */
	assert_non_null(strstr(err_text, "; expected a frozen merge directory "
	                                 "(freeze one with f at a barrier in "
	                                 "the TUI, or run --freeze-at SPEC)"));
	unlink(file);
	/* A directory of no runs, named by --collect as its other errors
	 * are (it was "DIR: no runs"). */
	assert_int_equal(cli("report", "--collect", dir, NULL), 2);
	snprintf(want, sizeof(want), "report: --collect %s: no runs", dir);
	if (!strstr(err_text, want))
		fail_msg("said: %s", err_text);
	rmdir(dir);
	assert_int_equal(cli("run", "--headless", "--variant", "disabled",
	                     "--fixture", "/nonexistent/f", NULL),
	                 2);
	assert_non_null(strstr(err_text, "--fixture /nonexistent/f"));
	/* Under ctest stdout is not a terminal: tui hands over to run. */
	assert_int_equal(cli("tui", "--fixture", "/nonexistent/f", "--break",
	                     "mature", "--break", "merge=4", NULL),
	                 2);
	assert_non_null(strstr(err_text, "mergescope run"));
	assert_non_null(strstr(err_text, "2 --break options ignored"));
	/* So are --paused and --speed, each said once. */
	assert_int_equal(cli("tui", "--fixture", "/nonexistent/f", "--paused",
	                     "--speed", "60", NULL),
	                 2);
	assert_non_null(strstr(err_text, "--paused ignored"));
	assert_non_null(strstr(err_text, "--speed ignored"));
	/* And --checkpoint-every (it was taken without a word). */
	assert_int_equal(cli("run", "--fixture", "/nonexistent/f",
	                     "--checkpoint-every", "10m", NULL),
	                 2);
	assert_non_null(strstr(err_text, "mergescope run: note: "
	                                 "--checkpoint-every ignored; a "
	                                 "headless run keeps no checkpoint"));
	assert_int_equal(cli("--fixture", "/nonexistent/f", NULL), 2);
	assert_non_null(strstr(err_text, "mergescope run"));
	/* A malformed breakpoint is a usage error, found before any work. */
	assert_int_equal(cli("tui", "--break", "depth>x", NULL), MS_EXIT_USAGE);
	assert_non_null(strstr(err_text, "--break \"depth>x\""));
	assert_string_equal(out_text, "");
}

/* Options with a fixed set of values are checked from the command's
 * table before the command runs, with one wording everywhere. */
static void
test_choices_from_the_table(void **state)
{
	(void)state;
	static const struct {
		const char *argv[8];
		const char *want;
	} cases[] = {
		{ { "run", "--cache", "hot" },
		  "mergescope run: --cache \"hot\": expected warm, cold or "
		  "uncontrolled\n" },
		{ { "tui", "--plugin-host", "thread" },
		  "mergescope tui: --plugin-host \"thread\": expected inproc "
		  "or process\n" },
		{ { "merge-once", "--frozen", "d", "--variant", "x",
		    "--grace-policy", "loose" },
		  "mergescope merge-once: --grace-policy \"loose\": expected "
		  "selection or trace\n" },
		{ { "fixture", "build", "--preset", "p", "--seed", "1",
		    "--opening=cold" },
		  "mergescope fixture build: --opening \"cold\": expected "
		  "empty or warm\n" },
		{ { "export", "--db", "x.db", "--format", "json" },
		  "mergescope export: --format \"json\": expected jsonl, csv "
		  "or chrome\n" },
		{ { "bench", "--variants", "disabled", "--emit", "make" },
		  "mergescope bench: --emit \"make\": expected parallel or "
		  "slurm\n" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *const *a = cases[i].argv;
		assert_int_equal(cli(a[0], a[1], a[2], a[3], a[4], a[5], a[6],
		                     a[7], NULL),
		                 MS_EXIT_USAGE);
		assert_string_equal(err_text, cases[i].want);
		assert_string_equal(out_text, "");
	}
	/* A value among the choices passes the parser (and fails later,
	 * on the missing database). */
	assert_int_equal(cli("export", "--db", "/nonexistent/x.db", "--format",
	                     "csv", NULL),
	                 2);
}

/* Every duration option reads one strict form, the one clean's
 * --older-than reads: digits, a fraction, a unit s, m, h or d. Before,
 * --wait-timeout and --checkpoint-every went through strtod and took
 * "1e1s" as 10 s and "0x10s" as 16 s. A bad value is one line naming
 * the option, the value and the form and range expected (64); a good
 * one passes to the run (2: the fixture is missing). */
static void
test_duration_values(void **state)
{
	(void)state;
	static const char *const opts[] = { "--wait-timeout",
		                            "--checkpoint-every" };
	static const char *const bad[] = { "1e1s", "0x10s", "1E1",  "inf",
		                           " 10",  "+10",   "-1",   "10ss",
		                           "1.s",  ".5",    "367d", "" };
	for (size_t k = 0; k < 2; k++)
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			assert_int_equal(cli("run", "--fixture",
			                     "/nonexistent/f", opts[k], bad[i],
			                     NULL),
			                 MS_EXIT_USAGE);
			char want[256];
			snprintf(want, sizeof(want),
			         "mergescope run: %s \"%s\": expected a "
			         "duration, a number with a unit s, m, h or d, "
			         "like 90s, 10m or 1h (%s, at most 366d)\n",
			         opts[k], bad[i],
			         k == 0 ? "more than 0" : "0 for none");
			assert_string_equal(err_text, want);
		}
	static const char *const good[] = { "90",   "90s",  "10m", "1h",
		                            "1.5h", "366d", "0.5" };
	for (size_t k = 0; k < 2; k++)
		for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
			assert_int_equal(cli("run", "--fixture",
			                     "/nonexistent/f", opts[k], good[i],
			                     NULL),
			                 2);
			/* Taken (run notes that it ignores
			 * --checkpoint-every, naming it). */
			assert_null(strstr(err_text, "expected a duration"));
		}
	/* Past 2^64 seconds: refused, not wrapped. */
	assert_int_equal(cli("run", "--fixture", "/nonexistent/f",
	                     "--wait-timeout", "36893488147419103233s", NULL),
	                 MS_EXIT_USAGE);
	assert_non_null(strstr(err_text, "at most 366d"));
	/* Zero is no checkpoints, and no wait at all is refused. */
	assert_int_equal(cli("run", "--fixture", "/nonexistent/f",
	                     "--checkpoint-every", "0m", NULL),
	                 2);
	assert_int_equal(cli("run", "--fixture", "/nonexistent/f",
	                     "--wait-timeout", "0s", NULL),
	                 MS_EXIT_USAGE);
	/* The value itself, to the nanosecond. */
	int64_t ns = -1;
	assert_true(ms__parse_duration("1.5m", MS__DURATION_MAX_S, &ns));
	assert_int_equal(ns, 90000000000LL);
	assert_true(ms__parse_duration("0.000000001", 10, &ns));
	assert_int_equal(ns, 1);
	/* Past the ninth decimal a duration that is not zero stays so. */
	assert_true(ms__parse_duration("0.0000000001", 10, &ns));
	assert_int_equal(ns, 1);
	assert_true(ms__parse_duration("366d", MS__DURATION_MAX_S, &ns));
	assert_int_equal(ns, 366LL * 86400 * 1000000000);
	assert_false(
	        ms__parse_duration("366.000000001d", MS__DURATION_MAX_S, &ns));
	/* clean's bound fits too: 100000 days in nanoseconds. */
	assert_true(ms__parse_duration("100000d", 100000LL * 86400, &ns));
	assert_int_equal(ns, 100000LL * 86400 * 1000000000);
}

/* --speed is digits, a fraction and an optional x, or max: strtod took
 * "1e3", "0x10", " 60" and "+60". `run`, which ignores --speed, names a
 * bad one too (it said only that --speed was ignored). */
static void
test_speed_values(void **state)
{
	(void)state;
	static const char *const cmds[] = { "tui", "run" };
	static const char *const bad[] = { "1e3", "0x10", " 60", "+60",
		                           "0",   "-1",   "",    "60xx",
		                           "1,5", "MAX",  "nan", "1000000001" };
	for (size_t k = 0; k < 2; k++)
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			assert_int_equal(cli(cmds[k], "--fixture",
			                     "/nonexistent/f", "--speed",
			                     bad[i], NULL),
			                 MS_EXIT_USAGE);
			char want[256];
			snprintf(want, sizeof(want),
			         "mergescope %s: --speed \"%s\": expected a "
			         "multiple of real time like 60 or 60x (more "
			         "than 0, at most 1000000000), or max\n",
			         cmds[k], bad[i]);
			assert_string_equal(err_text, want);
		}
	static const char *const good[] = { "60",   "60x", "60X",       "1.5",
		                            "0.25", "max", "1000000000" };
	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		assert_int_equal(cli("run", "--fixture", "/nonexistent/f",
		                     "--speed", good[i], NULL),
		                 2);
		assert_non_null(strstr(err_text, "--speed ignored"));
	}
	double x = -1;
	assert_true(ms__parse_speed("1.5x", &x));
	assert_true(x == 1.5);
	assert_true(ms__parse_speed("max", &x));
	assert_true(x == 0);
}

/* An empty file or directory name is refused as such (64) before the
 * run: --work-dir "" was taken as no --work-dir, and --db "" and
 * --json "" were errors of the run (2), --fixture "" a missing input. */
static void
test_empty_names(void **state)
{
	(void)state;
	static const struct {
		const char *opt, *what;
	} cases[] = {
		{ "--work-dir", "directory" },
		{ "--db", "file" },
		{ "--json", "file" },
		{ "--fixture", "directory" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		/* A preset that is not one stops the old code before any
		 * work; --fixture goes with a variant instead. */
		bool fx = strcmp(cases[i].opt, "--fixture") == 0;
		assert_int_equal(cli("run", fx ? "--variant" : "--preset",
		                     "nosuch", cases[i].opt, "", NULL),
		                 MS_EXIT_USAGE);
		char want[128];
		snprintf(want, sizeof(want),
		         "mergescope run: %s \"\": expected a %s name\n",
		         cases[i].opt, cases[i].what);
		assert_string_equal(err_text, want);
	}
	assert_int_equal(cli("tui", "--work-dir=", NULL), MS_EXIT_USAGE);
	assert_string_equal(err_text, "mergescope tui: --work-dir \"\": "
	                              "expected a directory name\n");
}

/* Every command refuses an empty file or directory name as such (64),
 * as `run` and `tui` do: `report --db ""` and `--vs ""` and `merge-once
 * --frozen ""` were errors of the command's work (exit 2), and `export
 * --db ""` was passed over for --format missing. */
static void
test_empty_names_every_command(void **state)
{
	(void)state;
	static const struct {
		const char *cmd, *argv[4], *line;
	} cases[] = {
		{ "report",
		  { "--db", "" },
		  "mergescope report: --db \"\": "
		  "expected a file name\n" },
		{ "report",
		  { "--db", "x.sqlite", "--vs", "" },
		  "mergescope report: --vs \"\": expected a file name\n" },
		{ "export",
		  { "--db", "" },
		  "mergescope export: --db \"\": "
		  "expected a file name\n" },
		{ "merge-once",
		  { "--frozen", "", "--variant", "disabled" },
		  "mergescope merge-once: --frozen \"\": expected a directory "
		  "name\n" },
		{ "bench",
		  { "--collect", "" },
		  "mergescope bench: --collect "
		  "\"\": expected a directory "
		  "name\n" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *const *v = cases[i].argv;
		assert_int_equal(
		        cli(cases[i].cmd, v[0], v[1], v[2], v[3], NULL),
		        MS_EXIT_USAGE);
		assert_string_equal(err_text, cases[i].line);
	}
}

/* --profile items are key=value between single commas: an empty item
 * (",", "cpus=2,", "cpus=2,,mem=4g") was skipped, so "," was a profile
 * with no limit in it. A bad spec is named before any input is looked
 * at (it came after the fixture's error). */
static void
test_profile_items(void **state)
{
	(void)state;
	static const char *const bad[] = { ",", "cpus=2,", ",mem=4g",
		                           "cpus=2,,mem=4g" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(cli("run", "--fixture", "/nonexistent/f",
		                     "--profile", bad[i], NULL),
		                 MS_EXIT_USAGE);
		char want[256];
		snprintf(want, sizeof(want),
		         "mergescope run: --profile \"%s\": profile: an empty "
		         "item; expected key=value items separated by single "
		         "commas, like cpus=2,mem=4g\n",
		         bad[i]);
		assert_string_equal(err_text, want);
	}
	assert_int_equal(cli("tui", "--fixture", "/nonexistent/f", "--profile",
	                     "cpus=0", NULL),
	                 MS_EXIT_USAGE);
	assert_non_null(strstr(err_text, "--profile \"cpus=0\""));
	assert_int_equal(cli("run", "--fixture", "/nonexistent/f", "--profile",
	                     "cpus=2,mem=4g", NULL),
	                 2);
	assert_null(strstr(err_text, "--profile"));
	/* Values the cgroup cannot hold were taken: 16000000t (just under
	 * 2^64 bytes) and 0.0001 CPUs (a quota below the kernel's 1000 us
	 * per period). */
	static const struct {
		const char *spec, *want;
	} range[] = {
		{ "mem=16000000t",
		  "mergescope run: --profile \"mem=16000000t\": profile: mem "
		  "'16000000t': expected at most 64t (the most memory Linux "
		  "maps on x86-64) and at least 64m\n" },
		{ "cpus=0.0001",
		  "mergescope run: --profile \"cpus=0.0001\": profile: cpus "
		  "'0.0001': expected a number of CPUs from 0.01 to 65535, "
		  "such as 2 or 0.5 (a cgroup's CPU quota is at least 1% of "
		  "a CPU)\n" },
		{ "cpus=2,cpus=4",
		  "mergescope run: --profile \"cpus=2,cpus=4\": profile: cpus "
		  "given twice ('2' and '4'); expected each key once\n" },
	};
	for (size_t i = 0; i < sizeof(range) / sizeof(range[0]); i++) {
		assert_int_equal(cli("run", "--fixture", "/nonexistent/f",
		                     "--profile", range[i].spec, NULL),
		                 MS_EXIT_USAGE);
		assert_string_equal(err_text, range[i].want);
	}
}

/* An option given twice names both values: "option --db given twice"
 * left the user to find which two. A flag has no value to name. */
static void
test_given_twice(void **state)
{
	(void)state;
	assert_int_equal(cli("report", "--db", "a.db", "--db=b.db", NULL),
	                 MS_EXIT_USAGE);
	assert_string_equal(err_text, "mergescope report: option --db given "
	                              "twice (\"a.db\" and \"b.db\")\n");
	assert_int_equal(cli("run", "--headless", "--serial", "--serial", NULL),
	                 MS_EXIT_USAGE);
	assert_string_equal(err_text,
	                    "mergescope run: option --serial given twice\n");
	assert_int_equal(cli("tui", "--speed", "60", "--speed", "", NULL),
	                 MS_EXIT_USAGE);
	assert_string_equal(err_text, "mergescope tui: option --speed given "
	                              "twice (\"60\" and \"\")\n");
}

/* A --break or --freeze-at takes a part ID and a time as the TUI shows
 * them: "part=0x10" (taken as part 16) and "time=1:2:3" (as 01:02:03)
 * were accepted; they are usage errors naming the option, the value and
 * the form (for a number, its range). */
static void
test_break_values(void **state)
{
	(void)state;
	static const struct {
		const char *cmd, *opt, *spec, *form;
	} bad[] = {
		{ "tui", "--break", "part=0x10", "expected part=HEX" },
		{ "run", "--break", "time=1:2:3", "expected time=HH:MM or " },
		{ "run", "--freeze-at", "part=0x10", "expected part=HEX" },
		{ "run", "--freeze-at", "time=12:5",
		  "expected time=HH:MM or " },
		/* A number past the range says the range: it was called
		 * not "a positive integer". */
		{ "tui", "--break", "merge=99999999999999999999",
		  "from 1 to 18446744073709551615" },
		{ "run", "--break", "depth>=99999999999",
		  "from 0 to 4294967295" },
		{ "run", "--break", "time=@99999999999999999999",
		  "from 0 to 9223372036854775807" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(cli(bad[i].cmd, "--fixture", "/nonexistent/f",
		                     bad[i].opt, bad[i].spec, NULL),
		                 MS_EXIT_USAGE);
		char want[128];
		snprintf(want, sizeof(want), "mergescope %s: %s \"%s\": ",
		         strcmp(bad[i].opt, "--break") == 0 ? bad[i].cmd
		                                            : "run",
		         bad[i].opt, bad[i].spec);
		if (strncmp(err_text, want, strlen(want)) != 0 ||
		    !strstr(err_text, bad[i].form))
			fail_msg("%s %s: %s", bad[i].opt, bad[i].spec,
			         err_text);
	}
	/* The forms the TUI shows pass (then the fixture is missing). */
	assert_int_equal(cli("run", "--fixture", "/nonexistent/f", "--break",
	                     "part=00000000000000a1", "--break", "part=a1",
	                     "--break", "time=02:00:00", "--break", "time=9:05",
	                     NULL),
	                 2);
	assert_non_null(strstr(err_text, "--fixture /nonexistent/f"));
}

/* At most 64 --break (the breakpoints a replay holds): the TUI dropped
 * the 65th and later ones without a word. 64 pass. */
static void
test_break_count(void **state)
{
	(void)state;
	static char specs[65][16];
	char *argv[4 + 2 * 65 + 1];
	for (int n = 64; n <= 65; n++) {
		int argc = 0;
		argv[argc++] = (char *)"mergescope";
		argv[argc++] = (char *)"tui";
		argv[argc++] = (char *)"--fixture";
		argv[argc++] = (char *)"/nonexistent/f";
		for (int i = 0; i < n; i++) {
			snprintf(specs[i], sizeof(specs[i]), "merge=%d", i + 1);
			argv[argc++] = (char *)"--break";
			argv[argc++] = specs[i];
		}
		argv[argc] = NULL;
		FILE *o = tmpfile(), *e = tmpfile();
		assert_non_null(o);
		assert_non_null(e);
		int rc = ms_cli_main(argc, argv, o, e);
		ct_slurp(e, err_text, sizeof(err_text));
		fclose(o);
		fclose(e);
		if (n == 64) {
			/* Handed to run (not a terminal), which ignores them.
			 */
			assert_int_equal(rc, 2);
			assert_non_null(strstr(err_text, "64 --break options "
			                                 "ignored"));
		} else {
			assert_int_equal(rc, MS_EXIT_USAGE);
			assert_string_equal(err_text,
			                    "mergescope tui: --break "
			                    "\"merge=65\": breakpoint 65; "
			                    "expected at most 64\n");
		}
	}
}

/* Out of memory for a command's configuration: said what for and how many
 * bytes (it said "mergescope run: out of memory"). */
static void
test_config_out_of_memory(void **state)
{
	(void)state;
	char *argv[] = { (char *)"mergescope", (char *)"run",
		         (char *)"--fixture", (char *)"/nonexistent/f", NULL };
	FILE *o = tmpfile(), *e = tmpfile();
	assert_non_null(o);
	assert_non_null(e);
	tl_alloc.fail_size = sizeof(ms__run_cfg);
	int rc = ms_cli_main(4, argv, o, e);
	assert_true(tl_alloc_disarm());
	ct_slurp(e, err_text, sizeof(err_text));
	fclose(o);
	fclose(e);
	assert_int_equal(rc, MS_EXIT_ERROR);
	char want[128];
	snprintf(want, sizeof(want),
	         "mergescope run: out of memory for the run's configuration "
	         "(%zu bytes)\n",
	         sizeof(ms__run_cfg));
	assert_string_equal(err_text, want);
}

/* A new temporary memory file: its name into path (a mkstemp template),
 * open for writing. */
static FILE *
memory_file(char *path)
{
	int fd = mkstemp(path);
	assert_true(fd >= 0);
	FILE *fp = fdopen(fd, "w");
	assert_non_null(fp);
	return fp;
}

/* What the TUI remembers of a fixture for the next session holds every
 * breakpoint a session can have (64): it kept the first 16 and dropped
 * the rest without a word. */
static void
test_memory_keeps_every_breakpoint(void **state)
{
	(void)state;
	char path[] = "/tmp/ms-tui-memory-XXXXXX";
	FILE *fp = memory_file(path);
	for (int i = 1; i <= MS__MAX_BREAKS; i++)
		fprintf(fp, "break merge=%d\n", i);
	fprintf(fp, "filter lane=slow\n");
	assert_int_equal(fclose(fp), 0);
	ms__tui_memory *m = calloc(1, sizeof(*m));
	assert_non_null(m);
	assert_true(ms__tui_memory_load(path, m));
	assert_int_equal(m->nbreaks, MS__MAX_BREAKS);
	assert_string_equal(m->breaks[0], "merge=1");
	assert_string_equal(m->breaks[MS__MAX_BREAKS - 1], "merge=64");
	assert_string_equal(m->filter, "lane=slow");
	/* Saved and read back: the same 64. */
	assert_int_equal(ms__tui_memory_save(path, m), 0);
	memset(m, 0, sizeof(*m));
	assert_true(ms__tui_memory_load(path, m));
	assert_int_equal(m->nbreaks, MS__MAX_BREAKS);
	assert_string_equal(m->breaks[MS__MAX_BREAKS - 1], "merge=64");
	free(m);
	unlink(path);
}

/* A line of the memory file longer than the reader's old 512-byte buffer
 * is one line: its tail is not read as a line of its own. Before, the
 * "break merge=7" at byte 511 of a long filter line came back as a
 * breakpoint, and the filter as its first 504 bytes. */
static void
test_memory_long_line_is_one_line(void **state)
{
	(void)state;
	char path[] = "/tmp/ms-tui-memory-XXXXXX";
	FILE *fp = memory_file(path);
	fputs("filter ", fp);
	for (int i = 0; i < 504; i++)
		fputc('a', fp);
	fputs("break merge=7\nbreak merge=3\n", fp);
	assert_int_equal(fclose(fp), 0);
	ms__tui_memory *m = calloc(1, sizeof(*m));
	assert_non_null(m);
	assert_true(ms__tui_memory_load(path, m));
	assert_int_equal(m->nbreaks, 1);
	assert_string_equal(m->breaks[0], "merge=3");
	/* The filter is the line's first 255 bytes, as for any long one. */
	assert_int_equal(strlen(m->filter), 255);
	assert_int_equal(strspn(m->filter, "a"), 255);
	free(m);
	unlink(path);
}

/* The watcher's notes reader hands out the whole lines of the pipe; a
 * line too long for its buffer is dropped whole: its end, past the
 * buffer, was taken as a note of its own ("scratch\t/x": the watcher
 * would have removed /x as the run's scratch shard). Found by
 * fuzz_tui_names. */
static void
test_notes_long_line_dropped_whole(void **state)
{
	(void)state;
	ms__note_buf *nb = calloc(1, sizeof(*nb));
	assert_non_null(nb);
	static char in[9000];
	size_t n = 0;
	memcpy(in, "db\t/r.db\ndb\t", 12);
	n = 12;
	memset(in + n, 'a', 8300);
	n += 8300;
	memcpy(in + n, "\nscreen\t1\n", 10);
	n += 10;
	/* The long line's part past the buffer spells a note. */
	memcpy(in + 9 + 8191, "scratch\t/x", 10);
	const char *got[4];
	char lines[4][64];
	size_t k = 0, at = 0;
	while (at < n) {
		size_t room = sizeof(nb->b) - 1 - nb->len;
		size_t c = n - at < 100 ? n - at : 100;
		c = c < room ? c : room;
		memcpy(nb->b + nb->len, in + at, c);
		nb->len += c;
		at += c;
		for (char *l; (l = ms__note_line(nb));) {
			assert_true(k < 4);
			snprintf(lines[k], sizeof(lines[k]), "%s", l);
			got[k] = lines[k];
			k++;
		}
	}
	assert_int_equal(k, 2);
	assert_string_equal(got[0], "db\t/r.db");
	assert_string_equal(got[1], "screen\t1");
	free(nb);
}

/* The variants named when one will not load are the plugins that open:
 * a NAME.so left as a link to a file that is gone was offered among
 * them; it is named apart as not runnable, with its target and why. */
static void
test_variants_hint_skips_dangling_link(void **state)
{
	(void)state;
	char dir[] = "/tmp/ms-variants-XXXXXX", path[128], hint[1024];
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/keep.so", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/gone.so", dir);
	assert_int_equal(symlink("/nonexistent/gone.so", path), 0);
	ms__variants_hint(hint, sizeof(hint), "frobnicate", dir);
	assert_non_null(strstr(hint, " keep, disabled"));
	assert_null(strstr(hint, " gone,"));
	assert_null(strstr(hint, " gone disabled"));
	assert_non_null(strstr(hint, "; not runnable: gone.so (a link to "
	                             "/nonexistent/gone.so: No such file or "
	                             "directory)"));
	/* The broken one named as the variant: the same list. */
	ms__variants_hint(hint, sizeof(hint), "gone", dir);
	assert_non_null(strstr(hint, "not runnable: gone.so"));
	assert_int_equal(unlink(path), 0);
	snprintf(path, sizeof(path), "%s/keep.so", dir);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(rmdir(dir), 0);
}

/* A frozen merge's command, said on quitting, wrapped to the terminal:
 * it went out on one line that the terminal cut mid-word at its edge
 * ("...tuiuse-scrat" / "ch/t.db..." at 80 columns). Each line fits,
 * each but the last is continued with " \\", and a shell joining them
 * reads the command back. */
static void
test_say_command_continues_lines(void **state)
{
	(void)state;
	static const char cmd[] =
	        "/work/wt/x/build/tui/mergescope merge-once --frozen "
	        "/dev/shm/x-scratch/t.db.30040.shard.frozen-252 --variant "
	        "skywalking";
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	ms__say_command(f, cmd, 80);
	fclose(f);
	char joined[512] = "";
	size_t lines = 0;
	for (const char *p = buf; *p; lines++) {
		const char *nl = strchr(p, '\n');
		assert_non_null(nl);
		assert_true(nl - p <= 80);
		assert_true(strncmp(p, "  ", 2) == 0 && p[2] != ' ');
		while (*p == ' ')
			p++;
		bool more = nl[1] != '\0';
		int n = (int)(nl - p) - (more ? 2 : 0);
		if (more)
			assert_true(strncmp(nl - 2, " \\", 2) == 0);
		size_t o = strlen(joined);
		snprintf(joined + o, sizeof(joined) - o, "%s%.*s", o ? " " : "",
		         n, p);
		p = nl + 1;
	}
	assert_true(lines >= 2);
	assert_string_equal(joined, cmd);
	free(buf);
	/* Not a terminal: one line, as it was. */
	f = open_memstream(&buf, &len);
	ms__say_command(f, cmd, 0);
	fclose(f);
	assert_int_equal(strlen(buf), strlen(cmd) + 3);
	free(buf);
}

/* The frozen merges' commands said on quitting, each whole however long:
 * each went through a 4096-byte buffer, and a longer one (a long work
 * dir and program path) was printed cut, a command that pasted as
 * something else. Joined back, each line is its command. */
static void
test_say_commands_whole(void **state)
{
	(void)state;
	size_t n = 6000;
	char *cmds = malloc(2 * n + 64);
	assert_non_null(cmds);
	int o = sprintf(cmds, "/bin/mergescope merge-once --frozen /");
	for (size_t i = 0; i < n; i++)
		cmds[o++] = i % 50 == 49 ? '/' : 'a' + (char)(i % 26);
	o += sprintf(cmds + o, " --variant skywalking\nmergescope x\n");
	const int widths[] = { 80, 0 };
	for (size_t w = 0; w < 2; w++) {
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);
		assert_non_null(f);
		ms__say_commands(f, cmds, widths[w]);
		fclose(f);
		/* Undo the wrapping: "  " in front, " \\" continues. */
		char *joined = malloc(len + 1), *j = joined;
		assert_non_null(joined);
		for (const char *p = buf; *p;) {
			const char *nl = strchr(p, '\n');
			assert_non_null(nl);
			assert_true(strncmp(p, "  ", 2) == 0);
			p += 2;
			bool more = nl - p >= 2 && strncmp(nl - 2, " \\", 2) == 0;
			size_t k = (size_t)(nl - p) - (more ? 2 : 0);
			memcpy(j, p, k);
			j += k;
			*j++ = more ? ' ' : '\n';
			p = nl + 1;
		}
		*j = '\0';
		assert_int_equal(strlen(joined), strlen(cmds));
		assert_string_equal(joined, cmds);
		free(joined);
		free(buf);
	}
	free(cmds);
}

/* A line said around the screen, wrapped to the terminal: a path longer
 * than the line went out cut, "...-28702.sq", newline, "  lite", and
 * pasted as two pieces. It goes whole on a line of its own; the words
 * around it still wrap at spaces. */
static void
test_say_wrapped_keeps_paths_whole(void **state)
{
	(void)state;
	static const char path[] =
	        "/var/tmp/cache/mergescope/runs/"
	        "day-1x-skywalking-20261204-160642-28702.sqlite";
	char line[256];
	snprintf(line, sizeof(line),
	         "events recorded in %s (stopped before the end: recorded "
	         "as aborted)",
	         path);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	ms__say_wrapped(f, line, 40);
	fclose(f);
	char want[128];
	snprintf(want, sizeof(want), "\n  %s\n", path);
	assert_non_null(strstr(buf, want));
	assert_true(strncmp(buf, "events recorded in\n", 19) == 0);
	/* Every other line fits. */
	for (const char *p = buf; *p;) {
		const char *nl = strchr(p, '\n');
		assert_non_null(nl);
		if (!strstr(p, path) || strstr(p, path) > nl)
			assert_true(nl - p <= 40);
		p = nl + 1;
	}
	free(buf);
}

/* Bare `mergescope` into a file or a pipe (`mergescope | less` to see
 * what it is): one line saying the TUI needs a terminal and what to run
 * instead, exit 64, nothing built. It built the day-2x fixture into the
 * cache and ran a whole day headless. The cache is where nothing can be
 * made, so that the old way fails at once too. */
static void
test_bare_without_terminal(void **state)
{
	(void)state;
	const char *cache = getenv("XDG_CACHE_HOME");
	char *was = cache ? strdup(cache) : NULL;
	setenv("XDG_CACHE_HOME", "/dev/null/no-cache", 1);
	fflush(stdout);
	int saved = dup(STDOUT_FILENO);
	FILE *f = tmpfile();
	assert_true(saved >= 0 && f);
	assert_true(dup2(fileno(f), STDOUT_FILENO) >= 0);
	int rc = cli(NULL);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	fclose(f);
	if (was)
		setenv("XDG_CACHE_HOME", was, 1);
	else
		unsetenv("XDG_CACHE_HOME");
	free(was);
	assert_int_equal(rc, MS_EXIT_USAGE);
	assert_string_equal(err_text,
	                    "mergescope: the TUI needs a terminal and "
	                    "standard output is not one; for a run without "
	                    "one: mergescope run --headless (mergescope "
	                    "--help lists the commands)\n");
	assert_string_equal(out_text, "");
}

/* A failed run's line, the same for run and the TUI: the engine's error,
 * then the step of the day (the TUI said only "the run failed: ERROR",
 * without the phase and the publications and merges done). */
static void
test_run_failed_text(void **state)
{
	(void)state;
	ms_replay_status *st = calloc(1, sizeof(*st));
	assert_non_null(st);
	snprintf(st->error, sizeof(st->error), "merge #3: disk full");
	st->phase = MS_RPHASE_PRIMARY;
	st->pub_done = 7;
	st->pub_total = 40;
	st->merges_done = 2;
	char line[1024];
	ms__run_failed_text(line, sizeof(line), st);
	assert_string_equal(line, "the run failed: merge #3: disk full (in "
	                          "the primary phase, after 7 of 40 "
	                          "publications and 2 merges)");
	st->preparing = true;
	ms__run_failed_text(line, sizeof(line), st);
	assert_string_equal(line, "the run failed: merge #3: disk full "
	                          "(before the day began)");
	free(st);
}

/* Let the window go by, whatever signal handlers run in it. */
static void
watch(const struct timespec *window)
{
	struct timespec left = *window;
	while (nanosleep(&left, &left) != 0 && errno == EINTR)
		;
}

/* The thread that takes a session's stop signals sleeps until one comes:
 * an idle session wakes it not once (it woke every 50 ms, 20 times a
 * second, for as long as the TUI stood paused). The window is only
 * watched: nothing waits for anything in it. A SIGTERM that comes then
 * is still the session's stop signal, and so is a SIGHUP the main thread
 * takes itself (it wakes the thread to look). */
static void
test_stopper_sleeps_until_a_signal(void **state)
{
	(void)state;
	/* One thread: the signals sent to the process reach the stopper. */
	DIR *d = opendir("/proc/self/task");
	assert_non_null(d);
	int threads = 0;
	for (struct dirent *e; (e = readdir(d));)
		threads += e->d_name[0] != '.';
	closedir(d);
	assert_int_equal(threads, 1);
	ms__stopper s;
	assert_int_equal(ms__stopper_start(&s), 0);
	struct timespec window = { 0, 300 * 1000000L };
	watch(&window);
	assert_int_equal(atomic_load(&s.wakes), 0);
	assert_int_equal(kill(getpid(), SIGTERM), 0);
	assert_int_equal(ms__stopper_end(&s), SIGTERM);
	assert_int_equal(ms__stopper_start(&s), 0);
	assert_int_equal(pthread_kill(pthread_self(), SIGHUP), 0);
	assert_int_equal(ms__stopper_end(&s), SIGHUP);
	/* A stop while the session loop runs: one SIGHUP ends its wait (the
	 * loop asks for the stop before each wait), then the thread sleeps
	 * again; it sent one every 50 ms until the session ended. Its
	 * wakes: the SIGTERM, then on_hup's for the SIGHUP it sent. */
	assert_int_equal(ms__stopper_start(&s), 0);
	atomic_store(&s.in_loop, true);
	assert_int_equal(kill(getpid(), SIGTERM), 0);
	watch(&window); /* the SIGHUP ends a sleep early */
	assert_int_equal(atomic_load(&s.hups), 1);
	assert_true(atomic_load(&s.wakes) <= 2);
	assert_int_equal(ms__stopper_end(&s), SIGTERM);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_command_list),
		cmocka_unit_test(test_help_says_chain_link_limit),
		cmocka_unit_test(test_help_lists_every_option),
		cmocka_unit_test(test_help_bench_default_out),
		cmocka_unit_test(test_help_work_dir_room),
		cmocka_unit_test(test_version),
		cmocka_unit_test(test_unknown),
		cmocka_unit_test(test_end_of_options),
		cmocka_unit_test(test_dash_one_rule),
		cmocka_unit_test(test_help_where_an_option_stands),
		cmocka_unit_test(test_help_takes_no_stray_word),
		cmocka_unit_test(test_counts_plain),
		cmocka_unit_test(test_long_out_path_named),
		cmocka_unit_test(test_option_errors_name_the_option),
		cmocka_unit_test(test_option_not_taken_as_value),
		cmocka_unit_test(test_errors_before_work),
		cmocka_unit_test(test_choices_from_the_table),
		cmocka_unit_test(test_duration_values),
		cmocka_unit_test(test_speed_values),
		cmocka_unit_test(test_empty_names),
		cmocka_unit_test(test_empty_names_every_command),
		cmocka_unit_test(test_profile_items),
		cmocka_unit_test(test_break_count),
		cmocka_unit_test(test_config_out_of_memory),
		cmocka_unit_test(test_memory_keeps_every_breakpoint),
		cmocka_unit_test(test_memory_long_line_is_one_line),
		cmocka_unit_test(test_break_values),
		cmocka_unit_test(test_given_twice),
		cmocka_unit_test(test_notes_long_line_dropped_whole),
		cmocka_unit_test(test_variants_hint_skips_dangling_link),
		cmocka_unit_test(test_say_wrapped_keeps_paths_whole),
		cmocka_unit_test(test_say_command_continues_lines),
		cmocka_unit_test(test_say_commands_whole),
		cmocka_unit_test(test_run_failed_text),
		cmocka_unit_test(test_bare_without_terminal),
		cmocka_unit_test(test_stopper_sleeps_until_a_signal),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
