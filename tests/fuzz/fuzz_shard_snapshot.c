/*
 * fuzz_shard_snapshot.c - libFuzzer harness for the shard snapshot codec
 * and the recovery that ms_shard_open runs over it. Each input becomes
 * DIR/snapshot of a fresh shard layout (parts/, tmp/), optionally with the
 * template's real parts,
 * a temporary leftover and an unlisted part file cut short (layout in
 * fuzz_shard.h); then the shard is opened.
 *
 * What must hold, whatever the bytes:
 *  - a refused open carries a message and deletes nothing (the leftovers
 *    are still there: core/shard.c invariant 4);
 *  - an accepted open lists exactly the parts and epoch the snapshot
 *    says, has removed the leftovers and kept the foreign file;
 *  - with bit 5, removing the first part commits a snapshot that opens
 *    again with one part less and the epoch one higher;
 *  - every byte counted by the shard's ms_mem is freed at close.
 */
#include "fuzz_shard.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char base[128], tpl[160], dir[160];

static void
cleanup(void)
{
	if (base[0])
		fzs_rmrf(base);
}

static void
setup(void)
{
	const char *root = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	snprintf(base, sizeof(base), "%s/msfuzz-shard-%d", root, (int)getpid());
	snprintf(tpl, sizeof(tpl), "%s/tpl", base);
	snprintf(dir, sizeof(dir), "%s/s", base);
	fzs_rmrf(base);
	if (mkdir(base, 0755) != 0)
		abort();
	fzs_make_template(tpl);
	static bool registered;
	if (!registered)
		atexit(cleanup);
	registered = true;
}

static void
must_fail_with_message(int rc, const ms_errbuf *eb)
{
	if (rc >= 0 || !eb->msg[0])
		abort();
}

/* Open again after a transaction: one part less, the epoch one higher. */
static void
remove_and_reopen(ms_shard *s, ms_mem *mem)
{
	ms_errbuf eb = { { 0 } };
	size_t n = ms_shard_count(s);
	uint64_t epoch = ms_shard_epoch(s);
	ms_view *v = NULL;
	if (ms_shard_view(s, &v, &eb) != 0)
		abort();
	if (ms_view_count(v) != n)
		abort();
	uint64_t first = ms_view_id(v, 0);
	int rc = n ? ms_shard_remove(s, &first, 1, &eb) : 0;
	ms_view_release(v);
	if (rc != 0) {
		/* A snapshot that opened must take a transaction, unless its
		 * epoch or next ID is at the end of the range. */
		must_fail_with_message(rc, &eb);
		ms_shard_close(s);
		return;
	}
	ms_shard_close(s);
	if (!n)
		return;
	ms_shard_opts o = { .dir = dir, .mem = mem };
	ms_shard *s2 = NULL;
	rc = ms_shard_open(&s2, &o, &eb);
	if (rc != 0) {
		fprintf(stderr, "reopen after remove: %s\n", eb.msg);
		abort();
	}
	if (ms_shard_count(s2) != n - 1 || ms_shard_epoch(s2) != epoch + 1)
		abort();
	ms_shard_close(s2);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!base[0] || !fzs_exists(tpl))
		setup(); /* first call, or someone cleaned /dev/shm under us */
	if (size < 2 || size > 4096)
		return 0;
	unsigned mode = data[0];
	uint8_t idb = data[1];
	size_t n = size - 2;
	uint8_t *snap = malloc(n ? n : 1);
	memcpy(snap, data + 2, n);
	if ((mode & FZS_RESEAL) && n >= 8)
		ms_put_le64(snap + n - 8, XXH64(snap, n - 8, 0));

	/* A fresh layout. */
	char path[4096], tmpdir[4096], unlisted[4096], foreign[4096];
	fzs_rmrf(dir);
	static const char *const subs[] = { "", "/parts", "/tmp" };
	for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++) {
		snprintf(path, sizeof(path), "%s%s", dir, subs[i]);
		if (mkdir(path, 0755) != 0)
			abort();
	}
	if (mode & FZS_PARTS)
		fzs_link_parts(tpl, dir);
	uint64_t leftover = 0x100u + idb;
	snprintf(tmpdir, sizeof(tmpdir), "%s/tmp/core-%016llx", dir,
	         (unsigned long long)leftover);
	snprintf(unlisted, sizeof(unlisted), "%s/parts/%016llx.core", dir,
	         (unsigned long long)leftover);
	snprintf(foreign, sizeof(foreign), "%s/parts/README", dir);
	if (mode & FZS_TMP)
		fzs_write_file(tmpdir, "x", 1);
	if (mode & FZS_UNLISTED) {
		fzs_write_file(unlisted, "cut short", 9);
		fzs_write_file(foreign, "not a part\n", 11);
	}
	snprintf(path, sizeof(path), "%s/snapshot", dir);
	if (!(mode & FZS_CREATE))
		fzs_write_file(path, snap, n);

	ms_mem mem;
	ms_mem_init(&mem, NULL);
	if ((mode & FZS_FAILALLOC) && idb)
		ms_mem_fail_at(&mem, idb, false);
	ms_shard_opts o = { .dir = dir,
		            .create = (mode & FZS_CREATE) != 0,
		            .mem = &mem };
	ms_shard *s = NULL;
	ms_errbuf eb = { { 0 } };
	int rc = ms_shard_open(&s, &o, &eb);
	ms_mem_fail_at(&mem, 0, false);
	if (rc != 0) {
		must_fail_with_message(rc, &eb);
		if (s)
			abort();
		/* Refused: nothing was cleaned. */
		if (((mode & FZS_TMP) && !fzs_exists(tmpdir)) ||
		    ((mode & FZS_UNLISTED) && !fzs_exists(unlisted)))
			abort();
	} else {
		uint64_t want_n = 0, want_epoch = 0;
		if (!(mode & FZS_CREATE)) {
			want_epoch = ms_le64(snap + 16);
			want_n = ms_le64(snap + 32);
		}
		if (ms_shard_count(s) != want_n ||
		    ms_shard_epoch(s) != want_epoch)
			abort();
		if (fzs_exists(tmpdir) || fzs_exists(unlisted) ||
		    ((mode & FZS_UNLISTED) && !fzs_exists(foreign)))
			abort();
		uint64_t id;
		if (ms_shard_new_id(s, &id, &eb) == 0 && id <= leftover &&
		    (mode & (FZS_TMP | FZS_UNLISTED)))
			abort(); /* IDs seen on disk are never handed out */
		if (mode & FZS_REMOVE)
			remove_and_reopen(s, &mem);
		else
			ms_shard_close(s);
	}
	ms_mem_stats st;
	ms_mem_stats_get(&mem, &st);
	if (st.live != 0) {
		fprintf(stderr, "shard leaked %lld bytes\n",
		        (long long)st.live);
		abort();
	}
	free(snap);
	return 0;
}
