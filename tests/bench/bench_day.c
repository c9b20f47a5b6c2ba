/*
 * bench_day.c - whole days end to end: `mergescope run --headless` over
 * fixture days of growing size, on each of several work directories (a
 * tmpfs and a disk), in fresh processes, alternating, and what each run
 * cost: wall, CPU, resident memory split by kind, fsyncs, opens per
 * publication, and how each figure grows from one day to the next.
 *
 * Run: build/tests/bench_day --bin [NAME=]build/tui/mergescope
 *        [--bin NAME=OTHER ...]
 *        --fixture day-1x=DIR --fixture day-2x=DIR [--fixture day-4x=DIR]
 *        --work tmpfs=/dev/shm/X --work disk=/work/X [--reps N] [--strace]
 *
 * Several --bin (a build before and after a change, say) run side by side:
 * each repetition runs every binary on every case, the order of days, work
 * directories and binaries flipping from one repetition to the next, so
 * that the machine's drift falls on all alike.
 *
 * Each run gets a new work directory (DIR/run-N, deleted by the run) and a
 * new event database beside it. While the child runs, /proc/PID/status is
 * read every 5 ms for RssAnon, RssFile and RssShmem; their peaks are
 * printed with the child's CPU from wait4() and its own peak RSS. The
 * run's JSON report gives the fsyncs it counted and, where the run reports
 * them, its staging time and per-phase RSS split. With --strace one more
 * run per case goes under `strace -f -c` to count the opens and syncs the
 * kernel saw (strace slows the run, so its wall is not used). Medians of
 * the repetitions; asserts nothing.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_args.h"
#include "bench_stats.h"

#define MAX_CASES 8
#define USAGE                                                                  \
	"bench_day --bin [NAME=]MERGESCOPE... --fixture NAME=DIR... "          \
	"--work NAME=DIR... [--reps N] [--strace]"
#define MAX_REPS 15

struct named {
	const char *name, *dir;
};

struct sample {
	double wall, cpu;
	double anon, file, shmem, maxrss; /* MiB, peaks */
	double minflt;                    /* thousands of minor faults */
	double fsyncs, pubs, staging_s, primary_s, cooldown_s;
	double rep_anon, rep_file, rep_shmem; /* the run's own, MiB */
	double rep_anon_before; /* before the primary phase; -1: none */
	double merged_mib; /* the merges' input bytes, core and index */
};

struct traced {
	double opens, fsyncs, fdatasyncs, syncfs, pubs;
	bool ok;
};

static double
now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *
fs_type(const char *dir)
{
	struct statfs sf;
	if (statfs(dir, &sf) != 0)
		return "?";
	switch ((unsigned long)sf.f_type) {
	case 0x01021994ul:
		return "tmpfs";
	case 0xEF53ul:
		return "ext4";
	case 0x9123683Eul:
		return "btrfs";
	case 0x58465342ul:
		return "xfs";
	case 0x794c7630ul:
		return "overlayfs";
	default:
		return "other";
	}
}

/* Read RssAnon/RssFile/RssShmem (kB) of pid; false when gone. */
static bool
read_rss(pid_t pid, double *anon, double *file, double *shmem)
{
	char path[64], line[256];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	bool any = false;
	while (fgets(line, sizeof(line), f)) {
		unsigned long kb;
		if (sscanf(line, "RssAnon: %lu", &kb) == 1)
			*anon = (double)kb / 1024, any = true;
		else if (sscanf(line, "RssFile: %lu", &kb) == 1)
			*file = (double)kb / 1024;
		else if (sscanf(line, "RssShmem: %lu", &kb) == 1)
			*shmem = (double)kb / 1024;
	}
	fclose(f);
	return any;
}

static char *
slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	size_t cap = 1 << 16, n = 0;
	char *b = malloc(cap);
	size_t k;
	while (b && (k = fread(b + n, 1, cap - n - 1, f)) > 0) {
		n += k;
		if (n + 1 == cap) {
			char *nb = realloc(b, cap *= 2);
			if (!nb) {
				free(b);
				b = NULL;
				break;
			}
			b = nb;
		}
	}
	fclose(f);
	if (b)
		b[n] = '\0';
	return b;
}

/* The number after "key": at or after `from`, or -1. */
static double
json_num(const char *from, const char *key, const char **at)
{
	char k[64];
	snprintf(k, sizeof(k), "\"%s\":", key);
	const char *p = from ? strstr(from, k) : NULL;
	if (!p)
		return -1;
	if (at)
		*at = p + strlen(k);
	return strtod(p + strlen(k), NULL);
}

static void
parse_report(const char *json, struct sample *s)
{
	s->rep_anon_before = -1;
	char *j = slurp(json);
	if (!j)
		return;
	s->pubs = json_num(j, "publications", NULL);
	const char *ph = strstr(j, "\"phases\"");
	const char *at = NULL;
	double a = json_num(ph, "fsyncs", &at);
	double b = json_num(at, "fsyncs", NULL);
	s->fsyncs = (a < 0 ? 0 : a) + (b < 0 ? 0 : b);
	const char *at_w = NULL;
	double w = json_num(ph, "wall_ns", &at_w);
	s->primary_s = w < 0 ? 0 : w / 1e9;
	double cw = json_num(at_w, "wall_ns", NULL);
	s->cooldown_s = cw < 0 ? 0 : cw / 1e9;
	/* What the picker made the merges read in both phases: the
	 * day's work, whatever the disk. */
	const char *mk[2] = { "core_input_bytes", "index_input_bytes" };
	s->merged_mib = 0;
	for (int i = 0; i < 2; i++) {
		const char *at_m = NULL;
		double x = json_num(ph, mk[i], &at_m);
		double y = json_num(at_m, mk[i], NULL);
		s->merged_mib +=
		        ((x < 0 ? 0 : x) + (y < 0 ? 0 : y)) / (1024.0 * 1024.0);
	}
	double st = json_num(j, "staging_ns", NULL);
	s->staging_s = st < 0 ? -1 : st / 1e9;
	/* The run's own split: the larger of the two phases' peaks. */
	const double mib = 1024.0 * 1024.0;
	const char *keys[3] = { "rss_anon_peak", "rss_file_peak",
		                "rss_shmem_peak" };
	double *dst[3] = { &s->rep_anon, &s->rep_file, &s->rep_shmem };
	for (int i = 0; i < 3; i++) {
		const char *at2 = NULL;
		double x = json_num(ph, keys[i], &at2);
		double y = json_num(at2, keys[i], NULL);
		*dst[i] = x < 0 ? -1 : (x > y ? x : y) / mib;
	}
	/* The phases' staging row (after cooldown, which the searches
	 * above reach first); builds before it have none. */
	const char *sg = ph ? strstr(ph, "\"staging\":{") : NULL;
	double sa = json_num(sg, "rss_anon_peak", NULL);
	s->rep_anon_before = sa < 0 ? -1 : sa / mib;
	free(j);
}

static int
rm_rf(const char *path)
{
	pid_t pid = fork();
	if (pid == 0) {
		execlp("rm", "rm", "-rf", "--", path, (char *)NULL);
		_exit(127);
	}
	int st;
	return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) &&
	                       WEXITSTATUS(st) == 0
	               ? 0
	               : -1;
}

/* One run of bin over fixture in work; fills s. Returns the exit status. */
static int
run_one(const char *bin, const char *fixture, const char *work, int n,
        const char *strace_out, struct sample *s)
{
	char wd[4096], db[4096], json[4096];
	snprintf(wd, sizeof(wd), "%s/run-%d", work, n);
	snprintf(db, sizeof(db), "%s/run-%d.sqlite", work, n);
	snprintf(json, sizeof(json), "%s/run-%d.json", work, n);
	rm_rf(wd);
	unlink(db);
	unlink(json);
	memset(s, 0, sizeof(*s));
	double t0 = now_s();
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int devnull = open("/dev/null", O_WRONLY);
		if (devnull >= 0) {
			dup2(devnull, 1);
			dup2(devnull, 2);
		}
		const char *args[] = { "run",   "--headless", "--fixture",
			               fixture, "--profile",  "cpus=2,mem=4g",
			               "--db",  db,           "--work-dir",
			               wd,      "--json",     json,
			               NULL };
		if (strace_out) {
			const char *sa[32] = { "strace", "-f",       "-c",
				               "-o",     strace_out, bin };
			size_t k = 6;
			for (size_t i = 0; args[i]; i++)
				sa[k++] = args[i];
			sa[k] = NULL;
			execvp("strace", (char *const *)sa);
		} else {
			const char *a[32] = { bin };
			size_t k = 1;
			for (size_t i = 0; args[i]; i++)
				a[k++] = args[i];
			a[k] = NULL;
			execv(bin, (char *const *)a);
		}
		_exit(127);
	}
	int status = 0;
	struct rusage ru;
	for (;;) {
		double an = 0, fi = 0, sh = 0;
		if (read_rss(pid, &an, &fi, &sh)) {
			if (an > s->anon)
				s->anon = an;
			if (fi > s->file)
				s->file = fi;
			if (sh > s->shmem)
				s->shmem = sh;
		}
		pid_t w = wait4(pid, &status, WNOHANG, &ru);
		if (w == pid)
			break;
		if (w < 0 && errno != EINTR)
			return -1;
		usleep(5000);
	}
	s->wall = now_s() - t0;
	s->cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	         (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
	s->maxrss = (double)ru.ru_maxrss / 1024;
	s->minflt = (double)ru.ru_minflt / 1000;
	parse_report(json, s);
	unlink(db);
	char side[4200];
	snprintf(side, sizeof(side), "%s-wal", db);
	unlink(side);
	snprintf(side, sizeof(side), "%s-shm", db);
	unlink(side);
	unlink(json);
	rm_rf(wd);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/* Sum the calls column of strace -c rows whose name matches. */
static void
parse_strace(const char *path, struct traced *t)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	char line[512];
	while (fgets(line, sizeof(line), f)) {
		double pct, secs;
		unsigned long usecs, calls;
		char name[64];
		int k = sscanf(line, "%lf %lf %lu %lu %*s %63s", &pct, &secs,
		               &usecs, &calls, name);
		if (k < 5) {
			/* No errors column on this row. */
			k = sscanf(line, "%lf %lf %lu %lu %63s", &pct, &secs,
			           &usecs, &calls, name);
			if (k < 5)
				continue;
		}
		if (!strcmp(name, "openat") || !strcmp(name, "open"))
			t->opens += (double)calls;
		else if (!strcmp(name, "fsync"))
			t->fsyncs += (double)calls;
		else if (!strcmp(name, "fdatasync"))
			t->fdatasyncs += (double)calls;
		else if (!strcmp(name, "syncfs"))
			t->syncfs += (double)calls;
	}
	fclose(f);
	t->ok = true;
}

static void
usage(void)
{
	bench_usage(USAGE);
}

static bool
split_named(const char *arg, struct named *out)
{
	const char *eq = strchr(arg, '=');
	if (!eq || eq == arg || !eq[1])
		return false;
	out->name = strndup(arg, (size_t)(eq - arg));
	out->dir = eq + 1;
	return out->name != NULL;
}

#define MAX_BINS 4

/* Everything a bench run is told and measures. */
struct bench {
	struct named bin[MAX_BINS], fx[MAX_CASES], wk[MAX_CASES];
	int nbin, nfx, nwk, reps;
	bool strace;
	struct sample smp[MAX_BINS][MAX_CASES][MAX_CASES][MAX_REPS];
	struct traced tr[MAX_BINS][MAX_CASES][MAX_CASES];
	/* Medians per case: wall, cpu, maxrss, rss sum, fsyncs, p+c,
	 * merged MiB, publications (the day's size). */
	double med[MAX_BINS][MAX_CASES][MAX_CASES][8];
};

static void
parse_args(struct bench *B, int argc, char **argv)
{
	B->reps = 3;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--bin") && v && B->nbin < MAX_BINS) {
			struct named *b = &B->bin[B->nbin++];
			if (strchr(v, '=')) {
				if (!split_named(v, b))
					usage();
			} else {
				b->name = "run";
				b->dir = v;
			}
		} else if (!strcmp(a, "--fixture") && v && B->nfx < MAX_CASES) {
			if (!split_named(v, &B->fx[B->nfx++]))
				usage();
		} else if (!strcmp(a, "--work") && v && B->nwk < MAX_CASES) {
			if (!split_named(v, &B->wk[B->nwk++]))
				usage();
		} else if (!strcmp(a, "--reps") && v) {
			B->reps = (int)bench_arg_ll(v, 1, MAX_REPS,
			                            "bench_day: --reps", USAGE);
		} else if (!strcmp(a, "--strace")) {
			B->strace = true;
			continue;
		} else {
			usage();
		}
		i++;
	}
	if (!B->nbin || !B->nfx || !B->nwk || B->reps < 1 || B->reps > MAX_REPS)
		usage();
}

/* Every repetition of every case, the order of days, of work directories
 * and of binaries flipping each repetition (the growth from one day to
 * the next is a ratio too); then the strace runs. */
static int
run_all(struct bench *B)
{
	int run = 0;
	for (int r = 0; r < B->reps; r++)
		for (int f = 0; f < B->nfx; f++)
			for (int w = 0; w < B->nwk; w++)
				for (int b = 0; b < B->nbin; b++) {
					int ff = (r % 2) ? B->nfx - 1 - f : f;
					int ww = (r % 2) ? B->nwk - 1 - w : w;
					int bb = (r % 2) ? B->nbin - 1 - b : b;
					struct sample *s =
					        &B->smp[bb][ff][ww][r];
					int rc = run_one(
					        B->bin[bb].dir, B->fx[ff].dir,
					        B->wk[ww].dir, run++, NULL, s);
					fprintf(stderr,
					        "  %s %s on %s rep %d: %.2f s "
					        "(exit %d)\n",
					        B->bin[bb].name, B->fx[ff].name,
					        B->wk[ww].name, r + 1, s->wall,
					        rc);
					if (rc != 0) {
						fprintf(stderr,
						        "bench_day: the run "
						        "failed; rerun it by "
						        "hand to see why\n");
						return 1;
					}
				}
	for (int b = 0; B->strace && b < B->nbin; b++)
		for (int f = 0; f < B->nfx; f++)
			for (int w = 0; w < B->nwk; w++) {
				char out[4200];
				snprintf(out, sizeof(out), "%s/strace-%d.txt",
				         B->wk[w].dir, run);
				struct sample s;
				run_one(B->bin[b].dir, B->fx[f].dir,
				        B->wk[w].dir, run++, out, &s);
				parse_strace(out, &B->tr[b][f][w]);
				B->tr[b][f][w].pubs = s.pubs;
				unlink(out);
			}
	return 0;
}

/* One row of the medians table (and its medians kept for the growth). */
static void
print_case(struct bench *B, int b, int f, int w)
{
	enum { NCOL = 14 };
	double v[NCOL][MAX_REPS];
	for (int r = 0; r < B->reps; r++) {
		struct sample *s = &B->smp[b][f][w][r];
		double x[NCOL] = { s->wall,
			           s->primary_s,
			           s->primary_s + s->cooldown_s,
			           s->cpu,
			           s->anon,
			           s->file,
			           s->shmem,
			           s->maxrss,
			           s->fsyncs,
			           s->pubs > 0 ? s->fsyncs / s->pubs : 0,
			           s->staging_s,
			           s->pubs,
			           s->minflt,
			           s->merged_mib };
		for (int i = 0; i < NCOL; i++)
			v[i][r] = x[i];
	}
	double m[NCOL];
	for (int i = 0; i < NCOL; i++)
		m[i] = bench_median_d(v[i], B->reps);
	printf("%-8s %-8s %-6s %7.2f %7.2f %7.2f %7.2f %6.1f %6.1f %6.1f "
	       "%6.1f %7.0f %6.2f ",
	       B->bin[b].name, B->fx[f].name, B->wk[w].name, m[0], m[1], m[2],
	       m[3], m[4], m[5], m[6], m[7], m[8], m[9]);
	if (m[10] >= 0)
		printf("%7.2f", m[10]);
	else
		printf("%7s", "-");
	printf(" %6.0f %7.1f %7.1f\n", m[11], m[12], m[13]);
	double *md = B->med[b][f][w];
	md[0] = m[0];
	md[1] = m[3];
	md[2] = m[7];
	md[3] = m[4] + m[5] + m[6];
	md[4] = m[8];
	md[5] = m[2];
	md[6] = m[13];
	md[7] = m[11];
}

static void
print_own(struct bench *B)
{
	bool own = false;
	for (int f = 0; f < B->nfx && !own; f++)
		own = B->smp[0][f][0][0].rep_anon >= 0;
	if (!own)
		return;
	printf("\nthe run's own peaks per phase (larger of primary "
	       "and cooldown; before: anon from the run's start to the "
	       "primary phase), MiB\n%-8s %-8s %-6s %7s %7s %7s %7s\n",
	       "bin", "day", "work", "anon", "file", "shmem", "before");
	for (int b = 0; b < B->nbin; b++)
		for (int f = 0; f < B->nfx; f++)
			for (int w = 0; w < B->nwk; w++) {
				double a[MAX_REPS], c[MAX_REPS], d[MAX_REPS],
				        e[MAX_REPS];
				for (int r = 0; r < B->reps; r++) {
					struct sample *s = &B->smp[b][f][w][r];
					a[r] = s->rep_anon;
					c[r] = s->rep_file;
					d[r] = s->rep_shmem;
					e[r] = s->rep_anon_before;
				}
				printf("%-8s %-8s %-6s %7.1f %7.1f %7.1f %7.1f\n",
				       B->bin[b].name, B->fx[f].name,
				       B->wk[w].name,
				       bench_median_d(a, B->reps),
				       bench_median_d(c, B->reps),
				       bench_median_d(d, B->reps),
				       bench_median_d(e, B->reps));
			}
}

static void
print_strace(struct bench *B)
{
	printf("\nstrace -f -c (one run each; all threads and the "
	       "event log included)\n%-8s %-8s %-6s %9s %9s %9s %9s %7s\n",
	       "bin", "day", "work", "opens", "open/pub", "fsync", "fdatasync",
	       "syncfs");
	for (int b = 0; b < B->nbin; b++)
		for (int f = 0; f < B->nfx; f++)
			for (int w = 0; w < B->nwk; w++) {
				struct traced *t = &B->tr[b][f][w];
				printf("%-8s %-8s %-6s ", B->bin[b].name,
				       B->fx[f].name, B->wk[w].name);
				if (!t->ok)
					printf("(strace failed)\n");
				else
					printf("%9.0f %9.2f %9.0f %9.0f "
					       "%7.0f\n",
					       t->opens,
					       t->pubs > 0 ? t->opens / t->pubs
					                   : 0,
					       t->fsyncs, t->fdatasyncs,
					       t->syncfs);
			}
}

static double
ratio(double to, double from)
{
	return from > 0 ? to / from : 0;
}

/* One row of the growth table: day f0 to day f1 of binary b on work w. */
static void
growth_row(struct bench *B, int b, int f0, int f1, int w)
{
	char lbl[64];
	snprintf(lbl, sizeof(lbl), "%s>%s", B->fx[f0].name, B->fx[f1].name);
	double *a = B->med[b][f0][w], *c = B->med[b][f1][w];
	double wa = ratio(c[6], a[6]), pc = ratio(c[5], a[5]);
	printf("%-8s %-16s %-6s %6.2fx %6.2fx %6.2fx %6.2fx %6.2fx "
	       "%8.2fx %6.2fx %6.2fx %8.2fx\n",
	       B->bin[b].name, lbl, B->wk[w].name, ratio(c[7], a[7]),
	       ratio(c[0], a[0]), pc, ratio(c[1], a[1]), ratio(c[2], a[2]),
	       ratio(c[3], a[3]), ratio(c[4], a[4]), wa,
	       wa > 0 ? pc / wa : 0);
}

/* Each day against the one before; with more than two days, the last
 * against the first too. `day` is the growth of the day itself (its
 * publications), for the others to be read against: steps of unequal
 * size (day-1x, 3x, 5x, 8x) are not all doublings. */
static void
print_growth(struct bench *B)
{
	printf("\ngrowth from one day to the next (ratio of medians; day: "
	       "of the publications)"
	       "\n%-8s %-16s %-6s %7s %7s %7s %7s %7s %9s %7s %7s %9s\n",
	       "bin", "days", "work", "day", "wall", "p+c", "cpu", "maxrss",
	       "rss sum", "fsyncs", "merged", "p+c/MiB");
	for (int b = 0; b < B->nbin; b++) {
		for (int f = 1; f < B->nfx; f++)
			for (int w = 0; w < B->nwk; w++)
				growth_row(B, b, f - 1, f, w);
		for (int w = 0; B->nfx > 2 && w < B->nwk; w++)
			growth_row(B, b, 0, B->nfx - 1, w);
	}
}

int
main(int argc, char **argv)
{
	static struct bench B;
	parse_args(&B, argc, argv);
	for (int w = 0; w < B.nwk; w++) {
		if (mkdir(B.wk[w].dir, 0755) != 0 && errno != EEXIST) {
			fprintf(stderr, "bench_day: %s: %s\n", B.wk[w].dir,
			        strerror(errno));
			return 2;
		}
	}
	double load[3] = { 0 };
	getloadavg(load, 3);
	printf("bench_day: %d repetitions, load %.2f %.2f %.2f\n", B.reps,
	       load[0], load[1], load[2]);
	for (int b = 0; b < B.nbin; b++)
		printf("  bin  %-8s %s\n", B.bin[b].name, B.bin[b].dir);
	for (int w = 0; w < B.nwk; w++)
		printf("  work %-8s %s (%s)\n", B.wk[w].name, B.wk[w].dir,
		       fs_type(B.wk[w].dir));
	if (run_all(&B))
		return 1;
	getloadavg(load, 3);
	printf("(load at the end %.2f %.2f %.2f)\n", load[0], load[1], load[2]);
	printf("\n%-8s %-8s %-6s %7s %7s %7s %7s %6s %6s %6s %6s %7s %6s "
	       "%7s %6s %7s %7s\n",
	       "bin", "day", "work", "wall s", "prim s", "p+c s", "cpu s",
	       "anon", "file", "shmem", "maxrss", "fsyncs", "fs/pub", "stage s",
	       "pubs", "minflt k", "merged");
	for (int b = 0; b < B.nbin; b++)
		for (int f = 0; f < B.nfx; f++)
			for (int w = 0; w < B.nwk; w++)
				print_case(&B, b, f, w);
	printf("(p+c: primary + cooldown phase walls; RSS in MiB: peaks "
	       "of RssAnon, RssFile, RssShmem sampled every 5 ms, and "
	       "wait4's ru_maxrss; minflt k: thousands of minor page faults, "
	       "from wait4; merged: MiB the merges read, core and index, "
	       "both phases)\n");
	if (B.nfx > 1)
		printf("(growth: merged is the day's merge work as the picker "
		       "chose it; p+c/MiB is the growth of p+c per merged "
		       "MiB, 1.00x when the wall grows only with that work)"
		       "\n");
	print_own(&B);
	if (B.strace)
		print_strace(&B);
	if (B.nfx > 1)
		print_growth(&B);
	return 0;
}
