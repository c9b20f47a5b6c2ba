/*
 * json_testlib.h - a strict JSON reader for tests (RFC 8259: no trailing
 * commas, no bare words, no leading zeros, no control characters in
 * strings). json_parse fails the test on anything else; jget finds a
 * member of an object. Include after <cmocka.h>.
 */
#ifndef MS_JSON_TESTLIB_H
#define MS_JSON_TESTLIB_H

#include <ctype.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- a strict JSON reader ------------------------------------------- */

enum jt { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

typedef struct jv {
	enum jt t;
	bool b;
	double num;
	char *raw; /* number text or string value */
	size_t n;  /* array items / object members */
	struct jv *items;
	char **keys;
} jv;

typedef struct jp {
	const char *p;
	bool bad;
} jp;

static inline void
ws(jp *s)
{
	while (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r')
		s->p++;
}

static inline bool parse_value(jp *s, jv *v);

static inline char *
parse_string(jp *s)
{
	if (*s->p != '"') {
		s->bad = true;
		return NULL;
	}
	s->p++;
	size_t cap = 16, n = 0;
	char *out = malloc(cap);
	for (;;) {
		unsigned char c = (unsigned char)*s->p;
		if (c == '\0' || c < 0x20) {
			s->bad = true;
			free(out);
			return NULL;
		}
		s->p++;
		if (c == '"')
			break;
		if (c == '\\') {
			char e = *s->p++;
			switch (e) {
			case '"':
			case '\\':
			case '/':
				c = (unsigned char)e;
				break;
			case 'n':
				c = '\n';
				break;
			case 't':
				c = '\t';
				break;
			case 'r':
				c = '\r';
				break;
			case 'b':
				c = '\b';
				break;
			case 'f':
				c = '\f';
				break;
			case 'u': {
				unsigned u = 0;
				for (int i = 0; i < 4; i++) {
					if (!isxdigit((unsigned char)s->p[i])) {
						s->bad = true;
						free(out);
						return NULL;
					}
				}
				sscanf(s->p, "%4x", &u);
				s->p += 4;
				c = (unsigned char)(u < 0x80 ? u : '?');
				break;
			}
			default:
				s->bad = true;
				free(out);
				return NULL;
			}
		}
		if (n + 2 > cap)
			out = realloc(out, cap *= 2);
		out[n++] = (char)c;
	}
	out[n] = '\0';
	return out;
}

static inline bool
parse_number(jp *s, jv *v)
{
	const char *st = s->p;
	if (*s->p == '-')
		s->p++;
	if (*s->p == '0') {
		s->p++;
	} else if (*s->p >= '1' && *s->p <= '9') {
		while (isdigit((unsigned char)*s->p))
			s->p++;
	} else {
		return false;
	}
	if (*s->p == '.') {
		s->p++;
		if (!isdigit((unsigned char)*s->p))
			return false;
		while (isdigit((unsigned char)*s->p))
			s->p++;
	}
	if (*s->p == 'e' || *s->p == 'E') {
		s->p++;
		if (*s->p == '+' || *s->p == '-')
			s->p++;
		if (!isdigit((unsigned char)*s->p))
			return false;
		while (isdigit((unsigned char)*s->p))
			s->p++;
	}
	v->t = J_NUM;
	v->raw = strndup(st, (size_t)(s->p - st));
	v->num = strtod(v->raw, NULL);
	return true;
}

static inline bool
parse_value(jp *s, jv *v)
{
	memset(v, 0, sizeof(*v));
	ws(s);
	if (*s->p == '{' || *s->p == '[') {
		bool obj = *s->p == '{';
		char close = obj ? '}' : ']';
		v->t = obj ? J_OBJ : J_ARR;
		s->p++;
		ws(s);
		if (*s->p == close) {
			s->p++;
			return true;
		}
		size_t cap = 0;
		for (;;) {
			if (v->n == cap) {
				cap = cap ? cap * 2 : 8;
				v->items = realloc(v->items,
				                   cap * sizeof(*v->items));
				v->keys = realloc(v->keys,
				                  cap * sizeof(*v->keys));
			}
			ws(s);
			v->keys[v->n] = NULL;
			if (obj) {
				v->keys[v->n] = parse_string(s);
				if (!v->keys[v->n])
					return false;
				ws(s);
				if (*s->p++ != ':') {
					free(v->keys[v->n]);
					return false;
				}
			}
			if (!parse_value(s, &v->items[v->n])) {
				free(v->keys[v->n]);
				return false;
			}
			v->n++;
			ws(s);
			if (*s->p == ',') {
				s->p++;
				continue;
			}
			if (*s->p == close) {
				s->p++;
				return true;
			}
			return false;
		}
	}
	if (*s->p == '"') {
		v->t = J_STR;
		v->raw = parse_string(s);
		return v->raw != NULL;
	}
	if (strncmp(s->p, "true", 4) == 0 || strncmp(s->p, "false", 5) == 0) {
		v->t = J_BOOL;
		v->b = *s->p == 't';
		s->p += v->b ? 4 : 5;
		return true;
	}
	if (strncmp(s->p, "null", 4) == 0) {
		s->p += 4;
		return true;
	}
	return parse_number(s, v);
}

static inline void
jfree(jv *v)
{
	for (size_t i = 0; i < v->n; i++) {
		jfree(&v->items[i]);
		if (v->keys)
			free(v->keys[i]);
	}
	free(v->items);
	free(v->keys);
	free(v->raw);
}

/* Parse all of text as one JSON value; fails the test if it is not. */
static inline void
json_parse(const char *text, jv *v)
{
	jp s = { text, false };
	bool ok = parse_value(&s, v);
	ws(&s);
	if (!ok || s.bad || *s.p != '\0')
		fail_msg("invalid JSON near: %.60s", s.p);
}

static inline const jv *
jget(const jv *o, const char *key)
{
	assert_int_equal(o->t, J_OBJ);
	for (size_t i = 0; i < o->n; i++)
		if (strcmp(o->keys[i], key) == 0)
			return &o->items[i];
	return NULL;
}

#endif
