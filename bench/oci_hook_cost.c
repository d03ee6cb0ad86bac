// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * What thp-oci-hook adds to a container's start, timed as a runtime runs it.
 *
 * Each run is what crun and runc do for a createRuntime hook: posix_spawn()
 * the program with a pipe as its stdin and /dev/null as stdout and stderr,
 * write the OCI state into the pipe, close it, wait4() for the exit.  The
 * wall time is from just before the spawn to just after the wait; the CPU
 * time is wait4()'s (the program and the children it reaped: the inject
 * helper).  Every run has a fresh "init" beside it, a child of this
 * process blocked in read() of a pipe as runc init and crun's child are at
 * createRuntime, with -t THREADS threads in all (runc init is a Go program
 * with several).  The rows, their order rotating from round to round:
 *
 *   baseline         BASELINE (default /bin/true): the floor of any hook
 *   HOOK, no pid     the state without "pid": parse, log, set nothing
 *   HOOK, never      the state asking for "never": the policy set on init
 *
 * one pair of HOOK rows per HOOK given (e.g. main's build and this one,
 * measured interleaved).  Each "never" run is checked: the init's
 * /proc/PID/status must show THP_enabled: 0 after it, 1 after the others.
 *
 * Usage: oci_hook_cost [-n ROUNDS] [-t THREADS] [-b BASELINE] [HOOK...]
 * (default 200 rounds, 1 thread, this build's hook).  Root, or the same
 * user as the hook's targets with ptrace rights over this process's
 * children.  Prints per row the median, p10, p90 and max in ms, the CPU
 * median, and against the baseline the median of the per-round
 * difference and the ratio of the medians.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "clock_ns.h"

#ifndef THP_BENCH_OCI_HOOK
#define THP_BENCH_OCI_HOOK "thp-oci-hook"
#endif

#define MAX_HOOKS 4
#define MAX_ROWS (1 + 2 * MAX_HOOKS)
#define MAX_THREADS 64

extern char **environ;

struct row {
	char name[96];
	const char *exe;
	bool never;	    /* the state asks for never on the init */
	double *wall, *cpu; /* ms, one per round */
	unsigned int failed;
};

/* A container's init at createRuntime: blocked in read() until "start". */
struct init {
	pid_t pid;
	int go; /* write end: a byte lets it exit */
};

static void *idle_thread(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

/* The init's main thread is in read(@fd) and all @threads threads exist. */
static bool init_waiting(pid_t pid, int fd, int threads)
{
	char path[64], buf[256], want[64];
	int n = 0, f;
	ssize_t len;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = open(path, O_RDONLY | O_CLOEXEC);
	if (f < 0)
		return false;
	{
		char st[4096];
		const char *p;

		len = read(f, st, sizeof(st) - 1);
		close(f);
		if (len <= 0)
			return false;
		st[len] = '\0';
		p = strstr(st, "\nThreads:");
		n = p ? atoi(p + 9) : 0;
	}
	if (n != threads)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/syscall", (int)pid);
	f = open(path, O_RDONLY | O_CLOEXEC);
	if (f < 0)
		return false;
	len = read(f, buf, sizeof(buf) - 1);
	close(f);
	if (len <= 0)
		return false;
	buf[len] = '\0';
	snprintf(want, sizeof(want), "%d 0x%x ", (int)SYS_read, fd);
	return strncmp(buf, want, strlen(want)) == 0;
}

static int init_start(struct init *in, int threads)
{
	int p[2];
	uint64_t deadline;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	in->pid = fork();
	if (in->pid < 0)
		return -1;
	if (in->pid == 0) {
		char c;

		close(p[1]);
		for (int i = 1; i < threads; i++) {
			pthread_t t;

			if (pthread_create(&t, NULL, idle_thread, NULL))
				_exit(3);
		}
		while (read(p[0], &c, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	close(p[0]);
	in->go = p[1];
	deadline = now_ns() + 10 * 1000000000ULL;
	while (!init_waiting(in->pid, p[0], threads)) {
		if (now_ns() > deadline) {
			fprintf(stderr, "init %d did not block in read() within 10 s\n",
				(int)in->pid);
			return -1;
		}
		usleep(200);
	}
	return 0;
}

static void init_end(struct init *in)
{
	int st;

	if (write(in->go, "x", 1) < 0)
		kill(in->pid, SIGKILL);
	close(in->go);
	waitpid(in->pid, &st, 0);
}

/* THP_enabled of the init: 0 or 1, -1 when not shown. */
static int init_thp_enabled(pid_t pid)
{
	char path[64], st[4096];
	const char *p;
	ssize_t len;
	int f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = open(path, O_RDONLY | O_CLOEXEC);
	if (f < 0)
		return -1;
	len = read(f, st, sizeof(st) - 1);
	close(f);
	if (len <= 0)
		return -1;
	st[len] = '\0';
	p = strstr(st, "\nTHP_enabled:");
	return p ? atoi(p + 13) : -1;
}

/*
 * The state as podman gives it: the annotations of a Kubernetes pod (as
 * CRI-O passes them) around the one the hook reads.
 */
static int make_state(char *buf, size_t len, pid_t pid)
{
	char pidfield[32] = "";

	if (pid > 0)
		snprintf(pidfield, sizeof(pidfield), "\"pid\":%d,", (int)pid);
	return snprintf(
		buf, len,
		"{\"ociVersion\":\"1.0.2-dev\","
		"\"id\":\"5f1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9\","
		"\"status\":\"created\",%s"
		"\"bundle\":\"/var/lib/containers/storage/overlay-containers/"
		"5f1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9/userdata\","
		"\"annotations\":{"
		"\"io.container.manager\":\"libpod\","
		"\"io.kubernetes.container.name\":\"redis\","
		"\"io.kubernetes.pod.name\":\"cache-7d9f8b6c5-x2x4q\","
		"\"io.kubernetes.pod.namespace\":\"default\","
		"\"io.kubernetes.pod.uid\":\"0b6c3a1e-2f4d-4e8a-9c7b-5d6e7f8a9b0c\","
		"\"io.kubernetes.cri-o.ContainerType\":\"container\","
		"\"io.kubernetes.cri-o.Image\":\"docker.io/library/redis:7\","
		"\"io.kubernetes.cri-o.Labels\":\"{\\\"app\\\":\\\"cache\\\",\\\"tier\\\":"
		"\\\"backend\\\"}\","
		"\"org.opencontainers.image.stopSignal\":\"15\","
		"\"libthp.io/thp-policy\":\"never\"}}",
		pidfield);
}

/* One run of @exe with @state on its stdin: 0, its wall and CPU time in ms. */
static int run_once(const char *exe, const char *state, size_t len, int devnull, double *wall,
		    double *cpu, int *status)
{
	char *const argv[] = { (char *)exe, NULL };
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, all;
	struct rusage ru;
	uint64_t t0, t1;
	size_t off = 0;
	int p[2], err;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, p[0], 0);
	posix_spawn_file_actions_adddup2(&fa, devnull, 1);
	posix_spawn_file_actions_adddup2(&fa, devnull, 2);
	/* This process ignores SIGPIPE (the baseline never reads); the program gets defaults. */
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawnattr_init(&at);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &all);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	t0 = now_ns();
	err = posix_spawn(&pid, exe, &fa, &at, argv, environ);
	close(p[0]);
	if (!err) {
		/* A program that does not read (the baseline) closes the pipe: EPIPE is fine. */
		while (off < len) {
			ssize_t w = write(p[1], state + off, len - off);

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0)
				break;
			off += (size_t)w;
		}
		close(p[1]);
		while (wait4(pid, status, 0, &ru) < 0 && errno == EINTR)
			;
	} else {
		close(p[1]);
	}
	t1 = now_ns();
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	if (err)
		return -err;
	*wall = (double)(t1 - t0) / 1e6;
	*cpu = (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
	return 0;
}

static double pct(const double *sorted, size_t n, int p)
{
	return sorted[(n - 1) * (size_t)p / 100];
}

static double median(const double *sorted, size_t n)
{
	return n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double *sorted_copy(const double *v, size_t n)
{
	double *s = malloc(n * sizeof(*s));

	if (!s) {
		perror("malloc");
		exit(1);
	}
	memcpy(s, v, n * sizeof(*s));
	qsort(s, n, sizeof(*s), cmp_double);
	return s;
}

static void usage(const char *prog)
{
	fprintf(stderr, "usage: %s [-n ROUNDS] [-t THREADS] [-b BASELINE] [HOOK...]\n", prog);
	exit(2);
}

int main(int argc, char **argv)
{
	const char *baseline = "/bin/true";
	struct row rows[MAX_ROWS];
	unsigned int failed = 0;
	size_t nrows = 0, rounds = 200;
	int threads = 1, opt, devnull;

	while ((opt = getopt(argc, argv, "n:t:b:h")) != -1) {
		switch (opt) {
		case 'n':
			rounds = strtoul(optarg, NULL, 10);
			break;
		case 't':
			threads = atoi(optarg);
			break;
		case 'b':
			baseline = optarg;
			break;
		default:
			usage(argv[0]);
		}
	}
	if (rounds < 1 || threads < 1 || threads > MAX_THREADS || argc - optind > MAX_HOOKS)
		usage(argv[0]);
	memset(rows, 0, sizeof(rows));
	snprintf(rows[0].name, sizeof(rows[0].name), "baseline %s", baseline);
	rows[0].exe = baseline;
	nrows = 1;
	for (int i = optind; i < argc || (i == optind && argc == optind); i++) {
		const char *hook = i < argc ? argv[i] : THP_BENCH_OCI_HOOK;
		int k = i - optind + 1;

		snprintf(rows[nrows].name, sizeof(rows[nrows].name), "hook %d, no pid", k);
		rows[nrows++].exe = hook;
		snprintf(rows[nrows].name, sizeof(rows[nrows].name), "hook %d, never", k);
		rows[nrows].never = true;
		rows[nrows++].exe = hook;
		printf("hook %d: %s\n", k, hook);
	}
	for (size_t r = 0; r < nrows; r++) {
		rows[r].wall = calloc(rounds, sizeof(double));
		rows[r].cpu = calloc(rounds, sizeof(double));
		if (!rows[r].wall || !rows[r].cpu) {
			perror("calloc");
			return 1;
		}
	}
	signal(SIGPIPE, SIG_IGN);
	devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	if (devnull < 0) {
		perror("/dev/null");
		return 1;
	}
	printf("%zu rounds, init with %d thread(s), rows in rotating order\n", rounds, threads);
	fflush(stdout);
	for (size_t i = 0; i < rounds; i++) {
		for (size_t j = 0; j < nrows; j++) {
			/* Rotate, and reverse every other round: no row always follows another. */
			size_t k = (i / 2 + (i % 2 ? nrows - 1 - j : j)) % nrows;
			struct row *w = &rows[k];
			char state[4096];
			struct init in;
			int len, st = 0, thp, err;

			if (init_start(&in, threads) < 0)
				return 1;
			len = make_state(state, sizeof(state), w->never || k == 0 ? in.pid : 0);
			err = run_once(w->exe, state, (size_t)len, devnull, &w->wall[i], &w->cpu[i],
				       &st);
			if (err) {
				fprintf(stderr, "%s: %s\n", w->exe, strerror(-err));
				return 1;
			}
			thp = init_thp_enabled(in.pid);
			if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || thp != (w->never ? 0 : 1)) {
				if (!w->failed)
					fprintf(stderr, "%s: exit status 0x%x, init's THP_enabled %d\n",
						w->name, st, thp);
				w->failed++;
				failed++;
			}
			init_end(&in);
		}
	}
	printf("%-28s %8s %8s %8s %8s %8s %10s %7s\n", "row (ms)", "median", "p10", "p90", "max",
	       "CPU med", "+baseline", "ratio");
	{
		double *b = sorted_copy(rows[0].wall, rounds);
		double bmed = median(b, rounds);

		for (size_t r = 0; r < nrows; r++) {
			double *s = sorted_copy(rows[r].wall, rounds);
			double *c = sorted_copy(rows[r].cpu, rounds);
			double *d = malloc(rounds * sizeof(*d));

			if (!d)
				return 1;
			/* The difference within each round: both runs saw the same moment's load. */
			for (size_t i = 0; i < rounds; i++)
				d[i] = rows[r].wall[i] - rows[0].wall[i];
			qsort(d, rounds, sizeof(*d), cmp_double);
			printf("%-28s %8.3f %8.3f %8.3f %8.3f %8.3f %10.3f %7.2f\n", rows[r].name,
			       median(s, rounds), pct(s, rounds, 10), pct(s, rounds, 90),
			       s[rounds - 1], median(c, rounds), median(d, rounds),
			       median(s, rounds) / bmed);
			free(s);
			free(c);
			free(d);
		}
		free(b);
	}
	if (failed)
		printf("%u run(s) failed their check\n", failed);
	return failed ? 1 : 0;
}
