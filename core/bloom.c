/*
 * bloom.c - the Bloom filter over a core part's trace IDs.
 *
 * k = MS_BLOOM_K probes into MS_BLOOM_BITS_PER_ITEM bits per trace ID
 * (rounded up to a multiple of 64, at least 64). The probes come from one
 * XXH3-128 of the trace ID by double hashing (Kirsch-Mitzenmacher):
 * h1 = low 64 bits, h2 = high 64 bits | 1, probe i = (h1 + i * h2) mod nbits.
 * Bit b lives in byte b / 8 at bit b % 8. With 16 bits per item and k = 10
 * the expected false-positive rate is (1 - e^(-10/16))^10, about 0.046%.
 */
#define XXH_INLINE_ALL
#include "part_int.h"

#include <xxhash.h>

uint64_t
ms__bloom_nbits(uint64_t items)
{
	uint64_t bits = items * MS_BLOOM_BITS_PER_ITEM;
	if (items > UINT64_MAX / 2 / MS_BLOOM_BITS_PER_ITEM)
		return 0; /* absurd: callers reject 0 */
	bits = (bits + 63) / 64 * 64;
	return bits < 64 ? 64 : bits;
}

uint64_t
ms__bloom_section_bytes(uint64_t items)
{
	return MS__BLOOM_HDR + ms__bloom_nbits(items) / 8 + 8;
}

void
ms__bloom_hash(const uint8_t *tid, uint32_t len, uint64_t h[2])
{
	XXH128_hash_t x = XXH3_128bits(tid, len);
	h[0] = x.low64;
	h[1] = x.high64 | 1;
}

void
ms__bloom_add(uint8_t *bits, uint64_t nbits, const uint64_t h[2])
{
	uint64_t x = h[0];
	for (unsigned i = 0; i < MS_BLOOM_K; i++) {
		uint64_t b = x % nbits;
		bits[b >> 3] |= (uint8_t)(1u << (b & 7));
		x += h[1];
	}
}

bool
ms__bloom_test(const uint8_t *bits, uint64_t nbits, const uint64_t h[2])
{
	uint64_t x = h[0];
	for (unsigned i = 0; i < MS_BLOOM_K; i++) {
		uint64_t b = x % nbits;
		if (!(bits[b >> 3] & (1u << (b & 7))))
			return false;
		x += h[1];
	}
	return true;
}
