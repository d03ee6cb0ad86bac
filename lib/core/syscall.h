/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The one place where libthp issues raw system calls.  Every wrapper returns
 * the kernel's result with the errno folded in: >= 0 success, -errno failure,
 * and never touches errno of the caller.
 */
#ifndef THP_SYSCALL_H
#define THP_SYSCALL_H

#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

long sys_madvise(unsigned long addr, size_t len, int advice);
long sys_process_madvise(int pidfd, const struct iovec *iov, size_t n,
			 int advice, unsigned int flags);
long sys_prctl(int option, unsigned long a2, unsigned long a3,
	       unsigned long a4, unsigned long a5);
int sys_pidfd_open(pid_t pid, unsigned int flags);
/* 1 when the pidfd's process has exited (zombie or reaped), 0 if not, -errno. */
int sys_pidfd_poll_exited(int pidfd);
/* This thread's filesystem user and group IDs (what the kernel's access checks use). */
unsigned int sys_fsuid(void);
unsigned int sys_fsgid(void);
/* The owner of @path. */
int sys_file_owner(const char *path, unsigned int *uid);
int sys_open(const char *path, int flags);
int sys_close(int fd);
long sys_ioctl(int fd, unsigned long req, void *arg);
long sys_read(int fd, void *buf, size_t len);
long sys_pread(int fd, void *buf, size_t len, off_t off);
/* Read up to len-1 bytes of a small file and NUL-terminate: length or -errno. */
long sys_read_file(const char *path, char *buf, size_t len);
/* The page size (sysconf), 4096 if it cannot be read. */
size_t sys_page_size(void);
/*
 * A private anonymous mapping, or NULL.  @at non-NULL: exactly there
 * (MAP_FIXED_NOREPLACE, never over an existing mapping), or NULL.
 */
void *sys_mmap_anon(void *at, size_t len, int prot);
/* The same, MAP_PRIVATE or MAP_SHARED as @share says. */
void *sys_mmap_anon_flags(void *at, size_t len, int prot, int share);
int sys_munmap(void *addr, size_t len);
/*
 * A child process for a look at effects that must not touch the caller:
 * fork() without atfork handlers and with no exit signal, so the caller's
 * SIGCHLD handling neither sees nor reaps it; only sys_wait_exit() does.
 * 0 in the child, which must only make these wrappers' calls and end in
 * sys_exit_group().
 */
pid_t sys_fork_raw(void);
void sys_exit_group(int status) __attribute__((noreturn));
/* Reap @pid: its exit status, or -ECHILD if it did not exit normally. */
int sys_wait_exit(pid_t pid);

#endif
