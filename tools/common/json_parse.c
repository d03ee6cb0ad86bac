// SPDX-License-Identifier: LGPL-2.1-or-later
/* A small JSON parser into a tree (see json_parse.h). */
#include "json_parse.h"

#include <stdlib.h>
#include <string.h>

#define DEPTH_MAX 32

struct jparser {
	const char *p, *end;
	int depth;
};

void json_free(struct jval *v)
{
	while (v) {
		struct jval *next = v->next;

		json_free(v->child);
		free(v->key);
		free(v->str);
		free(v);
		v = next;
	}
}

static void skip_ws(struct jparser *jp)
{
	while (jp->p < jp->end && strchr(" \t\r\n", *jp->p) && *jp->p)
		jp->p++;
}

static int hex4(const char *s, uint32_t *out)
{
	uint32_t v = 0;

	for (int i = 0; i < 4; i++) {
		char c = s[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (uint32_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (uint32_t)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (uint32_t)(c - 'A' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

static size_t put_utf8(char *o, uint32_t cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | (cp >> 6));
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | (cp >> 12));
		o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | (cp >> 18));
	o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* A string literal at jp->p (the opening quote), decoded; NULL if malformed. */
static char *parse_string(struct jparser *jp)
{
	const char *s = jp->p + 1, *q = s;
	char *out, *o;

	/* Decoded text is never longer than the literal: that much room. */
	while (q < jp->end && *q != '"')
		q += *q == '\\' ? 2 : 1;
	out = malloc((size_t)(q - s) + 1);
	o = out;
	if (!out)
		return NULL;
	while (s < jp->end && *s != '"') {
		unsigned char c = (unsigned char)*s;

		if (c < 0x20 || c == 0)
			goto bad;
		if (c != '\\') {
			*o++ = *s++;
			continue;
		}
		if (++s >= jp->end)
			goto bad;
		switch (*s) {
		case '"':
		case '\\':
		case '/':
			*o++ = *s;
			break;
		case 'b':
			*o++ = '\b';
			break;
		case 'f':
			*o++ = '\f';
			break;
		case 'n':
			*o++ = '\n';
			break;
		case 'r':
			*o++ = '\r';
			break;
		case 't':
			*o++ = '\t';
			break;
		case 'u': {
			uint32_t cp, lo;

			if (jp->end - s < 5 || hex4(s + 1, &cp))
				goto bad;
			s += 4;
			if (cp >= 0xd800 && cp <= 0xdbff && jp->end - s >= 7 && s[1] == '\\' &&
			    s[2] == 'u' && hex4(s + 3, &lo) == 0 && lo >= 0xdc00 && lo <= 0xdfff) {
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
				s += 6;
			} else if (cp >= 0xd800 && cp <= 0xdfff) {
				cp = 0xfffd; /* a lone surrogate */
			}
			if (cp == 0)
				cp = 0xfffd; /* no NUL inside a C string */
			o += put_utf8(o, cp);
			break;
		}
		default:
			goto bad;
		}
		s++;
	}
	if (s >= jp->end)
		goto bad;
	*o = '\0';
	jp->p = s + 1;
	return out;
bad:
	free(out);
	return NULL;
}

static struct jval *parse_value(struct jparser *jp);

/* The members of an array or object at jp->p ('[' or '{'); 0 or -1. */
static int parse_members(struct jparser *jp, struct jval *v, bool object)
{
	struct jval **tail = &v->child;
	char close = object ? '}' : ']';

	jp->p++;
	skip_ws(jp);
	if (jp->p < jp->end && *jp->p == close) {
		jp->p++;
		return 0;
	}
	for (;;) {
		char *key = NULL;
		struct jval *m;

		skip_ws(jp);
		if (object) {
			if (jp->p >= jp->end || *jp->p != '"' || !(key = parse_string(jp)))
				return -1;
			skip_ws(jp);
			if (jp->p >= jp->end || *jp->p != ':') {
				free(key);
				return -1;
			}
			jp->p++;
		}
		m = parse_value(jp);
		if (!m) {
			free(key);
			return -1;
		}
		m->key = key;
		*tail = m;
		tail = &m->next;
		skip_ws(jp);
		if (jp->p < jp->end && *jp->p == ',') {
			jp->p++;
			continue;
		}
		if (jp->p < jp->end && *jp->p == close) {
			jp->p++;
			return 0;
		}
		return -1;
	}
}

static bool literal(struct jparser *jp, const char *word)
{
	size_t n = strlen(word);

	if ((size_t)(jp->end - jp->p) < n || memcmp(jp->p, word, n) != 0)
		return false;
	jp->p += n;
	return true;
}

static struct jval *parse_value(struct jparser *jp)
{
	struct jval *v;

	skip_ws(jp);
	if (jp->p >= jp->end || ++jp->depth > DEPTH_MAX)
		return NULL;
	v = calloc(1, sizeof(*v));
	if (!v)
		return NULL;
	switch (*jp->p) {
	case '{':
	case '[':
		v->type = *jp->p == '{' ? J_OBJ : J_ARR;
		if (parse_members(jp, v, v->type == J_OBJ))
			goto bad;
		break;
	case '"':
		v->type = J_STR;
		if (!(v->str = parse_string(jp)))
			goto bad;
		break;
	default:
		if (literal(jp, "true")) {
			v->type = J_BOOL;
			v->b = true;
		} else if (literal(jp, "false")) {
			v->type = J_BOOL;
		} else if (literal(jp, "null")) {
			v->type = J_NULL;
		} else {
			const char *s = jp->p;

			while (jp->p < jp->end && strchr("+-.0123456789eE", *jp->p) && *jp->p)
				jp->p++;
			if (jp->p == s || !(v->str = strndup(s, (size_t)(jp->p - s))))
				goto bad;
			v->type = J_NUM;
		}
	}
	jp->depth--;
	return v;
bad:
	json_free(v);
	return NULL;
}

struct jval *json_parse(const char *text, size_t len)
{
	struct jparser jp = { .p = text, .end = text + len };
	struct jval *doc = parse_value(&jp);

	skip_ws(&jp);
	if (doc && jp.p != jp.end) {
		json_free(doc);
		return NULL;
	}
	return doc;
}

const struct jval *json_member(const struct jval *obj, const char *key)
{
	if (!obj || obj->type != J_OBJ)
		return NULL;
	for (const struct jval *m = obj->child; m; m = m->next)
		if (strcmp(m->key, key) == 0)
			return m;
	return NULL;
}

uint64_t json_member_u64(const struct jval *obj, const char *key)
{
	const struct jval *m = json_member(obj, key);
	double d;

	if (!m || m->type != J_NUM)
		return 0;
	d = strtod(m->str, NULL);
	return d > 0 ? (uint64_t)d : 0;
}

double json_member_double(const struct jval *obj, const char *key)
{
	const struct jval *m = json_member(obj, key);

	return m && m->type == J_NUM ? strtod(m->str, NULL) : 0;
}
