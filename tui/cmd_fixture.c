/*
 * cmd_fixture.c - `mergescope fixture build` and `mergescope fixture check`:
 * generate a deterministic fixture from (preset, seed) and print its gates,
 * or re-validate a built one and name any part that changed.
 *
 * Signals: while a build or a check runs, SIGINT, SIGTERM and SIGHUP
 * (those not ignored when it started) stop it at the next trace batch,
 * part or merge; it removes what it made (a check, its scratch shard),
 * says so naming the signal and the directory, and exits 128 + the
 * signal. A second one acts as it always does. Once a
 * build holds its lock it removes what builds of the same directory that
 * were killed left beside it (their staging directories), saying so.
 */
#include "cli.h"

#include "ms_clock.h"
#include "ms_fixture.h"
#include "ms_replay.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char usage[] =
        "usage: mergescope fixture build --preset P | --scale N --seed N\n"
        "                                [--out DIR] [--opening empty|warm]\n"
        "                                [--dictionary]\n"
        "       mergescope fixture check [--] DIR\n"
        "\n"
        "build: generates the production-shaped day of trace writes for\n"
        "preset P from seed N, checks every fixture gate and prints them.\n"
        "A fixture that fails a gate is not written (exit status 1).\n"
        "SIGINT, SIGTERM or SIGHUP stop a build; it removes what it\n"
        "made (exit status 128 + N).\n"
        "Without --out the fixture goes to the cache,\n"
        "$XDG_CACHE_HOME/mergescope/<preset>-<seed> (-warm for a warm\n"
        "opening, -dict with --dictionary).\n"
        "\n"
        "check: re-reads every part of the fixture in DIR, recomputes its\n"
        "hashes, ledgers and gates, and names any part that is missing,\n"
        "truncated or changed and any gate row, sampler counter or fact\n"
        "of the manifest that is not what it measures (exit status 1;\n"
        "remove DIR and build it again). SIGINT, SIGTERM or SIGHUP stop\n"
        "a check; it removes its scratch shard (exit status 128 + N).\n"
        "A DIR that begins with '-' follows \"--\", which ends the\n"
        "options.\n"
        "Both: exit status 2 when a directory named cannot be used (not\n"
        "a fixture, or where one cannot be written), 64 for a usage error.\n"
        "\n"
        "  --preset P    smoke, day-1x, day-2x (or day-<N>x)\n"
        "  --scale N     day-<N>x: N times day-1x's traces and rows,\n"
        "                every gate checked at N (N from 1 to 1000)\n"
        "  --seed N      unsigned integer, 0 to 18446744073709551615\n"
        "  --out DIR     new directory for the fixture (a fixture of\n"
        "                the same options there is reused once its\n"
        "                part files hash as built; a damaged one is\n"
        "                named and refused, exit status 1; any other\n"
        "                path there is refused)\n"
        "  --opening O   the shard's state when the day begins: empty\n"
        "                (default, the reference pilot) or warm (a\n"
        "                previous day consolidated into 26 parts,\n"
        "                published first, so mature data exists from\n"
        "                the start)\n"
        "  --dictionary  train one zstd dictionary for the fixture and\n"
        "                compress every core part with it (off: the\n"
        "                reference stores parts without one; day-1x\n"
        "                consolidated core bytes 43.3 MB -> 21.6 MB)\n";

typedef struct prog_ctx {
	ms__progress p;
} prog_ctx;

/* The signal that asked the build under way to stop; 0: none. Stored
 * and read atomically: the build's worker threads read it while the
 * handler sets it (ms__fx_stopped). */
static volatile sig_atomic_t stop_signal;

static void
on_stop(int sig)
{
	__atomic_store_n(&stop_signal, sig, __ATOMIC_RELAXED);
}

static const int stop_signals[] = { SIGINT, SIGTERM, SIGHUP };

/* While a build runs: each stop signal not ignored sets stop_signal once,
 * then acts as before (old[] keeps what to restore). */
static void
catch_stops(struct sigaction old[3])
{
	__atomic_store_n(&stop_signal, 0, __ATOMIC_RELAXED);
	for (size_t i = 0; i < 3; i++) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sigemptyset(&sa.sa_mask);
		sa.sa_handler = on_stop;
		sa.sa_flags = SA_RESETHAND;
		if (sigaction(stop_signals[i], NULL, &old[i]) == 0 &&
		    old[i].sa_handler != SIG_IGN)
			sigaction(stop_signals[i], &sa, NULL);
	}
}

static void
release_stops(const struct sigaction old[3])
{
	for (size_t i = 0; i < 3; i++)
		if (old[i].sa_handler != SIG_IGN)
			sigaction(stop_signals[i], &old[i], NULL);
}

/* After a build or check that returned rc with stop signals caught: when
 * a signal stopped it, one line on err ("mergescope HEAD: stopped by
 * SIGx; WHAT") and the exit status 128 + the signal; else 0. */
static int
stopped_by_signal(int rc, FILE *err, const char *head, const char *what)
{
	if (rc != MS_ERR_CANCELED || !stop_signal)
		return 0;
	fprintf(err, "mergescope %s: stopped by %s; %s\n", head,
	        ms__signal_name(stop_signal), what);
	return 128 + stop_signal;
}

static void
on_progress(void *ctx, const char *stage, uint64_t done, uint64_t total)
{
	prog_ctx *c = ctx;
	ms__progress_update(&c->p, stage, done, total, NULL);
}

static int
finish(int rc, const ms_fixture_report *rep, const ms_errbuf *eb, FILE *out,
       FILE *err, const char *what)
{
	if (rep->ngates || rep->nproblems)
		ms_fixture_report_print(out, rep);
	if (rc == 0)
		return 0;
	/* The library's messages may name the step already ("fixture
	 * build: ...", "fixture check DIR: ..."): said once. */
	char step[32];
	size_t n = (size_t)snprintf(step, sizeof(step), "fixture %s", what);
	const char *msg = eb->msg[0] ? eb->msg : ms_strerror(rc);
	bool named = strncmp(msg, step, n) == 0;
	if (named && msg[n] == ' ') {
		fprintf(err, "mergescope %s\n", msg);
	} else {
		if (named && msg[n] == ':')
			msg += n + 1 + (msg[n + 1] == ' ');
		fprintf(err, "mergescope %s: %s\n", step, msg);
	}
	return rc == MS_ERR_STATE || rc == MS_ERR_CORRUPT ? 1 : MS_EXIT_ERROR;
}

/* `check [--] DIR`'s words after "check" (argv[2..]): a word after "--"
 * is the directory, whatever it begins with; before it, a word that
 * begins with '-' is an option, which check has none of but --help and
 * -h. A line with --help is still check's words: help (-1: printed)
 * beside at most the directory (not looked at, as an option's value
 * beside --help is not checked), else refused as without --help (`check
 * --help a b` printed the help). 0 with *dir set, or MS_EXIT_USAGE after
 * one line. */
static int
check_words(int argc, char **argv, const char **dir, FILE *out, FILE *err)
{
	bool help = false, past = false, ended = false;
	int n = 0;
	for (int i = 2; i < argc; i++) {
		bool dd = strcmp(argv[i], "--") == 0;
		if (!past && (!strcmp(argv[i], "--help") ||
		              !strcmp(argv[i], "-h"))) {
			help = true;
			continue;
		}
		if (dd && !past && n == 0) {
			past = ended = true;
			continue;
		}
		past = past || dd;
		n++;
		*dir = argv[i];
	}
	if (n != 1)
		*dir = NULL;
	/* Names no directory has: the words show the mistake. */
	bool odd = *dir && (!(*dir)[0] || strcmp(*dir, "-") == 0);
	if (odd && !help) {
		fprintf(err, "mergescope fixture check: %s\n",
		        (*dir)[0] ? "-: \"-\" stands for standard output "
		                    "only in export --out; give a directory "
		                    "name (./- for one named -)"
		                  : "\"\": expected a directory name");
		return MS_EXIT_USAGE;
	}
	if ((n == 0 && help) ||
	    (n == 1 && (ended || odd || (*dir)[0] != '-'))) {
		if (!help)
			return 0;
		fputs(usage, out);
		return -1;
	}
	fprintf(err, "mergescope fixture check: expected one fixture directory");
	if (n == 1)
		fprintf(err, " (one that begins with '-' is written after "
		             "\"--\")\n");
	else
		fprintf(err, ", got %d words\n", n);
	return MS_EXIT_USAGE;
}

static int
cmd_check(int argc, char **argv, FILE *out, FILE *err)
{
	const char *fixture;
	int w = check_words(argc, argv, &fixture, out, err);
	if (w)
		return w < 0 ? 0 : w;
	char plugin[4200], dir[4096];
	ms__plugin_dir(dir, sizeof(dir));
	snprintf(plugin, sizeof(plugin), "%s/skywalking.so", dir);
	prog_ctx pc;
	ms__progress_init(&pc.p, err, -1);
	ms_fixture_report *rep = calloc(1, sizeof(*rep));
	if (!rep)
		return MS_EXIT_ERROR;
	ms_errbuf eb = { { 0 } };
	ms_fixture_check_opts co = { .plugin_path = plugin,
		                     .progress = on_progress,
		                     .progress_ctx = &pc,
		                     .stop = &stop_signal };
	struct sigaction old[3];
	catch_stops(old);
	int rc = ms_fixture_check_with(fixture, &co, rep, &eb);
	release_stops(old);
	ms__progress_end(&pc.p);
	char head[4200];
	snprintf(head, sizeof(head), "fixture check %s", fixture);
	int sig = stopped_by_signal(rc, err, head,
	                            "the fixture was not judged (its "
	                            "scratch shard is removed)");
	rc = sig ? sig : finish(rc, rep, &eb, out, err, "check");
	free(rep);
	return rc;
}

static int build(const ms__cmd_args *args, FILE *out, FILE *err);

/* `fixture build`: its options are parsed from this descriptor, after the
 * word "build"; every message names the command "fixture build", as the
 * build's own do. */
static const ms_cmd fixture_build = {
	.name = "fixture build",
	.usage = usage,
	.opts = ms__fixture_opts,
	.nopts = MS__FX_COUNT,
	.exec = build,
};

/* The subcommand word, then `check DIR` or `build` with its options. */
static int
run(int argc, char **argv, FILE *out, FILE *err)
{
	if (argc >= 2 && strcmp(argv[1], "check") == 0)
		return cmd_check(argc, argv, out, err);
	if (argc < 2 || strcmp(argv[1], "build") != 0) {
		fprintf(err,
		        "mergescope fixture: expected the subcommand "
		        "\"build\" or \"check\"%s%s%s\n",
		        argc >= 2 ? ", got \"" : "", argc >= 2 ? argv[1] : "",
		        argc >= 2 ? "\"" : "");
		return MS_EXIT_USAGE;
	}
	return ms__cmd_main(&fixture_build, argc - 1, argv + 1, out, err);
}

/* s as a plain decimal from lo to hi: digits only, no sign, space or
 * leading zero (strtoull would take " 5", "+5" and "-1" and clamp what is
 * out of range). */
static bool
plain_decimal(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	uint64_t v = 0;

	if (!*s || (s[0] == '0' && s[1]))
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return false;
		uint64_t d = (uint64_t)(*s - '0');
		if (v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	if (v < lo || v > hi)
		return false;
	*out = v;
	return true;
}

/* The fixture to build: the options resolved, checked before anything is
 * created. */
typedef struct build_req {
	char preset[32];
	uint64_t seed;
	const char *opening; /* "empty" or "warm" */
	bool dictionary;
	bool out_given; /* --out, else the cache's place */
	char outdir[4096];
} build_req;

/* --preset or --scale, --seed and --out as given: MS_EXIT_USAGE after one
 * line naming the option and what it expects, else 0. */
static int
parse_request(const ms__opt *o, build_req *r, FILE *err)
{
	uint64_t n;

	if (!o[MS__FX_PRESET].count && !o[MS__FX_SCALE].count) {
		fprintf(err, "mergescope fixture build: --preset P is required "
		             "(or --scale N)\n");
		return MS_EXIT_USAGE;
	}
	if (o[MS__FX_PRESET].count && o[MS__FX_SCALE].count) {
		fprintf(err, "mergescope fixture build: give --preset P or "
		             "--scale N, not both\n");
		return MS_EXIT_USAGE;
	}
	if (o[MS__FX_SCALE].count) {
		const char *v = o[MS__FX_SCALE].value;
		if (!plain_decimal(v, 1, MS_FIXTURE_SCALE_MAX, &n)) {
			fprintf(err,
			        "mergescope fixture build: --scale \"%s\": "
			        "expected a whole number from 1 to %u\n",
			        v, MS_FIXTURE_SCALE_MAX);
			return MS_EXIT_USAGE;
		}
		snprintf(r->preset, sizeof(r->preset), "day-%llux",
		         (unsigned long long)n);
	} else {
		const char *v = o[MS__FX_PRESET].value;
		/* Refused here, before the cache's lock of its name. */
		if (strlen(v) >= sizeof(r->preset) ||
		    !(ms_fixture_preset_units(v) > 0)) {
			fprintf(err,
			        "mergescope fixture build: --preset \"%s\": ",
			        v);
			ms__say_presets(err);
			return MS_EXIT_USAGE;
		}
		snprintf(r->preset, sizeof(r->preset), "%s", v);
	}
	/* After the value of --scale or --preset: `--scale abc` without
	 * --seed said --seed was missing, not that abc is no scale. */
	if (!o[MS__FX_SEED].count) {
		fprintf(err, "mergescope fixture build: option --seed N is "
		             "required\n");
		return MS_EXIT_USAGE;
	}
	if (!plain_decimal(o[MS__FX_SEED].value, 0, UINT64_MAX, &r->seed)) {
		fprintf(err,
		        "mergescope fixture build: --seed \"%s\": expected an "
		        "unsigned integer from 0 to %llu in plain decimal "
		        "digits (no sign, space or leading zero)\n",
		        o[MS__FX_SEED].value, (unsigned long long)UINT64_MAX);
		return MS_EXIT_USAGE;
	}
	/* One of the option's choices: the parser checked it. */
	r->opening =
	        o[MS__FX_OPENING].count ? o[MS__FX_OPENING].value : "empty";
	r->dictionary = o[MS__FX_DICTIONARY].count > 0;
	r->out_given = o[MS__FX_OUT].count > 0;
	if (!r->out_given)
		return 0;
	/* Not empty: the parser refuses an empty name. */
	const char *v = o[MS__FX_OUT].value;
	size_t len = strlen(v);
	/* "DIR/" is DIR: its lock goes beside it, not inside. */
	while (len > 1 && v[len - 1] == '/')
		len--;
	if (len >= sizeof(r->outdir)) {
		fprintf(err,
		        "mergescope fixture build: --out: the path is %zu "
		        "bytes; at most %zu are accepted\n",
		        len, sizeof(r->outdir) - 1);
		return MS_EXIT_USAGE;
	}
	memcpy(r->outdir, v, len);
	r->outdir[len] = '\0';
	return 0;
}

/* "--out DIR" or "the cache's directory DIR", for messages. */
static const char *
where(const build_req *r, char *buf, size_t n)
{
	snprintf(buf, n, "%s %s",
	         r->out_given ? "--out" : "the cache's directory", r->outdir);
	return buf;
}

enum { OUT_ABSENT = -1 };

/* The fixture at r->outdir (w: where() of it) does not open or verify
 * (rc, eb): one line on err saying so, and the exit status (1 for a
 * damaged fixture, as `fixture check` gives). The library's "fixture
 * DIR: " is not said twice. */
static int
damaged(int rc, const ms_errbuf *eb, const build_req *r, const char *w,
        FILE *err)
{
	const char *msg = eb->msg[0] ? eb->msg : ms_strerror(rc);
	size_t n = strlen(r->outdir);
	if (strncmp(msg, "fixture ", 8) == 0 &&
	    strncmp(msg + 8, r->outdir, n) == 0 && msg[8 + n] == ':')
		msg += 8 + n + 1 + (msg[8 + n + 1] == ' ');
	fprintf(err, "mergescope fixture build: %s: not reused: %s\n", w, msg);
	return rc == MS_ERR_CORRUPT ? 1 : MS_EXIT_ERROR;
}

/* What is at r->outdir already: OUT_ABSENT when nothing; 0 when it is the
 * very fixture r asks for and unchanged since it was built
 * (ms_fixture_verify, with progress on err), reused as a line on out
 * says; else the exit status after one line on err naming the path and
 * what is wrong with it (another fixture, with what differs; a damaged
 * one, with how to build it again; or not a fixture). Nothing is created
 * or removed. */
static int
existing(const build_req *r, FILE *out, FILE *err)
{
	struct stat st;
	char w[4200], diff[512];

	if (lstat(r->outdir, &st) != 0)
		return OUT_ABSENT;
	where(r, w, sizeof(w));
	ms_fixture *have = NULL;
	ms_errbuf eb = { { 0 } };
	/* A symbolic link to a fixture is that fixture. */
	bool is_dir = stat(r->outdir, &st) == 0 && S_ISDIR(st.st_mode);
	int rc = is_dir ? ms_fixture_open(&have, r->outdir, &eb) : 0;
	if (rc == MS_ERR_CORRUPT)
		return damaged(rc, &eb, r, w, err);
	if (!is_dir || rc) {
		fprintf(err,
		        "mergescope fixture build: %s exists and does not "
		        "open as a fixture (%s); a fixture is never written "
		        "over it: give a new directory\n",
		        w,
		        !is_dir     ? "not a directory"
		        : eb.msg[0] ? eb.msg
		                    : "it does not open");
		return MS_EXIT_ERROR;
	}
	ms__fixture_differences(diff, sizeof(diff), ms_fixture_get_info(have),
	                        "this build", r->preset, r->seed, r->opening,
	                        r->dictionary);
	if (diff[0]) {
		ms_fixture_close(have);
		fprintf(err,
		        "mergescope fixture build: %s holds another fixture: "
		        "%s; nothing was built or removed (give %s, or remove "
		        "%s first)\n",
		        w, diff, r->out_given ? "another --out" : "--out DIR",
		        r->outdir);
		return MS_EXIT_ERROR;
	}
	/* The same check a replay makes before it starts: every part file
	 * hashes as built; and the block ledgers file is whole, as `fixture
	 * check` requires (a replay would read every part without it). */
	prog_ctx pc;
	ms__progress_init(&pc.p, err, -1);
	double t0 = ms_mono_s();
	rc = ms_fixture_verify(have, on_progress, &pc, &eb);
	ms__progress_end(&pc.p);
	if (!rc)
		rc = ms_fixture_verify_blocks(have, &eb);
	size_t nparts = ms_fixture_nslots(have);
	ms_fixture_close(have);
	if (rc)
		return damaged(rc, &eb, r, w, err);
	fprintf(out,
	        "fixture %s (preset %s, seed %llu) is already built; "
	        "reusing it: its %zu parts are as built (%.1f s; "
	        "`mergescope fixture check ",
	        r->outdir, r->preset, (unsigned long long)r->seed, nparts,
	        ms_mono_s() - t0);
	ms__shell_word(out, r->outdir, false);
	fputs("` re-validates it all)\n", out);
	return 0;
}

/* The nearest of dir and its ancestors that exists, into out (n bytes):
 * what ms_fs_mkdir_p(dir) finds in place. */
static void
existing_ancestor(char *out, size_t n, const char *dir)
{
	struct stat st;
	char up[4096];

	snprintf(out, n, "%s", dir);
	while (lstat(out, &st) != 0 && ms_fs_parent(up, sizeof(up), out) == 0 &&
	       strcmp(up, out) != 0)
		snprintf(out, n, "%s", up);
}

/* Remove what ms_fs_mkdir_p(dir) made below kept (existing_ancestor of
 * dir before it ran): dir and its parents up to kept, each only while
 * it is empty. */
static void
unmake_dirs(const char *dir, const char *kept)
{
	char cur[4096], up[4096];

	snprintf(cur, sizeof(cur), "%s", dir);
	while (strcmp(cur, kept) != 0 && rmdir(cur) == 0 &&
	       ms_fs_parent(up, sizeof(up), cur) == 0 && strcmp(up, cur) != 0)
		snprintf(cur, sizeof(cur), "%s", up);
}

/* The directory the fixture goes in (parent and kept: 4096 bytes
 * each), made first: a path that cannot be made, or a directory this
 * process cannot write in (read-only, no permission), is refused for
 * that, with the system's reason; the room of an ancestor it would
 * otherwise be judged by says nothing of it. A build into a read-only
 * file system with little free space was refused for its room. */
static int
make_parent(const char *outdir, const char *w, char *parent, char *kept,
            FILE *err)
{
	ms_errbuf eb = { { 0 } };
	if (ms_fs_parent(parent, 4096, outdir)) {
		fprintf(err,
		        "mergescope fixture build: %s: cannot make the "
		        "directory it goes in (path too long)\n",
		        w);
		return MS_EXIT_ERROR;
	}
	existing_ancestor(kept, 4096, parent);
	if (ms_fs_mkdir_p(parent, 0777, &eb) < 0) {
		fprintf(err,
		        "mergescope fixture build: %s: cannot make the "
		        "directory it goes in (%s)\n",
		        w, eb.msg);
		return MS_EXIT_ERROR;
	}
	/* A directory the file system or its permissions keep this
	 * process (root too) from writing in. */
	int e = ms_replay_dir_probe(parent);
	if (e) {
		unmake_dirs(parent, kept);
		fprintf(err,
		        "mergescope fixture build: %s: cannot write in the "
		        "directory it goes in (%s: %s)\n",
		        w, parent, strerror(e));
		return MS_EXIT_ERROR;
	}
	return 0;
}

static int
build(const ms__cmd_args *args, FILE *out, FILE *err)
{
	int rc;
	build_req r;
	memset(&r, 0, sizeof(r));
	if ((rc = parse_request(args->o, &r, err)))
		return rc;
	if ((rc = ms__scratch_check(err, "fixture build")))
		return rc; /* refused now, not after the day is generated */
	if (!r.out_given) {
		if (ms_fixture_cache_dir(r.outdir, sizeof(r.outdir), r.preset,
		                         r.seed)) {
			fprintf(err,
			        "mergescope fixture build: no --out and no "
			        "cache directory (set XDG_CACHE_HOME or "
			        "HOME)\n");
			return MS_EXIT_USAGE;
		}
		size_t len = strlen(r.outdir);
		if ((size_t)snprintf(
		            r.outdir + len, sizeof(r.outdir) - len, "%s%s",
		            strcmp(r.opening, "warm") == 0 ? "-warm" : "",
		            r.dictionary ? "-dict" : "") >=
		    sizeof(r.outdir) - len) {
			fprintf(err, "mergescope fixture build: the cache "
			             "directory's path is too long; give --out "
			             "DIR\n");
			return MS_EXIT_USAGE;
		}
	}
	/* A fixture is immutable: one already there needs no lock. */
	if ((rc = existing(&r, out, err)) != OUT_ABSENT)
		return rc;

	char dir[4096], plugin[4200], w[4200];
	ms__plugin_dir(dir, sizeof(dir));
	snprintf(plugin, sizeof(plugin), "%s/skywalking.so", dir);
	ms_fixture_build_opts bo = {
		.preset = r.preset,
		.seed = r.seed,
		.out_dir = r.outdir,
		.plugin_path = plugin,
		.progress = on_progress,
		.opening = r.opening,
		.dictionary = r.dictionary,
	};
	ms_errbuf eb = { { 0 } };
	where(&r, w, sizeof(w));
	/* What this makes is removed again when the build is refused
	 * below, so a refusal leaves nothing; the lock comes after. */
	char parent[4096], kept[4096];
	if ((rc = make_parent(r.outdir, w, parent, kept, err)))
		return rc;
	if ((rc = ms_fixture_build_check(&bo, &eb))) {
		unmake_dirs(parent, kept);
		fprintf(err, "mergescope fixture build: %s: %s\n", w,
		        eb.msg + (strncmp(eb.msg, "fixture build: ", 15) ? 0
		                                                         : 15));
		return rc == MS_ERR_RANGE ? MS_EXIT_USAGE : MS_EXIT_ERROR;
	}
	/* One build of a directory at a time: a second waits, then finds
	 * the fixture the first built and reuses it. */
	int lock = ms__fixture_lock("fixture build", r.outdir, err);
	if (lock < 0)
		return MS_EXIT_ERROR;
	/* No other build of the directory runs now: what one left is
	 * garbage. */
	ms__scratch_sweep_beside(err, "fixture build", r.outdir);
	/* Built meanwhile by the process that held the lock, or put there
	 * by other means. */
	if ((rc = existing(&r, out, err)) != OUT_ABSENT) {
		ms__fixture_unlock(lock, r.outdir);
		return rc;
	}
	prog_ctx pc;
	ms__progress_init(&pc.p, err, -1);
	bo.progress_ctx = &pc;
	ms_fixture_report *rep = calloc(1, sizeof(*rep));
	if (!rep) {
		ms__fixture_unlock(lock, r.outdir);
		return ms__say_oom(err, "fixture build", sizeof(*rep),
		                   "the report of the fixture build");
	}
	struct sigaction old[3];
	catch_stops(old);
	bo.stop = &stop_signal;
	rc = ms_fixture_build(&bo, rep, &eb);
	release_stops(old);
	ms__fixture_unlock(lock, r.outdir);
	ms__progress_end(&pc.p);
	char head[4300];
	snprintf(head, sizeof(head), "fixture build: %s", w);
	int sig = stopped_by_signal(rc, err, head,
	                            "nothing was written (what the build "
	                            "had made is removed)");
	if (sig) {
		free(rep);
		return sig;
	}
	rc = finish(rc, rep, &eb, out, err, "build");
	if (rc == 0)
		fprintf(out, "fixture written to %s\n", r.outdir);
	free(rep);
	return rc;
}

const ms_cmd ms_cmd_fixture = {
	.name = "fixture",
	.summary = "build or check a fixture: fixture build --preset P "
	           "--seed N [--out DIR] | fixture check [--] DIR",
	.usage = usage,
	.run = run,
};
