/*
 * fuzz_cli.c - libFuzzer harness for the `mergescope` command line:
 * ms_cli_main's dispatch, `help`, --help detection and the option parser
 * every command uses (tui/cli.c, ms__cmd_parse).
 *
 * The real commands start long work (a replay, a fixture build, a
 * database) as soon as their options parse, so this harness links cli.c
 * alone with stand-ins for the six command descriptors: each has the name
 * and option table of the real command (tui/cmd_*.c; keep them in step)
 * and stops right after parsing, checking what the parser promises:
 * required options given, flags without values, options with a value
 * holding one, non-repeatable options given once.
 *
 * Input: the arguments after argv[0], separated by NUL bytes (at most 64).
 * Output goes to /dev/null.
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ARGS 64

static void
check_parsed(const ms__opt *o, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		if (o[k].required && o[k].count == 0)
			abort();
		if (!o[k].repeat && o[k].count > 1)
			abort();
		if (o[k].count && (o[k].arg != NULL) != (o[k].value != NULL))
			abort();
		if (!o[k].count && o[k].value)
			abort();
	}
}

#define STUB(var, cname, first, ...)                                           \
	static int var##_run(int argc, char **argv, FILE *out, FILE *err);     \
	const ms_cmd var = { cname, "stand-in", "usage: " cname "\n",          \
		             var##_run };                                      \
	static int var##_run(int argc, char **argv, FILE *out, FILE *err)      \
	{                                                                      \
		if (ms__cmd_wants_help(&var, argc, argv, out))                 \
			return 0;                                              \
		ms__opt o[] = { __VA_ARGS__ };                                 \
		size_t n = sizeof(o) / sizeof(o[0]);                           \
		int skip = first;                                              \
		if (skip && (argc < 2 || strcmp(argv[1], "build") != 0))       \
			return MS_EXIT_USAGE;                                  \
		int rc = ms__cmd_parse(&var, argc - skip, argv + skip, o, n,   \
		                       err);                                   \
		if (rc == 0)                                                   \
			check_parsed(o, n);                                    \
		else if (rc != MS_EXIT_USAGE)                                  \
			abort();                                               \
		return rc;                                                     \
	}

#define OPT(name, arg, req, rep)                                               \
	{                                                                      \
		name, arg, req, rep, 0, NULL                                   \
	}

STUB(ms_cmd_tui, "tui", 0, OPT("--fixture", "DIR", false, false),
     OPT("--preset", "P", false, false), OPT("--variant", "V", false, false),
     OPT("--chain", "SPEC", false, false),
     OPT("--grace-policy", "selection|trace", false, false),
     OPT("--serial", NULL, false, false),
     OPT("--profile", "SPEC", false, false), OPT("--db", "FILE", false, false),
     OPT("--break", "SPEC", false, true), OPT("--paused", NULL, false, false),
     OPT("--speed", "X", false, false), OPT("--no-color", NULL, false, false),
     OPT("--ascii", NULL, false, false), OPT("--headless", NULL, false, false))

STUB(ms_cmd_run, "run", 0, OPT("--headless", NULL, false, false),
     OPT("--fixture", "DIR", false, false), OPT("--preset", "P", false, false),
     OPT("--variant", "V", false, false), OPT("--chain", "SPEC", false, false),
     OPT("--grace-policy", "selection|trace", false, false),
     OPT("--serial", NULL, false, false),
     OPT("--profile", "SPEC", false, false), OPT("--db", "FILE", false, false),
     OPT("--json", "FILE", false, false), OPT("--break", "SPEC", false, true),
     OPT("--no-color", NULL, false, false), OPT("--ascii", NULL, false, false),
     OPT("--paused", NULL, false, false), OPT("--speed", "X", false, false))

STUB(ms_cmd_fixture, "fixture", 1, OPT("--preset", "P", true, false),
     OPT("--seed", "N", true, false), OPT("--out", "DIR", true, false))

STUB(ms_cmd_export, "export", 0, OPT("--db", "FILE", true, false),
     OPT("--format", "jsonl|csv|chrome", true, false),
     OPT("--out", "FILE", false, false), OPT("--filter", "TEXT", false, false))

STUB(ms_cmd_report, "report", 0, OPT("--db", "FILE", true, false),
     OPT("--vs", "FILE", false, false), OPT("--json", NULL, false, false))

STUB(ms_cmd_merge_once, "merge-once", 0, OPT("--frozen", "DIR", true, false),
     OPT("--variant", "V", true, true), OPT("--reps", "N", false, false),
     OPT("--grace-policy", "selection|trace", false, false))

static FILE *devnull;

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 8192)
		return 0;
	if (!devnull && !(devnull = fopen("/dev/null", "w")))
		abort();
	char *buf = malloc(size + 1);
	memcpy(buf, data, size);
	buf[size] = '\0';
	char *argv[MAX_ARGS + 2];
	int argc = 0;
	argv[argc++] = "mergescope";
	for (size_t i = 0; i < size && argc <= MAX_ARGS;) {
		argv[argc++] = buf + i;
		i += strlen(buf + i) + 1;
	}
	argv[argc] = NULL;
	int rc = ms_cli_main(argc, argv, devnull, devnull);
	if (rc != 0 && rc != MS_EXIT_USAGE)
		abort();
	free(buf);
	return 0;
}
