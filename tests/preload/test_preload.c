// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * `thpctl run` and libthp-preload.so, proven from /proc: VmFlags hg and
 * AnonHugePages of the launched program and of a program it execs, the
 * preload in /proc/PID/maps, the environment in /proc/PID/environ, the
 * policy read back by thp_get_default() through a pidfd, what a setuid
 * program gets (nothing beyond what the kernel gives), and the exit codes
 * for bad input.  The global THP mode must be "madvise": there nothing is
 * huge unless advised, so every huge page seen here is the policy's doing.
 *
 * Environment (set by meson.build): THPCTL, TLB_WORKLOAD, PRELOAD_PROBE,
 * THP_PRELOAD (the .so), TEST_BUILD_DIR (a place for setuid copies when
 * /tmp is mounted nosuid).
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thp/thp.h>

#include "helpers.h"

#define NOBODY 65534

/* thpctl run ARGS...: a NULL-terminated list after the thpctl path. */
static void thpctl(struct run *r, const struct spawn_opts *o, ...)
{
	char *argv[32];
	int n = 0;
	va_list ap;

	argv[n++] = (char *)env_path("THPCTL");
	argv[n++] = (char *)"run";
	va_start(ap, o);
	while ((argv[n] = va_arg(ap, char *)) != NULL && n < 31)
		n++;
	va_end(ap);
	argv[n] = NULL;
	run_cmd(r, o, argv);
}

/* ------------------------------------------------------------------ */
/* tlb_workload output                                                 */

struct wl_line {
	int depth;
	char buffer[16];
	int hg;
	long long anon_kb;
};

static int parse_workload(const char *out, struct wl_line *l, int cap)
{
	int n = 0;

	for (const char *p = out; p && *p && n < cap; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		int pid;

		if (sscanf(p, "pid=%d depth=%d buffer=%15s bytes=%*s hg=%d anon_huge_kb=%lld", &pid,
			   &l[n].depth, l[n].buffer, &l[n].hg, &l[n].anon_kb) == 5)
			n++;
	}
	return n;
}

/* Run tlb_workload -s 16 --exec-child under @policy (nested under @outer if set). */
static int workload(struct run *r, const char *outer, const char *policy, struct wl_line *l)
{
	char *wl = (char *)env_path("TLB_WORKLOAD");

	if (outer)
		thpctl(r, NULL, "--policy", outer, "--", env_path("THPCTL"), "run", "--policy",
		       policy, "--", wl, "-s", "16", "--exec-child", NULL);
	else
		thpctl(r, NULL, "--policy", policy, "--", wl, "-s", "16", "--exec-child", NULL);
	ck_assert_msg(r->status == 0, "thpctl run --policy %s: exit %d\nstdout:\n%s\nstderr:\n%s",
		      policy, r->status, r->out, r->err);
	return parse_workload(r->out, l, 8);
}

static void expect_workload(const char *outer, const char *policy, bool huge)
{
	static struct run r;
	struct wl_line l[8];
	int n;

	require_madvise_mode();
	n = workload(&r, outer, policy, l);
	ck_assert_msg(n == 4, "expected 4 buffer lines (2 buffers x depth 0, 1), got %d:\n%s%s",
		      n, r.out, r.err);
	for (int i = 0; i < n; i++) {
		ck_assert_msg(l[i].depth == i / 2, "line %d has depth %d", i, l[i].depth);
		if (huge)
			ck_assert_msg(l[i].hg == 1 && l[i].anon_kb > 0,
				      "policy %s: depth %d %s buffer hg=%d anon_huge_kb=%lld, "
				      "want hg=1 and huge pages\n%s", policy, l[i].depth,
				      l[i].buffer, l[i].hg, l[i].anon_kb, r.out);
		else
			ck_assert_msg(l[i].hg == 0 && l[i].anon_kb == 0,
				      "policy %s%s%s: depth %d %s buffer hg=%d anon_huge_kb=%lld, "
				      "want no advice and no huge pages\n%s", policy,
				      outer ? " inside " : "", outer ? outer : "", l[i].depth,
				      l[i].buffer, l[i].hg, l[i].anon_kb, r.out);
	}
}

START_TEST(huge_workload_and_grandchild)
{
	expect_workload(NULL, "huge", true);
}
END_TEST

START_TEST(never_workload)
{
	expect_workload(NULL, "never", false);
}
END_TEST

START_TEST(never_inside_huge)
{
	expect_workload("huge", "never", false);
}
END_TEST

START_TEST(nohuge_workload)
{
	expect_workload(NULL, "nohuge", false);
}
END_TEST

START_TEST(system_workload)
{
	expect_workload(NULL, "system", false);
}
END_TEST

/* huge inside never: the outer prctl disable is lifted again. */
START_TEST(huge_inside_never)
{
	expect_workload("never", "huge", true);
}
END_TEST

/* ------------------------------------------------------------------ */
/* A live child: maps, environ, thp_get_default() through a pidfd      */

struct live {
	pid_t pid;       /* thpctl, then (same pid after exec) the probe */
	int stdin_w;     /* closing it ends the probe */
	int out, err;
};

static void live_start(struct live *lv, const char *outer, const char *policy)
{
	char *probe = (char *)env_path("PRELOAD_PROBE"), *tc = (char *)env_path("THPCTL");
	/*
	 * No collapse agent (thpctl would stay the parent): these cases look at
	 * what the preload does in the exec'd program itself (test_agent has
	 * the agent).
	 */
	char *nested[] = { tc, "run", "--policy", (char *)outer, "--collapse-interval", "0", "--",
			   tc, "run", "--policy", (char *)policy, "--collapse-interval", "0", "--",
			   probe, "wait", NULL };
	char *plain[] = { tc, "run", "--policy", (char *)policy, "--collapse-interval", "0", "--",
			  probe, "wait", NULL };
	int in[2];
	struct spawn_opts o = { .stdout_fd = -1 };
	char line[128] = "";
	ssize_t n = 0, got;
	int pid = 0;

	ck_assert(pipe2(in, O_CLOEXEC) == 0);
	o.stdin_fd = in[0];
	lv->pid = spawn(outer ? nested : plain, &o, &lv->out, &lv->err);
	close(in[0]);
	lv->stdin_w = in[1];
	/* "ready pid=N": the probe has exec'd and its mappings are final. */
	while (n < (ssize_t)sizeof(line) - 1 && !strchr(line, '\n') &&
	       (got = read(lv->out, line + n, sizeof(line) - 1 - (size_t)n)) > 0) {
		n += got;
		line[n] = 0;
	}
	ck_assert_msg(sscanf(line, "ready pid=%d", &pid) == 1, "probe did not start: '%s'", line);
	ck_assert_int_eq(pid, lv->pid);
}

static void live_stop(struct live *lv)
{
	struct run r;

	close(lv->stdin_w);
	collect(lv->out, lv->err, &r);
	close(lv->out);
	close(lv->err);
	ck_assert_msg(wait_status(lv->pid) == 0, "probe failed: %s", r.err);
}

static bool proc_maps_has(pid_t pid, const char *needle)
{
	char path[64], line[4096];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, needle) != NULL;
	fclose(f);
	return found;
}

/* Value of @name in /proc/PID/environ into @buf; false if absent. */
static bool proc_environ(pid_t pid, const char *name, char *buf, size_t len)
{
	char path[64], env[65536];
	size_t nl = strlen(name), n;
	ssize_t got;

	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	got = read_file(path, env, sizeof(env));
	ck_assert_msg(got >= 0, "%s: %s", path, strerror(errno));
	n = (size_t)got;
	for (size_t i = 0; i < n; i += strlen(env + i) + 1) {
		if (!strncmp(env + i, name, nl) && env[i + nl] == '=') {
			snprintf(buf, len, "%s", env + i + nl + 1);
			return true;
		}
	}
	return false;
}

static int status_thp_enabled(pid_t pid)
{
	char path[64], line[256];
	int v = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	ck_assert(f != NULL);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "THP_enabled:", 12))
			v = atoi(line + 12);
	fclose(f);
	return v;
}

static int remote_default(pid_t pid, struct thp_default_opts *d)
{
	int fd = (int)syscall(SYS_pidfd_open, pid, 0), r;

	ck_assert_msg(fd > 0, "pidfd_open: %s", strerror(errno));
	d->pidfd = fd;
	r = thp_get_default(d);
	close(fd);
	return r;
}

START_TEST(huge_child_has_preload_env_and_default)
{
	THP_OPTS(thp_default_opts, d);
	struct live lv;
	char val[4096];
	int r;

	live_start(&lv, NULL, "huge");
	ck_assert_msg(proc_maps_has(lv.pid, "/libthp-preload.so"),
		      "libthp-preload.so is not mapped in the child");
	ck_assert_msg(proc_environ(lv.pid, "GLIBC_TUNABLES", val, sizeof(val)) &&
			      strstr(val, "glibc.malloc.hugetlb=1"),
		      "child's GLIBC_TUNABLES lacks glibc.malloc.hugetlb=1");
	ck_assert_msg(proc_environ(lv.pid, "LD_PRELOAD", val, sizeof(val)) &&
			      strstr(val, "/libthp-preload.so"),
		      "child's LD_PRELOAD lacks the preload");
	r = remote_default(lv.pid, &d);
	ck_assert_msg(r == 0, "thp_get_default(pidfd): %s (%s)", thp_strerror(r),
		      thp_strerror_detail());
	ck_assert_int_eq(d.policy, THP_POLICY_HUGE);
	ck_assert_int_eq(d.backend_used, THP_BACKEND_PRELOAD);
	ck_assert(d.persistent);
	live_stop(&lv);
}
END_TEST

START_TEST(never_inside_huge_child)
{
	THP_OPTS(thp_default_opts, d);
	struct live lv;
	char val[4096];
	int r;

	live_start(&lv, "huge", "never");
	ck_assert_msg(!proc_maps_has(lv.pid, "/libthp-preload.so"),
		      "libthp-preload.so is still mapped under --policy never");
	ck_assert_msg(!proc_environ(lv.pid, "LD_PRELOAD", val, sizeof(val)) ||
			      !strstr(val, "libthp-preload.so"),
		      "LD_PRELOAD still names the preload: %s", val);
	ck_assert_msg(!proc_environ(lv.pid, "GLIBC_TUNABLES", val, sizeof(val)) ||
			      !strstr(val, "glibc.malloc.hugetlb=1"),
		      "GLIBC_TUNABLES still has hugetlb=1: %s", val);
	ck_assert_int_eq(status_thp_enabled(lv.pid), 0);
	r = remote_default(lv.pid, &d);
	ck_assert_msg(r == 0, "thp_get_default(pidfd): %s", thp_strerror(r));
	ck_assert_int_eq(d.policy, THP_POLICY_NEVER);
	live_stop(&lv);
}
END_TEST

/* The probe's one report line, run as @argv under @o. */
static void probe_report(struct run *r, const struct spawn_opts *o, const char *policy,
			 const char *probe)
{
	thpctl(r, o, "--policy", policy, "--", probe, "report", NULL);
	ck_assert_msg(r->status == 0, "exit %d\n%s%s", r->status, r->out, r->err);
}

static bool field_is(const char *out, const char *kv)
{
	size_t n = strlen(kv);

	for (const char *p = strstr(out, kv); p; p = strstr(p + 1, kv))
		if ((p == out || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\n' || !p[n]))
			return true;
	return false;
}

START_TEST(self_default_under_preload)
{
	static struct run r;

	probe_report(&r, NULL, "huge", env_path("PRELOAD_PROBE"));
	ck_assert_msg(field_is(r.out, "default=huge") && field_is(r.out, "backend=preload") &&
			      field_is(r.out, "persistent=1"),
		      "thp_get_default(self) under the preload: %s", r.out);
	ck_assert_msg(field_is(r.out, "mmap_hg=1") && field_is(r.out, "malloc_hg=1"), "%s", r.out);
	/* Loaded, the preload prints nothing. */
	ck_assert_msg(r.err[0] == 0, "stderr not empty: %s", r.err);
}
END_TEST

/*
 * The line of `preload_probe switch` for step @step (0-based) split into
 * the probe's own facts (@own) and its exec()ed child's report (@child).
 */
static void switch_step(const char *out, int step, char *own, char *child, size_t len)
{
	const char *l = out, *e, *x;

	for (int i = 0; i < step && l; i++)
		l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL;
	ck_assert_msg(l && !strncmp(l, "switch=", 7), "no line %d in:\n%s", step, out);
	e = l + strcspn(l, "\n");
	x = strstr(l, " exec: ");
	ck_assert_msg(x && x < e, "no exec: part: %.*s", (int)(e - l), l);
	snprintf(own, len, "%.*s", (int)(x - l), l);
	snprintf(child, len, "%.*s", (int)(e - x - 7), x + 7);
}

#define ck_fields(part, ...)                                                       \
	do {                                                                       \
		const char *const want_[] = { __VA_ARGS__ };                       \
		for (size_t i_ = 0; i_ < sizeof(want_) / sizeof(want_[0]); i_++)   \
			ck_assert_msg(field_is(part, want_[i_]), "want %s in: %s", \
				      want_[i_], part);                            \
	} while (0)

/*
 * thp_set_default() inside a process that runs under the preload switches
 * the preload with the policy: SYSTEM, NOHUGE and NEVER stop its advice
 * for fresh mmap()s here and in a fork()ed child, take it out of the
 * environment of an exec()ed child (not loaded there, nothing advised),
 * and thp_get_default() says so here, in the child and through a pidfd;
 * HUGE puts it all back.  Before, the preload went on advising while the
 * call said persistent = 1 and get said huge.
 */
START_TEST(set_default_switches_preload)
{
	static const char *const steps[] = { "never", "system", "nohuge", "huge", "system" };
	static struct run r;
	char own[4096], child[4096];

	require_madvise_mode();
	thpctl(&r, NULL, "--policy", "huge", "--", env_path("PRELOAD_PROBE"), "switch", steps[0],
	       steps[1], steps[2], steps[3], steps[4], NULL);
	ck_assert_msg(r.status == 0, "exit %d\n%s%s", r.status, r.out, r.err);
	for (int i = 0; i < 5; i++) {
		char get[32], remote[32], exec_default[32];

		switch_step(r.out, i, own, child, sizeof(own));
		snprintf(get, sizeof(get), "get=%s", steps[i]);
		snprintf(exec_default, sizeof(exec_default), "default=%s", steps[i]);
		ck_fields(own, "ret=0", get);
		if (!strcmp(steps[i], "huge")) {
			ck_fields(own, "self_hg=1", "fork_hg=1", "fork_get=huge", "parent_get=huge");
			ck_fields(child, "preload_mapped=1", "mmap_hg=1", "malloc_hg=1",
				  "default=huge", "backend=preload");
			continue;
		}
		/* Another process sees "system" and "nohuge" alike: not huge, no guess. */
		snprintf(remote, sizeof(remote), "parent_get=%s",
			 strcmp(steps[i], "never") ? "ambiguous" : "never");
		ck_fields(own, "persistent=1", "self_hg=0", "fork_hg=0", remote);
		ck_assert_msg(strstr(own, "fork_get=") && field_is(strstr(own, "fork_get=") + 5, get),
			      "fork()ed child's policy: %s", own);
		ck_fields(child, "preload_mapped=0", "mmap_hg=0", "malloc_hg=0", "ld_preload=-",
			  "tunables=-", exec_default, "persistent=1");
	}
}
END_TEST

/* The constructor advises what exists before main() (THP_PRELOAD_DEBUG says how much). */
START_TEST(constructor_advises_existing)
{
	static struct run r;
	const char *env[] = { "THP_PRELOAD_DEBUG=1", NULL };
	struct spawn_opts o = { .env = env, .stdin_fd = -1, .stdout_fd = -1 };
	unsigned int n = 0;
	const char *p;

	probe_report(&r, &o, "huge", env_path("PRELOAD_PROBE"));
	p = strstr(r.err, "libthp-preload: advised ");
	ck_assert_msg(p && sscanf(p, "libthp-preload: advised %u existing", &n) == 1 && n > 0,
		      "constructor advised nothing: %s", r.err);
}
END_TEST

/* ------------------------------------------------------------------ */
/* --require-persistent and bad input: message, exit code, CMD not run */

static char marker[PATH_MAX];

static void marker_setup(void)
{
	snprintf(marker, sizeof(marker), "/tmp/thpctl-run-marker.%d", (int)getpid());
	unlink(marker);
}

static void expect_refused(struct run *r, int code, const char *msg_part)
{
	ck_assert_msg(r->status == code, "exit %d, want %d; stderr: %s", r->status, code, r->err);
	ck_assert_msg(strstr(r->err, "thpctl: run: ") && strstr(r->err, msg_part),
		      "stderr lacks '%s': %s", msg_part, r->err);
	ck_assert_msg(access(marker, F_OK) != 0, "CMD ran although thpctl refused");
}

START_TEST(require_persistent_huge_fails)
{
	static struct run r;

	marker_setup();
	thpctl(&r, NULL, "--policy", "huge", "--require-persistent", "--", "/usr/bin/touch",
	       marker, NULL);
	expect_refused(&r, 125, "policy huge cannot be made persistent by this kernel");
	ck_assert_msg(strstr(r.err, "drop --require-persistent"), "%s", r.err);
}
END_TEST

START_TEST(require_persistent_never_runs)
{
	static struct run r;

	marker_setup();
	thpctl(&r, NULL, "--require-persistent", "--policy", "never", "--", "/usr/bin/touch",
	       marker, NULL);
	ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
	ck_assert_msg(access(marker, F_OK) == 0, "CMD did not run");
	unlink(marker);
}
END_TEST

START_TEST(bad_input)
{
	static struct run r;

	marker_setup();
	thpctl(&r, NULL, "--", "/usr/bin/touch", marker, NULL);
	expect_refused(&r, 125, "--policy");
	thpctl(&r, NULL, "--policy", "gigantic", "--", "/usr/bin/touch", marker, NULL);
	expect_refused(&r, 125, "unknown policy 'gigantic'");
	thpctl(&r, NULL, "--policy", "huge", NULL);
	expect_refused(&r, 125, "no command");
	thpctl(&r, NULL, "--policy", "huge", "--", NULL);
	expect_refused(&r, 125, "no command");
	thpctl(&r, NULL, "--policy", "huge", "--frobnicate", "--", "/usr/bin/touch", marker, NULL);
	expect_refused(&r, 125, "unknown option '--frobnicate'");
	thpctl(&r, NULL, "--policy", NULL);
	expect_refused(&r, 125, "needs an argument");
}
END_TEST

START_TEST(cmd_not_found_or_not_executable)
{
	static const char *const env[] = { "PATH=/usr/local/bin:/usr/bin:/bin", NULL };
	const struct spawn_opts path_env = { .env = env, .stdin_fd = -1, .stdout_fd = -1 };
	static struct run r;
	char path[] = "/tmp/thpctl-run-noexec.XXXXXX";
	int fd;

	marker_setup();
	thpctl(&r, NULL, "--policy", "huge", "--", "/nonexistent/thpctl-test-cmd", NULL);
	expect_refused(&r, 127, "cannot run '/nonexistent/thpctl-test-cmd'");
	/*
	 * A PATH of our own: execvp() reports EACCES, not ENOENT, when some
	 * directory of the caller's PATH is not searchable (root's PATH under
	 * su, on a build server).
	 */
	thpctl(&r, &path_env, "--policy", "system", "--", "thpctl-test-no-such-command", NULL);
	expect_refused(&r, 127, "No such file");

	fd = mkstemp(path);
	ck_assert(fd >= 0);
	ck_assert(write(fd, "#!/bin/sh\nexit 0\n", 17) == 17);
	close(fd);
	ck_assert(chmod(path, 0644) == 0);
	thpctl(&r, NULL, "--policy", "never", "--", path, NULL);
	unlink(path);
	expect_refused(&r, 126, "Permission denied");
}
END_TEST

/* An explicit THPCTL_PRELOAD that does not exist: 125, nothing run. */
START_TEST(missing_preload_fails)
{
	static struct run r;
	const char *env[] = { "THPCTL_PRELOAD=/nonexistent/libthp-preload.so", NULL };
	struct spawn_opts o = { .env = env, .stdin_fd = -1, .stdout_fd = -1 };

	marker_setup();
	thpctl(&r, &o, "--policy", "huge", "--", "/usr/bin/touch", marker, NULL);
	expect_refused(&r, 125, "/nonexistent/libthp-preload.so");
}
END_TEST

/* LD_PRELOAD / GLIBC_TUNABLES entries that are not ours survive, ours is not doubled. */
START_TEST(env_merge)
{
	static struct run r;
	char pre[PATH_MAX + 64], *real = realpath(env_path("THP_PRELOAD"), NULL);
	const char *env[] = { pre, "GLIBC_TUNABLES=glibc.malloc.check=0:glibc.malloc.hugetlb=0",
			      NULL };
	struct spawn_opts o = { .env = env, .stdin_fd = -1, .stdout_fd = -1 };
	char want[PATH_MAX + 64];

	ck_assert(real != NULL);
	/* Ours (given twice) plus one that does not exist: ld.so warns, runs on. */
	snprintf(pre, sizeof(pre), "LD_PRELOAD=%s /nonexistent/other.so:%s", real, real);
	probe_report(&r, &o, "huge", env_path("PRELOAD_PROBE"));
	snprintf(want, sizeof(want), "ld_preload=%s:/nonexistent/other.so", real);
	ck_assert_msg(field_is(r.out, want), "want %s in %s", want, r.out);
	ck_assert_msg(field_is(r.out, "tunables=glibc.malloc.check=0:glibc.malloc.hugetlb=1"),
		      "%s", r.out);

	probe_report(&r, &o, "nohuge", env_path("PRELOAD_PROBE"));
	ck_assert_msg(field_is(r.out, "ld_preload=/nonexistent/other.so"), "%s", r.out);
	/* A hugetlb value thpctl did not set is not thpctl's to remove. */
	ck_assert_msg(field_is(r.out, "tunables=glibc.malloc.check=0:glibc.malloc.hugetlb=0"),
		      "%s", r.out);
	ck_assert_msg(field_is(r.out, "mmap_hg=0") && field_is(r.out, "preload_mapped=0"), "%s",
		      r.out);
	free(real);
}
END_TEST

/* ------------------------------------------------------------------ */
/* Interposition, with LD_PRELOAD set by hand                          */

START_TEST(interposition)
{
	static struct run r;
	char pre[PATH_MAX + 16];
	const char *env[] = { pre, NULL };
	struct spawn_opts o = { .env = env, .stdin_fd = -1, .stdout_fd = -1 };
	char *argv[] = { (char *)env_path("PRELOAD_PROBE"), "interpose", NULL };

	require_madvise_mode();
	snprintf(pre, sizeof(pre), "LD_PRELOAD=%s", env_path("THP_PRELOAD"));
	run_cmd(&r, &o, argv);
	ck_assert_msg(r.status == 0 && strstr(r.out, "PASS"), "exit %d\n%s%s", r.status, r.out,
		      r.err);
}
END_TEST

/* ------------------------------------------------------------------ */
/* setuid: thpctl run grants nothing the kernel would not               */

static char suid_dir[PATH_MAX], suid_probe[PATH_MAX + 32];

static bool nosuid(const char *dir)
{
	struct statvfs s;

	return statvfs(dir, &s) != 0 || (s.f_flag & ST_NOSUID);
}

static void copy_file(const char *from, const char *to)
{
	char buf[65536];
	int in = open(from, O_RDONLY | O_CLOEXEC), out;
	ssize_t n;

	ck_assert_msg(in >= 0, "%s: %s", from, strerror(errno));
	out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0700);
	ck_assert_msg(out >= 0, "%s: %s", to, strerror(errno));
	while ((n = read(in, buf, sizeof(buf))) > 0)
		ck_assert(write(out, buf, (size_t)n) == n);
	ck_assert(n == 0);
	close(in);
	ck_assert(close(out) == 0);
}

static void suid_teardown(void);

static void suid_setup(void)
{
	const char *base = nosuid("/tmp") ? env_path("TEST_BUILD_DIR") : "/tmp";

	if (geteuid() != 0) {
		ck_assert_msg(!in_ci(), "the setuid test needs root (CI=true: no skipping)");
		return;
	}
	ck_assert_msg(!nosuid(base), "%s is mounted nosuid", base);
	snprintf(suid_dir, sizeof(suid_dir), "%s/thpctl-suid.XXXXXX", base);
	ck_assert(mkdtemp(suid_dir) != NULL);
	ck_assert(chmod(suid_dir, 0755) == 0);
	snprintf(suid_probe, sizeof(suid_probe), "%s/preload_probe", suid_dir);
	copy_file(env_path("PRELOAD_PROBE"), suid_probe);
	/* Executable by group nogroup only: nobody runs it, nobody else can. */
	if (chown(suid_probe, 0, NOBODY) || chmod(suid_probe, 04750)) {
		suid_teardown();
		ck_abort_msg("cannot make %s setuid root: %s", suid_probe, strerror(errno));
	}
}

static void suid_teardown(void)
{
	if (suid_probe[0])
		unlink(suid_probe);
	if (suid_dir[0])
		rmdir(suid_dir);
	suid_probe[0] = suid_dir[0] = 0;
}

START_TEST(setuid_child_gets_nothing_extra)
{
	static struct run ctl, huge, never;
	struct spawn_opts o = { .uid = NOBODY, .stdin_fd = -1, .stdout_fd = -1 };

	if (geteuid() != 0)
		return; /* suid_setup() failed in CI, else it is a skip */
	require_madvise_mode();

	/* Control: the same program without the setuid bit is given huge. */
	thpctl(&ctl, &o, "--policy", "huge", "--", env_path("PRELOAD_PROBE"), "report", NULL);
	/* setuid root, run by nobody: AT_SECURE, ld.so drops both. */
	thpctl(&huge, &o, "--policy", "huge", "--", suid_probe, "report", NULL);
	/* never only takes THP away (the kernel keeps the prctl across setuid exec). */
	thpctl(&never, &o, "--policy", "never", "--", suid_probe, "report", NULL);
	/* No setuid-root file may outlive a failed assertion (teardown would not run). */
	suid_teardown();

	ck_assert_msg(ctl.status == 0 && field_is(ctl.out, "secure=0") &&
			      field_is(ctl.out, "preload_mapped=1") && field_is(ctl.out, "mmap_hg=1") &&
			      field_is(ctl.out, "malloc_hg=1"),
		      "control run as nobody: exit %d %s%s", ctl.status, ctl.out, ctl.err);
	ck_assert_msg(huge.status == 0, "exit %d %s%s", huge.status, huge.out, huge.err);
	ck_assert_msg(field_is(huge.out, "secure=1") && field_is(huge.out, "ruid=65534") &&
			      field_is(huge.out, "euid=0"),
		      "not a secure-execution run: %s%s", huge.out, huge.err);
	ck_assert_msg(field_is(huge.out, "preload_mapped=0"),
		      "the preload was loaded into a setuid program: %s", huge.out);
	ck_assert_msg(field_is(huge.out, "mmap_hg=0") && field_is(huge.out, "malloc_hg=0"),
		      "a setuid program got huge advice from thpctl run: %s", huge.out);
	ck_assert_msg(never.status == 0 && field_is(never.out, "secure=1") &&
			      field_is(never.out, "thp_disable=1") &&
			      field_is(never.out, "thp_enabled=0") && field_is(never.out, "mmap_hg=0"),
		      "setuid program under never: exit %d %s%s", never.status, never.out, never.err);
}
END_TEST

static Suite *preload_suite(void)
{
	Suite *s = suite_create("preload");
	TCase *tc = tcase_create("workload");
	TCase *live = tcase_create("live");
	TCase *input = tcase_create("input");
	TCase *suid = tcase_create("setuid");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, huge_workload_and_grandchild);
	tcase_add_test(tc, never_workload);
	tcase_add_test(tc, never_inside_huge);
	tcase_add_test(tc, nohuge_workload);
	tcase_add_test(tc, system_workload);
	tcase_add_test(tc, huge_inside_never);
	tcase_add_test(tc, interposition);
	suite_add_tcase(s, tc);

	tcase_set_timeout(live, 60);
	tcase_add_test(live, huge_child_has_preload_env_and_default);
	tcase_add_test(live, never_inside_huge_child);
	tcase_add_test(live, self_default_under_preload);
	tcase_add_test(live, constructor_advises_existing);
	tcase_add_test(live, set_default_switches_preload);
	tcase_add_test(live, env_merge);
	suite_add_tcase(s, live);

	tcase_set_timeout(input, 60);
	tcase_add_test(input, require_persistent_huge_fails);
	tcase_add_test(input, require_persistent_never_runs);
	tcase_add_test(input, bad_input);
	tcase_add_test(input, cmd_not_found_or_not_executable);
	tcase_add_test(input, missing_preload_fails);
	suite_add_tcase(s, input);

	/* Makes a setuid-root file and drops to nobody. */
	tcase_set_tags(suid, PRIVILEGED_TAG);
	tcase_set_timeout(suid, 60);
	tcase_add_checked_fixture(suid, suid_setup, suid_teardown);
	tcase_add_test(suid, setuid_child_gets_nothing_extra);
	suite_add_tcase(s, suid);
	return s;
}

int main(void)
{
	return run_suite(preload_suite());
}
