// SPDX-License-Identifier: LGPL-2.1-or-later
/* The /proc text reader: refills, cut lines, the jump to a line's first byte, and close. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "line_reader.h"
#include "proc.h"
#include "report.h"
#include "syscall.h"

void line_reader_rewind(struct line_reader *lr)
{
	lr->len = lr->pos = 0;
	lr->off = 0;
	lr->eof = false;
	lr->skip_rest = false;
	lr->scan = 0;
	lr->nl_mask = 0;
}

void line_reader_init(struct line_reader *lr, int fd)
{
	lr->fd = fd;
	lr->buf = lr->small;
	lr->cap = sizeof(lr->small);
	lr->lent = false;
	line_reader_rewind(lr);
}

void line_reader_grow(struct line_reader *lr, size_t cap)
{
	char *big;

	if (lr->buf != lr->small || lr->len || cap <= lr->cap)
		return;
	big = malloc(cap);
	if (big) {
		lr->buf = big;
		lr->cap = cap;
	}
}

void line_reader_lend(struct line_reader *lr, char *buf, size_t cap)
{
	if (lr->buf != lr->small || lr->len || cap <= lr->cap)
		return;
	lr->buf = buf;
	lr->cap = cap;
	lr->lent = true;
}

/*
 * A file that read to its end but now reads empty from its start was
 * emptied under us: a /proc/PID file whose process lost its address space
 * (it is exiting).  What was read is then a truncated list, not a short
 * one.  (A live process always has a mapping; an empty file never gets here.)
 */
static int check_eof(struct line_reader *lr)
{
	char c;
	long n;

	if (lr->off == 0)
		return 0;
	n = sys_pread(lr->fd, &c, 1, 0);
	if (n < 0)
		return (int)n;
	if (n == 0) {
		report_set_detail("the file emptied while it was read: the process is exiting");
		return -ESRCH;
	}
	return 0;
}

/* line_reader_next()'s mask starts again at pos (pos moved, or the buffer did). */
static int resync(struct line_reader *lr, int r)
{
	lr->scan = lr->pos;
	lr->nl_mask = 0;
	return r;
}

int line_reader_next_slow(struct line_reader *lr, const char **line, size_t *len)
{
	for (;;) {
		char *nl;
		long n;

		if (lr->skip_rest) {
			/* The tail of a line cut at the buffer size: never a line of its own. */
			nl = memchr(lr->buf + lr->pos, '\n', lr->len - lr->pos);
			lr->pos = nl ? (size_t)(nl + 1 - lr->buf) : lr->len;
			lr->skip_rest = !nl;
		}
		nl = lr->skip_rest ? NULL : memchr(lr->buf + lr->pos, '\n', lr->len - lr->pos);
		if (nl) {
			*line = lr->buf + lr->pos;
			*len = (size_t)(nl - *line);
			lr->pos += *len + 1;
			return resync(lr, 1);
		}
		if (lr->eof)
			return check_eof(lr);
		/* Keep the partial line, refill behind it. */
		memmove(lr->buf, lr->buf + lr->pos, lr->len - lr->pos);
		lr->len -= lr->pos;
		lr->pos = 0;
		resync(lr, 0);
		if (lr->len == lr->cap) {
			/*
			 * A line longer than the buffer (a long file name): hand
			 * out its start, which holds the address range, and skip
			 * the rest up to its newline.
			 */
			*line = lr->buf;
			*len = lr->len;
			lr->pos = lr->len;
			lr->skip_rest = true;
			return resync(lr, 1);
		}
		n = sys_pread(lr->fd, lr->buf + lr->len, lr->cap - lr->len, lr->off);
		if (n < 0)
			return (int)n;
		if (n == 0)
			lr->eof = true;
		lr->off += n;
		lr->len += (size_t)n;
	}
}

int line_reader_next_starting(struct line_reader *lr, char c, const char **line, size_t *len)
{
	/* A "line starting with a newline" would be an empty one: not what this finds. */
	if (c == '\n')
		return -EINVAL;
	for (;;) {
		const char *l;
		size_t n;
		int r;

		/* pos is a line start unless inside the tail of a cut line. */
		if (!lr->skip_rest && lr->pos < lr->len) {
			const char *b = lr->buf, *end = b + lr->len, *hit = NULL;

			if (b[lr->pos] == c)
				hit = b + lr->pos;
			for (const char *q = b + lr->pos + 1; !hit && q < end; q++) {
				q = memchr(q, c, (size_t)(end - q));
				if (!q)
					break;
				if (q[-1] == '\n')
					hit = q;
			}
			if (hit) {
				const char *nl = memchr(hit, '\n', (size_t)(end - hit));

				if (nl) {
					*line = hit;
					*len = (size_t)(nl - hit);
					lr->pos = (size_t)(nl + 1 - b);
					return resync(lr, 1);
				}
				/* Cut at the buffer's end: the slow path completes it. */
				lr->pos = (size_t)(hit - b);
			} else {
				/* None here: all but a partial last line is passed over. */
				const char *last = memrchr(b + lr->pos, '\n', lr->len - lr->pos);

				if (last)
					lr->pos = (size_t)(last + 1 - b);
			}
			resync(lr, 0);
		}
		r = line_reader_next_slow(lr, &l, &n);
		if (r <= 0)
			return r;
		if (n && l[0] == c) {
			*line = l;
			*len = n;
			return 1;
		}
	}
}

void line_reader_close(struct line_reader *lr)
{
	if (lr->fd >= 0)
		sys_close(lr->fd);
	lr->fd = -1;
	if (lr->buf != lr->small && !lr->lent)
		free(lr->buf);
	lr->buf = lr->small;
	lr->lent = false;
	lr->cap = sizeof(lr->small);
}

int line_reader_open_proc(struct line_reader *lr, const struct thp_target *t,
			  const char *file)
{
	char path[64];

	line_reader_init(lr, sys_open(proc_path(t, file, path, sizeof(path)), O_RDONLY));
	if (lr->fd >= 0)
		return 0;
	report_set_detail("cannot open %s: %s", path, strerror(-lr->fd));
	return lr->fd == -ENOENT && !t->self ? -ESRCH : lr->fd;
}
