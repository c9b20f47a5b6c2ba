/*
 * ms_err.h - the one error vocabulary of libmscore.
 *
 * Every fallible core function returns 0 on success or a negative
 * enum ms_err. Codes are stable; new ones are appended. Where a function
 * can say more (which part, which file, what was expected) it fills an
 * ms_errbuf the caller passes in.
 */
#ifndef MS_ERR_H
#define MS_ERR_H

#include <stddef.h>

enum ms_err {
	MS_OK = 0,
	MS_ERR_NOMEM = -1, /* an allocation failed (or was failed on purpose) */
	MS_ERR_IO = -2,    /* a system call on a file failed; errno in text */
	MS_ERR_CORRUPT =
	        -3, /* bytes on disk do not match their checksum/format */
	MS_ERR_FORMAT = -4,   /* a file is of another format or version */
	MS_ERR_INVAL = -5,    /* the caller passed an invalid argument */
	MS_ERR_NOTFOUND = -6, /* a named part, file or key does not exist */
	MS_ERR_RANGE = -7,    /* a length or count exceeds what is allowed */
	MS_ERR_STATE = -8,    /* the object is not in a state for this call */
	MS_ERR_EXISTS = -9,   /* something that must be new exists already */
	MS_ERR_NOSPACE = -10, /* the disk is full (ENOSPC, EDQUOT) */
	MS_ERR_PLUGIN = -11, /* a plugin failed to load or broke its contract */
	MS_ERR_TIMEOUT = -12,  /* a bounded wait ran out */
	MS_ERR_CANCELED = -13, /* the operation was stopped on request */
	MS_ERR_CONFLICT = -14, /* the inventory changed under an operation */
	MS_ERR_COMPRESS = -15, /* zstd refused to compress or decompress */
	MS_ERR_LIMIT = -16,    /* out of file descriptors (EMFILE, ENFILE) */
	MS_ERR_CONFIG = -17,   /* a plugin's open() refused its config */
};

/* A short, static, human description of an error code; never NULL. */
const char *ms_strerror(int err);

/*
 * A caller-owned buffer for a detailed message: "part 00000000000000a1:
 * data: block 7 checksum mismatch". Functions that take one write a
 * NUL-terminated message into it on failure and leave it alone on success.
 * A NULL ms_errbuf pointer is allowed everywhere and means "no details".
 */
typedef struct ms_errbuf {
	char msg[512];
} ms_errbuf;

/* Formats into eb (if non-NULL) and returns err, for `return ms_fail(...)`.
 * A message longer than eb holds keeps its head and its tail (where the
 * cause is said) around " [...] ". The arguments may point into eb. */
int ms_fail(ms_errbuf *eb, int err, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* msg into dst[size] (NUL-terminated; nothing when size is 0): whole
 * when it fits, else its head and its tail, where the cause is said,
 * around " [...] ", cut between UTF-8 characters. For a message copied
 * into a smaller buffer than it was made in. */
void ms_msg_fit(char *dst, size_t size, const char *msg);

/* Maps an errno value to MS_ERR_NOSPACE (ENOSPC, EDQUOT), MS_ERR_LIMIT
 * (EMFILE, ENFILE) or MS_ERR_IO. */
int ms_err_from_errno(int e);

/* The same for a path that could not be opened: ENOENT is MS_ERR_NOTFOUND. */
int ms_err_from_open_errno(int e);

#endif
