/*
 * ms_enum.h - one table per enum for its names and their parsing.
 *
 * An enum whose values appear as text (the event log, reports, the
 * command line, the screen) keeps its names in one const array indexed by
 * the value, written with designated initializers so the pairing is
 * visible: { [MS_KIND_CORE] = "core", ... }. The enum's _name function
 * and, where text is read back, its _parse function are one line each over
 * the two lookups below; nothing else spells the names.
 *
 * Both lookups are pure and allocation-free; any thread may call them.
 */
#ifndef MS_ENUM_H
#define MS_ENUM_H

#include <stddef.h>
#include <string.h>

/* Number of entries of a names array (an array, not a pointer). */
#define MS_NAMES_LEN(names) (sizeof(names) / sizeof((names)[0]))

/* names[v], or `unknown` when v is outside the table or has no name. */
static inline const char *
ms_enum_name(const char *const *names, size_t n, int v, const char *unknown)
{
	return v >= 0 && (size_t)v < n && names[v] ? names[v] : unknown;
}

/* The value whose name is s (exact, case-sensitive), or -1 when none is
 * or s is NULL. */
static inline int
ms_enum_parse(const char *const *names, size_t n, const char *s)
{
	for (size_t i = 0; s && i < n; i++)
		if (names[i] && strcmp(names[i], s) == 0)
			return (int)i;
	return -1;
}

/* The two lookups over a names array (not a pointer), for one-line _name
 * and _parse functions. */
#define MS_ENUM_NAME(names, v, unknown)                                        \
	ms_enum_name((names), MS_NAMES_LEN(names), (int)(v), (unknown))
#define MS_ENUM_PARSE(names, s) ms_enum_parse((names), MS_NAMES_LEN(names), (s))

#endif
