/*
 * bench_pieces.h - one piece of an index chunk's payload (core/FORMAT.md,
 * "Index part": u8 codec, uvarint size, that many bytes), for the
 * benchmarks that take index parts apart.
 */
#ifndef MS_BENCH_PIECES_H
#define MS_BENCH_PIECES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The piece at z[*o] of a payload of `stored` bytes: its codec and size,
 * *o moved to its bytes. False when it does not fit in the payload. */
static inline bool
bench_piece(const uint8_t *z, size_t stored, size_t *o, uint8_t *codec,
            size_t *size)
{
	if (*o >= stored)
		return false;
	*codec = z[(*o)++];
	*size = 0;
	for (unsigned sh = 0; *o < stored && sh < 64; sh += 7) {
		*size |= (size_t)(z[*o] & 0x7f) << sh;
		if (!(z[(*o)++] & 0x80))
			break;
	}
	return *size <= stored - *o;
}

#endif
