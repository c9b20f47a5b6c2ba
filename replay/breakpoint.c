/*
 * breakpoint.c - breakpoint specs: parsing what a user types ("mature",
 * "merge=40", "time=12:10", "part=a1", "lane=slow", "depth>=3") and matching
 * them against a pending dispatch or a publication time; and the form of a
 * time of the replayed day (ms_replay_fmt_clock), which `time=` reads.
 */
#include "ms_replay.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NS_PER_S 1000000000LL

static int
parse_u64(const char *s, int base, uint64_t *out)
{
	if (!*s || isspace((unsigned char)*s) || *s == '-' || *s == '+')
		return -1;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, base);
	if (errno || *end)
		return -1;
	*out = v;
	return 0;
}

/* A decimal number from lo to hi (digits only: no sign or space): 0, or
 * -1 when val is not digits, 1 when it is out of the range. */
static int
parse_dec_in(const char *val, uint64_t lo, uint64_t hi, uint64_t *out)
{
	size_t n = strspn(val, "0123456789");
	if (n == 0 || val[n])
		return -1;
	uint64_t v;
	if (parse_u64(val, 10, &v) || v < lo || v > hi)
		return 1;
	*out = v;
	return 0;
}

/* "HH:MM" or "HH:MM:SS" -> ns since the start of the day, as the status
 * line shows a time ("02:00:00"); the hour may have one digit ("9:05"),
 * minutes and seconds have two. Nothing else: a sign, a space, "1:2:3" or
 * a field that would wrap around is not a time the TUI ever shows. */
static int
parse_tod(const char *s, int64_t *out)
{
	static const char digits[] = "0123456789";
	size_t hd = strspn(s, digits);
	if (hd < 1 || hd > 2 || s[hd] != ':')
		return -1;
	const char *m = s + hd + 1;
	if (strspn(m, digits) != 2 || (m[2] && m[2] != ':'))
		return -1;
	unsigned h = (unsigned)atoi(s), min = (unsigned)atoi(m), sec = 0;
	if (m[2] == ':') {
		if (strspn(m + 3, digits) != 2 || m[5])
			return -1;
		sec = (unsigned)atoi(m + 3);
	}
	if (h > 24 || min > 59 || sec > 59 || (h == 24 && (min || sec)))
		return -1;
	*out = ((int64_t)h * 3600 + min * 60 + sec) * NS_PER_S;
	return 0;
}

/* "HEX" -> a part ID, as the TUI shows one ("00000000000000a1"): 1 to 16
 * hex digits, leading zeros optional. No "0x" (strtoull would take it),
 * sign or space. */
static int
parse_part_id(const char *s, uint64_t *out)
{
	size_t n = strspn(s, "0123456789abcdefABCDEF");
	if (n < 1 || n > 16 || s[n])
		return -1;
	return parse_u64(s, 16, out);
}

/* What ms_bp_parse accepts, for its error messages. */
#define BP_KINDS                                                               \
	"mature, sampling, merge=N, time=HH:MM[:SS], time=@NS, part=HEX, "     \
	"lane=L or depth>=D"

int
ms_bp_parse(const char *spec, ms_breakpoint *out, ms_errbuf *eb)
{
	ms_breakpoint bp;
	memset(&bp, 0, sizeof(bp));
	bp.enabled = true;
	if (!spec)
		return ms_fail(eb, MS_ERR_INVAL, "breakpoint: empty spec");
	while (isspace((unsigned char)*spec))
		spec++;
	char s[64];
	size_t len = strlen(spec);
	while (len && isspace((unsigned char)spec[len - 1]))
		len--;
	if (len == 0 || len >= sizeof(s))
		return ms_fail(eb, MS_ERR_INVAL,
		               "breakpoint '%.*s': expected " BP_KINDS,
		               (int)(len > 40 ? 40 : len), spec);
	memcpy(s, spec, len);
	s[len] = '\0';

	const char *val = NULL;
	if (strcmp(s, "mature") == 0) {
		bp.kind = MS_BP_MATURE;
		snprintf(bp.spec, sizeof(bp.spec), "mature");
	} else if (strcmp(s, "sampling") == 0) {
		bp.kind = MS_BP_SAMPLING;
		snprintf(bp.spec, sizeof(bp.spec), "sampling");
	} else if ((val = strncmp(s, "merge=", 6) == 0 ? s + 6
	                  : strncmp(s, "seq=", 4) == 0 ? s + 4
	                                               : NULL)) {
		if (parse_dec_in(val, 1, UINT64_MAX, &bp.n))
			return ms_fail(eb, MS_ERR_INVAL,
			               "breakpoint '%s': merge number must be "
			               "a whole number from 1 to %" PRIu64,
			               s, UINT64_MAX);
		bp.kind = MS_BP_MERGE;
		snprintf(bp.spec, sizeof(bp.spec), "merge=%llu",
		         (unsigned long long)bp.n);
	} else if (strncmp(s, "time=", 5) == 0) {
		val = s + 5;
		bp.kind = MS_BP_TIME;
		if (*val == '@') {
			uint64_t v;
			if (parse_dec_in(val + 1, 0, INT64_MAX, &v))
				return ms_fail(eb, MS_ERR_INVAL,
				               "breakpoint '%s': expected "
				               "time=@NS, a logical time in "
				               "unix nanoseconds from 0 to "
				               "%" PRId64,
				               s, INT64_MAX);
			bp.t = (int64_t)v;
			bp.absolute = true;
			snprintf(bp.spec, sizeof(bp.spec), "time=@%lld",
			         (long long)bp.t);
		} else {
			if (parse_tod(val, &bp.t))
				return ms_fail(eb, MS_ERR_INVAL,
				               "breakpoint '%s': expected "
				               "time=HH:MM or time=HH:MM:SS "
				               "within the logical day (as "
				               "in time=09:30 or time=9:30:05)",
				               s);
			int64_t sec = bp.t / NS_PER_S;
			snprintf(bp.spec, sizeof(bp.spec),
			         "time=%02lld:%02lld:%02lld",
			         (long long)(sec / 3600),
			         (long long)(sec / 60 % 60),
			         (long long)(sec % 60));
		}
	} else if (strncmp(s, "part=", 5) == 0) {
		if (parse_part_id(s + 5, &bp.n))
			return ms_fail(eb, MS_ERR_INVAL,
			               "breakpoint '%s': expected part=HEX, "
			               "a part ID as the TUI shows it (1 to "
			               "16 hex digits, no 0x)",
			               s);
		bp.kind = MS_BP_PART;
		snprintf(bp.spec, sizeof(bp.spec), "part=%016llx",
		         (unsigned long long)bp.n);
	} else if (strncmp(s, "lane=", 5) == 0) {
		val = s + 5;
		if (strcmp(val, MS_LANE_FAST) && strcmp(val, MS_LANE_SLOW) &&
		    strcmp(val, MS_LANE_FINALIZE))
			return ms_fail(eb, MS_ERR_INVAL,
			               "breakpoint '%s': lane must be fast, "
			               "slow or finalize",
			               s);
		bp.kind = MS_BP_LANE;
		snprintf(bp.lane, sizeof(bp.lane), "%s", val);
		snprintf(bp.spec, sizeof(bp.spec), "lane=%s", val);
	} else if (strncmp(s, "depth>=", 7) == 0) {
		if (parse_dec_in(s + 7, 0, UINT32_MAX, &bp.n))
			return ms_fail(eb, MS_ERR_INVAL,
			               "breakpoint '%s': expected depth>=D "
			               "with D a whole number from 0 to %" PRIu32,
			               s, UINT32_MAX);
		bp.kind = MS_BP_DEPTH;
		snprintf(bp.spec, sizeof(bp.spec), "depth>=%llu",
		         (unsigned long long)bp.n);
	} else {
		return ms_fail(eb, MS_ERR_INVAL,
		               "breakpoint '%s': expected " BP_KINDS, s);
	}
	*out = bp;
	return 0;
}

static int64_t
bp_abs_time(const ms_breakpoint *bp, int64_t day_start)
{
	return bp->absolute ? bp->t : day_start + bp->t;
}

bool
ms_bp_match_time(const ms_breakpoint *bp, int64_t t, int64_t day_start)
{
	return bp->enabled && bp->kind == MS_BP_TIME &&
	       t >= bp_abs_time(bp, day_start);
}

bool
ms_bp_match_dispatch(const ms_breakpoint *bp, const ms_dispatch *d,
                     int64_t day_start)
{
	if (!bp->enabled)
		return false;
	switch (bp->kind) {
	case MS_BP_MATURE:
		return d->mature_parts > 0;
	case MS_BP_SAMPLING:
		return d->predict_class == MS_SAMPLING_EXECUTED;
	case MS_BP_MERGE:
		return d->seq == bp->n;
	case MS_BP_TIME:
		return d->now_ns >= bp_abs_time(bp, day_start);
	case MS_BP_PART:
		for (size_t i = 0; i < d->ninputs; i++)
			if (d->inputs[i].id == bp->n)
				return true;
		return false;
	case MS_BP_LANE:
		return strcmp(ms_lane_name(d->lane), bp->lane) == 0;
	case MS_BP_DEPTH:
		return d->max_depth >= bp->n;
	}
	return false;
}

char *
ms_replay_fmt_clock(char *buf, size_t n, int64_t t, int64_t day_start)
{
	/* Whole seconds rounded down, so half a second before the day is
	 * "-1d 23:59:59", never "-00:00:00". */
	int64_t d = t - day_start;
	int64_t sec = d / NS_PER_S - (d % NS_PER_S < 0);
	int64_t days = sec / 86400 - (sec % 86400 < 0);
	int64_t s = sec - days * 86400;
	int hh = (int)(s / 3600), mm = (int)(s / 60 % 60), ss = (int)(s % 60);
	if (days == 0)
		snprintf(buf, n, "%02d:%02d:%02d", hh, mm, ss);
	else
		snprintf(buf, n, "%c%" PRId64 "d %02d:%02d:%02d",
		         days > 0 ? '+' : '-', days > 0 ? days : -days, hh, mm,
		         ss);
	return buf;
}
