// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Fuzz the /proc text parsers (white-box) with malformed text:
 * - the /proc/PID/maps line parser: it must never crash or read past @len,
 *   and an accepted line must have start < end;
 * - the whole input as a /proc file, through the line reader and the smaps
 *   reader that thp_query() and the default policy use: lines handed out lie
 *   inside the text, hold no newline and add up to no more than the text,
 *   and every smaps entry comes from an accepted header, with a terminated
 *   name, at most one per line; the default policy's advice-only reader
 *   hands out the same ranges and hg/nh.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* memfd_create() */
#endif
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "internal.h"

static void check_line_parser(const char *text, size_t size)
{
	uint64_t start = 0xdeadbeef, end = 0xdeadbeef;
	int r = vma_walk_parse_line(text, size, &start, &end);

	if (r != 0 && r != -EINVAL)
		abort();
	if (r == 0 && !(start < end))
		abort();
	/* Every prefix too: the walk hands the parser partial buffers. */
	for (size_t n = 0; n < size && n < 64; n++) {
		r = vma_walk_parse_line(text, n, &start, &end);
		if (r == 0 && !(start < end))
			abort();
	}
}

/* The input as the contents of a file, read back as /proc text is. */
static int text_file(const uint8_t *data, size_t size)
{
	static int fd = -1;

	if (fd < 0)
		fd = memfd_create("fuzz_parsers", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, 0) ||
	    (size && pwrite(fd, data, size, 0) != (ssize_t)size))
		abort();
	return fd;
}

static size_t count_lines(const uint8_t *data, size_t size)
{
	size_t n = 0;

	for (size_t i = 0; i < size; i++)
		n += data[i] == '\n';
	return n;
}

/*
 * Every line is the input's bytes up to a newline (a line as long as the
 * buffer is cut there and its rest skipped; an unterminated last line is
 * not a line, unless it is cut); line_reader_next_if() gives the same lines, filtered by
 * their first byte (the table taken from the input).
 */
static void check_line_reader(const uint8_t *data, int fd, size_t size)
{
	struct line_reader lr, lf, ls;
	const char *line, *fline, *sline;
	size_t len, flen, slen, off = 0;
	bool want[256];
	/* line_reader_next_starting(): the lines that start with this byte (not a newline). */
	char first = size > 1 && data[1] != '\n' ? (char)data[1] : 'V';
	int r, fr;

	for (int c = 0; c < 256; c++)
		want[c] = size && ((c * 7 + data[0]) & 2);
	line_reader_init(&lr, fd);
	line_reader_init(&lf, fd);
	line_reader_init(&ls, fd);
	while ((r = line_reader_next(&lr, &line, &len)) == 1) {
		const uint8_t *nl;

		if (line < lr.buf || line + len > lr.buf + lr.cap || memchr(line, '\n', len) ||
		    off + len > size || memcmp(line, data + off, len))
			abort();
		if (len < lr.cap && (off + len == size || data[off + len] != '\n'))
			abort();
		/* The next line starts after this one's newline (a cut one may have none). */
		nl = memchr(data + off + len, '\n', size - off - len);
		if (!nl && len < lr.cap)
			abort();
		off = nl ? (size_t)(nl - data) + 1 : size;
		if (len && line[0] == first &&
		    (line_reader_next_starting(&ls, first, &sline, &slen) != 1 || slen != len ||
		     memcmp(sline, line, len)))
			abort();
		if (!len || !want[(unsigned char)line[0]])
			continue;
		fr = line_reader_next_if(&lf, want, &fline, &flen);
		if (fr != 1 || flen != len || memcmp(fline, line, len))
			abort();
	}
	if (r != 0 || line_reader_next_if(&lf, want, &fline, &flen) != 0 ||
	    line_reader_next_starting(&ls, first, &sline, &slen) != 0)
		abort();
	/* Only an unterminated tail is left. */
	if (memchr(data + off, '\n', size - off))
		abort();
}

/*
 * smaps_next_advice() reads a header and then jumps to the entry's
 * VmFlags line, the last line of every entry the kernel writes.  Its
 * specification, one line at a time: a header (a line vma_walk_parse_line()
 * takes) starts an entry; in an entry, the first line that starts with
 * "VmFlags:" ends it with its hg/nh (other lines, other 'V' lines too, are
 * passed over); the end of the file ends an open entry without advice.
 */
struct advice_ref {
	struct line_reader lr;
	struct smaps_advice cur;
	bool have;
};

static int advice_ref_next(struct advice_ref *ref, struct smaps_advice *a)
{
	const char *line;
	size_t len;
	uint64_t s, e;
	int r;

	while ((r = line_reader_next(&ref->lr, &line, &len)) == 1) {
		if (!ref->have) {
			if (vma_walk_parse_line(line, len, &s, &e) == 0) {
				ref->cur = (struct smaps_advice){ .start = s, .end = e };
				ref->have = true;
			}
			continue;
		}
		if (len < 8 || memcmp(line, "VmFlags:", 8))
			continue;
		/* Two-letter flags every third column from column 9, as the kernel prints them. */
		for (size_t col = 9; col + 2 <= len; col += 3)
			if (!memcmp(line + col, "hg", 2))
				ref->cur.huge = true;
			else if (!memcmp(line + col, "nh", 2))
				ref->cur.nohuge = true;
		*a = ref->cur;
		ref->have = false;
		return 1;
	}
	if (r == 0 && ref->have) {
		*a = ref->cur;
		ref->have = false;
		return 1;
	}
	return r;
}

/*
 * smaps_next_advice() against its specification; smaps_next() (every line,
 * in any order) for sane entries.  That the two agree on the text the
 * kernel writes is tests/test_query.c's smaps_readers_agree.
 */
static void check_smaps_reader(int fd, size_t lines)
{
	struct smaps_reader sr, sa;
	struct advice_ref ref = { .have = false };
	struct thp_mapping_state m;
	struct smaps_advice a, want;
	size_t entries = 0;
	int r;

	smaps_reader_init(&sa, fd);
	line_reader_init(&ref.lr, fd);
	while ((r = advice_ref_next(&ref, &want)) == 1) {
		if (++entries > lines + 1)
			abort();
		if (smaps_next_advice(&sa, &a) != 1 || a.start != want.start || a.end != want.end ||
		    a.huge != want.huge || a.nohuge != want.nohuge || !(a.start < a.end))
			abort();
	}
	if (r != 0 || smaps_next_advice(&sa, &a) != 0)
		abort();
	smaps_reader_init(&sr, fd);
	entries = 0;
	while ((r = smaps_next(&sr, &m)) == 1)
		if (!(m.start < m.end) || !memchr(m.name, 0, sizeof(m.name)) || ++entries > lines + 1)
			abort();
	if (r != 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd;

	/*
	 * @data is already an exact-size heap copy (libFuzzer and
	 * replay_main.c both make one), so ASan catches any read past @size.
	 */
	check_line_parser((const char *)data, size);

	fd = text_file(data, size);
	check_line_reader(data, fd, size);
	check_smaps_reader(fd, count_lines(data, size));
	return 0;
}
