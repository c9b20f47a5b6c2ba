/*
 * mem.c - the counting allocator, the growable buffer, the arena and the
 * bounded reader declared in ms_mem.h.
 */
#include "ms_mem.h"
#include "ms_err.h"

#include <stdlib.h>
#include <string.h>

void
ms_mem_init(ms_mem *m, ms_mem *parent)
{
	memset(m, 0, sizeof(*m));
	m->parent = parent;
}

void
ms_mem_stats_get(const ms_mem *m, ms_mem_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!m)
		return;
	ms_mem *mm = (ms_mem *)m;
	out->bytes = atomic_load(&mm->bytes);
	out->count = atomic_load(&mm->count);
	out->frees = atomic_load(&mm->frees);
	out->live = atomic_load(&mm->live);
	out->peak_live = atomic_load(&mm->peak_live);
	out->failed = atomic_load(&mm->failed);
}

void
ms_mem_reset_peak(ms_mem *m)
{
	if (m)
		atomic_store(&m->peak_live, atomic_load(&m->live));
}

void
ms_mem_fail_at(ms_mem *m, uint64_t n, bool every)
{
	if (!m)
		return;
	m->fail_every = every;
	atomic_store(&m->attempts, 0);
	atomic_store(&m->fail_at, n);
}

static bool
should_fail(ms_mem *m)
{
	if (!m)
		return false;
	uint64_t at = atomic_load(&m->fail_at);
	uint64_t n = atomic_fetch_add(&m->attempts, 1) + 1;
	if (at == 0)
		return false;
	return n == at || (m->fail_every && n > at);
}

static void
note_failed(ms_mem *m)
{
	for (; m; m = m->parent)
		atomic_fetch_add(&m->failed, 1);
}

static void
note_alloc(ms_mem *m, size_t grow, bool new_block)
{
	for (; m; m = m->parent) {
		atomic_fetch_add(&m->bytes, grow);
		if (new_block)
			atomic_fetch_add(&m->count, 1);
		int64_t live = atomic_fetch_add(&m->live, (int64_t)grow) +
		               (int64_t)grow;
		int64_t peak = atomic_load(&m->peak_live);
		while (live > peak && !atomic_compare_exchange_weak(
		                              &m->peak_live, &peak, live))
			;
	}
}

static void
note_free(ms_mem *m, size_t size, bool whole_block)
{
	for (; m; m = m->parent) {
		atomic_fetch_sub(&m->live, (int64_t)size);
		if (whole_block)
			atomic_fetch_add(&m->frees, 1);
	}
}

/* Is any ms_mem in the chain asked to fail this allocation? */
static bool
chain_fails(ms_mem *m)
{
	bool fail = false;
	for (; m; m = m->parent)
		fail |= should_fail(m);
	return fail;
}

void *
ms_mem_alloc(ms_mem *m, size_t size)
{
	if (size == 0)
		size = 1;
	if (chain_fails(m)) {
		note_failed(m);
		return NULL;
	}
	void *p = malloc(size);
	if (!p) {
		note_failed(m);
		return NULL;
	}
	note_alloc(m, size, true);
	return p;
}

void *
ms_mem_calloc(ms_mem *m, size_t n, size_t size)
{
	size_t total;
	if (!ms_mul_ok(n, size, &total)) {
		note_failed(m);
		return NULL;
	}
	void *p = ms_mem_alloc(m, total);
	if (p)
		memset(p, 0, total ? total : 1);
	return p;
}

void *
ms_mem_realloc(ms_mem *m, void *p, size_t old_size, size_t new_size)
{
	if (!p)
		return ms_mem_alloc(m, new_size);
	if (new_size == 0)
		new_size = 1;
	if (old_size == 0)
		old_size = 1;
	if (chain_fails(m)) {
		note_failed(m);
		return NULL;
	}
	void *q = realloc(p, new_size);
	if (!q) {
		note_failed(m);
		return NULL;
	}
	if (new_size > old_size)
		note_alloc(m, new_size - old_size, false);
	else if (new_size < old_size)
		note_free(m, old_size - new_size, false);
	return q;
}

void
ms_mem_free(ms_mem *m, void *p, size_t size)
{
	if (!p)
		return;
	free(p);
	note_free(m, size ? size : 1, true);
}

void *
ms_mem_dup(ms_mem *m, const void *p, size_t size)
{
	void *q = ms_mem_alloc(m, size);
	if (q && size)
		memcpy(q, p, size);
	return q;
}

char *
ms_mem_strdup(ms_mem *m, const char *s)
{
	return ms_mem_dup(m, s, strlen(s) + 1);
}

/* ---- ms_buf ---- */

void
ms_buf_init(ms_buf *b, ms_mem *mem, size_t max)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	b->max = max ? max : SIZE_MAX / 2;
	b->mem = mem;
}

void
ms_buf_release(ms_buf *b)
{
	if (!b)
		return;
	ms_mem_free(b->mem, b->data, b->cap);
	b->data = NULL;
	b->len = b->cap = 0;
}

/* Move b's bytes to a block of cap bytes (cap > b->cap). */
static int
buf_set_cap(ms_buf *b, size_t cap)
{
	uint8_t *d = ms_mem_realloc(b->mem, b->data, b->cap, cap);
	if (!d)
		return MS_ERR_NOMEM;
	b->data = d;
	b->cap = cap;
	return 0;
}

int
ms_buf_reserve(ms_buf *b, size_t extra)
{
	size_t need;
	if (!ms_add_ok(b->len, extra, &need) || need > b->max)
		return MS_ERR_RANGE;
	if (need <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 64;
	while (cap < need)
		cap = cap > b->max / 2 ? b->max : cap * 2;
	return buf_set_cap(b, cap);
}

int
ms_buf_presize(ms_buf *b, size_t n)
{
	if (n <= b->cap)
		return 0;
	if (n > b->max)
		return MS_ERR_RANGE;
	return buf_set_cap(b, n);
}

int
ms_buf_append(ms_buf *b, const void *p, size_t n)
{
	if (n == 0)
		return 0;
	int rc = ms_buf_reserve(b, n);
	if (rc)
		return rc;
	memcpy(b->data + b->len, p, n);
	b->len += n;
	return 0;
}

int
ms_buf_append_u8(ms_buf *b, uint8_t v)
{
	return ms_buf_append(b, &v, 1);
}

int
ms_buf_append_le32(ms_buf *b, uint32_t v)
{
	uint8_t t[4];
	ms_put_le32(t, v);
	return ms_buf_append(b, t, 4);
}

int
ms_buf_append_le64(ms_buf *b, uint64_t v)
{
	uint8_t t[8];
	ms_put_le64(t, v);
	return ms_buf_append(b, t, 8);
}

int
ms_buf_append_uvarint(ms_buf *b, uint64_t v)
{
	uint8_t t[10];
	return ms_buf_append(b, t, (size_t)(ms_put_uvarint(t, v) - t));
}

int
ms_buf_append_svarint(ms_buf *b, int64_t v)
{
	uint64_t z = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
	return ms_buf_append_uvarint(b, z);
}

/* ---- ms_rd ---- */

/* ---- ms_arena ---- */

struct ms_arena_chunk {
	ms_arena_chunk *next;
	size_t size, used;
	_Alignas(16) uint8_t data[];
};

void
ms_arena_init(ms_arena *a, ms_mem *mem, size_t chunk, size_t keep)
{
	memset(a, 0, sizeof(*a));
	a->mem = mem;
	a->chunk = chunk ? chunk : (64u << 10);
	a->keep = keep;
}

static void
chunk_free(ms_arena *a, ms_arena_chunk *c)
{
	ms_mem_free(a->mem, c, sizeof(*c) + c->size);
}

/* Emptied chunk c: a spare if it is standard and there is room, else
 * freed. */
static void
chunk_retire(ms_arena *a, ms_arena_chunk *c)
{
	a->cap_bytes -= c->size;
	if (c->size == a->chunk && a->nspare < a->keep) {
		c->next = a->spare;
		a->spare = c;
		a->nspare++;
	} else {
		chunk_free(a, c);
	}
}

void
ms_arena_charge(ms_arena *a, size_t n, size_t align)
{
	if (align == 0)
		align = 1;
	size_t off = (a->vused + align - 1) & ~(align - 1);
	if (a->vsize && off <= a->vsize && n <= a->vsize - off) {
		a->used_bytes += off + n - a->vused;
		a->vused = off + n;
		return;
	}
	a->vsize = n > a->chunk ? n : a->chunk;
	a->vused = n;
	a->used_bytes += n;
}

void *
ms_arena_alloc(ms_arena *a, size_t n, size_t align)
{
	ms_arena_chunk *c = a->head;
	if (align == 0)
		align = 1;
	if (c) {
		size_t off = (c->used + align - 1) & ~(align - 1);
		if (off <= c->size && n <= c->size - off) {
			ms_arena_charge(a, n, align);
			c->used = off + n;
			return c->data + off;
		}
	}
	size_t size = n > a->chunk ? n : a->chunk, total;
	if (size == a->chunk && a->spare) {
		c = a->spare;
		a->spare = c->next;
		a->nspare--;
		a->reused_bytes += size;
	} else {
		if (!ms_add_ok(size, sizeof(*c), &total))
			return NULL;
		c = ms_mem_alloc(a->mem, total);
		if (!c)
			return NULL;
		c->size = size;
		a->cold_bytes += size;
	}
	a->cap_bytes += size;
	ms_arena_charge(a, n, align);
	c->used = n;
	c->next = a->head;
	a->head = c;
	return c->data;
}

void *
ms_arena_dup(ms_arena *a, const void *p, size_t n, size_t align)
{
	void *d = ms_arena_alloc(a, n, align);
	if (d && n)
		memcpy(d, p, n);
	return d;
}

char *
ms_arena_strdup(ms_arena *a, const char *s)
{
	return s ? ms_arena_dup(a, s, strlen(s) + 1, 1) : NULL;
}

void
ms_arena_trim(ms_arena *a, ms_arena_mark mark)
{
	if (!mark.chunk)
		return; /* the arena was empty: all is newer */
	ms_arena_chunk *old = mark.chunk->next;
	mark.chunk->next = NULL;
	while (old) {
		ms_arena_chunk *next = old->next;
		chunk_retire(a, old);
		old = next;
	}
}

void
ms_arena_reset(ms_arena *a)
{
	while (a->head) {
		ms_arena_chunk *c = a->head;
		a->head = c->next;
		chunk_retire(a, c);
	}
	a->vused = a->vsize = 0;
}

void
ms_arena_release(ms_arena *a)
{
	ms_arena_reset(a);
	while (a->spare) {
		ms_arena_chunk *c = a->spare;
		a->spare = c->next;
		chunk_free(a, c);
	}
	a->nspare = 0;
}

uint8_t
ms_rd_u8(ms_rd *r)
{
	const uint8_t *p = ms_rd_bytes(r, 1);
	return p ? p[0] : 0;
}

uint32_t
ms_rd_le32(ms_rd *r)
{
	const uint8_t *p = ms_rd_bytes(r, 4);
	return p ? ms_le32(p) : 0;
}

uint64_t
ms_rd_le64(ms_rd *r)
{
	const uint8_t *p = ms_rd_bytes(r, 8);
	return p ? ms_le64(p) : 0;
}

uint64_t
ms__rd_uvarint_slow(ms_rd *r)
{
	uint64_t v = 0;
	for (unsigned shift = 0; shift < 64; shift += 7) {
		const uint8_t *p = ms_rd_bytes(r, 1);
		if (!p)
			return 0;
		v |= (uint64_t)(*p & 0x7f) << shift;
		if (!(*p & 0x80))
			return v;
	}
	r->bad = true;
	return 0;
}

const uint8_t *
ms_rd_bytes(ms_rd *r, size_t n)
{
	if (r->bad || n > r->left) {
		r->bad = true;
		return NULL;
	}
	const uint8_t *p = r->p;
	r->p += n;
	r->left -= n;
	return p;
}
