// SPDX-License-Identifier: LGPL-2.1-or-later
/* thpd: a process's container and pod, from its cgroup path and the container runtime's records. */
#ifndef THPD_CONTAINER_H
#define THPD_CONTAINER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Who runs the container, as the cgroup path tells it. */
enum thpd_runtime {
	THPD_RT_NONE,
	THPD_RT_DOCKER,
	THPD_RT_PODMAN,
	THPD_RT_CONTAINERD,
	THPD_RT_CRIO,
	THPD_RT_KUBEPODS, /* cgroupfs kubepods/.../pod<uid>/<id>: containerd or CRI-O, by the record found */
};
const char *thpd_runtime_name(int runtime);

#define THPD_CTR_ID_LEN 64 /* every runtime here names a container by 64 hex digits */

/* What a cgroup path says: the innermost container in it. */
struct thpd_ctr_ref {
	int runtime; /* enum thpd_runtime; THPD_RT_NONE: not a container */
	char id[THPD_CTR_ID_LEN + 1];
	char pod_uid[40]; /* kubepods pod<uid>, dashes restored; "" when none */
	bool rootless;	  /* under user-<uid>.slice: the records are that user's */
	uid_t owner;	  /* that uid */
};

/* container_id.c */
/* One cgroup path ("/a/b/c"): 1 and @ref filled when it names a container, else 0. */
int thpd_ctr_parse_path(const char *path, size_t len, struct thpd_ctr_ref *ref);
/* The text of /proc/PID/cgroup: the v2 line first, then each v1 line. */
int thpd_ctr_parse_proc_cgroup(const char *text, struct thpd_ctr_ref *ref);

/* container_meta.c */
#define THPD_CTR_RECORD_MAX (1 << 20) /* bytes of one runtime record read, at most */
#define THPD_CTR_KV_MAX 256	      /* labels, and annotations, kept per container */
#define THPD_CTR_KEY_MAX 256	      /* bytes of a label or annotation key */
#define THPD_CTR_VALUE_MAX 4096	      /* bytes of a value (longer ones are dropped) */
#define THPD_CTR_NAME_MAX 256	      /* bytes of a name, namespace or UID */
#define THPD_CTR_CACHE_MAX 8192	      /* containers in the cache */
#define THPD_POLICY_ANNOTATION "libthp.io/thp-policy"

struct thpd_kv {
	char *key, *value;
};

struct thpd_ctr {
	char id[THPD_CTR_ID_LEN + 1];
	bool rootless; /* the cache's key is the ID and these two */
	uid_t owner;
	int runtime;					 /* enum thpd_runtime, THPD_RT_KUBEPODS resolved when a record is found */
	char *name, *pod_namespace, *pod_name, *pod_uid; /* NULL when unknown */
	struct thpd_kv *labels;				 /* malloc'd, nlabels of them */
	size_t nlabels;
	struct thpd_kv *annotations;
	size_t nannotations;
	bool dropped;	       /* labels or annotations over the caps were left out */
	const char *source;    /* the record read, relative to the root; NULL: none found */
	int policy;	       /* libthp.io/thp-policy: -1 none, -2 invalid, else enum thpd_policy */
	bool policy_logged;    /* an invalid value was logged */
	uint64_t read_mono_ns; /* when its records were read */
	unsigned refs;
	struct thpd_ctr *next;
};

/* The parsers of the records (pure: fuzzed by fuzz/fuzz_thpd_container.c).
 * Each returns 0, or -1 when the text is not the record it should be. */
/* An OCI bundle's config.json: its "annotations" (and CRI-O's labels). */
int thpd_ctr_parse_oci(struct thpd_ctr *c, const char *text, size_t len);
/* Docker's config.v2.json: "Name" and "Config"."Labels". */
int thpd_ctr_parse_docker(struct thpd_ctr *c, const char *text, size_t len);
/* containers/storage's containers.json: the "names" of the entry whose "id" is c->id. */
int thpd_ctr_parse_storage(struct thpd_ctr *c, const char *text, size_t len);
/* runc's state.json or crun's status: the bundle directory into @out. */
int thpd_ctr_parse_state(const char *text, size_t len, char *out, size_t cap);
/* Name, pod namespace, name and UID and the policy from what was parsed. */
void thpd_ctr_derive(struct thpd_ctr *c, const struct thpd_ctr_ref *ref);
void thpd_ctr_clear(struct thpd_ctr *c);

const char *thpd_ctr_label(const struct thpd_ctr *c, const char *key);
const char *thpd_ctr_annotation(const struct thpd_ctr *c, const char *key);

/* The cache: one entry per container while a process holds it. */
struct thpd_ctr_stats {
	uint64_t entries; /* containers in the cache */
	uint64_t reads;	  /* containers whose records were read */
	uint64_t missing; /* of them, without any record found */
	uint64_t read_ns; /* CPU time of those reads */
};
/* @root: the directory the runtimes' paths are under ("/"; tests point it
 * at a fake tree).  0, or -errno when it cannot be opened. */
int thpd_ctr_init(const char *root);
void thpd_ctr_fini(void);
/* The container of the process whose /proc/PID/cgroup reads @cgroup_text,
 * with a reference taken; NULL when it is in none. */
struct thpd_ctr *thpd_ctr_get(const char *cgroup_text);
/* Drop a reference: the last one forgets the container. */
void thpd_ctr_put(struct thpd_ctr *c);
const struct thpd_ctr_stats *thpd_ctr_stats(void);

/* A record under @root, never through a link, at most THPD_CTR_RECORD_MAX
 * bytes, owned by root or the caller, or with @rootless by @owner alone (a
 * user who names a cgroup after another's container reads no record of
 * it): its length, or -errno. */
ssize_t thpd_ctr_read_record(int rootfd, const char *rel, bool rootless, uid_t owner, char **out);

#endif
