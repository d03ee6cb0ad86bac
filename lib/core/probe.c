// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * thp_probe(), and the THP settings of sysfs it reports (probe_*): read
 * anew on each call, since they change under a running process.  The
 * capabilities probed once per process are caps.c's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat.h"
#include "internal.h"
#include "syscall.h"

#define SYSFS_THP "/sys/kernel/mm/transparent_hugepage/"

/*
 * The bracketed word of a sysfs choice file ("always [madvise] never"),
 * as its index in @names, or @unknown when the file is unreadable or
 * brackets a word not listed (a newer kernel's).
 */
static unsigned int sysfs_choice(const char *path, const char *const *names, unsigned int n,
				 unsigned int unknown)
{
	char buf[128];
	const char *open, *close;

	if (sys_read_file(path, buf, sizeof(buf)) <= 0)
		return unknown;
	open = strchr(buf, '[');
	close = open ? strchr(open, ']') : NULL;
	if (!close)
		return unknown;
	for (unsigned int i = 0; i < n; i++)
		if (strlen(names[i]) == (size_t)(close - open - 1) &&
		    !memcmp(open + 1, names[i], (size_t)(close - open - 1)))
			return i;
	return unknown;
}

/* Indexed by enum thp_sysfs_mode. */
static const char *const mode_names[] = { "always", "madvise", "never", "", "inherit" };
/* Indexed by enum thp_shmem_mode. */
static const char *const shmem_names[] = { "always", "within_size", "advise", "never",
					   "deny", "force", "inherit" };
/* Indexed by enum thp_defrag_mode. */
static const char *const defrag_names[] = { "always", "defer", "defer+madvise", "madvise", "never" };

unsigned int probe_sysfs_mode(void)
{
	/* "inherit" is no top-level mode: only the first three names. */
	return sysfs_choice(SYSFS_THP "enabled", mode_names, 3, THP_MODE_UNKNOWN);
}

static uint32_t read_u32_setting(const char *path)
{
	char buf[32], *end;
	unsigned long long v;

	if (sys_read_file(path, buf, sizeof(buf)) <= 0)
		return THP_PROBE_UNKNOWN;
	v = strtoull(buf, &end, 10);
	if (end == buf || v >= THP_PROBE_UNKNOWN)
		return THP_PROBE_UNKNOWN;
	return (uint32_t)v;
}

/*
 * One size: its directory's files, or false when it has neither (the
 * kernel offers no such size).  A size may have only shmem_enabled (the
 * order-1 folios anonymous memory cannot use).
 */
static bool probe_one_size(uint64_t size, unsigned int top, struct thp_size_info *si)
{
	char path[96];
	unsigned int en, sh;

	snprintf(path, sizeof(path), SYSFS_THP "hugepages-%llukB/enabled",
		 (unsigned long long)(size >> 10));
	en = sysfs_choice(path, mode_names, ARRAY_LEN(mode_names), THP_MODE_UNKNOWN);
	snprintf(path, sizeof(path), SYSFS_THP "hugepages-%llukB/shmem_enabled",
		 (unsigned long long)(size >> 10));
	sh = sysfs_choice(path, shmem_names, ARRAY_LEN(shmem_names), THP_SHMEM_UNKNOWN);
	if (en == THP_MODE_UNKNOWN && sh == THP_SHMEM_UNKNOWN)
		return false;
	memset(si, 0, sizeof(*si));
	si->size = size;
	si->enabled = (uint8_t)en;
	si->mode = (uint8_t)(en == THP_MODE_INHERIT ? top : en);
	si->shmem_enabled = (uint8_t)sh;
	/*
	 * mm/: a VM_HUGEPAGE anonymous mapping may get the orders set to
	 * "always" and "madvise", and those set to "inherit" while the
	 * top-level mode is "always" or "madvise".
	 */
	si->huge_policy = si->mode == THP_MODE_ALWAYS || si->mode == THP_MODE_MADVISE;
	return true;
}

/*
 * Every size from two base pages to the PMD size (the range the kernel
 * makes hugepages-<size>kB directories for), read anew on each call: they
 * change under a running process.  Found by trying each power of two
 * rather than listing the directory, so no directory stream is involved.
 */
static void probe_sizes(struct thp_probe_info *info, size_t page_size)
{
	uint64_t last = info->pmd_size ? info->pmd_size : (uint64_t)page_size << 20;
	struct thp_size_info si;

	info->nr_sizes = 0;
	memset(info->sizes, 0, sizeof(info->sizes));
	for (uint64_t size = (uint64_t)page_size * 2; size <= last; size <<= 1) {
		if (!probe_one_size(size, info->thp_mode, &si))
			continue;
		if (info->nr_sizes < THP_PROBE_MAX_SIZES)
			info->sizes[info->nr_sizes] = si;
		info->nr_sizes++;
	}
	if (info->nr_sizes) {
		info->sizes_source = THP_SIZES_PER_SIZE;
	} else if (info->thp_mode != THP_MODE_UNKNOWN && info->pmd_size) {
		/* Before 6.8 the top-level files are the PMD size's own. */
		info->sizes_source = THP_SIZES_PMD_ONLY;
		info->nr_sizes = 1;
		si.size = info->pmd_size;
		si.enabled = si.mode = (uint8_t)info->thp_mode;
		si.shmem_enabled = (uint8_t)info->shmem_mode;
		si.huge_policy = si.mode == THP_MODE_ALWAYS || si.mode == THP_MODE_MADVISE;
		si.reserved0 = 0;
		info->sizes[0] = si;
	} else {
		info->sizes_source = THP_SIZES_UNKNOWN;
	}
}

static void probe_sysfs_ver1(struct thp_probe_info *info, size_t page_size)
{
	info->defrag = sysfs_choice(SYSFS_THP "defrag", defrag_names, ARRAY_LEN(defrag_names),
				    THP_DEFRAG_UNKNOWN);
	/* "inherit" is a per-size value only. */
	info->shmem_mode = sysfs_choice(SYSFS_THP "shmem_enabled", shmem_names,
					ARRAY_LEN(shmem_names) - 1, THP_SHMEM_UNKNOWN);
	info->khugepaged_pages_to_scan = read_u32_setting(SYSFS_THP "khugepaged/pages_to_scan");
	info->khugepaged_scan_sleep_millisecs =
		read_u32_setting(SYSFS_THP "khugepaged/scan_sleep_millisecs");
	info->khugepaged_alloc_sleep_millisecs =
		read_u32_setting(SYSFS_THP "khugepaged/alloc_sleep_millisecs");
	info->khugepaged_max_ptes_none = read_u32_setting(SYSFS_THP "khugepaged/max_ptes_none");
	info->khugepaged_max_ptes_swap = read_u32_setting(SYSFS_THP "khugepaged/max_ptes_swap");
	info->khugepaged_max_ptes_shared =
		read_u32_setting(SYSFS_THP "khugepaged/max_ptes_shared");
	info->khugepaged_defrag = read_u32_setting(SYSFS_THP "khugepaged/defrag");
	info->reserved1 = 0;
	probe_sizes(info, page_size);
}

void probe_folio_sizes(struct thp_probe_info *info)
{
	const struct thp_caps *c = caps_get();

	memset(info, 0, sizeof(*info));
	info->sz = sizeof(*info);
	info->thp_mode = probe_sysfs_mode();
	info->pmd_size = c->pmd_size;
	info->shmem_mode = sysfs_choice(SYSFS_THP "shmem_enabled", shmem_names,
					ARRAY_LEN(shmem_names) - 1, THP_SHMEM_UNKNOWN);
	probe_sizes(info, c->page_size);
}

THP_API int thp_probe(struct thp_probe_info *info)
{
	const struct thp_caps *c;
	struct thp_target self = { .self = true, .pid = 0, .pidfd = -1 };
	int err;

	report_clear_detail();
	err = opts_check(info, sizeof(*info), THP_PROBE_INFO_SIZE_VER0);
	_Static_assert(sizeof(*info) == THP_PROBE_INFO_SIZE_VER1, "published size");
	if (err)
		return ret_errno(err);
	c = caps_get_prctl();
	self.pid = getpid();
	self.pidfd = c->pidfd_self ? c->pidfd_self : -1;

	info->backends = 0;
	if (backend_pmadv_ops.can_apply(c, &self, THP_ADVICE_HUGE) == 0)
		info->backends |= 1u << THP_BACKEND_PMADV;
	if (backend_process_madvise_ops.can_apply(c, &self, THP_ADVICE_HUGE) == 0)
		info->backends |= 1u << THP_BACKEND_PROCESS_MADVISE;
	info->backends |= 1u << THP_BACKEND_MADVISE;
	if (c->thp_disable)
		info->backends |= 1u << THP_BACKEND_PRCTL_DISABLE;
	info->backends |= 1u << THP_BACKEND_EXISTING_ONLY;
	info->thp_mode = probe_sysfs_mode();
	info->pmd_size = caps_pmd_size_now();
	info->pidfd_self = c->pidfd_self;
	info->procmap_query = caps_procmap_query_now();
	info->pmadv_skip_errors = c->pmadv_skip_errors;
	info->pmadv_no_error_on_unmapped = c->pmadv_no_error_on_unmapped;
	info->pmadv_set_default = c->pmadv_set_default;
	info->pmadv_entire_address_space = c->pmadv_entire;
	info->process_madvise_self_huge = c->pm_self_any_advice;
	info->thp_disable_except_advised = c->thp_disable_except_advised;
	info->madvise_collapse = c->madvise_collapse;
	if (OPTS_HAS(info, sizes))
		probe_sysfs_ver1(info, c->page_size);
	return 0;
}
