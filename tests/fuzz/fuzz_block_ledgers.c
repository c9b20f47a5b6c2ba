/*
 * fuzz_block_ledgers.c - libFuzzer harness for the fixture's block ledger
 * file (fixtures/blkled.c, ms__fx_blocks_parse): the input is the file's
 * bytes. A refusal carries a message; an accepted file hands out its
 * entries in strictly ascending key order, each with one row count for
 * the three kinds, and as many as its size says; written back from what
 * was handed out (ms__fx_blocks_write), it is the same bytes. The same
 * bytes opened for lookups (ms__fx_blocks_open_fd, with the fact they
 * hash to) are accepted exactly when the parse accepts them, and then
 * answer every entry by its key with the ledgers the parse handed out,
 * a key before the first with MS_ERR_NOTFOUND, and hand out every entry
 * again in order (ms__fx_blocks_each).
 *
 * Batched lookups (ms_fixture_blocks_get_many) are checked against
 * single ones (ms_fixture_blocks_get) as the reference: keys drawn from
 * the entries and beside them (absent ones, below the first, above the
 * last), with repeats, sorted; each key is answered once, in order, as
 * its single lookup answers it, in no more reads than the distinct
 * groups the keys fall in; keys out of order are refused before any
 * answer; an answer that stops the walk stops it there. The same again
 * after a byte of one entry changed (that group's keys MS_ERR_CORRUPT)
 * and after the file was cut short (the groups past the end MS_ERR_IO,
 * the others still answered). The keys come from a generator seeded
 * with the input's hash, so the input stays the file's bytes.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memfd_create */
#endif
#include "fx_int.h"

#include <inttypes.h>
#include <sys/mman.h>
#include <xxhash.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
take(void *arg, uint64_t lo, uint64_t hi, const ms_ledger_set *led)
{
	fx_blocks *b = arg;
	if (b->n && (hi < b->e[b->n - 1].hi ||
	             (hi == b->e[b->n - 1].hi && lo <= b->e[b->n - 1].lo)))
		abort();
	for (int k = 1; k < MS_KIND_COUNT; k++)
		if (led->kind[k].rows != led->kind[0].rows)
			abort();
	return ms__fx_blocks_add(b, lo, hi, led);
}

/* ms__fx_blocks_each's entries against what the parse handed out. */
typedef struct again {
	const fx_blocks *b;
	size_t i;
} again;

static int
take_again(void *arg, uint64_t lo, uint64_t hi, const ms_ledger_set *led)
{
	again *a = arg;
	if (a->i >= a->b->n)
		abort();
	const fx_blk *e = &a->b->e[a->i++];
	if (e->lo != lo || e->hi != hi || !ms_ledger_set_equal(&e->led, led))
		abort();
	return 0;
}

/* splitmix64: the batched lookups' keys, from the input's hash. */
static uint64_t
next_rand(uint64_t *st)
{
	uint64_t x = (*st += 0x9e3779b97f4a7c15ull);
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static int
key_cmp(const void *x, const void *y)
{
	const ms_fixture_block_key *a = x, *b = y;
	if (a->hi != b->hi)
		return a->hi < b->hi ? -1 : 1;
	return (a->lo > b->lo) - (a->lo < b->lo);
}

#define MANY_MAX 256u

/* What a batched lookup answered, checked as it answers. */
typedef struct many {
	const ms_fixture_block_key *k;
	size_t n, i;
	int want_rc[MANY_MAX];
	ms_ledger_set want[MANY_MAX];
	size_t stop; /* answer number that returns nonzero; SIZE_MAX: none */
} many;

static int
take_many(void *arg, const ms_fixture_block_key *k, int rc,
          const ms_ledger_set *led)
{
	many *m = arg;
	/* In order, each key once, its tag untouched. */
	if (m->i >= m->n || k != &m->k[m->i] || k->tag != m->i)
		abort();
	if (rc != m->want_rc[m->i] || (rc == 0) != (led != NULL) ||
	    (led && !ms_ledger_set_equal(led, &m->want[m->i])))
		abort();
	return m->i++ == m->stop ? 7 : 0;
}

/* The group (entry number / 16) a key falls in, or SIZE_MAX below the
 * first entry. */
static size_t
key_group(const fx_blocks *b, const ms_fixture_block_key *k)
{
	size_t l = 0, r = b->n;
	while (l < r) {
		size_t mid = l + (r - l) / 2;
		const ms_fixture_block_key e = { .lo = b->e[mid].lo,
			                         .hi = b->e[mid].hi };
		if (key_cmp(&e, k) <= 0)
			l = mid + 1;
		else
			r = mid;
	}
	return l ? (l - 1) / 16 : SIZE_MAX;
}

/* Keys k (n, at most MANY_MAX) of store s (b: its entries; cut: its
 * file was cut short) looked up batched against single lookups (see
 * the top). */
static void
check_many(const ms_fixture_blocks *s, const fx_blocks *b,
           ms_fixture_block_key *k, size_t n, bool cut, uint64_t *st)
{
	static many m;
	qsort(k, n, sizeof(*k), key_cmp);
	size_t groups = 0, last = SIZE_MAX;
	for (size_t i = 0; i < n; i++) {
		k[i].tag = (uint32_t)i;
		m.want_rc[i] =
		        ms_fixture_blocks_get(s, k[i].lo, k[i].hi, &m.want[i]);
		size_t g = key_group(b, &k[i]);
		if (g != SIZE_MAX && g != last)
			groups++;
		last = g;
	}
	m.k = k;
	m.n = n;
	m.i = 0;
	m.stop = SIZE_MAX;
	uint64_t r0 = ms_fixture_blocks_reads(s);
	if (ms_fixture_blocks_get_many(s, k, n, take_many, &m) != 0 || m.i != n)
		abort();
	/* Each group the keys fall in read once at the most, several in one
	 * read; when such a read fails (the file cut short), each of its
	 * groups alone again: at most one more read a group. */
	uint64_t reads = ms_fixture_blocks_reads(s) - r0;
	if (reads > (cut ? 2 * groups : groups))
		abort();
	/* Stopped by an answer: its value, nothing after it. */
	if (n) {
		m.i = 0;
		m.stop = (size_t)(next_rand(st) % n);
		if (ms_fixture_blocks_get_many(s, k, n, take_many, &m) != 7 ||
		    m.i != m.stop + 1)
			abort();
	}
	/* Two distinct neighbours swapped: refused, nothing answered. */
	for (size_t i = 1; i < n; i++) {
		if (!key_cmp(&k[i - 1], &k[i]))
			continue;
		ms_fixture_block_key t = k[i - 1];
		k[i - 1] = k[i];
		k[i] = t;
		m.i = 0;
		m.stop = SIZE_MAX;
		if (ms_fixture_blocks_get_many(s, k, n, take_many, &m) !=
		            MS_ERR_INVAL ||
		    m.i != 0)
			abort();
		k[i] = k[i - 1];
		k[i - 1] = t;
		break;
	}
}

/* Keys for check_many: entries of b, keys beside them, below and above
 * the file, and repeats; their number. */
static size_t
draw_keys(const fx_blocks *b, ms_fixture_block_key *k, uint64_t *st)
{
	size_t n = (size_t)(next_rand(st) % MANY_MAX) + 1;
	for (size_t i = 0; i < n; i++) {
		uint64_t r = next_rand(st);
		const fx_blk *e = b->n ? &b->e[r % b->n] : NULL;
		switch (e ? (r >> 32) % 6 : 5) {
		case 0:
		case 1: /* an entry */
			k[i] = (ms_fixture_block_key){ .lo = e->lo,
				                       .hi = e->hi };
			break;
		case 2: /* beside one */
			k[i] = (ms_fixture_block_key){ .lo = e->lo + 1,
				                       .hi = e->hi };
			break;
		case 3:
			k[i] = (ms_fixture_block_key){ .lo = e->lo - 1,
				                       .hi = e->hi };
			break;
		case 4: /* a repeat */
			k[i] = i ? k[r % i]
			         : (ms_fixture_block_key){ .lo = e->lo,
				                           .hi = e->hi };
			break;
		default: /* anywhere, the ends of the key space too */
			k[i] = (ms_fixture_block_key){
				.lo = r & 1 ? next_rand(st) : 0,
				.hi = r & 2 ? next_rand(st)
				            : (r & 4 ? UINT64_MAX : 0),
			};
		}
	}
	return n;
}

/* The bytes opened as a store (see the top); b: what the parse handed
 * out when parse_rc is 0. */
static void
check_store(const uint8_t *data, size_t size, int parse_rc, const fx_blocks *b)
{
	int fd = memfd_create("fuzz-blk", MFD_CLOEXEC);
	if (fd < 0)
		abort();
	for (size_t off = 0; off < size;) {
		ssize_t got = write(fd, data + off, size - off);
		if (got <= 0)
			abort();
		off += (size_t)got;
	}
	uint64_t count = 0;
	for (int i = 15; i >= 8 && size >= 16; i--)
		count = count << 8 | data[i];
	XXH128_hash_t h = XXH3_128bits(data, size);
	char fact[64];
	snprintf(fact, sizeof(fact), "%" PRIu64 ":%016llx%016llx", count,
	         (unsigned long long)h.high64, (unsigned long long)h.low64);
	ms_fixture_blocks *s = NULL;
	ms_errbuf eb = { { 0 } };
	int wfd = dup(fd); /* the store owns fd */
	int rc = ms__fx_blocks_open_fd(&s, fd, "fuzz", fact, &eb);
	if ((rc == 0) != (parse_rc == 0))
		abort();
	if (rc) {
		if (!eb.msg[0] || s)
			abort();
		if (wfd >= 0)
			close(wfd);
		return;
	}
	if (ms_fixture_blocks_count(s) != b->n)
		abort();
	for (size_t i = 0; i < b->n; i++) {
		ms_ledger_set led;
		if (ms_fixture_blocks_get(s, b->e[i].lo, b->e[i].hi, &led) !=
		            0 ||
		    !ms_ledger_set_equal(&led, &b->e[i].led))
			abort();
	}
	ms_ledger_set led;
	if (b->n && (b->e[0].lo || b->e[0].hi) &&
	    ms_fixture_blocks_get(s, 0, 0, &led) != MS_ERR_NOTFOUND)
		abort();
	again a = { b, 0 };
	if (ms__fx_blocks_each(s, take_again, &a, &eb) != 0 || a.i != b->n)
		abort();

	/* Batched lookups: as they are, after one entry's byte changed, and
	 * after the file was cut short (wfd: the same file, written). */
	static ms_fixture_block_key k[MANY_MAX];
	uint64_t st = XXH3_64bits(data, size);
	check_many(s, b, k, draw_keys(b, k, &st), false, &st);
	if (b->n && wfd >= 0) {
		uint64_t r = next_rand(&st);
		off_t at = (off_t)(16 + (r % b->n) * 68 + (r >> 32) % 68);
		uint8_t x;
		if (pread(wfd, &x, 1, at) != 1)
			abort();
		x ^= (uint8_t)(1u << (r >> 40) % 8);
		if (pwrite(wfd, &x, 1, at) != 1)
			abort();
		check_many(s, b, k, draw_keys(b, k, &st), false, &st);
		if (ftruncate(wfd, (off_t)(16 + next_rand(&st) % (b->n * 68))))
			abort();
		check_many(s, b, k, draw_keys(b, k, &st), true, &st);
	}
	if (wfd >= 0)
		close(wfd);
	ms_fixture_blocks_close(s);
}

/* Where accepted files are written back; removed at exit. */
static char dir[64];

static void
remove_dir(void)
{
	char path[128];
	snprintf(path, sizeof(path), "%s/%s", dir, FX_BLOCKS_FILE);
	unlink(path);
	rmdir(dir);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fx_blocks b = { 0 };
	ms_errbuf eb = { { 0 } };
	int rc = ms__fx_blocks_parse(data, size, take, &b, &eb);

	check_store(data, size, rc, &b);
	if (rc) {
		if (!eb.msg[0])
			abort();
		ms__fx_blocks_free(&b);
		return 0;
	}
	if (size != 16 + b.n * 68)
		abort();
	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "/tmp/msfuzz-blk-%d", (int)getpid());
		if (mkdir(dir, 0700) != 0)
			abort();
		atexit(remove_dir);
	}
	char fact[64], path[128];
	if (ms__fx_blocks_write(dir, &b, fact, &eb) != 0)
		abort();
	snprintf(path, sizeof(path), "%s/%s", dir, FX_BLOCKS_FILE);
	FILE *f = fopen(path, "rb");
	uint8_t *back = malloc(size + 1);
	if (!f || !back || fread(back, 1, size + 1, f) != size ||
	    memcmp(back, data, size) != 0)
		abort();
	fclose(f);
	free(back);
	ms__fx_blocks_free(&b);
	return 0;
}
