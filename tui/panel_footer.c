/*
 * panel_footer.c - the bottom line: the prompt being edited (filter,
 * command line, go-to, export, new breakpoint) with its cursor; otherwise
 * the last message (errors stand out), wrapped at spaces onto up to
 * MS_FOOTER_MAX_H lines when it is wider than the screen (the layout gives
 * the footer those rows: ms__footer_rows); otherwise the F-key bar built
 * from the key table, htop style.
 */
#include "tui_int.h"

#include <stdio.h>
#include <string.h>

/* Each prompt's label, and the short one used when the long one would
 * take more than half the line (the break prompt's is 78 columns: at 80
 * the spec typed showed in the last two). */
static const char *
prompt_label(enum ms_tui_prompt p, enum ms_tui_focus f, bool narrow)
{
	/* The search names the list it searches, and by what ("search
	 * the focused list" left the user to work out which one). */
	static const char *const search[MS_FOCUS_COUNT][2] = {
		{ "search events (then ; next, , previous): ",
		  "search events: " },
		{ "search parts by ID (then ; next, , previous): ",
		  "search parts: " },
		{ "search links by name (then ; next, , previous): ",
		  "search links: " },
	};
	switch (p) {
	case MS_PROMPT_FILTER:
		return "/";
	case MS_PROMPT_COMMAND:
		return ":";
	case MS_PROMPT_GOTO:
		return narrow ? "go to: " : "go to (HH:MM[:SS] or #merge): ";
	case MS_PROMPT_EXPORT:
		return narrow ? "export format: "
		              : "export format (jsonl, csv, chrome): ";
	case MS_PROMPT_SEARCH:
		return search[f < MS_FOCUS_COUNT ? f : 0][narrow];
	case MS_PROMPT_EXPORT_PATH:
		return narrow ? "export to: " : "export to (Tab completes): ";
	case MS_PROMPT_BREAK:
		return narrow ? "break on: "
		              : "break on (mature, sampling, merge=N, "
		                "time=HH:MM, part=HEX, lane=L, depth>=D): ";
	default:
		return "";
	}
}

/* What an empty `/` or `:` takes, dim after the cursor, whole or not at
 * all: the label is the one character, which said nothing of either. */
static void
empty_hint(ms_canvas *c, int x, int y, int w, enum ms_tui_prompt p)
{
	static const char filter[] =
	        "  filter the event log: lane= class= reason= phase= "
	        "seq=A..B seq>=N #N, or words; Enter on nothing clears";
	static const char filter_short[] = "  filter the event log";
	static const char command[] =
	        "  run pause step next continue break go speed export "
	        "filter freeze help quit";
	static const char command_short[] = "  command (help lists them)";
	const char *h = p == MS_PROMPT_FILTER    ? filter
	                : p == MS_PROMPT_COMMAND ? command
	                                         : NULL;
	if (!h)
		return;
	if (ms_canvas_cols(h) > w)
		h = p == MS_PROMPT_FILTER ? filter_short : command_short;
	if (ms_canvas_cols(h) <= w)
		ms_canvas_text(c, x, y, w, h, MS_A_DIM);
}

/* A yes/no question about `what` (a path, a list): head, what, tail on
 * one line, `what` shortened (its end kept when keep_end, else its
 * start) so that the question in head and tail always shows. */
static void
draw_question(ms_canvas *c, ms_rect r, uint16_t a, const char *head,
              const char *what, bool keep_end, const char *tail)
{
	int room = r.w - (int)strlen(head) - (int)strlen(tail);
	int x = r.x + ms_canvas_text(c, r.x, r.y, r.w, head, a);
	if (keep_end) {
		x += ms_canvas_text_tail(c, x, r.y, room, what, a);
	} else if ((int)strlen(what) <= room) {
		x += ms_canvas_text(c, x, r.y, room, what, a);
	} else if (room >= 4) {
		x += ms_canvas_text(c, x, r.y, room - 3, what, a);
		x += ms_canvas_text(c, x, r.y, 3, "...", a);
	}
	ms_canvas_text(c, x, r.y, r.x + r.w - x, tail, a);
}

/* A message wider than one line of r keeps its start (what happened)
 * and its end (often the file it happened to: "exported 7 merges as
 * jsonl to /long/path/run.jsonl" lost the file name at 80 columns); "..."
 * stands for the middle. */
static void
draw_line(ms_canvas *c, ms_rect r, const char *m, uint16_t a)
{
	int cols = ms_canvas_cols(m);
	if (cols <= r.w || r.w < 20) {
		ms_canvas_text(c, r.x, r.y, r.w, m, a);
		return;
	}
	int head = r.w / 2;
	const char *rest = m;
	for (int k = 0; *rest && k < head; k++) {
		rest++;
		while (((unsigned char)*rest & 0xc0) == 0x80)
			rest++;
	}
	ms_canvas_text(c, r.x, r.y, head, m, a);
	ms_canvas_text_tail(c, r.x + head, r.y, r.w - head, rest, a);
}

int
ms__footer_rows(const ms_tui_view *v, int w)
{
	const ms_tui_ui *ui = &v->ui;
	if (ui->prompt != MS_PROMPT_NONE || !ui->message[0] || w < 20 ||
	    ms_canvas_cols(ui->message) <= w)
		return 1;
	int n = ms_canvas_wrap(NULL, 0, 0, w, ui->message, 0);
	return n < MS_FOOTER_MAX_H ? n : MS_FOOTER_MAX_H;
}

/* The message in the footer's rows, wrapped at spaces (a go's message,
 * "go 10:00:00: stopped at 09:58:12, the last publication before it:
 * nothing happens until the next one", lost its middle at 80 columns);
 * what does not fit in the last row keeps its start and end there. */
static void
draw_message(ms_canvas *c, ms_rect r, const char *m, uint16_t a)
{
	int y = r.y;
	while (*m == ' ')
		m++;
	for (; y < r.y + r.h - 1 && ms_canvas_cols(m) > r.w; y++) {
		const char *end = ms__wrap_line(m, r.w);
		int col = 0;
		for (const char *q = m; q < end; col++) {
			q++;
			while (q < end && ((unsigned char)*q & 0xc0) == 0x80)
				q++;
		}
		ms_canvas_text(c, r.x, y, col, m, a);
		m = end;
		while (*m == ' ')
			m++;
	}
	draw_line(c, (ms_rect){ r.x, y, r.w, 1 }, m, a);
}

static void
draw(ms_canvas *c, ms_rect r, const ms_tui_view *v)
{
	const ms_tui_ui *ui = &v->ui;
	if (ui->prompt == MS_PROMPT_RESTORE) {
		draw_question(c, r, MS_A_BOLD | MS_C_ACCENT,
		              "last time on this fixture: ", ui->offer, false,
		              "; again? (y/N) ");
		return;
	}
	if (ui->prompt == MS_PROMPT_CONFIRM) {
		draw_question(c, r, MS_A_BOLD | MS_C_ALERT, "", ui->export_path,
		              true, " exists: write over it? (y/N) ");
		return;
	}
	if (ui->prompt != MS_PROMPT_NONE) {
		const char *label = prompt_label(ui->prompt, ui->focus, false);
		if ((int)strlen(label) > r.w / 2)
			label = prompt_label(ui->prompt, ui->focus, true);
		int x = r.x + ms_canvas_text(c, r.x, r.y, r.w, label,
		                             MS_A_BOLD | MS_C_ACCENT);
		/* The field from x to the line's end, the cursor's cell
		 * included. Text longer than it scrolls to keep the cursor
		 * on screen, and a "<" or ">" in the field's first or last
		 * cell says that text goes on that way (nothing said so). */
		int fw = r.x + r.w - x;
		size_t len = strlen(ui->cmdline);
		size_t cur = ui->cursor <= len ? ui->cursor : len;
		size_t off = 0;
		bool left = false, right = false;
		int tx = x, tn = fw; /* where the text goes, its cells */
		if (fw >= 4 && len + 1 > (size_t)fw) {
			if (cur + 2 <= (size_t)fw) {
				right = true; /* the start, then ">" */
				tn = fw - 1;
			} else {
				/* "<", then the text to the cursor, in the last
				 * cell (at the text's end) or the one before
				 * ">" or a blank. */
				left = true;
				off = cur == len ? len - (size_t)(fw - 2)
				                 : cur - (size_t)(fw - 3);
				right = off + (size_t)(fw - 2) < len;
				tx = x + 1;
				tn = fw - 2;
			}
		} else if (fw > 0 && cur + 1 > (size_t)fw) {
			off = cur + 1 - (size_t)fw; /* too narrow for marks */
		}
		/* An offered default shows selected, and says that typing
		 * replaces it where the line has room. */
		int tw = ms_canvas_text(c, tx, r.y, tn, ui->cmdline + off,
		                        ui->prefilled ? MS_A_REV : 0);
		if (left)
			ms_canvas_text(c, x, r.y, 1, "<",
			               MS_A_BOLD | MS_C_ACCENT);
		if (right)
			ms_canvas_text(c, r.x + r.w - 1, r.y, 1, ">",
			               MS_A_BOLD | MS_C_ACCENT);
		static const char hint[] = "  (typing replaces it)";
		if (ui->prefilled && !left && !right &&
		    tw + (int)sizeof(hint) <= fw - 1)
			ms_canvas_text(c, tx + tw, r.y, fw - 1 - tw, hint,
			               MS_A_DIM);
		if (!ui->cmdline[0])
			empty_hint(c, tx + 1, r.y, fw - 1, ui->prompt);
		/* Several paths matched the Tab: which (as many as fit). */
		if (ui->ncomplete && !right) {
			char m[MS_VIEW_TEXT + 32];
			snprintf(m, sizeof(m), "  %u matches: %s",
			         ui->ncomplete, ui->complete);
			ms_canvas_text(c, tx + tw, r.y, fw - 1 - tw, m,
			               MS_C_MUTED);
		}
		/* A character it did not take: why nothing showed. */
		if (ui->not_ascii && !right)
			ms_canvas_text(c, tx + tw + 1, r.y, fw - 2 - tw,
			               "  (ASCII only: that character is not "
			               "taken)",
			               MS_C_WARN | MS_A_BOLD);
		int cx = tx + (int)(cur - off);
		ms_canvas_attr(c, cx, r.y, 1, MS_A_REV);
		return;
	}
	if (ui->message[0]) {
		draw_message(c, r, ui->message,
		             ui->message_is_error
		                     ? (MS_C_ALERT | MS_A_BOLD | MS_A_REV)
		                     : MS_C_OK);
		return;
	}
	int x = r.x;
	for (int fn = 1; fn <= 12; fn++) {
		const ms_key_binding *b = NULL;
		for (size_t i = 0; i < ms_key_table_len && !b; i++)
			if (ms_key_table[i].alt == MS_KEY_F(fn) &&
			    ms_key_table[i].fname)
				b = &ms_key_table[i];
		if (!b)
			continue;
		char fk[16];
		snprintf(fk, sizeof(fk), "F%d", fn);
		int need = (int)(strlen(fk) + strlen(b->fname)) + 1;
		if (x + need > r.x + r.w)
			break;
		x += ms_canvas_text(c, x, r.y, r.x + r.w - x, fk, MS_A_BOLD);
		x += ms_canvas_text(c, x, r.y, r.x + r.w - x, b->fname,
		                    MS_A_REV | MS_C_ACCENT);
		x++;
	}
	/* Whatever width is left shows the active filter. */
	if (ui->filter[0] && x + 12 < r.x + r.w)
		ms_canvas_printf(c, x + 1, r.y, r.x + r.w - x - 1, MS_C_WARN,
		                 "/%s", ui->filter);
}

const ms_panel_class ms_panel_footer = {
	.name = "footer",
	.title = NULL,
	.slot = MS_PANEL_FOOTER,
	.draw = draw,
};
