/*
 * partcheck.c - the check every part gets when it enters the replay's
 * shard (a publication or a merge output), for the gates
 * one_block_per_trace and part_ledgers: its core blocks hold one block per
 * trace in ascending trace-ID order (a trace split past
 * MS_BLOCK_SPLIT_BYTES continues in the next block), its rows are what its
 * metadata says, and its two index parts hold exactly the index rows its
 * core rows make (their ledgers equal the ones derived from the core rows).
 * The part's ledgers are handed back so that a merge can be reconciled
 * with its inputs. The check itself is core's ms_ledger_check_part (the
 * fixture's build runs it too, controller.c's proven_by_fixture says
 * what a replay takes from that); this file keeps the block-ledger cache
 * that answers it for blocks already seen.
 */
#include "replay_int.h"

#include "ms_ledger.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The ledgers of blocks already checked, keyed by a hash of the block as
 * stored (its bytes, trace ID and row count). A merge copies most blocks
 * byte for byte (a trace with one fragment among its inputs); such a block
 * holds the same rows as the block it was copied from, so its ledgers are
 * those computed when that block was first decoded. A block whose bytes
 * are new (a trace combined from fragments, or a block a faulty merge
 * changed) is decoded. The bytes are the ones the reader verified against
 * their checksums.
 *
 * The blocks of a proven fixture's parts are not held here: their
 * ledgers are in the fixture's block ledger file, which the cache reads
 * on demand (ms__blkcache_attach, ms_fixture_blocks). A lookup tries the
 * blocks the run decoded (in memory), then the file; a group of the file
 * that cannot be read, or no longer hashes as it did when the run opened
 * it, answers nothing (the block is decoded, as any block not seen), and
 * is counted.
 */
typedef struct blk_ent {
	/* Its 64-bit words as pairs of 32-bit halves, so that an entry is
	 * 68 bytes, not 72 padded to 8-byte alignment (blk_u64). */
	uint32_t key[2][2]; /* lo, hi */
	/* The block's ledgers: its rows (one row of each kind per core
	 * row, so one count for the three) and the sum of each kind. */
	uint32_t sum[MS_KIND_COUNT][2][2];
	uint32_t rows;
} blk_ent;

static uint64_t
blk_u64(const uint32_t w[2])
{
	return (uint64_t)w[1] << 32 | w[0];
}

static void
blk_put64(uint32_t w[2], uint64_t v)
{
	w[0] = (uint32_t)v;
	w[1] = (uint32_t)(v >> 32);
}

/* The entries are kept dense, in the order they were added, in chunks
 * of BLK_CHUNK (a chunk is never moved, so no entry is ever copied and
 * no growth doubles the memory); `idx` is an open-addressing table of
 * slots (blk_slot_of: the entry's number + 1, 0 = empty, and the low
 * half of its key's hi as a fingerprint), at most three quarters full,
 * from BLK_IDX_MIN slots on. A table of whole entries at half that load
 * took two to four times the entries' bytes, and the old table stayed
 * beside the new one while it grew.
 *
 * Every block a part check reads is looked up, and nearly every lookup
 * of a replay of a proven fixture finds nothing here (day-2x: a few
 * hundred blocks decoded of 260,000 looked up): a probe passes the slots
 * of other keys by their fingerprints, without reading their entries
 * (each a miss of the CPU cache), and an index sized for the entries it
 * holds stays in the cache, where one of 65,536 slots (256 KiB) missed it
 * at nearly every lookup. */
#define BLK_CHUNK_BITS 12
#define BLK_CHUNK ((size_t)1 << BLK_CHUNK_BITS)
#define BLK_IDX_MIN ((size_t)1024)

struct ms__blkcache {
	pthread_mutex_t mu;
	ms__chunks chunk; /* of BLK_CHUNK entries */
	uint64_t *idx;
	size_t cap, n;
	ms_fixture_blocks *fx; /* owned; set before any lookup, then fixed */
	uint64_t hits, misses;
	uint64_t fx_lookups, fx_refused;
};

size_t
ms__blkcache_size(void)
{
	return sizeof(ms__blkcache);
}

int
ms__blkcache_new(ms__blkcache **out)
{
	ms__blkcache *c = calloc(1, sizeof(*c));
	if (!c)
		return MS_ERR_NOMEM;
	pthread_mutex_init(&c->mu, NULL);
	*out = c;
	return 0;
}

void
ms__blkcache_free(ms__blkcache *c)
{
	if (!c)
		return;
	pthread_mutex_destroy(&c->mu);
	ms__chunks_release(&c->chunk);
	free(c->idx);
	ms_fixture_blocks_close(c->fx);
	free(c);
}

void
ms__blkcache_attach(ms__blkcache *c, ms_fixture_blocks *fx)
{
	if (!c) {
		ms_fixture_blocks_close(fx);
		return;
	}
	pthread_mutex_lock(&c->mu);
	ms_fixture_blocks_close(c->fx);
	c->fx = fx;
	pthread_mutex_unlock(&c->mu);
}

void
ms__blkcache_figures(ms__blkcache *c, ms__blkcache_figs *out)
{
	memset(out, 0, sizeof(*out));
	if (!c)
		return;
	pthread_mutex_lock(&c->mu);
	out->hits = c->hits;
	out->misses = c->misses;
	out->resident = c->n;
	out->file_entries = ms_fixture_blocks_count(c->fx);
	out->file_lookups = c->fx_lookups;
	out->file_refused = c->fx_refused;
	out->file_reads = ms_fixture_blocks_reads(c->fx);
	pthread_mutex_unlock(&c->mu);
}

static blk_ent *
blk_at(const ms__blkcache *c, size_t i)
{
	blk_ent *chunk = c->chunk.p[i >> BLK_CHUNK_BITS];
	return &chunk[i & (BLK_CHUNK - 1)];
}

/* The slot of entry i (numbered from 0) of key hi. */
static uint64_t
blk_slot_of(size_t i, uint64_t hi)
{
	return (uint64_t)(uint32_t)hi << 32 | (uint32_t)(i + 1);
}

/* The entry of a full slot. */
static const blk_ent *
blk_slot_ent(const ms__blkcache *c, uint64_t slot)
{
	return blk_at(c, (uint32_t)slot - 1);
}

/* The index slot of key lo/hi in a table of cap slots: the entry's, or
 * the empty slot where it would go. */
static uint64_t *
blk_slot(const ms__blkcache *c, uint64_t *idx, size_t cap, uint64_t lo,
         uint64_t hi)
{
	size_t h = (size_t)lo & (cap - 1);
	for (; idx[h]; h = (h + 1) & (cap - 1)) {
		if ((uint32_t)(idx[h] >> 32) != (uint32_t)hi)
			continue;
		const blk_ent *e = blk_slot_ent(c, idx[h]);
		if (blk_u64(e->key[0]) == lo && blk_u64(e->key[1]) == hi)
			break;
	}
	return &idx[h];
}

/* The in-memory entry of key lo/hi into *out (c->mu held). */
static bool
blk_mem_get(ms__blkcache *c, uint64_t lo, uint64_t hi, ms_ledger_set *out)
{
	if (!c->cap)
		return false;
	uint64_t *s = blk_slot(c, c->idx, c->cap, lo, hi);
	if (!*s)
		return false;
	const blk_ent *e = blk_slot_ent(c, *s);
	for (int k = 0; k < MS_KIND_COUNT; k++)
		out->kind[k] = (ms_ledger){
			.rows = e->rows,
			.sum_lo = blk_u64(e->sum[k][0]),
			.sum_hi = blk_u64(e->sum[k][1]),
		};
	return true;
}

/* Memory, then (with file set) the attached file; the lookup counted
 * as a hit or a miss with count set. */
static bool
blk_get(ms__blkcache *c, uint64_t lo, uint64_t hi, ms_ledger_set *out,
        bool count, bool file)
{
	if (!c)
		return false;
	pthread_mutex_lock(&c->mu);
	bool hit = blk_mem_get(c, lo, hi, out);
	const ms_fixture_blocks *fx = c->fx;
	if (!hit && fx && file) {
		/* The file, read without the lock (the store is read-only
		 * and its descriptor shared: pread). */
		pthread_mutex_unlock(&c->mu);
		int rc = ms_fixture_blocks_get(fx, lo, hi, out);
		pthread_mutex_lock(&c->mu);
		hit = rc == 0;
		c->fx_lookups++;
		c->fx_refused += rc == MS_ERR_IO || rc == MS_ERR_CORRUPT;
	}
	if (count && hit)
		c->hits++;
	else if (count)
		c->misses++;
	pthread_mutex_unlock(&c->mu);
	return hit;
}

/* Room for one more entry: its chunk, and an index at most three
 * quarters full.
 * false when out of memory (or the numbering is exhausted). */
static bool
blk_room(ms__blkcache *c)
{
	if (c->n >= UINT32_MAX - 1)
		return false;
	if ((c->n + 1) * 4 > c->cap * 3) {
		size_t ncap = c->cap ? c->cap * 2 : BLK_IDX_MIN;
		uint64_t *ni = calloc(ncap, sizeof(*ni));
		if (!ni)
			return false;
		for (size_t i = 0; i < c->n; i++) {
			const blk_ent *e = blk_at(c, i);
			uint64_t hi = blk_u64(e->key[1]);
			*blk_slot(c, ni, ncap, blk_u64(e->key[0]), hi) =
			        blk_slot_of(i, hi);
		}
		free(c->idx);
		c->idx = ni;
		c->cap = ncap;
	}
	return c->n < c->chunk.n * BLK_CHUNK ||
	       ms__chunks_add(&c->chunk, BLK_CHUNK * sizeof(blk_ent));
}

/* 0, or why the ledgers were not kept (a cache: the next check
 * decodes). */
static int
blk_put(ms__blkcache *c, uint64_t lo, uint64_t hi, const ms_ledger_set *led)
{
	if (!c || (!lo && !hi) || led->kind[0].rows > UINT32_MAX)
		return MS_ERR_RANGE;
	for (int k = 1; k < MS_KIND_COUNT; k++)
		if (led->kind[k].rows != led->kind[0].rows)
			return MS_ERR_RANGE; /* not one count for all */
	pthread_mutex_lock(&c->mu);
	if (!blk_room(c)) {
		pthread_mutex_unlock(&c->mu);
		return MS_ERR_NOMEM;
	}
	uint64_t *s = blk_slot(c, c->idx, c->cap, lo, hi);
	if (!*s) {
		blk_ent *e = blk_at(c, c->n);
		blk_put64(e->key[0], lo);
		blk_put64(e->key[1], hi);
		e->rows = (uint32_t)led->kind[0].rows;
		for (int k = 0; k < MS_KIND_COUNT; k++) {
			blk_put64(e->sum[k][0], led->kind[k].sum_lo);
			blk_put64(e->sum[k][1], led->kind[k].sum_hi);
		}
		*s = blk_slot_of(c->n++, hi);
	}
	pthread_mutex_unlock(&c->mu);
	return 0;
}

/* One core block's ledgers (ms_block_ledger_fn): from the cache (with
 * file: the attached file too), else decoded and added to it. */
static int
blk_answer(ms__blkcache *cache, ms_part_iter *it, const ms_block_info *bi,
           ms_ledger_set *out, bool file, ms_errbuf *eb)
{
	uint64_t lo, hi;
	int rc = ms__block_key(it, bi, &lo, &hi, eb);
	if (rc < 0)
		return rc;
	if (blk_get(cache, lo, hi, out, true, file))
		return 0;
	if ((rc = ms_ledger_block_decode(it, bi, out, eb)) < 0)
		return rc;
	(void)blk_put(cache, lo, hi, out);
	return 0;
}

int
ms__block_ledger(ms__blkcache *cache, ms_part_iter *it, const ms_block_info *bi,
                 ms_ledger_set *out, ms_errbuf *eb)
{
	return blk_answer(cache, it, bi, out, true, eb);
}

static int
cached_block_ledger(void *arg, ms_part_iter *it, const ms_block_info *bi,
                    ms_ledger_set *out, ms_errbuf *eb)
{
	return ms__block_ledger(arg, it, bi, out, eb);
}

/*
 * Keys asked of the attached file together: sorted by key and looked up
 * with ms_fixture_blocks_get_many (each group of the file read once,
 * neighbouring groups in one read), each key answered as a single
 * lookup (blk_get) answers it from the file, and counted as one file
 * lookup, refused when its group could not be read or changed. The part
 * check's batches (batch_flush) and the dropped traces' blocks
 * (ms__blkcache_get_many) both ask the file this way.
 */
typedef struct file_ask {
	ms_fixture_block_answer_fn fn;
	void *arg;
	uint64_t asked, refused;
} file_ask;

static int
key_order(const void *x, const void *y)
{
	const ms_fixture_block_key *a = x, *b = y;
	return ms_ledger_key_cmp(a->hi, a->lo, b->hi, b->lo);
}

static int
file_ask_answer(void *arg, const ms_fixture_block_key *k, int rc,
                const ms_ledger_set *led)
{
	file_ask *a = arg;
	a->asked++;
	a->refused += rc == MS_ERR_IO || rc == MS_ERR_CORRUPT;
	return a->fn(a->arg, k, rc, led);
}

/* The n keys k (reordered: sorted by key) answered from the attached
 * file by fn (without one: MS_ERR_NOTFOUND each, and nothing counted).
 * 0, or the first nonzero return of fn. */
static int
blk_file_many(ms__blkcache *c, ms_fixture_block_key *k, size_t n,
              ms_fixture_block_answer_fn fn, void *arg)
{
	if (!c || !c->fx) {
		for (size_t i = 0; i < n; i++) {
			int rc = fn(arg, &k[i], MS_ERR_NOTFOUND, NULL);
			if (rc)
				return rc;
		}
		return 0;
	}
	file_ask a = { .fn = fn, .arg = arg };
	qsort(k, n, sizeof(*k), key_order);
	/* The file, read without the lock (the store is read-only and its
	 * descriptor shared: pread); the keys are in order. */
	int rc = ms_fixture_blocks_get_many(c->fx, k, n, file_ask_answer, &a);
	pthread_mutex_lock(&c->mu);
	c->fx_lookups += a.asked;
	c->fx_refused += a.refused;
	pthread_mutex_unlock(&c->mu);
	return rc;
}

/*
 * The file's lookups of one part check, batched (ms_ledger_check_part_
 * batch): a block the blocks in memory do not answer is deferred, its key
 * kept; each batch is looked up in the file sorted by key
 * (ms_fixture_blocks_get_many: each group read once, neighbours in one
 * read), and the blocks the file does not answer are decoded as a
 * single lookup's would be. Each block is counted once, as a hit or a
 * miss, and each key asked of the file as one file lookup. At most
 * BLK_BATCH keys (24 bytes each) are held, whatever the part's size.
 */
#define BLK_BATCH ((size_t)4096)

typedef struct blk_batch {
	ms__blkcache *c;
	ms_fixture_block_key k[BLK_BATCH];
	size_t n;
	ms_ledger_set *sum; /* of the current flush */
	bool *left;
	uint64_t answered;
} blk_batch;

/* A block answered now: memory, else decoded (the file is asked in
 * batches). */
static int
batch_take(void *arg, ms_part_iter *it, const ms_block_info *bi,
           ms_ledger_set *out, ms_errbuf *eb)
{
	return blk_answer(((blk_batch *)arg)->c, it, bi, out, false, eb);
}

/* A block answered from memory, else deferred to batch_flush. */
static int
batch_take_later(void *arg, ms_part_iter *it, const ms_block_info *bi,
                 ms_ledger_set *out, ms_errbuf *eb)
{
	blk_batch *b = arg;
	uint64_t lo, hi;
	int rc = ms__block_key(it, bi, &lo, &hi, eb);
	if (rc < 0)
		return rc;
	pthread_mutex_lock(&b->c->mu);
	bool hit = blk_mem_get(b->c, lo, hi, out);
	b->c->hits += hit;
	pthread_mutex_unlock(&b->c->mu);
	if (hit)
		return 0;
	b->k[b->n] = (ms_fixture_block_key){ .lo = lo,
		                             .hi = hi,
		                             .tag = (uint32_t)b->n };
	b->n++;
	return MS_BLOCK_LEDGER_LATER;
}

/* One key's answer from the file: its ledgers summed, or its block left
 * to be decoded. */
static int
batch_answer(void *arg, const ms_fixture_block_key *k, int rc,
             const ms_ledger_set *led)
{
	blk_batch *b = arg;
	if (!rc) {
		ms_ledger_set_add(b->sum, led);
		b->answered++;
	} else
		b->left[k->tag] = true;
	return 0;
}

/* The deferred keys looked up in the file, sorted, and counted. */
static int
batch_flush(void *arg, ms_ledger_set *sum, bool *left, ms_errbuf *eb)
{
	blk_batch *b = arg;
	(void)eb;
	b->sum = sum;
	b->left = left;
	b->answered = 0;
	/* batch_answer goes on: every key is answered. */
	(void)blk_file_many(b->c, b->k, b->n, batch_answer, b);
	pthread_mutex_lock(&b->c->mu);
	b->c->hits += b->answered;
	pthread_mutex_unlock(&b->c->mu);
	b->n = 0;
	return 0;
}

int
ms__block_key(ms_part_iter *it, const ms_block_info *bi, uint64_t *lo,
              uint64_t *hi, ms_errbuf *eb)
{
	return ms_ledger_block_key(it, bi, lo, hi, eb);
}

bool
ms__blkcache_get(ms__blkcache *c, uint64_t lo, uint64_t hi, ms_ledger_set *out)
{
	return blk_get(c, lo, hi, out, false, true);
}

int
ms__blkcache_get_many(ms__blkcache *c, ms_fixture_block_key *k, size_t n,
                      ms_fixture_block_answer_fn fn, void *arg)
{
	size_t left = 0;
	for (size_t i = 0; i < n; i++) {
		ms_ledger_set led;
		bool hit = false;
		if (c) {
			pthread_mutex_lock(&c->mu);
			hit = blk_mem_get(c, k[i].lo, k[i].hi, &led);
			pthread_mutex_unlock(&c->mu);
		}
		int rc = hit ? fn(arg, &k[i], 0, &led) : 0;
		if (rc)
			return rc;
		if (!hit)
			k[left++] = k[i];
	}
	return blk_file_many(c, k, left, fn, arg);
}

int
ms__part_check(const ms_part *core, const ms_part *lat, const ms_part *st,
               ms__blkcache *cache, ms_ledger_set *out, char *why, size_t n)
{
	ms_errbuf eb = { { 0 } };
	why[0] = '\0';
	/* The file is attached before the run's threads look up. */
	blk_batch *b = cache && cache->fx ? malloc(sizeof(*b)) : NULL;
	int rc;
	if (b) {
		const ms_block_batch ops = {
			.take = batch_take_later,
			.flush = batch_flush,
			.decode = batch_take,
			.max = BLK_BATCH,
		};
		*b = (blk_batch){ .c = cache };
		rc = ms_ledger_check_part_batch(core, lat, st, &ops, b, out,
		                                &eb);
		free(b);
	} else
		rc = ms_ledger_check_part(core, lat, st, cached_block_ledger,
		                          cache, out, &eb);
	if (rc) {
		snprintf(why, n, "%s", eb.msg);
		return -1;
	}
	return 0;
}
