/*
 * detdrop.c - the deterministic-drop sampler: drops a fixed percentage of
 * traces chosen by a stable hash of the trace ID alone, so the same ID
 * gets the same verdict in every merge, run and batch split. It reads no
 * column. Config: {"percent":35} (0..100, a number or a quoted number).
 *
 * A trace is dropped iff u < percent / 100, where u is the top 53 bits of
 * a mixed FNV-1a 64 hash of the ID scaled to [0, 1). FNV-1a alone keeps
 * sequential IDs ("trace-0001", "trace-0002") close in the high bits, so
 * the hash goes through the splitmix64 finalizer first.
 *
 * It counts evaluated and dropped traces (atomically: an abandoned call
 * may overlap the next) and reports the configured and observed ratios
 * through its stats and, at close, the host log.
 */
#include "ms_plugin.h"
#include "ms_plugin_json.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct dd_state {
	double percent;
	double threshold; /* percent / 100 */
	const ms_plugin_host *host;
	_Atomic uint64_t evaluated;
	_Atomic uint64_t dropped;
} dd_state;

static uint64_t
dd_hash(const uint8_t *p, uint32_t n)
{
	uint64_t h = 14695981039346656037ull;
	for (uint32_t i = 0; i < n; i++) {
		h ^= p[i];
		h *= 1099511628211ull;
	}
	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebull;
	h ^= h >> 31;
	return h;
}

static int
dd_open(const char *config, const ms_plugin_host *host, char *err,
        size_t errlen, void **state)
{
	static const char *const known[] = { "percent", NULL };
	msj_doc *d = malloc(sizeof(*d));
	if (!d) {
		snprintf(err, errlen, "detdrop: out of memory");
		return MS_PLUGIN_OPEN_NOMEM;
	}
	int rc = -1;
	double pct = 0;
	const char *unknown;
	const msj_value *v;
	if (!config || !*config) {
		snprintf(err, errlen,
		         "detdrop: empty config; expected {\"percent\":N} "
		         "with N in 0..100");
		goto out;
	}
	if (msj_parse(d, config, strlen(config), err, errlen))
		goto out;
	if ((unknown = msj_unknown_key(d, known))) {
		snprintf(err, errlen,
		         "detdrop: unknown key \"%s\" (known: percent)",
		         unknown);
		goto out;
	}
	v = msj_get(d, "percent");
	if (!v) {
		snprintf(err, errlen, "detdrop: missing key \"percent\"");
		goto out;
	}
	if (msj_as_number(v, &pct) || !(pct >= 0.0 && pct <= 100.0)) {
		snprintf(err, errlen,
		         "detdrop: \"percent\" must be a number in 0..100");
		goto out;
	}
	dd_state *s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, errlen, "detdrop: out of memory");
		rc = MS_PLUGIN_OPEN_NOMEM;
		goto out;
	}
	s->percent = pct;
	s->threshold = pct / 100.0;
	s->host = host;
	*state = s;
	rc = 0;
out:
	free(d);
	return rc;
}

static int64_t
dd_decide(void *state, const ms_plugin_batch *b, uint8_t *verdict, size_t n)
{
	dd_state *s = state;
	uint64_t dropped = 0;
	for (size_t i = 0; i < n; i++) {
		const ms_plugin_trace *t = &b->traces[i];
		double u =
		        (double)(dd_hash(t->trace_id, t->trace_id_len) >> 11) *
		        (1.0 / 9007199254740992.0);
		bool drop = u < s->threshold;
		verdict[i] = drop ? MS_VERDICT_DROP : MS_VERDICT_KEEP;
		dropped += drop;
	}
	atomic_fetch_add(&s->evaluated, n);
	atomic_fetch_add(&s->dropped, dropped);
	return (int64_t)n;
}

static size_t
dd_stats(void *state, ms_plugin_stat *out, size_t cap)
{
	dd_state *s = state;
	uint64_t ev = atomic_load(&s->evaluated);
	uint64_t dr = atomic_load(&s->dropped);
	ms_plugin_stat all[4] = {
		{ "configured_ppm", (uint64_t)(s->percent * 10000.0 + 0.5) },
		{ "evaluated", ev },
		{ "dropped", dr },
		{ "observed_ppm", ev ? (dr * 1000000 + ev / 2) / ev : 0 },
	};
	for (size_t i = 0; i < 4 && i < cap; i++)
		out[i] = all[i];
	return 4;
}

static void
dd_close(void *state)
{
	dd_state *s = state;
	if (!s)
		return;
	uint64_t ev = atomic_load(&s->evaluated);
	uint64_t dr = atomic_load(&s->dropped);
	if (s->host && s->host->log) {
		char msg[160];
		snprintf(msg, sizeof(msg),
		         "configured %.3f%%, observed %.3f%% (%llu of %llu "
		         "traces dropped)",
		         s->percent, ev ? 100.0 * (double)dr / (double)ev : 0.0,
		         (unsigned long long)dr, (unsigned long long)ev);
		s->host->log(s->host->ctx, MS_PLUGIN_LOG_INFO, "detdrop", msg);
	}
	free(s);
}

static const ms_plugin_desc dd_desc = {
	.struct_size = sizeof(ms_plugin_desc),
	.abi_major = MS_PLUGIN_ABI_MAJOR,
	.abi_minor = MS_PLUGIN_ABI_MINOR,
	.name = "detdrop",
	.version = "1",
	.projection = MS_PROJ_NONE,
	.open = dd_open,
	.decide = dd_decide,
	.close = dd_close,
	.stats = dd_stats,
};

MS_PLUGIN_DEFINE(dd_desc)
