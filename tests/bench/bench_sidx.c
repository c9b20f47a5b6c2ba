/*
 * bench_sidx.c - what an index part's columns cost: bytes per column as
 * stored (each column its own piece, part format 4) and the time to
 * compress and decompress the chunks that way, side by side with the
 * whole uncompressed payload as one zstd frame at level 3 (how format 3
 * stored a chunk).
 *
 * Reads index part files (latency or start_time, format 4), e.g. the 26
 * consolidated parts that `mergescope fixture build --opening warm` keeps
 * as the warm opening. For each chunk it takes the pieces as written and
 * inflates them back into the payload; then, per repetition and in
 * alternating order, compresses and decompresses every chunk both ways
 * from memory. Prints per column the rows' raw and stored bytes and the
 * medians of the two ways' times and bytes. Then it reads the parts as the
 * part checker does, alternating which goes first: every row through
 * ms_sidx_iter_next, and the ledger of each part (ms_ledger_of_part),
 * and prints the medians of both in thread CPU time. Last, it merges the
 * parts into one (ms_sidx_merge, no pruning, the output under TMPDIR and
 * removed) REPS times and prints the least and the median thread CPU,
 * and the merged part's size and XXH64 (the same in every repetition, or
 * the run fails): two builds whose index merges must write the same bytes
 * print the same hash.
 *
 * Usage: bench_sidx [-r REPS] PART...     (REPS default 7)
 */
#define _POSIX_C_SOURCE 200809L
#include "bench_args.h"
#include "bench_pieces.h"
#include "bench_stats.h"
#include "ms_clock.h"
#include "ms_ledger.h"
#include "ms_part.h"
#include "ms_rusage.h"
#include "ms_sidx.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>
#include <zstd.h>

#define NCOL 8
static const char *const col_name[NCOL] = { "series",   "key",      "id length",
	                                    "trace ID", "instance", "endpoint",
	                                    "other",    "tags" };

/* One chunk's payload, uncompressed, cut into its columns. */
typedef struct chunk {
	uint8_t *raw;
	size_t len, end[NCOL];
} chunk;

typedef struct set {
	chunk *c;
	size_t n, cap, max_raw;
	uint64_t rows, file_bytes;
	uint64_t col_raw[NCOL], col_stored[NCOL];
} set;

static void
die(const char *what)
{
	fprintf(stderr, "bench_sidx: %s\n", what);
	exit(1);
}

static uint32_t
le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static uint64_t
le64(const uint8_t *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

/* The pieces of one chunk payload z (stored bytes) into a new chunk. */
static void
add_chunk(set *s, const uint8_t *z, size_t stored, size_t raw)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 64;
		s->c = realloc(s->c, s->cap * sizeof(chunk));
		if (!s->c)
			die("out of memory");
	}
	chunk *c = &s->c[s->n++];
	c->raw = malloc(raw ? raw : 1);
	c->len = 0;
	if (!c->raw)
		die("out of memory");
	size_t o = 0;
	for (int k = 0; k < NCOL; k++) {
		size_t o0 = o, size;
		uint8_t codec;
		if (!bench_piece(z, stored, &o, &codec, &size))
			die("chunk payload cut short");
		size_t n = size;
		if (codec == 1) {
			n = ZSTD_decompress(c->raw + c->len, raw - c->len,
			                    z + o, size);
			if (ZSTD_isError(n))
				die("piece does not inflate");
		} else if (size > raw - c->len) {
			die("piece longer than the payload");
		} else {
			memcpy(c->raw + c->len, z + o, size);
		}
		s->col_raw[k] += n;
		c->len += n;
		c->end[k] = c->len;
		o += size;
		s->col_stored[k] += o - o0; /* codec, size and bytes */
	}
	if (c->len != raw || o != stored)
		die("pieces do not make up the payload");
	if (raw > s->max_raw)
		s->max_raw = raw;
}

/* Every chunk of index part file `path`. */
static void
add_part(set *s, const char *path)
{
	ms_part *p;
	ms_errbuf eb = { "" };
	if (ms_part_open(&p, path, NULL, &eb))
		die(eb.msg);
	enum ms_part_kind kind = ms_part_kind_of(p);
	s->rows += ms_part_get_meta(p)->rows;
	ms_part_close(p);
	if (kind == MS_KIND_CORE)
		die("a core part; give index parts");
	FILE *f = fopen(path, "rb");
	if (!f || fseek(f, 0, SEEK_END) != 0)
		die(path);
	long size = ftell(f);
	uint8_t *b = malloc((size_t)size);
	rewind(f);
	if (!b || fread(b, 1, (size_t)size, f) != (size_t)size)
		die(path);
	fclose(f);
	s->file_bytes += (uint64_t)size;
	/* data_bytes: footer offset 96 (core/FORMAT.md, "Footer"). */
	uint64_t data = le64(b + size - 160 + 96);
	for (uint64_t off = 0; off + 32 <= data;) {
		size_t stored = le32(b + off + 8), raw = le32(b + off + 12);
		add_chunk(s, b + off + 32, stored, raw);
		off += 32 + stored;
	}
	free(b);
}

/* Compress every chunk (by piece at level 1 from 128 bytes, or whole at
 * level 3) and decompress it again; bytes into *bytes, ns returned. */
static int64_t
run(const set *s, bool pieces, uint64_t *bytes, ZSTD_CCtx *cc, ZSTD_DCtx *dc,
    uint8_t *z, size_t zcap, uint8_t *back)
{
	uint64_t total = 0;
	int64_t t0 = ms_mono_ns();
	for (size_t i = 0; i < s->n; i++) {
		const chunk *c = &s->c[i];
		size_t at = 0;
		for (int k = 0; k < (pieces ? NCOL : 1); k++) {
			size_t end = pieces ? c->end[k] : c->len;
			size_t n = end - at;
			if (pieces && n < 128) {
				total += 2 + n;
				at = end;
				continue;
			}
			size_t zn = ZSTD_compressCCtx(cc, z, zcap, c->raw + at,
			                              n, pieces ? 1 : 3);
			if (ZSTD_isError(zn) ||
			    ZSTD_decompressDCtx(dc, back, n, z, zn) != n)
				die("zstd round trip");
			total += zn + 1 + (pieces ? 2 : 0);
			at = end;
		}
	}
	*bytes = total;
	return ms_mono_ns() - t0;
}

/* Read every part once: its rows (ledger false) or its ledger; thread
 * CPU ns returned, rows read into *rows. */
static int64_t
read_parts(ms_part *const *parts, int n, bool ledger, uint64_t *rows)
{
	ms_errbuf eb = { "" };
	uint64_t k = 0;
	int64_t t0 = ms_rusage_thread_cpu_ns();
	for (int i = 0; i < n; i++) {
		if (ledger) {
			ms_ledger l;
			if (ms_ledger_of_part(parts[i], &l, NULL, &eb))
				die(eb.msg);
			k += l.rows;
			continue;
		}
		ms_sidx_iter *it;
		const ms_sidx_row *r;
		int rc = ms_sidx_iter_open(&it, parts[i], NULL, NULL, &eb);
		if (rc == 0)
			while ((rc = ms_sidx_iter_next(it, &r, &eb)) == 1)
				k++;
		ms_sidx_iter_close(it);
		if (rc < 0)
			die(eb.msg);
	}
	*rows = k;
	return ms_rusage_thread_cpu_ns() - t0;
}

/* The XXH64 of the file at path; *bytes its size. */
static uint64_t
file_xxh64(const char *path, uint64_t *bytes)
{
	FILE *fp = fopen(path, "rb");
	if (!fp || fseek(fp, 0, SEEK_END) != 0)
		die("merged part: cannot read it");
	long n = ftell(fp);
	uint8_t *b = n >= 0 ? malloc((size_t)n + 1) : NULL;
	if (!b || fseek(fp, 0, SEEK_SET) != 0 ||
	    fread(b, 1, (size_t)n, fp) != (size_t)n)
		die("merged part: cannot read it");
	fclose(fp);
	uint64_t h = XXH64(b, (size_t)n, 0);
	free(b);
	*bytes = (uint64_t)n;
	return h;
}

/* Merge the parts into one part under TMPDIR with the zstd contexts zc,
 * kept from one merge to the next as a merge worker keeps its own;
 * thread CPU ns returned, the output's XXH64 and size into *xxh and
 * *bytes. */
static int64_t
merge_parts(ms_part *const *parts, int n, const char *out, ms_zctx *zc,
            uint64_t *xxh, uint64_t *bytes)
{
	ms_errbuf eb = { "" };
	ms_part_writer_opts o = { .no_sync = true, .zctx = zc };
	ms_part_meta m;
	int64_t t0 = ms_rusage_thread_cpu_ns();
	if (ms_sidx_merge(ms_part_kind_of(parts[0]),
	                  (const ms_part *const *)parts, (size_t)n, NULL, NULL,
	                  out, 1, &o, &m, NULL, &eb))
		die(eb.msg);
	int64_t ns = ms_rusage_thread_cpu_ns() - t0;
	*xxh = file_xxh64(out, bytes);
	if (ms_part_remove_dir(out, &eb))
		die(eb.msg);
	return ns;
}

int
main(int argc, char **argv)
{
	static const char usage[] = "bench_sidx [-r REPS 1..1000] PART...";
	int reps = 7, a = 1;
	if (argc > 2 && strcmp(argv[1], "-r") == 0) {
		reps = (int)bench_arg_ll(argv[2], 1, 1000, "bench_sidx: REPS",
		                         usage);
		a = 3;
	}
	if (a >= argc || argv[a][0] == '-')
		bench_usage(usage);
	set s = { 0 };
	int nparts = argc - a;
	ms_part **parts = calloc((size_t)nparts, sizeof(*parts));
	if (!parts)
		die("out of memory");
	for (int i = 0; a < argc; a++, i++) {
		ms_errbuf eb = { "" };
		add_part(&s, argv[a]);
		if (ms_part_open(&parts[i], argv[a], NULL, &eb))
			die(eb.msg);
	}
	size_t zcap = ZSTD_compressBound(s.max_raw);
	uint8_t *z = malloc(zcap), *back = malloc(s.max_raw + 1);
	ZSTD_CCtx *cc = ZSTD_createCCtx();
	ZSTD_DCtx *dc = ZSTD_createDCtx();
	double *tp = calloc((size_t)reps, sizeof(double));
	double *tw = calloc((size_t)reps, sizeof(double));
	if (!z || !back || !cc || !dc || !tp || !tw)
		die("out of memory");
	uint64_t bp = 0, bw = 0;
	for (int r = 0; r < reps; r++) {
		bool pieces_first = r % 2 == 0;
		for (int w = 0; w < 2; w++) {
			bool pieces = pieces_first == (w == 0);
			int64_t ns = run(&s, pieces, pieces ? &bp : &bw, cc, dc,
			                 z, zcap, back);
			(pieces ? tp : tw)[r] = (double)ns / 1e6;
		}
	}
	printf("%llu rows in %zu chunks, %llu file bytes\n",
	       (unsigned long long)s.rows, s.n,
	       (unsigned long long)s.file_bytes);
	printf("%-10s %12s %12s %10s\n", "column", "raw bytes", "stored",
	       "stored/row");
	uint64_t tr = 0, ts = 0;
	for (int k = 0; k < NCOL; k++) {
		printf("%-10s %12llu %12llu %10.2f\n", col_name[k],
		       (unsigned long long)s.col_raw[k],
		       (unsigned long long)s.col_stored[k],
		       s.rows ? (double)s.col_stored[k] / (double)s.rows : 0);
		tr += s.col_raw[k];
		ts += s.col_stored[k];
	}
	printf("%-10s %12llu %12llu\n", "all", (unsigned long long)tr,
	       (unsigned long long)ts);
	printf("compress+decompress, median of %d: by column at level 1 "
	       "%.1f ms (%llu bytes); whole payload at level 3 %.1f ms "
	       "(%llu bytes)\n",
	       reps, bench_median_d(tp, reps), (unsigned long long)bp,
	       bench_median_d(tw, reps), (unsigned long long)bw);
	uint64_t ri = 0, rl = 0;
	for (int r = 0; r < reps; r++) {
		bool iter_first = r % 2 == 0;
		for (int w = 0; w < 2; w++) {
			bool ledger = iter_first == (w == 1);
			int64_t ns =
			        read_parts(parts, nparts, ledger, ledger ? &rl : &ri);
			(ledger ? tw : tp)[r] = (double)ns / 1e6;
		}
	}
	double mi = bench_median_d(tp, reps), ml = bench_median_d(tw, reps);
	printf("reading, median of %d (thread CPU): rows through "
	       "ms_sidx_iter_next %.1f ms (%.0f ns/row); ledgers "
	       "(ms_ledger_of_part) %.1f ms (%.0f ns/row)\n",
	       reps, mi, ri ? mi * 1e6 / (double)ri : 0, ml,
	       rl ? ml * 1e6 / (double)rl : 0);
	const char *tmp = getenv("TMPDIR");
	char out[4096];
	snprintf(out, sizeof(out), "%s/bench_sidx-merge-%ld",
	         tmp && *tmp ? tmp : "/tmp", (long)getpid());
	uint64_t xxh = 0, mbytes = 0;
	ms_zctx *zc = NULL;
	if (ms_zctx_new(&zc, NULL, NULL))
		die("out of memory for zstd contexts");
	for (int r = 0; r < reps; r++) {
		uint64_t x, b;
		tp[r] = (double)merge_parts(parts, nparts, out, zc, &x, &b) /
		        1e6;
		if (r && (x != xxh || b != mbytes))
			die("the merged parts of two repetitions differ");
		xxh = x;
		mbytes = b;
	}
	double least = tp[0];
	for (int r = 1; r < reps; r++)
		least = tp[r] < least ? tp[r] : least;
	printf("merging the %d parts into one (ms_sidx_merge), %d times "
	       "(thread CPU): least %.1f ms, median %.1f ms\n",
	       nparts, reps, least, bench_median_d(tp, reps));
	printf("merged part: %llu bytes, XXH64 %016llx\n",
	       (unsigned long long)mbytes, (unsigned long long)xxh);
	ms_zctx_free(zc);
	for (int i = 0; i < nparts; i++)
		ms_part_close(parts[i]);
	free(parts);
	for (size_t i = 0; i < s.n; i++)
		free(s.c[i].raw);
	free(s.c);
	free(z);
	free(back);
	free(tp);
	free(tw);
	ZSTD_freeCCtx(cc);
	ZSTD_freeDCtx(dc);
	return 0;
}
