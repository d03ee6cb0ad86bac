// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Fuzz the /proc text parsers (white-box) with malformed text:
 * - the /proc/PID/maps line parser: it must never crash or read past @len,
 *   and an accepted line must have start < end;
 * - the whole input as a /proc file, through the line reader and the smaps
 *   reader that thp_query() and the default policy use: lines handed out lie
 *   inside the text, hold no newline and add up to no more than the text,
 *   and every smaps entry comes from an accepted header, with a terminated
 *   name, at most one per line.
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
	int r = maps_parse_line(text, size, &start, &end);

	if (r != 0 && r != -EINVAL)
		abort();
	if (r == 0 && !(start < end))
		abort();
	/* Every prefix too: the walk hands the parser partial buffers. */
	for (size_t n = 0; n < size && n < 64; n++) {
		r = maps_parse_line(text, n, &start, &end);
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

static void check_line_reader(int fd, size_t size)
{
	struct line_reader lr;
	const char *line;
	size_t len, bytes = 0;
	int r;

	line_reader_init(&lr, fd);
	while ((r = line_reader_next(&lr, &line, &len)) == 1) {
		if (line < lr.buf || line + len > lr.buf + sizeof(lr.buf) ||
		    memchr(line, '\n', len))
			abort();
		/* A cut line (as long as the buffer) need not end in a newline. */
		bytes += len + (len < sizeof(lr.buf));
	}
	/*
	 * A line longer than the buffer yields its start once and no line
	 * from its rest: no line is invented.
	 */
	if (r != 0 || bytes > size)
		abort();
}

static void check_smaps_reader(int fd, size_t lines)
{
	struct smaps_reader sr;
	struct thp_mapping_state m;
	size_t entries = 0;
	int r;

	smaps_reader_init(&sr, fd);
	while ((r = smaps_next(&sr, &m)) == 1) {
		if (!(m.start < m.end) || !memchr(m.name, 0, sizeof(m.name)))
			abort();
		if (++entries > lines + 1)
			abort();
	}
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
	check_line_reader(fd, size);
	check_smaps_reader(fd, count_lines(data, size));
	return 0;
}
