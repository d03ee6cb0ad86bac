// SPDX-License-Identifier: LGPL-2.1-or-later
/* thpctl: strict command-line parsers and pidfd_open(). */
#ifndef _GNU_SOURCE /* also built into fuzz/fuzz_thpctl_args with -D_GNU_SOURCE */
#define _GNU_SOURCE
#endif
#include "parse.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "thpctl.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

/* Digits of @base at s[0..], all of them; -1 on empty, garbage or overflow. */
static int parse_digits(const char *s, size_t n, unsigned int base, uint64_t *out,
			const char **why)
{
	uint64_t v = 0;

	if (n == 0) {
		*why = "missing number";
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		unsigned int d;

		if (c >= '0' && c <= '9')
			d = (unsigned int)(c - '0');
		else if (base == 16 && c >= 'a' && c <= 'f')
			d = (unsigned int)(c - 'a' + 10);
		else if (base == 16 && c >= 'A' && c <= 'F')
			d = (unsigned int)(c - 'A' + 10);
		else {
			*why = "not a number";
			return -1;
		}
		if (v > (UINT64_MAX - d) / base) {
			*why = "number too large";
			return -1;
		}
		v = v * base + d;
	}
	*out = v;
	return 0;
}

/* Number in s[0..n): "0x..." hex or decimal. */
static int parse_u64n(const char *s, size_t n, uint64_t *out, const char **why)
{
	if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		return parse_digits(s + 2, n - 2, 16, out, why);
	return parse_digits(s, n, 10, out, why);
}

int thpctl_parse_u64(const char *s, uint64_t *out, const char **why)
{
	return parse_u64n(s, strlen(s), out, why);
}

static int parse_sizen(const char *s, size_t n, uint64_t *out, const char **why)
{
	unsigned int shift = 0;
	uint64_t v;

	if (n > 0) {
		switch (s[n - 1]) {
		case 'k': case 'K': shift = 10; break;
		case 'm': case 'M': shift = 20; break;
		case 'g': case 'G': shift = 30; break;
		case 't': case 'T': shift = 40; break;
		default: break;
		}
		/* A hex digit is not a suffix, but none of KMGT is one. */
		if (shift)
			n--;
	}
	if (parse_u64n(s, n, &v, why))
		return -1;
	if (shift && v > (UINT64_MAX >> shift)) {
		*why = "size too large";
		return -1;
	}
	*out = v << shift;
	return 0;
}

int thpctl_parse_size(const char *s, uint64_t *out, const char **why)
{
	return parse_sizen(s, strlen(s), out, why);
}

int thpctl_parse_range(const char *s, uint64_t page_size, struct thp_range *out,
		       const char **why)
{
	size_t sep = strcspn(s, "-+");
	uint64_t start, second;

	if (s[sep] == '\0') {
		*why = "expected START-END or START+LEN";
		return -1;
	}
	if (parse_u64n(s, sep, &start, why))
		return -1;
	if (s[sep] == '-') {
		if (parse_u64n(s + sep + 1, strlen(s + sep + 1), &second, why))
			return -1;
		if (second <= start) {
			*why = "END must be above START (END is exclusive)";
			return -1;
		}
		second -= start;
	} else {
		if (parse_sizen(s + sep + 1, strlen(s + sep + 1), &second, why))
			return -1;
		if (second == 0) {
			*why = "LEN must not be 0";
			return -1;
		}
		if (start + second < start) {
			*why = "START+LEN wraps around the address space";
			return -1;
		}
	}
	if (page_size && start % page_size) {
		*why = "START is not page aligned";
		return -1;
	}
	/*
	 * The library rounds LEN up to whole pages and refuses a range whose
	 * end passes the top of the address space.  Compare against what is
	 * left above START rather than adding: with START 0 a wrapped sum is
	 * not below START.
	 */
	if (page_size && (second > UINT64_MAX - (page_size - 1) ||
			  (second + page_size - 1) / page_size * page_size > UINT64_MAX - start)) {
		*why = "range reaches the end of the address space";
		return -1;
	}
	out->addr = start;
	out->len = second;
	return 0;
}

int thpctl_parse_pid(const char *s, pid_t *out, const char **why)
{
	uint64_t v;

	if (parse_digits(s, strlen(s), 10, &v, why))
		return -1;
	if (v == 0 || v > INT_MAX) {
		*why = v == 0 ? "PID 0 is not a process" : "PID out of range";
		return -1;
	}
	*out = (pid_t)v;
	return 0;
}

int thpctl_open_pidfd(pid_t pid)
{
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);

	if (fd < 0) {
		if (errno == ESRCH)
			thpctl_error("no such process: %d", (int)pid);
		else
			thpctl_error("pidfd_open(%d): %s", (int)pid, strerror(errno));
		return -1;
	}
	/* libthp reads descriptor 0 as THP_SELF: move it out of the way. */
	if (fd == 0) {
		int nfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);

		if (nfd < 0) {
			thpctl_error("fcntl(F_DUPFD_CLOEXEC): %s", strerror(errno));
			close(fd);
			return -1;
		}
		close(fd);
		fd = nfd;
	}
	return fd;
}

/* PF_KTHREAD in the flags field of /proc/PID/stat (include/linux/sched.h). */
#define THPCTL_PF_KTHREAD 0x00200000UL

/* 1: @pid is a kernel thread (no mm, nothing to show or advise); 0: not or unknown. */
static int is_kernel_thread(pid_t pid)
{
	char path[64], buf[1024];
	unsigned long flags;
	const char *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* The name in parentheses may hold anything, ')' included: skip to the last. */
	p = strrchr(buf, ')');
	/* After it: state ppid pgrp session tty_nr tpgid flags. */
	if (!p || sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %lu", &flags) != 1)
		return 0;
	return (flags & THPCTL_PF_KTHREAD) != 0;
}

int thpctl_open_target(pid_t *pid, bool *self)
{
	int fd;

	*self = *pid == 0 || *pid == getpid();
	if (*self) {
		*pid = getpid();
		return THP_SELF;
	}
	fd = thpctl_open_pidfd(*pid);
	/* Checked with the pidfd held: the number cannot be reused meanwhile. */
	if (fd >= 0 && is_kernel_thread(*pid)) {
		thpctl_error("process %d is a kernel thread: it has no user memory and no "
			     "THP policy", (int)*pid);
		close(fd);
		return -1;
	}
	return fd;
}

void thpctl_close_target(int pidfd)
{
	if (pidfd > THP_SELF)
		close(pidfd);
}

int thpctl_thp_disabled(pid_t pid)
{
	char path[64], line[256];
	int ret = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		int enabled;

		if (sscanf(line, "THP_enabled: %d", &enabled) == 1) {
			ret = enabled == 0;
			break;
		}
	}
	fclose(f);
	return ret;
}
