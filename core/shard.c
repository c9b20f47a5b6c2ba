/*
 * shard.c - the inventory of active parts of one shard directory: the
 * snapshot file and its codec, transactions that bump the epoch, crash
 * recovery at open, and pinned views.
 *
 * Design:
 *  1. s->act is the inventory: shared parts sorted by ascending ID, exactly
 *     the parts the snapshot on disk lists, at epoch s->epoch. Each part
 *     also carries its entry ordinal (sp->entry, from s->next_entry, which
 *     only grows): the order in which the parts entered the inventory, an
 *     introduction or a merge's output entering when its transaction
 *     commits, after every part already there. The snapshot records that
 *     order (as each entry's rank) and open restores it, so a reopened
 *     shard, a checkpoint restored and a frozen copy keep it.
 *  2. A transaction builds the new inventory aside, writes the snapshot
 *     (tmp/snapshot.new, fsync, rename over DIR/snapshot, fsync DIR) and
 *     only then swaps it in. Anything failing before the rename is undone:
 *     the output's published files are renamed back to their tmp paths
 *     and the inputs are untouched. If the rename happened but the
 *     directory sync failed, the previous snapshot is written back; if that
 *     fails too the shard is `broken` and refuses further transactions.
 *  3. Each shared part (struct ms__sp) is reference counted: the inventory
 *     holds one reference, each view one more. Removing a part from the
 *     inventory marks it dead and drops the inventory's reference; whoever
 *     drops the last reference of a dead part closes it and deletes its
 *     three files. This happens after the snapshot that removed it.
 *  4. Open never deletes anything before every listed part has opened:
 *     a snapshot naming a missing or unreadable part fails open untouched.
 *  5. Part IDs come from s->next_id, which is > every ID listed, seen on
 *     disk at open, or handed out since; it is persisted with the next
 *     snapshot.
 *  6. Group commit (opts.defer_sync): a transaction swaps the new
 *     inventory in and bumps the epoch without writing a snapshot
 *     (s->pending: memory is ahead of DIR/snapshot); if it renamed files
 *     into parts/ without syncing it, s->parts_dirty; the inputs it
 *     removed go to s->limbo (8.). A durability point (ms_shard_sync,
 *     close, or a transaction that would put more than s->limbo_max parts
 *     in limbo, which then commits as in 2.) first fsyncs parts/ when
 *     dirty, then commits the whole inventory as in 2., which clears
 *     both and empties the limbo. Why a crash still finds a consistent
 *     state:
 *     a. Every snapshot on disk was written by 2. (file fsynced before
 *        the rename), so it is whole, and it names only parts whose files
 *        were durable under their final names before it was written: a
 *        staged part by its stager's sync, a renamed one by the fsync of
 *        parts/ that precedes every commit while parts_dirty is set.
 *     b. A part is deleted only once a snapshot that no longer names it is
 *        durable (8.): no part that the last durable snapshot names is
 *        ever deleted, so recovering to it is always possible.
 *     c. What a crash loses is the deferred transactions since the last
 *        durability point; the files of their outputs are unlisted and
 *        open removes them (design point 4 of ms_shard.h), their inputs
 *        are still there and listed.
 *  7. One sync before the commit (opts.commit_syncfs): a commit renames
 *     its output's files into parts/ without syncing parts/, writes
 *     tmp/snapshot.new, and makes all of it durable with one syncfs of
 *     the shard's file system in place of the fsync of tmp/snapshot.new;
 *     then renames and fsyncs DIR as in 2. That one call covers what the
 *     writers' fsyncs, the fsync of parts/ and the snapshot's fsync
 *     covered (file contents, the renames, the snapshot's bytes), all
 *     before the rename that commits, so a. and b. of 6. hold unchanged
 *     and a merge output's writers need not sync (ms_shard_syncs_outputs).
 *  8. The limbo holds the inventory's reference of every part a deferred
 *     transaction removed (marked dead, so pinned by nothing else it
 *     would already be gone), at most s->limbo_max of them. Every
 *     snapshot that 2. writes and syncs excludes them all (it is the
 *     inventory in memory, or the one before a failed transaction), so
 *     right after its fsync of DIR the limbo is released and its parts
 *     deleted as in 3.
 *
 * States of the shard: open (transactions allowed) and broken (after an
 * undecidable commit failure; only views and close work). Locking: s->lock
 * guards every field of the shard; reference counts are atomic so views can
 * be released without it, even after the shard is closed.
 */
#define _GNU_SOURCE /* renameat2, syncfs */
#define XXH_INLINE_ALL
#include "ms_fs.h"
#include "ms_rusage.h"
#include "ms_shard.h"
#include "ms_thread.h"
#include "part_int.h"

#include <xxhash.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SNAP_NAME "snapshot"
#define SNAP_TMP "tmp/snapshot.new"
#define SNAP_MAGIC "MSSHARD\n"
#define SNAP_VERSION 2u /* 1 is still read: its order is by ID */
#define SNAP_HEAD 40u
#define SNAP_ENTRY 16u
#define SNAP_TAIL 8u
/* More parts than any shard will hold; bounds the snapshot size read. */
#define SNAP_MAX_PARTS (1u << 24)
#define PATH_MAX_LEN 4096
#define NOTE_IDS 4
/* Parts removed by deferred transactions that may wait on disk for the
 * next durability point (opts.defer_max_parts = 0). */
#define SHARD_LIMBO_MAX 64

/* Every published part file is DIR/parts/<16hex>.<kind>. */
#define PARTS_DIR "parts"
/* Each kind's name: the suffix of its file and the prefix of its tmp
 * name. */
static const char *const kind_tmp[MS_KIND_COUNT] = { "core", "latency",
	                                             "start_time" };

struct ms__reaper;

struct ms__sp {
	_Atomic uint32_t refs;
	atomic_bool dead;
	uint64_t id;
	uint64_t entry; /* entry ordinal (design point 1) */
	uint32_t depth;
	ms_mem *mem;
	ms_part *p[MS_KIND_COUNT];
	/* Set when the part dies: who deletes it, and the step hook. */
	struct ms__reaper *reaper;
	ms_shard_step_fn hook;
	void *hook_arg;
};

/* The thread that deletes removed parts for a shard opened with
 * reap_async. Reference counted: the shard holds one reference, and each
 * dead part that may still be handed to it holds one, so a view released
 * after the shard closed finds it (stopped: it then deletes inline). */
struct ms__reaper {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t th;
	_Atomic uint32_t refs;
	bool stop;
	size_t busy;
	struct ms__sp **q;
	size_t n, cap;
	ms_mem *mem;
};

struct ms_shard {
	pthread_mutex_t lock;
	ms_mem *mem;
	ms_io *io;
	char *dir;
	size_t dir_size;
	uint64_t epoch;
	uint64_t next_id;
	uint64_t next_entry; /* the next entry ordinal (design point 1) */
	struct ms__sp **act;
	size_t nact;
	bool broken;
	bool defer;            /* opts.defer_sync */
	bool use_syncfs;       /* opts.commit_syncfs (design point 7) */
	bool pending;          /* committed in memory past DIR/snapshot (6.) */
	bool parts_dirty;      /* renames into parts/ not yet fsynced (6.) */
	/* The transactions committed in memory only since the snapshot on
	 * disk (6.), by kind, and that snapshot's epoch: what a failed
	 * ms_shard_sync names. */
	unsigned pend_intro, pend_replace, pend_remove;
	uint64_t durable_epoch;
	struct ms__sp **limbo; /* removed by deferred transactions (8.) */
	size_t nlimbo, limbo_cap, limbo_max;
	enum ms_shard_fault fault;
	int fault_errno;
	struct ms__reaper *reaper; /* NULL: deletion inline */
	ms_part_dicts *dicts;      /* the shard's dictionaries (DIR/dicts) */
	ms_shard_step_fn hook;
	void *hook_arg;
	char note[512];
};

struct ms_view {
	ms_mem *mem;
	uint64_t epoch;
	size_t n;
	size_t cap; /* entries allocated in sp and ent (at least 1) */
	struct ms__sp **sp;
	size_t *ent; /* indices into sp in entry order (ms_view_entered) */
};

/* ---- small file-system helpers ---- */

static void
io_add(_Atomic uint64_t *c, uint64_t v)
{
	atomic_fetch_add(c, v);
}

static bool
exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

static void
id_hex(uint64_t id, char out[17])
{
	snprintf(out, 17, "%016" PRIx64, id);
}

/* ---- paths ---- */

int
ms_shard_tmp_path(const ms_shard *s, enum ms_part_kind kind, uint64_t id,
                  char *buf, size_t n)
{
	if ((unsigned)kind >= MS_KIND_COUNT)
		return MS_ERR_INVAL;
	int w = snprintf(buf, n, "%s/tmp/%s-%016" PRIx64, s->dir,
	                 kind_tmp[kind], id);
	return (w < 0 || (size_t)w >= n) ? MS_ERR_RANGE : 0;
}

int
ms_shard_part_path(const ms_shard *s, enum ms_part_kind kind, uint64_t id,
                   char *buf, size_t n)
{
	if ((unsigned)kind >= MS_KIND_COUNT)
		return MS_ERR_INVAL;
	int w = snprintf(buf, n, "%s/" PARTS_DIR "/%016" PRIx64 ".%s", s->dir,
	                 id, kind_tmp[kind]);
	return (w < 0 || (size_t)w >= n) ? MS_ERR_RANGE : 0;
}

static int
sub_path(const ms_shard *s, const char *name, char *buf, size_t n)
{
	int w = snprintf(buf, n, "%s/%s", s->dir, name);
	return (w < 0 || (size_t)w >= n) ? MS_ERR_RANGE : 0;
}

/* ---- shared parts ---- */

static void
sp_free(struct ms__sp *sp)
{
	for (int k = 0; k < MS_KIND_COUNT; k++)
		ms_part_close(sp->p[k]);
	ms_mem_free(sp->mem, sp, sizeof(*sp));
}

static bool reaper_push(struct ms__reaper *rp, struct ms__sp *sp);
static void reaper_unref(struct ms__reaper *rp);

/* Close a dead part and delete its files. */
static void
sp_delete(struct ms__sp *sp)
{
	struct ms__reaper *rp = sp->reaper;
	char path[PATH_MAX_LEN];
	for (int k = 0; k < MS_KIND_COUNT; k++) {
		if (!sp->p[k])
			continue;
		snprintf(path, sizeof(path), "%s", ms_part_dir(sp->p[k]));
		ms_part_close(sp->p[k]);
		sp->p[k] = NULL;
		/* Best effort: a leftover is removed at the next open. */
		ms_part_remove_dir(path, NULL);
	}
	if (sp->hook)
		sp->hook(sp->hook_arg, MS_SHARD_STEP_INPUT_DELETED, 0);
	ms_mem_free(sp->mem, sp, sizeof(*sp));
	reaper_unref(rp);
}

/* Drop one reference; the last one of a dead part deletes it from disk, or
 * hands it to the reaper to delete. */
static void
sp_unref(struct ms__sp *sp)
{
	if (!sp || atomic_fetch_sub(&sp->refs, 1) != 1)
		return;
	if (!atomic_load(&sp->dead)) {
		sp_free(sp);
		return;
	}
	if (sp->reaper && reaper_push(sp->reaper, sp))
		return;
	sp_delete(sp);
}

/* ---- the reaper (opts.reap_async) ---- */

static void *
reaper_main(void *arg)
{
	struct ms__reaper *rp = arg;
	ms_rusage_name_thread("ms-reaper");
	pthread_mutex_lock(&rp->mu);
	for (;;) {
		while (rp->n == 0 && !rp->stop)
			pthread_cond_wait(&rp->cv, &rp->mu);
		if (rp->n == 0)
			break;
		struct ms__sp *sp = rp->q[--rp->n];
		rp->busy++;
		pthread_mutex_unlock(&rp->mu);
		/* The shard's reference keeps rp alive until it joins us. */
		sp_delete(sp);
		pthread_mutex_lock(&rp->mu);
		rp->busy--;
		pthread_cond_broadcast(&rp->cv);
	}
	pthread_mutex_unlock(&rp->mu);
	return NULL;
}

/* s's reaper, its thread started, in *out; or an error naming why. */
static int
reaper_new(const ms_shard *s, struct ms__reaper **out, ms_errbuf *eb)
{
	*out = NULL;
	struct ms__reaper *rp = ms_mem_calloc(s->mem, 1, sizeof(*rp));
	if (!rp)
		return ms_fail(eb, MS_ERR_NOMEM,
		               "shard %s: out of memory for its reaper (%zu "
		               "bytes)",
		               s->dir, sizeof(*rp));
	rp->mem = s->mem;
	atomic_init(&rp->refs, 1);
	int e = pthread_mutex_init(&rp->mu, NULL);
	if (e)
		goto fail_mu;
	if ((e = pthread_cond_init(&rp->cv, NULL)) != 0)
		goto fail_cv;
	if ((e = ms_thread_start(&rp->th, MS_THREAD_STACK, reaper_main, rp)))
		goto fail_th;
	*out = rp;
	return 0;
fail_th:
	pthread_cond_destroy(&rp->cv);
fail_cv:
	pthread_mutex_destroy(&rp->mu);
fail_mu:
	ms_mem_free(s->mem, rp, sizeof(*rp));
	return ms_thread_fail(eb, MS_ERR_IO, e,
	                      "shard %s: cannot start its reaper thread",
	                      s->dir);
}

/* Queue a dead part; false when the reaper has stopped or no memory (the
 * caller deletes it itself). */
static bool
reaper_push(struct ms__reaper *rp, struct ms__sp *sp)
{
	pthread_mutex_lock(&rp->mu);
	bool ok = !rp->stop;
	if (ok && rp->n == rp->cap) {
		size_t cap = rp->cap ? rp->cap * 2 : 16;
		struct ms__sp **q = ms_mem_alloc(rp->mem, cap * sizeof(*q));
		if (!q) {
			ok = false;
		} else {
			if (rp->n)
				memcpy(q, rp->q, rp->n * sizeof(*q));
			ms_mem_free(rp->mem, rp->q, rp->cap * sizeof(*q));
			rp->q = q;
			rp->cap = cap;
		}
	}
	if (ok) {
		rp->q[rp->n++] = sp;
		pthread_cond_broadcast(&rp->cv);
	}
	pthread_mutex_unlock(&rp->mu);
	return ok;
}

static void
reaper_unref(struct ms__reaper *rp)
{
	if (!rp || atomic_fetch_sub(&rp->refs, 1) != 1)
		return;
	pthread_cond_destroy(&rp->cv);
	pthread_mutex_destroy(&rp->mu);
	ms_mem_free(rp->mem, rp->q, rp->cap * sizeof(*rp->q));
	ms_mem_free(rp->mem, rp, sizeof(*rp));
}

/* Wait for the queue to empty. */
static void
reaper_settle(struct ms__reaper *rp)
{
	pthread_mutex_lock(&rp->mu);
	while (rp->n || rp->busy)
		pthread_cond_wait(&rp->cv, &rp->mu);
	pthread_mutex_unlock(&rp->mu);
}

/* Finish the queue, end the thread, drop the shard's reference. */
static void
reaper_stop(struct ms__reaper *rp)
{
	if (!rp)
		return;
	pthread_mutex_lock(&rp->mu);
	rp->stop = true;
	pthread_cond_broadcast(&rp->cv);
	pthread_mutex_unlock(&rp->mu);
	pthread_join(rp->th, NULL);
	reaper_unref(rp);
}

/* Index of id in a sorted array, or -1. */
static ptrdiff_t
find_sp(struct ms__sp *const *a, size_t n, uint64_t id)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (a[mid]->id == id)
			return (ptrdiff_t)mid;
		if (a[mid]->id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

static int
sp_entry_cmp(const void *pa, const void *pb)
{
	const struct ms__sp *a = *(struct ms__sp *const *)pa;
	const struct ms__sp *b = *(struct ms__sp *const *)pb;
	return (a->entry > b->entry) - (a->entry < b->entry);
}

/* The indices of list[0..n) (sorted by ID) in entry order (design point
 * 1) into idx; tmp has room for n pointers and is scratch. */
static void
entry_order(struct ms__sp *const *list, size_t n, struct ms__sp **tmp,
            size_t *idx)
{
	if (n == 0)
		return;
	memcpy(tmp, list, n * sizeof(*tmp));
	qsort(tmp, n, sizeof(*tmp), sp_entry_cmp);
	for (size_t k = 0; k < n; k++)
		idx[k] = (size_t)find_sp(list, n, tmp[k]->id);
}

/* entry_order with its scratch from mem: 0, or MS_ERR_NOMEM. */
static int
entry_order_in(ms_mem *mem, struct ms__sp *const *list, size_t n,
               size_t *idx)
{
	size_t m = n ? n : 1;
	struct ms__sp **tmp = ms_mem_alloc(mem, m * sizeof(*tmp));
	if (!tmp)
		return MS_ERR_NOMEM;
	entry_order(list, n, tmp, idx);
	ms_mem_free(mem, tmp, m * sizeof(*tmp));
	return 0;
}

/* Open the three kinds of part `id` from their final paths into a new
 * shared part with one reference. */
static int
sp_open(ms_shard *s, uint64_t id, uint32_t depth, bool check_depth,
        struct ms__sp **out, ms_errbuf *eb)
{
	*out = NULL;
	char hex[17], path[PATH_MAX_LEN];
	id_hex(id, hex);
	struct ms__sp *sp = ms_mem_calloc(s->mem, 1, sizeof(*sp));
	if (!sp)
		return ms_fail(
		        eb, MS_ERR_NOMEM,
		        "shard %s: part %s: out of memory for its handle "
		        "(%zu bytes)",
		        s->dir, hex, sizeof(*sp));
	atomic_init(&sp->refs, 1);
	atomic_init(&sp->dead, false);
	sp->id = id;
	sp->mem = s->mem;
	int rc = 0;
	for (int k = 0; k < MS_KIND_COUNT && rc == 0; k++) {
		rc = ms_shard_part_path(s, (enum ms_part_kind)k, id, path,
		                        sizeof(path));
		if (rc) {
			rc = ms_fail(eb, rc, "shard %s: part %s: path too long",
			             s->dir, hex);
			break;
		}
		/* No existence check: a missing file is named by the open
		 * ("missing"), and a part just published is there. */
		ms_errbuf peb = { { 0 } };
		rc = ms_part_open_dicts(&sp->p[k], path, s->dicts, s->mem,
		                        &peb);
		if (rc) {
			rc = ms_fail(eb, rc, "shard %s: part %s (%s): %s",
			             s->dir, hex, kind_tmp[k], peb.msg);
			break;
		}
		const ms_part_meta *m = ms_part_get_meta(sp->p[k]);
		if (m->id != id || (int)ms_part_kind_of(sp->p[k]) != k) {
			rc = ms_fail(eb, MS_ERR_CORRUPT,
			             "shard %s: part %s: %s holds part "
			             "%016" PRIx64 " of kind %d, expected %s",
			             s->dir, hex, path, m->id,
			             (int)ms_part_kind_of(sp->p[k]),
			             kind_tmp[k]);
			break;
		}
	}
	if (rc == 0) {
		uint32_t d = ms_part_get_meta(sp->p[MS_KIND_CORE])->depth;
		if (check_depth && d != depth)
			rc = ms_fail(eb, MS_ERR_CORRUPT,
			             "shard %s: part %s: snapshot says depth "
			             "%" PRIu32 ", the core part says %" PRIu32,
			             s->dir, hex, depth, d);
		sp->depth = d;
	}
	if (rc) {
		sp_free(sp);
		return rc;
	}
	*out = sp;
	return 0;
}

/* ---- the snapshot codec (core/FORMAT.md, section "Shard") ---- */

struct snap {
	uint64_t epoch, next_id, n;
	uint64_t *ids;
	uint32_t *depths;
	uint32_t *ranks; /* entry order: rank 0 entered first */
	size_t alloc_n;
};

/* The snapshot of list[0..n) (sorted by ID) into b: each entry's rank is
 * its place in entry order (design point 1). */
static int
snap_encode(ms_buf *b, ms_mem *mem, uint64_t epoch, uint64_t next_id,
            struct ms__sp *const *list, size_t n)
{
	size_t size;
	if (!ms_mul_ok(n, SNAP_ENTRY, &size) ||
	    !ms_add_ok(size, SNAP_HEAD + SNAP_TAIL, &size))
		return MS_ERR_RANGE;
	size_t *ord = ms_mem_alloc(mem, (n ? n : 1) * sizeof(*ord));
	int rc = ord ? entry_order_in(mem, list, n, ord) : MS_ERR_NOMEM;
	if (rc == 0)
		rc = ms_buf_reserve(b, size);
	if (rc) {
		ms_mem_free(mem, ord, (n ? n : 1) * sizeof(*ord));
		return rc;
	}
	ms_buf_append(b, SNAP_MAGIC, 8);
	ms_buf_append_le32(b, SNAP_VERSION);
	ms_buf_append_le32(b, 0);
	ms_buf_append_le64(b, epoch);
	ms_buf_append_le64(b, next_id);
	ms_buf_append_le64(b, n);
	for (size_t i = 0; i < n; i++) {
		ms_buf_append_le64(b, list[i]->id);
		ms_buf_append_le32(b, list[i]->depth);
		ms_buf_append_le32(b, 0); /* its rank, below */
	}
	for (size_t k = 0; k < n; k++)
		ms_put_le32(b->data + SNAP_HEAD + ord[k] * SNAP_ENTRY + 12,
		            (uint32_t)k);
	ms_mem_free(mem, ord, (n ? n : 1) * sizeof(*ord));
	return ms_buf_append_le64(b, XXH64(b->data, b->len, 0));
}

static void
snap_release(ms_mem *mem, struct snap *sn)
{
	ms_mem_free(mem, sn->ids, sn->alloc_n * sizeof(uint64_t));
	ms_mem_free(mem, sn->depths, sn->alloc_n * sizeof(uint32_t));
	ms_mem_free(mem, sn->ranks, sn->alloc_n * sizeof(uint32_t));
	sn->ids = NULL;
	sn->depths = NULL;
	sn->ranks = NULL;
}

/* The n entries at e of a snapshot of version ver into sn (allocated):
 * IDs strictly ascending, nonzero and below next_id; a version-2 rank
 * below n and each rank once; a version-1 reserved field 0, its order
 * the IDs' (design point 1). `seen` has room for n flags, zeroed. */
static int
snap_entries(const char *path, const uint8_t *e, uint32_t ver, uint8_t *seen,
             struct snap *sn, ms_errbuf *eb)
{
	for (size_t i = 0; i < sn->n; i++, e += SNAP_ENTRY) {
		sn->ids[i] = ms_le64(e);
		sn->depths[i] = ms_le32(e + 8);
		uint32_t r = ms_le32(e + 12);
		bool bad = sn->ids[i] == 0 || sn->ids[i] >= sn->next_id ||
		           (i > 0 && sn->ids[i] <= sn->ids[i - 1]);
		if (!bad && ver == 1)
			bad = r != 0;
		else if (!bad)
			bad = r >= sn->n || seen[r]++;
		sn->ranks[i] = ver == 1 ? (uint32_t)i : r;
		if (bad) {
			char hex[17];
			id_hex(sn->ids[i], hex);
			return ms_fail(
			        eb, MS_ERR_CORRUPT,
			        "snapshot %s: entry %zu (part %s) is out "
			        "of order, zero, or not below next ID, or its "
			        "%s",
			        path, i, hex,
			        ver == 1 ? "reserved field is not 0"
			                 : "rank is not below the part count "
			                   "or repeats another's");
		}
	}
	return 0;
}

/* Allocate sn's arrays for sn->n entries and decode them (snap_entries). */
static int
snap_alloc_entries(ms_mem *mem, const char *path, const uint8_t *e,
                   uint32_t ver, struct snap *sn, ms_errbuf *eb)
{
	sn->alloc_n = sn->n ? (size_t)sn->n : 1;
	sn->ids = ms_mem_alloc(mem, sn->alloc_n * sizeof(uint64_t));
	sn->depths = ms_mem_alloc(mem, sn->alloc_n * sizeof(uint32_t));
	sn->ranks = ms_mem_alloc(mem, sn->alloc_n * sizeof(uint32_t));
	uint8_t *seen = ms_mem_calloc(mem, sn->alloc_n, 1);
	int rc;
	if (!sn->ids || !sn->depths || !sn->ranks || !seen)
		rc = ms_fail(eb, MS_ERR_NOMEM,
		             "snapshot %s: out of memory for its %zu parts "
		             "(%zu bytes)",
		             path, sn->alloc_n,
		             sn->alloc_n * (sizeof(uint64_t) +
		                            2 * sizeof(uint32_t) + 1));
	else
		rc = snap_entries(path, e, ver, seen, sn, eb);
	ms_mem_free(mem, seen, sn->alloc_n);
	if (rc)
		snap_release(mem, sn);
	return rc;
}

/* Decode a snapshot image; `path` names it in errors. */
static int
snap_decode(ms_mem *mem, const char *path, const uint8_t *p, size_t size,
            struct snap *sn, ms_errbuf *eb)
{
	memset(sn, 0, sizeof(*sn));
	if (size < SNAP_HEAD + SNAP_TAIL)
		return ms_fail(eb, MS_ERR_CORRUPT,
		               "snapshot %s: truncated: %zu bytes, header "
		               "needs %u",
		               path, size, SNAP_HEAD + SNAP_TAIL);
	if (memcmp(p, SNAP_MAGIC, 8) != 0)
		return ms_fail(eb, MS_ERR_FORMAT,
		               "snapshot %s: bad magic (not a shard snapshot)",
		               path);
	uint32_t ver = ms_le32(p + 8);
	if (ver != SNAP_VERSION && ver != 1)
		return ms_fail(eb, MS_ERR_FORMAT,
		               "snapshot %s: version %" PRIu32
		               ", expected 1 or %u",
		               path, ver, SNAP_VERSION);
	uint64_t n = ms_le64(p + 32);
	if (n > SNAP_MAX_PARTS ||
	    (size - SNAP_HEAD - SNAP_TAIL) / SNAP_ENTRY != n ||
	    (size - SNAP_HEAD - SNAP_TAIL) % SNAP_ENTRY != 0)
		return ms_fail(eb, MS_ERR_CORRUPT,
		               "snapshot %s: lists %" PRIu64
		               " parts but holds %zu bytes (expected %" PRIu64
		               ")",
		               path, n, size,
		               n <= SNAP_MAX_PARTS
		                       ? SNAP_HEAD + SNAP_TAIL + n * SNAP_ENTRY
		                       : 0);
	uint64_t want = ms_le64(p + size - SNAP_TAIL);
	uint64_t got = XXH64(p, size - SNAP_TAIL, 0);
	if (want != got)
		return ms_fail(
		        eb, MS_ERR_CORRUPT,
		        "snapshot %s: checksum mismatch (stored %016" PRIx64
		        ", computed %016" PRIx64 ")",
		        path, want, got);
	if (ms_le32(p + 12) != 0)
		return ms_fail(eb, MS_ERR_FORMAT,
		               "snapshot %s: unknown flags %08" PRIx32, path,
		               ms_le32(p + 12));
	sn->epoch = ms_le64(p + 16);
	sn->next_id = ms_le64(p + 24);
	sn->n = n;
	return snap_alloc_entries(mem, path, p + SNAP_HEAD, ver, sn, eb);
}

static int
snap_read(ms_shard *s, struct snap *sn, ms_errbuf *eb)
{
	char path[PATH_MAX_LEN];
	if (sub_path(s, SNAP_NAME, path, sizeof(path)))
		return ms_fail(eb, MS_ERR_RANGE, "shard %s: path too long",
		               s->dir);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ms_fail(eb,
		               ms_err_from_open_errno(errno),
		               "snapshot %s: %s", path, strerror(errno));
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return ms_fail(eb, MS_ERR_IO, "snapshot %s: not a regular file",
		               path);
	}
	uint64_t max =
	        SNAP_HEAD + SNAP_TAIL + (uint64_t)SNAP_MAX_PARTS * SNAP_ENTRY;
	if ((uint64_t)st.st_size > max) {
		close(fd);
		return ms_fail(eb, MS_ERR_CORRUPT,
		               "snapshot %s: %lld bytes is more than any "
		               "snapshot (%" PRIu64 ")",
		               path, (long long)st.st_size, max);
	}
	size_t size = (size_t)st.st_size;
	uint8_t *buf = ms_mem_alloc(s->mem, size);
	if (!buf) {
		close(fd);
		return ms_fail(
		        eb, MS_ERR_NOMEM,
		        "snapshot %s: out of memory to read its %zu bytes",
		        path, size);
	}
	size_t got = 0;
	while (got < size) {
		ssize_t r = read(fd, buf + got, size - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	int e = errno;
	close(fd);
	int rc;
	if (got != size)
		rc = ms_fail(eb, MS_ERR_IO, "snapshot %s: short read: %s", path,
		             strerror(e));
	else
		rc = snap_decode(s->mem, path, buf, size, sn, eb);
	if (rc == 0 && s->io)
		io_add(&s->io->bytes_read, size);
	ms_mem_free(s->mem, buf, size);
	return rc;
}

static bool
fault(ms_shard *s, enum ms_shard_fault where)
{
	if (s->fault != where)
		return false;
	s->fault = MS_SHARD_FAULT_NONE;
	errno = s->fault_errno ? s->fault_errno : EIO;
	return true;
}

/* Write and commit a snapshot. *renamed tells whether DIR/snapshot was
 * replaced (so a failure after it needs undoing by the caller). */
static void
step(ms_shard *s, enum ms_shard_step st, unsigned index)
{
	if (s->hook)
		s->hook(s->hook_arg, st, index);
}

/* A snapshot naming none of the parts in limbo is durable: they may go
 * (design point 8). s->lock held. */
static void
dir_synced(ms_shard *s)
{
	for (size_t i = 0; i < s->nlimbo; i++)
		sp_unref(s->limbo[i]);
	s->nlimbo = 0;
}

/* The sync of tmp/snapshot.new before its rename: an fsync of it, or
 * (design point 7) one syncfs that also makes every output file and
 * every rename into parts/ durable. Counted once either way. */
static int
sync_snap(ms_shard *s, int fd)
{
	if (!s->use_syncfs)
		return ms__fsync_fd(fd, s->io);
	if (s->io)
		io_add(&s->io->fsyncs, 1);
	if (syncfs(fd) != 0)
		return -1;
	s->parts_dirty = false;
	return 0;
}

/* The fsync of DIR that makes a rename over DIR/snapshot durable. */
static int
sync_dir(ms_shard *s)
{
	if (fault(s, MS_SHARD_FAULT_DIRSYNC) ||
	    ms__fsync_dir(s->dir, s->io) != 0)
		return -1;
	dir_synced(s);
	step(s, MS_SHARD_STEP_SNAP_SYNCED, 0);
	return 0;
}

static int
snap_write(ms_shard *s, uint64_t epoch, uint64_t next_id,
           struct ms__sp *const *list, size_t n, bool *renamed, ms_errbuf *eb)
{
	*renamed = false;
	char tmp[PATH_MAX_LEN], fin[PATH_MAX_LEN];
	if (sub_path(s, SNAP_TMP, tmp, sizeof(tmp)) ||
	    sub_path(s, SNAP_NAME, fin, sizeof(fin)))
		return ms_fail(eb, MS_ERR_RANGE, "shard %s: path too long",
		               s->dir);
	ms_buf b;
	ms_buf_init(&b, s->mem, 0);
	int rc = snap_encode(&b, s->mem, epoch, next_id, list, n);
	if (rc) {
		ms_buf_release(&b);
		return ms_fail(eb, rc,
		               "snapshot %s: cannot encode %zu parts: %s", fin,
		               n, ms_strerror(rc));
	}
	const char *what = "open";
	int fd = fault(s, MS_SHARD_FAULT_OPEN)
	                 ? -1
	                 : open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	                        0644);
	if (fd < 0)
		goto fail;
	what = "write";
	size_t off = 0;
	while (off < b.len) {
		ssize_t w = fault(s, MS_SHARD_FAULT_WRITE)
		                    ? -1
		                    : write(fd, b.data + off, b.len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (w == 0)
				errno = EIO;
			goto fail;
		}
		off += (size_t)w;
	}
	what = s->use_syncfs ? "syncfs" : "fsync";
	if (fault(s, MS_SHARD_FAULT_FSYNC) || sync_snap(s, fd) != 0)
		goto fail;
	what = "close";
	int crc = close(fd);
	fd = -1;
	if (crc != 0)
		goto fail;
	step(s, MS_SHARD_STEP_SNAP_WRITTEN, 0);
	what = "rename";
	if (fault(s, MS_SHARD_FAULT_RENAME) || rename(tmp, fin) != 0)
		goto fail;
	*renamed = true;
	step(s, MS_SHARD_STEP_COMMITTED, 0);
	what = "fsync directory";
	if (sync_dir(s) != 0)
		goto fail;
	if (s->io)
		io_add(&s->io->bytes_written, b.len);
	ms_buf_release(&b);
	return 0;
fail:;
	int e = errno;
	if (fd >= 0)
		close(fd);
	if (!*renamed)
		unlink(tmp);
	ms_buf_release(&b);
	return ms_fail(eb, ms_err_from_errno(e), "snapshot %s: %s: %s", fin,
	               what, strerror(e));
}

/* ---- dictionaries (core/FORMAT.md, "Dictionaries") ---- */

#define DICT_DIR "dicts"
#define DICT_MAGIC "MSDICT01"
#define DICT_HEAD 24u
#define DICT_MAX_BYTES ((size_t)16 << 20)

static DIR *open_sub(const ms_shard *s, const char *name,
                     char path[PATH_MAX_LEN]);
static int sync_locked(ms_shard *s, ms_errbuf *eb);

/* Read and check DIR/dicts/<name>, the file of dictionary id, into the
 * shard's set. */
static int
load_dict(ms_shard *s, const char *path, uint32_t id, ms_errbuf *eb)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		return ms_fail(eb, ms_err_from_errno(e), "dictionary %s: %s",
		               path, strerror(e));
	}
	size_t n = (size_t)st.st_size;
	uint8_t *b = n >= DICT_HEAD + 8 && n <= DICT_MAX_BYTES + DICT_HEAD + 8
	                     ? ms_mem_alloc(s->mem, n)
	                     : NULL;
	bool ok = b && ms_fs_pread_all(fd, b, n, 0) == 0;
	close(fd);
	ok = ok && memcmp(b, DICT_MAGIC, 8) == 0 && ms_le32(b + 8) == id &&
	     ms_le32(b + 12) == 0 && ms_le64(b + 16) == n - DICT_HEAD - 8 &&
	     ms_le64(b + n - 8) == XXH64(b, n - 8, 0);
	int rc = ok ? 0
	            : ms_fail(eb, MS_ERR_CORRUPT,
	                      "dictionary %s: %zu bytes, not dictionary %u "
	                      "whole (magic, ID, size or checksum)",
	                      path, n, id);
	ms_part_dict *d = NULL;
	if (rc == 0)
		rc = ms_part_dict_new(&d, id, b + DICT_HEAD, n - DICT_HEAD - 8,
		                      0, s->mem, eb);
	if (rc == 0)
		rc = ms_part_dicts_add(s->dicts, d, eb);
	if (b)
		ms_mem_free(s->mem, b, n);
	return rc;
}

/* The set of DIR/dicts, read before any part is opened (a part may name
 * any of them). */
static int
load_dicts(ms_shard *s, ms_errbuf *eb)
{
	int rc = ms_part_dicts_new(&s->dicts, s->mem, eb);
	char path[PATH_MAX_LEN], sub[PATH_MAX_LEN];
	DIR *d = rc ? NULL : open_sub(s, DICT_DIR, path);
	if (!d)
		return rc;
	struct dirent *de;
	while (rc == 0 && (de = readdir(d))) {
		char *end;
		unsigned long id = strtoul(de->d_name, &end, 16);
		if (strlen(de->d_name) != 8 || *end || id == 0 ||
		    id > UINT32_MAX)
			continue;
		if (snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name) >=
		    (int)sizeof(sub))
			rc = ms_fail(eb, MS_ERR_RANGE, "shard %s: path too long",
			             s->dir);
		else
			rc = load_dict(s, sub, (uint32_t)id, eb);
	}
	closedir(d);
	return rc;
}

/* Dictionary nid's file bytes b to tmp, synced, renamed to fin, and the
 * directory dir (DIR/dicts) synced: written whole and synced before it
 * is renamed in, and the directory synced before any part may name it.
 * A failure names the step and its path. */
static int
dict_write(ms_shard *s, uint32_t nid, const char *dir, const char *tmp,
           const char *fin, const ms_buf *b, ms_errbuf *eb)
{
	const char *what = "create", *path = dir, *to = "";
	int fd = -1;
	if (ms_fs_mkdir_p(dir, 0755, NULL) != 0)
		goto fail;
	path = tmp;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		goto fail;
	what = "write";
	if (ms_fs_write_all(fd, b->data, b->len) != 0)
		goto fail;
	what = "fsync";
	if (ms__fsync_fd(fd, s->io) != 0)
		goto fail;
	what = "close";
	int crc = close(fd);
	fd = -1;
	if (crc != 0)
		goto fail;
	what = "rename";
	to = fin;
	if (rename(tmp, fin) != 0)
		goto fail;
	what = "fsync";
	path = dir;
	to = "";
	if (ms__fsync_dir(dir, s->io) == 0)
		return 0;
fail:;
	int e = errno;
	if (fd >= 0)
		close(fd);
	return ms_fail(eb, ms_err_from_errno(e),
	               "shard %s: dictionary %08x: %s %s%s%s: %s", s->dir, nid,
	               what, path, to[0] ? " -> " : "", to, strerror(e));
}

int
ms_shard_add_dict(ms_shard *s, const void *bytes, size_t n, uint32_t *id,
                  ms_errbuf *eb)
{
	if (n == 0 || n > DICT_MAX_BYTES)
		return ms_fail(eb, MS_ERR_RANGE,
		               "shard %s: a dictionary of %zu bytes", s->dir, n);
	pthread_mutex_lock(&s->lock);
	uint32_t nid = ms_part_dicts_max_id(s->dicts) + 1;
	char dir[PATH_MAX_LEN], tmp[PATH_MAX_LEN], fin[PATH_MAX_LEN];
	int rc = 0;
	if (sub_path(s, DICT_DIR, dir, sizeof(dir)) ||
	    snprintf(tmp, sizeof(tmp), "%s/tmp/dict-%08x", s->dir, nid) >=
	            (int)sizeof(tmp) ||
	    snprintf(fin, sizeof(fin), "%s/%08x", dir, nid) >= (int)sizeof(fin))
		rc = ms_fail(eb, MS_ERR_RANGE, "shard %s: path too long",
		             s->dir);
	ms_part_dict *d = NULL;
	if (rc == 0)
		rc = ms_part_dict_new(&d, nid, bytes, n, 0, s->mem, eb);
	ms_buf b;
	ms_buf_init(&b, s->mem, 0);
	if (rc == 0 && (ms_buf_append(&b, DICT_MAGIC, 8) ||
	                ms_buf_append_le32(&b, nid) ||
	                ms_buf_append_le32(&b, 0) ||
	                ms_buf_append_le64(&b, n) ||
	                ms_buf_append(&b, bytes, n) ||
	                ms_buf_append_le64(&b, XXH64(b.data, b.len, 0))))
		rc = ms_fail(eb, MS_ERR_NOMEM,
		             "shard %s: dictionary %u: out of memory for its "
		             "file (%zu bytes)",
		             s->dir, nid, n + 32);
	if (rc == 0)
		rc = dict_write(s, nid, dir, tmp, fin, &b, eb);
	ms_buf_release(&b);
	if (rc == 0) {
		rc = ms_part_dicts_add(s->dicts, d, eb);
		d = NULL;
	} else {
		unlink(tmp);
	}
	ms_part_dict_free(d);
	pthread_mutex_unlock(&s->lock);
	if (rc == 0)
		*id = nid;
	return rc;
}

const ms_part_dict *
ms_shard_dict(const ms_shard *s, uint32_t id)
{
	return ms_part_dicts_find(s->dicts, id);
}

const ms_part_dict *
ms_shard_dict_newest(const ms_shard *s)
{
	return ms_part_dicts_find(s->dicts, ms_part_dicts_max_id(s->dicts));
}

/* ---- open, recovery, close ---- */

struct cleanup {
	unsigned tmp_entries;
	unsigned parts;
	unsigned failed;
	uint64_t ids[NOTE_IDS];
	uint64_t max_seen;
};

static void
note_id(struct cleanup *c, uint64_t id)
{
	for (unsigned i = 0; i < c->parts && i < NOTE_IDS; i++)
		if (c->ids[i] == id)
			return;
	if (c->parts < NOTE_IDS)
		c->ids[c->parts] = id;
	c->parts++;
}

/* Open DIR/name for listing (its path into path); NULL if it cannot be. */
static DIR *
open_sub(const ms_shard *s, const char *name, char path[PATH_MAX_LEN])
{
	return sub_path(s, name, path, PATH_MAX_LEN) ? NULL : opendir(path);
}

/* Remove everything in DIR/tmp. */
static void
clean_tmp(ms_shard *s, struct cleanup *c)
{
	char path[PATH_MAX_LEN], sub[PATH_MAX_LEN];
	DIR *d = open_sub(s, "tmp", path);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		const char *dash = strrchr(de->d_name, '-');
		uint64_t id;
		if (dash && ms_part_id_parse(dash + 1, &id) && id > c->max_seen)
			c->max_seen = id;
		if (snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name) >=
		    (int)sizeof(sub))
			continue;
		if (ms_fs_rm_tree(sub, NULL) == 0)
			c->tmp_entries++;
		else
			c->failed++;
	}
	closedir(d);
}

/* Remove part files the inventory does not list. Names that are not
 * "<16hex>.<kind>" are not ours and are left alone. */
static void
clean_unlisted(ms_shard *s, struct cleanup *c)
{
	char path[PATH_MAX_LEN], sub[PATH_MAX_LEN];
	DIR *d = open_sub(s, PARTS_DIR, path);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d))) {
		uint64_t id;
		if (!ms__part_file_id(de->d_name, &id))
			continue;
		if (id > c->max_seen)
			c->max_seen = id;
		if (find_sp(s->act, s->nact, id) >= 0)
			continue;
		if (snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name) >=
		    (int)sizeof(sub))
			continue;
		if (ms_part_remove_dir(sub, NULL) == 0)
			note_id(c, id);
		else
			c->failed++;
	}
	closedir(d);
}

static void
write_note(ms_shard *s, const struct cleanup *c)
{
	s->note[0] = '\0';
	if (!c->tmp_entries && !c->parts && !c->failed)
		return;
	size_t n = sizeof(s->note), w = 0;
	w += (size_t)snprintf(s->note, n,
	                      "recovered epoch %" PRIu64
	                      ": removed %u temporary entr%s, %u unlisted "
	                      "part%s",
	                      s->epoch, c->tmp_entries,
	                      c->tmp_entries == 1 ? "y" : "ies", c->parts,
	                      c->parts == 1 ? "" : "s");
	for (unsigned i = 0; i < c->parts && i < NOTE_IDS && w < n; i++)
		w += (size_t)snprintf(s->note + w, n - w, "%s%016" PRIx64,
		                      i ? ", " : " (", c->ids[i]);
	if (c->parts && w < n)
		w += (size_t)snprintf(s->note + w, n - w, "%s)",
		                      c->parts > NOTE_IDS ? ", ..." : "");
	if (c->failed && w < n)
		snprintf(s->note + w, n - w, "; %u could not be removed",
		         c->failed);
}

/* Does the parts directory hold a part-named entry? */
static bool
has_part_files(ms_shard *s)
{
	char path[PATH_MAX_LEN];
	DIR *d = open_sub(s, PARTS_DIR, path);
	if (!d)
		return false;
	struct dirent *de;
	uint64_t id;
	bool any = false;
	while (!any && (de = readdir(d)))
		any = ms__part_file_id(de->d_name, &id);
	closedir(d);
	return any;
}

/* A shard of part format 2 kept its parts as directories under core/ and
 * sidx/: refuse it by name rather than as missing parts. */
static int
check_not_old_layout(ms_shard *s, ms_errbuf *eb)
{
	char path[PATH_MAX_LEN];
	struct stat st;
	if (sub_path(s, "core", path, sizeof(path)) || stat(path, &st) != 0 ||
	    !S_ISDIR(st.st_mode))
		return 0;
	return ms_fail(eb, MS_ERR_FORMAT,
	               "shard %s: holds part directories of format version 2 "
	               "(%s); this build reads format %d (one file per part "
	               "in %s/" PARTS_DIR ")",
	               s->dir, path, MS_PART_FORMAT_VERSION, s->dir);
}

static int
make_layout(ms_shard *s, ms_errbuf *eb)
{
	static const char *const subs[] = { PARTS_DIR, "tmp" };
	char path[PATH_MAX_LEN];
	for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++) {
		if (sub_path(s, subs[i], path, sizeof(path)))
			return ms_fail(eb, MS_ERR_RANGE,
			               "shard %s: path too long", s->dir);
		if (ms_fs_mkdir_p(path, 0755, NULL) != 0)
			return ms_fail(eb, ms_err_from_errno(errno),
			               "shard %s: cannot create %s: %s", s->dir,
			               path, strerror(errno));
	}
	return 0;
}

int
ms_shard_open(ms_shard **out, const ms_shard_opts *opts, ms_errbuf *eb)
{
	*out = NULL;
	if (!opts || !opts->dir || !opts->dir[0])
		return ms_fail(eb, MS_ERR_INVAL, "shard: no directory given");
	ms_shard *s = ms_mem_calloc(opts->mem, 1, sizeof(*s));
	if (!s)
		return ms_fail(eb, MS_ERR_NOMEM,
		               "shard %s: out of memory for its state (%zu "
		               "bytes)",
		               opts->dir, sizeof(*s));
	s->mem = opts->mem;
	s->io = opts->io;
	s->defer = opts->defer_sync;
	s->limbo_max =
	        opts->defer_max_parts ? opts->defer_max_parts : SHARD_LIMBO_MAX;
	s->use_syncfs = opts->commit_syncfs;
	s->dir_size = strlen(opts->dir) + 1;
	s->dir = ms_mem_dup(s->mem, opts->dir, s->dir_size);
	if (!s->dir) {
		size_t want = s->dir_size;
		ms_mem_free(s->mem, s, sizeof(*s));
		return ms_fail(eb, MS_ERR_NOMEM,
		               "shard %s: out of memory for its path (%zu "
		               "bytes)",
		               opts->dir, want);
	}
	while (s->dir_size > 2 && s->dir[s->dir_size - 2] == '/')
		s->dir[--s->dir_size - 1] = '\0';
	if (pthread_mutex_init(&s->lock, NULL) != 0) {
		ms_mem_free(s->mem, s->dir, s->dir_size);
		ms_mem_free(s->mem, s, sizeof(*s));
		return ms_fail(eb, MS_ERR_NOMEM, "shard %s: no mutex",
		               opts->dir);
	}
	struct snap sn = { 0 };
	int rc;
	char path[PATH_MAX_LEN];
	if (sub_path(s, SNAP_NAME, path, sizeof(path))) {
		rc = ms_fail(eb, MS_ERR_RANGE, "shard %s: path too long",
		             s->dir);
		goto fail;
	}
	if ((rc = check_not_old_layout(s, eb)) != 0)
		goto fail;
	if (!exists(path)) {
		if (!opts->create) {
			rc = ms_fail(eb, MS_ERR_NOTFOUND,
			             "shard %s: no snapshot file %s", s->dir,
			             path);
			goto fail;
		}
		if (has_part_files(s)) {
			rc = ms_fail(eb, MS_ERR_NOTFOUND,
			             "shard %s: snapshot %s is missing but "
			             "part files exist; refusing to "
			             "create an empty shard over them",
			             s->dir, path);
			goto fail;
		}
		if ((rc = make_layout(s, eb)) != 0)
			goto fail;
		bool renamed;
		rc = snap_write(s, 0, 1, NULL, 0, &renamed, eb);
		if (rc)
			goto fail;
	}
	if ((rc = snap_read(s, &sn, eb)) != 0 || (rc = load_dicts(s, eb)) != 0)
		goto fail;
	s->epoch = sn.epoch;
	s->durable_epoch = sn.epoch;
	s->next_id = sn.next_id;
	s->act = ms_mem_alloc(s->mem, (sn.n ? sn.n : 1) * sizeof(*s->act));
	if (!s->act) {
		rc = ms_fail(eb, MS_ERR_NOMEM,
		             "shard %s: out of memory for its %zu active parts "
		             "(%zu bytes)",
		             s->dir, (size_t)sn.n,
		             (sn.n ? (size_t)sn.n : 1) * sizeof(*s->act));
		goto fail;
	}
	for (size_t i = 0; i < sn.n; i++) {
		rc = sp_open(s, sn.ids[i], sn.depths[i], true, &s->act[i], eb);
		if (rc)
			goto fail;
		s->act[i]->entry = sn.ranks[i];
		s->nact++;
	}
	s->next_entry = sn.n;
	/* Every listed part opened: now it is safe to clean. */
	if ((rc = make_layout(s, eb)) != 0)
		goto fail;
	struct cleanup c = { 0 };
	clean_tmp(s, &c);
	clean_unlisted(s, &c);
	if (c.max_seen >= s->next_id && c.max_seen < UINT64_MAX)
		s->next_id = c.max_seen + 1;
	if (opts->first_new_id > s->next_id)
		s->next_id = opts->first_new_id;
	if (opts->reap_async && (rc = reaper_new(s, &s->reaper, eb)) != 0)
		goto fail;
	write_note(s, &c);
	snap_release(s->mem, &sn);
	*out = s;
	return 0;
fail:
	if (s->act) {
		for (size_t i = 0; i < s->nact; i++)
			sp_unref(s->act[i]);
		ms_mem_free(s->mem, s->act,
		            (sn.n ? sn.n : 1) * sizeof(*s->act));
	}
	snap_release(s->mem, &sn);
	ms_part_dicts_free(s->dicts);
	pthread_mutex_destroy(&s->lock);
	ms_mem_free(s->mem, s->dir, s->dir_size);
	ms_mem_free(s->mem, s, sizeof(*s));
	return rc;
}

void
ms_shard_close(ms_shard *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	sync_locked(s, NULL); /* its failure: see ms_shard.h */
	pthread_mutex_unlock(&s->lock);
	/* Left in limbo only if that failed: keep their files (the durable
	 * snapshot may name them; the next open removes them if not). */
	for (size_t i = 0; i < s->nlimbo; i++) {
		struct ms__sp *sp = s->limbo[i];
		atomic_store(&sp->dead, false);
		reaper_unref(sp->reaper);
		sp->reaper = NULL;
		sp_unref(sp);
	}
	ms_mem_free(s->mem, s->limbo, s->limbo_cap * sizeof(*s->limbo));
	for (size_t i = 0; i < s->nact; i++)
		sp_unref(s->act[i]);
	reaper_stop(s->reaper);
	ms_part_dicts_free(s->dicts); /* parts still pinned keep it alive */
	ms_mem_free(s->mem, s->act, (s->nact ? s->nact : 1) * sizeof(*s->act));
	pthread_mutex_destroy(&s->lock);
	ms_mem_free(s->mem, s->dir, s->dir_size);
	ms_mem_free(s->mem, s, sizeof(*s));
}

const char *
ms_shard_recovery_note(const ms_shard *s)
{
	return s->note;
}

const char *
ms_shard_get_dir(const ms_shard *s)
{
	return s->dir;
}

/* A counter of s (*v, one of its fields) read under its lock. */
static uint64_t
read_locked(const ms_shard *s, const uint64_t *v)
{
	ms_shard *m = (ms_shard *)s;
	pthread_mutex_lock(&m->lock);
	uint64_t x = *v;
	pthread_mutex_unlock(&m->lock);
	return x;
}

uint64_t
ms_shard_epoch(const ms_shard *s)
{
	return read_locked(s, &s->epoch);
}

size_t
ms_shard_count(const ms_shard *s)
{
	ms_shard *m = (ms_shard *)s;
	pthread_mutex_lock(&m->lock);
	size_t n = s->nact;
	pthread_mutex_unlock(&m->lock);
	return n;
}

int
ms_shard_new_id(ms_shard *s, uint64_t *id, ms_errbuf *eb)
{
	pthread_mutex_lock(&s->lock);
	int rc = 0;
	if (s->next_id == UINT64_MAX)
		rc = ms_fail(eb, MS_ERR_RANGE, "shard %s: part IDs exhausted",
		             s->dir);
	else
		*id = s->next_id++;
	pthread_mutex_unlock(&s->lock);
	return rc;
}

uint64_t
ms_shard_next_id(const ms_shard *s)
{
	return read_locked(s, &s->next_id);
}

int
ms_shard_strays(ms_shard *s, size_t *n, char *first, size_t firstn,
                ms_errbuf *eb)
{
	*n = 0;
	if (firstn)
		first[0] = '\0';
	char path[PATH_MAX_LEN];
	pthread_mutex_lock(&s->lock);
	DIR *d = open_sub(s, PARTS_DIR, path);
	if (!d) {
		int e = errno;
		pthread_mutex_unlock(&s->lock);
		return ms_fail(eb, MS_ERR_IO, "shard %s: cannot list %s: %s",
		               s->dir, PARTS_DIR, strerror(e));
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		uint64_t id;
		if (ms__part_file_id(de->d_name, &id) &&
		    find_sp(s->act, s->nact, id) >= 0)
			continue;
		if (!*n && firstn)
			snprintf(first, firstn, "%s", de->d_name);
		(*n)++;
	}
	closedir(d);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

void
ms_shard_settle(ms_shard *s)
{
	if (s->reaper)
		reaper_settle(s->reaper);
}

void
ms_shard_set_step_hook(ms_shard *s, ms_shard_step_fn fn, void *arg)
{
	pthread_mutex_lock(&s->lock);
	s->hook = fn;
	s->hook_arg = arg;
	pthread_mutex_unlock(&s->lock);
}

void
ms_shard_inject_fault(ms_shard *s, enum ms_shard_fault where, int err)
{
	pthread_mutex_lock(&s->lock);
	s->fault = where;
	s->fault_errno = err;
	pthread_mutex_unlock(&s->lock);
}

/* ---- transactions ---- */

/* Move the output's three files back where they came from. */
static void
unpublish(ms_shard *s, uint64_t id, int upto)
{
	char tmp[PATH_MAX_LEN], fin[PATH_MAX_LEN];
	for (int k = 0; k < upto; k++) {
		if (ms_shard_tmp_path(s, (enum ms_part_kind)k, id, tmp,
		                      sizeof(tmp)) ||
		    ms_shard_part_path(s, (enum ms_part_kind)k, id, fin,
		                       sizeof(fin)))
			continue;
		/* If this fails the file is unlisted and the next open
		 * removes it. */
		rename(fin, tmp);
	}
}

/* rename(from, to) unless `to` exists: one call where the file system
 * knows RENAME_NOREPLACE, else a check and a rename. */
static int
rename_new(const char *from, const char *to)
{
#ifdef RENAME_NOREPLACE
	if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -1;
#endif
	struct stat st;
	if (lstat(to, &st) == 0) {
		errno = EEXIST;
		return -1;
	}
	return rename(from, to);
}

/* fsync the parts directory: the renames into it so far become durable
 * (counted, and parts_dirty cleared, as every sync of it). */
static int
sync_parts(ms_shard *s, const char *what, ms_errbuf *eb)
{
	char dir[PATH_MAX_LEN];
	if (sub_path(s, PARTS_DIR, dir, sizeof(dir)))
		return ms_fail(eb, MS_ERR_RANGE, "shard %s: path too long",
		               s->dir);
	if (ms__fsync_dir(dir, s->io) != 0)
		return ms_fail(eb, ms_err_from_errno(errno),
		               "shard %s: %s: fsync %s: %s", s->dir, what, dir,
		               strerror(errno));
	s->parts_dirty = false;
	step(s, MS_SHARD_STEP_DIRS_SYNCED, 0);
	return 0;
}

/* Publish the output's three kinds and open them: a rename per kind into
 * the parts directory, then one fsync of it (deferred, when !sync, to the
 * next durability point: design point 6). The tmp files are durable
 * already (design point 5 of ms_shard.h). On failure nothing is published
 * (the tmp files are back in place). */
static int
publish_output(ms_shard *s, uint64_t id, bool sync, struct ms__sp **out,
               ms_errbuf *eb)
{
	char tmp[PATH_MAX_LEN], fin[PATH_MAX_LEN], hex[17];
	id_hex(id, hex);
	int k, rc = 0;
	for (k = 0; k < MS_KIND_COUNT; k++) {
		if (ms_shard_tmp_path(s, (enum ms_part_kind)k, id, tmp,
		                      sizeof(tmp)) ||
		    ms_shard_part_path(s, (enum ms_part_kind)k, id, fin,
		                       sizeof(fin))) {
			rc = ms_fail(eb, MS_ERR_RANGE,
			             "shard %s: path too long", s->dir);
			break;
		}
		if (rename_new(tmp, fin) != 0) {
			int e = errno;
			if (e == ENOENT)
				rc = ms_fail(eb, MS_ERR_NOTFOUND,
				             "shard %s: part %s: %s part not "
				             "written (no %s)",
				             s->dir, hex, kind_tmp[k], tmp);
			else if (e == EEXIST || e == ENOTEMPTY)
				rc = ms_fail(eb, MS_ERR_EXISTS,
				             "shard %s: part %s: %s already "
				             "exists",
				             s->dir, hex, fin);
			else
				rc = ms_fail(
				        eb, ms_err_from_errno(e),
				        "shard %s: part %s: publishing %s: "
				        "rename to %s: %s",
				        s->dir, hex, kind_tmp[k], fin,
				        strerror(e));
			break;
		}
		step(s, MS_SHARD_STEP_RENAMED, (unsigned)k);
	}
	if (rc == 0 && sync) {
		snprintf(tmp, sizeof(tmp), "part %s", hex);
		rc = sync_parts(s, tmp, eb);
	} else if (rc == 0) {
		s->parts_dirty = true;
	}
	if (rc == 0)
		rc = sp_open(s, id, 0, false, out, eb);
	if (rc)
		unpublish(s, id, k);
	return rc;
}

/* A transaction's arguments against the inventory (s->lock held). */
static int
check_transaction(ms_shard *s, const uint64_t *inputs, size_t ninputs,
                  uint64_t output, ms_errbuf *eb)
{
	char hex[17];
	if (s->broken)
		return ms_fail(eb, MS_ERR_STATE,
		               "shard %s: an earlier commit failed in an "
		               "unknown state; reopen the shard",
		               s->dir);
	for (size_t i = 0; i < ninputs; i++) {
		id_hex(inputs[i], hex);
		if (find_sp(s->act, s->nact, inputs[i]) < 0)
			return ms_fail(eb, MS_ERR_CONFLICT,
			               "shard %s: input part %s is not active",
			               s->dir, hex);
		for (size_t j = 0; j < i; j++)
			if (inputs[j] == inputs[i])
				return ms_fail(eb, MS_ERR_INVAL,
				               "shard %s: input part %s given "
				               "twice",
				               s->dir, hex);
	}
	if (!output)
		return 0;
	id_hex(output, hex);
	if (find_sp(s->act, s->nact, output) >= 0)
		return ms_fail(eb, MS_ERR_EXISTS,
		               "shard %s: part %s is already active", s->dir,
		               hex);
	if (output == UINT64_MAX)
		return ms_fail(eb, MS_ERR_RANGE,
		               "shard %s: part ID %s is reserved", s->dir, hex);
	return 0;
}

/* The new inventory into next[]: the active parts minus inputs, plus osp
 * (may be NULL) in ID order. Returns its length. */
static size_t
next_inventory(const ms_shard *s, const uint64_t *inputs, size_t ninputs,
               struct ms__sp *osp, struct ms__sp **next)
{
	size_t nnext = 0;
	bool placed = osp == NULL;
	for (size_t i = 0; i < s->nact; i++) {
		struct ms__sp *sp = s->act[i];
		bool gone = false;
		for (size_t j = 0; j < ninputs && !gone; j++)
			gone = inputs[j] == sp->id;
		if (!placed && osp->id < sp->id) {
			next[nnext++] = osp;
			placed = true;
		}
		if (!gone)
			next[nnext++] = sp;
	}
	if (!placed)
		next[nnext++] = osp;
	return nnext;
}

/* Prefix eb's message, a failed snap_write's (which names the file, the
 * system call and the system's reason), with the commit it was for. */
static int
snap_failed_for(ms_errbuf *eb, int rc, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));
static int
snap_failed_for(ms_errbuf *eb, int rc, const char *fmt, ...)
{
	if (!eb)
		return rc;
	char why[sizeof(eb->msg)], what[160];
	memcpy(why, eb->msg, sizeof(why));
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return ms_fail(eb, rc, "%s: %s", what, why);
}

/* The snapshot written for one transaction failed: say which. */
static int
transact_snap_failed(const ms_shard *s, const uint64_t *inputs,
                     size_t ninputs, uint64_t output, ms_errbuf *eb,
                     int rc)
{
	char id[17];
	id_hex(output ? output : inputs[0], id);
	unsigned long long at = (unsigned long long)s->epoch + 1;
	if (ninputs == 0)
		return snap_failed_for(eb, rc,
		                       "introducing part %s (epoch %llu)", id,
		                       at);
	if (output == 0)
		return snap_failed_for(eb, rc,
		                       "removing %zu parts, the first part "
		                       "%s (epoch %llu)",
		                       ninputs, id, at);
	return snap_failed_for(eb, rc,
	                       "committing part %s, merged from %zu parts "
	                       "(epoch %llu)",
	                       id, ninputs, at);
}

/* Count a transaction committed in memory only (6.). */
static void
note_deferred(ms_shard *s, size_t ninputs, uint64_t output)
{
	s->pending = true;
	if (ninputs == 0)
		s->pend_intro++;
	else if (output == 0)
		s->pend_remove++;
	else
		s->pend_replace++;
}

/* DIR/snapshot is the inventory in memory, at epoch s->epoch. */
static void
now_durable(ms_shard *s)
{
	s->pending = false;
	s->durable_epoch = s->epoch;
	s->pend_intro = s->pend_replace = s->pend_remove = 0;
}

/* The snapshot of a transaction failed to commit: write the previous one
 * back if it was replaced (else, or if that fails too, the shard is
 * broken), and take the output back out. */
static void
undo_commit(ms_shard *s, bool renamed, struct ms__sp *osp, uint64_t output,
            bool in_place)
{
	if (renamed) {
		bool again;
		if (snap_write(s, s->epoch, s->next_id, s->act, s->nact, &again,
		               NULL) != 0)
			s->broken = true;
		else
			now_durable(s); /* the write-back committed it */
	}
	if (osp) {
		sp_unref(osp);
		if (!s->broken && !in_place)
			unpublish(s, output, MS_KIND_COUNT);
	}
}

/* After the commit: mark the inputs dead (moved to the front of the old
 * inventory, their count returned) for the caller to unref outside the
 * lock. */
static size_t
retire_inputs(ms_shard *s, struct ms__sp **old, size_t oldn,
              const uint64_t *inputs, size_t ninputs)
{
	size_t nrm = 0;
	for (size_t i = 0; i < oldn; i++) {
		struct ms__sp *sp = old[i];
		for (size_t j = 0; j < ninputs; j++)
			if (inputs[j] == sp->id) {
				sp->hook = s->hook;
				sp->hook_arg = s->hook_arg;
				if (s->reaper) {
					atomic_fetch_add(&s->reaper->refs, 1);
					sp->reaper = s->reaper;
				}
				atomic_store(&sp->dead, true);
				old[nrm++] = sp;
				break;
			}
	}
	return nrm;
}

/* Room in s->limbo for n more parts. */
static int
limbo_reserve(ms_shard *s, size_t n, ms_errbuf *eb)
{
	if (s->nlimbo + n <= s->limbo_cap)
		return 0;
	size_t cap = (s->nlimbo + n) * 2;
	void *p = ms_mem_realloc(s->mem, s->limbo,
	                         s->limbo_cap * sizeof(*s->limbo),
	                         cap * sizeof(*s->limbo));
	if (!p)
		return ms_fail(eb, MS_ERR_NOMEM,
		               "shard %s: out of memory for %zu parts awaiting "
		               "a sync (%zu bytes)",
		               s->dir, cap, cap * sizeof(*s->limbo));
	s->limbo = p;
	s->limbo_cap = cap;
	return 0;
}

/* One transaction; in_place: the output is at its final paths already;
 * at (NULL: any): only at this epoch, else *moved and MS_ERR_CONFLICT. */
static int
transact(ms_shard *s, const uint64_t *inputs, size_t ninputs, uint64_t output,
         bool in_place, const uint64_t *at, bool *moved, ms_errbuf *eb)
{
	if ((ninputs == 0 && output == 0) || (ninputs && !inputs))
		return ms_fail(eb, MS_ERR_INVAL,
		               "shard %s: a transaction needs inputs or an "
		               "output",
		               s->dir);
	pthread_mutex_lock(&s->lock);
	struct ms__sp *osp = NULL, **next = NULL;
	size_t cap = 0;
	int rc = 0;
	if (at && *at != s->epoch) {
		*moved = true;
		rc = ms_fail(eb, MS_ERR_CONFLICT,
		             "shard %s: the inventory moved from epoch %llu to "
		             "%llu before the transaction",
		             s->dir, (unsigned long long)*at,
		             (unsigned long long)s->epoch);
		goto out;
	}
	rc = check_transaction(s, inputs, ninputs, output, eb);
	if (rc)
		goto out;
	cap = s->nact - ninputs + (output ? 1 : 0);
	next = ms_mem_alloc(s->mem, (cap ? cap : 1) * sizeof(*next));
	if (!next) {
		rc = ms_fail(eb, MS_ERR_NOMEM,
		             "shard %s: out of memory for the next %zu active "
		             "parts (%zu bytes)",
		             s->dir, cap, (cap ? cap : 1) * sizeof(*next));
		goto out;
	}
	/* A durability point (design point 6): renames an earlier deferred
	 * introduction left unsynced in parts/ are synced before this
	 * snapshot may name them; an output renamed here syncs parts/ itself
	 * below, which covers them too. */
	bool defer = s->defer && s->nlimbo + ninputs <= s->limbo_max;
	if (defer && (rc = limbo_reserve(s, ninputs, eb)) != 0)
		goto out;
	if (!defer && s->parts_dirty && (!output || in_place) &&
	    !s->use_syncfs &&
	    (rc = sync_parts(s, "deferred publications", eb)) != 0)
		goto out;
	if (output && in_place)
		rc = sp_open(s, output, 0, false, &osp, eb);
	else if (output)
		rc = publish_output(s, output, !defer && !s->use_syncfs, &osp,
		                    eb);
	if (rc)
		goto out;
	if (osp) /* it enters after every part there (design point 1) */
		osp->entry = s->next_entry++;
	size_t nnext = next_inventory(s, inputs, ninputs, osp, next);
	uint64_t next_id = s->next_id;
	if (output >= next_id)
		next_id = output + 1;
	bool renamed = false;
	if (!defer)
		rc = snap_write(s, s->epoch + 1, next_id, next, nnext, &renamed,
		                eb);
	if (rc) {
		rc = transact_snap_failed(s, inputs, ninputs, output, eb, rc);
		undo_commit(s, renamed, osp, output, in_place);
		goto out;
	}
	/* Committed: on disk, or (deferred) in memory only. */
	struct ms__sp **old = s->act;
	size_t oldn = s->nact;
	size_t nrm = retire_inputs(s, old, oldn, inputs, ninputs);
	s->act = next;
	s->nact = nnext;
	s->epoch++;
	s->next_id = next_id;
	if (defer)
		note_deferred(s, ninputs, output);
	else
		now_durable(s);
	if (defer)
		step(s, MS_SHARD_STEP_DEFERRED, (unsigned)nrm);
	for (size_t i = 0; defer && i < nrm; i++)
		s->limbo[s->nlimbo++] = old[i]; /* reserved above */
	if (defer)
		nrm = 0;
	pthread_mutex_unlock(&s->lock);
	for (size_t i = 0; i < nrm; i++)
		sp_unref(old[i]);
	ms_mem_free(s->mem, old, (oldn ? oldn : 1) * sizeof(*old));
	return 0;
out:
	if (next)
		ms_mem_free(s->mem, next, (cap ? cap : 1) * sizeof(*next));
	pthread_mutex_unlock(&s->lock);
	return rc;
}

/* ms_shard_sync with s->lock held. */
static int
sync_locked(ms_shard *s, ms_errbuf *eb)
{
	if (!s->pending && !s->parts_dirty)
		return 0;
	if (s->broken)
		return ms_fail(eb, MS_ERR_STATE,
		               "shard %s: an earlier commit failed in an "
		               "unknown state; reopen the shard",
		               s->dir);
	int rc = 0;
	if (s->parts_dirty && (!s->use_syncfs || !s->pending))
		rc = sync_parts(s, "deferred publications", eb);
	bool renamed;
	if (rc == 0 && s->pending &&
	    (rc = snap_write(s, s->epoch, s->next_id, s->act, s->nact,
	                     &renamed, eb)) != 0)
		return snap_failed_for(
		        eb, rc,
		        "making epochs %llu..%llu durable (committed in "
		        "memory: introductions %u, merges %u, removals %u)",
		        (unsigned long long)s->durable_epoch + 1,
		        (unsigned long long)s->epoch, s->pend_intro,
		        s->pend_replace, s->pend_remove);
	/* A failure leaves DIR/snapshot at the last durable inventory or at
	 * this one, both whole and both naming only parts on disk. */
	if (rc == 0)
		now_durable(s);
	return rc;
}

bool
ms_shard_syncs_outputs(const ms_shard *s)
{
	return s->use_syncfs;
}

int
ms_shard_sync(ms_shard *s, ms_errbuf *eb)
{
	pthread_mutex_lock(&s->lock);
	int rc = sync_locked(s, eb);
	pthread_mutex_unlock(&s->lock);
	return rc;
}

int
ms_shard_replace(ms_shard *s, const uint64_t *inputs, size_t ninputs,
                 uint64_t output, ms_errbuf *eb)
{
	return transact(s, inputs, ninputs, output, false, NULL, NULL, eb);
}

int
ms_shard_replace_at(ms_shard *s, const uint64_t *inputs, size_t ninputs,
                    uint64_t output, uint64_t epoch, bool *moved, ms_errbuf *eb)
{
	*moved = false;
	return transact(s, inputs, ninputs, output, false, &epoch, moved, eb);
}

int
ms_shard_introduce(ms_shard *s, uint64_t id, ms_errbuf *eb)
{
	if (id == 0)
		return ms_fail(eb, MS_ERR_INVAL,
		               "shard %s: part ID 0 is invalid", s->dir);
	return transact(s, NULL, 0, id, false, NULL, NULL, eb);
}

int
ms_shard_introduce_placed(ms_shard *s, uint64_t id, ms_errbuf *eb)
{
	if (id == 0)
		return ms_fail(eb, MS_ERR_INVAL,
		               "shard %s: part ID 0 is invalid", s->dir);
	return transact(s, NULL, 0, id, true, NULL, NULL, eb);
}

int
ms_shard_remove(ms_shard *s, const uint64_t *inputs, size_t ninputs,
                ms_errbuf *eb)
{
	return ms_shard_replace(s, inputs, ninputs, 0, eb);
}

/* ---- views ---- */

/* Finish view v of shard s, its parts pinned: their entry order into
 * v->ent, then *out = v; on failure v is released. The entry ordinals
 * of pinned parts no longer change, so s->lock is not needed. */
static int
view_ordered(ms_shard *s, ms_view *v, ms_view **out, ms_errbuf *eb)
{
	v->ent = ms_mem_alloc(s->mem, v->cap * sizeof(*v->ent));
	if (!v->ent || entry_order_in(s->mem, v->sp, v->n, v->ent) != 0) {
		size_t n = v->n;
		ms_view_release(v);
		return ms_fail(eb, MS_ERR_NOMEM,
		               "shard %s: out of memory for the entry order "
		               "of a view of %zu parts (%zu bytes)",
		               s->dir, n, n * (sizeof(size_t) + sizeof(void *)));
	}
	*out = v;
	return 0;
}

int
ms_shard_view(ms_shard *s, ms_view **out, ms_errbuf *eb)
{
	*out = NULL;
	ms_view *v = ms_mem_calloc(s->mem, 1, sizeof(*v));
	if (!v)
		return ms_fail(eb, MS_ERR_NOMEM,
		               "shard %s: out of memory for a view (%zu bytes)",
		               s->dir, sizeof(*v));
	v->mem = s->mem;
	pthread_mutex_lock(&s->lock);
	size_t cap = s->nact ? s->nact : 1;
	v->sp = ms_mem_alloc(s->mem, cap * sizeof(*v->sp));
	if (!v->sp) {
		pthread_mutex_unlock(&s->lock);
		ms_mem_free(s->mem, v, sizeof(*v));
		return ms_fail(eb, MS_ERR_NOMEM,
		               "shard %s: out of memory for a view of %zu "
		               "parts (%zu bytes)",
		               s->dir, cap, cap * sizeof(*v->sp));
	}
	v->n = s->nact;
	v->cap = s->nact ? s->nact : 1;
	v->epoch = s->epoch;
	for (size_t i = 0; i < v->n; i++) {
		v->sp[i] = s->act[i];
		atomic_fetch_add(&v->sp[i]->refs, 1);
	}
	pthread_mutex_unlock(&s->lock);
	return view_ordered(s, v, out, eb);
}

int
ms_shard_view_of(ms_shard *s, const uint64_t *ids, size_t n, ms_view **out,
                 ms_errbuf *eb)
{
	*out = NULL;
	ms_view *v = ms_mem_calloc(s->mem, 1, sizeof(*v));
	if (!v)
		return ms_fail(eb, MS_ERR_NOMEM,
		               "shard %s: out of memory for a view (%zu bytes)",
		               s->dir, sizeof(*v));
	v->mem = s->mem;
	v->cap = n ? n : 1;
	v->sp = ms_mem_alloc(s->mem, v->cap * sizeof(*v->sp));
	if (!v->sp) {
		size_t cap = v->cap;
		ms_mem_free(s->mem, v, sizeof(*v));
		return ms_fail(eb, MS_ERR_NOMEM,
		               "shard %s: out of memory for a view of %zu "
		               "parts (%zu bytes)",
		               s->dir, cap, cap * sizeof(*v->sp));
	}
	pthread_mutex_lock(&s->lock);
	v->epoch = s->epoch;
	/* In the inventory's order (ascending ID), each at most once. */
	for (size_t i = 0; i < s->nact; i++) {
		uint64_t id = s->act[i]->id;
		for (size_t j = 0; j < n; j++)
			if (ids[j] == id) {
				v->sp[v->n] = s->act[i];
				atomic_fetch_add(&v->sp[v->n]->refs, 1);
				v->n++;
				break;
			}
	}
	pthread_mutex_unlock(&s->lock);
	return view_ordered(s, v, out, eb);
}

void
ms_view_release(ms_view *v)
{
	if (!v)
		return;
	for (size_t i = 0; i < v->n; i++)
		sp_unref(v->sp[i]);
	ms_mem_free(v->mem, v->sp, v->cap * sizeof(*v->sp));
	ms_mem_free(v->mem, v->ent, v->cap * sizeof(*v->ent));
	ms_mem_free(v->mem, v, sizeof(*v));
}

size_t
ms_view_entered(const ms_view *v, size_t k)
{
	return k < v->n ? v->ent[k] : v->n;
}

uint64_t
ms_view_epoch(const ms_view *v)
{
	return v->epoch;
}

size_t
ms_view_count(const ms_view *v)
{
	return v->n;
}

const ms_part *
ms_view_part(const ms_view *v, size_t i, enum ms_part_kind kind)
{
	if (i >= v->n || (unsigned)kind >= MS_KIND_COUNT)
		return NULL;
	return v->sp[i]->p[kind];
}

uint64_t
ms_view_id(const ms_view *v, size_t i)
{
	return i < v->n ? v->sp[i]->id : 0;
}

const ms_part *
ms_view_find(const ms_view *v, uint64_t id, enum ms_part_kind kind)
{
	if ((unsigned)kind >= MS_KIND_COUNT)
		return NULL;
	ptrdiff_t i = find_sp(v->sp, v->n, id);
	return i < 0 ? NULL : v->sp[i]->p[kind];
}
