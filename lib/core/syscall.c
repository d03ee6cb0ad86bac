// SPDX-License-Identifier: LGPL-2.1-or-later
/* Raw system calls: the only file that calls into the kernel directly. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "compat.h"
#include "syscall.h"

/* Run a libc call and turn (-1, errno) into -errno, leaving errno as it was. */
#define SYSRET(expr)                                                       \
	({                                                                 \
		int saved_errno_ = errno;                                  \
		long r_ = (long)(expr);                                    \
		if (r_ == -1)                                              \
			r_ = -errno;                                       \
		errno = saved_errno_;                                      \
		r_;                                                        \
	})

/*
 * The two calls of thp_apply_ranges()'s happy path.  On x86-64 they go to
 * the kernel directly, which returns -errno itself: no errno to save and
 * restore around libc's syscall() (two __errno_location() calls a call).
 */
#if defined(__x86_64__)
static inline long raw_syscall5(long nr, long a1, long a2, long a3, long a4, long a5)
{
	register long r10 __asm__("r10") = a4;
	register long r8 __asm__("r8") = a5;
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8)
			 : "rcx", "r11", "memory");
	return ret;
}
#define FAST_SYSCALL5(nr, a1, a2, a3, a4, a5)                                       \
	raw_syscall5((nr), (long)(a1), (long)(a2), (long)(a3), (long)(a4), (long)(a5))
#else
#define FAST_SYSCALL5(nr, a1, a2, a3, a4, a5) SYSRET(syscall((nr), a1, a2, a3, a4, a5))
#endif

long sys_madvise(unsigned long addr, size_t len, int advice)
{
	return FAST_SYSCALL5(SYS_madvise, addr, len, advice, 0, 0);
}

long sys_process_madvise(int pidfd, const struct iovec *iov, size_t n,
			 int advice, unsigned int flags)
{
	return FAST_SYSCALL5(__NR_process_madvise, pidfd, iov, n, advice, flags);
}

long sys_prctl(int option, unsigned long a2, unsigned long a3,
	       unsigned long a4, unsigned long a5)
{
	return SYSRET(prctl(option, a2, a3, a4, a5));
}

int sys_pidfd_open(pid_t pid, unsigned int flags)
{
	return (int)SYSRET(syscall(__NR_pidfd_open, pid, flags));
}

int sys_pidfd_poll_exited(int pidfd)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };
	int n = (int)SYSRET(poll(&p, 1, 0));

	if (n < 0)
		return n;
	return n > 0 && (p.revents & POLLIN) ? 1 : 0;
}

/* An invalid ID changes nothing and returns the current one. */
unsigned int sys_fsuid(void)
{
	return (unsigned int)setfsuid((uid_t)-1);
}

unsigned int sys_fsgid(void)
{
	return (unsigned int)setfsgid((gid_t)-1);
}

int sys_file_owner(const char *path, unsigned int *uid)
{
	struct stat st;
	int r = (int)SYSRET(stat(path, &st));

	if (!r)
		*uid = st.st_uid;
	return r;
}

int sys_open(const char *path, int flags)
{
	return (int)SYSRET(open(path, flags | O_CLOEXEC));
}

int sys_close(int fd)
{
	return (int)SYSRET(close(fd));
}

long sys_ioctl(int fd, unsigned long req, void *arg)
{
	return SYSRET(ioctl(fd, req, arg));
}

long sys_read(int fd, void *buf, size_t len)
{
	long r;

	do
		r = SYSRET(read(fd, buf, len));
	while (r == -EINTR);
	return r;
}

long sys_pread(int fd, void *buf, size_t len, off_t off)
{
	long r;

	do
		r = SYSRET(pread(fd, buf, len, off));
	while (r == -EINTR);
	return r;
}

/*
 * The system calls themselves, not libc's mmap()/munmap(): under
 * libthp-preload.so those are interposed and would advise the page that
 * thp_get_default() looks at.
 */
void *sys_mmap_anon(void *at, size_t len, int prot)
{
	return sys_mmap_anon_flags(at, len, prot, MAP_PRIVATE);
}

void *sys_mmap_anon_flags(void *at, size_t len, int prot, int share)
{
	int flags = share | MAP_ANONYMOUS | (at ? MAP_FIXED_NOREPLACE : 0);
	int saved_errno = errno;
	void *p;

	/*
	 * 32-bit targets have mmap2 (offset in pages, 0 here); i386's SYS_mmap
	 * takes a pointer to its arguments.  A 32-bit address may be above
	 * 2 GiB, negative as a long: only MAP_FAILED is an error.
	 */
#ifdef SYS_mmap2
	p = (void *)syscall(SYS_mmap2, at, len, prot, flags, -1, 0L);
#else
	p = (void *)syscall(SYS_mmap, at, len, prot, flags, -1, 0L);
#endif
	errno = saved_errno;
	if (p == MAP_FAILED)
		return NULL;
	/* Before 4.17 the flag is unknown and @at only a hint. */
	if (at && p != at) {
		sys_munmap(p, len);
		return NULL;
	}
	return p;
}

int sys_munmap(void *addr, size_t len)
{
	return (int)SYSRET(syscall(SYS_munmap, addr, len));
}

long sys_read_file(const char *path, char *buf, size_t len)
{
	int fd = sys_open(path, O_RDONLY);
	long n;

	if (fd < 0)
		return fd;
	n = sys_read(fd, buf, len - 1);
	sys_close(fd);
	if (n < 0)
		return n;
	buf[n] = 0;
	return n;
}

/*
 * Exit signal 0, not SIGCHLD: the caller's SIGCHLD disposition cannot
 * reap the child behind our back (SIG_IGN, SA_NOCLDWAIT), its handler is
 * not run, and its waitpid(-1) without __WALL/__WCLONE does not see it.
 */
pid_t sys_fork_raw(void)
{
	return (pid_t)SYSRET(syscall(SYS_clone, 0UL, 0, 0, 0, 0));
}

void sys_exit_group(int status)
{
	syscall(SYS_exit_group, status);
	__builtin_unreachable();
}

int sys_wait_exit(pid_t pid)
{
	int status;
	long r;

	/* __WALL: the child is a clone child (exit signal 0). */
	while ((r = SYSRET(waitpid(pid, &status, __WALL))) == -EINTR)
		;
	if (r < 0)
		return (int)r;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -ECHILD;
}

size_t sys_page_size(void)
{
	long ps = sysconf(_SC_PAGESIZE);

	return ps > 0 ? (size_t)ps : 4096;
}
