// SPDX-License-Identifier: LGPL-2.1-or-later
/* Reading /proc/PID/smaps one mapping at a time: the reader thp_query(), the collapse pass and
 * advise_existing share. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "folio_scan.h"
#include "internal.h"
#include "proc.h"
#include "syscall.h"

/* Does @line start with the string literal @lit? */
#define HAS_PREFIX(line, len, lit) ((len) >= sizeof(lit) - 1 && !memcmp((line), (lit), sizeof(lit) - 1))

/*
 * "Name:   1234 kB" from @skip on, in bytes; digits read in place.  The
 * kernel right-aligns the number before " kB": read it from there back,
 * not through the padding.
 */
static uint64_t kb_field(const char *line, size_t len, size_t skip)
{
	uint64_t v = 0;
	size_t i, end = len;

	/* Most fields of most mappings are "       0 kB": one compare. */
	if (len >= skip + 5 && !memcmp(line + len - 5, " 0 kB", 5))
		return 0;
	if (len >= skip + 4 && !memcmp(line + len - 3, " kB", 3))
		end = len - 3;
	i = end;
	while (i > skip && line[i - 1] >= '0' && line[i - 1] <= '9')
		i--;
	if (i == end) {
		/* Not right-aligned digits: the first number after @skip. */
		for (i = skip; i < len && line[i] == ' '; i++)
			;
		end = len;
	}
	for (; i < end && line[i] >= '0' && line[i] <= '9' && v < UINT64_MAX / 10240; i++)
		v = v * 10 + (uint64_t)(line[i] - '0');
	return v * 1024;
}

/* Header: "start-end perms offset dev inode   name". */
/* The rest of a header whose range [start, end) vma_walk_parse_line() has read. */
static void parse_header(const char *line, size_t len, uint64_t start, uint64_t end,
			 struct thp_mapping_state *m, struct smaps_extra *x)
{
	/* The range is read: start at the space after it. */
	const char *sp = memchr(line, ' ', len);
	size_t field = 0, i = sp ? (size_t)(sp - line) : len;

	memset(m, 0, sizeof(*m));
	memset(x, 0, sizeof(*x));
	m->start = start;
	m->end = end;
	while (i < len && field < 5) {
		while (i < len && line[i] != ' ')
			i++;
		/* The kernel pads the name to column 73: most of a header is spaces. */
		for (uint64_t w; i + 8 <= len; i += 8) {
			memcpy(&w, line + i, sizeof(w));
			if (w != 0x2020202020202020ULL)
				break;
		}
		while (i < len && line[i] == ' ')
			i++;
		field++;
		/* perms "rwxp": the fourth letter is p(rivate) or s(hared). */
		if (field == 1 && i + 3 < len)
			x->shared = line[i + 3] == 's';
		/* inode: anything but "0" is a file. */
		if (field == 4 && i < len)
			x->file = !(line[i] == '0' && (i + 1 == len || line[i + 1] == ' '));
	}
	if (i < len) {
		size_t n = len - i < sizeof(m->name) - 1 ? len - i : sizeof(m->name) - 1;

		memcpy(m->name, line + i, n);
	}
	m->anonymous = m->name[0] != '/';
}

static void parse_vmflags(const char *line, size_t len, struct thp_mapping_state *m,
			  struct smaps_extra *x)
{
	for (size_t i = 9; i + 2 <= len; i += 3) {
		if (line[i] == 'h' && line[i + 1] == 'g')
			m->advised_huge = true;
		if (line[i] == 'n' && line[i + 1] == 'h')
			m->advised_nohuge = true;
		if ((line[i] == 'i' && line[i + 1] == 'o') || (line[i] == 'p' && line[i + 1] == 'f'))
			x->special = true;
	}
}

bool smaps_private_anon(const struct thp_mapping_state *m, const struct smaps_extra *x)
{
	if (x->shared || x->file || x->special)
		return false;
	/* [vdso], [vvar], [vsyscall] and the like are anonymous but not memory. */
	return !m->name[0] || !strcmp(m->name, "[heap]") || !strcmp(m->name, "[stack]") ||
	       !strncmp(m->name, "[anon:", 6);
}

void smaps_reader_init(struct smaps_reader *sr, int fd)
{
	line_reader_init(&sr->lr, fd);
	sr->have = false;
}

int smaps_open(struct smaps_reader *sr, const struct thp_target *t, char *buf, size_t cap)
{
	int err;

	sr->have = false;
	err = line_reader_open_proc(&sr->lr, t, "smaps");
	if (err)
		return err;
	/* 64 KiB a read(): one in eight system calls at 60k mappings. */
	if (buf)
		line_reader_lend(&sr->lr, buf, cap);
	else
		line_reader_grow(&sr->lr, SMAPS_READ_SIZE);
	return 0;
}

/*
 * An entry is complete when the next header (or the end) is read, so the
 * reader keeps the entry being filled and hands it out then.
 */
int smaps_next(struct smaps_reader *sr, struct thp_mapping_state *m)
{
	return smaps_next_x(sr, m, NULL);
}

static const bool smaps_line_matters[256] = {
	['A'] = true, ['R'] = true, ['T'] = true, ['V'] = true,
	['0' ... '9'] = true, ['a' ... 'f'] = true,
};

int smaps_next_x(struct smaps_reader *sr, struct thp_mapping_state *m, struct smaps_extra *x)
{
	for (;;) {
		const char *line = NULL;
		size_t len = 0;
		uint64_t s, e;
		int r = line_reader_next_if(&sr->lr, smaps_line_matters, &line, &len);

		if (r < 0)
			return r;
		if (r == 0) {
			if (!sr->have)
				return 0;
			*m = sr->cur;
			if (x)
				*x = sr->cur_x;
			sr->have = false;
			return 1;
		}
		/*
		 * About 24 lines an entry, and only six matter: dispatch on
		 * the first byte.  Field names start upper case; a header
		 * starts with a lower-case hex digit.  The reader passes over
		 * the lines whose first byte smaps_line_matters[] does not mark.
		 */
		switch (line[0]) {
		case 'A':
			if (sr->have && HAS_PREFIX(line, len, "AnonHugePages:"))
				sr->cur.anon_huge_bytes = kb_field(line, len, 14);
			else if (sr->have && HAS_PREFIX(line, len, "Anonymous:"))
				sr->cur_x.anon_bytes = kb_field(line, len, 10);
			continue;
		case 'R':
			if (sr->have && HAS_PREFIX(line, len, "Rss:"))
				sr->cur.rss_bytes = kb_field(line, len, 4);
			continue;
		case 'T':
			if (sr->have && HAS_PREFIX(line, len, "THPeligible:"))
				sr->cur.thp_eligible = kb_field(line, len, 12) != 0;
			continue;
		case 'V':
			if (sr->have && HAS_PREFIX(line, len, "VmFlags:"))
				parse_vmflags(line, len, &sr->cur, &sr->cur_x);
			continue;
		case '0' ... '9':
		case 'a' ... 'f':
			break;
		default:
			continue;
		}
		if (vma_walk_parse_line(line, len, &s, &e) == 0) {
			bool had = sr->have;

			if (had) {
				*m = sr->cur;
				if (x)
					*x = sr->cur_x;
			}
			parse_header(line, len, s, e, &sr->cur, &sr->cur_x);
			sr->have = true;
			if (had)
				return 1;
		}
	}
}

/*
 * Headers and VmFlags only.  VmFlags is the last line of every entry (the
 * kernel has printed it there since 3.8), so after a header the reader
 * jumps to the next line that starts with 'V', and the line after that is
 * the next header: two lines an entry looked at instead of 24.
 */
int smaps_next_advice(struct smaps_reader *sr, struct smaps_advice *a)
{
	for (;;) {
		const char *line = NULL;
		size_t len = 0;
		uint64_t s, e;
		int r = sr->have ? line_reader_next_starting(&sr->lr, 'V', &line, &len)
				 : line_reader_next(&sr->lr, &line, &len);

		if (r <= 0) {
			if (r < 0 || !sr->have)
				return r;
			*a = sr->cur_advice;
			sr->have = false;
			return 1;
		}
		if (sr->have) {
			/* Another 'V' line (none today) is passed over: VmFlags is the last. */
			if (!HAS_PREFIX(line, len, "VmFlags:"))
				continue;
			for (size_t i = 9; i + 2 <= len; i += 3) {
				sr->cur_advice.huge |= line[i] == 'h' && line[i + 1] == 'g';
				sr->cur_advice.nohuge |= line[i] == 'n' && line[i + 1] == 'h';
			}
			*a = sr->cur_advice;
			sr->have = false;
			return 1;
		}
		/* The line after a VmFlags line (or the first): a header. */
		if (vma_walk_parse_line(line, len, &s, &e) == 0) {
			sr->cur_advice = (struct smaps_advice){ .start = s, .end = e };
			sr->have = true;
		}
	}
}
