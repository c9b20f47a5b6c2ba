/*
 * canvas.c - the cell grid a frame is drawn into before it reaches curses.
 *
 * Panels write characters and attributes into an ms_canvas with clipping;
 * the screen module copies the result to the terminal. Keeping the frame in
 * plain memory makes every panel testable and benchmarkable without a
 * terminal, and lets ASCII mode swap glyphs in one place.
 *
 * Invariants:
 *  1. cells holds at least w * h cells when w, h > 0; cap counts them.
 *  2. Every write is clipped to the canvas; no call writes outside it.
 *  3. Every cell holds one printable, single-column code point.
 */
#include "tui_int.h"

#include "ms_err.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void
ms_canvas_init(ms_canvas *c)
{
	memset(c, 0, sizeof(*c));
}

void
ms_canvas_release(ms_canvas *c)
{
	if (!c)
		return;
	free(c->cells);
	memset(c, 0, sizeof(*c));
}

int
ms_canvas_reset(ms_canvas *c, int w, int h)
{
	if (w < 0 || h < 0)
		return MS_ERR_INVAL;
	size_t n = (size_t)w * (size_t)h;
	if (n > c->cap) {
		ms_cell *p = realloc(c->cells, n * sizeof(*p));
		if (!p)
			return MS_ERR_NOMEM;
		c->cells = p;
		c->cap = n;
	}
	c->w = w;
	c->h = h;
	for (size_t i = 0; i < n; i++) {
		c->cells[i].ch = ' ';
		c->cells[i].attr = 0;
	}
	return 0;
}

void
ms_canvas_put(ms_canvas *c, int x, int y, uint32_t ch, uint16_t attr)
{
	if (x < 0 || y < 0 || x >= c->w || y >= c->h)
		return;
	if (ch < 0x20 || ch == 0x7f)
		ch = '?';
	ms_cell *cell = &c->cells[(size_t)y * (size_t)c->w + (size_t)x];
	cell->ch = ch;
	cell->attr = attr;
}

/* Decode one UTF-8 sequence; invalid bytes come out as '?'. */
static uint32_t
utf8_next(const char **sp)
{
	const unsigned char *s = (const unsigned char *)*sp;
	uint32_t cp;
	int n;
	if (s[0] < 0x80) {
		*sp += 1;
		return s[0];
	} else if ((s[0] & 0xe0) == 0xc0) {
		cp = s[0] & 0x1f;
		n = 1;
	} else if ((s[0] & 0xf0) == 0xe0) {
		cp = s[0] & 0x0f;
		n = 2;
	} else if ((s[0] & 0xf8) == 0xf0) {
		cp = s[0] & 0x07;
		n = 3;
	} else {
		*sp += 1;
		return '?';
	}
	for (int i = 1; i <= n; i++) {
		if ((s[i] & 0xc0) != 0x80) {
			*sp += (size_t)i;
			return '?';
		}
		cp = cp << 6 | (s[i] & 0x3f);
	}
	*sp += (size_t)n + 1;
	return cp;
}

int
ms_canvas_text(ms_canvas *c, int x, int y, int maxw, const char *s,
               uint16_t attr)
{
	int col = 0;
	while (*s && col < maxw) {
		uint32_t cp = utf8_next(&s);
		ms_canvas_put(c, x + col, y, cp, attr);
		col++;
	}
	return col;
}

int
ms_canvas_cols(const char *s)
{
	int n = 0;
	while (*s)
		utf8_next(&s), n++;
	return n;
}

int
ms_canvas_text_tail(ms_canvas *c, int x, int y, int maxw, const char *s,
                    uint16_t attr)
{
	int len = ms_canvas_cols(s);
	if (len <= maxw)
		return ms_canvas_text(c, x, y, maxw, s, attr);
	if (maxw < 4)
		return 0;
	for (int skip = len - (maxw - 3); skip > 0; skip--)
		utf8_next(&s);
	int col = ms_canvas_text(c, x, y, 3, "...", attr);
	return col + ms_canvas_text(c, x + col, y, maxw - col, s, attr);
}

const char *
ms__wrap_line(const char *s, int maxw)
{
	/* The longest run of whole words that fits; a word longer than
	 * the line is cut at its edge. */
	const char *p = s, *brk = NULL;
	for (int col = 0; *p && col < maxw; col++) {
		if (*p == ' ')
			brk = p;
		utf8_next(&p);
	}
	if (*p && *p != ' ' && brk)
		p = brk;
	return p;
}

int
ms_canvas_wrap(ms_canvas *c, int x, int y, int maxw, const char *s,
               uint16_t attr)
{
	if (maxw < 1)
		return 0;
	int lines = 0;
	while (*s == ' ')
		s++;
	do {
		const char *p = ms__wrap_line(s, maxw);
		if (c) {
			int cx = x;
			for (const char *q = s; q < p;)
				ms_canvas_put(c, cx++, y + lines, utf8_next(&q),
				              attr);
		}
		lines++;
		s = p;
		while (*s == ' ')
			s++;
	} while (*s);
	return lines;
}

void
ms_canvas_blit(ms_canvas *c, ms_rect in, const ms_canvas *doc, size_t top)
{
	for (int y = 0; y < in.h && top + (size_t)y < (size_t)doc->h; y++)
		for (int x = 0; x < in.w && x < doc->w; x++) {
			ms_cell cell = ms_canvas_at(doc, x, (int)top + y);
			ms_canvas_put(c, in.x + x, in.y + y, cell.ch,
			              cell.attr);
		}
}

int
ms_canvas_printf(ms_canvas *c, int x, int y, int maxw, uint16_t attr,
                 const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return ms_canvas_text(c, x, y, maxw, buf, attr);
}

void
ms_canvas_fill(ms_canvas *c, ms_rect r, uint32_t ch, uint16_t attr)
{
	for (int y = r.y; y < r.y + r.h; y++)
		for (int x = r.x; x < r.x + r.w; x++)
			ms_canvas_put(c, x, y, ch, attr);
}

void
ms_canvas_attr(ms_canvas *c, int x, int y, int n, uint16_t attr)
{
	if (y < 0 || y >= c->h)
		return;
	for (int i = x < 0 ? 0 : x; i < x + n && i < c->w; i++) {
		ms_cell *cell = &c->cells[(size_t)y * (size_t)c->w + (size_t)i];
		if (attr & MS_C_MASK)
			cell->attr = (uint16_t)(cell->attr & ~MS_C_MASK);
		cell->attr |= attr;
	}
}

ms_rect
ms_canvas_box(ms_canvas *c, ms_rect r, const char *title, bool focused)
{
	ms_rect in = { r.x + 1, r.y + 1, r.w - 2, r.h - 2 };
	if (r.w < 2 || r.h < 2) {
		ms_rect none = { 0, 0, 0, 0 };
		return none;
	}
	uint16_t a = focused ? (MS_C_ACCENT | MS_A_BOLD) : MS_C_MUTED;
	uint32_t hl = ms_glyph(c, MS_G_HLINE), vl = ms_glyph(c, MS_G_VLINE);
	for (int x = r.x + 1; x < r.x + r.w - 1; x++) {
		ms_canvas_put(c, x, r.y, hl, a);
		ms_canvas_put(c, x, r.y + r.h - 1, hl, a);
	}
	for (int y = r.y + 1; y < r.y + r.h - 1; y++) {
		ms_canvas_put(c, r.x, y, vl, a);
		ms_canvas_put(c, r.x + r.w - 1, y, vl, a);
	}
	ms_canvas_put(c, r.x, r.y, ms_glyph(c, MS_G_TL), a);
	ms_canvas_put(c, r.x + r.w - 1, r.y, ms_glyph(c, MS_G_TR), a);
	ms_canvas_put(c, r.x, r.y + r.h - 1, ms_glyph(c, MS_G_BL), a);
	ms_canvas_put(c, r.x + r.w - 1, r.y + r.h - 1, ms_glyph(c, MS_G_BR), a);
	if (title && *title && r.w > 6) {
		int n = ms_canvas_printf(
		        c, r.x + 2, r.y, r.w - 4,
		        MS_A_BOLD | (focused ? MS_C_ACCENT : 0), " %s ", title);
		if (focused)
			ms_canvas_attr(c, r.x + 2, r.y, n, MS_A_REV);
	}
	return in;
}

void
ms_canvas_more(ms_canvas *c, ms_rect r, const char *title, size_t above,
               size_t below)
{
	if (!above && !below)
		return;
	char lng[64], shrt[48];
	if (above && below)
		snprintf(lng, sizeof(lng), " %zu above, %zu below ", above,
		         below);
	else
		snprintf(lng, sizeof(lng), " %zu more %s ",
		         above ? above : below, above ? "above" : "below");
	snprintf(shrt, sizeof(shrt), " %s%.0zu%s%s%.0zu ", above ? "^" : "",
	         above, above && below ? " " : "", below ? "v" : "", below);
	/* Right of the title and its blanks, one border cell kept each side. */
	int from =
	        r.x + 2 + (title && *title ? ms_canvas_cols(title) + 2 : 0) + 1;
	int room = r.x + r.w - 2 - from;
	const char *t = ms_canvas_cols(lng) <= room    ? lng
	                : ms_canvas_cols(shrt) <= room ? shrt
	                                               : NULL;
	if (t)
		ms_canvas_text(c, r.x + r.w - 2 - ms_canvas_cols(t), r.y,
		               ms_canvas_cols(t), t, MS_C_MUTED);
}

size_t
ms__utf8_encode(uint32_t cp, char tmp[4])
{
	size_t n;
	if (cp < 0x80) {
		tmp[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		tmp[0] = (char)(0xc0 | cp >> 6);
		tmp[1] = (char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		tmp[0] = (char)(0xe0 | cp >> 12);
		tmp[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		tmp[2] = (char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		tmp[0] = (char)(0xf0 | cp >> 18);
		tmp[1] = (char)(0x80 | (cp >> 12 & 0x3f));
		tmp[2] = (char)(0x80 | (cp >> 6 & 0x3f));
		tmp[3] = (char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	return n;
}

static void
utf8_put(char **p, char *end, uint32_t cp)
{
	char tmp[4];
	size_t n = ms__utf8_encode(cp, tmp);
	if ((size_t)(end - *p) <= n)
		return;
	memcpy(*p, tmp, n);
	*p += n;
}

void
ms_canvas_row(const ms_canvas *c, int y, char *buf, size_t n)
{
	if (n == 0)
		return;
	char *p = buf, *end = buf + n;
	if (y >= 0 && y < c->h)
		for (int x = 0; x < c->w; x++)
			utf8_put(&p, end, ms_canvas_at(c, x, y).ch);
	*p = '\0';
}

static const uint32_t glyph_utf8[MS_G_COUNT] = {
	[MS_G_HLINE] = 0x2500, [MS_G_VLINE] = 0x2502, [MS_G_TL] = 0x250c,
	[MS_G_TR] = 0x2510,    [MS_G_BL] = 0x2514,    [MS_G_BR] = 0x2518,
	[MS_G_FULL] = 0x2588,  [MS_G_SHADE] = 0x2591, [MS_G_SPAN] = 0x2501,
	[MS_G_FRONT] = 0x2503,
};

static const uint32_t glyph_ascii[MS_G_COUNT] = {
	[MS_G_HLINE] = '-', [MS_G_VLINE] = '|', [MS_G_TL] = '+',
	[MS_G_TR] = '+',    [MS_G_BL] = '+',    [MS_G_BR] = '+',
	[MS_G_FULL] = '#',  [MS_G_SHADE] = ':', [MS_G_SPAN] = '=',
	[MS_G_FRONT] = '|',
};

uint32_t
ms_glyph(const ms_canvas *c, enum ms_glyph g)
{
	return c->ascii ? glyph_ascii[g] : glyph_utf8[g];
}

uint32_t
ms_spark_glyph(const ms_canvas *c, int level)
{
	static const char ascii[8] = { '_', '.', ',', '-', '~', '=', '*', '#' };
	if (level < 0)
		level = 0;
	if (level > 7)
		level = 7;
	return c->ascii ? (uint32_t)ascii[level] : 0x2581u + (uint32_t)level;
}
