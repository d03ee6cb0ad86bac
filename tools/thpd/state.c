// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * thpd's process table: one entry per process seen, keyed by PID and told
 * apart from a reuse of the PID by its start time, matched against the
 * rules.  A pass refreshes it by a /proc walk (or trusts the proc
 * connector's exec and exit events); an exec event refreshes one entry.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <thp/thp.h>

#include "clock_ns.h" /* lib/: clock_ns(), now_ns() */
#include "container.h"
#include "log.h"
#include "thpd.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

void thpd_state_init(struct thpd_state *st)
{
	memset(st, 0, sizeof(*st));
	st->nhash = 1024;
	st->self = getpid();
	st->hash = calloc(st->nhash, sizeof(*st->hash));
	st->last_cpu_ns = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	st->last_wall_ns = now_ns();
	st->folio_source = -1;
	{
		/* The runtimes' records are under /; the tests point thpd at a fake tree. */
		const char *root = secure_getenv("THPD_TEST_CONTAINER_ROOT");
		int r = thpd_ctr_init(root && *root ? root : "/");

		if (r < 0)
			thpd_log(LOG_ERR, "container records under %s: %s", root ? root : "/",
				 strerror(-r));
	}
	{
		struct thp_probe_info pi = { .sz = sizeof(pi) };

		/* Probed once: a nohuge default cannot be seen from outside from 6.18 on. */
		if (thp_probe(&pi) != 0)
			memset(&pi, 0, sizeof(pi));
		st->nohuge_hidden = pi.thp_disable_except_advised;
		/* Anonymous sizes only: one with no "enabled" (8 KiB) is for shmem. */
		for (uint32_t i = 0; i < pi.nr_sizes && i < THP_PROBE_MAX_SIZES; i++)
			if (pi.sizes_source != THP_SIZES_PER_SIZE || pi.sizes[i].enabled != THP_MODE_UNKNOWN)
				st->sizes[st->nsizes++] = pi.sizes[i].size;
	}
}

static void proc_free(struct thpd_proc *p)
{
	thpd_ident_release(&p->id);
	if (p->pidfd >= 0)
		close(p->pidfd);
	free(p);
}

static struct thpd_proc **slot_of(struct thpd_state *st, pid_t pid)
{
	struct thpd_proc **pp = &st->hash[(size_t)pid % st->nhash];

	while (*pp && (*pp)->pid != pid)
		pp = &(*pp)->next;
	return pp;
}

void thpd_forget(struct thpd_state *st, pid_t pid)
{
	struct thpd_proc **pp = slot_of(st, pid), *p = *pp;

	if (!p)
		return;
	*pp = p->next;
	proc_free(p);
	st->nprocs--;
}

void thpd_state_free(struct thpd_state *st)
{
	for (size_t i = 0; i < st->nhash; i++) {
		while (st->hash[i]) {
			struct thpd_proc *p = st->hash[i];

			st->hash[i] = p->next;
			proc_free(p);
		}
	}
	free(st->hash);
	thpd_ctr_fini();
	thpd_config_free(&st->cfg);
	st->hash = NULL;
}

static int open_pidfd(pid_t pid)
{
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);

	/* libthp reads descriptor 0 as THP_SELF. */
	if (fd == 0) {
		int nfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);

		close(fd);
		fd = nfd;
	}
	return fd;
}

static void forget_proc(struct thpd_state *st, struct thpd_proc *p)
{
	thpd_forget(st, p->pid);
}

struct scan_arg {
	struct thpd_state *st;
};

static void visit(void *arg, pid_t pid)
{
	struct thpd_state *st = ((struct scan_arg *)arg)->st;
	struct thpd_proc **pp, *p;
	uint64_t start;
	char comm[32];
	int rule, r, pol;

	if (pid == st->self)
		return;
	pp = slot_of(st, pid);
	p = *pp;
	if (p && st->trust_cache && !p->stale) {
		/* The connector reports every exec and exit: a known PID is the
		 * same process with the same executable; only its cgroup may
		 * have changed. */
		if (p->kthread) {
			p->seen = true;
			return;
		}
		if ((st->cfg.uses_cgroup || st->cfg.uses_container) &&
		    thpd_ident_cgroup(pid, &p->id) < 0) {
			forget_proc(st, p);
			return;
		}
	} else {
		if (thpd_proc_stat(pid, comm, sizeof(comm), &start) < 0) {
			if (p)
				forget_proc(st, p);
			return;
		}
		if (p && p->starttime != start) {
			/* The PID was reused: nothing of the old process carries over. */
			forget_proc(st, p);
			p = NULL;
			pp = slot_of(st, pid);
		}
		if (!p) {
			p = calloc(1, sizeof(*p));
			if (!p)
				return;
			p->pid = pid;
			p->starttime = start;
			p->pidfd = -1;
			p->rule = -1;
			p->policy = -1;
			p->backoff = 1;
			*pp = p;
			st->nprocs++;
		}
		memcpy(p->comm, comm, sizeof(comm));
		p->stale = false;
		r = thpd_ident_read(pid, &st->cfg, &p->id);
		if (r < 0) {
			forget_proc(st, p);
			return;
		}
		/* Kernel threads and zombies: no executable, never matched. */
		p->kthread = r > 0;
	}
	p->seen = true;
	rule = p->kthread ? -1 : thpd_rules_match(&st->cfg, &p->id);
	pol = rule >= 0 ? thpd_proc_policy(&st->cfg.rules[rule], &p->id) : -1;
	if (rule >= 0 && p->pidfd < 0) {
		p->pidfd = open_pidfd(pid);
		if (p->pidfd < 0) {
			forget_proc(st, p);
			return;
		}
		if (st->verbose)
			thpd_log(LOG_DEBUG, "process %d (%s) matches rule %s", (int)pid, p->comm,
				 st->cfg.rules[rule].conf.name);
	} else if (rule < 0 && p->pidfd >= 0) {
		close(p->pidfd);
		p->pidfd = -1;
	}
	if (p->rule != rule || p->policy != pol) {
		p->rule = rule;
		p->policy = pol;
		p->inject_done = false;
		p->skipped = false;
		p->backoff = 1;
		p->next_try = 0;
		p->anon_at_query = 0;
		p->alignable = 0;
		p->anon = p->huge = 0;
		p->huge_at_query = 0;
		p->sizes_known = false;
		p->sizes_due = false;
		p->catching_up = false;
		p->warned = false;
		p->measure_gap = 1;
		p->measure_next = 0;
	}
}

void thpd_consider(struct thpd_state *st, pid_t pid)
{
	struct scan_arg arg = { st };
	struct thpd_proc *p = *slot_of(st, pid);

	if (p)
		p->stale = true; /* a new program or user: read everything again */
	/* Over the events' budget (a fork storm): the next pass's walk reads
	 * the stale entry, or the new PID if it still lives then. */
	if (thpd_scan_mode(st->scan) != THPD_EVENTS_HANDLE)
		return;
	visit(&arg, pid);
	p = *slot_of(st, pid);
	if (p && p->rule >= 0 && p->policy != THPD_RULE_IGNORE)
		st->early = st->early_by_event = true;
}

/* Walk /proc (or the entries the connector kept true); drop the processes not seen. */
void thpd_refresh(struct thpd_state *st)
{
	struct scan_arg arg = { st };

	for (size_t i = 0; i < st->nhash; i++)
		for (struct thpd_proc *p = st->hash[i]; p; p = p->next)
			p->seen = false;
	st->trust_cache = thpd_scan_has_connector(st->scan) && !st->events_lost;
	st->events_lost = false;
	thpd_scan_proc(visit, &arg);
	for (size_t i = 0; i < st->nhash; i++) {
		struct thpd_proc **pp = &st->hash[i];

		while (*pp) {
			struct thpd_proc *p = *pp;

			if (p->seen) {
				pp = &p->next;
				continue;
			}
			*pp = p->next;
			proc_free(p);
			st->nprocs--;
		}
	}
}

static int by_anon(const void *a, const void *b)
{
	const struct thpd_proc *x = *(const struct thpd_proc *const *)a;
	const struct thpd_proc *y = *(const struct thpd_proc *const *)b;

	if (x->anon != y->anon)
		return x->anon < y->anon ? 1 : -1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

size_t thpd_matched_by_anon(const struct thpd_state *st, const struct thpd_proc ***out)
{
	const struct thpd_proc **v = malloc((st->nprocs + 1) * sizeof(*v));
	size_t n = 0;

	*out = v;
	if (!v)
		return 0;
	for (size_t i = 0; i < st->nhash; i++)
		for (const struct thpd_proc *p = st->hash[i]; p; p = p->next)
			if (n < st->nprocs && p->rule >= 0)
				v[n++] = p;
	if (n)
		qsort(v, n, sizeof(*v), by_anon);
	return n;
}

void thpd_note_reload(struct thpd_state *st, bool ok)
{
	struct timespec ts;

	st->reload_ok = ok;
	if (ok && clock_gettime(CLOCK_REALTIME, &ts) == 0)
		st->reload_ok_time_s = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
