/*
 * thread_testlib.h - pthread_create of the program's own code, for a test
 * linked with -Wl,--wrap=pthread_create (ms_thread_wrap_test in
 * tests/CMakeLists.txt): passed through, except that once armed it fails
 * with EAGAIN (what `ulimit -v` leaves a process with no room for a
 * thread) at its nth call, at every call, or at every call for a stack
 * of one size, and that while watched it
 * counts the threads started by their stack size. Safe from any thread.
 * Include once per test, after <cmocka.h>.
 */
#ifndef MS_THREAD_TESTLIB_H
#define MS_THREAD_TESTLIB_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

int __real_pthread_create(pthread_t *t, const pthread_attr_t *a,
                          void *(*fn)(void *), void *arg);
int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *a,
                          void *(*fn)(void *), void *arg);

static struct {
	_Atomic unsigned fail_at; /* 0: never; n: the nth call since armed */
	_Atomic unsigned calls;   /* since armed */
	_Atomic bool fail_all;
	_Atomic size_t fail_stack; /* 0: none; else calls for this stack */
	_Atomic size_t small_max; /* watched while not 0 */
	/* while watched: threads with a stack of at most small_max bytes,
	 * and with a larger one or the default (ulimit -s) */
	_Atomic unsigned small, large;
} tl_thread;

int
__wrap_pthread_create(pthread_t *t, const pthread_attr_t *a,
                      void *(*fn)(void *), void *arg)
{
	size_t small_max = atomic_load(&tl_thread.small_max), ss = 0;
	bool sized = a && pthread_attr_getstacksize(a, &ss) == 0;
	if (small_max) {
		if (sized && ss <= small_max)
			atomic_fetch_add(&tl_thread.small, 1);
		else
			atomic_fetch_add(&tl_thread.large, 1);
	}
	if (atomic_load(&tl_thread.fail_all))
		return EAGAIN;
	size_t fail_stack = atomic_load(&tl_thread.fail_stack);
	if (fail_stack && sized && ss == fail_stack)
		return EAGAIN;
	unsigned at = atomic_load(&tl_thread.fail_at);
	if (at && atomic_fetch_add(&tl_thread.calls, 1) + 1 == at)
		return EAGAIN;
	return __real_pthread_create(t, a, fn, arg);
}

/* Fail the nth call from now (1: the next), once; 0: none. */
static inline void
tl_threads_fail_nth(unsigned n)
{
	atomic_store(&tl_thread.fail_at, 0);
	atomic_store(&tl_thread.calls, 0);
	atomic_store(&tl_thread.fail_at, n);
}

/* Fail every call while on. */
static inline void
tl_threads_fail_all(bool on)
{
	atomic_store(&tl_thread.fail_all, on);
}

/* Fail every call for a thread of `stack` bytes of stack while not 0
 * (the threads with default attributes are never failed by it). */
static inline void
tl_threads_fail_stack(size_t stack)
{
	atomic_store(&tl_thread.fail_stack, stack);
}

/* Count the threads started from now by their stack: at most small_max
 * bytes (tl_thread.small) or not (tl_thread.large); 0 stops counting. */
static inline void
tl_threads_watch(size_t small_max)
{
	if (small_max) {
		atomic_store(&tl_thread.small, 0);
		atomic_store(&tl_thread.large, 0);
	}
	atomic_store(&tl_thread.small_max, small_max);
}

#endif
