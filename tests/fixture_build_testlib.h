/*
 * fixture_build_testlib.h - whole fixture builds for the fixtures layer's
 * own tests (test_fixture_build.c, test_fixture_density.c): a preset and
 * seed built under a test's directory through ms__fixture_build_broken, so
 * that a gate can be seen failing. Reaches fx_int.h (the test hooks).
 */
#ifndef MS_FIXTURE_BUILD_TESTLIB_H
#define MS_FIXTURE_BUILD_TESTLIB_H

#include "fx_int.h"
#include "ms_fixture.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

/* Build preset and seed into root/name, with brk broken (none: the build
 * itself) and, with dictionary, a dictionary; what
 * ms__fixture_build_broken returns. */
static inline int
fbt_build(const char *root, const char *name, const char *preset, uint64_t seed,
          enum ms_fixture_break brk, bool dictionary, ms_fixture_report *rep,
          ms_errbuf *eb)
{
	char dir[512];
	ms_fixture_build_opts o = { 0 };

	snprintf(dir, sizeof(dir), "%s/%s", root, name);
	o.preset = preset;
	o.seed = seed;
	o.out_dir = dir;
	o.plugin_path = MS_PLUGIN_DIR "/skywalking.so";
	o.dictionary = dictionary;
	return ms__fixture_build_broken(&o, brk, rep, eb);
}

/* Whether root/name exists. */
static inline bool
fbt_exists(const char *root, const char *name)
{
	char dir[512];
	struct stat sb;

	snprintf(dir, sizeof(dir), "%s/%s", root, name);
	return stat(dir, &sb) == 0;
}

#endif
