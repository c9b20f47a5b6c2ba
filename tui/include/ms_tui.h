/*
 * ms_tui.h - the public API of the tui layer: the controller interface the
 * screen drives, the options of a TUI session, and the session itself.
 *
 * The TUI knows nothing of how a replay works. It talks to an ms_tui_ctl:
 * a table of operations plus an opaque `self`. tui/replay_ctl.c provides
 * the implementation over a running replay (ms_replay_ctl.h; the replay's
 * controller owns the engine threads); tests provide a fake one
 * (tests/tui_fake.h). Every operation is called from the TUI's thread only, must
 * return quickly (it asks the engine thread to act; it never waits for a
 * merge; a freeze's copy goes on on a thread of its own, and only
 * freeze_done asked to wait waits for it, when the session ends), and
 * returns 0 or a negative enum ms_err with a message in `eb`.
 *
 * Threads: the engine runs on its own thread(s). `snapshot` copies state
 * under the controller's lock; the TUI calls it at most ~30 times a second
 * and never holds it across drawing.
 */
#ifndef MS_TUI_H
#define MS_TUI_H

#include "ms_err.h"
#include "view.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Where `g` (run to) should stop. */
enum ms_tui_target_kind {
	MS_TARGET_TIME = 0,  /* logical time `t` (unix ns) */
	MS_TARGET_MERGE = 1, /* the dispatch barrier of merge number `seq` */
	MS_TARGET_PUB = 2,   /* the point before publication `pub` (0-based) */
};

typedef struct ms_tui_target {
	enum ms_tui_target_kind kind;
	int64_t t;
	uint64_t seq;
	uint64_t pub;
} ms_tui_target;

/* Export formats; ms_tui_format_name gives "jsonl", "csv", "chrome". */
enum ms_tui_format {
	MS_FORMAT_JSONL = 0,
	MS_FORMAT_CSV = 1,
	MS_FORMAT_CHROME = 2,
};

const char *ms_tui_format_name(enum ms_tui_format f);
/* Parse "jsonl", "csv" or "chrome"; false if it is none of them. */
bool ms_tui_format_parse(const char *s, enum ms_tui_format *out);

/*
 * The controller. All function pointers are required except where marked.
 */
/* run_to's answer for a target the run is past already (positive, not an
 * error). */
#define MS_TUI_PASSED 1
/* freeze_done's answer while the freeze is under way (positive, not an
 * error). */
#define MS_TUI_PENDING 2

typedef struct ms_tui_ctl_ops {
	/* Resume publishing and merging at the current speed. */
	int (*run)(void *self, ms_errbuf *eb);
	/* Stop before the next publication or dispatch. */
	int (*pause)(void *self, ms_errbuf *eb);
	/* One step: run to the next publication or dispatch barrier. */
	int (*step)(void *self, ms_errbuf *eb);
	/* Run to the next dispatch barrier, ignoring publications. */
	int (*step_to_barrier)(void *self, ms_errbuf *eb);
	/* Run until an enabled breakpoint hits (or the run ends). */
	int (*run_to_breakpoint)(void *self, ms_errbuf *eb);
	/* Run to a logical time or a merge number, then pause.
	 * MS_TUI_PASSED when the run is past t by the time it is set
	 * (nothing set, the run as it was): the caller goes back to it. */
	int (*run_to)(void *self, const ms_tui_target *t, ms_errbuf *eb);
	/* Logical seconds per wall second; 0 means as fast as the engine
	 * goes. */
	int (*set_speed)(void *self, double multiple, ms_errbuf *eb);
	/* Add a breakpoint from its spec ("mature", "sampling", "merge=N",
	 * "time=HH:MM[:SS]", "part=HEX", "lane=fast|slow|finalize",
	 * "depth>=D"); *id receives its number. Errors name what is wrong. */
	int (*break_add)(void *self, const char *spec, int *id, ms_errbuf *eb);
	int (*break_enable)(void *self, int id, bool enabled, ms_errbuf *eb);
	int (*break_delete)(void *self, int id, ms_errbuf *eb);
	/* Begin freezing the shard at the current barrier (a copy with the
	 * pending selection and clock) off the caller's thread: the copy
	 * takes from a tenth of a second to more than one on a big day.
	 * MS_ERR_STATE while one is under way. Until freeze_done has given
	 * its result, the operations that move the run (run, pause, step,
	 * step_to_barrier, run_to_breakpoint, run_to, restart) are refused
	 * with MS_ERR_STATE. */
	int (*freeze)(void *self, ms_errbuf *eb);
	/* The freeze begun last: MS_TUI_PENDING while it is under way (with
	 * `wait`, it waits for its end instead), then, once, 0 with its
	 * directory in dir[0..n), or its negative error (eb says why).
	 * MS_ERR_STATE when there is none to give. */
	int (*freeze_done)(void *self, bool wait, char *dir, size_t n,
	                   ms_errbuf *eb);
	/* Export the recorded events that pass `filter` (ms_tui_filter; map
	 * it to ms_ev_filter field for field) to `path`; *written gets how
	 * many merges were written. An existing file at `path` is refused
	 * unless `overwrite` (the user confirmed it). */
	int (*export_events)(void *self, enum ms_tui_format f,
	                     const ms_tui_filter *filter, const char *path,
	                     bool overwrite, uint64_t *written, ms_errbuf *eb);
	/* Copy the current state into *v, leaving v->ui alone. */
	int (*snapshot)(void *self, ms_tui_view *v, ms_errbuf *eb);
	/* Optional (NULL: the TUI only runs forward). Start the day again
	 * with the same options and breakpoints, recording to a new event
	 * database; with a target, run there (as run_to) instead of from the
	 * start's usual state, or go back to it in the same database when
	 * the controller can. How the replay goes back in time. On success
	 * db[0..n) (db may be NULL) gets the new database's path, or "" when
	 * it went back in the same one, and eb->msg is "" or says what ending
	 * the replaced run left undone (its database in two files), for the
	 * screen to show. */
	int (*restart)(void *self, const ms_tui_target *t, char *db, size_t n,
	               ms_errbuf *eb);
} ms_tui_ctl_ops;

typedef struct ms_tui_ctl {
	const ms_tui_ctl_ops *ops; /* borrowed, usually a static const */
	void *self;                /* borrowed */
} ms_tui_ctl;

/* Options of a TUI session; zeroed means defaults. */
typedef struct ms_tui_opts {
	bool no_color;    /* --no-color (NO_COLOR in the environment also) */
	bool ascii;       /* --ascii borders and glyphs */
	FILE *out;        /* terminal output; NULL = stdout */
	FILE *in;         /* terminal input; NULL = stdin */
	const char *term; /* terminal type; NULL = $TERM */
	int fps;          /* frames per second ceiling; 0 = 30 */
	/* How to run this program again from a shell, for the merge-once
	 * command shown after a freeze; NULL = "mergescope". */
	const char *program;
	/* Optional: receives, when the session ends, the merge-once
	 * command of every freeze of the session, one per line, in order,
	 * each whole, to print after the terminal is back: a string the
	 * caller frees, or NULL if there was none. A last line "(and N
	 * more)" counts commands that found no memory. */
	char **frozen_cmds;
	/* Optional: breakpoints and a filter from the last session on this
	 * fixture, offered (y/N) when the session starts. */
	size_t offer_nbreaks;
	const char *const *offer_breaks;
	const char *offer_filter; /* NULL or "" = none */
	/* Optional: receives the event filter in use at the end. */
	char *filter_out;
	size_t filter_out_n;
	/* Optional: a descriptor the controller makes readable when
	 * something worth redrawing happened (the replay's notify). With
	 * it a stopped run whose screen does not change is not drawn
	 * again until then (at the latest MS_TUI_IDLE_WAKE_MAX_S), not
	 * every second. Non-blocking, read here, not closed. 0 = none. */
	int wake_fd;
	/* Optional: asked before each wait of the session; true ends it as
	 * SIGINT, SIGTERM or SIGHUP does. For a caller that takes the stop
	 * signals on a thread of its own: it sends the session's thread one
	 * SIGHUP to end a wait, and a signal the screen's handler missed
	 * (before the screen was up, or just before a wait) is not lost. */
	bool (*stop_asked)(void);
} ms_tui_opts;

/* With a wake_fd: the longest a stopped, unchanged screen goes without a
 * frame (a change the controller did not announce shows by then). */
#define MS_TUI_IDLE_WAKE_MAX_S 60

/*
 * Run an interactive session until the user quits, SIGINT/SIGTERM/SIGHUP
 * arrives, or the controller fails. The terminal is restored on every way
 * out (also from an atexit handler). Returns 0, or a negative ms_err with a
 * message in eb (the screen is already restored then).
 */
int ms_tui_run(const ms_tui_ctl *ctl, const ms_tui_opts *opts, ms_errbuf *eb);

/* Whether ms_tui_run can draw on terminal type term (NULL = $TERM): its
 * description exists and moves the cursor. Writes nothing to the
 * terminal; 0, or a negative ms_err with the message ms_tui_run gives.
 * For callers that would start work (a run, its database) before the
 * screen opens. */
int ms_tui_term_check(const char *term, ms_errbuf *eb);

/* The `mergescope` command line: dispatches argv[1] through the command
 * table. Returns the process exit status. Output goes to out/err. */
int ms_cli_main(int argc, char **argv, FILE *out, FILE *err);
/* ms_cli_main with a watcher process beside it (supervise.c): what the
 * `mergescope` executable runs. When a plugin crashes inside Decide (a
 * fatal signal) or calls exit() there, the watcher records the run as
 * aborted with the reason and removes its scratch shard, the terminal is
 * restored, and the process dies of the signal (exits 2 for exit()). */
int ms_cli_main_supervised(int argc, char **argv, FILE *out, FILE *err);

#endif
