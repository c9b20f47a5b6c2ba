/*
 * cmd_merge_once.c - `mergescope merge-once`: run the one pending merge of
 * a frozen shard (made with `f` at a dispatch barrier) from fresh copies,
 * REPS times per variant, alternating the variants, and print medians and
 * coefficients of variation (ms_merge_once). The frozen directory is never
 * modified.
 */
#include "cli.h"

#include "ms_replay.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_VARIANTS 16

static const char usage[] =
        "usage: mergescope merge-once --frozen DIR --variant V "
        "[--variant V2]...\n"
        "                             [--reps N] [--grace-policy P]\n"
        "                             [--plugin-host inproc|process]\n"
        "                             [--staging retain|reread]\n"
        "                             [--clock mature|run]\n"
        "\n"
        "Runs the pending merge of a frozen shard (made with f at a dispatch\n"
        "barrier) on a fresh copy, N times per variant, alternating the\n"
        "variants, and prints wall, CPU, allocation and peak figures as\n"
        "medians with their coefficients of variation, and whether every\n"
        "repetition wrote the same output ledgers. DIR is never modified.\n"
        "\n"
        "  --frozen DIR        a shard frozen at a barrier\n"
        "  --variant V         disabled, alwayskeep, detdrop:PCT, skywalking\n"
        "                      or a chain spec (repeatable)\n"
        "  --reps N            repetitions per variant (default 5)\n"
        "  --grace-policy P    selection or trace (default trace: every\n"
        "                      input counts as matured)\n"
        "  --plugin-host H     inproc (default) or process: see `run`\n"
        "  --staging S         retain (default) or reread: see `run`\n"
        "  --clock C           mature (default: every input matured) or\n"
        "                      run (the run's clock at the barrier: a hot\n"
        "                      selection stays hot)\n";

static int
run(int argc, char **argv, FILE *out, FILE *err)
{
	if (ms__cmd_wants_help(&ms_cmd_merge_once, argc, argv, out))
		return 0;
	ms__opt o[MS__MO_COUNT];
	memcpy(o, ms__merge_once_opts, sizeof(o));
	int rc = ms__cmd_parse(&ms_cmd_merge_once, argc, argv, o, MS__MO_COUNT,
	                       err);
	if (rc)
		return rc;
	unsigned reps = 5;
	if (o[MS__MO_REPS].count) {
		char *end;
		long n = strtol(o[MS__MO_REPS].value, &end, 10);
		if (!*o[MS__MO_REPS].value || *end || n < 1 || n > 1000000) {
			fprintf(err,
			        "mergescope merge-once: --reps \"%s\": "
			        "expected a count from 1 to 1000000\n",
			        o[MS__MO_REPS].value);
			return MS_EXIT_USAGE;
		}
		reps = (unsigned)n;
	}
	if (o[MS__MO_GRACE].count &&
	    strcmp(o[MS__MO_GRACE].value, "selection") != 0 &&
	    strcmp(o[MS__MO_GRACE].value, "trace") != 0) {
		fprintf(err,
		        "mergescope merge-once: --grace-policy \"%s\": "
		        "expected selection or trace\n",
		        o[MS__MO_GRACE].value);
		return MS_EXIT_USAGE;
	}
	enum ms_staging_mode sm;
	if (o[MS__MO_STAGING].count &&
	    ms_staging_mode_parse(o[MS__MO_STAGING].value, &sm)) {
		fprintf(err,
		        "mergescope merge-once: --staging \"%s\": expected "
		        "retain or reread\n",
		        o[MS__MO_STAGING].value);
		return MS_EXIT_USAGE;
	}
	if (o[MS__MO_CLOCK].count && strcmp(o[MS__MO_CLOCK].value, "run") &&
	    strcmp(o[MS__MO_CLOCK].value, "mature")) {
		fprintf(err,
		        "mergescope merge-once: --clock \"%s\": expected "
		        "mature or run\n",
		        o[MS__MO_CLOCK].value);
		return MS_EXIT_USAGE;
	}
	/* Every --variant, in order (the option keeps only the last). */
	const char *variants[MAX_VARIANTS];
	size_t nv = ms__opt_values(argc, argv, o, MS__MO_COUNT,
	                           &o[MS__MO_VARIANT], variants, MAX_VARIANTS);
	if (nv > MAX_VARIANTS) {
		fprintf(err,
		        "mergescope merge-once: at most %d --variant options\n",
		        MAX_VARIANTS);
		return MS_EXIT_USAGE;
	}
	struct stat st;
	if (stat(o[MS__MO_FROZEN].value, &st) < 0 || !S_ISDIR(st.st_mode)) {
		fprintf(err,
		        "mergescope merge-once: --frozen %s: no such directory "
		        "(freeze one with f at a barrier in the TUI)\n",
		        o[MS__MO_FROZEN].value);
		return MS_EXIT_ERROR;
	}
	enum ms_plugin_host_mode host_mode;
	if (ms__plugin_host_arg("merge-once", o[MS__MO_PLUGIN_HOST].value,
	                        &host_mode, err))
		return MS_EXIT_USAGE;
	char plugin_dir[4096], host_exe[4096];
	ms__plugin_dir(plugin_dir, sizeof(plugin_dir));
	ms__self_exe(host_exe, sizeof(host_exe));
	ms_merge_once_opts mo;
	memset(&mo, 0, sizeof(mo));
	mo.frozen_dir = o[MS__MO_FROZEN].value;
	mo.variants = variants;
	mo.nvariants = nv;
	mo.reps = reps;
	mo.plugin_dir = plugin_dir;
	mo.grace_policy = o[MS__MO_GRACE].value;
	mo.staging = o[MS__MO_STAGING].value;
	mo.run_clock = o[MS__MO_CLOCK].count &&
	               strcmp(o[MS__MO_CLOCK].value, "run") == 0;
	mo.plugin_host = host_mode;
	mo.plugin_host_exe = host_exe;
	mo.out = out;
	ms_merge_once_result *res = calloc(nv, sizeof(*res));
	if (!res) {
		fprintf(err, "mergescope merge-once: out of memory\n");
		return MS_EXIT_ERROR;
	}
	ms_errbuf eb = { "" };
	rc = ms_merge_once(&mo, res, &eb);
	bool unstable = false;
	for (size_t i = 0; rc == 0 && i < nv; i++)
		if (!res[i].ledgers_stable) {
			fprintf(err,
			        "mergescope merge-once: variant %s wrote "
			        "different output ledgers across repetitions\n",
			        res[i].variant);
			unstable = true;
		}
	free(res);
	if (rc) {
		fprintf(err, "mergescope merge-once: %s\n",
		        eb.msg[0] ? eb.msg : ms_strerror(rc));
		return MS_EXIT_ERROR;
	}
	return unstable ? 1 : 0;
}

const ms_cmd ms_cmd_merge_once = {
	.name = "merge-once",
	.summary =
	        "controlled single merge: --frozen DIR --variant V [--reps N]",
	.usage = usage,
	.run = run,
};
