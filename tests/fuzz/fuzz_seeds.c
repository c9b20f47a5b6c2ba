/*
 * fuzz_seeds.c - writes seed corpora for the two harnesses: small real core
 * and index parts packed in the fuzz input layout, sealed and resealing.
 * Usage: fuzz_seeds PART_CORPUS_DIR SIDX_CORPUS_DIR
 */
#include "fuzz_common.h"
#include "ms_sidx.h"
#include "part_testlib.h"

static void
save(const char *corpus, const char *name, const uint8_t *p, size_t n)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", corpus, name);
	FILE *fp = fopen(path, "wb");
	if (!fp || fwrite(p, 1, n, fp) != n)
		abort();
	fclose(fp);
}

int
main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: %s PART_CORPUS SIDX_CORPUS\n", argv[0]);
		return 2;
	}
	mkdir(argv[1], 0755);
	mkdir(argv[2], 0755);
	const size_t traces[] = { 0, 1, 3, 12 };
	for (size_t k = 0; k < 4; k++) {
		tl_rng r = { k + 1 };
		tl_rows t = { 0 };
		tl_shape s = { .traces = traces[k],
			       .rows_per_trace = 3,
			       .body_max = 40,
			       .tags_max = 2,
			       .tag_len = 5,
			       .tid_len = 8 };
		tl_gen(&t, &r, &s);
		char dir[256];
		snprintf(dir, sizeof(dir), "%s-seed", fz_dir());
		ms_errbuf eb;
		for (int kind = 0; kind < 3; kind++) {
			ms_part_remove_dir(dir, NULL);
			int rc = kind == 0 ? ms_part_write_rows(dir, 1, t.rows,
			                                        t.n, NULL, NULL,
			                                        &eb)
			                   : ms_sidx_write_rows(
			                             (enum ms_part_kind)kind,
			                             dir, 1, t.rows, t.n, NULL,
			                             NULL, &eb);
			if (rc) {
				fprintf(stderr, "%s\n", eb.msg);
				return 1;
			}
			for (uint8_t mode = 0; mode < 2; mode++) {
				uint8_t *in;
				size_t n = fz_pack(dir, mode, &in);
				char name[64];
				snprintf(name, sizeof(name), "seed-%d-%zu-%u",
				         kind, traces[k], mode);
				save(kind ? argv[2] : argv[1], name, in, n);
				free(in);
			}
		}
		ms_part_remove_dir(dir, NULL);
		tl_free(&t);
	}
	return 0;
}
