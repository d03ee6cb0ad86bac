// SPDX-License-Identifier: LGPL-2.1-or-later
/* thp_model's shrinker: a diverging case reduced to the fewest mappings, ranges and calls. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "checker.h"

/* ---- shrinking: fewest mappings, fewest ranges, same divergence ---- */

/*
 * Each of the *nr items of @items (ranges or calls) left out in turn, and
 * kept out while the case still diverges; at least one stays.  True when
 * one was dropped.
 */
static bool drop_each(struct case_spec *c, void *items, size_t *nr, size_t size, char *msg,
		      size_t cap)
{
	unsigned char saved[32], *it = items;
	bool dropped = false;
	char m2[1200];

	if (size > sizeof(saved))
		return false;
	for (size_t i = 0; *nr > 1 && i < *nr; i++) {
		memcpy(saved, it + i * size, size);
		memmove(it + i * size, it + (i + 1) * size, (*nr - i - 1) * size);
		(*nr)--;
		if (run_case(c, m2, sizeof(m2)) == 1) {
			snprintf(msg, cap, "%s", m2);
			dropped = true;
			i--;
			continue;
		}
		memmove(it + (i + 1) * size, it + i * size, (*nr - i) * size);
		memcpy(it + i * size, saved, size);
		(*nr)++;
	}
	return dropped;
}

void shrink(struct case_spec *c, char *msg, size_t cap)
{
	char m2[1200];
	bool progress = true;

	while (progress) {
		progress = false;
		/* Halve the ranges first: 10,000 one at a time would take long. */
		while (c->nr_ranges > 8) {
			size_t keep = c->nr_ranges;

			c->nr_ranges /= 2;
			if (run_case(c, m2, sizeof(m2)) == 1) {
				snprintf(msg, cap, "%s", m2);
				progress = true;
				continue;
			}
			/* Or the second half. */
			memmove(c->ranges, c->ranges + c->nr_ranges,
				(keep - c->nr_ranges) * sizeof(*c->ranges));
			c->nr_ranges = keep - c->nr_ranges;
			if (run_case(c, m2, sizeof(m2)) == 1) {
				snprintf(msg, cap, "%s", m2);
				progress = true;
				continue;
			}
			c->nr_ranges = keep; /* ranges now rotated: the set is the same */
			break;
		}
		if (c->nr_ranges <= 64)
			progress |= drop_each(c, c->ranges, &c->nr_ranges, sizeof(*c->ranges), msg, cap);
		/* Fewest calls: a policy sequence without each call in turn. */
		progress |= drop_each(c, c->steps, &c->nr_steps, sizeof(*c->steps), msg, cap);
		for (size_t i = 0; i < c->nr_maps; i++) {
			struct map_spec saved = c->maps[i];

			if (!c->maps[i].present)
				continue;
			c->maps[i].present = false;
			if (run_case(c, m2, sizeof(m2)) == 1) {
				snprintf(msg, cap, "%s", m2);
				progress = true;
				continue;
			}
			/* Or a plainer one: no pre-advice, guard, seal, population. */
			c->maps[i] = saved;
			if (saved.pre || saved.guard_page || saved.seal || saved.populate_every) {
				c->maps[i].pre = 0;
				c->maps[i].guard_page = 0;
				c->maps[i].seal = false;
				c->maps[i].populate_every = 0;
				if (run_case(c, m2, sizeof(m2)) == 1) {
					snprintf(msg, cap, "%s", m2);
					progress = true;
					continue;
				}
				c->maps[i] = saved;
			}
		}
	}
}
