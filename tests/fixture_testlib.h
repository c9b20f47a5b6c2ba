/*
 * fixture_testlib.h - the smoke fixture the replay and command-line tests
 * run on, built once per test executable (fixtures/, with the shipped
 * SkyWalking sampler recording its verdicts' checksum).
 */
#ifndef MS_FIXTURE_TESTLIB_H
#define MS_FIXTURE_TESTLIB_H

#include "ms_fixture.h"

#include <stdint.h>
#include <stdio.h>

/* Build the smoke preset with seed into dir; 0, or -1 after saying why on
 * stderr. */
static inline int
ms_test_smoke_fixture(const char *dir, uint64_t seed)
{
	ms_fixture_build_opts bo = {
		.preset = "smoke",
		.seed = seed,
		.out_dir = dir,
		.plugin_path = MS_PLUGIN_DIR "/skywalking.so",
	};
	ms_errbuf eb = { "" };
	if (ms_fixture_build(&bo, NULL, &eb)) {
		fprintf(stderr, "smoke fixture: %s\n", eb.msg);
		return -1;
	}
	return 0;
}

#endif
