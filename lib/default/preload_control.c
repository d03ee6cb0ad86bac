// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libthp-preload.so (thpctl run --policy huge, doc/preload.md) as the
 * default policy sees it: is it loaded and on, and switching it, with the
 * environment exec()ed children inherit rewritten to match.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "default.h"
#include "internal.h"

#define PRELOAD_NAME "libthp-preload.so"
#define HUGETLB_TUNABLE "glibc.malloc.hugetlb"
#define HUGETLB_TUNABLE_ON HUGETLB_TUNABLE "=1"

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

/* Is this loaded object the preload? */
static int preload_object_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	return info->dlpi_name && is_preload_path(info->dlpi_name, strlen(info->dlpi_name));
}

/*
 * The loaded preload's control entry, or NULL when no preload is loaded
 * (or one without the entry: *@loaded tells, when not NULL).  The loader's
 * list is asked first: a dlsym() that fails allocates its error message,
 * and an allocator that maps memory for it (ASan's does) would add a
 * mapping to the caller's that thp_set_default() then advises and counts.
 */
preload_control_fn preload_control(bool *loaded)
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
bool preload_follows_env(void)
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
int preload_switch(preload_control_fn ctl, bool on)
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
int preload_active(const struct thp_target *t)
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
