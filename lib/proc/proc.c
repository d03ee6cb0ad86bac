// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A target's /proc files: the one place that picks /proc/self or
 * /proc/PID, and the one reader of the status files (for the targets, the
 * inject session and the access checks).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "compat.h"
#include "internal.h"
#include "proc.h"
#include "syscall.h"

const char *proc_path(const struct thp_target *t, const char *file, char *buf, size_t len)
{
	if (t->self)
		snprintf(buf, len, "/proc/self/%s", file);
	else
		snprintf(buf, len, "/proc/%d/%s", (int)t->pid, file);
	return buf;
}

long proc_pagemap_scan(int fd, uint64_t start, uint64_t end, const struct proc_pagemap_query *q,
		       struct page_region *vec, size_t n, uint64_t *walk_end)
{
	struct pm_scan_arg a;
	long r;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.start = start;
	a.end = end;
	a.vec = (uintptr_t)vec;
	a.vec_len = n;
	a.category_mask = q->category_mask;
	a.category_inverted = q->category_inverted;
	a.category_anyof_mask = q->category_anyof_mask;
	a.return_mask = q->return_mask;
	r = sys_ioctl(fd, PAGEMAP_SCAN, &a);
	*walk_end = a.walk_end;
	return r;
}

int proc_open(const struct thp_target *t, const char *file)
{
	char path[64];

	return sys_open(proc_path(t, file, path, sizeof(path)), O_RDONLY);
}

long proc_status_read(pid_t pid, pid_t tid, char *buf, size_t len)
{
	char path[80];
	long n;

	if (!pid)
		snprintf(path, sizeof(path), "/proc/self/status");
	else if (tid)
		snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tid);
	else
		snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	n = sys_read_file(path, buf, len);
	if (n < 0)
		return n == -ENOENT ? -ESRCH : n;
	return n;
}

const char *proc_status_find(const char *buf, const char *key)
{
	const char *p = strstr(buf, key);

	if (!p)
		return NULL;
	p += strlen(key);
	return p + strspn(p, " \t");
}

int proc_status_field(pid_t pid, pid_t tid, const char *key, long *val)
{
	char buf[4096];
	long n = proc_status_read(pid, tid, buf, sizeof(buf));
	const char *p;

	if (n < 0)
		return (int)n;
	p = proc_status_find(buf, key);
	if (!p)
		return -ENOENT;
	if (*p >= 'A' && *p <= 'Z') {
		*val = *p; /* State: one letter */
		return 0;
	}
	*val = strtol(p, NULL, 10);
	return 0;
}

int proc_explain_gone(const struct thp_target *t, int err, const char *what)
{
	char buf[4096];
	const char *state, *threads;
	long n, nr;

	if (err != -ESRCH || t->self)
		return err;
	n = proc_status_read(t->pid, 0, buf, sizeof(buf));
	if (n <= 0 || target_alive(t))
		return err;
	state = strstr(buf, "\nState:");
	threads = strstr(buf, "\nThreads:");
	if (!state || !threads || !strstr(state, "\tZ") || strstr(state, "\tZ") > strchr(state + 1, '\n'))
		return err;
	/* The zombie leader still counts itself while another thread lives. */
	nr = strtol(threads + 9, NULL, 10);
	if (nr < 2)
		return err;
	report_set_detail("cannot %s process %d: its main thread has exited while %ld other "
			  "thread%s %s on, and the kernel then answers for the process as if it "
			  "had exited (/proc/%d/smaps is empty, process_madvise() gives ESRCH)",
			  what, (int)t->pid, nr - 1, nr - 1 == 1 ? "" : "s", nr - 1 == 1 ? "runs" : "run",
			  (int)t->pid);
	return -EOPNOTSUPP;
}

int proc_thp_disabled(const struct thp_target *t)
{
	char buf[4096];
	const char *p;
	long n;

	n = proc_status_read(t->self ? 0 : t->pid, 0, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	/* Absent before 6.x: THP is then not known to be disabled. */
	p = strstr(buf, "\nTHP_enabled:");
	return p && !strtol(p + 13, NULL, 10) ? 1 : 0;
}
