/*
 * figures.h - the run report's figures beyond the phase tables
 * (figures.c): throughput, merge concurrency, the final inventory's part
 * sizes, the oldest part's age, the gaps between publications and the
 * plugins' own counters. Private to replay/.
 */
#ifndef MS_FIGURES_H
#define MS_FIGURES_H

#include "ms_replay_events.h"

#include <stdbool.h>
#include <stdio.h>

#define MS__SIZE_BUCKETS 6 /* < 64 KiB, 1 MiB, 16 MiB, 256 MiB, 4 GiB, more */
#define MS__FIG_STATS_MAX 128

typedef struct ms__figures {
	/* Per phase (primary, cooldown): merged traces and merge input per
	 * wall second, and merge input per CPU second of the process. */
	double traces_per_s[MS_EV_PHASE_COUNT];
	double mib_per_s[MS_EV_PHASE_COUNT];
	double mib_per_cpu_s[MS_EV_PHASE_COUNT];
	double published_mib_per_s; /* primary: bytes published per wall s */
	/* Core parts in the inventory at the end, by compressed size. */
	uint64_t size_hist[MS__SIZE_BUCKETS];
	uint64_t final_parts;
	/* Logical seconds since the oldest inventory part was introduced:
	 * the largest at any part event, and at the end. */
	double oldest_age_max_s, oldest_age_end_s;
	/* Between consecutive publications: logical seconds, wall ms. */
	uint64_t pubs;
	double gap_logical_median_s, gap_logical_max_s;
	double gap_wall_median_ms, gap_wall_p95_ms, gap_wall_max_ms;
	/* Merges running at once, per phase, from each merge's wall
	 * interval (start on its worker to completion): the most at any
	 * instant, the time-weighted mean while at least one ran, the share
	 * of that time with two or more, and that time itself. */
	unsigned conc_max[MS_EV_PHASE_COUNT];
	double conc_mean[MS_EV_PHASE_COUNT];
	double conc_multi_share[MS_EV_PHASE_COUNT];
	double merging_s[MS_EV_PHASE_COUNT];
	/* The plugins' counters at the end of the run, with their link. */
	size_t nstats;
	ms_ev_plugin_stat stats[MS__FIG_STATS_MAX];
	char link_names[MS_EV_LINKS_MAX][MS_EV_NAME_MAX];
} ms__figures;

/* Upper bound of size bucket b in bytes (0 for the last, unbounded). */
uint64_t ms__size_bucket_bound(unsigned b);

/* The plugin name of chain link `link` ("?" when the run does not name
 * it). */
const char *ms__figures_link_name(const ms__figures *g, uint32_t link);
/* Its name in a table (ms_ev_link_label: "detdrop#2" for the second
 * detdrop link), written in buf. */
void ms__figures_link_label(const ms__figures *g, uint32_t link, char *buf,
                            size_t n);

/* Compute the figures of db. Returns 0, MS_ERR_NOMEM, or a read error. */
int ms__figures_load(ms_evdb *db, ms__figures *out, ms_errbuf *eb);
/* The text sections of the run report. */
void ms__figures_text(FILE *f, const ms__figures *g);
/* The members of the JSON report: ,"throughput":{...},... (a leading
 * comma, to follow another member). */
void ms__figures_json(FILE *f, const ms__figures *g);

#endif
