/*
 * clock.c - the real and logical clocks behind ms_clock.h.
 */
#include "ms_clock.h"
#include "ms_err.h"

#include <time.h>

void
ms_clock_init_real(ms_clock *c)
{
	c->mode = MS_CLOCK_REAL;
	atomic_init(&c->logical_ns, 0);
}

void
ms_clock_init_logical(ms_clock *c, int64_t start_ns)
{
	c->mode = MS_CLOCK_LOGICAL;
	atomic_init(&c->logical_ns, start_ns);
}

bool
ms_clock_is_logical(const ms_clock *c)
{
	return c && c->mode == MS_CLOCK_LOGICAL;
}

int64_t
ms_clock_now(const ms_clock *c)
{
	if (ms_clock_is_logical(c))
		return atomic_load(&((ms_clock *)c)->logical_ns);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int
ms_clock_set(ms_clock *c, int64_t ns)
{
	if (!ms_clock_is_logical(c))
		return MS_ERR_STATE;
	atomic_store(&c->logical_ns, ns);
	return 0;
}

int
ms_clock_advance(ms_clock *c, int64_t delta_ns)
{
	if (!ms_clock_is_logical(c))
		return MS_ERR_STATE;
	int64_t cur = atomic_load(&c->logical_ns);
	for (;;) {
		if ((delta_ns > 0 && cur > INT64_MAX - delta_ns) ||
		    (delta_ns < 0 && cur < INT64_MIN - delta_ns))
			return MS_ERR_RANGE;
		if (atomic_compare_exchange_weak(&c->logical_ns, &cur,
		                                 cur + delta_ns))
			return 0;
	}
}

int64_t
ms_clock_frontier(const ms_clock *c)
{
	return ms_frontier(ms_clock_now(c));
}

int64_t
ms_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

struct timespec
ms_mono_timespec(int64_t mono_ns)
{
	int64_t sec = mono_ns / 1000000000, nsec = mono_ns % 1000000000;
	if (nsec < 0) {
		sec--;
		nsec += 1000000000;
	}
	return (struct timespec){ .tv_sec = (time_t)sec,
		                  .tv_nsec = (long)nsec };
}
