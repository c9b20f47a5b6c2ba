/*
 * cmd_run.c - `mergescope run --headless`: the same replay as the TUI
 * without curses, printing progress and the run report; the exit status is
 * non-zero if a correctness gate fails. Needs the replay layer.
 */
#include "cli.h"

#include <string.h>

static const char usage[] =
        "usage: mergescope run --headless [--fixture DIR | --preset P]\n"
        "                      [--variant V | --chain V,V...]\n"
        "                      [--grace-policy selection|trace] [--db FILE]\n"
        "\n"
        "Replays a fixture day without the screen: prints progress, where\n"
        "events are recorded, and the run report with every correctness\n"
        "gate. Exit status: 0 when every gate passes, 1 when one fails, 2 on\n"
        "an error before the run completes.\n"
        "\n"
        "  --headless           required: this command never opens curses\n"
        "  --fixture DIR        replay this fixture directory\n"
        "  --preset P           fixture preset when none is given (day-2x)\n"
        "  --variant V          disabled, alwayskeep, detdrop:PCT, skywalking\n"
        "  --chain V,V...       several sampler links, in order\n"
        "  --grace-policy P     selection (default) or trace\n"
        "  --db FILE            record events to FILE\n";

static int
run(int argc, char **argv, FILE *out, FILE *err)
{
	if (ms__cmd_wants_help(&ms_cmd_run, argc, argv, out))
		return 0;
	ms__opt o[] = {
		{ "--headless", NULL, false, false, 0, NULL },
		{ "--fixture", "DIR", false, false, 0, NULL },
		{ "--preset", "P", false, false, 0, NULL },
		{ "--variant", "V", false, false, 0, NULL },
		{ "--chain", "V,V...", false, false, 0, NULL },
		{ "--grace-policy", "selection|trace", false, false, 0, NULL },
		{ "--db", "FILE", false, false, 0, NULL },
		/* Accepted so `tui --headless` can hand its options over. */
		{ "--break", "SPEC", false, true, 0, NULL },
		{ "--no-color", NULL, false, false, 0, NULL },
		{ "--ascii", NULL, false, false, 0, NULL },
	};
	int rc = ms__cmd_parse(&ms_cmd_run, argc, argv, o,
	                       sizeof(o) / sizeof(o[0]), err);
	if (rc)
		return rc;
	if (o[5].count && strcmp(o[5].value, "selection") != 0 &&
	    strcmp(o[5].value, "trace") != 0) {
		fprintf(err,
		        "mergescope run: --grace-policy \"%s\": expected "
		        "selection or trace\n",
		        o[5].value);
		return MS_EXIT_USAGE;
	}
	return ms__cmd_not_built(&ms_cmd_run, "the replay controller (replay/)",
	                         err);
}

const ms_cmd ms_cmd_run = {
	.name = "run",
	.summary = "the same replay without curses: progress and the report",
	.usage = usage,
	.run = run,
};
