/*
 * fuzz_text.h - the input of a text harness (a breakpoint, a chain spec,
 * a command line) as the C string its parser takes.
 */
#ifndef MS_FUZZ_TEXT_H
#define MS_FUZZ_TEXT_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* data[0..size) and a NUL, in memory the caller frees; NULL for an input
 * longer than max bytes (not worth a run). */
static inline char *
fz_text(const uint8_t *data, size_t size, size_t max)
{
	if (size > max)
		return NULL;
	char *s = malloc(size + 1);
	if (!s)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

#endif
