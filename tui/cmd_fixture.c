/*
 * cmd_fixture.c - `mergescope fixture build` and `mergescope fixture check`:
 * generate a deterministic fixture from (preset, seed) and print its gates,
 * or re-validate a built one and name any part that changed.
 */
#include "cli.h"

#include "ms_fixture.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char usage[] =
        "usage: mergescope fixture build --preset P | --scale N --seed N\n"
        "                                [--out DIR] [--opening empty|warm]\n"
        "                                [--dictionary]\n"
        "       mergescope fixture check DIR\n"
        "\n"
        "build: generates the production-shaped day of trace writes for\n"
        "preset P from seed N, checks every fixture gate and prints them.\n"
        "A fixture that fails a gate is not written (exit status 1).\n"
        "Without --out the fixture goes to the cache,\n"
        "$XDG_CACHE_HOME/mergescope/<preset>-<seed> (-warm for a warm\n"
        "opening, -dict with --dictionary).\n"
        "\n"
        "check: re-reads every part of the fixture in DIR, recomputes its\n"
        "hashes, ledgers and gates, and names any part that is missing or\n"
        "changed (exit status 1).\n"
        "\n"
        "  --preset P    smoke, day-1x, day-2x (or day-<N>x)\n"
        "  --scale N     day-<N>x: N times day-1x's traces and rows,\n"
        "                every gate checked at N (N >= 1 whole)\n"
        "  --seed N      unsigned integer\n"
        "  --out DIR     new directory for the fixture\n"
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
	/* The library's messages may name the step already. */
	char step[32];
	snprintf(step, sizeof(step), "fixture %s: ", what);
	const char *msg = eb->msg[0] ? eb->msg : ms_strerror(rc);
	if (strncmp(msg, step, strlen(step)) == 0)
		msg += strlen(step);
	fprintf(err, "mergescope fixture %s: %s\n", what, msg);
	return rc == MS_ERR_STATE || rc == MS_ERR_CORRUPT ? 1 : MS_EXIT_ERROR;
}

static int
cmd_check(int argc, char **argv, FILE *out, FILE *err)
{
	if (argc != 3 || argv[2][0] == '-') {
		fprintf(err, "mergescope fixture check: expected one fixture "
		             "directory\n");
		return MS_EXIT_USAGE;
	}
	char plugin[4200], dir[4096];
	ms__plugin_dir(dir, sizeof(dir));
	snprintf(plugin, sizeof(plugin), "%s/skywalking.so", dir);
	prog_ctx pc;
	ms__progress_init(&pc.p, err, -1);
	ms_fixture_report *rep = calloc(1, sizeof(*rep));
	if (!rep)
		return MS_EXIT_ERROR;
	ms_errbuf eb = { { 0 } };
	int rc = ms_fixture_check(argv[2], plugin, rep, on_progress, &pc, &eb);
	ms__progress_end(&pc.p);
	rc = finish(rc, rep, &eb, out, err, "check");
	free(rep);
	return rc;
}

static int build(const ms__cmd_args *args, FILE *out, FILE *err);

/* `fixture build`: its options are parsed from this descriptor, after the
 * word "build"; messages name the command "fixture". */
static const ms_cmd fixture_build = {
	.name = "fixture",
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

static int
build(const ms__cmd_args *args, FILE *out, FILE *err)
{
	const ms__opt *o = args->o;
	int rc;
	char *end;
	char scaled[32];
	const char *preset = o[MS__FX_PRESET].value;
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
		unsigned long n = strtoul(v, &end, 10);
		if (!*v || *end || v[0] < '1' || v[0] > '9' || n > 1000) {
			fprintf(err,
			        "mergescope fixture: --scale \"%s\": expected "
			        "a whole number from 1 to 1000\n",
			        v);
			return MS_EXIT_USAGE;
		}
		snprintf(scaled, sizeof(scaled), "day-%lux", n);
		preset = scaled;
	}
	unsigned long long seed = strtoull(o[MS__FX_SEED].value, &end, 10);
	if (!*o[MS__FX_SEED].value || *end || o[MS__FX_SEED].value[0] == '-') {
		fprintf(err,
		        "mergescope fixture: --seed \"%s\": expected an "
		        "unsigned integer\n",
		        o[MS__FX_SEED].value);
		return MS_EXIT_USAGE;
	}
	if ((rc = ms__scratch_check(err, "fixture build")))
		return rc; /* refused now, not after the day is generated */
	/* One of the option's choices: the parser checked it. */
	const char *opening =
	        o[MS__FX_OPENING].count ? o[MS__FX_OPENING].value : "empty";
	bool dictionary = o[MS__FX_DICTIONARY].count > 0;
	char outdir[4096];
	if (o[MS__FX_OUT].count) {
		snprintf(outdir, sizeof(outdir), "%s", o[MS__FX_OUT].value);
	} else if (ms_fixture_cache_dir(outdir, sizeof(outdir), preset, seed)) {
		fprintf(err, "mergescope fixture: no --out and no cache "
		             "directory (set XDG_CACHE_HOME or HOME)\n");
		return MS_EXIT_USAGE;
	} else {
		size_t len = strlen(outdir);
		snprintf(outdir + len, sizeof(outdir) - len, "%s%s",
		         strcmp(opening, "warm") == 0 ? "-warm" : "",
		         dictionary ? "-dict" : "");
	}
	char dir[4096], plugin[4200];
	ms__plugin_dir(dir, sizeof(dir));
	snprintf(plugin, sizeof(plugin), "%s/skywalking.so", dir);
	ms_fixture_build_opts bo = {
		.preset = preset,
		.seed = seed,
		.out_dir = outdir,
		.plugin_path = plugin,
		.progress = on_progress,
		.opening = opening,
		.dictionary = dictionary,
	};
	prog_ctx pc;
	ms__progress_init(&pc.p, err, -1);
	bo.progress_ctx = &pc;
	ms_fixture_report *rep = calloc(1, sizeof(*rep));
	if (!rep)
		return MS_EXIT_ERROR;
	ms_errbuf eb = { { 0 } };
	/* One build of a directory at a time: a second waits, then finds
	 * the fixture the first built and reuses it. */
	int lock = ms__mkdir_parent(outdir) == 0
	                   ? ms__fixture_lock("fixture build", outdir, err)
	                   : -1;
	if (lock < 0) {
		free(rep);
		return MS_EXIT_ERROR;
	}
	ms_fixture *have = NULL;
	struct stat st;
	if (stat(outdir, &st) == 0 &&
	    ms_fixture_open(&have, outdir, &eb) == 0 &&
	    strcmp(ms_fixture_get_info(have)->preset, bo.preset) == 0 &&
	    ms_fixture_get_info(have)->seed == seed &&
	    (ms_fixture_get_info(have)->dict_id != 0) == dictionary) {
		ms_fixture_close(have);
		close(lock);
		free(rep);
		fprintf(out,
		        "fixture %s (preset %s, seed %llu) is already built; "
		        "reusing it (`mergescope fixture check %s` "
		        "re-validates it)\n",
		        outdir, bo.preset, seed, outdir);
		return 0;
	}
	ms_fixture_close(have);
	eb.msg[0] = '\0';
	rc = ms_fixture_build(&bo, rep, &eb);
	close(lock);
	ms__progress_end(&pc.p);
	rc = finish(rc, rep, &eb, out, err, "build");
	if (rc == 0)
		fprintf(out, "fixture written to %s\n", outdir);
	free(rep);
	return rc;
}

const ms_cmd ms_cmd_fixture = {
	.name = "fixture",
	.summary = "build or check a fixture: fixture build --preset P "
	           "--seed N [--out DIR] | fixture check DIR",
	.usage = usage,
	.run = run,
};
