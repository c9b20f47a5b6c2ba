/*
 * controller.c - the replay controller: one fixture's day through the real
 * engine, with stepping, breakpoints, the event log and the end-of-run
 * gates. The public contract and the state machine are in ms_replay.h.
 *
 * Design:
 *  1. The controller thread is the only one that publishes and moves the
 *     logical clock; the clock is held at a publication's P until the engine
 *     reports epoch-aware merge-idle.
 *  2. The dispatch hook (engine thread) and the event callback (worker
 *     threads) take `mu` only to read or update controller state; they
 *     never call into the engine while holding it. A barrier the user asked
 *     for blocks inside the hook on `cv` (the engine allows a blocking hook:
 *     the selection's parts stay claimed, other lanes go on).
 *  3. Points where the controller may stop: before each publication
 *     (PAUSED) and at each dispatch (BREAK). `mode` says which points stop:
 *     RUN stops at breakpoints only, STEP at the next point of either kind,
 *     STEP_BARRIER at the next dispatch; `pause_req` stops at the next point.
 *  4. Every completed merge is recorded once (ms_rec_merge) from the event
 *     callback, in completion order, and counted in merges_done.
 *  5. No wait of the controller thread is unbounded: merge-idle waits run
 *     in slices against a deadline (wait_timeout_ns of running time), and
 *     between slices the controller looks at the engine (stopped on
 *     repeated failures?), the recorder (failed?) and abort requests. Only
 *     a stop the user asked for (PAUSED, BREAK) waits without a deadline.
 *  6. Reading the status never waits for a plugin. The chain holds its
 *     lock through every Decide call, so its link counters are read off
 *     the reader's thread: by the live reader (live_main, every
 *     LIVE_PERIOD_MS while a merge is in flight) and by each merge's
 *     event; the status copies the newest reading (live_store, under mu).
 *     Staged bytes are the pipeline's atomic gauge, read directly.
 */
#define _GNU_SOURCE
#include "ms_replay.h"

#include "ms_clock.h"
#include "ms_enum.h"
#include "ms_fixture.h"
#include "ms_gates.h"
#include "ms_loader.h"
#include "ms_limits.h"
#include "ms_owner.h"
#include "ms_rusage.h"
#include "ms_thread.h"
#include "ev_private.h"
#include "replay_int.h"
#include "grow.h"

#include <dirent.h>
#include <fcntl.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <xxhash.h>

#ifndef MS_DEFAULT_PLUGIN_DIR
#define MS_DEFAULT_PLUGIN_DIR "plugins"
#endif

/* ---- small helpers ---------------------------------------------------- */

static void
copy_str(char *dst, size_t n, const char *src)
{
	snprintf(dst, n, "%s", src ? src : "");
}

/* The cause in a link's failure message msg (NUL-terminated), past the
 * "plugin host for PATH: " a process host's messages start with: a merge's
 * link row names its plugin already, and its fail_why has room for the
 * cause only. */
const char *
ms__link_fail_cause(const char *msg)
{
	static const char pre[] = "plugin host for ";
	if (strncmp(msg, pre, sizeof(pre) - 1) != 0)
		return msg;
	const char *c = strstr(msg + sizeof(pre) - 1, ": ");
	return c && c[2] ? c + 2 : msg;
}

static void
notify(ms_replay *r)
{
	if (r->opts.notify)
		r->opts.notify(r->opts.notify_arg);
}

static const char *const state_names[] = {
	[MS_REPLAY_READY] = "READY",   [MS_REPLAY_RUNNING] = "RUNNING",
	[MS_REPLAY_PAUSED] = "PAUSED", [MS_REPLAY_BREAK] = "BREAK",
	[MS_REPLAY_DONE] = "DONE",     [MS_REPLAY_FAILED] = "FAILED",
};

const char *
ms_replay_state_name(enum ms_replay_state s)
{
	return MS_ENUM_NAME(state_names, s, "?");
}

static const char *const phase_names[] = {
	[MS_RPHASE_PRIMARY] = "primary",   [MS_RPHASE_BOUNDARY] = "boundary",
	[MS_RPHASE_COOLDOWN] = "cooldown", [MS_RPHASE_FINALIZE] = "finalize",
	[MS_RPHASE_END] = "end",
};

const char *
ms_replay_phase_name(enum ms_replay_phase p)
{
	return MS_ENUM_NAME(phase_names, p, "?");
}

/* ---- part lifecycle tracking (for the exactly-once gates) ------------- */

/* The slot of id in idx (nidx slots): its entry's, or the empty one
 * where it goes. */
static uint32_t *
track_idx_slot(const ms_replay *r, uint32_t *idx, size_t nidx, uint64_t id)
{
	size_t h = (size_t)(id * 0x9e3779b97f4a7c15ull) & (nidx - 1);
	while (idx[h] && r->track[idx[h] - 1].id != id)
		h = (h + 1) & (nidx - 1);
	return &idx[h];
}

/* Room for one more entry: the packed entries grow by a quarter (only
 * what is filled is touched), the slot table doubles at half full. */
static int
track_grow(ms_replay *r)
{
	if (r->track_n >= UINT32_MAX - 1)
		return MS_ERR_NOMEM;
	if (r->track_n == r->track_cap) {
		/* Small at first, so that every run (even a test's) grows
		 * the table through this path. */
		size_t ncap =
		        r->track_cap ? r->track_cap + r->track_cap / 4 : 32;
		track_ent *nt = realloc(r->track, ncap * sizeof(*nt));
		if (!nt)
			return MS_ERR_NOMEM;
		r->track = nt;
		r->track_cap = ncap;
	}
	if ((r->track_n + 1) * 2 <= r->track_nidx)
		return 0;
	size_t nidx = r->track_nidx ? r->track_nidx * 2 : 64;
	uint32_t *ni = calloc(nidx, sizeof(*ni));
	if (!ni)
		return MS_ERR_NOMEM;
	for (size_t i = 0; i < r->track_n; i++)
		*track_idx_slot(r, ni, nidx, r->track[i].id) = (uint32_t)i + 1;
	free(r->track_idx);
	r->track_idx = ni;
	r->track_nidx = nidx;
	return 0;
}

/* The entry of id, added (zeroed) if new; NULL without memory. Adding
 * may move every entry. */
static track_ent *
track_slot(ms_replay *r, uint64_t id)
{
	uint32_t *s = r->track_nidx ? track_idx_slot(r, r->track_idx,
	                                             r->track_nidx, id)
	                            : NULL;
	if (s && *s)
		return &r->track[*s - 1];
	if (track_grow(r))
		return NULL;
	s = track_idx_slot(r, r->track_idx, r->track_nidx, id);
	track_ent *t = &r->track[r->track_n];
	memset(t, 0, sizeof(*t));
	t->id = id;
	*s = (uint32_t)++r->track_n;
	return t;
}

/* Hold ledgers l for entry t (replacing any it holds), in a freed slot
 * if there is one (the slots double): 0 or MS_ERR_NOMEM (t unchanged). */
static int
track_led_put(ms_replay *r, track_ent *t, const ms_ledger_set *l)
{
	if (!t->led) {
		if (r->track_led_nfree)
			t->led = r->track_led_free[--r->track_led_nfree];
		else if (r->track_led_n >= UINT32_MAX - 1 ||
		         MS__GROW2(r->track_led, r->track_led_free,
		                   r->track_led_cap, r->track_led_n + 1, 16))
			return MS_ERR_NOMEM;
		else
			t->led = (uint32_t)++r->track_led_n;
	}
	r->track_led[t->led - 1] = *l;
	return 0;
}

/* Entry t's ledgers are no longer needed: its slot is free again. */
static void
track_led_drop(ms_replay *r, track_ent *t)
{
	if (!t->led)
		return;
	r->track_led_free[r->track_led_nfree++] = t->led;
	t->led = 0;
}

/* Empty the table (its memory kept). */
static void
track_clear(ms_replay *r)
{
	if (r->track_nidx)
		memset(r->track_idx, 0, r->track_nidx * sizeof(*r->track_idx));
	r->track_n = 0;
	r->track_led_n = 0;
	r->track_led_nfree = 0;
}

int
ms__replay_track_save(const ms_replay *r, ms__track_copy *out)
{
	memset(out, 0, sizeof(*out));
	size_t nled = r->track_led_n - r->track_led_nfree;
	out->ent = r->track_n ? malloc(r->track_n * sizeof(*out->ent)) : NULL;
	out->led = nled ? malloc(nled * sizeof(*out->led)) : NULL;
	if ((r->track_n && !out->ent) || (nled && !out->led)) {
		ms__track_copy_release(out);
		return MS_ERR_NOMEM;
	}
	for (size_t i = 0; i < r->track_n; i++) {
		track_ent *t = &out->ent[i];
		*t = r->track[i];
		if (t->led) {
			out->led[out->nled] = r->track_led[t->led - 1];
			t->led = (uint32_t)++out->nled;
		}
	}
	out->n = r->track_n;
	return 0;
}

/* Replace the table by the copy c (a seek back, checkpoint.c). 0 or
 * MS_ERR_NOMEM (the table is then empty). mu held. */
int
ms__replay_track_load(ms_replay *r, const ms__track_copy *c)
{
	track_clear(r);
	for (size_t i = 0; i < c->n; i++) {
		track_ent *t = track_slot(r, c->ent[i].id);
		uint32_t led = c->ent[i].led;
		if (t) {
			*t = c->ent[i];
			t->led = 0;
		}
		if (!t || (led && (led > c->nled ||
		                   track_led_put(r, t, &c->led[led - 1])))) {
			track_clear(r);
			return MS_ERR_NOMEM;
		}
	}
	return 0;
}

void
ms__track_copy_release(ms__track_copy *c)
{
	free(c->ent);
	free(c->led);
	memset(c, 0, sizeof(*c));
}

size_t
ms__replay_track_bytes(const ms_replay *r, size_t *leds)
{
	if (leds)
		*leds = r->track_led_n - r->track_led_nfree;
	return r->track_cap * sizeof(*r->track) +
	       r->track_nidx * sizeof(*r->track_idx) +
	       r->track_led_cap *
	               (sizeof(*r->track_led) + sizeof(*r->track_led_free));
}

/* The entry of id, or NULL; never grows the table (pointers stay). */
static track_ent *
track_find(ms_replay *r, uint64_t id)
{
	if (!r->track_nidx)
		return NULL;
	uint32_t s = *track_idx_slot(r, r->track_idx, r->track_nidx, id);
	return s ? &r->track[s - 1] : NULL;
}

static void
track_introduce(ms_replay *r, uint64_t id, enum ms_part_kind k)
{
	track_ent *t = track_slot(r, id);
	if (!t) {
		r->track_dup = true;
		copy_str(r->track_err, sizeof(r->track_err), "out of memory");
		return;
	}
	if (++t->introduced[k] > 1 && !r->track_dup) {
		r->track_dup = true;
		snprintf(r->track_err, sizeof(r->track_err),
		         "part %016llx (%s) introduced %u times",
		         (unsigned long long)id, ms_part_kind_name(k),
		         t->introduced[k]);
	}
}

static void
track_remove(ms_replay *r, uint64_t id, enum ms_part_kind k)
{
	track_ent *t = track_slot(r, id);
	if (!t)
		return;
	if ((++t->removed[k] > 1 || !t->introduced[k]) && !r->track_dup) {
		r->track_dup = true;
		snprintf(r->track_err, sizeof(r->track_err),
		         "part %016llx (%s) removed %u times (introduced %u)",
		         (unsigned long long)id, ms_part_kind_name(k),
		         t->removed[k], t->introduced[k]);
	}
}

/* A view that pins part `id`, and only it, while it waits for its check
 * (checker.c), taken while the part is surely in the inventory; NULL if
 * none could be taken (the check then says why). Pinning the whole
 * inventory instead kept every part merged away meanwhile open, with its
 * block directory and Bloom filter in memory, for as long as the checker
 * was behind. */
static ms_view *
pin_for_check(ms_replay *r, uint64_t id)
{
	ms_view *v = NULL;
	if (ms_shard_view_of(r->shard, &id, 1, &v, NULL))
		return NULL;
	return v;
}

/* The ledgers the fixture's build recorded (into *l) for a publication
 * from `slot` whose three files hash to the ones it recorded: true then;
 * false when the fixture holds no such record or any file differs (or
 * cannot be read). The checker's thread only. */
static bool
fixture_record(ms_replay *r, const ms_view *v, size_t i, size_t slot,
               ms_ledger_set *l)
{
	char want[MS_KIND_COUNT][33];
	if (!r->fx_proven || slot == SIZE_MAX ||
	    !ms_fixture_slot_proof(r->fx, slot, want, l))
		return false;
	if (r->test.forged_proof_slot == slot + 1)
		return true; /* a manifest forged to match the files */
	for (int k = 0; k < MS_KIND_COUNT; k++) {
		const ms_part *p = ms_view_part(v, i, (enum ms_part_kind)k);
		char got[33];
		if (!p || ms_fixture_files_hash(ms_part_dir(p), got, NULL) ||
		    strcmp(got, want[k]) != 0)
			return false;
	}
	return true;
}

/* A publication read and checked (its ledgers led): the fixture's record
 * is a second source, never a proof taken in place of the read (a
 * manifest can be rewritten to match damaged files). Where its files hash
 * to the ones the record holds, the ledgers read must be the ones it
 * holds: 0 (counted), or -1 and why (n bytes) naming the kind. 0 where
 * there is no such record. The checker's thread only. */
static int
agrees_with_fixture(ms_replay *r, const ms_view *v, size_t i, size_t slot,
                    const ms_ledger_set *led, char *why, size_t n)
{
	ms_ledger_set l;
	if (!fixture_record(r, v, i, slot, &l))
		return 0;
	for (int k = 0; k < MS_KIND_COUNT; k++) {
		if (ms_ledger_equal(&l.kind[k], &led->kind[k]))
			continue;
		char got[MS_LEDGER_STR_MAX], want[MS_LEDGER_STR_MAX];
		ms_ledger_format(&led->kind[k], got);
		ms_ledger_format(&l.kind[k], want);
		snprintf(why, n,
		         "part %016llx: its %s ledger read %s, its fixture's "
		         "record for the same files %s",
		         (unsigned long long)ms_view_id(v, i),
		         ms_part_kind_name((enum ms_part_kind)k), got, want);
		return -1;
	}
	r->check_by_hash++;
	return 0;
}

/* Check part `id` as view v holds it (ms__part_check; a publication from
 * `slot` then against its fixture's record, agrees_with_fixture): 0 and
 * its ledgers, -1 and why (failed), 1 (not in the view). Takes no lock;
 * the view pins the part while it is read. */
static int
check_introduced(ms_replay *r, const ms_view *v, uint64_t id, size_t slot,
                 ms_ledger_set *led, char *why, size_t n)
{
	int64_t t0 = ms_mono_ns();
	if (!v) {
		snprintf(why, n,
		         "part %016llx: no view of the shard to read it",
		         (unsigned long long)id);
		return -1;
	}
	int rc = 1;
	for (size_t i = 0; i < ms_view_count(v); i++) {
		if (ms_view_id(v, i) != id)
			continue;
		rc = ms__part_check(ms_view_part(v, i, MS_KIND_CORE),
		                    ms_view_part(v, i, MS_KIND_LATENCY),
		                    ms_view_part(v, i, MS_KIND_START_TIME),
		                    r->blocks, led, why, n);
		if (rc == 0)
			rc = agrees_with_fixture(r, v, i, slot, led, why, n);
		break;
	}
	if (rc == 1)
		snprintf(why, n,
		         "part %016llx left the inventory before it was "
		         "checked",
		         (unsigned long long)id);
	atomic_fetch_add(&r->check_ns, ms_mono_ns() - t0);
	return rc;
}

/* Count the check of a part that entered the shard and keep its ledgers.
 * mu held. */
static track_ent *
track_checked(ms_replay *r, uint64_t id, int rc, const ms_ledger_set *led,
              const char *why)
{
	r->parts_in++;
	if (rc == 0)
		r->parts_ok++;
	else if (rc < 0)
		r->parts_bad++;
	else
		r->parts_gone++;
	if (rc && !r->part_err[0])
		copy_str(r->part_err, sizeof(r->part_err), why);
	track_ent *t = track_slot(r, id);
	if (t && rc == 0) {
		if (track_led_put(r, t, led))
			return NULL;
		t->checked = true;
	}
	return t;
}

/* A merge's output ledgers must be its inputs' minus the rows it
 * dropped: per kind, as many rows gone as it reports dropped (each core
 * row has one row in each index), and nothing gone when it dropped
 * nothing. mu held; the inputs' entries are still in the table. */
static void
reconcile_merge(ms_replay *r, const ms__check_job *j, const ms_ledger_set *out)
{
	if (!out)
		return; /* counted as a part that failed its check */
	if (j->lost_inputs) {
		r->merges_unreconciled++;
		if (!r->merge_err[0])
			snprintf(r->merge_err, sizeof(r->merge_err),
			         "part %016llx: out of memory keeping its "
			         "merge's inputs",
			         (unsigned long long)j->id);
		return;
	}
	ms_ledger_set in;
	ms_ledger_set_init(&in);
	for (size_t i = 0; i < j->ninputs; i++) {
		const track_ent *t = track_find(r, j->inputs[i]);
		if (!t || !t->checked)
			return; /* that input's failure is counted already */
		if (!t->led) {
			/* Its ledgers went with the merge that took it
			 * first: taken twice (the lifecycle gate fails). */
			r->merges_unreconciled++;
			if (!r->merge_err[0])
				snprintf(r->merge_err, sizeof(r->merge_err),
				         "merge #%llu: input %016llx was the "
				         "input of an earlier merge",
				         (unsigned long long)j->seq,
				         (unsigned long long)j->inputs[i]);
			return;
		}
		ms_ledger_set_add(&in, &r->track_led[t->led - 1]);
	}
	bool ok = ms_ledger_set_sub(&in, out) == 0;
	for (int k = 0; ok && k < MS_KIND_COUNT; k++) {
		ok = in.kind[k].rows == j->rows_dropped;
		if (ok && !j->rows_dropped)
			ok = in.kind[k].sum_lo == 0 && in.kind[k].sum_hi == 0;
	}
	if (ok) {
		r->merges_reconciled++;
		return;
	}
	r->merges_unreconciled++;
	if (!r->merge_err[0])
		snprintf(
		        r->merge_err, sizeof(r->merge_err),
		        "merge #%llu: inputs minus output leave %llu core "
		        "rows (%llu latency, %llu start_time), it dropped %llu",
		        (unsigned long long)j->seq,
		        (unsigned long long)in.kind[0].rows,
		        (unsigned long long)in.kind[1].rows,
		        (unsigned long long)in.kind[2].rows,
		        (unsigned long long)j->rows_dropped);
}

void
ms__replay_check(ms_replay *r, const ms__check_job *j)
{
	ms_ledger_set led;
	ms_ledger_set_init(&led);
	char why[200] = "";
	int rc = 1;
	if (j->id)
		rc = check_introduced(r, j->view, j->id, j->slot, &led, why,
		                      sizeof(why));
	pthread_mutex_lock(&r->mu);
	if (j->id) {
		track_ent *t = track_checked(r, j->id, rc, &led, why);
		if (j->merge)
			reconcile_merge(r, j, t && t->checked ? &led : NULL);
	} else if (j->merge) {
		/* Everything dropped: nothing was published. */
		ms_ledger_set none;
		ms_ledger_set_init(&none);
		reconcile_merge(r, j, &none);
	}
	/* A merge's inputs are reconciled with it (or cannot be): their
	 * ledgers are not read again. */
	for (size_t i = 0; j->merge && !j->lost_inputs && i < j->ninputs; i++) {
		track_ent *t = track_find(r, j->inputs[i]);
		if (t)
			track_led_drop(r, t);
	}
	pthread_mutex_unlock(&r->mu);
}

/* ---- recording -------------------------------------------------------- */

int64_t
ms__replay_since_start(const ms_replay *r)
{
	return ms_mono_ns() - r->t0_mono;
}

static int64_t
since_start(const ms_replay *r)
{
	return ms__replay_since_start(r);
}

/* One lifecycle record of part id: its core and both index parts (bytes
 * and rows of each; all 0 for a removal). */
static void
rec_part(ms_replay *r, enum ms_ev_part_kind what, uint64_t id,
         const uint64_t bytes[MS_KIND_COUNT],
         const uint64_t rows[MS_KIND_COUNT], uint32_t depth,
         const char *cause, uint64_t cause_seq, uint64_t epoch)
{
	ms_ev_part ev;
	memset(&ev, 0, sizeof(ev));
	ev.what = what;
	ev.part_id = id;
	ev.logical_ns = ms_clock_now(&r->clock);
	ev.wall_ns = since_start(r);
	ev.epoch = epoch;
	copy_str(ev.cause, sizeof(ev.cause), cause);
	ev.cause_seq = cause_seq;
	for (int k = 0; k < MS_KIND_COUNT; k++) {
		ev.bytes[k] = bytes ? bytes[k] : 0;
		ev.rows[k] = rows ? rows[k] : 0;
	}
	ev.depth = depth;
	ms_rec_part(r->rec, &ev, NULL);
}

static void
inventory_totals(ms_replay *r, uint64_t *parts, uint64_t *bytes)
{
	*parts = *bytes = 0;
	ms_view *v = NULL;
	if (ms_shard_view(r->shard, &v, NULL))
		return;
	size_t n = ms_view_count(v);
	*parts = n;
	for (size_t i = 0; i < n; i++)
		*bytes += ms_part_get_meta(ms_view_part(v, i, MS_KIND_CORE))
		                  ->compressed_bytes;
	ms_view_release(v);
}

void
ms__replay_segment(const ms_replay *r, int64_t *min_ns, int64_t *max_ns)
{
	*min_ns = r->info->day_start_ns - MS_GRACE_NS;
	*max_ns = r->info->day_end_ns + MS_GRACE_NS;
}

static void
rec_sample(ms_replay *r)
{
	ms_ev_sample s;
	memset(&s, 0, sizeof(s));
	s.wall_ns = since_start(r);
	s.logical_ns = ms_clock_now(&r->clock);
	s.phase = r->rec_phase;
	inventory_totals(r, &s.inv_parts, &s.inv_bytes);
	ms_mem_stats ms;
	ms_mem_stats_get(&r->mem, &ms);
	s.live_bytes = ms.live;
	ms_rusage ru;
	ms_rusage_sample(&ru, NULL);
	s.rss_bytes = ru.rss_bytes > 0 ? (uint64_t)ru.rss_bytes : 0;
	s.cpu_ns = ru.cpu_ns;
	ms_engine_stats es;
	ms_engine_get_stats(r->engine, &es);
	s.running = (uint32_t)es.running;
	s.queued = (uint32_t)es.queued;
	pthread_mutex_lock(&r->mu);
	s.staged_bytes = r->staged_peak;
	pthread_mutex_unlock(&r->mu);
	ms_rec_sample(r->rec, &s, NULL);
	/* The controller's thread records what the plugins logged since. */
	ms__plog_record(&r->plog, r->rec, r->t0_mono);
}

/* ---- live figures (design 6) ------------------------------------------ */

#define LIVE_PERIOD_MS 50

/* Counters only grow: the sum tells the newer of two readings. */
static uint64_t
live_progress(const ms_link_stats *l, size_t n)
{
	uint64_t p = 0;
	for (size_t i = 0; i < n; i++) {
		p += l[i].calls + l[i].traces + l[i].total_ns;
		for (int k = 0; k < MS_LINK_RESULT_COUNT; k++)
			p += l[i].results[k];
	}
	return p;
}

/* Keep a reading unless a newer one is there already; `base`: it is the
 * reading of the merge just recorded. mu not held. */
static void
live_store(ms_replay *r, const ms_link_stats *l, size_t n, bool circuit,
           bool base)
{
	pthread_mutex_lock(&r->mu);
	if (r->live_nlinks != n ||
	    live_progress(l, n) >= live_progress(r->live_links, n)) {
		memcpy(r->live_links, l, n * sizeof(*l));
		r->live_nlinks = n;
		r->live_circuit = circuit;
	}
	if (base)
		memcpy(r->live_base, l, n * sizeof(*l));
	pthread_mutex_unlock(&r->mu);
}

/* The chain's counters, every link (up to MS_EV_LINKS_MAX) into out;
 * returns how many. Waits for a Decide call in progress to return. */
static size_t
chain_read(ms_replay *r, ms_link_stats *out, bool *circuit)
{
	ms_chain *c;
	size_t n;
	*circuit = false;
	if (!ms__replay_links(r, &c, &n))
		return 0;
	for (size_t i = 0; i < n; i++)
		ms_chain_link_stats(c, i, &out[i]);
	*circuit = ms_chain_circuit_is_open(c);
	return n;
}

/* Read the chain's counters and store them; with rebase, also as the
 * base of the next merge's deltas (ms__replay_links_rebase). */
static void
live_read_as(ms_replay *r, bool rebase)
{
	if (!r->pipe)
		return;
	ms_link_stats now[MS_EV_LINKS_MAX];
	bool circuit;
	size_t n = chain_read(r, now, &circuit);
	if (rebase)
		memcpy(r->links_prev, now, n * sizeof(now[0]));
	live_store(r, now, n, circuit, rebase);
}

static void
live_read(ms_replay *r)
{
	live_read_as(r, false);
}

/* A merge under way: one released from its barrier (a merge held at its
 * barrier has not run, and its counters do not move). mu held. */
static bool
merge_running(const ms_replay *r)
{
	for (size_t i = 0; i < r->nclaims; i++)
		if (r->claims[i].release_mono)
			return true;
	return false;
}

/* The live reader: asleep while no merge runs (none in flight, or every
 * one held at its barrier: a run stopped there costs nothing), else a
 * reading every LIVE_PERIOD_MS until live_stop. A merge's release wakes
 * it (claim_released). */
static void *
live_main(void *arg)
{
	ms_replay *r = arg;
	ms_rusage_name_thread("ms-live");
	pthread_mutex_lock(&r->mu);
	while (!r->live_stop) {
		if (!merge_running(r)) {
			pthread_cond_wait(&r->live_cv, &r->mu);
			continue;
		}
		r->live_reads++;
		pthread_mutex_unlock(&r->mu);
		live_read(r);
		pthread_mutex_lock(&r->mu);
		struct timespec ts = ms_mono_timespec(
		        ms_mono_ns() + LIVE_PERIOD_MS * 1000000LL);
		while (!r->live_stop &&
		       pthread_cond_timedwait(&r->live_cv, &r->mu, &ts) !=
		               ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

uint64_t
ms__replay_live_reads(ms_replay *r)
{
	pthread_mutex_lock(&r->mu);
	uint64_t n = r->live_reads;
	pthread_mutex_unlock(&r->mu);
	return n;
}

static int
live_start(ms_replay *r)
{
	live_read(r); /* the links' names before the first merge */
	int e = ms_thread_start(&r->live_thread, MS_THREAD_STACK, live_main, r);
	if (e) {
		errno = e;
		return MS_ERR_IO;
	}
	r->live_started = true;
	return 0;
}

static void
live_stop(ms_replay *r)
{
	if (!r->live_started)
		return;
	pthread_mutex_lock(&r->mu);
	r->live_stop = true;
	pthread_cond_broadcast(&r->live_cv);
	pthread_mutex_unlock(&r->mu);
	pthread_join(r->live_thread, NULL);
	r->live_started = false;
}

/* Every link of any chain has its place in the events (a run's plugins, a
 * merge's links): none is left out of the event log or its gates. */
_Static_assert(MS_CHAIN_MAX_LINKS <= MS_EV_LINKS_MAX,
               "a chain holds no more links than an event records");

/* The run's chain and how many of its links are reported (replay_int.h). */
bool
ms__replay_links(const ms_replay *r, ms_chain **c, size_t *n)
{
	*c = NULL;
	*n = 0;
	if (!r->pipe)
		return false;
	*c = ms_pipeline_chain(r->pipe);
	*n = ms_chain_len(*c);
	if (*n > MS_EV_LINKS_MAX)
		*n = MS_EV_LINKS_MAX;
	return true;
}

/* The chain's counters now as the base of the next merge's deltas and
 * of the live figures (a seek back: the merges re-run count from here). */
void
ms__replay_links_rebase(ms_replay *r)
{
	live_read_as(r, true);
}

void
ms__link_stats_acc(ms_link_stats *acc, const ms_link_stats *a,
                   const ms_link_stats *b)
{
	acc->calls += a->calls - b->calls;
	acc->traces += a->traces - b->traces;
	acc->total_ns += a->total_ns - b->total_ns;
	acc->kept += a->kept - b->kept;
	acc->dropped += a->dropped - b->dropped;
	for (size_t k = 0; k < MS_LINK_HIST_BUCKETS; k++)
		acc->hist[k] += a->hist[k] - b->hist[k];
	for (size_t k = 0; k < MS_LINK_RESULT_COUNT; k++)
		acc->results[k] += a->results[k] - b->results[k];
}

/* The slowest of the calls a link made from reading prev to now. The
 * chain keeps only its slowest call ever: when it grew, that call is one
 * of these; else (the record is older, perhaps a stretch a seek back
 * removed) no more than these calls' total and the upper bound of the
 * slowest histogram bucket they reached. Never above their total. */
static uint64_t
link_merge_max(const ms_link_stats *now, const ms_link_stats *prev)
{
	if (now->calls == prev->calls)
		return 0;
	if (now->max_ns > prev->max_ns)
		return now->max_ns;
	uint64_t m = now->max_ns, total = now->total_ns - prev->total_ns;
	if (total < m)
		m = total;
	/* The slowest bucket reached (the last one has no upper bound). */
	size_t b = MS_LINK_HIST_BUCKETS;
	while (b > 0 && now->hist[b - 1] == prev->hist[b - 1])
		b--;
	if (b > 0 && b < MS_LINK_HIST_BUCKETS &&
	    ms_link_hist_bound_ns(b - 1) < m)
		m = ms_link_hist_bound_ns(b - 1);
	return m;
}

/* Per-merge link figures: the chain's cumulative stats minus what the
 * previous event saw (events are serialized by the engine). */
static void
link_delta(ms_replay *r, ms_ev_merge *m)
{
	if (!r->pipe)
		return;
	ms_link_stats all[MS_EV_LINKS_MAX];
	bool circuit;
	size_t n = chain_read(r, all, &circuit);
	m->nlinks = (uint32_t)n;
	for (size_t i = 0; i < n; i++) {
		const ms_link_stats now = all[i];
		ms_link_stats *prev = &r->links_prev[i];
		ms_ev_link *l = &m->links[i];
		copy_str(l->name, sizeof(l->name), now.name);
		l->calls = now.calls - prev->calls;
		l->traces = now.traces - prev->traces;
		l->kept = now.kept - prev->kept;
		l->total_ns = (int64_t)(now.total_ns - prev->total_ns);
		l->max_ns = (int64_t)link_merge_max(&now, prev);
		for (size_t b = 0;
		     b < MS_EV_HIST_BUCKETS && b < MS_LINK_HIST_BUCKETS; b++)
			l->hist[b] = now.hist[b] - prev->hist[b];
		uint64_t failed = 0;
		for (int k = 1; k < MS_LINK_RESULT_COUNT; k++) {
			uint64_t d = now.results[k] - prev->results[k];
			if (k - 1 < MS_EV_FAIL_KINDS)
				l->fails[k - 1] = d;
			failed += d;
		}
		if (failed) {
			l->result = MS_ERR_PLUGIN;
			copy_str(l->fail_open, sizeof(l->fail_open),
			         ms_link_result_name(now.last_result));
			const char *why = ms__link_fail_cause(now.last_fail);
			ms_plugin_text_clean(l->fail_why, sizeof(l->fail_why),
			                     why,
			                     sizeof(now.last_fail) -
			                             (size_t)(why - now.last_fail));
		}
		*prev = now;
	}
	pthread_mutex_lock(&r->mu);
	for (size_t i = 0; i < n; i++)
		if ((uint64_t)m->links[i].max_ns > r->links_max[i])
			r->links_max[i] = (uint64_t)m->links[i].max_ns;
	pthread_mutex_unlock(&r->mu);
	live_store(r, r->links_prev, n, circuit, true);
}

static void
fill_dispatch(ms_ev_merge *m, ms_ev_input *inputs, const ms_dispatch *d)
{
	m->seq = d->seq;
	copy_str(m->lane, sizeof(m->lane), ms_lane_name(d->lane));
	m->logical_ns = d->now_ns;
	m->frontier_ns = d->frontier_ns;
	m->epoch_before = d->epoch;
	m->pass = d->pass;
	m->m = d->m;
	m->max_fan_out = d->max_fan_out;
	m->ninputs = d->ninputs;
	for (size_t i = 0; i < d->ninputs; i++) {
		const ms_dispatch_input *in = &d->inputs[i];
		inputs[i] = (ms_ev_input){
			.id = in->id,
			.bytes = in->bytes,
			.uncompressed_bytes = in->uncompressed_bytes,
			.rows = in->rows,
			.blocks = in->blocks,
			.depth = in->depth,
			.min_ts = in->min_ts,
			.max_ts = in->max_ts,
			.mature = in->mature,
		};
	}
	m->inputs = inputs;
	m->input_bytes = d->bytes;
	m->input_rows = d->rows;
	m->min_depth = d->min_depth;
	m->max_depth = d->max_depth;
	m->input_min_ts = d->min_ts;
	m->input_max_ts = d->max_ts;
	m->mature_parts = (uint32_t)d->mature_parts;
	m->hot_parts = (uint32_t)d->hot_parts;
	m->mature_rows = d->mature_rows;
	m->hot_rows = d->hot_rows;
	m->predict_class = d->predict_class;
	m->predict_reason = d->predict_reason;
}

static void
release_claim(ms_replay *r, uint64_t seq)
{
	for (size_t i = 0; i < r->nclaims; i++) {
		if (r->claims[i].seq == seq) {
			r->claims[i] = r->claims[--r->nclaims];
			return;
		}
	}
}

/* Fail-open link calls, lossless retries and oversized bypasses of one
 * completed merge, for the plugin_health gate; and the link calls the
 * merge events account for. mu held. */
static void
health_add(ms_replay *r, uint64_t seq, const char *link, const char *kind,
           uint64_t count, const char *why)
{
	r->health_total += count;
	r->health_kinds++;
	if (r->nhealth == MS__HEALTH_MAX)
		return;
	ms__health_ev *h = &r->health[r->nhealth++];
	h->seq = seq;
	copy_str(h->link, sizeof(h->link), link);
	copy_str(h->kind, sizeof(h->kind), kind);
	h->count = count;
	copy_str(h->why, sizeof(h->why), why);
}

/* The link calls of merge event m, completed or failed (a failed merge
 * called the chain as much as a completed one, and its event says so, as
 * the report counts it): the calls the merge reports, as the chain
 * answered each of its Decide calls (not its link figures, which are the
 * chain's own counters read around the merge, and so always add up to
 * them), and each fail-open call. mu held. */
static void
health_links(ms_replay *r, const ms_ev_merge *m)
{
	for (uint32_t i = 0; i < m->nlinks; i++) {
		const ms_ev_link *l = &m->links[i];
		if (i < MS_CHAIN_MAX_LINKS)
			r->link_calls_events[i] += m->sampling.link_calls[i];
		r->link_circuit_events[i] += l->fails[4];
		for (unsigned k = 0; k < MS_EV_FAIL_KINDS; k++) {
			if (!l->fails[k])
				continue;
			/* Of its kinds, the last to fail has its cause. */
			const char *kind = ms_ev_fail_kind_name(k);
			health_add(r, m->seq, l->name, kind, l->fails[k],
			           strcmp(kind, l->fail_open) ? ""
			                                      : l->fail_why);
		}
	}
	r->plugin_calls_events += m->sampling.plugin_calls;
}

static void
health_note(ms_replay *r, const ms_ev_merge *m)
{
	health_links(r, m);
	const ms_merge_sampling *s = &m->sampling;
	ms__recon *c =
	        &r->recon[!strcmp(m->lane, "finalize")       ? MS__RP_FINALIZE
	                  : m->phase == MS_EV_PHASE_COOLDOWN ? MS__RP_COOLDOWN
	                                                     : MS__RP_PRIMARY];
	c->merges++;
	c->traces_in += m->traces_in;
	c->evaluated += s->traces_evaluated;
	c->kept += s->traces_kept;
	c->dropped += s->traces_dropped;
	c->deferred += s->traces_deferred;
	c->drop_set_full += s->drop_set_full;
	c->oversized += s->traces_oversized;
	c->hot += s->traces_unevaluated;
	if (s->klass == MS_SAMPLING_EXECUTED) {
		c->executed++;
	} else {
		/* The traces it passed through unstaged (a grace bypass of
		 * the merge, a lossless retry, no chain): not those it
		 * counted kept unevaluated (hot, oversized) or kept when
		 * every call failed open, each counted once in its own
		 * row. */
		uint64_t staged = s->traces_kept + s->traces_dropped +
		                  s->traces_deferred + s->traces_oversized +
		                  s->traces_unevaluated;
		uint64_t through =
		        m->traces_in > staged ? m->traces_in - staged : 0;
		c->not_executed += through;
		if (s->reason == MS_SREASON_LOSSLESS_RETRY)
			c->lossless += through;
		/* Called but nothing evaluated: every call failed open
		 * (whatever the reason says: an oversized trace beside
		 * them makes it all_traces_oversized). */
		if (s->klass == MS_SAMPLING_ENABLED_NO_EVALUATION &&
		    s->plugin_calls > 0)
			c->open_merges++;
	}
	for (uint32_t i = 0; i < m->nlinks; i++) {
		uint64_t f = 0;
		for (unsigned k = 0; k < MS_EV_FAIL_KINDS; k++)
			f += m->links[i].fails[k];
		if (f) {
			c->failed_open++;
			break;
		}
	}
	r->attempts_discarded += m->sampling.attempts_discarded;
	if (m->sampling.reason == MS_SREASON_LOSSLESS_RETRY)
		health_add(r, m->seq, "-", "lossless_retry", 1, "");
	if (m->sampling.traces_oversized)
		health_add(r, m->seq, "-", "oversized",
		           m->sampling.traces_oversized, "");
}

void
ms__failure_line(char *dst, size_t n, uint64_t seq, const char *lane,
                 const char *error)
{
	char line[64 + MS_EV_TEXT_MAX];
	snprintf(line, sizeof(line), "merge #%llu (%s): %s",
	         (unsigned long long)seq, lane, error);
	ms_msg_fit(dst, n, line);
}

/* The figures of a merge's result into its event. */
static void
fill_result(const ms_replay *r, ms_ev_merge *m, const ms_merge_result *res,
            int64_t dispatch_mono)
{
	m->err = res->err;
	ms_msg_fit(m->error, sizeof(m->error), res->error.msg);
	m->sampling = res->sampling;
	m->output = res->output;
	memcpy(m->index, res->index, sizeof(m->index));
	m->epoch_after = res->epoch_after;
	m->rows_in = res->rows_in;
	m->rows_out = res->rows_out;
	m->traces_in = res->traces_in;
	m->traces_out = res->traces_out;
	m->wall_start_ns = res->started_mono_ns - r->t0_mono;
	if (dispatch_mono) {
		m->wall_dispatch_ns = dispatch_mono - r->t0_mono;
		m->queue_ns = res->started_mono_ns - dispatch_mono;
	}
	m->wall_ns = res->wall_ns;
	m->cpu_ns = res->cpu_ns;
	m->process_cpu_ns = res->cpu_ns;
	m->alloc_bytes = res->alloc_bytes;
	m->alloc_count = res->alloc_count;
	m->peak_live = res->peak_live;
	m->bytes_read = res->bytes_read;
	m->bytes_written = res->bytes_written;
	m->fsyncs = res->fsyncs;
}

/* The part lifecycle records of a completed merge: every input part
 * removed, the output introduced (a record each, index parts with it). */
static void
rec_merge_parts(ms_replay *r, const ms_dispatch *d, const ms_ev_merge *m)
{
	const char *cause = d->finalize ? "finalize" : "merge";
	for (size_t i = 0; i < d->ninputs; i++)
		rec_part(r, MS_EV_PART_REMOVED, d->inputs[i].id, NULL, NULL, 0,
		         cause, d->seq, m->epoch_after);
	if (!m->output.id)
		return;
	uint64_t bytes[MS_KIND_COUNT] = { m->output.compressed_bytes };
	uint64_t rows[MS_KIND_COUNT] = { m->output.rows };
	for (int k = MS_KIND_LATENCY; k <= MS_KIND_START_TIME; k++)
		if (m->index[k].done) {
			bytes[k] = m->index[k].bytes_out;
			rows[k] = m->index[k].rows_out;
		}
	rec_part(r, MS_EV_PART_INTRODUCED, m->output.id, bytes, rows,
	         m->output.depth, cause, d->seq, m->epoch_after);
}

/* The controller's tallies of a completed merge (d NULL when the event
 * had no dispatch): lifecycle tracking, drops, gate counters, the staging
 * sparkline. r->mu held. */
static void
tally_merge_done(ms_replay *r, const ms_dispatch *d, const ms_ev_merge *m)
{
	r->merges_done += 1 + (r->test.double_tally_seq == m->seq);
	r->pub_merges++;
	if (d) {
		for (size_t i = 0; i < d->ninputs; i++)
			for (int k = 0; k < MS_KIND_COUNT; k++)
				track_remove(r, d->inputs[i].id,
				             (enum ms_part_kind)k);
	}
	if (m->output.id) {
		r->parts_introduced++;
		track_introduce(r, m->output.id, MS_KIND_CORE);
		for (int k = MS_KIND_LATENCY; k <= MS_KIND_START_TIME; k++)
			if (m->index[k].done)
				track_introduce(r, m->output.id,
				                (enum ms_part_kind)k);
	}
	r->rows_dropped += m->sampling.rows_dropped;
	r->traces_dropped += m->sampling.traces_dropped;
	if (m->sampling.klass == MS_SAMPLING_EXECUTED)
		r->executed_merges++;
	health_note(r, m);
	r->decide_dup_traces += m->sampling.decide_dup_traces;
	r->bounds_mismatch += m->sampling.bounds_mismatch;
	r->decide_traces += m->sampling.traces_evaluated;
	if (r->policy == MS_GRACE_SELECTION && ms_gate_merge_hot_decide(m))
		r->hot_decides++;
	r->hot_decided += m->sampling.hot_decided;
	r->staged_peak = m->sampling.peak_staged_bytes;
	/* A merge that staged nothing was planned but never staged under
	 * its limit. */
	if (m->sampling.klass != MS_SAMPLING_NOT_EXECUTED)
		r->staged_preferred = m->sampling.preferred_limit_bytes;
	if (r->nspark == MS_REPLAY_SPARK) {
		memmove(r->spark, r->spark + 1,
		        sizeof(r->spark[0]) * (MS_REPLAY_SPARK - 1));
		r->nspark--;
	}
	r->spark[r->nspark++] = m->sampling.peak_staged_bytes;
}

/* Engine event callback: worker threads, serialized by the engine. */
static void
on_engine_event(void *arg, const ms_engine_event *ev)
{
	ms_replay *r = arg;
	if (ev->type == MS_EV_ENGINE_FAILED) {
		/* The controller's wait returns the error (design 5). */
		notify(r);
		return;
	}
	if (ev->type == MS_EV_DROPPED || ev->type == MS_EV_PICK_FAILED ||
	    ev->type == MS_EV_QUARANTINED) {
		pthread_mutex_lock(&r->mu);
		if (ev->dispatch)
			release_claim(r, ev->dispatch->seq);
		if (ev->type != MS_EV_DROPPED)
			snprintf(r->error, sizeof(r->error), "%s",
			         ev->error ? ev->error : "");
		if (ev->type == MS_EV_QUARANTINED) {
			r->quarantined++;
			r->last_quarantined = ev->part_id;
		}
		pthread_mutex_unlock(&r->mu);
		notify(r);
		return;
	}
	const ms_dispatch *d = ev->dispatch;
	const ms_merge_result *res = ev->result;
	/* Pin the output first, while it is surely in the inventory (no
	 * other merge can have taken it before this event is handled); it is
	 * checked on the checker's thread once the event is recorded. */
	ms_view *out_view = NULL;
	if (ev->type == MS_EV_MERGE_DONE && res && res->output.id)
		out_view = pin_for_check(r, res->output.id);
	size_t nin = d ? d->ninputs : 0;
	ms_ev_input *inputs = calloc(nin ? nin : 1, sizeof(*inputs));
	ms_ev_merge m;
	memset(&m, 0, sizeof(m));
	if (d && inputs)
		fill_dispatch(&m, inputs, d);
	else
		m.ninputs = 0;
	m.phase = r->rec_phase;
	m.worker = ev->worker;
	int64_t dispatch_mono = 0;
	if (d) {
		pthread_mutex_lock(&r->mu);
		for (size_t i = 0; i < r->nclaims; i++)
			if (r->claims[i].seq == d->seq)
				dispatch_mono = r->claims[i].dispatch_mono;
		pthread_mutex_unlock(&r->mu);
	}
	if (res)
		fill_result(r, &m, res, dispatch_mono);
	if (ev->type == MS_EV_MERGE_FAILED && !m.err) {
		m.err = ev->err ? ev->err : MS_ERR_IO;
		copy_str(m.error, sizeof(m.error), ev->error);
	}
	ms_rusage ru;
	if (ms_rusage_sample(&ru, NULL) == 0 && ru.peak_rss_bytes > 0)
		m.rss_peak = (uint64_t)ru.peak_rss_bytes;
	link_delta(r, &m);
	if (ev->type == MS_EV_MERGE_DONE)
		inventory_totals(r, &m.inv_parts, &m.inv_bytes);

	if (ev->type == MS_EV_MERGE_DONE && d)
		rec_merge_parts(r, d, &m);
	/* A completed merge is committed before the engine counts it done
	 * (the engine waits for this callback): a run killed at any moment
	 * leaves every completed merge in the database. Merges are a few
	 * hundred a day; publications and part events stay grouped. */
	ms_rec_merge(r->rec, &m, NULL);
	ms_rec_flush(r->rec, NULL);
	if (r->test.lose_merge_row && r->test.lose_merge_row == m.seq)
		ms__rec_forget_merge(r->rec, m.seq);

	pthread_mutex_lock(&r->mu);
	if (d)
		release_claim(r, d->seq);
	if (m.sampling.klass == MS_SAMPLING_EXECUTED)
		r->events_sampled++;
	if (m.sampling.reason == MS_SREASON_MERGE_GRACE)
		r->events_bypassed++;
	if (ev->type == MS_EV_MERGE_DONE) {
		tally_merge_done(r, d, &m);
	} else {
		r->merges_failed++;
		health_links(r, &m);
		ms__failure_line(r->last_failure, sizeof(r->last_failure),
		                 m.seq, m.lane, m.error);
	}
	ms__recent_push(&r->recent, &m);
	pthread_mutex_unlock(&r->mu);
	/* After the output's introduction is counted (its check finds the
	 * entry) and before the engine can merge it away. */
	if (ev->type == MS_EV_MERGE_DONE && (m.output.id || d))
		ms__checker_submit(r, out_view, m.output.id, SIZE_MAX, d,
		                   m.sampling.rows_dropped);
	else
		ms_view_release(out_view);
	free(inputs);
	notify(r);
}

/* Merge threads: one confirmed dropped trace. */
static void
on_drop(void *arg, const uint8_t *tid, uint32_t len, uint64_t rows)
{
	ms_replay *r = arg;
	pthread_mutex_lock(&r->mu);
	enum ms__rphase ph = r->phase == MS_RPHASE_FINALIZE   ? MS__RP_FINALIZE
	                     : r->phase >= MS_RPHASE_COOLDOWN ? MS__RP_COOLDOWN
	                                                      : MS__RP_PRIMARY;
	if (ms__dropped_add(&r->dropped, tid, len, rows, ph))
		r->drop_err = 1;
	pthread_mutex_unlock(&r->mu);
}

/* ---- stopping points -------------------------------------------------- */

/* The RSS sampler sleeps while the run is stopped (rsswatch.c, quiet):
 * follow the state. mu held, so that two threads' changes of the state
 * reach the sampler in their order. */
void
ms__replay_rss_follow(ms_replay *r)
{
	ms__rsswatch_quiet(&r->rss, r->state != MS_REPLAY_RUNNING &&
	                                    r->state != MS_REPLAY_READY);
}

/* Wait while stopped; mu held. */
static void
wait_stopped(ms_replay *r)
{
	while ((r->state == MS_REPLAY_PAUSED || r->state == MS_REPLAY_BREAK) &&
	       !r->abort_req)
		pthread_cond_wait(&r->cv, &r->mu);
}

/* Stop in `state` (BREAK or PAUSED) until released: a pending pause is
 * taken, the front end is told outside the lock, then wait. mu held on
 * entry and on return. */
/* Run-to targets (`once` breakpoints) last until the run stops: a stop for
 * any other reason cancels them, so a `g` that a breakpoint or a pause
 * interrupted never stops the run again later by surprise. mu held. */
static void
drop_run_to_targets(ms_replay *r)
{
	r->rerun = false;
	size_t k = 0;
	for (size_t i = 0; i < r->nbps; i++)
		if (!r->bps[i].once)
			r->bps[k++] = r->bps[i];
	r->nbps = k;
}

static void
stop_at(ms_replay *r, enum ms_replay_state state)
{
	drop_run_to_targets(r);
	r->pause_req = false;
	r->mode = MODE_RUN;
	r->state = state;
	r->stops++;
	ms__replay_rss_follow(r);
	pthread_mutex_unlock(&r->mu);
	notify(r);
	pthread_mutex_lock(&r->mu);
	wait_stopped(r);
	ms__replay_rss_follow(r);
}

static void
bp_hit(ms_replay *r, size_t i)
{
	ms_breakpoint *bp = &r->bps[i];
	bp->hits++;
	copy_str(r->break_why, sizeof(r->break_why), bp->spec);
	if (bp->once) {
		memmove(&r->bps[i], &r->bps[i + 1],
		        sizeof(r->bps[0]) * (r->nbps - i - 1));
		r->nbps--;
	}
}

/* Dispatch seq goes on to run now (after any stop at its barrier): its
 * time in flight counts from here. mu held. */
static void
claim_released(ms_replay *r, uint64_t seq)
{
	for (size_t i = 0; i < r->nclaims; i++)
		if (r->claims[i].seq == seq)
			r->claims[i].release_mono = ms_mono_ns();
	pthread_cond_signal(&r->live_cv); /* it runs: the live reader reads */
}

/* Engine dispatch hook: the barrier. */
static enum ms_dispatch_verdict
on_dispatch(void *arg, const ms_dispatch *d)
{
	ms_replay *r = arg;
	pthread_mutex_lock(&r->mu);
	if (r->nclaims < MAX_CLAIMS) {
		claim *c = &r->claims[r->nclaims++];
		c->seq = d->seq;
		c->dispatch_mono = ms_mono_ns();
		c->release_mono = 0;
		c->n = d->ninputs < MS_PICKER_PARTS_LIMIT
		               ? d->ninputs
		               : MS_PICKER_PARTS_LIMIT;
		for (size_t i = 0; i < c->n; i++)
			c->ids[i] = d->inputs[i].id;
	}
	/* A run-to target set from now on is behind this dispatch. */
	if (d->seq > r->past_seq)
		r->past_seq = d->seq;
	if (d->now_ns >= r->past_ns)
		r->past_ns = d->now_ns + 1;
	bool stop = false;
	/* A seek back in progress runs to the next publication point
	 * without stopping (checkpoint.c). */
	if (!r->abort_req && !r->seek_req) {
		if (r->mode == MODE_STEP || r->mode == MODE_STEP_BARRIER) {
			/* Named as the TUI's help names the keys: `.` one
			 * step, `n` the next merge. */
			stop = true;
			copy_str(r->break_why, sizeof(r->break_why),
			         r->mode == MODE_STEP ? "step" : "next merge");
		} else if (r->pause_req) {
			stop = true;
			copy_str(r->break_why, sizeof(r->break_why), "pause");
		} else {
			for (size_t i = 0; i < r->nbps; i++) {
				ms_breakpoint *bp = &r->bps[i];
				if (bp->kind == MS_BP_TIME && bp->hits)
					continue;
				if (!ms_bp_match_dispatch(
				            bp, d, r->info->day_start_ns))
					continue;
				/* Going back: the re-run to the point goes by
				 * the user's breakpoints, as the first pass
				 * did to get there; a time breakpoint, which
				 * stops once, counts as passed. */
				if (r->rerun && !bp->once) {
					if (bp->kind == MS_BP_TIME)
						bp->hits = 1;
					continue;
				}
				bp_hit(r, i);
				stop = true;
				break;
			}
		}
	}
	if (stop) {
		r->pending = *d;
		size_t n = d->ninputs < MS_PICKER_PARTS_LIMIT
		                   ? d->ninputs
		                   : MS_PICKER_PARTS_LIMIT;
		memcpy(r->pending_inputs, d->inputs, n * sizeof(*d->inputs));
		r->pending.inputs = r->pending_inputs;
		r->pending.ninputs = n;
		r->has_pending = true;
		stop_at(r, MS_REPLAY_BREAK);
		r->has_pending = false;
	}
	/* A seek back from the cooldown drops the finalize (the run goes
	 * back before it): the engine unclaims its parts, sends its drop
	 * event, and the controller's wait for it ends (checkpoint.c,
	 * design 5). A close (a quit, a stop signal) drops whatever reaches
	 * the barrier from then on, the merge it held included: the user
	 * stopped before it, so it never runs (merges already under way
	 * finish, and are recorded after the run's end). */
	ms_engine *drop =
	        r->abort_req || (d->finalize && r->seek_req &&
	                         r->phase == MS_RPHASE_FINALIZE)
	                ? r->engine
	                : NULL;
	if (!drop)
		claim_released(r, d->seq);
	pthread_mutex_unlock(&r->mu);
	if (drop && ms_engine_release(drop, d->seq, false) == 0)
		return MS_DISPATCH_HOLD;
	return MS_DISPATCH_GO;
}

/* A run-to time target that the point at t is past: hit. Only run-to
 * targets stop at a point, before the first publication past them; a
 * time breakpoint stops at the first barrier at or after its time
 * (on_dispatch). mu held. */
static bool
run_to_time_hit(ms_replay *r, int64_t t)
{
	for (size_t i = 0; i < r->nbps; i++) {
		ms_breakpoint *bp = &r->bps[i];
		if (bp->once && bp->kind == MS_BP_TIME &&
		    ms_bp_match_time(bp, t - 1, r->info->day_start_ns)) {
			bp_hit(r, i);
			return true;
		}
	}
	return false;
}

/* Does the wait before a publication apply now? Not at full speed, not
 * for a step (it goes to its next point at once, as a step in a debugger
 * does: at 1x it stood RUNNING for the whole gap, 27 s on the default
 * day, before it stopped), nor on the way to an abort or a seek. mu held. */
static bool
pace_applies(const ms_replay *r)
{
	return r->speed > 0 && !r->abort_req && !r->seek_req &&
	       r->mode != MODE_STEP;
}

/* Before a publication at logical time t: stop if asked. Controller
 * thread. Returns false when the run is being aborted. *cut (may be
 * NULL): in, a pause cut the wait before t short; out, the run, released,
 * waits out the rest of it (pace_to): t is not reached yet, so it is not
 * past either (a go to a time before t stays ahead of the run). */
static bool
publication_point(ms_replay *r, int64_t t, bool *cut)
{
	pthread_mutex_lock(&r->mu);
	bool stop = false;
	if (r->seek_stop) {
		/* Restored (checkpoint.c): stop where the checkpoint was,
		 * and only now tell the seeker, so its run_to cannot come
		 * before this stop. */
		r->seek_stop = false;
		r->seek_rc = r->seek_result;
		pthread_cond_broadcast(&r->cv);
		stop = true;
		copy_str(r->break_why, sizeof(r->break_why),
		         r->seek_result ? "seek failed" : "seek");
	} else if (r->seek_req) {
		stop = false;
	} else if (r->mode == MODE_STEP || r->pause_req) {
		stop = true;
		copy_str(r->break_why, sizeof(r->break_why),
		         r->mode == MODE_STEP ? "step" : "pause");
	} else {
		stop = run_to_time_hit(r, t);
	}
	while (stop) {
		r->held_ns = t;
		stop_at(r, MS_REPLAY_PAUSED);
		/* Released to run to a time before t (a `g` from this
		 * stop, or the seeker's after a restore here): this is the
		 * first point past it, so the run stays here. */
		stop = !r->abort_req && !r->seek_req && !r->pause_req &&
		       r->mode == MODE_RUN && run_to_time_hit(r, t);
	}
	r->held_ns = 0;
	if (cut)
		*cut = *cut && pace_applies(r);
	if (!(cut && *cut) && t > r->past_ns)
		r->past_ns = t;
	bool go = !r->abort_req;
	pthread_mutex_unlock(&r->mu);
	return go;
}

/* The longest a publication waits for its turn, in ns. */
#define PACE_MAX_NS 1e15

/* Wait until *left (logical ns of the gap to the next publication, at
 * t) has passed at the run's speed, counting down *left as it goes (and
 * saying how far it is in r->pacing and the pace_ fields); a change of
 * speed goes on at the new speed. Returns true when a pause cut the wait
 * short: the rest is still in *left, for after the pause (a pause freezes
 * the replay's time). mu held. */
static bool
pace_wait(ms_replay *r, int64_t t, int64_t *left)
{
	while (*left > 0 && pace_applies(r) && !r->pause_req) {
		/* At a very slow speed the wait is long, not negative: the
		 * quotient is bounded (a million seconds) before it becomes
		 * an integer, which it would overflow. */
		double speed = r->speed, w = (double)*left / speed;
		int64_t want =
		        w < PACE_MAX_NS ? (int64_t)w : (int64_t)PACE_MAX_NS;
		int64_t t0 = ms_mono_ns();
		struct timespec ts = ms_mono_timespec(t0 + want);
		enum run_mode mode = r->mode;
		int e = 0;
		r->paces++;
		r->pacing = true;
		r->pace_mono0 = t0;
		r->pace_from = t - *left;
		r->pace_to = t;
		r->pace_speed = speed;
		while (e != ETIMEDOUT && pace_applies(r) && !r->pause_req &&
		       r->mode == mode && r->speed == speed)
			e = pthread_cond_timedwait(&r->cv, &r->mu, &ts);
		r->pacing = false;
		double done = (double)(ms_mono_ns() - t0) * speed;
		*left = e == ETIMEDOUT || done >= (double)*left
		                ? 0
		                : *left - (int64_t)done;
		r->pace_from = t - *left;
		r->pace_held = *left > 0;
	}
	return *left > 0 && r->pause_req && pace_applies(r);
}

/* Pace publications at `speed` logical seconds per wall second: wait
 * out *left logical ns before t less what wall_since (ns since the last
 * publication) covered. Returns true when a pause cut it short, the
 * rest being in *left. */
static bool
pace(ms_replay *r, int64_t t, int64_t *left, int64_t wall_since)
{
	pthread_mutex_lock(&r->mu);
	if (pace_applies(r) && *left > 0) {
		double done = (double)wall_since * r->speed;
		*left = done >= (double)*left ? 0 : *left - (int64_t)done;
	}
	bool cut = pace_wait(r, t, left);
	pthread_mutex_unlock(&r->mu);
	return cut;
}

uint64_t
ms__replay_paces(ms_replay *r)
{
	pthread_mutex_lock(&r->mu);
	uint64_t n = r->paces;
	pthread_mutex_unlock(&r->mu);
	return n;
}

/* The wait before slot i's publication and its publication point: a
 * pause during the wait stops there, and the run, resumed, waits out the
 * rest of the gap before it publishes (a step from that stop publishes at
 * once). Returns 0 to publish, MS_ERR_CANCELED on abort, 1 when a seek
 * back was asked for. */
static int
pace_to(ms_replay *r, int64_t t, int64_t gap, int64_t wall_since)
{
	int64_t left = gap;
	bool cut = pace(r, t, &left, wall_since);
	int rc;
	for (;;) {
		if (!publication_point(r, t, &cut)) {
			rc = MS_ERR_CANCELED;
			break;
		}
		if (ms__rck_seek_pending(r)) {
			rc = 1;
			break;
		}
		if (!cut) {
			rc = 0;
			break;
		}
		cut = pace(r, t, &left, 0);
	}
	pthread_mutex_lock(&r->mu);
	r->pace_held = false; /* the publication's out, or there is none */
	pthread_mutex_unlock(&r->mu);
	return rc;
}

/* ---- the run ---------------------------------------------------------- */

/*
 * Staging, before the run's clock starts: every scheduled part goes into
 * the shard's file system at its tmp paths, so that a publication in the
 * timed phases is what it is in the reference: an atomic rename into
 * parts/ and the introduction (ms_shard_introduce), no byte copied. Files
 * are hard-linked from the fixture where the file systems allow (a part
 * is immutable, so sharing its files is safe), else reflinked or copied;
 * then one syncfs makes all of it durable, which is what the shard
 * requires of a part handed to it. Its wall and method are reported apart
 * from the phases.
 */
int
ms__replay_stage_range(ms_replay *r, size_t from, size_t to,
                       ms__stage_counts *c, ms_errbuf *eb)
{
	size_t n = ms_fixture_nslots(r->fx);
	char tmp[PATH_MAX], src[PATH_MAX];
	int rc = 0;
	for (size_t i = from; i < to && i < n && rc == 0; i++) {
		const ms_fixture_slot *s = ms_fixture_slot_at(r->fx, i);
		for (int k = 0; k < MS_KIND_COUNT && rc == 0; k++) {
			rc = ms_shard_tmp_path(r->shard, (enum ms_part_kind)k,
			                       s->part_id, tmp, sizeof(tmp));
			if (!rc)
				rc = ms_fixture_slot_path(r->fx, i,
				                          (enum ms_part_kind)k,
				                          src, sizeof(src));
			if (rc) {
				rc = ms_fail(eb, rc,
				             "part %016llx: path too long",
				             (unsigned long long)s->part_id);
				break;
			}
			rc = ms__stage_tree(src, tmp, !r->opts.stage_copy, c,
			                    eb);
			if (rc) {
				char why[sizeof(((ms_errbuf *)0)->msg)];
				copy_str(why, sizeof(why),
				         eb ? eb->msg : ms_strerror(rc));
				rc = ms_fail(
				        eb, rc,
				        "staging %s part %016llx of slot "
				        "%zu: %s",
				        ms_part_kind_name((enum ms_part_kind)k),
				        (unsigned long long)s->part_id, i, why);
			}
		}
		if (r->opts.progress && from == 0 &&
		    (i % 64 == 0 || i + 1 == n))
			r->opts.progress(r->opts.progress_arg, i + 1, n,
			                 "staging");
	}
	if (rc)
		return rc;
	int fd = open(r->work_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return ms_fail(eb, ms_err_from_errno(errno),
		               "staging: open %s: %s", r->work_dir,
		               strerror(errno));
	atomic_fetch_add(&r->io.fsyncs, 1);
	rc = syncfs(fd);
	int e = errno;
	close(fd);
	if (rc != 0)
		return ms_fail(eb, ms_err_from_errno(e),
		               "staging: syncfs %s: %s", r->work_dir,
		               strerror(e));
	return 0;
}

static int
stage_parts(ms_replay *r, ms_errbuf *eb)
{
	int64_t t0 = ms_mono_ns();
	size_t n = ms_fixture_nslots(r->fx);
	int rc = ms__replay_stage_range(r, 0, n, &r->staged, eb);
	if (rc)
		return rc;
	r->staged_upto = n;
	const ms__stage_counts *c = &r->staged;
	copy_str(r->clone_method, sizeof(r->clone_method),
	         c->copied      ? (c->linked ? "link+copy" : "copy")
	         : c->reflinked ? (c->linked ? "link+reflink" : "reflink")
	                        : "link");
	r->staging_ns = ms_mono_ns() - t0;
	r->staging_fsyncs = atomic_load(&r->io.fsyncs);
	return 0;
}

/* Slots staged at a time after a seek back (checkpoint.c), which leaves
 * the slots after its checkpoint unstaged: they are staged as the re-run
 * reaches them, so going back costs no more staging than the re-run
 * publishes (one syncfs per chunk). */
#define STAGE_AHEAD 256

/* The part is staged at its tmp paths (stage_parts, or here after a seek
 * back): publishing it renames its three files into parts/ and introduces
 * it. The shard is opened with defer_sync and commit_syncfs, so neither
 * syncs: the introduction commits in memory and becomes durable, renames
 * included, at the end of the phase (ms_shard_sync; earlier when enough
 * merged parts wait for deletion, or when a checkpoint is taken), the
 * point by which a publication must be durable: one snapshot commit for
 * many publications and merges. */
static int
publish_slot(ms_replay *r, size_t i, const ms_fixture_slot *s, ms_errbuf *eb)
{
	if (i >= r->staged_upto) {
		ms__stage_counts c = { 0 };
		int rc = ms__replay_stage_range(r, i, i + STAGE_AHEAD, &c, eb);
		if (rc)
			return rc;
		r->staged_upto = i + STAGE_AHEAD;
	}
	if (r->test.lose_slot == i + 1)
		return 0;
	return ms_shard_introduce(r->shard, s->part_id, eb);
}

static void
phase_begin(ms_replay *r, ms_rusage *ru, ms_mem_stats *mem, ms_io *io)
{
	ms_rusage_sample(ru, NULL);
	ms_mem_stats_get(&r->mem, mem);
	io->bytes_read = atomic_load(&r->io.bytes_read);
	io->bytes_written = atomic_load(&r->io.bytes_written);
	io->fsyncs = atomic_load(&r->io.fsyncs);
	ms_mem_reset_peak(&r->mem);
	ms__rss_peaks drop;
	ms__rsswatch_take(&r->rss, &drop);
}

/*
 * The highest resident set while the phase ran (the phase record's
 * rss_peak). The kernel keeps the process's high-water mark (VmHWM) only:
 * when the phase raised it, the mark was made in the phase and is its
 * peak, exactly. Otherwise the process peaked before (an earlier phase, the
 * staging, the oracle) and the phase's own peak is the highest whole
 * resident set the sampler saw (every 5 ms and at the phase's ends), or
 * the level at either end when it saw none. Resetting the mark instead
 * (/proc/self/clear_refs) would be exact too, but it also resets the
 * ru_maxrss that getrusage and a parent's wait4 report for the whole
 * process, and the merges' rss_peak: those stay the process's.
 */
static uint64_t
phase_rss_peak(const ms_rusage *ru0, const ms_rusage *ru1,
               const ms__rss_peaks *pk)
{
	if (ru0->peak_rss_bytes > 0 &&
	    ru1->peak_rss_bytes > ru0->peak_rss_bytes)
		return (uint64_t)ru1->peak_rss_bytes;
	int64_t m = pk->total;
	if (ru0->rss_bytes > m)
		m = ru0->rss_bytes;
	if (ru1->rss_bytes > m)
		m = ru1->rss_bytes;
	return m > 0 ? (uint64_t)m : 0;
}

/* The record of a phase that began with ru0, m0 and io0 (phase_begin)
 * and ends now; the sampler's peaks restart. */
static void
phase_fill(ms_replay *r, enum ms_ev_phase_id id, int64_t lstart,
           const ms_rusage *ru0, const ms_mem_stats *m0, const ms_io *io0,
           int64_t drain_ns, ms_ev_phase *out)
{
	ms_rusage ru1;
	ms_mem_stats m1;
	ms_rusage_sample(&ru1, NULL);
	ms_mem_stats_get(&r->mem, &m1);
	ms_ev_phase p;
	memset(&p, 0, sizeof(p));
	p.phase = id;
	p.logical_start_ns = lstart;
	p.logical_end_ns = ms_clock_now(&r->clock);
	p.wall_ns = ru1.wall_ns - ru0->wall_ns;
	p.cpu_ns = ru1.cpu_ns - ru0->cpu_ns;
	p.alloc_bytes = m1.bytes - m0->bytes;
	p.alloc_count = m1.count - m0->count;
	p.peak_live = m1.peak_live;
	p.bytes_read = atomic_load(&r->io.bytes_read) - io0->bytes_read;
	p.bytes_written =
	        atomic_load(&r->io.bytes_written) - io0->bytes_written;
	p.fsyncs = atomic_load(&r->io.fsyncs) - io0->fsyncs;
	p.drain_ns = drain_ns;
	ms__rss_peaks pk;
	ms__rsswatch_take(&r->rss, &pk);
	p.rss_peak = phase_rss_peak(ru0, &ru1, &pk);
	p.rss_anon_peak = pk.anon > 0 ? (uint64_t)pk.anon : 0;
	p.rss_file_peak = pk.file > 0 ? (uint64_t)pk.file : 0;
	p.rss_shmem_peak = pk.shmem > 0 ? (uint64_t)pk.shmem : 0;
	*out = p;
}

/* Records the phase that ends now. The primary's record carries the
 * staging's figures, and the staging row (the time before the phase,
 * taken as it began) is recorded with it: a seek back removes the phase
 * rows, and the re-run records both again. */
static void
phase_end(ms_replay *r, enum ms_ev_phase_id id, int64_t lstart,
          const ms_rusage *ru0, const ms_mem_stats *m0, const ms_io *io0,
          int64_t drain_ns)
{
	ms_ev_phase p;
	phase_fill(r, id, lstart, ru0, m0, io0, drain_ns, &p);
	if (id == MS_EV_PHASE_PRIMARY) {
		p.staging_ns = r->staging_ns;
		p.staging_fsyncs = r->staging_fsyncs;
		if (r->has_before)
			ms_rec_phase(r->rec, &r->before_ph, NULL);
	}
	ms_rec_phase(r->rec, &p, NULL);
}

/* The event log failed: the run cannot go on (nothing it does would be
 * recorded). Any thread. */
static int
recorder_check(ms_replay *r, ms_errbuf *eb)
{
	ms_errbuf re;
	int rc = ms_rec_failed(r->rec, &re);
	if (rc) {
		ms_fail(eb, rc, "cannot record events: %s", re.msg);
		atomic_store(&r->rec_fail_said, true);
	}
	return rc;
}

#define WAIT_SLICE_NS (250 * 1000000LL)

/* How many times run_cooldown dispatches a finalize that failed. */
#define FINALIZE_TRIES 5

/* Stopped at a barrier with no merge running (the dispatcher waits in
 * on_dispatch, so none can start or end): nothing the engine does can
 * change until a command releases the run or closes it. Wait for that
 * without waking (it looked every WAIT_SLICE_NS). mu held. */
static void
wait_released(ms_replay *r)
{
	while (!r->abort_req && r->state == MS_REPLAY_BREAK &&
	       r->has_pending && !merge_running(r))
		pthread_cond_wait(&r->cv, &r->mu);
}

uint64_t
ms__replay_slices(ms_replay *r)
{
	pthread_mutex_lock(&r->mu);
	uint64_t n = r->idle_slices;
	pthread_mutex_unlock(&r->mu);
	return n;
}

/*
 * Wait for merge-idle, bounded (design 5). `what` names the wait in the
 * error ("merge-idle after publication 12"). Returns 0; MS_ERR_CANCELED
 * on abort; the engine's error when it stopped on repeated merge
 * failures (its message names the merge, the file and the error); the
 * recorder's when it cannot write; MS_ERR_TIMEOUT past the deadline.
 */
static int
wait_idle_bounded(ms_replay *r, const char *what, ms_errbuf *eb)
{
	int64_t limit = r->wait_timeout_ns, waited = 0;
	pthread_mutex_lock(&r->mu);
	uint64_t stops = r->stops;
	pthread_mutex_unlock(&r->mu);
	for (;;) {
		pthread_mutex_lock(&r->mu);
		wait_released(r);
		r->idle_slices++;
		pthread_mutex_unlock(&r->mu);
		int64_t left = limit - waited, t0 = ms_mono_ns();
		int rc = ms_engine_wait_idle(
		        r->engine, left < WAIT_SLICE_NS ? left : WAIT_SLICE_NS);
		if (rc && rc != MS_ERR_TIMEOUT) {
			ms_errbuf fe;
			if (ms_engine_failed(r->engine, &fe))
				return ms_fail(eb, rc, "%s", fe.msg);
			if (rc == MS_ERR_CANCELED)
				return rc;
			return ms_fail(eb, rc, "waiting for %s: %s", what,
			               ms_strerror(rc));
		}
		int rrc = recorder_check(r, eb);
		if (rrc)
			return rrc;
		if (rc == 0)
			return 0;
		pthread_mutex_lock(&r->mu);
		bool abort = r->abort_req;
		bool held = r->stops != stops || r->state == MS_REPLAY_BREAK ||
		            r->state == MS_REPLAY_PAUSED;
		stops = r->stops;
		pthread_mutex_unlock(&r->mu);
		if (abort)
			return MS_ERR_CANCELED;
		waited = held ? 0 : waited + (ms_mono_ns() - t0);
		if (waited < limit)
			continue;
		ms_engine_stats es;
		ms_engine_get_stats(r->engine, &es);
		/* Merges failing again and again (out of memory) are what a
		 * wait most often waits on: the last one says why. */
		char last[sizeof(r->last_failure) + 24] = "";
		pthread_mutex_lock(&r->mu);
		if (es.merges_failed && r->last_failure[0])
			snprintf(last, sizeof(last), "; the last failure: %s",
			         r->last_failure);
		pthread_mutex_unlock(&r->mu);
		return ms_fail(eb, MS_ERR_TIMEOUT,
		               "waited %.3g s for %s and gave up "
		               "(--wait-timeout): %zu merges running, %zu "
		               "queued, %zu held, %zu pending, %llu failed, "
		               "backing off %u ms%s",
		               (double)limit / 1e9, what, es.running, es.queued,
		               es.held, es.pending_hook,
		               (unsigned long long)es.merges_failed,
		               es.backoff_ms, last);
	}
}

static int
drain(ms_replay *r, const char *what, int64_t *ns, ms_errbuf *eb)
{
	int64_t t0 = ms_mono_ns();
	ms_engine_trigger_for_wait(r->engine);
	int rc = wait_idle_bounded(r, what, eb);
	if (ns)
		*ns = ms_mono_ns() - t0;
	return rc;
}

/* Move the run to phase p, and the events it records to p's recorded
 * phase: primary up to the day boundary, cooldown from there (the
 * finalize included). mu held. */
static void
enter_phase(ms_replay *r, enum ms_replay_phase p)
{
	r->phase = p;
	r->rec_phase = p <= MS_RPHASE_BOUNDARY ? MS_EV_PHASE_PRIMARY
	                                       : MS_EV_PHASE_COOLDOWN;
}

static void
set_phase(ms_replay *r, enum ms_replay_phase p)
{
	pthread_mutex_lock(&r->mu);
	enter_phase(r, p);
	pthread_mutex_unlock(&r->mu);
	notify(r);
}

static bool
aborted(ms_replay *r)
{
	pthread_mutex_lock(&r->mu);
	bool a = r->abort_req;
	pthread_mutex_unlock(&r->mu);
	return a;
}

static uint64_t
stops_now(ms_replay *r)
{
	pthread_mutex_lock(&r->mu);
	uint64_t n = r->stops;
	pthread_mutex_unlock(&r->mu);
	return n;
}

/* The primary phase's publications from slot `from` on; returns 0 once
 * every slot is out, or at the publication point where a seek back was
 * asked for (ms__rck_seek_pending). */
static int
run_slots(ms_replay *r, size_t from, ms_errbuf *eb)
{
	size_t n = ms_fixture_nslots(r->fx);
	int rc;
	int64_t prev_p = from ? ms_fixture_slot_at(r->fx, from - 1)->pub_ns
	                      : r->info->day_start_ns;
	int64_t prev_wall = ms_mono_ns();
	uint64_t stops = stops_now(r);
	for (size_t i = from; i < n; i++) {
		const ms_fixture_slot *s = ms_fixture_slot_at(r->fx, i);
		rc = pace_to(r, s->pub_ns, s->pub_ns - prev_p,
		             ms_mono_ns() - prev_wall);
		if (rc)
			return rc == 1 ? 0 : rc;
		/* Stopped here: a checkpoint of this very point. */
		if (stops != stops_now(r)) {
			stops = stops_now(r);
			ms__rck_maybe_take(r, i, ms_clock_now(&r->clock), true);
		}
		prev_p = s->pub_ns;
		prev_wall = ms_mono_ns();
		ms_clock_set(&r->clock, s->pub_ns);
		int64_t t0 = ms_mono_ns();
		rc = publish_slot(r, i, s, eb);
		if (rc)
			return rc;
		int64_t t1 = ms_mono_ns();
		ms_view *cv = pin_for_check(r, s->part_id);
		pthread_mutex_lock(&r->mu);
		/* What did not take effect is not recorded as introduced
		 * (lifecycle, the log's part events): only publications
		 * names it. */
		bool in = cv && ms_view_count(cv) == 1;
		for (int k = 0; in && k < MS_KIND_COUNT; k++)
			track_introduce(r, s->part_id, (enum ms_part_kind)k);
		r->pub_done = i + 1;
		r->pub_in += in;
		r->parts_introduced += in;
		if (!in && !r->pub_lost_id) {
			r->pub_lost_slot = i;
			r->pub_lost_id = s->part_id;
		}
		r->pub_merges = 0;
		pthread_mutex_unlock(&r->mu);
		/* A publication that did not take effect entered nothing: the
		 * publications gate names it; handed to the checker it would
		 * count as a part checked and read as one that left. */
		if (!in || r->test.skip_check_slot == i + 1)
			ms_view_release(cv);
		else
			ms__checker_submit(r, cv, s->part_id, i, NULL, 0);
		uint64_t bytes[MS_KIND_COUNT], rows[MS_KIND_COUNT];
		for (int k = 0; k < MS_KIND_COUNT; k++) {
			bytes[k] = s->bytes[k];
			rows[k] = s->rows; /* an index row per row */
		}
		if (in)
			rec_part(r, MS_EV_PART_INTRODUCED, s->part_id, bytes,
			         rows, 0, "publication", i,
			         ms_shard_epoch(r->shard));
		uint64_t epoch = ms_shard_epoch(r->shard);
		notify(r);
		char what[64];
		snprintf(what, sizeof(what), "merge-idle after publication %zu",
		         i);
		/* A warm opening goes in as one snapshot: the engine is
		 * triggered only once its last part is in, so no merge sees
		 * part of it (a trace may span two of its parts). */
		const ms_fixture_slot *nx = ms_fixture_slot_at(r->fx, i + 1);
		bool split = s->opening && nx && nx->opening;
		if (!split && (rc = drain(r, what, NULL, eb)))
			return rc;
		ms_ev_pub pub;
		memset(&pub, 0, sizeof(pub));
		pub.seq = i;
		pub.logical_ns = s->pub_ns;
		pub.wall_ns = t0 - r->t0_mono;
		pub.part_id = s->part_id;
		pub.bytes = s->bytes[MS_KIND_CORE];
		pub.rows = s->rows;
		pub.min_ts = s->min_ts;
		pub.max_ts = s->max_ts;
		pub.epoch = epoch;
		pub.publish_ns = t1 - t0;
		pub.idle_ns = ms_mono_ns() - t1;
		pthread_mutex_lock(&r->mu);
		pub.merges = r->pub_merges;
		pthread_mutex_unlock(&r->mu);
		inventory_totals(r, &pub.inv_parts, &pub.inv_bytes);
		ms_rec_pub(r->rec, &pub, NULL);
		if (i % SAMPLE_EVERY == 0)
			rec_sample(r);
		if (r->opts.progress)
			r->opts.progress(r->opts.progress_arg, i + 1, n,
			                 "publications");
		if (!split) {
			bool stopped = stops != stops_now(r);
			stops = stops_now(r);
			ms__rck_maybe_take(r, i + 1, s->pub_ns, stopped);
		}
		if (aborted(r))
			return MS_ERR_CANCELED;
	}
	return 0;
}

/* Go on to phase p, unless a seek back is pending: then false, and the
 * phase stays (the run goes back, checkpoint.c). Under mu, so that a seek
 * asked for once the run is past its last check (phase END) waits for
 * the end instead. */
static bool
advance(ms_replay *r, enum ms_replay_phase p)
{
	pthread_mutex_lock(&r->mu);
	bool seek = r->seek_req;
	if (!seek)
		enter_phase(r, p);
	pthread_mutex_unlock(&r->mu);
	if (!seek)
		notify(r);
	return !seek;
}

/* A phase's resource figures at its start (phase_begin). */
typedef struct phase_base {
	ms_rusage ru;
	ms_mem_stats mem;
	ms_io io;
} phase_base;

/* Parts queued for the checker and not yet taken. */
static size_t
checker_queued(ms_replay *r)
{
	size_t n = 0;
	if (!r->check_init)
		return 0;
	pthread_mutex_lock(&r->check_mu);
	for (const ms__check_job *j = r->check_head; j; j = j->next)
		n++;
	pthread_mutex_unlock(&r->check_mu);
	return n;
}

/* Between the primary phase and the cooldown, outside both clocks: the
 * part checker catches up. Parts waiting for it keep their handles, and
 * on a busy machine (it gives way to the replay) it falls behind by an
 * amount that grows with the day; that must not add up with the
 * finalize, the run's peak of memory, nor take the finalize's CPU. An
 * abort stops the wait. The report says how long it took. */
static void
catch_up_checker(ms_replay *r)
{
	int64_t t0 = ms_mono_ns();
	while (!ms__checker_idle_within(r, 50000000)) {
		pthread_mutex_lock(&r->mu);
		bool stop = r->abort_req;
		pthread_mutex_unlock(&r->mu);
		if (stop)
			break;
	}
	r->check_prewait_ns += ms_mono_ns() - t0;
}

/* The chain the verdict oracle evaluates (NULL: none, every trace kept). */
static const char *
oracle_spec(const ms_replay *r)
{
	return r->test.oracle_spec ? r->test.oracle_spec
	       : r->pipe           ? ms_pipeline_spec(r->pipe)
	                           : NULL;
}

/* Before the primary phase's clock starts: the verdict oracle (started
 * beside the staging, ms_replay_start) has ended. While it runs it holds
 * arrays of the whole day (every block of every trace, the columns the
 * chain reads: about 22 MiB at day-4x) and takes a CPU the day's merges
 * would use; where the machine is busy it gives way and ran on into the
 * day, then into the finalize. The engine's figures are the day's alone,
 * as the reference's data node's were, its controller apart. An abort
 * stops the wait (MS_ERR_CANCELED). The wait is bounded like every other
 * (design 5): an oracle slower than the deadline (a chain whose every
 * call is slow, short of its timeout; a busy machine) is cancelled past
 * it and the run fails saying so (MS_ERR_TIMEOUT). */
static int
wait_oracle(ms_replay *r, ms_errbuf *eb)
{
	if (!r->oracle_started)
		return 0;
	int64_t t0 = ms_mono_ns();
	pthread_mutex_lock(&r->mu);
	r->preparing = !r->oracle_done;
	bool shown = r->preparing;
	pthread_mutex_unlock(&r->mu);
	if (shown)
		notify(r); /* the screen says what the run waits for */
	struct timespec ts = ms_mono_timespec(t0 + r->wait_timeout_ns);
	bool late = false;
	pthread_mutex_lock(&r->mu);
	while (!r->oracle_done && !r->abort_req && !late)
		late = pthread_cond_timedwait(&r->cv, &r->mu, &ts) ==
		       ETIMEDOUT;
	bool done = r->oracle_done, abort = r->abort_req;
	r->preparing = false;
	pthread_mutex_unlock(&r->mu);
	r->oracle_prewait_ns += ms_mono_ns() - t0;
	if (done)
		return 0;
	if (abort)
		return MS_ERR_CANCELED;
	atomic_store(&r->oracle_cancel, true);
	return ms_fail(eb, MS_ERR_TIMEOUT,
	               "waited %.3g s for the verdict oracle (chain %s, "
	               "judging the day's traces before the day starts) and "
	               "gave up (--wait-timeout): its links' Decide calls "
	               "took longer than that in all (a link slow on every "
	               "call, or a machine too busy)",
	               (double)r->wait_timeout_ns / 1e9,
	               oracle_spec(r) ? oracle_spec(r) : "disabled");
}

/* Why the finalize asked for between the engine's stats b and a was
 * skipped, into skip[n], or "" when it was not. */
static void
why_finalize_skipped(const ms_engine_stats *b, const ms_engine_stats *a,
                     char *skip, size_t n)
{
	enum ms_sampling_reason why = a->finalize_skip_reason;
	skip[0] = '\0';
	if (a->finalize_skipped == b->finalize_skipped)
		return;
	if (a->finalize_skip_need)
		snprintf(skip, n,
		         "free disk %llu B below the selection's %llu B, as "
		         "the reference's disk-headroom gate",
		         (unsigned long long)a->finalize_skip_free,
		         (unsigned long long)a->finalize_skip_need);
	else
		snprintf(skip, n, "%s: %s", ms_sampling_reason_name(why),
		         why == MS_SREASON_GUARD_UNAVAILABLE
		                 ? "no fragment guard (segment unknown or "
		                   "without interior)"
		                 : "no sampler; the reference runs no "
		                   "finalize round without one");
}

/* r->finalize_skip: why the finalize asked for between the engine's
 * stats b and a was skipped, or "" when it was not (ms_engine_finalize
 * skips as the reference's finalize round does). Set under r->mu: the
 * status (the headless progress) reads it. */
static void
note_finalize_skip(ms_replay *r, const ms_engine_stats *b,
                   const ms_engine_stats *a)
{
	char skip[sizeof(r->finalize_skip)];
	why_finalize_skipped(b, a, skip, sizeof(skip));
	pthread_mutex_lock(&r->mu);
	memcpy(r->finalize_skip, skip, sizeof(skip));
	pthread_mutex_unlock(&r->mu);
}

/* From the end of the primary phase's publications to the end of the
 * day: the day boundary, the cooldown (everything aged by the grace,
 * drained) and the finalize merge. *back when a seek back is pending
 * at one of its points (checkpoint.c, design 5): the run stopped there,
 * the finalize dropped if it was held at its barrier. */
static int
run_cooldown(ms_replay *r, const phase_base *pri, bool *back, ms_errbuf *eb)
{
	int rc;
	*back = true;
	if (!advance(r, MS_RPHASE_BOUNDARY))
		return 0;
	/* The clock moves to the day boundary. */
	if (!publication_point(r, r->info->day_end_ns, NULL))
		return MS_ERR_CANCELED;
	if (ms__rck_seek_pending(r))
		return 0;
	ms_clock_set(&r->clock, r->info->day_end_ns);
	int64_t dns;
	if ((rc = drain(r, "merge-idle at the day boundary", &dns, eb)) ||
	    (rc = ms_shard_sync(r->shard, eb)))
		return rc;
	if (ms__rck_seek_pending(r))
		return 0;
	rec_sample(r);
	phase_end(r, MS_EV_PHASE_PRIMARY, r->info->day_start_ns, &pri->ru,
	          &pri->mem, &pri->io, dns);
	catch_up_checker(r);
	int64_t lstart = ms_clock_now(&r->clock);
	if (!advance(r, MS_RPHASE_COOLDOWN))
		return 0;
	phase_base cb;
	r->check_queued_cooldown = checker_queued(r);
	r->cooldown_mono = ms_mono_ns();
	phase_begin(r, &cb.ru, &cb.mem, &cb.io);
	if (!publication_point(r, r->info->day_end_ns + MS_GRACE_NS, NULL))
		return MS_ERR_CANCELED;
	if (ms__rck_seek_pending(r))
		return 0;
	ms_clock_set(&r->clock, r->info->day_end_ns + MS_GRACE_NS);
	if ((rc = drain(r, "merge-idle in cooldown", &dns, eb)))
		return rc;
	if (!advance(r, MS_RPHASE_FINALIZE))
		return 0;
	uint64_t fseq = 0;
#ifdef __GLIBC__
	malloc_trim(0);
#endif
	r->finalize_mono = ms_mono_ns();
	/* A finalize that fails is dispatched again once the engine is idle
	 * (its backoff over), as the picker's merges are picked again: the
	 * picker never chooses the finalize's selection, so without this a
	 * full disk at the finalize ended the day unfinalized and "complete".
	 * A file-system failure no input is to blame for stops the engine at
	 * its third in a row (fatal_after), which fails the run with the
	 * merge, the file and the error; one an input is blamed for
	 * quarantines it at the third (quarantine_after), so the next try
	 * goes without it. FINALIZE_TRIES bounds the rest: a finalize that
	 * failed every time (out of memory) fails the run, naming why, rather
	 * than end the day unfinalized with its gates failing. */
	for (unsigned tries = 1;; tries++) {
		ms_engine_stats before, after;
		ms_engine_get_stats(r->engine, &before);
		if ((rc = ms_engine_finalize(r->engine, &fseq, eb)))
			return rc;
		if ((rc = wait_idle_bounded(r, "the finalize merge", eb)))
			return rc;
		ms_engine_get_stats(r->engine, &after);
		note_finalize_skip(r, &before, &after);
		bool failed = after.merges_failed != before.merges_failed;
		if (failed && tries >= FINALIZE_TRIES && fseq != 0 &&
		    !ms__rck_seek_pending(r) && !aborted(r)) {
			pthread_mutex_lock(&r->mu);
			ms_fail(eb, MS_ERR_STATE,
			        "the finalize merge failed %u times in a row, "
			        "not retried (inputs unchanged); the last: %s",
			        tries, r->last_failure);
			pthread_mutex_unlock(&r->mu);
			return MS_ERR_STATE;
		}
		if (fseq == 0 || !failed || tries >= FINALIZE_TRIES ||
		    ms__rck_seek_pending(r))
			break;
	}
	if ((rc = ms_shard_sync(r->shard, eb)))
		return rc;
	if (ms__rck_seek_pending(r))
		return 0;
	/* A close (a quit, a stop signal) releases a finalize held at its
	 * barrier, which runs to its end above: the run still stopped
	 * before its end, recorded as aborted, with no gates. */
	if (aborted(r))
		return MS_ERR_CANCELED;
	rec_sample(r);
	phase_end(r, MS_EV_PHASE_COOLDOWN, lstart, &cb.ru, &cb.mem, &cb.io,
	          dns);
	*back = !advance(r, MS_RPHASE_END);
	return 0;
}

/* A seek back asked for in the cooldown: the phase is primary again and
 * the run goes back to the checkpoint (ms__rck_restore); *from is the
 * slot to go on from. A checkpoint that fails to read back there (seek()
 * checked it when it accepted the seek) leaves no point to go on from:
 * the run fails. */
static int
back_from_cooldown(ms_replay *r, size_t *from, ms_errbuf *eb)
{
	set_phase(r, MS_RPHASE_PRIMARY);
	int rc = ms__rck_restore(r, from, eb);
	if (rc)
		return rc;
	pthread_mutex_lock(&r->mu);
	if (r->seek_stop && r->seek_result) {
		rc = r->seek_result;
		ms_fail(eb, rc, "seek back from the cooldown: %s",
		        r->seek_eb.msg);
		r->seek_stop = false;
		r->seek_rc = rc;
		pthread_cond_broadcast(&r->cv);
	}
	pthread_mutex_unlock(&r->mu);
	return rc;
}

/* A run opened with test.hold_day waits here for ms__replay_release_day
 * (or an abort: MS_ERR_CANCELED). */
static int
hold_day(ms_replay *r)
{
	if (!r->test.hold_day)
		return 0;
	pthread_mutex_lock(&r->mu);
	while (!r->day_released && !r->abort_req)
		pthread_cond_wait(&r->cv, &r->mu);
	bool go = !r->abort_req;
	pthread_mutex_unlock(&r->mu);
	return go ? 0 : MS_ERR_CANCELED;
}

void
ms__replay_release_day(ms_replay *r)
{
	pthread_mutex_lock(&r->mu);
	r->day_released = true;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
}

static int
run_day(ms_replay *r, ms_errbuf *eb)
{
	phase_base pri;
	int rc;
	if ((rc = hold_day(r)) || (rc = wait_oracle(r, eb)))
		return rc;
	set_phase(r, MS_RPHASE_PRIMARY);
	if (!r->has_before) { /* once: a re-run after the end keeps it */
		phase_fill(r, MS_EV_PHASE_STAGING, ms_clock_now(&r->clock),
		           &r->before_ru, &r->before_mem, &r->before_io, 0,
		           &r->before_ph);
		r->has_before = true;
	}
	r->primary_mono = ms_mono_ns();
	phase_begin(r, &pri.ru, &pri.mem, &pri.io);
	size_t from = r->resume_slot; /* 0, or after a seek from the end */
	for (;;) {
		if ((rc = run_slots(r, from, eb)))
			return rc;
		bool back = false;
		if ((rc = run_cooldown(r, &pri, &back, eb)))
			return rc;
		if (!back)
			return 0;
		/* A seek back: from the primary phase's publication point,
		 * or from the cooldown. */
		rc = r->phase == MS_RPHASE_PRIMARY
		             ? ms__rck_restore(r, &from, eb)
		             : back_from_cooldown(r, &from, eb);
		if (rc)
			return rc;
	}
}

static void record_end(ms_replay *r, const char *status);

static void *
controller_main(void *arg)
{
	ms_replay *r = arg;
	ms_errbuf eb = { { 0 } };
	ms_rusage_name_thread("ms-replay");
	int rc = run_day(r, &eb);
	if (rc == 0)
		rc = recorder_check(r, &eb);
	if (rc == 0)
		rc = ms__replay_gates(r, &eb);
	/* A complete run records its end now, not when it is closed: a TUI
	 * left at DONE has a finished database that `report` reads, and a
	 * process killed there leaves it complete. A seek back takes the
	 * end back (ms_rec_rollback). */
	if (rc == 0)
		record_end(r, "complete");
	/* The end record is the run's last word: one the database refused
	 * (a full disk) fails the run, or it would end as complete with a
	 * database that says it never finished. */
	if (rc == 0)
		rc = recorder_check(r, &eb);
	pthread_mutex_lock(&r->mu);
	r->end_recorded = rc == 0 && r->run_recorded;
	if (rc && rc != MS_ERR_CANCELED) {
		r->state = MS_REPLAY_FAILED;
		copy_str(r->error, sizeof(r->error),
		         eb.msg[0] ? eb.msg : ms_strerror(rc));
	} else if (rc == MS_ERR_CANCELED) {
		r->state = MS_REPLAY_FAILED;
		copy_str(r->error, sizeof(r->error), "aborted");
	} else {
		r->state = MS_REPLAY_DONE;
	}
	ms__replay_rss_follow(r);
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
	notify(r);
	return NULL;
}

/* A seek back after the run ended (checkpoint.c): the finished
 * controller thread joined, a new one runs the day from slot `from`. */
int
ms__replay_controller_restart(ms_replay *r, size_t from, ms_errbuf *eb)
{
	if (r->started)
		pthread_join(r->thread, NULL);
	r->started = false;
	r->resume_slot = from;
	int e = ms_thread_start(&r->thread, MS__CONTROLLER_STACK,
	                        controller_main, r);
	if (e)
		return ms_thread_fail(
		        eb, MS_ERR_IO, e,
		        "cannot start the controller thread again");
	r->started = true;
	return 0;
}
/* The run record's fixture hash: the fixture's schedule hash when its day
 * starts empty and its core parts use no dictionary; else the XXH3-128 of
 * that hash with the opening, its part count, the dictionary's ID and the
 * verdict checksum (which covers the opening's traces too), so that a warm
 * or dictionary day, whose schedule is the empty day's, is not taken for
 * it by `bench` and `report --collect`. */
void
ms__fixture_identity(const ms_fixture_info *i, char *out, size_t n)
{
	if (!strcmp(i->opening, "empty") && i->dict_id == 0) {
		copy_str(out, n, i->schedule_hash);
		return;
	}
	char buf[512];
	int len = snprintf(buf, sizeof(buf), "%s|%s|%llu|%u|%s",
	                   i->schedule_hash, i->opening,
	                   (unsigned long long)i->opening_parts, i->dict_id,
	                   i->verdict_checksum ? i->verdict_checksum : "");
	XXH128_hash_t h = XXH3_128bits(buf, (size_t)len < sizeof(buf)
	                                            ? (size_t)len
	                                            : sizeof(buf) - 1);
	snprintf(out, n, "%016llx%016llx", (unsigned long long)h.high64,
	         (unsigned long long)h.low64);
}

/* ---- open / close ----------------------------------------------------- */

static void
fill_run_record(ms_replay *r, ms_ev_run *run)
{
	memset(run, 0, sizeof(*run));
	copy_str(run->version, sizeof(run->version), MS_VERSION_STRING);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	run->started_unix_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	copy_str(run->fixture_dir, sizeof(run->fixture_dir), r->fixture_dir);
	copy_str(run->fixture_preset, sizeof(run->fixture_preset),
	         r->info->preset);
	run->fixture_seed = r->info->seed;
	ms__fixture_identity(r->info, run->fixture_hash,
	                     sizeof(run->fixture_hash));
	copy_str(run->fixture_parts_hash, sizeof(run->fixture_parts_hash),
	         r->info->topology_hash);
	copy_str(run->variant, sizeof(run->variant), r->variant);
	copy_str(run->chain, sizeof(run->chain),
	         r->pipe ? ms_pipeline_spec(r->pipe) : "disabled");
	copy_str(run->grace_policy, sizeof(run->grace_policy),
	         ms_grace_policy_name(r->policy));
	copy_str(run->staging, sizeof(run->staging),
	         ms_staging_mode_name(r->staging));
	run->serial = r->serial;
	run->allow_fail_open = r->opts.allow_fail_open;
	copy_str(run->plugin_host, sizeof(run->plugin_host),
	         ms_plugin_host_mode_name(r->plugin_host));
	if (r->pipe) {
		ms_chain *c = ms_pipeline_chain(r->pipe);
		size_t n = ms_chain_len(c);
		/* The configs each link was opened with, as the spec gives
		 * them (a spec that parsed once parses again). */
		ms_chain_spec spec;
		memset(&spec, 0, sizeof(spec));
		if (ms_chain_spec_parse(&spec, ms_pipeline_spec(r->pipe), "",
		                        NULL, NULL) != 0)
			spec.n = 0;
		for (size_t i = 0; i < n && i < MS_EV_LINKS_MAX; i++) {
			ms_plugin *p = ms_chain_plugin(c, i);
			ms_ev_plugin *e = &run->plugins[run->nplugins++];
			copy_str(e->name, sizeof(e->name), ms_plugin_name(p));
			if (i < spec.n && spec.configs[i])
				copy_str(e->config, sizeof(e->config),
				         spec.configs[i]);
			copy_str(e->path, sizeof(e->path), ms_plugin_path(p));
			copy_str(e->checksum, sizeof(e->checksum),
			         ms_plugin_checksum(p));
		}
		ms_chain_spec_release(&spec);
	}
	run->detected_cpus = (uint32_t)ceil(r->limits.detected_cpus);
	run->detected_mem_bytes = r->limits.detected_mem;
	struct statvfs sv;
	if (statvfs(r->work_dir, &sv) == 0)
		run->detected_disk_free_bytes =
		        (uint64_t)sv.f_bavail * sv.f_frsize;
	copy_str(run->profile, sizeof(run->profile),
	         r->limits.has_profile ? r->limits.profile : "");
	run->emulated_cpus = r->limits.cpus;
	run->emulated_mem_bytes = r->limits.mem;
	copy_str(run->limits_mode, sizeof(run->limits_mode), r->limits_mode);
	copy_str(run->limits_why, sizeof(run->limits_why), r->env.why);
	run->pids_max =
	        r->env.mode != MS_ENVELOPE_EMULATED ? r->env.pids_max : 0;
	if (r->engine) { /* at the start; not yet at the open */
		ms_engine_stats es;
		ms_engine_get_stats(r->engine, &es);
		run->fast_workers = es.fast_workers;
		run->slow_workers = es.slow_workers;
	}
	gethostname(run->hostname, sizeof(run->hostname) - 1);
	struct utsname u;
	if (uname(&u) == 0)
		copy_str(run->kernel, sizeof(run->kernel), u.release);
	copy_str(run->clone_method, sizeof(run->clone_method), r->clone_method);
	ms__run_environment(run, r->work_dir);
	copy_str(run->cache_label, sizeof(run->cache_label), r->cache_label);
	run->input_ledger = r->info->ledgers;
}

/* One more clause of the line said as the run starts (r->start_note,
 * ms_replay_start_note), after those before it. */
static void
start_note_add(ms_replay *r, const char *fmt, ...)
{
	size_t k = strlen(r->start_note);
	if (k + 2 >= sizeof(r->start_note))
		return;
	if (k) {
		memcpy(r->start_note + k, "; ", 3);
		k += 2;
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r->start_note + k, sizeof(r->start_note) - k, fmt, ap);
	va_end(ap);
}

/*
 * With a profile the run moves into a real cgroup holding it
 * (ms_envelope.h) unless opts->envelope is "emulated"; "cgroup" makes a
 * missing hierarchy an error. The limits are then detected inside, so
 * the run records what the engine really sees next to what was asked.
 */
static int
enter_envelope(ms_replay *r, const ms_replay_opts *opts, ms_errbuf *eb)
{
	const char *how = opts->envelope ? opts->envelope : "auto";
	if (strcmp(how, "auto") && strcmp(how, "cgroup") &&
	    strcmp(how, "emulated"))
		return ms_fail(eb, MS_ERR_INVAL,
		               "envelope \"%s\": expected auto, cgroup or "
		               "emulated",
		               how);
	memset(&r->env, 0, sizeof(r->env));
	if (!opts->profile) {
		copy_str(r->limits_mode, sizeof(r->limits_mode), "host");
		return 0;
	}
	copy_str(r->limits_mode, sizeof(r->limits_mode), "emulated");
	if (strcmp(how, "emulated") == 0) {
		copy_str(r->env.why, sizeof(r->env.why), "--envelope emulated");
		return 0;
	}
	ms_limits want;
	ms_limits_detect(&want, NULL, NULL);
	int rc = ms_limits_apply_profile(&want, opts->profile, eb);
	/* The reference container's pids, unless the merge workers the
	 * engine starts for the profile's CPUs (ms_engine_fast_workers, and
	 * the slow lane's) would take more than half of them: then as many
	 * again beside the workers (2048 CPUs start 1025 workers, which 512
	 * pids could not hold). */
	uint32_t workers = ms_engine_fast_workers(want.cpus) + 1;
	uint32_t pids = workers > MS_ENVELOPE_PIDS_DEFAULT / 2
	                        ? MS_ENVELOPE_PIDS_DEFAULT + workers
	                        : MS_ENVELOPE_PIDS_DEFAULT;
	if (rc == 0)
		rc = ms_envelope_enter(&r->env, r->test.cgroup_root, NULL,
		                       want.profile_cpus,
		                       want.profile_mem, pids,
		                       strcmp(how, "cgroup") == 0, eb);
	if (rc == 0)
		copy_str(r->limits_mode, sizeof(r->limits_mode),
		         ms_envelope_mode_name(r->env.mode));
	/* auto that found no cgroup to hold the profile says so as the run
	 * starts, not only in the report's envelope line at its end. */
	if (rc == 0 && r->env.mode == MS_ENVELOPE_EMULATED)
		start_note_add(r,
		               "--profile \"%s\" is not enforced: %s; the "
		               "engine is sized from it (envelope emulated)",
		               opts->profile, r->env.why);
	return rc;
}

/* The default work directory (workdir.c): the scratch root
 * (MERGESCOPE_SCRATCH, else /dev/shm/mergescope-<uid>) when it has room for
 * this fixture's day, else the cache directory's work/ on disk (beside the
 * event database when there is no cache directory). */
uint64_t
ms__fixture_day_bytes(const ms_fixture *fx)
{
	uint64_t bytes = 0;
	for (size_t i = 0; i < ms_fixture_nslots(fx); i++) {
		const ms_fixture_slot *s = ms_fixture_slot_at(fx, i);
		for (int k = 0; k < MS_KIND_COUNT; k++)
			bytes += s->bytes[k];
	}
	return bytes;
}

uint64_t
ms__fixture_day_blocks(const ms_fixture *fx, uint64_t block)
{
	if (!block)
		return ms__fixture_day_bytes(fx);
	uint64_t bytes = 0;
	for (size_t i = 0; i < ms_fixture_nslots(fx); i++) {
		const ms_fixture_slot *s = ms_fixture_slot_at(fx, i);
		for (int k = 0; k < MS_KIND_COUNT; k++)
			bytes += (s->bytes[k] + block - 1) / block * block;
	}
	return bytes;
}

/* The memory limit a cgroup enforces on the run (0: none, or only
 * emulated). */
static uint64_t
enforced_mem(const ms_replay *r)
{
	return r->env.mode != MS_ENVELOPE_EMULATED ? r->env.mem_bytes : 0;
}

/* ms__work_need_fn of a fixture's day. */
static uint64_t
day_need(const void *fx, uint64_t block)
{
	return ms__work_need_bytes(ms__fixture_day_blocks(fx, block));
}

/* The cache directory, $XDG_CACHE_HOME/mergescope (else
 * ~/.cache/mergescope), into buf; false when there is none or it does not
 * fit. */
static bool
cache_root(char *buf, size_t n)
{
	char *slash;
	if (ms_fixture_cache_dir(buf, n, "work", 0) != 0 ||
	    (slash = strrchr(buf, '/')) == NULL)
		return false;
	*slash = '\0';
	return true;
}

static int
choose_work_dir(ms_replay *r, ms_errbuf *eb)
{
	const char *base = strrchr(r->db_path, '/');
	base = base ? base + 1 : r->db_path;
	char disk[PATH_MAX], cache[PATH_MAX];
	char *slash;
	if (cache_root(cache, sizeof(cache)) &&
	    (size_t)snprintf(disk, sizeof(disk), "%s/work", cache) <
	            sizeof(disk)) {
		/* <cache>/mergescope/work, made when chosen */
	} else {
		copy_str(disk, sizeof(disk), r->db_path);
		slash = strrchr(disk, '/');
		if (slash)
			*slash = '\0';
		else
			copy_str(disk, sizeof(disk), ".");
	}
	ms__work_choice c;
	int rc = ms__work_dir_default(day_need, r->fx, enforced_mem(r), disk,
	                              base, &c, eb);
	if (rc)
		return rc;
	if (!c.shm && ms_fs_mkdir_p(disk, 0755, NULL) != 0)
		return ms_fail(eb, ms_err_from_errno(errno),
		               "replay: cannot create the work directory's "
		               "parent %s: %s",
		               disk, strerror(errno));
	if (strlen(c.dir) >= sizeof(r->work_dir))
		return ms_fail(eb, MS_ERR_RANGE,
		               "replay: the work directory %s is too long; "
		               "give --work-dir",
		               c.dir);
	copy_str(r->work_dir, sizeof(r->work_dir), c.dir);
	copy_str(r->work_why, sizeof(r->work_why), c.why);
	return 0;
}

const char *
ms_replay_work_note(const ms_replay *r)
{
	return r->work_why;
}

const char *
ms_replay_start_note(const ms_replay *r)
{
	return r->start_note;
}

/* ---- ms_replay_open, step by step ------------------------------------ */

/* The options a replay cannot start without, and user strings kept whole
 * or refused, never cut. */
static int
open_check_opts(const ms_replay_opts *opts, const char *variant, ms_errbuf *eb)
{
	const struct {
		const char *what, *s;
		size_t cap;
	} given[] = {
		{ "fixture directory", opts->fixture_dir, PATH_MAX },
		{ "event database path", opts->db_path, PATH_MAX },
		{ "work directory", opts->work_dir, PATH_MAX },
		{ "plugin directory", opts->plugin_dir, PATH_MAX },
		{ "chain spec", variant, MS_EV_SPEC_MAX },
	};
	for (size_t i = 0; i < sizeof(given) / sizeof(given[0]); i++) {
		size_t n = given[i].s ? strlen(given[i].s) : 0;
		if (n >= given[i].cap)
			return ms_fail(eb, MS_ERR_RANGE,
			               "replay: the %s is %zu bytes; at most "
			               "%zu are accepted",
			               given[i].what, n, given[i].cap - 1);
	}
	if (!opts->work_dir && strlen(opts->db_path) + 16 >= PATH_MAX)
		return ms_fail(eb, MS_ERR_RANGE,
		               "replay: the event database path is too long "
		               "for the work directory beside it; give "
		               "--work-dir");
	return 0;
}

/* Copy the options into r and set up its lock, clock and settings (r
 * from calloc, r->opts and r->variant set). Cannot fail. */
static void
open_init(ms_replay *r, const ms_replay_opts *opts)
{
	copy_str(r->fixture_dir, sizeof(r->fixture_dir), opts->fixture_dir);
	copy_str(r->db_path, sizeof(r->db_path), opts->db_path);
	if (opts->work_dir)
		copy_str(r->work_dir, sizeof(r->work_dir), opts->work_dir);
	copy_str(r->plugin_dir, sizeof(r->plugin_dir),
	         opts->plugin_dir ? opts->plugin_dir : MS_DEFAULT_PLUGIN_DIR);
	copy_str(r->clone_method, sizeof(r->clone_method), "copy");
	r->keep_shard = opts->keep_shard;
	copy_str(r->cache_label, sizeof(r->cache_label),
	         opts->cache_label ? opts->cache_label : "uncontrolled");
	r->serial = opts->serial;
	r->plugin_host = opts->plugin_host;
	r->speed = opts->speed;
	r->wait_timeout_ns = opts->wait_timeout_ns > 0
	                             ? opts->wait_timeout_ns
	                             : MS_REPLAY_WAIT_TIMEOUT_DEFAULT_NS;
	r->ck_every_ns =
	        opts->checkpoint_every_ns > 0 ? opts->checkpoint_every_ns : -1;
	r->ck_room = opts->checkpoint_room_bytes; /* 0: resolved at the first */
	r->next_bp_id = 1;
	ms_mem_init(&r->mem, NULL);
	ms_clock_init_logical(&r->clock, 0);
	pthread_mutex_init(&r->mu, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&r->cv, &ca);
	pthread_cond_init(&r->live_cv, &ca);
	pthread_condattr_destroy(&ca);
	r->state = MS_REPLAY_READY;
}

/* An open fixture as built: its recorded hashes, then every scheduled
 * part's files there. */
static int
fixture_as_built(const ms_fixture *fx, const char *dir, ms_errbuf *eb)
{
	int rc = ms_fixture_verify(fx, NULL, NULL, eb);
	for (size_t i = 0; rc == 0 && i < ms_fixture_nslots(fx); i++) {
		const ms_fixture_slot *s = ms_fixture_slot_at(fx, i);
		for (int k = 0; k < MS_KIND_COUNT; k++) {
			char path[PATH_MAX];
			struct stat st;
			if (ms_fixture_slot_path(fx, i, (enum ms_part_kind)k,
			                         path, sizeof(path)))
				return ms_fail(eb, MS_ERR_RANGE,
				               "fixture %s: part %016llx: path "
				               "too long",
				               dir,
				               (unsigned long long)s->part_id);
			if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
				return ms_fail(
				        eb, MS_ERR_NOTFOUND,
				        "fixture %s: part %016llx (%s) is "
				        "missing: %s",
				        dir, (unsigned long long)s->part_id,
				        ms_part_kind_name((enum ms_part_kind)k),
				        path);
		}
	}
	return rc;
}

int
ms_replay_check_fixture(const char *dir, ms_errbuf *eb)
{
	ms_fixture *fx = NULL;
	int rc = ms_fixture_open(&fx, dir, eb);
	if (rc == 0)
		rc = fixture_as_built(fx, dir, eb);
	ms_fixture_close(fx);
	return rc;
}

/* A fixture whose build proved its parts (ms_fixture_slot_proof) but
 * whose block ledgers file cannot be used (why: ms_fixture_blocks_open's
 * error): the run goes on reading and checking every part, and says so
 * as it starts (r->start_note), rather than only run slower. */
static void
note_blocks_unusable(ms_replay *r, const char *why)
{
	char hash[MS_KIND_COUNT][33];
	ms_ledger_set led;
	if (r->fx_proven || !ms_fixture_nslots(r->fx) ||
	    !ms_fixture_slot_proof(r->fx, 0, hash, &led))
		return;
	start_note_add(r,
	         "fixture %s: its block ledgers cannot be used (%s): every "
	         "part is read and checked, which takes longer; `mergescope "
	         "fixture check` on it checks the rest",
	         r->fixture_dir, why);
}

/* The fixture: manifest first (names a missing or foreign one), then its
 * recorded hashes, then every scheduled part's directories. */
static int
open_fixture(ms_replay *r, ms_errbuf *eb)
{
	int rc;
	if ((rc = ms_fixture_open(&r->fx, r->fixture_dir, eb)))
		return rc;
	r->info = ms_fixture_get_info(r->fx);
	if ((rc = fixture_as_built(r->fx, r->fixture_dir, eb)))
		return rc;
	/* The ledgers of the blocks the fixture's build checked, answered
	 * by the block cache from the fixture's file (kept open, read on
	 * demand): a publication taken as checked by its files hash
	 * (proven_by_fixture) is not decoded, yet a merge output that holds
	 * one of its blocks, and a dropped trace's ledger (the gates'), find
	 * the block's ledgers there. Without them (a fixture with no proof,
	 * or a file that is not what was built) every part is read. */
	int64_t t0 = ms_mono_ns();
	ms_fixture_blocks *fb = NULL;
	ms_errbuf beb = { "" };
	r->fx_proven = ms_fixture_blocks_open(&fb, r->fx, &beb) == 0;
	ms__blkcache_attach(r->blocks, fb);
	note_blocks_unusable(r, beb.msg);
	atomic_fetch_add(&r->check_ns, ms_mono_ns() - t0);
	ms_clock_set(&r->clock, r->info->day_start_ns);
	return 0;
}

/* The envelope, then the limits as detected inside it, and the sampling
 * pipeline (plugins load here). */
static int
open_pipeline(ms_replay *r, const ms_replay_opts *opts, ms_errbuf *eb)
{
	int rc;
	if ((rc = enter_envelope(r, opts, eb)))
		return rc;
	ms_limits_detect(&r->limits, NULL, NULL);
	if (opts->profile) {
		copy_str(r->profile, sizeof(r->profile), opts->profile);
		if ((rc = ms_limits_apply_profile(&r->limits, opts->profile,
		                                  eb)))
			return rc;
	}
	if (strcmp(r->variant, "disabled") == 0)
		return 0;
	ms_pipeline_opts po;
	memset(&po, 0, sizeof(po));
	po.spec = r->variant;
	po.plugin_dir = r->plugin_dir;
	po.policy = r->policy;
	po.decide_timeout_ns = opts->decide_timeout_ns;
	po.oversized_cap = opts->oversized_cap;
	po.drop_set_budget = opts->drop_set_budget;
	po.host_mode = opts->plugin_host;
	po.host_exe = opts->plugin_host_exe;
	po.limits = &r->limits;
	po.mem = &r->mem;
	/* What the plugins log goes to the event database (plog.c). */
	if ((rc = ms__plog_init(&r->plog, &r->clock)))
		return ms_fail(eb, rc,
		               "replay: out of memory for the plugins' log "
		               "lines (%zu bytes)",
		               r->plog.cap * sizeof(*r->plog.lines));
	po.log = ms__plog_sink;
	po.log_ctx = &r->plog;
	ms_errbuf peb = { { 0 } };
	if ((rc = ms_pipeline_open(&r->pipe, &po, &peb))) {
		/* Say which variant, whatever the chain reported. */
		ms_fail(eb, rc, "variant '%s': %s", r->variant,
		        peb.msg[0] ? peb.msg : ms_strerror(rc));
		return rc;
	}
	ms_chain *c = ms_pipeline_chain(r->pipe);
	const char *names[MS_EV_LINKS_MAX];
	size_t n = ms_chain_len(c);
	for (size_t i = 0; i < n && i < MS_EV_LINKS_MAX; i++)
		names[i] = ms_plugin_name(ms_chain_plugin(c, i));
	ms__plog_set_names(&r->plog, names, n);
	return 0;
}

/* The note that the shard directory the user gave is short of room for
 * the day, after the one already said (a killed run's shard removed). */
static void
work_room_note(ms_replay *r, uint64_t avail, bool links, uint64_t day)
{
	char room[sizeof(r->work_why)];
	if (!ms__work_room_note(room, sizeof(room), r->work_dir, avail, links,
	                        day))
		return;
	size_t k = strlen(r->work_why);
	snprintf(r->work_why + k, sizeof(r->work_why) - k, "%s%s",
	         k ? "\n" : "", room);
}

/* A day that cannot even be staged in the shard directory (fd) is
 * refused before it is copied part by part into a full file system; one
 * the user gave with less room than the day may need is said to be short
 * (after rec's note, a killed run's shard removed). */
static int
work_room_checks(ms_replay *r, int fd, int rec, ms_errbuf *eb)
{
	struct statvfs sv;
	struct stat fst, wst;
	if (fstatvfs(fd, &sv) != 0 || fstat(fd, &wst) != 0 ||
	    stat(r->fixture_dir, &fst) != 0)
		return 0;
	bool links = fst.st_dev == wst.st_dev;
	uint64_t day = ms__fixture_day_blocks(r->fx, sv.f_frsize);
	int rc = ms__work_room_check(r->work_dir,
	                             (uint64_t)sv.f_bavail * sv.f_frsize, links,
	                             day, eb);
	/* Linked parts are charged where the fixture was written; merge
	 * outputs, up to the day again, are the run's. */
	char fs[32];
	ms__fs_type_name(r->work_dir, fs, sizeof(fs));
	if (rc == 0)
		rc = ms__work_mem_check(r->work_dir, strcmp(fs, "tmpfs") == 0,
		                        enforced_mem(r),
		                        links ? ms__work_need_bytes(day) - day
		                              : ms__work_need_bytes(day),
		                        eb);
	if (rc)
		return rc;
	/* A directory the run chose has room for the day. */
	if (!r->work_why[0] || rec)
		work_room_note(r, (uint64_t)sv.f_bavail * sv.f_frsize, links,
		               day);
	return 0;
}

/* The shard directory from here on is the run's, removed at close (and
 * by the watcher of a run that is killed). */
static void
work_dir_taken(ms_replay *r)
{
	r->work_created = true;
	if (r->opts.created)
		r->opts.created(r->opts.created_arg, "scratch", r->work_dir);
}

/* Checks of an open, locked shard directory that was found empty (or
 * emptied of a killed run's shard: rec): what this process cannot write
 * in is refused for that first, then a day it has no room for; then it is
 * the run's. A directory the user made is taken only once every check
 * has passed, so a refused run leaves it as it was; one this run made (or
 * a killed run's) is taken at once and removed again. */
static int
claim_work_dir(ms_replay *r, bool existed, int fd, int rec, ms_errbuf *eb)
{
	if (!existed || rec)
		work_dir_taken(r);
	int e = ms_replay_dir_probe(r->work_dir);
	if (e)
		return ms_fail(eb, ms_err_from_errno(e),
		               "shard directory %s: cannot write in it (%s); "
		               "give a directory this user may write in "
		               "(nothing was staged)",
		               r->work_dir, strerror(e));
	int rc = work_room_checks(r, fd, rec, eb);
	if (!rc)
		rc = ms_owner_write(r->work_dir,
		                    r->keep_shard ? "kept" : "scratch",
		                    r->db_path, eb);
	if (!rc && !r->work_created)
		work_dir_taken(r);
	return rc;
}

/* A fresh shard clone, in a directory that is new or empty: the run
 * deletes it at the end, so it must not hold anything else. It is scratch
 * owned by this process: what a killed run leaves is found and removed
 * later (ms_owner.h). The owner note is the database. The directory is
 * locked (flock, held until close) before it is found empty: two runs
 * given one --work-dir at once would otherwise both find it empty, both
 * stage into it, and the first to end would delete the other's shard. */
static int
open_work_dir(ms_replay *r, ms_errbuf *eb)
{
	/* Without --work-dir: chosen now that the day's size and the
	 * envelope's memory limit are known. */
	int crc;
	if (!r->work_dir[0] && (crc = choose_work_dir(r, eb)))
		return crc;
	if (!r->keep_shard && ms_fs_path_within(r->db_path, r->work_dir))
		return ms_fail(eb, MS_ERR_INVAL,
		               "the event database %s lies inside the shard "
		               "directory %s, which is deleted after the run; "
		               "give a path outside it",
		               r->db_path, r->work_dir);
	struct stat st;
	bool existed = stat(r->work_dir, &st) == 0;
	if (existed && !S_ISDIR(st.st_mode))
		return ms_fail(eb, MS_ERR_EXISTS,
		               "shard directory %s exists and is not a "
		               "directory; give a new or empty directory "
		               "(nothing was removed)",
		               r->work_dir);
	if (!existed && ms_fs_mkdir_p(r->work_dir, 0755, NULL) < 0)
		return ms_fail(eb, ms_err_from_errno(errno),
		               "shard directory %s: cannot be created: %s",
		               r->work_dir, strerror(errno));
	/* From here on a failure leaves the directory as it was: removed
	 * only when this run made it and nobody else has taken it. */
	int fd = open(r->work_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return ms_fail(eb, ms_err_from_errno(errno),
		               "shard directory %s: %s", r->work_dir,
		               strerror(errno));
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		int e = errno;
		close(fd);
		if (e == EWOULDBLOCK)
			return ms_fail(eb, MS_ERR_EXISTS,
			               "shard directory %s is in use by another "
			               "run; give a new or empty one (nothing "
			               "was removed)",
			               r->work_dir);
		return ms_fail(eb, ms_err_from_errno(e),
		               "shard directory %s: lock: %s", r->work_dir,
		               strerror(e));
	}
	r->work_lock = fd;
	DIR *d = fdopendir(dup(fd));
	struct dirent *de = NULL;
	while (d && (de = readdir(d)) &&
	       (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")))
		;
	bool empty = d && !de;
	if (d)
		closedir(d);
	int rec = empty ? 0
	                : ms__work_reclaim(r->work_dir, r->db_path,
	                                   r->work_why, sizeof(r->work_why),
	                                   eb);
	if (rec < 0)
		return rec;
	if (!empty && !rec)
		return ms_fail(eb, MS_ERR_EXISTS,
		               "shard directory %s exists and is not an "
		               "empty directory; give a new or empty one "
		               "(nothing was removed)",
		               r->work_dir);
	return claim_work_dir(r, existed, fd, rec, eb);
}

/* Publications and merges are group-committed (defer_sync: durable at
 * the end of the phase, or when 64 merged parts wait for deletion;
 * anything that reads the shard's files while the run goes on, a
 * checkpoint, calls ms_shard_sync first), and a commit is one syncfs of
 * the work directory's file system and the directory's fsync
 * (commit_syncfs): the scratch shard is what the run writes there,
 * beside its event database. */
ms_shard_opts
ms__replay_shard_opts(ms_replay *r)
{
	ms_shard_opts so = { .dir = r->work_dir,
		             .mem = &r->mem,
		             .io = &r->io,
		             .reap_async = true,
		             .defer_sync = true,
		             .commit_syncfs = true };
	return so;
}

/* The shard in the work directory. Merge outputs must not take the ID of
 * a part still to be published: hand out IDs above every scheduled
 * part's. */
static int
open_shard(ms_replay *r, ms_errbuf *eb)
{
	ms_shard_opts so = ms__replay_shard_opts(r);
	so.create = true;
	int rc = ms_shard_open(&r->shard, &so, eb);
	uint64_t max_id = 0, id = 0;
	for (size_t i = 0; rc == 0 && i < ms_fixture_nslots(r->fx); i++) {
		uint64_t sid = ms_fixture_slot_at(r->fx, i)->part_id;
		if (sid > max_id)
			max_id = sid;
	}
	while (rc == 0 && id < max_id)
		rc = ms_shard_new_id(r->shard, &id, eb);
	/* The dictionary the fixture's parts name, before any is staged;
	 * merges compress with it too. */
	if (rc == 0)
		rc = ms_fixture_stage_dict(r->fx, r->shard, eb);
	return rc;
}

/* The engine over the shard, with the controller's hooks (replay_int.h). */
int
ms__replay_open_engine(ms_replay *r, const ms_engine_state *resume,
                       ms_errbuf *eb)
{
	ms_engine_opts eo;
	memset(&eo, 0, sizeof(eo));
	eo.resume = resume;
	eo.shard = r->shard;
	eo.clock = &r->clock;
	eo.mem = &r->mem;
	eo.io = &r->io;
	eo.mem_limit = r->limits.mem;
	eo.cpus = r->limits.cpus;
	eo.serial = r->serial;
	eo.pipeline = r->pipe;
	eo.staging = r->staging;
	ms__replay_segment(r, &eo.segment_min_ns, &eo.segment_max_ns);
	eo.dispatch_hook = on_dispatch;
	eo.dispatch_arg = r;
	eo.on_drop = on_drop;
	eo.drop_arg = r;
	eo.event = on_engine_event;
	eo.event_arg = r;
	return r->test.engine_open
	               ? r->test.engine_open(r->test.engine_open_arg,
	                                     &r->engine, &eo, eb)
	               : ms_engine_open(&r->engine, &eo, eb);
}

static void
db_created(void *arg, const char *path)
{
	const ms_replay *r = arg;
	r->opts.created(r->opts.created_arg, "db", path);
}

/* The event database, created with the run record in its first commit
 * (ms_rec_opts.run): a process killed at any instant from then on leaves
 * a run for the watcher to mark aborted. The engine's workers and the
 * staging method are not known yet: ms_replay_start records the run
 * again, with them and its start time. */
static int
open_recorder(ms_replay *r, ms_errbuf *eb)
{
	ms_ev_run run;
	fill_run_record(r, &run);
	run.clone_method[0] = '\0';
	ms_rec_opts ro = { .path = r->db_path,
		           .overwrite = r->opts.db_overwrite,
		           .run = &run,
		           .created = r->opts.created ? db_created : NULL,
		           .created_arg = r };
	int rc = ms_rec_open(&r->rec, &ro, eb);
	if (rc == 0)
		r->run_recorded = true;
	return rc;
}

/*
 * Open a replay: check the options, then each step in turn, the first
 * failure closing what the earlier ones opened (ms_replay_close): the
 * grace policy, the fixture, limits and pipeline, the page cache the run
 * starts from (after every check, before the first fixture read), the
 * work directory, the shard, the event database, the engine.
 */
int
ms_replay_open(ms_replay **out, const ms_replay_opts *opts, ms_errbuf *eb)
{
	return ms__replay_open_test(out, opts, NULL, eb);
}

int
ms__replay_open_test(ms_replay **out, const ms_replay_opts *opts,
                     const ms__replay_test *test, ms_errbuf *eb)
{
	*out = NULL;
	if (!opts || !opts->fixture_dir || !opts->db_path)
		return ms_fail(eb, MS_ERR_INVAL,
		               "replay: a fixture directory and a database "
		               "path are required");
	const char *variant = opts->variant ? opts->variant : "disabled";
	int rc = open_check_opts(opts, variant, eb);
	if (rc)
		return rc;
	ms_replay *r = calloc(1, sizeof(*r));
	if (!r)
		return ms_fail(
		        eb, MS_ERR_NOMEM,
		        "replay: out of memory for its state (%zu bytes)",
		        sizeof(*r));
	r->opts = *opts;
	r->work_lock = -1;
	if (test)
		r->test = *test;
	r->variant = strdup(variant);
	if (!r->variant) {
		free(r);
		return ms_fail(
		        eb, MS_ERR_NOMEM,
		        "replay: out of memory for a copy of its variant "
		        "(%zu bytes)",
		        strlen(variant) + 1);
	}
	open_init(r, opts);
	if (ms__blkcache_new(&r->blocks)) {
		rc = ms_fail(eb, MS_ERR_NOMEM,
		             "replay: out of memory for its cache of checked "
		             "blocks (%zu bytes)",
		             ms__blkcache_size());
		goto fail;
	}
	if (ms__recent_init(&r->recent)) {
		rc = ms_fail(eb, MS_ERR_NOMEM,
		             "replay: out of memory for its ring of recent "
		             "merges (%zu bytes)",
		             (size_t)MS__RECENT_BLOCK);
		goto fail;
	}
	if (opts->grace_policy &&
	    ms_grace_policy_parse(opts->grace_policy, &r->policy)) {
		rc = ms_fail(eb, MS_ERR_INVAL,
		             "--grace-policy '%s': expected selection or "
		             "trace",
		             opts->grace_policy);
		goto fail;
	}
	if (opts->staging &&
	    ms_staging_mode_parse(opts->staging, &r->staging)) {
		rc = ms_fail(eb, MS_ERR_INVAL,
		             "--staging '%s': expected retain or reread",
		             opts->staging);
		goto fail;
	}
	if ((rc = open_fixture(r, eb)) || (rc = open_pipeline(r, opts, eb)) ||
	    (rc = ms__cache_prepare(r->fixture_dir, opts->cache_label, eb)) ||
	    (rc = open_work_dir(r, eb)) || (rc = open_shard(r, eb)) ||
	    (rc = open_recorder(r, eb)) ||
	    (rc = ms__replay_open_engine(r, NULL, eb)))
		goto fail;
	*out = r;
	return 0;
fail:
	ms_replay_close(r);
	return rc;
}

/* Out of memory until the gates: the oracle's table is written to the
 * work directory (where it cannot be: kept, nothing else changes). When
 * that directory is itself in memory (a tmpfs), to a file without a name
 * in the cache directory when that is on a disk; never to another tmpfs,
 * where the table would only move out of the process's resident set,
 * still in RAM. */
static void
spill_oracle(ms_replay *r)
{
	char path[PATH_MAX];
	if (!ms_fs_in_memory(r->work_dir)) {
		if (snprintf(path, sizeof(path), "%s/%s", r->work_dir,
		             MS__ORACLE_SPILL) < (int)sizeof(path))
			(void)ms__oracle_spill(&r->oracle, path);
		return;
	}
	if (cache_root(path, sizeof(path)) &&
	    ms_fs_mkdir_p(path, 0755, NULL) == 0 && !ms_fs_in_memory(path))
		(void)ms__oracle_spill_unlinked(&r->oracle, path);
}

/* The verdict oracle's thread: it needs only the fixture and the spec. */
static void *
oracle_main(void *arg)
{
	ms_replay *r = arg;
	ms_rusage_name_thread("ms-oracle");
	ms__give_way();
	ms__test_delay(r->test.oracle_delay_ns);
	const char *spec = oracle_spec(r);
	r->oracle_rc =
	        ms__oracle_run(&r->oracle, r->fx, spec, r->plugin_dir,
	                       r->opts.decide_timeout_ns, r->opts.plugin_host,
	                       r->opts.plugin_host_exe, &r->oracle_cancel,
	                       true);
	if (r->oracle_rc == 0 && r->oracle.ok)
		spill_oracle(r);
#ifdef __GLIBC__
	malloc_trim(0);
#endif
	pthread_mutex_lock(&r->mu);
	r->oracle_end_mono = ms_mono_ns();
	r->oracle_done = true;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

int
ms__oracle_wait(ms_replay *r)
{
	if (!r->oracle_started)
		return MS_ERR_STATE;
	if (!r->oracle_joined) {
		pthread_join(r->oracle_thread, NULL);
		r->oracle_joined = true;
	}
	return r->oracle_rc;
}

int
ms__oracle_join(ms_replay *r)
{
	int rc = ms__oracle_wait(r);
	if (rc == 0 && r->oracle.spill[0])
		r->oracle_rc = rc = ms__oracle_unspill(&r->oracle);
	return rc;
}

/* A start that fails once the run is on record: the error is its end
 * record's (finish_record, at close). Returns rc. */
/* A thread that pthread_create could not start (error e): why, and where
 * to look (ms_thread_fail). */
static int
thread_failed(ms_errbuf *eb, const char *what, int e)
{
	return ms_thread_fail(eb, MS_ERR_IO, e, "cannot start the %s", what);
}

static int
start_failed(ms_replay *r, int rc, const ms_errbuf *eb)
{
	pthread_mutex_lock(&r->mu);
	copy_str(r->error, sizeof(r->error),
	         eb && eb->msg[0] ? eb->msg : ms_strerror(rc));
	pthread_mutex_unlock(&r->mu);
	return rc;
}

static int
replay_start(ms_replay *r, ms_errbuf *eb)
{
	if (r->started)
		return ms_fail(eb, MS_ERR_STATE, "replay already started");
	r->start_called = true;
	/* The run on record first: a plugin that takes the process down in
	 * the oracle's Decide, while the parts are staged, leaves the run to
	 * be marked aborted (tui/supervise.c), not a database without it. The
	 * staging method is known once the parts are staged. */
	ms_ev_run run;
	fill_run_record(r, &run);
	run.clone_method[0] = '\0';
	int rc = ms_rec_run_begin(r->rec, &run, eb);
	if (rc)
		return rc;
	r->run_recorded = true;
	/* The sampler first, for the start's only thread whose failure the
	 * run goes on without: the split peaks are figures to read, the
	 * merges and gates do not need them. The first phase's take drops
	 * what it samples before. */
	if (!r->rss.started) {
		ms_errbuf re = { "" };
		if (ms__rsswatch_start(&r->rss, 0, &re))
			start_note_add(r,
			               "%s; the run goes on without the split "
			               "peaks of the resident set (they read 0)",
			               re.msg);
	}
	/* The figures of the time before the primary phase (the phase
	 * table's staging row, run_day) start here, the sampler's peaks
	 * included. */
	phase_begin(r, &r->before_ru, &r->before_mem, &r->before_io);
	/* The oracle beside the staging: both come before the day's clock,
	 * which starts once the oracle has ended (run_day). */
	if (!r->oracle_started) {
		int e = ms_thread_start(&r->oracle_thread, MS_THREAD_STACK,
		                        oracle_main, r);
		if (e)
			return start_failed(
			        r, thread_failed(eb, "oracle thread", e), eb);
		r->oracle_started = true;
	}
	if ((rc = stage_parts(r, eb)) ||
	    (rc = ms_rec_run_staged(r->rec, r->clone_method, eb)))
		return start_failed(r, rc, eb);
	r->t0_mono = ms_mono_ns();
	pthread_mutex_lock(&r->mu);
	r->state = MS_REPLAY_RUNNING;
	if (r->opts.start_paused) {
		r->mode = MODE_STEP; /* stops at the first publication */
	}
	pthread_mutex_unlock(&r->mu);
	if (ms__checker_start(r))
		return thread_failed(eb, "part checker's thread", errno);
	if (live_start(r))
		return thread_failed(eb, "live reader", errno);
	int e = ms_thread_start(&r->thread, MS__CONTROLLER_STACK,
	                        controller_main, r);
	if (e)
		return thread_failed(eb, "controller thread", e);
	r->started = true;
	return 0;
}

/* A start that failed on the event log returns its failure, which the
 * caller says: not again at close (rec_close). */
int
ms_replay_start(ms_replay *r, ms_errbuf *eb)
{
	int rc = replay_start(r, eb);
	if (rc && ms_rec_failed(r->rec, NULL))
		atomic_store(&r->rec_fail_said, true);
	return rc;
}

int
ms_replay_wait(ms_replay *r, int64_t timeout_ns)
{
	pthread_mutex_lock(&r->mu);
	struct timespec ts = ms_mono_timespec(
	        ms_mono_ns() + (timeout_ns < 0 ? 0 : timeout_ns));
	int rc = 0;
	while (r->state != MS_REPLAY_DONE && r->state != MS_REPLAY_FAILED) {
		if (timeout_ns < 0) {
			pthread_cond_wait(&r->cv, &r->mu);
		} else if (pthread_cond_timedwait(&r->cv, &r->mu, &ts) ==
		           ETIMEDOUT) {
			rc = MS_ERR_TIMEOUT;
			break;
		}
	}
	pthread_mutex_unlock(&r->mu);
	return rc;
}

/* The run's end record, with `status`, or (NULL) the one the state
 * says. */
static void
record_end(ms_replay *r, const char *status)
{
	if (!r->rec || !r->run_recorded)
		return;
	ms_ev_run_end e;
	memset(&e, 0, sizeof(e));
	/* Under mu: a run closed while a merge is under way still has a
	 * worker that tallies it (tally_merge_done) until the engine is
	 * closed, after this record. */
	pthread_mutex_lock(&r->mu);
	copy_str(e.status, sizeof(e.status),
	         status                         ? status
	         : r->state == MS_REPLAY_DONE     ? "complete"
	         : !strcmp(r->error, "aborted") ? "aborted"
	                                        : "failed");
	if (!strcmp(e.status, "failed"))
		copy_str(e.error, sizeof(e.error), r->error);
	e.publications = r->pub_done;
	pthread_mutex_unlock(&r->mu);
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	e.ended_unix_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	e.wall_ns = r->t0_mono ? since_start(r) : 0; /* 0: not started */
	if (r->engine) {
		ms_engine_stats es;
		ms_engine_get_stats(r->engine, &es);
		snprintf(e.selection_fp, sizeof(e.selection_fp), "%016llx",
		         (unsigned long long)es.fingerprint);
		/* The engine's own count, not the tally of the merge events
		 * received: event_count recomputed from the log compares it
		 * with the merge rows, another source. */
		e.merges_completed = es.merges_done;
	}
	ms_view *v = NULL;
	if (r->shard && ms_shard_view(r->shard, &v, NULL) == 0) {
		ms_ledger_of_view(v, &e.final_ledger, NULL, NULL);
		ms_view_release(v);
	}
	e.expected_ledger = r->has_expected ? r->expected
	                    : r->info       ? r->info->ledgers
	                                    : e.final_ledger;
	/* The plugins' own counters (SkyWalking's per rule, detdrop's
	 * observed ratio), from the hosts in process mode. */
	if (r->pipe) {
		ms_chain *c = ms_pipeline_chain(r->pipe);
		size_t n = ms_chain_len(c);
		for (size_t i = 0; i < n && i < MS_EV_LINKS_MAX; i++) {
			ms_plugin_stat st[64];
			size_t k = ms_chain_link_plugin_stats(c, i, st, 64, NULL);
			for (size_t j = 0; j < k && j < 64; j++) {
				ms_ev_plugin_stat ps = { .link = (uint32_t)i,
					                 .value = st[j].value };
				copy_str(ps.name, sizeof(ps.name),
				         st[j].name ? st[j].name : "");
				ms_rec_plugin_stat(r->rec, &ps, NULL);
			}
		}
	}
	ms__plog_record(&r->plog, r->rec, r->t0_mono);
	ms_rec_index(r->rec, NULL); /* counted in record_ns below */
	ms_rec_stats rs;
	ms_rec_stats_get(r->rec, &rs);
	e.record_ns = rs.busy_ns;
	ms_envelope_stats cs;
	ms_envelope_read(&r->env, &cs);
	e.cgroup_peak_bytes = cs.peak_bytes;
	e.cgroup_nr_throttled = cs.nr_throttled;
	e.cgroup_throttled_ns = cs.throttled_ns;
	e.cgroup_oom_kills = cs.oom_events;
	e.cgroup_limit_hits = cs.failcnt;
	ms_rec_run_end(r->rec, &e, NULL);
}

/* At close: the end record, unless the run recorded it as it completed
 * and has not gone back since. */
static void
finish_record(ms_replay *r)
{
	if (!r->end_recorded)
		record_end(r, NULL);
}

/* Remove the scratch shard (test.rm_work_dir in a test); left (may be
 * NULL) gets its path and why when it stays. */
static void
remove_work_dir(ms_replay *r, ms_errbuf *left)
{
	if (r->keep_shard || !r->work_dir[0] || !r->work_created)
		return;
	ms_errbuf why = { { 0 } };
	int rc = r->test.rm_work_dir ? r->test.rm_work_dir(r->work_dir, &why)
	                             : ms_fs_rm_tree(r->work_dir, &why);
	if (rc < 0)
		ms_fail(left, rc, "the scratch shard %s was not removed: %s",
		        r->work_dir, why.msg[0] ? why.msg : ms_strerror(rc));
}

/* Close the event log after writing what the run recorded as it closed
 * (a merge completing after the end, what plugins logged in close(), the
 * end of a run stopped before its end); lost (may be NULL) gets the
 * log's failure when the run has not said it (recorder_check). */
static void
rec_close(ms_replay *r, ms_errbuf *lost)
{
	ms_errbuf re = { { 0 } };
	if (r->rec && ms_rec_flush(r->rec, &re) < 0 &&
	    !atomic_load(&r->rec_fail_said))
		ms_fail(lost, MS_ERR_IO,
		        "cannot record events: %s (the events after it are "
		        "missing)",
		        re.msg);
	ms_rec_close(r->rec, NULL);
}

/* ms_replay_close; left as remove_work_dir's, lost as rec_close's. */
static void
replay_close(ms_replay *r, ms_errbuf *left, ms_errbuf *lost)
{
	if (!r)
		return;
	/* The oracle stops with the controller (a quit or a signal while
	 * the day waits for it: wait_oracle), after at most the chain call
	 * it is in (oracle.c), not the day's remaining batches. */
	atomic_store(&r->oracle_cancel, true);
	pthread_mutex_lock(&r->mu);
	r->abort_req = true;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
	if (r->started)
		pthread_join(r->thread, NULL);
	live_stop(r);
	ms__rsswatch_stop(&r->rss);
	if (r->oracle_started)
		ms__oracle_wait(r);
	ms__checker_stop(r);
	/* Never started: nothing ran, nothing is left to read (the record
	 * the open wrote would read as a run killed at its start). */
	bool ran = r->start_called;
	if (ran)
		finish_record(r);
	ms_engine_close(r->engine);
	/* The chain closes before the database: what its plugins log in
	 * close() is recorded with the rest. */
	ms_pipeline_close(r->pipe);
	r->pipe = NULL;
	if (ran && r->run_recorded)
		ms__plog_record(&r->plog, r->rec, r->t0_mono);
	bool made_db = r->rec != NULL;
	rec_close(r, ran ? lost : NULL);
	if (made_db && !ran)
		ms_evdb_remove(r->db_path);
	ms__checker_release(r);
	ms_shard_close(r->shard);
	ms_fixture_close(r->fx);
	remove_work_dir(r, left);
	if (r->work_lock >= 0)
		close(r->work_lock); /* after the removal: nobody took it */
	ms__rck_release(r);
	/* Out of the cgroup last: the shard's pages were charged to it. */
	(void)ms_envelope_leave(&r->env, NULL);
	free(r->track);
	free(r->track_idx);
	free(r->track_led);
	free(r->track_led_free);
	ms__dropped_release(&r->dropped);
	ms__recent_release(&r->recent);
	ms__oracle_release(&r->oracle);
	ms__plog_release(&r->plog);
	ms__blkcache_free(r->blocks);
	pthread_cond_destroy(&r->cv);
	pthread_cond_destroy(&r->live_cv);
	pthread_mutex_destroy(&r->mu);
	free(r->variant);
	free(r);
}

void
ms_replay_close(ms_replay *r)
{
	replay_close(r, NULL, NULL);
}

int
ms_replay_close_fold(ms_replay *r, char *db, size_t n, ms_errbuf *eb,
                     ms_errbuf *left)
{
	if (db && n)
		db[0] = '\0';
	if (left)
		left->msg[0] = '\0';
	if (!r)
		return 0;
	char path[sizeof(r->db_path)];
	ms_errbuf lost = { { 0 } };
	snprintf(path, sizeof(path), "%s", r->db_path);
	replay_close(r, left, &lost);
	if (db && n)
		snprintf(db, n, "%s", path);
	int rc = ms_evdb_fold_wal(path, eb);
	if (!lost.msg[0])
		return rc;
	ms_errbuf fold = { { 0 } };
	if (rc && eb)
		fold = *eb;
	return ms_fail(eb, rc ? rc : MS_ERR_IO, "%s%s%s", lost.msg,
	               rc ? "; " : "", rc ? fold.msg : "");
}

/* ---- commands --------------------------------------------------------- */

int
ms_replay_command(ms_replay *r, enum ms_replay_cmd cmd, ms_errbuf *eb)
{
	pthread_mutex_lock(&r->mu);
	int rc = 0;
	r->seek_fresh = false;
	if (r->state == MS_REPLAY_DONE || r->state == MS_REPLAY_FAILED) {
		rc = ms_fail(eb, MS_ERR_STATE, "the run is over (%s)",
		             ms_replay_state_name(r->state));
	} else {
		switch (cmd) {
		case MS_RCMD_RUN:
			r->mode = MODE_RUN;
			r->pause_req = false;
			break;
		case MS_RCMD_PAUSE:
			if (r->state == MS_REPLAY_RUNNING)
				r->pause_req = true;
			break;
		case MS_RCMD_STEP:
			r->mode = MODE_STEP;
			r->pause_req = false;
			break;
		case MS_RCMD_STEP_BARRIER:
			r->mode = MODE_STEP_BARRIER;
			r->pause_req = false;
			break;
		}
		if (cmd != MS_RCMD_PAUSE && (r->state == MS_REPLAY_PAUSED ||
		                             r->state == MS_REPLAY_BREAK)) {
			r->state = MS_REPLAY_RUNNING;
			r->break_why[0] = '\0';
		}
		pthread_cond_broadcast(&r->cv);
	}
	pthread_mutex_unlock(&r->mu);
	notify(r);
	return rc;
}

/* Is run-to target bp behind the run already (the run went by it while
 * it was being set)? mu held. */
static bool
run_to_passed(const ms_replay *r, const ms_breakpoint *bp)
{
	if (bp->kind == MS_BP_MERGE)
		return bp->n <= r->past_seq;
	/* Held at a publication point after it: the target stops here. */
	return bp->kind == MS_BP_TIME && bp->absolute &&
	       !(r->held_ns && bp->t < r->held_ns) && bp->t < r->past_ns;
}

static int
add_bp(ms_replay *r, ms_breakpoint *bp, int *id, ms_errbuf *eb)
{
	pthread_mutex_lock(&r->mu);
	if (bp->once && run_to_passed(r, bp)) {
		r->seek_fresh = false;
		pthread_mutex_unlock(&r->mu);
		return MS_REPLAY_PASSED;
	}
	/* A run-to target has room of its own: a `g` (and going back) works
	 * with every breakpoint set. */
	size_t once = 0;
	for (size_t i = 0; i < r->nbps; i++)
		once += r->bps[i].once;
	if (!bp->once && r->nbps - once == MAX_BPS) {
		pthread_mutex_unlock(&r->mu);
		return ms_fail(eb, MS_ERR_RANGE,
		               "at most %d breakpoints; delete one first",
		               MAX_BPS);
	}
	if (bp->once && once == MAX_RUN_TO) {
		pthread_mutex_unlock(&r->mu);
		return ms_fail(eb, MS_ERR_RANGE,
		               "at most %d run-to targets at once; wait for "
		               "the run to stop",
		               MAX_RUN_TO);
	}
	bp->id = r->next_bp_id++;
	r->bps[r->nbps++] = *bp;
	if (id)
		*id = bp->id;
	pthread_mutex_unlock(&r->mu);
	notify(r);
	return 0;
}

int
ms_replay_break_add(ms_replay *r, const char *spec, int *id, ms_errbuf *eb)
{
	ms_breakpoint bp;
	int rc = ms_bp_parse(spec, &bp, eb);
	if (rc)
		return rc;
	return add_bp(r, &bp, id, eb);
}

void
ms_replay_rerun_next(ms_replay *r)
{
	pthread_mutex_lock(&r->mu);
	r->seek_fresh = true;
	pthread_mutex_unlock(&r->mu);
}

/* Add bp as a one-shot breakpoint and run to it. */
static int
run_to_bp(ms_replay *r, ms_breakpoint *bp, ms_errbuf *eb)
{
	bp->enabled = bp->once = true;
	int rc = add_bp(r, bp, NULL, eb);
	if (rc) /* MS_REPLAY_PASSED too: nothing set, the run as it was */
		return rc;
	/* Right after a seek, this is the point it went back to. */
	pthread_mutex_lock(&r->mu);
	r->rerun = r->seek_fresh;
	r->seek_fresh = false;
	pthread_mutex_unlock(&r->mu);
	return ms_replay_command(r, MS_RCMD_RUN, eb);
}

int
ms_replay_run_to_merge(ms_replay *r, uint64_t seq, ms_errbuf *eb)
{
	ms_breakpoint bp;
	memset(&bp, 0, sizeof(bp));
	bp.kind = MS_BP_MERGE;
	bp.n = seq;
	snprintf(bp.spec, sizeof(bp.spec), "go #%llu", (unsigned long long)seq);
	return run_to_bp(r, &bp, eb);
}

int
ms__replay_run_to_abs(ms_replay *r, int64_t t, const char *spec, ms_errbuf *eb)
{
	ms_breakpoint bp;
	memset(&bp, 0, sizeof(bp));
	bp.kind = MS_BP_TIME;
	bp.t = t;
	bp.absolute = true;
	snprintf(bp.spec, sizeof(bp.spec), "%s", spec);
	return run_to_bp(r, &bp, eb);
}

int
ms_replay_run_to_time(ms_replay *r, int64_t t, ms_errbuf *eb)
{
	/* "go 09:00:00", "go +1d 00:30:00": the target as the day's clock
	 * (a time before the day as its start). */
	int64_t start = r->info->day_start_ns;
	char clock[24], spec[sizeof(((ms_breakpoint *)0)->spec)];
	ms_replay_fmt_clock(clock, sizeof(clock), t > start ? t : start,
	                    start);
	snprintf(spec, sizeof(spec), "go %s", clock);
	return ms__replay_run_to_abs(r, t, spec, eb);
}

int
ms_replay_set_speed(ms_replay *r, double speed)
{
	pthread_mutex_lock(&r->mu);
	r->speed = speed < 0 ? 0 : speed;
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
	notify(r);
	return 0;
}

int
ms_replay_break_enable(ms_replay *r, int id, bool on, ms_errbuf *eb)
{
	pthread_mutex_lock(&r->mu);
	for (size_t i = 0; i < r->nbps; i++) {
		if (r->bps[i].id == id) {
			r->bps[i].enabled = on;
			pthread_mutex_unlock(&r->mu);
			notify(r);
			return 0;
		}
	}
	pthread_mutex_unlock(&r->mu);
	return ms_fail(eb, MS_ERR_NOTFOUND, "no breakpoint #%d", id);
}

int
ms_replay_break_delete(ms_replay *r, int id, ms_errbuf *eb)
{
	pthread_mutex_lock(&r->mu);
	for (size_t i = 0; i < r->nbps; i++) {
		if (r->bps[i].id == id) {
			memmove(&r->bps[i], &r->bps[i + 1],
			        sizeof(r->bps[0]) * (r->nbps - i - 1));
			r->nbps--;
			pthread_mutex_unlock(&r->mu);
			notify(r);
			return 0;
		}
	}
	pthread_mutex_unlock(&r->mu);
	return ms_fail(eb, MS_ERR_NOTFOUND, "no breakpoint #%d", id);
}

size_t
ms_replay_breaks(ms_replay *r, ms_breakpoint *out, size_t cap)
{
	pthread_mutex_lock(&r->mu);
	size_t n = r->nbps;
	for (size_t i = 0; i < n && i < cap; i++)
		out[i] = r->bps[i];
	pthread_mutex_unlock(&r->mu);
	return n;
}

/* ---- reading state ---------------------------------------------------- */

/* The links' newest reading (design 6) and the merges in flight: how many,
 * the oldest, and what the chain did since the last recorded merge. The
 * links' figures are those of the merges on record and in flight, as the
 * report gives them: without what stretches removed by a seek back
 * added, the slowest call among those merges. mu held. */
static void
status_live(ms_replay *r, ms_replay_status *st)
{
	static const ms_link_stats none;
	st->nlinks = r->live_nlinks;
	memcpy(st->links, r->live_links, r->live_nlinks * sizeof(st->links[0]));
	for (size_t i = 0; i < r->live_nlinks; i++) {
		ms_link_stats *l = &st->links[i];
		ms__link_stats_acc(l, &none, &r->links_gone[i]);
		l->max_ns = link_merge_max(&r->live_links[i], &r->live_base[i]);
		if (r->links_max[i] > l->max_ns)
			l->max_ns = r->links_max[i];
	}
	st->circuit_open = r->live_circuit;
	st->inflight = r->nclaims;
	for (size_t i = 0; i < r->nclaims; i++) {
		const claim *c = &r->claims[i];
		if (st->inflight_seq && c->seq >= st->inflight_seq)
			continue;
		st->inflight_seq = c->seq;
		/* From its release: held at its barrier it has not run. */
		st->inflight_wall_ns =
		        c->release_mono ? ms_mono_ns() - c->release_mono : 0;
	}
	for (size_t i = 0; i < r->live_nlinks; i++) {
		const ms_link_stats *a = &r->live_links[i],
		                    *b = &r->live_base[i];
		if (a->calls > b->calls)
			st->inflight_calls += a->calls - b->calls;
		if (a->traces > b->traces)
			st->inflight_traces += a->traces - b->traces;
		if (a->total_ns > b->total_ns)
			st->inflight_decide_ns += a->total_ns - b->total_ns;
	}
}

/* The staging gauge: the merge that began staging last, while it is in
 * flight (claimed, its event not recorded), with its own preferred limit
 * and its peak so far, held between its batches and after its last one
 * until its event brings the recorded figures (the gauge's live bytes
 * fall to 0 at each batch's end); else those of the last merge recorded.
 * mu held: the claim and the recorded figures go together. */
static void
status_staging(ms_replay *r, ms_replay_status *st)
{
	if (!r->pipe)
		return;
	st->staged_hard = ms_pipeline_hard_ceiling(r->pipe);
	st->staged_live = ms_pipeline_staged_live(r->pipe);
	ms_pipeline_stage now;
	ms_pipeline_staging(r->pipe, &now);
	bool inflight = false;
	for (size_t i = 0; i < r->nclaims && now.preferred; i++)
		inflight = inflight || r->claims[i].seq == now.seq;
	if (!inflight && st->staged_live == 0)
		return;
	st->staged_peak =
	        now.peak > st->staged_live ? now.peak : st->staged_live;
	if (now.preferred)
		st->staged_preferred = now.preferred;
}

/* How far the wait under way before a publication has got in the
 * replay's time (at most that publication's), or where a pause cut it
 * short, or INT64_MIN when there is none. mu held. */
static int64_t
paced_now(const ms_replay *r)
{
	if (!r->pacing)
		return r->pace_held ? r->pace_from : INT64_MIN;
	double at = (double)r->pace_from +
	            (double)(ms_mono_ns() - r->pace_mono0) * r->pace_speed;
	return at >= (double)r->pace_to ? r->pace_to : (int64_t)at;
}

void
ms_replay_get_status(ms_replay *r, ms_replay_status *st)
{
	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(&r->mu);
	st->state = r->state;
	st->phase = r->phase;
	st->preparing = r->preparing;
	copy_str(st->fixture, sizeof(st->fixture),
	         r->info ? r->info->preset : "");
	copy_str(st->variant, sizeof(st->variant), r->variant);
	copy_str(st->plugin_host, sizeof(st->plugin_host),
	         ms_plugin_host_mode_name(r->plugin_host));
	copy_str(st->db_path, sizeof(st->db_path), r->db_path);
	copy_str(st->break_why, sizeof(st->break_why), r->break_why);
	st->day_start = r->info->day_start_ns;
	st->day_end = r->info->day_end_ns;
	st->pub_done = r->pub_done;
	st->pub_total = ms_fixture_nslots(r->fx);
	st->merges_done = r->merges_done;
	st->merges_failed = r->merges_failed;
	st->merges_sampled = r->events_sampled;
	st->merges_bypassed = r->events_bypassed;
	st->speed = r->speed;
	st->has_pending = r->has_pending;
	if (r->has_pending) {
		st->pending = r->pending;
		memcpy(st->pending_inputs, r->pending_inputs,
		       sizeof(st->pending_inputs));
		st->pending.inputs = st->pending_inputs;
	}
	st->staged_peak = r->staged_peak;
	st->staged_preferred = r->staged_preferred;
	st->nspark = r->nspark;
	memcpy(st->spark, r->spark, sizeof(st->spark));
	copy_str(st->error, sizeof(st->error), r->error);
	copy_str(st->finalize_skip, sizeof(st->finalize_skip),
	         r->finalize_skip);
	copy_str(st->last_failure, sizeof(st->last_failure),
	         r->last_failure);
	st->quarantined = r->quarantined;
	st->last_quarantined = r->last_quarantined;
	status_live(r, st);
	st->checkpoints = r->ncks;
	copy_str(st->checkpoint_note, sizeof(st->checkpoint_note),
	         r->ck_note);
	st->seeks = r->seeks;
	/* Under mu: a seek back reopens the shard (checkpoint.c). */
	st->epoch = r->shard ? ms_shard_epoch(r->shard) : 0;
	status_staging(r, st);
	int64_t paced = paced_now(r);
	pthread_mutex_unlock(&r->mu);
	st->now = ms_clock_now(&r->clock);
	st->frontier = ms_frontier(st->now);
	st->now_shown = paced > st->now ? paced : st->now;
}

size_t
ms_replay_recent(ms_replay *r, ms_ev_merge *out, ms_ev_input *inputs,
                 size_t cap, uint64_t *total)
{
	pthread_mutex_lock(&r->mu);
	size_t held = r->recent.n;
	size_t n = held < cap ? held : cap;
	for (size_t i = 0; i < n; i++)
		ms__recent_get(&r->recent, held - n + i, &out[i],
		               inputs ? inputs + i * MS_REPLAY_RECENT_INPUTS
		                      : NULL);
	if (total)
		*total = r->merges_done + r->merges_failed;
	pthread_mutex_unlock(&r->mu);
	return n;
}

size_t
ms_replay_inventory(ms_replay *r, ms_replay_part *out, size_t cap)
{
	ms_view *v = NULL;
	pthread_mutex_lock(&r->mu);
	/* Under mu: a seek back reopens the shard (checkpoint.c). */
	if (!r->shard || ms_shard_view(r->shard, &v, NULL)) {
		pthread_mutex_unlock(&r->mu);
		return 0;
	}
	size_t n = ms_view_count(v);
	for (size_t i = 0; i < n && i < cap; i++) {
		out[i].meta =
		        *ms_part_get_meta(ms_view_part(v, i, MS_KIND_CORE));
		out[i].claimed_by = 0;
		for (size_t c = 0; c < r->nclaims && !out[i].claimed_by; c++)
			for (size_t k = 0; k < r->claims[c].n; k++)
				if (r->claims[c].ids[k] == out[i].meta.id) {
					out[i].claimed_by = r->claims[c].seq;
					break;
				}
	}
	pthread_mutex_unlock(&r->mu);
	ms_view_release(v);
	return n;
}

size_t
ms_replay_plugin_log(ms_replay *r, size_t link, ms_ev_plugin_log *out,
                     size_t cap, ms_ev_plugin_log_count *count)
{
	return ms__plog_link(&r->plog, link, r->t0_mono, out, cap, count);
}

const char *
ms_replay_db_path(const ms_replay *r)
{
	return r->db_path;
}

const char *
ms_replay_work_dir(const ms_replay *r)
{
	return r->work_dir;
}

const ms_envelope *
ms_replay_envelope(const ms_replay *r)
{
	return &r->env;
}

size_t
ms_replay_gates(ms_replay *r, ms_ev_gate *out, size_t cap, unsigned *failed)
{
	pthread_mutex_lock(&r->mu);
	size_t n = r->ngates;
	for (size_t i = 0; i < n && i < cap; i++)
		out[i] = r->gates[i];
	if (failed)
		*failed = r->gates_failed;
	pthread_mutex_unlock(&r->mu);
	return n;
}
