// SPDX-License-Identifier: LGPL-2.1-or-later
/* thpd: the service manager's watchdog; whether a stop waits, between two processes of a pass. */
#include <signal.h>

#include <systemd/sd-daemon.h>

#include "clock_ns.h" /* lib/: now_ns() */
#include "watchdog.h"

/* Half the service manager's watchdog interval (0: none), and the last ping. */
static uint64_t watchdog_ns, watchdog_last;

uint64_t thpd_watchdog_start(void)
{
	uint64_t usec;

	/* Pinged at half the interval, from the loop and between the processes of a pass. */
	if (sd_watchdog_enabled(0, &usec) > 0 && usec >= 2) {
		watchdog_ns = usec * 1000 / 2;
		watchdog_last = now_ns();
	}
	return watchdog_ns;
}

void thpd_watchdog_ping(void)
{
	uint64_t now;

	if (!watchdog_ns)
		return;
	now = now_ns();
	if (now - watchdog_last >= watchdog_ns) {
		sd_notify(0, "WATCHDOG=1");
		watchdog_last = now;
	}
}

uint64_t thpd_watchdog_deadline(void)
{
	return watchdog_ns ? watchdog_last + watchdog_ns : UINT64_MAX;
}

bool thpd_tick(void)
{
	sigset_t set;

	thpd_watchdog_ping();
	/* run() blocks these for its signalfd: pending, they wait for the loop. */
	if (sigpending(&set) != 0)
		return false;
	return sigismember(&set, SIGTERM) == 1 || sigismember(&set, SIGINT) == 1;
}
