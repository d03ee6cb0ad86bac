// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Fuzz thpctl's command-line parsers (tools/thpctl/parse.c) differentially:
 * the input is split at NUL bytes into up to MAX_ARGS arguments, and every
 * argument goes through thpctl_parse_u64(), _size(), _pid() and _range()
 * (page sizes 4 KiB, 64 KiB and none) and through a small reference parser
 * written here from the documented grammar, with 128-bit arithmetic:
 *
 *   NUMBER = "0x" HEX+ | "0X" HEX+ | DEC+          (no sign, no spaces)
 *   SIZE   = NUMBER [KMGTkmgt]                     (powers of 1024)
 *   RANGE  = NUMBER "-" NUMBER  (END > START)  |  NUMBER "+" SIZE  (LEN > 0)
 *   PID    = DEC+, 1..INT_MAX
 *
 * with START a multiple of the page size and START + LEN (LEN rounded up to
 * whole pages) at most 2^64 - 1.  Both must accept and refuse the same
 * arguments and produce the same values; a refusal leaves the outputs
 * untouched and gives a reason; an accepted range must pass libthp's own
 * validation (so thpctl never exits 1 for a range it should have refused
 * with 2).  Each argument is an exact-size heap copy: ASan sees any read
 * past its terminating NUL.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "internal.h"
#include "parse.h"
#include "thpctl.h"

#define MAX_ARGS 8
#define POISON 0x5a5a5a5a5a5a5a5aULL

/* parse.c reports pidfd_open() failures through this (cli.c in thpctl). */
void thpctl_error(const char *fmt, ...)
{
	(void)fmt;
}

static void fail(const char *what, const char *arg)
{
	fprintf(stderr, "fuzz_thpctl_args: %s: \"%s\"\n", what, arg);
	abort();
}

static int digit(char c, unsigned int base)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (base == 16 && c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (base == 16 && c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* NUMBER in s[0..n), at most 2^64 - 1. */
static bool ref_number(const char *s, size_t n, uint64_t *out)
{
	unsigned int base = 10;
	uint64_t v = 0;

	if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
		n -= 2;
	}
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		int d = digit(s[i], base);

		if (d < 0)
			return false;
		if (__builtin_mul_overflow(v, base, &v) ||
		    __builtin_add_overflow(v, (unsigned int)d, &v))
			return false;
	}
	*out = v;
	return true;
}

static bool ref_size(const char *s, size_t n, uint64_t *out)
{
	static const char suffixes[] = "kmgt";
	unsigned int shift = 0;
	uint64_t v;

	if (n) {
		const char *k = memchr(suffixes, s[n - 1] | 0x20, 4);

		/* Only letters fold to "kmgt" with | 0x20. */
		if (k && ((s[n - 1] >= 'a' && s[n - 1] <= 'z') ||
			  (s[n - 1] >= 'A' && s[n - 1] <= 'Z'))) {
			shift = 10 * (unsigned int)(k - suffixes + 1);
			n--;
		}
	}
	if (!ref_number(s, n, &v))
		return false;
	if (shift && v > UINT64_MAX >> shift)
		return false;
	*out = v << shift;
	return true;
}

static bool ref_range(const char *s, uint64_t page_size, struct thp_range *out)
{
	size_t n = strlen(s), sep;
	uint64_t start, second, len, span, end;

	for (sep = 0; sep < n && s[sep] != '-' && s[sep] != '+'; sep++)
		;
	if (sep == n || !ref_number(s, sep, &start))
		return false;
	if (s[sep] == '-') {
		if (!ref_number(s + sep + 1, n - sep - 1, &second) || second <= start)
			return false;
		len = second - start;
	} else {
		if (!ref_size(s + sep + 1, n - sep - 1, &len) || len == 0)
			return false;
	}
	if (page_size && start % page_size)
		return false;
	/* The end of the range, rounded up to whole pages, must fit in 64 bits. */
	span = len;
	if (page_size && __builtin_mul_overflow(len / page_size + (len % page_size != 0),
						page_size, &span))
		return false;
	if (__builtin_add_overflow(start, span, &end))
		return false;
	out->addr = start;
	out->len = len;
	return true;
}

static bool ref_pid(const char *s, pid_t *out)
{
	size_t n = strlen(s);
	uint64_t v;

	if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		return false; /* decimal only */
	if (!ref_number(s, n, &v) || v == 0 || v > INT_MAX)
		return false;
	*out = (pid_t)v;
	return true;
}

/*
 * The parser (@r, value @got, reason @why) against the reference (@ok,
 * value @want): the same verdict, the same value, and a refusal leaves the
 * output alone (@untouched) and says why.
 */
static void compare(const char *kind, int r, bool ok, uint64_t got, uint64_t want,
		    const char *why, bool untouched, const char *arg)
{
	char what[96];

	if (r != 0 && r != -1)
		snprintf(what, sizeof(what), "%s: parser returned neither 0 nor -1", kind);
	else if ((r == 0) != ok)
		snprintf(what, sizeof(what), "%s: %s", kind,
			 ok ? "reference accepts, parser refuses" : "parser accepts, reference refuses");
	else if (ok && got != want)
		snprintf(what, sizeof(what), "%s: values differ", kind);
	else if (!ok && (!why || !*why))
		snprintf(what, sizeof(what), "%s: refusal without a reason", kind);
	else if (!ok && !untouched)
		snprintf(what, sizeof(what), "%s: refusal wrote its output", kind);
	else
		return;
	fail(what, arg);
}

static void check_numbers(const char *arg)
{
	uint64_t v = POISON, want = 0;
	const char *why = NULL;
	int r = thpctl_parse_u64(arg, &v, &why);
	bool ok = ref_number(arg, strlen(arg), &want);

	compare("u64", r, ok, v, want, why, v == POISON, arg);
	v = POISON;
	why = NULL;
	r = thpctl_parse_size(arg, &v, &why);
	ok = ref_size(arg, strlen(arg), &want);
	compare("size", r, ok, v, want, why, v == POISON, arg);
}

static void check_pid(const char *arg)
{
	pid_t p = -7, want = 0;
	const char *why = NULL;
	int r = thpctl_parse_pid(arg, &p, &why);
	bool ok = ref_pid(arg, &want);

	compare("pid", r, ok, (uint64_t)p, (uint64_t)want, why, p == -7, arg);
}

static void check_range(const char *arg, uint64_t page_size)
{
	struct thp_range got = { POISON, POISON }, want = { 0, 0 };
	const char *why = NULL;
	bool as_vector;
	uint64_t total;
	int r = thpctl_parse_range(arg, page_size, &got, &why);
	bool ok = ref_range(arg, page_size, &want);

	compare("range start", r, ok, got.addr, want.addr, why,
		got.addr == POISON && got.len == POISON, arg);
	compare("range length", r, ok, got.len, want.len, why,
		got.addr == POISON && got.len == POISON, arg);
	if (!ok)
		return;
	/* What thpctl accepts, libthp must not refuse as invalid. */
	if (page_size && validate_ranges(&got, 1, page_size, &as_vector, &total) != 0)
		fail("range: accepted by thpctl, refused by libthp's validation", arg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint64_t page_sizes[] = { 4096, 65536, 0 };
	size_t pos = 0;

	for (unsigned int a = 0; a < MAX_ARGS && pos <= size; a++) {
		const uint8_t *nul = pos < size ? memchr(data + pos, 0, size - pos) : NULL;
		size_t n = nul ? (size_t)(nul - (data + pos)) : size - pos;
		char *arg = malloc(n + 1);

		if (!arg)
			abort();
		memcpy(arg, data + pos, n);
		arg[n] = 0;
		check_numbers(arg);
		check_pid(arg);
		for (size_t i = 0; i < sizeof(page_sizes) / sizeof(page_sizes[0]); i++)
			check_range(arg, page_sizes[i]);
		free(arg);
		pos += n + 1;
	}
	return 0;
}
