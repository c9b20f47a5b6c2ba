/*
 * chain_spec.c - one job: parsing a chain spec ("detdrop:35,skywalking",
 * "disabled", JSON configs) into the plugin paths and configs of a chain's
 * links. Nothing is loaded here (plugin_loader.c) nor run (chain.c).
 */
#include "ms_chain_spec.h"
#include "pipeline_int.h"

#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Chain specs                                                         */

static void
spec_free_strings(ms_chain_spec *s)
{
	for (size_t i = 0; i < MS_CHAIN_MAX_LINKS; i++) {
		if (s->paths[i])
			ms_mem_free(s->mem, s->paths[i],
			            strlen(s->paths[i]) + 1);
		if (s->configs[i])
			ms_mem_free(s->mem, s->configs[i],
			            strlen(s->configs[i]) + 1);
		s->paths[i] = s->configs[i] = NULL;
	}
	s->n = 0;
}

void
ms_chain_spec_release(ms_chain_spec *s)
{
	if (s)
		spec_free_strings(s);
}

static char *
dup_range(ms_mem *mem, const char *p, size_t n)
{
	char *s = ms_mem_alloc(mem, n + 1);
	if (s) {
		memcpy(s, p, n);
		s[n] = '\0';
	}
	return s;
}

/* Length of one link at spec[i..]: up to a comma outside braces and
 * strings. -1 if braces or quotes do not balance. */
static long
link_extent(const char *s, size_t i)
{
	int depth = 0;
	bool str = false;
	size_t k = i;
	for (; s[k]; k++) {
		char ch = s[k];
		if (str) {
			if (ch == '\\' && s[k + 1])
				k++;
			else if (ch == '"')
				str = false;
			continue;
		}
		if (ch == '"')
			str = true;
		else if (ch == '{' || ch == '[')
			depth++;
		else if (ch == '}' || ch == ']') {
			if (--depth < 0)
				return -1;
		} else if (ch == ',' && depth == 0)
			break;
	}
	if (str || depth != 0)
		return -1;
	return (long)(k - i);
}

static bool
is_space(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

/* Whether s[0..n) is digits with no leading zero (but "0" itself),
 * then optionally '.' and at least one digit: a JSON number without
 * sign or exponent. */
static bool
plain_number(const char *s, size_t n)
{
	size_t k = 0;
	while (k < n && s[k] >= '0' && s[k] <= '9')
		k++;
	if (k == 0 || (k > 1 && s[0] == '0'))
		return false;
	if (k == n)
		return true;
	if (s[k] != '.' || k + 1 == n)
		return false;
	for (k++; k < n; k++)
		if (s[k] < '0' || s[k] > '9')
			return false;
	return true;
}

/* What a stray white-space character is called in a message. */
static const char *
space_name(char ch)
{
	return ch == ' '    ? "a space"
	       : ch == '\t' ? "a tab"
	       : ch == '\n' ? "a newline"
	                    : "a carriage return";
}

static int
spec_link(ms_chain_spec *out, const char *tok, size_t len, size_t pos,
          const char *dir, ms_errbuf *eb)
{
	size_t colon = 0;
	while (colon < len && tok[colon] != ':')
		colon++; /* the name ends at the ':' (or the link's end) */
	/* White space is taken only inside a JSON config, between its first
	 * and last brace, where JSON allows it. Anywhere else ("detdrop:35 ",
	 * " skywalking", "a, b") it is refused, not trimmed. */
	size_t cfg_a = len, cfg_b = len;
	if (colon + 1 < len && tok[colon + 1] == '{') {
		cfg_a = colon + 1;
		for (cfg_b = len; cfg_b > cfg_a && tok[cfg_b - 1] != '}';)
			cfg_b--;
	}
	for (size_t k = 0; k < len; k++)
		if (is_space(tok[k]) && (k < cfg_a || k >= cfg_b))
			return ms_fail(eb, MS_ERR_INVAL,
			               "chain spec: offset %zu (link %zu): %s; "
			               "expected none outside a JSON config "
			               "(like skywalking,detdrop:35)",
			               pos + k, out->n + 1, space_name(tok[k]));
	size_t nl = colon;
	if (nl == 0)
		return ms_fail(eb, MS_ERR_INVAL,
		               "chain spec: offset %zu: expected a plugin "
		               "name",
		               pos);
	if (nl >= 64)
		return ms_fail(eb, MS_ERR_INVAL,
		               "chain spec: offset %zu: plugin name of %zu "
		               "characters, expected at most 63",
		               pos, nl);
	char name[64];
	memcpy(name, tok, nl);
	name[nl] = '\0';
	if (!ms__plugin_name_valid(name))
		return ms_fail(eb, MS_ERR_INVAL,
		               "chain spec: offset %zu: plugin name '%s' "
		               "must be [a-z0-9_-]",
		               pos, name);
	if (strcmp(name, "disabled") == 0)
		return ms_fail(eb, MS_ERR_INVAL,
		               "chain spec: 'disabled' cannot be combined "
		               "with other links");
	const char *arg = colon < len ? tok + colon + 1 : NULL;
	size_t alen = arg ? len - colon - 1 : 0;
	if (out->n >= MS_CHAIN_MAX_LINKS)
		return ms_fail(eb, MS_ERR_RANGE,
		               "chain spec: offset %zu (link %zu): a chain "
		               "holds at most %d links",
		               pos, out->n + 1, MS_CHAIN_MAX_LINKS);
	size_t i = out->n;
	char cfg[96];
	const char *cp = "";
	size_t clen = 0;
	if (arg && alen && arg[0] == '{') {
		cp = arg;
		clen = alen;
	} else if (arg && strcmp(name, "detdrop") == 0) {
		/* detdrop:PCT - a plain number 0..100, written as JSON
		 * writes one (it becomes the config {"percent":PCT}, whose
		 * errors would otherwise point into text nobody wrote):
		 * digits without a leading zero, then maybe '.' and
		 * digits. */
		if (alen == 0 || alen > 12 || !plain_number(arg, alen))
			return ms_fail(eb, MS_ERR_INVAL,
			               "chain spec: offset %zu: detdrop "
			               "expects a percentage (detdrop:35) or "
			               "a JSON config",
			               pos);
		snprintf(cfg, sizeof(cfg), "{\"percent\":%.*s}", (int)alen,
		         arg);
		cp = cfg;
		clen = strlen(cfg);
	} else if (arg) {
		return ms_fail(eb, MS_ERR_INVAL,
		               "chain spec: offset %zu: plugin '%s' expects "
		               "a JSON object config after ':'",
		               pos, name);
	} else if (strcmp(name, "skywalking") == 0) {
		cp = MS_SKYWALKING_DEFAULT_CONFIG;
		clen = strlen(cp);
	}
	size_t dl = strlen(dir), plen;
	if (!ms_add_ok(dl, nl + 5, &plen))
		return ms_fail(eb, MS_ERR_RANGE, "chain spec: path too long");
	out->paths[i] = ms_mem_alloc(out->mem, plen);
	if (!out->paths[i])
		return ms_fail(eb, MS_ERR_NOMEM,
		               "chain spec: plugin '%s': out of memory for its "
		               "path (%zu bytes)",
		               name, plen);
	/* Written before anything else can fail: spec_free_strings sizes it
	 * by its length. */
	snprintf(out->paths[i], plen, "%s/%s.so", dir, name);
	out->configs[i] = dup_range(out->mem, cp, clen);
	if (!out->configs[i])
		return ms_fail(eb, MS_ERR_NOMEM,
		               "chain spec: plugin '%s': out of memory for its "
		               "config (%zu bytes)",
		               name, clen + 1);
	snprintf(out->names[i], sizeof(out->names[i]), "%s", name);
	out->links[i].path = out->paths[i];
	out->links[i].config = out->configs[i];
	out->n++;
	return 0;
}

int
ms_chain_spec_parse(ms_chain_spec *out, const char *spec,
                    const char *plugin_dir, ms_mem *mem, ms_errbuf *eb)
{
	memset(out, 0, sizeof(*out));
	out->mem = mem;
	if (!spec || !plugin_dir)
		return ms_fail(eb, MS_ERR_INVAL, "chain spec: missing");
	if (!*spec)
		return ms_fail(eb, MS_ERR_INVAL, "chain spec: empty");
	if (strcmp(spec, "disabled") == 0)
		return 0;
	size_t i = 0;
	for (;;) {
		long ext = link_extent(spec, i);
		if (ext < 0) {
			spec_free_strings(out);
			return ms_fail(eb, MS_ERR_INVAL,
			               "chain spec: offset %zu: unbalanced "
			               "braces or quotes",
			               i);
		}
		int rc = spec_link(out, spec + i, (size_t)ext, i, plugin_dir,
		                   eb);
		if (rc) {
			spec_free_strings(out);
			return rc;
		}
		i += (size_t)ext;
		if (!spec[i])
			break;
		i++; /* the comma */
	}
	return 0;
}
