/*
 * test_shard.c - the shard: transactions and epochs, views pinning deleted
 * parts, failures that must change nothing, crash recovery from every
 * on-disk state a killed writer can leave (built by hand, by SIGKILL, and
 * by a process ending after each step of a publication),
 * and allocation failure at every point of open, introduce and replace.
 */
#include "testdir.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ms_ledger.h"
#include "ms_shard.h"
#include "ms_sidx.h"
#include "shard_testlib.h"
#include "thread_testlib.h"

#include <xxhash.h>

/* ---- rows derived from a seed: every raw part holds one seed ---- */

#define SEED_ROWS_MAX 6

struct seed_rows {
	size_t n;
	ms_row rows[SEED_ROWS_MAX];
	uint8_t tid[SEED_ROWS_MAX][32];
	uint8_t body[SEED_ROWS_MAX][8];
	char seg[SEED_ROWS_MAX][24];
	const char *tags[SEED_ROWS_MAX][2];
};

static void
seed_rows(uint64_t seed, struct seed_rows *g)
{
	static const char *const tagv[] = { "http.method=GET", "status=200" };
	memset(g, 0, sizeof(*g));
	g->n = 1 + seed % SEED_ROWS_MAX;
	for (size_t j = 0; j < g->n; j++) {
		ms_row *r = &g->rows[j];
		int len = snprintf((char *)g->tid[j], sizeof(g->tid[j]),
		                   "t%06llu-%zu", (unsigned long long)seed,
		                   j % 2);
		r->trace_id = g->tid[j];
		r->trace_id_len = (uint32_t)len;
		r->span_id = seed * 100 + j;
		snprintf(g->seg[j], sizeof(g->seg[j]), "seg-%llu",
		         (unsigned long long)seed);
		r->segment_id = g->seg[j];
		r->service = (seed + j) % 3 ? "orders" : "billing";
		r->instance = "i-1";
		r->endpoint = "/checkout";
		r->start_ns = 1700000000000000000LL + (int64_t)seed * 1000 +
		              (int64_t)j;
		r->latency_ms = (uint32_t)(seed * 7 + j) % 900;
		r->is_error = (seed + j) % 5 == 0;
		g->tags[j][0] = tagv[0];
		g->tags[j][1] = tagv[1];
		r->tags = g->tags[j];
		r->ntags = (uint32_t)(j % 3);
		for (int b = 0; b < 8; b++)
			g->body[j][b] = (uint8_t)(seed >> (8 * b));
		r->body = g->body[j];
		r->body_len = 8;
	}
}

/* The seed a row came from (its body). */
static uint64_t
row_seed(const ms_row *r)
{
	uint64_t v = 0;
	for (int b = 7; b >= 0; b--)
		v = v << 8 | r->body[b];
	return v;
}

static void
seeds_ledger(const uint64_t *seeds, size_t n, ms_ledger_set *out)
{
	ms_ledger_set_init(out);
	struct seed_rows g;
	for (size_t i = 0; i < n; i++) {
		seed_rows(seeds[i], &g);
		for (size_t j = 0; j < g.n; j++)
			ms_ledger_set_add_row(out, &g.rows[j]);
	}
}

/* Write part `id` (all three kinds) at its tmp paths from the rows of
 * `seeds`; no_sync: without the writers' fsyncs (for a shard whose commit
 * syncs its outputs). */
static int
write_part_sync(ms_shard *s, uint64_t id, const uint64_t *seeds, size_t nseeds,
                uint32_t depth, bool no_sync)
{
	size_t cap = nseeds * SEED_ROWS_MAX + 1;
	ms_row *rows = calloc(cap, sizeof(*rows));
	struct seed_rows *g = calloc(nseeds + 1, sizeof(*g));
	if (!rows || !g)
		return MS_ERR_NOMEM;
	size_t n = 0;
	for (size_t i = 0; i < nseeds; i++) {
		seed_rows(seeds[i], &g[i]);
		for (size_t j = 0; j < g[i].n; j++)
			rows[n++] = g[i].rows[j];
	}
	ms_part_writer_opts o = { .depth = depth, .no_sync = no_sync };
	ms_errbuf eb = { { 0 } };
	int rc = sh_write_tmp_kinds(s, id, rows, n, &o, &eb);
	if (rc)
		fprintf(stderr, "write_part %llu: %s\n", (unsigned long long)id,
		        eb.msg);
	free(rows);
	free(g);
	return rc;
}

static int
write_part(ms_shard *s, uint64_t id, const uint64_t *seeds, size_t nseeds,
           uint32_t depth)
{
	return write_part_sync(s, id, seeds, nseeds, depth, false);
}

static ms_shard *
open_shard(const char *dir, bool create, ms_mem *mem)
{
	ms_shard_opts o = { .dir = dir, .create = create, .mem = mem };
	ms_shard *s = NULL;
	ms_errbuf eb = { { 0 } };
	int rc = ms_shard_open(&s, &o, &eb);
	if (rc)
		fail_msg("open %s: %s (%s)", dir, eb.msg, ms_strerror(rc));
	return s;
}

static uint64_t
add_raw(ms_shard *s, uint64_t seed)
{
	uint64_t id;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_shard_new_id(s, &id, &eb), 0);
	assert_int_equal(write_part(s, id, &seed, 1, 0), 0);
	int rc = ms_shard_introduce(s, id, &eb);
	if (rc)
		fail_msg("introduce: %s", eb.msg);
	return id;
}

static void
shard_ledger(ms_shard *s, ms_ledger_set *out)
{
	ms_view *v;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_shard_view(s, &v, &eb), 0);
	int rc = ms_ledger_of_view(v, out, NULL, &eb);
	if (rc)
		fail_msg("ledger of view: %s", eb.msg);
	ms_view_release(v);
}

static char *
make_dir(void)
{
	char tmpl[256];
	char *d = ms_test_mkdtemp(tmpl, sizeof(tmpl), "ms-test-shard");
	assert_non_null(d);
	char *s = malloc(strlen(d) + 8);
	sprintf(s, "%s/shard", d);
	return s;
}

static void
rm_dir(char *dir)
{
	char *slash = strrchr(dir, '/');
	*slash = '\0';
	assert_int_equal(ms_fs_rm_tree(dir, NULL), 0);
	free(dir);
}

static bool
path_exists(const char *p)
{
	struct stat st;
	return stat(p, &st) == 0;
}

static bool
part_on_disk(ms_shard *s, enum ms_part_kind k, uint64_t id)
{
	char p[4096];
	ms_shard_part_path(s, k, id, p, sizeof(p));
	return path_exists(p);
}

static bool
tmp_on_disk(ms_shard *s, enum ms_part_kind k, uint64_t id)
{
	char p[4096];
	ms_shard_tmp_path(s, k, id, p, sizeof(p));
	return path_exists(p);
}

/* The number a shell command prints. */
static int
count_of(const char *cmd)
{
	FILE *f = popen(cmd, "r");
	int n = -1;
	assert_int_equal(fscanf(f, "%d", &n), 1);
	pclose(f);
	return n;
}

/* Entries of DIR/tmp. */
static int
tmp_count(const char *dir)
{
	char cmd[4200];
	snprintf(cmd, sizeof(cmd), "ls -A '%s/tmp' | wc -l", dir);
	return count_of(cmd);
}

/* ---- transactions ---- */

static void
test_transactions_bump_epoch(void **state)
{
	(void)state;
	char *dir = make_dir();
	ms_errbuf eb = { { 0 } };
	ms_shard_opts o = { .dir = dir };
	ms_shard *s;
	assert_int_equal(ms_shard_open(&s, &o, &eb), MS_ERR_NOTFOUND);
	assert_null(s);
	assert_non_null(strstr(eb.msg, "snapshot"));

	s = open_shard(dir, true, NULL);
	assert_string_equal(ms_shard_recovery_note(s), "");
	assert_int_equal(ms_shard_epoch(s), 0);
	uint64_t a = add_raw(s, 1), b = add_raw(s, 2), c = add_raw(s, 3);
	assert_true(a < b && b < c);
	assert_int_equal(ms_shard_epoch(s), 3);
	assert_int_equal(ms_shard_count(s), 3);

	/* Merge a and b into one output of depth 1. */
	uint64_t out;
	assert_int_equal(ms_shard_new_id(s, &out, &eb), 0);
	uint64_t seeds[] = { 1, 2 };
	assert_int_equal(write_part(s, out, seeds, 2, 1), 0);
	uint64_t in[] = { b, a };
	assert_int_equal(ms_shard_replace(s, in, 2, out, &eb), 0);
	assert_int_equal(ms_shard_epoch(s), 4);
	for (int k = 0; k < MS_KIND_COUNT; k++) {
		assert_false(part_on_disk(s, (enum ms_part_kind)k, a));
		assert_false(part_on_disk(s, (enum ms_part_kind)k, b));
		assert_true(part_on_disk(s, (enum ms_part_kind)k, out));
		assert_false(tmp_on_disk(s, (enum ms_part_kind)k, out));
	}
	ms_view *v;
	assert_int_equal(ms_shard_view(s, &v, &eb), 0);
	assert_int_equal(ms_view_epoch(v), 4);
	assert_int_equal(ms_view_count(v), 2);
	assert_int_equal(ms_view_id(v, 0), c);
	assert_int_equal(ms_view_id(v, 1), out);
	assert_null(ms_view_find(v, a, MS_KIND_CORE));
	const ms_part *po = ms_view_find(v, out, MS_KIND_START_TIME);
	assert_non_null(po);
	assert_int_equal(ms_part_kind_of(po), MS_KIND_START_TIME);
	assert_int_equal(
	        ms_part_get_meta(ms_view_part(v, 1, MS_KIND_CORE))->depth, 1);
	ms_view_release(v);

	/* Lossless so far: the ledger is that of seeds 1..3. */
	ms_ledger_set want, got;
	uint64_t all[] = { 1, 2, 3 };
	seeds_ledger(all, 3, &want);
	shard_ledger(s, &got);
	assert_true(ms_ledger_set_equal(&want, &got));

	/* A merge that keeps nothing. */
	assert_int_equal(ms_shard_remove(s, &c, 1, &eb), 0);
	assert_int_equal(ms_shard_epoch(s), 5);
	assert_false(part_on_disk(s, MS_KIND_CORE, c));
	ms_shard_close(s);

	/* Reopen: same inventory, epoch, nothing to recover; IDs go on. */
	s = open_shard(dir, false, NULL);
	assert_string_equal(ms_shard_recovery_note(s), "");
	assert_int_equal(ms_shard_epoch(s), 5);
	assert_int_equal(ms_shard_count(s), 1);
	seeds_ledger(seeds, 2, &want);
	shard_ledger(s, &got);
	assert_true(ms_ledger_set_equal(&want, &got));
	uint64_t next;
	assert_int_equal(ms_shard_new_id(s, &next, &eb), 0);
	assert_true(next > out);
	ms_shard_close(s);
	rm_dir(dir);
}

static void
test_view_pins_removed_parts(void **state)
{
	(void)state;
	char *dir = make_dir();
	ms_errbuf eb = { { 0 } };
	ms_shard *s = open_shard(dir, true, NULL);
	uint64_t a = add_raw(s, 10), b = add_raw(s, 11);
	ms_view *v1, *v2;
	assert_int_equal(ms_shard_view(s, &v1, &eb), 0);
	assert_int_equal(ms_shard_view(s, &v2, &eb), 0);
	uint64_t out;
	assert_int_equal(ms_shard_new_id(s, &out, &eb), 0);
	uint64_t seeds[] = { 10, 11 };
	assert_int_equal(write_part(s, out, seeds, 2, 1), 0);
	uint64_t in[] = { a, b };
	assert_int_equal(ms_shard_replace(s, in, 2, out, &eb), 0);
	/* Out of the inventory, but pinned: still on disk and readable. */
	assert_true(part_on_disk(s, MS_KIND_CORE, a));
	assert_true(part_on_disk(s, MS_KIND_LATENCY, b));
	ms_ledger_set l1, want;
	assert_int_equal(ms_ledger_of_view(v1, &l1, NULL, &eb), 0);
	seeds_ledger(seeds, 2, &want);
	assert_true(ms_ledger_set_equal(&l1, &want));
	assert_int_equal(ms_view_epoch(v1), 2);
	ms_view_release(v1);
	assert_true(part_on_disk(s, MS_KIND_CORE, a));
	/* The last pin goes: now they are deleted. */
	ms_view_release(v2);
	for (int k = 0; k < MS_KIND_COUNT; k++) {
		assert_false(part_on_disk(s, (enum ms_part_kind)k, a));
		assert_false(part_on_disk(s, (enum ms_part_kind)k, b));
	}
	/* A view may outlive its shard. */
	ms_view *v3;
	assert_int_equal(ms_shard_view(s, &v3, &eb), 0);
	ms_shard_close(s);
	assert_int_equal(ms_view_count(v3), 1);
	assert_int_equal(
	        ms_part_get_meta(ms_view_part(v3, 0, MS_KIND_CORE))->id, out);
	ms_view_release(v3);
	rm_dir(dir);
}

/* ms_shard_strays: nothing but the active parts' files in parts/, a
 * removed part counted while a view pins it, and any other entry (a
 * part file nobody lists, a foreign name) counted and named. */
static void
test_strays(void **state)
{
	(void)state;
	char *dir = make_dir();
	ms_errbuf eb = { { 0 } };
	ms_shard *s = open_shard(dir, true, NULL);
	uint64_t a = add_raw(s, 10), b = add_raw(s, 11);
	size_t n = 99;
	char first[256];
	assert_int_equal(ms_shard_strays(s, &n, first, sizeof(first), &eb), 0);
	assert_int_equal(n, 0);
	assert_string_equal(first, "");
	ms_view *v;
	assert_int_equal(ms_shard_view(s, &v, &eb), 0);
	uint64_t out;
	assert_int_equal(ms_shard_new_id(s, &out, &eb), 0);
	uint64_t seeds[] = { 10, 11 };
	assert_int_equal(write_part(s, out, seeds, 2, 1), 0);
	uint64_t in[] = { a, b };
	assert_int_equal(ms_shard_replace(s, in, 2, out, &eb), 0);
	/* a and b are out of the inventory, pinned by v: their six files. */
	assert_int_equal(ms_shard_strays(s, &n, first, sizeof(first), &eb), 0);
	assert_int_equal(n, 2 * MS_KIND_COUNT);
	char hex[17];
	snprintf(hex, sizeof(hex), "%016llx", (unsigned long long)a);
	if (strncmp(first, hex, 16)) {
		snprintf(hex, sizeof(hex), "%016llx", (unsigned long long)b);
		assert_int_equal(strncmp(first, hex, 16), 0);
	}
	ms_view_release(v);
	assert_int_equal(ms_shard_strays(s, &n, NULL, 0, &eb), 0);
	assert_int_equal(n, 0);
	/* A part file of an ID nobody lists, and a name that is no part's. */
	char p[4096];
	ms_shard_part_path(s, MS_KIND_LATENCY, out + 100, p, sizeof(p));
	FILE *fp = fopen(p, "w");
	assert_non_null(fp);
	fclose(fp);
	assert_int_equal(ms_shard_strays(s, &n, first, sizeof(first), &eb), 0);
	assert_int_equal(n, 1);
	assert_non_null(strstr(p, first));
	assert_int_equal(unlink(p), 0);
	snprintf(p, sizeof(p), "%s/parts/notes.txt", dir);
	fp = fopen(p, "w");
	assert_non_null(fp);
	fclose(fp);
	assert_int_equal(ms_shard_strays(s, &n, first, sizeof(first), &eb), 0);
	assert_int_equal(n, 1);
	assert_string_equal(first, "notes.txt");
	ms_shard_close(s);
	rm_dir(dir);
}

/* A view of named parts pins those and no other: merged-away parts a
 * narrow view does not name are deleted at once. */
static void
test_view_of_pins_only_its_parts(void **state)
{
	(void)state;
	char *dir = make_dir();
	ms_errbuf eb = { { 0 } };
	ms_shard *s = open_shard(dir, true, NULL);
	uint64_t a = add_raw(s, 10), b = add_raw(s, 11), c = add_raw(s, 12);
	ms_view *vc, *vab;
	uint64_t want_c[] = { c, 0xdeadbeef, c };
	assert_int_equal(ms_shard_view_of(s, want_c, 3, &vc, &eb), 0);
	assert_int_equal(ms_view_count(vc), 1);
	assert_int_equal(ms_view_id(vc, 0), c);
	assert_null(ms_view_find(vc, a, MS_KIND_CORE));
	uint64_t want_ba[] = { b, a };
	assert_int_equal(ms_shard_view_of(s, want_ba, 2, &vab, &eb), 0);
	assert_int_equal(ms_view_count(vab), 2);
	assert_int_equal(ms_view_id(vab, 0), a < b ? a : b);
	assert_int_equal(ms_view_id(vab, 1), a < b ? b : a);
	assert_int_equal(ms_view_epoch(vab), ms_shard_epoch(s));

	/* c's view does not keep a and b; vab does, until released. */
	uint64_t out;
	assert_int_equal(ms_shard_new_id(s, &out, &eb), 0);
	uint64_t seeds[] = { 10, 11 };
	assert_int_equal(write_part(s, out, seeds, 2, 1), 0);
	uint64_t in[] = { a, b };
	assert_int_equal(ms_shard_replace(s, in, 2, out, &eb), 0);
	assert_true(part_on_disk(s, MS_KIND_CORE, a));
	ms_view_release(vab);
	for (int k = 0; k < MS_KIND_COUNT; k++) {
		assert_false(part_on_disk(s, (enum ms_part_kind)k, a));
		assert_false(part_on_disk(s, (enum ms_part_kind)k, b));
	}
	assert_true(part_on_disk(s, MS_KIND_CORE, c));
	assert_non_null(ms_view_find(vc, c, MS_KIND_LATENCY));
	ms_view_release(vc);

	/* Nothing named, or nothing there: an empty view. */
	ms_view *ve;
	assert_int_equal(ms_shard_view_of(s, in, 2, &ve, &eb), 0);
	assert_int_equal(ms_view_count(ve), 0);
	ms_view_release(ve);
	assert_int_equal(ms_shard_view_of(s, NULL, 0, &ve, &eb), 0);
	assert_int_equal(ms_view_count(ve), 0);
	ms_view_release(ve);
	ms_shard_close(s);
	rm_dir(dir);
}

/* Snapshot bytes, to prove a failed transaction did not touch them. */
static uint8_t *
snapshot_bytes(const char *dir, size_t *n)
{
	char p[4200];
	snprintf(p, sizeof(p), "%s/snapshot", dir);
	*n = 0;
	uint8_t *b = (uint8_t *)ms_test_read(p, 0, n);
	assert_non_null(b);
	return b;
}

static void
assert_unchanged(ms_shard *s, const char *dir, const uint8_t *snap,
                 size_t snapn, uint64_t epoch, const uint64_t *ids, size_t n)
{
	size_t m;
	uint8_t *now = snapshot_bytes(dir, &m);
	/* Same epoch and parts; next_id (24..31, hence the checksum) may
	 * have grown, since a snapshot written back keeps reserved IDs. */
	assert_int_equal(m, snapn);
	assert_memory_equal(now, snap, 24);
	assert_memory_equal(now + 32, snap + 32, m - 40);
	free(now);
	assert_int_equal(ms_shard_epoch(s), epoch);
	assert_int_equal(ms_shard_count(s), n);
	for (size_t i = 0; i < n; i++)
		for (int k = 0; k < MS_KIND_COUNT; k++)
			assert_true(
			        part_on_disk(s, (enum ms_part_kind)k, ids[i]));
}

static void
test_failures_change_nothing(void **state)
{
	(void)state;
	char *dir = make_dir();
	ms_errbuf eb = { { 0 } };
	ms_shard *s = open_shard(dir, true, NULL);
	uint64_t ids[2] = { add_raw(s, 20), add_raw(s, 21) };
	size_t sn;
	uint8_t *snap = snapshot_bytes(dir, &sn);

	/* An input that is not active: conflict. */
	uint64_t out;
	assert_int_equal(ms_shard_new_id(s, &out, &eb), 0);
	uint64_t seeds[] = { 20, 21 };
	assert_int_equal(write_part(s, out, seeds, 2, 1), 0);
	uint64_t bad[] = { ids[0], 999 };
	assert_int_equal(ms_shard_replace(s, bad, 2, out, &eb),
	                 MS_ERR_CONFLICT);
	assert_non_null(strstr(eb.msg, "00000000000003e7"));
	assert_unchanged(s, dir, snap, sn, 2, ids, 2);
	assert_true(tmp_on_disk(s, MS_KIND_CORE, out));

	/* A transaction asked for at an epoch the inventory has left:
	 * conflict, naming both epochs, and nothing changes. */
	bool moved = false;
	uint64_t e = ms_shard_epoch(s);
	assert_int_equal(
	        ms_shard_replace_at(s, ids, 2, out, e - 1, &moved, &eb),
	        MS_ERR_CONFLICT);
	assert_true(moved);
	assert_non_null(strstr(eb.msg, "moved from epoch"));
	assert_unchanged(s, dir, snap, sn, 2, ids, 2);
	assert_true(tmp_on_disk(s, MS_KIND_CORE, out));
	assert_int_equal(ms_shard_replace_at(s, bad, 2, out, e, &moved, &eb),
	                 MS_ERR_CONFLICT);
	assert_false(moved); /* the input, not the epoch */

	/* An output never written. */
	uint64_t ghost;
	assert_int_equal(ms_shard_new_id(s, &ghost, &eb), 0);
	assert_int_equal(ms_shard_replace(s, ids, 2, ghost, &eb),
	                 MS_ERR_NOTFOUND);
	assert_unchanged(s, dir, snap, sn, 2, ids, 2);

	/* Each commit step failing, ENOSPC mapped to NOSPACE. */
	static const struct {
		enum ms_shard_fault f;
		int err;
		int want;
	} faults[] = {
		{ MS_SHARD_FAULT_OPEN, EACCES, MS_ERR_IO },
		{ MS_SHARD_FAULT_WRITE, ENOSPC, MS_ERR_NOSPACE },
		{ MS_SHARD_FAULT_FSYNC, EIO, MS_ERR_IO },
		{ MS_SHARD_FAULT_RENAME, EXDEV, MS_ERR_IO },
		{ MS_SHARD_FAULT_DIRSYNC, EDQUOT, MS_ERR_NOSPACE },
	};
	for (size_t i = 0; i < sizeof(faults) / sizeof(faults[0]); i++) {
		ms_shard_inject_fault(s, faults[i].f, faults[i].err);
		assert_int_equal(ms_shard_replace(s, ids, 2, out, &eb),
		                 faults[i].want);
		assert_non_null(strstr(eb.msg, "snapshot"));
		assert_unchanged(s, dir, snap, sn, 2, ids, 2);
		for (int k = 0; k < MS_KIND_COUNT; k++) {
			assert_true(tmp_on_disk(s, (enum ms_part_kind)k, out));
			assert_false(
			        part_on_disk(s, (enum ms_part_kind)k, out));
		}
		assert_int_equal(tmp_count(dir), 3);
	}
	/* Then it goes through. */
	assert_int_equal(ms_shard_replace(s, ids, 2, out, &eb), 0);
	assert_int_equal(ms_shard_epoch(s), 3);
	free(snap);
	ms_shard_close(s);

	/* And the reopened shard agrees. */
	s = open_shard(dir, false, NULL);
	assert_int_equal(ms_shard_epoch(s), 3);
	ms_ledger_set want, got;
	seeds_ledger(seeds, 2, &want);
	shard_ledger(s, &got);
	assert_true(ms_ledger_set_equal(&want, &got));
	ms_shard_close(s);
	rm_dir(dir);
}

/* ---- recovery from hand-built states ---- */

static void
test_recovery_leftovers(void **state)
{
	(void)state;
	char *dir = make_dir();
	ms_errbuf eb = { { 0 } };
	ms_shard *s = open_shard(dir, true, NULL);
	uint64_t a = add_raw(s, 30), b = add_raw(s, 31), c = add_raw(s, 32);
	/* Keep copies of a and b as they are before the merge. */
	char cmd[4200];
	snprintf(cmd, sizeof(cmd),
	         "mkdir -p '%s.keep' && cp -a '%s/parts' '%s.keep/'", dir, dir,
	         dir);
	assert_int_equal(system(cmd), 0);
	/* (1) A merge committed whose input deletion was interrupted. */
	uint64_t out;
	assert_int_equal(ms_shard_new_id(s, &out, &eb), 0);
	uint64_t seeds[] = { 30, 31 };
	assert_int_equal(write_part(s, out, seeds, 2, 1), 0);
	uint64_t in[] = { a, b };
	assert_int_equal(ms_shard_replace(s, in, 2, out, &eb), 0);
	/* (2) A part still being written. */
	uint64_t partial;
	assert_int_equal(ms_shard_new_id(s, &partial, &eb), 0);
	uint64_t ps = 33;
	assert_int_equal(write_part(s, partial, &ps, 1, 0), 0);
	/* (3) An output published but whose snapshot never came. */
	uint64_t orphan;
	assert_int_equal(ms_shard_new_id(s, &orphan, &eb), 0);
	uint64_t os = 34;
	assert_int_equal(write_part(s, orphan, &os, 1, 0), 0);
	char t[4096], f[4096];
	for (int k = 0; k < MS_KIND_COUNT; k++) {
		ms_shard_tmp_path(s, (enum ms_part_kind)k, orphan, t,
		                  sizeof(t));
		ms_shard_part_path(s, (enum ms_part_kind)k, orphan, f,
		                   sizeof(f));
		assert_int_equal(ms_part_publish(t, f, NULL, &eb), 0);
	}
	/* (4) Writes cut short: a part file in tmp/ without its footer, and
	 * an unlisted one in parts/ cut short (a file without a valid
	 * footer is not a part). */
	uint64_t cut;
	assert_int_equal(ms_shard_new_id(s, &cut, &eb), 0);
	uint64_t cs = 35;
	assert_int_equal(write_part(s, cut, &cs, 1, 0), 0);
	ms_shard_tmp_path(s, MS_KIND_CORE, cut, t, sizeof(t));
	ms_shard_part_path(s, MS_KIND_LATENCY, cut, f, sizeof(f));
	{
		char lt[4096];
		ms_shard_tmp_path(s, MS_KIND_LATENCY, cut, lt, sizeof(lt));
		assert_int_equal(rename(lt, f), 0);
		struct stat st;
		assert_int_equal(stat(t, &st), 0);
		assert_int_equal(truncate(t, st.st_size / 2), 0);
		assert_int_equal(stat(f, &st), 0);
		assert_int_equal(truncate(f, st.st_size - 1), 0);
	}
	ms_shard_close(s);
	/* Restore a's core and b's latency files, as if deletion stopped
	 * half-way; plus a stray snapshot.new. */
	snprintf(cmd, sizeof(cmd),
	         "cp -a '%s.keep/parts/%016llx.core' '%s/parts/' && "
	         "cp -a '%s.keep/parts/%016llx.latency' '%s/parts/' && "
	         "echo junk > '%s/tmp/snapshot.new' && rm -rf '%s.keep'",
	         dir, (unsigned long long)a, dir, dir, (unsigned long long)b,
	         dir, dir, dir);
	assert_int_equal(system(cmd), 0);
	/* partial's three, cut's core and start_time, snapshot.new */
	assert_int_equal(tmp_count(dir), 6);

	s = open_shard(dir, false, NULL);
	const char *note = ms_shard_recovery_note(s);
	assert_non_null(strstr(note, "recovered epoch 4"));
	assert_non_null(strstr(note, "6 temporary entries"));
	assert_non_null(strstr(note, "4 unlisted parts"));
	char hex[17];
	ms_part_id_str(orphan, hex);
	assert_non_null(strstr(note, hex));
	ms_part_id_str(a, hex);
	assert_non_null(strstr(note, hex));
	assert_int_equal(tmp_count(dir), 0);
	assert_int_equal(ms_shard_epoch(s), 4);
	assert_int_equal(ms_shard_count(s), 2);
	for (int k = 0; k < MS_KIND_COUNT; k++) {
		assert_false(part_on_disk(s, (enum ms_part_kind)k, a));
		assert_false(part_on_disk(s, (enum ms_part_kind)k, b));
		assert_false(part_on_disk(s, (enum ms_part_kind)k, orphan));
		assert_true(part_on_disk(s, (enum ms_part_kind)k, c));
		assert_true(part_on_disk(s, (enum ms_part_kind)k, out));
	}
	uint64_t all[] = { 30, 31, 32 };
	ms_ledger_set want, got;
	seeds_ledger(all, 3, &want);
	shard_ledger(s, &got);
	assert_true(ms_ledger_set_equal(&want, &got));
	/* IDs seen on disk are never handed out again. */
	uint64_t next;
	assert_int_equal(ms_shard_new_id(s, &next, &eb), 0);
	assert_true(next > orphan);
	ms_shard_close(s);

	/* A second open has nothing to say. */
	s = open_shard(dir, false, NULL);
	assert_string_equal(ms_shard_recovery_note(s), "");
	ms_shard_close(s);
	rm_dir(dir);
}

static void
test_recovery_refuses_missing_part(void **state)
{
	(void)state;
	char *dir = make_dir();
	ms_errbuf eb = { { 0 } };
	ms_shard *s = open_shard(dir, true, NULL);
	add_raw(s, 40);
	uint64_t b = add_raw(s, 41);
	uint64_t junk;
	assert_int_equal(ms_shard_new_id(s, &junk, &eb), 0);
	assert_int_equal(write_part(s, junk, &junk, 1, 0), 0);
	char p[4096];
	ms_shard_part_path(s, MS_KIND_START_TIME, b, p, sizeof(p));
	ms_shard_close(s);
	assert_int_equal(ms_fs_rm_tree(p, NULL), 0);

	ms_shard_opts o = { .dir = dir, .create = true };
	assert_int_equal(ms_shard_open(&s, &o, &eb), MS_ERR_NOTFOUND);
	assert_null(s);
	char hex[17];
	ms_part_id_str(b, hex);
	assert_non_null(strstr(eb.msg, hex));
	assert_non_null(strstr(eb.msg, "start_time"));
	/* Nothing deleted: the leftovers are still there. */
	assert_int_equal(tmp_count(dir), 3);

	/* A corrupt part file is named too. */
	char cmd[4200];
	snprintf(cmd, sizeof(cmd), "cp -a '%s/parts/%s.latency' '%s'", dir, hex,
	         p);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(ms_shard_open(&s, &o, &eb), MS_ERR_CORRUPT);
	assert_non_null(strstr(eb.msg, hex));
	assert_int_equal(tmp_count(dir), 3);
	rm_dir(dir);
}

static void
test_recovery_refuses_bad_snapshot(void **state)
{
	(void)state;
	char *dir = make_dir();
	ms_shard *s = open_shard(dir, true, NULL);
	add_raw(s, 50);
	add_raw(s, 51);
	ms_errbuf eb = { { 0 } };
	uint64_t junk;
	assert_int_equal(ms_shard_new_id(s, &junk, &eb), 0);
	assert_int_equal(write_part(s, junk, &junk, 1, 0), 0);
	ms_shard_close(s);
	char path[4200];
	snprintf(path, sizeof(path), "%s/snapshot", dir);
	size_t n;
	uint8_t *good = snapshot_bytes(dir, &n);
	assert_int_equal(n, 48 + 2 * 16);
	uint8_t *b = malloc(n);
	ms_shard_opts o = { .dir = dir, .create = true };

	/* Cut short at every length. */
	for (size_t cut = 0; cut < n; cut++) {
		assert_int_equal(ms_test_write(path, good, cut), 0);
		assert_int_equal(ms_shard_open(&s, &o, &eb), MS_ERR_CORRUPT);
		assert_non_null(strstr(eb.msg, path));
	}
	/* Any byte flipped. */
	for (size_t i = 0; i < n; i++) {
		memcpy(b, good, n);
		b[i] ^= 0x20;
		assert_int_equal(ms_test_write(path, b, n), 0);
		int rc = ms_shard_open(&s, &o, &eb);
		assert_true(rc == MS_ERR_CORRUPT || rc == MS_ERR_FORMAT);
		assert_null(s);
		assert_non_null(strstr(eb.msg, path));
	}
	/* A checksum-correct snapshot with unsorted IDs. */
	memcpy(b, good, n);
	uint8_t t[8];
	memcpy(t, b + 40, 8);
	memcpy(b + 40, b + 56, 8);
	memcpy(b + 56, t, 8);
	assert_int_equal(ms_test_write(path, b, n), 0);
	assert_int_equal(ms_shard_open(&s, &o, &eb), MS_ERR_CORRUPT);
	/* A missing snapshot with parts present is not an empty shard. */
	unlink(path);
	assert_int_equal(ms_shard_open(&s, &o, &eb), MS_ERR_NOTFOUND);
	assert_non_null(strstr(eb.msg, "part files exist"));
	assert_int_equal(tmp_count(dir), 3);
	/* Nothing was deleted by any of this. */
	assert_int_equal(ms_test_write(path, good, n), 0);
	s = open_shard(dir, false, NULL);
	assert_int_equal(ms_shard_count(s), 2);
	assert_int_equal(tmp_count(dir), 0);
	ms_shard_close(s);
	free(b);
	free(good);
	rm_dir(dir);
}

/* ---- recovery after SIGKILL at random points ---- */

/* Read which seeds a part's rows came from. */
static void
collect_seeds(const ms_part *p, uint8_t *seen, size_t maxseed)
{
	ms_part_iter *it;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_part_iter_open(&it, p, NULL, NULL, &eb), 0);
	const ms_block_info *info;
	int rc;
	while ((rc = ms_part_iter_next(it, &info, &eb)) == 1) {
		const ms_row *rows;
		assert_int_equal(
		        ms_part_iter_decode(it, MS_COL_BODY, &rows, &eb), 0);
		for (uint32_t i = 0; i < info->nrows; i++) {
			uint64_t sd = row_seed(&rows[i]);
			assert_true(sd < maxseed);
			seen[sd] = 1;
		}
	}
	assert_int_equal(rc, 0);
	ms_part_iter_close(it);
}

#define KILL_MAX_SEED 100000

/* The child: open (recovering), then introduce raw parts with fresh seeds
 * and merge random pairs and triples, forever. Exits only when killed. */
static void
churn(const char *dir, unsigned rnd)
{
	ms_shard_opts o = { .dir = dir, .create = true };
	ms_shard *s;
	ms_errbuf eb;
	if (ms_shard_open(&s, &o, &eb) != 0)
		_exit(2);
	/* Seeds listed so far, per part, from the parts themselves. */
	static uint8_t seen[KILL_MAX_SEED];
	uint64_t maxseed = 0;
	srand(rnd);
	for (;;) {
		ms_view *v;
		if (ms_shard_view(s, &v, &eb) != 0)
			_exit(3);
		size_t n = ms_view_count(v);
		if (n >= 3 && rand() % 3 == 0) {
			size_t k = 2 + (size_t)rand() % 2;
			size_t start = (size_t)rand() % (n - k + 1);
			uint64_t in[3];
			uint64_t *seeds =
			        malloc(KILL_MAX_SEED * sizeof(*seeds));
			size_t ns = 0;
			if (!seeds)
				_exit(6);
			uint32_t depth = 0;
			for (size_t i = 0; i < k; i++) {
				const ms_part *p = ms_view_part(v, start + i,
				                                MS_KIND_CORE);
				in[i] = ms_view_id(v, start + i);
				uint32_t d = ms_part_get_meta(p)->depth;
				depth = d > depth ? d : depth;
				memset(seen, 0, sizeof(seen));
				collect_seeds(p, seen, KILL_MAX_SEED);
				for (size_t q = 0; q < KILL_MAX_SEED; q++)
					if (seen[q])
						seeds[ns++] = q;
			}
			uint64_t out;
			if (ms_shard_new_id(s, &out, &eb) ||
			    write_part(s, out, seeds, ns, depth + 1) ||
			    ms_shard_replace(s, in, k, out, &eb))
				_exit(4);
			free(seeds);
		} else {
			if (maxseed == 0) {
				for (size_t i = 0; i < n; i++) {
					memset(seen, 0, sizeof(seen));
					collect_seeds(
					        ms_view_part(v, i,
					                     MS_KIND_CORE),
					        seen, KILL_MAX_SEED);
					for (uint64_t q = 0; q < KILL_MAX_SEED;
					     q++)
						if (seen[q] && q > maxseed)
							maxseed = q;
				}
			}
			uint64_t id, seed = ++maxseed;
			if (ms_shard_new_id(s, &id, &eb) ||
			    write_part(s, id, &seed, 1, 0) ||
			    ms_shard_introduce(s, id, &eb))
				_exit(5);
		}
		ms_view_release(v);
	}
}

/* ---- the order parts entered the inventory ---- */

/* The shard's parts in the order they entered it (ms_view_entered) are
 * want[0..n). */
static void
assert_entered(ms_shard *s, const uint64_t *want, size_t n)
{
	ms_view *v;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_shard_view(s, &v, &eb), 0);
	assert_int_equal(ms_view_count(v), n);
	for (size_t k = 0; k < n; k++)
		assert_int_equal(ms_view_id(v, ms_view_entered(v, k)),
		                 want[k]);
	assert_int_equal(ms_view_entered(v, n), n);
	ms_view_release(v);
}

/* Snapshot bytes b (n of them) as version ver with entry i's last field
 * f[i], resealed, written over dir's snapshot. */
static void
put_snapshot(const char *dir, uint8_t *b, size_t n, uint32_t ver,
             const uint32_t *f)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/snapshot", dir);
	ms_put_le32(b + 8, ver);
	for (size_t i = 0; 48 + 16 * i < n; i++)
		ms_put_le32(b + 52 + 16 * i, f[i]);
	ms_put_le64(b + n - 8, XXH64(b, n - 8, 0));
	assert_int_equal(ms_test_write(path, b, n), 0);
}

/* A merge output enters after the parts already there, whatever its ID:
 * an ID reserved before the merge and introduced after it comes later.
 * The order survives a reopen (the snapshot's ranks); a version-1
 * snapshot, which has none, opens in ID order, and the next commit
 * writes version 2; ranks out of range or repeated are refused. */
static void
test_entry_order(void **state)
{
	(void)state;
	char *dir = make_dir();
	ms_errbuf eb = { { 0 } };
	ms_shard *s = open_shard(dir, true, NULL);
	uint64_t a = add_raw(s, 60), b = add_raw(s, 61), x, out;
	assert_int_equal(ms_shard_new_id(s, &x, &eb), 0);
	assert_int_equal(ms_shard_new_id(s, &out, &eb), 0);
	uint64_t seeds[] = { 60, 61 }, xs = 62;
	assert_int_equal(write_part(s, out, seeds, 2, 1), 0);
	uint64_t in[] = { a, b };
	assert_int_equal(ms_shard_replace(s, in, 2, out, &eb), 0);
	assert_int_equal(write_part(s, x, &xs, 1, 0), 0);
	assert_int_equal(ms_shard_introduce(s, x, &eb), 0);
	uint64_t c = add_raw(s, 63);
	uint64_t entered[] = { out, x, c }, by_id[] = { x, out, c };
	assert_entered(s, entered, 3);
	ms_shard_close(s);
	size_t n;
	uint8_t *good = snapshot_bytes(dir, &n);
	assert_int_equal(n, 48 + 3 * 16);
	assert_int_equal(ms_le32(good + 8), 2);
	s = open_shard(dir, false, NULL);
	assert_entered(s, entered, 3);
	ms_shard_close(s);

	/* Version 1: reserved fields 0, the order by ID. */
	uint8_t *b1 = malloc(n);
	memcpy(b1, good, n);
	uint32_t zero[3] = { 0, 0, 0 };
	put_snapshot(dir, b1, n, 1, zero);
	s = open_shard(dir, false, NULL);
	assert_int_equal(ms_shard_count(s), 3);
	assert_int_equal(ms_shard_epoch(s), 5);
	assert_entered(s, by_id, 3);
	uint64_t d = add_raw(s, 64);
	ms_shard_close(s);
	uint64_t by_id_d[] = { x, out, c, d };
	uint8_t *b2 = snapshot_bytes(dir, &n);
	assert_int_equal(ms_le32(b2 + 8), 2);
	b1 = realloc(b1, n);
	assert_non_null(b1);
	s = open_shard(dir, false, NULL);
	assert_entered(s, by_id_d, 4);
	ms_shard_close(s);

	/* Checksum-correct, but a rank repeated, out of range, or a
	 * version-1 reserved field not 0: refused, nothing deleted. */
	uint32_t bad[][4] = { { 0, 1, 1, 3 }, { 0, 1, 2, 4 }, { 0, 0, 7, 0 } };
	for (int i = 0; i < 3; i++) {
		ms_shard_opts o = { .dir = dir };
		memcpy(b1, b2, n);
		put_snapshot(dir, b1, n, i == 2 ? 1 : 2, bad[i]);
		assert_int_equal(ms_shard_open(&s, &o, &eb), MS_ERR_CORRUPT);
		assert_null(s);
		assert_non_null(strstr(eb.msg, i == 2 ? "reserved" : "rank"));
	}
	char path[4200];
	snprintf(path, sizeof(path), "%s/snapshot", dir);
	assert_int_equal(ms_test_write(path, b2, n), 0);
	s = open_shard(dir, false, NULL);
	assert_entered(s, by_id_d, 4);
	ms_shard_close(s);
	free(b1);
	free(b2);
	free(good);
	rm_dir(dir);

	/* With group commit (a replay's shard) the order committed in
	 * memory is the one the durability point writes. */
	dir = make_dir();
	ms_shard_opts go = { .dir = dir, .create = true, .defer_sync = true,
		             .commit_syncfs = true };
	assert_int_equal(ms_shard_open(&s, &go, &eb), 0);
	a = add_raw(s, 70);
	b = add_raw(s, 71);
	assert_int_equal(ms_shard_new_id(s, &x, &eb), 0);
	assert_int_equal(ms_shard_new_id(s, &out, &eb), 0);
	uint64_t gseeds[] = { 70, 71 }, gx = 72;
	assert_int_equal(write_part(s, out, gseeds, 2, 1), 0);
	uint64_t gin[] = { a, b };
	assert_int_equal(ms_shard_replace(s, gin, 2, out, &eb), 0);
	assert_int_equal(write_part(s, x, &gx, 1, 0), 0);
	assert_int_equal(ms_shard_introduce(s, x, &eb), 0);
	uint64_t gentered[] = { out, x };
	assert_entered(s, gentered, 2);
	ms_shard_close(s);
	s = open_shard(dir, false, NULL);
	assert_entered(s, gentered, 2);
	ms_shard_close(s);
	rm_dir(dir);
}

static void
test_recovery_after_sigkill(void **state)
{
	(void)state;
	char *dir = make_dir();
	srand((unsigned)time(NULL));
	for (int round = 0; round < 6; round++) {
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0)
			churn(dir, (unsigned)rand());
		struct timespec ts = { 0,
			               (long)(20 + rand() % 200) * 1000000L };
		nanosleep(&ts, NULL);
		kill(pid, SIGKILL);
		int st;
		assert_int_equal(waitpid(pid, &st, 0), pid);
		assert_true(WIFSIGNALED(st)); /* not an early failure */

		/* Reopen: recovered, no leftovers, and the rows are exactly
		 * seeds 1..K, each once. */
		ms_shard *s = open_shard(dir, true, NULL);
		assert_int_equal(tmp_count(dir), 0);
		ms_view *v;
		ms_errbuf eb = { { 0 } };
		assert_int_equal(ms_shard_view(s, &v, &eb), 0);
		static uint8_t seen[KILL_MAX_SEED];
		memset(seen, 0, sizeof(seen));
		for (size_t i = 0; i < ms_view_count(v); i++)
			collect_seeds(ms_view_part(v, i, MS_KIND_CORE), seen,
			              KILL_MAX_SEED);
		uint64_t k = 0;
		while (k + 1 < KILL_MAX_SEED && seen[k + 1])
			k++;
		for (uint64_t q = k + 1; q < KILL_MAX_SEED; q++)
			assert_int_equal(seen[q], 0);
		uint64_t *seeds = malloc((k + 1) * sizeof(*seeds));
		for (uint64_t q = 0; q < k; q++)
			seeds[q] = q + 1;
		ms_ledger_set want, got;
		seeds_ledger(seeds, k, &want);
		assert_int_equal(ms_ledger_of_view(v, &got, NULL, &eb), 0);
		assert_true(ms_ledger_set_equal(&want, &got));
		free(seeds);
		ms_view_release(v);
		ms_shard_close(s);
		print_message("round %d: epoch-consistent with %llu raw "
		              "parts\n",
		              round, (unsigned long long)k);
	}
	rm_dir(dir);
}

/* ---- a crash after every step of a publication ---- */

struct crash_at {
	enum ms_shard_step step;
	unsigned index;
};

static void
crash_hook(void *arg, enum ms_shard_step step, unsigned index)
{
	const struct crash_at *c = arg;
	if (c->step == step && c->index == index)
		_exit(0); /* the process dies here, mid-transaction */
}

/* Count the part files of every kind (<16hex>.<kind> names). */
static int
part_files(const char *dir)
{
	char cmd[4400];
	snprintf(cmd, sizeof(cmd),
	         "ls -A '%s/parts' | "
	         "grep -c '^[0-9a-f]\\{16\\}\\.\\(core\\|latency\\|"
	         "start_time\\)$'",
	         dir);
	return count_of(cmd);
}

/* Move a part written at its tmp paths to its final paths, unlisted (as a
 * replay stages its parts before the day). */
static int
place_part(ms_shard *s, uint64_t id)
{
	for (int k = 0; k < MS_KIND_COUNT; k++) {
		char t[4096], f[4096];
		ms_shard_tmp_path(s, (enum ms_part_kind)k, id, t, sizeof(t));
		ms_shard_part_path(s, (enum ms_part_kind)k, id, f, sizeof(f));
		if (rename(t, f) != 0)
			return -1;
	}
	sync();
	return 0;
}

/* In a child: the shard holds seeds 1 and 2 as two raw parts; introduce
 * seed 3 (merge = false; placed: staged at its final paths first) or merge
 * the two into one output (merge = true), ending the process at `at`. The
 * parent reopens: the shard is at the snapshot before or after the
 * transaction, whole, with no leftovers. */
/* Reopen the shard in dir (closed) and check it holds exactly `n` parts
 * at `epoch` with the rows of seeds[0..nseeds), no tmp leftovers and no
 * unlisted part file; then remove dir. */
static void
assert_reopened(char *dir, size_t n, uint64_t epoch, const uint64_t *seeds,
                size_t nseeds)
{
	ms_shard *s = open_shard(dir, false, NULL);
	assert_int_equal(tmp_count(dir), 0);
	assert_int_equal(ms_shard_count(s), n);
	assert_int_equal(ms_shard_epoch(s), epoch);
	assert_int_equal(part_files(dir), (int)n * MS_KIND_COUNT);
	ms_ledger_set want, got;
	seeds_ledger(seeds, nseeds, &want);
	shard_ledger(s, &got);
	assert_true(ms_ledger_set_equal(&want, &got));
	ms_shard_close(s);
	rm_dir(dir);
}

/* A new shard (its directory returned) holding seeds 1 and 2 as the raw
 * parts *a and *b, closed. */
static char *
shard_of_two(uint64_t *a, uint64_t *b)
{
	char *dir = make_dir();
	ms_shard *s = open_shard(dir, true, NULL);
	*a = add_raw(s, 1);
	*b = add_raw(s, 2);
	ms_shard_close(s);
	return dir;
}

/* The child ended itself at its crash step (status 0), not otherwise. */
static void
wait_crashed(pid_t pid)
{
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static void
crash_once3(bool merge, bool placed, struct crash_at at, bool after_commit)
{
	uint64_t a, b;
	char *dir = shard_of_two(&a, &b);
	ms_shard *s;
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		ms_shard_opts o = { .dir = dir,
			            .reap_async = at.step ==
			                          MS_SHARD_STEP_INPUT_DELETED };
		ms_errbuf eb;
		if (ms_shard_open(&s, &o, &eb) != 0)
			_exit(2);
		uint64_t id, seeds[] = { 1, 2 }, three = 3;
		if (ms_shard_new_id(s, &id, &eb) != 0)
			_exit(3);
		ms_shard_set_step_hook(s, crash_hook, &at);
		uint64_t in[] = { a, b };
		int rc;
		if (merge)
			rc = write_part(s, id, seeds, 2, 1) ||
			     ms_shard_replace(s, in, 2, id, &eb);
		else if (placed)
			rc = write_part(s, id, &three, 1, 0) ||
			     place_part(s, id) ||
			     ms_shard_introduce_placed(s, id, &eb);
		else
			rc = write_part(s, id, &three, 1, 0) ||
			     ms_shard_introduce(s, id, &eb);
		if (rc == 0)
			ms_shard_settle(s);
		_exit(rc ? 4 : 5); /* the step never came */
	}
	wait_crashed(pid);
	size_t want_n = merge ? (after_commit ? 1 : 2) : (after_commit ? 3 : 2);
	uint64_t seeds[] = { 1, 2, 3 };
	assert_reopened(dir, want_n, after_commit ? 3 : 2, seeds,
	                !merge && after_commit ? 3 : 2);
}

static void
crash_once(bool merge, struct crash_at at, bool after_commit)
{
	crash_once3(merge, false, at, after_commit);
}

static void
test_crash_at_every_publication_step(void **state)
{
	(void)state;
	static const struct {
		struct crash_at at;
		bool after_commit;
	} steps[] = {
		{ { MS_SHARD_STEP_RENAMED, 0 }, false },
		{ { MS_SHARD_STEP_RENAMED, 1 }, false },
		{ { MS_SHARD_STEP_RENAMED, 2 }, false },
		{ { MS_SHARD_STEP_DIRS_SYNCED, 0 }, false },
		{ { MS_SHARD_STEP_SNAP_WRITTEN, 0 }, false },
		{ { MS_SHARD_STEP_COMMITTED, 0 }, true },
		{ { MS_SHARD_STEP_SNAP_SYNCED, 0 }, true },
	};
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		for (int merge = 0; merge < 2; merge++)
			crash_once(merge, steps[i].at, steps[i].after_commit);
		/* A part staged in place has only the snapshot's steps. */
		if (steps[i].at.step >= MS_SHARD_STEP_SNAP_WRITTEN)
			crash_once3(false, true, steps[i].at,
			            steps[i].after_commit);
	}
	/* A merge's inputs half deleted (the first of two gone), inline
	 * and by the reaper thread. */
	struct crash_at del = { MS_SHARD_STEP_INPUT_DELETED, 0 };
	crash_once(true, del, true);
}

/* ---- group commit (defer_sync) and one syncfs per commit ---- */

/* What the child does after the shard holds seeds 1 and 2 as two raw
 * parts (epochs 1 and 2). */
enum gc_seq {
	GC_INTRO,       /* introduce seed 3, deferred */
	GC_PLACED,      /* the same, staged at its final paths first */
	GC_INTRO_MERGE, /* introduce seed 3 deferred, merge 1 and 2, sync */
	GC_INTRO_SYNC,  /* introduce seed 3 deferred, then ms_shard_sync */
};

struct gc_case {
	enum gc_seq seq;
	struct crash_at at;
	bool after; /* the crash comes after the durability point */
};

/* The child of gc_crash_once: run c->seq on a shard opened with
 * defer_sync (and commit_syncfs: merge outputs written without fsync),
 * ending the process at c->at. */
static void
gc_child(const char *dir, const struct gc_case *c, bool syncfs, uint64_t a,
         uint64_t b)
{
	ms_shard_opts o = { .dir = dir,
		            .defer_sync = true,
		            .commit_syncfs = syncfs,
		            .reap_async =
		                    c->at.step == MS_SHARD_STEP_INPUT_DELETED };
	ms_errbuf eb;
	ms_shard *s;
	uint64_t id, out, three = 3, seeds[] = { 1, 2 }, in[] = { a, b };
	if (ms_shard_open(&s, &o, &eb) != 0 || ms_shard_new_id(s, &id, &eb))
		_exit(2);
	struct crash_at at = c->at;
	ms_shard_set_step_hook(s, crash_hook, &at);
	int rc = write_part(s, id, &three, 1, 0);
	if (rc == 0 && c->seq == GC_PLACED)
		rc = place_part(s, id) || ms_shard_introduce_placed(s, id, &eb);
	else if (rc == 0)
		rc = ms_shard_introduce(s, id, &eb);
	if (rc == 0 && c->seq == GC_INTRO_SYNC)
		rc = ms_shard_sync(s, &eb);
	if (rc == 0 && c->seq == GC_INTRO_MERGE)
		rc = ms_shard_new_id(s, &out, &eb) ||
		     write_part_sync(s, out, seeds, 2, 1,
		                     ms_shard_syncs_outputs(s)) ||
		     ms_shard_replace(s, in, 2, out, &eb) ||
		     ms_shard_sync(s, &eb);
	if (rc == 0)
		ms_shard_settle(s);
	_exit(rc ? 4 : 5); /* the step never came */
}

/* Crash the child at c->at; the parent reopens: before the durability
 * point the shard is back at epoch 2 (seeds 1, 2; the deferred part's
 * files removed), after it every transaction up to it is there. */
static void
gc_crash_once(const struct gc_case *c, bool syncfs)
{
	uint64_t a, b;
	char *dir = shard_of_two(&a, &b);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		gc_child(dir, c, syncfs, a, b);
	wait_crashed(pid);
	bool merge = c->seq == GC_INTRO_MERGE;
	uint64_t seeds[] = { 1, 2, 3 };
	size_t n = c->after && !merge ? 3 : 2;
	uint64_t epoch = !c->after ? 2 : merge ? 4 : 3;
	assert_reopened(dir, n, epoch, seeds, c->after ? 3 : 2);
}

static void
test_crash_with_group_commit(void **state)
{
	(void)state;
	static const struct gc_case cases[] = {
		{ GC_INTRO, { MS_SHARD_STEP_RENAMED, 2 }, false },
		{ GC_INTRO, { MS_SHARD_STEP_DEFERRED, 0 }, false },
		{ GC_PLACED, { MS_SHARD_STEP_DEFERRED, 0 }, false },
		{ GC_INTRO_SYNC, { MS_SHARD_STEP_DIRS_SYNCED, 0 }, false },
		{ GC_INTRO_SYNC, { MS_SHARD_STEP_SNAP_WRITTEN, 0 }, false },
		{ GC_INTRO_SYNC, { MS_SHARD_STEP_COMMITTED, 0 }, true },
		{ GC_INTRO_SYNC, { MS_SHARD_STEP_SNAP_SYNCED, 0 }, true },
		{ GC_INTRO_MERGE, { MS_SHARD_STEP_DEFERRED, 0 }, false },
		{ GC_INTRO_MERGE, { MS_SHARD_STEP_DEFERRED, 2 }, false },
		{ GC_INTRO_MERGE, { MS_SHARD_STEP_RENAMED, 0 }, false },
		{ GC_INTRO_MERGE, { MS_SHARD_STEP_RENAMED, 2 }, false },
		{ GC_INTRO_MERGE, { MS_SHARD_STEP_DIRS_SYNCED, 0 }, false },
		{ GC_INTRO_MERGE, { MS_SHARD_STEP_SNAP_WRITTEN, 0 }, false },
		{ GC_INTRO_MERGE, { MS_SHARD_STEP_COMMITTED, 0 }, true },
		{ GC_INTRO_MERGE, { MS_SHARD_STEP_SNAP_SYNCED, 0 }, true },
		{ GC_INTRO_MERGE, { MS_SHARD_STEP_INPUT_DELETED, 0 }, true },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		for (int syncfs = 0; syncfs < 2; syncfs++) {
			/* With one syncfs per commit parts/ is never
			 * fsynced on its own: that step does not come. */
			if (syncfs &&
			    cases[i].at.step == MS_SHARD_STEP_DIRS_SYNCED)
				continue;
			gc_crash_once(&cases[i], syncfs);
		}
}

/* With reap_async the transaction returns before its inputs are deleted;
 * settle waits for the deletion, and close finishes what is queued. */
static void
test_reaper_deletes_inputs(void **state)
{
	(void)state;
	char *dir = make_dir();
	ms_errbuf eb = { { 0 } };
	ms_shard_opts o = { .dir = dir, .create = true, .reap_async = true };
	ms_shard *s;
	assert_int_equal(ms_shard_open(&s, &o, &eb), 0);
	uint64_t a = add_raw(s, 40), b = add_raw(s, 41), c = add_raw(s, 42);
	uint64_t out;
	assert_int_equal(ms_shard_new_id(s, &out, &eb), 0);
	uint64_t seeds[] = { 40, 41 };
	assert_int_equal(write_part(s, out, seeds, 2, 1), 0);
	uint64_t in[] = { a, b };
	assert_int_equal(ms_shard_replace(s, in, 2, out, &eb), 0);
	ms_shard_settle(s);
	for (int k = 0; k < MS_KIND_COUNT; k++) {
		assert_false(part_on_disk(s, (enum ms_part_kind)k, a));
		assert_false(part_on_disk(s, (enum ms_part_kind)k, b));
		assert_true(part_on_disk(s, (enum ms_part_kind)k, out));
	}
	/* A view pins c past its removal; released after close, it is
	 * deleted inline then. */
	ms_view *v;
	assert_int_equal(ms_shard_view(s, &v, &eb), 0);
	assert_int_equal(ms_shard_remove(s, &c, 1, &eb), 0);
	char cpath[4096];
	ms_shard_part_path(s, MS_KIND_CORE, c, cpath, sizeof(cpath));
	ms_shard_close(s);
	assert_true(path_exists(cpath));
	ms_view_release(v);
	assert_false(path_exists(cpath));
	rm_dir(dir);
}

/* A shard whose reaper thread cannot start is not opened, and says why:
 * it was opened deleting inline, without a word, and a caller that asked
 * for deletions off its own thread never learnt why they were on it. */
static void
test_reaper_without_threads(void **state)
{
	(void)state;
	char *dir = make_dir();
	ms_errbuf eb = { { 0 } };
	ms_shard_opts o = { .dir = dir, .create = true, .reap_async = true };
	ms_shard *s = NULL;
	tl_threads_fail_all(true);
	int rc = ms_shard_open(&s, &o, &eb);
	tl_threads_fail_all(false);
	fprintf(stderr, "refused as expected: %s\n", eb.msg);
	assert_int_equal(rc, MS_ERR_IO);
	assert_null(s);
	assert_non_null(strstr(eb.msg, dir));
	assert_non_null(strstr(eb.msg, "cannot start its reaper thread: "));
	assert_non_null(strstr(eb.msg, strerror(EAGAIN)));
	assert_non_null(strstr(eb.msg, "ulimit -v"));
	/* Nothing was left behind that a second open would trip on. */
	assert_int_equal(ms_shard_open(&s, &o, &eb), 0);
	ms_shard_close(s);
	rm_dir(dir);
}

/* ---- threads: views taken while transactions run ---- */

struct conc {
	ms_shard *s;
	atomic_bool done;
	atomic_int views;
};

/* Check a view holds seeds 1..K exactly once (by ledger); returns K. */
static uint64_t
check_view(ms_view *v)
{
	static _Thread_local uint8_t seen[KILL_MAX_SEED];
	memset(seen, 0, sizeof(seen));
	for (size_t i = 0; i < ms_view_count(v); i++)
		collect_seeds(ms_view_part(v, i, MS_KIND_CORE), seen,
		              KILL_MAX_SEED);
	uint64_t k = 0;
	while (k + 1 < KILL_MAX_SEED && seen[k + 1])
		k++;
	uint64_t *seeds = malloc((k + 1) * sizeof(*seeds));
	for (uint64_t q = 0; q < k; q++)
		seeds[q] = q + 1;
	ms_ledger_set want, got;
	ms_errbuf eb = { { 0 } };
	seeds_ledger(seeds, k, &want);
	free(seeds);
	if (ms_ledger_of_view(v, &got, NULL, &eb) != 0)
		fail_msg("ledger of a pinned view: %s", eb.msg);
	assert_true(ms_ledger_set_equal(&want, &got));
	return k;
}

static void *
conc_reader(void *arg)
{
	struct conc *c = arg;
	uint64_t last_epoch = 0;
	while (!atomic_load(&c->done)) {
		ms_view *v;
		ms_errbuf eb = { { 0 } };
		assert_int_equal(ms_shard_view(c->s, &v, &eb), 0);
		assert_true(ms_view_epoch(v) >= last_epoch);
		last_epoch = ms_view_epoch(v);
		check_view(v);
		ms_view_release(v);
		atomic_fetch_add(&c->views, 1);
	}
	return NULL;
}

static void
test_concurrent_views(void **state)
{
	(void)state;
	char *dir = make_dir();
	struct conc c = { .s = open_shard(dir, true, NULL) };
	atomic_init(&c.done, false);
	atomic_init(&c.views, 0);
	struct conc c2 = { .s = c.s };
	atomic_init(&c2.done, false);
	atomic_init(&c2.views, 0);
	pthread_t r1, r2;
	assert_int_equal(pthread_create(&r1, NULL, conc_reader, &c), 0);
	assert_int_equal(pthread_create(&r2, NULL, conc_reader, &c2), 0);
	/* Both readers are under way before the shard changes (on a busy
	 * machine a thread may otherwise first run after the last change):
	 * they keep taking views throughout the changes below. */
	for (int w = 0; w < 30000 && (atomic_load(&c.views) == 0 ||
	                              atomic_load(&c2.views) == 0);
	     w++)
		usleep(1000);
	assert_true(atomic_load(&c.views) > 0 && atomic_load(&c2.views) > 0);
	ms_errbuf eb = { { 0 } };
	uint64_t seed = 0;
	for (int t = 0; t < 60; t++) {
		ms_view *v;
		assert_int_equal(ms_shard_view(c.s, &v, &eb), 0);
		if (t % 3 == 2 && ms_view_count(v) >= 2) {
			static uint8_t seen[KILL_MAX_SEED];
			memset(seen, 0, sizeof(seen));
			uint64_t in[2] = { ms_view_id(v, 0), ms_view_id(v, 1) };
			for (int i = 0; i < 2; i++)
				collect_seeds(ms_view_part(v, (size_t)i,
				                           MS_KIND_CORE),
				              seen, KILL_MAX_SEED);
			uint64_t seeds[256];
			size_t ns = 0;
			for (uint64_t q = 0; q <= seed; q++)
				if (seen[q])
					seeds[ns++] = q;
			uint64_t out;
			assert_int_equal(ms_shard_new_id(c.s, &out, &eb), 0);
			assert_int_equal(write_part(c.s, out, seeds, ns, 1), 0);
			assert_int_equal(ms_shard_replace(c.s, in, 2, out, &eb),
			                 0);
		} else {
			add_raw(c.s, ++seed);
		}
		ms_view_release(v);
	}
	atomic_store(&c.done, true);
	atomic_store(&c2.done, true);
	pthread_join(r1, NULL);
	pthread_join(r2, NULL);
	assert_true(atomic_load(&c.views) > 0 && atomic_load(&c2.views) > 0);
	assert_int_equal(ms_shard_epoch(c.s), 60);
	ms_view *v;
	assert_int_equal(ms_shard_view(c.s, &v, &eb), 0);
	assert_int_equal(check_view(v), seed);
	ms_view_release(v);
	ms_shard_close(c.s);
	/* Every removed part was deleted once its views were released:
	 * reopening finds nothing unlisted. */
	ms_shard *s = open_shard(dir, false, NULL);
	assert_string_equal(ms_shard_recovery_note(s), "");
	ms_shard_close(s);
	rm_dir(dir);
}

/* ---- allocation failure at every point ---- */

/* A failed allocation says so ("shard X: no memory" said not what for). */
static void
assert_says_out_of_memory(const ms_errbuf *eb)
{
	if (!strstr(eb->msg, "out of memory"))
		fail_msg("not said: %s", eb->msg);
}

static void
test_alloc_failures(void **state)
{
	(void)state;
	char *dir = make_dir();
	ms_mem mem;
	ms_mem_init(&mem, NULL);
	ms_errbuf eb = { { 0 } };
	ms_shard *s = open_shard(dir, true, &mem);
	uint64_t ids[2] = { add_raw(s, 60), add_raw(s, 61) };
	ms_shard_close(s);

	/* Open. */
	int failures = 0;
	for (uint64_t n = 1;; n++) {
		ms_shard_opts o = { .dir = dir, .mem = &mem };
		ms_mem_fail_at(&mem, n, false);
		int rc = ms_shard_open(&s, &o, &eb);
		ms_mem_fail_at(&mem, 0, false);
		if (rc == 0)
			break;
		failures++;
		assert_int_equal(rc, MS_ERR_NOMEM);
		assert_says_out_of_memory(&eb);
		assert_null(s);
		ms_mem_stats st;
		ms_mem_stats_get(&mem, &st);
		assert_int_equal(st.live, 0);
	}
	assert_true(failures > 3);
	size_t sn;
	uint8_t *snap = snapshot_bytes(dir, &sn);

	/* Introduce. */
	uint64_t c;
	assert_int_equal(ms_shard_new_id(s, &c, &eb), 0);
	uint64_t cs = 62;
	assert_int_equal(write_part(s, c, &cs, 1, 0), 0);
	failures = 0;
	for (uint64_t n = 1;; n++) {
		ms_mem_fail_at(&mem, n, false);
		int rc = ms_shard_introduce(s, c, &eb);
		ms_mem_fail_at(&mem, 0, false);
		if (rc == 0)
			break;
		failures++;
		assert_int_equal(rc, MS_ERR_NOMEM);
		assert_says_out_of_memory(&eb);
		assert_unchanged(s, dir, snap, sn, 2, ids, 2);
		assert_true(tmp_on_disk(s, MS_KIND_CORE, c));
	}
	assert_true(failures > 3);
	free(snap);
	snap = snapshot_bytes(dir, &sn);

	/* Replace. */
	uint64_t out;
	assert_int_equal(ms_shard_new_id(s, &out, &eb), 0);
	uint64_t seeds[] = { 60, 61 };
	assert_int_equal(write_part(s, out, seeds, 2, 1), 0);
	uint64_t all[3] = { ids[0], ids[1], c };
	failures = 0;
	for (uint64_t n = 1;; n++) {
		ms_mem_fail_at(&mem, n, false);
		int rc = ms_shard_replace(s, ids, 2, out, &eb);
		ms_mem_fail_at(&mem, 0, false);
		if (rc == 0)
			break;
		failures++;
		assert_int_equal(rc, MS_ERR_NOMEM);
		assert_says_out_of_memory(&eb);
		assert_unchanged(s, dir, snap, sn, 3, all, 3);
		assert_true(tmp_on_disk(s, MS_KIND_START_TIME, out));
	}
	assert_true(failures > 3);
	assert_int_equal(ms_shard_epoch(s), 4);
	/* A view failing to allocate leaves no pin behind. */
	for (uint64_t n = 1; n < 3; n++) {
		ms_view *v;
		ms_mem_fail_at(&mem, n, false);
		assert_int_equal(ms_shard_view(s, &v, &eb), MS_ERR_NOMEM);
		ms_mem_fail_at(&mem, 0, false);
		assert_says_out_of_memory(&eb);
		/* What for, and the size asked for. */
		if (n == 2 && !strstr(eb.msg, "out of memory for a view of 2 "
		                              "parts (16 bytes)"))
			fail_msg("view: %s", eb.msg);
		assert_null(v);
		ms_mem_fail_at(&mem, n, false);
		assert_int_equal(ms_shard_view_of(s, all, 3, &v, &eb),
		                 MS_ERR_NOMEM);
		ms_mem_fail_at(&mem, 0, false);
		assert_says_out_of_memory(&eb);
		assert_null(v);
	}
	ms_ledger_set want, got;
	uint64_t left[] = { 60, 61, 62 };
	seeds_ledger(left, 3, &want);
	shard_ledger(s, &got);
	assert_true(ms_ledger_set_equal(&want, &got));
	free(snap);
	ms_shard_close(s);
	ms_mem_stats st;
	ms_mem_stats_get(&mem, &st);
	assert_int_equal(st.live, 0);
	rm_dir(dir);
}

/* What a publication costs: each of the three part files is fsynced once,
 * by its writer as it closes it; the introduction renames them into the
 * parts directory, syncs that directory once, and commits the snapshot
 * (its file and the shard directory): 3 + 3 fsyncs, three files. */
static void
test_publication_syncs(void **state)
{
	(void)state;
	char *dir = make_dir();
	ms_io io = { 0 };
	ms_shard_opts o = { .dir = dir, .create = true, .io = &io };
	ms_shard *s;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_shard_open(&s, &o, &eb), 0);
	uint64_t id, seed = 60;
	assert_int_equal(ms_shard_new_id(s, &id, &eb), 0);
	ms_io wio = { 0 };
	struct seed_rows g;
	seed_rows(seed, &g);
	ms_part_writer_opts wo = { .io = &wio };
	char path[4096];
	for (int k = 0; k < MS_KIND_COUNT; k++) {
		ms_shard_tmp_path(s, (enum ms_part_kind)k, id, path,
		                  sizeof(path));
		int rc = k == MS_KIND_CORE
		                 ? ms_part_write_rows(path, id, g.rows, g.n, &wo,
		                                      NULL, &eb)
		                 : ms_sidx_write_rows((enum ms_part_kind)k, path,
		                                      id, g.rows, g.n, &wo,
		                                      NULL, &eb);
		assert_int_equal(rc, 0);
	}
	assert_int_equal(atomic_load(&wio.fsyncs), 3);
	uint64_t before = atomic_load(&io.fsyncs);
	assert_int_equal(ms_shard_introduce(s, id, &eb), 0);
	assert_int_equal(atomic_load(&io.fsyncs) - before, 3);
	char cmd[4400];
	snprintf(cmd, sizeof(cmd), "find '%s/parts' -type f | wc -l", dir);
	assert_int_equal(count_of(cmd), 3);
	ms_shard_close(s);
	rm_dir(dir);
}

/* The syncs counted in io since *mark (which moves on to now). */
static uint64_t
syncs_since(ms_io *io, uint64_t *mark)
{
	uint64_t now = atomic_load(&io->fsyncs), d = now - *mark;
	*mark = now;
	return d;
}

/* Group commit: deferred introductions sync nothing; one ms_shard_sync
 * commits them all (parts/, snapshot, directory: 3), a second has nothing
 * to do, and close commits what is left. With commit_syncfs a merge is 2
 * syncs and its writers none; with both options a merge waits for the
 * next ms_shard_sync, its inputs kept until then. */
static void
test_group_commit_syncs(void **state)
{
	(void)state;
	char *dir = make_dir();
	ms_io io = { 0 };
	ms_shard_opts o = {
		.dir = dir, .create = true, .io = &io, .defer_sync = true
	};
	ms_shard *s;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_shard_open(&s, &o, &eb), 0);
	assert_false(ms_shard_syncs_outputs(s));
	uint64_t id[4], mark = atomic_load(&io.fsyncs);
	for (uint64_t i = 0; i < 3; i++) {
		uint64_t seed = i + 1;
		assert_int_equal(ms_shard_new_id(s, &id[i], &eb), 0);
		assert_int_equal(write_part(s, id[i], &seed, 1, 0), 0);
		syncs_since(&io, &mark);
		assert_int_equal(ms_shard_introduce(s, id[i], &eb), 0);
		assert_int_equal(syncs_since(&io, &mark), 0);
	}
	assert_int_equal(ms_shard_epoch(s), 3);
	assert_int_equal(ms_shard_sync(s, &eb), 0);
	assert_int_equal(syncs_since(&io, &mark), 3);
	assert_int_equal(ms_shard_sync(s, &eb), 0);
	assert_int_equal(syncs_since(&io, &mark), 0);
	assert_int_equal(ms_shard_new_id(s, &id[3], &eb), 0);
	assert_int_equal(write_part(s, id[3], &(uint64_t){ 4 }, 1, 0), 0);
	assert_int_equal(ms_shard_introduce(s, id[3], &eb), 0);
	ms_shard_close(s); /* commits the fourth */
	o.create = false;
	o.defer_sync = false;
	o.commit_syncfs = true;
	assert_int_equal(ms_shard_open(&s, &o, &eb), 0);
	assert_int_equal(ms_shard_epoch(s), 4);
	assert_int_equal(ms_shard_count(s), 4);
	assert_true(ms_shard_syncs_outputs(s));
	uint64_t out, seeds[] = { 1, 2, 3, 4 };
	assert_int_equal(ms_shard_new_id(s, &out, &eb), 0);
	assert_int_equal(write_part_sync(s, out, seeds, 4, 1, true), 0);
	syncs_since(&io, &mark);
	assert_int_equal(ms_shard_replace(s, id, 4, out, &eb), 0);
	assert_int_equal(syncs_since(&io, &mark), 2);
	ms_shard_close(s);

	/* Both options: a merge syncs nothing; its inputs stay on disk
	 * until ms_shard_sync commits it (syncfs and the directory: 2). */
	o.defer_sync = true;
	assert_int_equal(ms_shard_open(&s, &o, &eb), 0);
	uint64_t in2[2] = { out, 0 }, out2, five = 5;
	assert_int_equal(ms_shard_new_id(s, &in2[1], &eb), 0);
	assert_int_equal(write_part(s, in2[1], &five, 1, 0), 0);
	assert_int_equal(ms_shard_introduce(s, in2[1], &eb), 0);
	assert_int_equal(ms_shard_new_id(s, &out2, &eb), 0);
	uint64_t all[] = { 1, 2, 3, 4, 5 };
	assert_int_equal(write_part_sync(s, out2, all, 5, 2, true), 0);
	mark = atomic_load(&io.fsyncs);
	assert_int_equal(ms_shard_replace(s, in2, 2, out2, &eb), 0);
	assert_int_equal(syncs_since(&io, &mark), 0);
	ms_shard_settle(s);
	assert_true(part_on_disk(s, MS_KIND_CORE, out));
	assert_int_equal(ms_shard_sync(s, &eb), 0);
	assert_int_equal(syncs_since(&io, &mark), 2);
	ms_shard_settle(s);
	assert_false(part_on_disk(s, MS_KIND_CORE, out));
	ms_shard_close(s);
	assert_reopened(dir, 1, 7, all, 5);
}

/* A durability point that fails keeps the deferred transactions
 * committed in memory and pending, and the parts they removed on disk: a
 * failed ms_shard_sync can be retried; a merge that exceeds
 * defer_max_parts is a durability point itself, and failing at any of
 * its commit steps it changes nothing. The reopened shard has everything
 * the last successful one committed. */
static void
group_commit_failures(bool syncfs)
{
	char *dir = make_dir();
	ms_shard_opts o = { .dir = dir,
		            .create = true,
		            .defer_sync = true,
		            .defer_max_parts = 2,
		            .commit_syncfs = syncfs };
	ms_shard *s;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_shard_open(&s, &o, &eb), 0);
	uint64_t ids[3] = { add_raw(s, 20), add_raw(s, 21), 0 }, out, out2;
	uint64_t seeds[] = { 20, 21, 22 };
	assert_int_equal(ms_shard_new_id(s, &out, &eb), 0);
	assert_int_equal(write_part_sync(s, out, seeds, 2, 1, syncfs), 0);
	assert_int_equal(ms_shard_replace(s, ids, 2, out, &eb), 0);
	for (int f = MS_SHARD_FAULT_OPEN; f <= MS_SHARD_FAULT_DIRSYNC; f++) {
		ms_shard_inject_fault(s, (enum ms_shard_fault)f, EIO);
		assert_int_equal(ms_shard_sync(s, &eb), MS_ERR_IO);
		/* Which commits it was making durable, then the file, the
		 * step and the system's reason. */
		if (strncmp(eb.msg,
		            "making epochs 1..3 durable (committed in memory: "
		            "introductions 2, merges 1, removals 0): snapshot ",
		            98) ||
		    !strstr(eb.msg, dir) ||
		    !strstr(eb.msg, strerror(EIO)))
			fail_msg("said: %s", eb.msg);
		assert_int_equal(ms_shard_epoch(s), 3);
		ms_shard_settle(s);
		assert_true(part_on_disk(s, MS_KIND_CORE, ids[0]));
	}
	assert_int_equal(ms_shard_sync(s, &eb), 0);
	ms_shard_settle(s);
	assert_false(part_on_disk(s, MS_KIND_CORE, ids[0]));
	/* Three inputs: over the bound, so durable at once. */
	ids[0] = out;
	ids[1] = add_raw(s, 22);
	assert_int_equal(ms_shard_new_id(s, &ids[2], &eb), 0);
	assert_int_equal(write_part(s, ids[2], &seeds[2], 1, 0), 0);
	assert_int_equal(ms_shard_introduce(s, ids[2], &eb), 0);
	assert_int_equal(ms_shard_new_id(s, &out2, &eb), 0);
	assert_int_equal(write_part_sync(s, out2, seeds, 3, 2, syncfs), 0);
	for (int f = MS_SHARD_FAULT_OPEN; f <= MS_SHARD_FAULT_DIRSYNC; f++) {
		ms_shard_inject_fault(s, (enum ms_shard_fault)f, EIO);
		assert_int_equal(ms_shard_replace(s, ids, 3, out2, &eb),
		                 MS_ERR_IO);
		char want[96];
		snprintf(want, sizeof(want),
		         "committing part %016llx, merged from 3 parts "
		         "(epoch 6): snapshot ",
		         (unsigned long long)out2);
		if (strncmp(eb.msg, want, strlen(want)) ||
		    !strstr(eb.msg, strerror(EIO)))
			fail_msg("said: %s", eb.msg);
		assert_int_equal(ms_shard_epoch(s), 5);
		assert_int_equal(ms_shard_count(s), 3);
		assert_true(tmp_on_disk(s, MS_KIND_CORE, out2));
	}
	assert_int_equal(ms_shard_replace(s, ids, 3, out2, &eb), 0);
	ms_shard_close(s);
	assert_reopened(dir, 1, 6, seeds, 3);
}

static void
test_group_commit_failures(void **state)
{
	(void)state;
	group_commit_failures(false);
	group_commit_failures(true);
}

/* A shard of the previous part format (part directories under core/ and
 * sidx/) is refused by name, and nothing in it is touched. */
static void
test_old_layout_refused(void **state)
{
	(void)state;
	char *dir = make_dir();
	char cmd[4400];
	snprintf(cmd, sizeof(cmd),
	         "mkdir -p '%s/core/0000000000000001' '%s/tmp' && "
	         "echo x > '%s/core/0000000000000001/meta'",
	         dir, dir, dir);
	assert_int_equal(system(cmd), 0);
	ms_shard_opts o = { .dir = dir, .create = true };
	ms_shard *s;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_shard_open(&s, &o, &eb), MS_ERR_FORMAT);
	assert_null(s);
	assert_non_null(strstr(eb.msg, "format version 2"));
	assert_non_null(strstr(eb.msg, dir));
	snprintf(cmd, sizeof(cmd), "%s/core/0000000000000001/meta", dir);
	assert_true(path_exists(cmd));
	rm_dir(dir);
}

/* A dictionary trained on the rows of nseeds seeds (1000 on): its bytes
 * (nb of them; ms_mem_free(NULL, bytes, nb) them). */
static uint8_t *
train_dict(size_t nseeds, size_t *nb)
{
	ms_errbuf eb;
	size_t n = 0;
	struct seed_rows *g = calloc(nseeds, sizeof(*g));
	ms_row *rows = calloc(nseeds * SEED_ROWS_MAX, sizeof(*rows));
	assert_true(g && rows);
	for (size_t i = 0; i < nseeds; i++) {
		seed_rows(1000 + i, &g[i]);
		for (size_t j = 0; j < g[i].n; j++)
			rows[n++] = g[i].rows[j];
	}
	uint8_t *bytes;
	if (ms_part_dict_train(rows, n, 4096, &bytes, nb, NULL, &eb) != 0)
		fail_msg("training a dictionary: %s", eb.msg);
	free(rows);
	free(g);
	return bytes;
}

/* A shard's dictionary: added (written and synced under DIR/dicts),
 * used by a writer, read back through the shard after a reopen; without
 * its file, reading the part that names it is refused, naming the
 * dictionary ID. */
static void
test_shard_dictionary(void **state)
{
	(void)state;
	char *dir = make_dir();
	ms_shard *s = open_shard(dir, true, NULL);
	ms_errbuf eb = { { 0 } };
	/* Train on the rows of many seeds. */
	size_t nb;
	uint8_t *bytes = train_dict(600, &nb);
	uint32_t did;
	assert_int_equal(ms_shard_add_dict(s, bytes, nb, &did, &eb), 0);
	assert_int_equal(did, 1);
	ms_mem_free(NULL, bytes, nb);
	const ms_part_dict *d = ms_shard_dict(s, did);
	assert_non_null(d);
	assert_null(ms_shard_dict(s, 2));
	uint64_t id, seed = 70;
	assert_int_equal(ms_shard_new_id(s, &id, &eb), 0);
	struct seed_rows one;
	seed_rows(seed, &one);
	ms_part_writer_opts wo = { .dict = d };
	char path[4096];
	for (int k = 0; k < MS_KIND_COUNT; k++) {
		ms_shard_tmp_path(s, (enum ms_part_kind)k, id, path,
		                  sizeof(path));
		int rc = k == MS_KIND_CORE
		                 ? ms_part_write_rows(path, id, one.rows, one.n,
		                                      &wo, NULL, &eb)
		                 : ms_sidx_write_rows((enum ms_part_kind)k, path,
		                                      id, one.rows, one.n, &wo,
		                                      NULL, &eb);
		assert_int_equal(rc, 0);
	}
	assert_int_equal(ms_shard_introduce(s, id, &eb), 0);
	ms_shard_close(s);
	s = open_shard(dir, false, NULL);
	ms_ledger_set want, got;
	seeds_ledger(&seed, 1, &want);
	shard_ledger(s, &got);
	assert_true(ms_ledger_set_equal(&want, &got));
	ms_shard_close(s);
	char df[4400];
	snprintf(df, sizeof(df), "%s/dicts/00000001", dir);
	assert_true(path_exists(df));
	char aside[4420];
	snprintf(aside, sizeof(aside), "%s.aside", df);
	assert_int_equal(rename(df, aside), 0);
	s = open_shard(dir, false, NULL); /* the part opens: headers only */
	ms_view *v;
	assert_int_equal(ms_shard_view(s, &v, &eb), 0);
	assert_int_equal(ms_part_verify(ms_view_part(v, 0, MS_KIND_CORE), &eb),
	                 MS_ERR_FORMAT);
	assert_non_null(strstr(eb.msg, "dictionary ID 1"));
	ms_view_release(v);
	ms_shard_close(s);
	assert_int_equal(rename(aside, df), 0);
	rm_dir(dir);
}

/* A dictionary the file system refuses is refused naming the step and
 * its path: DIR/dicts that is not a directory ("create DIR/dicts"), its
 * file stopped by a file size limit (EFBIG, as ENOSPC on a full disk:
 * "write DIR/tmp/dict-00000001"). Nothing is added, nothing is left in
 * tmp/, and the shard takes it once the file system does. */
static void
test_dictionary_write_refused(void **state)
{
	(void)state;
	char *dir = make_dir();
	ms_shard *s = open_shard(dir, true, NULL);
	ms_errbuf eb = { { 0 } };
	size_t nb;
	uint8_t *bytes = train_dict(200, &nb);
	char dicts[4200], tmp[4200], want[4500];
	snprintf(dicts, sizeof(dicts), "%s/dicts", dir);
	snprintf(tmp, sizeof(tmp), "%s/tmp/dict-00000001", dir);
	int fd = open(dicts, O_WRONLY | O_CREAT | O_EXCL, 0644);
	assert_true(fd >= 0);
	close(fd);
	uint32_t did = 0;
	assert_int_equal(ms_shard_add_dict(s, bytes, nb, &did, &eb), MS_ERR_IO);
	snprintf(want, sizeof(want), "dictionary 00000001: create %s: %s",
	         dicts, strerror(ENOTDIR));
	assert_non_null(strstr(eb.msg, want));
	assert_null(ms_shard_dict(s, 1));
	assert_int_equal(unlink(dicts), 0);

	struct rlimit old, lim;
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, SIG_IGN);
	lim = old;
	lim.rlim_cur = 64;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	int rc = ms_shard_add_dict(s, bytes, nb, &did, &eb);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	assert_int_equal(rc, MS_ERR_IO);
	snprintf(want, sizeof(want), "dictionary 00000001: write %s: %s", tmp,
	         strerror(EFBIG));
	assert_non_null(strstr(eb.msg, want));
	assert_null(ms_shard_dict(s, 1));
	assert_false(path_exists(tmp));

	assert_int_equal(ms_shard_add_dict(s, bytes, nb, &did, &eb), 0);
	assert_int_equal(did, 1);
	assert_non_null(ms_shard_dict(s, 1));
	ms_mem_free(NULL, bytes, nb);
	ms_shard_close(s);
	rm_dir(dir);
}

/* A dictionary added to a shard out of memory at each allocation: the
 * shard refuses it saying so and what for (zstd's tables, which said
 * "not a zstd dictionary, or no memory", MS_ERR_COMPRESS), and takes it
 * once there is memory. */
static void
test_dictionary_alloc_failures(void **state)
{
	(void)state;
	char *dir = make_dir();
	ms_mem mem;
	ms_mem_init(&mem, NULL);
	ms_shard *s = open_shard(dir, true, &mem);
	ms_errbuf eb = { { 0 } };
	size_t nb;
	uint8_t *bytes = train_dict(200, &nb);
	uint32_t did = 0;
	size_t failures = 0, tables = 0;
	for (uint64_t k = 1;; k++) {
		ms_mem_fail_at(&mem, k, false);
		int rc = ms_shard_add_dict(s, bytes, nb, &did, &eb);
		ms_mem_fail_at(&mem, 0, false);
		if (rc == 0)
			break;
		failures++;
		if (rc != MS_ERR_NOMEM)
			fail_msg("allocation %llu: %d %s",
			         (unsigned long long)k, rc, eb.msg);
		assert_says_out_of_memory(&eb);
		tables += strstr(eb.msg, "dictionary 1: out of memory for its "
		                         "zstd ") != NULL;
		assert_null(ms_shard_dict(s, 1));
	}
	assert_int_equal(did, 1);
	assert_non_null(ms_shard_dict(s, 1));
	assert_true(failures > 3);
	assert_true(tables > 0);
	ms_mem_free(NULL, bytes, nb);
	ms_shard_close(s);
	rm_dir(dir);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_transactions_bump_epoch),
		cmocka_unit_test(test_dictionary_alloc_failures),
		cmocka_unit_test(test_dictionary_write_refused),
		cmocka_unit_test(test_view_pins_removed_parts),
		cmocka_unit_test(test_view_of_pins_only_its_parts),
		cmocka_unit_test(test_strays),
		cmocka_unit_test(test_failures_change_nothing),
		cmocka_unit_test(test_recovery_leftovers),
		cmocka_unit_test(test_recovery_refuses_missing_part),
		cmocka_unit_test(test_recovery_refuses_bad_snapshot),
		cmocka_unit_test(test_entry_order),
		cmocka_unit_test(test_recovery_after_sigkill),
		cmocka_unit_test(test_crash_at_every_publication_step),
		cmocka_unit_test(test_reaper_deletes_inputs),
		cmocka_unit_test(test_reaper_without_threads),
		cmocka_unit_test(test_publication_syncs),
		cmocka_unit_test(test_group_commit_syncs),
		cmocka_unit_test(test_crash_with_group_commit),
		cmocka_unit_test(test_group_commit_failures),
		cmocka_unit_test(test_old_layout_refused),
		cmocka_unit_test(test_shard_dictionary),
		cmocka_unit_test(test_concurrent_views),
		cmocka_unit_test(test_alloc_failures),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
