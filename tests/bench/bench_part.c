/*
 * bench_part.c - part write and read throughput against plain zstd on the
 * same bytes, in the same run, at the same level.
 *
 * Rows are shaped like production spans: about 500 uncompressed span bytes
 * per row (a ~330-byte JSON-like body that zstd halves, plus IDs, names and
 * three tags), about 4 rows per trace. Each repetition writes a whole part
 * (ms_part_write_rows: sort, encode, compress, checksum, write, fsync) and
 * reads it back decoding every column; the baseline compresses the same
 * span bytes, laid out flat, with ZSTD_compress and decompresses them with
 * ZSTD_decompress, first in every other repetition. Rates are
 * uncompressed span bytes per second. Five repetitions by default;
 * medians are printed, and the ratio column is the median of the
 * per-repetition ratios (each from back-to-back runs, which keeps them
 * steadier than the rates on a busy machine).
 *
 * Usage: bench_part [traces] [dir] [reps]
 *        (defaults 25000, /dev/shm or /tmp, 5 repetitions; at most 101)
 */
#include "ms_clock.h"
#include "part_testlib.h"
#include "bench_args.h"
#include "bench_stats.h"

#include <time.h>
#include <zstd.h>

#define REPS_MAX 101

/* Thread CPU seconds: steadier than wall time on a shared machine. */
static double
cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int reps = 5;

static double
median(double *v)
{
	return bench_median_d(v, reps);
}

static const char *const words[] = {
	"\"status\"",      "\"ok\"",   "\"db.statement\"", "\"SELECT\"",
	"\"http.method\"", "\"GET\"",  "\"peer\"",         "\"10.2.3.4:8080\"",
	"\"component\"",   "\"grpc\"", "\"layer\"",        "\"Http\"",
	"\"logs\"",        "[]",       "\"refs\"",         "\"parent\"",
};

/* Generate rows: a JSON-like body of ~330 bytes with random numbers and
 * hex IDs mixed in, so zstd gets roughly 2:1. */
static void
gen_rows(tl_rows *t, size_t traces)
{
	tl_rng r = { 42 };
	static const char *svc[] = {
		"frontend", "checkout",  "cart", "payment",
		"shipping", "recommend", "ad",   "currency"
	};
	for (size_t k = 0; k < traces; k++) {
		uint8_t *tid = tl_keep(t, malloc(16));
		for (int i = 0; i < 16; i++)
			tid[i] = (uint8_t)tl_next(&r);
		size_t nr = 2 + tl_below(&r, 5); /* 2..6, mean 4 */
		int64_t base = 1700000000000000000ll +
		               (int64_t)tl_below(&r, 86400000000000ull);
		for (size_t i = 0; i < nr; i++) {
			ms_row *row = tl_add(t);
			row->trace_id = tid;
			row->trace_id_len = 16;
			row->span_id = tl_next(&r);
			row->segment_id = tl_str(t, &r, 24, "");
			row->service = svc[tl_below(&r, 8)];
			char *inst = tl_keep(t, malloc(32));
			snprintf(inst, 32, "%s-%u", row->service,
			         (unsigned)tl_below(&r, 6));
			row->instance = inst;
			char *ep = tl_keep(t, malloc(48));
			snprintf(ep, 48, "/api/v1/%s/%u", row->service,
			         (unsigned)tl_below(&r, 20));
			row->endpoint = ep;
			row->start_ns =
			        base + (int64_t)tl_below(&r, 2000000000);
			row->latency_ms = (uint32_t)tl_below(&r, 800);
			row->is_error = tl_below(&r, 50) == 0;
			const char **tags =
			        tl_keep(t, malloc(3 * sizeof(char *)));
			for (int j = 0; j < 3; j++) {
				char *tg = tl_keep(t, malloc(32));
				snprintf(
				        tg, 32, "%s=%u",
				        j == 0   ? "http.status"
				        : j == 1 ? "region"
				                 : "zone",
				        (unsigned)tl_below(&r, j == 0 ? 5 : 9));
				tags[j] = tg;
			}
			row->tags = tags;
			row->ntags = 3;
			char *b = tl_keep(t, malloc(400));
			size_t n = 0;
			b[n++] = '{';
			while (n < 300) {
				n += (size_t)snprintf(
				        b + n, 400 - n, "%s:%s,\"t%u\":%llx,",
				        words[tl_below(&r, 16)],
				        words[tl_below(&r, 16)],
				        (unsigned)tl_below(&r, 10),
				        (unsigned long long)(tl_next(&r) >>
				                             36));
			}
			b[n++] = '}';
			row->body = (const uint8_t *)b;
			row->body_len = (uint32_t)n;
		}
	}
}

/* The same span bytes laid out flat: fixed fields, strings, tags, body. */
static uint8_t *
flatten(const tl_rows *t, size_t *len)
{
	size_t cap = 0;
	for (size_t i = 0; i < t->n; i++)
		cap += 64 + 5 * 64 + 3 * 32 + t->rows[i].body_len;
	uint8_t *b = malloc(cap), *p = b;
	for (size_t i = 0; i < t->n; i++) {
		const ms_row *r = &t->rows[i];
		memcpy(p, r->trace_id, r->trace_id_len);
		p += r->trace_id_len;
		memcpy(p, &r->span_id, 8);
		p += 8;
		memcpy(p, &r->start_ns, 8);
		p += 8;
		memcpy(p, &r->latency_ms, 4);
		p += 4;
		*p++ = r->is_error;
		const char *s[4] = { r->segment_id, r->service, r->instance,
			             r->endpoint };
		for (int k = 0; k < 4; k++) {
			size_t n = strlen(s[k]) + 1;
			memcpy(p, s[k], n);
			p += n;
		}
		for (uint32_t k = 0; k < r->ntags; k++) {
			size_t n = strlen(r->tags[k]) + 1;
			memcpy(p, r->tags[k], n);
			p += n;
		}
		memcpy(p, r->body, r->body_len);
		p += r->body_len;
	}
	*len = (size_t)(p - b);
	return b;
}

/* The baseline: flat compressed with one ZSTD_compress call and
 * decompressed with one ZSTD_decompress, at level; wall and thread CPU
 * seconds of each into t[0..1] and c[0..1]; the compressed size, or 0 if
 * the round trip failed. */
static size_t
zstd_run(const uint8_t *flat, size_t flat_len, uint8_t *z, size_t zcap,
         uint8_t *back, int level, double t[2], double c[2])
{
	double c0 = cpu_now(), t0 = ms_mono_s();
	size_t zlen = ZSTD_compress(z, zcap, flat, flat_len, level);
	double t1 = ms_mono_s(), c1 = cpu_now();
	if (ZSTD_isError(zlen))
		return 0;
	size_t dl = ZSTD_decompress(back, flat_len, z, zlen);
	double t2 = ms_mono_s(), c2 = cpu_now();
	if (dl != flat_len || memcmp(back, flat, flat_len))
		return 0;
	t[0] = t1 - t0;
	t[1] = t2 - t1;
	c[0] = c1 - c0;
	c[1] = c2 - c1;
	return zlen;
}

/* Read the part decoding `cols`; seconds taken, or -1 on error. */
static double
read_part(const char *dir, unsigned cols, size_t want_rows)
{
	double t0 = ms_mono_s();
	ms_errbuf eb;
	ms_part *p;
	ms_part_iter *it;
	if (ms_part_open(&p, dir, NULL, &eb) ||
	    ms_part_iter_open(&it, p, NULL, NULL, &eb))
		return -1;
	const ms_block_info *bi;
	size_t rows = 0;
	int rc;
	while ((rc = ms_part_iter_next(it, &bi, &eb)) == 1) {
		const ms_row *rw;
		if (ms_part_iter_decode(it, cols, &rw, &eb))
			break;
		rows += bi->nrows;
	}
	ms_part_iter_close(it);
	ms_part_close(p);
	return rc == 0 && rows == want_rows ? ms_mono_s() - t0 : -1;
}

int
main(int argc, char **argv)
{
	static const char usage[] =
	        "bench_part [TRACES 1..1000000 [DIR [REPS 1..101]]]";
	if (argc > 4)
		bench_usage(usage);
	size_t traces =
	        argc > 1 ? (size_t)bench_arg_ll(argv[1], 1, 1000000,
	                                        "bench_part: TRACES", usage)
	                 : 25000;
	const char *base = argc > 2                        ? argv[2]
	                   : access("/dev/shm", W_OK) == 0 ? "/dev/shm"
	                                                   : "/tmp";
	if (argc > 3)
		reps = (int)bench_arg_ll(argv[3], 1, REPS_MAX,
		                         "bench_part: REPS", usage);
	char dir[256];
	snprintf(dir, sizeof(dir), "%s/bench-part-%d", base, (int)getpid());
	tl_rows t = { 0 };
	gen_rows(&t, traces);
	size_t flat_len;
	uint8_t *flat = flatten(&t, &flat_len);
	size_t zcap = ZSTD_compressBound(flat_len);
	uint8_t *z = malloc(zcap), *back = malloc(flat_len);
	const int level = 3;

	double w[REPS_MAX], rd[REPS_MAX], zc[REPS_MAX], zd[REPS_MAX];
	double r0[REPS_MAX], ra[REPS_MAX];
	double qw[REPS_MAX], qr[REPS_MAX]; /* per-repetition zstd/part */
	double cw[REPS_MAX], cr[REPS_MAX]; /* the same in thread CPU time */
	ms_part_meta m = { 0 };
	size_t zlen = 0;
	for (int k = 0; k < reps; k++) {
		/* The baseline goes first every other repetition, so that
		 * neither side always runs warm. */
		double zt[2], zct[2];
		if (k % 2 && !(zlen = zstd_run(flat, flat_len, z, zcap, back,
		                               level, zt, zct)))
			return 1;
		ms_errbuf eb;
		ms_part_writer_opts o = { .zstd_level = level };
		ms_part_remove_dir(dir, NULL);
		double c0 = cpu_now(), t0 = ms_mono_s();
		if (ms_part_write_rows(dir, 1, t.rows, t.n, &o, &m, &eb)) {
			fprintf(stderr, "write: %s\n", eb.msg);
			return 1;
		}
		double t1 = ms_mono_s(), c1 = cpu_now();
		ms_part *p;
		ms_part_iter *it;
		if (ms_part_open(&p, dir, NULL, &eb) ||
		    ms_part_iter_open(&it, p, NULL, NULL, &eb)) {
			fprintf(stderr, "open: %s\n", eb.msg);
			return 1;
		}
		const ms_block_info *bi;
		size_t rows = 0;
		uint64_t sink = 0;
		int rc;
		while ((rc = ms_part_iter_next(it, &bi, &eb)) == 1) {
			const ms_row *rw;
			if (ms_part_iter_decode(it, MS_COL_ALL, &rw, &eb))
				break;
			rows += bi->nrows;
			sink += rw[0].body_len;
		}
		ms_part_iter_close(it);
		ms_part_close(p);
		double t2 = ms_mono_s(), c2 = cpu_now();
		double read_s = t2 - t1;
		if (rc != 0 || rows != t.n) {
			fprintf(stderr, "read: %s\n", eb.msg);
			return 1;
		}
		double s0 = read_part(dir, 0, t.n);
		double sa = read_part(dir, MS_COL_ALL & ~(unsigned)MS_COL_BODY,
		                      t.n);
		if (s0 < 0 || sa < 0)
			return 1;
		r0[k] = (double)m.uncompressed_bytes / 1e6 / s0;
		ra[k] = (double)m.uncompressed_bytes / 1e6 / sa;
		if (k % 2 == 0 && !(zlen = zstd_run(flat, flat_len, z, zcap,
		                                    back, level, zt, zct)))
			return 1;
		if (sink == 0)
			return 1;
		double mb = (double)m.uncompressed_bytes / 1e6;
		double fmb = (double)flat_len / 1e6;
		w[k] = mb / (t1 - t0);
		rd[k] = mb / read_s;
		zc[k] = fmb / zt[0];
		zd[k] = fmb / zt[1];
		qw[k] = zc[k] / w[k];
		qr[k] = zd[k] / rd[k];
		cw[k] = (c1 - c0) / zct[0];
		cr[k] = (c2 - c1) / zct[1];
	}
	ms_part_remove_dir(dir, NULL);
	double mw = median(w), mr = median(rd), mzc = median(zc),
	       mzd = median(zd);
	printf("bench_part: %zu traces, %zu rows, zstd level %d, %d reps, "
	       "medians; dir %s\n",
	       traces, t.n, level, reps, base);
	printf("span bytes/row: part %.1f, flat %.1f\n",
	       (double)m.uncompressed_bytes / (double)t.n,
	       (double)flat_len / (double)t.n);
	printf("compressed bytes/row: part %.1f (all files), plain zstd "
	       "%.1f\n",
	       (double)m.compressed_bytes / (double)t.n,
	       (double)zlen / (double)t.n);
	printf("%-24s %10s %10s %8s\n", "", "part MB/s", "zstd MB/s",
	       "zstd/part");
	printf("%-24s %10.1f %10.1f %8.2fx\n", "write vs compress", mw, mzc,
	       median(qw));
	printf("%-24s %10.1f %10.1f %8.2fx\n", "read(all) vs decompress", mr,
	       mzd, median(qr));
	printf("in thread CPU time, part/zstd: write %.2fx, read(all) "
	       "%.2fx\n",
	       median(cw), median(cr));
	printf("read without bodies: %.1f MB/s; iterate only (checksums, no "
	       "decompression): %.1f MB/s\n",
	       median(ra), median(r0));
	free(flat);
	free(z);
	free(back);
	tl_free(&t);
	return 0;
}
