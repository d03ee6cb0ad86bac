// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * What fresh mappings and new mms get by default: the probe mapping that
 * shows mm->def_flags, and the child processes that tell whether a default
 * survives fork() and exec().
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>

#include "compat.h"
#include "default.h"
#include "internal.h"
#include "syscall.h"

/*
 * VmFlags of a fresh anonymous mapping: shows mm->def_flags.  The mapping
 * goes below the libraries and the mmap() area (1 GiB: under a PIE
 * executable, above a non-PIE one's usual heap), where smaps lists it among
 * its first entries and thp_query() stops right after it; placed by the
 * kernel it would come after most mappings, each formatted first (tens of
 * milliseconds in a big process).  Only a free place is taken, and none
 * near NULL, where a concurrent stray pointer must still fault.
 */
int fresh_mapping_advice(bool *huge, bool *nohuge)
{
	static const uintptr_t low[] = { 0x40000000, 0x10000000, 0x1000000 };
	struct thp_mapping_state st;
	struct thp_query_opts q;
	size_t len = caps_get()->page_size;
	void *p = NULL;
	int r;

	/*
	 * Shared: a new private mapping next to one with the same flags is
	 * merged into it, and on the RFC kernels a merged one does not get
	 * the RFC prctl's policy (only a new VMA does), so the probe would
	 * read "no advice" wherever it lands beside such a mapping.  A shared
	 * anonymous mapping is never merged; it gets mm->def_flags and the
	 * policy as a private one does.
	 */
	for (size_t i = 0; i < ARRAY_LEN(low) && !p; i++)
		p = sys_mmap_anon_flags((void *)low[i], len, PROT_READ | PROT_WRITE, MAP_SHARED);
	if (!p)
		p = sys_mmap_anon_flags(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED);
	if (!p)
		return -ENOMEM;
	memset(&q, 0, sizeof(q));
	q.sz = sizeof(q);
	q.addr = (uintptr_t)p;
	q.len = len;
	q.states = &st;
	q.states_cap = 1;
	r = thp_query(&q);
	sys_munmap(p, len);
	if (r < 1)
		return r < 0 ? r : -EIO;
	*huge = st.advised_huge;
	*nohuge = st.advised_nohuge;
	return 0;
}

/*
 * Exit codes of the probe children below.  None is 0 or 1: a child that
 * ends any other way (exit(0) from code it should not have reached, a
 * failure path's 1) must read as "could not tell", never as an answer.
 */
enum { PROBE_YES = 0x59, PROBE_NO = 0x4e, PROBE_UNKNOWN = 0x55, PROBE_MIXED = 0x4d };

/*
 * The probe child's answer: 1, 0, -EOPNOTSUPP (PROBE_MIXED), or -errno
 * when it could not tell.
 */
static int probe_child_answer(pid_t pid)
{
	int st = pid < 0 ? pid : sys_wait_exit(pid);

	if (st < 0)
		return st;
	if (st == PROBE_MIXED)
		return -EOPNOTSUPP;
	return st == PROBE_YES ? 1 : st == PROBE_NO ? 0 : -EIO;
}

/* Fresh mappings get @advice, and not the opposite one too. */
bool only_advice(int advice, bool huge, bool nohuge)
{
	return advice == MADV_HUGEPAGE ? huge && !nohuge : nohuge && !huge;
}

/*
 * Does a new mm get @advice on fresh mappings?  fork() and exec() both
 * build theirs in mm_init(), which keeps only mm->def_flags &
 * VM_INIT_DEF_MASK: VM_NOHUGEPAGE alone in the posted RFC (its huge default
 * is lost), both flags in a kernel that keeps the cover letter's promise.
 * So a forked child's fresh mapping tells what an exec would keep.  For a
 * caller whose own fresh mappings get @advice.
 */
static int new_mm_child_answer(int advice)
{
	pid_t pid = sys_fork_raw();

	if (pid == 0) {
		bool huge = false, nohuge = false;

		if (fresh_mapping_advice(&huge, &nohuge))
			sys_exit_group(PROBE_UNKNOWN);
		sys_exit_group((advice == MADV_HUGEPAGE ? huge : nohuge) ? PROBE_YES : PROBE_NO);
	}
	return probe_child_answer(pid);
}

int new_mm_keeps_advice(int advice)
{
	int r = -EIO;

	/* A child that could not tell (its probe page or smaps read failed): once more. */
	for (int tries = 0; tries < 2 && r == -EIO; tries++)
		r = new_mm_child_answer(advice);
	return r;
}

/*
 * PMADV_SET_FORK_EXEC_DEFAULT on the calling process.  The kernel sets the
 * default with each vector entry it advises without error, and advises
 * what the entry covers: one scratch page, mapped for the call, so that no
 * mapping of the caller is touched here (PMADV_ENTIRE_ADDRESS_SPACE would
 * advise every one, those advised the other way and under
 * THP_DEFAULT_F_NO_EXISTING too); advise_existing() does the documented part.
 */
int pmadv_set_default(int advice)
{
	size_t len = sys_page_size();
	struct thp_target self;
	struct iovec one;
	long r;
	int err;

	err = target_open(THP_SELF, &self);
	if (!err)
		err = target_need_pidfd(&self); /* no PIDFD_SELF before 6.14 */
	if (err) {
		target_close(&self);
		return err;
	}
	one.iov_len = len;
	one.iov_base = sys_mmap_anon(NULL, len, PROT_READ | PROT_WRITE);
	if (!one.iov_base) {
		target_close(&self);
		return -ENOMEM;
	}
	r = sys_process_madvise(self.pidfd, &one, 1, advice, PMADV_SET_FORK_EXEC_DEFAULT);
	sys_munmap(one.iov_base, len);
	target_close(&self);
	return r < 0 ? (int)r : r == (long)len ? 0 : -EIO;
}

/*
 * The same for a caller that does not have the default yet: a child sets it
 * with PMADV in its copy of the mm first, so the caller stays untouched.
 * -EOPNOTSUPP when the child's fresh mappings then get the opposite advice
 * too: another default that PMADV cannot clear (an RFC PR_SET_THP_POLICY
 * default set without declaring the prctl) would stay mixed in.
 */
static int pmadv_default_persists(int advice)
{
	pid_t pid = sys_fork_raw();

	if (pid == 0) {
		bool huge = false, nohuge = false;
		int keeps;

		if (pmadv_set_default(advice) || fresh_mapping_advice(&huge, &nohuge))
			sys_exit_group(PROBE_UNKNOWN);
		if (!only_advice(advice, huge, nohuge))
			sys_exit_group(PROBE_MIXED);
		keeps = new_mm_keeps_advice(advice);
		sys_exit_group(keeps < 0 ? PROBE_UNKNOWN : keeps ? PROBE_YES : PROBE_NO);
	}
	return probe_child_answer(pid);
}

/*
 * Whether a new mm keeps a PMADV default depends on the kernel alone, but
 * only a probe from a clean state measures PMADV alone: an RFC prctl
 * default in force survives fork() by itself.  So the answer is kept only
 * when the caller's fresh mappings had no advice when it was learnt, and
 * used only from such a state; otherwise asked again (one or two child
 * processes).  A probe that could not tell (no fork, the caller reaps
 * children itself) answers "no" and is not kept.
 */
static _Atomic signed char pmadv_keeps_cache[2]; /* 0 unknown, 1 keeps, -1 not */

/* 1, 0, or -EOPNOTSUPP (mixed with another default, see pmadv_default_persists()). */
int pmadv_persists(int advice, bool clean)
{
	_Atomic signed char *slot = &pmadv_keeps_cache[advice == MADV_HUGEPAGE];
	signed char v = clean ? atomic_load_explicit(slot, memory_order_relaxed) : 0;
	int r;

	if (v)
		return v > 0;
	r = pmadv_default_persists(advice);
	if (r == -EOPNOTSUPP)
		return r;
	if (r < 0)
		return 0;
	if (clean)
		atomic_store_explicit(slot, r ? 1 : -1, memory_order_relaxed);
	return r;
}
