/*
 * locale_testlib.h - a locale with a decimal comma for the tests that
 * prove machine-readable numbers do not depend on the locale
 * (test_export.c, test_cli_run.c). de_DE.UTF-8 is used when the system
 * has it; otherwise it is compiled with localedef (from the `locales`
 * package, which scripts/deps.sh installs) into a directory of the test
 * and found through LOCPATH. The tests never skip: no such locale is a
 * failure.
 */
#ifndef MS_LOCALE_TESTLIB_H
#define MS_LOCALE_TESTLIB_H

#include <locale.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LT_COMMA_LOCALE "de_DE.UTF-8"

/* Switch the whole process (LC_ALL) to the decimal-comma locale, making
 * it under workdir/locale first if the system lacks it. Returns false
 * (after printing why) when no such locale can be had. */
static inline bool
lt_use_comma_locale(const char *workdir)
{
	if (!setlocale(LC_ALL, LT_COMMA_LOCALE)) {
		char dir[1024], cmd[2300];
		snprintf(dir, sizeof(dir), "%s/locale", workdir);
		snprintf(cmd, sizeof(cmd),
		         "mkdir -p '%s' && localedef -i de_DE -f UTF-8 "
		         "'%s/" LT_COMMA_LOCALE "' 2>&1",
		         dir, dir);
		int rc = system(cmd);
		/* localedef exits 1 for warnings with a usable result. */
		if (rc != 0 && rc != 256)
			fprintf(stderr, "localedef failed (%d): %s\n", rc, cmd);
		setenv("LOCPATH", dir, 1);
		if (!setlocale(LC_ALL, LT_COMMA_LOCALE)) {
			fprintf(stderr,
			        "no %s locale, even with LOCPATH=%s (is the "
			        "`locales` package installed? make deps)\n",
			        LT_COMMA_LOCALE, dir);
			return false;
		}
	}
	if (strcmp(localeconv()->decimal_point, ",") != 0) {
		fprintf(stderr, "%s has decimal point \"%s\"\n",
		        LT_COMMA_LOCALE, localeconv()->decimal_point);
		setlocale(LC_ALL, "C");
		return false;
	}
	return true;
}

#endif
