/*
 * checkpoint_int.h - shared by checkpoint.c and checkpoint_state.c (and
 * the checkpoint fuzz harness): the state file's layout constants and the
 * small file helpers both use.
 */
#ifndef MS_CHECKPOINT_INT_H
#define MS_CHECKPOINT_INT_H

#include "ms_checkpoint.h"
#include "ms_fs.h"
#include "ms_mem.h"

#include <stdbool.h>

#define CK_MAGIC "MSCKPT01"
#define CK_HEAD 152
#define CK_COUNT_MAX (1u << 24)
#define SNAP_HEAD 48 /* snapshot versions 1 and 2: header + checksum */
#define SNAP_MAX (SNAP_HEAD + 16ull * CK_COUNT_MAX)
#define STATE_MAX                                                         \
	(CK_HEAD + 8ull * CK_COUNT_MAX * 4 + MS_CHECKPOINT_USER_MAX + 8)

typedef char ck_path[MS_FS_PATH_MAX];

/* a/b into out (MS_FS_PATH_MAX bytes); MS_ERR_RANGE naming both when
 * it does not fit. */
int ms__ck_path(char *out, const char *a, const char *b, ms_errbuf *eb);
/* The whole file at path, at most max bytes, into *buf (malloc, owned by
 * the caller); MS_ERR_CORRUPT when it is larger. */
int ms__ck_read_all(const char *path, uint64_t max, uint8_t **buf, size_t *n,
                    ms_errbuf *eb);
/* The state file's bytes of c, appended to b. 0 or MS_ERR_NOMEM/RANGE. */
int ms__ck_encode(const ms_checkpoint *c, ms_buf *b);

#endif
