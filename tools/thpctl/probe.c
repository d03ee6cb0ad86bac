// SPDX-License-Identifier: LGPL-2.1-or-later
/* thpctl probe: what this kernel offers, each backend with the reason. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <thp/thp.h>

#include "cli.h"
#include "json.h"
#include "thp_config.h"
#include "thpctl.h"

#define SYSFS_THP "/sys/kernel/mm/transparent_hugepage/"

/* One sysfs THP file: the whole line and the [selected] word. */
struct sysfs_choice {
	bool ok;
	char raw[256];
	char selected[64];
};

static void read_choice(const char *path, struct sysfs_choice *c)
{
	FILE *f = fopen(path, "re");
	char *open, *close;

	memset(c, 0, sizeof(*c));
	if (!f)
		return;
	if (fgets(c->raw, sizeof(c->raw), f)) {
		c->raw[strcspn(c->raw, "\n")] = '\0';
		c->ok = true;
		open = strchr(c->raw, '[');
		close = open ? strchr(open, ']') : NULL;
		if (open && close && (size_t)(close - open - 1) < sizeof(c->selected))
			memcpy(c->selected, open + 1, (size_t)(close - open - 1));
	}
	fclose(f);
}

struct backend_line {
	unsigned int id;
	bool available;
	char reason[256];
	const char *path; /* preload: the library found, or NULL */
};

/*
 * Every reason goes through vsnprintf(): gcc turns snprintf() of a constant
 * string into overlapping 16-byte stores of .rodata pieces, which leaves
 * fragments such as "throug" in the binary for lintian's spelling check and
 * for anyone running strings(1) on it.
 */
__attribute__((format(printf, 2, 3))) static void set_reason(struct backend_line *l,
							     const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(l->reason, sizeof(l->reason), fmt, ap);
	va_end(ap);
}

/* Ask the library itself why a range backend cannot run: zero ranges change nothing. */
static bool range_backend_reason(unsigned int id, char *why, size_t len)
{
	THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_HUGE, .backend = id);
	int r = thp_apply_ranges(NULL, 0, &o);

	if (r >= 0)
		return true;
	snprintf(why, len, "%s", *thp_strerror_detail() ? thp_strerror_detail() : thp_strerror(r));
	return false;
}

static void pmadv_reason(const struct thp_probe_info *pi, struct backend_line *b)
{
	static const char *const names[] = {
		"PMADV_SKIP_ERRORS",
		"PMADV_NO_ERROR_ON_UNMAPPED",
		"PMADV_SET_FORK_EXEC_DEFAULT",
		"PMADV_ENTIRE_ADDRESS_SPACE",
	};
	const bool known[] = {
		pi->pmadv_skip_errors,
		pi->pmadv_no_error_on_unmapped,
		pi->pmadv_set_default,
		pi->pmadv_entire_address_space,
	};
	size_t n, nknown = 0;

	if (b->available) {
		set_reason(b, "RFC PMADV_* flags accepted; another process: collapse only");
		return;
	}
	for (size_t i = 0; i < 4; i++)
		nknown += known[i];
	if (nknown == 0) {
		set_reason(b, "kernel rejects PMADV_* flags: mainline");
		return;
	}
	/* Some flags but not the set the backend needs: name the ones there. */
	n = (size_t)snprintf(b->reason, sizeof(b->reason), "kernel accepts only");
	for (size_t i = 0; i < 4 && n < sizeof(b->reason); i++)
		if (known[i])
			n += (size_t)snprintf(b->reason + n, sizeof(b->reason) - n, " %s",
					      names[i]);
}

static void fill_backends(const struct thp_probe_info *pi, struct backend_line *b)
{
	for (unsigned int id = 1; id < THP_BACKEND_COUNT; id++) {
		struct backend_line *l = &b[id - 1];
		const char *why = NULL;

		memset(l, 0, sizeof(*l));
		l->id = id;
		l->available = pi->backends & (1u << id);
		switch (id) {
		case THP_BACKEND_PMADV:
			pmadv_reason(pi, l);
			break;
		case THP_BACKEND_PROCESS_MADVISE:
			if (l->available)
				set_reason(l, "mainline vector call; another process: collapse only");
			else if (range_backend_reason(id, l->reason, sizeof(l->reason)))
				set_reason(l, "not reported by thp_probe()");
			break;
		case THP_BACKEND_MADVISE:
			set_reason(l, "madvise() loop; own process only");
			break;
		case THP_BACKEND_PRCTL_POLICY:
#if THP_RFC_PRCTL_SET > 0
			l->available = true;
			set_reason(l, "declared by this build: PR_SET_THP_POLICY = %d (-Drfc_prctl_set)",
				   THP_RFC_PRCTL_SET);
#else
			set_reason(l, "RFC prctl not enabled in this build; see -Drfc_prctl_set");
#endif
			break;
		case THP_BACKEND_PRCTL_DISABLE:
			if (!l->available)
				set_reason(l, "PR_SET_THP_DISABLE refused by the kernel");
			else if (pi->thp_disable_except_advised)
				set_reason(l, "PR_SET_THP_DISABLE with PR_THP_DISABLE_EXCEPT_ADVISED: "
					      "persistent never and nohuge");
			else
				set_reason(l, "PR_SET_THP_DISABLE without PR_THP_DISABLE_EXCEPT_ADVISED "
					      "(before Linux 6.18): persistent never only");
			break;
		case THP_BACKEND_EXISTING_ONLY:
			set_reason(l, "advises existing mappings only: not persistent");
			break;
		case THP_BACKEND_PRELOAD:
			l->path = thpctl_preload_path(&why);
			l->available = l->path && access(l->path, R_OK) == 0;
			if (!l->path)
				set_reason(l, "%s", why);
			else if (l->available)
				set_reason(l, "%s for \"thpctl run\"; dynamically linked programs only",
					   l->path);
			else
				set_reason(l, "libthp-preload.so not found at %s (set THPCTL_PRELOAD)",
					   l->path);
			break;
		case THP_BACKEND_INJECT:
			set_reason(l, "opt-in only: another x86_64 process made to call madvise()/prctl() "
				      "itself through ptrace");
			break;
		default:
			set_reason(l, "unknown backend");
			break;
		}
	}
}

static const char *mode_name(unsigned int m)
{
	static const char *const names[] = { "always", "madvise", "never", "unknown", "inherit" };

	return m < 5 ? names[m] : "unknown";
}

static const char *yes_no(bool b)
{
	return b ? "yes" : "no";
}

static const char *shmem_name(unsigned int m)
{
	static const char *const names[] = { "always", "within_size", "advise", "never",
					     "deny", "force", "inherit", "unknown" };

	return m < 8 ? names[m] : "unknown";
}

static const char *sizes_source_name(unsigned int s)
{
	static const char *const names[] = { "unknown", "pmd_only", "per_size" };

	return s < 3 ? names[s] : "unknown";
}

/* khugepaged/ files, in struct order. */
static const char *const khugepaged_names[] = {
	"pages_to_scan", "scan_sleep_millisecs", "alloc_sleep_millisecs", "max_ptes_none",
	"max_ptes_swap", "max_ptes_shared", "defrag",
};

static uint32_t khugepaged_value(const struct thp_probe_info *pi, size_t i)
{
	const uint32_t v[] = {
		pi->khugepaged_pages_to_scan, pi->khugepaged_scan_sleep_millisecs,
		pi->khugepaged_alloc_sleep_millisecs, pi->khugepaged_max_ptes_none,
		pi->khugepaged_max_ptes_swap, pi->khugepaged_max_ptes_shared,
		pi->khugepaged_defrag,
	};

	return v[i];
}

static unsigned int nr_listed(const struct thp_probe_info *pi)
{
	return pi->nr_sizes < THP_PROBE_MAX_SIZES ? pi->nr_sizes : THP_PROBE_MAX_SIZES;
}

/* "64 KiB", "2 MiB": sizes are powers of two. */
static const char *size_str(uint64_t b, char *buf, size_t len)
{
	if (b >= (1u << 20) && b % (1u << 20) == 0)
		snprintf(buf, len, "%llu MiB", (unsigned long long)(b >> 20));
	else
		snprintf(buf, len, "%llu KiB", (unsigned long long)(b >> 10));
	return buf;
}

static void print_sizes_text(const struct thp_probe_info *pi)
{
	char sz[32];
	bool any = false;

	printf("\nfolio sizes: ");
	if (pi->sizes_source == THP_SIZES_PER_SIZE)
		printf("%u, per-size controls\n", pi->nr_sizes);
	else if (pi->sizes_source == THP_SIZES_PMD_ONLY)
		printf("per-size controls: none (PMD size only, top-level mode)\n");
	else
		printf("unknown (sysfs unreadable)\n");
	if (nr_listed(pi))
		printf("  %-10s %-9s %-9s %-13s %s\n", "size", "enabled", "mode", "shmem",
		       "huge policy");
	for (unsigned int i = 0; i < nr_listed(pi); i++) {
		const struct thp_size_info *si = &pi->sizes[i];

		printf("  %-10s %-9s %-9s %-13s %s\n", size_str(si->size, sz, sizeof(sz)),
		       si->enabled == THP_MODE_UNKNOWN ? "-" : mode_name(si->enabled),
		       mode_name(si->mode),
		       si->shmem_enabled == THP_SHMEM_UNKNOWN ? "-" : shmem_name(si->shmem_enabled),
		       yes_no(si->huge_policy));
	}
	printf("huge policy can get:");
	for (unsigned int i = 0; i < nr_listed(pi); i++) {
		if (pi->sizes[i].huge_policy) {
			printf("%s %s", any ? "," : "", size_str(pi->sizes[i].size, sz, sizeof(sz)));
			any = true;
		}
	}
	printf("%s\n", any ? "" : " none");
	printf("shmem enabled: %s\n", shmem_name(pi->shmem_mode));
	printf("khugepaged:");
	for (size_t i = 0; i < (sizeof(khugepaged_names) / sizeof(khugepaged_names[0])); i++) {
		uint32_t v = khugepaged_value(pi, i);

		if (v == THP_PROBE_UNKNOWN)
			printf(" %s=unknown", khugepaged_names[i]);
		else
			printf(" %s=%u", khugepaged_names[i], v);
	}
	printf("\n");
}

static void print_sizes_json(struct json *j, const struct thp_probe_info *pi)
{
	json_string(j, "sizes_source", sizes_source_name(pi->sizes_source));
	json_u64(j, "nr_sizes", pi->nr_sizes);
	json_begin_array(j, "sizes");
	for (unsigned int i = 0; i < nr_listed(pi); i++) {
		const struct thp_size_info *si = &pi->sizes[i];

		json_begin_object(j, NULL);
		json_u64(j, "size", si->size);
		json_string(j, "enabled",
			    si->enabled == THP_MODE_UNKNOWN ? NULL : mode_name(si->enabled));
		json_string(j, "mode", mode_name(si->mode));
		json_string(j, "shmem_enabled", si->shmem_enabled == THP_SHMEM_UNKNOWN ?
			    NULL : shmem_name(si->shmem_enabled));
		json_bool(j, "huge_policy", si->huge_policy);
		json_end_object(j);
	}
	json_end_array(j);
	json_begin_array(j, "huge_policy_sizes");
	for (unsigned int i = 0; i < nr_listed(pi); i++)
		if (pi->sizes[i].huge_policy)
			json_u64(j, NULL, pi->sizes[i].size);
	json_end_array(j);
	json_string(j, "shmem_enabled",
		    pi->shmem_mode == THP_SHMEM_UNKNOWN ? NULL : shmem_name(pi->shmem_mode));
	json_begin_object(j, "khugepaged");
	for (size_t i = 0; i < (sizeof(khugepaged_names) / sizeof(khugepaged_names[0])); i++) {
		uint32_t v = khugepaged_value(pi, i);

		if (v == THP_PROBE_UNKNOWN)
			json_null(j, khugepaged_names[i]);
		else
			json_u64(j, khugepaged_names[i], v);
	}
	json_end_object(j);
}

struct probe_data {
	struct thp_probe_info pi;
	struct sysfs_choice enabled, defrag;
	struct utsname uts;
	bool have_uts;
	struct backend_line backends[THP_BACKEND_COUNT - 1];
};

static void print_text(const struct probe_data *d)
{
	const struct thp_probe_info *pi = &d->pi;

	printf("libthp: %s\n", thp_version());
	if (d->have_uts)
		printf("kernel: %s %s\n", d->uts.sysname, d->uts.release);
	printf("thp enabled: %s", mode_name(pi->thp_mode));
	if (d->enabled.ok)
		printf(" (%s)", d->enabled.raw);
	printf("\nthp defrag: %s", d->defrag.ok && d->defrag.selected[0] ? d->defrag.selected
									 : "unknown");
	if (d->defrag.ok)
		printf(" (%s)", d->defrag.raw);
	printf("\npmd size: %llu", (unsigned long long)pi->pmd_size);
	if (pi->pmd_size >= 1024 * 1024 && pi->pmd_size % (1024 * 1024) == 0)
		printf(" (%llu MiB)", (unsigned long long)(pi->pmd_size >> 20));
	else if (pi->pmd_size == 0)
		printf(" (unknown)");
	printf("\n");
	print_sizes_text(pi);
	printf("\nbackends:\n");
	for (size_t i = 0; i < THP_BACKEND_COUNT - 1; i++) {
		const struct backend_line *b = &d->backends[i];

		printf("  %s: %s (%s)\n", thp_backend_name(b->id),
		       b->available ? "available" : "not available", b->reason);
	}
	printf("\nkernel features:\n");
	if (pi->pidfd_self)
		printf("  PIDFD_SELF: yes (%d)\n", pi->pidfd_self);
	else
		printf("  PIDFD_SELF: no\n");
	printf("  PROCMAP_QUERY: %s\n", yes_no(pi->procmap_query));
	printf("  MADV_COLLAPSE: %s\n", yes_no(pi->madvise_collapse));
	printf("  PR_THP_DISABLE_EXCEPT_ADVISED: %s\n", yes_no(pi->thp_disable_except_advised));
	printf("  process_madvise self MADV_HUGEPAGE: %s\n",
	       yes_no(pi->process_madvise_self_huge));
	printf("  PMADV_SKIP_ERRORS: %s\n", yes_no(pi->pmadv_skip_errors));
	printf("  PMADV_NO_ERROR_ON_UNMAPPED: %s\n", yes_no(pi->pmadv_no_error_on_unmapped));
	printf("  PMADV_SET_FORK_EXEC_DEFAULT: %s\n", yes_no(pi->pmadv_set_default));
	printf("  PMADV_ENTIRE_ADDRESS_SPACE: %s\n", yes_no(pi->pmadv_entire_address_space));
}

static void json_choice(struct json *j, const char *key, const char *raw_key,
			const struct sysfs_choice *c)
{
	json_string(j, key, c->ok && c->selected[0] ? c->selected : NULL);
	json_string(j, raw_key, c->ok ? c->raw : NULL);
}

static int print_json(const struct probe_data *d)
{
	const struct thp_probe_info *pi = &d->pi;
	struct json j;

	json_begin_document(&j, stdout, "probe");
	json_string(&j, "thpctl_version", THP_VERSION_STRING);
	json_string(&j, "libthp_version", thp_version());
	json_string(&j, "kernel_release", d->have_uts ? d->uts.release : NULL);
	json_string(&j, "thp_mode", mode_name(pi->thp_mode));
	json_choice(&j, "thp_enabled", "thp_enabled_raw", &d->enabled);
	json_choice(&j, "thp_defrag", "thp_defrag_raw", &d->defrag);
	json_u64(&j, "pmd_size", pi->pmd_size);
	print_sizes_json(&j, pi);
	json_begin_array(&j, "backends");
	for (size_t i = 0; i < THP_BACKEND_COUNT - 1; i++) {
		const struct backend_line *b = &d->backends[i];

		json_begin_object(&j, NULL);
		json_string(&j, "name", thp_backend_name(b->id));
		json_u64(&j, "id", b->id);
		json_bool(&j, "available", b->available);
		json_string(&j, "reason", b->reason);
		if (b->id == THP_BACKEND_PRELOAD)
			json_string(&j, "path", b->path);
		json_end_object(&j);
	}
	json_end_array(&j);
	json_begin_object(&j, "features");
	json_i64(&j, "pidfd_self", pi->pidfd_self);
	json_bool(&j, "procmap_query", pi->procmap_query);
	json_bool(&j, "madvise_collapse", pi->madvise_collapse);
	json_bool(&j, "thp_disable_except_advised", pi->thp_disable_except_advised);
	json_bool(&j, "process_madvise_self_huge", pi->process_madvise_self_huge);
	json_bool(&j, "pmadv_skip_errors", pi->pmadv_skip_errors);
	json_bool(&j, "pmadv_no_error_on_unmapped", pi->pmadv_no_error_on_unmapped);
	json_bool(&j, "pmadv_set_fork_exec_default", pi->pmadv_set_default);
	json_bool(&j, "pmadv_entire_address_space", pi->pmadv_entire_address_space);
	json_end_object(&j);
	json_end_object(&j);
	return json_finish(&j);
}

int thpctl_cmd_probe(int argc, char **argv)
{
	enum { OPT_JSON = 256 };
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, OPT_JSON },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct probe_data d;
	bool json = false;
	int opt, r;

	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (opt) {
		case OPT_JSON:
			json = true;
			break;
		case 'h':
			fputs(thpctl_probe_command.usage, stdout);
			return thpctl_finish_output(THPCTL_EXIT_OK);
		default:
			return thpctl_bad_option("probe", argv, opt);
		}
	}
	if (optind < argc)
		return thpctl_usage_error("probe", "unexpected argument '%s'", argv[optind]);

	memset(&d, 0, sizeof(d));
	d.pi.sz = sizeof(d.pi);
	r = thp_probe(&d.pi);
	if (r < 0) {
		thpctl_error("probe: %s", thp_strerror(r));
		return THPCTL_EXIT_FAILURE;
	}
	read_choice(SYSFS_THP "enabled", &d.enabled);
	read_choice(SYSFS_THP "defrag", &d.defrag);
	d.have_uts = uname(&d.uts) == 0;
	fill_backends(&d.pi, d.backends);
	if (json) {
		if (print_json(&d))
			return thpctl_finish_output(THPCTL_EXIT_FAILURE);
	} else {
		print_text(&d);
	}
	return thpctl_finish_output(THPCTL_EXIT_OK);
}

/* Its row in thpctl's command list (main.c) and the text --help prints. */
const struct thpctl_command thpctl_probe_command = {
	.name = "probe",
	.fn = thpctl_cmd_probe,
	.summary = "show what this kernel offers for THP control",
	.usage =
		"Usage: thpctl probe [--json]\n"
		"\n"
		"Show each libthp backend (available or not, and why), the system-wide THP\n"
		"mode and defrag setting, the PMD huge page size, and the kernel features\n"
		"libthp looks for (PIDFD_SELF, PROCMAP_QUERY, MADV_COLLAPSE,\n"
		"PR_THP_DISABLE_EXCEPT_ADVISED, the RFC PMADV_* flags).\n"
		"\n"
		"Options:\n"
		"  --json        machine-readable output (thpctl-json.md in libthp-doc)\n"
		"  -h, --help    show this help\n",
};
