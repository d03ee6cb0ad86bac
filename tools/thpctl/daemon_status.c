// SPDX-License-Identifier: LGPL-2.1-or-later
/* thpctl status --daemon: thpd's status document from its socket, checked. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "json_parse.h"
#include "thpctl.h"

/* thpd's answer is a few hundred bytes per rule and process (top_processes). */
#define ANSWER_MAX (64u << 20)
#define ANSWER_TIMEOUT_S 5

/*
 * thpd's whole answer to "json\n" on @path, NUL-terminated; NULL on error
 * (said on stderr unless @quiet).  Each read waits at most
 * ANSWER_TIMEOUT_S: a stuck thpd must not hang thpctl.
 */
static char *ask(const char *path, size_t *len, bool quiet)
{
	struct timeval timeout = { .tv_sec = ANSWER_TIMEOUT_S };
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t size = 1 << 16, n = 0;
	char *buf = NULL;
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		if (!quiet)
			thpctl_error("status: socket path too long: %s", path);
		return NULL;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		if (!quiet)
			thpctl_error("status: cannot connect to thpd at %s: %s%s", path, strerror(errno),
				     errno == ENOENT || errno == ECONNREFUSED ? " (is thpd running?)" : errno == EACCES ? " (the socket is root's)"
															: "");
		goto fail;
	}
	if (send(fd, "json\n", 5, MSG_NOSIGNAL) != 5) {
		if (!quiet)
			thpctl_error("status: writing to %s: %s", path, strerror(errno));
		goto fail;
	}
	shutdown(fd, SHUT_WR);
	buf = malloc(size);
	for (;;) {
		ssize_t r;

		if (!buf) {
			if (!quiet)
				thpctl_error("status: out of memory");
			goto fail;
		}
		if (n + 1 == size) {
			char *b = size < ANSWER_MAX ? realloc(buf, size * 2) : NULL;

			if (!b) {
				if (!quiet)
					thpctl_error("status: thpd's answer is over %u MiB", ANSWER_MAX >> 20);
				goto fail;
			}
			buf = b;
			size *= 2;
		}
		r = read(fd, buf + n, size - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			if (!quiet)
				thpctl_error("status: reading from %s: %s", path, strerror(errno));
			goto fail;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = '\0';
	*len = n;
	return buf;
fail:
	if (fd >= 0)
		close(fd);
	free(buf);
	return NULL;
}

/*
 * thpd's "schema": THPD_JSON_SCHEMA, or missing (a thpd from before the
 * member, whose document schema 1 describes).  Anything else is a format
 * this thpctl cannot read: say so rather than show wrong figures.
 */
static bool schema_known(const struct jval *doc, const char *path)
{
	const struct jval *m = json_member(doc, "schema");

	if (!m)
		return true;
	if (m->type == J_NUM && strcmp(m->str, THPD_STR(THPD_JSON_SCHEMA)) == 0)
		return true;
	thpctl_error("status: thpd at %s writes status schema %s; this thpctl reads schema %d "
		     "(doc/thpd-json.md): use the thpctl of the same release as thpd",
		     path, m->type == J_NUM ? m->str : "(not a number)", THPD_JSON_SCHEMA);
	return false;
}

struct jval *thpctl_daemon_document(const char *socket_path, char **answer, size_t *len)
{
	const char *path = socket_path ? socket_path : THPD_SOCKET_DEFAULT;
	struct jval *doc;

	*answer = ask(path, len, true);
	if (!*answer)
		return NULL;
	doc = json_parse(*answer, *len);
	if (!doc || doc->type != J_OBJ || !json_member(doc, "rules") || !json_member(doc, "schema") ||
	    json_member_u64(doc, "schema") != THPD_JSON_SCHEMA) {
		json_free(doc);
		free(*answer);
		*answer = NULL;
		return NULL;
	}
	return doc;
}

int thpctl_status_daemon(const char *socket_path, bool json)
{
	const char *path = socket_path ? socket_path : THPD_SOCKET_DEFAULT;
	struct jval *doc;
	size_t len = 0;
	char *answer = ask(path, &len, false);

	if (!answer)
		return THPCTL_EXIT_FAILURE;
	doc = json_parse(answer, len);
	if (!doc || doc->type != J_OBJ || !json_member(doc, "rules")) {
		thpctl_error("status: the answer of %s is not thpd's status document (%zu bytes)",
			     path, len);
		json_free(doc);
		free(answer);
		return THPCTL_EXIT_FAILURE;
	}
	if (!schema_known(doc, path)) {
		json_free(doc);
		free(answer);
		return THPCTL_EXIT_FAILURE;
	}
	if (json) {
		fwrite(answer, 1, len, stdout);
		if (answer[len - 1] != '\n')
			putchar('\n');
	} else
		thpctl_daemon_table(doc);
	json_free(doc);
	free(answer);
	return THPCTL_EXIT_OK;
}
