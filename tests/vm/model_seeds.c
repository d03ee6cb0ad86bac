// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Guest check: tests/model's checker (the host's thp_model program) on this
 * kernel, its fixed seeds and the seeds of divergences it found in guests,
 * and its remote mode (the requests on a target child's pidfd).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vm_check.h"

/*
 * tests/model's checker on this kernel: a fixed set of seeds through every
 * backend and walk mode the kernel has, in the boot's THP mode.  Its last
 * line says how many cases ran, in how long, and how many diverged.
 */
#define VM_MODEL_CASES "20"
/*
 * The remote mode's fixed seeds: fewer, each case builds its layout again
 * for every backend in a target child; the 1,000-case runs per kernel are
 * the long mode's (doc/results/model-long-runs.md).
 */
#define VM_MODEL_REMOTE_CASES "10"

/*
 * The long mode (run_vm.sh with THP_MODEL_VM_CASES=N): thp_model_cases=N
 * and thp_model_first=S on the kernel command line, and only the model
 * checker runs (thp_model_only), in remote mode with thp_model_remote.
 */
static char conf_model[256], model_cases[24] = VM_MODEL_CASES, model_first[48];
static bool model_only;

/*
 * Seeds replayed on top, each a divergence the checker found in a guest:
 * 29 is issue 11's defect 2 on the RFC kernels (thp_apply_all() through
 * PMADV_ENTIRE_ADDRESS_SPACE counted 39 mappings of 41, after the merge).
 * Policy sequences on the RFC kernels: 45, a PMADV default set through
 * PMADV_ENTIRE_ADDRESS_SPACE advised every mapping itself and reported
 * mappings_changed 0; 50, it advised them under THP_DEFAULT_F_NO_EXISTING
 * too; 104, NOHUGE (RFC prctl), NEVER, then SYSTEM failed and left
 * PR_SET_THP_DISABLE cleared.  A seed builds its case from what the
 * kernel offers, so elsewhere it is just one more random case.
 */
static const char *const vm_model_regressions[] = { "THP_MODEL_SEED=29", "THP_MODEL_SEED=45",
						    "THP_MODEL_SEED=50",
						    "THP_MODEL_SEED=104" };

/* One thp_model run; its summary line, and on failure everything it printed. */
static void model_run(char *const envp[], char *cases)
{
	static char out[65536];
	char *argv[] = { conf_model, cases, NULL };
	char *env[3] = { envp[0], NULL, NULL };
	const char *last, *times;
	int st;

	/* The fixed seeds start at 1; the long mode may start elsewhere. */
	if (model_first[0] && !(envp[0] && !strncmp(envp[0], "THP_MODEL_SEED=", 15)))
		env[envp[0] ? 1 : 0] = model_first;
	st = run_capture(argv, env, out, sizeof(out));
	last = strstr(out, "thp_model: kernel");
	while (last && strstr(last + 1, "thp_model: kernel"))
		last = strstr(last + 1, "thp_model: kernel");
	printf("VMTEST INFO model: %s%s%.*s\n", envp[0] ? envp[0] : "", envp[0] ? " " : "",
	       last ? (int)strcspn(last, "\n") : 0, last ? last : "");
	times = strstr(out, "thp_model: time by kind:");
	if (times)
		printf("VMTEST INFO model: %.*s\n", (int)strcspn(times, "\n"), times);
	if (st != 0) {
		/* run_vm.sh keeps VMTEST lines only: the divergence and its reproducer. */
		for (char *l = strtok(out, "\n"); l; l = strtok(NULL, "\n"))
			printf("VMTEST INFO model| %s\n", l);
		fail("model", "thp_model %s exit %d", envp[0] ? envp[0] : "", st);
	}
}

void check_model(const char *model, const char *cases, const char *first, bool only, bool remote)
{
	int before = nfail;
	char *none[] = { NULL }, *remote_env[] = { (char *)"THP_MODEL_REMOTE=1", NULL };
	char remote_cases[] = VM_MODEL_REMOTE_CASES;

	snprintf(conf_model, sizeof(conf_model), "%s", model ? model : "");
	if (cases)
		snprintf(model_cases, sizeof(model_cases), "%s", cases);
	if (first)
		snprintf(model_first, sizeof(model_first), "THP_MODEL_FIRST_SEED=%s", first);
	model_only = only;
	if (!conf_model[0]) {
		fail("model", "thp_model missing from /vmtest.conf");
		return;
	}
	if (model_only) {
		model_run(remote ? remote_env : none, model_cases);
		goto out;
	}
	model_run(none, model_cases);
	for (size_t i = 0; i < sizeof(vm_model_regressions) / sizeof(vm_model_regressions[0]); i++) {
		char *env[] = { (char *)vm_model_regressions[i], NULL };

		model_run(env, model_cases);
	}
	model_run(remote_env, remote_cases);
out:
	if (nfail == before)
		pass("model");
}
