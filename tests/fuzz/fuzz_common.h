/*
 * fuzz_common.h - shared by the part and index-part reader harnesses: the
 * split scheme that turns one fuzz input into a part directory, resealing
 * (recomputing every checksum so mutations reach the checks behind them),
 * and the seed writer.
 *
 * Input layout:
 *   byte 0      mode: bit 0 reseal checksums, bit 1 leave `bloom` out,
 *               bits 2..5 pick the decoded columns (core parts)
 *   bytes 1..6  u16 lengths of meta, index and bloom
 *   then        meta, index, bloom bytes (cut short if the input is), and
 *               everything left is `data`
 */
#ifndef MS_FUZZ_COMMON_H
#define MS_FUZZ_COMMON_H

#define XXH_INLINE_ALL
#include "part_int.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

typedef struct fz_files {
	uint8_t *f[4]; /* meta, index, bloom, data */
	size_t n[4];
	bool bloom_absent;
	unsigned mode;
} fz_files;

static const char *const fz_names[4] = { "meta", "index", "bloom", "data" };

/* Recompute the checksums of blocks/chunks, index, bloom and meta, and the
 * sizes meta records, so that only the format checks can reject. */
static inline void
fz_reseal(fz_files *f)
{
	uint8_t *m = f->f[0], *x = f->f[1], *b = f->f[2], *d = f->f[3];
	size_t mn = f->n[0], xn = f->n[1], bn = f->n[2], dn = f->n[3];
	bool core = mn < 16 || ms_le32(m + 12) == MS_KIND_CORE;
	size_t off = 0;
	while (core && dn - off >= MS__BLOCK_HDR) {
		uint8_t *h = d + off;
		uint64_t sa = ms_le32(h + 12), sb = ms_le32(h + 20);
		if (MS__BLOCK_HDR + sa + sb > dn - off)
			break;
		ms_put_le64(h + 64, XXH64(h + MS__BLOCK_HDR, sa, 0));
		ms_put_le64(h + 72, XXH64(h + MS__BLOCK_HDR + sa, sb, 0));
		ms_put_le64(h + 144, XXH64(h, 144, 0));
		off += MS__BLOCK_HDR + sa + sb;
	}
	while (!core && dn - off >= MS__CHUNK_HDR) {
		uint8_t *h = d + off;
		uint64_t st = ms_le32(h + 8);
		if (MS__CHUNK_HDR + st > dn - off)
			break;
		ms_put_le64(h + 16, XXH64(h + MS__CHUNK_HDR, st, 0));
		ms_put_le64(h + 24, XXH64(h, 24, 0));
		off += MS__CHUNK_HDR + st;
	}
	if (xn >= 8)
		ms_put_le64(x + xn - 8, XXH64(x, xn - 8, 0));
	if (bn >= 8 && !f->bloom_absent)
		ms_put_le64(b + bn - 8, XXH64(b, bn - 8, 0));
	if (mn == MS__META_SIZE) {
		uint64_t bb = f->bloom_absent ? 0 : bn;
		ms_put_le64(m + 88, XXH64(d, dn, 0));
		ms_put_le64(m + 96, dn);
		ms_put_le64(m + 104, xn);
		ms_put_le64(m + 112, bb);
		ms_put_le64(m + 24, MS__META_SIZE + dn + xn + bb);
		ms_put_le64(m + 120, XXH64(m, 120, 0));
	}
}

/* Split one input into files (copies, so they can be resealed). */
static inline bool
fz_split(const uint8_t *in, size_t size, fz_files *f)
{
	memset(f, 0, sizeof(*f));
	if (size < 7)
		return false;
	f->mode = in[0];
	f->bloom_absent = (in[0] & 2) != 0;
	size_t want[3] = { ms_le32((const uint8_t[4]){ in[1], in[2], 0, 0 }),
		           ms_le32((const uint8_t[4]){ in[3], in[4], 0, 0 }),
		           ms_le32((const uint8_t[4]){ in[5], in[6], 0, 0 }) };
	const uint8_t *p = in + 7;
	size_t left = size - 7;
	for (int i = 0; i < 4; i++) {
		size_t n = i < 3 ? (want[i] < left ? want[i] : left) : left;
		f->f[i] = malloc(n ? n : 1);
		memcpy(f->f[i], p, n);
		f->n[i] = n;
		p += n;
		left -= n;
	}
	if (f->mode & 1)
		fz_reseal(f);
	return true;
}

static inline void
fz_free(fz_files *f)
{
	for (int i = 0; i < 4; i++)
		free(f->f[i]);
}

/* A per-process part directory under /dev/shm (or /tmp). */
static inline const char *
fz_dir(void)
{
	static char dir[128];
	if (!dir[0]) {
		const char *base =
		        access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
		snprintf(dir, sizeof(dir), "%s/msfuzz-%d", base, (int)getpid());
	}
	return dir;
}

static inline void
fz_write(const fz_files *f, const char *dir)
{
	mkdir(dir, 0755);
	for (int i = 0; i < 4; i++) {
		char path[256];
		snprintf(path, sizeof(path), "%s/%s", dir, fz_names[i]);
		unlink(path);
		if (i == 2 && f->bloom_absent)
			continue;
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd < 0)
			abort();
		if (f->n[i] && write(fd, f->f[i], f->n[i]) != (ssize_t)f->n[i])
			abort();
		close(fd);
	}
}

static inline void
fz_clean(const char *dir)
{
	for (int i = 0; i < 4; i++) {
		char path[256];
		snprintf(path, sizeof(path), "%s/%s", dir, fz_names[i]);
		unlink(path);
	}
	rmdir(dir);
}

/* Read a written part directory back into the input layout (seeds). */
static inline size_t
fz_pack(const char *dir, uint8_t mode, uint8_t **out)
{
	uint8_t *buf[4] = { 0 };
	size_t n[4] = { 0 }, total = 7;
	for (int i = 0; i < 4; i++) {
		char path[512];
		snprintf(path, sizeof(path), "%s/%s", dir, fz_names[i]);
		FILE *fp = fopen(path, "rb");
		if (!fp)
			continue;
		fseek(fp, 0, SEEK_END);
		n[i] = (size_t)ftell(fp);
		fseek(fp, 0, SEEK_SET);
		buf[i] = malloc(n[i] + 1);
		if (fread(buf[i], 1, n[i], fp) != n[i])
			abort();
		fclose(fp);
		total += n[i];
	}
	uint8_t *o = malloc(total);
	o[0] = mode;
	for (int i = 0; i < 3; i++) {
		o[1 + 2 * i] = (uint8_t)n[i];
		o[2 + 2 * i] = (uint8_t)(n[i] >> 8);
	}
	size_t k = 7;
	for (int i = 0; i < 4; i++) {
		if (n[i])
			memcpy(o + k, buf[i], n[i]);
		k += n[i];
		free(buf[i]);
	}
	*out = o;
	return total;
}

#endif
