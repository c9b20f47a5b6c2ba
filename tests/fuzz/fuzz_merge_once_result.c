/*
 * fuzz_merge_once_result.c - libFuzzer harness for the result file a
 * merge-once repetition leaves for the process that started it
 * (replay/merge_once.c, rep_read): `key=value` lines of figures, a ledger
 * per part kind and the dropped traces, or the child's error. The file
 * is included for its static reader; nothing starts a repetition.
 *
 * What must hold: a refusal is a negative ms_err with a message; an
 * accepted file has no error line and every figure and ledger line that
 * the child writes, and as many dropped traces as it has drop lines.
 */
#include "merge_once.c"

#include "fuzz_file.h"

#include <limits.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 65536)
		return 0;
	fuzz_file_write("mo-result", "rep-0-0.txt", data, size);
	rep_out *o = calloc(1, sizeof(*o));
	if (!o)
		abort();
	ms_errbuf eb = { "" };
	int rc = rep_read(fuzz_file, o, &eb);
	if (rc != 0) {
		if (rc > 0 || !eb.msg[0] ||
		    !strcmp(ms_strerror(rc), ms_strerror(INT_MIN)))
			abort();
		drops_free(&o->drops);
		free(o);
		return 0;
	}
	/* Accepted: the lines the child writes are all there. */
	size_t drops = 0;
	bool error_line = false;
	uint64_t seen = 0;
	for (size_t i = 0; i < size;) {
		const char *line = (const char *)data + i;
		const char *nl = memchr(line, '\n', size - i);
		size_t len = nl ? (size_t)(nl - line) : size - i;
		i += len + 1;
		const char *eq = memchr(line, '=', len);
		if (!eq)
			continue;
		size_t kl = (size_t)(eq - line);
		error_line |= kl == 5 && !memcmp(line, "error", 5);
		drops += kl == 4 && !memcmp(line, "drop", 4);
		for (int k = 0; k < R_N; k++)
			if (strlen(rep_keys[k]) == kl &&
			    !memcmp(line, rep_keys[k], kl))
				seen |= 1ull << k;
		for (int k = 0; k < MS_KIND_COUNT; k++) {
			const char *kind =
			        ms_part_kind_name((enum ms_part_kind)k);
			if (kl == 7 + strlen(kind) &&
			    !memcmp(line, "ledger.", 7) &&
			    !memcmp(line + 7, kind, kl - 7))
				seen |= 1ull << (R_N + k);
		}
	}
	if (error_line || seen != (1ull << (R_N + MS_KIND_COUNT)) - 1 ||
	    o->drops.n != drops)
		abort();
	for (size_t i = 0; i < o->drops.n; i++)
		if (o->drops.v[i].len == 0 ||
		    o->drops.v[i].len > MS_TRACE_ID_MAX)
			abort();
	drops_free(&o->drops);
	free(o);
	return 0;
}
