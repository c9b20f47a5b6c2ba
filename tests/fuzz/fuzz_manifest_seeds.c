/*
 * fuzz_manifest_seeds.c - writes the seed corpus of fuzz_manifest and
 * fuzz_chain_spec into OUT_DIR/corpus-manifest and OUT_DIR/corpus-chain:
 * a small manifest as the fixture builder writes it (three slots, three
 * kinds of part each, the schema version and a few facts) with three
 * near misses (truncated, its header overwritten, a byte flipped in the
 * middle), and chain specs users write, including one longer than 255
 * bytes, with a few near misses.
 *
 * Usage: fuzz_manifest_seeds OUT_DIR
 */
#include "fx_int.h"
#include "fuzz_usage.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *out_dir;

static void
save(const char *corpus, const char *name, const void *p, size_t n)
{
	char path[4200];
	snprintf(path, sizeof(path), "%s/%s", out_dir, corpus);
	if (mkdir(path, 0755) != 0 && errno != EEXIST) {
		perror(path);
		exit(1);
	}
	snprintf(path, sizeof(path), "%s/%s/%s", out_dir, corpus, name);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(p, 1, n, f) != n || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
}

static unsigned char *
slurp(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long len = ftell(f);
	rewind(f);
	unsigned char *buf = malloc(len > 0 ? (size_t)len : 1);
	if (!buf || fread(buf, 1, (size_t)len, f) != (size_t)len)
		exit(1);
	fclose(f);
	*n = (size_t)len;
	return buf;
}

static void
manifest_seeds(void)
{
	enum { NSLOT = 3 };
	fx_kv kv[] = {
		{ "schema_version", (char *)"1" },
		{ "preset", (char *)"smoke" },
		{ "seed", (char *)"1" },
	};
	fx_sched_row sched[NSLOT];
	fx_part_rec parts[NSLOT];
	memset(sched, 0, sizeof(sched));
	memset(parts, 0, sizeof(parts));
	for (size_t i = 0; i < NSLOT; i++) {
		sched[i].slot = i;
		sched[i].pub_ns = (int64_t)(i + 1) * 30000000000;
		sched[i].part_id = i + 1;
		sched[i].rows = sched[i].target_rows = 100;
		sched[i].blocks = sched[i].target_blocks = 1;
		sched[i].cum_rows = 100 * (i + 1);
		sched[i].cum_blocks = i + 1;
		parts[i].id = i + 1;
		for (int k = 0; k < MS_KIND_COUNT; k++) {
			parts[i].meta[k].id = i + 1;
			parts[i].meta[k].rows = 100;
			parts[i].meta[k].blocks = 1;
			memset(parts[i].files_hash[k], 'a', 32);
		}
	}
	fx_manifest mf = { .kv = kv,
		           .nkv = sizeof(kv) / sizeof(kv[0]),
		           .sched = sched,
		           .nsched = NSLOT,
		           .parts = parts };
	char path[4200];
	snprintf(path, sizeof(path), "%s/manifest-seed-%ld.sqlite", out_dir,
	         (long)getpid());
	unlink(path);
	ms_errbuf eb = { { 0 } };
	if (ms__fx_manifest_write(path, &mf, &eb)) {
		fprintf(stderr, "manifest seed: %s\n", eb.msg);
		exit(1);
	}
	size_t n = 0;
	unsigned char *b = slurp(path, &n);
	unlink(path);
	if (!b || n < 512)
		exit(1);
	save("corpus-manifest", "manifest", b, n);
	save("corpus-manifest", "truncated", b, n / 2);
	unsigned char *c = malloc(n);
	memcpy(c, b, n);
	memset(c, 'x', 100);
	save("corpus-manifest", "header-overwritten", c, n);
	memcpy(c, b, n);
	c[n / 2] ^= 0x5a;
	save("corpus-manifest", "flipped", c, n);
	free(c);
	free(b);
}

static void
chain_seeds(void)
{
	char long_spec[1024] = "skywalking";
	for (int i = 0; i < 7; i++)
		strcat(long_spec, ",detdrop:{\"percent\":0.00000000000000000000}");
	const char *const specs[] = {
		"disabled",
		"alwayskeep",
		"detdrop:35",
		"skywalking",
		"skywalking:{\"durationThresholdMs\":500,\"keepErrors\":true,"
		"\"healthySampleRate\":0.1}",
		"skywalking,detdrop:{\"percent\":35}",
		long_spec,
		/* near misses */
		"alwayskeep, detdrop:{\"percent\":\"12.5\"} ,skywalking",
		"detdrop:35 ",
		"skywalking:{\"healthySampleRate\":",
		"skywalking:{\"rate\":1}",
		"detdrop:101",
		"Detdrop:5",
		"alwayskeep,,detdrop:1",
		"detdrop:{\"percent\":35}}",
		"detdrop:007",
		"detdrop : 0.5",
		"detdrop:1.",
	};
	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		char name[32];
		snprintf(name, sizeof(name), "spec-%02zu", i);
		save("corpus-chain", name, specs[i], strlen(specs[i]));
	}
}

int
main(int argc, char **argv)
{
	if (!fuzz_usage_ok(argc, argv, 1, "OUT_DIR"))
		return 2;
	out_dir = argv[1];
	mkdir(out_dir, 0755);
	manifest_seeds();
	chain_seeds();
	return 0;
}
