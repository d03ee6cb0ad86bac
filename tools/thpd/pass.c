// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * thpd: one pass: refresh the process table (state.c), apply each rule's
 * policy, measure (measure.c), and spend the CPU budget on the collapses
 * with the highest expected gain; then the totals by rule.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <syslog.h>

#include <thp/thp.h>

#include "clock_ns.h" /* lib/: clock_ns(), now_ns() */
#include "log.h"
#include "watchdog.h"
#include "thpd.h"

#define FAILURES_CAP 32
#define MAX_BACKOFF 64
#define CATCHUP_GAP_NS (50ULL * 1000000ULL)
#define EVENTS_BURST_S 5.0

static double spend_threshold(const struct thpd_state *st);

/*
 * An exec between the setuid check and the end of a collapse: the check
 * read one program, the later MADV_COLLAPSE calls reach the next, since
 * process_madvise() follows the pidfd's process into its new mm and the
 * kernel offers no call bound to one mm.  So the window is closed as far
 * as it can be from outside: checked before the collapse and detected
 * after it.  An open /proc/PID/mem holds the mm of its open, and a read
 * through it finds nothing once an exec has replaced that mm; the
 * executable's inode and auxv's AT_RANDOM and AT_ENTRY catch the exec
 * whose old mm lives on in another process (clone(CLONE_VM)).
 */
struct exec_ident {
	dev_t dev;
	ino_t ino;
	uint64_t at_random, at_entry;
};

static void exec_ident(pid_t pid, struct exec_ident *e)
{
	char path[64];
	uint64_t aux[512];
	struct stat sb;
	ssize_t n;

	memset(e, 0, sizeof(*e));
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	if (stat(path, &sb) == 0) {
		e->dev = sb.st_dev;
		e->ino = sb.st_ino;
	}
	n = thpd_read_auxv(pid, aux, sizeof(aux) / sizeof(aux[0]));
	thpd_auxv_value(aux, n, AT_RANDOM, &e->at_random);
	thpd_auxv_value(aux, n, AT_ENTRY, &e->at_entry);
}

static int mm_anchor(pid_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	return open(path, O_RDONLY | O_CLOEXEC);
}

/* @p exec'd since @anchor was opened and @before read; an exit is no exec. */
static bool exec_since(const struct thpd_proc *p, int anchor, const struct exec_ident *before)
{
	struct pollfd pfd = { .fd = p->pidfd, .events = POLLIN };
	struct exec_ident now;
	char c;

	/* Readable pidfd: the process has exited, and its mm with it. */
	if (poll(&pfd, 1, 0) == 1)
		return false;
	/* A live mm reads as EIO at address 0 (nothing mapped), a replaced one as EOF. */
	if (anchor >= 0 && pread(anchor, &c, 1, 0) == 0)
		return true;
	exec_ident(p->pid, &now);
	if (poll(&pfd, 1, 0) == 1)
		return false;
	return memcmp(&now, before, sizeof(now)) != 0;
}

void thpd_state_set_config(struct thpd_state *st, struct thpd_config *c)
{
	/* The totals, and only they, carry over to the rule of the same name. */
	for (size_t i = 0; i < c->nrules; i++)
		for (size_t j = 0; j < st->cfg.nrules; j++)
			if (!strcmp(c->rules[i].conf.name, st->cfg.rules[j].conf.name))
				c->rules[i].totals = st->cfg.rules[j].totals;
	/* Every process is matched again under the new rules; what was
	 * injected stays done, so a process is never injected twice for the
	 * same rule name. */
	for (size_t i = 0; i < st->nhash; i++) {
		for (struct thpd_proc *p = st->hash[i]; p; p = p->next) {
			const char *old = p->rule >= 0 ? st->cfg.rules[p->rule].conf.name : NULL;
			int keep = -1;

			for (size_t k = 0; old && k < c->nrules; k++)
				if (!strcmp(c->rules[k].conf.name, old))
					keep = (int)k;
			p->rule = keep;
			/* The new rules may match on what was not read (user). */
			p->stale = true;
		}
	}
	thpd_config_free(&st->cfg);
	st->cfg = *c;
	memset(c, 0, sizeof(*c));
	/* A reload's new rules act at the next pass, not after a debt is paid. */
	if (st->passes && st->bucket_s < spend_threshold(st))
		st->bucket_s = spend_threshold(st);
	thpd_seccomp_self_check(st);
}

static int by_gain(const void *a, const void *b)
{
	const struct thpd_proc *x = *(struct thpd_proc *const *)a, *y = *(struct thpd_proc *const *)b;
	uint64_t gx = x->alignable > x->huge ? x->alignable - x->huge : 0;
	uint64_t gy = y->alignable > y->huge ? y->alignable - y->huge : 0;

	return gx < gy ? 1 : gx > gy ? -1
				     : 0;
}

/* One thp_collapse() call of at most @max_ns collapsing and @max_bytes:
 * the extents it left over budget (0 when done or failed), and in
 * @collapsed the extents it collapsed. */
static uint64_t collapse_call(struct thpd_state *st, struct thpd_proc *p, struct thpd_rule *r,
			      uint64_t max_ns, uint64_t max_bytes, uint64_t *collapsed)
{
	struct thp_report fail[FAILURES_CAP];
	uint64_t c0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	uint64_t reported = 0;
	int ret;

	/* thp_collapse() counts its time budget from its start, which reads
	 * smaps and pagemap first: on a large process that alone can take the
	 * whole max_ms_per_pass.  The budget is for collapsing, so the reading
	 * time of the last pass that collapsed nothing is added to it. */
	THP_OPTS(thp_collapse_opts, o, .pidfd = p->pidfd, .budget_bytes = max_bytes,
		 .failures = fail, .failures_cap = FAILURES_CAP);

	*collapsed = 0;
	o.budget_ns = p->overhead_ns + max_ns;
	ret = thp_collapse(&o);
	c0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID) - c0;
	st->bucket_s -= (double)c0 / 1e9;
	st->pass_collapse_ns += c0;
	if (ret < 0) {
		if (ret != -ESRCH) {
			r->totals.failures[thpd_errno_slot(-ret)]++;
			thpd_log(LOG_WARNING, "process %d (%s): collapse: %s: %s", (int)p->pid, p->comm,
				 thp_strerror(ret), thp_strerror_detail());
		}
		if (ret == -EPERM || ret == -EOPNOTSUPP)
			p->skipped = true;
		return 0;
	}
	if (o.thp_disabled) {
		p->skipped = true;
		return 0;
	}
	if (st->verbose)
		thpd_log(LOG_DEBUG, "process %d (%s): %llu extents collapsed, %llu failed, %llu shared, "
				    "%llu over budget, %.1f ms, %.1f ms CPU",
			 (int)p->pid, p->comm,
			 (unsigned long long)o.extents_collapsed, (unsigned long long)o.extents_failed,
			 (unsigned long long)o.extents_shared, (unsigned long long)o.extents_over_budget, (double)o.elapsed_ns / 1e6,
			 (double)c0 / 1e6);
	if (!o.extents_collapsed && o.extents_over_budget)
		p->overhead_ns = o.elapsed_ns < 1000000000ULL ? o.elapsed_ns : 1000000000ULL;
	r->totals.collapses += o.extents_collapsed;
	r->totals.shared_skips += o.extents_shared;
	p->collapses += o.extents_collapsed;
	for (uint64_t i = 0; i < o.failures_needed && i < FAILURES_CAP; i++, reported++)
		r->totals.failures[thpd_errno_slot(fail[i].error)]++;
	if (o.extents_failed > reported)
		r->totals.failures[THPD_NERRNO - 1] += o.extents_failed - reported;
	*collapsed = o.extents_collapsed;
	p->huge = o.anon_huge_after;
	if (o.extents_collapsed) {
		st->catchup = true;
		p->backoff = 1;
	} else if (!o.extents_over_budget) {
		/* Nothing left that the kernel would collapse: wait before the next try. */
		p->next_try = st->passes + p->backoff;
		if (p->backoff < MAX_BACKOFF)
			p->backoff *= 2;
	}
	if (o.extents_over_budget)
		st->catchup = true;
	p->catching_up = o.extents_over_budget != 0;
	return o.extents_over_budget;
}

/* A rule's max_ms_per_pass is spent in calls of at most this much: SIGTERM
 * and the watchdog are looked at between two. */
#define COLLAPSE_SLICE_NS (500ULL * 1000000ULL)

static void collapse(struct thpd_state *st, struct thpd_proc *p, struct thpd_rule *r)
{
	uint64_t spent_ns = 0, done = 0, over, n;

	for (;;) {
		/* No more than the CPU bucket holds (at least 1 ms): a deep debt
		 * would hold back the next new work for seconds. */
		uint64_t left_ns = st->bucket_s > 0.001 ? (uint64_t)(st->bucket_s * 1e9) : 1000000;
		uint64_t want = r->conf.max_ns - spent_ns < left_ns ? r->conf.max_ns - spent_ns : left_ns;
		uint64_t slice = want < COLLAPSE_SLICE_NS ? want : COLLAPSE_SLICE_NS;

		over = collapse_call(st, p, r, slice, r->conf.max_bytes - done, &n);
		spent_ns += slice;
		done += n * THPD_EXTENT;
		if (!over || spent_ns >= r->conf.max_ns || done >= r->conf.max_bytes || st->bucket_s <= 0 ||
		    thpd_tick())
			break;
	}
	r->last.over_budget += over * THPD_EXTENT;
	st->work_left += over * THPD_EXTENT;
}

/* The largest bucket: the catch-up share of one interval, or of a second
 * when the interval is shorter (a pass over a large process reads for
 * longer than a short interval's share). */
static double bucket_max(const struct thpd_state *st)
{
	double s = (double)st->cfg.interval_ms / 1000.0;

	return st->cfg.catchup_budget * (s > 1.0 ? s : 1.0);
}

/* Collapses start only with half the bucket earned: a pass's own reading
 * costs CPU too, and a bucket kept near zero would pay for that alone. */
static double spend_threshold(const struct thpd_state *st)
{
	return bucket_max(st) / 2;
}

uint64_t thpd_next_pass_ns(const struct thpd_state *st)
{
	uint64_t interval = st->cfg.interval_ms * 1000000ULL, soon = CATCHUP_GAP_NS;

	/* Memory left over budget: the next pass comes as soon as the CPU
	 * budget has earned time again, not an interval later, so that the
	 * per-process budgets bound each pass, not the catch-up's speed. */
	if (!st->work_left)
		return interval;
	if (st->bucket_s < spend_threshold(st))
		soon += (uint64_t)((spend_threshold(st) - st->bucket_s) / st->cfg.catchup_budget * 1e9);
	return soon < interval ? soon : interval;
}

void thpd_pass(struct thpd_state *st)
{
	struct thpd_proc **cand = NULL;
	size_t ncand = 0, cap = 0;
	uint64_t cpu, wall, t0 = now_ns();
	double rate, maxb;
	bool stop = false;
	bool by_event = st->early_by_event;

	/* The budget: every CPU second the daemon used counts against it,
	 * earned at the steady rate, or the catch-up rate while the last pass
	 * still found memory to collapse. */
	cpu = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	wall = now_ns();
	rate = st->catchup ? st->cfg.catchup_budget : st->cfg.cpu_budget;
	st->bucket_s += rate * (double)(wall - st->last_wall_ns) / 1e9;
	st->bucket_s -= (double)(cpu - st->last_cpu_ns) / 1e9;
	maxb = bucket_max(st);
	st->sizes_bucket_s += st->cfg.cpu_budget * (double)(wall - st->last_wall_ns) / 1e9;
	if (st->passes == 0 || st->sizes_bucket_s > maxb)
		st->sizes_bucket_s = maxb;
	if (st->passes == 0)
		st->bucket_s = maxb;
	if (st->bucket_s > maxb)
		st->bucket_s = maxb;
	if (st->bucket_s < -1.0)
		st->bucket_s = -1.0;
	/* Exec and exit events, and the early passes they ask for, may use
	 * half the steady budget, in bursts of EVENTS_BURST_S of it (a batch
	 * of services starting): beyond it they are matched by the passes. */
	st->early_by_event = false;
	thpd_scan_budget(st->scan, st->cfg.cpu_budget / 2, st->cfg.cpu_budget / 2 * EVENTS_BURST_S);
	st->catchup = false;
	st->pass_collapse_ns = 0;
	st->pass_sizes_ns = 0;
	st->work_left = 0;

	thpd_refresh(st);
	for (size_t i = 0; i < st->cfg.nrules; i++) {
		struct thpd_rule *r = &st->cfg.rules[i];

		memset(&r->last, 0, sizeof(r->last));
	}
	for (size_t i = 0; i < st->nhash && !stop; i++) {
		for (struct thpd_proc *p = st->hash[i]; p; p = p->next) {
			struct thpd_rule *r;

			if (p->rule < 0)
				continue;
			/* SIGTERM ends a pass between two processes: the rest waits for no one. */
			if (thpd_tick()) {
				stop = true;
				break;
			}
			r = &st->cfg.rules[p->rule];
			/* The process's policy: the rule's, or its container's annotation. */
			if (p->policy == THPD_RULE_IGNORE)
				continue;
			if (!p->inject_done && !p->skipped &&
			    (p->policy == THPD_RULE_HUGE || (r->conf.inject && p->policy != THPD_RULE_IGNORE))) {
				thpd_check_skip(st, p, r);
				if (!p->skipped && r->conf.inject && p->policy != THPD_RULE_HUGE)
					thpd_inject(p, r);
				p->inject_done = true;
			}
			thpd_measure(st, p, p->policy == THPD_RULE_HUGE && !p->skipped);
			if (!(p->policy == THPD_RULE_HUGE && !p->skipped && p->alignable >= p->huge + THPD_EXTENT))
				p->catching_up = false; /* nothing left: its sizes may be read again */
			if (p->policy == THPD_RULE_HUGE && !p->skipped && p->next_try <= st->passes &&
			    p->alignable >= p->huge + THPD_EXTENT) {
				if (ncand == cap) {
					size_t ncap = cap ? cap * 2 : 64;
					struct thpd_proc **n = realloc(cand, ncap * sizeof(*n));

					if (!n)
						continue;
					cand = n;
					cap = ncap;
				}
				cand[ncand++] = p;
			}
		}
	}
	if (ncand) /* cand is NULL when nothing matched: qsort() must not see it */
		qsort(cand, ncand, sizeof(*cand), by_gain);
	if (st->verbose && ncand)
		thpd_log(LOG_DEBUG, "pass %llu: %zu processes to collapse, budget %.1f ms CPU",
			 (unsigned long long)st->passes, ncand, st->bucket_s * 1e3);
	for (size_t i = 0; i < ncand && !stop; i++) {
		struct thpd_proc *p = cand[i];
		struct thpd_rule *r = &st->cfg.rules[p->rule];

		if (thpd_tick()) {
			stop = true;
			break;
		}

		if (st->bucket_s <= 0 || (i == 0 && st->bucket_s < spend_threshold(st))) {
			r->last.over_budget += p->alignable - p->huge;
			st->work_left += p->alignable - p->huge;
			st->catchup = true;
			continue;
		}
		/* The check at first sight is not enough: an exec keeps the PID
		 * and its start time, so a matched process that has exec'd a
		 * setuid program since looks the same to the /proc walk. */
		if (!r->conf.setuid) {
			struct exec_ident before;
			int anchor = mm_anchor(p->pid), secure;

			exec_ident(p->pid, &before);
			secure = thpd_is_secure_exec(p->pid);
			/* Gone since the walk (a fork child that exited): nothing to say. */
			if (secure)
				p->skipped = true;
			if (secure > 0)
				thpd_log(LOG_INFO, "process %d (%s): a setuid/setgid program since an "
						   "exec, left alone (rule %s)",
					 (int)p->pid, p->comm, r->conf.name);
			if (!secure && exec_since(p, anchor, &before)) {
				/* During the check: what it read may be of two programs. */
				p->stale = true;
				secure = 1;
			}
			if (!secure) {
				collapse(st, p, r);
				if (exec_since(p, anchor, &before)) {
					st->exec_races++;
					p->stale = true;
					thpd_log(LOG_WARNING,
						 "process %d (%s): exec'd during a collapse (rule %s): its "
						 "last MADV_COLLAPSE calls may have reached the new program, "
						 "which is checked again before the next",
						 (int)p->pid, p->comm, r->conf.name);
				}
			}
			if (anchor >= 0)
				close(anchor);
			continue;
		}
		collapse(st, p, r);
	}
	free(cand);
	if (stop)
		thpd_log(LOG_INFO, "pass %llu ended early: the daemon is asked to stop",
			 (unsigned long long)st->passes);
	st->nmatched = 0;
	for (size_t i = 0; i < st->nhash; i++) {
		for (struct thpd_proc *p = st->hash[i]; p; p = p->next) {
			struct thpd_rule *r;

			if (p->rule < 0)
				continue;
			r = &st->cfg.rules[p->rule];
			st->nmatched++;
			r->last.processes++;
			r->last.anon += p->anon;
			r->last.huge += p->huge;
			r->last.alignable += p->alignable;
			if (p->sizes_known) {
				r->last.folio_procs++;
				r->last.folio_base += p->folio_base;
				for (uint32_t k = 0; k < st->nsizes; k++)
					r->last.folio_bytes[k] += p->folio_bytes[k];
			}
			/* By the process's policy: an annotation's never under a huge rule counts. */
			if (p->policy == THPD_RULE_NEVER || p->policy == THPD_RULE_NOHUGE)
				r->last.noncompliant += p->huge;
			if ((p->policy == THPD_RULE_NEVER || p->policy == THPD_RULE_NOHUGE) && p->huge &&
			    !p->warned) {
				p->warned = true;
				thpd_log(LOG_WARNING,
					 "process %d (%s): rule %s (policy %s%s) has %llu kB in huge pages",
					 (int)p->pid, p->comm, r->conf.name, thpd_rule_policy_name(p->policy),
					 r->conf.inject ? "" : ", not enforced",
					 (unsigned long long)(p->huge >> 10));
			}
		}
	}
	st->last_cpu_ns = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	st->last_wall_ns = now_ns();
	/* The rest of this pass's CPU counts against the budget too. */
	st->bucket_s -= (double)(st->last_cpu_ns - cpu - st->pass_collapse_ns - st->pass_sizes_ns) / 1e9;
	if (by_event)
		thpd_scan_charge(st->scan, st->last_cpu_ns - cpu - st->pass_collapse_ns);
	st->last_pass_s = (double)(st->last_wall_ns - t0) / 1e9;
	st->passes++;
}
