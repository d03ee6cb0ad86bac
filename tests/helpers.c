// SPDX-License-Identifier: LGPL-2.1-or-later
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "helpers.h"

#include <check.h>
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include "compat.h" /* PROCMAP_QUERY, PAGEMAP_SCAN */

static bool parse_header(const char *line, uint64_t *start, uint64_t *end,
			 char perms[8])
{
	unsigned long long s, e;
	char p[8] = "";
	int n = 0;

	if (sscanf(line, "%llx-%llx %4s %n", &s, &e, p, &n) < 3 || n == 0)
		return false;
	*start = s;
	*end = e;
	memcpy(perms, p, sizeof(p));
	return true;
}

/* An smaps line that starts a mapping ("start-end perms ..."), not a field. */
static bool is_header(const char *line, uint64_t *start, uint64_t *end, char perms[8])
{
	return parse_header(line, start, end, perms) && strchr(line, ':') != NULL &&
	       strchr(line, '-') < strchr(line, ' ');
}

static bool has_flag(const char *vmflags, const char *flag)
{
	const char *p = vmflags;
	size_t fl = strlen(flag);

	while (*p) {
		while (*p == ' ')
			p++;
		if (!strncmp(p, flag, fl) && (p[fl] == ' ' || p[fl] == '\0' || p[fl] == '\n'))
			return true;
		while (*p && *p != ' ')
			p++;
	}
	return false;
}

int smaps_lookup(pid_t pid, uint64_t addr, struct smaps_info *out)
{
	char path[64], line[1024];
	FILE *f;
	bool in = false;

	memset(out, 0, sizeof(*out));
	out->thp_eligible = -1;
	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/smaps", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/smaps");
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		uint64_t s, e;
		char perms[8];
		unsigned long long v;

		if (is_header(line, &s, &e, perms)) {
			if (in)
				break; /* past the one we wanted */
			if (addr >= s && addr < e) {
				in = true;
				out->found = true;
				out->start = s;
				out->end = e;
				memcpy(out->perms, perms, sizeof(perms));
			}
			continue;
		}
		if (!in)
			continue;
		if (sscanf(line, "AnonHugePages: %llu kB", &v) == 1)
			out->anon_huge = v * KiB;
		else if (sscanf(line, "Rss: %llu kB", &v) == 1)
			out->rss = v * KiB;
		else if (sscanf(line, "THPeligible: %llu", &v) == 1)
			out->thp_eligible = (int)v;
		else if (!strncmp(line, "VmFlags:", 8)) {
			size_t n = strcspn(line + 8, "\n");

			if (n >= sizeof(out->vmflags))
				n = sizeof(out->vmflags) - 1;
			memcpy(out->vmflags, line + 8, n);
			out->vmflags[n] = '\0';
			out->hg = has_flag(out->vmflags, "hg");
			out->nh = has_flag(out->vmflags, "nh");
		}
	}
	fclose(f);
	return 0;
}

void smaps_count(pid_t pid, uint64_t lo, uint64_t hi, bool vsyscall, struct vma_counts *c)
{
	char path[64], line[4096];
	bool in = false;
	FILE *f;

	memset(c, 0, sizeof(*c));
	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/smaps", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/smaps");
	f = fopen(path, "re");
	ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		uint64_t s, e;
		char perms[8];

		if (is_header(line, &s, &e, perms)) {
			in = s >= lo && e <= hi && (vsyscall || !strstr(line, "[vsyscall]"));
			c->vmas += in;
		} else if (in && !strncmp(line, "VmFlags:", 8)) {
			c->hg += has_flag(line + 8, "hg");
			c->nh += has_flag(line + 8, "nh");
		}
	}
	fclose(f);
}

static void must_lookup(pid_t pid, uint64_t addr, struct smaps_info *si)
{
	int ret = smaps_lookup(pid, addr, si);

	ck_assert_msg(ret == 0, "cannot read smaps of pid %d: %s", (int)pid, strerror(-ret));
}

void assert_vma_unadvised(pid_t pid, uint64_t addr, const char *what)
{
	struct smaps_info si;

	must_lookup(pid, addr, &si);
	ck_assert_msg(si.found, "%s: 0x%llx unmapped", what, (unsigned long long)addr);
	ck_assert_msg(!si.hg && !si.nh, "%s: VmFlags at 0x%llx changed:%s", what,
		      (unsigned long long)addr, si.vmflags);
}

bool vma_hg(pid_t pid, uint64_t addr)
{
	struct smaps_info si;

	must_lookup(pid, addr, &si);
	return si.found && si.hg;
}

bool vma_nh(pid_t pid, uint64_t addr)
{
	struct smaps_info si;

	must_lookup(pid, addr, &si);
	return si.found && si.nh;
}

bool vma_mapped(pid_t pid, uint64_t addr)
{
	struct smaps_info si;

	must_lookup(pid, addr, &si);
	return si.found;
}

uint64_t vma_anon_huge(pid_t pid, uint64_t addr)
{
	struct smaps_info si;

	must_lookup(pid, addr, &si);
	return si.found ? si.anon_huge : 0;
}

uint64_t range_anon_huge(pid_t pid, uint64_t addr, uint64_t len)
{
	uint64_t total = 0, a = addr;

	while (a < addr + len) {
		struct smaps_info si;

		must_lookup(pid, a, &si);
		if (!si.found) {
			a += 4096;
			continue;
		}
		total += si.anon_huge;
		a = si.end;
	}
	return total;
}

void *map_aligned(size_t mib, int flags)
{
	size_t len = mib * MiB, extra = 4 * MiB;
	char *p, *a;

	p = mmap(NULL, len + extra, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
	ck_assert_msg(p != MAP_FAILED, "mmap %zu MiB: %s", mib, strerror(errno));
	a = (char *)(uintptr_t)(((uintptr_t)p + PMD_SZ + PMD_SZ - 1) & ~(uintptr_t)(PMD_SZ - 1));
	/* Leave at least one unmapped page on each side. */
	if (a - p < 4096)
		a += PMD_SZ;
	ck_assert(a + len <= p + len + extra);
	if (a > p)
		ck_assert(munmap(p, (size_t)(a - p)) == 0);
	if (p + len + extra > a + len)
		ck_assert(munmap(a + len, (size_t)(p + len + extra - (a + len))) == 0);
	return a;
}

void touch_range(void *p, size_t len)
{
	volatile char *c = p;

	for (size_t off = 0; off < len; off += 4096)
		c[off] = (char)(1 + (off >> 12));
}

bool in_ci(void)
{
	const char *ci = getenv("CI");

	return ci && !strcmp(ci, "true");
}

bool page_frames_readable(void)
{
	char buf[4096];
	const char *p;

	if (geteuid() != 0 || read_file("/proc/self/status", buf, sizeof(buf)) <= 0)
		return false;
	p = strstr(buf, "\nCapEff:");
	return p && (strtoull(p + 8, NULL, 16) >> 21 & 1);
}

unsigned int sysfs_thp_mode(void)
{
	char buf[128];
	FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "re");
	unsigned int mode = 3;

	if (!f)
		return 3;
	if (fgets(buf, sizeof(buf), f)) {
		if (strstr(buf, "[always]"))
			mode = 0;
		else if (strstr(buf, "[madvise]"))
			mode = 1;
		else if (strstr(buf, "[never]"))
			mode = 2;
	}
	fclose(f);
	return mode;
}

bool sysfs_bracketed(const char *path, char *word, size_t len)
{
	char buf[256];
	char *open, *close;

	if (read_file(path, buf, sizeof(buf)) < 0)
		return false;
	open = strchr(buf, '[');
	close = open ? strchr(open, ']') : NULL;
	if (!close || (size_t)(close - open) > len)
		return false;
	memcpy(word, open + 1, (size_t)(close - open - 1));
	word[close - open - 1] = 0;
	return true;
}

void must_madvise(void *p, size_t len, int advice)
{
	ck_assert_msg(madvise(p, len, advice) == 0, "madvise(%p, %zu, %d): %s", p, len,
		      advice, strerror(errno));
}

/*
 * MADV_COLLAPSE as a test's setup: EAGAIN is the kernel's "no huge page
 * or a busy page right now" (seen once in CI after hours of load), so it
 * is asked again, up to 10 times over about a second; any other error,
 * or EAGAIN every time, fails the test.
 */
void must_collapse(void *p, size_t len)
{
	int r = -1, err = 0;

	for (int i = 0; i < 10; i++) {
		r = madvise(p, len, 25 /* MADV_COLLAPSE */);
		err = errno;
		if (r == 0 || err != EAGAIN)
			break;
		usleep(100000);
	}
	ck_assert_msg(r == 0, "MADV_COLLAPSE(%p, %zu): %s", p, len, strerror(err));
}

static const char *const mode_names[] = { "always", "madvise", "never", "unknown" };

void require_madvise_mode(void)
{
	unsigned int m = sysfs_thp_mode();

	ck_assert_msg(m == 1, "THP sysfs mode is \"%s\": these tests expect \"madvise\"",
		      mode_names[m]);
}

const char *mode_note(void)
{
	static char buf[128];
	unsigned int m = sysfs_thp_mode();

	if (m == 1)
		return "";
	snprintf(buf, sizeof(buf), " [THP sysfs mode is now \"%s\", not \"madvise\": "
		 "changed during the test?]", mode_names[m]);
	return buf;
}

/*
 * libthp reads descriptor 0 as THP_SELF.  Started with stdin (or 1, 2)
 * closed, a test would get 0 from its first pidfd_open() and aim a "remote"
 * call at itself: keep 0..2 open on /dev/null before main().
 */
__attribute__((constructor)) static void keep_std_fds_open(void)
{
	for (int fd = 0; fd < 3; fd++)
		if (fcntl(fd, F_GETFD) < 0 && open("/dev/null", O_RDWR) != fd)
			abort();
}

/* Why this run's environment does not fit its tests, or NULL. */
static const char *unfit_environment(void)
{
	static char why[160];
	const char *priv = getenv("THP_TEST_PRIVILEGED");
	const char *any_mode = getenv("THP_TEST_ANY_MODE");
	unsigned int m;

	if (priv && !strcmp(priv, "1") && geteuid() != 0)
		return "these test cases need root (CAP_SYS_NICE for another process, uid "
		       "changes, mount namespaces or the THP sysfs file)";
	if (any_mode && !strcmp(any_mode, "1"))
		return NULL;
	m = sysfs_thp_mode();
	if (m == 1)
		return NULL;
	snprintf(why, sizeof(why), "the global THP mode is \"%s\"; these tests check what "
		 "is huge and what is not under \"madvise\"", mode_names[m]);
	return why;
}

int run_suite(Suite *s)
{
	SRunner *sr;
	const char *why = unfit_environment();
	int failed;

	if (why && !in_ci()) {
		printf("SKIP: %s\n", why);
		srunner_free(srunner_create(s)); /* frees @s */
		return 77;
	}
	if (why)
		fprintf(stderr, "CI=true, so running although %s\n", why);
	sr = srunner_create(s);

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	/* A CK_RUN_CASE that matches nothing must not pass (run_tcase_natively). */
	if (getenv("CK_RUN_CASE") && srunner_ntests_run(sr) == 0) {
		fprintf(stderr, "CK_RUN_CASE=%s matched no test case\n", getenv("CK_RUN_CASE"));
		failed = 1;
	}
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

bool under_valgrind(void)
{
	const char *v = getenv("THP_TEST_UNDER_VALGRIND");

	return v && !strcmp(v, "1");
}

bool expect_process_madvise(void)
{
	return !under_valgrind();
}

bool expect_pidfd_self(void)
{
	return !under_valgrind();
}

void assert_refused_no_process_madvise(int ret, const char *what)
{
	int e = errno;
	const char *d = thp_strerror_detail();

	ck_assert_msg(ret == -EOPNOTSUPP, "%s: returned %d (%s), expected -EOPNOTSUPP on a "
		      "kernel without process_madvise()", what, ret, thp_strerror(ret));
	ck_assert_msg(e == EOPNOTSUPP, "%s: errno %d, expected EOPNOTSUPP", what, e);
	ck_assert_msg(!strcmp(d, DETAIL_NO_PROCESS_MADVISE), "%s: detail \"%s\", expected \"%s\"",
		      what, d, DETAIL_NO_PROCESS_MADVISE);
}

void check_ranges_refused(const struct thp_range *r, size_t n, struct thp_apply_opts *o,
			  const char *what)
{
	int ret;

	ck_assert(n <= 2 && o->reports);
	memset(o->reports, 0xa5, n * sizeof(*o->reports));
	o->backend_used = 0xdead;
	errno = 0;
	ret = thp_apply_ranges(r, n, o);
	assert_refused_no_process_madvise(ret, what);
	/* A refusal writes every report: the range named, not attempted, the
	 * call's errno, no backend (thp_apply_ranges(3)). */
	for (size_t i = 0; i < n; i++) {
		const struct thp_report *rep = &o->reports[i];
		uint64_t len = (r[i].len + (uint64_t)sysconf(_SC_PAGESIZE) - 1) &
			       ~((uint64_t)sysconf(_SC_PAGESIZE) - 1);

		ck_assert_msg(rep->addr == r[i].addr && rep->len == len && !rep->attempted &&
			      rep->error == EOPNOTSUPP && rep->backend == 0 &&
			      rep->bytes_advised == 0 && rep->bytes_unmapped == 0 &&
			      rep->fail_addr == 0 && rep->reserved0 == 0 && rep->reserved[0] == 0 &&
			      rep->reserved[1] == 0,
			      "%s: report %zu of a refused call: addr 0x%llx len 0x%llx attempted %u "
			      "error %d backend %u advised %llu", what, i,
			      (unsigned long long)rep->addr, (unsigned long long)rep->len,
			      rep->attempted, rep->error, rep->backend,
			      (unsigned long long)rep->bytes_advised);
	}
	ck_assert_msg(o->backend_used == 0, "%s: a refused call set backend_used %u", what,
		      o->backend_used);
}

void check_all_refused(struct thp_apply_all_opts *o, const char *what)
{
	int ret;

	o->backend_used = 0xdead;
	errno = 0;
	ret = thp_apply_all(o);
	assert_refused_no_process_madvise(ret, what);
	ck_assert_msg(o->mappings_seen == 0 && o->mappings_advised == 0 &&
		      o->mappings_skipped == 0 && o->bytes_advised == 0 &&
		      o->failures_needed == 0 && o->backend_used == 0,
		      "%s: a refused call wrote results: seen %llu advised %llu bytes %llu "
		      "backend_used %u", what, (unsigned long long)o->mappings_seen,
		      (unsigned long long)o->mappings_advised,
		      (unsigned long long)o->bytes_advised, o->backend_used);
}

uint32_t expected_self_backend(void)
{
	/* No RFC kernel here: process_madvise() when there is one, else the loop. */
	return expect_process_madvise() ? THP_BACKEND_PROCESS_MADVISE : THP_BACKEND_MADVISE;
}

unsigned int scaled(unsigned int native, unsigned int min)
{
	unsigned int n = native / 10;

	if (!under_valgrind())
		return native;
	return n < min ? min : n;
}

void run_tcase_natively(const char *tcase)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	int st;
	pid_t pid;

	ck_assert_msg(n > 0, "readlink /proc/self/exe: %s", strerror(errno));
	exe[n] = '\0';
	fflush(NULL);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		/* Check runs only this case; the child asserts the native way. */
		if (setenv("CK_RUN_CASE", tcase, 1) || unsetenv("THP_TEST_UNDER_VALGRIND"))
			_exit(126);
		execl(exe, exe, (char *)NULL);
		_exit(127);
	}
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		      "native run of test case \"%s\" (%s) failed: status 0x%x (its output is above)",
		      tcase, exe, st);
}

/* ---- seccomp ---- */

#if defined(__x86_64__)
#define TEST_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define TEST_AUDIT_ARCH AUDIT_ARCH_AARCH64
#elif defined(__i386__)
#define TEST_AUDIT_ARCH AUDIT_ARCH_I386
#elif defined(__arm__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define TEST_AUDIT_ARCH AUDIT_ARCH_ARM
#elif defined(__riscv) && __riscv_xlen == 64
#define TEST_AUDIT_ARCH AUDIT_ARCH_RISCV64
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define TEST_AUDIT_ARCH AUDIT_ARCH_PPC64LE
#elif defined(__s390x__)
#define TEST_AUDIT_ARCH AUDIT_ARCH_S390X
#else
#error "add this architecture's AUDIT_ARCH_*"
#endif

/* The low 32 bits of args[i]. */
static uint32_t arg_lo(int i)
{
	size_t off = offsetof(struct seccomp_data, args) + (size_t)i * sizeof(uint64_t);

	return (uint32_t)(off + (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ ? 0 : 4));
}

#define MAX_RULES 8

int seccomp_install(const struct seccomp_rule *rules, size_t n)
{
	struct sock_filter f[3 + 5 * MAX_RULES + 1];
	struct sock_fprog prog = { .filter = f };
	size_t k = 0;

	if (n > MAX_RULES) {
		errno = E2BIG;
		return -1;
	}
	f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
					      offsetof(struct seccomp_data, arch));
	f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, TEST_AUDIT_ARCH, 1, 0);
	f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	for (size_t i = 0; i < n; i++) {
		bool by_arg = rules[i].arg >= 0;

		f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
						      offsetof(struct seccomp_data, nr));
		/* Not this call: skip to the next rule. */
		f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
						      (uint32_t)rules[i].nr, 0, by_arg ? 3 : 1);
		if (by_arg) {
			f[k++] = (struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
							      arg_lo(rules[i].arg));
			f[k++] = (struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
							      rules[i].val, 0, 1);
		}
		f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, rules[i].action);
	}
	f[k++] = (struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	prog.len = (unsigned short)k;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	/* prctl(), not seccomp(2): valgrind passes this one to the kernel. */
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
}

int fail_procmap_query(int err)
{
	const struct seccomp_rule rule = {
		.nr = __NR_ioctl, .arg = 1, .val = (uint32_t)PROCMAP_QUERY,
		.action = SECCOMP_RET_ERRNO | (uint32_t)err,
	};

	return seccomp_install(&rule, 1);
}

int fail_pagemap_scan(void)
{
	const struct seccomp_rule rule = {
		.nr = __NR_ioctl, .arg = 1, .val = (uint32_t)PAGEMAP_SCAN,
		.action = SECCOMP_RET_ERRNO | ENOTTY,
	};

	return seccomp_install(&rule, 1);
}

int force_text_walk(void)
{
	return fail_procmap_query(ENOTTY);
}

/* Before the first libthp call of the process, as on an old kernel. */
__attribute__((constructor)) static void text_walk_from_env(void)
{
	const char *v = getenv("THP_TEST_TEXT_WALK");

	if (v && !strcmp(v, "1") && force_text_walk()) {
		fprintf(stderr, "THP_TEST_TEXT_WALK: cannot install the filter: %s\n",
			strerror(errno));
		_exit(99);
	}
}

/* ---- Running a program and collecting what it printed ---- */

const char *env_path(const char *name)
{
	const char *v = getenv(name);

	ck_assert_msg(v && *v, "%s is not set (run through meson test)", name);
	return v;
}

static void child_setup(const struct spawn_opts *o)
{
	int null = open("/dev/null", O_RDONLY);

	dup2(o->stdin_fd >= 0 ? o->stdin_fd : null, 0);
	/* A clean start: no preload or tunables from the test's own environment. */
	unsetenv("LD_PRELOAD");
	unsetenv("GLIBC_TUNABLES");
	unsetenv("THPCTL_PRELOAD");
	for (const char *const *e = o->env; e && *e; e++) {
		const char *eq = strchr(*e, '=');

		if (eq) {
			char name[128];

			snprintf(name, sizeof(name), "%.*s", (int)(eq - *e), *e);
			setenv(name, eq + 1, 1);
		} else {
			unsetenv(*e);
		}
	}
	if (o->uid && (setgroups(0, NULL) || setgid(o->uid) || setuid(o->uid))) {
		perror("test: drop privileges");
		_exit(99);
	}
}

void collect(int out_fd, int err_fd, struct run *r)
{
	struct pollfd p[2] = { { .fd = out_fd, .events = POLLIN }, { .fd = err_fd, .events = POLLIN } };
	size_t lens[2] = { 0, 0 };
	char *bufs[2] = { r->out, r->err };
	size_t caps[2] = { sizeof(r->out) - 1, sizeof(r->err) - 1 };
	int open_fds = (out_fd >= 0) + 1;

	if (out_fd < 0)
		p[0].fd = -1;
	while (open_fds > 0 && poll(p, 2, 60000) > 0) {
		for (int i = 0; i < 2; i++) {
			char tmp[4096];
			ssize_t n;

			if (p[i].fd < 0 || !p[i].revents)
				continue;
			n = read(p[i].fd, tmp, sizeof(tmp));
			if (n <= 0) {
				p[i].fd = -1;
				open_fds--;
				continue;
			}
			if ((size_t)n > caps[i] - lens[i])
				n = (ssize_t)(caps[i] - lens[i]);
			memcpy(bufs[i] + lens[i], tmp, (size_t)n);
			lens[i] += (size_t)n;
		}
	}
	r->out[lens[0]] = 0;
	r->err[lens[1]] = 0;
}

int wait_status(pid_t pid)
{
	int st;

	while (waitpid(pid, &st, 0) < 0)
		ck_assert_int_eq(errno, EINTR);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

pid_t spawn(char *const argv[], const struct spawn_opts *o, int *out, int *err)
{
	int po[2] = { -1, -1 }, pe[2];
	pid_t pid;

	ck_assert(pipe2(pe, O_CLOEXEC) == 0);
	if (o->stdout_fd < 0)
		ck_assert(pipe2(po, O_CLOEXEC) == 0);
	pid = fork();
	ck_assert(pid >= 0);
	if (pid == 0) {
		dup2(o->stdout_fd >= 0 ? o->stdout_fd : po[1], 1);
		dup2(pe[1], 2);
		child_setup(o);
		execv(argv[0], argv);
		perror("test: exec");
		_exit(98);
	}
	close(pe[1]);
	if (po[1] >= 0)
		close(po[1]);
	*out = po[0];
	*err = pe[0];
	return pid;
}

void run_cmd(struct run *r, const struct spawn_opts *o, char *const argv[])
{
	struct spawn_opts def = { .stdin_fd = -1, .stdout_fd = -1 };
	int out, err;
	pid_t pid = spawn(argv, o ? o : &def, &out, &err);

	collect(out, err, r);
	if (out >= 0)
		close(out);
	close(err);
	r->status = wait_status(pid);
}

/* ---- A process whose maps line is longer than libthp's line buffer ---- */

/* The whole of /proc/self/maps into a malloc()ed string; NULL on failure. */
static char *read_own_maps(void)
{
	size_t cap = 1 << 20, len = 0;
	char *buf = malloc(cap + 1);
	int fd = open("/proc/self/maps", O_RDONLY);
	ssize_t n;

	if (!buf || fd < 0) {
		free(buf);
		return NULL;
	}
	while (len < cap && (n = read(fd, buf + len, cap - len)) > 0)
		len += (size_t)n;
	close(fd);
	buf[len] = 0;
	return buf;
}

/* The maps line of the mapping at @addr in @maps (cut at its newline), or NULL. */
static char *maps_line_at(char *maps, uint64_t addr)
{
	char key[32];
	char *line;

	snprintf(key, sizeof(key), "%llx-", (unsigned long long)addr);
	for (line = maps; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
		if (!strncmp(line, key, strlen(key))) {
			char *nl = strchr(line, '\n');

			if (nl)
				*nl = 0;
			return line;
		}
	}
	return NULL;
}

/*
 * In the child: a directory chain under /tmp, a file in it, its mapping,
 * and the file renamed so that its maps line holds LONG_NAME_FORGED_LINE
 * from byte LONG_NAME_CUT on.  The files are removed again (the mapping
 * keeps the name, " (deleted)" added).  Returns the mapping, or NULL.
 */
static void *build_long_name_mapping(void)
{
	/* First component: what a terminal must not get raw (ESC, BEL, DEL, C1 CSI, bad UTF-8). */
	static const char first[] = "esc\x1b]0;owned\x07 del\x7f csi\xc2\x9b bad\xff\xfe";
	char base[] = "/tmp/thp-longname-XXXXXX";
	char comp[241], fill[241], name[256];
	const char *names[64];
	int fds[64], nfds = 0, fd;
	size_t off, est;
	char *maps, *line;
	void *p = NULL;

	if (!mkdtemp(base) || (fds[nfds++] = open(base, O_DIRECTORY)) < 0)
		return NULL;
	/* Newlines are shown as "\012": 120 of them make 240 bytes 600 in the line. */
	for (size_t i = 0; i < 240; i += 2)
		memcpy(comp + i, "d\n", 2);
	comp[240] = 0;
	/*
	 * The line up to the file name: ~75 bytes of range, flags and inode,
	 * then the path.  Get within ~120 bytes of the cut with @comp and
	 * plain @fill components; the file name makes up the rest exactly.
	 */
	est = 80 + strlen(base);
	while (est + 1 + 120 < LONG_NAME_CUT && nfds < 63) {
		size_t room = LONG_NAME_CUT - 120 - est - 1;
		const char *n = nfds == 1 ? first : room >= 600 ? comp : fill;

		if (n == fill) {
			room = room < 240 ? room : 240;
			memset(fill, 'y', room);
			fill[room] = 0;
		}
		if (!room || mkdirat(fds[nfds - 1], n, 0700) ||
		    (fds[nfds] = openat(fds[nfds - 1], n, O_DIRECTORY)) < 0)
			goto out;
		names[nfds - 1] = n == fill ? strdup(fill) : n;
		nfds++;
		est += 1 + (n == comp ? 600 : strlen(n));
	}
	fd = openat(fds[nfds - 1], "f", O_CREAT | O_RDWR, 0600);
	if (fd < 0)
		goto out;
	p = ftruncate(fd, 4096) ? MAP_FAILED : mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		p = NULL;
		goto out;
	}
	/* Where the file name starts in the line fixes the filler before the forgery. */
	maps = read_own_maps();
	line = maps ? maps_line_at(maps, (uintptr_t)p) : NULL;
	off = line && strlen(line) >= 2 && !strcmp(line + strlen(line) - 2, "/f")
		      ? strlen(line) - 1 : SIZE_MAX;
	free(maps);
	if (off > LONG_NAME_CUT || LONG_NAME_CUT - off + strlen(LONG_NAME_FORGED_LINE) >= 256) {
		p = NULL;
		goto out;
	}
	memset(name, 'x', LONG_NAME_CUT - off);
	snprintf(name + (LONG_NAME_CUT - off), sizeof(name) - (LONG_NAME_CUT - off), "%s",
		 LONG_NAME_FORGED_LINE);
	if (renameat(fds[nfds - 1], "f", fds[nfds - 1], name)) {
		p = NULL;
		goto out;
	}
	unlinkat(fds[nfds - 1], name, 0);
	/* Check that the forgery starts where the line buffer ends. */
	maps = read_own_maps();
	line = maps ? maps_line_at(maps, (uintptr_t)p) : NULL;
	if (!line || strlen(line) <= LONG_NAME_CUT ||
	    strncmp(line + LONG_NAME_CUT, LONG_NAME_FORGED_LINE, strlen(LONG_NAME_FORGED_LINE)))
		p = NULL;
	free(maps);
out:
	/* Remove the chain from the bottom: each by its parent, the paths are too long. */
	while (nfds > 1) {
		close(fds[--nfds]);
		unlinkat(fds[nfds - 1], names[nfds - 1], AT_REMOVEDIR);
		if (names[nfds - 1] != first && names[nfds - 1] != comp)
			free((char *)names[nfds - 1]);
	}
	close(fds[0]);
	rmdir(base);
	return p;
}

void long_name_child_start(struct long_name_child *c)
{
	int pfd[2];
	uint64_t range[2] = { 0, 0 };

	ck_assert_int_eq(pipe(pfd), 0);
	c->pid = fork();
	ck_assert_int_ge(c->pid, 0);
	if (c->pid == 0) {
		void *p = build_long_name_mapping();

		if (p) {
			range[0] = (uintptr_t)p;
			range[1] = (uintptr_t)p + 4096;
		}
		if (write(pfd[1], range, sizeof(range)) != sizeof(range) || !p)
			_exit(1);
		for (;;)
			pause();
	}
	close(pfd[1]);
	ck_assert_int_eq(read(pfd[0], range, sizeof(range)), (ssize_t)sizeof(range));
	close(pfd[0]);
	ck_assert_msg(range[0] != 0, "the child could not build its long-named mapping");
	c->start = range[0];
	c->end = range[1];
}

void long_name_child_stop(struct long_name_child *c)
{
	kill(c->pid, SIGKILL);
	wait_status(c->pid);
}

/* Add up one mapping of anon_coverage(). */
static void coverage_add(struct anon_coverage *c, bool private_anon, bool nh, uint64_t s,
			 uint64_t e, uint64_t anon, uint64_t huge)
{
	uint64_t as = (s + PMD_SZ - 1) & ~(PMD_SZ - 1), ae = e & ~(PMD_SZ - 1);
	uint64_t span = as < ae ? ae - as : 0;

	c->anon += anon;
	c->huge += huge;
	if (nh)
		c->nohuge_huge += huge;
	else if (private_anon)
		c->alignable += anon < span ? anon : span;
}

void anon_coverage(pid_t pid, struct anon_coverage *c)
{
	char path[64], line[4096];
	uint64_t s = 0, e = 0, anon = 0, huge = 0;
	bool have = false, private_anon = false, nh = false;
	FILE *f;

	memset(c, 0, sizeof(*c));
	snprintf(path, sizeof(path), "/proc/%d/smaps", (int)pid);
	f = fopen(path, "re");
	ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		char perms[8], name[256] = "";
		unsigned long long v, inode;

		uint64_t ns, ne;

		if (is_header(line, &ns, &ne, perms)) {
			if (have)
				coverage_add(c, private_anon, nh, s, e, anon, huge);
			have = true;
			s = ns;
			e = ne;
			anon = huge = 0;
			nh = false;
			if (sscanf(line, "%*s %*s %*s %*s %llu %255s", &inode, name) < 1)
				inode = 1;
			private_anon = perms[3] == 'p' && inode == 0 &&
				       (!name[0] || !strcmp(name, "[heap]") ||
					!strcmp(name, "[stack]") || !strncmp(name, "[anon:", 6));
		} else if (sscanf(line, "Anonymous: %llu kB", &v) == 1) {
			anon = v * KiB;
		} else if (sscanf(line, "AnonHugePages: %llu kB", &v) == 1) {
			huge = v * KiB;
		} else if (!strncmp(line, "VmFlags:", 8)) {
			nh = has_flag(line + 8, "nh");
		}
	}
	if (have)
		coverage_add(c, private_anon, nh, s, e, anon, huge);
	fclose(f);
}
