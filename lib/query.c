// SPDX-License-Identifier: LGPL-2.1-or-later
/* thp_query(): per-mapping THP state from /proc/PID/smaps. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "syscall.h"

static bool has_prefix(const char *line, size_t len, const char *p)
{
	size_t pl = strlen(p);

	return len >= pl && !memcmp(line, p, pl);
}

static uint64_t kb_field(const char *line, size_t len, size_t skip)
{
	char tmp[32];
	size_t n = len - skip < sizeof(tmp) - 1 ? len - skip : sizeof(tmp) - 1;

	memcpy(tmp, line + skip, n);
	tmp[n] = 0;
	return strtoull(tmp, NULL, 10) * 1024;
}

/* Header: "start-end perms offset dev inode   name". */
static void parse_header(const char *line, size_t len, struct thp_mapping_state *m)
{
	size_t field = 0, i = 0;

	memset(m, 0, sizeof(*m));
	maps_parse_line(line, len, &m->start, &m->end);
	while (i < len && field < 5) {
		while (i < len && line[i] != ' ')
			i++;
		while (i < len && line[i] == ' ')
			i++;
		field++;
	}
	if (i < len) {
		size_t n = len - i < sizeof(m->name) - 1 ? len - i : sizeof(m->name) - 1;

		memcpy(m->name, line + i, n);
	}
	m->anonymous = m->name[0] != '/';
}

static void parse_vmflags(const char *line, size_t len, struct thp_mapping_state *m)
{
	for (size_t i = 9; i + 2 <= len; i += 3) {
		if (line[i] == 'h' && line[i + 1] == 'g')
			m->advised_huge = true;
		if (line[i] == 'n' && line[i + 1] == 'h')
			m->advised_nohuge = true;
	}
}

THP_API int thp_query(struct thp_query_opts *opts)
{
	struct line_reader lr;
	struct thp_target t;
	struct thp_mapping_state cur;
	bool have = false;
	size_t written = 0;
	uint64_t qend;
	int err;

	report_clear_detail();
	err = opts_check(opts, sizeof(*opts), THP_QUERY_OPTS_SIZE_VER0);
	if (err)
		return ret_errno(err);
	if (opts->flags) {
		report_set_detail("unknown flags 0x%x", opts->flags);
		return ret_errno(-EINVAL);
	}
	if (opts->states_cap && !opts->states) {
		report_set_detail("states is NULL but states_cap is %zu", opts->states_cap);
		return ret_errno(-EINVAL);
	}
	if (opts->len && opts->addr + opts->len < opts->addr)
		return ret_errno(-EINVAL);
	qend = opts->len ? opts->addr + opts->len : UINT64_MAX;
	err = target_open(opts->pidfd, &t);
	if (err)
		return ret_errno(err);
	err = line_reader_open_proc(&lr, &t, "smaps");
	if (err)
		goto out;
	opts->states_needed = 0;
	for (;;) {
		const char *line = NULL;
		size_t len = 0;
		int r = line_reader_next(&lr, &line, &len);
		uint64_t s, e;
		bool header = r == 1 && maps_parse_line(line, len, &s, &e) == 0;

		if (r < 0) {
			err = r;
			break;
		}
		/* A header line (or EOF) closes the mapping before it. */
		if ((r == 0 || header) && have) {
			if (cur.end > opts->addr && cur.start < qend) {
				if (written < opts->states_cap)
					opts->states[written++] = cur;
				opts->states_needed++;
			}
			have = false;
		}
		/* smaps lists mappings in address order: nothing past qend can
		 * match, so stop reading (the kernel formats each entry). */
		if (r == 0 || (header && s >= qend))
			break;
		if (header) {
			parse_header(line, len, &cur);
			have = true;
		} else if (!have) {
			continue;
		} else if (has_prefix(line, len, "AnonHugePages:")) {
			cur.anon_huge_bytes = kb_field(line, len, 14);
		} else if (has_prefix(line, len, "Rss:")) {
			cur.rss_bytes = kb_field(line, len, 4);
		} else if (has_prefix(line, len, "THPeligible:")) {
			cur.thp_eligible = kb_field(line, len, 12) != 0;
		} else if (has_prefix(line, len, "VmFlags:")) {
			parse_vmflags(line, len, &cur);
		}
	}
	sys_close(lr.fd);
	if (!err) {
		err = target_alive(&t);
		if (!err)
			err = (int)written;
	}
out:
	target_close(&t);
	return ret_errno(err);
}
