/*
 * cmd_bench.c - `mergescope bench`: a series of full headless replays, one
 * fresh process of this very binary per run (`run --headless`), the
 * variants alternating their order from one repetition to the next, each
 * run writing its own event database into one series directory. The
 * figures (replay/bench.c) go to standard output and to summary.txt,
 * summary.json and summary.html (box plots, replay/bench_html.c) in the
 * series directory.
 *
 * Signals: while the series runs, SIGINT, SIGTERM and SIGHUP (those not
 * ignored at start) are blocked and taken between runs with SIGCHLD by
 * sigwaitinfo: the first is passed on to every run in flight (a run stops
 * on it as it does from a terminal: recorded as aborted, its scratch shard
 * removed), no further run starts, and once those runs have ended the
 * command says how far the series got and exits 128 + the signal. Killed
 * from elsewhere than a terminal (`timeout`, a scheduler), only this
 * process gets the signal: without passing it on, its run went on alone.
 *
 * A run has ended when every process of it is gone: its watcher outlives
 * a run that was killed, to record the run's end in its database; the
 * series waits for it (the end of a pipe each run inherits) before it
 * starts another run in its place, reads the databases or exits.
 *
 * --emit parallel|slurm runs nothing: it prints the same runs as command
 * lines for GNU parallel or as a Slurm job-array script, so an existing
 * scheduler runs them; `bench --collect DIR` summarises the databases
 * afterwards.
 */
#include "ms_clock.h"
#include "cli.h"

#include "ms_bench.h"
#include "ms_replay.h"
#include "series.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_VARIANTS MS__SERIES_VARIANTS_MAX
#define MAX_REPS 1000
#define MAX_JOBS 64

static const char usage[] =
        "usage: mergescope bench --variants V1,V2[,...] [--reps N]\n"
        "                        | --variant V1 --variant V2 ...\n"
        "                        [--fixture DIR | --preset P]\n"
        "                        [--profile SPEC] [--cache warm|cold]\n"
        "                        [--envelope auto|cgroup|emulated]\n"
        "                        [--out DIR] [--jobs N]\n"
        "                        [--emit parallel|slurm]\n"
        "       mergescope bench --collect DIR\n"
        "\n"
        "Runs every variant N times, each run a fresh `mergescope run\n"
        "--headless` process with its own event database in one series\n"
        "directory, the variants in order on even repetitions and in\n"
        "reverse order on odd ones. Then prints per variant and phase\n"
        "(primary, cooldown) the median, p95, min, max and coefficient of\n"
        "variation of wall, CPU, allocated bytes, allocations, peak RSS,\n"
        "bytes read and written and write amplification, then of the run\n"
        "cgroup's peak memory (one figure for the whole run), with the\n"
        "delta of each median against the first variant. The same table\n"
        "goes to\n"
        "DIR/summary.txt, the figures to DIR/summary.json, box plots per\n"
        "metric to DIR/summary.html. A run that is\n"
        "not complete, fails a gate, or differs from the conditions most\n"
        "valid runs share "
        "in fixture, version, binary, commit, compiler, CPU, cache label,\n"
        "profile, limits, envelope, workers, serial, grace policy, host,\n"
        "kernel, work-dir file system or storage device is named and\n"
        "left out of every figure. SIGINT, SIGTERM or SIGHUP stops the\n"
        "series: the runs in flight get it, none starts after, and the\n"
        "exit status is 128 + the signal. Exit status 1 when a variant\n"
        "has no valid run, 2 when the series cannot be made or\n"
        "summarised, 64 for a usage error.\n"
        "\n"
        "  --variants LIST  comma-separated variants (disabled, alwayskeep,\n"
        "                   detdrop:PCT, skywalking), each once; the\n"
        "                   first is the base of the deltas\n"
        "  --variant V      one variant or chain spec (repeatable, in\n"
        "                   order, instead of --variants), e.g.\n"
        "                   --variant skywalking --variant\n"
        "                   'skywalking,detdrop:{\"percent\":35}'\n"
        "  --reps N         repetitions per variant (default 5)\n"
        "  --fixture DIR    replay this fixture directory\n"
        "  --preset P       without --fixture: the preset's cached fixture\n"
        "                   (default day-2x)\n"
        "  --profile SPEC   the limits of every run (`run --profile`):\n"
        "                   each run in its own cgroup holding them where\n"
        "                   a hierarchy is writable\n"
        "  --envelope E     with --profile: how every run holds it\n"
        "                   (`run --envelope`)\n"
        "  --jobs N         runs at a time on this machine (default 1: a\n"
        "                   comparison wants the machine to itself; not\n"
        "                   with --emit)\n"
        "  --cache warm|cold  the page cache each run starts from (see\n"
        "                   `run --help`); default uncontrolled\n"
        "  --out DIR        the series directory (new or empty; default\n"
        "                   $XDG_CACHE_HOME/mergescope/bench/<time>-<pid>)\n"
        "  --emit KIND      run nothing; print the runs for an existing\n"
        "                   scheduler: `parallel` one command line per run\n"
        "                   (for GNU parallel, e.g. `parallel -j1 <FILE`),\n"
        "                   `slurm` a job-array script for sbatch. Then\n"
        "                   `mergescope bench --collect DIR`\n"
        "  --collect DIR    summarise the databases of a series directory\n";

/* The option table is ms__bench_opts (cli_opts.c), shared with the
 * command-line fuzz harness. */
enum {
	O_VARIANTS = MS__BN_VARIANTS,
	O_REPS = MS__BN_REPS,
	O_FIXTURE = MS__BN_FIXTURE,
	O_PRESET = MS__BN_PRESET,
	O_PROFILE = MS__BN_PROFILE,
	O_CACHE = MS__BN_CACHE,
	O_OUT = MS__BN_OUT,
	O_EMIT = MS__BN_EMIT,
	O_COLLECT = MS__BN_COLLECT,
	O_ENVELOPE = MS__BN_ENVELOPE,
	O_JOBS = MS__BN_JOBS,
	O_VARIANT = MS__BN_VARIANT,
	O_COUNT = MS__BN_COUNT
};

typedef struct bench {
	char dir[PATH_MAX];     /* the series directory, absolute once made */
	char fixture[PATH_MAX]; /* --fixture, absolute; "" without */
	char exe[PATH_MAX];
	char *vbuf; /* --variants, split in place (NULL with --variant) */
	const char *variants[MAX_VARIANTS];
	size_t nv;
	unsigned reps;
	const ms__opt *o;
} bench;

static int
fail(FILE *err, int status, const char *fmt, const char *a, const char *b)
{
	fprintf(err, "mergescope bench: ");
	fprintf(err, fmt, a, b);
	fputc('\n', err);
	return status;
}

/* A whole number from 1 to max (ms__parse_count) into *out. */
static bool
parse_count(const char *v, unsigned long max, unsigned *out)
{
	unsigned long n;
	if (!ms__parse_count(v, 1, max, &n))
		return false;
	*out = (unsigned)n;
	return true;
}

/* The file name part of a variant: [A-Za-z0-9._-], others as '_'. */
static void
file_part(char *buf, size_t n, const char *v)
{
	size_t i = 0;
	for (; v[i] && i + 1 < n; i++) {
		char c = v[i];
		bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		          (c >= '0' && c <= '9') || c == '.' || c == '-';
		buf[i] = ok ? c : '_';
	}
	buf[i] = '\0';
}

static void
db_path(const bench *b, unsigned rep, unsigned vi, const char *ext, char *buf,
        size_t n)
{
	char fp[64];
	file_part(fp, sizeof(fp), b->variants[vi]);
	snprintf(buf, n, "%s/rep%03u-v%u-%s.%s", b->dir, rep, vi, fp, ext);
}

/* The variant index run at position k of repetition rep. */
static unsigned
order(const bench *b, unsigned rep, size_t k)
{
	return (unsigned)(rep % 2 ? b->nv - 1 - k : k);
}

/* The argument vector of one run (static storage in args). */
static size_t
run_argv(const bench *b, unsigned rep, unsigned vi, char *dbbuf, size_t dbn,
         const char **argv)
{
	size_t n = 0;
	db_path(b, rep, vi, "db", dbbuf, dbn);
	argv[n++] = b->exe;
	argv[n++] = "run";
	argv[n++] = "--headless";
	argv[n++] = "--variant";
	argv[n++] = b->variants[vi];
	argv[n++] = "--db";
	argv[n++] = dbbuf;
	if (b->fixture[0]) {
		argv[n++] = "--fixture";
		argv[n++] = b->fixture;
	} else if (b->o[O_PRESET].count) {
		argv[n++] = "--preset";
		argv[n++] = b->o[O_PRESET].value;
	}
	if (b->o[O_PROFILE].count) {
		argv[n++] = "--profile";
		argv[n++] = b->o[O_PROFILE].value;
	}
	if (b->o[O_CACHE].count) {
		argv[n++] = "--cache";
		argv[n++] = b->o[O_CACHE].value;
	}
	if (b->o[O_ENVELOPE].count) {
		argv[n++] = "--envelope";
		argv[n++] = b->o[O_ENVELOPE].value;
	}
	argv[n] = NULL;
	return n;
}

/* One run as a shell command line, its output to the run's .log. */
static void
print_cmd(FILE *f, const bench *b, unsigned rep, unsigned vi)
{
	char db[PATH_MAX + 64], log[PATH_MAX + 64];
	const char *argv[16];
	size_t n = run_argv(b, rep, vi, db, sizeof(db), argv);
	db_path(b, rep, vi, "log", log, sizeof(log));
	for (size_t i = 0; i < n; i++) {
		if (i)
			fputc(' ', f);
		ms__shell_word(f, argv[i], true);
	}
	fputs(" >", f);
	ms__shell_word(f, log, true);
	fputs(" 2>&1", f);
}

/* The --output value of an #SBATCH line: sbatch splits such a line at
 * white space and ends it at a '#' unless quoted, takes a backslash as
 * an escape, and reads '%' in the name as a pattern ("%%" is one '%'). A
 * series directory with a space or a '#' in its name was cut short. */
static void
sbatch_output(FILE *out, const char *dir)
{
	fputc('"', out);
	for (const char *p = dir; *p; p++) {
		if (*p == '"' || *p == '\\')
			fputc('\\', out);
		if (*p == '%')
			fputc('%', out);
		fputc(*p, out);
	}
	fputs("/slurm-%A_%a.out\"", out);
}

static int
emit(FILE *out, const bench *b, const char *kind)
{
	size_t total = b->reps * b->nv;
	if (strcmp(kind, "slurm") == 0) {
		fprintf(out,
		        "#!/bin/bash\n"
		        "# mergescope bench series: %zu runs, one per array "
		        "task.\n"
		        "# Submit with: sbatch FILE; then: mergescope bench "
		        "--collect ",
		        total);
		ms__shell_word(out, b->dir, true);
		fprintf(out,
		        "\n#SBATCH --job-name=mergescope-bench\n"
		        "#SBATCH --array=0-%zu\n"
		        "#SBATCH --ntasks=1\n"
		        "#SBATCH --output=",
		        total - 1);
		sbatch_output(out, b->dir);
		fputs("\nset -eu\nJOBS=(\n", out);
	}
	for (unsigned r = 0; r < b->reps; r++)
		for (size_t k = 0; k < b->nv; k++) {
			if (strcmp(kind, "slurm") == 0) {
				/* Each element one shell word: the command
				 * line, evaluated by the task. */
				char *line = NULL;
				size_t len = 0;
				FILE *m = open_memstream(&line, &len);
				if (!m)
					return MS_EXIT_ERROR;
				print_cmd(m, b, r, order(b, r, k));
				fclose(m);
				fputs("  ", out);
				ms__shell_word(out, line, true);
				fputc('\n', out);
				free(line);
			} else {
				print_cmd(out, b, r, order(b, r, k));
				fputc('\n', out);
			}
		}
	if (strcmp(kind, "slurm") == 0)
		fprintf(out, ")\neval \"${JOBS[$SLURM_ARRAY_TASK_ID]}\"\n");
	return 0;
}

/* The signal mask the series started with, which each run gets back. */
static sigset_t run_mask;

/* Start one replay in a fresh process: its pid, or -1 if it could not
 * start. *hold is the read end of a pipe whose write end the run keeps
 * open across exec, and so does every process it starts (its watcher):
 * the end of file there says that all of them are gone (-1 without). */
static pid_t
start_one(const bench *b, unsigned rep, unsigned vi, int *hold, FILE *err)
{
	char db[PATH_MAX + 64], log[PATH_MAX + 64];
	const char *argv[16];
	run_argv(b, rep, vi, db, sizeof(db), argv);
	db_path(b, rep, vi, "log", log, sizeof(log));
	int hp[2] = { -1, -1 };
	if (pipe(hp) < 0)
		hp[0] = hp[1] = -1;
	for (int k = 0; k < 2 && hp[k] >= 0; k++)
		fcntl(hp[k], F_SETFD, FD_CLOEXEC);
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(err, "mergescope bench: fork: %s\n", strerror(errno));
		if (hp[0] >= 0) {
			close(hp[0]);
			close(hp[1]);
		}
		return -1;
	}
	if (pid == 0) {
		if (hp[1] >= 0)
			fcntl(hp[1], F_SETFD, 0);
		sigprocmask(SIG_SETMASK, &run_mask, NULL);
		int fd = open(log, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
		              0644);
		if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			_exit(127);
		execv(b->exe, (char *const *)argv);
		dprintf(2, "mergescope bench: exec %s: %s\n", b->exe,
		        strerror(errno));
		_exit(127);
	}
	if (hp[1] >= 0)
		close(hp[1]);
	*hold = hp[0];
	return pid;
}

/* One run in flight under --jobs. */
typedef struct slot {
	pid_t pid; /* 0 = free */
	unsigned rep, vi;
	int64_t t0;
	int hold; /* start_one's *hold; -1 = none */
} slot;

/* The series' signals: stops (SIGINT, SIGTERM, SIGHUP not ignored at
 * start) and SIGCHLD, all blocked while it runs. */
typedef struct series_sig {
	sigset_t wait; /* stops + SIGCHLD */
	int stop;      /* the first stop taken; 0 = none */
} series_sig;

/* A stop signal: remembered, said once, and passed on to every run in
 * flight; no run starts after it. */
static void
stop_series(series_sig *sg, int sig, slot *slots, unsigned nslots, FILE *err)
{
	sg->stop = sig;
	fprintf(err,
	        "mergescope bench: %s: stopping the runs in flight; no "
	        "further run starts\n",
	        ms__signal_name(sig));
	for (unsigned i = 0; i < nslots; i++)
		if (slots[i].pid > 0)
			kill(slots[i].pid, sig);
}

/* The slot of the run pid, or nslots when pid is no run of the series
 * (a child this process had before it became `bench`, such as a
 * background job of the shell that exec'd it). */
static unsigned
slot_of(const slot *slots, unsigned nslots, pid_t pid)
{
	unsigned i = 0;
	while (i < nslots && slots[i].pid != pid)
		i++;
	return i;
}

/* The processes of run i, which has ended, gone: its watcher outlives a
 * run that was killed, to record its end, fold its log into its database
 * and remove its scratch shard; the series must not read the database,
 * summarise or exit before (at most 30 s). A stop signal taken meanwhile
 * is passed on to the runs in flight. */
static void
wait_run_gone(const bench *b, slot *slots, unsigned nslots, unsigned i,
              series_sig *sg, FILE *err)
{
	sigset_t stops = sg->wait;
	sigdelset(&stops, SIGCHLD);
	bool gone = slots[i].hold < 0;
	for (int k = 0; k < 300 && !gone; k++) {
		struct pollfd pf = { slots[i].hold, POLLIN, 0 };
		int r = poll(&pf, 1, 100);
		char c;
		gone = (r < 0 && errno != EINTR) ||
		       (r > 0 && read(slots[i].hold, &c, 1) <= 0);
		struct timespec now = { 0, 0 };
		int sig = sigtimedwait(&stops, NULL, &now);
		if (sig > 0 && !sg->stop)
			stop_series(sg, sig, slots, nslots, err);
	}
	if (!gone)
		fprintf(err,
		        "mergescope bench: rep %u/%u %s: a process it started "
		        "(its watcher, a plugin host) still runs 30 s after "
		        "it ended; going on\n",
		        slots[i].rep + 1, b->reps, b->variants[slots[i].vi]);
	if (slots[i].hold >= 0)
		close(slots[i].hold);
	slots[i].hold = -1;
}

/* Wait for any started run, report it, wait for the processes it started
 * (wait_run_gone) and free its slot. A stop signal taken meanwhile is
 * passed on to every run in flight (once). Other children are reaped and
 * otherwise ignored: their end is not a run's. */
static void
reap_one(const bench *b, slot *slots, unsigned nslots, series_sig *sg,
         FILE *err)
{
	int st = 0;
	pid_t pid;
	unsigned i = nslots;
	while (i == nslots) {
		pid = waitpid(-1, &st, WNOHANG);
		if (pid > 0) {
			i = slot_of(slots, nslots, pid);
			continue;
		}
		if (pid < 0 && errno != EINTR)
			return;
		if (pid < 0)
			continue;
		int sig = sigwaitinfo(&sg->wait, NULL);
		if (sig <= 0 || sig == SIGCHLD || sg->stop)
			continue;
		stop_series(sg, sig, slots, nslots, err);
	}
	int code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	fprintf(err, "  rep %u/%u %-14s exit %d  %.1f s\n", slots[i].rep + 1,
	        b->reps, b->variants[slots[i].vi], code,
	        (double)(ms_mono_ns() - slots[i].t0) / 1e9);
	slots[i].pid = 0; /* reaped: no signal goes to its pid now */
	wait_run_gone(b, slots, nslots, i, sg, err);
}

/*
 * Every run of the series, at most jobs at a time, in series order (the
 * variants alternating per repetition). With jobs > 1 runs share the
 * machine: a series for comparison wants jobs 1 unless each run has its
 * own CPUs (a cgroup envelope or separate hosts).
 */
static unsigned
run_series(const bench *b, unsigned jobs, series_sig *sg, FILE *err)
{
	slot slots[MAX_JOBS] = { { 0 } };
	unsigned busy = 0, started = 0;
	for (unsigned r = 0; r < b->reps && !sg->stop; r++)
		for (size_t k = 0; k < b->nv && !sg->stop; k++) {
			if (busy == jobs) {
				reap_one(b, slots, jobs, sg, err);
				busy--;
			}
			if (sg->stop)
				break;
			/* A stop that came while a run was starting. */
			struct timespec now = { 0, 0 };
			sigset_t stops = sg->wait;
			sigdelset(&stops, SIGCHLD);
			int sig = sigtimedwait(&stops, NULL, &now);
			if (sig > 0) {
				stop_series(sg, sig, slots, jobs, err);
				break;
			}
			started++;
			unsigned i = 0;
			while (slots[i].pid)
				i++;
			unsigned vi = order(b, r, k);
			slots[i] = (slot){ .rep = r,
				           .vi = vi,
				           .t0 = ms_mono_ns(),
				           .hold = -1 };
			pid_t pid = start_one(b, r, vi, &slots[i].hold, err);
			if (pid > 0) {
				slots[i].pid = pid;
				busy++;
			} else {
				fprintf(err,
				        "  rep %u/%u %-14s did not start\n",
				        r + 1, b->reps, b->variants[vi]);
			}
		}
	while (busy) {
		reap_one(b, slots, jobs, sg, err);
		busy--;
	}
	return started;
}

/* Block the series' signals (see the file comment) into sg; the mask
 * before goes to run_mask. */
static void
series_signals(series_sig *sg)
{
	static const int stops[] = { SIGINT, SIGTERM, SIGHUP };
	sigemptyset(&sg->wait);
	sg->stop = 0;
	for (size_t i = 0; i < sizeof(stops) / sizeof(*stops); i++) {
		struct sigaction sa;
		if (sigaction(stops[i], NULL, &sa) == 0 &&
		    sa.sa_handler == SIG_IGN)
			continue;
		sigaddset(&sg->wait, stops[i]);
	}
	sigaddset(&sg->wait, SIGCHLD);
	sigprocmask(SIG_BLOCK, &sg->wait, &run_mask);
}

/* Make dir (and its parents); it must end up an empty directory. */
static int
series_dir(const char *dir, FILE *err)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s", dir);
	struct stat st;
	if (stat(p, &st) == 0 && !S_ISDIR(st.st_mode))
		return fail(err, MS_EXIT_ERROR,
		            "--out %s: not a directory (a series directory "
		            "must be new or empty)%s",
		            p, "");
	ms_errbuf eb;
	if (ms_fs_mkdir_p(p, 0755, &eb) != 0)
		return fail(err, MS_EXIT_ERROR, "--out %s%s", eb.msg, "");
	DIR *d = opendir(p);
	if (!d)
		return fail(err, MS_EXIT_ERROR, "--out %s: %s", p,
		            strerror(errno));
	struct dirent *e;
	bool empty = true;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			empty = false;
	closedir(d);
	/* What a named path turns out to be is the work's error (exit 2),
	 * as in every command: export --out DIR, run --db DIR. */
	if (!empty)
		return fail(err, MS_EXIT_ERROR,
		            "--out %s: not empty (a series directory must be "
		            "new or empty)%s",
		            p, "");
	return 0;
}

/* Write the summary of s as DIR/name through fn, the file replaced
 * whole (a temporary beside it, renamed). */
typedef int (*write_fn)(const ms__series *s, const char *dir, FILE *f,
                        ms_errbuf *eb);

static int
put_text_json(const ms__series *s, const char *dir, FILE *f, ms_errbuf *eb,
              bool json)
{
	(void)dir;
	return ms_bench_summary(s->runs, s->n, s->labels, s->nv,
	                        json ? NULL : f, json ? f : NULL, eb);
}

static int
put_text(const ms__series *s, const char *dir, FILE *f, ms_errbuf *eb)
{
	return put_text_json(s, dir, f, eb, false);
}

static int
put_json(const ms__series *s, const char *dir, FILE *f, ms_errbuf *eb)
{
	return put_text_json(s, dir, f, eb, true);
}

static int
put_html(const ms__series *s, const char *dir, FILE *f, ms_errbuf *eb)
{
	return ms_bench_html(s->runs, s->n, s->labels, s->nv, dir, f, eb);
}

static int
write_summary(const ms__series *s, const char *dir, const char *name,
              write_fn fn, ms_errbuf *eb)
{
	char p[PATH_MAX + 32];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	ms_outfile *o = NULL;
	int rc = ms_outfile_open(&o, p, true, eb);
	if (rc == 0)
		rc = fn(s, dir, ms_outfile_stream(o), eb);
	if (rc == 0)
		return ms_outfile_commit(o, eb);
	return ms_outfile_fail(o, rc, eb);
}

/* Load and summarise the series in dir: the table on out, summary.txt,
 * summary.json and summary.html in dir. labels may be NULL: then the
 * variants are named by the runs' records. */
static int
collect(const char *dir, const char *const *labels, size_t nv, FILE *out,
        FILE *err)
{
	ms__series s;
	const char *dirs[1] = { dir };
	int rc = ms__series_load(&s, dirs, 1, labels, nv, "bench", err);
	ms_errbuf eb = { "" };
	if (rc == 0) {
		rc = ms_bench_summary(s.runs, s.n, s.labels, s.nv, out, NULL,
		                      &eb);
		if (rc == 0)
			rc = write_summary(&s, dir, "summary.txt", put_text,
			                   &eb);
		if (rc == 0)
			rc = write_summary(&s, dir, "summary.json", put_json,
			                   &eb);
		if (rc == 0)
			rc = write_summary(&s, dir, "summary.html", put_html,
			                   &eb);
		if (rc == 0)
			fprintf(out,
			        "\nseries %s: summary.txt, summary.json, "
			        "summary.html\n",
			        dir);
		else
			rc = fail(err, MS_EXIT_ERROR, "%s%s",
			          eb.msg[0] ? eb.msg : ms_strerror(rc), "");
		if (rc == 0)
			rc = ms__series_check_variants(&s, "bench", err);
	}
	ms__series_free(&s);
	return rc;
}

static int
default_dir(char *buf, size_t n, FILE *err)
{
	char root[PATH_MAX];
	if (ms__cache_root(root, sizeof(root)) != 0)
		return fail(err, MS_EXIT_ERROR, "%s%s",
		            "no cache directory (set XDG_CACHE_HOME or HOME) "
		            "for the series; give --out DIR",
		            "");
	time_t t = time(NULL);
	struct tm tm;
	char stamp[32];
	localtime_r(&t, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%d-%H%M%S", &tm);
	snprintf(buf, n, "%s/bench/%s-%ld", root, stamp, (long)getpid());
	return 0;
}

/* The longest path of a run's event database in the series directory
 * into buf (the runs' logs and the summaries are shorter). */
static void
longest_db(const bench *b, char *buf, size_t n)
{
	buf[0] = '\0';
	for (unsigned vi = 0; vi < b->nv; vi++) {
		char p[PATH_MAX + 64];
		db_path(b, b->reps - 1, vi, "db", p, sizeof(p));
		if (strlen(p) > strlen(buf))
			snprintf(buf, n, "%s", p);
	}
}

/* The series directory into b->dir: --out DIR (o, or NULL for the
 * default), refused before any work when it is longer than b->dir (it
 * was cut short unsaid) or when a run's event database in it would be
 * longer than SQLite opens (every run failed on it, one after another,
 * and the series had no figures). */
static int
series_path(bench *b, const char *o, FILE *err)
{
	if (!o)
		return default_dir(b->dir, sizeof(b->dir), err);
	size_t len = strlen(o);
	if (len >= sizeof(b->dir)) {
		fprintf(err,
		        "mergescope bench: --out: the path is %zu bytes; at "
		        "most %zu are accepted\n",
		        len, sizeof(b->dir) - 1);
		return MS_EXIT_USAGE;
	}
	if (!realpath(o, b->dir))
		snprintf(b->dir, sizeof(b->dir), "%s", o);
	char db[PATH_MAX + 64];
	size_t n = 0, most = 0;
	longest_db(b, db, sizeof(db));
	if (ms_evdb_path_fits(db, &n, &most))
		return 0;
	fprintf(err,
	        "mergescope bench: --out %s: a run's event database there "
	        "(%s) would be a path of %zu bytes; SQLite opens one of at "
	        "most %zu (with -journal added, its limit)\n",
	        o, strrchr(db, '/') + 1, n, most);
	return MS_EXIT_USAGE;
}

static int
parse_variants(bench *b, const char *list, FILE *err)
{
	b->vbuf = strdup(list);
	if (!b->vbuf) {
		char n[32];
		snprintf(n, sizeof(n), "%zu", strlen(list) + 1);
		return fail(err, MS_EXIT_ERROR,
		            "--variants: out of memory for their list (%s "
		            "bytes)%s",
		            n, "");
	}
	/* Split at every comma: an empty item ("a,,b", a comma at either
	 * end) is a mistake to name, not a separator to pass over. */
	char *t = b->vbuf;
	for (unsigned item = 1; *list; item++) {
		char *comma = strchr(t, ',');
		if (comma)
			*comma = '\0';
		if (!*t) {
			char n[16];
			snprintf(n, sizeof(n), "%u", item);
			return fail(err, MS_EXIT_USAGE,
			            "--variants \"%s\": item %s is empty; "
			            "expected a comma-separated list of "
			            "variants",
			            list, n);
		}
		if (b->nv == MAX_VARIANTS)
			return fail(err, MS_EXIT_USAGE,
			            "--variants %s: at most 8 variants%s", list,
			            "");
		b->variants[b->nv++] = t;
		if (!comma)
			break;
		t = comma + 1;
	}
	if (b->nv == 0)
		return fail(err, MS_EXIT_USAGE,
		            "--variants \"%s\": expected a comma-separated "
		            "list of variants%s",
		            list, "");
	return 0;
}

/* Each variant once: a series tells its variants apart by their names
 * (`--collect` numbers them by name), so one given twice would be two
 * variants in the series' own summary and one in every later one. */
static int
check_distinct(const bench *b, FILE *err)
{
	bool listed = b->o[O_VARIANTS].count > 0;
	for (size_t i = 0; i < b->nv; i++)
		for (size_t j = i + 1; j < b->nv; j++)
			if (strcmp(b->variants[i], b->variants[j]) == 0)
				return fail(
				        err, MS_EXIT_USAGE,
				        "%s \"%s\" is given twice; expected "
				        "each variant once (--reps N repeats "
				        "every variant)",
				        listed ? "--variants: variant"
				               : "--variant",
				        b->variants[i]);
	return 0;
}

/* Each variant's run checked as `run` checks it (--envelope only with
 * --profile, fixture, preset, profile, the variant with its plugins, a
 * --fixture as the replay's open checks it) before anything is made: a mistake
 * is one line, not a series of runs that cannot start. */
static int
check_runs(const bench *b, FILE *err)
{
	int rc = ms__envelope_check("bench", b->o[O_ENVELOPE].value,
	                            b->o[O_PROFILE].value, err);
	if (rc == 0)
		rc = check_distinct(b, err);
	if (rc)
		return rc;
	ms__run_cfg *cfg = malloc(sizeof(*cfg));
	if (!cfg) {
		char n[32];
		snprintf(n, sizeof(n), "%zu", sizeof(*cfg));
		return fail(err, MS_EXIT_ERROR,
		            "out of memory for a run's configuration (%s "
		            "bytes)%s",
		            n, "");
	}
	for (size_t vi = 0; rc == 0 && vi < b->nv; vi++) {
		ms__run_args a = {
			.cmd = "bench",
			.fixture = b->o[O_FIXTURE].value,
			.preset = b->o[O_PRESET].value,
			.variant = b->variants[vi],
			.variant_opt = b->o[O_VARIANTS].count ? "--variants"
			                                      : "--variant",
			.profile = b->o[O_PROFILE].value,
		};
		rc = ms__run_check(&a, cfg, err);
	}
	free(cfg);
	/* Then the fixture as each run's open checks it (hashes, parts),
	 * once: a damaged one is named here, not in every run's log. */
	ms_errbuf eb = { "" };
	const char *fx = b->o[O_FIXTURE].value;
	if (rc == 0 && fx && (rc = ms_replay_check_fixture(fx, &eb)))
		rc = ms__say_fixture_error(err, "bench", fx, rc, &eb);
	return rc;
}

/* "mergescope bench --collect DIR" with DIR a shell word, so the line
 * can be pasted whatever the directory's name holds. */
static void
say_collect(FILE *err, const char *dir)
{
	fputs("mergescope bench --collect ", err);
	ms__shell_word(err, dir, false);
}

/* --emit: the runs to out, then what to do after them to err. */
static int
emit_listed(FILE *out, FILE *err, const bench *b, const char *kind)
{
	int rc = emit(out, b, kind);
	unsigned listed = b->reps * (unsigned)b->nv;
	fprintf(err,
	        "mergescope bench: %u run%s listed; nothing was run. "
	        "Afterwards: ",
	        listed, listed == 1 ? "" : "s");
	say_collect(err, b->dir);
	fputc('\n', err);
	return rc;
}

/* `bench --collect DIR`, which takes no other option. */
static int
collect_only(const ms__opt *o, FILE *out, FILE *err)
{
	bool other = false;
	for (size_t k = 0; k < O_COUNT; k++)
		other |= k != O_COLLECT && o[k].count > 0;
	if (other)
		return fail(err, MS_EXIT_USAGE, "%s%s",
		            "--collect summarises a series directory; it "
		            "takes no other option",
		            "");
	return collect(o[O_COLLECT].value, NULL, 0, out, err);
}

static int
bench_main(const ms__cmd_args *args, FILE *out, FILE *err)
{
	const ms__opt *o = args->o;
	int rc;
	if (o[O_COLLECT].count)
		return collect_only(o, out, err);
	/* The values first: a bad one is named even when a required
	 * option is missing too. */
	bench b = { .reps = 5, .o = o };
	unsigned jobs = 1;
	if (o[O_REPS].count && !parse_count(o[O_REPS].value, MAX_REPS, &b.reps))
		return fail(err, MS_EXIT_USAGE,
		            "--reps \"%s\": expected a whole number from 1 to "
		            "1000%s",
		            o[O_REPS].value, "");
	if (o[O_JOBS].count && !parse_count(o[O_JOBS].value, MAX_JOBS, &jobs))
		return fail(err, MS_EXIT_USAGE,
		            "--jobs \"%s\": expected a whole number from 1 to "
		            "64%s",
		            o[O_JOBS].value, "");
	const char *kind = o[O_EMIT].value; /* one of its choices */
	/* Nothing runs here with --emit: --jobs would be dropped unsaid. */
	if (kind && o[O_JOBS].count)
		return fail(err, MS_EXIT_USAGE, "%s%s",
		            "--jobs sets how many runs go at a time on this "
		            "machine; with --emit nothing runs here, and the "
		            "scheduler sets it (e.g. parallel -jN)",
		            "");
	if (!o[O_VARIANTS].count && !o[O_VARIANT].count)
		return fail(err, MS_EXIT_USAGE, "%s%s",
		            "option --variants LIST or --variant V is required "
		            "(or --collect DIR)",
		            "");
	if (o[O_VARIANTS].count && o[O_VARIANT].count)
		return fail(err, MS_EXIT_USAGE, "%s%s",
		            "--variants and --variant exclude each other: give "
		            "the list, or each variant with --variant",
		            "");
	if (o[O_FIXTURE].count && o[O_PRESET].count)
		return fail(err, MS_EXIT_USAGE, "%s%s",
		            "--fixture and --preset exclude each other", "");
	if (o[O_VARIANTS].count) {
		rc = parse_variants(&b, o[O_VARIANTS].value, err);
	} else {
		b.nv = ms__cmd_values(args, O_VARIANT, b.variants,
		                      MAX_VARIANTS);
		rc = b.nv > MAX_VARIANTS
		             ? fail(err, MS_EXIT_USAGE,
		                    "%s: at most 8 variants%s", "--variant", "")
		             : 0;
	}
	ssize_t el =
	        rc ? 0 : readlink("/proc/self/exe", b.exe, sizeof(b.exe) - 1);
	if (rc == 0 && el <= 0)
		rc = fail(err, MS_EXIT_ERROR, "/proc/self/exe: %s%s",
		          strerror(errno), "");
	else if (rc == 0)
		b.exe[el] = '\0';
	if (rc == 0)
		rc = series_path(&b, o[O_OUT].value, err);
	if (rc == 0)
		rc = check_runs(&b, err);
	if (rc == 0)
		ms__profile_note("bench", o[O_PROFILE].value, err);
	/* The runs made here share this process's scratch directory. */
	if (rc == 0 && !kind)
		rc = ms__scratch_check(err, "bench");
	if (rc == 0)
		rc = series_dir(b.dir, err);
	/* The runs get absolute paths: an emitted command runs wherever a
	 * scheduler starts it (GNU parallel's remote hosts start in the
	 * home directory). */
	char real[PATH_MAX];
	if (rc == 0 && realpath(b.dir, real))
		snprintf(b.dir, sizeof(b.dir), "%s", real);
	if (rc == 0 && o[O_FIXTURE].count &&
	    !realpath(o[O_FIXTURE].value, b.fixture))
		snprintf(b.fixture, sizeof(b.fixture), "%s",
		         o[O_FIXTURE].value);
	if (rc == 0 && kind) {
		rc = emit_listed(out, err, &b, kind);
	} else if (rc == 0) {
		fprintf(err,
		        "mergescope bench: %u x %zu runs into %s, %u at a "
		        "time\n",
		        b.reps, b.nv, b.dir, jobs);
		series_sig sg;
		series_signals(&sg);
		unsigned started = run_series(&b, jobs, &sg, err);
		/* Take what is pending before the mask goes back. */
		struct timespec now = { 0, 0 };
		while (sigtimedwait(&sg.wait, NULL, &now) > 0)
			;
		sigprocmask(SIG_SETMASK, &run_mask, NULL);
		if (sg.stop) {
			fprintf(err,
			        "mergescope bench: stopped by %s after %u of "
			        "%u runs started; the series in %s is "
			        "incomplete (`",
			        ms__signal_name(sg.stop), started,
			        b.reps * (unsigned)b.nv, b.dir);
			say_collect(err, b.dir);
			fputs("` summarises the runs that finished)\n", err);
			rc = 128 + sg.stop;
		} else {
			rc = collect(b.dir, b.variants, b.nv, out, err);
		}
	}
	free(b.vbuf);
	return rc;
}

const ms_cmd ms_cmd_bench = {
	.name = "bench",
	.summary = "repeat full replays per variant, alternating; medians",
	.usage = usage,
	.opts = ms__bench_opts,
	.nopts = MS__BN_COUNT,
	.exec = bench_main,
};
