// SPDX-License-Identifier: LGPL-2.1-or-later
/* thpd: its status JSON (doc/thpd-json.md), with and without the per-process members. */
#include <stdlib.h>
#include <unistd.h>

#include "clock_ns.h" /* lib/: clock_ns() */
#include "container.h"
#include "json.h" /* tools/common: json_escape() */
#include "text_buf.h"
#include "thpd.h"

static void bput(void *b, const char *p, size_t n)
{
	thpd_bprintf(b, "%.*s", (int)n, p);
}

/* A JSON string: the JSON writer's escape (tools/common/json.c). */
static void json_str(struct thpd_buf *b, const char *s)
{
	json_escape(s, bput, b);
}

/* {"base":N,"64K":N,...} */
static void folio_json(struct thpd_buf *b, const struct thpd_state *st, uint64_t base,
		       const uint64_t *bytes)
{
	char lab[24];

	thpd_bprintf(b, ",\"folio_bytes\":{\"base\":%llu", (unsigned long long)base);
	for (uint32_t k = 0; k < st->nsizes; k++)
		thpd_bprintf(b, ",\"%s\":%llu", thpd_size_label(st->sizes[k], lab, sizeof(lab)),
			     (unsigned long long)bytes[k]);
	thpd_bprintf(b, "}");
}

static char *json_text(const struct thpd_state *st, bool per_process, size_t *len)
{
	struct thpd_buf b = { 0 };
	const struct thpd_proc **v;
	size_t n = thpd_matched_by_anon(st, &v);

	thpd_bprintf(&b, "{\"schema\":%d,\"rules\":[", THPD_JSON_SCHEMA);
	for (size_t i = 0; i < st->cfg.nrules; i++) {
		const struct thpd_rule *r = &st->cfg.rules[i];

		thpd_bprintf(&b, "%s{\"name\":", i ? "," : "");
		json_str(&b, r->conf.name);
		thpd_bprintf(&b, ",\"policy\":\"%s\",\"enforced\":%s,\"processes\":%llu,\"anon_bytes\":%llu,"
				 "\"huge_bytes\":%llu,\"alignable_bytes\":%llu,\"collapses\":%llu",
			     thpd_rule_shown_policy(&r->conf),
			     r->conf.policy == THPD_RULE_HUGE || r->conf.inject ? "true" : "false",
			     (unsigned long long)r->last.processes, (unsigned long long)r->last.anon,
			     (unsigned long long)r->last.huge, (unsigned long long)r->last.alignable,
			     (unsigned long long)r->totals.collapses);
		if (r->last.folio_procs)
			folio_json(&b, st, r->last.folio_base, r->last.folio_bytes);
		thpd_bprintf(&b, ",\"failures\":{");
		for (int e = 0, first = 1; e < THPD_NERRNO; e++) {
			if (!r->totals.failures[e])
				continue;
			thpd_bprintf(&b, "%s\"%s\":%llu", first ? "" : ",", thpd_errno_label(e),
				     (unsigned long long)r->totals.failures[e]);
			first = 0;
		}
		thpd_bprintf(&b, "}}");
	}
	thpd_bprintf(&b, "]");
	if (per_process)
		thpd_bprintf(&b, ",\"processes\":[");
	for (size_t i = 0; per_process && i < n; i++) {
		thpd_bprintf(&b, "%s{\"pid\":%d,\"comm\":", i ? "," : "", (int)v[i]->pid);
		json_str(&b, v[i]->comm);
		thpd_bprintf(&b, ",\"rule\":");
		json_str(&b, st->cfg.rules[v[i]->rule].conf.name);
		thpd_bprintf(&b, ",\"anon_bytes\":%llu,\"huge_bytes\":%llu,\"alignable_bytes\":%llu",
			     (unsigned long long)v[i]->anon, (unsigned long long)v[i]->huge,
			     (unsigned long long)v[i]->alignable);
		if (v[i]->sizes_known)
			folio_json(&b, st, v[i]->folio_base, v[i]->folio_bytes);
		if (v[i]->id.ctr) {
			const struct thpd_ctr *c = v[i]->id.ctr;
			const char *f[] = { c->name, c->pod_namespace, c->pod_name, c->pod_uid };
			const char *k[] = { "name", "pod_namespace", "pod_name", "pod_uid" };

			thpd_bprintf(&b, ",\"container\":{\"runtime\":\"%s\",\"id\":\"%s\"",
				     thpd_runtime_name(c->runtime), c->id);
			for (size_t j = 0; j < 4; j++) {
				if (!f[j])
					continue;
				thpd_bprintf(&b, ",\"%s\":", k[j]);
				json_str(&b, f[j]);
			}
			if (c->policy >= 0)
				thpd_bprintf(&b, ",\"policy_annotation\":\"%s\"",
					     thpd_rule_policy_name(c->policy));
			thpd_bprintf(&b, "}");
		}
		thpd_bprintf(&b, "}");
	}
	{
		const struct thpd_scan_stats *ev = thpd_scan_stats(st->scan);

		/* The proc connector's events and what their budget made of them. */
		thpd_bprintf(&b, "%s\"events\":{\"execs\":%llu,\"uid_changes\":%llu,\"deferred_drains\":%llu,"
				 "\"dropped_drains\":%llu,\"cpu_seconds\":%.6f,\"mode\":\"%s\","
				 "\"exec_during_collapse\":%llu}",
			     per_process ? "]," : ",",
			     (unsigned long long)ev->execs, (unsigned long long)ev->uids,
			     (unsigned long long)ev->deferred_drains, (unsigned long long)ev->drops,
			     (double)ev->cpu_ns / 1e9,
			     !thpd_scan_has_connector(st->scan)		      ? "none"
			     : thpd_scan_mode(st->scan) == THPD_EVENTS_HANDLE ? "handle"
			     : thpd_scan_mode(st->scan) == THPD_EVENTS_DEFER  ? "defer"
									      : "drop",
			     (unsigned long long)st->exec_races);
	}
	thpd_bprintf(&b, ",\"daemon\":{\"folio_source\":\"%s\",\"pid\":%d,\"cpu_seconds\":%.6f,\"passes\":%llu,"
			 "\"last_pass_seconds\":%.6f,\"rss_bytes\":%llu}}\n",
		     st->folio_source < 0 ? "unknown" : st->folio_source == THP_FOLIO_SOURCE_KPAGEFLAGS ? "kpageflags"
													: "none",
		     (int)getpid(), (double)clock_ns(CLOCK_PROCESS_CPUTIME_ID) / 1e9, (unsigned long long)st->passes,
		     st->last_pass_s, (unsigned long long)thpd_rss_bytes());
	free(v);
	return thpd_bdone(&b, len);
}

char *thpd_json_text(const struct thpd_state *st, size_t *len)
{
	return json_text(st, true, len);
}

char *thpd_json_text_public(const struct thpd_state *st, size_t *len)
{
	return json_text(st, st->cfg.http_process_metrics, len);
}
