/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the parts of thp_model (the checker around the reference model)
 * share: the case, the snapshot, the run and the kernel's facts.
 */
#ifndef THP_MODEL_CHECKER_H
#define THP_MODEL_CHECKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "helpers.h"
#include "model.h"

#ifndef MADV_GUARD_INSTALL
#define MADV_GUARD_INSTALL 102 /* 6.13 */
#endif
#ifndef __NR_mseal
#define __NR_mseal 462 /* 6.10 */
#endif
#define KPF_THP 22

/* What the kernel has (run.c's probe()), set once in main(). */
extern struct thp_probe_info pinfo;
extern size_t page;
extern uint64_t pmd;
extern bool have_guard, have_mseal, have_pfn;

/* ---- the case: data, so that it can be shrunk and printed ---- */

enum kind { K_ANON, K_ANON_NONE, K_ANON_RO, K_SHARED, K_FILE, K_MEMFD, K_MREMAP, K_NR };
extern const char *const kind_names[K_NR];

#define MAX_MAPS 48
#define MAX_RANGES 10000

struct map_spec {
	uint64_t off, pages;      /* in pages from the arena start */
	uint8_t kind;
	uint8_t pre;              /* 0, or advice applied at build time to a part */
	uint64_t pre_off, pre_len;
	uint32_t populate_every;  /* touch every Nth page (0: none) */
	uint64_t guard_page;      /* 1 + page index of a guard region, 0: none */
	bool seal;
	bool present;             /* false once shrinking turned it into a hole */
};

enum req { REQ_RANGES, REQ_ALL, REQ_POLICY };

#define MAX_STEPS 8

struct policy_step {
	bool set;
	uint32_t policy, flags;
};

struct case_spec {
	uint64_t seed;
	uint64_t arena_pages;
	uint64_t align_pages;     /* arena start, in pages past a PMD boundary */
	size_t nr_maps;
	struct map_spec maps[MAX_MAPS];
	int req, advice;
	uint32_t flags;
	size_t nr_ranges;
	struct thp_range *ranges; /* addr: offset from the arena start */
	size_t nr_steps;          /* REQ_POLICY: set/get calls in order */
	struct policy_step steps[MAX_STEPS];
};

/* generator.c */
void gen_case(struct case_spec *c, uint64_t seed, bool big_ok);
void print_case(FILE *f, const struct case_spec *c);

/* layout.c: map the case's layout; its arena start, or 0 when the kernel refused a step. */
uint64_t build(const struct case_spec *c);

/* ---- the truth: /proc/PID/smaps, pagemap and kpageflags ---- */

struct vma {
	uint64_t start, end;
	bool hg, nh, anon_private_rw, vsyscall;
	int eligible; /* THPeligible, -1 if absent */
};

struct snapshot {
	struct vma *v;
	size_t n, cap;
};

/* The snapshots every part reads into: now, and before the call. */
extern struct snapshot snap, prev;
extern int pagemap_fd, kpageflags_fd;
/*
 * The process whose smaps snap_read() reads (and whose pagemap pagemap_fd
 * is): 0 for the calling one; in remote mode (remote.c) the target, or a
 * child the target forked.
 */
extern pid_t truth_pid;

int snap_read(struct snapshot *s);
bool pfn_of(uint64_t addr, uint64_t *pfn);
bool extent_huge(uint64_t addr);
void arena_from_snap(struct model_arena *a, const struct snapshot *s);
bool overlaps_snapshot(const struct snapshot *s, const struct vma *v);
const struct vma *snap_at(uint64_t addr);

/* ---- one run: one backend, one walk mode, in its own child ---- */

struct run_cfg {
	unsigned int backend;
	bool text_walk;
	bool fork_check; /* also compare a forked child's smaps with the model */
	int pidfd;       /* the call's target: THP_SELF, or remote mode's target */
};

/* run.c: one configuration of a case, run in a child (run_config_in_child()). */
typedef void (*config_runner)(const struct case_spec *c, struct run_cfg *r, uint64_t base,
			      int wfd);
void run_config_in_child(config_runner fn, const struct case_spec *c, struct run_cfg *r,
			 uint64_t base, const char *prefix, int wfd);

/* compare.c: the first divergence of a run, and the checks that find one (false). */
extern char why[1024];

bool __attribute__((format(printf, 1, 2))) diverge(const char *fmt, ...);
bool check_smaps(const struct model_arena *a, const char *where);
bool check_forked(const struct model_arena *a);
bool run_ranges(const struct case_spec *c, const struct run_cfg *r, struct model_arena *a);
bool run_all(const struct case_spec *c, const struct run_cfg *r, struct model_arena *a);
bool run_refused(const struct case_spec *c, const struct run_cfg *r, struct model_arena *a);

/* policy.c */
extern char *self_exe_path;
extern struct model_kernel kern;
extern struct model_policy_state start_state;

int measure_kernel(void);
int report_state(void);
bool run_policy(const struct case_spec *c, uint64_t arena_base);
/* The parts remote mode's policy sequences share (remote.c). */
extern uint64_t judged_lo, judged_hi;
int status_thp_enabled(void);
void children_state(int *forked, int *execed);
bool check_existing(size_t step, unsigned int advises, uint64_t *appeared);

/* run.c */
int run_case(const struct case_spec *c, char *msg, size_t cap);
int probe(void);

/*
 * remote.c: remote mode (THP_MODEL_REMOTE=1), the case's layout in a target
 * child and the calls made on its pidfd.  remote_forked() has the target
 * fork a child that waits, and returns its pid (-1: none); remote_release()
 * lets it exit.
 */
extern bool remote_mode;
int remote_run_case(const struct case_spec *c, char *msg, size_t cap);
pid_t remote_forked(void);
void remote_release(pid_t child);

/* shrink.c */
void shrink(struct case_spec *c, char *msg, size_t cap);

#endif
