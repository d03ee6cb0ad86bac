// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The sd_notify relay of "thpctl run" when thpctl stays the parent (the
 * collapse agent).  systemd accepts a Type=notify service's messages only
 * from its main PID (NotifyAccess=main), and the main PID is thpctl, so a
 * READY=1 from the command would be dropped and the unit would time out.
 * thpctl therefore gives the command a socket of its own in NOTIFY_SOCKET
 * (abstract, autobound: nothing to clean up, works under ProtectSystem=),
 * takes only datagrams whose kernel-checked sender (SCM_CREDENTIALS) is a
 * process of its own tree, and sends them on to the manager's socket as
 * itself.  MAINPID= is rewritten to thpctl's PID: thpctl stays the process
 * that signals and the exit status go through.  Passed file descriptors
 * (FDSTORE=1, the pipe of sd_notify_barrier()) go along.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "notify.h"
#include "thpctl.h"

/* systemd reads at most this much of a notification (NOTIFY_BUFFER_MAX). */
#define NOTIFY_MAX 4096
#define NOTIFY_FDS_MAX 768

/* NOTIFY_SOCKET's "/path" or "@abstract" as an address; false for anything else. */
static bool parse_address(const char *s, struct sockaddr_un *a, socklen_t *len)
{
	size_t n = strlen(s);

	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	if ((s[0] != '/' && s[0] != '@') || n < 2 || n >= sizeof(a->sun_path))
		return false;
	memcpy(a->sun_path, s, n);
	if (s[0] == '@')
		a->sun_path[0] = 0;
	*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + (s[0] == '/'));
	return true;
}

int notify_relay_open(struct notify_relay *r, bool verbose)
{
	const char *env = getenv("NOTIFY_SOCKET");
	struct sockaddr_un own = { .sun_family = AF_UNIX };
	socklen_t own_len = sizeof(own);
	char name[sizeof(own.sun_path) + 1];
	int one = 1;
	size_t n;

	r->in = r->out = -1;
	r->verbose = verbose;
	if (!env || !*env)
		return 0;
	if (!parse_address(env, &r->to, &r->to_len)) {
		thpctl_error("run: NOTIFY_SOCKET '%s' is not a path or abstract socket name; "
			     "not relayed, the command's notifications come from a process "
			     "that is not the main PID", env);
		return -1;
	}
	r->in = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	r->out = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (r->in < 0 || r->out < 0 ||
	    setsockopt(r->in, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) ||
	    /* Only the family: the kernel picks a free abstract name. */
	    bind(r->in, (struct sockaddr *)&own, sizeof(sa_family_t)) ||
	    getsockname(r->in, (struct sockaddr *)&own, &own_len) ||
	    own_len <= offsetof(struct sockaddr_un, sun_path) + 1) {
		thpctl_error("run: cannot set up the sd_notify relay: %s", strerror(errno));
		notify_relay_close(r);
		return -1;
	}
	n = own_len - offsetof(struct sockaddr_un, sun_path);
	name[0] = '@';
	memcpy(name + 1, own.sun_path + 1, n - 1);
	name[n] = 0;
	if (setenv("NOTIFY_SOCKET", name, 1)) {
		thpctl_error("run: cannot set NOTIFY_SOCKET: %s", strerror(errno));
		notify_relay_close(r);
		return -1;
	}
	return 0;
}

/* Is @pid a descendant of ours?  Read up the parent chain in /proc. */
static bool in_tree(pid_t pid)
{
	pid_t self = getpid();

	for (int depth = 0; pid > 1 && depth < 64; depth++) {
		char path[64], buf[512], *p;
		ssize_t len;
		int fd, ppid = -1;

		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return false;
		len = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (len <= 0)
			return false;
		buf[len] = 0;
		p = strrchr(buf, ')');
		if (!p || sscanf(p + 1, " %*c %d", &ppid) != 1)
			return false;
		if (ppid == self)
			return true;
		pid = ppid;
	}
	return false;
}

/*
 * @msg with every "MAINPID=..." line replaced by our PID, into @out (room
 * for NOTIFY_MAX + 32).  The length of the result.
 */
static size_t rewrite(const char *msg, size_t len, char *out)
{
	size_t o = 0, i = 0;

	while (i < len) {
		const char *nl = memchr(msg + i, '\n', len - i);
		size_t end = nl ? (size_t)(nl - msg) + 1 : len;

		if (end - i >= 8 && !memcmp(msg + i, "MAINPID=", 8) && o + 32 < NOTIFY_MAX + 32) {
			o += (size_t)snprintf(out + o, 32, "MAINPID=%d%s", (int)getpid(),
					      nl ? "\n" : "");
		} else if (o + (end - i) <= NOTIFY_MAX + 32) {
			memcpy(out + o, msg + i, end - i);
			o += end - i;
		}
		i = end;
	}
	return o;
}

static void close_fds(const int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		close(fds[i]);
}

void notify_relay_forward(struct notify_relay *r)
{
	if (r->in < 0)
		return;
	for (;;) {
		char msg[NOTIFY_MAX + 1], out[NOTIFY_MAX + 32];
		union {
			struct cmsghdr h;
			char buf[CMSG_SPACE(sizeof(struct ucred)) +
				 CMSG_SPACE(sizeof(int) * NOTIFY_FDS_MAX)];
		} ctl;
		struct iovec iov = { .iov_base = msg, .iov_len = sizeof(msg) };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1,
				     .msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf) };
		const struct ucred *cred = NULL;
		int *fds = NULL;
		size_t nfds = 0, outlen;
		ssize_t n = recvmsg(r->in, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC | MSG_TRUNC);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
			if (c->cmsg_level != SOL_SOCKET)
				continue;
			if (c->cmsg_type == SCM_CREDENTIALS &&
			    c->cmsg_len == CMSG_LEN(sizeof(struct ucred)))
				cred = (const struct ucred *)(void *)CMSG_DATA(c);
			else if (c->cmsg_type == SCM_RIGHTS) {
				fds = (int *)(void *)CMSG_DATA(c);
				nfds = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			}
		}
		/* pid 0: sent from another PID namespace, so not one of ours. */
		if (!cred || cred->pid <= 0 || !in_tree(cred->pid) || (size_t)n > NOTIFY_MAX ||
		    (mh.msg_flags & MSG_CTRUNC)) {
			if (r->verbose)
				fprintf(stderr, "thpctl: notify: dropped a message from pid %d\n",
					cred ? (int)cred->pid : -1);
			close_fds(fds, nfds);
			continue;
		}
		outlen = rewrite(msg, (size_t)n, out);
		{
			struct iovec oiov = { .iov_base = out, .iov_len = outlen };
			union {
				struct cmsghdr h;
				char buf[CMSG_SPACE(sizeof(int) * NOTIFY_FDS_MAX)];
			} octl;
			struct msghdr omh = { .msg_name = &r->to, .msg_namelen = r->to_len,
					      .msg_iov = &oiov, .msg_iovlen = 1 };

			if (nfds) {
				struct cmsghdr *c;

				memset(&octl, 0, sizeof(octl));
				omh.msg_control = octl.buf;
				omh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
				c = CMSG_FIRSTHDR(&omh);
				c->cmsg_level = SOL_SOCKET;
				c->cmsg_type = SCM_RIGHTS;
				c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
				memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
			}
			/* The kernel attaches our credentials: the manager sets SO_PASSCRED. */
			if (sendmsg(r->out, &omh, MSG_NOSIGNAL) < 0 && r->verbose)
				fprintf(stderr, "thpctl: notify: cannot forward to NOTIFY_SOCKET: %s\n",
					strerror(errno));
		}
		close_fds(fds, nfds);
	}
}

void notify_relay_close(struct notify_relay *r)
{
	if (r->in >= 0)
		close(r->in);
	if (r->out >= 0)
		close(r->out);
	r->in = r->out = -1;
}
