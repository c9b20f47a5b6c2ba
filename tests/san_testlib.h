/*
 * san_testlib.h - the sanitizer builds' options for tests whose children
 * (plugin host processes, the mergescope binary) must die of a fatal
 * signal as they would in a plain build.
 */
#ifndef MS_SAN_TESTLIB_H
#define MS_SAN_TESTLIB_H

#include <stdio.h>
#include <stdlib.h>

/* Leave SIGSEGV, SIGBUS, SIGFPE, SIGILL and SIGABRT to the default
 * actions (or the program's own handlers): appended to what ASAN_OPTIONS
 * and TSAN_OPTIONS already say, for this process and its children. */
static inline void
san_fatal_signals_default(void)
{
	static const char *const san[] = { "ASAN_OPTIONS", "TSAN_OPTIONS" };
	for (size_t i = 0; i < 2; i++) {
		const char *ao = getenv(san[i]);
		char opts[600];
		snprintf(opts, sizeof(opts),
		         "%s%shandle_segv=0:handle_sigbus=0:handle_sigfpe=0:"
		         "handle_sigill=0:handle_abort=0",
		         ao ? ao : "", ao && *ao ? ":" : "");
		setenv(san[i], opts, 1);
	}
}

#endif
