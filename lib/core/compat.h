/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Kernel constants that the build machines' Linux 6.1 UAPI headers lack,
 * with the values of the kernels that define them.  Each is defined only
 * when missing so newer headers win.
 */
#ifndef THP_COMPAT_H
#define THP_COMPAT_H

#include <limits.h>
#include <stdint.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <linux/types.h>

#ifndef MADV_HUGEPAGE
#define MADV_HUGEPAGE 14
#endif
#ifndef MADV_NOHUGEPAGE
#define MADV_NOHUGEPAGE 15
#endif
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25 /* 6.1 */
#endif

#ifndef __NR_process_madvise
#define __NR_process_madvise 440
#endif
#ifndef __NR_pidfd_open
#define __NR_pidfd_open 434
#endif

/* RFC "add process_madvise() flags to modify behaviour" (never merged). */
#define PMADV_SKIP_ERRORS (1U << 0)
#define PMADV_NO_ERROR_ON_UNMAPPED (1U << 1)
#define PMADV_SET_FORK_EXEC_DEFAULT (1U << 2)
#define PMADV_ENTIRE_ADDRESS_SPACE (1U << 3)

/* RFC PR_SET_THP_POLICY arguments (never merged; numbers are taken). */
#define RFC_PR_THP_POLICY_DEFAULT_HUGE 0
#define RFC_PR_THP_POLICY_DEFAULT_NOHUGE 1
#define RFC_PR_THP_POLICY_SYSTEM 2
#define RFC_PR_SET_THP_POLICY_POSTED 78
#define RFC_PR_GET_THP_POLICY_POSTED 79

#ifndef PR_SET_THP_DISABLE
#define PR_SET_THP_DISABLE 41
#endif
#ifndef PR_GET_THP_DISABLE
#define PR_GET_THP_DISABLE 42
#endif
#ifndef PR_THP_DISABLE_EXCEPT_ADVISED
#define PR_THP_DISABLE_EXCEPT_ADVISED (1 << 1) /* 6.18 */
#endif

/*
 * PIDFD_SELF moved while it was new: first -10000 (thread) / -20000
 * (process), then -10000 / -10001.  The probe tries each.
 */
#define THP_PIDFD_SELF_THREAD (-10000)
#define THP_PIDFD_SELF_PROCESS_NEW (-10001)
#define THP_PIDFD_SELF_PROCESS_OLD (-20000)

/* process_madvise() handles at most IOV_MAX entries and MAX_RW_COUNT bytes per call. */
#ifndef IOV_MAX
#define IOV_MAX 1024
#endif
#define THP_MAX_RW_COUNT(page_size) ((size_t)INT32_MAX & ~((size_t)(page_size) - 1))

/* PROCMAP_QUERY (6.11), from <linux/fs.h>. */
#ifndef PROCMAP_QUERY
struct procmap_query {
	__u64 size;
	__u64 query_flags;
	__u64 query_addr;
	__u64 vma_start;
	__u64 vma_end;
	__u64 vma_flags;
	__u64 vma_page_size;
	__u64 vma_offset;
	__u64 inode;
	__u32 dev_major;
	__u32 dev_minor;
	__u32 vma_name_size;
	__u32 build_id_size;
	__u64 vma_name_addr;
	__u64 build_id_addr;
};
#define PROCFS_IOCTL_MAGIC 'f'
#define PROCMAP_QUERY _IOWR(PROCFS_IOCTL_MAGIC, 17, struct procmap_query)
#define PROCMAP_QUERY_VMA_READABLE 0x01
#define PROCMAP_QUERY_VMA_WRITABLE 0x02
#define PROCMAP_QUERY_VMA_EXECUTABLE 0x04
#define PROCMAP_QUERY_VMA_SHARED 0x08
#define PROCMAP_QUERY_COVERING_OR_NEXT_VMA 0x10
#define PROCMAP_QUERY_FILE_BACKED_VMA 0x20
#endif

/* /proc/PID/pagemap entry bits (Documentation/admin-guide/mm/pagemap.rst). */
#define PM_PRESENT (1ULL << 63)
#define PM_FILE (1ULL << 61) /* file page or shared anonymous */
#define PM_MMAP_EXCLUSIVE (1ULL << 56)
#define PM_PFN_MASK ((1ULL << 55) - 1)
/* /proc/kpageflags: the shared zero page (include/uapi/linux/kernel-page-flags.h). */
#define KPF_ZERO_PAGE (1ULL << 24)

/* PAGEMAP_SCAN (6.7), from <linux/fs.h>: page categories of a range in one ioctl. */
#ifndef PAGEMAP_SCAN
#define PAGE_IS_PRESENT (1 << 3)
#define PAGE_IS_SWAPPED (1 << 4)
#define PAGE_IS_PFNZERO (1 << 5)
#define PAGE_IS_HUGE (1 << 6)
struct page_region {
	__u64 start;
	__u64 end;
	__u64 categories;
};
struct pm_scan_arg {
	__u64 size;
	__u64 flags;
	__u64 start;
	__u64 end;
	__u64 walk_end;
	__u64 vec;
	__u64 vec_len;
	__u64 max_pages;
	__u64 category_inverted;
	__u64 category_mask;
	__u64 category_anyof_mask;
	__u64 return_mask;
};
#define PAGEMAP_SCAN _IOWR('f', 16, struct pm_scan_arg)
#endif

/* PIDFD_GET_INFO (6.13; the coredump mask 6.16), from <linux/pidfd.h>. */
struct thp_pidfd_info {
	__u64 mask;
	__u64 cgroupid;
	__u32 pid, tgid, ppid;
	__u32 ruid, rgid, euid, egid, suid, sgid, fsuid, fsgid;
	__s32 exit_code;
	__u32 coredump_mask;
	__u32 spare1;
};
#define THP_PIDFD_INFO_CREDS (1ULL << 1)
#define THP_PIDFD_INFO_COREDUMP (1ULL << 4)
#define THP_PIDFD_COREDUMP_SKIP (1U << 1) /* not dumpable: SUID_DUMP_DISABLE */
#define THP_PIDFD_COREDUMP_USER (1U << 2) /* dumpable as the user: SUID_DUMP_USER */
#define THP_PIDFD_COREDUMP_ROOT (1U << 3) /* dumpable as root only: SUID_DUMP_ROOT */
/* None of the three: the kernel had no mm to ask (a zombie leader), dumpability unknown. */
#define THP_PIDFD_COREDUMP_KNOWN                                                                   \
	(THP_PIDFD_COREDUMP_SKIP | THP_PIDFD_COREDUMP_USER | THP_PIDFD_COREDUMP_ROOT)
#define THP_PIDFD_GET_INFO _IOWR(0xFF, 11, struct thp_pidfd_info)

/* Syscall user dispatch (PR_SET_SYSCALL_USER_DISPATCH 5.11; its ptrace config 6.4). */
/* 0x4210 is PTRACE_SET_SYSCALL_USER_DISPATCH_CONFIG: never used here. */
#define THP_PTRACE_GET_SUD_CONFIG 0x4211 /* PTRACE_GET_SYSCALL_USER_DISPATCH_CONFIG */
struct thp_ptrace_sud_config {
	__u64 mode;
	__u64 selector;
	__u64 offset;
	__u64 len;
};
#ifndef PR_SET_SYSCALL_USER_DISPATCH
#define PR_SET_SYSCALL_USER_DISPATCH 59
#endif
#define THP_PR_SYS_DISPATCH_OFF 0
#define THP_PR_SYS_DISPATCH_EXCLUSIVE_ON 1 /* PR_SYS_DISPATCH_ON: calls outside [offset, offset+len) */
#define THP_PR_SYS_DISPATCH_INCLUSIVE_ON 2 /* 6.16: calls inside the range */
#define THP_SYSCALL_DISPATCH_FILTER_ALLOW 0
#define THP_SYSCALL_DISPATCH_FILTER_BLOCK 1
/* SIGSYS's si_code: from a seccomp filter, from syscall user dispatch. */
#define THP_SYS_SECCOMP 1
#define THP_SYS_USER_DISPATCH 2

#endif /* THP_COMPAT_H */
