/*
 * xml_testlib.h - for tests of the self-contained HTML files (the run
 * report, a bench series): the file must parse as XML, every element
 * closed in order. Include after cmocka.h.
 */
#ifndef MS_XML_TESTLIB_H
#define MS_XML_TESTLIB_H

#include <stdbool.h>
#include <string.h>

/* Every element closed in order (void elements written self-closing), no
 * stray '<' in text; fails the test otherwise. */
static inline void
assert_well_formed(const char *s)
{
	char stack[64][32];
	size_t depth = 0;
	for (const char *p = s; (p = strchr(p, '<')); p++) {
		if (strncmp(p, "<!DOCTYPE", 9) == 0)
			continue;
		const char *end = strchr(p, '>');
		assert_non_null(end);
		bool closing = p[1] == '/';
		const char *n = p + 1 + closing;
		size_t len = strspn(n, "abcdefghijklmnopqrstuvwxyz0123456789");
		assert_true(len > 0 && len < 32);
		if (closing) {
			assert_true(depth > 0);
			depth--;
			if (strlen(stack[depth]) != len ||
			    strncmp(stack[depth], n, len) != 0)
				fail_msg("</%.*s> closes <%s>", (int)len, n,
				         stack[depth]);
		} else if (end[-1] != '/') {
			assert_true(depth < 64);
			memcpy(stack[depth], n, len);
			stack[depth++][len] = '\0';
		}
		p = end;
	}
	assert_int_equal(depth, 0);
}

#endif
