/*
 * test_manifest.c - the fixture manifest codec: a round trip of every
 * stored field, and the reader refusing another schema version, a missing
 * part row, a gap in the slots, a malformed ledger, and bytes that are not
 * a database; out of memory, a read says so instead of blaming the file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "alloc_testlib.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fx_int.h"

#include <sys/stat.h>
#include <unistd.h>

static char path[256];

static void
sample(fx_manifest *mf, fx_sched_row *sched, fx_part_rec *parts, fx_kv *kv,
       ms_fixture_gate *gates)
{
	static char v_schema[] = "1", v_preset[] = "smoke", v_seed[] = "9";

	memset(mf, 0, sizeof(*mf));
	kv[0] = (fx_kv){ "schema_version", v_schema };
	kv[1] = (fx_kv){ "preset", v_preset };
	kv[2] = (fx_kv){ "seed", v_seed };
	mf->kv = kv;
	mf->nkv = 3;
	for (int i = 0; i < 2; i++) {
		fx_sched_row *r = &sched[i];

		memset(r, 0, sizeof(*r));
		r->slot = (uint64_t)i;
		r->pub_ns = 1000 + i;
		r->part_id = (uint64_t)i + 1;
		r->template_ord = (uint32_t)i;
		r->partial_tail = i == 1;
		r->target_blocks = 45;
		r->target_rows = 262;
		r->blocks = 44;
		r->rows = 261;
		r->cum_target_blocks = 45 + (uint64_t)i;
		r->cum_target_rows = 262;
		r->cum_blocks = 44;
		r->cum_rows = 261;
		r->dist_before = 0.0260814;
		r->dist_after = i ? -1 : 0.5;
		r->choice = i ? FX_CUT_FINAL : FX_CUT_CLOSEST;
		r->fragments = 44;
		r->deferred = (uint64_t)i;
		memset(&parts[i], 0, sizeof(parts[i]));
		parts[i].id = (uint64_t)i + 1;
		for (int k = 0; k < MS_KIND_COUNT; k++) {
			ms_part_meta *m = &parts[i].meta[k];

			m->id = parts[i].id;
			m->compressed_bytes = 1000u * (unsigned)(k + 1);
			m->uncompressed_bytes = 3000;
			m->rows = 261;
			m->blocks = 44;
			m->traces = k ? 0 : 44;
			m->min_ts = -5;
			m->max_ts = 1000 + i;
			m->checksum = 0xfedcba9876543210ULL + (uint64_t)k;
			snprintf(parts[i].files_hash[k], 33, "%032d",
			         i * 10 + k);
			parts[i].ledger[k].rows = 261;
			parts[i].ledger[k].sum_hi = 0x8000000000000001ULL;
			parts[i].ledger[k].sum_lo = (uint64_t)k;
		}
	}
	mf->sched = sched;
	mf->parts = parts;
	mf->nsched = 2;
	memset(gates, 0, 2 * sizeof(*gates));
	snprintf(gates[0].name, sizeof(gates[0].name), "rows");
	gates[0].pass = true;
	snprintf(gates[0].value, sizeof(gates[0].value), "17477 (+0.01%%)");
	snprintf(gates[0].expected, sizeof(gates[0].expected), "within 2%%");
	snprintf(gates[1].name, sizeof(gates[1].name), "tail");
	mf->gates = gates;
	mf->ngates = 2;
}

static int
setup(void **state)
{
	(void)state;
	snprintf(path, sizeof(path), "/tmp/ms-manifest-test-%ld.sqlite",
	         (long)getpid());
	unlink(path);
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	unlink(path);
	return 0;
}

static void
write_sample(void)
{
	fx_manifest mf;
	fx_sched_row sched[2];
	fx_part_rec parts[2];
	fx_kv kv[3];
	ms_fixture_gate gates[2];
	ms_errbuf eb = { { 0 } };

	unlink(path);
	sample(&mf, sched, parts, kv, gates);
	assert_int_equal(ms__fx_manifest_write(path, &mf, &eb), 0);
}

static void
test_round_trip(void **state)
{
	fx_manifest want, *got = NULL;
	fx_sched_row sched[2];
	fx_part_rec parts[2];
	fx_kv kv[3];
	ms_fixture_gate gates[2];
	ms_errbuf eb = { { 0 } };

	(void)state;
	sample(&want, sched, parts, kv, gates);
	write_sample();
	assert_int_equal(ms__fx_manifest_read(path, &got, &eb), 0);
	assert_int_equal(got->nsched, 2);
	assert_string_equal(ms__fx_kv_get(got, "preset"), "smoke");
	assert_null(ms__fx_kv_get(got, "nothing"));
	for (int i = 0; i < 2; i++) {
		const fx_sched_row *a = &sched[i], *b = &got->sched[i];

		assert_int_equal(a->pub_ns, b->pub_ns);
		assert_int_equal(a->part_id, b->part_id);
		assert_int_equal(a->partial_tail, b->partial_tail);
		assert_int_equal(a->choice, b->choice);
		assert_int_equal(a->cum_target_blocks, b->cum_target_blocks);
		assert_int_equal(a->deferred, b->deferred);
		assert_true(a->dist_before == b->dist_before);
		assert_true(a->dist_after == b->dist_after);
		for (int k = 0; k < MS_KIND_COUNT; k++) {
			assert_int_equal(parts[i].meta[k].checksum,
			                 got->parts[i].meta[k].checksum);
			assert_int_equal(parts[i].meta[k].min_ts,
			                 got->parts[i].meta[k].min_ts);
			assert_int_equal(
			        parts[i].meta[k].compressed_bytes,
			        got->parts[i].meta[k].compressed_bytes);
			assert_string_equal(parts[i].files_hash[k],
			                    got->parts[i].files_hash[k]);
			assert_true(ms_ledger_equal(&parts[i].ledger[k],
			                            &got->parts[i].ledger[k]));
		}
	}
	{
		char a[33], b[33];

		ms__fx_schedule_hash(sched, 2, a);
		ms__fx_schedule_hash(got->sched, 2, b);
		assert_string_equal(a, b);
		ms__fx_topology_hash(parts, 2, a);
		ms__fx_topology_hash(got->parts, 2, b);
		assert_string_equal(a, b);
		/* A changed schedule row changes the hash. */
		got->sched[1].pub_ns++;
		ms__fx_schedule_hash(got->sched, 2, b);
		ms__fx_schedule_hash(sched, 2, a);
		assert_string_not_equal(a, b);
	}
	assert_int_equal(got->ngates, 2);
	assert_string_equal(got->gates[0].value, "17477 (+0.01%)");
	assert_false(got->gates[1].pass);
	ms__fx_manifest_free(got);
	ms__fx_manifest_free(NULL);
}

/* The tables as the file stores them: the CREATE texts are part of every
 * manifest's bytes (the same day gives the same file), so the column
 * tables that generate them must give exactly the format's text. */
static void
test_schema_text(void **state)
{
	static const char *const want[][2] = {
		{ "fixture", "CREATE TABLE fixture(key TEXT PRIMARY KEY, value "
		             "TEXT NOT NULL)" },
		{ "schedule",
		  "CREATE TABLE schedule(slot INTEGER PRIMARY KEY, pub_ns "
		  "INTEGER NOT NULL, part_id INTEGER NOT NULL, template "
		  "INTEGER "
		  "NOT NULL, partial_tail INTEGER NOT NULL, target_blocks "
		  "INTEGER NOT NULL, target_rows INTEGER NOT NULL, blocks "
		  "INTEGER NOT NULL, rows INTEGER NOT NULL, cum_target_blocks "
		  "INTEGER NOT NULL, cum_target_rows INTEGER NOT NULL, "
		  "cum_blocks INTEGER NOT NULL, cum_rows INTEGER NOT NULL, "
		  "dist_before REAL NOT NULL, dist_after REAL NOT NULL, choice "
		  "TEXT NOT NULL, fragments INTEGER NOT NULL, deferred INTEGER "
		  "NOT NULL)" },
		{ "part",
		  "CREATE TABLE part(part_id INTEGER NOT NULL, kind TEXT NOT "
		  "NULL, path TEXT NOT NULL, compressed_bytes INTEGER NOT "
		  "NULL, "
		  "uncompressed_bytes INTEGER NOT NULL, rows INTEGER NOT NULL, "
		  "blocks INTEGER NOT NULL, traces INTEGER NOT NULL, min_ts "
		  "INTEGER NOT NULL, max_ts INTEGER NOT NULL, checksum TEXT "
		  "NOT "
		  "NULL, files_hash TEXT NOT NULL, ledger TEXT NOT NULL, "
		  "PRIMARY KEY(part_id, kind))" },
		{ "opening", "CREATE TABLE opening(ord INTEGER PRIMARY KEY, "
		             "part_id INTEGER NOT NULL)" },
		{ "gate",
		  "CREATE TABLE gate(ord INTEGER PRIMARY KEY, name TEXT "
		  "NOT NULL, pass INTEGER NOT NULL, value TEXT NOT "
		  "NULL, expected TEXT NOT NULL)" },
		{ "sampler_stat", "CREATE TABLE sampler_stat(name TEXT PRIMARY "
		                  "KEY, value INTEGER NOT NULL)" },
	};
	sqlite3 *db;
	sqlite3_stmt *st;
	size_t n = 0;

	(void)state;
	write_sample();
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db,
	                                    "SELECT name, sql FROM "
	                                    "sqlite_master WHERE type = "
	                                    "'table' ORDER BY rowid",
	                                    -1, &st, NULL),
	                 SQLITE_OK);
	while (sqlite3_step(st) == SQLITE_ROW) {
		assert_true(n < sizeof(want) / sizeof(want[0]));
		assert_string_equal(sqlite3_column_text(st, 0), want[n][0]);
		assert_string_equal(sqlite3_column_text(st, 1), want[n][1]);
		n++;
	}
	assert_int_equal(n, sizeof(want) / sizeof(want[0]));
	sqlite3_finalize(st);
	sqlite3_close(db);
}

/* Apply sql to the sample manifest, then expect the reader to refuse it
 * with MS_ERR_FORMAT and a message containing want. */
static void
expect_refused(const char *sql, const char *want)
{
	sqlite3 *db;
	fx_manifest *got = (fx_manifest *)1;
	ms_errbuf eb = { { 0 } };

	write_sample();
	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	assert_int_equal(ms__fx_manifest_read(path, &got, &eb), MS_ERR_FORMAT);
	assert_null(got);
	assert_non_null(strstr(eb.msg, want));
}

static void
test_refusals(void **state)
{
	(void)state;
	expect_refused("UPDATE fixture SET value='2' WHERE "
	               "key='schema_version'",
	               "schema_version 2");
	expect_refused("DELETE FROM fixture WHERE key='schema_version'",
	               "not a fixture manifest");
	expect_refused("DELETE FROM part WHERE part_id=2 AND kind='latency'",
	               "expected 3 per slot");
	expect_refused("UPDATE schedule SET slot=5 WHERE slot=1",
	               "schedule row 1");
	expect_refused("UPDATE part SET ledger='12:zz' WHERE part_id=1",
	               "malformed");
	expect_refused("UPDATE part SET path='../../etc' WHERE part_id=1",
	               "malformed");
	expect_refused("UPDATE schedule SET choice='best' WHERE slot=0",
	               "schedule row 0");
	expect_refused("DROP TABLE fixture", "no such table: fixture");
}

static void
test_not_a_database(void **state)
{
	fx_manifest *got = NULL;
	ms_errbuf eb = { { 0 } };
	FILE *f;
	static const char junk[] = "this is not a database, not even close";

	(void)state;
	unlink(path);
	assert_int_equal(ms__fx_manifest_read(path, &got, &eb),
	                 MS_ERR_NOTFOUND);
	f = fopen(path, "wb");
	assert_non_null(f);
	fwrite(junk, 1, sizeof(junk), f);
	fclose(f);
	assert_true(ms__fx_manifest_read(path, &got, &eb) < 0);
	assert_null(got);
	assert_true(ms__fx_manifest_read_mem(junk, sizeof(junk), &got, &eb) <
	            0);
	assert_null(got);

	/* A directory where the manifest should be: named as such, not
	 * SQLite's "disk I/O error". */
	unlink(path);
	assert_int_equal(mkdir(path, 0755), 0);
	assert_int_equal(ms__fx_manifest_read(path, &got, &eb), MS_ERR_FORMAT);
	assert_null(got);
	assert_non_null(strstr(eb.msg, path));
	assert_non_null(strstr(eb.msg, "a directory, expected"));
	assert_int_equal(rmdir(path), 0);
}

static void
test_read_from_memory(void **state)
{
	fx_manifest *got = NULL;
	ms_errbuf eb = { { 0 } };
	FILE *f;
	long n;
	char *buf;

	(void)state;
	write_sample();
	f = fopen(path, "rb");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	assert_int_equal(ms__fx_manifest_read_mem(buf, (size_t)n, &got, &eb),
	                 0);
	assert_int_equal(got->nsched, 2);
	ms__fx_manifest_free(got);
	/* Truncated: refused, not a crash. */
	assert_true(ms__fx_manifest_read_mem(buf, (size_t)n / 2, &got, &eb) <
	            0);
	free(buf);
}

/* An empty directory (a part kind with no files) has a files hash, the
 * same for any empty directory; one file changes it. The listing was
 * sorted from a NULL array, which the sanitizer build stops on. */
static void
test_empty_directory_hash(void **state)
{
	char a[300], b[300], h0[33], h1[33], h2[33];
	ms_errbuf eb = { { 0 } };

	(void)state;
	snprintf(a, sizeof(a), "%s.empty-a", path);
	snprintf(b, sizeof(b), "%s.empty-b", path);
	rmdir(a);
	rmdir(b);
	assert_int_equal(mkdir(a, 0755), 0);
	assert_int_equal(mkdir(b, 0755), 0);
	assert_int_equal(ms__fx_dir_hash(a, h0, &eb), 0);
	assert_int_equal(strlen(h0), 32);
	assert_int_equal(ms__fx_dir_hash(b, h1, &eb), 0);
	assert_string_equal(h0, h1);
	char f[320];
	snprintf(f, sizeof(f), "%s/x", b);
	FILE *fp = fopen(f, "w");
	assert_non_null(fp);
	fputs("x", fp);
	fclose(fp);
	assert_int_equal(ms__fx_dir_hash(b, h2, &eb), 0);
	assert_string_not_equal(h0, h2);
	unlink(f);
	rmdir(a);
	rmdir(b);
}

static int
hash_dir(void *ctx, ms_errbuf *eb)
{
	char h[33];
	return ms__fx_dir_hash(ctx, h, eb);
}

/* Out of memory hashing a directory of 20 files, at each allocation in
 * turn: the message names the directory, what the memory was for and how
 * many bytes (it said "out of memory" alone). */
static void
test_dir_hash_out_of_memory(void **state)
{
	char dir[300], f[320];
	(void)state;
	snprintf(dir, sizeof(dir), "%s.oom", path);
	assert_int_equal(mkdir(dir, 0755), 0);
	for (int i = 0; i < 20; i++) {
		snprintf(f, sizeof(f), "%s/f%02d", dir, i);
		FILE *fp = fopen(f, "w");
		assert_non_null(fp);
		fputs("x", fp);
		fclose(fp);
	}
	tl_sweep_want w = { dir, true, true };
	tl_alloc_call c = { hash_dir, dir };
	/* The list twice (16, 32 names), the read buffer (the names are
	 * strdup's, inside libc, not failed here). */
	assert_int_equal(tl_sweep(tl_alloc_step, &c, &w), 3);
	for (int i = 0; i < 20; i++) {
		snprintf(f, sizeof(f), "%s/f%02d", dir, i);
		unlink(f);
	}
	assert_int_equal(rmdir(dir), 0);
}

/* ---- SQLite out of memory ----------------------------------------- */

/* SQLite's allocator with a fault: once armed, the fail_at-th allocation
 * (counted from arming) and every later one fail, as under `ulimit -v`
 * once the address space is spent. */
static sqlite3_mem_methods sql_mem;
static long sql_armed_at; /* 0: not armed */
static long sql_count;

static int
sql_fail_now(void)
{
	return sql_armed_at && ++sql_count >= sql_armed_at;
}

static void *
sql_malloc(int n)
{
	return sql_fail_now() ? NULL : sql_mem.xMalloc(n);
}

static void *
sql_realloc(void *p, int n)
{
	return sql_fail_now() ? NULL : sql_mem.xRealloc(p, n);
}

/* Reading a manifest while SQLite runs out of memory at each allocation
 * in turn: every failure says "out of memory". A step that failed ended
 * the read loops as if the rows were all read, and the reader blamed the
 * manifest ("2 part rows for 2 slots, expected 3 per slot"). */
static void
test_read_out_of_memory(void **state)
{
	(void)state;
	write_sample();
	for (long at = 1;; at++) {
		fx_manifest *got = NULL;
		ms_errbuf eb = { { 0 } };
		sql_count = 0;
		sql_armed_at = at;
		int rc = ms__fx_manifest_read(path, &got, &eb);
		sql_armed_at = 0;
		ms__fx_manifest_free(got);
		if (rc == 0)
			break;
		if (!strstr(eb.msg, "out of memory"))
			fail_msg("allocation %ld failing: %s", at, eb.msg);
	}
}

int
main(void)
{
	sqlite3_mem_methods m;
	if (sqlite3_config(SQLITE_CONFIG_GETMALLOC, &sql_mem) != SQLITE_OK)
		return 1;
	m = sql_mem;
	m.xMalloc = sql_malloc;
	m.xRealloc = sql_realloc;
	if (sqlite3_config(SQLITE_CONFIG_MALLOC, &m) != SQLITE_OK)
		return 1;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_schema_text),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_not_a_database),
		cmocka_unit_test(test_read_from_memory),
		cmocka_unit_test(test_empty_directory_hash),
		cmocka_unit_test(test_dir_hash_out_of_memory),
		cmocka_unit_test(test_read_out_of_memory),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
