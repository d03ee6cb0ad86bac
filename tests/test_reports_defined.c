// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * thp_apply_ranges()'s reports (and thp_apply_all()'s results) after each
 * class of return, poisoned beforehand: tests/reports_defined.c.  The QEMU
 * guests run this program too.
 */
#include <check.h>
#include <stdlib.h>

#include <thp/thp.h>

#include "helpers.h"
#include "reports_defined.h"

START_TEST(each_class)
{
	const struct reports_defined_case *c = &reports_defined_cases[_i];
	char why[1024] = "";

	ck_assert_msg(c->run(why, sizeof(why)) == 0, "%s: %s", c->name, why);
}
END_TEST

static Suite *reports_defined_suite(void)
{
	Suite *s = suite_create("reports_defined");
	TCase *tc = tcase_create("core");

	tcase_add_loop_test(tc, each_class, 0, (int)reports_defined_nr_cases);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return run_suite(reports_defined_suite());
}
