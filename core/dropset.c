/*
 * dropset.c - the drop set: one job, the exact record of the traces a
 * sampling merge confirmed as dropped (the fragment guard, guard.c, decides
 * which), in merge order. Index pruning and the guard's revalidation
 * consult it; a hash collision can never make it answer "contains".
 *
 * A finalize can drop tens of thousands of traces and the set is live at
 * the merge's publication, the run's peak of memory: it is laid out to
 * cost less than the IDs themselves, with nothing that doubles. Drops come
 * in merge order, which is trace-ID order, so an ID shares most of its
 * bytes with the one before it: a record keeps only the rest.
 *
 * Design:
 *  1. Every ID is recorded at most once, in the order added; records are
 *     never moved or rewritten once added (chunks are never reallocated).
 *  2. Records are packed back to back in chunks (the first four 4, 8, 16
 *     and 32 KiB, so a set of a few drops stays small, then 64 KiB each);
 *     a record never straddles two chunks. A record is
 *         [shared u8][rest u8][rest bytes][uvarint A][uvarint B]
 *     the ID being the previous entry's first `shared` bytes followed by
 *     the `rest` bytes (shared is 0 for every RESTART-th entry, a restart),
 *     A = zigzag(min_ts - base), base = the first entry's min_ts, and
 *     B = zigzag(max_ts - min_ts), both differences modulo 2^64: every pair
 *     of int64 comes back exactly, and a day's drops take about 12 bytes
 *     of timestamps instead of 16. A chunk whose next record went to a
 *     new chunk ends with END (a byte no record starts with: shared <=
 *     MS_TRACE_ID_MAX); a record always leaves a chunk room for it.
 *  3. A restart's record is found by a 32-bit reference (chunk << 16 |
 *     offset in the chunk) in pages of REF_PAGE references that never
 *     move either; entry i's record is found from restart i / RESTART
 *     forward by the records' lengths alone (at most RESTART - 1 before
 *     it). A lookup compares, and a get copies, each byte of the ID once,
 *     from the record in the run that holds it; nothing else is decoded.
 *  4. The slot table is open-addressed with linear probing, 2^k slots at
 *     most half full. A 32-bit slot holds the entry index + 1 in its low
 *     k bits (0 = empty; n <= 2^(k-1) fits) and, as a fingerprint, the top
 *     32 - k bits of the hash's high half. A fingerprint match is always
 *     followed by a full byte comparison of the entry's ID, so a hash
 *     collision can never answer "contains".
 *  5. A failed add leaves the set as it was: a page, chunk or slot table
 *     it allocated before failing only adds room. The set is full (an add
 *     fails with MS_ERR_RANGE) at 2^31 entries (k <= 32) or CHUNKS_MAX
 *     chunks (references of 32 bits).
 *  6. ms_dropset_bytes is what the set has allocated: the handle, the
 *     chunks and pages whole, their directories and the slot table.
 *  7. With a budget (pipeline_int.h says the rule) the set is full once
 *     it holds max_ids entries, max_ids priced at the longest ID added;
 *     full never goes back to false. The ceiling bounds what may be
 *     added (ms_dropset_can_accept), never what is looked up.
 */
#include "pipeline_int.h"

#include <xxhash.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* Drop set                                                            */

#define CHUNK_FIRST ((size_t)4096) /* 2. */
#define CHUNK_BITS 16              /* 3. an offset in a chunk */
#define CHUNK_MAX ((size_t)1 << CHUNK_BITS)
#define CHUNKS_MAX ((size_t)1 << (32 - CHUNK_BITS))
#define REF_PAGE ((size_t)1024) /* 3. references a page */
#define RESTART ((size_t)8)     /* 2. entries from one restart to the next */
#define END 0xffu               /* 2. the rest of the chunk is unused */
#define VARINT_MAX 10
#define REC_MAX (2 + MS_TRACE_ID_MAX + 2 * VARINT_MAX)
#define SLOTS_FIRST_BITS 6
#define SLOTS_MAX_BITS 32
_Static_assert(MS_TRACE_ID_MAX <= UINT8_MAX,
               "a trace ID's length fits in a record's length byte");
_Static_assert(REC_MAX + 1 <= CHUNK_FIRST, "a record and END fit in any chunk");
_Static_assert(MS_TRACE_ID_MAX < END, "no record starts with END");

struct ms_dropset {
	ms_mem *mem;
	ms_dropset_hash_fn hash;
	void *hash_ctx;
	size_t n;
	uint64_t base; /* 2. the first entry's min_ts */
	void **chunks; /* 2. uint8_t[chunk_size(c)] each */
	size_t nchunks, chunks_cap;
	size_t used;        /* bytes used in the last chunk */
	size_t chunk_bytes; /* the chunks' sizes, summed */
	void **pages;       /* 3. uint32_t[REF_PAGE] each */
	size_t npages, pages_cap;
	uint8_t last[MS_TRACE_ID_MAX]; /* 2. the last entry's ID */
	uint32_t last_len;
	uint32_t *slots;
	unsigned slot_bits; /* k: 2^k slots, or 0 when there are none */
	uint64_t budget;    /* 7. bytes; 0 = no ceiling */
	uint64_t max_ids;   /* 7. 0 until the first drop is recorded */
	uint32_t priced_len; /* 7. the ID length max_ids was priced at */
	bool full;          /* 7. one-way */
};

static uint64_t
default_hash(const uint8_t *tid, uint32_t len, void *ctx)
{
	(void)ctx;
	return XXH3_64bits(tid, len);
}

static size_t
chunk_size(size_t c)
{
	return c < 4 ? CHUNK_FIRST << c : CHUNK_MAX;
}

static size_t
nslots(const ms_dropset *d)
{
	return d->slot_bits ? (size_t)1 << d->slot_bits : 0;
}

/* MS_ERR_NOMEM: `bytes` for `what` could not be had. */
static int
nomem(ms_errbuf *eb, const char *what, size_t bytes)
{
	return ms_fail(eb, MS_ERR_NOMEM,
	               "drop set: out of memory for %s (%zu bytes)", what,
	               bytes);
}

int
ms_dropset_open(ms_dropset **out, const ms_dropset_opts *opts, ms_errbuf *eb)
{
	static const ms_dropset_opts none;
	*out = NULL;
	if (!opts)
		opts = &none;
	ms_dropset *d = ms_mem_calloc(opts->mem, 1, sizeof(*d));
	if (!d)
		return nomem(eb, "its state", sizeof(*d));
	d->mem = opts->mem;
	d->hash = opts->hash ? opts->hash : default_hash;
	d->hash_ctx = opts->hash_ctx;
	d->budget = opts->budget;
	*out = d;
	return 0;
}

void
ms_dropset_close(ms_dropset *d)
{
	if (!d)
		return;
	for (size_t c = 0; c < d->nchunks; c++)
		ms_mem_free(d->mem, d->chunks[c], chunk_size(c));
	ms_mem_free(d->mem, d->chunks, d->chunks_cap * sizeof(*d->chunks));
	for (size_t p = 0; p < d->npages; p++)
		ms_mem_free(d->mem, d->pages[p], REF_PAGE * sizeof(uint32_t));
	ms_mem_free(d->mem, d->pages, d->pages_cap * sizeof(*d->pages));
	ms_mem_free(d->mem, d->slots, nslots(d) * sizeof(*d->slots));
	ms_mem_free(d->mem, d, sizeof(*d));
}

/* ---- records (2., 3.) ---- */

static uint64_t
zigzag(uint64_t v)
{
	return v << 1 ^ (0 - (v >> 63));
}

static uint64_t
unzigzag(uint64_t z)
{
	return z >> 1 ^ (0 - (z & 1));
}

/* The int64 whose two's complement is u, without an implementation-
 * defined conversion. */
static int64_t
to_i64(uint64_t u)
{
	return u <= INT64_MAX ? (int64_t)u : -(int64_t)~u - 1;
}

/* Records are ours: every varint ends within VARINT_MAX bytes. */
static uint64_t
get_uvarint(const uint8_t **p)
{
	uint64_t v = 0;
	const uint8_t *q = *p;
	for (unsigned s = 0;; s += 7) {
		uint8_t b = *q++;
		v |= (uint64_t)(b & 0x7f) << s;
		if (b < 0x80)
			break;
	}
	*p = q;
	return v;
}

/* Where restart r's record is (3.). */
static void
restart_at(const ms_dropset *d, size_t r, ms_dropset_iter *it)
{
	uint32_t ref = ((const uint32_t *)d->pages[r / REF_PAGE])[r % REF_PAGE];
	it->d = d;
	it->i = r * RESTART;
	it->chunk = ref >> CHUNK_BITS;
	it->pos = ref & (CHUNK_MAX - 1);
	it->len = 0;
}

/* Read the record at the cursor (entry it->i < n) into it, from the ID
 * it holds (the previous entry's), and step past it. */
static void
read_record(ms_dropset_iter *it, uint64_t *a, uint64_t *b)
{
	const ms_dropset *d = it->d;
	const uint8_t *p = (const uint8_t *)d->chunks[it->chunk] + it->pos;
	if (*p == END) {
		it->chunk++;
		p = d->chunks[it->chunk];
	}
	const uint8_t *p0 = d->chunks[it->chunk];
	uint32_t shared = p[0], rest = p[1];
	memcpy(it->tid + shared, p + 2, rest);
	it->len = shared + rest;
	p += 2 + rest;
	uint64_t va = get_uvarint(&p), vb = get_uvarint(&p);
	if (a)
		*a = va;
	if (b)
		*b = vb;
	it->pos = (size_t)(p - p0);
	it->i++;
}

/* Past the record at p: its ID bytes and both uvarints (2.). */
static const uint8_t *
skip_record(const uint8_t *p)
{
	p += 2 + p[1];
	while (*p++ & 0x80)
		;
	while (*p++ & 0x80)
		;
	return p;
}

/* Where the records of entry i's run up to i start, restart first (3.):
 * i % RESTART + 1 of them, found by their lengths alone. */
static size_t
run_records(const ms_dropset *d, size_t i, const uint8_t *rec[RESTART])
{
	size_t r = i / RESTART;
	uint32_t ref = ((const uint32_t *)d->pages[r / REF_PAGE])[r % REF_PAGE];
	size_t c = ref >> CHUNK_BITS;
	const uint8_t *p =
	        (const uint8_t *)d->chunks[c] + (ref & (CHUNK_MAX - 1));
	size_t n = i % RESTART + 1;
	for (size_t k = 0; k < n; k++) {
		if (*p == END)
			p = d->chunks[++c];
		rec[k] = p;
		p = skip_record(p);
	}
	return n;
}

/* Is the last of a run's n records the ID tid? Its own bytes are
 * compared first, then, going back, each byte it shares with the records
 * before it where that record holds it: every byte of the ID once,
 * nothing decoded. */
static bool
run_entry_is(const uint8_t *const *rec, size_t n, const uint8_t *tid,
             uint32_t len)
{
	const uint8_t *r = rec[n - 1];
	uint32_t need = r[0];
	if ((uint32_t)r[0] + r[1] != len || memcmp(r + 2, tid + need, r[1]))
		return false;
	for (size_t k = n - 1; need > 0 && k-- > 0;) {
		r = rec[k];
		if (r[0] >= need)
			continue;
		if (memcmp(r + 2, tid + r[0], need - r[0]))
			return false;
		need = r[0];
	}
	return need == 0;
}

/* Entry i's ID into tid, each byte copied once from the record that
 * holds it, and its A and B. */
static uint32_t
entry_of(const ms_dropset *d, size_t i, uint8_t *tid, uint64_t *a,
         uint64_t *b)
{
	const uint8_t *rec[RESTART];
	size_t n = run_records(d, i, rec);
	const uint8_t *r = rec[n - 1];
	uint32_t len = (uint32_t)r[0] + r[1], need = r[0];
	memcpy(tid + need, r + 2, r[1]);
	const uint8_t *v = r + 2 + r[1];
	*a = get_uvarint(&v);
	*b = get_uvarint(&v);
	for (size_t k = n - 1; need > 0 && k-- > 0;) {
		r = rec[k];
		if (r[0] >= need)
			continue;
		memcpy(tid + r[0], r + 2, need - r[0]);
		need = r[0];
	}
	return len;
}

/* Append a new block of `size` bytes to a directory of blocks (the
 * directory doubles; it holds only pointers). MS_ERR_NOMEM with the bytes
 * of the allocation that failed in *want. */
static int
dir_add(ms_mem *mem, void ***dir, size_t *n, size_t *cap, size_t size,
        size_t *want)
{
	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 8;
		void **p = ms_mem_realloc(mem, *dir, *cap * sizeof(*p),
		                          ncap * sizeof(*p));
		*want = ncap * sizeof(*p);
		if (!p)
			return MS_ERR_NOMEM;
		*dir = p;
		*cap = ncap;
	}
	void *b = ms_mem_alloc(mem, size);
	*want = size;
	if (!b)
		return MS_ERR_NOMEM;
	(*dir)[(*n)++] = b;
	return 0;
}

/* Room for restart n / RESTART's reference: a new page when it starts
 * one. */
static int
ref_room(ms_dropset *d, size_t *want)
{
	if (d->n % RESTART || d->n / RESTART / REF_PAGE < d->npages)
		return 0;
	return dir_add(d->mem, &d->pages, &d->npages, &d->pages_cap,
	               REF_PAGE * sizeof(uint32_t), want);
}

/* Room for a record of len bytes at the end of the last chunk: a new
 * chunk when it does not fit (the old one's tail stays unused). */
static int
record_room(ms_dropset *d, size_t len, size_t *want)
{
	if (d->nchunks && d->used + len + 1 <= chunk_size(d->nchunks - 1))
		return 0;
	if (d->nchunks == CHUNKS_MAX)
		return MS_ERR_RANGE;
	size_t size = chunk_size(d->nchunks);
	int rc = dir_add(d->mem, &d->chunks, &d->nchunks, &d->chunks_cap, size,
	                 want);
	if (rc)
		return rc;
	if (d->nchunks > 1)
		((uint8_t *)d->chunks[d->nchunks - 2])[d->used] = END;
	d->chunk_bytes += size;
	d->used = 0;
	return 0;
}

/* ---- slot table (4.) ---- */

/* The low `bits` bits of a slot: its entry index + 1. */
static uint32_t
idx_mask(unsigned bits)
{
	return (uint32_t)(((uint64_t)1 << bits) - 1);
}

static void
slot_put(uint32_t *slots, unsigned bits, uint64_t h, uint32_t idx1)
{
	size_t mask = ((size_t)1 << bits) - 1;
	size_t i = (size_t)h & mask;
	while (slots[i])
		i = (i + 1) & mask;
	slots[i] = ((uint32_t)(h >> 32) & ~idx_mask(bits)) | idx1;
}

static int
grow_slots(ms_dropset *d, size_t *want)
{
	unsigned bits = d->slot_bits ? d->slot_bits + 1 : SLOTS_FIRST_BITS;
	if (bits > SLOTS_MAX_BITS)
		return MS_ERR_RANGE;
	size_t ns = (size_t)1 << bits;
	*want = ns * sizeof(uint32_t);
	uint32_t *s = ms_mem_calloc(d->mem, ns, sizeof(*s));
	if (!s)
		return MS_ERR_NOMEM;
	ms_dropset_iter it;
	ms_dropset_iter_init(&it, d);
	for (size_t i = 0; ms_dropset_next(&it, NULL, NULL); i++)
		slot_put(s, bits, d->hash(it.tid, it.len, d->hash_ctx),
		         (uint32_t)(i + 1));
	ms_mem_free(d->mem, d->slots, nslots(d) * sizeof(*d->slots));
	d->slots = s;
	d->slot_bits = bits;
	return 0;
}

bool
ms_dropset_contains(const ms_dropset *d, const uint8_t *tid, uint32_t len)
{
	if (!d || d->n == 0 || !tid)
		return false;
	uint64_t h = d->hash(tid, len, d->hash_ctx);
	uint32_t im = idx_mask(d->slot_bits);
	uint32_t fp = (uint32_t)(h >> 32) & ~im;
	size_t mask = nslots(d) - 1;
	for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
		uint32_t s = d->slots[i];
		if (!s)
			return false;
		if ((s & ~im) != fp)
			continue;
		const uint8_t *rec[RESTART];
		size_t n = run_records(d, (s & im) - 1, rec);
		if (run_entry_is(rec, n, tid, len))
			return true;
	}
}

int
ms_dropset_add(ms_dropset *d, const uint8_t *tid, uint32_t len, int64_t min_ts,
               int64_t max_ts, ms_errbuf *eb)
{
	if (!tid || len == 0 || len > MS_TRACE_ID_MAX)
		return ms_fail(eb, MS_ERR_INVAL,
		               "drop set: trace ID of %u bytes, expected "
		               "1..%d",
		               len, MS_TRACE_ID_MAX);
	if (ms_dropset_contains(d, tid, len)) {
		char shown[MS_TRACE_ID_SHOW_MAX];
		return ms_fail(eb, MS_ERR_EXISTS,
		               "drop set: trace %s recorded twice",
		               ms_trace_id_show(shown, tid, len));
	}
	int rc = 0;
	size_t want = 0;
	if ((d->n + 1) * 2 > nslots(d))
		rc = grow_slots(d, &want);
	if (rc == MS_ERR_RANGE)
		return ms_fail(eb, rc, "drop set: full at %zu traces", d->n);
	if (rc)
		return nomem(eb, "its slot table", want);
	uint64_t base = d->n ? d->base : (uint64_t)min_ts;
	uint32_t shared = 0;
	if (d->n % RESTART)
		while (shared < len && shared < d->last_len &&
		       tid[shared] == d->last[shared])
			shared++;
	uint8_t rec[REC_MAX];
	size_t rlen = 0;
	rec[rlen++] = (uint8_t)shared;
	rec[rlen++] = (uint8_t)(len - shared);
	memcpy(rec + rlen, tid + shared, len - shared);
	uint8_t *p = rec + rlen + (len - shared);
	p = ms_put_uvarint(p, zigzag((uint64_t)min_ts - base));
	p = ms_put_uvarint(p, zigzag((uint64_t)max_ts - (uint64_t)min_ts));
	rlen = (size_t)(p - rec);
	if ((rc = ref_room(d, &want)))
		return nomem(eb, "its restart references", want);
	rc = record_room(d, rlen, &want);
	if (rc == MS_ERR_RANGE)
		return ms_fail(eb, rc, "drop set: full at %zu traces", d->n);
	if (rc)
		return nomem(eb, "its records", want);
	memcpy((uint8_t *)d->chunks[d->nchunks - 1] + d->used, rec, rlen);
	if (d->n % RESTART == 0) {
		size_t r = d->n / RESTART;
		((uint32_t *)d->pages[r / REF_PAGE])[r % REF_PAGE] =
		        (uint32_t)(d->nchunks - 1) << CHUNK_BITS |
		        (uint32_t)d->used;
	}
	d->used += rlen;
	d->base = base;
	memcpy(d->last, tid, len);
	d->last_len = len;
	slot_put(d->slots, d->slot_bits, d->hash(tid, len, d->hash_ctx),
	         (uint32_t)(d->n + 1));
	d->n++;
	if (d->budget && len > d->priced_len) {
		d->priced_len = len;
		d->max_ids = ms_dropset_max_ids(d->budget, len);
	}
	return 0;
}

size_t
ms_dropset_count(const ms_dropset *d)
{
	return d ? d->n : 0;
}

uint64_t
ms_dropset_budget(uint64_t mem, unsigned cpus)
{
	if (mem == 0)
		return MS_DROPSET_DEFAULT_BUDGET;
	uint64_t v = mem / (MS_DROPSET_DIVISOR * (uint64_t)(cpus ? cpus : 1));
	return v < MS_DROPSET_MIN_BUDGET ? MS_DROPSET_MIN_BUDGET : v;
}

uint64_t
ms_dropset_price(uint32_t id_len)
{
	uint64_t stride = id_len > 256 ? 32 : 16;
	return 20 + ((uint64_t)id_len + stride - 1) / stride * stride + 32;
}

uint64_t
ms_dropset_max_ids(uint64_t budget, uint32_t id_len)
{
	if (budget == 0)
		return 0;
	uint64_t n = budget / ms_dropset_price(id_len);
	return n ? n : 1;
}

bool
ms_dropset_can_accept(ms_dropset *d)
{
	if (!d || d->budget == 0)
		return true;
	if (!d->full && d->max_ids && d->n >= d->max_ids)
		d->full = true;
	return !d->full;
}

uint64_t
ms_dropset_budget_of(const ms_dropset *d)
{
	return d ? d->budget : 0;
}

uint64_t
ms_dropset_max_ids_of(const ms_dropset *d)
{
	return d ? d->max_ids : 0;
}

/* min_ts and max_ts from a record's A and B (2.). */
static void
bounds_of(const ms_dropset *d, uint64_t a, uint64_t b, int64_t *min_ts,
          int64_t *max_ts)
{
	uint64_t mn = d->base + unzigzag(a);
	uint64_t mx = mn + unzigzag(b);
	if (min_ts)
		*min_ts = to_i64(mn);
	if (max_ts)
		*max_ts = to_i64(mx);
}

void
ms_dropset_get(const ms_dropset *d, size_t i, uint8_t tid[MS_TRACE_ID_MAX],
               uint32_t *len, int64_t *min_ts, int64_t *max_ts)
{
	uint64_t a, b;
	*len = entry_of(d, i, tid, &a, &b);
	bounds_of(d, a, b, min_ts, max_ts);
}

void
ms_dropset_iter_init(ms_dropset_iter *it, const ms_dropset *d)
{
	memset(it, 0, sizeof(*it));
	it->d = d;
}

bool
ms_dropset_next(ms_dropset_iter *it, int64_t *min_ts, int64_t *max_ts)
{
	const ms_dropset *d = it->d;
	if (!d || it->i >= d->n)
		return false;
	if (it->i == 0)
		restart_at(d, 0, it);
	uint64_t a, b;
	read_record(it, &a, &b);
	bounds_of(d, a, b, min_ts, max_ts);
	return true;
}

uint64_t
ms_dropset_bytes(const ms_dropset *d)
{
	return sizeof(*d) + d->chunk_bytes +
	       d->chunks_cap * sizeof(*d->chunks) +
	       d->npages * REF_PAGE * sizeof(uint32_t) +
	       d->pages_cap * sizeof(*d->pages) + nslots(d) * sizeof(*d->slots);
}

bool
ms_dropset_keep(void *ctx, const uint8_t *tid, uint32_t len)
{
	return !ms_dropset_contains(ctx, tid, len);
}
