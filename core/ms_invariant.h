/*
 * ms_invariant.h - debug-only invariant checks inside core, and the state
 * tables they check against, readable by the tests.
 *
 * MS_INVARIANT(cond, fmt, ...) checks cond where MS_DEBUG_INVARIANTS is
 * defined (the Debug build type, hence the sanitizer builds: see
 * CMakeLists.txt) and compiles to nothing elsewhere, without evaluating
 * cond. A failed invariant is a bug in core, not bad input: it names the
 * file, the line, the condition and the state, and aborts, as assert()
 * does (the one place where core prints).
 *
 * The tables (engine job states, stager states, part iterator modes) are
 * private to their files; the functions below answer questions about them
 * so tests can hold them to their design blocks in every build.
 */
#ifndef MS_INVARIANT_H
#define MS_INVARIANT_H

#include <stdbool.h>
#include <stddef.h>

#ifdef MS_DEBUG_INVARIANTS
#define MS_INVARIANT(cond, ...)                                                \
	do {                                                                   \
		if (!(cond))                                                   \
			ms__invariant_failed(__FILE__, __LINE__, #cond,        \
			                     __VA_ARGS__);                     \
	} while (0)
#else
#define MS_INVARIANT(cond, ...)                                                \
	do {                                                                   \
		(void)sizeof(!(cond));                                         \
	} while (0)
#endif

void ms__invariant_failed(const char *file, int line, const char *cond,
                          const char *fmt, ...)
        __attribute__((noreturn, format(printf, 4, 5)));

/* One row of a state table (pager.c's way): a state's name and the states
 * it may move to, as MS__STATE_TO bits. A table is an array indexed by
 * the state; the two lookups below answer for any table. */
#define MS__STATE_TO(st) (1u << (st))
typedef struct ms__state {
	const char *name;
	unsigned to;
} ms__state;

/* The name of state st of an n-state table, NULL out of range. */
static inline const char *
ms__state_name(const ms__state *t, int n, int st)
{
	return st >= 0 && st < n ? t[st].name : NULL;
}

/* Whether the table allows the move from -> to. */
static inline bool
ms__state_move_ok(const ms__state *t, int n, int from, int to)
{
	return from >= 0 && from < n && to >= 0 && to < n &&
	       (t[from].to & MS__STATE_TO(to));
}

/* Engine job states (engine.c design 2): their count, names ("hook",
 * "inhook", "held", "queued", "running", "ending"; NULL out of range),
 * and whether the table allows the move from -> to. */
int ms__engine_job_states(void);
const char *ms__engine_job_state_name(int st);
bool ms__engine_job_move_ok(int from, int to);

struct ms_stager;
/* The stager's state table (stager.c design block: "empty", "pending",
 * "flushing", "finished", "failed") and, in *n, its length: ask it with
 * ms__state_name and ms__state_move_ok. */
const ms__state *ms__stager_state_table(int *n);
/* The stager's accounting rules (its design 1-8) in its current state:
 * NULL when they hold, else the first broken one, led by its design
 * number ("2: ..."). Any build; debug builds run it at every move. */
const char *ms__stager_check(const struct ms_stager *s);
/* Test hook: break one rule in s's fields, as a bug would, so a test can
 * see ms__stager_check (and a debug build's next move) catch it. */
enum ms__stager_break {
	MS__STAGER_BREAK_CHARGE,  /* live charge past the hard ceiling (2) */
	MS__STAGER_BREAK_PENDING, /* a pending count with no entry (6) */
	MS__STAGER_BREAK_OUTCOME, /* a trace counted kept twice (1) */
	MS__STAGER_BREAK_REUSE,   /* one more batch reused than allowed (5) */
};
void ms__stager_test_break(struct ms_stager *s, enum ms__stager_break what);

struct ms_part_iter;
/* The mode of a part iterator (part_reader.c): "check", "defer" or
 * "reread". */
const char *ms__part_iter_mode_name(const struct ms_part_iter *it);

#endif
