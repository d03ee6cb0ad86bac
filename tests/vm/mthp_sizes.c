// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Guest check: thp_query()'s bytes by folio size with each size switched
 * to madvise alone (the guest's sysfs is ours to switch), against the
 * kernel's per-size anon_fault_alloc counters and tests/folio_ref.c; then
 * 64 KiB under `thpctl run --policy huge` in thpctl status, and thpctl
 * collapse moving bytes from 64 KiB to 2 MiB folios.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../folio_ref.h"
#include "vm_check.h"

#define SYSFS_THP "/sys/kernel/mm/transparent_hugepage/"

static const char *const word[] = { "always", "madvise", "never", "", "inherit" };

static int write_word(const char *path, const char *w)
{
	int fd = open(path, O_WRONLY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, w, strlen(w));
	close(fd);
	return n < 0 ? -errno : 0;
}

static int set_size(uint64_t size, const char *w)
{
	char path[128];

	snprintf(path, sizeof(path), SYSFS_THP "hugepages-%llukB/enabled",
		 (unsigned long long)(size >> 10));
	return write_word(path, w);
}

/* A per-size counter (stats/ since 6.9), -1 when absent. */
static long long size_stat(uint64_t size, const char *name)
{
	char path[160], buf[64];

	snprintf(path, sizeof(path), SYSFS_THP "hugepages-%llukB/stats/%s",
		 (unsigned long long)(size >> 10), name);
	if (read_file(path, buf, sizeof(buf)) <= 0)
		return -1;
	return strtoll(buf, NULL, 10);
}

/* Sizes anonymous memory can get: those with an "enabled" file. */
static struct thp_probe_info sizes_pi;

static bool anon_size(unsigned int i)
{
	return sizes_pi.sizes[i].enabled != THP_MODE_UNKNOWN;
}

/* Every anonymous size to never but @keep (to @keep_word); 0 or -errno. */
static int only_size(uint64_t keep, const char *keep_word)
{
	int err = 0;

	for (unsigned int i = 0; i < sizes_pi.nr_sizes && i < THP_PROBE_MAX_SIZES; i++)
		if (anon_size(i) && sizes_pi.sizes[i].size != keep)
			err = err ? err : set_size(sizes_pi.sizes[i].size, "never");
	if (keep)
		err = err ? err : set_size(keep, keep_word);
	return err;
}

static void restore_sizes(struct check *c)
{
	for (unsigned int i = 0; i < sizes_pi.nr_sizes && i < THP_PROBE_MAX_SIZES; i++)
		if (anon_size(i) && set_size(sizes_pi.sizes[i].size, word[sizes_pi.sizes[i].enabled]))
			cfail(c, "cannot restore hugepages-%llukB/enabled",
			      (unsigned long long)(sizes_pi.sizes[i].size >> 10));
}

/* thp_query() by folio size of [base, base+len) in process @pidfd. */
static int query_sizes(int pidfd, uintptr_t base, size_t len, struct thp_query_opts *q)
{
	memset(q, 0, sizeof(*q));
	q->sz = sizeof(*q);
	q->pidfd = pidfd;
	q->flags = THP_QUERY_F_FOLIO_SIZES;
	q->addr = base;
	q->len = len;
	return thp_query(q);
}

static uint64_t bytes_of(const struct thp_query_opts *q, uint64_t size)
{
	for (uint32_t i = 0; i < q->nr_sizes; i++)
		if (q->sizes[i].size == size)
			return q->sizes[i].bytes;
	return 0;
}

/* |a - b| within 2% of b. */
static bool within_2pct(uint64_t a, uint64_t b)
{
	uint64_t d = a > b ? a - b : b - a;

	return d * 50 <= b;
}

/* One size set to madvise alone: a HUGE-advised 32 MiB mapping touched. */
static void one_size(struct check *c, uint64_t size)
{
	const size_t len = 32 * MiB;
	struct thp_query_opts q;
	uint64_t ref[FOLIO_REF_ORDERS], lib, counted;
	long long before, after;
	uintptr_t base;
	unsigned int order = 0;
	int r;

	if (only_size(size, "madvise")) {
		cfail(c, "cannot set %llu kB alone to madvise", (unsigned long long)(size >> 10));
		return;
	}
	base = map_pmd_aligned(len);
	if (!base) {
		cfail(c, "mmap %zu MiB", (size_t)(len / MiB));
		return;
	}
	madvise((void *)base, len, MADV_HUGEPAGE);
	before = size_stat(size, "anon_fault_alloc");
	memset((void *)base, 1, len);
	after = size_stat(size, "anon_fault_alloc");
	r = query_sizes(THP_SELF, base, len, &q);
	lib = bytes_of(&q, size);
	counted = before >= 0 && after >= 0 ? (uint64_t)(after - before) * size : 0;
	while (((uint64_t)4096 << order) < size)
		order++;
	printf("VMTEST INFO mthp %llu kB alone: thp_query %llu kB (source %u), anon_fault_alloc "
	       "delta %lld (%llu kB), base %llu kB\n", (unsigned long long)(size >> 10),
	       (unsigned long long)(lib >> 10), q.folio_source, after - before,
	       (unsigned long long)(counted >> 10), (unsigned long long)(q.anon_base_bytes >> 10));
	if (r != 0 || q.folio_source != THP_FOLIO_SOURCE_KPAGEFLAGS) {
		cfail(c, "%llu kB: thp_query %d, source %u", (unsigned long long)(size >> 10), r,
		      q.folio_source);
	} else if (before < 0) {
		cfail(c, "%llu kB: no stats/anon_fault_alloc", (unsigned long long)(size >> 10));
	} else if (counted < len / 2) {
		cfail(c, "%llu kB alone: only %llu kB faulted in at that size (of %zu MiB)",
		      (unsigned long long)(size >> 10), (unsigned long long)(counted >> 10),
		      (size_t)(len / MiB));
	} else if (!within_2pct(lib, counted)) {
		cfail(c, "%llu kB: thp_query %llu bytes, the kernel's counter %llu",
		      (unsigned long long)(size >> 10), (unsigned long long)lib,
		      (unsigned long long)counted);
	} else if ((r = folio_ref_count(0, base, base + len, ref)) != 0) {
		cfail(c, "reference reader: %d", r);
	} else if (order >= FOLIO_REF_ORDERS || ref[order] != lib || ref[0] != q.anon_base_bytes) {
		cfail(c, "%llu kB: thp_query %llu (base %llu), reference %llu (base %llu)",
		      (unsigned long long)(size >> 10), (unsigned long long)lib,
		      (unsigned long long)q.anon_base_bytes,
		      (unsigned long long)(order < FOLIO_REF_ORDERS ? ref[order] : 0),
		      (unsigned long long)ref[0]);
	}
	munmap((void *)base, len);
}

/* "..., 64K* 1234 kB, ..." from thpctl status's folio sizes line; 0 if absent. */
static unsigned long long status_kb(const char *out, const char *label)
{
	const char *line = strstr(out, "\n  base "), *p;
	char key[32];

	if (!line)
		return 0;
	snprintf(key, sizeof(key), ", %s", label);
	p = strstr(line, key);
	if (!p || p > strchr(line + 1, '\n'))
		return 0;
	p += strlen(key);
	if (*p == '*')
		p++;
	return strtoull(p, NULL, 10);
}

/* thpctl @args... -p @pid into @out; the exit status. */
static int thpctl_p(const char *thpctl, const char *cmd, pid_t pid, char *out, size_t cap)
{
	char pids[16];
	char *argv[] = { (char *)thpctl, (char *)cmd, (char *)"-p", pids, NULL };
	char *envp[] = { NULL };

	snprintf(pids, sizeof(pids), "%d", (int)pid);
	return run_capture(argv, envp, out, cap);
}

/*
 * The toucher under `thpctl run --policy huge`, its stdin and stdout on
 * pipes: @in_fd closes to end it.  The pid of thpctl in @runner.
 */
static pid_t start_toucher(const char *thpctl, const char *preload, const char *toucher,
			   size_t mib, bool agent, int *in_fd, pid_t *runner, uintptr_t *base)
{
	int in[2], out[2];
	char mibs[16], env[300], line[128];
	pid_t pid, tpid = 0;
	ssize_t n, got = 0;

	if (pipe2(in, O_CLOEXEC) || pipe2(out, O_CLOEXEC))
		return -1;
	snprintf(mibs, sizeof(mibs), "%zu", mib);
	snprintf(env, sizeof(env), "THPCTL_PRELOAD=%s", preload);
	pid = fork();
	if (pid == 0) {
		char *argv[] = { (char *)thpctl, (char *)"run", (char *)"--policy", (char *)"huge",
				 (char *)"--collapse-interval", (char *)(agent ? "1" : "0"),
				 (char *)"--", (char *)toucher, mibs, NULL };
		char *envp[] = { env, NULL };

		dup2(in[0], 0);
		dup2(out[1], 1);
		execve(thpctl, argv, envp);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	while (got < (ssize_t)sizeof(line) - 1 &&
	       (n = read(out[0], line + got, sizeof(line) - 1 - (size_t)got)) > 0) {
		got += n;
		if (memchr(line, '\n', (size_t)got))
			break;
	}
	line[got > 0 ? got : 0] = 0;
	close(out[0]);
	*in_fd = in[1];
	*runner = pid;
	{
		int tp = 0;
		unsigned long a = 0;

		if (sscanf(line, "ready %d 0x%lx", &tp, &a) == 2) {
			tpid = tp;
			*base = a;
		}
	}
	return tpid;
}

/*
 * The "Done when": 64 KiB madvise and 2 MiB never; a process under
 * `thpctl run --policy huge` touches @mib MiB: thpctl status shows at
 * least 90% of it in 64 KiB folios, within 2% of the kernel's counter.
 * With @agent (the default, a collapse pass a second) the status is read
 * after three seconds of passes, which must leave those extents alone.
 * Without: then 2 MiB inherit and thpctl collapse: the 2 MiB figure grows
 * by the bytes the collapse report names and the 64 KiB one shrinks by as
 * much (no agent collapsing at the same time).
 */
static void run_policy_huge(struct check *c, const char *thpctl, const char *preload,
			    const char *toucher, bool agent)
{
	const size_t mib = 256;
	static char out[1 << 16];
	long long before, after;
	unsigned long long k64, k2m, k64b, k2mb, ckb = 0, cext = 0, sb = 0, sa = 0;
	int in_fd = -1, st;
	pid_t runner = 0, pid;
	uintptr_t base = 0;
	const char *p;

	if (only_size(64 * 1024, "madvise") || set_size(PMD, "never")) {
		cfail(c, "cannot set 64 kB madvise, 2 MiB never");
		return;
	}
	before = size_stat(64 * 1024, "anon_fault_alloc");
	pid = start_toucher(thpctl, preload, toucher, mib, agent, &in_fd, &runner, &base);
	after = size_stat(64 * 1024, "anon_fault_alloc");
	if (pid <= 0) {
		cfail(c, "thpctl run --policy huge -- mthp_toucher did not get ready");
		goto out;
	}
	if (agent)
		sleep(3);
	st = thpctl_p(thpctl, "status", pid, out, sizeof(out));
	k64 = status_kb(out, "64K");
	k2m = status_kb(out, "2M");
	p = strstr(out, "\nfolio sizes:");
	printf("VMTEST INFO mthp thpctl run --policy huge (agent %s), %zu MiB: status 64K %llu kB, "
	       "2M %llu kB; anon_fault_alloc(64K) delta %lld (%lld kB); %.*s\n",
	       agent ? "on" : "off", mib, k64, k2m, after - before,
	       (after - before) * 64, p ? (int)strcspn(p + 1, "\n") : 0, p ? p + 1 : "");
	if (st != 0 || !strstr(out, "source pagemap+kpageflags")) {
		cfail(c, "thpctl status: exit %d, no 'source pagemap+kpageflags'", st);
		goto out;
	}
	if (k64 * 10 < mib * 1024 * 9)
		cfail(c, "64 kB folios: %llu kB of %zu MiB (< 90%%)", k64, mib);
	if (before < 0 || !within_2pct(k64 * 1024, (uint64_t)(after - before) * 64 * 1024))
		cfail(c, "64 kB folios: status %llu kB, the kernel's counter %lld kB", k64,
		      (after - before) * 64);
	{
		/*
		 * The toucher's region, where every extent is in 64 KiB folios:
		 * no pass may have turned one into a 2 MiB folio, 2 MiB being
		 * never.  (Extents of base pages elsewhere, the heap, may be.)
		 */
		int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
		struct thp_query_opts q;
		int r = pidfd >= 0 ? query_sizes(pidfd, base, mib * MiB, &q) : -errno;

		if (r < 0 || bytes_of(&q, PMD))
			cfail(c, "2 MiB never, yet %llu kB of the region in 2 MiB folios (agent %s; "
			      "query %d)", r < 0 ? 0ULL : (unsigned long long)(bytes_of(&q, PMD) >> 10),
			      agent ? "on" : "off", r);
		if (pidfd >= 0)
			close(pidfd);
	}
	if (agent)
		goto out;

	if (set_size(PMD, "inherit")) {
		cfail(c, "cannot set 2 MiB back to inherit");
		goto out;
	}
	st = thpctl_p(thpctl, "collapse", pid, out, sizeof(out));
	p = strstr(out, "collapsed ");
	if (!p || sscanf(p, "collapsed %llu extents (%llu kB)", &cext, &ckb) != 2 || st != 0) {
		cfail(c, "thpctl collapse: exit %d: %.300s", st, out);
		goto out;
	}
	printf("VMTEST INFO mthp thpctl collapse: %.*s\n", (int)strcspn(out, "\n"), out);
	p = strstr(out, "\n  smaller large folios");
	if (p)
		printf("VMTEST INFO mthp thpctl collapse:%.*s\n", (int)strcspn(p + 1, "\n"), p + 1);
	if (!p || !(p = strstr(p, "): ")) || sscanf(p, "): %llu -> %llu kB", &sb, &sa) != 2) {
		cfail(c, "thpctl collapse: no smaller large folio figures: %.300s", out);
		goto out;
	}
	st = thpctl_p(thpctl, "status", pid, out, sizeof(out));
	k64b = status_kb(out, "64K");
	k2mb = status_kb(out, "2M");
	printf("VMTEST INFO mthp after collapse: 64K %llu -> %llu kB, 2M %llu -> %llu kB, report "
	       "%llu kB in %llu extents\n", k64, k64b, k2m, k2mb, ckb, cext);
	if (!ckb)
		cfail(c, "thpctl collapse collapsed nothing");
	/*
	 * The pass collapses every whole extent it may, the toucher's 64 KiB
	 * folios and any extent of base pages (the heap's, say) alike: all of
	 * it becomes 2 MiB folios, and the 64 KiB folios lost are the ones
	 * the pass itself counted in the extents it collapsed.
	 */
	if (k2mb - k2m != ckb || k64 - k64b != sb - sa || k64 - k64b > ckb)
		cfail(c, "collapse of %llu kB (%llu -> %llu kB in smaller large folios): 2M %llu -> "
		      "%llu kB, 64K %llu -> %llu kB", ckb, sb, sa, k2m, k2mb, k64, k64b);
out:
	if (in_fd >= 0)
		close(in_fd);
	if (runner > 0)
		waitpid(runner, NULL, 0);
}

void check_mthp(const char *thpctl, const char *preload, const char *toucher)
{
	struct check c = { .name = "mthp_sizes" };
	struct thp_query_opts q;

	/*
	 * The distro kernels: Debian 13's 6.12 is the same mm as the three
	 * built 6.12 kernels, which need not spend another minute of TCG on it.
	 */
	if (flavour != FL_DISTRO) {
		printf("VMTEST INFO mthp_sizes: run on the distro kernels only\n");
		return;
	}
	sizes_pi.sz = sizeof(sizes_pi);
	if (thp_probe(&sizes_pi) || sizes_pi.sizes_source != THP_SIZES_PER_SIZE) {
		/*
		 * Before 6.8 (the probe check asserts the PMD-only answer):
		 * thpctl probe must say so, and thpctl status that it reads
		 * the one size there is.
		 */
		static char out[1 << 15];
		char *argv[] = { (char *)thpctl, (char *)"probe", NULL };
		char *envp[] = { NULL };
		int st = thpctl && thpctl[0] ? run_capture(argv, envp, out, sizeof(out)) : -1;

		if (kx.major > 6 || (kx.major == 6 && kx.minor >= 8))
			cfail(&c, "kernel %d.%d has per-size controls, the probe says source %u",
			      kx.major, kx.minor, sizes_pi.sizes_source);
		else if (st != 0 || !strstr(out, "\nfolio sizes: per-size controls: none"))
			cfail(&c, "thpctl probe: exit %d, no 'folio sizes: per-size controls: none'",
			      st);
		printf("VMTEST INFO mthp_sizes: no per-size controls on this kernel (thpctl probe "
		       "exit %d)\n", st);
		cdone(&c);
		return;
	}
	if (kx.major < 6 || (kx.major == 6 && kx.minor < 8))
		cfail(&c, "kernel %d.%d has no per-size controls, the probe found %u sizes",
		      kx.major, kx.minor, sizes_pi.nr_sizes);
	if (query_sizes(THP_SELF, 0, 0, &q) < 0 || q.folio_source != THP_FOLIO_SOURCE_KPAGEFLAGS) {
		fail(c.name, "thp_query by folio size as root: source %u (no /proc/kpageflags?)",
		     q.folio_source);
		return;
	}
	if (set_sysfs_mode(THP_MODE_MADVISE)) {
		fail(c.name, "cannot set the global mode to madvise");
		return;
	}
	for (unsigned int i = 0; i < sizes_pi.nr_sizes && i < THP_PROBE_MAX_SIZES; i++)
		if (anon_size(i))
			one_size(&c, sizes_pi.sizes[i].size);
	if (thpctl && thpctl[0] && preload && preload[0] && toucher && toucher[0]) {
		run_policy_huge(&c, thpctl, preload, toucher, true);
		run_policy_huge(&c, thpctl, preload, toucher, false);
	} else
		cfail(&c, "thpctl, the preload or mthp_toucher missing from /vmtest.conf");
	restore_sizes(&c);
	if (set_sysfs_mode(boot_mode))
		cfail(&c, "cannot restore the boot mode");
	cdone(&c);
}
