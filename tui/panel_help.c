/*
 * panel_help.c - the help overlay (? or F1): every binding of the key
 * table with what it does, then how to read the panels. Drawn from the key
 * table itself so help and behaviour agree.
 */
#include "tui_int.h"

#include <string.h>

static const char *const legend[] = {
	"Status: state block RUNNING / PAUSED / BREAK / DONE, logical time,",
	"  frontier (now - 2h grace), publications k/N, merges, database.",
	"Inventory: picker order (size asc, newer first); s = M mature /",
	"  H hot; claim = merge holding the part; bold = pending input.",
	"Timeline: each part's time span; heavy = mature, light = hot,",
	"  solid = pending selection; the vertical line is the frontier.",
	"Staging: live/peak staged bytes, | = preferred limit, bar = hard.",
	"Filter: lane=L class=C reason=R phase=P seq=A..B seq>=N #N; other",
	"  words are text in the merge's summary. e exports what it shows.",
	"Arrows/PgUp/PgDn/Home/End move in the focused panel; End follows.",
};

static void
draw(ms_canvas *c, ms_rect r, const ms_tui_view *v)
{
	(void)v;
	ms_rect in = ms_canvas_box(c, r, "Help  (Esc closes)", true);
	int y = in.y;
	int end = in.y + in.h;
	for (size_t i = 0; i < ms_key_table_len && y < end; i++, y++) {
		const ms_key_binding *b = &ms_key_table[i];
		ms_canvas_text(c, in.x + 1, y, 8, b->keys_label, MS_A_BOLD);
		ms_canvas_text(c, in.x + 10, y, in.w - 10, b->help, 0);
	}
	y++;
	for (size_t i = 0; i < sizeof(legend) / sizeof(legend[0]) && y < end;
	     i++, y++)
		ms_canvas_text(c, in.x + 1, y, in.w - 1, legend[i], MS_C_MUTED);
}

const ms_panel_class ms_panel_help = {
	.name = "help",
	.title = "Help",
	.slot = MS_PANEL_OVERLAY,
	.draw = draw,
};
