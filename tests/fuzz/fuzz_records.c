/*
 * fuzz_records.c - libFuzzer harness for the small text records the
 * workbench reads back from disk: the owner record of a scratch
 * directory or event database (core/owner.c, ms_owner_read_file), a
 * ledger as the manifest, the frozen merge and a merge-once repetition
 * write it (core/ledger.c, ms_ledger_parse), this process's cgroup file
 * (core/limits.c, ms__cgroup_path, read for the resource limits and the
 * envelope) and the TUI's memory of a fixture (tui/tui_memory.c,
 * ms__tui_memory_load).
 *
 * Input: byte 0 picks the reader (mod 4), the rest is the file or text.
 * What must hold, beside no crash, leak or sanitizer report:
 *  - owner: a refusal carries a message and names no pid or kind; an
 *    accepted record has its magic line first, a kind and a pid > 0, and
 *    every line of it ends with a newline.
 *  - ledger: accepted exactly when a strict reading accepts it (decimal
 *    rows that fit, ':', 32 hex digits, nothing more), with the same
 *    values, and what it formats back parses to the same ledger.
 *  - cgroup: a path found is terminated inside the buffer and is the text
 *    after the second ':' of one of the file's lines.
 *  - TUI memory: each breakpoint and the filter come from a line of the
 *    file that starts with "break " or "filter " (lines as the file's
 *    newlines cut it, whatever their length), the breakpoints in file
 *    order.
 */
#include "cli.h"
#include "limits_int.h"
#include "ms_ledger.h"
#include "ms_owner.h"

#include "fuzz_file.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* tui_memory.c's path function needs the cache root; the harness never
 * asks for a path. */
int
ms__cache_root(char *buf, size_t n)
{
	(void)buf;
	(void)n;
	abort();
}

/* The lines of t[0..n) as the file's newlines cut them: line k is
 * [start[k], start[k] + len[k]), without its newline. Returns the count;
 * the arrays have room for n + 1 lines. */
static size_t
split_lines(const char *t, size_t n, size_t *start, size_t *len)
{
	size_t k = 0, s = 0;
	for (size_t i = 0; i <= n; i++) {
		if (i == n && s == n)
			break;
		if (i == n || t[i] == '\n') {
			start[k] = s;
			len[k] = i - s;
			k++;
			s = i + 1;
		}
	}
	return k;
}

/* The C string the line holds (up to its first NUL) begins with tag and
 * the rest, cut to max bytes, is want. */
static bool
line_is(const char *line, size_t len, const char *tag, const char *want,
        size_t max)
{
	size_t tl = strlen(tag);
	size_t cl = strnlen(line, len);
	if (cl < tl || memcmp(line, tag, tl) != 0)
		return false;
	size_t rest = cl - tl;
	if (rest > max)
		rest = max;
	return strlen(want) == rest && memcmp(line + tl, want, rest) == 0;
}

static void
check_owner(const uint8_t *data, size_t size)
{
	fuzz_file_write("records", "record", data, size);
	ms_owner *o = malloc(sizeof(*o));
	ms_errbuf eb = { "" };
	int rc = ms_owner_read_file(fuzz_file, o, &eb);
	if (rc != 0) {
		if (!eb.msg[0] || o->pid != 0 || o->kind[0])
			abort();
		free(o);
		return;
	}
	static const char magic[] = "mergescope-owner 1\n";
	if (size < sizeof(magic) - 1 ||
	    memcmp(data, magic, sizeof(magic) - 1) != 0 || o->pid <= 0 ||
	    !o->kind[0] || data[size - 1] != '\n')
		abort();
	if (!memchr(o->kind, '\0', sizeof(o->kind)) ||
	    !memchr(o->boot, '\0', sizeof(o->boot)) ||
	    !memchr(o->note, '\0', sizeof(o->note)))
		abort();
	free(o);
}

/* The value of a hex digit of either case; -1 for anything else. */
static int
hexdigit(char c)
{
	static const char digits[] = "0123456789abcdef0123456789ABCDEF";
	const char *p = c ? strchr(digits, c) : NULL;
	return p ? (int)((p - digits) % 16) : -1;
}

/* The strict reading of "<rows>:<32 hex>". */
static bool
ledger_strict(const char *s, ms_ledger *l)
{
	size_t i = 0;
	uint64_t rows = 0;
	if (s[0] < '0' || s[0] > '9')
		return false;
	for (; s[i] >= '0' && s[i] <= '9'; i++) {
		unsigned d = (unsigned)(s[i] - '0');
		if (rows > UINT64_MAX / 10 || rows * 10 > UINT64_MAX - d)
			return false;
		rows = rows * 10 + d;
	}
	if (s[i++] != ':')
		return false;
	uint64_t h[2] = { 0, 0 };
	for (int k = 0; k < 32; k++) {
		int v = hexdigit(s[i + (size_t)k]);
		if (v < 0)
			return false;
		h[k / 16] = h[k / 16] << 4 | (uint64_t)v;
	}
	if (s[i + 32] != '\0')
		return false;
	l->rows = rows;
	l->sum_hi = h[0];
	l->sum_lo = h[1];
	return true;
}

static void
check_ledger(const char *s)
{
	ms_ledger got, want, back;
	memset(&got, 0x5a, sizeof(got));
	ms_ledger before = got;
	bool ok = ms_ledger_parse(&got, s) == 0;
	memset(&want, 0, sizeof(want));
	if (ok != ledger_strict(s, &want))
		abort();
	if (!ok) {
		if (memcmp(&got, &before, sizeof(got)) != 0)
			abort(); /* l unchanged on refusal */
		return;
	}
	if (got.rows != want.rows || got.sum_hi != want.sum_hi ||
	    got.sum_lo != want.sum_lo)
		abort();
	char text[MS_LEDGER_STR_MAX];
	memset(&back, 0, sizeof(back));
	if (ms_ledger_parse(&back, ms_ledger_format(&got, text)) != 0 ||
	    back.rows != got.rows || back.sum_hi != got.sum_hi ||
	    back.sum_lo != got.sum_lo)
		abort();
}

static void
check_cgroup(const uint8_t *data, size_t size)
{
	fuzz_file_write("records", "record", data, size);
	static const char *const wants[] = { NULL, "memory", "cpu" };
	size_t *start = malloc((size + 1) * sizeof(size_t));
	size_t *len = malloc((size + 1) * sizeof(size_t));
	size_t nl = split_lines((const char *)data, size, start, len);
	for (size_t w = 0; w < 3; w++) {
		char out[64];
		memset(out, 'x', sizeof(out));
		if (!ms__cgroup_path(fuzz_file, wants[w], out, sizeof(out)))
			continue;
		if (!memchr(out, '\0', sizeof(out)))
			abort();
		bool seen = false;
		for (size_t k = 0; k < nl && !seen; k++) {
			const char *line = (const char *)data + start[k];
			const char *c1 = memchr(line, ':', len[k]);
			const char *c2 =
			        c1 ? memchr(c1 + 1, ':',
			                    len[k] - (size_t)(c1 + 1 - line))
			           : NULL;
			if (c2)
				seen = line_is(c2 + 1,
				               len[k] - (size_t)(c2 + 1 - line),
				               "", out, sizeof(out) - 1);
		}
		if (!seen)
			abort();
	}
	free(start);
	free(len);
}

static void
check_memory(const uint8_t *data, size_t size)
{
	fuzz_file_write("records", "record", data, size);
	ms__tui_memory *m = malloc(sizeof(*m));
	bool any = ms__tui_memory_load(fuzz_file, m);
	if (any != (m->nbreaks > 0 || m->filter[0] != '\0') ||
	    m->nbreaks > MS__MEMORY_BREAKS ||
	    !memchr(m->filter, '\0', sizeof(m->filter)))
		abort();
	size_t *start = malloc((size + 1) * sizeof(size_t));
	size_t *len = malloc((size + 1) * sizeof(size_t));
	size_t nl = split_lines((const char *)data, size, start, len);
	size_t k = 0;
	for (size_t b = 0; b < m->nbreaks; b++, k++) {
		if (!m->breaks[b][0] ||
		    !memchr(m->breaks[b], '\0', sizeof(m->breaks[b])))
			abort();
		while (k < nl &&
		       !line_is((const char *)data + start[k], len[k], "break ",
		                m->breaks[b], sizeof(m->breaks[b]) - 1))
			k++;
		if (k == nl)
			abort(); /* no line of the file says it */
	}
	bool seen = !m->filter[0];
	for (k = 0; k < nl && !seen; k++)
		seen = line_is((const char *)data + start[k], len[k], "filter ",
		               m->filter, sizeof(m->filter) - 1);
	if (!seen)
		abort();
	free(start);
	free(len);
	free(m);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > 65536)
		return 0;
	switch (data[0] % 4) {
	case 0:
		check_owner(data + 1, size - 1);
		break;
	case 1: {
		char *s = malloc(size);
		memcpy(s, data + 1, size - 1);
		s[size - 1] = '\0';
		check_ledger(s);
		free(s);
		break;
	}
	case 2:
		check_cgroup(data + 1, size - 1);
		break;
	default:
		check_memory(data + 1, size - 1);
		break;
	}
	return 0;
}
