// SPDX-License-Identifier: LGPL-2.1-or-later
/* thp_model's layout builder: the case's mappings made real in the case's own process. */
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

#include <sys/stat.h>

#include "checker.h"

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
uint64_t build(const struct case_spec *c)
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
