// SPDX-License-Identifier: LGPL-2.1-or-later
/* thp-oci-hook: an OCI createRuntime hook that sets a container's THP policy from its annotation. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <syslog.h>
#include <unistd.h>

#include <thp/thp.h>

#include "json_parse.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

#define HOOK_ANNOTATION "libthp.io/thp-policy"
/*
 * A runtime's state is a few hundred bytes plus the annotations, which
 * Kubernetes caps at 256 KiB in all; more than this is not a state.
 */
#define HOOK_STATE_MAX (1u << 20)

/* Exit statuses: the runtime fails the container start on anything but 0. */
enum { HOOK_OK = 0,
       HOOK_FAIL = 1,
       HOOK_USAGE = 2 };

/* The container's ID as the runtime sent it, or "?" when it is not plain text. */
static char container_id[80] = "?";

/*
 * Runtimes show a hook's stderr at most when the hook fails (runc puts it
 * into its start error, crun not even then), so every message goes to
 * syslog as well.
 */
__attribute__((format(printf, 2, 3))) static void hook_log(int prio, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	syslog(prio, "container %s: %s", container_id, msg);
	if (prio <= LOG_WARNING)
		fprintf(stderr, "thp-oci-hook: container %s: %s\n", container_id, msg);
}

/* All of stdin, NUL-terminated; NULL (and a message) when unreadable or too large. */
static char *read_state(size_t *len)
{
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap + 1);

	if (!buf) {
		hook_log(LOG_ERR, "out of memory");
		return NULL;
	}
	for (;;) {
		ssize_t r;

		if (n == cap) {
			char *nb;

			if (cap >= HOOK_STATE_MAX) {
				hook_log(LOG_ERR, "state on stdin is larger than %u bytes",
					 HOOK_STATE_MAX);
				free(buf);
				return NULL;
			}
			cap *= 2;
			nb = realloc(buf, cap + 1);
			if (!nb) {
				hook_log(LOG_ERR, "out of memory");
				free(buf);
				return NULL;
			}
			buf = nb;
		}
		r = read(STDIN_FILENO, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			hook_log(LOG_ERR, "reading the state on stdin: %s", strerror(errno));
			free(buf);
			return NULL;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	buf[n] = '\0';
	*len = n;
	return buf;
}

/* Keep the runtime's ID for the log when it is one a log line can carry as it is. */
static void note_container_id(const struct jval *state)
{
	const struct jval *id = json_member(state, "id");
	size_t n;

	if (!id || id->type != J_STR)
		return;
	n = strlen(id->str);
	if (n == 0 || n >= sizeof(container_id) ||
	    strspn(id->str, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-") != n)
		return;
	memcpy(container_id, id->str, n + 1);
}

/* "POLICY" or "POLICY,required": 0 and the policy, or -1. */
static int parse_annotation(const char *v, unsigned int *policy, bool *required)
{
	static const struct {
		const char *name;
		unsigned int policy;
	} names[] = {
		{ "never", THP_POLICY_NEVER },
		{ "nohuge", THP_POLICY_NOHUGE },
		{ "system", THP_POLICY_SYSTEM },
		{ "huge", THP_POLICY_HUGE },
	};
	const char *comma = strchr(v, ',');
	size_t len = comma ? (size_t)(comma - v) : strlen(v);

	*required = comma && strcmp(comma, ",required") == 0;
	if (comma && !*required)
		return -1;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (strlen(names[i].name) == len && memcmp(names[i].name, v, len) == 0) {
			*policy = names[i].policy;
			return 0;
		}
	}
	return -1;
}

/* The state's "pid": a positive decimal integer, or 0. */
static pid_t state_pid(const struct jval *state)
{
	const struct jval *p = json_member(state, "pid");
	unsigned long long v;
	char *end;

	if (!p || p->type != J_NUM || p->str[0] < '1' || p->str[0] > '9')
		return 0;
	errno = 0;
	v = strtoull(p->str, &end, 10);
	if (errno || *end || v > INT_MAX)
		return 0;
	return (pid_t)v;
}

/* Set @policy on @pid through the inject backend: 0, or a negative errno. */
static int set_policy(pid_t pid, unsigned int policy)
{
	int fd = (int)syscall(SYS_pidfd_open, pid, 0), ret;

	if (fd < 0)
		return -errno;
	/* libthp reads descriptor 0 as THP_SELF (stdin stays open, but be sure). */
	if (fd == 0) {
		int nfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);

		close(fd);
		if (nfd < 0)
			return -errno;
		fd = nfd;
	}
	{
		THP_OPTS(thp_default_opts, o, .pidfd = fd, .policy = policy,
			 .flags = THP_DEFAULT_F_REQUIRE_PERSISTENT, .backend = THP_BACKEND_INJECT);

		ret = thp_set_default(&o);
	}
	close(fd);
	return ret;
}

static int run(void)
{
	const struct jval *annotations, *v;
	struct jval *state;
	unsigned int policy;
	bool required = false;
	size_t len = 0;
	char *text;
	pid_t pid;
	int ret;

	text = read_state(&len);
	if (!text)
		return HOOK_OK;
	state = json_parse(text, len);
	free(text);
	if (!state || state->type != J_OBJ) {
		hook_log(LOG_ERR, "the state on stdin is not a JSON object; nothing changed");
		json_free(state);
		return HOOK_OK;
	}
	note_container_id(state);
	annotations = json_member(state, "annotations");
	v = json_member(annotations, HOOK_ANNOTATION);
	if (!v) {
		/* The hooks.d file runs the hook only with the annotation: say why nothing happens. */
		hook_log(LOG_INFO, "no %s annotation; nothing to do", HOOK_ANNOTATION);
		json_free(state);
		return HOOK_OK;
	}
	if (v->type != J_STR || parse_annotation(v->str, &policy, &required) < 0) {
		required = v->type == J_STR && strstr(v->str, "required") != NULL;
		hook_log(required ? LOG_ERR : LOG_WARNING,
			 "annotation %s is not never, nohuge, system or huge, with or without "
			 "\",required\"; %s",
			 HOOK_ANNOTATION, required ? "container start refused" : "nothing changed");
		json_free(state);
		return required ? HOOK_FAIL : HOOK_OK;
	}
	if (policy == THP_POLICY_HUGE) {
		/* A running process cannot keep huge (thp_set_default(3)): thpd's rules do it. */
		hook_log(LOG_INFO, "policy huge is thpd's to apply; nothing changed");
		json_free(state);
		return HOOK_OK;
	}
	pid = state_pid(state);
	json_free(state);
	if (pid <= 0) {
		hook_log(required ? LOG_ERR : LOG_WARNING,
			 "the state has no valid \"pid\"; policy %s not set%s", thp_policy_name(policy),
			 required ? ", container start refused" : "");
		return required ? HOOK_FAIL : HOOK_OK;
	}
	if (pid == getpid()) {
		hook_log(LOG_ERR, "the state's pid %d is the hook itself; nothing changed", (int)pid);
		return required ? HOOK_FAIL : HOOK_OK;
	}
	ret = set_policy(pid, policy);
	if (ret < 0) {
		hook_log(required ? LOG_ERR : LOG_WARNING, "policy %s not set on pid %d: %s (%s)%s",
			 thp_policy_name(policy), (int)pid, thp_strerror(ret),
			 ret == -ESRCH ? "no such process" : thp_strerror_detail(),
			 required ? "; container start refused" : "; the container starts without it");
		return required ? HOOK_FAIL : HOOK_OK;
	}
	hook_log(LOG_INFO, "policy %s set on pid %d, inherited by every process of the container",
		 thp_policy_name(policy), (int)pid);
	return HOOK_OK;
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--version") == 0) {
		printf("thp-oci-hook %s\n", thp_version());
		return HOOK_OK;
	}
	if (argc > 1) {
		fprintf(stderr, "usage: %s < STATE   (an OCI runtime's createRuntime hook; "
				"see thp-oci-hook(8))\n",
			argv[0]);
		return HOOK_USAGE;
	}
	openlog("thp-oci-hook", LOG_PID, LOG_DAEMON);
	return run();
}
