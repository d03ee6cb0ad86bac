// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Fuzz thpd's request parser (tools/thpd/request.c), which decides from the
 * bytes a client of the Unix socket or of HTTP sent what it asked for.
 * Input: one byte of flags (bit 0 HTTP, bit 1 the client shut down its
 * side), then the request (up to THPD_REQ_MAX - 1 bytes, as server.c keeps).
 * Checked against a plain restatement of the protocol: a socket request is
 * answered once its line ends (or the client shut down, or the buffer is
 * full), by its first word exactly; an HTTP request once its head ends,
 * by its request line; "rules" only on the socket; and every prefix of a
 * request that is not complete is not complete either.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memmem() */
#endif
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "thpd.h"

static bool has_prefix(const uint8_t *d, size_t n, const char *p)
{
	return n >= strlen(p) && !memcmp(d, p, strlen(p));
}

static enum thpd_req model(const uint8_t *d, size_t n, bool http, bool eof)
{
	bool full = n >= THPD_REQ_MAX - 1;

	if (!http) {
		size_t w = 0;

		while (w < n && d[w] != '\n' && d[w] != '\r')
			w++;
		if (w == n && !full && !(eof && n))
			return THPD_REQ_INCOMPLETE;
		if (w == 7 && !memcmp(d, "metrics", 7))
			return THPD_REQ_METRICS;
		if (w == 4 && !memcmp(d, "json", 4))
			return THPD_REQ_JSON;
		if (w == 5 && !memcmp(d, "rules", 5))
			return THPD_REQ_RULES;
		return THPD_REQ_UNKNOWN;
	}
	if (!full && !(memmem(d, n, "\n\n", 2) || memmem(d, n, "\n\r\n", 3)))
		return THPD_REQ_INCOMPLETE;
	if (has_prefix(d, n, "GET /metrics ") || has_prefix(d, n, "GET /metrics?"))
		return THPD_REQ_METRICS;
	if (has_prefix(d, n, "GET /status.json "))
		return THPD_REQ_JSON;
	return THPD_REQ_UNKNOWN;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	bool http, eof;
	enum thpd_req r;
	char *req;

	if (size < 1)
		return 0;
	http = data[0] & 1;
	eof = data[0] & 2;
	data++;
	size--;
	if (size > THPD_REQ_MAX - 1)
		size = THPD_REQ_MAX - 1;
	/* An exact-size copy: ASan sees a read past the bytes received. */
	req = malloc(size ? size : 1);
	if (!req)
		abort();
	memcpy(req, data, size);
	r = thpd_request_parse(req, size, http, eof);
	if (r != model(data, size, http, eof) || (http && r == THPD_REQ_RULES))
		abort();
	if (r == THPD_REQ_INCOMPLETE)
		for (size_t n = 0; n < size; n++)
			if (thpd_request_parse(req, n, http, false) != THPD_REQ_INCOMPLETE)
				abort();
	free(req);
	return 0;
}
