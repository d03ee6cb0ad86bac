// SPDX-License-Identifier: LGPL-2.1-or-later
/* thpctl status: a process's default THP policy and its per-mapping THP state. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <thp/thp.h>

#include "cli.h"
#include "json.h"
#include "parse.h"
#include "thpctl.h"

struct status_opts {
	pid_t pid;       /* 0: thpctl itself */
	bool json, anon_only, huge_only;
};

struct status_data {
	pid_t pid;
	bool self;
	/* Default policy. */
	struct thp_default_opts def;
	bool policy_known;     /* false: system or nohuge, cannot tell from outside */
	char detail[256];      /* the library's explanation when !policy_known */
	/* Mappings (all of them; the filters apply when printing). */
	struct thp_mapping_state *maps;
	size_t nmaps;
	/* Effective coverage, over all mappings (thp_query() totals). */
	uint64_t anon, anon_huge, alignable;
	/* Bytes by folio size (thp_query() VER2) and what the probe says of each size. */
	struct thp_query_opts q;
	struct thp_mapping_folios *folios; /* one per maps entry */
	struct thp_probe_info pi;
	bool pi_ok;
	/* The coverage the policy's sizes give: every size it can get, not only the PMD one. */
	uint64_t policy_bytes, policy_alignable;
	bool sized; /* folio sizes known and some size a huge policy can get */
};

struct totals {
	uint64_t mappings, huge, nohuge, eligible, anon_huge, rss;
};

static bool listed(const struct status_opts *o, const struct thp_mapping_state *m)
{
	if (o->anon_only && !m->anonymous)
		return false;
	if (o->huge_only && !m->advised_huge && m->anon_huge_bytes == 0)
		return false;
	return true;
}

static void add_total(struct totals *t, const struct thp_mapping_state *m)
{
	t->mappings++;
	t->huge += m->advised_huge;
	t->nohuge += m->advised_nohuge;
	t->eligible += m->thp_eligible;
	t->anon_huge += m->anon_huge_bytes;
	t->rss += m->rss_bytes;
}

static const char *advice_word(const struct thp_mapping_state *m)
{
	if (m->advised_huge && m->advised_nohuge)
		return "huge+nohuge";
	return m->advised_huge ? "huge" : m->advised_nohuge ? "nohuge" : "-";
}

/*
 * Characters a terminal does not show as themselves: C0 and C1 controls,
 * DEL, and the bidirectional formatting marks that reorder what is shown.
 */
static bool invisible(uint32_t cp)
{
	return cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp == 0x200e || cp == 0x200f ||
	       (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069);
}

/*
 * A mapping name is chosen by the target process (a file name): shown as
 * data, never as terminal input.  Invisible characters and bytes that are
 * not UTF-8 come out as \xNN per byte, and '\' as "\\".
 */
static void print_name(const char *name)
{
	const unsigned char *p = (const unsigned char *)name;

	if (!*p) {
		fputs("[anon]", stdout);
		return;
	}
	while (*p) {
		uint32_t cp = 0;
		size_t n = utf8_char(p, &cp);

		if (n == 0 || invisible(cp)) {
			for (size_t i = 0; i < (n ? n : 1); i++)
				printf("\\x%02x", p[i]);
		} else if (*p == '\\') {
			fputs("\\\\", stdout);
		} else {
			fwrite(p, 1, n, stdout);
		}
		p += n ? n : 1;
	}
}

static const char *persistent_text(const struct status_data *d)
{
	if (d->def.backend_used == THP_BACKEND_PRELOAD)
		return "by preload";
	return d->def.persistent ? "yes" : "no";
}

/* Percent of @part in @whole, 0 for an empty whole. */
static unsigned int percent(uint64_t part, uint64_t whole)
{
	return whole ? (unsigned int)(part * 100 / whole) : 0;
}

/*
 * A HUGE policy whose effect falls far short: under half of what could be
 * huge is, and at least one huge page's worth could be.
 */
#define LOW_COVERAGE_PERCENT 50
/* Huge bytes and what could be huge: by the policy's sizes where known, else AnonHugePages. */
static uint64_t cov_huge(const struct status_data *d)
{
	return d->sized ? d->policy_bytes : d->anon_huge;
}

static uint64_t cov_alignable(const struct status_data *d)
{
	return d->sized ? d->policy_alignable : d->alignable;
}

static bool low_coverage(const struct status_data *d)
{
	return d->policy_known && d->def.policy == THP_POLICY_HUGE &&
	       cov_alignable(d) >= 2 * 1024 * 1024 &&
	       percent(cov_huge(d), cov_alignable(d)) < LOW_COVERAGE_PERCENT;
}

static const char *source_name(uint32_t source)
{
	return source == THP_FOLIO_SOURCE_KPAGEFLAGS ? "pagemap+kpageflags" : "none";
}

/* Does a huge policy get folios of @size here (thp_probe())? */
static bool size_policy(const struct status_data *d, uint64_t size)
{
	for (uint32_t i = 0; d->pi_ok && i < d->pi.nr_sizes && i < THP_PROBE_MAX_SIZES; i++)
		if (d->pi.sizes[i].size == size)
			return d->pi.sizes[i].huge_policy;
	return false;
}

static void print_sizes(const struct status_data *d)
{
	char label[32];

	if (d->q.folio_source != THP_FOLIO_SOURCE_KPAGEFLAGS) {
		printf("folio sizes: source none (page frame numbers need CAP_SYS_ADMIN and "
		       "/proc/kpageflags): only PMD-mapped memory (AnonHugePages) is counted\n");
		return;
	}
	printf("folio sizes: source %s (anonymous memory; * = a huge policy gets this size here)\n",
	       source_name(d->q.folio_source));
	printf("  base %llu kB", (unsigned long long)(d->q.anon_base_bytes >> 10));
	for (uint32_t i = 0; i < d->q.nr_sizes; i++) {
		bool pol = size_policy(d, d->q.sizes[i].size);

		if (!d->q.sizes[i].bytes && !pol)
			continue;
		thpd_size_label(d->q.sizes[i].size, label, sizeof(label));
		printf(", %s%s %llu kB", label, pol ? "*" : "",
		       (unsigned long long)(d->q.sizes[i].bytes >> 10));
	}
	if (d->q.anon_other_bytes)
		printf(", other %llu kB", (unsigned long long)(d->q.anon_other_bytes >> 10));
	putchar('\n');
}

static void print_coverage(const struct status_data *d)
{
	if (d->sized)
		printf("coverage: %llu kB of %llu kB anonymous memory in folios of the sizes a huge "
		       "policy gets (%u%%); %llu kB could be (%u%% of that is); "
		       "PMD-mapped %llu kB\n",
		       (unsigned long long)(d->policy_bytes >> 10), (unsigned long long)(d->anon >> 10),
		       percent(d->policy_bytes, d->anon),
		       (unsigned long long)(d->policy_alignable >> 10),
		       percent(d->policy_bytes, d->policy_alignable),
		       (unsigned long long)(d->anon_huge >> 10));
	else
		printf("coverage: %llu kB of %llu kB anonymous memory in huge pages (%u%%); "
		       "%llu kB could be (%u%% of that is)\n",
		       (unsigned long long)(d->anon_huge >> 10), (unsigned long long)(d->anon >> 10),
		       percent(d->anon_huge, d->anon), (unsigned long long)(d->alignable >> 10),
		       percent(d->anon_huge, d->alignable));
	print_sizes(d);
	if (low_coverage(d))
		printf("warning: the policy is huge, but %s of the memory that could be huge is "
		       "(\"thpctl collapse -p %d\" collapses it)\n",
		       cov_huge(d) ? "less than half" : "none", (int)d->pid);
}

/* The sizes that get a column: those that hold memory in the process. */
static bool size_column(const struct status_data *d, uint32_t i)
{
	return d->q.folio_source == THP_FOLIO_SOURCE_KPAGEFLAGS && d->q.sizes[i].bytes;
}

static void print_text(const struct status_opts *o, const struct status_data *d)
{
	struct totals t = { 0 };

	printf("pid: %d%s\n", (int)d->pid, d->self ? " (thpctl itself)" : "");
	if (!d->policy_known) {
		printf("policy: system or nohuge (not distinguishable from outside the process)\n");
	} else {
		printf("policy: %s%s\n", thp_policy_name(d->def.policy),
		       !low_coverage(d) ? "" : d->anon_huge ? " (intended: low coverage, see below)"
							    : " (intended: nothing is huge)");
		if (d->def.backend_used == THP_BACKEND_AUTO)
			printf("mechanism: none (the system-wide THP mode applies)\n");
		else
			printf("mechanism: %s\n", thp_backend_name(d->def.backend_used));
		printf("persistent: %s\n", persistent_text(d));
	}
	print_coverage(d);
	printf("\n%-33s %10s %-6s %-8s %11s %10s ", "RANGE", "SIZE_KB", "ADVICE",
	       "ELIGIBLE", "ANONHUGE_KB", "RSS_KB");
	for (uint32_t i = 0; i < d->q.nr_sizes; i++) {
		char label[32];

		if (!size_column(d, i))
			continue;
		thpd_size_label(d->q.sizes[i].size, label, sizeof(label) - 3);
		strcat(label, "_KB");
		printf("%10s ", label);
	}
	printf("NAME\n");
	for (size_t i = 0; i < d->nmaps; i++) {
		const struct thp_mapping_state *m = &d->maps[i];
		char range[64];

		if (!listed(o, m))
			continue;
		add_total(&t, m);
		snprintf(range, sizeof(range), "0x%llx-0x%llx", (unsigned long long)m->start,
			 (unsigned long long)m->end);
		printf("%-33s %10llu %-6s %-8s %11llu %10llu ", range,
		       (unsigned long long)((m->end - m->start) >> 10), advice_word(m),
		       m->thp_eligible ? "yes" : "no",
		       (unsigned long long)(m->anon_huge_bytes >> 10),
		       (unsigned long long)(m->rss_bytes >> 10));
		for (uint32_t k = 0; k < d->q.nr_sizes; k++)
			if (size_column(d, k))
				printf("%10llu ", (unsigned long long)(d->folios[i].bytes[k] >> 10));
		print_name(m->name);
		putchar('\n');
	}
	printf("\ntotals: mappings=%llu advised_huge=%llu advised_nohuge=%llu eligible=%llu "
	       "anon_huge_kb=%llu rss_kb=%llu%s\n",
	       (unsigned long long)t.mappings, (unsigned long long)t.huge,
	       (unsigned long long)t.nohuge, (unsigned long long)t.eligible,
	       (unsigned long long)(t.anon_huge >> 10), (unsigned long long)(t.rss >> 10),
	       o->anon_only || o->huge_only ? " (listed mappings only)" : "");
}

static int print_json(const struct status_opts *o, const struct status_data *d)
{
	struct totals t = { 0 };
	struct json j;

	json_begin_document(&j, stdout, "status");
	json_i64(&j, "pid", d->pid);
	json_bool(&j, "self", d->self);

	json_begin_object(&j, "default");
	if (d->policy_known) {
		json_string(&j, "policy", thp_policy_name(d->def.policy));
		json_begin_array(&j, "policy_candidates");
		json_string(&j, NULL, thp_policy_name(d->def.policy));
		json_end_array(&j);
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
		json_null(&j, "policy");
		json_begin_array(&j, "policy_candidates");
		json_string(&j, NULL, thp_policy_name(THP_POLICY_SYSTEM));
		json_string(&j, NULL, thp_policy_name(THP_POLICY_NOHUGE));
		json_end_array(&j);
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
	json_u64(&j, "huge_percent_of_anon", percent(d->anon_huge, d->anon));
	json_u64(&j, "huge_percent_of_alignable", percent(d->anon_huge, d->alignable));
	json_bool(&j, "low", low_coverage(d));
	json_string(&j, "folio_source", source_name(d->q.folio_source));
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
		json_bool(&j, "huge_policy", size_policy(d, d->q.sizes[i].size));
		json_end_object(&j);
	}
	json_end_array(&j);
	if (d->sized) {
		json_u64(&j, "policy_sizes_bytes", d->policy_bytes);
		json_u64(&j, "policy_alignable_bytes", d->policy_alignable);
		json_u64(&j, "policy_percent_of_alignable",
			 percent(d->policy_bytes, d->policy_alignable));
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

		if (!listed(o, m))
			continue;
		add_total(&t, m);
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

/* "thpctl: ..." for a library failure; the target's exit gets its own words. */
static void lib_error(const char *what, const struct status_data *d, int err)
{
	if (err == -ESRCH && !d->self)
		thpctl_error("status: process %d exited", (int)d->pid);
	else if (*thp_strerror_detail())
		thpctl_error("status: %s: %s (%s)", what, thp_strerror(err), thp_strerror_detail());
	else
		thpctl_error("status: %s: %s", what, thp_strerror(err));
}

static int gather(int pidfd, struct status_data *d)
{
	size_t cap = 0;
	int r;

	d->def.sz = sizeof(d->def);
	d->def.pidfd = pidfd;
	r = thp_get_default(&d->def);
	if (r == -EOPNOTSUPP && !d->self) {
		/* Not a failure: the kernel does not show this from outside. */
		d->policy_known = false;
		snprintf(d->detail, sizeof(d->detail), "%s", thp_strerror_detail());
	} else if (r < 0) {
		lib_error("cannot read the default policy", d, r);
		return -1;
	} else {
		d->policy_known = true;
	}

	d->pi.sz = sizeof(d->pi);
	d->pi_ok = thp_probe(&d->pi) == 0;
	/* The address space may grow between calls: retry with the new count. */
	for (int tries = 0; tries < 16; tries++) {
		THP_OPTS(thp_query_opts, q, .pidfd = pidfd, .flags = THP_QUERY_F_FOLIO_SIZES,
			 .states = d->maps, .states_cap = cap, .folios = d->folios);
		struct thp_mapping_state *n;
		struct thp_mapping_folios *f;

		r = thp_query(&q);
		if (r < 0) {
			lib_error("cannot read the mappings", d, r);
			return -1;
		}
		if (q.states_needed <= cap) {
			d->nmaps = (size_t)r;
			d->anon = q.anon_bytes;
			d->anon_huge = q.anon_huge_bytes;
			d->alignable = q.anon_alignable_bytes;
			d->q = q;
			d->policy_alignable = q.anon_sized_alignable_bytes;
			for (uint32_t i = 0; i < q.nr_sizes; i++)
				if (size_policy(d, q.sizes[i].size))
					d->policy_bytes += q.sizes[i].bytes;
			/* NEVER gets no size: its coverage is the plain AnonHugePages one. */
			d->sized = q.folio_source == THP_FOLIO_SOURCE_KPAGEFLAGS &&
				   q.anon_sized_alignable_bytes &&
				   !(d->policy_known && d->def.policy == THP_POLICY_NEVER);
			return 0;
		}
		cap = q.states_needed + 16;
		n = realloc(d->maps, cap * sizeof(*n));
		if (!n) {
			thpctl_error("status: out of memory");
			return -1;
		}
		d->maps = n;
		f = realloc(d->folios, cap * sizeof(*f));
		if (!f) {
			thpctl_error("status: out of memory");
			return -1;
		}
		d->folios = f;
	}
	thpctl_error("status: the mappings of process %d keep changing", (int)d->pid);
	return -1;
}

int thpctl_cmd_status(int argc, char **argv)
{
	enum { OPT_JSON = 256, OPT_ANON, OPT_HUGE, OPT_DAEMON, OPT_SOCKET };
	static const struct option longopts[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "anon", no_argument, NULL, OPT_ANON },
		{ "huge", no_argument, NULL, OPT_HUGE },
		{ "daemon", no_argument, NULL, OPT_DAEMON },
		{ "socket", required_argument, NULL, OPT_SOCKET },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct status_opts o = { 0 };
	struct status_data d;
	int opt, pidfd = THP_SELF, status = THPCTL_EXIT_FAILURE;
	unsigned long long seen = 0;
	const char *why, *socket_path = NULL;
	bool daemon = false;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":p:h", longopts, NULL)) != -1) {
		if (thpctl_option_once("status", longopts, opt, &seen))
			return THPCTL_EXIT_USAGE;
		switch (opt) {
		case 'p':
			if (thpctl_parse_pid(optarg, &o.pid, &why))
				return thpctl_usage_error("status", "invalid PID '%s': %s", optarg, why);
			break;
		case OPT_JSON:
			o.json = true;
			break;
		case OPT_ANON:
			o.anon_only = true;
			break;
		case OPT_HUGE:
			o.huge_only = true;
			break;
		case OPT_DAEMON:
			daemon = true;
			break;
		case OPT_SOCKET:
			socket_path = optarg;
			break;
		case 'h':
			thpctl_usage("status", stdout);
			return thpctl_finish_output(THPCTL_EXIT_OK);
		default:
			return thpctl_bad_option("status", argv, opt);
		}
	}
	if (optind < argc)
		return thpctl_usage_error("status", "unexpected argument '%s'", argv[optind]);
	if (socket_path && !daemon)
		return thpctl_usage_error("status", "--socket goes with --daemon");
	if (daemon && (o.pid || o.anon_only || o.huge_only))
		return thpctl_usage_error("status", "--daemon takes no -p, --anon or --huge");
	if (daemon)
		return thpctl_finish_output(thpctl_status_daemon(socket_path, o.json));

	memset(&d, 0, sizeof(d));
	d.pid = o.pid;
	pidfd = thpctl_open_target(&d.pid, &d.self);
	if (pidfd < 0)
		return THPCTL_EXIT_FAILURE;
	if (gather(pidfd, &d) != 0)
		goto out;
	if (o.json) {
		status = print_json(&o, &d) ? THPCTL_EXIT_FAILURE : THPCTL_EXIT_OK;
	} else {
		print_text(&o, &d);
		status = THPCTL_EXIT_OK;
	}
	status = thpctl_finish_output(status);
out:
	free(d.maps);
	free(d.folios);
	thpctl_close_target(pidfd);
	return status;
}
