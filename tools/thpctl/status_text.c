// SPDX-License-Identifier: LGPL-2.1-or-later
/* thpctl status: the text output. */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <thp/thp.h>

#include "json.h" /* utf8_char() */
#include "status.h"
#include "thpctl.h"

/*
 * Characters a terminal does not show as themselves: C0 and C1 controls,
 * DEL, and the bidirectional formatting marks that reorder what is shown.
 */
static bool invisible(uint32_t cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0x200e || cp == 0x200f ||
	       (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

/*
 * A mapping name is chosen by the target process (a file name): shown as
 * data, never as terminal input.  Invisible characters and bytes that are
 * not UTF-8 come out as \xNN per byte, and '\' as "\\".
 */
static void print_name(const char *name)
{
	const unsigned char *p = (const unsigned char *)name;

	if (!*p) {
		fputs("[anon]", stdout);
		return;
	}
	while (*p) {
		uint32_t cp = 0;
		size_t n = utf8_char(p, &cp);

		if (n == 0 || invisible(cp)) {
			for (size_t i = 0; i < (n ? n : 1); i++)
				printf("\\x%02x", p[i]);
		} else if (*p == '\\') {
			fputs("\\\\", stdout);
		} else {
			fwrite(p, 1, n, stdout);
		}
		p += n ? n : 1;
	}
}

static void print_sizes(const struct status_data *d)
{
	char label[32];

	if (d->q.folio_source != THP_FOLIO_SOURCE_KPAGEFLAGS) {
		printf("folio sizes: source none (page frame numbers need CAP_SYS_ADMIN and "
		       "/proc/kpageflags): only PMD-mapped memory (AnonHugePages) is counted\n");
		return;
	}
	printf("folio sizes: source %s (anonymous memory; * = a huge policy gets this size here)\n",
	       status_source_name(d->q.folio_source));
	printf("  base %llu kB", (unsigned long long)(d->q.anon_base_bytes >> 10));
	for (uint32_t i = 0; i < d->q.nr_sizes; i++) {
		bool pol = status_size_policy(d, d->q.sizes[i].size);

		if (!d->q.sizes[i].bytes && !pol)
			continue;
		thpd_size_label(d->q.sizes[i].size, label, sizeof(label));
		printf(", %s%s %llu kB", label, pol ? "*" : "",
		       (unsigned long long)(d->q.sizes[i].bytes >> 10));
	}
	if (d->q.anon_other_bytes)
		printf(", other %llu kB", (unsigned long long)(d->q.anon_other_bytes >> 10));
	putchar('\n');
}

static void print_coverage(const struct status_data *d)
{
	if (d->sized)
		printf("coverage: %llu kB of %llu kB anonymous memory in folios of the sizes a huge "
		       "policy gets (%u%%); %llu kB could be (%u%% of that is); "
		       "PMD-mapped %llu kB\n",
		       (unsigned long long)(d->policy_bytes >> 10), (unsigned long long)(d->anon >> 10),
		       status_percent(d->policy_bytes, d->anon),
		       (unsigned long long)(d->policy_alignable >> 10),
		       status_percent(d->policy_bytes, d->policy_alignable),
		       (unsigned long long)(d->anon_huge >> 10));
	else
		printf("coverage: %llu kB of %llu kB anonymous memory in huge pages (%u%%); "
		       "%llu kB could be (%u%% of that is)\n",
		       (unsigned long long)(d->anon_huge >> 10), (unsigned long long)(d->anon >> 10),
		       status_percent(d->anon_huge, d->anon), (unsigned long long)(d->alignable >> 10),
		       status_percent(d->anon_huge, d->alignable));
	print_sizes(d);
	if (status_low_coverage(d))
		printf("warning: the policy is huge, but %s of the memory that could be huge is "
		       "(\"thpctl collapse -p %d\" collapses it)\n",
		       status_cov_huge(d) ? "less than half" : "none", (int)d->pid);
}

void status_print_text(const struct status_opts *o, const struct status_data *d)
{
	struct totals t = { 0 };

	printf("pid: %d%s\n", (int)d->pid, d->self ? " (thpctl itself)" : "");
	if (!d->policy_known) {
		printf("policy: system or nohuge (not distinguishable from outside the process)\n");
	} else {
		printf("policy: %s%s\n", thp_policy_name(d->def.policy),
		       !status_low_coverage(d) ? "" : d->anon_huge ? " (intended: low coverage, see below)"
							    : " (intended: nothing is huge)");
		if (d->def.backend_used == THP_BACKEND_AUTO)
			printf("mechanism: none (the system-wide THP mode applies)\n");
		else
			printf("mechanism: %s\n", thp_backend_name(d->def.backend_used));
		printf("persistent: %s\n", status_persistent_text(d));
	}
	print_coverage(d);
	printf("\n%-33s %10s %-6s %-8s %11s %10s ", "RANGE", "SIZE_KB", "ADVICE",
	       "ELIGIBLE", "ANONHUGE_KB", "RSS_KB");
	for (uint32_t i = 0; i < d->q.nr_sizes; i++) {
		char label[32];

		if (!status_size_column(d, i))
			continue;
		thpd_size_label(d->q.sizes[i].size, label, sizeof(label) - 3);
		strcat(label, "_KB");
		printf("%10s ", label);
	}
	printf("NAME\n");
	for (size_t i = 0; i < d->nmaps; i++) {
		const struct thp_mapping_state *m = &d->maps[i];
		char range[64];

		if (!status_listed(o, m))
			continue;
		status_add_total(&t, m);
		snprintf(range, sizeof(range), "0x%llx-0x%llx", (unsigned long long)m->start,
			 (unsigned long long)m->end);
		printf("%-33s %10llu %-6s %-8s %11llu %10llu ", range,
		       (unsigned long long)((m->end - m->start) >> 10), status_advice_word(m),
		       m->thp_eligible ? "yes" : "no",
		       (unsigned long long)(m->anon_huge_bytes >> 10),
		       (unsigned long long)(m->rss_bytes >> 10));
		for (uint32_t k = 0; k < d->q.nr_sizes; k++)
			if (status_size_column(d, k))
				printf("%10llu ", (unsigned long long)(d->folios[i].bytes[k] >> 10));
		print_name(m->name);
		putchar('\n');
	}
	printf("\ntotals: mappings=%llu advised_huge=%llu advised_nohuge=%llu eligible=%llu "
	       "anon_huge_kb=%llu rss_kb=%llu%s\n",
	       (unsigned long long)t.mappings, (unsigned long long)t.huge,
	       (unsigned long long)t.nohuge, (unsigned long long)t.eligible,
	       (unsigned long long)(t.anon_huge >> 10), (unsigned long long)(t.rss >> 10),
	       o->anon_only || o->huge_only ? " (listed mappings only)" : "");
}
