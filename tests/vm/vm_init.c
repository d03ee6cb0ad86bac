// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * /init of the QEMU test guests (tests/vm/run_vm.sh): a runner.  It runs
 * the host's own test programs that run_vm.sh put in the initramfs (listed
 * in /vmtest.conf as test=PATH, with the libraries they link or static),
 * then the checks only a guest can make, one file each (vm_check.h lists
 * them): those that compare libthp against what this kernel's version and
 * flavour (thp_flavour=stock|rfc|rfc-fixed|distro, thp_kernel=<label> on
 * the kernel command line) should give, as written down in
 * shared/kernels/distro/README.md, and those that switch the global THP
 * mode.  Each result is one line on the serial console, "VMTEST PASS
 * <name>" or "VMTEST FAIL <name>: <why>", then "VMTEST DONE", and the
 * machine powers off.
 *
 * "/init --child [rfc]" is the exec'd child of the set_default checks: it
 * prints its thp_get_default() policy and a fresh mapping's VmFlags.
 *
 * Built with gcc -m32 (tests/vm/run_vm32.sh, -DVM_INIT_LIB_ONLY) it runs the
 * host programs (built -m32 -static) and the library checks as 32-bit
 * programs on the kernel's IA32 emulation; thpctl, the preload and
 * thp_model, dynamically linked 64-bit programs, are the 64-bit runs' part.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "vm_check.h"

/* /vmtest.conf (run_vm.sh): NAME=PATH, one a line; test=PATH may repeat. */
#define MAX_TESTS 24
static char conf_buf[8192];
static const char *conf_thpctl, *conf_preload, *conf_child_report, *conf_model, *conf_target32;
static const char *conf_toucher; /* mthp_toucher, for check_mthp() */
static const char *conf_cases;   /* tests/model/cases.txt, for the bindings' tests */
static const char *host_tests[MAX_TESTS];
static size_t nr_host_tests;

static void read_conf(void)
{
	char *line, *save = NULL;

	if (read_file("/vmtest.conf", conf_buf, sizeof(conf_buf)) <= 0)
		return;
	for (line = strtok_r(conf_buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *v = strchr(line, '=');

		if (!v)
			continue;
		*v++ = 0;
		if (!strcmp(line, "thpctl"))
			conf_thpctl = v;
		else if (!strcmp(line, "preload"))
			conf_preload = v;
		else if (!strcmp(line, "child_report"))
			conf_child_report = v;
		else if (!strcmp(line, "model"))
			conf_model = v;
		else if (!strcmp(line, "toucher"))
			conf_toucher = v;
		else if (!strcmp(line, "target32"))
			conf_target32 = v;
		else if (!strcmp(line, "cases"))
			conf_cases = v;
		else if (!strcmp(line, "test") && nr_host_tests < MAX_TESTS)
			host_tests[nr_host_tests++] = v;
		else if (!strcmp(line, "test"))
			fail("host_tests", "more than %d test=PATH lines: %s not run", MAX_TESTS, v);
	}
}

/* "test_foo" from "/path/to/test_foo". */
static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/*
 * The host's test programs, as meson runs them there (CK_FORK=yes), under
 * "madvise" as on the host; each case may take ten times its host timeout
 * (TCG).  The pass line carries Check's summary; a failure carries all
 * that the program printed (run_vm.sh keeps VMTEST lines only).  A skip
 * fails: exit 77 here, THP_TEST_NO_SKIP=1 for the Go tests (whose skipped
 * tests exit 0); THP_CASES names the case table (cases=PATH) if sent.
 */
static void run_host_tests(void)
{
	static char out[1 << 16];
	char child_report_env[300], cases_env[300];
	char *envp[] = { (char *)"CK_FORK=yes", (char *)"CK_TIMEOUT_MULTIPLIER=10",
			 (char *)"THP_TEST_PRIVILEGED=1", (char *)"THP_TEST_NO_SKIP=1",
			 child_report_env, conf_cases ? cases_env : NULL, NULL };

	snprintf(child_report_env, sizeof(child_report_env), "THP_CHILD_REPORT=%s",
		 conf_child_report ? conf_child_report : "");
	snprintf(cases_env, sizeof(cases_env), "THP_CASES=%s", conf_cases ? conf_cases : "");
	printf("VMTEST INFO host test programs:");
	for (size_t i = 0; i < nr_host_tests; i++)
		printf(" %s", base_name(host_tests[i]));
	printf("\n");
	if (!nr_host_tests)
		fail("host_tests", "no test=PATH in /vmtest.conf");
	if (set_sysfs_mode(THP_MODE_MADVISE))
		fail("host_tests", "cannot set the global THP mode to madvise");
	for (size_t i = 0; i < nr_host_tests; i++) {
		char name[96], *argv[] = { (char *)host_tests[i], NULL };
		struct timespec t0, t1;
		int st;
		const char *sum;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		st = run_capture(argv, envp, out, sizeof(out));
		clock_gettime(CLOCK_MONOTONIC, &t1);
		sum = strstr(out, "Checks: ");
		snprintf(name, sizeof(name), "host:%s", base_name(host_tests[i]));
		if (st == 0) {
			/* A program that reports figures (mthp_policy_table) prints TABLE lines. */
			for (char *l = out; (l = strstr(l, "TABLE ")); l++)
				if (l == out || l[-1] == '\n')
					printf("VMTEST TABLE %.*s\n", (int)strcspn(l + 6, "\n"), l + 6);
			printf("VMTEST PASS %s: %.*s (%.1f s)\n", name,
			       sum ? (int)strcspn(sum, "\n") : 0, sum ? sum : "",
			       (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
			continue;
		}
		for (char *l = strtok(out, "\n"); l; l = strtok(NULL, "\n"))
			printf("VMTEST INFO %s| %s\n", name, l);
		fail(name, "exit %d%s", st, st == 77 ? " (skipped: no skip in the guest)" : "");
	}
	if (set_sysfs_mode(boot_mode))
		fail("host_tests", "cannot restore the global THP mode");
}

static void setup_console(void)
{
	int fd;

	if (fcntl(1, F_GETFD) >= 0)
		return;
	mkdir("/dev", 0755);
	mknod("/dev/console", S_IFCHR | 0600, makedev(5, 1));
	fd = open("/dev/console", O_RDWR);
	if (fd >= 0) {
		dup2(fd, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		if (fd > 2)
			close(fd);
	}
}

/* The value of @key= on the kernel command line, into @buf; false if absent. */
static bool cmdline_arg(const char *cmdline, const char *key, char *buf, size_t cap)
{
	const char *f = strstr(cmdline, key);

	if (!f)
		return false;
	f += strlen(key);
	snprintf(buf, cap, "%.*s", (int)strcspn(f, " \n"), f);
	return true;
}

static bool parse_flavour(const char *f)
{
	static const struct { const char *name; enum flavour fl; } names[] = {
		{ "rfc-fixed", FL_RFC_FIXED }, { "rfc", FL_RFC }, { "stock", FL_STOCK },
		{ "distro", FL_DISTRO },
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(f, names[i].name)) {
			flavour = names[i].fl;
			flavour_name = names[i].name;
			rfc = flavour == FL_RFC || flavour == FL_RFC_FIXED;
			return true;
		}
	return false;
}

int main(int argc, char **argv)
{
	static char cmdline[4096];
	char fl[32];

	if (argc > 1 && !strcmp(argv[1], "--child"))
		return child_main(argc, argv);

	setup_console();
	mkdir("/proc", 0555);
	mkdir("/sys", 0555);
	/* Check's temporary files (CK_FORK), test_walk_modes' scratch file. */
	mkdir("/tmp", 01777);
	mkdir("/var", 0755);
	mkdir("/var/tmp", 01777);
	mount("proc", "/proc", "proc", 0, NULL);
	mount("sysfs", "/sys", "sysfs", 0, NULL);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("\nVMTEST START\n");

	if (read_file("/proc/cmdline", cmdline, sizeof(cmdline)) <= 0 ||
	    !cmdline_arg(cmdline, "thp_flavour=", fl, sizeof(fl))) {
		fail("flavour", "no thp_flavour= on the kernel command line");
		goto done;
	}
	if (!parse_flavour(fl)) {
		fail("flavour", "unknown thp_flavour");
		goto done;
	}
	cmdline_arg(cmdline, "thp_kernel=", kernel_label, sizeof(kernel_label));
	printf("VMTEST INFO flavour %s libthp %s\n", flavour_name, thp_version());
	kernel_expect_init();
	boot_mode = cur_mode = sysfs_mode();
	printf("VMTEST INFO boot THP mode %s\n", boot_mode < 3 ? mode_names[boot_mode] : "unknown");

	read_conf();
#ifndef VM_INIT_LIB_ONLY
	{
		char cases[24], first[24];
		bool has_cases = cmdline_arg(cmdline, "thp_model_cases=", cases, sizeof(cases));
		bool has_first = cmdline_arg(cmdline, "thp_model_first=", first, sizeof(first));

		/* The model checker's long mode (run_vm.sh, THP_MODEL_VM_CASES). */
		if (strstr(cmdline, "thp_model_only")) {
			check_model(conf_model, has_cases ? cases : NULL, has_first ? first : NULL, true,
				    strstr(cmdline, "thp_model_remote") != NULL);
			goto done;
		}
		/* The folio-size check alone (run_vm.sh, THP_VM_ONLY=mthp): for working on it. */
		if (strstr(cmdline, "thp_only=mthp")) {
			check_mthp(conf_thpctl, conf_preload, conf_toucher);
			goto done;
		}
	}
#endif
	/* The host programs alone (run_vm.sh, THP_VM_ONLY=host): a binding's
	 * tests, whose kernel the full vm-<kernel> test already checks. */
	if (strstr(cmdline, "thp_only=host")) {
		run_host_tests();
		goto done;
	}
	run_host_tests();
	check_abi();
	check_probe();
	check_apply_ranges();
	report_auto_backends();
	check_apply_all();
	check_apply_all_merged_counts();
	check_set_default();
	check_collapse();
#ifdef VM_INIT_LIB_ONLY
	printf("VMTEST INFO %zu-bit run: thpctl, the preload and thp_model are the 64-bit runs' "
	       "part\n", 8 * sizeof(void *));
#else
	check_thpctl(conf_thpctl, conf_preload, conf_child_report);
	check_mthp(conf_thpctl, conf_preload, conf_toucher);
	check_inject_policies();
	check_inject_32bit(conf_target32);
#endif
	if (set_sysfs_mode(boot_mode))
		fail("set_mode", "cannot restore the global THP mode");
	if (rfc) {
		check_rfc_interfaces();
		check_policy_sequences();
	} else {
		check_set_default_stock();
	}
#ifndef VM_INIT_LIB_ONLY
	/* Last: hundreds of processes and a few hundred MiB touched in the guest. */
	check_model(conf_model, NULL, NULL, false, false);
#endif
done:
	printf("VMTEST DONE (%d failed)\n", nfail);
	fflush(stdout);
	sync();
	reboot(RB_POWER_OFF);
	for (;;)
		pause();
}
