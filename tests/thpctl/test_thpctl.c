// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * thpctl against real processes: every test runs the installed-to-be
 * binary ($THPCTL) on a target ($THPCTL_TARGET) and checks the effect in
 * the target's /proc/PID/smaps, the exit status and the messages.  JSON is
 * checked with python3's json module (valid document, fields, sums).
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <thp/thp.h>

#include "helpers.h"

#define MAX_ARGS 32

/* ---- running thpctl ---------------------------------------------------- */

/* thpctl ARGS... (NULL-terminated). */
static void thpctl(struct run *r, ...)
{
	const char *argv[MAX_ARGS];
	size_t n = 0;
	va_list ap;

	argv[n++] = env_path("THPCTL");
	va_start(ap, r);
	while ((argv[n] = va_arg(ap, const char *)) != NULL) {
		n++;
		ck_assert(n < MAX_ARGS);
	}
	va_end(ap);
	run_cmd(r, NULL, (char *const *)argv);
}

#define assert_exit(r, code)                                                        \
	ck_assert_msg((r)->status == (code), "exit status %d, expected %d\nstdout:\n%.1500s\nstderr:\n%.1000s", \
		      (r)->status, (code), (r)->out, (r)->err)

/* A failure: non-zero, a "thpctl: " message on stderr, no Check-visible crash. */
static void assert_error(const struct run *r, int code, const char *needle)
{
	assert_exit(r, code);
	ck_assert_msg(!strncmp(r->err, "thpctl: ", 8), "stderr does not start with "
		      "\"thpctl: \": \"%s\"", r->err);
	if (needle)
		ck_assert_msg(strcasestr(r->err, needle), "stderr lacks \"%s\": \"%s\"", needle,
			      r->err);
}

/*
 * Check a JSON document with python3: it must parse, and @checks (python
 * statements using `d`, the document) must not raise.
 */
static void json_check(const char *doc, const char *checks)
{
	char script[8192];
	const char *py = "/usr/bin/python3";
	const char *argv[] = { py, "-c", script, NULL };
	struct spawn_opts o = { .stdin_fd = memfd_create("json", MFD_CLOEXEC), .stdout_fd = -1 };
	size_t len = strlen(doc);
	struct run r;

	snprintf(script, sizeof(script),
		 "import json, sys\n"
		 "d = json.load(sys.stdin)\n"
		 "assert isinstance(d, dict), 'not an object'\n"
		 "assert d['version'] == 1, 'version'\n"
		 "%s\n", checks);
	if (access(py, X_OK) != 0)
		argv[0] = py = "/usr/local/bin/python3";
	ck_assert_msg(access(py, X_OK) == 0, "python3 is needed to check JSON output");
	ck_assert(o.stdin_fd >= 0);
	ck_assert(write(o.stdin_fd, doc, len) == (ssize_t)len);
	ck_assert(lseek(o.stdin_fd, 0, SEEK_SET) == 0);
	run_cmd(&r, &o, (char *const *)argv);
	close(o.stdin_fd);
	ck_assert_msg(r.status == 0, "JSON check failed:\n%.1500s\ndocument:\n%.1500s", r.err, doc);
}

/* ---- the target process ------------------------------------------------ */

struct target {
	pid_t pid;
	int in;           /* its stdin: close to let it exit */
	uint64_t region;  /* 8 MiB, touched, not advised */
	uint64_t nohuge;  /* 4 MiB, touched, MADV_NOHUGEPAGE */
	uint64_t memfd;   /* one page of a memfd with an awkward name */
};

static void target_start(struct target *t, const char *mode)
{
	int pin[2], pout[2];
	char line[256];
	FILE *f;

	ck_assert(pipe2(pin, O_CLOEXEC) == 0 && pipe2(pout, O_CLOEXEC) == 0);
	t->pid = fork();
	ck_assert_int_ge(t->pid, 0);
	if (t->pid == 0) {
		const char *tp = getenv("THPCTL_TARGET");

		if (!tp || dup2(pin[0], 0) < 0 || dup2(pout[1], 1) < 0)
			_exit(120);
		execl(tp, tp, mode, (char *)NULL);
		_exit(121);
	}
	close(pin[0]);
	close(pout[1]);
	t->in = pin[1];
	f = fdopen(pout[0], "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_msg(fgets(line, sizeof(line), f) != NULL, "target printed nothing");
	fclose(f);
	ck_assert_msg(sscanf(line, "%lx %lx %lx", (unsigned long *)&t->region,
			     (unsigned long *)&t->nohuge, (unsigned long *)&t->memfd) == 3,
		      "target line \"%s\"", line);
	ck_assert_msg(vma_anon_huge(t->pid, t->region) == 0, "target region already huge%s",
		      mode_note());
}

static void target_stop(struct target *t)
{
	int st;

	if (t->in >= 0)
		close(t->in);
	t->in = -1;
	kill(t->pid, SIGKILL);
	ck_assert_int_eq(waitpid(t->pid, &st, 0), t->pid);
}

/* The target's THP state did not change: no advice, no huge pages. */
static void assert_target_unchanged(const struct target *t)
{
	struct smaps_info si;

	ck_assert_int_eq(smaps_lookup(t->pid, t->region, &si), 0);
	ck_assert_msg(si.found && si.start == t->region && si.end == t->region + 8 * MiB,
		      "target region changed shape");
	ck_assert_msg(!si.hg && !si.nh, "target region VmFlags changed: %s", si.vmflags);
	ck_assert_msg(si.anon_huge == 0, "target region has AnonHugePages %llu",
		      (unsigned long long)si.anon_huge);
	ck_assert_int_eq(smaps_lookup(t->pid, t->nohuge, &si), 0);
	ck_assert_msg(si.found && si.nh && !si.hg, "target nohuge region VmFlags: %s", si.vmflags);
	ck_assert_uint_eq(si.anon_huge, 0);
}

static char *fmt(char *buf, size_t len, const char *f, ...) __attribute__((format(printf, 3, 4)));
static char *fmt(char *buf, size_t len, const char *f, ...)
{
	va_list ap;

	va_start(ap, f);
	vsnprintf(buf, len, f, ap);
	va_end(ap);
	return buf;
}

#define FMT(buf, ...) fmt(buf, sizeof(buf), __VA_ARGS__)

/* ---- help, version, command line --------------------------------------- */

START_TEST(help_version)
{
	static const char *const cmds[] = { "probe", "status", "apply", "run" };
	struct run r;
	char want[64];

	thpctl(&r, "--help", NULL);
	assert_exit(&r, 0);
	for (size_t i = 0; i < 4; i++)
		ck_assert_msg(strstr(r.out, cmds[i]), "--help does not list %s", cmds[i]);

	thpctl(&r, "--version", NULL);
	assert_exit(&r, 0);
	FMT(want, "libthp %s", thp_version());
	ck_assert_msg(strstr(r.out, want), "--version: \"%s\" lacks \"%s\"", r.out, want);

	for (size_t i = 0; i < 4; i++) {
		thpctl(&r, "help", cmds[i], NULL);
		assert_exit(&r, 0);
		ck_assert_msg(strstr(r.out, "Usage: thpctl ") && strstr(r.out, cmds[i]),
			      "help %s: %s", cmds[i], r.out);
	}
	for (size_t i = 0; i < 3; i++) {
		thpctl(&r, cmds[i], "--help", NULL);
		assert_exit(&r, 0);
		ck_assert(strstr(r.out, "Usage: thpctl "));
	}
	thpctl(&r, "apply", "--help", NULL);
	ck_assert(strstr(r.out, "--advice") && strstr(r.out, "--skip-errors"));

	/* No command: usage on stderr, status 2. */
	thpctl(&r, NULL);
	assert_exit(&r, 2);
	ck_assert(strstr(r.err, "Usage: thpctl"));
	ck_assert_str_eq(r.out, "");
}
END_TEST

/* Usage errors: status 2, "thpctl: " on stderr, nothing on stdout. */
START_TEST(usage_errors)
{
	static const char *const cases[][7] = {
		{ "frobnicate" },
		{ "--frob" },
		{ "help", "frobnicate" },
		{ "probe", "--frob" },
		{ "probe", "extra" },
		{ "status", "--frob" },
		{ "status", "-x" },
		{ "status", "-p" },
		{ "status", "extra" },
		{ "apply", "0x1000-0x2000" },                        /* no --advice */
		{ "apply", "--advice", "dontneed", "0x1000-0x2000" }, /* not THP advice */
		{ "apply", "--advice", "4", "0x1000-0x2000" },
		{ "apply", "--advice", "huge" },                      /* no ranges */
		{ "apply", "--advice", "huge", "--all", "0x1000-0x2000" },
		{ "apply", "--advice" },
		{ "apply", "--advice", "huge", "--bogus", "--all" },
		{ "apply", "--advice", "huge", "--all", "--json=1" },
		/* Repeated options: not "the last one wins" (0x1000 is never mapped). */
		{ "apply", "--advice", "huge", "--advice", "nohuge", "0x1000+4K" },
		{ "apply", "-a", "huge", "--all", "--all" },
		{ "status", "-p", "1", "--pid", "1" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *argv[9] = { env_path("THPCTL") };
		struct run r;
		size_t n = 1;

		for (size_t k = 0; k < 7 && cases[i][k]; k++)
			argv[n++] = cases[i][k];
		argv[n] = NULL;
		run_cmd(&r, NULL, (char *const *)argv);
		ck_assert_msg(r.status == 2, "case %zu (%s %s): status %d, stderr %s", i,
			      cases[i][0], cases[i][1] ? cases[i][1] : "", r.status, r.err);
		ck_assert_msg(!strncmp(r.err, "thpctl: ", 8), "case %zu: stderr \"%s\"", i, r.err);
		ck_assert_msg(r.out[0] == '\0', "case %zu: stdout \"%s\"", i, r.out);
	}
}
END_TEST

/* run: a second --policy is refused (exit 125, nothing run), not "the last one wins". */
START_TEST(run_policy_twice)
{
	static const char *const forms[][4] = {
		{ "--policy", "huge", "--policy", "never" },
		{ "-p", "never", "--policy=huge", NULL },
	};

	for (size_t i = 0; i < 2; i++) {
		const char *argv[10] = { env_path("THPCTL"), "run" };
		size_t n = 2;
		struct run r;

		for (size_t k = 0; k < 4 && forms[i][k]; k++)
			argv[n++] = forms[i][k];
		argv[n++] = "--";
		argv[n++] = "/bin/echo";
		argv[n++] = "ran";
		argv[n] = NULL;
		run_cmd(&r, NULL, (char *const *)argv);
		ck_assert_msg(r.status == 125 && strstr(r.err, "more than once") && !r.out[0],
			      "form %zu: status %d, stdout \"%s\", stderr \"%s\"", i, r.status,
			      r.out, r.err);
	}
}
END_TEST

/* ---- probe ------------------------------------------------------------- */

START_TEST(probe_text)
{
	struct thp_probe_info pi = { .sz = sizeof(pi) };
	struct run r;
	char want[256];

	ck_assert_int_eq(thp_probe(&pi), 0);
	thpctl(&r, "probe", NULL);
	assert_exit(&r, 0);
	for (unsigned int b = 1; b < THP_BACKEND_COUNT; b++) {
		char *line;

		FMT(want, "\n  %s: ", thp_backend_name(b));
		line = strstr(r.out, want);
		ck_assert_msg(line, "probe does not list backend %s:\n%s", thp_backend_name(b),
			      r.out);
		line += strlen(want);
		if (b != THP_BACKEND_PRCTL_POLICY && b != THP_BACKEND_PRELOAD &&
		    b != THP_BACKEND_INJECT) {
			bool avail = pi.backends & (1u << b);

			ck_assert_msg(!strncmp(line, avail ? "available (" : "not available (",
					       avail ? 11 : 15),
				      "backend %s: \"%.80s\" but thp_probe says %savailable",
				      thp_backend_name(b), line, avail ? "" : "not ");
		}
	}
	/* The mainline facts of this host (test_probe_misc checks the library). */
	ck_assert(strstr(r.out, "  pmadv: not available (kernel rejects PMADV_* flags"));
	ck_assert(strstr(r.out, "  process_madvise: available"));
	ck_assert(strstr(r.out, "  prctl_thp_policy: not available (RFC prctl not enabled"));
	ck_assert(strstr(r.out, FMT(want, "\npmd size: %llu", (unsigned long long)pi.pmd_size)));
	ck_assert_uint_eq(pi.pmd_size, PMD_SZ);
	require_madvise_mode();
	ck_assert_msg(strstr(r.out, "\nthp enabled: madvise (always [madvise] never)\n"),
		      "%.2000s", r.out);
	ck_assert(strstr(r.out, "\nthp defrag: "));
	ck_assert(strstr(r.out, FMT(want, "  PIDFD_SELF: yes (%d)", pi.pidfd_self)));
	ck_assert(strstr(r.out, "  PROCMAP_QUERY: yes"));
	ck_assert(strstr(r.out, "  MADV_COLLAPSE: yes"));
	ck_assert(strstr(r.out, "  PR_THP_DISABLE_EXCEPT_ADVISED: yes"));
	/* One row per size, as thp_probe() reports it (6.18: per-size controls). */
	ck_assert_uint_eq(pi.sizes_source, THP_SIZES_PER_SIZE);
	ck_assert(strstr(r.out, FMT(want, "\nfolio sizes: %u, per-size controls\n", pi.nr_sizes)));
	for (unsigned int i = 0; i < pi.nr_sizes && i < THP_PROBE_MAX_SIZES; i++) {
		const struct thp_size_info *si = &pi.sizes[i];
		unsigned long long kb = (unsigned long long)(si->size >> 10);

		if (kb >= 1024)
			FMT(want, "\n  %llu MiB ", kb >> 10);
		else
			FMT(want, "\n  %llu KiB ", kb);
		ck_assert_msg(strstr(r.out, want), "no row for %llu kB:\n%.3000s", kb, r.out);
		ck_assert_msg(strstr(strstr(r.out, want), si->huge_policy ? " yes\n" : " no\n"),
			      "%llu kB row", kb);
	}
	/* This host: 2 MiB inherits madvise; that is what a HUGE policy can get. */
	ck_assert_msg(strstr(r.out, "\n  2 MiB      inherit   madvise   ") ||
		      !strstr(r.out, "\n  2 MiB      inherit"), "%.3000s", r.out);
	ck_assert(strstr(r.out, "\nhuge policy can get: "));
	ck_assert(strstr(r.out, FMT(want, "\nkhugepaged: pages_to_scan=%u ",
				    pi.khugepaged_pages_to_scan)));
	ck_assert_str_eq(r.err, "");
}
END_TEST

START_TEST(probe_json)
{
	struct thp_probe_info pi = { .sz = sizeof(pi) };
	struct run r;
	char checks[4096], huge_sizes[512];

	ck_assert_int_eq(thp_probe(&pi), 0);
	require_madvise_mode();
	strcpy(huge_sizes, "[");
	for (unsigned int i = 0; i < pi.nr_sizes && i < THP_PROBE_MAX_SIZES; i++)
		if (pi.sizes[i].huge_policy)
			snprintf(huge_sizes + strlen(huge_sizes), sizeof(huge_sizes) - strlen(huge_sizes),
				 "%s%llu", huge_sizes[1] ? ", " : "",
				 (unsigned long long)pi.sizes[i].size);
	strcat(huge_sizes, "]");
	thpctl(&r, "probe", "--json", NULL);
	assert_exit(&r, 0);
	FMT(checks,
	    "assert d['command'] == 'probe'\n"
	    "assert d['libthp_version'] == '%s'\n"
	    "assert d['thp_mode'] == 'madvise' and d['thp_enabled'] == 'madvise'\n"
	    "assert d['thp_enabled_raw'] == 'always [madvise] never'\n"
	    "assert isinstance(d['thp_defrag'], str)\n"
	    "assert d['pmd_size'] == %llu\n"
	    "b = {x['name']: x for x in d['backends']}\n"
	    "assert len(b) == %d, b\n"
	    "bits = %u\n"
	    "for x in d['backends']:\n"
	    "    assert isinstance(x['reason'], str) and x['reason'], x\n"
	    "    if x['name'] not in ('prctl_thp_policy', 'preload', 'inject'):\n"
	    "        assert x['available'] == bool(bits & (1 << x['id'])), x\n"
	    "assert not b['pmadv']['available'] and 'PMADV' in b['pmadv']['reason']\n"
	    "assert b['process_madvise']['available']\n"
	    "assert 'rfc_prctl_set' in b['prctl_thp_policy']['reason']\n"
	    "f = d['features']\n"
	    "assert f['pidfd_self'] == %d and f['procmap_query'] is True\n"
	    "assert f['madvise_collapse'] is True and f['thp_disable_except_advised'] is True\n"
	    "assert f['pmadv_skip_errors'] is False\n"
	    "assert d['sizes_source'] == 'per_size' and d['nr_sizes'] == %u\n"
	    "s = d['sizes']\n"
	    "assert len(s) == %u and [x['size'] for x in s] == sorted(x['size'] for x in s)\n"
	    "assert s[-1]['size'] == d['pmd_size']\n"
	    "modes = ('always', 'madvise', 'never', 'unknown')\n"
	    "for x in s:\n"
	    "    assert x['enabled'] in modes[:3] + ('inherit', None), x\n"
	    "    assert x['mode'] in modes, x\n"
	    "    want = d['thp_mode'] if x['enabled'] == 'inherit' else (x['enabled'] or 'unknown')\n"
	    "    assert x['mode'] == want, x\n"
	    "    assert x['huge_policy'] == (x['mode'] in ('always', 'madvise')), x\n"
	    "    assert x['shmem_enabled'] is None or isinstance(x['shmem_enabled'], str), x\n"
	    "assert d['huge_policy_sizes'] == [x['size'] for x in s if x['huge_policy']]\n"
	    "assert d['huge_policy_sizes'] == %s\n"
	    "assert d['shmem_enabled'] in ('always', 'within_size', 'advise', 'never', 'deny', 'force')\n"
	    "k = d['khugepaged']\n"
	    "assert k['pages_to_scan'] == %u and k['max_ptes_none'] == %u, k\n"
	    "assert set(k) == {'pages_to_scan', 'scan_sleep_millisecs', 'alloc_sleep_millisecs',"
	    " 'max_ptes_none', 'max_ptes_swap', 'max_ptes_shared', 'defrag'}\n",
	    thp_version(), (unsigned long long)pi.pmd_size, THP_BACKEND_COUNT - 1, pi.backends,
	    pi.pidfd_self, pi.nr_sizes, pi.nr_sizes, huge_sizes, pi.khugepaged_pages_to_scan,
	    pi.khugepaged_max_ptes_none);
	json_check(r.out, checks);
}
END_TEST

/* ---- status ------------------------------------------------------------ */

START_TEST(status_remote_text)
{
	struct vma_counts c;
	struct target t;
	struct run r;
	char pid[16], want[128], *line;
	unsigned long long tm, th, tn, te, tah, trss;

	target_start(&t, NULL);
	thpctl(&r, "status", "-p", FMT(pid, "%d", (int)t.pid), NULL);
	assert_exit(&r, 0);
	ck_assert_msg(strstr(r.out, FMT(want, "pid: %d\n", (int)t.pid)), "%.2000s", r.out);
	ck_assert_msg(strstr(r.out, "policy: system or nohuge (not distinguishable from outside "
				    "the process)"), "%.2000s", r.out);
	/* The region's row: range, 8192 KiB, not advised, no huge pages, all resident. */
	line = strstr(r.out, FMT(want, "\n0x%llx-0x%llx ", (unsigned long long)t.region,
				 (unsigned long long)(t.region + 8 * MiB)));
	ck_assert_msg(line, "region row missing:\n%.2000s", r.out);
	ck_assert_msg(sscanf(line, " %*s %llu %*s %*s %llu %llu", &tm, &tah, &trss) == 3, "%.120s",
		      line);
	ck_assert_uint_eq(tm, 8192);
	ck_assert_uint_eq(tah, 0);
	ck_assert_uint_eq(trss, 8192);
	ck_assert_msg(strstr(line, " - ") && strstr(line, "[anon]"), "%.120s", line);
	line = strstr(r.out, FMT(want, "\n0x%llx-0x%llx ", (unsigned long long)t.nohuge,
				 (unsigned long long)(t.nohuge + 4 * MiB)));
	ck_assert_msg(line && strstr(line, " nohuge "), "nohuge row:\n%.2000s", r.out);
	/* Folio sizes: the 12 MiB written sit in base pages; root sees the frames. */
	line = strstr(r.out, "\nfolio sizes: source ");
	ck_assert_msg(line, "no folio sizes line:\n%.2000s", r.out);
	/* A sanitized target has a shadow mapping of terabytes: not read, source none. */
	if (page_frames_readable() &&
	    (!getenv("THPCTL_SANITIZE") || !strcmp(getenv("THPCTL_SANITIZE"), "none"))) {
		ck_assert_msg(!strncmp(line, "\nfolio sizes: source pagemap+kpageflags",
				       strlen("\nfolio sizes: source pagemap+kpageflags")), "%.200s",
			      line);
		line = strstr(line, "\n  base ");
		ck_assert_msg(line && sscanf(line, "\n  base %llu kB", &tm) == 1, "%.2000s", r.out);
		ck_assert_uint_ge(tm, 12 * 1024);
	} else {
		ck_assert_msg(!strncmp(line, "\nfolio sizes: source none",
						strlen("\nfolio sizes: source none")), "%.200s", line);
	}
	/* Awkward names are escaped, one row per mapping. */
	ck_assert_msg(strstr(r.out, "/memfd:thpctl \"q\\\\t\\x09x"), "memfd name:\n%.2000s", r.out);
	line = strstr(r.out, "\ntotals: ");
	ck_assert_msg(line, "no totals:\n%.2000s", r.out);
	ck_assert_int_eq(sscanf(line, "\ntotals: mappings=%llu advised_huge=%llu "
				"advised_nohuge=%llu eligible=%llu anon_huge_kb=%llu rss_kb=%llu",
				&tm, &th, &tn, &te, &tah, &trss), 6);
	smaps_count(t.pid, 0, UINT64_MAX, true, &c);
	ck_assert_uint_eq(tm, (unsigned long long)c.vmas);
	/* Sanitizer builds of the target add nohuge mappings of their own. */
	ck_assert_uint_eq(th, (unsigned long long)c.hg);
	ck_assert_uint_eq(tn, (unsigned long long)c.nh);
	ck_assert_uint_ge(tn, 1);
	ck_assert_uint_eq(tah, 0);
	ck_assert_uint_ge(trss, 12 * 1024);

	/* Filters: --anon hides files; --huge lists nothing yet. */
	thpctl(&r, "status", "-p", pid, "--anon", NULL);
	assert_exit(&r, 0);
	ck_assert(strstr(r.out, FMT(want, "\n0x%llx-", (unsigned long long)t.region)));
	ck_assert_msg(!strstr(r.out, " /usr/"), "--anon lists files:\n%.2000s", r.out);
	thpctl(&r, "status", "-p", pid, "--huge", NULL);
	assert_exit(&r, 0);
	ck_assert_msg(strstr(r.out, "totals: mappings=0 "), "%.2000s", r.out);
	assert_target_unchanged(&t);
	target_stop(&t);
}
END_TEST

START_TEST(status_remote_json)
{
	struct vma_counts c;
	struct target t;
	struct run r;
	char pid[16], checks[4096];

	target_start(&t, NULL);
	FMT(pid, "%d", (int)t.pid);
	thpctl(&r, "status", "-p", pid, "--json", NULL);
	assert_exit(&r, 0);
	smaps_count(t.pid, 0, UINT64_MAX, true, &c);
	FMT(checks,
	    "assert d['command'] == 'status' and d['pid'] == %d and d['self'] is False\n"
	    "df = d['default']\n"
	    "assert df['policy'] is None and df['policy_candidates'] == ['system', 'nohuge'], df\n"
	    "assert df['persistent'] is None and df['persistent_by'] is None and df['detail']\n"
	    "m = d['mappings']\n"
	    "assert len(m) == %d == d['mappings_unfiltered'], len(m)\n"
	    "r = [x for x in m if int(x['start'], 16) == %llu]\n"
	    "assert len(r) == 1, 'region'\n"
	    "r = r[0]\n"
	    "assert int(r['end'], 16) == %llu and r['size'] == 8 << 20\n"
	    "assert r['anonymous'] and not r['advised_huge'] and not r['advised_nohuge']\n"
	    "assert r['anon_huge_bytes'] == 0 and r['rss_bytes'] == 8 << 20 and r['name'] == ''\n"
	    "n = [x for x in m if int(x['start'], 16) == %llu][0]\n"
	    "assert n['advised_nohuge'] and not n['advised_huge']\n"
	    "mf = [x for x in m if int(x['start'], 16) == %llu][0]\n"
	    "assert mf['name'].startswith('/memfd:thpctl \"q\\\\t\\tx\\ufffd'), repr(mf['name'])\n"
	    "t = d['totals']\n"
	    "assert t['mappings'] == len(m)\n"
	    "assert t['advised_huge'] == sum(x['advised_huge'] for x in m) == %d\n"
	    "assert t['advised_nohuge'] == sum(x['advised_nohuge'] for x in m) == %d\n"
	    "assert t['thp_eligible'] == sum(x['thp_eligible'] for x in m)\n"
	    "assert t['anon_huge_bytes'] == sum(x['anon_huge_bytes'] for x in m)\n"
	    "assert t['rss_bytes'] == sum(x['rss_bytes'] for x in m)\n",
	    (int)t.pid, c.vmas, (unsigned long long)t.region,
	    (unsigned long long)(t.region + 8 * MiB), (unsigned long long)t.nohuge,
	    (unsigned long long)t.memfd, c.hg, c.nh);
	json_check(r.out, checks);
	assert_target_unchanged(&t);
	target_stop(&t);
}
END_TEST

/* A target that set PR_SET_THP_DISABLE: "never" is visible from outside. */
START_TEST(status_never)
{
	struct target t;
	struct run r;
	char pid[16];

	target_start(&t, "never");
	FMT(pid, "%d", (int)t.pid);
	thpctl(&r, "status", "-p", pid, NULL);
	assert_exit(&r, 0);
	ck_assert_msg(strstr(r.out, "\npolicy: never\nmechanism: prctl_thp_disable\n"
				    "persistent: yes\n"), "%.2000s", r.out);
	thpctl(&r, "status", "-p", pid, "--json", NULL);
	assert_exit(&r, 0);
	json_check(r.out, "df = d['default']\n"
		   "assert df['policy'] == 'never' and df['policy_candidates'] == ['never']\n"
		   "assert df['backend'] == 'prctl_thp_disable' and df['persistent'] is True\n"
		   "assert df['persistent_by'] == 'kernel' and df['detail'] is None\n");
	target_stop(&t);
}
END_TEST

/* Without -p thpctl shows itself, whose policy it can read exactly. */
/*
 * A process names its mappings: a file path whose maps line is longer than
 * libthp's line buffer, with a tail that reads as a 1 GiB mapping, and
 * control characters.  Root's status lists the real mapping with its real
 * range, never the forged one, and shows the name as escaped data.
 */
START_TEST(status_long_name)
{
	static const char *const raw[] = { "\x1b", "\x07", "\x7f", "\xc2\x9b", "\xff" };
	struct long_name_child c;
	struct run r;
	char pid[16], want[512], *line;

	long_name_child_start(&c);
	FMT(pid, "%d", (int)c.pid);
	thpctl(&r, "status", "-p", pid, NULL);
	assert_exit(&r, 0);
	line = strstr(r.out, FMT(want, "\n0x%llx-0x%llx ", (unsigned long long)c.start,
				 (unsigned long long)c.end));
	ck_assert_msg(line, "the long-named mapping is missing:\n%.3000s", r.out);
	ck_assert_msg(strstr(line, "/tmp/thp-longname-"), "%.200s", line);
	ck_assert_msg(!strstr(r.out, FMT(want, "\n0x%llx-", LONG_NAME_FORGED_START)),
		      "the forged mapping is listed:\n%.3000s", r.out);
	for (size_t i = 0; i < sizeof(raw) / sizeof(raw[0]); i++)
		ck_assert_msg(!strstr(r.out, raw[i]), "raw byte 0x%02x in the output",
			      (unsigned char)raw[i][0]);
	ck_assert_msg(strstr(line, "esc\\x1b]0;owned\\x07 del\\x7f csi\\xc2\\x9b bad\\xff\\xfe"),
		      "name not escaped: %.200s", line);

	thpctl(&r, "status", "-p", pid, "--json", NULL);
	assert_exit(&r, 0);
	json_check(r.out, FMT(want,
		"m = [x for x in d['mappings'] if x['start'] == '0x%llx']\n"
		"assert len(m) == 1 and m[0]['end'] == '0x%llx', m\n"
		"assert m[0]['name'].startswith('/tmp/thp-longname-'), m\n"
		"assert 'esc\\x1b]0;owned\\x07 del\\x7f csi\\x9b bad\\ufffd\\ufffd' in m[0]['name'], m\n"
		"assert not [x for x in d['mappings'] if int(x['start'], 16) == 0x%llx], 'forged'\n",
		(unsigned long long)c.start, (unsigned long long)c.end, LONG_NAME_FORGED_START));
	long_name_child_stop(&c);
}
END_TEST

START_TEST(status_self)
{
	struct run r;
	char exe[PATH_MAX], checks[PATH_MAX + 512];

	/* thpctl's own text mapping, by its name as thp_query() gives it:
	 * the path, cut to the 63 bytes of struct thp_mapping_state.name. */
	ck_assert(realpath(env_path("THPCTL"), exe));
	exe[sizeof(((struct thp_mapping_state *)0)->name) - 1] = '\0';
	ck_assert_msg(!strpbrk(exe, "'\\\n"), "a build path with quotes: %s", exe);
	thpctl(&r, "status", "--json", NULL);
	assert_exit(&r, 0);
	json_check(r.out, FMT(checks, "assert d['self'] is True and d['pid'] > 0\n"
		   "df = d['default']\n"
		   "assert df['policy'] in ('system', 'huge', 'nohuge', 'never'), df\n"
		   "assert [df['policy']] == df['policy_candidates']\n"
		   "assert any(x['name'] == '%s' for x in d['mappings'])\n", exe));
	thpctl(&r, "status", NULL);
	assert_exit(&r, 0);
	ck_assert(strstr(r.out, "(thpctl itself)") && strstr(r.out, "\npolicy: "));
}
END_TEST

/* ---- apply ------------------------------------------------------------- */

START_TEST(apply_remote_collapse)
{
	struct target t;
	struct run r;
	char pid[16], range[64], want[512];

	require_madvise_mode();
	target_start(&t, NULL);
	FMT(pid, "%d", (int)t.pid);
	thpctl(&r, "apply", "-p", pid, "--advice", "collapse",
	       FMT(range, "0x%llx-0x%llx", (unsigned long long)t.region,
		   (unsigned long long)(t.region + 8 * MiB)), NULL);
	assert_exit(&r, 0);
	ck_assert_msg(strstr(r.out, FMT(want, "advised %-10llu unmapped 0", 8 * MiB)), "%.2000s", r.out);
	ck_assert(strstr(r.out, "ranges: 1 of 1 advised without error (advice collapse"));
	ck_assert_str_eq(r.err, "");
	ck_assert_msg(vma_anon_huge(t.pid, t.region) == 8 * MiB,
		      "target AnonHugePages %llu after remote collapse%s",
		      (unsigned long long)vma_anon_huge(t.pid, t.region), mode_note());
	ck_assert(!vma_hg(t.pid, t.region));
	ck_assert_uint_eq(vma_anon_huge(t.pid, t.nohuge), 0);

	/* status now shows it, and --huge lists exactly that mapping. */
	thpctl(&r, "status", "-p", pid, "--huge", "--json", NULL);
	assert_exit(&r, 0);
	json_check(r.out, FMT(want, "m = d['mappings']\n"
			      "assert [int(x['start'], 16) for x in m] == [%llu], m\n"
			      "assert m[0]['anon_huge_bytes'] == 8 << 20\n"
			      "assert d['totals']['anon_huge_bytes'] == 8 << 20\n",
			      (unsigned long long)t.region));
	target_stop(&t);
}
END_TEST

/* START+LEN with a suffix, JSON report. */
START_TEST(apply_remote_collapse_json)
{
	struct target t;
	struct run r;
	char pid[16], range[64], checks[1024];

	require_madvise_mode();
	target_start(&t, NULL);
	FMT(pid, "%d", (int)t.pid);
	thpctl(&r, "apply", "--json", "-p", pid, "--advice", "collapse",
	       FMT(range, "%llu+4M", (unsigned long long)(t.region + 2 * MiB)), NULL);
	assert_exit(&r, 0);
	json_check(r.out, FMT(checks,
		   "assert d['command'] == 'apply' and d['pid'] == %d and d['mode'] == 'ranges'\n"
		   "assert d['advice'] == 'collapse' and d['result'] == 1 and d['error'] is None\n"
		   "assert d['ranges_requested'] == 1 and d['ranges_ok'] == 1\n"
		   "assert d['backend'] == 'process_madvise' and d['exit_status'] == 0\n"
		   "(x,) = d['reports']\n"
		   "assert int(x['addr'], 16) == %llu and x['len'] == 4 << 20, x\n"
		   "assert x['bytes_advised'] == 4 << 20 and x['bytes_unmapped'] == 0\n"
		   "assert x['error'] == 0 and x['fail_addr'] is None and x['attempted']\n",
		   (int)t.pid, (unsigned long long)(t.region + 2 * MiB)));
	ck_assert_uint_eq(vma_anon_huge(t.pid, t.region), 4 * MiB);
	target_stop(&t);
}
END_TEST

/* Remote huge/nohuge: the kernel refuses; say so, change nothing. */
START_TEST(apply_remote_huge_refused)
{
	static const char *const advice[] = { "huge", "nohuge" };
	struct target t;
	char pid[16], range[64];

	target_start(&t, NULL);
	FMT(pid, "%d", (int)t.pid);
	FMT(range, "0x%llx+8M", (unsigned long long)t.region);
	for (size_t i = 0; i < 2; i++) {
		struct run r;

		thpctl(&r, "apply", "-p", pid, "--advice", advice[i], range, NULL);
		assert_error(&r, 1, "another process");
		ck_assert_msg(strstr(r.err, "--advice collapse"), "no hint: %s", r.err);
		thpctl(&r, "apply", "-p", pid, "--advice", advice[i], "--all", NULL);
		assert_error(&r, 1, "another process");
		thpctl(&r, "apply", "-p", pid, "--advice", advice[i], "--json", range, NULL);
		assert_exit(&r, 1);
		json_check(r.out, "e = d['error']\n"
			   "assert e['name'] == 'EOPNOTSUPP' and 'another process' in e['detail']\n"
			   "assert d['result'] < 0 and d['exit_status'] == 1\n"
			   "assert d['reports'] == []\n");
	}
	assert_target_unchanged(&t);
	target_stop(&t);
}
END_TEST

/* --inject: the target advises itself; its smaps show it, the report names the backend. */
START_TEST(apply_remote_inject)
{
	struct target t;
	char pid[16], range[64];
	struct run r;

	target_start(&t, NULL);
	FMT(pid, "%d", (int)t.pid);
	FMT(range, "0x%llx+8M", (unsigned long long)t.region);
	thpctl(&r, "apply", "-p", pid, "--inject", "--advice", "huge", range, NULL);
	assert_exit(&r, 0);
	ck_assert_msg(strstr(r.out, "[inject]"), "%s", r.out);
	ck_assert(vma_hg(t.pid, t.region) && !vma_nh(t.pid, t.region));
	thpctl(&r, "apply", "-p", pid, "--inject", "--advice", "nohuge", "--json", range, NULL);
	assert_exit(&r, 0);
	json_check(r.out, "assert d['backend'] == 'inject' and d['result'] == 1\n");
	ck_assert(vma_nh(t.pid, t.region) && !vma_hg(t.pid, t.region));
	/* Without -p there is nothing to inject into. */
	thpctl(&r, "apply", "--inject", "--advice", "huge", range, NULL);
	assert_error(&r, 2, "-p PID");
	target_stop(&t);
}
END_TEST

static bool thp_enabled_line(pid_t pid, const char *want)
{
	char path[64], buf[4096];

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	return read_file(path, buf, sizeof(buf)) > 0 && strstr(buf, want);
}

/* policy -p PID: the target sets its own default; /proc/PID/status shows it. */
START_TEST(policy_remote)
{
	struct target t;
	char pid[16];
	struct run r;

	target_start(&t, NULL);
	FMT(pid, "%d", (int)t.pid);
	thpctl(&r, "policy", "-p", pid, "never", NULL);
	assert_exit(&r, 0);
	ck_assert_msg(strstr(r.out, "policy never (backend inject"), "%s", r.out);
	ck_assert(thp_enabled_line(t.pid, "THP_enabled:\t0"));
	thpctl(&r, "policy", "-p", pid, "system", NULL);
	assert_exit(&r, 0);
	ck_assert(thp_enabled_line(t.pid, "THP_enabled:\t1"));
	thpctl(&r, "policy", "-p", pid, "huge", NULL);
	assert_error(&r, 2, "thpctl run --policy huge");
	thpctl(&r, "policy", "never", NULL);
	assert_error(&r, 2, "-p PID");
	ck_assert(thp_enabled_line(t.pid, "THP_enabled:\t1"));
	target_stop(&t);
}
END_TEST

/* --skip-errors: the nohuge region fails (kernel EINVAL), the other collapses: 3. */
START_TEST(apply_partial)
{
	struct target t;
	struct run r;
	char pid[16], bad[64], good[64];

	require_madvise_mode();
	target_start(&t, NULL);
	FMT(pid, "%d", (int)t.pid);
	FMT(bad, "0x%llx+4M", (unsigned long long)t.nohuge);
	FMT(good, "0x%llx+8M", (unsigned long long)t.region);

	/* Default mode stops at the first failure: the second range is untouched. */
	thpctl(&r, "apply", "-p", pid, "--advice", "collapse", bad, good, NULL);
	assert_error(&r, 1, "failed at");
	ck_assert_msg(strstr(r.out, "FAILED at") && strstr(r.out, "not attempted"), "%.2000s", r.out);
	assert_target_unchanged(&t);

	thpctl(&r, "apply", "-p", pid, "--advice", "collapse", "--skip-errors", bad, good, NULL);
	assert_error(&r, 3, "1 of 2 ranges failed");
	ck_assert(strstr(r.out, "ranges: 1 of 2 advised without error"));
	ck_assert_uint_eq(vma_anon_huge(t.pid, t.region), 8 * MiB);
	ck_assert_uint_eq(vma_anon_huge(t.pid, t.nohuge), 0);
	target_stop(&t);
}
END_TEST

START_TEST(apply_all_remote)
{
	struct vma_counts c;
	struct target t;
	struct run r;
	char pid[16], checks[512];

	require_madvise_mode();
	target_start(&t, NULL);
	FMT(pid, "%d", (int)t.pid);
	/* Strict: stops at the first mapping the kernel refuses (file text). */
	thpctl(&r, "apply", "-p", pid, "--advice", "collapse", "--all", NULL);
	assert_error(&r, 1, "stopped at the first failure");

	thpctl(&r, "apply", "-p", pid, "--advice", "collapse", "--all", "--skip-errors",
	       "--json", NULL);
	ck_assert_msg(r.status == 0 || r.status == 3, "status %d: %s", r.status, r.err);
	smaps_count(t.pid, 0, UINT64_MAX, false, &c);
	json_check(r.out, FMT(checks,
		   "assert d['mode'] == 'all' and d['error'] is None\n"
		   "assert d['mappings_seen'] == %d, d['mappings_seen']\n"
		   "assert d['result'] == d['mappings_advised'] >= 1\n"
		   "assert d['failures_needed'] == len(d['failures']) == d['mappings_skipped']\n"
		   "assert d['exit_status'] == (3 if d['failures'] else 0)\n"
		   "assert all(f['error'] > 0 for f in d['failures'])\n"
		   "assert d['bytes_advised'] >= 8 << 20\n",
		   c.vmas));
	ck_assert_uint_eq(vma_anon_huge(t.pid, t.region), 8 * MiB);
	ck_assert_uint_eq(vma_anon_huge(t.pid, t.nohuge), 0);
	target_stop(&t);
}
END_TEST

/* thpctl's own process: huge/nohuge are allowed; gaps are errors unless told. */
START_TEST(apply_self)
{
	struct run r;

	thpctl(&r, "apply", "--advice", "huge", "--all", NULL);
	assert_exit(&r, 0);
	ck_assert(strstr(r.out, "all mappings: seen "));
	/* The first page is never mapped. */
	thpctl(&r, "apply", "--advice", "nohuge", "0x1000+4K", NULL);
	assert_error(&r, 1, "not mapped");
	thpctl(&r, "apply", "--advice", "nohuge", "--no-error-on-unmapped", "4096-8192", NULL);
	assert_exit(&r, 0);
	ck_assert(strstr(r.out, "unmapped 4096"));
}
END_TEST

/* Malformed ranges: status 2, and the valid range before them is not applied. */
START_TEST(apply_bad_ranges)
{
	static const char *const bad[] = {
		"10-5", "0x1000-0x1000", "0x1000-", "-0x1000", "abc", "0x1000", "",
		"0x1000+0", "0x1000+", "0x1000+1X", "0x1000+-1", "0x1001-0x3000", " 0x1000-0x2000",
		"0x1000-0x2000 ", "0x1000--0x2000", "0xg000-0x2000",
		"18446744073709551616-18446744073709551617", "0xfffffffffffff000+0x2000",
		"0xfffffffffffff000-0xffffffffffffffff", "1+18446744073709551615T",
		"0x10000000000000000-0x10000000000001000",
	};
	struct target t;
	char pid[16], good[64];

	require_madvise_mode();
	target_start(&t, NULL);
	FMT(pid, "%d", (int)t.pid);
	FMT(good, "0x%llx+8M", (unsigned long long)t.region);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct run r;

		thpctl(&r, "apply", "-p", pid, "--advice", "collapse", good, bad[i], NULL);
		ck_assert_msg(r.status == 2, "range \"%s\": status %d (%s)", bad[i], r.status, r.err);
		/* getopt sees "-0x1000" as an option: a usage error too. */
		ck_assert_msg(strstr(r.err, bad[i][0] == '-' ? "thpctl: apply: unknown option"
							   : "thpctl: apply: invalid range"),
			      "range \"%s\": %s", bad[i], r.err);
		ck_assert_str_eq(r.out, "");
	}
	assert_target_unchanged(&t);
	target_stop(&t);
}
END_TEST

/* A pid of a process that is gone (reaped): no such process, status 1. */
static pid_t dead_pid(void)
{
	pid_t p = fork();
	int st;

	ck_assert_int_ge(p, 0);
	if (p == 0)
		_exit(0);
	ck_assert_int_eq(waitpid(p, &st, 0), p);
	return p;
}

START_TEST(bad_pids)
{
	static const char *const bad[] = { "x", "-1", "0", "", "12abc", "1.5", "0x10",
					   "99999999999", " 1" };
	struct target t;
	char good[64], gone[16];

	target_start(&t, NULL);
	FMT(good, "0x%llx+8M", (unsigned long long)t.region);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct run r;

		thpctl(&r, "apply", "-p", bad[i], "--advice", "collapse", good, NULL);
		ck_assert_msg(r.status == 2, "apply pid \"%s\": status %d", bad[i], r.status);
		ck_assert_msg(strstr(r.err, "invalid PID"), "pid \"%s\": %s", bad[i], r.err);
		thpctl(&r, "status", "--pid", bad[i], NULL);
		ck_assert_msg(r.status == 2, "status pid \"%s\": status %d", bad[i], r.status);
		ck_assert_str_eq(r.out, "");
	}
	FMT(gone, "%d", (int)dead_pid());
	{
		struct run r;

		thpctl(&r, "apply", "-p", gone, "--advice", "collapse", good, NULL);
		assert_error(&r, 1, "no such process");
		ck_assert_str_eq(r.out, "");
		thpctl(&r, "status", "-p", gone, "--json", NULL);
		assert_error(&r, 1, "no such process");
		ck_assert_str_eq(r.out, "");
	}
	assert_target_unchanged(&t);
	target_stop(&t);
}
END_TEST

/* Wait until @pid, our child, has exited; it stays a zombie (not reaped). */
static void wait_zombie(pid_t pid)
{
	siginfo_t si;

	ck_assert_int_eq(waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT), 0);
}

/*
 * The target exits after thpctl found it (a zombie still has its pid, so
 * pidfd_open works, but the address space is gone): clear message, status 1.
 */
/* What without_proc() ran with /proc unmounted, in a child. */
struct noproc_runs {
	int setup;                    /* errno of the namespace setup */
	bool proc_still_there;
	struct run probe, run, status;
};

/*
 * The child: unmount /proc in a mount namespace of its own, run thpctl
 * three times, _exit() (a sanitized test program's leak check at exit
 * would need /proc).
 */
static void noproc_child(struct noproc_runs *out, const char *libdir)
{
	const char *env[] = { libdir, NULL };
	struct spawn_opts o = { .env = env, .stdin_fd = -1, .stdout_fd = -1 };
	char *thpctl_path = (char *)env_path("THPCTL"), pid[16];

	if (unshare(CLONE_NEWNS) || mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) ||
	    umount2("/proc", MNT_DETACH)) {
		out->setup = errno;
		_exit(0);
	}
	out->proc_still_there = access("/proc/self", F_OK) == 0;
	run_cmd(&out->probe, &o, (char *const[]){ thpctl_path, "probe", NULL });
	run_cmd(&out->run, &o, (char *const[]){ thpctl_path, "run", "--policy", "huge", "--",
						"/usr/bin/env", NULL });
	run_cmd(&out->status, &o, (char *const[]){ thpctl_path, "status", "-p",
						   FMT(pid, "%d", (int)getppid()), NULL });
	_exit(0);
}

/*
 * Without /proc, thpctl from the build tree still takes the build tree's
 * preload (found from AT_EXECFN, not a /proc lookup that falls back to the
 * installed one), and status on another process says /proc is missing.
 */
START_TEST(without_proc)
{
	char *preload = realpath(env_path("THP_PRELOAD"), NULL);
	char libdir[PATH_MAX + 32], want[PATH_MAX + 64], *line;
	/*
	 * A sanitized thpctl reads its options from /proc/self/environ and
	 * its leak check at exit needs /proc: without /proc that check fails
	 * the exit status (1) after thpctl's own work is done.  (run execs.)
	 */
	const char *sanitize = getenv("THPCTL_SANITIZE");
	const bool sanitized = sanitize && *sanitize && strcmp(sanitize, "none");
	struct noproc_runs *res = mmap(NULL, sizeof(*res), PROT_READ | PROT_WRITE,
				       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	pid_t child;

	ck_assert_ptr_ne(res, MAP_FAILED);
	ck_assert_ptr_nonnull(preload);
	/* ld.so resolves the build tree's $ORIGIN rpath through /proc: name the directory. */
	FMT(libdir, "LD_LIBRARY_PATH=%s", env_path("LIBTHP_SO"));
	*strrchr(libdir, '/') = 0;
	fflush(NULL);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0)
		noproc_child(res, libdir);
	ck_assert_int_eq(wait_status(child), 0);
	if (res->setup) {
		ck_assert_msg(res->setup == EPERM && getuid() != 0 && !in_ci(),
			      "cannot unmount /proc in a private namespace: %s",
			      strerror(res->setup));
		fprintf(stderr, "without_proc: not checked: unmounting /proc needs root\n");
		free(preload);
		return;
	}
	ck_assert_msg(!res->proc_still_there, "something is still mounted on /proc");

	if (!sanitized || !strstr(res->probe.err, "LeakSanitizer has encountered a fatal error"))
		assert_exit(&res->probe, 0);
	ck_assert_msg(strstr(res->probe.out, FMT(want, "preload: available (%s ", preload)),
		      "probe does not offer the build tree's preload %s:\n%.3000s", preload,
		      res->probe.out);

	assert_exit(&res->run, 0);
	/* A kernel that keeps HUGE across exec needs no preload; any preload is ours. */
	line = strstr(res->run.out, "LD_PRELOAD=");
	FMT(want, "LD_PRELOAD=%s\n", preload);
	if (line)
		ck_assert_msg(!strncmp(line, want, strlen(want)), "run took another preload: %.300s",
			      line);

	if (sanitized) {
		assert_exit(&res->status, 1);
		ck_assert_msg(strstr(res->status.err, "thpctl: status: ") &&
			      strstr(res->status.err, "/proc is not mounted"), "%.1000s",
			      res->status.err);
	} else {
		assert_error(&res->status, 1, "/proc is not mounted");
	}
	free(preload);
	munmap(res, sizeof(*res));
}
END_TEST

START_TEST(exited_target)
{
	struct target t;
	struct run r;
	char pid[16], good[64];
	int st;

	target_start(&t, NULL);
	FMT(pid, "%d", (int)t.pid);
	FMT(good, "0x%llx+8M", (unsigned long long)t.region);
	close(t.in);
	t.in = -1;
	wait_zombie(t.pid);
	thpctl(&r, "apply", "-p", pid, "--advice", "collapse", good, NULL);
	assert_exit(&r, 1);
	ck_assert_msg(strstr(r.err, "exited") || strstr(r.err, "no such process"), "%s", r.err);
	thpctl(&r, "apply", "-p", pid, "--advice", "collapse", "--all", "--skip-errors", NULL);
	assert_exit(&r, 1);
	ck_assert_msg(strstr(r.err, "exited") || strstr(r.err, "no such process"), "%s", r.err);
	thpctl(&r, "status", "-p", pid, NULL);
	assert_exit(&r, 1);
	ck_assert_msg(strstr(r.err, "exited") || strstr(r.err, "no such process"), "%s", r.err);
	ck_assert_str_eq(r.out, "");
	ck_assert_int_eq(waitpid(t.pid, &st, 0), t.pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "target status 0x%x", st);
}
END_TEST

/* target_start() and the target's PID as an argument. */
static const char *target_start_arg(struct target *t, const char *mode, char *pid, size_t len)
{
	target_start(t, mode);
	snprintf(pid, len, "%d", (int)t->pid);
	return pid;
}

/* --skip-errors and every range or mapping failed: 1 (nothing advised), not 3. */
START_TEST(apply_nothing_advised)
{
	struct target t, never;
	struct run r;
	char pid[16], bad[64];

	require_madvise_mode();
	target_start_arg(&t, NULL, pid, sizeof(pid));
	thpctl(&r, "apply", "--advice", "collapse", "-p", pid, "--skip-errors",
	       FMT(bad, "0x%llx+4M", (unsigned long long)t.nohuge), NULL);
	assert_error(&r, 1, "1 of 1 ranges failed, nothing was advised");
	thpctl(&r, "apply", "--advice", "collapse", "-p", pid, "--skip-errors", "--json", bad, NULL);
	assert_exit(&r, 1);
	json_check(r.out, "assert d['exit_status'] == 1 and d['ranges_ok'] == 0\n");
	assert_target_unchanged(&t);
	target_stop(&t);

	/* THP disabled: the kernel refuses every mapping, and thpctl says why. */
	thpctl(&r, "apply", "--advice", "collapse", "-p",
	       target_start_arg(&never, "never", pid, sizeof(pid)), "--all", "--skip-errors", NULL);
	assert_error(&r, 1, "nothing was advised");
	ck_assert_msg(strstr(r.err, "THP is disabled for process") &&
		      !strstr(r.err, "Invalid argument"), "%s", r.err);
	ck_assert_uint_eq(vma_anon_huge(never.pid, never.region), 0);
	thpctl(&r, "apply", "--advice", "collapse", "-p", pid, "--all", NULL);
	assert_error(&r, 1, "THP is disabled for process");
	target_stop(&never);
}
END_TEST

/* Without CAP_SYS_NICE another process's memory cannot be advised: say so. */
START_TEST(apply_eperm_names_capability)
{
	/* Root drops to nobody for both sides; anyone else is already without it. */
	struct spawn_opts o = { .uid = geteuid() == 0 ? 65534 : 0, .stdout_fd = -1 };
	const char *argv[] = { env_path("THPCTL_TARGET"), NULL, NULL, NULL, NULL, NULL, NULL, NULL };
	uint64_t region = 0;
	int in[2], out, err;
	char line[256], pid[16];
	struct run r;
	ssize_t n;
	pid_t tp;

	ck_assert(pipe2(in, O_CLOEXEC) == 0);
	o.stdin_fd = in[0];
	tp = spawn((char *const *)argv, &o, &out, &err);
	close(in[0]);
	n = read(out, line, sizeof(line) - 1);
	ck_assert_msg(n > 0, "target printed nothing");
	line[n] = '\0';
	ck_assert(sscanf(line, "%lx", (unsigned long *)&region) == 1);
	FMT(pid, "%d", (int)tp);
	o.stdin_fd = -1;
	argv[0] = env_path("THPCTL");
	argv[1] = "apply";
	argv[2] = "--advice";
	argv[3] = "collapse";
	argv[4] = "-p";
	argv[5] = pid;
	argv[6] = "--all";
	run_cmd(&r, &o, (char *const *)argv);
	assert_error(&r, 1, "needs CAP_SYS_NICE");
	ck_assert_msg(strstr(r.err, "ptrace"), "%s", r.err);
	ck_assert_uint_eq(vma_anon_huge(tp, region), 0);
	close(in[1]);
	close(out);
	close(err);
	kill(tp, SIGKILL);
	wait_status(tp);
}
END_TEST

/* A kernel thread (no mm): no policy to show, nothing to advise. */
START_TEST(kernel_thread)
{
	char path[64], stat[512], *p;
	pid_t kthread = 0;
	struct run r;
	char pid[16];

	/* kthreadd is 2 outside a PID namespace; find one anyway. */
	for (pid_t cand = 2; cand < 4096 && !kthread; cand++) {
		unsigned long flags;
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/stat", (int)cand);
		f = fopen(path, "re");
		if (!f)
			continue;
		p = fgets(stat, sizeof(stat), f) ? strrchr(stat, ')') : NULL;
		if (p && sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %lu", &flags) == 1 &&
		    (flags & 0x00200000UL))
			kthread = cand;
		fclose(f);
	}
	if (!kthread) {
		ck_assert_msg(!in_ci(), "no kernel thread visible in /proc (CI=true: no skipping)");
		return;
	}
	FMT(pid, "%d", (int)kthread);
	thpctl(&r, "status", "-p", pid, NULL);
	assert_error(&r, 1, "is a kernel thread: it has no user memory");
	ck_assert_str_eq(r.out, "");
	thpctl(&r, "apply", "-p", pid, "--advice", "collapse", "--all", NULL);
	assert_error(&r, 1, "is a kernel thread");
	ck_assert_str_eq(r.out, "");
}
END_TEST

/*
 * thpctl runs natively even when this program runs under valgrind, so its
 * probe output is compared with a native thp_probe(): under valgrind the
 * probe cases run in a native re-execution of this program.
 */
START_TEST(probe_natively)
{
	run_tcase_natively("probe");
}
END_TEST

NATIVE_TCASE_TEST(native_natively, "native")
NATIVE_TCASE_TEST(native_privileged_natively, "native-privileged")

static Suite *thpctl_suite(void)
{
	Suite *s = suite_create("thpctl");
	TCase *tc = tcase_create("thpctl");
	TCase *probe = tcase_create("probe");

	tcase_set_timeout(probe, 60);
	if (under_valgrind()) {
		tcase_add_test(probe, probe_natively);
	} else {
		tcase_add_test(probe, probe_text);
		tcase_add_test(probe, probe_json);
	}
	suite_add_tcase(s, probe);

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, help_version);
	tcase_add_test(tc, usage_errors);
	tcase_add_test(tc, run_policy_twice);
	tcase_add_test(tc, status_remote_text);
	tcase_add_test(tc, status_remote_json);
	tcase_add_test(tc, status_never);
	tcase_add_test(tc, status_self);
	tcase_add_test(tc, apply_remote_huge_refused);
	tcase_add_test(tc, apply_remote_inject);
	tcase_add_test(tc, policy_remote);
	tcase_add_test(tc, apply_self);
	tcase_add_test(tc, apply_bad_ranges);
	tcase_add_test(tc, bad_pids);
	tcase_add_test(tc, exited_target);
	tcase_add_test(tc, apply_eperm_names_capability);
	tcase_add_test(tc, kernel_thread);
	suite_add_tcase(s, tc);

	/*
	 * Collapsing another process's memory (CAP_SYS_NICE) and unmounting
	 * /proc in a private mount namespace: root only.
	 */
	tc = tcase_create("thpctl-privileged");
	tcase_set_tags(tc, PRIVILEGED_TAG);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, apply_remote_collapse);
	tcase_add_test(tc, apply_remote_collapse_json);
	tcase_add_test(tc, apply_partial);
	tcase_add_test(tc, apply_all_remote);
	tcase_add_test(tc, apply_nothing_advised);
	suite_add_tcase(s, tc);

	/*
	 * Native only under valgrind: it cannot size the long-named child's
	 * maps line, and a valgrind'ed thpctl without /proc cannot run.
	 */
	tc = tcase_create("native");
	tcase_set_timeout(tc, 60);
	if (under_valgrind())
		tcase_add_test(tc, native_natively);
	else
		tcase_add_test(tc, status_long_name);
	suite_add_tcase(s, tc);
	tc = tcase_create("native-privileged");
	tcase_set_tags(tc, PRIVILEGED_TAG);
	tcase_set_timeout(tc, 60);
	if (under_valgrind())
		tcase_add_test(tc, native_privileged_natively);
	else
		tcase_add_test(tc, without_proc);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(thpctl_suite());
}
