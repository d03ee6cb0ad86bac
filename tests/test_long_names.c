// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * A mapping name is the target's data: a file path can make its
 * /proc/PID/maps and smaps line longer than libthp's 8 KiB line buffer
 * (nested directories, newlines shown as \012), with a tail that reads as
 * the header of a 1 GiB mapping.  The walk of maps (thp_apply_all) and
 * thp_query() must see the real mapping with its real range, and never the
 * forged one.  (White-box for the walk: it has no public view of its own.)
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"
#include "helpers.h"

/* The child's mapping as thp_query() lists it; none at the forged address. */
START_TEST(query_long_name)
{
	static struct thp_mapping_state st[4096];
	struct long_name_child c;
	bool real = false;
	int pidfd, r;

	long_name_child_start(&c);
	pidfd = (int)syscall(SYS_pidfd_open, c.pid, 0);
	ck_assert_int_ge(pidfd, 0);
	{
		THP_OPTS(thp_query_opts, q, .pidfd = pidfd, .states = st,
			 .states_cap = sizeof(st) / sizeof(st[0]));

		r = thp_query(&q);
		ck_assert_msg(r > 0, "thp_query: %d (%s: %s)", r, thp_strerror(r),
			      thp_strerror_detail());
		ck_assert_uint_eq((size_t)r, q.states_needed);
	}
	for (int i = 0; i < r; i++) {
		ck_assert_msg(st[i].start != LONG_NAME_FORGED_START,
			      "thp_query lists the forged mapping 0x%llx-0x%llx \"%s\"",
			      (unsigned long long)st[i].start, (unsigned long long)st[i].end,
			      st[i].name);
		if (st[i].start == c.start) {
			real = true;
			ck_assert_uint_eq(st[i].end, c.end);
			ck_assert(!st[i].anonymous);
			ck_assert_msg(!strncmp(st[i].name, "/tmp/thp-longname-", 18),
				      "name \"%s\"", st[i].name);
			ck_assert(memchr(st[i].name, 0, sizeof(st[i].name)));
		}
	}
	ck_assert_msg(real, "thp_query lost the long-named mapping 0x%llx-0x%llx",
		      (unsigned long long)c.start, (unsigned long long)c.end);
	close(pidfd);
	long_name_child_stop(&c);
}
END_TEST

/* Both walk modes (maps text, PROCMAP_QUERY) see the real range only. */
START_TEST(walk_long_name)
{
	struct long_name_child c;
	struct thp_target t;
	int pidfd;

	long_name_child_start(&c);
	pidfd = (int)syscall(SYS_pidfd_open, c.pid, 0);
	ck_assert_int_ge(pidfd, 0);
	ck_assert_int_eq(target_open(pidfd, &t), 0);
	for (int full = 1; full >= 0; full--) {
		struct thp_vma_walk *w = malloc(sizeof(*w));
		struct thp_vma v;
		uint64_t addr = 0;
		bool real = false;
		int r;

		ck_assert_int_eq(vma_walk_open(w, &t, full), 0);
		while ((r = vma_walk_next(w, addr, &v)) == 1) {
			ck_assert_msg(v.start != LONG_NAME_FORGED_START,
				      "%s walk found the forged mapping",
				      w->use_query ? "PROCMAP_QUERY" : "text");
			if (v.start == c.start) {
				real = true;
				ck_assert_uint_eq(v.end, c.end);
			}
			addr = v.end;
		}
		ck_assert_int_eq(r, 0);
		ck_assert_msg(real, "%s walk lost the long-named mapping",
			      w->use_query ? "PROCMAP_QUERY" : "text");
		vma_walk_close(w);
		free(w);
	}
	target_close(&t);
	close(pidfd);
	long_name_child_stop(&c);
}
END_TEST

/*
 * Under valgrind the child's own maps line cannot be sized to put the forged
 * entry at byte 8192 (valgrind places and reports its mappings itself).
 */
NATIVE_TCASE_TEST(long_names_natively, "long_names")

int main(void)
{
	Suite *s = suite_create("long_names");
	TCase *tc = tcase_create("long_names");

	if (under_valgrind()) {
		tcase_add_test(tc, long_names_natively);
	} else {
		tcase_add_test(tc, query_long_name);
		tcase_add_test(tc, walk_long_name);
	}
	suite_add_tcase(s, tc);
	return run_suite(s);
}
