/*
 * cli_opts.c - the options every command accepts, one const table per
 * command, which the command's descriptor carries (ms_cmd.opts):
 * ms__cmd_main copies it, parses argv against the copy (count and value)
 * and checks every value that has a fixed set of choices before the
 * command's exec runs. The command-line fuzz harness, which links cli.c
 * and this file only, parses with the same tables, so its stand-ins cannot
 * drift from the commands.
 */
#include "cli.h"

/* An option: "--name", the name of its value (NULL for a flag). */
#define OPT(n, a, req, rep)                                                    \
	{                                                                      \
		.name = (n), .arg = (a), .required = (req), .repeat = (rep)    \
	}
/* An option whose value is one of choices ("a|b"), given at most once. */
#define CHOICE(n, a, ch)                                                       \
	{                                                                      \
		.name = (n), .arg = (a), .choices = (ch)                       \
	}

const ms__opt ms__run_opts[MS__RO_COUNT] = {
	[MS__RO_FIXTURE] = OPT("--fixture", "DIR", false, false),
	[MS__RO_PRESET] = OPT("--preset", "P", false, false),
	[MS__RO_VARIANT] = OPT("--variant", "V", false, false),
	[MS__RO_CHAIN] = OPT("--chain", "SPEC", false, false),
	[MS__RO_GRACE] =
	        CHOICE("--grace-policy", "selection|trace", "selection|trace"),
	[MS__RO_SERIAL] = OPT("--serial", NULL, false, false),
	[MS__RO_PROFILE] = OPT("--profile", "SPEC", false, false),
	[MS__RO_DB] = OPT("--db", "FILE", false, false),
	[MS__RO_WORKDIR] = OPT("--work-dir", "DIR", false, false),
	[MS__RO_WAIT_TIMEOUT] = OPT("--wait-timeout", "DURATION", false, false),
	[MS__RO_CACHE] =
	        CHOICE("--cache", "warm|cold", "warm|cold|uncontrolled"),
	[MS__RO_BREAK] = OPT("--break", "SPEC", false, true),
	[MS__RO_PAUSED] = OPT("--paused", NULL, false, false),
	[MS__RO_SPEED] = OPT("--speed", "X", false, false),
	[MS__RO_NOCOLOR] = OPT("--no-color", NULL, false, false),
	[MS__RO_ASCII] = OPT("--ascii", NULL, false, false),
	[MS__RO_HEADLESS] = OPT("--headless", NULL, false, false),
	[MS__RO_PLUGIN_HOST] =
	        CHOICE("--plugin-host", "inproc|process", "inproc|process"),
	[MS__RO_ENVELOPE] = CHOICE("--envelope", "auto|cgroup|emulated",
	                           "auto|cgroup|emulated"),
	[MS__RO_STAGING] =
	        CHOICE("--staging", "retain|reread", "retain|reread"),
	[MS__RO_CHECKPOINT_EVERY] =
	        OPT("--checkpoint-every", "DURATION", false, false),
	[MS__RO_JSON] = OPT("--json", "FILE", false, false),
	[MS__RO_ALLOW_FAIL_OPEN] = OPT("--allow-fail-open", NULL, false, false),
	[MS__RO_FORCE] = OPT("--force", NULL, false, false),
	[MS__RO_FREEZE_AT] = OPT("--freeze-at", "SPEC", false, false),
};

const ms__opt ms__fixture_opts[MS__FX_COUNT] = {
	/* One of --preset and --scale; --seed, required, after their
	 * values (cmd_fixture.c checks). */
	[MS__FX_PRESET] = OPT("--preset", "P", false, false),
	[MS__FX_SEED] = OPT("--seed", "N", false, false),
	[MS__FX_OUT] = OPT("--out", "DIR", false, false),
	[MS__FX_OPENING] = CHOICE("--opening", "empty|warm", "empty|warm"),
	[MS__FX_SCALE] = OPT("--scale", "N", false, false),
	[MS__FX_DICTIONARY] = OPT("--dictionary", NULL, false, false),
};

const ms__opt ms__export_opts[MS__EX_COUNT] = {
	/* --db and --format required, after --filter's value
	 * (cmd_export.c checks). */
	[MS__EX_DB] = OPT("--db", "FILE", false, false),
	[MS__EX_FORMAT] = { .name = "--format",
	                    .arg = "jsonl|csv|chrome",
	                    .choices = "jsonl|csv|chrome" },
	/* "-": standard output. */
	[MS__EX_OUT] = { .name = "--out", .arg = "FILE", .dash = true },
	[MS__EX_FILTER] = OPT("--filter", "TEXT", false, false),
	[MS__EX_FORCE] = OPT("--force", NULL, false, false),
};

const ms__opt ms__report_opts[MS__RP_COUNT] = {
	[MS__RP_DB] = OPT("--db", "FILE", false, false),
	[MS__RP_VS] = OPT("--vs", "FILE", false, false),
	[MS__RP_JSON] = OPT("--json", NULL, false, false),
	[MS__RP_HTML] = OPT("--html", "FILE", false, false),
	[MS__RP_FORCE] = OPT("--force", NULL, false, false),
	[MS__RP_COLLECT] = OPT("--collect", "DIR", false, true),
};

const ms__opt ms__clean_opts[MS__CL_COUNT] = {
	[MS__CL_RUNS] = OPT("--runs", NULL, false, false),
	[MS__CL_FROZEN] = OPT("--frozen", NULL, false, false),
	[MS__CL_OLDER] = OPT("--older-than", "AGE", false, false),
	[MS__CL_DRY] = OPT("--dry-run", NULL, false, false),
};

const ms__opt ms__merge_once_opts[MS__MO_COUNT] = {
	/* Both required, after the values (cmd_merge_once.c checks). */
	[MS__MO_FROZEN] = OPT("--frozen", "DIR", false, false),
	[MS__MO_VARIANT] = OPT("--variant", "V", false, true),
	[MS__MO_REPS] = OPT("--reps", "N", false, false),
	[MS__MO_GRACE] =
	        CHOICE("--grace-policy", "selection|trace", "selection|trace"),
	[MS__MO_PLUGIN_HOST] =
	        CHOICE("--plugin-host", "inproc|process", "inproc|process"),
	[MS__MO_STAGING] =
	        CHOICE("--staging", "retain|reread", "retain|reread"),
	[MS__MO_CLOCK] = CHOICE("--clock", "mature|run", "mature|run"),
};

const ms__opt ms__bench_opts[MS__BN_COUNT] = {
	[MS__BN_VARIANTS] = OPT("--variants", "LIST", false, false),
	[MS__BN_REPS] = OPT("--reps", "N", false, false),
	[MS__BN_FIXTURE] = OPT("--fixture", "DIR", false, false),
	[MS__BN_PRESET] = OPT("--preset", "P", false, false),
	[MS__BN_PROFILE] = OPT("--profile", "SPEC", false, false),
	[MS__BN_CACHE] =
	        CHOICE("--cache", "warm|cold", "warm|cold|uncontrolled"),
	[MS__BN_OUT] = OPT("--out", "DIR", false, false),
	[MS__BN_EMIT] = CHOICE("--emit", "KIND", "parallel|slurm"),
	[MS__BN_COLLECT] = OPT("--collect", "DIR", false, false),
	[MS__BN_ENVELOPE] = CHOICE("--envelope", "auto|cgroup|emulated",
	                           "auto|cgroup|emulated"),
	[MS__BN_JOBS] = OPT("--jobs", "N", false, false),
	[MS__BN_VARIANT] = OPT("--variant", "V", false, true),
};

_Static_assert(MS__RO_COUNT <= MS__MAX_OPTS && MS__BN_COUNT <= MS__MAX_OPTS,
               "a command has at most MS__MAX_OPTS options");
