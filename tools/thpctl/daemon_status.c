// SPDX-License-Identifier: LGPL-2.1-or-later
/* thpctl status --daemon: thpd's rules and largest processes, from its socket. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "json.h"
#include "thpctl.h"

/* thpd's answer is a few hundred bytes per rule and process (top_processes). */
#define ANSWER_MAX (64u << 20)
#define DEPTH_MAX 32

/* One parsed JSON value; a container's members are a list of children. */
enum jtype { J_NULL,
	     J_BOOL,
	     J_NUM,
	     J_STR,
	     J_ARR,
	     J_OBJ };
struct jval {
	enum jtype type;
	char *key; /* member name inside an object, decoded */
	char *str; /* J_STR: decoded; J_NUM: the number's text */
	bool b;
	struct jval *child, *next;
};

struct jparser {
	const char *p, *end;
	int depth;
};

static void jfree(struct jval *v)
{
	while (v) {
		struct jval *next = v->next;

		jfree(v->child);
		free(v->key);
		free(v->str);
		free(v);
		v = next;
	}
}

static void skip_ws(struct jparser *jp)
{
	while (jp->p < jp->end && strchr(" \t\r\n", *jp->p) && *jp->p)
		jp->p++;
}

static int hex4(const char *s, uint32_t *out)
{
	uint32_t v = 0;

	for (int i = 0; i < 4; i++) {
		char c = s[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (uint32_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (uint32_t)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (uint32_t)(c - 'A' + 10);
		else
			return -1;
	}
	*out = v;
	return 0;
}

static size_t put_utf8(char *o, uint32_t cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | (cp >> 6));
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | (cp >> 12));
		o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | (cp >> 18));
	o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
	o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

/* A string literal at jp->p (the opening quote), decoded; NULL if malformed. */
static char *parse_string(struct jparser *jp)
{
	const char *s = jp->p + 1, *q = s;
	char *out, *o;

	/* Decoded text is never longer than the literal: that much room. */
	while (q < jp->end && *q != '"')
		q += *q == '\\' ? 2 : 1;
	out = malloc((size_t)(q - s) + 1);
	o = out;
	if (!out)
		return NULL;
	while (s < jp->end && *s != '"') {
		unsigned char c = (unsigned char)*s;

		if (c < 0x20 || c == 0)
			goto bad;
		if (c != '\\') {
			*o++ = *s++;
			continue;
		}
		if (++s >= jp->end)
			goto bad;
		switch (*s) {
		case '"':
		case '\\':
		case '/':
			*o++ = *s;
			break;
		case 'b':
			*o++ = '\b';
			break;
		case 'f':
			*o++ = '\f';
			break;
		case 'n':
			*o++ = '\n';
			break;
		case 'r':
			*o++ = '\r';
			break;
		case 't':
			*o++ = '\t';
			break;
		case 'u': {
			uint32_t cp, lo;

			if (jp->end - s < 5 || hex4(s + 1, &cp))
				goto bad;
			s += 4;
			if (cp >= 0xd800 && cp <= 0xdbff && jp->end - s >= 7 && s[1] == '\\' &&
			    s[2] == 'u' && hex4(s + 3, &lo) == 0 && lo >= 0xdc00 && lo <= 0xdfff) {
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
				s += 6;
			} else if (cp >= 0xd800 && cp <= 0xdfff) {
				cp = 0xfffd; /* a lone surrogate */
			}
			if (cp == 0)
				cp = 0xfffd; /* no NUL inside a C string */
			o += put_utf8(o, cp);
			break;
		}
		default:
			goto bad;
		}
		s++;
	}
	if (s >= jp->end)
		goto bad;
	*o = '\0';
	jp->p = s + 1;
	return out;
bad:
	free(out);
	return NULL;
}

static struct jval *parse_value(struct jparser *jp);

/* The members of an array or object at jp->p ('[' or '{'); 0 or -1. */
static int parse_members(struct jparser *jp, struct jval *v, bool object)
{
	struct jval **tail = &v->child;
	char close = object ? '}' : ']';

	jp->p++;
	skip_ws(jp);
	if (jp->p < jp->end && *jp->p == close) {
		jp->p++;
		return 0;
	}
	for (;;) {
		char *key = NULL;
		struct jval *m;

		skip_ws(jp);
		if (object) {
			if (jp->p >= jp->end || *jp->p != '"' || !(key = parse_string(jp)))
				return -1;
			skip_ws(jp);
			if (jp->p >= jp->end || *jp->p != ':') {
				free(key);
				return -1;
			}
			jp->p++;
		}
		m = parse_value(jp);
		if (!m) {
			free(key);
			return -1;
		}
		m->key = key;
		*tail = m;
		tail = &m->next;
		skip_ws(jp);
		if (jp->p < jp->end && *jp->p == ',') {
			jp->p++;
			continue;
		}
		if (jp->p < jp->end && *jp->p == close) {
			jp->p++;
			return 0;
		}
		return -1;
	}
}

static bool literal(struct jparser *jp, const char *word)
{
	size_t n = strlen(word);

	if ((size_t)(jp->end - jp->p) < n || memcmp(jp->p, word, n) != 0)
		return false;
	jp->p += n;
	return true;
}

static struct jval *parse_value(struct jparser *jp)
{
	struct jval *v;

	skip_ws(jp);
	if (jp->p >= jp->end || ++jp->depth > DEPTH_MAX)
		return NULL;
	v = calloc(1, sizeof(*v));
	if (!v)
		return NULL;
	switch (*jp->p) {
	case '{':
	case '[':
		v->type = *jp->p == '{' ? J_OBJ : J_ARR;
		if (parse_members(jp, v, v->type == J_OBJ))
			goto bad;
		break;
	case '"':
		v->type = J_STR;
		if (!(v->str = parse_string(jp)))
			goto bad;
		break;
	default:
		if (literal(jp, "true")) {
			v->type = J_BOOL;
			v->b = true;
		} else if (literal(jp, "false")) {
			v->type = J_BOOL;
		} else if (literal(jp, "null")) {
			v->type = J_NULL;
		} else {
			const char *s = jp->p;

			while (jp->p < jp->end && strchr("+-.0123456789eE", *jp->p) && *jp->p)
				jp->p++;
			if (jp->p == s || !(v->str = strndup(s, (size_t)(jp->p - s))))
				goto bad;
			v->type = J_NUM;
		}
	}
	jp->depth--;
	return v;
bad:
	jfree(v);
	return NULL;
}

static const struct jval *member(const struct jval *obj, const char *key)
{
	if (!obj || obj->type != J_OBJ)
		return NULL;
	for (const struct jval *m = obj->child; m; m = m->next)
		if (strcmp(m->key, key) == 0)
			return m;
	return NULL;
}

static uint64_t member_u64(const struct jval *obj, const char *key)
{
	const struct jval *m = member(obj, key);
	double d;

	if (!m || m->type != J_NUM)
		return 0;
	d = strtod(m->str, NULL);
	return d > 0 ? (uint64_t)d : 0;
}

static double member_double(const struct jval *obj, const char *key)
{
	const struct jval *m = member(obj, key);

	return m && m->type == J_NUM ? strtod(m->str, NULL) : 0;
}

/*
 * A string of thpd's answer, shown as data: rule names come from a
 * configuration file and comm from the process itself, so invisible
 * characters, '\\' and bytes that are not UTF-8 come out as \xNN, cut
 * to what fits @size.
 */
static const char *shown(const struct jval *obj, const char *key, char *buf, size_t size)
{
	const struct jval *m = member(obj, key);
	const unsigned char *p;
	size_t o = 0;

	if (!m || m->type != J_STR)
		return "-";
	p = (const unsigned char *)m->str;
	while (*p && o + 5 < size) {
		uint32_t cp = 0;
		size_t n = utf8_char(p, &cp);

		if (n == 0 || cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == '\\' ||
		    (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069) ||
		    cp == 0x200e || cp == 0x200f) {
			for (size_t i = 0; i < (n ? n : 1) && o + 5 < size; i++)
				o += (size_t)snprintf(buf + o, size - o, "\\x%02x", p[i]);
			p += n ? n : 1;
		} else {
			memcpy(buf + o, p, n);
			o += n;
			p += n;
		}
	}
	buf[o] = '\0';
	return buf;
}

static double mib(uint64_t bytes)
{
	return (double)bytes / (1024.0 * 1024.0);
}

/* Huge as a share of what 2 MiB pages could cover, "-" when nothing could. */
static const char *coverage(uint64_t huge, uint64_t alignable, char *buf, size_t size)
{
	if (!alignable)
		return "-";
	snprintf(buf, size, "%.1f%%", 100.0 * (double)huge / (double)alignable);
	return buf;
}

/*
 * Under a row whose folio sizes thpd read: the sizes holding anonymous
 * memory, each as a share of it ("64K 99.0%").  Nothing when it could not
 * read them (no CAP_SYS_ADMIN): no line rather than zeros.
 */
static void print_folios(const struct jval *obj)
{
	const struct jval *fb = member(obj, "folio_bytes");
	uint64_t anon = member_u64(obj, "anon_bytes");
	bool any = false;

	if (!fb || fb->type != J_OBJ || !anon)
		return;
	printf("%8s folios:", "");
	for (const struct jval *m = fb->child; m; m = m->next) {
		uint64_t b = member_u64(fb, m->key);

		/* Keys are thpd's size labels; anything else is not shown. */
		if (!b || !*m->key || strlen(m->key) > 8 ||
		    strspn(m->key, "0123456789KMGTbase") != strlen(m->key))
			continue;
		printf(" %s %.1f%%", m->key, 100.0 * (double)b / (double)anon);
		any = true;
	}
	printf("%s\n", any ? "" : " -");
}

static void print_table(const struct jval *doc)
{
	const struct jval *rules = member(doc, "rules"), *procs = member(doc, "processes");
	const struct jval *daemon = member(doc, "daemon");
	char name[128], pol[64], cov[32], comm[96];

	printf("%-20s %-8s %-8s %9s %12s %12s %9s\n", "RULE", "POLICY", "ENFORCED", "PROCESSES",
	       "ANON MiB", "HUGE MiB", "COVERAGE");
	for (const struct jval *r = rules ? rules->child : NULL; r; r = r->next) {
		const struct jval *enf = member(r, "enforced");

		printf("%-20s %-8s %-8s %9llu %12.1f %12.1f %9s\n", shown(r, "name", name, sizeof(name)),
		       shown(r, "policy", pol, sizeof(pol)),
		       enf && enf->type == J_BOOL ? (enf->b ? "yes" : "no") : "-",
		       (unsigned long long)member_u64(r, "processes"), mib(member_u64(r, "anon_bytes")),
		       mib(member_u64(r, "huge_bytes")),
		       coverage(member_u64(r, "huge_bytes"), member_u64(r, "alignable_bytes"), cov,
				sizeof(cov)));
		print_folios(r);
	}
	if (procs && procs->child) {
		printf("\n%8s %-16s %-20s %12s %12s %9s\n", "PID", "COMM", "RULE", "ANON MiB", "HUGE MiB",
		       "COVERAGE");
		for (const struct jval *p = procs->child; p; p = p->next) {
			printf("%8llu %-16s %-20s %12.1f %12.1f %9s\n",
			       (unsigned long long)member_u64(p, "pid"), shown(p, "comm", comm, sizeof(comm)),
			       shown(p, "rule", name, sizeof(name)), mib(member_u64(p, "anon_bytes")),
			       mib(member_u64(p, "huge_bytes")),
			       coverage(member_u64(p, "huge_bytes"), member_u64(p, "alignable_bytes"), cov,
					sizeof(cov)));
			print_folios(p);
		}
	}
	if (daemon)
		printf("\nthpd pid %llu: %llu passes, last %.3f s, %.2f s CPU, RSS %.1f MiB%s%s\n",
		       (unsigned long long)member_u64(daemon, "pid"),
		       (unsigned long long)member_u64(daemon, "passes"),
		       member_double(daemon, "last_pass_seconds"), member_double(daemon, "cpu_seconds"),
		       mib(member_u64(daemon, "rss_bytes")),
		       member(daemon, "folio_source") ? ", folio sizes: " : "",
		       member(daemon, "folio_source") ? shown(daemon, "folio_source", pol, sizeof(pol)) : "");
}

/* thpd's whole answer to "json\n" on @path, NUL-terminated; NULL on error. */
static char *ask(const char *path, size_t *len)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t size = 1 << 16, n = 0;
	char *buf = NULL;
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		thpctl_error("status: socket path too long: %s", path);
		return NULL;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		thpctl_error("status: cannot connect to thpd at %s: %s%s", path, strerror(errno),
			     errno == ENOENT || errno == ECONNREFUSED ? " (is thpd running?)" : errno == EACCES ? " (the socket is root's)"
														: "");
		goto fail;
	}
	if (send(fd, "json\n", 5, MSG_NOSIGNAL) != 5) {
		thpctl_error("status: writing to %s: %s", path, strerror(errno));
		goto fail;
	}
	shutdown(fd, SHUT_WR);
	buf = malloc(size);
	for (;;) {
		ssize_t r;

		if (!buf) {
			thpctl_error("status: out of memory");
			goto fail;
		}
		if (n + 1 == size) {
			char *b = size < ANSWER_MAX ? realloc(buf, size * 2) : NULL;

			if (!b) {
				thpctl_error("status: thpd's answer is over %u MiB", ANSWER_MAX >> 20);
				goto fail;
			}
			buf = b;
			size *= 2;
		}
		r = read(fd, buf + n, size - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			thpctl_error("status: reading from %s: %s", path, strerror(errno));
			goto fail;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = '\0';
	*len = n;
	return buf;
fail:
	if (fd >= 0)
		close(fd);
	free(buf);
	return NULL;
}

int thpctl_status_daemon(const char *socket_path, bool json)
{
	struct jparser jp;
	struct jval *doc;
	size_t len = 0;
	char *answer = ask(socket_path ? socket_path : THPD_SOCKET_DEFAULT, &len);

	if (!answer)
		return THPCTL_EXIT_FAILURE;
	jp = (struct jparser){ .p = answer, .end = answer + len };
	doc = parse_value(&jp);
	skip_ws(&jp);
	if (!doc || doc->type != J_OBJ || jp.p != jp.end || !member(doc, "rules")) {
		thpctl_error("status: the answer of %s is not thpd's status document (%zu bytes)",
			     socket_path ? socket_path : THPD_SOCKET_DEFAULT, len);
		jfree(doc);
		free(answer);
		return THPCTL_EXIT_FAILURE;
	}
	if (json) {
		fwrite(answer, 1, len, stdout);
		if (answer[len - 1] != '\n')
			putchar('\n');
	} else
		print_table(doc);
	jfree(doc);
	free(answer);
	return THPCTL_EXIT_OK;
}
