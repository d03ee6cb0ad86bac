/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* thpctl: the sd_notify relay of the collapse agent (notify.c). */
#ifndef THPCTL_NOTIFY_H
#define THPCTL_NOTIFY_H

#include <stdbool.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

struct notify_relay {
	int in;  /* our socket, whose name the command gets in NOTIFY_SOCKET; -1: no relay */
	int out; /* unbound socket that sends to the manager's */
	struct sockaddr_un to;
	socklen_t to_len;
	bool verbose;
};

/*
 * When NOTIFY_SOCKET names a socket, bind a socket of our own and point
 * NOTIFY_SOCKET at it for the command about to be started.  0 with
 * r->in = -1 when there is nothing to relay; -1 after printing why when the
 * relay cannot be set up (NOTIFY_SOCKET is then left as it was).
 */
int notify_relay_open(struct notify_relay *r, bool verbose);

/*
 * Forward every datagram waiting on r->in that comes from a process of our
 * tree to the manager, sent by us: MAINPID= is rewritten to our PID, file
 * descriptors passed along.  Others are dropped.
 */
void notify_relay_forward(struct notify_relay *r);

void notify_relay_close(struct notify_relay *r);

#endif
