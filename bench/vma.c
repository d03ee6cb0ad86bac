// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * thp_bench vma: the PROCMAP_QUERY ioctl walk against parsing /proc/self/maps text.
 */
#include "bench.h"

static size_t walk_procmap_query(void)
{
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	uint64_t addr = 0;
	size_t n = 0;

	if (fd < 0)
		die("open maps");
	for (;;) {
		struct procmap_query q;

		memset(&q, 0, sizeof(q));
		q.size = sizeof(q);
		q.query_addr = addr;
		q.query_flags = PROCMAP_QUERY_COVERING_OR_NEXT_VMA;
		if (ioctl(fd, PROCMAP_QUERY, &q)) {
			if (errno == ENOENT)
				break;
			die("PROCMAP_QUERY");
		}
		addr = q.vma_end;
		n++;
	}
	close(fd);
	return n;
}

static uint64_t parse_hex(const char **p, const char *end)
{
	uint64_t v = 0;

	while (*p < end) {
		char ch = **p;

		if (ch >= '0' && ch <= '9')
			v = v << 4 | (uint64_t)(ch - '0');
		else if (ch >= 'a' && ch <= 'f')
			v = v << 4 | (uint64_t)(ch - 'a' + 10);
		else
			break;
		(*p)++;
	}
	return v;
}

static size_t walk_maps_text(void)
{
	static char buf[1 << 16];
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	size_t len = 0, n = 0;
	uint64_t sum = 0;

	if (fd < 0)
		die("open maps");
	for (;;) {
		ssize_t r = read(fd, buf + len, sizeof(buf) - len);
		const char *p = buf, *e;

		if (r < 0)
			die("read maps");
		len += (size_t)r;
		e = buf + len;
		for (;;) {
			const char *nl = memchr(p, '\n', (size_t)(e - p));
			uint64_t s, t;

			if (!nl)
				break;
			s = parse_hex(&p, nl);
			if (p < nl && *p == '-')
				p++;
			t = parse_hex(&p, nl);
			sum += t - s;
			n++;
			p = nl + 1;
		}
		len = (size_t)(e - p);
		memmove(buf, p, len);
		if (r == 0)
			break;
	}
	close(fd);
	return sum ? n : 0;
}

void bench_vma(void)
{
	static const size_t counts[] = { 100, 10000, 60000 };

	printf("\n## 3. VMA enumeration: PROCMAP_QUERY ioctl loop vs /proc/self/maps text, %d reps\n\n", REPS);
	printf("Times in milliseconds per full walk; ratio = ioctl / text of the same rep.\n\n");
	printf("| created | VMAs   | ioctl med / min / max (ms)        | text med / min / max (ms)         | ratio                 | faster |\n");
	printf("|--------:|-------:|-----------------------------------|-----------------------------------|-----------------------|--------|\n");
	for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
		size_t n = counts[c], vq = 0, vt = 0;
		double tq[REPS], tt[REPS];
		struct compare cmp;

		ensure_map_count((long)n + 5000);
		make_small_maps(n);
		for (int rep = -2; rep < REPS; rep++) {
			double t0, t1, t2;

			t0 = now_ns();
			vq = walk_procmap_query();
			t1 = now_ns();
			vt = walk_maps_text();
			t2 = now_ns();
			if (rep >= 0) {
				tq[rep] = t1 - t0;
				tt[rep] = t2 - t1;
			}
		}
		cmp = compare(tq, tt, REPS);
		printf("| %7zu | %6zu |", n, vq);
		print_compare(&cmp, 1e6, "vma", "PROCMAP_QUERY vs maps text", vq, "ms");
		printf(" %s |\n", cmp.ratio.med < 1 ? "ioctl" : "text");
		if (vq + 1 < vt || vt + 1 < vq) /* text also lists [vsyscall] */
			printf("(warning: ioctl saw %zu VMAs, text %zu)\n", vq, vt);
		free_small_maps();
	}
}
