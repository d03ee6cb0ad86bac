// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * set_default: set a process-wide THP policy, then fork and exec a child
 * that reports what it inherited.
 *
 *   set_default [system|huge|nohuge|never]
 *
 * Exit 0 when the child sees what the library promised (the policy when
 * persistent, "system" otherwise), 1 if not.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thp/thp.h>

static int parse_policy(const char *s)
{
	for (unsigned int p = 0; p < THP_POLICY_COUNT; p++)
		if (!strcmp(s, thp_policy_name(p)))
			return (int)p;
	return -1;
}

/* In the exec'd child: print our policy and a fresh mapping's VmFlags. */
static int child_report(void)
{
	THP_OPTS(thp_default_opts, got);
	struct thp_mapping_state st;
	size_t len = 4u << 20;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int r;

	if (p == MAP_FAILED)
		return 1;
	memset(p, 1, len);
	THP_OPTS(thp_query_opts, q, .addr = (uintptr_t)p, .len = len, .states = &st,
		 .states_cap = 1);
	r = thp_get_default(&got);
	if (r < 0 || thp_query(&q) < 1) {
		fprintf(stderr, "child: %s (%s)\n", thp_strerror(r), thp_strerror_detail());
		return 1;
	}
	printf("%s\n", thp_policy_name(got.policy));
	fprintf(stderr, "  child (pid %d, after exec): policy %s via %s; fresh mapping: %s%s "
			"AnonHugePages %llu kB\n",
		(int)getpid(), thp_policy_name(got.policy), thp_backend_name(got.backend_used),
		st.advised_huge ? "hg " : "", st.advised_nohuge ? "nh " : "",
		(unsigned long long)st.anon_huge_bytes / 1024);
	return 0;
}

int main(int argc, char **argv)
{
	int pipefd[2], status, policy;
	char seen[32] = "";
	const char *expect;
	pid_t pid;
	ssize_t n;

	if (argc == 2 && !strcmp(argv[1], "--child"))
		return child_report();
	policy = parse_policy(argc > 1 ? argv[1] : "nohuge");
	if (policy < 0) {
		fprintf(stderr, "usage: %s [system|huge|nohuge|never]\n", argv[0]);
		return 2;
	}

	THP_OPTS(thp_default_opts, o, .policy = (uint32_t)policy);
	if (thp_set_default(&o) < 0) {
		fprintf(stderr, "thp_set_default(%s): %s (%s)\n", thp_policy_name(policy),
			thp_strerror(-errno), thp_strerror_detail());
		return 1;
	}
	printf("set %s via %s: persistent across fork/exec: %s, existing mappings advised: %llu\n",
	       thp_policy_name(policy), thp_backend_name(o.backend_used),
	       o.persistent ? "yes" : "no", (unsigned long long)o.mappings_changed);
	fflush(stdout);

	if (pipe(pipefd))
		return 1;
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		dup2(pipefd[1], STDOUT_FILENO);
		close(pipefd[0]);
		/* argv[0], not /proc/self/exe: right under valgrind too. */
		execl(strchr(argv[0], '/') ? argv[0] : "/proc/self/exe", argv[0], "--child",
		      (char *)NULL);
		_exit(127);
	}
	close(pipefd[1]);
	n = read(pipefd[0], seen, sizeof(seen) - 1);
	close(pipefd[0]);
	waitpid(pid, &status, 0);
	if (n > 0)
		seen[strcspn(seen, "\n")] = 0;
	expect = o.persistent ? thp_policy_name(policy) : "system";
	printf("child after fork+exec sees: %s (expected %s)\n", seen, expect);

	/* Leave the process as we found it. */
	THP_OPTS(thp_default_opts, reset, .policy = THP_POLICY_SYSTEM);
	thp_set_default(&reset);
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 && !strcmp(seen, expect) ? 0 : 1;
}
