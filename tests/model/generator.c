// SPDX-License-Identifier: LGPL-2.1-or-later
/* thp_model's generator: a random case (layout and request) from a seed, and its printout. */
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

#include "checker.h"

const char *const kind_names[K_NR] = { "anon", "anon-prot-none", "anon-ro", "shared-anon",
				       "file", "memfd", "mremapped" };

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

void gen_case(struct case_spec *c, uint64_t seed, bool big_ok)
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

void print_case(FILE *f, const struct case_spec *c)
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
