// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * thp_set_default() / thp_get_default(): the process-wide default policy.
 *
 * Mechanisms, best first: process_madvise(PMADV_SET_FORK_EXEC_DEFAULT)
 * (RFC), PR_SET_THP_POLICY (RFC, only when declared: mainline gave 78 to
 * PR_FUTEX_HASH), PR_SET_THP_DISABLE (+ EXCEPT_ADVISED, 6.18), and for HUGE
 * where nothing persists: advise the existing mappings and say so.  Every
 * effect is read back before it is believed.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "compat.h"
#include "internal.h"
#include "syscall.h"
#include "thp_config.h"

#define DEFAULT_FLAGS (THP_DEFAULT_F_REQUIRE_PERSISTENT | THP_DEFAULT_F_NO_EXISTING | \
		       THP_DEFAULT_F_RFC_PRCTL)

/*
 * The highest prctl option mainline assigns as of Linux 7.2 (81,
 * PR_SET_CFI; 78 PR_FUTEX_HASH, 79 PR_RSEQ_SLICE_EXTENSION, 80 PR_GET_CFI).
 * A declared RFC number at or below it names some other prctl on current
 * kernels and is refused, except the RFC's own posted pair 78/79, which the
 * read-back handshake tells apart.  Raise it when mainline assigns more.
 */
#define MAINLINE_PRCTL_MAX 81

#if THP_RFC_PRCTL_SET > 0
_Static_assert((THP_RFC_PRCTL_SET == RFC_PR_SET_THP_POLICY_POSTED &&
		(THP_RFC_PRCTL_GET == 0 || THP_RFC_PRCTL_GET == RFC_PR_GET_THP_POLICY_POSTED)) ||
		       (THP_RFC_PRCTL_SET > MAINLINE_PRCTL_MAX &&
			(THP_RFC_PRCTL_GET == 0 || THP_RFC_PRCTL_GET > MAINLINE_PRCTL_MAX)),
	       "rfc_prctl_set/rfc_prctl_get: a mainline prctl number other than the RFC's 78/79");
#endif

/*
 * The default policy is process-wide, and both calls run sequences that
 * must not interleave with another thread's (set, then read back; map a
 * probe page, then read smaps): one lock serialises them.  It is never
 * held across a fork() of the caller's: the atfork handlers take it before
 * and give the child a fresh one.  (The probe children forked inside use
 * a raw fork and only make raw system calls.)
 */
static pthread_mutex_t default_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t default_atfork_once = PTHREAD_ONCE_INIT;

static void default_lock_prepare(void)
{
	pthread_mutex_lock(&default_lock);
}

static void default_lock_parent(void)
{
	pthread_mutex_unlock(&default_lock);
}

static void default_lock_child(void)
{
	pthread_mutex_init(&default_lock, NULL);
}

static void default_atfork_register(void)
{
	pthread_atfork(default_lock_prepare, default_lock_parent, default_lock_child);
}

static void default_lock_take(void)
{
	pthread_once(&default_atfork_once, default_atfork_register);
	pthread_mutex_lock(&default_lock);
}

/* The RFC prctl numbers, if the caller or the build declared them; else false. */
static bool rfc_prctl_numbers(const struct thp_default_opts *o, int *set, int *get)
{
	if (o->flags & THP_DEFAULT_F_RFC_PRCTL) {
		*set = o->prctl_set ? o->prctl_set : RFC_PR_SET_THP_POLICY_POSTED;
		*get = o->prctl_get ? o->prctl_get : RFC_PR_GET_THP_POLICY_POSTED;
		return true;
	}
#if THP_RFC_PRCTL_SET > 0
	*set = THP_RFC_PRCTL_SET;
	*get = THP_RFC_PRCTL_GET > 0 ? THP_RFC_PRCTL_GET : THP_RFC_PRCTL_SET + 1;
	return true;
#else
	return false;
#endif
}

/*
 * VmFlags of a fresh anonymous mapping: shows mm->def_flags.  The mapping
 * goes below the libraries and the mmap() area (1 GiB: under a PIE
 * executable, above a non-PIE one's usual heap), where smaps lists it among
 * its first entries and thp_query() stops right after it; placed by the
 * kernel it would come after most mappings, each formatted first (about
 * 45 ms for 20,000).  Only a free place is taken, and none near NULL, where
 * a concurrent stray pointer must still fault.
 */
static int fresh_mapping_advice(bool *huge, bool *nohuge)
{
	static const uintptr_t low[] = { 0x40000000, 0x10000000, 0x1000000 };
	struct thp_mapping_state st;
	struct thp_query_opts q;
	size_t len = caps_get()->page_size;
	void *p = NULL;
	int r;

	/*
	 * Shared: a new private mapping next to one with the same flags is
	 * merged into it, and on the RFC kernels a merged one does not get
	 * the RFC prctl's policy (only a new VMA does), so the probe would
	 * read "no advice" wherever it lands beside such a mapping.  A shared
	 * anonymous mapping is never merged; it gets mm->def_flags and the
	 * policy as a private one does.
	 */
	for (size_t i = 0; i < ARRAY_LEN(low) && !p; i++)
		p = sys_mmap_anon_flags((void *)low[i], len, PROT_READ | PROT_WRITE, MAP_SHARED);
	if (!p)
		p = sys_mmap_anon_flags(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED);
	if (!p)
		return -ENOMEM;
	memset(&q, 0, sizeof(q));
	q.sz = sizeof(q);
	q.addr = (uintptr_t)p;
	q.len = len;
	q.states = &st;
	q.states_cap = 1;
	r = thp_query(&q);
	sys_munmap(p, len);
	if (r < 1)
		return r < 0 ? r : -EIO;
	*huge = st.advised_huge;
	*nohuge = st.advised_nohuge;
	return 0;
}

/*
 * A run of mappings none of which is advised the other way, to be advised
 * in one call: [start, end) with the holes between them (madvise() says
 * ENOMEM for a hole and advises every mapping all the same); @fresh of
 * them are not advised this way yet.
 */
struct advise_span {
	uint64_t start, end;
	uint64_t fresh;
};

/*
 * One madvise() for the span; if some mapping in it refuses the advice
 * (madvise() stops there), each mapping of the span on its own, as found
 * by the VMA walk.  Returns the mappings changed.
 */
static uint64_t advise_span(const struct thp_target *self, struct advise_span *sp, int advice)
{
	struct thp_vma_walk w;
	struct thp_vma v;
	uint64_t ok = 0, fresh = sp->fresh;
	long r;

	sp->fresh = 0;
	if (!fresh)
		return 0;
	r = sys_madvise(sp->start, sp->end - sp->start, advice);
	if (r == 0 || r == -ENOMEM)
		return fresh;
	/* Special mappings (vdso, vvar) may refuse: not our business, the rest goes on. */
	if (vma_walk_open(&w, self, false))
		return 0;
	for (uint64_t at = sp->start; at < sp->end && vma_walk_next(&w, at, &v) == 1 &&
				      v.start < sp->end;
	     at = v.end)
		ok += sys_madvise(v.start, v.end - v.start, advice) == 0;
	vma_walk_close(&w);
	return ok < fresh ? ok : fresh;
}

/*
 * The smaps passes below read through this buffer (they run under
 * default_lock): one allocated now may be a mapping the allocator makes for
 * it (ASan's does), which a pass would advise and count among the caller's
 * mappings.
 */
static char smaps_buf[SMAPS_READ_SIZE];

/* Where the vsyscall page lies (x86-64's kernel half): no mapping to advise. */
#define KERNEL_HALF 0x800000000000ULL

/* The calling process's smaps through smaps_buf; nothing to close on failure. */
static int self_smaps_open(struct smaps_reader *sr, struct thp_target *self)
{
	int r = target_open(THP_SELF, self);

	if (!r)
		r = smaps_open(sr, self, smaps_buf, sizeof(smaps_buf));
	if (r)
		target_close(self);
	return r;
}

/* The caller's mappings with neither MADV_HUGEPAGE nor MADV_NOHUGEPAGE. */
static int count_unadvised(uint64_t *n)
{
	struct smaps_advice st;
	struct smaps_reader sr;
	struct thp_target self;
	int r;

	*n = 0;
	r = self_smaps_open(&sr, &self);
	if (r)
		return r;
	while ((r = smaps_next_advice(&sr, &st)) == 1)
		*n += !st.huge && !st.nohuge && st.start < KERNEL_HALF;
	line_reader_close(&sr.lr);
	target_close(&self);
	return r;
}

/*
 * Advise existing mappings not explicitly advised the other way, as both
 * RFCs do: one pass over smaps (the VmFlags tell), and one madvise() for
 * each run of mappings between two advised the other way (at 60,000
 * mappings, one call per mapping cost more than the smaps read).  A mapping
 * another thread advises the other way while the pass goes on, inside a
 * run already read, gets this advice: as when it comes just after the
 * call.
 */
static int advise_existing(int advice, uint64_t *changed)
{
	struct advise_span sp = { 0, 0, 0 };
	struct smaps_advice st;
	struct smaps_reader sr;
	struct thp_target self;
	int r;

	*changed = 0;
	r = self_smaps_open(&sr, &self);
	if (r)
		return r;
	while ((r = smaps_next_advice(&sr, &st)) == 1) {
		bool opposite = advice == MADV_HUGEPAGE ? st.nohuge : st.huge;
		bool already = advice == MADV_HUGEPAGE ? st.huge : st.nohuge;

		/* The vsyscall page (kernel half) ends every run too. */
		if (opposite || st.start >= KERNEL_HALF) {
			*changed += advise_span(&self, &sp, advice);
			continue;
		}
		if (!sp.fresh)
			sp.start = st.start;
		if (!already || sp.fresh) {
			sp.end = st.end;
			sp.fresh += !already;
		}
	}
	line_reader_close(&sr.lr);
	if (r == 0)
		*changed += advise_span(&self, &sp, advice);
	target_close(&self);
	return r;
}

/*
 * PMADV_SET_FORK_EXEC_DEFAULT on the calling process.  The kernel sets the
 * default with each vector entry it advises without error, and advises
 * what the entry covers: one scratch page, mapped for the call, so that no
 * mapping of the caller is touched here (PMADV_ENTIRE_ADDRESS_SPACE would
 * advise every one, those advised the other way and under
 * THP_DEFAULT_F_NO_EXISTING too); advise_existing() does the documented part.
 */
static int pmadv_set_default(int advice)
{
	size_t len = caps_get()->page_size;
	struct thp_target self;
	struct iovec one;
	long r;
	int err;

	err = target_open(THP_SELF, &self);
	if (!err)
		err = target_need_pidfd(&self); /* no PIDFD_SELF before 6.14 */
	if (err) {
		target_close(&self);
		return err;
	}
	one.iov_len = len;
	one.iov_base = sys_mmap_anon(NULL, len, PROT_READ | PROT_WRITE);
	if (!one.iov_base) {
		target_close(&self);
		return -ENOMEM;
	}
	r = sys_process_madvise(self.pidfd, &one, 1, advice, PMADV_SET_FORK_EXEC_DEFAULT);
	sys_munmap(one.iov_base, len);
	target_close(&self);
	return r < 0 ? (int)r : r == (long)len ? 0 : -EIO;
}

/* ---- libthp-preload.so (thpctl run --policy huge), doc/preload.md ---- */

#define PRELOAD_NAME "libthp-preload.so"
#define HUGETLB_TUNABLE "glibc.malloc.hugetlb"
#define HUGETLB_TUNABLE_ON HUGETLB_TUNABLE "=1"

typedef int (*preload_control_fn)(int op);

/* Does a path name the preload (its file name, with or without a directory)? */
static bool is_preload_path(const char *path, size_t len)
{
	const size_t name_len = sizeof(PRELOAD_NAME) - 1;

	return len >= name_len && !memcmp(path + len - name_len, PRELOAD_NAME, name_len) &&
	       (len == name_len || path[len - name_len - 1] == '/');
}

static bool is_hugetlb_tunable(const char *entry, size_t len)
{
	const size_t n = sizeof(HUGETLB_TUNABLE) - 1;

	return len > n && !memcmp(entry, HUGETLB_TUNABLE, n) && entry[n] == '=';
}

/* Exactly the tunable thpctl adds with the preload; another value is the user's. */
static bool is_hugetlb_on(const char *entry, size_t len)
{
	return len == sizeof(HUGETLB_TUNABLE_ON) - 1 && !memcmp(entry, HUGETLB_TUNABLE_ON, len);
}

static int preload_object_cb(struct dl_phdr_info *info, size_t size, void *arg);

/*
 * The loaded preload's control entry, or NULL when no preload is loaded
 * (or one without the entry: *@loaded tells, when not NULL).  The loader's
 * list is asked first: a dlsym() that fails allocates its error message,
 * and an allocator that maps memory for it (ASan's does) would add a
 * mapping to the caller's that thp_set_default() then advises and counts.
 */
static preload_control_fn preload_control(bool *loaded)
{
	bool in_list = dl_iterate_phdr(preload_object_cb, NULL) != 0;
	void *sym = in_list ? dlsym(RTLD_DEFAULT, THP_PRELOAD_CONTROL) : NULL;
	preload_control_fn fn;

	if (loaded)
		*loaded = in_list;

	memcpy(&fn, &sym, sizeof(fn));
	return fn;
}

/*
 * Rewrite the list in environment variable @var (entries separated by any
 * of @seps, joined with ':'): without the entries @drop matches, with
 * @first in front (NULL: none); unset when nothing is left.  Returns how
 * many entries were dropped, or -ENOMEM.
 */
static int env_list_rewrite(const char *var, const char *seps,
			    bool (*drop)(const char *, size_t), const char *first)
{
	const char *old = getenv(var), *p;
	size_t cap = (old ? strlen(old) : 0) + (first ? strlen(first) : 0) + 2;
	char *out = malloc(cap);
	size_t len = 0;
	int dropped = 0;

	if (!out)
		return -ENOMEM;
	len = (size_t)snprintf(out, cap, "%s", first ? first : "");
	for (p = old; p && *p; p += *p ? 1 : 0) {
		size_t n = strcspn(p, seps);

		if (n && drop(p, n))
			dropped++;
		else if (n)
			len += (size_t)snprintf(out + len, cap - len, "%s%.*s", len ? ":" : "",
						(int)n, p);
		p += n;
	}
	if ((len ? setenv(var, out, 1) : unsetenv(var)) != 0)
		dropped = -ENOMEM;
	free(out);
	return dropped;
}

/* LD_PRELOAD named the preload until preload_switch() took it out (under default_lock). */
static bool preload_taken_out;

/*
 * Do exec()ed children load the preload only through LD_PRELOAD, so that
 * editing it decides?  It names the preload now, or did before we took it
 * out; otherwise it came some other way (/etc/ld.so.preload, dlopen()).
 */
static bool preload_follows_env(void)
{
	const char *p = getenv("LD_PRELOAD");

	if (preload_taken_out)
		return true;

	for (; p && *p; p += *p ? 1 : 0) {
		size_t n = strcspn(p, " :");

		if (is_preload_path(p, n))
			return true;
		p += n;
	}
	return false;
}

/*
 * Switch the preload loaded in this process on (HUGE) or off (any other
 * policy), and make exec()ed children follow through the environment they
 * inherit: off takes the preload out of LD_PRELOAD and the tunable thpctl
 * set with it (glibc.malloc.hugetlb=1) out of GLIBC_TUNABLES; on puts both
 * back, as `thpctl run --policy huge` sets them.  Forked children inherit
 * the switch itself.  The environment is edited with setenv(), which is
 * not safe against other threads reading or changing the environment at
 * the same time (doc/preload.md).  0, or -ENOMEM with a detail.
 */
static int preload_switch(preload_control_fn ctl, bool on)
{
	const char *path = NULL;
	bool taken_out = false;
	Dl_info info;
	void *addr;
	int r;

	if (on) {
		memcpy(&addr, &ctl, sizeof(addr));
		if (dladdr(addr, &info) && info.dli_fname && !strpbrk(info.dli_fname, ": \t\n"))
			path = info.dli_fname;
		r = env_list_rewrite("LD_PRELOAD", " :", is_preload_path, path);
		if (r >= 0)
			r = env_list_rewrite("GLIBC_TUNABLES", ":", is_hugetlb_tunable, NULL);
		if (r >= 0) {
			const char *t = getenv("GLIBC_TUNABLES");
			char *both = NULL;

			/* glibc.malloc.hugetlb=1 goes last, as thpctl puts it. */
			if (t && asprintf(&both, "%s:%s", t, HUGETLB_TUNABLE_ON) < 0)
				r = -ENOMEM;
			else if (setenv("GLIBC_TUNABLES", both ? both : HUGETLB_TUNABLE_ON, 1))
				r = -ENOMEM;
			free(both);
		}
	} else {
		r = env_list_rewrite("LD_PRELOAD", " :", is_preload_path, NULL);
		taken_out = r > 0;
		if (r >= 0)
			r = env_list_rewrite("GLIBC_TUNABLES", ":", is_hugetlb_on, NULL);
	}
	if (r < 0) {
		report_set_detail("the policy is set in the kernel, but the environment for "
				  "libthp-preload.so could not be edited (out of memory)");
		return r;
	}
	preload_taken_out = !on && (preload_taken_out || taken_out);
	ctl(on ? THP_PRELOAD_ON : THP_PRELOAD_OFF);
	return 0;
}

static int preload_object_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	return info->dlpi_name && is_preload_path(info->dlpi_name, strlen(info->dlpi_name));
}

/*
 * Objects loaded plus objects unloaded so far (dl_iterate_phdr() counts
 * both), or 0 if this libc does not say: grows with every change of the
 * set of loaded objects.
 */
static int loader_generation_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof(info->dlpi_subs))
		*(unsigned long long *)arg = info->dlpi_adds + info->dlpi_subs;
	return 1; /* the first object tells */
}

static unsigned long long loader_generation(void)
{
	unsigned long long gen = 0;

	dl_iterate_phdr(loader_generation_cb, &gen);
	return gen;
}

/*
 * The loader generation at which the calling process was last seen
 * without the preload.  Only loading an object can bring one, so the
 * answer stands until the generation changes: a walk of the loader's
 * list (one string compare per object) costs more than the prctl
 * thp_get_default() is compared with.
 */
static _Atomic unsigned long long no_preload_generation;

/*
 * Is libthp-preload.so (thpctl run --policy huge) loaded in the target and
 * switched on?  1, 0, or -errno.  In the calling process its control entry
 * answers (the dynamic loader's list, for a preload without one).  Another
 * process's maps text is searched for the path's basename (also when the
 * file was replaced: " (deleted)") and for the page the preload maps while
 * switched off.
 */
static int preload_active(const struct thp_target *t)
{
	static const char off_mark[] = THP_PRELOAD_OFF_MARK;
	const size_t off_len = sizeof(off_mark) - 1;
	struct line_reader lr;
	bool mapped = false, off = false;
	const char *line;
	size_t len;
	int r;

	if (t->self) {
		unsigned long long gen = loader_generation();
		preload_control_fn ctl;
		bool loaded;

		if (gen && gen == atomic_load_explicit(&no_preload_generation, memory_order_relaxed))
			return 0;
		ctl = preload_control(&loaded);
		if (ctl)
			return ctl(THP_PRELOAD_QUERY) > 0;
		if (loaded)
			return 1;
		atomic_store_explicit(&no_preload_generation, gen, memory_order_relaxed);
		return 0;
	}
	r = line_reader_open_proc(&lr, t, "maps");
	if (r)
		return r;
	while ((r = line_reader_next(&lr, &line, &len)) == 1) {
		if (len > 10 && !memcmp(line + len - 10, " (deleted)", 10))
			len -= 10;
		mapped |= is_preload_path(line, len);
		off |= len >= off_len && !memcmp(line + len - off_len, off_mark, off_len);
	}
	line_reader_close(&lr);
	return r < 0 ? r : mapped && !off;
}

/*
 * Exit codes of the probe children below.  None is 0 or 1: a child that
 * ends any other way (exit(0) from code it should not have reached, a
 * failure path's 1) must read as "could not tell", never as an answer.
 */
enum { PROBE_YES = 0x59, PROBE_NO = 0x4e, PROBE_UNKNOWN = 0x55, PROBE_MIXED = 0x4d };

/*
 * The probe child's answer: 1, 0, -EOPNOTSUPP (PROBE_MIXED), or -errno
 * when it could not tell.
 */
static int probe_child_answer(pid_t pid)
{
	int st = pid < 0 ? pid : sys_wait_exit(pid);

	if (st < 0)
		return st;
	if (st == PROBE_MIXED)
		return -EOPNOTSUPP;
	return st == PROBE_YES ? 1 : st == PROBE_NO ? 0 : -EIO;
}

/* Fresh mappings get @advice, and not the opposite one too. */
static bool only_advice(int advice, bool huge, bool nohuge)
{
	return advice == MADV_HUGEPAGE ? huge && !nohuge : nohuge && !huge;
}

/*
 * Does a new mm get @advice on fresh mappings?  fork() and exec() both
 * build theirs in mm_init(), which keeps only mm->def_flags &
 * VM_INIT_DEF_MASK: VM_NOHUGEPAGE alone in the posted RFC (its huge default
 * is lost), both flags in a kernel that keeps the cover letter's promise.
 * So a forked child's fresh mapping tells what an exec would keep.  For a
 * caller whose own fresh mappings get @advice.
 */
static int new_mm_child_answer(int advice)
{
	pid_t pid = sys_fork_raw();

	if (pid == 0) {
		bool huge = false, nohuge = false;

		if (fresh_mapping_advice(&huge, &nohuge))
			sys_exit_group(PROBE_UNKNOWN);
		sys_exit_group((advice == MADV_HUGEPAGE ? huge : nohuge) ? PROBE_YES : PROBE_NO);
	}
	return probe_child_answer(pid);
}

static int new_mm_keeps_advice(int advice)
{
	int r = -EIO;

	/* A child that could not tell (its probe page or smaps read failed): once more. */
	for (int tries = 0; tries < 2 && r == -EIO; tries++)
		r = new_mm_child_answer(advice);
	return r;
}

/*
 * The same for a caller that does not have the default yet: a child sets it
 * with PMADV in its copy of the mm first, so the caller stays untouched.
 * -EOPNOTSUPP when the child's fresh mappings then get the opposite advice
 * too: another default that PMADV cannot clear (an RFC PR_SET_THP_POLICY
 * default set without declaring the prctl) would stay mixed in.
 */
static int pmadv_default_persists(int advice)
{
	pid_t pid = sys_fork_raw();

	if (pid == 0) {
		bool huge = false, nohuge = false;
		int keeps;

		if (pmadv_set_default(advice) || fresh_mapping_advice(&huge, &nohuge))
			sys_exit_group(PROBE_UNKNOWN);
		if (!only_advice(advice, huge, nohuge))
			sys_exit_group(PROBE_MIXED);
		keeps = new_mm_keeps_advice(advice);
		sys_exit_group(keeps < 0 ? PROBE_UNKNOWN : keeps ? PROBE_YES : PROBE_NO);
	}
	return probe_child_answer(pid);
}

/*
 * Whether a new mm keeps a PMADV default depends on the kernel alone, but
 * only a probe from a clean state measures PMADV alone: an RFC prctl
 * default in force survives fork() by itself.  So the answer is kept only
 * when the caller's fresh mappings had no advice when it was learnt, and
 * used only from such a state; otherwise asked again (one or two child
 * processes).  A probe that could not tell (no fork, the caller reaps
 * children itself) answers "no" and is not kept.
 */
static _Atomic signed char pmadv_keeps_cache[2]; /* 0 unknown, 1 keeps, -1 not */

/* 1, 0, or -EOPNOTSUPP (mixed with another default, see pmadv_default_persists()). */
static int pmadv_persists(int advice, bool clean)
{
	_Atomic signed char *slot = &pmadv_keeps_cache[advice == MADV_HUGEPAGE];
	signed char v = clean ? atomic_load_explicit(slot, memory_order_relaxed) : 0;
	int r;

	if (v)
		return v > 0;
	r = pmadv_default_persists(advice);
	if (r == -EOPNOTSUPP)
		return r;
	if (r < 0)
		return 0;
	if (clean)
		atomic_store_explicit(slot, r ? 1 : -1, memory_order_relaxed);
	return r;
}

static int set_by_pmadv(struct thp_default_opts *o, int advice, bool want_persistent)
{
	const struct thp_caps *c = caps_get();
	bool huge = false, nohuge = false;
	int persists, err;

	if (!c->pmadv_set_default)
		return -EOPNOTSUPP;
	err = fresh_mapping_advice(&huge, &nohuge);
	if (err)
		return err;
	persists = pmadv_persists(advice, !huge && !nohuge);
	if (persists < 0) {
		report_set_detail("fresh mappings would also get %s from a default "
				  "PMADV_SET_FORK_EXEC_DEFAULT cannot clear (an RFC PR_SET_THP_POLICY "
				  "default: declare it with THP_DEFAULT_F_RFC_PRCTL)",
				  advice == MADV_HUGEPAGE ? "MADV_NOHUGEPAGE" : "MADV_HUGEPAGE");
		return persists;
	}
	if (want_persistent && !persists) {
		report_set_detail("PMADV_SET_FORK_EXEC_DEFAULT keeps this default only in the "
				  "calling process, not across fork() and exec()");
		return -EOPNOTSUPP;
	}
	err = pmadv_set_default(advice);
	if (!err)
		err = fresh_mapping_advice(&huge, &nohuge);
	if (err)
		return err;
	if (!only_advice(advice, huge, nohuge)) {
		report_set_detail("PMADV_SET_FORK_EXEC_DEFAULT returned success but fresh "
				  "mappings do not show the advice alone");
		return -EOPNOTSUPP;
	}
	o->backend_used = THP_BACKEND_PMADV;
	o->persistent = persists;
	return 0;
}

/*
 * The RFC's PR_GET_THP_POLICY handshake: 0, 1 or 2 for a get with zero
 * arguments, else -EOPNOTSUPP with a detail.  Issued before any set: on
 * kernels without the RFC, 79 is unassigned or (7.2) PR_RSEQ_SLICE_EXTENSION,
 * both EINVAL for these arguments, while the set number 78 would change the
 * futex hash (PR_FUTEX_HASH_SET_SLOTS is 1, the RFC's DEFAULT_NOHUGE).
 */
static long rfc_prctl_handshake(int get)
{
	long r = sys_prctl(get, 0, 0, 0, 0);

	if (r == RFC_PR_THP_POLICY_DEFAULT_HUGE || r == RFC_PR_THP_POLICY_DEFAULT_NOHUGE ||
	    r == RFC_PR_THP_POLICY_SYSTEM)
		return r;
	report_set_detail("prctl(%d) does not answer as PR_GET_THP_POLICY (%ld): the kernel does "
			  "not implement the RFC prctl with these numbers", get, r);
	return -EOPNOTSUPP;
}

/*
 * The policy this process last set with the RFC prctl (under default_lock;
 * fork() copies it with the mm state), or -1.  A get that cannot issue the
 * undeclared prctl sees only a fresh mapping's advice, which PMADV gives
 * too: this names the mechanism, if the advice still matches.
 */
static int rfc_prctl_policy = -1;

/*
 * The RFC prctl, declared.  *prev gets the policy it had (put back by the
 * caller if the call fails later).  The kernel with the RFC's fix advises
 * the existing mappings itself: what it advised counts in
 * mappings_changed.  A PMADV_SET_FORK_EXEC_DEFAULT default of the other
 * advice would stay in fresh mappings beside the prctl's (both hg and nh,
 * where nh wins): it is replaced with this advice through PMADV too.
 */
static int set_by_rfc_prctl(struct thp_default_opts *o, int set, int get, long *prev)
{
	static const int arg[THP_POLICY_COUNT] = {
		[THP_POLICY_SYSTEM] = RFC_PR_THP_POLICY_SYSTEM,
		[THP_POLICY_HUGE] = RFC_PR_THP_POLICY_DEFAULT_HUGE,
		[THP_POLICY_NOHUGE] = RFC_PR_THP_POLICY_DEFAULT_NOHUGE,
	};
	int advice = o->policy == THP_POLICY_HUGE ? MADV_HUGEPAGE : MADV_NOHUGEPAGE;
	bool advises = o->policy != THP_POLICY_SYSTEM, huge = false, nohuge = false;
	uint64_t before = 0, after = 0;
	long r = rfc_prctl_handshake(get);
	int err;

	if (r < 0)
		return (int)r;
	*prev = r;
	if (advises) {
		err = count_unadvised(&before);
		if (err)
			return err;
	}
	r = sys_prctl(set, (unsigned long)arg[o->policy], 0, 0, 0);
	if (r < 0)
		return (int)r;
	/* Believe it only if the read-back agrees. */
	if (sys_prctl(get, 0, 0, 0, 0) != arg[o->policy]) {
		report_set_detail("prctl(%d) did not read back the policy: the kernel does not "
				  "implement the RFC PR_SET_THP_POLICY with these numbers", set);
		return -EOPNOTSUPP;
	}
	o->backend_used = THP_BACKEND_PRCTL_POLICY;
	o->persistent = true;
	if (!advises)
		return 0;
	err = fresh_mapping_advice(&huge, &nohuge);
	if (!err && !only_advice(advice, huge, nohuge)) {
		err = caps_get()->pmadv_set_default ? pmadv_set_default(advice) : -EOPNOTSUPP;
		if (!err)
			err = fresh_mapping_advice(&huge, &nohuge);
		if (!err && !only_advice(advice, huge, nohuge)) {
			report_set_detail("fresh mappings also get %s, from a default the RFC prctl "
					  "does not replace",
					  advice == MADV_HUGEPAGE ? "MADV_NOHUGEPAGE" : "MADV_HUGEPAGE");
			err = -EOPNOTSUPP;
		}
	}
	if (!err)
		err = count_unadvised(&after);
	if (err) {
		/* Back to where it was: the caller goes on from that state. */
		sys_prctl(set, (unsigned long)*prev, 0, 0, 0);
		o->backend_used = THP_BACKEND_AUTO;
		o->persistent = false;
		return err;
	}
	o->mappings_changed = before > after ? before - after : 0;
	return 0;
}

static int set_by_thp_disable(struct thp_default_opts *o)
{
	const struct thp_caps *c = caps_get_prctl();
	unsigned long flags = 0;
	long r, got;

	if (o->policy == THP_POLICY_NOHUGE) {
		if (!c->thp_disable_except_advised) {
			report_set_detail("NOHUGE needs PR_THP_DISABLE_EXCEPT_ADVISED (Linux 6.18) or "
					  "an RFC kernel; use NEVER to turn THP off for the process "
					  "(advised memory too)");
			return -EOPNOTSUPP;
		}
		flags = PR_THP_DISABLE_EXCEPT_ADVISED;
	}
	r = sys_prctl(PR_SET_THP_DISABLE, o->policy != THP_POLICY_SYSTEM, flags, 0, 0);
	if (r < 0)
		return (int)r;
	got = sys_prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0);
	if (got < 0 || (o->policy == THP_POLICY_SYSTEM ? got != 0 : !(got & 1)) ||
	    (o->policy == THP_POLICY_NOHUGE && !(got & PR_THP_DISABLE_EXCEPT_ADVISED))) {
		report_set_detail("PR_GET_THP_DISABLE does not show the policy just set");
		return -EIO;
	}
	o->backend_used = THP_BACKEND_PRCTL_DISABLE;
	o->persistent = true;
	return 0;
}

/*
 * Declared RFC prctl numbers: the posted pair, or both above every
 * mainline prctl, and not the same.  Checked before any system call.
 */
static int validate_rfc_prctl(const struct thp_default_opts *o)
{
	int set, get;

	if (!(o->flags & THP_DEFAULT_F_RFC_PRCTL))
		return 0;
	rfc_prctl_numbers(o, &set, &get);
	if (set == RFC_PR_SET_THP_POLICY_POSTED && get == RFC_PR_GET_THP_POLICY_POSTED)
		return 0;
	if (set <= MAINLINE_PRCTL_MAX || get <= MAINLINE_PRCTL_MAX || set == get) {
		report_set_detail("RFC prctl numbers %d/%d refused: options up to %d are mainline "
				  "prctls; only the RFC's own 78/79, or two distinct numbers above "
				  "%d, are accepted", set, get, MAINLINE_PRCTL_MAX, MAINLINE_PRCTL_MAX);
		return -EINVAL;
	}
	return 0;
}

static int validate_default_opts(struct thp_default_opts *o)
{
	int err = opts_check(o, sizeof(*o), THP_DEFAULT_OPTS_SIZE_VER0);

	if (!err)
		err = validate_flags_backend(o->flags, DEFAULT_FLAGS, o->backend);
	return err ? err : validate_rfc_prctl(o);
}

static int set_default_locked(struct thp_default_opts *o)
{
	const struct thp_caps *c;
	preload_control_fn preload;
	bool want_persistent, preload_in_env;
	long prev_disable, prev_rfc = -1;
	int set = 0, get = 0, err = -EOPNOTSUPP;
	int advice;

	report_clear_detail();
	err = validate_default_opts(o);
	if (err)
		return ret_errno(err);
	if (o->policy >= THP_POLICY_COUNT) {
		report_set_detail("unknown policy %u", o->policy);
		return ret_errno(-EINVAL);
	}
	if (o->pidfd != THP_SELF) {
		report_set_detail("no kernel interface sets another process's default THP "
				  "policy; run it under thpctl or have it call thp_set_default()");
		return ret_errno(o->pidfd < 0 ? -EBADF : -EOPNOTSUPP);
	}
	want_persistent = o->flags & THP_DEFAULT_F_REQUIRE_PERSISTENT;
	/*
	 * Under libthp-preload.so new mappings get MADV_HUGEPAGE from the
	 * preload, not the kernel: it is switched with the policy below.  One
	 * loaded other than through LD_PRELOAD would be back in exec()ed
	 * children, so SYSTEM/NOHUGE/NEVER cannot persist then.
	 */
	preload = preload_control(NULL);
	preload_in_env = preload && preload_follows_env();
	if (preload && !preload_in_env && o->policy != THP_POLICY_HUGE && want_persistent) {
		report_set_detail("libthp-preload.so is loaded, but not through LD_PRELOAD: "
				  "exec()ed children would load it again and get HUGE");
		return ret_errno(-EOPNOTSUPP);
	}
	c = caps_get_prctl();
	advice = o->policy == THP_POLICY_HUGE ? MADV_HUGEPAGE : MADV_NOHUGEPAGE;
	o->mappings_changed = 0;
	o->persistent = false;
	err = -EOPNOTSUPP;

	/*
	 * Leave a PR_SET_THP_DISABLE from an earlier NEVER/NOHUGE behind
	 * first, or it would hide the new policy (also NOHUGE: set by the RFC
	 * prctl or PMADV, a plain disable left from NEVER would still disable
	 * THP completely); put it back on failure.
	 */
	prev_disable = c->thp_disable ? sys_prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0) : 0;
	if (o->policy != THP_POLICY_NEVER && prev_disable > 0)
		sys_prctl(PR_SET_THP_DISABLE, 0, 0, 0, 0);

	if ((o->backend == THP_BACKEND_AUTO || o->backend == THP_BACKEND_PRCTL_POLICY) &&
	    o->policy != THP_POLICY_NEVER && rfc_prctl_numbers(o, &set, &get))
		err = set_by_rfc_prctl(o, set, get, &prev_rfc);
	if (err && (o->backend == THP_BACKEND_AUTO || o->backend == THP_BACKEND_PMADV) &&
	    (o->policy == THP_POLICY_HUGE || o->policy == THP_POLICY_NOHUGE)) {
		err = set_by_pmadv(o, advice, want_persistent);
	}
	if (err && (o->backend == THP_BACKEND_AUTO || o->backend == THP_BACKEND_PRCTL_DISABLE) &&
	    o->policy != THP_POLICY_HUGE && c->thp_disable)
		err = set_by_thp_disable(o);
	if (err && o->policy == THP_POLICY_HUGE &&
	    (o->backend == THP_BACKEND_AUTO || o->backend == THP_BACKEND_EXISTING_ONLY)) {
		if (want_persistent) {
			report_set_detail("this kernel cannot keep a HUGE default across fork() and "
					  "exec(); use thpctl run --policy huge (preload)");
		} else {
			o->backend_used = THP_BACKEND_EXISTING_ONLY;
			o->persistent = false;
			err = 0;
		}
	}
	/*
	 * The RFC flag can set VM_HUGEPAGE/VM_NOHUGEPAGE as default but has no
	 * way to clear it, and an undeclared call cannot clear an RFC prctl
	 * default: SYSTEM is not reached while fresh mappings still get
	 * advice.  Say so rather than report success.
	 */
	if (!err && o->policy == THP_POLICY_SYSTEM && c->pmadv_set_default) {
		bool huge = false, nohuge = false;

		if (fresh_mapping_advice(&huge, &nohuge) == 0 && (huge || nohuge)) {
			report_set_detail("fresh mappings still get %s: a default set with "
					  "PMADV_SET_FORK_EXEC_DEFAULT cannot be cleared on this kernel%s",
					  huge ? "MADV_HUGEPAGE" : "MADV_NOHUGEPAGE",
					  o->backend_used == THP_BACKEND_PRCTL_POLICY ? "" :
					  " (nor, undeclared, an RFC PR_SET_THP_POLICY default)");
			err = -EOPNOTSUPP;
		}
	}
	/* A call that fails leaves the policy as it found it. */
	if (err) {
		if (o->backend_used == THP_BACKEND_PRCTL_POLICY && prev_rfc >= 0)
			sys_prctl(set, (unsigned long)prev_rfc, 0, 0, 0);
		if (prev_disable > 0 && sys_prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0) == 0)
			sys_prctl(PR_SET_THP_DISABLE, 1,
				  (unsigned long)prev_disable & PR_THP_DISABLE_EXCEPT_ADVISED, 0, 0);
		o->mappings_changed = 0;
		return ret_errno(err);
	}
	/*
	 * The preload follows the policy in this process, its forked and its
	 * exec()ed children.  Switched back on for HUGE, it still does not
	 * count as persistent: that reports what the kernel keeps (thpctl run
	 * adds the preload to CMD's environment when it is false).
	 */
	if (preload) {
		err = preload_switch(preload, o->policy == THP_POLICY_HUGE);
		if (err)
			return ret_errno(err);
		if (o->policy != THP_POLICY_HUGE && !preload_in_env)
			o->persistent = false;
	}
	rfc_prctl_policy = o->backend_used == THP_BACKEND_PRCTL_POLICY ? (int)o->policy : -1;
	/* HUGE / NOHUGE also advise existing mappings, as both RFCs do. */
	if ((o->policy == THP_POLICY_HUGE || o->policy == THP_POLICY_NOHUGE) &&
	    !(o->flags & THP_DEFAULT_F_NO_EXISTING) && o->backend_used != THP_BACKEND_PRCTL_DISABLE) {
		uint64_t n = 0;

		/* After those the RFC prctl's kernel advised itself (set_by_rfc_prctl()). */
		err = advise_existing(advice, &n);
		o->mappings_changed += n;
	}
	return ret_errno(err);
}

/* The preload's HUGE, unless THP is disabled completely (NEVER wins). */
static int check_preload(struct thp_default_opts *o, const struct thp_target *t)
{
	int r = preload_active(t);

	/* Another process's unreadable maps are no error of the caller's. */
	if (r < 0)
		report_clear_detail();
	if (r <= 0)
		return r;
	o->policy = THP_POLICY_HUGE;
	o->backend_used = THP_BACKEND_PRELOAD;
	o->persistent = true;
	return 1;
}

/* Policy of another process from /proc/PID/status "THP_enabled:". */
static int get_remote(struct thp_default_opts *o, const struct thp_target *t)
{
	char path[64], buf[4096];
	const char *p;
	long n;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)t->pid);
	n = sys_read_file(path, buf, sizeof(buf));
	if (n < 0)
		return n == -ENOENT ? -ESRCH : (int)n;
	/* A zombie's status still reads, without its memory's THP state. */
	if (target_alive(t))
		return -ESRCH;
	p = strstr(buf, "\nTHP_enabled:");
	if (p && !strtol(p + 13, NULL, 10)) {
		o->policy = THP_POLICY_NEVER;
		o->backend_used = THP_BACKEND_PRCTL_DISABLE;
		o->persistent = true;
		return 0;
	}
	/* The preload's HUGE shows in the maps: check the target outlived the read. */
	if (check_preload(o, t) > 0)
		return target_alive(t);
	if (!p)
		report_set_detail("this kernel's /proc/PID/status has no THP_enabled line");
	else
		/*
		 * THP_enabled: 1 covers both SYSTEM and NOHUGE (EXCEPT_ADVISED
		 * is not shown for another process): do not guess.
		 */
		report_set_detail("the kernel does not show whether another process has "
				  "PR_THP_DISABLE_EXCEPT_ADVISED: its policy is system or nohuge");
	return -EOPNOTSUPP;
}

static int get_default_locked(struct thp_default_opts *o)
{
	const struct thp_caps *c;
	struct thp_target t;
	bool huge = false, nohuge = false, declared;
	int set, get, err;
	long r;

	report_clear_detail();
	err = validate_default_opts(o);
	if (err)
		return ret_errno(err);
	err = target_open(o->pidfd, &t);
	if (err)
		return ret_errno(err);
	c = caps_get_prctl();
	o->mappings_changed = 0;
	if (!t.self) {
		err = get_remote(o, &t);
		goto out;
	}
	o->persistent = true;
	r = c->thp_disable ? sys_prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0) : 0;
	/*
	 * The preload's HUGE unless THP is disabled completely; checked before
	 * the fresh mapping, which the preload advises too.
	 */
	if (!(r > 0 && !(r & PR_THP_DISABLE_EXCEPT_ADVISED)) && check_preload(o, &t) > 0)
		goto out;
	if (r > 0) {
		o->policy = (r & PR_THP_DISABLE_EXCEPT_ADVISED) ? THP_POLICY_NOHUGE
								: THP_POLICY_NEVER;
		o->backend_used = THP_BACKEND_PRCTL_DISABLE;
		goto out;
	}
	declared = rfc_prctl_numbers(o, &set, &get);
	if (declared) {
		r = rfc_prctl_handshake(get);
		if (r == RFC_PR_THP_POLICY_DEFAULT_HUGE || r == RFC_PR_THP_POLICY_DEFAULT_NOHUGE) {
			o->policy = r == RFC_PR_THP_POLICY_DEFAULT_HUGE ? THP_POLICY_HUGE
									: THP_POLICY_NOHUGE;
			o->backend_used = THP_BACKEND_PRCTL_POLICY;
			goto out;
		}
	}
	/*
	 * A fresh mapping shows mm->def_flags, where only the RFC mechanisms
	 * put advice (PR_SET_THP_DISABLE's is read above).  Without PMADV
	 * probed or the prctl declared nothing can have set it: skip the probe
	 * mapping and its smaps read (20 times the prctl).
	 */
	if (c->pmadv_set_default || declared || rfc_prctl_policy >= 0)
		err = fresh_mapping_advice(&huge, &nohuge);
	if (err)
		goto out;
	if (huge || nohuge) {
		o->policy = huge ? THP_POLICY_HUGE : THP_POLICY_NOHUGE;
		o->backend_used = rfc_prctl_policy == (int)o->policy ? THP_BACKEND_PRCTL_POLICY
								      : THP_BACKEND_PMADV;
		/* Measured each time: the state may come from more than PMADV. */
		o->persistent = new_mm_keeps_advice(huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE) > 0;
		goto out;
	}
	o->policy = THP_POLICY_SYSTEM;
	o->backend_used = THP_BACKEND_AUTO;
out:
	target_close(&t);
	return ret_errno(err);
}

/* @call under default_lock. */
static int with_default_lock(int (*call)(struct thp_default_opts *), struct thp_default_opts *o)
{
	int r;

	default_lock_take();
	r = call(o);
	pthread_mutex_unlock(&default_lock);
	return r;
}

THP_API int thp_set_default(struct thp_default_opts *o)
{
	return with_default_lock(set_default_locked, o);
}

THP_API int thp_get_default(struct thp_default_opts *o)
{
	return with_default_lock(get_default_locked, o);
}
