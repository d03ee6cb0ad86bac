/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * thpctl status, by job: status.c reads (options, the library calls),
 * status_judge.c says what the figures mean, status_text.c and
 * status_json.c print them.
 */
#ifndef THPCTL_STATUS_H
#define THPCTL_STATUS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <thp/thp.h>

struct status_opts {
	pid_t pid; /* 0: thpctl itself */
	bool json, anon_only, huge_only;
};

struct status_data {
	pid_t pid;
	bool self;
	/* Default policy. */
	struct thp_default_opts def;
	bool policy_known; /* false: system or nohuge, cannot tell from outside */
	char detail[256];  /* the library's explanation when !policy_known */
	/* Mappings (all of them; the filters apply when printing). */
	struct thp_mapping_state *maps;
	size_t nmaps;
	/* Effective coverage, over all mappings (thp_query() totals). */
	uint64_t anon, anon_huge, alignable;
	/* Bytes by folio size (thp_query() VER2) and what the probe says of each size. */
	struct thp_query_opts q;
	struct thp_mapping_folios *folios; /* one per maps entry */
	struct thp_probe_info pi;
	bool pi_ok;
	/* The coverage the policy's sizes give: every size it can get, not only the PMD one. */
	uint64_t policy_bytes, policy_alignable;
	bool sized; /* folio sizes known and some size a huge policy can get */
};

struct totals {
	uint64_t mappings, huge, nohuge, eligible, anon_huge, rss;
};

/* status_judge.c: what the figures mean. */
/* Is @m shown under --anon-only / --huge-only? */
bool status_listed(const struct status_opts *o, const struct thp_mapping_state *m);
void status_add_total(struct totals *t, const struct thp_mapping_state *m);
/* "huge", "nohuge", "huge+nohuge" or "-": what the mapping was advised. */
const char *status_advice_word(const struct thp_mapping_state *m);
const char *status_persistent_text(const struct status_data *d);
/* Percent of @part in @whole, 0 for an empty whole. */
unsigned int status_percent(uint64_t part, uint64_t whole);
/* Huge bytes and what could be huge: by the policy's sizes where known, else AnonHugePages. */
uint64_t status_cov_huge(const struct status_data *d);
uint64_t status_cov_alignable(const struct status_data *d);
/* A HUGE policy whose effect falls far short (the warning). */
bool status_low_coverage(const struct status_data *d);
const char *status_source_name(uint32_t source);
/* Does a huge policy get folios of @size here (thp_probe())? */
bool status_size_policy(const struct status_data *d, uint64_t size);
/* The sizes that get a column: those that hold memory in the process. */
bool status_size_column(const struct status_data *d, uint32_t i);

/* status_text.c and status_json.c (0, or -1 when writing failed). */
void status_print_text(const struct status_opts *o, const struct status_data *d);
int status_print_json(const struct status_opts *o, const struct status_data *d);

#endif
