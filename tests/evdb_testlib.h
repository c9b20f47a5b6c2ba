/*
 * evdb_testlib.h - what the event-log tests write from a recorded
 * database, captured as text: the run report (text or JSON) or any other
 * writer over an open ms_evdb, and edits of a recorded database. Include
 * after <cmocka.h>.
 */
#ifndef MS_EVDB_TESTLIB_H
#define MS_EVDB_TESTLIB_H

#include "ms_replay_events.h"

#include <sqlite3.h>
#include <stdio.h>

/* Writes what the test reads from db to out; 0 or a negative ms_err. */
typedef int (*et_write_fn)(ms_evdb *db, FILE *out, void *arg, ms_errbuf *eb);

/* Open the database at path, run fn over it into memory and return the
 * NUL-terminated text (the caller frees it); fails the test when the
 * database does not open or fn fails. */
static __attribute__((unused)) char *
et_text(const char *path, et_write_fn fn, void *arg)
{
	ms_evdb *db = NULL;
	ms_errbuf eb = { { 0 } };
	assert_int_equal(ms_evdb_open(&db, path, &eb), 0);
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);
	assert_non_null(out);
	int rc = fn(db, out, arg, &eb);
	if (rc)
		print_error("%s: %s\n", path, eb.msg);
	assert_int_equal(rc, 0);
	fclose(out);
	ms_evdb_close(db);
	return buf;
}

/* A report writer (ms_report_text, ms_report_json) and where it puts
 * the number of failed gates (may be NULL). */
typedef int (*et_report_fn)(ms_evdb *, FILE *, unsigned *, ms_errbuf *);
typedef struct et_report_arg {
	et_report_fn fn;
	unsigned *failed;
} et_report_arg;

static __attribute__((unused)) int
et_write_report(ms_evdb *db, FILE *out, void *arg, ms_errbuf *eb)
{
	const et_report_arg *a = arg;
	return a->fn(db, out, a->failed, eb);
}

/* The report fn writes for the database at path (the caller frees it);
 * the failed gates into *failed when it is not NULL. */
static __attribute__((unused)) char *
et_report(const char *path, et_report_fn fn, unsigned *failed)
{
	et_report_arg a = { fn, failed };
	return et_text(path, et_write_report, &a);
}

/* Run sql on the SQLite database at path (a test's edit of a recorded
 * run); fails the test unless it opens and every statement succeeds. */
static __attribute__((unused)) void
et_sql(const char *path, const char *sql)
{
	sqlite3 *h = NULL;
	assert_int_equal(sqlite3_open(path, &h), SQLITE_OK);
	char *msg = NULL;
	int rc = sqlite3_exec(h, sql, NULL, NULL, &msg);
	if (rc != SQLITE_OK)
		print_error("%s: %s: %s\n", path, sql, msg ? msg : "");
	sqlite3_free(msg);
	sqlite3_close(h);
	assert_int_equal(rc, SQLITE_OK);
}

#endif
