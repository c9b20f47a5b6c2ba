/*
 * fuzz_fixture_args.c - libFuzzer harness for the values `mergescope
 * fixture build` takes before any work: --preset or --scale, --seed and
 * --out (tui/cmd_fixture.c, parse_request), read from the option table as
 * the command's parser leaves it. The command itself is never run: its
 * file is included for its static parser, and nothing calls build().
 *
 * Input: a flags byte (bit 0: --scale instead of --preset; bit 1: --out
 * given; bit 2: --opening warm; bit 3: --dictionary), then the preset or
 * scale, the seed and the out path, separated by NUL bytes.
 *
 * Oracles: the result is 0 or MS_EXIT_USAGE, a refusal says why on err;
 * an accepted seed is the decimal it prints as (so nothing clamped or
 * padded got through) and one the reference reading below accepts, and
 * the reverse; an accepted preset is one a build knows, a scale N gives
 * day-<N>x with N from 1 to MS_FIXTURE_SCALE_MAX; an accepted --out is
 * the given path less its trailing slashes, not empty.
 */
#include "cmd_fixture.c"
#include "fuzz_text.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The reading a seed must get: digits only, no leading zero, in range
 * (strtoull, which also takes signs and spaces, only for the value). */
static bool
seed_ok(const char *s)
{
	if (!*s || strspn(s, "0123456789") != strlen(s) ||
	    (s[0] == '0' && s[1]))
		return false;
	errno = 0;
	(void)strtoull(s, NULL, 10);
	return errno != ERANGE;
}

static FILE *devnull;

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	char *buf = fz_text(data + 1, size - 1, 8192);
	if (!buf)
		return 0;
	if (!devnull && !(devnull = tmpfile()))
		abort();
	unsigned flags = data[0];
	const char *field[3] = { "", "", "" };
	size_t at = 0;
	for (int i = 0; i < 3 && at <= size - 1; i++) {
		field[i] = buf + at;
		at += strlen(buf + at) + 1;
	}
	ms__opt o[MS__FX_COUNT];
	memcpy(o, ms__fixture_opts, sizeof(o));
	int which = flags & 1 ? MS__FX_SCALE : MS__FX_PRESET;
	o[which].count = 1;
	o[which].value = field[0];
	o[MS__FX_SEED].count = 1;
	o[MS__FX_SEED].value = field[1];
	if (flags & 2) {
		/* An empty name never gets here: the option parser refuses
		 * it as a usage error before parse_request (test_tui_cli
		 * test_empty_names_every_command). */
		if (!field[2][0]) {
			free(buf);
			return 0;
		}
		o[MS__FX_OUT].count = 1;
		o[MS__FX_OUT].value = field[2];
	}
	if (flags & 4) {
		o[MS__FX_OPENING].count = 1;
		o[MS__FX_OPENING].value = "warm";
	}
	o[MS__FX_DICTIONARY].count = (flags & 8) != 0;

	build_req r;
	memset(&r, 0, sizeof(r));
	rewind(devnull);
	int rc = parse_request(o, &r, devnull);
	long said = ftell(devnull);
	if (rc != 0 && (rc != MS_EXIT_USAGE || said <= 0))
		abort();
	if (rc == 0) {
		char back[32];
		snprintf(back, sizeof(back), "%llu",
		         (unsigned long long)r.seed);
		if (strcmp(back, field[1]) != 0 || !seed_ok(field[1]))
			abort();
		if (!(ms_fixture_preset_units(r.preset) > 0))
			abort();
		if (flags & 1) {
			char want[32];
			snprintf(want, sizeof(want), "day-%sx", field[0]);
			if (strcmp(want, r.preset) != 0)
				abort();
		} else if (strcmp(r.preset, field[0]) != 0) {
			abort();
		}
		if (strcmp(r.opening, flags & 4 ? "warm" : "empty") != 0 ||
		    r.dictionary != ((flags & 8) != 0) ||
		    r.out_given != ((flags & 2) != 0))
			abort();
		size_t n = strlen(r.outdir);
		if (r.out_given &&
		    (n == 0 || strncmp(r.outdir, field[2], n) != 0 ||
		     strspn(field[2] + n, "/") != strlen(field[2] + n) ||
		     (n > 1 && r.outdir[n - 1] == '/')))
			abort();
	} else if (seed_ok(field[1]) && !(flags & 1) &&
	           ms_fixture_preset_units(field[0]) > 0 &&
	           strlen(field[0]) < sizeof(r.preset) &&
	           (!(flags & 2) ||
	            (field[2][0] && strlen(field[2]) < sizeof(r.outdir)))) {
		/* Every value fine, yet refused. */
		abort();
	}
	free(buf);
	return 0;
}
