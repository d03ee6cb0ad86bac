// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * thpd: the container a cgroup path names, as each runtime and cgroup
 * driver lays it out (systemd: docker-<id>.scope, libpod-<id>.scope,
 * crio-<id>.scope, cri-containerd-<id>.scope under kubepods slices;
 * cgroupfs: /docker/<id>, /kubepods/<qos>/pod<uid>/<id>, libpod_parent's
 * libpod-<id>).  Pure string work on text any process can shape.
 */
#include <stdlib.h>
#include <string.h>

#include "container.h"

const char *thpd_runtime_name(int runtime)
{
	static const char *const names[] = { [THPD_RT_NONE] = "none",
					     [THPD_RT_DOCKER] = "docker",
					     [THPD_RT_PODMAN] = "podman",
					     [THPD_RT_CONTAINERD] = "containerd",
					     [THPD_RT_CRIO] = "cri-o",
					     [THPD_RT_KUBEPODS] = "kubepods" };

	return runtime >= 0 && runtime <= THPD_RT_KUBEPODS ? names[runtime] : "none";
}

static bool is_hex64(const char *s, size_t n)
{
	if (n != THPD_CTR_ID_LEN)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

static bool has_prefix(const char *s, size_t n, const char *pre, size_t *plen)
{
	*plen = strlen(pre);
	return n >= *plen && memcmp(s, pre, *plen) == 0;
}

/* "<prefix><64 hex><suffix>" exactly: the id's offset, or 0. */
static size_t id_between(const char *s, size_t n, const char *pre, const char *suf)
{
	size_t pl, sl = strlen(suf);

	if (!has_prefix(s, n, pre, &pl) || n != pl + THPD_CTR_ID_LEN + sl)
		return 0;
	if (memcmp(s + pl + THPD_CTR_ID_LEN, suf, sl) != 0 || !is_hex64(s + pl, THPD_CTR_ID_LEN))
		return 0;
	return pl;
}

/* A pod UID as the kubelet writes it into a cgroup name: 36 characters of
 * hex digits and dashes (underscores in systemd slice names). */
static bool pod_uid(const char *s, size_t n, char *out, size_t cap)
{
	if (n != 36 || cap < 37)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (c == '_')
			c = '-';
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == '-'))
			return false;
		out[i] = c;
	}
	out[n] = '\0';
	return true;
}

/* kubepods-burstable-pod<uid>.slice, kubepods-pod<uid>.slice, or cgroupfs pod<uid>. */
static bool pod_component(const char *s, size_t n, bool in_kubepods, char *out, size_t cap)
{
	static const char slice[] = ".slice";
	size_t sl = sizeof(slice) - 1;

	if (n > sl && !memcmp(s + n - sl, slice, sl) && !strncmp(s, "kubepods-", 9)) {
		const char *p = NULL;

		for (size_t i = 0; i + 3 <= n - sl; i++)
			if (!memcmp(s + i, "pod", 3))
				p = s + i + 3;
		return p && pod_uid(p, (size_t)(s + n - sl - p), out, cap);
	}
	return in_kubepods && n > 3 && !memcmp(s, "pod", 3) && pod_uid(s + 3, n - 3, out, cap);
}

/* user-<uid>.slice: a user's own containers (rootless podman). */
static bool user_slice(const char *s, size_t n, uid_t *uid)
{
	unsigned long long u = 0;
	size_t i;

	if (n < 11 || memcmp(s, "user-", 5) || memcmp(s + n - 6, ".slice", 6))
		return false;
	for (i = 5; i < n - 6; i++) {
		if (s[i] < '0' || s[i] > '9' || u > 0xffffffffULL / 10)
			return false;
		u = u * 10 + (unsigned)(s[i] - '0');
	}
	if (i == 5 || u >= 0xffffffffULL)
		return false;
	*uid = (uid_t)u;
	return true;
}

int thpd_ctr_parse_path(const char *path, size_t len, struct thpd_ctr_ref *ref)
{
	const char *end = path + len, *s = path, *prev = NULL;
	size_t prevlen = 0;
	bool kubepods = false;
	char uid[40];

	memset(ref, 0, sizeof(*ref));
	while (s < end) {
		const char *e = memchr(s, '/', (size_t)(end - s));
		size_t n, off;
		int rt = THPD_RT_NONE;

		if (!e)
			e = end;
		n = (size_t)(e - s);
		if (n == 0) {
			s = e + 1;
			continue;
		}
		if ((off = id_between(s, n, "docker-", ".scope")))
			rt = THPD_RT_DOCKER;
		else if ((off = id_between(s, n, "libpod-", ".scope")) ||
			 (off = id_between(s, n, "libpod-", "")))
			rt = THPD_RT_PODMAN;
		else if ((off = id_between(s, n, "crio-", ".scope")) ||
			 (off = id_between(s, n, "crio-", "")))
			rt = THPD_RT_CRIO;
		else if ((off = id_between(s, n, "cri-containerd-", ".scope")))
			rt = THPD_RT_CONTAINERD;
		else if (is_hex64(s, n) && prev && prevlen == 6 && !memcmp(prev, "docker", 6))
			rt = THPD_RT_DOCKER;
		else if (is_hex64(s, n) && ref->pod_uid[0])
			rt = THPD_RT_KUBEPODS;
		if (rt != THPD_RT_NONE) {
			/* The innermost container wins (one inside another's cgroup). */
			ref->runtime = rt;
			memcpy(ref->id, s + off, THPD_CTR_ID_LEN);
			ref->id[THPD_CTR_ID_LEN] = '\0';
		} else if ((n == 8 && !memcmp(s, "kubepods", 8)) ||
			   (n > 9 && !memcmp(s, "kubepods", 8) && (s[8] == '.' || s[8] == '-'))) {
			kubepods = true;
			if (pod_component(s, n, true, uid, sizeof(uid)))
				memcpy(ref->pod_uid, uid, sizeof(uid));
		} else if (pod_component(s, n, kubepods, uid, sizeof(uid))) {
			memcpy(ref->pod_uid, uid, sizeof(uid));
		} else if (user_slice(s, n, &ref->owner)) {
			ref->rootless = true;
		}
		prev = s;
		prevlen = n;
		s = e + 1;
	}
	if (ref->runtime == THPD_RT_NONE) {
		memset(ref, 0, sizeof(*ref));
		return 0;
	}
	return 1;
}

int thpd_ctr_parse_proc_cgroup(const char *text, struct thpd_ctr_ref *ref)
{
	/* The v2 line first: with the systemd driver it names the container;
	 * on a v1 or hybrid machine the cgroupfs driver's path is in the
	 * controllers' lines only. */
	for (int round = 0; round < 2; round++) {
		for (const char *l = text; l && *l;) {
			const char *nl = strchr(l, '\n');
			size_t n = nl ? (size_t)(nl - l) : strlen(l);
			const char *c1 = memchr(l, ':', n), *c2;

			if (c1 && (c2 = memchr(c1 + 1, ':', (size_t)(l + n - c1 - 1)))) {
				bool v2 = c1 == l + 1 && l[0] == '0' && c2 == c1 + 1;

				if (v2 == (round == 0) &&
				    thpd_ctr_parse_path(c2 + 1, (size_t)(l + n - c2 - 1), ref))
					return 1;
			}
			l = nl ? nl + 1 : NULL;
		}
	}
	memset(ref, 0, sizeof(*ref));
	return 0;
}
