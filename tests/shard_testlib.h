/*
 * shard_testlib.h - shared by the shard tests and the shard fuzz harnesses:
 * writing one part of every kind at a shard's tmp paths.
 */
#ifndef MS_SHARD_TESTLIB_H
#define MS_SHARD_TESTLIB_H

#include "ms_part.h"
#include "ms_shard.h"
#include "ms_sidx.h"

#include <stddef.h>
#include <stdint.h>

/* Write part `id` of every kind from rows[0..n) at the tmp paths of `s`
 * (with writer options `o`, which may be NULL); stops at the first kind
 * that fails and returns its code, the reason in `eb`. */
static inline int
sh_write_tmp_kinds(ms_shard *s, uint64_t id, const ms_row *rows, size_t n,
                   const ms_part_writer_opts *o, ms_errbuf *eb)
{
	ms_part_meta meta;
	char path[4096];
	int rc = 0;
	for (int k = 0; k < MS_KIND_COUNT && rc == 0; k++) {
		ms_shard_tmp_path(s, (enum ms_part_kind)k, id, path,
		                  sizeof(path));
		if (k == MS_KIND_CORE)
			rc = ms_part_write_rows(path, id, rows, n, o, &meta,
			                        eb);
		else
			rc = ms_sidx_write_rows((enum ms_part_kind)k, path, id,
			                        rows, n, o, &meta, eb);
	}
	return rc;
}

#endif
