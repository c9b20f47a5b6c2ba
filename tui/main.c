/*
 * main.c - the `mergescope` executable: takes the character type from the
 * environment's locale (for Unicode glyphs; ASCII is used when it is not
 * UTF-8), and nothing else: numbers are read and written in the "C"
 * locale, so exports, reports and options like --speed mean the same in a
 * locale with a decimal comma. Then hands argv to the command table in
 * cli.c, with a watcher process beside it (supervise.c) so that a
 * crashing plugin still leaves a record.
 *
 * It also sets three of the C library's allocator parameters (glibc,
 * see malloc_policy below), each unless the environment already names it.
 */
#include "ms_pipeline.h"
#include "ms_replay.h"
#include "ms_tui.h"

#include <locale.h>
#include <stdio.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdlib.h>
#include <string.h>

#ifdef __GLIBC__
/*
 * The allocator's parameters for a process that allocates and frees a
 * few MiB per merge, thousands of times a run, on a handful of threads:
 *  - M_MMAP_THRESHOLD fixed at 1 MiB. Left dynamic, glibc raises it to the
 *    size of any mapped chunk that is freed (a fixture's manifest closed,
 *    a batch builder released) and the trim threshold to twice that;
 *    every smaller buffer of every merge then comes from the heaps and
 *    what is freed there stays resident. Fixed, day-2x peak RSS was about
 *    7 MiB lower (the excess grew with the day).
 *  - M_TRIM_THRESHOLD 32 MiB (fixing the mmap threshold leaves it at 128
 *    KiB): a merge's buffers freed at the top of a heap stay for the next
 *    merge instead of going back to the kernel and being faulted in,
 *    zeroed, again. Day-2x on tmpfs (tests/bench/bench_day, medians of 5):
 *    128 KiB made about 205,000 minor faults; 4 MiB 40,000 to 90,000
 *    (a merge's buffers did not always fit); 16, 32 and 64 MiB about
 *    33,000, and primary + cooldown took 2.98 s, 2.50-2.64 s and
 *    2.2-2.5 s. The price is memory kept for reuse: peak RSS about 5 MiB
 *    above 4 MiB's at day-2x, about the same at day-4x.
 *  - M_ARENA_MAX 1: with an arena per thread, each thread's retained free
 *    memory adds up. With two, the top of the heap other than the main
 *    one outlived the malloc_trim before the finalize (up to 13 MiB free
 *    and resident at the finalize's peak), and which threads landed on
 *    it was settled by timing as they first allocated: the finalize's
 *    anon peak at day-2x was 37 or 42 MiB from one run to the next,
 *    depending on the fast merge worker's arena, and any thread that
 *    allocates (a plugin's bounded open()) moved the odds. One arena
 *    gave 37.4 and 44.0 MiB at day-2x and day-4x against 38.3 and 44.1
 *    with two, CPU time unchanged (tests/bench/README.md, bench_day).
 *    The finalize still runs on the fast worker that ran the day's
 *    merges (core/engine.c).
 * A variable of the environment (MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_
 * THRESHOLD_, MALLOC_ARENA_MAX, or any GLIBC_TUNABLES) leaves the policy
 * to the user.
 */
static void
malloc_policy(void)
{
	if (getenv("GLIBC_TUNABLES"))
		return;
	if (!getenv("MALLOC_MMAP_THRESHOLD_"))
		mallopt(M_MMAP_THRESHOLD, 1 << 20);
	if (!getenv("MALLOC_TRIM_THRESHOLD_"))
		mallopt(M_TRIM_THRESHOLD, 32 << 20);
	if (!getenv("MALLOC_ARENA_MAX"))
		mallopt(M_ARENA_MAX, 1);
}
#endif

int
main(int argc, char **argv)
{
	/* The out-of-process plugin host (core/plugin_host.c) is this same
	 * executable: the chain starts it as `mergescope __plugin-host`. */
	if (argc >= 2 && strcmp(argv[1], "__plugin-host") == 0)
		return ms_plugin_host_main(argc, argv);
	/* So is each repetition of merge-once (replay/merge_once.c). */
	if (argc >= 2 && strcmp(argv[1], "__merge-once-rep") == 0)
		return ms_merge_once_rep_main(argc, argv);
#ifdef __GLIBC__
	malloc_policy();
#endif
	setlocale(LC_CTYPE, "");
	return ms_cli_main_supervised(argc, argv, stdout, stderr);
}
