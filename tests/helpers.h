/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Shared helpers for the libthp Check tests: aligned mappings and smaps. */
#ifndef THP_TEST_HELPERS_H
#define THP_TEST_HELPERS_H

#include <check.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <thp/thp.h>

#define KiB (1024ULL)
#define MiB (1024ULL * 1024ULL)
#define GiB (1024ULL * MiB)
#define PMD_SZ (2 * MiB)

/* THP state of the mapping (VMA) that covers one address, from smaps. */
struct smaps_info {
	bool found;             /* a mapping covers the address */
	uint64_t start, end;    /* the mapping */
	bool hg, nh;            /* VmFlags hg (VM_HUGEPAGE) / nh (VM_NOHUGEPAGE) */
	int thp_eligible;       /* THPeligible: value, -1 if absent */
	uint64_t anon_huge;     /* AnonHugePages in bytes */
	uint64_t rss;           /* Rss in bytes */
	char perms[8];
	char vmflags[256];
};

/*
 * Read /proc/PID/smaps (pid 0: self) and fill @out for the mapping that
 * covers @addr.  Returns 0 (out->found tells whether one does) or -errno.
 */
int smaps_lookup(pid_t pid, uint64_t addr, struct smaps_info *out);

/* Mappings counted by smaps_count(), and those with VmFlags hg / nh. */
struct vma_counts {
	int vmas, hg, nh;
};

/*
 * Count the mappings of /proc/PID/smaps (pid 0: self) that lie wholly
 * inside [lo, hi), in one read; [vsyscall] (not a VMA of the mm) only with
 * @vsyscall.  Aborts the test when smaps is unreadable.
 */
void smaps_count(pid_t pid, uint64_t lo, uint64_t hi, bool vsyscall, struct vma_counts *c);

/* Convenience wrappers; abort the test (ck_abort) when smaps is unreadable. */
bool vma_hg(pid_t pid, uint64_t addr);
bool vma_nh(pid_t pid, uint64_t addr);
bool vma_mapped(pid_t pid, uint64_t addr);
uint64_t vma_anon_huge(pid_t pid, uint64_t addr);
/* The mapping at @addr exists and has neither hg nor nh (one smaps read). */
void assert_vma_unadvised(pid_t pid, uint64_t addr, const char *what);
/* Sum of AnonHugePages of every mapping overlapping [addr, addr+len). */
uint64_t range_anon_huge(pid_t pid, uint64_t addr, uint64_t len);

/* A process's anonymous memory and how much of it is huge (smaps, one read). */
struct anon_coverage {
	uint64_t anon;      /* Anonymous: of every mapping */
	uint64_t huge;      /* AnonHugePages: of every mapping */
	/*
	 * The 2 MiB-alignable part: Anonymous of each private anonymous
	 * mapping without nh, capped by its whole 2 MiB extents.
	 */
	uint64_t alignable;
	uint64_t nohuge_huge; /* AnonHugePages inside nh mappings (must stay 0) */
};
/* Fill @c for @pid; aborts the test when smaps is unreadable. */
void anon_coverage(pid_t pid, struct anon_coverage *c);

/*
 * mmap an anonymous private read/write region of @mib MiB whose start is
 * 2 MiB aligned (maps 4 MiB extra, then unmaps the slack on both sides so
 * there are unmapped gaps around it).  @flags are added to
 * MAP_PRIVATE|MAP_ANONYMOUS (e.g. MAP_NORESERVE).  Aborts the test on failure.
 */
void *map_aligned(size_t mib, int flags);

/* Write one byte into every 4 KiB page of [p, p+len). */
void touch_range(void *p, size_t len);

/* read_file(): a small file read whole, no allocation (tests/read_file.h). */
#include "read_file.h"

/* True when the environment variable CI is "true" (tests must not skip). */
bool in_ci(void);

/*
 * This process may read page frames: pagemap shows frame numbers
 * (CAP_SYS_ADMIN in CapEff, bit 21) and /proc/kpageflags is root's.
 */
bool page_frames_readable(void);

/* Read /sys/kernel/mm/transparent_hugepage/enabled: 0 always, 1 madvise, 2 never, 3 unknown. */
unsigned int sysfs_thp_mode(void);

/*
 * The bracketed word of a sysfs choice file ("always [madvise] never")
 * into @word: true, or false when the file is absent or has none.
 */
bool sysfs_bracketed(const char *path, char *word, size_t len);

/*
 * Fixture: fail clearly unless the THP sysfs mode is "madvise", which the
 * effect checks (no huge pages where nothing was advised) assume.
 */
void require_madvise_mode(void);
/* "" in madvise mode, else a note naming the current mode, for messages. */
const char *mode_note(void);

/* Raw madvise() that aborts the test on failure (for building layouts). */
void must_madvise(void *p, size_t len, int advice);
/* MADV_COLLAPSE for a test's setup, asked again while the kernel says EAGAIN. */
void must_collapse(void *p, size_t len);

/*
 * Run @s (CK_NORMAL) and free it; EXIT_SUCCESS unless a test failed.
 *
 * Tests that know where they are: test cases that need root (CAP_SYS_NICE
 * for another process's memory, uid changes, mount namespaces, writing the
 * THP sysfs file) carry the Check tag PRIVILEGED_TAG; meson runs them in
 * the "privileged" suite (CK_INCLUDE_TAGS, THP_TEST_PRIVILEGED=1) and
 * excludes them everywhere else (CK_EXCLUDE_TAGS).  Outside CI, a run
 * whose environment does not fit (a privileged run without root, or a
 * global THP mode other than madvise unless THP_TEST_ANY_MODE=1) prints
 * why and returns 77, meson's "skipped"; under CI=true it runs anyway and
 * fails if it must.
 */
#define PRIVILEGED_TAG "privileged"
int run_suite(Suite *s);

/*
 * The test environment.  Tests branch on these expectations, never on
 * thp_probe(), so that a probe that gets the kernel wrong still fails.
 *
 * under_valgrind(): THP_TEST_UNDER_VALGRIND=1, set by .ci/valgrind (the
 * `meson test --setup valgrind` wrapper).  Everything runs many times
 * slower there, and one thread at a time: iteration counts scale down
 * (scaled()), and threads racing the library must leave it a turn.
 *
 * expect_process_madvise() / expect_pidfd_self(): the host kernel (6.18)
 * has both.  No valgrind release knows process_madvise() (syscall 440: it
 * answers ENOSYS) and valgrind refuses the PIDFD_SELF pseudo-descriptor
 * with EBADF before the kernel sees it, so under valgrind the library must
 * behave exactly as on a kernel without either: madvise() for its own
 * process, -EOPNOTSUPP for another one.
 */
bool under_valgrind(void);
bool expect_process_madvise(void);
bool expect_pidfd_self(void);

/* thp_strerror_detail() of a request refused for want of process_madvise(). */
#define DETAIL_NO_PROCESS_MADVISE "this kernel has no process_madvise()"

/*
 * A call that needs process_madvise() on a kernel without it: @ret is
 * -EOPNOTSUPP, errno EOPNOTSUPP, and the detail says why.
 */
void assert_refused_no_process_madvise(int ret, const char *what);

/*
 * Run thp_apply_ranges(@r, @n <= 2, @o) on a kernel without
 * process_madvise(): it must be refused that way and write neither
 * o->reports (required) nor o->backend_used.  The caller checks the memory.
 */
void check_ranges_refused(const struct thp_range *r, size_t n, struct thp_apply_opts *o,
			  const char *what);
/* The same for thp_apply_all(@o): no counts, no failures, no backend_used. */
void check_all_refused(struct thp_apply_all_opts *o, const char *what);

/* What THP_BACKEND_AUTO must pick for HUGE/NOHUGE on the own process. */
uint32_t expected_self_backend(void);

/*
 * Run the test case (TCase) named @tcase of this program again in a child
 * exec()ed natively: valgrind does not follow exec() (--trace-children=no),
 * and the child is told it is not under valgrind.  For what cannot be
 * tested under valgrind (too many mappings for it, only one backend to
 * compare); aborts the test unless the child's run passes.
 */
void run_tcase_natively(const char *tcase);
/* Define test @fn, which runs TCase @tcase natively (run_tcase_natively()). */
#define NATIVE_TCASE_TEST(fn, tcase)                                       \
	START_TEST(fn)                                                     \
	{                                                                  \
		run_tcase_natively(tcase);                                 \
	}                                                                  \
	END_TEST

/*
 * Iterations for a loop whose native count is @native: a tenth (at least
 * @min) under valgrind, else @native.
 */
unsigned int scaled(unsigned int native, unsigned int min);

/* ---- seccomp: what a kernel or a caller would refuse ---- */

#include <linux/seccomp.h>
#ifndef SECCOMP_RET_KILL_PROCESS
#define SECCOMP_RET_KILL_PROCESS 0x80000000U
#endif

struct seccomp_rule {
	int nr;           /* system call number (native ABI) */
	int arg;          /* -1: every call; else only when args[arg]'s low 32 bits are @val */
	uint32_t val;
	uint32_t action;  /* SECCOMP_RET_KILL_PROCESS, SECCOMP_RET_ERRNO | errno, ... */
};

/*
 * Install a filter on this process (and what it forks): the first rule
 * that matches a call decides, other calls are allowed.  0 or -1 (errno).
 */
int seccomp_install(const struct seccomp_rule *rules, size_t n);

/* Make every ioctl(PROCMAP_QUERY) of this process fail with @err.  0 or -1 (errno). */
int fail_procmap_query(int err);
/* Make every ioctl(PAGEMAP_SCAN) of this process fail with ENOTTY, as before 6.7. */
int fail_pagemap_scan(void);
/*
 * fail_procmap_query(ENOTTY), as on every kernel before 6.11, so that
 * libthp walks the /proc/PID/maps text.  Done before main() when
 * THP_TEST_TEXT_WALK=1 (the *-textwalk tests): no hook in the library.
 */
int force_text_walk(void);

/* ---- Running a program and collecting what it printed ---- */

/* The value of environment variable @name (a path meson test sets), or fail. */
const char *env_path(const char *name);

struct run {
	int status;      /* exit code, or 128 + signal */
	char out[65536];
	char err[16384];
};

struct spawn_opts {
	const char *const *env; /* "NAME=value" to set, "NAME" to unset */
	uid_t uid;              /* drop to this uid/gid first when non-zero */
	int stdin_fd;           /* -1: /dev/null */
	int stdout_fd;          /* -1: a pipe collected into run.out */
};

/*
 * Start @argv (argv[0] a path) with a clean environment as far as THP goes
 * (no LD_PRELOAD, GLIBC_TUNABLES or THPCTL_PRELOAD from the test's own) plus
 * @o's changes; returns the pid, its stdout and stderr pipes in @out/@err
 * (@out is -1 when o->stdout_fd is used).
 */
pid_t spawn(char *const argv[], const struct spawn_opts *o, int *out, int *err);
/* Read both pipes to their end (or 60 s of silence) into @r, truncating. */
void collect(int out_fd, int err_fd, struct run *r);
/* waitpid() for @pid: its exit code, or 128 + signal. */
int wait_status(pid_t pid);
/* spawn() + collect() + wait_status(); @o NULL: stdin /dev/null, stdout collected. */
void run_cmd(struct run *r, const struct spawn_opts *o, char *const argv[]);

/* ---- A mapping name that forges /proc text ---- */

/*
 * libthp's line buffer (struct line_reader) and the line a reader that
 * drops only a line's first LONG_NAME_CUT bytes would take from the rest:
 * a 1 GiB mapping that does not exist.
 */
#define LONG_NAME_CUT 8192
#define LONG_NAME_FORGED_START 0x40000000ULL
#define LONG_NAME_FORGED_LINE "40000000-80000000 rw-p 00000000 00:00 0 FORGED"

/*
 * A child (forked, paused) that maps one page of a file whose path, with
 * the kernel's escaping of newlines, puts LONG_NAME_FORGED_LINE at byte
 * LONG_NAME_CUT of the mapping's maps/smaps line.  The path's first
 * component holds ESC, BEL, DEL, a C1 control and bytes that are not UTF-8.
 */
struct long_name_child {
	pid_t pid;
	uint64_t start, end; /* the real mapping */
};

void long_name_child_start(struct long_name_child *c);
/* SIGKILL and reap. */
void long_name_child_stop(struct long_name_child *c);

#endif
