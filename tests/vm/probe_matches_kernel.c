// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Guest check: thp_probe() against what this kernel's version and flavour should offer.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "vm_check.h"

/* hugepages-<size>kB directories, listed here with readdir(). */
static unsigned int count_size_dirs(void)
{
	DIR *d = opendir("/sys/kernel/mm/transparent_hugepage");
	struct dirent *e;
	unsigned int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)) != NULL)
		n += strncmp(e->d_name, "hugepages-", 10) == 0;
	closedir(d);
	return n;
}

/*
 * Every folio size in one line (size:enabled/mode, '+' where a HUGE policy
 * can get it); "none" where the kernel has no per-size controls.  Named
 * "mthp", not "probe ...", which tests/vm/tables.py parses as key=value.
 */
static void check_sizes(struct check *c)
{
	static const char *const names[] = { "always", "madvise", "never", "-", "inherit" };
	unsigned int dirs = count_size_dirs();
	char line[1024];
	size_t at = 0;

	if (dirs) {
		if (pinfo.sizes_source != THP_SIZES_PER_SIZE || pinfo.nr_sizes != dirs)
			cfail(c, "sizes_source %u nr_sizes %u, sysfs has %u size directories",
			      pinfo.sizes_source, pinfo.nr_sizes, dirs);
	} else if (pinfo.sizes_source != THP_SIZES_PMD_ONLY || pinfo.nr_sizes != 1 ||
		   pinfo.sizes[0].size != PMD || pinfo.sizes[0].mode != pinfo.thp_mode) {
		cfail(c, "no size directories, but sizes_source %u nr_sizes %u size %llu",
		      pinfo.sizes_source, pinfo.nr_sizes, (unsigned long long)pinfo.sizes[0].size);
	}
	line[0] = 0;
	for (unsigned int i = 0; i < pinfo.nr_sizes && i < THP_PROBE_MAX_SIZES; i++) {
		const struct thp_size_info *si = &pinfo.sizes[i];

		at += (size_t)snprintf(line + at, sizeof(line) - at, " %lluK:%s/%s%s",
				       (unsigned long long)(si->size >> 10),
				       si->enabled < 5 ? names[si->enabled] : "?",
				       si->mode < 5 ? names[si->mode] : "?",
				       si->huge_policy ? "+" : "");
		if (at >= sizeof(line))
			break;
	}
	printf("VMTEST INFO mthp per-size controls: %s;%s\n", dirs ? "yes" : "none", line);
}

void check_probe(void)
{
	struct check c = { .name = "probe" };
	int r;

	memset(&pinfo, 0, sizeof(pinfo));
	pinfo.sz = sizeof(pinfo);
	r = thp_probe(&pinfo);
	if (r) {
		cfail(&c, "thp_probe() = %d", r);
		cdone(&c);
		return;
	}
	if (pinfo.procmap_query != kx.procmap_query)
		cfail(&c, "procmap_query %d, expected %d", pinfo.procmap_query, kx.procmap_query);
	if (pinfo.thp_mode != sysfs_mode())
		cfail(&c, "thp_mode %u, sysfs says %u", pinfo.thp_mode, sysfs_mode());
	if (pinfo.pmd_size != PMD)
		cfail(&c, "pmd_size %llu", (unsigned long long)pinfo.pmd_size);
	if (!(pinfo.backends & (1u << THP_BACKEND_MADVISE)))
		cfail(&c, "MADVISE backend missing");
	if (!(pinfo.backends & (1u << THP_BACKEND_PRCTL_DISABLE)))
		cfail(&c, "PRCTL_DISABLE backend missing");
	if (pinfo.madvise_collapse != kx.collapse)
		cfail(&c, "madvise_collapse %d, expected %d", pinfo.madvise_collapse, kx.collapse);
	if (!!pinfo.pidfd_self != kx.pidfd_self)
		cfail(&c, "pidfd_self %d, expected %s", pinfo.pidfd_self,
		      kx.pidfd_self ? "one" : "none");
	if (pinfo.process_madvise_self_huge != kx.pm_self_huge)
		cfail(&c, "process_madvise_self_huge %d, expected %d",
		      pinfo.process_madvise_self_huge, kx.pm_self_huge);
	if (pinfo.thp_disable_except_advised != kx.except_advised)
		cfail(&c, "thp_disable_except_advised %d, expected %d",
		      pinfo.thp_disable_except_advised, kx.except_advised);
	if (!!(pinfo.backends & (1u << THP_BACKEND_PROCESS_MADVISE)) != kx.pm_self_huge)
		cfail(&c, "PROCESS_MADVISE backend %s, expected %s",
		      pinfo.backends & (1u << THP_BACKEND_PROCESS_MADVISE) ? "reported" : "missing",
		      kx.pm_self_huge ? "present" : "absent (self HUGE is EINVAL)");
	if (!rfc) {
		if (pinfo.pmadv_skip_errors || pinfo.pmadv_no_error_on_unmapped ||
		    pinfo.pmadv_set_default || pinfo.pmadv_entire_address_space)
			cfail(&c, "PMADV flags reported without the RFC (%d%d%d%d)",
			      pinfo.pmadv_skip_errors, pinfo.pmadv_no_error_on_unmapped,
			      pinfo.pmadv_set_default, pinfo.pmadv_entire_address_space);
		if (pinfo.backends & (1u << THP_BACKEND_PMADV))
			cfail(&c, "PMADV backend without the RFC");
	} else {
		if (!pinfo.pmadv_skip_errors || !pinfo.pmadv_no_error_on_unmapped ||
		    !pinfo.pmadv_set_default || !pinfo.pmadv_entire_address_space)
			cfail(&c, "PMADV flags missing (%d%d%d%d)", pinfo.pmadv_skip_errors,
			      pinfo.pmadv_no_error_on_unmapped, pinfo.pmadv_set_default,
			      pinfo.pmadv_entire_address_space);
		if (!(pinfo.backends & (1u << THP_BACKEND_PMADV)))
			cfail(&c, "PMADV backend missing");
	}
	printf("VMTEST INFO probe backends=0x%x pidfd_self=%d pmq=%d tdea=%d collapse=%d "
	       "pm_self_huge=%d mode=%s\n", pinfo.backends, pinfo.pidfd_self,
	       pinfo.procmap_query, pinfo.thp_disable_except_advised, pinfo.madvise_collapse,
	       pinfo.process_madvise_self_huge,
	       pinfo.thp_mode < 3 ? mode_names[pinfo.thp_mode] : "unknown");
	check_sizes(&c);
	cdone(&c);
}
