/*
 * ms_clock.h - the time seam of the engine: a real clock for general use and
 * a logical clock the replay controller sets, plus the maturity rule.
 *
 * Everything in core that needs "now" (maturity, the frontier, the grace
 * policy) asks an ms_clock, never the system directly, so a replay can run a
 * logical day at any speed and a frozen shard can be re-run at one instant.
 *
 * Design:
 *  1. A real clock reads CLOCK_REALTIME (unix ns) at every call.
 *  2. A logical clock returns the last value set; setting is atomic, so the
 *     controller may set it while merge workers read it.
 *  3. A part is mature iff its max timestamp <= now - MS_GRACE_NS; the
 *     frontier is now - MS_GRACE_NS. Both saturate instead of overflowing.
 *
 * Durations, deadlines and rates are another matter: they are measured on
 * the one monotonic clock below (ms_mono_ns), never on an ms_clock, so a
 * logical day never stretches a timeout.
 *
 * Ownership: an ms_clock is embedded by its owner (init only, nothing to
 * release). Threads: every function may be called from any thread.
 */
#ifndef MS_CLOCK_H
#define MS_CLOCK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* The merge grace: two hours, fixed. */
#define MS_GRACE_NS ((int64_t)2 * 3600 * 1000000000)

enum ms_clock_mode {
	MS_CLOCK_REAL = 0,    /* CLOCK_REALTIME */
	MS_CLOCK_LOGICAL = 1, /* set by the controller */
};

typedef struct ms_clock {
	enum ms_clock_mode mode;
	_Atomic int64_t logical_ns;
} ms_clock;

void ms_clock_init_real(ms_clock *c);
void ms_clock_init_logical(ms_clock *c, int64_t start_ns);
bool ms_clock_is_logical(const ms_clock *c);
/* Unix ns: CLOCK_REALTIME for a real clock (or c == NULL), the set value for
 * a logical one. */
int64_t ms_clock_now(const ms_clock *c);
/* Logical clocks only: set the time. 0, or MS_ERR_STATE on a real clock. */
int ms_clock_set(ms_clock *c, int64_t ns);
/* Logical clocks only: move the time by delta_ns (may be negative).
 * MS_ERR_STATE on a real clock, MS_ERR_RANGE if the result would not fit
 * (the clock is then unchanged). */
int ms_clock_advance(ms_clock *c, int64_t delta_ns);

/* A timestamp moved by d ns (either sign), saturating at INT64_MIN and
 * INT64_MAX: windows such as [min - grace, max + grace] near the ends of
 * the range. */
static inline int64_t
ms_ts_add(int64_t ts, int64_t d)
{
	if (d > 0 && ts > INT64_MAX - d)
		return INT64_MAX;
	if (d < 0 && ts < INT64_MIN - d)
		return INT64_MIN;
	return ts + d;
}

/* A configured grace: grace_ns when positive, else MS_GRACE_NS (0 in an
 * option or request means the default). */
static inline int64_t
ms_grace_or_default(int64_t grace_ns)
{
	return grace_ns > 0 ? grace_ns : MS_GRACE_NS;
}

/* now - grace (grace_ns as ms_grace_or_default reads it), saturating at
 * INT64_MIN. */
static inline int64_t
ms_frontier_grace(int64_t now_ns, int64_t grace_ns)
{
	int64_t g = ms_grace_or_default(grace_ns);
	return now_ns < INT64_MIN + g ? INT64_MIN : now_ns - g;
}

/* now - MS_GRACE_NS, saturating at INT64_MIN. */
static inline int64_t
ms_frontier(int64_t now_ns)
{
	return ms_frontier_grace(now_ns, MS_GRACE_NS);
}

/* The maturity rule, the one place it is written: a part (or trace, or
 * fragment) whose max timestamp is max_ts is mature behind the frontier
 * frontier_ns when max_ts <= frontier_ns; otherwise it is hot. */
static inline bool
ms_ts_mature(int64_t max_ts, int64_t frontier_ns)
{
	return max_ts <= frontier_ns;
}

/* True when a part (or trace) whose max timestamp is max_ts is mature at
 * now_ns: max_ts <= now - grace. */
static inline bool
ms_is_mature(int64_t max_ts, int64_t now_ns)
{
	return ms_ts_mature(max_ts, ms_frontier(now_ns));
}

/* The frontier of clock c at this moment. */
int64_t ms_clock_frontier(const ms_clock *c);

/* CLOCK_MONOTONIC in ns: the clock of every duration, deadline and rate in
 * mergescope (wall time of a merge, a plugin's timeout, a redraw interval). */
int64_t ms_mono_ns(void);

/* ms_mono_ns in seconds, for figures printed as seconds. */
static inline double
ms_mono_s(void)
{
	return (double)ms_mono_ns() / 1e9;
}

/* A CLOCK_MONOTONIC instant (ns, as ms_mono_ns returns) as a timespec, for
 * pthread_cond_timedwait on a condition variable whose clock attribute is
 * CLOCK_MONOTONIC: ms_mono_timespec(ms_mono_ns() + timeout_ns). */
struct timespec ms_mono_timespec(int64_t mono_ns);

#endif
