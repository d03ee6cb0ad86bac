// SPDX-License-Identifier: LGPL-2.1-or-later
/* thpctl status --daemon: thpd's status document as a table. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "json.h"
#include "json_parse.h"
#include "thpctl.h"

/*
 * A string of thpd's answer, shown as data: rule names come from a
 * configuration file and comm from the process itself, so invisible
 * characters, '\\' and bytes that are not UTF-8 come out as \xNN, cut
 * to what fits @size.
 */
static const char *shown(const struct jval *obj, const char *key, char *buf, size_t size)
{
	const struct jval *m = json_member(obj, key);
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
	const struct jval *fb = json_member(obj, "folio_bytes");
	uint64_t anon = json_member_u64(obj, "anon_bytes");
	bool any = false;

	if (!fb || fb->type != J_OBJ || !anon)
		return;
	printf("%8s folios:", "");
	for (const struct jval *m = fb->child; m; m = m->next) {
		uint64_t b = json_member_u64(fb, m->key);

		/* Keys are thpd's size labels; anything else is not shown. */
		if (!b || !*m->key || strlen(m->key) > 8 ||
		    strspn(m->key, "0123456789KMGTbase") != strlen(m->key))
			continue;
		printf(" %s %.1f%%", m->key, 100.0 * (double)b / (double)anon);
		any = true;
	}
	printf("%s\n", any ? "" : " -");
}

void thpctl_daemon_table(const struct jval *doc)
{
	const struct jval *rules = json_member(doc, "rules"), *procs = json_member(doc, "processes");
	const struct jval *daemon = json_member(doc, "daemon");
	char name[128], pol[64], cov[32], comm[96];

	printf("%-20s %-8s %-8s %9s %12s %12s %9s\n", "RULE", "POLICY", "ENFORCED", "PROCESSES",
	       "ANON MiB", "HUGE MiB", "COVERAGE");
	for (const struct jval *r = rules ? rules->child : NULL; r; r = r->next) {
		const struct jval *enf = json_member(r, "enforced");

		printf("%-20s %-8s %-8s %9llu %12.1f %12.1f %9s\n", shown(r, "name", name, sizeof(name)),
		       shown(r, "policy", pol, sizeof(pol)),
		       enf && enf->type == J_BOOL ? (enf->b ? "yes" : "no") : "-",
		       (unsigned long long)json_member_u64(r, "processes"), mib(json_member_u64(r, "anon_bytes")),
		       mib(json_member_u64(r, "huge_bytes")),
		       coverage(json_member_u64(r, "huge_bytes"), json_member_u64(r, "alignable_bytes"), cov,
				sizeof(cov)));
		print_folios(r);
	}
	if (procs && procs->child) {
		printf("\n%8s %-16s %-20s %12s %12s %9s\n", "PID", "COMM", "RULE", "ANON MiB", "HUGE MiB",
		       "COVERAGE");
		for (const struct jval *p = procs->child; p; p = p->next) {
			printf("%8llu %-16s %-20s %12.1f %12.1f %9s\n",
			       (unsigned long long)json_member_u64(p, "pid"), shown(p, "comm", comm, sizeof(comm)),
			       shown(p, "rule", name, sizeof(name)), mib(json_member_u64(p, "anon_bytes")),
			       mib(json_member_u64(p, "huge_bytes")),
			       coverage(json_member_u64(p, "huge_bytes"), json_member_u64(p, "alignable_bytes"), cov,
					sizeof(cov)));
			print_folios(p);
		}
	}
	if (daemon)
		printf("\nthpd pid %llu: %llu passes, last %.3f s, %.2f s CPU, RSS %.1f MiB%s%s\n",
		       (unsigned long long)json_member_u64(daemon, "pid"),
		       (unsigned long long)json_member_u64(daemon, "passes"),
		       json_member_double(daemon, "last_pass_seconds"), json_member_double(daemon, "cpu_seconds"),
		       mib(json_member_u64(daemon, "rss_bytes")),
		       json_member(daemon, "folio_source") ? ", folio sizes: " : "",
		       json_member(daemon, "folio_source") ? shown(daemon, "folio_source", pol, sizeof(pol)) : "");
}
