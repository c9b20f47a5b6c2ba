/*
 * cmd_export.c - `mergescope export`: write the merge events recorded in
 * an event database as JSON Lines, CSV or Chrome trace-event JSON. Needs
 * the replay layer's recorder and exporters.
 */
#include "cli.h"

static const char usage[] =
        "usage: mergescope export --db FILE --format jsonl|csv|chrome "
        "[--out FILE]\n"
        "\n"
        "Writes the recorded merge events of an event database. chrome is\n"
        "Chrome trace-event JSON (merges on lane tracks, counters for the\n"
        "inventory and staged bytes) that Perfetto opens.\n"
        "\n"
        "  --db FILE        the event database of a run\n"
        "  --format F       jsonl, csv or chrome\n"
        "  --out FILE       output file (default: standard output)\n"
        "  --filter TEXT    only events matching TEXT (the TUI's / syntax)\n";

static int
run(int argc, char **argv, FILE *out, FILE *err)
{
	if (ms__cmd_wants_help(&ms_cmd_export, argc, argv, out))
		return 0;
	ms__opt o[] = {
		{ "--db", "FILE", true, false, 0, NULL },
		{ "--format", "jsonl|csv|chrome", true, false, 0, NULL },
		{ "--out", "FILE", false, false, 0, NULL },
		{ "--filter", "TEXT", false, false, 0, NULL },
	};
	int rc = ms__cmd_parse(&ms_cmd_export, argc, argv, o,
	                       sizeof(o) / sizeof(o[0]), err);
	if (rc)
		return rc;
	enum ms_tui_format f;
	if (!ms_tui_format_parse(o[1].value, &f)) {
		fprintf(err,
		        "mergescope export: --format \"%s\": expected jsonl, "
		        "csv or chrome\n",
		        o[1].value);
		return MS_EXIT_USAGE;
	}
	return ms__cmd_not_built(&ms_cmd_export,
	                         "the event recorder and exporters (replay/)",
	                         err);
}

const ms_cmd ms_cmd_export = {
	.name = "export",
	.summary =
	        "export recorded events: --db FILE --format jsonl|csv|chrome",
	.usage = usage,
	.run = run,
};
