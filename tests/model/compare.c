// SPDX-License-Identifier: LGPL-2.1-or-later
/* thp_model's comparison: one library call against the model and the kernel's smaps. */
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

#include <stdarg.h>

#include "checker.h"

char why[1024];

bool __attribute__((format(printf, 1, 2))) diverge(const char *fmt, ...)
{
	va_list ap;

	if (why[0])
		return false;
	va_start(ap, fmt);
	vsnprintf(why, sizeof(why), fmt, ap);
	va_end(ap);
	return false;
}

static bool kernel_errno(int e)
{
	return e == EINVAL || e == EAGAIN || e == EBUSY || e == ENOMEM;
}

/*
 * Within what the model allows: its report, or with maybe-asks (model.h)
 * up to their bytes more advised and one of them as the first failure.
 */
static bool same_report(size_t i, const struct thp_report *lib, const struct thp_report *m,
			const struct model_slack *sl)
{
	bool err_ok = m->error == MODEL_ERROR_KERNEL ? kernel_errno(lib->error) : lib->error == m->error;
	bool fail_ok = lib->fail_addr == m->fail_addr && err_ok;
	uint64_t more = lib->bytes_advised - m->bytes_advised;
	bool advised_ok = lib->bytes_advised == m->bytes_advised;

	if (sl && sl->maybe_bytes) {
		advised_ok = lib->bytes_advised >= m->bytes_advised && more <= sl->maybe_bytes &&
			     more % pmd == 0;
		/* No failure at all: every maybe-ask succeeded. */
		if (!lib->error)
			fail_ok = !m->error && !lib->fail_addr && more == sl->maybe_bytes;
		for (size_t k = 0; !fail_ok && lib->error && k < sl->nr_fail; k++)
			fail_ok = lib->fail_addr == sl->fail[k] && kernel_errno(lib->error);
	}
	if (lib->addr == m->addr && lib->len == m->len && advised_ok &&
	    lib->bytes_unmapped == m->bytes_unmapped && fail_ok &&
	    lib->backend == m->backend && lib->attempted == m->attempted && !lib->reserved0 &&
	    !lib->reserved[0] && !lib->reserved[1])
		return true;
	return diverge("report %zu: library {addr 0x%" PRIx64 " len %" PRIu64 " advised %" PRIu64
		       " unmapped %" PRIu64 " fail 0x%" PRIx64 " error %d backend %u attempted %u}"
		       " model {addr 0x%" PRIx64 " len %" PRIu64 " advised %" PRIu64 " unmapped %"
		       PRIu64 " fail 0x%" PRIx64 " error %d backend %u attempted %u}",
		       i, lib->addr, lib->len, lib->bytes_advised, lib->bytes_unmapped,
		       lib->fail_addr, lib->error, lib->backend, lib->attempted, m->addr, m->len,
		       m->bytes_advised, m->bytes_unmapped, m->fail_addr, m->error, m->backend,
		       m->attempted);
}

static bool region_has_extent(uint64_t start, uint64_t end)
{
	return ((start + pmd - 1) & ~(pmd - 1)) + pmd <= end;
}

/* "always" [x] "never" -> index of the bracketed word in thp_sysfs_mode order, or -1. */
static int read_mode(const char *path, bool inherit_ok)
{
	static const char *const words[] = { "[always]", "[madvise]", "[never]", "[inherit]" };
	char buf[256];

	if (read_file(path, buf, sizeof(buf)) <= 0)
		return -1;
	for (int i = 0; i < (inherit_ok ? 4 : 3); i++)
		if (strstr(buf, words[i]))
			return i;
	return -1;
}

/*
 * The mode that decides THPeligible of anonymous memory: the PMD size's,
 * when every smaller size (mTHP) is "never" (else any of them can make a
 * mapping eligible, and this checker does not judge it); -1 if unknown.
 */
static int pmd_only_mode(void)
{
	static const char dir[] = "/sys/kernel/mm/transparent_hugepage/";
	int global = read_mode("/sys/kernel/mm/transparent_hugepage/enabled", false), pmd_mode = global;
	char path[160];

	for (uint64_t sz = 2 * page; sz <= pmd; sz *= 2) {
		int m;

		snprintf(path, sizeof(path), "%shugepages-%llukB/enabled", dir,
			 (unsigned long long)(sz / 1024));
		m = read_mode(path, true);
		if (m < 0)
			continue; /* a kernel without mTHP */
		if (m == 3)
			m = global;
		if (sz == pmd)
			pmd_mode = m;
		else if (m != THP_MODE_NEVER)
			return -1;
	}
	return pmd_mode;
}

/* The snapshot against the model's arena: VmFlags of every page, THPeligible. */
bool check_smaps(const struct model_arena *a, const char *where)
{
	uint64_t lo = a->base, hi = a->base + a->nr_pages * page, next = lo;
	int mode = pmd_only_mode();

	if (snap_read(&snap))
		return diverge("%s: cannot read smaps", where);
	/* Another test may switch the global mode meanwhile: judge a steady one only. */
	if (pmd_only_mode() != mode)
		mode = -1;
	for (size_t i = 0; i < snap.n; i++) {
		const struct vma *v = &snap.v[i];
		uint64_t from = v->start > lo ? v->start : lo, to = v->end < hi ? v->end : hi;

		if (from >= to)
			continue;
		for (uint64_t p = next; p < from; p += page)
			if (a->page[(p - lo) / page] & MP_MAPPED)
				return diverge("%s: page 0x%" PRIx64 " unmapped, the model has it mapped",
					       where, p);
		for (uint64_t p = from; p < to; p += page) {
			uint8_t m = a->page[(p - lo) / page];

			if (!(m & MP_MAPPED) || !!(m & MP_HG) != v->hg || !!(m & MP_NH) != v->nh)
				return diverge("%s: page 0x%" PRIx64 " (mapping 0x%" PRIx64 "-0x%" PRIx64
					       ") has hg=%d nh=%d, the model says %s hg=%d nh=%d",
					       where, p, v->start, v->end, v->hg, v->nh,
					       m & MP_MAPPED ? "mapped" : "UNMAPPED", !!(m & MP_HG),
					       !!(m & MP_NH));
		}
		next = to;
		/* THPeligible of private anonymous memory (mode never/unknown: not judged). */
		if (v->anon_private_rw && v->start >= lo && v->end <= hi && v->eligible >= 0 &&
		    (mode == THP_MODE_ALWAYS || mode == THP_MODE_MADVISE)) {
			int want = !v->nh && (v->hg || mode == THP_MODE_ALWAYS) &&
				   region_has_extent(v->start, v->end);

			if (v->eligible != want)
				return diverge("%s: mapping 0x%" PRIx64 "-0x%" PRIx64
					       " THPeligible %d, expected %d (hg=%d nh=%d)",
					       where, v->start, v->end, v->eligible, want, v->hg, v->nh);
		}
	}
	for (uint64_t p = next; p < hi; p += page)
		if (a->page[(p - lo) / page] & MP_MAPPED)
			return diverge("%s: page 0x%" PRIx64 " unmapped, the model has it mapped", where,
				       p);
	return true;
}

/*
 * The VmFlags are inherited: a forked child must see the same.  In remote
 * mode the target forks it, and its smaps is read from here.
 */
bool check_forked(const struct model_arena *a)
{
	pid_t pid, target = truth_pid;
	int st;
	bool ok;

	if (target) {
		pid = remote_forked();
		if (pid < 0)
			return diverge("the target could not fork a child");
		truth_pid = pid;
		ok = check_smaps(a, "the target's forked child");
		truth_pid = target;
		remote_release(pid);
		return ok;
	}
	pid = fork();
	if (pid == 0)
		_exit(check_smaps(a, "forked child") ? 0 : (fprintf(stderr, "%s\n", why), 1));
	if (pid < 0 || waitpid(pid, &st, 0) != pid)
		return diverge("fork: %s", strerror(errno));
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		return diverge("forked child: VmFlags differ from the model (see above)");
	return true;
}

static bool expect_backend(const struct case_spec *c, const struct run_cfg *r, uint32_t got)
{
	unsigned int want = r->backend;
	bool remote = r->pidfd != THP_SELF;

	/* Another process: AUTO has no backend for HUGE/NOHUGE (remote.c expects a refusal). */
	if (want == THP_BACKEND_AUTO && c->advice != THP_ADVICE_COLLAPSE && !remote)
		want = model_auto_backend(&(struct model_caps){ pinfo.backends });
	if (want == THP_BACKEND_AUTO) /* COLLAPSE: the best one that has it */
		return got == THP_BACKEND_PMADV ? (pinfo.backends >> THP_BACKEND_PMADV) & 1 :
		       got == THP_BACKEND_PROCESS_MADVISE || (got == THP_BACKEND_MADVISE && !remote);
	return got == want;
}

static bool run_ranges_with(const struct case_spec *c, const struct run_cfg *r,
			    struct model_arena *a, struct thp_range *rg, struct thp_report *lib,
			    struct thp_report *mod);

/*
 * The request's buffers are static: allocated with malloc() they were
 * mmap()ed into a hole of the arena (thousands of ranges), counted as
 * arena mappings before the call and gone when they were freed before the
 * check (seed 20047: "page unmapped, the model has it mapped").
 */
static struct thp_range req_ranges[MAX_RANGES];
static struct model_slack model_slack[MAX_RANGES];

/* Which extents of the arena were PMD-mapped just before a COLLAPSE call. */
#define MAX_EXTENTS 4096
static bool huge_before[MAX_EXTENTS];

static size_t arena_extent(const struct model_arena *a, uint64_t addr)
{
	return (size_t)((addr - (a->base & ~(pmd - 1))) / pmd);
}

static bool extents_before(const struct model_arena *a)
{
	uint64_t end = a->base + a->nr_pages * page;

	if (arena_extent(a, end) >= MAX_EXTENTS)
		return false;
	for (uint64_t e = a->base & ~(pmd - 1); e + pmd <= end; e += pmd)
		huge_before[arena_extent(a, e)] = e >= a->base && extent_huge(e);
	return true;
}

static enum model_extent extent_state(void *arg, uint64_t addr)
{
	if (!extent_huge(addr))
		return MODEL_EXT_NOT_HUGE;
	return huge_before[arena_extent(arg, addr)] ? MODEL_EXT_WAS_HUGE : MODEL_EXT_BECAME_HUGE;
}
static struct thp_report lib_reports[MAX_RANGES], model_reports[MAX_RANGES];

bool run_ranges(const struct case_spec *c, const struct run_cfg *r, struct model_arena *a)
{
	if (c->nr_ranges > MAX_RANGES)
		return diverge("%zu ranges: the checker has room for %d", c->nr_ranges, MAX_RANGES);
	memset(lib_reports, 0, c->nr_ranges * sizeof(lib_reports[0]));
	memset(model_reports, 0, c->nr_ranges * sizeof(model_reports[0]));
	return run_ranges_with(c, r, a, req_ranges, lib_reports, model_reports);
}

static bool run_ranges_with(const struct case_spec *c, const struct run_cfg *r,
			    struct model_arena *a, struct thp_range *rg, struct thp_report *lib,
			    struct thp_report *mod)
{
	THP_OPTS(thp_apply_opts, o, .pidfd = r->pidfd, .advice = c->advice, .flags = c->flags,
		 .backend = r->backend, .reports = lib);
	int ret, want;

	for (size_t i = 0; i < c->nr_ranges; i++) {
		rg[i] = c->ranges[i];
		rg[i].addr += a->base;
	}
	if (snap_read(&snap))
		return diverge("cannot read smaps before the call");
	arena_from_snap(a, &snap);
	if (c->advice == THP_ADVICE_COLLAPSE && !extents_before(a))
		return diverge("the arena has more extents than the checker has room for");
	ret = thp_apply_ranges(rg, c->nr_ranges, &o);
	if (!expect_backend(c, r, o.backend_used))
		return diverge("backend_used %u (%s)", o.backend_used,
			       thp_backend_name(o.backend_used));
	want = model_apply_ranges(a, rg, c->nr_ranges, c->advice, c->flags, o.backend_used, mod,
				  model_slack, extent_state, a);
	for (size_t i = 0; i < c->nr_ranges; i++)
		if (!same_report(i, &lib[i], &mod[i], &model_slack[i]))
			return false;
	/* With SKIP_ERRORS the return counts the ranges without a failure (maybe-asks too). */
	if (want >= 0 && (c->flags & THP_F_SKIP_ERRORS)) {
		want = 0;
		for (size_t i = 0; i < c->nr_ranges; i++)
			want += !lib[i].error;
	}
	if (want == MODEL_ERROR_KERNEL ? !(ret < 0 && kernel_errno(-ret)) : ret != want)
		return diverge("thp_apply_ranges() returned %d, the model %d (%s)", ret, want,
			       thp_strerror_detail());
	return true;
}

bool run_all(const struct case_spec *c, const struct run_cfg *r, struct model_arena *a)
{
	THP_OPTS(thp_apply_all_opts, o, .pidfd = r->pidfd, .advice = c->advice, .flags = c->flags,
		 .backend = r->backend);
	struct model_all m;
	uint64_t bytes = 0;
	size_t n = 0;
	int ret;

	if (snap_read(&snap))
		return diverge("cannot read smaps before the call");
	arena_from_snap(a, &snap);
	for (size_t i = 0; i < snap.n; i++)
		if (!snap.v[i].vsyscall) {
			n++;
			bytes += snap.v[i].end - snap.v[i].start;
		}
	memcpy(prev.v, snap.v, snap.n * sizeof(*snap.v));
	prev.n = snap.n;
	ret = thp_apply_all(&o);
	/*
	 * A sanitizer's runtime may map memory of its own during the call:
	 * mappings that appear then outside the arena (not the library's doing)
	 * are part of the address space the call saw.
	 */
	if (o.mappings_seen != n && !snap_read(&snap))
		for (size_t i = 0; i < snap.n; i++) {
			const struct vma *v = &snap.v[i];
			bool old = v->vsyscall || overlaps_snapshot(&prev, v);

			if (!old && (v->end <= a->base || v->start >= a->base + a->nr_pages * page)) {
				n++;
				bytes += v->end - v->start;
			}
		}
	model_apply_all(a, n, bytes, c->advice, &m);
	if (!expect_backend(c, r, o.backend_used))
		return diverge("backend_used %u (%s)", o.backend_used,
			       thp_backend_name(o.backend_used));
	if (ret != m.ret || o.mappings_seen != m.seen || o.mappings_advised != m.advised ||
	    o.mappings_skipped != m.skipped || o.bytes_advised != m.bytes ||
	    o.failures_needed != m.failures)
		return diverge("thp_apply_all(): library ret %d seen %" PRIu64 " advised %" PRIu64
			       " skipped %" PRIu64 " bytes %" PRIu64 " failures %" PRIu64 ", model ret %d seen %"
			       PRIu64 " advised %" PRIu64 " skipped %" PRIu64 " bytes %" PRIu64
			       " failures %zu (%s)", ret, o.mappings_seen, o.mappings_advised,
			       o.mappings_skipped, o.bytes_advised, o.failures_needed, m.ret, m.seen,
			       m.advised, m.skipped, m.bytes, m.failures, thp_strerror_detail());
	return true;
}

/*
 * A forced backend the kernel lacks (or, on another process, one that
 * cannot reach it): -EOPNOTSUPP, and nothing changes.
 */
bool run_refused(const struct case_spec *c, const struct run_cfg *r, struct model_arena *a)
{
	THP_OPTS(thp_apply_opts, o, .pidfd = r->pidfd, .advice = c->advice, .flags = c->flags,
		 .backend = r->backend);
	THP_OPTS(thp_apply_all_opts, ao, .pidfd = r->pidfd, .advice = c->advice, .flags = c->flags,
		 .backend = r->backend);
	struct thp_range one = { a->base, page };
	int ret;

	if (snap_read(&snap))
		return diverge("cannot read smaps before the call");
	arena_from_snap(a, &snap);
	ret = c->req == REQ_ALL ? thp_apply_all(&ao) : thp_apply_ranges(&one, 1, &o);
	if (ret != -EOPNOTSUPP)
		return diverge("forced %s, which thp_probe() does not offer: returned %d",
			       thp_backend_name(r->backend), ret);
	return true;
}
