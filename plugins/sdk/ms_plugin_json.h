/*
 * ms_plugin_json.h - a tiny strict JSON reader for plugin configurations.
 *
 * Plugins link nothing of the host, so the shipped plugins share this
 * header-only reader instead. It accepts exactly one JSON object whose
 * member values are null, true, false, numbers, strings, or arrays of those
 * scalars (configs need no more). Anything else is refused with a message
 * that says where: trailing commas, duplicate keys, nested objects, bad
 * escapes, control characters in strings, leading zeros, trailing text.
 * Numbers are converted without strtod, so the result does not depend on
 * the process locale (the TUI sets one).
 *
 * Limits: MSJ_MAX_MEMBERS members, MSJ_MAX_ITEMS array items in total,
 * MSJ_POOL bytes of decoded strings. The document is self-contained: it
 * owns every string it hands out (in pool).
 */
#ifndef MS_PLUGIN_JSON_H
#define MS_PLUGIN_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define MSJ_MAX_MEMBERS 64
#define MSJ_MAX_ITEMS 256
#define MSJ_POOL 16384

enum msj_type {
	MSJ_NULL = 0,
	MSJ_BOOL = 1,
	MSJ_NUMBER = 2,
	MSJ_STRING = 3,
	MSJ_ARRAY = 4,
};

typedef struct msj_value {
	enum msj_type type;
	bool b;
	double num;
	bool integral;   /* number written without fraction or exponent */
	const char *str; /* MSJ_STRING: decoded, NUL-terminated */
	size_t len;
	size_t first, count; /* MSJ_ARRAY: items[first .. first + count) */
} msj_value;

typedef struct msj_member {
	const char *key; /* decoded, NUL-terminated */
	msj_value v;
} msj_member;

typedef struct msj_doc {
	size_t nmembers;
	msj_member members[MSJ_MAX_MEMBERS];
	size_t nitems;
	msj_value items[MSJ_MAX_ITEMS];
	size_t pool_used;
	char pool[MSJ_POOL];
} msj_doc;

typedef struct msj__rd {
	const char *s;
	size_t i, n;
	msj_doc *d;
	char *err;
	size_t errlen;
} msj__rd;

static inline int
msj__fail(msj__rd *r, const char *what)
{
	if (r->err && r->errlen)
		snprintf(r->err, r->errlen, "config: %s at offset %zu", what,
		         r->i);
	return -1;
}

static inline void
msj__ws(msj__rd *r)
{
	while (r->i < r->n && (r->s[r->i] == ' ' || r->s[r->i] == '\t' ||
	                       r->s[r->i] == '\n' || r->s[r->i] == '\r'))
		r->i++;
}

static inline int
msj__put(msj__rd *r, char c)
{
	if (r->d->pool_used >= MSJ_POOL)
		return msj__fail(r, "strings too long");
	r->d->pool[r->d->pool_used++] = c;
	return 0;
}

static inline int
msj__hex4(msj__rd *r, uint32_t *out)
{
	uint32_t v = 0;
	for (int k = 0; k < 4; k++) {
		if (r->i >= r->n)
			return msj__fail(r, "truncated \\u escape");
		char c = r->s[r->i++];
		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (uint32_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (uint32_t)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (uint32_t)(c - 'A' + 10);
		else
			return msj__fail(r, "bad hex digit in \\u escape");
	}
	*out = v;
	return 0;
}

static inline int
msj__utf8(msj__rd *r, uint32_t cp)
{
	int rc = 0;
	if (cp < 0x80) {
		rc |= msj__put(r, (char)cp);
	} else if (cp < 0x800) {
		rc |= msj__put(r, (char)(0xC0 | (cp >> 6)));
		rc |= msj__put(r, (char)(0x80 | (cp & 0x3F)));
	} else if (cp < 0x10000) {
		rc |= msj__put(r, (char)(0xE0 | (cp >> 12)));
		rc |= msj__put(r, (char)(0x80 | ((cp >> 6) & 0x3F)));
		rc |= msj__put(r, (char)(0x80 | (cp & 0x3F)));
	} else {
		rc |= msj__put(r, (char)(0xF0 | (cp >> 18)));
		rc |= msj__put(r, (char)(0x80 | ((cp >> 12) & 0x3F)));
		rc |= msj__put(r, (char)(0x80 | ((cp >> 6) & 0x3F)));
		rc |= msj__put(r, (char)(0x80 | (cp & 0x3F)));
	}
	return rc ? -1 : 0;
}

/* A string starting at the opening quote; decoded into the pool. */
static inline int
msj__string(msj__rd *r, const char **out, size_t *len)
{
	size_t start = r->d->pool_used;
	r->i++; /* opening quote */
	for (;;) {
		if (r->i >= r->n)
			return msj__fail(r, "unterminated string");
		unsigned char c = (unsigned char)r->s[r->i];
		if (c == '"') {
			r->i++;
			break;
		}
		if (c < 0x20)
			return msj__fail(r, "control character in string");
		if (c != '\\') {
			if (msj__put(r, (char)c))
				return -1;
			r->i++;
			continue;
		}
		r->i++;
		if (r->i >= r->n)
			return msj__fail(r, "unterminated escape");
		char e = r->s[r->i++];
		char o;
		switch (e) {
		case '"':
			o = '"';
			break;
		case '\\':
			o = '\\';
			break;
		case '/':
			o = '/';
			break;
		case 'b':
			o = '\b';
			break;
		case 'f':
			o = '\f';
			break;
		case 'n':
			o = '\n';
			break;
		case 'r':
			o = '\r';
			break;
		case 't':
			o = '\t';
			break;
		case 'u': {
			uint32_t cp;
			if (msj__hex4(r, &cp))
				return -1;
			if (cp >= 0xD800 && cp < 0xDC00) {
				uint32_t lo;
				if (r->i + 1 >= r->n || r->s[r->i] != '\\' ||
				    r->s[r->i + 1] != 'u')
					return msj__fail(r, "lone surrogate");
				r->i += 2;
				if (msj__hex4(r, &lo))
					return -1;
				if (lo < 0xDC00 || lo > 0xDFFF)
					return msj__fail(r, "bad surrogate");
				cp = 0x10000 + ((cp - 0xD800) << 10) +
				     (lo - 0xDC00);
			} else if (cp >= 0xDC00 && cp <= 0xDFFF) {
				return msj__fail(r, "lone surrogate");
			}
			if (cp == 0)
				return msj__fail(r, "NUL in string");
			if (msj__utf8(r, cp))
				return -1;
			continue;
		}
		default:
			return msj__fail(r, "bad escape");
		}
		if (msj__put(r, o))
			return -1;
	}
	if (msj__put(r, '\0'))
		return -1;
	*out = r->d->pool + start;
	*len = r->d->pool_used - start - 1;
	return 0;
}

static const double msj__pow10[] = {
	1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
	1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
};

static inline int
msj__number(msj__rd *r, msj_value *v)
{
	bool neg = false;
	uint64_t mant = 0;
	int digits = 0, exp10 = 0;
	if (r->s[r->i] == '-') {
		neg = true;
		r->i++;
	}
	if (r->i >= r->n || r->s[r->i] < '0' || r->s[r->i] > '9')
		return msj__fail(r, "bad number");
	if (r->s[r->i] == '0' && r->i + 1 < r->n && r->s[r->i + 1] >= '0' &&
	    r->s[r->i + 1] <= '9')
		return msj__fail(r, "leading zero in number");
	v->integral = true;
	while (r->i < r->n && r->s[r->i] >= '0' && r->s[r->i] <= '9') {
		if (digits < 19) {
			mant = mant * 10 + (uint64_t)(r->s[r->i] - '0');
			if (mant)
				digits++;
		} else {
			exp10++;
		}
		r->i++;
	}
	if (r->i < r->n && r->s[r->i] == '.') {
		v->integral = false;
		r->i++;
		if (r->i >= r->n || r->s[r->i] < '0' || r->s[r->i] > '9')
			return msj__fail(r, "bad fraction");
		while (r->i < r->n && r->s[r->i] >= '0' && r->s[r->i] <= '9') {
			if (digits < 19) {
				mant = mant * 10 + (uint64_t)(r->s[r->i] - '0');
				if (mant)
					digits++;
				exp10--;
			}
			r->i++;
		}
	}
	if (r->i < r->n && (r->s[r->i] == 'e' || r->s[r->i] == 'E')) {
		bool eneg = false;
		int e = 0;
		v->integral = false;
		r->i++;
		if (r->i < r->n && (r->s[r->i] == '+' || r->s[r->i] == '-'))
			eneg = r->s[r->i++] == '-';
		if (r->i >= r->n || r->s[r->i] < '0' || r->s[r->i] > '9')
			return msj__fail(r, "bad exponent");
		while (r->i < r->n && r->s[r->i] >= '0' && r->s[r->i] <= '9') {
			if (e < 10000)
				e = e * 10 + (r->s[r->i] - '0');
			r->i++;
		}
		exp10 += eneg ? -e : e;
	}
	/* long double holds 19 digits exactly (x86: 64-bit mantissa), so
	 * short decimals such as 0.37506316992498556 round once, as strtod
	 * would, and 0.1 is the double nearest 0.1. */
	long double x = (long double)mant;
	if (mant != 0) {
		while (exp10 > 22) {
			x *= 1e22L;
			exp10 -= 22;
			if (x > 1.7e308L)
				return msj__fail(r, "number out of range");
		}
		while (exp10 < -22) {
			x /= 1e22L;
			exp10 += 22;
		}
		if (exp10 > 0)
			x *= (long double)msj__pow10[exp10];
		else if (exp10 < 0)
			x /= (long double)msj__pow10[-exp10];
		if (x > 1.7e308L)
			return msj__fail(r, "number out of range");
	}
	v->type = MSJ_NUMBER;
	v->num = (double)(neg ? -x : x);
	return 0;
}

static inline int
msj__lit(msj__rd *r, const char *word)
{
	size_t k = strlen(word);
	if (r->n - r->i < k || memcmp(r->s + r->i, word, k) != 0)
		return msj__fail(r, "unexpected token");
	r->i += k;
	return 0;
}

static inline int
msj__scalar(msj__rd *r, msj_value *v)
{
	memset(v, 0, sizeof(*v));
	if (r->i >= r->n)
		return msj__fail(r, "missing value");
	char c = r->s[r->i];
	if (c == '"') {
		v->type = MSJ_STRING;
		return msj__string(r, &v->str, &v->len);
	}
	if (c == 't') {
		v->type = MSJ_BOOL;
		v->b = true;
		return msj__lit(r, "true");
	}
	if (c == 'f') {
		v->type = MSJ_BOOL;
		return msj__lit(r, "false");
	}
	if (c == 'n') {
		v->type = MSJ_NULL;
		return msj__lit(r, "null");
	}
	if (c == '-' || (c >= '0' && c <= '9'))
		return msj__number(r, v);
	if (c == '{')
		return msj__fail(r, "nested objects are not supported");
	if (c == '[')
		return msj__fail(r, "nested arrays are not supported");
	return msj__fail(r, "unexpected character");
}

static inline int
msj__value(msj__rd *r, msj_value *v)
{
	if (r->i < r->n && r->s[r->i] == '[') {
		memset(v, 0, sizeof(*v));
		v->type = MSJ_ARRAY;
		v->first = r->d->nitems;
		r->i++;
		msj__ws(r);
		if (r->i < r->n && r->s[r->i] == ']') {
			r->i++;
			return 0;
		}
		for (;;) {
			msj__ws(r);
			if (r->d->nitems >= MSJ_MAX_ITEMS)
				return msj__fail(r, "too many array items");
			if (msj__scalar(r, &r->d->items[r->d->nitems]))
				return -1;
			r->d->nitems++;
			v->count++;
			msj__ws(r);
			if (r->i < r->n && r->s[r->i] == ',') {
				r->i++;
				continue;
			}
			if (r->i < r->n && r->s[r->i] == ']') {
				r->i++;
				return 0;
			}
			return msj__fail(r, "expected ',' or ']'");
		}
	}
	return msj__scalar(r, v);
}

/*
 * Parse text (n bytes; it need not be NUL-terminated) as one object into
 * d. Returns 0, or -1 with a message in err.
 */
static inline int
msj_parse(msj_doc *d, const char *text, size_t n, char *err, size_t errlen)
{
	msj__rd r = { text, 0, n, d, err, errlen };
	d->nmembers = 0;
	d->nitems = 0;
	d->pool_used = 0;
	msj__ws(&r);
	if (r.i >= r.n || text[r.i] != '{')
		return msj__fail(&r, "expected a JSON object");
	r.i++;
	msj__ws(&r);
	if (r.i < r.n && text[r.i] == '}') {
		r.i++;
	} else {
		for (;;) {
			msj__ws(&r);
			if (r.i >= r.n || text[r.i] != '"')
				return msj__fail(&r, "expected a quoted key");
			if (d->nmembers >= MSJ_MAX_MEMBERS)
				return msj__fail(&r, "too many keys");
			msj_member *m = &d->members[d->nmembers];
			size_t klen;
			if (msj__string(&r, &m->key, &klen))
				return -1;
			for (size_t k = 0; k < d->nmembers; k++) {
				if (strcmp(d->members[k].key, m->key) == 0) {
					if (err && errlen)
						snprintf(
						        err, errlen,
						        "config: duplicate key "
						        "\"%s\"",
						        m->key);
					return -1;
				}
			}
			msj__ws(&r);
			if (r.i >= r.n || text[r.i] != ':')
				return msj__fail(&r, "expected ':'");
			r.i++;
			msj__ws(&r);
			if (msj__value(&r, &m->v))
				return -1;
			d->nmembers++;
			msj__ws(&r);
			if (r.i < r.n && text[r.i] == ',') {
				r.i++;
				continue;
			}
			if (r.i < r.n && text[r.i] == '}') {
				r.i++;
				break;
			}
			return msj__fail(&r, "expected ',' or '}'");
		}
	}
	msj__ws(&r);
	if (r.i != r.n)
		return msj__fail(&r, "trailing characters after the object");
	return 0;
}

/* The member named key, or NULL. */
static inline const msj_value *
msj_get(const msj_doc *d, const char *key)
{
	for (size_t i = 0; i < d->nmembers; i++)
		if (strcmp(d->members[i].key, key) == 0)
			return &d->members[i].v;
	return NULL;
}

/*
 * Return the first member whose key is not in the NULL-terminated list
 * `known`, or NULL when every key is known.
 */
static inline const char *
msj_unknown_key(const msj_doc *d, const char *const *known)
{
	for (size_t i = 0; i < d->nmembers; i++) {
		bool found = false;
		for (size_t k = 0; known[k]; k++)
			if (strcmp(d->members[i].key, known[k]) == 0)
				found = true;
		if (!found)
			return d->members[i].key;
	}
	return NULL;
}

/* Read a number, also accepted as a quoted string holding a JSON number
 * ("0.1"). Returns 0 and sets *out, or -1. */
static inline int
msj_as_number(const msj_value *v, double *out)
{
	if (v->type == MSJ_NUMBER) {
		*out = v->num;
		return 0;
	}
	if (v->type == MSJ_STRING && v->len > 0) {
		msj_doc *tmp = NULL; /* numbers need no pool */
		msj__rd r = { v->str, 0, v->len, tmp, NULL, 0 };
		msj_value nv;
		memset(&nv, 0, sizeof(nv));
		if (v->str[0] != '-' && (v->str[0] < '0' || v->str[0] > '9'))
			return -1;
		if (msj__number(&r, &nv) || r.i != r.n)
			return -1;
		*out = nv.num;
		return 0;
	}
	return -1;
}

#endif
