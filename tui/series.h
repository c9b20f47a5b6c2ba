/*
 * series.h - the run databases of bench series directories, loaded and
 * checked (series.c): `bench`, `bench --collect DIR`, `report --collect
 * DIR...`. Private to tui/.
 *
 * Ownership: ms__series owns runs and dir_of (ms__series_free); labels
 * point into runs or at the caller's strings.
 */
#ifndef MS_TUI_SERIES_H
#define MS_TUI_SERIES_H

#include "ms_bench.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define MS__SERIES_VARIANTS_MAX 8

typedef struct ms__series {
	ms_bench_run *runs; /* by directory, then repetition and variant */
	size_t *dir_of;     /* the directory index of each run */
	size_t n, cap;
	const char *labels[MS__SERIES_VARIANTS_MAX];
	size_t nv;
} ms__series;

/*
 * Load the databases rep<R>-v<I>-*.db of dirs[0..ndirs), read and check
 * each against the series' reference run (ms_bench_validate: of the
 * conditions most valid runs share). labels names the
 * nv variants by their file index (a series this process ran); NULL
 * numbers them by the runs' own labels in order of first appearance, so
 * directories of one series written by different hosts line up. A
 * directory with no database, or (with several) none of whose readable
 * runs matches the reference run's conditions, is refused. 0, or an
 * exit status after one line on err naming the directory (cmd names the
 * command). The caller frees s whatever the result.
 */
int ms__series_load(ms__series *s, const char *const *dirs, size_t ndirs,
                    const char *const *labels, size_t nv, const char *cmd,
                    FILE *err);
/* 0 when every variant of s has a valid run; else 1 (a gate-like
 * failure: the summary was written, but a variant has no figures) after
 * one line on err naming the variant. */
int ms__series_check_variants(const ms__series *s, const char *cmd,
                              FILE *err);
void ms__series_free(ms__series *s);

/* Is name a run database of a series, "rep<R>-v<I>-<variant>.db" with I
 * below MS__SERIES_VARIANTS_MAX? R and I into *rep and *vi. */
bool ms__series_name(const char *name, unsigned *rep, unsigned *vi);

#endif
