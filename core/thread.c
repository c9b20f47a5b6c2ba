/*
 * thread.c - ms_thread_start: pthread_create with a stack size, the one
 * way core, replay (and the fixtures) start threads (ms_thread.h says
 * why), and ms_thread_fail, the one way they say that one did not start.
 */
#include "ms_thread.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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

int
ms_thread_fail(ms_errbuf *eb, int rc, int err, const char *fmt, ...)
{
	if (!eb)
		return rc;
	char what[sizeof(eb->msg)];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return ms_fail(eb, rc, "%s: %s%s", what, strerror(err),
	               err == EAGAIN || err == ENOMEM
	                       ? " (the address space or thread limit may be "
	                         "too small: ulimit -v, ulimit -u)"
	                       : "");
}
