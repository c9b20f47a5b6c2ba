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

struct ms_view;
/* Ledgers of all three kinds over every part of a view; *out overwritten. */
int ms_ledger_of_view(const struct ms_view *v, ms_ledger_set *out, ms_mem *mem,
                      ms_errbuf *eb);

#endif
