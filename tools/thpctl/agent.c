// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The collapse agent of "thpctl run --policy huge" on kernels that cannot
 * keep HUGE across exec().  The preload reaches what the program maps
 * through the dynamic libc; glibc's per-thread arenas, static binaries, Go
 * and raw system calls it cannot.  So thpctl stays as the parent: a child
 * reaper (PR_SET_CHILD_SUBREAPER, so daemons that double-fork stay in the
 * tree), running thp_collapse() over CMD and all its descendants every
 * interval, forwarding signals to CMD, and exiting with CMD's status once
 * every process of the tree is gone.
 *
 * Which processes of the tree it acts on: only CMD's user's peers
 * (THP_COLLAPSE_F_PEER_ONLY: the same real, effective and saved user and
 * group IDs as thpctl, and dumpable), as root as well as with CAP_SYS_NICE
 * alone.  Not another user's process, not a set-user-ID, set-group-ID or
 * file-capability program (AT_SECURE: the preload does not reach those
 * either), not one made non-dumpable; nothing of theirs is read, their
 * environment included.  Each pass asks again: credentials change with
 * exec() and setuid().
 *
 * A descendant started with another policy (a nested "thpctl run", which
 * sets THPCTL_RUN_POLICY; read from /proc/PID/environ every pass, as it
 * changes with exec()) is left alone; one whose THP is disabled is
 * skipped by the pass itself.  Processes are known by pidfd: a PID that a
 * new process took over between two passes is a new entry.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock_ns.h"
#include "collapse.h"
#include "notify.h"
#include "parse.h"
#include "proc_read.h"
#include "thpctl.h"

struct tracked {
	pid_t pid;
	int pidfd;
	bool denied; /* not CMD's user's peer at the last pass (said once) */
	bool seen;   /* found in this pass's walk */
};

struct agent {
	const struct collapse_settings *s;
	bool verbose;
	pid_t child;
	struct tracked *procs;
	size_t nr, cap;
};

/* THPCTL_RUN_POLICY in the environment @pid started with, if other than huge. */
static bool other_policy(pid_t pid)
{
	static const char key[] = "THPCTL_RUN_POLICY=";
	char path[64];
	size_t len = 0;
	char *env, *p;
	bool other = false;

	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	env = proc_read_alloc(path, &len);
	if (!env)
		return false;
	for (p = env; p < env + len; p += strlen(p) + 1)
		if (!strncmp(p, key, sizeof(key) - 1))
			other = strcmp(p + sizeof(key) - 1, "huge") != 0;
	free(env);
	return other;
}

/* A pidfd polls readable once its process has exited. */
static bool pidfd_exited(int pidfd)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

/* 0 when the agent may read and collapse this process at all, -EPERM if not. */
static int peer_check(int pidfd)
{
	struct thp_collapse_opts o = { .sz = sizeof(o), .pidfd = pidfd, .flags = THP_COLLAPSE_F_PEER_ONLY | THP_COLLAPSE_F_CHECK_ONLY };

	return thp_collapse(&o);
}

static struct tracked *find(struct agent *a, pid_t pid)
{
	for (size_t i = 0; i < a->nr; i++)
		if (a->procs[i].pid == pid)
			return &a->procs[i];
	return NULL;
}

/* Parent pid from /proc/PID/stat (its field 4). */
static pid_t parent_of(pid_t pid)
{
	char buf[1024];
	long long ppid;

	if (proc_read_pid(pid, "stat", buf, sizeof(buf)) <= 0 || !proc_stat_field(buf, 4, &ppid))
		return -1;
	return (pid_t)ppid;
}

static void track(struct agent *a, pid_t pid, pid_t parent)
{
	struct tracked *t = find(a, pid);
	int fd;

	if (t && pidfd_exited(t->pidfd)) {
		/* Its process is gone and a new one has the PID: judged afresh. */
		close(t->pidfd);
		*t = a->procs[--a->nr];
		t = NULL;
	}
	if (t) {
		t->seen = true;
		return;
	}
	if (a->nr == a->cap) {
		size_t cap = a->cap ? 2 * a->cap : 16;
		struct tracked *n = realloc(a->procs, cap * sizeof(*n));

		if (!n)
			return;
		a->procs = n;
		a->cap = cap;
	}
	fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fd < 0)
		return;
	/* The pid may have been reused between the listing and pidfd_open(). */
	if (fd == THP_SELF || parent_of(pid) != parent) {
		close(fd);
		return;
	}
	fcntl(fd, F_SETFD, FD_CLOEXEC);
	t = &a->procs[a->nr++];
	t->pid = pid;
	t->pidfd = fd;
	t->seen = true;
	t->denied = false;
}

/* Every child of every thread of @pid, tracked, then their descendants. */
static void walk(struct agent *a, pid_t pid, int depth)
{
	char path[64];
	DIR *d;
	struct dirent *e;

	if (depth > 64)
		return;
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return;
	while ((e = readdir(d))) {
		char file[320], *list, *p, *end;
		size_t len;

		if (e->d_name[0] == '.')
			continue;
		snprintf(file, sizeof(file), "/proc/%d/task/%s/children", (int)pid, e->d_name);
		list = proc_read_alloc(file, &len);
		if (!list)
			continue;
		for (p = list; *p; p = end) {
			long c = strtol(p, &end, 10);

			if (end == p)
				break;
			if (c > 0) {
				track(a, (pid_t)c, pid);
				walk(a, (pid_t)c, depth + 1);
			}
		}
		free(list);
	}
	closedir(d);
}

static void pass(struct agent *a)
{
	struct collapse_settings s = *a->s;
	s.flags |= THP_COLLAPSE_F_PEER_ONLY;
	struct thp_report fail[COLLAPSE_FAILURES_CAP];
	struct thp_collapse_opts o;
	uint64_t t0 = now_ns();
	size_t keep = 0;

	for (size_t i = 0; i < a->nr; i++)
		a->procs[i].seen = false;
	walk(a, getpid(), 0);
	for (size_t i = 0; i < a->nr; i++) {
		struct tracked *t = &a->procs[i];
		bool was_denied = t->denied;
		int r;

		if (!t->seen) {
			close(t->pidfd);
			continue;
		}
		a->procs[keep++] = *t;
		/*
		 * Read again every pass, not once: a process seen before it
		 * exec()ed into a nested "thpctl run" has the new policy now.
		 */
		r = peer_check(t->pidfd);
		if (r == -EPERM) {
			if (a->verbose && !was_denied)
				fprintf(stderr, "thpctl: agent: pid %d: left alone: %s\n",
					(int)t->pid, thp_strerror_detail());
			a->procs[keep - 1].denied = true;
			continue;
		}
		a->procs[keep - 1].denied = false;
		if (r || other_policy(t->pid))
			continue;
		/* The budget is for the whole tree's pass. */
		if (a->s->budget_ns) {
			uint64_t spent = now_ns() - t0;

			if (spent >= a->s->budget_ns)
				continue;
			s.budget_ns = a->s->budget_ns - spent;
		}
		r = collapse_once(t->pidfd, &s, &o, fail);
		if (r >= 0) {
			if (a->s->budget_bytes)
				s.budget_bytes -= o.bytes_collapsed < s.budget_bytes ? o.bytes_collapsed
										     : s.budget_bytes - 1;
			if (a->verbose && (o.extents_collapsed || o.extents_failed))
				collapse_print_text(stderr, t->pid, &o, fail);
		} else if (r != -ESRCH && a->verbose) {
			fprintf(stderr, "thpctl: agent: pid %d: %s\n", (int)t->pid, thp_strerror(r));
		}
	}
	a->nr = keep;
}

/* Forward @sig to CMD, or once CMD is gone to the rest of the tree's top. */
static void forward(struct agent *a, int sig)
{
	if (a->child > 0) {
		kill(a->child, sig);
		return;
	}
	for (size_t i = 0; i < a->nr; i++)
		if (parent_of(a->procs[i].pid) == getpid())
			kill(a->procs[i].pid, sig);
}

/* CMD's status as ours: its exit code, or the same signal. */
static int finish(int status)
{
	if (WIFSIGNALED(status)) {
		struct rlimit no_core = { 0, 0 };
		sigset_t all;
		int sig = WTERMSIG(status);

		/* CMD has dumped core already, if anything should. */
		setrlimit(RLIMIT_CORE, &no_core);
		signal(sig, SIG_DFL);
		sigfillset(&all);
		sigprocmask(SIG_UNBLOCK, &all, NULL);
		raise(sig);
		return 128 + sig;
	}
	return WEXITSTATUS(status);
}

/*
 * A few system calls instead of thp_probe() (which costs more than the rest
 * of the agent's start, doc/performance.md):
 * process_madvise() with no ranges on our own pidfd returns 0 only where
 * the kernel has the call and accepts MADV_COLLAPSE through it (6.1+),
 * capget() reads CAP_SYS_NICE, which the kernel wants for another process,
 * without formatting /proc/self/status, and access() checks the file each
 * pass reads.  The pidfd is opened raw: a failure here is an answer, not an
 * error for thpctl_open_pidfd() to print.
 */
bool thpctl_agent_possible(const char **why)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
	char children[64];
	int fd = (int)syscall(SYS_pidfd_open, getpid(), 0);
	long r = fd < 0 ? -1 : syscall(SYS_process_madvise, fd, NULL, 0, THP_ADVICE_COLLAPSE, 0);

	if (fd >= 0)
		close(fd);
	if (r) {
		*why = "this kernel cannot collapse another process's memory";
		return false;
	}
	if (syscall(SYS_capget, &hdr, data) || !(data[CAP_SYS_NICE / 32].effective &
						 (1u << (CAP_SYS_NICE % 32)))) {
		*why = "collapsing another process's memory needs CAP_SYS_NICE";
		return false;
	}
	/* Each pass finds CMD's descendants there (walk()). */
	snprintf(children, sizeof(children), "/proc/self/task/%ld/children",
		 (long)syscall(SYS_gettid));
	if (access(children, R_OK)) {
		*why = "the agent finds the command's processes in /proc/PID/task/TID/children, "
		       "which this system does not show";
		return false;
	}
	return true;
}

/*
 * Start CMD with signal mask @mask: 0 and its pid, or the errno of the
 * fork or the exec.  vfork(): the child shares thpctl's memory until it
 * execs, so no page table is copied (fork() was most of what the agent
 * added to "thpctl run").  Not posix_spawn(): its child asks the kernel
 * about every signal's handler (122 system calls) to reset the caught
 * ones, and thpctl catches none; exec resets handlers anyway.  The exec's
 * errno comes back through the memory the child shares.
 */
static int spawn(char **cmd, const sigset_t *mask, pid_t *pid)
{
	volatile int exec_errno = 0;
	pid_t p = vfork();

	if (p == 0) {
		sigprocmask(SIG_SETMASK, mask, NULL);
		execvp(cmd[0], cmd);
		exec_errno = errno ? errno : ENOEXEC;
		_exit(127);
	}
	if (p < 0)
		return errno;
	if (exec_errno) {
		waitpid(p, NULL, 0);
		return exec_errno;
	}
	*pid = p;
	return 0;
}

int thpctl_agent_run(char **cmd, const struct collapse_settings *s, bool verbose)
{
	static const int forwarded[] = { SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1,
					 SIGUSR2, SIGWINCH, SIGCONT, SIGALRM };
	struct agent a = { .s = s, .verbose = verbose };
	struct notify_relay relay;
	sigset_t set, old;
	int err, sfd;
	uint64_t next;
	int status = 0;

	sigemptyset(&set);
	for (size_t i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
		sigaddset(&set, forwarded[i]);
	sigaddset(&set, SIGCHLD);
	/* Blocked before fork(): no signal is lost between fork() and the loop. */
	sigprocmask(SIG_BLOCK, &set, &old);
	/* A signalfd, not sigtimedwait(): the loop also waits for sd_notify messages. */
	sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0) {
		thpctl_error("run: agent: signalfd: %s", strerror(errno));
		sigprocmask(SIG_SETMASK, &old, NULL);
		return THPCTL_EXIT_RUN_FAILED;
	}
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0))
		thpctl_error("run: agent: cannot become a child reaper: %s", strerror(errno));
	/* Under a service manager thpctl is the main PID: CMD's notifications go through it. */
	notify_relay_open(&relay, verbose);
	fflush(NULL);
	err = spawn(cmd, &old, &a.child);
	if (err) {
		thpctl_error("run: cannot run '%s': %s", cmd[0], strerror(err));
		notify_relay_close(&relay);
		close(sfd);
		return err == ENOENT ? THPCTL_EXIT_NOT_FOUND : THPCTL_EXIT_CANNOT_EXEC;
	}
	next = now_ns() + s->interval_ns;
	for (;;) {
		uint64_t now = now_ns(), wait = next > now ? next - now : 0;
		struct pollfd fds[2] = { { .fd = sfd, .events = POLLIN },
					 { .fd = relay.in, .events = POLLIN } };
		/* Rounded up: a pass never starts before its time. */
		int ms = (int)((wait + 999999) / 1000000), r;
		struct signalfd_siginfo info;

		r = poll(fds, relay.in >= 0 ? 2 : 1, ms);
		if (r < 0 && errno != EINTR)
			break;
		if (r == 0) {
			pass(&a);
			next = now_ns() + s->interval_ns;
			continue;
		}
		if (relay.in >= 0 && (fds[1].revents & POLLIN))
			notify_relay_forward(&relay);
		if (!(fds[0].revents & POLLIN))
			continue;
		while (read(sfd, &info, sizeof(info)) == (ssize_t)sizeof(info)) {
			int sig = (int)info.ssi_signo;
			bool done = false;

			if (sig == SIGCHLD) {
				pid_t p;
				int st;

				while ((p = waitpid(-1, &st, WNOHANG)) > 0)
					if (p == a.child) {
						status = st;
						a.child = 0;
					}
				/* No child left: CMD and every orphan it left are gone. */
				done = p < 0 && errno == ECHILD;
			} else if (info.ssi_code != SI_KERNEL) {
				/* From the terminal the whole process group got it, CMD too. */
				forward(&a, sig);
			}
			if (done)
				goto out;
		}
	}
out:
	/* What the tree said last (STOPPING=1, say) before it went. */
	notify_relay_forward(&relay);
	notify_relay_close(&relay);
	close(sfd);
	for (size_t i = 0; i < a.nr; i++)
		close(a.procs[i].pidfd);
	free(a.procs);
	return finish(status);
}
