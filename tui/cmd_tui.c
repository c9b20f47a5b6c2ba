/*
 * cmd_tui.c - `mergescope tui` (and plain `mergescope`): the interactive
 * replay on a fixture. Options are parsed and checked here; the session
 * needs the replay controller, and until that layer is in the build the
 * command says so and exits with status 2. With --headless, or when
 * stdout is not a terminal, the same run goes without curses (`run`).
 */
#include "cli.h"

#include <string.h>
#include <unistd.h>

static const char usage[] =
        "usage: mergescope tui [--fixture DIR | --preset P] [--variant V]\n"
        "                      [--chain V,V...] [--grace-policy "
        "selection|trace]\n"
        "                      [--db FILE] [--break SPEC]... [--no-color] "
        "[--ascii]\n"
        "\n"
        "Replays a fixture day through the merge engine and shows it live.\n"
        "Without --fixture the default fixture (preset day-2x) is built once\n"
        "and cached under $XDG_CACHE_HOME/mergescope/.\n"
        "\n"
        "  --fixture DIR        replay this fixture directory\n"
        "  --preset P           fixture preset when none is given (day-2x)\n"
        "  --variant V          disabled, alwayskeep, detdrop:PCT, skywalking\n"
        "                       (default skywalking)\n"
        "  --chain V,V...       several sampler links, in order\n"
        "  --grace-policy P     selection (default) or trace\n"
        "  --db FILE            record events to FILE (default: next to the\n"
        "                       run, shown on the status line)\n"
        "  --break SPEC         stop at a dispatch barrier: mature, sampling,\n"
        "                       merge=N, time=HH:MM[:SS], part=HEX,\n"
        "                       lane=fast|slow|finalize, depth>=D "
        "(repeatable)\n"
        "  --no-color           no colours (NO_COLOR in the environment too)\n"
        "  --ascii              ASCII borders and glyphs\n"
        "  --headless           no curses: progress and the report (= run)\n";

static int
run(int argc, char **argv, FILE *out, FILE *err)
{
	if (ms__cmd_wants_help(&ms_cmd_tui, argc, argv, out))
		return 0;
	ms__opt o[] = {
		{ "--fixture", "DIR", false, false, 0, NULL },
		{ "--preset", "P", false, false, 0, NULL },
		{ "--variant", "V", false, false, 0, NULL },
		{ "--chain", "V,V...", false, false, 0, NULL },
		{ "--grace-policy", "selection|trace", false, false, 0, NULL },
		{ "--db", "FILE", false, false, 0, NULL },
		{ "--break", "SPEC", false, true, 0, NULL },
		{ "--no-color", NULL, false, false, 0, NULL },
		{ "--ascii", NULL, false, false, 0, NULL },
		{ "--headless", NULL, false, false, 0, NULL },
	};
	int rc = ms__cmd_parse(&ms_cmd_tui, argc, argv, o,
	                       sizeof(o) / sizeof(o[0]), err);
	if (rc)
		return rc;
	if (o[0].count && o[1].count) {
		fprintf(err, "mergescope tui: give --fixture or --preset, "
		             "not both\n");
		return MS_EXIT_USAGE;
	}
	if (o[2].count && o[3].count) {
		fprintf(err, "mergescope tui: give --variant or --chain, "
		             "not both\n");
		return MS_EXIT_USAGE;
	}
	if (o[4].count && strcmp(o[4].value, "selection") != 0 &&
	    strcmp(o[4].value, "trace") != 0) {
		fprintf(err,
		        "mergescope tui: --grace-policy \"%s\": expected "
		        "selection or trace\n",
		        o[4].value);
		return MS_EXIT_USAGE;
	}
	if (o[9].count || !isatty(STDOUT_FILENO))
		return ms_cmd_run.run(argc, argv, out, err);
	return ms__cmd_not_built(&ms_cmd_tui, "the replay controller (replay/)",
	                         err);
}

const ms_cmd ms_cmd_tui = {
	.name = "tui",
	.summary = "watch and steer a replay live (the default)",
	.usage = usage,
	.run = run,
};
