// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * thpd: one pass: refresh the process table (state.c), apply each rule's
 * policy, measure (measure.c), and spend the CPU budget on the collapses
 * with the highest expected gain; then the totals by rule.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <syslog.h>

#include <thp/thp.h>

#include "thpd.h"

#define FAILURES_CAP 32
#define MAX_BACKOFF 64
#define CATCHUP_GAP_NS (50ULL * 1000000ULL)

const int thpd_errnos[THPD_NERRNO - 1] = { EAGAIN, EBUSY, ENOMEM, EINVAL, EPERM };

const char *thpd_errno_label(int slot)
{
	static const char *const names[THPD_NERRNO] = { "EAGAIN", "EBUSY", "ENOMEM", "EINVAL",
							"EPERM", "other" };

	return slot >= 0 && slot < THPD_NERRNO ? names[slot] : "other";
}

int thpd_errno_slot(int err)
{
	for (int i = 0; i < THPD_NERRNO - 1; i++)
		if (thpd_errnos[i] == err)
			return i;
	return THPD_NERRNO - 1;
}

uint64_t thpd_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

uint64_t thpd_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

uint64_t thpd_rss_bytes(void)
{
	char buf[256];
	int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	ssize_t n;
	unsigned long size, rss;

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	if (sscanf(buf, "%lu %lu", &size, &rss) != 2)
		return 0;
	return (uint64_t)rss * (uint64_t)sysconf(_SC_PAGESIZE);
}

static double spend_threshold(const struct thpd_state *st);

void thpd_state_set_config(struct thpd_state *st, struct thpd_config *c)
{
	for (size_t i = 0; i < c->nrules; i++)
		for (size_t j = 0; j < st->cfg.nrules; j++)
			if (!strcmp(c->rules[i].name, st->cfg.rules[j].name))
				c->rules[i].stats = st->cfg.rules[j].stats;
	/* Every process is matched again under the new rules; what was
	 * injected stays done, so a process is never injected twice for the
	 * same rule name. */
	for (size_t i = 0; i < st->nhash; i++) {
		for (struct thpd_proc *p = st->hash[i]; p; p = p->next) {
			const char *old = p->rule >= 0 ? st->cfg.rules[p->rule].name : NULL;
			int keep = -1;

			for (size_t k = 0; old && k < c->nrules; k++)
				if (!strcmp(c->rules[k].name, old))
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

static void collapse(struct thpd_state *st, struct thpd_proc *p, struct thpd_rule *r)
{
	struct thp_report fail[FAILURES_CAP];
	uint64_t c0 = thpd_cpu_ns();
	uint64_t reported = 0;
	int ret;

	/* thp_collapse() counts its time budget from its start, which reads
	 * smaps and pagemap first: on a large process that alone can take the
	 * whole max_ms_per_pass.  The budget is for collapsing, so the reading
	 * time of the last pass that collapsed nothing is added to it.  The
	 * collapsing itself gets no more than the CPU bucket holds (at least
	 * 1 ms): a deep debt would hold back the next new work for seconds. */
	THP_OPTS(thp_collapse_opts, o, .pidfd = p->pidfd, .budget_bytes = r->max_bytes,
		 .failures = fail, .failures_cap = FAILURES_CAP);
	uint64_t left_ns = st->bucket_s > 0.001 ? (uint64_t)(st->bucket_s * 1e9) : 1000000;

	o.budget_ns = p->overhead_ns + (r->max_ns < left_ns ? r->max_ns : left_ns);
	ret = thp_collapse(&o);
	c0 = thpd_cpu_ns() - c0;
	st->bucket_s -= (double)c0 / 1e9;
	st->pass_collapse_ns += c0;
	if (ret < 0) {
		if (ret != -ESRCH) {
			r->stats.failures[thpd_errno_slot(-ret)]++;
			thpd_log(LOG_WARNING, "process %d (%s): collapse: %s: %s", (int)p->pid, p->comm,
				 thp_strerror(ret), thp_strerror_detail());
		}
		if (ret == -EPERM || ret == -EOPNOTSUPP)
			p->skipped = true;
		return;
	}
	if (o.thp_disabled) {
		p->skipped = true;
		return;
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
	r->stats.collapses += o.extents_collapsed;
	r->stats.shared_skips += o.extents_shared;
	p->collapses += o.extents_collapsed;
	for (uint64_t i = 0; i < o.failures_needed && i < FAILURES_CAP; i++, reported++)
		r->stats.failures[thpd_errno_slot(fail[i].error)]++;
	if (o.extents_failed > reported)
		r->stats.failures[THPD_NERRNO - 1] += o.extents_failed - reported;
	r->over_budget += o.extents_over_budget * THPD_EXTENT;
	st->work_left += o.extents_over_budget * THPD_EXTENT;
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
	uint64_t cpu, wall, t0 = thpd_mono_ns();
	double rate, maxb;

	/* The budget: every CPU second the daemon used counts against it,
	 * earned at the steady rate, or the catch-up rate while the last pass
	 * still found memory to collapse. */
	cpu = thpd_cpu_ns();
	wall = thpd_mono_ns();
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
	st->catchup = false;
	st->pass_collapse_ns = 0;
	st->pass_sizes_ns = 0;
	st->work_left = 0;

	thpd_refresh(st);
	for (size_t i = 0; i < st->cfg.nrules; i++) {
		struct thpd_rule *r = &st->cfg.rules[i];

		r->processes = r->anon = r->huge = r->alignable = r->over_budget = 0;
		r->folio_procs = r->folio_base = 0;
		memset(r->folio_bytes, 0, sizeof(r->folio_bytes));
	}
	for (size_t i = 0; i < st->nhash; i++) {
		for (struct thpd_proc *p = st->hash[i]; p; p = p->next) {
			struct thpd_rule *r;

			if (p->rule < 0)
				continue;
			r = &st->cfg.rules[p->rule];
			if (r->policy == THPD_IGNORE)
				continue;
			if (!p->inject_done && !p->skipped && (r->policy == THPD_HUGE || r->inject)) {
				thpd_check_skip(st, p, r);
				if (!p->skipped && r->inject)
					thpd_inject(p, r);
				p->inject_done = true;
			}
			thpd_measure(st, p, r->policy == THPD_HUGE && !p->skipped);
			if (!(r->policy == THPD_HUGE && !p->skipped && p->alignable >= p->huge + THPD_EXTENT))
				p->catching_up = false; /* nothing left: its sizes may be read again */
			if (r->policy == THPD_HUGE && !p->skipped && p->next_try <= st->passes &&
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
	for (size_t i = 0; i < ncand; i++) {
		struct thpd_proc *p = cand[i];
		struct thpd_rule *r = &st->cfg.rules[p->rule];

		if (st->bucket_s <= 0 || (i == 0 && st->bucket_s < spend_threshold(st))) {
			r->over_budget += p->alignable - p->huge;
			st->work_left += p->alignable - p->huge;
			st->catchup = true;
			continue;
		}
		/* The check at first sight is not enough: an exec keeps the PID
		 * and its start time, so a matched process that has exec'd a
		 * setuid program since looks the same to the /proc walk. */
		if (!r->setuid) {
			int secure = thpd_is_secure_exec(p->pid);

			/* Gone since the walk (a fork child that exited): nothing to say. */
			if (secure)
				p->skipped = true;
			if (secure > 0)
				thpd_log(LOG_INFO, "process %d (%s): a setuid/setgid program since an "
						   "exec, left alone (rule %s)",
					 (int)p->pid, p->comm, r->name);
			if (secure)
				continue;
		}
		collapse(st, p, r);
	}
	free(cand);
	st->nmatched = 0;
	for (size_t i = 0; i < st->nhash; i++) {
		for (struct thpd_proc *p = st->hash[i]; p; p = p->next) {
			struct thpd_rule *r;

			if (p->rule < 0)
				continue;
			r = &st->cfg.rules[p->rule];
			st->nmatched++;
			r->processes++;
			r->anon += p->anon;
			r->huge += p->huge;
			r->alignable += p->alignable;
			if (p->sizes_known) {
				r->folio_procs++;
				r->folio_base += p->folio_base;
				for (uint32_t k = 0; k < st->nsizes; k++)
					r->folio_bytes[k] += p->folio_bytes[k];
			}
			if ((r->policy == THPD_NEVER || r->policy == THPD_NOHUGE) && p->huge &&
			    !p->warned) {
				p->warned = true;
				thpd_log(LOG_WARNING,
					 "process %d (%s): rule %s (policy %s%s) has %llu kB in huge pages",
					 (int)p->pid, p->comm, r->name, thpd_policy_name(r->policy),
					 r->inject ? "" : ", not enforced",
					 (unsigned long long)(p->huge >> 10));
			}
		}
	}
	st->last_cpu_ns = thpd_cpu_ns();
	st->last_wall_ns = thpd_mono_ns();
	/* The rest of this pass's CPU counts against the budget too. */
	st->bucket_s -= (double)(st->last_cpu_ns - cpu - st->pass_collapse_ns - st->pass_sizes_ns) / 1e9;
	st->last_pass_s = (double)(st->last_wall_ns - t0) / 1e9;
	st->passes++;
}
