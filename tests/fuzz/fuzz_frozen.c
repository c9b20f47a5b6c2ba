/*
 * fuzz_frozen.c - libFuzzer harness for the frozen-merge description
 * reader (replay/freeze.c, ms__frozen_read): each input is written as
 * DIR/frozen.txt and read back.
 *
 * What must hold: a refusal carries a message and leaves *f released; an
 * accepted file describes a merge (at least two distinct non-zero inputs,
 * one for finalize, each with a depth; frontier not after now; seq and
 * cpus at least 1; the selection fingerprint matching the inputs) and
 * what its picker saw (pick epoch not after the frozen one, pass >= 1,
 * window 2..64, multiple > 0; claimed, quarantined and unseen parts
 * distinct, non-zero, none an input).
 */
#include "frozen.h"
#include "ms_picker.h"

#include "fuzz_file.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 65536)
		return 0;
	fuzz_file_write("frozen", MS_FROZEN_FILE, data, size);
	ms__frozen f;
	ms_errbuf eb = { "" };
	int rc = ms__frozen_read(fuzz_dir, &f, &eb);
	if (rc != 0) {
		if (rc > 0 || !eb.msg[0] || f.ids || f.ninputs)
			abort();
		ms__frozen_release(&f);
		return 0;
	}
	if (f.ninputs < (f.finalize ? 1u : 2u) || !f.ids || !f.depths ||
	    !f.ledgers || f.frontier_ns > f.now_ns || f.seq == 0 ||
	    f.cpus == 0 || f.output_id == 0 || f.format != MS_FROZEN_FORMAT)
		abort();
	for (size_t i = 0; i < f.ninputs; i++) {
		if (f.ids[i] == 0)
			abort();
		for (size_t j = 0; j < i; j++)
			if (f.ids[i] == f.ids[j])
				abort();
	}
	if (ms_pick_fp_add(0, f.ids, f.ninputs) != f.selection_fp)
		abort();
	if (f.pick_epoch > f.epoch || f.pass == 0 ||
	    f.picker_max_parts < 2 || f.picker_max_parts > 64 ||
	    !(f.picker_multiplier > 0))
		abort();
	const ms__idlist *lists[3] = { &f.claimed, &f.quarantined, &f.unseen };
	for (int l = 0; l < 3; l++)
		for (size_t i = 0; i < lists[l]->n; i++) {
			uint64_t id = lists[l]->ids[i];
			if (id == 0)
				abort();
			for (size_t j = 0; j < i; j++)
				if (lists[l]->ids[j] == id)
					abort();
			for (size_t j = 0; j < f.ninputs; j++)
				if (f.ids[j] == id)
					abort();
		}
	ms__frozen_release(&f);
	ms__frozen_release(&f); /* a released struct may be released again */
	return 0;
}
