/*
 * fuzz_breakpoint.c - libFuzzer harness for the breakpoint spec parser
 * (replay/breakpoint.c, ms_bp_parse) and the matchers behind it.
 *
 * Input: the spec text (a NUL inside ends it, as it would in C).
 * What must hold:
 *  - a refusal carries a message;
 *  - an accepted spec has a canonical spelling that parses again to the
 *    same breakpoint (kind, number, time, lane, spelling): what the
 *    breakpoint list shows can be typed back;
 *  - an accepted time of day was written HH:MM or HH:MM:SS with an hour
 *    of one or two digits and minutes and seconds of two, and means what
 *    it says (no sign, no space, no value that wraps around);
 *  - an accepted part ID was written as 1 to 16 hex digits (no 0x);
 *  - matching it against a few dispatches and publication times does not
 *    trip the sanitizers.
 */
#include "ms_replay.h"
#include "fuzz_text.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define DAY0 (1700006400LL * 1000000000LL)

static bool
same(const ms_breakpoint *a, const ms_breakpoint *b)
{
	return a->kind == b->kind && a->n == b->n && a->t == b->t &&
	       a->absolute == b->absolute && strcmp(a->lane, b->lane) == 0 &&
	       strcmp(a->spec, b->spec) == 0 && a->enabled == b->enabled;
}

/* The time of day spelled by text "time=..." (spaces around trimmed), by
 * an independent reading; false if it is not HH:MM[:SS] with a 1-2 digit
 * hour and 2 digit minutes and seconds. */
static bool
tod_of(const char *text, int64_t *ns)
{
	while (*text == ' ' || (*text >= '\t' && *text <= '\r'))
		text++;
	const char *p = text + 5;
	uint64_t f[3] = { 0, 0, 0 };
	int n = 0;
	for (;;) {
		int d = 0;
		if (n == 3)
			return false;
		while (p[d] >= '0' && p[d] <= '9' && d < 3)
			f[n] = f[n] * 10 + (uint64_t)(p[d++] - '0');
		n++;
		if (d < (n == 1 ? 1 : 2) || d > 2)
			return false;
		p += d;
		if (*p != ':')
			break;
		p++;
	}
	while (*p == ' ' || (*p >= '\t' && *p <= '\r'))
		p++;
	if (*p || n < 2)
		return false;
	*ns = (int64_t)(f[0] * 3600 + f[1] * 60 + f[2]) * 1000000000LL;
	return true;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fz_text(data, size, 4096);
	if (!s)
		return 0;
	ms_breakpoint bp;
	ms_errbuf eb = { "" };
	int rc = ms_bp_parse(s, &bp, &eb);
	if (rc != 0) {
		if (rc > 0 || !eb.msg[0])
			abort();
		free(s);
		return 0;
	}
	if (!bp.spec[0] || memchr(bp.spec, '\0', sizeof(bp.spec)) == NULL)
		abort();
	ms_breakpoint again;
	ms_errbuf eb2 = { "" };
	if (ms_bp_parse(bp.spec, &again, &eb2) != 0 || !same(&bp, &again)) {
		fprintf(stderr, "'%s' -> '%s' does not parse back: %s\n", s,
		        bp.spec, eb2.msg);
		abort();
	}

	int64_t tod;
	if (bp.kind == MS_BP_TIME && !bp.absolute &&
	    (!tod_of(s, &tod) || tod != bp.t)) {
		fprintf(stderr, "'%s' accepted as %s\n", s, bp.spec);
		abort();
	}

	/* part=: hex digits only, as many as the TUI shows or fewer. */
	if (bp.kind == MS_BP_PART) {
		const char *p = s;
		while (*p == ' ' || (*p >= '\t' && *p <= '\r'))
			p++;
		p += 5;
		size_t d = strspn(p, "0123456789abcdefABCDEF");
		if (d < 1 || d > 16 ||
		    (p[d] &&
		     !(p[d] == ' ' || (p[d] >= '\t' && p[d] <= '\r')))) {
			fprintf(stderr, "'%s' accepted as %s\n", s, bp.spec);
			abort();
		}
	}

	ms_dispatch_input in[2];
	memset(in, 0, sizeof(in));
	in[0].id = 0xa1;
	in[1].id = bp.n;
	static const int64_t times[] = { DAY0, DAY0 + 12 * 3600000000000LL,
		                         INT64_MAX, INT64_MIN + 1 };
	for (int k = 0; k < 4; k++) {
		ms_dispatch d;
		memset(&d, 0, sizeof(d));
		d.seq = k ? bp.n : 1;
		d.lane = (enum ms_lane_kind)(k % 3);
		d.now_ns = times[k];
		d.ninputs = (size_t)(k % 3);
		d.inputs = in;
		d.max_depth = (uint32_t)(k * 3);
		d.mature_parts = (size_t)(k & 1);
		d.predict_class =
		        k & 1 ? MS_SAMPLING_EXECUTED : MS_SAMPLING_NOT_EXECUTED;
		(void)ms_bp_match_dispatch(&bp, &d, DAY0);
		(void)ms_bp_match_time(&bp, times[k], DAY0);
	}
	free(s);
	return 0;
}
