/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* thpd: the service manager's watchdog; whether a stop waits, between two processes of a pass. */
#ifndef THPD_WATCHDOG_H
#define THPD_WATCHDOG_H

#include <stdbool.h>
#include <stdint.h>

/* The watchdog interval the service manager asks for: ping every half of it (ns), 0: none. */
uint64_t thpd_watchdog_start(void);
/* Tell the service manager the daemon is alive, when a ping is due. */
void thpd_watchdog_ping(void);
/* When the next ping is due (CLOCK_MONOTONIC ns), UINT64_MAX without a watchdog. */
uint64_t thpd_watchdog_deadline(void);
/* Between two processes of a pass: pings the watchdog when due; true when
 * SIGTERM or SIGINT waits (end the pass). */
bool thpd_tick(void);

#endif
