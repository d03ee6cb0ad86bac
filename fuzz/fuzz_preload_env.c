// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Fuzz the environment handling of `thpctl run` and libthp-preload.so
 * (preload/preload_env.c): the LD_PRELOAD and GLIBC_TUNABLES list editing
 * that run does before exec, the GLIBC_TUNABLES test the preload's
 * constructor makes, and its THP_PRELOAD_DEBUG test, against a reference
 * written here character by character.
 *
 * Input: u8 mode, then NUL-separated: the variable's old value, FIRST,
 * LAST (each an exact-size heap copy, so ASan sees any overread).
 *   mode & 3: 0 LD_PRELOAD (separators " :", drop our preload),
 *             1 GLIBC_TUNABLES dropping any glibc.malloc.hugetlb,
 *             2 GLIBC_TUNABLES dropping only glibc.malloc.hugetlb=1,
 *             3 as 1, with FIRST / LAST replaced by what thpctl passes;
 *   mode & 4: FIRST given, mode & 8: LAST given.
 *
 * Invariants: the edited list is exactly the reference's (FIRST, the old
 * entries that are not empty and not dropped, LAST; joined with ':'); the
 * "has" test agrees with the reference; editing is idempotent when FIRST
 * and LAST are themselves dropped entries (ours is never added twice);
 * after run's tunable edit exactly one glibc.malloc.hugetlb entry is left.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "preload_env.h"

#define NFIELDS 3

static void fail(const char *what, const char *list)
{
	fprintf(stderr, "fuzz_preload_env: %s (list \"%s\")\n", what, list ? list : "(null)");
	abort();
}

enum drop_kind { DROP_PRELOAD, DROP_HUGETLB, DROP_OURS };

/* Reference matchers, on [s, s + n). */
static bool ref_ends_with(const char *s, size_t n, const char *tail)
{
	size_t t = strlen(tail);

	return n >= t && strncmp(s + n - t, tail, t) == 0;
}

static bool ref_drop(enum drop_kind k, const char *s, size_t n)
{
	static const char prefix[] = "glibc.malloc.hugetlb=";

	switch (k) {
	case DROP_PRELOAD:
		return ref_ends_with(s, n, "libthp-preload.so") &&
		       (n == strlen("libthp-preload.so") || ref_ends_with(s, n, "/libthp-preload.so"));
	case DROP_HUGETLB:
		return n >= sizeof(prefix) - 1 && strncmp(s, prefix, sizeof(prefix) - 1) == 0;
	default:
		return n == strlen("glibc.malloc.hugetlb=1") &&
		       strncmp(s, "glibc.malloc.hugetlb=1", n) == 0;
	}
}

static const preload_env_match matchers[] = {
	[DROP_PRELOAD] = preload_env_is_our_preload,
	[DROP_HUGETLB] = preload_env_is_hugetlb_tunable,
	[DROP_OURS] = preload_env_is_our_tunable,
};

/*
 * The edited list, built one character at a time: a token ends at any
 * separator or at the end; kept tokens are joined with ':'.  *@has: some
 * token is dropped.  Returns a malloc()ed string.
 */
static char *ref_edit(const char *list, const char *seps, enum drop_kind k, const char *first,
		      const char *last, bool *has)
{
	size_t cap = 3 + (list ? strlen(list) : 0) + (first ? strlen(first) : 0) +
		     (last ? strlen(last) : 0);
	char *out = calloc(1, cap), *o = out;
	const char *tok = list;

	if (!out)
		abort();
	*has = false;
	if (first && *first)
		o += sprintf(o, "%s", first);
	for (const char *p = list; p; p++) {
		if (*p && !strchr(seps, *p))
			continue;
		if (p > tok) {
			size_t n = (size_t)(p - tok);

			if (ref_drop(k, tok, n)) {
				*has = true;
			} else {
				if (o > out)
					*o++ = ':';
				memcpy(o, tok, n);
				o += n;
			}
		}
		if (!*p)
			break;
		tok = p + 1;
	}
	if (last && *last) {
		if (o > out)
			*o++ = ':';
		strcpy(o, last);
	}
	return out;
}

static char *edit(const char *list, const char *seps, enum drop_kind k, const char *first,
		  const char *last)
{
	char *out = preload_env_list_edit(list, seps, matchers[k], first, last);

	if (!out)
		fail("preload_env_list_edit() failed", list);
	return out;
}

static size_t count_hugetlb(const char *list)
{
	size_t n = 0;

	for (const char *p = list; p && *p;) {
		size_t len = strcspn(p, ":");

		n += ref_drop(DROP_HUGETLB, p, len);
		p += len;
		if (*p)
			p++;
	}
	return n;
}

static void check(unsigned int mode, const char *list, const char *first, const char *last)
{
	enum drop_kind k = (mode & 3) == 3 ? DROP_HUGETLB : (enum drop_kind)(mode & 3);
	const char *seps = k == DROP_PRELOAD ? PRELOAD_ENV_LD_SEPS : PRELOAD_ENV_TUNABLE_SEPS;
	bool has;
	char *got, *want;

	if ((mode & 3) == 3) {
		/* Exactly run's GLIBC_TUNABLES edit with the preload. */
		first = NULL;
		last = PRELOAD_ENV_TUNABLE_OURS;
	}
	got = edit(list, seps, k, first, last);
	want = ref_edit(list, seps, k, first, last, &has);
	if (strcmp(got, want)) {
		fprintf(stderr, "got  \"%s\"\nwant \"%s\"\n", got, want);
		fail("edited list differs from the reference", list);
	}
	if (preload_env_list_has(list, seps, matchers[k]) != has)
		fail("list_has() differs from the reference", list);

	/* Ours is never there twice: editing again changes nothing. */
	if ((!first || !*first || (!strpbrk(first, seps) && ref_drop(k, first, strlen(first)))) &&
	    (!last || !*last || (!strpbrk(last, seps) && ref_drop(k, last, strlen(last))))) {
		char *again = edit(got, seps, k, first, last);

		if (strcmp(again, got))
			fail("editing twice differs from editing once", list);
		free(again);
	}
	if ((mode & 3) == 3 && count_hugetlb(got) != 1)
		fail("not exactly one glibc.malloc.hugetlb after run's edit", list);
	free(got);
	free(want);

	if (preload_env_debug(list) != (list && !strcmp(list, "1")))
		fail("THP_PRELOAD_DEBUG test", list);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *field[NFIELDS] = { NULL, NULL, NULL };
	unsigned int mode;
	size_t pos = 1;

	if (size == 0)
		return 0;
	mode = data[0];
	for (unsigned int f = 0; f < NFIELDS && pos <= size; f++) {
		const uint8_t *nul = pos < size ? memchr(data + pos, 0, size - pos) : NULL;
		size_t n = nul ? (size_t)(nul - (data + pos)) : size - pos;

		field[f] = malloc(n + 1);
		if (!field[f])
			abort();
		memcpy(field[f], data + pos, n);
		field[f][n] = 0;
		pos += n + 1;
	}
	/* An unset variable is NULL; FIRST and LAST only as the mode says. */
	check(mode, (mode & 0x10) ? NULL : field[0], (mode & 4) ? field[1] : NULL,
	      (mode & 8) ? field[2] : NULL);
	for (unsigned int f = 0; f < NFIELDS; f++)
		free(field[f]);
	return 0;
}
