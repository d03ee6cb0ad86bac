/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The one JSON writer of thpctl and thpd: a tiny streaming writer,
 * pretty-printed, two spaces per level (thpctl's documents), and the
 * string escape thpd's compact status JSON uses too.  Strings are escaped
 * so that any bytes (mapping names and comm can hold anything) give valid
 * JSON: control characters as \uXXXX or \n-style escapes, bytes that are
 * not valid UTF-8 as U+FFFD.
 *
 * Inside an object every value call takes a key; inside an array the key
 * is NULL.
 */
#ifndef THP_TOOLS_JSON_H
#define THP_TOOLS_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 16

struct json {
	FILE *f;
	int depth;
	bool first[JSON_MAX_DEPTH]; /* no member written yet at this level */
};

void json_init(struct json *j, FILE *f);
/*
 * The valid UTF-8 sequence at @s: its length and *@code_point, or 0 when
 * the bytes are not one (also at a NUL inside it).
 */
size_t utf8_char(const unsigned char *s, uint32_t *code_point);
/*
 * Start one thpctl document on @f: the top-level object with "version"
 * (the schema of doc/thpctl-json.md) and "command".
 */
#define THPCTL_JSON_VERSION 1
void json_begin_document(struct json *j, FILE *f, const char *command);
void json_begin_object(struct json *j, const char *key);
void json_end_object(struct json *j);
void json_begin_array(struct json *j, const char *key);
void json_end_array(struct json *j);
void json_string(struct json *j, const char *key, const char *val); /* NULL: null */
void json_u64(struct json *j, const char *key, uint64_t val);
void json_i64(struct json *j, const char *key, int64_t val);
/* A number as C's %.17g (round-trips); NAN and infinities: null. */
void json_double(struct json *j, const char *key, double val);
void json_bool(struct json *j, const char *key, bool val);
void json_null(struct json *j, const char *key);
/* An address or other 64-bit word as a "0x..." string. */
void json_hex(struct json *j, const char *key, uint64_t val);
/* Closes the document with a newline; returns 0, or -1 if writing failed. */
int json_finish(struct json *j);

/* Write @s as a JSON string literal (with the quotes) to @f. */
void json_write_string(FILE *f, const char *s);
/*
 * The same literal given piece by piece to @put (for a writer that is not
 * a FILE: thpd builds its answers in memory).
 */
void json_escape(const char *s, void (*put)(void *ctx, const char *p, size_t n), void *ctx);

#endif
