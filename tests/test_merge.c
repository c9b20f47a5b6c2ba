/*
 * test_merge.c - the merge executor (core/merge.c): lossless k-way merges
 * keep the three ledgers, fragmented traces come out whole in one block,
 * unique traces are copied raw, depth and bounds follow the inputs, and a
 * merge failing at any stage (read, write, allocation, index, publish)
 * leaves the inventory, the snapshot and the directory exactly as before.
 */
#define _XOPEN_SOURCE 700 /* nftw */
#include "testdir.h"
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "merge_gen.h"
#include "ms_ledger.h"
#include "ms_merge.h"
#include "merge_int.h"
#include "part_int.h"
#include "ms_pipeline.h"
#include "ms_shard.h"
#include "ms_sidx.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- fixture: a shard in a fresh temporary directory ---- */

typedef struct fx {
	char dir[256];
	ms_shard *s;
	ms_mem mem; /* parent of every merge's allocator */
	ms_io io;
} fx;

static void
fx_open(fx *f)
{
	memset(f, 0, sizeof(*f));
	assert_non_null(ms_test_mkdtemp(f->dir, sizeof(f->dir), "ms-merge"));
	ms_mem_init(&f->mem, NULL);
	ms_shard_opts o = { .dir = f->dir, .create = true, .io = &f->io };
	ms_errbuf eb = { { 0 } };
	int rc = ms_shard_open(&f->s, &o, &eb);
	if (rc)
		fail_msg("shard open: %s", eb.msg);
}

static void
fx_close(fx *f)
{
	ms_shard_close(f->s);
	ms_test_rmtree(f->dir);
}

/* The dictionary fx_put compresses core parts with (NULL: none). */
static const ms_part_dict *put_dict;

/* Write rows as one part (core + both indexes) and introduce it. */
static uint64_t
fx_put(fx *f, const ms_row *rows, size_t n)
{
	ms_errbuf eb = { { 0 } };
	uint64_t id;
	assert_int_equal(ms_shard_new_id(f->s, &id, &eb), 0);
	char tmp[MS_KIND_COUNT][4096];
	for (int k = 0; k < MS_KIND_COUNT; k++)
		assert_int_equal(ms_shard_tmp_path(f->s, (enum ms_part_kind)k,
		                                   id, tmp[k], sizeof(tmp[k])),
		                 0);
	ms_part_writer_opts wo = { .dict = put_dict };
	ms_part_meta m;
	int rc = ms_part_write_rows(tmp[MS_KIND_CORE], id, rows, n, &wo, &m,
	                            &eb);
	if (rc)
		fail_msg("write core: %s", eb.msg);
	for (int k = MS_KIND_LATENCY; k <= MS_KIND_START_TIME; k++) {
		rc = ms_sidx_write_rows((enum ms_part_kind)k, tmp[k], id, rows,
		                        n, &wo, &m, &eb);
		if (rc)
			fail_msg("write index: %s", eb.msg);
	}
	rc = ms_shard_introduce(f->s, id, &eb);
	if (rc)
		fail_msg("introduce: %s", eb.msg);
	return id;
}

static void
fx_ledgers(fx *f, ms_ledger_set *out)
{
	ms_view *v = NULL;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_shard_view(f->s, &v, &eb), 0);
	int rc = ms_ledger_of_view(v, out, NULL, &eb);
	if (rc)
		fail_msg("ledger: %s", eb.msg);
	ms_view_release(v);
}

static const ms_part *
view_part(ms_view *v, uint64_t id)
{
	const ms_part *p = ms_view_find(v, id, MS_KIND_CORE);
	assert_non_null(p);
	return p;
}

/* Every file under the shard with its size, one per line, sorted. */
static char listing_buf[1 << 16];
static size_t listing_len;

static int
list_cb(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)flag;
	(void)ftw;
	int w = snprintf(listing_buf + listing_len,
	                 sizeof(listing_buf) - listing_len, "%s %lld\n", p,
	                 S_ISDIR(st->st_mode) ? 0LL : (long long)st->st_size);
	if (w > 0)
		listing_len += (size_t)w;
	return listing_len >= sizeof(listing_buf) - 1;
}

static int
line_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A sorted listing of the shard directory plus the snapshot's bytes. */
static char *
fx_state(fx *f)
{
	listing_len = 0;
	nftw(f->dir, list_cb, 16, FTW_PHYS);
	listing_buf[listing_len] = 0;
	char *lines[2048];
	size_t n = 0;
	for (char *p = strtok(listing_buf, "\n"); p && n < 2048;
	     p = strtok(NULL, "\n"))
		lines[n++] = p;
	qsort(lines, n, sizeof(char *), line_cmp);
	size_t cap = 1 << 17, len = 0;
	char *out = malloc(cap);
	assert_non_null(out);
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(out + len, cap - len, "%s\n", lines[i]);
	char path[512];
	snprintf(path, sizeof(path), "%s/snapshot", f->dir);
	FILE *fp = fopen(path, "rb");
	assert_non_null(fp);
	len += fread(out + len, 1, cap - len - 1, fp);
	fclose(fp);
	out[len] = 0;
	return out;
}

static bool
fx_has_tmp(fx *f)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/tmp", f->dir);
	listing_len = 0;
	nftw(path, list_cb, 16, FTW_PHYS);
	/* only the tmp directory itself may be listed */
	return listing_len > 0 &&
	       strchr(listing_buf, '\n') != listing_buf + listing_len - 1;
}

static int
do_merge(fx *f, const uint64_t *ids, size_t n, const ms_merge_hooks *h,
         ms_merge_result *res)
{
	ms_merge_req req = {
		.shard = f->s,
		.inputs = ids,
		.ninputs = n,
		.seq = 7,
		.lane = MS_LANE_FAST,
		.parent_mem = &f->mem,
		.io = &f->io,
	};
	ms_errbuf eb = { { 0 } };
	int rc = ms__merge_execute_hooked(&req, h, res, &eb);
	if (rc)
		assert_string_equal(eb.msg, res->error.msg);
	return rc;
}

/* Walk the output: blocks ascending by trace ID, one block per trace
 * (consecutive blocks of one trace only after a block over the split
 * size); returns per-trace row counts through *rows_of (indexed by trace
 * number, up to ntr). */
static void
check_output(fx *f, uint64_t id, uint32_t *rows_of, size_t ntr,
             uint64_t *blocks)
{
	ms_view *v = NULL;
	assert_int_equal(ms_shard_view(f->s, &v, NULL), 0);
	const ms_part *p = view_part(v, id);
	ms_part_iter *it = NULL;
	assert_int_equal(ms_part_iter_open(&it, p, NULL, NULL, NULL), 0);
	uint8_t prev[MS_TRACE_ID_MAX];
	uint32_t prev_len = 0;
	uint64_t prev_bytes = 0;
	const ms_block_info *bi;
	*blocks = 0;
	int rc;
	while ((rc = ms_part_iter_next(it, &bi, NULL)) == 1) {
		(*blocks)++;
		if (prev_len) {
			int c = ms_trace_id_cmp(prev, prev_len, bi->trace_id,
			                        bi->trace_id_len);
			assert_true(c <= 0);
			/* A split: the two blocks could not be one. */
			if (c == 0)
				assert_true(prev_bytes + bi->span_bytes >
				            MS_BLOCK_SPLIT_BYTES);
		}
		memcpy(prev, bi->trace_id, bi->trace_id_len);
		prev_len = bi->trace_id_len;
		prev_bytes = bi->span_bytes;
		unsigned long long tn =
		        strtoull((const char *)bi->trace_id + 2, NULL, 16);
		if (rows_of && tn < ntr)
			rows_of[tn] += bi->nrows;
	}
	assert_int_equal(rc, 0);
	ms_part_iter_close(it);
	ms_view_release(v);
}

/* Three inputs of `per` traces each, every third trace fragmented over two
 * inputs and every fifth over all three. Returns the ids. */
static void
put_fragmented(fx *f, gen_set *all, uint64_t ids[3], size_t ntr)
{
	gen_set g[3] = { { 0 } };
	for (uint64_t t = 0; t < ntr; t++) {
		uint32_t k = 0;
		int home = (int)(t % 3);
		gen_add(&g[home], t, k, 400);
		gen_add(all, t, k++, 400);
		gen_add(&g[home], t, k, 400);
		gen_add(all, t, k++, 400);
		if (t % 3 == 0) {
			gen_add(&g[(home + 1) % 3], t, k, 400);
			gen_add(all, t, k++, 400);
		}
		if (t % 5 == 0) {
			gen_add(&g[(home + 1) % 3], t, k, 400);
			gen_add(all, t, k++, 400);
			gen_add(&g[(home + 2) % 3], t, k, 400);
			gen_add(all, t, k++, 400);
		}
	}
	for (int i = 0; i < 3; i++) {
		ids[i] = fx_put(f, gen_rows(&g[i]), g[i].n);
		gen_free(&g[i]);
	}
}

/* The shard's ledgers into *out, its core ledger checked against an
 * independent oracle: the ledger of the generated rows. */
static void
ledgers_are_rows(fx *f, gen_set *all, ms_ledger_set *out)
{
	fx_ledgers(f, out);
	ms_ledger oracle;
	ms_ledger_init(&oracle);
	ms_row *rows = gen_rows(all);
	for (size_t i = 0; i < all->n; i++)
		ms_ledger_add_row(&oracle, &rows[i]);
	assert_true(ms_ledger_equal(&oracle, &out->kind[MS_KIND_CORE]));
}

/* ---- fixture: fragmented inputs, and a pipeline ---- */

/* Ten days after the generated rows: every input mature. */
#define MATURE_NS (GEN_T0 + 10LL * 86400 * 1000000000)
/* A segment from 30 days before GEN_T0 to 30 days after: no generated
 * trace is within the grace of its edges, so only the sampler and the
 * outside parts decide. A merge given no segment samples nothing. */
#define WIDE_SEG_MIN (GEN_T0 - 30LL * 86400 * 1000000000)
#define WIDE_SEG_MAX (GEN_T0 + 30LL * 86400 * 1000000000)

static ms_pipeline *open_pipeline_policy(const char *spec, ms_mem *mem,
                                         enum ms_grace_policy pol);

/* A shard holding put_fragmented's three inputs of ntr traces (all: the
 * rows generated for them) and a pipeline of spec (NULL: none, p NULL)
 * under grace policy pol. */
typedef struct sfx {
	fx f;
	gen_set all;
	uint64_t ids[3];
	ms_pipeline *p;
} sfx;

static void
sfx_open_policy(sfx *s, size_t ntr, const char *spec, enum ms_grace_policy pol)
{
	fx_open(&s->f);
	memset(&s->all, 0, sizeof(s->all));
	put_fragmented(&s->f, &s->all, s->ids, ntr);
	s->p = spec ? open_pipeline_policy(spec, &s->f.mem, pol) : NULL;
}
#define sfx_open(s, ntr, spec) sfx_open_policy(s, ntr, spec, MS_GRACE_SELECTION)

static void
sfx_close(sfx *s)
{
	ms_pipeline_close(s->p);
	gen_free(&s->all);
	fx_close(&s->f);
}

/* f's shard holds the ledgers it held before (want). */
static void
assert_ledgers(fx *f, const ms_ledger_set *want)
{
	ms_ledger_set now;
	fx_ledgers(f, &now);
	assert_true(ms_ledger_set_equal(want, &now));
}

/* ---- tests ---- */

/* The dictionary ID of every block of core part id of f's shard; counts
 * the blocks in *blocks. Returns the ID if all blocks share it, else
 * UINT32_MAX. */
static uint32_t
block_dict_ids(fx *f, uint64_t id, uint64_t *blocks)
{
	ms_view *v = NULL;
	assert_int_equal(ms_shard_view(f->s, &v, NULL), 0);
	ms_part_iter *it = NULL;
	assert_int_equal(
	        ms_part_iter_open(&it, view_part(v, id), NULL, NULL, NULL), 0);
	const ms_block_info *bi;
	uint32_t got = 0;
	int rc;
	*blocks = 0;
	while ((rc = ms_part_iter_next(it, &bi, NULL)) == 1) {
		ms_raw_block raw;
		assert_int_equal(ms_part_iter_raw(it, &raw, NULL), 0);
		/* Block header bytes 28..31: dict_id (core/FORMAT.md). */
		const uint8_t *h = raw.bytes + 28;
		uint32_t d = (uint32_t)h[0] | (uint32_t)h[1] << 8 |
		             (uint32_t)h[2] << 16 | (uint32_t)h[3] << 24;
		got = (*blocks)++ == 0 || d == got ? d : UINT32_MAX;
	}
	assert_int_equal(rc, 0);
	ms_part_iter_close(it);
	ms_view_release(v);
	return got;
}

/* A shard with a dictionary: parts written with it, merged; raw copies
 * and re-encoded blocks alike name it, and every row reads back. The same
 * parts in a shard without it are refused naming the part and the ID. */
static void
test_dictionary_merge(void **state)
{
	(void)state;
	fx f;
	fx_open(&f);
	gen_set train = { 0 };
	for (uint64_t t = 0; t < 400; t++)
		for (uint32_t k = 0; k < 4; k++)
			gen_add(&train, 1000 + t, k, 400);
	uint8_t *db = NULL;
	size_t dn = 0;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_part_dict_train(gen_rows(&train), train.n, 16384,
	                                    &db, &dn, NULL, &eb),
	                 0);
	uint32_t id = 0;
	assert_int_equal(ms_shard_add_dict(f.s, db, dn, &id, &eb), 0);
	assert_int_equal(id, 1);
	assert_ptr_equal(ms_shard_dict_newest(f.s), ms_shard_dict(f.s, 1));
	put_dict = ms_shard_dict(f.s, 1);
	gen_set all = { 0 };
	uint64_t ids[3], blocks = 0;
	put_fragmented(&f, &all, ids, 90);
	assert_int_equal(block_dict_ids(&f, ids[0], &blocks), 1);
	assert_true(blocks > 0);
	ms_ledger_set before, after;
	ledgers_are_rows(&f, &all, &before);
	ms_merge_result res;
	assert_int_equal(do_merge(&f, ids, 3, NULL, &res), 0);
	assert_true(res.blocks_raw > 0);
	assert_true(res.blocks_reencoded > 0);
	/* Re-encoded blocks took the shard's dictionary, raw ones kept it;
	 * every row decodes to what was written. */
	assert_int_equal(block_dict_ids(&f, res.output_id, &blocks), 1);
	assert_int_equal(blocks, 90);
	fx_ledgers(&f, &after);
	assert_true(ms_ledger_set_equal(&before, &after));

	/* The same kind of parts in a shard that lacks the dictionary. */
	fx g;
	fx_open(&g);
	uint64_t gids[3];
	gen_set all2 = { 0 };
	put_fragmented(&g, &all2, gids, 30);
	put_dict = NULL;
	ms_merge_result res2;
	assert_int_equal(do_merge(&g, gids, 3, NULL, &res2), MS_ERR_FORMAT);
	char hex[17];
	ms_part_id_str(gids[0], hex);
	assert_non_null(strstr(res2.error.msg, "dictionary ID 1: no "
	                                       "dictionary of this shard"));
	bool named = false;
	for (int i = 0; i < 3; i++) {
		ms_part_id_str(gids[i], hex);
		named |= strstr(res2.error.msg, hex) != NULL;
	}
	assert_true(named);
	gen_free(&all2);
	fx_close(&g);
	ms_mem_free(NULL, db, dn);
	gen_free(&all);
	gen_free(&train);
	fx_close(&f);
}

/* The bytes of the output part of `kind` of merge res in f's shard
 * (malloc'd, *n bytes). */
static uint8_t *
output_bytes(fx *f, const ms_merge_result *res, enum ms_part_kind kind,
             size_t *n)
{
	ms_view *v = NULL;
	assert_int_equal(ms_shard_view(f->s, &v, NULL), 0);
	const ms_part *p = ms_view_find(v, res->output_id, kind);
	assert_non_null(p);
	FILE *fp = fopen(ms_part_dir(p), "rb");
	assert_non_null(fp);
	ms_view_release(v);
	size_t cap = 1 << 16, len = 0, k;
	uint8_t *b = malloc(cap);
	assert_non_null(b);
	while ((k = fread(b + len, 1, cap - len, fp)) > 0)
		if ((len += k) == cap) {
			b = realloc(b, cap *= 2);
			assert_non_null(b);
		}
	fclose(fp);
	*n = len;
	return b;
}

/* Merge f's three inputs at zstd level `level` (0: the writers'
 * defaults) with the contexts zc (NULL: the merge's own). */
static void
merge_with(fx *f, const uint64_t ids[3], int level, ms_zctx *zc,
           ms_merge_result *res)
{
	ms_merge_req req = { .shard = f->s,
		             .inputs = ids,
		             .ninputs = 3,
		             .seq = 7,
		             .lane = MS_LANE_FAST,
		             .parent_mem = &f->mem,
		             .zstd_level = level,
		             .zctx = zc };
	ms_errbuf eb = { { 0 } };
	if (ms_merge_execute(&req, res, &eb))
		fail_msg("merge: %s", eb.msg);
	assert_true(res->blocks_reencoded > 0);
}

/* A shard holding put_fragmented's inputs of ntr traces, in blocks
 * compressed with the dictionary db (NULL: none), which the shard then
 * holds as its newest. */
static void
zctx_shard(fx *f, const uint8_t *db, size_t dn, size_t ntr, uint64_t ids[3])
{
	fx_open(f);
	gen_set all = { 0 };
	uint32_t id = 0;
	if (db) {
		assert_int_equal(ms_shard_add_dict(f->s, db, dn, &id, NULL), 0);
		put_dict = ms_shard_dict(f->s, id);
	}
	put_fragmented(f, &all, ids, ntr);
	put_dict = NULL;
	gen_free(&all);
}

/* Kept zstd contexts (ms_zctx) carry nothing from one merge to the next:
 * merges run one after another on one set, the first with a dictionary
 * at the default levels, the next without one at level 5, then at the
 * default levels again, write every part file (core and both indexes)
 * byte for byte as the same merges with contexts of their own do. */
static void
test_kept_zstd_contexts_write_the_same(void **state)
{
	(void)state;
	gen_set train = { 0 };
	for (uint64_t t = 0; t < 400; t++)
		for (uint32_t k = 0; k < 4; k++)
			gen_add(&train, 1000 + t, k, 400);
	uint8_t *db = NULL;
	size_t dn = 0;
	assert_int_equal(ms_part_dict_train(gen_rows(&train), train.n, 16384,
	                                    &db, &dn, NULL, NULL),
	                 0);
	ms_zctx *zc = NULL;
	assert_int_equal(ms_zctx_new(&zc, NULL, NULL), 0);
	static const struct {
		bool dict;
		int level;
		size_t ntr;
	} m[] = { { true, 0, 90 }, { false, 5, 120 }, { false, 0, 60 } };
	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
		fx kept, own;
		uint64_t ki[3], oi[3];
		zctx_shard(&kept, m[i].dict ? db : NULL, dn, m[i].ntr, ki);
		zctx_shard(&own, m[i].dict ? db : NULL, dn, m[i].ntr, oi);
		ms_merge_result rk, ro;
		merge_with(&kept, ki, m[i].level, zc, &rk);
		merge_with(&own, oi, m[i].level, NULL, &ro);
		for (int k = MS_KIND_CORE; k <= MS_KIND_START_TIME; k++) {
			size_t nk, no;
			uint8_t *bk = output_bytes(&kept, &rk, k, &nk);
			uint8_t *bo = output_bytes(&own, &ro, k, &no);
			assert_int_equal(nk, no);
			assert_memory_equal(bk, bo, nk);
			free(bk);
			free(bo);
		}
		fx_close(&kept);
		fx_close(&own);
	}
	ms_zctx_free(zc);
	ms_mem_free(NULL, db, dn);
	gen_free(&train);
}

static void
test_disjoint_inputs_copy_every_block_raw(void **state)
{
	(void)state;
	fx f;
	fx_open(&f);
	gen_set g[4] = { { 0 } };
	uint64_t ids[4];
	for (int i = 0; i < 4; i++) {
		for (uint64_t t = 0; t < 50; t++)
			for (uint32_t k = 0; k < 4; k++)
				gen_add(&g[i], t * 4 + (uint64_t)i, k, 300);
		ids[i] = fx_put(&f, gen_rows(&g[i]), g[i].n);
	}
	ms_ledger_set before, after;
	fx_ledgers(&f, &before);
	ms_merge_result res;
	assert_int_equal(do_merge(&f, ids, 4, NULL, &res), 0);
	fx_ledgers(&f, &after);
	assert_true(ms_ledger_set_equal(&before, &after));
	assert_int_equal(res.rows_in, 800);
	assert_int_equal(res.rows_out, 800);
	assert_int_equal(res.blocks_in, 200);
	assert_int_equal(res.blocks_raw, 200);
	assert_int_equal(res.blocks_reencoded, 0);
	assert_int_equal(res.traces_out, 200);
	assert_int_equal(res.traces_fragmented, 0);
	assert_int_equal(res.output.rows, 800);
	assert_int_equal(res.output.blocks, 200);
	assert_int_equal(res.output.depth, 1);
	assert_int_not_equal(res.output_id, 0);
	assert_int_equal(res.err, 0);
	assert_string_equal(res.lane, "fast");
	assert_int_equal(res.seq, 7);
	assert_true(res.index[MS_KIND_LATENCY].done);
	assert_true(res.index[MS_KIND_START_TIME].done);
	assert_int_equal(res.index[MS_KIND_LATENCY].rows_out, 800);
	assert_int_equal(res.index[MS_KIND_START_TIME].rows_in, 800);
	/* Inputs left the inventory; only the output remains. */
	ms_view *v = NULL;
	assert_int_equal(ms_shard_view(f.s, &v, NULL), 0);
	assert_int_equal(ms_view_count(v), 1);
	for (int i = 0; i < 4; i++)
		assert_null(ms_view_find(v, ids[i], MS_KIND_CORE));
	ms_view_release(v);
	uint32_t rows_of[200] = { 0 };
	uint64_t blocks;
	check_output(&f, res.output_id, rows_of, 200, &blocks);
	assert_int_equal(blocks, 200);
	for (int t = 0; t < 200; t++)
		assert_int_equal(rows_of[t], 4);
	for (int i = 0; i < 4; i++)
		gen_free(&g[i]);
	fx_close(&f);
}

static void
test_fragmented_traces_come_out_whole(void **state)
{
	(void)state;
	sfx s;
	sfx_open(&s, 90, NULL);
	ms_ledger_set before;
	ledgers_are_rows(&s.f, &s.all, &before);

	ms_merge_result res;
	assert_int_equal(do_merge(&s.f, s.ids, 3, NULL, &res), 0);
	assert_ledgers(&s.f, &before);
	/* Traces 0..89: fragmented iff t % 3 == 0 or t % 5 == 0. */
	uint64_t frag = 0, frag_blocks = 0;
	for (uint64_t t = 0; t < 90; t++) {
		int parts = 1 + (t % 3 == 0 || t % 5 == 0) + (t % 5 == 0);
		if (t % 3 == 0 && t % 5 == 0)
			parts = 3;
		if (parts > 1) {
			frag++;
			frag_blocks += (uint64_t)parts;
		}
	}
	assert_int_equal(res.traces_out, 90);
	assert_int_equal(res.traces_fragmented, frag);
	assert_int_equal(res.blocks_reencoded, frag_blocks);
	assert_int_equal(res.blocks_raw, 90 - frag);
	assert_int_equal(res.blocks_in, res.blocks_raw + res.blocks_reencoded);
	assert_int_equal(res.rows_out, s.all.n);
	uint32_t rows_of[90] = { 0 };
	uint64_t blocks;
	check_output(&s.f, res.output_id, rows_of, 90, &blocks);
	assert_int_equal(blocks, 90);
	for (uint64_t t = 0; t < 90; t++) {
		uint32_t want = 2 + (t % 3 == 0) + 2 * (t % 5 == 0);
		assert_int_equal(rows_of[t], want);
	}
	sfx_close(&s);
}

static void
test_combined_rows_ordered_by_start(void **state)
{
	(void)state;
	sfx s;
	sfx_open(&s, 30, NULL);
	/* Merge in reverse input order: the order of rows in a combined
	 * trace depends only on start_ns. */
	uint64_t rev[3] = { s.ids[2], s.ids[1], s.ids[0] };
	ms_merge_result res;
	assert_int_equal(do_merge(&s.f, rev, 3, NULL, &res), 0);
	ms_view *v = NULL;
	assert_int_equal(ms_shard_view(s.f.s, &v, NULL), 0);
	ms_part_iter *it = NULL;
	assert_int_equal(ms_part_iter_open(&it, view_part(v, res.output_id),
	                                   NULL, NULL, NULL),
	                 0);
	const ms_block_info *bi;
	while (ms_part_iter_next(it, &bi, NULL) == 1) {
		const ms_row *r;
		assert_int_equal(ms_part_iter_decode(it, MS_COL_ALL, &r, NULL),
		                 0);
		for (uint32_t i = 1; i < bi->nrows; i++)
			assert_true(r[i - 1].start_ns <= r[i].start_ns);
		assert_int_equal(bi->min_ts, r[0].start_ns);
	}
	ms_part_iter_close(it);
	ms_view_release(v);
	sfx_close(&s);
}

static void
test_depth_and_bounds(void **state)
{
	(void)state;
	fx f;
	fx_open(&f);
	gen_set g = { 0 };
	uint64_t a[2], b[3];
	int64_t lo = INT64_MAX, hi = INT64_MIN;
	for (int i = 0; i < 4; i++) {
		gen_reset(&g);
		for (uint32_t k = 0; k < 3; k++)
			gen_add(&g, 1000 + (uint64_t)i * 7, k, 100);
		gen_add(&g, 5000 + (uint64_t)i, 0, 100);
		ms_row *r = gen_rows(&g);
		for (size_t j = 0; j < g.n; j++) {
			if (r[j].start_ns < lo)
				lo = r[j].start_ns;
			if (r[j].start_ns > hi)
				hi = r[j].start_ns;
		}
		uint64_t id = fx_put(&f, r, g.n);
		if (i < 2)
			a[i] = id;
		else
			b[i - 2] = id;
	}
	ms_merge_result r1, r2;
	assert_int_equal(do_merge(&f, a, 2, NULL, &r1), 0);
	assert_int_equal(r1.output.depth, 1);
	assert_int_equal(r1.max_input_depth, 0);
	b[2] = r1.output_id;
	assert_int_equal(do_merge(&f, b, 3, NULL, &r2), 0);
	assert_int_equal(r2.max_input_depth, 1);
	assert_int_equal(r2.output.depth, 2);
	assert_int_equal(r2.output.min_ts, lo);
	assert_int_equal(r2.output.max_ts, hi);
	assert_int_equal(r2.input_min_ts, lo);
	assert_int_equal(r2.input_max_ts, hi);
	assert_int_equal(r2.output.rows, 16);
	assert_int_equal(r2.output.traces, 8);
	gen_free(&g);
	fx_close(&f);
}

static void
test_result_figures(void **state)
{
	(void)state;
	sfx s;
	sfx_open(&s, 60, NULL);
	ms_merge_result res;
	assert_int_equal(do_merge(&s.f, s.ids, 3, NULL, &res), 0);
	assert_true(res.wall_ns > 0);
	assert_true(res.cpu_ns > 0);
	assert_true(res.alloc_bytes > 0);
	assert_true(res.alloc_count > 0);
	assert_true(res.peak_live > 0);
	assert_true(res.bytes_read > 0);
	assert_true(res.bytes_written > 0);
	assert_true(res.fsyncs > 0);
	assert_int_equal(res.sampling.klass, MS_SAMPLING_NOT_EXECUTED);
	assert_int_equal(res.sampling.reason, MS_SREASON_PIPELINE_DISABLED);
	assert_true(res.epoch_after > res.epoch_before);
	assert_int_equal(res.err_stage, MS_MERGE_STAGE_NONE);
	/* The merge's allocations were forwarded to the parent and all freed.
	 */
	ms_mem_stats st;
	ms_mem_stats_get(&s.f.mem, &st);
	assert_int_equal(st.live, 0);
	assert_int_equal(st.bytes, res.alloc_bytes);
	/* ... and its I/O to the engine's counters. */
	assert_true(atomic_load(&s.f.io.bytes_written) >= res.bytes_written);
	sfx_close(&s);
}

static void
test_inactive_input_is_a_conflict(void **state)
{
	(void)state;
	sfx s;
	sfx_open(&s, 12, NULL);
	char *before = fx_state(&s.f);
	uint64_t bad[3] = { s.ids[0], s.ids[1], s.ids[2] + 100 };
	ms_merge_result res;
	assert_int_equal(do_merge(&s.f, bad, 3, NULL, &res), MS_ERR_CONFLICT);
	assert_int_equal(res.err_stage, MS_MERGE_STAGE_PIN);
	assert_non_null(strstr(res.error.msg, "not active"));
	char *after = fx_state(&s.f);
	assert_string_equal(before, after);
	/* Duplicates and too few inputs are invalid requests. */
	uint64_t dup[2] = { s.ids[0], s.ids[0] };
	assert_int_equal(do_merge(&s.f, dup, 2, NULL, &res), MS_ERR_INVAL);
	assert_int_equal(do_merge(&s.f, s.ids, 1, NULL, &res), MS_ERR_INVAL);
	free(before);
	free(after);
	sfx_close(&s);
}

static void
test_finalize_single_input(void **state)
{
	(void)state;
	sfx s;
	sfx_open(&s, 12, NULL);
	ms_ledger_set before;
	fx_ledgers(&s.f, &before);
	ms_merge_req req = { .shard = s.f.s, .inputs = s.ids, .ninputs = 1 };
	ms_merge_result res;
	assert_int_equal(ms_merge_finalize(&req, &res, NULL), 0);
	assert_string_equal(res.lane, "finalize");
	assert_true(res.flags & MS_MERGE_FINALIZE);
	assert_int_equal(res.blocks_raw, res.blocks_in);
	assert_ledgers(&s.f, &before);
	sfx_close(&s);
}

/* ---- failure injection: the state must be exactly as before ---- */

typedef struct fail_case {
	enum ms_merge_stage stage;
	uint64_t detail; /* 0 = at the stage start */
	int err;
	int calls;
} fail_case;

static int
fail_hook(void *arg, const ms_merge_req *req, enum ms_merge_stage st,
          uint64_t detail)
{
	(void)req;
	fail_case *fc = arg;
	fc->calls++;
	if (st == fc->stage && detail == fc->detail)
		return fc->err;
	return 0;
}

/* Build the standard three inputs, run a merge with hooks h, expect it to
 * fail with `err` (0 = any) and leave everything as it was. */
static void
expect_clean_failure(const ms_merge_hooks *h, int err,
                     enum ms_merge_stage stage)
{
	sfx s;
	sfx_open(&s, 40, NULL);
	ms_ledger_set lb;
	fx_ledgers(&s.f, &lb);
	char *before = fx_state(&s.f);
	ms_merge_result res;
	int rc = do_merge(&s.f, s.ids, 3, h, &res);
	assert_true(rc < 0);
	if (err)
		assert_int_equal(rc, err);
	assert_int_equal(res.err, rc);
	if (stage != MS_MERGE_STAGE_NONE)
		assert_int_equal(res.err_stage, stage);
	assert_int_equal(res.output_id, 0);
	assert_true(res.error.msg[0] != 0);
	if (rc == MS_ERR_NOMEM && !strstr(res.error.msg, "out of memory"))
		fail_msg("unclear: %s", res.error.msg);
	char *after = fx_state(&s.f);
	assert_string_equal(before, after);
	assert_false(fx_has_tmp(&s.f));
	assert_ledgers(&s.f, &lb);
	ms_mem_stats st;
	ms_mem_stats_get(&s.f.mem, &st);
	assert_int_equal(st.live, 0);
	/* A retry without the fault succeeds and keeps the ledgers. */
	assert_int_equal(do_merge(&s.f, s.ids, 3, NULL, &res), 0);
	assert_ledgers(&s.f, &lb);
	free(before);
	free(after);
	sfx_close(&s);
}

static void
test_injected_failure_at_every_stage(void **state)
{
	(void)state;
	static const fail_case cases[] = {
		{ MS_MERGE_STAGE_PIN, 0, MS_ERR_IO, 0 },
		{ MS_MERGE_STAGE_READ, 0, MS_ERR_IO, 0 },
		{ MS_MERGE_STAGE_READ, 17, MS_ERR_CORRUPT, 0 },
		{ MS_MERGE_STAGE_WRITE, 0, MS_ERR_IO, 0 },
		{ MS_MERGE_STAGE_WRITE, 5, MS_ERR_NOSPACE, 0 },
		{ MS_MERGE_STAGE_INDEX, 0, MS_ERR_IO, 0 },
		{ MS_MERGE_STAGE_PUBLISH, 0, MS_ERR_IO, 0 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fail_case fc = cases[i];
		ms_merge_hooks h = { .stage = fail_hook, .arg = &fc };
		expect_clean_failure(&h, fc.err, fc.stage);
		assert_true(fc.calls > 0);
	}
}

/* Flip bits `mask` of one byte of core part id's data section, in place:
 * the byte `from_end` bytes before its end, or its middle byte (-1). The
 * section's size is in the footer, the file's last 160 bytes, at 96
 * (core/FORMAT.md). */
static void
flip_data_byte(fx *f, uint64_t id, off_t from_end, uint8_t mask)
{
	char path[4096];
	assert_int_equal(ms_shard_part_path(f->s, MS_KIND_CORE, id, path,
	                                    sizeof(path)),
	                 0);
	int fd = open(path, O_RDWR);
	assert_true(fd >= 0);
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	uint8_t le[8];
	assert_int_equal(pread(fd, le, 8, st.st_size - 160 + 96), 8);
	off_t data = 0;
	for (int i = 7; i >= 0; i--)
		data = data << 8 | le[i];
	off_t off = from_end < 0 ? data / 2 : data - from_end;
	uint8_t byte;
	assert_int_equal(pread(fd, &byte, 1, off), 1);
	byte ^= mask;
	assert_int_equal(pwrite(fd, &byte, 1, off), 1);
	close(fd);
}

/* A real read error: one byte of an input's data file flipped. */
static void
test_corrupt_input_fails_cleanly(void **state)
{
	(void)state;
	sfx s;
	sfx_open(&s, 40, NULL);
	flip_data_byte(&s.f, s.ids[1], -1, 0x5a);
	char *before = fx_state(&s.f);
	ms_merge_result res;
	int rc = do_merge(&s.f, s.ids, 3, NULL, &res);
	assert_int_equal(rc, MS_ERR_CORRUPT);
	assert_int_equal(res.err_stage, MS_MERGE_STAGE_READ);
	char name[17];
	ms_part_id_str(s.ids[1], name);
	assert_non_null(strstr(res.error.msg, name));
	char *after = fx_state(&s.f);
	assert_string_equal(before, after);
	assert_false(fx_has_tmp(&s.f));
	free(before);
	free(after);
	sfx_close(&s);
}

/* A real write error: the file size limit makes write(2) fail (EFBIG). */
static void
test_write_error_fails_cleanly(void **state)
{
	(void)state;
	sfx s;
	sfx_open(&s, 200, NULL);
	char *before = fx_state(&s.f);
	struct rlimit old, lim;
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, SIG_IGN);
	lim = old;
	lim.rlim_cur = 16 << 10;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	ms_merge_result res;
	int rc = do_merge(&s.f, s.ids, 3, NULL, &res);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	assert_true(rc == MS_ERR_IO || rc == MS_ERR_NOSPACE);
	assert_int_equal(res.err_stage, MS_MERGE_STAGE_WRITE);
	char *after = fx_state(&s.f);
	assert_string_equal(before, after);
	assert_false(fx_has_tmp(&s.f));
	free(before);
	free(after);
	sfx_close(&s);
}

/* The output's file cannot be created (here: something is in its place):
 * the failure is the write stage's, named with the file's path and the
 * system's reason, not a read failure that would send one looking at the
 * inputs. */
static void
test_output_create_error_is_write_stage(void **state)
{
	(void)state;
	sfx s;
	char tmp[4096];
	sfx_open(&s, 40, NULL);
	assert_int_equal(ms_shard_tmp_path(s.f.s, MS_KIND_CORE,
	                                   ms_shard_next_id(s.f.s), tmp,
	                                   sizeof(tmp)),
	                 0);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
	assert_true(fd >= 0);
	close(fd);
	ms_merge_result res;
	int rc = do_merge(&s.f, s.ids, 3, NULL, &res);
	assert_int_equal(rc, MS_ERR_EXISTS);
	assert_int_equal(res.err_stage, MS_MERGE_STAGE_WRITE);
	assert_non_null(strstr(res.error.msg, "failed at write"));
	assert_non_null(strstr(res.error.msg, tmp));
	assert_non_null(strstr(res.error.msg, strerror(EEXIST)));
	unlink(tmp);
	assert_false(fx_has_tmp(&s.f));
	sfx_close(&s);
}

/* Allocation failure at the Nth allocation, for every N of the merge. */
static void
test_allocation_failure_at_every_nth(void **state)
{
	(void)state;
	/* How many allocations does a clean merge make? */
	uint64_t total;
	{
		sfx s;
		sfx_open(&s, 40, NULL);
		ms_merge_result res;
		assert_int_equal(do_merge(&s.f, s.ids, 3, NULL, &res), 0);
		total = res.alloc_count;
		sfx_close(&s);
	}
	assert_true(total > 3);
	/* Each allocation failing alone, and every twelfth of the way on,
	 * all of them from there (memory that does not come back); each
	 * failure says "out of memory" (a unit's said "unit A: 236 bytes"). */
	uint64_t step = total / 12 ? total / 12 : 1;
	for (uint64_t n = 1; n <= total; n++) {
		ms_merge_hooks h = { .fail_alloc_at = n };
		expect_clean_failure(&h, MS_ERR_NOMEM, MS_MERGE_STAGE_NONE);
		h.fail_alloc_every = true;
		if (n % step == 1 % step)
			expect_clean_failure(&h, MS_ERR_NOMEM,
			                     MS_MERGE_STAGE_NONE);
	}
	ms_merge_hooks every = { .fail_alloc_at = total / 2,
		                 .fail_alloc_every = true };
	expect_clean_failure(&every, MS_ERR_NOMEM, MS_MERGE_STAGE_NONE);
}

/* A real publication failure: an input leaves the inventory while the
 * merge runs, so ms_shard_replace refuses. */
typedef struct steal {
	ms_shard *s;
	uint64_t id;
} steal;

static int
steal_hook(void *arg, const ms_merge_req *req, enum ms_merge_stage st,
           uint64_t detail)
{
	(void)req;
	(void)detail;
	steal *sl = arg;
	if (st == MS_MERGE_STAGE_PUBLISH)
		return ms_shard_replace(sl->s, &sl->id, 1, 0, NULL);
	return 0;
}

static void
test_publish_conflict_fails_cleanly(void **state)
{
	(void)state;
	sfx s;
	sfx_open(&s, 40, NULL);
	steal sl = { s.f.s, s.ids[2] };
	ms_merge_hooks h = { .stage = steal_hook, .arg = &sl };
	ms_merge_result res;
	int rc = do_merge(&s.f, s.ids, 3, &h, &res);
	assert_int_equal(rc, MS_ERR_CONFLICT);
	assert_int_equal(res.err_stage, MS_MERGE_STAGE_PUBLISH);
	assert_int_equal(res.output_id, 0);
	assert_false(fx_has_tmp(&s.f));
	ms_view *v = NULL;
	assert_int_equal(ms_shard_view(s.f.s, &v, NULL), 0);
	assert_int_equal(ms_view_count(v), 2);
	assert_non_null(ms_view_find(v, s.ids[0], MS_KIND_CORE));
	assert_non_null(ms_view_find(v, s.ids[1], MS_KIND_CORE));
	ms_view_release(v);
	sfx_close(&s);
}

/* A real publication failure of the snapshot commit (disk full while
 * writing it, or a failing rename): nothing changes. */
static int
fault_hook(void *arg, const ms_merge_req *req, enum ms_merge_stage st,
           uint64_t detail)
{
	(void)detail;
	const int *where = arg;
	if (st == MS_MERGE_STAGE_PUBLISH)
		ms_shard_inject_fault(req->shard, (enum ms_shard_fault) * where,
		                      *where == MS_SHARD_FAULT_WRITE ? ENOSPC
		                                                     : EIO);
	return 0;
}

static void
test_snapshot_commit_failure_fails_cleanly(void **state)
{
	(void)state;
	static const int wheres[] = { MS_SHARD_FAULT_OPEN, MS_SHARD_FAULT_WRITE,
		                      MS_SHARD_FAULT_FSYNC,
		                      MS_SHARD_FAULT_RENAME };
	for (size_t i = 0; i < sizeof(wheres) / sizeof(wheres[0]); i++) {
		int where = wheres[i];
		ms_merge_hooks h = { .stage = fault_hook, .arg = &where };
		expect_clean_failure(&h, 0, MS_MERGE_STAGE_PUBLISH);
	}
}

/* A trace over the split size stays split when copied raw and comes out
 * split (never merged into one oversized block) when combined. */
static void
test_split_traces(void **state)
{
	(void)state;
	fx f;
	fx_open(&f);
	gen_set a = { 0 }, b = { 0 };
	/* Trace 1: 6 spans x 600 KiB in a only (raw, split). Trace 2: 3+3
	 * spans x 600 KiB over a and b (combined, split). */
	for (uint32_t k = 0; k < 6; k++)
		gen_add(&a, 1, k, 600u << 10);
	for (uint32_t k = 0; k < 3; k++)
		gen_add(&a, 2, k, 600u << 10);
	for (uint32_t k = 3; k < 6; k++)
		gen_add(&b, 2, k, 600u << 10);
	gen_add(&b, 3, 0, 100);
	uint64_t ids[2];
	ids[0] = fx_put(&f, gen_rows(&a), a.n);
	ids[1] = fx_put(&f, gen_rows(&b), b.n);
	ms_ledger_set lb, la;
	fx_ledgers(&f, &lb);
	ms_merge_result res;
	assert_int_equal(do_merge(&f, ids, 2, NULL, &res), 0);
	fx_ledgers(&f, &la);
	assert_true(ms_ledger_set_equal(&lb, &la));
	assert_int_equal(res.traces_out, 3);
	assert_int_equal(res.traces_fragmented, 1);
	assert_true(res.blocks_raw >= 3); /* trace 1 (>= 2 blocks) + trace 3 */
	uint32_t rows_of[4] = { 0 };
	uint64_t blocks;
	check_output(&f, res.output_id, rows_of, 4, &blocks);
	assert_int_equal(rows_of[1], 6);
	assert_int_equal(rows_of[2], 6);
	assert_int_equal(rows_of[3], 1);
	assert_true(blocks >= 5);
	gen_free(&a);
	gen_free(&b);
	fx_close(&f);
}

/* A slow merge for the dispatcher's tests: the hook may block. */
static int
count_hook(void *arg, const ms_merge_req *req, enum ms_merge_stage st,
           uint64_t detail)
{
	(void)req;
	(void)detail;
	int *seen = arg;
	seen[st]++;
	return 0;
}

static void
test_hook_sees_every_stage(void **state)
{
	(void)state;
	sfx s;
	sfx_open(&s, 30, NULL);
	int seen[MS_MERGE_STAGE_COUNT] = { 0 };
	ms_merge_hooks h = { .stage = count_hook, .arg = seen };
	ms_merge_result res;
	assert_int_equal(do_merge(&s.f, s.ids, 3, &h, &res), 0);
	assert_int_equal(seen[MS_MERGE_STAGE_PIN], 1);
	assert_int_equal((uint64_t)seen[MS_MERGE_STAGE_READ],
	                 1 + res.blocks_in);
	assert_true(seen[MS_MERGE_STAGE_WRITE] >= 2);
	assert_int_equal(seen[MS_MERGE_STAGE_INDEX], 1);
	assert_int_equal(seen[MS_MERGE_STAGE_PUBLISH], 1);
	assert_int_equal(seen[MS_MERGE_STAGE_DONE], 1);
	assert_string_equal(ms_merge_stage_name(MS_MERGE_STAGE_PUBLISH),
	                    "publish");
	assert_string_equal(ms_sampling_reason_name(MS_SREASON_MERGE_GRACE),
	                    "merge_grace");
	sfx_close(&s);
}

/* ---- sampling inside the merge (pipeline layer) ---- */

static ms_pipeline *
open_pipeline_policy(const char *spec, ms_mem *mem, enum ms_grace_policy pol)
{
	ms_pipeline *p = NULL;
	ms_errbuf eb = { { 0 } };
	ms_pipeline_opts o = { .spec = spec,
		               .plugin_dir = MS_PLUGIN_DIR,
		               .hard_ceiling = 64u << 20,
		               .policy = pol,
		               .mem = mem };
	if (ms_pipeline_open(&p, &o, &eb))
		fail_msg("pipeline %s: %s", spec, eb.msg);
	return p;
}
#define open_pipeline(spec, mem)                                               \
	open_pipeline_policy(spec, mem, MS_GRACE_SELECTION)

/* A pipeline whose first or second allocation (its state, the copy of its
 * chain spec) fails says so, what for and how many bytes, and leaves
 * nothing allocated: it said only "pipeline: out of memory". */
static void
test_pipeline_out_of_memory(void **state)
{
	(void)state;
	static const char *const want[] = {
		"pipeline: out of memory for its state (",
		"pipeline: out of memory for a copy of its chain spec (11 "
		"bytes)",
	};
	for (uint64_t n = 1; n <= 2; n++) {
		ms_mem mem;
		ms_mem_init(&mem, NULL);
		ms_mem_fail_at(&mem, n, false);
		ms_pipeline *p = NULL;
		ms_errbuf eb = { { 0 } };
		ms_pipeline_opts o = { .spec = "alwayskeep",
			               .plugin_dir = MS_PLUGIN_DIR,
			               .mem = &mem };
		assert_int_equal(ms_pipeline_open(&p, &o, &eb), MS_ERR_NOMEM);
		assert_null(p);
		if (!strstr(eb.msg, want[n - 1]))
			fail_msg("allocation %llu: \"%s\"",
			         (unsigned long long)n, eb.msg);
		ms_mem_stats st;
		ms_mem_stats_get(&mem, &st);
		assert_int_equal(st.live, 0);
	}
}

static int
do_sampled_mode(fx *f, const uint64_t *ids, size_t n, const ms_pipeline *p,
                int64_t now, enum ms_staging_mode mode, ms_merge_result *res)
{
	ms_merge_req req = {
		.shard = f->s,
		.inputs = ids,
		.ninputs = n,
		.parent_mem = &f->mem,
		.pipeline = p,
		.segment_min_ns = WIDE_SEG_MIN,
		.segment_max_ns = WIDE_SEG_MAX,
		.now_ns = now,
		.staging = mode,
	};
	ms_errbuf eb = { { 0 } };
	int rc = ms_merge_execute(&req, res, &eb);
	if (rc)
		print_error("%s\n", eb.msg);
	return rc;
}

static int
do_sampled(fx *f, const uint64_t *ids, size_t n, const ms_pipeline *p,
           int64_t now, ms_merge_result *res)
{
	return do_sampled_mode(f, ids, n, p, now, MS_STAGING_RETAIN, res);
}

/* The three inputs merged at now through the pipeline (retaining). */
static int
sfx_merge(sfx *s, int64_t now, ms_merge_result *res)
{
	return do_sampled(&s->f, s->ids, 3, s->p, now, res);
}

/* A merge through a pipeline (retaining, so trace records are held) with
 * each of its allocations failed in turn fails saying what the memory
 * was for, leaving the shard and the memory as they were; then it
 * succeeds. Said only "out of memory": a held trace's record and ID, the
 * inputs' metadata for the sampling decision, and a part reader's read
 * window. */
static void
test_sampled_merge_out_of_memory(void **state)
{
	(void)state;
	sfx s;
	sfx_open(&s, 40, NULL);
	ms_merge_req req = {
		.shard = s.f.s,
		.inputs = s.ids,
		.ninputs = 3,
		.parent_mem = &s.f.mem,
		.now_ns = MATURE_NS,
		.segment_min_ns = WIDE_SEG_MIN,
		.segment_max_ns = WIDE_SEG_MAX,
		.staging = MS_STAGING_RETAIN,
	};
	ms_mem pm;
	ms_mem_stats st0;
	ms_mem_stats_get(&s.f.mem, &st0);
	unsigned failed = 0;
	for (uint64_t n = 1;; n++) {
		/* A pipeline of its own each time: its chain keeps workers
		 * and buffers from one merge to the next. */
		ms_mem_init(&pm, NULL);
		ms_pipeline *p = open_pipeline("alwayskeep", &pm);
		req.pipeline = p;
		ms_merge_hooks h = { .fail_alloc_at = n };
		ms_merge_result res;
		ms_errbuf eb = { { 0 } };
		int rc = ms__merge_execute_hooked(&req, &h, &res, &eb);
		ms_pipeline_close(p);
		ms_mem_stats pst;
		ms_mem_stats_get(&pm, &pst);
		assert_int_equal(pst.live, 0);
		if (rc == 0)
			break; /* past the merge's last allocation */
		failed++;
		const char *oom = strstr(eb.msg, "out of memory");
		assert_int_equal(rc, MS_ERR_NOMEM);
		/* The part and index writers' own messages (the write and
		 * index stages) still say only "out of memory" at places. */
		bool writers = res.err_stage == MS_MERGE_STAGE_WRITE ||
		               res.err_stage == MS_MERGE_STAGE_INDEX;
		if (!oom || (!writers && !oom[strlen("out of memory")]))
			fail_msg("allocation %llu: %d \"%s\"",
			         (unsigned long long)n, rc, eb.msg);
		ms_mem_stats st;
		ms_mem_stats_get(&s.f.mem, &st);
		assert_int_equal(st.live, st0.live);
	}
	assert_true(failed > 10);
	sfx_close(&s);
}

/* A sampling merge that fails (each of its allocations failed in turn)
 * reports the Decide calls it made, and its link's calls, as the chain
 * counted them: plugin_health reconciles the two. A merge that failed
 * while staging, after its Decide calls, reported none (they were set
 * only once staging finished). */
static void
test_failed_merge_reports_its_calls(void **state)
{
	(void)state;
	sfx s;
	sfx_open(&s, 40, NULL);
	ms_merge_req req = {
		.shard = s.f.s,
		.inputs = s.ids,
		.ninputs = 3,
		.parent_mem = &s.f.mem,
		.now_ns = MATURE_NS,
		.segment_min_ns = WIDE_SEG_MIN,
		.segment_max_ns = WIDE_SEG_MAX,
		.staging = MS_STAGING_RETAIN,
	};
	unsigned called = 0; /* failed merges that had called Decide */
	for (uint64_t n = 1;; n++) {
		ms_mem pm;
		ms_mem_init(&pm, NULL);
		ms_pipeline *p = open_pipeline("alwayskeep", &pm);
		req.pipeline = p;
		ms_merge_hooks h = { .fail_alloc_at = n };
		ms_merge_result res;
		ms_errbuf eb = { { 0 } };
		int rc = ms__merge_execute_hooked(&req, &h, &res, &eb);
		ms_link_stats ls;
		ms_chain_link_stats(ms_pipeline_chain(p), 0, &ls);
		ms_pipeline_close(p);
		if (res.sampling.link_calls[0] != ls.calls ||
		    res.sampling.plugin_calls != ls.calls)
			fail_msg("allocation %llu (%s): the chain counts %llu "
			         "calls, the merge reports %llu (%llu Decide)",
			         (unsigned long long)n, rc ? eb.msg : "ok",
			         (unsigned long long)ls.calls,
			         (unsigned long long)res.sampling.link_calls[0],
			         (unsigned long long)res.sampling.plugin_calls);
		if (rc == 0)
			break;
		called += ls.calls > 0;
	}
	assert_true(called > 0);
	sfx_close(&s);
}

/* The same put_fragmented inputs of ntr traces in two shards, each with
 * a pipeline of spec under the hard ceiling `hard`. */
typedef struct twin {
	fx f[2];
	gen_set g[2];
	uint64_t ids[2][3];
	ms_pipeline *p[2];
	ms_merge_result r[2];
} twin;

static void
twin_open(twin *t, const char *spec, size_t ntr, uint64_t hard)
{
	memset(t, 0, sizeof(*t));
	for (int i = 0; i < 2; i++) {
		fx_open(&t->f[i]);
		put_fragmented(&t->f[i], &t->g[i], t->ids[i], ntr);
		ms_errbuf eb = { { 0 } };
		ms_pipeline_opts o = { .spec = spec,
			               .plugin_dir = MS_PLUGIN_DIR,
			               .hard_ceiling = hard,
			               .mem = &t->f[i].mem };
		if (ms_pipeline_open(&t->p[i], &o, &eb))
			fail_msg("%s: %s", spec, eb.msg);
	}
}

/* Merge shard i's inputs, mature, staging in `mode`, into t->r[i]. */
static void
twin_merge(twin *t, int i, enum ms_staging_mode mode)
{
	int64_t now = GEN_T0 + 10LL * 86400 * 1000000000;
	assert_int_equal(do_sampled_mode(&t->f[i], t->ids[i], 3, t->p[i], now,
	                                 mode, &t->r[i]),
	                 0);
	assert_int_equal(t->r[i].sampling.klass, MS_SAMPLING_EXECUTED);
}

/* Both merges wrote the same output, byte for byte, from the same
 * decisions, and left the same ledgers. */
static void
twin_same_output(twin *t)
{
	const ms_merge_result *ra = &t->r[0], *rb = &t->r[1];
	const ms_merge_sampling *sa = &ra->sampling, *sb = &rb->sampling;
	assert_int_equal(ra->output.checksum, rb->output.checksum);
	assert_int_equal(ra->output.blocks, rb->output.blocks);
	assert_int_equal(ra->output_id != 0, rb->output_id != 0);
	assert_int_equal(ra->rows_out, rb->rows_out);
	assert_int_equal(ra->traces_out, rb->traces_out);
	assert_int_equal(ra->blocks_raw, rb->blocks_raw);
	assert_int_equal(ra->blocks_reencoded, rb->blocks_reencoded);
	assert_int_equal(sa->traces_dropped, sb->traces_dropped);
	assert_int_equal(sa->rows_dropped, sb->rows_dropped);
	assert_int_equal(sa->traces_kept, sb->traces_kept);
	assert_int_equal(sa->blocks_decoded, sb->blocks_decoded);
	for (int k = MS_KIND_LATENCY; k <= MS_KIND_START_TIME; k++)
		assert_int_equal(ra->index[k].rows_out, rb->index[k].rows_out);
	ms_ledger_set la, lb;
	fx_ledgers(&t->f[0], &la);
	fx_ledgers(&t->f[1], &lb);
	assert_true(ms_ledger_set_equal(&la, &lb));
}

static void
twin_close(twin *t)
{
	for (int i = 0; i < 2; i++) {
		ms_pipeline_close(t->p[i]);
		gen_free(&t->g[i]);
		fx_close(&t->f[i]);
	}
}

/* Retain and reread write the same thing for every variant: the same
 * inputs merged in two shards, kept traces written from the retained
 * payload in one and re-read from the inputs in the other. A 1 MiB
 * hard ceiling plans several batches; retain charges the payload it
 * holds, so it peaks higher, cuts more batches by bytes and reads no
 * input twice. */
static void
test_retain_and_reread_write_the_same(void **state)
{
	(void)state;
	static const char *const variants[] = {
		"alwayskeep",
		"detdrop:35",
		"skywalking",
		"skywalking,detdrop:35",
	};
	for (size_t v = 0; v < sizeof(variants) / sizeof(variants[0]); v++) {
		twin t;
		twin_open(&t, variants[v], 900, 1u << 20);
		const ms_pipeline *pa = t.p[0], *pb = t.p[1];
		ms_pipeline_stage ga, gb;
		ms_pipeline_staging(pa, &ga);
		assert_int_equal(ga.preferred, 0);
		assert_int_equal(ga.peak, 0);
		twin_merge(&t, 0, MS_STAGING_RETAIN);
		twin_merge(&t, 1, MS_STAGING_REREAD);
		const ms_merge_result *ra = &t.r[0], *rb = &t.r[1];
		const ms_merge_sampling *sa = &ra->sampling,
		                        *sb = &rb->sampling;
		/* The gauge's limit is the one this merge staged under, and
		 * its peak holds once the batches are done and nothing is
		 * staged any more. */
		assert_true(sa->preferred_limit_bytes > 0);
		ms_pipeline_staging(pa, &ga);
		ms_pipeline_staging(pb, &gb);
		assert_int_equal(ga.seq, ra->seq);
		assert_int_equal(ga.preferred, sa->preferred_limit_bytes);
		assert_int_equal(gb.preferred, sb->preferred_limit_bytes);
		assert_int_equal(ms_pipeline_staged_live(pa), 0);
		assert_int_equal(ga.peak, sa->peak_staged_bytes);
		assert_int_equal(gb.peak, sb->peak_staged_bytes);
		/* The same output, byte for byte, and the same decisions. */
		twin_same_output(&t);
		assert_int_equal(sa->traces_evaluated, 900);
		assert_int_equal(sb->traces_evaluated, 900);
		/* Retain holds and charges the payload: a higher peak, more
		 * batches, cut by bytes; nothing is read twice. */
		assert_true(sa->peak_staged_bytes > sb->peak_staged_bytes);
		/* Cut once a batch reaches the limit: the last trace of a
		 * batch may carry it past, by less than one trace. */
		assert_true(sa->peak_staged_bytes <
		            2 * sa->preferred_limit_bytes);
		assert_true(sa->batches > 1);
		assert_true(sa->batches >= sb->batches);
		assert_true(sa->arena_cold_bytes > 0);
		assert_int_equal(sb->arena_cold_bytes, 0);
		assert_true(ra->bytes_read <= rb->bytes_read);
		twin_close(&t);
	}
}

/* Make the merge's scans of f's inputs read through a bounded window
 * instead of mapping the data files: the shard's open parts, which the
 * merge's view pins, take the path a failed mapping takes. */
static void
fx_unmap_inputs(fx *f, const uint64_t *ids, size_t n)
{
	ms_view *v = NULL;
	ms_errbuf eb = { { 0 } };
	if (ms_shard_view(f->s, &v, &eb))
		fail_msg("view: %s", eb.msg);
	for (size_t i = 0; i < n; i++) {
		const ms_part *p = ms_view_find(v, ids[i], MS_KIND_CORE);
		assert_non_null(p);
		/* Larger than the read window: it is refilled along the
		 * file (and, unless unmapped, the file is mapped). */
		assert_true(ms_part_get_meta(p)->compressed_bytes >
		            2 * (uint64_t)MS__READ_WINDOW);
		ms__part_no_map((ms_part *)p);
	}
	ms_view_release(v);
}

/* Retain mode holds a single input's stored blocks by reference where the
 * scan keeps them in place (mapped inputs), and copies them where it does
 * not (read through a window): the same inputs merged in two shards, one
 * mapped and one not, write the same bytes, charge and cut the same
 * batches, and the mapped one retains less in its hold arena. Several
 * batches (1 MiB ceiling) and one (64 MiB), for a chain that reads no
 * column, one that decodes, and one that drops. */
static void
test_retain_references_stable_blocks(void **state)
{
	(void)state;
	static const char *const variants[] = {
		"alwayskeep",
		"skywalking",
		"detdrop:35",
	};
	static const uint64_t ceilings[] = { 1u << 20, 64u << 20 };
	for (size_t v = 0; v < sizeof(variants) / sizeof(variants[0]); v++) {
		for (size_t k = 0; k < 2; k++) {
			twin t;
			twin_open(&t, variants[v], 3000, ceilings[k]);
			fx_unmap_inputs(&t.f[1], t.ids[1], 3);
			twin_merge(&t, 0, MS_STAGING_RETAIN);
			twin_merge(&t, 1, MS_STAGING_RETAIN);
			twin_same_output(&t);
			const ms_merge_sampling *sa = &t.r[0].sampling,
			                        *sb = &t.r[1].sampling;
			assert_true(t.r[0].blocks_raw > 0);
			/* The same charges, so the same batches. */
			assert_int_equal(sa->batches, sb->batches);
			assert_true(k == 1 || sa->batches > 1);
			assert_int_equal(sa->peak_staged_bytes,
			                 sb->peak_staged_bytes);
			assert_int_equal(sa->nbatch_recs, sb->nbatch_recs);
			for (uint32_t i = 0; i < sa->nbatch_recs; i++) {
				assert_int_equal(sa->batch[i].charged_bytes,
				                 sb->batch[i].charged_bytes);
				assert_int_equal(sa->batch[i].traces,
				                 sb->batch[i].traces);
			}
			/* Referenced, not copied: one batch of every trace's
			 * payload needs fewer fresh chunks. */
			assert_true(sa->arena_cold_bytes <=
			            sb->arena_cold_bytes);
			if (k == 1)
				assert_true(sa->arena_cold_bytes <
				            sb->arena_cold_bytes);
			twin_close(&t);
		}
	}
}

/* The pipeline's staged-bytes gauge, read from inside the merge. */
typedef struct gauge_seen {
	const ms_pipeline *p;
	uint64_t max;
} gauge_seen;

static int
read_gauge(void *arg, const ms_merge_req *req, enum ms_merge_stage st,
           uint64_t detail)
{
	(void)req;
	(void)st;
	(void)detail;
	gauge_seen *g = arg;
	uint64_t v = ms_pipeline_staged_live(g->p);
	if (v > g->max)
		g->max = v;
	return 0;
}

/* While a retaining merge stages, the pipeline's gauge (what the Staging
 * panel shows as live) holds the charged payload: it moves during the
 * merge, up to the merge's own peak, and is back to 0 after it. */
static void
test_staged_gauge_moves_during_merge(void **state)
{
	(void)state;
	sfx s;
	sfx_open(&s, 300, "alwayskeep");
	gauge_seen g = { s.p, 0 };
	ms_merge_hooks h = { .stage = read_gauge, .arg = &g };
	ms_merge_req req = {
		.shard = s.f.s,
		.inputs = s.ids,
		.ninputs = 3,
		.parent_mem = &s.f.mem,
		.pipeline = s.p,
		.segment_min_ns = WIDE_SEG_MIN,
		.segment_max_ns = WIDE_SEG_MAX,
		.now_ns = MATURE_NS,
	};
	ms_merge_result res;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms__merge_execute_hooked(&req, &h, &res, &eb), 0);
	assert_int_equal(res.sampling.klass, MS_SAMPLING_EXECUTED);
	/* 300 traces of 400-byte bodies: well over 100 KiB held. */
	assert_true(g.max > 100u << 10);
	assert_true(g.max <= res.sampling.peak_staged_bytes);
	assert_int_equal(res.sampling.peak_concurrent_bytes,
	                 res.sampling.peak_staged_bytes);
	assert_int_equal(ms_pipeline_staged_live(s.p), 0);
	sfx_close(&s);
}

/* The merge's parent allocator's live bytes at the start of each stage
 * (detail 0: not the per-block calls). */
typedef struct live_seen {
	ms_mem *mem;
	int64_t at[MS_MERGE_STAGE_COUNT];
} live_seen;

static int
read_live(void *arg, const ms_merge_req *req, enum ms_merge_stage st,
          uint64_t detail)
{
	(void)req;
	live_seen *l = arg;
	if (detail == 0) {
		ms_mem_stats ms;
		ms_mem_stats_get(l->mem, &ms);
		l->at[st] = ms.live;
	}
	return 0;
}

/* Once every trace is emitted, a retaining merge frees what it staged
 * (the hold arena's chunks, the stager's batch buffers) before it closes
 * the output: the index merges and the publication do not run on top of
 * the staged payload. */
static void
test_staging_freed_before_output_closes(void **state)
{
	(void)state;
	sfx s;
	sfx_open(&s, 300, "alwayskeep");
	live_seen l = { .mem = &s.f.mem };
	ms_merge_hooks h = { .stage = read_live, .arg = &l };
	ms_merge_req req = {
		.shard = s.f.s,
		.inputs = s.ids,
		.ninputs = 3,
		.parent_mem = &s.f.mem,
		.pipeline = s.p,
		.segment_min_ns = WIDE_SEG_MIN,
		.segment_max_ns = WIDE_SEG_MAX,
		.now_ns = MATURE_NS,
		.staging = MS_STAGING_RETAIN,
	};
	ms_merge_result res;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms__merge_execute_hooked(&req, &h, &res, &eb), 0);
	assert_int_equal(res.sampling.klass, MS_SAMPLING_EXECUTED);
	/* 300 traces of 400-byte bodies held in one batch. */
	uint64_t held = res.sampling.arena_cold_bytes;
	assert_true(held > 256u << 10);
	/* What the merge holds at the index and publish stages, over what
	 * the shard held before it started, is well under what it staged
	 * (before: all of it, and the stager's buffers). */
	for (int st = MS_MERGE_STAGE_INDEX; st <= MS_MERGE_STAGE_PUBLISH; st++)
		assert_true(l.at[st] - l.at[MS_MERGE_STAGE_PIN] <
		            (int64_t)held / 4);
	sfx_close(&s);
}

/* What a merge holds of its confirmed drops through its index merges and
 * publication: the drop set (about 31 bytes a drop here) and each drop's
 * row count for on_drop, a uvarint of a byte or two. The row counts had
 * taken a u64 each in an array doubling from 256 (39 bytes a drop here
 * in all; 1 MiB at a day-8x finalize's 104,517 drops). */
static void
test_drop_rows_held_compactly(void **state)
{
	(void)state;
	size_t n[2] = { 2000, 8000 };
	int64_t held[2];
	for (int i = 0; i < 2; i++) {
		sfx s;
		sfx_open(&s, n[i], "detdrop:100");
		live_seen l = { .mem = &s.f.mem };
		ms_merge_hooks h = { .stage = read_live, .arg = &l };
		ms_merge_req req = {
			.shard = s.f.s,
			.inputs = s.ids,
			.ninputs = 3,
			.parent_mem = &s.f.mem,
			.pipeline = s.p,
			.segment_min_ns = WIDE_SEG_MIN,
			.segment_max_ns = WIDE_SEG_MAX,
			.now_ns = MATURE_NS,
		};
		ms_merge_result res;
		ms_errbuf eb = { { 0 } };
		assert_int_equal(ms__merge_execute_hooked(&req, &h, &res, &eb),
		                 0);
		assert_int_equal(res.sampling.traces_dropped, n[i]);
		held[i] = l.at[MS_MERGE_STAGE_INDEX] - l.at[MS_MERGE_STAGE_PIN];
		sfx_close(&s);
	}
	double per_drop = (double)(held[1] - held[0]) / (double)(n[1] - n[0]);
	print_message("held at the index stage: %lld bytes for %zu drops, "
	              "%lld for %zu: %.1f bytes a drop\n",
	              (long long)held[0], n[0], (long long)held[1], n[1],
	              per_drop);
	assert_true(per_drop < 35.0);
}

/* A merge that does not sample records no staging plan (as the
 * reference records one only with the filter it builds). */
static void
assert_no_plan(const ms_merge_sampling *sm)
{
	assert_int_equal(sm->estimate_bytes, 0);
	assert_int_equal(sm->hard_limit_bytes, 0);
	assert_int_equal(sm->preferred_limit_bytes, 0);
	assert_int_equal(sm->batches_planned, 0);
}

static void
assert_plan(const ms_merge_sampling *sm)
{
	assert_true(sm->estimate_bytes > 0);
	assert_true(sm->hard_limit_bytes > 0);
	assert_true(sm->preferred_limit_bytes > 0);
	assert_true(sm->preferred_limit_bytes <= sm->hard_limit_bytes);
	assert_true(sm->batches_planned >= 1);
}

/* A sampled merge of ids with the segment [seg_min, seg_max] (both 0:
 * none) and the merge event on or off. */
static int
do_segment(fx *f, const uint64_t *ids, const ms_pipeline *p, int64_t seg_min,
           int64_t seg_max, bool event_off, bool finalize, ms_merge_result *res)
{
	ms_merge_req req = {
		.shard = f->s,
		.inputs = ids,
		.ninputs = 3,
		.parent_mem = &f->mem,
		.pipeline = p,
		.now_ns = GEN_T0 + 10LL * 86400 * 1000000000,
		.segment_min_ns = seg_min,
		.segment_max_ns = seg_max,
		.merge_event_disabled = event_off,
	};
	ms_errbuf eb = { { 0 } };
	int rc = finalize ? ms_merge_finalize(&req, res, &eb)
	                  : ms_merge_execute(&req, res, &eb);
	if (rc)
		print_error("%s\n", eb.msg);
	return rc;
}

/* The boundary guard of the fragment-gap contract: trace t starts at
 * GEN_T0 + t s; with the segment beginning 100 s after GEN_T0 - grace,
 * traces 0..99 have fragments within the grace of its edge. A chain that
 * drops everything drops every other trace; those 100 are retained,
 * whole, counted as guard-retained (and deferred). */
static void
test_boundary_guard_retains_edge_traces(void **state)
{
	(void)state;
	sfx s;
	sfx_open(&s, 300, "detdrop:100");
	const int64_t grace = MS_GRACE_NS;
	ms_merge_result res;
	assert_int_equal(do_segment(&s.f, s.ids, s.p,
	                            GEN_T0 + 100000000000LL - grace,
	                            GEN_T0 + 30LL * 86400 * 1000000000, false,
	                            true, &res),
	                 0);
	const ms_merge_sampling *sm = &res.sampling;
	assert_int_equal(sm->klass, MS_SAMPLING_EXECUTED);
	assert_int_equal(sm->traces_evaluated, 300);
	assert_int_equal(sm->guard_retained_edge, 100);
	assert_int_equal(sm->traces_deferred, 100);
	assert_int_equal(sm->traces_dropped, 200);
	assert_int_equal(res.traces_out, 100);
	uint32_t rows_of[300] = { 0 };
	uint64_t blocks;
	check_output(&s.f, res.output_id, rows_of, 300, &blocks);
	for (uint64_t t = 0; t < 300; t++) {
		uint32_t whole = 2 + (t % 3 == 0) + 2 * (t % 5 == 0);
		assert_int_equal(rows_of[t], t < 100 ? whole : 0);
	}
	sfx_close(&s);
}

/* The reasons the segment and the merge event give: a segment too short
 * to hold anything beyond the grace of both edges, or none at all, leaves
 * no guard (guard_unavailable); a selection wholly within the grace of an edge
 * could drop nothing (fragment_gap_contract); with the merge event off
 * an ordinary merge does not sample (event_disabled) while the finalize
 * does. Each merge not sampled is lossless. */
static void
test_segment_and_event_reasons(void **state)
{
	(void)state;
	const int64_t grace = MS_GRACE_NS, s = 1000000000LL;
	static const struct {
		int64_t lo, hi; /* from GEN_T0 */
		bool event_off, finalize;
		enum ms_sampling_class klass;
		enum ms_sampling_reason reason;
	} c[] = {
		{ 0, 3600, false, false, MS_SAMPLING_NOT_EXECUTED,
		  MS_SREASON_GUARD_UNAVAILABLE },
		{ 1000, 30 * 86400, false, false, MS_SAMPLING_NOT_EXECUTED,
		  MS_SREASON_FRAGMENT_GAP_CONTRACT },
		{ -30 * 86400, 30 * 86400, true, false,
		  MS_SAMPLING_NOT_EXECUTED, MS_SREASON_EVENT_DISABLED },
		{ -30 * 86400, 30 * 86400, true, true, MS_SAMPLING_EXECUTED,
		  MS_SREASON_NONE },
		/* No segment: no guard, whatever the merge. */
		{ 0, 0, false, false, MS_SAMPLING_NOT_EXECUTED,
		  MS_SREASON_GUARD_UNAVAILABLE },
		{ 0, 0, false, true, MS_SAMPLING_NOT_EXECUTED,
		  MS_SREASON_GUARD_UNAVAILABLE },
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		sfx x;
		sfx_open(&x, 120, "detdrop:100");
		ms_ledger_set before, after;
		fx_ledgers(&x.f, &before);
		int64_t lo = 0, hi = 0;
		if (c[i].lo || c[i].hi) {
			/* The second case's edge: grace before +1000 s. */
			lo = GEN_T0 + c[i].lo * s - (c[i].lo ? grace : 0);
			hi = GEN_T0 + c[i].hi * s;
		}
		ms_merge_result res;
		assert_int_equal(do_segment(&x.f, x.ids, x.p, lo, hi,
		                            c[i].event_off, c[i].finalize,
		                            &res),
		                 0);
		assert_int_equal(res.sampling.klass, c[i].klass);
		assert_int_equal(res.sampling.reason, c[i].reason);
		if (c[i].klass == MS_SAMPLING_NOT_EXECUTED)
			assert_no_plan(&res.sampling);
		else
			assert_plan(&res.sampling);
		fx_ledgers(&x.f, &after);
		if (c[i].klass == MS_SAMPLING_NOT_EXECUTED)
			assert_true(ms_ledger_set_equal(&before, &after));
		else
			assert_int_equal(res.sampling.traces_dropped, 120);
		sfx_close(&x);
	}
}

/* A library caller that gives no segment: the boundary guard cannot
 * prove any trace clear of the segment's edge, so, as in the reference,
 * the merge (ordinary or finalize) samples nothing and says why
 * (not_executed, guard_unavailable): every trace the chain would drop is
 * kept, the inputs' rows pass whole. Given a segment far from the
 * traces, the same merge drops them all. Without a segment it used to
 * drop them too. */
static void
test_no_segment_keeps_droppable_traces(void **state)
{
	(void)state;
	for (int finalize = 0; finalize < 2; finalize++) {
		sfx x;
		sfx_open(&x, 120, "detdrop:100");
		ms_ledger_set before, after;
		fx_ledgers(&x.f, &before);
		ms_merge_result res;
		assert_int_equal(do_segment(&x.f, x.ids, x.p, 0, 0, false,
		                            finalize, &res),
		                 0);
		assert_int_equal(res.sampling.klass, MS_SAMPLING_NOT_EXECUTED);
		assert_int_equal(res.sampling.reason,
		                 MS_SREASON_GUARD_UNAVAILABLE);
		assert_string_equal(
		        ms_sampling_reason_name(res.sampling.reason),
		        "guard_unavailable");
		assert_int_equal(res.sampling.traces_dropped, 0);
		assert_int_equal(res.traces_out, 120);
		fx_ledgers(&x.f, &after);
		assert_true(ms_ledger_set_equal(&before, &after));
		sfx_close(&x);

		sfx_open(&x, 120, "detdrop:100");
		assert_int_equal(do_segment(&x.f, x.ids, x.p, WIDE_SEG_MIN,
		                            WIDE_SEG_MAX, false, finalize,
		                            &res),
		                 0);
		assert_int_equal(res.sampling.klass, MS_SAMPLING_EXECUTED);
		assert_int_equal(res.sampling.traces_dropped, 120);
		sfx_close(&x);
	}
}

/* A plugin stat by name (-1 when the plugin has none). */
static int64_t
plugin_stat(const ms_pipeline *p, const char *name)
{
	ms_plugin_stat st[8];
	ms_plugin *pl = ms_chain_plugin(ms_pipeline_chain(p), 0);
	size_t n = ms_plugin_stats(pl, st, 8);
	for (size_t i = 0; i < n && i < 8; i++)
		if (strcmp(st[i].name, name) == 0)
			return (int64_t)st[i].value;
	return -1;
}

/* A batch whose Decide timed out is abandoned, never reused: tp_slow's
 * calls 1, 3, 5 ... wait for a file the test creates only after the merge
 * has returned, and read their batch again then: they find it as it was
 * (under ASan a freed or reused batch would be caught too). The merge
 * failed open on those batches, kept everything and is lossless. */
static void
test_timed_out_batch_untouched_after_merge(void **state)
{
	(void)state;
	sfx s;
	sfx_open(&s, 900, NULL);
	ms_ledger_set before;
	fx_ledgers(&s.f, &before);
	char gate[300], spec[400];
	snprintf(gate, sizeof(gate), "%s/release", s.f.dir);
	snprintf(spec, sizeof(spec), "tp_slow:{\"slow\":\"1/2@%s\"}", gate);
	ms_errbuf eb = { { 0 } };
	ms_pipeline_opts o = { .spec = spec,
		               .plugin_dir = MS_TEST_PLUGIN_DIR,
		               .decide_timeout_ns = 20 * 1000000ull,
		               .hard_ceiling = 1u << 20,
		               .mem = &s.f.mem };
	if (ms_pipeline_open(&s.p, &o, &eb))
		fail_msg("%s: %s", spec, eb.msg);
	ms_merge_result res;
	assert_int_equal(sfx_merge(&s, MATURE_NS, &res), 0);
	assert_true(res.sampling.batches >= 3);
	assert_int_equal(res.sampling.traces_dropped, 0);
	assert_int_equal(res.rows_out, s.all.n);
	assert_ledgers(&s.f, &before);
	/* Only now may the abandoned calls read their batches again. */
	ms_chain *c = ms_pipeline_chain(s.p);
	assert_true(ms_chain_abandoned(c) >= 1);
	FILE *fp = fopen(gate, "w");
	assert_non_null(fp);
	fclose(fp);
	struct timespec tick = { 0, 10000000L };
	for (int i = 0; i < 6000 && ms_chain_abandoned(c) > 0; i++)
		nanosleep(&tick, NULL);
	assert_int_equal(ms_chain_abandoned(c), 0);
	assert_true(plugin_stat(s.p, "checked") >= 1);
	assert_int_equal(plugin_stat(s.p, "changed"), 0);
	sfx_close(&s);
}

/* Every input mature: a 35% deterministic drop removes whole traces, the
 * output is the input minus exactly the missing traces' rows (oracle: the
 * generated rows), and the index children are pruned of the same rows. */
static void
test_detdrop_drops_whole_traces(void **state)
{
	(void)state;
	sfx s;
	sfx_open(&s, 300, "detdrop:35");
	ms_row *rows = gen_rows(&s.all);
	int64_t now = MATURE_NS; /* all mature */
	ms_merge_result res;
	assert_int_equal(sfx_merge(&s, now, &res), 0);
	assert_int_equal(res.sampling.klass, MS_SAMPLING_EXECUTED);
	assert_int_equal(res.sampling.traces_evaluated, 300);
	assert_true(res.sampling.traces_dropped > 60);
	assert_true(res.sampling.traces_dropped < 150);
	assert_int_equal(res.traces_out + res.sampling.traces_dropped, 300);
	assert_int_equal(res.rows_out + res.sampling.rows_dropped, s.all.n);
	assert_int_equal(res.index[MS_KIND_LATENCY].rows_pruned,
	                 res.sampling.rows_dropped);
	assert_int_equal(res.index[MS_KIND_START_TIME].rows_out, res.rows_out);
	/* Oracle: which traces are in the output, and are they whole? */
	uint32_t rows_of[300] = { 0 };
	uint64_t blocks;
	check_output(&s.f, res.output_id, rows_of, 300, &blocks);
	ms_ledger want;
	ms_ledger_init(&want);
	uint64_t missing = 0;
	for (size_t i = 0; i < s.all.n; i++) {
		uint64_t t = s.all.v[i].trace;
		if (rows_of[t])
			ms_ledger_add_row(&want, &rows[i]);
	}
	for (uint64_t t = 0; t < 300; t++) {
		uint32_t whole = 2 + (t % 3 == 0) + 2 * (t % 5 == 0);
		assert_true(rows_of[t] == 0 || rows_of[t] == whole);
		missing += rows_of[t] == 0;
	}
	assert_int_equal(missing, res.sampling.traces_dropped);
	ms_ledger_set after;
	fx_ledgers(&s.f, &after);
	assert_true(ms_ledger_equal(&want, &after.kind[MS_KIND_CORE]));
	assert_int_equal(after.kind[MS_KIND_LATENCY].rows, want.rows);
	sfx_close(&s);
}

/* alwayskeep gives the same logical output as a disabled pipeline. */
static void
test_alwayskeep_equals_disabled(void **state)
{
	(void)state;
	sfx s;
	sfx_open(&s, 120, "alwayskeep");
	ms_ledger_set before;
	fx_ledgers(&s.f, &before);
	int64_t now = MATURE_NS;
	ms_merge_result res;
	assert_int_equal(sfx_merge(&s, now, &res), 0);
	assert_int_equal(res.sampling.klass, MS_SAMPLING_EXECUTED);
	assert_int_equal(res.sampling.traces_evaluated, 120);
	assert_int_equal(res.sampling.traces_dropped, 0);
	assert_int_equal(res.sampling.decide_dup_traces, 0);
	assert_int_equal(res.sampling.bounds_mismatch, 0);
	assert_ledgers(&s.f, &before);
	sfx_close(&s);
}

/* A sampling merge staged from block headers reads no unit in its scan:
 * a damaged unit of a kept trace is caught by the pass that copies it,
 * and the merge fails as a lossless one does, naming the input, with
 * nothing changed. */
static void
test_sampled_corrupt_unit_fails_cleanly(void **state)
{
	(void)state;
	sfx s;
	sfx_open(&s, 40, NULL);
	/* The last block's last unit. */
	flip_data_byte(&s.f, s.ids[2], 3, 0x21);
	char *before = fx_state(&s.f);
	s.p = open_pipeline("alwayskeep", &s.f.mem);
	ms_merge_result res;
	assert_int_equal(sfx_merge(&s, MATURE_NS, &res), MS_ERR_CORRUPT);
	assert_int_equal(res.err_stage, MS_MERGE_STAGE_READ);
	char name[17];
	ms_part_id_str(s.ids[2], name);
	if (!strstr(res.error.msg, name) || !strstr(res.error.msg, "checksum"))
		fail_msg("error names neither %s nor a checksum: %s", name,
		         res.error.msg);
	char *after = fx_state(&s.f);
	assert_string_equal(before, after);
	assert_false(fx_has_tmp(&s.f));
	free(before);
	free(after);
	sfx_close(&s);
}

/* A hot input under the selection policy: no sampling, merge_grace. */
static void
test_hot_selection_bypasses_sampling(void **state)
{
	(void)state;
	sfx s;
	sfx_open(&s, 60, "detdrop:50");
	ms_ledger_set before;
	fx_ledgers(&s.f, &before);
	ms_merge_result res;
	assert_int_equal(sfx_merge(&s, GEN_T0, &res), 0);
	assert_int_equal(res.sampling.klass, MS_SAMPLING_NOT_EXECUTED);
	assert_int_equal(res.sampling.reason, MS_SREASON_MERGE_GRACE);
	assert_int_equal(res.sampling.traces_evaluated, 0);
	assert_no_plan(&res.sampling);
	assert_true(res.blocks_raw > 0);
	assert_ledgers(&s.f, &before);
	sfx_close(&s);
}

/* Every input younger than the frontier (min ts past it) under the trace
 * policy: no trace can be old enough for Decide, so, as in the reference,
 * the merge does not sample at all (not_executed, merge_grace): nothing
 * is staged, decoded for staging or kept unevaluated, no plugin call. */
static void
test_trace_policy_young_selection_not_sampled(void **state)
{
	(void)state;
	sfx s;
	sfx_open_policy(&s, 60, "detdrop:50", MS_GRACE_TRACE);
	ms_ledger_set before;
	fx_ledgers(&s.f, &before);
	ms_merge_result res;
	assert_int_equal(sfx_merge(&s, GEN_T0, &res), 0);
	const ms_merge_sampling *sm = &res.sampling;
	assert_int_equal(sm->klass, MS_SAMPLING_NOT_EXECUTED);
	assert_int_equal(sm->reason, MS_SREASON_MERGE_GRACE);
	assert_int_equal(sm->plugin_calls, 0);
	assert_int_equal(sm->batches, 0);
	assert_int_equal(sm->peak_staged_bytes, 0);
	assert_int_equal(sm->blocks_decoded, 0);
	assert_int_equal(sm->traces_evaluated + sm->traces_kept +
	                         sm->traces_unevaluated + sm->traces_dropped,
	                 0);
	assert_no_plan(sm);
	assert_ledgers(&s.f, &before);
	sfx_close(&s);
}

static ms_pipeline *
open_pipeline_capped(const char *spec, ms_mem *mem, uint64_t oversized_cap)
{
	ms_pipeline *p = NULL;
	ms_errbuf eb = { { 0 } };
	ms_pipeline_opts o = { .spec = spec,
		               .plugin_dir = MS_PLUGIN_DIR,
		               .hard_ceiling = 64u << 20,
		               .oversized_cap = oversized_cap,
		               .policy = MS_GRACE_TRACE,
		               .mem = mem };
	if (ms_pipeline_open(&p, &o, &eb))
		fail_msg("pipeline %s: %s", spec, eb.msg);
	return p;
}

/* Under the trace policy, a selection holding a trace that may be at or
 * before the frontier (trace 0's first span starts within a microsecond
 * of GEN_T0, the frontier) is staged; but every trace ends past the
 * frontier, so each is kept hot and none is evaluated. As in the
 * reference that is enabled_no_evaluation, reason other (it was
 * merge_grace, which the reference gives only to a merge that stages
 * nothing); the hot counter says why, and the plan is recorded. */
static void
test_trace_policy_all_traces_hot(void **state)
{
	(void)state;
	fx f;
	fx_open(&f);
	gen_set all = { 0 };
	uint64_t ids[3];
	put_fragmented(&f, &all, ids, 60);
	ms_ledger_set before, after;
	fx_ledgers(&f, &before);
	ms_pipeline *p =
	        open_pipeline_policy("detdrop:100", &f.mem, MS_GRACE_TRACE);
	int64_t now = GEN_T0 + 1000 + MS_GRACE_NS;
	ms_merge_result res;
	assert_int_equal(do_sampled(&f, ids, 3, p, now, &res), 0);
	const ms_merge_sampling *sm = &res.sampling;
	assert_int_equal(sm->klass, MS_SAMPLING_ENABLED_NO_EVALUATION);
	assert_int_equal(sm->reason, MS_SREASON_OTHER);
	assert_int_equal(sm->traces_unevaluated, 60);
	assert_int_equal(sm->traces_oversized, 0);
	assert_int_equal(sm->traces_evaluated, 0);
	assert_int_equal(sm->plugin_calls, 0);
	assert_plan(sm);
	fx_ledgers(&f, &after);
	assert_true(ms_ledger_set_equal(&before, &after));
	ms_pipeline_close(p);
	gen_free(&all);
	fx_close(&f);
}

/* The same selection with a per-trace cap that the traces fragmented
 * over all three inputs (five spans) pass and the others (two or three
 * spans) do not: hot traces and oversized ones, none evaluated. As in
 * the reference, any oversized trace names the reason:
 * all_traces_oversized (it was merge_grace, since hot and oversized
 * together were every trace). */
static void
test_trace_policy_hot_and_oversized(void **state)
{
	(void)state;
	fx f;
	fx_open(&f);
	gen_set all = { 0 };
	uint64_t ids[3];
	put_fragmented(&f, &all, ids, 60);
	ms_ledger_set before, after;
	fx_ledgers(&f, &before);
	ms_pipeline *p = open_pipeline_capped("detdrop:100", &f.mem, 1800);
	int64_t now = GEN_T0 + 1000 + MS_GRACE_NS;
	ms_merge_result res;
	assert_int_equal(do_sampled(&f, ids, 3, p, now, &res), 0);
	const ms_merge_sampling *sm = &res.sampling;
	assert_int_equal(sm->klass, MS_SAMPLING_ENABLED_NO_EVALUATION);
	assert_int_equal(sm->reason, MS_SREASON_ALL_TRACES_OVERSIZED);
	assert_true(sm->traces_oversized > 0);
	assert_true(sm->traces_unevaluated > 0);
	assert_int_equal(sm->traces_oversized + sm->traces_unevaluated, 60);
	assert_int_equal(sm->traces_evaluated, 0);
	assert_plan(sm);
	fx_ledgers(&f, &after);
	assert_true(ms_ledger_set_equal(&before, &after));
	ms_pipeline_close(p);
	gen_free(&all);
	fx_close(&f);
}

/* Every trace dropped: the inputs leave and no output is published. */
static void
test_everything_dropped_publishes_no_output(void **state)
{
	(void)state;
	sfx s;
	sfx_open(&s, 30, "detdrop:100");
	int64_t now = MATURE_NS;
	ms_merge_result res;
	assert_int_equal(sfx_merge(&s, now, &res), 0);
	assert_int_equal(res.sampling.traces_dropped, 30);
	assert_int_equal(res.output_id, 0);
	assert_int_equal(res.rows_out, 0);
	ms_view *v = NULL;
	assert_int_equal(ms_shard_view(s.f.s, &v, NULL), 0);
	assert_int_equal(ms_view_count(v), 0);
	ms_view_release(v);
	assert_false(fx_has_tmp(&s.f));
	sfx_close(&s);
}

/* ---- sampling: raw copy, projection, drop reports, retries ---- */

/* The same inputs merged in two shards: disabled in one, alwayskeep in
 * the other. The sampling merge writes byte-identical output (same data
 * checksum, same ledgers), copies every unique trace's blocks raw as the
 * lossless merge does; alwayskeep reads no column, so staging decodes
 * only start and latency, for the bounds check. */
static void
test_alwayskeep_writes_identical_bytes_and_copies_raw(void **state)
{
	(void)state;
	fx a, b;
	fx_open(&a);
	fx_open(&b);
	gen_set ga = { 0 }, gb = { 0 };
	uint64_t ia[3], ib[3];
	put_fragmented(&a, &ga, ia, 240);
	put_fragmented(&b, &gb, ib, 240);
	ms_pipeline *p = open_pipeline("alwayskeep", &b.mem);
	int64_t now = GEN_T0 + 10LL * 86400 * 1000000000;
	ms_merge_result ra, rb;
	assert_int_equal(do_sampled(&a, ia, 3, NULL, now, &ra), 0);
	assert_int_equal(do_sampled(&b, ib, 3, p, now, &rb), 0);
	assert_int_equal(ra.sampling.klass, MS_SAMPLING_NOT_EXECUTED);
	assert_int_equal(rb.sampling.klass, MS_SAMPLING_EXECUTED);
	assert_int_equal(rb.sampling.traces_evaluated, 240);
	assert_true(rb.sampling.plugin_calls >= 1);
	assert_true(rb.sampling.decide_ns > 0);
	/* Byte-identical output and logical content. */
	assert_int_equal(ra.output.checksum, rb.output.checksum);
	assert_int_equal(ra.output.blocks, rb.output.blocks);
	assert_int_equal(ra.rows_out, rb.rows_out);
	ms_ledger_set la, lb;
	fx_ledgers(&a, &la);
	fx_ledgers(&b, &lb);
	assert_true(ms_ledger_set_equal(&la, &lb));
	/* Unique traces copied raw, fragmented ones combined: as lossless. */
	assert_true(rb.blocks_raw > 0);
	assert_int_equal(rb.blocks_raw, ra.blocks_raw);
	assert_int_equal(rb.blocks_reencoded, ra.blocks_reencoded);
	assert_int_equal(rb.blocks_raw + rb.blocks_reencoded, rb.blocks_in);
	/* The chain reads no column, but the bounds check decodes start
	 * and latency of every input block while staging: the figures say
	 * so (they said nothing was decoded). */
	assert_int_equal(rb.sampling.decoded_cols,
	                 MS_COL_START | MS_COL_LATENCY);
	assert_int_equal(rb.sampling.blocks_decoded, rb.blocks_in);
	ms_pipeline_close(p);
	gen_free(&ga);
	gen_free(&gb);
	fx_close(&a);
	fx_close(&b);
}

/* SkyWalking's default policy (no tag rules) reads start, latency and
 * error: exactly those columns are decoded for staging (never tags nor
 * bodies), every input block once, and kept unique traces still go out
 * raw. */
static void
test_only_projected_columns_are_decoded(void **state)
{
	(void)state;
	sfx s;
	sfx_open(&s, 240, "skywalking");
	uint32_t proj = ms_chain_projection(ms_pipeline_chain(s.p));
	assert_int_equal(proj, MS_PROJ_START | MS_PROJ_LATENCY | MS_PROJ_ERROR);
	int64_t now = MATURE_NS;
	ms_merge_result res;
	assert_int_equal(sfx_merge(&s, now, &res), 0);
	assert_int_equal(res.sampling.klass, MS_SAMPLING_EXECUTED);
	assert_int_equal(res.sampling.decoded_cols,
	                 MS_COL_START | MS_COL_LATENCY | MS_COL_ERROR);
	assert_int_equal(res.sampling.blocks_decoded, res.blocks_in);
	assert_true(res.blocks_raw > 0);
	assert_int_equal(res.traces_out + res.sampling.traces_dropped, 240);
	sfx_close(&s);
}

/* What on_drop saw, in order. */
typedef struct drops_seen {
	size_t n;
	uint64_t trace[400];
	uint64_t rows[400];
	uint64_t calls;
} drops_seen;

static void
note_drop(void *arg, const uint8_t *tid, uint32_t len, uint64_t rows)
{
	drops_seen *d = arg;
	d->calls++;
	assert_int_equal(len, GEN_TID_LEN);
	assert_true(d->n < 400);
	char buf[GEN_TID_LEN + 1];
	memcpy(buf, tid, len);
	buf[len] = 0;
	d->trace[d->n] = strtoull(buf + 2, NULL, 16);
	d->rows[d->n++] = rows;
}

static int
do_sampled_drops(fx *f, const uint64_t *ids, size_t n, const ms_pipeline *p,
                 int64_t now, const ms_merge_hooks *h, drops_seen *d,
                 ms_merge_result *res)
{
	ms_merge_req req = {
		.shard = f->s,
		.inputs = ids,
		.ninputs = n,
		.parent_mem = &f->mem,
		.pipeline = p,
		.segment_min_ns = WIDE_SEG_MIN,
		.segment_max_ns = WIDE_SEG_MAX,
		.now_ns = now,
		.on_drop = note_drop,
		.drop_arg = d,
	};
	ms_errbuf eb = { { 0 } };
	return ms__merge_execute_hooked(&req, h, res, &eb);
}

/* sfx_merge with hooks h, the drops reported into d. */
static int
sfx_merge_drops(sfx *s, int64_t now, const ms_merge_hooks *h, drops_seen *d,
                ms_merge_result *res)
{
	return do_sampled_drops(&s->f, s->ids, 3, s->p, now, h, d, res);
}

/* The two end-of-run checks (DESIGN 4) a merge reports: each trace
 * handed to Decide once, with the bounds its fragments' block headers
 * give. A normal merge reports 0 of each, staged from headers (alwayskeep)
 * or from decoded columns (skywalking); a hook that hands every batch to
 * the chain twice, or shifts the bounds handed to it, is caught trace by
 * trace. */
static void
test_decide_once_and_bounds_checks(void **state)
{
	(void)state;
	static const char *const specs[] = { "alwayskeep", "skywalking" };
	int64_t now = GEN_T0 + 10LL * 86400 * 1000000000;
	for (size_t k = 0; k < 2; k++) {
		for (int mode = 0; mode < 3; mode++) {
			sfx s;
			sfx_open(&s, 150, specs[k]);
			ms_merge_hooks h = { 0 };
			h.stage_decide_twice = mode == 1;
			h.stage_bounds_skew_ns = mode == 2 ? 1 : 0;
			drops_seen d = { 0 };
			ms_merge_result res;
			assert_int_equal(sfx_merge_drops(&s, now, &h, &d, &res),
			                 0);
			const ms_merge_sampling *sm = &res.sampling;
			assert_int_equal(sm->klass, MS_SAMPLING_EXECUTED);
			assert_int_equal(sm->traces_evaluated, 150);
			assert_true(res.traces_fragmented > 0);
			assert_int_equal(sm->decide_dup_traces,
			                 mode == 1 ? 150 : 0);
			assert_int_equal(sm->bounds_mismatch,
			                 mode == 2 ? 150 : 0);
			assert_int_equal(sm->hot_decided, 0);
			sfx_close(&s);
		}
	}
}

/* Under the trace policy, with the frontier inside the inputs' span: the
 * traces past it are kept unevaluated and none that reaches Decide
 * starts past it (hot_decided 0); a hook that makes the hot test compare
 * with a frontier an hour late sends them all to Decide, and hot_decided
 * counts exactly the traces that were kept before, from their rows' own
 * timestamps. Staged from headers (alwayskeep) and from decoded columns
 * (skywalking). */
static void
test_hot_traces_never_decided(void **state)
{
	(void)state;
	static const char *const specs[] = { "alwayskeep", "skywalking" };
	int64_t now = GEN_T0 + MS_GRACE_NS + 75LL * 1000000000;
	for (size_t k = 0; k < 2; k++) {
		uint64_t kept_hot = 0;
		for (int mode = 0; mode < 2; mode++) {
			sfx s;
			sfx_open_policy(&s, 150, specs[k], MS_GRACE_TRACE);
			ms_merge_hooks h = { 0 };
			h.stage_frontier_skew_ns =
			        mode ? 3600LL * 1000000000 : 0;
			drops_seen d = { 0 };
			ms_merge_result res;
			assert_int_equal(sfx_merge_drops(&s, now, &h, &d, &res),
			                 0);
			const ms_merge_sampling *sm = &res.sampling;
			assert_int_equal(sm->klass, MS_SAMPLING_EXECUTED);
			if (mode == 0) {
				kept_hot = sm->traces_unevaluated;
				assert_true(kept_hot > 10 && kept_hot < 140);
				assert_int_equal(sm->traces_evaluated,
				                 150 - kept_hot);
				assert_int_equal(sm->hot_decided, 0);
			} else {
				assert_int_equal(sm->traces_unevaluated, 0);
				assert_int_equal(sm->traces_evaluated, 150);
				assert_int_equal(sm->hot_decided, kept_hot);
			}
			assert_int_equal(sm->bounds_mismatch, 0);
			sfx_close(&s);
		}
	}
}

/* on_drop reports exactly the traces missing from the output, once each,
 * in trace-ID order, with their generated row counts; and the oracle
 * "input ledgers minus the ledgers of the reported traces' generated
 * rows" equals the shard's ledgers after the merge, core and indexes. */
static void
test_on_drop_reports_exactly_the_dropped_traces(void **state)
{
	(void)state;
	const size_t ntr = 300;
	sfx s;
	sfx_open(&s, ntr, "detdrop:35");
	ms_row *rows = gen_rows(&s.all);
	ms_ledger_set before;
	fx_ledgers(&s.f, &before);
	int64_t now = MATURE_NS;
	ms_merge_result res;
	drops_seen d;
	memset(&d, 0, sizeof(d));
	assert_int_equal(sfx_merge_drops(&s, now, NULL, &d, &res), 0);
	assert_true(res.sampling.traces_dropped > 60);
	assert_int_equal(d.n, res.sampling.traces_dropped);
	uint64_t sum = 0;
	for (size_t i = 0; i < d.n; i++) {
		sum += d.rows[i];
		if (i)
			assert_true(d.trace[i - 1] < d.trace[i]);
	}
	assert_int_equal(sum, res.sampling.rows_dropped);
	/* Exactly the traces missing from the output, with their rows. */
	uint32_t rows_of[300] = { 0 };
	uint64_t blocks;
	check_output(&s.f, res.output_id, rows_of, ntr, &blocks);
	bool dropped[300] = { false };
	for (size_t i = 0; i < d.n; i++) {
		uint64_t t = d.trace[i];
		assert_true(t < ntr);
		dropped[t] = true;
		uint32_t whole = 2 + (t % 3 == 0) + 2 * (t % 5 == 0);
		assert_int_equal(d.rows[i], whole);
	}
	for (uint64_t t = 0; t < ntr; t++)
		assert_int_equal(rows_of[t] == 0, dropped[t]);
	/* The oracle, from the generator's rows. */
	ms_ledger_set gone;
	ms_ledger_set_init(&gone);
	for (size_t i = 0; i < s.all.n; i++)
		if (dropped[s.all.v[i].trace])
			ms_ledger_set_add_row(&gone, &rows[i]);
	assert_int_equal(gone.kind[MS_KIND_CORE].rows,
	                 res.sampling.rows_dropped);
	assert_int_equal(ms_ledger_set_sub(&before, &gone), 0);
	assert_ledgers(&s.f, &before);
	sfx_close(&s);
}

/* A merge that fails after deciding its drops reports none of them. */
static int
fail_publish(void *arg, const ms_merge_req *req, enum ms_merge_stage st,
             uint64_t detail)
{
	(void)arg;
	(void)req;
	(void)detail;
	return st == MS_MERGE_STAGE_PUBLISH ? MS_ERR_IO : 0;
}

static void
test_on_drop_silent_when_the_merge_fails(void **state)
{
	(void)state;
	sfx s;
	sfx_open(&s, 90, "detdrop:50");
	int64_t now = MATURE_NS;
	ms_merge_hooks h = { .stage = fail_publish };
	ms_merge_result res;
	drops_seen d;
	memset(&d, 0, sizeof(d));
	assert_int_equal(sfx_merge_drops(&s, now, &h, &d, &res), MS_ERR_IO);
	assert_int_equal(d.calls, 0);
	assert_int_equal(res.output_id, 0);
	sfx_close(&s);
}

/* Whether trace t is among the drops d saw. */
static bool
dropped_trace(const drops_seen *d, uint64_t t)
{
	for (size_t i = 0; i < d->n; i++)
		if (d->trace[i] == t)
			return true;
	return false;
}

/* A merge that drops the traces at either end of its inputs' time range
 * still records the inputs' range as its output's (DESIGN.md "Merge":
 * output bounds come from the inputs; the reference engine sets them
 * from its inputs' metadata whatever the merge kept), so the output is no
 * younger or older than its inputs for maturity, the picker's order and
 * the guards of later merges. Its blocks lie inside that range. It used
 * to record the kept rows' own range. */
static void
test_dropping_merge_keeps_the_inputs_bounds(void **state)
{
	(void)state;
	sfx s;
	sfx_open(&s, 29, "detdrop:50");
	int64_t in_min = INT64_MAX, in_max = INT64_MIN;
	ms_view *v = NULL;
	assert_int_equal(ms_shard_view(s.f.s, &v, NULL), 0);
	for (int i = 0; i < 3; i++) {
		const ms_part_meta *m = ms_part_get_meta(view_part(v, s.ids[i]));
		in_min = m->min_ts < in_min ? m->min_ts : in_min;
		in_max = m->max_ts > in_max ? m->max_ts : in_max;
	}
	ms_view_release(v);
	ms_merge_result res;
	drops_seen d;
	memset(&d, 0, sizeof(d));
	assert_int_equal(sfx_merge_drops(&s, MATURE_NS, NULL, &d, &res), 0);
	/* Trace numbers are start-time order (merge_gen.h): the last
	 * trace, 28, holds the inputs' latest row; the sampler dropped it
	 * (and kept trace 0, so the test sees one end move). */
	assert_true(dropped_trace(&d, 28));
	assert_true(res.traces_out > 0 && d.n > 0);
	assert_int_equal(res.output.min_ts, in_min);
	assert_int_equal(res.output.max_ts, in_max);
	assert_int_equal(ms_shard_view(s.f.s, &v, NULL), 0);
	const ms_part *out = view_part(v, res.output_id);
	assert_int_equal(ms_part_get_meta(out)->min_ts, in_min);
	assert_int_equal(ms_part_get_meta(out)->max_ts, in_max);
	/* The part reads back whole: every block inside its bounds. */
	assert_int_equal(ms_part_verify(out, NULL), 0);
	ms_view_release(v);
	sfx_close(&s);
}

/* A hook that, at the start of publication, introduces a part holding a
 * copy of the rows of trace 7 + k at the k-th attempt (outside the
 * selection, inside its time range), for the first `times` attempts. */
typedef struct intruder {
	fx *f;
	gen_set *all;
	int times;
	int attempts;
} intruder;

static int
intrude(void *arg, const ms_merge_req *req, enum ms_merge_stage st,
        uint64_t detail)
{
	(void)req;
	(void)detail;
	intruder *in = arg;
	if (st != MS_MERGE_STAGE_PUBLISH)
		return 0;
	uint64_t t = 7 + (uint64_t)in->attempts;
	if (in->attempts++ >= in->times)
		return 0;
	gen_set one = { 0 };
	for (size_t i = 0; i < in->all->n; i++)
		if (in->all->v[i].trace == t)
			gen_add(&one, t, (uint32_t)(100 + one.n), 400);
	fx_put(in->f, gen_rows(&one), one.n);
	gen_free(&one);
	return 0;
}

/* What a merge of 30 traces under detdrop:100 whose sampling attempt was
 * raced by a copy of trace 7 shows: that attempt discarded, the merge
 * redone losslessly at once (DESIGN.md "Fragment guard"; the reference
 * retries without its filter after one rejected publication): every
 * trace kept, none reported dropped. Closes s. */
static void
assert_went_lossless(sfx *s, const ms_merge_result *res, const drops_seen *d)
{
	assert_int_equal(res->sampling.attempts_discarded, 1);
	assert_int_equal(res->sampling.klass, MS_SAMPLING_NOT_EXECUTED);
	assert_int_equal(res->sampling.reason, MS_SREASON_LOSSLESS_RETRY);
	assert_int_equal(res->sampling.traces_dropped, 0);
	assert_int_equal(res->traces_out, 30);
	assert_int_equal(d->n, 0);
	assert_int_equal(d->calls, 0);
	assert_false(fx_has_tmp(&s->f));
	sfx_close(s);
}

/* The inventory changes under a dropping merge once: the attempt is
 * discarded and the merge redone losslessly, not sampled again (it used
 * to sample up to three times, dropping all but the trace the new part
 * may hold). */
static void
test_inventory_change_once_goes_lossless(void **state)
{
	(void)state;
	sfx s;
	sfx_open(&s, 30, "detdrop:100");
	int64_t now = MATURE_NS;
	intruder in = { &s.f, &s.all, 1, 0 };
	ms_merge_hooks h = { .stage = intrude, .arg = &in };
	ms_merge_result res;
	drops_seen d;
	memset(&d, 0, sizeof(d));
	assert_int_equal(sfx_merge_drops(&s, now, &h, &d, &res), 0);
	assert_int_equal(in.attempts, 2); /* 1 sampling + 1 lossless */
	assert_went_lossless(&s, &res, &d);
}

/* A part introduced after the guard revalidated and before the merge
 * publishes is seen too: it holds a copy of trace 7, which the merge must
 * not drop (its attempt is discarded and the merge redone losslessly).
 * It used to be published with trace 7 dropped, leaving the intruder's
 * fragment of it alone. */
typedef struct late_intruder {
	intruder in;
	int calls;
	bool unrelated; /* introduce a trace of no input instead */
} late_intruder;

static void
intrude_late(void *arg)
{
	late_intruder *li = arg;
	if (li->calls++ != 0)
		return;
	if (!li->unrelated) {
		intrude(&li->in, NULL, MS_MERGE_STAGE_PUBLISH, 0);
		return;
	}
	gen_set one = { 0 };
	gen_add(&one, 5000, 100, 400);
	fx_put(li->in.f, gen_rows(&one), one.n);
	gen_free(&one);
}

static void
test_inventory_change_after_revalidation(void **state)
{
	(void)state;
	sfx s;
	sfx_open(&s, 30, "detdrop:100");
	late_intruder li = { { &s.f, &s.all, 1, 0 }, 0, false };
	ms_merge_hooks h = { .revalidated = intrude_late, .arg = &li };
	ms_merge_result res;
	drops_seen d;
	memset(&d, 0, sizeof(d));
	assert_int_equal(sfx_merge_drops(&s, MATURE_NS, &h, &d, &res), 0);
	assert_int_equal(li.in.attempts, 1);
	assert_went_lossless(&s, &res, &d);

	/* A part holding none of the dropped traces: revalidated in turn,
	 * and the attempt publishes on the new inventory. */
	sfx_open(&s, 30, "detdrop:100");
	li = (late_intruder){ { &s.f, &s.all, 1, 0 }, 0, true };
	memset(&d, 0, sizeof(d));
	assert_int_equal(sfx_merge_drops(&s, MATURE_NS, &h, &d, &res), 0);
	assert_int_equal(li.calls, 2);
	assert_int_equal(res.sampling.attempts_discarded, 0);
	assert_int_equal(res.sampling.traces_dropped, 30);
	assert_int_equal(res.traces_out, 0);
	assert_int_equal(d.calls, 30);
	assert_false(fx_has_tmp(&s.f));
	sfx_close(&s);
}

/* The inventory keeps changing: the lossless redo after the discarded
 * sampling attempt publishes all the same (it drops nothing, so nothing
 * can conflict) and reports nothing. */
static void
test_inventory_keeps_changing_goes_lossless(void **state)
{
	(void)state;
	sfx s;
	sfx_open(&s, 30, "detdrop:100");
	ms_ledger_set before, after;
	fx_ledgers(&s.f, &before);
	int64_t now = MATURE_NS;
	intruder in = { &s.f, &s.all, 1000, 0 };
	ms_merge_hooks h = { .stage = intrude, .arg = &in };
	ms_merge_result res;
	drops_seen d;
	memset(&d, 0, sizeof(d));
	assert_int_equal(sfx_merge_drops(&s, now, &h, &d, &res), 0);
	assert_int_equal(in.attempts, 2); /* 1 sampling + 1 lossless */
	assert_int_equal(res.sampling.attempts_discarded, 1);
	assert_int_equal(res.sampling.klass, MS_SAMPLING_NOT_EXECUTED);
	assert_int_equal(res.sampling.reason, MS_SREASON_LOSSLESS_RETRY);
	/* The sampling attempt had a plan: the retry keeps it, as the
	 * reference's event keeps its filter's. */
	assert_plan(&res.sampling);
	assert_int_equal(res.sampling.traces_dropped, 0);
	assert_int_equal(res.traces_out, 30);
	assert_int_equal(d.calls, 0);
	/* The inputs' rows all survive; the intruders (copies of traces 7
	 * and 8: 2 + 2 rows) were added outside. */
	fx_ledgers(&s.f, &after);
	assert_int_equal(after.kind[MS_KIND_CORE].rows,
	                 before.kind[MS_KIND_CORE].rows + 4);
	assert_false(fx_has_tmp(&s.f));
	sfx_close(&s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_inventory_change_after_revalidation),
		cmocka_unit_test(test_disjoint_inputs_copy_every_block_raw),
		cmocka_unit_test(test_dictionary_merge),
		cmocka_unit_test(test_kept_zstd_contexts_write_the_same),
		cmocka_unit_test(test_pipeline_out_of_memory),
		cmocka_unit_test(test_sampled_merge_out_of_memory),
		cmocka_unit_test(test_failed_merge_reports_its_calls),
		cmocka_unit_test(test_fragmented_traces_come_out_whole),
		cmocka_unit_test(test_combined_rows_ordered_by_start),
		cmocka_unit_test(test_depth_and_bounds),
		cmocka_unit_test(test_result_figures),
		cmocka_unit_test(test_inactive_input_is_a_conflict),
		cmocka_unit_test(test_finalize_single_input),
		cmocka_unit_test(test_injected_failure_at_every_stage),
		cmocka_unit_test(test_corrupt_input_fails_cleanly),
		cmocka_unit_test(test_write_error_fails_cleanly),
		cmocka_unit_test(test_output_create_error_is_write_stage),
		cmocka_unit_test(test_allocation_failure_at_every_nth),
		cmocka_unit_test(test_publish_conflict_fails_cleanly),
		cmocka_unit_test(test_snapshot_commit_failure_fails_cleanly),
		cmocka_unit_test(test_split_traces),
		cmocka_unit_test(test_hook_sees_every_stage),
		cmocka_unit_test(test_detdrop_drops_whole_traces),
		cmocka_unit_test(test_alwayskeep_equals_disabled),
		cmocka_unit_test(test_retain_references_stable_blocks),
		cmocka_unit_test(test_retain_and_reread_write_the_same),
		cmocka_unit_test(test_timed_out_batch_untouched_after_merge),
		cmocka_unit_test(test_staged_gauge_moves_during_merge),
		cmocka_unit_test(test_staging_freed_before_output_closes),
		cmocka_unit_test(test_drop_rows_held_compactly),
		cmocka_unit_test(test_boundary_guard_retains_edge_traces),
		cmocka_unit_test(test_segment_and_event_reasons),
		cmocka_unit_test(test_no_segment_keeps_droppable_traces),
		cmocka_unit_test(test_sampled_corrupt_unit_fails_cleanly),
		cmocka_unit_test(test_hot_selection_bypasses_sampling),
		cmocka_unit_test(test_trace_policy_young_selection_not_sampled),
		cmocka_unit_test(test_trace_policy_all_traces_hot),
		cmocka_unit_test(test_trace_policy_hot_and_oversized),
		cmocka_unit_test(test_everything_dropped_publishes_no_output),
		cmocka_unit_test(
		        test_alwayskeep_writes_identical_bytes_and_copies_raw),
		cmocka_unit_test(test_only_projected_columns_are_decoded),
		cmocka_unit_test(
		        test_on_drop_reports_exactly_the_dropped_traces),
		cmocka_unit_test(test_on_drop_silent_when_the_merge_fails),
		cmocka_unit_test(test_decide_once_and_bounds_checks),
		cmocka_unit_test(test_hot_traces_never_decided),
		cmocka_unit_test(test_dropping_merge_keeps_the_inputs_bounds),
		cmocka_unit_test(test_inventory_change_once_goes_lossless),
		cmocka_unit_test(test_inventory_keeps_changing_goes_lossless),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
