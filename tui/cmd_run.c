/*
 * cmd_run.c - `mergescope run --headless`: the same replay as the TUI
 * without curses. Progress goes to standard error (a bar on a terminal,
 * plain lines otherwise), then the run report (ms_report_text on the
 * run's event database) with every correctness gate goes to standard
 * output; --json FILE writes the same report as JSON. Exit status: 0 when
 * every gate passes, 1 when one fails, 2 when the run cannot start or
 * fails or its database is left in two files (a full disk at the end:
 * ms_evdb_fold_wal), 64 for a usage error, 128 + N after signal N (--json FILE
 * is written then too, status aborted). `tui` hands its options over when
 * stdout is not a terminal, so this command accepts them all.
 *
 * Signals: while the replay runs and its report is written, SIGINT,
 * SIGTERM, SIGHUP and SIGPIPE are blocked in every thread (the replay's
 * threads inherit the mask) and taken by the main thread with sigtimedwait
 * between looks at the run, so no handler runs anywhere. One of them stops
 * the run the way quitting the TUI does: the database records it as
 * aborted, the scratch shard is removed, and the exit status is 128 + the
 * signal (130, 143, 129, 141). A write to a closed pipe fails with EPIPE
 * instead of killing the process. A signal the process was started with
 * ignored (`nohup`, a background job of a non-interactive shell) stays
 * ignored: blocking it would make Linux queue it, and the run would stop
 * on the very signal it was told to ignore.
 */
#include "cli.h"

#include "ms_replay.h"
#include "ms_replay_events.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The help of --chain and --variant says how many links a chain holds. */
_Static_assert(MS__HELP_CHAIN_MAX_LINKS == MS_CHAIN_MAX_LINKS,
               "--chain's help names the chain's link limit");

static const char usage[] =
        "usage: mergescope run --headless [--fixture DIR | --preset P]\n"
        "                      [--variant V | --chain SPEC]\n"
        "                      [--grace-policy selection|trace] [--serial]\n"
        "                      [--profile cpus=N,mem=SIZE] [--envelope E]\n"
        "                      [--db FILE]\n"
        "                      [--work-dir DIR] [--json FILE [--force]]\n"
        "                      [--wait-timeout T]\n"
        "                      [--allow-fail-open] [--cache warm|cold]\n"
        "                      [--plugin-host inproc|process]\n"
        "                      [--staging retain|reread]\n"
        "                      [--freeze-at SPEC]\n"
        "\n"
        "Replays a fixture day as fast as the engine goes, without the\n"
        "screen: prints progress on standard error, then the run report\n"
        "(primary and cooldown tables, merges by lane and classification,\n"
        "the plugin table) and every correctness gate as PASS/FAIL on\n"
        "standard output. Exit status: 0 when every gate passes, 1 when one\n"
        "fails, 2 when the run cannot start or fails, or when the database\n"
        "could not take in its write-ahead log at the end (a full disk:\n"
        "keep DB and DB-wal together), 64 for a usage error (a value\n"
        "an option does not take: nothing runs), 128 + N after signal\n"
        "N (SIGINT, SIGTERM, SIGHUP, SIGPIPE: the run is recorded as\n"
        "aborted, its scratch shard removed and --json FILE written with\n"
        "status aborted; one the process was started with ignored, as\n"
        "under nohup, stays ignored).\n"
        "\n"
        "  --headless           no curses (the only mode of this command)\n"
        "  --fixture DIR        replay this fixture directory\n"
        "  --preset P           without --fixture: the preset's cached\n"
        "                       fixture (day-1x, day-2x, smoke or\n"
        "                       day-<N>x), built once (default "
        "day-2x)\n" MS__HELP_VARIANT_CHAIN
        "  --grace-policy P     selection (default) or trace\n"
        "  --serial             one merge at a time\n"
        "  --freeze-at SPEC     freeze the shard at the first dispatch\n"
        "                       barrier SPEC matches (a breakpoint spec:\n"
        "                       merge=N, mature, sampling, ...), print the\n"
        "                       merge-once command that replays it, and\n"
        "                       run on\n"
        "  --staging S          how a sampling merge writes what it keeps:\n"
        "                       retain (default: from the payload it\n"
        "                       staged) or reread (re-read from "
        "inputs)\n" MS__HELP_HOST_AND_LIMITS MS__HELP_WORK_DIR
        "  --db FILE            record events to FILE (new; its name at\n"
        "                       most 247 bytes, its path at most 504\n"
        "                       (SQLite's limit); default under\n"
        "                       $XDG_CACHE_HOME/mergescope/runs/)\n"
        "  --json FILE          also write the report as JSON to FILE (a\n"
        "                       new file; an existing one needs --force)\n"
        "  --force              replace an existing --json FILE\n"
        "  --wait-timeout T     fail the run when merge-idle, or the verdict\n"
        "                       oracle before the day, takes longer than T\n"
        "                       (90, 90s, 10m, 1h; default 10m)\n"
        "  --allow-fail-open    a plugin that fails open (error, timeout,\n"
        "                       bad verdict, open circuit) or a merge that\n"
        "                       bypasses sampling (lossless retry, oversized\n"
        "                       traces) makes the plugin_health gate WARN\n"
        "                       instead of FAIL\n"
        "  --cache warm|cold    the page cache the run starts from: warm\n"
        "                       reads the fixture once first, cold drops\n"
        "                       its cached pages; recorded in the run\n"
        "                       (default: uncontrolled)\n"
        "  --break SPEC         checked as in `tui`, then ignored: a\n"
        "                       headless run never stops\n"
        "  --paused, --speed X, --checkpoint-every T\n"
        "                       checked as in `tui`, then ignored (a\n"
        "                       note says so): it runs at full speed\n"
        "                       and keeps no checkpoint\n"
        "  --no-color, --ascii  taken as `tui` takes them and ignored:\n"
        "                       a headless run draws no screen\n";

/* What the progress has said besides its steps. */
typedef struct progress_said {
	bool skip;           /* the finalize's skip */
	uint64_t failed;     /* failed merges */
	uint64_t quarantined; /* quarantined parts */
} progress_said;

/* A finalize that was skipped, said once on its own line with why, as
 * the report says it: its step would read as done. */
static bool
note_finalize_skip(ms__progress *p, const ms_replay_status *st,
                   progress_said *said)
{
	if (!st->finalize_skip[0])
		return false;
	if (!said->skip) {
		char line[sizeof(st->finalize_skip) + 32];
		snprintf(line, sizeof(line), "finalize skipped (%s)",
		         st->finalize_skip);
		ms__progress_note(p, line);
		said->skip = true;
	}
	return true;
}

/* Merges that failed and parts quarantined since the last poll, each on
 * a line of its own: the engine backs off after a failure (1 s, then 2,
 * 4 ...), and without them the progress stood still with nothing said. */
static void
note_failures(ms__progress *p, const ms_replay_status *st,
              progress_said *said)
{
	char line[sizeof(st->last_failure) + 96];
	if (st->merges_failed > said->failed && st->last_failure[0]) {
		/* A run that failed says what follows in its last line. */
		bool going = st->state != MS_REPLAY_FAILED;
		snprintf(line, sizeof(line), "%s (%" PRIu64 " failed merge%s%s)",
		         st->last_failure, st->merges_failed,
		         st->merges_failed == 1 ? "" : "s",
		         going ? "; the engine backs off before it merges "
		                 "again"
		               : "");
		ms__progress_note(p, line);
	}
	said->failed = st->merges_failed;
	if (st->quarantined > said->quarantined) {
		snprintf(line, sizeof(line),
		         "part %016" PRIx64 " quarantined after its third "
		         "failed merge in a row: merges go on without it (%" PRIu64
		         " quarantined)",
		         st->last_quarantined, st->quarantined);
		ms__progress_note(p, line);
	}
	said->quarantined = st->quarantined;
}

/* Progress from the status of the run, polled by the waiting thread. */
static void
show_progress(ms__progress *p, const ms_replay_status *st,
              progress_said *said)
{
	note_failures(p, st, said);
	char extra[64];
	snprintf(extra, sizeof(extra), "%" PRIu64 " merges", st->merges_done);
	if (st->phase == MS_RPHASE_PRIMARY) {
		ms__progress_update(p, "publications", st->pub_done,
		                    st->pub_total, extra);
		return;
	}
	/* The publications line is always shown whole, even when the first
	 * poll comes after the primary phase (a short day). */
	if (!p->what[0])
		ms__progress_update(p, "publications", st->pub_done,
		                    st->pub_total, extra);
	else if (strcmp(p->what, "publications") == 0)
		ms__progress_update(p, "publications", st->pub_total,
		                    st->pub_total, extra);
	/* A phase after the publications is one step: shown done once the
	 * run has moved past it. */
	const char *now = st->phase >= MS_RPHASE_END
	                          ? ""
	                          : ms_replay_phase_name(st->phase);
	bool skipped = note_finalize_skip(p, st, said);
	if (p->what[0] && strcmp(p->what, "publications") != 0 &&
	    strcmp(p->what, now) != 0 &&
	    !(skipped && !strcmp(p->what, "finalize"))) {
		char done[sizeof(p->what)];
		snprintf(done, sizeof(done), "%s", p->what);
		ms__progress_update(p, done, 1, 1, extra);
	}
	if (st->phase >= MS_RPHASE_END)
		return;
	ms__progress_update(p, now, 0, 1, extra);
}

/* The run report of db_path: as text on out (unless out is NULL), and as
 * JSON to the file json (unless NULL). */
static int
report(const char *db_path, const char *json, bool force, FILE *out, FILE *err,
       unsigned *failed)
{
	ms_evdb *db = NULL;
	ms_errbuf eb = { "" };
	int rc = ms_evdb_open(&db, db_path, &eb);
	if (rc == 0 && out)
		rc = ms_report_text(db, out, failed, &eb);
	if (rc == 0 && json) {
		/* Beside the name, then renamed: never half a file. */
		ms_outfile *of = NULL;
		unsigned jf = 0;
		rc = ms_outfile_open(&of, json, force, &eb);
		if (rc == 0)
			rc = ms_report_json(db, ms_outfile_stream(of), &jf,
			                    &eb);
		if (rc == 0)
			rc = ms_outfile_commit(of, &eb);
		else
			rc = ms_outfile_fail(of, rc, &eb);
		if (rc && ms__msg_names_path(eb.msg, json)) {
			ms_evdb_close(db);
			ms__say_out_error(err, "run", "--json", json, rc, &eb);
			return rc;
		}
	}
	ms_evdb_close(db);
	/* "report of DB: CAUSE", the path said once (the database's own
	 * messages begin with it too). */
	if (rc)
		ms__say_db_error(err, "run", "report of", db_path, rc, &eb);
	return rc;
}

/* The signals a headless run stops on (see the file comment): those of
 * SIGINT, SIGTERM, SIGHUP and SIGPIPE it was not started with ignored. */
static void
stop_signals(sigset_t *set)
{
	static const int stops[] = { SIGINT, SIGTERM, SIGHUP, SIGPIPE };
	sigemptyset(set);
	for (size_t i = 0; i < sizeof(stops) / sizeof(*stops); i++) {
		struct sigaction sa;
		if (sigaction(stops[i], NULL, &sa) == 0 &&
		    sa.sa_handler == SIG_IGN)
			continue;
		sigaddset(set, stops[i]);
	}
}

/* A stop signal that arrived, waiting at most ns; 0 if none. */
static int
take_signal(const sigset_t *set, int64_t ns)
{
	struct timespec ts = { (time_t)(ns / 1000000000),
		               (long)(ns % 1000000000) };
	for (;;) {
		int sig = sigtimedwait(set, NULL, &ts);
		if (sig > 0)
			return sig;
		if (errno != EINTR)
			return 0;
	}
}

static int headless_run(const ms__run_args *a, const ms__run_cfg *cfg,
                        FILE *out, FILE *err, const sigset_t *set, int *sig);

/* The run with the stop signals blocked; restores the mask after taking
 * any still pending (so none is delivered later). */
static int
headless(const ms__run_args *a, const ms__run_cfg *cfg, FILE *out, FILE *err)
{
	sigset_t set, old;
	stop_signals(&set);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	int sig = 0;
	int rc = headless_run(a, cfg, out, err, &set, &sig);
	int late = 0, s;
	while ((s = take_signal(&set, 0)))
		late = late ? late : s;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!sig && late) {
		/* During the report: a closed pipe says nothing more. */
		if (late != SIGPIPE)
			fprintf(err,
			        "mergescope run: stopped by %s while "
			        "writing the report\n",
			        ms__signal_name(late));
		sig = late;
	}
	return sig ? 128 + sig : rc;
}

/* --freeze-at: the run is at the barrier the spec matched; freeze the
 * shard there and say how to replay it. A failure is reported and the
 * run goes on (false: the run's exit status then says it). */
static bool
freeze_here(ms_replay *r, const ms_replay_status *st, const char *variant,
            FILE *err)
{
	char dir[4096], self[4096];
	ms_errbuf eb = { "" };
	if (ms_replay_freeze(r, NULL, dir, sizeof(dir), &eb)) {
		fprintf(err, "\nmergescope run: --freeze-at: %s\n", eb.msg);
		return false;
	}
	ms__self_exe(self, sizeof(self));
	/* The command runs as shown, whatever the paths and the chain
	 * spec hold (as the TUI's frozen: line). */
	fprintf(err, "\nfrozen (%s): %s\nreplay it: ", st->break_why, dir);
	ms__shell_word(err, self, false);
	fputs(" merge-once --frozen ", err);
	ms__shell_word(err, dir, false);
	fputs(" --variant ", err);
	ms__shell_word(err, variant, true);
	fputc('\n', err);
	return true;
}

/* The end of a headless run that was not stopped: the report on out
 * (and --json), where the events are, and the exit status, worst first: a
 * report or output that failed, a failed run or a write-ahead log that
 * could not be folded in (wal_msg, NULL if it was), a failed --freeze-at,
 * then the gates. */
/* The scratch shard the run could not remove, said last (true) so that
 * it is seen; `clean` removes it once the cause is gone. */
static bool
say_left(FILE *err, const ms_errbuf *left)
{
	if (!left->msg[0])
		return false;
	fprintf(err,
	        "mergescope run: %s; `mergescope clean` removes it once "
	        "that is fixed\n",
	        left->msg);
	return true;
}

static int
report_and_exit(const ms__run_args *a, const char *db_path, bool failed_run,
                const char *wal_msg, bool freeze_failed, FILE *out,
                FILE *err)
{
	unsigned failed = 0;
	if (report(db_path, a->json, a->force, out, err, &failed)) {
		if (wal_msg)
			fprintf(err, "mergescope run: %s\n", wal_msg);
		return MS_EXIT_ERROR;
	}
	/* The report must have arrived (a full disk, a closed pipe with
	 * SIGPIPE ignored): a stream that failed keeps its buffer, so this
	 * flush fails again with the reason. Said here, before anything
	 * else can overwrite errno, whatever the gates say. */
	errno = 0;
	bool out_bad = fflush(out) != 0;
	int out_errno = errno;
	out_bad = out_bad || ferror(out);
	/* After a failure (the database itself may be what failed) only
	 * what was recorded before it is there. */
	fprintf(err, "%s %s%s%s\n",
	        failed_run ? "what was recorded before the failure is in"
	                   : "events recorded in",
	        db_path, a->json ? "; report as JSON in " : "",
	        a->json ? a->json : "");
	if (wal_msg)
		fprintf(err, "mergescope run: %s\n", wal_msg);
	if (out_bad) {
		fprintf(err,
		        "mergescope run: writing to standard output "
		        "failed%s%s\n",
		        out_errno ? ": " : "",
		        out_errno ? strerror(out_errno) : "");
		return MS_EXIT_ERROR;
	}
	/* A script that keeps only the database would lose its events:
	 * the run's result is not where it says, so it does not pass. */
	if (failed_run || wal_msg)
		return MS_EXIT_ERROR;
	if (freeze_failed) {
		/* A script goes on to replay what was frozen: say it failed. */
		fprintf(err,
		        "mergescope run: --freeze-at \"%s\": nothing was "
		        "frozen (the freeze failed, above); the run went "
		        "on to its end\n",
		        a->freeze_at);
		return MS_EXIT_ERROR;
	}
	if (failed) {
		fprintf(err, "mergescope run: %u gate%s failed\n", failed,
		        failed == 1 ? "" : "s");
		return 1;
	}
	return 0;
}

static int
headless_run(const ms__run_args *a, const ms__run_cfg *cfg, FILE *out,
             FILE *err, const sigset_t *set, int *sig)
{
	ms_replay_opts ro;
	ms__replay_opts_from(&ro, a, cfg);
	ro.speed = 0; /* as fast as the engine goes */
	ms_replay *r = NULL;
	ms_errbuf eb = { "" };
	int rc = ms_replay_open(&r, &ro, &eb);
	if (rc) {
		ms__say_replay_error(err, a, rc, &eb);
		return MS_EXIT_ERROR;
	}
	ms__supervise_run(r);
	fprintf(err, "replaying %s (%s) with %s; events recorded in %s\n",
	        cfg->fixture_dir, cfg->preset, cfg->variant,
	        ms_replay_db_path(r));
	if (ms_replay_work_note(r)[0])
		fprintf(err, "%s\n", ms_replay_work_note(r));
	if ((rc = ms_replay_start(r, &eb))) {
		ms__say_replay_error(err, a, rc, &eb);
		ms_replay_close(r);
		return MS_EXIT_ERROR;
	}
	if (ms_replay_start_note(r)[0])
		fprintf(err, "mergescope run: %s\n", ms_replay_start_note(r));
	ms_replay_status *st = malloc(sizeof(*st));
	if (!st) {
		ms_replay_close(r);
		return ms__say_oom(err, "run", sizeof(*st), "the run's status");
	}
	ms__progress prog;
	ms__progress_init(&prog, err, -1);
	progress_said said = { false, 0, 0 };
	int freeze_id = -1;
	bool freeze_failed = false;
	if (a->freeze_at &&
	    (rc = ms_replay_break_add(r, a->freeze_at, &freeze_id, &eb))) {
		fprintf(err, "mergescope run: --freeze-at \"%s\": %s\n",
		        a->freeze_at, eb.msg);
		free(st);
		ms_replay_close(r);
		return MS_EXIT_USAGE;
	}
	while (ms_replay_wait(r, 0) == MS_ERR_TIMEOUT) {
		if ((*sig = take_signal(set, 100000000LL)))
			break;
		ms_replay_get_status(r, st);
		if (freeze_id >= 0 && st->state == MS_REPLAY_BREAK) {
			freeze_failed = !freeze_here(r, st, cfg->variant, err);
			ms_replay_break_delete(r, freeze_id, NULL);
			freeze_id = -1;
			ms_replay_command(r, MS_RCMD_RUN, NULL);
			continue;
		}
		show_progress(&prog, st, &said);
	}
	ms_replay_get_status(r, st);
	if (!*sig)
		show_progress(&prog, st, &said);
	ms__progress_end(&prog);
	if (!*sig && freeze_id >= 0)
		fprintf(err,
		        "mergescope run: --freeze-at \"%s\": no dispatch "
		        "barrier of the run matched; nothing was frozen\n",
		        a->freeze_at);
	if (*sig) {
		char db_path[sizeof(cfg->db)];
		free(st);
		/* Records "aborted", removes the shard. */
		ms_errbuf wal_eb = { "" }, left = { "" };
		bool wal_kept = ms_replay_close_fold(
		        r, db_path, sizeof(db_path), &wal_eb, &left);
		fprintf(err,
		        "mergescope run: stopped by %s; recorded as aborted "
		        "in %s\n",
		        ms__signal_name(*sig), db_path);
		if (wal_kept)
			fprintf(err, "mergescope run: %s\n", wal_eb.msg);
		say_left(err, &left);
		/* --json still gets the report of what was recorded (status
		 * aborted, the gate run_finished failed); no text report. */
		unsigned jfailed = 0;
		if (a->json && report(db_path, a->json, a->force, NULL, err,
		                      &jfailed) == 0)
			fprintf(err, "report as JSON in %s\n", a->json);
		return MS_EXIT_ERROR;
	}
	bool failed_run = st->state == MS_REPLAY_FAILED;
	char line[1024];
	if (failed_run) {
		ms__run_failed_text(line, sizeof(line), st);
		fprintf(err, "mergescope run: %s\n", line);
	}
	char db_path[sizeof(cfg->db)];
	free(st);
	/* Commits the last events; a write-ahead log left in two files (a
	 * full disk) is said at the end, where it is seen. */
	ms_errbuf wal_eb = { "" }, left = { "" };
	bool wal_kept = ms_replay_close_fold(r, db_path, sizeof(db_path),
	                                     &wal_eb, &left);

	int ex = report_and_exit(a, db_path, failed_run,
	                         wal_kept ? wal_eb.msg : NULL, freeze_failed,
	                         out, err);
	return say_left(err, &left) ? MS_EXIT_ERROR : ex;
}

static int
exec(const ms__cmd_args *args, FILE *out, FILE *err)
{
	/* Every option of `tui` is accepted, so `tui` can hand its options
	 * over; --break (checked) and the screen's options are ignored. */
	const ms__opt *o = args->o;
	int rc = ms__run_opts_check(&ms_cmd_run, args, err);
	if (rc)
		return rc;
	if (o[MS__RO_FORCE].count && !o[MS__RO_JSON].count) {
		fprintf(err, "mergescope run: --force needs --json FILE\n");
		return MS_EXIT_USAGE;
	}
	if (o[MS__RO_FREEZE_AT].count) {
		ms_breakpoint bp;
		ms_errbuf eb = { "" };
		if (ms_bp_parse(o[MS__RO_FREEZE_AT].value, &bp, &eb)) {
			fprintf(err, "mergescope run: --freeze-at \"%s\": %s\n",
			        o[MS__RO_FREEZE_AT].value, eb.msg);
			return MS_EXIT_USAGE;
		}
	}
	if (o[MS__RO_BREAK].count)
		fprintf(err,
		        "mergescope run: note: %d --break option%s ignored; a "
		        "headless run never stops (use the TUI to break)\n",
		        o[MS__RO_BREAK].count,
		        o[MS__RO_BREAK].count == 1 ? "" : "s");
	if (o[MS__RO_PAUSED].count)
		fprintf(err, "mergescope run: note: --paused ignored; a "
		             "headless run never stops (use the TUI to "
		             "pause)\n");
	if (o[MS__RO_SPEED].count)
		fprintf(err, "mergescope run: note: --speed ignored; a "
		             "headless run replays as fast as it can\n");
	if (o[MS__RO_CHECKPOINT_EVERY].count)
		fprintf(err, "mergescope run: note: --checkpoint-every "
		             "ignored; a headless run keeps no checkpoint "
		             "(use the TUI to go back)\n");
	ms__run_args a;
	ms__run_cfg *cfg = ms__run_begin(&ms_cmd_run, o, &a, err, &rc);
	if (!cfg)
		return rc;
	rc = headless(&a, cfg, out, err);
	free(cfg);
	return rc;
}

const ms_cmd ms_cmd_run = {
	.name = "run",
	.summary = "the same replay without curses: progress and the report",
	.usage = usage,
	.opts = ms__run_opts,
	.nopts = MS__RO_COUNT,
	.exec = exec,
};
