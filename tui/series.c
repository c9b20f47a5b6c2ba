/*
 * series.c - the run databases of one or more bench series directories
 * (rep<R>-v<I>-<variant>.db), loaded and checked against one another:
 * what `bench` summarises after its runs, `bench --collect DIR` and
 * `report --collect DIR...` (many directories, e.g. one per host of a
 * GNU parallel or Slurm series).
 */
#include "series.h"

#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int
cmp_run(const void *a, const void *b)
{
	const ms_bench_run *x = a, *y = b;
	if (x->rep != y->rep)
		return x->rep < y->rep ? -1 : 1;
	return (x->variant > y->variant) - (x->variant < y->variant);
}

/* Plain decimal digits at *p that fit an unsigned, then `stop`: the
 * number, *p moved past stop; false otherwise. sscanf's %u would take
 * a sign, blanks and any length. */
static bool
plain_unsigned(const char **p, char stop, unsigned *out)
{
	const char *s = *p;
	unsigned long long v = 0;
	if (*s < '0' || *s > '9')
		return false;
	for (; *s >= '0' && *s <= '9'; s++)
		if ((v = v * 10 + (unsigned)(*s - '0')) > UINT_MAX)
			return false;
	if (*s != stop)
		return false;
	*out = (unsigned)v;
	*p = s + 1;
	return true;
}

bool
ms__series_name(const char *name, unsigned *rep, unsigned *vi)
{
	size_t len = strlen(name);
	const char *p = name + 3;
	return strncmp(name, "rep", 3) == 0 && plain_unsigned(&p, '-', rep) &&
	       *p++ == 'v' && plain_unsigned(&p, '-', vi) &&
	       (size_t)(p - name) + 3 <= len &&
	       strcmp(name + len - 3, ".db") == 0 &&
	       *vi < MS__SERIES_VARIANTS_MAX;
}

/* Append the databases of dir (directory index di). */
static int
scan(ms__series *s, const char *dir, size_t di, const char *cmd, FILE *err)
{
	DIR *d = opendir(dir);
	if (!d) {
		fprintf(err, "mergescope %s: --collect %s: %s\n", cmd, dir,
		        strerror(errno));
		return MS_EXIT_ERROR;
	}
	size_t first = s->n;
	struct dirent *e;
	while ((e = readdir(d))) {
		unsigned rep, vi;
		/* A run's database, or its output without a database (the
		 * run ended before making one): both are runs of the
		 * series, the second one left out with its last line. Both
		 * are named as the database would be. */
		size_t len = strlen(e->d_name);
		bool is_db =
		        len >= 3 && strcmp(e->d_name + len - 3, ".db") == 0;
		bool is_log =
		        len >= 4 && strcmp(e->d_name + len - 4, ".log") == 0;
		if (!is_db && !is_log)
			continue;
		char dbname[NAME_MAX + 1];
		if (snprintf(dbname, sizeof(dbname), "%.*s.db",
		             (int)(len - (is_db ? 3 : 4)),
		             e->d_name) >= (int)sizeof(dbname) ||
		    !ms__series_name(dbname, &rep, &vi))
			continue;
		char db[sizeof(s->runs->db)];
		snprintf(db, sizeof(db), "%s/%s", dir, dbname);
		if (is_log && access(db, F_OK) == 0)
			continue;
		if (s->n == s->cap) {
			size_t nc = s->cap ? s->cap * 2 : 16;
			ms_bench_run *nr = realloc(s->runs, nc * sizeof(*nr));
			size_t *no = realloc(s->dir_of, nc * sizeof(*no));
			if (nr)
				s->runs = nr;
			if (no)
				s->dir_of = no;
			if (!nr || !no) {
				closedir(d);
				fprintf(err,
				        "mergescope %s: --collect %s: out of "
				        "memory for "
				        "the list of %zu runs (%zu bytes)\n",
				        cmd, dir, nc,
				        nc * (nr ? sizeof(*no) : sizeof(*nr)));
				return MS_EXIT_ERROR;
			}
			s->cap = nc;
		}
		ms_bench_run *r = &s->runs[s->n];
		memset(r, 0, sizeof(*r));
		snprintf(r->db, sizeof(r->db), "%s", db);
		r->rep = rep;
		r->variant = vi;
		s->dir_of[s->n++] = di;
	}
	closedir(d);
	if (s->n == first) {
		fprintf(err,
		        "mergescope %s: --collect %s: no runs (rep*-v*-*.db "
		        "or rep*-v*-*.log)\n",
		        cmd, dir);
		return MS_EXIT_ERROR;
	}
	/* Sorted within the directory; directories stay in order. */
	ms_bench_run *runs = s->runs + first;
	size_t k = s->n - first;
	qsort(runs, k, sizeof(*runs), cmp_run);
	return 0;
}

/* A run whose database is missing: left out, with the last line of its
 * output (the .log beside where the database would be) as the reason. */
static void
no_database(ms_bench_run *r)
{
	char log[sizeof(r->db) + 8];
	size_t n = strlen(r->db);
	snprintf(log, sizeof(log), "%.*s.log", (int)(n - 3), r->db);
	char last[256] = "", line[256];
	FILE *f = fopen(log, "r");
	while (f && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (line[0])
			snprintf(last, sizeof(last), "%s", line);
	}
	if (f)
		fclose(f);
	memset(r->m, 0, sizeof(r->m));
	r->valid = false;
	snprintf(r->why, sizeof(r->why),
	         "no event database: the run ended before making it (%s: "
	         "\"%s\")",
	         log, last[0] ? last : "no output");
}

/* A run with no label of its own (no readable run record) takes the
 * label of a run of the same directory and variant file index, so it is
 * counted under its variant rather than as a variant "?". */
static void
label_from_siblings(ms__series *s)
{
	for (size_t i = 0; i < s->n; i++) {
		ms_bench_run *r = &s->runs[i];
		for (size_t j = 0; j < s->n && !r->label[0]; j++)
			if (s->dir_of[j] == s->dir_of[i] &&
			    s->runs[j].variant == r->variant &&
			    s->runs[j].label[0])
				snprintf(r->label, sizeof(r->label), "%s",
				         s->runs[j].label);
	}
}

/* Number the variants by their run records' labels, in order of first
 * appearance: the same variant has the same index in every directory. */
static int
number_by_label(ms__series *s, const char *cmd, FILE *err)
{
	s->nv = 0;
	for (size_t i = 0; i < s->n; i++) {
		ms_bench_run *r = &s->runs[i];
		const char *l = r->label[0] ? r->label : "?";
		size_t v = 0;
		while (v < s->nv && strcmp(s->labels[v], l) != 0)
			v++;
		if (v == s->nv) {
			if (s->nv == MS__SERIES_VARIANTS_MAX) {
				fprintf(err,
				        "mergescope %s: more than %d variants "
				        "in the series (%s is one too many)\n",
				        cmd, MS__SERIES_VARIANTS_MAX, r->db);
				return MS_EXIT_ERROR;
			}
			s->labels[s->nv++] = l;
		}
		r->variant = (unsigned)v;
	}
	return 0;
}

/*
 * Directories of different conditions are not combined: a directory
 * whose every readable run differs from the series' reference run (of
 * the conditions most runs share) is refused, naming the difference.
 */
static int
refuse_mixed(const ms__series *s, const bool *loaded, size_t ndirs,
             const char *const *dirs, const char *cmd, FILE *err)
{
	for (size_t d = 0; d < ndirs && ndirs > 1; d++) {
		size_t readable = 0, valid = 0;
		const char *why = NULL;
		for (size_t i = 0; i < s->n; i++) {
			if (s->dir_of[i] != d || !loaded[i])
				continue;
			readable++;
			valid += s->runs[i].valid;
			if (!s->runs[i].valid && !why)
				why = s->runs[i].why;
		}
		if (readable && !valid) {
			fprintf(err,
			        "mergescope %s: --collect %s: no run of it "
			        "matches the conditions most runs of the "
			        "series "
			        "share (%s); series of different conditions "
			        "are "
			        "not combined\n",
			        cmd, dirs[d], why ? why : "?");
			return MS_EXIT_ERROR;
		}
	}
	return 0;
}

int
ms__series_load(ms__series *s, const char *const *dirs, size_t ndirs,
                const char *const *labels, size_t nv, const char *cmd,
                FILE *err)
{
	memset(s, 0, sizeof(*s));
	for (size_t d = 0; d < ndirs; d++) {
		int rc = scan(s, dirs[d], d, cmd, err);
		if (rc)
			return rc;
	}
	bool *loaded = calloc(s->n, sizeof(*loaded));
	if (!loaded) {
		fprintf(err,
		        "mergescope %s: out of memory for the marks of %zu "
		        "runs (%zu bytes)\n",
		        cmd, s->n, s->n * sizeof(*loaded));
		return MS_EXIT_ERROR;
	}
	ms_errbuf eb = { "" };
	int rc = 0;
	for (size_t i = 0; i < s->n && rc == 0; i++) {
		if (access(s->runs[i].db, F_OK) != 0 && errno == ENOENT)
			no_database(&s->runs[i]);
		else
			rc = ms_bench_load(&s->runs[i], &eb);
		loaded[i] = s->runs[i].valid;
	}
	if (rc) {
		fprintf(err, "mergescope %s: %s\n", cmd,
		        eb.msg[0] ? eb.msg : ms_strerror(rc));
		free(loaded);
		return MS_EXIT_ERROR;
	}
	if (labels) {
		s->nv = nv;
		for (size_t v = 0; v < nv; v++)
			s->labels[v] = labels[v];
	} else {
		label_from_siblings(s);
		if ((rc = number_by_label(s, cmd, err))) {
			free(loaded);
			return rc;
		}
	}
	ms_bench_validate(s->runs, s->n);
	rc = refuse_mixed(s, loaded, ndirs, dirs, cmd, err);
	free(loaded);
	return rc;
}

int
ms__series_check_variants(const ms__series *s, const char *cmd, FILE *err)
{
	int v = ms_bench_empty_variant(s->runs, s->n, s->nv);
	if (v < 0)
		return 0;
	fprintf(err,
	        "mergescope %s: variant %s has no valid run, so no figures "
	        "(each run left out is listed with its reason)\n",
	        cmd, s->labels[v] ? s->labels[v] : "?");
	return 1;
}

void
ms__series_free(ms__series *s)
{
	free(s->runs);
	free(s->dir_of);
	memset(s, 0, sizeof(*s));
}
