// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The helpers every guest check shares (vm_check.h): VMTEST output, the
 * kernel's expected features, the global THP mode, smaps reading and
 * children that report through a pipe.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <signal.h>
#include <unistd.h>

#include "vm_check.h"

enum flavour flavour;
const char *flavour_name;
bool rfc;
char kernel_label[64] = "unnamed";
int nfail;
struct thp_probe_info pinfo;
struct kernel_expect kx;
/* The global THP mode the kernel booted with, and the one now in force. */
unsigned int boot_mode, cur_mode;

static bool at_least(int major, int minor)
{
	return kx.major > major || (kx.major == major && kx.minor >= minor);
}

void kernel_expect_init(void)
{
	struct utsname u;

	uname(&u);
	sscanf(u.release, "%d.%d", &kx.major, &kx.minor);
	kx.procmap_query = at_least(6, 11);
	kx.collapse = at_least(6, 1);
	kx.pm_self_huge = at_least(6, 13) || rfc;
	kx.pidfd_self = at_least(6, 13);
	kx.except_advised = at_least(6, 18);
	kx.prctl78_taken = at_least(6, 16);
	kx.prctl79_taken = at_least(7, 2);
	printf("VMTEST INFO kernel %s release %s\n", kernel_label, u.release);
}

const char *const mode_names[3] = { "always", "madvise", "never" };

unsigned int sysfs_mode(void)
{
	char buf[128];
	int fd = open("/sys/kernel/mm/transparent_hugepage/enabled", O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;

	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return THP_MODE_UNKNOWN;
	buf[n] = 0;
	for (unsigned int m = 0; m < 3; m++) {
		char want[16];

		snprintf(want, sizeof(want), "[%s]", mode_names[m]);
		if (strstr(buf, want))
			return m;
	}
	return THP_MODE_UNKNOWN;
}

int set_sysfs_mode(unsigned int m)
{
	int fd = open("/sys/kernel/mm/transparent_hugepage/enabled", O_WRONLY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, mode_names[m], strlen(mode_names[m]));
	close(fd);
	if (n < 0)
		return -errno;
	cur_mode = sysfs_mode();
	return cur_mode == m ? 0 : -EIO;
}

/* ---- output ---------------------------------------------------------- */

void pass(const char *name)
{
	printf("VMTEST PASS %s\n", name);
	fflush(stdout);
}

void __attribute__((format(printf, 2, 3))) fail(const char *name, const char *fmt, ...)
{
	va_list ap;

	printf("VMTEST FAIL %s: ", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	nfail++;
}

void __attribute__((format(printf, 2, 3))) cfail(struct check *c, const char *fmt, ...)
{
	va_list ap;
	size_t l = strlen(c->why);

	if (l >= sizeof(c->why) - 8)
		return;
	if (l)
		strcat(c->why, "; "), l += 2;
	va_start(ap, fmt);
	vsnprintf(c->why + l, sizeof(c->why) - l, fmt, ap);
	va_end(ap);
	c->failed = true;
}

void cdone(struct check *c)
{
	if (c->failed)
		fail(c->name, "%s", c->why);
	else
		pass(c->name);
}

/* ---- /proc/self/smaps helpers (independent of libthp's parser) ------- */

char smaps_buf[1 << 20];

struct smap_info smap_at(uintptr_t addr)
{
	struct smap_info si;
	char *line, *save = NULL;
	bool in = false;

	memset(&si, 0, sizeof(si));
	if (read_file("/proc/self/smaps", smaps_buf, sizeof(smaps_buf)) <= 0)
		return si;
	for (line = strtok_r(smaps_buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long s, e;
		char dash;

		if (sscanf(line, "%lx%c%lx", &s, &dash, &e) == 3 && dash == '-' &&
		    strchr(line, ' ')) {
			if (in)
				break;
			if (s <= addr && addr < e) {
				in = true;
				si.found = true;
				si.start = s;
				si.end = e;
			}
			continue;
		}
		if (!in)
			continue;
		if (!strncmp(line, "AnonHugePages:", 14))
			si.anon_huge_kb = strtoul(line + 14, NULL, 10);
		else if (!strncmp(line, "VmFlags:", 8)) {
			si.hg = strstr(line, " hg") != NULL;
			si.nh = strstr(line, " nh") != NULL;
		}
	}
	return si;
}

/* VmFlags of a fresh anonymous mapping. */
/* Shared: never merged into a neighbour (see seq_probe_beside_plain_mapping()). */
int fresh_flags(bool *hg, bool *nh)
{
	void *p = mmap(NULL, PMD, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct smap_info si;

	if (p == MAP_FAILED)
		return -errno;
	si = smap_at((uintptr_t)p);
	munmap(p, PMD);
	if (!si.found)
		return -ENOENT;
	*hg = si.hg;
	*nh = si.nh;
	return 0;
}

/* @len bytes of anonymous memory at a 2 MiB boundary, nothing else mapped; 0 on failure. */
uintptr_t map_pmd_aligned(size_t len)
{
	char *p = mmap(NULL, len + PMD, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);
	uintptr_t base;

	if (p == MAP_FAILED)
		return 0;
	base = ((uintptr_t)p + PMD - 1) & ~(PMD - 1);
	if (base > (uintptr_t)p)
		munmap(p, base - (uintptr_t)p);
	if ((uintptr_t)p + len + PMD > base + len)
		munmap((void *)(base + len), (uintptr_t)p + len + PMD - base - len);
	return base;
}

/*
 * AnonHugePages (kB) of a fresh 4 MiB anonymous mapping, 2 MiB aligned, after
 * touching every page; @advise: MADV_HUGEPAGE it first.  -errno on failure.
 */
long fresh_huge_kb(bool advise)
{
	uintptr_t base = map_pmd_aligned(4 * MiB);
	long kb;

	if (!base)
		return -errno;
	if (advise && madvise((void *)base, 4 * MiB, MADV_HUGEPAGE)) {
		kb = -errno;
		munmap((void *)base, 4 * MiB);
		return kb;
	}
	for (unsigned long off = 0; off < 4 * MiB; off += 4096)
		((volatile char *)base)[off] = 1;
	kb = (long)smap_at(base).anon_huge_kb;
	munmap((void *)base, 4 * MiB);
	return kb;
}

/* ---- layout ---------------------------------------------------------- */

/* 10 MiB at a 2 MiB-aligned base with [base+4M, base+6M) unmapped. */
uintptr_t layout_make(void)
{
	uintptr_t base = map_pmd_aligned(10 * MiB);

	if (base)
		munmap((void *)(base + 4 * MiB), PMD);
	return base;
}

void layout_free(uintptr_t base)
{
	munmap((void *)base, 10 * MiB);
}
/* ---- the backends of a range call --------------------------------------- */

const unsigned int range_backends[NR_RANGE_BACKENDS] = {
	THP_BACKEND_PMADV, THP_BACKEND_PROCESS_MADVISE, THP_BACKEND_MADVISE,
};

/* ---- forked sub-process helper -------------------------------------- */

/* Run fn in a child; its stdout goes to the console directly. */
int in_child(void (*fn)(void *), void *arg)
{
	pid_t pid;
	int st;

	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		fn(arg);
		fflush(stdout);
		_exit(0);
	}
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/*
 * Run fn in a child and collect what it writes into a pipe, up to @len
 * bytes or its end.  The number of bytes read, or -errno; the child's exit
 * status (or 128+signal) in *status when it is not NULL.
 */
long run_piped(void (*fn)(int, void *), void *arg, void *out, size_t len, int *status)
{
	int p[2], st;
	size_t n = 0;
	pid_t pid;

	if (pipe(p))
		return -errno;
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		close(p[0]);
		fn(p[1], arg);
		_exit(0);
	}
	close(p[1]);
	while (n < len) {
		ssize_t r = read(p[0], (char *)out + n, len - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(p[0]);
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (status)
		*status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	return (long)n;
}

/* run_piped() for a child that writes exactly @len bytes: 0 or -EIO. */
int run_piped_exact(void (*fn)(int, void *), void *arg, void *out, size_t len)
{
	return run_piped(fn, arg, out, len, NULL) == (long)len ? 0 : -EIO;
}
/* ---- exec'd and forked children of the set_default checks -------- */

static const char *self_exe = "/init";

/* In the child: become /init --child [rfc], stdout into the pipe. */
static void exec_self_child(int wfd, void *arg)
{
	bool rfc_flag = *(bool *)arg;
	char *argv[] = { (char *)self_exe, (char *)"--child",
			 (char *)(rfc_flag ? "rfc" : "norfc"), NULL };
	char *envp[] = { NULL };

	dup2(wfd, 1);
	execve(self_exe, argv, envp);
	_exit(127);
}

/* fork + execve(/init --child [rfc]); parse its one line. */
int exec_child(bool rfc_flag, struct child_report *cr)
{
	char buf[256];
	long n;

	memset(cr, 0, sizeof(*cr));
	n = run_piped(exec_self_child, &rfc_flag, buf, sizeof(buf) - 1, NULL);
	if (n < 0)
		return (int)n;
	buf[n] = 0;
	if (sscanf(buf, "CHILD rc=%d policy=%d hg=%d nh=%d disabled=%d", &cr->rc, &cr->policy,
		   &cr->hg, &cr->nh, &cr->disabled) != 5)
		return -EIO;
	return 0;
}

int child_main(int argc, char **argv)
{
	bool rfc_flag = argc > 2 && !strcmp(argv[2], "rfc");
	THP_OPTS(thp_default_opts, o, .flags = rfc_flag ? THP_DEFAULT_F_RFC_PRCTL : 0,
		 .prctl_set = 78, .prctl_get = 79);
	bool hg = false, nh = false;
	int r = thp_get_default(&o);

	fresh_flags(&hg, &nh);
	printf("CHILD rc=%d policy=%d hg=%d nh=%d disabled=%d\n", r, r ? -1 : (int)o.policy, hg,
	       nh, (int)prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0));
	fflush(stdout);
	return 0;
}

/* Flags of a fresh mapping in a forked (not exec'd) child, and PR_GET_THP_DISABLE. */
static void fork_flags_child(int wfd, void *arg)
{
	int res[4] = { 0, 0, 0, 0 };
	bool hg = false, nh = false;

	(void)arg;
	res[0] = fresh_flags(&hg, &nh);
	res[1] = hg;
	res[2] = nh;
	res[3] = (int)prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0);
	if (write(wfd, res, sizeof(res)) != (ssize_t)sizeof(res))
		_exit(1);
}

/* PR_GET_THP_DISABLE that fits @policy: 0, except NEVER 1 and NOHUGE 0 or 3. */
bool disable_fits(unsigned int policy, int disabled)
{
	if (policy == THP_POLICY_NEVER)
		return disabled == 1;
	if (policy == THP_POLICY_NOHUGE)
		return disabled == 0 || disabled == 3;
	return disabled == 0;
}

/*
 * A persistent @policy, proven in a forked child (fresh mapping, prctl
 * state) and an exec()ed one (thp_get_default(), fresh mapping, prctl).
 * @by_disable: NOHUGE through PR_THP_DISABLE_EXCEPT_ADVISED, which marks
 * no mapping nh: the mm's flag (PR_GET_THP_DISABLE = 3) is the evidence.
 */
void check_children(struct check *c, const char *name, unsigned int policy,
			   bool rfc_flag, bool by_disable)
{
	int res[4] = { -1, 0, 0, 0 };
	struct child_report cr;

	if (run_piped_exact(fork_flags_child, NULL, res, sizeof(res)) || res[0])
		cfail(c, "fork child failed");
	else if (policy == THP_POLICY_HUGE && (!res[1] || res[2]))
		cfail(c, "persistent HUGE but a forked child's fresh mapping has hg=%d nh=%d",
		      res[1], res[2]);
	else if (policy == THP_POLICY_NOHUGE && !by_disable && (!res[2] || res[1]))
		cfail(c, "persistent NOHUGE but a forked child's fresh mapping has hg=%d nh=%d",
		      res[1], res[2]);
	else if (by_disable && res[3] != 3)
		cfail(c, "persistent NOHUGE but a forked child's PR_GET_THP_DISABLE is %d, "
		      "expected 3", res[3]);
	else if ((policy == THP_POLICY_SYSTEM || policy == THP_POLICY_NEVER) && (res[1] || res[2]))
		cfail(c, "%s: forked child's fresh mapping hg=%d nh=%d", thp_policy_name(policy), res[1],
		      res[2]);
	else if (!disable_fits(policy, res[3]))
		cfail(c, "%s: forked child's PR_GET_THP_DISABLE %d", thp_policy_name(policy), res[3]);
	if (exec_child(rfc_flag, &cr)) {
		cfail(c, "exec'd child gave no report");
		return;
	}
	printf("VMTEST INFO %s: exec child rc=%d policy=%d hg=%d nh=%d disabled=%d\n", name,
	       cr.rc, cr.policy, cr.hg, cr.nh, cr.disabled);
	if (cr.rc || cr.policy != (int)policy)
		cfail(c, "persistent claimed, but exec'd child's thp_get_default: rc %d policy %d, "
		      "expected %s", cr.rc, cr.policy, thp_policy_name(policy));
	if (policy == THP_POLICY_HUGE && !cr.hg)
		cfail(c, "exec'd child's fresh mapping not hg");
	if (policy == THP_POLICY_NOHUGE && !by_disable && !cr.nh)
		cfail(c, "exec'd child's fresh mapping not nh");
	if (by_disable && cr.disabled != 3)
		cfail(c, "exec'd child's PR_GET_THP_DISABLE %d, expected 3", cr.disabled);
	else if (!disable_fits(policy, cr.disabled))
		cfail(c, "exec'd child's PR_GET_THP_DISABLE %d", cr.disabled);
}
/* 8 MiB at a 2 MiB boundary, every page written with a pattern. */
uintptr_t populated_8m(void)
{
	uintptr_t base = map_pmd_aligned(8 * MiB);

	if (!base)
		return 0;
	for (unsigned long off = 0; off < 8 * MiB; off += 512)
		((volatile unsigned char *)base)[off] = (unsigned char)(off >> 9);
	return base;
}

unsigned long huge_kb_of(pid_t pid, uintptr_t addr)
{
	char path[64];
	unsigned long kb = 0;
	char *line, *save = NULL;
	bool in = false;

	snprintf(path, sizeof(path), "/proc/%d/smaps", (int)pid);
	if (read_file(path, smaps_buf, sizeof(smaps_buf)) <= 0)
		return 0;
	for (line = strtok_r(smaps_buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		unsigned long st, en;
		char dash;

		if (sscanf(line, "%lx%c%lx", &st, &dash, &en) == 3 && dash == '-' &&
		    strchr(line, ' ')) {
			in = st <= addr && addr < en;
			continue;
		}
		if (in && !strncmp(line, "AnonHugePages:", 14))
			kb += strtoul(line + 14, NULL, 10);
	}
	return kb;
}

static void collapse_remote_child(int wfd, void *arg)
{
	uintptr_t base = populated_8m();

	(void)arg;
	if (write(wfd, &base, sizeof(base)) != (ssize_t)sizeof(base))
		_exit(1);
	close(wfd);
	pause(); /* until the parent kills it */
}

/*
 * A child with 8 populated MiB (collapse_remote_child()); its pid and the
 * mapping's base in *base, or -1 when it did not start.  End it with
 * stop_child().
 */
pid_t start_populated_child(uintptr_t *base)
{
	int p[2];
	pid_t pid;

	*base = 0;
	if (pipe(p))
		return -1;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		collapse_remote_child(p[1], NULL);
		_exit(0);
	}
	close(p[1]);
	if (pid > 0 && (read(p[0], base, sizeof(*base)) != (ssize_t)sizeof(*base) || !*base)) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		pid = -1;
	}
	close(p[0]);
	return pid;
}

void stop_child(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}
struct exec_args {
	char *const *argv, *const *envp;
};

/* In run_piped()'s child: execute the program, stdout and stderr into the pipe. */
static void exec_into_pipe(int wfd, void *arg)
{
	const struct exec_args *x = arg;

	dup2(wfd, 1);
	dup2(wfd, 2);
	close(wfd);
	execve(x->argv[0], x->argv, x->envp);
	_exit(127);
}

/* Run argv with envp; its stdout and stderr into @out.  The exit status, or 128+signal. */
int run_capture(char *const argv[], char *const envp[], char *out, size_t cap)
{
	struct exec_args x = { argv, envp };
	int st = 0;
	long n = run_piped(exec_into_pipe, &x, out, cap - 1, &st);

	out[n > 0 ? n : 0] = 0;
	return n < 0 ? (int)n : st;
}

long kv_long(const char *out, const char *key)
{
	const char *p = strstr(out, key);

	return p ? strtol(p + strlen(key), NULL, 10) : -9999;
}
