// SPDX-License-Identifier: LGPL-2.1-or-later
/* Reports and messages: names, error texts, the per-thread failure detail. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "internal.h"
#include "syscall.h"
#include "thp_config.h"

/*
 * Per-thread, like errno: why the last call in this thread failed.  A call
 * notes details as it goes (backend selection notes one for every backend
 * it passes over, a mechanism that fails notes why before the next one is
 * tried), but only a failure publishes them: report_return() makes the
 * pending detail the one thp_strerror_detail() shows when the call fails,
 * and clears both when it succeeds, so a success after a fallback says "".
 * Each points at constant text (most details) or at detail_buf.
 *
 * Every call writes the two pointers: initial-exec TLS makes that a plain
 * store instead of a __tls_get_addr() call.  They take 16 bytes of the
 * static TLS surplus glibc keeps for dlopen()ed libraries (the Python
 * binding dlopen()s libthp); the buffer, only written when a call fails
 * with a formatted detail, stays dynamic so the surplus is not spent on it.
 */
#define TLS_INITIAL_EXEC __attribute__((tls_model("initial-exec")))
static __thread const char *pending_detail TLS_INITIAL_EXEC;
static __thread const char *last_detail TLS_INITIAL_EXEC;
static __thread char detail_buf[256];

void report_set_detail(const char *fmt, ...)
{
	va_list ap;

	/*
	 * Constant text is kept by reference.  Backend selection sets a
	 * detail for every backend it passes over, on every call, so
	 * formatting it would cost the happy path more than the system call
	 * it makes (benchmark 1).
	 */
	if (!strchr(fmt, '%')) {
		pending_detail = fmt;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(detail_buf, sizeof(detail_buf), fmt, ap);
	va_end(ap);
	pending_detail = detail_buf;
}

void report_clear_detail(void)
{
	pending_detail = last_detail = NULL;
}

const char *report_take_pending(void)
{
	const char *d = pending_detail;

	pending_detail = NULL;
	return d;
}

void report_return(int ret)
{
	last_detail = ret < 0 ? pending_detail : NULL;
	pending_detail = NULL;
}

THP_API const char *thp_strerror_detail(void)
{
	return last_detail ? last_detail : "";
}

THP_API const char *thp_backend_name(unsigned int backend)
{
	static const char *const names[THP_BACKEND_COUNT] = {
		[THP_BACKEND_AUTO] = "auto",
		[THP_BACKEND_PMADV] = "pmadv",
		[THP_BACKEND_PROCESS_MADVISE] = "process_madvise",
		[THP_BACKEND_MADVISE] = "madvise",
		[THP_BACKEND_PRCTL_POLICY] = "prctl_thp_policy",
		[THP_BACKEND_PRCTL_DISABLE] = "prctl_thp_disable",
		[THP_BACKEND_EXISTING_ONLY] = "existing_only",
		[THP_BACKEND_PRELOAD] = "preload",
		[THP_BACKEND_INJECT] = "inject",
	};

	return backend < THP_BACKEND_COUNT ? names[backend] : "unknown";
}

THP_API const char *thp_policy_name(unsigned int policy)
{
	static const char *const names[THP_POLICY_COUNT] = {
		[THP_POLICY_SYSTEM] = "system",
		[THP_POLICY_HUGE] = "huge",
		[THP_POLICY_NOHUGE] = "nohuge",
		[THP_POLICY_NEVER] = "never",
	};

	return policy < THP_POLICY_COUNT ? names[policy] : "unknown";
}

THP_API const char *thp_strerror(int err)
{
	/* Negate in a wider type: -INT_MIN does not fit an int. */
	long long e = err < 0 ? -(long long)err : err;

	if (e > INT_MAX)
		return "unknown error";
	err = (int)e;
	switch (err) {
	case 0:
		return "success";
	case EINVAL:
		return "invalid request: bad advice, flags, size, alignment or range";
	case E2BIG:
		return "options struct has fields this library version does not know (non-zero tail)";
	case EBADF:
		return "not a valid pidfd";
	case ESRCH:
		return "the target process has exited";
	case ENOENT:
		return "a /proc file libthp needs is missing (is /proc mounted?)";
	case EOPNOTSUPP:
		return "not possible on this kernel or for this target (see thp_strerror_detail())";
	case ENOMEM:
		return "part of a range is not mapped";
	case EPERM:
		return "not permitted to change the target process";
	case EAGAIN:
		return "the kernel could not do it now (e.g. MADV_COLLAPSE found no free huge page)";
	case ETIMEDOUT:
		return "the target process did not stop in time (inject backend; e.g. in vfork())";
	default:
		return strerror(err);
	}
}

THP_API int thp_report_format(const struct thp_report *r, char *buf, size_t len)
{
	if (!r)
		return snprintf(buf, len, "(no report)");
	if (!r->attempted && !r->error)
		return snprintf(buf, len, "0x%012llx +%-10llu not attempted (an earlier range failed)",
				(unsigned long long)r->addr, (unsigned long long)r->len);
	if (!r->attempted)
		return snprintf(buf, len, "0x%012llx +%-10llu not attempted (the call failed: %s)",
				(unsigned long long)r->addr, (unsigned long long)r->len,
				strerror(r->error));
	if (!r->error)
		return snprintf(buf, len, "0x%012llx +%-10llu advised %-10llu unmapped %-10llu ok [%s]",
				(unsigned long long)r->addr, (unsigned long long)r->len,
				(unsigned long long)r->bytes_advised,
				(unsigned long long)r->bytes_unmapped, thp_backend_name(r->backend));
	return snprintf(buf, len,
			"0x%012llx +%-10llu advised %-10llu unmapped %-10llu FAILED at 0x%llx: %s [%s]",
			(unsigned long long)r->addr, (unsigned long long)r->len,
			(unsigned long long)r->bytes_advised,
			(unsigned long long)r->bytes_unmapped, (unsigned long long)r->fail_addr,
			strerror(r->error), thp_backend_name(r->backend));
}

THP_API const char *thp_version(void)
{
	return THP_VERSION_STRING;
}

/* ---- the reports of thp_apply_ranges() and thp_apply_all() ---- */

void report_init(struct thp_report *rep, const struct thp_range *r, size_t page_size,
		 unsigned int backend)
{
	memset(rep, 0, sizeof(*rep));
	rep->addr = r->addr;
	rep->len = range_len(r, page_size);
	rep->backend = backend;
}

/*
 * ranges[from, n) were not done: their reports say so, with @error 0 when
 * an earlier range's failure stopped the call, else the positive errno
 * with which the call failed as a whole (thp_apply_ranges(3)).
 */
void reports_not_attempted(const struct apply_ctx *ctx, const struct thp_range *ranges,
			   size_t from, size_t n, struct thp_report *reports, int error)
{
	for (size_t i = from; reports && i < n; i++) {
		report_init(&reports[i], &ranges[i], ctx->page_size, ctx->be->id);
		reports[i].error = error;
	}
}

/*
 * A call refused before its engine ran (bad input, a target or advice it
 * cannot serve) still writes every report and backend_used, so that the
 * caller never reads what they held before: no backend, not attempted, the
 * call's error.  Except when the input does not say where the reports are
 * or how many: no options, a size the library does not accept, more than
 * THP_MAX_RANGES ranges.
 */
void reports_refused(const struct thp_range *ranges, size_t n, struct thp_apply_opts *opts,
		     int opts_err, int err)
{
	struct thp_report *rep;
	size_t page_size;

	if (opts_err == -EINVAL)
		return;
	opts->backend_used = THP_BACKEND_AUTO;
	rep = opts->reports;
	if (!rep || n > THP_MAX_RANGES)
		return;
	page_size = sys_page_size();
	for (size_t i = 0; i < n; i++) {
		memset(&rep[i], 0, sizeof(rep[i]));
		if (ranges) {
			rep[i].addr = ranges[i].addr;
			/* A length that would wrap when rounded up is given as it is. */
			rep[i].len = ranges[i].len > UINT64_MAX - page_size + 1
					     ? ranges[i].len
					     : range_len(&ranges[i], page_size);
		}
		rep[i].error = -err;
	}
}
