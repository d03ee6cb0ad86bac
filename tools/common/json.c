// SPDX-License-Identifier: LGPL-2.1-or-later
/* The JSON writer of thpctl and thpd (see json.h). */
#include "json.h"

#include <math.h>
#include <string.h>

void json_init(struct json *j, FILE *f)
{
	memset(j, 0, sizeof(*j));
	j->f = f;
	j->depth = -1; /* no open container yet */
}

size_t utf8_char(const unsigned char *s, uint32_t *code_point)
{
	unsigned int c = s[0], cp;
	size_t n;

	if (c < 0x80) {
		*code_point = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		cp = c & 0x1f;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		cp = c & 0x0f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80) /* also stops at the terminating NUL */
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	/* Overlong forms, surrogates and values past U+10FFFF are invalid. */
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	*code_point = cp;
	return n;
}

void json_escape(const char *str, void (*put)(void *ctx, const char *p, size_t n), void *ctx)
{
	const unsigned char *s = (const unsigned char *)str;

	put(ctx, "\"", 1);
	while (*s) {
		unsigned char c = *s;
		const char *esc = NULL;
		char u[8];
		uint32_t cp;
		size_t n;

		switch (c) {
		case '"': esc = "\\\""; break;
		case '\\': esc = "\\\\"; break;
		case '\n': esc = "\\n"; break;
		case '\r': esc = "\\r"; break;
		case '\t': esc = "\\t"; break;
		case '\b': esc = "\\b"; break;
		case '\f': esc = "\\f"; break;
		default: break;
		}
		if (!esc && (c < 0x20 || c == 0x7f)) {
			snprintf(u, sizeof(u), "\\u%04x", c);
			esc = u;
		}
		if (esc) {
			put(ctx, esc, strlen(esc));
			s++;
			continue;
		}
		n = utf8_char(s, &cp);
		if (n == 0) {
			put(ctx, "\\ufffd", 6);
			s++;
			continue;
		}
		put(ctx, (const char *)s, n);
		s += n;
	}
	put(ctx, "\"", 1);
}

static void put_file(void *f, const char *p, size_t n)
{
	fwrite(p, 1, n, f);
}

void json_write_string(FILE *f, const char *str)
{
	json_escape(str, put_file, f);
}

static void indent(struct json *j)
{
	fputc('\n', j->f);
	for (int i = 0; i <= j->depth; i++)
		fputs("  ", j->f);
}

/* Separator, indentation and key before any value. */
static void member(struct json *j, const char *key)
{
	if (j->depth < 0)
		return; /* the top-level value */
	if (!j->first[j->depth])
		fputc(',', j->f);
	j->first[j->depth] = false;
	indent(j);
	if (key) {
		json_write_string(j->f, key);
		fputs(": ", j->f);
	}
}

static void open_container(struct json *j, const char *key, char c)
{
	member(j, key);
	fputc(c, j->f);
	/* Deeper nesting is a programming error; keep the output well-formed. */
	if (j->depth + 1 < JSON_MAX_DEPTH)
		j->depth++;
	j->first[j->depth] = true;
}

static void close_container(struct json *j, char c)
{
	bool empty = j->first[j->depth];

	j->depth--;
	if (!empty)
		indent(j);
	fputc(c, j->f);
}

void json_begin_object(struct json *j, const char *key)
{
	open_container(j, key, '{');
}

void json_end_object(struct json *j)
{
	close_container(j, '}');
}

void json_begin_array(struct json *j, const char *key)
{
	open_container(j, key, '[');
}

void json_end_array(struct json *j)
{
	close_container(j, ']');
}

void json_string(struct json *j, const char *key, const char *val)
{
	member(j, key);
	if (val)
		json_write_string(j->f, val);
	else
		fputs("null", j->f);
}

void json_u64(struct json *j, const char *key, uint64_t val)
{
	member(j, key);
	fprintf(j->f, "%llu", (unsigned long long)val);
}

void json_i64(struct json *j, const char *key, int64_t val)
{
	member(j, key);
	fprintf(j->f, "%lld", (long long)val);
}

void json_double(struct json *j, const char *key, double val)
{
	member(j, key);
	if (isfinite(val))
		fprintf(j->f, "%.17g", val);
	else
		fputs("null", j->f);
}

void json_bool(struct json *j, const char *key, bool val)
{
	member(j, key);
	fputs(val ? "true" : "false", j->f);
}

void json_null(struct json *j, const char *key)
{
	member(j, key);
	fputs("null", j->f);
}

void json_hex(struct json *j, const char *key, uint64_t val)
{
	member(j, key);
	fprintf(j->f, "\"0x%llx\"", (unsigned long long)val);
}

int json_finish(struct json *j)
{
	fputc('\n', j->f);
	return ferror(j->f) || fflush(j->f) ? -1 : 0;
}

void json_begin_document(struct json *j, FILE *f, const char *command)
{
	json_init(j, f);
	json_begin_object(j, NULL);
	json_u64(j, "version", THPCTL_JSON_VERSION);
	json_string(j, "command", command);
}
