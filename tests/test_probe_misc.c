// SPDX-License-Identifier: LGPL-2.1-or-later
/* thp_probe() on this host, names, messages, version, thp_query(), report lines. */
#define _GNU_SOURCE
#include <check.h>
#include <dirent.h>
#include <stddef.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <thp/thp.h>

#include "helpers.h"

#define U(p) ((uint64_t)(uintptr_t)(p))

START_TEST(probe_host)
{
	struct thp_probe_info pi;

	memset(&pi, 0xee, sizeof(pi));
	pi.sz = sizeof(pi);
	ck_assert_int_eq(thp_probe(&pi), 0);
	ck_assert_uint_eq(pi.sz, sizeof(pi));
	if (expect_process_madvise())
		ck_assert_msg(pi.backends & (1u << THP_BACKEND_PROCESS_MADVISE),
			      "process_madvise backend not reported (backends 0x%x)", pi.backends);
	else
		ck_assert_msg(!(pi.backends & (1u << THP_BACKEND_PROCESS_MADVISE)),
			      "process_madvise backend reported, but this environment has no "
			      "process_madvise() (backends 0x%x)", pi.backends);
	ck_assert_msg(pi.backends & (1u << THP_BACKEND_MADVISE),
		      "madvise backend not reported (backends 0x%x)", pi.backends);
	ck_assert_msg(!(pi.backends & (1u << THP_BACKEND_PMADV)),
		      "PMADV reported on a mainline kernel (backends 0x%x)", pi.backends);
	ck_assert_msg(!(pi.backends & (1u << THP_BACKEND_AUTO)), "AUTO is not a backend bit");
	ck_assert_msg(!(pi.backends & ~((1u << THP_BACKEND_COUNT) - 1)),
		      "unknown backend bits 0x%x", pi.backends);
	ck_assert_uint_eq(pi.pmd_size, 2097152);
	ck_assert_msg(pi.procmap_query, "PROCMAP_QUERY not detected");
	if (expect_pidfd_self()) {
		ck_assert_msg(pi.pidfd_self != 0, "PIDFD_SELF not detected");
		ck_assert_msg(pi.pidfd_self == -10000 || pi.pidfd_self == -10001,
			      "pidfd_self %d", pi.pidfd_self);
	} else {
		ck_assert_msg(pi.pidfd_self == 0, "pidfd_self %d, but this environment has no "
			      "PIDFD_SELF", pi.pidfd_self);
	}
	ck_assert_msg(!pi.pmadv_skip_errors && !pi.pmadv_no_error_on_unmapped &&
		      !pi.pmadv_set_default && !pi.pmadv_entire_address_space,
		      "RFC PMADV flags reported on mainline");
	ck_assert_msg(pi.madvise_collapse, "MADV_COLLAPSE not detected");
	if (expect_process_madvise())
		ck_assert_msg(pi.process_madvise_self_huge,
			      "process_madvise(self, MADV_HUGEPAGE) not detected on 6.18");
	else
		ck_assert_msg(!pi.process_madvise_self_huge,
			      "process_madvise(self, MADV_HUGEPAGE) reported without "
			      "process_madvise()");
	ck_assert_msg(pi.thp_disable_except_advised,
		      "PR_THP_DISABLE_EXCEPT_ADVISED not detected on 6.18");
	ck_assert_uint_eq(pi.thp_mode, sysfs_thp_mode());
	if (sysfs_thp_mode() == 1)
		ck_assert_uint_eq(pi.thp_mode, THP_MODE_MADVISE);
	ck_assert_uint_le(pi.thp_mode, THP_MODE_UNKNOWN);
}
END_TEST

/* The VER0 struct size works and nothing is written past it. */
START_TEST(probe_ver0)
{
	_Alignas(8) unsigned char buf[64];
	uint64_t sz = THP_PROBE_INFO_SIZE_VER0, pmd;

	memset(buf, 0xcc, sizeof(buf));
	memset(buf, 0, THP_PROBE_INFO_SIZE_VER0);
	memcpy(buf, &sz, sizeof(sz));
	ck_assert_int_eq(thp_probe((struct thp_probe_info *)(void *)buf), 0);
	for (size_t i = THP_PROBE_INFO_SIZE_VER0; i < sizeof(buf); i++)
		ck_assert_msg(buf[i] == 0xcc, "probe wrote byte %zu past sz", i);
	memcpy(&pmd, buf + offsetof(struct thp_probe_info, pmd_size), sizeof(pmd));
	ck_assert_uint_eq(pmd, 2097152);
}
END_TEST

/* What the test reads itself from sysfs, to set beside thp_probe()'s answer. */
struct sysfs_view {
	unsigned int nr;
	uint64_t size[32];
	char enabled[32][16];
	char shmem[32][16];
	char top[16], defrag[16], shmem_top[16];
	long khugepaged[7];
};

static const char *const khugepaged_files[7] = {
	"pages_to_scan", "scan_sleep_millisecs", "alloc_sleep_millisecs", "max_ptes_none",
	"max_ptes_swap", "max_ptes_shared", "defrag",
};

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Listed with readdir(), not by trying sizes as the library does. */
static void sysfs_view_read(struct sysfs_view *v)
{
	const char *base = "/sys/kernel/mm/transparent_hugepage";
	char path[256], buf[64];
	DIR *d = opendir(base);
	struct dirent *e;
	unsigned long long kb;

	memset(v, 0, sizeof(*v));
	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)) != NULL) {
		if (sscanf(e->d_name, "hugepages-%llukB", &kb) == 1) {
			ck_assert_uint_lt(v->nr, 32);
			v->size[v->nr++] = (uint64_t)kb << 10;
		}
	}
	closedir(d);
	qsort(v->size, v->nr, sizeof(v->size[0]), cmp_u64);
	for (unsigned int i = 0; i < v->nr; i++) {
		snprintf(path, sizeof(path), "%s/hugepages-%llukB/enabled", base,
			 (unsigned long long)(v->size[i] >> 10));
		if (!sysfs_bracketed(path, v->enabled[i], sizeof(v->enabled[i])))
			v->enabled[i][0] = 0;
		snprintf(path, sizeof(path), "%s/hugepages-%llukB/shmem_enabled", base,
			 (unsigned long long)(v->size[i] >> 10));
		if (!sysfs_bracketed(path, v->shmem[i], sizeof(v->shmem[i])))
			v->shmem[i][0] = 0;
	}
	snprintf(path, sizeof(path), "%s/enabled", base);
	ck_assert(sysfs_bracketed(path, v->top, sizeof(v->top)));
	snprintf(path, sizeof(path), "%s/defrag", base);
	ck_assert(sysfs_bracketed(path, v->defrag, sizeof(v->defrag)));
	snprintf(path, sizeof(path), "%s/shmem_enabled", base);
	ck_assert(sysfs_bracketed(path, v->shmem_top, sizeof(v->shmem_top)));
	for (unsigned int i = 0; i < 7; i++) {
		snprintf(path, sizeof(path), "%s/khugepaged/%s", base, khugepaged_files[i]);
		v->khugepaged[i] = read_file(path, buf, sizeof(buf)) > 0 ? strtol(buf, NULL, 10) : -1;
	}
}

static unsigned int mode_of(const char *w)
{
	static const char *const names[] = { "always", "madvise", "never", "?", "inherit" };

	for (unsigned int i = 0; i < 5; i++)
		if (!strcmp(w, names[i]))
			return i;
	return THP_MODE_UNKNOWN;
}

static unsigned int shmem_of(const char *w)
{
	static const char *const names[] = { "always", "within_size", "advise", "never",
					     "deny", "force", "inherit" };

	for (unsigned int i = 0; i < 7; i++)
		if (!strcmp(w, names[i]))
			return i;
	return THP_SHMEM_UNKNOWN;
}

/*
 * Every size of the 6.18 host, its modes with "inherit" resolved, and the
 * other settings, as the test reads them.  Another session's test may
 * switch the top-level mode meanwhile: a probe between two equal reads
 * counts, up to five tries.
 */
START_TEST(probe_sizes_match_sysfs)
{
	static const char *const defrags[] = { "always", "defer", "defer+madvise", "madvise",
					       "never" };
	struct sysfs_view a, b;
	struct thp_probe_info pi;
	int tries = 0;

	do {
		sysfs_view_read(&a);
		memset(&pi, 0xee, sizeof(pi));
		pi.sz = sizeof(pi);
		ck_assert_int_eq(thp_probe(&pi), 0);
		sysfs_view_read(&b);
	} while (memcmp(&a, &b, sizeof(a)) && ++tries < 5);
	ck_assert_msg(tries < 5, "sysfs kept changing under the test");
	ck_assert_msg(a.nr > 0, "6.18 has hugepages-<size>kB directories");
	ck_assert_uint_eq(pi.sizes_source, THP_SIZES_PER_SIZE);
	ck_assert_uint_eq(pi.nr_sizes, a.nr);
	ck_assert_uint_eq(pi.thp_mode, mode_of(a.top));
	ck_assert_uint_lt(pi.defrag, 5);
	ck_assert_str_eq(defrags[pi.defrag], a.defrag);
	ck_assert_uint_eq(pi.shmem_mode, shmem_of(a.shmem_top));
	ck_assert_uint_eq(pi.khugepaged_pages_to_scan, (uint32_t)a.khugepaged[0]);
	ck_assert_uint_eq(pi.khugepaged_scan_sleep_millisecs, (uint32_t)a.khugepaged[1]);
	ck_assert_uint_eq(pi.khugepaged_alloc_sleep_millisecs, (uint32_t)a.khugepaged[2]);
	ck_assert_uint_eq(pi.khugepaged_max_ptes_none, (uint32_t)a.khugepaged[3]);
	ck_assert_uint_eq(pi.khugepaged_max_ptes_swap, (uint32_t)a.khugepaged[4]);
	ck_assert_uint_eq(pi.khugepaged_max_ptes_shared, (uint32_t)a.khugepaged[5]);
	ck_assert_uint_eq(pi.khugepaged_defrag, (uint32_t)a.khugepaged[6]);
	ck_assert_uint_eq(pi.reserved1, 0);
	for (unsigned int i = 0; i < a.nr && i < THP_PROBE_MAX_SIZES; i++) {
		const struct thp_size_info *si = &pi.sizes[i];
		unsigned int en = a.enabled[i][0] ? mode_of(a.enabled[i]) : THP_MODE_UNKNOWN;
		unsigned int want = en == THP_MODE_INHERIT ? mode_of(a.top) : en;

		ck_assert_uint_eq(si->size, a.size[i]);
		ck_assert_msg(si->enabled == en, "%llu kB: enabled %u, sysfs says '%s'",
			      (unsigned long long)(a.size[i] >> 10), si->enabled, a.enabled[i]);
		ck_assert_msg(si->mode == want, "%llu kB: mode %u, want %u",
			      (unsigned long long)(a.size[i] >> 10), si->mode, want);
		ck_assert_uint_eq(si->shmem_enabled,
				  a.shmem[i][0] ? shmem_of(a.shmem[i]) : THP_SHMEM_UNKNOWN);
		ck_assert_int_eq(si->huge_policy,
				 want == THP_MODE_ALWAYS || want == THP_MODE_MADVISE);
		ck_assert_uint_eq(si->reserved0, 0);
	}
	for (unsigned int i = a.nr; i < THP_PROBE_MAX_SIZES; i++)
		ck_assert_uint_eq(pi.sizes[i].size, 0);
	/* The PMD size is among them, and is the largest. */
	ck_assert_uint_eq(pi.sizes[a.nr - 1].size, pi.pmd_size);
}
END_TEST

START_TEST(names)
{
	ck_assert_str_eq(thp_backend_name(THP_BACKEND_PMADV), "pmadv");
	ck_assert_str_eq(thp_backend_name(THP_BACKEND_PROCESS_MADVISE), "process_madvise");
	ck_assert_str_eq(thp_backend_name(THP_BACKEND_MADVISE), "madvise");
	ck_assert_str_eq(thp_backend_name(99), "unknown");
	ck_assert_str_eq(thp_backend_name(THP_BACKEND_COUNT), "unknown");
	ck_assert_str_eq(thp_backend_name(0xffffffffu), "unknown");
	for (unsigned b = 0; b < THP_BACKEND_COUNT; b++) {
		const char *n = thp_backend_name(b);

		ck_assert_ptr_nonnull(n);
		ck_assert_msg(n[0] && strcmp(n, "unknown") != 0, "backend %u has no name", b);
		for (unsigned b2 = 0; b2 < b; b2++)
			ck_assert_msg(strcmp(n, thp_backend_name(b2)) != 0,
				      "backends %u and %u share name %s", b, b2, n);
	}
	ck_assert_str_eq(thp_policy_name(THP_POLICY_SYSTEM), "system");
	ck_assert_str_eq(thp_policy_name(THP_POLICY_HUGE), "huge");
	ck_assert_str_eq(thp_policy_name(THP_POLICY_NOHUGE), "nohuge");
	ck_assert_str_eq(thp_policy_name(THP_POLICY_NEVER), "never");
	ck_assert_str_eq(thp_policy_name(THP_POLICY_COUNT), "unknown");
	ck_assert_str_eq(thp_policy_name(12345), "unknown");
}
END_TEST

START_TEST(strerror_msgs)
{
	static const int errs[] = { EINVAL, E2BIG, EBADF, ESRCH, EOPNOTSUPP, ENOMEM,
				    EPERM, EAGAIN };

	for (size_t i = 0; i < sizeof(errs) / sizeof(errs[0]); i++) {
		const char *neg = thp_strerror(-errs[i]);
		const char *pos;

		ck_assert_ptr_nonnull(neg);
		ck_assert_msg(neg[0] != '\0', "empty message for %d", -errs[i]);
		pos = thp_strerror(errs[i]);
		ck_assert_ptr_nonnull(pos);
		ck_assert_msg(pos[0] != '\0', "empty message for %d", errs[i]);
		ck_assert_str_eq(neg, thp_strerror(-errs[i]));
	}
	ck_assert_msg(strcmp(thp_strerror(-EINVAL), thp_strerror(-E2BIG)) != 0,
		      "EINVAL and E2BIG give the same message");
	ck_assert_ptr_nonnull(thp_strerror(0));
	ck_assert_ptr_nonnull(thp_strerror(-99999));
	ck_assert_ptr_nonnull(thp_strerror(99999));
	ck_assert_ptr_nonnull(thp_strerror(-2147483647 - 1));
	ck_assert_ptr_nonnull(thp_strerror_detail());
}
END_TEST

START_TEST(version)
{
	char want[32];

	snprintf(want, sizeof(want), "%d.%d.%d", THP_VERSION_MAJOR, THP_VERSION_MINOR,
		 THP_VERSION_PATCH);
	ck_assert_ptr_nonnull(thp_version());
	ck_assert_str_eq(thp_version(), want);
}
END_TEST

START_TEST(query_mapping)
{
	char *m = map_aligned(8, 0);
	struct thp_range r = { U(m + 2 * MiB), 4 * MiB };
	THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_HUGE);
	struct thp_mapping_state st[4];
	struct smaps_info si;
	int ret;

	ck_assert_int_eq(thp_apply_ranges(&r, 1, &o), 1);
	{
		THP_OPTS(thp_query_opts, q, .addr = r.addr, .len = r.len, .states = st,
			 .states_cap = 4);

		memset(st, 0xbb, sizeof(st));
		ret = thp_query(&q);
		ck_assert_msg(ret == 1, "query: %d", ret);
		ck_assert_uint_eq(q.states_needed, 1);
		ck_assert_uint_eq(st[0].start, r.addr);
		ck_assert_uint_eq(st[0].end, r.addr + r.len);
		ck_assert(st[0].advised_huge);
		ck_assert(!st[0].advised_nohuge);
		ck_assert(st[0].thp_eligible);
		ck_assert(st[0].anonymous);
		ck_assert_str_eq(st[0].name, "");
		ck_assert_uint_eq(st[0].reserved0, 0);
		ck_assert_uint_eq(st[0].anon_huge_bytes, 0);
	}
	touch_range(m, 8 * MiB);
	{
		/* [m, m+8M): three mappings; the middle one is huge. */
		THP_OPTS(thp_query_opts, q, .addr = U(m), .len = 8 * MiB, .states = st,
			 .states_cap = 4);

		ret = thp_query(&q);
		ck_assert_msg(ret == 3, "query over 3 mappings: %d", ret);
		ck_assert_uint_eq(q.states_needed, 3);
		ck_assert_uint_eq(st[0].start, U(m));
		ck_assert(!st[0].advised_huge && !st[0].thp_eligible);
		ck_assert_uint_eq(st[0].anon_huge_bytes, 0);
		ck_assert_uint_eq(st[0].rss_bytes, 2 * MiB);
		ck_assert(st[1].advised_huge);
		ck_assert_msg(st[1].anon_huge_bytes > 0, "anon_huge_bytes 0 after touch");
		ck_assert_int_eq(smaps_lookup(0, r.addr, &si), 0);
		ck_assert_uint_eq(st[1].anon_huge_bytes, si.anon_huge);
		ck_assert_uint_eq(st[1].rss_bytes, si.rss);
		ck_assert_uint_eq(st[2].start, U(m + 6 * MiB));
		ck_assert_uint_eq(st[2].end, U(m + 8 * MiB));
	}
	{
		/* states_cap smaller than needed: count still right, no overflow. */
		THP_OPTS(thp_query_opts, q, .addr = U(m), .len = 8 * MiB, .states = st,
			 .states_cap = 1);

		memset(&st[1], 0x44, sizeof(st[1]));
		ret = thp_query(&q);
		ck_assert_int_eq(ret, 1);
		ck_assert_uint_eq(q.states_needed, 3);
		ck_assert_msg(st[1].start == 0x4444444444444444ULL, "wrote past states_cap");
	}
	{
		/* Partial overlap at both ends: the whole mappings are reported. */
		THP_OPTS(thp_query_opts, q, .addr = U(m + 1 * MiB), .len = 2 * MiB,
			 .states = st, .states_cap = 4);

		ck_assert_int_eq(thp_query(&q), 2);
		ck_assert_uint_eq(st[0].start, U(m));
		ck_assert_uint_eq(st[0].end, U(m + 2 * MiB));
		ck_assert_uint_eq(st[1].start, U(m + 2 * MiB));
		ck_assert_uint_eq(st[1].end, U(m + 6 * MiB));
	}
	{
		/* A wrapping window is invalid. */
		THP_OPTS(thp_query_opts, q, .addr = U(m), .len = UINT64_MAX);

		errno = 0;
		ck_assert_int_eq(thp_query(&q), -EINVAL);
		ck_assert_int_eq(errno, EINVAL);
	}
	{
		/* All mappings, counting only. */
		THP_OPTS(thp_query_opts, q);

		ret = thp_query(&q);
		ck_assert_int_eq(ret, 0);
		ck_assert_msg(q.states_needed > 5, "only %llu mappings in the whole process",
			      (unsigned long long)q.states_needed);
	}
	{
		/* An unmapped range: nothing. */
		THP_OPTS(thp_query_opts, q, .addr = U(m + 8 * MiB), .len = 4096, .states = st,
			 .states_cap = 4);

		ck_assert(!vma_mapped(0, U(m + 8 * MiB)));
		ck_assert_int_eq(thp_query(&q), 0);
		ck_assert_uint_eq(q.states_needed, 0);
	}
	{
		/* A file mapping has its name. */
		THP_OPTS(thp_query_opts, q, .len = 4096, .states = st, .states_cap = 4);
		char line[512];
		FILE *f = fopen("/proc/self/maps", "re");

		ck_assert_ptr_nonnull(f);
		while (fgets(line, sizeof(line), f)) {
			unsigned long long s0;

			if (strstr(line, "libthp") && sscanf(line, "%llx-", &s0) == 1) {
				q.addr = s0;
				break;
			}
		}
		fclose(f);
		ck_assert_msg(q.addr != 0, "libthp not found in /proc/self/maps");
		ck_assert_int_eq(thp_query(&q), 1);
		ck_assert_msg(strstr(st[0].name, "libthp") != NULL, "name \"%s\"", st[0].name);
		ck_assert(!st[0].anonymous);
	}
	munmap(m, 8 * MiB);
}
END_TEST

START_TEST(query_nohuge)
{
	char *m = map_aligned(4, 0);
	struct thp_range r = { U(m), 4 * MiB };
	THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_NOHUGE);
	struct thp_mapping_state st;
	THP_OPTS(thp_query_opts, q, .addr = U(m), .len = 4 * MiB, .states = &st,
		 .states_cap = 1);

	ck_assert_int_eq(thp_apply_ranges(&r, 1, &o), 1);
	touch_range(m, 4 * MiB);
	ck_assert_int_eq(thp_query(&q), 1);
	ck_assert(st.advised_nohuge && !st.advised_huge && !st.thp_eligible);
	ck_assert_uint_eq(st.anon_huge_bytes, 0);
	ck_assert_uint_eq(st.rss_bytes, 4 * MiB);
	munmap(m, 4 * MiB);
}
END_TEST

START_TEST(report_format)
{
	struct thp_report r = {
		.addr = 0x7f1234600000ULL,
		.len = 6 * MiB,
		.bytes_advised = 4 * MiB,
		.bytes_unmapped = 2 * MiB,
		.fail_addr = 0x7f1234a00000ULL,
		.error = ENOMEM,
		.backend = THP_BACKEND_PROCESS_MADVISE,
		.attempted = 1,
	};
	char buf[512], small[10];
	int n, n0, ns;
	char *nl;

	n = thp_report_format(&r, buf, sizeof(buf));
	ck_assert_int_gt(n, 0);
	ck_assert_int_lt(n, (int)sizeof(buf));
	ck_assert_int_eq((int)strlen(buf), n);
	nl = strchr(buf, '\n');
	ck_assert_msg(nl == NULL || nl[1] == '\0', "not a single line: \"%s\"", buf);
	ck_assert_msg(strstr(buf, "7f1234600000") != NULL, "no range address in \"%s\"", buf);
	ck_assert_msg(strstr(buf, "7f1234a00000") != NULL, "no fail address in \"%s\"", buf);
	n0 = thp_report_format(&r, NULL, 0);
	ck_assert_int_eq(n0, n);
	memset(small, 'x', sizeof(small));
	ns = thp_report_format(&r, small, sizeof(small));
	ck_assert_int_eq(ns, n);
	ck_assert_int_eq((int)strlen(small), (int)sizeof(small) - 1);
	ck_assert(strncmp(small, buf, sizeof(small) - 1) == 0);

	/* A different error gives a different line. */
	{
		char buf2[512];

		r.error = EINVAL;
		thp_report_format(&r, buf2, sizeof(buf2));
		ck_assert_msg(strcmp(buf, buf2) != 0, "error not in the line");
		r.error = 0;
		r.fail_addr = 0;
		r.bytes_unmapped = 0;
		r.bytes_advised = r.len;
		ck_assert_int_gt(thp_report_format(&r, buf2, sizeof(buf2)), 0);
	}
}
END_TEST

static Suite *misc_suite(void)
{
	Suite *s = suite_create("probe_misc");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 30);
	tcase_add_checked_fixture(tc, require_madvise_mode, NULL);
	tcase_add_test(tc, probe_host);
	tcase_add_test(tc, probe_ver0);
	tcase_add_test(tc, probe_sizes_match_sysfs);
	tcase_add_test(tc, names);
	tcase_add_test(tc, strerror_msgs);
	tcase_add_test(tc, version);
	tcase_add_test(tc, query_mapping);
	tcase_add_test(tc, query_nohuge);
	tcase_add_test(tc, report_format);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(misc_suite());
}
