// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A target with ~20,000 mappings is killed (SIGKILL) while a call walks
 * its address space through a pidfd.  A second thread kills it as soon as
 * the library has one of the child's /proc files open, i.e. once the walk
 * has started.  Once the process loses its memory, /proc/PID/maps and
 * smaps read as if they ended there: a call that stops on that must not
 * report a shorter list as complete.  So every call returns -ESRCH, or
 * succeeds only with the whole address space seen (the kill came too late),
 * whatever the flags.
 *
 * thp_apply_*() on another process need process_madvise(), which valgrind
 * does not know: there the cases run natively in a child instead (20,000
 * mappings are too many for valgrind anyway).
 */
#define _GNU_SOURCE
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../helpers.h"
#include "thp/thp.h"

#define NR_PAGES 20000 /* alternating protection: one mapping each */
#define ITERATIONS 20

struct victim {
	pid_t pid;
	int pidfd;
	uint64_t base;      /* the 20,000 pages */
	size_t nr_mappings; /* all of the child's mappings, [vsyscall] excluded */
};

static void victim_start(struct victim *v)
{
	long ps = sysconf(_SC_PAGESIZE);
	int pfd[2];
	uint64_t base = 0;
	struct vma_counts c;

	ck_assert_int_eq(pipe(pfd), 0);
	v->pid = fork();
	ck_assert_int_ge(v->pid, 0);
	if (v->pid == 0) {
		char *p = mmap(NULL, (size_t)NR_PAGES * (size_t)ps, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

		if (p == MAP_FAILED)
			_exit(1);
		for (size_t i = 1; i < NR_PAGES; i += 2)
			if (mprotect(p + i * (size_t)ps, (size_t)ps, PROT_READ))
				_exit(1);
		base = (uintptr_t)p;
		if (write(pfd[1], &base, sizeof(base)) != sizeof(base))
			_exit(1);
		for (;;)
			pause();
	}
	close(pfd[1]);
	ck_assert_int_eq(read(pfd[0], &base, sizeof(base)), (ssize_t)sizeof(base));
	close(pfd[0]);
	v->base = base;
	v->pidfd = (int)syscall(SYS_pidfd_open, v->pid, 0);
	ck_assert_int_ge(v->pidfd, 0);
	smaps_count(v->pid, 0, UINT64_MAX, false, &c);
	ck_assert_int_ge(c.vmas, NR_PAGES);
	v->nr_mappings = (size_t)c.vmas;
}

static void victim_reap(struct victim *v)
{
	kill(v->pid, SIGKILL);
	ck_assert_int_eq(wait_status(v->pid), 128 + SIGKILL);
	close(v->pidfd);
}

/* Does this process have a descriptor open on a file under @prefix? */
static bool have_open(const char *prefix)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	bool found = false;

	if (!d)
		return false;
	while (!found && (e = readdir(d))) {
		char target[128];
		ssize_t n = readlinkat(dirfd(d), e->d_name, target, sizeof(target) - 1);

		if (n <= 0)
			continue;
		target[n] = 0;
		found = !strncmp(target, prefix, strlen(prefix));
	}
	closedir(d);
	return found;
}

struct killer {
	pthread_t thread;
	pid_t pid;
	volatile bool stop; /* the call returned before the walk was seen */
	volatile bool killed;
};

/* Kill the child once the library reads one of its /proc files. */
static void *kill_when_walking(void *arg)
{
	struct killer *k = arg;
	char prefix[64];

	snprintf(prefix, sizeof(prefix), "/proc/%d/", (int)k->pid);
	while (!k->stop) {
		if (have_open(prefix)) {
			kill(k->pid, SIGKILL);
			k->killed = true;
			break;
		}
	}
	return NULL;
}

static void killer_start(struct killer *k, pid_t pid)
{
	memset(k, 0, sizeof(*k));
	k->pid = pid;
	ck_assert_int_eq(pthread_create(&k->thread, NULL, kill_when_walking, k), 0);
}

static bool killer_join(struct killer *k)
{
	k->stop = true;
	ck_assert_int_eq(pthread_join(k->thread, NULL), 0);
	return k->killed;
}

/*
 * @iterations rounds of: a new victim, the killer thread, @call on it (which
 * checks the result and returns true for -ESRCH).  Prints the counts and
 * fails unless at least one call saw its target die.
 */
static void run_killed(const char *what, const char *tcase,
		       bool (*call)(const struct victim *v, int it))
{
	unsigned int esrch = 0, complete = 0, not_killed = 0;

	if (under_valgrind()) {
		run_tcase_natively(tcase);
		return;
	}
	for (int it = 0; it < ITERATIONS; it++) {
		struct victim v;
		struct killer k;
		bool died;

		victim_start(&v);
		killer_start(&k, v.pid);
		died = call(&v, it);
		if (!killer_join(&k))
			not_killed++;
		if (died)
			esrch++;
		else
			complete++;
		victim_reap(&v);
	}
	fprintf(stderr, "%s: %u x -ESRCH, %u x complete before the kill, %u x never killed\n",
		what, esrch, complete, not_killed);
	/* Otherwise the test proved nothing: the kill always came too late. */
	ck_assert_msg(esrch > 0, "%s: no call saw its target die", what);
}

static bool apply_all_call(const struct victim *v, int it)
{
	static struct thp_report failures[NR_PAGES + 64];
	/* COLLAPSE fails on every one-page mapping: SKIP_ERRORS passes over each. */
	THP_OPTS(thp_apply_all_opts, a, .pidfd = v->pidfd, .advice = THP_ADVICE_COLLAPSE,
		 .flags = THP_F_SKIP_ERRORS, .failures = failures,
		 .failures_cap = sizeof(failures) / sizeof(failures[0]));
	int r = thp_apply_all(&a);

	ck_assert_msg(r == -ESRCH || (r >= 0 && a.mappings_seen == v->nr_mappings),
		      "iteration %d: thp_apply_all(SKIP_ERRORS) returned %d (%s) after seeing "
		      "%llu of %zu mappings (%llu advised, %llu skipped)", it, r, thp_strerror(r),
		      (unsigned long long)a.mappings_seen, v->nr_mappings,
		      (unsigned long long)a.mappings_advised,
		      (unsigned long long)a.mappings_skipped);
	return r == -ESRCH;
}

static bool apply_ranges_call(const struct victim *v, int it)
{
	static struct thp_range ranges[NR_PAGES];
	static struct thp_report reports[NR_PAGES];
	long ps = sysconf(_SC_PAGESIZE);
	THP_OPTS(thp_apply_opts, o, .pidfd = v->pidfd, .advice = THP_ADVICE_COLLAPSE,
		 .flags = THP_F_SKIP_ERRORS, .reports = reports);
	int r;

	for (size_t i = 0; i < NR_PAGES; i++) {
		ranges[i].addr = v->base + i * (uint64_t)ps;
		ranges[i].len = (uint64_t)ps;
	}
	r = thp_apply_ranges(ranges, NR_PAGES, &o);
	ck_assert_msg(r >= 0 || r == -ESRCH, "iteration %d: thp_apply_ranges returned %d (%s)",
		      it, r, thp_strerror(r));
	/* Success only when every range was tried on a live process. */
	for (size_t i = 0; r >= 0 && i < NR_PAGES; i++)
		ck_assert_msg(reports[i].attempted && reports[i].error != ESRCH,
			      "iteration %d: returned %d but range %zu %s", it, r, i,
			      reports[i].attempted ? "failed with ESRCH" : "was not attempted");
	return r == -ESRCH;
}

static bool query_call(const struct victim *v, int it)
{
	static struct thp_mapping_state states[NR_PAGES + 64];
	THP_OPTS(thp_query_opts, q, .pidfd = v->pidfd, .states = states,
		 .states_cap = sizeof(states) / sizeof(states[0]));
	int r = thp_query(&q);

	ck_assert_msg(r == -ESRCH || (r >= 0 && q.states_needed == v->nr_mappings),
		      "iteration %d: thp_query returned %d (%s) with %llu of %zu mappings", it, r,
		      thp_strerror(r), (unsigned long long)q.states_needed, v->nr_mappings);
	return r == -ESRCH;
}

START_TEST(apply_all_target_killed)
{
	run_killed("thp_apply_all", "apply_all", apply_all_call);
}
END_TEST

START_TEST(apply_ranges_target_killed)
{
	run_killed("thp_apply_ranges", "apply_ranges", apply_ranges_call);
}
END_TEST

START_TEST(query_target_killed)
{
	run_killed("thp_query", "query", query_call);
}
END_TEST

static void *hold_memory(void *arg)
{
	char *m = mmap(NULL, 8 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	(void)arg;
	if (m == MAP_FAILED)
		_exit(1);
	memset(m, 1, 8 << 20);
	for (;;)
		pause();
	return NULL;
}

/* State and Threads of /proc/PID/status: 'Z' and 2 once the main thread is gone. */
static void leader_state(pid_t pid, char *state, long *threads)
{
	char path[64], buf[4096];
	const char *p;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	*state = '?';
	*threads = 0;
	if (read_file(path, buf, sizeof(buf)) <= 0)
		return;
	if ((p = strstr(buf, "\nState:\t")))
		*state = p[8];
	if ((p = strstr(buf, "\nThreads:")))
		*threads = strtol(p + 9, NULL, 10);
}

/*
 * A process whose main thread has exited while another runs: the kernel
 * answers for it as for an exited one (empty smaps, ESRCH from
 * process_madvise()).  The calls must say so, not "exited"; once it has
 * really exited, -ESRCH.
 */
START_TEST(main_thread_exited)
{
	THP_OPTS(thp_query_opts, q);
	THP_OPTS(thp_collapse_opts, c);
	pid_t pid = fork();
	char state = '?';
	long threads = 0;
	int pidfd, ret;

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		pthread_t t;

		if (pthread_create(&t, NULL, hold_memory, NULL))
			_exit(1);
		pthread_exit(NULL);
	}
	pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	ck_assert_int_ge(pidfd, 0);
	for (int i = 0; i < 1000 && !(state == 'Z' && threads == 2); i++) {
		usleep(10000);
		leader_state(pid, &state, &threads);
	}
	ck_assert_msg(state == 'Z' && threads == 2, "child %d: State %c, Threads %ld", (int)pid, state,
		      threads);
	q.pidfd = pidfd;
	ret = thp_query(&q);
	ck_assert_msg(ret == -EOPNOTSUPP && strstr(thp_strerror_detail(), "main thread has exited"),
		      "thp_query: %d (%s)", ret, thp_strerror_detail());
	c.pidfd = pidfd;
	ret = thp_collapse(&c);
	if (expect_process_madvise())
		ck_assert_msg(ret == -EOPNOTSUPP &&
				      strstr(thp_strerror_detail(), "main thread has exited"),
			      "thp_collapse: %d (%s)", ret, thp_strerror_detail());
	else
		assert_refused_no_process_madvise(ret, "thp_collapse");
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	for (int i = 0; i < 1000 && threads != 1; i++) {
		usleep(10000);
		leader_state(pid, &state, &threads);
	}
	ret = thp_query(&q);
	ck_assert_msg(ret == -ESRCH, "thp_query after the kill: %d (%s)", ret,
		      thp_strerror_detail());
	ck_assert_int_eq(waitpid(pid, NULL, 0), pid);
	close(pidfd);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("target_death");
	struct {
		const char *name;
		const TTest *test;
	} cases[] = {
		{ "apply_all", apply_all_target_killed },
		{ "apply_ranges", apply_ranges_target_killed },
		{ "query", query_target_killed },
		{ "main_thread_exited", main_thread_exited },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		TCase *tc = tcase_create(cases[i].name);

		tcase_set_timeout(tc, 100);
		tcase_add_test(tc, cases[i].test);
		suite_add_tcase(s, tc);
	}
	return run_suite(s);
}
