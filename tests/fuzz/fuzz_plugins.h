/*
 * fuzz_plugins.h - the two configurable plugins compiled into a fuzz
 * harness (entry points renamed, so no dlopen is needed) and
 * fz_run_plugin, which opens one with a config text and, when it opens,
 * runs it on a small batch with tags. Shared by fuzz_plugin_config.c and
 * fuzz_chain_spec.c.
 */
#ifndef MS_FUZZ_PLUGINS_H
#define MS_FUZZ_PLUGINS_H

#include "ms_pipeline.h"

#define ms_plugin_entry fz_sw_entry
#include "../../plugins/skywalking/skywalking.c"
#undef ms_plugin_entry
#define ms_plugin_entry fz_dd_entry
#include "../../plugins/detdrop/detdrop.c"
#undef ms_plugin_entry

#include <stdlib.h>
#include <string.h>

/* NULL when the plugin opened with cfg (and decided), else its refusal
 * (until the next call). */
static const char *
fz_run_plugin(ms_plugin_entry_fn entry, const char *cfg)
{
	ms_plugin_desc d;
	memset(&d, 0, sizeof(d));
	if (entry(&d, sizeof(d)))
		abort();
	ms_plugin_host host = { sizeof(host),
		                MS_PLUGIN_ABI_MAJOR,
		                MS_PLUGIN_ABI_MINOR,
		                NULL,
		                NULL,
		                NULL };
	static char err[512];
	err[0] = '\0';
	void *st = NULL;
	if (d.open(cfg, &host, err, sizeof(err), &st) != 0) {
		if (!err[0])
			abort(); /* a refusal says why */
		return err;
	}
	static const char *const tags[] = { "http.url=/api/v1/x", "db=x", "k",
		                            "k=", "=v" };
	ms_row rows[3];
	memset(rows, 0, sizeof(rows));
	for (int i = 0; i < 3; i++) {
		rows[i].trace_id = (const uint8_t *)(i < 2 ? "aa" : "bb");
		rows[i].trace_id_len = 2;
		rows[i].start_ns = i * 1000000;
		rows[i].latency_ms = (uint32_t)i;
		rows[i].tags = tags;
		rows[i].ntags = 5;
	}
	ms_batch *b;
	if (ms_batch_from_rows(&b, NULL, MS_PROJ_ALL, rows, 3, NULL) == 0) {
		uint8_t v[2];
		if (d.decide(st, ms_batch_view(b), v, 2) != 2 || v[0] > 1 ||
		    v[1] > 1)
			abort();
		ms_batch_release(b);
	}
	d.close(st);
	return NULL;
}

#endif
