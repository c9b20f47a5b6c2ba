/*
 * fuzz_part_dir.c - libFuzzer harness for the part writer's packed block
 * directory (core/part_writer.c, design 7: ms__dir_put / ms__dir_get).
 * The input is read as a stream of records, first whole, then cut into
 * pieces whose sizes come from its own bytes, carrying a record cut by
 * the end of a piece into the next (as the writer reads its spilled
 * directory back).
 *
 * What must hold: a record is never read past the bytes given; reading
 * in pieces gives the same records and stops at the same byte as reading
 * whole; every record read is at most MS__DIR_REC_MAX bytes and packs
 * back (ms__dir_put) to bytes that read as the same values; a prefix of
 * a record is "not yet" (0), never a record or a refusal.
 */
#include "part_int.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAXREC 4096

typedef struct recs {
	uint32_t v[MAXREC][2];
	size_t n;
	size_t used; /* bytes read */
	bool bad;
} recs;

/* Read records from p[0..n) into r until one is cut or refused; the
 * bytes read. */
static size_t
read_recs(recs *r, const uint8_t *p, size_t n)
{
	size_t at = 0;
	while (r->n < MAXREC && !r->bad) {
		/* Only n - at bytes exist: a copy without slack, so ASan
		 * sees any read past them. */
		size_t left = n - at;
		uint8_t *q = malloc(left ? left : 1);
		if (!q)
			abort();
		memcpy(q, p + at, left);
		uint32_t a, b;
		int k = ms__dir_get(q, left, &a, &b);
		if (k > 0) {
			if ((size_t)k > MS__DIR_REC_MAX || (size_t)k > left)
				abort();
			for (int j = 0; j < k; j++)
				if (ms__dir_get(q, (size_t)j, &a, &b) != 0)
					abort();
			k = ms__dir_get(q, left, &a, &b);
		}
		free(q);
		if (k < 0) {
			r->bad = true;
			break;
		}
		if (k == 0)
			break;
		r->v[r->n][0] = a;
		r->v[r->n][1] = b;
		r->n++;
		at += (size_t)k;
	}
	return at;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 16384)
		return 0;
	static recs whole, cut;
	memset(&whole, 0, sizeof(whole));
	memset(&cut, 0, sizeof(cut));
	whole.used = read_recs(&whole, data, size);

	/* In pieces of 1..32 bytes (from the input's own bytes), a record
	 * cut by a piece's end carried into the next. */
	uint8_t buf[32 + MS__DIR_REC_MAX];
	size_t carry = 0, off = 0, i = 0;
	while (off < size && !cut.bad && cut.n < MAXREC) {
		size_t piece = (size_t)(data[i++ % size] % 32) + 1;
		if (piece > size - off)
			piece = size - off;
		memcpy(buf + carry, data + off, piece);
		off += piece;
		size_t got = read_recs(&cut, buf, carry + piece);
		cut.used += got;
		carry = carry + piece - got;
		if (!cut.bad && carry >= MS__DIR_REC_MAX)
			abort(); /* a whole record was left unread */
		memmove(buf, buf + got, carry);
	}
	size_t n = whole.n < cut.n ? whole.n : cut.n;
	for (size_t k = 0; k < n; k++)
		if (whole.v[k][0] != cut.v[k][0] ||
		    whole.v[k][1] != cut.v[k][1])
			abort();
	if (whole.n < MAXREC && cut.n < MAXREC &&
	    (whole.n != cut.n || whole.bad != cut.bad ||
	     whole.used != cut.used))
		abort();

	/* Packed again: the same values, from at most the bytes read. */
	for (size_t k = 0; k < whole.n; k++) {
		uint8_t rec[MS__DIR_REC_MAX];
		size_t m = ms__dir_put(rec, whole.v[k][0], whole.v[k][1]);
		uint32_t a, b;
		if (m > MS__DIR_REC_MAX ||
		    ms__dir_get(rec, m, &a, &b) != (int)m ||
		    a != whole.v[k][0] || b != whole.v[k][1])
			abort();
	}
	return 0;
}
