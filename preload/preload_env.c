// SPDX-License-Identifier: LGPL-2.1-or-later
/* The LD_PRELOAD / GLIBC_TUNABLES lists of `thpctl run` and the preload. */
#include "preload_env.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

bool preload_env_is_our_preload(const char *entry, size_t len)
{
	size_t n = sizeof(PRELOAD_ENV_SONAME) - 1;

	return len >= n && !memcmp(entry + len - n, PRELOAD_ENV_SONAME, n) &&
	       (len == n || entry[len - n - 1] == '/');
}

bool preload_env_is_hugetlb_tunable(const char *entry, size_t len)
{
	size_t n = sizeof(PRELOAD_ENV_TUNABLE) - 1;

	return len > n && !memcmp(entry, PRELOAD_ENV_TUNABLE, n) && entry[n] == '=';
}

bool preload_env_is_our_tunable(const char *entry, size_t len)
{
	return len == sizeof(PRELOAD_ENV_TUNABLE_OURS) - 1 &&
	       !memcmp(entry, PRELOAD_ENV_TUNABLE_OURS, len);
}

bool preload_env_list_has(const char *list, const char *seps, preload_env_match match)
{
	for (const char *p = list; p && *p;) {
		size_t n = strcspn(p, seps);

		if (n && match(p, n))
			return true;
		p += n;
		if (*p)
			p++;
	}
	return false;
}

/* Append @n bytes of @s to @out at *@len, after a ':' unless it is the first. */
static void append(char *out, size_t *len, const char *s, size_t n)
{
	if (*len)
		out[(*len)++] = ':';
	memcpy(out + *len, s, n);
	*len += n;
}

char *preload_env_list_edit(const char *list, const char *seps, preload_env_match drop,
			    const char *first, const char *last)
{
	/* Every kept entry brings at most one separator; first and last one each. */
	size_t cap = (list ? strlen(list) : 0) + (first ? strlen(first) : 0) +
		     (last ? strlen(last) : 0) + 3;
	char *out = malloc(cap);
	size_t len = 0;

	if (!out) {
		errno = ENOMEM;
		return NULL;
	}
	if (first && *first)
		append(out, &len, first, strlen(first));
	for (const char *p = list; p && *p;) {
		size_t n = strcspn(p, seps);

		if (n && !drop(p, n))
			append(out, &len, p, n);
		p += n;
		if (*p)
			p++;
	}
	if (last && *last)
		append(out, &len, last, strlen(last));
	out[len] = 0;
	return out;
}

bool preload_env_debug(const char *value)
{
	return value && !strcmp(value, "1");
}
