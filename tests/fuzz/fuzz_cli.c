/*
 * fuzz_cli.c - libFuzzer harness for the `mergescope` command line:
 * ms_cli_main's dispatch, `help`, --help detection and the option parser
 * every command uses (tui/cli.c, ms__cmd_parse).
 *
 * The real commands start long work (a replay, a fixture build, a
 * database) as soon as their options parse, so this harness links cli.c
 * and the option tables (cli_opts.c) alone, with stand-ins for the
 * command descriptors: each has the name and the option table of the real
 * command (`tui` with all of `run`'s, as the real one), so ms__cmd_main parses
 * as for the real one, and its exec stops right away, checking what the
 * parser promises: required options given, flags without values, options
 * with a value holding one, non-repeatable options given once, values
 * among their choices.
 *
 * Input: the arguments after argv[0], separated by NUL bytes (at most 64).
 * Output goes to /dev/null.
 */
#include "cli.h"
#include "fuzz_text.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ARGS 64

/* Is v exactly one of choices ("a|b|c")? */
static bool
in_choices(const char *choices, const char *v)
{
	size_t n = strlen(v);
	for (const char *p = choices;; p++) {
		if (strncmp(p, v, n) == 0 && (p[n] == '|' || p[n] == '\0'))
			return true;
		if (!(p = strchr(p, '|')))
			return false;
	}
}

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
		if (o[k].count && o[k].choices &&
		    !in_choices(o[k].choices, o[k].value))
			abort();
	}
}

/* A stand-in descriptor with the real command's name and option table;
 * its exec checks what the parser promised and stops. */
#define STUB(storage, var, cname, tmpl, n_)                                    \
	static int var##_exec(const ms__cmd_args *a, FILE *out, FILE *err)     \
	{                                                                      \
		(void)out;                                                     \
		(void)err;                                                     \
		check_parsed(a->o, a->n);                                      \
		return 0;                                                      \
	}                                                                      \
	storage const ms_cmd var = { .name = cname,                            \
		                     .summary = "stand-in",                    \
		                     .usage = "usage: " cname "\n",            \
		                     .opts = tmpl,                             \
		                     .nopts = n_,                              \
		                     .exec = var##_exec };

STUB(, ms_cmd_tui, "tui", ms__run_opts, MS__RO_COUNT)
STUB(, ms_cmd_run, "run", ms__run_opts, MS__RO_COUNT)
STUB(static, fixture_build, "fixture", ms__fixture_opts, MS__FX_COUNT)
STUB(, ms_cmd_export, "export", ms__export_opts, MS__EX_COUNT)
STUB(, ms_cmd_report, "report", ms__report_opts, MS__RP_COUNT)
STUB(, ms_cmd_merge_once, "merge-once", ms__merge_once_opts, MS__MO_COUNT)
STUB(, ms_cmd_clean, "clean", ms__clean_opts, MS__CL_COUNT)
STUB(, ms_cmd_bench, "bench", ms__bench_opts, MS__BN_COUNT)

/* `fixture`: the word "build", then its options, as the real one. */
static int
fixture_run(int argc, char **argv, FILE *out, FILE *err)
{
	if (argc < 2 || strcmp(argv[1], "build") != 0)
		return MS_EXIT_USAGE;
	return ms__cmd_main(&fixture_build, argc - 1, argv + 1, out, err);
}
const ms_cmd ms_cmd_fixture = { .name = "fixture",
	                        .summary = "stand-in",
	                        .usage = "usage: fixture\n",
	                        .run = fixture_run };

/* ms_cli_main removes the owner records of the run databases the command
 * wrote (tui/scratch.c, which this harness does not link); the stand-in
 * commands write none. */
void
ms__db_owner_release(void)
{
}

/* `--version` describes the build (replay/environ.c, not linked). */
void
ms_build_describe(char *out, size_t n)
{
	snprintf(out, n, "stand-in");
}

static FILE *devnull;

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = fz_text(data, size, 8192);
	if (!buf)
		return 0;
	if (!devnull && !(devnull = fopen("/dev/null", "w")))
		abort();
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
