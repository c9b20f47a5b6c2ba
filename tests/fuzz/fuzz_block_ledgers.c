/*
 * fuzz_block_ledgers.c - libFuzzer harness for the fixture's block ledger
 * file (fixtures/blkled.c, ms__fx_blocks_parse): the input is the file's
 * bytes. A refusal carries a message; an accepted file hands out its
 * entries in strictly ascending key order, each with one row count for
 * the three kinds, and as many as its size says; written back from what
 * was handed out (ms__fx_blocks_write), it is the same bytes.
 */
#include "fx_int.h"

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

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char dir[64];
	fx_blocks b = { 0 };
	ms_errbuf eb = { { 0 } };
	int rc = ms__fx_blocks_parse(data, size, take, &b, &eb);

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
