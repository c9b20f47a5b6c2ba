/*
 * cli_opts.c - the options every command accepts, one const table per
 * command. A command copies its table into a local array and parses argv
 * against the copy (ms__cmd_parse fills in count and value); the
 * command-line fuzz harness, which links cli.c and this file only, parses
 * with the same tables, so its stand-ins cannot drift from the commands.
 */
#include "cli.h"

#define OPT(name, arg, required, repeat)                                       \
	{                                                                      \
		name, arg, required, repeat, 0, NULL                           \
	}

const ms__opt ms__run_opts[MS__RO_COUNT] = {
	[MS__RO_FIXTURE] = OPT("--fixture", "DIR", false, false),
	[MS__RO_PRESET] = OPT("--preset", "P", false, false),
	[MS__RO_VARIANT] = OPT("--variant", "V", false, false),
	[MS__RO_CHAIN] = OPT("--chain", "SPEC", false, false),
	[MS__RO_GRACE] = OPT("--grace-policy", "selection|trace", false, false),
	[MS__RO_SERIAL] = OPT("--serial", NULL, false, false),
	[MS__RO_PROFILE] = OPT("--profile", "SPEC", false, false),
	[MS__RO_DB] = OPT("--db", "FILE", false, false),
	[MS__RO_WORKDIR] = OPT("--work-dir", "DIR", false, false),
	[MS__RO_WAIT_TIMEOUT] = OPT("--wait-timeout", "DURATION", false, false),
	[MS__RO_CACHE] = OPT("--cache", "warm|cold", false, false),
	[MS__RO_BREAK] = OPT("--break", "SPEC", false, true),
	[MS__RO_PAUSED] = OPT("--paused", NULL, false, false),
	[MS__RO_SPEED] = OPT("--speed", "X", false, false),
	[MS__RO_NOCOLOR] = OPT("--no-color", NULL, false, false),
	[MS__RO_ASCII] = OPT("--ascii", NULL, false, false),
	[MS__RO_HEADLESS] = OPT("--headless", NULL, false, false),
	[MS__RO_PLUGIN_HOST] =
	        OPT("--plugin-host", "inproc|process", false, false),
	[MS__RO_ENVELOPE] =
	        OPT("--envelope", "auto|cgroup|emulated", false, false),
	[MS__RO_JSON] = OPT("--json", "FILE", false, false),
	[MS__RO_ALLOW_FAIL_OPEN] = OPT("--allow-fail-open", NULL, false, false),
	[MS__RO_FORCE] = OPT("--force", NULL, false, false),
};

const ms__opt ms__fixture_opts[MS__FX_COUNT] = {
	/* One of --preset and --scale (cmd_fixture.c checks). */
	[MS__FX_PRESET] = OPT("--preset", "P", false, false),
	[MS__FX_SEED] = OPT("--seed", "N", true, false),
	[MS__FX_OUT] = OPT("--out", "DIR", false, false),
	[MS__FX_OPENING] = OPT("--opening", "empty|warm", false, false),
	[MS__FX_SCALE] = OPT("--scale", "N", false, false),
};

const ms__opt ms__export_opts[MS__EX_COUNT] = {
	[MS__EX_DB] = OPT("--db", "FILE", true, false),
	[MS__EX_FORMAT] = OPT("--format", "jsonl|csv|chrome", true, false),
	[MS__EX_OUT] = OPT("--out", "FILE", false, false),
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
	[MS__MO_FROZEN] = OPT("--frozen", "DIR", true, false),
	[MS__MO_VARIANT] = OPT("--variant", "V", true, true),
	[MS__MO_REPS] = OPT("--reps", "N", false, false),
	[MS__MO_GRACE] = OPT("--grace-policy", "selection|trace", false, false),
	[MS__MO_PLUGIN_HOST] =
	        OPT("--plugin-host", "inproc|process", false, false),
};

const ms__opt ms__bench_opts[MS__BN_COUNT] = {
	[MS__BN_VARIANTS] = OPT("--variants", "LIST", false, false),
	[MS__BN_REPS] = OPT("--reps", "N", false, false),
	[MS__BN_FIXTURE] = OPT("--fixture", "DIR", false, false),
	[MS__BN_PRESET] = OPT("--preset", "P", false, false),
	[MS__BN_PROFILE] = OPT("--profile", "SPEC", false, false),
	[MS__BN_CACHE] = OPT("--cache", "warm|cold", false, false),
	[MS__BN_OUT] = OPT("--out", "DIR", false, false),
	[MS__BN_EMIT] = OPT("--emit", "KIND", false, false),
	[MS__BN_COLLECT] = OPT("--collect", "DIR", false, false),
	[MS__BN_ENVELOPE] =
	        OPT("--envelope", "auto|cgroup|emulated", false, false),
	[MS__BN_JOBS] = OPT("--jobs", "N", false, false),
};
