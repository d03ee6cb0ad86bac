// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Every class of return of thp_apply_ranges() and thp_apply_all() with
 * the caller's outputs poisoned (0xa5) beforehand: after each return the
 * reports hold what thp_apply_ranges(3) says, never the poison, except
 * where the input does not say where they are (then they are untouched).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thp/thp.h>

#include "reports_defined.h"

#define NR 3
#define POISON 0xa5

static int failf(char *why, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int failf(char *why, size_t cap, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, cap, fmt, ap);
	va_end(ap);
	return -1;
}

static size_t page(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

static bool poisoned(const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		if (b[i] != POISON)
			return false;
	return true;
}

/* Compare a report with what it should be, field by field for the message. */
static int same(const char *what, size_t i, const struct thp_report *got,
		const struct thp_report *want, char *why, size_t cap)
{
	if (!memcmp(got, want, sizeof(*got)))
		return 0;
	return failf(why, cap,
		     "%s: report %zu {addr 0x%" PRIx64 " len 0x%" PRIx64 " advised 0x%" PRIx64
		     " unmapped 0x%" PRIx64 " fail 0x%" PRIx64 " error %" PRId32 " backend %" PRIu32
		     " attempted %" PRIu32 " reserved0 %" PRIx32 "}, expected {addr 0x%" PRIx64
		     " len 0x%" PRIx64 " advised 0x%" PRIx64 " unmapped 0x%" PRIx64 " fail 0x%" PRIx64
		     " error %" PRId32 " backend %" PRIu32 " attempted %" PRIu32 "}%s",
		     what, i, got->addr, got->len, got->bytes_advised, got->bytes_unmapped,
		     got->fail_addr, got->error, got->backend, got->attempted, got->reserved0,
		     want->addr, want->len, want->bytes_advised, want->bytes_unmapped,
		     want->fail_addr, want->error, want->backend, want->attempted,
		     poisoned(got, sizeof(*got)) ? " (left as it was: all 0xa5)" : "");
}

/*
 * A refused call: returns -@err, no backend, and every report names its
 * range (page-rounded) and the error, not attempted.
 */
static int expect_refused(const char *what, int ret, int err, const struct thp_range *rg,
			  const struct thp_apply_opts *o, const struct thp_report *rep,
			  char *why, size_t cap)
{
	size_t ps = page();

	if (ret != -err)
		return failf(why, cap, "%s: returned %d (%s), expected %d", what, ret,
			     thp_strerror(ret), -err);
	for (size_t i = 0; i < NR; i++) {
		struct thp_report want = {
			.addr = rg[i].addr,
			.len = (rg[i].len + ps - 1) & ~((uint64_t)ps - 1),
			.error = err,
		};

		if (same(what, i, &rep[i], &want, why, cap))
			return -1;
	}
	if (o->backend_used != THP_BACKEND_AUTO)
		return failf(why, cap, "%s: backend_used %" PRIu32 " (0x%08" PRIx32 "), expected 0",
			     what, o->backend_used, o->backend_used);
	return 0;
}

/* Three one-page ranges in a 4-page mapping, the middle page unmapped. */
static char *layout(struct thp_range *rg)
{
	size_t ps = page();
	char *p = mmap(NULL, 4 * ps, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	munmap(p + ps, ps);
	for (size_t i = 0; i < NR; i++) {
		rg[i].addr = (uintptr_t)p + i * ps;
		rg[i].len = ps;
	}
	return p;
}

/* Bad input: every report written (not attempted, the error), or untouched when unplaceable. */
static int case_validation(char *why, size_t cap)
{
	static const int bad_advice = 4; /* MADV_DONTNEED */
	struct thp_range rg[NR];
	struct thp_report rep[NR];
	struct {
		struct thp_apply_opts o;
		uint64_t newer;
	} big;
	char *p = layout(rg);
	int ret, r = -1;
	bool bad;

	if (!p)
		return failf(why, cap, "mmap: %s", strerror(errno));
	{
		THP_OPTS(thp_apply_opts, o, .advice = bad_advice, .reports = rep);

		memset(rep, POISON, sizeof(rep));
		memset(&o.backend_used, POISON, sizeof(o.backend_used));
		ret = thp_apply_ranges(rg, NR, &o);
		if (expect_refused("bad advice", ret, EINVAL, rg, &o, rep, why, cap))
			goto out;
	}
	{
		THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_HUGE, .reports = rep);
		struct thp_range odd[NR];

		memcpy(odd, rg, sizeof(odd));
		odd[2].addr += 1;
		memset(rep, POISON, sizeof(rep));
		ret = thp_apply_ranges(odd, NR, &o);
		if (expect_refused("unaligned range 2", ret, EINVAL, odd, &o, rep, why, cap))
			goto out;
		/* A length that wraps when rounded up is reported as given. */
		odd[2].addr -= 1;
		odd[2].len = UINT64_MAX;
		memset(rep, POISON, sizeof(rep));
		ret = thp_apply_ranges(odd, NR, &o);
		if (ret != -EINVAL || rep[2].addr != odd[2].addr || rep[2].len != UINT64_MAX ||
		    rep[2].error != EINVAL || rep[2].attempted || rep[2].bytes_advised) {
			failf(why, cap, "wrapping range 2: returned %d, report 2 addr 0x%" PRIx64
			      " len 0x%" PRIx64 " error %" PRId32 " attempted %" PRIu32, ret,
			      rep[2].addr, rep[2].len, rep[2].error, rep[2].attempted);
			goto out;
		}
	}
	{
		THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_HUGE, .reports = rep);

		memset(rep, POISON, sizeof(rep));
		ret = thp_apply_ranges(NULL, NR, &o);
		if (ret != -EINVAL) {
			failf(why, cap, "NULL ranges: returned %d", ret);
			goto out;
		}
		for (size_t i = 0; i < NR; i++) {
			/* No range to name. */
			const struct thp_report want = { .error = EINVAL };

			if (same("NULL ranges", i, &rep[i], &want, why, cap))
				goto out;
		}
	}
	memset(&big, 0, sizeof(big));
	big.o.sz = sizeof(big);
	big.o.advice = THP_ADVICE_HUGE;
	big.o.reports = rep;
	big.newer = 1;
	memset(rep, POISON, sizeof(rep));
	memset(&big.o.backend_used, POISON, sizeof(big.o.backend_used));
	ret = thp_apply_ranges(rg, NR, &big.o);
	if (expect_refused("a newer caller's non-zero field", ret, E2BIG, rg, &big.o, rep, why, cap))
		goto out;

	/* Where the input does not say where the reports are: untouched. */
	{
		THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_HUGE, .reports = rep);

		o.sz = 8;
		memset(rep, POISON, sizeof(rep));
		ret = thp_apply_ranges(rg, NR, &o);
		if (ret != -EINVAL || !poisoned(rep, sizeof(rep))) {
			failf(why, cap, "sz 8: returned %d, reports %s", ret,
			      poisoned(rep, sizeof(rep)) ? "untouched" : "written");
			goto out;
		}
	}
	{
		/* THP_MAX_RANGES + 1 reports of address space, only the first pages touched. */
		size_t n = (size_t)THP_MAX_RANGES + 1, len = n * sizeof(struct thp_report);
		struct thp_report *many = mmap(NULL, len, PROT_READ | PROT_WRITE,
					       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_HUGE, .reports = many);

		if (many == MAP_FAILED) {
			failf(why, cap, "mmap of %zu reports: %s", n, strerror(errno));
			goto out;
		}
		memset(many, POISON, NR * sizeof(*many));
		ret = thp_apply_ranges(rg, n, &o);
		bad = ret != -EINVAL || !poisoned(many, NR * sizeof(*many));
		if (bad)
			failf(why, cap, "THP_MAX_RANGES + 1 ranges: returned %d, reports %s", ret,
			      poisoned(many, NR * sizeof(*many)) ? "untouched" : "written");
		munmap(many, len);
		if (bad)
			goto out;
	}
	r = 0;
out:
	munmap(p, 4 * page());
	return r;
}

/* A refusal after validation, before any advice: forced backend, bad pidfd, exited target. */
static int case_refused(char *why, size_t cap)
{
	struct thp_range rg[NR];
	struct thp_report rep[NR];
	struct thp_probe_info pi = { .sz = sizeof(pi) };
	char *p = layout(rg);
	int fds[2] = { -1, -1 }, pidfd = -1, ret, r = -1;
	pid_t pid;

	if (!p)
		return failf(why, cap, "mmap: %s", strerror(errno));
	{
		/* Not a range backend: -EOPNOTSUPP on every kernel. */
		THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_HUGE, .reports = rep,
			 .backend = THP_BACKEND_PRCTL_DISABLE);

		memset(rep, POISON, sizeof(rep));
		memset(&o.backend_used, POISON, sizeof(o.backend_used));
		ret = thp_apply_ranges(rg, NR, &o);
		if (expect_refused("forced backend prctl_thp_disable", ret, EOPNOTSUPP, rg, &o, rep,
				   why, cap))
			goto out;
	}
	if (thp_probe(&pi)) {
		failf(why, cap, "thp_probe failed");
		goto out;
	}
	if (!pi.madvise_collapse) {
		/* Before Linux 6.1: refused before any system call. */
		THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_COLLAPSE, .reports = rep);

		memset(rep, POISON, sizeof(rep));
		memset(&o.backend_used, POISON, sizeof(o.backend_used));
		ret = thp_apply_ranges(rg, NR, &o);
		if (expect_refused("COLLAPSE without MADV_COLLAPSE", ret, EOPNOTSUPP, rg, &o, rep,
				   why, cap))
			goto out;
	}
	if (pipe(fds)) {
		failf(why, cap, "pipe: %s", strerror(errno));
		goto out;
	}
	{
		THP_OPTS(thp_apply_opts, o, .pidfd = fds[0], .advice = THP_ADVICE_COLLAPSE,
			 .reports = rep);

		memset(rep, POISON, sizeof(rep));
		memset(&o.backend_used, POISON, sizeof(o.backend_used));
		ret = thp_apply_ranges(rg, NR, &o);
		/* Without MADV_COLLAPSE the advice is refused first. */
		if (expect_refused("a pipe for pidfd", ret, pi.madvise_collapse ? EBADF : EOPNOTSUPP,
				   rg, &o, rep, why, cap))
			goto out;
	}
	pid = fork();
	if (pid < 0) {
		failf(why, cap, "fork: %s", strerror(errno));
		goto out;
	}
	if (pid == 0)
		_exit(0);
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	waitpid(pid, NULL, 0);
	if (pidfd < 0) {
		failf(why, cap, "pidfd_open: %s", strerror(errno));
		goto out;
	}
	{
		THP_OPTS(thp_apply_opts, o, .pidfd = pidfd, .advice = THP_ADVICE_COLLAPSE,
			 .reports = rep);

		memset(rep, POISON, sizeof(rep));
		memset(&o.backend_used, POISON, sizeof(o.backend_used));
		ret = thp_apply_ranges(rg, NR, &o);
		if (expect_refused("an exited target", ret, pi.madvise_collapse ? ESRCH : EOPNOTSUPP,
				   rg, &o, rep, why, cap))
			goto out;
	}
	r = 0;
out:
	if (pidfd >= 0)
		close(pidfd);
	if (fds[0] >= 0) {
		close(fds[0]);
		close(fds[1]);
	}
	munmap(p, 4 * page());
	return r;
}

/* A stop at range 1 (its page unmapped), and a success. */
static int case_stop_and_success(char *why, size_t cap)
{
	struct thp_range rg[NR];
	struct thp_report rep[NR];
	size_t ps = page();
	char *p = layout(rg);
	int ret, r = -1;
	THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_HUGE, .reports = rep);

	if (!p)
		return failf(why, cap, "mmap: %s", strerror(errno));
	memset(rep, POISON, sizeof(rep));
	ret = thp_apply_ranges(rg, NR, &o);
	if (ret != -ENOMEM) {
		failf(why, cap, "stop: returned %d, expected -ENOMEM", ret);
		goto out;
	}
	{
		const struct thp_report want[NR] = {
			{ .addr = rg[0].addr, .len = ps, .bytes_advised = ps,
			  .backend = o.backend_used, .attempted = 1 },
			{ .addr = rg[1].addr, .len = ps, .bytes_unmapped = ps, .fail_addr = rg[1].addr,
			  .error = ENOMEM, .backend = o.backend_used, .attempted = 1 },
			/* Not reached: an earlier range's failure stopped the call. */
			{ .addr = rg[2].addr, .len = ps, .backend = o.backend_used },
		};

		for (size_t i = 0; i < NR; i++)
			if (same("stop at range 1", i, &rep[i], &want[i], why, cap))
				goto out;
	}
	rg[1] = rg[2];
	memset(rep, POISON, sizeof(rep));
	ret = thp_apply_ranges(rg, 2, &o);
	if (ret != 2) {
		failf(why, cap, "success: returned %d, expected 2", ret);
		goto out;
	}
	for (size_t i = 0; i < 2; i++) {
		const struct thp_report want = { .addr = rg[i].addr, .len = ps, .bytes_advised = ps,
						 .backend = o.backend_used, .attempted = 1 };

		if (same("success", i, &rep[i], &want, why, cap))
			goto out;
	}
	if (!poisoned(&rep[2], sizeof(rep[2]))) {
		failf(why, cap, "success: report 2 of 2 ranges written");
		goto out;
	}
	r = 0;
out:
	munmap(p, 4 * ps);
	return r;
}

/* thp_apply_all(): a refused call zeroes its results; failures[] beyond them is untouched. */
static int case_apply_all(char *why, size_t cap)
{
	struct thp_report fail[2];
	static const int advice[2] = { THP_ADVICE_HUGE, 4 /* MADV_DONTNEED: invalid */ };
	static const unsigned int backend[2] = { THP_BACKEND_PRCTL_DISABLE, THP_BACKEND_AUTO };
	static const int err[2] = { EOPNOTSUPP, EINVAL };

	for (int k = 0; k < 2; k++) {
		THP_OPTS(thp_apply_all_opts, o, .advice = advice[k], .backend = backend[k],
			 .failures = fail, .failures_cap = 2);
		int ret;

		memset(fail, POISON, sizeof(fail));
		memset(&o.failures_needed, POISON,
		       offsetof(struct thp_apply_all_opts, reserved0) -
			       offsetof(struct thp_apply_all_opts, failures_needed));
		ret = thp_apply_all(&o);
		if (ret != -err[k] || o.failures_needed || o.mappings_seen || o.mappings_advised ||
		    o.mappings_skipped || o.bytes_advised || o.backend_used)
			return failf(why, cap, "thp_apply_all (%s): returned %d (expected %d); "
				     "failures_needed 0x%" PRIx64 " mappings_seen 0x%" PRIx64
				     " advised 0x%" PRIx64 " skipped 0x%" PRIx64 " bytes_advised 0x%"
				     PRIx64 " backend_used 0x%" PRIx32 ", expected all 0",
				     k ? "bad advice" : "forced prctl_thp_disable", ret, -err[k],
				     o.failures_needed, o.mappings_seen, o.mappings_advised,
				     o.mappings_skipped, o.bytes_advised, o.backend_used);
		if (!poisoned(fail, sizeof(fail)))
			return failf(why, cap, "thp_apply_all: failures[] written past "
				     "failures_needed 0");
	}
	return 0;
}

const struct reports_defined_case reports_defined_cases[] = {
	{ "validation", case_validation },
	{ "refused", case_refused },
	{ "stop_and_success", case_stop_and_success },
	{ "apply_all", case_apply_all },
};
const size_t reports_defined_nr_cases =
	sizeof(reports_defined_cases) / sizeof(reports_defined_cases[0]);
