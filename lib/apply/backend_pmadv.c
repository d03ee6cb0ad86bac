// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Backend: process_madvise() with the RFC PMADV_* flags (Stoakes, May 2025,
 * never merged).  Ranges go through the strict vector call like mainline;
 * the flags earn their keep for the whole address space in one call.  The
 * posted RFC returns "bytes minus skipped entries" for PMADV_SKIP_ERRORS
 * while the cover letter promises "entries without error": both are
 * normalised here.
 */
#include <errno.h>

#include "compat.h"
#include "internal.h"
#include "syscall.h"

static int pmadv_can_apply(const struct thp_caps *c, const struct thp_target *t, int advice)
{
	if (!c->pmadv_skip_errors || !c->pmadv_no_error_on_unmapped || !c->pmadv_entire) {
		report_set_detail("this kernel lacks the RFC process_madvise() PMADV_* flags");
		return -EOPNOTSUPP;
	}
	return backend_process_madvise_check(c, t, advice);
}

static int pmadv_apply_entire(const struct thp_target *t, int advice)
{
	long r = sys_process_madvise(t->pidfd, NULL, (size_t)-1, advice,
				     PMADV_ENTIRE_ADDRESS_SPACE | PMADV_SKIP_ERRORS);

	if (r < 0)
		return (int)r;
	/*
	 * One implied entry.  Fixed kernels return 1 (entries without error);
	 * the posted RFC returns its byte length, minus one per skipped entry.
	 */
	if (r == 1 || (r > 1 && (r & 0xfff) == 0))
		return 0;
	return 1;
}

const struct thp_backend_ops backend_pmadv_ops = {
	.id = THP_BACKEND_PMADV,
	.name = "pmadv",
	.can_apply = pmadv_can_apply,
	.apply_vec = backend_process_madvise_vec,
	.apply_entire = pmadv_apply_entire,
};
