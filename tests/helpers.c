// SPDX-License-Identifier: LGPL-2.1-or-later
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "helpers.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

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
	a = (char *)(((uintptr_t)p + PMD_SZ + PMD_SZ - 1) & ~(uintptr_t)(PMD_SZ - 1));
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

void must_madvise(void *p, size_t len, int advice)
{
	ck_assert_msg(madvise(p, len, advice) == 0, "madvise(%p, %zu, %d): %s", p, len,
		      advice, strerror(errno));
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

int run_suite(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

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
	struct thp_report before[2];
	int ret;

	ck_assert(n <= 2 && o->reports);
	memset(o->reports, 0xa5, n * sizeof(*before));
	memcpy(before, o->reports, n * sizeof(*before));
	o->backend_used = 0xdead;
	errno = 0;
	ret = thp_apply_ranges(r, n, o);
	assert_refused_no_process_madvise(ret, what);
	ck_assert_msg(!memcmp(before, o->reports, n * sizeof(*before)),
		      "%s: a refused call wrote its reports", what);
	ck_assert_msg(o->backend_used == 0xdead, "%s: a refused call set backend_used %u", what,
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
		      o->failures_needed == 0 && o->backend_used == 0xdead,
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
