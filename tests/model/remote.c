// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * thp_model's remote mode: the case's layout in a target child that waits
 * in read() on a pipe, and the same requests made on its pidfd through the
 * inject backend (and the PMADV / process_madvise() path where the kernel
 * takes the advice from another process), checked against the model on the
 * target's smaps, in a child it forks, and for policy sequences in what the
 * target and its forked and exec()ed children read themselves.
 *
 * Process tree of one case: the case's process builds the layout; for each
 * configuration a runner forks from it, the runner forks the target (a copy
 * of the layout, made before the runner does anything of its own), makes
 * the call and reads the truth; the target answers commands on a pipe.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "checker.h"

bool remote_mode;

/* The runner's ends of the target's pipes. */
static int tgt_cmd = -1, tgt_rep = -1;

/* A target whose read() returned EINTR: an injection that did not restart it. */
#define TARGET_EINTR 42

static bool xread(int fd, void *buf, size_t len)
{
	ssize_t n;

	do
		n = read(fd, buf, len);
	while (n < 0 && errno == EINTR);
	return n == (ssize_t)len;
}

/*
 * The target: answers one-byte commands until its command pipe closes.
 * Its read() is where the runner's injections find it stopped.
 *   'f': fork a child that waits in read() too; answer its pid.
 *   'r': let that child exit and reap it; answer 0.
 *   's': answer report_state() (PR_GET_THP_DISABLE | a fresh mapping's advice << 2).
 *   'c': answer report_state() as a forked and an exec()ed child say it.
 */
static void __attribute__((noreturn)) target_loop(int cmd, int rep)
{
	int hold = -1, v[2];
	pid_t child = -1;

	for (;;) {
		char op;
		ssize_t n = read(cmd, &op, 1);

		if (n < 0)
			_exit(errno == EINTR ? TARGET_EINTR : 2);
		if (n == 0)
			_exit(0);
		v[0] = v[1] = 0;
		switch (op) {
		case 'f': {
			int q[2];

			v[0] = -1;
			if (child < 0 && !pipe(q)) {
				child = fork();
				if (child == 0) {
					char b;

					close(q[1]);
					close(cmd);
					close(rep);
					while (read(q[0], &b, 1) < 0 && errno == EINTR)
						;
					_exit(0);
				}
				close(q[0]);
				hold = q[1];
				v[0] = (int)child;
			}
			break;
		}
		case 'r':
			if (child > 0) {
				close(hold);
				waitpid(child, NULL, 0);
				child = -1;
			}
			break;
		case 's':
			v[0] = report_state();
			break;
		case 'c':
			children_state(&v[0], &v[1]);
			break;
		default:
			_exit(2);
		}
		if (write(rep, v, sizeof(v)) != (ssize_t)sizeof(v))
			_exit(2);
	}
}

/* One command to the target, its answer in v[2]. */
static bool ask(char op, int v[2])
{
	return write(tgt_cmd, &op, 1) == 1 && xread(tgt_rep, v, 2 * sizeof(int));
}

pid_t remote_forked(void)
{
	int v[2];

	return ask('f', v) && v[0] > 0 ? (pid_t)v[0] : -1;
}

void remote_release(pid_t child)
{
	int v[2];

	(void)child;
	ask('r', v);
}

/*
 * Which backends can reach another process (thp_apply_ranges(3),
 * "Another process"): inject for every advice (x86_64); of the kernel's
 * interfaces only MADV_COLLAPSE, through PMADV where the kernel has it and
 * mainline process_madvise(), which AUTO then picks; madvise() never.
 */
static bool remote_offered(const struct case_spec *c, unsigned int be)
{
	bool collapse = c->advice == THP_ADVICE_COLLAPSE && c->req == REQ_RANGES;

	switch (be) {
	case THP_BACKEND_INJECT:
#if defined(__x86_64__)
		return true;
#else
		return false;
#endif
	case THP_BACKEND_PMADV:
		return collapse && ((pinfo.backends >> THP_BACKEND_PMADV) & 1);
	case THP_BACKEND_PROCESS_MADVISE:
	case THP_BACKEND_AUTO:
		return collapse && pinfo.madvise_collapse;
	default:
		return false;
	}
}

/* The target's policy sequence: each set/get on its pidfd, checked in the target. */
static bool remote_policy(const struct case_spec *c, int pidfd)
{
	struct model_policy_state s = start_state, child;
	int v[2], want;

	/* The target is stopped in read(): every mapping it has is the checker's to judge. */
	judged_lo = 0;
	judged_hi = UINT64_MAX;
	for (size_t i = 0; i < c->nr_steps; i++) {
		const struct policy_step *st = &c->steps[i];
		THP_OPTS(thp_default_opts, o, .pidfd = pidfd, .policy = st->policy,
			 .flags = st->flags, .backend = st->set ? THP_BACKEND_INJECT : 0);
		struct model_policy_answer m;
		uint64_t appeared;
		int ret, thp_enabled;

		if (snap_read(&snap))
			return diverge("cannot read the target's smaps");
		memcpy(prev.v, snap.v, snap.n * sizeof(*snap.v));
		prev.n = snap.n;
		ret = st->set ? thp_set_default(&o) : thp_get_default(&o);
		model_remote_policy_step(&kern, &s, st->set, st->policy, st->flags, &m);
		/* No mapping of the target is advised, and none appears. */
		if (!check_existing(i, 0, &appeared))
			return false;
		if (snap.n != prev.n)
			return diverge("policy call %zu: the target had %zu mappings, now %zu", i,
				       prev.n, snap.n);
		if (ret != m.ret || (!ret && (o.backend_used != m.backend_used ||
					      o.persistent != m.persistent ||
					      (!st->set && o.policy != m.policy) ||
					      (st->set && o.mappings_changed))))
			return diverge("policy call %zu (%s %s flags 0x%x) on the target: library ret "
				       "%d policy %s backend %s persistent %d changed %" PRIu64
				       "; model ret %d policy %s backend %s persistent %d changed 0 (%s)",
				       i, st->set ? "set" : "get", thp_policy_name(st->policy),
				       st->flags, ret, thp_policy_name(o.policy),
				       thp_backend_name(o.backend_used), o.persistent,
				       o.mappings_changed, m.ret, thp_policy_name(m.policy),
				       thp_backend_name(m.backend_used), m.persistent,
				       thp_strerror_detail());
		/* What the target reads itself: PR_GET_THP_DISABLE, a fresh mapping's advice. */
		if (!ask('s', v) || v[0] >= 64)
			return diverge("policy call %zu: the target did not answer", i);
		if ((v[0] & 3) != s.disable || v[0] >> 2 != (int)model_fresh(&s))
			return diverge("policy call %zu: the target reads PR_GET_THP_DISABLE %d, a fresh "
				       "mapping hg/nh %d; the model %d, %u", i, v[0] & 3, v[0] >> 2,
				       s.disable, model_fresh(&s));
		thp_enabled = status_thp_enabled();
		if (thp_enabled >= 0 && thp_enabled != (s.disable != MODEL_THP_DISABLED))
			return diverge("policy call %zu: the target's THP_enabled: %d with "
				       "PR_GET_THP_DISABLE %d", i, thp_enabled, s.disable);
	}
	/* The state the target's forked and exec()ed children read. */
	model_new_mm(&kern, &s, &child);
	want = child.disable | (int)model_fresh(&child) << 2;
	if (!ask('c', v))
		return diverge("the target did not answer for its children");
	if (v[0] != want || v[1] != want)
		return diverge("policy: the target's forked child says disable %d fresh hg/nh %d, its "
			       "exec()ed one disable %d fresh %d; the model: disable %d fresh %d",
			       v[0] & 3, v[0] >> 2, v[1] & 3, v[1] >> 2, want & 3, want >> 2);
	return true;
}

/* The runner: the target forked first, then one configuration's call and checks. */
static void __attribute__((noreturn)) runner(const struct case_spec *c, struct run_cfg *r,
					     uint64_t base, int wfd)
{
	struct model_arena a = { .base = base, .nr_pages = c->arena_pages, .page_size = page,
				 .pmd_size = pmd };
	int cmd[2], rep[2], st;
	char path[40];
	pid_t target;
	bool ok;

	if (pipe(cmd) || pipe(rep))
		_exit(2);
	target = fork();
	if (target < 0)
		_exit(2);
	if (target == 0) {
		close(cmd[1]);
		close(rep[0]);
		close(wfd);
		target_loop(cmd[0], rep[1]);
	}
	close(cmd[0]);
	close(rep[1]);
	tgt_cmd = cmd[1];
	tgt_rep = rep[0];
	/* Not descriptor 0, which would mean THP_SELF (thp.h). */
	r->pidfd = (int)syscall(SYS_pidfd_open, target, 0);
	if (r->pidfd <= 0) {
		diverge("pidfd_open: %s", strerror(errno));
		goto out;
	}
	if (r->text_walk && force_text_walk()) {
		diverge("cannot force the text walk: %s", strerror(errno));
		goto out;
	}
	truth_pid = target;
	snprintf(path, sizeof(path), "/proc/%d/pagemap", (int)target);
	pagemap_fd = open(path, O_RDONLY | O_CLOEXEC);
	a.page = malloc(a.nr_pages);
	if (!a.page) {
		diverge("out of memory");
		goto out;
	}
	if (c->req == REQ_POLICY)
		ok = remote_policy(c, r->pidfd);
	else if (!remote_offered(c, r->backend))
		ok = run_refused(c, r, &a) && check_smaps(&a, "the target after the refused call");
	else if (c->req == REQ_ALL)
		ok = run_all(c, r, &a) && check_smaps(&a, "the target after the call") &&
		     (!r->fork_check || check_forked(&a));
	else
		ok = run_ranges(c, r, &a) && check_smaps(&a, "the target after the call") &&
		     (!r->fork_check || check_forked(&a));
	(void)ok;
out:
	/* Its command pipe closed, the target leaves its read(): by exit 0 unless it saw EINTR. */
	close(tgt_cmd);
	if (waitpid(target, &st, 0) != target)
		diverge("the target vanished: %s", strerror(errno));
	else if (!WIFEXITED(st) || WEXITSTATUS(st))
		diverge(WIFEXITED(st) && WEXITSTATUS(st) == TARGET_EINTR ?
			"the target's read() returned EINTR: an injection did not restart it" :
			"the target ended with status 0x%x", st);
	if (why[0] && write(wfd, why, strlen(why)) < 0)
		_exit(2);
	_exit(why[0] ? 1 : 0);
}

static const unsigned int remote_backends[] = { THP_BACKEND_INJECT, THP_BACKEND_PMADV,
						THP_BACKEND_AUTO, THP_BACKEND_PROCESS_MADVISE,
						THP_BACKEND_MADVISE };

/*
 * The case's process: build the layout, then each configuration in a
 * runner.  Backends that cannot reach another process run once (their
 * refusal does not depend on the walk); a policy sequence runs once.
 */
static void __attribute__((noreturn)) case_process(const struct case_spec *c, int wfd)
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
	for (size_t b = 0; b < sizeof(remote_backends) / sizeof(remote_backends[0]); b++)
		nr_runs += remote_offered(c, remote_backends[b]) ? 1 + !!pinfo.procmap_query : 0;
	fork_run = nr_runs ? (size_t)(c->seed % nr_runs) : 0;
	nr_runs = 0;
	for (size_t b = 0; b < sizeof(remote_backends) / sizeof(remote_backends[0]); b++)
		for (int text = 0; text < 2; text++) {
			struct run_cfg r = { remote_backends[b], text, false, THP_SELF };
			bool offered = remote_offered(c, r.backend);

			if (!text && !pinfo.procmap_query)
				continue;
			if ((c->req == REQ_POLICY && b) ||
			    ((c->req == REQ_POLICY || !offered) && text != !pinfo.procmap_query))
				continue;
			if (offered)
				r.fork_check = nr_runs++ == fork_run;
			run_config_in_child(runner, c, &r, base, "remote, ", wfd);
		}
	_exit(0);
}

/* 0 agree, 1 divergence (its message in @msg), 3 layout not buildable. */
int remote_run_case(const struct case_spec *c, char *msg, size_t cap)
{
	int p[2], st;
	pid_t pid;
	ssize_t n;

	msg[0] = 0;
	if (pipe(p))
		return 1;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		close(p[0]);
		case_process(c, p[1]);
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
