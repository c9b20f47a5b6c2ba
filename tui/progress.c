/*
 * progress.c - progress of long command-line work (building a fixture, a
 * headless replay) on standard error: on a terminal one line redrawn in
 * place with a bar, at most ten times a second; anywhere else (a pipe, a
 * log file, a test) plain lines, one when a stage starts, one per tenth of
 * it and one when it ends, so logs stay short and grep-able.
 *
 * Invariants:
 *  1. A bar line is open (`open`) exactly when the last thing written was
 *     a bar without its newline; ms__progress_end and a stage change close
 *     it, so nothing else printed lands on the same line.
 *  2. Plain mode prints each stage's 0% at most once and never prints the
 *     same tenth twice.
 */
#include "ms_clock.h"
#include "cli.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#define BAR_WIDTH 28
#define BAR_EVERY_NS 100000000LL /* 10 redraws a second at most */

void
ms__progress_init(ms__progress *p, FILE *out, int bar)
{
	memset(p, 0, sizeof(*p));
	p->out = out;
	if (bar < 0)
		p->bar = out && isatty(fileno(out));
	else
		p->bar = bar != 0;
	p->last_tenth = -1;
}

static void
close_bar(ms__progress *p)
{
	if (p->open) {
		fputc('\n', p->out);
		fflush(p->out);
		p->open = false;
	}
}

void
ms__progress_update(ms__progress *p, const char *what, uint64_t done,
                    uint64_t total, const char *extra)
{
	if (!p->out)
		return;
	if (!what)
		what = "";
	if (!extra)
		extra = "";
	bool new_stage = strcmp(what, p->what) != 0;
	if (new_stage) {
		close_bar(p);
		snprintf(p->what, sizeof(p->what), "%s", what);
		p->last_tenth = -1;
		p->last_ns = 0;
	}
	if (done > total)
		done = total;
	int pct = total ? (int)(done * 100 / total) : 100;
	bool last = done == total;
	if (p->bar) {
		int64_t now = ms_mono_ns();
		if (!new_stage && !last && now - p->last_ns < BAR_EVERY_NS)
			return;
		if (last && p->last_tenth == 10)
			return; /* the full bar is already drawn */
		p->last_ns = now;
		p->last_tenth = last ? 10 : pct / 10;
		char bar[BAR_WIDTH + 1];
		int fill = total ? (int)(done * BAR_WIDTH / total) : BAR_WIDTH;
		for (int i = 0; i < BAR_WIDTH; i++)
			bar[i] = i < fill ? '#' : '.';
		bar[BAR_WIDTH] = '\0';
		/* \033[K clears what a longer previous line left. */
		fprintf(p->out,
		        "\r%-16s [%s] %3d%%  %" PRIu64 "/%" PRIu64 "%s%s\033[K",
		        p->what, bar, pct, done, total, *extra ? "  " : "",
		        extra);
		fflush(p->out);
		p->open = true;
		return;
	}
	int tenth = last ? 10 : pct / 10;
	if (tenth == p->last_tenth)
		return;
	p->last_tenth = tenth;
	fprintf(p->out, "%s: %" PRIu64 "/%" PRIu64 " (%d%%)%s%s\n", p->what,
	        done, total, pct, *extra ? "  " : "", extra);
	fflush(p->out);
}

void
ms__progress_note(ms__progress *p, const char *line)
{
	if (!p->out)
		return;
	close_bar(p);
	fprintf(p->out, "%s\n", line);
	fflush(p->out);
}

void
ms__progress_end(ms__progress *p)
{
	if (!p->out)
		return;
	close_bar(p);
	p->what[0] = '\0';
	p->last_tenth = -1;
}

int
ms__term_width(FILE *f)
{
	struct winsize ws;
	if (!f || !isatty(fileno(f)) || ioctl(fileno(f), TIOCGWINSZ, &ws) != 0)
		return 0;
	return ws.ws_col;
}

void
ms__say_wrapped(FILE *f, const char *s, int width)
{
	if (width < 20) {
		fprintf(f, "%s\n", s);
		return;
	}
	/* The lines after the first two columns in, under the first's
	 * words: wrapped lines and a new message read apart. */
	for (int indent = 0; *s; indent = 2) {
		const char *end = ms__wrap_line(s, width - indent);
		/* A word longer than the line (a path) goes whole on a line
		 * of its own, which the terminal wraps: cut with a newline
		 * and an indent, it no longer pasted as one. */
		while (*end && *end != ' ' && end > s && end[-1] != ' ')
			end++;
		fprintf(f, "%*s%.*s\n", indent, "", (int)(end - s), s);
		for (s = end; *s == ' ';)
			s++;
	}
}

void
ms__say_command(FILE *f, const char *cmd, int width)
{
	if (width < 20) {
		fprintf(f, "  %s\n", cmd);
		return;
	}
	/* Two columns in, each line but the last ending in " \\" (so the
	 * room is the width less the indent and those). */
	while (*cmd) {
		const char *line = cmd;
		const char *end = ms__wrap_line(cmd, width - 4);
		/* A word longer than the line (a path) goes whole. */
		while (*end && *end != ' ' && end > cmd && end[-1] != ' ')
			end++;
		int len = (int)(end - line);
		while (len > 0 && line[len - 1] == ' ')
			len--;
		for (cmd = end; *cmd == ' ';)
			cmd++;
		fprintf(f, "  %.*s%s\n", len, line, *cmd ? " \\" : "");
	}
}

void
ms__say_commands(FILE *f, const char *cmds, int width)
{
	size_t n = strlen(cmds);
	char *copy = malloc(n + 1);
	if (!copy) {
		/* Unwrapped, but whole. */
		for (const char *p = cmds, *nl; *p; p = nl ? nl + 1 : p + n) {
			nl = strchr(p, '\n');
			fprintf(f, "  %.*s\n",
			        (int)(nl ? (size_t)(nl - p) : strlen(p)), p);
			if (!nl)
				break;
		}
		return;
	}
	memcpy(copy, cmds, n + 1);
	for (char *p = copy, *nl; *p; p = nl + 1) {
		nl = strchr(p, '\n');
		if (nl)
			*nl = '\0';
		ms__say_command(f, p, width);
		if (!nl)
			break;
	}
	free(copy);
}
