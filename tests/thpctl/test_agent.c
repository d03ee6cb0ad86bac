// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The collapse pass at work on real programs: "thpctl run --policy huge"
 * with its agent over memory the preload cannot reach (glibc per-thread
 * arenas, a static binary, Go), "thpctl collapse" on running processes and
 * the coverage "thpctl status" shows.  Every effect is read from the
 * target's /proc/PID/smaps; contents are checksummed by the workloads.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <linux/capability.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"

/* A workload under thpctl: "ready PID BYTES SUM" on stdout, "sum"/"quit" on stdin. */
struct workload {
	pid_t thpctl;   /* what the test started */
	pid_t pid;      /* the workload itself (== thpctl when thpctl exec'd it) */
	int in;
	FILE *out;
	int err;
	char sum[32];
	uint64_t extra; /* churn_target: its stable region */
};

/* Start @argv as @uid (0: as the test) and read its "ready" line. */
static void workload_start_as(struct workload *w, char *const argv[], uid_t uid)
{
	struct spawn_opts o = { .uid = uid, .stdin_fd = -1, .stdout_fd = -1 };
	int pin[2], out, n;
	char line[256], second[64];

	memset(w, 0, sizeof(*w));
	ck_assert(pipe2(pin, O_CLOEXEC) == 0);
	o.stdin_fd = pin[0];
	w->thpctl = spawn(argv, &o, &out, &w->err);
	close(pin[0]);
	w->in = pin[1];
	w->out = fdopen(out, "r");
	ck_assert_ptr_nonnull(w->out);
	ck_assert_msg(fgets(line, sizeof(line), w->out) != NULL, "%s printed nothing", argv[0]);
	/* "ready PID BYTES SUM", or churn_target's "ready PID ADDRESS". */
	n = sscanf(line, "ready %d %63s %31s", &w->pid, second, w->sum);
	ck_assert_msg(n >= 2, "unexpected first line \"%s\"", line);
	if (n == 2)
		w->extra = strtoull(second, NULL, 16);
}

static void workload_start(struct workload *w, char *const argv[])
{
	workload_start_as(w, argv, 0);
}

static void workload_send(struct workload *w, const char *cmd)
{
	ck_assert_int_eq(write(w->in, cmd, strlen(cmd)), (ssize_t)strlen(cmd));
}

/* The workload's checksum now equals the one it printed at the start. */
static void assert_contents_unchanged(struct workload *w)
{
	char line[256], sum[32];

	workload_send(w, "sum\n");
	ck_assert(fgets(line, sizeof(line), w->out) != NULL);
	ck_assert_int_eq(sscanf(line, "sum %31s", sum), 1);
	ck_assert_msg(!strcmp(sum, w->sum), "contents changed: checksum %s, was %s", sum, w->sum);
}

/* Let the workload exit; thpctl's exit status, its stderr in @r. */
static int workload_stop(struct workload *w, struct run *r)
{
	int status;

	workload_send(w, "quit\n");
	close(w->in);
	collect(fileno(w->out), w->err, r);
	fclose(w->out);
	status = wait_status(w->thpctl);
	/* The agent reaps the whole tree before it exits: nothing is left. */
	ck_assert_msg(kill(w->pid, 0) == -1 && errno == ESRCH, "workload %d outlived thpctl",
		      (int)w->pid);
	return status;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/* Wait up to @secs for @percent of the alignable memory to be huge; the coverage then. */
static void wait_coverage(pid_t pid, unsigned int percent, int secs, struct anon_coverage *c)
{
	for (int i = 0; i <= secs * 4; i++) {
		anon_coverage(pid, c);
		if (c->alignable && c->huge * 100 >= c->alignable * percent)
			return;
		sleep_ms(250);
	}
}

static char *const *run_argv(const char *policy, const char *interval, const char *prog)
{
	static char *argv[16];
	int n = 0;

	argv[n++] = (char *)env_path("THPCTL");
	argv[n++] = "run";
	argv[n++] = "--policy";
	argv[n++] = (char *)policy;
	if (interval) {
		argv[n++] = "--collapse-interval";
		argv[n++] = (char *)interval;
	}
	argv[n++] = "--";
	argv[n++] = (char *)prog;
	argv[n] = NULL;
	return argv;
}

/*
 * Under "thpctl run --policy huge" with the default agent settings, 90% of
 * the 2 MiB-alignable anonymous memory is huge within 10 s of the workload
 * being ready, contents unchanged, thpctl the workload's parent until the
 * end and exiting with its status.
 */
static void huge_under_agent(const char *prog_env)
{
	struct anon_coverage c;
	struct workload w;
	struct run r;

	require_madvise_mode();
	workload_start(&w, run_argv("huge", NULL, env_path(prog_env)));
	ck_assert_msg(w.pid != w.thpctl, "thpctl exec'd the command: no agent");
	wait_coverage(w.pid, 90, 10, &c);
	ck_assert_msg(c.huge * 100 >= c.alignable * 90,
		      "%s: %llu of %llu kB alignable anonymous memory huge after 10 s (%llu kB "
		      "anonymous)%s", prog_env, (unsigned long long)(c.huge >> 10),
		      (unsigned long long)(c.alignable >> 10), (unsigned long long)(c.anon >> 10),
		      mode_note());
	ck_assert_uint_eq(c.nohuge_huge, 0);
	assert_contents_unchanged(&w);
	ck_assert_int_eq(workload_stop(&w, &r), 0);
	ck_assert_msg(r.err[0] == 0, "thpctl or workload wrote to stderr: %s", r.err);
}

START_TEST(agent_thread_arenas)
{
	huge_under_agent("ARENA_WORKLOAD");
}
END_TEST

START_TEST(agent_static)
{
	huge_under_agent("ARENA_WORKLOAD_STATIC");
}
END_TEST

START_TEST(agent_go)
{
	huge_under_agent("GO_WORKLOAD");
}
END_TEST

/* Without the agent the preload leaves the arenas alone: what the agent adds. */
START_TEST(agent_off_arenas_not_huge)
{
	struct anon_coverage c;
	struct workload w;
	struct run r;

	require_madvise_mode();
	workload_start(&w, run_argv("huge", "0", env_path("ARENA_WORKLOAD")));
	ck_assert_int_eq(w.pid, w.thpctl);
	sleep_ms(2000);
	anon_coverage(w.pid, &c);
	ck_assert_msg(c.huge * 10 < c.alignable, "%llu of %llu kB huge without the agent",
		      (unsigned long long)(c.huge >> 10), (unsigned long long)(c.alignable >> 10));
	ck_assert_int_eq(workload_stop(&w, &r), 0);
}
END_TEST

/* never / nohuge: thpctl execs the command (no agent) and nothing becomes huge. */
START_TEST(agent_not_for_never_nohuge)
{
	static const char *const policies[] = { "never", "nohuge", "system" };
	const char *policy = policies[_i];
	struct anon_coverage c;
	struct workload w;
	struct run r;

	require_madvise_mode();
	workload_start(&w, run_argv(policy, "0.1", env_path("ARENA_WORKLOAD")));
	ck_assert_msg(w.pid == w.thpctl, "%s: thpctl stayed as a parent", policy);
	sleep_ms(1500);
	anon_coverage(w.pid, &c);
	ck_assert_msg(c.huge == 0, "%s: %llu kB huge", policy, (unsigned long long)(c.huge >> 10));
	ck_assert_int_eq(workload_stop(&w, &r), 0);
}
END_TEST

/*
 * A nested "thpctl run --policy nohuge" inside a huge run is left alone by
 * the agent, also when the agent saw that process before it exec()ed into
 * the nested run (the shell waits first, then execs: the policy is read
 * again after exec).
 */
START_TEST(agent_skips_nested_nohuge)
{
	char script[1024];
	char *argv[] = { (char *)env_path("THPCTL"), "run", "--policy", "huge",
			 "--collapse-interval", "0.05", "--", "/bin/sh", "-c", script, NULL };
	struct anon_coverage c;
	struct workload w;
	struct run r;

	snprintf(script, sizeof(script), "sleep 0.5; exec %s run --policy nohuge -- %s",
		 env_path("THPCTL"), env_path("ARENA_WORKLOAD"));
	require_madvise_mode();
	workload_start(&w, argv);
	sleep_ms(2000);
	anon_coverage(w.pid, &c);
	ck_assert_msg(c.huge == 0, "nested nohuge run: %llu kB huge",
		      (unsigned long long)(c.huge >> 10));
	ck_assert_int_eq(workload_stop(&w, &r), 0);
}
END_TEST

/* The agent against a process that maps, grows, splits and unmaps all the time. */
START_TEST(agent_vs_churn)
{
	char *argv[] = { (char *)env_path("THPCTL"), "run", "--policy", "huge",
			 "--collapse-interval", "0.02", "--", (char *)env_path("CHURN_TARGET"),
			 NULL };
	struct workload w;
	struct run r;
	uint64_t huge = 0;

	require_madvise_mode();
	workload_start(&w, argv);
	for (int i = 0; i < 40 && huge < 30 * MiB; i++) {
		sleep_ms(100);
		huge = vma_anon_huge(w.pid, w.extra);
	}
	sleep_ms(1500); /* more churn under the agent */
	ck_assert_msg(huge >= 30 * MiB, "stable region: %llu kB huge",
		      (unsigned long long)(huge >> 10));
	ck_assert_int_eq(workload_stop(&w, &r), 0);
	ck_assert_msg(!strncmp(r.out, "ok ", 3), "churn_target said: %s", r.out);
	ck_assert_msg(r.err[0] == 0, "stderr: %s", r.err);
}
END_TEST

/* Exit status, signals and orphans: thpctl waits for the whole tree. */
START_TEST(agent_status_and_tree)
{
	char marker[] = "/tmp/thp-agent-orphan-XXXXXX";
	char script[256];
	char *argv[] = { (char *)env_path("THPCTL"), "run", "--policy", "huge", "--",
			 "/bin/sh", "-c", script, NULL };
	struct run r;
	struct stat st;
	int fd = mkstemp(marker);

	ck_assert_int_ge(fd, 0);
	close(fd);
	unlink(marker);
	/* The orphan outlives the command; thpctl returns only after it. */
	snprintf(script, sizeof(script), "(sleep 1; touch %s) >/dev/null 2>&1 & exit 7", marker);
	run_cmd(&r, NULL, argv);
	ck_assert_int_eq(r.status, 7);
	ck_assert_msg(stat(marker, &st) == 0, "thpctl returned before the orphan was done");
	unlink(marker);

	/* A signal sent to thpctl reaches the command; thpctl dies of it too. */
	{
		struct workload w;

		workload_start(&w, run_argv("huge", NULL, env_path("ARENA_WORKLOAD")));
		ck_assert_int_eq(kill(w.thpctl, SIGTERM), 0);
		collect(fileno(w.out), w.err, &r);
		fclose(w.out);
		close(w.in);
		ck_assert_int_eq(wait_status(w.thpctl), 128 + SIGTERM);
		ck_assert(kill(w.pid, 0) == -1 && errno == ESRCH);
	}
}
END_TEST

static void thpctl_cmd(struct run *r, const char *a1, const char *a2, const char *a3,
		       const char *a4, const char *a5)
{
	char *argv[] = { (char *)env_path("THPCTL"), (char *)a1, (char *)a2, (char *)a3,
			 (char *)a4, (char *)a5, NULL };

	run_cmd(r, NULL, argv);
}

/*
 * The words status must use for low coverage: "nothing is huge" while no
 * page is, else "low coverage".  glibc (malloc.hugetlb=1, which thpctl
 * sets beside the preload) grows the heap by 2 MiB and advises it huge
 * before malloc touches it, so a heap that happens to start 2 MiB-aligned
 * (1 start in 512) faults in one huge page by itself.
 */
static bool low_coverage_words(const char *out, uint64_t huge)
{
	if (!huge)
		return strstr(out, "policy: huge (intended: nothing is huge)") &&
		       strstr(out, "warning: the policy is huge, but none");
	return strstr(out, "policy: huge (intended: low coverage, see below)") &&
	       strstr(out, "warning: the policy is huge, but less than half");
}

/* status flags a huge policy with little or nothing huge; collapse fixes it; status agrees. */
START_TEST(status_coverage_and_collapse)
{
	char pid[16];
	struct anon_coverage c, c2;
	struct workload w;
	struct run r;

	require_madvise_mode();
	workload_start(&w, run_argv("huge", "0", env_path("ARENA_WORKLOAD")));
	snprintf(pid, sizeof(pid), "%d", (int)w.pid);
	anon_coverage(w.pid, &c);
	ck_assert_msg(c.huge * 10 < c.alignable, "already %llu kB huge",
		      (unsigned long long)(c.huge >> 10));

	thpctl_cmd(&r, "status", "-p", pid, NULL, NULL);
	anon_coverage(w.pid, &c2);
	ck_assert_int_eq(r.status, 0);
	/* Either state's words while khugepaged changed it during the read. */
	ck_assert_msg(low_coverage_words(r.out, c.huge) ||
			      (c2.huge != c.huge && low_coverage_words(r.out, c2.huge)),
		      "%llu kB huge, status text: %.1500s", (unsigned long long)(c.huge >> 10), r.out);
	ck_assert_msg(!strstr(r.out, "policy: huge\n"), "plain \"huge\" with low coverage");
	thpctl_cmd(&r, "status", "-p", pid, "--json", NULL);
	ck_assert_msg(strstr(r.out, "\"low\": true"), "status json: %.1500s", r.out);

	/* A little huge memory: the other words.  3: the kernel had no huge page at hand. */
	thpctl_cmd(&r, "collapse", "-p", pid, "--budget", "4M");
	ck_assert_msg(r.status == 0 || r.status == 3, "collapse --budget: %d %s", r.status, r.err);
	anon_coverage(w.pid, &c);
	if (c.huge && c.huge * 2 < c.alignable) {
		thpctl_cmd(&r, "status", "-p", pid, NULL, NULL);
		ck_assert_msg(low_coverage_words(r.out, c.huge), "%llu kB huge, status text: %.1500s",
			      (unsigned long long)(c.huge >> 10), r.out);
	}

	/*
	 * 3: the kernel refused some extents for now (EAGAIN/ENOMEM: no huge
	 * page at hand, when other tests use memory); a later pass retries them.
	 */
	for (int pass = 0; pass < 5; pass++) {
		thpctl_cmd(&r, "collapse", "-p", pid, "--time-budget", "60");
		ck_assert_msg(r.status == 0 || r.status == 3, "collapse: %d %s", r.status, r.err);
		ck_assert_msg(strstr(r.out, "collapsed "), "collapse said: %s", r.out);
		if (r.status == 0)
			break;
		ck_assert_msg(strstr(r.out, "refused: "), "status 3 without refusals: %s", r.out);
		sleep_ms(500);
	}
	anon_coverage(w.pid, &c);
	ck_assert_msg(c.huge * 100 >= c.alignable * 90, "%llu of %llu kB huge after collapse",
		      (unsigned long long)(c.huge >> 10), (unsigned long long)(c.alignable >> 10));
	assert_contents_unchanged(&w);

	thpctl_cmd(&r, "status", "-p", pid, NULL, NULL);
	ck_assert_msg(strstr(r.out, "policy: huge\n") && !strstr(r.out, "warning:"),
		      "status after collapse: %.1500s", r.out);
	/* A second pass finds nothing to do. */
	thpctl_cmd(&r, "collapse", "-p", pid, "--json", NULL);
	ck_assert_int_eq(r.status, 0);
	ck_assert_msg(strstr(r.out, "\"extents_collapsed\": 0") &&
			      strstr(r.out, "\"command\": \"collapse\""), "json: %.1500s", r.out);
	ck_assert_int_eq(workload_stop(&w, &r), 0);
}
END_TEST

/* Another user's process, or one's own without CAP_SYS_NICE: EPERM, said clearly. */
START_TEST(collapse_not_permitted)
{
	char *argv[] = { (char *)env_path("ARENA_WORKLOAD"), "-m", "8", NULL };
	struct anon_coverage c;
	struct workload w;
	char pid[16];
	char *cargv[] = { (char *)env_path("THPCTL"), "collapse", "-p", pid, NULL };
	struct run r;

	workload_start_as(&w, argv, 65534);
	snprintf(pid, sizeof(pid), "%d", (int)w.pid);
	for (uid_t uid = 65533; uid <= 65534; uid++) {
		struct spawn_opts co = { .uid = uid, .stdin_fd = -1, .stdout_fd = -1 };

		run_cmd(&r, &co, cargv);
		ck_assert_int_eq(r.status, 1);
		ck_assert_msg(strstr(r.err, "not permitted") && strstr(r.err, "CAP_SYS_NICE"),
			      "uid %d: %s", (int)uid, r.err);
	}
	anon_coverage(w.pid, &c);
	ck_assert_uint_eq(c.huge, 0);
	ck_assert_int_eq(workload_stop(&w, &r), 0);
}
END_TEST

/* Bad command lines: usage errors, nothing run or collapsed. */
START_TEST(bad_command_lines)
{
	static const char *const collapse_bad[][4] = {
		{ "collapse", NULL }, /* -p is required */
		{ "collapse", "-p", "0", NULL },
		{ "collapse", "-p", "1", "--interval" },
		{ "collapse", "-p", "1", "--interval=0.001" },
		{ "collapse", "-p", "1", "--min-present=513" },
		{ "collapse", "-p", "1", "--budget=12Q" },
		{ "collapse", "-p", "1", "extra" },
	};
	char *run_bad[] = { (char *)env_path("THPCTL"), "run", "--policy", "huge",
			    "--collapse-interval", "soon", "--", "/bin/true", NULL };
	struct run r;

	for (size_t i = 0; i < sizeof(collapse_bad) / sizeof(collapse_bad[0]); i++) {
		char *argv[6] = { (char *)env_path("THPCTL") };

		for (int k = 0; k < 4 && collapse_bad[i][k]; k++)
			argv[k + 1] = (char *)collapse_bad[i][k];
		run_cmd(&r, NULL, argv);
		ck_assert_msg(r.status == 2 && strstr(r.err, "collapse") && !r.out[0],
			      "case %zu: status %d, stderr %s", i, r.status, r.err);
	}
	run_cmd(&r, NULL, run_bad);
	ck_assert_int_eq(r.status, 125);
	ck_assert_msg(strstr(r.err, "--collapse-interval"), "%s", r.err);
}
END_TEST

/* Without CAP_SYS_NICE there is no agent: thpctl executes the command as before. */
START_TEST(no_agent_unprivileged)
{
	char *argv[] = { (char *)env_path("THPCTL"), "run", "--policy", "huge", "--",
			 (char *)env_path("ARENA_WORKLOAD"), "-m", "8", NULL };
	struct workload w;
	struct run r;

	workload_start_as(&w, argv, 65534);
	ck_assert_int_eq(w.pid, w.thpctl);
	ck_assert_int_eq(workload_stop(&w, &r), 0);
}
END_TEST


/* ---- The peer rule: which processes of the tree the agent acts on ---- */

/* AnonHugePages of /proc/PID/smaps_rollup, in kB. */
static unsigned long long rollup_huge_kb(pid_t pid)
{
	char path[64], line[256];
	unsigned long long kb = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", (int)pid);
	f = fopen(path, "re");
	ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "AnonHugePages: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/* A directory that set-user-ID bits and file capabilities work in, readable by all. */
static void make_exec_dir(char *dir, size_t len)
{
	const char *base = getenv("THP_TEST_SUID_DIR") ? getenv("THP_TEST_SUID_DIR") : "/tmp";
	struct statvfs v;

	ck_assert_int_eq(statvfs(base, &v), 0);
	ck_assert_msg(!(v.f_flag & ST_NOSUID), "%s is mounted nosuid: set THP_TEST_SUID_DIR", base);
	snprintf(dir, len, "%s/thp-peer-XXXXXX", base);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	ck_assert_int_eq(chmod(dir, 0755), 0);
}

/* Copy @src to @dir/@name, owned by root, with @mode. */
static void copy_exec(const char *src, const char *dir, const char *name, mode_t mode, char *dst,
		      size_t len)
{
	char buf[65536];
	int in = open(src, O_RDONLY | O_CLOEXEC), out;
	ssize_t n;

	snprintf(dst, len, "%s/%s", dir, name);
	out = open(dst, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0700);
	ck_assert_msg(in >= 0 && out >= 0, "copy %s: %s", src, strerror(errno));
	while ((n = read(in, buf, sizeof(buf))) > 0)
		ck_assert_int_eq(write(out, buf, (size_t)n), n);
	close(in);
	close(out);
	ck_assert_int_eq(chown(dst, 0, 0), 0);
	ck_assert_int_eq(chmod(dst, mode), 0);
}

/* CAP_SYS_NICE, permitted and effective, as a file capability on @path (setcap's format). */
static void give_cap_sys_nice(const char *path)
{
	struct vfs_cap_data d;

	memset(&d, 0, sizeof(d));
	d.magic_etc = VFS_CAP_REVISION_2 | VFS_CAP_FLAGS_EFFECTIVE;
	d.data[CAP_SYS_NICE / 32].permitted = 1u << (CAP_SYS_NICE % 32);
	ck_assert_msg(setxattr(path, "security.capability", &d, sizeof(d), 0) == 0,
		      "file capability on %s: %s", path, strerror(errno));
}

struct tree {
	pid_t thpctl;
	int in, out, err;
	FILE *lines;
	char name[8][32];
	pid_t pid[8];
	int n;
};

/* "thpctl run --policy huge" over /bin/sh -c @script as @uid; read @members ready lines. */
static void tree_start(struct tree *t, const char *thpctl, const char *script, uid_t uid,
		       int members)
{
	static char preload[4200];
	/* A copy of thpctl does not find the build tree's preload by its own path. */
	const char *const env[] = { "ASAN_OPTIONS=detect_leaks=0", preload, NULL };
	char *argv[] = { (char *)thpctl, "run", "--policy", "huge", "--collapse-interval", "0.1",
			 "--collapse-verbose", "--", "/bin/sh", "-c", (char *)script, NULL };
	struct spawn_opts o = { .uid = uid, .env = env, .stdin_fd = -1, .stdout_fd = -1 };
	int pin[2];
	char line[256];

	memset(t, 0, sizeof(*t));
	snprintf(preload, sizeof(preload), "THPCTL_PRELOAD=%s", env_path("THP_PRELOAD"));
	ck_assert(pipe2(pin, O_CLOEXEC) == 0);
	o.stdin_fd = pin[0];
	t->thpctl = spawn(argv, &o, &t->out, &t->err);
	close(pin[0]);
	t->in = pin[1];
	t->lines = fdopen(t->out, "r");
	ck_assert_ptr_nonnull(t->lines);
	for (t->n = 0; t->n < members; t->n++) {
		ck_assert_msg(fgets(line, sizeof(line), t->lines) != NULL,
			      "the tree printed %d of %d ready lines", t->n, members);
		ck_assert_msg(sscanf(line, "ready %d %31s", &t->pid[t->n], t->name[t->n]) == 2,
			      "unexpected line \"%s\"", line);
	}
}

static pid_t tree_pid(const struct tree *t, const char *name)
{
	for (int i = 0; i < t->n; i++)
		if (!strcmp(t->name[i], name))
			return t->pid[i];
	ck_abort_msg("no member %s", name);
	return -1;
}

/* End the tree: its stderr (the agent's verbose lines) in @r. */
static void tree_stop(struct tree *t, struct run *r)
{
	close(t->in);
	collect(fileno(t->lines), t->err, r);
	fclose(t->lines);
	ck_assert_int_eq(wait_status(t->thpctl), 0);
}

/*
 * The peer member becomes huge; each other one keeps 0 kB huge through
 * many passes after that, and the agent says once that it left it alone.
 */
static void assert_only_peer_collapsed(struct tree *t, const char *const *others, int n)
{
	pid_t peer = tree_pid(t, "peer");
	unsigned long long kb = 0;
	struct run r;

	for (int i = 0; i < 100 && kb < 60 * 1024; i++) {
		sleep_ms(100);
		kb = rollup_huge_kb(peer);
	}
	ck_assert_msg(kb >= 60 * 1024, "the peer member: %llu kB huge", kb);
	sleep_ms(1000); /* ten more passes */
	for (int i = 0; i < n; i++)
		ck_assert_msg(rollup_huge_kb(tree_pid(t, others[i])) == 0, "%s: %llu kB huge",
			      others[i], rollup_huge_kb(tree_pid(t, others[i])));
	tree_stop(t, &r);
	for (int i = 0; i < n; i++) {
		char said[64];

		snprintf(said, sizeof(said), "pid %d: left alone: ", (int)tree_pid(t, others[i]));
		ck_assert_msg(strstr(r.err, said), "%s: not said: %s", others[i], r.err);
	}
	ck_assert_msg(!strstr(r.err, "collapsed 0 extents"), "%s", r.err);
}

static const char *const non_peers[] = { "other-user", "setuid", "nondumpable" };

/* As root: another uid, a set-user-ID-root program run by another user, non-dumpable. */
START_TEST(agent_peers_only_root)
{
	char dir[256], suid[300], script[2048];
	const char *p = env_path("PEER_TARGET");
	struct tree t;

	require_madvise_mode();
	make_exec_dir(dir, sizeof(dir));
	copy_exec(p, dir, "peer_target_suid", 04755, suid, sizeof(suid));
	snprintf(script, sizeof(script),
		 /* sh gives background commands /dev/null as stdin otherwise. */
		 "exec 3<&0; %1$s --name peer <&3 &"
		 " %1$s --gid 65534 --uid 65534 --name other-user <&3 &"
		 " %1$s --gid 65534 --uid 65534 --exec %2$s --name setuid <&3 &"
		 " %1$s --dumpable 0 --name nondumpable <&3 &"
		 " wait", p, suid);
	tree_start(&t, env_path("THPCTL"), script, 0, 4);
	assert_only_peer_collapsed(&t, non_peers, 3);
	unlink(suid);
	rmdir(dir);
}
END_TEST

/* As a user whose thpctl has only CAP_SYS_NICE (a file capability on a copy). */
START_TEST(agent_peers_only_cap_sys_nice)
{
	char dir[256], suid[300], thpctl[300], script[2048];
	const char *p = env_path("PEER_TARGET");
	struct tree t;

	require_madvise_mode();
	make_exec_dir(dir, sizeof(dir));
	copy_exec(p, dir, "peer_target_suid", 04755, suid, sizeof(suid));
	copy_exec(env_path("THPCTL"), dir, "thpctl", 0755, thpctl, sizeof(thpctl));
	give_cap_sys_nice(thpctl);
	snprintf(script, sizeof(script),
		 /* sh gives background commands /dev/null as stdin otherwise. */
		 "exec 3<&0; %1$s --name peer <&3 &"
		 " %2$s --gid 65533 --uid 65533 --name other-user <&3 &"
		 " %2$s --name setuid <&3 &"
		 " %1$s --dumpable 0 --name nondumpable <&3 &"
		 " wait", p, suid);
	tree_start(&t, thpctl, script, 65534, 4);
	assert_only_peer_collapsed(&t, non_peers, 3);
	unlink(thpctl);
	unlink(suid);
	rmdir(dir);
}
END_TEST

/*
 * A member exits and a new one takes its PID between two passes: the new
 * process is judged by its own credentials, not by the old entry.
 */
START_TEST(agent_pid_reuse)
{
	static const char *const specs[] = { "other,peer", "peer,other" };
	char script[512];
	struct tree t;
	struct run r;
	pid_t first, second;
	unsigned long long kb = 0;

	require_madvise_mode();
	snprintf(script, sizeof(script), "exec %s --reuse %s", env_path("PEER_TARGET"),
		 specs[_i]);
	tree_start(&t, env_path("THPCTL"), script, 0, 2);
	first = tree_pid(&t, "first");
	second = tree_pid(&t, "second");
	ck_assert_int_eq(first, second);
	for (int i = 0; i < 50 && kb < 30 * 1024; i++) {
		sleep_ms(100);
		kb = rollup_huge_kb(second);
	}
	if (_i == 0)
		ck_assert_msg(kb >= 30 * 1024, "the new peer at PID %d: %llu kB huge", (int)second,
			      kb);
	else
		ck_assert_msg(kb == 0, "the new other user's process at PID %d: %llu kB huge",
			      (int)second, kb);
	tree_stop(&t, &r);
}
END_TEST

/* The library's side of the rule: thp_collapse() with the peer flags on processes of either kind. */
START_TEST(collapse_peer_only_flag)
{
	char *other_argv[] = { (char *)env_path("PEER_TARGET"), "--gid", "65534", "--uid", "65534",
			       "--mib", "8", NULL };
	char *peer_argv[] = { (char *)env_path("PEER_TARGET"), "--mib", "8", NULL };
	struct workload other, peer;
	struct thp_collapse_opts o;
	struct run r;
	int fd;

	workload_start(&other, other_argv);
	workload_start(&peer, peer_argv);
	fd = (int)syscall(SYS_pidfd_open, other.pid, 0);
	ck_assert_int_ge(fd, 0);
	/* Root may collapse it; as a peer it may not, and nothing is written. */
	memset(&o, 0xa5, sizeof(o));
	o.sz = sizeof(o);
	o.pidfd = fd;
	o.flags = THP_COLLAPSE_F_CHECK_ONLY;
	o.min_present_pages = 0;
	o.reserved0 = o.reserved1 = o.reserved2 = o.reserved3 = 0;
	o.max_shared_pages = 0;
	o.budget_bytes = o.budget_ns = 0;
	o.failures = NULL;
	o.failures_cap = 0;
	if (under_valgrind()) {
		/* No valgrind knows process_madvise(): the library sees a kernel without it. */
		ck_assert_int_eq(thp_collapse(&o), -EOPNOTSUPP);
		close(fd);
		ck_assert_int_eq(workload_stop(&other, &r), 0);
		ck_assert_int_eq(workload_stop(&peer, &r), 0);
		return;
	}
	ck_assert_int_eq(thp_collapse(&o), 0);
	ck_assert_uint_eq(o.extents_collapsed, 0xa5a5a5a5a5a5a5a5ULL);
	o.flags = THP_COLLAPSE_F_PEER_ONLY | THP_COLLAPSE_F_CHECK_ONLY;
	ck_assert_int_eq(thp_collapse(&o), -EPERM);
	ck_assert_msg(strstr(thp_strerror_detail(), "not the caller's peer"), "%s",
		      thp_strerror_detail());
	o.flags = THP_COLLAPSE_F_PEER_ONLY;
	ck_assert_int_eq(thp_collapse(&o), -EPERM);
	ck_assert_uint_eq(o.extents_collapsed, 0xa5a5a5a5a5a5a5a5ULL);
	ck_assert_uint_eq(rollup_huge_kb(other.pid), 0);
	o.flags = 1u << 2;
	ck_assert_int_eq(thp_collapse(&o), -EINVAL);
	close(fd);
	/* The same user, dumpable: a peer, collapsed. */
	fd = (int)syscall(SYS_pidfd_open, peer.pid, 0);
	ck_assert_int_ge(fd, 0);
	o.pidfd = fd;
	o.flags = THP_COLLAPSE_F_PEER_ONLY;
	ck_assert_int_ge(thp_collapse(&o), 0);
	ck_assert_uint_eq(o.anon_huge_after, (unsigned long long)rollup_huge_kb(peer.pid) << 10);
	close(fd);
	/* Its own process is every caller's peer. */
	o.pidfd = THP_SELF;
	o.flags = THP_COLLAPSE_F_PEER_ONLY | THP_COLLAPSE_F_CHECK_ONLY;
	ck_assert_int_eq(thp_collapse(&o), 0);
	ck_assert_int_eq(workload_stop(&other, &r), 0);
	ck_assert_int_eq(workload_stop(&peer, &r), 0);
}
END_TEST

/*
 * "thpctl collapse -p PID" with no budget finishes the job: 768 MiB of
 * touched memory at least 90% huge at exit 0, or exit 3 naming what the
 * kernel refused.
 */
START_TEST(collapse_finishes_by_default)
{
	char *argv[] = { (char *)env_path("PEER_TARGET"), "--mib", "768", NULL };
	char pid[16];
	char *cargv[] = { (char *)env_path("THPCTL"), "collapse", "-p", pid, NULL };
	struct workload w;
	struct run r;
	unsigned long long kb;

	require_madvise_mode();
	workload_start(&w, argv);
	snprintf(pid, sizeof(pid), "%d", (int)w.pid);
	ck_assert_uint_eq(rollup_huge_kb(w.pid), 0);
	run_cmd(&r, NULL, cargv);
	kb = rollup_huge_kb(w.pid);
	ck_assert_msg(r.status == 0 || (r.status == 3 && strstr(r.out, "refused: ")),
		      "status %d: %s %s", r.status, r.out, r.err);
	ck_assert_msg(r.status != 0 || kb * 10 >= 768 * 1024 * 9, "%llu kB huge at exit 0: %s",
		      kb, r.out);
	ck_assert_msg(strstr(r.out, "0 over budget"), "%s", r.out);
	ck_assert_int_eq(workload_stop(&w, &r), 0);
}
END_TEST

static Suite *agent_suite(void)
{
	Suite *s = suite_create("agent");
	TCase *tc = tcase_create("agent");

	tcase_set_tags(tc, PRIVILEGED_TAG);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, agent_thread_arenas);
	if (getenv("ARENA_WORKLOAD_STATIC"))
		tcase_add_test(tc, agent_static);
	if (getenv("GO_WORKLOAD"))
		tcase_add_test(tc, agent_go);
	tcase_add_test(tc, agent_off_arenas_not_huge);
	tcase_add_loop_test(tc, agent_not_for_never_nohuge, 0, 3);
	tcase_add_test(tc, agent_skips_nested_nohuge);
	tcase_add_test(tc, agent_vs_churn);
	tcase_add_test(tc, agent_status_and_tree);
	tcase_add_test(tc, status_coverage_and_collapse);
	tcase_add_test(tc, collapse_not_permitted);
	tcase_add_test(tc, bad_command_lines);
	tcase_add_test(tc, no_agent_unprivileged);
	tcase_add_test(tc, agent_peers_only_root);
	tcase_add_test(tc, agent_peers_only_cap_sys_nice);
	tcase_add_loop_test(tc, agent_pid_reuse, 0, 2);
	tcase_add_test(tc, collapse_peer_only_flag);
	tcase_add_test(tc, collapse_finishes_by_default);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(agent_suite());
}
