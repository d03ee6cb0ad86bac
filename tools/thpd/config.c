// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * thpd: the configuration, /etc/thpd.conf and /etc/thpd.d/\*.conf, read
 * with libinih: the files, their lines and sections, the errors at their
 * line, the checks of each rule as a whole.  config_keys.c checks and
 * stores each key's value.
 */
#ifndef _GNU_SOURCE /* fuzz/fuzz_thpd_config.c's build defines it */
#define _GNU_SOURCE
#endif
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ini.h>

#include "json.h" /* tools/common: utf8_char() */
#include "thpd.h"

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
	char why[512];

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
	if (p->in_daemon && thpd_config_daemon_key(c, name, value, why, sizeof(why)))
		add_err(p, line, "%s", why);
	else if (p->in_rule >= 0 &&
		 thpd_config_rule_key(&c->rules[p->in_rule].conf, name, value, why, sizeof(why)))
		add_err(p, line, "%s", why);
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
		/* -1: none given (a wrong one, config_keys.c, had its error) */
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
