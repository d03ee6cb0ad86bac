// SPDX-License-Identifier: LGPL-2.1-or-later
/* A parent project's program: probe, then advise a buffer of its own. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <thp/thp.h>

int main(void)
{
	THP_OPTS(thp_probe_info, info);
	size_t len = 4u << 20;
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct thp_range r;
	struct thp_mapping_state st;
	int ret;

	if (p == MAP_FAILED || thp_probe(&info) != 0)
		return 1;
	r.addr = (uintptr_t)p;
	r.len = len;
	{
		THP_OPTS(thp_apply_opts, o, .advice = THP_ADVICE_HUGE);

		ret = thp_apply_ranges(&r, 1, &o);
		if (ret != 1) {
			fprintf(stderr, "thp_apply_ranges: %d (%s)\n", ret, thp_strerror(ret));
			return 1;
		}
	}
	{
		THP_OPTS(thp_query_opts, q, .addr = r.addr, .len = len, .states = &st,
			 .states_cap = 1);

		ret = thp_query(&q);
		if (ret != 1 || !st.advised_huge) {
			fprintf(stderr, "thp_query: %d, advised_huge %d\n", ret, ret == 1 && st.advised_huge);
			return 1;
		}
	}
	printf("libthp %s as a subproject: advised %zu MiB huge (VmFlags hg)\n", thp_version(),
	       len >> 20);
	return 0;
}
