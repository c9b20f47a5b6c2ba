/*
 * recent.c - the replay's ring of recent merges: what the screen's event
 * list and the freeze read of the last MS_REPLAY_RECENT merges, kept in
 * memory that grows with the records held rather than with the ring's
 * capacity (a whole event is 5 KiB, most of it zeros; its 32 inputs' room
 * 2.3 KiB, most merges have fewer).
 *
 * Design:
 *  1. A record is the event's bytes, packed, then its kept inputs' bytes,
 *     packed (pack): runs of 4 or more zero bytes are left out. Unpacking
 *     gives back every byte, padding included: the event read is the one
 *     pushed but for its inputs pointer, which the reader sets.
 *  2. Records are appended in push order to the tail chunk, never across
 *     two chunks; when one does not fit, the tail moves to another chunk
 *     (a spare one first, else the block's next never-used one). The oldest
 *     record leaves when a push finds the ring full, the newest when a seek
 *     goes back (ms__recent_drop_newest rewinds its chunk). A chunk none
 *     of whose records is held any more becomes spare, unless it is the
 *     tail (then the ring is empty and the tail starts over).
 *  3. Every chunk in use but the oldest and the tail holds only records
 *     held and was left with less room than a record at its largest
 *     (MS__RECENT_REC_MAX, W): at least C / W records each (C the chunk's
 *     bytes). The ring holds at most MS_REPLAY_RECENT (R) records, so at
 *     most R / (C / W) + 2 chunks are ever in use at once: the block has
 *     that many (MS__RECENT_NCHUNKS) and a push always finds one.
 *  4. The block is mapped at init and not touched there (ms__big_alloc,
 *     no huge pages): its pages become resident as records are written in
 *     them. Spare chunks are taken before never-used ones, so the bytes
 *     ever written (`touched`) stay near the most bytes held at once, plus
 *     a chunk at each end.
 */
#include "replay_int.h"

#include <string.h>
#include <sys/mman.h>

_Static_assert(sizeof(ms_ev_merge) <= UINT16_MAX &&
                       MS_REPLAY_RECENT_INPUTS * sizeof(ms_ev_input) <=
                               UINT16_MAX,
               "pack counts bytes in 16 bits");
_Static_assert(MS__RECENT_CHUNK >= MS__RECENT_REC_MAX,
               "a chunk holds the largest record");
_Static_assert(MS__RECENT_BLOCK <= UINT32_MAX, "block offsets fit in 32 bits");

/* ---- packing ------------------------------------------------------------ */

static size_t
zeros_at(const unsigned char *s, size_t i, size_t n)
{
	size_t k = i;
	while (k < n && !s[k])
		k++;
	return k - i;
}

static void
put16(unsigned char *d, size_t v)
{
	d[0] = (unsigned char)(v & 0xff);
	d[1] = (unsigned char)(v >> 8);
}

static size_t
get16(const unsigned char *s)
{
	return (size_t)s[0] | (size_t)s[1] << 8;
}

/* Pack the n bytes of src (n <= UINT16_MAX) at dst as tokens: 2 bytes of
 * zeros left out, 2 bytes of literal length, the literal. A literal ends
 * at a run of 4 or more zeros, so every token but the first leaves out
 * at least its own 4 bytes: the packed size, returned, is at most n + 4.
 * No token is empty. dst NULL: only the size. */
static size_t
pack(unsigned char *dst, const unsigned char *src, size_t n)
{
	size_t o = 0;
	for (size_t i = 0; i < n;) {
		size_t z = zeros_at(src, i, n);
		size_t b = i + z, e = b;
		while (e < n) {
			if (src[e]) {
				e++;
				continue;
			}
			size_t k = zeros_at(src, e, n);
			if (k >= 4)
				break;
			e += k;
		}
		if (dst) {
			put16(dst + o, z);
			put16(dst + o + 2, e - b);
			memcpy(dst + o + 4, src + b, e - b);
		}
		o += 4 + (e - b);
		i = e;
	}
	return o;
}

/* The first n bytes of what pack packed at src, into dst. */
static void
unpack(unsigned char *dst, const unsigned char *src, size_t n)
{
	for (size_t o = 0; o < n;) {
		size_t z = get16(src), l = get16(src + 2);
		src += 4;
		if (z > n - o)
			z = n - o;
		memset(dst + o, 0, z);
		o += z;
		size_t c = l < n - o ? l : n - o;
		memcpy(dst + o, src, c);
		o += c;
		src += l;
	}
}

/* ---- the ring ------------------------------------------------------------ */

int
ms__recent_init(ms__recent *rg)
{
	memset(rg, 0, sizeof(*rg));
	rg->block = ms__big_alloc(MS__RECENT_BLOCK);
	if (!rg->block)
		return MS_ERR_NOMEM;
#ifdef MADV_NOHUGEPAGE
	/* Where transparent huge pages are always on, a record's first byte
	 * would make 2 MiB resident. */
	(void)madvise(rg->block, MS__RECENT_BLOCK, MADV_NOHUGEPAGE);
#endif
	rg->fresh = 1; /* chunk 0 is the tail */
	return 0;
}

void
ms__recent_release(ms__recent *rg)
{
	ms__big_free(rg->block, MS__RECENT_BLOCK);
	memset(rg, 0, sizeof(*rg));
}

static size_t
slot_of(const ms__recent *rg, size_t i)
{
	return (rg->head + MS_REPLAY_RECENT - rg->n + i) % MS_REPLAY_RECENT;
}

static uint32_t
chunk_of(const ms__recent_slot *s)
{
	return (uint32_t)(s->off / MS__RECENT_CHUNK);
}

/* Another chunk for the tail (design 3: there is one). */
static uint32_t
chunk_take(ms__recent *rg)
{
	uint32_t c = rg->nspare ? rg->spare[--rg->nspare] : rg->fresh++;
	rg->chunk[c].used = 0;
	rg->chunk[c].live = 0;
	return c;
}

static void
drop_oldest(ms__recent *rg)
{
	const ms__recent_slot *s = &rg->slot[slot_of(rg, 0)];
	uint32_t c = chunk_of(s);
	rg->n--;
	rg->live_bytes -= s->size;
	if (--rg->chunk[c].live)
		return;
	if (c == rg->tail)
		rg->chunk[c].used = 0; /* the ring is empty */
	else
		rg->spare[rg->nspare++] = c;
}

void
ms__recent_push(ms__recent *rg, const ms_ev_merge *m)
{
	if (!rg->block)
		return;
	if (rg->n == MS_REPLAY_RECENT)
		drop_oldest(rg);
	const unsigned char *ev = (const unsigned char *)m;
	const unsigned char *in = (const unsigned char *)m->inputs;
	size_t nin = in ? m->ninputs : 0;
	if (nin > MS_REPLAY_RECENT_INPUTS)
		nin = MS_REPLAY_RECENT_INPUTS;
	size_t in_bytes = nin * sizeof(*m->inputs);
	size_t ev_len = pack(NULL, ev, sizeof(*m));
	size_t len = ev_len + pack(NULL, in, in_bytes);
	size_t size = (len + 7) & ~(size_t)7;
	if (MS__RECENT_CHUNK - rg->chunk[rg->tail].used < size)
		rg->tail = chunk_take(rg);
	ms__recent_chunk *t = &rg->chunk[rg->tail];
	size_t off = rg->tail * MS__RECENT_CHUNK + t->used;
	pack(rg->block + off, ev, sizeof(*m));
	pack(rg->block + off + ev_len, in, in_bytes);
	ms__recent_slot *s = &rg->slot[rg->head];
	s->off = (uint32_t)off;
	s->size = (uint32_t)size;
	s->ev_len = (uint16_t)ev_len;
	s->ninputs = (uint16_t)nin;
	t->used += (uint32_t)size;
	t->live++;
	rg->head = (rg->head + 1) % MS_REPLAY_RECENT;
	rg->n++;
	rg->live_bytes += size;
	if (off + len > rg->touched)
		rg->touched = off + len;
}

void
ms__recent_get(const ms__recent *rg, size_t i, ms_ev_merge *out,
               ms_ev_input *inputs)
{
	const ms__recent_slot *s = &rg->slot[slot_of(rg, i)];
	const unsigned char *p = rg->block + s->off;
	unpack((unsigned char *)out, p, sizeof(*out));
	out->inputs = NULL;
	if (!inputs)
		return;
	size_t kept = out->ninputs < MS_REPLAY_RECENT_INPUTS
	                      ? out->ninputs
	                      : MS_REPLAY_RECENT_INPUTS;
	unpack((unsigned char *)inputs, p + s->ev_len,
	       s->ninputs * sizeof(*inputs));
	if (kept > s->ninputs)
		memset(inputs + s->ninputs, 0,
		       (kept - s->ninputs) * sizeof(*inputs));
	out->inputs = inputs;
}

uint64_t
ms__recent_seq(const ms__recent *rg, size_t i)
{
	const ms__recent_slot *s = &rg->slot[slot_of(rg, i)];
	unsigned char b[offsetof(ms_ev_merge, seq) + sizeof(uint64_t)];
	unpack(b, rg->block + s->off, sizeof(b));
	uint64_t seq;
	memcpy(&seq, b + offsetof(ms_ev_merge, seq), sizeof(seq));
	return seq;
}

void
ms__recent_drop_newest(ms__recent *rg)
{
	/* The newest record is the last one written in the tail. */
	const ms__recent_slot *s = &rg->slot[slot_of(rg, rg->n - 1)];
	ms__recent_chunk *t = &rg->chunk[rg->tail];
	rg->head = (rg->head + MS_REPLAY_RECENT - 1) % MS_REPLAY_RECENT;
	rg->n--;
	rg->live_bytes -= s->size;
	t->used = s->off - rg->tail * (uint32_t)MS__RECENT_CHUNK;
	if (--t->live)
		return;
	if (!rg->n) {
		t->used = 0;
		return;
	}
	/* The tail is spare now: it goes back to the newest record's chunk,
	 * whose records end with it. */
	rg->spare[rg->nspare++] = rg->tail;
	const ms__recent_slot *nw = &rg->slot[slot_of(rg, rg->n - 1)];
	rg->tail = chunk_of(nw);
	rg->chunk[rg->tail].used =
	        nw->off + nw->size - rg->tail * (uint32_t)MS__RECENT_CHUNK;
}

size_t
ms__recent_bytes(const ms__recent *rg, size_t *live)
{
	if (live)
		*live = rg->live_bytes;
	return rg->touched;
}
