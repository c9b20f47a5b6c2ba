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
        "                      input counts as matured)\n";

static int
run(int argc, char **argv, FILE *out, FILE *err)
{
	if (ms__cmd_wants_help(&ms_cmd_merge_once, argc, argv, out))
		return 0;
	ms__opt o[] = {
		{ "--frozen", "DIR", true, false, 0, NULL },
		{ "--variant", "V", true, true, 0, NULL },
		{ "--reps", "N", false, false, 0, NULL },
		{ "--grace-policy", "selection|trace", false, false, 0, NULL },
	};
	int rc = ms__cmd_parse(&ms_cmd_merge_once, argc, argv, o,
	                       sizeof(o) / sizeof(o[0]), err);
	if (rc)
		return rc;
	unsigned reps = 5;
	if (o[2].count) {
		char *end;
		long n = strtol(o[2].value, &end, 10);
		if (!*o[2].value || *end || n < 1 || n > 1000000) {
			fprintf(err,
			        "mergescope merge-once: --reps \"%s\": "
			        "expected a count from 1 to 1000000\n",
			        o[2].value);
			return MS_EXIT_USAGE;
		}
		reps = (unsigned)n;
	}
	if (o[3].count && strcmp(o[3].value, "selection") != 0 &&
	    strcmp(o[3].value, "trace") != 0) {
		fprintf(err,
		        "mergescope merge-once: --grace-policy \"%s\": "
		        "expected selection or trace\n",
		        o[3].value);
		return MS_EXIT_USAGE;
	}
	/* Every --variant, in order (the option keeps only the last). */
	const char *variants[MAX_VARIANTS];
	size_t nv = 0;
	for (int i = 1; i < argc; i++) {
		const char *v = NULL;
		if (strcmp(argv[i], "--variant") == 0 && i + 1 < argc)
			v = argv[++i];
		else if (strncmp(argv[i], "--variant=", 10) == 0)
			v = argv[i] + 10;
		else if (strcmp(argv[i], "--frozen") == 0 ||
		         strcmp(argv[i], "--reps") == 0 ||
		         strcmp(argv[i], "--grace-policy") == 0)
			i++;
		if (!v)
			continue;
		if (nv == MAX_VARIANTS) {
			fprintf(err,
			        "mergescope merge-once: at most %d --variant "
			        "options\n",
			        MAX_VARIANTS);
			return MS_EXIT_USAGE;
		}
		variants[nv++] = v;
	}
	struct stat st;
	if (stat(o[0].value, &st) < 0 || !S_ISDIR(st.st_mode)) {
		fprintf(err,
		        "mergescope merge-once: --frozen %s: no such directory "
		        "(freeze one with f at a barrier in the TUI)\n",
		        o[0].value);
		return MS_EXIT_ERROR;
	}
	char plugin_dir[4096];
	ms__plugin_dir(plugin_dir, sizeof(plugin_dir));
	ms_merge_once_opts mo;
	memset(&mo, 0, sizeof(mo));
	mo.frozen_dir = o[0].value;
	mo.variants = variants;
	mo.nvariants = nv;
	mo.reps = reps;
	mo.plugin_dir = plugin_dir;
	mo.grace_policy = o[3].value;
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
