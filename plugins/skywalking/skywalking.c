/*
 * skywalking.c - the default SkyWalking trace sampler as a plugin.
 *
 * Config (JSON object; absent keys take the defaults shown):
 *   {"durationThresholdMs":500, "keepErrors":true, "healthySampleRate":0.1,
 *    "keepTagRules":["key", "key=value", "key=~regex"]}
 * healthySampleRate may also be a quoted number ("0.1"). At most 32 tag
 * rules; regexes are POSIX extended. An empty config, an empty object, an
 * unknown key or a value of the wrong type is refused at open, naming the
 * key.
 *
 * Per trace, rules in order, the first match keeps:
 *  1. duration: max(start + latency) - min(start) over the trace's rows
 *     >= durationThresholdMs;
 *  2. errors (if keepErrors): any row with is_error;
 *  3. tag rules: any row tag matching any rule (exists: the tag's key is
 *     the rule's key; equals: the tag is exactly "key=value"; regex: the
 *     key matches and the value matches the regex);
 *  4. healthy sample: keep iff (fnv1a64(traceID) >> 11) / 2^53 < rate,
 *     else drop.
 * A column the rule needs that is missing, or a regex evaluation error,
 * keeps the trace (fails open). Per-rule reached/kept counters are
 * exported through stats (atomically updated: an abandoned call may
 * overlap the next one).
 */
#include "ms_plugin.h"
#include "ms_plugin_json.h"

#include <regex.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SW_MAX_RULES 32

enum sw_rule_kind { SW_EXISTS, SW_EQUALS, SW_REGEX };

typedef struct sw_rule {
	enum sw_rule_kind kind;
	char *key; /* owned */
	size_t keylen;
	char *whole; /* equals: "key=value", owned */
	size_t wholelen;
	regex_t re;
	bool re_ok;
} sw_rule;

enum {
	ST_DUR_REACHED,
	ST_DUR_KEPT,
	ST_ERR_REACHED,
	ST_ERR_KEPT,
	ST_TAG_REACHED,
	ST_TAG_KEPT,
	ST_SAMPLE_REACHED,
	ST_SAMPLE_KEPT,
	ST_SAMPLE_DROPPED,
	ST_MISSING,
	ST_EVAL_ERROR,
	ST_COUNT
};

static const char *const sw_stat_names[ST_COUNT] = {
	"duration.reached", "duration.kept",  "errors.reached", "errors.kept",
	"tags.reached",     "tags.kept",      "sample.reached", "sample.kept",
	"sample.dropped",   "missing_column", "eval_error",
};

typedef struct sw_state {
	int64_t threshold_ns;
	bool keep_errors;
	double rate;
	size_t nrules;
	sw_rule rules[SW_MAX_RULES];
	_Atomic uint64_t st[ST_COUNT];
} sw_state;

static void
sw_free(sw_state *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nrules; i++) {
		free(s->rules[i].key);
		free(s->rules[i].whole);
		if (s->rules[i].re_ok)
			regfree(&s->rules[i].re);
	}
	free(s);
}

static char *
dupn(const char *p, size_t n)
{
	char *d = malloc(n + 1);
	if (d) {
		memcpy(d, p, n);
		d[n] = '\0';
	}
	return d;
}

/*
 * Refuse regexes that could make regcomp or regexec explode: longer than
 * SW_REGEX_MAX; a quantifier applied to a quantifier ("a++", "b*{2}"),
 * which POSIX leaves undefined and glibc compiles into exponential state;
 * more than two interval expressions, or one counting past 32 (nested
 * intervals multiply the compiled size).
 */
#define SW_REGEX_MAX 256

static const char *
sw_regex_refused(const char *re)
{
	if (strlen(re) > SW_REGEX_MAX)
		return "regex longer than 256 bytes";
	bool prev_quant = false;
	int intervals = 0;
	for (const char *p = re; *p; p++) {
		if (*p == '\\' && p[1]) {
			p++;
			prev_quant = false;
			continue;
		}
		bool quant = *p == '*' || *p == '+' || *p == '?' || *p == '{';
		if (quant && prev_quant)
			return "stacked quantifiers";
		if (*p == '{') {
			if (++intervals > 2)
				return "more than two {m,n} intervals";
			unsigned long n = 0;
			while (p[1] && p[1] != '}') {
				p++;
				if (*p >= '0' && *p <= '9') {
					n = n * 10 + (unsigned long)(*p - '0');
					if (n > 32)
						return "interval count over 32";
				} else {
					n = 0;
				}
			}
			if (p[1] == '}')
				p++;
		}
		prev_quant = quant;
	}
	return NULL;
}

static int
sw_rule_parse(sw_rule *r, const char *text, size_t idx, char *err,
              size_t errlen)
{
	const char *eq = strchr(text, '=');
	size_t klen = eq ? (size_t)(eq - text) : strlen(text);
	if (klen == 0) {
		snprintf(err, errlen,
		         "skywalking: keepTagRules[%zu] \"%s\": empty key", idx,
		         text);
		return -1;
	}
	r->key = dupn(text, klen);
	r->keylen = klen;
	if (!r->key)
		goto nomem;
	if (!eq) {
		r->kind = SW_EXISTS;
		return 0;
	}
	if (eq[1] == '~') {
		r->kind = SW_REGEX;
		const char *why = sw_regex_refused(eq + 2);
		if (why) {
			snprintf(err, errlen,
			         "skywalking: keepTagRules[%zu] \"%s\": %s",
			         idx, text, why);
			return -1;
		}
		int rc = regcomp(&r->re, eq + 2, REG_EXTENDED | REG_NOSUB);
		if (rc) {
			char buf[128];
			regerror(rc, &r->re, buf, sizeof(buf));
			snprintf(err, errlen,
			         "skywalking: keepTagRules[%zu] \"%s\": bad "
			         "regex: %s",
			         idx, text, buf);
			return -1;
		}
		r->re_ok = true;
		return 0;
	}
	r->kind = SW_EQUALS;
	r->wholelen = strlen(text);
	r->whole = dupn(text, r->wholelen);
	if (!r->whole)
		goto nomem;
	return 0;
nomem:
	snprintf(err, errlen, "skywalking: out of memory");
	return MS_PLUGIN_OPEN_NOMEM;
}

static int
sw_configure(sw_state *s, msj_doc *d, const char *config, char *err,
             size_t errlen)
{
	static const char *const known[] = { "durationThresholdMs",
		                             "keepErrors", "healthySampleRate",
		                             "keepTagRules", NULL };
	if (!config || !*config) {
		snprintf(err, errlen,
		         "skywalking: empty config; expected e.g. "
		         "{\"durationThresholdMs\":500,\"keepErrors\":true,"
		         "\"healthySampleRate\":0.1}");
		return -1;
	}
	if (msj_parse(d, config, strlen(config), err, errlen))
		return -1;
	if (d->nmembers == 0) {
		snprintf(err, errlen,
		         "skywalking: empty config object; set at least "
		         "one of durationThresholdMs, keepErrors, "
		         "healthySampleRate, keepTagRules");
		return -1;
	}
	const char *unknown = msj_unknown_key(d, known);
	if (unknown) {
		snprintf(err, errlen,
		         "skywalking: unknown key \"%s\" (known: "
		         "durationThresholdMs, keepErrors, "
		         "healthySampleRate, keepTagRules)",
		         unknown);
		return -1;
	}
	const msj_value *v;
	if ((v = msj_get(d, "durationThresholdMs"))) {
		double ms;
		if (msj_as_number(v, &ms) || !(ms >= 0) || ms > 9.2e9) {
			snprintf(err, errlen,
			         "skywalking: \"durationThresholdMs\" must "
			         "be a non-negative number of milliseconds");
			return -1;
		}
		s->threshold_ns = (int64_t)(ms * 1e6);
	}
	if ((v = msj_get(d, "keepErrors"))) {
		if (v->type != MSJ_BOOL) {
			snprintf(err, errlen,
			         "skywalking: \"keepErrors\" must be true or "
			         "false");
			return -1;
		}
		s->keep_errors = v->b;
	}
	if ((v = msj_get(d, "healthySampleRate"))) {
		double r;
		if (msj_as_number(v, &r) || !(r >= 0.0 && r <= 1.0)) {
			snprintf(err, errlen,
			         "skywalking: \"healthySampleRate\" must be "
			         "a number in 0..1 (or a quoted one)");
			return -1;
		}
		s->rate = r;
	}
	if ((v = msj_get(d, "keepTagRules"))) {
		if (v->type != MSJ_ARRAY) {
			snprintf(err, errlen,
			         "skywalking: \"keepTagRules\" must be an "
			         "array of strings");
			return -1;
		}
		if (v->count > SW_MAX_RULES) {
			snprintf(err, errlen,
			         "skywalking: \"keepTagRules\" has %zu rules, "
			         "at most %d",
			         v->count, SW_MAX_RULES);
			return -1;
		}
		for (size_t i = 0; i < v->count; i++) {
			const msj_value *it = &d->items[v->first + i];
			if (it->type != MSJ_STRING) {
				snprintf(err, errlen,
				         "skywalking: keepTagRules[%zu] must "
				         "be a string",
				         i);
				return -1;
			}
			sw_rule *r = &s->rules[s->nrules];
			memset(r, 0, sizeof(*r));
			s->nrules++;
			int rc = sw_rule_parse(r, it->str, i, err, errlen);
			if (rc)
				return rc;
		}
	}
	return 0;
}

static int
sw_open(const char *config, const ms_plugin_host *host, char *err,
        size_t errlen, void **state)
{
	(void)host;
	sw_state *s = calloc(1, sizeof(*s));
	msj_doc *d = malloc(sizeof(*d));
	if (!s || !d) {
		free(s);
		free(d);
		snprintf(err, errlen, "skywalking: out of memory");
		return MS_PLUGIN_OPEN_NOMEM;
	}
	s->threshold_ns = 500LL * 1000000;
	s->keep_errors = true;
	s->rate = 0.1;
	int rc = sw_configure(s, d, config, err, errlen);
	free(d);
	if (rc) {
		sw_free(s);
		return rc == MS_PLUGIN_OPEN_NOMEM ? rc : -1;
	}
	*state = s;
	return 0;
}

static uint32_t
sw_projection_of(void *state)
{
	sw_state *s = state;
	uint32_t p = MS_PROJ_START | MS_PROJ_LATENCY;
	if (s->keep_errors)
		p |= MS_PROJ_ERROR;
	if (s->nrules)
		p |= MS_PROJ_TAGS;
	return p;
}

/* 1 = a rule matched, 0 = none, -1 = evaluation error. */
static int
sw_tags_match(const sw_state *s, const ms_plugin_batch *b,
              const ms_plugin_trace *t)
{
	uint64_t end = t->row_first + t->row_count;
	for (uint64_t r = t->row_first; r < end; r++) {
		for (uint64_t k = b->tag_first[r]; k < b->tag_first[r + 1];
		     k++) {
			const char *tag = b->tags[k];
			size_t tl = b->tag_len[k];
			const char *eq = memchr(tag, '=', tl);
			size_t kl = eq ? (size_t)(eq - tag) : tl;
			for (size_t i = 0; i < s->nrules; i++) {
				const sw_rule *rule = &s->rules[i];
				if (rule->keylen != kl ||
				    memcmp(rule->key, tag, kl) != 0)
					continue;
				if (rule->kind == SW_EXISTS)
					return 1;
				if (rule->kind == SW_EQUALS) {
					if (rule->wholelen == tl &&
					    memcmp(rule->whole, tag, tl) == 0)
						return 1;
					continue;
				}
				int rc = regexec(&rule->re, eq ? eq + 1 : "", 0,
				                 NULL, 0);
				if (rc == 0)
					return 1;
				if (rc != REG_NOMATCH)
					return -1;
			}
		}
	}
	return 0;
}

static int64_t
sw_decide(void *state, const ms_plugin_batch *b, uint8_t *verdict, size_t n)
{
	sw_state *s = state;
	uint64_t c[ST_COUNT] = { 0 };
	const int64_t *start = b->start_ns;
	const uint32_t *lat = b->latency_ms;
	const uint8_t *iserr = b->is_error;
	const double scale = 1.0 / 9007199254740992.0; /* 2^-53 */
	for (size_t i = 0; i < n; i++) {
		const ms_plugin_trace *t = &b->traces[i];
		uint64_t r0 = t->row_first, r1 = r0 + t->row_count;
		verdict[i] = MS_VERDICT_KEEP;
		/* 1. duration */
		c[ST_DUR_REACHED]++;
		if (!start || !lat) {
			c[ST_MISSING]++;
			continue;
		}
		int64_t mn = INT64_MAX, mx = INT64_MIN;
		for (uint64_t r = r0; r < r1; r++) {
			int64_t st = start[r];
			int64_t en = st + (int64_t)lat[r] * 1000000;
			if (st < mn)
				mn = st;
			if (en > mx)
				mx = en;
		}
		if (r1 > r0 && mx - mn >= s->threshold_ns) {
			c[ST_DUR_KEPT]++;
			continue;
		}
		/* 2. errors */
		if (s->keep_errors) {
			c[ST_ERR_REACHED]++;
			if (!iserr) {
				c[ST_MISSING]++;
				continue;
			}
			uint8_t any = 0;
			for (uint64_t r = r0; r < r1; r++)
				any |= iserr[r];
			if (any) {
				c[ST_ERR_KEPT]++;
				continue;
			}
		}
		/* 3. tag rules */
		if (s->nrules) {
			c[ST_TAG_REACHED]++;
			if (!b->tags || !b->tag_first || !b->tag_len) {
				c[ST_MISSING]++;
				continue;
			}
			int m = sw_tags_match(s, b, t);
			if (m < 0) {
				c[ST_EVAL_ERROR]++;
				continue;
			}
			if (m > 0) {
				c[ST_TAG_KEPT]++;
				continue;
			}
		}
		/* 4. healthy sample */
		c[ST_SAMPLE_REACHED]++;
		uint64_t h = 14695981039346656037ull;
		for (uint32_t k = 0; k < t->trace_id_len; k++) {
			h ^= t->trace_id[k];
			h *= 1099511628211ull;
		}
		if ((double)(h >> 11) * scale < s->rate) {
			c[ST_SAMPLE_KEPT]++;
		} else {
			c[ST_SAMPLE_DROPPED]++;
			verdict[i] = MS_VERDICT_DROP;
		}
	}
	for (int k = 0; k < ST_COUNT; k++)
		if (c[k])
			atomic_fetch_add(&s->st[k], c[k]);
	return (int64_t)n;
}

static size_t
sw_stats(void *state, ms_plugin_stat *out, size_t cap)
{
	sw_state *s = state;
	for (size_t i = 0; i < ST_COUNT && i < cap; i++) {
		out[i].name = sw_stat_names[i];
		out[i].value = atomic_load(&s->st[i]);
	}
	return ST_COUNT;
}

static void
sw_close(void *state)
{
	sw_free(state);
}

static const ms_plugin_desc sw_desc = {
	.struct_size = sizeof(ms_plugin_desc),
	.abi_major = MS_PLUGIN_ABI_MAJOR,
	.abi_minor = MS_PLUGIN_ABI_MINOR,
	.name = "skywalking",
	.version = "1",
	.projection =
	        MS_PROJ_START | MS_PROJ_LATENCY | MS_PROJ_ERROR | MS_PROJ_TAGS,
	.open = sw_open,
	.decide = sw_decide,
	.close = sw_close,
	.projection_of = sw_projection_of,
	.stats = sw_stats,
};

MS_PLUGIN_DEFINE(sw_desc)
