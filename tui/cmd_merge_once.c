/*
 * cmd_merge_once.c - `mergescope merge-once`: run the one pending merge of
 * a frozen shard (made with `f` at a dispatch barrier, or `run
 * --freeze-at`) from fresh copies, REPS times per variant, each repetition
 * in a fresh process of this program, alternating the variants, and print
 * every repetition, medians and coefficients of variation (ms_merge_once).
 * Exit 1 when a variant's ledgers differ between repetitions or it
 * disagrees with the verdict oracle, 2 when the re-picked selection
 * differs (or anything fails). The frozen directory is never modified.
 *
 * The fresh copies go to a new directory "mergescope-once-XXXXXX" in the
 * scratch directory when it has room for two copies of the frozen shard
 * (as a run's scratch shard goes there), else in the cache's work/ (else,
 * for a user who may write neither, $TMPDIR), and it holds an owner record
 * (kind scratch): a merge-once killed before it removed the directory
 * leaves it where the next run's sweep and `clean` find it, not in $TMPDIR
 * where nothing looks.
 */
#include "cli.h"

#include "ms_fixture.h"
#include "ms_owner.h"
#include "ms_replay.h"

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#define MAX_VARIANTS 16

static const char usage[] =
        "usage: mergescope merge-once --frozen DIR --variant V "
        "[--variant V2]...\n"
        "                             [--reps N] [--grace-policy P]\n"
        "                             [--plugin-host inproc|process]\n"
        "                             [--staging retain|reread]\n"
        "                             [--clock mature|run]\n"
        "\n"
        "Runs the pending merge of a frozen shard (made with f at a dispatch\n"
        "barrier or run --freeze-at) on a fresh copy, N times per variant,\n"
        "each time in a fresh process, alternating the variants. First the\n"
        "frozen shard's part count and input ledgers are checked against\n"
        "frozen.txt and the picker is re-run on the frozen state: a\n"
        "selection that differs from the frozen one is refused, naming\n"
        "both. Prints every repetition (wall, CPU, allocated bytes,\n"
        "allocations, peak RSS, read and written bytes, write\n"
        "amplification: bytes written over the input parts' bytes,\n"
        "whatever --staging), the medians with their coefficients of\n"
        "variation, whether every repetition wrote the same output\n"
        "ledgers (and, for a variant that drops, the inputs' minus the\n"
        "rows it dropped), and for a variant with a sampler whether its\n"
        "drops agree with the verdict oracle (the fixture's traces\n"
        "evaluated whole). Exit status 1 when a variant's ledgers differ\n"
        "between repetitions or do not reconcile, or it disagrees with\n"
        "the oracle, 2 when the selection differs or the merge cannot\n"
        "run, 64 for a usage error. DIR is never modified.\n"
        "\n"
        "  --frozen DIR        a shard frozen at a barrier\n"
        "  --variant V         disabled, alwayskeep, detdrop:PCT, skywalking\n"
        "                      or a chain spec (repeatable)\n"
        "  --reps N            repetitions per variant, 1 to 1000000\n"
        "                      (default 5)\n"
        "  --grace-policy P    selection or trace (default trace: every\n"
        "                      input counts as matured)\n"
        "  --plugin-host H     inproc (default) or process: see `run`\n"
        "  --staging S         retain (default) or reread: see `run`\n"
        "  --clock C           mature (default: every input matured) or\n"
        "                      run (the run's clock at the barrier: a hot\n"
        "                      selection stays hot)\n";

/* The bytes under the tree nftw walks (its callback takes no context). */
static uint64_t tree_bytes;

static int
add_bytes(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)path;
	(void)f;
	if (flag == FTW_F)
		tree_bytes += (uint64_t)st->st_blocks * 512u;
	return 0;
}

/* May the copies go in root, the scratch directory: one it can make or
 * write, on a file system with need bytes free (a tmpfs unless the user
 * named the root in MERGESCOPE_SCRATCH, as for a run's shard)? */
static bool
root_has_room(const char *root, bool from_env, uint64_t need)
{
	if (mkdir(root, 0700) != 0 && errno != EEXIST)
		return false;
	struct statvfs sv;
	if (access(root, W_OK) != 0 || statvfs(root, &sv) != 0)
		return false;
	if (!from_env && !ms_fs_in_memory(root))
		return false;
	return (uint64_t)sv.f_bavail * sv.f_frsize >= need;
}

/* Make the directory for the fresh copies of frozen (see the file
 * comment) into dir, with its owner record; one line on err and
 * MS_EXIT_ERROR when it cannot be made. */
static int
make_scratch(const char *frozen, char *dir, size_t n, FILE *err)
{
	tree_bytes = 0;
	nftw(frozen, add_bytes, 16, FTW_PHYS);
	uint64_t need = 2 * tree_bytes + (64ull << 20);
	/* Where to try, in order: the scratch directory with room, the
	 * cache's work/, and $TMPDIR for a user who may write neither
	 * (nothing sweeps it there: the owner record still says whose). */
	char parent[3][PATH_MAX] = { "", "", "" }, root[PATH_MAX];
	bool from_env = false;
	if (ms_scratch_root(root, sizeof(root), &from_env, NULL) == 0 &&
	    root_has_room(root, from_env, need))
		snprintf(parent[0], PATH_MAX, "%s", root);
	if (ms__cache_root(root, sizeof(root)) == 0)
		snprintf(parent[1], PATH_MAX, "%s/work", root);
	const char *tmp = getenv("TMPDIR");
	snprintf(parent[2], PATH_MAX, "%s", tmp && *tmp ? tmp : "/tmp");
	int e = 0;
	for (int i = 0; i < 3; i++) {
		if (!parent[i][0] ||
		    ms_fs_mkdir_p(parent[i], 0700, NULL) != 0 ||
		    (size_t)snprintf(dir, n, "%s/mergescope-once-XXXXXX",
		                     parent[i]) >= n)
			continue;
		if (!mkdtemp(dir)) {
			e = errno;
			continue;
		}
		/* The note names the frozen shard by its real path: while
		 * this process runs, `clean --frozen` leaves that alone. */
		char note[PATH_MAX + 32], real[PATH_MAX];
		ms_errbuf eb = { "" };
		snprintf(note, sizeof(note), "merge-once --frozen %s",
		         realpath(frozen, real) ? real : frozen);
		if (ms_owner_write(dir, "scratch", note, &eb) == 0)
			return 0;
		fprintf(err, "mergescope merge-once: %s\n", eb.msg);
		ms_fs_rm_tree(dir, NULL);
		return MS_EXIT_ERROR;
	}
	fprintf(err,
	        "mergescope merge-once: no directory for the copies in %s, "
	        "%s or %s%s%s\n",
	        parent[0][0] ? parent[0] : "the scratch directory",
	        parent[1][0] ? parent[1] : "the cache", parent[2],
	        e ? ": " : "", e ? strerror(e) : "");
	return MS_EXIT_ERROR;
}

/* --reps and every --variant (in order: the option keeps only the last),
 * each variant loaded as `run` would load it (plugins, configs) before any
 * copy is made, so that a mistake names the variant there. */
static int
check_args(const ms__cmd_args *args, unsigned *reps_out, const char **variants,
           size_t *nv_out, FILE *err)
{
	const ms__opt *o = args->o;
	int rc;
	unsigned reps = 5;
	if (o[MS__MO_REPS].count) {
		unsigned long n;
		if (!ms__parse_count(o[MS__MO_REPS].value, 1, 1000000, &n)) {
			fprintf(err,
			        "mergescope merge-once: --reps \"%s\": "
			        "expected a count from 1 to 1000000\n",
			        o[MS__MO_REPS].value);
			return MS_EXIT_USAGE;
		}
		reps = (unsigned)n;
	}
	size_t nv =
	        ms__cmd_values(args, MS__MO_VARIANT, variants, MAX_VARIANTS);
	if (nv > MAX_VARIANTS) {
		fprintf(err,
		        "mergescope merge-once: at most %d --variant options\n",
		        MAX_VARIANTS);
		return MS_EXIT_USAGE;
	}
	ms__run_cfg *cfg = malloc(sizeof(*cfg));
	if (!cfg) {
		(void)ms__say_oom(err, "merge-once", sizeof(*cfg),
		                  "its configuration");
		return MS_EXIT_ERROR;
	}
	rc = 0;
	for (size_t i = 0; rc == 0 && i < nv; i++) {
		ms__run_args ra = { .cmd = "merge-once",
			            .variant = variants[i],
			            .variant_opt = "--variant",
			            .grace = o[MS__MO_GRACE].value };
		rc = ms__run_check(&ra, cfg, err);
	}
	free(cfg);
	*reps_out = reps;
	*nv_out = nv;
	return rc;
}

/* --frozen and --variant, required, checked after the values given
 * (check_args): `--variant bogus` without --frozen names the variant, as
 * a wrong value is named before a required option left out elsewhere. */
static int
required_given(const ms__opt *o, FILE *err)
{
	static const int req[] = { MS__MO_FROZEN, MS__MO_VARIANT };
	for (size_t i = 0; i < sizeof(req) / sizeof(req[0]); i++) {
		if (ms__opt_missing("merge-once", &o[req[i]], err))
			return MS_EXIT_USAGE;
	}
	return 0;
}

/* Says on err each variant whose repetitions disagree with each other,
 * with its inputs or with the verdict oracle; true if any did. */
static bool
report_unstable(const ms_merge_once_result *res, size_t nv, FILE *err)
{
	bool unstable = false;
	for (size_t i = 0; i < nv; i++) {
		if (!res[i].ledgers_stable) {
			fprintf(err,
			        "mergescope merge-once: variant %s wrote "
			        "different output ledgers across repetitions\n",
			        res[i].variant);
			unstable = true;
		}
		if (!res[i].ledgers_reconciled) {
			fprintf(err,
			        "mergescope merge-once: variant %s wrote "
			        "output ledgers that are not the inputs' minus "
			        "the rows of the traces it dropped: %s\n",
			        res[i].variant, res[i].recon_note);
			unstable = true;
		}
		if (res[i].oracle_checked && !res[i].oracle_match) {
			fprintf(err,
			        "mergescope merge-once: variant %s disagrees "
			        "with the verdict oracle: %s\n",
			        res[i].variant, res[i].oracle_note);
			unstable = true;
		}
	}
	return unstable;
}

static int
exec(const ms__cmd_args *args, FILE *out, FILE *err)
{
	const ms__opt *o = args->o;
	const char *variants[MAX_VARIANTS];
	unsigned reps;
	size_t nv;
	int rc = check_args(args, &reps, variants, &nv, err);
	if (rc || (rc = required_given(o, err)))
		return rc;
	struct stat st;
	int se = stat(o[MS__MO_FROZEN].value, &st) < 0 ? errno : 0;
	if (se || !S_ISDIR(st.st_mode)) {
		fprintf(err,
		        "mergescope merge-once: --frozen %s: %s; expected a "
		        "frozen merge directory (freeze one with f at a "
		        "barrier in the TUI, or run --freeze-at SPEC)\n",
		        o[MS__MO_FROZEN].value,
		        se ? strerror(se) : "not a directory");
		return MS_EXIT_ERROR;
	}
	enum ms_plugin_host_mode host_mode =
	        ms__plugin_host_mode(o[MS__MO_PLUGIN_HOST].value);
	char plugin_dir[4096], host_exe[4096];
	ms__plugin_dir(plugin_dir, sizeof(plugin_dir));
	ms__self_exe(host_exe, sizeof(host_exe));
	ms_merge_once_opts mo;
	memset(&mo, 0, sizeof(mo));
	mo.frozen_dir = o[MS__MO_FROZEN].value;
	mo.variants = variants;
	mo.nvariants = nv;
	mo.reps = reps;
	mo.plugin_dir = plugin_dir;
	mo.grace_policy = o[MS__MO_GRACE].value;
	mo.staging = o[MS__MO_STAGING].value;
	mo.run_clock = o[MS__MO_CLOCK].count &&
	               strcmp(o[MS__MO_CLOCK].value, "run") == 0;
	mo.plugin_host = host_mode;
	mo.plugin_host_exe = host_exe;
	/* Fresh repetitions exec this program as `__merge-once-rep`, which
	 * only the mergescope executable's main answers: a harness calling
	 * the command line in its own process (tests) runs them here, and
	 * the table says so. */
	const char *base = strrchr(host_exe, '/');
	base = base ? base + 1 : host_exe;
	mo.self_exe = strcmp(base, "mergescope") == 0 ? host_exe : NULL;
	mo.out = out;
	ms_merge_once_result *res = calloc(nv, sizeof(*res));
	if (!res)
		return ms__say_oom(err, "merge-once", nv * sizeof(*res),
		                   "the results of %zu variants", nv);
	/* A MERGESCOPE_SCRATCH that cannot be the scratch directory is
	 * refused, as by every command that makes scratch (not passed over
	 * for the cache's work/). */
	if ((rc = ms__scratch_check(err, "merge-once"))) {
		free(res);
		return rc;
	}
	char scratch[PATH_MAX];
	if ((rc = make_scratch(mo.frozen_dir, scratch, sizeof(scratch), err))) {
		free(res);
		return rc;
	}
	mo.scratch_dir = scratch;
	ms_errbuf eb = { "" };
	rc = ms_merge_once(&mo, res, &eb);
	ms_fs_rm_tree(scratch, NULL);
	bool unstable = rc == 0 && report_unstable(res, nv, err);
	free(res);
	if (rc) {
		/* The library's messages begin with the command's name. */
		const char *msg = eb.msg[0] ? eb.msg : ms_strerror(rc);
		if (!strncmp(msg, "merge-once: ", 12))
			msg += 12;
		fprintf(err, "mergescope merge-once: %s\n", msg);
		return MS_EXIT_ERROR;
	}
	return unstable ? 1 : 0;
}

const ms_cmd ms_cmd_merge_once = {
	.name = "merge-once",
	.summary =
	        "controlled single merge: --frozen DIR --variant V [--reps N]",
	.usage = usage,
	.opts = ms__merge_once_opts,
	.nopts = MS__MO_COUNT,
	.exec = exec,
};
