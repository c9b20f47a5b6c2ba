/*
 * main.c - the `mergescope` executable: takes the character type from the
 * environment's locale (for Unicode glyphs; ASCII is used when it is not
 * UTF-8), and nothing else: numbers are read and written in the "C"
 * locale, so exports, reports and options like --speed mean the same in a
 * locale with a decimal comma. Then hands argv to the command table in
 * cli.c, with a watcher process beside it (supervise.c) so that a
 * crashing plugin still leaves a record.
 */
#include "ms_pipeline.h"
#include "ms_replay.h"
#include "ms_tui.h"

#include <locale.h>
#include <stdio.h>
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
	setlocale(LC_CTYPE, "");
	return ms_cli_main_supervised(argc, argv, stdout, stderr);
}
