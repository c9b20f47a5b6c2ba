/*
 * fuzz_shard.h - shared by the shard snapshot harness and the seed writer:
 * the input layout, a template shard with two real parts (IDs 1 and 3, all
 * three kinds) that inputs can borrow, and small file-system helpers.
 *
 * Input layout:
 *   byte 0   mode: bit 0 reseal (recompute the snapshot's XXH64 tail),
 *            bit 1 link the template's parts 1 and 3 into the layout,
 *            bit 2 leave a temporary part file tmp/core-<16hex> cut
 *                  short (no footer),
 *            bit 3 leave an unlisted part file parts/<16hex>.core and a
 *                  file parts/README that is not a part,
 *            bit 4 write no snapshot and open with `create`,
 *            bit 5 after a successful open remove the first part (one
 *                  transaction, a new snapshot) and open again,
 *            bit 6 fail allocation number byte 1 (1..255) of the first
 *                  open
 *   byte 1   the ID byte of the leftovers (0x100 + it) and the failing
 *            allocation
 *   then     the bytes of DIR/snapshot
 */
#ifndef MS_FUZZ_SHARD_H
#define MS_FUZZ_SHARD_H

#define XXH_INLINE_ALL
#include "ms_fs.h"
#include "ms_shard.h"
#include "ms_sidx.h"
#include "../shard_testlib.h"

#include <xxhash.h>

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FZS_RESEAL 0x01u
#define FZS_PARTS 0x02u
#define FZS_TMP 0x04u
#define FZS_UNLISTED 0x08u
#define FZS_CREATE 0x10u
#define FZS_REMOVE 0x20u
#define FZS_FAILALLOC 0x40u

static const char *const fzs_kind_name[MS_KIND_COUNT] = { "core", "latency",
	                                                  "start_time" };

/* rm -rf, not following symbolic links. */
static inline void
fzs_rmrf(const char *path)
{
	ms_fs_rm_tree(path, NULL);
}

static inline bool
fzs_exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

static inline void
fzs_write_file(const char *path, const void *p, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || (n && write(fd, p, n) != (ssize_t)n))
		abort();
	close(fd);
}

/* Rows of template part `id`: two traces of two spans. */
static inline int
fzs_write_part(ms_shard *s, uint64_t id, uint32_t depth)
{
	static const char *const tags[] = { "http.method=GET" };
	ms_row rows[4];
	char tid[2][16];
	uint8_t body[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	memset(rows, 0, sizeof(rows));
	for (int t = 0; t < 2; t++)
		snprintf(tid[t], sizeof(tid[t]), "t%02u-%d", (unsigned)id, t);
	for (int i = 0; i < 4; i++) {
		ms_row *r = &rows[i];
		r->trace_id = (const uint8_t *)tid[i / 2];
		r->trace_id_len = (uint32_t)strlen(tid[i / 2]);
		r->span_id = id * 10 + (uint64_t)i;
		r->segment_id = "seg";
		r->service = "orders";
		r->instance = "i-1";
		r->endpoint = "/checkout";
		r->start_ns = 1700000000000000000LL + (int64_t)(id * 100 + i);
		r->latency_ms = (uint32_t)(i * 7);
		r->is_error = i == 3;
		r->tags = tags;
		r->ntags = (uint32_t)(i % 2);
		r->body = body;
		r->body_len = sizeof(body);
	}
	ms_part_writer_opts o = { .depth = depth };
	ms_errbuf eb = { { 0 } };
	int rc = sh_write_tmp_kinds(s, id, rows, 4, &o, &eb);
	if (rc == 0)
		rc = ms_shard_introduce(s, id, &eb);
	if (rc)
		fprintf(stderr, "fuzz template part %u: %s\n", (unsigned)id,
		        eb.msg);
	return rc;
}

/* Build the template shard in `dir` (which must not exist): parts 1
 * (depth 0) and 3 (depth 2), epoch 2. Aborts on failure. */
static inline void
fzs_make_template(const char *dir)
{
	ms_shard_opts o = { .dir = dir, .create = true };
	ms_shard *s = NULL;
	ms_errbuf eb = { { 0 } };
	if (ms_shard_open(&s, &o, &eb) != 0) {
		fprintf(stderr, "fuzz template %s: %s\n", dir, eb.msg);
		abort();
	}
	uint64_t id;
	if (ms_shard_new_id(s, &id, &eb) || id != 1 ||
	    fzs_write_part(s, 1, 0) || fzs_write_part(s, 3, 2))
		abort();
	ms_shard_close(s);
}

/* Hard-link the template's part files into the shard `dir` (the shard
 * never writes a part file in place, and removing a link leaves the
 * template whole). */
static inline void
fzs_link_parts(const char *tpl, const char *dir)
{
	static const uint64_t ids[] = { 1, 3 };
	char a[4096], b[4096];
	for (size_t i = 0; i < 2; i++)
		for (int k = 0; k < MS_KIND_COUNT; k++) {
			snprintf(a, sizeof(a), "%s/parts/%016llx.%s", tpl,
			         (unsigned long long)ids[i], fzs_kind_name[k]);
			snprintf(b, sizeof(b), "%s/parts/%016llx.%s", dir,
			         (unsigned long long)ids[i], fzs_kind_name[k]);
			if (link(a, b) != 0)
				abort();
		}
}

/* Read a whole file (seeds). */
static inline size_t
fzs_slurp(const char *path, uint8_t **out)
{
	FILE *fp = fopen(path, "rb");
	if (!fp)
		abort();
	fseek(fp, 0, SEEK_END);
	size_t n = (size_t)ftell(fp);
	fseek(fp, 0, SEEK_SET);
	*out = malloc(n + 1);
	if (!*out || fread(*out, 1, n, fp) != n)
		abort();
	fclose(fp);
	return n;
}

#endif
