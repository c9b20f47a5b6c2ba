/*
 * view.c - helpers over the view model: allocation, the picker's ordering
 * of the inventory, and the event-log filter that both the log and the
 * exporters apply.
 */
#include "tui_int.h"

#include "ms_engine.h"
#include "ms_merge.h"
#include "ms_replay_events.h"

#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

ms_tui_view *
ms_tui_view_new(void)
{
	return calloc(1, sizeof(ms_tui_view));
}

void
ms_tui_view_free(ms_tui_view *v)
{
	free(v);
}

void
ms_tui_part_init(ms_tui_part *p, uint64_t id, uint64_t bytes, uint64_t rows,
                 uint32_t depth, int64_t min_ts, int64_t max_ts)
{
	memset(p, 0, sizeof(*p));
	p->id = id;
	p->bytes = bytes;
	p->rows = rows;
	p->depth = depth;
	p->min_ts = min_ts;
	p->max_ts = max_ts;
}

static int
part_cmp(const void *pa, const void *pb)
{
	const ms_tui_part *a = pa, *b = pb;
	if (a->bytes != b->bytes)
		return a->bytes < b->bytes ? -1 : 1;
	if (a->min_ts != b->min_ts)
		return a->min_ts > b->min_ts ? -1 : 1; /* newer first */
	if (a->id != b->id)
		return a->id < b->id ? -1 : 1;
	return 0;
}

/* The other inventory orders (ui.part_sort), each falling back on the
 * picker's order for ties. */
static int
part_cmp_bytes_desc(const void *pa, const void *pb)
{
	const ms_tui_part *a = pa, *b = pb;
	if (a->bytes != b->bytes)
		return a->bytes > b->bytes ? -1 : 1;
	return part_cmp(pa, pb);
}

static int
part_cmp_newest(const void *pa, const void *pb)
{
	const ms_tui_part *a = pa, *b = pb;
	if (a->max_ts != b->max_ts)
		return a->max_ts > b->max_ts ? -1 : 1;
	return part_cmp(pa, pb);
}

static int
part_cmp_depth(const void *pa, const void *pb)
{
	const ms_tui_part *a = pa, *b = pb;
	if (a->depth != b->depth)
		return a->depth > b->depth ? -1 : 1;
	return part_cmp(pa, pb);
}

static int
part_cmp_id(const void *pa, const void *pb)
{
	const ms_tui_part *a = pa, *b = pb;
	return a->id < b->id ? -1 : a->id > b->id;
}

static const struct {
	const char *name;
	int (*cmp)(const void *, const void *);
} part_orders[MS_SORT_COUNT] = {
	[MS_SORT_PICKER] = { "picker order", part_cmp },
	[MS_SORT_BYTES] = { "largest first", part_cmp_bytes_desc },
	[MS_SORT_NEWEST] = { "newest first", part_cmp_newest },
	[MS_SORT_DEPTH] = { "deepest first", part_cmp_depth },
	[MS_SORT_ID] = { "by id", part_cmp_id },
};

const char *
ms_tui_part_sort_name(enum ms_tui_part_sort k)
{
	return (unsigned)k < MS_SORT_COUNT ? part_orders[k].name : "?";
}

void
ms_tui_view_sort_parts(ms_tui_view *v)
{
	if (v->nparts > MS_VIEW_MAX_PARTS)
		v->nparts = MS_VIEW_MAX_PARTS;
	enum ms_tui_part_sort k = (unsigned)v->ui.part_sort < MS_SORT_COUNT
	                                  ? v->ui.part_sort
	                                  : MS_SORT_PICKER;
	qsort(v->parts, v->nparts, sizeof(v->parts[0]), part_orders[k].cmp);
}

/* The filter's value checks: the names the engine and the event log
 * spell, taken from the layers that define them. */
/* The values of a filter field, by index: NULL past the last. */
static const char *
lane_at(int k)
{
	return k < MS_LANE_KIND_COUNT ? ms_lane_name((enum ms_lane_kind)k)
	                              : NULL;
}

static const char *
class_at(int k)
{
	return k < MS_SAMPLING_CLASS_COUNT
	               ? ms_sampling_class_name((enum ms_sampling_class)k)
	               : NULL;
}

static const char *
reason_at(int k)
{
	return k < MS_SREASON_COUNT
	               ? ms_sampling_reason_name((enum ms_sampling_reason)k)
	               : NULL;
}

static const char *
phase_at(int k)
{
	return k < MS_EV_PHASE_COUNT ? ms_ev_phase_name((enum ms_ev_phase_id)k)
	                             : NULL;
}

static bool
is_value(const char *(*at)(int), const char *v)
{
	for (int k = 0; at(k); k++)
		if (strcmp(v, at(k)) == 0)
			return true;
	return false;
}

/* "filter: unknown KEY "V" (A, B or C)" into err. */
static void
unknown_value(char *err, size_t n, const char *key, size_t kl,
              const char *(*at)(int), const char *v)
{
	int w = snprintf(err, n, "filter: unknown %.*s \"%s\" (", (int)kl, key,
	                 v);
	for (int k = 0; at(k) && w > 0 && (size_t)w < n; k++)
		w += snprintf(err + w, n - (size_t)w, "%s%s",
		              k == 0      ? ""
		              : at(k + 1) ? ", "
		                          : " or ",
		              at(k));
	if (w > 0 && (size_t)w < n)
		snprintf(err + w, n - (size_t)w, ")");
}

static bool
parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	if (!*s)
		return false;
	for (; *s; s++) {
		if (!isdigit((unsigned char)*s) || v > (UINT64_MAX - 9) / 10)
			return false;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return true;
}

/* Narrow the sequence range of f to [lo, hi]. */
static void
seq_range(ms_tui_filter *f, uint64_t lo, uint64_t hi)
{
	if (!f->has_seq_range) {
		f->has_seq_range = true;
		f->seq_min = 0;
		f->seq_max = UINT64_MAX;
	}
	if (lo > f->seq_min)
		f->seq_min = lo;
	if (hi < f->seq_max)
		f->seq_max = hi;
}

static bool
parse_seq(ms_tui_filter *f, const char *w)
{
	uint64_t a, b;
	const char *dots;
	if (w[0] == '#')
		return parse_u64(w + 1, &a) && (seq_range(f, a, a), true);
	w += 3; /* "seq" */
	if (strncmp(w, ">=", 2) == 0)
		return parse_u64(w + 2, &a) &&
		       (seq_range(f, a, UINT64_MAX), true);
	if (strncmp(w, "<=", 2) == 0)
		return parse_u64(w + 2, &a) && (seq_range(f, 0, a), true);
	if (*w == '>')
		return parse_u64(w + 1, &a) && a < UINT64_MAX &&
		       (seq_range(f, a + 1, UINT64_MAX), true);
	if (*w == '<')
		return parse_u64(w + 1, &a) && a > 0 &&
		       (seq_range(f, 0, a - 1), true);
	if (*w != '=')
		return false;
	w++;
	dots = strstr(w, "..");
	if (!dots)
		return parse_u64(w, &a) && (seq_range(f, a, a), true);
	char lo[32];
	size_t n = (size_t)(dots - w);
	if (n == 0 || n >= sizeof(lo))
		return false;
	memcpy(lo, w, n);
	lo[n] = '\0';
	return parse_u64(lo, &a) && parse_u64(dots + 2, &b) && a <= b &&
	       (seq_range(f, a, b), true);
}

bool
ms_tui_filter_parse(const char *text, ms_tui_filter *out, char *err, size_t n)
{
	static const struct {
		const char *key;
		size_t off, size;
		const char *(*at)(int);
	} fields[] = {
		{ "lane=", offsetof(ms_tui_filter, lane), sizeof(out->lane),
		  lane_at },
		{ "class=", offsetof(ms_tui_filter, klass), sizeof(out->klass),
		  class_at },
		{ "reason=", offsetof(ms_tui_filter, reason),
		  sizeof(out->reason), reason_at },
		{ "phase=", offsetof(ms_tui_filter, phase), sizeof(out->phase),
		  phase_at },
	};
	memset(out, 0, sizeof(*out));
	if (err && n)
		err[0] = '\0';
	const char *p = text;
	size_t tl = 0;
	for (;;) {
		char w[MS_VIEW_TEXT];
		while (*p == ' ' || *p == '\t')
			p++;
		if (!*p)
			return true;
		size_t wl = strcspn(p, " \t");
		if (wl >= sizeof(w))
			wl = sizeof(w) - 1;
		memcpy(w, p, wl);
		w[wl] = '\0';
		p += strcspn(p, " \t");

		bool done = false;
		for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]);
		     i++) {
			size_t kl = strlen(fields[i].key);
			if (strncmp(w, fields[i].key, kl) != 0)
				continue;
			const char *v = w + kl;
			if (!is_value(fields[i].at, v)) {
				if (err && n)
					unknown_value(err, n, fields[i].key,
					              kl - 1, fields[i].at, v);
				return false;
			}
			char *dst = (char *)out + fields[i].off;
			if (*dst && strcmp(dst, v) != 0) {
				/* Not the last one silently: a merge has one
				 * of each, so no merge would match both. */
				if (err && n)
					snprintf(err, n,
					         "filter: %s given twice (\"%s\" "
					         "and \"%s\"); a merge has one, so "
					         "give it once",
					         fields[i].key, dst, v);
				return false;
			}
			snprintf(dst, fields[i].size, "%s", v);
			done = true;
		}
		if (done)
			continue;
		/* key=value with a key the filter does not know: refused,
		 * not taken for text no summary holds. */
		size_t kl = strspn(w, "abcdefghijklmnopqrstuvwxyz_");
		if (kl && w[kl] == '=' && strncmp(w, "seq=", 4) != 0) {
			if (err && n)
				snprintf(err, n,
				         "filter: unknown key %.*s= (lane=, "
				         "class=, reason=, phase=, seq=; other "
				         "words match the merge summary)",
				         (int)kl, w);
			return false;
		}
		if (w[0] == '#' || (strncmp(w, "seq", 3) == 0 &&
		                    strchr("=<>", w[3]) && w[3])) {
			if (!parse_seq(out, w)) {
				if (err)
					snprintf(err, n,
					         "filter: \"%s\": expected #N, "
					         "seq=N, seq=A..B (A at most B), "
					         "seq>=N, seq>N, seq<=N or seq<N",
					         w);
				return false;
			}
			continue;
		}
		if (tl + wl + 2 > sizeof(out->text)) {
			if (err)
				snprintf(err, n, "filter: text too long");
			return false;
		}
		if (tl)
			out->text[tl++] = ' ';
		memcpy(out->text + tl, w, wl + 1);
		tl += wl;
	}
}

bool
ms_tui_filter_empty(const ms_tui_filter *f)
{
	return !f->lane[0] && !f->klass[0] && !f->reason[0] && !f->phase[0] &&
	       !f->has_seq_range && !f->text[0];
}

bool
ms_tui_filter_match(const ms_tui_filter *f, const ms_tui_event *e,
                    int64_t day_start)
{
	if (f->lane[0] && strcmp(f->lane, e->lane) != 0)
		return false;
	if (f->klass[0] && strcmp(f->klass, e->klass) != 0)
		return false;
	if (f->reason[0]) {
		const char *r = e->reason[0] ? e->reason : "none";
		if (strcmp(f->reason, r) != 0)
			return false;
	}
	if (f->phase[0] && strcmp(f->phase, e->phase) != 0)
		return false;
	if (f->has_seq_range && (e->seq < f->seq_min || e->seq > f->seq_max))
		return false;
	if (f->text[0]) {
		char line[256];
		const char *hay = e->summary;
		if (!hay[0])
			hay = ms_fmt_event_line(line, sizeof(line), e,
			                        day_start);
		if (!ms_ev_text_match(hay, f->text))
			return false;
	}
	return true;
}
