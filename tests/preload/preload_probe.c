// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The program the preload tests run (under thpctl run, or with LD_PRELOAD
 * set by hand).  It is built without sanitizers and links libthp statically,
 * so it runs the same in every build, and a copy of it can be made setuid.
 *
 *   preload_probe report      one line of key=value facts about itself
 *   preload_probe wait        "ready pid=N", then block until stdin closes
 *   preload_probe interpose   the interposition checks; exit 0 when all pass
 *   preload_probe bench N     ns per mmap()+munmap() pair, three sizes
 *   preload_probe switch P... thp_set_default(P) for each policy P in turn,
 *                             and a line of what each got (switch_line())
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <thp/thp.h>

#include "compat.h" /* PR_GET_THP_DISABLE */

#define MIB (1024UL * 1024UL)

static bool preload_mapped(void)
{
	char line[4096];
	bool found = false;
	FILE *f = fopen("/proc/self/maps", "re");

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, "/libthp-preload.so") != NULL;
	fclose(f);
	return found;
}

/* The mapping that covers @p, from thp_query(); false if none. */
static bool state_of(const void *p, struct thp_mapping_state *st)
{
	THP_OPTS(thp_query_opts, q, .addr = (uintptr_t)p, .len = 1, .states = st,
		 .states_cap = 1);

	return thp_query(&q) == 1;
}

static int hg_of(const void *p)
{
	struct thp_mapping_state st;

	return state_of(p, &st) ? st.advised_huge : -1;
}

/* "THP_enabled:" of /proc/self/status, -1 if the kernel has none. */
static int status_thp_enabled(void)
{
	char line[256];
	int v = -1;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "THP_enabled:", 12))
			v = atoi(line + 12);
	fclose(f);
	return v;
}

static int report(void)
{
	THP_OPTS(thp_default_opts, d);
	size_t len = 8 * MIB;
	void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *h = malloc(len);
	const char *tun = getenv("GLIBC_TUNABLES");
	const char *pre = getenv("LD_PRELOAD");
	int r;

	if (m == MAP_FAILED || !h) {
		perror("preload_probe: allocation");
		return 1;
	}
	memset(m, 1, len);
	memset(h, 1, len);
	r = thp_get_default(&d);
	printf("secure=%lu ruid=%d euid=%d preload_mapped=%d mmap_hg=%d malloc_hg=%d "
	       "thp_disable=%d thp_enabled=%d tunables=%s ld_preload=%s "
	       "default=%s backend=%s persistent=%d\n",
	       getauxval(AT_SECURE), (int)getuid(), (int)geteuid(), preload_mapped(), hg_of(m),
	       hg_of(h), prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0), status_thp_enabled(),
	       tun ? tun : "-", pre ? pre : "-", r ? "error" : thp_policy_name(d.policy),
	       r ? thp_strerror(r) : thp_backend_name(d.backend_used), r ? 0 : d.persistent);
	free(h);
	munmap(m, len);
	return fflush(stdout) ? 1 : 0;
}

static int wait_stdin(void)
{
	char c;

	printf("ready pid=%d\n", (int)getpid());
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	return 0;
}

static int failures;

#define CHECK(cond, ...)                                                   \
	do {                                                               \
		if (!(cond)) {                                             \
			printf("FAIL %s:%d: ", __func__, __LINE__);        \
			printf(__VA_ARGS__);                               \
			putchar('\n');                                     \
			failures++;                                        \
		}                                                          \
	} while (0)

static void *map(size_t len, int flags, int fd)
{
	return mmap(NULL, len, PROT_READ | PROT_WRITE, flags, fd, 0);
}

static void check_private_anon(void)
{
	void *p;

	errno = 4242;
	p = map(4 * MIB, MAP_PRIVATE | MAP_ANONYMOUS, -1);
	CHECK(p != MAP_FAILED, "mmap: %s", strerror(errno));
	if (p == MAP_FAILED)
		return;
	CHECK(errno == 4242, "a successful mmap changed errno to %d", errno);
	CHECK(hg_of(p) == 1, "anonymous private mapping not advised huge");
	munmap(p, 4 * MIB);

	/* mmap64 is the same function on 64-bit, exported under its own name. */
	p = mmap64(NULL, 4 * MIB, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	CHECK(p != MAP_FAILED && hg_of(p) == 1, "mmap64 mapping not advised huge");
	if (p != MAP_FAILED)
		munmap(p, 4 * MIB);

	/* The RFC default applies to PROT_NONE reservations too. */
	p = mmap(NULL, 4 * MIB, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(p != MAP_FAILED && hg_of(p) == 1, "PROT_NONE reservation not advised huge");
	if (p != MAP_FAILED)
		munmap(p, 4 * MIB);
}

static void check_untouched(void)
{
	char path[] = "/tmp/preload_probe.XXXXXX";
	int fd = mkstemp(path);
	void *p;

	/* Shared anonymous memory is shmem: its THP setting is not ours. */
	p = map(4 * MIB, MAP_SHARED | MAP_ANONYMOUS, -1);
	CHECK(p != MAP_FAILED && hg_of(p) == 0, "MAP_SHARED|MAP_ANONYMOUS was advised");
	if (p != MAP_FAILED)
		munmap(p, 4 * MIB);

	CHECK(fd >= 0, "mkstemp: %s", strerror(errno));
	if (fd < 0)
		return;
	unlink(path);
	CHECK(ftruncate(fd, (off_t)(4 * MIB)) == 0, "ftruncate: %s", strerror(errno));
	p = map(4 * MIB, MAP_PRIVATE, fd);
	CHECK(p != MAP_FAILED && hg_of(p) == 0, "private file mapping was advised");
	if (p != MAP_FAILED)
		munmap(p, 4 * MIB);
	p = map(4 * MIB, MAP_SHARED, fd);
	CHECK(p != MAP_FAILED && hg_of(p) == 0, "shared file mapping was advised");
	if (p != MAP_FAILED)
		munmap(p, 4 * MIB);
	close(fd);

	/* Stacks: the kernel makes MAP_STACK VM_NOHUGEPAGE; leave that. */
	p = map(4 * MIB, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1);
	CHECK(p != MAP_FAILED && hg_of(p) == 0, "MAP_STACK mapping was advised huge");
	if (p != MAP_FAILED)
		munmap(p, 4 * MIB);
}

static void check_errno(void)
{
	void *p;

	errno = 0;
	p = map(0, MAP_PRIVATE | MAP_ANONYMOUS, -1);
	CHECK(p == MAP_FAILED && errno == EINVAL, "mmap(len 0): %p errno %d, want EINVAL", p,
	      errno);
	errno = 0;
	p = map(4096, MAP_PRIVATE, 987);
	CHECK(p == MAP_FAILED && errno == EBADF, "mmap(bad fd): %p errno %d, want EBADF", p,
	      errno);
}

static void check_mremap(void)
{
	void *p = map(4 * MIB, MAP_PRIVATE | MAP_ANONYMOUS, -1), *q;

	CHECK(p != MAP_FAILED, "mmap: %s", strerror(errno));
	if (p == MAP_FAILED)
		return;
	memset(p, 1, 4 * MIB);
	q = mremap(p, 4 * MIB, 64 * MIB, MREMAP_MAYMOVE);
	CHECK(q != MAP_FAILED, "mremap: %s", strerror(errno));
	if (q == MAP_FAILED) {
		munmap(p, 4 * MIB);
		return;
	}
	CHECK(hg_of(q) == 1 && hg_of((char *)q + 60 * MIB) == 1,
	      "grown mapping lost its huge advice");
	memset(q, 2, 64 * MIB);
	{
		struct thp_mapping_state st;

		CHECK(state_of(q, &st) && st.anon_huge_bytes > 0,
		      "grown mapping has no AnonHugePages after touching it");
	}
	munmap(q, 64 * MIB);

	/* An explicit MADV_NOHUGEPAGE survives a move. */
	p = map(4 * MIB, MAP_PRIVATE | MAP_ANONYMOUS, -1);
	if (p == MAP_FAILED)
		return;
	CHECK(madvise(p, 4 * MIB, MADV_NOHUGEPAGE) == 0, "madvise: %s", strerror(errno));
	q = mremap(p, 4 * MIB, 32 * MIB, MREMAP_MAYMOVE);
	CHECK(q != MAP_FAILED && hg_of(q) == 0, "MADV_NOHUGEPAGE region became huge on mremap");
	munmap(q != MAP_FAILED ? q : p, q != MAP_FAILED ? 32 * MIB : 4 * MIB);
}

static void check_populate(void)
{
	struct thp_mapping_state st;
	void *p = map(16 * MIB, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1);

	CHECK(p != MAP_FAILED, "mmap: %s", strerror(errno));
	if (p == MAP_FAILED)
		return;
	CHECK(state_of(p, &st) && st.advised_huge && st.anon_huge_bytes > 0 &&
		      st.rss_bytes >= 16 * MIB,
	      "MAP_POPULATE: hg %d AnonHugePages %llu Rss %llu", st.advised_huge,
	      (unsigned long long)st.anon_huge_bytes, (unsigned long long)st.rss_bytes);
	munmap(p, 16 * MIB);
}

static int interpose(void)
{
	if (!preload_mapped()) {
		printf("FAIL: libthp-preload.so is not loaded\n");
		return 1;
	}
	check_private_anon();
	check_untouched();
	check_errno();
	check_mremap();
	check_populate();
	printf("%s (%d failures)\n", failures ? "FAIL" : "PASS", failures);
	return failures != 0;
}

/* hg of a fresh anonymous mmap() (through the interposed mmap()), -1 on failure. */
static int fresh_hg(void)
{
	void *m = mmap(NULL, 4 * MIB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int hg;

	if (m == MAP_FAILED)
		return -1;
	hg = hg_of(m);
	munmap(m, 4 * MIB);
	return hg;
}

static const char *get_name(int pidfd)
{
	THP_OPTS(thp_default_opts, d, .pidfd = pidfd);
	int r = thp_get_default(&d);

	return r ? (r == -EOPNOTSUPP ? "ambiguous" : "error") : thp_policy_name(d.policy);
}

/*
 * What a fork()ed child running @child(write end of a pipe) writes there,
 * into @buf (NUL-terminated, a trailing newline cut), or @fallback.
 */
static void child_output(void (*child)(int fd), const char *fallback, char *buf, size_t len)
{
	int p[2];
	ssize_t n = 0, got;
	pid_t pid;

	snprintf(buf, len, "%s", fallback);
	if (pipe(p))
		return;
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		child(p[1]);
		_exit(127);
	}
	close(p[1]);
	while (pid > 0 && n < (ssize_t)len - 1 && (got = read(p[0], buf + n, len - 1 - (size_t)n)) > 0)
		n += got;
	if (pid > 0)
		waitpid(pid, NULL, 0);
	close(p[0]);
	if (n > 0) {
		buf[n] = 0;
		buf[strcspn(buf, "\n")] = 0;
	}
}

/* "fork_hg=H fork_get=P parent_get=P": this child's view and its parent's through a pidfd. */
static void forked_facts(int fd)
{
	int ppidfd = (int)syscall(SYS_pidfd_open, getppid(), 0);
	char line[160];
	int l = snprintf(line, sizeof(line), "fork_hg=%d fork_get=%s parent_get=%s", fresh_hg(),
			 get_name(THP_SELF), ppidfd >= 0 ? get_name(ppidfd) : "nopidfd");

	_exit(write(fd, line, (size_t)l) == l ? 0 : 1);
}

/* This program exec()ed as "report", its stdout on @fd. */
static void execed_report(int fd)
{
	char *argv[] = { "preload_probe", "report", NULL };

	dup2(fd, 1);
	close(fd);
	execv("/proc/self/exe", argv);
}

/*
 * For each policy: thp_set_default() with it, then one line: its result,
 * thp_get_default() here, a fresh mmap()'s hg here and in a fork()ed
 * child, which also reads this process's policy through a pidfd (the
 * remote path: /proc/PID/maps), and the exec()ed child's report line
 * after "exec:".
 */
static int switch_policies(int n, char **names)
{
	for (int i = 0; i < n; i++) {
		THP_OPTS(thp_default_opts, d);
		char forked[128], execed[4096];
		int r;

		if (!strcmp(names[i], "system"))
			d.policy = THP_POLICY_SYSTEM;
		else if (!strcmp(names[i], "huge"))
			d.policy = THP_POLICY_HUGE;
		else if (!strcmp(names[i], "nohuge"))
			d.policy = THP_POLICY_NOHUGE;
		else if (!strcmp(names[i], "never"))
			d.policy = THP_POLICY_NEVER;
		else
			return 2;
		r = thp_set_default(&d);
		child_output(forked_facts, "fork_hg=? fork_get=? parent_get=?", forked,
			     sizeof(forked));
		child_output(execed_report, "exec=failed", execed, sizeof(execed));
		printf("switch=%s ret=%d backend=%s persistent=%d get=%s self_hg=%d %s exec: %s\n",
		       names[i], r, thp_backend_name(d.backend_used), (int)d.persistent,
		       get_name(THP_SELF), fresh_hg(), forked, execed);
	}
	return fflush(stdout) ? 1 : 0;
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int bench(long n)
{
	static const size_t sizes[] = { 4096, 64 * 1024, 4 * MIB };

	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		double t0 = now();

		for (long i = 0; i < n; i++) {
			void *p = map(sizes[s], MAP_PRIVATE | MAP_ANONYMOUS, -1);

			if (p == MAP_FAILED || munmap(p, sizes[s])) {
				perror("preload_probe: bench");
				return 1;
			}
		}
		printf("bench preload=%d size=%zu ns_per_mmap_munmap=%.1f\n", preload_mapped(),
		       sizes[s], (now() - t0) * 1e9 / (double)n);
	}
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 2 && !strcmp(argv[1], "report"))
		return report();
	if (argc == 2 && !strcmp(argv[1], "wait"))
		return wait_stdin();
	if (argc == 2 && !strcmp(argv[1], "interpose"))
		return interpose();
	if (argc == 3 && !strcmp(argv[1], "bench"))
		return bench(atol(argv[2]));
	if (argc >= 3 && !strcmp(argv[1], "switch"))
		return switch_policies(argc - 2, argv + 2);
	fprintf(stderr, "usage: preload_probe report|wait|interpose|bench N|switch POLICY...\n");
	return 2;
}
