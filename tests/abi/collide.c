// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * An application that happens to define names libthp uses inside
 * (sys_read, caps_get, opts_check) links statically against libthp.a and
 * calls both: libthp.a must define no global name outside thp_*.
 */
#include <stdio.h>
#include <thp/thp.h>

int sys_read(int fd, void *buf, size_t len);
int caps_get(void);
int opts_check(const void *opts, size_t known, size_t ver0);

int sys_read(int fd, void *buf, size_t len)
{
	return fd + (int)len + (buf != NULL);
}

int caps_get(void)
{
	return 42;
}

int opts_check(const void *opts, size_t known, size_t ver0)
{
	return (opts != NULL) + (int)(known + ver0);
}

int main(void)
{
	THP_OPTS(thp_probe_info, info);
	int ret = thp_probe(&info);

	if (ret != 0) {
		fprintf(stderr, "thp_probe: %s\n", thp_strerror(ret));
		return 1;
	}
	if (sys_read(1, NULL, 2) != 3 || caps_get() != 42 || opts_check(NULL, 1, 2) != 3) {
		fprintf(stderr, "the application's own functions were not called\n");
		return 1;
	}
	printf("linked statically next to sys_read/caps_get/opts_check: libthp %s, pmd_size %llu\n",
	       thp_version(), (unsigned long long)info.pmd_size);
	return 0;
}
