// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Guest check: THP_ADVICE_COLLAPSE on the caller and, through a pidfd, on another
 * process: huge pages where the kernel has MADV_COLLAPSE (6.1), contents
 * kept, and a named refusal where it has not.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <signal.h>
#include <unistd.h>

#include "vm_check.h"

static uint64_t checksum(const volatile unsigned char *p, size_t len)
{
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < len; i += 512)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

static void collapse_run(void *arg)
{
	struct check c = { .name = "collapse" };
	struct thp_report rep;
	struct thp_range rg;
	uintptr_t base;
	uint64_t sum;
	unsigned long before, after;
	int r;

	(void)arg;
	if (set_sysfs_mode(THP_MODE_MADVISE)) {
		cfail(&c, "cannot set the global mode to madvise");
		cdone(&c);
		return;
	}
	base = populated_8m();
	if (!base) {
		cfail(&c, "mmap");
		cdone(&c);
		return;
	}
	sum = checksum((void *)base, 8 * MiB);
	before = smap_at(base).anon_huge_kb;
	rg.addr = base;
	rg.len = 8 * MiB;
	{
		THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_COLLAPSE, .reports = &rep);

		r = thp_apply_ranges(&rg, 1, &o);
		after = smap_at(base).anon_huge_kb;
		printf("VMTEST INFO collapse self: ret=%d advised=%lluK error=%d before=%lu kB "
		       "after=%lu kB backend=%s detail='%s'\n", r,
		       (unsigned long long)rep.bytes_advised >> 10, rep.error, before, after,
		       thp_backend_name(o.backend_used), thp_strerror_detail());
		if (!kx.collapse) {
			if (r != -EOPNOTSUPP || !strstr(thp_strerror_detail(), "MADV_COLLAPSE"))
				cfail(&c, "no MADV_COLLAPSE on %d.%d: ret %d detail '%s', expected "
				      "-EOPNOTSUPP naming MADV_COLLAPSE", kx.major, kx.minor, r,
				      thp_strerror_detail());
		} else if (r != 1 || rep.bytes_advised != 8 * MiB) {
			cfail(&c, "self: ret %d advised %llu, expected 1 and 8 MiB", r,
			      (unsigned long long)rep.bytes_advised);
		} else if (before != 0 || after != 8192) {
			cfail(&c, "self: AnonHugePages %lu -> %lu kB, expected 0 -> 8192", before,
			      after);
		}
		if (checksum((void *)base, 8 * MiB) != sum)
			cfail(&c, "self: contents changed");
	}
	/* Another process, through a pidfd: the only way to change its backing. */
	{
		uintptr_t rbase;
		pid_t pid = start_populated_child(&rbase);
		int pidfd;

		if (pid < 0) {
			cfail(&c, "remote child did not start");
			goto out;
		}
		pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
		before = huge_kb_of(pid, rbase);
		rg.addr = rbase;
		rg.len = 8 * MiB;
		{
			THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_COLLAPSE, .pidfd = pidfd,
				 .reports = &rep);

			r = thp_apply_ranges(&rg, 1, &o);
			/* EAGAIN is MADV_COLLAPSE's "busy, try again", which the
			 * library already retried a few times per extent; a guest
			 * under TCG on a loaded host can stay busy longer.  Do what
			 * the man page tells a caller to do, and say so. */
			for (int again = 1; r < 0 && rep.error == EAGAIN && again <= 3; again++) {
				printf("VMTEST INFO collapse remote: EAGAIN, call %d of 4 after "
				       "%d ms\n", again + 1, 50 * again);
				usleep(50000 * again);
				r = thp_apply_ranges(&rg, 1, &o);
			}
			after = huge_kb_of(pid, rbase);
			printf("VMTEST INFO collapse remote: ret=%d advised=%lluK before=%lu kB "
			       "after=%lu kB backend=%s detail='%s'\n", r,
			       (unsigned long long)rep.bytes_advised >> 10, before, after,
			       thp_backend_name(o.backend_used), thp_strerror_detail());
			if (!kx.collapse) {
				if (r >= 0 || !thp_strerror_detail()[0])
					cfail(&c, "remote without MADV_COLLAPSE: ret %d detail '%s'", r,
					      thp_strerror_detail());
			} else if (r != 1 || rep.bytes_advised != 8 * MiB || before != 0 ||
				   after != 8192) {
				cfail(&c, "remote: ret %d advised %llu, AnonHugePages %lu -> %lu kB, "
				      "expected 1, 8 MiB, 0 -> 8192", r,
				      (unsigned long long)rep.bytes_advised, before, after);
			}
		}
		stop_child(pid);
		if (pidfd >= 0)
			close(pidfd);
	}
out:
	cdone(&c);
}


/* In a child: it switches the global mode to madvise. */
void check_collapse(void)
{
	in_child(collapse_run, NULL);
}
