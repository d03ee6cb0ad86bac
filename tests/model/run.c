// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * thp_model's runs: one case in its own process, each backend and walk
 * mode in a child of it, and the probe of what the kernel has.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "checker.h"

static bool backend_offered(const struct case_spec *c, unsigned int be)
{
	/* COLLAPSE goes through mainline process_madvise() even where HUGE cannot. */
	if (c->advice == THP_ADVICE_COLLAPSE && be == THP_BACKEND_PROCESS_MADVISE)
		return pinfo.pidfd_self || (pinfo.backends >> be) & 1 || pinfo.madvise_collapse;
	return be == THP_BACKEND_AUTO || ((pinfo.backends >> be) & 1);
}

/* In a child: one configuration; exit 0 when library, model and kernel agree. */
static void __attribute__((noreturn)) run_child(const struct case_spec *c, struct run_cfg *r,
						uint64_t base, int wfd)
{
	struct model_arena a = { .base = base, .nr_pages = c->arena_pages, .page_size = page,
				 .pmd_size = pmd };
	bool ok;

	if (r->text_walk && force_text_walk()) {
		diverge("cannot force the text walk: %s", strerror(errno));
		goto out;
	}
	/* Opened here: /proc/self is the process that opens it. */
	pagemap_fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	a.page = malloc(a.nr_pages);
	if (!a.page) {
		diverge("out of memory");
		goto out;
	}
	if (c->req == REQ_POLICY)
		ok = run_policy(c, base);
	else if (!backend_offered(c, r->backend))
		ok = run_refused(c, r, &a);
	else if (c->req == REQ_ALL)
		ok = run_all(c, r, &a) && check_smaps(&a, "after the call") &&
		     (!r->fork_check || check_forked(&a));
	else
		ok = run_ranges(c, r, &a) && check_smaps(&a, "after the call") &&
		     (!r->fork_check || check_forked(&a));
	(void)ok;
out:
	if (why[0] && write(wfd, why, strlen(why)) < 0)
		_exit(2);
	_exit(why[0] ? 1 : 0);
}

/*
 * One configuration of a case in a child of the case's process: returns
 * when it agreed with the model; otherwise writes "@prefix backend B, W
 * walk: why" to @wfd and exits 1.
 */
void run_config_in_child(config_runner fn, const struct case_spec *c, struct run_cfg *r,
			 uint64_t base, const char *prefix, int wfd)
{
	char msg[1200];
	int p[2], st;
	pid_t pid;
	ssize_t n;

	if (pipe(p))
		_exit(2);
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		fn(c, r, base, p[1]);
	}
	close(p[1]);
	n = read(p[0], why, sizeof(why) - 1);
	why[n > 0 ? n : 0] = 0;
	close(p[0]);
	waitpid(pid, &st, 0);
	if (WIFEXITED(st) && !WEXITSTATUS(st))
		return;
	snprintf(msg, sizeof(msg), "%sbackend %s, %s walk: %s", prefix, thp_backend_name(r->backend),
		 r->text_walk ? "maps text" : "PROCMAP_QUERY", why[0] ? why : "the run died");
	if (write(wfd, msg, strlen(msg)) < 0)
		_exit(2);
	_exit(1);
}

static const unsigned int all_backends[] = { THP_BACKEND_AUTO, THP_BACKEND_PMADV,
					     THP_BACKEND_PROCESS_MADVISE, THP_BACKEND_MADVISE };

/* The case's own process: build, then every configuration in a child of it. */
static void case_child(const struct case_spec *c, int wfd)
{
	uint64_t base = build(c);
	size_t nr_runs = 0, fork_run;
	char msg[1200];

	if (!base) {
		snprintf(msg, sizeof(msg), "BUILD the layout could not be built");
		if (write(wfd, msg, strlen(msg)) < 0)
			_exit(2);
		_exit(3);
	}
	/*
	 * A forked child inherits the mappings, flags and all: its smaps is
	 * compared with the model in one configuration a case, a different
	 * one from seed to seed (each fork and smaps read cost a TCG guest
	 * about 3 ms; in every configuration they were a third of its time).
	 */
	for (size_t b = 0; b < sizeof(all_backends) / sizeof(all_backends[0]); b++)
		nr_runs += backend_offered(c, all_backends[b]) ? 1 + !!pinfo.procmap_query : 0;
	fork_run = nr_runs ? (size_t)(c->seed % nr_runs) : 0;
	nr_runs = 0;
	for (size_t b = 0; b < sizeof(all_backends) / sizeof(all_backends[0]); b++)
		for (int text = 0; text < 2; text++) {
			struct run_cfg r = { all_backends[b], text, false, THP_SELF };

			/* Without PROCMAP_QUERY the text walk is the only one. */
			if (!text && !pinfo.procmap_query)
				continue;
			/* A policy sequence is the process's own: once, through AUTO. */
			if (c->req == REQ_POLICY && (b || text != !pinfo.procmap_query))
				continue;
			if (backend_offered(c, r.backend))
				r.fork_check = nr_runs++ == fork_run;
			run_config_in_child(run_child, c, &r, base, "", wfd);
		}
	_exit(0);
}

/* 0 agree, 1 divergence (its message in @msg), 3 layout not buildable. */
int run_case(const struct case_spec *c, char *msg, size_t cap)
{
	int p[2], st;
	pid_t pid;
	ssize_t n;

	if (remote_mode)
		return remote_run_case(c, msg, cap);
	msg[0] = 0;
	if (pipe(p))
		return 1;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		case_child(c, p[1]);
	}
	close(p[1]);
	n = read(p[0], msg, cap - 1);
	msg[n > 0 ? n : 0] = 0;
	close(p[0]);
	waitpid(pid, &st, 0);
	if (WIFEXITED(st) && WEXITSTATUS(st) == 3)
		return 3;
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}

/* ---- what the kernel has ---- */

static void probe_child(int wfd)
{
	struct {
		struct thp_probe_info pi;
		bool guard, mseal, pfn;
	} res;
	void *p;

	memset(&res, 0, sizeof(res));
	res.pi.sz = sizeof(res.pi);
	if (thp_probe(&res.pi))
		_exit(1);
	p = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		_exit(1);
	*(volatile char *)p = 1;
	res.guard = madvise((char *)p + page, page, MADV_GUARD_INSTALL) == 0;
	res.mseal = syscall(__NR_mseal, p, 2 * page, 0) == 0;
	pagemap_fd = open("/proc/self/pagemap", O_RDONLY);
	{
		uint64_t pfn;

		res.pfn = pagemap_fd >= 0 && pfn_of((uint64_t)(uintptr_t)p, &pfn) &&
			  access("/proc/kpageflags", R_OK) == 0;
	}
	if (write(wfd, &res, sizeof(res)) != (ssize_t)sizeof(res))
		_exit(1);
	_exit(0);
}

/* Probe in a child: a probe in this process would fix the walk mode for every run. */
int probe(void)
{
	struct {
		struct thp_probe_info pi;
		bool guard, mseal, pfn;
	} res;
	int p[2], st;
	pid_t pid;

	if (pipe(p))
		return -1;
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		probe_child(p[1]);
	}
	close(p[1]);
	if (read(p[0], &res, sizeof(res)) != (ssize_t)sizeof(res))
		return -1;
	close(p[0]);
	waitpid(pid, &st, 0);
	pinfo = res.pi;
	have_guard = res.guard;
	have_mseal = res.mseal;
	have_pfn = res.pfn;
	return 0;
}
