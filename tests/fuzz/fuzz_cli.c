/*
 * fuzz_cli.c - libFuzzer harness for the `mergescope` command line:
 * ms_cli_main's dispatch, `help`, --help detection and the option parser
 * every command uses (tui/cli.c, ms__cmd_parse).
 *
 * The real commands start long work (a replay, a fixture build, a
 * database) as soon as their options parse, so this harness links cli.c
 * and the option tables (cli_opts.c) alone, with stand-ins for the six
 * command descriptors: each has the name of the real command, parses with
 * its option table (`tui` without --json, as the real one) and stops right
 * after parsing, checking what the parser promises:
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

#define STUB(var, cname, first, tmpl, nopts)                                   \
	static int var##_run(int argc, char **argv, FILE *out, FILE *err);     \
	const ms_cmd var = { cname, "stand-in", "usage: " cname "\n",          \
		             var##_run };                                      \
	static int var##_run(int argc, char **argv, FILE *out, FILE *err)      \
	{                                                                      \
		if (ms__cmd_wants_help(&var, argc, argv, out))                 \
			return 0;                                              \
		ms__opt o[sizeof(tmpl) / sizeof(tmpl[0])];                     \
		memcpy(o, tmpl, sizeof(o));                                    \
		size_t n = nopts;                                              \
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

STUB(ms_cmd_tui, "tui", 0, ms__run_opts, MS__RO_JSON)
STUB(ms_cmd_run, "run", 0, ms__run_opts, MS__RO_COUNT)
STUB(ms_cmd_fixture, "fixture", 1, ms__fixture_opts, MS__FX_COUNT)
STUB(ms_cmd_export, "export", 0, ms__export_opts, MS__EX_COUNT)
STUB(ms_cmd_report, "report", 0, ms__report_opts, MS__RP_COUNT)
STUB(ms_cmd_merge_once, "merge-once", 0, ms__merge_once_opts, MS__MO_COUNT)
STUB(ms_cmd_clean, "clean", 0, ms__clean_opts, MS__CL_COUNT)
STUB(ms_cmd_bench, "bench", 0, ms__bench_opts, MS__BN_COUNT)

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
