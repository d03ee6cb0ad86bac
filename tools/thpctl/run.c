// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * thpctl run --policy huge|nohuge|never|system [--require-persistent] -- CMD...
 *
 * Sets the default THP policy of thpctl's own process with
 * thp_set_default(), then execs CMD, which inherits it.  HUGE where the
 * kernel cannot keep it across exec() (mainline) is carried by
 * libthp-preload.so in LD_PRELOAD plus GLIBC_TUNABLES=glibc.malloc.hugetlb=1
 * (doc/preload.md); every other policy removes both again, so a nested
 * `thpctl run --policy never` inside a huge run really gets never.
 *
 * Exit status as env(1): 125 thpctl failed (nothing was run), 126 CMD not
 * executable, 127 CMD not found, else CMD's own.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include <thp/thp.h>

#include "cli.h"
#include "collapse.h"
#include "parse.h"
#include "preload_env.h"
#include "thpctl.h"

#ifndef THPCTL_PRELOAD_INSTALLED
#define THPCTL_PRELOAD_INSTALLED "/usr/local/lib/libthp/libthp-preload.so"
#endif

struct run_args {
	int policy;
	bool require_persistent;
	char **cmd; /* NULL-terminated, cmd[0] is CMD */
	struct collapse_settings agent; /* interval 0: no collapse agent */
	bool agent_asked, agent_verbose;
};

static int run_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* thpctl_usage_error(), but with env(1)'s status: nothing was run. */
static int run_usage_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	thpctl_vusage_error("run", fmt, ap);
	va_end(ap);
	return THPCTL_EXIT_RUN_FAILED;
}

/* --collapse-interval S, --collapse-budget SIZE, --collapse-time-budget S, --collapse-verbose. */
static int parse_agent_option(int argc, char **argv, int *i, struct run_args *a)
{
	const char *arg = argv[*i], *val, *why = "";
	int bad;

	if (!strcmp(arg, "--collapse-verbose")) {
		a->agent_verbose = true;
		return 0;
	}
	if (*i + 1 >= argc)
		return run_usage_error("option '%s' needs an argument", arg);
	val = argv[++*i];
	a->agent_asked = true;
	if (!strcmp(arg, "--collapse-interval"))
		bad = collapse_parse_seconds(val, &a->agent.interval_ns, &why) ||
		      (a->agent.interval_ns && a->agent.interval_ns < 10000000ULL &&
		       (why = "below 0.01 s (0 turns the agent off)"));
	else if (!strcmp(arg, "--collapse-budget"))
		bad = thpctl_parse_size(val, &a->agent.budget_bytes, &why);
	else if (!strcmp(arg, "--collapse-time-budget"))
		bad = collapse_parse_seconds(val, &a->agent.budget_ns, &why);
	else
		return run_usage_error("unknown option '%s'", arg);
	return bad ? run_usage_error("invalid %s '%s': %s", arg, val, why) : 0;
}

/*
 * Options end at "--" or at the first argument that is not one, as for
 * env(1): CMD's own options are never ours.  Returns -1 for --help.
 */
static int parse_args(int argc, char **argv, struct run_args *a)
{
	const char *policy = NULL;
	int i;

	a->policy = -1;
	a->require_persistent = false;
	a->cmd = NULL;
	a->agent = (struct collapse_settings){ .interval_ns = COLLAPSE_DEFAULT_INTERVAL_NS,
					       .budget_ns = COLLAPSE_DEFAULT_BUDGET_NS };
	a->agent_asked = a->agent_verbose = false;
	for (i = 1; i < argc; i++) {
		const char *arg = argv[i];

		if (!strcmp(arg, "--")) {
			i++;
			break;
		}
		if (arg[0] != '-' || !arg[1])
			break;
		if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
			return -1;
		} else if (!strcmp(arg, "--require-persistent")) {
			a->require_persistent = true;
		} else if (!strcmp(arg, "--policy") || !strcmp(arg, "-p") ||
			   !strncmp(arg, "--policy=", 9)) {
			/* Not "the last one wins": two policies are a mistake. */
			if (policy)
				return run_usage_error("option '--policy' given more than once");
			if (!strncmp(arg, "--policy=", 9))
				policy = arg + 9;
			else if (i + 1 >= argc)
				return run_usage_error("option '%s' needs an argument", arg);
			else
				policy = argv[++i];
		} else if (!strncmp(arg, "--collapse-", 11)) {
			int r = parse_agent_option(argc, argv, &i, a);

			if (r)
				return r;
		} else {
			return run_usage_error("unknown option '%s'", arg);
		}
	}
	if (!policy)
		return run_usage_error("--policy huge|nohuge|never|system is required");
	a->policy = thpctl_parse_policy(policy);
	if (a->policy < 0)
		return run_usage_error("unknown policy '%s' (huge, nohuge, never or system)",
				       policy);
	if (i >= argc)
		return run_usage_error("no command to run (thpctl run --policy P -- CMD [ARGS...])");
	a->cmd = argv + i;
	return 0;
}

static bool is_file(const char *path)
{
	return path && *path && access(path, R_OK) == 0;
}

/*
 * This thpctl binary, resolved: /proc/self/exe (the kernel's answer has no
 * symbolic link, no "." or ".."), else the path execve() was given
 * (AT_EXECFN, which needs no /proc; relative to the start directory, which
 * thpctl has not left).  Both name the same file, so a missing /proc does
 * not change the answer.  False when neither resolves.
 */
static bool own_path(char exe[PATH_MAX])
{
	const char *fn = (const char *)getauxval(AT_EXECFN);
	ssize_t n = readlink("/proc/self/exe", exe, PATH_MAX - 1);

	/* " (deleted)": the binary was replaced while it ran; ask the path instead. */
	if (n > 0 && exe[0] == '/') {
		exe[n] = 0;
		if (n < 10 || strcmp(exe + n - 10, " (deleted)"))
			return true;
	}
	return fn && realpath(fn, exe);
}

const char *thpctl_preload_path(const char **why)
{
	static char tree[PATH_MAX + sizeof("/preload/" PRELOAD_ENV_SONAME)];
	const char *env = getenv("THPCTL_PRELOAD");
	char exe[PATH_MAX], *slash;
	struct stat st;

	if (env && *env)
		return env;
	if (!own_path(exe)) {
		*why = "cannot tell whether this thpctl runs from its build tree (neither "
		       "/proc/self/exe nor AT_EXECFN resolves); set THPCTL_PRELOAD";
		return NULL;
	}
	/* The resolved path's directory, then its parent ("..", without a lookup). */
	slash = strrchr(exe, '/');
	*slash = 0;
	slash = strrchr(exe, '/');
	if (slash)
		*slash = 0;
	/*
	 * A thpctl with a preload/ next to its directory is in the build tree
	 * (tools/ and preload/ of the build root) and takes that tree's
	 * preload, built or not; an installed one (/usr/bin: no /usr/preload)
	 * the installed preload.  Found from thpctl's own path, so that no
	 * build path is compiled into the installed binary.
	 */
	snprintf(tree, sizeof(tree), "%s/preload", exe);
	if (stat(tree, &st) || !S_ISDIR(st.st_mode))
		return THPCTL_PRELOAD_INSTALLED;
	snprintf(tree, sizeof(tree), "%s/preload/" PRELOAD_ENV_SONAME, exe);
	return tree;
}

/*
 * thpctl_preload_path() as an absolute path (children may chdir), checked
 * to be readable and to fit in LD_PRELOAD.  Returns a malloc()ed path, or
 * NULL after printing why.
 */
static char *find_preload(void)
{
	const char *why = NULL;
	const char *path = thpctl_preload_path(&why);
	char *abs;

	if (!path) {
		thpctl_error("run: no preload: %s", why);
		return NULL;
	}
	if (!is_file(path)) {
		thpctl_error("run: cannot read %s: %s (set THPCTL_PRELOAD to its path)", path,
			     strerror(errno ? errno : ENOENT));
		return NULL;
	}
	/* Only a relative path (THPCTL_PRELOAD's) needs resolving. */
	abs = path[0] == '/' ? strdup(path) : realpath(path, NULL);
	if (!abs) {
		thpctl_error("run: %s: %s", path, strerror(errno));
		return NULL;
	}
	/* ld.so splits LD_PRELOAD at spaces and colons. */
	if (strpbrk(abs, ": \t\n")) {
		thpctl_error("run: the preload path '%s' contains a space or colon, which "
			     "LD_PRELOAD cannot carry", abs);
		free(abs);
		return NULL;
	}
	return abs;
}

/*
 * Rewrite the list in environment variable @var (preload_env_list_edit()),
 * unset it when nothing is left.  0, or -1 with errno set.
 */
static int edit_list(const char *var, const char *seps, preload_env_match drop,
		     const char *first, const char *last)
{
	char *out = preload_env_list_edit(getenv(var), seps, drop, first, last);
	int r;

	if (!out)
		return -1;
	r = *out ? setenv(var, out, 1) : unsetenv(var);
	free(out);
	return r;
}

/* Environment of CMD: the preload and our tunable in (@preload) or out (NULL). */
static int set_env(const char *preload)
{
	/* With the preload, ours replaces any hugetlb value; without, only ours goes. */
	if (edit_list("LD_PRELOAD", PRELOAD_ENV_LD_SEPS, preload_env_is_our_preload, preload,
		      NULL) ||
	    edit_list("GLIBC_TUNABLES", PRELOAD_ENV_TUNABLE_SEPS,
		      preload ? preload_env_is_hugetlb_tunable : preload_env_is_our_tunable, NULL,
		      preload ? PRELOAD_ENV_TUNABLE_OURS : NULL)) {
		thpctl_error("run: cannot update the environment: %s", strerror(errno));
		return -1;
	}
	return 0;
}

int thpctl_cmd_run(int argc, char **argv)
{
	struct run_args a;
	char *preload = NULL;
	int err, saved;

	err = parse_args(argc, argv, &a);
	if (err < 0) {
		fputs(thpctl_run_command.usage, stdout);
		return thpctl_finish_output(THPCTL_EXIT_OK);
	}
	if (err)
		return err;

	THP_OPTS(thp_default_opts, d, .policy = (uint32_t)a.policy,
		 /* thpctl is about to exec: advising its own mappings is waste. */
		 .flags = THP_DEFAULT_F_NO_EXISTING |
			  (a.require_persistent ? THP_DEFAULT_F_REQUIRE_PERSISTENT : 0));
	err = thp_set_default(&d);
	if (err < 0) {
		const char *detail = thp_strerror_detail();

		if (err == -EOPNOTSUPP && a.require_persistent)
			thpctl_error("run: policy %s cannot be made persistent by this kernel "
				     "(%s%s%s)%s", thp_policy_name((unsigned int)a.policy),
				     thp_strerror(err), *detail ? ": " : "", detail,
				     a.policy == THP_POLICY_HUGE
					     ? "; drop --require-persistent to use the preload"
					     : "");
		else
			thpctl_error("run: cannot set policy %s: %s%s%s",
				     thp_policy_name((unsigned int)a.policy), thp_strerror(err),
				     *detail ? ": " : "", detail);
		return THPCTL_EXIT_RUN_FAILED;
	}
	/*
	 * Unless the kernel keeps HUGE itself (RFC kernels), the preload must.
	 * Looked for only now: a failure ends thpctl, whose own default is all
	 * that thp_set_default() changed.
	 */
	if (a.policy == THP_POLICY_HUGE && !d.persistent) {
		preload = find_preload();
		if (!preload)
			return THPCTL_EXIT_RUN_FAILED;
	}
	err = set_env(preload);
	free(preload);
	/* Tells a collapse agent above a nested run which policy this tree has. */
	if (!err && setenv("THPCTL_RUN_POLICY", thp_policy_name((unsigned int)a.policy), 1))
		err = -1;
	if (err)
		return THPCTL_EXIT_RUN_FAILED;
	/* What the preload cannot reach (thread arenas, static, Go) the agent collapses. */
	if (a.policy == THP_POLICY_HUGE && !d.persistent && a.agent.interval_ns) {
		const char *why = "";

		if (thpctl_agent_possible(&why))
			return thpctl_agent_run(a.cmd, &a.agent, a.agent_verbose);
		if (a.agent_asked || a.agent_verbose)
			thpctl_error("run: note: no collapse agent: %s; only the preload applies",
				     why);
	}
	fflush(NULL);
	execvp(a.cmd[0], a.cmd);
	saved = errno;
	thpctl_error("run: cannot run '%s': %s", a.cmd[0], strerror(saved));
	return saved == ENOENT ? THPCTL_EXIT_NOT_FOUND : THPCTL_EXIT_CANNOT_EXEC;
}

/* Its row in thpctl's command list (main.c) and the text --help prints. */
const struct thpctl_command thpctl_run_command = {
	.name = "run",
	.fn = thpctl_cmd_run,
	.summary = "run a command with a default THP policy",
	.usage =
		"Usage: thpctl run --policy huge|nohuge|never|system [--require-persistent]\n"
		"                  -- CMD [ARGS...]\n"
		"\n"
		"Set the default THP policy of thpctl's process, then execute CMD, which\n"
		"inherits it.  Where the kernel cannot keep \"huge\" across exec(), CMD is\n"
		"started with libthp-preload.so in LD_PRELOAD and\n"
		"GLIBC_TUNABLES=glibc.malloc.hugetlb=1 so that it and the programs it runs\n"
		"get huge-advised anonymous memory (static programs: malloc only, through\n"
		"the tunable; setuid programs: neither).\n"
		"See thpctl(1).\n"
		"\n"
		"Exit status: CMD's, or 125 (thpctl failed), 126 (CMD not executable),\n"
		"127 (CMD not found).\n",
};
