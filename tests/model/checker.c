// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * thp_model: the generator and checker around the reference model.
 *
 * Each case (one seed) builds a random layout in a fresh child process
 * (holes, PROT_NONE, read-only, shared anon, file and memfd mappings,
 * mremap()ed and merged neighbours, guard regions and mseal() where the
 * kernel has them, now and then one mapping past the 2 GiB per-call limit,
 * partly populated memory for COLLAPSE) and a random request (1 to 10,000
 * ranges x advice x flags, or thp_apply_all()).  The request then runs in a
 * child per backend the kernel offers (auto and each forced one) and per
 * VMA walk mode (PROCMAP_QUERY, and the maps text forced through seccomp),
 * and the checker compares:
 *   - the library's return value, every report field and the counts with
 *     the model (model.c), fed the layout read from /proc/self/smaps just
 *     before the call;
 *   - the model's VmFlags (hg/nh) for every page, and THPeligible, with
 *     /proc/self/smaps after the call, in the process and (in one
 *     configuration a case, a different one from seed to seed) in a forked
 *     child;
 *   - for COLLAPSE, the truth of each extent (PMD-mapped huge page or not,
 *     from pagemap and kpageflags) against the report;
 *   - for a policy sequence (1 to 8 thp_set_default()/thp_get_default()
 *     calls, with and without REQUIRE_PERSISTENT, NO_EXISTING and the RFC
 *     prctl declared), each answer, PR_GET_THP_DISABLE, the RFC prctl's
 *     policy, every existing mapping's advice and a fresh mapping's after
 *     each call, and at the end the state a forked and an exec()ed child
 *     get; the kernel's part (does a new mm keep a PMADV hg default, does
 *     the RFC prctl advise existing mappings) is measured with raw calls.
 * A divergence prints the seed and a shrunk reproducer (fewest mappings,
 * fewest ranges, fewest calls), and is replayed with THP_MODEL_SEED=<seed>.
 *
 * Environment: THP_MODEL_CASES (default: argv[1], else 200),
 * THP_MODEL_FIRST_SEED (default 1), THP_MODEL_SEED (replay one case),
 * THP_MODEL_BIG=0 (no 2 GiB mappings), THP_MODEL_VERBOSE=1.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"
#include "model.h"

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102 /* 6.13 */
#endif
#ifndef __NR_mseal
#define __NR_mseal 462 /* 6.10 */
#endif
#define KPF_THP 22

static struct thp_probe_info pinfo;
static size_t page;
static uint64_t pmd;
static bool have_guard, have_mseal, have_pfn;
static bool verbose;

/* ---- the case: data, so that it can be shrunk and printed ---- */

enum kind { K_ANON, K_ANON_NONE, K_ANON_RO, K_SHARED, K_FILE, K_MEMFD, K_MREMAP, K_NR };
static const char *const kind_names[] = { "anon", "anon-prot-none", "anon-ro", "shared-anon",
					  "file", "memfd", "mremapped" };

#define MAX_MAPS 48
#define MAX_RANGES 10000

struct map_spec {
	uint64_t off, pages;      /* in pages from the arena start */
	uint8_t kind;
	uint8_t pre;              /* 0, or advice applied at build time to a part */
	uint64_t pre_off, pre_len;
	uint32_t populate_every;  /* touch every Nth page (0: none) */
	uint64_t guard_page;      /* 1 + page index of a guard region, 0: none */
	bool seal;
	bool present;             /* false once shrinking turned it into a hole */
};

enum req { REQ_RANGES, REQ_ALL, REQ_POLICY };

#define MAX_STEPS 8

struct policy_step {
	bool set;
	uint32_t policy, flags;
};

struct case_spec {
	uint64_t seed;
	uint64_t arena_pages;
	uint64_t align_pages;     /* arena start, in pages past a PMD boundary */
	size_t nr_maps;
	struct map_spec maps[MAX_MAPS];
	int req, advice;
	uint32_t flags;
	size_t nr_ranges;
	struct thp_range *ranges; /* addr: offset from the arena start */
	size_t nr_steps;          /* REQ_POLICY: set/get calls in order */
	struct policy_step steps[MAX_STEPS];
};

static uint64_t rng;

static uint64_t rnd(uint64_t n)
{
	rng ^= rng >> 12;
	rng ^= rng << 25;
	rng ^= rng >> 27;
	return n ? (rng * 2685821657736338717ULL) % n : 0;
}

static uint64_t gen_pages(bool collapse)
{
	uint64_t ext = pmd / page;

	switch (rnd(collapse ? 3 : 5)) {
	case 0:
		return ext * (1 + rnd(3));
	case 1:
		return ext * (1 + rnd(2)) + rnd(ext);
	case 2:
		return 1 + rnd(ext);
	default:
		return 1 + rnd(8);
	}
}

static void gen_case(struct case_spec *c, uint64_t seed, bool big_ok)
{
	uint64_t ext = pmd / page, cur = 0;
	bool big, collapse;

	memset(c, 0, sizeof(*c));
	c->seed = seed;
	rng = seed * 0x9E3779B97F4A7C15ULL + 1;
	rnd(1);
	c->advice = rnd(5) < 2 ? THP_ADVICE_HUGE : THP_ADVICE_NOHUGE;
	collapse = pinfo.madvise_collapse && have_pfn && rnd(5) == 0;
	if (collapse)
		c->advice = THP_ADVICE_COLLAPSE;
	big = big_ok && !collapse && rnd(48) == 0;
	c->req = !collapse && rnd(7) == 0 ? REQ_ALL : REQ_RANGES;
	/* Policy sequences, on every kernel (the RFC prctl declared or not). */
	if (!collapse && rnd(6) == 0) {
		c->req = REQ_POLICY;
		c->nr_steps = 1 + rnd(MAX_STEPS);
		for (size_t i = 0; i < c->nr_steps; i++) {
			c->steps[i].set = rnd(5) < 3;
			c->steps[i].policy = (uint32_t)rnd(THP_POLICY_COUNT);
			/* REQUIRE_PERSISTENT, NO_EXISTING, RFC_PRCTL (78/79) */
			c->steps[i].flags = (uint32_t)rnd(8);
		}
	}
	c->flags = (uint32_t)rnd(4);
	c->align_pages = rnd(3) ? 0 : rnd(ext);
	c->nr_maps = 1 + (rnd(4) ? rnd(6) : rnd(MAX_MAPS));
	for (size_t i = 0; i < c->nr_maps; i++) {
		struct map_spec *m = &c->maps[i];

		cur += rnd(3) == 0 ? 0 : rnd(4) == 0 ? rnd(2 * ext) : 1 + rnd(4);
		m->off = cur;
		m->pages = gen_pages(collapse);
		if (big && i == 0)
			m->pages = (2ULL << 30) / page + rnd(2 * ext);
		m->kind = (uint8_t)(collapse ? (rnd(4) ? K_ANON : K_MREMAP) : rnd(3) ? K_ANON : rnd(K_NR));
		if (big && i == 0)
			m->kind = K_ANON;
		if (rnd(3) == 0) {
			m->pre = rnd(2) ? THP_ADVICE_HUGE : THP_ADVICE_NOHUGE;
			m->pre_off = rnd(m->pages);
			m->pre_len = 1 + rnd(m->pages - m->pre_off);
		}
		if (!(big && i == 0) && m->kind != K_ANON_NONE && rnd(collapse ? 4 : 3))
			m->populate_every = 1 + (uint32_t)rnd(collapse ? 3 * ext : 64);
		if (have_guard && (m->kind == K_ANON || m->kind == K_ANON_RO) && rnd(12) == 0)
			m->guard_page = 1 + rnd(m->pages);
		m->seal = have_mseal && rnd(16) == 0;
		m->present = true;
		cur += m->pages;
	}
	c->arena_pages = cur + rnd(4);

	/* 1 to 10,000 ranges: mostly a few, sometimes thousands of small ones. */
	if (c->req == REQ_RANGES) {
		bool many = rnd(40) == 0;

		c->nr_ranges = many ? 100 + rnd(MAX_RANGES - 99) : 1 + rnd(rnd(3) ? 4 : 40);
		c->ranges = calloc(c->nr_ranges, sizeof(*c->ranges));
		for (size_t i = 0; i < c->nr_ranges; i++) {
			uint64_t start = rnd(c->arena_pages), len;
			const struct map_spec *m = &c->maps[rnd(c->nr_maps)];

			if (rnd(3) == 0)
				start = m->off + (rnd(2) ? 0 : rnd(m->pages)); /* at or in a mapping */
			len = rnd(4) == 0 ? 0 : 1 + rnd(many ? 4 : c->arena_pages - start);
			if (start + len > c->arena_pages)
				len = c->arena_pages - start;
			c->ranges[i].addr = start * page;
			c->ranges[i].len = len * page;
			if (len && rnd(5) == 0)
				c->ranges[i].len -= 1 + rnd(page - 1); /* rounded up by the library */
			else if (!len && rnd(2))
				c->ranges[i].len = rnd(page); /* 0, or part of a page */
		}
	}
}

static void print_case(FILE *f, const struct case_spec *c)
{
	static const char *const adv[] = { [THP_ADVICE_HUGE] = "HUGE",
					   [THP_ADVICE_NOHUGE] = "NOHUGE",
					   [THP_ADVICE_COLLAPSE] = "COLLAPSE" };

	fprintf(f, "  %s advice %s flags 0x%x, arena %" PRIu64 " pages at PMD + %" PRIu64 " pages\n",
		c->req == REQ_ALL ? "thp_apply_all" : c->req == REQ_POLICY ? "policy sequence" :
		"thp_apply_ranges", adv[c->advice], c->flags,
		c->arena_pages, c->align_pages);
	for (size_t i = 0; i < c->nr_maps; i++) {
		const struct map_spec *m = &c->maps[i];

		if (!m->present)
			continue;
		fprintf(f, "  mapping pages [%" PRIu64 ", %" PRIu64 ") %s", m->off, m->off + m->pages,
			kind_names[m->kind]);
		if (m->pre)
			fprintf(f, ", %s on [%" PRIu64 ", +%" PRIu64 ")",
				m->pre == THP_ADVICE_HUGE ? "hg" : "nh", m->pre_off, m->pre_len);
		if (m->populate_every)
			fprintf(f, ", every %u. page touched", m->populate_every);
		if (m->guard_page)
			fprintf(f, ", guard at +%" PRIu64, m->guard_page - 1);
		if (m->seal)
			fprintf(f, ", sealed");
		fprintf(f, "\n");
	}
	for (size_t i = 0; i < c->nr_steps; i++)
		fprintf(f, "  call %zu: thp_%s_default(%s, flags 0x%x)\n", i,
			c->steps[i].set ? "set" : "get",
			c->steps[i].set ? thp_policy_name(c->steps[i].policy) : "-", c->steps[i].flags);
	for (size_t i = 0; i < c->nr_ranges && i < 64; i++)
		fprintf(f, "  range %zu: page %" PRIu64 " + %" PRIu64 " bytes\n", i,
			c->ranges[i].addr / page, c->ranges[i].len);
	if (c->nr_ranges > 64)
		fprintf(f, "  ... %zu ranges in all\n", c->nr_ranges);
}

/* ---- building the layout (in the case's own process) ---- */

static int file_fd(uint64_t len, bool memfd)
{
	char path[] = "/tmp/thp-model-XXXXXX";
	int fd;

	if (memfd) {
		fd = (int)syscall(SYS_memfd_create, "thp-model", 0);
	} else {
		mkdir("/tmp", 01777);
		fd = mkstemp(path);
		if (fd >= 0)
			unlink(path);
	}
	if (fd >= 0 && ftruncate(fd, (off_t)len)) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static int map_one(uint64_t base, const struct map_spec *m)
{
	uint64_t len = m->pages * page;
	void *want = (void *)(uintptr_t)(base + m->off * page), *p = MAP_FAILED;
	int fixed = MAP_FIXED | MAP_NORESERVE;
	int fd;

	switch (m->kind) {
	case K_ANON:
	case K_ANON_NONE:
	case K_ANON_RO:
		p = mmap(want, len, m->kind == K_ANON ? PROT_READ | PROT_WRITE :
				    m->kind == K_ANON_RO ? PROT_READ : PROT_NONE,
			 MAP_PRIVATE | MAP_ANONYMOUS | fixed, -1, 0);
		break;
	case K_SHARED:
		p = mmap(want, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | fixed, -1, 0);
		break;
	case K_FILE:
	case K_MEMFD:
		fd = file_fd(len, m->kind == K_MEMFD);
		if (fd < 0)
			return -1;
		p = mmap(want, len, m->kind == K_FILE ? PROT_READ : PROT_READ | PROT_WRITE,
			 (m->kind == K_FILE ? MAP_PRIVATE : MAP_SHARED) | fixed, fd, 0);
		close(fd);
		break;
	case K_MREMAP: {
		void *old = mmap(NULL, len, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

		if (old == MAP_FAILED)
			return -1;
		*(volatile char *)old = 1;
		p = mremap(old, len, len, MREMAP_MAYMOVE | MREMAP_FIXED, want);
		break;
	}
	}
	if (p != want)
		return -1;
	if (m->pre && madvise((char *)p + m->pre_off * page, m->pre_len * page, m->pre))
		return -1;
	if (m->populate_every && m->kind != K_ANON_NONE)
		for (uint64_t i = 0; i < m->pages; i += m->populate_every) {
			volatile char *q = (char *)p + i * page;

			if (m->kind == K_ANON_RO || m->kind == K_FILE)
				(void)*q;
			else
				*q = 1;
		}
	if (m->guard_page &&
	    madvise((char *)p + (m->guard_page - 1) * page, page, MADV_GUARD_INSTALL))
		return -1;
	if (m->seal && syscall(__NR_mseal, p, len, 0))
		return -1;
	return 0;
}

/* Map the case's layout; its arena start, or 0 when the kernel refused a step. */
static uint64_t build(const struct case_spec *c)
{
	uint64_t span = (c->arena_pages + c->align_pages) * page + pmd;
	char *res = mmap(NULL, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	uint64_t base, hole = 0;

	if (res == MAP_FAILED)
		return 0;
	base = (((uint64_t)(uintptr_t)res + pmd - 1) & ~(pmd - 1)) + c->align_pages * page;
	for (size_t i = 0; i < c->nr_maps; i++)
		if (c->maps[i].present && map_one(base, &c->maps[i])) {
			fprintf(stderr, "seed %" PRIu64 ": building mapping %zu (%s): %s\n", c->seed,
				i, kind_names[c->maps[i].kind], strerror(errno));
			return 0;
		}
	/* Everything of the reservation that is not a mapping becomes a hole (maps[] ascend). */
	for (size_t i = 0; i <= c->nr_maps; i++) {
		const struct map_spec *m = &c->maps[i];
		uint64_t to = i < c->nr_maps ? m->off : c->arena_pages;

		if (i < c->nr_maps && !m->present)
			continue;
		if (to > hole)
			munmap((void *)(uintptr_t)(base + hole * page), (to - hole) * page);
		if (i < c->nr_maps)
			hole = m->off + m->pages;
	}
	munmap(res, (size_t)(base - (uint64_t)(uintptr_t)res));
	munmap((void *)(uintptr_t)(base + c->arena_pages * page),
	       (size_t)((uint64_t)(uintptr_t)res + span - base - c->arena_pages * page));
	return base;
}

/* ---- the truth: /proc/self/smaps, pagemap and kpageflags ---- */

struct vma {
	uint64_t start, end;
	bool hg, nh, anon_private_rw, vsyscall;
	int eligible; /* THPeligible, -1 if absent */
};

struct snapshot {
	struct vma *v;
	size_t n, cap;
};

/* Read every mapping of this process; allocates nothing (the caller sized @s). */
static int snap_read(struct snapshot *s)
{
	static char buf[1 << 16];
	char line[4096];
	size_t len = 0, have = 0, pos = 0;
	int fd = open("/proc/self/smaps", O_RDONLY | O_CLOEXEC);
	struct vma *cur = NULL;

	if (fd < 0)
		return -errno;
	s->n = 0;
	for (;;) {
		char *nl;

		if (pos == have) {
			ssize_t r = read(fd, buf, sizeof(buf));

			if (r <= 0)
				break;
			have = (size_t)r;
			pos = 0;
		}
		nl = memchr(buf + pos, '\n', have - pos);
		{
			size_t take = (nl ? (size_t)(nl - (buf + pos)) : have - pos);

			if (len + take < sizeof(line)) {
				memcpy(line + len, buf + pos, take);
				len += take;
			}
			pos += take + (nl ? 1 : 0);
		}
		if (!nl)
			continue;
		line[len] = 0;
		len = 0;
		/*
		 * A header starts with a lower-case hex digit, a field with a
		 * capital: sscanf() only for headers.  Under TCG, sscanf() on
		 * every line was 40% of the time a guest took to read smaps.
		 */
		if ((line[0] >= '0' && line[0] <= '9') || (line[0] >= 'a' && line[0] <= 'f')) {
			unsigned long long a, b, off, ino;
			char perms[8];
			unsigned int maj, mn;
			int n = 0;

			if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &a, &b, perms, &off, &maj,
				   &mn, &ino, &n) >= 7 && n) {
				if (s->n == s->cap) {
					close(fd);
					return -ENOSPC;
				}
				cur = &s->v[s->n++];
				memset(cur, 0, sizeof(*cur));
				cur->start = a;
				cur->end = b;
				cur->eligible = -1;
				cur->anon_private_rw = !strncmp(perms, "rw-p", 4) && ino == 0 &&
						       (!line[n] || line[n] == '[');
				cur->vsyscall = strstr(line + n, "[vsyscall]") != NULL;
				continue;
			}
		}
		if (!cur)
			continue;
		if (!strncmp(line, "THPeligible:", 12))
			cur->eligible = atoi(line + 12);
		else if (!strncmp(line, "VmFlags:", 8)) {
			cur->hg = strstr(line, " hg") != NULL;
			cur->nh = strstr(line, " nh") != NULL;
		}
	}
	close(fd);
	return 0;
}

static struct snapshot snap, prev;
static int pagemap_fd = -1, kpageflags_fd = -1;

static bool pfn_of(uint64_t addr, uint64_t *pfn)
{
	uint64_t e;

	if (pread(pagemap_fd, &e, sizeof(e), (off_t)(addr / page * sizeof(e))) != sizeof(e) ||
	    !(e >> 63))
		return false;
	*pfn = e & ((1ULL << 55) - 1);
	return *pfn != 0;
}

/*
 * PAGEMAP_SCAN (6.7), with names of our own: <linux/fs.h> of older UAPI
 * headers lacks it.  PAGE_IS_HUGE marks a PMD-mapped (or hugetlb) range.
 */
struct scan_region {
	uint64_t start, end, categories;
};
struct scan_arg {
	uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages;
	uint64_t category_inverted, category_mask, category_anyof_mask, return_mask;
};
#define SCAN_IOCTL _IOWR('f', 16, struct scan_arg)
#define SCAN_PAGE_IS_HUGE (1 << 6)

/*
 * Is the extent at @addr one PMD-mapped huge page now?  Where PAGEMAP_SCAN
 * answers, it decides: a whole huge folio mapped by PTEs (left so by an
 * mremap() that split the PMD) has contiguous, aligned THP frames, yet
 * MADV_COLLAPSE may refuse it (seed 6553: EINVAL, and the frames test
 * called it huge).  Before 6.7: the frames test.
 */
static bool extent_huge(uint64_t addr)
{
	struct scan_region reg[2];
	struct scan_arg a = { .size = sizeof(a), .start = addr, .end = addr + pmd,
			      .vec = (uint64_t)(uintptr_t)reg, .vec_len = 2,
			      .category_mask = SCAN_PAGE_IS_HUGE,
			      .return_mask = SCAN_PAGE_IS_HUGE };
	uint64_t first, last, flags;
	int n;

	n = ioctl(pagemap_fd, SCAN_IOCTL, &a);
	if (n >= 0)
		return n == 1 && reg[0].start == addr && reg[0].end == addr + pmd;
	if (!pfn_of(addr, &first) || !pfn_of(addr + pmd - page, &last))
		return false;
	if (first % (pmd / page) || last != first + pmd / page - 1)
		return false;
	if (pread(kpageflags_fd, &flags, sizeof(flags), (off_t)(first * sizeof(flags))) !=
	    sizeof(flags))
		return false;
	return flags & (1ULL << KPF_THP);
}

/* The model's input: the arena's pages as the snapshot shows them. */
static void arena_from_snap(struct model_arena *a, const struct snapshot *s)
{
	uint64_t lo = a->base, hi = a->base + a->nr_pages * page;

	memset(a->page, 0, a->nr_pages);
	for (size_t i = 0; i < s->n; i++) {
		const struct vma *v = &s->v[i];
		uint64_t from = v->start > lo ? v->start : lo, to = v->end < hi ? v->end : hi;

		for (uint64_t p = from; p < to; p += page)
			a->page[(p - lo) / page] = (uint8_t)(MP_MAPPED | (v->hg ? MP_HG : 0) |
				(v->nh ? MP_NH : 0) | (p == v->start ? MP_VMA_START : 0));
	}
}

/* ---- one run: one backend, one walk mode, in its own child ---- */

struct run_cfg {
	unsigned int backend;
	bool text_walk;
	bool fork_check; /* also compare a forked child's smaps with the model */
};

static char why[1024];

static bool __attribute__((format(printf, 1, 2))) diverge(const char *fmt, ...)
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
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
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
static bool check_smaps(const struct model_arena *a, const char *where)
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

/* The VmFlags are inherited: a forked child must see the same. */
static bool check_forked(const struct model_arena *a)
{
	pid_t pid = fork();
	int st;

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

	if (want == THP_BACKEND_AUTO && c->advice != THP_ADVICE_COLLAPSE)
		want = model_auto_backend(&(struct model_caps){ pinfo.backends });
	if (want == THP_BACKEND_AUTO) /* COLLAPSE: the best one that has it */
		return got == THP_BACKEND_PMADV ? (pinfo.backends >> THP_BACKEND_PMADV) & 1 :
		       got == THP_BACKEND_PROCESS_MADVISE || got == THP_BACKEND_MADVISE;
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

static bool run_ranges(const struct case_spec *c, const struct run_cfg *r, struct model_arena *a)
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
	THP_OPTS(thp_apply_opts, o, .advice = c->advice, .flags = c->flags, .backend = r->backend,
		 .reports = lib);
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

/* Whether @v overlaps a mapping of @s: false for one that appeared since @s was read. */
static bool overlaps_snapshot(const struct snapshot *s, const struct vma *v)
{
	for (size_t k = 0; k < s->n; k++)
		if (v->start < s->v[k].end && s->v[k].start < v->end)
			return true;
	return false;
}

static bool run_all(const struct case_spec *c, const struct run_cfg *r, struct model_arena *a)
{
	THP_OPTS(thp_apply_all_opts, o, .advice = c->advice, .flags = c->flags,
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

/* THP_enabled: of /proc/self/status, -1 when the kernel has no such line. */
static int status_thp_enabled(void)
{
	char buf[8192];
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	const char *p;

	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	p = strstr(buf, "THP_enabled:");
	return p ? atoi(p + 12) : -1;
}

static const struct vma *snap_at(uint64_t addr)
{
	for (size_t i = 0; i < snap.n; i++)
		if (snap.v[i].start <= addr && addr < snap.v[i].end)
			return &snap.v[i];
	return NULL;
}

static char *self_exe_path;

/* ---- default policies: the kernel measured, then the sequence ---- */

static struct model_kernel kern;
static struct model_policy_state start_state;

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
static int measure_kernel(void)
{
	long g;

	kern.except_advised = pinfo.thp_disable_except_advised;
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
static int report_state(void)
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

/* The state in a forked and an exec()ed child: what model_new_mm() says. */
static bool check_children(const struct model_policy_state *s)
{
	struct model_policy_state child;
	int want, forked = child_says(report_state), execed = child_says(exec_report_state);

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

static uint64_t judged_lo, judged_hi; /* under a sanitizer: [lo, hi) holds the case's mappings */

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
static bool check_existing(size_t step, unsigned int advises, uint64_t *appeared)
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

static bool run_policy(const struct case_spec *c, uint64_t arena_base)
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

/* A forced backend the kernel lacks: -EOPNOTSUPP, and nothing changes. */
static bool run_refused(const struct case_spec *c, const struct run_cfg *r, struct model_arena *a)
{
	THP_OPTS(thp_apply_opts, o, .advice = c->advice, .flags = c->flags, .backend = r->backend);
	THP_OPTS(thp_apply_all_opts, ao, .advice = c->advice, .flags = c->flags,
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

static bool backend_offered(const struct case_spec *c, unsigned int be)
{
	/* COLLAPSE goes through mainline process_madvise() even where HUGE cannot. */
	if (c->advice == THP_ADVICE_COLLAPSE && be == THP_BACKEND_PROCESS_MADVISE)
		return pinfo.pidfd_self || (pinfo.backends >> be) & 1 || pinfo.madvise_collapse;
	return be == THP_BACKEND_AUTO || ((pinfo.backends >> be) & 1);
}

/* In a child: one configuration; exit 0 when library, model and kernel agree. */
static void run_child(const struct case_spec *c, const struct run_cfg *r, uint64_t base, int wfd)
{
	struct model_arena a = { .base = base, .nr_pages = c->arena_pages, .page_size = page,
				 .pmd_size = pmd };
	bool ok;

	if (r->text_walk && force_text_walk()) {
		diverge("cannot force the text walk: %s", strerror(errno));
		goto out;
	}
	/* Opened here: /proc/self is the process that opens it. */
	pagemap_fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	a.page = malloc(a.nr_pages);
	if (!a.page) {
		diverge("out of memory");
		goto out;
	}
	if (c->req == REQ_POLICY)
		ok = run_policy(c, base);
	else if (!backend_offered(c, r->backend))
		ok = run_refused(c, r, &a);
	else if (c->req == REQ_ALL)
		ok = run_all(c, r, &a) && check_smaps(&a, "after the call") &&
		     (!r->fork_check || check_forked(&a));
	else
		ok = run_ranges(c, r, &a) && check_smaps(&a, "after the call") &&
		     (!r->fork_check || check_forked(&a));
	(void)ok;
out:
	if (why[0] && write(wfd, why, strlen(why)) < 0)
		_exit(2);
	_exit(why[0] ? 1 : 0);
}

static const unsigned int all_backends[] = { THP_BACKEND_AUTO, THP_BACKEND_PMADV,
					     THP_BACKEND_PROCESS_MADVISE, THP_BACKEND_MADVISE };

/* The case's own process: build, then every configuration in a child of it. */
static void case_child(const struct case_spec *c, int wfd)
{
	uint64_t base = build(c);
	size_t nr_runs = 0, fork_run;
	char msg[1200];

	if (!base) {
		snprintf(msg, sizeof(msg), "BUILD the layout could not be built");
		if (write(wfd, msg, strlen(msg)) < 0)
			_exit(2);
		_exit(3);
	}
	/*
	 * A forked child inherits the mappings, flags and all: its smaps is
	 * compared with the model in one configuration a case, a different
	 * one from seed to seed (each fork and smaps read cost a TCG guest
	 * about 3 ms; in every configuration they were a third of its time).
	 */
	for (size_t b = 0; b < sizeof(all_backends) / sizeof(all_backends[0]); b++)
		nr_runs += backend_offered(c, all_backends[b]) ? 1 + !!pinfo.procmap_query : 0;
	fork_run = nr_runs ? (size_t)(c->seed % nr_runs) : 0;
	nr_runs = 0;
	for (size_t b = 0; b < sizeof(all_backends) / sizeof(all_backends[0]); b++)
		for (int text = 0; text < 2; text++) {
			struct run_cfg r = { all_backends[b], text, false };
			int p[2], st;
			pid_t pid;
			ssize_t n;

			/* Without PROCMAP_QUERY the text walk is the only one. */
			if (!text && !pinfo.procmap_query)
				continue;
			/* A policy sequence is the process's own: once, through AUTO. */
			if (c->req == REQ_POLICY && (b || text != !pinfo.procmap_query))
				continue;
			if (backend_offered(c, r.backend))
				r.fork_check = nr_runs++ == fork_run;
			if (pipe(p))
				_exit(2);
			pid = fork();
			if (pid == 0) {
				close(p[0]);
				run_child(c, &r, base, p[1]);
			}
			close(p[1]);
			n = read(p[0], why, sizeof(why) - 1);
			why[n > 0 ? n : 0] = 0;
			close(p[0]);
			waitpid(pid, &st, 0);
			if (!WIFEXITED(st) || WEXITSTATUS(st)) {
				snprintf(msg, sizeof(msg), "backend %s, %s walk: %s",
					 thp_backend_name(r.backend), text ? "maps text" : "PROCMAP_QUERY",
					 why[0] ? why : "the run died");
				if (write(wfd, msg, strlen(msg)) < 0)
					_exit(2);
				_exit(1);
			}
		}
	_exit(0);
}

/* 0 agree, 1 divergence (its message in @msg), 3 layout not buildable. */
static int run_case(const struct case_spec *c, char *msg, size_t cap)
{
	int p[2], st;
	pid_t pid;
	ssize_t n;

	msg[0] = 0;
	if (pipe(p))
		return 1;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		case_child(c, p[1]);
	}
	close(p[1]);
	n = read(p[0], msg, cap - 1);
	msg[n > 0 ? n : 0] = 0;
	close(p[0]);
	waitpid(pid, &st, 0);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 3)
		return 3;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}

/* ---- shrinking: fewest mappings, fewest ranges, same divergence ---- */

/*
 * Each of the *nr items of @items (ranges or calls) left out in turn, and
 * kept out while the case still diverges; at least one stays.  True when
 * one was dropped.
 */
static bool drop_each(struct case_spec *c, void *items, size_t *nr, size_t size, char *msg,
		      size_t cap)
{
	unsigned char saved[32], *it = items;
	bool dropped = false;
	char m2[1200];

	if (size > sizeof(saved))
		return false;
	for (size_t i = 0; *nr > 1 && i < *nr; i++) {
		memcpy(saved, it + i * size, size);
		memmove(it + i * size, it + (i + 1) * size, (*nr - i - 1) * size);
		(*nr)--;
		if (run_case(c, m2, sizeof(m2)) == 1) {
			snprintf(msg, cap, "%s", m2);
			dropped = true;
			i--;
			continue;
		}
		memmove(it + (i + 1) * size, it + i * size, (*nr - i) * size);
		memcpy(it + i * size, saved, size);
		(*nr)++;
	}
	return dropped;
}

static void shrink(struct case_spec *c, char *msg, size_t cap)
{
	char m2[1200];
	bool progress = true;

	while (progress) {
		progress = false;
		/* Halve the ranges first: 10,000 one at a time would take long. */
		while (c->nr_ranges > 8) {
			size_t keep = c->nr_ranges;

			c->nr_ranges /= 2;
			if (run_case(c, m2, sizeof(m2)) == 1) {
				snprintf(msg, cap, "%s", m2);
				progress = true;
				continue;
			}
			/* Or the second half. */
			memmove(c->ranges, c->ranges + c->nr_ranges,
				(keep - c->nr_ranges) * sizeof(*c->ranges));
			c->nr_ranges = keep - c->nr_ranges;
			if (run_case(c, m2, sizeof(m2)) == 1) {
				snprintf(msg, cap, "%s", m2);
				progress = true;
				continue;
			}
			c->nr_ranges = keep; /* ranges now rotated: the set is the same */
			break;
		}
		if (c->nr_ranges <= 64)
			progress |= drop_each(c, c->ranges, &c->nr_ranges, sizeof(*c->ranges), msg, cap);
		/* Fewest calls: a policy sequence without each call in turn. */
		progress |= drop_each(c, c->steps, &c->nr_steps, sizeof(*c->steps), msg, cap);
		for (size_t i = 0; i < c->nr_maps; i++) {
			struct map_spec saved = c->maps[i];

			if (!c->maps[i].present)
				continue;
			c->maps[i].present = false;
			if (run_case(c, m2, sizeof(m2)) == 1) {
				snprintf(msg, cap, "%s", m2);
				progress = true;
				continue;
			}
			/* Or a plainer one: no pre-advice, guard, seal, population. */
			c->maps[i] = saved;
			if (saved.pre || saved.guard_page || saved.seal || saved.populate_every) {
				c->maps[i].pre = 0;
				c->maps[i].guard_page = 0;
				c->maps[i].seal = false;
				c->maps[i].populate_every = 0;
				if (run_case(c, m2, sizeof(m2)) == 1) {
					snprintf(msg, cap, "%s", m2);
					progress = true;
					continue;
				}
				c->maps[i] = saved;
			}
		}
	}
}

/* ---- what the kernel has ---- */

static void probe_child(int wfd)
{
	struct {
		struct thp_probe_info pi;
		bool guard, mseal, pfn;
	} res;
	void *p;

	memset(&res, 0, sizeof(res));
	res.pi.sz = sizeof(res.pi);
	if (thp_probe(&res.pi))
		_exit(1);
	p = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		_exit(1);
	*(volatile char *)p = 1;
	res.guard = madvise((char *)p + page, page, MADV_GUARD_INSTALL) == 0;
	res.mseal = syscall(__NR_mseal, p, 2 * page, 0) == 0;
	pagemap_fd = open("/proc/self/pagemap", O_RDONLY);
	{
		uint64_t pfn;

		res.pfn = pagemap_fd >= 0 && pfn_of((uint64_t)(uintptr_t)p, &pfn) &&
			  access("/proc/kpageflags", R_OK) == 0;
	}
	if (write(wfd, &res, sizeof(res)) != (ssize_t)sizeof(res))
		_exit(1);
	_exit(0);
}

/* Probe in a child: a probe in this process would fix the walk mode for every run. */
static int probe(void)
{
	struct {
		struct thp_probe_info pi;
		bool guard, mseal, pfn;
	} res;
	int p[2], st;
	pid_t pid;

	if (pipe(p))
		return -1;
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		probe_child(p[1]);
	}
	close(p[1]);
	if (read(p[0], &res, sizeof(res)) != (ssize_t)sizeof(res))
		return -1;
	close(p[0]);
	waitpid(pid, &st, 0);
	pinfo = res.pi;
	have_guard = res.guard;
	have_mseal = res.mseal;
	have_pfn = res.pfn;
	return 0;
}

enum { KIND_RANGES, KIND_MANY, KIND_BIG, KIND_COLLAPSE, KIND_ALL, KIND_POLICY, KIND_NR };
static const char *const kind_label[KIND_NR] = { "ranges", "100+ ranges", "past 2 GiB",
						 "COLLAPSE", "apply_all", "policy" };

/* The case's first mapping is past the 2 GiB per-call limit (gen_case()). */
static bool past_2gib(const struct case_spec *c)
{
	return c->maps[0].pages * page > (2ULL << 30);
}

static int kind_of(const struct case_spec *c)
{
	if (c->req == REQ_POLICY)
		return KIND_POLICY;
	if (c->req == REQ_ALL)
		return past_2gib(c) ? KIND_BIG : KIND_ALL;
	if (c->advice == THP_ADVICE_COLLAPSE)
		return KIND_COLLAPSE;
	if (past_2gib(c))
		return KIND_BIG;
	return c->nr_ranges >= 100 ? KIND_MANY : KIND_RANGES;
}

static uint64_t env_u64(const char *name, uint64_t dflt)
{
	const char *v = getenv(name);

	return v && *v ? strtoull(v, NULL, 0) : dflt;
}

int main(int argc, char **argv)
{
	uint64_t cases = env_u64("THP_MODEL_CASES", argc > 1 ? strtoull(argv[1], NULL, 0) : 200);
	uint64_t first = env_u64("THP_MODEL_FIRST_SEED", 1);
	bool replay = getenv("THP_MODEL_SEED") != NULL;
	/* valgrind's address space manager is not for 2 GiB mappings. */
	bool big_ok = env_u64("THP_MODEL_BIG", 1) != 0 && !under_valgrind();
	uint64_t done = 0, diverged = 0, unbuildable = 0, by_advice[32] = { 0 }, all_calls = 0;
	uint64_t many = 0, big = 0, policy_seqs = 0;
	/* Where a long run's time goes, by kind of case (see kind_of()). */
	double kind_s[KIND_NR] = { 0 };
	uint64_t kind_n[KIND_NR] = { 0 };
	struct timespec t0, t1, c0, c1;
	struct utsname u;
	char msg[1200];

	page = (size_t)sysconf(_SC_PAGESIZE);
	/* Room for every mapping a case has (10,000 ranges split at most that many). */
	snap.cap = 1u << 16;
	snap.v = malloc(snap.cap * sizeof(*snap.v));
	prev.cap = snap.cap;
	prev.v = malloc(prev.cap * sizeof(*prev.v));
	if (!snap.v || !prev.v)
		return 1;
	if (argc > 1 && !strcmp(argv[1], "--report-state"))
		return report_state();
	self_exe_path = realpath("/proc/self/exe", NULL);
	verbose = env_u64("THP_MODEL_VERBOSE", 0) != 0;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (probe()) {
		fprintf(stderr, "thp_model: thp_probe() failed\n");
		return 1;
	}
	if (measure_kernel()) {
		fprintf(stderr, "thp_model: cannot measure the kernel's default-policy behaviour\n");
		return 1;
	}
	pmd = pinfo.pmd_size ? pinfo.pmd_size : 2 * MiB;
	uname(&u);
	/* Under valgrind (.ci/valgrind) everything is many times slower. */
	if (under_valgrind() && !getenv("THP_MODEL_CASES"))
		cases = scaled((unsigned int)cases, 5);
	if (replay) {
		first = env_u64("THP_MODEL_SEED", 0);
		cases = 1;
	}
	printf("thp_model: kernel %s, THP mode %u, backends 0x%x, PROCMAP_QUERY %d, guard %d, "
	       "mseal %d, COLLAPSE truth %d; defaults: PMADV %d, RFC prctl %d, a new mm keeps "
	       "hg %d, the prctl advises existing %d, start state disable %d fresh %u; seeds %"
	       PRIu64 "..%" PRIu64 "\n", u.release, pinfo.thp_mode, pinfo.backends,
	       pinfo.procmap_query, have_guard, have_mseal, have_pfn, kern.pmadv_default,
	       kern.rfc_prctl, kern.new_mm_keeps_hg, kern.prctl_advises, start_state.disable,
	       start_state.def, first, first + cases - 1);
	kpageflags_fd = open("/proc/kpageflags", O_RDONLY | O_CLOEXEC);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (uint64_t seed = first; seed < first + cases; seed++) {
		struct case_spec c;
		int r, kind;

		gen_case(&c, seed, big_ok);
		if (verbose || replay) {
			printf("seed %" PRIu64 ":\n", seed);
			print_case(stdout, &c);
		}
		kind = kind_of(&c);
		clock_gettime(CLOCK_MONOTONIC, &c0);
		r = run_case(&c, msg, sizeof(msg));
		clock_gettime(CLOCK_MONOTONIC, &c1);
		kind_s[kind] += (double)(c1.tv_sec - c0.tv_sec) +
				(double)(c1.tv_nsec - c0.tv_nsec) / 1e9;
		kind_n[kind]++;
		done++;
		by_advice[c.advice]++;
		all_calls += c.req == REQ_ALL;
		policy_seqs += c.req == REQ_POLICY;
		many += c.nr_ranges >= 100;
		big += past_2gib(&c);
		if (r == 3) {
			unbuildable++;
			fprintf(stderr, "seed %" PRIu64 ": layout not buildable on this kernel\n", seed);
		} else if (r) {
			diverged++;
			printf("DIVERGENCE seed %" PRIu64 ": %s\n", seed, msg);
			shrink(&c, msg, sizeof(msg));
			printf("  shrunk reproducer: %s\n", msg);
			print_case(stdout, &c);
			printf("  replay: THP_MODEL_SEED=%" PRIu64 " %s\n", seed, argv[0]);
		}
		free(c.ranges);
		/* A long run says how far it got (it may be stopped before the end). */
		if (done % 1000 == 0) {
			clock_gettime(CLOCK_MONOTONIC, &t1);
			printf("thp_model: progress: %" PRIu64 " cases, %" PRIu64
			       " divergences, %.0f s\n", done, diverged,
			       (double)(t1.tv_sec - t0.tv_sec));
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("thp_model: time by kind:");
	for (int k = 0; k < KIND_NR; k++)
		printf(" %s %" PRIu64 " in %.1f s%s", kind_label[k], kind_n[k], kind_s[k],
		       k + 1 < KIND_NR ? "," : "\n");
	printf("thp_model: kernel %s: %" PRIu64 " cases (HUGE %" PRIu64 ", NOHUGE %" PRIu64
	       ", COLLAPSE %" PRIu64 "; %" PRIu64 " thp_apply_all, %" PRIu64 " policy sequences, %" PRIu64 " with 100+ ranges, %"
	       PRIu64 " past 2 GiB) in %.1f s: %" PRIu64
	       " divergences, %" PRIu64 " layouts not buildable\n", u.release, done,
	       by_advice[THP_ADVICE_HUGE], by_advice[THP_ADVICE_NOHUGE],
	       by_advice[THP_ADVICE_COLLAPSE], all_calls, policy_seqs, many, big,
	       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9, diverged,
	       unbuildable);
	return diverged || unbuildable ? 1 : 0;
}
