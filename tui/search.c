/*
 * search.c - `s` searches the focused list, `;` goes to the next match and
 * `,` to the previous one, wrapping round (htop's and less's habit). The
 * event log matches a merge's one-line summary (as the filter's free text
 * does), the inventory a part's hex ID, the plugins a link's name; case is
 * ignored. A search moves the selection only: the list keeps its filter
 * and order.
 */
#include "tui_int.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static bool
has_ci(const char *hay, const char *needle)
{
	size_t n = strlen(needle);
	for (; *hay; hay++) {
		size_t i = 0;
		while (i < n && hay[i] &&
		       tolower((unsigned char)hay[i]) ==
		               tolower((unsigned char)needle[i]))
			i++;
		if (i == n)
			return true;
	}
	return n == 0;
}

/* The text of row i of the focused list, and how many rows it has. */
static size_t
rows_of(const ms_tui_view *v, size_t *idx)
{
	switch (v->ui.focus) {
	case MS_FOCUS_EVENTS:
		return ms_events_visible(v, idx);
	case MS_FOCUS_INVENTORY:
		return v->nparts;
	default:
		return v->nplugins;
	}
}

static void
row_text(const ms_tui_view *v, const size_t *idx, size_t i, char *buf, size_t n)
{
	switch (v->ui.focus) {
	case MS_FOCUS_EVENTS: {
		/* What its row shows, then its summary (inputs, output):
		 * a figure read off the row ("2210", "00:32:09") was "not
		 * in this list". */
		const ms_tui_event *e = &v->events[idx[i]];
		char row[160];
		ms__event_row_text(row, sizeof(row), e, v->day_start);
		if (e->summary[0])
			snprintf(buf, n, "#%" PRIu64 " %s %s", e->seq, row,
			         e->summary);
		else {
			char line[256];
			snprintf(buf, n, "%s %s",
			         ms_fmt_event_line(line, sizeof(line), e,
			                           v->day_start),
			         row);
		}
		break;
	}
	case MS_FOCUS_INVENTORY:
		snprintf(buf, n, "%016" PRIx64, v->parts[i].id);
		break;
	default:
		snprintf(buf, n, "%s", v->plugins[i].name);
		break;
	}
}

static size_t
current_row(const ms_tui_view *v, const size_t *idx, size_t n)
{
	switch (v->ui.focus) {
	case MS_FOCUS_EVENTS: {
		long sel = ms_events_selected(v);
		for (size_t i = 0; i < n; i++)
			if ((long)idx[i] == sel)
				return i;
		return n ? n - 1 : 0;
	}
	case MS_FOCUS_INVENTORY:
		return v->ui.part_sel;
	default:
		return v->ui.plugin_sel;
	}
}

static void
select_row(ms_tui_view *v, const size_t *idx, size_t i)
{
	switch (v->ui.focus) {
	case MS_FOCUS_EVENTS:
		v->ui.event_sel = v->events[idx[i]].seq;
		break;
	case MS_FOCUS_INVENTORY:
		v->ui.part_sel = i;
		break;
	default:
		v->ui.plugin_sel = i;
		break;
	}
}

void
ms__search_step(ms_tui_session *s, int dir, bool include_current)
{
	ms_tui_view *v = s->view;
	if (!v->ui.search[0]) {
		ms_session_say(s, true, "no search yet: s searches");
		return;
	}
	size_t idx[MS_VIEW_MAX_EVENTS];
	size_t n = rows_of(v, idx);
	if (n == 0) {
		ms_session_say(s, true, "search: the list is empty");
		return;
	}
	size_t cur = current_row(v, idx, n);
	size_t matches = 0, hit = n, rank = 0;
	char text[sizeof(v->events[0].summary) + 200]; /* "#seq row summary" */
	for (size_t i = 0; i < n; i++) {
		row_text(v, idx, i, text, sizeof(text));
		if (has_ci(text, v->ui.search))
			matches++;
	}
	for (size_t k = include_current ? 0 : 1; k <= n && hit == n; k++) {
		size_t i = dir > 0 ? (cur + k) % n : (cur + n - k % n) % n;
		row_text(v, idx, i, text, sizeof(text));
		if (has_ci(text, v->ui.search))
			hit = i;
	}
	if (hit == n) {
		ms_session_say(s, true, "search: no \"%s\" in this list",
		               v->ui.search);
		return;
	}
	for (size_t i = 0; i <= hit; i++) {
		row_text(v, idx, i, text, sizeof(text));
		rank += has_ci(text, v->ui.search);
	}
	select_row(v, idx, hit);
	ms_session_say(s, false,
	               "\"%s\": match %zu of %zu (; next, , previous)",
	               v->ui.search, rank, matches);
}

void
ms__search_submit(ms_tui_session *s, const char *text)
{
	snprintf(s->view->ui.search, sizeof(s->view->ui.search), "%s", text);
	ms__search_step(s, 1, true);
}
