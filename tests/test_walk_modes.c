// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The two VMA walks must give the same answers: PROCMAP_QUERY (6.11+) and
 * the /proc/PID/maps text that every older kernel has.  Each layout runs in
 * two child processes, one of them under force_text_walk() (ioctl
 * PROCMAP_QUERY fails with ENOTTY, as before 6.11), and every return value,
 * report field and smaps effect is compared.  Also: PROCMAP_QUERY support
 * is not lost to a first call that ran out of descriptors.
 */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <thp/thp.h>

#include "helpers.h"

#define PAGE 4096ULL
#define MAX_SEGS 10
#define MAX_RANGES 4
#define MAX_REQS 6
#define FILE_BYTES (4 * MiB) /* the largest file or memfd segment */

enum seg_kind { SEG_ANON, SEG_ANON_RO, SEG_NONE, SEG_HOLE, SEG_MEMFD, SEG_FILE, SEG_KINDS };

struct seg {
	unsigned kind, pages;
	bool touch;
};

struct req {
	int advice;
	uint32_t flags;
	unsigned nr;
	uint64_t off[MAX_RANGES], len[MAX_RANGES]; /* bytes from the layout base */
};

/* A layout and the requests to run on it, each on a fresh copy. */
struct spec {
	unsigned nr_segs, nr_reqs;
	struct seg seg[MAX_SEGS];
	struct req req[MAX_REQS];
};

/* What one request did, base-relative. */
struct outcome {
	int ret, err;
	uint32_t backend_used;
	struct thp_report rep[MAX_RANGES];
	unsigned char seg[MAX_SEGS][3]; /* mapped, hg, nh at each segment's start */
};

/* One child's results, in memory shared with the parent. */
struct results {
	int procmap_query; /* thp_probe() after the requests */
	struct outcome out[MAX_REQS];
};

static uint64_t spec_bytes(const struct spec *s)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < s->nr_segs; i++)
		n += s->seg[i].pages * PAGE;
	return n;
}

static int scratch_file(void)
{
	char path[] = "/var/tmp/thp-walk-XXXXXX";
	int fd = mkstemp(path);

	ck_assert_msg(fd >= 0, "mkstemp: %s", strerror(errno));
	unlink(path);
	ck_assert_int_eq(ftruncate(fd, (off_t)FILE_BYTES), 0);
	return fd;
}

/* Build @s at a 2 MiB aligned base with unmapped guards on both sides. */
static char *build(const struct spec *s, int memfd, int filefd)
{
	uint64_t total = spec_bytes(s), off = 0;
	char *base = map_aligned((size_t)((total + PMD_SZ - 1) / PMD_SZ) * 2, 0);

	/* map_aligned() rounds to MiB: give the tail back. */
	if (((total + PMD_SZ - 1) / PMD_SZ) * PMD_SZ > total)
		munmap(base + total, ((total + PMD_SZ - 1) / PMD_SZ) * PMD_SZ - total);
	for (unsigned i = 0; i < s->nr_segs; i++) {
		const struct seg *g = &s->seg[i];
		size_t len = g->pages * PAGE;
		char *p = base + off, *q = p;

		switch (g->kind) {
		case SEG_ANON:
			break;
		case SEG_ANON_RO:
			ck_assert_int_eq(mprotect(p, len, PROT_READ), 0);
			break;
		case SEG_NONE:
			ck_assert_int_eq(mprotect(p, len, PROT_NONE), 0);
			break;
		case SEG_HOLE:
			ck_assert_int_eq(munmap(p, len), 0);
			break;
		case SEG_MEMFD:
		case SEG_FILE:
			q = mmap(p, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
				 g->kind == SEG_MEMFD ? memfd : filefd, 0);
			ck_assert_ptr_eq(q, p);
			break;
		}
		if (g->touch && g->kind != SEG_HOLE && g->kind != SEG_NONE) {
			if (g->kind == SEG_ANON_RO) {
				for (size_t o = 0; o < len; o += PAGE)
					(void)*(volatile char *)(p + o);
			} else {
				touch_range(p, len);
			}
		}
		off += len;
	}
	return base;
}

static void run_req(const struct spec *s, const struct req *q, int memfd, int filefd,
		    struct outcome *out)
{
	struct thp_range r[MAX_RANGES];
	char *base = build(s, memfd, filefd);
	uint64_t b = (uintptr_t)base, off = 0;
	THP_OPTS(thp_apply_opts, o, .advice = q->advice, .flags = q->flags, .reports = out->rep);

	memset(out, 0, sizeof(*out));
	for (unsigned i = 0; i < q->nr; i++) {
		r[i].addr = b + q->off[i];
		r[i].len = q->len[i];
	}
	errno = 0;
	out->ret = thp_apply_ranges(r, q->nr, &o);
	out->err = out->ret < 0 ? errno : 0;
	out->backend_used = o.backend_used;
	for (unsigned i = 0; i < q->nr; i++) {
		if (out->rep[i].addr)
			out->rep[i].addr -= b;
		if (out->rep[i].fail_addr)
			out->rep[i].fail_addr -= b;
	}
	for (unsigned i = 0; i < s->nr_segs; i++) {
		struct smaps_info si;

		ck_assert_int_eq(smaps_lookup(0, b + off, &si), 0);
		out->seg[i][0] = si.found && si.start <= b + off;
		out->seg[i][1] = si.hg;
		out->seg[i][2] = si.nh;
		off += s->seg[i].pages * PAGE;
	}
	munmap(base, spec_bytes(s));
}

/* Run every request of @s in a child, through the text walk or not. */
static void run_child(const struct spec *s, bool text, struct results *res)
{
	pid_t pid;
	int st;

	fflush(NULL);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct thp_probe_info pi = { .sz = sizeof(pi) };
		int memfd, filefd;

		if (text && force_text_walk())
			_exit(100);
		memfd = memfd_create("thp-walk", 0);
		filefd = scratch_file();
		if (memfd < 0 || ftruncate(memfd, (off_t)FILE_BYTES))
			_exit(101);
		for (unsigned i = 0; i < s->nr_reqs; i++)
			run_req(s, &s->req[i], memfd, filefd, &res->out[i]);
		if (thp_probe(&pi))
			_exit(102);
		res->procmap_query = pi.procmap_query;
		_exit(0);
	}
	st = wait_status(pid);
	ck_assert_msg(st == 0, "%s walk child failed: status %d", text ? "text" : "PROCMAP_QUERY",
		      st);
}

static void describe(const struct outcome *o, unsigned nr, unsigned nr_segs, char *buf,
		     size_t len)
{
	size_t n = 0;

	n += (size_t)snprintf(buf, len, "ret %d errno %d backend %u;", o->ret, o->err,
			      o->backend_used);
	for (unsigned i = 0; i < nr && n < len; i++) {
		const struct thp_report *r = &o->rep[i];

		n += (size_t)snprintf(buf + n, len - n,
				      " R%u{+%" PRIx64 " len %" PRIx64 " adv %" PRIx64
				      " unm %" PRIx64 " fail +%" PRIx64 " err %d att %u be %u}",
				      i, r->addr, r->len, r->bytes_advised, r->bytes_unmapped,
				      r->fail_addr, r->error, r->attempted, r->backend);
	}
	for (unsigned i = 0; i < nr_segs && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, " %c%c%c", o->seg[i][0] ? 'm' : '-',
				      o->seg[i][1] ? 'h' : '-', o->seg[i][2] ? 'n' : '-');
}

static void describe_spec(const struct spec *s, char *buf, size_t len)
{
	static const char *const kind[SEG_KINDS] = { "anon", "ro", "none", "hole", "memfd",
						     "file" };
	size_t n = 0;

	for (unsigned i = 0; i < s->nr_segs && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s:%u ", kind[s->seg[i].kind],
				      s->seg[i].touch ? "*" : "", s->seg[i].pages);
}

static struct results *shared_results(void)
{
	struct results *r = mmap(NULL, 2 * sizeof(*r), PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	ck_assert_ptr_ne(r, MAP_FAILED);
	memset(r, 0x5a, 2 * sizeof(*r));
	return r;
}

/* Run @s through both walks; abort on any difference.  Returns the query walk's results. */
static const struct results *compare_walks(const struct spec *s, const char *what)
{
	struct results *r = shared_results();
	char a[4096], b[4096], l[512];

	run_child(s, false, &r[0]);
	run_child(s, true, &r[1]);
	ck_assert_msg(r[0].procmap_query == 1 && r[1].procmap_query == 0,
		      "the walks were not the two modes: procmap_query %d and %d",
		      r[0].procmap_query, r[1].procmap_query);
	for (unsigned i = 0; i < s->nr_reqs; i++) {
		if (!memcmp(&r[0].out[i], &r[1].out[i], sizeof(r[0].out[i])))
			continue;
		describe(&r[0].out[i], s->req[i].nr, s->nr_segs, a, sizeof(a));
		describe(&r[1].out[i], s->req[i].nr, s->nr_segs, b, sizeof(b));
		describe_spec(s, l, sizeof(l));
		ck_abort_msg("%s: request %u (advice %d flags %u) differs between the walks\n"
			     "  layout (pages): %s\n  PROCMAP_QUERY: %s\n  text:          %s",
			     what, i, s->req[i].advice, s->req[i].flags, l, a, b);
	}
	return r;
}

/*
 * From the issue: 8 MiB with a 4 KiB hole, HUGE, NO_ERROR_ON_UNMAPPED.  The
 * text walk had consumed the mapping after the hole when the engine asked
 * for it again: 4 MiB advised and 4 MiB unmapped.
 */
START_TEST(hole_in_range)
{
	const unsigned half = (unsigned)(4 * MiB / PAGE);
	struct spec s = {
		.nr_segs = 3, .nr_reqs = 1,
		.seg = { { SEG_ANON, half, false }, { SEG_HOLE, 1, false },
			 { SEG_ANON, half - 1, false } },
		.req = { { THP_ADVICE_HUGE, THP_F_NO_ERROR_ON_UNMAPPED, 1, { 0 }, { 8 * MiB } } },
	};
	const struct results *r = compare_walks(&s, "hole_in_range");
	const struct outcome *o = &r[1].out[0];

	ck_assert_int_eq(o->ret, 1);
	ck_assert_uint_eq(o->rep[0].bytes_advised, 8 * MiB - PAGE);
	ck_assert_uint_eq(o->rep[0].bytes_unmapped, PAGE);
	ck_assert_int_eq(o->rep[0].error, 0);
	ck_assert(o->seg[0][1] && !o->seg[1][0] && o->seg[2][1]);
}
END_TEST

/*
 * From the issue: COLLAPSE over a hole and then a shared file mapping must
 * fail with EINVAL at the file mapping (not collapsible), not skip it.
 */
START_TEST(collapse_after_hole)
{
	const unsigned pmd = (unsigned)(PMD_SZ / PAGE);
	struct spec s = {
		.nr_segs = 3, .nr_reqs = 1,
		.seg = { { SEG_ANON, 2 * pmd - 1, false }, { SEG_HOLE, 1, false },
			 { SEG_FILE, 2 * pmd, false } },
		/*
		 * From the hole on: MADV_COLLAPSE fails on any piece of anon
		 * memory without a whole PMD of its own, and a whole one
		 * would need a huge page allocated.
		 */
		.req = { { THP_ADVICE_COLLAPSE, THP_F_NO_ERROR_ON_UNMAPPED, 1,
			   { 2 * PMD_SZ - PAGE }, { 2 * PMD_SZ + PAGE } } },
	};
	const struct results *r = compare_walks(&s, "collapse_after_hole");
	const struct outcome *o = &r[1].out[0];

	ck_assert_int_eq(o->ret, -EINVAL);
	ck_assert_int_eq(o->rep[0].error, EINVAL);
	ck_assert_uint_eq(o->rep[0].fail_addr, 2 * PMD_SZ);
	ck_assert_uint_eq(o->rep[0].bytes_unmapped, PAGE);
}
END_TEST

/* xorshift64*: replayable from the seed alone. */
static uint64_t rnd(uint64_t *st)
{
	*st ^= *st >> 12;
	*st ^= *st << 25;
	*st ^= *st >> 27;
	return *st * 0x2545f4914f6cdd1dULL;
}

static unsigned pick(uint64_t *st, unsigned n)
{
	return (unsigned)(rnd(st) % n);
}

static void random_spec(uint64_t seed, struct spec *s)
{
	static const unsigned sizes[] = { 1, 2, 3, 16, 511, 512, 513 };
	static const int advice[] = { THP_ADVICE_HUGE, THP_ADVICE_NOHUGE, THP_ADVICE_COLLAPSE };
	static const uint32_t flags[] = { 0, THP_F_SKIP_ERRORS, THP_F_NO_ERROR_ON_UNMAPPED,
					  THP_F_SKIP_ERRORS | THP_F_NO_ERROR_ON_UNMAPPED };
	uint64_t st = seed * 2 + 1, total;

	memset(s, 0, sizeof(*s));
	s->nr_segs = 2 + pick(&st, MAX_SEGS - 1);
	for (unsigned i = 0; i < s->nr_segs; i++) {
		s->seg[i].kind = pick(&st, SEG_KINDS);
		s->seg[i].pages = sizes[pick(&st, sizeof(sizes) / sizeof(sizes[0]))];
		/* Memory is only read or written in small pieces: no huge page allocation. */
		s->seg[i].touch = s->seg[i].pages <= 16 && pick(&st, 2);
	}
	total = spec_bytes(s) / PAGE;
	s->nr_reqs = MAX_REQS;
	for (unsigned k = 0; k < s->nr_reqs; k++) {
		struct req *q = &s->req[k];

		q->advice = advice[pick(&st, 3)];
		q->flags = flags[pick(&st, 4)];
		q->nr = 1 + pick(&st, MAX_RANGES);
		for (unsigned i = 0; i < q->nr; i++) {
			uint64_t start = pick(&st, (unsigned)total);

			q->off[i] = start * PAGE;
			q->len[i] = (1 + pick(&st, (unsigned)(total - start))) * PAGE;
			if (pick(&st, 8) == 0) /* a length that is not a page multiple */
				q->len[i] -= 1 + pick(&st, (unsigned)PAGE - 1);
		}
	}
}

/*
 * Random layouts (holes inside and between ranges, file and memfd
 * mappings, PROT_NONE, read-only) and requests through both walks.
 * THP_TEST_SEED=N replays a run.
 */
START_TEST(random_layouts)
{
	const char *env = getenv("THP_TEST_SEED");
	uint64_t seed = env ? strtoull(env, NULL, 0) :
		(uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
	unsigned rounds = scaled(40, 4);
	char what[96];

	fprintf(stderr, "walk_modes: seed %" PRIu64 " (THP_TEST_SEED=%" PRIu64 " replays it)\n",
		seed, seed);
	for (unsigned i = 0; i < rounds; i++) {
		struct spec s;

		random_spec(seed + i, &s);
		snprintf(what, sizeof(what), "THP_TEST_SEED=%" PRIu64 ", layout %u", seed, i);
		munmap((void *)compare_walks(&s, what), 2 * sizeof(struct results));
	}
}
END_TEST

/* Use up every descriptor below a low limit; returns the previous limit. */
static struct rlimit exhaust_fds(int *fds, int cap, int *n)
{
	struct rlimit old, low;

	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &old), 0);
	low = old;
	low.rlim_cur = 64;
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &low), 0);
	for (*n = 0; *n < cap; (*n)++) {
		fds[*n] = dup(0);
		if (fds[*n] < 0)
			break;
	}
	ck_assert_int_eq(errno, EMFILE);
	return old;
}

/*
 * A first call that cannot open /proc/self/maps (EMFILE) must not leave
 * "no PROCMAP_QUERY" behind for the rest of the process's life.
 */
/*
 * A mapped file whose name ends in "[vsyscall]" is an ordinary mapping: the
 * text walk must not pass over it (it once matched the name), so
 * thp_apply_all() advises it in both walk modes.
 */
static void vsyscall_name_child(bool text)
{
	char dir[] = "/tmp/thp-vsys-XXXXXX", path[64];
	int fd, r;
	void *p;
	THP_OPTS(thp_apply_all_opts, o, .advice = THP_ADVICE_HUGE, .flags = THP_F_SKIP_ERRORS);

	if (text && force_text_walk())
		_exit(10);
	if (!mkdtemp(dir))
		_exit(11);
	snprintf(path, sizeof(path), "%s/x [vsyscall]", dir);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	if (fd < 0 || ftruncate(fd, 2 * MiB))
		_exit(12);
	p = mmap(NULL, 2 * MiB, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
	/* Unlinked only afterwards: the name would end in " (deleted)". */
	if (p == MAP_FAILED)
		r = 13;
	else if (thp_apply_all(&o) <= 0)
		r = 14;
	else
		r = vma_hg(getpid(), (uintptr_t)p) ? 0 : 15;
	unlink(path);
	rmdir(dir);
	_exit(r);
}

START_TEST(vsyscall_name_is_a_mapping)
{
	for (int text = 0; text < 2; text++) {
		pid_t pid = fork();
		int st;

		ck_assert_int_ge(pid, 0);
		if (pid == 0)
			vsyscall_name_child(text);
		st = wait_status(pid);
		ck_assert_msg(st == 0, "%s walk: the mapping of \"x [vsyscall]\" was not advised "
			      "(child status %d: 15 = not hg)", text ? "text" : "PROCMAP_QUERY", st);
	}
}
END_TEST

START_TEST(emfile_does_not_stick)
{
	struct spec s = {
		.nr_segs = 3,
		.seg = { { SEG_ANON, 512, false }, { SEG_HOLE, 1, false },
			 { SEG_ANON, 511, false } },
	};
	struct thp_probe_info pi = { .sz = sizeof(pi) };
	char *base = build(&s, -1, -1);
	struct thp_range r = { (uintptr_t)base, 4 * MiB };
	struct thp_report rep;
	THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_HUGE,
		 .flags = THP_F_NO_ERROR_ON_UNMAPPED, .reports = &rep);
	struct rlimit old;
	int fds[128], n;

	old = exhaust_fds(fds, 128, &n);
	/* The hole sends the engine to walk /proc/self/maps, which it cannot open. */
	ck_assert_int_eq(thp_apply_ranges(&r, 1, &o), -EMFILE);
	while (n--)
		close(fds[n]);
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &old), 0);

	ck_assert_int_eq(thp_apply_ranges(&r, 1, &o), 1);
	ck_assert_uint_eq(rep.bytes_advised, 4 * MiB - PAGE);
	ck_assert_uint_eq(rep.bytes_unmapped, PAGE);
	ck_assert(vma_hg(0, r.addr) && vma_hg(0, r.addr + 2 * MiB + PAGE));
	ck_assert_int_eq(thp_probe(&pi), 0);
	ck_assert_msg(pi.procmap_query, "PROCMAP_QUERY lost to the EMFILE of the first call");
	ck_assert_uint_eq(pi.pmd_size, PMD_SZ);
	/* Proof that the walk itself asks the kernel: make the ioctl fail. */
	ck_assert_int_eq(fail_procmap_query(EDOM), 0);
	ck_assert_int_eq(thp_apply_ranges(&r, 1, &o), -EDOM);
	munmap(base, 4 * MiB);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("walk_modes");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, require_madvise_mode, NULL);
	tcase_add_test(tc, hole_in_range);
	tcase_add_test(tc, collapse_after_hole);
	tcase_add_test(tc, random_layouts);
	tcase_add_test(tc, emfile_does_not_stick);
	tcase_add_test(tc, vsyscall_name_is_a_mapping);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
