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
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memfd_create */
#endif
#include "fx_int.h"

#include <inttypes.h>
#include <sys/mman.h>
#include <xxhash.h>

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
	int rc = ms__fx_blocks_open_fd(&s, fd, "fuzz", fact, &eb);
	if ((rc == 0) != (parse_rc == 0))
		abort();
	if (rc) {
		if (!eb.msg[0] || s)
			abort();
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
