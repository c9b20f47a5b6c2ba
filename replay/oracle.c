/*
 * oracle.c - the verdict oracle: what the run's sampler chain decides for
 * every complete trace of the day, computed from the fixture alone and
 * never from the engine. Every raw core part is read, the rows of each
 * trace are gathered across the parts its fragments went to (only the
 * columns the chain reads, plus the trace ID), the traces are put in
 * trace-ID order and handed, complete, to a chain of its own (the same
 * plugins and configs, loaded again) in batches. The gates then check the
 * run against it: every trace a merge dropped must be one the oracle
 * drops, and what survived must be what the oracle keeps plus traces with
 * a recorded reason to be kept.
 *
 * For the default SkyWalking variant the fixture's manifest holds the
 * checksum of the sampler's per-trace verdicts (XXH64 over ID and verdict
 * byte in ID order); the oracle's verdicts must reproduce it.
 *
 * What it keeps for the gates is found by the XXH3-128 hash of the trace
 * ID, not the ID (16 bytes a trace instead of the ID's ~50): the same
 * premise as the block keys and the ledgers, that distinct inputs do not
 * share a 128-bit hash. Two of the day's traces that did would fail the
 * oracle, not pass unseen.
 *
 * A replay holds the table from the oracle's end (early in the run) to
 * the gates, through the finalize's peak: it keeps only the traces the
 * chain drops (drops_only, a third of the day's), which is all the gates
 * look up while the run agrees with the oracle. A run that dropped a
 * trace outside it makes ms__oracle_dropped read the fixture's block
 * headers again for the whole table, whose kept traces are then exactly
 * the ones outside the shed table. Nothing per trace is kept for all of
 * them but while the oracle runs: the blocks sorted by ID are walked
 * trace by trace for the chain, the checksum and the table, and the
 * rows' columns go as soon as the chain has judged them.
 *
 * Nor does a replay keep the table in memory while it waits for the
 * gates: the oracle's thread writes it to a file in the run's work
 * directory and frees it (ms__oracle_spill), and the gates read it back
 * (ms__oracle_unspill), checked against its length and checksum, before
 * any lookup. The file is removed once read, and by ms__oracle_release
 * on any path that never read it. A work directory on a tmpfs would hold
 * it in RAM all the same: then it goes to a file without a name in the
 * cache directory when that is on a disk (ms__oracle_spill_unlinked),
 * held open until read or released, so that not even a killed process
 * leaves it behind.
 */
#define _GNU_SOURCE /* O_TMPFILE, mkostemp */
#include "ms_clock.h"
#include "replay_int.h"

#include "ms_fs.h"
#include "ms_ledger.h"
#include "ms_mem.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <xxhash.h>

/* One block of a raw part (a trace's fragment in that part) as the
 * oracle keeps it: the trace ID, read order, and where its rows' columns
 * are; the columns a chain may read that the oracle rebuilds, per row. */
typedef struct ofrag {
	const uint8_t *tid; /* in the oracle's ID pool */
	uint32_t seq;       /* read order: a stable sort within a trace */
	uint32_t first, nrows;
	uint8_t tid_len;
	bool edge;       /* rows before the day's start or past its end */
	uint64_t lo, hi; /* the block's key (ms__block_key) */
} ofrag;

typedef struct ocol {
	int64_t start_ns;
	uint32_t latency_ms;
	bool is_error;
} ocol;

/* The columns an ocol holds. A chain that reads any other (SkyWalking's
 * tag rules read the tags) has every row kept whole instead (oread.whole). */
#define ORACLE_COLS (MS_COL_START | MS_COL_LATENCY | MS_COL_ERROR)

static int
cmp_ofrag(const void *a, const void *b)
{
	const ofrag *x = a, *y = b;
	int c = ms_trace_id_cmp(x->tid, x->tid_len, y->tid, y->tid_len);
	return c ? c : (x->seq > y->seq) - (x->seq < y->seq);
}

/* Every block of every raw core part, decoding only `cols`; the rows of
 * the dropped traces whole, into the dropped ledger. */
typedef struct oread {
	ofrag *f;
	size_t nf, fcap;
	ocol *c;
	size_t nc, ccap; /* nc: the rows kept, in c or (whole) in full */
	/* The chain reads columns beyond ORACLE_COLS: each row whole in
	 * full (its strings, tags and body copied into arena), c unused. */
	bool whole;
	ms_row *full;
	size_t fullcap;
	ms_arena arena;
} oread;

/* Room for the day's blocks and rows as the manifest counts them, so
 * that nothing grows while reading: a hint (what it says is not trusted;
 * without the room, the arrays grow as they are filled). */
static void
reserve_day(const ms_fixture *fx, oread *rd)
{
	size_t blocks = 0, rows = 0; /* a slot's counts capped: no wrap */
	for (size_t i = 0; i < ms_fixture_nslots(fx); i++) {
		const ms_fixture_slot *s = ms_fixture_slot_at(fx, i);
		blocks += s->blocks < UINT32_MAX ? s->blocks : UINT32_MAX;
		rows += s->rows < UINT32_MAX ? s->rows : UINT32_MAX;
	}
	if (!ms__big_reserve((void **)&rd->f, &rd->fcap, blocks,
	                     sizeof(*rd->f)) &&
	    !rd->whole)
		(void)ms__big_reserve((void **)&rd->c, &rd->ccap, rows,
		                      sizeof(*rd->c));
}

/* Room for n more rows, in c or (whole) in full. */
static int
reserve_rows(oread *rd, size_t n)
{
	if (rd->whole)
		return ms__big_reserve((void **)&rd->full, &rd->fullcap,
		                       rd->nc + n, sizeof(*rd->full));
	return ms__big_reserve((void **)&rd->c, &rd->ccap, rd->nc + n,
	                       sizeof(*rd->c));
}

/* The bytes the array of the rows reserve_rows grows takes for n rows. */
static size_t
rows_bytes(const oread *rd, size_t n)
{
	return n * (rd->whole ? sizeof(*rd->full) : sizeof(*rd->c));
}

/* Keep the nrows decoded rows of a block (NULL: no column decoded):
 * their columns, or (whole) copies of them. 0 or MS_ERR_NOMEM. */
static int
keep_rows(oread *rd, const ms_row *rows, uint32_t nrows)
{
	for (uint32_t k = 0; k < nrows; k++) {
		if (rd->whole) {
			if (ms_row_copy(&rd->arena, NULL, &rows[k],
			                &rd->full[rd->nc]))
				return MS_ERR_NOMEM;
			rd->nc++;
			continue;
		}
		ocol *c = &rd->c[rd->nc++];
		c->start_ns = rows ? rows[k].start_ns : 0;
		c->latency_ms = rows ? rows[k].latency_ms : 0;
		c->is_error = rows ? rows[k].is_error : false;
	}
	return 0;
}

/* Whether the run asked the oracle to stop (cancel may be NULL). */
static bool
cancelled(const _Atomic bool *cancel)
{
	return cancel && atomic_load(cancel);
}

/* MS_ERR_NOMEM, with why (n bytes) reading "<prefix>out of memory for
 * <what> (<bytes> bytes)". */
static int
oom_why(char *why, size_t n, const char *prefix, const char *what, size_t bytes)
{
	snprintf(why, n, "%sout of memory for %s (%zu bytes)", prefix, what,
	         bytes);
	return MS_ERR_NOMEM;
}

static int
read_rows(const ms_fixture *fx, unsigned cols, const _Atomic bool *cancel,
          oread *rd, ms__idpool *ids, char *why, size_t n)
{
	ms_errbuf eb = { { 0 } };
	int rc = 0;
	const ms_fixture_info *info = ms_fixture_get_info(fx);
	rd->whole = (cols & ~(unsigned)ORACLE_COLS) != 0;
	if (rd->whole)
		ms_arena_init(&rd->arena, NULL, 0, 0);
	reserve_day(fx, rd);
	for (size_t i = 0; i < ms_fixture_nslots(fx) && !rc; i++) {
		if (cancelled(cancel)) {
			snprintf(why, n, "oracle: cancelled");
			return MS_ERR_CANCELED;
		}
		char path[PATH_MAX];
		ms_part *p = NULL;
		ms_part_iter *it = NULL;
		if ((rc = ms_fixture_slot_path(fx, i, MS_KIND_CORE, path,
		                               sizeof(path))))
			rc = ms_fail(&eb, rc,
			             "slot %zu: its part's path is "
			             "too long",
			             i);
		if (rc ||
		    (rc = ms_part_open_dicts(&p, path, ms_fixture_dicts(fx),
		                             NULL, &eb)) ||
		    (rc = ms_part_iter_open(&it, p, NULL, NULL, &eb))) {
			snprintf(why, n, "%s", eb.msg);
			ms_part_close(p);
			break;
		}
		const ms_block_info *bi;
		while ((rc = ms_part_iter_next(it, &bi, &eb)) == 1) {
			const ms_row *rows = NULL;
			/* Every block's key: a block's ledgers are a
			 * function of its stored bytes, and the part checks
			 * cache them by this key (a dropped trace's rows
			 * are summed from them). */
			uint64_t klo, khi;
			if ((rc = ms__block_key(it, bi, &klo, &khi, &eb)) < 0)
				break;
			if (cols &&
			    (rc = ms_part_iter_decode(it, cols, &rows, &eb)))
				break;
			bool blocks = ms__big_reserve((void **)&rd->f,
			                              &rd->fcap, rd->nf + 1,
			                              sizeof(*rd->f)) != 0;
			if (blocks || reserve_rows(rd, bi->nrows)) {
				/* At least this much: the array doubles. */
				rc = oom_why(why, n, "oracle: ",
				             blocks ? "the day's blocks"
				                    : "the day's rows",
				             blocks ? (rd->nf + 1) *
				                              sizeof(*rd->f)
				                    : rows_bytes(rd, rd->nc +
				                                             bi->nrows));
				break;
			}
			ofrag *f = &rd->f[rd->nf];
			if (!(f->tid = ms__idpool_add(ids, bi->trace_id,
			                              bi->trace_id_len))) {
				rc = oom_why(why, n,
				             "oracle: ", "the day's trace IDs",
				             (size_t)MS__IDPOOL_CHUNK);
				break;
			}
			f->tid_len = (uint8_t)bi->trace_id_len;
			f->edge = bi->min_ts < info->day_start_ns ||
			          bi->max_ts > info->day_end_ns;
			f->seq = (uint32_t)rd->nf++;
			f->first = (uint32_t)rd->nc;
			f->nrows = bi->nrows;
			f->lo = klo;
			f->hi = khi;
			if (keep_rows(rd, rows, bi->nrows)) {
				rc = oom_why(why, n, "oracle: ",
				             "a copy of the day's rows",
				             (size_t)rd->arena.cap_bytes);
				break;
			}
		}
		if (rc < 0 && !why[0])
			snprintf(why, n, "%s", eb.msg);
		else if (rc > 0)
			rc = 0;
		ms_part_iter_close(it);
		ms_part_close(p);
	}
	return rc < 0 ? rc : rc ? MS_ERR_IO : 0;
}

/* The end of the trace whose first block is rd->f[i] in the sorted
 * blocks: the index past its last block. */
static size_t
trace_end(const oread *rd, size_t i)
{
	size_t j = i + 1;
	while (j < rd->nf && ms_trace_id_cmp(rd->f[j].tid, rd->f[j].tid_len,
	                                     rd->f[i].tid, rd->f[i].tid_len) == 0)
		j++;
	return j;
}

/* The oracle's traces through the chain, ORACLE_BATCH at a time (the
 * batch size ms_chain_evaluate_rows cuts at, so the chain sees the same
 * batches as from one call over every row): each batch's rows, the
 * traces in ID order (the blocks sorted by ID, a trace's blocks in read
 * order) rebuilt in one row array reused from batch to batch. keep: one
 * byte per trace. The run's cancel is checked before every chain call
 * (a failed batch's halves included) and after every batch: a signal or
 * a quit waits for at most the chain's call in progress, not for the
 * day's remaining batches (MS_ERR_CANCELED, even after the last one: a
 * cancelled oracle's verdicts are not used). */
#define ORACLE_BATCH 4096

static int
evaluate(size_t ntr, const oread *rd, ms_chain *chain, ms_mem *mem,
         const _Atomic bool *cancel, uint8_t *keep, uint16_t *failed,
         ms_errbuf *eb)
{
	ms_row *flat = NULL;
	size_t fcap = 0;
	int rc = cancelled(cancel) ? MS_ERR_CANCELED : 0;
	for (size_t t0 = 0, i0 = 0; t0 < ntr && !rc; t0 += ORACLE_BATCH) {
		size_t t1 = ntr - t0 < ORACLE_BATCH ? ntr : t0 + ORACLE_BATCH;
		size_t nrows = 0, k = 0, got = 0, i1 = i0;
		for (size_t t = t0; t < t1; t++)
			for (size_t e = trace_end(rd, i1); i1 < e; i1++)
				nrows += rd->f[i1].nrows;
		if (ms__big_reserve((void **)&flat, &fcap, nrows,
		                    sizeof(*flat))) {
			rc = ms_fail(eb, MS_ERR_NOMEM,
			             "out of memory for the rows of a batch of "
			             "%zu traces (%zu bytes)",
			             t1 - t0, nrows * sizeof(*flat));
			break;
		}
		for (size_t i = i0; i < i1; i++) {
			const ofrag *f = &rd->f[i];
			for (uint32_t j = 0; j < f->nrows; j++) {
				if (rd->whole) {
					flat[k] = rd->full[f->first + j];
					flat[k].trace_id = f->tid;
					flat[k++].trace_id_len = f->tid_len;
					continue;
				}
				const ocol *c = &rd->c[f->first + j];
				flat[k++] = (ms_row){
					.trace_id = f->tid,
					.trace_id_len = f->tid_len,
					.start_ns = c->start_ns,
					.latency_ms = c->latency_ms,
					.is_error = c->is_error,
				};
			}
		}
		i0 = i1;
		rc = ms_chain_evaluate_rows(chain, mem, flat, nrows,
		                            ORACLE_BATCH, keep + t0,
		                            failed + t0, t1 - t0, &got, cancel,
		                            eb);
		if (!rc && got != t1 - t0)
			rc = ms_fail(eb, MS_ERR_STATE,
			             "%zu verdicts for the %zu traces from "
			             "trace %zu",
			             got, t1 - t0, t0);
		if (!rc && cancelled(cancel))
			rc = MS_ERR_CANCELED;
	}
	if (rc == MS_ERR_CANCELED)
		ms_fail(eb, rc, "cancelled");
	ms__big_free(flat, fcap * sizeof(*flat));
	return rc;
}

/* o->held changed by d bytes (o->held_peak follows). */
static void
held_add(ms__oracle *o, size_t d)
{
	o->held += d;
	if (o->held > o->held_peak)
		o->held_peak = o->held;
}

static void
held_sub(ms__oracle *o, size_t d)
{
	o->held -= d < o->held ? d : o->held;
}

/* The bytes rd's rows take (their columns, or whole rows and copies). */
static size_t
rows_held(const oread *rd)
{
	return rd->ccap * sizeof(*rd->c) + rd->fullcap * sizeof(*rd->full) +
	       (rd->whole ? (size_t)rd->arena.cap_bytes : 0);
}

/* The bytes rd's blocks and the IDs in ids take. */
static size_t
blocks_held(const oread *rd, const ms__idpool *ids)
{
	return rd->fcap * sizeof(*rd->f) + ids->ch.n * MS__IDPOOL_CHUNK;
}

static int
cmp_key(const void *a, const void *b)
{
	const ms__oracle_ent *x = a, *y = b;
	return ms_ledger_key_cmp(x->key_hi, x->key_lo, y->key_hi, y->key_lo);
}

static int
cmp_frag_key(const void *a, const void *b)
{
	const ms__oracle_frag *x = a, *y = b;
	return ms_ledger_key_cmp(x->hi, x->lo, y->hi, y->lo);
}

/* The table in key order for ms__oracle_find (its keys are distinct:
 * check_keys). */
static int
order_by_key(ms__oracle *o)
{
	size_t scratch = o->nent * sizeof(*o->ent);
	held_add(o, scratch);
	int rc = ms__big_sort(o->ent, o->nent, sizeof(*o->ent), cmp_key);
	held_sub(o, scratch);
	if (rc)
		return oom_why(o->why, sizeof(o->why),
		               "oracle: ", "sorting its table", scratch);
	return 0;
}

static int64_t
cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The oracle's own chain, parsed from spec and loaded again (NULL with
 * no spec or "disabled"); it may read any column. */
static int
open_chain(ms__oracle *o, const char *spec, const char *plugin_dir,
           const ms_chain_opts *co, ms_chain_spec *cs, ms_chain **chain)
{
	ms_errbuf eb = { { 0 } };
	int rc;
	if (spec && strcmp(spec, "disabled") != 0) {
		if ((rc = ms_chain_spec_parse(cs, spec, plugin_dir, co->mem,
		                              &eb))) {
			snprintf(o->why, sizeof(o->why), "chain: %s", eb.msg);
			return rc;
		}
		if ((rc = ms_chain_open(chain, cs->links, cs->n, co, &eb))) {
			snprintf(o->why, sizeof(o->why), "chain: %s", eb.msg);
			return rc;
		}
	}
	return 0;
}

/* The checksum of each link's plugin of chain (NULL: none) as loaded,
 * into o->link_checksum. */
static void
note_links(ms__oracle *o, const ms_chain *chain)
{
	size_t n = chain ? ms_chain_len(chain) : 0;

	o->nlinks = n < MS_EV_LINKS_MAX ? n : MS_EV_LINKS_MAX;
	for (size_t i = 0; i < o->nlinks; i++)
		snprintf(o->link_checksum[i], sizeof(o->link_checksum[i]),
		         "%s", ms_plugin_checksum(ms_chain_plugin(chain, i)));
}

/* Merge the sorted runs src[lo, mid) and src[mid, hi) of indices of f
 * into dst[lo, hi), by the blocks they index (cmp_ofrag). */
static void
merge_ix(const ofrag *f, const uint32_t *src, uint32_t *dst, size_t lo,
         size_t mid, size_t hi)
{
	size_t i = lo, j = mid, k = lo;
	while (i < mid && j < hi)
		dst[k++] = cmp_ofrag(&f[src[j]], &f[src[i]]) < 0 ? src[j++]
		                                                 : src[i++];
	while (i < mid)
		dst[k++] = src[i++];
	while (j < hi)
		dst[k++] = src[j++];
}

/* Put f[ix[p]] at f[p] for every p, in place (ix is then 0, 1, ...). */
static void
permute(ofrag *f, uint32_t *ix, size_t n)
{
	for (size_t s = 0; s < n; s++) {
		if (ix[s] == s)
			continue;
		ofrag t = f[s];
		size_t p = s;
		for (;;) {
			size_t q = ix[p];
			ix[p] = (uint32_t)p;
			if (q == s) {
				f[p] = t;
				break;
			}
			f[p] = f[q];
			p = q;
		}
	}
}

/* The blocks of rd in ID order (a trace's in read order); the number of
 * traces into *ntr. What is sorted is their indices (a merge sort), then
 * the blocks are moved in place: a copy of the day's blocks for the sort
 * would be the oracle's peak, and with it the run's on a large day. */
static int
sort_blocks(ms__oracle *o, oread *rd, size_t *ntr)
{
	size_t n = rd->nf, bytes = 2 * (n ? n : 1) * sizeof(uint32_t);
	uint32_t *ix = n > UINT32_MAX ? NULL : ms__big_alloc(bytes);
	if (!ix)
		return oom_why(o->why, sizeof(o->why),
		               "oracle: ", "sorting the day's blocks", bytes);
	held_add(o, bytes);
	uint32_t *src = ix, *dst = ix + n;
	for (size_t i = 0; i < n; i++)
		ix[i] = (uint32_t)i;
	for (size_t w = 1; w < n; w = w > n / 2 ? n : w * 2) {
		for (size_t lo = 0; lo < n; lo += 2 * w) {
			size_t mid = n - lo > w ? lo + w : n;
			size_t hi = n - mid > w ? mid + w : n;
			merge_ix(rd->f, src, dst, lo, mid, hi);
		}
		uint32_t *t = src;
		src = dst;
		dst = t;
	}
	permute(rd->f, src, n);
	ms__big_free(ix, bytes);
	held_sub(o, bytes);
	size_t t = 0;
	for (size_t i = 0; i < n; i = trace_end(rd, i))
		t++;
	*ntr = t;
	return 0;
}

/* Every trace's key, sorted: MS_ERR_STATE and why when two share one
 * (whether the table keeps them all or not). */
static int
check_keys(ms__oracle *o, const oread *rd, size_t ntr)
{
	size_t bytes = (ntr ? ntr : 1) * sizeof(ms__oracle_frag);
	ms__oracle_frag *k = ms__big_alloc(bytes);
	if (!k)
		return oom_why(o->why, sizeof(o->why),
		               "oracle: ", "the keys of the day's traces",
		               bytes);
	held_add(o, 2 * bytes); /* and the sort's scratch */
	size_t t = 0;
	for (size_t i = 0; i < rd->nf; i = trace_end(rd, i), t++) {
		XXH128_hash_t h = XXH3_128bits(rd->f[i].tid, rd->f[i].tid_len);
		k[t] = (ms__oracle_frag){ h.low64, h.high64 };
	}
	int rc = 0;
	if (ms__big_sort(k, ntr, sizeof(*k), cmp_frag_key))
		rc = oom_why(o->why, sizeof(o->why),
		             "oracle: ", "sorting the keys of the day's traces",
		             ntr * sizeof(*k));
	for (t = 1; !rc && t < ntr; t++)
		if (!cmp_frag_key(&k[t - 1], &k[t])) {
			snprintf(o->why, sizeof(o->why),
			         "oracle: two trace IDs of the day share the "
			         "128-bit key %016llx%016llx",
			         (unsigned long long)k[t].hi,
			         (unsigned long long)k[t].lo);
			rc = MS_ERR_STATE;
		}
	ms__big_free(k, bytes);
	held_sub(o, 2 * bytes);
	return rc;
}

/* oom_why for the table of nt traces and nf blocks (ent or frags, the
 * one NULL). */
static int
table_oom(ms__oracle *o, const char *prefix, size_t nt, size_t nf)
{
	bool ent = !o->ent;
	return oom_why(o->why, sizeof(o->why), prefix,
	               ent ? "the traces of its table"
	                   : "the blocks of its table",
	               ent ? (nt ? nt : 1) * sizeof(*o->ent)
	                   : (nf ? nf : 1) * sizeof(*o->frags));
}

/* oom_why for the verdicts of ntr traces (keep, or if that came, the
 * links failed open). */
static int
verdicts_oom(ms__oracle *o, const uint8_t *keep, size_t ntr)
{
	return oom_why(o->why, sizeof(o->why), "oracle: ",
	               keep ? "the links failed open on each trace"
	                    : "the verdicts of each trace",
	               keep ? ntr * sizeof(uint16_t) : ntr);
}

/* The table: the traces of rd (blocks sorted) with their verdicts keep
 * and the links that failed open on them, all of them or (drops_only)
 * those the chain drops or kept with a link failed open, into o->ent (in
 * key order, keyed by their IDs' hashes) and their blocks' keys into
 * o->frags. */
static int
build_table(ms__oracle *o, const oread *rd, const uint8_t *keep,
            const uint16_t *failed, bool drops_only)
{
	size_t nt = 0, nf = 0, t = 0;
	for (size_t i = 0, e; i < rd->nf; i = e, t++) {
		e = trace_end(rd, i);
		if (!drops_only || !keep[t] || failed[t]) {
			nt++;
			nf += e - i;
		}
	}
	o->ent = calloc(nt ? nt : 1, sizeof(*o->ent));
	o->frags = calloc(nf ? nf : 1, sizeof(*o->frags));
	if (!o->ent || !o->frags)
		return table_oom(o, "oracle: ", nt, nf);
	held_add(o, (nt ? nt : 1) * sizeof(*o->ent) +
	                    (nf ? nf : 1) * sizeof(*o->frags));
	o->nent = nt;
	o->nfrags = nf;
	o->shed = drops_only;
	t = 0;
	for (size_t i = 0, e, k = 0, j = 0; i < rd->nf; i = e, t++) {
		e = trace_end(rd, i);
		if (drops_only && keep[t] && !failed[t])
			continue;
		ms__oracle_ent *en = &o->ent[k++];
		XXH128_hash_t h = XXH3_128bits(rd->f[i].tid, rd->f[i].tid_len);
		en->key_lo = h.low64;
		en->key_hi = h.high64;
		en->frag0 = (uint32_t)j;
		en->nfrags = (uint32_t)(e - i);
		en->keep = keep[t] != 0;
		en->failed = keep[t] ? failed[t] : 0;
		for (size_t x = i; x < e; x++, j++) {
			en->rows += rd->f[x].nrows;
			en->edge = en->edge || rd->f[x].edge;
			o->frags[j] = (ms__oracle_frag){ rd->f[x].lo,
				                         rd->f[x].hi };
		}
	}
	return order_by_key(o);
}

/* The chain's verdict on each of the ntr traces into keep (all kept
 * without a chain), the links that failed open on each into failed, and
 * how often its links failed open. */
static int
decide(ms__oracle *o, size_t ntr, ms_chain *chain, ms_mem *mem,
       const oread *rd, const _Atomic bool *cancel, uint8_t *keep,
       uint16_t *failed)
{
	int64_t td = ms_mono_ns();
	memset(failed, 0, ntr * sizeof(*failed));
	if (chain) {
		ms_errbuf eb = { { 0 } };
		int rc = evaluate(ntr, rd, chain, mem, cancel, keep, failed,
		                  &eb);
		if (rc) {
			snprintf(o->why, sizeof(o->why), "oracle: %s", eb.msg);
			return rc;
		}
		for (size_t i = 0; i < ms_chain_len(chain); i++) {
			ms_link_stats st;
			ms_chain_link_stats(chain, i, &st);
			for (int k = 1; k < MS_LINK_RESULT_COUNT; k++)
				o->link_failures += st.results[k];
		}
	} else {
		memset(keep, 1, ntr);
	}
	o->decide_ns = ms_mono_ns() - td;
	return 0;
}

/* The keep/drop counts, the kept traces some link did not judge, and the
 * checksum (XXH64 over ID and verdict byte in ID order). */
static void
record_verdicts(ms__oracle *o, const oread *rd, const uint8_t *keep,
                const uint16_t *failed)
{
	XXH64_state_t *xs = XXH64_createState();
	if (xs)
		XXH64_reset(xs, 0);
	size_t t = 0;
	for (size_t i = 0; i < rd->nf; i = trace_end(rd, i), t++) {
		uint8_t vd = keep[t] ? MS_VERDICT_KEEP : MS_VERDICT_DROP;
		o->keep += keep[t] != 0;
		o->unjudged += keep[t] && failed[t];
		if (xs) {
			XXH64_update(xs, rd->f[i].tid, rd->f[i].tid_len);
			XXH64_update(xs, &vd, 1);
		}
	}
	o->drop = o->n - o->keep;
	if (xs) {
		snprintf(o->checksum, sizeof(o->checksum), "%016llx",
		         (unsigned long long)XXH64_digest(xs));
		XXH64_freeState(xs);
	}
}

/* Free the rows' columns (the chain reads them, nothing after it). */
static void
oread_release_rows(oread *rd)
{
	ms__big_free(rd->c, rd->ccap * sizeof(*rd->c));
	rd->c = NULL;
	rd->ccap = 0;
	ms__big_free(rd->full, rd->fullcap * sizeof(*rd->full));
	rd->full = NULL;
	rd->fullcap = 0;
	if (rd->whole)
		ms_arena_release(&rd->arena);
	rd->whole = false;
}

static void
oread_release(oread *rd)
{
	oread_release_rows(rd);
	ms__big_free(rd->f, rd->fcap * sizeof(*rd->f));
	memset(rd, 0, sizeof(*rd));
}

int
ms__oracle_run(ms__oracle *o, const ms_fixture *fx, const char *spec,
               const char *plugin_dir, uint64_t decide_timeout_ns,
               enum ms_plugin_host_mode host, const char *host_exe,
               const _Atomic bool *cancel, bool drops_only)
{
	memset(o, 0, sizeof(*o));
	o->fx = fx;
	int64_t t0 = ms_mono_ns(), c0 = cpu_ns();
	ms_mem mem;
	ms_mem_init(&mem, NULL);
	ms_chain_spec cs;
	memset(&cs, 0, sizeof(cs));
	ms_chain *chain = NULL;
	oread rd;
	memset(&rd, 0, sizeof(rd));
	ms__idpool ids;
	memset(&ids, 0, sizeof(ids));
	uint8_t *keep = NULL;
	uint16_t *failed = NULL;
	size_t ntr = 0;
	/* A plugin that crashes in Decide must not take the run down here
	 * either: the oracle's links run where the run's do. */
	ms_chain_opts co = { .mem = &mem,
		             .decide_timeout_ns = decide_timeout_ns,
		             .host_mode = host,
		             .host_exe = host_exe };
	int rc = open_chain(o, spec, plugin_dir, &co, &cs, &chain);
	note_links(o, chain);
	unsigned cols = chain ? ms_chain_projection(chain) & MS_COL_ALL : 0;
	if (!rc)
		rc = read_rows(fx, cols, cancel, &rd, &ids, o->why,
		               sizeof(o->why));
	o->held_read = blocks_held(&rd, &ids) + rows_held(&rd);
	held_add(o, o->held_read);
	if (!rc)
		rc = sort_blocks(o, &rd, &ntr);
	o->n = ntr;
	if (!rc && (!(keep = ms__big_alloc(ntr)) ||
	            !(failed = ms__big_alloc(ntr * sizeof(*failed)))))
		rc = verdicts_oom(o, keep, ntr);
	held_add(o, ntr * (1 + sizeof(*failed)));
	if (!rc)
		rc = decide(o, ntr, chain, &mem, &rd, cancel, keep, failed);
	/* The rows' columns are read by the chain only. */
	held_sub(o, rows_held(&rd));
	oread_release_rows(&rd);
	if (!rc) {
		record_verdicts(o, &rd, keep, failed);
		rc = check_keys(o, &rd, ntr);
	}
	if (!rc)
		rc = build_table(o, &rd, keep, failed, drops_only);
	o->ok = rc == 0;
	ms__big_free(keep, ntr);
	ms__big_free(failed, ntr * sizeof(*failed));
	held_sub(o, ntr * (1 + sizeof(*failed)) + blocks_held(&rd, &ids));
	oread_release(&rd);
	ms__idpool_release(&ids);
	ms_chain_close(chain);
	ms_chain_spec_release(&cs);
	o->ns = ms_mono_ns() - t0;
	o->cpu_ns = cpu_ns() - c0;
	return rc;
}

/* Undo a drops-only table: every trace of the fixture, from its raw
 * parts' trace IDs and block keys (no column decoded, no chain: a trace
 * the drops-only table does not hold is kept, by every link). */
static int
unshed(ms__oracle *o)
{
	ms__oracle all;
	memset(&all, 0, sizeof(all));
	oread rd;
	memset(&rd, 0, sizeof(rd));
	ms__idpool ids;
	memset(&ids, 0, sizeof(ids));
	uint8_t *keep = NULL;
	uint16_t *failed = NULL;
	size_t ntr = 0;
	int rc = read_rows(o->fx, 0, NULL, &rd, &ids, all.why,
	                   sizeof(all.why));
	if (!rc)
		rc = sort_blocks(&all, &rd, &ntr);
	if (!rc && ntr != o->n) {
		snprintf(all.why, sizeof(all.why),
		         "oracle: the fixture holds %zu traces, %zu when the "
		         "oracle ran",
		         ntr, o->n);
		rc = MS_ERR_STATE;
	}
	if (!rc && (!(keep = ms__big_alloc(ntr)) ||
	            !(failed = ms__big_alloc(ntr * sizeof(*failed)))))
		rc = verdicts_oom(&all, keep, ntr);
	size_t t = 0;
	for (size_t i = 0; !rc && i < rd.nf; i = trace_end(&rd, i), t++) {
		XXH128_hash_t h = XXH3_128bits(rd.f[i].tid, rd.f[i].tid_len);
		ms__oracle_ent want = { .key_lo = h.low64, .key_hi = h.high64 };
		const ms__oracle_ent *e = bsearch(&want, o->ent, o->nent,
		                                  sizeof(*o->ent), cmp_key);
		keep[t] = !e || e->keep;
		failed[t] = e ? e->failed : 0;
	}
	if (!rc)
		rc = build_table(&all, &rd, keep, failed, false);
	ms__big_free(keep, ntr);
	ms__big_free(failed, ntr * sizeof(*failed));
	oread_release(&rd);
	ms__idpool_release(&ids);
	if (rc) {
		snprintf(o->why, sizeof(o->why), "%s", all.why);
		ms__oracle_release(&all);
		return rc;
	}
	free(o->ent);
	free(o->frags);
	o->ent = all.ent;
	o->nent = all.nent;
	o->frags = all.frags;
	o->nfrags = all.nfrags;
	o->shed = false;
	return 0;
}

/* The answers for the dropped traces' blocks (ms__blkcache_get_many; a
 * key's tag is its trace's slot in the drop set): the ledgers summed,
 * and the first slot (in the set's order) with a block unanswered. */
typedef struct drop_sum {
	ms__oracle *o;
	size_t bad; /* SIZE_MAX: none */
} drop_sum;

static int
drop_answer(void *arg, const ms_fixture_block_key *k, int rc,
            const ms_ledger_set *led)
{
	drop_sum *s = arg;
	if (rc) {
		if (k->tag < s->bad)
			s->bad = k->tag;
	} else
		ms_ledger_set_add(&s->o->dropped_led, led);
	return 0;
}

int
ms__oracle_dropped(ms__oracle *o, const ms__dropped *d, ms__blkcache *blocks)
{
	ms_ledger_set_init(&o->dropped_led);
	free(o->drop_found);
	o->drop_found = NULL;
	if (!d->n)
		return 0;
	/* A dropped trace the shed table lacks: the whole table again. */
	bool whole = !o->shed;
	for (size_t i = 0; i < d->n && !whole; i++)
		whole = !ms__oracle_find(o, d->ent[i].tid, d->ent[i].len);
	int rc = o->shed && whole ? unshed(o) : 0;
	if (rc)
		return rc;
	if (!(o->drop_found = calloc(d->n, sizeof(uint64_t))))
		return MS_ERR_NOMEM;
	/* Every block of every dropped trace the fixture holds, looked up
	 * at once (sorted by key, the file's groups read once each), its
	 * trace's slot as the tag (the drop set numbers its slots in 32
	 * bits). */
	size_t nk = 0;
	for (size_t i = 0; i < d->n; i++) {
		const ms__drop_ent *e = &d->ent[i];
		const ms__oracle_ent *t = ms__oracle_find(o, e->tid, e->len);
		if (t) /* not in the fixture: found stays 0 */
			nk += t->nfrags;
	}
	ms_fixture_block_key *k = nk <= SIZE_MAX / sizeof(*k)
	                                  ? malloc(nk ? nk * sizeof(*k) : 1)
	                                  : NULL;
	if (!k)
		return MS_ERR_NOMEM;
	nk = 0;
	for (size_t i = 0; i < d->n; i++) {
		const ms__drop_ent *e = &d->ent[i];
		const ms__oracle_ent *t = ms__oracle_find(o, e->tid, e->len);
		if (!t)
			continue;
		for (uint32_t j = 0; j < t->nfrags; j++) {
			const ms__oracle_frag *f = &o->frags[t->frag0 + j];
			k[nk++] = (ms_fixture_block_key){ .lo = f->lo,
				                          .hi = f->hi,
				                          .tag = (uint32_t)i };
		}
		o->drop_found[i] = t->rows;
	}
	drop_sum s = { .o = o, .bad = SIZE_MAX };
	(void)ms__blkcache_get_many(blocks, k, nk, drop_answer, &s);
	free(k);
	if (s.bad == SIZE_MAX)
		return 0;
	/* As found trace by trace: the rows of the traces before it, none
	 * from it on. */
	const ms__drop_ent *e = &d->ent[s.bad];
	memset(o->drop_found + s.bad, 0, (d->n - s.bad) * sizeof(uint64_t));
	ms_ledger_set_init(&o->dropped_led);
	char shown[MS_TRACE_ID_SHOW_MAX];
	snprintf(o->why, sizeof(o->why),
	         "trace %s: a block of it has no ledger (never checked, or "
	         "the fixture's block ledger file changed under the run)",
	         ms_trace_id_show(shown, e->tid, e->len));
	return MS_ERR_STATE;
}

const ms__oracle_ent *
ms__oracle_find(const ms__oracle *o, const uint8_t *tid, uint32_t len)
{
	if (!o->nent)
		return NULL;
	XXH128_hash_t k = XXH3_128bits(tid, len);
	ms__oracle_ent want = { .key_lo = k.low64, .key_hi = k.high64 };
	return bsearch(&want, o->ent, o->nent, sizeof(*o->ent), cmp_key);
}

/* ---- the spilled table ------------------------------------------------
 *
 * The table's file, version 1 (every number little-endian):
 *
 *   offset  bytes       field
 *   0       8           magic "MSORCL01"
 *   8       8           nent
 *   16      8           nfrags
 *   24      nent * 32   entries, in key order: key_lo u64, key_hi u64,
 *                       rows u32, frag0 u32, nfrags u32, keep u8 (0 or
 *                       1), failed u16 (the links that failed open on
 *                       it), edge u8 (0 or 1)
 *   ...     nfrags * 16 blocks: lo u64, hi u64
 *   ...     8           XXH3-64 (seed 0) of every byte before it
 *
 * Only the process that wrote it reads it, within the same run; nothing
 * in it is trusted until its length and checksum are.
 */
#define SPILL_MAGIC "MSORCL01"
#define SPILL_HEAD 24
#define SPILL_ENT 32
#define SPILL_FRAG 16
#define SPILL_BUF 65536 /* a multiple of SPILL_ENT and SPILL_FRAG */

static void
put_ent(uint8_t *p, const ms__oracle_ent *e)
{
	ms_put_le64(p, e->key_lo);
	ms_put_le64(p + 8, e->key_hi);
	ms_put_le32(p + 16, e->rows);
	ms_put_le32(p + 20, e->frag0);
	ms_put_le32(p + 24, e->nfrags);
	memset(p + 28, 0, 4);
	p[28] = e->keep ? 1 : 0;
	p[29] = (uint8_t)e->failed;
	p[30] = (uint8_t)(e->failed >> 8);
	p[31] = e->edge ? 1 : 0;
}

static void
put_frag(uint8_t *p, const ms__oracle_frag *f)
{
	ms_put_le64(p, f->lo);
	ms_put_le64(p + 8, f->hi);
}

/* The encoded table through buf (SPILL_BUF + 8 bytes) into fd, hashed into
 * xs; 0 or an ms_err. */
static int
write_table(const ms__oracle *o, int fd, uint8_t *buf, XXH3_state_t *xs)
{
	size_t k = SPILL_HEAD;
	int err;
	memcpy(buf, SPILL_MAGIC, 8);
	ms_put_le64(buf + 8, o->nent);
	ms_put_le64(buf + 16, o->nfrags);
	for (size_t i = 0, f = 0; i < o->nent || f < o->nfrags;) {
		if (k + SPILL_ENT > SPILL_BUF) {
			XXH3_64bits_update(xs, buf, k);
			if ((err = ms_fs_write_all(fd, buf, k)))
				return err;
			k = 0;
		}
		if (i < o->nent) {
			put_ent(buf + k, &o->ent[i++]);
			k += SPILL_ENT;
		} else {
			put_frag(buf + k, &o->frags[f++]);
			k += SPILL_FRAG;
		}
	}
	XXH3_64bits_update(xs, buf, k);
	ms_put_le64(buf + k, XXH3_64bits_digest(xs));
	return ms_fs_write_all(fd, buf, k + 8);
}

/* The table into the new file fd (format above); 0 or an ms_err. */
static int
spill_write(const ms__oracle *o, int fd)
{
	uint8_t *buf = malloc(SPILL_BUF + 8);
	XXH3_state_t *xs = XXH3_createState();
	int err = !buf || !xs ? MS_ERR_NOMEM : 0;
	if (!err) {
		XXH3_64bits_reset(xs);
		err = write_table(o, fd, buf, xs);
	}
	free(buf);
	XXH3_freeState(xs);
	return err;
}

/* The table written: now only in its file. */
static void
spill_done(ms__oracle *o)
{
	free(o->ent);
	free(o->frags);
	o->ent = NULL;
	o->frags = NULL;
}

int
ms__oracle_spill(ms__oracle *o, const char *path)
{
	if (o->spill[0])
		return MS_ERR_STATE;
	if (strlen(path) >= sizeof(o->spill))
		return MS_ERR_RANGE;
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	int err = fd < 0 ? ms_err_from_errno(errno) : spill_write(o, fd);
	if (fd >= 0 && close(fd) != 0 && !err)
		err = ms_err_from_errno(errno);
	if (err && fd >= 0)
		unlink(path);
	if (err)
		return err;
	snprintf(o->spill, sizeof(o->spill), "%s", path);
	spill_done(o);
	return 0;
}

/* A new file in dir that has no name: O_TMPFILE, else (a file system
 * without it) a named one removed at once, named with this process's ID
 * (MS_REPLAY_ORACLE_TMP) so that `clean` can tell one a kill left in
 * between from one a running process is about to remove (test: the
 * oracle's test_tmp). An open fd, or -1 with errno. */
static int
open_unlinked(const char *dir, int test)
{
	int fd = test ? -1 : open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (test)
		errno = EOPNOTSUPP;
	if (fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR &&
	                errno != EINVAL))
		return fd;
	char path[PATH_MAX];
	if (snprintf(path, sizeof(path), "%s/" MS_REPLAY_ORACLE_TMP "%ld-XXXXXX",
	             dir, (long)getpid()) >= (int)sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	fd = mkostemp(path, O_CLOEXEC);
	if (fd >= 0 && test == MS__ORACLE_TEST_NAME_LEFT) {
		close(fd); /* the process ends here */
		errno = EINTR;
		return -1;
	}
	if (fd >= 0)
		unlink(path);
	return fd;
}

int
ms__oracle_spill_unlinked(ms__oracle *o, const char *dir)
{
	if (o->spill[0])
		return MS_ERR_STATE;
	char name[sizeof(o->spill)];
	if (snprintf(name, sizeof(name), "%s (an unlinked file)", dir) >=
	    (int)sizeof(name))
		return MS_ERR_RANGE;
	int fd = open_unlinked(dir, o->test_tmp);
	if (fd < 0)
		return ms_err_from_errno(errno);
	/* Never to memory by another name: a tmpfs file is RAM too. */
	int err = ms_fs_fd_in_memory(fd) ? MS_ERR_INVAL : spill_write(o, fd);
	if (err) {
		close(fd);
		return err;
	}
	snprintf(o->spill, sizeof(o->spill), "%s", name);
	o->spill_fd = fd;
	o->spill_unlinked = true;
	spill_done(o);
	return 0;
}

/* The spilled table's file gone: closed when it has no name, else
 * removed. */
static void
spill_drop(ms__oracle *o)
{
	if (o->spill_unlinked)
		close(o->spill_fd);
	else if (o->spill[0])
		unlink(o->spill);
	o->spill_unlinked = false;
	o->spill_fd = -1;
	o->spill[0] = '\0';
}

/* The table back from fd (size bytes) into o->ent and o->frags; 0, or
 * an ms_err with o->why saying what is wrong (the caller names the
 * file). */
static int
read_table(ms__oracle *o, int fd, uint64_t size)
{
	uint8_t *buf = malloc(SPILL_BUF);
	XXH3_state_t *xs = XXH3_createState();
	if (!buf || !xs) {
		bool b = !buf;
		free(buf);
		XXH3_freeState(xs);
		if (b)
			return oom_why(o->why, sizeof(o->why), "",
			               "a read buffer", (size_t)SPILL_BUF);
		snprintf(o->why, sizeof(o->why),
		         "out of memory for a checksum state");
		return MS_ERR_NOMEM;
	}
	XXH3_64bits_reset(xs);
	int rc = 0;
	size_t be = 0, bf = 0, want = 0, nent = 0, nfrags = 0;
	if (size < SPILL_HEAD + 8 ||
	    (rc = ms_fs_pread_all(fd, buf, SPILL_HEAD, 0)) ||
	    memcmp(buf, SPILL_MAGIC, 8) != 0) {
		snprintf(o->why, sizeof(o->why), "not an oracle table");
		rc = MS_ERR_FORMAT;
		goto out;
	}
	uint64_t ne = ms_le64(buf + 8), nf = ms_le64(buf + 16);
	if (ne > SIZE_MAX || nf > SIZE_MAX ||
	    !ms_mul_ok((size_t)ne, SPILL_ENT, &be) ||
	    !ms_mul_ok((size_t)nf, SPILL_FRAG, &bf) ||
	    be > SIZE_MAX - bf - SPILL_HEAD - 8 ||
	    (want = SPILL_HEAD + be + bf + 8) != size) {
		snprintf(o->why, sizeof(o->why),
		         "%llu bytes, its header says %llu entries and %llu "
		         "blocks",
		         (unsigned long long)size, (unsigned long long)ne,
		         (unsigned long long)nf);
		rc = MS_ERR_CORRUPT;
		goto out;
	}
	nent = (size_t)ne;
	nfrags = (size_t)nf;
	o->ent = calloc(nent ? nent : 1, sizeof(*o->ent));
	o->frags = calloc(nfrags ? nfrags : 1, sizeof(*o->frags));
	if (!o->ent || !o->frags) {
		rc = table_oom(o, "", nent, nfrags);
		goto out;
	}
	XXH3_64bits_update(xs, buf, SPILL_HEAD);
	uint64_t off = SPILL_HEAD;
	for (size_t i = 0, f = 0; !rc && (i < nent || f < nfrags);) {
		size_t n =
		        want - 8 - off < SPILL_BUF ? want - 8 - off : SPILL_BUF;
		if ((rc = ms_fs_pread_all(fd, buf, n, off)))
			break;
		XXH3_64bits_update(xs, buf, n);
		off += n;
		for (size_t k = 0; k < n;) {
			if (i < nent) {
				ms__oracle_ent *e = &o->ent[i++];
				e->key_lo = ms_le64(buf + k);
				e->key_hi = ms_le64(buf + k + 8);
				e->rows = ms_le32(buf + k + 16);
				e->frag0 = ms_le32(buf + k + 20);
				e->nfrags = ms_le32(buf + k + 24);
				e->keep = buf[k + 28] != 0;
				e->failed = (uint16_t)(buf[k + 29] |
				                       buf[k + 30] << 8);
				e->edge = buf[k + 31] != 0;
				k += SPILL_ENT;
			} else {
				ms__oracle_frag *g = &o->frags[f++];
				g->lo = ms_le64(buf + k);
				g->hi = ms_le64(buf + k + 8);
				k += SPILL_FRAG;
			}
		}
	}
	if (!rc && (rc = ms_fs_pread_all(fd, buf, 8, off)) == 0 &&
	    ms_le64(buf) != XXH3_64bits_digest(xs)) {
		snprintf(o->why, sizeof(o->why), "checksum mismatch");
		rc = MS_ERR_CORRUPT;
	}
	if (rc && !o->why[0])
		snprintf(o->why, sizeof(o->why), "read: %s", ms_strerror(rc));
	/* In key order (ms__oracle_find searches it), every entry's blocks
	 * in the table (ms__oracle_dropped indexes by them). */
	for (size_t i = 0; !rc && i < nent; i++)
		if ((i && cmp_key(&o->ent[i - 1], &o->ent[i]) >= 0) ||
		    o->ent[i].frag0 > nfrags ||
		    o->ent[i].nfrags > nfrags - o->ent[i].frag0) {
			snprintf(o->why, sizeof(o->why),
			         "entry %zu is out of order or names blocks "
			         "past the table",
			         i);
			rc = MS_ERR_CORRUPT;
		}
out:
	if (!rc) {
		o->nent = nent;
		o->nfrags = nfrags;
	}
	free(buf);
	XXH3_freeState(xs);
	return rc;
}

int
ms__oracle_unspill(ms__oracle *o)
{
	if (!o->spill[0])
		return 0;
	char why[sizeof(o->why)] = "";
	int rc = 0;
	o->why[0] = '\0';
	int fd = o->spill_unlinked ? o->spill_fd
	                           : open(o->spill, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		rc = ms_err_from_errno(errno);
		snprintf(o->why, sizeof(o->why), "%s", strerror(errno));
	} else {
		rc = read_table(o, fd, (uint64_t)st.st_size);
	}
	if (fd >= 0 && !o->spill_unlinked)
		close(fd);
	snprintf(why, sizeof(why), "%s", o->why);
	if (rc) {
		free(o->ent);
		free(o->frags);
		o->ent = NULL;
		o->frags = NULL;
		o->nent = o->nfrags = 0;
		o->ok = false;
		snprintf(o->why, sizeof(o->why),
		         "oracle table %s, read back for the gates: %s",
		         o->spill, why);
	}
	spill_drop(o);
	return rc;
}

size_t
ms__oracle_resident_bytes(const ms__oracle *o)
{
	return (o->ent ? o->nent * sizeof(*o->ent) : 0) +
	       (o->frags ? o->nfrags * sizeof(*o->frags) : 0);
}

void
ms__oracle_release(ms__oracle *o)
{
	spill_drop(o);
	free(o->ent);
	free(o->frags);
	o->frags = NULL;
	free(o->drop_found);
	o->ent = NULL;
	o->drop_found = NULL;
	o->n = o->nent = 0;
}
