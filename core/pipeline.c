/*
 * pipeline.c - one job: the pipeline object an engine is configured with,
 * the chain opened from a spec, the grace policy, the limits and the
 * staging ceilings derived from them, and the live staging gauge every
 * stager of the pipeline shares.
 */
#include "ms_pipeline.h"
#include "pipeline_int.h"

#include <stdatomic.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Pipeline                                                            */

struct ms_pipeline {
	ms_mem *mem;
	ms_chain *chain;
	char *spec;
	size_t spec_size;
	enum ms_grace_policy policy;
	ms_limits limits;
	uint64_t hard;
	uint64_t oversized_cap;
	uint64_t drop_set_budget;
	_Atomic uint64_t staged_live; /* sum of the stagers' live charges */
	/* The merge that began staging last: its sequence number, its
	 * preferred limit (0 before the first) and the gauge's peak since
	 * it began (raised by every stager's adds: ms_stager_opts). */
	_Atomic uint64_t staging_seq;
	_Atomic uint64_t staging_preferred;
	_Atomic uint64_t staging_peak;
};

uint64_t
ms_pipeline_staged_live(const ms_pipeline *p)
{
	return p ? atomic_load(&((ms_pipeline *)p)->staged_live) : 0;
}

_Atomic uint64_t *
ms_pipeline_live_gauge(ms_pipeline *p)
{
	return p ? &p->staged_live : NULL;
}

_Atomic uint64_t *
ms_pipeline_peak_gauge(ms_pipeline *p)
{
	return p ? &p->staging_peak : NULL;
}

void
ms_pipeline_staging(const ms_pipeline *p, ms_pipeline_stage *out)
{
	memset(out, 0, sizeof(*out));
	if (!p)
		return;
	ms_pipeline *w = (ms_pipeline *)p;
	/* The sequence number is stored last by ms_pipeline_note_staging:
	 * read it on both sides so that the three come from one merge
	 * (a few tries; the next merge begins staging rarely). */
	for (int i = 0; i < 4; i++) {
		out->seq = atomic_load(&w->staging_seq);
		out->preferred = atomic_load(&w->staging_preferred);
		out->peak = atomic_load(&w->staging_peak);
		if (atomic_load(&w->staging_seq) == out->seq)
			break;
	}
}

void
ms_pipeline_note_staging(ms_pipeline *p, uint64_t seq, uint64_t preferred)
{
	if (!p)
		return;
	atomic_store(&p->staging_peak, atomic_load(&p->staged_live));
	atomic_store(&p->staging_preferred, preferred);
	atomic_store(&p->staging_seq, seq);
}

int
ms_pipeline_open(ms_pipeline **out, const ms_pipeline_opts *opts, ms_errbuf *eb)
{
	*out = NULL;
	if (!opts)
		return ms_fail(eb, MS_ERR_INVAL, "pipeline: options missing");
	ms_pipeline *p = ms_mem_calloc(opts->mem, 1, sizeof(*p));
	if (!p)
		return ms_fail(eb, MS_ERR_NOMEM,
		               "pipeline: out of memory for its state (%zu "
		               "bytes)",
		               sizeof(*p));
	p->mem = opts->mem;
	p->policy = opts->policy;
	const char *spec = opts->spec ? opts->spec : "disabled";
	p->spec_size = strlen(spec) + 1;
	p->spec = ms_mem_dup(p->mem, spec, p->spec_size);
	if (!p->spec) {
		size_t n = p->spec_size;
		p->spec_size = 0;
		ms_pipeline_close(p);
		return ms_fail(
		        eb, MS_ERR_NOMEM,
		        "pipeline: out of memory for a copy of its chain "
		        "spec (%zu bytes)",
		        n);
	}
	if (opts->limits)
		p->limits = *opts->limits;
	else
		ms_limits_detect(&p->limits, NULL, NULL);
	p->hard = opts->hard_ceiling ? opts->hard_ceiling
	                             : ms_staging_hard_ceiling(p->limits.mem,
	                                                       p->limits.cpus);
	p->oversized_cap = opts->oversized_cap && opts->oversized_cap < p->hard
	                           ? opts->oversized_cap
	                           : p->hard;
	p->drop_set_budget =
	        opts->drop_set_budget
	                ? opts->drop_set_budget
	                : ms_dropset_budget(p->limits.mem, p->limits.cpus);
	ms_chain_spec cs;
	int rc = ms_chain_spec_parse(&cs, spec,
	                             opts->plugin_dir ? opts->plugin_dir : ".",
	                             p->mem, eb);
	if (rc) {
		ms_chain_spec_release(&cs);
		ms_pipeline_close(p);
		return rc;
	}
	ms_chain_opts co = {
		.mem = p->mem,
		.decide_timeout_ns = opts->decide_timeout_ns,
		.circuit_after = opts->circuit_after,
		.log = opts->log,
		.log_ctx = opts->log_ctx,
		.host_mode = opts->host_mode,
		.host_exe = opts->host_exe,
	};
	rc = ms_chain_open(&p->chain, cs.links, cs.n, &co, eb);
	ms_chain_spec_release(&cs);
	if (rc) {
		ms_pipeline_close(p);
		return rc;
	}
	*out = p;
	return 0;
}

void
ms_pipeline_close(ms_pipeline *p)
{
	if (!p)
		return;
	ms_chain_close(p->chain);
	ms_mem_free(p->mem, p->spec, p->spec_size);
	ms_mem_free(p->mem, p, sizeof(*p));
}

ms_chain *
ms_pipeline_chain(const ms_pipeline *p)
{
	return p->chain;
}

const char *
ms_pipeline_spec(const ms_pipeline *p)
{
	return p->spec;
}

enum ms_grace_policy
ms_pipeline_policy(const ms_pipeline *p)
{
	return p->policy;
}

const ms_limits *
ms_pipeline_limits(const ms_pipeline *p)
{
	return &p->limits;
}

uint64_t
ms_pipeline_hard_ceiling(const ms_pipeline *p)
{
	return p->hard;
}

uint64_t
ms_pipeline_drop_set_budget(const ms_pipeline *p)
{
	return p->drop_set_budget;
}

void
ms_pipeline_plan(const ms_pipeline *p, const ms_part_meta *inputs, size_t n,
                 ms_stage_plan *out)
{
	ms_stage_plan_make(out, p->hard, ms_stage_estimate(inputs, n));
	out->oversized_cap = p->oversized_cap;
}

void
ms_pipeline_plan_totals(const ms_pipeline *p, uint64_t compressed,
                        uint64_t uncompressed, uint64_t blocks,
                        ms_stage_plan *out)
{
	ms_stage_plan_make(
	        out, p->hard,
	        ms_stage_estimate_totals(compressed, uncompressed, blocks));
	out->oversized_cap = p->oversized_cap;
}
