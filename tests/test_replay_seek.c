/*
 * test_replay_seek.c - seeking back in process (replay/checkpoint.c) on
 * the smoke fixture: a run goes forward, back to a checkpoint by
 * publication, merge and time, and forward again; each re-run reaches
 * the same selection fingerprint, merge count and event rows as the run
 * had there the first time (each merge with the output part ID it had),
 * the event log keeps one row per publication
 * and merge (the rows after a checkpoint removed, a `seek` row per seek),
 * the gates pass at the end with the fingerprint of a run that never went
 * back, also after going back from the end of the run or from its
 * cooldown (stopped at the finalize merge's barrier, or while it runs),
 * a damaged checkpoint is refused while the run goes on, and the
 * checkpoint directory is gone after close.
 */
#include "replay_testlib.h"

#include "ms_pipeline.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <sqlite3.h>

/* Where a run stood at a stop. */
typedef struct point {
	uint64_t fp, selections, merges, pubs;
	int64_t merge_rows, pub_rows;
	uint64_t sampled, bypassed; /* merges that ran or bypassed sampling */
} point;

/* The first column of sql's first row in db: its integer into *n, or a
 * copy of its text into *text (malloc; "" for NULL); each may be NULL. */
static void
query_first(const char *db, const char *sql, int64_t *n, char **text)
{
	sqlite3 *h = NULL;
	sqlite3_stmt *st = NULL;
	assert_int_equal(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL),
	                 SQLITE_OK);
	if (sqlite3_prepare_v2(h, sql, -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW) {
		if (n)
			*n = sqlite3_column_int64(st, 0);
		const unsigned char *t = sqlite3_column_text(st, 0);
		if (text)
			*text = strdup(t ? (const char *)t : "");
	}
	sqlite3_finalize(st);
	sqlite3_close(h);
}

static int64_t
count_rows(const char *db, const char *sql)
{
	int64_t n = -1;
	query_first(db, sql, &n, NULL);
	assert_true(n >= 0);
	return n;
}

static void
point_at(ms_replay *r, const char *db, point *p)
{
	ms_replay_status *st = rt_status_new();
	ms_replay_get_status(r, st);
	ms_engine_stats es;
	ms_engine_get_stats(r->engine, &es);
	p->fp = es.fingerprint;
	p->selections = es.selections;
	p->merges = st->merges_done;
	p->pubs = st->pub_done;
	assert_int_equal(ms_rec_flush(r->rec, NULL), 0);
	p->merge_rows = count_rows(db, "SELECT count(*) FROM merge");
	p->pub_rows = count_rows(db, "SELECT count(*) FROM publication");
	/* The status counts sampled and bypassed merges as the database
	 * does, also after a seek back (the TUI's status line shows them:
	 * counted by the screen from the recent events, they were short
	 * after one). */
	p->sampled = st->merges_sampled;
	p->bypassed = st->merges_bypassed;
	assert_int_equal(p->sampled,
	                 count_rows(db, "SELECT count(*) FROM merge WHERE "
	                                "class = 'executed'"));
	assert_int_equal(p->bypassed,
	                 count_rows(db, "SELECT count(*) FROM merge WHERE "
	                                "reason = 'merge_grace'"));
	free(st);
}

static void
point_equal(const point *a, const point *b)
{
	assert_true(a->fp == b->fp);
	assert_int_equal(a->selections, b->selections);
	assert_int_equal(a->merges, b->merges);
	assert_int_equal(a->pubs, b->pubs);
	assert_int_equal(a->merge_rows, b->merge_rows);
	assert_int_equal(a->pub_rows, b->pub_rows);
	assert_int_equal(a->sampled, b->sampled);
	assert_int_equal(a->bypassed, b->bypassed);
}

/* Where the run stands now is where it stood at `want`. */
static void
same_point(ms_replay *r, const char *db, const point *want)
{
	point now;
	point_at(r, db, &now);
	point_equal(&now, want);
}

/* Stopped, in state `want`, with break_why `why`. */
static void
stopped_at(ms_replay *r, enum ms_replay_state want, const char *why)
{
	ms_replay_status *st = rt_status_new();
	assert_true(rt_wait_stop(r, st));
	if (st->state != want)
		fail_msg("state %s (%s), expected %s",
		         ms_replay_state_name(st->state), st->error,
		         ms_replay_state_name(want));
	if (why)
		assert_string_equal(st->break_why, why);
	free(st);
}

static uint64_t
seeks_of(ms_replay *r)
{
	ms_replay_status st;
	ms_replay_get_status(r, &st);
	return st.seeks;
}

/* Run to publication point k (pub) or merge #k's barrier. */
static void
go(ms_replay *r, bool pub, uint64_t k)
{
	ms_errbuf eb = { { 0 } };
	int rc = pub ? ms_replay_run_to_pub(r, k, &eb)
	             : ms_replay_run_to_merge(r, k, &eb);
	if (rc)
		fail_msg("run to %llu: %s", (unsigned long long)k, eb.msg);
	stopped_at(r, pub ? MS_REPLAY_PAUSED : MS_REPLAY_BREAK, NULL);
}
#define go_pub(r, k) go(r, true, k)

/* go(), then where the run stands there into p. */
static void
go_at(ms_replay *r, const char *db, bool pub, uint64_t k, point *p)
{
	go(r, pub, k);
	point_at(r, db, p);
}

/* Run to logical time t: stopped before the first publication after it
 * or at a barrier at or after it. */
static void
go_time(ms_replay *r, int64_t t)
{
	ms_errbuf eb = { { 0 } };
	if (ms_replay_run_to_time(r, t, &eb))
		fail_msg("run to time %lld: %s", (long long)t, eb.msg);
	ms_replay_status *st = rt_status_new();
	assert_true(rt_wait_stop(r, st));
	assert_true(st->state == MS_REPLAY_PAUSED ||
	            st->state == MS_REPLAY_BREAK);
	free(st);
}
#define go_merge(r, k) go(r, false, k)

static void
seek_ok(int rc, const ms_errbuf *eb, ms_replay *r)
{
	if (rc)
		fail_msg("seek: %s", eb->msg);
	stopped_at(r, MS_REPLAY_PAUSED, "seek");
}

/* On to the end: DONE, every gate passes. */
static void
to_end(ms_replay *r, const char *what)
{
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_replay_command(r, MS_RCMD_RUN, &eb), 0);
	stopped_at(r, MS_REPLAY_DONE, NULL);
	assert_int_equal(rt_print_gates(r, what), 0);
}

/* The one_block_per_trace gate of the finished run r counts each of the
 * day's npub publications once among those taken by their fixture's
 * files hash, however often a seek re-ran them. */
static void
by_hash_once(ms_replay *r, uint64_t npub)
{
	ms_ev_gate g[32];
	size_t n = ms_replay_gates(r, g, 32, NULL);
	char want[96];
	snprintf(want, sizeof(want),
	         ", %llu publications read agreeing with their "
	         "fixture's record",
	         (unsigned long long)npub);
	bool seen = false;
	for (size_t i = 0; i < n && i < 32; i++) {
		if (strcmp(g[i].name, "one_block_per_trace"))
			continue;
		seen = true;
		if (!strstr(g[i].detail, want))
			fprintf(stderr, "want \"%s\" in: %s\n", want,
			        g[i].detail);
		assert_non_null(strstr(g[i].detail, want));
	}
	assert_true(seen);
}

/* The run's final selection fingerprint as recorded. */
static void
end_fp(const char *db, char *fp, size_t n)
{
	ms_evdb *d = NULL;
	ms_errbuf eb;
	ms_ev_run_end end;
	bool has_end = false;
	assert_int_equal(ms_evdb_open(&d, db, &eb), 0);
	assert_int_equal(ms_evdb_run(d, NULL, &end, &has_end, &eb), 0);
	assert_true(has_end);
	assert_string_equal(end.status, "complete");
	snprintf(fp, n, "%s", end.selection_fp);
	ms_evdb_close(d);
}

/* A serial run of variant with checkpoints every every_ns (and
 * breakpoint bp, may be NULL), started paused: stopped before its first
 * publication. */
static ms_replay *
start_paused(rt_run *run, const char *name, const char *variant,
             int64_t every_ns, const char *bp)
{
	rt_opts(run, name, variant);
	run->o.serial = true;
	run->o.start_paused = true;
	run->o.checkpoint_every_ns = every_ns;
	ms_replay *r = rt_start(run, bp);
	assert_non_null(r);
	stopped_at(r, MS_REPLAY_PAUSED, NULL);
	return r;
}

static void
run_straight_in(const char *variant, const char *plugin_dir, char *fp, size_t n)
{
	rt_run run;
	rt_opts(&run, "straight", variant);
	if (plugin_dir)
		run.o.plugin_dir = plugin_dir;
	run.o.serial = true;
	ms_replay *r = rt_start(&run, NULL);
	assert_non_null(r);
	stopped_at(r, MS_REPLAY_DONE, NULL);
	assert_int_equal(rt_print_gates(r, "straight"), 0);
	ms_replay_close(r);
	end_fp(run.db, fp, n);
}
#define run_straight_of(v, fp, n) run_straight_in(v, NULL, fp, n)
#define run_straight(fp, n) run_straight_of("detdrop:35", fp, n)

/* The text of sql's first row in db (every row's, joined by group_concat
 * in the query); malloc. */
static char *
query_text(const char *db, const char *sql)
{
	char *s = NULL;
	query_first(db, sql, NULL, &s);
	assert_non_null(s);
	return s;
}

/* Each merge on record by sequence number: its inputs, its output part's
 * ID and what it made. */
static char *
merge_ids(ms_replay *r, const char *db)
{
	assert_int_equal(ms_rec_flush(r->rec, NULL), 0);
	return query_text(
	        db, "SELECT group_concat(m.seq || ':' || "
	            "(SELECT group_concat(part_id, '+') FROM (SELECT part_id "
	            "FROM merge_input i WHERE i.seq = m.seq ORDER BY idx)) || "
	            "'>' || m.out_id || '/' || m.class || '/' || m.rows_out || "
	            "'/' || m.epoch_after, ' ') FROM (SELECT * FROM merge "
	            "ORDER BY seq) m");
}

/* Each part event on record in order: what happened to which part, why,
 * at which epoch. */
static char *
part_events(const char *db)
{
	return query_text(
	        db, "SELECT group_concat(what || ':' || part_id || ':' || "
	            "core_bytes || ':' || latency_bytes || ':' || "
	            "start_time_bytes || ':' || epoch || ':' || cause || ':' || "
	            "cause_seq, ' ') FROM (SELECT * FROM part_event ORDER BY "
	            "id)");
}

/*
 * Going back and on to the same point again, every merge gets the output
 * part ID it got the first time, and the part events are the same: the
 * shard's part-ID counter goes back with the checkpoint, also when it
 * stood above the snapshot on disk there. That is the case after a
 * durability point (a checkpoint, a commit with a full limbo) followed
 * by an ID that no commit recorded, as a merge that failed or was
 * dropped leaves: both are done here at the stop, where the run takes
 * its checkpoint as it goes on.
 */
static void
test_seek_back_same_part_ids(void **state)
{
	(void)state;
	rt_run run;
	/* Checkpoints only at the first point and at stops. */
	ms_replay *r =
	        start_paused(&run, "ids", "detdrop:35", INT64_MAX / 4, NULL);
	ms_replay_status *st = rt_status_new();
	ms_replay_get_status(r, st);
	uint64_t k0 = st->pub_total / 3, k1 = 2 * st->pub_total / 3;
	go_pub(r, k0);
	uint64_t gap;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_shard_sync(r->shard, &eb), 0);
	assert_int_equal(ms_shard_new_id(r->shard, &gap, &eb), 0);
	go_pub(r, k1);
	char *ids = merge_ids(r, run.db), *evs = part_events(run.db);
	ms_replay_get_status(r, st);
	assert_true(st->merges_done > 2);
	/* A merge after the stop took an ID above the one handed out. */
	char want[32];
	snprintf(want, sizeof(want), ">%llu/", (unsigned long long)gap + 1);
	assert_non_null(strstr(ids, want));

	seek_ok(ms_replay_seek_pub(r, k0, &eb), &eb, r);
	ms_replay_get_status(r, st);
	assert_int_equal(st->pub_done, k0);
	go_pub(r, k1);
	char *ids2 = merge_ids(r, run.db), *evs2 = part_events(run.db);
	if (strcmp(ids2, ids))
		print_message("first: %s\nagain: %s\n", ids, ids2);
	assert_string_equal(ids2, ids);
	assert_string_equal(evs2, evs);
	free(ids);
	free(ids2);
	free(evs);
	free(evs2);
	free(st);
	ms_replay_close(r);
}

static void
test_seek_back_same_fingerprint(void **state)
{
	(void)state;
	char want_fp[32], got_fp[32];
	run_straight(want_fp, sizeof(want_fp));

	rt_run run;
	/* A checkpoint at every point (thinned out). */
	ms_replay *r = start_paused(&run, "seek", "detdrop:35", 1, NULL);
	ms_replay_status *st = rt_status_new();
	ms_replay_get_status(r, st);
	uint64_t ns = st->pub_total, k0 = ns / 3, k1 = 2 * ns / 3;
	assert_true(k0 > 2);
	ms_errbuf eb = { { 0 } };

	/* Forward: merge #3, the time of publication k0 - 2, publication
	 * k0 and k1. */
	point m3, att, at0, at1;
	int64_t t = ms_fixture_slot_at(r->fx, k0 - 2)->pub_ns;
	go_at(r, run.db, false, 3, &m3);
	go_time(r, t);
	point_at(r, run.db, &att);
	go_at(r, run.db, true, k0, &at0);
	go_at(r, run.db, true, k1, &at1);
	print_message("%llu publications; merges: #3 at pub %llu, %llu at "
	              "pub %llu, %llu at pub %llu\n",
	              (unsigned long long)ns, (unsigned long long)m3.pubs,
	              (unsigned long long)at0.merges, (unsigned long long)k0,
	              (unsigned long long)at1.merges, (unsigned long long)k1);
	assert_true(at1.merges > at0.merges && at0.merges >= 3);
	assert_true(at1.bypassed > at0.bypassed);
	ms_replay_get_status(r, st);
	assert_true(st->checkpoints > 2);

	/* Back one third of the day, forward again: the same point. */
	seek_ok(ms_replay_seek_pub(r, k0, &eb), &eb, r);
	assert_int_equal(seeks_of(r), 1);
	ms_replay_get_status(r, st);
	assert_true(st->pub_done <= k0);
	point back; /* at the checkpoint: its counts are the database's */
	point_at(r, run.db, &back);
	assert_true(back.bypassed <= at0.bypassed);
	go_pub(r, k0);
	same_point(r, run.db, &at0);
	go_pub(r, k1);
	same_point(r, run.db, &at1);

	/* Back to merge #3's barrier. */
	seek_ok(ms_replay_seek_merge(r, 3, &eb), &eb, r);
	go_merge(r, 3);
	same_point(r, run.db, &m3);

	/* Back by time, then to that time: where the run stopped there the
	 * first time. */
	seek_ok(ms_replay_seek_time(r, t, &eb), &eb, r);
	ms_replay_get_status(r, st);
	assert_true(st->now < t);
	assert_int_equal(seeks_of(r), 3);
	go_time(r, t);
	same_point(r, run.db, &att);

	/* On to the end: every gate passes, the fingerprint is the one of
	 * the run that never went back. The end is recorded at once (a TUI
	 * left at DONE has a finished database), with the plugin's
	 * counters. */
	to_end(r, "seek");
	by_hash_once(r, ns);
	const char *complete = "SELECT count(*) FROM run WHERE status = "
	                       "'complete'";
	const char *pstats = "SELECT count(*) FROM plugin_stat";
	assert_int_equal(count_rows(run.db, complete), 1);
	int64_t npstat = count_rows(run.db, pstats);
	assert_true(npstat > 0);
	int64_t end_wall = count_rows(run.db, "SELECT wall_ns FROM run");
	/* No checkpoint comes before the first publication. */
	assert_int_equal(ms_replay_seek_pub(r, 0, &eb), MS_ERR_NOTFOUND);
	ms_replay_get_status(r, st);
	assert_int_equal(st->state, MS_REPLAY_DONE);
	/* From the end: back to k0, forward to k1 (the same point), and to
	 * the end again. */
	seek_ok(ms_replay_seek_pub(r, k0, &eb), &eb, r);
	assert_int_equal(seeks_of(r), 4);
	/* Gone back, the run has not ended: its end is taken back. */
	assert_int_equal(count_rows(run.db, complete), 0);
	assert_int_equal(count_rows(run.db, pstats), 0);
	go_pub(r, k1);
	same_point(r, run.db, &at1);
	to_end(r, "seek from the end");
	by_hash_once(r, ns);
	assert_int_equal(count_rows(run.db, complete), 1);
	assert_int_equal(count_rows(run.db, pstats), npstat);
	end_wall = count_rows(run.db, "SELECT wall_ns FROM run");
	char ck[PATH_MAX + 8];
	snprintf(ck, sizeof(ck), "%s.ckpt", ms_replay_work_dir(r));
	assert_true(rt_exists(ck));
	ms_replay_close(r);
	assert_false(rt_exists(ck));
	/* The close did not record the end again: the run's wall is its
	 * own, not the time until the close. */
	assert_int_equal(count_rows(run.db, "SELECT wall_ns FROM run"),
	                 end_wall);
	assert_int_equal(count_rows(run.db, pstats), npstat);
	end_fp(run.db, got_fp, sizeof(got_fp));
	assert_string_equal(got_fp, want_fp);
	/* Its report holds the gates to the log, which agrees with them
	 * after four seeks. */
	ms_evdb *db = NULL;
	unsigned failed = 1;
	assert_int_equal(ms_evdb_open(&db, run.db, &eb), 0);
	assert_int_equal(ms_report_failed_gates(db, &failed, &eb), 0);
	ms_evdb_close(db);
	assert_int_equal(failed, 0);
	/* The log: four seeks, one row per publication and merge, one set
	 * of gates. */
	assert_int_equal(count_rows(run.db, "SELECT count(*) FROM seek"), 4);
	assert_int_equal(count_rows(run.db, "SELECT count(*) FROM gate "
	                                    "GROUP BY name HAVING count(*) > 1"
	                                    " UNION ALL SELECT 0 LIMIT 1"),
	                 0);
	assert_int_equal(count_rows(run.db, "SELECT count(*) FROM publication"),
	                 (int64_t)ns);
	assert_int_equal(count_rows(run.db, "SELECT count(*) FROM merge"),
	                 count_rows(run.db, "SELECT merges_completed FROM run"));
	assert_int_equal(count_rows(run.db, "SELECT count(*) FROM merge_input "
	                                    "WHERE seq NOT IN (SELECT seq "
	                                    "FROM merge)"),
	                 0);
	free(st);
}

/* The entry of dir that sorts first after `after` ("" for the first),
 * not a dot file, into name. */
static void
entry_after(const char *dir, const char *after, char *name, size_t n)
{
	DIR *d = opendir(dir);
	assert_non_null(d);
	struct dirent *de;
	char best[256] = "";
	while ((de = readdir(d)) != NULL)
		if (de->d_name[0] != '.' && strcmp(de->d_name, after) > 0 &&
		    (!best[0] || strcmp(de->d_name, best) < 0))
			snprintf(best, sizeof(best), "%s", de->d_name);
	closedir(d);
	assert_true(best[0] != 0);
	snprintf(name, n, "%s", best);
}

/* A run with a checkpoint at every publication point, stopped at the
 * one in the middle of the day (*k publications done), where it stands
 * in *here. */
static ms_replay *
start_at_half(rt_run *run, const char *name, uint64_t *k, point *here)
{
	ms_replay *r = start_paused(run, name, "disabled", 1, NULL);
	ms_replay_status *st = rt_status_new();
	ms_replay_get_status(r, st);
	*k = st->pub_total / 2;
	free(st);
	go_pub(r, *k);
	point_at(r, run->db, here);
	return r;
}

/* A checkpoint whose state file is damaged, or that lost a part file, is
 * refused with an error naming the file; the run stays where it was, and
 * a seek to a later one still works. */
static void
test_seek_damaged_checkpoint(void **state)
{
	(void)state;
	rt_run run;
	uint64_t k;
	point here;
	ms_replay *r = start_at_half(&run, "seek-bad", &k, &here);
	ms_replay_status *st = rt_status_new();
	char root[PATH_MAX + 8], ck[PATH_MAX + 80], state_file[PATH_MAX + 96];
	snprintf(root, sizeof(root), "%s.ckpt", ms_replay_work_dir(r));
	char first[256], second[256], part[256];
	entry_after(root, "", first, sizeof(first));
	entry_after(root, first, second, sizeof(second));
	snprintf(ck, sizeof(ck), "%s/%s", root, first);
	snprintf(state_file, sizeof(state_file), "%s/state", ck);
	FILE *f = fopen(state_file, "r+b");
	assert_non_null(f);
	assert_int_equal(fseek(f, 20, SEEK_SET), 0);
	assert_int_equal(fputc(0x55, f), 0x55);
	fclose(f);
	ms_errbuf eb = { { 0 } };
	/* Publication 1: only the first checkpoint comes before it. */
	assert_int_equal(ms_replay_seek_pub(r, 1, &eb), MS_ERR_CORRUPT);
	assert_non_null(strstr(eb.msg, state_file));
	ms_replay_get_status(r, st);
	assert_int_equal(st->state, MS_REPLAY_PAUSED);
	assert_string_equal(st->break_why, "seek failed");
	assert_int_equal(st->seeks, 0);
	same_point(r, run.db, &here);
	/* The second checkpoint lost a part file: refused before anything
	 * moves too, naming it. */
	char parts[PATH_MAX + 200], gone[PATH_MAX + 500];
	snprintf(parts, sizeof(parts), "%s/%s/parts", root, second);
	entry_after(parts, "", part, sizeof(part));
	snprintf(gone, sizeof(gone), "%s/%s", parts, part);
	assert_int_equal(unlink(gone), 0);
	uint64_t at2 = strtoull(second, NULL, 10);
	assert_int_equal(ms_replay_seek_pub(r, at2, &eb), MS_ERR_NOTFOUND);
	assert_non_null(strstr(eb.msg, gone));
	ms_replay_get_status(r, st);
	assert_int_equal(st->state, MS_REPLAY_PAUSED);
	assert_int_equal(st->seeks, 0);
	same_point(r, run.db, &here);
	/* A later checkpoint is fine. */
	seek_ok(ms_replay_seek_pub(r, k - 1, &eb), &eb, r);
	go_pub(r, k);
	same_point(r, run.db, &here);
	to_end(r, "seek-bad");
	ms_replay_close(r);
	free(st);
}

/* A restore that committed but could not remove an entry of the shard
 * it should have (a tree in tmp/ deeper than removal descends) is a seek
 * all the same: the run stops at the checkpoint, the status's checkpoint
 * note says what was left (until a restore leaves nothing), and the
 * re-run reaches the point it went back from as the first pass did. */
static void
test_seek_leftover_after_restore(void **state)
{
	(void)state;
	rt_run run;
	uint64_t k;
	point here;
	ms_replay *r = start_at_half(&run, "seek-left", &k, &here);
	ms_replay_status *st = rt_status_new();
	char deep[PATH_MAX + 16];
	snprintf(deep, sizeof(deep), "%s/tmp/deep", ms_replay_work_dir(r));
	assert_int_equal(ms_test_deep_tree(deep, MS_FS_MAX_DEPTH + 2, true), 0);
	ms_errbuf eb = { { 0 } };
	seek_ok(ms_replay_seek_pub(r, k - 1, &eb), &eb, r);
	ms_replay_get_status(r, st);
	assert_int_equal(st->seeks, 1);
	assert_non_null(strstr(st->checkpoint_note, "could not be removed"));
	assert_int_equal(ms_test_deep_tree(deep, MS_FS_MAX_DEPTH + 2, false),
	                 0);
	go_pub(r, k);
	same_point(r, run.db, &here);
	/* A restore that leaves nothing clears the note. */
	seek_ok(ms_replay_seek_pub(r, k - 1, &eb), &eb, r);
	ms_replay_get_status(r, st);
	assert_string_equal(st->checkpoint_note, "");
	go_pub(r, k);
	same_point(r, run.db, &here);
	to_end(r, "seek-left");
	ms_replay_close(r);
	free(st);
}

/* Where the run stops, a checkpoint is kept (taken as it goes on): with
 * no other checkpoint near, going back to a publication point the run
 * stopped at restores exactly that point, and going back to a merge
 * after a breakpoint's barrier starts from the point after it. */
static void
test_checkpoints_at_stops(void **state)
{
	(void)state;
	rt_run run;
	/* Just one checkpoint by the interval. */
	ms_replay *r = start_paused(&run, "seek-stops", "disabled",
	                            48 * 3600 * 1000000000LL, "merge=2");
	ms_replay_status *st = rt_status_new();
	ms_errbuf eb = { { 0 } };
	/* The breakpoint at #2's barrier, then on to a publication point. */
	assert_int_equal(ms_replay_command(r, MS_RCMD_RUN, &eb), 0);
	stopped_at(r, MS_REPLAY_BREAK, "merge=2");
	ms_replay_get_status(r, st);
	uint64_t k = st->pub_done + 5;
	go_pub(r, k);
	point here;
	point_at(r, run.db, &here);
	go_pub(r, k + 5);
	ms_replay_get_status(r, st);
	/* The first point, the one after the barrier stop, and k. */
	assert_int_equal(st->checkpoints, 3);
	seek_ok(ms_replay_seek_pub(r, k, &eb), &eb, r);
	ms_replay_get_status(r, st);
	assert_int_equal(st->pub_done, k);
	same_point(r, run.db, &here);
	/* Back before #3: from the point after #2's barrier. */
	seek_ok(ms_replay_seek_merge(r, 3, &eb), &eb, r);
	assert_true(count_rows(run.db, "SELECT to_merge FROM seek ORDER BY "
	                               "id DESC LIMIT 1") >= 2);
	to_end(r, "seek-stops");
	ms_replay_close(r);
	free(st);
}

/* Back by time to a checkpoint that is the last point before the time
 * (one taken where a `g` to a time stopped), then on to that time: the
 * run stays at the checkpoint, before the publication past the time, as
 * the first pass did, instead of stopping one publication after it. */
static void
test_seek_time_to_last_point_before(void **state)
{
	(void)state;
	rt_run run;
	ms_replay *r = start_paused(&run, "seek-near", "disabled",
	                            48 * 3600 * 1000000000LL, NULL);
	ms_errbuf eb = { { 0 } };
	const ms_fixture_slot *prev = ms_fixture_slot_at(r->fx, 9);
	const ms_fixture_slot *next = ms_fixture_slot_at(r->fx, 10);
	int64_t t1 = next->pub_ns - 2000000000LL;
	int64_t t2 = next->pub_ns - 1000000000LL;
	assert_true(t1 > prev->pub_ns);
	go_time(r, t1);
	point at;
	point_at(r, run.db, &at);
	assert_int_equal(at.pubs, 10);
	go_pub(r, 15);
	seek_ok(ms_replay_seek_time(r, t2, &eb), &eb, r);
	go_time(r, t2);
	ms_replay_status *st = rt_status_new();
	ms_replay_get_status(r, st);
	assert_int_equal(st->state, MS_REPLAY_PAUSED);
	assert_int_equal(st->now, prev->pub_ns);
	same_point(r, run.db, &at);
	to_end(r, "seek-near");
	ms_replay_close(r);
	free(st);
}

/* Checkpoints must not take the room the day's merges need: with more
 * room asked for than the file system has, none is kept, the status says
 * why, going back finds none (the front end restarts instead) and the
 * run ends with the fingerprint of a run without them. Then with room:
 * they are kept. */
static void
test_checkpoints_need_room(void **state)
{
	(void)state;
	char want_fp[32], got_fp[32];
	run_straight(want_fp, sizeof(want_fp));
	rt_run run;
	rt_opts(&run, "seek-room", "detdrop:35");
	run.o.serial = true;
	run.o.start_paused = true;
	run.o.checkpoint_every_ns = 1;
	run.o.checkpoint_room_bytes = UINT64_MAX;
	ms_replay *r = rt_start(&run, NULL);
	assert_non_null(r);
	stopped_at(r, MS_REPLAY_PAUSED, NULL);
	ms_replay_status *st = rt_status_new();
	ms_errbuf eb = { { 0 } };
	go_merge(r, 3);
	ms_replay_get_status(r, st);
	assert_int_equal(st->checkpoints, 0);
	assert_non_null(strstr(st->checkpoint_note, "checkpoints thinned to 0"));
	assert_non_null(strstr(st->checkpoint_note, "MiB free"));
	assert_int_equal(ms_replay_seek_merge(r, 2, &eb), MS_ERR_NOTFOUND);
	to_end(r, "seek-room");
	ms_replay_close(r);
	end_fp(run.db, got_fp, sizeof(got_fp));
	assert_string_equal(got_fp, want_fp);

	r = start_paused(&run, "seek-room2", "detdrop:35", 1, NULL);
	go_merge(r, 3);
	ms_replay_get_status(r, st);
	assert_true(st->checkpoints > 0);
	assert_string_equal(st->checkpoint_note, "");
	to_end(r, "seek-room2");
	ms_replay_close(r);
	free(st);
}

/* On (RUN) from stop to stop at `sampling` barriers until the one of the
 * finalize merge (the phase says so), as `make run` stops there. */
static void
to_finalize_barrier(ms_replay *r, ms_replay_status *st)
{
	ms_errbuf eb = { { 0 } };
	for (int i = 0; i < 10000; i++) {
		ms_replay_get_status(r, st);
		if (st->state == MS_REPLAY_BREAK &&
		    st->phase == MS_RPHASE_FINALIZE)
			return;
		assert_int_equal(ms_replay_command(r, MS_RCMD_RUN, &eb), 0);
		stopped_at(r, MS_REPLAY_BREAK, "sampling");
	}
	fail_msg("never stopped at the finalize's barrier");
}

/* No stop again before the end. */
static void
breaks_off(ms_replay *r)
{
	ms_errbuf eb = { { 0 } };
	ms_breakpoint bps[8];
	size_t nb = ms_replay_breaks(r, bps, 8);
	for (size_t i = 0; i < nb && i < 8; i++)
		assert_int_equal(
		        ms_replay_break_enable(r, bps[i].id, false, &eb), 0);
}

/* Back to a point (the TUI's g behind, [ and {: a seek, then a run to the
 * point) with the user's breakpoints between the checkpoint and the
 * point: the re-run goes to the point, as the first pass was there, and
 * does not stop at them (`[` from #7 landed on a merge=5 breakpoint, two
 * barriers back). A time breakpoint the re-run went by counts as passed
 * (it stops once); from a point before them, both stop the run again. */
static void
test_seek_rerun_passes_breakpoints(void **state)
{
	(void)state;
	rt_run run;
	/* Just one checkpoint by the interval: the first point. */
	ms_replay *r = start_paused(&run, "seek-bps", "disabled",
	                            48 * 3600 * 1000000000LL, NULL);
	ms_errbuf eb = { { 0 } };
	point m7, m6;
	go_at(r, run.db, false, 6, &m6);
	go_at(r, run.db, false, 7, &m7);
	/* A time breakpoint at #4's time: the first barrier at or after it
	 * is #4's. */
	ms_replay_status *st = rt_status_new();
	int64_t t4 = (int64_t)count_rows(run.db, "SELECT logical_ns FROM "
	                                         "merge WHERE seq = 4");
	ms_replay_get_status(r, st);
	char spec[64];
	int64_t s4 = (t4 - st->day_start) / 1000000000LL;
	snprintf(spec, sizeof(spec), "time=%02lld:%02lld:%02lld",
	         (long long)(s4 / 3600), (long long)(s4 % 3600 / 60),
	         (long long)(s4 % 60));
	int bm;
	assert_int_equal(ms_replay_break_add(r, "merge=5", &bm, &eb), 0);
	assert_int_equal(ms_replay_break_add(r, spec, NULL, &eb), 0);
	/* One barrier back, from #7: #6, not merge=5 or the time. */
	seek_ok(ms_replay_seek_merge(r, 6, &eb), &eb, r);
	go_merge(r, 6);
	same_point(r, run.db, &m6);
	ms_replay_get_status(r, st);
	assert_string_equal(st->break_why, "go #6");
	/* On from #6 to #7, a go target: the time breakpoint, which the
	 * re-run went by, does not take that stop (it stops once) ... */
	go_merge(r, 7);
	same_point(r, run.db, &m7);
	ms_replay_get_status(r, st);
	assert_string_equal(st->break_why, "go #7");
	/* ... and back to #3, before both: going on from there, each stops
	 * the run again where it did the first time. */
	seek_ok(ms_replay_seek_merge(r, 3, &eb), &eb, r);
	go_merge(r, 3);
	assert_int_equal(ms_replay_command(r, MS_RCMD_RUN, &eb), 0);
	stopped_at(r, MS_REPLAY_BREAK, spec);
	assert_int_equal(ms_replay_command(r, MS_RCMD_RUN, &eb), 0);
	stopped_at(r, MS_REPLAY_BREAK, "merge=5");
	assert_int_equal(ms_replay_break_delete(r, bm, &eb), 0);
	breaks_off(r);
	to_end(r, "seek-bps");
	ms_replay_close(r);
	free(st);
}

/* Going back without a checkpoint: a new replay runs the day again to the
 * point (ms_replay_rerun_next, then the run-to, then the start, as the
 * TUI's restart does): it goes by the breakpoints on the way as a seek's
 * re-run does, and they stop the run after it. */
static void
test_rerun_new_replay_passes_breakpoints(void **state)
{
	(void)state;
	rt_run run;
	rt_opts(&run, "rerun-bps", "disabled");
	run.o.serial = true;
	ms_replay *r = NULL;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms__replay_open_test(&r, &run.o, &run.t, &eb), 0);
	int bm;
	assert_int_equal(ms_replay_break_add(r, "merge=5", &bm, &eb), 0);
	ms_replay_rerun_next(r);
	assert_int_equal(ms_replay_run_to_merge(r, 6, &eb), 0);
	assert_int_equal(ms_replay_start(r, &eb), 0);
	stopped_at(r, MS_REPLAY_BREAK, "go #6");
	ms_breakpoint bps[4];
	assert_int_equal(ms_replay_breaks(r, bps, 4), 1);
	assert_int_equal(bps[0].hits, 0);
	/* Another command first: the next run-to is a plain one. */
	ms_replay_rerun_next(r);
	assert_int_equal(ms_replay_command(r, MS_RCMD_STEP, &eb), 0);
	ms_replay_status *st = rt_status_new();
	assert_true(rt_wait_stop(r, st));
	assert_int_equal(ms_replay_break_add(r, "merge=8", NULL, &eb), 0);
	assert_int_equal(ms_replay_run_to_merge(r, 9, &eb), 0);
	stopped_at(r, MS_REPLAY_BREAK, "merge=8");
	breaks_off(r);
	to_end(r, "rerun-bps");
	ms_replay_close(r);
	free(st);
}

/* A run-to target the run has gone by as it is set (the TUI saw the run
 * before it; the run went on while the key was handled) is refused with
 * MS_REPLAY_PASSED, nothing set and the run left as it was, for the
 * caller to go back to it: the target was added and never stopped the
 * run, which ran on past it, to its end. Here the run stands at merge
 * #5's barrier: #5 itself (held at its barrier), #3, the time of that
 * dispatch and the publication point before the last publication are
 * all behind it; one held at the publication point a target stops at is
 * not; after a seek back the targets after the checkpoint are ahead
 * again. */
static void
test_run_to_passed_target(void **state)
{
	(void)state;
	rt_run run;
	ms_replay *r =
	        start_paused(&run, "passed", "detdrop:35",
	                     MS_REPLAY_CHECKPOINT_EVERY_DEFAULT_NS, NULL);
	ms_errbuf eb = { { 0 } };
	ms_replay_status *st = rt_status_new();
	go_merge(r, 5);
	ms_replay_get_status(r, st);
	assert_true(st->pub_done > 0);
	assert_int_equal(ms_replay_run_to_merge(r, 5, &eb), MS_REPLAY_PASSED);
	assert_int_equal(ms_replay_run_to_merge(r, 3, &eb), MS_REPLAY_PASSED);
	assert_int_equal(ms_replay_run_to_time(r, st->pending.now_ns, &eb),
	                 MS_REPLAY_PASSED);
	assert_int_equal(ms_replay_run_to_pub(r, st->pub_done - 1, &eb),
	                 MS_REPLAY_PASSED);
	ms_breakpoint bps[4];
	assert_int_equal(ms_replay_breaks(r, bps, 4), 0);
	stopped_at(r, MS_REPLAY_BREAK, "go #5");
	ms_replay_get_status(r, st);
	assert_int_equal(st->pending.seq, 5);
	/* Ahead: set, and the run stops there. */
	go_merge(r, 6);
	stopped_at(r, MS_REPLAY_BREAK, "go #6");
	/* Held at the point before publication k: a target there stays. */
	ms_replay_get_status(r, st);
	uint64_t k = st->pub_done + 2;
	go_pub(r, k);
	assert_int_equal(ms_replay_run_to_pub(r, k, &eb), 0);
	stopped_at(r, MS_REPLAY_PAUSED, NULL);
	ms_replay_get_status(r, st);
	assert_int_equal(st->pub_done, k);
	/* Back before #3: ahead again. */
	seek_ok(ms_replay_seek_merge(r, 3, &eb), &eb, r);
	go_merge(r, 3);
	stopped_at(r, MS_REPLAY_BREAK, "go #3");
	to_end(r, "passed");
	ms_replay_close(r);
	free(st);
}

static void
touch(const char *path)
{
	int fd = open(path, O_CREAT | O_WRONLY, 0644);
	assert_true(fd >= 0);
	close(fd);
}

/* On to the end after `seeks` seeks back, closed: the fingerprint of a
 * run that never went back (want_fp), every gate passing, and one
 * forward history in the log (each phase and the finalize once, a row
 * per merge). */
static void
end_as_straight(ms_replay *r, const char *db, const char *want_fp,
                int64_t seeks, const char *what)
{
	char got_fp[32];
	to_end(r, what);
	ms_replay_close(r);
	end_fp(db, got_fp, sizeof(got_fp));
	assert_string_equal(got_fp, want_fp);
	assert_int_equal(count_rows(db, "SELECT count(*) FROM seek"), seeks);
	/* primary, cooldown and staging (the time before primary): the
	 * phase is the table's key */
	assert_int_equal(count_rows(db, "SELECT count(*) FROM phase"), 3);
	assert_int_equal(count_rows(db, "SELECT count(*) FROM merge "
	                                "WHERE lane = 'finalize'"),
	                 1);
	assert_int_equal(count_rows(db, "SELECT count(*) FROM merge"),
	                 count_rows(db, "SELECT merges_completed FROM run"));
}

/* The rows of the cooldown are gone after a seek back from it. */
static void
no_cooldown_rows(const char *db)
{
	assert_int_equal(count_rows(db, "SELECT count(*) FROM phase"), 0);
	assert_int_equal(count_rows(db, "SELECT count(*) FROM merge "
	                                "WHERE lane = 'finalize'"),
	                 0);
}

/*
 * Stopped at the finalize merge's dispatch barrier (a `sampling`
 * breakpoint, in the cooldown): back by merge and by publication, each
 * in place (no new database): the phase is primary again, the cooldown's
 * rows are gone, and the re-run reaches the same points as the first
 * pass, the finalize's barrier included; on to the end, the fingerprint
 * of a run that never went back and every gate passes. While held at the
 * barrier the merge has not run: its time in flight is 0.
 */
static void
seek_from_finalize(const char *variant)
{
	char want_fp[32];
	run_straight_of(variant, want_fp, sizeof(want_fp));
	rt_run run;
	ms_replay *r = start_paused(&run, "seek-fin", variant, 1, "sampling");
	ms_replay_status *st = rt_status_new();
	ms_errbuf eb = { { 0 } };
	ms_replay_get_status(r, st);
	uint64_t ns = st->pub_total, k0 = ns / 2;
	point m3, at0, fin;
	/* The first pass: merge #3's barrier (or a sampling one before
	 * it), publication k0, the finalize's barrier. */
	go_at(r, run.db, false, 3, &m3);
	go_at(r, run.db, true, k0, &at0);
	to_finalize_barrier(r, st);
	point_at(r, run.db, &fin);
	assert_int_equal(fin.pubs, ns);
	uint64_t fseq = fin.selections;
	assert_int_equal(st->inflight_seq, fseq);
	/* Held, not running, however long it sits there. */
	struct timespec pause = { 0, 50 * 1000000L };
	nanosleep(&pause, NULL);
	ms_replay_get_status(r, st);
	assert_int_equal(st->inflight_seq, fseq);
	assert_int_equal(st->inflight_wall_ns, 0);

	/* Back by merge, from the barrier. */
	seek_ok(ms_replay_seek_merge(r, 3, &eb), &eb, r);
	assert_int_equal(seeks_of(r), 1);
	ms_replay_get_status(r, st);
	assert_int_equal(st->phase, MS_RPHASE_PRIMARY);
	assert_true(st->pub_done < k0);
	assert_int_equal(st->inflight, 0);
	no_cooldown_rows(run.db);
	go_merge(r, 3);
	same_point(r, run.db, &m3);
	go_pub(r, k0);
	same_point(r, run.db, &at0);
	to_finalize_barrier(r, st);
	same_point(r, run.db, &fin);

	/* Back by publication, from the barrier again. */
	seek_ok(ms_replay_seek_pub(r, k0, &eb), &eb, r);
	assert_int_equal(seeks_of(r), 2);
	ms_replay_get_status(r, st);
	assert_int_equal(st->phase, MS_RPHASE_PRIMARY);
	assert_true(st->pub_done <= k0);
	no_cooldown_rows(run.db);
	go_pub(r, k0);
	same_point(r, run.db, &at0);
	to_finalize_barrier(r, st);
	same_point(r, run.db, &fin);

	end_as_straight(r, run.db, want_fp, 2, "seek-fin");
	assert_int_equal(count_rows(run.db, "SELECT count(*) FROM publication"),
	                 (int64_t)ns);
	free(st);
}

static void
test_seek_from_finalize_barrier(void **state)
{
	(void)state;
	seek_from_finalize("detdrop:35");
}

static void
test_seek_from_finalize_barrier_skywalking(void **state)
{
	(void)state;
	seek_from_finalize("skywalking");
}

/* A seek back asked for just after the finalize is released from its
 * barrier: wherever the run is then (the merge running, done, the gates
 * running, or DONE), it goes back in place and ends as a run that never
 * went back. */
static void
test_seek_after_finalize_released(void **state)
{
	(void)state;
	char want_fp[32];
	run_straight(want_fp, sizeof(want_fp));
	rt_run run;
	ms_replay *r =
	        start_paused(&run, "seek-fin2", "detdrop:35", 1, "sampling");
	ms_replay_status *st = rt_status_new();
	ms_errbuf eb = { { 0 } };
	point m3;
	go_at(r, run.db, false, 3, &m3);
	to_finalize_barrier(r, st);
	breaks_off(r);
	assert_int_equal(ms_replay_command(r, MS_RCMD_RUN, &eb), 0);
	seek_ok(ms_replay_seek_merge(r, 3, &eb), &eb, r);
	ms_replay_get_status(r, st);
	assert_int_equal(st->phase, MS_RPHASE_PRIMARY);
	assert_int_equal(seeks_of(r), 1);
	go_merge(r, 3);
	same_point(r, run.db, &m3);
	end_as_straight(r, run.db, want_fp, 1, "seek-fin2");
	free(st);
}

/* Stopped at the cooldown's publication point (a run to a time just past
 * the day's end), then back by publication: in place, the cooldown's
 * rows gone, the same points on the way forward, the same end. */
static void
test_seek_from_cooldown_point(void **state)
{
	(void)state;
	char want_fp[32];
	run_straight(want_fp, sizeof(want_fp));
	rt_run run;
	ms_replay *r = start_paused(&run, "seek-cool", "detdrop:35", 1, NULL);
	ms_replay_status *st = rt_status_new();
	ms_errbuf eb = { { 0 } };
	ms_replay_get_status(r, st);
	uint64_t k0 = st->pub_total / 2;
	int64_t past_end = r->info->day_end_ns + 1;
	point at0, cool;
	go_at(r, run.db, true, k0, &at0);
	go_time(r, past_end);
	ms_replay_get_status(r, st);
	assert_int_equal(st->state, MS_REPLAY_PAUSED);
	assert_int_equal(st->phase, MS_RPHASE_COOLDOWN);
	point_at(r, run.db, &cool);
	/* primary and staging (written with it) */
	assert_int_equal(count_rows(run.db, "SELECT count(*) FROM phase"), 2);
	seek_ok(ms_replay_seek_pub(r, k0, &eb), &eb, r);
	ms_replay_get_status(r, st);
	assert_int_equal(st->phase, MS_RPHASE_PRIMARY);
	no_cooldown_rows(run.db);
	go_pub(r, k0);
	same_point(r, run.db, &at0);
	go_time(r, past_end);
	ms_replay_get_status(r, st);
	assert_int_equal(st->phase, MS_RPHASE_COOLDOWN);
	same_point(r, run.db, &cool);
	end_as_straight(r, run.db, want_fp, 1, "seek-cool");
	free(st);
}

/* A seek back on its own thread (it returns once the run went back). */
typedef struct seek_job {
	ms_replay *r;
	uint64_t seq;
	int rc;
	ms_errbuf eb;
} seek_job;

static void *
seek_main(void *arg)
{
	seek_job *j = arg;
	j->rc = ms_replay_seek_merge(j->r, j->seq, &j->eb);
	return NULL;
}

/* A tp_slow chain spec with config `cfg` whose "@" is followed by the
 * gate file `name` (made here: gated calls go on at once). */
static void
slow_spec(char *gate, size_t gn, const char *name, const char *cfg,
          char *spec, size_t sn)
{
	rt_path(gate, gn, "%s", name);
	snprintf(spec, sn, "tp_slow:{\"slow\":\"%s@%s\"}", cfg, gate);
	touch(gate);
}

/* A serial run of spec (test plugins), started paused, a checkpoint at
 * every point, Decide given a minute. */
static void
slow_opts(rt_run *run, const char *name, const char *spec)
{
	rt_opts(run, name, spec);
	run->o.plugin_dir = MS_TEST_PLUGIN_DIR;
	run->o.serial = true;
	run->o.start_paused = true;
	run->o.checkpoint_every_ns = 1;
	run->o.decide_timeout_ns = 60 * 1000000000LL;
}

/* A seek back asked for while the finalize merge runs (held inside its
 * Decide call by tp_slow until a gate file exists): the merge finishes
 * (a running merge is not stopped), then the run goes back in place and
 * ends as a run that never went back. The merge's time in flight counts
 * from its release (not from its dispatch, before the stop at its
 * barrier). */
static void
test_seek_while_finalize_runs(void **state)
{
	(void)state;
	char gate[PATH_MAX], spec[PATH_MAX + 64];
	slow_spec(gate, sizeof(gate), "seek-gate", "1/1>0", spec, sizeof(spec));
	char want_fp[32];
	run_straight_in(spec, MS_TEST_PLUGIN_DIR, want_fp, sizeof(want_fp));
	rt_run run;
	slow_opts(&run, "seek-run", spec);
	run.o.wait_timeout_ns = 120 * 1000000000LL;
	ms_replay *r = rt_start(&run, "sampling");
	assert_non_null(r);
	stopped_at(r, MS_REPLAY_PAUSED, NULL);
	ms_replay_status *st = rt_status_new();
	ms_errbuf eb = { { 0 } };
	point m3;
	go_at(r, run.db, false, 3, &m3);
	to_finalize_barrier(r, st);
	uint64_t fseq = st->inflight_seq;
	assert_int_equal(st->inflight_wall_ns, 0);
	/* Released without its gate: it runs, held in Decide. */
	assert_int_equal(unlink(gate), 0);
	breaks_off(r);
	int64_t released = ms_mono_ns();
	assert_int_equal(ms_replay_command(r, MS_RCMD_RUN, &eb), 0);
	struct timespec tick = { 0, 10 * 1000000L };
	for (int i = 0; i < 6000 && !ms_pipeline_staged_live(r->pipe); i++)
		nanosleep(&tick, NULL);
	assert_true(ms_pipeline_staged_live(r->pipe) > 0);
	ms_replay_get_status(r, st);
	assert_int_equal(st->state, MS_REPLAY_RUNNING);
	assert_int_equal(st->phase, MS_RPHASE_FINALIZE);
	assert_int_equal(st->inflight_seq, fseq);
	assert_true(st->inflight_wall_ns > 0);
	/* Released after `released`: no longer than that. */
	assert_true(st->inflight_wall_ns <= ms_mono_ns() - released);

	seek_job j = { .r = r, .seq = 3 };
	pthread_t th;
	assert_int_equal(pthread_create(&th, NULL, seek_main, &j), 0);
	/* The merge still runs: the run has not gone back. */
	nanosleep(&tick, NULL);
	ms_replay_get_status(r, st);
	assert_int_equal(st->phase, MS_RPHASE_FINALIZE);
	assert_int_equal(st->seeks, 0);
	touch(gate);
	pthread_join(th, NULL);
	seek_ok(j.rc, &j.eb, r);
	ms_replay_get_status(r, st);
	assert_int_equal(st->phase, MS_RPHASE_PRIMARY);
	no_cooldown_rows(run.db);
	go_merge(r, 3);
	same_point(r, run.db, &m3);
	end_as_straight(r, run.db, want_fp, 1, "seek-run");
	unlink(gate);
	free(st);
}

/* A link's figures over the merges on record, from the event log: calls,
 * Decide time, slowest call (as `mergescope report` sums them). */
static void
link_rows(const char *db, int64_t *calls, int64_t *total, int64_t *max)
{
	*calls = count_rows(db, "SELECT coalesce(sum(calls), 0) FROM "
	                        "merge_link WHERE idx = 0");
	*total = count_rows(db, "SELECT coalesce(sum(total_ns), 0) FROM "
	                        "merge_link WHERE idx = 0");
	*max = count_rows(db, "SELECT coalesce(max(max_ns), 0) FROM "
	                      "merge_link WHERE idx = 0");
}

/* The status's figures of link 0 are the event log's, and its Decide
 * time is never below its slowest call. */
static void
link_figures_as_recorded(ms_replay *r, const char *db)
{
	ms_replay_status *st = rt_status_new();
	ms_replay_get_status(r, st);
	assert_true(st->nlinks >= 1);
	const ms_link_stats *l = &st->links[0];
	int64_t calls, total, max;
	assert_int_equal(ms_rec_flush(r->rec, NULL), 0);
	link_rows(db, &calls, &total, &max);
	print_message("status: %llu calls, %llu ns, max %llu ns; log: %lld "
	              "calls, %lld ns, max %lld ns\n",
	              (unsigned long long)l->calls,
	              (unsigned long long)l->total_ns,
	              (unsigned long long)l->max_ns, (long long)calls,
	              (long long)total, (long long)max);
	assert_true(total >= max);
	assert_true(l->total_ns >= l->max_ns);
	assert_int_equal(l->calls, calls);
	assert_int_equal(l->total_ns, total);
	assert_int_equal(l->max_ns, max);
	free(st);
}

/* The run's first Decide call is slow (300 ms, tp_slow), the later ones
 * fast. After the run went back before the merge that made it (twice to
 * the same checkpoint; from the end, then to an older checkpoint) and
 * ran that merge again, fast, the link's figures are those of the merges
 * on record, on the status as in the event log: their calls and time, and a
 * slowest call no longer than their time (the log had 300 ms as the
 * slowest of calls that took a few ms in all, the status the calls of
 * both passes). */
static void
test_seek_link_figures(void **state)
{
	(void)state;
	char gate[PATH_MAX], spec[PATH_MAX + 64];
	slow_spec(gate, sizeof(gate), "seek-link-gate", "300/1>1", spec,
	          sizeof(spec));
	rt_run run;
	slow_opts(&run, "seek-link", spec);
	ms_replay *r = rt_start(&run, NULL);
	assert_non_null(r);
	stopped_at(r, MS_REPLAY_PAUSED, NULL);
	to_end(r, "seek-link");
	link_figures_as_recorded(r, run.db);
	int64_t slow = count_rows(run.db, "SELECT max(max_ns) FROM merge_link "
	                                  "WHERE idx = 0");
	assert_true(slow >= 300 * 1000000LL);
	uint64_t first = (uint64_t)count_rows(
	        run.db, "SELECT min(seq) FROM merge_link WHERE idx = 0 AND "
	                "calls > 0");
	ms_errbuf eb = { { 0 } };
	seek_ok(ms_replay_seek_merge(r, first, &eb), &eb, r);
	link_figures_as_recorded(r, run.db);
	/* Back to the same checkpoint again before going on: the calls
	 * that left the record with the first seek are not counted out a
	 * second time (the status read 0 calls and a Decide time of
	 * 2^64 ns less its calls', plugin_health failed at the end). */
	seek_ok(ms_replay_seek_merge(r, first, &eb), &eb, r);
	assert_int_equal(seeks_of(r), 2);
	link_figures_as_recorded(r, run.db);
	to_end(r, "seek-link again");
	link_figures_as_recorded(r, run.db);
	/* From the end back before that merge, then further back, to an
	 * older checkpoint (taken before the first seek): the calls the
	 * first of these two seeks took off the record are not taken off
	 * again. */
	seek_ok(ms_replay_seek_merge(r, first, &eb), &eb, r);
	link_figures_as_recorded(r, run.db);
	assert_true(first > 3);
	seek_ok(ms_replay_seek_merge(r, 3, &eb), &eb, r);
	assert_int_equal(seeks_of(r), 4);
	link_figures_as_recorded(r, run.db);
	to_end(r, "seek-link, back twice from the end");
	link_figures_as_recorded(r, run.db);
	assert_true(count_rows(run.db, "SELECT max(max_ns) FROM merge_link "
	                               "WHERE idx = 0") < slow);
	ms_replay_close(r);
	unlink(gate);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_seek_back_same_fingerprint),
		cmocka_unit_test(test_seek_back_same_part_ids),
		cmocka_unit_test(test_seek_damaged_checkpoint),
		cmocka_unit_test(test_seek_leftover_after_restore),
		cmocka_unit_test(test_checkpoints_at_stops),
		cmocka_unit_test(test_seek_time_to_last_point_before),
		cmocka_unit_test(test_seek_rerun_passes_breakpoints),
		cmocka_unit_test(test_rerun_new_replay_passes_breakpoints),
		cmocka_unit_test(test_run_to_passed_target),
		cmocka_unit_test(test_checkpoints_need_room),
		cmocka_unit_test(test_seek_from_finalize_barrier),
		cmocka_unit_test(test_seek_from_finalize_barrier_skywalking),
		cmocka_unit_test(test_seek_after_finalize_released),
		cmocka_unit_test(test_seek_while_finalize_runs),
		cmocka_unit_test(test_seek_from_cooldown_point),
		cmocka_unit_test(test_seek_link_figures),
	};
	return cmocka_run_group_tests(tests, rt_setup, rt_teardown);
}
