/*
 * fuzz_seeds.c - writes seed corpora for the two harnesses: small real core
 * and index parts packed in the fuzz input layout, sealed and resealing.
 * Usage: fuzz_seeds PART_CORPUS_DIR SIDX_CORPUS_DIR
 */
#include "fuzz_common.h"
#include "fuzz_usage.h"
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

/* The raw-units form of a core part: footer, then block specs. */
static size_t
pack_raw(const char *dir, uint8_t **out)
{
	uint8_t *packed;
	size_t n = fz_pack(dir, 0, &packed);
	size_t lm = fz_le16(packed + 1), li = fz_le16(packed + 3),
	       lb = fz_le16(packed + 5);
	const uint8_t *meta = packed + 7, *data = meta + lm + li + lb;
	size_t dn = n - 7 - lm - li - lb;
	uint8_t *o = malloc(7 + lm + dn * 40 + 4096);
	size_t k = 7;
	o[0] = 0x40;
	o[1] = (uint8_t)lm;
	o[2] = (uint8_t)(lm >> 8);
	memset(o + 3, 0, 4);
	memcpy(o + k, meta, lm);
	k += lm;
	for (size_t off = 0; off + MS__BLOCK_HDR <= dn;) {
		const uint8_t *h = data + off;
		uint32_t sa = ms_le32(h + 12), ra = ms_le32(h + 16);
		uint32_t sb = ms_le32(h + 20), rb = ms_le32(h + 24);
		memcpy(o + k, h, MS__BLOCK_HDR);
		k += MS__BLOCK_HDR;
		o[k++] = (uint8_t)ra;
		o[k++] = (uint8_t)(ra >> 8);
		if (ZSTD_decompress(o + k, ra, h + MS__BLOCK_HDR, sa) != ra)
			abort();
		k += ra;
		o[k++] = (uint8_t)rb;
		o[k++] = (uint8_t)(rb >> 8);
		if (ZSTD_decompress(o + k, rb, h + MS__BLOCK_HDR + sa, sb) !=
		    rb)
			abort();
		k += rb;
		off += MS__BLOCK_HDR + sa + sb;
	}
	free(packed);
	*out = o;
	return k;
}

int
main(int argc, char **argv)
{
	if (!fuzz_usage_ok(argc, argv, 2, "PART_CORPUS SIDX_CORPUS"))
		return 2;
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
			/* 0, reseal, and (core) the two-pass read. */
			static const uint8_t modes[3] = { 0, 1, 0x80 };
			for (int m = 0; m < (kind ? 2 : 3); m++) {
				uint8_t mode = modes[m];
				uint8_t *in;
				size_t n = fz_pack(dir, mode, &in);
				char name[64];
				snprintf(name, sizeof(name), "seed-%d-%zu-%u",
				         kind, traces[k], mode);
				save(kind ? argv[2] : argv[1], name, in, n);
				free(in);
			}
			if (kind == 0 && traces[k]) {
				uint8_t *in;
				size_t n = pack_raw(dir, &in);
				char name[64];
				snprintf(name, sizeof(name), "seed-raw-%zu",
				         traces[k]);
				save(argv[1], name, in, n);
				free(in);
			}
		}
		ms_part_remove_dir(dir, NULL);
		tl_free(&t);
	}
	return 0;
}
