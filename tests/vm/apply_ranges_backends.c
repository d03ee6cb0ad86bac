// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Guest check: thp_apply_ranges() through every range backend this kernel has: the same
 * reports from each, the reports README's error semantics give for a layout
 * with a hole, hg on the advised ranges and huge pages once touched; and
 * which backend auto picks per advice (README's tables).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "vm_check.h"

#define NR_R 5
/* Offsets from base (hole at [4M, 6M)). */
static const struct { unsigned long off, len; } rdef[NR_R] = {
	{ 0, 2 * MiB },        /* mapped */
	{ 2 * MiB, 1 * MiB },  /* mapped, half a PMD */
	{ 3 * MiB, 4 * MiB },  /* spans the hole */
	{ 4 * MiB, 2 * MiB },  /* entirely the hole */
	{ 8 * MiB, 2 * MiB },  /* mapped */
};

struct ranges_result {
	int ret;
	struct thp_report rep[NR_R];
	uint32_t backend_used;
};

static void run_ranges(unsigned int backend, uint32_t flags, struct ranges_result *res,
		       struct check *c)
{
	struct thp_range rg[NR_R];
	uintptr_t base = layout_make();

	memset(res, 0, sizeof(*res));
	if (!base) {
		cfail(c, "mmap failed");
		res->ret = -9999;
		return;
	}
	for (int i = 0; i < NR_R; i++) {
		rg[i].addr = base + rdef[i].off;
		rg[i].len = rdef[i].len;
	}
	{
		THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_HUGE, .flags = flags,
			 .backend = backend, .reports = res->rep);
		res->ret = thp_apply_ranges(rg, NR_R, &o);
		res->backend_used = o.backend_used;
	}
	for (int i = 0; i < NR_R; i++) {
		if (res->rep[i].addr)
			res->rep[i].addr -= base;
		if (res->rep[i].fail_addr)
			res->rep[i].fail_addr -= base;
	}
	if (res->ret >= 0 && res->backend_used != backend)
		cfail(c, "backend %u flags %u: backend_used %u", backend, flags, res->backend_used);
	/* Advised ranges show hg: ranges before the stop, or all with SKIP/NO_ERR. */
	if (res->ret >= 0 || flags == 0) {
		static const unsigned long hg_off[] = { 0, 2 * MiB, 3 * MiB, 6 * MiB, 8 * MiB };
		int n = res->ret >= 0 ? 5 : 3; /* default mode stops at range 2 (gap) */

		for (int i = 0; i < n; i++) {
			struct smap_info si = smap_at(base + hg_off[i]);

			if (!si.found || !si.hg)
				cfail(c, "backend %s flags %u: offset %luM not hg (found %d)",
				      thp_backend_name(backend), flags, hg_off[i] / MiB, si.found);
		}
		{
			struct smap_info si = smap_at(base + 4 * MiB);

			if (si.found)
				cfail(c, "hole is mapped?");
		}
		/* Touch range 0 and expect a huge page. */
		for (unsigned long off = 0; off < PMD; off += 4096)
			((volatile char *)base)[off] = 1;
		{
			struct smap_info si = smap_at(base);

			if (si.anon_huge_kb == 0)
				cfail(c, "backend %s flags %u: AnonHugePages 0 after touching an "
				      "hg range", thp_backend_name(backend), flags);
		}
	}
	layout_free(base);
}

static void fmt_result(const struct ranges_result *r, char *buf, size_t cap)
{
	size_t l = (size_t)snprintf(buf, cap, "ret=%d", r->ret);

	for (int i = 0; i < NR_R && l < cap; i++)
		l += (size_t)snprintf(buf + l, cap - l,
				      " [%llx+%llx adv=%llx unm=%llx fa=%llx err=%d att=%u]",
				      (unsigned long long)r->rep[i].addr,
				      (unsigned long long)r->rep[i].len,
				      (unsigned long long)r->rep[i].bytes_advised,
				      (unsigned long long)r->rep[i].bytes_unmapped,
				      (unsigned long long)r->rep[i].fail_addr, r->rep[i].error,
				      r->rep[i].attempted);
}

static bool same_result(const struct ranges_result *a, const struct ranges_result *b)
{
	if (a->ret != b->ret)
		return false;
	for (int i = 0; i < NR_R; i++) {
		struct thp_report x = a->rep[i], y = b->rep[i];

		x.backend = y.backend = 0;
		if (memcmp(&x, &y, sizeof(x)))
			return false;
	}
	return true;
}

void check_apply_ranges(void)
{
	static const uint32_t flagsets[] = { 0, THP_F_SKIP_ERRORS, THP_F_NO_ERROR_ON_UNMAPPED };
	struct check c = { .name = "apply_ranges" };
	int nb = 0;

	for (size_t f = 0; f < sizeof(flagsets) / sizeof(flagsets[0]); f++) {
		struct ranges_result first, cur;
		unsigned int first_be = 0;
		char b1[1024], b2[1024];

		for (size_t b = 0; b < sizeof(range_backends) / sizeof(range_backends[0]); b++) {
			unsigned int be = range_backends[b];

			if (!(pinfo.backends & (1u << be)))
				continue;
			if (f == 0)
				nb++;
			run_ranges(be, flagsets[f], first_be ? &cur : &first, &c);
			if (!first_be) {
				first_be = be;
				fmt_result(&first, b1, sizeof(b1));
				printf("VMTEST INFO apply_ranges flags=%u %s: %s\n", flagsets[f],
				       thp_backend_name(be), b1);
				continue;
			}
			if (!same_result(&first, &cur)) {
				fmt_result(&first, b1, sizeof(b1));
				fmt_result(&cur, b2, sizeof(b2));
				cfail(&c, "flags %u: %s gives {%s} but %s gives {%s}", flagsets[f],
				      thp_backend_name(first_be), b1, thp_backend_name(be), b2);
			}
		}
		/* Expected reports, from the layout alone (README's error semantics). */
		for (int i = 0; i < NR_R; i++) {
			bool stopped = flagsets[f] == 0 && i > 2;
			uint64_t unm = i == 2 || i == 3 ? 2 * MiB : 0;
			uint64_t adv = i == 3 ? 0 : (i == 2 ? 2 * MiB : rdef[i].len);
			const struct thp_report *r = &first.rep[i];
			int err = flagsets[f] == 0 && i == 2 ? ENOMEM : 0;

			if (stopped ? r->attempted != 0 :
			    (r->attempted != 1 || r->bytes_advised != adv || r->bytes_unmapped != unm ||
			     r->error != err || (err && r->fail_addr != 4 * MiB)))
				cfail(&c, "flags %u range %d [%luM+%luM]: advised %lluK unmapped %lluK "
				      "error %d at %+lldK attempted %u, expected %s%lluK/%lluK/%d",
				      flagsets[f], i, rdef[i].off / MiB, rdef[i].len / MiB,
				      (unsigned long long)r->bytes_advised >> 10,
				      (unsigned long long)r->bytes_unmapped >> 10, r->error,
				      (long long)r->fail_addr >> 10, r->attempted,
				      stopped ? "not attempted, not " : "",
				      (unsigned long long)adv >> 10, (unsigned long long)unm >> 10, err);
		}
		/* Expected semantics, backend-independent. */
		if (flagsets[f] == 0 && first.ret != -ENOMEM)
			cfail(&c, "flags 0: ret %d, expected -ENOMEM", first.ret);
		if (flagsets[f] == THP_F_SKIP_ERRORS && first.ret != NR_R)
			cfail(&c, "SKIP_ERRORS: ret %d, expected %d", first.ret, NR_R);
		if (flagsets[f] == THP_F_NO_ERROR_ON_UNMAPPED && first.ret != NR_R)
			cfail(&c, "NO_ERROR_ON_UNMAPPED: ret %d, expected %d", first.ret, NR_R);
	}
	if (nb != (rfc ? 3 : kx.pm_self_huge ? 2 : 1))
		cfail(&c, "%d range backends available, expected %d", nb,
		      rfc ? 3 : kx.pm_self_huge ? 2 : 1);
	cdone(&c);
}

/* Which backend auto picks for a range call on self, per advice (for the README tables). */
void report_auto_backends(void)
{
	static const int advice[] = { THP_ADVICE_HUGE, THP_ADVICE_NOHUGE, THP_ADVICE_COLLAPSE };
	static const char *const names[] = { "huge", "nohuge", "collapse" };
	char *p = mmap(NULL, 4 * MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return;
	p[0] = 1;
	printf("VMTEST INFO auto");
	for (size_t i = 0; i < 3; i++) {
		struct thp_range rg = { .addr = (uintptr_t)p, .len = 4 * MiB };
		THP_OPTS(thp_apply_opts, o, .advice = advice[i], .flags = THP_F_SKIP_ERRORS);
		int r = thp_apply_ranges(&rg, 1, &o);

		printf(" %s=%s", names[i], r >= 0 ? thp_backend_name(o.backend_used) : "refused");
	}
	printf("\n");
	munmap(p, 4 * MiB);
}
