/*
 * panel_help.c - the help overlay (? or F1): every binding of the key
 * table with what it does, then how to read the panels, the commands, the
 * breakpoint specs and go-to targets. Drawn from the key table itself so
 * help and behaviour agree; it scrolls (ui.help_scroll) when the screen is
 * shorter than the list.
 */
#include "tui_int.h"

#include <stdio.h>
#include <string.h>

static const char *const legend[] = {
	"Status: state block RUNNING / PAUSED / BREAK / DONE, logical time,",
	"  frontier (now - 2h grace), publications k/N, merges (sampled and",
	"  bypassed), fixture, variant, phase, speed, database.",
	"Inventory: picker order (size asc, newer first); s = M mature /",
	"  H hot; claim = merge holding the part; bold = pending input.",
	"Timeline: each part's time span; heavy = mature, light = hot,",
	"  solid = pending selection; the vertical line is the frontier.",
	"Staging: live/peak staged bytes, | = preferred limit, bar = hard;",
	"  preferred - until a merge has sampled.",
	"Sizes: K, M, G are powers of 1024 (1.00M = 1 MiB); counts (rows,",
	"  traces) k, M of 1000.",
	"Filter: lane=L class=C reason=R phase=P seq=A..B seq>=N #N; other",
	"  words are text in the merge's summary. e exports what it shows.",
	"Up/Down/j/k/PgUp/PgDn/Home/End move in the focused panel; End follows.",
	"Prompts: up/down recall what they were given; Esc or F10 cancels;",
	"  they take ASCII only.",
	"Mouse: a click focuses a panel and selects the row under it; the",
	"  wheel scrolls the list under the pointer, or this help.",
	"Breakpoints (b): a adds, space enables/disables, d deletes.",
	"Export (e): format, then path (Tab completes or lists; ~/ is home);",
	"  an existing file is written over only after y.",
	"At start: y sets the last session's breakpoints and filter again.",
	"",
	"Commands (:): run, pause, step, next, continue, break SPEC, go T,",
	"  speed X|max, export FMT [PATH], filter TEXT, freeze, help, quit.",
	"Breakpoint specs (b then a, :break, --break): mature, sampling,",
	"  merge=N, time=HH:MM[:SS] (first barrier at or after), part=HEX,",
	"  lane=fast|slow|finalize, depth>=D.",
	"Go to (g): HH:MM[:SS], +1d HH:MM (cooldown), #N (a merge); a point",
	"  behind goes back to a checkpoint and re-runs to it (same database;",
	"  with no checkpoint before it, the day again into a new one).",
};

#define NLEGEND (sizeof(legend) / sizeof(legend[0]))

size_t
ms__help_lines(void)
{
	return ms_key_table_len + 1 + NLEGEND;
}

static void
draw(ms_canvas *c, ms_rect r, const ms_tui_view *v)
{
	size_t n = ms__help_lines();
	char title[64];
	ms_rect in = ms_canvas_box(c, r, "", true);
	size_t top = v->ui.help_scroll;
	size_t h = in.h > 0 ? (size_t)in.h : 0;
	if (top + h > n)
		top = n > h ? n - h : 0;
	snprintf(title, sizeof(title), "Help  %zu-%zu of %zu%s  (Esc closes)",
	         top + 1, top + h < n ? top + h : n, n,
	         top + h < n ? ", down scrolls" : "");
	ms_canvas_box(c, r, title, true);
	for (size_t i = top; i < n && i < top + h; i++) {
		int y = in.y + (int)(i - top);
		if (i < ms_key_table_len) {
			const ms_key_binding *b = &ms_key_table[i];
			ms_canvas_text(c, in.x + 1, y, 8, b->keys_label,
			               MS_A_BOLD);
			ms_canvas_text(c, in.x + 10, y, in.w - 10, b->help, 0);
		} else if (i > ms_key_table_len) {
			ms_canvas_text(c, in.x + 1, y, in.w - 1,
			               legend[i - ms_key_table_len - 1],
			               MS_C_MUTED);
		}
	}
}

const ms_panel_class ms_panel_help = {
	.name = "help",
	.title = "Help",
	.slot = MS_PANEL_OVERLAY,
	.draw = draw,
};
