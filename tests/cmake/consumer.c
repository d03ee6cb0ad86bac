// SPDX-License-Identifier: LGPL-2.1-or-later
/* A CMake project's program: the library it links is the version CMake's
 * package said, and it probes this kernel. */
#include <stdio.h>
#include <string.h>
#include <thp/thp.h>

int main(void)
{
	THP_OPTS(thp_probe_info, info);
	int ret;

	if (strcmp(thp_version(), WANT_VERSION) != 0) {
		fprintf(stderr, "thp_version() %s, libthp_VERSION %s\n", thp_version(), WANT_VERSION);
		return 1;
	}
	ret = thp_probe(&info);
	if (ret != 0) {
		fprintf(stderr, "thp_probe: %d (%s)\n", ret, thp_strerror(ret));
		return 1;
	}
	printf("libthp %s through find_package(libthp): pmd_size %llu\n", thp_version(),
	       (unsigned long long)info.pmd_size);
	return 0;
}
