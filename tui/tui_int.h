/*
 * tui_int.h - the private pieces of the tui layer, shared by its files and
 * its tests: rectangles and the layout function, the cell canvas panels
 * draw into, text formatting, the screen module (the only curses user),
 * panel and key descriptors, the session state, and command descriptors.
 *
 * Drawing model: a frame is built in an ms_canvas (a grid of cells, pure
 * memory, no curses) by ms_render_frame from an ms_tui_view; the screen
 * module then copies the canvas to curses and refreshes. So panels and the
 * layout are testable without a terminal, and exactly one file (screen.c)
 * includes curses.h.
 */
#ifndef MS_TUI_INT_H
#define MS_TUI_INT_H

#include "ms_tui.h"
#include "view.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- Layout ------------------------------------------------------------ */

typedef struct ms_rect {
	int x, y, w, h; /* w == 0 or h == 0: not shown */
} ms_rect;

enum ms_panel_id {
	MS_PANEL_STATUS = 0,
	MS_PANEL_TIMELINE,
	MS_PANEL_INVENTORY,
	MS_PANEL_SELECTION,
	MS_PANEL_STAGING,
	MS_PANEL_PLUGINS,
	MS_PANEL_EVENTS,
	MS_PANEL_FOOTER,
	MS_PANEL_OVERLAY, /* help, detail or breakpoints, over the others */
	MS_PANEL_COUNT
};

/* The smallest screen the layout accepts. */
#define MS_MIN_W 80
#define MS_MIN_H 24
/* The rows from which the timeline is laid out (keys say it when it is
 * folded away). */
#define MS_TIMELINE_MIN_H 34

/* Rows the footer may take: a message wider than the line wraps. */
#define MS_FOOTER_MAX_H 3

typedef struct ms_layout_opts {
	bool overlay; /* an overlay box is open */
	int footer_h; /* the footer's rows, 1..MS_FOOTER_MAX_H (0: 1) */
	/* The rows the overlay's content takes, when the box need be no
	 * taller (the details); 0: as tall as the screen allows. */
	int overlay_rows;
} ms_layout_opts;

typedef struct ms_layout {
	int w, h;
	bool too_small; /* below MS_MIN_W x MS_MIN_H: only the notice */
	ms_rect r[MS_PANEL_COUNT];
} ms_layout;

/* Optional panels, in the order they fold away as the screen shrinks:
 * plugins first, then the timeline, then staging. */
extern const enum ms_panel_id ms_layout_fold_order[3];
/* Panels every layout that is not too small shows. */
extern const enum ms_panel_id ms_layout_required[5];

/* The overlay box's width on a screen w columns wide. */
int ms_layout_overlay_w(int w);
/* Pure: the panel rectangles for a w x h screen. */
void ms_layout_compute(int w, int h, const ms_layout_opts *o, ms_layout *out);
/* The layout of a w x h screen showing v: its overlay, and a footer as
 * tall as v's message needs (ms__footer_rows). */
void ms__layout_view(const ms_tui_view *v, int w, int h, ms_layout *out);
static inline bool
ms_rect_visible(ms_rect r)
{
	return r.w > 0 && r.h > 0;
}

/* ---- Canvas ------------------------------------------------------------ */

/* Cell attributes. The low nibble is a semantic colour (0 = default). */
enum {
	MS_C_DEFAULT = 0,
	MS_C_OK = 1,     /* running, executed */
	MS_C_WARN = 2,   /* paused, mature */
	MS_C_ALERT = 3,  /* break, failures, frontier line */
	MS_C_ACCENT = 4, /* titles, focus, pending selection */
	MS_C_HOT = 5,    /* hot parts */
	MS_C_MUTED = 6,  /* axis, secondary text */
	MS_C_MASK = 0x0f,
	MS_A_BOLD = 0x10,
	MS_A_REV = 0x20,
	MS_A_DIM = 0x40,
	MS_A_UL = 0x80,
};

typedef struct ms_cell {
	uint32_t ch; /* Unicode code point */
	uint16_t attr;
} ms_cell;

typedef struct ms_canvas {
	int w, h;
	bool ascii;     /* draw borders and glyphs with ASCII only */
	ms_cell *cells; /* w * h, row-major, owned */
	size_t cap;
} ms_canvas;

void ms_canvas_init(ms_canvas *c);
void ms_canvas_release(ms_canvas *c);
/* Resize and clear to blanks; 0 or MS_ERR_NOMEM. */
int ms_canvas_reset(ms_canvas *c, int w, int h);
void ms_canvas_put(ms_canvas *c, int x, int y, uint32_t ch, uint16_t attr);
/* Draw UTF-8 text at (x, y), clipped at x + maxw; returns columns used. */
int ms_canvas_text(ms_canvas *c, int x, int y, int maxw, const char *s,
                   uint16_t attr);
/* The columns UTF-8 text s takes (one a character). */
int ms_canvas_cols(const char *s);
/* The same, but text wider than maxw shows as "..." and its end (a path
 * whose file name matters); nothing when maxw < 4. */
int ms_canvas_text_tail(ms_canvas *c, int x, int y, int maxw, const char *s,
                        uint16_t attr);
/* Draw text from (x, y) wrapped at spaces into lines of at most maxw
 * columns (a word longer than a line is cut); returns the lines used, at
 * least 1 (0 when maxw < 1). c NULL: only count them. */
int ms_canvas_wrap(ms_canvas *c, int x, int y, int maxw, const char *s,
                   uint16_t attr);
/* Where the first of those lines ends in s (s itself when maxw < 1). */
const char *ms__wrap_line(const char *s, int maxw);
/* Copy rows top.. of doc into rectangle in of c (a long text laid out
 * whole, shown scrolled). */
void ms_canvas_blit(ms_canvas *c, ms_rect in, const ms_canvas *doc, size_t top);
int ms_canvas_printf(ms_canvas *c, int x, int y, int maxw, uint16_t attr,
                     const char *fmt, ...)
        __attribute__((format(printf, 6, 7)));
void ms_canvas_fill(ms_canvas *c, ms_rect r, uint32_t ch, uint16_t attr);
/* Set attribute bits on a run of cells (keeps their characters). */
void ms_canvas_attr(ms_canvas *c, int x, int y, int n, uint16_t attr);
/* A bordered box with a title; returns the inner rectangle. */
ms_rect ms_canvas_box(ms_canvas *c, ms_rect r, const char *title, bool focused);
/* A list drawn in box r (titled `title`) with rows hidden above and below
 * it: says how many on the right of the top border (" 3 above, 12
 * below ", or " ^3 v12 " where that does not fit after the title;
 * nothing where neither does, or none is hidden). */
void ms_canvas_more(ms_canvas *c, ms_rect r, const char *title, size_t above,
                    size_t below);
/* Encode cp as UTF-8 into tmp; returns the byte count (1..4). */
size_t ms__utf8_encode(uint32_t cp, char tmp[4]);
/* Row y as UTF-8 (trailing blanks kept); for tests and captures. */
void ms_canvas_row(const ms_canvas *c, int y, char *buf, size_t n);
static inline ms_cell
ms_canvas_at(const ms_canvas *c, int x, int y)
{
	return c->cells[(size_t)y * (size_t)c->w + (size_t)x];
}

/* Glyphs that have an ASCII fallback. */
enum ms_glyph {
	MS_G_HLINE,
	MS_G_VLINE,
	MS_G_TL,
	MS_G_TR,
	MS_G_BL,
	MS_G_BR,
	MS_G_FULL,  /* gauge fill */
	MS_G_SHADE, /* gauge preferred-limit zone */
	MS_G_SPAN,  /* a part's time span */
	MS_G_FRONT, /* the frontier line */
	MS_G_COUNT
};
uint32_t ms_glyph(const ms_canvas *c, enum ms_glyph g);
/* One of 8 bar heights (0..7) for sparklines. */
uint32_t ms_spark_glyph(const ms_canvas *c, int level);

/* ---- Formatting (fmt.c) --------------------------------------------------
 * Fixed-width human forms; each writes into buf[0..n) and returns buf. */
char *ms_fmt_bytes(char *buf, size_t n, uint64_t v); /* "12.3M" */
char *ms_fmt_count(char *buf, size_t n, uint64_t v); /* "162.2k" */
char *ms_fmt_ns(char *buf, size_t n, uint64_t ns);   /* "3.54ms" */
/* Logical time as "HH:MM:SS" within the day from day_start; "+1d
 * HH:MM:SS" on a later day, "-1d HH:MM:SS" (the clock of the day before)
 * before it. At most 12 columns for a week either side
 * (MS_CLOCK_WIDE). */
#define MS_CLOCK_WIDE 12
char *ms_fmt_clock(char *buf, size_t n, int64_t t, int64_t day_start);
char *ms_fmt_speed(char *buf, size_t n, double multiple); /* "60x", "max" */
/* The one-line form of an event the filter matches against. */
char *ms_fmt_event_line(char *buf, size_t n, const ms_tui_event *e,
                        int64_t day_start);
/* Parse a logical time "HH:MM[:SS]" (optionally "+1d ") relative to
 * day_start, or "#N"/"N" as a merge number. */
bool ms_parse_target(const char *s, int64_t day_start, ms_tui_target *out);

/* ---- Panels ------------------------------------------------------------ */

/* A panel draws into its rectangle of the canvas from the view; it never
 * calls curses. */
typedef struct ms_panel_class {
	const char *name;  /* "inventory" */
	const char *title; /* shown in the border */
	enum ms_panel_id slot;
	void (*draw)(ms_canvas *c, ms_rect r, const ms_tui_view *v);
} ms_panel_class;

extern const ms_panel_class ms_panel_status;
extern const ms_panel_class ms_panel_inventory;
extern const ms_panel_class ms_panel_timeline;
/* The timeline's window for ui.zoom 0, 1, 2: 24 h, 6 h, 1 h (ns). */
int64_t ms__timeline_span(int zoom);
extern const ms_panel_class ms_panel_selection;
extern const ms_panel_class ms_panel_staging;
extern const ms_panel_class ms_panel_plugins;
extern const ms_panel_class ms_panel_events;
extern const ms_panel_class ms_panel_footer;
/* Rows the footer needs at w columns: 1, or a message wider than the
 * line wrapped at spaces, up to MS_FOOTER_MAX_H. */
int ms__footer_rows(const ms_tui_view *v, int w);
extern const ms_panel_class ms_panel_help;
/* Lines of the help overlay (keys, a blank, the legend). */
size_t ms__help_lines(void);
/* What the details overlay last counted the lines of, and their count:
 * the width, a copy of the selected merge, part or link (and the day's
 * start its clock reads from), so a scroll key lays the details out
 * again only when what they show or the box's width has changed.
 * Zeroed: nothing counted yet. */
typedef struct ms_detail_memo {
	bool valid;
	int kind; /* what is shown (enum in panel_detail.c) */
	int w;
	int64_t day_start;
	union {
		ms_tui_event event;
		ms_tui_part part;
		ms_tui_plugin link;
	} what;
	size_t lines;
} ms_detail_memo;
/* Lines the details overlay holds for what is selected, laid out w
 * columns wide (the box's inner width; from 80 in two columns). memo
 * (may be NULL) keeps the count for the next call while w and what is
 * selected stay the same, byte for byte. */
size_t ms__detail_lines(const ms_tui_view *v, int w, ms_detail_memo *memo);
extern const ms_panel_class ms_panel_detail;
extern const ms_panel_class ms_panel_breakpoints;

/* Indices (into v->events) of the events the filter shows, oldest first;
 * returns how many. idx must hold MS_VIEW_MAX_EVENTS. */
size_t ms_events_visible(const ms_tui_view *v, size_t *idx);
/* Index into v->events of the selected event, or -1 if none. */
long ms_events_selected(const ms_tui_view *v);
/* Rows of the event list in a box of inner size inner_w x inner_h (less the
 * lines of a frozen: command), and the first
 * one shown (a position in idx[0..n), from ms_events_visible). */
int ms__events_rows(const ms_tui_view *v, int inner_w, int inner_h);
/* The figures an event's row in the log shows (time, lane, inputs, rows
 * in>out, wall, class, reason), one blank between them, into buf. */
void ms__event_row_text(char *buf, size_t n, const ms_tui_event *e,
                        int64_t day_start);
size_t ms__events_top(const ms_tui_view *v, const size_t *idx, size_t n,
                      int rows);
/* Lines of the gates and reconciliation shown at DONE, wrapped at an
 * area w columns wide (80 when w < 1). */
size_t ms__gates_lines(const ms_tui_view *v, int w);
/* The first inventory row shown when `rows` fit. */
size_t ms__inventory_top(const ms_tui_view *v, int rows);
/* Rows of chain links in a plugins box inner_h high (the line of a merge
 * in Decide is kept when links would fill it), and the first link shown,
 * so that the selected one is. */
int ms__plugins_rows(const ms_tui_view *v, int inner_h);
size_t ms__plugins_top(const ms_tui_view *v, int rows);

/* Attribute for a sampling classification ("executed", ...). */
uint16_t ms__class_attr(const char *klass, bool failed);
/* Name of a state: "RUNNING", "PAUSED", "BREAK", "DONE". */
const char *ms__state_name(enum ms_tui_state st);

/* Lay out and draw a whole frame for a w x h screen. */
int ms_render_frame(ms_canvas *c, const ms_tui_view *v, int w, int h);

/* ---- Keys -------------------------------------------------------------- */

/* Key codes beyond Unicode, independent of curses. */
enum {
	MS_KEY_NONE = -1,
	MS_KEY_BASE = 0x110000,
	MS_KEY_UP = MS_KEY_BASE,
	MS_KEY_DOWN,
	MS_KEY_LEFT,
	MS_KEY_RIGHT,
	MS_KEY_PGUP,
	MS_KEY_PGDN,
	MS_KEY_HOME,
	MS_KEY_END,
	MS_KEY_ENTER,
	MS_KEY_BACKSPACE,
	MS_KEY_DELETE,
	MS_KEY_ESC,
	MS_KEY_TAB,
	MS_KEY_BTAB,
	MS_KEY_RESIZE,
	MS_KEY_MOUSE, /* a mouse event: ms_screen_mouse says which */
	MS_KEY_F0,    /* MS_KEY_F0 + n is Fn */
};

/* A mouse event, in screen cells. */
enum ms_mouse_kind {
	MS_MOUSE_CLICK = 0, /* button 1 pressed */
	MS_MOUSE_WHEEL_UP = 1,
	MS_MOUSE_WHEEL_DOWN = 2,
};
typedef struct ms_mouse {
	enum ms_mouse_kind kind;
	int x, y;
} ms_mouse;
#define MS_KEY_F(n) (MS_KEY_F0 + (n))
#define MS_KEY_CTRL(c) ((c)&0x1f)

struct ms_tui_session;

/* One binding of the key table. */
typedef struct ms_key_binding {
	int key;                /* main key */
	int alt;                /* second key (an F-key) or MS_KEY_NONE */
	const char *keys_label; /* "space", "g", "?/F1" */
	const char *fname;      /* footer label next to its F-key, or NULL */
	const char *help;
	void (*act)(struct ms_tui_session *s);
} ms_key_binding;

extern const ms_key_binding ms_key_table[];
extern const size_t ms_key_table_len;
/* The binding for key k in normal mode, or NULL. */
const ms_key_binding *ms_keys_lookup(int k);

/* Speed steps for +/-, in logical seconds per wall second; the last is 0
 * ("max"). */
extern const double ms_speed_steps[];
extern const size_t ms_speed_steps_len;

/* ---- Session ----------------------------------------------------------- */

/* Entries of prompt history kept per kind of prompt. */
#define MS_HIST_MAX 16

/* A TUI session without the screen: the view, the controller, and what
 * keys do. ms_tui_run owns one; tests drive one directly. */
typedef struct ms_tui_session {
	const ms_tui_ctl *ctl;
	ms_tui_view *view;
	size_t speed_step;
	bool quit;
	bool redraw; /* full repaint requested (ctrl-L) */
	bool dirty;  /* something changed; draw soon */
	/* A `g` in progress runs at full speed; go_speed is the speed to
	 * restore when the run stops for whatever reason. */
	bool go_active;
	double go_speed;
	ms_tui_target go_tgt; /* where that `g` runs to */
	/* That `g` (or `[`, `{`) is on its way and has not been seen to
	 * stop: the next `[` or `{` counts back from go_tgt, where the run
	 * is going, not from the view, which still shows the way there
	 * (three quick `[` went back one merge, not three). A speed key
	 * leaves it on its way; a pause or a stop ends it. */
	bool go_inflight;
	/* `]`, `n` or `.` is on its way to a stop whose place is not known
	 * before it is there (the next breakpoint, barrier or point), and
	 * has not been seen to stop. */
	bool stop_inflight;
	char stop_key; /* which of them: '.', 'n' or ']' */
	/* A pause was asked and the run has not been seen to stop: it
	 * stops at its next point (a publication, a barrier, the end),
	 * which may be far (the verdict oracle, a long merge). Space then
	 * runs on, as the view still shows RUNNING (a second space asked
	 * for the pause again, and the run stopped all the same). */
	bool pause_asked;
	/* The footer's message is the "pausing ..." of that pause: it goes
	 * when the run is seen stopped, also when the first look after the
	 * key sees it stopped already (it stayed beside PAUSED until the
	 * run moved). Any other message clears it (ms_session_say). */
	bool pausing_said;
	/* `[` and `{` pressed while the run is on its way to a stop they
	 * cannot count back from (stop_inflight, or a go to a time, or to a
	 * merge for `{`), and `.` or `n` pressed again while the one before
	 * is on its way, in order: done where it stops
	 * (ms__session_observe), each counting back from the one before (they
	 * counted from the view, which still showed the way there). A pause,
	 * `r` or a `g` drops them. */
	char back_keys[8];
	size_t nback;
	/* The new event database that `g` records to when it re-runs the
	 * day from its start ("" when it went back in the same one): said
	 * again where it stops. */
	char go_db[sizeof(((ms_tui_view *)0)->db_path)];
	/* The day's last merge number (the finalize's) once the session has
	 * seen it, 0 before: a replay of the same day has the same merges,
	 * so a `g #N` past it is refused. */
	uint64_t day_last_merge;
	/* Where the replay was when the footer message was said (set at
	 * the first snapshot after it): a message that is not an error is
	 * stale, and cleared, once the replay stops somewhere else or starts
	 * running again. */
	bool msg_stamped;
	uint64_t msg_where;
	/* The message stays until the next key wherever the replay goes
	 * (`r`'s, naming the new database: the restarted run stopped at
	 * its first breakpoint within a second and took it away). */
	bool msg_keep;
	const char *program;          /* ms_tui_opts.program, or "mergescope" */
	/* Every freeze's merge-once command of the session, one per line,
	 * printed on quit (owned, NULL before the first); those that found
	 * no memory are counted in frozen_lost. */
	char *frozen_all;
	size_t frozen_all_len;
	unsigned frozen_lost;
	/* A freeze under way (f; ms_tui_ctl_ops.freeze), of merge
	 * freeze_seq: ms__session_freeze_poll takes its result. */
	bool freezing;
	uint64_t freeze_seq;
	enum ms_tui_state last_state; /* at the previous snapshot */
	char last_ck_note[MS_VIEW_TEXT]; /* checkpoint note last said */
	/* The last session's breakpoints and filter on offer (borrowed
	 * from ms_tui_opts until answered). */
	size_t offer_nbreaks;
	const char *const *offer_breaks;
	const char *offer_filter;
	/* The format of the export being asked for (and the next default). */
	enum ms_tui_format export_fmt;
	/* What was submitted in each kind of prompt, oldest first, for
	 * up/down; hist_pos counts back from the newest while browsing. */
	char hist[MS_PROMPT_COUNT][MS_HIST_MAX][MS_VIEW_TEXT];
	size_t hist_n[MS_PROMPT_COUNT];
	size_t hist_pos;
	/* The screen size frames are drawn at (0 until known): Tab skips a
	 * panel the layout leaves out. */
	int screen_w, screen_h;
	/* The details' line count for scroll keys (overlay_scroll). */
	ms_detail_memo detail_memo;
	/* Draws the screen now, outside a frame: the quit says it waits
	 * for a freeze under way before it does (ms_tui_run sets it; NULL
	 * draws nothing). */
	void (*draw_now)(void *arg);
	void *draw_arg;
} ms_tui_session;

int ms_session_init(ms_tui_session *s, const ms_tui_ctl *ctl);
void ms_session_release(ms_tui_session *s);
/* Handle one key (normal mode, prompt or overlay). */
void ms_session_key(ms_tui_session *s, int key);
/* The screen is w x h: focus leaves a panel the layout has folded away. */
void ms_session_resize(ms_tui_session *s, int w, int h);
/* Refresh the view from the controller (keeps ui). */
int ms_session_snapshot(ms_tui_session *s);
/* After each snapshot: restore the speed when a `g` has stopped, clear a
 * footer message the replay has moved past. */
void ms__session_observe(ms_tui_session *s);
/* The result of the freeze under way, if there is one and it is done (or
 * once it is, with wait): its command shown and kept, or its error. */
void ms__session_freeze_poll(ms_tui_session *s, bool wait);
/* A mouse event on a w x h screen: a click focuses the panel under it and
 * selects the row clicked (events, inventory, plugins); the wheel scrolls
 * the list under the pointer, or the help or details; a click or the
 * wheel also declines the offer of the last session's breakpoints. */
void ms_session_mouse(ms_tui_session *s, const ms_mouse *m, int w, int h);
/* Offer the last session's breakpoints and filter (y/N prompt). */
void ms__session_offer(ms_tui_session *s, const char *const *breaks,
                       size_t nbreaks, const char *filter);
/* Close the offer unanswered (no breakpoint or filter set again). */
void ms__offer_decline(ms_tui_session *s);
/* Set the footer message. */
void ms_session_say(ms_tui_session *s, bool error, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* ---- Search (search.c) ------------------------------------------------- */

/* Enter in the search prompt: remember text, select the first match from
 * the current row on. */
void ms__search_submit(ms_tui_session *s, const char *text);
/* The next (dir > 0) or previous match of the last search, wrapping;
 * include_current also accepts the selected row. */
void ms__search_step(ms_tui_session *s, int dir, bool include_current);

/* ---- Export prompts (prompt_export.c) ----------------------------------- */

/* Open footer prompt p with init as its text, cursor at the end. */
void ms__prompt_open(ms_tui_session *s, enum ms_tui_prompt p, const char *init);
/* The same, with init an offered default (ui.prefilled): typing replaces
 * it. */
void ms__prompt_offer(ms_tui_session *s, enum ms_tui_prompt p,
                      const char *init);

/* `e`: open the format field (the last format used). */
void ms__export_begin(ms_tui_session *s);
/* `:export FMT [PATH]`: the same steps with the fields given. */
void ms__export_command(ms_tui_session *s, const char *args);
/* Enter in an export prompt (format, path or overwrite confirmation). */
void ms__export_submit(ms_tui_session *s, enum ms_tui_prompt p,
                       const char *line);
/* The default file: next to the event database, named after it, with
 * "-filtered" when a filter is on, and the format's extension. False
 * when it does not fit in n whole (or the database's path may have been
 * cut in the view): then nothing is offered rather than a cut path. */
bool ms__export_default_path(char *buf, size_t n, const ms_tui_view *v,
                             enum ms_tui_format f);
/* "~/x" -> "$HOME/x"; other paths as they are. False if it does not fit. */
bool ms__path_expand(const char *in, char *out, size_t n);
/* Tab in a path field: complete line[0..n) in place, cursor at its end. */
unsigned ms__path_complete(char *line, size_t n, size_t *cursor,
                           char *cands, size_t cn);

/* ---- Screen (screen.c: the only curses user) --------------------------- */

typedef struct ms_screen ms_screen;
typedef struct ms_screen_opts {
	FILE *out;        /* NULL = stdout */
	FILE *in;         /* NULL = stdin */
	const char *term; /* NULL = $TERM */
	bool color;       /* try colours (after NO_COLOR was applied) */
	bool signals;     /* install SIGINT/SIGTERM/SIGHUP flag handlers */
	/* Readable when the program has news to draw: a key wait ends
	 * then while the screen listens (ms_screen_listen; ms_screen_woken
	 * says so). 0 = none (read, non-blocking, never closed here). */
	int wake_fd;
} ms_screen_opts;

int ms_screen_open(ms_screen **out, const ms_screen_opts *o, ms_errbuf *eb);
/* Restore the terminal and free; NULL ok; safe to call twice. */
void ms_screen_close(ms_screen *s);
void ms_screen_size(const ms_screen *s, int *w, int *h);
/* Force a size (tests, and after KEY_RESIZE). */
int ms_screen_resize(ms_screen *s, int w, int h);
bool ms_screen_has_color(const ms_screen *s);
/* The locale can show Unicode glyphs (UTF-8 codeset). */
bool ms_screen_unicode(void);
/* Copy the canvas into the curses screen and update the terminal; true
 * when anything differed from the last frame drawn (or it was forced). */
bool ms_screen_draw(ms_screen *s, const ms_canvas *c);
/* Next key, waiting up to timeout_ms (-1: no limit); MS_KEY_NONE on
 * timeout, a signal, or a wake (ms_screen_opts.wake_fd). */
int ms_screen_key(ms_screen *s, int timeout_ms);
/* Whether key waits also end on a wake (off when opened): a program
 * whose news come many times a frame listens only while it has nothing
 * else to draw. */
void ms_screen_listen(ms_screen *s, bool on);
/* A wake was read since the last call (and clears it). */
bool ms_screen_woken(ms_screen *s);
/* How many waits for a key or a wake the screen has begun (a test's: a
 * loop that spins shows in it). Only the session's thread writes it. */
extern unsigned long ms__screen_waits;
/* After MS_KEY_MOUSE: the event. */
void ms_screen_mouse(const ms_screen *s, ms_mouse *out);
/* Repaint everything on the next draw (ctrl-L). */
void ms_screen_invalidate(ms_screen *s);
/* Read row y of the curses screen back as UTF-8 (tests). */
void ms_screen_row(ms_screen *s, int y, char *buf, size_t n);
/* Attributes of the cell at (x, y) as MS_A_* bits (tests). */
uint16_t ms_screen_attr(ms_screen *s, int x, int y);
/* Should colours be used? False with --no-color (no_color_opt) or a
 * non-empty NO_COLOR in the environment (no-color.org). */
bool ms__color_wanted(bool no_color_opt);

/* The session loop's frame pacing (app.c): frame_ns apart while the run
 * runs or the screen changes; while the run is stopped and a frame drew
 * nothing new, each such frame doubles the wait, up to MS__IDLE_MAX_NS
 * (or waits idle_ns at once). Returns the wait before the next frame. */
#define MS__IDLE_MAX_NS 1000000000LL
typedef struct ms__pacer {
	int64_t frame_ns, wait_ns;
	/* 0: MS__IDLE_MAX_NS, by doubling. Else (the screen is woken by
	 * the controller's news) the first frame that draws nothing new
	 * waits this long at once. */
	int64_t idle_ns;
} ms__pacer;
int64_t ms__pace_next(ms__pacer *p, bool stopped, bool changed);
/* A signal asked us to stop (SIGINT, SIGTERM, SIGHUP). */
bool ms_screen_interrupted(void);

/* ---- Commands ---------------------------------------------------------- */

struct ms__opt;      /* cli.h */
struct ms__cmd_args; /* cli.h */

/*
 * One command, as tmux's cmd_entry: its option table comes with it, and
 * the dispatcher (ms__cmd_main) answers --help, parses argv against the
 * table and checks every value with a fixed set of choices before exec
 * runs, so a command never sees an option it did not declare. A command
 * that reads words before its options (fixture's build and check) sets
 * run instead and dispatches to its own descriptors.
 */
typedef struct ms_cmd {
	const char *name;
	const char *summary;        /* one line for the command list */
	const char *usage;          /* the --help text */
	const struct ms__opt *opts; /* the option table (cli_opts.c) */
	size_t nopts;
	int (*exec)(const struct ms__cmd_args *a, FILE *out, FILE *err);
	int (*run)(int argc, char **argv, FILE *out, FILE *err);
} ms_cmd;

extern const ms_cmd ms_cmd_tui;
extern const ms_cmd ms_cmd_run;
extern const ms_cmd ms_cmd_fixture;
extern const ms_cmd ms_cmd_export;
extern const ms_cmd ms_cmd_report;
extern const ms_cmd ms_cmd_merge_once;
extern const ms_cmd ms_cmd_clean;
extern const ms_cmd ms_cmd_bench;

/* Exit status of a command whose layer is not in this build. */
#define MS_EXIT_NOT_BUILT 2
/* Exit status of a usage error. */
#define MS_EXIT_USAGE 64

/* Does argv ask c for help: "--help" or "-h" where an option may stand
 * (before "--", not an option's value; for a command without an option
 * table, its first word)? -1 if not; else 0 after printing c's usage on
 * out, or MS_EXIT_USAGE after one line on err when another word is none
 * of c's options or their values (a stray word, an unknown option). */
int ms__cmd_help(const ms_cmd *c, int argc, char **argv, FILE *out,
                 FILE *err);
/* "mergescope NAME: LAYER is not built yet ..." and MS_EXIT_NOT_BUILT. */
int ms__cmd_not_built(const ms_cmd *c, const char *layer, FILE *err);

#endif
