// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * thpctl compare: one run.  The command is started as "thpctl run
 * --policy P -- CMD" in a process group of its own, held at a gate until
 * its perf counters are open (enable_on_exec, inherited by its children),
 * then watched through a pidfd: its AnonHugePages are summed over the
 * group every sample interval, its stdout is kept for --metric, and
 * wait4() gives its CPU time, peak RSS and faults.  With --load the
 * command is a server: it is started and waited for (--ready), the load
 * command runs against it and is timed, then the server's group gets
 * SIGTERM (SIGKILL 10 s later) and its own figures are read.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <math.h>
#include <poll.h>
#include <regex.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <thp/thp.h>

#include "clock_ns.h"
#include "compare.h"
#include "thpctl.h"

#define OUTPUT_CAP (1u << 20)	 /* bytes of output kept for --metric */
#define SERVER_STOP_GRACE_S 10.0 /* SIGTERM, then SIGKILL */

struct output {
	char *buf;
	size_t len;
	bool truncated;
};

struct child {
	pid_t pid;
	int pidfd;
	int gate; /* write end: closing it lets the child exec */
	int out;  /* read end of its stdout, or -1 */
};

static double seconds_since(uint64_t start_ns)
{
	return (double)(now_ns() - start_ns) / 1e9;
}

/*
 * Fork a child that joins a new process group and waits at a gate before
 * it execs @argv (with stdout into a pipe when @capture).  Nothing runs
 * of @argv until child_release().
 */
static int child_start(char *const argv[], bool capture, bool quiet, struct child *c)
{
	int gate[2], out[2] = { -1, -1 };

	if (pipe2(gate, O_CLOEXEC) < 0)
		return -1;
	if (capture && pipe2(out, O_CLOEXEC) < 0) {
		close(gate[0]);
		close(gate[1]);
		return -1;
	}
	c->pid = fork();
	if (c->pid < 0) {
		int e = errno;

		close(gate[0]);
		close(gate[1]);
		if (capture) {
			close(out[0]);
			close(out[1]);
		}
		errno = e;
		return -1;
	}
	if (c->pid == 0) {
		char b;

		setpgid(0, 0);
		if (capture)
			dup2(out[1], STDOUT_FILENO);
		if (quiet) {
			int null = open("/dev/null", O_WRONLY | O_CLOEXEC);

			if (null >= 0) {
				dup2(null, STDOUT_FILENO);
				dup2(null, STDERR_FILENO);
			}
		}
		close(gate[1]);
		if (read(gate[0], &b, 1) != 0)
			_exit(125); /* the parent wrote: it gave up on this run */
		execv(argv[0], argv);
		_exit(errno == ENOENT ? 127 : 126);
	}
	/* Both sides set the group, so that it exists before either goes on. */
	setpgid(c->pid, c->pid);
	close(gate[0]);
	c->gate = gate[1];
	if (capture) {
		close(out[1]);
		c->out = out[0];
		fcntl(c->out, F_SETFL, O_NONBLOCK);
	} else {
		c->out = -1;
	}
	c->pidfd = (int)syscall(SYS_pidfd_open, c->pid, 0);
	return 0;
}

static void child_release(struct child *c)
{
	close(c->gate);
	c->gate = -1;
}

/* Keep what the child writes, up to OUTPUT_CAP; false at end of file. */
static bool output_drain(int fd, struct output *o)
{
	char tmp[65536];

	for (;;) {
		ssize_t n = read(fd, tmp, sizeof(tmp));

		if (n == 0)
			return false;
		if (n < 0)
			return errno == EINTR || errno == EAGAIN;
		size_t keep = o->len < OUTPUT_CAP ? OUTPUT_CAP - o->len : 0;

		if ((size_t)n > keep)
			o->truncated = true;
		if ((size_t)n < keep)
			keep = (size_t)n;
		if (keep) {
			char *nb = realloc(o->buf, o->len + keep + 1);

			if (!nb)
				return true;
			o->buf = nb;
			memcpy(o->buf + o->len, tmp, keep);
			o->len += keep;
			o->buf[o->len] = '\0';
		}
	}
}

/* The process group of /proc/PID/stat (the field after state and ppid). */
static pid_t stat_pgrp(int dirfd, const char *name)
{
	char path[300], buf[1024];
	int fd;
	ssize_t n;
	int pgrp;

	snprintf(path, sizeof(path), "%s/stat", name);
	fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	char *p = strrchr(buf, ')');

	if (!p || sscanf(p + 1, " %*c %*d %d", &pgrp) != 1)
		return -1;
	return pgrp;
}

static uint64_t rollup_anon_huge(int dirfd, const char *name)
{
	char path[300], line[256];
	unsigned long long kb = 0;
	int fd;
	FILE *f;

	snprintf(path, sizeof(path), "%s/smaps_rollup", name);
	fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return 0;
	}
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "AnonHugePages: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return kb * 1024;
}

/* AnonHugePages summed over the processes of group @pgid now. */
static uint64_t group_anon_huge(pid_t pgid)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	uint64_t sum = 0;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		if (stat_pgrp(dirfd(d), e->d_name) == pgid)
			sum += rollup_anon_huge(dirfd(d), e->d_name);
	}
	closedir(d);
	return sum;
}

/*
 * Wait for child @c, sampling group @sample_pgid's huge bytes each
 * @sample_s and draining @c's stdout into @o.  @deadline_s (0: none)
 * bounds the wait: then returns 1 with the child still running.
 */
static int child_wait(struct child *c, pid_t sample_pgid, double sample_s, double deadline_s,
		      struct output *o, double *huge_max, int *status, struct rusage *ru)
{
	uint64_t start = now_ns(), next = start;
	bool out_open = c->out >= 0;

	for (;;) {
		uint64_t now = now_ns();

		if (sample_pgid > 0 && now >= next) {
			double h = (double)group_anon_huge(sample_pgid);

			if (isnan(*huge_max) || h > *huge_max)
				*huge_max = h;
			next = now + (uint64_t)(sample_s * 1e9);
		}
		if (deadline_s > 0 && seconds_since(start) >= deadline_s)
			return 1;
		struct pollfd p[2] = { { .fd = c->pidfd, .events = POLLIN },
				       { .fd = out_open ? c->out : -1, .events = POLLIN } };
		int64_t wait_ms = sample_pgid > 0 ? (int64_t)((next - now) / 1000000) + 1 : 100;

		if (c->pidfd < 0)
			wait_ms = 10; /* no pidfd (kernel < 5.3): poll by waitid */
		if (poll(p, 2, (int)wait_ms) < 0 && errno != EINTR)
			return -1;
		if (out_open && (p[1].revents & (POLLIN | POLLHUP)))
			out_open = output_drain(c->out, o);
		siginfo_t si = { 0 };

		if (waitid(P_PID, (id_t)c->pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid) {
			if (wait4(c->pid, status, 0, ru) < 0)
				return -1;
			/* What the command wrote last, unless a grandchild still holds the pipe. */
			if (out_open)
				output_drain(c->out, o);
			return 0;
		}
	}
}

static void child_close(struct child *c)
{
	if (c->pidfd >= 0)
		close(c->pidfd);
	if (c->out >= 0)
		close(c->out);
	c->pidfd = c->out = -1;
}

/* perf counters on @pid (and, inherited, its children), user space only. */
struct counters {
	int fd[2]; /* dTLB, iTLB load misses */
};

static const uint64_t counter_config[2] = {
	PERF_COUNT_HW_CACHE_DTLB | (PERF_COUNT_HW_CACHE_OP_READ << 8) |
		(PERF_COUNT_HW_CACHE_RESULT_MISS << 16),
	PERF_COUNT_HW_CACHE_ITLB | (PERF_COUNT_HW_CACHE_OP_READ << 8) |
		(PERF_COUNT_HW_CACHE_RESULT_MISS << 16),
};

static void note_unavailable(struct compare_unavailable *na, enum compare_figure f, const char *why)
{
	if (!na->why[f])
		na->why[f] = strdup(why);
}

static char *paranoid_hint(char *buf, size_t len, int err)
{
	int level = 0;
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");

	if (f) {
		if (fscanf(f, "%d", &level) != 1)
			level = 0;
		fclose(f);
	}
	if (err == ENOENT || err == EOPNOTSUPP)
		snprintf(buf, len, "perf_event_open(): %s: this CPU (or VM) exposes no such counter",
			 strerror(err));
	else if (err == EACCES || err == EPERM)
		snprintf(buf, len, "perf_event_open(): %s (kernel.perf_event_paranoid is %d)",
			 strerror(err), level);
	else
		snprintf(buf, len, "perf_event_open(): %s", strerror(err));
	return buf;
}

static void counters_open(pid_t pid, struct counters *k, struct compare_unavailable *na)
{
	for (int i = 0; i < 2; i++) {
		struct perf_event_attr a = {
			.type = PERF_TYPE_HW_CACHE,
			.size = sizeof(a),
			.config = counter_config[i],
			.disabled = 1,
			.inherit = 1,
			.enable_on_exec = 1,
			.exclude_kernel = 1,
			.exclude_hv = 1,
			.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING,
		};
		char why[160];

		k->fd[i] = (int)syscall(SYS_perf_event_open, &a, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
		if (k->fd[i] < 0)
			note_unavailable(na, i ? CMP_ITLB : CMP_DTLB,
					 paranoid_hint(why, sizeof(why), errno));
	}
}

static void counters_read(struct counters *k, double *fig, struct compare_unavailable *na)
{
	for (int i = 0; i < 2; i++) {
		struct {
			uint64_t value, enabled, running;
		} r;
		enum compare_figure f = i ? CMP_ITLB : CMP_DTLB;

		if (k->fd[i] < 0)
			continue;
		if (read(k->fd[i], &r, sizeof(r)) != (ssize_t)sizeof(r) || !r.running)
			note_unavailable(na, f, "the counter never ran (no free PMU counter)");
		else
			fig[f] = (double)r.value * ((double)r.enabled / (double)r.running);
		close(k->fd[i]);
		k->fd[i] = -1;
	}
}

static void take_rusage(const struct rusage *ru, double *fig)
{
	fig[CMP_CPU] = (double)ru->ru_utime.tv_sec + (double)ru->ru_utime.tv_usec / 1e6 +
		       (double)ru->ru_stime.tv_sec + (double)ru->ru_stime.tv_usec / 1e6;
	fig[CMP_PEAK_RSS] = (double)ru->ru_maxrss * 1024;
	fig[CMP_MINFLT] = (double)ru->ru_minflt;
	fig[CMP_MAJFLT] = (double)ru->ru_majflt;
}

/* The first number --metric's pattern finds in @text (its first group if it has one). */
static double metric_from(const char *pattern, const char *text, char *why, size_t len)
{
	regex_t re;
	regmatch_t m[2];
	double v = NAN;

	if (regcomp(&re, pattern, REG_EXTENDED) != 0) {
		snprintf(why, len, "the --metric pattern does not compile");
		return NAN;
	}
	if (regexec(&re, text ? text : "", 2, m, 0) != 0) {
		snprintf(why, len, "the --metric pattern matched nothing in the output");
	} else {
		int g = m[1].rm_so >= 0 ? 1 : 0;
		size_t n = (size_t)(m[g].rm_eo - m[g].rm_so);
		char num[64], *end;

		if (n >= sizeof(num))
			n = sizeof(num) - 1;
		memcpy(num, text + m[g].rm_so, n);
		num[n] = '\0';
		v = strtod(num, &end);
		if (end == num) {
			snprintf(why, len, "the --metric match \"%s\" is not a number", num);
			v = NAN;
		}
	}
	regfree(&re);
	return v;
}

static void describe_status(int status, char *buf, size_t len)
{
	if (WIFEXITED(status))
		snprintf(buf, len, "exit status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, len, "killed by signal %d (%s)", WTERMSIG(status),
			 strsignal(WTERMSIG(status)));
	else
		snprintf(buf, len, "status 0x%x", status);
}

static void show_tail(const struct output *o)
{
	if (!o->len)
		return;
	const char *p = o->len > 2000 ? o->buf + o->len - 2000 : o->buf;

	fprintf(stderr, "thpctl: compare: the end of its output:\n%s%s", p,
		o->buf[o->len - 1] == '\n' ? "" : "\n");
}

/* "/bin/sh -c STRING" until it exits 0, while the server lives; bounded. */
static int wait_ready(const struct compare_spec *s, struct child *server)
{
	uint64_t start = now_ns();

	if (!s->ready) {
		struct timespec t = { 1, 0 };

		nanosleep(&t, NULL);
		return 0;
	}
	while (seconds_since(start) < s->ready_timeout_s) {
		char *argv[] = { (char *)"/bin/sh", (char *)"-c", (char *)s->ready, NULL };
		struct child r;
		int st;

		if (child_start(argv, false, true, &r) < 0)
			return -1;
		child_release(&r);
		if (waitpid(r.pid, &st, 0) < 0)
			st = -1;
		child_close(&r);
		if (st == 0)
			return 0;
		siginfo_t si = { 0 };

		if (waitid(P_PID, (id_t)server->pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
		    si.si_pid) {
			thpctl_error("compare: the server exited before --ready succeeded");
			return -1;
		}
		struct timespec t = { 0, 100000000 };

		nanosleep(&t, NULL);
	}
	thpctl_error("compare: --ready did not succeed within %.0f s", s->ready_timeout_s);
	return -1;
}

static char **run_argv(const struct compare_spec *s, int policy)
{
	size_t n = 0;

	while (s->cmd[n])
		n++;
	char **argv = calloc(n + 6, sizeof(*argv));

	if (!argv)
		return NULL;
	argv[0] = (char *)s->thpctl_path;
	argv[1] = (char *)"run";
	argv[2] = (char *)"--policy";
	argv[3] = (char *)thp_policy_name((unsigned int)policy);
	argv[4] = (char *)"--";
	memcpy(argv + 5, s->cmd, n * sizeof(*argv));
	return argv;
}

/* Stop the server's whole group: SIGTERM, SIGKILL after the grace time. */
static int server_stop(struct child *server, double sample_s, double *huge_max, int *status,
		       struct rusage *ru)
{
	struct output none = { 0 };
	int rc;

	kill(-server->pid, SIGTERM);
	rc = child_wait(server, 0, sample_s, SERVER_STOP_GRACE_S, &none, huge_max, status, ru);
	if (rc == 1) {
		thpctl_error("compare: the server did not exit within %.0f s of SIGTERM; killed",
			     SERVER_STOP_GRACE_S);
		kill(-server->pid, SIGKILL);
		rc = child_wait(server, 0, sample_s, 0, &none, huge_max, status, ru);
	}
	/* Whatever of its group is left (a daemon's helpers). */
	kill(-server->pid, SIGKILL);
	free(none.buf);
	return rc;
}

int compare_run_once(const struct compare_spec *s, int policy, struct compare_run *run,
		     struct compare_unavailable *na)
{
	char **argv = run_argv(s, policy);
	struct child main_child, load_child;
	struct counters k = { { -1, -1 } };
	struct output out = { 0 };
	struct rusage ru = { 0 };
	char why[200], desc[96];
	int status = 0, rc = -1;
	uint64_t start;

	for (int f = 0; f < CMP_NFIG; f++)
		run->fig[f] = NAN;
	note_unavailable(na, CMP_WALK,
			 "Linux has no generic page-walk event (CPU-specific, e.g. Intel's "
			 "dtlb_load_misses.walk_active)");
	if (!s->metric)
		note_unavailable(na, CMP_METRIC, "no --metric pattern given");
	if (!argv || child_start(argv, !s->load, s->load && !s->verbose, &main_child) < 0) {
		thpctl_error("compare: cannot start the command: %s", strerror(errno));
		free(argv);
		return -1;
	}
	counters_open(main_child.pid, &k, na);
	start = now_ns();
	child_release(&main_child);

	if (!s->load) {
		if (child_wait(&main_child, main_child.pid, s->sample_s, 0, &out,
			       &run->fig[CMP_HUGE], &status, &ru) < 0)
			goto out;
		run->fig[CMP_WALL] = seconds_since(start);
		run->exit_status = status;
		if (status != 0) {
			describe_status(status, desc, sizeof(desc));
			thpctl_error("compare: the command under --policy %s ended with %s",
				     thp_policy_name((unsigned int)policy), desc);
			show_tail(&out);
			goto out;
		}
	} else {
		char *largv[] = { (char *)"/bin/sh", (char *)"-c", (char *)s->load, NULL };
		int lstatus;
		struct rusage lru;

		if (wait_ready(s, &main_child) < 0) {
			server_stop(&main_child, s->sample_s, &run->fig[CMP_HUGE], &status, &ru);
			goto out;
		}
		if (child_start(largv, true, false, &load_child) < 0) {
			thpctl_error("compare: cannot start the load: %s", strerror(errno));
			server_stop(&main_child, s->sample_s, &run->fig[CMP_HUGE], &status, &ru);
			goto out;
		}
		start = now_ns();
		child_release(&load_child);
		rc = child_wait(&load_child, main_child.pid, s->sample_s, 0, &out,
				&run->fig[CMP_HUGE], &lstatus, &lru);
		run->fig[CMP_WALL] = seconds_since(start);
		kill(-load_child.pid, SIGKILL);
		child_close(&load_child);
		if (server_stop(&main_child, s->sample_s, &run->fig[CMP_HUGE], &status, &ru) < 0 ||
		    rc < 0) {
			rc = -1;
			goto out;
		}
		rc = -1;
		run->exit_status = lstatus;
		if (lstatus != 0) {
			describe_status(lstatus, desc, sizeof(desc));
			thpctl_error("compare: the load against the server under --policy %s ended "
				     "with %s",
				     thp_policy_name((unsigned int)policy), desc);
			show_tail(&out);
			goto out;
		}
	}
	take_rusage(&ru, run->fig);
	counters_read(&k, run->fig, na);
	if (s->metric) {
		run->fig[CMP_METRIC] = metric_from(s->metric, out.buf, why, sizeof(why));
		if (isnan(run->fig[CMP_METRIC])) {
			thpctl_error("compare: %s", why);
			show_tail(&out);
			goto out;
		}
	}
	if (s->verbose && out.len)
		fputs(out.buf, stderr);
	if (out.truncated)
		fprintf(stderr, "thpctl: compare: note: output beyond %u bytes was not kept\n",
			OUTPUT_CAP);
	rc = 0;
out:
	for (int i = 0; i < 2; i++)
		if (k.fd[i] >= 0)
			close(k.fd[i]);
	child_close(&main_child);
	free(out.buf);
	free(argv);
	return rc;
}
