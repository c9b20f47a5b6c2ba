/*
 * cmd_report.c - `mergescope report`: the run report of an event
 * database, and with --vs the variant comparison tables against another.
 * Needs the replay layer.
 */
#include "cli.h"

static const char usage[] =
        "usage: mergescope report --db FILE [--vs FILE]\n"
        "\n"
        "Prints the run report of an event database: configuration, phases\n"
        "(primary, cooldown), resource figures, and every correctness gate.\n"
        "With --vs, compares two runs of the same fixture side by side\n"
        "(selection fingerprints, logical outputs, costs as ratios).\n"
        "\n"
        "  --db FILE    the event database of a run\n"
        "  --vs FILE    another run to compare against\n";

static int
run(int argc, char **argv, FILE *out, FILE *err)
{
	if (ms__cmd_wants_help(&ms_cmd_report, argc, argv, out))
		return 0;
	ms__opt o[] = {
		{ "--db", "FILE", true, false, 0, NULL },
		{ "--vs", "FILE", false, false, 0, NULL },
	};
	int rc = ms__cmd_parse(&ms_cmd_report, argc, argv, o,
	                       sizeof(o) / sizeof(o[0]), err);
	if (rc)
		return rc;
	return ms__cmd_not_built(&ms_cmd_report, "the run report (replay/)",
	                         err);
}

const ms_cmd ms_cmd_report = {
	.name = "report",
	.summary = "run report and variant comparison: --db FILE [--vs FILE]",
	.usage = usage,
	.run = run,
};
