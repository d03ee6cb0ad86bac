// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * The table of doc/results/mthp-policies.md: which folio sizes memory gets
 * under each policy, for rows of the top-level and per-size settings.  A
 * guest program (it rewrites the THP sysfs files and restores them):
 *
 *   bash tests/vm/run_vm.sh BUILD/tests/vm BUILD/tests/vm/vm_init \
 *     distro/vmlinuz-debiansid-7.2.13-cloud-amd64 distro '' mthp-table \
 *     test=BUILD/tests/vm/mthp_policy_table
 *
 * prints TABLE lines, which vm_init passes on (BUILD/tests/vm/vm-logs/).
 * Each cell: a child process applies the policy as libthp makes it (HUGE
 * and NOHUGE as advice on the range, NEVER as PR_SET_THP_DISABLE, the
 * NOHUGE default as PR_SET_THP_DISABLE with PR_THP_DISABLE_EXCEPT_ADVISED,
 * 6.18+), writes every 4 KiB page of a 16 MiB mapping at a 2 MiB boundary
 * once, and the folios are counted from the per-size stats/ counters.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define THP "/sys/kernel/mm/transparent_hugepage/"
#define LEN (16UL << 20)
#define PMD (2UL << 20)
#define EXCEPT_ADVISED (1UL << 1)

static const int sizes_kb[] = { 8, 16, 32, 64, 128, 256, 512, 1024, 2048 };
#define NR_SIZES (sizeof(sizes_kb) / sizeof(sizes_kb[0]))

enum memory { ANON,
	      ANON_SHARED,
	      MEMFD };
enum policy { SYSTEM,
	      HUGE,
	      NOHUGE,
	      NEVER,
	      NOHUGE_DEFAULT,
	      NOHUGE_DEFAULT_HUGE_RANGE,
	      NR_POLICIES };
static const char *const policy_names[NR_POLICIES] = {
	"SYSTEM",
	"HUGE",
	"NOHUGE",
	"NEVER",
	"NOHUGE default",
	"NOHUGE default + HUGE range",
};

/* The bracketed word of a sysfs choice file, or the whole line. */
static void read_choice(const char *path, char *word, size_t len)
{
	char line[256] = "";
	FILE *f = fopen(path, "r");
	char *open, *close;

	if (f) {
		if (!fgets(line, sizeof(line), f))
			line[0] = '\0';
		fclose(f);
	}
	open = strchr(line, '[');
	close = open ? strchr(open, ']') : NULL;
	if (open && close) {
		*close = '\0';
		snprintf(word, len, "%s", open + 1);
	} else {
		line[strcspn(line, "\n")] = '\0';
		snprintf(word, len, "%s", line);
	}
}

static int write_choice(const char *path, const char *value)
{
	FILE *f = fopen(path, "w");
	int bad;

	if (!f)
		return -1;
	bad = fputs(value, f) < 0;
	return fclose(f) || bad ? -1 : 0;
}

static const char *size_file(int kb, const char *name)
{
	static char path[256];

	snprintf(path, sizeof(path), THP "hugepages-%dkB/%s", kb, name);
	return path;
}

static void counters(unsigned long *v, const char *stat)
{
	for (size_t i = 0; i < NR_SIZES; i++) {
		char name[64];
		FILE *f;

		snprintf(name, sizeof(name), "stats/%s", stat);
		f = fopen(size_file(sizes_kb[i], name), "r");
		v[i] = 0;
		if (f) {
			if (fscanf(f, "%lu", &v[i]) != 1)
				v[i] = 0;
			fclose(f);
		}
	}
}

static char *map_memory(enum memory kind)
{
	char *p;

	if (kind == MEMFD) {
		int fd = memfd_create("mthp-table", 0);

		if (fd < 0 || ftruncate(fd, (off_t)(LEN + PMD)))
			_exit(3);
		p = mmap(NULL, LEN + PMD, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		close(fd);
	} else {
		p = mmap(NULL, LEN + PMD, PROT_READ | PROT_WRITE,
			 (kind == ANON ? MAP_PRIVATE : MAP_SHARED) | MAP_ANONYMOUS, -1, 0);
	}
	if (p == MAP_FAILED)
		_exit(3);
	return (char *)(((unsigned long)p + PMD - 1) & ~(PMD - 1));
}

static void run_policy(enum memory kind, enum policy pol)
{
	char *m;

	if (pol == NEVER && prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0))
		_exit(4);
	if ((pol == NOHUGE_DEFAULT || pol == NOHUGE_DEFAULT_HUGE_RANGE) &&
	    prctl(PR_SET_THP_DISABLE, 1, EXCEPT_ADVISED, 0, 0))
		_exit(5);
	m = map_memory(kind);
	if (pol == HUGE || pol == NOHUGE_DEFAULT_HUGE_RANGE)
		madvise(m, LEN, MADV_HUGEPAGE);
	if (pol == NOHUGE)
		madvise(m, LEN, MADV_NOHUGEPAGE);
	for (unsigned long off = 0; off < LEN; off += 4096)
		m[off] = 1;
	_exit(0);
}

/* One cell: "256 x 64 KiB", "base pages only" or why the policy was refused. */
static void cell(enum memory kind, enum policy pol, char *out, size_t len)
{
	unsigned long before[NR_SIZES], after[NR_SIZES];
	const char *stat = kind == ANON ? "anon_fault_alloc" : "shmem_alloc";
	pid_t child;
	int st = 0;

	counters(before, stat);
	child = fork();
	if (child == 0)
		run_policy(kind, pol);
	if (child < 0 || waitpid(child, &st, 0) != child) {
		snprintf(out, len, "no child");
		return;
	}
	counters(after, stat);
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		snprintf(out, len, WIFEXITED(st) && WEXITSTATUS(st) == 5 ? "refused (no EXCEPT_ADVISED)" : "failed (status %d)",
			 st);
		return;
	}
	out[0] = '\0';
	for (size_t i = NR_SIZES; i-- > 0;) {
		size_t used = strlen(out);

		if (after[i] <= before[i])
			continue;
		if (sizes_kb[i] >= 1024)
			snprintf(out + used, len - used, "%s%lu x %d MiB", used ? " + " : "",
				 after[i] - before[i], sizes_kb[i] / 1024);
		else
			snprintf(out + used, len - used, "%s%lu x %d KiB", used ? " + " : "",
				 after[i] - before[i], sizes_kb[i]);
	}
	if (!out[0])
		snprintf(out, len, "base pages only");
}

static void table(const char *title, enum memory kind, const char *top_file, const char *size_name,
		  const char *const (*rows)[3], size_t nr_rows)
{
	printf("TABLE %s\nTABLE | top-level | 64 KiB | 2 MiB |", title);
	for (int p = 0; p < NR_POLICIES; p++)
		printf(" %s |", policy_names[p]);
	printf("\nTABLE |---|---|---|");
	for (int p = 0; p < NR_POLICIES; p++)
		printf("---|");
	printf("\n");
	for (size_t r = 0; r < nr_rows; r++) {
		int bad = write_choice(top_file, rows[r][0]) |
			  write_choice(size_file(64, size_name), rows[r][1]) |
			  write_choice(size_file(2048, size_name), rows[r][2]);

		printf("TABLE | %s | %s | %s |", rows[r][0], rows[r][1], rows[r][2]);
		for (int p = 0; p < NR_POLICIES; p++) {
			char c[256];

			if (bad)
				snprintf(c, sizeof(c), "(setting refused)");
			else
				cell(kind, (enum policy)p, c, sizeof(c));
			printf(" %s |", c);
		}
		printf("\n");
	}
}

int main(void)
{
	static const char *const anon_rows[][3] = {
		{ "madvise", "madvise", "never" },
		{ "madvise", "madvise", "inherit" },
		{ "always", "inherit", "never" },
		{ "madvise", "always", "never" },
		{ "never", "madvise", "inherit" },
		{ "always", "never", "inherit" },
	};
	static const char *const shmem_rows[][3] = {
		{ "advise", "inherit", "inherit" },
		{ "never", "advise", "never" },
		{ "never", "always", "never" },
		{ "always", "never", "inherit" },
		{ "within_size", "never", "inherit" },
		{ "advise", "never", "inherit" },
	};
	char top[64], shmem_top[64], saved[NR_SIZES][64], saved_shmem[NR_SIZES][64];
	char release[128] = "";
	FILE *f = fopen("/proc/sys/kernel/osrelease", "r");

	if (f) {
		if (fgets(release, sizeof(release), f))
			release[strcspn(release, "\n")] = '\0';
		fclose(f);
	}
	if (access(size_file(64, "enabled"), W_OK)) {
		printf("TABLE kernel %s: no per-size THP controls\n", release);
		return 0;
	}
	read_choice(THP "enabled", top, sizeof(top));
	read_choice(THP "shmem_enabled", shmem_top, sizeof(shmem_top));
	/* Every size never but the two a row sets. */
	for (size_t i = 0; i < NR_SIZES; i++) {
		read_choice(size_file(sizes_kb[i], "enabled"), saved[i], sizeof(saved[i]));
		read_choice(size_file(sizes_kb[i], "shmem_enabled"), saved_shmem[i],
			    sizeof(saved_shmem[i]));
		write_choice(size_file(sizes_kb[i], "enabled"), "never");
		write_choice(size_file(sizes_kb[i], "shmem_enabled"), "never");
	}
	printf("TABLE kernel %s\n", release);
	table("private anonymous memory (stats/anon_fault_alloc)", ANON, THP "enabled", "enabled",
	      anon_rows, sizeof(anon_rows) / sizeof(anon_rows[0]));
	write_choice(THP "enabled", top);
	for (size_t i = 0; i < NR_SIZES; i++)
		write_choice(size_file(sizes_kb[i], "enabled"), "never");
	table("shared anonymous memory (stats/shmem_alloc)", ANON_SHARED, THP "shmem_enabled",
	      "shmem_enabled", shmem_rows, sizeof(shmem_rows) / sizeof(shmem_rows[0]));
	table("memfd (tmpfs) memory (stats/shmem_alloc)", MEMFD, THP "shmem_enabled", "shmem_enabled",
	      shmem_rows, sizeof(shmem_rows) / sizeof(shmem_rows[0]));
	write_choice(THP "shmem_enabled", shmem_top);
	for (size_t i = 0; i < NR_SIZES; i++) {
		write_choice(size_file(sizes_kb[i], "enabled"), saved[i]);
		write_choice(size_file(sizes_kb[i], "shmem_enabled"), saved_shmem[i]);
	}
	return 0;
}
