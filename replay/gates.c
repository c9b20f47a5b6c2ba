/*
 * gates.c - the end-of-run correctness gates of a replay (DESIGN §4): each
 * is checked against the shard and the controller's own tallies, recorded
 * in the event log and kept for the report.
 */
#include "replay_int.h"

#include "ms_ledger.h"

#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static void
gate_record(ms_replay *r, const char *name, bool pass, bool warn,
            const char *detail)
{
	ms_ev_gate g;
	memset(&g, 0, sizeof(g));
	snprintf(g.name, sizeof(g.name), "%s", name);
	g.pass = pass;
	g.warn = pass && warn;
	snprintf(g.detail, sizeof(g.detail), "%s", detail);
	ms_rec_gate(r->rec, &g, NULL);
	pthread_mutex_lock(&r->mu);
	if (r->ngates < sizeof(r->gates) / sizeof(r->gates[0]))
		r->gates[r->ngates++] = g;
	if (!pass)
		r->gates_failed++;
	pthread_mutex_unlock(&r->mu);
}

static void
gate(ms_replay *r, const char *name, bool pass, const char *fmt, ...)
{
	char d[MS_EV_TEXT_MAX];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(d, sizeof(d), fmt, ap);
	va_end(ap);
	gate_record(r, name, pass, false, d);
}

/* plugin_health: no link failed open (error, timeout, malformed verdict,
 * open circuit, host error), no merge took a lossless retry or kept
 * oversized traces unevaluated; and the link calls reconcile: each link's
 * own call counter equals the calls the merge events report, and calls
 * plus circuit-open skips equal the Decide calls of the merges (more when
 * a merge discarded an attempt, whose calls no merge reports). */
static void
gate_plugin_health(ms_replay *r)
{
	if (!r->pipe)
		return;
	ms_chain *c = ms_pipeline_chain(r->pipe);
	size_t n = ms_chain_len(c);
	if (n > MS_EV_LINKS_MAX)
		n = MS_EV_LINKS_MAX;
	bool calls_ok = true;
	char cw[96] = "";
	for (size_t i = 0; i < n; i++) {
		ms_link_stats st;
		ms_chain_link_stats(c, i, &st);
		uint64_t ev = r->link_calls_events[i];
		uint64_t seen = ev + r->link_circuit_events[i];
		bool ok = st.calls == ev &&
		          (r->attempts_discarded
		                   ? seen >= r->plugin_calls_events
		                   : seen == r->plugin_calls_events);
		if (!ok && calls_ok) {
			snprintf(
			        cw, sizeof(cw),
			        "link %s: %llu calls, merge events %llu + %llu "
			        "skipped, Decide %llu",
			        st.name, (unsigned long long)st.calls,
			        (unsigned long long)ev,
			        (unsigned long long)r->link_circuit_events[i],
			        (unsigned long long)r->plugin_calls_events);
			calls_ok = false;
		}
	}
	char d[MS_EV_TEXT_MAX];
	int k = snprintf(d, sizeof(d), "%llu events",
	                 (unsigned long long)r->health_kinds);
	for (size_t i = 0; i < r->nhealth && k > 0 && (size_t)k < sizeof(d);
	     i++) {
		const ms__health_ev *h = &r->health[i];
		k += snprintf(d + k, sizeof(d) - (size_t)k,
		              "%s #%llu %s %s x%llu", i ? "," : ":",
		              (unsigned long long)h->seq, h->link, h->kind,
		              (unsigned long long)h->count);
	}
	if (k > 0 && (size_t)k < sizeof(d))
		k += snprintf(d + k, sizeof(d) - (size_t)k, "; %s%s",
		              calls_ok ? "link calls reconcile with the merge "
		                         "events"
		                       : cw,
		              r->health_kinds && r->opts.allow_fail_open
		                      ? "; allowed by --allow-fail-open"
		                      : "");
	bool clean = r->health_kinds == 0;
	gate_record(r, "plugin_health",
	            calls_ok && (clean || r->opts.allow_fail_open),
	            calls_ok && !clean, d);
}

static size_t
dir_entries(const char *path)
{
	DIR *d = opendir(path);
	if (!d)
		return 0;
	size_t n = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

int
ms__replay_gates(ms_replay *r, ms_errbuf *eb)
{
	size_t nslots = ms_fixture_nslots(r->fx);
	gate(r, "publications", r->pub_done == nslots,
	     "%llu of %zu scheduled parts published",
	     (unsigned long long)r->pub_done, nslots);

	ms_view *v = NULL;
	int rc = ms_shard_view(r->shard, &v, eb);
	if (rc)
		return rc;
	size_t nparts = ms_view_count(v);

	/* Ledgers: lossless runs end with the fixture's ledgers; dropping runs
	 * with input minus the dropped rows' ledgers (r->dropped_ledger, from
	 * the independent oracle over the dropped trace IDs). */
	ms_ledger_set fin, want = r->info->ledgers, dropped;
	ms_errbuf leb = { { 0 } };
	char owhy[200] = "";
	rc = ms_ledger_of_view(v, &fin, NULL, &leb);
	if (rc == 0 && r->drop_err)
		rc = ms_fail(&leb, MS_ERR_NOMEM,
		             "a dropped trace could not "
		             "be recorded");
	if (rc == 0) {
		rc = ms__drop_oracle(&r->dropped, r->fx, &dropped, owhy,
		                     sizeof(owhy));
		if (rc)
			ms_fail(&leb, rc, "drop oracle: %s", owhy);
	}
	if (rc == 0 && r->dropped.n)
		rc = ms_ledger_set_sub(&want, &dropped);
	if (rc) {
		gate(r, "ledgers", false, "cannot reconcile: %s",
		     leb.msg[0] ? leb.msg : ms_strerror(rc));
	} else {
		r->expected = want;
		r->has_expected = true;
		bool eq = ms_ledger_set_equal(&fin, &want);
		char a[MS_LEDGER_STR_MAX], b[MS_LEDGER_STR_MAX];
		ms_ledger_format(&fin.kind[MS_KIND_CORE], a);
		ms_ledger_format(&want.kind[MS_KIND_CORE], b);
		bool idx_eq = ms_ledger_equal(&fin.kind[MS_KIND_LATENCY],
		                              &want.kind[MS_KIND_LATENCY]) &&
		              ms_ledger_equal(&fin.kind[MS_KIND_START_TIME],
		                              &want.kind[MS_KIND_START_TIME]);
		gate(r, "ledgers", eq,
		     "core %s %s input minus oracle %s; indexes %s; %zu "
		     "traces (%llu rows) dropped",
		     a, eq ? "=" : "!=", b, idx_eq ? "equal" : "DIFFER",
		     r->dropped.n, (unsigned long long)dropped.kind[0].rows);
	}

	/* Every input removed and every output introduced exactly once, core
	 * and both index parts alike, and the inventory is what those events
	 * leave. */
	size_t live[MS_KIND_COUNT] = { 0 }, present[MS_KIND_COUNT] = { 0 };
	size_t missing = 0;
	for (size_t i = 0; i < r->track_cap; i++)
		for (int k = 0; k < MS_KIND_COUNT; k++)
			if (r->track[i].id &&
			    r->track[i].introduced[k] > r->track[i].removed[k])
				live[k]++;
	for (size_t i = 0; i < nparts; i++) {
		uint64_t id = ms_view_id(v, i);
		const track_ent *t = NULL;
		for (size_t h = 0; h < r->track_cap && !t; h++)
			if (r->track[h].id == id)
				t = &r->track[h];
		for (int k = 0; k < MS_KIND_COUNT; k++) {
			if (!ms_view_part(v, i, (enum ms_part_kind)k))
				continue;
			present[k]++;
			if (!t || t->introduced[k] != 1 || t->removed[k] != 0)
				missing++;
		}
	}
	bool live_ok = true;
	for (int k = 0; k < MS_KIND_COUNT; k++)
		live_ok = live_ok && live[k] == present[k];
	gate(r, "lifecycle", !r->track_dup && live_ok && !missing,
	     "%s; active parts core/latency/start_time %zu/%zu/%zu, "
	     "expected from events %zu/%zu/%zu, %zu unexplained",
	     r->track_dup ? r->track_err
	                  : "no part introduced or removed twice",
	     present[0], present[1], present[2], live[0], live[1], live[2],
	     missing);
	ms_view_release(v);

	/* Every part that entered the shard, checked as it entered (core
	 * blocks one per trace in order, rows, both index parts). */
	gate(r, "one_block_per_trace", r->parts_ok == r->parts_in,
	     "%llu of %llu parts checked as introduced (core and both "
	     "indexes: one block per trace, order, index ledgers) in "
	     "%.0f ms%s%s%s",
	     (unsigned long long)r->parts_ok, (unsigned long long)r->parts_in,
	     (double)atomic_load(&r->check_ns) / 1e6,
	     r->part_err[0] ? "; " : "", r->part_err,
	     r->parts_gone ? " (left before it was read)" : "");
	/* Each merge's output ledgers are its inputs' minus what it
	 * dropped. */
	gate(r, "part_ledgers",
	     r->merges_unreconciled == 0 &&
	             r->merges_reconciled + r->merges_unreconciled ==
	                     r->merges_done,
	     "%llu of %llu merges: output = inputs - dropped rows, per "
	     "kind%s%s",
	     (unsigned long long)r->merges_reconciled,
	     (unsigned long long)r->merges_done, r->merge_err[0] ? "; " : "",
	     r->merge_err);

	/* No Decide for a hot selection under the selection policy. */
	if (r->policy == MS_GRACE_SELECTION)
		gate(r, "no_decide_when_hot", r->hot_decides == 0,
		     "%llu hot selections called Decide",
		     (unsigned long long)r->hot_decides);

	/* One Decide entry per trace per merge, and the bounds a plugin
	 * sees equal those rebuilt from the trace's fragments (each merge
	 * checks every trace it hands to the chain). */
	gate(r, "one_decide_per_trace", r->decide_dup_traces == 0,
	     "%llu traces handed to Decide twice in one merge, of %llu "
	     "evaluated",
	     (unsigned long long)r->decide_dup_traces,
	     (unsigned long long)r->decide_traces);
	gate(r, "plugin_bounds", r->bounds_mismatch == 0,
	     "%llu traces with MinTS/MaxTS other than their fragments' "
	     "bounds, of %llu evaluated",
	     (unsigned long long)r->bounds_mismatch,
	     (unsigned long long)r->decide_traces);

	gate_plugin_health(r);

	/* Sampling exercised: a chain that never evaluated anything did not
	 * test what it was configured for. */
	if (r->pipe && ms_chain_len(ms_pipeline_chain(r->pipe)) > 0)
		gate(r, "sampling_exercised", r->executed_merges > 0,
		     "%llu merges executed sampling",
		     (unsigned long long)r->executed_merges);

	/* Idle with nothing leaked. */
	ms_engine_stats es;
	ms_engine_get_stats(r->engine, &es);
	char tmp[PATH_MAX];
	snprintf(tmp, sizeof(tmp), "%s/tmp", r->work_dir);
	size_t leftovers = dir_entries(tmp);
	bool idle = ms_engine_is_idle(r->engine) && es.queued == 0 &&
	            es.running == 0 && es.held == 0 && es.claimed_parts == 0 &&
	            es.pending_hook == 0;
	gate(r, "idle_no_leaks",
	     idle && leftovers == 0 && es.quarantined == 0 &&
	             r->merges_failed == 0,
	     "idle %s, %zu claimed, %zu temporary entries, %zu quarantined, "
	     "%llu failed merges",
	     idle ? "yes" : "no", es.claimed_parts, leftovers, es.quarantined,
	     (unsigned long long)r->merges_failed);

	/* Event count equals completed merges. */
	ms_rec_flush(r->rec, NULL);
	ms_rec_stats rs;
	ms_rec_stats_get(r->rec, &rs);
	gate(r, "event_count",
	     rs.merges == r->merges_done + r->merges_failed &&
	             es.merges_done == r->merges_done,
	     "%llu merge events recorded, %llu merges completed by the "
	     "engine, %llu failed",
	     (unsigned long long)rs.merges, (unsigned long long)es.merges_done,
	     (unsigned long long)r->merges_failed);
	return 0;
}
