/*
 * cli.h - shared by cli.c and the cmd_*.c files: the option table every
 * command parses its arguments with.
 */
#ifndef MS_TUI_CLI_H
#define MS_TUI_CLI_H

#include "tui_int.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* One option of a command. `arg` names the value ("DIR") or is NULL for
 * a flag; after parsing, `count` says how often it was given and `value`
 * holds the last value (borrowed from argv). */
typedef struct ms__opt {
	const char *name;
	const char *arg;
	bool required;
	bool repeat;
	int count;
	const char *value;
} ms__opt;

/* Parse argv[1..argc) against opts ("--x V" and "--x=V"). Returns 0, or
 * MS_EXIT_USAGE after printing what is wrong to err. */
int ms__cmd_parse(const ms_cmd *c, int argc, char **argv, ms__opt *opts,
                  size_t nopts, FILE *err);

#endif
