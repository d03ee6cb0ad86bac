// SPDX-License-Identifier: LGPL-2.1-or-later
/* thpd's log: one line per message on stderr, its syslog priority first for journald. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"

static bool verbose;

void thpd_log_verbose(bool on)
{
	verbose = on;
}

void thpd_log(int prio, const char *fmt, ...)
{
	char msg[1024], buf[1024 + 8];
	va_list ap;
	int n;

	if (prio == LOG_DEBUG && !verbose)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	n = snprintf(buf, sizeof(buf), "<%d>", prio);
	/*
	 * Messages carry what other users chose (process names, paths): a
	 * newline there would start a record of its own, with a priority of
	 * its choosing, and a terminal escape would reach whoever reads the
	 * log.  Control bytes are written as \xHH, whatever the message.
	 */
	for (const unsigned char *s = (const unsigned char *)msg; *s && (size_t)n < sizeof(buf) - 5; s++) {
		if (*s < 0x20 || *s == 0x7f)
			n += snprintf(buf + n, 5, "\\x%02x", *s);
		else
			buf[n++] = (char)*s;
	}
	buf[n++] = '\n';
	/* One write per line: lines from a restarted daemon never interleave. */
	if (write(STDERR_FILENO, buf, (size_t)n) < 0)
		return;
}
