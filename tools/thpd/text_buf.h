/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* thpd: a growing text buffer, for its answers (Prometheus text, the status JSON). */
#ifndef THPD_TEXT_BUF_H
#define THPD_TEXT_BUF_H

#include <stdbool.h>
#include <stddef.h>

/* Zero-initialised: empty.  Out of memory once, it stays so (oom). */
struct thpd_buf {
	char *s;
	size_t len, cap;
	bool oom;
};

void thpd_bprintf(struct thpd_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The text (malloc'd, @len its length; "" when nothing was written), or NULL on out of memory. */
char *thpd_bdone(struct thpd_buf *b, size_t *len);

#endif
