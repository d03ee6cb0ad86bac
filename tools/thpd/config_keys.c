// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * thpd: the configuration's keys: the value of each key of [daemon] and
 * [rule NAME] checked and stored, and the configuration printed back
 * (thpd --check-config, the socket's rules answer).  config.c reads the
 * files and their sections.
 */
#ifndef _GNU_SOURCE /* fuzz/fuzz_thpd_config.c's build defines it */
#define _GNU_SOURCE
#endif
#include <ctype.h>
#include <errno.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

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

static int bad(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The message of a wrong value into @why: -1. */
static int bad(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
	return -1;
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

static int set_str(char **dst, const char *v)
{
	char *s = strdup(v);

	if (!s)
		return -1;
	free(*dst);
	*dst = s;
	return 0;
}

int thpd_config_daemon_key(struct thpd_config *c, const char *name, const char *value, char *why,
			   size_t len)
{
	uint64_t n;

	if (!strcmp(name, "interval_ms")) {
		if (parse_uint(value, 3600000, &n) || n < 10)
			return bad(why, len, "interval_ms: expected 10 to 3600000, got \"%s\"", value);
		else
			c->interval_ms = n;
	} else if (!strcmp(name, "cpu_budget")) {
		if (parse_percent(value, &c->cpu_budget))
			return bad(why, len, "cpu_budget: expected a percentage such as 2%%, got \"%s\"", value);
	} else if (!strcmp(name, "catchup_budget")) {
		if (parse_percent(value, &c->catchup_budget))
			return bad(why, len, "catchup_budget: expected a percentage such as 25%%, got \"%s\"",
				   value);
	} else if (!strcmp(name, "metrics_file")) {
		if (value[0] != '/')
			return bad(why, len, "metrics_file: expected an absolute path");
		else
			set_str(&c->metrics_file, value);
	} else if (!strcmp(name, "listen")) {
		set_str(&c->listen, value);
	} else if (!strcmp(name, "http_process_metrics")) {
		if (parse_bool(value, &c->http_process_metrics))
			return bad(why, len, "http_process_metrics: expected yes or no, got \"%s\"", value);
	} else if (!strcmp(name, "top_processes")) {
		if (parse_uint(value, 10000, &n))
			return bad(why, len, "top_processes: expected 0 to 10000, got \"%s\"", value);
		else
			c->top = (unsigned)n;
	} else {
		return bad(why, len, "unknown key \"%s\" in [daemon]", name);
	}
	return 0;
}

int thpd_config_rule_key(struct thpd_rule_conf *r, const char *name, const char *value, char *why,
			 size_t len)
{
	size_t i;
	uint64_t n;

	if (!strcmp(name, "cgroup")) {
		set_str(&r->cgroup, value[0] == '/' ? value + 1 : value);
	} else if (!strcmp(name, "exe")) {
		set_str(&r->exe, value);
	} else if (!strcmp(name, "user")) {
		if (parse_user(value, &r->uid))
			return bad(why, len, "user: no such user \"%s\"", value);
		else
			set_str(&r->user, value);
	} else if (!strcmp(name, "container_name")) {
		set_str(&r->container_name, value);
	} else if (!strcmp(name, "pod_namespace")) {
		set_str(&r->pod_namespace, value);
	} else if (!strcmp(name, "pod_name")) {
		set_str(&r->pod_name, value);
	} else if (!strcmp(name, "label") || !strcmp(name, "annotation")) {
		const char *wrong = name[0] == 'l' ? add_kv_match(r->labels, &r->nlabels, value)
						   : add_kv_match(r->annotations, &r->nannotations, value);

		if (wrong)
			return bad(why, len, "%s: %s, got \"%s\"", name, wrong, value);
	} else if (!strcmp(name, "policy_from_annotation")) {
		if (parse_bool(value, &r->policy_from_annotation))
			return bad(why, len, "policy_from_annotation: expected yes or no, got \"%s\"", value);
	} else if (!strcmp(name, "policy")) {
		r->policy = POLICY_INVALID;
		for (i = 0; i <= THPD_RULE_IGNORE; i++)
			if (!strcmp(value, policy_names[i]))
				r->policy = (int)i;
		if (r->policy < 0)
			return bad(why, len, "policy: expected huge, never, nohuge, system or ignore, got \"%s\"",
				   value);
	} else if (!strcmp(name, "enforce")) {
		if (!strcmp(value, "inject"))
			r->inject = true;
		else if (!strcmp(value, "report"))
			r->inject = false;
		else
			return bad(why, len, "enforce: expected report or inject, got \"%s\"", value);
	} else if (!strcmp(name, "max_bytes_per_pass")) {
		if (parse_size(value, &r->max_bytes) || r->max_bytes == 0)
			return bad(why, len, "max_bytes_per_pass: expected a size such as 256M, got \"%s\"",
				   value);
	} else if (!strcmp(name, "max_ms_per_pass")) {
		if (parse_uint(value, 60000, &n) || n == 0)
			return bad(why, len, "max_ms_per_pass: expected 1 to 60000, got \"%s\"", value);
		else
			r->max_ns = n * 1000000;
	} else if (!strcmp(name, "setuid")) {
		if (parse_bool(value, &r->setuid))
			return bad(why, len, "setuid: expected yes or no, got \"%s\"", value);
	} else if (!strcmp(name, "override_own_policy")) {
		bool b;

		if (parse_bool(value, &b))
			return bad(why, len, "override_own_policy: expected yes or no, got \"%s\"", value);
		else
			r->own = b ? THPD_OWN_IGNORE : THPD_OWN_VISIBLE;
	} else if (!strcmp(name, "own_policy")) {
		int k;

		for (k = THPD_OWN_IGNORE; k >= 0 && strcmp(value, thpd_own_name(k)); k--)
			;
		if (k < 0)
			return bad(why, len, "own_policy: expected visible, ask or ignore, got \"%s\"", value);
		else
			r->own = k;
	} else {
		return bad(why, len, "unknown key \"%s\" in [rule %s]", name, r->name);
	}
	return 0;
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
