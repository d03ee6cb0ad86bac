/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The reference model of libthp's documented semantics (doc/reference.md "Error
 * semantics", thp.h, thp_apply_ranges(3), thp_apply_all(3),
 * thp_set_default(3)), written from the documents alone: no code of the
 * library's engine is used here.
 *
 * The memory it reasons about is an arena of pages, each unmapped or
 * mapped with its VmFlags hg/nh.  Given that state, a request and the
 * kernel's capabilities, it says what the call returns, every report
 * field, the counts of thp_apply_all() and the VmFlags every page ends
 * with.  For COLLAPSE, where the kernel decides, it says per extent what
 * is allowed and takes the truth (is the extent huge now?) as an input.
 * For default policies it keeps the kernel state a policy lives in
 * (PR_SET_THP_DISABLE, the PMADV default in mm->def_flags, the RFC prctl's
 * policy) and says what each call answers and leaves.
 */
#ifndef THP_MODEL_H
#define THP_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <thp/thp.h>

/* One page of the arena. */
enum {
	MP_MAPPED = 1u << 0,
	MP_HG = 1u << 1,       /* VmFlags hg */
	MP_NH = 1u << 2,       /* VmFlags nh */
	MP_VMA_START = 1u << 3, /* a mapping (VMA) starts at this page */
};

struct model_arena {
	uint64_t base;       /* address of page 0 */
	size_t nr_pages;
	size_t page_size;
	uint64_t pmd_size;
	uint8_t *page;       /* nr_pages entries of MP_* */
};

/* What the model needs from thp_probe(). */
struct model_caps {
	uint32_t backends;   /* thp_probe_info.backends */
};

/* The backend AUTO must pick for HUGE/NOHUGE on the own process. */
unsigned int model_auto_backend(const struct model_caps *c);

/*
 * COLLAPSE truth for one whole extent (by its address), read by the caller
 * from the kernel: PMD-mapped before the call, or only after it, or not.
 */
enum model_extent { MODEL_EXT_NOT_HUGE, MODEL_EXT_WAS_HUGE, MODEL_EXT_BECAME_HUGE };
typedef enum model_extent (*model_extent_fn)(void *arg, uint64_t extent);

/* In a predicted report: "the kernel chose; any of EINVAL, EAGAIN, EBUSY, ENOMEM". */
#define MODEL_ERROR_KERNEL (-1)

/*
 * What the kernel's truth after the call cannot decide.  With SKIP_ERRORS,
 * overlapping COLLAPSE ranges may ask for one extent more than once; if it
 * became huge during the call, the last ask surely succeeded, but an
 * earlier one may have failed (the kernel refused, or the library passed
 * over an extent without a page after a failure in its mapping) before a
 * later one collapsed it.  Those asks are "maybe": the report may count
 * them advised or not, and may name one of them as its first failure.
 */
#define MODEL_MAYBE_FAILS 16
struct model_slack {
	uint64_t maybe_bytes;                 /* maybe-asks' bytes: 0..this more may be advised */
	size_t nr_fail;                       /* maybe-asks before the first sure failure */
	uint64_t fail[MODEL_MAYBE_FAILS];     /* ...their addresses (the first ones) */
};

/*
 * thp_apply_ranges(ranges, n, {advice, flags}) through @backend on the
 * arena @a, which it updates to the state the call leaves.  Fills
 * reports[n] (and slack[n], if not NULL) and returns what the call must
 * return when no maybe-ask failed.  For COLLAPSE, @extent (with @arg)
 * says what became of each extent; one that is not huge, and the kernel
 * was free to refuse, fails with MODEL_ERROR_KERNEL in the prediction.
 */
int model_apply_ranges(struct model_arena *a, const struct thp_range *ranges, size_t n,
		       int advice, uint32_t flags, unsigned int backend,
		       struct thp_report *reports, struct model_slack *slack,
		       model_extent_fn extent, void *arg);

/* Counts of thp_apply_all() for a process with these mappings. */
struct model_all {
	int ret;
	uint64_t seen, advised, skipped, bytes;
	size_t failures;
};

/*
 * thp_apply_all(HUGE or NOHUGE, flags): every mapping of the process
 * (@nr_vmas of them, @bytes in all, as /proc/PID/maps listed them before
 * the call, [vsyscall] aside) is advised; the arena pages take the advice.
 */
void model_apply_all(struct model_arena *a, size_t nr_vmas, uint64_t bytes, int advice,
		     struct model_all *out);

/* ---- default policies (thp_set_default(3), thp_get_default(3)) ---- */

/* The process's PR_SET_THP_DISABLE state, as PR_GET_THP_DISABLE returns it. */
enum { MODEL_THP_ENABLED = 0, MODEL_THP_DISABLED = 1, MODEL_THP_EXCEPT_ADVISED = 3 };

/* Advice as VmFlags show it: a bit set. */
enum { MODEL_HG = 1u << 0, MODEL_NH = 1u << 1 };

/* What the kernel offers for default policies (measured by the checker). */
struct model_kernel {
	bool except_advised;  /* PR_THP_DISABLE_EXCEPT_ADVISED (6.18+) */
	bool pmadv_default;   /* PMADV_SET_FORK_EXEC_DEFAULT (an RFC kernel) */
	bool rfc_prctl;       /* PR_SET_THP_POLICY at 78/79 (an RFC kernel) */
	bool new_mm_keeps_hg; /* a new mm keeps a MADV_HUGEPAGE default (the RFC's fix) */
	bool prctl_advises;   /* PR_SET_THP_POLICY advises existing mappings (the RFC's fix) */
	bool status_thp_enabled; /* /proc/PID/status has THP_enabled: */
};

/* The default-policy state of a process's mm. */
struct model_policy_state {
	int disable;        /* MODEL_THP_* */
	unsigned int def;   /* mm->def_flags advice from PMADV: MODEL_HG, MODEL_NH or 0 */
	uint32_t rfc;       /* the RFC prctl's policy: SYSTEM, HUGE or NOHUGE */
	int last_prctl;     /* the policy the process last set through the RFC prctl, or -1 */
};

/* The advice a fresh mapping gets (MODEL_HG | MODEL_NH). */
unsigned int model_fresh(const struct model_policy_state *s);

/* The state of a new mm, after fork() or execve(). */
void model_new_mm(const struct model_kernel *k, const struct model_policy_state *s,
		  struct model_policy_state *child);

struct model_policy_answer {
	int ret;
	uint32_t policy;        /* get: the answer */
	uint32_t backend_used;
	bool persistent;
	/* set: existing mappings without advice get this advice (MODEL_HG/NH), or 0 */
	unsigned int advises_existing;
};

/*
 * One thp_set_default() (@set) or thp_get_default() of the calling process
 * with backend AUTO; updates *s.
 */
void model_policy_step(const struct model_kernel *k, struct model_policy_state *s, bool set,
		       uint32_t policy, uint32_t flags, struct model_policy_answer *out);

/*
 * The same call on another process (a pidfd): thp_set_default() through
 * THP_BACKEND_INJECT, thp_get_default() with AUTO; updates *s.
 */
void model_remote_policy_step(const struct model_kernel *k, struct model_policy_state *s,
			      bool set, uint32_t policy, uint32_t flags,
			      struct model_policy_answer *out);

#endif
