/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What thp_apply_ranges() leaves in its reports (and thp_apply_all() in its
 * results) after each class of return, with every output poisoned (0xa5)
 * first.  Plain C, run by tests/test_reports_defined.c (on the host and in
 * every QEMU guest).
 */
#ifndef THP_TESTS_REPORTS_DEFINED_H
#define THP_TESTS_REPORTS_DEFINED_H

#include <stddef.h>

struct reports_defined_case {
	const char *name;
	/* 0 when the outputs are as thp_apply_ranges(3) says; else -1 and why. */
	int (*run)(char *why, size_t cap);
};

extern const struct reports_defined_case reports_defined_cases[];
extern const size_t reports_defined_nr_cases;

#endif
