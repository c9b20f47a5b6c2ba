/*
 * cmd_clean.c - `mergescope clean`: list what mergescope keeps on disk
 * (run databases, frozen shards, leftovers of killed runs and fixture
 * builds) with size and age, and remove what is asked. The finding and
 * removing is scratch.c's; this file is the table and the choices.
 */
#include "cli.h"

#include <errno.h>
#include <string.h>

static const char usage[] =
        "usage: mergescope clean [--runs] [--frozen] [--older-than AGE]\n"
        "                        [--dry-run]\n"
        "\n"
        "Lists what mergescope keeps on disk, with size and age: run\n"
        "databases ($XDG_CACHE_HOME/mergescope/runs/), frozen shards, and\n"
        "leftovers of runs, freezes and fixture builds whose process is\n"
        "gone (in the scratch directory and the cache). Leftovers are\n"
        "removed (as at the start of every run); run databases and frozen\n"
        "shards only when asked. Anything a running process owns is listed\n"
        "as in use and never removed; what is not mergescope's, or whose\n"
        "owner record cannot be read, is listed as left alone. Only the\n"
        "scratch directory and the cache are looked at. Exit status 2\n"
        "when something could not be removed (each named on standard\n"
        "error with the system's reason), 64 for a usage error.\n"
        "\n"
        "  --runs            also remove run databases\n"
        "  --frozen          also remove frozen shards\n"
        "  --older-than AGE  remove only what is older than AGE\n"
        "                    (90s, 30m, 12h, 7d; 0 to 100000d)\n"
        "  --dry-run         remove nothing; say what would be removed\n"
        "\n"
        "environment:\n"
        "  MERGESCOPE_SCRATCH  the scratch directory, an absolute path\n"
        "                      (default /dev/shm/mergescope-<uid>)\n"
        "  XDG_CACHE_HOME      the cache is $XDG_CACHE_HOME/mergescope\n"
        "                      (default ~/.cache/mergescope)\n";

struct clean {
	FILE *out, *err;
	bool runs, frozen, dry;
	int64_t older_s; /* 0 = any age */
	unsigned listed, removed, failed, in_use, other;
	uint64_t bytes_listed, bytes_removed;
};

/* The largest --older-than: 100000 days (about 273 years). */
#define MAX_AGE_DAYS 100000

/* AGE: a duration (ms__parse_duration: 90, 30m, 1.5h, 7d) up to
 * MAX_AGE_DAYS; 0 means any age. Into *s, whole seconds (a fraction of a
 * second rounds up, so that "older than 0.5s" is not "any age"). */
static bool
parse_age(const char *v, int64_t *s)
{
	int64_t ns;
	if (!ms__parse_duration(v, (int64_t)MAX_AGE_DAYS * 86400, &ns))
		return false;
	*s = ns / 1000000000 + (ns % 1000000000 != 0);
	return true;
}

static void
fmt_age(char *buf, size_t n, int64_t s)
{
	if (s < 120)
		snprintf(buf, n, "%llds", (long long)s);
	else if (s < 7200)
		snprintf(buf, n, "%lldm", (long long)(s / 60));
	else if (s < 2 * 86400)
		snprintf(buf, n, "%lldh", (long long)(s / 3600));
	else
		snprintf(buf, n, "%lldd", (long long)(s / 86400));
}

static int
one(void *arg, const ms__scratch_item *it)
{
	struct clean *c = arg;
	bool wanted = it->kind == MS__IT_LEFTOVER ||
	              (it->kind == MS__IT_RUN && c->runs) ||
	              (it->kind == MS__IT_FROZEN && c->frozen);
	bool old_enough = c->older_s == 0 || it->age_s >= c->older_s;
	const char *action = "kept";
	if (it->kind == MS__IT_OTHER) {
		/* Not ours, or whose cannot be told: never touched. Why is
		 * said for an owner record that cannot be read. */
		action = "left alone";
		c->other++;
		if (strcmp(it->what, "not recognised") != 0)
			fprintf(c->err, "mergescope clean: left alone %s: %s\n",
			        it->path, it->why);
	} else if (it->in_use) {
		action = "in use";
		c->in_use++;
	} else if (wanted && old_enough) {
		if (c->dry) {
			action = "would remove";
		} else if (ms__scratch_remove(it) == 0) {
			action = "removed";
		} else {
			/* The path and the system's reason, so what is in the
			 * way can be dealt with (ms__scratch_remove leaves
			 * errno as the failing call set it). */
			int e = errno;
			fprintf(c->err,
			        "mergescope clean: cannot remove %s: %s\n",
			        it->path, e ? strerror(e) : "unknown error");
			action = "cannot remove";
			c->failed++;
		}
		if (strcmp(action, "cannot remove") != 0) {
			c->removed++;
			c->bytes_removed += it->fresh_bytes;
		}
	}
	char size[32], age[32];
	ms_fmt_bytes(size, sizeof(size), it->bytes);
	fmt_age(age, sizeof(age), it->age_s);
	fprintf(c->out, "%-18s %8s %6s  %-13s %s\n", it->what, size, age,
	        action, it->path);
	c->listed++;
	c->bytes_listed += it->fresh_bytes;
	return 0;
}

static int
exec(const ms__cmd_args *args, FILE *out, FILE *err)
{
	const ms__opt *o = args->o;
	struct clean c = {
		.out = out,
		.err = err,
		.runs = o[MS__CL_RUNS].count > 0,
		.frozen = o[MS__CL_FROZEN].count > 0,
		.dry = o[MS__CL_DRY].count > 0,
	};
	if (o[MS__CL_OLDER].count &&
	    !parse_age(o[MS__CL_OLDER].value, &c.older_s)) {
		fprintf(err,
		        "mergescope clean: --older-than \"%s\": expected an "
		        "age, a number with a unit s, m, h or d, like 90s, "
		        "30m, 12h or 7d (0 to %dd)\n",
		        o[MS__CL_OLDER].value, MAX_AGE_DAYS);
		return MS_EXIT_USAGE;
	}
	int rc = ms__scratch_check(err, "clean");
	if (rc)
		return rc;
	ms_errbuf eb = { { 0 } };
	fprintf(out, "%-18s %8s %6s  %-13s %s\n", "what", "size", "age",
	        "action", "path");
	if (ms__scratch_each(one, &c, true, &eb)) {
		fprintf(err, "mergescope clean: %s\n", eb.msg);
		return MS_EXIT_ERROR;
	}
	char listed[32], removed[32];
	ms_fmt_bytes(listed, sizeof(listed), c.bytes_listed);
	ms_fmt_bytes(removed, sizeof(removed), c.bytes_removed);
	fprintf(out, "%u item%s, %s; %s %u, %s%s\n", c.listed,
	        c.listed == 1 ? "" : "s", listed,
	        c.dry ? "would remove" : "removed", c.removed, removed,
	        c.failed ? " (some could not be removed)" : "");
	if (c.in_use || c.other)
		fprintf(out,
		        "left alone: %u in use by a running process, %u not "
		        "recognised as mergescope's\n",
		        c.in_use, c.other);
	if (c.failed)
		fprintf(err,
		        "mergescope clean: %u item%s could not be removed "
		        "(each named above)\n",
		        c.failed, c.failed == 1 ? "" : "s");
	return c.failed ? MS_EXIT_ERROR : 0;
}

const ms_cmd ms_cmd_clean = {
	.name = "clean",
	.summary = "list and remove run databases, frozen shards, leftovers",
	.usage = usage,
	.opts = ms__clean_opts,
	.nopts = MS__CL_COUNT,
	.exec = exec,
};
