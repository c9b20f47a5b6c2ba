/*
 * ev_fixture.h - a deterministic, realistic recorded run for the event-log
 * tests (recorder, export, report): a day of publications with merges on
 * three lanes, every classification, a two-link chain, lifecycle events,
 * samples, phases and gates. Header-only, test code.
 */
#ifndef MS_TEST_EV_FIXTURE_H
#define MS_TEST_EV_FIXTURE_H

#include "ms_replay_events.h"

#include <stdio.h>
#include <string.h>

#define EVF_HOUR (3600LL * 1000000000LL)
#define EVF_T0 (1700000000LL * 1000000000LL)

static inline uint64_t
evf_mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

static inline void
evf_run(ms_ev_run *r, const char *variant)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->version, sizeof(r->version), "0.1.0");
	r->started_unix_ns = 1700000000123456789LL;
	snprintf(r->fixture_dir, sizeof(r->fixture_dir),
	         "/cache/mergescope/day-2x-seed1");
	snprintf(r->fixture_preset, sizeof(r->fixture_preset), "day-2x");
	r->fixture_seed = 1;
	snprintf(r->fixture_hash, sizeof(r->fixture_hash), "%064x", 0xabc);
	snprintf(r->fixture_parts_hash, sizeof(r->fixture_parts_hash), "%064x",
	         0xdef);
	snprintf(r->variant, sizeof(r->variant), "%s", variant);
	snprintf(r->grace_policy, sizeof(r->grace_policy), "selection");
	snprintf(r->plugin_host, sizeof(r->plugin_host), "inproc");
	r->serial = true;
	if (strcmp(variant, "disabled") != 0) {
		snprintf(r->chain, sizeof(r->chain), "%s:{}", variant);
		r->nplugins = 2;
		for (uint32_t i = 0; i < 2; i++) {
			ms_ev_plugin *p = &r->plugins[i];
			snprintf(p->name, sizeof(p->name), "%s",
			         i ? "detdrop" : variant);
			snprintf(p->path, sizeof(p->path), "/lib/%s.so",
			         i ? "detdrop" : variant);
			snprintf(p->config, sizeof(p->config),
			         "pct=35, \"quoted\"");
			snprintf(p->checksum, sizeof(p->checksum), "%064x",
			         0x1234 + i);
		}
	}
	r->detected_cpus = 2;
	r->detected_mem_bytes = 4ULL << 30;
	r->detected_disk_free_bytes = 100ULL << 30;
	snprintf(r->profile, sizeof(r->profile), "default");
	r->emulated_cpus = 2;
	r->emulated_mem_bytes = 4ULL << 30;
	snprintf(r->limits_mode, sizeof(r->limits_mode), "cgroup1");
	r->pids_max = 512;
	r->fast_workers = 1;
	r->slow_workers = 1;
	snprintf(r->hostname, sizeof(r->hostname), "bench-host");
	snprintf(r->kernel, sizeof(r->kernel), "Linux 6.1.0");
	snprintf(r->filesystem, sizeof(r->filesystem), "ext4");
	snprintf(r->device, sizeof(r->device), "/dev/vda (254:0)");
	snprintf(r->clone_method, sizeof(r->clone_method), "copy");
	for (int k = 0; k < MS_KIND_COUNT; k++) {
		r->input_ledger.kind[k].rows = 325570;
		r->input_ledger.kind[k].sum_hi = 0x8000000000000000ULL + k;
		r->input_ledger.kind[k].sum_lo = 0xfedcba9876543210ULL - k;
	}
}

static inline void
evf_end(ms_ev_run_end *e, const ms_ev_run *r, uint64_t merges)
{
	memset(e, 0, sizeof(*e));
	snprintf(e->status, sizeof(e->status), "complete");
	e->ended_unix_ns = r->started_unix_ns + 9 * 1000000000LL;
	e->wall_ns = 9000000000LL;
	e->publications = merges * 11;
	e->merges_completed = merges;
	snprintf(e->selection_fp, sizeof(e->selection_fp), "%016llx",
	         0x5eed5eed5eedULL);
	e->final_ledger = r->input_ledger;
	e->expected_ledger = r->input_ledger;
	e->record_ns = 12345678;
	e->cgroup_peak_bytes = 150ULL << 20;
	e->cgroup_nr_throttled = 12;
	e->cgroup_throttled_ns = 300000000;
}

/* Merge number seq (1-based) of a run of n merges; inputs (capacity 16)
 * receive its inputs. */
static inline void
evf_merge(ms_ev_merge *m, ms_ev_input *inputs, uint64_t seq, uint64_t n,
          bool plugins)
{
	uint64_t h = evf_mix(seq);
	memset(m, 0, sizeof(*m));
	m->seq = seq;
	m->phase =
	        seq * 10 > n * 9 ? MS_EV_PHASE_COOLDOWN : MS_EV_PHASE_PRIMARY;
	const char *lane = seq == n       ? MS_LANE_FINALIZE
	                   : (h % 7 == 0) ? MS_LANE_SLOW
	                                  : MS_LANE_FAST;
	snprintf(m->lane, sizeof(m->lane), "%s", lane);
	m->worker = (uint32_t)(h >> 8) % 2;
	m->logical_ns = EVF_T0 + (int64_t)(seq * 24 * EVF_HOUR / (n + 1));
	m->frontier_ns = m->logical_ns - 2 * EVF_HOUR;
	m->epoch_before = seq * 11;
	m->pass = 1 + (h >> 20) % 2;
	m->m = 7.5 + (double)(h % 100) / 8.0;
	m->max_fan_out = 1ULL << 40;
	m->ninputs = 8 + (h >> 12) % 8;
	m->min_depth = 99;
	for (size_t i = 0; i < m->ninputs; i++) {
		ms_ev_input *in = &inputs[i];
		memset(in, 0, sizeof(*in));
		in->id = seq * 100 + i;
		in->bytes = 1000 + (evf_mix(in->id) % 100000);
		in->uncompressed_bytes = in->bytes * 3;
		in->rows = 10 + in->bytes / 100;
		in->blocks = in->rows / 3;
		in->depth = (uint32_t)(evf_mix(in->id) % 4);
		/* every third selection is entirely mature */
		int64_t shift = h % 3 == 0 ? 3 * EVF_HOUR : 0;
		in->max_ts =
		        m->logical_ns - shift - (int64_t)(i * EVF_HOUR / 2);
		in->min_ts = in->max_ts - EVF_HOUR / 4;
		in->mature = in->max_ts <= m->frontier_ns;
		m->input_bytes += in->bytes;
		m->input_rows += in->rows;
		if (in->depth < m->min_depth)
			m->min_depth = in->depth;
		if (in->depth > m->max_depth)
			m->max_depth = in->depth;
		if (i == 0 || in->min_ts < m->input_min_ts)
			m->input_min_ts = in->min_ts;
		if (i == 0 || in->max_ts > m->input_max_ts)
			m->input_max_ts = in->max_ts;
		if (in->mature) {
			m->mature_parts++;
			m->mature_rows += in->rows;
		} else {
			m->hot_parts++;
			m->hot_rows += in->rows;
		}
	}
	m->inputs = inputs;
	ms_merge_sampling *s = &m->sampling;
	if (!plugins) {
		s->klass = MS_SAMPLING_NOT_EXECUTED;
		s->reason = MS_SREASON_PIPELINE_DISABLED;
	} else if (m->hot_parts) {
		s->klass = MS_SAMPLING_NOT_EXECUTED;
		s->reason = MS_SREASON_MERGE_GRACE;
	} else if (h % 5 == 0) {
		s->klass = MS_SAMPLING_ENABLED_NO_EVALUATION;
		s->reason = MS_SREASON_ALL_TRACES_OVERSIZED;
		s->traces_oversized = 3;
	} else {
		s->klass = MS_SAMPLING_EXECUTED;
		s->reason = MS_SREASON_NONE;
		s->traces_evaluated = m->input_rows / 4;
		s->traces_dropped = s->traces_evaluated / 3;
		s->traces_kept = s->traces_evaluated - s->traces_dropped;
		s->traces_deferred = 2;
		s->rows_dropped = s->traces_dropped * 4;
		s->batches_planned = 1;
		s->batches = 1;
		s->plugin_calls = 2;
		s->decide_ns = 1500000;
		s->decide_dup_traces = h % 3;
		s->bounds_mismatch = h % 7;
		/* Only a failed merge (seq % 97 == 0) carries a nonzero
		 * hot_decided: it is recorded, and no gate counts it. */
		s->hot_decided = seq % 97 == 0 ? 1 + h % 5 : 0;
		s->peak_staged_bytes = m->input_bytes * 2;
		s->estimate_bytes = m->input_bytes * 3;
		s->hard_limit_bytes = 256ULL << 20;
		s->preferred_limit_bytes = 32ULL << 20;
		s->nbatch_recs = 1;
		s->batch[0] = (ms_merge_batch){ s->peak_staged_bytes,
			                        (uint32_t)s->traces_evaluated,
			                        (uint32_t)s->traces_evaluated,
			                        3 /* final */ };
		s->arena_cold_bytes = s->peak_staged_bytes;
		m->nlinks = 2;
		for (uint32_t l = 0; l < 2; l++) {
			ms_ev_link *k = &m->links[l];
			snprintf(k->name, sizeof(k->name), "%s",
			         l ? "detdrop" : "skywalking");
			k->calls = 1;
			k->traces = s->traces_evaluated;
			k->kept = s->traces_kept + l;
			k->total_ns = 700000 + (int64_t)l * 100000;
			k->max_ns = k->total_ns;
			k->hist[ms_ev_hist_bucket(k->total_ns)] = 1;
			/* one in 23 merges: a link timed out (round trip of
			 * the per-kind fail-open counters) */
			if (l == 1 && seq % 23 == 0) {
				k->fails[3] = 1;
				snprintf(k->fail_open, sizeof(k->fail_open),
				         "timeout");
			}
		}
	}
	m->predict_class = s->klass;
	m->predict_reason = s->reason;
	m->wall_dispatch_ns = (int64_t)seq * 20000000;
	m->queue_ns = 1000 + (int64_t)(h % 1000);
	if (seq % 97 == 0) {
		m->err = MS_ERR_IO;
		snprintf(m->error, sizeof(m->error),
		         "part %016llx: data: short read, \"quoted\", comma",
		         (unsigned long long)inputs[0].id);
	} else {
		m->output.id = 1000000 + seq;
		m->output.compressed_bytes = m->input_bytes + 17;
		m->output.uncompressed_bytes = m->input_bytes * 3;
		m->output.rows = m->input_rows - s->rows_dropped;
		m->output.blocks = m->output.rows / 3;
		m->output.traces = m->output.rows / 4;
		m->output.min_ts = m->input_min_ts;
		m->output.max_ts = m->input_max_ts;
		m->output.depth = m->max_depth + 1;
		m->output.checksum = evf_mix(seq ^ 0xffffffffffffffffULL);
		for (int k = MS_KIND_LATENCY; k <= MS_KIND_START_TIME; k++) {
			ms_merge_index_stats *x = &m->index[k];
			x->rows_in = m->input_rows;
			x->rows_out = m->output.rows;
			x->rows_pruned = s->rows_dropped;
			x->blocks_in = 10;
			x->blocks_out = 5;
			x->bytes_in = m->input_bytes / 3;
			x->bytes_out = m->input_bytes / 3 - 5;
			x->wall_ns = 100000;
			x->done = true;
		}
	}
	m->epoch_after = m->err ? 0 : m->epoch_before + 1;
	m->rows_in = m->input_rows;
	m->rows_out = m->output.rows;
	m->traces_in = m->input_rows / 4;
	m->traces_out = m->output.traces;
	m->wall_start_ns = m->wall_dispatch_ns + m->queue_ns;
	m->wall_ns = 2000000 + (int64_t)(h % 5000000);
	m->cpu_ns = m->wall_ns - 100000;
	m->process_cpu_ns = m->wall_ns;
	m->alloc_bytes = m->input_bytes * 5;
	m->alloc_count = 100 + h % 100;
	m->peak_live = (int64_t)m->input_bytes;
	m->rss_peak = 50ULL << 20;
	m->bytes_read = m->input_bytes;
	m->bytes_written = m->output.compressed_bytes;
	m->fsyncs = 6;
	m->inv_parts = 20 + h % 10;
	m->inv_bytes = m->inv_parts * 10000;
}

static inline void
evf_pub(ms_ev_pub *p, uint64_t seq)
{
	memset(p, 0, sizeof(*p));
	p->seq = seq;
	p->logical_ns = EVF_T0 + (int64_t)seq * 26800000000LL;
	p->wall_ns = (int64_t)seq * 2000000;
	p->part_id = 1 + seq;
	p->bytes = 1400 + seq % 100;
	p->rows = 100;
	p->min_ts = p->logical_ns - EVF_HOUR;
	p->max_ts = p->logical_ns;
	p->epoch = seq + 1;
	p->publish_ns = 50000;
	p->idle_ns = 150000;
	p->merges = seq % 11 == 10;
	p->inv_parts = 10 + seq % 8;
	p->inv_bytes = p->inv_parts * 1400;
}

static inline void
evf_phase(ms_ev_phase *p, enum ms_ev_phase_id id)
{
	memset(p, 0, sizeof(*p));
	p->phase = id;
	bool pri = id == MS_EV_PHASE_PRIMARY;
	p->logical_start_ns = pri ? EVF_T0 : EVF_T0 + 24 * EVF_HOUR;
	p->logical_end_ns = p->logical_start_ns + (pri ? 24 : 2) * EVF_HOUR;
	p->wall_ns = pri ? 8000000000LL : 1000000000LL;
	p->cpu_ns = pri ? 7500000000LL : 900000000LL;
	p->alloc_bytes = pri ? (2ULL << 30) : (256ULL << 20);
	p->alloc_count = pri ? 1000000 : 120000;
	p->peak_live = pri ? (64LL << 20) : (48LL << 20);
	p->rss_peak = pri ? (135ULL << 20) : (140ULL << 20);
	p->bytes_read = pri ? (300ULL << 20) : (80ULL << 20);
	p->bytes_written = pri ? (310ULL << 20) : (82ULL << 20);
	p->fsyncs = pri ? 9000 : 300;
	p->drain_ns = pri ? 20000000 : 500000000;
	p->rss_anon_peak = pri ? (40ULL << 20) : (30ULL << 20);
	p->rss_file_peak = pri ? (15ULL << 20) : (20ULL << 20);
	p->rss_shmem_peak = pri ? (80ULL << 20) : (90ULL << 20);
	p->staging_ns = pri ? 1250000000LL : 0;
	p->staging_fsyncs = pri ? 3 : 0;
	if (id == MS_EV_PHASE_STAGING) { /* the time before primary */
		p->logical_start_ns = p->logical_end_ns = EVF_T0;
		p->wall_ns = 1500000000LL;
		p->cpu_ns = 1400000000LL;
		p->drain_ns = 0;
		p->fsyncs = 3;
		p->rss_peak = 60ULL << 20;
		p->rss_anon_peak = 32ULL << 20;
		p->rss_file_peak = 12ULL << 20;
		p->rss_shmem_peak = 16ULL << 20;
	}
}

/* Merge m as an alwayskeep run records it: every trace its chain
 * evaluated kept, no row dropped. */
static inline void
evf_keep_all(ms_ev_merge *m)
{
	ms_merge_sampling *s = &m->sampling;
	s->traces_kept += s->traces_dropped;
	s->traces_dropped = 0;
	s->rows_dropped = 0;
	if (m->err)
		return;
	m->output.rows = m->input_rows;
	m->output.blocks = m->output.rows / 3;
	m->output.traces = m->output.rows / 4;
	m->rows_out = m->output.rows;
	m->traces_out = m->output.traces;
	for (int k = MS_KIND_LATENCY; k <= MS_KIND_START_TIME; k++) {
		m->index[k].rows_out = m->output.rows;
		m->index[k].rows_pruned = 0;
	}
}

/* Merge seq of a run of n merges of variant, as evf_record_ex records
 * it. */
static inline void
evf_merge_of(ms_ev_merge *m, ms_ev_input *inputs, uint64_t seq, uint64_t n,
             const char *variant)
{
	evf_merge(m, inputs, seq, n, strcmp(variant, "disabled") != 0);
	if (strcmp(variant, "alwayskeep") == 0)
		evf_keep_all(m);
}

/* The end of a run of n merges of variant, as evf_record_ex records it:
 * evf_end's, its final and expected ledgers the fixture's minus the rows
 * its completed merges dropped (one row in each index per core row), so
 * that the log agrees with itself. */
static inline void
evf_end_of(ms_ev_run_end *e, const ms_ev_run *r, const char *variant,
           uint64_t n)
{
	evf_end(e, r, n);
	uint64_t dropped = 0;
	ms_ev_input inputs[16];
	for (uint64_t s = 1; s <= n; s++) {
		ms_ev_merge m;
		evf_merge_of(&m, inputs, s, n, variant);
		if (!m.err)
			dropped += m.sampling.rows_dropped;
	}
	for (int k = 0; k < MS_KIND_COUNT; k++) {
		e->expected_ledger.kind[k].rows -= dropped;
		e->final_ledger.kind[k].rows -= dropped;
	}
}

/* A recorder on path (overwriting) with the start of a run of variant
 * recorded (*run filled by evf_run). 0 or ms_err; *r NULL on error. */
static inline int
evf_begin(ms_rec **r, const char *path, const char *variant, ms_ev_run *run,
          ms_errbuf *eb)
{
	ms_rec_opts o = { .path = path, .overwrite = true };
	int rc = ms_rec_open(r, &o, eb);
	if (rc < 0)
		return rc;
	evf_run(run, variant);
	rc = ms_rec_run_begin(*r, run, eb);
	if (rc < 0) {
		ms_rec_close(*r, NULL);
		*r = NULL;
	}
	return rc;
}

/* Record a whole run of n merges into path (overwriting). 0 or ms_err.
 * primary_wall_ns (0 = the default 8 s) and fp (NULL = the default) let a
 * test make two runs differ. */
static inline int
evf_record_ex(const char *path, const char *variant, uint64_t n,
              int64_t primary_wall_ns, const char *fp, ms_errbuf *eb)
{
	ms_rec *r = NULL;
	ms_ev_run run;
	int rc = evf_begin(&r, path, variant, &run, eb);
	if (rc < 0)
		return rc;
	ms_ev_input inputs[16];
	for (uint64_t s = 1; rc == 0 && s <= n; s++) {
		ms_ev_pub p;
		evf_pub(&p, s - 1);
		rc = ms_rec_pub(r, &p, eb);
		ms_ev_merge m;
		evf_merge_of(&m, inputs, s, n, variant);
		if (rc == 0)
			rc = ms_rec_merge(r, &m, eb);
		for (size_t i = 0; rc == 0 && !m.err && i < m.ninputs; i++) {
			/* As the run records a removal: no bytes. */
			ms_ev_part pe = { .what = MS_EV_PART_REMOVED,
				          .part_id = inputs[i].id,
				          .logical_ns = m.logical_ns,
				          .epoch = m.epoch_after,
				          .cause_seq = s };
			snprintf(pe.cause, sizeof(pe.cause), "merge");
			rc = ms_rec_part(r, &pe, eb);
		}
		if (rc == 0 && !m.err) {
			ms_ev_part pe = { .what = MS_EV_PART_INTRODUCED,
				          .part_id = m.output.id,
				          .logical_ns = m.logical_ns,
				          .epoch = m.epoch_after,
				          .cause_seq = s,
				          .bytes = { m.output.compressed_bytes },
				          .rows = { m.output.rows },
				          .depth = m.output.depth };
			snprintf(pe.cause, sizeof(pe.cause), "merge");
			rc = ms_rec_part(r, &pe, eb);
		}
		if (rc == 0 && s % 10 == 0) {
			ms_ev_sample sm = {
				.wall_ns = (int64_t)s * 20000000,
				.logical_ns = m.logical_ns,
				.phase = m.phase,
				.inv_parts = m.inv_parts,
				.inv_bytes = m.inv_bytes,
				.staged_bytes = m.sampling.peak_staged_bytes,
				.live_bytes = 1 << 20,
				.rss_bytes = 50 << 20,
				.cpu_ns = (int64_t)s * 10000000,
				.running = 1
			};
			rc = ms_rec_sample(r, &sm, eb);
		}
	}
	for (int ph = 0; rc == 0 && ph < MS_EV_PHASE_ROWS; ph++) {
		ms_ev_phase p;
		evf_phase(&p, (enum ms_ev_phase_id)ph);
		if (ph == MS_EV_PHASE_PRIMARY && primary_wall_ns)
			p.wall_ns = primary_wall_ns;
		rc = ms_rec_phase(r, &p, eb);
	}
	ms_ev_gate g1 = { .name = "ledgers",
		          .pass = true,
		          .detail = "core, latency, start_time equal" };
	ms_ev_gate g2 = { .name = "hot_decide",
		          .pass = strcmp(variant, "bad") != 0,
		          .detail = "no Decide for a hot selection" };
	if (rc == 0)
		rc = ms_rec_gate(r, &g1, eb);
	if (rc == 0)
		rc = ms_rec_gate(r, &g2, eb);
	ms_ev_run_end e;
	evf_end_of(&e, &run, variant, n);
	if (fp)
		snprintf(e.selection_fp, sizeof(e.selection_fp), "%s", fp);
	if (rc == 0)
		rc = ms_rec_run_end(r, &e, eb);
	int rc2 = ms_rec_close(r, eb);
	return rc ? rc : rc2;
}

static inline int
evf_record(const char *path, const char *variant, uint64_t n, ms_errbuf *eb)
{
	return evf_record_ex(path, variant, n, 0, NULL, eb);
}

#endif
