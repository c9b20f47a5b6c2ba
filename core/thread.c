/*
 * thread.c - ms_thread_start: pthread_create with a stack size, the one
 * way core (and the fixtures) start threads (ms_thread.h says why).
 */
#include "ms_thread.h"

int
ms_thread_start(pthread_t *t, size_t stack, void *(*fn)(void *), void *arg)
{
	if (stack == MS_THREAD_STACK_DEFAULT)
		return pthread_create(t, NULL, fn, arg);
	pthread_attr_t at;
	int e = pthread_attr_init(&at);
	if (e)
		return e;
	e = pthread_attr_setstacksize(&at, stack);
	if (!e)
		e = pthread_create(t, &at, fn, arg);
	pthread_attr_destroy(&at);
	return e;
}
