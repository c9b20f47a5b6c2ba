/*
 * cmd_fixture.c - `mergescope fixture build`: generate a deterministic
 * fixture from (preset, seed) and print its gates. Needs the fixtures
 * layer.
 */
#include "cli.h"

#include <stdlib.h>
#include <string.h>

static const char usage[] =
        "usage: mergescope fixture build --preset P --seed N --out DIR\n"
        "\n"
        "Generates the production-shaped day of trace writes for preset P\n"
        "(day-1x, day-2x, or a small test preset) from seed N into DIR,\n"
        "checks every fixture gate and prints them. A fixture that fails a\n"
        "gate is not written.\n"
        "\n"
        "  --preset P    day-1x, day-2x, ...\n"
        "  --seed N      unsigned integer\n"
        "  --out DIR     new directory for the fixture\n";

static int
run(int argc, char **argv, FILE *out, FILE *err)
{
	if (ms__cmd_wants_help(&ms_cmd_fixture, argc, argv, out))
		return 0;
	if (argc < 2 || strcmp(argv[1], "build") != 0) {
		fprintf(err,
		        "mergescope fixture: expected the subcommand "
		        "\"build\"%s%s%s\n",
		        argc >= 2 ? ", got \"" : "", argc >= 2 ? argv[1] : "",
		        argc >= 2 ? "\"" : "");
		return MS_EXIT_USAGE;
	}
	ms__opt o[] = {
		{ "--preset", "P", true, false, 0, NULL },
		{ "--seed", "N", true, false, 0, NULL },
		{ "--out", "DIR", true, false, 0, NULL },
	};
	int rc = ms__cmd_parse(&ms_cmd_fixture, argc - 1, argv + 1, o,
	                       sizeof(o) / sizeof(o[0]), err);
	if (rc)
		return rc;
	char *end;
	strtoull(o[1].value, &end, 10);
	if (!*o[1].value || *end || o[1].value[0] == '-') {
		fprintf(err,
		        "mergescope fixture: --seed \"%s\": expected an "
		        "unsigned integer\n",
		        o[1].value);
		return MS_EXIT_USAGE;
	}
	return ms__cmd_not_built(&ms_cmd_fixture,
	                         "the fixture generator (fixtures/)", err);
}

const ms_cmd ms_cmd_fixture = {
	.name = "fixture",
	.summary =
	        "build a fixture: fixture build --preset P --seed N --out DIR",
	.usage = usage,
	.run = run,
};
