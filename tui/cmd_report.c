/*
 * cmd_report.c - `mergescope report`: the run report of an event database
 * (text, or JSON with --json), and with --vs the variant comparison tables
 * against another run of the same fixture. Exit status 1 when a gate of
 * the run failed, or when --vs compares a disabled and an alwayskeep run
 * whose selection fingerprints or logical outputs differ.
 */
#include "cli.h"

#include "ms_replay_events.h"
#include "series.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

static const char usage[] =
        "usage: mergescope report --db FILE [--vs FILE] [--json]\n"
        "                         [--html FILE [--force]]\n"
        "       mergescope report --collect DIR [--collect DIR...] [--json]\n"
        "                         [--html FILE [--force]]\n"
        "\n"
        "Prints the run report of an event database: configuration, phases\n"
        "(primary, cooldown), resource figures, and every correctness gate.\n"
        "With --vs, compares two runs of the same fixture side by side\n"
        "(each figure of both and the delta in %) and, for a disabled and\n"
        "an alwayskeep run, checks that their selection fingerprints and\n"
        "logical outputs are identical. Exit status 1 when a gate failed or\n"
        "that check failed, or when a run did not finish (killed, aborted,\n"
        "failed: its gates were never checked; --vs then prints no deltas),\n"
        "2 when a database or series cannot be read or --html\n"
        "written, 64 for a usage error.\n"
        "\n"
        "  --db FILE    the event database of a run\n"
        "  --vs FILE    another run to compare against\n"
        "  --json       the report as one JSON object (not with --vs)\n"
        "  --html FILE  also write one self-contained HTML file: charts\n"
        "               (merges per lane worker on wall time, inventory\n"
        "               over the day, staged bytes, Decide latency), the\n"
        "               report and, with --vs, the comparison; opens\n"
        "               offline; an existing FILE is refused unless\n"
        "               --force\n"
        "  --force      replace an existing --html FILE\n"
        "  --collect DIR  summarise bench series directories instead (one\n"
        "               or many, e.g. one per host of a GNU parallel or\n"
        "               Slurm series): the table of `mergescope bench`\n"
        "               over all their runs (--json: its figures; --html:\n"
        "               box plots per metric), variants matched by name;\n"
        "               a directory whose runs differ in fixture, binary,\n"
        "               profile, envelope, cache label or host conditions\n"
        "               from the first is refused\n";

static int
open_db(ms_evdb **db, const char *opt, const char *path, FILE *err)
{
	ms_errbuf eb = { "" };
	int rc = ms_evdb_open(db, path, &eb);
	if (rc)
		ms__say_db_error(err, "report", opt, path, rc, &eb);
	return rc;
}

/* Where --html went, when it was given and written: a line on err after
 * the report (as export and run --json name their files). */
static void
say_html(const ms__opt *o, FILE *err)
{
	if (o[MS__RP_HTML].count)
		fprintf(err, "report as HTML in %s\n", o[MS__RP_HTML].value);
}

/* `report --collect DIR...`: bench series directories, summarised. */
static int
collect(const ms__cmd_args *args, FILE *out, FILE *err)
{
	const ms__opt *o = args->o;
	if (o[MS__RP_DB].count || o[MS__RP_VS].count) {
		fprintf(err, "mergescope report: --collect summarises series "
		             "directories; it does not take --db or --vs\n");
		return MS_EXIT_USAGE;
	}
	if (o[MS__RP_FORCE].count && !o[MS__RP_HTML].count) {
		fprintf(err, "mergescope report: --force needs --html FILE\n");
		return MS_EXIT_USAGE;
	}
	const char *dirs[64];
	size_t nd = ms__cmd_values(args, MS__RP_COLLECT, dirs, 64);
	if (nd > 64) {
		fprintf(err, "mergescope report: at most 64 --collect "
		             "directories\n");
		return MS_EXIT_USAGE;
	}
	/* A directory given twice would count each of its runs twice. */
	for (size_t i = 0; i < nd; i++)
		for (size_t j = 0; j < i; j++) {
			struct stat a, b;
			if (stat(dirs[i], &a) != 0 || stat(dirs[j], &b) != 0 ||
			    a.st_dev != b.st_dev || a.st_ino != b.st_ino)
				continue;
			fprintf(err,
			        "mergescope report: --collect %s and --collect "
			        "%s are the same directory; give each once\n",
			        dirs[j], dirs[i]);
			return MS_EXIT_USAGE;
		}
	ms__series s;
	int rc = ms__series_load(&s, dirs, nd, NULL, 0, "report", err);
	ms_errbuf eb = { "" };
	if (rc == 0 && o[MS__RP_HTML].count) {
		ms_outfile *h = NULL;
		rc = ms_outfile_open(&h, o[MS__RP_HTML].value,
		                     o[MS__RP_FORCE].count > 0, &eb);
		if (rc == 0)
			rc = ms_bench_html(s.runs, s.n, s.labels, s.nv, dirs[0],
			                   ms_outfile_stream(h), &eb);
		if (rc == 0)
			rc = ms_outfile_commit(h, &eb);
		else
			rc = ms_outfile_fail(h, rc, &eb);
		if (rc)
			rc = ms__say_out_error(err, "report", "--html",
			                       o[MS__RP_HTML].value, rc, &eb);
	}
	if (rc == 0) {
		bool json = o[MS__RP_JSON].count > 0;
		rc = ms_bench_summary(s.runs, s.n, s.labels, s.nv,
		                      json ? NULL : out, json ? out : NULL,
		                      &eb);
		if (rc) {
			fprintf(err, "mergescope report: %s\n",
			        eb.msg[0] ? eb.msg : ms_strerror(rc));
			rc = MS_EXIT_ERROR;
		}
	}
	if (rc == 0)
		say_html(o, err);
	if (rc == 0)
		rc = ms__series_check_variants(&s, "report", err);
	ms__series_free(&s);
	return rc;
}

static int
exec(const ms__cmd_args *args, FILE *out, FILE *err)
{
	const ms__opt *o = args->o;
	int rc;
	if (o[MS__RP_COLLECT].count)
		return collect(args, out, err);
	if (!o[MS__RP_DB].count) {
		fprintf(err, "mergescope report: option --db FILE is required "
		             "(or --collect DIR)\n");
		return MS_EXIT_USAGE;
	}
	if (o[MS__RP_VS].count && o[MS__RP_JSON].count) {
		fprintf(err, "mergescope report: --json prints one run; it "
		             "does not combine with --vs\n");
		return MS_EXIT_USAGE;
	}
	if (o[MS__RP_FORCE].count && !o[MS__RP_HTML].count) {
		fprintf(err, "mergescope report: --force needs --html FILE\n");
		return MS_EXIT_USAGE;
	}
	if (o[MS__RP_HTML].count && !*o[MS__RP_HTML].value) {
		fprintf(err, "mergescope report: --html \"\": expected a file "
		             "name\n");
		return MS_EXIT_USAGE;
	}
	/* The HTML file never goes over a database it reads. */
	for (int k = 0; o[MS__RP_HTML].count && k < 2; k++) {
		const ms__opt *d = &o[k ? MS__RP_VS : MS__RP_DB];
		if (!d->count ||
		    !ms_evdb_path_is_db(d->value, o[MS__RP_HTML].value))
			continue;
		fprintf(err,
		        "mergescope report: --html %s: that is the event "
		        "database of %s %s or a file SQLite keeps beside it "
		        "(-wal, -shm, -journal); choose another file\n",
		        o[MS__RP_HTML].value, k ? "--vs" : "--db", d->value);
		return MS_EXIT_USAGE;
	}
	ms_evdb *a = NULL, *b = NULL;
	if (open_db(&a, "--db", o[MS__RP_DB].value, err))
		return MS_EXIT_ERROR;
	if (o[MS__RP_VS].count &&
	    open_db(&b, "--vs", o[MS__RP_VS].value, err)) {
		ms_evdb_close(a);
		return MS_EXIT_ERROR;
	}
	ms_errbuf eb = { "" };
	unsigned failed = 0;
	bool mismatch = false;
	if (o[MS__RP_HTML].count) {
		/* Beside the name, then renamed; an existing file only
		 * with --force. */
		ms_outfile *h = NULL;
		rc = ms_outfile_open(&h, o[MS__RP_HTML].value,
		                     o[MS__RP_FORCE].count > 0, &eb);
		if (rc == 0)
			rc = ms_report_html(a, b, ms_outfile_stream(h), &eb);
		if (rc == 0)
			rc = ms_outfile_commit(h, &eb);
		else
			rc = ms_outfile_fail(h, rc, &eb);
		if (rc) {
			ms_evdb_close(a);
			ms_evdb_close(b);
			return ms__say_out_error(err, "report", "--html",
			                         o[MS__RP_HTML].value, rc, &eb);
		}
	}
	char why[MS_EV_TEXT_MAX] = "";
	const char *unfinished = NULL; /* the side that did not finish */
	bool u = false;
	if (ms_report_unfinished(a, &u, why, sizeof(why), &eb) == 0 && u)
		unfinished = o[MS__RP_DB].value;
	else if (b && ms_report_unfinished(b, &u, why, sizeof(why), &eb) == 0 &&
	         u)
		unfinished = o[MS__RP_VS].value;
	/* With --vs, a gate either run failed fails the comparison too. */
	unsigned failed_b = 0;
	if (b) {
		rc = ms_report_failed_gates(a, &failed, &eb);
		if (rc == 0)
			rc = ms_report_failed_gates(b, &failed_b, &eb);
		if (rc == 0)
			rc = ms_report_compare(a, b, out, &mismatch, &eb);
	} else if (o[MS__RP_JSON].count)
		rc = ms_report_json(a, out, &failed, &eb);
	else
		rc = ms_report_text(a, out, &failed, &eb);
	ms_evdb_close(a);
	ms_evdb_close(b);
	if (rc) {
		fprintf(err, "mergescope report: %s\n",
		        eb.msg[0] ? eb.msg : ms_strerror(rc));
		return MS_EXIT_ERROR;
	}
	say_html(o, err);
	if (unfinished) {
		fprintf(err, "mergescope report: %s: %s\n", unfinished, why);
		return 1;
	}
	if (mismatch) {
		fprintf(err,
		        "mergescope report: %s and %s differ in selection "
		        "fingerprints or logical outputs\n",
		        o[MS__RP_DB].value, o[MS__RP_VS].value);
		return 1;
	}
	if (failed)
		fprintf(err, "mergescope report: %u gate%s failed in %s\n",
		        failed, failed == 1 ? "" : "s", o[MS__RP_DB].value);
	if (failed_b)
		fprintf(err, "mergescope report: %u gate%s failed in %s\n",
		        failed_b, failed_b == 1 ? "" : "s", o[MS__RP_VS].value);
	return failed || failed_b ? 1 : 0;
}

const ms_cmd ms_cmd_report = {
	.name = "report",
	.summary = "run report and variant comparison: --db FILE [--vs FILE]",
	.usage = usage,
	.opts = ms__report_opts,
	.nopts = MS__RP_COUNT,
	.exec = exec,
};
