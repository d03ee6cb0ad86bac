// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * thp_model: the generator and checker around the reference model.
 *
 * Each case (one seed) builds a random layout in a fresh child process
 * (holes, PROT_NONE, read-only, shared anon, file and memfd mappings,
 * mremap()ed and merged neighbours, guard regions and mseal() where the
 * kernel has them, now and then one mapping past the 2 GiB per-call limit,
 * partly populated memory for COLLAPSE) and a random request (1 to 10,000
 * ranges x advice x flags, or thp_apply_all()).  The request then runs in a
 * child per backend the kernel offers (auto and each forced one) and per
 * VMA walk mode (PROCMAP_QUERY, and the maps text forced through seccomp),
 * and the checker compares:
 *   - the library's return value, every report field and the counts with
 *     the model (model.c), fed the layout read from /proc/self/smaps just
 *     before the call;
 *   - the model's VmFlags (hg/nh) for every page, and THPeligible, with
 *     /proc/self/smaps after the call, in the process and (in one
 *     configuration a case, a different one from seed to seed) in a forked
 *     child;
 *   - for COLLAPSE, the truth of each extent (PMD-mapped huge page or not,
 *     from pagemap and kpageflags) against the report;
 *   - for a policy sequence (1 to 8 thp_set_default()/thp_get_default()
 *     calls, with and without REQUIRE_PERSISTENT, NO_EXISTING and the RFC
 *     prctl declared), each answer, PR_GET_THP_DISABLE, the RFC prctl's
 *     policy, every existing mapping's advice and a fresh mapping's after
 *     each call, and at the end the state a forked and an exec()ed child
 *     get; the kernel's part (does a new mm keep a PMADV hg default, does
 *     the RFC prctl advise existing mappings) is measured with raw calls.
 * A divergence prints the seed and a shrunk reproducer (fewest mappings,
 * fewest ranges, fewest calls), and is replayed with THP_MODEL_SEED=<seed>.
 *
 * Remote mode (--remote as the first argument, or THP_MODEL_REMOTE=1;
 * remote.c): the same cases, the layout built in a target child that waits
 * in read(), the requests made on its pidfd through the inject backend and
 * the kernel's paths for another process, checked on the target's smaps,
 * a child it forks, and what it and its forked and exec()ed children read.
 *
 * Environment: THP_MODEL_CASES (default: argv[1], else 200),
 * THP_MODEL_FIRST_SEED (default 1), THP_MODEL_SEED (replay one case),
 * THP_MODEL_BIG=0 (no 2 GiB mappings), THP_MODEL_VERBOSE=1.
 *
 * The parts: generator.c (the case from a seed), layout.c (its mappings),
 * snapshot.c (smaps, pagemap), compare.c (one call against the model),
 * policy.c (policy sequences), run.c (the runs in children), remote.c
 * (remote mode), shrink.c.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "checker.h"

struct thp_probe_info pinfo;
size_t page;
uint64_t pmd;
bool have_guard, have_mseal, have_pfn;
static bool verbose;

enum { KIND_RANGES, KIND_MANY, KIND_BIG, KIND_COLLAPSE, KIND_ALL, KIND_POLICY, KIND_NR };
static const char *const kind_label[KIND_NR] = { "ranges", "100+ ranges", "past 2 GiB",
						 "COLLAPSE", "apply_all", "policy" };

/* The case's first mapping is past the 2 GiB per-call limit (gen_case()). */
static bool past_2gib(const struct case_spec *c)
{
	return c->maps[0].pages * page > (2ULL << 30);
}

static int kind_of(const struct case_spec *c)
{
	if (c->req == REQ_POLICY)
		return KIND_POLICY;
	if (c->req == REQ_ALL)
		return past_2gib(c) ? KIND_BIG : KIND_ALL;
	if (c->advice == THP_ADVICE_COLLAPSE)
		return KIND_COLLAPSE;
	if (past_2gib(c))
		return KIND_BIG;
	return c->nr_ranges >= 100 ? KIND_MANY : KIND_RANGES;
}

static uint64_t env_u64(const char *name, uint64_t dflt)
{
	const char *v = getenv(name);

	return v && *v ? strtoull(v, NULL, 0) : dflt;
}

int main(int argc, char **argv)
{
	char *self = argv[0];
	uint64_t cases;
	uint64_t first = env_u64("THP_MODEL_FIRST_SEED", 1);
	bool replay = getenv("THP_MODEL_SEED") != NULL;
	/* valgrind's address space manager is not for 2 GiB mappings. */
	bool big_ok = env_u64("THP_MODEL_BIG", 1) != 0 && !under_valgrind();
	uint64_t done = 0, diverged = 0, unbuildable = 0, by_advice[32] = { 0 }, all_calls = 0;
	uint64_t many = 0, big = 0, policy_seqs = 0;
	/* Where a long run's time goes, by kind of case (see kind_of()). */
	double kind_s[KIND_NR] = { 0 };
	uint64_t kind_n[KIND_NR] = { 0 };
	struct timespec t0, t1, c0, c1;
	struct utsname u;
	char msg[1200];

	remote_mode = env_u64("THP_MODEL_REMOTE", 0) != 0;
	if (argc > 1 && !strcmp(argv[1], "--remote")) {
		remote_mode = true;
		argv++;
		argc--;
	}
	cases = env_u64("THP_MODEL_CASES", argc > 1 ? strtoull(argv[1], NULL, 0) : 200);
	page = (size_t)sysconf(_SC_PAGESIZE);
	/* Room for every mapping a case has (10,000 ranges split at most that many). */
	snap.cap = 1u << 16;
	snap.v = malloc(snap.cap * sizeof(*snap.v));
	prev.cap = snap.cap;
	prev.v = malloc(prev.cap * sizeof(*prev.v));
	if (!snap.v || !prev.v)
		return 1;
	if (argc > 1 && !strcmp(argv[1], "--report-state"))
		return report_state();
	self_exe_path = realpath("/proc/self/exe", NULL);
	verbose = env_u64("THP_MODEL_VERBOSE", 0) != 0;
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (probe()) {
		fprintf(stderr, "thp_model: thp_probe() failed\n");
		return 1;
	}
	if (measure_kernel()) {
		fprintf(stderr, "thp_model: cannot measure the kernel's default-policy behaviour\n");
		return 1;
	}
	pmd = pinfo.pmd_size ? pinfo.pmd_size : 2 * MiB;
	uname(&u);
	/* Under valgrind (.ci/valgrind) everything is many times slower. */
	if (under_valgrind() && !getenv("THP_MODEL_CASES"))
		cases = scaled((unsigned int)cases, 5);
	if (replay) {
		first = env_u64("THP_MODEL_SEED", 0);
		cases = 1;
	}
	printf("thp_model: %smode, kernel %s, THP mode %u, backends 0x%x, PROCMAP_QUERY %d, guard %d, "
	       "mseal %d, COLLAPSE truth %d; defaults: PMADV %d, RFC prctl %d, a new mm keeps "
	       "hg %d, the prctl advises existing %d, start state disable %d fresh %u; seeds %"
	       PRIu64 "..%" PRIu64 "\n", remote_mode ? "remote " : "local ", u.release,
	       pinfo.thp_mode, pinfo.backends,
	       pinfo.procmap_query, have_guard, have_mseal, have_pfn, kern.pmadv_default,
	       kern.rfc_prctl, kern.new_mm_keeps_hg, kern.prctl_advises, start_state.disable,
	       start_state.def, first, first + cases - 1);
	kpageflags_fd = open("/proc/kpageflags", O_RDONLY | O_CLOEXEC);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (uint64_t seed = first; seed < first + cases; seed++) {
		struct case_spec c;
		int r, kind;

		gen_case(&c, seed, big_ok);
		if (verbose || replay) {
			printf("seed %" PRIu64 ":\n", seed);
			print_case(stdout, &c);
		}
		kind = kind_of(&c);
		clock_gettime(CLOCK_MONOTONIC, &c0);
		r = run_case(&c, msg, sizeof(msg));
		clock_gettime(CLOCK_MONOTONIC, &c1);
		kind_s[kind] += (double)(c1.tv_sec - c0.tv_sec) +
				(double)(c1.tv_nsec - c0.tv_nsec) / 1e9;
		kind_n[kind]++;
		done++;
		by_advice[c.advice]++;
		all_calls += c.req == REQ_ALL;
		policy_seqs += c.req == REQ_POLICY;
		many += c.nr_ranges >= 100;
		big += past_2gib(&c);
		if (r == 3) {
			unbuildable++;
			fprintf(stderr, "seed %" PRIu64 ": layout not buildable on this kernel\n", seed);
		} else if (r) {
			diverged++;
			printf("DIVERGENCE seed %" PRIu64 ": %s\n", seed, msg);
			shrink(&c, msg, sizeof(msg));
			printf("  shrunk reproducer: %s\n", msg);
			print_case(stdout, &c);
			printf("  replay: THP_MODEL_SEED=%" PRIu64 "%s %s\n", seed,
			       remote_mode ? " THP_MODEL_REMOTE=1" : "", self);
		}
		free(c.ranges);
		/* A long run says how far it got (it may be stopped before the end). */
		if (done % 1000 == 0) {
			clock_gettime(CLOCK_MONOTONIC, &t1);
			printf("thp_model: progress: %" PRIu64 " cases, %" PRIu64
			       " divergences, %.0f s\n", done, diverged,
			       (double)(t1.tv_sec - t0.tv_sec));
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("thp_model: time by kind:");
	for (int k = 0; k < KIND_NR; k++)
		printf(" %s %" PRIu64 " in %.1f s%s", kind_label[k], kind_n[k], kind_s[k],
		       k + 1 < KIND_NR ? "," : "\n");
	printf("thp_model: kernel %s%s: %" PRIu64 " cases (HUGE %" PRIu64 ", NOHUGE %" PRIu64
	       ", COLLAPSE %" PRIu64 "; %" PRIu64 " thp_apply_all, %" PRIu64 " policy sequences, %" PRIu64 " with 100+ ranges, %"
	       PRIu64 " past 2 GiB) in %.1f s: %" PRIu64
	       " divergences, %" PRIu64 " layouts not buildable\n", u.release,
	       remote_mode ? " remote" : "", done,
	       by_advice[THP_ADVICE_HUGE], by_advice[THP_ADVICE_NOHUGE],
	       by_advice[THP_ADVICE_COLLAPSE], all_calls, policy_seqs, many, big,
	       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9, diverged,
	       unbuildable);
	return diverged || unbuildable ? 1 : 0;
}
