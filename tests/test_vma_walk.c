// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * White-box tests of the VMA walk: the PROCMAP_QUERY walk and the
 * /proc/PID/maps text fallback must see the same mappings, and the text
 * parser must reject malformed lines.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "internal.h"
#include "helpers.h"

#define MAX_VMAS 4096

static size_t walk(bool use_query, struct thp_vma *out, size_t cap)
{
	struct thp_target t = { .self = true, .pid = getpid(), .pidfd = -1 };
	/* Static, not malloc()ed: under valgrind each malloc() can grow the
	 * tool's heap mapping, which would differ between the two walks. */
	static struct thp_vma_walk walker;
	struct thp_vma_walk *w = &walker;
	uint64_t addr = 0;
	size_t n = 0;
	struct thp_vma v;
	int r;

	memset(w, 0, sizeof(*w));
	ck_assert_int_eq(vma_walk_open(w, &t, false), 0);
	w->use_query = use_query;
	while ((r = vma_walk_next(w, addr, &v)) == 1) {
		ck_assert_uint_gt(v.end, v.start);
		ck_assert_uint_ge(v.end, addr);
		if (n < cap)
			out[n] = v;
		n++;
		addr = v.end;
	}
	ck_assert_int_eq(r, 0);
	vma_walk_close(w);
	return n;
}

START_TEST(query_and_text_agree)
{
	static struct thp_vma a[MAX_VMAS], b[MAX_VMAS];
	long ps = sysconf(_SC_PAGESIZE);
	char *blocks[64];
	size_t na, nb;

	/* Many small mappings, alternating protection so they stay apart. */
	for (int i = 0; i < 64; i++) {
		blocks[i] = mmap(NULL, (size_t)ps, i % 2 ? PROT_READ : PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		ck_assert_ptr_ne(blocks[i], MAP_FAILED);
	}
	/*
	 * Natively nothing maps or unmaps between the two walks, so they must
	 * agree at once.  Under valgrind the tool's own mappings (shown in the
	 * client's maps) can change between them: walk again, a few times.
	 */
	for (int attempt = 1;; attempt++) {
		size_t diff;

		na = walk(true, a, MAX_VMAS);
		/* Learnt from that walk's own ioctl. */
		ck_assert_msg(caps_procmap_query() == 1, "PROCMAP_QUERY is expected on this kernel");
		nb = walk(false, b, MAX_VMAS);
		ck_assert_uint_gt(na, 64);
		ck_assert_uint_le(na, MAX_VMAS);
		for (diff = 0; na == nb && diff < na; diff++)
			if (a[diff].start != b[diff].start || a[diff].end != b[diff].end)
				break;
		if (na == nb && diff == na)
			break;
		ck_assert_msg(under_valgrind() && attempt < 5,
			      "walks disagree (attempt %d): %zu vs %zu mappings, first difference "
			      "at #%zu: %#llx-%#llx vs %#llx-%#llx", attempt, na, nb, diff,
			      (unsigned long long)a[diff].start, (unsigned long long)a[diff].end,
			      (unsigned long long)b[diff].start, (unsigned long long)b[diff].end);
	}
	for (int i = 0; i < 64; i++)
		munmap(blocks[i], (size_t)ps);
}
END_TEST

START_TEST(walk_starts_mid_mapping)
{
	long ps = sysconf(_SC_PAGESIZE);
	char *p = mmap(NULL, 4 * (size_t)ps, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct thp_target t = { .self = true, .pid = getpid(), .pidfd = -1 };
	struct thp_vma_walk *w = malloc(sizeof(*w));
	struct thp_vma v;

	ck_assert_ptr_ne(p, MAP_FAILED);
	for (int q = 0; q < 2; q++) {
		ck_assert_int_eq(vma_walk_open(w, &t, false), 0);
		w->use_query = q;
		/* The covering mapping, not the next one. */
		ck_assert_int_eq(vma_walk_next(w, (uintptr_t)p + (uint64_t)ps, &v), 1);
		ck_assert_uint_le(v.start, (uintptr_t)p);
		ck_assert_uint_ge(v.end, (uintptr_t)p + 4 * (uint64_t)ps);
		vma_walk_close(w);
	}
	free(w);
	munmap(p, 4 * (size_t)ps);
}
END_TEST

/*
 * A /proc/self file read whole into a memfd: one snapshot for a reader and
 * its reference (under ASan or valgrind the runtime maps memory between two
 * reads of /proc; Check allocates for every assertion).
 */
static int proc_snapshot(const char *path)
{
	static char chunk[1 << 16];
	int in = open(path, O_RDONLY | O_CLOEXEC);
	int out = memfd_create("proc-snapshot", MFD_CLOEXEC);
	ssize_t n;

	ck_assert_int_ge(in, 0);
	ck_assert_int_ge(out, 0);
	/* No assertion in the loop: Check allocates for each, and could change the layout. */
	while ((n = read(in, chunk, sizeof(chunk))) > 0)
		if (write(out, chunk, (size_t)n) != n)
			break;
	ck_assert_int_eq(n, 0);
	close(in);
	return out;
}

/*
 * One walk kept open for look-ups in any order, as the engine keeps it for
 * all the ranges of a call: the text walk reads forward and starts again
 * from the top for an address below one asked before.  On a snapshot of
 * this process's maps text, each answer must be the covering-or-next
 * mapping of the snapshot's lines (the vsyscall page is no mapping).
 * (PROCMAP_QUERY keeps no state between look-ups: query_and_text_agree.)
 * Seeded, so a failure can be replayed (_i is the seed).
 */
START_TEST(walk_in_any_order)
{
	static struct thp_vma ref[MAX_VMAS];
	static struct thp_vma_walk walker;
	static char text[1 << 20];
	long ps = sysconf(_SC_PAGESIZE);
	uint64_t rng = 0x9E3779B97F4A7C15ULL * (uint64_t)(_i + 1), addrs[600];
	char *blocks[96];
	size_t n = 0;
	ssize_t len;
	int snap;

	for (int i = 0; i < 96; i++) {
		blocks[i] = mmap(NULL, (size_t)ps * (1 + (size_t)(i % 3)),
				 i % 2 ? PROT_READ : PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		ck_assert_ptr_ne(blocks[i], MAP_FAILED);
	}
	snap = proc_snapshot("/proc/self/maps");
	len = pread(snap, text, sizeof(text) - 1, 0);
	ck_assert_int_gt(len, 0);
	ck_assert_int_lt(len, (ssize_t)sizeof(text) - 1);
	for (const char *l = text, *e = text + len; l < e && n < MAX_VMAS;) {
		const char *nl = memchr(l, '\n', (size_t)(e - l));
		size_t ll = nl ? (size_t)(nl - l) : (size_t)(e - l);
		uint64_t s, t;

		if (!vma_walk_parse_line(l, ll, &s, &t) && s < (1ULL << 63))
			ref[n++] = (struct thp_vma){ .start = s, .end = t };
		l += ll + 1;
	}
	ck_assert_uint_gt(n, 96);
	/* Starts, ends, inside, just below, in gaps, 0 and the top, at random. */
	for (size_t k = 0; k < 600; k++) {
		const struct thp_vma *m;

		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		m = &ref[rng % n];
		switch ((rng >> 32) % 6) {
		case 0: addrs[k] = m->start; break;
		case 1: addrs[k] = m->end; break;
		case 2: addrs[k] = m->start + (rng >> 40) % (m->end - m->start); break;
		case 3: addrs[k] = m->start - 1; break;
		case 4: addrs[k] = (rng >> 20) % 5 ? (rng >> 16) << 12 : 0; break;
		default: addrs[k] = (rng >> 8) & 1 ? ~0ULL : m->end - 1; break;
		}
	}
	memset(&walker, 0, sizeof(walker));
	line_reader_init(&walker.text, snap);
	walker.use_query = false;
	for (size_t k = 0; k < 600; k++) {
		struct thp_vma want = { 0 }, got = { 0 };
		int w = 0, g = vma_walk_next(&walker, addrs[k], &got);

		for (size_t i = 0; i < n && !w; i++)
			if (ref[i].end > addrs[k]) {
				want = ref[i];
				w = 1;
			}
		ck_assert_msg(g == w && (!w || (got.start == want.start && got.end == want.end)),
			      "seed %d, look-up %zu of %#llx: got %d %#llx-%#llx, want %d "
			      "%#llx-%#llx", _i, k, (unsigned long long)addrs[k], g,
			      (unsigned long long)got.start, (unsigned long long)got.end, w,
			      (unsigned long long)want.start, (unsigned long long)want.end);
	}
	vma_walk_close(&walker);
	for (int i = 0; i < 96; i++)
		munmap(blocks[i], (size_t)ps * (1 + (size_t)(i % 3)));
}
END_TEST

START_TEST(maps_line_parser)
{
	static const char *const bad[] = {
		"", "-", "zz-10 r", "10-", "10-20", "20-10 rw-p", "10-10 rw-p",
		"10 20 rw-p", "10000000000000000-20000000000000000 rw-p", "10-20rw-p",
	};
	uint64_t s, e;
	const char *good = "7f0000000000-7f0000201000 rw-p 00000000 00:00 0 ";

	ck_assert_int_eq(vma_walk_parse_line(good, strlen(good), &s, &e), 0);
	ck_assert_uint_eq(s, 0x7f0000000000ULL);
	ck_assert_uint_eq(e, 0x7f0000201000ULL);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(vma_walk_parse_line(bad[i], strlen(bad[i]), &s, &e) == -EINVAL,
			      "accepted \"%s\"", bad[i]);
}
END_TEST

/* The parser as the header defines it, one character at a time: the reference. */
static int ref_hex(const char **pp, const char *end, uint64_t *out)
{
	const char *p = *pp;
	uint64_t v = 0;
	int n = 0;

	for (; p < end && strchr("0123456789abcdef", *p) && *p; p++, n++) {
		if (n == 16)
			return -EINVAL;
		v = v * 16 + (uint64_t)(*p <= '9' ? *p - '0' : *p - 'a' + 10);
	}
	if (!n)
		return -EINVAL;
	*pp = p;
	*out = v;
	return 0;
}

static int ref_parse_line(const char *line, size_t len, uint64_t *s, uint64_t *e)
{
	const char *p = line, *end = line + len;

	if (ref_hex(&p, end, s) || p == end || *p++ != '-' || ref_hex(&p, end, e))
		return -EINVAL;
	return p == end || *p != ' ' || *e <= *s ? -EINVAL : 0;
}

/*
 * Random lines near the format (digits of every length around 16, both
 * cases, stray separators) against the reference: same verdict, same
 * numbers.  A failure prints the line; the seed replays it.
 */
START_TEST(maps_line_parser_random)
{
	static const char alphabet[] = "0123456789abcdef0123456789abcdefAFgx- \n";
	uint64_t rng = 0x5eed0000ULL + (uint64_t)_i;

	for (int k = 0; k < 20000; k++) {
		char line[64];
		size_t len = 0;
		uint64_t s1 = 1, e1 = 2, s2 = 3, e2 = 4;
		int r1, r2;

		/* Two hex runs of 0 to 18 digits, a separator, a tail. */
		for (int part = 0; part < 2; part++) {
			size_t n;

			rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
			n = (size_t)(rng >> 59) % 19;
			for (size_t i = 0; i < n; i++) {
				rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
				line[len++] = (rng >> 60) < 13 ? "0123456789abcdef"[(rng >> 40) % 16]
							       : alphabet[(rng >> 40) % (sizeof(alphabet) - 1)];
			}
			line[len++] = part == 0 ? '-' : ' ';
		}
		rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
		if ((rng >> 62) == 0) {
			len--; /* sometimes no trailing space */
		} else {
			/* Or a tail: what follows a real header, or junk. */
			size_t tail = (size_t)(rng >> 56) % 12;

			for (size_t i = 0; i < tail; i++) {
				rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
				line[len++] = alphabet[(rng >> 40) % (sizeof(alphabet) - 1)];
			}
		}
		line[len] = 0;
		r1 = vma_walk_parse_line(line, len, &s1, &e1);
		r2 = ref_parse_line(line, len, &s2, &e2);
		ck_assert_msg(r1 == r2 && (r1 || (s1 == s2 && e1 == e2)),
			      "\"%s\": parser %d %llx-%llx, reference %d %llx-%llx", line, r1,
			      (unsigned long long)s1, (unsigned long long)e1, r2,
			      (unsigned long long)s2, (unsigned long long)e2);
	}
}
END_TEST

/*
 * smaps_next_advice() jumps from a header to the entry's VmFlags line;
 * smaps_next() reads every line.  On the kernel's smaps of random layouts
 * (hg, nh and plain neighbours, PROT_NONE, a memfd with a long name in the
 * header), one snapshot read by both, they must hand out the same ranges
 * and advice, through the reader's own 8 KiB buffer and a lent 64 KiB one
 * (many refills: up to 535 mappings of about 1 KB of text each).  A
 * snapshot, not two reads of /proc: under ASan the runtime maps memory
 * between two reads.
 */
START_TEST(smaps_readers_agree)
{
	static const size_t caps[] = { 4096 /* too small to lend: the own 8 KiB */, 65536 };
	const size_t ps = (size_t)getpagesize();
	uint64_t rng = 0xad71ce00ULL + (uint64_t)_i;
	size_t nr = 50 + (size_t)_i * 97;
	char *arena = mmap(NULL, nr * 2 * ps, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int memfd = memfd_create("a-name-long-enough-to-push-the-header-past-the-small-buffers-"
				 "of-this-test-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
				 MFD_CLOEXEC);
	char *buf = malloc(65536), *buf2 = malloc(65536);
	void *file = MAP_FAILED;
	int snap;

	ck_assert_ptr_ne(arena, MAP_FAILED);
	ck_assert_ptr_nonnull(buf);
	ck_assert_ptr_nonnull(buf2);
	ck_assert_int_ge(memfd, 0);
	ck_assert_int_eq(ftruncate(memfd, (off_t)ps), 0);
	file = mmap(NULL, ps, PROT_READ, MAP_SHARED, memfd, 0);
	ck_assert_ptr_ne(file, MAP_FAILED);
	/* Every other page changed: each one its own mapping. */
	for (size_t i = 0; i < nr; i++) {
		static const int advice[] = { MADV_HUGEPAGE, MADV_NOHUGEPAGE, MADV_NORMAL };
		char *p = arena + 2 * i * ps;

		rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
		if ((rng >> 60) < 3) {
			ck_assert_int_eq(mprotect(p, ps, PROT_NONE), 0);
			continue;
		}
		ck_assert_int_eq(madvise(p, ps, advice[(rng >> 40) % 3]), 0);
		if ((rng >> 50) % 4 == 0)
			*p = 1; /* some Rss */
	}
	snap = proc_snapshot("/proc/self/smaps");
	for (size_t c = 0; c < sizeof(caps) / sizeof(caps[0]); c++) {
		struct smaps_reader all, adv;
		struct thp_mapping_state m;
		struct smaps_advice a;
		size_t n = 0, hg = 0, nh = 0;
		int r;

		smaps_reader_init(&all, snap);
		smaps_reader_init(&adv, snap);
		line_reader_lend(&all.lr, buf, caps[c]);
		line_reader_lend(&adv.lr, buf2, caps[c]);
		while ((r = smaps_next(&all, &m)) == 1) {
			ck_assert_int_eq(smaps_next_advice(&adv, &a), 1);
			ck_assert_msg(a.start == m.start && a.end == m.end &&
					      a.huge == m.advised_huge && a.nohuge == m.advised_nohuge,
				      "buffer %zu, entry %zu: %llx-%llx hg %d nh %d, advice reader "
				      "%llx-%llx hg %d nh %d", caps[c], n,
				      (unsigned long long)m.start, (unsigned long long)m.end,
				      m.advised_huge, m.advised_nohuge, (unsigned long long)a.start,
				      (unsigned long long)a.end, a.huge, a.nohuge);
			n++;
			hg += m.advised_huge;
			nh += m.advised_nohuge;
		}
		ck_assert_int_eq(r, 0);
		ck_assert_int_eq(smaps_next_advice(&adv, &a), 0);
		/* The layout is in what was compared. */
		ck_assert_uint_ge(n, nr);
		ck_assert_uint_gt(hg, 0);
		ck_assert_uint_gt(nh, 0);
	}
	close(snap);
	munmap(file, ps);
	close(memfd);
	munmap(arena, nr * 2 * ps);
	free(buf);
	free(buf2);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("vma_walk");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, query_and_text_agree);
	tcase_add_test(tc, walk_starts_mid_mapping);
	tcase_add_loop_test(tc, walk_in_any_order, 0, 8);
	tcase_add_test(tc, maps_line_parser);
	tcase_add_loop_test(tc, maps_line_parser_random, 0, 8);
	tcase_add_loop_test(tc, smaps_readers_agree, 0, 6);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
