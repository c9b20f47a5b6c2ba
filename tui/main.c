/*
 * main.c - the `mergescope` executable: takes the character type from the
 * environment's locale (for Unicode glyphs; ASCII is used when it is not
 * UTF-8), and nothing else: numbers are read and written in the "C"
 * locale, so exports, reports and options like --speed mean the same in a
 * locale with a decimal comma. Then hands argv to the command table in
 * cli.c, with a watcher process beside it (supervise.c) so that a
 * crashing plugin still leaves a record.
 *
 * It also fixes the C library's mmap threshold (glibc: M_MMAP_THRESHOLD)
 * at 1 MiB. Left dynamic, glibc raises it to the size of any mapped chunk
 * that is freed (a fixture's manifest closed, a batch builder released),
 * and the trim threshold to twice that: every smaller buffer of every
 * merge afterwards comes from the allocator's heaps, and what is freed
 * there stays resident. Fixed, buffers of 1 MiB and more are mapped and
 * unmapped, and free memory above 128 KiB at the top of a heap is given
 * back: day-2x peak RSS is about 7 MiB lower (the excess grew with the
 * day), for about 100,000 more minor page faults (a few percent of the
 * run's CPU).
 */
#include "ms_pipeline.h"
#include "ms_replay.h"
#include "ms_tui.h"

#include <locale.h>
#include <stdio.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <string.h>

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
	mallopt(M_MMAP_THRESHOLD, 1 << 20);
#endif
	setlocale(LC_CTYPE, "");
	return ms_cli_main_supervised(argc, argv, stdout, stderr);
}
