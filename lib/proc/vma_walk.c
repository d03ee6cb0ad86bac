// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The VMA walk: PROCMAP_QUERY on /proc/PID/maps (6.11+), one ioctl per
 * mapping and no text, with a parser of the maps text as fallback.
 */
#include <errno.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "compat.h"
#include "internal.h"
#include "syscall.h"

/* Lowest address of the kernel half; user mappings all lie below it. */
#define VSYSCALL_FLOOR (1ULL << 63)

/*
 * 0x10 | the value of a lower-case hex digit, 0 for anything else: one
 * load and one test a digit instead of two range checks (the header of
 * every smaps entry has 24 digits; fewer instructions a number, counted in
 * doc/performance.md).  The path for numbers near a buffer's end.
 */
static const uint8_t hex_digit[256] = {
	['0'] = 0x10, ['1'] = 0x11, ['2'] = 0x12, ['3'] = 0x13, ['4'] = 0x14,
	['5'] = 0x15, ['6'] = 0x16, ['7'] = 0x17, ['8'] = 0x18, ['9'] = 0x19,
	['a'] = 0x1a, ['b'] = 0x1b, ['c'] = 0x1c, ['d'] = 0x1d, ['e'] = 0x1e, ['f'] = 0x1f,
};

#if defined(__SSE2__) && defined(__x86_64__) /* _mm_cvtsi128_si64() */
/*
 * 1 to 16 digits from the 16 bytes at @p, all of which the caller may
 * read: the digit bytes are found and turned into nibbles side by side,
 * the nibbles packed into one number, and the lanes after the last digit
 * shifted out: half the instructions of the table's path (counted in
 * doc/performance.md).  0 digits: returns 0 with *@n 0.
 */
static inline uint64_t parse_hex16(const char *p, unsigned int *n)
{
	const __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
	/* Signed compares: bytes >= 0x80 are negative, never digits. */
	const __m128i dec = _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8('0' - 1)),
					  _mm_cmplt_epi8(v, _mm_set1_epi8('9' + 1)));
	const __m128i af = _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8('a' - 1)),
					 _mm_cmplt_epi8(v, _mm_set1_epi8('f' + 1)));
	unsigned int digits = (unsigned int)_mm_movemask_epi8(_mm_or_si128(dec, af));
	/* '0'..'9' -> 0..9, 'a'..'f' -> 1..6 + 9; other lanes anything <= 15. */
	const __m128i nib = _mm_add_epi8(_mm_and_si128(v, _mm_set1_epi8(0x0f)),
					 _mm_and_si128(af, _mm_set1_epi8(9)));
	/* Each 16-bit lane: its even byte << 4 | its odd byte, then 8 bytes. */
	const __m128i pairs = _mm_or_si128(_mm_slli_epi16(_mm_and_si128(nib, _mm_set1_epi16(0xff)), 4),
					   _mm_srli_epi16(nib, 8));
	uint64_t all = (uint64_t)_mm_cvtsi128_si64(_mm_packus_epi16(pairs, pairs));

	*n = (unsigned int)__builtin_ctz(~digits | 0x10000u);
	/* The first digit is the most significant nibble. */
	all = __builtin_bswap64(all);
	return *n == 0 ? 0 : *n == 16 ? all : all >> (4 * (16 - *n));
}
#endif

static int parse_hex(const char **pp, const char *end, uint64_t *out)
{
	const char *p = *pp, *first = p;
	/* No more than 16 digits fit: look at a 17th only to refuse it. */
	const char *stop = end - p > 16 ? p + 17 : end;
	uint64_t v = 0;
	unsigned int d;

#if defined(__SSE2__) && defined(__x86_64__)
	if (end - p >= 16) {
		unsigned int n;

		v = parse_hex16(p, &n);
		if (n == 0 || (n == 16 && p + 16 < end && hex_digit[(unsigned char)p[16]]))
			return -EINVAL;
		*pp = p + n;
		*out = v;
		return 0;
	}
#endif
	/* A local cursor: through *pp every digit would be a store and a load. */
	for (; p < stop && (d = hex_digit[(unsigned char)*p]); p++)
		v = v << 4 | (d & 0xf);
	if (p == first || p - first == 17)
		return -EINVAL;
	*pp = p;
	*out = v;
	return 0;
}

int vma_walk_parse_line(const char *line, size_t len, uint64_t *start, uint64_t *end)
{
	const char *p = line, *e = line + len;

	if (parse_hex(&p, e, start) || p == e || *p++ != '-' || parse_hex(&p, e, end))
		return -EINVAL;
	if (p == e || *p != ' ' || *end <= *start)
		return -EINVAL;
	return 0;
}

int vma_walk_open(struct thp_vma_walk *w, const struct thp_target *t, bool full)
{
	int err = line_reader_open_proc(&w->text, t, "maps");

	if (err)
		return err;
	/* Until a walk has asked the kernel, try the ioctl: walk_query() learns. */
	w->use_query = !full && caps_procmap_query() != 0;
	w->have_last = false;
	w->asked = 0;
	return 0;
}

void vma_walk_close(struct thp_vma_walk *w)
{
	line_reader_close(&w->text);
}

/*
 * The text is read once, forward; the engine asks again for the address
 * where a gap ended, i.e. for the mapping it was just given.  So the last
 * mapping read is kept and given again while it still ends above @addr:
 * with non-decreasing @addr it is then the covering or next mapping.
 */
static int walk_text(struct thp_vma_walk *w, uint64_t addr, struct thp_vma *v)
{
	const char *line = NULL;
	size_t len = 0;
	int r;

	/*
	 * Lines skipped so far ended at or below an address asked before: a
	 * lower @addr (the engine's next range may start below the last one)
	 * reads the text again from its start, unless the last mapping covers
	 * it.
	 */
	if (addr < w->asked && !(w->have_last && w->last.start <= addr && addr < w->last.end)) {
		line_reader_rewind(&w->text);
		w->have_last = false;
		w->asked = addr;
	}
	if (addr > w->asked)
		w->asked = addr;
	if (w->have_last && w->last.end > addr) {
		*v = w->last;
		return 1;
	}
	while ((r = line_reader_next(&w->text, &line, &len)) == 1) {
		uint64_t s, e;

		if (vma_walk_parse_line(line, len, &s, &e))
			continue;
		/*
		 * The vsyscall page is not a VMA and cannot be advised.  Known by
		 * its address in the kernel half, never by its name: a file
		 * named "x [vsyscall]" must not hide its mapping from the walk.
		 */
		if (s >= VSYSCALL_FLOOR)
			continue;
		if (e <= addr)
			continue;
		w->last.start = s;
		w->last.end = e;
		w->have_last = true;
		*v = w->last;
		return 1;
	}
	return r;
}

static int walk_query(struct thp_vma_walk *w, uint64_t addr, struct thp_vma *v)
{
	struct procmap_query q;
	long r;

	memset(&q, 0, sizeof(q));
	q.size = sizeof(q);
	q.query_addr = addr;
	q.query_flags = PROCMAP_QUERY_COVERING_OR_NEXT_VMA;
	r = sys_ioctl(w->text.fd, PROCMAP_QUERY, &q);
	if (caps_procmap_query_answer(r) == 0) {
		/* A kernel before 6.11: parse this very file instead. */
		w->use_query = false;
		return walk_text(w, addr, v);
	}
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return (int)r;
	v->start = q.vma_start;
	v->end = q.vma_end;
	return 1;
}

int vma_walk_next(struct thp_vma_walk *w, uint64_t addr, struct thp_vma *v)
{
	return w->use_query ? walk_query(w, addr, v) : walk_text(w, addr, v);
}
