// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * What a matched process holds: smaps_rollup every few passes, a full
 * thp_query() when its anonymous memory moved, and its folio sizes when
 * a bucket of their own has time for the walk.
 */
#include <stdio.h>
#include <string.h>
#include <syslog.h>

#include <thp/thp.h>

#include "clock_ns.h" /* lib/: clock_ns(), now_ns() */
#include "log.h"
#include "thpd.h"

/* A process whose figures stand still is read every 2, 4 .. up to this many passes. */
#define MAX_MEASURE_GAP 8

int thpd_rollup(pid_t pid, uint64_t *anon, uint64_t *huge)
{
	char path[64], buf[4096];
	unsigned long long kb;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)pid);
	n = thpd_read_small(path, buf, sizeof(buf));
	if (n <= 0)
		return -1;
	*anon = *huge = 0;
	if (thpd_field(buf, "Anonymous", &kb))
		*anon = kb << 10;
	if (thpd_field(buf, "AnonHugePages", &kb))
		*huge = kb << 10;
	return 0;
}

/* @now is more than 1% + one extent away from @then. */
static bool moved(uint64_t now, uint64_t then)
{
	return now > then + then / 100 + THPD_EXTENT || now + then / 100 + THPD_EXTENT < then;
}

/* The folio sizes of query @q into @p (by st->sizes[]), or why there are none. */
static void take_sizes(struct thpd_state *st, struct thpd_proc *p, const struct thp_query_opts *q)
{
	st->folio_source = (int)q->folio_source;
	p->sizes_due = false;
	p->sizes_known = q->folio_source == THP_FOLIO_SOURCE_KPAGEFLAGS;
	if (!p->sizes_known) {
		/* Nothing per size is exported then: zeros would read as measurements. */
		if (!st->folio_none_logged) {
			st->folio_none_logged = true;
			thpd_log(LOG_NOTICE,
				 "folio sizes not readable (process %d: pagemap shows frame numbers only "
				 "with CAP_SYS_ADMIN, /proc/kpageflags is root's, and a mapping of a "
				 "terabyte or more is not walked): no per-size metrics for it",
				 (int)p->pid);
		}
		return;
	}
	p->folio_base = q->anon_base_bytes;
	memset(p->folio_bytes, 0, sizeof(p->folio_bytes));
	for (uint32_t i = 0; i < q->nr_sizes && i < THP_PROBE_MAX_SIZES; i++)
		for (uint32_t k = 0; k < st->nsizes; k++)
			if (st->sizes[k] == q->sizes[i].size)
				p->folio_bytes[k] = q->sizes[i].bytes;
}

/*
 * @collapsing: the process's rule is huge and acts on it.  Its folio sizes
 * wait until nothing is left to collapse: the first collapses of new work
 * (a process just matched, a rule just reloaded) come before a pagemap and
 * kpageflags walk whose figures they are about to change.
 */
void thpd_measure(struct thpd_state *st, struct thpd_proc *p, bool collapsing)
{
	uint64_t anon, huge;
	bool requery, sizes_now;

	/* A process whose figures stand still is read less often, up to
	 * every MAX_MEASURE_GAP passes: smaps_rollup walks its page tables. */
	if (st->passes < p->measure_next)
		return;
	if (thpd_rollup(p->pid, &anon, &huge) < 0)
		return;
	if (anon == p->anon && huge == p->huge) {
		if (p->measure_gap < MAX_MEASURE_GAP)
			p->measure_gap *= 2;
	} else {
		p->measure_gap = 1;
	}
	p->measure_next = st->passes + p->measure_gap;
	p->anon = anon;
	p->huge = huge;
	/*
	 * A full smaps read only when the anonymous memory moved.  The folio
	 * sizes are due then too, or when the huge memory moved while they are
	 * known (a collapse or khugepaged moved bytes between sizes), but not
	 * during a catch-up, which moves it every pass.  Reading them walks
	 * pagemap and kpageflags, far dearer than smaps on memory in base
	 * pages: they are read only while a bucket of their own, filled at
	 * the steady CPU budget's rate, has time left, else on a later pass.
	 * It is not the collapses' bucket, which a catch-up leaves in debt
	 * for long after, just when the sizes have moved; their CPU is
	 * charged to both.
	 */
	requery = p->anon_at_query == 0 || moved(anon, p->anon_at_query);
	if (requery || (p->sizes_known && !p->catching_up && moved(huge, p->huge_at_query)))
		p->sizes_due = true;
	/* New, or a candidate of this pass (not backed off, something left). */
	collapsing = collapsing && (p->anon_at_query == 0 ||
				    (p->next_try <= st->passes && p->alignable >= huge + THPD_EXTENT));
	sizes_now = p->sizes_due && st->sizes_bucket_s > 0 && !collapsing;
	if (requery || sizes_now) {
		THP_OPTS(thp_query_opts, q, .pidfd = p->pidfd);
		uint64_t c0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
		int ret;

		if (sizes_now)
			q.flags = THP_QUERY_F_FOLIO_SIZES;
		ret = thp_query(&q);
		if (q.flags) {
			/* Charged now, so that the next process sees what is left. */
			c0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID) - c0;
			st->bucket_s -= (double)c0 / 1e9;
			st->sizes_bucket_s -= (double)c0 / 1e9;
			st->pass_sizes_ns += c0;
		}
		if (ret >= 0) {
			if (q.flags)
				take_sizes(st, p, &q);
			p->alignable = q.anon_alignable_bytes;
			p->anon_at_query = anon ? anon : 1;
			p->huge_at_query = huge;
			p->backoff = 1;
			p->next_try = 0;
		}
	}
}
