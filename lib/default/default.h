/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the files of thp_set_default() / thp_get_default() share; all run under default.c's lock. */
#ifndef THP_DEFAULT_H
#define THP_DEFAULT_H

#include <stdbool.h>
#include <stdint.h>

#include "internal.h"

/* ---- default_mechanisms.c: the mechanisms, one ops struct each ---- */

/* One thp_set_default() call, as the mechanisms share it. */
struct default_set {
	struct thp_default_opts *o;
	int advice;           /* MADV_HUGEPAGE for HUGE, else MADV_NOHUGEPAGE */
	bool want_persistent; /* THP_DEFAULT_F_REQUIRE_PERSISTENT */
	int set, get;         /* the RFC prctl numbers, once its fits() found them */
	long prev_rfc;        /* the RFC prctl's policy before the call, or -1 */
	int err;              /* the last mechanism's error: -EOPNOTSUPP before the first */
};

struct default_mechanism_ops {
	enum thp_backend id;
	/* Can it set s->o->policy (on this kernel, as declared)?  May fill @s. */
	bool (*fits)(struct default_set *s, const struct thp_caps *c);
	/* Set it and read it back: 0, or -errno with a detail. */
	int (*set)(struct default_set *s);
};

/* Best first; the next is tried while the one before failed. */
#define DEFAULT_MECHANISMS 4
extern const struct default_mechanism_ops *const default_mechanisms[DEFAULT_MECHANISMS];

/* The RFC prctl numbers, if the caller or the build declared them; else false. */
bool default_mechanisms_rfc_numbers(const struct thp_default_opts *o, int *set, int *get);
/* PR_GET_THP_POLICY with number @get: 0, 1 or 2, else -EOPNOTSUPP with a detail. */
long default_mechanisms_rfc_handshake(int get);

/* ---- default_probe.c: fresh mappings and the probe children ---- */

/* PMADV_SET_FORK_EXEC_DEFAULT on the calling process, touching none of its mappings. */
int default_probe_pmadv_set(int advice);

/* The advice a fresh anonymous mapping gets (mm->def_flags).  0 or -errno. */
int default_probe_fresh_advice(bool *huge, bool *nohuge);
/* Fresh mappings get @advice, and not the opposite one too. */
bool default_probe_only_advice(int advice, bool huge, bool nohuge);
/* Does a new mm get @advice on fresh mappings?  1, 0 or -errno (a child tells). */
int default_probe_new_mm_keeps(int advice);
/*
 * Does a PMADV default of @advice survive fork() and exec()?  1, 0, or
 * -EOPNOTSUPP (mixed with another default); @clean: no advice on fresh
 * mappings now, so a cached answer holds.
 */
int default_probe_pmadv_persists(int advice, bool clean);

/* ---- advise_existing.c: the pass over the caller's existing mappings ---- */

/* The caller's mappings with neither MADV_HUGEPAGE nor MADV_NOHUGEPAGE. */
int advise_existing_count_unadvised(uint64_t *n);
/* Advise the existing mappings not advised the other way; *changed: how many changed. */
int advise_existing(int advice, uint64_t *changed);

/* ---- preload_control.c: libthp-preload.so ---- */

typedef int (*preload_control_fn)(int op);

/* The loaded preload's control entry, or NULL (*@loaded, if not NULL: is one loaded). */
preload_control_fn preload_control(bool *loaded);
/* Do exec()ed children load the preload only through LD_PRELOAD? */
bool preload_follows_env(void);
/* Switch the preload on or off here and in the environment children inherit; 0 or -ENOMEM. */
int preload_switch(preload_control_fn ctl, bool on);
/* Is the preload loaded in @t and switched on?  1, 0 or -errno. */
int preload_active(const struct thp_target *t);

/* ---- inject_default.c: another process's default, set by that process ---- */

/* NEVER / NOHUGE / SYSTEM of @t through the inject backend; 0 or -errno with a detail. */
int inject_set_default(struct thp_default_opts *o, const struct thp_target *t);
/* @t's own PR_GET_THP_DISABLE, read by @t: NEVER, NOHUGE or SYSTEM; 0 or -errno. */
int inject_get_default(struct thp_default_opts *o, const struct thp_target *t);

#endif /* THP_DEFAULT_H */
