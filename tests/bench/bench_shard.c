/*
 * bench_shard.c - what the inventory and ledgers cost: ledger hashing per
 * row against plain XXH3-128 of the same canonical bytes, ledgers of a
 * written part against just iterating it, and the median latency of a
 * commit (introduce) and of taking a view. Prints medians of 7 runs and
 * side-by-side ratios; asserts nothing.
 *
 * Run: build the `benches` target, then `build/tests/bench_shard [DIR]`
 * (DIR defaults to a fresh directory under /tmp; its disk decides the
 * commit latency, which is fsync-bound).
 */
#include "ms_clock.h"
#include "ms_ledger.h"
#include "ms_shard.h"
#include "ms_sidx.h"
#include "bench_args.h"
#include "bench_stats.h"

#include <xxhash.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define REPS 7
#define NROWS 200000

static const char *tagv[] = { "http.method=GET", "status.code=200",
	                      "db.type=mysql" };

/* ~500 span bytes per row, 4 rows per trace. */
static void
make_rows(ms_row *rows, char (*tid)[32], uint8_t *body, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		ms_row *r = &rows[i];
		memset(r, 0, sizeof(*r));
		snprintf(tid[i], 32, "2f1c9e7a.%08zu", i / 4);
		r->trace_id = (const uint8_t *)tid[i];
		r->trace_id_len = (uint32_t)strlen(tid[i]);
		r->span_id = i;
		r->segment_id = "segment-000000000000";
		r->service = "checkout-service";
		r->instance = "checkout-7d9f8-abcde";
		r->endpoint = "/api/v1/checkout/submit";
		r->start_ns = 1700000000000000000LL + (int64_t)i * 1000;
		r->latency_ms = (uint32_t)(i % 900);
		r->is_error = i % 50 == 0;
		r->tags = tagv;
		r->ntags = 3;
		r->body = body + (i % 64);
		r->body_len = 380;
	}
}

/* Plain XXH3-128 over the same bytes the ledger encodes (built once). */
static size_t
flat_encode(const ms_row *r, uint8_t *out)
{
	size_t n = 0;
#define PUT(p, len) (memcpy(out + n, (p), (len)), n += (len))
	uint32_t l;
	out[n++] = 1;
	l = r->trace_id_len;
	PUT(&l, 4);
	PUT(r->trace_id, l);
	PUT(&r->span_id, 8);
	const char *s[] = { r->segment_id, r->service, r->instance,
		            r->endpoint };
	for (int i = 0; i < 4; i++) {
		l = (uint32_t)strlen(s[i]);
		PUT(&l, 4);
		PUT(s[i], l);
	}
	PUT(&r->start_ns, 8);
	PUT(&r->latency_ms, 4);
	out[n++] = r->is_error;
	PUT(&r->ntags, 4);
	for (uint32_t i = 0; i < r->ntags; i++) {
		l = (uint32_t)strlen(r->tags[i]);
		PUT(&l, 4);
		PUT(r->tags[i], l);
	}
	PUT(&r->body_len, 4);
	PUT(r->body, r->body_len);
#undef PUT
	return n;
}

int
main(int argc, char **argv)
{
	if (argc > 2)
		bench_usage("bench_shard [DIR]");
	char tmpl[] = "/tmp/ms-bench-shard-XXXXXX";
	const char *base = argc > 1 ? argv[1] : mkdtemp(tmpl);
	if (!base)
		return 1;
	ms_row *rows = calloc(NROWS, sizeof(*rows));
	char(*tid)[32] = calloc(NROWS, 32);
	uint8_t *body = malloc(512);
	uint8_t *flat = malloc((size_t)NROWS * 640);
	size_t *flen = calloc(NROWS, sizeof(*flen));
	if (!rows || !tid || !body || !flat || !flen)
		return 1;
	for (int i = 0; i < 512; i++)
		body[i] = (uint8_t)(i * 37);
	make_rows(rows, tid, body, NROWS);
	for (size_t i = 0; i < NROWS; i++)
		flen[i] = flat_encode(&rows[i], flat + i * 640);

	double t_led[REPS], t_flat[REPS];
	volatile uint64_t sink = 0;
	/* Each pair alternates which side goes first, here and below. */
	for (int r = 0; r < REPS; r++) {
		for (int k = 0; k < 2; k++) {
			double t0 = ms_mono_s();
			if ((k == 0) == (r % 2 == 0)) {
				ms_ledger l;
				ms_ledger_init(&l);
				for (size_t i = 0; i < NROWS; i++)
					ms_ledger_add_row(&l, &rows[i]);
				t_led[r] = ms_mono_s() - t0;
				sink += l.sum_lo;
			} else {
				uint64_t acc = 0;
				for (size_t i = 0; i < NROWS; i++)
					acc += XXH3_128bits(flat + i * 640,
					                    flen[i])
					               .low64;
				t_flat[r] = ms_mono_s() - t0;
				sink += acc;
			}
		}
	}
	double led = bench_median_d(t_led, REPS),
	       fl = bench_median_d(t_flat, REPS);
	printf("ledger rows:  %8.1f ns/row   plain XXH3-128 of the same bytes: "
	       "%6.1f ns/row   ratio %.2f\n",
	       led / NROWS * 1e9, fl / NROWS * 1e9, led / fl);

	/* A written part: ledger (decode all + hash) vs iterate+decode. */
	char path[512];
	snprintf(path, sizeof(path), "%s/core-part", base);
	ms_errbuf eb = { { 0 } };
	ms_part_meta meta;
	if (ms_part_write_rows(path, 1, rows, NROWS, NULL, &meta, &eb)) {
		fprintf(stderr, "%s\n", eb.msg);
		return 1;
	}
	ms_part *p;
	if (ms_part_open(&p, path, NULL, &eb)) {
		fprintf(stderr, "%s\n", eb.msg);
		return 1;
	}
	double t_pl[REPS], t_it[REPS];
	for (int r = 0; r < REPS; r++) {
		for (int k = 0; k < 2; k++) {
			double t0 = ms_mono_s();
			if ((k == 0) == (r % 2 == 0)) {
				ms_ledger l;
				if (ms_ledger_of_part(p, &l, NULL, &eb)) {
					fprintf(stderr, "%s\n", eb.msg);
					return 1;
				}
				t_pl[r] = ms_mono_s() - t0;
				continue;
			}
			ms_part_iter *it;
			if (ms_part_iter_open(&it, p, NULL, NULL, &eb)) {
				fprintf(stderr, "%s\n", eb.msg);
				return 1;
			}
			const ms_block_info *info;
			while (ms_part_iter_next(it, &info, &eb) == 1) {
				const ms_row *rr;
				if (ms_part_iter_decode(it, MS_COL_ALL, &rr,
				                        &eb)) {
					fprintf(stderr, "%s\n", eb.msg);
					return 1;
				}
				sink += rr[0].span_id;
			}
			ms_part_iter_close(it);
			t_it[r] = ms_mono_s() - t0;
		}
	}
	double pl = bench_median_d(t_pl, REPS), it = bench_median_d(t_it, REPS);
	printf("part ledger:  %8.1f ms (%d rows)   decode only: %8.1f ms   "
	       "ratio %.2f\n",
	       pl * 1e3, NROWS, it * 1e3, pl / it);
	ms_part_close(p);

	/* Commit latency: introduce small parts; view latency. */
	snprintf(path, sizeof(path), "%s/shard", base);
	ms_shard_opts so = { .dir = path, .create = true };
	ms_shard *s;
	if (ms_shard_open(&s, &so, &eb)) {
		fprintf(stderr, "%s\n", eb.msg);
		return 1;
	}
	enum { NINTRO = 41 };
	double t_in[NINTRO], t_wr[NINTRO], t_vw[NINTRO];
	for (int i = 0; i < NINTRO; i++) {
		uint64_t id;
		ms_shard_new_id(s, &id, &eb);
		double t0 = ms_mono_s();
		for (int k = 0; k < MS_KIND_COUNT; k++) {
			char tp[600];
			ms_shard_tmp_path(s, (enum ms_part_kind)k, id, tp,
			                  sizeof(tp));
			int rc = k == MS_KIND_CORE
			                 ? ms_part_write_rows(
			                           tp, id, rows + i * 100, 100,
			                           NULL, &meta, &eb)
			                 : ms_sidx_write_rows(
			                           (enum ms_part_kind)k, tp, id,
			                           rows + i * 100, 100, NULL,
			                           &meta, &eb);
			if (rc) {
				fprintf(stderr, "%s\n", eb.msg);
				return 1;
			}
		}
		double t1 = ms_mono_s();
		if (ms_shard_introduce(s, id, &eb)) {
			fprintf(stderr, "%s\n", eb.msg);
			return 1;
		}
		double t2 = ms_mono_s();
		ms_view *v;
		ms_shard_view(s, &v, &eb);
		ms_view_release(v);
		t_vw[i] = ms_mono_s() - t2;
		t_wr[i] = t1 - t0;
		t_in[i] = t2 - t1;
	}
	printf("introduce:    %8.3f ms median (publish 3 dirs + snapshot "
	       "commit)   writing the 3 parts: %8.3f ms   ratio %.2f\n",
	       bench_median_d(t_in, NINTRO) * 1e3,
	       bench_median_d(t_wr, NINTRO) * 1e3,
	       bench_median_d(t_in, NINTRO) / bench_median_d(t_wr, NINTRO));
	printf("view:         %8.3f us median of %d views (one after each "
	       "introduce: 1 to %d parts)\n",
	       bench_median_d(t_vw, NINTRO) * 1e6, NINTRO, NINTRO);
	ms_shard_close(s);
	(void)sink;
	char cmd[600];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s/shard' '%s/core-part'", base,
	         base);
	if (system(cmd) != 0)
		return 1;
	if (argc <= 1)
		rmdir(base);
	return 0;
}
