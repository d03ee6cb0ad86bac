// SPDX-License-Identifier: LGPL-2.1-or-later
/* thpd: what a client of the socket or of HTTP asked for, from the bytes it sent (no I/O). */
#include <string.h>

#include "thpd.h"

static bool word_is(const char *s, size_t n, const char *w)
{
	return n == strlen(w) && !memcmp(s, w, n);
}

static bool starts(const char *s, size_t n, const char *prefix)
{
	size_t k = strlen(prefix);

	return n >= k && !memcmp(s, prefix, k);
}

/* The end of an HTTP request's head: an empty line, "\n\n" or "\n\r\n". */
static bool http_head_done(const char *req, size_t len)
{
	for (size_t i = 0; i + 1 < len; i++)
		if (req[i] == '\n' &&
		    (req[i + 1] == '\n' || (req[i + 1] == '\r' && i + 2 < len && req[i + 2] == '\n')))
			return true;
	return false;
}

enum thpd_req thpd_request_parse(const char *req, size_t len, bool http, bool eof)
{
	bool full = len >= THPD_REQ_MAX - 1;

	if (!http) {
		/* One word and a newline; a client that shut down its side after the word. */
		size_t n = 0;

		while (n < len && req[n] != '\n' && req[n] != '\r')
			n++;
		if (n == len && !full && !(eof && len))
			return THPD_REQ_INCOMPLETE;
		if (word_is(req, n, "metrics"))
			return THPD_REQ_METRICS;
		if (word_is(req, n, "json"))
			return THPD_REQ_JSON;
		if (word_is(req, n, "rules"))
			return THPD_REQ_RULES;
		return THPD_REQ_UNKNOWN;
	}
	if (!full && !http_head_done(req, len))
		return THPD_REQ_INCOMPLETE;
	if (starts(req, len, "GET /metrics ") || starts(req, len, "GET /metrics?"))
		return THPD_REQ_METRICS;
	if (starts(req, len, "GET /status.json "))
		return THPD_REQ_JSON;
	return THPD_REQ_UNKNOWN;
}
