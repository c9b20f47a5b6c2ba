/*
 * supervise.c - the `mergescope` executable runs its command in a child
 * process and waits for it, so that a plugin taking that process down
 * (a fatal signal inside Decide, or exit() called from Decide) still
 * leaves a record, a clean terminal and no scratch shard behind.
 *
 * Why a parent: nothing the event database needs can be done safely in a
 * signal handler, and a process that called exit() has no say in its exit
 * status. The child only writes short notes with write(2) to a pipe: what
 * to clean up once known (the database, the scratch shard, whether the
 * screen is up), and from the fatal signal handler or the exit hook which
 * plugin was in Decide. The parent, in ordinary context and after the
 * child is gone (so SQLite's locks are released), records the run as
 * aborted with the reason, removes the scratch shard, restores the
 * terminal modes, prints one line, and exits 128 + the signal (2 for an
 * exit() inside Decide). A child that ends normally is mirrored exactly:
 * its exit status becomes the parent's.
 *
 * Notes (one line each, tab-separated, written by the child):
 *   db <TAB> PATH           the run's event database
 *   scratch <TAB> PATH      the run's scratch shard directory
 *   screen <TAB> 1|0        the curses screen is up / down
 *   crash <TAB> PLUGIN <TAB> SIGNUM   fatal signal inside PLUGIN's Decide
 *   exit <TAB> PLUGIN       exit() called inside PLUGIN's Decide
 *
 * Signals: the parent ignores what the terminal sends to the whole
 * foreground group (the child handles those itself) and forwards SIGINT,
 * SIGTERM, SIGHUP and SIGQUIT sent to its own pid by another process.
 * In-process callers of ms_cli_main (the tests) are not supervised: the
 * notes are then no-ops and no handler is installed.
 */
#include "cli.h"

#include "ms_pipeline.h"
#include "ms_replay.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

/* Child side: the write end of the notes pipe (-1 when unsupervised). */
static int note_fd = -1;
static volatile sig_atomic_t screen_up;
static struct termios saved_tio;
static bool have_tio;

/* Parent side: the child to forward signals to. */
static volatile pid_t child_pid;

static const int fatal_signals[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT };

/* Leave the alternate screen, show the cursor, reset attributes: what
 * endwin() sends on the terminals curses is used on. */
static const char term_restore[] = "\033[0m\033[?25h\033[?1049l\r\n";

static const char *
signal_name(int sig)
{
	switch (sig) {
	case SIGSEGV:
		return "SIGSEGV";
	case SIGBUS:
		return "SIGBUS";
	case SIGILL:
		return "SIGILL";
	case SIGFPE:
		return "SIGFPE";
	case SIGABRT:
		return "SIGABRT";
	case SIGKILL:
		return "SIGKILL";
	case SIGTERM:
		return "SIGTERM";
	case SIGINT:
		return "SIGINT";
	case SIGHUP:
		return "SIGHUP";
	case SIGPIPE:
		return "SIGPIPE";
	case SIGQUIT:
		return "SIGQUIT";
	default:
		return "a signal";
	}
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

static void
restore_terminal(void)
{
	if (!screen_up)
		return;
	if (have_tio)
		tcsetattr(STDIN_FILENO, TCSANOW, &saved_tio);
	write_all(STDOUT_FILENO, term_restore, sizeof(term_restore) - 1);
	screen_up = 0;
}

/* Fatal signal in the child: note the plugin if one was in Decide, put
 * the terminal back, then die of the signal (SA_RESETHAND restored the
 * default action; SA_NODEFER lets raise() deliver it at once). */
static void
on_fatal(int sig)
{
	int saved = errno;
	const char *plugin = ms_plugin_in_decide();
	if (plugin && note_fd >= 0) {
		char line[160];
		size_t n = 0;
		put(line, sizeof(line), &n, "crash\t");
		put(line, sizeof(line), &n, plugin);
		put(line, sizeof(line), &n, "\t");
		put_uint(line, sizeof(line), &n, (unsigned)sig);
		put(line, sizeof(line), &n, "\n");
		write_all(note_fd, line, n);
	}
	restore_terminal();
	errno = saved;
	raise(sig);
}

/* exit() or quick_exit() in the child: if a plugin's Decide called it, say
 * so and end at once (the other threads are still running). */
static void
on_exit_hook(void)
{
	const char *plugin = ms_plugin_in_decide();
	if (!plugin)
		return;
	if (note_fd >= 0) {
		char line[160];
		size_t n = 0;
		put(line, sizeof(line), &n, "exit\t");
		put(line, sizeof(line), &n, plugin);
		put(line, sizeof(line), &n, "\n");
		write_all(note_fd, line, n);
	}
	restore_terminal();
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
ms__supervise_screen(bool up)
{
	screen_up = up;
	ms__supervise_note("screen", up ? "1" : "0");
}

static void
child_setup(int fd)
{
	note_fd = fd;
	have_tio = isatty(STDIN_FILENO) &&
	           tcgetattr(STDIN_FILENO, &saved_tio) == 0;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_fatal;
	sa.sa_flags = SA_RESETHAND | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(fatal_signals) / sizeof(*fatal_signals);
	     i++)
		sigaction(fatal_signals[i], &sa, NULL);
	atexit(on_exit_hook);
	at_quick_exit(on_exit_hook);
}

static void
forward(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	/* Sent by a process (kill, timeout...), not by the terminal to the
	 * whole group, which the child receives anyway. */
	if (child_pid > 0 && si && si->si_code <= 0)
		kill(child_pid, sig);
}

/* What the child noted. */
typedef struct notes {
	char db[4096];
	char scratch[4096];
	char plugin[64];
	int crash_sig;
	bool exited_in_decide;
	bool screen;
} notes;

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
	} else if (strcmp(line, "screen") == 0) {
		nt->screen = strcmp(tab, "1") == 0;
	} else if (strcmp(line, "crash") == 0 || strcmp(line, "exit") == 0) {
		bool crash = line[0] == 'c';
		char *sig = strchr(tab, '\t');
		if (sig)
			*sig++ = '\0';
		snprintf(nt->plugin, sizeof(nt->plugin), "%s", tab);
		if (crash)
			nt->crash_sig = sig ? atoi(sig) : 0;
		else
			nt->exited_in_decide = true;
	}
}

static void
read_notes(int fd, notes *nt)
{
	char buf[8192];
	size_t len = 0;
	for (;;) {
		ssize_t r = read(fd, buf + len, sizeof(buf) - 1 - len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
		char *start = buf, *nl;
		while ((nl = memchr(start, '\n',
		                    len - (size_t)(start - buf)))) {
			*nl = '\0';
			take_line(nt, start);
			start = nl + 1;
		}
		len -= (size_t)(start - buf);
		memmove(buf, start, len);
		if (len == sizeof(buf) - 1)
			len = 0; /* a line too long to be ours */
	}
}

/* The child is gone without ending normally: clean up after it. */
static int
postmortem(const notes *nt, int status, FILE *err)
{
	char reason[256];
	int code;
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);
		if (nt->crash_sig && nt->plugin[0])
			snprintf(reason, sizeof(reason),
			         "plugin %s crashed in Decide (%s)", nt->plugin,
			         signal_name(nt->crash_sig));
		else
			snprintf(reason, sizeof(reason),
			         "mergescope was killed by %s",
			         signal_name(sig));
		code = 128 + sig;
	} else {
		snprintf(reason, sizeof(reason),
		         "plugin %s called exit() in Decide", nt->plugin);
		code = MS_EXIT_ERROR;
	}
	if (nt->screen) {
		if (have_tio)
			tcsetattr(STDIN_FILENO, TCSANOW, &saved_tio);
		fputs(term_restore, stdout);
		fflush(stdout);
	}
	fprintf(err, "mergescope: aborted: %s\n", reason);
	ms_errbuf eb = { "" };
	if (nt->db[0] || nt->scratch[0]) {
		if (ms_replay_postmortem(nt->db, nt->scratch, reason, &eb))
			fprintf(err, "mergescope: %s\n", eb.msg);
		else if (nt->db[0])
			fprintf(err, "mergescope: recorded as aborted in %s\n",
			        nt->db);
	}
	fflush(err);
	return code;
}

int
ms_cli_main_supervised(int argc, char **argv, FILE *out, FILE *err)
{
	int fds[2];
	fflush(out);
	fflush(err);
	if (pipe(fds) < 0)
		return ms_cli_main(argc, argv, out, err);
	fcntl(fds[0], F_SETFD, FD_CLOEXEC);
	fcntl(fds[1], F_SETFD, FD_CLOEXEC);
	have_tio = isatty(STDIN_FILENO) &&
	           tcgetattr(STDIN_FILENO, &saved_tio) == 0;
	pid_t pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return ms_cli_main(argc, argv, out, err);
	}
	if (pid == 0) {
		close(fds[0]);
		child_setup(fds[1]);
		return ms_cli_main(argc, argv, out, err);
	}
	close(fds[1]);
	child_pid = pid;
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = forward;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGQUIT, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	notes *nt = calloc(1, sizeof(*nt));
	notes none;
	if (!nt) {
		memset(&none, 0, sizeof(none));
		nt = &none;
	}
	read_notes(fds[0], nt);
	close(fds[0]);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	int code;
	if (WIFEXITED(status) && !nt->exited_in_decide)
		code = WEXITSTATUS(status);
	else
		code = postmortem(nt, status, err);
	if (nt != &none)
		free(nt);
	return code;
}
