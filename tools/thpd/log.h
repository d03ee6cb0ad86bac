/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* thpd's log: one line per message on stderr, its syslog priority first for journald. */
#ifndef THPD_LOG_H
#define THPD_LOG_H

#include <stdbool.h>
#include <syslog.h> /* LOG_ERR .. LOG_DEBUG */

/* --verbose: LOG_DEBUG lines are written too. */
void thpd_log_verbose(bool on);
void thpd_log(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
