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
	char buf[1024];
	va_list ap;
	int n;

	if (prio == LOG_DEBUG && !verbose)
		return;
	n = snprintf(buf, sizeof(buf), "<%d>", prio);
	va_start(ap, fmt);
	vsnprintf(buf + n, sizeof(buf) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	n = (int)strlen(buf);
	buf[n++] = '\n';
	/* One write per line: lines from a restarted daemon never interleave. */
	if (write(STDERR_FILENO, buf, (size_t)n) < 0)
		return;
}
