/*
 * figures.c - report figures computed from the event log (figures.h):
 * throughput per phase from the phase records and the merges, the final
 * inventory's part sizes and the oldest part's age from the core part
 * events in recording order, publication gaps from the publications, and
 * the plugins' own counters recorded at the end of the run.
 */
#include "figures.h"
#include "labels.h"
#include "grow.h"

#include "ev_private.h"

#include "ms_bench.h"
#include "ms_loader.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1024.0 * 1024.0)

uint64_t
ms__size_bucket_bound(unsigned b)
{
	static const uint64_t bound[MS__SIZE_BUCKETS] = {
		64ull << 10,  1ull << 20, 16ull << 20,
		256ull << 20, 4ull << 30, 0
	};
	return b < MS__SIZE_BUCKETS ? bound[b] : 0;
}

typedef struct live {
	uint64_t id, bytes;
	int64_t intro_ns;
} live;

/* One end of a merge's wall interval: +1 at its start, -1 at its end. */
typedef struct edge {
	int64_t ns;
	int delta;
	unsigned phase;
} edge;

typedef struct fig_ctx {
	ms__figures *g;
	edge *ed;
	size_t ned, edcap;
	double wall_s[MS_EV_PHASE_COUNT], cpu_s[MS_EV_PHASE_COUNT];
	double traces[MS_EV_PHASE_COUNT], in_bytes[MS_EV_PHASE_COUNT];
	/* inventory replay */
	live *lv;
	size_t nlive, cap;
	int64_t last_ns;
	ms__oom oom; /* the allocation that failed */
	/* publications */
	double *gl, *gw;
	size_t npub, pcap;
	int64_t prev_l, prev_w;
	double pub_bytes;
} fig_ctx;

static int
on_phase(void *ctx, const ms_ev_phase *p)
{
	fig_ctx *c = ctx;
	if ((unsigned)p->phase < MS_EV_PHASE_COUNT) {
		c->wall_s[p->phase] = (double)p->wall_ns / 1e9;
		c->cpu_s[p->phase] = (double)p->cpu_ns / 1e9;
	}
	return 0;
}

static int
on_merge(void *ctx, const ms_ev_merge *m)
{
	fig_ctx *c = ctx;
	unsigned p = ms__ev_merge_phase(m);
	if (m->err)
		return 0;
	c->traces[p] += (double)m->traces_in;
	c->in_bytes[p] += (double)m->input_bytes;
	if (MS__GROW_FOR(c->ed, c->edcap, c->ned + 2, 256, &c->oom,
	                 "the merges' intervals"))
		return MS_ERR_NOMEM;
	c->ed[c->ned++] = (edge){ m->wall_start_ns, +1, p };
	c->ed[c->ned++] = (edge){ m->wall_start_ns + m->wall_ns, -1, p };
	return 0;
}

/* Ends before starts at the same instant: touching merges do not
 * overlap. */
static int
cmp_edge(const void *a, const void *b)
{
	const edge *x = a, *y = b;
	if (x->ns != y->ns)
		return x->ns < y->ns ? -1 : 1;
	return (x->delta > y->delta) - (x->delta < y->delta);
}

/* Sweep the intervals of each phase: the concurrency figures. */
static void
concurrency(fig_ctx *c)
{
	if (c->ned)
		qsort(c->ed, c->ned, sizeof(*c->ed), cmp_edge);
	for (unsigned p = 0; p < MS_EV_PHASE_COUNT; p++) {
		int run = 0;
		int64_t prev = 0;
		double busy = 0, weighted = 0, multi = 0;
		for (size_t i = 0; i < c->ned; i++) {
			const edge *e = &c->ed[i];
			if (e->phase != p)
				continue;
			if (run > 0) {
				double dt = (double)(e->ns - prev) / 1e9;
				busy += dt;
				weighted += dt * run;
				if (run >= 2)
					multi += dt;
			}
			run += e->delta;
			prev = e->ns;
			if (run > (int)c->g->conc_max[p])
				c->g->conc_max[p] = (unsigned)run;
		}
		c->g->merging_s[p] = busy;
		c->g->conc_mean[p] = busy > 0 ? weighted / busy : 0;
		c->g->conc_multi_share[p] = busy > 0 ? multi / busy : 0;
	}
}

static double
oldest_age_s(const fig_ctx *c)
{
	if (!c->nlive)
		return 0;
	int64_t oldest = c->lv[0].intro_ns;
	for (size_t i = 1; i < c->nlive; i++)
		if (c->lv[i].intro_ns < oldest)
			oldest = c->lv[i].intro_ns;
	return (double)(c->last_ns - oldest) / 1e9;
}

static int
on_part(void *ctx, const ms_ev_part *p)
{
	fig_ctx *c = ctx;
	if (p->what == MS_EV_PART_INTRODUCED) {
		if (MS__GROW_FOR(c->lv, c->cap, c->nlive + 1, 64, &c->oom,
		                 "the live parts"))
			return MS_ERR_NOMEM;
		c->lv[c->nlive++] =
		        (live){ p->part_id, p->bytes[MS_KIND_CORE],
		                 p->logical_ns };
	} else if (p->what == MS_EV_PART_REMOVED) {
		for (size_t i = 0; i < c->nlive; i++)
			if (c->lv[i].id == p->part_id) {
				c->lv[i] = c->lv[--c->nlive];
				break;
			}
	} else {
		return 0;
	}
	if (p->logical_ns > c->last_ns)
		c->last_ns = p->logical_ns;
	double age = oldest_age_s(c);
	if (age > c->g->oldest_age_max_s)
		c->g->oldest_age_max_s = age;
	return 0;
}

static int
on_pub(void *ctx, const ms_ev_pub *p)
{
	fig_ctx *c = ctx;
	if (MS__GROW2_FOR(c->gl, c->gw, c->pcap, c->npub + 1, 256, &c->oom,
	                  "the publication gaps"))
		return MS_ERR_NOMEM;
	if (c->g->pubs > 0) {
		c->gl[c->npub] = (double)(p->logical_ns - c->prev_l) / 1e9;
		c->gw[c->npub] = (double)(p->wall_ns - c->prev_w) / 1e6;
		c->npub++;
	}
	c->g->pubs++;
	c->prev_l = p->logical_ns;
	c->prev_w = p->wall_ns;
	c->pub_bytes += (double)p->bytes;
	return 0;
}

static int
on_stat(void *ctx, const ms_ev_plugin_stat *s)
{
	ms__figures *g = ctx;
	if (g->nstats < MS__FIG_STATS_MAX) {
		/* A counter's name is the plugin's text: one printable line,
		 * as core passes on what a plugin says, in every output. */
		ms_ev_plugin_stat *d = &g->stats[g->nstats++];
		*d = *s;
		ms_plugin_text_clean(d->name, sizeof(d->name), s->name,
		                     sizeof(s->name));
	}
	return 0;
}

static double
per(double a, double b)
{
	return b > 0 ? a / b : 0;
}

int
ms__figures_load(ms_evdb *db, ms__figures *g, ms_errbuf *eb)
{
	memset(g, 0, sizeof(*g));
	fig_ctx c;
	memset(&c, 0, sizeof(c));
	c.g = g;
	ms_ev_run run;
	int rc = ms_evdb_run(db, &run, NULL, NULL, eb);
	if (rc == 0)
		rc = ms_evdb_each_phase(db, on_phase, &c, eb);
	if (rc == 0)
		rc = ms_evdb_each_merge(db, NULL, on_merge, &c, eb);
	if (rc == 0)
		rc = ms_evdb_each_part(db, on_part, &c, eb);
	if (rc == 0)
		rc = ms_evdb_each_pub(db, on_pub, &c, eb);
	if (rc == 0)
		rc = ms_evdb_each_plugin_stat(db, on_stat, g, eb);
	if (rc == 0) {
		for (uint32_t i = 0; i < run.nplugins && i < MS_EV_LINKS_MAX;
		     i++)
			snprintf(g->link_names[i], sizeof(g->link_names[i]),
			         "%s", run.plugins[i].name);
		for (unsigned p = 0; p < MS_EV_PHASE_COUNT; p++) {
			g->traces_per_s[p] = per(c.traces[p], c.wall_s[p]);
			g->mib_per_s[p] = per(c.in_bytes[p] / MIB, c.wall_s[p]);
			g->mib_per_cpu_s[p] =
			        per(c.in_bytes[p] / MIB, c.cpu_s[p]);
		}
		g->published_mib_per_s =
		        per(c.pub_bytes / MIB, c.wall_s[MS_EV_PHASE_PRIMARY]);
		concurrency(&c);
		g->final_parts = c.nlive;
		for (size_t i = 0; i < c.nlive; i++) {
			unsigned b = 0;
			while (b + 1 < MS__SIZE_BUCKETS &&
			       c.lv[i].bytes >= ms__size_bucket_bound(b))
				b++;
			g->size_hist[b]++;
		}
		g->oldest_age_end_s = oldest_age_s(&c);
		ms_bench_stat st;
		ms_bench_stat_of(c.gl, c.npub, &st);
		g->gap_logical_median_s = st.median;
		g->gap_logical_max_s = st.max;
		ms_bench_stat_of(c.gw, c.npub, &st);
		g->gap_wall_median_ms = st.median;
		g->gap_wall_p95_ms = st.p95;
		g->gap_wall_max_ms = st.max;
	}
	free(c.lv);
	free(c.ed);
	free(c.gl);
	free(c.gw);
	/* A walk's message stands; the callbacks' allocations are noted. */
	if (rc == MS_ERR_NOMEM && c.oom.what)
		rc = ms__oom_fail(eb, &c.oom, "report of %s", ms_evdb_path(db));
	return rc;
}

static const char *
bucket_label(unsigned b)
{
	static const char *const l[MS__SIZE_BUCKETS] = {
		"< 64 KiB",  "< 1 MiB", "< 16 MiB",
		"< 256 MiB", "< 4 GiB", ">= 4 GiB"
	};
	return l[b];
}

const char *
ms__figures_link_name(const ms__figures *g, uint32_t link)
{
	return link < MS_EV_LINKS_MAX && g->link_names[link][0]
	               ? g->link_names[link]
	               : "?";
}

void
ms__figures_link_label(const ms__figures *g, uint32_t link, char *buf, size_t n)
{
	const char *names[MS_EV_LINKS_MAX];
	uint32_t last = link < MS_EV_LINKS_MAX ? link : MS_EV_LINKS_MAX - 1;
	for (uint32_t l = 0; l <= last; l++)
		names[l] = ms__figures_link_name(g, l);
	if (link < MS_EV_LINKS_MAX)
		ms_ev_link_label(names, last, buf, n);
	else
		snprintf(buf, n, "?");
}

static bool
is_ppm(const char *name)
{
	size_t n = strlen(name);
	return n > 4 && strcmp(name + n - 4, "_ppm") == 0;
}

void
ms__figures_text(FILE *f, const ms__figures *g)
{
	fprintf(f, "\n%-30s %14s %14s\n", "throughput", "primary", "cooldown");
	fprintf(f, "  %-28s %14.1f %14.1f\n", "traces merged /s",
	        g->traces_per_s[0], g->traces_per_s[1]);
	/* The merges' core input (column input_bytes), as "core input MiB"
	 * above: the index parts' input is not in it. */
	fprintf(f, "  %-28s %14.2f %14.2f\n", "core merge input MiB/s",
	        g->mib_per_s[0], g->mib_per_s[1]);
	fprintf(f, "  %-28s %14.2f %14.2f\n", "core merge input MiB/CPU s",
	        g->mib_per_cpu_s[0], g->mib_per_cpu_s[1]);
	fprintf(f, "  %-28s %14.2f %14s\n", "published MiB/s",
	        g->published_mib_per_s, "");

	fprintf(f, "\n%-30s %14s %14s\n", "merge concurrency", "primary",
	        "cooldown");
	fprintf(f, "  %-28s %14u %14u\n", "most merges at once", g->conc_max[0],
	        g->conc_max[1]);
	fprintf(f, "  %-28s %14.2f %14.2f\n", "mean while merging",
	        g->conc_mean[0], g->conc_mean[1]);
	fprintf(f, "  %-28s %14.1f %14.1f\n", "time with >= 2 merges %",
	        100 * g->conc_multi_share[0], 100 * g->conc_multi_share[1]);
	fprintf(f, "  %-28s %14.3f %14.3f\n", "time merging s", g->merging_s[0],
	        g->merging_s[1]);

	fprintf(f, "\ninventory at the end: %llu core parts\n",
	        (unsigned long long)g->final_parts);
	for (unsigned b = 0; b < MS__SIZE_BUCKETS; b++)
		if (g->size_hist[b] || b < 4)
			fprintf(f, "  %-28s %14llu\n", bucket_label(b),
			        (unsigned long long)g->size_hist[b]);
	fprintf(f, "  %-28s %14.0f\n", "oldest part age, max s",
	        g->oldest_age_max_s);
	fprintf(f, "  %-28s %14.0f\n", "oldest part age at end s",
	        g->oldest_age_end_s);

	fprintf(f, "\npublication gaps (%llu publications)\n",
	        (unsigned long long)g->pubs);
	fprintf(f, "  %-28s %14.1f\n", "logical median s",
	        g->gap_logical_median_s);
	fprintf(f, "  %-28s %14.1f\n", "logical max s", g->gap_logical_max_s);
	fprintf(f, "  %-28s %14.3f\n", "wall median ms", g->gap_wall_median_ms);
	fprintf(f, "  %-28s %14.3f\n", "wall p95 ms", g->gap_wall_p95_ms);
	fprintf(f, "  %-28s %14.3f\n", "wall max ms", g->gap_wall_max_ms);

	if (!g->nstats)
		return;
	fprintf(f, "\nplugin counters\n");
	for (size_t i = 0; i < g->nstats; i++) {
		const ms_ev_plugin_stat *s = &g->stats[i];
		char l[MS__LINK_LABEL_MAX],
		        n[MS__LINK_LABEL_MAX + MS_EV_NAME_MAX];
		ms__figures_link_label(g, s->link, l, sizeof(l));
		snprintf(n, sizeof(n), "%s %s", l, s->name);
		if (is_ppm(s->name))
			fprintf(f, "  %-36s %14llu  (%.4f%%)\n", n,
			        (unsigned long long)s->value,
			        (double)s->value / 1e4);
		else
			fprintf(f, "  %-36s %14llu\n", n,
			        (unsigned long long)s->value);
	}
}

void
ms__figures_json(FILE *f, const ms__figures *g)
{
	fputs(",\"throughput\":{", f);
	for (unsigned p = 0; p < MS_EV_PHASE_COUNT; p++) {
		fprintf(f, "%s\"%s\":{\"traces_per_s\":", p ? "," : "",
		        ms_ev_phase_name(p));
		ms__json_fig(f, g->traces_per_s[p]);
		fputs(",\"mib_per_s\":", f);
		ms__json_fig(f, g->mib_per_s[p]);
		fputs(",\"mib_per_cpu_s\":", f);
		ms__json_fig(f, g->mib_per_cpu_s[p]);
		fputc('}', f);
	}
	fputs(",\"published_mib_per_s\":", f);
	ms__json_fig(f, g->published_mib_per_s);
	fputs("},\"concurrency\":{", f);
	for (unsigned p = 0; p < MS_EV_PHASE_COUNT; p++) {
		fprintf(f, "%s\"%s\":{\"max\":%u,\"mean_while_merging\":",
		        p ? "," : "", ms_ev_phase_name(p), g->conc_max[p]);
		ms__json_fig(f, g->conc_mean[p]);
		fputs(",\"multi_share\":", f);
		ms__json_fig(f, g->conc_multi_share[p]);
		fputs(",\"merging_s\":", f);
		ms__json_fig(f, g->merging_s[p]);
		fputc('}', f);
	}
	fprintf(f, "},\"final_inventory\":{\"parts\":%llu,\"size_histogram\":[",
	        (unsigned long long)g->final_parts);
	for (unsigned b = 0; b < MS__SIZE_BUCKETS; b++) {
		uint64_t lt = ms__size_bucket_bound(b);
		fprintf(f, "%s{\"lt_bytes\":", b ? "," : "");
		if (lt)
			fprintf(f, "%llu", (unsigned long long)lt);
		else
			fputs("null", f);
		fprintf(f, ",\"parts\":%llu}",
		        (unsigned long long)g->size_hist[b]);
	}
	fputs("],\"oldest_age_max_s\":", f);
	ms__json_fig(f, g->oldest_age_max_s);
	fputs(",\"oldest_age_end_s\":", f);
	ms__json_fig(f, g->oldest_age_end_s);
	fprintf(f, "},\"publication_gaps\":{\"publications\":%llu",
	        (unsigned long long)g->pubs);
	fputs(",\"logical_median_s\":", f);
	ms__json_fig(f, g->gap_logical_median_s);
	fputs(",\"logical_max_s\":", f);
	ms__json_fig(f, g->gap_logical_max_s);
	fputs(",\"wall_median_ms\":", f);
	ms__json_fig(f, g->gap_wall_median_ms);
	fputs(",\"wall_p95_ms\":", f);
	ms__json_fig(f, g->gap_wall_p95_ms);
	fputs(",\"wall_max_ms\":", f);
	ms__json_fig(f, g->gap_wall_max_ms);
	fputs("},\"plugin_counters\":[", f);
	for (size_t i = 0; i < g->nstats; i++) {
		const ms_ev_plugin_stat *s = &g->stats[i];
		fprintf(f, "%s{\"link\":%u,\"plugin\":", i ? "," : "", s->link);
		ms__json_str(f, ms__figures_link_name(g, s->link));
		fputs(",\"name\":", f);
		ms__json_str(f, s->name);
		fprintf(f, ",\"value\":%llu}", (unsigned long long)s->value);
	}
	fputc(']', f);
}
