/*
 * cmd_export.c - `mergescope export`: write the merge events recorded in
 * an event database as JSON Lines, CSV or Chrome trace-event JSON, all of
 * them or those a filter in the TUI's `/` syntax passes, to a file
 * (written beside it and renamed, so a reader never sees half a file; an
 * existing file only with --force) or to standard output.
 */
#include "cli.h"

#include "ms_replay_ctl.h"
#include "ms_replay_events.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>

static const char usage[] =
        "usage: mergescope export --db FILE --format jsonl|csv|chrome "
        "[--out FILE]\n"
        "                         [--force] [--filter TEXT]\n"
        "\n"
        "Writes the recorded merge events of an event database. jsonl is\n"
        "one merge per line; csv is RFC 4180 with a header; chrome is\n"
        "Chrome trace-event JSON (merges on lane tracks, publications,\n"
        "counters for the inventory and staged bytes) that Perfetto opens.\n"
        "Exit status 0 (also when --filter passes no merge, which a line\n"
        "on standard error says), 2 when the database cannot be read or\n"
        "the output written, 64 for a usage error; a reader that closes\n"
        "standard output early (| head) stops it quietly, exit status\n"
        "141 (128 + SIGPIPE), as run's report.\n"
        "\n"
        "  --db FILE        the event database of a run\n"
        "  --format F       jsonl, csv or chrome\n"
        "  --out FILE       output file (default, or -: standard output);\n"
        "                   an existing file is refused unless --force\n"
        "  --force          replace an existing --out FILE\n"
        "  --filter TEXT    only events matching TEXT, as `/` in the TUI:\n"
        "                   lane=L class=C reason=R phase=P seq=A..B #N,\n"
        "                   other words match the event's summary line\n";

/* The merges of a database, and the first one's summary line. */
struct tally {
	uint64_t n;
	char first[256];
};

static int
tally_merge(void *ctx, const ms_ev_merge *m)
{
	struct tally *t = ctx;
	if (t->n++ == 0) {
		ms_ev_merge_summary(m, t->first, sizeof(t->first));
		/* up to its first input ID */
		char *in = strstr(t->first, " in ");
		char *comma = in ? strchr(in, ',') : NULL;
		if (comma && (size_t)(comma - t->first) + 4 < sizeof(t->first))
			memcpy(comma, ",...", 5);
	}
	return 0;
}

/* A filter that passed no merge says so, with what it is matched
 * against, rather than leaving an empty export unexplained. */
static void
say_no_match(ms_evdb *db, const char *filter, FILE *err)
{
	struct tally t = { 0, "" };
	ms_errbuf eb = { "" };
	if (ms_evdb_each_merge(db, NULL, tally_merge, &t, &eb) < 0)
		return;
	fprintf(err,
	        "mergescope export: --filter \"%s\" matched none of the "
	        "%" PRIu64 " merges in %s",
	        filter, t.n, ms_evdb_path(db));
	if (t.n)
		fprintf(err,
		        "; words other than lane=, class=, reason=, phase=, "
		        "seq= and #N must each occur in a merge's summary, "
		        "such as \"%s\"",
		        t.first);
	fputc('\n', err);
}

/* A run that did not finish (killed, aborted, failed, still running, or
 * a copy made without its -wal) is exported all the same, as far as it
 * was recorded, but not as if it were the whole day: one line says so,
 * with the reason the report gives and how many merges it holds. */
static void
say_unfinished(ms_evdb *db, uint64_t written, FILE *err)
{
	bool unfinished = false;
	char why[512];
	ms_errbuf eb = { "" };
	if (ms_report_unfinished(db, &unfinished, why, sizeof(why), &eb) ||
	    !unfinished)
		return;
	fprintf(err,
	        "mergescope export: note: %s: %s; what it recorded is "
	        "exported (%" PRIu64 " merges), not a whole day\n",
	        ms_evdb_path(db), why, written);
}

/* The export to standard output. A reader that closes it early
 * (`export ... | head`) stops the export as a normal end of reading, as
 * for `run`'s report: SIGPIPE (unless the export was started with it
 * ignored, which `run` keeps too) is blocked while the export writes and
 * taken after it, so the write fails with EPIPE, the export stops at the
 * next merge, and *closed says to exit quietly with 128 + SIGPIPE (141,
 * what the shell shows for `cat` killed by it). With SIGPIPE ignored the
 * failed write is reported, as `run` reports it. */
static int
to_stdout(ms_evdb *db, int fmt, const ms_ev_filter *f, FILE *out,
          uint64_t *written, bool *closed, ms_errbuf *eb)
{
	sigset_t pipe_set, old;
	struct sigaction sa;
	bool watch = sigaction(SIGPIPE, NULL, &sa) == 0 &&
	             sa.sa_handler != SIG_IGN;
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	if (watch)
		pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	int rc = ms_export(db, (enum ms_export_format)fmt, f, out, written,
	                   eb);
	if (rc == 0 && fflush(out) != 0)
		rc = ms_fail(eb, ms_err_from_errno(errno),
		             "writing to standard output failed: %s",
		             strerror(errno));
	else if (rc && ferror(out)) {
		char msg[sizeof(eb->msg)];
		memcpy(msg, eb->msg, sizeof(msg));
		ms_fail(eb, rc, "standard output: %s", msg);
	}
	if (!watch)
		return rc;
	static const struct timespec now = { 0, 0 };
	int sig;
	while ((sig = sigtimedwait(&pipe_set, NULL, &now)) < 0 &&
	       errno == EINTR)
		;
	*closed = sig == SIGPIPE;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return rc;
}

static int
exec(const ms__cmd_args *args, FILE *out, FILE *err)
{
	const ms__opt *o = args->o;
	int rc;
	/* `--out -` is standard output, as the default is. */
	bool to_file = o[MS__EX_OUT].count && strcmp(o[MS__EX_OUT].value, "-");
	if (o[MS__EX_FORCE].count && !to_file) {
		fprintf(err, "mergescope export: --force needs --out FILE\n");
		return MS_EXIT_USAGE;
	}
	ms_tui_filter tf;
	ms_ev_filter ef;
	ms_errbuf eb = { "" };
	char why[MS_VIEW_TEXT];
	if (o[MS__EX_FILTER].count) {
		if (!ms_tui_filter_parse(o[MS__EX_FILTER].value, &tf, why,
		                         sizeof(why))) {
			fprintf(err, "mergescope export: --filter \"%s\": %s\n",
			        o[MS__EX_FILTER].value, why);
			return MS_EXIT_USAGE;
		}
		if (ms_replay_ctl_filter(&tf, &ef, &eb)) {
			fprintf(err, "mergescope export: --filter \"%s\": %s\n",
			        o[MS__EX_FILTER].value, eb.msg);
			return MS_EXIT_USAGE;
		}
	}
	if (o[MS__EX_OUT].count && !*o[MS__EX_OUT].value) {
		fprintf(err, "mergescope export: --out \"\": expected a file "
		             "name\n");
		return MS_EXIT_USAGE;
	}
	/* Required, after the values given: `--filter foo=1` without --db
	 * names the filter's mistake, as a wrong value is named before a
	 * required option left out elsewhere. */
	static const int req[] = { MS__EX_DB, MS__EX_FORMAT };
	for (size_t i = 0; i < sizeof(req) / sizeof(req[0]); i++) {
		if (ms__opt_missing("export", &o[req[i]], err))
			return MS_EXIT_USAGE;
	}
	/* One of the option's choices: the parser checked it. */
	int fmt = ms_export_format_parse(o[MS__EX_FORMAT].value);
	/* Never over the database it reads: said as report and run say
	 * it, before the database is opened. */
	if (to_file &&
	    ms_evdb_path_is_db(o[MS__EX_DB].value, o[MS__EX_OUT].value)) {
		fprintf(err,
		        "mergescope export: --out %s: that is the event "
		        "database of --db %s or a file SQLite keeps beside it "
		        "(-wal, -shm, -journal); choose another file\n",
		        o[MS__EX_OUT].value, o[MS__EX_DB].value);
		return MS_EXIT_USAGE;
	}
	bool force = o[MS__EX_FORCE].count > 0;
	/* Refuse an existing --out before the database is read. */
	if (to_file &&
	    (rc = ms_outfile_check(o[MS__EX_OUT].value, force, &eb)))
		return ms__say_out_error(err, "export", "--out",
		                         o[MS__EX_OUT].value, rc, &eb);
	ms_evdb *db = NULL;
	if ((rc = ms_evdb_open(&db, o[MS__EX_DB].value, &eb)))
		return ms__say_db_error(err, "export", "--db",
		                        o[MS__EX_DB].value, rc, &eb);
	uint64_t written = 0;
	const ms_ev_filter *f = o[MS__EX_FILTER].count ? &ef : NULL;
	if (to_file) {
		rc = ms_export_file(db, (enum ms_export_format)fmt, f,
		                    o[MS__EX_OUT].value, force, &written, &eb);
	} else {
		bool closed = false;
		rc = to_stdout(db, fmt, f, out, &written, &closed, &eb);
		if (closed) {
			ms_evdb_close(db);
			return 128 + SIGPIPE;
		}
	}
	if (rc == 0 && f && written == 0)
		say_no_match(db, o[MS__EX_FILTER].value, err);
	if (rc == 0)
		say_unfinished(db, written, err);
	ms_evdb_close(db);
	if (rc)
		return ms__say_out_error(err, "export", "--out",
		                         to_file ? o[MS__EX_OUT].value : NULL,
		                         rc, &eb);
	if (to_file)
		fprintf(err, "exported %" PRIu64 " merges as %s to %s\n",
		        written, o[MS__EX_FORMAT].value, o[MS__EX_OUT].value);
	return 0;
}

const ms_cmd ms_cmd_export = {
	.name = "export",
	.summary =
	        "export recorded events: --db FILE --format jsonl|csv|chrome",
	.usage = usage,
	.opts = ms__export_opts,
	.nopts = MS__EX_COUNT,
	.exec = exec,
};
