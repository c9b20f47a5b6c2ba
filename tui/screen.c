/*
 * screen.c - the only file that talks to curses.
 *
 * It opens a terminal with newterm (so tests and benchmarks can point it at
 * a file), copies finished canvases to it, reads keys with a timeout and
 * translates them to MS_KEY_* codes, and makes sure the terminal is given
 * back: on close, from an atexit handler, and after SIGINT/SIGTERM/SIGHUP,
 * whose handlers only set a flag that the main loop polls (endwin runs on
 * the main thread, never inside a signal handler).
 *
 * Colours: only when the caller asks (NO_COLOR and --no-color are applied
 * by the caller) and the terminal has them; pairs use the terminal's
 * default colours (-1) for everything but the foreground of accents.
 *
 * Invariants:
 *  1. At most one ms_screen is open at a time; `active` points to it.
 *  2. `last` holds what was last copied to curses; rows equal to it are
 *     not copied again unless `force` is set (resize, ctrl-L).
 *  3. After ms_screen_close (or the atexit handler) the terminal is in the
 *     state it was before ms_screen_open, its alternate screen blank.
 */
#define NCURSES_WIDECHAR 1
#include "tui_int.h"

#include <curses.h>
#include <term.h>
#include <langinfo.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/select.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct ms_screen {
	SCREEN *scr;
	FILE *out, *in;
	bool color;
	bool open;
	bool force;
	bool own_in; /* `in` is /dev/tty, opened here */
	ms_canvas last;
	wchar_t run[1024];
	ms_mouse mouse; /* the last MS_KEY_MOUSE */
	int wake_fd;    /* ms_screen_opts.wake_fd; 0: none */
	bool woken;     /* a wake was read since ms_screen_woken */
	bool listen;    /* key waits end on a wake (ms_screen_listen) */
};

static ms_screen *active;
static volatile sig_atomic_t interrupted;
static bool atexit_set;

static void
on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

/* Give the terminal back: the last frame is wiped first. tmux (3.3a)
 * resized while a program held its alternate screen brings that screen's
 * rows back into the shell's when the program leaves it: the last frame
 * stayed under the prompt, and the lines after quitting were written
 * into it. A blank alternate screen leaves nothing to bring back. */
static void
leave_curses(void)
{
	werase(stdscr);
	wnoutrefresh(stdscr);
	doupdate();
	endwin();
}

static void
restore_at_exit(void)
{
	if (active && active->open) {
		set_term(active->scr);
		leave_curses();
		active->open = false;
	}
}

bool
ms_screen_interrupted(void)
{
	return interrupted != 0;
}

bool
ms_screen_unicode(void)
{
	const char *cs = nl_langinfo(CODESET);
	return cs && (strcmp(cs, "UTF-8") == 0 || strcmp(cs, "utf8") == 0);
}

static void
install_signals(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	/* No SA_RESTART: a blocked key read returns so the loop sees the
	 * flag. Installed before newterm, so curses leaves them alone. */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

static int
no_cursor(const char *term, ms_errbuf *eb)
{
	return ms_fail(eb, MS_ERR_STATE,
	               "screen: terminal type \"%s\" cannot move the "
	               "cursor (set TERM to your terminal's type, or "
	               "run with --headless)",
	               term);
}

static int
no_term(const char *term, ms_errbuf *eb)
{
	return ms_fail(eb, MS_ERR_STATE,
	               "screen: cannot open terminal type \"%s\" "
	               "(is TERM right?)",
	               term);
}

static bool
moves_cursor(void)
{
	const char *cup = tigetstr("cup");
	return cup && cup != (const char *)-1;
}

int
ms_tui_term_check(const char *term, ms_errbuf *eb)
{
	if (!term)
		term = getenv("TERM");
	if (!term || !*term)
		term = "vt100";
	if (active)
		return 0; /* a screen is open: it was checked */
	int err = 0;
	/* setupterm reads the description only; its fd is for the size. */
	if (setupterm(term, STDOUT_FILENO, &err) != OK)
		return no_term(term, eb);
	bool ok = moves_cursor();
	del_curterm(cur_term);
	return ok ? 0 : no_cursor(term, eb);
}

int
ms_screen_open(ms_screen **out, const ms_screen_opts *o, ms_errbuf *eb)
{
	*out = NULL;
	if (active)
		return ms_fail(eb, MS_ERR_STATE, "screen: already open");
	ms_screen *s = calloc(1, sizeof(*s));
	if (!s)
		return ms_fail(
		        eb, MS_ERR_NOMEM,
		        "screen: out of memory for its state (%zu bytes)",
		        sizeof(*s));
	ms_canvas_init(&s->last);
	s->out = o && o->out ? o->out : stdout;
	s->in = o && o->in ? o->in : stdin;
	s->wake_fd = o ? o->wake_fd : 0;
	/* Keys come from the terminal even when stdin is not one (`tui
	 * < file`, a pipe): as less and htop do, from /dev/tty. Without
	 * it no key, q included, ever reached the screen. */
	if (!(o && o->in) && !isatty(fileno(stdin))) {
		FILE *tty = fopen("/dev/tty", "r");
		if (tty) {
			s->in = tty;
			s->own_in = true;
		}
	}
	if (o && o->signals) {
		interrupted = 0;
		install_signals();
	}
	const char *term = o && o->term ? o->term : getenv("TERM");
	if (!term || !*term)
		term = "vt100";
	s->scr = newterm(term, s->out, s->in);
	if (!s->scr) {
		if (s->own_in)
			fclose(s->in);
		free(s);
		return no_term(term, eb);
	}
	set_term(s->scr);
	/* A terminal that cannot move its cursor (TERM=dumb, a hardcopy)
	 * would get every frame as a stream of lines: refused before
	 * anything is written to it. */
	if (!moves_cursor()) {
		endwin();
		delscreen(s->scr);
		if (s->own_in)
			fclose(s->in);
		free(s);
		return no_cursor(term, eb);
	}
	s->open = true;
	active = s;
	if (!atexit_set) {
		atexit(restore_at_exit);
		atexit_set = true;
	}
	cbreak();
	noecho();
	nonl();
	keypad(stdscr, TRUE);
	leaveok(stdscr, TRUE);
	scrollok(stdscr, FALSE);
	curs_set(0);
	set_escdelay(25);
	/* Clicks and the wheel; presses are reported at once (no click
	 * interval to wait for). */
	mousemask(BUTTON1_PRESSED | BUTTON4_PRESSED | BUTTON5_PRESSED, NULL);
	mouseinterval(0);
	if (o && o->color && has_colors()) {
		start_color();
		use_default_colors();
		init_pair(MS_C_OK, COLOR_GREEN, -1);
		init_pair(MS_C_WARN, COLOR_YELLOW, -1);
		init_pair(MS_C_ALERT, COLOR_RED, -1);
		init_pair(MS_C_ACCENT, COLOR_CYAN, -1);
		init_pair(MS_C_HOT, COLOR_MAGENTA, -1);
		init_pair(MS_C_MUTED, -1, -1);
		s->color = true;
	}
	s->force = true;
	*out = s;
	return 0;
}

void
ms_screen_close(ms_screen *s)
{
	if (!s)
		return;
	if (s->open) {
		set_term(s->scr);
		leave_curses();
		s->open = false;
	}
	if (s->scr)
		delscreen(s->scr);
	if (s->own_in)
		fclose(s->in);
	if (active == s)
		active = NULL;
	ms_canvas_release(&s->last);
	free(s);
}

void
ms_screen_size(const ms_screen *s, int *w, int *h)
{
	(void)s;
	int y, x;
	getmaxyx(stdscr, y, x);
	*w = x;
	*h = y;
}

int
ms_screen_resize(ms_screen *s, int w, int h)
{
	if (resize_term(h, w) != OK)
		return MS_ERR_INVAL;
	s->force = true;
	return 0;
}

bool
ms_screen_has_color(const ms_screen *s)
{
	return s->color;
}

void
ms_screen_invalidate(ms_screen *s)
{
	s->force = true;
}

static attr_t
to_curses(const ms_screen *s, uint16_t a, short *pair)
{
	attr_t r = A_NORMAL;
	if (a & MS_A_BOLD)
		r |= A_BOLD;
	if (a & MS_A_REV)
		r |= A_REVERSE;
	if (a & MS_A_UL)
		r |= A_UNDERLINE;
	if ((a & MS_A_DIM) || (a & MS_C_MASK) == MS_C_MUTED)
		r |= A_DIM;
	*pair = s->color ? (short)(a & MS_C_MASK) : 0;
	return r;
}

static bool
row_same(const ms_canvas *a, const ms_canvas *b, int y)
{
	const ms_cell *ra = &a->cells[(size_t)y * (size_t)a->w];
	const ms_cell *rb = &b->cells[(size_t)y * (size_t)b->w];
	for (int x = 0; x < a->w; x++)
		if (ra[x].ch != rb[x].ch || ra[x].attr != rb[x].attr)
			return false;
	return true;
}

bool
ms_screen_draw(ms_screen *s, const ms_canvas *c)
{
	int w, h;
	ms_screen_size(s, &w, &h);
	bool same_size = s->last.w == c->w && s->last.h == c->h;
	if (!same_size)
		s->force = true;
	if (s->force)
		clearok(curscr, TRUE);
	bool changed = s->force;
	for (int y = 0; y < c->h && y < h; y++) {
		if (!s->force && row_same(c, &s->last, y))
			continue;
		changed = true;
		int x = 0;
		while (x < c->w && x < w) {
			uint16_t a = ms_canvas_at(c, x, y).attr;
			int n = 0, x0 = x;
			while (x < c->w && x < w && n < 1023 &&
			       ms_canvas_at(c, x, y).attr == a) {
				s->run[n++] = (wchar_t)ms_canvas_at(c, x, y).ch;
				x++;
			}
			short pair;
			attr_t at = to_curses(s, a, &pair);
			wattr_set(stdscr, at, pair, NULL);
			/* The bottom-right cell makes addnwstr report an
			 * error after placing it; nothing to handle. */
			(void)mvwaddnwstr(stdscr, y, x0, s->run, n);
		}
	}
	wattr_set(stdscr, A_NORMAL, 0, NULL);
	if (ms_canvas_reset(&s->last, c->w, c->h) == 0)
		memcpy(s->last.cells, c->cells,
		       (size_t)c->w * (size_t)c->h * sizeof(ms_cell));
	s->force = false;
	wnoutrefresh(stdscr);
	doupdate();
	return changed;
}

/* Escape sequences of keys the terminal description does not list: a
 * terminal (or tmux, which sends Home and End as ESC [ 1 ~ and ESC [ 4 ~
 * whatever TERM says) may send them, and curses then hands over the ESC
 * and the rest as separate keys, the `[` of which is a command (back one
 * barrier). The rest of the sequence after ESC, as sent. */
static const struct {
	const char *seq;
	int key;
} esc_keys[] = {
	{ "[A", MS_KEY_UP },      { "[B", MS_KEY_DOWN },
	{ "[C", MS_KEY_RIGHT },   { "[D", MS_KEY_LEFT },
	{ "[H", MS_KEY_HOME },    { "[F", MS_KEY_END },
	{ "[1~", MS_KEY_HOME },   { "[7~", MS_KEY_HOME },
	{ "[4~", MS_KEY_END },    { "[8~", MS_KEY_END },
	{ "[3~", MS_KEY_DELETE }, { "[5~", MS_KEY_PGUP },
	{ "[6~", MS_KEY_PGDN },   { "[Z", MS_KEY_BTAB },
	{ "OA", MS_KEY_UP },      { "OB", MS_KEY_DOWN },
	{ "OC", MS_KEY_RIGHT },   { "OD", MS_KEY_LEFT },
	{ "OH", MS_KEY_HOME },    { "OF", MS_KEY_END },
	{ "OM", MS_KEY_ENTER },   { "OP", MS_KEY_F(1) },
	{ "OQ", MS_KEY_F(2) },    { "OR", MS_KEY_F(3) },
	{ "OS", MS_KEY_F(4) },    { "[11~", MS_KEY_F(1) },
	{ "[12~", MS_KEY_F(2) },  { "[13~", MS_KEY_F(3) },
	{ "[14~", MS_KEY_F(4) },  { "[15~", MS_KEY_F(5) },
	{ "[17~", MS_KEY_F(6) },  { "[18~", MS_KEY_F(7) },
	{ "[19~", MS_KEY_F(8) },  { "[20~", MS_KEY_F(9) },
	{ "[21~", MS_KEY_F(10) },
};

/* After an ESC from curses: when the bytes of an escape sequence follow
 * at once (CSI `ESC [` parameters, final byte; or SS3 `ESC O` and one
 * byte), read them all and return their key, or MS_KEY_NONE for a
 * sequence with no meaning here (a modified key), so none of its bytes
 * acts as a key of its own. A lone ESC, or ESC and another key, stays
 * MS_KEY_ESC (the other key comes next). */
static int
escape_key(void)
{
	wint_t ch;
	wtimeout(stdscr, 0);
	int r = wget_wch(stdscr, &ch);
	if (r == ERR)
		return MS_KEY_ESC;
	if (r == KEY_CODE_YES || (ch != '[' && ch != 'O')) {
		if (r == KEY_CODE_YES)
			ungetch((int)ch);
		else
			unget_wch((wchar_t)ch);
		return MS_KEY_ESC;
	}
	char seq[16];
	size_t n = 0;
	bool csi = ch == '[';
	seq[n++] = (char)ch;
	for (;;) {
		r = wget_wch(stdscr, &ch);
		if (r != OK)
			break; /* cut short: drop what came */
		if (n + 1 < sizeof(seq))
			seq[n++] = (char)ch;
		/* SS3 ends with its one byte, CSI with a final byte
		 * (0x40-0x7e) after parameters and intermediates. */
		if (!csi || (ch >= 0x40 && ch <= 0x7e) || ch < 0x20 ||
		    ch > 0x7e)
			break;
	}
	seq[n] = '\0';
	/* A mouse report curses did not take (X10: ESC [ M and three
	 * bytes of button and position): the three bytes go with it. */
	if (strcmp(seq, "[M") == 0)
		for (int i = 0; i < 3 && wget_wch(stdscr, &ch) == OK; i++)
			;
	for (size_t i = 0; i < sizeof(esc_keys) / sizeof(esc_keys[0]); i++)
		if (strcmp(esc_keys[i].seq, seq) == 0)
			return esc_keys[i].key;
	return MS_KEY_NONE;
}

void
ms_screen_mouse(const ms_screen *s, ms_mouse *out)
{
	*out = s->mouse;
}

static int64_t
mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int key_of(ms_screen *s, int r, wint_t ch);

/* Read the wake descriptor empty; true when anything was in it. */
static bool
wake_drain(int fd)
{
	char buf[64];
	bool any = false;
	while (read(fd, buf, sizeof(buf)) > 0)
		any = true;
	return any;
}

/* Input that is still readable after curses read it and made no key of
 * it is at its end (a file, a terminal gone): it stays readable. */
static bool
input_at_end(int in)
{
	fd_set rd;
	FD_ZERO(&rd);
	FD_SET(in, &rd);
	struct timespec zero = { 0, 0 };
	return pselect(in + 1, &rd, NULL, NULL, &zero, NULL) > 0;
}

/* The input at its end: the rest of the wait is for a wake or a signal
 * only, or the loop calling this spun a core while stopped. */
static void
wake_only(ms_screen *s, const struct timespec *ts, int timeout_ms,
          const sigset_t *old)
{
	fd_set rd;
	FD_ZERO(&rd);
	FD_SET(s->wake_fd, &rd);
	if (pselect(s->wake_fd + 1, &rd, NULL, NULL, timeout_ms < 0 ? NULL : ts,
	            old) > 0)
		s->woken |= wake_drain(s->wake_fd);
}

/* With a wake descriptor: a key curses holds already, else wait up to
 * timeout_ms (-1: no limit) for input, a wake or a signal, then the key
 * (MS_KEY_NONE: none). The screen's signals and SIGWINCH stay blocked
 * from before curses looks at its input until pselect waits, which lets
 * them in: one that comes in between ends the wait at once (it was
 * missed until the next timeout). */
unsigned long ms__screen_waits;

static int
key_or_wake(ms_screen *s, int timeout_ms)
{
	ms__screen_waits++;
	sigset_t block, old;
	sigemptyset(&block);
	sigaddset(&block, SIGWINCH);
	sigaddset(&block, SIGHUP);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	wint_t ch;
	wtimeout(stdscr, 0);
	int r = wget_wch(stdscr, &ch);
	if (r == ERR && !interrupted) {
		int in = fileno(s->in), n = in > s->wake_fd ? in : s->wake_fd;
		fd_set rd;
		FD_ZERO(&rd);
		FD_SET(in, &rd);
		FD_SET(s->wake_fd, &rd);
		struct timespec ts = { timeout_ms / 1000,
			               (long)(timeout_ms % 1000) * 1000000L };
		int k = pselect(n + 1, &rd, NULL, NULL,
		                timeout_ms < 0 ? NULL : &ts, &old);
		bool input = k > 0 && FD_ISSET(in, &rd);
		if (k > 0 && FD_ISSET(s->wake_fd, &rd))
			s->woken |= wake_drain(s->wake_fd);
		if (k != 0)
			r = wget_wch(stdscr, &ch);
		if (r == ERR && input && input_at_end(in))
			wake_only(s, &ts, timeout_ms, &old);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return r == ERR ? MS_KEY_NONE : key_of(s, r, ch);
}

void
ms_screen_listen(ms_screen *s, bool on)
{
	s->listen = on;
}

bool
ms_screen_woken(ms_screen *s)
{
	bool w = s->woken;
	s->woken = false;
	return w;
}

int
ms_screen_key(ms_screen *s, int timeout_ms)
{
	if (s->listen && s->wake_fd > 0 && s->wake_fd < FD_SETSIZE &&
	    fileno(s->in) < FD_SETSIZE && timeout_ms != 0)
		return key_or_wake(s, timeout_ms);
	wint_t ch;
	int64_t t0 = timeout_ms > 0 ? mono_ms() : 0;
	wtimeout(stdscr, timeout_ms);
	int r = wget_wch(stdscr, &ch);
	if (r == ERR) {
		/* Input at its end (a file, a terminal gone) returns at
		 * once: the rest of the timeout is waited here, or the
		 * loop calling this spun a core while paused. */
		int64_t left =
		        timeout_ms > 0 ? timeout_ms - (mono_ms() - t0) : 0;
		if (left > timeout_ms / 2)
			napms((int)left);
		return MS_KEY_NONE;
	}
	return key_of(s, r, ch);
}

/* The MS_KEY_* code of what wget_wch returned (r, not ERR; ch). */
static int
key_of(ms_screen *s, int r, wint_t ch)
{
	if (r == KEY_CODE_YES) {
		switch (ch) {
		case KEY_UP:
			return MS_KEY_UP;
		case KEY_DOWN:
			return MS_KEY_DOWN;
		case KEY_LEFT:
			return MS_KEY_LEFT;
		case KEY_RIGHT:
			return MS_KEY_RIGHT;
		case KEY_PPAGE:
			return MS_KEY_PGUP;
		case KEY_NPAGE:
			return MS_KEY_PGDN;
		case KEY_HOME:
			return MS_KEY_HOME;
		case KEY_END:
			return MS_KEY_END;
		case KEY_ENTER:
			return MS_KEY_ENTER;
		case KEY_BACKSPACE:
			return MS_KEY_BACKSPACE;
		case KEY_DC:
			return MS_KEY_DELETE;
		case KEY_BTAB:
			return MS_KEY_BTAB;
		case KEY_RESIZE:
			return MS_KEY_RESIZE;
		case KEY_MOUSE: {
			MEVENT me;
			if (getmouse(&me) != OK)
				return MS_KEY_NONE;
			s->mouse.x = me.x;
			s->mouse.y = me.y;
			if (me.bstate & BUTTON1_PRESSED)
				s->mouse.kind = MS_MOUSE_CLICK;
			else if (me.bstate & BUTTON4_PRESSED)
				s->mouse.kind = MS_MOUSE_WHEEL_UP;
			else if (me.bstate & BUTTON5_PRESSED)
				s->mouse.kind = MS_MOUSE_WHEEL_DOWN;
			else
				return MS_KEY_NONE;
			return MS_KEY_MOUSE;
		}
		default:
			if (ch >= KEY_F(1) && ch <= KEY_F(12))
				return MS_KEY_F((int)(ch - KEY_F0));
			return MS_KEY_NONE;
		}
	}
	switch (ch) {
	case '\r':
	case '\n':
		return MS_KEY_ENTER;
	case '\t':
		return MS_KEY_TAB;
	case 27:
		return escape_key();
	case 8:
	case 127:
		return MS_KEY_BACKSPACE;
	default:
		return (int)ch;
	}
}

void
ms_screen_row(ms_screen *s, int y, char *buf, size_t n)
{
	int w, h;
	ms_screen_size(s, &w, &h);
	size_t used = 0;
	if (n == 0)
		return;
	for (int x = 0; x < w && y < h; x++) {
		cchar_t cc;
		wchar_t wch[CCHARW_MAX + 1];
		attr_t at;
		short pair;
		char tmp[4];
		uint32_t cp = ' ';
		if (mvwin_wch(stdscr, y, x, &cc) == OK &&
		    getcchar(&cc, wch, &at, &pair, NULL) == OK && wch[0])
			cp = (uint32_t)wch[0];
		size_t k = ms__utf8_encode(cp, tmp);
		if (used + k >= n)
			break;
		memcpy(buf + used, tmp, k);
		used += k;
	}
	buf[used] = '\0';
}

uint16_t
ms_screen_attr(ms_screen *s, int x, int y)
{
	(void)s;
	cchar_t cc;
	wchar_t wch[CCHARW_MAX + 1];
	attr_t at;
	short pair;
	uint16_t r = 0;
	if (mvwin_wch(stdscr, y, x, &cc) != OK ||
	    getcchar(&cc, wch, &at, &pair, NULL) != OK)
		return 0;
	if (at & A_BOLD)
		r |= MS_A_BOLD;
	if (at & A_REVERSE)
		r |= MS_A_REV;
	if (at & A_UNDERLINE)
		r |= MS_A_UL;
	if (at & A_DIM)
		r |= MS_A_DIM;
	return (uint16_t)(r | (pair & MS_C_MASK));
}
