// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * thpd: what a container runtime recorded of a container (name, pod,
 * labels, annotations), parsed from the text of its records (an OCI
 * config.json, Docker's config.v2.json, containers/storage's
 * containers.json, runc's state.json, crun's status), and the name and pod
 * derived from them.  Pure: no file is opened here (container_meta.c reads
 * the records and keeps them); fuzz/fuzz_thpd_container.c feeds it.  The
 * records may be written by the container's owner (rootless podman) or
 * shaped by whoever wrote the pod spec: every byte is untrusted.
 */
#ifndef _GNU_SOURCE /* the fuzz build defines it */
#define _GNU_SOURCE
#endif
#include <stdlib.h>
#include <string.h>

#include "container.h"
#include "json_parse.h"
#include "thpd.h"

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
