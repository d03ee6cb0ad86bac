// SPDX-License-Identifier: LGPL-2.1-or-later
/* thpd: finding processes: the kernel's proc connector when allowed, a /proc walk always. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <syslog.h>
#include <unistd.h>

#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>

#include "clock_ns.h" /* lib/: clock_ns(), now_ns() */
#include "log.h"
#include "thpd.h"

/* Messages read between two charges of a drain's CPU. */
#define DRAIN_CHARGE_EVERY 32

struct thpd_scan {
	int nl; /* the connector socket, -1 without */
	/* The events' own CPU budget: a bucket in CPU seconds filled at @rate
	 * of wall time up to @cap_s, drained by the CPU of every drain and of
	 * the early passes the events asked for. */
	double rate, cap_s, bucket_s;
	uint64_t last_wall_ns;
	int mode; /* enum thpd_events_mode of the current drain */
	struct thpd_scan_stats stats;
};

static int connector_open(void)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = CN_IDX_PROC, .nl_pid = 0 };
	/*
	 * The connector's message is a cn_msg whose flexible data[] is the
	 * operation: laid out as it goes on the wire, which clang calls a GNU
	 * extension (gcc and the kernel's own samples use it).
	 */
#ifdef __clang__
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wgnu-variable-sized-type-not-at-end"
#endif
	struct {
		struct nlmsghdr nh;
		struct cn_msg cn;
		enum proc_cn_mcast_op op;
	} __attribute__((packed)) req;
	struct {
		struct nlmsghdr nh;
		struct cn_msg cn;
		uint32_t op, events;
	} __attribute__((packed)) filt;
#ifdef __clang__
#pragma clang diagnostic pop
#endif
	int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_CONNECTOR);

	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		goto fail;
	memset(&req, 0, sizeof(req));
	req.nh.nlmsg_len = sizeof(req);
	req.nh.nlmsg_type = NLMSG_DONE;
	req.nh.nlmsg_pid = (uint32_t)getpid();
	req.cn.id.idx = CN_IDX_PROC;
	req.cn.id.val = CN_VAL_PROC;
	req.cn.len = sizeof(req.op);
	req.op = PROC_CN_MCAST_LISTEN;
	if (send(fd, &req, sizeof(req), 0) != (ssize_t)sizeof(req))
		goto fail;
	/* Linux 6.6 and later take the events wanted in a second word (struct
	 * proc_input): forks, every thread's among them, and the others are
	 * then not even queued.  Earlier kernels ignore a message of this
	 * length, and the one above keeps every event coming. */
	memset(&filt, 0, sizeof(filt));
	filt.nh = req.nh;
	filt.nh.nlmsg_len = sizeof(filt);
	filt.cn = req.cn;
	filt.cn.len = sizeof(filt.op) + sizeof(filt.events);
	filt.op = PROC_CN_MCAST_LISTEN;
	filt.events = (uint32_t)PROC_EVENT_EXEC | (uint32_t)PROC_EVENT_UID | (uint32_t)PROC_EVENT_EXIT;
	if (send(fd, &filt, sizeof(filt), 0) != (ssize_t)sizeof(filt))
		thpd_log(LOG_DEBUG, "proc connector: no event filter: %s", strerror(errno));
	return fd;
fail:
	close(fd);
	return -1;
}

struct thpd_scan *thpd_scan_open(bool want_connector)
{
	struct thpd_scan *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->nl = want_connector ? connector_open() : -1;
	s->rate = s->cap_s = s->bucket_s = 0.01;
	s->last_wall_ns = now_ns();
	return s;
}

void thpd_scan_close(struct thpd_scan *s)
{
	if (!s)
		return;
	if (s->nl >= 0)
		close(s->nl);
	free(s);
}

bool thpd_scan_has_connector(const struct thpd_scan *s)
{
	return s && s->nl >= 0;
}

int thpd_scan_fd(const struct thpd_scan *s)
{
	return s ? s->nl : -1;
}

void thpd_scan_budget(struct thpd_scan *s, double rate, double cap_s)
{
	if (!s)
		return;
	s->rate = rate;
	s->cap_s = cap_s;
	if (s->bucket_s > cap_s)
		s->bucket_s = cap_s;
}

void thpd_scan_charge(struct thpd_scan *s, uint64_t ns)
{
	if (!s)
		return;
	s->bucket_s -= (double)ns / 1e9;
	s->stats.cpu_ns += ns;
	/* A debt deeper than this is never paid back: the events are dropped
	 * long before, and a storm's end must not leave them dropped for long. */
	if (s->bucket_s < -2 * s->cap_s)
		s->bucket_s = -2 * s->cap_s;
}

int thpd_scan_mode(const struct thpd_scan *s)
{
	return s ? s->mode : THPD_EVENTS_HANDLE;
}

const struct thpd_scan_stats *thpd_scan_stats(const struct thpd_scan *s)
{
	static const struct thpd_scan_stats none;

	return s ? &s->stats : &none;
}

/* The mode of this drain by what the bucket holds, refilled up to now. */
static void refill(struct thpd_scan *s)
{
	uint64_t now = now_ns();

	s->bucket_s += s->rate * (double)(now - s->last_wall_ns) / 1e9;
	s->last_wall_ns = now;
	if (s->bucket_s > s->cap_s)
		s->bucket_s = s->cap_s;
	if (s->bucket_s > 0)
		s->mode = THPD_EVENTS_HANDLE;
	else if (s->bucket_s > -s->cap_s)
		s->mode = THPD_EVENTS_DEFER;
	else
		s->mode = THPD_EVENTS_DROP;
}

int thpd_scan_drain(struct thpd_scan *s, void (*on_exec)(void *, pid_t),
		    void (*on_exit)(void *, pid_t), void *arg)
{
	char buf[8192] __attribute__((aligned(NLMSG_ALIGNTO)));
	bool deferred = false;
	uint64_t c0;
	int lost = 0;

	if (!s || s->nl < 0)
		return 0;
	refill(s);
	if (s->mode == THPD_EVENTS_DROP) {
		/* Not even received: the kernel drops what the socket cannot
		 * hold, and the next pass reads every process in /proc. */
		s->stats.drops++;
		return 1;
	}
	c0 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
	for (unsigned since = 0;; since++) {
		struct nlmsghdr *nh;
		ssize_t n;

		/* A long backlog is charged as it is read: the budget can run
		 * out in the middle of it. */
		if (since == DRAIN_CHARGE_EVERY) {
			uint64_t c1 = clock_ns(CLOCK_PROCESS_CPUTIME_ID);

			since = 0;
			thpd_scan_charge(s, c1 - c0);
			c0 = c1;
			refill(s);
			if (s->mode == THPD_EVENTS_DROP) {
				s->stats.drops++;
				lost = 1;
				break;
			}
		}
		deferred |= s->mode == THPD_EVENTS_DEFER;
		n = recv(s->nl, buf, sizeof(buf), 0);
		if (n < 0) {
			/* ENOBUFS: events were lost; the next /proc walk finds what they said. */
			if (errno == ENOBUFS)
				lost = 1;
			if (errno == EINTR || errno == ENOBUFS)
				continue;
			break;
		}
		for (nh = (struct nlmsghdr *)buf; NLMSG_OK(nh, (size_t)n); nh = NLMSG_NEXT(nh, n)) {
			struct cn_msg *cn = NLMSG_DATA(nh);
			struct proc_event ev;

			if (nh->nlmsg_type == NLMSG_ERROR || nh->nlmsg_type == NLMSG_NOOP)
				continue;
			if (cn->id.idx != CN_IDX_PROC || cn->len < sizeof(struct proc_event) -
									   sizeof(ev.event_data) + sizeof(ev.event_data.exit))
				continue;
			/* Copied out: in the message it is 4-byte aligned, the struct needs 8. */
			memset(&ev, 0, sizeof(ev));
			memcpy(&ev, cn->data, cn->len < sizeof(ev) ? cn->len : sizeof(ev));
			if (ev.what == PROC_EVENT_EXEC &&
			    ev.event_data.exec.process_pid == ev.event_data.exec.process_tgid) {
				s->stats.execs++;
				on_exec(arg, ev.event_data.exec.process_pid);
			} else if (ev.what == PROC_EVENT_EXIT &&
				   ev.event_data.exit.process_pid == ev.event_data.exit.process_tgid) {
				on_exit(arg, ev.event_data.exit.process_pid);
			} else if (ev.what == PROC_EVENT_UID) {
				/* A new uid (setresuid() without exec) may match
				 * other rules: read as after an exec.  glibc changes
				 * every thread: each reports, under its tgid. */
				s->stats.uids++;
				on_exec(arg, ev.event_data.id.process_tgid);
			}
		}
	}
	if (deferred)
		s->stats.deferred_drains++;
	thpd_scan_charge(s, clock_ns(CLOCK_PROCESS_CPUTIME_ID) - c0);
	return lost;
}

int thpd_scan_proc(void (*fn)(void *, pid_t), void *arg)
{
	DIR *d = opendir("/proc");
	struct dirent *e;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		char *end;
		long pid;

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		pid = strtol(e->d_name, &end, 10);
		if (*end || pid <= 0)
			continue;
		fn(arg, (pid_t)pid);
	}
	closedir(d);
	return 0;
}

int thpd_proc_stat(pid_t pid, char *comm, size_t commlen, uint64_t *starttime)
{
	char path[64], buf[1024];
	const char *lp, *rp, *p;
	unsigned long long st;
	ssize_t n;
	int field;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	n = thpd_read_small(path, buf, sizeof(buf));
	if (n <= 0)
		return -1;
	/* comm may hold ')' and spaces: it ends at the last ')'. */
	lp = strchr(buf, '(');
	rp = strrchr(buf, ')');
	if (!lp || !rp || rp < lp)
		return -1;
	if (comm) {
		size_t len = (size_t)(rp - lp - 1);

		if (len >= commlen)
			len = commlen - 1;
		memcpy(comm, lp + 1, len);
		comm[len] = '\0';
	}
	/* starttime is field 22; field 3 (state) follows ") ". */
	p = rp + 2;
	for (field = 3; field < 22 && p; field++) {
		p = strchr(p, ' ');
		if (p)
			p++;
	}
	if (!p || sscanf(p, "%llu", &st) != 1)
		return -1;
	*starttime = st;
	return 0;
}
