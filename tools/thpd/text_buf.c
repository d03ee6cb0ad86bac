// SPDX-License-Identifier: LGPL-2.1-or-later
/* thpd: a growing text buffer, for its answers (Prometheus text, the status JSON). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text_buf.h"

void thpd_bprintf(struct thpd_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (b->oom)
		return;
	for (;;) {
		size_t room = b->cap - b->len;

		va_start(ap, fmt);
		n = vsnprintf(b->s ? b->s + b->len : NULL, room, fmt, ap);
		va_end(ap);
		if (n < 0) {
			b->oom = true;
			return;
		}
		if ((size_t)n < room) {
			b->len += (size_t)n;
			return;
		}
		{
			size_t ncap = (b->cap + (size_t)n + 1) * 2;
			char *ns = realloc(b->s, ncap);

			if (!ns) {
				b->oom = true;
				return;
			}
			b->s = ns;
			b->cap = ncap;
		}
	}
}

char *thpd_bdone(struct thpd_buf *b, size_t *len)
{
	if (b->oom || !b->s) {
		free(b->s);
		if (!b->oom) {
			b->s = strdup("");
			*len = 0;
			return b->s;
		}
		return NULL;
	}
	*len = b->len;
	return b->s;
}
