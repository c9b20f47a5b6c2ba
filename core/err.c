/*
 * err.c - error code text and the detailed-message helper.
 */
#include "ms_err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *
ms_strerror(int err)
{
	switch (err) {
	case MS_OK:
		return "success";
	case MS_ERR_NOMEM:
		return "out of memory";
	case MS_ERR_IO:
		return "input/output error";
	case MS_ERR_CORRUPT:
		return "corrupt data";
	case MS_ERR_FORMAT:
		return "unsupported format or version";
	case MS_ERR_INVAL:
		return "invalid argument";
	case MS_ERR_NOTFOUND:
		return "not found";
	case MS_ERR_RANGE:
		return "value out of range";
	case MS_ERR_STATE:
		return "invalid state for this operation";
	case MS_ERR_EXISTS:
		return "already exists";
	case MS_ERR_NOSPACE:
		return "no space left on device";
	case MS_ERR_PLUGIN:
		return "plugin error";
	case MS_ERR_TIMEOUT:
		return "timed out";
	case MS_ERR_CANCELED:
		return "canceled";
	case MS_ERR_CONFLICT:
		return "inventory changed concurrently";
	case MS_ERR_COMPRESS:
		return "compression error";
	case MS_ERR_LIMIT:
		return "too many open files";
	case MS_ERR_CONFIG:
		return "plugin config refused";
	}
	return "unknown error";
}

/* Whether byte c continues a UTF-8 sequence (is not the first byte). */
static int
utf8_cont(char c)
{
	return ((unsigned char)c & 0xc0) == 0x80;
}

/* The n-byte message m into dst[size] whole, or when it does not fit
 * its head and its tail around " [...] ": a message naming a long path
 * (up to PATH_MAX) kept only its start, and lost the cause said at its
 * end. Cuts fall between UTF-8 characters. */
static void
put_msg(char *dst, size_t size, const char *m, size_t n)
{
	static const char gap[] = " [...] ";
	size_t cap = size - 1;
	if (n <= cap) {
		memmove(dst, m, n);
		dst[n] = '\0';
		return;
	}
	if (cap < 3 * (sizeof(gap) - 1)) {
		/* Too small for a head, the gap and a tail: the head. */
		while (cap > 0 && utf8_cont(m[cap]))
			cap--;
		memmove(dst, m, cap);
		dst[cap] = '\0';
		return;
	}
	size_t head = cap / 3, tail = cap - head - (sizeof(gap) - 1);
	while (head > 0 && utf8_cont(m[head]))
		head--;
	size_t from = n - tail;
	while (from < n && utf8_cont(m[from]))
		from++;
	memmove(dst, m, head);
	memcpy(dst + head, gap, sizeof(gap) - 1);
	memmove(dst + head + sizeof(gap) - 1, m + from, n - from);
	dst[head + sizeof(gap) - 1 + n - from] = '\0';
}

void
ms_msg_fit(char *dst, size_t size, const char *msg)
{
	if (!dst || !size)
		return;
	put_msg(dst, size, msg ? msg : "", msg ? strlen(msg) : 0);
}

int
ms_fail(ms_errbuf *eb, int err, const char *fmt, ...)
{
	if (eb) {
		/* Room for two paths of PATH_MAX and their words. */
		char m[2 * 4096 + 1024];
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(m, sizeof(m), fmt, ap);
		va_end(ap);
		if (n < 0)
			n = 0, m[0] = '\0';
		put_msg(eb->msg, sizeof(eb->msg), m,
		        (size_t)n < sizeof(m) ? (size_t)n : sizeof(m) - 1);
	}
	return err;
}

int
ms_err_from_errno(int e)
{
	if (e == ENOSPC || e == EDQUOT)
		return MS_ERR_NOSPACE;
	return (e == EMFILE || e == ENFILE) ? MS_ERR_LIMIT : MS_ERR_IO;
}

int
ms_err_from_open_errno(int e)
{
	return e == ENOENT ? MS_ERR_NOTFOUND : ms_err_from_errno(e);
}
