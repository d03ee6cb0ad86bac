// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Shared by the default-policy tests and thp_child_report: a fresh, isolated,
 * 2 MiB-aligned anonymous test mapping and an independent /proc/self/smaps
 * reader (deliberately not thp_query(), so the tests do not trust the code
 * under test to measure itself).  #included, not linked: everything static.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "compat.h" /* MADV_HUGEPAGE */

#define TU_PMD (2UL << 20)
#define TU_LEN (4UL << 20)            /* two PMDs */
#define TU_RESERVE (TU_LEN + 3 * TU_PMD) /* guards around it, never merged */

#define TU_UNUSED __attribute__((unused))

struct tu_map {
	char *base;  /* PROT_NONE reservation */
	char *addr;  /* 2 MiB-aligned, TU_LEN bytes, read/write */
};

struct tu_smaps {
	bool found;
	bool hg, nh;
	long anonhuge_kb;
	long rss_kb;
};

/*
 * Map TU_LEN bytes at a 2 MiB-aligned address as a fresh anonymous mapping
 * (so it gets mm->def_flags), surrounded by PROT_NONE guards so that it can
 * never merge with a neighbour.  Optionally MADV_HUGEPAGE, then touch.
 */
static TU_UNUSED int tu_map_touch(struct tu_map *m, bool advise_huge, bool touch)
{
	uintptr_t a;
	void *p;

	m->base = mmap(NULL, TU_RESERVE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		       -1, 0);
	if (m->base == MAP_FAILED)
		return -1;
	a = ((uintptr_t)m->base + 4096 + TU_PMD - 1) & ~(TU_PMD - 1);
	p = mmap((void *)a, TU_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
		 -1, 0);
	if (p == MAP_FAILED) {
		munmap(m->base, TU_RESERVE);
		return -1;
	}
	m->addr = p;
	if (advise_huge && madvise(p, TU_LEN, MADV_HUGEPAGE))
		return -1;
	if (touch)
		memset(p, 0x5a, TU_LEN);
	return 0;
}

static TU_UNUSED void tu_unmap(struct tu_map *m)
{
	if (m->base && m->base != MAP_FAILED)
		munmap(m->base, TU_RESERVE);
	m->base = m->addr = NULL;
}

/* The smaps entry that starts at @addr: VmFlags hg/nh, AnonHugePages, Rss. */
static TU_UNUSED int tu_smaps_at(const void *addr, struct tu_smaps *s)
{
	char line[1024];
	bool in = false;
	FILE *f = fopen("/proc/self/smaps", "re");

	memset(s, 0, sizeof(*s));
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		char c;

		if (sscanf(line, "%lx-%lx %c", &lo, &hi, &c) == 3 && strchr(line, ' ') &&
		    line[strcspn(line, " ")] == ' ' && strchr(line, '-') < strchr(line, ' ')) {
			if (in)
				break;
			in = lo == (uintptr_t)addr;
			s->found |= in;
			continue;
		}
		if (!in)
			continue;
		if (!strncmp(line, "AnonHugePages:", 14))
			s->anonhuge_kb = strtol(line + 14, NULL, 10);
		else if (!strncmp(line, "Rss:", 4))
			s->rss_kb = strtol(line + 4, NULL, 10);
		else if (!strncmp(line, "VmFlags:", 8)) {
			/* two-letter words separated by spaces */
			for (char *w = line + 8; *w; w++) {
				if (w[0] == ' ' && w[1] && w[2] && (w[3] == ' ' || w[3] == '\n' || !w[3])) {
					if (w[1] == 'h' && w[2] == 'g')
						s->hg = true;
					if (w[1] == 'n' && w[2] == 'h')
						s->nh = true;
				}
			}
		}
	}
	fclose(f);
	return s->found ? 0 : -1;
}

/* Map, optionally advise, touch, measure, unmap. */
static TU_UNUSED int tu_probe_fresh(bool advise_huge, struct tu_smaps *s)
{
	struct tu_map m;
	int r;

	if (tu_map_touch(&m, advise_huge, true))
		return -1;
	r = tu_smaps_at(m.addr, s);
	tu_unmap(&m);
	return r;
}
