// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The capability cache (caps_*): what the kernel offers, probed in the
 * process itself and never in a child.  The base probe runs once per
 * process (pthread_once) and is free of side effects: unknown
 * process_madvise() flags are probed with a bad pidfd (EBADF means the flag
 * passed the flags check, EINVAL that it did not).  Two answers are learnt
 * on first need instead: PR_SET_THP_DISABLE support (caps_get_prctl(),
 * only for the default-policy calls and thp_probe(): a range call never
 * touches the process's prctl state), and PROCMAP_QUERY (from the first
 * walk's own ioctl, so a failure to open /proc/self/maps under EMFILE is
 * never taken for "no").  thp_probe() and the sysfs settings read anew on
 * each call are probe.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
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
	static const int candidates[] = { THP_PIDFD_SELF_PROCESS_NEW, THP_PIDFD_SELF_PROCESS_OLD,
					  THP_PIDFD_SELF_THREAD };

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
bool caps_procmap_query_now(void)
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

uint64_t caps_pmd_size_now(void)
{
	uint64_t pmd = caps_get()->pmd_size;

	/* 0: sysfs was unreadable at the first call (EMFILE?); not kept. */
	return pmd ? pmd : read_u64_file("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size");
}
