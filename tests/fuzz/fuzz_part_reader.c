/*
 * fuzz_part_reader.c - libFuzzer harness for the core part reader: turns
 * the input into a part file (fuzz_common.h), opens it, iterates every
 * block, decodes the columns the mode picks, takes the raw bytes, and
 * verifies. With mode bit 7 it also reads the part as a sampling merge
 * does, mapped and through a window: a scan that defers unit checks, and
 * a re-read trailing it two blocks behind that takes each block raw and
 * decodes it. Any outcome but a crash, leak, hang or sanitizer report is
 * fine; an error must come with a message.
 */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const unsigned col_sets[16] = {
	MS_COL_ALL,
	0,
	MS_COL_BODY,
	MS_COL_ALL & ~(unsigned)MS_COL_BODY,
	MS_COL_START | MS_COL_LATENCY,
	MS_COL_TAGS,
	MS_COL_SERVICE | MS_COL_ERROR,
	MS_COL_SPAN_ID | MS_COL_SEGMENT_ID | MS_COL_INSTANCE,
	MS_COL_ENDPOINT,
	MS_COL_START,
	MS_COL_LATENCY,
	MS_COL_ALL,
	MS_COL_ALL,
	MS_COL_TAGS | MS_COL_BODY,
	MS_COL_ERROR,
	MS_COL_ALL,
};

static void
said(int rc, const ms_errbuf *eb)
{
	if (rc < 0 && eb->msg[0] == 0)
		abort(); /* every error names what was wrong */
}

static void
two_pass(ms_part *p, unsigned cols)
{
	ms_errbuf eb = { { 0 } };
	ms_part_iter *lead, *it;
	int rc = ms_part_iter_open(&lead, p, NULL, NULL, &eb);
	said(rc, &eb);
	if (rc)
		return;
	ms_part_iter_defer_units(lead);
	rc = ms_part_iter_open_reread(&it, lead, 0, &eb);
	said(rc, &eb);
	if (rc) {
		ms_part_iter_close(lead);
		return;
	}
	const ms_block_info *bi;
	int lr = 1;
	unsigned ahead = 0;
	for (;;) {
		while (lr == 1 && ahead < 2)
			if ((lr = ms_part_iter_next(lead, &bi, &eb)) == 1)
				ahead++;
		said(lr, &eb);
		if (ahead == 0)
			break;
		ahead--;
		rc = ms_part_iter_next(it, &bi, &eb);
		said(rc, &eb);
		if (rc != 1)
			break;
		ms_raw_block raw;
		rc = ms_part_iter_raw(it, &raw, &eb);
		said(rc, &eb);
		if (rc == 0 && (!raw.verified || raw.bytes == NULL))
			abort();
		const ms_row *rows;
		rc = ms_part_iter_decode(it, cols, &rows, &eb);
		said(rc, &eb);
		if (rc)
			break;
	}
	ms_part_iter_close(it);
	ms_part_iter_close(lead);
}

/* Every block iterated and decoded with the mode's columns, raw bytes
 * taken; with mode bit 7 the sampling merge's two passes; then verified. */
static int
check_part(ms_part *p, const fz_files *f, const char *dir, ms_errbuf *eb)
{
	int rc;
	unsigned cols = col_sets[(f->mode >> 2) & 15];
	ms_part_iter *it;
	if (ms_part_kind_of(p) == MS_KIND_CORE &&
	    ms_part_iter_open(&it, p, NULL, NULL, eb) == 0) {
		const ms_block_info *bi;
		while ((rc = ms_part_iter_next(it, &bi, eb)) == 1) {
			ms_raw_block raw;
			if (ms_part_iter_raw(it, &raw, eb) != 0 ||
			    raw.info->stored_bytes != bi->stored_bytes)
				abort();
			const ms_row *rows;
			rc = ms_part_iter_decode(it, cols, &rows, eb);
			if (rc)
				break;
			for (uint32_t i = 0; i < bi->nrows; i++)
				if (rows[i].trace_id_len != bi->trace_id_len)
					abort();
		}
		ms_part_iter_close(it);
	}
	if ((f->mode & 0x80) && ms_part_kind_of(p) == MS_KIND_CORE) {
		two_pass(p, cols);
		ms_part *w;
		if (ms_part_open(&w, dir, NULL, eb) == 0) {
			ms__part_no_map(w);
			two_pass(w, cols);
			ms_part_close(w);
		}
	}
	uint8_t probe[3] = { 1, 2, 3 };
	(void)ms_part_may_contain(p, probe, 3);
	return ms_part_verify(p, eb);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fz_run_part(data, size, check_part);
}
