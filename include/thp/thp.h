/* SPDX-License-Identifier: LGPL-2.1-or-later */
/**
 * @file thp.h
 * @brief libthp: per-process transparent huge page policy for Linux.
 *
 * One versioned, struct-configured API over every kernel interface that
 * changes THP behaviour: the RFC process_madvise() PMADV_* flags, the RFC
 * PR_SET_THP_POLICY prctl, mainline PR_SET_THP_DISABLE, mainline
 * process_madvise() and a madvise() loop.  Every call reports how far it got
 * and what failed where, whichever backend did the work.
 *
 * Conventions shared by every call:
 * - The options struct starts with `uint64_t sz`, set by the caller to the
 *   sizeof() it was compiled with (the THP_OPTS() macro does this).  A size
 *   below the first published version is -EINVAL; bytes past what this
 *   library knows must be zero, else -E2BIG.
 * - Every public struct has the same layout and size on every Linux ABI
 *   (ILP32 and LP64): fixed-width members, explicit padding, and pointers
 *   in an 8-byte slot (THP_PTR64) whose other half a 32-bit library ignores.
 *   The _Static_asserts at the end of this header hold that layout.
 * - Return: >= 0 on success, a negative errno on failure; errno is set too.
 * - Bad input changes nothing in the target: every argument is checked
 *   before the first system call.  The call's outputs are written all the
 *   same wherever the input says where they are, so that a caller never
 *   reads what they held before the call (see thp_apply_ranges() for its
 *   reports, thp_apply_all() for its results).
 */
#ifndef THP_THP_H
#define THP_THP_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * A pointer member that takes 8 bytes on every ABI: an anonymous union of
 * the pointer (@p name) and a uint64_t (@p name ## _u64).  On 32-bit
 * targets the pointer is 4 of those bytes and the library ignores the other
 * 4 (THP_OPTS() zeroes them).
 * Anonymous unions need C11 (or C++); the header is C11.
 */
#define THP_PTR64(type, name) \
	union {                 \
		type name;      \
		uint64_t name##_u64; \
	}

/** Marks a symbol exported from libthp.so; everything else is hidden. */
#ifndef THP_API
#define THP_API __attribute__((visibility("default")))
#endif

/** Library version, major part. */
#define THP_VERSION_MAJOR 0
/** Library version, minor part. */
#define THP_VERSION_MINOR 2
/** Library version, patch part. */
#define THP_VERSION_PATCH 0

/**
 * Declare a zero-initialised options struct of type @p type named @p name,
 * with its size member set, plus any designated initialisers given, e.g.
 * `THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_HUGE);`.
 */
#define THP_OPTS(type, name, ...)                                          \
	struct type name = { .sz = sizeof(struct type), __VA_ARGS__ }

/** THP advice accepted by libthp; the values are the kernel's MADV_* ones. */
enum thp_advice {
	THP_ADVICE_HUGE = 14,     /**< MADV_HUGEPAGE: prefer huge pages here. */
	THP_ADVICE_NOHUGE = 15,   /**< MADV_NOHUGEPAGE: never huge pages here. */
	THP_ADVICE_COLLAPSE = 25, /**< MADV_COLLAPSE: collapse into huge pages now. */
};

/**
 * Kernel interfaces libthp can drive.  THP_BACKEND_AUTO lets the library
 * pick the best one the running kernel offers; any other value forces that
 * backend (for tests and benchmarks) and fails with -EOPNOTSUPP when it is
 * not available or cannot do the requested operation.
 */
enum thp_backend {
	THP_BACKEND_AUTO = 0,            /**< Pick the best available. */
	THP_BACKEND_PMADV = 1,           /**< process_madvise() with RFC PMADV_* flags. */
	THP_BACKEND_PROCESS_MADVISE = 2, /**< Mainline process_madvise(), vector, no flags. */
	THP_BACKEND_MADVISE = 3,         /**< A madvise() loop (own process only). */
	THP_BACKEND_PRCTL_POLICY = 4,    /**< RFC PR_SET_THP_POLICY (explicit opt-in only). */
	THP_BACKEND_PRCTL_DISABLE = 5,   /**< Mainline PR_SET_THP_DISABLE (+ EXCEPT_ADVISED). */
	THP_BACKEND_EXISTING_ONLY = 6,   /**< Advise existing mappings only: not persistent. */
	THP_BACKEND_PRELOAD = 7,         /**< libthp-preload.so interposition (thpctl run). */
	/**
	 * The target issues madvise() / prctl() itself: one thread is stopped
	 * with ptrace, made to run the call from its vDSO's syscall
	 * instruction and resumed exactly where it was.  Another process only,
	 * x86_64 only, never picked by AUTO: the caller forces it.  Needs
	 * ptrace rights (CAP_SYS_PTRACE, or the target's user IDs and a Yama
	 * ptrace_scope that allows it); pauses that one thread for each call.
	 * Refuses targets already traced (-EBUSY) and targets under seccomp.
	 */
	THP_BACKEND_INJECT = 8,
	THP_BACKEND_COUNT                /**< Number of backend ids. */
};

/**
 * Target the calling process.  Zero, so that a zero-filled options struct
 * means "self".  (A pidfd that happens to be descriptor 0 must be dup()ed.)
 */
#define THP_SELF 0

/** @name Flags for thp_apply_opts.flags and thp_apply_all_opts.flags */
/**@{*/
/** Best effort: go on past failures; implies THP_F_NO_ERROR_ON_UNMAPPED. */
#define THP_F_SKIP_ERRORS (1u << 0)
/** Unmapped gaps inside a range are not errors (other errors still stop). */
#define THP_F_NO_ERROR_ON_UNMAPPED (1u << 1)
/**@}*/

/** One range of virtual addresses in the target process. */
struct thp_range {
	uint64_t addr; /**< Start; must be page aligned. */
	uint64_t len;  /**< Length in bytes; rounded up to whole pages, as madvise() does. */
};

/**
 * What happened to one requested range (thp_apply_ranges()) or one failed
 * mapping (thp_apply_all()).  Fixed layout; the reserved words are zero.
 *
 * THP_ADVICE_COLLAPSE works in extents: PMD-size blocks (2 MiB on x86-64,
 * thp_probe_info.pmd_size) aligned to their size.  The kernel collapses
 * only a whole extent inside the range and inside one mapping; the rest of
 * a range (an unaligned head or tail, an extent split between two mappings
 * or by a hole) is never collapsed, never counted and is no error.  For
 * COLLAPSE, bytes_advised is the bytes of the whole extents that are huge
 * after the call (collapsed by it or huge already), in the part of the
 * range before the failure (all of it with THP_F_SKIP_ERRORS, which goes on
 * with the next extent); fail_addr is the start of the first extent that
 * failed (of its part inside the range and the mapping), and error its
 * errno: EINVAL for an extent with no page populated or in a mapping that
 * can never be huge (e.g. MADV_NOHUGEPAGE), else as MADV_COLLAPSE says
 * (EAGAIN, EBUSY, ENOMEM).
 */
struct thp_report {
	uint64_t addr;           /**< Start of the range or mapping. */
	uint64_t len;            /**< Its length (page-rounded). */
	uint64_t bytes_advised;  /**< Bytes the advice was applied to without error (COLLAPSE: see above). */
	uint64_t bytes_unmapped; /**< Bytes of the range that no mapping covered, also after a stop. */
	uint64_t fail_addr;      /**< First address that failed (0 if none). */
	int32_t error;           /**< Positive errno of that failure, 0 if none; with attempted 0, the errno of the whole call's failure, 0 if an earlier range's stopped it. */
	uint32_t backend;        /**< enum thp_backend that did the work (0 if the call was refused before choosing one). */
	uint32_t attempted;      /**< 1 if the range was reached; 0 if not (nothing of it is counted): see error. */
	uint32_t reserved0;      /**< Zero. */
	uint64_t reserved[2];    /**< Zero. */
};

/** Options for thp_apply_ranges(). */
struct thp_apply_opts {
	uint64_t sz;                /**< sizeof(struct thp_apply_opts) */
	int32_t pidfd;              /**< Target process: THP_SELF or a pidfd. */
	int32_t advice;             /**< enum thp_advice. */
	uint32_t flags;             /**< THP_F_* flags. */
	uint32_t backend;           /**< enum thp_backend; 0 = auto. */
	/** Optional: one entry per range, filled in. */
	THP_PTR64(struct thp_report *, reports);
	uint32_t backend_used;      /**< Out: the backend that did the work. */
	uint32_t reserved0;         /**< Zero. */
};
/** Size of the first published struct thp_apply_opts. */
#define THP_APPLY_OPTS_SIZE_VER0 40

/**
 * Apply THP advice to a vector of ranges of one process.
 *
 * Default mode stops at the first range that fails; an unmapped gap inside a
 * range is an error (ENOMEM) as in madvise(), but the mapped parts of that
 * range are still advised and reported.  THP_F_SKIP_ERRORS goes on past
 * failures; THP_F_NO_ERROR_ON_UNMAPPED ignores gaps only.
 *
 * For HUGE and NOHUGE the happy path is one system call (two when a range
 * passes the kernel's 2 GiB-per-call limit); mappings are walked only to
 * explain a failure.  COLLAPSE goes one PMD-size extent per call through
 * the mapping walk, so that a report says which extents became huge and
 * which one failed (the kernel's own multi-extent call does not).
 * Advice for another process is limited by the kernel: mainline accepts only
 * THP_ADVICE_COLLAPSE there, so THP_ADVICE_HUGE / NOHUGE on another process
 * fail with -EOPNOTSUPP (see thp_strerror_detail()).
 *
 * Reports: when opts->reports is not NULL, all @p nr_ranges of them are
 * written on every return, whatever it is, so that none holds what it held
 * before the call.  Each report names its range (addr, page-rounded len) and:
 * - attempted 1: the range was reached; bytes_advised, bytes_unmapped,
 *   fail_addr and error (0 if none) say what happened to it;
 * - attempted 0, error 0: not reached, because an earlier range's failure
 *   stopped the call (default mode; that range's report has the error);
 * - attempted 0, error E: not done, because the call failed as a whole
 *   with -E: bad input (the range is still named: addr, and len rounded up
 *   unless that wraps), a refusal before any advice (-EOPNOTSUPP, -EBADF,
 *   -ESRCH, -ENOENT), or a target that exited or a /proc that
 *   could not be read part-way (the range it happened in may be partly
 *   advised; nothing of it is counted).  backend is 0 when the call was
 *   refused before it chose one, as is opts->backend_used.
 * The exception: input that does not say where the reports are or how many
 * (opts NULL, opts->sz not accepted, @p nr_ranges above THP_MAX_RANGES)
 * fails with -EINVAL and writes nothing.
 *
 * @param ranges    Array of @p nr_ranges ranges (may be NULL if 0).
 * @param nr_ranges Number of ranges, at most THP_MAX_RANGES.
 * @param opts      Options; must not be NULL.
 * @return Number of ranges advised completely without error (== nr_ranges
 *         unless THP_F_SKIP_ERRORS), or a negative errno:
 *         -EINVAL bad advice, flags, alignment, wrapping range, NULL pointer,
 *         size below VER0; -E2BIG non-zero unknown tail; -EBADF bad pidfd;
 *         -ESRCH target exited (also during the call, whatever the flags);
 *         -ENOENT /proc not mounted (the detail names the missing path);
 *         -EOPNOTSUPP advice/backend not possible for
 *         this target; -ENOMEM a gap (default mode); any errno the kernel
 *         returned for the first failing mapping (default mode).
 */
THP_API int thp_apply_ranges(const struct thp_range *ranges, size_t nr_ranges,
			     struct thp_apply_opts *opts);

/** Largest nr_ranges accepted by thp_apply_ranges(). */
#define THP_MAX_RANGES (1u << 20)

/** Options and results of thp_apply_all(). */
struct thp_apply_all_opts {
	uint64_t sz;                 /**< sizeof(struct thp_apply_all_opts) */
	int32_t pidfd;               /**< Target process: THP_SELF or a pidfd. */
	int32_t advice;              /**< enum thp_advice. */
	uint32_t flags;              /**< THP_F_* flags (gaps never count as errors here). */
	uint32_t backend;            /**< enum thp_backend; 0 = auto. */
	/** Optional array for the mappings that failed. */
	THP_PTR64(struct thp_report *, failures);
	uint64_t failures_cap;       /**< Entries available in @ref failures. */
	/* Results. */
	uint64_t failures_needed;    /**< Out: number of mappings that failed. */
	uint64_t mappings_seen;      /**< Out: mappings found in the address space. */
	uint64_t mappings_advised;   /**< Out: mappings advised without error. */
	uint64_t mappings_skipped;   /**< Out: failed mappings passed over (THP_F_SKIP_ERRORS). */
	uint64_t bytes_advised;      /**< Out: bytes advised without error (COLLAPSE: huge, as in struct thp_report, failed mappings included). */
	uint32_t backend_used;       /**< Out: the backend that did the work. */
	uint32_t reserved0;          /**< Zero. */
};
/** Size of the first published struct thp_apply_all_opts. */
#define THP_APPLY_ALL_OPTS_SIZE_VER0 88

/**
 * Apply THP advice to every mapping of one process.
 *
 * Gaps between mappings are never errors.  Without THP_F_SKIP_ERRORS the
 * walk stops at the first mapping that fails.  Only failed mappings are
 * reported in @c failures (at most failures_cap; failures_needed says how
 * many there were).
 *
 * The results (failures_needed, mappings_seen, mappings_advised,
 * mappings_skipped, bytes_advised, backend_used) are written on every
 * return unless opts is NULL or opts->sz is not accepted: a call that
 * fails before the walk (bad input, a refusal) leaves them all 0.  Of
 * @c failures, only the first min(failures_needed, failures_cap) entries
 * are written; the others keep what they held.
 *
 * @param opts Options and results; must not be NULL.
 * @return Number of mappings advised without error, or a negative errno as
 *         for thp_apply_ranges().  A target that exits during the walk is
 *         -ESRCH even with THP_F_SKIP_ERRORS.
 */
THP_API int thp_apply_all(struct thp_apply_all_opts *opts);

/** Process-wide default THP policy. */
enum thp_policy {
	THP_POLICY_SYSTEM = 0, /**< Follow /sys/kernel/mm/transparent_hugepage/enabled. */
	THP_POLICY_HUGE = 1,   /**< New mappings default to MADV_HUGEPAGE. */
	THP_POLICY_NOHUGE = 2, /**< THP only where advised (MADV_HUGEPAGE). */
	THP_POLICY_NEVER = 3,  /**< No THP at all. */
	THP_POLICY_COUNT       /**< Number of policies. */
};

/** @name Flags for thp_default_opts.flags */
/**@{*/
/** Fail with -EOPNOTSUPP rather than apply a policy that does not survive fork()/exec(). */
#define THP_DEFAULT_F_REQUIRE_PERSISTENT (1u << 0)
/** Do not advise existing mappings; only set the default for new ones. */
#define THP_DEFAULT_F_NO_EXISTING (1u << 1)
/**
 * The caller declares that the running kernel implements the RFC
 * PR_SET_THP_POLICY prctl with the numbers in prctl_set / prctl_get.
 * Without it (or the build option) libthp never issues those prctls: on
 * mainline 78 is PR_FUTEX_HASH and 79 PR_RSEQ_SLICE_EXTENSION.  Numbers up
 * to 81 (the last mainline prctl in 7.2) other than the RFC's 78/79 are
 * -EINVAL, and the get number must answer as PR_GET_THP_POLICY before any set.
 */
#define THP_DEFAULT_F_RFC_PRCTL (1u << 2)
/**@}*/

/** Options and results of thp_set_default() / thp_get_default(). */
struct thp_default_opts {
	uint64_t sz;           /**< sizeof(struct thp_default_opts) */
	int32_t pidfd;         /**< Target: THP_SELF, or a pidfd (set: THP_BACKEND_INJECT only). */
	uint32_t policy;       /**< In (set) / out (get): enum thp_policy. */
	uint32_t flags;        /**< THP_DEFAULT_F_* flags. */
	uint32_t backend;      /**< enum thp_backend; 0 = auto. */
	int32_t prctl_set;     /**< With THP_DEFAULT_F_RFC_PRCTL: PR_SET_THP_POLICY number (0 = 78). */
	int32_t prctl_get;     /**< With THP_DEFAULT_F_RFC_PRCTL: PR_GET_THP_POLICY number (0 = 79). */
	/* Results. */
	uint32_t backend_used; /**< Out: the backend that set or explains the policy. */
	bool persistent;       /**< Out: the policy survives fork() and exec(). */
	uint8_t reserved0[3];  /**< Zero. */
	uint64_t mappings_changed; /**< Out (set): existing mappings advised. */
};
/** Size of the first published struct thp_default_opts. */
#define THP_DEFAULT_OPTS_SIZE_VER0 48

/**
 * Set the default THP policy of the calling process, inherited by children
 * and kept across exec() where the kernel can.  Another process (a pidfd)
 * only with backend THP_BACKEND_INJECT: NEVER, NOHUGE (6.18) and SYSTEM,
 * issued by the target itself while one of its threads is stopped with
 * ptrace; HUGE cannot persist there and fails with -EOPNOTSUPP.  Under libthp-preload.so it
 * also switches the preload and edits LD_PRELOAD / GLIBC_TUNABLES for
 * children (not thread-safe against concurrent environment use; see
 * thp_set_default(3)).
 * @param opts Options and results; must not be NULL.
 * @return 0, or a negative errno (-EOPNOTSUPP: policy cannot be set, or not
 *         persistently with THP_DEFAULT_F_REQUIRE_PERSISTENT).
 */
THP_API int thp_set_default(struct thp_default_opts *opts);

/**
 * Read the effective default policy of the calling process or, through a
 * pidfd, of another one (from /proc/PID/status).
 * For another process the kernel shows only whether THP is disabled
 * completely (NEVER); "system" and "nohuge" look the same from outside, so
 * that case fails with -EOPNOTSUPP rather than guess, unless backend is
 * THP_BACKEND_INJECT: then the process is made to call
 * prctl(PR_GET_THP_DISABLE) itself (as thp_set_default() does through that
 * backend), and the answer is exact.
 * A process that has libthp-preload.so loaded and switched on (started by
 * `thpctl run --policy huge`; the dynamic loader's list tells for the
 * calling process, /proc/PID/maps for another one)
 * reports THP_POLICY_HUGE, backend_used THP_BACKEND_PRELOAD and
 * persistent = true, since the preload is inherited through the
 * environment; unless THP is disabled completely, where NEVER wins.
 * @param opts Options and results (policy, backend_used, persistent).
 * @return 0, or a negative errno (-EBADF, -ESRCH, -EOPNOTSUPP; -ENOENT for a
 *         pidfd when /proc is not mounted).
 */
THP_API int thp_get_default(struct thp_default_opts *opts);

/** Entries of thp_probe_info.sizes. */
#define THP_PROBE_MAX_SIZES 16

/**
 * One folio size the kernel offers (a hugepages-SIZEkB directory, or the
 * PMD size alone on kernels without per-size controls).
 */
struct thp_size_info {
	uint64_t size;         /**< Bytes. */
	uint8_t enabled;       /**< Its "enabled" as written: enum thp_sysfs_mode (INHERIT too). */
	uint8_t mode;          /**< enabled with "inherit" resolved: ALWAYS, MADVISE, NEVER or UNKNOWN. */
	uint8_t shmem_enabled; /**< Its "shmem_enabled": enum thp_shmem_mode (UNKNOWN if absent). */
	/**
	 * True when a HUGE policy (a MADV_HUGEPAGE mapping, anonymous) can get
	 * this size: mode is ALWAYS or MADVISE.  PR_SET_THP_DISABLE covers
	 * every size, and the mapping must hold an aligned extent of the size.
	 */
	bool huge_policy;
	uint32_t reserved0;    /**< Zero. */
};

/** thp_probe_info.sizes_source values. */
enum thp_sizes_source {
	THP_SIZES_UNKNOWN = 0,   /**< sysfs absent or unreadable: no sizes. */
	THP_SIZES_PMD_ONLY = 1,  /**< No per-size controls (before 6.8): the PMD size, top-level mode. */
	THP_SIZES_PER_SIZE = 2,  /**< hugepages-SIZEkB directories (6.8+). */
};

/** thp_probe_info.defrag values (sysfs "defrag"). */
enum thp_defrag_mode {
	THP_DEFRAG_ALWAYS = 0,        /**< always */
	THP_DEFRAG_DEFER = 1,         /**< defer */
	THP_DEFRAG_DEFER_MADVISE = 2, /**< defer+madvise */
	THP_DEFRAG_MADVISE = 3,       /**< madvise */
	THP_DEFRAG_NEVER = 4,         /**< never */
	THP_DEFRAG_UNKNOWN = 5,       /**< absent or unreadable */
};

/** thp_probe_info.shmem_mode and thp_size_info.shmem_enabled values. */
enum thp_shmem_mode {
	THP_SHMEM_ALWAYS = 0,      /**< always */
	THP_SHMEM_WITHIN_SIZE = 1, /**< within_size */
	THP_SHMEM_ADVISE = 2,      /**< advise */
	THP_SHMEM_NEVER = 3,       /**< never */
	THP_SHMEM_DENY = 4,        /**< deny (top level only) */
	THP_SHMEM_FORCE = 5,       /**< force (top level only) */
	THP_SHMEM_INHERIT = 6,     /**< inherit (per size only) */
	THP_SHMEM_UNKNOWN = 7,     /**< absent or unreadable */
};

/** What the running kernel offers; filled by thp_probe(). */
struct thp_probe_info {
	uint64_t sz;                   /**< sizeof(struct thp_probe_info) */
	uint32_t backends;             /**< Bit (1u << enum thp_backend) per usable backend. */
	uint32_t thp_mode;             /**< sysfs "enabled": 0 always, 1 madvise, 2 never, 3 unknown/absent. */
	uint64_t pmd_size;             /**< PMD huge page size in bytes (0 if unknown). */
	int32_t pidfd_self;            /**< PIDFD_SELF value the kernel accepts, 0 if none. */
	bool procmap_query;            /**< PROCMAP_QUERY ioctl works. */
	bool pmadv_skip_errors;        /**< RFC PMADV_SKIP_ERRORS accepted. */
	bool pmadv_no_error_on_unmapped; /**< RFC PMADV_NO_ERROR_ON_UNMAPPED accepted. */
	bool pmadv_set_default;        /**< RFC PMADV_SET_FORK_EXEC_DEFAULT accepted. */
	bool pmadv_entire_address_space; /**< RFC PMADV_ENTIRE_ADDRESS_SPACE accepted. */
	bool process_madvise_self_huge; /**< process_madvise(self, MADV_HUGEPAGE) works (6.13+). */
	bool thp_disable_except_advised; /**< PR_THP_DISABLE_EXCEPT_ADVISED (6.18+). */
	bool madvise_collapse;         /**< MADV_COLLAPSE is known to the kernel. */
	uint32_t reserved0;            /**< Zero (the tail padding LP64 had implicitly). */
	/* Since 0.2 (THP_PROBE_INFO_SIZE_VER1): every folio size, sysfs settings. */
	uint32_t sizes_source;         /**< enum thp_sizes_source: where sizes[] came from. */
	uint32_t nr_sizes;             /**< Sizes the kernel offers (may exceed THP_PROBE_MAX_SIZES). */
	uint32_t defrag;               /**< sysfs "defrag": enum thp_defrag_mode. */
	uint32_t shmem_mode;           /**< sysfs "shmem_enabled": enum thp_shmem_mode. */
	/** khugepaged/ settings; THP_PROBE_UNKNOWN where absent or unreadable. */
	uint32_t khugepaged_pages_to_scan;
	uint32_t khugepaged_scan_sleep_millisecs; /**< See khugepaged_pages_to_scan. */
	uint32_t khugepaged_alloc_sleep_millisecs; /**< See khugepaged_pages_to_scan. */
	uint32_t khugepaged_max_ptes_none;   /**< See khugepaged_pages_to_scan. */
	uint32_t khugepaged_max_ptes_swap;   /**< See khugepaged_pages_to_scan. */
	uint32_t khugepaged_max_ptes_shared; /**< See khugepaged_pages_to_scan. */
	uint32_t khugepaged_defrag;          /**< 0 or 1; see khugepaged_pages_to_scan. */
	uint32_t reserved1;                  /**< Zero. */
	/** The first min(nr_sizes, THP_PROBE_MAX_SIZES) sizes, smallest first. */
	struct thp_size_info sizes[THP_PROBE_MAX_SIZES];
};
/** Size of the first published struct thp_probe_info. */
#define THP_PROBE_INFO_SIZE_VER0 40
/** Size of struct thp_probe_info with the folio sizes and sysfs settings (0.2). */
#define THP_PROBE_INFO_SIZE_VER1 344
/** A khugepaged_* value that could not be read. */
#define THP_PROBE_UNKNOWN UINT32_MAX

/** thp_probe_info.thp_mode values. */
enum thp_sysfs_mode {
	THP_MODE_ALWAYS = 0,  /**< always */
	THP_MODE_MADVISE = 1, /**< madvise */
	THP_MODE_NEVER = 2,   /**< never */
	THP_MODE_UNKNOWN = 3, /**< absent or unreadable */
	THP_MODE_INHERIT = 4, /**< inherit (thp_size_info.enabled only) */
};

/**
 * Report what this kernel offers.  Probing happens once per process
 * (thread-safe); the sysfs settings (modes, sizes, khugepaged) are re-read
 * on each call.  A caller with info->sz == THP_PROBE_INFO_SIZE_VER0 gets the
 * first fields only.
 * @param info Filled in; info->sz must be set.
 * @return 0, or a negative errno.
 */
THP_API int thp_probe(struct thp_probe_info *info);

/** THP state of one mapping, from /proc/PID/smaps. */
struct thp_mapping_state {
	uint64_t start;            /**< Mapping start. */
	uint64_t end;              /**< Mapping end (exclusive). */
	bool advised_huge;         /**< VmFlags has "hg" (VM_HUGEPAGE). */
	bool advised_nohuge;       /**< VmFlags has "nh" (VM_NOHUGEPAGE). */
	bool thp_eligible;         /**< THPeligible: 1. */
	bool anonymous;            /**< No backing file. */
	uint32_t reserved0;        /**< Zero. */
	uint64_t anon_huge_bytes;  /**< AnonHugePages in bytes. */
	uint64_t rss_bytes;        /**< Rss in bytes. */
	/**
	 * Path or [heap]/[stack]/..., truncated, NUL-terminated; "" if
	 * anonymous.  Chosen by the target process (any bytes but NUL and
	 * newline; the kernel shows a newline as "\012"): untrusted data,
	 * escape it before showing it.
	 */
	char name[64];
};

/** thp_query_opts.folio_source values. */
enum thp_folio_source {
	/**
	 * Not read: THP_QUERY_F_FOLIO_SIZES not given, or the caller cannot
	 * see page frame numbers (pagemap shows them only to CAP_SYS_ADMIN,
	 * and /proc/kpageflags is root's).  The byte figures are then 0: not
	 * known, never estimated.
	 */
	THP_FOLIO_SOURCE_NONE = 0,
	/** /proc/PID/pagemap for the frames, /proc/kpageflags for their folios. */
	THP_FOLIO_SOURCE_KPAGEFLAGS = 1,
};

/** Anonymous bytes in folios of one size. */
struct thp_folio_bytes {
	uint64_t size;  /**< Folio size in bytes. */
	uint64_t bytes; /**< Anonymous bytes mapped from folios of that size. */
};

/**
 * One mapping's anonymous bytes by folio size (thp_query_opts.folios):
 * bytes[i] is for the size thp_query_opts.sizes[i].size.
 */
struct thp_mapping_folios {
	uint64_t base_bytes;                   /**< In base pages. */
	uint64_t other_bytes;                  /**< In large folios of a size not listed. */
	uint64_t bytes[THP_PROBE_MAX_SIZES];   /**< In folios of each listed size. */
};

/** Options for thp_query(). */
struct thp_query_opts {
	uint64_t sz;                      /**< sizeof(struct thp_query_opts) */
	int32_t pidfd;                    /**< Target: THP_SELF or a pidfd. */
	uint32_t flags;                   /**< THP_QUERY_F_* flags. */
	uint64_t addr;                    /**< Only mappings overlapping [addr, addr+len) ... */
	uint64_t len;                     /**< ... when len != 0; all mappings when 0. */
	/** Optional output array. */
	THP_PTR64(struct thp_mapping_state *, states);
	uint64_t states_cap;              /**< Entries available in states. */
	uint64_t states_needed;           /**< Out: matching mappings. */
	/* Since 0.2: effective coverage over the matching mappings. */
	uint64_t anon_bytes;              /**< Out: anonymous memory resident (smaps Anonymous:). */
	uint64_t anon_huge_bytes;         /**< Out: of it, in huge pages (AnonHugePages:). */
	/**
	 * Out: what could be huge: the resident anonymous memory of private
	 * anonymous mappings not advised nohuge, each capped by the size of its
	 * whole 2 MiB-aligned extents (an upper bound; 0 when THP is disabled for
	 * the process).  anon_huge_bytes / anon_alignable_bytes is the coverage.
	 */
	uint64_t anon_alignable_bytes;
	/* Since 0.2 (THP_QUERY_OPTS_SIZE_VER2): bytes by folio size, with THP_QUERY_F_FOLIO_SIZES. */
	uint32_t folio_source;            /**< Out: enum thp_folio_source: where the figures below come from. */
	uint32_t nr_sizes;                /**< Out: entries of sizes[] filled (the sizes thp_probe() lists). */
	/**
	 * Optional output array, one entry per entry of states (states_cap
	 * of them): the same figures for each mapping.
	 */
	THP_PTR64(struct thp_mapping_folios *, folios);
	uint64_t anon_base_bytes;         /**< Out: anonymous bytes in base pages (order 0). */
	uint64_t anon_other_bytes;        /**< Out: in large folios of a size sizes[] does not list. */
	/**
	 * Out: as anon_alignable_bytes, but in whole extents of the smallest
	 * size a HUGE-advised mapping can get here (thp_size_info.huge_policy);
	 * 0 when no size can.  The coverage of a HUGE policy is the bytes of
	 * the huge_policy sizes over this.
	 */
	uint64_t anon_sized_alignable_bytes;
	/** Out: anonymous bytes mapped in folios of each size, smallest first. */
	struct thp_folio_bytes sizes[THP_PROBE_MAX_SIZES];
};
/** Size of the first published struct thp_query_opts. */
#define THP_QUERY_OPTS_SIZE_VER0 56
/** Size of struct thp_query_opts with the coverage totals (0.2). */
#define THP_QUERY_OPTS_SIZE_VER1 80
/** Size of struct thp_query_opts with the bytes by folio size (0.2). */
#define THP_QUERY_OPTS_SIZE_VER2 376

/**
 * thp_query_opts.flags: fill the VER2 fields (bytes by folio size) from
 * /proc/PID/pagemap and /proc/kpageflags.  Needs sz >= VER2.  Costs a
 * pagemap read of every matching mapping that holds anonymous memory.
 */
#define THP_QUERY_F_FOLIO_SIZES (1u << 0)

/**
 * Read per-mapping THP state (advised huge / nohuge, THPeligible,
 * AnonHugePages) from /proc/PID/smaps.
 *
 * AnonHugePages counts PMD-mapped memory only.  With
 * THP_QUERY_F_FOLIO_SIZES the anonymous memory of the matching mappings
 * is also counted by the size of the folio each page belongs to (every
 * size thp_probe() lists: 64 KiB folios as well as 2 MiB ones), from
 * /proc/PID/pagemap and /proc/kpageflags.  That needs CAP_SYS_ADMIN (page
 * frame numbers) and read access to /proc/kpageflags; without them
 * folio_source is THP_FOLIO_SOURCE_NONE and the figures are 0, and the call
 * still succeeds.  Pages that are swapped out or not present are in no
 * figure; a folio split while it is read may count at its old size.
 * @param opts Options and results.
 * @return Number of states written (min(states_needed, states_cap)), or a
 *         negative errno: -EINVAL bad flags (THP_QUERY_F_FOLIO_SIZES with sz
 *         below VER2), -EBADF, -ESRCH (also when the target exits while
 *         smaps is read: never a shorter list), -ENOENT /proc not mounted.
 */
THP_API int thp_query(struct thp_query_opts *opts);

/**
 * thp_collapse() flag: act on the target only if it is the caller's peer,
 * a process the caller's own user could read without privilege: its real,
 * effective and saved user and group IDs are the calling thread's
 * filesystem user and group IDs, and it is dumpable (not a set-user-ID,
 * set-group-ID or file-capability program, not made non-dumpable).
 * Otherwise -EPERM before anything is read or changed, the detail saying
 * which.  Checked at the start of the call, through the pidfd where the
 * kernel can (6.13+); before 6.16 a process running as root that made
 * itself non-dumpable cannot be told from a dumpable one.  For processes
 * reached by a rule or as part of a process tree, not named by an
 * operator.
 */
#define THP_COLLAPSE_F_PEER_ONLY (1u << 0)
/**
 * thp_collapse() flag: only the permission checks (the kernel's, and
 * THP_COLLAPSE_F_PEER_ONLY if given): 0 when the pass would be allowed,
 * nothing read beyond the target's credentials, no result field written.
 */
#define THP_COLLAPSE_F_CHECK_ONLY (1u << 1)

/** Options and results of thp_collapse(). */
struct thp_collapse_opts {
	uint64_t sz;                 /**< sizeof(struct thp_collapse_opts) */
	int32_t pidfd;               /**< Target process: THP_SELF or a pidfd. */
	uint32_t flags;              /**< THP_COLLAPSE_F_* flags. */
	/**
	 * Collapse a 2 MiB extent only when at least this many of its base
	 * pages are resident (1 .. pages per huge page); 0: follow the kernel's
	 * khugepaged/max_ptes_none (512 - 511 = 1 page by default).
	 */
	uint32_t min_present_pages;
	uint32_t reserved0;          /**< Zero. */
	uint64_t budget_bytes;       /**< Stop after collapsing this much; 0: no limit. */
	uint64_t budget_ns;          /**< Stop starting collapses after this long; 0: no limit. */
	/** Optional: one entry per extent the kernel refused. */
	THP_PTR64(struct thp_report *, failures);
	uint64_t failures_cap;       /**< Entries available in @ref failures. */
	/* Results. */
	uint64_t failures_needed;    /**< Out: extents the kernel refused. */
	uint64_t mappings_seen;      /**< Out: mappings read. */
	uint64_t mappings_eligible;  /**< Out: private anonymous mappings the pass may touch. */
	uint64_t mappings_nohuge;    /**< Out: private anonymous mappings left alone: advised nohuge. */
	uint64_t extents_collapsed;  /**< Out: 2 MiB extents collapsed by this call. */
	uint64_t extents_sparse;     /**< Out: extents left: fewer resident pages than the threshold. */
	uint64_t extents_failed;     /**< Out: extents the kernel refused (see failures). */
	uint64_t extents_over_budget; /**< Out: extents left for a later pass: budget spent. */
	uint64_t bytes_collapsed;    /**< Out: extents_collapsed in bytes. */
	uint64_t anon_bytes;         /**< Out: resident anonymous memory (smaps Anonymous:), before. */
	uint64_t anon_huge_before;   /**< Out: AnonHugePages before the pass. */
	uint64_t anon_huge_after;    /**< Out: AnonHugePages after the pass (measured again). */
	uint32_t thp_disabled;       /**< Out: 1: THP is disabled for the process; nothing was touched. */
	uint32_t reserved1;          /**< Zero. */
	uint64_t elapsed_ns;         /**< Out: time the pass took. */
	/* Since 0.2 (THP_COLLAPSE_OPTS_SIZE_VER1): large folios smaller than the PMD size. */
	/**
	 * Out: extents left alone because they hold large folios smaller than
	 * the PMD size while the PMD size is set to never (MADV_COLLAPSE would
	 * make a PMD-size folio all the same).
	 */
	uint64_t extents_small_folios;
	/**
	 * Out: of the extents the pass looked at (whole, resident, not
	 * PMD-mapped), the anonymous bytes in large folios smaller than the
	 * PMD size before the pass; 0 when folio_source is none, and 0 without
	 * a page read where the kernel counts no such folio (hugepages-SIZEkB/
	 * stats/nr_anon all 0, or no per-size controls before 6.8).
	 */
	uint64_t small_folio_bytes_before;
	/** Out: small_folio_bytes_before less the part the collapsed extents held. */
	uint64_t small_folio_bytes_after;
	uint32_t folio_source;       /**< Out: enum thp_folio_source of the two figures above. */
	uint32_t reserved2;          /**< Zero. */
	/* Since 0.2 (THP_COLLAPSE_OPTS_SIZE_VER2): memory shared with another process. */
	/**
	 * Leave an extent alone when more than this many of its resident base
	 * pages are mapped by another process too (a fork's copy-on-write
	 * pages, until one side writes): collapsing copies them, and the
	 * memory in use grows by the copy.  0: follow the kernel's
	 * khugepaged/max_ptes_shared (255 by default); the pages per huge page
	 * (512): no limit.
	 */
	uint32_t max_shared_pages;
	uint32_t reserved3;          /**< Zero. */
	/** Out: extents left alone: more shared pages than max_shared_pages. */
	uint64_t extents_shared;
};
/** Size of the first published struct thp_collapse_opts. */
#define THP_COLLAPSE_OPTS_SIZE_VER0 168
/** Size of struct thp_collapse_opts with the small-folio figures (0.2). */
#define THP_COLLAPSE_OPTS_SIZE_VER1 200
/** Size of struct thp_collapse_opts with the shared-page limit (0.2). */
#define THP_COLLAPSE_OPTS_SIZE_VER2 216

/**
 * One collapse pass over a process: what khugepaged does, driven from user
 * space through process_madvise(MADV_COLLAPSE), one 2 MiB extent at a time
 * (over a whole mapping the kernel stops at the first extent it cannot
 * collapse).
 *
 * MADV_COLLAPSE makes PMD-size folios only, whatever the per-size
 * settings say.  An extent holding smaller large folios (64 KiB, say) is
 * collapsed into one PMD-size folio like one in base pages, unless the PMD
 * size is set to never (per-size controls, 6.8+): then it is left alone
 * and counted in extents_small_folios, so that the pass does not override
 * that setting where the memory already has the large folios the policy
 * gets.  Extents of base pages only are collapsed as before.  That needs the folio sizes (CAP_SYS_ADMIN, /proc/kpageflags);
 * without them folio_source is none and such extents are collapsed as
 * before.  small_folio_bytes_before / _after count memory in smaller
 * large folios as such.
 *
 * Only private anonymous mappings ("", [heap], [stack], [anon:NAME]) that
 * are not advised nohuge are touched, and nothing at all when THP is
 * disabled for the process (PR_SET_THP_DISABLE); file, shared memory,
 * special and nohuge mappings never are.  Of those mappings, the whole
 * 2 MiB-aligned extents that are not huge yet, hold at least
 * min_present_pages resident pages and no more than max_shared_pages pages
 * mapped by another process too are collapsed, in address order, until
 * the budget is spent.  The shared pages are told by pagemap's
 * "exclusively mapped" bit; before 6.7 (no PAGEMAP_SCAN) pages of the
 * shared zero page are told apart only by a caller who can see page frames
 * and read kpageflags (root); for others they count as shared, and as
 * resident.  A caller whose struct is shorter
 * than THP_COLLAPSE_OPTS_SIZE_VER2 gets khugepaged's limit and no count.
 * Collapsing does not change contents.  Extents that
 * vanish or change while the pass runs are reported as refused, not fatal.
 * Before 6.7 (no PAGEMAP_SCAN) a caller without CAP_SYS_ADMIN cannot tell a
 * huge extent from a small one, and the kernel accepts MADV_COLLAPSE on
 * both: extents_collapsed then counts what the AnonHugePages of the
 * mappings it collapsed in gained (smaps, read whenever the byte budget
 * would stop the pass, and at its end).
 *
 * Another process needs the kernel's permission: ptrace read access (same
 * user, not a setuid program, or CAP_SYS_PTRACE) and CAP_SYS_NICE.  Without
 * it the call fails with -EPERM before anything is done, and
 * thp_strerror_detail() says which.  A caller with CAP_SYS_PTRACE (root)
 * reaches every process; THP_COLLAPSE_F_PEER_ONLY limits it to its peers.
 * Without that flag, what the caller names is the caller's choice.
 * A caller that does not know the target's default policy must not run
 * this over a process whose policy is nohuge: on mainline a nohuge default
 * (PR_THP_DISABLE_EXCEPT_ADVISED) is not visible from outside.
 *
 * @param opts Options and results; must not be NULL.
 * @return Number of extents collapsed (extents_collapsed, capped at
 *         INT_MAX), or a negative errno: -EINVAL bad options; -E2BIG
 *         non-zero unknown tail; -EBADF bad pidfd; -ESRCH target exited;
 *         -EPERM not allowed; -EOPNOTSUPP no process_madvise() or
 *         MADV_COLLAPSE in this kernel; -ENOMEM out of memory.
 */
THP_API int thp_collapse(struct thp_collapse_opts *opts);

/**
 * Name of a backend ("pmadv", "process_madvise", "madvise", ...), or
 * "unknown" for an out-of-range value.  Never NULL.
 */
THP_API const char *thp_backend_name(unsigned int backend);

/** Name of a policy ("system", "huge", "nohuge", "never"), or "unknown". */
THP_API const char *thp_policy_name(unsigned int policy);

/**
 * Message for a libthp error code (negative errno or positive errno),
 * including the libthp-specific meaning where there is one.  Never NULL.
 */
THP_API const char *thp_strerror(int err);

/**
 * Explain the most recent failure of a libthp call in the calling thread,
 * e.g. why the kernel cannot advise another process.  Never NULL; "" when
 * the last call succeeded.
 */
THP_API const char *thp_strerror_detail(void);

/**
 * Format one report entry as a single human-readable line into @p buf.
 * @return Characters that the full line needs (as snprintf()).
 */
THP_API int thp_report_format(const struct thp_report *r, char *buf, size_t len);

/** Library version as "MAJOR.MINOR.PATCH". */
THP_API const char *thp_version(void);

/*
 * The layout is the ABI on every architecture: a 32-bit program passes the
 * same bytes as a 64-bit one.  Sizes and the offsets after each pointer or
 * padding are pinned here, so a change that moves them does not compile.
 */
#if defined(__STDC_VERSION__) && __STDC_VERSION__ >= 201112L
#define THP_ASSERT_LAYOUT_(expr, msg) _Static_assert(expr, msg)
#elif defined(__cplusplus) && __cplusplus >= 201103L
#define THP_ASSERT_LAYOUT_(expr, msg) static_assert(expr, msg)
#endif
#ifdef THP_ASSERT_LAYOUT_
THP_ASSERT_LAYOUT_(sizeof(bool) == 1 && sizeof(int) == 4, "libthp needs a 1-byte bool and a 4-byte int");
THP_ASSERT_LAYOUT_(sizeof(struct thp_range) == 16, "struct thp_range layout");
THP_ASSERT_LAYOUT_(sizeof(struct thp_report) == 72 &&
		   offsetof(struct thp_report, error) == 40 &&
		   offsetof(struct thp_report, reserved) == 56, "struct thp_report layout");
THP_ASSERT_LAYOUT_(sizeof(struct thp_apply_opts) == THP_APPLY_OPTS_SIZE_VER0 &&
		   offsetof(struct thp_apply_opts, reports) == 24 &&
		   offsetof(struct thp_apply_opts, backend_used) == 32, "struct thp_apply_opts layout");
THP_ASSERT_LAYOUT_(sizeof(struct thp_apply_all_opts) == THP_APPLY_ALL_OPTS_SIZE_VER0 &&
		   offsetof(struct thp_apply_all_opts, failures) == 24 &&
		   offsetof(struct thp_apply_all_opts, failures_cap) == 32 &&
		   offsetof(struct thp_apply_all_opts, failures_needed) == 40 &&
		   offsetof(struct thp_apply_all_opts, backend_used) == 80, "struct thp_apply_all_opts layout");
THP_ASSERT_LAYOUT_(sizeof(struct thp_default_opts) == THP_DEFAULT_OPTS_SIZE_VER0 &&
		   offsetof(struct thp_default_opts, backend_used) == 32 &&
		   offsetof(struct thp_default_opts, persistent) == 36 &&
		   offsetof(struct thp_default_opts, mappings_changed) == 40, "struct thp_default_opts layout");
THP_ASSERT_LAYOUT_(sizeof(struct thp_size_info) == 16 &&
		   offsetof(struct thp_size_info, reserved0) == 12, "struct thp_size_info layout");
THP_ASSERT_LAYOUT_(sizeof(struct thp_probe_info) == THP_PROBE_INFO_SIZE_VER1 &&
		   offsetof(struct thp_probe_info, sizes_source) == THP_PROBE_INFO_SIZE_VER0 &&
		   offsetof(struct thp_probe_info, sizes) == 88 &&
		   offsetof(struct thp_probe_info, pmd_size) == 16 &&
		   offsetof(struct thp_probe_info, procmap_query) == 28 &&
		   offsetof(struct thp_probe_info, madvise_collapse) == 35, "struct thp_probe_info layout");
THP_ASSERT_LAYOUT_(sizeof(struct thp_mapping_state) == 104 &&
		   offsetof(struct thp_mapping_state, reserved0) == 20 &&
		   offsetof(struct thp_mapping_state, anon_huge_bytes) == 24 &&
		   offsetof(struct thp_mapping_state, name) == 40, "struct thp_mapping_state layout");
THP_ASSERT_LAYOUT_(sizeof(struct thp_folio_bytes) == 16 &&
		   sizeof(struct thp_mapping_folios) == 144, "struct thp_mapping_folios layout");
THP_ASSERT_LAYOUT_(sizeof(struct thp_query_opts) == THP_QUERY_OPTS_SIZE_VER2 &&
		   offsetof(struct thp_query_opts, folio_source) == THP_QUERY_OPTS_SIZE_VER1 &&
		   offsetof(struct thp_query_opts, folios) == 88 &&
		   offsetof(struct thp_query_opts, sizes) == 120 &&
		   offsetof(struct thp_query_opts, anon_bytes) == THP_QUERY_OPTS_SIZE_VER0 &&
		   offsetof(struct thp_query_opts, addr) == 16 &&
		   offsetof(struct thp_query_opts, states) == 32 &&
		   offsetof(struct thp_query_opts, states_cap) == 40 &&
		   offsetof(struct thp_query_opts, states_needed) == 48, "struct thp_query_opts layout");
THP_ASSERT_LAYOUT_(sizeof(struct thp_collapse_opts) == THP_COLLAPSE_OPTS_SIZE_VER2 &&
		   offsetof(struct thp_collapse_opts, max_shared_pages) ==
			   THP_COLLAPSE_OPTS_SIZE_VER1 &&
		   offsetof(struct thp_collapse_opts, extents_small_folios) ==
			   THP_COLLAPSE_OPTS_SIZE_VER0 &&
		   offsetof(struct thp_collapse_opts, budget_bytes) == 24 &&
		   offsetof(struct thp_collapse_opts, failures) == 40 &&
		   offsetof(struct thp_collapse_opts, failures_cap) == 48 &&
		   offsetof(struct thp_collapse_opts, thp_disabled) == 152 &&
		   offsetof(struct thp_collapse_opts, elapsed_ns) == 160, "struct thp_collapse_opts layout");
#undef THP_ASSERT_LAYOUT_
#endif

#ifdef __cplusplus
}
#endif

#endif /* THP_THP_H */
