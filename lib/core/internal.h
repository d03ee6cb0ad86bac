/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Types shared inside libthp; nothing here is exported. */
#ifndef THP_INTERNAL_H
#define THP_INTERNAL_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "thp/thp.h"
#include "line_reader.h"
#include "report.h"

#define THP_HIDDEN __attribute__((visibility("hidden")))

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* ---- opts.c: extensible struct rules (size is the version) ---- */

/*
 * Check a caller's options struct: sz >= ver0, and every byte past
 * @known that the caller's larger struct carries is zero.
 * Returns 0, -EINVAL or -E2BIG.
 */
int opts_check(const void *opts, size_t known, size_t ver0);
/* True if the caller's struct is long enough to hold the member. */
#define OPTS_HAS(opts, member)                                             \
	((opts)->sz >= offsetof(__typeof__(*(opts)), member) +             \
			       sizeof((opts)->member))

/* ---- caps.c: what the kernel offers, probed once per process ---- */

struct thp_caps {
	size_t page_size;
	uint64_t pmd_size;
	bool process_madvise;        /* the syscall exists */
	bool pm_self_any_advice;     /* process_madvise(self, MADV_HUGEPAGE) (6.13+) */
	bool pmadv_skip_errors;
	bool pmadv_no_error_on_unmapped;
	bool pmadv_set_default;
	bool pmadv_entire;
	int pidfd_self;              /* 0 when the kernel has no PIDFD_SELF */
	bool thp_disable;            /* PR_SET_THP_DISABLE: caps_get_prctl() only */
	bool thp_disable_except_advised;
	bool madvise_collapse;
};

const struct thp_caps *caps_get(void);
/*
 * caps_get() with thp_disable* probed too.  The probe sets and restores
 * the process's PR_SET_THP_DISABLE state: only the default-policy calls
 * and thp_probe() ask for it, never a range call.
 */
const struct thp_caps *caps_get_prctl(void);
/*
 * PROCMAP_QUERY on /proc/PID/maps (6.11+): 1 yes, 0 no, -1 not known yet.
 * Learnt only from the kernel's answer to the ioctl, never from a failure
 * to open the file (EMFILE would otherwise stick for the process's life).
 */
int caps_procmap_query(void);
/*
 * Learn from @r, a PROCMAP_QUERY ioctl's result: returns 0 when it says
 * the kernel has no such ioctl (ENOTTY, EINVAL), else 1.
 */
int caps_procmap_query_answer(long r);
/* caps_procmap_query() answered now: asked on a fresh descriptor if not known yet. */
bool caps_procmap_query_now(void);
/* The PMD size, read again now if it was unreadable at the first probe. */
uint64_t caps_pmd_size_now(void);

/* ---- probe.c: thp_probe() and the sysfs THP settings, read each time ---- */

/* Current sysfs THP mode (enum thp_sysfs_mode). */
unsigned int probe_sysfs_mode(void);
/* thp_probe()'s mode, PMD size and folio sizes only (thp_query(), thp_collapse()). */
void probe_folio_sizes(struct thp_probe_info *info);

/* ---- target.c: which process a request is for ---- */

struct thp_target {
	bool self;
	pid_t pid;        /* 0 for self: /proc/self is used */
	int pidfd;        /* usable with process_madvise(), -1 if none */
	bool owns_pidfd;  /* we opened it and must close it */
};

/*
 * Validate @pidfd (THP_SELF or a pidfd) and fill @t.  -EBADF / -ESRCH, or
 * -ENOENT when /proc is not mounted (the detail names the missing path).
 */
int target_open(int pidfd, struct thp_target *t);
void target_close(struct thp_target *t);
/* Make sure t->pidfd is usable with process_madvise() (opens one for self if needed). */
int target_need_pidfd(struct thp_target *t);
/* -ESRCH if the target has exited (pidfd-based check, no pid reuse race). */
int target_alive(const struct thp_target *t);
/*
 * Open /proc/self/@file or /proc/PID/@file of @t for line_reader_next()
 * (proc/line_reader.c).  0 or -errno (the detail set; a remote target's
 * missing file is -ESRCH).
 */
int line_reader_open_proc(struct line_reader *lr, const struct thp_target *t,
			  const char *file);

/* ---- validate.c: request checks done before any system call ---- */

int validate_advice(int advice);
/* Flags within @allowed and a known backend id.  0 or -EINVAL. */
int validate_flags_backend(uint32_t flags, uint32_t allowed, uint32_t backend);
/*
 * 0 or -EINVAL.  *as_vector: every length is a non-zero multiple of the
 * page size, so the array itself can be the system call's vector
 * (apply_ctx.ranges_are_iovecs); *total: the bytes of all ranges, or 0
 * if their sum does not fit a system call's return.
 */
int validate_ranges(const struct thp_range *ranges, size_t n, size_t page_size,
		    bool *as_vector, uint64_t *total);
/* Page-rounded length of a validated range.  Inline: the engine takes it per range. */
static inline uint64_t range_len(const struct thp_range *r, size_t page_size)
{
	return (r->len + page_size - 1) & ~((uint64_t)page_size - 1);
}

/* ---- backends: one file each, one ops table entry each ---- */

struct thp_backend_ops {
	enum thp_backend id;
	const char *name;
	/* Can this backend apply @advice to @t on this kernel? 0 or -errno. */
	int (*can_apply)(const struct thp_caps *c, const struct thp_target *t,
			 int advice);
	/*
	 * Apply @advice to the vector, strictly (stop at the first failure
	 * or gap).  Returns the bytes advised from the start of the vector
	 * (may be short of the total: the caller continues from there), or
	 * -errno when nothing could be advised.  Like process_madvise().
	 */
	long (*apply_vec)(const struct thp_target *t, const struct iovec *iov,
			  size_t n, int advice);
	/*
	 * Optional: advise the whole address space in one call, skipping
	 * errors.  Returns >= 0 when every mapping was advised, 1 when some
	 * failed (the caller then finds which), or -errno.
	 */
	int (*apply_entire)(const struct thp_target *t, int advice);
};

/*
 * The engine may pass a caller's struct thp_range array as the vector
 * (same layout on LP64, RANGES_ARE_IOVECS below): backends read the vector in
 * C through this copy of struct iovec, which may alias it.
 */
typedef struct __attribute__((may_alias)) {
	void *iov_base;
	size_t iov_len;
} iovec_alias;

/* Shared by the two process_madvise() backends. */
int backend_process_madvise_check(const struct thp_caps *c, const struct thp_target *t, int advice);
long backend_process_madvise_vec(const struct thp_target *t, const struct iovec *iov,
			 size_t n, int advice);

extern const struct thp_backend_ops backend_pmadv_ops;
extern const struct thp_backend_ops backend_process_madvise_ops;
extern const struct thp_backend_ops backend_madvise_ops;
/* Only when forced: backend_select() never lets AUTO pick it. */
extern const struct thp_backend_ops backend_inject_ops;

/*
 * Pick the range backend for @t/@advice: @want (forced) or the best
 * available.  Returns NULL and sets *err when none can do it.
 */
const struct thp_backend_ops *backend_select(unsigned int want,
					     const struct thp_target *t,
					     int advice, int *err);
/* The AUTO backend already learnt for the own process and @advice, or NULL. */
const struct thp_backend_ops *backend_select_auto_learnt(int advice);

/* ---- vma_walk.c: enumerate mappings (PROCMAP_QUERY, text fallback) ---- */

struct thp_vma {
	uint64_t start, end;
};

/*
 * /proc/PID/smaps one mapping at a time, in address order (smaps.c).  The
 * kernel formats every entry it is asked for (page table walks for Rss):
 * stop reading as soon as the rest is not needed.
 */
/* What smaps says beyond struct thp_mapping_state (for the collapse pass). */
struct smaps_extra {
	uint64_t anon_bytes; /* Anonymous: */
	bool shared;         /* perms "s" */
	bool file;           /* an inode backs it */
	bool special;        /* VmFlags io or pf: no struct pages to collapse */
};

/* A mapping's range and advice: all that smaps_next_advice() reads. */
struct smaps_advice {
	uint64_t start, end;
	bool huge, nohuge; /* VmFlags hg, nh */
};

struct smaps_reader {
	struct line_reader lr;
	struct thp_mapping_state cur; /* the entry being read */
	struct smaps_extra cur_x;
	struct smaps_advice cur_advice; /* ...by smaps_next_advice() */
	bool have;
};

/*
 * 0 or -errno as line_reader_open_proc().  Reads through @buf (@cap bytes),
 * or through an allocated 64 KiB one when @buf is NULL.
 */
#define SMAPS_READ_SIZE (64 << 10)
int smaps_open(struct smaps_reader *sr, const struct thp_target *t, char *buf, size_t cap);
/* Read smaps text from @fd instead (the fuzz target). */
void smaps_reader_init(struct smaps_reader *sr, int fd);
/* 1 and the next mapping in @m, 0 at the end, or -errno. */
int smaps_next(struct smaps_reader *sr, struct thp_mapping_state *m);
/* smaps_next() plus the extra fields in @x. */
int smaps_next_x(struct smaps_reader *sr, struct thp_mapping_state *m, struct smaps_extra *x);
/*
 * As smaps_next(), reading only the header's range and the VmFlags line:
 * far fewer instructions an entry (thp_set_default()'s pass).  Not
 * to be mixed with smaps_next() on one reader.
 */
int smaps_next_advice(struct smaps_reader *sr, struct smaps_advice *a);
/*
 * A mapping of private anonymous memory: "", [heap], [stack] or [anon:NAME],
 * no file, not shared, not VM_IO/VM_PFNMAP.  Advice is not considered.
 */
bool smaps_private_anon(const struct thp_mapping_state *m, const struct smaps_extra *x);

struct thp_vma_walk {
	struct line_reader text; /* /proc/PID/maps; its fd also takes PROCMAP_QUERY */
	bool use_query;          /* PROCMAP_QUERY, else text parse */
	bool have_last;          /* text mode: @last is the last mapping read */
	struct thp_vma last;
	uint64_t asked;          /* text mode: the highest @addr asked since the start */
};

/*
 * @full: the caller will walk every mapping in order.  Parsing the maps
 * text is cheaper per mapping than one PROCMAP_QUERY ioctl each (measured:
 * doc/performance.md), while the ioctl wins for a few point look-ups.
 */
int vma_walk_open(struct thp_vma_walk *w, const struct thp_target *t, bool full);
/*
 * Next mapping that ends above @addr (the one covering it or the next one).
 * Returns 1 and fills @v, 0 at the end, -errno on failure.  Text mode reads
 * forward: the same @addr, a higher one, or one inside the mapping last
 * returned costs no more than the lines it skips; a lower one reads the
 * text again from its start.
 */
int vma_walk_next(struct thp_vma_walk *w, uint64_t addr, struct thp_vma *v);
void vma_walk_close(struct thp_vma_walk *w);
/* Parse one /proc/PID/maps line's range.  0 or -EINVAL. */
int vma_walk_parse_line(const char *line, size_t len, uint64_t *start, uint64_t *end);

/* ---- engine.c: the engine shared by every range backend ---- */

/*
 * On LP64 a struct thp_range is a struct iovec (u64 addr, u64 len against
 * void *, size_t): an array of page-multiple ranges goes to the kernel as
 * it is, without being copied into a vector first.
 */
#define RANGES_ARE_IOVECS                                                            \
	(sizeof(struct thp_range) == sizeof(struct iovec) &&                         \
	 offsetof(struct thp_range, addr) == offsetof(struct iovec, iov_base) &&     \
	 offsetof(struct thp_range, len) == offsetof(struct iovec, iov_len) &&       \
	 sizeof(void *) == sizeof(uint64_t) && sizeof(size_t) == sizeof(uint64_t))
_Static_assert(sizeof(void *) != 8 || RANGES_ARE_IOVECS,
	       "struct thp_range must have struct iovec's layout on LP64");

/* Outcome of advising one requested range in detail. */
struct range_outcome {
	uint64_t advised;
	uint64_t unmapped;
	uint64_t fail_addr;
	int error;            /* positive errno or 0 */
	bool gap_error;       /* error is only ENOMEM for gaps */
};

/*
 * Called once for every failing mapping found while detailing a range:
 * the mapping's part of the range [start, end), the first address that
 * failed in it and the errno.
 */
typedef void (*mapping_fail_fn)(void *arg, uint64_t start, uint64_t end, uint64_t fail_addr,
				int error);

struct apply_ctx {
	const struct thp_backend_ops *be;
	const struct thp_target *t;
	int advice;
	uint32_t flags;
	size_t page_size;
	uint64_t pmd_size;    /* COLLAPSE works in extents of this size */
	mapping_fail_fn on_fail;
	void *on_fail_arg;
	/*
	 * Optional: the mappings the caller has just walked, sorted, covering
	 * every range it passes.  A failing range is then explained from
	 * them instead of asking the kernel about each mapping again.
	 */
	const struct thp_vma *layout;
	size_t nr_layout;
	/* validate_ranges() found the ranges usable as the vector itself. */
	bool ranges_are_iovecs;
	uint64_t total_bytes; /* ...and what a whole success returns (0: unknown) */
};

/*
 * Open @pidfd's target and pick its backend into @ctx; 0 or -errno
 * (nothing open).  In backend_select.c.
 */
int backend_select_open(struct apply_ctx *ctx, struct thp_target *t, int pidfd, int advice,
			uint32_t flags, unsigned int backend);

/*
 * Apply to ranges[0..n) through ctx->be, reports optional.  Returns the
 * number of ranges without failure, or -errno (default mode, first failure).
 */
int apply_engine(const struct apply_ctx *ctx, const struct thp_range *ranges,
		 size_t n, struct thp_report *reports);

/* ---- report.c: the reports the engine and the public calls write ---- */

/* A report of range @r, nothing done yet. */
void report_init(struct thp_report *rep, const struct thp_range *r, size_t page_size,
		 unsigned int backend);
/* ranges[from, n) were not done: their reports say so, with @error (report.c). */
void reports_not_attempted(const struct apply_ctx *ctx, const struct thp_range *ranges,
			   size_t from, size_t n, struct thp_report *reports, int error);
/*
 * A call refused before its engine ran still writes every report and
 * backend_used (report.c says when it cannot).
 */
void reports_refused(const struct thp_range *ranges, size_t n, struct thp_apply_opts *opts,
		     int opts_err, int err);

/* ---- libthp-preload.so's control entry (preload/preload.c) ---- */

/*
 * int thp_preload_control(int op), exported by the preload and found with
 * dlsym(RTLD_DEFAULT): thp_set_default() switches the preload's advice off
 * and on.  Returns the state before the call (1 on, 0 off), -EINVAL for an
 * unknown op.  While off, the preload keeps a one-page mapping of a memfd
 * that /proc/PID/maps names THP_PRELOAD_OFF_MARK, which tells another
 * process's thp_get_default().
 */
#define THP_PRELOAD_CONTROL "thp_preload_control"
#define THP_PRELOAD_OFF_MARK "/memfd:thp-preload-off"
enum { THP_PRELOAD_QUERY = 0, THP_PRELOAD_OFF = 1, THP_PRELOAD_ON = 2 };

#endif /* THP_INTERNAL_H */
