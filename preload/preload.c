// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libthp-preload.so: a HUGE default THP policy for kernels that cannot keep
 * one across exec() (mainline), loaded through LD_PRELOAD by
 * `thpctl run --policy huge`.  Loaded means active:
 *
 * - at load time, every anonymous private mapping the process already has
 *   (heap, the ones ld.so made) is advised MADV_HUGEPAGE;
 * - mmap()/mmap64() are interposed: a new anonymous private mapping that
 *   succeeded is advised MADV_HUGEPAGE, as if mm->def_flags had VM_HUGEPAGE;
 * - malloc's own mappings, made inside libc where no interposition reaches,
 *   are covered by glibc.malloc.hugetlb=1, which thpctl sets next to
 *   LD_PRELOAD; both are inherited by children through the environment;
 * - until thp_set_default() in the program switches it off (and on again)
 *   through thp_preload_control(), the one other symbol exported.
 *
 * mremap() is not interposed: the kernel carries VM_HUGEPAGE with the
 * mapping when it grows or moves, and advising a remapped region that is
 * not advised would override an explicit MADV_NOHUGEPAGE (doc/preload.md).
 *
 * Nothing here prints (unless THP_PRELOAD_DEBUG=1) or fails the program:
 * advice that the kernel refuses is ignored, errno is what the real call
 * left.  The advice goes through libthp's syscall layer (lib/core/syscall.c),
 * not thp_apply_ranges(): that would probe the kernel (a dozen system
 * calls) in every program started under the preload.
 */
/* Both names must be defined here; with 64-bit off_t glibc aliases them. */
#undef _FILE_OFFSET_BITS
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "compat.h"
#include "internal.h"
#include "preload_env.h"
#include "syscall.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define EXPORT __attribute__((visibility("default")))

/* mmap64 takes a 64-bit offset; mmap an off_t, 32 bits on 32-bit targets. */
typedef void *(*mmap_fn)(void *, size_t, int, int, int, off_t);
typedef void *(*mmap64_fn)(void *, size_t, int, int, int, off64_t);

#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 1U
#endif

/* What dlsym() found for each name (called through its own type). */
static _Atomic(void *) real_mmap, real_mmap64;
/* Advising, until thp_set_default() switches it off (thp_preload_control()). */
static atomic_bool active = true;
/* Set while this thread is inside dlsym(): a nested mmap takes the syscall. */
static __thread bool resolving;
/* MADV_POPULATE_* known (5.14+): MAP_POPULATE can be moved after the advice. */
static bool populate_advice;
static bool debug;

static void dbg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void dbg(const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	if (!debug)
		return;
	va_start(ap, fmt);
	fputs("libthp-preload: ", stderr);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	errno = saved;
}

/*
 * The next definition of @name (libc's, or another preload's), looked up
 * once.  Threads racing here all store the same pointer.  dlsym() may
 * allocate, and an interposed malloc may mmap: that nested call gets NULL
 * and uses the system call directly instead of recursing.
 */
static void *resolve(_Atomic(void *) *slot, const char *name)
{
	void *fn = atomic_load_explicit(slot, memory_order_acquire);
	int saved;

	if (fn || resolving)
		return fn;
	saved = errno;
	resolving = true;
	fn = dlsym(RTLD_NEXT, name);
	resolving = false;
	errno = saved;
	if (fn)
		atomic_store_explicit(slot, fn, memory_order_release);
	return fn;
}

static void *raw_mmap(void *addr, size_t len, int prot, int flags, int fd, off64_t off)
{
#ifdef SYS_mmap2
	/* 32-bit targets: SYS_mmap takes a struct (i386); mmap2 counts 4096-byte units. */
	if (off & 4095) {
		errno = EINVAL;
		return MAP_FAILED;
	}
	return (void *)syscall(SYS_mmap2, addr, len, prot, flags, fd, (unsigned long)(off >> 12));
#else
	return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
#endif
}

/* A private anonymous mapping that the kernel does not already opt out. */
static bool wants_advice(int flags)
{
	/*
	 * MAP_HUGETLB is hugetlbfs, not THP.  MAP_STACK / MAP_GROWSDOWN are
	 * stacks, which the kernel itself maps VM_NOHUGEPAGE (6.7+).
	 */
	return (flags & MAP_ANONYMOUS) && (flags & MAP_TYPE) == MAP_PRIVATE &&
	       !(flags & (MAP_HUGETLB | MAP_STACK | MAP_GROWSDOWN));
}

static void *mmap_common(bool large, void *addr, size_t len, int prot, int flags, int fd,
			 off64_t off)
{
	void *fn = large ? resolve(&real_mmap64, "mmap64") : resolve(&real_mmap, "mmap");
	bool advise = wants_advice(flags) && atomic_load_explicit(&active, memory_order_relaxed);
	bool populate = false;
	void *p;
	int saved;

	/*
	 * MAP_POPULATE would fault the pages in as small pages before the
	 * advice exists: map without it, advise, then populate the same way.
	 */
	if (advise && populate_advice && (flags & MAP_POPULATE) && !(flags & MAP_LOCKED) &&
	    (prot & (PROT_READ | PROT_WRITE))) {
		flags &= ~MAP_POPULATE;
		populate = true;
	}
	if (!fn)
		p = raw_mmap(addr, len, prot, flags, fd, off);
	else if (large)
		p = ((mmap64_fn)fn)(addr, len, prot, flags, fd, off);
	else
		p = ((mmap_fn)fn)(addr, len, prot, flags, fd, (off_t)off);
	if (p == MAP_FAILED || !advise)
		return p;
	saved = errno;
	/* sys_madvise() leaves errno alone; the result is best effort. */
	if (sys_madvise((uintptr_t)p, len, MADV_HUGEPAGE) < 0)
		dbg("madvise(%p, %zu, MADV_HUGEPAGE) failed\n", p, len);
	/* MAP_POPULATE ignores failures to populate; so does this. */
	if (populate)
		sys_madvise((uintptr_t)p, len,
			    (prot & PROT_WRITE) ? MADV_POPULATE_WRITE : MADV_POPULATE_READ);
	errno = saved;
	return p;
}

EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return mmap_common(false, addr, len, prot, flags, fd, off);
}

/* The same function on 64-bit targets, but programs may bind either name. */
EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off64_t off)
{
	return mmap_common(true, addr, len, prot, flags, fd, off);
}

/*
 * While switched off, a PROT_NONE mapping of an empty memfd named
 * "thp-preload-off", which /proc/PID/maps shows as THP_PRELOAD_OFF_MARK:
 * what another process's thp_get_default() reads, since the preload stays
 * mapped.  (A file name works on every kernel; naming an anonymous mapping
 * needs CONFIG_ANON_VMA_NAME.)  Inherited by fork(), like the switch.
 */
static void *off_mark;

static void set_off_mark(bool off)
{
	size_t len = (size_t)getpagesize();

	if (off && !off_mark) {
		int fd = (int)syscall(SYS_memfd_create, "thp-preload-off", MFD_CLOEXEC);
		void *p = fd < 0 ? MAP_FAILED : raw_mmap(NULL, len, PROT_NONE, MAP_PRIVATE, fd, 0);

		if (fd >= 0)
			close(fd);
		if (p == MAP_FAILED)
			dbg("cannot map the switched-off mark: other processes see HUGE\n");
		else
			off_mark = p;
	} else if (!off && off_mark) {
		sys_munmap(off_mark, len);
		off_mark = NULL;
	}
}

/*
 * The one control entry (doc/preload.md), for libthp's thp_set_default():
 * THP_PRELOAD_OFF stops advising new mappings, THP_PRELOAD_ON starts again,
 * THP_PRELOAD_QUERY only asks.  Returns the state before (1 on, 0 off), or
 * -EINVAL.  Callers serialise on/off (libthp holds its default-policy
 * lock); the flag itself is atomic, so a concurrent mmap() sees either
 * state.  Mappings already advised keep their advice.
 */
EXPORT int thp_preload_control(int op);
EXPORT int thp_preload_control(int op)
{
	bool was = atomic_load(&active);

	switch (op) {
	case THP_PRELOAD_QUERY:
		break;
	case THP_PRELOAD_OFF:
	case THP_PRELOAD_ON:
		atomic_store(&active, op == THP_PRELOAD_ON);
		set_off_mark(op == THP_PRELOAD_OFF);
		dbg("switched %s\n", op == THP_PRELOAD_ON ? "on" : "off");
		break;
	default:
		return -EINVAL;
	}
	return was;
}

/*
 * Field @n (0-based) of a /proc/PID/maps line, or NULL.  The name field
 * (5) runs to the end of the line.
 */
static const char *maps_field(const char *line, const char *end, int n)
{
	const char *p = line;

	for (int i = 0; i < n; i++) {
		while (p < end && *p != ' ')
			p++;
		while (p < end && *p == ' ')
			p++;
		if (p == end)
			return i + 1 == n && n == 5 ? end : NULL;
	}
	return p;
}

/* Advise one maps line's mapping if it is anonymous and private. */
static void advise_line(const char *line, const char *end, unsigned int *advised)
{
	const char *perms = maps_field(line, end, 1);
	const char *inode = maps_field(line, end, 4);
	const char *name = maps_field(line, end, 5);
	uint64_t start, stop;

	if (!perms || !inode || !name || end - perms < 4 || perms[3] != 'p' ||
	    inode[0] != '0' || (inode + 1 != end && inode[1] != ' '))
		return;
	/* Nameless, [heap] or [anon:...]; not [stack], [vdso], [vvar], files. */
	if (name != end && strncmp(name, "[heap]", 6) && strncmp(name, "[anon:", 6))
		return;
	if (vma_walk_parse_line(line, (size_t)(end - line), &start, &stop))
		return;
	if (sys_madvise(start, stop - start, MADV_HUGEPAGE) == 0)
		(*advised)++;
}

/*
 * Advise the anonymous private mappings that exist before main(), from
 * /proc/self/maps read with a fixed buffer: no allocation this early, and
 * no probe.
 */
static void advise_existing(void)
{
	struct thp_target self = { .self = true, .pidfd = -1 };
	struct line_reader lr;
	unsigned int advised = 0;
	const char *line;
	size_t len;

	if (line_reader_open_proc(&lr, &self, "maps")) {
		dbg("cannot open /proc/self/maps: existing mappings not advised\n");
		return;
	}
	while (line_reader_next(&lr, &line, &len) == 1)
		advise_line(line, line + len, &advised);
	line_reader_close(&lr);
	dbg("advised %u existing anonymous mappings\n", advised);
}

/*
 * glibc 2.35 and 2.36 (Debian 12) read the sysfs THP mode for
 * glibc.malloc.hugetlb=1 into a stack buffer they do not terminate before
 * strcmp(), so the tunable works or not depending on a stale stack byte
 * (later glibc terminates it).  Initialise malloc here, on stack that was
 * just zeroed, before the program can.
 */
static __attribute__((noinline)) void zero_stack(void)
{
	char pad[16384];

	explicit_bzero(pad, sizeof(pad));
}

static __attribute__((noinline)) void init_malloc(void)
{
	void *volatile p = malloc(1); /* volatile: keep the pair from being elided */

	free(p);
}

__attribute__((constructor)) static void preload_init(void)
{
	int saved = errno;
	const char *d = getenv("THP_PRELOAD_DEBUG");
	const char *tunables = getenv("GLIBC_TUNABLES");

	if (preload_env_list_has(tunables, PRELOAD_ENV_TUNABLE_SEPS,
				 preload_env_is_hugetlb_tunable)) {
		zero_stack();
		init_malloc();
	}
	debug = preload_env_debug(d);
	resolve(&real_mmap, "mmap");
	resolve(&real_mmap64, "mmap64");
	/* madvise() checks the advice before the (zero) length. */
	populate_advice = sys_madvise((uintptr_t)&debug & ~(uintptr_t)(getpagesize() - 1), 0,
				      MADV_POPULATE_WRITE) == 0;
	advise_existing();
	errno = saved;
}
