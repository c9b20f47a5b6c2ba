/*
 * bench_fixture.c - how long building a fixture takes (target for day-2x:
 * <= 20 s on the project machine) and how long `fixture check` takes, with
 * the gate table and figures of the last build.
 *
 * usage: bench_fixture [PRESET [REPS [SEED]]]   (default day-2x 3 1)
 * Each repetition builds into a fresh directory under /tmp and removes it.
 * Prints the median and the spread of the build and check wall times, and
 * the build median as a ratio of the 20 s target.
 */
#define _XOPEN_SOURCE 700
#include "ms_fixture.h"
#include "ms_fs.h"
#include "bench_args.h"
#include "bench_stats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TARGET_S 20.0

int
main(int argc, char **argv)
{
	static const char usage[] =
	        "bench_fixture [PRESET [REPS 1..32 [SEED]]]   (default: "
	        "day-2x 3 1)";
	if (argc > 4)
		bench_usage(usage);
	const char *preset = argc > 1 ? argv[1] : "day-2x";
	int reps = argc > 2 ? (int)bench_arg_ll(argv[2], 1, 32,
	                                        "bench_fixture: REPS", usage)
	                    : 3;
	uint64_t seed =
	        argc > 3 ? bench_arg_u64(argv[3], "bench_fixture: SEED", usage)
	                 : 1;
	double build_s[32], check_s[32];
	ms_fixture_report rep, crep;
	for (int r = 0; r < reps; r++) {
		ms_fixture_build_opts o = { 0 };
		ms_errbuf eb = { { 0 } };
		char dir[256];

		snprintf(dir, sizeof(dir), "/tmp/ms-bench-fixture-%ld-%d",
		         (long)getpid(), r);
		o.preset = preset;
		o.seed = seed;
		o.out_dir = dir;
		o.plugin_path = MS_PLUGIN_DIR "/skywalking.so";
		if (ms_fixture_build(&o, &rep, &eb) != 0) {
			ms_fixture_report_print(stdout, &rep);
			fprintf(stderr, "bench_fixture: %s\n", eb.msg);
			return 1;
		}
		build_s[r] = rep.seconds;
		if (ms_fixture_check(dir, o.plugin_path, &crep, NULL, NULL,
		                     &eb) != 0) {
			fprintf(stderr, "bench_fixture: check: %s\n", eb.msg);
			ms_fs_rm_tree(dir, NULL);
			return 1;
		}
		check_s[r] = crep.seconds;
		ms_fs_rm_tree(dir, NULL);
	}
	ms_fixture_report_print(stdout, &rep);
	/* bench_median_d sorts, so [0] and [reps - 1] are min and max. */
	double mb = bench_median_d(build_s, reps),
	       mc = bench_median_d(check_s, reps);
	printf("\n%-22s %10s %10s %10s\n", preset, "median s", "min s",
	       "max s");
	printf("%-22s %10.2f %10.2f %10.2f\n", "fixture build", mb, build_s[0],
	       build_s[reps - 1]);
	printf("%-22s %10.2f %10.2f %10.2f\n", "fixture check", mc, check_s[0],
	       check_s[reps - 1]);
	printf("build median / %.0f s target: %.2f; check / build: %.2f\n",
	       TARGET_S, mb / TARGET_S, mc / mb);
	return 0;
}
