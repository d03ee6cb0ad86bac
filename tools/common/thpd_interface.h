/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What thpd and thpctl agree on: where thpd listens, the version of its
 * status JSON (doc/thpd-json.md) and how a folio size is named in it.
 */
#ifndef THP_TOOLS_THPD_INTERFACE_H
#define THP_TOOLS_THPD_INTERFACE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* thpd's Unix socket unless --socket names another (thpd(8), thpctl(1)). */
#define THPD_SOCKET_DEFAULT "/run/thpd/thpd.sock"

/*
 * The "schema" member of thpd's status JSON.  Raise it when a member
 * changes meaning or goes away (adding one does not); thpctl refuses a
 * schema it does not know.
 */
#define THPD_JSON_SCHEMA 1
#define THPD_STR_(x) #x
#define THPD_STR(x) THPD_STR_(x)

/*
 * "64K", "2M", "1G": a folio size in the largest unit that divides it,
 * as thpd's metrics and JSON and thpctl's tables name it.
 */
static inline const char *thpd_size_label(uint64_t size, char *buf, size_t len)
{
	static const char units[] = "KMGT";
	unsigned u = 0;

	size >>= 10;
	while (u + 1 < sizeof(units) - 1 && size >= 1024 && !(size & 1023)) {
		size >>= 10;
		u++;
	}
	snprintf(buf, len, "%llu%c", (unsigned long long)size, units[u]);
	return buf;
}

#endif
