/*
 * fmt.c - the short human forms of numbers and times the panels print,
 * and the parsers for what the user types back (times, merge numbers,
 * export formats).
 *
 * Forms are chosen to keep columns narrow and stable: sizes with binary
 * prefixes ("12.3M"), counts with decimal ones ("162.2k"), durations with
 * the largest fitting unit ("3.54ms"), logical time as the clock of the
 * replayed day ("06:12:30", "+1d 01:00:00" during cooldown).
 */
#include "tui_int.h"

#include "ms_replay.h"
#include "ms_replay_events.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NS_PER_S 1000000000LL
#define DAY_NS (86400LL * NS_PER_S)

/* The integer part of a number printf wrote ("1024" of "1024K"). */
static uint64_t
int_part(const char *s)
{
	uint64_t v = 0;
	for (; *s >= '0' && *s <= '9'; s++)
		v = v * 10 + (uint64_t)(*s - '0');
	return v;
}

/* d (at least 1) of unit[u], with as many decimals as keep it to 3 digits
 * and 2 decimals at most (min_prec from 0 up, most for the smallest); a
 * value that rounds up to the next decimal or to `base` takes the form
 * of what it rounds to ("10.0", "100", then "1.00" of the next unit), so
 * 1023.7K reads 1.00M, never 1024K. */
static char *
fmt_unit(char *buf, size_t n, double d, const char *unit, int u, double base,
         int prec)
{
	for (;;) {
		int p = prec;
		if (d >= 10.0 && p > 1)
			p = 1;
		if (d >= 100.0)
			p = 0;
		snprintf(buf, n, "%.*f%c", p, d, unit[u]);
		uint64_t i = int_part(buf);
		if (p == 2 && i >= 10)
			d = 10.0; /* 9.996 shows as 10.0 */
		else if (p == 1 && i >= 100)
			d = 100.0;
		else if (p == 0 && (double)i >= base && unit[u + 1]) {
			d /= base;
			u++;
		} else
			return buf;
	}
}

/* v (at least base) in the largest of the six units (unit[0] is base,
 * each next one base times more) that keeps it at least 1. */
static char *
fmt_scaled(char *buf, size_t n, uint64_t v, double base, const char *unit,
           int prec)
{
	double d = (double)v / base;
	int u = 0;
	while (d >= base && u < 5) {
		d /= base;
		u++;
	}
	return fmt_unit(buf, n, d, unit, u, base, prec);
}

char *
ms_fmt_bytes(char *buf, size_t n, uint64_t v)
{
	if (v < 1024) {
		snprintf(buf, n, "%" PRIu64 "B", v);
		return buf;
	}
	return fmt_scaled(buf, n, v, 1024.0, "KMGTPE", 2);
}

char *
ms_fmt_count(char *buf, size_t n, uint64_t v)
{
	if (v < 10000) {
		snprintf(buf, n, "%" PRIu64, v);
		return buf;
	}
	return fmt_scaled(buf, n, v, 1000.0, "kMGTPE", 1);
}

char *
ms_fmt_ns(char *buf, size_t n, uint64_t ns)
{
	/* A time that rounds up to 1000 of its unit shows in the next
	 * ("1.00ms", not "1000.00us"). */
	if (ns < 1000) {
		snprintf(buf, n, "%" PRIu64 "ns", ns);
		return buf;
	}
	if (ns < 1000000) {
		snprintf(buf, n, "%.2fus", (double)ns / 1e3);
		if (int_part(buf) < 1000)
			return buf;
	}
	if (ns < 1000000000) {
		snprintf(buf, n, "%.2fms", (double)ns / 1e6);
		if (int_part(buf) < 1000)
			return buf;
	}
	snprintf(buf, n, "%.2fs", (double)ns / 1e9);
	return buf;
}

char *
ms_fmt_clock(char *buf, size_t n, int64_t t, int64_t day_start)
{
	return ms_replay_fmt_clock(buf, n, t, day_start);
}

char *
ms_fmt_speed(char *buf, size_t n, double multiple)
{
	if (multiple <= 0.0)
		snprintf(buf, n, "max");
	else if (multiple < 1.0)
		snprintf(buf, n, "%.3gx", multiple); /* 0.04x, not 0.0x */
	else if (multiple < 9.95 && multiple != (double)(long)multiple)
		snprintf(buf, n, "%.1fx", multiple);
	else
		snprintf(buf, n, "%.0fx", multiple);
	return buf;
}

char *
ms_fmt_event_line(char *buf, size_t n, const ms_tui_event *e, int64_t day_start)
{
	char t[24];
	ms_fmt_clock(t, sizeof(t), e->t, day_start);
	snprintf(buf, n,
	         "#%" PRIu64 " t=%s lane=%s in=%u rows=%" PRIu64 ">%" PRIu64
	         " class=%s reason=%s%s",
	         e->seq, t, e->lane, e->ninputs, e->rows_in, e->rows_out,
	         e->klass, e->reason[0] ? e->reason : "-",
	         e->failed ? " failed" : "");
	return buf;
}

/* "H:MM[:SS]" or "HH:MM[:SS]" -> seconds; false if malformed. */
static bool
parse_hms(const char *s, int64_t *secs)
{
	/* An hour of one or two digits, minutes and seconds of two, as the
	 * clock shows them and as --break time= takes them: %d alone would
	 * take signs and spaces and wrap values above INT_MAX
	 * ("4294967297:00" is 01:00), and "1:2:3" is no time the screen
	 * shows. */
	for (const char *p = s;;) {
		size_t d = strspn(p, "0123456789");
		if (d < (p == s ? 1u : 2u) || d > 2 ||
		    (p[d] != ':' && p[d] != '\0' &&
		     !isspace((unsigned char)p[d])))
			return false;
		if (p[d] != ':')
			break;
		p += d + 1;
	}
	int hh, mm, ss = 0, used = 0;
	if (sscanf(s, "%d:%d%n", &hh, &mm, &used) != 2)
		return false;
	if (s[used] == ':') {
		int more = 0;
		if (sscanf(s + used + 1, "%d%n", &ss, &more) != 1)
			return false;
		used += 1 + more;
	}
	while (isspace((unsigned char)s[used]))
		used++;
	if (s[used] != '\0' || hh < 0 || hh > 48 || mm < 0 || mm > 59 ||
	    ss < 0 || ss > 59)
		return false;
	*secs = (int64_t)hh * 3600 + mm * 60 + ss;
	return true;
}

bool
ms_parse_target(const char *s, int64_t day_start, ms_tui_target *out)
{
	while (isspace((unsigned char)*s))
		s++;
	memset(out, 0, sizeof(*out));
	if (*s == '#' || (isdigit((unsigned char)*s) && !strchr(s, ':'))) {
		if (*s == '#')
			s++;
		if (!isdigit((unsigned char)*s))
			return false; /* strtoull would take "-1" as 2^64-1 */
		char *end;
		errno = 0;
		unsigned long long v = strtoull(s, &end, 10);
		while (isspace((unsigned char)*end))
			end++;
		if (end == s || *end || v == 0 || errno == ERANGE)
			return false;
		out->kind = MS_TARGET_MERGE;
		out->seq = v;
		return true;
	}
	int64_t days = 0, secs;
	if (*s == '+') {
		char *end;
		if (!isdigit((unsigned char)s[1]))
			return false;
		long d = strtol(s + 1, &end, 10);
		if (end == s + 1 || *end != 'd' || d < 0 || d > 7)
			return false;
		days = d;
		s = end + 1;
		while (isspace((unsigned char)*s))
			s++;
	}
	if (!parse_hms(s, &secs))
		return false;
	out->kind = MS_TARGET_TIME;
	out->t = day_start + days * DAY_NS + secs * NS_PER_S;
	return true;
}

/* The export formats are the replay's: one table of names (export.c). */
_Static_assert((int)MS_FORMAT_JSONL == (int)MS_EXPORT_JSONL &&
                       (int)MS_FORMAT_CSV == (int)MS_EXPORT_CSV &&
                       (int)MS_FORMAT_CHROME == (int)MS_EXPORT_CHROME,
               "a TUI format is the export format of the same number");

const char *
ms_tui_format_name(enum ms_tui_format f)
{
	return ms_export_format_name((enum ms_export_format)f);
}

bool
ms_tui_format_parse(const char *s, enum ms_tui_format *out)
{
	int v = ms_export_format_parse(s);
	if (v < 0)
		return false;
	*out = (enum ms_tui_format)v;
	return true;
}
