/*
 * test_freeze.c - freezing the shard at a dispatch barrier and replaying
 * that one merge with merge-once, on the smoke fixture: freeze works only
 * at a barrier and never over an existing directory; the frozen shard and
 * frozen.txt hold exactly the pending selection; frozen.txt is read
 * strictly (errors name file, line and key), older formats refused; the
 * picker re-run on the frozen state gives the selection (at successive
 * barriers of a lane-mode run too) and a tampered selection is refused,
 * naming both; merge-once reproduces the output ledgers the merge
 * produced in the run, for a lossless merge and for a sampling one, in
 * this process and with each repetition in a fresh one, and a variant that
 * drops writes the inputs' ledgers minus its dropped rows; sampling variants
 * agree with the verdict oracle, and one the oracle disagrees with is
 * reported naming trace IDs; bad variants are refused before any work.
 */
#include "frozen.h"
#include "replay_testlib.h"

#include "ms_picker.h"

#include <ctype.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "alloc_testlib.h"

/* The frozen merge of test_freeze_contents, reused by later tests. */
static char frozen_dir[PATH_MAX];

static ms_replay *
open_started(rt_run *run, const char *name, const char *variant, bool paused,
             bool keep, const char *bp)
{
	rt_opts(run, name, variant);
	run->o.serial = true;
	run->o.start_paused = paused;
	run->o.keep_shard = keep;
	ms_replay *r = rt_start(run, bp);
	assert_non_null(r);
	return r;
}

static void
test_freeze_needs_barrier(void **state)
{
	(void)state;
	rt_run run;
	ms_replay *r =
	        open_started(&run, "fz-paused", "disabled", true, false, NULL);
	ms_replay_status *st = rt_status_new();
	assert_true(rt_wait_stop(r, st));
	assert_int_equal(st->state, MS_REPLAY_PAUSED);
	char dir[PATH_MAX], out[PATH_MAX] = "x";
	rt_path(dir, sizeof(dir), "fz-never");
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_replay_freeze(r, dir, out, sizeof(out), &eb),
	                 MS_ERR_STATE);
	assert_non_null(strstr(eb.msg, "barrier"));
	assert_string_equal(out, "");
	assert_false(rt_exists(dir));
	/* Out of memory for its list of claimed parts, first of all: said
	 * what for and how many bytes (it said "freeze: out of memory"). */
	size_t claims = MAX_CLAIMS * MS_PICKER_PARTS_LIMIT * sizeof(uint64_t);
	tl_alloc.fail_size = claims;
	int rc = ms_replay_freeze(r, dir, out, sizeof(out), &eb);
	assert_true(tl_alloc_disarm());
	assert_int_equal(rc, MS_ERR_NOMEM);
	char want[128];
	snprintf(want, sizeof(want),
	         "freeze: out of memory for the inputs of the merges in "
	         "flight (%zu bytes)",
	         claims);
	assert_string_equal(eb.msg, want);
	assert_false(rt_exists(dir));
	ms_replay_close(r);
	free(st);
}

/* The picker re-run on the frozen shard gives the selection; with two
 * inputs swapped, or a selected part claimed by another merge, it does
 * not, and the refusal names both selections. */
static void
check_repick(const ms__frozen *fz, ms_view *v)
{
	ms__frozen f = *fz; /* its claimed list is this copy's own */
	ms_errbuf eb = { { 0 } };
	ms__pick_ids pick;
	assert_int_equal(ms__frozen_repick(&f, v, &pick, &eb), 0);
	assert_int_equal(pick.n, f.ninputs);
	assert_memory_equal(pick.ids, f.ids, f.ninputs * sizeof(*f.ids));
	assert_int_equal(ms__frozen_check_pick(&f, v, "test", &eb), 0);
	uint64_t t = f.ids[0];
	f.ids[0] = f.ids[1];
	f.ids[1] = t;
	assert_int_equal(ms__frozen_check_pick(&f, v, "test", &eb),
	                 MS_ERR_CONFLICT);
	fprintf(stderr, "refused as expected: %s\n", eb.msg);
	char a[17], b[17];
	ms_part_id_str(f.ids[0], a);
	ms_part_id_str(f.ids[1], b);
	assert_non_null(strstr(eb.msg, a));
	assert_non_null(strstr(eb.msg, b));
	assert_non_null(strstr(eb.msg, "re-run on the frozen state"));
	assert_non_null(strstr(eb.msg, "position 1"));
	f.ids[1] = f.ids[0];
	f.ids[0] = t;
	uint64_t claimed_id = f.ids[f.ninputs - 1];
	f.claimed.ids = &claimed_id;
	f.claimed.n = 1;
	assert_int_equal(ms__frozen_check_pick(&f, v, "test", &eb),
	                 MS_ERR_CONFLICT);
}

static void
test_freeze_contents(void **state)
{
	(void)state;
	rt_run run;
	ms_replay *r =
	        open_started(&run, "fz", "disabled", false, false, "merge=3");
	ms_replay_status *st = rt_status_new();
	assert_true(rt_wait_stop(r, st));
	assert_int_equal(st->state, MS_REPLAY_BREAK);
	assert_int_equal(st->pending.seq, 3);
	rt_shm_path(frozen_dir, sizeof(frozen_dir), "frozen-3");
	char out[PATH_MAX];
	ms_errbuf eb = { { 0 } };
	int rc = ms_replay_freeze(r, frozen_dir, out, sizeof(out), &eb);
	if (rc)
		fprintf(stderr, "freeze: %s\n", eb.msg);
	assert_int_equal(rc, 0);
	assert_string_equal(out, frozen_dir);
	/* Never over an existing directory. */
	assert_int_equal(ms_replay_freeze(r, frozen_dir, NULL, 0, &eb),
	                 MS_ERR_EXISTS);
	assert_non_null(strstr(eb.msg, frozen_dir));
	/* The default name says which merge. */
	assert_int_equal(ms_replay_freeze(r, NULL, out, sizeof(out), &eb), 0);
	char want[PATH_MAX];
	snprintf(want, sizeof(want), "%s.frozen-3", run.work);
	assert_string_equal(out, want);
	/* The same merge frozen again (the run went back and came to its
	 * barrier again): the next free default name, not a refusal that
	 * asks for a directory the TUI's f has no way to give. */
	assert_int_equal(ms_replay_freeze(r, NULL, out, sizeof(out), &eb), 0);
	snprintf(want, sizeof(want), "%s.frozen-3.2", run.work);
	assert_string_equal(out, want);
	/* A directory whose last name is NAME_MAX bytes: its temporary
	 * name ("DIR.tmp-PID") fits too. */
	char base[NAME_MAX + 1], longdir[PATH_MAX];
	memset(base, 'z', NAME_MAX);
	base[NAME_MAX] = '\0';
	rt_shm_path(longdir, sizeof(longdir), "%s", base);
	rc = ms_replay_freeze(r, longdir, out, sizeof(out), &eb);
	if (rc)
		fail_msg("freeze into a %d-byte name: %s", NAME_MAX, eb.msg);
	assert_string_equal(out, longdir);
	char ff[PATH_MAX + 16];
	snprintf(ff, sizeof(ff), "%s/%s", longdir, MS_FROZEN_FILE);
	assert_true(rt_exists(ff));
	assert_int_equal(ms_test_rmtree(longdir), 0);
	ms__frozen again;
	assert_int_equal(ms__frozen_read(want, &again, &eb), 0);
	assert_int_equal(again.seq, 3);
	ms__frozen_release(&again);
	ms_replay_close(r);

	/* frozen.txt says what the barrier showed. */
	ms__frozen f;
	rc = ms__frozen_read(frozen_dir, &f, &eb);
	if (rc)
		fprintf(stderr, "read: %s\n", eb.msg);
	assert_int_equal(rc, 0);
	assert_int_equal(f.seq, 3);
	assert_int_equal(f.ninputs, st->pending.ninputs);
	for (size_t i = 0; i < f.ninputs; i++) {
		assert_int_equal(f.ids[i], st->pending.inputs[i].id);
		assert_int_equal(f.depths[i], st->pending.inputs[i].depth);
	}
	assert_int_equal(f.selection_fp, ms_pick_fp_add(0, f.ids, f.ninputs));
	assert_int_equal(f.output_id, st->pending.output_id);
	assert_int_equal(f.now_ns, st->pending.now_ns);
	assert_int_equal(f.frontier_ns, st->pending.frontier_ns);
	assert_string_equal(f.variant, "disabled");
	assert_string_equal(f.fixture_dir, rt.fixture);
	assert_int_equal(f.fixture_seed, RT_SEED);
	assert_string_equal(f.lane, "fast");
	/* What the picker saw: a serial run has nothing else in flight. */
	assert_int_equal(f.pick_epoch, st->pending.epoch);
	assert_true(f.pick_epoch <= f.epoch);
	assert_int_equal(f.pass, st->pending.pass);
	assert_int_equal(f.fan_out, st->pending.max_fan_out);
	assert_true(f.fan_out > 0);
	assert_int_equal(f.picker_max_parts, MS_PICKER_MAX_PARTS);
	assert_true(f.picker_multiplier == MS_PICKER_MULTIPLIER);
	assert_int_equal(f.claimed.n, 0);
	assert_int_equal(f.quarantined.n, 0);
	assert_int_equal(f.unseen.n, 0);

	/* The frozen shard is a proper shard holding the whole inventory,
	 * and its inputs have the ledgers frozen.txt recorded. */
	char sdir[PATH_MAX];
	snprintf(sdir, sizeof(sdir), "%s/shard", frozen_dir);
	ms_shard *s = NULL;
	ms_shard_opts so = { .dir = sdir };
	assert_int_equal(ms_shard_open(&s, &so, &eb), 0);
	assert_int_equal(ms_shard_count(s), f.shard_parts);
	ms_view *v = NULL;
	assert_int_equal(ms_shard_view(s, &v, &eb), 0);
	for (size_t i = 0; i < f.ninputs; i++) {
		for (int k = 0; k < MS_KIND_COUNT; k++) {
			const ms_part *p =
			        ms_view_find(v, f.ids[i], (enum ms_part_kind)k);
			assert_non_null(p);
			ms_ledger l;
			assert_int_equal(ms_ledger_of_part(p, &l, NULL, &eb),
			                 0);
			assert_true(ms_ledger_equal(&l, &f.ledgers[i].kind[k]));
			assert_true(l.rows > 0);
		}
	}
	check_repick(&f, v);
	ms_view_release(v);
	ms_shard_close(s);
	ms__frozen_release(&f);
	free(st);
}

/* ---- strict reading of frozen.txt ------------------------------------ */

static char *
slurp(const char *path)
{
	FILE *fp = fopen(path, "r");
	assert_non_null(fp);
	fseek(fp, 0, SEEK_END);
	long n = ftell(fp);
	fseek(fp, 0, SEEK_SET);
	char *b = calloc(1, (size_t)n + 1);
	assert_non_null(b);
	assert_int_equal(fread(b, 1, (size_t)n, fp), (size_t)n);
	fclose(fp);
	return b;
}

/* 1-based line number of the first line starting with prefix. */
static unsigned
line_of(const char *text, const char *prefix)
{
	unsigned ln = 1;
	for (const char *p = text; *p;) {
		if (!strncmp(p, prefix, strlen(prefix)))
			return ln;
		const char *nl = strchr(p, '\n');
		if (!nl)
			break;
		p = nl + 1;
		ln++;
	}
	return 0;
}

/* Replace the line starting with `prefix` by `with` (NULL: delete it);
 * `append` is added at the end. Returns a new string. */
static char *
edit(const char *text, const char *prefix, const char *with, const char *append)
{
	size_t n = strlen(text) + (with ? strlen(with) : 0) +
	           (append ? strlen(append) : 0) + 4;
	char *o = calloc(1, n);
	assert_non_null(o);
	for (const char *p = text; *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p + 1) : strlen(p);
		if (prefix && !strncmp(p, prefix, strlen(prefix))) {
			if (with) {
				strcat(o, with);
				strcat(o, "\n");
			}
			prefix = NULL;
		} else {
			size_t at = strlen(o);
			memcpy(o + at, p, len);
			o[at + len] = '\0';
		}
		p += len;
	}
	if (append)
		strcat(o, append);
	return o;
}

/* Write text as DIR/frozen.txt of a fresh directory and read it: it must
 * fail with MS_ERR_FORMAT naming the file, `line` (0 = no line) and
 * `needle`. */
static void
expect_bad(const char *text, unsigned line, const char *needle)
{
	static unsigned n;
	char dir[PATH_MAX], file[PATH_MAX + 16];
	rt_path(dir, sizeof(dir), "bad-frozen-%u", ++n);
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(file, sizeof(file), "%s/frozen.txt", dir);
	FILE *fp = fopen(file, "w");
	assert_non_null(fp);
	fputs(text, fp);
	fclose(fp);
	ms__frozen f;
	ms_errbuf eb = { { 0 } };
	int rc = ms__frozen_read(dir, &f, &eb);
	fprintf(stderr, "refused as expected: %s\n", eb.msg);
	assert_int_equal(rc, MS_ERR_FORMAT);
	assert_null(f.ids);
	assert_non_null(strstr(eb.msg, file));
	assert_null(strchr(eb.msg, '\n'));
	if (line) {
		char at[32];
		snprintf(at, sizeof(at), ":%u:", line);
		assert_non_null(strstr(eb.msg, at));
	}
	if (!strstr(eb.msg, needle)) {
		fprintf(stderr, "message lacks '%s'\n", needle);
		fail();
	}
}

/* good with the line of key KEY (`key=`) replaced by `line` (NULL:
 * deleted) must be refused at that line (0 when deleted) with needle. */
static void
bad_line(const char *good, const char *key, const char *line,
         const char *needle)
{
	char *t = edit(good, key, line, NULL);
	expect_bad(t, line ? line_of(t, key) : 0, needle);
	free(t);
}

/* Format 3's keys: the picker's state, read as strictly as the rest. */
static void
strict_picker_keys(const char *good, const char *id0)
{
	/* An older format lacks the picker's state: refused, saying so. */
	char fmt[32], claimed[40];
	snprintf(fmt, sizeof(fmt), "format=%d", MS_FROZEN_FORMAT - 1);
	bad_line(good, "format=", fmt, "freeze the merge again");
	bad_line(good, "pick_epoch=", "pick_epoch=99999999",
	         "after the frozen epoch");
	bad_line(good, "pass=", "pass=0", "key 'pass'");
	bad_line(good, "picker_multiplier=", "picker_multiplier=0",
	         "a multiple > 0");
	bad_line(good, "picker_max_parts=", "picker_max_parts=65",
	         "from 2 to 64");
	snprintf(claimed, sizeof(claimed), "claimed=%s", id0);
	bad_line(good, "claimed=", claimed, "is an input of the merge");
	bad_line(good, "unseen=", "unseen=00000000000000aa,00000000000000aa",
	         "distinct part IDs");
	bad_line(good, "quarantined=", NULL, "key 'quarantined' is missing");
}

static int
read_frozen(void *ctx, ms_errbuf *eb)
{
	ms__frozen f;
	int rc = ms__frozen_read(ctx, &f, eb);
	ms__frozen_release(&f);
	return rc;
}

/* Out of memory while reading frozen.txt, at each allocation in turn:
 * the message names the file, what the memory was for and how many bytes
 * (it said only "FILE: out of memory"). */
static void
test_frozen_read_out_of_memory(void **state)
{
	(void)state;
	assert_true(frozen_dir[0]);
	char file[PATH_MAX + 16];
	snprintf(file, sizeof(file), "%s/frozen.txt", frozen_dir);
	tl_alloc_call c = { read_frozen, frozen_dir };
	tl_sweep_want w = { file, true, true };
	assert_true(tl_sweep(tl_alloc_step, &c, &w) >= 4);
}

static void
test_frozen_file_strict(void **state)
{
	(void)state;
	assert_true(frozen_dir[0]);
	char file[PATH_MAX + 16];
	snprintf(file, sizeof(file), "%s/frozen.txt", frozen_dir);
	char *good = slurp(file);
	char *t;

	/* The file as written is accepted (and so are its comments). */
	ms__frozen f;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms__frozen_read(frozen_dir, &f, &eb), 0);
	char id0[17];
	ms_part_id_str(f.ids[0], id0);
	ms__frozen_release(&f);

	t = edit(good, NULL, NULL, "bogus=1\n");
	expect_bad(t, line_of(t, "bogus="), "unknown key 'bogus'");
	free(t);

	t = edit(good, NULL, NULL, "seq=4\n");
	unsigned last = 0;
	for (const char *p = t; *p; p++)
		last += *p == '\n';
	expect_bad(t, last, "key 'seq' repeated");
	free(t);

	bad_line(good, "lane=", NULL, "key 'lane' is missing");
	bad_line(good, "cpus=", "cpus=two", "key 'cpus'");
	bad_line(good, "now_ns=", "now_ns=12x", "key 'now_ns'");
	bad_line(good, "grace_policy=", "grace_policy=sometimes",
	         "selection or trace");

	/* A newer format than this build reads. */
	char fmt[32], ver[32];
	snprintf(fmt, sizeof(fmt), "format=%d", MS_FROZEN_FORMAT + 1);
	snprintf(ver, sizeof(ver), "version %d", MS_FROZEN_FORMAT + 1);
	bad_line(good, "format=", fmt, ver);

	strict_picker_keys(good, id0);

	bad_line(good, "segment_ns=", "segment_ns=5,4", "key 'segment_ns'");
	bad_line(good, "selection_fp=", "selection_fp=0123456789abcdef",
	         "does not match");
	bad_line(good, "output_id=", "output_id=ABC", "key 'output_id'");
	bad_line(good, "depths=", "depths=0", "one per input");

	char key[64];
	snprintf(key, sizeof(key), "ledger.%s.latency=", id0);
	char want[80];
	snprintf(want, sizeof(want), "ledger.%s.latency' is missing", id0);
	bad_line(good, key, NULL, want);

	t = edit(good, NULL, NULL,
	         "ledger.00000000deadbeef.core=1:"
	         "00000000000000000000000000000000\n");
	expect_bad(t, line_of(t, "ledger.00000000deadbeef"),
	           "not one of the inputs");
	free(t);

	snprintf(key, sizeof(key), "ledger.%s.core=", id0);
	char repl[128];
	snprintf(repl, sizeof(repl), "ledger.%s.core=12:zz", id0);
	bad_line(good, key, repl, "<rows>:<32 hex digits>");

	t = edit(good, "inputs=", "inputs no equals sign", NULL);
	expect_bad(t, line_of(t, "inputs no"), "expected key=value");
	free(t);

	/* No file at all: not found, naming the path. */
	char empty[PATH_MAX];
	rt_path(empty, sizeof(empty), "not-frozen");
	assert_int_equal(mkdir(empty, 0755), 0);
	assert_int_equal(ms__frozen_read(empty, &f, &eb), MS_ERR_NOTFOUND);
	assert_non_null(strstr(eb.msg, empty));
	free(good);
}

/* ---- merge-once reproduces the run ---------------------------------- */

/* The ledgers part `id` had in the run: from a freeze at the barrier of
 * the merge that consumes it, or from the kept shard at the end. */
static void
run_ledger_of(ms_replay *r, rt_run *run, uint64_t id, ms_ledger_set *out)
{
	char spec[40];
	snprintf(spec, sizeof(spec), "part=%016" PRIx64, id);
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_replay_break_add(r, spec, NULL, &eb), 0);
	assert_int_equal(ms_replay_command(r, MS_RCMD_RUN, &eb), 0);
	ms_replay_status *st = rt_status_new();
	assert_true(rt_wait_stop(r, st));
	if (st->state == MS_REPLAY_BREAK) {
		char dir[PATH_MAX];
		rt_shm_path(dir, sizeof(dir), "consumer-%016" PRIx64, id);
		assert_int_equal(ms_replay_freeze(r, dir, NULL, 0, &eb), 0);
		ms__frozen f;
		assert_int_equal(ms__frozen_read(dir, &f, &eb), 0);
		size_t i = 0;
		while (i < f.ninputs && f.ids[i] != id)
			i++;
		assert_true(i < f.ninputs);
		*out = f.ledgers[i];
		ms__frozen_release(&f);
		ms_replay_close(r);
	} else {
		/* Never merged again: it is in the final inventory. */
		assert_int_equal(st->state, MS_REPLAY_DONE);
		ms_replay_close(r);
		ms_shard *s = NULL;
		ms_shard_opts so = { .dir = run->work };
		assert_int_equal(ms_shard_open(&s, &so, &eb), 0);
		ms_view *v = NULL;
		assert_int_equal(ms_shard_view(s, &v, &eb), 0);
		for (int k = 0; k < MS_KIND_COUNT; k++) {
			const ms_part *p =
			        ms_view_find(v, id, (enum ms_part_kind)k);
			assert_non_null(p);
			assert_int_equal(
			        ms_ledger_of_part(p, &out->kind[k], NULL, &eb),
			        0);
		}
		ms_view_release(v);
		ms_shard_close(s);
	}
	free(st);
}

typedef struct merge_ev {
	uint64_t seq;
	bool found;
	ms_ev_merge m;
} merge_ev;

static int
find_merge(void *ctx, const ms_ev_merge *m)
{
	merge_ev *e = ctx;
	if (m->seq == e->seq) {
		e->found = true;
		e->m = *m;
		e->m.inputs = NULL;
	}
	return 0;
}

/* Freeze the first barrier matching bp in a serial run of variant, let
 * the run go on to learn the merge's output ledgers, then replay the
 * frozen merge under the variants and compare. */
static void
reproduce(const char *name, const char *variant, const char *bp,
          const char **variants, size_t nv, bool expect_drops, bool fresh)
{
	rt_run run;
	ms_replay *r = open_started(&run, name, variant, false, true, bp);
	ms_replay_status *st = rt_status_new();
	assert_true(rt_wait_stop(r, st));
	assert_int_equal(st->state, MS_REPLAY_BREAK);
	uint64_t seq = st->pending.seq, out_id = st->pending.output_id;
	char dir[PATH_MAX];
	rt_shm_path(dir, sizeof(dir), "%s-frozen", name);
	ms_errbuf eb = { { 0 } };
	int rc = ms_replay_freeze(r, dir, NULL, 0, &eb);
	if (rc)
		fprintf(stderr, "freeze: %s\n", eb.msg);
	assert_int_equal(rc, 0);
	ms_ledger_set in_run;
	run_ledger_of(r, &run, out_id, &in_run);
	assert_true(in_run.kind[MS_KIND_CORE].rows > 0);

	/* The merge as the event log recorded it. */
	ms_evdb *db = NULL;
	assert_int_equal(ms_evdb_open(&db, run.db, &eb), 0);
	merge_ev ev = { .seq = seq };
	assert_int_equal(ms_evdb_each_merge(db, NULL, find_merge, &ev, &eb), 0);
	ms_evdb_close(db);
	assert_true(ev.found);
	assert_int_equal(ev.m.output.id, out_id);
	assert_int_equal(ev.m.output.rows, in_run.kind[MS_KIND_CORE].rows);

	ms_merge_once_result res[4];
	assert_true(nv <= 4);
	char *table = NULL;
	size_t tlen = 0;
	FILE *out = open_memstream(&table, &tlen);
	assert_non_null(out);
	ms_merge_once_opts o = {
		.frozen_dir = dir,
		.variants = variants,
		.nvariants = nv,
		.reps = 3,
		.plugin_dir = MS_PLUGIN_DIR,
		.out = out,
		.self_exe = fresh ? MS_BINARY_DIR "/tui/mergescope" : NULL,
	};
	rc = ms_merge_once(&o, res, &eb);
	fclose(out);
	if (rc)
		fprintf(stderr, "merge-once: %s\n", eb.msg);
	assert_int_equal(rc, 0);
	fprintf(stderr, "%s", table);
	for (size_t i = 0; i < nv; i++)
		assert_non_null(strstr(table, variants[i]));
	assert_non_null(strstr(table, "re-run on the frozen state"));
	assert_non_null(strstr(table, fresh ? "each in a fresh process"
	                                    : "in this process"));
	/* Every repetition has its line: "<variant> ... 3 " at rep 3. */
	assert_non_null(strstr(table, "RSS MiB"));
	/* A variant that drops has its output reconciled with the inputs
	 * minus the rows of its dropped traces, and the table says so. */
	if (expect_drops)
		assert_non_null(strstr(table, "stable, reconciled"));
	if (nv > 1) {
		char want[80];
		snprintf(want, sizeof(want), "ratio to %s", variants[0]);
		assert_non_null(strstr(table, want));
	}
	free(table);
	/* The first variant is the run's: the same output, row for row. */
	assert_string_equal(res[0].variant, variant);
	assert_int_equal(res[0].reps, 3);
	assert_true(res[0].ledgers_stable);
	assert_true(ms_ledger_set_equal(&res[0].out_ledger, &in_run));
	assert_int_equal(res[0].rows_out, ev.m.rows_out);
	assert_int_equal(res[0].traces_dropped, ev.m.sampling.traces_dropped);
	assert_true(res[0].wall_median_ns > 0);
	/* The merge's I/O, allocations and write amplification. */
	assert_true(res[0].count_median > 0);
	assert_true(res[0].read_median > 0);
	assert_true(res[0].written_median > 0);
	assert_true(res[0].wa_median > 0 && res[0].wa_median < 2);
	assert_true(res[0].alloc_median > 0);
	assert_true(res[0].rss_median > 0);
	assert_true(res[0].outin_median > 0 && res[0].outin_median < 2);
	/* Variants with a chain agree with the verdict oracle. */
	for (size_t i = 0; i < nv; i++) {
		bool chain = strcmp(variants[i], "disabled") != 0;
		assert_int_equal(res[i].oracle_checked, chain);
		if (chain) {
			fprintf(stderr, "%s: %s\n", variants[i],
			        res[i].oracle_note);
			assert_true(res[i].oracle_match);
			assert_int_equal(res[i].oracle_bad_drops, 0);
		}
	}
	/* The traces kept for a reason are counted once each: a trace
	 * retained at the segment's edge is one of the guard's deferred
	 * (it was counted twice, letting as many unexplained kept drops
	 * pass as the edge retained). */
	const ms_merge_sampling *sm = &ev.m.sampling;
	if (res[0].oracle_checked && sm->traces_deferred)
		assert_int_equal(res[0].oracle_reasons,
		                 sm->traces_deferred + sm->traces_unevaluated +
		                         sm->traces_oversized);
	if (expect_drops) {
		assert_true(res[0].traces_dropped > 0);
		assert_true(sm->guard_retained_edge > 0);
		assert_true(sm->guard_retained_edge <= sm->traces_deferred);
	} else
		assert_true(ms_ledger_set_equal(&res[0].out_ledger,
		                                &res[0].in_ledger));
	for (size_t i = 1; i < nv; i++)
		assert_true(res[i].ledgers_stable);
	for (size_t i = 0; i < nv; i++)
		assert_true(res[i].ledgers_reconciled);
	/* Scratch copies are gone. */
	char runs[PATH_MAX + 8];
	snprintf(runs, sizeof(runs), "%s/runs", dir);
	assert_false(rt_exists(runs));
	free(st);
}

static void
test_merge_once_lossless(void **state)
{
	(void)state;
	const char *v[] = { "alwayskeep", "disabled" };
	reproduce("mo-keep", "alwayskeep", "merge=5", v, 2, false, false);
}

static void
test_merge_once_sampling(void **state)
{
	(void)state;
	const char *v[] = { "skywalking", "disabled", "detdrop:35" };
	reproduce("mo-sky", "skywalking", "sampling", v, 3, true, true);
}

/* One repetition of one variant of the merge frozen in dir (fresh: in a
 * fresh process of the program), the oracle evaluating oracle_spec (NULL:
 * the variant). */
static ms_merge_once_opts
once_1_opts(const char *dir, const char **variant)
{
	return (ms_merge_once_opts){
		.frozen_dir = dir,
		.variants = variant,
		.nvariants = 1,
		.reps = 1,
		.plugin_dir = MS_PLUGIN_DIR,
	};
}

static int
once_1(const char *dir, const char *variant, bool fresh,
       const char *oracle_spec, ms_merge_once_result *res, ms_errbuf *eb)
{
	const char *v[] = { variant };
	ms_merge_once_opts o = once_1_opts(dir, v);
	o.self_exe = fresh ? MS_BINARY_DIR "/tui/mergescope" : NULL;
	return ms__merge_once_oracle(&o, res, oracle_spec, eb);
}

/* A sampler the oracle does not agree with: the merge drops traces with
 * detdrop:60, the oracle evaluates detdrop:35. A mismatch names traces. */
static void
test_merge_once_oracle_mismatch(void **state)
{
	(void)state;
	char dir[PATH_MAX];
	rt_shm_path(dir, sizeof(dir), "mo-sky-frozen");
	assert_true(rt_exists(dir));
	ms_merge_once_result res[1];
	ms_errbuf eb = { { 0 } };
	assert_int_equal(
	        once_1(dir, "detdrop:60", false, "detdrop:35", res, &eb), 0);
	fprintf(stderr, "%s\n", res[0].oracle_note);
	assert_true(res[0].oracle_checked);
	assert_false(res[0].oracle_match);
	assert_true(res[0].oracle_bad_drops > 0);
	assert_non_null(strstr(res[0].oracle_note, "MISMATCH"));
	/* The note names trace IDs (hex). */
	const char *paren = strchr(res[0].oracle_note, '(');
	assert_non_null(paren);
	assert_true(isxdigit((unsigned char)paren[1]) &&
	            isxdigit((unsigned char)paren[2]));
	/* The same variant under its own oracle agrees. */
	assert_int_equal(once_1(dir, "detdrop:60", false, NULL, res, &eb), 0);
	assert_true(res[0].oracle_match);
}

/* A plugin file replaced while merge-once runs (after its repetitions,
 * before its oracle opens the plugins again by path): refused, naming
 * the file and both checksums, as the run's verdict-oracle gate does. The
 * oracle judged with the new plugin, and nothing said so. The repetition
 * runs in a fresh process through a script that changes the plugin (a
 * byte appended: it still loads, with another checksum) once it ends. */
static void
test_merge_once_oracle_plugin_changed(void **state)
{
	(void)state;
	char dir[PATH_MAX], plugins[PATH_MAX], exe[PATH_MAX], cmd[4 * PATH_MAX];
	rt_shm_path(dir, sizeof(dir), "mo-sky-frozen");
	assert_true(rt_exists(dir));
	rt_shm_path(plugins, sizeof(plugins), "mo-changed-plugins");
	rt_shm_path(exe, sizeof(exe), "mo-changed-exe.sh");
	snprintf(cmd, sizeof(cmd),
	         "rm -rf '%s' && cp -R '%s' '%s' && printf '#!/bin/sh\n"
	         "\"%s\" \"$@\"; rc=$?; printf x >> \"%s/detdrop.so\"; "
	         "exit $rc\n' > '%s' && chmod 755 '%s'",
	         plugins, MS_PLUGIN_DIR, plugins,
	         MS_BINARY_DIR "/tui/mergescope", plugins, exe, exe);
	assert_int_equal(system(cmd), 0);
	const char *v[] = { "detdrop:60" };
	ms_merge_once_opts o = once_1_opts(dir, v);
	o.plugin_dir = plugins;
	o.self_exe = exe;
	ms_merge_once_result res[1];
	ms_errbuf eb = { { 0 } };
	int rc = ms_merge_once(&o, res, &eb);
	fprintf(stderr, "%s\n", eb.msg);
	assert_int_equal(rc, MS_ERR_CONFLICT);
	char want[2 * PATH_MAX];
	snprintf(want, sizeof(want),
	         "merge-once: the oracle for detdrop:60: link 1 plugin "
	         "%s/detdrop.so has checksum ",
	         plugins);
	if (!strstr(eb.msg, want) || !strstr(eb.msg, ", the repetitions ran "
	                                              "checksum "))
		fail_msg("said: %s", eb.msg);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", plugins, exe);
	assert_int_equal(system(cmd), 0);
}

/* A variant whose output ledgers are not its inputs' minus its dropped
 * rows (one dropped trace left out of the reconciliation, as a merge
 * that wrote one trace it said it dropped): UNRECONCILED, and the note,
 * in the table too, names the merge, the kind and the ledgers found and
 * expected with their rows. */
static void
test_merge_once_unreconciled_figures(void **state)
{
	(void)state;
	char dir[PATH_MAX];
	rt_shm_path(dir, sizeof(dir), "mo-sky-frozen");
	assert_true(rt_exists(dir));
	const char *v[] = { "detdrop:60" };
	ms_merge_once_opts o = once_1_opts(dir, v);
	char *table = NULL;
	size_t tlen = 0;
	o.out = open_memstream(&table, &tlen);
	assert_non_null(o.out);
	ms_merge_once_result res[1];
	ms_errbuf eb = { { 0 } };
	int rc = ms__merge_once_test(&o, res, NULL, true, &eb);
	fclose(o.out);
	assert_int_equal(rc, 0);
	fprintf(stderr, "%s%s\n", table, res[0].recon_note);
	assert_true(res[0].traces_dropped > 1);
	assert_false(res[0].ledgers_reconciled);
	const ms_ledger *in = &res[0].in_ledger.kind[MS_KIND_CORE];
	const ms_ledger *got = &res[0].out_ledger.kind[MS_KIND_CORE];
	char a[MS_LEDGER_STR_MAX], want[400];
	snprintf(want, sizeof(want),
	         ": the output's core ledger is %s, expected ",
	         ms_ledger_format(got, a));
	assert_non_null(strstr(res[0].recon_note, want));
	assert_non_null(strstr(res[0].recon_note, "merge #"));
	/* Expected: more rows than found (the forgotten trace's). */
	const char *exp = strstr(res[0].recon_note, "expected ") + 9;
	assert_true(strtoull(exp, NULL, 10) > got->rows);
	snprintf(want, sizeof(want),
	         "(the inputs' %llu rows minus the ",
	         (unsigned long long)in->rows);
	assert_non_null(strstr(res[0].recon_note, want));
	snprintf(want, sizeof(want), "rows of its %llu dropped traces)",
	         (unsigned long long)res[0].traces_dropped);
	assert_non_null(strstr(res[0].recon_note, want));
	snprintf(want, sizeof(want), " UNRECONCILED: %s\n",
	         res[0].recon_note);
	assert_non_null(strstr(table, want));
	free(table);
	/* Whole, it reconciles, and says nothing. */
	o.out = NULL;
	assert_int_equal(ms__merge_once_test(&o, res, NULL, false, &eb), 0);
	assert_true(res[0].ledgers_reconciled);
	assert_string_equal(res[0].recon_note, "");
}

/* The table of variants whose specs share their first 24 columns: each
 * is named whole where every spec fits the column (40), and as V1, V2
 * with a legend giving the specs when one does not. Before, every table
 * cut them to 24 columns (the oracle's lines to 17), so both read
 * `skywalking,detdrop:{"per`. */
static char *
once_table(const char *dir, const char **v, size_t nv)
{
	char *table = NULL;
	size_t tlen = 0;
	FILE *out = open_memstream(&table, &tlen);
	assert_non_null(out);
	ms_merge_once_opts o = once_1_opts(dir, v);
	o.nvariants = nv;
	o.out = out;
	ms_merge_once_result res[3];
	ms_errbuf eb = { { 0 } };
	int rc = ms_merge_once(&o, res, &eb);
	fclose(out);
	if (rc)
		fprintf(stderr, "merge-once: %s\n", eb.msg);
	assert_int_equal(rc, 0);
	fprintf(stderr, "%s", table);
	return table;
}

static size_t
count_lines_starting(const char *table, const char *prefix)
{
	size_t n = 0;
	for (const char *p = table; p && *p; p = strchr(p, '\n')) {
		if (*p == '\n')
			p++;
		if (strncmp(p, prefix, strlen(prefix)) == 0 &&
		    p[strlen(prefix)] == ' ')
			n++;
	}
	return n;
}

static void
test_merge_once_long_variant_names(void **state)
{
	(void)state;
	char dir[PATH_MAX];
	rt_shm_path(dir, sizeof(dir), "mo-sky-frozen");
	assert_true(rt_exists(dir));
	const char *fit[] = { "skywalking,detdrop:{\"percent\":35}",
		              "skywalking,detdrop:{\"percent\":50}" };
	char *t = once_table(dir, fit, 2);
	/* Each spec starts its lines of the repetitions and of both
	 * medians tables, the second one its line of ratios too. */
	for (size_t i = 0; i < 2; i++)
		assert_int_equal(count_lines_starting(t, fit[i]), i ? 4 : 3);
	char want[128];
	for (size_t i = 0; i < 2; i++) {
		snprintf(want, sizeof(want), "\noracle %s ", fit[i]);
		assert_non_null(strstr(t, want));
	}
	snprintf(want, sizeof(want), "\nratio to %s\n", fit[0]);
	assert_non_null(strstr(t, want));
	assert_non_null(strstr(t, "1 repetition per variant"));
	free(t);

	const char *lng[] = {
		"skywalking,detdrop:{\"percent\":35},alwayskeep",
		"skywalking,detdrop:{\"percent\":50}", "disabled"
	};
	t = once_table(dir, lng, 3);
	for (size_t i = 0; i < 3; i++) {
		snprintf(want, sizeof(want), "V%zu = %s\n", i + 1, lng[i]);
		assert_non_null(strstr(t, want));
		snprintf(want, sizeof(want), "V%zu", i + 1);
		assert_int_equal(count_lines_starting(t, want), i ? 4 : 3);
	}
	assert_non_null(strstr(t, "\noracle V1 "));
	assert_non_null(strstr(t, "\noracle V2 "));
	assert_non_null(strstr(t, "\nratio to V1 "));
	free(t);
}

/* Where the note of the oracle line of label starts in table: the
 * column after "oracle LABEL" and its padding. */
static size_t
oracle_note_col(const char *table, const char *label)
{
	char want[128];
	snprintf(want, sizeof(want), "\noracle %s ", label);
	const char *p = strstr(table, want);
	assert_non_null(p);
	p++;
	size_t col = strlen("oracle ") + strlen(label);
	while (p[col] == ' ')
		col++;
	return col;
}

/* The oracle's notes start in one column whatever the labels' lengths;
 * a label longer than 17 pushed its note right of the others. With one
 * repetition the coefficients of variation read n/a: they were 0.0, a
 * spread no one measured. */
static void
test_merge_once_oracle_column_one_rep(void **state)
{
	(void)state;
	char dir[PATH_MAX];
	rt_shm_path(dir, sizeof(dir), "mo-sky-frozen");
	assert_true(rt_exists(dir));
	const char *v[] = { "detdrop:35", "skywalking,detdrop:{\"percent\":50}",
		            "skywalking" };
	char *t = once_table(dir, v, 3);
	size_t col = oracle_note_col(t, v[0]);
	for (size_t i = 1; i < 3; i++)
		assert_int_equal(oracle_note_col(t, v[i]), col);
	/* Four cv% columns per variant, none a number. */
	size_t na = 0;
	for (const char *p = t; (p = strstr(p, " n/a ")); p += 4)
		na++;
	assert_int_equal(na, 4 * 3);
	assert_null(strstr(t, "    0.0 "));
	free(t);
}

/* Copy the frozen directory of name to a new one whose frozen.txt has
 * the selection edited by `how`, and replay it: refused, naming both
 * selections. */
static void
expect_tamper_refused(const char *name, int how)
{
	char src[PATH_MAX], dst[PATH_MAX], cmd[3 * PATH_MAX];
	rt_shm_path(src, sizeof(src), "%s", name);
	rt_shm_path(dst, sizeof(dst), "%s-tampered-%d", name, how);
	snprintf(cmd, sizeof(cmd), "cp -r '%s' '%s'", src, dst);
	assert_int_equal(system(cmd), 0);
	ms__frozen f;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms__frozen_read(dst, &f, &eb), 0);
	assert_true(f.ninputs >= 3);
	char file[PATH_MAX + 16];
	snprintf(file, sizeof(file), "%s/frozen.txt", dst);
	char *good = slurp(file), *t;
	char ins[64 * 17 + 16] = "inputs=", deps[64 * 12 + 16] = "depths=";
	char fp[40], id[17];
	if (how == 0) { /* the first two inputs swapped */
		uint64_t x = f.ids[0];
		f.ids[0] = f.ids[1];
		f.ids[1] = x;
		uint32_t y = f.depths[0];
		f.depths[0] = f.depths[1];
		f.depths[1] = y;
	}
	/* how == 1: the last input left out (with its ledgers) */
	size_t n = how == 1 ? f.ninputs - 1 : f.ninputs;
	for (size_t i = 0; i < n; i++) {
		ms_part_id_str(f.ids[i], id);
		snprintf(ins + strlen(ins), sizeof(ins) - strlen(ins), "%s%s",
		         i ? "," : "", id);
		snprintf(deps + strlen(deps), sizeof(deps) - strlen(deps),
		         "%s%" PRIu32, i ? "," : "", f.depths[i]);
	}
	snprintf(fp, sizeof(fp), "selection_fp=%016" PRIx64,
	         ms_pick_fp_add(0, f.ids, n));
	t = edit(good, "inputs=", ins, NULL);
	free(good);
	good = edit(t, "depths=", deps, NULL);
	free(t);
	t = edit(good, "selection_fp=", fp, NULL);
	free(good);
	if (how == 1) {
		ms_part_id_str(f.ids[f.ninputs - 1], id);
		for (int k = 0; k < MS_KIND_COUNT; k++) {
			char key[64];
			snprintf(key, sizeof(key), "ledger.%s.%s=", id,
			         ms_part_kind_name((enum ms_part_kind)k));
			good = edit(t, key, NULL, NULL);
			free(t);
			t = good;
		}
	}
	FILE *w = fopen(file, "w");
	assert_non_null(w);
	fputs(t, w);
	fclose(w);
	free(t);
	/* It reads (it is well-formed), but its selection is not the
	 * picker's. */
	ms__frozen g;
	assert_int_equal(ms__frozen_read(dst, &g, &eb), 0);
	ms__frozen_release(&g);
	ms_merge_once_result res[1];
	assert_int_equal(once_1(dst, "disabled", true, NULL, res, &eb),
	                 MS_ERR_CONFLICT);
	fprintf(stderr, "refused as expected: %s\n", eb.msg);
	assert_non_null(strstr(eb.msg, "merge-once"));
	assert_non_null(strstr(eb.msg, "re-run on the frozen state"));
	char a[17], b[17];
	ms_part_id_str(f.ids[0], a);
	ms_part_id_str(f.ids[1], b);
	assert_non_null(strstr(eb.msg, a));
	assert_non_null(strstr(eb.msg, b));
	ms__frozen_release(&f);
}

/* Lanes: with two fast workers a merge may run while the run waits at a
 * later barrier (when one picker run selects several). Freezing at one
 * barrier after another (the run stepping from each to the next), every
 * freeze's re-pick agrees with the selection, and merge-once re-picks the
 * same on its copy: the first freeze, and the first with parts claimed
 * by another merge or landed since the pick (the smoke day may have
 * none: the claims themselves are tested in test_freeze_contents). */
static void
test_freeze_lanes(void **state)
{
	(void)state;
	rt_run run;
	rt_opts(&run, "fz-lanes", "disabled");
	run.o.serial = false;
	run.o.profile = "cpus=4,mem=4g";
	run.o.envelope = "emulated";
	ms_replay *r = rt_start(&run, "merge=2");
	assert_non_null(r);
	ms_replay_status *st = rt_status_new();
	size_t frozen = 0, with_claims = 0;
	ms_errbuf eb = { { 0 } };
	for (int i = 0; i < 16; i++) {
		assert_true(rt_wait_stop(r, st));
		if (st->state != MS_REPLAY_BREAK)
			break;
		char dir[PATH_MAX];
		rt_path(dir, sizeof(dir), "fz-lanes-%" PRIu64, st->pending.seq);
		int rc = ms_replay_freeze(r, dir, NULL, 0, &eb);
		if (rc)
			fprintf(stderr, "freeze: %s\n", eb.msg);
		assert_int_equal(rc, 0);
		ms__frozen f;
		assert_int_equal(ms__frozen_read(dir, &f, &eb), 0);
		frozen++;
		bool other = f.claimed.n + f.unseen.n > 0;
		if (i == 0 || (other && with_claims++ == 0)) {
			fprintf(stderr,
			        "merge #%" PRIu64 ": %zu claimed, %zu unseen\n",
			        f.seq, f.claimed.n, f.unseen.n);
			ms_merge_once_result res[1];
			rc = once_1(dir, "disabled", false, NULL, res, &eb);
			if (rc)
				fprintf(stderr, "merge-once: %s\n", eb.msg);
			assert_int_equal(rc, 0);
		}
		ms__frozen_release(&f);
		assert_int_equal(
		        ms_replay_command(r, MS_RCMD_STEP_BARRIER, &eb), 0);
	}
	fprintf(stderr, "lanes: %zu freezes, %zu with claims or landed "
	                "merges\n",
	        frozen, with_claims);
	assert_true(frozen >= 2);
	ms_replay_close(r);
	free(st);
}

/* A freeze at the finalize: the run takes its inputs in the order they
 * entered the inventory, merge outputs among raw parts of lower IDs, and
 * the frozen shard keeps that order (its parts are introduced in it), so
 * the finalize rule re-run on it gives the selection (a copy introduced
 * in ID order gave the IDs sorted, and the freeze was refused). */
static void
test_freeze_finalize_order(void **state)
{
	(void)state;
	rt_run run;
	ms_replay *r = open_started(&run, "fz-fin", "alwayskeep", false, false,
	                            "lane=finalize");
	ms_replay_status *st = rt_status_new();
	assert_true(rt_wait_stop(r, st));
	assert_int_equal(st->state, MS_REPLAY_BREAK);
	assert_true(st->pending.finalize);
	char dir[PATH_MAX];
	rt_path(dir, sizeof(dir), "fz-fin");
	ms_errbuf eb = { { 0 } };
	int rc = ms_replay_freeze(r, dir, NULL, 0, &eb);
	if (rc)
		fprintf(stderr, "freeze: %s\n", eb.msg);
	assert_int_equal(rc, 0);
	ms_replay_close(r);
	ms__frozen f;
	assert_int_equal(ms__frozen_read(dir, &f, &eb), 0);
	assert_true(f.finalize);
	size_t down = 0;
	for (size_t i = 1; i < f.ninputs; i++)
		down += f.ids[i] < f.ids[i - 1];
	assert_true(down > 0); /* not in ID order */
	char sdir[PATH_MAX + 8];
	snprintf(sdir, sizeof(sdir), "%s/shard", dir);
	ms_shard *s = NULL;
	ms_shard_opts so = { .dir = sdir };
	assert_int_equal(ms_shard_open(&s, &so, &eb), 0);
	ms_view *v = NULL;
	assert_int_equal(ms_shard_view(s, &v, &eb), 0);
	ms__pick_ids pick;
	assert_int_equal(ms__frozen_repick(&f, v, &pick, &eb), 0);
	assert_int_equal(pick.n, f.ninputs);
	for (size_t i = 0; i < f.ninputs && i < MS_PICKER_PARTS_LIMIT; i++)
		assert_int_equal(pick.ids[i], f.ids[i]);
	ms_view_release(v);
	ms_shard_close(s);
	ms__frozen_release(&f);
	free(st);
}

static void
test_merge_once_tampered(void **state)
{
	(void)state;
	expect_tamper_refused("mo-keep-frozen", 0);
	expect_tamper_refused("mo-keep-frozen", 1);
}

/* A hot selection replayed with the run's own clock under policy
 * selection never reaches Decide (not_executed, merge_grace, 0 calls)
 * and is lossless; matured (the default clock) it samples. */
static void
test_merge_once_run_clock(void **state)
{
	(void)state;
	rt_run run;
	ms_replay *r = open_started(&run, "mo-hot", "skywalking", false, true,
	                            "merge=5");
	ms_replay_status *st = rt_status_new();
	assert_true(rt_wait_stop(r, st));
	assert_int_equal(st->state, MS_REPLAY_BREAK);
	assert_true(st->pending.hot_parts > 0);
	char dir[PATH_MAX];
	rt_shm_path(dir, sizeof(dir), "mo-hot-frozen");
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_replay_freeze(r, dir, NULL, 0, &eb), 0);
	ms_replay_close(r);
	free(st);
	const char *v[] = { "skywalking" };
	ms_merge_once_result res[1];
	ms_merge_once_opts o = once_1_opts(dir, v);
	o.grace_policy = "selection";
	o.run_clock = true;
	assert_int_equal(ms_merge_once(&o, res, &eb), 0);
	assert_int_equal(res[0].klass, MS_SAMPLING_NOT_EXECUTED);
	assert_int_equal(res[0].reason, MS_SREASON_MERGE_GRACE);
	assert_int_equal(res[0].plugin_calls, 0);
	assert_true(ms_ledger_set_equal(&res[0].out_ledger, &res[0].in_ledger));
	assert_true(res[0].oracle_match);
	assert_int_equal(res[0].oracle_later, 0);
	o.run_clock = false;
	assert_int_equal(ms_merge_once(&o, res, &eb), 0);
	assert_int_equal(res[0].klass, MS_SAMPLING_EXECUTED);
	assert_true(res[0].plugin_calls >= 1);
	/* Matured, a hot selection drops traces whose later rows the
	 * freeze does not hold: counted apart, no mismatch. */
	fprintf(stderr, "matured hot selection: %s\n", res[0].oracle_note);
	assert_true(res[0].oracle_match);
}

/* Write amplification is the bytes a merge wrote over its input parts'
 * bytes, whichever staging: reread reads the inputs again, but writes
 * the same output from the same inputs, so both modes give one figure.
 * Before, it was written over read, and reread showed about half of
 * retain's for the same merge. */
static void
test_merge_once_wa_staging(void **state)
{
	(void)state;
	char dir[PATH_MAX];
	rt_shm_path(dir, sizeof(dir), "mo-sky-frozen");
	assert_true(rt_exists(dir));
	const char *v[] = { "skywalking" };
	static const char *const modes[2] = { "retain", "reread" };
	ms_merge_once_result res[2][1];
	ms_errbuf eb = { { 0 } };
	for (int m = 0; m < 2; m++) {
		ms_merge_once_opts o = once_1_opts(dir, v);
		o.staging = modes[m];
		int rc = ms_merge_once(&o, res[m], &eb);
		if (rc)
			fprintf(stderr, "merge-once --staging %s: %s\n",
			        modes[m], eb.msg);
		assert_int_equal(rc, 0);
		fprintf(stderr,
		        "--staging %s: read %.0f written %.0f WA %.4f "
		        "out/in %.4f\n",
		        modes[m], res[m][0].read_median,
		        res[m][0].written_median, res[m][0].wa_median,
		        res[m][0].outin_median);
	}
	const ms_merge_once_result *keep = &res[0][0], *again = &res[1][0];
	assert_true(ms_ledger_set_equal(&keep->out_ledger, &again->out_ledger));
	/* The modes differ where they should: reread reads more. */
	assert_true(again->read_median > keep->read_median);
	assert_true(again->written_median == keep->written_median);
	assert_true(keep->wa_median > 0);
	assert_true(fabs(again->wa_median - keep->wa_median) <
	            1e-9 * keep->wa_median);
	assert_true(fabs(again->outin_median - keep->outin_median) <
	            1e-9 * keep->outin_median);
}

/* A copy of the frozen directory mo-sky-frozen as name, with the first
 * input's ID in id (16 hex digits) and the path of its core part in
 * part. */
static void
damaged_copy(const char *name, char *dst, size_t n, char id[17], char *part,
             size_t pn)
{
	char src[PATH_MAX], cmd[3 * PATH_MAX];
	rt_shm_path(src, sizeof(src), "mo-sky-frozen");
	assert_true(rt_exists(src));
	rt_shm_path(dst, n, "%s", name);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' && cp -r '%s' '%s'", dst, src,
	         dst);
	assert_int_equal(system(cmd), 0);
	ms__frozen f;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms__frozen_read(dst, &f, &eb), 0);
	ms_part_id_str(f.ids[0], id);
	ms__frozen_release(&f);
	snprintf(part, pn, "%s/shard/parts/%s.core", dst, id);
}

/* A frozen directory that is damaged or edited is refused before any
 * merge, naming the file in the frozen directory (not the scratch copy
 * it was read from, which is gone by then) and what was expected; and
 * replaying a sound one leaves it as it was. Before, a corrupt part was
 * named by its scratch copy, an input ledger edited in frozen.txt or a
 * wrong shard_parts went unnoticed by a variant that drops, and the
 * oracle opened the frozen shard itself, whose recovery deleted what
 * was in its tmp/. */
static void
test_merge_once_damaged(void **state)
{
	(void)state;
	char dir[PATH_MAX], id[17], part[PATH_MAX + 64], file[PATH_MAX + 16];
	char key[64];
	ms_merge_once_result res[1];
	ms_errbuf eb = { { 0 } };

	/* One byte of an input's core part flipped. */
	damaged_copy("mo-flipped", dir, sizeof(dir), id, part, sizeof(part));
	int fd = open(part, O_RDWR);
	assert_true(fd >= 0);
	off_t size = lseek(fd, 0, SEEK_END);
	unsigned char b;
	assert_int_equal(pread(fd, &b, 1, size / 2), 1);
	b ^= 0xff;
	assert_int_equal(pwrite(fd, &b, 1, size / 2), 1);
	close(fd);
	assert_true(once_1(dir, "disabled", true, NULL, res, &eb) < 0);
	fprintf(stderr, "flipped: %s\n", eb.msg);
	assert_non_null(strstr(eb.msg, part));
	assert_null(strstr(eb.msg, "mergescope-once-"));

	/* An input's core ledger edited in frozen.txt: refused for a
	 * variant that drops too, naming the key and the part. */
	damaged_copy("mo-ledger", dir, sizeof(dir), id, part, sizeof(part));
	snprintf(file, sizeof(file), "%s/frozen.txt", dir);
	snprintf(key, sizeof(key), "ledger.%s.core=", id);
	char *good = slurp(file);
	char *bad = edit(good, key, NULL, NULL);
	char line[128];
	snprintf(line, sizeof(line), "%s999:%032x\n", key, 0);
	char *t = edit(bad, "format=", "format=3", line);
	FILE *w = fopen(file, "w");
	assert_non_null(w);
	fputs(t, w);
	fclose(w);
	free(good);
	free(bad);
	free(t);
	assert_int_equal(once_1(dir, "skywalking", false, NULL, res, &eb),
	                 MS_ERR_CORRUPT);
	fprintf(stderr, "ledger: %s\n", eb.msg);
	key[strlen(key) - 1] = '\0';
	assert_non_null(strstr(eb.msg, key));
	assert_non_null(strstr(eb.msg, file));
	assert_non_null(strstr(eb.msg, part));

	/* shard_parts that is not the frozen shard's count. */
	damaged_copy("mo-count", dir, sizeof(dir), id, part, sizeof(part));
	snprintf(file, sizeof(file), "%s/frozen.txt", dir);
	good = slurp(file);
	t = edit(good, "shard_parts=", "shard_parts=100000", NULL);
	w = fopen(file, "w");
	assert_non_null(w);
	fputs(t, w);
	fclose(w);
	free(good);
	free(t);
	assert_int_equal(once_1(dir, "detdrop:35", false, NULL, res, &eb),
	                 MS_ERR_CORRUPT);
	fprintf(stderr, "count: %s\n", eb.msg);
	assert_non_null(strstr(eb.msg, "shard_parts"));

	/* A sound frozen directory with a file in its shard's tmp/ (and one
	 * in parts/ the snapshot does not list): the oracle's reading leaves
	 * both. */
	damaged_copy("mo-intact", dir, sizeof(dir), id, part, sizeof(part));
	char stray[PATH_MAX + 32], unlisted[PATH_MAX + 64];
	snprintf(stray, sizeof(stray), "%s/shard/tmp/mine", dir);
	snprintf(unlisted, sizeof(unlisted),
	         "%s/shard/parts/7fffffffffffffff.core", dir);
	assert_int_equal(ms_test_put(stray, "x\n"), 0);
	assert_int_equal(ms_test_put(unlisted, "y\n"), 0);
	assert_int_equal(once_1(dir, "skywalking", false, NULL, res, &eb), 0);
	assert_true(res[0].oracle_checked);
	assert_true(rt_exists(stray));
	assert_true(rt_exists(unlisted));
}

static void
test_merge_once_bad_input(void **state)
{
	(void)state;
	assert_true(frozen_dir[0]);
	ms_merge_once_result res[2];
	ms_errbuf eb = { { 0 } };
	const char *bad[] = { "disabled", "nosuchsampler" };
	ms_merge_once_opts o = {
		.frozen_dir = frozen_dir,
		.variants = bad,
		.nvariants = 2,
		.plugin_dir = MS_PLUGIN_DIR,
	};
	assert_true(ms_merge_once(&o, res, &eb) < 0);
	assert_non_null(strstr(eb.msg, "nosuchsampler"));
	char runs[PATH_MAX + 8];
	snprintf(runs, sizeof(runs), "%s/runs", frozen_dir);
	assert_false(rt_exists(runs));

	char missing[PATH_MAX];
	rt_path(missing, sizeof(missing), "no-such-frozen");
	o.frozen_dir = missing;
	o.nvariants = 1;
	assert_int_equal(ms_merge_once(&o, res, &eb), MS_ERR_NOTFOUND);
	assert_non_null(strstr(eb.msg, missing));

	/* A frozen.txt without its shard. */
	char lone[PATH_MAX], cmd[3 * PATH_MAX];
	rt_path(lone, sizeof(lone), "frozen-no-shard");
	assert_int_equal(mkdir(lone, 0755), 0);
	snprintf(cmd, sizeof(cmd), "cp '%s/frozen.txt' '%s/'", frozen_dir,
	         lone);
	assert_int_equal(system(cmd), 0);
	o.frozen_dir = lone;
	assert_int_equal(ms_merge_once(&o, res, &eb), MS_ERR_NOTFOUND);
	assert_non_null(strstr(eb.msg, "shard"));
}

/* A repetition that cannot write its result file (here /dev/full, a
 * full disk) says which file and why, and exits with the status its
 * parent reads as "result lost" rather than a failed merge. */
static void
test_merge_once_rep_result_unwritten(void **state)
{
	(void)state;
	if (access("/dev/full", W_OK) != 0) {
		fprintf(stderr, "no /dev/full: not tested\n");
		return;
	}
	char missing[PATH_MAX], scratch[PATH_MAX], errp[PATH_MAX];
	rt_path(missing, sizeof(missing), "no-such-frozen-rep");
	rt_path(scratch, sizeof(scratch), "rep-scratch");
	rt_path(errp, sizeof(errp), "rep.err");
	char *argv[] = { "mergescope", "__merge-once-rep", missing, scratch,
		         "disabled", "0", "0", "retain", "trace", "mature",
		         MS_PLUGIN_DIR, "inproc", "", "/dev/full", "0", NULL };
	fflush(stderr);
	int saved = dup(2);
	int fd = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(saved >= 0 && fd >= 0);
	dup2(fd, 2);
	close(fd);
	int rc = ms_merge_once_rep_main(15, argv);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	FILE *f = fopen(errp, "r");
	assert_non_null(f);
	char err[2048] = "";
	err[fread(err, 1, sizeof(err) - 1, f)] = '\0';
	fclose(f);
	fprintf(stderr, "%s", err);
	assert_int_equal(rc, 3);
	assert_non_null(strstr(err, "cannot write /dev/full: "));
	assert_non_null(strstr(err, strerror(ENOSPC)));
}

/* The result file a repetition leaves, as its parent reads it (a stand-in
 * for the program writes it and exits 0): the child's error is taken
 * only with a code that is an error (cut to an int, -4294967296 read as
 * 0, success), and figures only from a whole file, every line ended and
 * every figure and ledger there (a file cut short read as zeros). */
static void
test_merge_once_rep_result_damaged(void **state)
{
	(void)state;
	assert_true(frozen_dir[0]);
	static const struct {
		const char *body;
		int rc;
		const char *msg;
	} cases[] = {
		{ "error=-4294967296 the disk broke\n", MS_ERR_IO,
		  "the disk broke" },
		{ "error=-3\n", MS_ERR_CORRUPT, "without saying why" },
		{ "wall_ns=12\n", MS_ERR_FORMAT, "no cpu_ns line" },
		{ "wall_ns=12", MS_ERR_FORMAT, "cut short" },
	};
	char script[PATH_MAX], body[PATH_MAX], text[3 * PATH_MAX];
	rt_path(script, sizeof(script), "fake-rep.sh");
	rt_path(body, sizeof(body), "fake-rep.body");
	snprintf(text, sizeof(text), "#!/bin/sh\ncat '%s' > \"${13}\"\n", body);
	assert_int_equal(ms_test_put(script, text), 0);
	assert_int_equal(chmod(script, 0755), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_int_equal(ms_test_put(body, cases[i].body), 0);
		const char *v[] = { "disabled" };
		ms_merge_once_opts o = once_1_opts(frozen_dir, v);
		o.self_exe = script;
		ms_merge_once_result res[1];
		ms_errbuf eb = { { 0 } };
		int rc = ms_merge_once(&o, res, &eb);
		fprintf(stderr, "%s: %d %s\n", cases[i].body, rc, eb.msg);
		assert_int_equal(rc, cases[i].rc);
		assert_non_null(strstr(eb.msg, cases[i].msg));
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_freeze_needs_barrier),
		cmocka_unit_test(test_freeze_contents),
		cmocka_unit_test(test_frozen_file_strict),
		cmocka_unit_test(test_frozen_read_out_of_memory),
		cmocka_unit_test(test_merge_once_run_clock),
		cmocka_unit_test(test_merge_once_lossless),
		cmocka_unit_test(test_merge_once_sampling),
		cmocka_unit_test(test_merge_once_oracle_mismatch),
		cmocka_unit_test(test_merge_once_oracle_plugin_changed),
		cmocka_unit_test(test_merge_once_unreconciled_figures),
		cmocka_unit_test(test_merge_once_long_variant_names),
		cmocka_unit_test(test_merge_once_oracle_column_one_rep),
		cmocka_unit_test(test_merge_once_wa_staging),
		cmocka_unit_test(test_merge_once_tampered),
		cmocka_unit_test(test_merge_once_damaged),
		cmocka_unit_test(test_freeze_lanes),
		cmocka_unit_test(test_freeze_finalize_order),
		cmocka_unit_test(test_merge_once_bad_input),
		cmocka_unit_test(test_merge_once_rep_result_unwritten),
		cmocka_unit_test(test_merge_once_rep_result_damaged),
	};
	return cmocka_run_group_tests(tests, rt_setup, rt_teardown);
}
