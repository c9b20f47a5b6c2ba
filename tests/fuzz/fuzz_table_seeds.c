/*
 * fuzz_table_seeds.c - writes the seed corpora of fuzz_oracle_table and
 * fuzz_block_ledgers under OUT_DIR:
 *  - corpus-oracle: verdict oracle tables as ms__oracle_spill writes
 *    them (empty, three traces, one of more than the reader's 64 KiB
 *    buffer), each behind the harness's mode byte (bit 0: reseal the
 *    XXH3 tail), and near misses: keys out of order, blocks past the
 *    table, a count its size does not match, another magic, a byte
 *    flipped without resealing, cut short;
 *  - corpus-blkled: block ledger files as ms__fx_blocks_seal and
 *    ms__fx_blocks_write make them from the ledgers of generated rows
 *    (no entry, one, three, 17 over two lookup groups, 1,100 over two of
 *    the open's reads), and near misses: two entries of one key, keys
 *    descending, another version, a count its size does not match, cut
 *    short;
 *  - corpus-evdb: event databases the recorder writes (the tests' recorded
 *    run, ev_fixture.h: a run of each plugin variant of 0, 1 and 12
 *    merges), and near misses: another schema version, cut short.
 *
 * Usage: fuzz_table_seeds OUT_DIR
 */
#include "ev_fixture.h"
#include "fuzz_usage.h"
#include "fx_int.h"
#include "replay_int.h"

#include <xxhash.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *out_dir;

static void
die(const char *what)
{
	fprintf(stderr, "fuzz_table_seeds: %s\n", what);
	exit(1);
}

static void
save(const char *corpus, const char *name, const void *p, size_t n)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/%s", out_dir, corpus);
	if (mkdir(path, 0755) != 0 && errno != EEXIST)
		die(path);
	snprintf(path, sizeof(path), "%s/%s/%s", out_dir, corpus, name);
	FILE *f = fopen(path, "wb");
	if (!f || (n && fwrite(p, 1, n, f) != n) || fclose(f) != 0)
		die(path);
}

static uint8_t *
slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	if (!f || fseek(f, 0, SEEK_END) != 0)
		die(path);
	long len = ftell(f);
	uint8_t *p = malloc((size_t)len + 1);
	if (len < 0 || !p || fseek(f, 0, SEEK_SET) != 0 ||
	    fread(p, 1, (size_t)len, f) != (size_t)len)
		die(path);
	fclose(f);
	*n = (size_t)len;
	return p;
}

/* ---- oracle tables ---------------------------------------------------- */

static int
cmp_ent(const void *a, const void *b)
{
	const ms__oracle_ent *x = a, *y = b;
	if (x->key_hi != y->key_hi)
		return x->key_hi < y->key_hi ? -1 : 1;
	return (x->key_lo > y->key_lo) - (x->key_lo < y->key_lo);
}

/* The file ms__oracle_spill writes for a table of n traces, trace i with
 * 1 + i % 3 blocks; *len its size. */
static uint8_t *
oracle_table(size_t n, size_t *len)
{
	ms__oracle o;
	memset(&o, 0, sizeof(o));
	size_t nf = 0;
	for (size_t i = 0; i < n; i++)
		nf += 1 + i % 3;
	o.ent = calloc(n ? n : 1, sizeof(*o.ent));
	o.frags = calloc(nf ? nf : 1, sizeof(*o.frags));
	if (!o.ent || !o.frags)
		die("out of memory");
	for (size_t i = 0, f = 0; i < n; i++) {
		char tid[40];
		int l = snprintf(tid, sizeof(tid), "trace-%06zu", i);
		XXH128_hash_t h = XXH3_128bits(tid, (size_t)l);
		ms__oracle_ent *e = &o.ent[i];
		e->key_lo = h.low64;
		e->key_hi = h.high64;
		e->rows = (uint32_t)(3 + i * 7 % 40);
		e->keep = i % 4 != 1;
		e->failed =
		        e->keep && i % 5 == 2 ? (uint16_t)(1u << (i % 3)) : 0;
		e->nfrags = (uint32_t)(1 + i % 3);
		for (uint32_t k = 0; k < e->nfrags; k++, f++) {
			XXH128_hash_t b =
			        XXH3_128bits_withSeed(tid, (size_t)l, k + 1);
			o.frags[f].lo = b.low64;
			o.frags[f].hi = b.high64;
		}
	}
	qsort(o.ent, n, sizeof(*o.ent), cmp_ent);
	/* Each trace's blocks as the oracle lays them out: in key order. */
	for (size_t i = 0, f = 0; i < n; i++) {
		o.ent[i].frag0 = (uint32_t)f;
		f += o.ent[i].nfrags;
	}
	o.nent = n;
	o.nfrags = nf;
	char path[4200];
	snprintf(path, sizeof(path), "%s/oracle-seed.table", out_dir);
	unlink(path);
	if (ms__oracle_spill(&o, path) != 0)
		die("ms__oracle_spill");
	uint8_t *p = slurp(path, len);
	ms__oracle_release(&o); /* removes the file */
	return p;
}

/* The harness's input: mode byte, then the file. */
static void
save_oracle(const char *name, uint8_t mode, const uint8_t *p, size_t n)
{
	uint8_t *in = malloc(n + 1);
	if (!in)
		die("out of memory");
	in[0] = mode;
	memcpy(in + 1, p, n);
	save("corpus-oracle", name, in, n + 1);
	free(in);
}

static void
oracle_seeds(void)
{
	static const size_t sizes[] = { 0, 1, 3, 1500 };
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		size_t n;
		uint8_t *p = oracle_table(sizes[s], &n);
		char name[64];
		snprintf(name, sizeof(name), "table-%zu", sizes[s]);
		save_oracle(name, 0, p, n);
		snprintf(name, sizeof(name), "table-%zu-reseal", sizes[s]);
		save_oracle(name, 1, p, n);
		free(p);
	}
	size_t n;
	uint8_t *p = oracle_table(3, &n);
	uint8_t *q = malloc(n);
	if (!q)
		die("out of memory");
	/* Entries 0 and 1 swapped: out of key order. */
	memcpy(q, p, n);
	memcpy(q + 24, p + 24 + 32, 32);
	memcpy(q + 24 + 32, p + 24, 32);
	save_oracle("near-order", 1, q, n);
	/* Entry 2's blocks run one past the table. */
	memcpy(q, p, n);
	ms_put_le32(q + 24 + 2 * 32 + 24, ms_le32(q + 24 + 2 * 32 + 24) + 1);
	save_oracle("near-frags", 1, q, n);
	/* frag0 past the table. */
	memcpy(q, p, n);
	ms_put_le32(q + 24 + 20, 0xffffffffu);
	save_oracle("near-frag0", 1, q, n);
	/* A count its size does not match. */
	memcpy(q, p, n);
	ms_put_le64(q + 8, 4);
	save_oracle("near-count", 1, q, n);
	/* Another magic. */
	memcpy(q, p, n);
	q[7] = '2';
	save_oracle("near-magic", 1, q, n);
	/* A byte flipped, the checksum as it was. */
	memcpy(q, p, n);
	q[40] ^= 0x10;
	save_oracle("near-flip", 0, q, n);
	/* Cut short: no checksum. */
	save_oracle("near-cut", 0, p, n - 8);
	free(q);
	free(p);
}

/* ---- block ledgers ---------------------------------------------------- */

/* The ledgers of a block of `rows` generated rows of trace t. */
static void
block_ledgers(uint32_t t, uint32_t rows, ms_ledger_set *led)
{
	char tid[24], seg[32];
	static const char *const tags[] = { "http.method=GET", "db=pg" };
	snprintf(tid, sizeof(tid), "t%08x", t);
	ms_ledger_set_init(led);
	for (uint32_t i = 0; i < rows; i++) {
		snprintf(seg, sizeof(seg), "seg-%u-%u", t, i);
		ms_row r = {
			.trace_id = (const uint8_t *)tid,
			.trace_id_len = (uint32_t)strlen(tid),
			.span_id = (uint64_t)t << 16 | i,
			.segment_id = seg,
			.service = "checkout",
			.instance = "checkout-1",
			.endpoint = i % 2 ? "/pay" : "/cart",
			.start_ns = 1700000000000000000 + (int64_t)t * 1000 + i,
			.latency_ms = 5 + i,
			.is_error = i % 7 == 3,
			.tags = tags,
			.ntags = i % 3,
			.body = (const uint8_t *)"body",
			.body_len = 4,
		};
		ms_ledger_set_add_row(led, &r);
	}
}

/* The file ms__fx_blocks_write makes of n blocks (each added twice, as a
 * block two parts share, and sealed); *len its size. */
static uint8_t *
blkled_file(size_t n, size_t *len)
{
	fx_blocks b = { 0 };
	ms_errbuf eb = { { 0 } };
	for (size_t rep = 0; rep < (n > 1 ? 2 : 1); rep++)
		for (size_t i = 0; i < n; i++) {
			ms_ledger_set led;
			char k[24];
			int l = snprintf(k, sizeof(k), "block-%zu", i);
			XXH128_hash_t h = XXH3_128bits(k, (size_t)l);
			block_ledgers((uint32_t)i, (uint32_t)(1 + i % 5), &led);
			if (ms__fx_blocks_add(&b, h.low64, h.high64, &led))
				die("out of memory");
		}
	if (ms__fx_blocks_seal(&b, &eb) != 0 || b.n != n)
		die(eb.msg);
	char dir[4200], path[4300], fact[64];
	snprintf(dir, sizeof(dir), "%s/blkled-tmp", out_dir);
	if (mkdir(dir, 0755) != 0 && errno != EEXIST)
		die(dir);
	if (ms__fx_blocks_write(dir, &b, fact, &eb) != 0)
		die(eb.msg);
	ms__fx_blocks_free(&b);
	snprintf(path, sizeof(path), "%s/%s", dir, FX_BLOCKS_FILE);
	uint8_t *p = slurp(path, len);
	unlink(path);
	rmdir(dir);
	return p;
}

static void
blkled_seeds(void)
{
	static const size_t sizes[] = { 0, 1, 3, 17, 1100 };
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		size_t n;
		uint8_t *p = blkled_file(sizes[s], &n);
		char name[64];
		snprintf(name, sizeof(name), "file-%zu", sizes[s]);
		save("corpus-blkled", name, p, n);
		free(p);
	}
	size_t n;
	uint8_t *p = blkled_file(3, &n);
	uint8_t *q = malloc(n);
	if (!q)
		die("out of memory");
	/* Entry 1 is entry 0 again: keys not strictly ascending. */
	memcpy(q, p, n);
	memcpy(q + 16 + 68, p + 16, 68);
	save("corpus-blkled", "near-dup", q, n);
	/* Entries 1 and 2 swapped: descending. */
	memcpy(q, p, n);
	memcpy(q + 16 + 68, p + 16 + 2 * 68, 68);
	memcpy(q + 16 + 2 * 68, p + 16 + 68, 68);
	save("corpus-blkled", "near-order", q, n);
	/* Version 2. */
	memcpy(q, p, n);
	q[7] = '2';
	save("corpus-blkled", "near-version", q, n);
	/* A count its size does not match. */
	memcpy(q, p, n);
	ms_put_le64(q + 8, 2);
	save("corpus-blkled", "near-count", q, n);
	/* Cut in the last entry. */
	save("corpus-blkled", "near-cut", p, n - 5);
	free(q);
	free(p);
}

static void
evdb_seeds(void)
{
	static const struct {
		const char *variant;
		uint64_t merges;
	} runs[] = { { "skywalking", 12 },
		     { "disabled", 1 },
		     { "alwayskeep", 0 },
		     { "detdrop", 3 } };
	char path[4200];
	snprintf(path, sizeof(path), "%s/evdb-tmp.db", out_dir);
	for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
		ms_errbuf eb = { "" };
		unlink(path);
		if (evf_record(path, runs[i].variant, runs[i].merges, &eb) != 0)
			die(eb.msg);
		size_t n;
		uint8_t *db = slurp(path, &n);
		char name[32];
		snprintf(name, sizeof(name), "seed-%zu", i);
		save("corpus-evdb", name, db, n);
		if (i == 0) {
			/* PRAGMA user_version: 4 big-endian bytes at 60. */
			uint8_t v = db[63];
			db[63] = (uint8_t)(v - 1);
			save("corpus-evdb", "seed-old-schema", db, n);
			db[63] = v;
			save("corpus-evdb", "seed-cut", db, n / 2);
		}
		free(db);
	}
	unlink(path);
}

int
main(int argc, char **argv)
{
	if (!fuzz_usage_ok(argc, argv, 1, "OUT_DIR"))
		return 2;
	out_dir = argv[1];
	if (mkdir(out_dir, 0755) != 0 && errno != EEXIST)
		die(out_dir);
	oracle_seeds();
	blkled_seeds();
	evdb_seeds();
	return 0;
}
