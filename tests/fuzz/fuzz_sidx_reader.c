/*
 * fuzz_sidx_reader.c - libFuzzer harness for the index-part reader: turns
 * the input into a part file (fuzz_common.h), opens it, iterates every
 * row checking the order and the tag bounds the reader promises, and
 * merges the part with itself while pruning half of the trace IDs.
 */
#include "fuzz_common.h"
#include "ms_sidx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool
keep_even(void *ctx, const uint8_t *tid, uint32_t len)
{
	(void)ctx;
	(void)len;
	return (tid[0] & 1) == 0;
}

/* An index part: every row in the promised order, the row count as the
 * meta says; with mode bit 2 merged with itself, half the IDs pruned. */
static int
check_sidx(ms_part *p, const fz_files *f, const char *dir, ms_errbuf *eb)
{
	if (ms_part_kind_of(p) == MS_KIND_CORE)
		return 0;
	ms_sidx_iter *it;
	int rc = ms_sidx_iter_open(&it, p, NULL, NULL, eb);
	if (rc == 0) {
		const ms_sidx_row *r;
		ms_sidx_row prev;
		uint64_t n = 0;
		while ((rc = ms_sidx_iter_next(it, &r, eb)) == 1) {
			if (n++ && ms_sidx_row_cmp(&prev, r) > 0)
				abort(); /* order is promised */
			if (r->tid_len < 1 || r->tid_len > MS_TRACE_ID_MAX)
				abort();
			/* Tags: NUL-terminated strings within the format's
			 * bounds, readable until the next call. */
			if (!r->instance || !r->endpoint ||
			    strlen(r->instance) > MS_STR_MAX ||
			    strlen(r->endpoint) > MS_STR_MAX ||
			    r->ntags > MS_TAGS_MAX || (r->ntags && !r->tags))
				abort();
			for (uint32_t i = 0; i < r->ntags; i++)
				if (strlen(r->tags[i]) > MS_TAG_MAX)
					abort();
			if (ms_part_kind_of(p) == MS_KIND_START_TIME &&
			    (r->other < 0 || r->other > (int64_t)UINT32_MAX))
				abort();
			prev = *r;
		}
		if (rc == 0 && n != ms_part_get_meta(p)->rows)
			abort();
		ms_sidx_iter_close(it);
	}
	if (rc == 0 && (f->mode & 4)) {
		char out[256];
		snprintf(out, sizeof(out), "%s-out", dir);
		const ms_part *in[2] = { p, p };
		uint64_t pruned;
		rc = ms_sidx_merge(ms_part_kind_of(p), in, 2, keep_even, NULL,
		                   out, 1, NULL, NULL, &pruned, eb);
		ms_part_remove_dir(out, NULL);
	}
	return rc;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fz_run_part(data, size, check_sidx);
}
