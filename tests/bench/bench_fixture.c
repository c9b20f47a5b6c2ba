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
	const char *preset = argc > 1 ? argv[1] : "day-2x";
	int reps = argc > 2 ? atoi(argv[2]) : 3;
	uint64_t seed = argc > 3 ? strtoull(argv[3], NULL, 10) : 1;
	double build_s[32], check_s[32];
	ms_fixture_report rep, crep;

	if (reps < 1 || reps > 32) {
		fprintf(stderr, "bench_fixture: REPS must be 1..32\n");
		return 2;
	}
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
			return 1;
		}
		check_s[r] = crep.seconds;
		ms_fs_rm_tree(dir, NULL);
	}
	ms_fixture_report_print(stdout, &rep);
	qsort(build_s, (size_t)reps, sizeof(double), bench_cmp_d);
	qsort(check_s, (size_t)reps, sizeof(double), bench_cmp_d);
	printf("\n%-22s %10s %10s %10s\n", preset, "median s", "min s",
	       "max s");
	printf("%-22s %10.2f %10.2f %10.2f\n", "fixture build",
	       build_s[reps / 2], build_s[0], build_s[reps - 1]);
	printf("%-22s %10.2f %10.2f %10.2f\n", "fixture check",
	       check_s[reps / 2], check_s[0], check_s[reps - 1]);
	printf("build median / %.0f s target: %.2f; check / build: %.2f\n",
	       TARGET_S, build_s[reps / 2] / TARGET_S,
	       check_s[reps / 2] / build_s[reps / 2]);
	return 0;
}
