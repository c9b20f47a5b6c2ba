/*
 * postmortem.c - the end record of a run whose process is dying before it
 * could write one: the `mergescope` watcher (tui/supervise.c) calls it
 * when a plugin crashed inside Decide or called exit() there. It runs in
 * another process, in ordinary context (no signal handler ever touches
 * the database), waiting for SQLite's lock if the recorder holds it.
 */
#include "ms_replay.h"
#include "ms_replay_events.h"
#include "replay_int.h"

#include "ms_owner.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int
ms_evdb_mark_ended(const char *path, const char *status, const char *reason,
                   bool *changed, ms_errbuf *eb)
{
	if (changed)
		*changed = false;
	if (!path || !*path || !status || !*status)
		return ms_fail(eb, MS_ERR_INVAL,
		               "event database: no path or status to record");
	sqlite3 *db = NULL;
	int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL);
	sqlite3_stmt *st = NULL;
	if (rc == SQLITE_OK)
		rc = sqlite3_busy_timeout(db, 10000);
	if (rc == SQLITE_OK)
		/* The figures the run did not live to record: its
		 * publications (each has its row) and its wall so far. */
		rc = sqlite3_prepare_v2(
		        db,
		        "UPDATE run SET status = ?1, error = ?2, "
		        "ended_unix_ns = ?3, "
		        "publications = (SELECT count(*) FROM publication), "
		        "wall_ns = CASE WHEN started_unix_ns > 0 AND "
		        "?3 > started_unix_ns THEN ?3 - started_unix_ns "
		        "ELSE wall_ns END "
		        "WHERE id = 1 AND status = ''",
		        -1, &st, NULL);
	if (rc == SQLITE_OK) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		sqlite3_bind_text(st, 1, status, -1, SQLITE_TRANSIENT);
		sqlite3_bind_text(st, 2, reason ? reason : "", -1,
		                  SQLITE_TRANSIENT);
		sqlite3_bind_int64(st, 3,
		                   (sqlite3_int64)ts.tv_sec * 1000000000 +
		                           ts.tv_nsec);
		rc = sqlite3_step(st) == SQLITE_DONE ? SQLITE_OK
		                                     : sqlite3_errcode(db);
		if (rc == SQLITE_OK && changed)
			*changed = sqlite3_changes(db) > 0;
	}
	int ret = 0;
	if (rc != SQLITE_OK)
		ret = ms_fail(eb, MS_ERR_IO,
		              "event database %s: recording the end (%s): %s",
		              path, status,
		              db ? sqlite3_errmsg(db) : "out of memory");
	sqlite3_finalize(st);
	sqlite3_close(db);
	return ret;
}

/* 1 when the database at path has no tables (a hot journal of its
 * first transaction rolled back first: this connection writes), 0 when
 * it has, -1 when it cannot be read (the update that follows says why). */
static int
no_tables(const char *path)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	int n = -1;
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) ==
	            SQLITE_OK &&
	    sqlite3_busy_timeout(db, 10000) == SQLITE_OK &&
	    sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master", -1,
	                       &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int(st, 0) == 0;
	sqlite3_finalize(st);
	sqlite3_close(db);
	return n;
}

/* The database's part of the post-mortem. A file that is not there was
 * never made (or removed by a close before the start); one with no
 * tables was made by the run (its first commit writes the schema with
 * the run record, ms_rec_opts.run) and holds nothing to record. */
static int
db_postmortem(const char *path, const char *reason, enum ms_postmortem *done,
              ms_errbuf *eb)
{
	if (access(path, F_OK) != 0)
		return 0;
	if (no_tables(path) == 1) {
		ms_evdb_remove(path);
		*done = MS_PM_REMOVED;
		return 0;
	}
	bool changed = false;
	int rc = ms_evdb_mark_ended(path, "aborted", reason, &changed, eb);
	if (changed)
		*done = MS_PM_RECORDED;
	return rc;
}

/* Has the shard directory work_dir been taken by another run since the
 * run recording in db_path made it? A run given the --work-dir of one
 * that was killed empties it and takes it (ms__work_reclaim) while that
 * run's watcher may still be on its way here: its owner record then names
 * another database and a live process, and the shard is that run's. */
static bool
taken_by_another_run(const char *work_dir, const char *db_path)
{
	ms_owner o;
	return db_path && *db_path && ms_owner_read(work_dir, &o, NULL) == 0 &&
	       strcmp(o.note, db_path) != 0 && ms_owner_alive(&o);
}

int
ms_replay_postmortem(const char *db_path, const char *work_dir,
                     const char *reason, enum ms_postmortem *done,
                     ms_errbuf *eb)
{
	int rc = 0;
	enum ms_postmortem d = MS_PM_NONE;
	if (db_path && *db_path)
		rc = db_postmortem(db_path, reason, &d, eb);
	if (done)
		*done = d;
	if (work_dir && *work_dir && taken_by_another_run(work_dir, db_path))
		return rc;
	if (work_dir && *work_dir && ms_fs_rm_tree(work_dir, NULL) < 0 &&
	    rc == 0)
		rc = ms_fail(eb, MS_ERR_IO, "removing the scratch shard %s: %s",
		             work_dir, strerror(errno));
	/* And its checkpoints beside it (checkpoint.c), if it took any. */
	char ck[4096];
	if (work_dir && *work_dir &&
	    snprintf(ck, sizeof(ck), "%s.ckpt", work_dir) < (int)sizeof(ck) &&
	    ms_fs_rm_tree(ck, NULL) < 0 && rc == 0)
		rc = ms_fail(eb, MS_ERR_IO, "removing the checkpoints %s: %s",
		             ck, strerror(errno));
	return rc;
}
