/*
 * freeze.c - freezing the shard at a dispatch barrier, for a controlled
 * re-run of exactly that merge (ms_merge_once, merge_once.c), and the
 * re-pick that proves the frozen state gives that selection.
 *
 * At a BREAK barrier the selection has not started and its parts are
 * claimed, so they are active in every view taken while the run is
 * stopped. ms_replay_freeze pins one view of the live shard and copies every
 * active part (core, latency and start_time, keeping its ID) into a new,
 * proper shard DIR/shard (opened with create = true, each part copied into
 * its tmp path and introduced), then writes DIR/frozen.txt describing the
 * pending merge. Everything is built in DIR.tmp-<pid> (DIR's last name cut
 * short to keep it within NAME_MAX, ms_fs_name_beside) and renamed to DIR
 * at the end, so a failed freeze leaves nothing behind.
 *
 * What the picker saw. The engine's picker takes as candidates the active
 * parts with rows that no listed selection claims and that are not
 * quarantined, with a fan-out limit of free disk minus reserved bytes. The
 * barrier's dispatch carries the epoch, pass and fan-out; the run's claims
 * at the barrier are the selections dispatched before this one (hooks run
 * in sequence order and the barrier blocks later ones), which were listed
 * when it was picked. In lane mode a merge of another lane may land
 * between the pick and the freeze: its inputs leave the inventory (they
 * were claimed, so no candidates) and its output enters it; such outputs
 * (the run's completed merges whose epoch_after is past the pick's epoch)
 * are recorded as unseen. Selections picked after this one (later passes
 * of the same run) claim nothing here: their parts were candidates. The
 * freeze re-runs the picker on exactly this state (ms__frozen_check_pick)
 * and refuses when it does not give the pending selection; merge-once does
 * the same on its copy of the frozen shard.
 *
 * FORMAT of DIR/frozen.txt (version 3). UTF-8 text, one `key=value` per
 * line, no spaces around '=', the value runs to the end of the line. Lines
 * starting with '#' and empty lines are ignored. Every key below appears
 * exactly once (ledger keys once per input and kind); unknown keys, repeats,
 * missing keys and malformed values are errors naming the file, the line
 * and the key. Older versions are refused (version 2 lacks the picker's
 * state, so its selection cannot be checked): freeze again.
 *   format=3                      this format's version (2 added
 *                                 segment_ns, 3 the picker's state)
 *   fixture_dir=PATH              the fixture the run replayed
 *   fixture_preset=NAME           its preset
 *   fixture_seed=N                its seed (decimal)
 *   fixture_schedule_hash=HEX     the manifest's schedule hash (0-64 hex)
 *   fixture_topology_hash=HEX     the manifest's topology hash (0-64 hex)
 *   now_ns=N                      logical clock at dispatch (unix ns)
 *   frontier_ns=N                 now_ns - grace (<= now_ns)
 *   grace_policy=selection|trace  the run's grace policy
 *   variant=SPEC                  the run's chain spec ("disabled", ...)
 *   seq=N                         the merge's dispatch sequence (>= 1)
 *   lane=fast|slow|finalize       the merge's lane
 *   finalize=0|1                  a forced finalize merge
 *   output_id=HEX16               the output ID the run reserved
 *   epoch=N                       epoch of the frozen view
 *   shard_parts=N                 active parts copied into DIR/shard
 *   cpus=N                        CPU limit in force (>= 1)
 *   mem_limit=N                   memory limit in force (bytes, >= 1)
 *   inputs=HEX16,HEX16,...        input part IDs in selection order
 *   depths=N,N,...                their merge depths, same order
 *   segment_ns=N,N                the segment the run's boundary guard
 *                                 covered (inclusive unix ns; 0,0: none)
 *   selection_fp=HEX16            ms_pick_fp_add(0, inputs): XXH3-64 of
 *                                 LE64(n) || LE64(id[0]) || ... (seed 0)
 *   pick_epoch=N                  epoch the picker ran on (<= epoch)
 *   pass=N                        its pass within that run (>= 1)
 *   fan_out=N                     the fan-out limit it used (bytes; 0 for
 *                                 a finalize, which bypasses the picker)
 *   picker_max_parts=N            its window maximum (2..64)
 *   picker_multiplier=X           its minimum multiple (> 0)
 *   claimed=HEX16,...             parts of DIR/shard claimed by other
 *                                 merges in flight (may be empty)
 *   quarantined=HEX16,...         parts of DIR/shard the engine had
 *                                 quarantined (may be empty)
 *   unseen=HEX16,...              parts of DIR/shard published after the
 *                                 pick (may be empty)
 *   ledger.HEX16.core=LEDGER      for every input: its ledger of each kind
 *   ledger.HEX16.latency=LEDGER   as ms_ledger_format writes it
 *   ledger.HEX16.start_time=LEDGER  ("<rows>:<32 hex>")
 * HEX16 is exactly 16 lowercase hex digits. The three lists hold distinct
 * IDs, none of them an input.
 */
#define _GNU_SOURCE
#include "frozen.h"
#include "grow.h"
#include "replay_int.h"

#include "ms_owner.h"
#include "ms_picker.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FROZEN_FILE_MAX (64u << 20)

/* ---- writing ---------------------------------------------------------- */

static bool
has_newline(const char *s)
{
	return strchr(s, '\n') || strchr(s, '\r');
}

static void
put_ids(FILE *fp, const char *key, const uint64_t *ids, size_t n)
{
	char hex[17];
	fprintf(fp, "%s=", key);
	for (size_t i = 0; i < n; i++) {
		ms_part_id_str(ids[i], hex);
		fprintf(fp, "%s%s", i ? "," : "", hex);
	}
	fputc('\n', fp);
}

/* Every key of the format, in the order documented above. */
static void
put_keys(FILE *fp, const ms__frozen *f)
{
	char hex[17];
	fprintf(fp, "# mergescope frozen merge: the pending selection of a "
	            "replay, frozen at its\n# dispatch barrier. Format: "
	            "replay/freeze.c. Replay it with merge-once.\n");
	fprintf(fp, "format=%u\n", MS_FROZEN_FORMAT);
	fprintf(fp, "fixture_dir=%s\n", f->fixture_dir);
	fprintf(fp, "fixture_preset=%s\n", f->fixture_preset);
	fprintf(fp, "fixture_seed=%" PRIu64 "\n", f->fixture_seed);
	fprintf(fp, "fixture_schedule_hash=%s\n", f->schedule_hash);
	fprintf(fp, "fixture_topology_hash=%s\n", f->topology_hash);
	fprintf(fp, "now_ns=%" PRId64 "\n", f->now_ns);
	fprintf(fp, "frontier_ns=%" PRId64 "\n", f->frontier_ns);
	fprintf(fp, "grace_policy=%s\n", ms_grace_policy_name(f->policy));
	fprintf(fp, "variant=%s\n", f->variant);
	fprintf(fp, "seq=%" PRIu64 "\n", f->seq);
	fprintf(fp, "lane=%s\n", f->lane);
	fprintf(fp, "finalize=%d\n", f->finalize ? 1 : 0);
	ms_part_id_str(f->output_id, hex);
	fprintf(fp, "output_id=%s\n", hex);
	fprintf(fp, "epoch=%" PRIu64 "\n", f->epoch);
	fprintf(fp, "shard_parts=%" PRIu64 "\n", f->shard_parts);
	fprintf(fp, "cpus=%u\n", f->cpus);
	fprintf(fp, "mem_limit=%" PRIu64 "\n", f->mem_limit);
	put_ids(fp, "inputs", f->ids, f->ninputs);
	fputs("depths=", fp);
	for (size_t i = 0; i < f->ninputs; i++)
		fprintf(fp, "%s%" PRIu32, i ? "," : "", f->depths[i]);
	fprintf(fp, "\nsegment_ns=%" PRId64 ",%" PRId64, f->segment_min_ns,
	        f->segment_max_ns);
	fprintf(fp, "\nselection_fp=%016" PRIx64 "\n", f->selection_fp);
	fprintf(fp, "pick_epoch=%" PRIu64 "\n", f->pick_epoch);
	fprintf(fp, "pass=%" PRIu64 "\n", f->pass);
	fprintf(fp, "fan_out=%" PRIu64 "\n", f->fan_out);
	fprintf(fp, "picker_max_parts=%" PRIu32 "\n", f->picker_max_parts);
	fprintf(fp, "picker_multiplier=%.17g\n", f->picker_multiplier);
	put_ids(fp, "claimed", f->claimed.ids, f->claimed.n);
	put_ids(fp, "quarantined", f->quarantined.ids, f->quarantined.n);
	put_ids(fp, "unseen", f->unseen.ids, f->unseen.n);
	for (size_t i = 0; i < f->ninputs; i++) {
		ms_part_id_str(f->ids[i], hex);
		for (int k = 0; k < MS_KIND_COUNT; k++) {
			char l[MS_LEDGER_STR_MAX];
			ms_ledger_format(&f->ledgers[i].kind[k], l);
			fprintf(fp, "ledger.%s.%s=%s\n", hex,
			        ms_part_kind_name((enum ms_part_kind)k), l);
		}
	}
}

static int
write_frozen(const char *path, const ms__frozen *f, ms_errbuf *eb)
{
	char tmp[PATH_MAX];
	if (snprintf(tmp, sizeof(tmp), "%s.new", path) >= (int)sizeof(tmp))
		return ms_fail(eb, MS_ERR_RANGE, "freeze: path too long: %s",
		               path);
	FILE *fp = fopen(tmp, "w");
	if (!fp)
		return ms_fail(eb, ms_err_from_errno(errno),
		               "freeze: cannot create %s: %s", tmp,
		               strerror(errno));
	put_keys(fp, f);
	int bad = ferror(fp);
	if (fflush(fp) != 0 || fsync(fileno(fp)) != 0)
		bad = 1;
	int err = errno;
	if (fclose(fp) != 0)
		bad = 1;
	if (bad) {
		unlink(tmp);
		return ms_fail(eb, ms_err_from_errno(err),
		               "freeze: cannot write %s: %s", tmp,
		               strerror(err));
	}
	if (rename(tmp, path) != 0) {
		err = errno;
		unlink(tmp);
		return ms_fail(eb, ms_err_from_errno(err),
		               "freeze: cannot rename %s to %s: %s", tmp, path,
		               strerror(err));
	}
	return 0;
}

static void
idlist_free(ms__idlist *l)
{
	free(l->ids);
	l->ids = NULL;
	l->n = 0;
}

void
ms__frozen_release(ms__frozen *f)
{
	if (!f)
		return;
	free(f->ids);
	free(f->depths);
	free(f->ledgers);
	f->ids = NULL;
	f->depths = NULL;
	f->ledgers = NULL;
	f->ninputs = 0;
	idlist_free(&f->claimed);
	idlist_free(&f->quarantined);
	idlist_free(&f->unseen);
}

/* Room for n inputs in f; MS_ERR_NOMEM noted in oom. */
static int
frozen_alloc(ms__frozen *f, size_t n, ms__oom *oom)
{
	size_t k = n ? n : 1;
	f->ids = calloc(k, sizeof(*f->ids));
	f->depths = calloc(k, sizeof(*f->depths));
	f->ledgers = calloc(k, sizeof(*f->ledgers));
	if (!f->ids || !f->depths || !f->ledgers) {
		bool ids = !f->ids, depths = !f->depths;
		ms__frozen_release(f);
		return ms__oom_note(oom,
		                    ids      ? "the IDs of its inputs"
		                    : depths ? "the depths of its inputs"
		                             : "the ledgers of its inputs",
		                    k * (ids      ? sizeof(*f->ids)
		                         : depths ? sizeof(*f->depths)
		                                  : sizeof(*f->ledgers)));
	}
	f->ninputs = n;
	return 0;
}

static bool
ids_have(const uint64_t *ids, size_t n, uint64_t id)
{
	for (size_t i = 0; i < n; i++)
		if (ids[i] == id)
			return true;
	return false;
}

/* Append id to l (room for `cap` made by the caller). */
static void
idlist_add(ms__idlist *l, uint64_t id)
{
	if (!ids_have(l->ids, l->n, id))
		l->ids[l->n++] = id;
}
/* ---- the re-pick -------------------------------------------------------- */

/* ms_pick_excluded_fn of a frozen shard: what the pick did not see. */
static bool
no_candidate(const void *arg, uint64_t id)
{
	const ms__frozen *f = arg;

	return ids_have(f->claimed.ids, f->claimed.n, id) ||
	       ids_have(f->quarantined.ids, f->quarantined.n, id) ||
	       ids_have(f->unseen.ids, f->unseen.n, id);
}

int
ms__frozen_repick(const ms__frozen *f, ms_view *v, ms__pick_ids *out,
                  ms_errbuf *eb)
{
	memset(out, 0, sizeof(*out));
	size_t nv = ms_view_count(v), nc = 0;
	ms_pick_cand *cands = calloc(nv ? nv : 1, sizeof(*cands));
	if (!cands)
		return ms_fail(eb, MS_ERR_NOMEM,
		               "re-pick: candidates of %zu parts", nv);
	/* The engine's rule, the same function. */
	ms_pick_scope sc = { .finalize = f->finalize,
		             .frontier_ns = f->frontier_ns,
		             .excluded = no_candidate,
		             .arg = f };
	nc = ms_pick_candidates(v, &sc, cands, NULL);
	int rc = 0;
	if (f->finalize) {
		out->n = nc;
		for (size_t i = 0; i < nc && i < MS_PICKER_PARTS_LIMIT; i++)
			out->ids[i] = cands[i].id;
	} else {
		ms_picker_opts po = { .max_parts = f->picker_max_parts,
			              .multiplier = f->picker_multiplier };
		ms_pick pk;
		rc = ms_picker_select(&po, cands, nc, f->fan_out, NULL, &pk,
		                      eb);
		if (rc == 0 && pk.n >= 2) {
			out->n = pk.n;
			memcpy(out->ids, pk.ids, pk.n * sizeof(*pk.ids));
		}
	}
	free(cands);
	return rc;
}

/* "N parts: id,id,... (and K more)" into buf. */
static void
fmt_selection(char *buf, size_t n, const uint64_t *ids, size_t nids,
              size_t held)
{
	int at = snprintf(buf, n, "%zu part%s", nids, nids == 1 ? "" : "s");
	size_t show = nids < held ? nids : held;
	if (show > 5)
		show = 5;
	for (size_t i = 0; i < show && at > 0 && (size_t)at < n; i++)
		at += snprintf(buf + at, n - (size_t)at, "%s%016" PRIx64,
		               i ? "," : " ", ids[i]);
	if (show < nids && at > 0 && (size_t)at < n)
		snprintf(buf + at, n - (size_t)at, ",... (%zu more)",
		         nids - show);
}

int
ms__frozen_check_pick(const ms__frozen *f, ms_view *v, const char *who,
                      ms_errbuf *eb)
{
	ms__pick_ids got;
	int rc = ms__frozen_repick(f, v, &got, eb);
	if (rc)
		return rc;
	size_t i = 0, both = got.n < f->ninputs ? got.n : f->ninputs;
	while (i < both && i < MS_PICKER_PARTS_LIMIT && got.ids[i] == f->ids[i])
		i++;
	if (got.n == f->ninputs && (i == both || i == MS_PICKER_PARTS_LIMIT))
		return 0;
	char a[160], b[160];
	fmt_selection(a, sizeof(a), got.ids, got.n, MS_PICKER_PARTS_LIMIT);
	fmt_selection(b, sizeof(b), f->ids, f->ninputs, f->ninputs);
	return ms_fail(eb, MS_ERR_CONFLICT,
	               "%s: merge #%" PRIu64 ": the %s re-run on the frozen "
	               "state selects %s; the frozen selection is %s (first "
	               "difference at position %zu): the frozen state is not "
	               "what the engine picked from",
	               who, f->seq, f->finalize ? "finalize rule" : "picker",
	               got.n ? a : "nothing", b, i + 1);
}

/* Copy every part of view v of shard src, and src's dictionaries (under
 * the same IDs, which the parts' blocks name), into the new shard at dir
 * (created). */
static int
copy_shard(ms_view *v, const ms_shard *src, const char *dir, ms_errbuf *eb)
{
	if (ms_fs_mkdir_p(dir, 0755, NULL) < 0)
		return ms_fail(eb, ms_err_from_errno(errno),
		               "freeze: cannot create %s: %s", dir,
		               strerror(errno));
	ms_mem mem;
	ms_mem_init(&mem, NULL);
	ms_shard *s = NULL;
	ms_shard_opts so = { .dir = dir, .create = true, .mem = &mem };
	int rc = ms_shard_open(&s, &so, eb);
	const ms_part_dict *d;
	for (uint32_t id = 1; rc == 0 && (d = ms_shard_dict(src, id)); id++) {
		size_t dn;
		const uint8_t *b = ms_part_dict_bytes(d, &dn);
		uint32_t got = 0;
		if ((rc = ms_shard_add_dict(s, b, dn, &got, eb)) == 0 &&
		    got != id)
			rc = ms_fail(eb, MS_ERR_STATE,
			             "freeze: dictionary %u became %u in %s",
			             id, got, dir);
	}
	if (rc) {
		ms_shard_close(s);
		return rc;
	}
	/* In the order they entered the live inventory, so the copy's
	 * entry order (a finalize's input order) is the live one's. */
	size_t n = ms_view_count(v);
	for (size_t e = 0; e < n && rc == 0; e++) {
		size_t i = ms_view_entered(v, e);
		uint64_t id = ms_view_id(v, i);
		bool reflinked = false;
		for (int k = 0; k < MS_KIND_COUNT && rc == 0; k++) {
			const ms_part *p =
			        ms_view_part(v, i, (enum ms_part_kind)k);
			char to[PATH_MAX];
			rc = ms_shard_tmp_path(s, (enum ms_part_kind)k, id, to,
			                       sizeof(to));
			if (rc) {
				rc = ms_fail(eb, rc,
				             "freeze: part %016" PRIx64
				             ": tmp path under %s too long",
				             id, dir);
				break;
			}
			rc = ms__copy_tree(ms_part_dir(p), to, &reflinked, eb);
			/* The shard publishes by rename: sync the copy. */
			if (rc == 0)
				rc = ms_part_sync_tree(to, NULL, eb);
		}
		if (rc == 0)
			rc = ms_shard_introduce(s, id, eb);
	}
	ms_shard_close(s);
	return rc;
}

/* ---- freezing ----------------------------------------------------------- */

/* What the barrier shows, copied under the run's lock: the pending
 * dispatch, the inputs of the other merges in flight, and the outputs of
 * the merges that landed after its pick. */
typedef struct barrier {
	ms_dispatch d;
	ms_dispatch_input in[MS_PICKER_PARTS_LIMIT];
	ms__idlist claimed, landed;
	bool claims_cut; /* a claim held more inputs than the run keeps */
} barrier;

static int
take_barrier(ms_replay *r, barrier *b, ms_errbuf *eb)
{
	memset(b, 0, sizeof(*b));
	b->claimed.ids = calloc(MAX_CLAIMS * MS_PICKER_PARTS_LIMIT,
	                        sizeof(uint64_t));
	b->landed.ids = calloc(MS_REPLAY_RECENT, sizeof(uint64_t));
	if (!b->claimed.ids || !b->landed.ids) {
		bool claimed = !b->claimed.ids;
		ms__oom oom = {
			claimed ? "the inputs of the merges in flight"
			        : "the parts landed lately",
			sizeof(uint64_t) *
			        (claimed ? MAX_CLAIMS * MS_PICKER_PARTS_LIMIT
			                 : MS_REPLAY_RECENT),
		};
		return ms__oom_fail(eb, &oom, "freeze");
	}
	pthread_mutex_lock(&r->mu);
	if (r->state != MS_REPLAY_BREAK || !r->has_pending) {
		enum ms_replay_state st = r->state;
		pthread_mutex_unlock(&r->mu);
		return ms_fail(eb, MS_ERR_STATE,
		               "freeze needs a dispatch barrier (the run is "
		               "%s): add a breakpoint or step to one",
		               ms_replay_state_name(st));
	}
	b->d = r->pending;
	memcpy(b->in, r->pending_inputs, sizeof(b->in));
	b->d.inputs = b->in;
	for (size_t c = 0; c < r->nclaims; c++) {
		const claim *cl = &r->claims[c];
		if (cl->seq == b->d.seq)
			continue;
		b->claims_cut |= cl->finalize_big;
		for (size_t k = 0; k < cl->n; k++)
			idlist_add(&b->claimed, cl->ids[k]);
	}
	for (size_t i = 0; i < r->recent.n; i++) {
		ms_ev_merge m;
		ms__recent_get(&r->recent, i, &m, NULL);
		if (m.epoch_after > b->d.epoch && m.output.id)
			idlist_add(&b->landed, m.output.id);
	}
	pthread_mutex_unlock(&r->mu);
	return 0;
}

/* DIR (given, or WORK.frozen-SEQ), its build directory and shard. */
static int
freeze_paths(const ms_replay *r, const char *dir, uint64_t seq,
             char path[PATH_MAX], char tmpdir[PATH_MAX], char sub[PATH_MAX],
             ms_errbuf *eb)
{
	if (dir)
		snprintf(path, PATH_MAX, "%s", dir);
	else
		snprintf(path, PATH_MAX, "%s.frozen-%" PRIu64, r->work_dir, seq);
	if (has_newline(path) || has_newline(r->fixture_dir) ||
	    has_newline(r->variant))
		return ms_fail(eb, MS_ERR_INVAL,
		               "freeze: %s: paths and the variant must not "
		               "contain line breaks",
		               path);
	struct stat st;
	/* The default name is taken when this merge was frozen before and
	 * the run went back to its barrier again: the next free one,
	 * WORK.frozen-SEQ.2, .3, ... A given directory is never replaced. */
	for (unsigned k = 2; !dir && k <= 1000 && stat(path, &st) == 0; k++)
		snprintf(path, PATH_MAX, "%s.frozen-%" PRIu64 ".%u",
		         r->work_dir, seq, k);
	if (stat(path, &st) == 0)
		return ms_fail(eb, MS_ERR_EXISTS,
		               "freeze: %s exists; choose a new directory",
		               path);
	char sfx[32];
	snprintf(sfx, sizeof(sfx), ".tmp-%ld", (long)getpid());
	if (ms_fs_name_beside(tmpdir, PATH_MAX, path, sfx) != 0 ||
	    (size_t)snprintf(sub, PATH_MAX, "%s/%s", tmpdir, MS_FROZEN_SHARD) >=
	            PATH_MAX)
		return ms_fail(eb, MS_ERR_RANGE, "freeze: path too long: %s",
		               path);
	return 0;
}

/* The run and the dispatch's fields of f (inputs allocated). */
static int
fill_frozen(const ms_replay *r, const ms_dispatch *d, ms__frozen *f,
            ms__oom *oom)
{
	if (frozen_alloc(f, d->ninputs, oom))
		return MS_ERR_NOMEM;
	f->format = MS_FROZEN_FORMAT;
	snprintf(f->fixture_dir, sizeof(f->fixture_dir), "%s", r->fixture_dir);
	snprintf(f->fixture_preset, sizeof(f->fixture_preset), "%s",
	         r->info->preset);
	f->fixture_seed = r->info->seed;
	snprintf(f->schedule_hash, sizeof(f->schedule_hash), "%s",
	         r->info->schedule_hash ? r->info->schedule_hash : "");
	snprintf(f->topology_hash, sizeof(f->topology_hash), "%s",
	         r->info->topology_hash ? r->info->topology_hash : "");
	f->now_ns = d->now_ns;
	f->frontier_ns = d->frontier_ns;
	ms__replay_segment(r, &f->segment_min_ns, &f->segment_max_ns);
	f->policy = r->policy;
	memcpy(f->variant, r->variant, strlen(r->variant) + 1); /* fits */
	f->seq = d->seq;
	snprintf(f->lane, sizeof(f->lane), "%s", ms_lane_name(d->lane));
	f->finalize = d->finalize;
	f->output_id = d->output_id;
	f->cpus = r->limits.cpus ? r->limits.cpus : 1;
	f->mem_limit = r->limits.mem;
	for (size_t i = 0; i < d->ninputs; i++) {
		f->ids[i] = d->inputs[i].id;
		f->depths[i] = d->inputs[i].depth;
	}
	f->selection_fp = ms_pick_fp_add(0, f->ids, f->ninputs);
	/* The run's engine uses the picker's defaults (zeroed options). */
	f->pick_epoch = d->epoch;
	f->pass = d->pass;
	f->fan_out = d->finalize ? 0 : d->max_fan_out;
	f->picker_max_parts = MS_PICKER_MAX_PARTS;
	f->picker_multiplier = MS_PICKER_MULTIPLIER;
	return 0;
}

/* Keep in `to` the IDs of `from` active in v that are no input of f. */
static int
keep_active(const ms__frozen *f, ms_view *v, const uint64_t *from, size_t n,
            ms__idlist *to, ms__oom *oom, const char *what)
{
	to->ids = calloc(n ? n : 1, sizeof(*to->ids));
	if (!to->ids)
		return ms__oom_note(oom, what, (n ? n : 1) * sizeof(*to->ids));
	for (size_t i = 0; i < n; i++)
		if (ms_view_find(v, from[i], MS_KIND_CORE) &&
		    !ids_have(f->ids, f->ninputs, from[i]))
			idlist_add(to, from[i]);
	return 0;
}

/* The picker's exclusions, as parts of the frozen view v. */
static int
fill_picker_state(ms_replay *r, const barrier *b, ms_view *v, ms__frozen *f,
                  ms_errbuf *eb)
{
	if (b->claims_cut)
		return ms_fail(eb, MS_ERR_RANGE,
		               "freeze: a finalize merge in flight has more "
		               "inputs than the run keeps (%d): the picker's "
		               "candidates cannot be known",
		               MS_PICKER_PARTS_LIMIT);
	size_t nq = ms_engine_quarantined(r->engine, NULL, 0);
	uint64_t *q = calloc(nq ? nq : 1, sizeof(*q));
	ms__oom oom = { NULL, 0 };
	int rc = q ? 0
	           : ms__oom_note(&oom, "the quarantined parts",
	                          (nq ? nq : 1) * sizeof(*q));
	if (rc == 0) {
		nq = ms_engine_quarantined(r->engine, q, nq);
		rc = keep_active(f, v, b->claimed.ids, b->claimed.n,
		                 &f->claimed, &oom, "the parts claimed");
	}
	if (rc == 0)
		rc = keep_active(f, v, q, nq, &f->quarantined, &oom,
		                 "the quarantined parts");
	if (rc == 0)
		rc = keep_active(f, v, b->landed.ids, b->landed.n, &f->unseen,
		                 &oom, "the parts the picker has not seen");
	free(q);
	return rc ? ms__oom_fail(eb, &oom, "freeze of merge #%" PRIu64, f->seq)
	          : 0;
}

static int
input_ledgers(ms__frozen *f, ms_view *v, ms_errbuf *eb)
{
	ms_mem mem;
	ms_mem_init(&mem, NULL);
	for (size_t i = 0; i < f->ninputs; i++) {
		for (int k = 0; k < MS_KIND_COUNT; k++) {
			const ms_part *p =
			        ms_view_find(v, f->ids[i], (enum ms_part_kind)k);
			if (!p)
				return ms_fail(eb, MS_ERR_CONFLICT,
				               "freeze: input %016" PRIx64
				               " of merge #%" PRIu64
				               " is not active in the shard",
				               f->ids[i], f->seq);
			int rc = ms_ledger_of_part(p, &f->ledgers[i].kind[k],
			                           &mem, eb);
			if (rc)
				return rc;
		}
	}
	return 0;
}

/* DIR.tmp-PID with the shard of v and frozen.txt, renamed to DIR. */
static int
build_dir(const ms_replay *r, ms_view *v, const ms__frozen *f,
          const char *path, const char *tmpdir, const char *sub,
          ms_errbuf *eb)
{
	if (ms_fs_mkdir_p(tmpdir, 0755, NULL) < 0)
		return ms_fail(eb, ms_err_from_errno(errno),
		               "freeze: cannot create %s: %s", tmpdir,
		               strerror(errno));
	int rc = ms_owner_write(tmpdir, "frozen-tmp", r->db_path, eb);
	if (rc == 0)
		rc = copy_shard(v, r->shard, sub, eb);
	char file[PATH_MAX];
	snprintf(file, sizeof(file), "%s/%s", tmpdir, MS_FROZEN_FILE);
	if (rc == 0)
		rc = write_frozen(file, f, eb);
	if (rc == 0)
		rc = ms_owner_write(tmpdir, "frozen", r->db_path, eb);
	if (rc == 0 && rename(tmpdir, path) != 0)
		rc = ms_fail(eb, ms_err_from_errno(errno),
		             "freeze: cannot rename %s to %s: %s", tmpdir, path,
		             strerror(errno));
	return rc;
}

int
ms_replay_freeze(ms_replay *r, const char *dir, char *out_dir, size_t n,
                 ms_errbuf *eb)
{
	if (out_dir && n)
		out_dir[0] = '\0';
	ms__frozen f;
	memset(&f, 0, sizeof(f));
	barrier b;
	char path[PATH_MAX], tmpdir[PATH_MAX] = "", sub[PATH_MAX];
	ms_view *v = NULL;
	int rc = take_barrier(r, &b, eb);
	const ms_dispatch *d = &b.d;
	if (rc)
		goto out;
	if (d->finalize && d->ninputs >= MS_PICKER_PARTS_LIMIT) {
		rc = ms_fail(eb, MS_ERR_RANGE,
		             "freeze: finalize merge #%" PRIu64
		             " has %d or more inputs; only the first %d are "
		             "known at the barrier",
		             d->seq, MS_PICKER_PARTS_LIMIT,
		             MS_PICKER_PARTS_LIMIT);
		goto out;
	}
	if (d->ninputs == 0) {
		rc = ms_fail(eb, MS_ERR_STATE,
		             "freeze: merge #%" PRIu64 " has no inputs", d->seq);
		goto out;
	}
	if ((rc = freeze_paths(r, dir, d->seq, path, tmpdir, sub, eb)))
		goto out;
	ms_fs_rm_tree(tmpdir, NULL);
	ms__oom oom = { NULL, 0 };
	if ((rc = fill_frozen(r, d, &f, &oom))) {
		rc = ms__oom_fail(eb, &oom, "freeze of merge #%" PRIu64,
		                  d->seq);
		goto out;
	}
	if ((rc = ms_shard_view(r->shard, &v, eb)))
		goto out;
	f.epoch = ms_view_epoch(v);
	f.shard_parts = ms_view_count(v);
	if ((rc = fill_picker_state(r, &b, v, &f, eb)) ||
	    (rc = input_ledgers(&f, v, eb)) ||
	    (rc = ms__frozen_check_pick(&f, v, "freeze", eb)) ||
	    (rc = build_dir(r, v, &f, path, tmpdir, sub, eb)))
		goto out;
	if (out_dir && n)
		snprintf(out_dir, n, "%s", path);
out:
	ms_view_release(v);
	if (rc && tmpdir[0])
		ms_fs_rm_tree(tmpdir, NULL);
	idlist_free(&b.claimed);
	idlist_free(&b.landed);
	ms__frozen_release(&f);
	return rc;
}

/* ---- reading ------------------------------------------------------------ */

enum key_id {
	K_FORMAT,
	K_FIXTURE_DIR,
	K_FIXTURE_PRESET,
	K_FIXTURE_SEED,
	K_SCHEDULE_HASH,
	K_TOPOLOGY_HASH,
	K_NOW,
	K_FRONTIER,
	K_POLICY,
	K_VARIANT,
	K_SEQ,
	K_LANE,
	K_FINALIZE,
	K_OUTPUT_ID,
	K_EPOCH,
	K_SHARD_PARTS,
	K_CPUS,
	K_MEM_LIMIT,
	K_INPUTS,
	K_DEPTHS,
	K_SELECTION_FP,
	K_SEGMENT,
	K_PICK_EPOCH,
	K_PASS,
	K_FAN_OUT,
	K_PICKER_MAX_PARTS,
	K_PICKER_MULT,
	K_CLAIMED,
	K_QUARANTINED,
	K_UNSEEN,
	K_COUNT
};

static const char *const key_names[K_COUNT] = {
	"format",
	"fixture_dir",
	"fixture_preset",
	"fixture_seed",
	"fixture_schedule_hash",
	"fixture_topology_hash",
	"now_ns",
	"frontier_ns",
	"grace_policy",
	"variant",
	"seq",
	"lane",
	"finalize",
	"output_id",
	"epoch",
	"shard_parts",
	"cpus",
	"mem_limit",
	"inputs",
	"depths",
	"selection_fp",
	"segment_ns",
	"pick_epoch",
	"pass",
	"fan_out",
	"picker_max_parts",
	"picker_multiplier",
	"claimed",
	"quarantined",
	"unseen",
};

/* A ledger line, kept until the inputs are known. */
typedef struct ledger_ref {
	char *key, *val;
	unsigned line;
} ledger_ref;

typedef struct parser {
	const char *file;
	unsigned line;
	ms_errbuf *eb;
	unsigned seen_line[K_COUNT];
	/* Lists, parsed once every line was read. */
	char *list_val[K_COUNT];
	ledger_ref *lrefs;
	size_t nledger, cap_ledger;
} parser;

static bool
is_list(enum key_id k)
{
	return k == K_INPUTS || k == K_DEPTHS || k == K_CLAIMED ||
	       k == K_QUARANTINED || k == K_UNSEEN;
}

static int
bad(parser *p, const char *key, const char *want, const char *got)
{
	return ms_fail(p->eb, MS_ERR_FORMAT,
	               "%s:%u: key '%s': expected %s, got '%.80s'", p->file,
	               p->line, key, want, got);
}

static bool
parse_u64(const char *s, uint64_t *out)
{
	if (!*s || *s == '-' || *s == '+' || *s == ' ')
		return false;
	errno = 0;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || *end)
		return false;
	*out = v;
	return true;
}

static bool
parse_i64(const char *s, int64_t *out)
{
	if (!*s || *s == '+' || *s == ' ')
		return false;
	errno = 0;
	char *end;
	long long v = strtoll(s, &end, 10);
	if (errno || *end)
		return false;
	*out = v;
	return true;
}

static bool
is_lower_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* Exactly 16 lowercase hex digits in s[0..15]. */
static bool
parse_hex16(const char *s, size_t len, uint64_t *out)
{
	if (len != 16)
		return false;
	uint64_t v = 0;
	for (size_t i = 0; i < 16; i++) {
		if (!is_lower_hex(s[i]))
			return false;
		v = v << 4 |
		    (uint64_t)(s[i] <= '9' ? s[i] - '0' : s[i] - 'a' + 10);
	}
	*out = v;
	return true;
}

static bool
hex_upto64(const char *s)
{
	size_t n = strlen(s);
	if (n > 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is_lower_hex(s[i]))
			return false;
	return true;
}

static int
set_str(parser *p, const char *key, const char *val, char *dst, size_t n,
        bool nonempty)
{
	if (strlen(val) >= n)
		return bad(p, key, "a shorter value", val);
	if (nonempty && !*val)
		return bad(p, key, "a non-empty value", val);
	memcpy(dst, val, strlen(val) + 1);
	return 0;
}

static size_t
count_items(const char *s)
{
	size_t n = 1;
	for (; *s; s++)
		if (*s == ',')
			n++;
	return n;
}

static int
parse_format(parser *p, const char *val, ms__frozen *f)
{
	uint64_t u;
	if (!parse_u64(val, &u))
		return bad(p, "format", "a version number", val);
	if (u < MS_FROZEN_FORMAT)
		return ms_fail(p->eb, MS_ERR_FORMAT,
		               "%s:%u: key 'format': version %s is older than "
		               "this build's %d and lacks what the picker saw, "
		               "so its selection cannot be checked: freeze the "
		               "merge again",
		               p->file, p->line, val, MS_FROZEN_FORMAT);
	if (u != MS_FROZEN_FORMAT)
		return ms_fail(p->eb, MS_ERR_FORMAT,
		               "%s:%u: key 'format': version %s, this "
		               "build reads version %d",
		               p->file, p->line, val, MS_FROZEN_FORMAT);
	f->format = (unsigned)u;
	return 0;
}

static int
parse_segment(parser *p, const char *val, ms__frozen *f)
{
	const char *key = key_names[K_SEGMENT];
	char lo[32];
	const char *comma = strchr(val, ',');
	size_t n = comma ? (size_t)(comma - val) : 0;
	if (!comma || n == 0 || n >= sizeof(lo))
		return bad(p, key, "two unix nanosecond values MIN,MAX", val);
	memcpy(lo, val, n);
	lo[n] = '\0';
	if (!parse_i64(lo, &f->segment_min_ns) ||
	    !parse_i64(comma + 1, &f->segment_max_ns) ||
	    f->segment_min_ns > f->segment_max_ns)
		return bad(p, key, "two unix nanosecond values MIN,MAX", val);
	return 0;
}

/* The run's keys: fixture, clock, variant, limits. */
static int
scalar_run(parser *p, enum key_id k, const char *val, ms__frozen *f)
{
	const char *key = key_names[k];
	uint64_t u;
	switch (k) {
	case K_FIXTURE_DIR:
		return set_str(p, key, val, f->fixture_dir,
		               sizeof(f->fixture_dir), true);
	case K_FIXTURE_PRESET:
		return set_str(p, key, val, f->fixture_preset,
		               sizeof(f->fixture_preset), true);
	case K_FIXTURE_SEED:
		if (!parse_u64(val, &f->fixture_seed))
			return bad(p, key, "a decimal seed", val);
		return 0;
	case K_SCHEDULE_HASH:
	case K_TOPOLOGY_HASH:
		if (!hex_upto64(val))
			return bad(p, key, "at most 64 lowercase hex digits",
			           val);
		return set_str(p, key, val,
		               k == K_SCHEDULE_HASH ? f->schedule_hash
		                                    : f->topology_hash,
		               sizeof(f->schedule_hash), false);
	case K_NOW:
	case K_FRONTIER:
		if (!parse_i64(val, k == K_NOW ? &f->now_ns : &f->frontier_ns))
			return bad(p, key, "unix nanoseconds", val);
		return 0;
	case K_POLICY:
		if (ms_grace_policy_parse(val, &f->policy))
			return bad(p, key, "selection or trace", val);
		return 0;
	case K_VARIANT:
		return set_str(p, key, val, f->variant, sizeof(f->variant),
		               true);
	case K_CPUS:
		if (!parse_u64(val, &u) || u == 0 || u > 65536)
			return bad(p, key, "a CPU count from 1 to 65536", val);
		f->cpus = (unsigned)u;
		return 0;
	case K_MEM_LIMIT:
		if (!parse_u64(val, &f->mem_limit) || f->mem_limit == 0)
			return bad(p, key, "a byte count >= 1", val);
		return 0;
	case K_SEGMENT:
		return parse_segment(p, val, f);
	default:
		return MS_ERR_NOTFOUND; /* not one of these */
	}
}

/* The merge's keys and the picker's. */
static int
scalar_merge(parser *p, enum key_id k, const char *val, ms__frozen *f)
{
	const char *key = key_names[k];
	uint64_t u;
	char *end;
	switch (k) {
	case K_SEQ:
		if (!parse_u64(val, &f->seq) || f->seq == 0)
			return bad(p, key, "a merge sequence number >= 1", val);
		return 0;
	case K_LANE:
		if (strcmp(val, MS_LANE_FAST) && strcmp(val, MS_LANE_SLOW) &&
		    strcmp(val, MS_LANE_FINALIZE))
			return bad(p, key, "fast, slow or finalize", val);
		return set_str(p, key, val, f->lane, sizeof(f->lane), true);
	case K_FINALIZE:
		if (strcmp(val, "0") && strcmp(val, "1"))
			return bad(p, key, "0 or 1", val);
		f->finalize = val[0] == '1';
		return 0;
	case K_OUTPUT_ID:
		if (!parse_hex16(val, strlen(val), &f->output_id) ||
		    f->output_id == 0)
			return bad(p, key,
			           "a non-zero part ID of 16 hex digits", val);
		return 0;
	case K_EPOCH:
	case K_PICK_EPOCH:
		if (!parse_u64(val, k == K_EPOCH ? &f->epoch : &f->pick_epoch))
			return bad(p, key, "an epoch number", val);
		return 0;
	case K_SHARD_PARTS:
		if (!parse_u64(val, &f->shard_parts) || f->shard_parts == 0)
			return bad(p, key, "a part count >= 1", val);
		return 0;
	case K_SELECTION_FP:
		if (!parse_hex16(val, strlen(val), &f->selection_fp))
			return bad(p, key, "16 lowercase hex digits", val);
		return 0;
	case K_PASS:
		if (!parse_u64(val, &f->pass) || f->pass == 0)
			return bad(p, key, "a picker pass >= 1", val);
		return 0;
	case K_FAN_OUT:
		if (!parse_u64(val, &f->fan_out))
			return bad(p, key, "a byte count", val);
		return 0;
	case K_PICKER_MAX_PARTS:
		if (!parse_u64(val, &u) || u < 2 || u > MS_PICKER_PARTS_LIMIT)
			return bad(p, key, "a window maximum from 2 to 64", val);
		f->picker_max_parts = (uint32_t)u;
		return 0;
	case K_PICKER_MULT:
		errno = 0;
		f->picker_multiplier = strtod(val, &end);
		if (!*val || *end || errno || !isfinite(f->picker_multiplier) ||
		    !(f->picker_multiplier > 0))
			return bad(p, key, "a multiple > 0", val);
		return 0;
	default:
		return MS_ERR_NOTFOUND;
	}
}

static int
scalar(parser *p, enum key_id k, const char *val, ms__frozen *f)
{
	if (k == K_FORMAT)
		return parse_format(p, val, f);
	int rc = scalar_run(p, k, val, f);
	return rc == MS_ERR_NOTFOUND ? scalar_merge(p, k, val, f) : rc;
}

/* A comma-separated list of distinct non-zero part IDs ("" when
 * may_be_empty) of key k into *out (allocated). */
static int
parse_id_list(parser *p, enum key_id k, bool may_be_empty, ms__idlist *out)
{
	const char *key = key_names[k], *s = p->list_val[k];
	p->line = p->seen_line[k];
	out->n = 0;
	if (!*s && may_be_empty)
		return 0;
	size_t n = count_items(s);
	if (n > MS_FROZEN_MAX_INPUTS)
		return bad(p, key, "at most 65536 part IDs", s);
	out->ids = calloc(n, sizeof(*out->ids));
	if (!out->ids)
		return ms_fail(p->eb, MS_ERR_NOMEM,
		               "%s: out of memory for the %zu part IDs of %s "
		               "(%zu bytes)",
		               p->file, n, key, n * sizeof(*out->ids));
	for (size_t i = 0; i < n; i++) {
		const char *c = strchr(s, ',');
		size_t len = c ? (size_t)(c - s) : strlen(s);
		uint64_t id;
		if (!parse_hex16(s, len, &id) || id == 0)
			return bad(p, key,
			           "comma-separated non-zero part IDs of 16 "
			           "hex digits",
			           s);
		if (ids_have(out->ids, out->n, id))
			return bad(p, key, "distinct part IDs", s);
		out->ids[out->n++] = id;
		s = c ? c + 1 : s + len;
	}
	return 0;
}

static int
parse_depths(parser *p, ms__frozen *f)
{
	const char *s = p->list_val[K_DEPTHS];
	p->line = p->seen_line[K_DEPTHS];
	if (count_items(s) != f->ninputs) {
		char want[64];
		snprintf(want, sizeof(want), "%zu depths (one per input)",
		         f->ninputs);
		return bad(p, "depths", want, s);
	}
	for (size_t i = 0; i < f->ninputs; i++) {
		const char *c = strchr(s, ',');
		size_t len = c ? (size_t)(c - s) : strlen(s);
		char num[24];
		uint64_t u;
		if (len == 0 || len >= sizeof(num))
			return bad(p, "depths", "comma-separated depths", s);
		memcpy(num, s, len);
		num[len] = '\0';
		if (!parse_u64(num, &u) || u > UINT32_MAX)
			return bad(p, "depths", "comma-separated depths", s);
		f->depths[i] = (uint32_t)u;
		s = c ? c + 1 : s + len;
	}
	return 0;
}

/* inputs and depths; then the picker's lists, which name no input. */
static int
parse_lists(parser *p, ms__frozen *f)
{
	ms__idlist in = { 0, NULL };
	int rc = parse_id_list(p, K_INPUTS, false, &in);
	ms__oom oom = { NULL, 0 };
	if (rc == 0 && frozen_alloc(f, in.n, &oom))
		rc = ms__oom_fail(p->eb, &oom, "%s", p->file);
	if (rc == 0)
		memcpy(f->ids, in.ids, in.n * sizeof(*in.ids));
	idlist_free(&in);
	if (rc == 0 && f->ninputs < (f->finalize ? 1u : 2u))
		rc = bad(p, "inputs",
		         f->finalize ? "at least 1 part ID"
		                     : "at least 2 part IDs (a merge)",
		         p->list_val[K_INPUTS]);
	if (rc == 0)
		rc = parse_depths(p, f);
	const enum key_id lk[3] = { K_CLAIMED, K_QUARANTINED, K_UNSEEN };
	ms__idlist *ll[3] = { &f->claimed, &f->quarantined, &f->unseen };
	for (int j = 0; j < 3 && rc == 0; j++) {
		rc = parse_id_list(p, lk[j], true, ll[j]);
		for (size_t i = 0; rc == 0 && i < ll[j]->n; i++)
			if (ids_have(f->ids, f->ninputs, ll[j]->ids[i]))
				rc = ms_fail(p->eb, MS_ERR_FORMAT,
				             "%s:%u: key '%s': part %016" PRIx64
				             " is an input of the merge",
				             p->file, p->line, key_names[lk[j]],
				             ll[j]->ids[i]);
	}
	return rc;
}

static int
ledger_line(parser *p, const char *key, const char *val, ms__frozen *f,
            uint8_t *seen)
{
	const char *rest = key + strlen("ledger.");
	const char *dot = strchr(rest, '.');
	uint64_t id;
	if (!dot || !parse_hex16(rest, (size_t)(dot - rest), &id))
		return ms_fail(p->eb, MS_ERR_FORMAT,
		               "%s:%u: key '%s': expected "
		               "ledger.<16 hex digits>.<kind>",
		               p->file, p->line, key);
	int kind = -1;
	for (int k = 0; k < MS_KIND_COUNT; k++)
		if (!strcmp(dot + 1, ms_part_kind_name((enum ms_part_kind)k)))
			kind = k;
	if (kind < 0)
		return ms_fail(p->eb, MS_ERR_FORMAT,
		               "%s:%u: key '%s': kind '%s' is not core, "
		               "latency or start_time",
		               p->file, p->line, key, dot + 1);
	size_t i = 0;
	while (i < f->ninputs && f->ids[i] != id)
		i++;
	if (i == f->ninputs)
		return ms_fail(p->eb, MS_ERR_FORMAT,
		               "%s:%u: key '%s': part %016" PRIx64
		               " is not one of the inputs",
		               p->file, p->line, key, id);
	if (seen[i] & (1u << kind))
		return ms_fail(p->eb, MS_ERR_FORMAT,
		               "%s:%u: key '%s' appears twice", p->file,
		               p->line, key);
	seen[i] |= (uint8_t)(1u << kind);
	if (ms_ledger_parse(&f->ledgers[i].kind[kind], val))
		return bad(p, key, "<rows>:<32 hex digits>", val);
	return 0;
}

static enum key_id
key_lookup(const char *key)
{
	for (int k = 0; k < K_COUNT; k++)
		if (!strcmp(key, key_names[k]))
			return (enum key_id)k;
	return K_COUNT;
}

static int
read_all(const char *file, char **out, size_t *len, ms_errbuf *eb)
{
	*out = NULL;
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ms_fail(eb,
		               ms_err_from_open_errno(errno),
		               "%s: cannot open: %s (not a frozen merge "
		               "directory?)",
		               file, strerror(errno));
	struct stat st;
	if (fstat(fd, &st) < 0 || st.st_size < 0 ||
	    (uint64_t)st.st_size > FROZEN_FILE_MAX) {
		close(fd);
		return ms_fail(eb, MS_ERR_RANGE,
		               "%s: not a regular file of at most %u bytes",
		               file, FROZEN_FILE_MAX);
	}
	size_t n = (size_t)st.st_size;
	char *buf = malloc(n + 1);
	if (!buf) {
		close(fd);
		return ms_fail(eb, MS_ERR_NOMEM,
		               "%s: out of memory for its text (%zu bytes)",
		               file, n + 1);
	}
	size_t got = 0;
	while (got < n) {
		ssize_t k = read(fd, buf + got, n - got);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			int err = k < 0 ? errno : EIO;
			close(fd);
			free(buf);
			return ms_fail(eb, ms_err_from_errno(err),
			               "%s: read failed: %s", file,
			               strerror(err));
		}
		got += (size_t)k;
	}
	close(fd);
	buf[n] = '\0';
	if (memchr(buf, '\0', n)) {
		free(buf);
		return ms_fail(eb, MS_ERR_FORMAT,
		               "%s: contains a NUL byte (not a text file)",
		               file);
	}
	*out = buf;
	*len = n;
	return 0;
}

/* One "key=value" line (NUL-terminated, no line break) of the file. */
static int
parse_line(parser *p, char *line, ms__frozen *f)
{
	char *eq = strchr(line, '=');
	if (!eq || eq == line)
		return ms_fail(p->eb, MS_ERR_FORMAT,
		               "%s:%u: expected key=value, got '%.80s'",
		               p->file, p->line, line);
	*eq = '\0';
	const char *key = line;
	char *val = eq + 1;
	if (!strncmp(key, "ledger.", 7)) {
		if (p->nledger == p->cap_ledger) {
			size_t nc = p->cap_ledger ? p->cap_ledger * 2 : 64;
			void *nr = realloc(p->lrefs, nc * sizeof(*p->lrefs));
			if (!nr)
				return ms_fail(
				        p->eb, MS_ERR_NOMEM,
				        "%s: out of memory for its ledger "
				        "lines (%zu bytes)",
				        p->file, nc * sizeof(*p->lrefs));
			p->lrefs = nr;
			p->cap_ledger = nc;
		}
		p->lrefs[p->nledger++] = (ledger_ref){ line, val, p->line };
		return 0;
	}
	enum key_id k = key_lookup(key);
	if (k == K_COUNT)
		return ms_fail(p->eb, MS_ERR_FORMAT,
		               "%s:%u: unknown key '%.60s'", p->file, p->line,
		               key);
	if (p->seen_line[k])
		return ms_fail(p->eb, MS_ERR_FORMAT,
		               "%s:%u: key '%s' repeated (first on line %u)",
		               p->file, p->line, key, p->seen_line[k]);
	p->seen_line[k] = p->line;
	if (is_list(k)) {
		p->list_val[k] = val;
		return 0;
	}
	return scalar(p, k, val, f);
}

/* Every line of buf (modified in place); then every key is there. */
static int
parse_lines(parser *p, char *buf, ms__frozen *f)
{
	int rc = 0;
	char *line = buf;
	unsigned lineno = 0;
	while (rc == 0 && line && *line) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		char *next = nl ? nl + 1 : NULL;
		p->line = ++lineno;
		size_t ll = strlen(line);
		if (ll && line[ll - 1] == '\r')
			line[--ll] = '\0';
		if (ll != 0 && line[0] != '#')
			rc = parse_line(p, line, f);
		line = next;
	}
	for (int k = 0; rc == 0 && k < K_COUNT; k++)
		if (!p->seen_line[k])
			rc = ms_fail(p->eb, MS_ERR_FORMAT,
			             "%s: key '%s' is missing", p->file,
			             key_names[k]);
	return rc;
}

/* The ledger lines, once the inputs are known: each input has one of
 * every kind. */
static int
parse_ledgers(parser *p, ms__frozen *f)
{
	uint8_t *seen = calloc(f->ninputs, 1);
	if (!seen)
		return ms_fail(p->eb, MS_ERR_NOMEM,
		               "%s: out of memory for the ledgers seen of its "
		               "%zu inputs (%zu bytes)",
		               p->file, f->ninputs, f->ninputs);
	int rc = 0;
	for (size_t i = 0; rc == 0 && i < p->nledger; i++) {
		p->line = p->lrefs[i].line;
		rc = ledger_line(p, p->lrefs[i].key, p->lrefs[i].val, f, seen);
	}
	for (size_t i = 0; rc == 0 && i < f->ninputs; i++)
		for (int k = 0; rc == 0 && k < MS_KIND_COUNT; k++)
			if (!(seen[i] & (1u << k)))
				rc = ms_fail(p->eb, MS_ERR_FORMAT,
				             "%s: key 'ledger.%016" PRIx64
				             ".%s' is missing",
				             p->file, f->ids[i],
				             ms_part_kind_name(
				                     (enum ms_part_kind)k));
	free(seen);
	return rc;
}

/* Keys that must agree with each other. */
static int
cross_check(parser *p, const ms__frozen *f)
{
	if (f->frontier_ns > f->now_ns)
		return ms_fail(p->eb, MS_ERR_FORMAT,
		               "%s:%u: key 'frontier_ns': %" PRId64
		               " is after now_ns %" PRId64,
		               p->file, p->seen_line[K_FRONTIER],
		               f->frontier_ns, f->now_ns);
	uint64_t fp = ms_pick_fp_add(0, f->ids, f->ninputs);
	if (fp != f->selection_fp)
		return ms_fail(p->eb, MS_ERR_FORMAT,
		               "%s:%u: key 'selection_fp': %016" PRIx64
		               " does not match the inputs (they give "
		               "%016" PRIx64 ")",
		               p->file, p->seen_line[K_SELECTION_FP],
		               f->selection_fp, fp);
	if (f->pick_epoch > f->epoch)
		return ms_fail(p->eb, MS_ERR_FORMAT,
		               "%s:%u: key 'pick_epoch': %" PRIu64
		               " is after the frozen epoch %" PRIu64,
		               p->file, p->seen_line[K_PICK_EPOCH],
		               f->pick_epoch, f->epoch);
	return 0;
}

int
ms__frozen_read(const char *dir, ms__frozen *f, ms_errbuf *eb)
{
	memset(f, 0, sizeof(*f));
	char file[PATH_MAX];
	if ((size_t)snprintf(file, sizeof(file), "%s/%s", dir,
	                     MS_FROZEN_FILE) >= sizeof(file))
		return ms_fail(eb, MS_ERR_RANGE, "%s: path too long", dir);
	char *buf;
	size_t len;
	int rc = read_all(file, &buf, &len, eb);
	if (rc)
		return rc;
	(void)len;
	parser p;
	memset(&p, 0, sizeof(p));
	p.file = file;
	p.eb = eb;
	if ((rc = parse_lines(&p, buf, f)) == 0 &&
	    (rc = parse_lists(&p, f)) == 0 &&
	    (rc = parse_ledgers(&p, f)) == 0)
		rc = cross_check(&p, f);
	free(p.lrefs);
	free(buf);
	if (rc)
		ms__frozen_release(f);
	return rc;
}
