// SPDX-License-Identifier: LGPL-2.1-or-later
/* thpctl status: what the figures mean (which mappings are listed, coverage, sizes). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <thp/thp.h>

#include "status.h"

bool status_listed(const struct status_opts *o, const struct thp_mapping_state *m)
{
	if (o->anon_only && !m->anonymous)
		return false;
	if (o->huge_only && !m->advised_huge && m->anon_huge_bytes == 0)
		return false;
	return true;
}

void status_add_total(struct totals *t, const struct thp_mapping_state *m)
{
	t->mappings++;
	t->huge += m->advised_huge;
	t->nohuge += m->advised_nohuge;
	t->eligible += m->thp_eligible;
	t->anon_huge += m->anon_huge_bytes;
	t->rss += m->rss_bytes;
}

const char *status_advice_word(const struct thp_mapping_state *m)
{
	if (m->advised_huge && m->advised_nohuge)
		return "huge+nohuge";
	return m->advised_huge ? "huge" : m->advised_nohuge ? "nohuge"
							    : "-";
}

const char *status_persistent_text(const struct status_data *d)
{
	if (d->def.backend_used == THP_BACKEND_PRELOAD)
		return "by preload";
	return d->def.persistent ? "yes" : "no";
}

/* Percent of @part in @whole, 0 for an empty whole. */
unsigned int status_percent(uint64_t part, uint64_t whole)
{
	return whole ? (unsigned int)(part * 100 / whole) : 0;
}

/*
 * A HUGE policy whose effect falls far short: under half of what could be
 * huge is, and at least one huge page's worth could be.
 */
#define LOW_COVERAGE_PERCENT 50
/* Huge bytes and what could be huge: by the policy's sizes where known, else AnonHugePages. */
uint64_t status_cov_huge(const struct status_data *d)
{
	return d->sized ? d->policy_bytes : d->anon_huge;
}

uint64_t status_cov_alignable(const struct status_data *d)
{
	return d->sized ? d->policy_alignable : d->alignable;
}

bool status_low_coverage(const struct status_data *d)
{
	return d->policy_known && d->def.policy == THP_POLICY_HUGE &&
	       status_cov_alignable(d) >= 2 * 1024 * 1024 &&
	       status_percent(status_cov_huge(d), status_cov_alignable(d)) < LOW_COVERAGE_PERCENT;
}

const char *status_source_name(uint32_t source)
{
	return source == THP_FOLIO_SOURCE_KPAGEFLAGS ? "pagemap+kpageflags" : "none";
}

/* Does a huge policy get folios of @size here (thp_probe())? */
bool status_size_policy(const struct status_data *d, uint64_t size)
{
	for (uint32_t i = 0; d->pi_ok && i < d->pi.nr_sizes && i < THP_PROBE_MAX_SIZES; i++)
		if (d->pi.sizes[i].size == size)
			return d->pi.sizes[i].huge_policy;
	return false;
}

/* The sizes that get a column: those that hold memory in the process. */
bool status_size_column(const struct status_data *d, uint32_t i)
{
	return d->q.folio_source == THP_FOLIO_SOURCE_KPAGEFLAGS && d->q.sizes[i].bytes;
}
