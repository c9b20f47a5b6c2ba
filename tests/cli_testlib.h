/*
 * cli_testlib.h - the `mergescope` command line run in-process for the CLI
 * tests (test_cli_run.c, test_tui_cli.c): ms_cli_main on an argument list
 * exactly as the binary calls it, with standard output and standard error
 * captured into the caller's buffers.
 */
#ifndef MS_CLI_TESTLIB_H
#define MS_CLI_TESTLIB_H

#include "ms_tui.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#define CT_MAX_ARGS 40

/* The whole of f (up to cap - 1 bytes) into buf, NUL-terminated; returns
 * the bytes read. */
static inline size_t
ct_slurp(FILE *f, char *buf, size_t cap)
{
	fflush(f);
	rewind(f);
	size_t n = fread(buf, 1, cap - 1, f);
	buf[n] = '\0';
	return n;
}

/*
 * Run ms_cli_main on "mergescope" followed by first and the rest of ap up
 * to a NULL (at most CT_MAX_ARGS - 2 arguments). Standard output goes to
 * out (cap ocap, *olen = its length; olen may be NULL), standard error to
 * err (cap ecap), both NUL-terminated. Returns the exit status; aborts
 * when no temporary file can be made.
 */
static inline int
ct_vcli(char *out, size_t ocap, size_t *olen, char *err, size_t ecap,
        const char *first, va_list ap)
{
	char *argv[CT_MAX_ARGS];
	int argc = 0;
	argv[argc++] = (char *)"mergescope";
	for (const char *a = first; a && argc < CT_MAX_ARGS - 1;
	     a = va_arg(ap, const char *))
		argv[argc++] = (char *)a;
	argv[argc] = NULL;
	FILE *o = tmpfile(), *e = tmpfile();
	if (!o || !e)
		abort();
	int rc = ms_cli_main(argc, argv, o, e);
	size_t n = ct_slurp(o, out, ocap);
	if (olen)
		*olen = n;
	ct_slurp(e, err, ecap);
	fclose(o);
	fclose(e);
	return rc;
}

/* ct_vcli on the arguments first, ... up to a NULL. */
static inline int
ct_cli(char *out, size_t ocap, char *err, size_t ecap, const char *first, ...)
{
	va_list ap;
	va_start(ap, first);
	int rc = ct_vcli(out, ocap, NULL, err, ecap, first, ap);
	va_end(ap);
	return rc;
}

#endif
