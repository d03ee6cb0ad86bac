/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The environment contract between `thpctl run` and libthp-preload.so
 * (doc/preload.md): LD_PRELOAD carries the preload, GLIBC_TUNABLES carries
 * glibc.malloc.hugetlb=1, THP_PRELOAD_DEBUG=1 makes the preload talk.
 * Pure string functions, shared by both and by fuzz/fuzz_preload_env.c.
 */
#ifndef THP_PRELOAD_ENV_H
#define THP_PRELOAD_ENV_H

#include <stdbool.h>
#include <stddef.h>

#define PRELOAD_ENV_SONAME "libthp-preload.so"
#define PRELOAD_ENV_TUNABLE "glibc.malloc.hugetlb"
#define PRELOAD_ENV_TUNABLE_OURS PRELOAD_ENV_TUNABLE "=1"
/* ld.so splits LD_PRELOAD at these; glibc splits GLIBC_TUNABLES at ':'. */
#define PRELOAD_ENV_LD_SEPS " :"
#define PRELOAD_ENV_TUNABLE_SEPS ":"

/* Does the list entry @entry (@len bytes, not terminated) match? */
typedef bool (*preload_env_match)(const char *entry, size_t len);

/* A path of libthp-preload.so: the name itself, or ending in "/" + it. */
bool preload_env_is_our_preload(const char *entry, size_t len);
/* glibc.malloc.hugetlb=VALUE, any value. */
bool preload_env_is_hugetlb_tunable(const char *entry, size_t len);
/* Exactly glibc.malloc.hugetlb=1, the one thpctl adds. */
bool preload_env_is_our_tunable(const char *entry, size_t len);

/* Has @list (NULL: none) an entry, between any of @seps, that @match matches? */
bool preload_env_list_has(const char *list, const char *seps, preload_env_match match);

/*
 * @list (NULL: none) rewritten: entries (non-empty, between any of @seps)
 * that @drop matches are left out, @first goes in front and @last at the
 * end (either may be NULL or empty: none), all joined with ':'.  A malloc()ed string,
 * empty when nothing is left (the caller then unsets the variable), or
 * NULL with errno ENOMEM.
 */
char *preload_env_list_edit(const char *list, const char *seps, preload_env_match drop,
			    const char *first, const char *last);

/* THP_PRELOAD_DEBUG's value (NULL: unset) turns debugging on: "1" only. */
bool preload_env_debug(const char *value);

#endif
