/*
 * fuzz_tui_names.c - libFuzzer harness for what the command layer reads
 * from names and lines it did not write in this process: the notes pipe
 * a supervised process writes to its watcher (tui/supervise.c, note_line
 * and take_line, the file included for them), and the directory entries
 * clean and bench read (tui/scratch.c ms__scratch_owner_tmp and
 * ms__scratch_frozen_name, tui/series.c ms__series_name).
 *
 * Input: byte 0 picks the reader (mod 4), the rest is the text. What
 * must hold, beside no crash, leak or sanitizer report:
 *  - notes (byte 1 the size of each read, 1-64 bytes): the lines taken
 *    are the input's whole lines as its newlines cut them, in order,
 *    those too long for the reader's buffer left out whole; a database,
 *    scratch or cgroup directory noted is the value of the last line
 *    noting it, cut to its field.
 *  - owner tmp: accepted exactly when the name ends in
 *    "-owner.tmp-" and the decimal digits of a pid > 0 that fits, and
 *    that pid is given.
 *  - frozen: accepted exactly when the name ends in ".frozen-" and one
 *    or more digits.
 *  - series: accepted exactly when the name is "rep" R "-v" I "-" ...
 *    ".db" with R and I plain decimal numbers that fit (no sign or
 *    blank), I below MS__SERIES_VARIANTS_MAX, and they are given.
 */
#include "../../tui/supervise.c"

#include "series.h"

#include <limits.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { MAX_TEXT = 32768 };

/* The values of the notes' key lines, as the strict reading takes them:
 * the last db, scratch and envelope lines of the stream. */
typedef struct strict_notes {
	const char *db, *scratch, *env;
} strict_notes;

static void
check_notes(const uint8_t *data, size_t size)
{
	if (size < 1)
		return;
	size_t chunk = 1 + data[0] % 64;
	const char *in = (const char *)data + 1;
	size_t n = size - 1;
	/* The lines the reader must hand out: copies, whole lines only. */
	static char want[MAX_TEXT + 1];
	memcpy(want, in, n);
	want[n] = '\0';
	ms__note_buf *nb = calloc(1, sizeof(*nb));
	notes *nt = calloc(1, sizeof(*nt));
	static char copy[sizeof(nb->b)];
	if (!nb || !nt)
		abort();
	size_t at = 0, w = 0; /* read so far; start of the next whole line */
	strict_notes sn = { NULL, NULL, NULL };
	while (at < n) {
		size_t room = sizeof(nb->b) - 1 - nb->len;
		size_t k = n - at < chunk ? n - at : chunk;
		if (k > room)
			k = room;
		memcpy(nb->b + nb->len, in + at, k);
		nb->len += k;
		at += k;
		for (char *line; (line = ms__note_line(nb));) {
			/* The next whole input line that fits. */
			const char *l;
			for (;;) {
				char *nl = memchr(want + w, '\n', n - w);
				if (!nl)
					abort(); /* a line that is no line */
				size_t len = (size_t)(nl - (want + w));
				*nl = '\0';
				l = want + w;
				w += len + 1;
				if (len + 1 <= sizeof(nb->b) - 1) {
					if (memcmp(line, l, len + 1) != 0)
						abort();
					break;
				}
			}
			if (!strncmp(l, "db\t", 3))
				sn.db = l + 3;
			else if (!strncmp(l, "scratch\t", 8))
				sn.scratch = l + 8;
			else if (!strncmp(l, "envelope\t", 9))
				sn.env = l + 9;
			memcpy(copy, line, strlen(line) + 1);
			take_line(nt, copy);
		}
	}
	/* A path noted is the value of the last line noting it, cut to
	 * its field (take_line does not refuse a longer one; the process
	 * writes no line past 4,200 bytes nor a path past PATH_MAX). */
	if ((nt->db[0] &&
	     (!sn.db || strncmp(nt->db, sn.db, sizeof(nt->db) - 1))) ||
	    (nt->scratch[0] &&
	     (!sn.scratch ||
	      strncmp(nt->scratch, sn.scratch, sizeof(nt->scratch) - 1))))
		abort();
	if (nt->env.mode != MS_ENVELOPE_EMULATED) {
		if (!sn.env)
			abort();
		/* The directories are the fields after MODE and MEM. */
		const char *f = sn.env;
		for (int skip = 0; skip < 2 && f; skip++) {
			f = strchr(f, '\t');
			f = f ? f + 1 : NULL;
		}
		for (int i = 0; i < MS_ENVELOPE_DIRS; i++) {
			size_t fl = f ? strcspn(f, "\t") : 0;
			size_t cut = sizeof(nt->env.dir[i]) - 1;
			size_t want_len = fl < cut ? fl : cut;
			if (strlen(nt->env.dir[i]) != want_len ||
			    (want_len && strncmp(nt->env.dir[i], f, want_len)))
				abort();
			f = f && f[fl] ? f + fl + 1 : NULL;
		}
	}
	free(nb);
	free(nt);
}

/* Plain decimal digits at s up to end, fitting in max; -1 otherwise. */
static long long
plain_number(const char *s, const char *end, long long max)
{
	if (s >= end)
		return -1;
	long long v = 0;
	for (const char *p = s; p < end; p++) {
		if (*p < '0' || *p > '9' || v > (max - (*p - '0')) / 10)
			return -1;
		v = v * 10 + (*p - '0');
	}
	return v;
}

static const char *
last_tag(const char *name, const char *tag)
{
	const char *p = NULL;
	for (const char *q = strstr(name, tag); q; q = strstr(q + 1, tag))
		p = q;
	return p;
}

static void
check_owner_tmp(const char *name)
{
	static const char tag[] = "-owner.tmp-";
	pid_t pid = -7;
	bool got = ms__scratch_owner_tmp(name, &pid);
	const char *t = last_tag(name, tag);
	long long v =
	        t ? plain_number(t + strlen(tag), name + strlen(name), INT_MAX)
	          : -1;
	if (got != (v > 0) || (got && pid != v) || (!got && pid != -7))
		abort();
}

static void
check_frozen(const char *name)
{
	const char *t = last_tag(name, ".frozen-");
	bool want = t && t[8] && strspn(t + 8, "0123456789") == strlen(t + 8);
	if (ms__scratch_frozen_name(name) != want)
		abort();
}

static void
check_series(const char *name)
{
	unsigned rep = 0, vi = 0;
	bool got = ms__series_name(name, &rep, &vi);
	bool want = false;
	long long r = -1, v = -1;
	size_t len = strlen(name);
	if (strncmp(name, "rep", 3) == 0 && len >= 3 &&
	    strcmp(name + len - 3, ".db") == 0) {
		const char *a = name + 3;
		const char *b = strstr(a, "-v");
		const char *c = b ? strchr(b + 2, '-') : NULL;
		if (b && c && c + 1 <= name + len - 3) {
			r = plain_number(a, b, UINT_MAX);
			v = plain_number(b + 2, c, UINT_MAX);
			want = r >= 0 && v >= 0 && v < MS__SERIES_VARIANTS_MAX;
		}
	}
	if (got != want || (got && (rep != r || vi != v)))
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > MAX_TEXT)
		return 0;
	static char name[MAX_TEXT + 1];
	memcpy(name, data + 1, size - 1);
	name[size - 1] = '\0';
	switch (data[0] % 4) {
	case 0:
		check_notes(data + 1, size - 1);
		break;
	case 1:
		check_owner_tmp(name);
		break;
	case 2:
		check_frozen(name);
		break;
	default:
		check_series(name);
		break;
	}
	return 0;
}
