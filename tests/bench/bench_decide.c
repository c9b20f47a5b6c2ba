/*
 * bench_decide.c - Decide cost per trace for each shipped plugin over
 * production-shaped complete traces, at batch sizes 1, 16, 64, 512 and
 * 4096. Three figures per cell: the plugin's decide() called directly
 * ("plugin"), the same batches through the chain with its worker thread,
 * timeout and verdict checks ("chain", --plugin-host inproc), and through
 * a chain whose link runs in a host process ("process", --plugin-host
 * process: shared-memory copy of the batch and a socket round trip).
 * Each cell is the median of 5 runs, the three modes interleaved and
 * taking turns going first; each
 * run repeats the whole 4096-trace set until it has run for at least
 * 50 ms. Prints a table with the chain/plugin and process/chain ratios;
 * asserts nothing.
 *
 * Traces: 4.2 rows on average (1..11), 32-hex-digit IDs, latencies mostly
 * 1..80 ms with a 3% slow tail, 2% error rows, 4 tags per row, so each
 * SkyWalking rule is reached by a realistic share of traces.
 *
 * Usage: bench_decide [plugin_dir]   (default: the build's plugin dir)
 */
#include "ms_clock.h"
#include "ms_pipeline.h"
#include "pipeline_int.h"
#include "bench_args.h"
#include "bench_stats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NTRACES 4096
#define REPS 5

static uint64_t
rng(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

typedef struct corpus {
	ms_row *rows;
	size_t nrows;
	size_t first[NTRACES + 1]; /* row index of each trace */
	char ids[NTRACES][33];
	char tagbuf[8][32];
	const char *tags[4];
} corpus;

static int
cmp_str(const void *a, const void *b)
{
	return strcmp((const char *)a, (const char *)b);
}

static void
make_corpus(corpus *c)
{
	uint64_t s = 0x9e3779b97f4a7c15ull;
	for (int i = 0; i < NTRACES; i++)
		snprintf(c->ids[i], 33, "%016llx%016llx",
		         (unsigned long long)rng(&s),
		         (unsigned long long)rng(&s));
	qsort(c->ids, NTRACES, 33, cmp_str);
	static const char *const t[4] = { "http.method=GET",
		                          "http.status_code=200",
		                          "db.type=mysql", "mq.queue=orders" };
	for (int i = 0; i < 4; i++)
		c->tags[i] = t[i];
	c->rows = calloc(NTRACES * 12, sizeof(ms_row));
	size_t k = 0;
	for (int i = 0; i < NTRACES; i++) {
		c->first[i] = k;
		/* 1..11 rows, mean 4.2 */
		int n = 1 + (int)(rng(&s) % 4) + (int)(rng(&s) % 4) +
		        (rng(&s) % 10 == 0 ? (int)(rng(&s) % 5) : 0);
		int64_t t0 = 1700000000000000000LL + (int64_t)i * 1000000;
		for (int r = 0; r < n; r++) {
			ms_row *w = &c->rows[k++];
			w->trace_id = (const uint8_t *)c->ids[i];
			w->trace_id_len = 32;
			w->start_ns = t0 + (int64_t)(rng(&s) % 50) * 1000000;
			w->latency_ms = (uint32_t)(1 + rng(&s) % 80);
			if (rng(&s) % 100 < 3)
				w->latency_ms += 600;
			w->is_error = rng(&s) % 100 < 2;
			w->tags = c->tags;
			w->ntags = 4;
			w->service = "checkout";
			w->endpoint = "/api/v1/orders";
		}
	}
	c->first[NTRACES] = k;
	c->nrows = k;
}

typedef struct cell {
	double plugin_ns, chain_ns, process_ns;
} cell;

static cell
measure(ms_chain *ch, ms_chain *pch, const corpus *c, size_t bsize)
{
	ms_plugin *p = ms_chain_plugin(ch, 0);
	uint32_t proj = ms_plugin_projection(p);
	size_t nb = NTRACES / bsize;
	ms_batch **b = calloc(nb, sizeof(*b));
	for (size_t i = 0; i < nb; i++) {
		size_t r0 = c->first[i * bsize], r1 = c->first[(i + 1) * bsize];
		ms_errbuf eb;
		if (ms_batch_from_rows(&b[i], NULL, proj, c->rows + r0, r1 - r0,
		                       &eb)) {
			fprintf(stderr, "batch: %s\n", eb.msg);
			exit(1);
		}
	}
	uint8_t *v = malloc(bsize);
	double pl[REPS], chn[REPS], prc[REPS];
	double *out[3] = { pl, chn, prc };
	/* The three modes take turns going first. */
	for (int rep = 0; rep < REPS; rep++) {
		for (int k = 0; k < 3; k++) {
			int mode = (rep + k) % 3;
			uint64_t traces = 0;
			int64_t t0 = ms_mono_ns(), el;
			do {
				for (size_t i = 0; i < nb; i++) {
					if (mode == 0)
						ms_plugin_decide_direct(
						        p, ms_batch_view(b[i]),
						        v, bsize);
					else
						ms_chain_decide(mode == 1 ? ch
						                          : pch,
						                b[i], v, NULL);
				}
				traces += NTRACES;
				el = ms_mono_ns() - t0;
			} while (el < 50000000);
			out[mode][rep] = (double)el / (double)traces;
		}
	}
	for (size_t i = 0; i < nb; i++)
		ms_batch_release(b[i]);
	free(b);
	free(v);
	cell m = { bench_median_d(pl, REPS), bench_median_d(chn, REPS),
		   bench_median_d(prc, REPS) };
	return m;
}

int
main(int argc, char **argv)
{
	if (argc > 2)
		bench_usage("bench_decide [PLUGIN_DIR]");
	const char *dir = argc > 1 ? argv[1] : MS_PLUGIN_DIR;
	static const char *const specs[] = { "alwayskeep", "detdrop:35",
		                             "skywalking" };
	static const size_t sizes[] = { 1, 16, 64, 512, 4096 };
	corpus *c = calloc(1, sizeof(*c));
	make_corpus(c);
	printf("bench_decide: %d complete traces, %zu rows (%.2f rows/trace),"
	       " median of %d runs\n",
	       NTRACES, c->nrows, (double)c->nrows / NTRACES, REPS);
	printf("%-12s %6s %14s %14s %8s %14s %8s\n", "plugin", "batch",
	       "plugin ns/tr", "chain ns/tr", "ratio", "process ns/tr",
	       "p/chain");
	double sw512 = 0;
	for (size_t s = 0; s < 3; s++) {
		ms_chain_spec cs;
		ms_errbuf eb;
		ms_chain *ch, *pch;
		ms_chain_opts po = { .host_mode = MS_PLUGIN_HOST_PROCESS,
			             .host_exe = MS_HOST_EXE };
		if (ms_chain_spec_parse(&cs, specs[s], dir, NULL, &eb) ||
		    ms_chain_open(&ch, cs.links, cs.n, NULL, &eb) ||
		    ms_chain_open(&pch, cs.links, cs.n, &po, &eb)) {
			fprintf(stderr, "%s: %s\n", specs[s], eb.msg);
			return 1;
		}
		ms_chain_spec_release(&cs);
		for (size_t z = 0; z < 5; z++) {
			cell m = measure(ch, pch, c, sizes[z]);
			printf("%-12s %6zu %14.2f %14.2f %8.2f %14.2f %8.2f\n",
			       specs[s], sizes[z], m.plugin_ns, m.chain_ns,
			       m.chain_ns / m.plugin_ns, m.process_ns,
			       m.process_ns / m.chain_ns);
			if (s == 2 && sizes[z] == 512)
				sw512 = m.plugin_ns;
		}
		ms_chain_close(ch);
		ms_chain_close(pch);
	}
	printf("skywalking at 512 traces/batch: %.2f ns/trace (target <= 50)\n",
	       sw512);
	free(c->rows);
	free(c);
	return 0;
}
