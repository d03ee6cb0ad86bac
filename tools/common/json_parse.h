/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A small JSON parser into a tree, for thpctl to read thpd's status JSON
 * (fuzz/fuzz_thpd_json.c feeds it arbitrary bytes).  Strings are decoded
 * to UTF-8 (\u0000 is refused); numbers are kept as their text.
 */
#ifndef THP_TOOLS_JSON_PARSE_H
#define THP_TOOLS_JSON_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One parsed JSON value; a container's members are a list of children. */
enum jtype { J_NULL,
	     J_BOOL,
	     J_NUM,
	     J_STR,
	     J_ARR,
	     J_OBJ };
struct jval {
	enum jtype type;
	char *key; /* member name inside an object, decoded */
	char *str; /* J_STR: decoded; J_NUM: the number's text */
	bool b;
	struct jval *child, *next;
};

/* The one value that is all of @text (@len bytes, whitespace around it allowed); NULL if not. */
struct jval *json_parse(const char *text, size_t len);
void json_free(struct jval *v);

/* An object's member @key; NULL if @obj is not an object or has none. */
const struct jval *json_member(const struct jval *obj, const char *key);
/* A number member as uint64_t (0 when missing, not a number or not positive). */
uint64_t json_member_u64(const struct jval *obj, const char *key);
/* A number member as a double (0 when missing or not a number). */
double json_member_double(const struct jval *obj, const char *key);

#endif
