/*
 * fuzz_common.h - shared by the part and index-part reader harnesses: the
 * split scheme that turns one fuzz input into a part file, resealing
 * (recomputing every checksum so mutations reach the checks behind them),
 * and the seed writer.
 *
 * Input layout:
 *   byte 0      mode: bit 0 reseal checksums, bit 1 leave `bloom` out,
 *               bits 2..5 pick the decoded columns (core parts), bit 6
 *               "raw units" (core parts, below), bit 7 the two-pass read of
 *               fuzz_part_reader
 *   bytes 1..6  u16 lengths of footer, index and bloom
 *   then        footer, index, bloom bytes (cut short if the input is),
 *               and everything left is `data`; the part file is data,
 *               index, bloom (unless left out), footer, back to back
 *
 * In raw-units mode `data` is a list of block specs, each a 152-byte block
 * header followed by u16 length + unit A bytes and u16 length + unit B
 * bytes, all uncompressed. The harness compresses the units, fills the
 * header's sizes, rebuilds index, Bloom filter and footer totals from the
 * headers and reseals, so the fuzzer's bytes reach the column decoders.
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

/* malloc, calloc and realloc for the harness's own buffers: a harness
 * that cannot have its memory aborts (libFuzzer reports it as a crash
 * with the stack) rather than writing through NULL. */
static inline void *
fz_alloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		abort();
	return p;
}

static inline void *
fz_zalloc(size_t n)
{
	void *p = calloc(1, n ? n : 1);
	if (!p)
		abort();
	return p;
}

static inline void *
fz_realloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		abort();
	return q;
}

typedef struct fz_files {
	uint8_t *f[4]; /* footer, index, bloom, data */
	size_t n[4];
	bool bloom_absent;
	unsigned mode;
} fz_files;

/* Recompute the checksums of blocks/chunks, index, bloom and footer, and
 * the sizes and offsets the footer records, so that only the format
 * checks can reject. */
static inline void
fz_reseal(fz_files *f)
{
	uint8_t *m = f->f[0], *x = f->f[1], *b = f->f[2], *d = f->f[3];
	size_t mn = f->n[0], xn = f->n[1], bn = f->n[2], dn = f->n[3];
	bool core = mn < 16 || ms_le32(m + 12) == MS_KIND_CORE;
	size_t off = 0;
	XXH64_state_t chain; /* core: footer.checksum over header checksums */
	XXH64_reset(&chain, 0);
	while (core && dn - off >= MS__BLOCK_HDR) {
		uint8_t *h = d + off;
		uint64_t sa = ms_le32(h + 12), sb = ms_le32(h + 20);
		if (MS__BLOCK_HDR + sa + sb > dn - off)
			break;
		ms_put_le64(h + 64, XXH3_64bits(h + MS__BLOCK_HDR, sa));
		ms_put_le64(h + 72, XXH3_64bits(h + MS__BLOCK_HDR + sa, sb));
		ms_put_le64(h + 144, XXH3_64bits(h, 144));
		XXH64_update(&chain, h + 144, 8);
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
	if (mn == MS__FOOTER_SIZE) {
		uint64_t bb = f->bloom_absent ? 0 : bn;
		ms_put_le64(m + 88,
		            core ? XXH64_digest(&chain) : XXH64(d, dn, 0));
		ms_put_le64(m + 96, dn);
		ms_put_le64(m + 104, dn);
		ms_put_le64(m + 112, xn);
		ms_put_le64(m + 120, dn + xn);
		ms_put_le64(m + 128, bb);
		ms_put_le64(m + 136, dn + xn + bb);
		ms_put_le64(m + 24, dn + xn + bb + MS__FOOTER_SIZE);
		ms_put_le64(m + 152, XXH64(m, 152, 0));
	}
}

static inline uint32_t
fz_le16(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8;
}

/* Raw-units mode: rebuild data, index, bloom and footer from block specs. */
static inline void
fz_build_raw(fz_files *f)
{
	const uint8_t *in = f->f[3];
	size_t n = f->n[3], pos = 0;
	size_t cap = n * 2 + 1024, dl = 0;
	uint8_t *d = fz_alloc(cap);
	size_t xcap = MS__INDEX_HDR + 8 + 16 * (n / MS__BLOCK_HDR + 1), xl;
	uint8_t *x = fz_zalloc(xcap);
	uint64_t blocks = 0, rows = 0, traces = 0, span = 0;
	int64_t mn = 0, mx = 0;
	uint8_t last[MS_TRACE_ID_MAX];
	uint32_t last_len = 0;
	uint64_t(*hashes)[2] =
	        fz_alloc(sizeof(*hashes) * (n / MS__BLOCK_HDR + 1));
	xl = MS__INDEX_HDR;
	while (n - pos >= MS__BLOCK_HDR + 4) {
		const uint8_t *h = in + pos;
		size_t p2 = pos + MS__BLOCK_HDR;
		size_t al = fz_le16(in + p2);
		if (n - p2 - 2 < al)
			break;
		const uint8_t *a = in + p2 + 2;
		p2 += 2 + al;
		if (n - p2 < 2)
			break;
		size_t bl = fz_le16(in + p2);
		if (n - p2 - 2 < bl)
			break;
		const uint8_t *b = in + p2 + 2;
		pos = p2 + 2 + bl;
		size_t need = MS__BLOCK_HDR + ZSTD_compressBound(al) +
		              ZSTD_compressBound(bl);
		if (cap - dl < need) {
			cap = (cap + need) * 2;
			d = fz_realloc(d, cap);
		}
		uint8_t *o = d + dl;
		memcpy(o, h, MS__BLOCK_HDR);
		size_t sa = al ? ZSTD_compress(o + MS__BLOCK_HDR,
		                               ZSTD_compressBound(al), a, al, 1)
		               : 0;
		size_t sb = bl ? ZSTD_compress(o + MS__BLOCK_HDR + sa,
		                               ZSTD_compressBound(bl), b, bl, 1)
		               : 0;
		if (ZSTD_isError(sa) || ZSTD_isError(sb))
			break;
		ms_put_le32(o + 12, (uint32_t)sa);
		ms_put_le32(o + 16, (uint32_t)al);
		ms_put_le32(o + 20, (uint32_t)sb);
		ms_put_le32(o + 24, (uint32_t)bl);
		ms_put_le64(o + 56, al + bl);
		size_t len = MS__BLOCK_HDR + sa + sb;
		uint32_t nr = ms_le32(o + 8), tl = o[4];
		int64_t bmn = (int64_t)ms_le64(o + 32),
		        bmx = (int64_t)ms_le64(o + 40);
		ms_put_le64(x + xl, dl);
		ms_put_le32(x + xl + 8, (uint32_t)len);
		ms_put_le32(x + xl + 12, nr);
		xl += 16;
		if (tl > MS_TRACE_ID_MAX)
			tl = MS_TRACE_ID_MAX;
		if (!blocks || ms_trace_id_cmp(o + 80, tl, last, last_len)) {
			ms__bloom_hash(o + 80, tl, hashes[traces]);
			traces++;
			memcpy(last, o + 80, tl);
			last_len = tl;
		}
		mn = !blocks || bmn < mn ? bmn : mn;
		mx = !blocks || bmx > mx ? bmx : mx;
		blocks++;
		rows += nr;
		span += al + bl;
		dl += len;
	}
	memcpy(x, MS__INDEX_MAGIC, 8);
	ms_put_le32(x + 8, MS_PART_FORMAT_VERSION);
	ms_put_le32(x + 12, MS_KIND_CORE);
	ms_put_le64(x + 16, blocks);
	ms_put_le64(x + 24, 16);
	xl += 8;
	uint64_t nbits = ms__bloom_nbits(traces);
	size_t bn = MS__BLOOM_HDR + nbits / 8 + 8;
	uint8_t *bf = fz_zalloc(bn);
	memcpy(bf, MS__BLOOM_MAGIC, 8);
	ms_put_le32(bf + 8, MS_PART_FORMAT_VERSION);
	ms_put_le32(bf + 12, MS_BLOOM_K);
	ms_put_le64(bf + 16, nbits);
	ms_put_le64(bf + 24, traces);
	for (uint64_t i = 0; i < traces; i++)
		ms__bloom_add(bf + MS__BLOOM_HDR, nbits, hashes[i]);
	free(hashes);
	if (f->n[0] == MS__FOOTER_SIZE) {
		uint8_t *m = f->f[0];
		ms_put_le32(m + 12, MS_KIND_CORE);
		ms_put_le64(m + 32, span);
		ms_put_le64(m + 40, rows);
		ms_put_le64(m + 48, blocks);
		ms_put_le64(m + 56, traces);
		ms_put_le64(m + 64, (uint64_t)mn);
		ms_put_le64(m + 72, (uint64_t)mx);
	}
	free(f->f[1]);
	free(f->f[2]);
	free(f->f[3]);
	f->f[1] = x;
	f->n[1] = xl;
	f->f[2] = bf;
	f->n[2] = bn;
	f->f[3] = d;
	f->n[3] = dl;
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
		f->f[i] = fz_alloc(n);
		memcpy(f->f[i], p, n);
		f->n[i] = n;
		p += n;
		left -= n;
	}
	if (f->mode & 0x40) {
		f->bloom_absent = false;
		fz_build_raw(f);
		fz_reseal(f);
	} else if (f->mode & 1) {
		fz_reseal(f);
	}
	return true;
}

static inline void
fz_free(fz_files *f)
{
	for (int i = 0; i < 4; i++)
		free(f->f[i]);
}

/* A per-process part file under /dev/shm (or /tmp). */
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

/* Write the part file: data, index, bloom (unless left out), footer. */
static inline void
fz_write(const fz_files *f, const char *path)
{
	static const int order[4] = { 3, 1, 2, 0 };
	unlink(path);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		abort();
	for (int j = 0; j < 4; j++) {
		int i = order[j];
		if (i == 2 && f->bloom_absent)
			continue;
		if (f->n[i] && write(fd, f->f[i], f->n[i]) != (ssize_t)f->n[i])
			abort();
	}
	close(fd);
}

static inline void
fz_clean(const char *path)
{
	unlink(path);
}

/* What a harness checks on the part its input opened as (the part stays
 * open; check does not close it): 0 or a negative error, which must come
 * with a message in eb. */
typedef int (*fz_part_fn)(ms_part *p, const fz_files *f, const char *dir,
                          ms_errbuf *eb);

/* A part harness's body: the input as a part file (fz_split,
 * fz_write), opened, check run on it when it opens; aborts on an error
 * without a message. Returns 0, as libFuzzer wants. */
static inline int
fz_run_part(const uint8_t *data, size_t size, fz_part_fn check)
{
	fz_files f;
	if (!fz_split(data, size, &f))
		return 0;
	const char *dir = fz_dir();
	fz_write(&f, dir);
	ms_errbuf eb = { { 0 } };
	ms_part *p;
	int rc = ms_part_open(&p, dir, NULL, &eb);
	if (rc == 0) {
		rc = check(p, &f, dir, &eb);
		ms_part_close(p);
	}
	if (rc < 0 && eb.msg[0] == 0)
		abort(); /* every error names what was wrong */
	fz_clean(dir);
	fz_free(&f);
	return 0;
}

/* Split the part file at path into its sections by its footer (which
 * must be intact): false when the file is missing, its size cannot be
 * told, it does not fit in memory, or the sizes the footer gives do not
 * fit it. */
static inline bool
fz_read(const char *path, fz_files *f)
{
	memset(f, 0, sizeof(*f));
	FILE *fp = fopen(path, "rb");
	if (!fp)
		return false;
	long end = fseek(fp, 0, SEEK_END) == 0 ? ftell(fp) : -1;
	uint8_t *all = NULL;
	if (end < (long)MS__FOOTER_SIZE || fseek(fp, 0, SEEK_SET) != 0 ||
	    !(all = malloc((size_t)end))) {
		fclose(fp);
		return false;
	}
	size_t size = (size_t)end;
	bool ok = fread(all, 1, size, fp) == size;
	fclose(fp);
	const uint8_t *ft = all + size - MS__FOOTER_SIZE;
	uint64_t dn = ok ? ms_le64(ft + 96) : 0, xn = ok ? ms_le64(ft + 112) : 0,
	         bn = ok ? ms_le64(ft + 128) : 0;
	ok = ok && dn <= size && xn <= size && bn <= size &&
	     dn + xn + bn + MS__FOOTER_SIZE == size;
	if (!ok) {
		free(all);
		return false;
	}
	const uint8_t *part[4] = { ft, all + dn, all + dn + xn, all };
	size_t n[4] = { MS__FOOTER_SIZE, (size_t)xn, (size_t)bn, (size_t)dn };
	for (int i = 0; i < 4 && ok; i++) {
		f->f[i] = malloc(n[i] ? n[i] : 1);
		ok = f->f[i] != NULL;
		if (ok && n[i])
			memcpy(f->f[i], part[i], n[i]);
		f->n[i] = ok ? n[i] : 0;
	}
	free(all);
	if (!ok) {
		fz_free(f);
		memset(f, 0, sizeof(*f));
		return false;
	}
	f->bloom_absent = bn == 0;
	return true;
}

/* Read a written part file back into the input layout (seeds): its
 * footer says where the sections lie. */
static inline size_t
fz_pack(const char *path, uint8_t mode, uint8_t **out)
{
	fz_files f;
	if (!fz_read(path, &f))
		abort();
	size_t total = 7;
	for (int i = 0; i < 4; i++)
		total += f.n[i];
	uint8_t *o = fz_alloc(total);
	o[0] = mode;
	for (int i = 0; i < 3; i++) {
		o[1 + 2 * i] = (uint8_t)f.n[i];
		o[2 + 2 * i] = (uint8_t)(f.n[i] >> 8);
	}
	size_t k = 7;
	for (int i = 0; i < 4; i++) {
		if (f.n[i])
			memcpy(o + k, f.f[i], f.n[i]);
		k += f.n[i];
	}
	fz_free(&f);
	*out = o;
	return total;
}

#endif
