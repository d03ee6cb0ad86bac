// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * thp_model's policy sequences: the kernel's default-policy behaviour
 * measured, then each set/get call checked.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sys/prctl.h>

#include "checker.h"

/* THP_enabled: of truth_pid's /proc/PID/status, -1 when the kernel has no such line. */
int status_thp_enabled(void)
{
	char buf[8192], path[40] = "/proc/self/status";
	const char *p;

	if (truth_pid)
		snprintf(path, sizeof(path), "/proc/%d/status", (int)truth_pid);
	if (read_file(path, buf, sizeof(buf)) <= 0)
		return -1;
	p = strstr(buf, "THP_enabled:");
	return p ? atoi(p + 12) : -1;
}

char *self_exe_path;

/* ---- default policies: the kernel measured, then the sequence ---- */

struct model_kernel kern;
struct model_policy_state start_state;

/* A mapping's advice as the model writes it (MODEL_HG | MODEL_NH). */
static unsigned int vma_advice(const struct vma *v)
{
	return (v->hg ? MODEL_HG : 0) | (v->nh ? MODEL_NH : 0);
}

/*
 * The advice a fresh mapping gets now (MODEL_HG | MODEL_NH), or -1.  A
 * shared one: a private one next to a mapping with the same flags is merged
 * into it, and on the RFC kernels a merged mapping misses the prctl's
 * policy (the kernel applies it to new VMAs only).
 */
static int fresh_advice(void)
{
	void *p = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	const struct vma *v;
	int r = -1;

	if (p == MAP_FAILED)
		return -1;
	if (!snap_read(&snap) && (v = snap_at((uint64_t)(uintptr_t)p)))
		r = (int)vma_advice(v);
	munmap(p, page);
	return r;
}

/* What a child says about the kernel, by its exit status (-1: it died). */
static int child_says(int (*fn)(void))
{
	pid_t pid = fork();
	int st;

	if (pid == 0)
		_exit(fn());
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st))
		return -1;
	return WEXITSTATUS(st);
}

/* 1 when a grandchild's fresh mapping gets a PMADV MADV_HUGEPAGE default. */
static int pmadv_huge_default_survives(void)
{
	int pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
	void *p = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct iovec one = { p, page };

	/* PMADV_SET_FORK_EXEC_DEFAULT (1 << 2): the default, and this page advised. */
	if (pidfd < 0 || p == MAP_FAILED ||
	    syscall(SYS_process_madvise, pidfd, &one, 1, MADV_HUGEPAGE, 1u << 2) != (long)page ||
	    fresh_advice() != MODEL_HG)
		return 2;
	return child_says(fresh_advice) == MODEL_HG;
}

/* 1 when the RFC's PR_SET_THP_POLICY (78) HUGE advises an existing mapping. */
static int rfc_prctl_advises_existing(void)
{
	void *p = mmap(NULL, 4 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	const struct vma *v;

	if (p == MAP_FAILED || prctl(78, 0 /* DEFAULT_HUGE */, 0, 0, 0) ||
	    snap_read(&snap) || !(v = snap_at((uint64_t)(uintptr_t)p)))
		return 2;
	return v->hg;
}

/* The RFC's PR_GET_THP_POLICY (79) answer as a policy; SYSTEM without the RFC. */
static uint32_t rfc_policy_now(void)
{
	long r = kern.rfc_prctl ? prctl(79, 0, 0, 0, 0) : 2;

	return r == 0 ? THP_POLICY_HUGE : r == 1 ? THP_POLICY_NOHUGE : THP_POLICY_SYSTEM;
}

/*
 * What the model needs to know about the kernel, measured with raw system
 * calls, and the state sequences start from.  An RFC prctl policy
 * inherited (vm_init may have set one) is cleared; a PMADV default cannot
 * be, so it is part of the start state.
 */
int measure_kernel(void)
{
	long g;

	kern.except_advised = pinfo.thp_disable_except_advised;
	kern.status_thp_enabled = status_thp_enabled() >= 0;
	kern.pmadv_default = pinfo.pmadv_set_default;
	if (kern.pmadv_default) {
		g = prctl(79, 0, 0, 0, 0);
		kern.rfc_prctl = g >= 0 && g <= 2;
		g = child_says(pmadv_huge_default_survives);
		if (g < 0 || g > 1)
			return -1;
		kern.new_mm_keeps_hg = g;
		if (kern.rfc_prctl) {
			g = child_says(rfc_prctl_advises_existing);
			if (g < 0 || g > 1)
				return -1;
			kern.prctl_advises = g;
			if (rfc_policy_now() != THP_POLICY_SYSTEM && prctl(78, 2, 0, 0, 0))
				return -1;
		}
	}
	start_state.disable = (int)prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0);
	start_state.rfc = THP_POLICY_SYSTEM;
	start_state.last_prctl = -1;
	g = fresh_advice();
	if (g < 0)
		return -1;
	start_state.def = (unsigned int)g;
	return 0;
}

/* --report-state: PR_GET_THP_DISABLE | fresh advice << 2, as an exec()ed child says it. */
int report_state(void)
{
	int f = fresh_advice();

	return f < 0 ? 64 : (int)prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0) | f << 2;
}

static int exec_report_state(void)
{
	char *argv[] = { self_exe_path, (char *)"--report-state", NULL };

	execv(self_exe_path, argv);
	return 65;
}

/* report_state() as a forked and as an exec()ed child of this process say it. */
void children_state(int *forked, int *execed)
{
	*forked = child_says(report_state);
	*execed = child_says(exec_report_state);
}

/* The state in a forked and an exec()ed child: what model_new_mm() says. */
static bool check_children(const struct model_policy_state *s)
{
	struct model_policy_state child;
	int want, forked, execed;

	children_state(&forked, &execed);

	model_new_mm(&kern, s, &child);
	want = child.disable | (int)model_fresh(&child) << 2;
	if (forked != want || execed != want)
		return diverge("policy: a forked child says disable %d fresh hg/nh %d, an exec()ed "
			       "one disable %d fresh %d; the model: disable %d fresh %d",
			       forked & 3, forked >> 2, execed & 3, execed >> 2, want & 3, want >> 2);
	return true;
}

/*
 * A sanitizer's runtime maps, unmaps and maps again memory of its own
 * (its allocator's regions) whenever it runs: under one, only the case's
 * arena and the probe mapping are the checker's to judge.  (Mappings that
 * appear during a call may have been advised by it in every build:
 * check_existing().)
 */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define UNDER_SANITIZER 1
#else
#define UNDER_SANITIZER 0
#endif

/* Under a sanitizer: [lo, hi) holds the case's mappings (remote.c: all the target's). */
uint64_t judged_lo, judged_hi;

/*
 * After a call: every mapping there before has the advice the model gives
 * it.  Returns false on a divergence; *appeared counts the mappings that
 * came with the call and carry @advises.  Not only a sanitizer's (above):
 * the library's own malloc() may create the heap during the call, which
 * thp_set_default() then advises and counts as the process's mapping it
 * is (posted-RFC seed 28,723, run after seeds 28,201-28,722: by then the
 * case's process had no heap, and the NOHUGE call reported 40 changed
 * with 39 unadvised before; the 40th was a new mapping with nh right
 * after the program, where the heap goes).
 */
bool check_existing(size_t step, unsigned int advises, uint64_t *appeared)
{
	*appeared = 0;
	if (snap_read(&snap))
		return diverge("cannot read smaps");
	for (size_t k = 0; advises && k < snap.n; k++) {
		const struct vma *w = &snap.v[k];
		bool old = w->vsyscall || overlaps_snapshot(&prev, w);

		*appeared += !old && vma_advice(w) == advises;
	}
	for (size_t k = 0; k < prev.n; k++) {
		const struct vma *v = &prev.v[k], *w = v->vsyscall ? NULL : snap_at(v->start);
		unsigned int want = vma_advice(v);

		if (!w || (UNDER_SANITIZER && (v->start < judged_lo || v->end > judged_hi)))
			continue;
		if (!want)
			want = advises;
		if (vma_advice(w) != want)
			return diverge("policy call %zu: the existing mapping at 0x%" PRIx64
				       " (hg=%d nh=%d before) has hg=%d nh=%d, the model %s", step,
				       v->start, v->hg, v->nh, w->hg, w->nh,
				       want == MODEL_HG ? "hg" : want == MODEL_NH ? "nh" : "no advice");
	}
	return true;
}

/*
 * For a divergence message: the mappings of @snap (after a call) that
 * @prev (before it) did not have with the same bounds, and those of @prev
 * gone or resized.
 */
static void changed_mappings(char *out, size_t cap)
{
	size_t len = 0;

	out[0] = 0;
	for (int pass = 0; pass < 2; pass++) {
		const struct snapshot *a = pass ? &prev : &snap, *b = pass ? &snap : &prev;

		for (size_t i = 0; i < a->n && len + 1 < cap; i++) {
			bool same = false;

			for (size_t k = 0; k < b->n && !same; k++)
				same = a->v[i].start == b->v[k].start && a->v[i].end == b->v[k].end;
			if (!same)
				len += (size_t)snprintf(out + len, cap - len, "%s%s 0x%" PRIx64 "-0x%"
							PRIx64 " hg=%d nh=%d",
							len ? "," : "; mappings",
							pass ? " gone/resized" : " new/resized",
							a->v[i].start, a->v[i].end, a->v[i].hg,
							a->v[i].nh);
		}
	}
	if (len >= cap)
		out[cap - 1] = 0;
}

bool run_policy(const struct case_spec *c, uint64_t arena_base)
{
	/* An existing mapping without advice, whatever the layout left. */
	char *probe_map = mmap(NULL, 4 * MiB, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct model_policy_state s = start_state;

	if (probe_map == MAP_FAILED)
		return diverge("mmap: %s", strerror(errno));
	judged_lo = (uint64_t)(uintptr_t)probe_map;
	judged_hi = judged_lo + 4 * MiB;
	if (arena_base) {
		judged_lo = arena_base < judged_lo ? arena_base : judged_lo;
		judged_hi = arena_base + c->arena_pages * page > judged_hi ?
			    arena_base + c->arena_pages * page : judged_hi;
	}
	for (size_t i = 0; i < c->nr_steps; i++) {
		const struct policy_step *st = &c->steps[i];
		THP_OPTS(thp_default_opts, o, .policy = st->policy, .flags = st->flags);
		struct model_policy_answer m;
		uint64_t n = 0, appeared, want_lo, want_hi;
		int ret, thp_enabled, fresh;
		long now;

		if (snap_read(&snap))
			return diverge("cannot read smaps");
		memcpy(prev.v, snap.v, snap.n * sizeof(*snap.v));
		prev.n = snap.n;
		/* thp_set_default(3): existing mappings that carry no advice yet. */
		for (size_t k = 0; k < snap.n; k++)
			n += !snap.v[k].vsyscall && !snap.v[k].hg && !snap.v[k].nh;
		ret = st->set ? thp_set_default(&o) : thp_get_default(&o);
		model_policy_step(&kern, &s, st->set, st->policy, st->flags, &m);
		if (!check_existing(i, m.advises_existing, &appeared))
			return false;
		want_lo = m.advises_existing ? n : 0;
		want_hi = m.advises_existing ? n + appeared : 0;
		if (ret != m.ret || (!ret && (o.backend_used != m.backend_used ||
					      o.persistent != m.persistent ||
					      (!st->set && o.policy != m.policy) ||
					      (st->set && (o.mappings_changed < want_lo ||
							   o.mappings_changed > want_hi))))) {
			char moved[400];

			changed_mappings(moved, sizeof(moved));
			return diverge("policy call %zu (%s %s flags 0x%x): library ret %d policy %s "
				       "backend %s persistent %d changed %" PRIu64 "; model ret %d "
				       "policy %s backend %s persistent %d changed %" PRIu64 " (%s)%s",
				       i, st->set ? "set" : "get", thp_policy_name(st->policy),
				       st->flags, ret, thp_policy_name(o.policy),
				       thp_backend_name(o.backend_used), o.persistent,
				       o.mappings_changed, m.ret, thp_policy_name(m.policy),
				       thp_backend_name(m.backend_used), m.persistent,
				       m.advises_existing ? n : 0, thp_strerror_detail(), moved);
		}
		now = prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0);
		if (now != s.disable)
			return diverge("policy call %zu: PR_GET_THP_DISABLE %ld, the model %d", i, now,
				       s.disable);
		thp_enabled = status_thp_enabled();
		if (thp_enabled >= 0 && thp_enabled != (s.disable != MODEL_THP_DISABLED))
			return diverge("policy call %zu: THP_enabled: %d with PR_GET_THP_DISABLE %d",
				       i, thp_enabled, s.disable);
		if (kern.rfc_prctl && rfc_policy_now() != s.rfc)
			return diverge("policy call %zu: PR_GET_THP_POLICY says %s, the model %s", i,
				       thp_policy_name(rfc_policy_now()), thp_policy_name(s.rfc));
		fresh = fresh_advice();
		if (fresh != (int)model_fresh(&s))
			return diverge("policy call %zu: a fresh mapping has hg=%d nh=%d, the model "
				       "hg=%d nh=%d", i, fresh & MODEL_HG, !!(fresh & MODEL_NH),
				       model_fresh(&s) & MODEL_HG, !!(model_fresh(&s) & MODEL_NH));
	}
	return check_children(&s);
}
