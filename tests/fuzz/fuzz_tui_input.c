/*
 * fuzz_tui_input.c - libFuzzer harness for what a user types into the TUI:
 * the event-log filter (ms_tui_filter_parse, then matched against the
 * scene's events), the go-to target (ms_parse_target), and whole key
 * sequences through ms_session_key: the `:` command line and every other
 * prompt (filter, go to, export, new breakpoint), the breakpoint list, the
 * overlays and navigation. Keys run against the test suite's fake
 * controller (tests/tui_fake.h, no file is written, nothing runs), except
 * that adding a breakpoint goes through the real ms_bp_parse and the list
 * is bounded as the replay bounds it. The session is then drawn once.
 *
 * Input: byte 0 picks the parser (mod 3: filter, target, keys).
 * Keys: byte 1 picks the scene (bit 0: stopped at a barrier) and the
 * frame size; each later byte is a key: printable ASCII as itself, '\n'
 * as Enter, any other byte one of the special keys below.
 * What must hold: refusals carry a message; accepted filters match
 * without sanitizer reports; an accepted go-to target is what an
 * independent strict reading of "#N", "N" or "[+Dd ]HH:MM[:SS]" gives; the
 * session's strings stay terminated and its cursor inside the line.
 */
#include "ms_replay.h"
#include "tui_fake.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const int special[32] = {
	MS_KEY_ENTER,     MS_KEY_ESC,        MS_KEY_BACKSPACE, MS_KEY_DELETE,
	MS_KEY_LEFT,      MS_KEY_RIGHT,      MS_KEY_HOME,      MS_KEY_END,
	MS_KEY_UP,        MS_KEY_DOWN,       MS_KEY_PGUP,      MS_KEY_PGDN,
	MS_KEY_TAB,       MS_KEY_BTAB,       MS_KEY_RESIZE,    MS_KEY_CTRL('a'),
	MS_KEY_CTRL('e'), MS_KEY_CTRL('u'),  MS_KEY_CTRL('l'), MS_KEY_F(1),
	MS_KEY_F(2),      MS_KEY_F(3),       MS_KEY_F(4),      MS_KEY_F(5),
	MS_KEY_F(6),      MS_KEY_F(7),       MS_KEY_F(8),      MS_KEY_F(9),
	MS_KEY_F(10),     0x20ac /* euro */, MS_KEY_NONE,      0x7f,
};

/* Breakpoints through the real parser, at most MS_VIEW_MAX_BREAKS. */
static int
fz_break_add(void *self, const char *spec, int *id, ms_errbuf *eb)
{
	fake_ctl *f = self;
	ms_breakpoint bp;
	int rc = ms_bp_parse(spec, &bp, eb);
	if (rc)
		return rc;
	if (f->model->nbreaks >= MS_VIEW_MAX_BREAKS)
		return ms_fail(eb, MS_ERR_RANGE, "breakpoint %s: %d already",
		               bp.spec, MS_VIEW_MAX_BREAKS);
	*id = ++f->next_break;
	ms_tui_break *b = &f->model->breaks[f->model->nbreaks++];
	b->id = *id;
	snprintf(b->spec, sizeof(b->spec), "%s", bp.spec);
	b->enabled = true;
	return 0;
}

static ms_tui_ctl_ops ops;
static ms_tui_view *scenes[2];
/* The session as ms_session_init leaves it (fresh0, its view), and the
 * two views every key sequence uses: the fake's model and the session's
 * view. A view is 0.4 MiB: allocated per input, each came from a fresh
 * mmap whose page faults and munmap were most of an input's time. Each
 * input still starts from a copy of the scene and of fresh0, so nothing
 * carries over from the input before. */
static ms_tui_session fresh0;
static ms_tui_view *model_buf, *view_buf;

static void
setup(void)
{
	ops = fake_ops;
	ops.break_add = fz_break_add;
	for (int i = 0; i < 2; i++) {
		scenes[i] = ms_tui_view_new();
		if (!scenes[i])
			abort();
	}
	fake_scene_running(scenes[0]);
	fake_scene_break(scenes[1]);
	model_buf = ms_tui_view_new();
	view_buf = ms_tui_view_new();
	if (!model_buf || !view_buf || ms_session_init(&fresh0, NULL) != 0)
		abort();
}

static void
check_terminated(const char *s, size_t n)
{
	if (!memchr(s, '\0', n))
		abort();
}

static void
run_filter(const char *text)
{
	ms_tui_filter f;
	char err[MS_VIEW_TEXT];
	if (!ms_tui_filter_parse(text, &f, err, sizeof(err))) {
		if (!err[0])
			abort();
		return;
	}
	check_terminated(f.text, sizeof(f.text));
	const ms_tui_view *v = scenes[0];
	for (size_t i = 0; i < v->nevents; i++)
		(void)ms_tui_filter_match(&f, &v->events[i], v->day_start);
	/* An empty summary falls back to the TUI's own line. */
	ms_tui_event e = v->events[0];
	e.summary[0] = '\0';
	e.reason[0] = '\0';
	(void)ms_tui_filter_match(&f, &e, v->day_start);
	bool empty = ms_tui_filter_empty(&f);
	if (empty && !ms_tui_filter_match(&f, &e, v->day_start))
		abort(); /* an empty filter matches everything */
}

static bool
is_space(char c)
{
	return c == ' ' || (c >= '\t' && c <= '\r');
}

/* Digits at *p as a number; how many in *nd, -1 if it overflows. */
static uint64_t
digits(const char **p, int *nd)
{
	uint64_t v = 0;
	bool over = false;
	*nd = 0;
	for (; **p >= '0' && **p <= '9'; (*p)++, (*nd)++) {
		uint64_t d = (uint64_t)(**p - '0');
		over = over || v > (UINT64_MAX - d) / 10;
		v = v * 10 + d;
	}
	if (over)
		*nd = -1;
	return v;
}

/* An independent reading of a go-to target: "#N" or "N" (a merge), or
 * "[+Dd ]HH:MM[:SS]" with 1-2 digit fields, spaces around allowed. */
static bool
target_of(const char *s, ms_tui_target *t)
{
	int nd;
	while (is_space(*s))
		s++;
	memset(t, 0, sizeof(*t));
	if (*s == '#' || ((*s >= '0' && *s <= '9') && !strchr(s, ':'))) {
		s += *s == '#';
		t->kind = MS_TARGET_MERGE;
		t->seq = digits(&s, &nd);
		while (is_space(*s))
			s++;
		return nd > 0 && !*s && t->seq;
	}
	uint64_t days = 0;
	if (*s == '+') {
		s++;
		days = digits(&s, &nd);
		if (!nd || *s++ != 'd' || days > 7)
			return false;
		while (is_space(*s))
			s++;
	}
	uint64_t f[3] = { 0, 0, 0 };
	int n = 0;
	for (;;) {
		if (n == 3)
			return false;
		f[n++] = digits(&s, &nd);
		if (nd < 1 || nd > 2)
			return false;
		if (*s != ':')
			break;
		s++;
	}
	while (is_space(*s))
		s++;
	if (*s || n < 2 || f[0] > 48 || f[1] > 59 || f[2] > 59)
		return false;
	t->kind = MS_TARGET_TIME;
	t->t = FAKE_DAY0 + (int64_t)days * 24 * FAKE_H +
	       (int64_t)(f[0] * 3600 + f[1] * 60 + f[2]) * 1000000000LL;
	return true;
}

static void
run_target(const char *text)
{
	ms_tui_target t, want;
	bool ok = ms_parse_target(text, FAKE_DAY0, &t);
	bool want_ok = target_of(text, &want);
	if (ok && (!want_ok || t.kind != want.kind || t.seq != want.seq ||
	           t.t != want.t)) {
		fprintf(stderr, "go to \"%s\" misread\n", text);
		abort();
	}
}

static void
run_keys(const uint8_t *data, size_t size)
{
	if (size < 1)
		return;
	unsigned sel = data[0];
	ms_tui_view *model = model_buf;
	memcpy(model, scenes[sel & 1], sizeof(*model));
	fake_ctl f;
	ms_tui_ctl ctl;
	fake_init(&f, &ctl, model);
	ctl.ops = &ops;
	ms_tui_session s = fresh0;
	s.ctl = &ctl;
	s.view = view_buf;
	memcpy(s.view, fresh0.view, sizeof(*s.view));
	ms_session_snapshot(&s);
	for (size_t i = 1; i < size; i++) {
		uint8_t b = data[i];
		int key = b == '\n'               ? MS_KEY_ENTER
		          : b >= 0x20 && b < 0x7f ? b
		                                  : special[b & 31];
		ms_session_key(&s, key);
		ms_tui_ui *ui = &s.view->ui;
		check_terminated(ui->cmdline, sizeof(ui->cmdline));
		check_terminated(ui->message, sizeof(ui->message));
		check_terminated(ui->filter, sizeof(ui->filter));
		if (ui->cursor > strlen(ui->cmdline))
			abort();
		if (f.log[sizeof(f.log) / 2])
			f.log[0] = '\0'; /* keep the fake's log short */
		if (i % 8 == 0)
			ms_session_snapshot(&s);
	}
	ms_session_snapshot(&s);
	ms_canvas c;
	ms_canvas_init(&c);
	int w = 20 + (int)((sel >> 1) % 200), h = 5 + (int)((sel >> 4) % 60);
	(void)ms_render_frame(&c, s.view, w, h);
	ms_canvas_release(&c);
	/* s.view is view_buf, kept for the next input: what
	 * ms_session_release would free. The rest of what it frees, the
	 * session's frozen commands, is freed here. */
	free(s.frozen_all);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!scenes[0])
		setup();
	if (size < 1 || size > 4096)
		return 0;
	unsigned mode = data[0] % 3;
	if (mode == 2) {
		run_keys(data + 1, size - 1);
		return 0;
	}
	char *s = malloc(size);
	memcpy(s, data + 1, size - 1);
	s[size - 1] = '\0';
	if (mode == 0)
		run_filter(s);
	else
		run_target(s);
	free(s);
	return 0;
}
