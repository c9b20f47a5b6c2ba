/*
 * fuzz_manifest.c - libFuzzer harness for the fixture manifest reader: the
 * input is taken as the bytes of a manifest database (opened in memory,
 * read-only) and read with every validation the fixture's users rely on.
 * Any outcome but a crash, leak, hang or sanitizer report is fine; a
 * refusal must come with a message, and an accepted manifest must be
 * internally consistent (slots 0..n-1, three parts per slot).
 */
#include "fx_int.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fx_manifest *mf = NULL;
	ms_errbuf eb = { { 0 } };
	int rc = ms__fx_manifest_read_mem(data, size, &mf, &eb);

	if (rc) {
		if (mf || !eb.msg[0])
			abort();
		return 0;
	}
	for (size_t i = 0; i < mf->nsched; i++) {
		if (mf->sched[i].slot != i || mf->parts[i].id == 0)
			abort();
	}
	{
		char h[33];

		ms__fx_schedule_hash(mf->sched, mf->nsched, h);
		ms__fx_topology_hash(mf->parts, mf->nsched, h);
	}
	ms__fx_manifest_free(mf);
	return 0;
}
