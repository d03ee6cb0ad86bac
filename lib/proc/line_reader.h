/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The /proc text reader (maps, smaps): whole lines from a fixed buffer, no other libthp part. */
#ifndef THP_LINE_READER_H
#define THP_LINE_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* /proc text (maps, smaps), line by line, with a fixed buffer: no allocation. */
struct line_reader {
	int fd;
	size_t len, pos;
	off_t off;
	bool eof;
	bool skip_rest; /* inside the tail of a line cut at the buffer size */
	char *buf;      /* small, or a larger one from line_reader_grow() or _lend() */
	bool lent;      /* buf is the caller's: not freed */
	size_t cap;
	size_t scan;      /* line_reader_next(): newlines before this are known */
	uint64_t nl_mask; /* ...and these of buf[scan - 64, scan) not handed out */
	char small[8192];
};

/* Read @fd from its start (the fuzz target feeds text through a memfd). */
void line_reader_init(struct line_reader *lr, int fd);
/* Read the same file again from its start, keeping its descriptor and buffer. */
void line_reader_rewind(struct line_reader *lr);
/*
 * The next whole line, without its newline, valid until the next call.
 * 1, 0 at the end, or -errno (-ESRCH: the file emptied while it was read,
 * its process is exiting).  A line longer than the buffer is cut: its first
 * cap bytes are handed out and the rest is skipped.
 */
int line_reader_next_slow(struct line_reader *lr, const char **line, size_t *len);
/*
 * The next line.  smaps has some 24 lines an entry, most of them 27 bytes:
 * finding each newline from the last one makes every line wait for the
 * one before (a chain of loads through pos).  With SSE2 the newlines of
 * 64 bytes at a time go into a bit mask instead, and a line is a bit scan.
 * nl_mask holds the newlines of buf[scan - 64, scan) not yet handed out;
 * none lies in [pos, scan) before its lowest bit.
 */
#if defined(__SSE2__)
static inline uint64_t line_reader_nl64(const char *p)
{
	const __m128i nl = _mm_set1_epi8('\n');
#define NL16(i)                                                                              \
	((uint64_t)(uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(                               \
		 _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * (i))), nl))         \
	 << (16 * (i)))

	return NL16(0) | NL16(1) | NL16(2) | NL16(3);
#undef NL16
}
#endif

/*
 * The next line, or with @want the next one whose first byte @want marks
 * (an empty line never is): the lines passed over cost a bit scan and a
 * table lookup each, not a return to the caller (smaps: some 19 of 24
 * lines an entry).  Every field of @lr is read before any is written, and
 * line and len go through locals: no store forces a reload.
 */
static inline int line_reader_take(struct line_reader *lr, const bool *want, const char **line,
				   size_t *len)
{
	for (;;) {
		const char *l;
		size_t n;
		int r;
#if defined(__SSE2__)
		uint64_t mask = lr->nl_mask;
		size_t scan = lr->scan, pos = lr->pos;
		const char *buf = lr->buf;

		for (;;) {
			size_t nl;

			while (!mask && !lr->skip_rest && scan + 64 <= lr->len) {
				mask = line_reader_nl64(buf + scan);
				scan += 64;
			}
			if (!mask)
				break;
			nl = scan - 64 + (size_t)__builtin_ctzll(mask);
			mask &= mask - 1;
			if (!want || (nl > pos && want[(unsigned char)buf[pos]])) {
				lr->nl_mask = mask;
				lr->scan = scan;
				lr->pos = nl + 1;
				*line = buf + pos;
				*len = nl - pos;
				return 1;
			}
			pos = nl + 1;
		}
		lr->nl_mask = 0;
		lr->scan = scan;
		lr->pos = pos;
#endif
		r = line_reader_next_slow(lr, &l, &n);
		if (r <= 0)
			return r;
		if (!want || (n && want[(unsigned char)l[0]])) {
			*line = l;
			*len = n;
			return 1;
		}
	}
}

static inline int line_reader_next(struct line_reader *lr, const char **line, size_t *len)
{
	return line_reader_take(lr, NULL, line, len);
}

static inline int line_reader_next_if(struct line_reader *lr, const bool want[256],
				      const char **line, size_t *len)
{
	return line_reader_take(lr, want, line, len);
}

/*
 * The next line that starts with @c (not '\n': -EINVAL), as
 * line_reader_next() returns lines; the lines before it are passed over
 * with memchr(), not one by one.  For a byte that starts few lines: smaps
 * has 24 lines an entry and one, the last, starting with 'V'.
 */
int line_reader_next_starting(struct line_reader *lr, char c, const char **line, size_t *len);

/*
 * A reader of a long file (smaps of a big process: ~700 bytes a mapping)
 * reads @cap bytes a system call instead of 8 KiB: each read() of a /proc
 * file finds its place in the address space again.  Best effort: without
 * memory the small buffer stays.  Before the first line only.
 */
void line_reader_grow(struct line_reader *lr, size_t cap);
/* As line_reader_grow(), with the caller's buffer: for a reader that must not allocate. */
void line_reader_lend(struct line_reader *lr, char *buf, size_t cap);
/* Close the file (a reader that failed to open holds none) and free a grown buffer. */
void line_reader_close(struct line_reader *lr);

#endif /* THP_LINE_READER_H */
