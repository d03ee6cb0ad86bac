// SPDX-License-Identifier: LGPL-2.1-or-later
/* thpd: the configuration, /etc/thpd.conf and /etc/thpd.d/\*.conf, read with libinih. */
#ifndef _GNU_SOURCE /* fuzz/fuzz_thpd_config.c's build defines it */
#define _GNU_SOURCE
#endif
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ini.h>

#include "json.h" /* tools/common: utf8_char() */
#include "thpd.h"

static const char *const policy_names[] = { "huge", "never", "nohuge", "system", "ignore" };

const char *thpd_rule_policy_name(int policy)
{
	return policy >= 0 && policy <= THPD_RULE_IGNORE ? policy_names[policy] : "unset";
}

const char *thpd_rule_shown_policy(const struct thpd_rule_conf *r)
{
	/* policy_from_annotation without a policy of its own: the annotation alone. */
	return r->policy < 0 && r->policy_from_annotation ? "annotation" : thpd_rule_policy_name(r->policy);
}

const char *thpd_own_name(int own)
{
	static const char *const names[] = { [THPD_OWN_VISIBLE] = "visible",
					     [THPD_OWN_ASK] = "ask",
					     [THPD_OWN_IGNORE] = "ignore" };

	return own >= 0 && own <= THPD_OWN_IGNORE ? names[own] : "?";
}

/* A policy = line with a value that is none: its error is given there. */
#define POLICY_INVALID (-2)

struct parse_ctx {
	struct thpd_config *c;
	const char *file;
	/* libinih (Debian's build) gives the handler no line number: the
	 * reader counts the lines it hands out. */
	FILE *fp;
	char *linebuf;
	size_t linecap;
	int line;
	int section_line;
	char section[256];
	int in_rule; /* -1 none, else rule index */
	bool in_daemon;
	char **err;
	size_t errlen;
	int nerr;
};

static void add_err(struct parse_ctx *p, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void add_err(struct parse_ctx *p, int line, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	char *n;
	int len;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	p->nerr++;
	len = snprintf(NULL, 0, "%s:%d: %s\n", p->file, line, msg);
	n = realloc(*p->err, p->errlen + (size_t)len + 1);
	if (!n)
		return;
	snprintf(n + p->errlen, (size_t)len + 1, "%s:%d: %s\n", p->file, line, msg);
	*p->err = n;
	p->errlen += (size_t)len;
}

/*
 * One whole line per call, without its newline.  libinih's buffer (Debian's
 * build: INI_MAX_LINE 200) would split a longer line and parse the rest as
 * the next line: such a line is reported here, at its number, and given to
 * libinih as an empty one.
 */
static char *reader(char *str, int num, void *stream)
{
	struct parse_ctx *p = stream;
	ssize_t n = getline(&p->linebuf, &p->linecap, p->fp);
	const char *s;

	if (n < 0)
		return NULL;
	p->line++;
	if (n > 0 && p->linebuf[n - 1] == '\n')
		p->linebuf[--n] = '\0';
	if (n >= num) {
		add_err(p, p->line, "line too long (%zd characters, at most %d)", n, num - 1);
		str[0] = '\0';
		return str;
	}
	memcpy(str, p->linebuf, (size_t)n + 1);
	/* Blanks as libinih skips them (isspace(), '\r' too). */
	for (s = str; isspace((unsigned char)*s); s++)
		;
	if (*s == '[') {
		p->section_line = p->line;
		/* libinih cuts a section name at MAX_SECTION (50) bytes, silently. */
		if (strcspn(s + 1, "]") >= 50)
			add_err(p, p->line, "section name too long (at most 49 characters)");
	}
	return str;
}

/* "256M", "4k", "1G", plain bytes. */
static int parse_size(const char *v, uint64_t *out)
{
	char *end;
	unsigned long long n;
	uint64_t mul = 1;

	if (!isdigit((unsigned char)*v))
		return -1;
	errno = 0;
	n = strtoull(v, &end, 10);
	if (errno)
		return -1;
	switch (toupper((unsigned char)*end)) {
	case 'K':
		mul = 1ULL << 10;
		end++;
		break;
	case 'M':
		mul = 1ULL << 20;
		end++;
		break;
	case 'G':
		mul = 1ULL << 30;
		end++;
		break;
	case 'T':
		mul = 1ULL << 40;
		end++;
		break;
	default:
		break;
	}
	if (*end == 'i' || *end == 'B')
		end += (*end == 'i' && end[1] == 'B') ? 2 : 1;
	if (*end || n > UINT64_MAX / mul)
		return -1;
	*out = n * mul;
	return 0;
}

static int parse_uint(const char *v, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long n;

	if (!isdigit((unsigned char)*v))
		return -1;
	errno = 0;
	n = strtoull(v, &end, 10);
	if (errno || *end || n > max)
		return -1;
	*out = n;
	return 0;
}

/* "2%" or "2.5%": a share of one core, 0 < share <= 100%. */
static int parse_percent(const char *v, double *out)
{
	char *end;
	double d;

	if (!isdigit((unsigned char)*v))
		return -1;
	errno = 0;
	d = strtod(v, &end);
	if (errno || strcmp(end, "%") != 0 || d <= 0 || d > 100)
		return -1;
	*out = d / 100.0;
	return 0;
}

static int parse_bool(const char *v, bool *out)
{
	if (!strcmp(v, "yes") || !strcmp(v, "true") || !strcmp(v, "1") || !strcmp(v, "on"))
		*out = true;
	else if (!strcmp(v, "no") || !strcmp(v, "false") || !strcmp(v, "0") || !strcmp(v, "off"))
		*out = false;
	else
		return -1;
	return 0;
}

static int parse_user(const char *v, uid_t *uid)
{
	uint64_t n;
	struct passwd *pw;

	if (parse_uint(v, UINT32_MAX - 1, &n) == 0) {
		*uid = (uid_t)n;
		return 0;
	}
	pw = getpwnam(v);
	if (!pw)
		return -1;
	*uid = pw->pw_uid;
	return 0;
}

static void rule_free(struct thpd_rule *r)
{
	free(r->conf.name);
	free(r->conf.cgroup);
	free(r->conf.exe);
	free(r->conf.user);
	free(r->conf.file);
	free(r->conf.container_name);
	free(r->conf.pod_namespace);
	free(r->conf.pod_name);
	for (size_t i = 0; i < r->conf.nlabels; i++)
		free(r->conf.labels[i].key); /* the glob is in the same block */
	for (size_t i = 0; i < r->conf.nannotations; i++)
		free(r->conf.annotations[i].key);
}

bool thpd_rule_has_matcher(const struct thpd_rule_conf *r)
{
	return r->cgroup || r->exe || r->user || r->container_name || r->pod_namespace ||
	       r->pod_name || r->nlabels || r->nannotations;
}

/* label = KEY=GLOB: one block holds "KEY\0GLOB"; NULL and *@why when wrong. */
static const char *add_kv_match(struct thpd_kv_match *m, size_t *n, const char *v)
{
	const char *eq = strchr(v, '=');
	char *key;

	if (!eq || eq == v)
		return "expected KEY=GLOB";
	if (*n >= THPD_KV_MATCH_MAX)
		return "too many in one rule (at most 16)";
	key = strdup(v);
	if (!key)
		return "out of memory";
	key[eq - v] = '\0';
	m[*n].key = key;
	m[*n].glob = key + (eq - v) + 1;
	(*n)++;
	return NULL;
}

static int new_rule(struct parse_ctx *p, const char *name)
{
	struct thpd_config *c = p->c;
	struct thpd_rule *n;
	size_t i;

	for (i = 0; i < c->nrules; i++) {
		if (!strcmp(c->rules[i].conf.name, name)) {
			add_err(p, p->section_line, "rule \"%s\" is already defined at %s:%d", name,
				c->rules[i].conf.file, c->rules[i].conf.line);
			return -1;
		}
	}
	n = realloc(c->rules, (c->nrules + 1) * sizeof(*n));
	if (!n)
		return -1;
	c->rules = n;
	n = &c->rules[c->nrules];
	memset(n, 0, sizeof(*n));
	n->conf.name = strdup(name);
	n->conf.file = strdup(p->file);
	n->conf.line = p->section_line;
	n->conf.policy = -1;
	n->conf.max_bytes = 256ULL << 20;
	n->conf.max_ns = 250ULL * 1000000;
	if (!n->conf.name || !n->conf.file) {
		rule_free(n);
		return -1;
	}
	return (int)c->nrules++;
}

static int set_str(char **dst, const char *v)
{
	char *s = strdup(v);

	if (!s)
		return -1;
	free(*dst);
	*dst = s;
	return 0;
}

/*
 * The name of [rule NAME] without the blanks around it, into @out; NULL, or
 * what is wrong with it.  It becomes a label value and a JSON string.
 */
static const char *rule_name(const char *s, char *out, size_t cap)
{
	size_t n;

	while (*s == ' ' || *s == '\t')
		s++;
	n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	if (!n)
		return "is empty";
	if (n >= cap)
		return "is too long";
	memcpy(out, s, n);
	out[n] = '\0';
	for (size_t i = 0; i < n;) {
		uint32_t cp;
		size_t k = utf8_char((const unsigned char *)out + i, &cp);

		if (!k)
			return "is not valid UTF-8";
		if (cp < 0x20 || cp == 0x7f)
			return "has a control character";
		i += k;
	}
	return NULL;
}

static int handler(void *user, const char *section, const char *name, const char *value)
{
	struct parse_ctx *p = user;
	struct thpd_config *c = p->c;
	int line = p->line;

	if (strcmp(section, p->section) != 0) {
		size_t n = strnlen(section, sizeof(p->section) - 1);

		/* Not snprintf(): under -fsanitize=undefined gcc takes section for maybe NULL. */
		memcpy(p->section, section, n);
		p->section[n] = '\0';
		p->in_daemon = !strcmp(section, "daemon");
		p->in_rule = -1;
		if (!strncmp(section, "rule ", 5) || !strcmp(section, "rule")) {
			char nm[sizeof(p->section)];
			const char *bad = rule_name(section + 4, nm, sizeof(nm));

			if (bad) {
				add_err(p, p->section_line, "[%s]: the rule name %s", section, bad);
				p->in_rule = -2;
			} else {
				p->in_rule = new_rule(p, nm);
				if (p->in_rule < 0)
					p->in_rule = -2;
			}
		} else if (!p->in_daemon) {
			add_err(p, p->section_line, "unknown section [%s] (expected [daemon] or [rule NAME])",
				section);
		}
	}
	if (p->in_daemon) {
		uint64_t n;

		if (!strcmp(name, "interval_ms")) {
			if (parse_uint(value, 3600000, &n) || n < 10)
				add_err(p, line, "interval_ms: expected 10 to 3600000, got \"%s\"", value);
			else
				c->interval_ms = n;
		} else if (!strcmp(name, "cpu_budget")) {
			if (parse_percent(value, &c->cpu_budget))
				add_err(p, line, "cpu_budget: expected a percentage such as 2%%, got \"%s\"", value);
		} else if (!strcmp(name, "catchup_budget")) {
			if (parse_percent(value, &c->catchup_budget))
				add_err(p, line, "catchup_budget: expected a percentage such as 25%%, got \"%s\"",
					value);
		} else if (!strcmp(name, "metrics_file")) {
			if (value[0] != '/')
				add_err(p, line, "metrics_file: expected an absolute path");
			else
				set_str(&c->metrics_file, value);
		} else if (!strcmp(name, "listen")) {
			set_str(&c->listen, value);
		} else if (!strcmp(name, "http_process_metrics")) {
			if (parse_bool(value, &c->http_process_metrics))
				add_err(p, line, "http_process_metrics: expected yes or no, got \"%s\"", value);
		} else if (!strcmp(name, "top_processes")) {
			if (parse_uint(value, 10000, &n))
				add_err(p, line, "top_processes: expected 0 to 10000, got \"%s\"", value);
			else
				c->top = (unsigned)n;
		} else {
			add_err(p, line, "unknown key \"%s\" in [daemon]", name);
		}
	} else if (p->in_rule >= 0) {
		struct thpd_rule *r = &c->rules[p->in_rule];
		size_t i;
		uint64_t n;

		if (!strcmp(name, "cgroup")) {
			set_str(&r->conf.cgroup, value[0] == '/' ? value + 1 : value);
		} else if (!strcmp(name, "exe")) {
			set_str(&r->conf.exe, value);
		} else if (!strcmp(name, "user")) {
			if (parse_user(value, &r->conf.uid))
				add_err(p, line, "user: no such user \"%s\"", value);
			else
				set_str(&r->conf.user, value);
		} else if (!strcmp(name, "container_name")) {
			set_str(&r->conf.container_name, value);
		} else if (!strcmp(name, "pod_namespace")) {
			set_str(&r->conf.pod_namespace, value);
		} else if (!strcmp(name, "pod_name")) {
			set_str(&r->conf.pod_name, value);
		} else if (!strcmp(name, "label") || !strcmp(name, "annotation")) {
			const char *bad = name[0] == 'l' ? add_kv_match(r->conf.labels, &r->conf.nlabels, value)
							 : add_kv_match(r->conf.annotations, &r->conf.nannotations, value);

			if (bad)
				add_err(p, line, "%s: %s, got \"%s\"", name, bad, value);
		} else if (!strcmp(name, "policy_from_annotation")) {
			if (parse_bool(value, &r->conf.policy_from_annotation))
				add_err(p, line, "policy_from_annotation: expected yes or no, got \"%s\"", value);
		} else if (!strcmp(name, "policy")) {
			r->conf.policy = POLICY_INVALID;
			for (i = 0; i <= THPD_RULE_IGNORE; i++)
				if (!strcmp(value, policy_names[i]))
					r->conf.policy = (int)i;
			if (r->conf.policy < 0)
				add_err(p, line, "policy: expected huge, never, nohuge, system or ignore, got \"%s\"",
					value);
		} else if (!strcmp(name, "enforce")) {
			if (!strcmp(value, "inject"))
				r->conf.inject = true;
			else if (!strcmp(value, "report"))
				r->conf.inject = false;
			else
				add_err(p, line, "enforce: expected report or inject, got \"%s\"", value);
		} else if (!strcmp(name, "max_bytes_per_pass")) {
			if (parse_size(value, &r->conf.max_bytes) || r->conf.max_bytes == 0)
				add_err(p, line, "max_bytes_per_pass: expected a size such as 256M, got \"%s\"",
					value);
		} else if (!strcmp(name, "max_ms_per_pass")) {
			if (parse_uint(value, 60000, &n) || n == 0)
				add_err(p, line, "max_ms_per_pass: expected 1 to 60000, got \"%s\"", value);
			else
				r->conf.max_ns = n * 1000000;
		} else if (!strcmp(name, "setuid")) {
			if (parse_bool(value, &r->conf.setuid))
				add_err(p, line, "setuid: expected yes or no, got \"%s\"", value);
		} else if (!strcmp(name, "override_own_policy")) {
			bool b;

			if (parse_bool(value, &b))
				add_err(p, line, "override_own_policy: expected yes or no, got \"%s\"", value);
			else
				r->conf.own = b ? THPD_OWN_IGNORE : THPD_OWN_VISIBLE;
		} else if (!strcmp(name, "own_policy")) {
			int k;

			for (k = THPD_OWN_IGNORE; k >= 0 && strcmp(value, thpd_own_name(k)); k--)
				;
			if (k < 0)
				add_err(p, line, "own_policy: expected visible, ask or ignore, got \"%s\"", value);
			else
				r->conf.own = k;
		} else {
			add_err(p, line, "unknown key \"%s\" in [rule %s]", name, r->conf.name);
		}
	}
	/* Always 1: the errors are collected here, with their lines. */
	return 1;
}

static void parse_one(struct parse_ctx *p, const char *path)
{
	size_t first = p->c->nrules, i;
	int r;

	p->file = path;
	p->fp = fopen(path, "re");
	if (!p->fp) {
		add_err(p, 0, "cannot open: %s", strerror(errno));
		return;
	}
	p->line = 0;
	p->section_line = 0;
	p->section[0] = '\0';
	p->in_rule = -1;
	p->in_daemon = false;
	r = ini_parse_stream(reader, p, handler, p);
	if (r > 0)
		add_err(p, r, "syntax error (expected [section], key = value or a comment)");
	else if (r < 0)
		add_err(p, 0, "cannot read");
	fclose(p->fp);
	p->fp = NULL;
	free(p->linebuf);
	p->linebuf = NULL;
	p->linecap = 0;
	for (i = first; i < p->c->nrules; i++) {
		struct thpd_rule *ru = &p->c->rules[i];

		if (!thpd_rule_has_matcher(&ru->conf))
			add_err(p, ru->conf.line,
				"rule \"%s\" has no cgroup, exe, user, container_name, pod_namespace, "
				"pod_name, label or annotation to match",
				ru->conf.name);
		/* not POLICY_INVALID: that error is said already */
		if (ru->conf.policy == -1 && !ru->conf.policy_from_annotation)
			add_err(p, ru->conf.line, "rule \"%s\" has no policy", ru->conf.name);
		if (ru->conf.inject && !ru->conf.policy_from_annotation &&
		    (ru->conf.policy == THPD_RULE_HUGE || ru->conf.policy == THPD_RULE_IGNORE))
			add_err(p, ru->conf.line, "rule \"%s\": enforce = inject is for never, nohuge and system",
				ru->conf.name);
	}
}

static int conf_filter(const struct dirent *d)
{
	size_t n = strlen(d->d_name);

	return d->d_name[0] != '.' && n > 5 && !strcmp(d->d_name + n - 5, ".conf");
}

int thpd_config_load(struct thpd_config *c, const char *file, bool file_optional,
		     const char *dir, char **err)
{
	struct parse_ctx p = { .c = c, .err = err };
	size_t i;

	memset(c, 0, sizeof(*c));
	c->interval_ms = 1000;
	c->cpu_budget = 0.02;
	c->catchup_budget = 0.25;
	c->top = 20;
	*err = NULL;
	if (file && !(file_optional && access(file, F_OK) != 0 && errno == ENOENT))
		parse_one(&p, file);
	if (dir) {
		struct dirent **list;
		int n = scandir(dir, &list, conf_filter, alphasort);

		if (n < 0 && errno != ENOENT) {
			p.file = dir;
			add_err(&p, 0, "cannot read the directory: %s", strerror(errno));
		}
		for (int k = 0; k < n; k++) {
			char path[4096];

			snprintf(path, sizeof(path), "%s/%s", dir, list[k]->d_name);
			parse_one(&p, path);
			free(list[k]);
		}
		if (n >= 0)
			free(list);
	}
	for (i = 0; i < c->nrules; i++) {
		if (c->rules[i].conf.user)
			c->uses_user = true;
		if (c->rules[i].conf.cgroup)
			c->uses_cgroup = true;
		const struct thpd_rule_conf *rc = &c->rules[i].conf;

		if (rc->container_name || rc->pod_namespace || rc->pod_name || rc->nlabels ||
		    rc->nannotations || rc->policy_from_annotation)
			c->uses_container = true;
	}
	return p.nerr;
}

void thpd_config_free(struct thpd_config *c)
{
	for (size_t i = 0; i < c->nrules; i++)
		rule_free(&c->rules[i]);
	free(c->rules);
	free(c->metrics_file);
	free(c->listen);
	memset(c, 0, sizeof(*c));
}

void thpd_config_print(const struct thpd_config *c, FILE *out)
{
	fprintf(out, "[daemon] interval_ms=%llu cpu_budget=%g%% catchup_budget=%g%% top_processes=%u",
		(unsigned long long)c->interval_ms, c->cpu_budget * 100, c->catchup_budget * 100, c->top);
	if (c->metrics_file)
		fprintf(out, " metrics_file=%s", c->metrics_file);
	if (c->listen)
		fprintf(out, " listen=%s", c->listen);
	if (c->http_process_metrics)
		fprintf(out, " http_process_metrics=yes");
	fputc('\n', out);
	for (size_t i = 0; i < c->nrules; i++) {
		const struct thpd_rule *r = &c->rules[i];

		fprintf(out, "%zu. [rule %s] (%s:%d) policy=%s", i + 1, r->conf.name, r->conf.file, r->conf.line,
			thpd_rule_shown_policy(&r->conf));
		if (r->conf.policy == THPD_RULE_NEVER || r->conf.policy == THPD_RULE_NOHUGE || r->conf.policy == THPD_RULE_SYSTEM ||
		    r->conf.policy_from_annotation)
			fprintf(out, " enforce=%s", r->conf.inject ? "inject" : "report");
		if (r->conf.cgroup)
			fprintf(out, " cgroup=%s", r->conf.cgroup);
		if (r->conf.exe)
			fprintf(out, " exe=%s", r->conf.exe);
		if (r->conf.user)
			fprintf(out, " user=%s(%u)", r->conf.user, (unsigned)r->conf.uid);
		if (r->conf.container_name)
			fprintf(out, " container_name=%s", r->conf.container_name);
		if (r->conf.pod_namespace)
			fprintf(out, " pod_namespace=%s", r->conf.pod_namespace);
		if (r->conf.pod_name)
			fprintf(out, " pod_name=%s", r->conf.pod_name);
		for (size_t k = 0; k < r->conf.nlabels; k++)
			fprintf(out, " label=%s=%s", r->conf.labels[k].key, r->conf.labels[k].glob);
		for (size_t k = 0; k < r->conf.nannotations; k++)
			fprintf(out, " annotation=%s=%s", r->conf.annotations[k].key, r->conf.annotations[k].glob);
		if (r->conf.policy_from_annotation)
			fprintf(out, " policy_from_annotation=yes");
		if (r->conf.policy == THPD_RULE_HUGE)
			fprintf(out, " max_bytes_per_pass=%llu max_ms_per_pass=%llu",
				(unsigned long long)r->conf.max_bytes,
				(unsigned long long)(r->conf.max_ns / 1000000));
		if (r->conf.setuid)
			fprintf(out, " setuid=yes");
		if (r->conf.policy == THPD_RULE_HUGE)
			fprintf(out, " own_policy=%s", thpd_own_name(r->conf.own));
		fputc('\n', out);
	}
}
