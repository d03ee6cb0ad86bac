// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Capability probing, in the process itself and never in a child.  The
 * base probe runs once per process (pthread_once) and is free of side
 * effects: unknown process_madvise() flags are probed with a bad pidfd
 * (EBADF means the flag passed the flags check, EINVAL that it did not).
 * Two answers are learnt on first need instead: PR_SET_THP_DISABLE support
 * (caps_get_prctl(), only for the default-policy calls and thp_probe(): a
 * range call never touches the process's prctl state), and PROCMAP_QUERY
 * (from the first walk's own ioctl, so a failure to open /proc/self/maps
 * under EMFILE is never taken for "no").
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "compat.h"
#include "internal.h"
#include "syscall.h"

static struct thp_caps caps;
static pthread_once_t caps_once = PTHREAD_ONCE_INIT;
/* Set (release) once caps is complete: every call after the first skips pthread_once(). */
static atomic_bool caps_ready;
static pthread_once_t prctl_once = PTHREAD_ONCE_INIT;
static _Atomic signed char procmap_query_state = -1; /* caps_procmap_query() */

static bool pmadv_flag_known(unsigned int flag)
{
	size_t vlen = (flag & PMADV_ENTIRE_ADDRESS_SPACE) ? (size_t)-1 : 0;

	return sys_process_madvise(-1, NULL, vlen, MADV_HUGEPAGE, flag) == -EBADF;
}

static int probe_pidfd_self(void)
{
	static const int candidates[] = {
		THP_PIDFD_SELF_PROCESS_NEW, THP_PIDFD_SELF_PROCESS_OLD,
		THP_PIDFD_SELF_THREAD,
	};

	for (size_t i = 0; i < ARRAY_LEN(candidates); i++)
		if (sys_process_madvise(candidates[i], NULL, 0, MADV_COLD, 0) == 0)
			return candidates[i];
	return 0;
}

static uint64_t read_u64_file(const char *path)
{
	char buf[64];

	return sys_read_file(path, buf, sizeof(buf)) > 0 ? strtoull(buf, NULL, 10) : 0;
}

int caps_procmap_query(void)
{
	return atomic_load_explicit(&procmap_query_state, memory_order_relaxed);
}

int caps_procmap_query_answer(long r)
{
	/* Before 6.11 /proc/PID/maps has no ioctl at all: ENOTTY. */
	int known = r == -ENOTTY || r == -EINVAL ? 0 : 1;

	/* Other failures (ESRCH, EINTR) are no answer; ENOENT is one. */
	if (known == 0 || r >= 0 || r == -ENOENT)
		atomic_store_explicit(&procmap_query_state, (signed char)known,
				      memory_order_relaxed);
	return known;
}

/* thp_probe() wants an answer now: ask on a fresh descriptor if no walk has. */
static bool procmap_query_now(void)
{
	struct procmap_query q;
	int fd;

	if (caps_procmap_query() < 0) {
		fd = sys_open("/proc/self/maps", O_RDONLY);
		if (fd < 0)
			return false; /* no answer: not kept, asked again next time */
		memset(&q, 0, sizeof(q));
		q.size = sizeof(q);
		q.query_addr = (uintptr_t)&caps;
		q.query_flags = PROCMAP_QUERY_COVERING_OR_NEXT_VMA;
		caps_procmap_query_answer(sys_ioctl(fd, PROCMAP_QUERY, &q));
		sys_close(fd);
	}
	return caps_procmap_query() > 0;
}

/*
 * PR_SET_THP_DISABLE (3.15+): PR_GET_THP_DISABLE answers wherever it
 * exists, with the flags in force.  PR_THP_DISABLE_EXCEPT_ADVISED (6.18)
 * shows only by setting it: set it on this process, read it back, and put
 * the state read first back exactly.  For that window of three system
 * calls a fault in another thread's non-advised mapping gets no huge page
 * and a fork() there passes the flag on; libthp's own readers and writers
 * of the state (the default-policy calls) wait for this probe in
 * caps_get_prctl()'s pthread_once, so they never see it.
 */
static void probe_thp_disable(void)
{
	long prev = sys_prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0);
	long got;

	if (prev < 0)
		return;
	caps.thp_disable = true;
	if (prev & PR_THP_DISABLE_EXCEPT_ADVISED) {
		caps.thp_disable_except_advised = true;
		return;
	}
	/* Older kernels refuse any flag with EINVAL and change nothing. */
	if (sys_prctl(PR_SET_THP_DISABLE, 1, PR_THP_DISABLE_EXCEPT_ADVISED, 0, 0) < 0)
		return;
	got = sys_prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0);
	caps.thp_disable_except_advised = got > 0 && (got & PR_THP_DISABLE_EXCEPT_ADVISED);
	sys_prctl(PR_SET_THP_DISABLE, prev ? 1 : 0, 0, 0, 0);
}

static void caps_init(void)
{
	int saved = errno;

	caps.page_size = sys_page_size();
	caps.pmd_size = read_u64_file("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size");
	caps.process_madvise = sys_process_madvise(-1, NULL, 0, MADV_COLD, 0) != -ENOSYS;
	if (caps.process_madvise) {
		caps.pidfd_self = probe_pidfd_self();
		caps.pmadv_skip_errors = pmadv_flag_known(PMADV_SKIP_ERRORS);
		caps.pmadv_no_error_on_unmapped = pmadv_flag_known(PMADV_NO_ERROR_ON_UNMAPPED);
		caps.pmadv_set_default = pmadv_flag_known(PMADV_SET_FORK_EXEC_DEFAULT);
		caps.pmadv_entire = pmadv_flag_known(PMADV_ENTIRE_ADDRESS_SPACE);
		/* 6.13+: any advice on self.  An empty vector changes nothing. */
		if (caps.pidfd_self) {
			caps.pm_self_any_advice =
				sys_process_madvise(caps.pidfd_self, NULL, 0, MADV_HUGEPAGE, 0) == 0;
		} else {
			int fd = sys_pidfd_open(getpid(), 0);

			if (fd >= 0) {
				caps.pm_self_any_advice =
					sys_process_madvise(fd, NULL, 0, MADV_HUGEPAGE, 0) == 0;
				sys_close(fd);
			}
		}
	}
	/* madvise() checks the advice before the (zero) length. */
	caps.madvise_collapse = sys_madvise((uintptr_t)&caps & ~(caps.page_size - 1), 0,
					    MADV_COLLAPSE) == 0;
	atomic_store_explicit(&caps_ready, true, memory_order_release);
	errno = saved;
}

const struct thp_caps *caps_get(void)
{
	if (__builtin_expect(!atomic_load_explicit(&caps_ready, memory_order_acquire), 0))
		pthread_once(&caps_once, caps_init);
	return &caps;
}

const struct thp_caps *caps_get_prctl(void)
{
	caps_get();
	pthread_once(&prctl_once, probe_thp_disable);
	return &caps;
}

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
static const char *const shmem_names[] = {
	"always", "within_size", "advise", "never", "deny", "force", "inherit",
};
/* Indexed by enum thp_defrag_mode. */
static const char *const defrag_names[] = { "always", "defer", "defer+madvise", "madvise", "never" };

unsigned int caps_sysfs_mode(void)
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

void caps_folio_sizes(struct thp_probe_info *info)
{
	const struct thp_caps *c = caps_get();

	memset(info, 0, sizeof(*info));
	info->sz = sizeof(*info);
	info->thp_mode = caps_sysfs_mode();
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
	info->thp_mode = caps_sysfs_mode();
	/* 0: sysfs was unreadable at the first call (EMFILE?); not kept. */
	info->pmd_size = c->pmd_size ? c->pmd_size :
		read_u64_file("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size");
	info->pidfd_self = c->pidfd_self;
	info->procmap_query = procmap_query_now();
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
