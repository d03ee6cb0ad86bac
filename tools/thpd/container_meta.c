// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * thpd: what a container runtime recorded of a container (name, pod,
 * labels, annotations), read from its own files, never through a link and
 * within size caps, and kept while a process of the container lives.  The
 * records may be written by the container's owner (rootless podman) or
 * shaped by whoever wrote the pod spec: every byte is untrusted.
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

#include "container.h"
#include "json_parse.h"
#include "thpd.h"

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

/* --- the parsers --------------------------------------------------------- */

static void kv_free(struct thpd_kv **kv, size_t *n)
{
	for (size_t i = 0; i < *n; i++) {
		free((*kv)[i].key);
		free((*kv)[i].value);
	}
	free(*kv);
	*kv = NULL;
	*n = 0;
}

void thpd_ctr_clear(struct thpd_ctr *c)
{
	kv_free(&c->labels, &c->nlabels);
	kv_free(&c->annotations, &c->nannotations);
	free(c->name);
	free(c->pod_namespace);
	free(c->pod_name);
	free(c->pod_uid);
	c->name = c->pod_namespace = c->pod_name = c->pod_uid = NULL;
	c->dropped = false;
	c->source = NULL;
	c->policy = -1;
}

static const char *kv_get(const struct thpd_kv *kv, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(kv[i].key, key))
			return kv[i].value;
	return NULL;
}

const char *thpd_ctr_label(const struct thpd_ctr *c, const char *key)
{
	return c ? kv_get(c->labels, c->nlabels, key) : NULL;
}

const char *thpd_ctr_annotation(const struct thpd_ctr *c, const char *key)
{
	return c ? kv_get(c->annotations, c->nannotations, key) : NULL;
}

/* The string members of object @obj into @kv (first writer of a key wins). */
static void kv_add_object(struct thpd_ctr *c, struct thpd_kv **kvp, size_t *n,
			  const struct jval *obj)
{
	if (!obj || obj->type != J_OBJ)
		return;
	for (const struct jval *m = obj->child; m; m = m->next) {
		struct thpd_kv *kv = *kvp;

		if (m->type != J_STR)
			continue;
		if (!*m->key || strlen(m->key) > THPD_CTR_KEY_MAX || strlen(m->str) > THPD_CTR_VALUE_MAX ||
		    *n >= THPD_CTR_KV_MAX) {
			c->dropped = true;
			continue;
		}
		if (kv_get(kv, *n, m->key))
			continue;
		if (*n == 0 || (*n >= 8 && (*n & (*n - 1)) == 0)) { /* room for 8, 16, 32, ... */
			kv = realloc(kv, (*n ? *n * 2 : 8) * sizeof(*kv));
			if (!kv) {
				c->dropped = true;
				continue;
			}
			*kvp = kv;
		}
		kv[*n].key = strdup(m->key);
		kv[*n].value = strdup(m->str);
		if (!kv[*n].key || !kv[*n].value) {
			free(kv[*n].key);
			free(kv[*n].value);
			c->dropped = true;
			continue;
		}
		(*n)++;
	}
}

/* A member that holds a JSON object as a string (CRI-O's Labels and Annotations). */
static void kv_add_embedded(struct thpd_ctr *c, struct thpd_kv **kv, size_t *n, const char *text)
{
	struct jval *doc;

	if (!text)
		return;
	doc = json_parse(text, strlen(text));
	kv_add_object(c, kv, n, doc);
	json_free(doc);
}

int thpd_ctr_parse_oci(struct thpd_ctr *c, const char *text, size_t len)
{
	struct jval *doc = json_parse(text, len);
	const struct jval *ann;

	if (!doc || doc->type != J_OBJ) {
		json_free(doc);
		return -1;
	}
	ann = json_member(doc, "annotations");
	kv_add_object(c, &c->annotations, &c->nannotations, ann);
	/* CRI-O: the container's labels, and its annotations again, as JSON text. */
	kv_add_embedded(c, &c->labels, &c->nlabels,
			thpd_ctr_annotation(c, "io.kubernetes.cri-o.Labels"));
	kv_add_embedded(c, &c->annotations, &c->nannotations,
			thpd_ctr_annotation(c, "io.kubernetes.cri-o.Annotations"));
	json_free(doc);
	return 0;
}

static char *dup_capped(const char *s)
{
	return s && *s && strlen(s) <= THPD_CTR_NAME_MAX ? strdup(s) : NULL;
}

int thpd_ctr_parse_docker(struct thpd_ctr *c, const char *text, size_t len)
{
	struct jval *doc = json_parse(text, len);
	const struct jval *name, *cfg;

	if (!doc || doc->type != J_OBJ) {
		json_free(doc);
		return -1;
	}
	name = json_member(doc, "Name");
	if (name && name->type == J_STR && !c->name)
		c->name = dup_capped(name->str[0] == '/' ? name->str + 1 : name->str);
	cfg = json_member(doc, "Config");
	kv_add_object(c, &c->labels, &c->nlabels, json_member(cfg, "Labels"));
	json_free(doc);
	return 0;
}

int thpd_ctr_parse_storage(struct thpd_ctr *c, const char *text, size_t len)
{
	struct jval *doc = json_parse(text, len);

	if (!doc || doc->type != J_ARR) {
		json_free(doc);
		return -1;
	}
	for (const struct jval *e = doc->child; e; e = e->next) {
		const struct jval *id = json_member(e, "id"), *names = json_member(e, "names");

		if (!id || id->type != J_STR || strcmp(id->str, c->id) != 0)
			continue;
		if (names && names->type == J_ARR && names->child && names->child->type == J_STR &&
		    !c->name)
			c->name = dup_capped(names->child->str);
		break;
	}
	json_free(doc);
	return 0;
}

int thpd_ctr_parse_state(const char *text, size_t len, char *out, size_t cap)
{
	struct jval *doc = json_parse(text, len);
	const struct jval *b, *labels;
	const char *found = NULL;

	if (!doc || doc->type != J_OBJ) {
		json_free(doc);
		return -1;
	}
	/* crun's status: "bundle"; runc's state.json: config.labels "bundle=...". */
	b = json_member(doc, "bundle");
	if (b && b->type == J_STR)
		found = b->str;
	labels = json_member(json_member(doc, "config"), "labels");
	for (const struct jval *l = labels && labels->type == J_ARR ? labels->child : NULL;
	     l && !found; l = l->next)
		if (l->type == J_STR && !strncmp(l->str, "bundle=", 7))
			found = l->str + 7;
	if (!found || found[0] != '/' || strlen(found) >= cap) {
		json_free(doc);
		return -1;
	}
	strcpy(out, found);
	json_free(doc);
	return 0;
}

/* The first of the annotations, then the labels, named in @keys. */
static const char *first_of(const struct thpd_ctr *c, const char *const *keys)
{
	for (int pass = 0; pass < 2; pass++)
		for (const char *const *k = keys; *k; k++) {
			const char *v = pass ? thpd_ctr_label(c, *k) : thpd_ctr_annotation(c, *k);

			if (v && *v)
				return v;
		}
	return NULL;
}

void thpd_ctr_derive(struct thpd_ctr *c, const struct thpd_ctr_ref *ref)
{
	/* CRI-O and the kubelet's labels, then containerd's CRI annotations. */
	static const char *const name_keys[] = { "io.kubernetes.container.name",
						 "io.kubernetes.cri.container-name", NULL };
	static const char *const ns_keys[] = { "io.kubernetes.pod.namespace",
					       "io.kubernetes.cri.sandbox-namespace", NULL };
	static const char *const pod_keys[] = { "io.kubernetes.pod.name",
						"io.kubernetes.cri.sandbox-name", NULL };
	static const char *const uid_keys[] = { "io.kubernetes.pod.uid",
						"io.kubernetes.cri.sandbox-uid", NULL };
	static const char *const policies[] = { [THPD_RULE_HUGE] = "huge", [THPD_RULE_NEVER] = "never", [THPD_RULE_NOHUGE] = "nohuge", [THPD_RULE_SYSTEM] = "system" };
	const char *v;

	if (!c->name)
		c->name = dup_capped(first_of(c, name_keys));
	if (!c->pod_namespace)
		c->pod_namespace = dup_capped(first_of(c, ns_keys));
	if (!c->pod_name)
		c->pod_name = dup_capped(first_of(c, pod_keys));
	if (!c->pod_uid)
		c->pod_uid = dup_capped(first_of(c, uid_keys));
	if (!c->pod_uid && ref && ref->pod_uid[0])
		c->pod_uid = strdup(ref->pod_uid);
	c->policy = -1;
	v = thpd_ctr_annotation(c, THPD_POLICY_ANNOTATION);
	if (v) {
		/* thp-oci-hook's ",required" (doc/oci-hook.md) only makes the hook refuse a
		 * start it cannot serve: the policy is the same. */
		const char *comma = strchr(v, ',');
		size_t len = comma && !strcmp(comma, ",required") ? (size_t)(comma - v) : strlen(v);

		c->policy = -2;
		for (size_t i = 0; i < sizeof(policies) / sizeof(*policies); i++)
			if (strlen(policies[i]) == len && !strncmp(v, policies[i], len))
				c->policy = (int)i;
	}
}

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

static struct {
	int rootfd;
	struct thpd_ctr *hash[NHASH];
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
	if (cache.rootfd >= 0)
		close(cache.rootfd);
	cache.rootfd = -1;
	memset(&cache.stats, 0, sizeof(cache.stats));
}

const struct thpd_ctr_stats *thpd_ctr_stats(void)
{
	return &cache.stats;
}

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
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
	uint64_t t0 = cpu_ns();

	thpd_ctr_clear(c);
	c->runtime = ref->runtime;
	read_records(c, ref);
	c->read_mono_ns = mono_ns();
	cache.stats.reads++;
	if (!c->source)
		cache.stats.missing++;
	cache.stats.read_ns += cpu_ns() - t0;
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
		if (!c->source && mono_ns() - c->read_mono_ns >= RETRY_NS)
			fill(c, &ref);
		c->refs++;
		return c;
	}
	if (cache.stats.entries >= THPD_CTR_CACHE_MAX)
		return NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
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
	thpd_ctr_clear(c);
	free(c);
	cache.stats.entries--;
}
