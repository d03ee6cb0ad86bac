/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* thpctl: the collapse pass shared by "thpctl collapse" and the run agent. */
#ifndef THPCTL_COLLAPSE_H
#define THPCTL_COLLAPSE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <thp/thp.h>

/* Refused extents a pass reports in detail; the rest are counted. */
#define COLLAPSE_FAILURES_CAP 16

/* Settings of one pass (library options the command line sets). */
struct collapse_settings {
	uint64_t interval_ns;    /* between passes (watch, agent) */
	uint64_t budget_bytes;   /* per pass, 0: no limit */
	uint64_t budget_ns;      /* per pass, 0: no limit */
	uint32_t min_present;    /* 0: the kernel's max_ptes_none */
	uint32_t max_shared;     /* 0: the kernel's max_ptes_shared */
	uint32_t flags;          /* THP_COLLAPSE_F_* */
};

/* Defaults: one pass a second, each starting collapses for at most 250 ms. */
#define COLLAPSE_DEFAULT_INTERVAL_NS 1000000000ULL
#define COLLAPSE_DEFAULT_BUDGET_NS 250000000ULL

/* One pass over @pidfd with @s; the failures land in @fail (COLLAPSE_FAILURES_CAP). */
int collapse_once(int pidfd, const struct collapse_settings *s, struct thp_collapse_opts *o,
		  struct thp_report *fail);

/*
 * Seconds with an optional fraction ("2", "0.25"), at most a day, into
 * nanoseconds.  0 or -1 with @why set.
 */
int collapse_parse_seconds(const char *s, uint64_t *ns, const char **why);

/* The text report of one pass: one summary line, then a line per refused extent. */
void collapse_print_text(FILE *f, pid_t pid, const struct thp_collapse_opts *o,
			 const struct thp_report *fail);

/* Sleep @ns, or less when a signal arrives. */
void collapse_sleep(uint64_t ns);

/*
 * "thpctl run --policy huge" with the agent (agent.c): start @cmd as a child,
 * run a collapse pass over it and all its descendants every interval,
 * forward signals, and return its exit status once the whole tree is gone.
 */
int thpctl_agent_run(char **cmd, const struct collapse_settings *s, bool verbose);

/* Can this thpctl collapse its children's memory?  If not, why not. */
bool thpctl_agent_possible(const char **why);

#endif
