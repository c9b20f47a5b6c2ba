/*
 * view.h - the view model of the TUI: one consistent snapshot of everything
 * the screen shows.
 *
 * The screen never reads engine state directly. Once per frame the main
 * loop asks the controller (ms_tui_ctl, see ms_tui.h) to fill an
 * ms_tui_view under the controller's own lock; panels then draw from that
 * copy only, so a frame is consistent and rendering never holds an engine
 * lock. The `ui` member is owned by the TUI (focus, filter, prompts) and is
 * never written by the controller.
 *
 * All arrays are fixed-capacity so a snapshot is a plain copy with no
 * allocation under the engine lock. When the engine has more items than fit,
 * it fills the first `*_cap` and sets the `*_total` count so the screen can
 * say how many it is not showing.
 *
 * Times are logical unix nanoseconds (the replay's clock). Byte counts are
 * compressed on-disk bytes unless a name says otherwise. Strings are
 * NUL-terminated and truncated to fit.
 *
 * Ownership: an ms_tui_view is a caller-owned value (allocate it with
 * ms_tui_view_new, it is large); it holds no pointers.
 */
#ifndef MS_TUI_VIEW_H
#define MS_TUI_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MS_VIEW_MAX_PARTS 1024
#define MS_VIEW_MAX_INPUTS 64
#define MS_VIEW_MAX_PLUGINS 8 /* the chain's MS_CHAIN_MAX_LINKS */
#define MS_VIEW_LINK_LOG 8    /* a link's last log lines shown */
#define MS_VIEW_MAX_EVENTS 512
#define MS_VIEW_MAX_BREAKS 64 /* all the replay holds (--break: 64) */
#define MS_VIEW_SPARK 64
#define MS_VIEW_HIST 13
#define MS_VIEW_TEXT 256
#define MS_VIEW_PATH 4096 /* PATH_MAX: a whole path */
/* A frozen merge's merge-once command: the program and the frozen
 * directory, whole paths both, quoted for the shell, and the chain. */
#define MS_VIEW_CMD (2 * MS_VIEW_PATH + 2 * MS_VIEW_TEXT)
#define MS_VIEW_EVENT_LINKS 8 /* a chain's links, as events keep them */
/* Inputs of a merge kept for its details (the finalize may have more). */
#define MS_VIEW_EVENT_INPUTS 32
#define MS_VIEW_EVENT_BATCHES 8 /* batches shown per merge */
#define MS_VIEW_MAX_GATES 48
#define MS_VIEW_MAX_RECON 40 /* the replay records 31 to 33 */

/* What the replay is doing. */
enum ms_tui_state {
	MS_VIEW_PAUSED = 0,  /* stopped between steps, by the user */
	MS_VIEW_RUNNING = 1, /* publishing and merging */
	MS_VIEW_BREAK = 2,   /* stopped at a dispatch barrier */
	MS_VIEW_DONE = 3,    /* the run is over (finalized) */
};

/* One active part, as the inventory lists it. */
typedef struct ms_tui_part {
	uint64_t id;
	uint64_t bytes; /* compressed size: the picker's size */
	uint64_t rows;
	uint32_t depth; /* 0 for raw writes */
	int64_t min_ts;
	int64_t max_ts;
	bool mature;         /* max_ts <= frontier */
	bool pending;        /* an input of the pending selection */
	uint64_t claimed_by; /* merge seq holding it; 0 = not claimed */
} ms_tui_part;

/* The selection waiting at a dispatch barrier. */
typedef struct ms_tui_selection {
	bool present;
	uint64_t seq; /* merge number it will get */
	char lane[16];
	char predicted[32]; /* predicted classification */
	char reason[32];    /* predicted reason, "" when executed */
	int64_t frontier;
	uint64_t bytes;
	uint64_t rows;
	uint32_t mature_count;
	uint64_t mature_rows;
	uint32_t hot_count;
	uint64_t hot_rows;
	uint32_t max_depth;
	/* Its staging plan when it is predicted to sample (0 otherwise):
	 * estimated staged bytes, planned batches, preferred limit. */
	uint64_t plan_estimate, plan_batches, plan_preferred;
	size_t inputs_total;
	size_t ninputs;
	ms_tui_part inputs[MS_VIEW_MAX_INPUTS];
} ms_tui_selection;

/* Staged bytes of the sampling pipeline. */
typedef struct ms_tui_staging {
	uint64_t live;
	uint64_t peak;      /* peak of the merge in progress or the last one */
	uint64_t preferred; /* adaptive preferred limit of that merge */
	uint64_t hard;      /* hard staging ceiling */
	size_t nspark; /* peak staged bytes of recent merges, oldest first */
	uint64_t spark[MS_VIEW_SPARK];
} ms_tui_staging;

/* One link of the sampler chain. */
typedef struct ms_tui_plugin {
	char name[32];
	uint64_t calls;
	uint64_t traces;
	uint64_t total_ns;
	uint64_t max_ns;
	/* Decide-call latency histogram; hist_le_ns[i] is the upper bound of
	 * bucket i, the last bucket is the overflow (bound 0). */
	uint64_t hist[MS_VIEW_HIST];
	uint64_t hist_le_ns[MS_VIEW_HIST];
	uint64_t failopen_error;
	uint64_t failopen_timeout;
	uint64_t failopen_verdict; /* wrong length or values other than 0/1 */
	bool circuit_open;
	/* What its plugin logged: lines the run kept and suppressed, and
	 * the last ones kept, oldest first (wall_ns since the run started,
	 * level as "error" "warn" "info" "debug", one printable line). */
	uint64_t log_kept, log_suppressed;
	size_t nlog;
	struct {
		int64_t wall_ns;
		char level[8];
		char msg[256];
	} log[MS_VIEW_LINK_LOG];
} ms_tui_plugin;

/* The sampled merge in progress, while one runs: its figures so far
 * (the replay's reading, at most a few frames old). */
typedef struct ms_tui_live {
	bool present;       /* a merge in flight has staged or called Decide */
	uint64_t seq;       /* the oldest merge in flight */
	uint32_t inflight;  /* merges in flight (other lanes too) */
	int64_t wall_ns;    /* since its dispatch */
	uint64_t calls;     /* Decide calls so far, every link */
	uint64_t traces;    /* traces handed to Decide so far */
	uint64_t decide_ns; /* time in Decide so far */
} ms_tui_live;

/* One recorded merge. */
/* One input of a merge, for its details. */
typedef struct ms_tui_input {
	uint64_t id, bytes, rows;
	uint32_t depth;
	bool mature;
	int64_t max_ts;
} ms_tui_input;

typedef struct ms_tui_event {
	uint64_t seq;
	int64_t t; /* logical time at dispatch */
	char lane[16];
	uint32_t ninputs;
	uint64_t rows_in;
	uint64_t rows_out;
	uint64_t bytes_in;
	uint64_t bytes_out;
	char phase[16];  /* primary, cooldown */
	char klass[32];  /* executed, enabled_no_evaluation, not_executed */
	char reason[32]; /* "" or "none" when executed */
	int64_t wall_ns;
	/* Details (Enter). */
	uint64_t output_id;
	uint32_t depth_out;
	uint32_t mature_count;
	uint32_t hot_count;
	uint64_t traces_evaluated;
	uint64_t traces_dropped;
	uint64_t traces_deferred;
	uint64_t drop_set_full; /* of deferred: the drop set was full */
	uint64_t traces_oversized;
	uint64_t traces_hot; /* kept unevaluated, hot (policy trace) */
	uint64_t batches;
	uint64_t peak_staged;
	/* Staging of a sampled merge: the planner's figures, the peak of
	 * every merge at once, the hold arena, the first batches. */
	uint64_t batches_planned;
	uint64_t estimate, hard, preferred;
	uint64_t peak_concurrent;
	uint64_t arena_cold, arena_reused;
	size_t nbatch;
	struct {
		uint64_t charged;
		uint32_t traces;
		char reason[12]; /* bytes, traces, oversized, final */
	} batch[MS_VIEW_EVENT_BATCHES];
	int64_t cpu_ns;
	uint64_t alloc_bytes;
	uint64_t fingerprint; /* the output part's checksum (XXH64) */
	/* The sampler links' figures in this merge, in chain order. */
	size_t nlinks;
	struct {
		char name[24];
		uint64_t calls, traces, kept;
		int64_t total_ns;
	} links[MS_VIEW_EVENT_LINKS];
	/* Its inputs as the dispatch saw them, the first
	 * MS_VIEW_EVENT_INPUTS of ninputs. */
	uint32_t ninputs_kept;
	ms_tui_input inputs[MS_VIEW_EVENT_INPUTS];
	bool failed;
	char error[96]; /* why it failed, "" otherwise */
	/* The recorder's one-line summary (ms_ev_merge_summary), which the
	 * filter's free text and the search match; "" means use the TUI's
	 * own line. Room for its words, every kept input (17 characters
	 * each) and the error. */
	char summary[128 + MS_VIEW_EVENT_INPUTS * 17 + 256];
} ms_tui_event;

/*
 * An event filter, parsed from what the user types after `/`. It mirrors
 * the replay's ms_ev_filter field for field, so the controller can hand it
 * to the exporters and `e` writes exactly what the log shows. Words of the
 * text: lane=L, class=C, reason=R, phase=P, seq=A..B, seq>=N, seq<=N,
 * seq>N, seq<N, #N; all other words, joined by single spaces, form one
 * case-insensitive substring of the event's summary. Empty fields match
 * everything.
 */
typedef struct ms_tui_filter {
	char lane[16];
	char klass[32];
	char reason[32];
	char phase[16];
	bool has_seq_range;
	uint64_t seq_min, seq_max; /* inclusive */
	char text[256];
} ms_tui_filter;

typedef struct ms_tui_break {
	int id;
	char spec[64]; /* as the user typed it: "mature", "merge=40", ... */
	bool enabled;
	uint64_t hits;
} ms_tui_break;

/* Which panel has the keyboard focus. */
enum ms_tui_focus {
	MS_FOCUS_EVENTS = 0,
	MS_FOCUS_INVENTORY = 1,
	MS_FOCUS_PLUGINS = 2,
	MS_FOCUS_COUNT = 3,
};

/* A box drawn over the panels, at most one at a time. */
enum ms_tui_overlay {
	MS_OVERLAY_NONE = 0,
	MS_OVERLAY_HELP = 1,
	MS_OVERLAY_DETAIL = 2,
	MS_OVERLAY_BREAKS = 3,
};

/* A one-line prompt in the footer. */
enum ms_tui_prompt {
	MS_PROMPT_NONE = 0,
	MS_PROMPT_FILTER = 1,      /* "/" */
	MS_PROMPT_COMMAND = 2,     /* ":" */
	MS_PROMPT_GOTO = 3,        /* "g" */
	MS_PROMPT_EXPORT = 4,      /* "e" */
	MS_PROMPT_BREAK = 5,       /* "a" in the breakpoint list */
	MS_PROMPT_EXPORT_PATH = 6, /* the export's second field */
	MS_PROMPT_CONFIRM = 7,     /* overwrite ui.export_path? y/N */
	MS_PROMPT_SEARCH = 8,      /* "s": search the focused list */
	MS_PROMPT_RESTORE = 9,     /* restore ui.offer from last time? y/N */
	MS_PROMPT_COUNT = 10,
};

/* The inventory's order (o cycles through them). */
enum ms_tui_part_sort {
	MS_SORT_PICKER = 0, /* the picker's: size ascending, newer first */
	MS_SORT_BYTES = 1,  /* largest first */
	MS_SORT_NEWEST = 2, /* newest rows first (max_ts) */
	MS_SORT_DEPTH = 3,  /* deepest first */
	MS_SORT_ID = 4,
	MS_SORT_COUNT = 5,
};

/* State owned by the TUI; the controller never touches it. */
typedef struct ms_tui_ui {
	enum ms_tui_focus focus;
	enum ms_tui_overlay overlay;
	bool help_visible; /* overlay == HELP, kept for readers */
	enum ms_tui_prompt prompt;
	char filter[MS_VIEW_TEXT];  /* applied event-log filter, as typed */
	ms_tui_filter filt;         /* the same, parsed */
	char cmdline[MS_VIEW_TEXT]; /* text being edited in the prompt */
	size_t cursor;              /* byte offset in cmdline */
	/* cmdline is an offered default (the export's format and path),
	 * drawn selected: the first printable key replaces it, an editing
	 * key (Backspace, Delete, arrows, Home/End, Tab) edits it. */
	bool prefilled;
	/* The last key typed in the prompt was a character beyond ASCII:
	 * not taken (cmdline ends up in file names and specs), and the
	 * prompt says so until the next key. */
	bool not_ascii;
	/* After a Tab that matched several paths: how many, and their
	 * names (directories with a "/"), blank-separated, as many as fit;
	 * shown after the path until the next key. */
	unsigned ncomplete;
	char complete[MS_VIEW_TEXT];
	/* The last result or error, footer: room for a whole path and a
	 * whole filter in one ("exported N merges matching /F ... to P"). */
	char message[MS_VIEW_TEXT * 3];
	char export_path[MS_VIEW_TEXT]; /* the export's file, expanded */
	/* After a freeze: its directory and the command that replays it,
	 * shown until the next freeze (whole: a path may be as long as the
	 * system allows, and the program's too). A command longer still is
	 * not cut: frozen_cmd then says that it is printed on quit. */
	char frozen_dir[MS_VIEW_PATH];
	char frozen_cmd[MS_VIEW_CMD];
	bool message_is_error;
	uint64_t event_sel; /* seq of the selected event; 0 = follow newest */
	size_t part_sel;    /* selected inventory row */
	size_t plugin_sel;
	size_t break_sel;
	size_t help_scroll;   /* first help line shown */
	size_t detail_scroll; /* first line of the details shown */
	size_t gates_scroll;  /* first line of the gates shown (at DONE) */
	bool show_gates;      /* at DONE the Events area shows the gates */
	int zoom;             /* timeline: 0 = the day, 1 = 6 h, 2 = 1 h */
	enum ms_tui_part_sort part_sort;
	char search[MS_VIEW_TEXT]; /* the last search (s), for ; and , */
	/* Where a `g` forward is running to ("09:00:00", "#120"), shown on
	 * the status line while it runs; empty once the run stops. */
	char go_target[32];
	char offer[MS_VIEW_TEXT]; /* what MS_PROMPT_RESTORE offers */
	bool ascii;               /* ASCII borders and glyphs */
	bool color;               /* colours in use */
	uint32_t frame;           /* frames drawn, for the spinner */
} ms_tui_ui;

/* The whole snapshot. */
typedef struct ms_tui_view {
	/* Status. */
	enum ms_tui_state state;
	/* Running, the day not begun: waiting for the verdict oracle. */
	bool preparing;
	char fixture[64];
	char variant[64];
	bool plugin_process; /* Decide runs in host processes */
	char phase[16];      /* primary, boundary, cooldown, finalize */
	char db_path[MS_VIEW_TEXT];
	int64_t day_start; /* first instant of the logical day */
	int64_t day_end;   /* day_start + 24 h */
	int64_t now;
	int64_t frontier;  /* now - grace */
	/* How far the time on screen (the status line's t and frontier,
	 * the timeline) is past now: while the run waits at its speed for
	 * the next publication, as far as that wait has got; 0 else. Only
	 * to show (the run is at now). */
	int64_t now_ahead;
	uint64_t pub_done; /* publications done (k of N) */
	uint64_t pub_total;
	uint64_t merges_done;
	/* Of the merges recorded, failed ones too: those that ran the
	 * sampler (class executed) and those that bypassed it for hot data
	 * (reason merge_grace), as the replay counts them (after a seek
	 * back, up to where it is: the recent events are too few to count
	 * from). */
	uint64_t merges_sampled, merges_bypassed;
	uint64_t epoch;
	double speed;       /* logical seconds per wall second; 0 = max */
	/* Which breakpoint stopped us, at BREAK; why the run failed, at
	 * DONE with run_failed (as much as the status line can show). */
	char break_why[160];
	bool run_failed; /* at DONE: the run failed, not finished */
	/* Why seeking back has fewer checkpoints than asked ("" = none). */
	char checkpoint_note[MS_VIEW_TEXT];

	/* Inventory, in picker order after ms_tui_view_sort_parts. */
	size_t parts_total;
	size_t nparts;
	ms_tui_part parts[MS_VIEW_MAX_PARTS];

	ms_tui_selection sel;
	ms_tui_staging staging;

	size_t nplugins;
	ms_tui_plugin plugins[MS_VIEW_MAX_PLUGINS];
	ms_tui_live live;

	/* The most recent events, oldest first. */
	uint64_t events_total;
	size_t nevents;
	ms_tui_event events[MS_VIEW_MAX_EVENTS];

	size_t nbreaks;
	ms_tui_break breaks[MS_VIEW_MAX_BREAKS];

	/* At DONE: the run's correctness gates. */
	size_t ngates;
	unsigned gates_failed;
	struct {
		char name[48];
		bool pass;
		bool warn; /* passed only because the run allowed it */
		char detail[MS_VIEW_TEXT];
	} gates[MS_VIEW_MAX_GATES];
	/* At DONE: the reconciliation with the verdict oracle (report's
	 * table): per row primary, cooldown, finalize, total, and the rule
	 * the row must satisfy ("= dropped") or a remark ("(...)"), or "". */
	size_t nrecon;
	/* The controller reads something again shortly (the reconciliation
	 * rows, not committed yet at DONE): a stopped screen is drawn again
	 * within a second however long it would wait otherwise. */
	bool settling;
	struct {
		char name[64];
		uint64_t v[4];
		bool ok;
		char note[MS_VIEW_TEXT];
	} recon[MS_VIEW_MAX_RECON];

	ms_tui_ui ui;
} ms_tui_view;

/* Allocate a zeroed view (about 1.7 MiB); NULL on out-of-memory. */
ms_tui_view *ms_tui_view_new(void);
/* Free a view from ms_tui_view_new; NULL is allowed. */
void ms_tui_view_free(ms_tui_view *v);
/* Clear p and set what every source of a part row knows of it: id, bytes,
 * rows, depth and time range (mature, pending and claimed_by false/0). */
void ms_tui_part_init(ms_tui_part *p, uint64_t id, uint64_t bytes,
                      uint64_t rows, uint32_t depth, int64_t min_ts,
                      int64_t max_ts);
/* Sort parts in the order ui.part_sort names; by default as the picker
 * does: bytes ascending, then min_ts descending (newer first), then id
 * ascending. */
void ms_tui_view_sort_parts(ms_tui_view *v);
/* "picker order", "largest first", ... */
const char *ms_tui_part_sort_name(enum ms_tui_part_sort k);
/* Parse filter text (see ms_tui_filter). On a malformed word returns false
 * and writes what is wrong to err[0..n); *out is then unspecified. */
bool ms_tui_filter_parse(const char *text, ms_tui_filter *out, char *err,
                         size_t n);
/* Does e pass f? day_start is for the fallback summary line. */
bool ms_tui_filter_match(const ms_tui_filter *f, const ms_tui_event *e,
                         int64_t day_start);
/* Is f empty (matches everything)? */
bool ms_tui_filter_empty(const ms_tui_filter *f);

#endif
