// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Fuzz thpd's configuration parser (tools/thpd/config.c, libinih) with the
 * input as a configuration file, read through a memfd as /proc/self/fd/N:
 * it must never crash or leak, every error is "FILE:LINE: message" with a
 * line of the input (0: the file as a whole), and a configuration without
 * errors has only rules with a valid, non-empty UTF-8 name, a policy (or
 * policy_from_annotation) and something to match.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memfd_create() */
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "json.h"
#include "thpd.h"

static bool valid_name(const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	uint32_t cp;

	if (!*u)
		return false;
	while (*u) {
		size_t k = utf8_char(u, &cp);

		if (!k || cp < 0x20 || cp == 0x7f)
			return false;
		u += k;
	}
	return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	static char path[64];
	struct thpd_config c;
	char *err = NULL, *out = NULL;
	size_t lines = 1, outlen = 0;
	FILE *f;
	int n;

	if (fd < 0) {
		fd = memfd_create("fuzz_thpd_config", MFD_CLOEXEC);
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	if (fd < 0 || ftruncate(fd, 0) || (size && pwrite(fd, data, size, 0) != (ssize_t)size))
		abort();
	for (size_t i = 0; i < size; i++)
		lines += data[i] == '\n';
	n = thpd_config_load(&c, path, false, NULL, &err);
	if (n < 0 || (n == 0) != (err == NULL))
		abort();
	for (const char *e = err; e && *e;) {
		size_t plen = strlen(path);
		char *end;
		unsigned long line;

		if (strncmp(e, path, plen) != 0 || e[plen] != ':')
			abort();
		line = strtoul(e + plen + 1, &end, 10);
		if (*end != ':' || line > lines)
			abort();
		e = strchr(e, '\n');
		if (!e)
			abort();
		e++;
	}
	if (n == 0) {
		for (size_t i = 0; i < c.nrules; i++) {
			const struct thpd_rule *r = &c.rules[i];

			if (!valid_name(r->conf.name) || r->conf.policy < -1 || r->conf.policy > THPD_RULE_IGNORE ||
			    (r->conf.policy < 0 && !r->conf.policy_from_annotation) ||
			    !thpd_rule_has_matcher(&r->conf) || r->conf.line < 1 || (size_t)r->conf.line > lines)
				abort();
		}
		f = open_memstream(&out, &outlen);
		if (!f)
			abort();
		thpd_config_print(&c, f);
		fclose(f);
		free(out);
	}
	free(err);
	thpd_config_free(&c);
	return 0;
}
