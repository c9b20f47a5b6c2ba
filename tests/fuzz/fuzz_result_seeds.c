/*
 * fuzz_result_seeds.c - writes corpus-mo-result, the seed corpus of
 * fuzz_merge_once_result, under OUT_DIR: result files as a merge-once
 * repetition writes them (replay/merge_once.c rep_write, included for
 * it): figures and ledgers with no dropped trace, with three (IDs of 1,
 * 16 and MS_TRACE_ID_MAX bytes), and the child's error; near misses: a
 * line cut short, a ledger of another kind, an odd-length trace ID.
 *
 * Usage: fuzz_result_seeds OUT_DIR
 */
#include "merge_once.c"
#include "fuzz_usage.h"

static char out_dir[2048];

static void
seed_file(const char *name, const rep_out *o, int rc, const char *msg,
          size_t cut)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/corpus-mo-result", out_dir);
	if (mkdir(path, 0755) != 0 && errno != EEXIST)
		exit(1);
	snprintf(path, sizeof(path), "%s/corpus-mo-result/%s", out_dir, name);
	ms_errbuf eb = { "" };
	snprintf(eb.msg, sizeof(eb.msg), "%s", msg);
	if (rep_write(path, o, rc, &eb) != 0)
		exit(1);
	if (cut && truncate(path, (off_t)cut) != 0)
		exit(1);
}

static void
seed_text(const char *name, const char *text)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/corpus-mo-result/%s", out_dir, name);
	FILE *f = fopen(path, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) != 0)
		exit(1);
}

int
main(int argc, char **argv)
{
	if (!fuzz_usage_ok(argc, argv, 1, "OUT_DIR"))
		return 2;
	snprintf(out_dir, sizeof(out_dir), "%s", argv[1]);
	mkdir(out_dir, 0755);
	rep_out o;
	memset(&o, 0, sizeof(o));
	for (int k = 0; k < R_N; k++)
		o.v[k] = (uint64_t)k * 1000003u + 7;
	for (int k = 0; k < MS_KIND_COUNT; k++) {
		o.led.kind[k].rows = 100u * (uint64_t)(k + 1);
		o.led.kind[k].sum_hi = 0x0123456789abcdefULL + (uint64_t)k;
		o.led.kind[k].sum_lo = 0xfedcba9876543210ULL - (uint64_t)k;
	}
	seed_file("seed-plain", &o, 0, "", 0);
	uint8_t tid[MS_TRACE_ID_MAX];
	for (size_t i = 0; i < sizeof(tid); i++)
		tid[i] = (uint8_t)(i * 37 + 1);
	on_drop(&o.drops, tid, 1, 3);
	on_drop(&o.drops, tid, 16, 12);
	on_drop(&o.drops, tid, MS_TRACE_ID_MAX, 1);
	seed_file("seed-drops", &o, 0, "", 0);
	seed_file("seed-cut", &o, 0, "", 200);
	drops_free(&o.drops);
	seed_file("seed-error", &o, MS_ERR_NOSPACE,
	          "merge: part 00000000000000a1: write: No space left", 0);
	seed_text("seed-other-kind", "wall_ns=1\nledger.bogus=1:"
	                             "0123456789abcdef0123456789abcdef\n");
	seed_text("seed-odd-id", "drop=abc:5\n");
	return 0;
}
