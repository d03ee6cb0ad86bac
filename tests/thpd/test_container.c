// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * thpd's container identity (tools/thpd/container_id.c, container_meta.c)
 * against a fake tree of runtime records in a temporary directory: every
 * runtime and cgroup driver, and hostile records (links, FIFOs, huge
 * files, bad JSON, deep nesting, bytes that are not UTF-8, foreign
 * owners).  With --bench N: the cost of a new container, N of them.
 */
#ifndef _GNU_SOURCE /* the fuzz build defines it */
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "container.h"
#include "thpd.h"

static int failures;
static char root[256];

#define CHECK(cond, ...)                                                      \
	do {                                                                  \
		if (!(cond)) {                                                \
			failures++;                                           \
			fprintf(stderr, "%s:%d: FAIL: ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);                         \
			fputc('\n', stderr);                                  \
		}                                                             \
	} while (0)

static const char *S(const char *s)
{
	return s ? s : "(null)";
}

/* An id of 64 hex digits made of @c. */
static const char *ID(char c)
{
	static char ids[16][65];
	static int next;
	char *s = ids[next++ % 16];

	memset(s, c, 64);
	s[64] = '\0';
	return s;
}

/* @fmt with its one "%s" replaced by @id (not printf: the table's formats are data). */
static char *fill_id(char *out, size_t cap, const char *fmt, const char *id)
{
	const char *at = strstr(fmt, "%s");

	if (!at)
		snprintf(out, cap, "%s", fmt);
	else
		snprintf(out, cap, "%.*s%s%s", (int)(at - fmt), fmt, id, at + 2);
	return out;
}

/* --- cgroup paths -------------------------------------------------------- */

struct path_row {
	const char *name;
	const char *fmt; /* %s: the id */
	int runtime;
	const char *pod_uid;
	int owner; /* rootless uid, -1 none */
};

static const char *const UID_ = "12345678_aaaa_bbbb_cccc_0123456789ab";
static const char *const UID = "12345678-aaaa-bbbb-cccc-0123456789ab";

static void test_paths(void)
{
	static char fmts[32][512];
	const struct path_row rows[] = {
		{ "docker systemd", "/system.slice/docker-%s.scope", THPD_RT_DOCKER, "", -1 },
		{ "docker cgroupfs", "/docker/%s", THPD_RT_DOCKER, "", -1 },
		{ "podman systemd", "/machine.slice/libpod-%s.scope", THPD_RT_PODMAN, "", -1 },
		{ "podman leaf", "/machine.slice/libpod-%s.scope/container", THPD_RT_PODMAN, "", -1 },
		{ "podman pod", "/machine.slice/machine-libpod_pod_abc.slice/libpod-%s.scope",
		  THPD_RT_PODMAN, "", -1 },
		{ "podman cgroupfs", "/libpod_parent/libpod-%s", THPD_RT_PODMAN, "", -1 },
		{ "podman rootless",
		  "/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-%s.scope",
		  THPD_RT_PODMAN, "", 1000 },
		{ "crio systemd", fmts[0], THPD_RT_CRIO, UID, -1 },
		{ "containerd systemd", fmts[1], THPD_RT_CONTAINERD, UID, -1 },
		{ "containerd guaranteed", fmts[2], THPD_RT_CONTAINERD, UID, -1 },
		{ "kubepods cgroupfs", "/kubepods/burstable/pod"
				       "12345678-aaaa-bbbb-cccc-0123456789ab/%s",
		  THPD_RT_KUBEPODS, UID, -1 },
		{ "kubepods cgroupfs guaranteed", "/kubepods/pod12345678-aaaa-bbbb-cccc-0123456789ab/%s",
		  THPD_RT_KUBEPODS, UID, -1 },
		{ "crio cgroupfs", "/kubepods/besteffort/pod12345678-aaaa-bbbb-cccc-0123456789ab/crio-%s",
		  THPD_RT_CRIO, UID, -1 },
		{ "podman conmon", "/machine.slice/libpod-conmon-%s.scope", THPD_RT_NONE, "", -1 },
		{ "crio conmon", "/kubepods.slice/crio-conmon-%s.scope", THPD_RT_NONE, "", -1 },
		{ "bare id", "/x/%s", THPD_RT_NONE, "", -1 },
		{ "dot dot", "/docker/../%s", THPD_RT_NONE, "", -1 },
		{ "scope suffix", "/system.slice/docker-%s.scopex", THPD_RT_NONE, "", -1 },
		{ "service", "/system.slice/docker.service", THPD_RT_NONE, "", -1 },
		{ "root", "/", THPD_RT_NONE, "", -1 },
	};

	snprintf(fmts[0], sizeof(fmts[0]),
		 "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod%s.slice/crio-%%s.scope",
		 UID_);
	snprintf(fmts[1], sizeof(fmts[1]),
		 "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod%s.slice/"
		 "cri-containerd-%%s.scope",
		 UID_);
	snprintf(fmts[2], sizeof(fmts[2]), "/kubepods.slice/kubepods-pod%s.slice/cri-containerd-%%s.scope",
		 UID_);
	for (size_t i = 0; i < sizeof(rows) / sizeof(*rows); i++) {
		const struct path_row *r = &rows[i];
		struct thpd_ctr_ref ref;
		char path[1024];
		int got;

		fill_id(path, sizeof(path), r->fmt, ID('a'));
		got = thpd_ctr_parse_path(path, strlen(path), &ref);
		CHECK(got == (r->runtime != THPD_RT_NONE), "%s: %s: found %d", r->name, path, got);
		CHECK(ref.runtime == r->runtime, "%s: runtime %s, want %s", r->name,
		      thpd_runtime_name(ref.runtime), thpd_runtime_name(r->runtime));
		if (r->runtime != THPD_RT_NONE)
			CHECK(!strcmp(ref.id, ID('a')), "%s: id %s", r->name, ref.id);
		CHECK(!strcmp(ref.pod_uid, r->pod_uid), "%s: pod uid \"%s\"", r->name, ref.pod_uid);
		CHECK(ref.rootless == (r->owner >= 0) && (r->owner < 0 || ref.owner == (uid_t)r->owner),
		      "%s: rootless %d owner %u", r->name, ref.rootless, (unsigned)ref.owner);
	}
	/* Hostile ids and paths. */
	{
		const char *bad[] = { "/docker/ABCDEF", "/docker-", "///", "", "/system.slice/docker-.scope" };
		struct thpd_ctr_ref ref;
		char path[256];

		for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
			CHECK(!thpd_ctr_parse_path(bad[i], strlen(bad[i]), &ref), "bad path %s found", bad[i]);
		snprintf(path, sizeof(path), "/docker/%s", ID('A'));
		CHECK(!thpd_ctr_parse_path(path, strlen(path), &ref), "upper-case id found");
		snprintf(path, sizeof(path), "/docker/%.63s", ID('a'));
		CHECK(!thpd_ctr_parse_path(path, strlen(path), &ref), "63-digit id found");
		snprintf(path, sizeof(path), "/docker/%sa", ID('a'));
		CHECK(!thpd_ctr_parse_path(path, strlen(path), &ref), "65-digit id found");
		snprintf(path, sizeof(path), "/docker/\xff\xfe/%s", ID('a'));
		CHECK(!thpd_ctr_parse_path(path, strlen(path), &ref), "id after non-UTF-8 found");
		/* The innermost of two. */
		snprintf(path, sizeof(path), "/system.slice/docker-%s.scope/docker/%s", ID('1'), ID('2'));
		CHECK(thpd_ctr_parse_path(path, strlen(path), &ref) && !strcmp(ref.id, ID('2')),
		      "nested: %s", ref.id);
		/* The length given, not the NUL: a path cut before its id names none. */
		snprintf(path, sizeof(path), "/docker/%s", ID('a'));
		CHECK(!thpd_ctr_parse_path(path, 20, &ref), "cut path found");
	}
	{
		size_t n = 1 << 20;
		char *big = malloc(n + 80);
		struct thpd_ctr_ref ref;

		memset(big, '/', n);
		snprintf(big + n, 80, "docker/%s", ID('b'));
		CHECK(thpd_ctr_parse_path(big, strlen(big), &ref) && !strcmp(ref.id, ID('b')),
		      "1 MiB of slashes");
		free(big);
	}
	/* /proc/PID/cgroup: v2 first, v1 controllers after (cgroupfs on a hybrid machine). */
	{
		char text[1024];
		struct thpd_ctr_ref ref;

		snprintf(text, sizeof(text), "12:pids:/docker/%s\n4:memory:/docker/%s\n0::/\n", ID('c'),
			 ID('c'));
		CHECK(thpd_ctr_parse_proc_cgroup(text, &ref) && ref.runtime == THPD_RT_DOCKER &&
			      !strcmp(ref.id, ID('c')),
		      "v1 line: %s", ref.id);
		snprintf(text, sizeof(text), "1:name=systemd:/docker/%s\n0::/system.slice/docker-%s.scope\n",
			 ID('d'), ID('e'));
		CHECK(thpd_ctr_parse_proc_cgroup(text, &ref) && !strcmp(ref.id, ID('e')), "v2 first: %s",
		      ref.id);
		CHECK(!thpd_ctr_parse_proc_cgroup("0::/user.slice\n", &ref), "no container");
		CHECK(!thpd_ctr_parse_proc_cgroup("garbage", &ref), "garbage");
		CHECK(!thpd_ctr_parse_proc_cgroup("", &ref), "empty");
	}
}

/* --- the fake tree --------------------------------------------------------- */

static void mkdirs(const char *rel)
{
	char path[1024], *s;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (s = path + strlen(root) + 1; (s = strchr(s, '/')); s++) {
		*s = '\0';
		mkdir(path, 0755);
		*s = '/';
	}
}

static void put(const char *rel, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(const char *rel, const char *fmt, ...)
{
	char path[1024];
	va_list ap;
	FILE *f;

	mkdirs(rel);
	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "w");
	if (!f) {
		perror(path);
		exit(1);
	}
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fclose(f);
}

static char *relf(const char *fmt, const char *id)
{
	static char bufs[4][512];
	static int next;
	char *b = bufs[next++ % 4];

	return fill_id(b, 512, fmt, id);
}

#define PODMAN_OCI "run/containers/storage/overlay-containers/%s/userdata/config.json"
#define PODMAN_GRAPH "var/lib/containers/storage/overlay-containers/%s/userdata/config.json"
#define CONTAINERD_OCI "run/containerd/io.containerd.runtime.v2.task/k8s.io/%s/config.json"
#define MOBY_OCI "run/containerd/io.containerd.runtime.v2.task/moby/%s/config.json"
#define DOCKER_V2 "var/lib/docker/containers/%s/config.v2.json"

static struct thpd_ctr *get(const char *fmt, const char *id)
{
	char text[1024];

	snprintf(text, sizeof(text), "0::");
	fill_id(text + 3, sizeof(text) - 3, fmt, id);
	strcat(text, "\n");
	return thpd_ctr_get(text);
}

static void test_runtimes(void)
{
	struct thpd_ctr *c;

	/* podman: annotations in the bundle (graph root), the name in containers/storage's list. */
	put(relf(PODMAN_GRAPH, ID('1')),
	    "{\"ociVersion\":\"1.0.2\",\"annotations\":{\"io.container.manager\":\"libpod\","
	    "\"libthp.io/thp-policy\":\"never\",\"app\":\"redis\",\"n\":5}}");
	put("var/lib/containers/storage/overlay-containers/containers.json",
	    "[{\"id\":\"%s\",\"names\":[\"other\"]},{\"id\":\"%s\",\"names\":[\"redis1\",\"x\"]}]",
	    ID('9'), ID('1'));
	c = get("/machine.slice/libpod-%s.scope", ID('1'));
	CHECK(c && c->runtime == THPD_RT_PODMAN, "podman: no container");
	if (c) {
		CHECK(!strcmp(S(c->name), "redis1"), "podman name %s", S(c->name));
		CHECK(!strcmp(S(thpd_ctr_annotation(c, "app")), "redis"), "podman annotation");
		CHECK(!thpd_ctr_annotation(c, "n"), "a number kept as an annotation");
		CHECK(c->policy == THPD_RULE_NEVER, "podman policy %d", c->policy);
		CHECK(c->source && strstr(c->source, "var/lib/containers/storage/overlay-containers/ID"),
		      "podman source %s", S(c->source));
		thpd_ctr_put(c);
	}
	/* CRI-O: the pod in annotations, labels as embedded JSON. */
	put(relf(PODMAN_OCI, ID('2')),
	    "{\"annotations\":{\"io.kubernetes.pod.namespace\":\"shop\",\"io.kubernetes.pod.name\":"
	    "\"web-0\",\"io.kubernetes.pod.uid\":\"%s\",\"io.kubernetes.container.name\":\"nginx\","
	    "\"io.kubernetes.cri-o.Labels\":\"{\\\"app\\\":\\\"web\\\",\\\"tier\\\":\\\"front\\\"}\","
	    "\"io.kubernetes.cri-o.Annotations\":\"{\\\"libthp.io/thp-policy\\\":\\\"huge\\\"}\"}}",
	    UID);
	c = get("/kubepods.slice/kubepods-pod12345678_aaaa_bbbb_cccc_0123456789ab.slice/crio-%s.scope",
		ID('2'));
	CHECK(c && c->runtime == THPD_RT_CRIO, "crio: no container");
	if (c) {
		CHECK(!strcmp(S(c->name), "nginx") && !strcmp(S(c->pod_namespace), "shop") &&
			      !strcmp(S(c->pod_name), "web-0") && !strcmp(S(c->pod_uid), UID),
		      "crio: %s %s %s %s", S(c->name), S(c->pod_namespace), S(c->pod_name),
		      S(c->pod_uid));
		CHECK(!strcmp(S(thpd_ctr_label(c, "tier")), "front"), "crio label");
		CHECK(c->policy == THPD_RULE_HUGE, "crio policy from embedded annotations %d", c->policy);
		thpd_ctr_put(c);
	}
	/* containerd (CRI): its own annotation keys; found from the cgroupfs layout too. */
	put(relf(CONTAINERD_OCI, ID('3')),
	    "{\"annotations\":{\"io.kubernetes.cri.container-type\":\"container\","
	    "\"io.kubernetes.cri.container-name\":\"db\",\"io.kubernetes.cri.sandbox-name\":\"pg-1\","
	    "\"io.kubernetes.cri.sandbox-namespace\":\"data\",\"libthp.io/thp-policy\":\"sometimes\"}}");
	c = get("/kubepods/burstable/pod12345678-aaaa-bbbb-cccc-0123456789ab/%s", ID('3'));
	CHECK(c && c->runtime == THPD_RT_CONTAINERD, "containerd cgroupfs: %s",
	      c ? thpd_runtime_name(c->runtime) : "none");
	if (c) {
		CHECK(!strcmp(S(c->name), "db") && !strcmp(S(c->pod_namespace), "data") &&
			      !strcmp(S(c->pod_name), "pg-1") && !strcmp(S(c->pod_uid), UID),
		      "containerd: %s %s %s %s", S(c->name), S(c->pod_namespace), S(c->pod_name),
		      S(c->pod_uid));
		CHECK(c->policy == -2, "invalid policy value not marked: %d", c->policy);
		thpd_ctr_put(c);
	}
	/* The same layout with CRI-O's record. */
	put(relf(PODMAN_OCI, ID('4')), "{\"annotations\":{\"io.kubernetes.container.name\":\"c4\"}}");
	c = get("/kubepods/pod12345678-aaaa-bbbb-cccc-0123456789ab/%s", ID('4'));
	CHECK(c && c->runtime == THPD_RT_CRIO && !strcmp(S(c->name), "c4"), "kubepods as CRI-O");
	thpd_ctr_put(c);
	/* docker: name and labels in config.v2.json, annotations in the moby bundle. */
	put(relf(DOCKER_V2, ID('5')),
	    "{\"ID\":\"%s\",\"Name\":\"/web\",\"Config\":{\"Labels\":{\"tier\":\"db\","
	    "\"com.example.team\":\"x\"}}}",
	    ID('5'));
	/* thp-oci-hook's ",required" (doc/oci-hook.md): the same policy for thpd. */
	put(relf(MOBY_OCI, ID('5')), "{\"annotations\":{\"libthp.io/thp-policy\":\"nohuge,required\"}}");
	c = get("/system.slice/docker-%s.scope", ID('5'));
	CHECK(c && c->runtime == THPD_RT_DOCKER, "docker: none");
	if (c) {
		CHECK(!strcmp(S(c->name), "web") && !strcmp(S(thpd_ctr_label(c, "tier")), "db"),
		      "docker: %s", S(c->name));
		CHECK(c->policy == THPD_RULE_NOHUGE, "docker policy %d", c->policy);
		thpd_ctr_put(c);
	}
	/* crun's status and runc's state name the bundle elsewhere. */
	put(relf("run/crun/%s/status", ID('6')), "{\"pid\":1,\"bundle\":\"/srv/b6\",\"rootfs\":\"/x\"}");
	put("srv/b6/config.json",
	    "{\"annotations\":{\"k\":\"crun\",\"libthp.io/thp-policy\":\"never,maybe\"}}");
	c = get("/libpod_parent/libpod-%s", ID('6'));
	CHECK(c && !strcmp(S(thpd_ctr_annotation(c, "k")), "crun"), "crun status: %s",
	      c ? S(c->source) : "none");
	CHECK(c && c->policy == -2, "\"never,maybe\" not invalid: %d", c ? c->policy : 0);
	thpd_ctr_put(c);
	put(relf("run/runc/%s/state.json", ID('7')),
	    "{\"id\":\"x\",\"config\":{\"labels\":[\"a=b\",\"bundle=/srv/b7\"]}}");
	put("srv/b7/config.json", "{\"annotations\":{\"k\":\"runc\"}}");
	c = get("/machine.slice/libpod-%s.scope", ID('7'));
	CHECK(c && !strcmp(S(thpd_ctr_annotation(c, "k")), "runc"), "runc state: %s",
	      c ? S(c->source) : "none");
	thpd_ctr_put(c);
	/* A bundle that climbs out of the root is not read. */
	put(relf("run/crun/%s/status", ID('8')), "{\"bundle\":\"/../../../../etc\"}");
	c = get("/machine.slice/libpod-%s.scope", ID('8'));
	CHECK(c && !c->source && !c->nannotations, "bundle outside the root read: %s", c ? S(c->source) : "");
	thpd_ctr_put(c);
	/* No record at all: the id and runtime only. */
	c = get("/system.slice/docker-%s.scope", ID('0'));
	CHECK(c && !c->source && !c->name && c->policy == -1, "missing records");
	thpd_ctr_put(c);
}

static struct thpd_ctr *podman_with(char idc, const char *text, size_t len)
{
	char path[1024];
	int fd;

	mkdirs(relf(PODMAN_OCI, ID(idc)));
	snprintf(path, sizeof(path), "%s/%s", root, relf(PODMAN_OCI, ID(idc)));
	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || write(fd, text, len) != (ssize_t)len)
		exit(1);
	close(fd);
	return get("/machine.slice/libpod-%s.scope", ID(idc));
}

static void test_hostile(void)
{
	struct thpd_ctr *c;
	char path[1024], target[1024];
	size_t n;
	char *big;

	/* A link as the record, and a link on the way: neither is followed. */
	put("srv/evil.json", "{\"annotations\":{\"libthp.io/thp-policy\":\"never\"}}");
	mkdirs(relf(PODMAN_OCI, ID('a')));
	snprintf(path, sizeof(path), "%s/%s", root, relf(PODMAN_OCI, ID('a')));
	/* Relative, inside the root: only the refusal of every link stops it. */
	snprintf(target, sizeof(target), "../../../../../../srv/evil.json");
	CHECK(symlink(target, path) == 0, "symlink: %s", strerror(errno));
	c = get("/machine.slice/libpod-%s.scope", ID('a'));
	CHECK(c && c->policy == -1 && !c->source, "a linked record was read");
	thpd_ctr_put(c);
	snprintf(path, sizeof(path), "%s/run/containers/storage/overlay-containers/%s", root, ID('b'));
	snprintf(target, sizeof(target), "../../../../srv");
	put("srv/userdata/config.json", "{\"annotations\":{\"libthp.io/thp-policy\":\"never\"}}");
	CHECK(symlink(target, path) == 0, "symlink: %s", strerror(errno));
	c = get("/machine.slice/libpod-%s.scope", ID('b'));
	CHECK(c && c->policy == -1 && !c->source, "a record behind a linked directory was read");
	thpd_ctr_put(c);
	/* A FIFO: not opened for long, not read. */
	mkdirs(relf(PODMAN_OCI, ID('c')));
	snprintf(path, sizeof(path), "%s/%s", root, relf(PODMAN_OCI, ID('c')));
	CHECK(mkfifo(path, 0644) == 0, "mkfifo");
	c = get("/machine.slice/libpod-%s.scope", ID('c'));
	CHECK(c && !c->source, "a FIFO was read");
	thpd_ctr_put(c);
	/* Over 1 MiB: refused whole, even when valid. */
	n = THPD_CTR_RECORD_MAX + 100;
	big = malloc(n);
	memset(big, ' ', n);
	memcpy(big, "{\"annotations\":{\"a\":\"b\"}}", 25);
	c = podman_with('d', big, n);
	CHECK(c && !c->source && !c->nannotations, "a record over 1 MiB was read");
	thpd_ctr_put(c);
	/* Exactly the cap: read. */
	c = podman_with('d', big, THPD_CTR_RECORD_MAX);
	CHECK(c && c->source && c->nannotations == 1, "a record of exactly 1 MiB was not read");
	thpd_ctr_put(c);
	/* Deep nesting and bad JSON: nothing, no crash. */
	memset(big, '[', 100000);
	c = podman_with('e', big, 100000);
	CHECK(c && !c->nannotations && !c->source, "deep nesting");
	thpd_ctr_put(c);
	free(big);
	c = podman_with('e', "{\"annotations\":{\"a\":\"b\"", 22);
	CHECK(c && !c->nannotations, "truncated JSON gave annotations");
	thpd_ctr_put(c);
	c = podman_with('e', "{\"annotations\":[\"a\",\"b\"]}", 25);
	CHECK(c && !c->nannotations && c->source, "an array of annotations");
	thpd_ctr_put(c);
	/* Many labels, long values: capped, and said so. */
	{
		size_t cap = 300 * 40 + 10000, off = 0;
		char *t = malloc(cap);

		off += (size_t)snprintf(t + off, cap - off, "{\"annotations\":{\"long\":\"");
		memset(t + off, 'x', THPD_CTR_VALUE_MAX + 1);
		off += THPD_CTR_VALUE_MAX + 1;
		off += (size_t)snprintf(t + off, cap - off, "\"");
		for (int i = 0; i < 300; i++)
			off += (size_t)snprintf(t + off, cap - off, ",\"k%d\":\"v\"", i);
		off += (size_t)snprintf(t + off, cap - off, "}}");
		c = podman_with('f', t, off);
		CHECK(c && c->nannotations == THPD_CTR_KV_MAX && c->dropped && !thpd_ctr_annotation(c, "long"),
		      "caps: %zu annotations, dropped %d", c ? c->nannotations : 0, c ? c->dropped : 0);
		thpd_ctr_put(c);
		free(t);
	}
	/* A name that is not UTF-8 is kept as bytes (the metrics replace them). */
	put(relf(DOCKER_V2, ID('9')), "{\"Name\":\"/a\xff\xfe\\u0000b\"}");
	c = get("/docker/%s", ID('9'));
	CHECK(c && c->name && !strcmp(c->name, "a\xff\xfe\xef\xbf\xbd"
					       "b"),
	      "non-UTF-8 name: %s", S(c ? c->name : NULL));
	thpd_ctr_put(c);
	/* A user's cgroup named after root's container: none of root's records
	 * is read for it, and it shares no cache entry with the real one. */
	{
		struct thpd_ctr *real, *fake;

		put(relf(DOCKER_V2, ID('7')), "{\"Name\":\"/db\",\"Config\":{\"Labels\":{\"a\":\"b\"}}}");
		real = get("/system.slice/docker-%s.scope", ID('7'));
		fake = get("/user.slice/user-4321.slice/user@4321.service/app.slice/docker-%s.scope", ID('7'));
		CHECK(real && real->name && fake && fake != real && !fake->name && !fake->nlabels && !fake->source,
		      "a rootless cgroup named after root's container got its identity");
		thpd_ctr_put(real);
		thpd_ctr_put(fake);
	}
	/* Another user's record for a root container: not read (when root can tell). */
	if (geteuid() == 0) {
		c = podman_with('0', "{\"annotations\":{\"a\":\"b\"}}", 25);
		thpd_ctr_put(c);
		snprintf(path, sizeof(path), "%s/%s", root, relf(PODMAN_OCI, ID('0')));
		CHECK(chown(path, 4321, 4321) == 0, "chown");
		c = get("/machine.slice/libpod-%s.scope", ID('0'));
		CHECK(c && !c->source, "a record of uid 4321 was read for a root container");
		thpd_ctr_put(c);
		/* The same uid's rootless container: its crun's status and bundle, its own, are read. */
		put(relf("run/user/4321/crun/%s/status", ID('0')), "{\"bundle\":\"/home/u/b0\"}");
		put("home/u/b0/config.json", "{\"annotations\":{\"a\":\"b\"}}");
		snprintf(path, sizeof(path), "%s/run/user/4321/crun/%s/status", root, ID('0'));
		CHECK(chown(path, 4321, 4321) == 0, "chown");
		snprintf(path, sizeof(path), "%s/home/u/b0/config.json", root);
		CHECK(chown(path, 4321, 4321) == 0, "chown");
		c = get("/user.slice/user-4321.slice/user@4321.service/user.slice/libpod-%s.scope", ID('0'));
		CHECK(c && c->source && !strcmp(S(thpd_ctr_annotation(c, "a")), "b"), "rootless record");
		thpd_ctr_put(c);
	}
}

static void test_cache(void)
{
	struct thpd_ctr *a, *b;
	uint64_t reads;

	CHECK(thpd_ctr_stats()->entries == 0, "entries left: %llu",
	      (unsigned long long)thpd_ctr_stats()->entries);
	reads = thpd_ctr_stats()->reads;
	a = get("/machine.slice/libpod-%s.scope", ID('1'));
	b = get("/machine.slice/libpod-%s.scope/container", ID('1'));
	CHECK(a && a == b && thpd_ctr_stats()->reads == reads + 1, "two processes, two reads");
	CHECK(thpd_ctr_stats()->entries == 1, "entries %llu", (unsigned long long)thpd_ctr_stats()->entries);
	thpd_ctr_put(a);
	CHECK(thpd_ctr_stats()->entries == 1, "forgotten while a process holds it");
	/* The record changes (a restart): the new one is read once the last process went. */
	put(relf(PODMAN_GRAPH, ID('1')), "{\"annotations\":{\"app\":\"new\"}}");
	b = get("/machine.slice/libpod-%s.scope", ID('1'));
	CHECK(b && !strcmp(S(thpd_ctr_annotation(b, "app")), "redis"), "re-read while held");
	thpd_ctr_put(b);
	thpd_ctr_put(b);
	CHECK(thpd_ctr_stats()->entries == 0, "not forgotten with its last process");
	a = get("/machine.slice/libpod-%s.scope", ID('1'));
	CHECK(a && !strcmp(S(thpd_ctr_annotation(a, "app")), "new"), "old record kept");
	thpd_ctr_put(a);
	CHECK(!thpd_ctr_get("0::/user.slice/user-1000.slice/session-1.scope\n"), "not a container");
}

/* A user who makes a cgroup per process in their own subtree, named after a
 * container each: root's containers keep their identity. */
static void test_flood(void)
{
	static struct thpd_ctr *mine[THPD_CTR_CACHE_MAX];
	struct thpd_ctr *root_ctr, *other;
	size_t kept = 0;
	char id[65];

	for (int i = 0; i < THPD_CTR_CACHE_MAX; i++) {
		snprintf(id, sizeof(id), "%064x", i + 1);
		mine[i] = get("/user.slice/user-4321.slice/user@4321.service/user.slice/libpod-%s.scope", id);
		kept += mine[i] != NULL;
	}
	CHECK(kept <= THPD_CTR_ROOTLESS_USER_MAX, "%zu rootless containers of one user cached", kept);
	root_ctr = get("/machine.slice/libpod-%s.scope", ID('1'));
	CHECK(root_ctr, "root's container unidentified after %d cgroups of a user", THPD_CTR_CACHE_MAX);
	other = get("/user.slice/user-4322.slice/user@4322.service/user.slice/libpod-%s.scope", ID('2'));
	CHECK(other, "another user's container unidentified after %d cgroups of a user", THPD_CTR_CACHE_MAX);
	thpd_ctr_put(root_ctr);
	thpd_ctr_put(other);
	for (int i = 0; i < THPD_CTR_CACHE_MAX; i++)
		thpd_ctr_put(mine[i]);
	CHECK(thpd_ctr_stats()->entries == 0, "entries left: %llu", (unsigned long long)thpd_ctr_stats()->entries);
	/* Their containers gone, the user has their whole room again. */
	kept = 0;
	for (int i = 0; i < THPD_CTR_ROOTLESS_USER_MAX; i++) {
		snprintf(id, sizeof(id), "%064x", i + 1);
		mine[i] = get("/user.slice/user-4321.slice/user@4321.service/user.slice/libpod-%s.scope", id);
		kept += mine[i] != NULL;
	}
	CHECK(kept == THPD_CTR_ROOTLESS_USER_MAX, "%zu of %d rootless containers cached after the flood ended",
	      kept, THPD_CTR_ROOTLESS_USER_MAX);
	for (int i = 0; i < THPD_CTR_ROOTLESS_USER_MAX; i++)
		thpd_ctr_put(mine[i]);
	CHECK(thpd_ctr_stats()->entries == 0, "entries left: %llu", (unsigned long long)thpd_ctr_stats()->entries);
}

static uint64_t now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* N CRI-O containers with a realistic record each (a few KiB): the cost of a new one. */
static int bench(int n)
{
	char id[65], spec[8192];
	struct thpd_ctr **cs = calloc((size_t)n, sizeof(*cs));
	uint64_t w0, c0, w, c;
	int len;

	len = snprintf(spec, sizeof(spec), "{\"ociVersion\":\"1.0.2\",\"process\":{\"args\":[\"/bin/app\"],"
					   "\"env\":[\"PATH=/usr/bin\",\"HOME=/\"]},\"mounts\":[");
	for (int i = 0; i < 30; i++)
		len += snprintf(spec + len, sizeof(spec) - (size_t)len,
				"%s{\"destination\":\"/m%d\",\"type\":\"bind\",\"source\":\"/var/lib/x/%d\","
				"\"options\":[\"rbind\",\"ro\"]}",
				i ? "," : "", i, i);
	for (int i = 0; i < n; i++) {
		snprintf(id, sizeof(id), "%064x", i + 1);
		put(relf(PODMAN_OCI, id),
		    "%s],\"annotations\":{\"io.kubernetes.pod.namespace\":\"ns%d\",\"io.kubernetes.pod.name\":"
		    "\"pod-%d\",\"io.kubernetes.container.name\":\"c\",\"io.kubernetes.cri-o.Labels\":"
		    "\"{\\\"app\\\":\\\"a%d\\\"}\",\"libthp.io/thp-policy\":\"never\"}}",
		    spec, i, i, i);
	}
	w0 = now_ns(CLOCK_MONOTONIC);
	c0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
	for (int i = 0; i < n; i++) {
		snprintf(id, sizeof(id), "%064x", i + 1);
		cs[i] = get("/kubepods.slice/kubepods-besteffort.slice/crio-%s.scope", id);
		if (!cs[i] || !cs[i]->pod_name)
			return 1;
	}
	w = now_ns(CLOCK_MONOTONIC) - w0;
	c = now_ns(CLOCK_PROCESS_CPUTIME_ID) - c0;
	printf("%d new containers (CRI-O records of %d bytes): %.1f us wall, %.1f us CPU each\n", n,
	       len + 200, (double)w / n / 1e3, (double)c / n / 1e3);
	w0 = now_ns(CLOCK_MONOTONIC);
	for (int i = 0; i < n; i++) {
		snprintf(id, sizeof(id), "%064x", i + 1);
		thpd_ctr_put(get("/kubepods.slice/kubepods-besteffort.slice/crio-%s.scope", id));
	}
	printf("cached lookups: %.2f us each\n", (double)(now_ns(CLOCK_MONOTONIC) - w0) / n / 1e3);
	for (int i = 0; i < n; i++)
		thpd_ctr_put(cs[i]);
	free(cs);
	return 0;
}

int main(int argc, char **argv)
{
	const char *tmpdir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	char cmd[512];
	int r = 0;

	snprintf(root, sizeof(root), "%s/thpd-ctr-XXXXXX", tmpdir);
	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return 1;
	}
	if (thpd_ctr_init(root) != 0) {
		perror(root);
		return 1;
	}
	if (argc == 3 && !strcmp(argv[1], "--bench")) {
		r = bench(atoi(argv[2]));
	} else {
		test_paths();
		test_runtimes();
		test_hostile();
		test_cache();
		test_flood();
		r = failures != 0;
		printf("%s: %d failures\n", argv[0], failures);
	}
	thpd_ctr_fini();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", root);
	return r;
}
