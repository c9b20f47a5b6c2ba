/*
 * cmd_tui.c - `mergescope tui` (and plain `mergescope`): the interactive
 * replay on a fixture. Checks every option first, finds or builds the
 * fixture (cli_setup.c), opens the replay with its breakpoints, starts it
 * at the default speed (MS_TUI_DEFAULT_SPEED, a day in 72 s) and runs the
 * session loop over the replay-backed controller. Quitting closes the
 * replay (a run that did not finish is recorded as aborted) after the
 * terminal is restored, then says where the events are. With --headless,
 * or when stdout is not a terminal, the same run goes without curses
 * (`run`).
 *
 * Signals, as `run` takes them: SIGINT, SIGTERM, SIGHUP and SIGPIPE stop
 * the session like q (terminal restored, a run that did not finish
 * recorded as aborted, its scratch shard removed), and the exit status
 * is 128 + the signal (130, 143, 129, 141). The screen's handlers only
 * raise a flag and do not say which signal came, so the session blocks
 * the four in every thread (the replay's threads inherit the mask) but
 * lets SIGHUP through on the main thread: a stopper thread sleeps in
 * poll on a signalfd until SIGINT, SIGTERM or SIGPIPE comes (no wakeups
 * while none does), notes which one and, when the session loop runs,
 * sends the main thread one SIGHUP to end the wait it may be in, then
 * sleeps again until the session ends: the loop asks for the signal
 * noted before each wait (ms_tui_opts.stop_asked), so one SIGHUP that
 * comes before the screen is up or just before a wait is not lost (a
 * signal that comes while the parts are staged skips the loop). A SIGHUP
 * that on_hup notes wakes it through a pipe to do the same. A flag with
 * no signal noted was a SIGHUP of its own. A write to a closed pipe fails with EPIPE instead
 * of killing the process.
 */
#include "cli.h"

#include "ms_replay.h"
#include "ms_replay_ctl.h"
#include "ms_replay_events.h"
#include "ms_thread.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

static const char usage[] =
        "usage: mergescope tui [--fixture DIR | --preset P] [--variant V]\n"
        "                      [--chain SPEC] [--grace-policy "
        "selection|trace]\n"
        "                      [--serial] [--profile SPEC] [--envelope E]\n"
        "                      [--db FILE]\n"
        "                      [--work-dir DIR] [--wait-timeout T]\n"
        "                      [--checkpoint-every T] [--cache warm|cold]\n"
        "                      [--allow-fail-open]\n"
        "                      [--plugin-host H] [--staging S]\n"
        "                      [--break SPEC]... [--paused] [--speed X]\n"
        "                      [--no-color] [--ascii]\n"
        "                      [--headless [--json FILE [--force]]\n"
        "                       [--freeze-at SPEC]]\n"
        "\n"
        "Replays a fixture day through the merge engine and shows it live.\n"
        "Without --fixture the preset's fixture (day-2x) is built once and\n"
        "cached under $XDG_CACHE_HOME/mergescope/. q quits (exit status 0,\n"
        "2 when the run failed or its database was left in two files, as\n"
        "`run` says); SIGINT, SIGTERM, SIGHUP and SIGPIPE stop\n"
        "it the same way with exit status 128 + N, as `run`. A run stopped\n"
        "before its end is recorded as aborted. Exit status 64 for a usage\n"
        "error (nothing runs).\n"
        "\n"
        "  --fixture DIR        replay this fixture directory\n"
        "  --preset P           without --fixture: the preset's cached\n"
        "                       fixture (day-1x, day-2x, smoke or\n"
        "                       day-<N>x), built once (default "
        "day-2x)\n" MS__HELP_VARIANT_CHAIN
        "  --grace-policy P     selection (default) or trace\n"
        "  --serial             one merge at a time\n"
        "  --staging S          retain (default) or reread: see `run`\n"
        "  --allow-fail-open    plugin_health WARNs instead of FAILing when\n"
        "                       a plugin fails open or sampling is "
        "bypassed\n" MS__HELP_HOST_AND_LIMITS
        "  --db FILE            record events to FILE (new; its name at\n"
        "                       most 247 bytes, its path at most 504\n"
        "                       (SQLite's limit); default under\n"
        "                       $XDG_CACHE_HOME/mergescope/runs/, shown\n"
        "                       under the event log)\n" MS__HELP_WORK_DIR
        "  --checkpoint-every T keep a checkpoint to go back to (g, [, {)\n"
        "                       every T of the day (default 60m; 0: none,\n"
        "                       going back re-runs the day from its start)\n"
        "  --cache warm|cold    the page cache the run starts from: warm\n"
        "                       reads the fixture once first, cold drops\n"
        "                       its cached pages (default: uncontrolled)\n"
        "  --wait-timeout T     fail the run when merge-idle while running,\n"
        "                       or the verdict oracle before the day, takes\n"
        "                       longer than T (90, 90s, 10m, 1h; default\n"
        "                       10m; time stopped does not count)\n"
        "  --break SPEC         stop at a dispatch barrier: mature, sampling,\n"
        "                       merge=N, time=HH:MM[:SS], time=@NS (unix\n"
        "                       ns), part=HEX (a part ID as shown, up to\n"
        "                       16 hex digits), lane=fast|slow|finalize,\n"
        "                       depth>=D (repeatable)\n"
        "  --paused             stop before the first publication\n"
        "  --speed X            logical seconds per wall second (default\n"
        "                       1200: a day in 72 s), or max\n"
        "  --no-color           no colours (NO_COLOR in the environment too)\n"
        "  --ascii              ASCII borders and glyphs\n"
        "  --headless           no curses: progress and the report (= run,\n"
        "                       which also takes its --json FILE, --force\n"
        "                       and --freeze-at SPEC here)\n";

/* Remember this session's breakpoints (not go targets) and filter for the
 * next one on the same fixture (tui_memory.c); a failure only loses the
 * offer. */
static void
remember(ms_replay *r, const char *fixture_dir, const char *filter)
{
	char path[4096];
	if (ms__tui_memory_path(path, sizeof(path), fixture_dir))
		return;
	ms__tui_memory *m = calloc(1, sizeof(*m));
	ms_breakpoint *b = calloc(MS__MEMORY_BREAKS * 4, sizeof(*b));
	if (m && b) {
		size_t n = ms_replay_breaks(r, b, MS__MEMORY_BREAKS * 4);
		for (size_t i = 0; i < n && i < MS__MEMORY_BREAKS * 4 &&
		                   m->nbreaks < MS__MEMORY_BREAKS;
		     i++)
			if (!b[i].once)
				snprintf(m->breaks[m->nbreaks++],
				         sizeof(m->breaks[0]), "%s", b[i].spec);
		snprintf(m->filter, sizeof(m->filter), "%s",
		         filter ? filter : "");
		ms__tui_memory_save(path, m);
	}
	free(b);
	free(m);
}

/* Restarts (the TUI's r, and going back in time): the same options, a
 * new database "<db stem>.rerun-N<ext>" next to the first and, with
 * --work-dir, a scratch directory "<dir>.rerun-N" next to it. */
struct reopen_ctx {
	const ms__run_args *a;
	const ms__run_cfg *cfg;
	bool paused;
	double speed;
	unsigned n;      /* reopens asked for: the rerun-N names */
	unsigned opened; /* of them, runs opened, each replacing the last */
	char db[4096 + 32];
	char work[4096 + 32];
};

/* The write end of the session's news pipe (-1: none), whose read end
 * wakes the screen (ms_tui_opts.wake_fd): the replay's notify writes a
 * byte to it, from any thread. A full pipe has news in it already. */
static atomic_int news_fd = -1;

static void
on_news(void *arg)
{
	(void)arg;
	int fd = atomic_load(&news_fd);
	if (fd >= 0) {
		ssize_t w = write(fd, "n", 1);
		(void)w;
	}
}

/* The news pipe, non-blocking, not inherited; false when it could not be
 * made (the screen then looks every second, as without it). */
static bool
news_open(int p[2])
{
	if (pipe(p))
		return false;
	for (int i = 0; i < 2; i++) {
		fcntl(p[i], F_SETFD, FD_CLOEXEC);
		fcntl(p[i], F_SETFL, O_NONBLOCK);
	}
	atomic_store(&news_fd, p[1]);
	return true;
}

/* After the session's replays are closed (none notifies any more). */
static void
news_close(int p[2])
{
	atomic_store(&news_fd, -1);
	close(p[0]);
	close(p[1]);
}

/* The replay options of a session: the command line's, paused or not, at
 * speed, with a checkpoint to go back to every 60 logical minutes or
 * --checkpoint-every; its news wake the screen. */
static void
session_opts(ms_replay_opts *ro, const ms__run_args *a, const ms__run_cfg *cfg,
             bool paused, double speed)
{
	ms__replay_opts_from(ro, a, cfg);
	ro->start_paused = paused;
	ro->speed = speed;
	ro->notify = on_news;
	ro->notify_arg = NULL;
	ro->checkpoint_every_ns = a->checkpoint_every_set
	                                  ? a->checkpoint_every_ns
	                                  : MS_REPLAY_CHECKPOINT_EVERY_DEFAULT_NS;
}

static int
reopen(void *arg, bool running, ms_replay **out, ms_errbuf *eb)
{
	struct reopen_ctx *x = arg;
	*out = NULL;
	ms_replay_opts ro;
	session_opts(&ro, x->a, x->cfg, x->paused && !running, x->speed);
	x->n++;
	ms__rerun_db_name(x->db, sizeof(x->db), x->cfg->db, x->n);
	ro.db_path = x->db;
	int rc = ms__db_owner_take(x->db, eb);
	if (rc)
		return rc;
	if (x->a->work_dir) {
		ms__rerun_name(x->work, sizeof(x->work), x->a->work_dir, x->n,
		               false, NAME_MAX);
		ro.work_dir = x->work;
	}
	rc = ms_replay_open(out, &ro, eb);
	if (rc) {
		*out = NULL;
		return rc;
	}
	/* The watcher now looks after the new run's database and shard
	 * (the adapter ends the old run next). */
	ms__supervise_run(*out);
	x->opened++;
	return 0;
}

/* The signal that stopped the session, 0 while none has (see the file
 * comment): set by the stopper thread, or by on_hup for a SIGHUP that
 * came before the screen took the signal over. */
static atomic_int stop_sig; /* lock-free: safe in a handler and across
                             * threads */
/* For the session loop: a stop signal was noted. */
static bool
stop_asked(void)
{
	return atomic_load(&stop_sig) != 0;
}

/* The write end of the running stopper's wake pipe, -1 while none runs:
 * on_hup wakes it through it. */
static atomic_int stopper_wake = -1;

static void
on_hup(int sig)
{
	(void)sig;
	int none = 0;
	atomic_compare_exchange_strong(&stop_sig, &none, SIGHUP);
	int fd = atomic_load(&stopper_wake);
	if (fd >= 0) {
		int e = errno; /* write is async-signal-safe; errno kept */
		ssize_t w = write(fd, "h", 1);
		(void)w; /* full: a wake is there already */
		errno = e;
	}
}

/* The signals whose actions the session changes (SIGHUP here, SIGINT,
 * SIGTERM and SIGHUP the screen) and puts back. */
static const int handled[] = { SIGINT, SIGTERM, SIGHUP };
_Static_assert(sizeof(handled) / sizeof(*handled) == MS__STOPPER_HANDLED,
               "ms__stopper keeps an action for each handled signal");

/* Wait up to timeout_ms (-1: for ever) for a stop signal or a wake; a
 * signal taken is noted (the first one counts), the wakes are read. */
static void
stopper_take(ms__stopper *s, int timeout_ms)
{
	struct pollfd p[2] = { { .fd = s->sfd, .events = POLLIN },
		               { .fd = s->wake[0], .events = POLLIN } };
	int n = poll(p, 2, timeout_ms);
	atomic_fetch_add(&s->wakes, 1);
	if (n <= 0)
		return;
	struct signalfd_siginfo si;
	if ((p[0].revents & POLLIN) &&
	    read(s->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		int none = 0;
		atomic_compare_exchange_strong(&stop_sig, &none,
		                               (int)si.ssi_signo);
	}
	char buf[64];
	if (p[1].revents & POLLIN)
		while (read(s->wake[0], buf, sizeof(buf)) > 0)
			;
}

static void *
stopper_main(void *arg)
{
	ms__stopper *s = arg;
	/* Asleep until a stop signal comes or on_hup or the session's end
	 * wakes it: an idle session costs nothing. */
	while (!atomic_load(&stop_sig) && !atomic_load(&s->done))
		stopper_take(s, -1);
	/* Stopped: one SIGHUP ends the wait of the session loop, which
	 * then sees stop_asked; a loop not started yet sees stop_sig
	 * before it starts (in_loop is set before stop_sig is read). It
	 * was sent again every 50 ms until the session ended. */
	if (!atomic_load(&s->done) && atomic_load(&s->in_loop)) {
		pthread_kill(s->main, SIGHUP);
		atomic_fetch_add(&s->hups, 1);
	}
	while (!atomic_load(&s->done))
		stopper_take(s, -1);
	return NULL;
}

/* The stopper's descriptors: a signalfd of SIGINT, SIGTERM and SIGPIPE,
 * and the wake pipe. 0 or the error number, none left open. */
static int
stopper_fds(ms__stopper *s)
{
	sigset_t take = s->all;
	sigdelset(&take, SIGHUP);
	s->wake[0] = s->wake[1] = -1;
	s->sfd = signalfd(-1, &take, SFD_CLOEXEC | SFD_NONBLOCK);
	if (s->sfd < 0)
		return errno;
	if (pipe(s->wake)) {
		int e = errno;
		close(s->sfd);
		return e;
	}
	for (int i = 0; i < 2; i++) {
		fcntl(s->wake[i], F_SETFD, FD_CLOEXEC);
		fcntl(s->wake[i], F_SETFL, O_NONBLOCK);
	}
	return 0;
}

static void
stopper_close(ms__stopper *s)
{
	close(s->sfd);
	close(s->wake[0]);
	close(s->wake[1]);
}

/* Block the four stop signals everywhere but SIGHUP on this thread, and
 * start the thread that takes the others. 0, or the error number of the
 * thread (or of its descriptors) that could not start, with the mask put
 * back (no thread would take SIGINT, SIGTERM or SIGPIPE: Ctrl-C would do
 * nothing). */
int
ms__stopper_start(ms__stopper *s)
{
	memset(s, 0, sizeof(*s));
	atomic_store(&stop_sig, 0);
	s->main = pthread_self();
	sigemptyset(&s->all);
	sigaddset(&s->all, SIGINT);
	sigaddset(&s->all, SIGTERM);
	sigaddset(&s->all, SIGHUP);
	sigaddset(&s->all, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &s->all, &s->old);
	int e = stopper_fds(s);
	if (!e && (e = ms_thread_start(&s->thread, MS_THREAD_STACK,
	                               stopper_main, s)))
		stopper_close(s);
	if (e) {
		pthread_sigmask(SIG_SETMASK, &s->old, NULL);
		return e;
	}
	atomic_store(&stopper_wake, s->wake[1]);
	for (size_t i = 0; i < sizeof(handled) / sizeof(*handled); i++)
		sigaction(handled[i], NULL, &s->act[i]);
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_hup;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGHUP, &sa, NULL);
	sigset_t hup;
	sigemptyset(&hup);
	sigaddset(&hup, SIGHUP);
	pthread_sigmask(SIG_UNBLOCK, &hup, NULL);
	return 0;
}

/* The signal that has stopped the session so far, or 0: the one noted,
 * else SIGHUP when the screen saw a signal none was noted for. */
static int
stopped_by(void)
{
	int sig = atomic_load(&stop_sig);
	return sig ? sig : ms_screen_interrupted() ? SIGHUP : 0;
}

/* Stop the thread, take what is still pending (so nothing is delivered
 * later) and put the mask and the actions back. Returns the first stop
 * signal of the session, 0 if none came. */
int
ms__stopper_end(ms__stopper *s)
{
	pthread_sigmask(SIG_BLOCK, &s->all, NULL); /* on_hup: no more */
	atomic_store(&stopper_wake, -1);
	atomic_store(&s->done, true);
	ssize_t w = write(s->wake[1], "e", 1);
	(void)w; /* full: a wake is there already */
	pthread_join(s->thread, NULL);
	stopper_close(s);
	int sig = stopped_by();
	struct timespec zero = { 0, 0 };
	int late;
	while ((late = sigtimedwait(&s->all, NULL, &zero)) > 0)
		sig = sig ? sig : late;
	for (size_t i = 0; i < sizeof(handled) / sizeof(*handled); i++)
		sigaction(handled[i], &s->act[i], NULL);
	pthread_sigmask(SIG_SETMASK, &s->old, NULL);
	return sig;
}

/* A line on f around the screen (before it comes up, after it is gone):
 * on a terminal, wrapped at spaces to its width. */
static void say(FILE *f, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));

static void
say(FILE *f, const char *fmt, ...)
{
	char line[8192];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	ms__say_wrapped(f, line, ms__term_width(f));
}

/* Every database the session left in two files (a full disk), said last,
 * where it is seen: those of the runs restarts replaced (the screen said
 * each), folded once more as the last run's was (a disk with room by now
 * leaves nothing to say), then the last run's (last, NULL when its
 * database is whole); and the last run's scratch shard when it could not
 * be removed (shard, NULL when it was). Whether there was any. */
static bool
say_kept(FILE *err, const ms_replay_ctl *c, const char *last,
         const char *shard)
{
	const char *dbs[MS_REPLAY_CTL_KEPT];
	size_t n = ms_replay_ctl_kept(c, dbs, MS_REPLAY_CTL_KEPT), left = 0;
	for (size_t i = 0; i < n && i < MS_REPLAY_CTL_KEPT; i++) {
		ms_errbuf eb = { "" };
		if (ms_evdb_fold_wal(dbs[i], &eb) == 0)
			continue;
		left++;
		say(err, "mergescope tui: %s", eb.msg);
	}
	if (n > MS_REPLAY_CTL_KEPT) {
		left += n - MS_REPLAY_CTL_KEPT;
		say(err,
		    "mergescope tui: and the databases of %zu more restarted "
		    "runs were left with their -wal the same way (the "
		    "*.rerun-N files beside the first)",
		    n - MS_REPLAY_CTL_KEPT);
	}
	if (last)
		say(err, "mergescope tui: %s", last);
	if (shard)
		say(err,
		    "mergescope tui: %s; `mergescope clean` removes it once "
		    "that is fixed",
		    shard);
	return left || last || shard;
}

/* Every run a restart replaced, each database on a line of its own (a
 * path is never cut) with how its run ended: said before the last run's
 * line, which named only that one. */
static void
say_replaced(FILE *out, const ms_replay_ctl *c)
{
	const char *db, *how;
	size_t n = ms_replay_ctl_replaced(c, 0, &db, &how);
	if (!n)
		return;
	if (n == 1)
		say(out, "the earlier run of this session, replaced by a "
		         "restart, is recorded in:");
	else
		say(out, "the %zu earlier runs of this session, each replaced "
		         "by a restart, are recorded in:",
		    n);
	for (size_t i = 0; i < n; i++) {
		ms_replay_ctl_replaced(c, i, &db, &how);
		if (!db) {
			fprintf(out, "  and %zu more (out of memory for "
			             "their names)\n",
			        n - i);
			break;
		}
		fprintf(out, "  %s (%s)\n", db,
		        strcmp(how, "aborted") ? how : "recorded as aborted");
	}
}

/* After the screen: end the run the adapter drives (restarts, `restarts`
 * of them, may have replaced the first) as `run` ends one, and say how
 * the session went (rc, eb: the screen's; sig: the signal that stopped
 * it, or 0). The exit status. */
static int
session_end(ms_replay_ctl *adapter, unsigned restarts, int rc,
            const ms_errbuf *eb, int sig, const ms__run_cfg *cfg,
            const ms_tui_opts *topts, FILE *out, FILE *err)
{
	ms_replay *r = ms_replay_ctl_replay(adapter);
	const char *frozen = topts->frozen_cmds ? *topts->frozen_cmds : NULL;
	/* The work dir line above the screen is the first run's: after a
	 * restart, the one of the run that ends here (its shard is named
	 * after its own database, and may be elsewhere). */
	if (restarts && ms_replay_work_note(r)[0])
		say(err, "after %u restart%s, %s", restarts,
		    restarts == 1 ? "" : "s", ms_replay_work_note(r));
	/* What the run went without, once the screen no longer hides it. */
	if (ms_replay_start_note(r)[0])
		say(err, "mergescope tui: %s", ms_replay_start_note(r));
	remember(r, cfg->fixture_dir, topts->filter_out);
	ms_replay_status *st = malloc(sizeof(*st));
	if (st)
		ms_replay_get_status(r, st);
	bool finished = st && st->state == MS_REPLAY_DONE;
	bool failed = st && st->state == MS_REPLAY_FAILED;
	char line[1024];
	if (failed) {
		ms__run_failed_text(line, sizeof(line), st);
		say(err, "mergescope tui: %s", line);
	}
	free(st);
	char db_path[sizeof(cfg->db)];
	ms_errbuf wal_eb = { "" }, left = { "" };
	const char *wal = ms_replay_close_fold(r, db_path, sizeof(db_path),
	                                       &wal_eb, &left)
	                          ? wal_eb.msg
	                          : NULL;
	const char *shard = left.msg[0] ? left.msg : NULL;
	if (rc) {
		say_replaced(out, adapter);
		fprintf(err, "mergescope tui: %s\n",
		        eb->msg[0] ? eb->msg : ms_strerror(rc));
		say_kept(err, adapter, wal, shard);
		return MS_EXIT_ERROR;
	}
	if (frozen && frozen[0]) {
		/* One command per line, each freeze of the session. */
		const char *nl = strchr(frozen, '\n');
		bool several = nl && nl[1];
		fprintf(out, "replay the frozen merge%s with:\n",
		        several ? "s" : "");
		ms__say_commands(out, frozen, ms__term_width(out));
	}
	say_replaced(out, adapter);
	if (sig && !finished && !failed) {
		/* As `run` says it. */
		say(err,
		    "mergescope tui: stopped by %s; recorded as aborted in %s",
		    ms__signal_name(sig), db_path);
		say_kept(err, adapter, wal, shard);
		return MS_EXIT_ERROR;
	}
	say(out, "events recorded in %s%s", db_path,
	    finished ? ""
	    : failed ? " (the run failed)"
	             : " (stopped before the end: recorded as aborted)");
	bool kept = say_kept(err, adapter, wal, shard);
	return failed || kept ? MS_EXIT_ERROR : 0;
}

static int
session_run(ms__stopper *st, const ms__run_args *a, const ms__run_cfg *cfg,
            const char **breaks, size_t nbreaks, bool paused, double speed,
            const ms_tui_opts *topts, FILE *out, FILE *err)
{
	ms_replay_opts ro;
	session_opts(&ro, a, cfg, paused, speed);
	ms_replay *r = NULL;
	ms_errbuf eb = { "" };
	/* A terminal the screen cannot draw on is refused before the run
	 * opens: it left an event database recorded as aborted, and a
	 * work dir line, for a session that never showed. */
	int rc = ms_tui_term_check(topts->term, &eb);
	if (rc) {
		fprintf(err, "mergescope tui: %s\n", eb.msg);
		return MS_EXIT_ERROR;
	}
	rc = ms_replay_open(&r, &ro, &eb);
	if (rc) {
		ms__say_replay_error(err, a, rc, &eb);
		return MS_EXIT_ERROR;
	}
	for (size_t i = 0; i < nbreaks; i++) {
		int id;
		if ((rc = ms_replay_break_add(r, breaks[i], &id, &eb))) {
			fprintf(err, "mergescope tui: --break \"%s\": %s\n",
			        breaks[i],
			        eb.msg[0] ? eb.msg : ms_strerror(rc));
			ms_replay_close(r);
			return MS_EXIT_USAGE;
		}
	}
	ms_tui_ctl ctl;
	ms_replay_ctl *adapter = NULL;
	if ((rc = ms_replay_ctl_new(&adapter, r, &ctl))) {
		fprintf(err, "mergescope tui: out of memory for the screen's "
		             "copy of the run's parts and recent merges\n");
		ms_replay_close(r);
		return MS_EXIT_ERROR;
	}
	struct reopen_ctx rctx = {
		.a = a, .cfg = cfg, .paused = paused, .speed = speed
	};
	ms_replay_ctl_set_reopen(adapter, reopen, &rctx);
	/* Before the start: a plugin that crashes the process in the
	 * oracle's thread, while the parts are being staged, still leaves
	 * the watcher the shard to remove and the database to mark. */
	ms__supervise_run(r);
	/* Where the shard goes and why, as `run` says it: on the terminal
	 * while the parts are staged, and above the prompt afterwards. */
	if (ms_replay_work_note(r)[0])
		say(err, "%s", ms_replay_work_note(r));
	/* And the screen counts as up from the start too: a crash report
	 * that comes before the screen is then stops it from coming up. */
	ms__supervise_screen(true);
	if ((rc = ms_replay_start(r, &eb))) {
		ms__supervise_screen(false);
		ms__say_replay_error(err, a, rc, &eb);
		ms_replay_ctl_free(adapter);
		ms_replay_close(r);
		return MS_EXIT_ERROR;
	}
	/* A signal while the parts were staged: no screen at all. */
	atomic_store(&st->in_loop, true);
	if (!atomic_load(&stop_sig))
		rc = ms_tui_run(&ctl, topts, &eb);
	atomic_store(&st->in_loop, false);
	ms__supervise_screen(false);
	int sig = stopped_by();
	/* The terminal is restored here, whatever happened. */
	rc = session_end(adapter, rctx.opened, rc, &eb, sig, cfg, topts, out,
	                 err);
	ms_replay_ctl_free(adapter);
	return rc;
}

/* The session with the stop signals taken (see the file comment): exit
 * status 128 + the signal when one stopped it, else the session's. */
static int
session(const ms__run_args *a, const ms__run_cfg *cfg, const char **breaks,
        size_t nbreaks, bool paused, double speed, const ms_tui_opts *topts,
        FILE *out, FILE *err)
{
	ms__stopper st;
	int e = ms__stopper_start(&st);
	if (e) {
		/* Before anything is opened: a session that Ctrl-C cannot
		 * stop is not started (and the run's own threads would find
		 * no more room). */
		ms_errbuf eb = { "" };
		ms_thread_fail(&eb, MS_ERR_IO, e,
		               "cannot start the thread that takes Ctrl-C "
		               "(SIGINT, SIGTERM, SIGPIPE)");
		fprintf(err, "mergescope tui: %s\n", eb.msg);
		return MS_EXIT_ERROR;
	}
	ms_tui_opts o = *topts;
	int news[2];
	bool woken = news_open(news);
	o.wake_fd = woken ? news[0] : 0;
	o.stop_asked = stop_asked;
	int rc = session_run(&st, a, cfg, breaks, nbreaks, paused, speed, &o,
	                     out, err);
	if (woken)
		news_close(news);
	int sig = ms__stopper_end(&st);
	return sig ? 128 + sig : rc;
}

/* Whether the screen will have keys: standard input is a terminal, or
 * the controlling one opens (the screen then reads /dev/tty). Without
 * either, q never arrives: refused, before anything is built, in one
 * line on err. */
static bool
keyboard(FILE *err)
{
	if (isatty(STDIN_FILENO))
		return true;
	int fd = open("/dev/tty", O_RDONLY | O_NOCTTY | O_CLOEXEC);
	if (fd >= 0) {
		close(fd);
		return true;
	}
	fprintf(err,
	        "mergescope tui: no keyboard: standard input is not a "
	        "terminal and there is no controlling terminal (/dev/tty: "
	        "%s); start it from a terminal, or run without one: "
	        "mergescope run --headless\n",
	        strerror(errno));
	return false;
}

/* --json, --force and --freeze-at are a headless run's: `tui` takes
 * them to hand over to `run` (with --headless, or when standard output
 * is not a terminal; they were refused there as unknown options of
 * `tui`), and refuses them for the screen, which writes no report and
 * freezes with f. 0, or MS_EXIT_USAGE after one line. */
static int
screen_takes_all(const ms__opt *o, FILE *err)
{
	static const int run_only[] = { MS__RO_JSON, MS__RO_FORCE,
		                        MS__RO_FREEZE_AT };
	for (size_t i = 0; i < sizeof(run_only) / sizeof(run_only[0]); i++) {
		if (!o[run_only[i]].count)
			continue;
		fprintf(err,
		        "mergescope tui: %s is an option of the headless run "
		        "(the screen %s): add --headless, or use mergescope "
		        "run\n",
		        o[run_only[i]].name,
		        run_only[i] == MS__RO_FREEZE_AT
		                ? "freezes with f at a barrier"
		                : "writes no report file");
		return MS_EXIT_USAGE;
	}
	return 0;
}

static int
exec(const ms__cmd_args *args, FILE *out, FILE *err)
{
	const ms__opt *o = args->o;
	int rc = ms__run_opts_check(&ms_cmd_tui, args, err);
	if (rc)
		return rc;
	double speed = MS_TUI_DEFAULT_SPEED; /* --speed was checked */
	if (o[MS__RO_SPEED].count)
		ms__parse_speed(o[MS__RO_SPEED].value, &speed);
	const char *breaks[MS__MAX_BREAKS]; /* no more: checked */
	size_t nbreaks =
	        ms__cmd_values(args, MS__RO_BREAK, breaks, MS__MAX_BREAKS);
	if (nbreaks > MS__MAX_BREAKS)
		nbreaks = MS__MAX_BREAKS;
	if (o[MS__RO_HEADLESS].count || !isatty(STDOUT_FILENO))
		return ms__cmd_main(&ms_cmd_run, args->argc, args->argv, out,
		                    err);
	if ((rc = screen_takes_all(o, err)))
		return rc;

	if (!keyboard(err))
		return MS_EXIT_USAGE;
	ms__run_args a;
	ms__run_cfg *cfg = ms__run_begin(&ms_cmd_tui, o, &a, err, &rc);
	if (!cfg)
		return rc;
	/* The merge-once command after a freeze names this very program, so
	 * it runs as shown whatever PATH says. */
	char self[4096];
	ms__self_exe(self, sizeof(self));
	if (!self[0])
		snprintf(self, sizeof(self), "mergescope");
	char *frozen = NULL, filter[256] = "";
	/* What the last session on this fixture used, on offer. */
	ms__tui_memory *mem = calloc(1, sizeof(*mem));
	const char *offer[MS__MEMORY_BREAKS];
	char mpath[4096];
	bool have = mem &&
	            ms__tui_memory_path(mpath, sizeof(mpath),
	                                cfg->fixture_dir) == 0 &&
	            ms__tui_memory_load(mpath, mem);
	/* Only what this command line does not set already (`make run`
	 * gives --break sampling every time). */
	size_t noffer = 0;
	for (size_t i = 0; have && i < mem->nbreaks; i++) {
		bool given = false;
		for (size_t k = 0; k < nbreaks && !given; k++)
			given = strcmp(breaks[k], mem->breaks[i]) == 0;
		if (!given)
			offer[noffer++] = mem->breaks[i];
	}
	ms_tui_opts topts = {
		.no_color = o[MS__RO_NOCOLOR].count > 0,
		.ascii = o[MS__RO_ASCII].count > 0,
		.program = self,
		.frozen_cmds = &frozen,
		.offer_nbreaks = noffer,
		.offer_breaks = offer,
		.offer_filter = have ? mem->filter : NULL,
		.filter_out = filter,
		.filter_out_n = sizeof(filter),
	};
	rc = session(&a, cfg, breaks, nbreaks, o[MS__RO_PAUSED].count > 0,
	             speed, &topts, out, err);
	free(frozen);
	free(mem);
	free(cfg);
	return rc;
}

const ms_cmd ms_cmd_tui = {
	.name = "tui",
	.summary = "watch and steer a replay live (the default)",
	.usage = usage,
	/* All of `run`'s: with --headless they are handed over
	 * (screen_takes_all refuses --json, --force and --freeze-at for
	 * the screen). */
	.opts = ms__run_opts,
	.nopts = MS__RO_COUNT,
	.exec = exec,
};
