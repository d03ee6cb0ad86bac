// SPDX-License-Identifier: LGPL-2.1-or-later
/* thpd: the local Unix socket and the optional loopback HTTP listener, both non-blocking. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <syslog.h>
#include <unistd.h>

#include "clock_ns.h" /* lib/: clock_ns(), now_ns() */
#include "log.h"
#include "thpd.h"

#define MAX_CLIENTS 32
/*
 * A client that has not sent a whole request keeps its slot only while it
 * sends, and not for long in all; one that is being answered while it reads.
 * A full table makes room by dropping the oldest client still sending its
 * request: idle connections, however many, cannot keep a scrape out.
 */
#define REQUEST_IDLE_NS (1000ULL * 1000000ULL)
#define REQUEST_TOTAL_NS (5000ULL * 1000000ULL)
#define REPLY_IDLE_NS (5000ULL * 1000000ULL)

struct client {
	int fd;
	bool http;
	bool replying;
	char req[THPD_REQ_MAX];
	size_t reqlen;
	char *out;
	size_t outlen, outoff;
	uint64_t accepted, last_io;
};

struct thpd_server {
	int unix_fd, tcp_fd;
	char *path;
	char *made_dir; /* the socket's directory, created by this daemon: removed at exit */
	char *listen;
	struct client cl[MAX_CLIENTS];
	size_t ncl;
};

static int set_err(char **err, const char *what, const char *arg)
{
	if (asprintf(err, "%s %s: %s", what, arg, strerror(errno)) < 0)
		*err = NULL;
	return -1;
}

/* The socket's directory: created when missing (and then its path returned in @made). */
static int mkdir_parent(const char *path, char **made)
{
	char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char *slash;

	*made = NULL;
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return 0;
	*slash = '\0';
	if (mkdir(dir, 0755) == 0)
		*made = strdup(dir);
	else if (errno != EEXIST)
		return -1;
	return 0;
}

static int open_unix(const char *path, char **made, char **err)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;
	mode_t old;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		errno = ENAMETOOLONG;
		return set_err(err, "socket path", path);
	}
	strcpy(sa.sun_path, path);
	if (mkdir_parent(path, made) != 0)
		return set_err(err, "cannot create the directory of", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return set_err(err, "socket", path);
	/* A socket left by a daemon that was killed is replaced; a live one is not. */
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
		close(fd);
		errno = EADDRINUSE;
		return set_err(err, "another thpd answers on", path);
	}
	close(fd);
	unlink(path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return set_err(err, "socket", path);
	old = umask(0177);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		umask(old);
		close(fd);
		return set_err(err, "bind", path);
	}
	umask(old);
	if (listen(fd, SOMAXCONN) != 0) {
		close(fd);
		return set_err(err, "listen", path);
	}
	return fd;
}

static int open_tcp(const char *listen_on, char **err)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV };
	struct addrinfo *ai;
	char host[256];
	const char *colon = strrchr(listen_on, ':');
	int fd, one = 1, r;
	size_t hl;

	if (!colon || colon == listen_on || (hl = (size_t)(colon - listen_on)) >= sizeof(host)) {
		if (asprintf(err, "listen %s: expected HOST:PORT", listen_on) < 0)
			*err = NULL;
		return -1;
	}
	memcpy(host, listen_on, hl);
	host[hl] = '\0';
	if (host[0] == '[' && hl > 2 && host[hl - 1] == ']') {
		memmove(host, host + 1, hl - 2);
		host[hl - 2] = '\0';
	}
	r = getaddrinfo(host, colon + 1, &hints, &ai);
	if (r != 0) {
		if (asprintf(err, "listen %s: %s", listen_on, gai_strerror(r)) < 0)
			*err = NULL;
		return -1;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		freeaddrinfo(ai);
		return set_err(err, "socket for", listen_on);
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, SOMAXCONN) != 0) {
		freeaddrinfo(ai);
		close(fd);
		return set_err(err, "bind/listen", listen_on);
	}
	freeaddrinfo(ai);
	return fd;
}

struct thpd_server *thpd_server_open(const char *sock_path, const char *listen_on, char **err)
{
	struct thpd_server *sv = calloc(1, sizeof(*sv));

	*err = NULL;
	if (!sv)
		return NULL;
	sv->unix_fd = sv->tcp_fd = -1;
	if (sock_path && *sock_path) {
		sv->unix_fd = open_unix(sock_path, &sv->made_dir, err);
		if (sv->unix_fd < 0)
			goto fail;
		sv->path = strdup(sock_path);
	}
	if (listen_on && *listen_on) {
		sv->tcp_fd = open_tcp(listen_on, err);
		if (sv->tcp_fd < 0)
			goto fail;
		sv->listen = strdup(listen_on);
	}
	return sv;
fail:
	thpd_server_close(sv);
	return NULL;
}

static void drop(struct thpd_server *sv, size_t i)
{
	close(sv->cl[i].fd);
	free(sv->cl[i].out);
	sv->cl[i] = sv->cl[--sv->ncl];
}

void thpd_server_close(struct thpd_server *sv)
{
	if (!sv)
		return;
	while (sv->ncl)
		drop(sv, sv->ncl - 1);
	if (sv->unix_fd >= 0) {
		close(sv->unix_fd);
		unlink(sv->path);
	}
	/* Only when empty: another daemon's socket or files stay. */
	if (sv->made_dir)
		rmdir(sv->made_dir);
	if (sv->tcp_fd >= 0)
		close(sv->tcp_fd);
	free(sv->made_dir);
	free(sv->listen);
	free(sv->path);
	free(sv);
}

size_t thpd_server_pollfds(struct thpd_server *sv, struct pollfd *fds, size_t cap)
{
	size_t n = 0;

	if (!sv)
		return 0;
	if (sv->unix_fd >= 0 && n < cap)
		fds[n++] = (struct pollfd){ .fd = sv->unix_fd, .events = POLLIN };
	if (sv->tcp_fd >= 0 && n < cap)
		fds[n++] = (struct pollfd){ .fd = sv->tcp_fd, .events = POLLIN };
	for (size_t i = 0; i < sv->ncl && n < cap; i++)
		fds[n++] = (struct pollfd){ .fd = sv->cl[i].fd,
					    .events = sv->cl[i].replying ? POLLOUT : POLLIN };
	return n;
}

/* The rules as thpd --check-config prints them. */
static char *rules_text(const struct thpd_state *st, size_t *len)
{
	char *s = NULL;
	size_t sz = 0;
	FILE *f = open_memstream(&s, &sz);

	if (!f)
		return NULL;
	thpd_config_print(&st->cfg, f);
	if (fclose(f) != 0) {
		free(s);
		return NULL;
	}
	*len = sz;
	return s;
}

static void reply(struct client *c, const struct thpd_state *st, enum thpd_req what)
{
	char *body = NULL;
	size_t len = 0;
	const char *ctype = "text/plain; version=0.0.4; charset=utf-8";
	int status = 200;

	if (!c->http) {
		if (what == THPD_REQ_METRICS)
			body = thpd_metrics_text(st, &len);
		else if (what == THPD_REQ_JSON)
			body = thpd_json_text(st, &len);
		else if (what == THPD_REQ_RULES)
			body = rules_text(st, &len);
		else if (asprintf(&body, "error: unknown request (expected metrics, json or rules)\n") >= 0)
			len = strlen(body);
		c->out = body;
		c->outlen = body ? len : 0;
	} else {
		char *hdr = NULL;
		int hl;

		if (what == THPD_REQ_METRICS) {
			body = thpd_metrics_text_public(st, &len);
		} else if (what == THPD_REQ_JSON) {
			body = thpd_json_text_public(st, &len);
			ctype = "application/json";
		} else {
			status = 404;
			body = strdup("not found: GET /metrics or /status.json\n");
			len = body ? strlen(body) : 0;
		}
		if (!body) {
			status = 500;
			len = 0;
		}
		hl = asprintf(&hdr, "HTTP/1.0 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
				    "Connection: close\r\n\r\n",
			      status,
			      status == 200 ? "OK" : status == 404 ? "Not Found"
								   : "Error",
			      ctype, len);
		if (hl < 0) {
			free(body);
			c->out = NULL;
			c->outlen = 0;
		} else {
			char *all = malloc((size_t)hl + len);

			if (all) {
				memcpy(all, hdr, (size_t)hl);
				if (len)
					memcpy(all + hl, body, len);
			}
			c->out = all;
			c->outlen = all ? (size_t)hl + len : 0;
			free(hdr);
			free(body);
		}
	}
	c->outoff = 0;
	c->replying = true;
}

/* Read, answer and write what can be done now; false when the client is done with. */
static bool serve(struct client *c, const struct thpd_state *st, uint64_t now)
{
	if (!c->replying) {
		ssize_t n = recv(c->fd, c->req + c->reqlen, THPD_REQ_MAX - 1 - c->reqlen, 0);
		enum thpd_req what;

		if (n < 0)
			return errno == EAGAIN || errno == EINTR;
		c->reqlen += (size_t)n;
		if (n > 0)
			c->last_io = now;
		what = thpd_request_parse(c->req, c->reqlen, c->http, n == 0);
		if (what == THPD_REQ_INCOMPLETE)
			return n > 0;
		reply(c, st, what);
	}
	while (c->outoff < c->outlen) {
		ssize_t w = send(c->fd, c->out + c->outoff, c->outlen - c->outoff, MSG_NOSIGNAL);

		if (w < 0)
			return errno == EAGAIN || errno == EINTR;
		c->outoff += (size_t)w;
		c->last_io = now;
	}
	return false;
}

static uint64_t deadline(const struct client *c)
{
	uint64_t idle;

	if (c->replying)
		return c->last_io + REPLY_IDLE_NS;
	idle = c->last_io + REQUEST_IDLE_NS;
	return idle < c->accepted + REQUEST_TOTAL_NS ? idle : c->accepted + REQUEST_TOTAL_NS;
}

uint64_t thpd_server_deadline(const struct thpd_server *sv)
{
	uint64_t d = UINT64_MAX;

	for (size_t i = 0; sv && i < sv->ncl; i++)
		if (deadline(&sv->cl[i]) < d)
			d = deadline(&sv->cl[i]);
	return d;
}

/* Room for one more: the oldest client still sending its request goes. */
static bool make_room(struct thpd_server *sv)
{
	size_t old = MAX_CLIENTS;

	if (sv->ncl < MAX_CLIENTS)
		return true;
	for (size_t i = 0; i < sv->ncl; i++)
		if (!sv->cl[i].replying && (old == MAX_CLIENTS || sv->cl[i].accepted < sv->cl[old].accepted))
			old = i;
	if (old == MAX_CLIENTS)
		return false;
	drop(sv, old);
	return true;
}

static void accept_all(struct thpd_server *sv, int lfd, bool http, const struct thpd_state *st)
{
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		uint64_t now = now_ns();

		if (fd < 0)
			return;
		if (!make_room(sv)) {
			close(fd);
			continue;
		}
		sv->cl[sv->ncl] = (struct client){ .fd = fd, .http = http, .accepted = now, .last_io = now };
		/* Its request may be there already: answered before later
		 * connections can push it out. */
		if (serve(&sv->cl[sv->ncl++], st, now))
			continue;
		drop(sv, sv->ncl - 1);
	}
}

void thpd_server_handle(struct thpd_server *sv, const struct thpd_state *st)
{
	if (!sv)
		return;
	if (sv->unix_fd >= 0)
		accept_all(sv, sv->unix_fd, false, st);
	if (sv->tcp_fd >= 0)
		accept_all(sv, sv->tcp_fd, true, st);
	for (size_t i = 0; i < sv->ncl;) {
		uint64_t now = now_ns();
		struct client *c = &sv->cl[i];

		if (!serve(c, st, now) || now >= deadline(c))
			drop(sv, i);
		else
			i++;
	}
}

void thpd_server_relisten(struct thpd_server *sv, const char *listen_on)
{
	char *err = NULL;
	int fd;

	if (!sv || !strcmp(sv->listen ? sv->listen : "", listen_on ? listen_on : ""))
		return;
	if (!listen_on || !*listen_on) {
		thpd_log(LOG_INFO, "listen: HTTP on %s closed", sv->listen);
		close(sv->tcp_fd);
		sv->tcp_fd = -1;
		free(sv->listen);
		sv->listen = NULL;
		return;
	}
	fd = open_tcp(listen_on, &err);
	if (fd < 0 && sv->tcp_fd >= 0) {
		/* The new address may overlap the old one's port: free it and try again. */
		free(err);
		err = NULL;
		close(sv->tcp_fd);
		sv->tcp_fd = -1;
		fd = open_tcp(listen_on, &err);
		if (fd < 0) {
			char *err2 = NULL;

			sv->tcp_fd = open_tcp(sv->listen, &err2);
			free(err2);
		}
	}
	if (fd < 0) {
		thpd_log(LOG_ERR, "listen: %s; HTTP stays on %s", err ? err : "out of memory",
			 sv->tcp_fd >= 0 ? sv->listen : "nothing");
		free(err);
		if (sv->tcp_fd < 0) {
			free(sv->listen);
			sv->listen = NULL;
		}
		return;
	}
	if (sv->tcp_fd >= 0)
		close(sv->tcp_fd);
	thpd_log(LOG_INFO, "listen: HTTP now on %s (was %s)", listen_on, sv->listen ? sv->listen : "off");
	sv->tcp_fd = fd;
	free(sv->listen);
	sv->listen = strdup(listen_on);
}
