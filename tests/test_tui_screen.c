/*
 * test_tui_screen.c - the TUI drawn for real into an in-process virtual
 * screen: curses is opened with newterm on /dev/null, sized with
 * resize_term, and every cell is read back with mvin_wch. Text snapshots
 * of the key states (running, paused at a barrier with a mature selection
 * pending, help, too small) are compared with the committed files in
 * tests/tui-expect/. To accept a deliberate change of the screen, run the
 * test with MS_TUI_UPDATE_EXPECT=1 and review the diff of those files.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tui_fake.h"
#include "testdir.h"
#include "tui_int.h"

#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct fixture {
	FILE *out, *in;
	ms_screen *scr;
	ms_canvas canvas;
	ms_tui_view *view;
} fixture;

static int
setup(void **state)
{
	fixture *f = calloc(1, sizeof(*f));
	assert_non_null(f);
	f->out = fopen("/dev/null", "w");
	f->in = fopen("/dev/null", "r");
	assert_non_null(f->out);
	assert_non_null(f->in);
	ms_screen_opts so = { .out = f->out,
		              .in = f->in,
		              .term = "xterm-256color",
		              .color = true };
	ms_errbuf eb = { "" };
	assert_int_equal(ms_screen_open(&f->scr, &so, &eb), 0);
	ms_canvas_init(&f->canvas);
	f->view = ms_tui_view_new();
	assert_non_null(f->view);
	f->view->ui.ascii = true;
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	fixture *f = *state;
	ms_screen_close(f->scr);
	ms_canvas_release(&f->canvas);
	ms_tui_view_free(f->view);
	fclose(f->out);
	fclose(f->in);
	free(f);
	return 0;
}

/* Size the virtual screen, draw the view, and read it back as text, one
 * line per row, trailing blanks removed. */
static char *
draw_and_read(fixture *f, int w, int h)
{
	assert_int_equal(ms_screen_resize(f->scr, w, h), 0);
	int sw, sh;
	ms_screen_size(f->scr, &sw, &sh);
	assert_int_equal(sw, w);
	assert_int_equal(sh, h);
	ms_tui_view_sort_parts(f->view);
	assert_int_equal(ms_render_frame(&f->canvas, f->view, w, h), 0);
	ms_screen_draw(f->scr, &f->canvas);
	size_t cap = (size_t)h * ((size_t)w * 4 + 1) + 1;
	char *text = malloc(cap), row[4096];
	assert_non_null(text);
	size_t used = 0;
	for (int y = 0; y < h; y++) {
		ms_screen_row(f->scr, y, row, sizeof(row));
		size_t l = strlen(row);
		while (l && row[l - 1] == ' ')
			row[--l] = '\0';
		memcpy(text + used, row, l);
		used += l;
		text[used++] = '\n';
	}
	text[used] = '\0';
	return text;
}

static void
expect_snapshot(const char *name, const char *actual)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/tests/tui-expect/%s.txt",
	         MS_SOURCE_DIR, name);
	const char *upd = getenv("MS_TUI_UPDATE_EXPECT");
	if (upd && *upd == '1') {
		FILE *fp = fopen(path, "w");
		assert_non_null(fp);
		fputs(actual, fp);
		fclose(fp);
		return;
	}
	char *want = ms_test_read(path, 0, NULL);
	if (!want)
		fail_msg("missing expectation %s (run with "
		         "MS_TUI_UPDATE_EXPECT=1 to create it)",
		         path);
	if (strcmp(want, actual) != 0) {
		char apath[1024];
		snprintf(apath, sizeof(apath), "%s/tests/tui-actual-%s.txt",
		         MS_BINARY_DIR, name);
		FILE *fp = fopen(apath, "w");
		if (fp) {
			fputs(actual, fp);
			fclose(fp);
		}
		/* Name the first line that differs. */
		int line = 1;
		const char *a = actual, *b = want;
		while (*a && *a == *b) {
			if (*a == '\n')
				line++;
			a++;
			b++;
		}
		free(want);
		fail_msg("screen %s differs from %s at line %d; got %s", name,
		         path, line, apath);
	}
	free(want);
}

static void
test_running(void **state)
{
	fixture *f = *state;
	fake_scene_running(f->view);
	char *t = draw_and_read(f, 132, 44);
	expect_snapshot("running-132x44", t);
	/* What a user looks for, independent of the snapshot. */
	assert_non_null(strstr(t, "RUNNING"));
	assert_non_null(strstr(t, "frontier 04:12:30"));
	assert_non_null(strstr(t, "pub 832/3219"));
	assert_non_null(strstr(t, "merges 57"));
	assert_non_null(strstr(t, "day-2x-skywalking.db"));
	/* The database's path shortened from a '/' on, not inside a
	 * directory's name ("db ...uns/day-2x-skywalking.db"). */
	assert_non_null(strstr(t, "  db .../day-2x-skywalking.db\n"));
	assert_non_null(strstr(t, "Plugins"));
	assert_non_null(strstr(t, "skywalking"));
	assert_non_null(strstr(t, "none pending"));
	free(t);
	/* The state block is reverse video, so it shows without colour. */
	for (int x = 0; x < 10; x++)
		assert_true(ms_screen_attr(f->scr, x, 0) & MS_A_REV);
	assert_false(ms_screen_attr(f->scr, 40, 0) & MS_A_REV);
}

static void
test_break_with_mature_selection(void **state)
{
	fixture *f = *state;
	fake_scene_break(f->view);
	char *t = draw_and_read(f, 100, 34);
	expect_snapshot("break-100x34", t);
	assert_non_null(strstr(t, "!! BREAK"));
	assert_non_null(strstr(t, "Pending selection #58"));
	assert_non_null(strstr(t, "mature 3"));
	assert_non_null(strstr(t, "hot 5"));
	assert_non_null(strstr(t, "predicted not_executed (merge_grace)"));
	/* Why, and until when: the oldest hot input (max 05:12:30 + 2 h). */
	assert_non_null(strstr(t, "bypassed: 5 hot, mature 07:12:30 to "));
	free(t);
	for (int x = 0; x < 10; x++)
		assert_true(ms_screen_attr(f->scr, x, 0) & MS_A_REV);
}

/* A selection that will sample says the staging plan it will make, in
 * words, in full where it fits and shorter where not; one that is
 * bypassed says none. */
static void
test_break_plan_of_sampling_selection(void **state)
{
	fixture *f = *state;
	fake_scene_break(f->view);
	char *t = draw_and_read(f, 100, 34);
	assert_null(strstr(t, "staging est"));
	free(t);
	ms_tui_selection *s = &f->view->sel;
	snprintf(s->predicted, sizeof(s->predicted), "executed");
	s->reason[0] = 0;
	s->plan_estimate = 168044418;
	s->plan_batches = 3;
	s->plan_preferred = 56014806;
	t = draw_and_read(f, 132, 44);
	assert_non_null(strstr(t, "predicted executed"));
	assert_non_null(strstr(t, "will stage ~160M in 3 batches of ~53.4M"));
	free(t);
	/* At 80x24, in words still ("est 160M 3x pref 53.4M" was a
	 * riddle), within the panel. */
	t = draw_and_read(f, 80, 24);
	if (!strstr(t, "|stages ~160M in 3 batches "))
		fail_msg("no staging plan in words at 80x24:\n%s", t);
	assert_null(strstr(t, "3x"));
	free(t);
	/* One batch: its size is the estimate's. */
	s->plan_batches = 1;
	s->plan_preferred = s->plan_estimate;
	t = draw_and_read(f, 132, 44);
	assert_non_null(strstr(t, "will stage ~160M in 1 batch "));
	free(t);
}

/* At 80x24 the pending selection has two lines left for its inputs: an
 * input and "... N more", not the inputs' header over "... 8 more", which
 * read as an empty list. With one input, its header and the input. */
static void
test_selection_inputs_at_80x24(void **state)
{
	fixture *f = *state;
	fake_scene_break(f->view);
	char *t = draw_and_read(f, 80, 24);
	char id[32];
	snprintf(id, sizeof(id), "%016" PRIx64, f->view->sel.inputs[0].id);
	if (!strstr(t, id) || !strstr(t, "... 7 more") ||
	    strstr(t, "... 8 more") ||
	    strstr(t, "input              bytes  d s"))
		fail_msg("inputs at 80x24:\n%s", t);
	/* The input just above the "more" line. */
	const char *more = strstr(t, "... 7 more");
	const char *line = more;
	while (line > t && line[-1] != '\n')
		line--;
	const char *prev = line - 1;
	while (prev > t && prev[-1] != '\n')
		prev--;
	assert_true(strstr(prev, id) && strstr(prev, id) < line);
	free(t);
	f->view->sel.ninputs = f->view->sel.inputs_total = 1;
	t = draw_and_read(f, 80, 24);
	if (!strstr(t, "input              bytes  d s") || !strstr(t, id) ||
	    strstr(t, "|... "))
		fail_msg("one input at 80x24:\n%s", t);
	free(t);
}

/* After a freeze the event log ends with the merge-once command, wrapped
 * at spaces: at 132 columns it broke "--vari|ant" across two lines. The
 * lines joined with a space are the command. */
static void
test_frozen_command_wraps_at_spaces(void **state)
{
	fixture *f = *state;
	fake_scene_break(f->view);
	/* "--variant" across the first line's end at 132 columns (122
	 * columns after "frozen: "). */
	snprintf(f->view->ui.frozen_cmd, sizeof(f->view->ui.frozen_cmd),
	         "mergescope merge-once --frozen /var/tmp/mergescope-1000/"
	         "frozen/day-2x-skywalking-seed1.rerun-12-merge-252-1764763800 "
	         "--variant 'skywalking,detdrop:{\"percent\":35}'");
	const char *cmd = f->view->ui.frozen_cmd;
	const char *var = strstr(cmd, "--variant");
	assert_true(var - cmd < 122 && var - cmd + 9 > 122);
	char *t = draw_and_read(f, 132, 44);
	char joined[1024] = "";
	const char *p = strstr(t, "frozen: ");
	assert_non_null(p);
	p += 8;
	for (int line = 0; *p && line < 4; line++) {
		size_t l = strcspn(p, "|\n");
		while (l && p[l - 1] == ' ')
			l--;
		if (l == 0 || p[0] == '+')
			break;
		size_t j = strlen(joined);
		snprintf(joined + j, sizeof(joined) - j, "%s%.*s", j ? " " : "",
		         (int)l, p);
		/* The next row, inside its border. */
		p = strchr(p, '\n');
		if (!p || p[1] != '|')
			break;
		p += 2;
	}
	if (strcmp(joined, cmd) != 0)
		fail_msg("frozen command at 132 columns, lines joined: %s\n%s",
		         joined, t);
	free(t);
	/* At 80 columns the directory is longer than a line: cut there,
	 * and the words after it whole. */
	t = draw_and_read(f, 80, 24);
	if (!strstr(t,
	            "|4763800 --variant 'skywalking,detdrop:{\"percent\":35}'"))
		fail_msg("frozen command at 80 columns:\n%s",
		         strstr(t, "frozen: ") ? strstr(t, "frozen: ") : t);
	free(t);
}

/* The widest common terminal: every panel's header fits. */
static void
test_running_wide(void **state)
{
	fixture *f = *state;
	fake_scene_running(f->view);
	char *t = draw_and_read(f, 200, 60);
	expect_snapshot("running-200x60", t);
	assert_non_null(strstr(t, "fail e/t/v"));
	assert_non_null(strstr(t, "Inventory 20 parts"));
	free(t);
}

/* The first row of the screen drawn w columns wide. */
static void
status_at(fixture *f, int w, char *row, size_t n)
{
	char *t = draw_and_read(f, w, 46);
	size_t l = strcspn(t, "\n");
	snprintf(row, n, "%.*s", (int)l, t);
	free(t);
}

/* The status line's sampling counts say the same figures in the same
 * words at every width that shows them, narrow ones leaving out a zero
 * count: at the day's finalize, 132 columns read "(251 bypassed)" and
 * 200 read "(sampled 0, bypassed 251)", the figure before its word in
 * one and after it in the other. */
static void
test_status_counts_every_width(void **state)
{
	fixture *f = *state;
	ms_tui_view *v = f->view;
	fake_scene_running(v);
	v->state = MS_VIEW_BREAK;
	snprintf(v->break_why, sizeof(v->break_why), "sampling");
	snprintf(v->phase, sizeof(v->phase), "finalize");
	v->now = FAKE_DAY0 + 26 * FAKE_H;
	v->frontier = FAKE_DAY0 + 24 * FAKE_H;
	v->pub_done = v->pub_total = 3219;
	v->merges_done = 251;
	v->merges_sampled = 0;
	v->merges_bypassed = 251;
	char row[4096];
	status_at(f, 132, row, sizeof(row));
	assert_non_null(strstr(row, " merges 251 (251 bypassed) "));
	status_at(f, 200, row, sizeof(row));
	assert_non_null(strstr(row, " merges 251 (0 sampled, 251 bypassed) "));
	/* After the finalize: both counts, which fit at 100 columns. */
	v->state = MS_VIEW_DONE;
	v->break_why[0] = '\0';
	v->merges_done = 252;
	v->merges_sampled = 1;
	static const int widths[] = { 100, 132, 200 };
	for (size_t i = 0; i < sizeof(widths) / sizeof(widths[0]); i++) {
		status_at(f, widths[i], row, sizeof(row));
		assert_non_null(
		        strstr(row, " merges 252 (1 sampled, 251 bypassed)"));
	}
	/* Too narrow for both, they are left out together. */
	status_at(f, 80, row, sizeof(row));
	assert_non_null(strstr(row, " merges 252"));
	assert_null(strstr(row, "sampled"));
	assert_null(strstr(row, "bypassed"));
}

/* The running scene ended: n passing gates (gate_1, ...) in the Events
 * area. */
static void
gates_scene(ms_tui_view *v, size_t n)
{
	fake_scene_running(v);
	v->state = MS_VIEW_DONE;
	v->ui.show_gates = true;
	v->ngates = n;
	for (size_t i = 0; i < n; i++) {
		snprintf(v->gates[i].name, sizeof(v->gates[i].name), "gate_%zu",
		         i + 1);
		v->gates[i].pass = true;
	}
}

/* At the end of the run the gates take the Events area, and its bottom
 * border still says where the events are recorded: below 200 columns the
 * status line has no room for it, and the database was on screen
 * nowhere. */
static void
test_gates_name_database(void **state)
{
	fixture *f = *state;
	gates_scene(f->view, 2);
	static const int sizes[][2] = { { 80, 24 }, { 132, 46 } };
	for (size_t i = 0; i < 2; i++) {
		char *t = draw_and_read(f, sizes[i][0], sizes[i][1]);
		assert_non_null(strstr(t, "Gates  2 pass, 0 fail"));
		assert_non_null(strstr(t, " events /home/u/.cache/mergescope/"
		                          "runs/day-2x-skywalking.db +"));
		free(t);
	}
}

/* At 80 columns the event log's class reads whole where the classes and
 * reasons listed fit ("not_exec" was a cut word); where a longer reason
 * would not, the classes are abbreviated and the reason stays whole. */
static void
test_events_class_whole_at_80(void **state)
{
	fixture *f = *state;
	fake_scene_running(f->view);
	char *t = draw_and_read(f, 80, 24);
	if (!strstr(t, "6.46ms not_executed merge_grace") ||
	    !strstr(t, "6.37ms executed     -") || strstr(t, "not_exec "))
		fail_msg("classes at 80x24:\n%s", t);
	free(t);
	ms_tui_event *e = &f->view->events[f->view->nevents - 1];
	snprintf(e->reason, sizeof(e->reason), "guard_unavailable");
	t = draw_and_read(f, 80, 24);
	if (!strstr(t, "6.46ms not_exec merge_grace") ||
	    !strstr(t, "not_exec guard_unavailable"))
		fail_msg("classes at 80x24, a long reason:\n%s", t);
	free(t);
}

/* A gate's detail wraps a column short of the border, at 80 and 132
 * columns: it ran into the border ("...0977;|"), the two read as one. */
static void
test_gates_detail_clear_of_border(void **state)
{
	fixture *f = *state;
	ms_tui_view *v = f->view;
	gates_scene(v, 1);
	/* Words of every length, so that some line's last word ends in
	 * the last column whatever the width. */
	size_t n = 0;
	for (int k = 0; n + 12 < sizeof(v->gates[0].detail); k++)
		n += (size_t)snprintf(v->gates[0].detail + n,
		                      sizeof(v->gates[0].detail) - n, "%.*s ",
		                      1 + k % 9, "abcdefghi");
	static const int sizes[][2] = { { 80, 24 }, { 132, 46 } };
	for (size_t i = 0; i < 2; i++) {
		int w = sizes[i][0];
		char *t = draw_and_read(f, w, sizes[i][1]);
		const char *line = strstr(t, "Gates  1 pass");
		assert_non_null(line);
		int rows = 0;
		while ((line = strchr(line, '\n')) && line[1] == '|') {
			line++;
			/* The last column inside the border is blank. */
			if (line[w - 1] != '|' || line[w - 2] != ' ')
				fail_msg("at %dx%d a line of the gates reaches "
				         "the border:\n%s",
				         w, sizes[i][1], t);
			rows++;
		}
		assert_true(rows > 3);
		free(t);
	}
}

/* The status line fits its fields by columns: with Unicode glyphs the
 * running state's mark is three bytes in one column, and at a width that
 * held every field exactly the phase was left out, counted two columns
 * wider than it drew. */
static void
test_status_fits_by_columns(void **state)
{
	fixture *f = *state;
	fake_scene_running(f->view);
	f->view->ui.ascii = false;
	char row[4096];
	status_at(f, 200, row, sizeof(row));
	char *end = strstr(row, " speed 60x");
	assert_non_null(end);
	assert_non_null(strstr(row, "\u25b6 RUNNING"));
	end += strlen(" speed 60x");
	int w = 0;
	for (const char *p = row; p < end; p++)
		w += ((unsigned char)*p & 0xc0) != 0x80;
	status_at(f, w, row, sizeof(row));
	assert_non_null(strstr(row, " skywalking primary speed 60x"));
	/* One column fewer, the phase goes first. */
	status_at(f, w - 1, row, sizeof(row));
	assert_null(strstr(row, "primary"));
	assert_non_null(strstr(row, " skywalking speed 60x"));
}

/* Before any merge has sampled there is no preferred staging limit: the
 * panel said "preferred 0B" ("pref 0B" at 132 columns), a limit of zero
 * bytes, under which every merge would stage over its limit. */
static void
test_staging_no_preferred_yet(void **state)
{
	fixture *f = *state;
	fake_scene_running(f->view);
	f->view->staging.live = f->view->staging.peak = 0;
	f->view->staging.preferred = 0;
	char *t = draw_and_read(f, 132, 46);
	assert_non_null(strstr(t, "|pref -  hard 256M "));
	assert_null(strstr(t, "0B  hard"));
	free(t);
	t = draw_and_read(f, 100, 30);
	assert_non_null(
	        strstr(t, "|live 0B  peak 0B  preferred -  hard 256M "));
	free(t);
	/* Recent merges that staged nothing (bypassed) say so, where a
	 * row of the lowest bars read as small peaks; one that staged
	 * brings the bars back. */
	memset(f->view->staging.spark, 0, sizeof(f->view->staging.spark));
	t = draw_and_read(f, 132, 46);
	assert_non_null(strstr(t, "|recent merges staged nothing"));
	free(t);
	t = draw_and_read(f, 100, 30);
	assert_non_null(strstr(t, "|recent merges staged nothing "));
	free(t);
	f->view->staging.spark[f->view->staging.nspark - 1] = 1048576;
	t = draw_and_read(f, 132, 46);
	assert_null(strstr(t, "staged nothing"));
	free(t);
	/* Once set, it is a size like the others. */
	f->view->staging.preferred = 160 * 1048576ULL;
	t = draw_and_read(f, 132, 46);
	assert_non_null(strstr(t, "|pref 160M  hard 256M "));
	free(t);
	/* A run with no sampler (disabled) has no ceiling: the panel says
	 * nothing is staged (it read "hard 0B" over an empty gauge). */
	f->view->staging.preferred = f->view->staging.hard = 0;
	t = draw_and_read(f, 132, 46);
	assert_null(strstr(t, "hard 0B"));
	assert_non_null(strstr(t, "|no sampler in this run: nothing|"));
	assert_non_null(strstr(t, "|is staged "));
	free(t);
	t = draw_and_read(f, 100, 30);
	assert_null(strstr(t, "hard 0B"));
	assert_non_null(strstr(t, "|no sampler in this run: nothing is staged"));
	free(t);
}

/* The day's clock in every form: before the day (the frontier early in
 * the morning, a part that starts half a second before midnight), within
 * it, and the finalize after it. */
static void
test_clock_forms(void **state)
{
	(void)state;
	char b[32];
	const int64_t s = 1000000000LL;
	assert_string_equal(ms_fmt_clock(b, sizeof(b), FAKE_DAY0, FAKE_DAY0),
	                    "00:00:00");
	assert_string_equal(
	        ms_fmt_clock(b, sizeof(b), FAKE_DAY0 - s / 2, FAKE_DAY0),
	        "-1d 23:59:59");
	assert_string_equal(ms_fmt_clock(b, sizeof(b),
	                                 FAKE_DAY0 - (3600 + 53 * 60 + 17) * s,
	                                 FAKE_DAY0),
	                    "-1d 22:06:43");
	assert_string_equal(
	        ms_fmt_clock(b, sizeof(b), FAKE_DAY0 + 86399 * s, FAKE_DAY0),
	        "23:59:59");
	assert_string_equal(
	        ms_fmt_clock(b, sizeof(b), FAKE_DAY0 + 26 * FAKE_H, FAKE_DAY0),
	        "+1d 02:00:00");
	assert_string_equal(
	        ms_fmt_clock(b, sizeof(b), FAKE_DAY0 - 30 * FAKE_H, FAKE_DAY0),
	        "-2d 18:00:00");
	assert_true(
	        strlen(ms_fmt_clock(b, sizeof(b), FAKE_DAY0 - 7 * 24 * FAKE_H,
	                            FAKE_DAY0)) <= MS_CLOCK_WIDE);
}

/* Sizes (powers of 1024), counts (of 1000) and durations in their short
 * forms, also just below a unit's edge: a value that rounds up to the
 * next unit shows in it ("1024K" read as more than a K and less than an
 * M at once; "1000.00us" is wider than any other form). */
static void
test_number_forms(void **state)
{
	(void)state;
	char b[32];
	static const struct {
		uint64_t v;
		const char *bytes, *count, *ns;
	} cases[] = {
		{ 0, "0B", "0", "0ns" },
		{ 999, "999B", "999", "999ns" },
		{ 1023, "1023B", "1023", "1.02us" },
		{ 1024, "1.00K", "1024", "1.02us" },
		{ 10229, "9.99K", "10.2k", "10.23us" },
		{ 10235, "10.0K", "10.2k", "10.23us" },
		{ 99999, "97.7K", "100k", "100.00us" },
		{ 102297, "99.9K", "102k", "102.30us" },
		{ 102349, "100K", "102k", "102.35us" },
		{ 102355, "100K", "102k", "102.36us" },
		{ 999499, "976K", "999k", "999.50us" },
		{ 999950, "977K", "1.0M", "999.95us" },
		{ 999999, "977K", "1.0M", "1.00ms" },
		{ 1048063, "1023K", "1.0M", "1.05ms" },
		{ 1048064, "1.00M", "1.0M", "1.05ms" },
		{ 1048575, "1.00M", "1.0M", "1.05ms" },
		{ 1048576, "1.00M", "1.0M", "1.05ms" },
		{ 999995000, "954M", "1.0G", "1.00s" },
		{ 1073741823, "1.00G", "1.1G", "1.07s" },
		{ 99950000000ULL, "93.1G", "100G", "99.95s" },
		{ 1125899906842623ULL, "1.00P", "1.1P", "1125899.91s" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		assert_string_equal(ms_fmt_bytes(b, sizeof(b), cases[i].v),
		                    cases[i].bytes);
		assert_string_equal(ms_fmt_count(b, sizeof(b), cases[i].v),
		                    cases[i].count);
		assert_string_equal(ms_fmt_ns(b, sizeof(b), cases[i].v),
		                    cases[i].ns);
	}
	/* The largest value keeps the largest unit. */
	assert_string_equal(ms_fmt_bytes(b, sizeof(b), UINT64_MAX), "16.0E");
	assert_string_equal(ms_fmt_count(b, sizeof(b), UINT64_MAX), "18.4E");
	/* Speeds below 1x keep their digits (0.04x read "0.0x"); one
	 * just below 10x rounds to the whole 10x, not "10.0x". */
	static const struct {
		double x;
		const char *s;
	} speeds[] = {
		{ 0, "max" },    { 1e-9, "1e-09x" }, { 0.04, "0.04x" },
		{ 0.5, "0.5x" }, { 1, "1x" },        { 1.5, "1.5x" },
		{ 9.96, "10x" }, { 1200, "1200x" },
	};
	for (size_t i = 0; i < sizeof(speeds) / sizeof(speeds[0]); i++)
		assert_string_equal(ms_fmt_speed(b, sizeof(b), speeds[i].x),
		                    speeds[i].s);
}

static void
test_clock_on_screen(void **state)
{
	fixture *f = *state;
	fake_scene_running(f->view);
	ms_tui_view *v = f->view;
	/* 00:06:43 into the day: the frontier is the day before. */
	v->now = FAKE_DAY0 + 403 * 1000000000LL;
	v->frontier = v->now - 2 * FAKE_H;
	v->parts[0].min_ts = FAKE_DAY0 - 500000000LL;
	v->parts[0].bytes = 1000; /* first in picker order */
	/* The last merge is the finalize at +1d 02:00. */
	v->events[v->nevents - 1].t = FAKE_DAY0 + 26 * FAKE_H;
	char *t = draw_and_read(f, 200, 60);
	expect_snapshot("clock-200x60", t);
	assert_non_null(strstr(t, "frontier -1d 22:06:43"));
	assert_null(strstr(t, "-00:"));
	assert_non_null(strstr(t, "-1d 23:59:59-"));
	/* The whole +1d time sits in its column, before the lane. */
	assert_non_null(strstr(t, "    57 +1d 02:00:00 fast"));
	assert_non_null(strstr(t, "    56     09:16:00 fast"));
	free(t);
}

/* The axis row of the timeline titled title in screen text t. */
static void
timeline_axis(const char *t, const char *title, char *axis, size_t n)
{
	const char *row = strstr(t, title);
	assert_non_null(row);
	row = strchr(row, '\n') + 1;
	const char *prev = row;
	while (strncmp(row, "+-", 2) != 0) {
		prev = row;
		row = strchr(row, '\n') + 1;
	}
	snprintf(axis, n, "%.*s", (int)(row - prev - 1), prev);
}

/* A day shorter than 24 hours (the smoke fixture's 6) is the whole
 * axis, labelled up to its last hour: every hour past its end was drawn
 * on the last column, the axis running "04 05 24" under a title saying
 * "24h". */
static void
test_timeline_short_day(void **state)
{
	fixture *f = *state;
	fake_scene_running(f->view);
	f->view->day_end = f->view->day_start + 6 * FAKE_H;
	f->view->now = f->view->day_start + 3 * FAKE_H;
	f->view->frontier = f->view->day_start + FAKE_H;
	static const int sizes[][2] = { { 132, 46 }, { 200, 60 } };
	for (size_t i = 0; i < 2; i++) {
		char *t = draw_and_read(f, sizes[i][0], sizes[i][1]);
		char axis[1024];
		timeline_axis(t, "Timeline 6h frontier", axis, sizeof(axis));
		if (!strstr(axis, "05") || !strstr(axis, "06") ||
		    strstr(axis, "24") || strstr(axis, "12"))
			fail_msg("a 6-hour day's axis at %dx%d:\n%s",
			         sizes[i][0], sizes[i][1], t);
		/* Its last label ends the axis. */
		assert_string_equal(axis + strlen(axis) - 4, "06-|");
		free(t);
	}
}

/* The timeline at each zoom: the day, then 6 h and 1 h windows with now
 * three quarters across and "HH:MM" ticks. */
static void
test_timeline_zoom(void **state)
{
	fixture *f = *state;
	fake_scene_running(f->view); /* now 06:12:30, frontier 04:12:30 */
	static const char *const name[] = { "zoom-24h-132x44", "zoom-6h-132x44",
		                            "zoom-1h-132x44" };
	static const char *const title[] = { "Timeline 24h frontier",
		                             "Timeline 6h frontier",
		                             "Timeline 1h frontier" };
	/* Ticks each window must show. */
	static const char *const tick[] = { "12", "03:00", "06:00" };
	static const char *const not_tick[] = { "03:00", "12:00", "03:00" };
	for (int z = 0; z < 3; z++) {
		f->view->ui.zoom = z;
		char *t = draw_and_read(f, 132, 44);
		expect_snapshot(name[z], t);
		assert_non_null(strstr(t, title[z]));
		/* The axis is the timeline's last inner row: the one before
		 * the box's bottom border. */
		char axis[1024];
		timeline_axis(t, title[z], axis, sizeof(axis));
		assert_non_null(strstr(axis, tick[z]));
		assert_null(strstr(axis, not_tick[z]));
		/* Zoomed, the title counts the parts the window leaves out. */
		if (z > 0) {
			int64_t span = ms__timeline_span(z);
			int64_t w0 = f->view->now - span * 3 / 4;
			size_t out = 0;
			for (size_t i = 0; i < f->view->nparts; i++)
				out += f->view->parts[i].max_ts < w0 ||
				       f->view->parts[i].min_ts > w0 + span;
			assert_true(out > 0);
			char want[32];
			snprintf(want, sizeof(want), "  %zu outside -", out);
			assert_non_null(strstr(t, want));
		}
		free(t);
	}
	/* Out of range stays at the ends. */
	assert_true(ms__timeline_span(-1) == ms__timeline_span(0));
	assert_true(ms__timeline_span(5) == 3600000000000LL);
}

/* Row y of text (lines ending in '\n') into buf. */
static void
text_row(const char *t, int y, char *buf, size_t n)
{
	for (; y > 0 && t; y--) {
		t = strchr(t, '\n');
		t = t ? t + 1 : NULL;
	}
	const char *e = t ? strchr(t, '\n') : NULL;
	size_t l = e ? (size_t)(e - t) : 0;
	if (l >= n)
		l = n - 1;
	memcpy(buf, t ? t : "", l);
	buf[l] = '\0';
}

/* At 80x24 a message wider than the screen, as `g` leaves after it
 * stops, wraps at spaces over the bottom rows, the event log ending
 * above them: it showed its first 40 columns, "..." and its last 37
 * ("go 10:00:00: stopped at 09:58:12, the l...ation before it: nothing
 * happens until the next one"). Help opened over it stays above it. */
static void
test_long_message_wraps_at_80x24(void **state)
{
	fixture *f = *state;
	static const char msg[] =
	        "go 10:00:00: stopped at 09:58:12, the last publication "
	        "before it: nothing happens until the next one (re-ran from "
	        "the day's start, recording to /tmp/day-2x-3.sqlite)";
	fake_scene_break(f->view);
	snprintf(f->view->ui.message, sizeof(f->view->ui.message), "%s", msg);
	char *t = draw_and_read(f, 80, 24);
	char row[4][512], joined[1024];
	for (int i = 0; i < 4; i++)
		text_row(t, 20 + i, row[i], sizeof(row[i]));
	snprintf(joined, sizeof(joined), "%s %s %s", row[1], row[2], row[3]);
	assert_string_equal(joined, msg);
	for (int i = 1; i < 4; i++) {
		assert_true(strlen(row[i]) <= 80);
		assert_null(strstr(row[i], "..."));
	}
	/* The event log's box closes on the row above. */
	assert_int_equal(row[0][0], '+');
	assert_int_equal(row[0][79], '+');
	free(t);
	/* The same message fits on one line at 200 columns. */
	t = draw_and_read(f, 200, 60);
	text_row(t, 59, row[0], sizeof(row[0]));
	assert_string_equal(row[0], msg);
	free(t);
	/* Help over it ends above it. */
	f->view->ui.overlay = MS_OVERLAY_HELP;
	t = draw_and_read(f, 80, 24);
	for (int i = 0; i < 4; i++)
		text_row(t, 20 + i, row[i], sizeof(row[i]));
	snprintf(joined, sizeof(joined), "%s %s %s", row[1], row[2], row[3]);
	assert_string_equal(joined, msg);
	assert_non_null(strchr(row[0], '+'));
	free(t);
}

static void
test_running_smallest(void **state)
{
	fixture *f = *state;
	fake_scene_running(f->view);
	char *t = draw_and_read(f, 80, 24);
	expect_snapshot("running-80x24", t);
	/* Optional panels folded away, required ones there. */
	assert_null(strstr(t, "Plugins"));
	assert_null(strstr(t, "Timeline"));
	assert_non_null(strstr(t, "Inventory"));
	assert_non_null(strstr(t, "Events"));
	free(t);
}

static void
test_help(void **state)
{
	fixture *f = *state;
	fake_scene_running(f->view);
	f->view->ui.overlay = MS_OVERLAY_HELP;
	char *t = draw_and_read(f, 80, 24);
	expect_snapshot("help-80x24", t);
	assert_non_null(strstr(t, "down scrolls"));
	/* Scrolled through, every key of the table, every command and every
	 * breakpoint spec is listed. */
	size_t cap = 1 << 16, used = 0;
	char *all = calloc(1, cap);
	assert_non_null(all);
	for (size_t top = 0; top < ms__help_lines(); top += 5) {
		f->view->ui.help_scroll = top;
		char *p = draw_and_read(f, 80, 24);
		size_t l = strlen(p);
		if (used + l + 1 < cap) {
			memcpy(all + used, p, l + 1);
			used += l;
		}
		free(p);
	}
	for (size_t i = 0; i < ms_key_table_len; i++)
		assert_non_null(strstr(all, ms_key_table[i].help));
	static const char *const more[] = {
		"export FMT [PATH]", "filter TEXT", "depth>=D",
		"time=HH:MM[:SS]",   "part=HEX",    "lane=fast|slow",
		"Mouse: a click",    "d deletes",   "Tab completes",
		"powers of 1024",
	};
	for (size_t i = 0; i < sizeof(more) / sizeof(more[0]); i++)
		assert_non_null(strstr(all, more[i]));
	free(all);
	free(t);
}

/* At the start, before the day: the run waits for the verdict oracle,
 * and the top line says so beside the state. */
static void
test_preparing(void **state)
{
	fixture *f = *state;
	fake_scene_running(f->view);
	f->view->preparing = true;
	f->view->pub_done = 0;
	f->view->merges_done = 0;
	char *t = draw_and_read(f, 132, 44);
	assert_non_null(strstr(t, "RUNNING  preparing: verdict oracle t "));
	assert_non_null(strstr(t, "pub 0/3219"));
	free(t);
	f->view->preparing = false;
	t = draw_and_read(f, 132, 44);
	assert_null(strstr(t, "preparing"));
	free(t);
}

static void
test_too_small(void **state)
{
	fixture *f = *state;
	fake_scene_running(f->view);
	char *t = draw_and_read(f, 60, 20);
	expect_snapshot("too-small-60x20", t);
	assert_non_null(strstr(t, "too small: need 80x24, have 60x20"));
	/* The replay goes on: its state and time stay on the top line. */
	assert_non_null(strstr(t, "RUNNING  t 06:12:30"));
	assert_non_null(strstr(t, "or q quits"));
	free(t);
	/* A prompt or a box open when the screen shrank takes the next q
	 * (typed into the prompt, or closing the box, neither of which
	 * shows; q had quitting promised): the notice says how to get out
	 * from there. */
	f->view->ui.prompt = MS_PROMPT_EXPORT;
	t = draw_and_read(f, 60, 20);
	assert_null(strstr(t, "or q quits"));
	assert_non_null(strstr(t, "Esc closes what is open, then q quits"));
	free(t);
	f->view->ui.prompt = MS_PROMPT_NONE;
	f->view->ui.overlay = MS_OVERLAY_HELP;
	t = draw_and_read(f, 60, 20);
	assert_null(strstr(t, "or q quits"));
	assert_non_null(strstr(t, "Esc closes what is open, then q quits"));
	free(t);
	f->view->ui.overlay = MS_OVERLAY_NONE;
	t = draw_and_read(f, 20, 6);
	assert_non_null(strstr(t, "need 80x24"));
	assert_non_null(strstr(t, "have 20x6"));
	free(t);
}

/* Below the smallest size the notice fits (9 columns: "too small"),
 * nothing is drawn; above it, every line under the status line is one
 * of the notice's lines whole: a 1x1 screen showed "t", the first letter
 * of "too small", and a narrow one the hint cut off mid-word. */
static void
test_tiny_screens_whole_lines(void **state)
{
	fixture *f = *state;
	fake_scene_running(f->view);
	static const int sizes[][2] = { { 1, 1 },  { 2, 1 },   { 8, 2 },
		                        { 9, 1 },  { 10, 3 },  { 20, 5 },
		                        { 20, 7 }, { 40, 10 }, { 33, 8 } };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		int w = sizes[i][0], h = sizes[i][1];
		char have[32], whole[96], row[512];
		snprintf(have, sizeof(have), "have %dx%d", w, h);
		snprintf(whole, sizeof(whole),
		         "too small: need 80x24, have %dx%d", w, h);
		const char *lines[] = { "too small", "need 80x24", have,
			                whole,       "q quits",
			                "enlarge the terminal, or q quits" };
		char *t = draw_and_read(f, w, h);
		bool said = false;
		for (int y = h >= 5 ? 1 : 0; y < h; y++) {
			text_row(t, y, row, sizeof(row));
			const char *p = row + strspn(row, " ");
			bool known = !*p;
			for (size_t k = 0; k < 6 && !known; k++)
				known = strcmp(p, lines[k]) == 0;
			if (!known)
				fail_msg("%dx%d row %d: \"%s\"", w, h, y, row);
			said = said || *p;
		}
		/* From 9 columns on, the notice is there. */
		assert_true(said == (w >= 9));
		free(t);
	}
	/* 40x10: the whole line and the hint. */
	char *t = draw_and_read(f, 40, 10);
	assert_non_null(strstr(t, "too small: need 80x24, have 40x10"));
	assert_non_null(strstr(t, "enlarge the terminal, or q quits"));
	free(t);
}

/* With no merge pending, the hint under "none pending" counts the
 * breakpoints set: under --break sampling it said "b sets one". */
static void
test_none_pending_counts_breaks(void **state)
{
	fixture *f = *state;
	fake_scene_running(f->view);
	char *t = draw_and_read(f, 80, 24);
	assert_non_null(strstr(t, "b sets one (e.g. \"mature\")"));
	free(t);
	f->view->nbreaks = 1;
	snprintf(f->view->breaks[0].spec, sizeof(f->view->breaks[0].spec),
	         "sampling");
	f->view->breaks[0].enabled = true;
	t = draw_and_read(f, 80, 24);
	assert_null(strstr(t, "b sets one"));
	assert_non_null(strstr(t, "1 set, b lists them"));
	free(t);
	f->view->breaks[0].enabled = false;
	t = draw_and_read(f, 80, 24);
	assert_non_null(strstr(t, "none enabled: b lists them"));
	free(t);
}

static void
test_resize_any_moment(void **state)
{
	fixture *f = *state;
	fake_scene_break(f->view);
	f->view->ui.overlay = MS_OVERLAY_BREAKS;
	static const int sizes[][2] = { { 250, 70 }, { 80, 24 },  { 79, 24 },
		                        { 3, 2 },    { 181, 43 }, { 120, 28 },
		                        { 100, 42 }, { 80, 70 } };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		char *t = draw_and_read(f, sizes[i][0], sizes[i][1]);
		if (sizes[i][0] >= 80 && sizes[i][1] >= 24) {
			assert_non_null(strstr(t, "BREAK"));
			assert_non_null(strstr(t, "Breakpoints"));
		}
		free(t);
	}
}

static void
test_unicode_glyphs(void **state)
{
	fixture *f = *state;
	fake_scene_running(f->view);
	f->view->ui.ascii = false;
	char *t = draw_and_read(f, 100, 34);
	assert_non_null(strstr(t, "\xe2\x94\x8c")); /* U+250C corner */
	free(t);
	f->view->ui.ascii = true;
	t = draw_and_read(f, 100, 34);
	assert_null(strstr(t, "\xe2\x94\x8c"));
	for (const char *p = t; *p; p++)
		assert_true((unsigned char)*p < 0x80);
	free(t);
}

static void
test_filter_shows_in_log(void **state)
{
	fixture *f = *state;
	fake_scene_running(f->view);
	char err[128];
	assert_true(ms_tui_filter_parse("lane=slow", &f->view->ui.filt, err,
	                                sizeof(err)));
	snprintf(f->view->ui.filter, sizeof(f->view->ui.filter), "lane=slow");
	char *t = draw_and_read(f, 132, 44);
	assert_non_null(strstr(t, "Events 57 merges, 6 match /lane=slow"));
	assert_null(strstr(t, " fast "));
	free(t);
}

/* Enter on a merge: its fields, then its inputs one per line; a box too
 * short for all of them scrolls (its title says which lines show), so
 * the last input and the fields after the first screen can be read (at
 * 80x24 they were cut off: wall, cpu, result, the inputs). */
static void
test_merge_details(void **state)
{
	fixture *f = *state;
	fake_scene_running(f->view);
	f->view->ui.focus = MS_FOCUS_EVENTS;
	f->view->ui.event_sel = 12; /* 10 inputs */
	f->view->ui.overlay = MS_OVERLAY_DETAIL;
	char *t = draw_and_read(f, 132, 44);
	assert_non_null(strstr(t, "Merge #12"));
	assert_non_null(strstr(t, "input part"));
	assert_non_null(strstr(t, "00000000000001c0"));
	assert_non_null(strstr(t, "00000000000001c9"));
	assert_null(strstr(t, "more input"));
	free(t);
	/* 132x28: not all ten fit; scrolled to the end, the last shows */
	t = draw_and_read(f, 132, 28);
	assert_non_null(strstr(t, "00000000000001c0"));
	assert_null(strstr(t, "00000000000001c9"));
	assert_non_null(strstr(t, ", down scrolls  (Esc closes)"));
	free(t);
	f->view->ui.detail_scroll = ms__detail_lines(f->view, 60, NULL) - 1;
	t = draw_and_read(f, 132, 28);
	assert_non_null(strstr(t, "00000000000001c9"));
	assert_null(strstr(t, "down scrolls"));
	free(t);
	/* 80x24, one column: the fields below the first screen */
	f->view->ui.detail_scroll = 0;
	t = draw_and_read(f, 80, 24);
	assert_null(strstr(t, "result "));
	free(t);
	f->view->ui.detail_scroll = 20;
	t = draw_and_read(f, 80, 24);
	assert_non_null(strstr(t, "result "));
	assert_non_null(strstr(t, "wall "));
	free(t);
	/* A merge that dropped every trace published no part: said so, not
	 * shown as part 0000000000000000. */
	f->view->ui.detail_scroll = 0;
	for (size_t i = 0; i < f->view->nevents; i++)
		if (f->view->events[i].seq == 12) {
			f->view->events[i].output_id = 0;
			f->view->events[i].rows_out = 0;
		}
	t = draw_and_read(f, 132, 44);
	assert_non_null(strstr(t, "output part"));
	assert_non_null(strstr(t, "none (every trace dropped)"));
	assert_null(strstr(t, "0000000000000000"));
	free(t);
}

/* Keys as a terminal sends them, read back through ms_screen_key. */
static void
read_keys(const char *term, const char *bytes, int *keys, size_t n)
{
	FILE *in = tmpfile(), *out = fopen("/dev/null", "w");
	assert_non_null(in);
	assert_non_null(out);
	fputs(bytes, in);
	rewind(in);
	ms_screen_opts so = { .out = out, .in = in, .term = term };
	ms_errbuf eb = { "" };
	ms_screen *scr;
	assert_int_equal(ms_screen_open(&scr, &so, &eb), 0);
	for (size_t i = 0; i < n; i++)
		keys[i] = ms_screen_key(scr, 50);
	ms_screen_close(scr);
	fclose(in);
	fclose(out);
}

/* tmux sends Home and End as ESC [ 1 ~ and ESC [ 4 ~ whatever TERM says;
 * under TERM=xterm-256color curses does not know them and handed over
 * ESC, `[` (back one barrier: the replay re-ran), `4`, `~`. Such a
 * sequence is one key, or none; a lone ESC is still Esc. */
static void
test_unlisted_escape_sequences(void **state)
{
	(void)state;
	int k[8];
	read_keys("xterm-256color",
	          "\033[4~\033[1~\033[F\033[1;5H\033[7~x\033[8~\033[5~", k, 8);
	assert_int_equal(k[0], MS_KEY_END);
	assert_int_equal(k[1], MS_KEY_HOME);
	assert_int_equal(k[2], MS_KEY_END);
	assert_int_equal(k[3], MS_KEY_NONE); /* ctrl-Home: nothing */
	assert_int_equal(k[4], MS_KEY_HOME);
	assert_int_equal(k[5], 'x');
	assert_int_equal(k[6], MS_KEY_END);
	assert_int_equal(k[7], MS_KEY_PGUP);
	/* An X10 mouse report vt100 does not list: none of its bytes is a
	 * key (the space of a button-1 press was run/pause). */
	read_keys("vt100", "\033[M !!x", k, 2);
	assert_int_equal(k[0], MS_KEY_NONE);
	assert_int_equal(k[1], 'x');
	/* ESC then a key that starts no sequence: both keys. */
	read_keys("xterm-256color", "\033q", k, 2);
	assert_int_equal(k[0], MS_KEY_ESC);
	assert_int_equal(k[1], 'q');
}

/* A screen of type term on /dev/null, output and input; *out and *in
 * are closed by the caller. */
static int
open_null(const char *term, ms_screen **scr, FILE **out, FILE **in,
          ms_errbuf *eb)
{
	*out = fopen("/dev/null", "w");
	*in = fopen("/dev/null", "r");
	assert_non_null(*out);
	assert_non_null(*in);
	ms_screen_opts so = { .out = *out, .in = *in, .term = term };
	return ms_screen_open(scr, &so, eb);
}

/* Input at its end (stdin from /dev/null) returns at once: the key wait
 * still lasts its timeout (the main loop spun a core while paused; a
 * lower bound, so a loaded machine cannot make it fail). */
static void
test_key_wait_at_end_of_input(void **state)
{
	(void)state;
	FILE *out, *in;
	ms_errbuf eb = { "" };
	ms_screen *scr;
	assert_int_equal(open_null("xterm-256color", &scr, &out, &in, &eb), 0);
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < 5; i++)
		assert_int_equal(ms_screen_key(scr, 40), MS_KEY_NONE);
	clock_gettime(CLOCK_MONOTONIC, &b);
	long ms = (long)(b.tv_sec - a.tv_sec) * 1000 +
	          (b.tv_nsec - a.tv_nsec) / 1000000;
	assert_true(ms >= 5 * 20);
	ms_screen_close(scr);
	fclose(out);
	fclose(in);
}

/* TERM=dumb (no cursor addressing) was opened, and every frame came out
 * as a stream of lines: refused, naming the terminal type; a terminal
 * that can address its cursor still opens. */
static void
test_dumb_terminal_refused(void **state)
{
	(void)state;
	FILE *out, *in;
	ms_errbuf eb = { "" };
	ms_screen *scr = (ms_screen *)1;
	assert_int_equal(open_null("dumb", &scr, &out, &in, &eb), MS_ERR_STATE);
	assert_null(scr);
	assert_non_null(strstr(eb.msg, "\"dumb\" cannot move the cursor"));
	fclose(out);
	fclose(in);
	assert_int_equal(open_null("vt100", &scr, &out, &in, &eb), 0);
	ms_screen_close(scr);
	fclose(out);
	fclose(in);
}

/* The alternate screen is left blank: under tmux (3.3a), resized while
 * the TUI was up, that screen's rows came back into the shell's after q,
 * the last frame standing under the prompt. Written to a file as to a
 * terminal: after the last frame's text, the screen is cleared before the
 * alternate screen is left (rmcup, ESC [ ? 1049 l). */
static void
test_close_leaves_blank_screen(void **state)
{
	(void)state;
	FILE *out = tmpfile(), *in = fopen("/dev/null", "r");
	assert_non_null(out);
	assert_non_null(in);
	ms_screen_opts so = { .out = out, .in = in, .term = "xterm-256color" };
	ms_errbuf eb = { "" };
	ms_screen *scr;
	assert_int_equal(ms_screen_open(&scr, &so, &eb), 0);
	assert_int_equal(ms_screen_resize(scr, 90, 30), 0);
	ms_canvas c;
	ms_canvas_init(&c);
	assert_int_equal(ms_canvas_reset(&c, 90, 30), 0);
	for (int y = 0; y < 30; y++)
		ms_canvas_text(&c, 0, y, 90, "LASTFRAME", 0);
	ms_screen_draw(scr, &c);
	ms_screen_close(scr);
	ms_canvas_release(&c);
	fclose(in);
	long n = ftell(out);
	assert_true(n > 0);
	char *buf = calloc(1, (size_t)n + 1);
	assert_non_null(buf);
	rewind(out);
	assert_int_equal(fread(buf, 1, (size_t)n, out), (size_t)n);
	fclose(out);
	const char *last = NULL, *rmcup = NULL;
	for (const char *p = buf; (p = strstr(p, "LASTFRAME")); p++)
		last = p;
	for (const char *p = buf; (p = strstr(p, "\033[?1049l")); p++)
		rmcup = p;
	assert_non_null(last);
	assert_non_null(rmcup);
	assert_true(last < rmcup);
	/* clear_screen (ESC [ 2 J) or home and clr_eos (ESC [ J). */
	const char *clear = strstr(last, "\033[2J");
	if (!clear || clear > rmcup)
		clear = strstr(last, "\033[J");
	assert_non_null(clear); /* no clear after the last frame */
	assert_true(clear < rmcup);
	free(buf);
}

static void
test_no_color(void **state)
{
	(void)state;
	unsetenv("NO_COLOR");
	assert_true(ms__color_wanted(false));
	assert_false(ms__color_wanted(true));
	setenv("NO_COLOR", "1", 1);
	assert_false(ms__color_wanted(false));
	setenv("NO_COLOR", "", 1); /* empty means unset (no-color.org) */
	assert_true(ms__color_wanted(false));
	unsetenv("NO_COLOR");
}

/* A stopped run whose screen does not change is drawn ever more rarely
 * (at most once a second), not 30 times a second: a paused TUI took 0.9%
 * of a core drawing the same frame. What draws nothing new says so; a
 * change, or the run going on, brings the frame rate back at once. */
static void
test_idle_frames_slow_down(void **state)
{
	fixture *f = *state;
	f->view->state = MS_VIEW_PAUSED;
	assert_int_equal(ms_screen_resize(f->scr, 120, 40), 0);
	assert_int_equal(ms_render_frame(&f->canvas, f->view, 120, 40), 0);
	ms_screen_draw(f->scr, &f->canvas);
	assert_int_equal(ms_render_frame(&f->canvas, f->view, 120, 40), 0);
	assert_false(ms_screen_draw(f->scr, &f->canvas));
	f->view->pub_done = 7;
	assert_int_equal(ms_render_frame(&f->canvas, f->view, 120, 40), 0);
	assert_true(ms_screen_draw(f->scr, &f->canvas));

	const int64_t frame = 1000000000LL / 30;
	ms__pacer p = { .frame_ns = frame, .wait_ns = frame };
	/* Twenty seconds paused with nothing changing. */
	int64_t t = 0;
	unsigned frames = 0;
	while (t < 20000000000LL) {
		t += ms__pace_next(&p, true, false);
		frames++;
	}
	assert_true(frames <= 30);
	assert_int_equal(p.wait_ns, MS__IDLE_MAX_NS);
	/* A change, then the run going on: every frame again. */
	assert_int_equal(ms__pace_next(&p, true, true), frame);
	assert_true(ms__pace_next(&p, true, false) > frame);
	assert_int_equal(ms__pace_next(&p, false, false), frame);
	assert_int_equal(ms__pace_next(&p, false, false), frame);
}

int
main(void)
{
	if (!setlocale(LC_ALL, "C.UTF-8"))
		setlocale(LC_ALL, "C.utf8");
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_running, setup, teardown),
		cmocka_unit_test_setup_teardown(test_idle_frames_slow_down,
		                                setup, teardown),
		cmocka_unit_test_setup_teardown(test_preparing, setup,
		                                teardown),
		cmocka_unit_test_setup_teardown(
		        test_break_with_mature_selection, setup, teardown),
		cmocka_unit_test_setup_teardown(
		        test_break_plan_of_sampling_selection, setup, teardown),
		cmocka_unit_test_setup_teardown(test_selection_inputs_at_80x24,
		                                setup, teardown),
		cmocka_unit_test_setup_teardown(
		        test_frozen_command_wraps_at_spaces, setup, teardown),
		cmocka_unit_test_setup_teardown(test_running_wide, setup,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_status_counts_every_width,
		                                setup, teardown),
		cmocka_unit_test_setup_teardown(test_staging_no_preferred_yet,
		                                setup, teardown),
		cmocka_unit_test_setup_teardown(test_status_fits_by_columns,
		                                setup, teardown),
		cmocka_unit_test_setup_teardown(test_timeline_short_day, setup,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_events_class_whole_at_80,
		                                setup, teardown),
		cmocka_unit_test_setup_teardown(
		        test_gates_detail_clear_of_border, setup, teardown),
		cmocka_unit_test_setup_teardown(test_gates_name_database, setup,
		                                teardown),
		cmocka_unit_test(test_clock_forms),
		cmocka_unit_test(test_number_forms),
		cmocka_unit_test_setup_teardown(test_clock_on_screen, setup,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_timeline_zoom, setup,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_running_smallest, setup,
		                                teardown),
		cmocka_unit_test_setup_teardown(
		        test_long_message_wraps_at_80x24, setup, teardown),
		cmocka_unit_test_setup_teardown(test_help, setup, teardown),
		cmocka_unit_test_setup_teardown(test_none_pending_counts_breaks,
		                                setup, teardown),
		cmocka_unit_test_setup_teardown(test_tiny_screens_whole_lines, setup,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_too_small, setup,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_resize_any_moment, setup,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_unicode_glyphs, setup,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_filter_shows_in_log, setup,
		                                teardown),
		cmocka_unit_test_setup_teardown(test_merge_details, setup,
		                                teardown),
		cmocka_unit_test(test_no_color),
		cmocka_unit_test(test_unlisted_escape_sequences),
		cmocka_unit_test(test_dumb_terminal_refused),
		cmocka_unit_test(test_close_leaves_blank_screen),
		cmocka_unit_test(test_key_wait_at_end_of_input),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
