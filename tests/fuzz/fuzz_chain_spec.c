/*
 * fuzz_chain_spec.c - libFuzzer harness for a sampler chain as the user
 * writes it (`--chain`, `--variant`): the spec parser
 * (ms_chain_spec_parse) and then every link's JSON config through the
 * plugin it names (SkyWalking and detdrop compiled in, see
 * fuzz_plugins.h), exactly as a run would open them.
 *
 * The input is the spec text (no length limit below 64 KiB: a spec is
 * kept whole however long). Oracles: a refusal carries a message; an
 * accepted spec has 1..MS_CHAIN_MAX_LINKS links (0 only for "disabled"),
 * each named [a-z0-9_-]+ with the path "<dir>/<name>.so", each name
 * appearing in the text in order, each link's config either empty or
 * a JSON object text, and no white space at either end of the text. A
 * config the spec wrote itself (detdrop:PCT as {"percent":PCT}) is one
 * the plugin's JSON reader accepts: only a config the text holds may be
 * refused as malformed JSON, since the offset of such a refusal points
 * into that text.
 */
#include "fuzz_plugins.h"
#include "fuzz_text.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool
name_ok(const char *n)
{
	if (!*n)
		return false;
	for (const char *p = n; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
		      *p == '_' || *p == '-'))
			return false;
	return true;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fz_text(data, size, 65536);
	if (!s)
		return 0;
	ms_chain_spec cs;
	ms_errbuf eb = { "" };
	int rc = ms_chain_spec_parse(&cs, s, "/p", NULL, &eb);
	if (rc) {
		if (!eb.msg[0])
			abort(); /* a refusal says why */
		ms_chain_spec_release(&cs);
		free(s);
		return 0;
	}
	if (cs.n > MS_CHAIN_MAX_LINKS)
		abort();
	size_t len = strlen(s);
	if (len && (strchr(" \t\n\r", s[0]) || strchr(" \t\n\r", s[len - 1])))
		abort(); /* white space outside a config is refused */
	const char *at = s;
	for (size_t i = 0; i < cs.n; i++) {
		char want[128];
		if (!name_ok(cs.names[i]))
			abort();
		snprintf(want, sizeof(want), "/p/%s.so", cs.names[i]);
		if (strcmp(cs.paths[i], want) != 0 ||
		    cs.links[i].path != cs.paths[i])
			abort();
		const char *hit = strstr(at, cs.names[i]);
		if (!hit)
			abort(); /* every name was written, in order */
		at = hit + strlen(cs.names[i]);
		const char *cfg = cs.configs[i];
		if (cfg && *cfg && cfg[0] != '{')
			abort();
		/* The config through the plugin that reads it. */
		if (!strcmp(cs.names[i], "skywalking"))
			fz_run_plugin(fz_sw_entry, cfg ? cfg : "");
		else if (!strcmp(cs.names[i], "detdrop")) {
			const char *why =
			        fz_run_plugin(fz_dd_entry, cfg ? cfg : "");
			if (why && !strncmp(why, "config:", 7) && cfg &&
			    !strstr(s, cfg))
				abort(); /* a JSON error in text not written */
		}
	}
	ms_chain_spec_release(&cs);
	free(s);
	return 0;
}
