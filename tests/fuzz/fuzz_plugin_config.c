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
#include "fuzz_plugins.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
		fz_run_plugin(fz_sw_entry, s);
		break;
	case 2:
		fz_run_plugin(fz_dd_entry, s);
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
