/*
 * fuzz_plugin_config.c - libFuzzer harness for every configuration parser
 * of the pipeline: the plugins' shared strict JSON reader, the SkyWalking
 * and detdrop open() (config validation, tag rules and POSIX regexes; a
 * config that opens is then run on a small batch with tags), the chain
 * spec parser and the resource profile parser. The two plugins are
 * compiled in (their entry points renamed) so no dlopen is needed.
 *
 * Input: byte 0 picks the parser (mod 5), the rest is the text.
 * Any outcome but a crash, leak, hang or sanitizer report is fine; a
 * refusal must come with a message.
 */
#include "ms_pipeline.h"

#define ms_plugin_entry fz_sw_entry
#include "../../plugins/skywalking/skywalking.c"
#undef ms_plugin_entry
#define ms_plugin_entry fz_dd_entry
#include "../../plugins/detdrop/detdrop.c"
#undef ms_plugin_entry

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
run_plugin(ms_plugin_entry_fn entry, const char *cfg)
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
	char err[512];
	err[0] = '\0';
	void *st = NULL;
	if (d.open(cfg, &host, err, sizeof(err), &st) != 0) {
		if (!err[0])
			abort(); /* a refusal says why */
		return;
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
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 65536)
		return 0;
	unsigned mode = data[0] % 5;
	char *s = malloc(size);
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';
	switch (mode) {
	case 0: {
		msj_doc *d = malloc(sizeof(*d));
		char err[256];
		err[0] = '\0';
		if (msj_parse(d, s, size - 1, err, sizeof(err)) && !err[0])
			abort();
		free(d);
		break;
	}
	case 1:
		run_plugin(fz_sw_entry, s);
		break;
	case 2:
		run_plugin(fz_dd_entry, s);
		break;
	case 3: {
		ms_chain_spec cs;
		ms_errbuf eb = { "" };
		if (ms_chain_spec_parse(&cs, s, "/p", NULL, &eb) && !eb.msg[0])
			abort();
		ms_chain_spec_release(&cs);
		break;
	}
	default: {
		ms_limits l;
		memset(&l, 0, sizeof(l));
		ms_errbuf eb = { "" };
		if (ms_limits_apply_profile(&l, s, &eb) && !eb.msg[0])
			abort();
		break;
	}
	}
	free(s);
	return 0;
}
