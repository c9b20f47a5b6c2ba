/*
 * supervise.c - a watcher process beside the `mergescope` process, so that
 * a plugin taking the workbench down (a fatal signal inside Decide or
 * another of its callbacks, or exit() called from one) still leaves a
 * record, a clean terminal and no scratch shard behind.
 *
 * Why a second process: nothing the event database needs can be done
 * safely in a signal handler. At start, while it has one thread, the
 * executable forks a watcher; the command keeps running in the original
 * process (its pid, signals and exit status are the ones the user sees).
 * It writes short notes with write(2) to a pipe: what to clean up once
 * known (the database, the scratch shard, whether the screen is up), and
 * from the fatal signal handler or the exit hook which plugin was in
 * which of its callbacks (Decide, open(), stats(), close(), its load).
 * On such a note the watcher, in ordinary context, records the run as
 * aborted with the reason (waiting for SQLite's lock if the recorder
 * holds it), removes the scratch shard and answers on a second pipe; the
 * handler, which waited for that answer (bounded), puts the terminal
 * back, prints one line and dies of its signal (exit status 128 + the
 * signal in a shell), or the exit hook ends the process with status 2.
 * The watcher removes the scratch shard once more after the process is
 * gone, then exits.
 *
 * A process that exits says so first (the exit hook's `end` note), closes
 * the notes and waits for its watcher to be gone: a script, or `bench`
 * waiting for its run, sees nothing of the process left once it has
 * ended. One that is gone without saying so died of a signal outside a
 * plugin: a fatal one it caught (its handler notes it), or one nothing
 * can catch (SIGKILL from the user, or from the kernel's OOM killer when
 * the run's cgroup reached its memory limit, which the watcher reads in
 * the group's figures). The watcher then does what the process could not: puts
 * the terminal back if the screen was up, records the run as aborted with the
 * reason (when it had not ended), removes the scratch shard and says so in one
 * line.
 *
 * Notes (one line each, tab-separated):
 *   db <TAB> PATH           the run's event database
 *   scratch <TAB> PATH      the run's scratch shard directory
 *   envelope <TAB> MODE <TAB> MEM <TAB> DIR <TAB> DIR <TAB> DIR
 *                           the run's cgroup: mode, memory limit, groups
 *   screen <TAB> 1|0        the curses screen is up / down
 *   crash <TAB> PLUGIN <TAB> SIGNUM <TAB> CALLBACK
 *                           fatal signal inside PLUGIN's CALLBACK
 *                           ("Decide", "open()", ...)
 *   exit <TAB> PLUGIN <TAB> 0 <TAB> CALLBACK
 *                           exit() called inside PLUGIN's CALLBACK
 *   fatal <TAB> SIGNUM      fatal signal outside any plugin
 *   end <TAB> 0             the process is exiting
 *
 * In-process callers of ms_cli_main (the tests) are not watched: the notes
 * are then no-ops and no handler is installed.
 */
#include "cli.h"

#include "ms_enum.h"
#include "ms_owner.h"
#include "ms_pipeline.h"
#include "ms_replay.h"
#include "ms_replay_events.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

/* The watched process: the write end of the notes pipe and the read end
 * of the answers (-1 when not watched). */
static int note_fd = -1;
static int ack_fd = -1;
/* The watched process and its watcher (0 when not watched). */
static pid_t watched_pid, watcher_pid;
static volatile sig_atomic_t screen_up;
/* The terminal's modes before the screen changed them, read from the
 * terminal the screen draws on (standard output; standard input when
 * only it is one): standard input is not the terminal when the TUI reads
 * its keys from /dev/tty (`tui < file`). -1: no terminal to put back. */
static struct termios saved_tio;
static int tio_fd = -1;

enum { EXIT_HOOKS = 8 };
static const int fatal_signals[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT };

/* Leave the alternate screen, show the cursor, reset attributes: what
 * endwin() sends on the terminals curses is used on. */
static const char term_restore[] = "\033[0m\033[?25h\033[?1049l\r\n";

static const char *const signal_names[] = {
	[SIGSEGV] = "SIGSEGV", [SIGBUS] = "SIGBUS",   [SIGILL] = "SIGILL",
	[SIGFPE] = "SIGFPE",   [SIGABRT] = "SIGABRT", [SIGKILL] = "SIGKILL",
	[SIGTERM] = "SIGTERM", [SIGINT] = "SIGINT",   [SIGHUP] = "SIGHUP",
	[SIGPIPE] = "SIGPIPE", [SIGQUIT] = "SIGQUIT",
};

const char *
ms__signal_name(int sig)
{
	/* A table lookup: safe in a signal handler. */
	return MS_ENUM_NAME(signal_names, sig, "a signal");
}

/* Append s to buf[*n..cap): async-signal-safe string building. */
static void
put(char *buf, size_t cap, size_t *n, const char *s)
{
	while (*s && *n + 1 < cap)
		buf[(*n)++] = *s++;
}

static void
put_uint(char *buf, size_t cap, size_t *n, unsigned v)
{
	char d[12];
	size_t k = 0;
	do {
		d[k++] = (char)('0' + v % 10);
		v /= 10;
	} while (v && k < sizeof(d));
	while (k && *n + 1 < cap)
		buf[(*n)++] = d[--k];
}

static void
write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

/* Where restore_terminal writes: standard output, or the copy of it that
 * silence_screen kept. */
static int term_fd = STDOUT_FILENO;

static void
restore_terminal(void)
{
	/* Standard output may be /dev/null by now (silence_screen): its
	 * copy is the terminal. */
	if (tio_fd >= 0)
		tcsetattr(tio_fd == STDOUT_FILENO ? term_fd : tio_fd, TCSANOW,
		          &saved_tio);
	write_all(term_fd, term_restore, sizeof(term_restore) - 1);
}

/* From here on what the other threads write to standard output goes to
 * /dev/null, and the terminal is written through a copy: the screen's
 * thread goes on while a crash is reported, and may draw a frame or bring
 * the screen up for the first time (a crash in the verdict oracle's thread
 * comes while the parts are staged) after the terminal was put back.
 * Async-signal-safe; standard output stays as it was if a call fails. */
static void
silence_screen(void)
{
	if (term_fd != STDOUT_FILENO)
		return;
	int copy = dup(STDOUT_FILENO);
	int nul = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (copy >= 0 && nul >= 0 && dup2(nul, STDOUT_FILENO) >= 0)
		term_fd = copy;
	else if (copy >= 0)
		close(copy);
	if (nul >= 0)
		close(nul);
}

/* Wait (at most 30 s) for the watcher's answer to a crash or exit note. */
static void
wait_answer(void)
{
	if (ack_fd < 0)
		return;
	struct pollfd pf = { ack_fd, POLLIN, 0 };
	for (int i = 0; i < 300; i++) {
		int r = poll(&pf, 1, 100);
		if (r > 0 || (r < 0 && errno != EINTR))
			return;
	}
}

/* The hint after a plugin took the workbench down in Decide. */
#define DECIDE_APART                                                       \
	"mergescope: with --plugin-host process each plugin runs in a "    \
	"process of its own, where a crash in Decide costs only that "     \
	"call (it fails open)\n"

/* Have the watcher record the run and clean up (waiting for its answer),
 * then put the terminal back if the screen was up (again: the screen's
 * thread may have drawn meanwhile) and say what happened on stderr. */
static void
note_plugin(const char *what, const char *plugin, const char *cb, int sig)
{
	bool screen = screen_up;
	if (screen) {
		silence_screen();
		restore_terminal();
	}
	char line[160];
	size_t n = 0;
	put(line, sizeof(line), &n, what);
	put(line, sizeof(line), &n, "\t");
	put(line, sizeof(line), &n, plugin);
	put(line, sizeof(line), &n, "\t");
	put_uint(line, sizeof(line), &n, (unsigned)sig);
	put(line, sizeof(line), &n, "\t");
	put(line, sizeof(line), &n, cb);
	put(line, sizeof(line), &n, "\n");
	write_all(note_fd, line, n);
	wait_answer();
	if (screen)
		restore_terminal();
	n = 0;
	put(line, sizeof(line), &n, "mergescope: aborted: plugin ");
	put(line, sizeof(line), &n, plugin);
	put(line, sizeof(line), &n,
	    sig ? " crashed in " : " called exit() in ");
	put(line, sizeof(line), &n, cb);
	if (sig) {
		put(line, sizeof(line), &n, " (");
		put(line, sizeof(line), &n, ms__signal_name(sig));
		put(line, sizeof(line), &n, ")");
	}
	put(line, sizeof(line), &n, "\n");
	write_all(STDERR_FILENO, line, n);
	/* Decide ran in this process: what to do about it, on a line of
	 * its own. */
	if (strcmp(cb, "Decide") == 0)
		write_all(STDERR_FILENO, DECIDE_APART,
		          sizeof(DECIDE_APART) - 1);
}

/* Set by the first thread that reports a crash or an exit in Decide. The
 * same plugin may run on two threads at once (the run's chain and the
 * verdict oracle's): a second thread that crashes or exits meanwhile must
 * neither end the process before the first has reported (the default
 * action, or exit's own status) nor report again, so it waits for the
 * first thread to end the process. */
static volatile sig_atomic_t reporting;

static void
wait_for_reporter(void)
{
	for (;;)
		pause();
}

/* Fatal signal: if a plugin was in Decide, have the watcher record it and
 * clean up, and say so; put the terminal back; then restore the default
 * action and die of the signal (SA_NODEFER lets raise() deliver it). */
static void
on_fatal(int sig)
{
	int saved = errno;
	if (__atomic_exchange_n(&reporting, 1, __ATOMIC_SEQ_CST))
		wait_for_reporter();
	const char *cb = NULL;
	const char *plugin = ms_plugin_in_callback(&cb);
	if (plugin && note_fd >= 0) {
		note_plugin("crash", plugin, cb, sig);
	} else {
		if (screen_up) {
			silence_screen();
			restore_terminal();
		}
		if (note_fd >= 0) {
			char line[32];
			size_t n = 0;
			put(line, sizeof(line), &n, "fatal\t");
			put_uint(line, sizeof(line), &n, (unsigned)sig);
			put(line, sizeof(line), &n, "\n");
			write_all(note_fd, line, n);
		}
	}
	errno = saved;
	signal(sig, SIG_DFL);
	raise(sig);
}

/* The watched process ends: say so, close the notes (the watcher reads
 * their end and exits) and wait for the watcher to be gone (at most 30
 * s), so that nothing of this process outlives it. Once: the hook is
 * registered several times. Not in a child forked without exec, which
 * shares the pipes but is not the watched process. */
static void
end_watch(void)
{
	if (note_fd < 0 || getpid() != watched_pid)
		return;
	write_all(note_fd, "end\t0\n", 6);
	close(note_fd);
	note_fd = -1;
	wait_answer(); /* the watcher's exit closes the answers' pipe */
	struct pollfd pf = { ack_fd, POLLIN, 0 };
	if (poll(&pf, 1, 0) > 0 && (pf.revents & POLLHUP))
		(void)waitpid(watcher_pid, NULL, 0);
}

/* exit() or quick_exit(): if a plugin's callback called it, say so and
 * end at once with status 2 (the other threads are still running). */
static void
on_exit_hook(void)
{
	const char *cb = NULL;
	const char *plugin = ms_plugin_in_callback(&cb);
	if (!plugin) {
		if (reporting)
			wait_for_reporter();
		end_watch();
		return;
	}
	if (__atomic_exchange_n(&reporting, 1, __ATOMIC_SEQ_CST))
		wait_for_reporter();
	if (note_fd >= 0)
		note_plugin("exit", plugin, cb, 0);
	_exit(MS_EXIT_ERROR);
}

void
ms__supervise_note(const char *key, const char *value)
{
	if (note_fd < 0 || !key || !value)
		return;
	char line[4200];
	size_t n = 0;
	put(line, sizeof(line), &n, key);
	put(line, sizeof(line), &n, "\t");
	put(line, sizeof(line), &n, value);
	put(line, sizeof(line), &n, "\n");
	write_all(note_fd, line, n);
}

void
ms__test_stop(const char *point)
{
	const char *s = getenv("MERGESCOPE_TEST_STOP");
	if (s && strcmp(s, point) == 0)
		raise(SIGSTOP);
}

void
ms__supervise_created(void *arg, const char *what, const char *path)
{
	(void)arg;
	ms__supervise_note(what, path);
	ms__test_stop(what);
}

void
ms__supervise_run(const ms_replay *r)
{
	ms__supervise_note("db", ms_replay_db_path(r));
	ms__supervise_note("scratch", ms_replay_work_dir(r));
	ms__test_stop("opened");
	const ms_envelope *e = ms_replay_envelope(r);
	if (e->mode == MS_ENVELOPE_EMULATED)
		return;
	char v[16 + 24 + 3 * (MS_ENVELOPE_PATH_MAX + 1)];
	int n = snprintf(v, sizeof(v), "%d\t%llu", (int)e->mode,
	                 (unsigned long long)e->mem_bytes);
	for (int i = 0; i < MS_ENVELOPE_DIRS && n > 0 && (size_t)n < sizeof(v);
	     i++)
		n += snprintf(v + n, sizeof(v) - (size_t)n, "\t%s", e->dir[i]);
	ms__supervise_note("envelope", v);
}

void
ms__supervise_screen(bool up)
{
	screen_up = up;
	ms__supervise_note("screen", up ? "1" : "0");
}

static void
watched_setup(int nfd, int afd, pid_t watcher)
{
	note_fd = nfd;
	ack_fd = afd;
	watched_pid = getpid();
	watcher_pid = watcher;
	static const int tty_fds[] = { STDOUT_FILENO, STDIN_FILENO };
	for (size_t i = 0; i < 2 && tio_fd < 0; i++)
		if (isatty(tty_fds[i]) &&
		    tcgetattr(tty_fds[i], &saved_tio) == 0)
			tio_fd = tty_fds[i];
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_fatal;
	sa.sa_flags = SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(fatal_signals) / sizeof(*fatal_signals);
	     i++)
		sigaction(fatal_signals[i], &sa, NULL);
	/* exit() runs each registered hook once, in whichever thread gets
	 * to it: one registration per thread that may call exit() from a
	 * Decide at the same time (the run's links and the oracle's). */
	for (int i = 0; i < EXIT_HOOKS; i++) {
		atexit(on_exit_hook);
		at_quick_exit(on_exit_hook);
	}
}

/* What the watched process noted. */
typedef struct notes {
	char db[4096];
	char scratch[4096];
	char plugin[64];
	char callback[48]; /* the plugin's code it was in */
	int crash_sig;
	bool exited_in_decide;
	int fatal_sig; /* outside a plugin */
	bool ended;    /* it is exiting */
	bool screen;
	ms_envelope env; /* mode and groups; emulated when none */
} notes;

/* "MODE<TAB>MEM<TAB>DIR<TAB>DIR<TAB>DIR" into e. */
static void
take_envelope(ms_envelope *e, char *v)
{
	memset(e, 0, sizeof(*e));
	char *f[2 + MS_ENVELOPE_DIRS] = { 0 };
	size_t n = 0;
	for (char *p = v; p && n < sizeof(f) / sizeof(*f); n++) {
		f[n] = p;
		p = strchr(p, '\t');
		if (p)
			*p++ = '\0';
	}
	if (n < 2)
		return;
	int mode = atoi(f[0]);
	if (mode != MS_ENVELOPE_CGROUP_V1 && mode != MS_ENVELOPE_CGROUP_V2)
		return;
	e->mode = (enum ms_envelope_mode)mode;
	e->mem_bytes = strtoull(f[1], NULL, 10);
	for (size_t i = 2; i < n; i++)
		snprintf(e->dir[i - 2], sizeof(e->dir[i - 2]), "%s", f[i]);
}

static void
take_line(notes *nt, char *line)
{
	char *tab = strchr(line, '\t');
	if (!tab)
		return;
	*tab++ = '\0';
	if (strcmp(line, "db") == 0) {
		snprintf(nt->db, sizeof(nt->db), "%s", tab);
	} else if (strcmp(line, "scratch") == 0) {
		snprintf(nt->scratch, sizeof(nt->scratch), "%s", tab);
	} else if (strcmp(line, "envelope") == 0) {
		take_envelope(&nt->env, tab);
	} else if (strcmp(line, "screen") == 0) {
		nt->screen = tab[0] == '1';
	} else if (strcmp(line, "fatal") == 0) {
		nt->fatal_sig = atoi(tab);
	} else if (strcmp(line, "end") == 0) {
		nt->ended = true;
	} else if (strcmp(line, "crash") == 0 || strcmp(line, "exit") == 0) {
		bool crash = line[0] == 'c';
		char *sig = strchr(tab, '\t');
		if (sig)
			*sig++ = '\0';
		char *cb = sig ? strchr(sig, '\t') : NULL;
		if (cb)
			*cb++ = '\0';
		snprintf(nt->plugin, sizeof(nt->plugin), "%s", tab);
		snprintf(nt->callback, sizeof(nt->callback), "%s",
		         cb && *cb ? cb : "Decide");
		if (crash)
			nt->crash_sig = sig && atoi(sig) ? atoi(sig) : SIGSEGV;
		else
			nt->exited_in_decide = true;
	}
}

char *
ms__note_line(ms__note_buf *nb)
{
	char *s, *nl;
	while ((nl = memchr(s = nb->b + nb->start, '\n',
	                    nb->len - nb->start))) {
		nb->start = (size_t)(nl + 1 - nb->b);
		if (nb->skip) { /* the end of a line too long to be ours */
			nb->skip = false;
			continue;
		}
		*nl = '\0';
		return s;
	}
	nb->len -= nb->start;
	memmove(nb->b, s, nb->len);
	nb->start = 0;
	if (nb->len == sizeof(nb->b) - 1) {
		/* A line too long to be ours: dropped whole, up to its
		 * newline (its rest is no line of its own). */
		nb->len = 0;
		nb->skip = true;
	}
	return NULL;
}

/* A plugin took the process down: record, clean up, say so. */
static void
postmortem(const notes *nt, FILE *err)
{
	char reason[256];
	if (nt->crash_sig)
		snprintf(reason, sizeof(reason), "plugin %s crashed in %s (%s)",
		         nt->plugin, nt->callback,
		         ms__signal_name(nt->crash_sig));
	else
		snprintf(reason, sizeof(reason),
		         "plugin %s called exit() in %s", nt->plugin,
		         nt->callback);
	/* The process says what happened; only a failure to record it is
	 * the watcher's to tell. */
	ms_errbuf eb = { "" };
	if ((nt->db[0] || nt->scratch[0]) &&
	    ms_replay_postmortem(nt->db, nt->scratch, reason, NULL, &eb)) {
		fprintf(err, "mergescope: %s\n", eb.msg);
		fflush(err);
	}
}

/* The database's owner record (DB-owner, beside a database in the
 * cache's runs/), when it names the watched process `run`: taken over
 * by the watcher while it records the end (so that `clean` sees the
 * database in use, not a dead run's), or (take false) removed once it
 * is done. */
static void
db_owner_handover(const notes *nt, pid_t run, bool take)
{
	char rec[sizeof(nt->db) + 16];
	if (!nt->db[0] || ms__db_owner_path(rec, sizeof(rec), nt->db) != 0)
		return;
	ms_owner o;
	ms_errbuf eb = { "" };
	if (ms_owner_read_file(rec, &o, &eb) != 0)
		return;
	if (take && o.pid == run)
		(void)ms_owner_write_beside(nt->db, MS__DB_OWNER_SUFFIX,
		                            "database", nt->db, &eb);
	else if (!take && (o.pid == run || o.pid == getpid()))
		(void)unlink(rec);
}

/* The process is gone: the database it left in WAL mode (it did not live
 * to fold its log in and go back to a rollback journal, as a run that
 * ends does) folded now, so that it is whole in one file and a reader
 * leaves no -wal and -shm beside it. */
static void
fold_log(const notes *nt, FILE *err)
{
	ms_errbuf eb = { "" };
	if (nt->db[0] && ms_evdb_fold_wal(nt->db, &eb)) {
		fprintf(err, "mergescope: %s\n", eb.msg);
		fflush(err);
	}
}

/* The watcher removed the shard of a run that left no database to
 * record in (killed before making it) or one that had recorded its end:
 * said as the other removals are. */
static void
shard_removed_line(const notes *nt, const char *reason, FILE *err)
{
	if (!nt->db[0] || access(nt->db, F_OK) != 0)
		fprintf(err,
		        "mergescope: run aborted: %s, before it created its "
		        "event database: removed its scratch shard %s\n",
		        reason, nt->scratch);
	else
		fprintf(err,
		        "mergescope: run killed: %s, after it recorded its end "
		        "in %s: removed its scratch shard %s\n",
		        reason, nt->db, nt->scratch);
}

/* The process is gone without saying it was exiting (see the file
 * comment): put the terminal back (tio, read from tfd when the watcher
 * started, before any screen), record the run as aborted, remove the
 * shard and the cgroup it left, and say so. */
static void
died(const notes *nt, pid_t run, const struct termios *tio, int tfd,
     FILE *err)
{
	if (nt->screen) {
		if (tfd >= 0)
			tcsetattr(tfd, TCSANOW, tio);
		write_all(STDOUT_FILENO, term_restore,
		          sizeof(term_restore) - 1);
	}
	if (!nt->db[0] && !nt->scratch[0])
		return;
	ms_envelope_stats cs;
	ms_envelope_read(&nt->env, &cs);
	char reason[256];
	if (nt->fatal_sig)
		snprintf(reason, sizeof(reason), "mergescope died of %s",
		         ms__signal_name(nt->fatal_sig));
	else if (cs.oom_events)
		snprintf(reason, sizeof(reason),
		         "killed by the kernel's OOM killer: the run's cgroup "
		         "reached its memory limit of %.0f MiB (--profile)",
		         (double)nt->env.mem_bytes / (1024.0 * 1024.0));
	else
		snprintf(reason, sizeof(reason),
		         "killed by a signal before it could record its end "
		         "(SIGKILL, or another it was not catching)");
	ms_errbuf eb = { "" };
	enum ms_postmortem done = MS_PM_NONE;
	bool had_shard = nt->scratch[0] && access(nt->scratch, F_OK) == 0;
	db_owner_handover(nt, run, true);
	int rc = ms_replay_postmortem(nt->db, nt->scratch, reason, &done, &eb);
	fold_log(nt, err);
	db_owner_handover(nt, run, false);
	/* The groups it made, empty now (a later run would remove them). */
	for (int i = MS_ENVELOPE_DIRS - 1; i >= 0; i--)
		if (nt->env.mode != MS_ENVELOPE_EMULATED && nt->env.dir[i][0])
			(void)rmdir(nt->env.dir[i]);
	if (rc)
		fprintf(err, "mergescope: %s\n", eb.msg);
	else if (done == MS_PM_RECORDED)
		fprintf(err,
		        "mergescope: run aborted: %s; recorded in %s%s%s\n",
		        reason, nt->db, nt->scratch[0] ? ", scratch shard " : "",
		        nt->scratch[0] ? "removed" : "");
	else if (done == MS_PM_REMOVED)
		fprintf(err,
		        "mergescope: run aborted: %s, while it created its "
		        "event database %s, before it held anything: removed "
		        "it%s\n",
		        reason, nt->db,
		        nt->scratch[0] ? " and the scratch shard" : "");
	else if (had_shard)
		shard_removed_line(nt, reason, err);
	fflush(err);
}

/* The watcher: read notes until the watched process is gone. */
static int
watch(int nfd, int afd, FILE *err)
{
	pid_t run = getppid(); /* the watched process: our parent */
	/* The terminal's modes now, before the process can bring a screen
	 * up: what to put back should it die with the screen up. */
	struct termios tio;
	int tfd = -1;
	static const int tty_fds[] = { STDOUT_FILENO, STDIN_FILENO };
	for (size_t i = 0; i < 2 && tfd < 0; i++)
		if (isatty(tty_fds[i]) && tcgetattr(tty_fds[i], &tio) == 0)
			tfd = tty_fds[i];
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	notes *nt = calloc(1, sizeof(*nt));
	if (!nt)
		return 0;
	ms__note_buf nb = { .len = 0 };
	bool handled = false;
	for (;;) {
		ssize_t r = read(nfd, nb.b + nb.len, sizeof(nb.b) - 1 - nb.len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		nb.len += (size_t)r;
		for (char *line; (line = ms__note_line(&nb));) {
			take_line(nt, line);
			if ((nt->crash_sig || nt->exited_in_decide) &&
			    !handled) {
				handled = true;
				postmortem(nt, err);
				write_all(afd, "k", 1);
			}
		}
	}
	/* Gone: anything its last moments wrote to the shard goes too. */
	if (handled && nt->scratch[0]) {
		ms_errbuf eb = { "" };
		ms_replay_postmortem(NULL, nt->scratch, NULL, NULL, &eb);
	} else if (!handled && !nt->ended) {
		died(nt, run, &tio, tfd, err);
	}
	if (handled) {
		fold_log(nt, err);
		db_owner_handover(nt, run, false);
	}
	free(nt);
	return 0;
}

int
ms_cli_main_supervised(int argc, char **argv, FILE *out, FILE *err)
{
	int nfd[2], afd[2];
	fflush(out);
	fflush(err);
	if (pipe(nfd) < 0)
		return ms_cli_main(argc, argv, out, err);
	if (pipe(afd) < 0) {
		close(nfd[0]);
		close(nfd[1]);
		return ms_cli_main(argc, argv, out, err);
	}
	for (int i = 0; i < 2; i++) {
		fcntl(nfd[i], F_SETFD, FD_CLOEXEC);
		fcntl(afd[i], F_SETFD, FD_CLOEXEC);
	}
	pid_t pid = fork();
	if (pid == 0) {
		close(nfd[1]);
		close(afd[0]);
		_exit(watch(nfd[0], afd[1], err));
	}
	close(nfd[0]);
	close(afd[1]);
	if (pid < 0) {
		close(nfd[1]);
		close(afd[0]);
		return ms_cli_main(argc, argv, out, err);
	}
	watched_setup(nfd[1], afd[0], pid);
	return ms_cli_main(argc, argv, out, err);
}
