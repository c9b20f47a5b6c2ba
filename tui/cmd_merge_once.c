/*
 * cmd_merge_once.c - `mergescope merge-once`: run the one pending merge of
 * a frozen shard (made with `f` at a barrier) under a variant, N times,
 * for controlled measurements. Needs the replay layer.
 */
#include "cli.h"

#include <stdlib.h>

static const char usage[] =
        "usage: mergescope merge-once --frozen DIR --variant V [--reps N]\n"
        "\n"
        "Runs the pending merge of a frozen shard (made with f at a dispatch\n"
        "barrier) on a fresh copy, REPS times, and prints its figures with\n"
        "medians. The frozen directory is never modified.\n"
        "\n"
        "  --frozen DIR   a shard frozen at a barrier\n"
        "  --variant V    disabled, alwayskeep, detdrop:PCT, skywalking\n"
        "  --reps N       repetitions (default 1)\n";

static int
run(int argc, char **argv, FILE *out, FILE *err)
{
	if (ms__cmd_wants_help(&ms_cmd_merge_once, argc, argv, out))
		return 0;
	ms__opt o[] = {
		{ "--frozen", "DIR", true, false, 0, NULL },
		{ "--variant", "V", true, false, 0, NULL },
		{ "--reps", "N", false, false, 0, NULL },
	};
	int rc = ms__cmd_parse(&ms_cmd_merge_once, argc, argv, o,
	                       sizeof(o) / sizeof(o[0]), err);
	if (rc)
		return rc;
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
	}
	return ms__cmd_not_built(&ms_cmd_merge_once,
	                         "the controlled merge runner (replay/)", err);
}

const ms_cmd ms_cmd_merge_once = {
	.name = "merge-once",
	.summary =
	        "controlled single merge: --frozen DIR --variant V [--reps N]",
	.usage = usage,
	.run = run,
};
