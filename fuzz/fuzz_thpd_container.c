// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Fuzz thpd's container identity (tools/thpd/container_id.c and the record
 * parsers of container_meta.c): the input is a cgroup path, or a runtime
 * record of each kind, as any user who names a container or writes a pod
 * spec can shape them.  Nothing may crash or leak; a found container has
 * 64 hex digits; what is kept stays within the caps.
 */
#include <stdlib.h>
#include <string.h>

#include "container.h"
#include "fuzz.h"
#include "thpd.h"

static void check_caps(const struct thpd_ctr *c)
{
	if (c->nlabels > THPD_CTR_KV_MAX || c->nannotations > THPD_CTR_KV_MAX)
		abort();
	for (size_t i = 0; i < c->nannotations; i++)
		if (strlen(c->annotations[i].key) > THPD_CTR_KEY_MAX ||
		    strlen(c->annotations[i].value) > THPD_CTR_VALUE_MAX)
			abort();
	for (const char *s = c->name; s; s = NULL)
		if (strlen(s) > THPD_CTR_NAME_MAX)
			abort();
	if (c->policy < -2 || c->policy > THPD_RULE_SYSTEM)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct thpd_ctr_ref ref;
	struct thpd_ctr c;
	char bundle[512];
	char *text;

	if (!size)
		return 0;
	/* The first byte picks what the rest is. */
	text = malloc(size);
	if (!text)
		abort();
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	memset(&c, 0, sizeof(c));
	memset(c.id, 'a', THPD_CTR_ID_LEN);
	switch (data[0] % 5) {
	case 0:
		if (thpd_ctr_parse_path(text, size - 1, &ref)) {
			if (strlen(ref.id) != THPD_CTR_ID_LEN || ref.runtime == THPD_RT_NONE)
				abort();
			if (strspn(ref.id, "0123456789abcdef") != THPD_CTR_ID_LEN)
				abort();
		}
		if (thpd_ctr_parse_proc_cgroup(text, &ref) && strlen(ref.id) != THPD_CTR_ID_LEN)
			abort();
		break;
	case 1:
		thpd_ctr_parse_oci(&c, text, size - 1);
		break;
	case 2:
		thpd_ctr_parse_docker(&c, text, size - 1);
		break;
	case 3:
		thpd_ctr_parse_storage(&c, text, size - 1);
		break;
	case 4:
		if (thpd_ctr_parse_state(text, size - 1, bundle, sizeof(bundle)) == 0 &&
		    (bundle[0] != '/' || strlen(bundle) >= sizeof(bundle)))
			abort();
		break;
	}
	thpd_ctr_derive(&c, NULL);
	check_caps(&c);
	thpd_ctr_clear(&c);
	free(text);
	return 0;
}
