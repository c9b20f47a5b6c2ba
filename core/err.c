/*
 * err.c - error code text and the detailed-message helper.
 */
#include "ms_err.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

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

int
ms_fail(ms_errbuf *eb, int err, const char *fmt, ...)
{
	if (eb) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(eb->msg, sizeof(eb->msg), fmt, ap);
		va_end(ap);
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
