/*
 * ev_private.h - what recorder.c shares with export.c and report.c: the
 * column tables as named values, so every export writes exactly the fields
 * the database holds under the same names, and a JSON string writer.
 * Private to replay/.
 */
#ifndef MS_EV_PRIVATE_H
#define MS_EV_PRIVATE_H

#include "ms_replay_events.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Delete the merge row of seq from rec's database, every count left as
 * it was (ms__replay_test.lose_merge_row). */
void ms__rec_forget_merge(ms_rec *r, uint64_t seq);

/* Hold (true) or let go the recorder's thread: held, it moves no event
 * into SQLite (calls that drain the queue themselves still do), so a
 * test can fill the queue. */
void ms__rec_hold(ms_rec *r, bool hold);
/* Callers of rec now waiting for room in its queue. */
uint32_t ms__rec_waiters(ms_rec *r);
/* The page cache of the event database's connection: KiB as a string
 * for PRAGMA cache_size, and the bytes it holds now (all pages cached,
 * with their headers: SQLITE_DBSTATUS_CACHE_USED). */
#define MS__REC_CACHE_KIB "512"
size_t ms__rec_cache_bytes(ms_rec *r);

/* Which record a column belongs to. */
enum ms__ev_rec {
	MS__EV_MERGE = 0, /* ms_ev_merge (without inputs and links) */
	MS__EV_INPUT = 1, /* ms_ev_input */
	MS__EV_LINK = 2,  /* ms_ev_link */
	MS__EV_PUB = 3,   /* ms_ev_pub */
};

enum ms__ev_vtype {
	MS__EV_INT = 0,  /* v->i */
	MS__EV_UINT = 1, /* v->u */
	MS__EV_REAL = 2, /* v->d */
	MS__EV_TEXT = 3, /* v->s (borrowed from the object or v->buf) */
	MS__EV_BOOL = 4, /* v->i is 0 or 1 */
};

typedef struct ms__ev_val {
	const char *name; /* the column name */
	enum ms__ev_vtype type;
	int64_t i;
	uint64_t u;
	double d;
	const char *s;
	char buf[40];
} ms__ev_val;

/* A merge event's phase as an index below MS_EV_PHASE_COUNT (an unknown
 * one counted as primary), for figures summed per phase. */
static inline unsigned
ms__ev_merge_phase(const ms_ev_merge *m)
{
	return (unsigned)m->phase < MS_EV_PHASE_COUNT ? (unsigned)m->phase
	                                              : MS_EV_PHASE_PRIMARY;
}

/* The bytes a merge event read and wrote, of its core parts and of both
 * secondary indexes: the terms of the write amplification, for the run
 * report and the bench alike. A failed merge (err) published nothing and
 * counts on neither side, so the ratio is over completed merges. */
typedef struct ms__ev_io {
	uint64_t core_in, core_out, idx_in, idx_out;
} ms__ev_io;

static inline ms__ev_io
ms__ev_merge_io(const ms_ev_merge *m)
{
	ms__ev_io io = { 0, 0, 0, 0 };
	if (m->err)
		return io;
	io.core_in = m->input_bytes;
	io.core_out = m->output.compressed_bytes;
	for (int k = MS_KIND_LATENCY; k <= MS_KIND_START_TIME; k++) {
		io.idx_in += m->index[k].bytes_in;
		io.idx_out += m->index[k].bytes_out;
	}
	return io;
}

/* Did the run sit in a cgroup of its own (limits_mode cgroup1 or
 * cgroup2)? Only then are its run end's cgroup figures measured: another
 * run has none, which is not a figure of 0. */
static inline bool
ms__ev_run_in_cgroup(const ms_ev_run *r)
{
	return strcmp(r->limits_mode, "cgroup1") == 0 ||
	       strcmp(r->limits_mode, "cgroup2") == 0;
}

/* Number of columns of record w, and column i of obj as a value. */
size_t ms__ev_ncols(enum ms__ev_rec w);
void ms__ev_value(enum ms__ev_rec w, size_t i, const void *obj, ms__ev_val *v);

/* Machine-readable output is written in the "C" numeric locale whatever
 * the process's locale is (a decimal comma would break JSON and CSV):
 * ms__c_numeric_begin switches this thread to it and returns what to give
 * ms__c_numeric_end, which switches back. */
typedef struct ms__c_numeric {
	void *old, *c; /* locale_t */
} ms__c_numeric;
void ms__c_numeric_begin(ms__c_numeric *n);
void ms__c_numeric_end(ms__c_numeric *n);

/* Write s as a JSON string (quotes included), escaping as RFC 8259 asks:
 * the one writer of JSON strings (report, export, bench, figures). Valid
 * UTF-8 whatever s holds: a byte that does not begin a well-formed UTF-8
 * sequence is written as \ufffd (U+FFFD), one per byte. */
void ms__json_str(FILE *f, const char *s);
/* Write v as a JSON value. */
void ms__json_val(FILE *f, const ms__ev_val *v);
/* Write figure v as a JSON number that reads back as v (15 significant
 * digits, 17 when 15 do not), null when it is not finite. */
void ms__json_fig(FILE *f, double v);

/* The run's figures beside the reference replay's (report_ref.c), for a
 * fixture of a known preset; nothing otherwise. run: the run's record
 * (its preset, variant, fixture directory and hash). */
int ms__report_reference(ms_evdb *db, const ms_ev_run *run, FILE *out,
                         ms_errbuf *eb);

/* How a column is written outside SQLite (by its name): a part ID as 16
 * hex digits, an integer that can exceed 2^53 (nanosecond logical and
 * unix times, timestamps, checksums, seeds) as a JSON string, or plain. */
enum ms__col_kind { MS__COL_PLAIN, MS__COL_PART_ID, MS__COL_BIG };
enum ms__col_kind ms__col_kind(const char *name);
/* Write column value v as JSON by its kind. */
void ms__json_col(FILE *f, const ms__ev_val *v);

/* s to f with <, >, & and " escaped for HTML text and attributes. */
void ms__html_esc(FILE *f, const char *s);

/* ms_outfile_open, choosing the way (outfile.c): nameless true is its
 * own choice (a file without a name where the file system makes one),
 * false the named temporary file it falls back to elsewhere. */
int ms__outfile_open_how(ms_outfile **out, const char *path, bool force,
                         bool nameless, ms_errbuf *eb);

#endif
