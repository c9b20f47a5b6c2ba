/*
 * fuzz_checkpoint_state.c - libFuzzer harness for the checkpoint state
 * file decoder (core/checkpoint_state.c, ms_checkpoint_decode; layout
 * "Checkpoint" in core/FORMAT.md).
 *
 * The input is the file's bytes; with the low bit of the first byte set
 * its XXH64 tail is resealed first, so the mutations reach the checks
 * behind the checksum. What must hold, whatever the bytes:
 *  - a refused file carries a message and leaves the output empty;
 *  - an accepted file encodes back to exactly the same bytes (nothing is
 *    read that is not written, nothing is dropped), its part IDs ascend
 *    below next_id and its quarantined IDs ascend.
 */
#define XXH_INLINE_ALL
#include "checkpoint_int.h"

#include <xxhash.h>

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
check_accepted(const ms_checkpoint *c, const uint8_t *p, size_t n)
{
	ms_buf b;
	ms_buf_init(&b, NULL, 0);
	if (ms__ck_encode(c, &b) != 0 || b.len != n ||
	    memcmp(b.data, p, n) != 0)
		abort();
	ms_buf_release(&b);
	for (size_t i = 0; i < c->nparts; i++)
		if (!c->parts[i] || c->parts[i] >= c->next_id ||
		    (i && c->parts[i] <= c->parts[i - 1]))
			abort();
	for (size_t i = 1; i < c->engine.nquarantined; i++)
		if (c->engine.quarantined[i] <= c->engine.quarantined[i - 1])
			abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	bool reseal = data[0] & 1;
	size_t n = size - 1;
	uint8_t *p = malloc(n ? n : 1);
	if (!p)
		return 0;
	memcpy(p, data + 1, n);
	if (reseal && n >= 8)
		ms_put_le64(p + n - 8, XXH64(p, n - 8, 0));
	ms_checkpoint c;
	ms_errbuf eb = { { 0 } };
	int rc = ms_checkpoint_decode(p, n, "state", &c, &eb);
	if (rc) {
		if (!eb.msg[0] || c.parts || c.user || c.engine.quarantined ||
		    c.engine.fails)
			abort();
	} else {
		check_accepted(&c, p, n);
	}
	ms_checkpoint_release(&c);
	free(p);
	return 0;
}
