/*
 * cmd_export.c - `mergescope export`: write the merge events recorded in
 * an event database as JSON Lines, CSV or Chrome trace-event JSON, all of
 * them or those a filter in the TUI's `/` syntax passes, to a file
 * (written beside it and renamed, so a reader never sees half a file) or
 * to standard output.
 */
#include "cli.h"

#include "ms_replay_ctl.h"
#include "ms_replay_events.h"

#include <inttypes.h>

static const char usage[] =
        "usage: mergescope export --db FILE --format jsonl|csv|chrome "
        "[--out FILE]\n"
        "                         [--filter TEXT]\n"
        "\n"
        "Writes the recorded merge events of an event database. jsonl is\n"
        "one merge per line; csv is RFC 4180 with a header; chrome is\n"
        "Chrome trace-event JSON (merges on lane tracks, publications,\n"
        "counters for the inventory and staged bytes) that Perfetto opens.\n"
        "\n"
        "  --db FILE        the event database of a run\n"
        "  --format F       jsonl, csv or chrome\n"
        "  --out FILE       output file (default: standard output)\n"
        "  --filter TEXT    only events matching TEXT, as `/` in the TUI:\n"
        "                   lane=L class=C reason=R phase=P seq=A..B #N,\n"
        "                   other words match the event's summary line\n";

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
	int fmt = ms_export_format_parse(o[1].value);
	if (fmt < 0) {
		fprintf(err,
		        "mergescope export: --format \"%s\": expected jsonl, "
		        "csv or chrome\n",
		        o[1].value);
		return MS_EXIT_USAGE;
	}
	ms_tui_filter tf;
	ms_ev_filter ef;
	ms_errbuf eb = { "" };
	char why[MS_VIEW_TEXT];
	if (o[3].count) {
		if (!ms_tui_filter_parse(o[3].value, &tf, why, sizeof(why))) {
			fprintf(err, "mergescope export: --filter \"%s\": %s\n",
			        o[3].value, why);
			return MS_EXIT_USAGE;
		}
		if (ms_replay_ctl_filter(&tf, &ef, &eb)) {
			fprintf(err, "mergescope export: --filter \"%s\": %s\n",
			        o[3].value, eb.msg);
			return MS_EXIT_USAGE;
		}
	}
	ms_evdb *db = NULL;
	if ((rc = ms_evdb_open(&db, o[0].value, &eb))) {
		fprintf(err, "mergescope export: --db %s: %s\n", o[0].value,
		        eb.msg[0] ? eb.msg : ms_strerror(rc));
		return MS_EXIT_ERROR;
	}
	uint64_t written = 0;
	const ms_ev_filter *f = o[3].count ? &ef : NULL;
	if (o[2].count) {
		rc = ms_export_file(db, (enum ms_export_format)fmt, f,
		                    o[2].value, &written, &eb);
	} else {
		rc = ms_export(db, (enum ms_export_format)fmt, f, out, &written,
		               &eb);
		if (rc == 0 && fflush(out) != 0)
			rc = ms_fail(&eb, MS_ERR_IO,
			             "writing to standard output failed");
	}
	ms_evdb_close(db);
	if (rc) {
		fprintf(err, "mergescope export: %s\n",
		        eb.msg[0] ? eb.msg : ms_strerror(rc));
		return MS_EXIT_ERROR;
	}
	if (o[2].count)
		fprintf(err, "exported %" PRIu64 " merges as %s to %s\n",
		        written, o[1].value, o[2].value);
	return 0;
}

const ms_cmd ms_cmd_export = {
	.name = "export",
	.summary =
	        "export recorded events: --db FILE --format jsonl|csv|chrome",
	.usage = usage,
	.run = run,
};
