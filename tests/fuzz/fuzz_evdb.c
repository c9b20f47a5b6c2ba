/*
 * fuzz_evdb.c - libFuzzer harness for the readers of a run's event
 * database (replay/recorder.c ms_evdb_*, and what reads it for the user:
 * the exports of replay/export.c, the reports of replay/report.c and
 * replay/html.c). `mergescope report`, `export` and the TUI read a
 * database the user names, which may be damaged, cut short or written by
 * something else.
 *
 * Each input is written as DIR/events.db (SQLite's side files removed
 * after each run, so one input never sees another's). Then: open it, read
 * the run record and every table, export it in the three formats, and
 * write the text, JSON and HTML reports and the comparison with itself,
 * into /dev/null.
 *
 * What must hold, beside no crash, leak, hang or sanitizer report: every
 * refusal carries a message, and a walk hands out no more events than
 * the file can hold rows.
 */
#include "ms_replay_events.h"

#include "fuzz_file.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static FILE *sink;

static void
remove_side_files(void)
{
	static const char *const ext[] = { "-wal", "-shm", "-journal" };
	for (size_t i = 0; i < 3; i++) {
		char p[sizeof(fuzz_file) + 16];
		snprintf(p, sizeof(p), "%s%s", fuzz_file, ext[i]);
		unlink(p);
	}
}

/* An error return must say what failed. */
static void
checked(int rc, const ms_errbuf *eb)
{
	if (rc < 0 && !eb->msg[0])
		abort();
}

static uint64_t events;

/* One counting callback per event type. */
#define COUNTER(name, type)                                                    \
	static int name(void *ctx, const type *ev)                             \
	{                                                                      \
		(void)ctx;                                                     \
		(void)ev;                                                      \
		events++;                                                      \
		return 0;                                                      \
	}
COUNTER(on_merge, ms_ev_merge)
COUNTER(on_pub, ms_ev_pub)
COUNTER(on_part, ms_ev_part)
COUNTER(on_sample, ms_ev_sample)
COUNTER(on_phase, ms_ev_phase)
COUNTER(on_gate, ms_ev_gate)
COUNTER(on_recon, ms_ev_recon)
COUNTER(on_plugin_stat, ms_ev_plugin_stat)
COUNTER(on_plugin_log, ms_ev_plugin_log)
COUNTER(on_plugin_log_count, ms_ev_plugin_log_count)

/* A walk of db with its callback; an error must say what failed. */
#define WALK(fn, cb)                                                           \
	do {                                                                   \
		ms_errbuf e = { "" };                                          \
		checked(fn(db, cb, NULL, &e), &e);                             \
	} while (0)

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > (4u << 20))
		return 0;
	if (!sink && !(sink = fopen("/dev/null", "w")))
		abort();
	fuzz_file_write("evdb", "events.db", data, size);
	remove_side_files();
	ms_evdb *db = NULL;
	ms_errbuf eb = { "" };
	int rc = ms_evdb_open(&db, fuzz_file, &eb);
	if (rc != 0) {
		if (rc > 0 || !eb.msg[0] || db)
			abort();
		remove_side_files();
		return 0;
	}
	ms_ev_run *run = malloc(sizeof(*run));
	ms_ev_run_end *end = malloc(sizeof(*end));
	bool has_end = false;
	checked(ms_evdb_run(db, run, end, &has_end, &eb), &eb);
	free(run);
	free(end);

	events = 0;
	{
		ms_errbuf e = { "" };
		checked(ms_evdb_each_merge(db, NULL, on_merge, NULL, &e), &e);
	}
	WALK(ms_evdb_each_pub, on_pub);
	WALK(ms_evdb_each_part, on_part);
	WALK(ms_evdb_each_sample, on_sample);
	WALK(ms_evdb_each_phase, on_phase);
	WALK(ms_evdb_each_gate, on_gate);
	WALK(ms_evdb_each_recon, on_recon);
	WALK(ms_evdb_each_plugin_stat, on_plugin_stat);
	WALK(ms_evdb_each_plugin_log, on_plugin_log);
	WALK(ms_evdb_each_plugin_log_count, on_plugin_log_count);
	/* A row takes at least a byte of its page. */
	if (events > size)
		abort();

	for (int f = MS_EXPORT_JSONL; f <= MS_EXPORT_CHROME; f++) {
		ms_errbuf e = { "" };
		uint64_t written = 0;
		checked(ms_export(db, (enum ms_export_format)f, NULL, sink,
		                  &written, &e),
		        &e);
	}
	unsigned failed = 0;
	bool flag = false;
	char why[256];
	ms_ev_gate gates[16];
	ms_errbuf e = { "" };
	checked(ms_report_derive_gates(db, gates, 16, &e), &e);
	e.msg[0] = '\0';
	checked(ms_report_unfinished(db, &flag, why, sizeof(why), &e), &e);
	e.msg[0] = '\0';
	checked(ms_report_text(db, sink, &failed, &e), &e);
	e.msg[0] = '\0';
	checked(ms_report_json(db, sink, &failed, &e), &e);
	e.msg[0] = '\0';
	checked(ms_report_failed_gates(db, &failed, &e), &e);
	e.msg[0] = '\0';
	checked(ms_report_compare(db, db, sink, &flag, &e), &e);
	e.msg[0] = '\0';
	checked(ms_report_html(db, db, sink, &e), &e);
	fflush(sink);
	ms_evdb_close(db);
	remove_side_files();
	return 0;
}
