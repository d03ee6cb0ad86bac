// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A member of a process tree for the collapse agent's peer rule: takes on
 * the credentials it is told, then maps MIB MiB of anonymous memory with a
 * raw mmap system call (no preload, no advice: only the agent can make it
 * huge), touches it, prints "ready PID NAME" and waits for EOF on stdin.
 *
 *   peer_target [--gid G] [--uid U] [--dumpable 0|1] [--mib N] [--name NAME]
 *               [--exec PROGRAM ARGS...]
 *   peer_target --reuse FIRST,SECOND   (each "peer" or "other")
 *
 * Options act in order: --gid/--uid set all three IDs, --exec runs
 * PROGRAM with the rest (a set-user-ID copy, say).  --reuse forks a member
 * FIRST, lets the agent see it for a second, ends it, and forks a member
 * SECOND that has the same PID (/proc/sys/kernel/ns_last_pid, root only);
 * "other" runs as uid/gid 65534, dumpable.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static void die(const char *what)
{
	fprintf(stderr, "peer_target: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void become(unsigned int uid, unsigned int gid)
{
	if (setgroups(0, NULL) || setresgid(gid, gid, gid) || setresuid(uid, uid, uid))
		die("cannot change credentials");
	/* A credential change leaves a process non-dumpable: undo that. */
	if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0))
		die("PR_SET_DUMPABLE");
}

static void map_and_touch(size_t mib)
{
	size_t len = mib << 20;
#ifdef SYS_mmap2
	/* 32-bit targets: i386's SYS_mmap takes a struct, armhf has none. */
	char *p = (char *)syscall(SYS_mmap2, NULL, len, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0L);
#else
	char *p = (char *)syscall(SYS_mmap, NULL, len, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
#endif

	if (p == MAP_FAILED)
		die("mmap");
	for (size_t off = 0; off < len; off += 4096)
		p[off] = 1;
}

static void announce(const char *name)
{
	printf("ready %d %s\n", (int)getpid(), name);
	fflush(stdout);
}

/* Until @fd reaches EOF (or breaks). */
static void wait_eof(int fd)
{
	char c;

	while (read(fd, &c, 1) > 0 || errno == EINTR)
		;
}

static void member(const char *role, const char *name, int fd)
{
	if (!strcmp(role, "other"))
		become(65534, 65534);
	map_and_touch(32);
	announce(name);
	wait_eof(fd);
	_exit(0);
}

static int set_last_pid(pid_t pid)
{
	char buf[32];
	int fd = open("/proc/sys/kernel/ns_last_pid", O_WRONLY | O_CLOEXEC);
	int n = snprintf(buf, sizeof(buf), "%d", (int)pid);
	int ok;

	if (fd < 0)
		return -1;
	ok = write(fd, buf, (size_t)n) == n;
	close(fd);
	return ok ? 0 : -1;
}

static int reuse(const char *spec)
{
	char first[16], second[16];
	int release[2];
	pid_t a, b = -1;

	if (sscanf(spec, "%15[a-z],%15[a-z]", first, second) != 2)
		return 2;
	if (pipe(release))
		die("pipe");
	a = fork();
	if (a == 0) {
		close(release[1]);
		member(first, "first", release[0]);
	}
	close(release[0]);
	sleep(1); /* several agent passes see FIRST */
	close(release[1]);
	waitpid(a, NULL, 0);
	for (int tries = 0; tries < 500 && b != a; tries++) {
		if (set_last_pid(a - 1))
			die("ns_last_pid");
		b = fork();
		if (b == 0) {
			if (getpid() != a)
				_exit(0);
			member(second, "second", 0);
		}
		if (b != a)
			waitpid(b, NULL, 0);
	}
	if (b != a) {
		fprintf(stderr, "peer_target: PID %d was not reused\n", (int)a);
		return 3;
	}
	wait_eof(0);
	waitpid(b, NULL, 0);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned int gid = 0;
	size_t mib = 64;
	const char *name = "member";

	for (int i = 1; i < argc; i++) {
		const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!v)
			break;
		if (!strcmp(o, "--reuse"))
			return reuse(v);
		if (!strcmp(o, "--exec")) {
			execv(v, argv + i + 1);
			die("exec");
		}
		i++;
		if (!strcmp(o, "--gid")) {
			gid = (unsigned int)strtoul(v, NULL, 10);
		} else if (!strcmp(o, "--uid")) {
			unsigned int uid = (unsigned int)strtoul(v, NULL, 10);

			become(uid, gid ? gid : uid);
		} else if (!strcmp(o, "--dumpable")) {
			if (prctl(PR_SET_DUMPABLE, strtoul(v, NULL, 10), 0, 0, 0))
				die("PR_SET_DUMPABLE");
		} else if (!strcmp(o, "--mib")) {
			mib = strtoul(v, NULL, 10);
		} else if (!strcmp(o, "--name")) {
			name = v;
		} else {
			fprintf(stderr, "peer_target: unknown option %s\n", o);
			return 2;
		}
	}
	map_and_touch(mib);
	announce(name);
	wait_eof(0);
	return 0;
}
