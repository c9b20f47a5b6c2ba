/*
 * panel_detail.c - every field of the selected merge (Enter in the event
 * log) with its inputs, of the selected part (Enter in the inventory) or
 * of the selected sampler link with its latency buckets (Enter in the
 * plugins panel), one per line, in two columns when the box is wide enough. The
 * details are laid out whole in a canvas of their own and the box shows the
 * rows from ui.detail_scroll on, so on a short screen they scroll (as the help
 * does) instead of ending where the box ends.
 */
#include "tui_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

struct kv {
	const char *k;
	char v[128];
};

/* One field at (x, y) of a column colw wide, c NULL to measure it: its
 * key in 17 columns (a longer one, a link's name, on a line of its own)
 * and its value wrapped at spaces in the columns after (a link's figures
 * were cut at the box's edge); returns its lines. */
static int
put_kv(ms_canvas *c, int x, int y, int colw, const struct kv *kv)
{
	int own = strlen(kv->k) > 17;
	if (c)
		ms_canvas_text(c, x, y, own ? colw - 1 : 18, kv->k, MS_C_MUTED);
	int lines = ms_canvas_wrap(c, x + 18, y + own, colw - 19, kv->v, 0);
	return own + (lines > 0 ? lines : 1);
}

/* The fields in one or two columns, the first as tall as the second or
 * one field taller; returns the rows used. */
static int
put_list(ms_canvas *c, ms_rect in, const struct kv *kv, size_t n)
{
	int cols = in.w >= 80 ? 2 : 1;
	int colw = in.w / cols;
	int h[48], total = 0;
	if (n > 48)
		n = 48;
	for (size_t i = 0; i < n; i++)
		total += h[i] = put_kv(NULL, 0, 0, colw, &kv[i]);
	/* The split that makes the taller column shortest (the later of
	 * equal ones: the first column takes the odd field). */
	size_t split = n;
	if (cols == 2) {
		int best = total + 1, first = 0;
		for (size_t k = 0; k <= n; k++) {
			int tall =
			        first > total - first ? first : total - first;
			if (tall <= best) {
				best = tall;
				split = k;
			}
			if (k < n)
				first += h[k];
		}
	}
	int rows = 0;
	for (int col = 0; col < cols; col++) {
		int y = in.y;
		size_t i0 = col ? split : 0, i1 = col ? n : split;
		for (size_t i = i0; i < i1; i++)
			y += put_kv(c, in.x + 1 + col * colw, y, colw, &kv[i]);
		if (y - in.y > rows)
			rows = y - in.y;
	}
	return rows < in.h ? rows : in.h;
}

/* The merge's inputs below its fields, as many as fit, then how many
 * more there are. */
static int
put_inputs(ms_canvas *c, ms_rect in, int y, const ms_tui_view *v,
           const ms_tui_event *e)
{
	if (y + 2 >= in.y + in.h || e->ninputs == 0)
		return y;
	char line[160], a[32], b[32];
	snprintf(line, sizeof(line), "%-3s %-16s %5s %10s %9s  %-12s %s", "#",
	         "input part", "depth", "rows", "bytes", "max time",
	         "maturity");
	ms_canvas_text(c, in.x + 1, y++, in.w - 2, line, MS_C_MUTED);
	uint32_t shown = 0;
	for (; shown < e->ninputs_kept && y < in.y + in.h; shown++, y++) {
		bool last_row = y == in.y + in.h - 1;
		if (last_row && shown + 1 < e->ninputs)
			break; /* keep the row for "+N more" */
		const ms_tui_input *p = &e->inputs[shown];
		snprintf(line, sizeof(line),
		         "%-3u %016" PRIx64 " %5u %10" PRIu64 " %9s  %-12s %s",
		         shown + 1, p->id, p->depth, p->rows,
		         ms_fmt_bytes(a, sizeof(a), p->bytes),
		         ms_fmt_clock(b, sizeof(b), p->max_ts, v->day_start),
		         p->mature ? "mature" : "hot");
		ms_canvas_text(c, in.x + 1, y, in.w - 2, line, 0);
	}
	if (shown < e->ninputs && y < in.y + in.h) {
		snprintf(line, sizeof(line), "+%u more input%s",
		         e->ninputs - shown,
		         e->ninputs - shown == 1 ? "" : "s");
		ms_canvas_text(c, in.x + 1, y++, in.w - 2, line, MS_C_MUTED);
	}
	return y;
}

#define KV(key, ...)                                                           \
	do {                                                                   \
		kv[n].k = key;                                                 \
		snprintf(kv[n].v, sizeof(kv[n].v), __VA_ARGS__);               \
		n++;                                                           \
	} while (0)

/* A batch's charged bytes and traces, "(full)" after the one that cut
 * it (the recorded reason, as `report` prints it, read "65536 traces,
 * traces"), or why else it ended; into buf. */
static const char *
batch_text(char *buf, size_t n, const ms_tui_event *e, size_t i)
{
	char b[32];
	const char *why = e->batch[i].reason;
	ms_fmt_bytes(b, sizeof(b), e->batch[i].charged);
	bool bytes = strcmp(why, "bytes") == 0;
	bool traces = strcmp(why, "traces") == 0;
	const char *tail = strcmp(why, "final") == 0 ? ", last"
	                   : bytes || traces         ? ""
	                                             : why;
	snprintf(buf, n, "%s%s, %u traces%s%s%s", b, bytes ? " (full)" : "",
	         e->batch[i].traces, traces ? " (full)" : "",
	         *tail && *tail != ',' ? ", " : "", tail);
	return buf;
}

/* The merge's details in `in` (as tall as they need); returns the rows
 * used. */
static int
draw_event(ms_canvas *c, ms_rect in, const ms_tui_view *v,
           const ms_tui_event *e)
{
	struct kv kv[48];
	size_t n = 0;
	char a[32], b[32];
	KV("time", "%s", ms_fmt_clock(a, sizeof(a), e->t, v->day_start));
	KV("lane", "%s", e->lane);
	KV("inputs", "%u", e->ninputs);
	KV("rows in / out", "%" PRIu64 " / %" PRIu64, e->rows_in, e->rows_out);
	KV("bytes in / out", "%s / %s", ms_fmt_bytes(a, sizeof(a), e->bytes_in),
	   ms_fmt_bytes(b, sizeof(b), e->bytes_out));
	if (e->output_id)
		KV("output part", "%016" PRIx64, e->output_id);
	else /* failed, or every trace dropped: no part published */
		KV("output part", "none (%s)",
		   e->failed ? "failed" : "every trace dropped");
	KV("output depth", "%u", e->depth_out);
	KV("mature / hot", "%u / %u", e->mature_count, e->hot_count);
	KV("classification", "%s", e->klass);
	KV("reason", "%s", e->reason[0] ? e->reason : "-");
	KV("traces evaluated", "%" PRIu64, e->traces_evaluated);
	KV("traces dropped", "%" PRIu64, e->traces_dropped);
	KV("traces deferred", "%" PRIu64, e->traces_deferred);
	if (e->drop_set_full)
		KV("  drop set full", "%" PRIu64, e->drop_set_full);
	KV("traces oversized", "%" PRIu64, e->traces_oversized);
	KV("traces kept hot", "%" PRIu64, e->traces_hot);
	KV("batches", "%" PRIu64, e->batches);
	KV("peak staged", "%s", ms_fmt_bytes(a, sizeof(a), e->peak_staged));
	if (e->batches_planned) {
		char h[32];
		KV("planned batches", "%" PRIu64, e->batches_planned);
		KV("estimate", "%s", ms_fmt_bytes(a, sizeof(a), e->estimate));
		KV("preferred / hard", "%s / %s",
		   ms_fmt_bytes(a, sizeof(a), e->preferred),
		   ms_fmt_bytes(h, sizeof(h), e->hard));
		KV("peak, all merges", "%s",
		   ms_fmt_bytes(a, sizeof(a), e->peak_concurrent));
		KV("arena cold/reused", "%s / %s",
		   ms_fmt_bytes(a, sizeof(a), e->arena_cold),
		   ms_fmt_bytes(h, sizeof(h), e->arena_reused));
	}
	for (size_t i = 0; i < e->nbatch && n + 12 < 48; i++) {
		static const char *const names[MS_VIEW_EVENT_BATCHES] = {
			"batch 1", "batch 2", "batch 3", "batch 4",
			"batch 5", "batch 6", "batch 7", "batch 8",
		};
		char bt[96];
		KV(names[i], "%s", batch_text(bt, sizeof(bt), e, i));
	}
	KV("wall", "%s",
	   ms_fmt_ns(a, sizeof(a), e->wall_ns > 0 ? (uint64_t)e->wall_ns : 0));
	KV("cpu", "%s",
	   ms_fmt_ns(a, sizeof(a), e->cpu_ns > 0 ? (uint64_t)e->cpu_ns : 0));
	KV("allocated", "%s", ms_fmt_bytes(a, sizeof(a), e->alloc_bytes));
	KV("output checksum", "%016" PRIx64, e->fingerprint);
	KV("result", "%s%s%s", e->failed ? "FAILED" : "ok",
	   e->failed && e->error[0] ? ": " : "", e->failed ? e->error : "");
	int y = in.y + put_list(c, in, kv, n) + 1;
	/* The chain's links, one a line (in a column of the fields their
	 * figures were cut). */
	if (e->nlinks && y + 1 < in.y + in.h) {
		char line[160];
		snprintf(line, sizeof(line), "%-3s %-23s %9s %9s %9s %10s", "#",
		         "sampler link", "calls", "traces", "kept",
		         "in Decide");
		ms_canvas_text(c, in.x + 1, y++, in.w - 2, line, MS_C_MUTED);
		for (size_t i = 0; i < e->nlinks && y < in.y + in.h; i++) {
			snprintf(
			        line, sizeof(line),
			        "%-3zu %-23s %9" PRIu64 " %9" PRIu64
			        " %9" PRIu64 " %10s",
			        i + 1, e->links[i].name, e->links[i].calls,
			        e->links[i].traces, e->links[i].kept,
			        ms_fmt_ns(
			                a, sizeof(a),
			                e->links[i].total_ns > 0
			                        ? (uint64_t)e->links[i].total_ns
			                        : 0));
			ms_canvas_text(c, in.x + 1, y++, in.w - 2, line, 0);
		}
		y++;
	}
	return put_inputs(c, in, y, v, e) - in.y;
}

static int
draw_part(ms_canvas *c, ms_rect in, const ms_tui_view *v, const ms_tui_part *p)
{
	struct kv kv[16];
	size_t n = 0;
	char a[32];
	KV("id", "%016" PRIx64, p->id);
	KV("bytes", "%" PRIu64 " (%s)", p->bytes,
	   ms_fmt_bytes(a, sizeof(a), p->bytes));
	KV("rows", "%" PRIu64, p->rows);
	KV("depth", "%u", p->depth);
	KV("min time", "%s",
	   ms_fmt_clock(a, sizeof(a), p->min_ts, v->day_start));
	KV("max time", "%s",
	   ms_fmt_clock(a, sizeof(a), p->max_ts, v->day_start));
	KV("maturity", "%s", p->mature ? "mature" : "hot");
	if (p->claimed_by)
		KV("claimed by", "merge #%" PRIu64, p->claimed_by);
	else
		KV("claimed by", "-");
	KV("pending input", "%s", p->pending ? "yes" : "no");
	return put_list(c, in, kv, n);
}

/* A bucket's upper bound as `mergescope report` gives it, in ms
 * ("<= 0.05 ms"); the last bucket has none ("> 1000 ms"). */
static void
bucket_label(char *buf, size_t n, const ms_tui_plugin *p, int b)
{
	uint64_t le = p->hist_le_ns[b];
	if (le && le != UINT64_MAX)
		snprintf(buf, n, "<= %g ms", (double)le / 1e6);
	else if (b > 0 && p->hist_le_ns[b - 1])
		snprintf(buf, n, "> %g ms", (double)p->hist_le_ns[b - 1] / 1e6);
	else
		snprintf(buf, n, "bucket %d", b + 1);
}

/* What the link's plugin logged: the lines kept and suppressed, then the
 * last lines kept (time since the run started, level, the line), each
 * cut at the box's edge. */
static int
draw_link_log(ms_canvas *c, ms_rect in, int y, const ms_tui_plugin *p)
{
	if (y + 1 >= in.y + in.h)
		return y;
	y++; /* a blank after the buckets */
	if (!p->log_kept && !p->log_suppressed) {
		ms_canvas_text(c, in.x + 1, y++, in.w - 2,
		               "log: nothing logged", MS_C_MUTED);
		return y;
	}
	ms_canvas_printf(
	        c, in.x + 1, y++, in.w - 2, MS_C_MUTED,
	        "log: %" PRIu64 " line%s kept, %" PRIu64 " suppressed%s",
	        p->log_kept, p->log_kept == 1 ? "" : "s", p->log_suppressed,
	        p->nlog < p->log_kept ? "; the last shown" : "");
	for (size_t i = 0; i < p->nlog && y < in.y + in.h; i++, y++)
		ms_canvas_printf(
		        c, in.x + 1, y, in.w - 2,
		        strcmp(p->log[i].level, "error") == 0 ? MS_C_ALERT : 0,
		        "%+9.3f s  %-5s  %s", (double)p->log[i].wall_ns / 1e9,
		        p->log[i].level, p->log[i].msg);
	return y;
}

/* A link's details (Enter in the plugins panel): its figures, then its
 * Decide calls per latency bucket, each with its bound, its share and a
 * bar, then what its plugin logged. */
static int
draw_link(ms_canvas *c, ms_rect in, const ms_tui_plugin *p)
{
	struct kv kv[8];
	size_t n = 0;
	char a[32];
	double mean = p->traces ? (double)p->total_ns / (double)p->traces : 0;
	KV("calls", "%" PRIu64, p->calls);
	KV("traces", "%" PRIu64, p->traces);
	KV("time in Decide", "%s", ms_fmt_ns(a, sizeof(a), p->total_ns));
	KV("ns per trace", mean > 0 && mean < 999.95 ? "%.1f" : "%.0f", mean);
	KV("slowest call", "%s", ms_fmt_ns(a, sizeof(a), p->max_ns));
	KV("failed open",
	   "%" PRIu64 " error, %" PRIu64 " timeout, %" PRIu64 " bad verdict",
	   p->failopen_error, p->failopen_timeout, p->failopen_verdict);
	KV("circuit", "%s", p->circuit_open ? "OPEN" : "closed");
	ms_rect one = in; /* one column, above the buckets */
	if (one.w > 79)
		one.w = 79;
	int y = in.y + put_list(c, one, kv, n) + 1;
	if (y + 1 >= in.y + in.h)
		return y - in.y;
	ms_canvas_printf(c, in.x + 1, y++, in.w - 2, MS_C_MUTED,
	                 "%-12s %9s %6s  %s", "Decide call", "calls", "share",
	                 "(latency buckets)");
	uint64_t hmax = 0, total = 0;
	for (int b = 0; b < MS_VIEW_HIST; b++) {
		total += p->hist[b];
		if (p->hist[b] > hmax)
			hmax = p->hist[b];
	}
	int barw = in.w - 2 - 31;
	for (int b = 0; b < MS_VIEW_HIST && y < in.y + in.h; b++, y++) {
		char label[32];
		bucket_label(label, sizeof(label), p, b);
		int x = in.x + 1 +
		        ms_canvas_printf(c, in.x + 1, y, in.w - 2, 0,
		                         "%-12s %9" PRIu64 " %5.1f%%  ", label,
		                         p->hist[b],
		                         total ? 100.0 * (double)p->hist[b] /
		                                         (double)total
		                               : 0.0);
		int len = hmax && barw > 0
		                  ? (int)((p->hist[b] * (uint64_t)barw + hmax -
		                           1) /
		                          hmax)
		                  : 0;
		for (int k = 0; k < len; k++)
			ms_canvas_put(c, x + k, y, c->ascii ? '#' : 0x2588,
			              MS_C_ACCENT);
	}
	y = draw_link_log(c, in, y, p);
	return y - in.y;
}

/* What the details show: a part, a link, a merge, or nothing. */
enum shown { SHOWN_NOTHING, SHOWN_PART, SHOWN_LINK, SHOWN_EVENT };

/* Which of them is selected, and its index in the view's array. */
static enum shown
selected(const ms_tui_view *v, size_t *idx)
{
	if (v->ui.focus == MS_FOCUS_INVENTORY && v->ui.part_sel < v->nparts) {
		*idx = v->ui.part_sel;
		return SHOWN_PART;
	}
	if (v->ui.focus == MS_FOCUS_PLUGINS && v->ui.plugin_sel < v->nplugins) {
		*idx = v->ui.plugin_sel;
		return SHOWN_LINK;
	}
	long e = ms_events_selected(v);
	if (e >= 0) {
		*idx = (size_t)e;
		return SHOWN_EVENT;
	}
	*idx = 0;
	return SHOWN_NOTHING;
}

/* The details of what is selected, laid out w columns wide from the top
 * of doc (sized here); returns their rows (0 when doc cannot be had) and
 * their title. */
static int
layout_doc(ms_canvas *doc, const ms_tui_view *v, int w, char *title, size_t tn)
{
	/* Every field in one column (wrapped: a value of 127 columns
	 * takes 4 lines at the narrowest, 60 columns, and a long key one
	 * more), a blank, the links' header, each link and a blank, the
	 * inputs' header, each input kept and the "+N more" line. */
	int h = 48 * 6 + 3 + MS_VIEW_EVENT_LINKS + 2 + MS_VIEW_EVENT_INPUTS + 1;
	if (w < 1 || ms_canvas_reset(doc, w, h) != 0)
		return 0;
	ms_rect in = { 0, 0, w, h };
	size_t i;
	switch (selected(v, &i)) {
	case SHOWN_PART:
		snprintf(title, tn, "Part");
		return draw_part(doc, in, v, &v->parts[i]);
	case SHOWN_LINK:
		snprintf(title, tn, "Link %zu: %s", i + 1, v->plugins[i].name);
		return draw_link(doc, in, &v->plugins[i]);
	case SHOWN_EVENT:
		snprintf(title, tn, "Merge #%" PRIu64, v->events[i].seq);
		return draw_event(doc, in, v, &v->events[i]);
	default:
		snprintf(title, tn, "Details");
		ms_canvas_text(doc, 0, 0, w, "nothing selected", MS_C_MUTED);
		return 1;
	}
}

/* Does memo hold the count for what v shows w columns wide? If not,
 * make it the key for it (not yet valid). The count depends on nothing
 * else: the width, the item itself, and the day's start that its times
 * are read from. */
static bool
memo_matches(ms_detail_memo *memo, const ms_tui_view *v, int w)
{
	size_t i;
	enum shown k = selected(v, &i);
	const void *what = NULL;
	size_t n = 0;
	if (k == SHOWN_PART) {
		what = &v->parts[i];
		n = sizeof(v->parts[i]);
	} else if (k == SHOWN_LINK) {
		what = &v->plugins[i];
		n = sizeof(v->plugins[i]);
	} else if (k == SHOWN_EVENT) {
		what = &v->events[i];
		n = sizeof(v->events[i]);
	}
	if (memo->valid && memo->kind == (int)k && memo->w == w &&
	    memo->day_start == v->day_start &&
	    (n == 0 || memcmp(&memo->what, what, n) == 0))
		return true;
	memo->valid = false;
	memo->kind = (int)k;
	memo->w = w;
	memo->day_start = v->day_start;
	if (n)
		memcpy(&memo->what, what, n);
	return false;
}

size_t
ms__detail_lines(const ms_tui_view *v, int w, ms_detail_memo *memo)
{
	if (memo && memo_matches(memo, v, w))
		return memo->lines;
	ms_canvas doc;
	char title[48];
	ms_canvas_init(&doc);
	int n = layout_doc(&doc, v, w, title, sizeof(title));
	ms_canvas_release(&doc);
	size_t lines = n > 0 ? (size_t)n : 1;
	if (memo && n > 0) {
		memo->lines = lines;
		memo->valid = true;
	}
	return lines;
}

static void
draw(ms_canvas *c, ms_rect r, const ms_tui_view *v)
{
	ms_rect in = ms_canvas_box(c, r, "", true);
	ms_canvas doc;
	char name[48] = "Details", title[96];
	ms_canvas_init(&doc);
	doc.ascii = c->ascii;
	int n = in.h > 0 ? layout_doc(&doc, v, in.w, name, sizeof(name)) : 0;
	size_t rows = n > 0 ? (size_t)n : 0, h = (size_t)in.h;
	size_t top = v->ui.detail_scroll;
	if (top + h > rows)
		top = rows > h ? rows - h : 0;
	if (rows > h)
		snprintf(title, sizeof(title),
		         "%s  %zu-%zu of %zu%s  (Esc closes)", name, top + 1,
		         top + h, rows, top + h < rows ? ", down scrolls" : "");
	else
		snprintf(title, sizeof(title), "%s  (Esc closes)", name);
	ms_canvas_box(c, r, title, true);
	ms_canvas_blit(c, in, &doc, top);
	ms_canvas_release(&doc);
}

const ms_panel_class ms_panel_detail = {
	.name = "detail",
	.title = "Details",
	.slot = MS_PANEL_OVERLAY,
	.draw = draw,
};
