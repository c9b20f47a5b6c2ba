/*
 * ms_ledger.h - logical ledgers: order-independent checksums of a set of
 * rows, for core rows and for each secondary index.
 *
 * A ledger is a row count plus the 128-bit sum (mod 2^128) of XXH3-128 over
 * each row's canonical encoding (core/FORMAT.md, section "Ledger"). Because
 * addition commutes, the ledger of a set does not depend on the order rows
 * are seen in, nor on how they are grouped into blocks and parts: a lossless
 * merge must leave the ledger of the inventory unchanged, and a dropping
 * merge must leave it equal to (input ledger - ledger of the dropped rows).
 *
 * Ownership: ledgers are plain values. Functions that read parts borrow
 * them and allocate only through the ms_mem they are given.
 * Threads: a ledger is a value; the per-part and per-view functions may run
 * concurrently on the same parts.
 */
#ifndef MS_LEDGER_H
#define MS_LEDGER_H

#include "ms_err.h"
#include "ms_mem.h"
#include "ms_part.h"
#include "ms_row.h"
#include "ms_sidx.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ms_ledger {
	uint64_t rows;
	uint64_t sum_lo; /* low 64 bits of the 128-bit sum */
	uint64_t sum_hi; /* high 64 bits */
} ms_ledger;

/* One ledger per part kind: core, latency, start_time (enum ms_part_kind). */
typedef struct ms_ledger_set {
	ms_ledger kind[MS_KIND_COUNT];
} ms_ledger_set;

/* "<rows>:<32 lowercase hex digits of the sum, high half first>" + NUL. */
#define MS_LEDGER_STR_MAX 64

/* The empty ledger (all zero; a zeroed struct is the same). */
void ms_ledger_init(ms_ledger *l);
void ms_ledger_set_init(ms_ledger_set *s);

/* Add one core row. */
void ms_ledger_add_row(ms_ledger *l, const ms_row *r);
/* Add one index row: series, key, value (0x01||traceID as stored in the
 * index) and its tags (other, instance, endpoint, tag list). */
void ms_ledger_add_index_row(ms_ledger *l, const ms_sidx_row *r);
/* Add core row r to s's core ledger and its index rows (ms_sidx_row_of)
 * to the latency and start_time ledgers: what writing r into a part and
 * its index parts contributes. For oracles of dropped rows. */
void ms_ledger_set_add_row(ms_ledger_set *s, const ms_row *r);
/* The XXH3-128 of one core row's canonical encoding (what _add_row adds). */
void ms_ledger_row_hash(const ms_row *r, uint64_t *lo, uint64_t *hi);

/* acc += b. */
void ms_ledger_add(ms_ledger *acc, const ms_ledger *b);
/* acc -= b. MS_ERR_RANGE (acc unchanged) if b has more rows than acc. */
int ms_ledger_sub(ms_ledger *acc, const ms_ledger *b);
bool ms_ledger_equal(const ms_ledger *a, const ms_ledger *b);

void ms_ledger_set_add(ms_ledger_set *acc, const ms_ledger_set *b);
int ms_ledger_set_sub(ms_ledger_set *acc, const ms_ledger_set *b);
bool ms_ledger_set_equal(const ms_ledger_set *a, const ms_ledger_set *b);

/* Format as "<rows>:<32 hex>"; out has MS_LEDGER_STR_MAX bytes. Returns
 * out. */
char *ms_ledger_format(const ms_ledger *l, char out[MS_LEDGER_STR_MAX]);
/* Parse what ms_ledger_format wrote. 0, or MS_ERR_INVAL (l unchanged). */
int ms_ledger_parse(ms_ledger *l, const char *s);

/* Ledger of every row of one part, of whichever kind (core rows, or index
 * rows for latency/start_time parts); *out is overwritten only on success.
 * Reads the whole part through an iterator whose buffers come from mem
 * (borrowed); a row count differing from the part's meta is an error. */
int ms_ledger_of_part(const ms_part *p, ms_ledger *out, ms_mem *mem,
                      ms_errbuf *eb);

/* The key of the core block `it` is at (bi its header): XXH3-128 of its
 * stored bytes (as the reader verified them), seeded with its trace ID and
 * row count. Blocks with one key hold the same rows, so the ledgers of
 * the block (ms_ledger_set_add_row over its rows) are a function of the
 * key: the premise, as for the ledgers, that distinct inputs do not share
 * a 128-bit hash. 0 or <0 with eb set. */
int ms_ledger_block_key(ms_part_iter *it, const ms_block_info *bi,
                        uint64_t *lo, uint64_t *hi, ms_errbuf *eb);
/* The order of two block keys (hi, lo words as ms_ledger_block_key gives
 * them): the high word first, then the low word; <0, 0 or >0. */
static inline int
ms_ledger_key_cmp(uint64_t ahi, uint64_t alo, uint64_t bhi, uint64_t blo)
{
	if (ahi != bhi)
		return ahi < bhi ? -1 : 1;
	return (alo > blo) - (alo < blo);
}
/* The ledgers of the rows of the core block `it` is at, decoded. */
int ms_ledger_block_decode(ms_part_iter *it, const ms_block_info *bi,
                           ms_ledger_set *out, ms_errbuf *eb);

/* One core block's ledgers for ms_ledger_check_part: the block `it` is on
 * (bi its header), as ms_ledger_set_add_row over its rows would sum them;
 * 0, or <0 with eb set. May answer from a cache of blocks already read. */
typedef int (*ms_block_ledger_fn)(void *arg, ms_part_iter *it,
                                  const ms_block_info *bi, ms_ledger_set *out,
                                  ms_errbuf *eb);

/* Check a part and its two index parts as they enter a shard: the core
 * blocks hold one block per trace in ascending trace-ID order (a trace
 * split past MS_BLOCK_SPLIT_BYTES continues in the next block), as many
 * rows as the metadata says, and each index part (lat, st; NULL is a
 * failure) holds exactly the index rows its core rows make (its
 * ms_ledger_of_part equals the ledger derived from the core rows).
 * 0 and *out = the ledgers (core rows, and the index rows derived from
 * them; on success the same as ms_ledger_of_part of each part), or
 * MS_ERR_CORRUPT (or the read's error) with eb saying why, naming the
 * part ("part <id>: ..."); *out is overwritten only on success. block
 * gives each core block's ledgers (NULL: every block is decoded). The
 * same function checks a fixture's parts when they are built and a
 * replay's parts when they enter its shard, so a part whose bytes a
 * build checked gives what a replay's check would give. */
int ms_ledger_check_part(const ms_part *core, const ms_part *lat,
                         const ms_part *st, ms_block_ledger_fn block,
                         void *arg, ms_ledger_set *out, ms_errbuf *eb);
/* The same check with the blocks' ledgers answered in batches: a
 * caller that looks them up somewhere slow (a file) gathers the blocks
 * it cannot answer at once and answers them together. take is called
 * for each core block, as the block callback above, and may return
 * MS_BLOCK_LEDGER_LATER instead of 0: it kept what it needs to answer
 * the block (its key) and leaves *out unset. After at most max such
 * blocks, and at the end of the part, flush(arg, sum, left, eb) answers
 * the blocks deferred since the last flush, numbered from 0 in the order
 * take deferred them: it adds the ledgers of those it answers to *sum
 * and sets left[j] for each block j it cannot answer (left is cleared
 * before the call); each such block is then given to decode, with its
 * iterator at that block (a re-read trailing the check's iterator), and
 * must be answered there (NULL decode: ms_ledger_block_decode). A block
 * met when no more can be deferred (max reached, or max 0 or flush
 * NULL) is given to decode (or, with decode NULL, to take, which must
 * then answer it). take NULL: every block is decoded. Ledgers are sums:
 * the result, and every check and error, is what ms_ledger_check_part
 * gives with a callback answering every block at once. */
#define MS_BLOCK_LEDGER_LATER 1
typedef int (*ms_block_flush_fn)(void *arg, ms_ledger_set *sum, bool *left,
                                 ms_errbuf *eb);
typedef struct ms_block_batch {
	ms_block_ledger_fn take;
	ms_block_flush_fn flush;
	ms_block_ledger_fn decode;
	size_t max;
} ms_block_batch;
int ms_ledger_check_part_batch(const ms_part *core, const ms_part *lat,
                               const ms_part *st, const ms_block_batch *block,
                               void *arg, ms_ledger_set *out, ms_errbuf *eb);
/* The version of what ms_ledger_check_part checks: bumped whenever it
 * checks more or otherwise, so that a fixture manifest records which
 * check its build ran. */
#define MS_LEDGER_PART_CHECK_VERSION 1

struct ms_view;
/* Ledgers of all three kinds over every part of a view; *out overwritten. */
int ms_ledger_of_view(const struct ms_view *v, ms_ledger_set *out, ms_mem *mem,
                      ms_errbuf *eb);

#endif
