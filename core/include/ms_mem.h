/*
 * ms_mem.h - the core allocator family, checked size arithmetic, a
 * growable byte buffer and an arena.
 *
 * Every allocation made by libmscore goes through an ms_mem. An ms_mem counts
 * bytes and allocations, tracks live and peak live bytes, and can be told to
 * fail the Nth allocation (for tests). Counters are atomic: one ms_mem may be
 * shared by threads. A child ms_mem (ms_mem_init with a parent) counts for
 * itself and forwards every event to its parent, so a merge can have its own
 * figures while the engine keeps the totals. There is no global allocator:
 * a NULL ms_mem pointer means "plain malloc, counted nowhere".
 *
 * Design:
 *  1. live = allocated bytes - freed bytes, at every moment (>= 0).
 *  2. peak_live >= live, monotonic until ms_mem_reset_peak.
 *  3. A failed allocation changes no counter except `failed`.
 *  4. ms_mem_free(m, p, size) must be given the size passed at allocation
 *     (sized deallocation, as in the C23 free_sized): callers know it.
 */
#ifndef MS_MEM_H
#define MS_MEM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ms_mem ms_mem;

/* A snapshot of an ms_mem's counters. */
typedef struct ms_mem_stats {
	uint64_t bytes;    /* bytes allocated (reallocs count their growth) */
	uint64_t count;    /* number of successful allocations */
	uint64_t frees;    /* number of frees */
	int64_t live;      /* bytes currently allocated */
	int64_t peak_live; /* highest live seen */
	uint64_t failed;   /* allocations refused (real or injected) */
} ms_mem_stats;

/* Embedded by its owner; initialise with ms_mem_init. */
struct ms_mem {
	ms_mem *parent; /* borrowed; may be NULL */
	_Atomic uint64_t bytes;
	_Atomic uint64_t count;
	_Atomic uint64_t frees;
	_Atomic int64_t live;
	_Atomic int64_t peak_live;
	_Atomic uint64_t failed;
	/* Fail injection: when fail_at > 0, the allocation whose ordinal
	 * (1-based, counted in `attempts`) equals fail_at fails; with
	 * fail_every set, every later one fails too. */
	_Atomic uint64_t attempts;
	_Atomic uint64_t fail_at;
	bool fail_every;
};

/* Initialise m with zero counters; parent (borrowed) may be NULL. */
void ms_mem_init(ms_mem *m, ms_mem *parent);
/* Take a consistent-enough snapshot of m's counters (m may be NULL). */
void ms_mem_stats_get(const ms_mem *m, ms_mem_stats *out);
/* Set peak_live back to the current live value. */
void ms_mem_reset_peak(ms_mem *m);
/* Fail allocation number n (1-based) from now; 0 disables. With `every`,
 * allocation n and all after it fail. Applies to m only, not parents. */
void ms_mem_fail_at(ms_mem *m, uint64_t n, bool every);

/* malloc/calloc/realloc/free through m (m may be NULL). Return NULL on
 * failure; ms_mem_realloc leaves p untouched on failure. Sizes of 0 return
 * a unique non-NULL pointer (allocated as 1 byte). */
void *ms_mem_alloc(ms_mem *m, size_t size);
void *ms_mem_calloc(ms_mem *m, size_t n, size_t size);
void *ms_mem_realloc(ms_mem *m, void *p, size_t old_size, size_t new_size);
void ms_mem_free(ms_mem *m, void *p, size_t size);
/* Copy a string/bytes into memory from m; NULL on failure. */
char *ms_mem_strdup(ms_mem *m, const char *s);
void *ms_mem_dup(ms_mem *m, const void *p, size_t size);

/* Overflow-checked size arithmetic: return false (and leave *out alone)
 * if the result does not fit. Use these before sizing any allocation from a
 * length read from disk or from a plugin. */
static inline bool
ms_add_ok(size_t a, size_t b, size_t *out)
{
	if (a > SIZE_MAX - b)
		return false;
	*out = a + b;
	return true;
}

static inline bool
ms_mul_ok(size_t a, size_t b, size_t *out)
{
	if (a != 0 && b > SIZE_MAX / a)
		return false;
	*out = a * b;
	return true;
}

/*
 * ms_buf - a growable byte buffer (git's strbuf, curl's dynbuf).
 * Invariants: len <= cap; data is NULL iff cap == 0; len <= max always
 * (appends that would pass max fail with MS_ERR_RANGE and change nothing).
 * The buffer owns data; memory comes from mem (borrowed, may be NULL).
 */
typedef struct ms_buf {
	uint8_t *data;
	size_t len;
	size_t cap;
	size_t max; /* 0 means SIZE_MAX / 2 */
	ms_mem *mem;
} ms_buf;

void ms_buf_init(ms_buf *b, ms_mem *mem, size_t max);
void ms_buf_release(ms_buf *b);
/* Make room for at least `extra` more bytes. 0 or MS_ERR_NOMEM/RANGE. */
int ms_buf_reserve(ms_buf *b, size_t extra);
/* Room for n bytes in total, exactly (ms_buf_reserve rounds up to a power
 * of two, which for a vector sized from a known count is waste). 0 or
 * MS_ERR_NOMEM/RANGE. */
int ms_buf_presize(ms_buf *b, size_t n);
int ms_buf_append(ms_buf *b, const void *p, size_t n);
int ms_buf_append_u8(ms_buf *b, uint8_t v);
int ms_buf_append_le32(ms_buf *b, uint32_t v);
int ms_buf_append_le64(ms_buf *b, uint64_t v);
/* LEB128 unsigned varint. */
int ms_buf_append_uvarint(ms_buf *b, uint64_t v);
/* Zigzag signed varint. */
int ms_buf_append_svarint(ms_buf *b, int64_t v);
static inline void
ms_buf_reset(ms_buf *b)
{
	b->len = 0;
}

/*
 * ms_arena - bump allocation in chunks, freed in one call (git's mem-pool):
 * per-trace, per-batch and per-batch-of-rows memory.
 * Invariants:
 *  1. A pointer handed out stays valid and unmoved until the reset,
 *     trim or release that frees its chunk.
 *  2. Reset empties the arena; it keeps at most `keep` chunks of the
 *     standard size as spares for the next uses and frees the others, so
 *     what an idle arena holds is bounded by keep x chunk.
 *  3. cold_bytes counts chunk capacity newly allocated, reused_bytes the
 *     capacity taken back from spares (both since init, never reset).
 *  4. used_bytes counts what was handed out and what was charged
 *     (ms_arena_charge) as if it had been handed out too: a second
 *     cursor (vused in a chunk of vsize bytes) places every request and
 *     charge as the chunks would have, padding included, so a caller
 *     that charges bytes instead of copying them in is counted the same,
 *     byte for byte. Without charges it is the current chunk's cursor.
 * Memory comes from mem (borrowed; NULL: plain malloc, counted nowhere).
 */
typedef struct ms_arena_chunk ms_arena_chunk;
typedef struct ms_arena {
	ms_mem *mem;
	size_t chunk;          /* standard chunk size */
	size_t keep;           /* spares reset keeps, at most */
	ms_arena_chunk *head;  /* current chunk; older ones follow */
	ms_arena_chunk *spare; /* emptied standard chunks */
	size_t nspare;
	uint64_t cap_bytes;    /* capacity of the chunks in use */
	uint64_t used_bytes;   /* bytes handed out since init, padding
	                        * included (a caller's charge by difference) */
	uint64_t cold_bytes;   /* 3. */
	uint64_t reused_bytes; /* 3. */
	size_t vused, vsize;   /* 4.; vsize 0: no chunk since the reset */
} ms_arena;

/* Where the arena stood: ms_arena_trim frees what came before it. */
typedef struct ms_arena_mark {
	ms_arena_chunk *chunk;
} ms_arena_mark;

/* An empty arena of `chunk`-byte chunks (0: 64 KiB) keeping `keep`
 * spares across resets (SIZE_MAX: every standard chunk). */
void ms_arena_init(ms_arena *a, ms_mem *mem, size_t chunk, size_t keep);
/* n bytes aligned to align (a power of two, at most 16); a request over
 * the chunk size gets a chunk of its own. NULL when out of memory or on
 * overflow (the arena is unchanged). */
void *ms_arena_alloc(ms_arena *a, size_t n, size_t align);
/* Count n bytes aligned to align in used_bytes as ms_arena_alloc would,
 * without allocating them (4.): for a caller that references bytes
 * whose copy its charge by difference models. */
void ms_arena_charge(ms_arena *a, size_t n, size_t align);
/* Copies; NULL for a NULL string, or when out of memory. */
char *ms_arena_strdup(ms_arena *a, const char *s);
void *ms_arena_dup(ms_arena *a, const void *p, size_t n, size_t align);
static inline ms_arena_mark
ms_arena_mark_get(const ms_arena *a)
{
	ms_arena_mark m = { a->head };
	return m;
}
/* Free the chunks that hold only bytes handed out before mark (the chunk
 * current at the mark stays, whole): for a caller whose older objects die
 * while the ones since the mark live on. */
void ms_arena_trim(ms_arena *a, ms_arena_mark mark);
/* Empty the arena (2.). */
void ms_arena_reset(ms_arena *a);
/* Free every chunk, spares too; the arena may be used again. */
void ms_arena_release(ms_arena *a);

/* Little-endian loads/stores, independent of host order. */
static inline uint32_t
ms_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static inline uint64_t
ms_le64(const uint8_t *p)
{
	return (uint64_t)ms_le32(p) | (uint64_t)ms_le32(p + 4) << 32;
}

static inline void
ms_put_le32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static inline void
ms_put_le64(uint8_t *p, uint64_t v)
{
	ms_put_le32(p, (uint32_t)v);
	ms_put_le32(p + 4, (uint32_t)(v >> 32));
}

/* v as a LEB128 uvarint at p (1 to 10 bytes); returns the byte after it. */
static inline uint8_t *
ms_put_uvarint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

/* The bytes ms_put_uvarint writes for v. */
static inline size_t
ms_uvarint_len(uint64_t v)
{
	size_t n = 1;
	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/*
 * Bounded reader over bytes from disk: every get checks the remaining length
 * and sets `bad` instead of reading past the end. Check `bad` once at the
 * end of a parse.
 */
typedef struct ms_rd {
	const uint8_t *p;
	size_t left;
	bool bad;
} ms_rd;

static inline void
ms_rd_init(ms_rd *r, const void *p, size_t n)
{
	r->p = (const uint8_t *)p;
	r->left = n;
	r->bad = false;
}

uint8_t ms_rd_u8(ms_rd *r);
uint32_t ms_rd_le32(ms_rd *r);
uint64_t ms_rd_le64(ms_rd *r);
/* The bounds-checked varint decoder (at most 10 bytes). */
uint64_t ms__rd_uvarint_slow(ms_rd *r);

/* Pack the low 7 bits of each byte of x (little-endian groups) into one
 * value: 8 groups of 7 bits become 56 bits. */
static inline uint64_t
ms__pack7(uint64_t x)
{
	x &= 0x7f7f7f7f7f7f7f7full;
	x = ((x & 0x7f007f007f007f00ull) >> 1) | (x & 0x007f007f007f007full);
	x = ((x & 0x3fff00003fff0000ull) >> 2) | (x & 0x00003fff00003fffull);
	return ((x & 0x0fffffff00000000ull) >> 4) | (x & 0x000000000fffffffull);
}

/* A uvarint. With 10 or more bytes left (nearly always: decoders read
 * columns of many values) the first 8 bytes are taken as one word, the
 * terminator found by its clear high bit and the 7-bit groups packed
 * without a loop; else the checked loop. The same values, bytes consumed
 * and errors either way (at most 10 bytes; a 10th byte's bits above the
 * 64th are dropped). */
static inline uint64_t
ms_rd_uvarint(ms_rd *r)
{
	if (r->bad || r->left < 10)
		return ms__rd_uvarint_slow(r);
	const uint8_t *p = r->p;
	uint64_t w = ms_le64(p);
	uint64_t stop = ~w & 0x8080808080808080ull;
	if (stop) {
		unsigned bits = (unsigned)__builtin_ctzll(stop) + 1;
		if (bits < 64)
			w &= (1ull << bits) - 1;
		r->p += bits / 8;
		r->left -= bits / 8;
		return ms__pack7(w);
	}
	uint64_t v = ms__pack7(w) | (uint64_t)(p[8] & 0x7f) << 56;
	if (p[8] < 0x80) {
		r->p += 9;
		r->left -= 9;
		return v;
	}
	v |= (uint64_t)(p[9] & 0x7f) << 63;
	r->p += 10;
	r->left -= 10;
	if (p[9] < 0x80)
		return v;
	r->bad = true;
	return 0;
}

static inline int64_t
ms_rd_svarint(ms_rd *r)
{
	uint64_t z = ms_rd_uvarint(r);
	return (int64_t)(z >> 1) ^ -(int64_t)(z & 1);
}
/* Returns a pointer to the next n bytes and skips them, or NULL (bad). */
const uint8_t *ms_rd_bytes(ms_rd *r, size_t n);

#endif
