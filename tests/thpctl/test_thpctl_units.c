// SPDX-License-Identifier: LGPL-2.1-or-later
/* White-box tests of thpctl's parsers (parse.c) and JSON writer (json.c). */
#define _GNU_SOURCE
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "parse.h"
#include "thpctl.h"
#include "../helpers.h"

/* parse.c reports pidfd_open() failures through this (main.c in thpctl). */
void thpctl_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
}

START_TEST(numbers)
{
	static const struct {
		const char *s;
		int ok;
		uint64_t v;
	} cases[] = {
		{ "0", 1, 0 }, { "4096", 1, 4096 }, { "0x1000", 1, 0x1000 }, { "0XAbC", 1, 0xabc },
		{ "18446744073709551615", 1, UINT64_MAX },
		{ "0xffffffffffffffff", 1, UINT64_MAX },
		{ "18446744073709551616", 0, 0 }, { "0x10000000000000000", 0, 0 },
		{ "", 0, 0 }, { "0x", 0, 0 }, { "-1", 0, 0 }, { "+1", 0, 0 }, { " 1", 0, 0 },
		{ "1 ", 0, 0 }, { "1k", 0, 0 }, { "0x1g", 0, 0 }, { "abc", 0, 0 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t v = 42;
		const char *why = NULL;
		int r = thpctl_parse_u64(cases[i].s, &v, &why);

		ck_assert_msg((r == 0) == cases[i].ok, "\"%s\": %d", cases[i].s, r);
		if (cases[i].ok)
			ck_assert_uint_eq(v, cases[i].v);
		else
			ck_assert_msg(v == 42 && why && *why, "\"%s\" wrote %llu", cases[i].s,
				      (unsigned long long)v);
	}
}
END_TEST

START_TEST(sizes)
{
	uint64_t v;
	const char *why;

	ck_assert(thpctl_parse_size("4K", &v, &why) == 0 && v == 4096);
	ck_assert(thpctl_parse_size("2m", &v, &why) == 0 && v == 2 << 20);
	ck_assert(thpctl_parse_size("1G", &v, &why) == 0 && v == 1ull << 30);
	ck_assert(thpctl_parse_size("3T", &v, &why) == 0 && v == 3ull << 40);
	ck_assert(thpctl_parse_size("0x10M", &v, &why) == 0 && v == 16ull << 20);
	ck_assert(thpctl_parse_size("0xB", &v, &why) == 0 && v == 11);
	ck_assert(thpctl_parse_size("16777216T", &v, &why) == -1);
	ck_assert(thpctl_parse_size("16777215T", &v, &why) == 0);
	ck_assert(thpctl_parse_size("K", &v, &why) == -1);
	ck_assert(thpctl_parse_size("1KK", &v, &why) == -1);
	ck_assert(thpctl_parse_size("1KB", &v, &why) == -1);
}
END_TEST

START_TEST(ranges)
{
	static const struct {
		const char *s;
		int ok;
		uint64_t addr, len;
	} cases[] = {
		{ "0x1000-0x3000", 1, 0x1000, 0x2000 },
		{ "4096-8193", 1, 4096, 4097 },
		{ "0x200000+2M", 1, 0x200000, 2 << 20 },
		{ "0x200000+0x1000", 1, 0x200000, 0x1000 },
		{ "0-4096", 1, 0, 4096 },
		{ "0x7ffffffff000+4K", 1, 0x7ffffffff000ull, 4096 },
		{ "0xffffffffffffe000-0xfffffffffffff000", 1, 0xffffffffffffe000ull, 4096 },
		{ "10-5", 0, 0, 0 }, { "0x1000-0x1000", 0, 0, 0 }, { "0x1000-", 0, 0, 0 },
		{ "-0x1000", 0, 0, 0 }, { "0x1000", 0, 0, 0 }, { "", 0, 0, 0 },
		{ "0x1000+0", 0, 0, 0 }, { "0x1001-0x2000", 0, 0, 0 },
		{ "0xfffffffffffff000+0x1000", 0, 0, 0 }, /* end wraps to 0 */
		{ "0xfffffffffffff000-0xffffffffffffffff", 0, 0, 0 }, /* rounded up, wraps */
		{ "0x1000+-1", 0, 0, 0 }, { "0x1000--0x2000", 0, 0, 0 }, { "a-b", 0, 0, 0 },
		{ "0x1000-0x2000-0x3000", 0, 0, 0 }, { "0x1000+4K+4K", 0, 0, 0 },
		/*
		 * START 0: the length rounded up to whole pages wraps to a small
		 * number, which is not below START (the library refuses these).
		 */
		{ "0+0xFFFFFFFFFFFFFFF2", 0, 0, 0 }, { "0-0xfffffffffffffff2", 0, 0, 0 },
		{ "0+0xfffffffffffff001", 0, 0, 0 }, { "0-0xffffffffffffffff", 0, 0, 0 },
		{ "0+0xfffffffffffff000", 1, 0, 0xfffffffffffff000ull },
		{ "0+16777215T", 1, 0, 16777215ull << 40 },
		{ "0x1000+0xffffffffffffe000", 1, 0x1000, 0xffffffffffffe000ull },
		{ "0x1000+0xffffffffffffe001", 0, 0, 0 },
		/* Empty fields, suffixes where none belong, trailing garbage. */
		{ "+", 0, 0, 0 }, { "-", 0, 0, 0 }, { "0x1000+", 0, 0, 0 }, { "+4K", 0, 0, 0 },
		{ "0x1000+K", 0, 0, 0 }, { "0x1000+0x", 0, 0, 0 }, { "0x1000+0K", 0, 0, 0 },
		{ "4K+4K", 0, 0, 0 }, { "0x1000-8K", 0, 0, 0 }, { "0x1000+4K ", 0, 0, 0 },
		{ "0x1000+4KB", 0, 0, 0 }, { "0x1000+4k", 1, 0x1000, 4096 },
		{ "0x1000+16777216T", 0, 0, 0 }, { "0x1000-0x2000x", 0, 0, 0 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct thp_range r = { 7, 7 };
		const char *why = NULL;
		int ret = thpctl_parse_range(cases[i].s, 4096, &r, &why);

		ck_assert_msg((ret == 0) == cases[i].ok, "\"%s\": %d (%s)", cases[i].s, ret,
			      why ? why : "");
		if (cases[i].ok) {
			ck_assert_uint_eq(r.addr, cases[i].addr);
			ck_assert_uint_eq(r.len, cases[i].len);
		} else {
			ck_assert_msg(r.addr == 7 && r.len == 7 && why && *why, "\"%s\"", cases[i].s);
		}
	}
}
END_TEST

START_TEST(pids)
{
	pid_t p = 5;
	const char *why;

	ck_assert(thpctl_parse_pid("1", &p, &why) == 0 && p == 1);
	ck_assert(thpctl_parse_pid("2147483647", &p, &why) == 0 && p == 2147483647);
	p = 5;
	ck_assert(thpctl_parse_pid("2147483648", &p, &why) == -1);
	ck_assert(thpctl_parse_pid("0", &p, &why) == -1);
	ck_assert(thpctl_parse_pid("-1", &p, &why) == -1);
	ck_assert(thpctl_parse_pid("0x10", &p, &why) == -1);
	ck_assert(thpctl_parse_pid("x", &p, &why) == -1);
	ck_assert(thpctl_parse_pid("", &p, &why) == -1);
	ck_assert_int_eq(p, 5);
}
END_TEST

static char *render(void (*fn)(struct json *))
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct json j;

	ck_assert_ptr_nonnull(f);
	json_init(&j, f);
	fn(&j);
	ck_assert_int_eq(json_finish(&j), 0);
	fclose(f);
	return buf;
}

static void doc_strings(struct json *j)
{
	json_begin_object(j, NULL);
	json_string(j, "q", "a\"b\\c/d");
	json_string(j, "ctl", "\n\r\t\b\f\x01\x1f\x7f");
	json_string(j, "utf8", "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
	json_string(j, "bad", "\xff\xc3(\xe2\x82\xed\xa0\x80\xc0\xaf\xf4\x90\x80\x80x");
	json_string(j, "cut", "ab\xe2\x82");
	json_string(j, "null", NULL);
	json_end_object(j);
}

START_TEST(json_escaping)
{
	char *s = render(doc_strings);

	ck_assert_str_eq(s,
		"{\n"
		"  \"q\": \"a\\\"b\\\\c/d\",\n"
		"  \"ctl\": \"\\n\\r\\t\\b\\f\\u0001\\u001f\\u007f\",\n"
		"  \"utf8\": \"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\",\n"
		/* Each invalid byte is one U+FFFD; valid bytes after it survive. */
		"  \"bad\": \"\\ufffd\\ufffd(\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd\\ufffd"
		"\\ufffd\\ufffd\\ufffd\\ufffdx\",\n"
		"  \"cut\": \"ab\\ufffd\\ufffd\",\n"
		"  \"null\": null\n"
		"}\n");
	free(s);
}
END_TEST

static void doc_nested(struct json *j)
{
	json_begin_object(j, NULL);
	json_u64(j, "u", UINT64_MAX);
	json_i64(j, "i", INT64_MIN);
	json_bool(j, "t", true);
	json_hex(j, "h", 0x7fff0000ull);
	json_begin_array(j, "empty");
	json_end_array(j);
	json_begin_object(j, "eo");
	json_end_object(j);
	json_begin_array(j, "a");
	json_u64(j, NULL, 1);
	json_begin_object(j, NULL);
	json_null(j, "n");
	json_end_object(j);
	json_end_array(j);
	json_end_object(j);
}

START_TEST(json_structure)
{
	char *s = render(doc_nested);

	ck_assert_str_eq(s,
		"{\n"
		"  \"u\": 18446744073709551615,\n"
		"  \"i\": -9223372036854775808,\n"
		"  \"t\": true,\n"
		"  \"h\": \"0x7fff0000\",\n"
		"  \"empty\": [],\n"
		"  \"eo\": {},\n"
		"  \"a\": [\n"
		"    1,\n"
		"    {\n"
		"      \"n\": null\n"
		"    }\n"
		"  ]\n"
		"}\n");
	free(s);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("thpctl-units");
	TCase *tc = tcase_create("units");

	tcase_add_test(tc, numbers);
	tcase_add_test(tc, sizes);
	tcase_add_test(tc, ranges);
	tcase_add_test(tc, pids);
	tcase_add_test(tc, json_escaping);
	tcase_add_test(tc, json_structure);
	suite_add_tcase(s, tc);
	return run_suite(s);
}
