/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The C runner of the shared case table (tests/model/cases.txt, whose
 * header gives the format): each case against the library and smaps, and
 * each case with valid input against the reference model, so that the
 * table the bindings run says what the model says.
 *
 *     thp_cases FILE
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <thp/thp.h>

#include "model.h"

#define PAGE 4096u
#define ARENA_PAGES 1024u
#define MAX_ITEMS 16

struct span {
	uint64_t first, n;
	char what[4]; /* "hg", "nh", "-" or "" */
};

struct want_report {
	uint64_t pos, len, advised, unmapped, fail;
	bool has_fail;
	int error, attempted;
};

struct tcase {
	char name[64];
	int line;
	struct span maps[MAX_ITEMS], flags[MAX_ITEMS];
	size_t nr_maps, nr_flags, nr_ranges, nr_reports;
	int advice;
	uint32_t flag_bits, backend;
	uint64_t range_pos[MAX_ITEMS], range_len[MAX_ITEMS];
	int ret;
	char used[32];
	struct want_report reports[MAX_ITEMS];
};

static int failures;

static const struct {
	const char *name;
	int value;
} errnames[] = {
	{ "EINVAL", EINVAL },
	{ "ENOMEM", ENOMEM },
	{ "E2BIG", E2BIG },
	{ "EBADF", EBADF },
	{ "ESRCH", ESRCH },
	{ "EOPNOTSUPP", EOPNOTSUPP },
	{ "EPERM", EPERM },
	{ "ENOENT", ENOENT },
};

static void die(int line, const char *what)
{
	fprintf(stderr, "cases.txt:%d: %s\n", line, what);
	exit(2);
}

static int errno_of(const char *s, int line)
{
	if (!strcmp(s, "0"))
		return 0;
	for (size_t i = 0; i < sizeof(errnames) / sizeof(errnames[0]); i++)
		if (!strcmp(s, errnames[i].name))
			return errnames[i].value;
	die(line, "unknown errno name");
	return 0;
}

/* PAGES[+BYTES] in bytes. */
static uint64_t pos_of(const char *s, int line)
{
	char *end;
	uint64_t v = strtoull(s, &end, 0) * PAGE;

	if (end == s)
		die(line, "bad position");
	if (*end == '+')
		v += strtoull(end + 1, &end, 0);
	if (*end)
		die(line, "bad position");
	return v;
}

static uint64_t num(const char *s, int line)
{
	char *end;
	uint64_t v = strtoull(s, &end, 0);

	if (end == s || *end)
		die(line, "bad number");
	return v;
}

/* Reads the next case; false at the end of the file. */
static bool next_case(FILE *f, int *line, struct tcase *c)
{
	char buf[256];
	bool in = false;

	while (fgets(buf, sizeof(buf), f)) {
		char *tok[10];
		int n = 0;

		(*line)++;
		char *hash = strchr(buf, '#');
		if (hash)
			*hash = '\0';
		for (char *p = strtok(buf, " \t\n"); p && n < 10; p = strtok(NULL, " \t\n"))
			tok[n++] = p;
		if (!n)
			continue;
		if (!strcmp(tok[0], "case") && n == 2 && !in) {
			memset(c, 0, sizeof(*c));
			snprintf(c->name, sizeof(c->name), "%s", tok[1]);
			c->line = *line;
			in = true;
		} else if (!in) {
			die(*line, "directive outside a case");
		} else if (!strcmp(tok[0], "end") && n == 1) {
			return true;
		} else if (!strcmp(tok[0], "map") && (n == 3 || n == 4) && c->nr_maps < MAX_ITEMS) {
			struct span *s = &c->maps[c->nr_maps++];
			s->first = num(tok[1], *line);
			s->n = num(tok[2], *line);
			snprintf(s->what, sizeof(s->what), "%s", n == 4 ? tok[3] : "");
		} else if (!strcmp(tok[0], "flags") && n == 4 && c->nr_flags < MAX_ITEMS) {
			struct span *s = &c->flags[c->nr_flags++];
			s->first = num(tok[1], *line);
			s->n = num(tok[2], *line);
			snprintf(s->what, sizeof(s->what), "%s", tok[3]);
		} else if (!strcmp(tok[0], "apply") && n == 4) {
			c->advice = !strcmp(tok[1], "huge")	? THP_ADVICE_HUGE
				    : !strcmp(tok[1], "nohuge") ? THP_ADVICE_NOHUGE
								: (int)num(tok[1], *line);
			c->flag_bits = !strcmp(tok[2], "skip")	      ? THP_F_SKIP_ERRORS
				       : !strcmp(tok[2], "gaps")      ? THP_F_NO_ERROR_ON_UNMAPPED
				       : !strcmp(tok[2], "skip+gaps") ? THP_F_SKIP_ERRORS |
										THP_F_NO_ERROR_ON_UNMAPPED
								      : (uint32_t)num(tok[2], *line);
			c->backend = !strcmp(tok[3], "auto")	  ? THP_BACKEND_AUTO
				     : !strcmp(tok[3], "madvise") ? THP_BACKEND_MADVISE
								  : (uint32_t)num(tok[3], *line);
		} else if (!strcmp(tok[0], "range") && n == 3 && c->nr_ranges < MAX_ITEMS) {
			c->range_pos[c->nr_ranges] = pos_of(tok[1], *line);
			c->range_len[c->nr_ranges++] = pos_of(tok[2], *line);
		} else if (!strcmp(tok[0], "return") && n == 2) {
			c->ret = tok[1][0] == '-' ? -errno_of(tok[1] + 1, *line) : (int)num(tok[1], *line);
		} else if (!strcmp(tok[0], "used") && n == 2) {
			snprintf(c->used, sizeof(c->used), "%s", tok[1]);
		} else if (!strcmp(tok[0], "report") && n == 8 && c->nr_reports < MAX_ITEMS) {
			struct want_report *r = &c->reports[c->nr_reports++];
			r->pos = pos_of(tok[1], *line);
			r->len = pos_of(tok[2], *line);
			r->advised = pos_of(tok[3], *line);
			r->unmapped = pos_of(tok[4], *line);
			r->has_fail = strcmp(tok[5], "-") != 0;
			r->fail = r->has_fail ? pos_of(tok[5], *line) : 0;
			r->error = errno_of(tok[6], *line);
			r->attempted = (int)num(tok[7], *line);
		} else {
			die(*line, "bad directive");
		}
	}
	if (in)
		die(*line, "case without end");
	return false;
}

static void fail(const struct tcase *c, const char *who, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void fail(const struct tcase *c, const char *who, const char *fmt, ...)
{
	va_list ap;

	printf("FAIL %s (cases.txt:%d) %s: ", c->name, c->line, who);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	failures++;
}

/* The reports, return and backend against the table; base is the arena's address. */
static void compare(const struct tcase *c, const char *who, uint64_t base, int ret,
		    unsigned int used, const struct thp_report *rep)
{
	if (ret != c->ret)
		fail(c, who, "returned %d, table %d", ret, c->ret);
	if (!strcmp(c->used, "none")  ? used != 0
	    : !strcmp(c->used, "any") ? used == 0
				      : strcmp(thp_backend_name(used), c->used) != 0)
		fail(c, who, "backend_used %s, table %s", thp_backend_name(used), c->used);
	for (size_t i = 0; i < c->nr_reports; i++) {
		const struct want_report *w = &c->reports[i];
		const struct thp_report *r = &rep[i];
		uint64_t fail_addr = w->has_fail ? base + w->fail : 0;

		if (r->addr != base + w->pos || r->len != w->len || r->bytes_advised != w->advised ||
		    r->bytes_unmapped != w->unmapped || r->fail_addr != fail_addr ||
		    r->error != w->error || (int)r->attempted != w->attempted || r->backend != used)
			fail(c, who,
			     "report %zu: addr +%#" PRIx64 " len %" PRIu64 " advised %" PRIu64
			     " unmapped %" PRIu64 " fail +%#" PRIx64 " error %d attempted %u backend %u",
			     i, r->addr - base, r->len, r->bytes_advised, r->bytes_unmapped,
			     r->fail_addr ? r->fail_addr - base : 0, r->error, r->attempted, r->backend);
	}
}

/* smaps VmFlags hg / nh of the mapping holding addr: bit 0 hg, bit 1 nh, -1 unmapped. */
static int vmflags_at(uint64_t addr)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[1024];
	bool in = false;
	int flags = -1;

	if (!f) {
		perror("/proc/self/smaps");
		exit(1);
	}
	while (fgets(line, sizeof(line), f)) {
		uint64_t s, e;
		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " ", &s, &e) == 2 && strchr(line, ' ') &&
		    strchr(line, '-') < strchr(line, ' ')) {
			if (in)
				break;
			in = s <= addr && addr < e;
		} else if (in && !strncmp(line, "VmFlags:", 8)) {
			flags = (strstr(line, " hg") ? 1 : 0) | (strstr(line, " nh") ? 2 : 0);
		}
	}
	fclose(f);
	return flags;
}

static void run_case(const struct tcase *c)
{
	size_t len = ARENA_PAGES * PAGE, huge = 2u << 20;
	char *raw = mmap(NULL, len + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct thp_range ranges[MAX_ITEMS];
	struct thp_report reports[MAX_ITEMS], model_rep[MAX_ITEMS];
	static uint8_t pages[ARENA_PAGES];

	if (raw == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	char *base = (char *)(((uintptr_t)raw + huge - 1) & ~(uintptr_t)(huge - 1));
	if (base > raw)
		munmap(raw, (size_t)(base - raw));
	munmap(base + len, (size_t)(raw + len + huge - (base + len)));
	memset(pages, 0, sizeof(pages));
	for (size_t i = 0; i < c->nr_maps; i++) {
		const struct span *s = &c->maps[i];
		for (uint64_t p = s->first; p < s->first + s->n; p++)
			pages[p] = MP_MAPPED | (!strcmp(s->what, "hg") ? MP_HG : 0) |
				   (!strcmp(s->what, "nh") ? MP_NH : 0);
		pages[s->first] |= MP_VMA_START;
	}
	for (size_t p = 0; p < ARENA_PAGES; p++) {
		if (!(pages[p] & MP_MAPPED))
			munmap(base + p * PAGE, PAGE);
		else if (pages[p] & (MP_HG | MP_NH))
			madvise(base + p * PAGE, PAGE,
				pages[p] & MP_HG ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
	}
	for (size_t i = 0; i < c->nr_ranges; i++)
		ranges[i] = (struct thp_range){ (uint64_t)(uintptr_t)base + c->range_pos[i],
						c->range_len[i] };

	/* The model first: it takes valid input only (validation is the library's). */
	bool valid = (c->advice == THP_ADVICE_HUGE || c->advice == THP_ADVICE_NOHUGE) &&
		     !(c->flag_bits & ~(uint32_t)(THP_F_SKIP_ERRORS | THP_F_NO_ERROR_ON_UNMAPPED)) &&
		     c->backend < THP_BACKEND_COUNT;
	for (size_t i = 0; valid && i < c->nr_ranges; i++)
		valid = c->range_pos[i] % PAGE == 0;

	THP_OPTS(thp_apply_opts, o, .advice = c->advice, .flags = c->flag_bits,
		 .backend = c->backend, .reports = reports);
	int ret = thp_apply_ranges(ranges, c->nr_ranges, &o);
	if (c->nr_reports != c->nr_ranges)
		fail(c, "table", "%zu reports for %zu ranges", c->nr_reports, c->nr_ranges);
	compare(c, "library", (uint64_t)(uintptr_t)base, ret, o.backend_used, reports);

	if (valid) {
		uint8_t mpages[ARENA_PAGES];
		struct model_arena a = { (uint64_t)(uintptr_t)base, ARENA_PAGES, PAGE, huge, mpages };

		memcpy(mpages, pages, sizeof(mpages));
		int mret = model_apply_ranges(&a, ranges, c->nr_ranges, c->advice, c->flag_bits,
					      o.backend_used, model_rep, NULL, NULL, NULL);
		compare(c, "model", (uint64_t)(uintptr_t)base, mret, o.backend_used, model_rep);
		for (size_t i = 0; i < c->nr_flags; i++) {
			const struct span *s = &c->flags[i];
			for (uint64_t p = s->first; p < s->first + s->n; p++) {
				const char *m = mpages[p] & MP_HG ? "hg" : mpages[p] & MP_NH ? "nh"
											     : "-";
				if (strcmp(m, s->what))
					fail(c, "model", "page %" PRIu64 ": %s, table %s", p, m, s->what);
			}
		}
	}
	for (size_t i = 0; i < c->nr_flags; i++) {
		const struct span *s = &c->flags[i];
		for (uint64_t p = s->first; p < s->first + s->n; p++) {
			int v = vmflags_at((uint64_t)(uintptr_t)base + p * PAGE);
			const char *k = v < 0 ? "unmapped" : v == 1 ? "hg"
						     : v == 2	    ? "nh"
						     : v	    ? "hg+nh"
								    : "-";
			if (strcmp(k, s->what)) {
				fail(c, "smaps", "page %" PRIu64 ": %s, table %s", p, k, s->what);
				break;
			}
		}
	}
	munmap(base, len);
	printf("%s %s\n", failures ? "..." : "ok", c->name);
}

int main(int argc, char **argv)
{
	struct tcase c;
	int line = 0, n = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: thp_cases FILE\n");
		return 2;
	}
	FILE *f = fopen(argv[1], "r");
	if (!f) {
		perror(argv[1]);
		return 2;
	}
	while (next_case(f, &line, &c)) {
		run_case(&c);
		n++;
	}
	fclose(f);
	printf("%d cases, %d failures\n", n, failures);
	return failures || n == 0;
}
