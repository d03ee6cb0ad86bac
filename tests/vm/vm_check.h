// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * What the QEMU guest's checks share: the VMTEST pass/fail lines, what this
 * kernel should offer (from its version, not from libthp's probe), the
 * global THP mode, /proc/PID/smaps read without libthp's parser, and
 * forked or exec'd children that report through a pipe.
 */
#ifndef THP_VM_CHECK_H
#define THP_VM_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <thp/thp.h>

#include "../read_file.h"

#define MiB (1024ul * 1024ul)
#define PMD (2 * MiB)

enum flavour { FL_STOCK, FL_RFC, FL_RFC_FIXED, FL_DISTRO };
extern enum flavour flavour;
extern const char *flavour_name;
extern bool rfc; /* rfc or rfc-fixed */
extern char kernel_label[64];
extern int nfail;
extern struct thp_probe_info pinfo; /* filled by check_probe() */

/*
 * What this kernel offers, from its version alone (and the flavour for the
 * RFC backport of "any advice on self"): the table in
 * shared/kernels/distro/README.md, measured there with raw system calls.
 */
struct kernel_expect {
	int major, minor;
	bool procmap_query;     /* 6.11 */
	bool collapse;          /* MADV_COLLAPSE, 6.1 */
	bool pm_self_huge;      /* process_madvise(self, MADV_HUGEPAGE), 6.13 */
	bool pidfd_self;        /* PIDFD_SELF, 6.13 */
	bool except_advised;    /* PR_THP_DISABLE_EXCEPT_ADVISED, 6.18 */
	bool prctl78_taken;     /* PR_FUTEX_HASH, 6.16 */
	bool prctl79_taken;     /* PR_RSEQ_SLICE_EXTENSION, 7.2 */
};
extern struct kernel_expect kx;
void kernel_expect_init(void);

/* The global THP mode the kernel booted with, and the one now in force. */
extern unsigned int boot_mode, cur_mode;
extern const char *const mode_names[3];
unsigned int sysfs_mode(void);
int set_sysfs_mode(unsigned int m);

/* ---- output: "VMTEST PASS name" or "VMTEST FAIL name: why" ---- */
void pass(const char *name);
void __attribute__((format(printf, 2, 3))) fail(const char *name, const char *fmt, ...);

/* A check accumulates its first failure reason; report once at the end. */
struct check {
	const char *name;
	char why[512];
	bool failed;
};
void __attribute__((format(printf, 2, 3))) cfail(struct check *c, const char *fmt, ...);
void cdone(struct check *c);

/* ---- /proc/self/smaps (independent of libthp's parser) ---- */
struct smap_info {
	bool found;
	bool hg, nh;
	unsigned long anon_huge_kb;
	unsigned long start, end;
};
extern char smaps_buf[1 << 20];
struct smap_info smap_at(uintptr_t addr);
int fresh_flags(bool *hg, bool *nh);
uintptr_t map_pmd_aligned(size_t len);
long fresh_huge_kb(bool advise);
unsigned long huge_kb_of(pid_t pid, uintptr_t addr);
/* 10 MiB at a 2 MiB-aligned base with [base+4M, base+6M) unmapped. */
uintptr_t layout_make(void);
void layout_free(uintptr_t base);

/* The backends of a range call, in the order the checks compare them. */
#define NR_RANGE_BACKENDS 3
extern const unsigned int range_backends[NR_RANGE_BACKENDS];

/* ---- children ---- */
int in_child(void (*fn)(void *), void *arg);
long run_piped(void (*fn)(int, void *), void *arg, void *out, size_t len, int *status);
int run_piped_exact(void (*fn)(int, void *), void *arg, void *out, size_t len);
int run_capture(char *const argv[], char *const envp[], char *out, size_t cap);
long kv_long(const char *out, const char *key);
uintptr_t populated_8m(void);
pid_t start_populated_child(uintptr_t *base);
void stop_child(pid_t pid);

/* "/init --child [rfc]": thp_get_default() and a fresh mapping, as an exec'd program sees them. */
struct child_report {
	int rc;
	int policy;
	int hg, nh;
	int disabled;
};
int exec_child(bool rfc_flag, struct child_report *cr);
int child_main(int argc, char **argv);
bool disable_fits(unsigned int policy, int disabled);
void check_children(struct check *c, const char *name, unsigned int policy, bool rfc_flag,
		    bool by_disable);

/* ---- the guest-only checks, one file each (named after the function's subject) ---- */
void check_abi(void);                      /* abi_struct_sizes.c */
void check_probe(void);                    /* probe_matches_kernel.c */
void check_apply_ranges(void);             /* apply_ranges_backends.c */
void report_auto_backends(void);
void check_apply_all(void);                /* apply_all_backends.c */
void check_apply_all_merged_counts(void);
void check_set_default(void);              /* set_default_modes.c */
void check_set_default_stock(void);
void check_collapse(void);                 /* collapse_self_remote.c */
void check_inject_policies(void);          /* inject_policies.c (64-bit runs) */
void check_inject_32bit(const char *target32);
void check_rfc_interfaces(void);           /* rfc_interfaces.c */
void check_policy_sequences(void);         /* rfc_policy_sequences.c */
/* thpctl_preload.c: thpctl and the preload, dynamically linked, from /vmtest.conf. */
void check_thpctl(const char *thpctl, const char *preload, const char *child_report);
/* mthp_sizes.c: bytes by folio size, each size alone; thpctl status / collapse */
void check_mthp(const char *thpctl, const char *preload, const char *toucher);

/* model_seeds.c: the host's thp_model with @cases cases from seed @first (NULL: 1),
 * then (unless @only) the seeds of divergences found in guests and a few remote
 * cases; with @only just the @cases, in remote mode if @remote. */
void check_model(const char *model, const char *cases, const char *first, bool only,
		 bool remote);

#endif
