// SPDX-License-Identifier: LGPL-2.1-or-later
/* thpctl status --json (doc/thpctl-json.md). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <thp/thp.h>

#include "json.h"
#include "status.h"
#include "thpctl.h"

void thpctl_json_policy(struct json *j, const char *policy)
{
	if (policy) {
		json_string(j, "policy", policy);
		json_begin_array(j, "policy_candidates");
		json_string(j, NULL, policy);
	} else {
		json_null(j, "policy");
		json_begin_array(j, "policy_candidates");
		json_string(j, NULL, thp_policy_name(THP_POLICY_SYSTEM));
		json_string(j, NULL, thp_policy_name(THP_POLICY_NOHUGE));
	}
	json_end_array(j);
}

int status_print_json(const struct status_opts *o, const struct status_data *d)
{
	struct totals t = { 0 };
	struct json j;

	json_begin_document(&j, stdout, "status");
	json_i64(&j, "pid", d->pid);
	json_bool(&j, "self", d->self);

	json_begin_object(&j, "default");
	thpctl_json_policy(&j, d->policy_known ? thp_policy_name(d->def.policy) : NULL);
	if (d->policy_known) {
		json_string(&j, "backend", thp_backend_name(d->def.backend_used));
		json_bool(&j, "persistent", d->def.persistent);
		if (d->def.backend_used == THP_BACKEND_PRELOAD)
			json_string(&j, "persistent_by", "preload");
		else if (d->def.persistent)
			json_string(&j, "persistent_by", "kernel");
		else
			json_null(&j, "persistent_by");
		json_null(&j, "detail");
	} else {
		json_null(&j, "backend");
		json_null(&j, "persistent");
		json_null(&j, "persistent_by");
		json_string(&j, "detail", d->detail);
	}
	json_end_object(&j);

	json_begin_object(&j, "coverage");
	json_u64(&j, "anon_bytes", d->anon);
	json_u64(&j, "anon_huge_bytes", d->anon_huge);
	json_u64(&j, "anon_alignable_bytes", d->alignable);
	json_u64(&j, "huge_percent_of_anon", status_percent(d->anon_huge, d->anon));
	json_u64(&j, "huge_percent_of_alignable", status_percent(d->anon_huge, d->alignable));
	json_bool(&j, "low", status_low_coverage(d));
	json_string(&j, "folio_source", status_source_name(d->q.folio_source));
	if (d->q.folio_source == THP_FOLIO_SOURCE_KPAGEFLAGS) {
		json_u64(&j, "base_bytes", d->q.anon_base_bytes);
		json_u64(&j, "other_bytes", d->q.anon_other_bytes);
	} else {
		json_null(&j, "base_bytes");
		json_null(&j, "other_bytes");
	}
	json_begin_array(&j, "sizes");
	for (uint32_t i = 0; i < d->q.nr_sizes; i++) {
		json_begin_object(&j, NULL);
		json_u64(&j, "size", d->q.sizes[i].size);
		if (d->q.folio_source == THP_FOLIO_SOURCE_KPAGEFLAGS)
			json_u64(&j, "bytes", d->q.sizes[i].bytes);
		else
			json_null(&j, "bytes");
		json_bool(&j, "huge_policy", status_size_policy(d, d->q.sizes[i].size));
		json_end_object(&j);
	}
	json_end_array(&j);
	if (d->sized) {
		json_u64(&j, "policy_sizes_bytes", d->policy_bytes);
		json_u64(&j, "policy_alignable_bytes", d->policy_alignable);
		json_u64(&j, "policy_percent_of_alignable",
			 status_percent(d->policy_bytes, d->policy_alignable));
	} else {
		json_null(&j, "policy_sizes_bytes");
		json_null(&j, "policy_alignable_bytes");
		json_null(&j, "policy_percent_of_alignable");
	}
	json_end_object(&j);

	json_begin_object(&j, "filter");
	json_bool(&j, "anon", o->anon_only);
	json_bool(&j, "huge", o->huge_only);
	json_end_object(&j);
	json_u64(&j, "mappings_unfiltered", d->nmaps);

	json_begin_array(&j, "mappings");
	for (size_t i = 0; i < d->nmaps; i++) {
		const struct thp_mapping_state *m = &d->maps[i];

		if (!status_listed(o, m))
			continue;
		status_add_total(&t, m);
		json_begin_object(&j, NULL);
		json_hex(&j, "start", m->start);
		json_hex(&j, "end", m->end);
		json_u64(&j, "size", m->end - m->start);
		json_bool(&j, "advised_huge", m->advised_huge);
		json_bool(&j, "advised_nohuge", m->advised_nohuge);
		json_bool(&j, "thp_eligible", m->thp_eligible);
		json_bool(&j, "anonymous", m->anonymous);
		json_u64(&j, "anon_huge_bytes", m->anon_huge_bytes);
		json_u64(&j, "rss_bytes", m->rss_bytes);
		if (d->q.folio_source == THP_FOLIO_SOURCE_KPAGEFLAGS) {
			json_begin_object(&j, "folios");
			json_u64(&j, "base_bytes", d->folios[i].base_bytes);
			json_u64(&j, "other_bytes", d->folios[i].other_bytes);
			json_begin_array(&j, "sizes");
			for (uint32_t k = 0; k < d->q.nr_sizes; k++) {
				if (!d->folios[i].bytes[k])
					continue;
				json_begin_object(&j, NULL);
				json_u64(&j, "size", d->q.sizes[k].size);
				json_u64(&j, "bytes", d->folios[i].bytes[k]);
				json_end_object(&j);
			}
			json_end_array(&j);
			json_end_object(&j);
		} else {
			json_null(&j, "folios");
		}
		json_string(&j, "name", m->name);
		json_end_object(&j);
	}
	json_end_array(&j);

	json_begin_object(&j, "totals");
	json_u64(&j, "mappings", t.mappings);
	json_u64(&j, "advised_huge", t.huge);
	json_u64(&j, "advised_nohuge", t.nohuge);
	json_u64(&j, "thp_eligible", t.eligible);
	json_u64(&j, "anon_huge_bytes", t.anon_huge);
	json_u64(&j, "rss_bytes", t.rss);
	json_end_object(&j);
	json_end_object(&j);
	return json_finish(&j);
}
