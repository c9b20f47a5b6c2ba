/*
 * fuzz_oracle_table.c - libFuzzer harness for the reader of the verdict
 * oracle's spilled table (replay/oracle.c, ms__oracle_unspill): each
 * input is a mode byte and the table's file, written and read back. With
 * the low bit of the mode set the file's XXH3-64 tail is resealed first,
 * so the mutations reach the checks behind the checksum (the seeds,
 * fuzz_table_seeds, are tables ms__oracle_spill wrote).
 *
 * What must hold: the file is gone after the read either way; a refusal
 * leaves no table, o->ok false and a message naming the file; an
 * accepted table is in strict key order with every entry's blocks inside
 * it, finds each of its own keys, and spills and reads back to the same
 * table.
 */
#include "replay_int.h"

#include "fuzz_file.h"

#include <xxhash.h>

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool
key_less(const ms__oracle_ent *a, const ms__oracle_ent *b)
{
	return a->key_hi != b->key_hi ? a->key_hi < b->key_hi
	                              : a->key_lo < b->key_lo;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 1 << 20)
		return 0;
	size_t n = size - 1;
	uint8_t *p = malloc(n ? n : 1);
	if (!p)
		abort();
	memcpy(p, data + 1, n);
	if ((data[0] & 1) && n >= 8)
		ms_put_le64(p + n - 8, XXH3_64bits(p, n - 8));
	fuzz_file_write("oracle", MS__ORACLE_SPILL, p, n);
	free(p);
	ms__oracle o;
	memset(&o, 0, sizeof(o));
	o.ok = true;
	snprintf(o.spill, sizeof(o.spill), "%s", fuzz_file);
	int rc = ms__oracle_unspill(&o);
	if (access(fuzz_file, F_OK) == 0 || o.spill[0])
		abort();
	if (rc != 0) {
		if (rc > 0 || o.ok || o.ent || o.frags || o.nent ||
		    !strstr(o.why, fuzz_file))
			abort();
		ms__oracle_release(&o);
		return 0;
	}
	if (!o.ok || !o.ent || !o.frags)
		abort();
	for (size_t i = 0; i < o.nent; i++) {
		const ms__oracle_ent *e = &o.ent[i];
		if ((i && !key_less(&o.ent[i - 1], e)) || e->frag0 > o.nfrags ||
		    e->nfrags > o.nfrags - e->frag0)
			abort();
	}
	/* Spilled again and read back: the same table. */
	ms__oracle again = o;
	again.ent = malloc(o.nent * sizeof(*o.ent) + 1);
	again.frags = malloc(o.nfrags * sizeof(*o.frags) + 1);
	if (!again.ent || !again.frags)
		abort();
	memcpy(again.ent, o.ent, o.nent * sizeof(*o.ent));
	memcpy(again.frags, o.frags, o.nfrags * sizeof(*o.frags));
	again.drop_found = NULL;
	if (ms__oracle_spill(&again, fuzz_file) != 0 ||
	    ms__oracle_resident_bytes(&again) != 0 ||
	    ms__oracle_unspill(&again) != 0 || again.nent != o.nent ||
	    again.nfrags != o.nfrags ||
	    memcmp(again.ent, o.ent, o.nent * sizeof(*o.ent)) != 0 ||
	    memcmp(again.frags, o.frags, o.nfrags * sizeof(*o.frags)) != 0)
		abort();
	ms__oracle_release(&again);
	ms__oracle_release(&o);
	return 0;
}
