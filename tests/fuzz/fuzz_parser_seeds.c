/*
 * fuzz_parser_seeds.c - writes the seed corpora of the shard snapshot,
 * breakpoint, TUI input and command-line harnesses under one directory:
 * corpus-shard (real snapshots of an empty shard and of the two-part
 * template, in several modes), corpus-frozen (frozen.txt files as a
 * freeze writes them, and near misses), corpus-bp, corpus-tui and
 * corpus-cli (what users type, one valid and a few near-miss spellings of
 * each form), and corpus-records (an owner record ms_owner_write_file
 * writes, ledgers ms_ledger_format writes, cgroup files of both versions,
 * a TUI memory file, and near misses of each).
 * Usage: fuzz_parser_seeds OUT_DIR
 */
#include "fuzz_shard.h"
#include "fuzz_usage.h"
#include "ms_ledger.h"
#include "ms_owner.h"

#include <errno.h>

static char out_dir[1024];

static void
save(const char *corpus, const char *name, const void *p, size_t n)
{
	char path[2048];
	snprintf(path, sizeof(path), "%s/%s", out_dir, corpus);
	if (mkdir(path, 0755) != 0 && errno != EEXIST)
		abort();
	snprintf(path, sizeof(path), "%s/%s/%s", out_dir, corpus, name);
	fzs_write_file(path, p, n);
}

/* A text seed: optional leading mode byte, then the text. */
static void
save_text(const char *corpus, int mode, const char *text, size_t i)
{
	char name[32];
	uint8_t buf[1024];
	size_t n = 0;
	if (mode >= 0)
		buf[n++] = (uint8_t)mode;
	size_t l = strlen(text);
	memcpy(buf + n, text, l);
	n += l;
	snprintf(name, sizeof(name), "seed-%02x-%03zu", mode & 0xff, i);
	save(corpus, name, buf, n);
}

/* corpus-records: byte 0 picks the reader of fuzz_records (0 owner,
 * 1 ledger, 2 cgroup file, 3 TUI memory), then the file. */
static void
records_seeds(void)
{
	char path[1200];
	snprintf(path, sizeof(path), "%s/owner-tmp", out_dir);
	ms_errbuf eb = { "" };
	if (ms_owner_write_file(path, "scratch", "fuzz seed", &eb) != 0)
		abort();
	uint8_t *rec;
	size_t n = fzs_slurp(path, &rec);
	unlink(path);
	uint8_t *in = malloc(n + 1);
	in[0] = 0;
	memcpy(in + 1, rec, n);
	save("corpus-records", "seed-00-000", in, n + 1);
	save("corpus-records", "seed-00-001", in, n); /* cut short */
	free(in);
	free(rec);

	ms_ledger l = { .rows = 1234567,
		        .sum_hi = 0x0123456789abcdefULL,
		        .sum_lo = 0xfedcba9876543210ULL };
	char text[MS_LEDGER_STR_MAX];
	save_text("corpus-records", 1, ms_ledger_format(&l, text), 0);
	l = (ms_ledger){ 0, 0, 0 };
	save_text("corpus-records", 1, ms_ledger_format(&l, text), 1);
	save_text("corpus-records", 1,
	          "18446744073709551616:0123456789ABCDEF0123456789abcdef", 2);
	save_text("corpus-records", 1, "7:0123456789abcdef0123456789abcde", 3);

	static const char *const cg[] = {
		"0::/user.slice/user-1000.slice/session-2.scope\n",
		("12:pids:/a\n11:cpu,cpuacct:/b/c\n10:memory:/d\n"
		 "1:name=systemd:/e\n0::/f\n"),
		"0::/\n",
		"3:memory\n0:x:/y\n",
	};
	for (size_t i = 0; i < sizeof(cg) / sizeof(cg[0]); i++)
		save_text("corpus-records", 2, cg[i], i);

	static const char *const mem[] = {
		"break merge=40\nbreak time=12:10\nfilter lane=fast\n",
		"break mature\nfilter \nbreak \nother line\n",
		"filter class=executed reason=merge_grace",
	};
	for (size_t i = 0; i < sizeof(mem) / sizeof(mem[0]); i++)
		save_text("corpus-records", 3, mem[i], i);
	/* A filter line longer than the reader's old 512-byte buffer, a
	 * "break" where that buffer ended: read as a breakpoint before. */
	char longline[600];
	int k = snprintf(longline, sizeof(longline), "filter ");
	memset(longline + k, 'a', 504);
	snprintf(longline + k + 504, sizeof(longline) - (size_t)k - 504,
	         "break merge=7\n");
	save_text("corpus-records", 3, longline, 3);
}

static void
shard_seeds(void)
{
	char base[1200], tpl[1300], empty[1300], path[1400];
	snprintf(base, sizeof(base), "%s/shard-tmp", out_dir);
	snprintf(tpl, sizeof(tpl), "%s/tpl", base);
	snprintf(empty, sizeof(empty), "%s/empty", base);
	fzs_rmrf(base);
	if (mkdir(base, 0755) != 0)
		abort();
	fzs_make_template(tpl);
	ms_shard_opts o = { .dir = empty, .create = true };
	ms_shard *s = NULL;
	ms_errbuf eb = { { 0 } };
	if (ms_shard_open(&s, &o, &eb) != 0)
		abort();
	ms_shard_close(s);

	static const uint8_t tpl_modes[] = { 0x00, 0x02, 0x0e, 0x22,
		                             0x2e, 0x03, 0x42 };
	static const uint8_t empty_modes[] = { 0x00, 0x0c, 0x10, 0x1c, 0x01 };
	const struct {
		const char *dir;
		const uint8_t *modes;
		size_t n;
	} sets[] = { { tpl, tpl_modes, sizeof(tpl_modes) },
		     { empty, empty_modes, sizeof(empty_modes) } };
	for (size_t k = 0; k < 2; k++) {
		uint8_t *snap;
		snprintf(path, sizeof(path), "%s/snapshot", sets[k].dir);
		size_t n = fzs_slurp(path, &snap);
		uint8_t *in = malloc(n + 2);
		memcpy(in + 2, snap, n);
		for (size_t m = 0; m < sets[k].n; m++) {
			char name[32];
			in[0] = sets[k].modes[m];
			in[1] = (uint8_t)(5 + m);
			snprintf(name, sizeof(name), "%s-%02x",
			         k ? "empty" : "two", in[0]);
			save("corpus-shard", name, in, n + 2);
		}
		free(in);
		free(snap);
	}
	fzs_rmrf(base);
}

/* A frozen.txt (format 3) of n inputs as freeze.c writes it; `tweak`
 * breaks one thing (0: nothing). */
static void
frozen_seed(size_t n, int tweak)
{
	uint64_t ids[4] = { 0x1f, 0x20, 0xa3, 0x1000 };
	uint8_t le[8 * 5];
	ms_put_le64(le, n);
	for (size_t i = 0; i < n; i++)
		ms_put_le64(le + 8 * (i + 1), ids[i]);
	uint64_t fp = XXH3_64bits_withSeed(le, 8 * (n + 1), 0);
	char buf[4096];
	int k = snprintf(
	        buf, sizeof(buf),
	        "# mergescope frozen merge\n"
	        "format=3\nfixture_dir=/cache/mergescope/day-2x-1\n"
	        "fixture_preset=day-2x\nfixture_seed=1\n"
	        "fixture_schedule_hash=%s\nfixture_topology_hash=ab12\n"
	        "now_ns=1700050000000000000\nfrontier_ns=%s\n"
	        "grace_policy=%s\nvariant=skywalking\nseq=58\nlane=%s\n"
	        "finalize=%d\noutput_id=00000000000004a1\nepoch=946\n"
	        "shard_parts=20\ncpus=2\nmem_limit=4294967296\n",
	        "0123456789abcdef0123456789abcdef0123456789abcdef0123456789"
	        "abcdef",
	        tweak == 1 ? "1700050000000000001" : "1700042800000000000",
	        n == 1 ? "trace" : "selection", n == 1 ? "finalize" : "fast",
	        n == 1);
	k += snprintf(buf + k, sizeof(buf) - (size_t)k, "inputs=");
	for (size_t i = 0; i < n; i++)
		k += snprintf(buf + k, sizeof(buf) - (size_t)k, "%s%016llx",
		              i ? "," : "", (unsigned long long)ids[i]);
	k += snprintf(buf + k, sizeof(buf) - (size_t)k, "\ndepths=");
	for (size_t i = 0; i < n; i++)
		k += snprintf(buf + k, sizeof(buf) - (size_t)k, "%s%zu",
		              i ? "," : "", i);
	k += snprintf(buf + k, sizeof(buf) - (size_t)k,
	              "\nsegment_ns=1699999200000000000,1700100000000000000"
	              "\nselection_fp=%016llx\n",
	              (unsigned long long)(tweak == 2 ? fp + 1 : fp));
	/* What the picker saw; tweak 4 claims an input. */
	k += snprintf(buf + k, sizeof(buf) - (size_t)k,
	              "pick_epoch=945\npass=2\nfan_out=%s\n"
	              "picker_max_parts=15\npicker_multiplier=1.7\n"
	              "claimed=00000000000000b0,%016llx\nquarantined=\n"
	              "unseen=00000000000004a0\n",
	              n == 1 ? "0" : "82646507520",
	              (unsigned long long)(tweak == 4 ? ids[0] : 0xb1));
	static const char *const kinds[] = { "core", "latency", "start_time" };
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < 3; j++)
			if (!(tweak == 3 && i == n - 1 && j == 2))
				k += snprintf(
				        buf + k, sizeof(buf) - (size_t)k,
				        "ledger.%016llx.%s=%zu:"
				        "000102030405060708090a0b0c0d0e0f\r\n",
				        (unsigned long long)ids[i], kinds[j],
				        40 + i * 3 + j);
	char name[32];
	snprintf(name, sizeof(name), "frozen-%zu-%d", n, tweak);
	save("corpus-frozen", name, buf, (size_t)k);
}

/* corpus-proc: byte 0 picks the reader of fuzz_proc (0 status, 1 statm,
 * 2 stat, 3 memory.max NUL cpu.max, 4 memory.peak NUL memory.events NUL
 * cpu.stat), texts as Linux writes them and near misses. */
static void
proc_seeds(void)
{
	static const char status[] =
	        "Name:\tmergescope\nUmask:\t0022\nState:\tR (running)\n"
	        "VmPeak:\t  123456 kB\nVmHWM:\t   40960 kB\n"
	        "VmRSS:\t   40000 kB\nRssAnon:\t   30000 kB\n"
	        "RssFile:\t    9000 kB\nRssShmem:\t    1000 kB\n"
	        "Threads:\t3\n";
	save_text("corpus-proc", 0, status, 0);
	save_text("corpus-proc", 0, "Name:\tRssAnon: 7\nRssAnon:\t 5 kB\n", 1);
	save_text("corpus-proc", 0, "RssAnon:\t99999999999999999999 kB\n", 2);
	save_text("corpus-proc", 1, "29153 10040 2590 1 0 19036 0\n", 0);
	save_text("corpus-proc", 1, "-3 9223372036854775807\n", 1);
	save_text("corpus-proc", 2,
	          "4242 (merge scope) S 1 4242 4242 0 -1 4194560 1213 0 0 0 "
	          "3 1 0 0 20 0 1 0 8812345 10280960 623 "
	          "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 17 1 0 0\n",
	          0);
	save_text("corpus-proc", 2, "1 (a) b) Z 1 2 3\n", 1);
	save_text("corpus-proc", 2,
	          "7 (x) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 -5 0\n", 2);
	static const char lim[] = "1073741824\n\0150000 100000\n";
	save("corpus-proc", "seed-03-000", (const uint8_t[]){ 3 }, 1);
	uint8_t buf[64] = { 3 };
	memcpy(buf + 1, lim, sizeof(lim) - 1);
	save("corpus-proc", "seed-03-001", buf, sizeof(lim));
	memcpy(buf + 1, "max\n\0max 100000\n", 17);
	save("corpus-proc", "seed-03-002", buf, 18);
	static const char env[] = "734003200\n\0low 0\nhigh 0\nmax 12\noom 1\n"
	                          "oom_kill 1\n\0usage_usec 5\nnr_periods 9\n"
	                          "nr_throttled 4\nthrottled_usec 2000\n";
	uint8_t eb[sizeof(env)] = { 4 };
	memcpy(eb + 1, env, sizeof(env) - 1);
	save("corpus-proc", "seed-04-000", eb, sizeof(env));
}

/* corpus-names: byte 0 picks the reader of fuzz_tui_names (0 the notes
 * pipe, its byte 1 the read size; 1 an owner record's temporary name; 2
 * a frozen shard's directory; 3 a series database). */
static void
names_seeds(void)
{
	static const char notes[] =
	        "\x07"
	        "db\t/var/tmp/r.db\nscratch\t/dev/shm/s/scratch-42\n"
	        "envelope\t2\t4294967296\t/sys/fs/cgroup/ms-42/run\t"
	        "/sys/fs/cgroup/ms-42/b\t/sys/fs/cgroup/ms-42/c\n"
	        "screen\t1\ncrash\tskywalking\t11\tDecide\nfatal\t6\n"
	        "exit\tdetdrop\t0\topen()\nend\t0\n";
	save_text("corpus-names", 0, notes, 0);
	save_text("corpus-names", 0,
	          "\x01"
	          "db\tx\nscreen\t0\nend\t0",
	          1);
	save_text("corpus-names", 1, "r.sqlite-owner.tmp-4242", 0);
	save_text("corpus-names", 1, "r.sqlite-owner.tmp-", 1);
	save_text("corpus-names", 1, "a-owner.tmp-1-owner.tmp-99999999999", 2);
	save_text("corpus-names", 2, "work.frozen-12", 0);
	save_text("corpus-names", 2, "work.frozen-12.2", 1);
	save_text("corpus-names", 3, "rep3-v1-skywalking.db", 0);
	save_text("corpus-names", 3, "rep-1-v0-x.db", 1);
	save_text("corpus-names", 3, "rep 4294967296-v9-.db", 2);
	/* A notes line longer than the reader's buffer (8 KiB), its part
	 * past the buffer's 8,191 bytes spelling a note of its own. */
	static char longline[8300];
	size_t n = 0;
	longline[n++] = 0;  /* the notes */
	longline[n++] = 63; /* read 64 bytes at a time */
	memcpy(longline + n, "db\t", 3);
	memset(longline + n + 3, 'a', 8191 - 3);
	n += 8191;
	memcpy(longline + n, "scratch\t/x\n", 11);
	n += 11;
	save("corpus-names", "seed-00-002", longline, n);
}

int
main(int argc, char **argv)
{
	if (!fuzz_usage_ok(argc, argv, 1, "OUT_DIR"))
		return 2;
	snprintf(out_dir, sizeof(out_dir), "%s", argv[1]);
	mkdir(out_dir, 0755);
	shard_seeds();
	records_seeds();
	proc_seeds();
	names_seeds();
	for (int t = 0; t < 5; t++)
		frozen_seed(3, t);
	frozen_seed(1, 0);
	frozen_seed(4, 0);

	static const char *const bp[] = {
		"mature",        "sampling",
		"merge=40",      "seq=7",
		"time=12:10",    "time=23:59:59",
		"time=24:00",    "time=@1700006400000000000",
		"part=a1",       "part=00000000000000ff",
		"lane=fast",     "lane=slow",
		"lane=finalize", "depth>=3",
		"  merge=1  ",   "merge=0",
		"time=25:00",    "part=1234567890abcdef0",
		"depth>=-1",     "lane=medium",
		"part=0x10",     "time=1:2:3",
	};
	for (size_t i = 0; i < sizeof(bp) / sizeof(bp[0]); i++)
		save_text("corpus-bp", -1, bp[i], i);

	static const char *const filters[] = {
		"lane=fast",
		"class=executed reason=merge_grace",
		"phase=cooldown #12",
		"seq=3..9 seq>=4 seq<8",
		"seq>0 seq<=100 fast output",
		"lane=bogus",
		"seq=9..3",
		"  merge   grace  ",
	};
	for (size_t i = 0; i < sizeof(filters) / sizeof(filters[0]); i++)
		save_text("corpus-tui", 0, filters[i], i);
	static const char *const targets[] = { "12:30",    "#58",
		                               "58",       "+1d 01:00",
		                               "23:59:59", "+8d 00:00",
		                               "0",        "12:61" };
	for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++)
		save_text("corpus-tui", 1, targets[i], i);
	/* Keys: byte 1 scene and size, then keys. */
	static const char *const keys[] = {
		"\x01:break merge=60\n:speed 60x\n:go 12:00\n",
		"\x04:filter lane=slow seq>=3\n/class=executed\n",
		"\001bamature\n\011 d\001",
		"\062:export csv out.csv\nejsonl\n",
		"\x06gg 13:15\n..]+-\x09\x09\n\x01?q",
		"\x01:freeze\n:help\n\x01:quit\n",
		"\x07:abc\x04\x04\x02xy\x11\x12\n",
	};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		char name[32];
		uint8_t buf[256];
		size_t l = strlen(keys[i]);
		buf[0] = 2;
		memcpy(buf + 1, keys[i], l);
		snprintf(name, sizeof(name), "seed-keys-%03zu", i);
		save("corpus-tui", name, buf, l + 1);
	}

	/* Command lines: NUL-separated arguments. */
	static const char *const cli[] = {
		"help",
		"help\0run",
		"--help",
		"run\0--headless\0--variant\0detdrop:30\0--db=x.db",
		"tui\0--break\0mature\0--break=merge=3\0--paused",
		"fixture\0build\0--preset\0day-1x\0--seed\0001\0--out\0/x",
		"export\0--db\0a\0--format=csv\0--filter\0lane=fast",
		"report\0--db\0a\0--vs\0b",
		"merge-once\0--frozen\0f\0--variant\0a\0--variant\0b",
		"run\0--serial=1",
		"tui\0--db",
		"report\0--json\0--json",
		"nosuch\0--x",
		"run\0--\0--help",
	};
	static const size_t cli_len[] = {
		sizeof("help") - 1,
		sizeof("help\0run") - 1,
		sizeof("--help") - 1,
		sizeof("run\0--headless\0--variant\0detdrop:30\0--db=x.db") - 1,
		sizeof("tui\0--break\0mature\0--break=merge=3\0--paused") - 1,
		sizeof("fixture\0build\0--preset\0day-1x\0--seed\0001\0--out\0/"
		       "x") -
		        1,
		sizeof("export\0--db\0a\0--format=csv\0--filter\0lane=fast") -
		        1,
		sizeof("report\0--db\0a\0--vs\0b") - 1,
		sizeof("merge-once\0--frozen\0f\0--variant\0a\0--variant\0b") -
		        1,
		sizeof("run\0--serial=1") - 1,
		sizeof("tui\0--db") - 1,
		sizeof("report\0--json\0--json") - 1,
		sizeof("nosuch\0--x") - 1,
		sizeof("run\0--\0--help") - 1,
	};
	for (size_t i = 0; i < sizeof(cli) / sizeof(cli[0]); i++) {
		char name[32];
		snprintf(name, sizeof(name), "seed-%03zu", i);
		save("corpus-cli", name, cli[i], cli_len[i]);
	}
	return 0;
}
