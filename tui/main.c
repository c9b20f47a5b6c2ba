/*
 * main.c - the `mergescope` executable: sets the locale (for Unicode
 * glyphs; ASCII is used when the locale is not UTF-8) and hands argv to
 * the command table in cli.c, run in a supervised child process
 * (supervise.c) so that a crashing plugin still leaves a record.
 */
#include "ms_tui.h"

#include <locale.h>
#include <stdio.h>

int
main(int argc, char **argv)
{
	setlocale(LC_ALL, "");
	return ms_cli_main_supervised(argc, argv, stdout, stderr);
}
