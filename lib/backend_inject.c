// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Backend: make another process issue madvise() / prctl() itself, as a
 * debugger's "call" does: stop one thread with ptrace, run one system call
 * as that thread from a syscall instruction of its vDSO, restore it exactly,
 * detach.  Opt-in only (a forced backend): it pauses the target and needs
 * ptrace rights.  x86_64 targets only.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>

#include "compat.h"
#include "default.h"
#include "internal.h"
#include "syscall.h"

#if defined(__x86_64__)

/* The 64-bit user code segment: any other means a 32-bit (compat) process. */
#define USER64_CS 0x33
/* Kernel-internal restart codes a stopped syscall may hold in rax. */
#define ERESTARTSYS_ 512
#define ERESTARTNOINTR_ 513
#define ERESTARTNOHAND_ 514
#define ERESTART_RESTARTBLOCK_ 516
/* Retries when a signal comes between our resume and the injected syscall. */
#define INJECT_RETRIES 64

struct inject_session {
	const struct thp_target *t;
	pid_t tid;
	unsigned long syscall_ip;     /* a 0f 05 in the target's vDSO */
	struct user_regs_struct saved; /* what the thread resumes with */
	bool seized;
	bool stopped;
	unsigned int calls;            /* injected calls started: could any have run? */
};

/* A field of /proc/PID/task/TID/status: a number, or State's letter. */
static int status_field(pid_t pid, pid_t tid, const char *key, long *val)
{
	char path[80], buf[4096], *p;
	long n;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tid);
	n = sys_read_file(path, buf, sizeof(buf));
	if (n < 0)
		return n == -ENOENT ? -ESRCH : (int)n;
	p = strstr(buf, key);
	if (!p)
		return -ENOENT;
	p += strlen(key);
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p >= 'A' && *p <= 'Z') {
		*val = *p; /* State: one letter */
		return 0;
	}
	*val = strtol(p, NULL, 10);
	return 0;
}

/*
 * The thread to stop: the main thread, or while that one has exited
 * (pthread_exit() in main()) the first other live thread.  0 or -errno.
 */
static int pick_thread(pid_t pid, pid_t *tid)
{
	char dir[64];
	struct dirent *d;
	long v = 0;
	DIR *dp;

	*tid = pid;
	if (status_field(pid, pid, "\nState:", &v) == 0 && v != 'Z')
		return 0;
	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	dp = opendir(dir);
	if (!dp)
		return -ESRCH;
	while ((d = readdir(dp))) {
		pid_t t = (pid_t)strtol(d->d_name, NULL, 10);

		if (t > 0 && t != pid && status_field(pid, t, "\nState:", &v) == 0 && v != 'Z') {
			*tid = t;
			break;
		}
	}
	closedir(dp);
	if (*tid != pid)
		return 0;
	report_set_detail("process %d has no live thread to stop", (int)pid);
	return -ESRCH;
}

/* Refusals that need no stop: traced, seccomp.  0 or -errno with detail. */
static int inject_precheck(pid_t pid, pid_t tid)
{
	long v = 0;
	int err;

	err = status_field(pid, tid, "\nTracerPid:", &v);
	if (err)
		return err == -ENOENT ? 0 : err;
	if (v) {
		report_set_detail("process %d is already traced by process %ld: the inject "
				  "backend needs to ptrace it", (int)pid, v);
		return -EBUSY;
	}
	if (status_field(pid, tid, "\nSeccomp:", &v) == 0 && v) {
		report_set_detail("process %d runs under seccomp %s mode: its filter might kill or "
				  "refuse the injected call, so the inject backend does not call it",
				  (int)pid, v == 1 ? "strict" : "filter");
		return -EOPNOTSUPP;
	}
	return 0;
}

static int ptrace_refused(pid_t pid, int e)
{
	char ys[16];
	long v = 0;

	if (e == ESRCH)
		return -ESRCH;
	if (status_field(pid, pid, "\nTracerPid:", &v) == 0 && v) {
		report_set_detail("process %d is already traced by process %ld", (int)pid, v);
		return -EBUSY;
	}
	if (sys_read_file("/proc/sys/kernel/yama/ptrace_scope", ys, sizeof(ys)) <= 0)
		ys[0] = '-', ys[1] = 0;
	ys[strcspn(ys, "\n")] = 0;
	report_set_detail("ptrace of process %d refused (%s): the inject backend needs "
			  "CAP_SYS_PTRACE, or the target's user IDs with a dumpable target and a "
			  "Yama ptrace_scope that allows it (ptrace_scope is %s)",
			  (int)pid, strerror(e), ys);
	return e == EPERM || e == EACCES ? -EPERM : -e;
}

/*
 * Wait for a stop of the tracee that is not a signal for it (an interrupt or
 * group-stop); signals that arrive first are delivered as they came.
 */
static int wait_event_stop(struct inject_session *s)
{
	for (;;) {
		int st;
		pid_t r = waitpid(s->tid, &st, __WALL);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -ESRCH;
		}
		if (!WIFSTOPPED(st))
			return -ESRCH; /* exited or killed */
		if ((st >> 16) == PTRACE_EVENT_STOP)
			return 0;
		if (WSTOPSIG(st) == (SIGTRAP | 0x80)) {
			/* A syscall stop we did not ask for: go on to the interrupt. */
			if (ptrace(PTRACE_CONT, s->tid, 0, 0) < 0)
				return -ESRCH;
			continue;
		}
		/* Signal-delivery-stop: pass the signal on unchanged. */
		if (ptrace(PTRACE_CONT, s->tid, 0, (void *)(long)WSTOPSIG(st)) < 0)
			return -ESRCH;
	}
}

/*
 * The registers the thread must resume with.  Stopped on its way out of
 * an interrupted system call, the kernel restarts that call in its signal
 * code after the stop; the thread leaves from our injected call's exit
 * instead, so do the restart here, as the kernel does when no handler
 * runs, and mark it done (orig_rax -1) so that it is not done twice.
 */
static void restart_fixup(struct user_regs_struct *r)
{
	if ((long)r->orig_rax < 0)
		return;
	switch (-(long)r->rax) {
	case ERESTARTSYS_:
	case ERESTARTNOINTR_:
	case ERESTARTNOHAND_:
		r->rax = r->orig_rax;
		r->rip -= 2;
		r->orig_rax = (unsigned long)-1;
		break;
	case ERESTART_RESTARTBLOCK_:
		r->rax = SYS_restart_syscall;
		r->rip -= 2;
		r->orig_rax = (unsigned long)-1;
		break;
	default:
		break;
	}
}

/* Stop the thread and save its registers; 0 or -errno. */
static int inject_stop(struct inject_session *s)
{
	int err;

	if (ptrace(PTRACE_INTERRUPT, s->tid, 0, 0) < 0)
		return -ESRCH;
	err = wait_event_stop(s);
	if (err)
		return err;
	s->stopped = true;
	if (ptrace(PTRACE_GETREGS, s->tid, 0, &s->saved) < 0)
		return -ESRCH;
	if (s->saved.cs != USER64_CS) {
		report_set_detail("process %d is a 32-bit process: the inject backend supports "
				  "x86_64 processes only", (int)s->tid);
		return -EOPNOTSUPP;
	}
	restart_fixup(&s->saved);
	return 0;
}

/*
 * The stopped thread's memory read through ptrace, a word at a time: for a
 * kernel without process_vm_readv() (CONFIG_CROSS_MEMORY_ATTACH unset).
 * Bytes read, or -1 with errno.
 */
static ssize_t peek_words(pid_t tid, uint64_t start, unsigned char *buf, size_t n)
{
	size_t off;

	for (off = 0; off + sizeof(long) <= n; off += sizeof(long)) {
		long w;

		errno = 0;
		w = ptrace(PTRACE_PEEKDATA, tid, (void *)(uintptr_t)(start + off), NULL);
		if (errno)
			return off ? (ssize_t)off : -1;
		memcpy(buf + off, &w, sizeof(w));
	}
	return (ssize_t)off;
}

/* A syscall instruction in the target's vDSO, read without writing anything. */
static int find_syscall_ip(struct inject_session *s)
{
	struct line_reader lr;
	uint64_t start = 0, end = 0;
	const char *line;
	size_t len;
	char file[48];
	int err, r;

	/* The thread's own view: a main thread that has exited shows no mappings. */
	snprintf(file, sizeof(file), "task/%d/maps", (int)s->tid);
	err = line_reader_open_proc(&lr, s->t, file);
	if (err)
		return err;
	while ((r = line_reader_next(&lr, &line, &len)) > 0) {
		if (len >= 6 && memcmp(line + len - 6, "[vdso]", 6) == 0) {
			if (maps_parse_line(line, len, &start, &end))
				start = end = 0;
			break;
		}
	}
	line_reader_close(&lr);
	if (r < 0)
		return r == -ENOENT ? -ESRCH : r;
	if (end <= start || end - start > (1u << 20)) {
		report_set_detail("process %d has no vDSO: the inject backend finds its syscall "
				  "instruction there and never writes the target's code",
				  (int)s->tid);
		return -EOPNOTSUPP;
	}
	{
		size_t n = end - start;
		unsigned char *buf = malloc(n);
		struct iovec local = { buf, n }, remote = { (void *)(uintptr_t)start, n };
		ssize_t got;

		if (!buf)
			return -ENOMEM;
		got = process_vm_readv(s->tid, &local, 1, &remote, 1, 0);
		if (got < 0 && errno == ENOSYS)
			got = peek_words(s->tid, start, buf, n);
		for (ssize_t i = 0; got > 1 && i + 1 < got; i++) {
			if (buf[i] == 0x0f && buf[i + 1] == 0x05) {
				s->syscall_ip = start + (uint64_t)i;
				break;
			}
		}
		free(buf);
		if (got < 0) {
			if (errno == ESRCH)
				return -ESRCH;
			report_set_detail("cannot read the vDSO of process %d: %s", (int)s->tid,
					  strerror(errno));
			return -EPERM;
		}
	}
	if (!s->syscall_ip) {
		report_set_detail("no syscall instruction in the vDSO of process %d", (int)s->tid);
		return -EOPNOTSUPP;
	}
	return 0;
}

static int inject_begin(struct inject_session *s, const struct thp_target *t)
{
	long v = 0;
	int err;

	memset(s, 0, sizeof(*s));
	s->t = t;
	if (target_alive(t)) {
		report_set_detail("process %d has exited", (int)t->pid);
		return -ESRCH;
	}
	err = pick_thread(t->pid, &s->tid);
	if (!err)
		err = inject_precheck(t->pid, s->tid);
	if (err)
		return err;
	if (ptrace(PTRACE_SEIZE, s->tid, 0, (void *)(long)PTRACE_O_TRACESYSGOOD) < 0)
		return ptrace_refused(s->tid, errno);
	s->seized = true;
	/* The pid may have been reused between pidfd and seize: the pidfd says. */
	if (target_alive(t))
		return -ESRCH;
	err = inject_stop(s);
	if (err)
		return err;
	/* A filter installed since the first look (TSYNC from another thread). */
	if (status_field(s->t->pid, s->tid, "\nSeccomp:", &v) == 0 && v) {
		report_set_detail("process %d runs under seccomp: the inject backend does not "
				  "call it", (int)s->tid);
		return -EOPNOTSUPP;
	}
	return find_syscall_ip(s);
}

/*
 * Leave the thread as it was and detach.  A signal that arrived meanwhile
 * stays pending and is delivered once it runs; a group-stop in force
 * stops it again at detach.
 */
static int inject_end(struct inject_session *s)
{
	int err = 0;

	if (!s->seized)
		return 0;
	/* Only a stopped tracee can be detached: stop it first if need be. */
	if (!s->stopped && ptrace(PTRACE_INTERRUPT, s->tid, 0, 0) == 0 && wait_event_stop(s) == 0) {
		err = -ESRCH; /* not the state we meant to leave it in */
		s->stopped = ptrace(PTRACE_DETACH, s->tid, 0, 0) < 0;
		s->seized = false;
		return err;
	}
	if (s->stopped && ptrace(PTRACE_SETREGS, s->tid, 0, &s->saved) < 0)
		err = -ESRCH;
	if (ptrace(PTRACE_DETACH, s->tid, 0, 0) < 0 && !err)
		err = -ESRCH;
	s->seized = s->stopped = false;
	return err;
}

/*
 * Run one system call as the stopped thread.  Returns its result (-errno
 * as the kernel's), or sets *err (-ESRCH: the target went away).
 */
static long inject_syscall(struct inject_session *s, long nr, unsigned long a1, unsigned long a2,
			   unsigned long a3, unsigned long a4, unsigned long a5, int *err)
{
	for (int attempt = 0; attempt < INJECT_RETRIES; attempt++) {
		struct user_regs_struct r = s->saved;
		bool entered = false;
		int st;

		r.rax = (unsigned long)nr;
		r.orig_rax = (unsigned long)-1; /* no restart logic on these registers */
		r.rdi = a1;
		r.rsi = a2;
		r.rdx = a3;
		r.r10 = a4;
		r.r8 = a5;
		r.r9 = 0;
		r.rip = s->syscall_ip;
		s->calls++;
		if (ptrace(PTRACE_SETREGS, s->tid, 0, &r) < 0 ||
		    ptrace(PTRACE_SYSCALL, s->tid, 0, 0) < 0)
			goto gone;
		for (;;) {
			if (waitpid(s->tid, &st, __WALL) < 0) {
				if (errno == EINTR)
					continue;
				goto gone;
			}
			if (!WIFSTOPPED(st))
				goto gone;
			if (WSTOPSIG(st) == (SIGTRAP | 0x80)) {
				if (ptrace(PTRACE_GETREGS, s->tid, 0, &r) < 0)
					goto gone;
				if (!entered) {
					entered = true;
					if ((long)r.orig_rax != nr)
						break; /* not ours: should not happen */
				} else {
					return (long)r.rax;
				}
				if (ptrace(PTRACE_SYSCALL, s->tid, 0, 0) < 0)
					goto gone;
				continue;
			}
			if ((st >> 16) == PTRACE_EVENT_STOP) {
				/* A late interrupt or a group-stop: the call has not run yet. */
				if (ptrace(PTRACE_SYSCALL, s->tid, 0, 0) < 0)
					goto gone;
				continue;
			}
			/*
			 * A signal before the call: give the thread back its own
			 * registers, let it take the signal as it would have, stop
			 * it again and retry from there.
			 */
			if (ptrace(PTRACE_SETREGS, s->tid, 0, &s->saved) < 0 ||
			    ptrace(PTRACE_CONT, s->tid, 0, (void *)(long)WSTOPSIG(st)) < 0)
				goto gone;
			s->stopped = false;
			*err = inject_stop(s);
			if (*err)
				return *err;
			break;
		}
	}
	report_set_detail("process %d kept taking signals: the injected call did not run",
			  (int)s->tid);
	*err = -EAGAIN;
	return -EAGAIN;
gone:
	s->stopped = false;
	*err = -ESRCH;
	return -ESRCH;
}

/* Said only once a call was started; before that, the detail says why it stopped. */
static void report_gone(pid_t pid, bool maybe_done)
{
	report_set_detail("process %d exited or exec()ed during the injected call%s", (int)pid,
			  maybe_done ? ": the call may have run, whatever the reports say was not "
				       "done may still have been done" : "");
}

/*
 * End the session whatever happened in it, and fold a target that went away
 * (during a call or at the end) into -ESRCH: the error the call returns.
 */
static int inject_finish(struct inject_session *s, const struct thp_target *t, int err)
{
	if (inject_end(s) && !err)
		err = -ESRCH;
	if (err == -ESRCH && s->calls)
		report_gone(t->pid, true);
	return err;
}

static int inject_can_apply(const struct thp_caps *c, const struct thp_target *t, int advice)
{
	(void)c;
	(void)advice;
	if (t->self) {
		report_set_detail("the inject backend acts on another process; the calling "
				  "process uses madvise()");
		return -EOPNOTSUPP;
	}
	return 0;
}

static long inject_apply_vec(const struct thp_target *t, const struct iovec *iov, size_t n,
			     int advice)
{
	const iovec_alias *v = (const iovec_alias *)iov;
	struct inject_session s;
	long done = 0, ret = 0;
	int err;

	err = inject_begin(&s, t);
	for (size_t i = 0; !err && i < n; i++) {
		long r = inject_syscall(&s, SYS_madvise, (unsigned long)v[i].iov_base,
					v[i].iov_len, (unsigned long)advice, 0, 0, &err);

		if (err)
			break;
		if (r < 0) {
			ret = r;
			break;
		}
		done += (long)v[i].iov_len;
	}
	err = inject_finish(&s, t, err);
	if (err == -ESRCH)
		return -ESRCH;
	if (err)
		return done ? done : err;
	return done ? done : ret;
}

const struct thp_backend_ops backend_inject_ops = {
	.id = THP_BACKEND_INJECT,
	.name = "inject",
	.can_apply = inject_can_apply,
	.apply_vec = inject_apply_vec,
};

int inject_set_default(struct thp_default_opts *o, const struct thp_target *t)
{
	const struct thp_caps *c = caps_get_prctl();
	struct inject_session s;
	unsigned long flags = 0;
	long prev = -1, r = 0, got = -1;
	int err;

	if (o->policy == THP_POLICY_HUGE) {
		report_set_detail("HUGE cannot be made the default of another process on this "
				  "kernel: no call the process could make keeps MADV_HUGEPAGE for "
				  "new mappings; start it under thpctl run --policy huge, or advise "
				  "its mappings with thp_apply_all() through the inject backend");
		return -EOPNOTSUPP;
	}
	if (o->policy == THP_POLICY_NOHUGE) {
		if (!c->thp_disable_except_advised) {
			report_set_detail("NOHUGE needs PR_THP_DISABLE_EXCEPT_ADVISED (Linux 6.18)");
			return -EOPNOTSUPP;
		}
		flags = PR_THP_DISABLE_EXCEPT_ADVISED;
	}
	err = inject_begin(&s, t);
	if (!err)
		prev = inject_syscall(&s, SYS_prctl, PR_GET_THP_DISABLE, 0, 0, 0, 0, &err);
	/* Clear first: one disable mode is not set over the other. */
	if (!err)
		r = inject_syscall(&s, SYS_prctl, PR_SET_THP_DISABLE, 0, 0, 0, 0, &err);
	if (!err && !r && o->policy != THP_POLICY_SYSTEM)
		r = inject_syscall(&s, SYS_prctl, PR_SET_THP_DISABLE, 1, flags, 0, 0, &err);
	if (!err && !r)
		got = inject_syscall(&s, SYS_prctl, PR_GET_THP_DISABLE, 0, 0, 0, 0, &err);
	if (!err && (r < 0 || got < 0 ||
		     (o->policy == THP_POLICY_SYSTEM ? got != 0 : !(got & 1)) ||
		     (o->policy == THP_POLICY_NOHUGE && !(got & PR_THP_DISABLE_EXCEPT_ADVISED)))) {
		/* Leave it as it was. */
		if (prev >= 0) {
			int err2 = 0;

			inject_syscall(&s, SYS_prctl, PR_SET_THP_DISABLE, 0, 0, 0, 0, &err2);
			if (!err2 && prev)
				inject_syscall(&s, SYS_prctl, PR_SET_THP_DISABLE, 1,
					       (unsigned long)prev & PR_THP_DISABLE_EXCEPT_ADVISED,
					       0, 0, &err2);
		}
		report_set_detail("process %d: prctl(PR_SET_THP_DISABLE) %s", (int)t->pid,
				  r < 0 ? strerror((int)-r) : "is not shown by PR_GET_THP_DISABLE");
		err = r < 0 ? (int)r : -EIO;
	}
	err = inject_finish(&s, t, err);
	if (err)
		return err;
	o->backend_used = THP_BACKEND_INJECT;
	o->persistent = true;
	o->mappings_changed = 0;
	return 0;
}

#else /* !__x86_64__ */

static int inject_can_apply(const struct thp_caps *c, const struct thp_target *t, int advice)
{
	(void)c;
	(void)t;
	(void)advice;
	report_set_detail("the inject backend supports x86_64 only");
	return -EOPNOTSUPP;
}

static long inject_apply_vec(const struct thp_target *t, const struct iovec *iov, size_t n,
			     int advice)
{
	(void)t;
	(void)iov;
	(void)n;
	(void)advice;
	return -EOPNOTSUPP;
}

const struct thp_backend_ops backend_inject_ops = {
	.id = THP_BACKEND_INJECT,
	.name = "inject",
	.can_apply = inject_can_apply,
	.apply_vec = inject_apply_vec,
};

int inject_set_default(struct thp_default_opts *o, const struct thp_target *t)
{
	(void)o;
	(void)t;
	report_set_detail("the inject backend supports x86_64 only");
	return -EOPNOTSUPP;
}

#endif
