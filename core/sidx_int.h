/*
 * sidx_int.h - private to the index part code: reading an index part's
 * rows with their tag values as stored, for a reader that only hashes or
 * copies them (the ledger of an index part, in ledger_part.c; a merge, in
 * sidx.c itself). Shared by sidx.c, ledger.c and ledger_part.c.
 */
#ifndef MS_SIDX_INT_H
#define MS_SIDX_INT_H

#include "ms_ledger.h"
#include "ms_sidx.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* One uvarint of a column the iterator has already bounded (at most 10
 * bytes, inside its column), read as ms_rd_uvarint reads it. */
static inline uint64_t
ms__get_uv(const uint8_t **pp)
{
	const uint8_t *p = *pp;
	uint64_t v = 0;
	for (unsigned shift = 0;; shift += 7) {
		uint8_t b = *p++;
		v |= (uint64_t)(b & 0x7f) << (shift & 63);
		if (!(b & 0x80))
			break;
	}
	*pp = p;
	return v;
}

/* Bytes past its end that a short value may be copied with: a reader
 * that copies values of at most this many bytes as one fixed-size block
 * needs this much room past its destination, and this many readable bytes
 * past each value (an iterator's payload has MS_TRACE_ID_MAX). */
#define MS__COPY_SLACK 64u
_Static_assert(MS__COPY_SLACK <= MS_TRACE_ID_MAX, "payload room for copies");

/* n bytes from src to p, a short value as one fixed-size block
 * (MS__COPY_SLACK bytes); returns p + n. */
static inline uint8_t *
ms__copy_short(uint8_t *p, const uint8_t *src, size_t n)
{
	if (n <= MS__COPY_SLACK)
		memcpy(p, src, MS__COPY_SLACK);
	else
		memcpy(p, src, n);
	return p + n;
}

/* Call before the first ms_sidx_iter_next: from then on, a row of a
 * chunk whose tag lists are all canonically encoded (core/FORMAT.md,
 * "Index part") carries no strings (instance, endpoint and tags NULL,
 * ntags 0); ms__sidx_row_enc gives its tag values as stored instead. */
void ms__sidx_iter_raw(ms_sidx_iter *it);

/* The instance (v[0]), endpoint (v[1]) and encoded tag list (v[2]: a
 * uvarint count, then per tag a uvarint length and its bytes, every
 * varint in its shortest form, checked as the iterator checks them) of
 * row r, the last row `it` returned, with their lengths; valid until the
 * next call on `it`, with at least MS_TRACE_ID_MAX bytes readable past
 * each value (they lie in the chunk's payload, which has that much room
 * past its end). false: r carries its strings (the chunk was not
 * canonical, or the iterator is not raw), read them instead. */
bool ms__sidx_row_enc(const ms_sidx_iter *it, const ms_sidx_row *r,
                      const uint8_t *v[3], uint32_t len[3]);

/* ms_ledger_add_index_row for a row whose instance, endpoint and tag list
 * are given as ms__sidx_row_enc gives them: the same hash. */
void ms__ledger_add_index_enc(ms_ledger *l, const ms_sidx_row *r,
                              const uint8_t *const v[3],
                              const uint32_t len[3]);

#endif
