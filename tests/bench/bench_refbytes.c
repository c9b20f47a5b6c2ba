/*
 * bench_refbytes.c - the density of a fixture's content counted in the
 * reference's own encoding: the fixture consolidated as its density gates
 * consolidate it (ms__fx_consolidate_keep: 26 parts per day-1x unit),
 * then every consolidated core part's rows encoded as the reference's
 * trace part writer would encode them (fixtures/refenc.h, the model the
 * core_density gate counts with) and its bytes written counted, part by
 * part and file by file, beside our part payload (ms_part_payload_bytes).
 * Our figure depends on our format's compression policy; this one
 * depends only on the rows, so it says whether the generated content is
 * as dense as the reference's (tests/bench/README.md, "bench_refbytes").
 *
 * Usage: bench_refbytes [-k DIR] [-r DIR] [-z LEVEL] [-D FILE] FIXTURE
 *   FIXTURE  a built fixture (read only: its parts are linked or copied
 *            into a scratch shard under the scratch root)
 *   -k DIR   keep the consolidated parts in DIR (new) instead of a
 *            scratch directory removed at the end
 *   -r DIR   read the consolidated parts kept by an earlier -k in DIR
 *            instead of consolidating again
 *   -z LEVEL the zstd level for the reference's zstd (default 1)
 *   -D FILE  write every zstd frame's input to FILE (ms__re_zstd_dump), to
 *            compare another zstd encoder on the same frames
 */
#define _POSIX_C_SOURCE 200809L
#include "fx_int.h"
#include "ms_clock.h"
#include "ms_fixture.h"
#include "ms_fs.h"
#include "ms_part.h"
#include "refenc.h"
#include "bench_args.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

static void
die(const char *what, const ms_errbuf *eb)
{
	fprintf(stderr, "bench_refbytes: %s%s%s\n", what, eb ? ": " : "",
	        eb ? eb->msg : "");
	exit(1);
}

static void
usage(void)
{
	fputs("usage: bench_refbytes [-k DIR] [-r DIR] [-z LEVEL] [-D FILE] "
	      "FIXTURE\n",
	      stderr);
	exit(2);
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* The core part IDs under root/parts/core, ascending; their count. */
static size_t
list_kept(const char *root, uint64_t **ids)
{
	char dir[PATH_MAX];
	DIR *d;
	struct dirent *e;
	size_t n = 0, cap = 0;

	*ids = NULL;
	snprintf(dir, sizeof(dir), "%s/parts/core", root);
	if (!(d = opendir(dir)))
		die("cannot read the kept parts' directory", NULL);
	while ((e = readdir(d)) != NULL) {
		uint64_t id;

		if (!ms_part_id_parse(e->d_name, &id))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 32;
			*ids = realloc(*ids, cap * sizeof(**ids));
			if (!*ids)
				die("out of memory", NULL);
		}
		(*ids)[n++] = id;
	}
	closedir(d);
	if (n > 1) /* none read: *ids is NULL, which qsort may not take */
		qsort(*ids, n, sizeof(**ids), cmp_u64);
	return n;
}

/* A new directory for the kept parts: under the scratch root. */
static void
scratch_dir(char *buf, size_t n)
{
	char root[PATH_MAX];
	bool from_env;
	ms_errbuf eb = { { 0 } };

	if (ms_scratch_root(root, sizeof(root), &from_env, &eb) ||
	    ms_fs_mkdir_p(root, 0700, &eb))
		die("scratch root", &eb);
	if ((size_t)snprintf(buf, n, "%s/refbytes-XXXXXX", root) >= n ||
	    !mkdtemp(buf))
		die("cannot make a scratch directory", NULL);
}

static void
make_part_dirs(const char *root)
{
	static const char *const sub[] = { "parts/core", "parts/sidx/latency",
		                           "parts/sidx/start_time" };
	ms_errbuf eb = { { 0 } };

	for (int k = 0; k < 3; k++) {
		char d[PATH_MAX];

		snprintf(d, sizeof(d), "%s/%s", root, sub[k]);
		if (ms_fs_mkdir_p(d, 0755, &eb))
			die("mkdir", &eb);
	}
}

/* Encode core part `path` as the reference would; *ours its payload. */
static void
encode_part(const char *path, const fx_dict *dict, re_zstd *z,
            re_counts *out, uint64_t *ours)
{
	ms_errbuf eb = { { 0 } };

	if (ms__re_count_part(path, dict->set, z, out, ours, &eb))
		die(path, &eb);
}

static uint64_t
sum_tags(const uint64_t *a)
{
	uint64_t n = 0;

	for (int t = 0; t < RE_NTAGS; t++)
		n += a[t];
	return n;
}

static double
pct(double got, double ref)
{
	return ref > 0 ? 100.0 * (got - ref) / ref : 0;
}

static void
print_part_row(const char *name, uint64_t ours, const re_counts *c)
{
	uint64_t ref = ms__re_counts_total(c, RE_LEGACY);

	printf("%-16s %7llu %6llu %10llu %10llu %+6.2f%% %10llu %8llu %9llu "
	       "%8llu %8llu %5llu\n",
	       name, (unsigned long long)c->rows,
	       (unsigned long long)c->blocks, (unsigned long long)ours,
	       (unsigned long long)ref, pct((double)ref, (double)ours),
	       (unsigned long long)c->spans, (unsigned long long)c->span_ids,
	       (unsigned long long)sum_tags(c->tag_data),
	       (unsigned long long)sum_tags(c->tag_meta),
	       (unsigned long long)c->primary[RE_LEGACY],
	       (unsigned long long)c->meta[RE_LEGACY]);
}

static void
print_tag_row(const char *name, const re_counts *c)
{
	printf("%-16s", name);
	for (int t = 0; t < RE_NTAGS; t++)
		printf(" %9llu %7llu", (unsigned long long)c->tag_data[t],
		       (unsigned long long)c->tag_meta[t]);
	printf("\n");
}

static void
print_kinds(const re_counts *c)
{
	uint64_t total = ms__re_counts_total(c, RE_LEGACY);
	struct {
		const char *name;
		uint64_t v;
	} k[4 + 2 * RE_NTAGS];
	int n = 0;

	k[n].name = "spans.bin: span payloads";
	k[n++].v = c->spans;
	k[n].name = "spans.bin: span IDs";
	k[n++].v = c->span_ids;
	for (int t = 0; t < RE_NTAGS; t++) {
		static char names[2 * RE_NTAGS][48];

		snprintf(names[2 * t], 48, "%s.td", ms__re_tag_name[t]);
		snprintf(names[2 * t + 1], 48, "%s.tm", ms__re_tag_name[t]);
		k[n].name = names[2 * t];
		k[n++].v = c->tag_data[t];
		k[n].name = names[2 * t + 1];
		k[n++].v = c->tag_meta[t];
	}
	k[n].name = "primary.bin";
	k[n++].v = c->primary[RE_LEGACY];
	k[n].name = "meta.bin";
	k[n++].v = c->meta[RE_LEGACY];
	printf("\nreference encoding by file, all parts:\n");
	for (int i = 0; i < n; i++)
		printf("  %-28s %11llu  %5.2f%%  %7.2f B/row\n", k[i].name,
		       (unsigned long long)k[i].v,
		       total ? 100.0 * (double)k[i].v / (double)total : 0,
		       c->rows ? (double)k[i].v / (double)c->rows : 0);
	printf("  %-28s %11llu\n", "total", (unsigned long long)total);
}

int
main(int argc, char **argv)
{
	const char *keep = NULL, *reuse = NULL, *dump = NULL;
	FILE *df = NULL;
	int level = 1, opt;
	char root[PATH_MAX], path[PATH_MAX + 64];
	fx_manifest *mf = NULL;
	fx_dict dict;
	ms_errbuf eb = { { 0 } };
	uint64_t *ids = NULL, ours_total = 0, traces;
	size_t nparts;
	re_counts total;
	re_zstd *z;
	double t0, t_cons = 0;

	while ((opt = getopt(argc, argv, "k:r:z:D:")) != -1) {
		if (opt == 'k')
			keep = optarg;
		else if (opt == 'r')
			reuse = optarg;
		else if (opt == 'z')
			level = (int)bench_arg_ll(
			        optarg, ZSTD_minCLevel(), ZSTD_maxCLevel(),
			        "bench_refbytes: -z LEVEL (a zstd level)",
			        "bench_refbytes [-k DIR] [-r DIR] [-z LEVEL] "
			        "[-D FILE] FIXTURE");
		else if (opt == 'D')
			dump = optarg;
		else
			usage();
	}
	if (optind + 1 != argc || (keep && reuse))
		usage();
	const char *fixture = argv[optind];

	snprintf(path, sizeof(path), "%s/%s", fixture, MS_FIXTURE_MANIFEST);
	if (ms__fx_manifest_read(path, &mf, &eb))
		die(path, &eb);
	if (ms__fx_dict_load(fixture, mf, &dict, &eb))
		die("dictionary", &eb);
	const char *tv = ms__fx_kv_get(mf, "traces");
	traces = tv ? strtoull(tv, NULL, 10) : 0;
	double units = ms_fixture_units(traces);
	const ms_fixture_ref *ref = ms_fixture_ref_find("core_bytes");
	double ref_bytes = ref ? ms_fixture_ref_at(ref, units) : 0;

	if (reuse) {
		snprintf(root, sizeof(root), "%s", reuse);
		nparts = list_kept(root, &ids);
	} else {
		fx_consolidation c;
		unsigned nout = (unsigned)ms__fx_consolidated_parts(traces);

		if (keep) {
			snprintf(root, sizeof(root), "%s", keep);
			if (mkdir(root, 0755) != 0)
				die("-k: the directory must be new", NULL);
		} else {
			scratch_dir(root, sizeof(root));
		}
		make_part_dirs(root);
		ids = calloc(nout, sizeof(*ids));
		if (!ids)
			die("out of memory", NULL);
		t0 = ms_mono_s();
		if (ms__fx_consolidate_keep(fixture, root, &dict, mf->parts,
		                            mf->nsched, nout, 0, root, ids,
		                            false, NULL, &c, &eb))
			die("consolidation", &eb);
		t_cons = ms_mono_s() - t0;
		nparts = c.parts;
		printf("consolidated %zu raw parts into %zu in %.1f s "
		       "(gate's core payload %llu, raw parts changed %llu)\n",
		       mf->nsched, nparts, t_cons,
		       (unsigned long long)c.bytes[MS_KIND_CORE],
		       (unsigned long long)c.raw_changed);
	}

	z = ms__re_zstd_new(level);
	if (!z)
		die("out of memory", NULL);
	if (dump) {
		if (!(df = fopen(dump, "wbx")))
			die("-D: cannot create the file (it must be new)", NULL);
		ms__re_zstd_dump(z, df);
	}
	memset(&total, 0, sizeof(total));
	printf("fixture %s: %llu traces, %.3f day-1x units, %zu parts, "
	       "reference zstd: libzstd %s at level %d\n\n",
	       fixture, (unsigned long long)traces, units, nparts,
	       ZSTD_versionString(), level);
	printf("%-16s %7s %6s %10s %10s %7s %10s %8s %9s %8s %8s %5s\n",
	       "part", "rows", "blocks", "ours", "reference", "vs ours",
	       "spans", "span IDs", "tag data", "tag meta", "primary",
	       "meta");
	re_counts *per = calloc(nparts ? nparts : 1, sizeof(*per));
	if (!per)
		die("out of memory", NULL);
	t0 = ms_mono_s();
	for (size_t i = 0; i < nparts; i++) {
		char rel[64], hex[17];
		uint64_t ours;

		ms__fx_part_relpath(MS_KIND_CORE, ids[i], rel, sizeof(rel));
		snprintf(path, sizeof(path), "%s/%s", root, rel);
		encode_part(path, &dict, z, &per[i], &ours);
		ours_total += ours;
		ms__re_counts_add(&total, &per[i]);
		ms_part_id_str(ids[i], hex);
		print_part_row(hex, ours, &per[i]);
	}
	double t_enc = ms_mono_s() - t0;
	print_part_row("total", ours_total, &total);

	printf("\ntag files per part (.td data, .tm metadata):\n%-16s", "part");
	for (int t = 0; t < RE_NTAGS; t++)
		printf(" %17.17s", ms__re_tag_name[t]);
	printf("\n");
	for (size_t i = 0; i < nparts; i++) {
		char hex[17];

		ms_part_id_str(ids[i], hex);
		print_tag_row(hex, &per[i]);
	}
	print_tag_row("total", &total);
	print_kinds(&total);

	uint64_t legacy = ms__re_counts_total(&total, RE_LEGACY);
	uint64_t bounds = ms__re_counts_total(&total, RE_BOUNDS);
	printf("\nblocks %llu (traces split at 2 MiB: %llu), rows %llu; "
	       "tag columns: %llu dictionary, %llu plain; zstd frames %llu "
	       "over %llu bytes\n",
	       (unsigned long long)total.blocks,
	       (unsigned long long)total.split_traces,
	       (unsigned long long)total.rows,
	       (unsigned long long)total.dict_columns,
	       (unsigned long long)total.plain_columns,
	       (unsigned long long)ms__re_zstd_frames(z),
	       (unsigned long long)ms__re_zstd_in_bytes(z));
	printf("with the current code's block timestamp bounds: primary "
	       "%llu, meta %llu, total %llu (%+.2f%% over the shard's era)\n",
	       (unsigned long long)total.primary[RE_BOUNDS],
	       (unsigned long long)total.meta[RE_BOUNDS],
	       (unsigned long long)bounds,
	       pct((double)bounds, (double)legacy));
	printf("\nagainst the reference's %.0f core bytes at %.3f units:\n",
	       ref_bytes, units);
	printf("  ours (our part format)      %11llu  %+6.2f%%\n",
	       (unsigned long long)ours_total,
	       pct((double)ours_total, ref_bytes));
	printf("  reference encoding          %11llu  %+6.2f%%\n",
	       (unsigned long long)legacy, pct((double)legacy, ref_bytes));
	printf("  reference encoding, bounds  %11llu  %+6.2f%%\n",
	       (unsigned long long)bounds, pct((double)bounds, ref_bytes));
	const ms_fixture_ref *rr = ms_fixture_ref_find("bytes_per_row");
	double ref_row = rr ? ms_fixture_ref_at(rr, units) : 0;
	double got_row = total.rows ? (double)legacy / (double)total.rows : 0;
	printf("per row (%llu rows): reference encoding %.2f B against the "
	       "reference's %.2f B, %+.2f%%\n",
	       (unsigned long long)total.rows, got_row, ref_row,
	       pct(got_row, ref_row));
	printf("\nencoding took %.1f s\n", t_enc);

	free(per);
	if (df && (fclose(df) != 0 || ms__re_zstd_failed(z)))
		die("-D: cannot write the file", NULL);
	ms__re_zstd_free(z);
	free(ids);
	if (!keep && !reuse)
		ms_fs_rm_tree(root, NULL);
	ms__fx_dict_free(&dict);
	ms__fx_manifest_free(mf);
	return 0;
}
