// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * thpd: a container runtime's records of a container read from the
 * runtime's own files, never through a link and within size caps, and
 * kept while a process of the container lives.  container_parse.c parses
 * them.  The records may be written by the container's owner (rootless
 * podman): every file is checked before it is read.
 */
#ifndef _GNU_SOURCE /* the fuzz build defines it */
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <linux/openat2.h>

#include "clock_ns.h" /* lib/: clock_ns(), now_ns() */
#include "container.h"
#include "thpd.h"

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

/* --- reading the records -------------------------------------------------- */

/* @rel opened under @rootfd with no link on the way: openat2(), or one
 * component at a time where the kernel (before 5.6) has no openat2(). */
static int open_beneath(int rootfd, const char *rel)
{
	struct open_how how = { .flags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY,
				.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH |
					   RESOLVE_NO_MAGICLINKS };
	char buf[1024], *save = NULL, *comp, *next;
	int fd;

	while (*rel == '/')
		rel++;
	fd = (int)syscall(SYS_openat2, rootfd, rel, &how, sizeof(how));
	if (fd >= 0 || errno != ENOSYS)
		return fd;
	if (strlen(rel) >= sizeof(buf))
		return (errno = ENAMETOOLONG, -1);
	strcpy(buf, rel);
	fd = dup(rootfd);
	for (comp = strtok_r(buf, "/", &save); fd >= 0 && comp; comp = next) {
		int nfd;

		next = strtok_r(NULL, "/", &save);
		if (!strcmp(comp, "..") || !strcmp(comp, ".")) {
			close(fd);
			return (errno = EXDEV, -1);
		}
		nfd = openat(fd, comp,
			     next ? O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC : (int)how.flags);
		close(fd);
		fd = nfd;
	}
	return fd;
}

ssize_t thpd_ctr_read_record(int rootfd, const char *rel, bool rootless, uid_t owner, char **out)
{
	struct stat sb;
	char *buf;
	size_t got = 0;
	int fd = open_beneath(rootfd, rel), e;

	*out = NULL;
	if (fd < 0)
		return -errno;
	if (fstat(fd, &sb) != 0)
		goto fail;
	if (!S_ISREG(sb.st_mode)) {
		errno = EINVAL;
		goto fail;
	}
	if (rootless ? sb.st_uid != owner : sb.st_uid != 0 && sb.st_uid != geteuid()) {
		errno = EPERM;
		goto fail;
	}
	if (sb.st_size > THPD_CTR_RECORD_MAX) {
		errno = EFBIG;
		goto fail;
	}
	buf = malloc((size_t)sb.st_size + 1);
	if (!buf)
		goto fail;
	/* The size may change while it is read: never past the cap. */
	while (got < (size_t)sb.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)sb.st_size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			e = errno;
			free(buf);
			errno = e;
			goto fail;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	buf[got] = '\0';
	close(fd);
	*out = buf;
	return (ssize_t)got;
fail:
	e = errno;
	close(fd);
	return -e;
}

/* --- the cache -------------------------------------------------------------- */

#define NHASH 256
#define NOWNERS 64

/* How many rootless containers one user has in the cache. */
struct owner_count {
	uid_t uid;
	unsigned int n;
	struct owner_count *next;
};

static struct {
	int rootfd;
	struct thpd_ctr *hash[NHASH];
	struct owner_count *owners[NOWNERS];
	size_t rootless; /* rootless containers, of every user */
	struct thpd_ctr_stats stats;
} cache = { .rootfd = -1 };

int thpd_ctr_init(const char *root)
{
	thpd_ctr_fini();
	cache.rootfd = open(root ? root : "/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	return cache.rootfd < 0 ? -errno : 0;
}

void thpd_ctr_fini(void)
{
	for (size_t i = 0; i < NHASH; i++) {
		while (cache.hash[i]) {
			struct thpd_ctr *c = cache.hash[i];

			cache.hash[i] = c->next;
			thpd_ctr_clear(c);
			free(c);
		}
	}
	for (size_t i = 0; i < NOWNERS; i++) {
		while (cache.owners[i]) {
			struct owner_count *o = cache.owners[i];

			cache.owners[i] = o->next;
			free(o);
		}
	}
	cache.rootless = 0;
	if (cache.rootfd >= 0)
		close(cache.rootfd);
	cache.rootfd = -1;
	memset(&cache.stats, 0, sizeof(cache.stats));
}

const struct thpd_ctr_stats *thpd_ctr_stats(void)
{
	return &cache.stats;
}

/* One record read and parsed: true when it was there and parsed. */
static bool read_one(struct thpd_ctr *c, const struct thpd_ctr_ref *ref, const char *rel,
		     int (*parse)(struct thpd_ctr *, const char *, size_t))
{
	char *text;
	ssize_t n = thpd_ctr_read_record(cache.rootfd, rel, ref->rootless, ref->owner, &text);
	bool ok;

	if (n < 0)
		return false;
	ok = parse(c, text, (size_t)n) == 0;
	free(text);
	return ok;
}

/* A bundle named by runc's or crun's state (@dir under @rootdir): its config.json. */
static bool read_bundle(struct thpd_ctr *c, const struct thpd_ctr_ref *ref, const char *state)
{
	char *text, bundle[512], rel[600];
	ssize_t n = thpd_ctr_read_record(cache.rootfd, state, ref->rootless, ref->owner, &text);
	int r;

	if (n < 0)
		return false;
	r = thpd_ctr_parse_state(text, (size_t)n, bundle, sizeof(bundle));
	free(text);
	if (r)
		return false;
	snprintf(rel, sizeof(rel), "%s/config.json", bundle);
	return read_one(c, ref, rel, thpd_ctr_parse_oci);
}

#define CONTAINERD_OCI "run/containerd/io.containerd.runtime.v2.task/%s/%s/config.json"

/* Every record the runtime keeps of the container: what was found. */
static void read_records(struct thpd_ctr *c, const struct thpd_ctr_ref *ref)
{
	char rel[512];
	const char *id = c->id;

	switch (c->runtime) {
	case THPD_RT_DOCKER:
		/* The name and labels in docker's own file; the OCI annotations
		 * in the bundle containerd runs it from (namespace "moby"). */
		snprintf(rel, sizeof(rel), "var/lib/docker/containers/%s/config.v2.json", id);
		if (read_one(c, ref, rel, thpd_ctr_parse_docker))
			c->source = "var/lib/docker/containers/ID/config.v2.json";
		snprintf(rel, sizeof(rel), CONTAINERD_OCI, "moby", id);
		if (read_one(c, ref, rel, thpd_ctr_parse_oci) && !c->source)
			c->source = "run/containerd/io.containerd.runtime.v2.task/moby/ID/config.json";
		break;
	case THPD_RT_PODMAN:
	case THPD_RT_CRIO:
		/* podman keeps the bundle in the graph root; CRI-O in the run root. */
		if (!ref->rootless) {
			snprintf(rel, sizeof(rel),
				 "var/lib/containers/storage/overlay-containers/%s/userdata/config.json", id);
			if (read_one(c, ref, rel, thpd_ctr_parse_oci))
				c->source = "var/lib/containers/storage/overlay-containers/ID/userdata/"
					    "config.json";
		}
		if (!ref->rootless && !c->source) {
			snprintf(rel, sizeof(rel),
				 "run/containers/storage/overlay-containers/%s/userdata/config.json", id);
			if (read_one(c, ref, rel, thpd_ctr_parse_oci))
				c->source = "run/containers/storage/overlay-containers/ID/userdata/config.json";
		}
		/* Rootless, or another storage root: the bundle the OCI runtime
		 * recorded (a rootless user's runtimes keep theirs in
		 * /run/user/UID). */
		for (int i = 0; i < 2 && !c->source; i++) {
			char state[200];

			snprintf(state, sizeof(state), "%s/%s/%s", i ? "runc" : "crun", id,
				 i ? "state.json" : "status");
			if (ref->rootless)
				snprintf(rel, sizeof(rel), "run/user/%u/%s", (unsigned)ref->owner, state);
			else
				snprintf(rel, sizeof(rel), "run/%s", state);
			if (read_bundle(c, ref, rel))
				c->source = i ? "runc's state.json" : "crun's status";
		}
		/* Podman's names are in containers/storage's list, not the bundle. */
		if (c->runtime == THPD_RT_PODMAN && !ref->rootless)
			read_one(c, ref, "var/lib/containers/storage/overlay-containers/containers.json",
				 thpd_ctr_parse_storage);
		break;
	case THPD_RT_CONTAINERD:
	case THPD_RT_KUBEPODS:
		snprintf(rel, sizeof(rel), CONTAINERD_OCI, "k8s.io", id);
		if (read_one(c, ref, rel, thpd_ctr_parse_oci)) {
			c->runtime = THPD_RT_CONTAINERD;
			c->source = "run/containerd/io.containerd.runtime.v2.task/k8s.io/ID/config.json";
			break;
		}
		if (c->runtime != THPD_RT_KUBEPODS)
			break;
		snprintf(rel, sizeof(rel),
			 "run/containers/storage/overlay-containers/%s/userdata/config.json", id);
		if (read_one(c, ref, rel, thpd_ctr_parse_oci)) {
			c->runtime = THPD_RT_CRIO;
			c->source = "run/containers/storage/overlay-containers/ID/userdata/config.json";
		}
		break;
	default:
		break;
	}
	thpd_ctr_derive(c, ref);
}

static void fill(struct thpd_ctr *c, const struct thpd_ctr_ref *ref)
{
	uint64_t t0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);

	thpd_ctr_clear(c);
	c->runtime = ref->runtime;
	read_records(c, ref);
	c->read_mono_ns = now_ns();
	cache.stats.reads++;
	if (!c->source)
		cache.stats.missing++;
	cache.stats.read_ns += clock_ns(CLOCK_THREAD_CPUTIME_ID) - t0;
}

static size_t hash_of(const char *id)
{
	size_t h = 0;

	for (; *id; id++)
		h = h * 31 + (unsigned char)*id;
	return h % NHASH;
}

/* A container whose records were not there (its runtime still writing
 * them) is read again by a new process of it, at most this often. */
#define RETRY_NS (1000ULL * 1000000ULL)

static struct owner_count **owner_slot(uid_t owner)
{
	struct owner_count **pp = &cache.owners[owner % NOWNERS];

	while (*pp && (*pp)->uid != owner)
		pp = &(*pp)->next;
	return pp;
}

/*
 * Room for another rootless container of @owner, counted as it is taken
 * (false when there is none, or no memory to count it).  A user makes
 * cgroups (and records, up to THPD_CTR_RECORD_MAX each) in their own
 * subtree at will: without a bound of their own, theirs would fill the
 * cache, leave root's containers unidentified and hold gigabytes of their
 * records.  Counters, not a walk of the cache: such a user's every new
 * process asks.
 */
static bool rootless_take(uid_t owner)
{
	struct owner_count **pp = owner_slot(owner);

	if (cache.rootless >= THPD_CTR_CACHE_MAX / 2 || (*pp && (*pp)->n >= THPD_CTR_ROOTLESS_USER_MAX))
		return false;
	if (!*pp) {
		*pp = calloc(1, sizeof(**pp));
		if (!*pp)
			return false;
		(*pp)->uid = owner;
	}
	(*pp)->n++;
	cache.rootless++;
	return true;
}

static void rootless_release(uid_t owner)
{
	struct owner_count **pp = owner_slot(owner), *o = *pp;

	if (!o)
		return;
	cache.rootless--;
	if (--o->n == 0) {
		*pp = o->next;
		free(o);
	}
}

struct thpd_ctr *thpd_ctr_get(const char *cgroup_text)
{
	struct thpd_ctr_ref ref;
	struct thpd_ctr **pp, *c;

	if (cache.rootfd < 0 || !thpd_ctr_parse_proc_cgroup(cgroup_text, &ref))
		return NULL;
	pp = &cache.hash[hash_of(ref.id)];
	/* A rootless user's cgroup named after another's container is another entry. */
	for (c = *pp; c && (strcmp(c->id, ref.id) || c->rootless != ref.rootless ||
			    (c->rootless && c->owner != ref.owner));
	     c = c->next)
		;
	if (c) {
		if (!c->source && now_ns() - c->read_mono_ns >= RETRY_NS)
			fill(c, &ref);
		c->refs++;
		return c;
	}
	if (cache.stats.entries >= THPD_CTR_CACHE_MAX || (ref.rootless && !rootless_take(ref.owner)))
		return NULL;
	c = calloc(1, sizeof(*c));
	if (!c) {
		if (ref.rootless)
			rootless_release(ref.owner);
		return NULL;
	}
	memcpy(c->id, ref.id, sizeof(c->id));
	c->rootless = ref.rootless;
	c->owner = ref.owner;
	fill(c, &ref);
	c->refs = 1;
	c->next = *pp;
	*pp = c;
	cache.stats.entries++;
	return c;
}

void thpd_ctr_put(struct thpd_ctr *c)
{
	struct thpd_ctr **pp;

	if (!c || --c->refs)
		return;
	/* No process of it is left: its cgroup is empty or gone. */
	for (pp = &cache.hash[hash_of(c->id)]; *pp && *pp != c; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = c->next;
	if (c->rootless)
		rootless_release(c->owner);
	thpd_ctr_clear(c);
	free(c);
	cache.stats.entries--;
}
