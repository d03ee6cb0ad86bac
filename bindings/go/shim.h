/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* C side of the Go binding: each libthp call and the read of its thread-local detail in one C call. */
#ifndef THPGO_SHIM_H
#define THPGO_SHIM_H

#include <stdlib.h>
#include <string.h>
#include <thp/thp.h>

/*
 * thp_strerror_detail() is per thread and a goroutine may run its next cgo
 * call on another thread, so the detail is copied out before the C call
 * returns to Go.
 */
#define THPGO_DETAIL_LEN 512

static inline void thpgo_detail(int rc, char *detail)
{
	detail[0] = '\0';
	if (rc < 0) {
		strncpy(detail, thp_strerror_detail(), THPGO_DETAIL_LEN - 1);
		detail[THPGO_DETAIL_LEN - 1] = '\0';
	}
}

/*
 * The hot calls take scalars and return a struct by value: nothing of
 * theirs escapes to Go's heap, and the detail is a malloc()ed copy
 * (freed by Go) only when the call failed.
 */
struct thpgo_result {
	int rc;
	uint32_t backend_used;
	uint32_t policy;
	bool persistent;
	uint64_t mappings_changed;
	char *detail;
};

static inline char *thpgo_detail_dup(int rc)
{
	return rc < 0 ? strdup(thp_strerror_detail()) : NULL;
}

static inline struct thpgo_result thpgo_apply_ranges_fast(const struct thp_range *r, size_t n,
							  int32_t pidfd, int32_t advice,
							  uint32_t flags, uint32_t backend,
							  struct thp_report *reports)
{
	THP_OPTS(thp_apply_opts, o, .pidfd = pidfd, .advice = advice, .flags = flags,
		 .backend = backend, .reports = reports);
	struct thpgo_result res = { 0 };

	res.rc = thp_apply_ranges(r, n, &o);
	res.backend_used = o.backend_used;
	res.detail = thpgo_detail_dup(res.rc);
	return res;
}

static inline struct thpgo_result thpgo_default_fast(bool set, int32_t pidfd, uint32_t policy,
						     uint32_t flags, uint32_t backend,
						     int32_t prctl_set, int32_t prctl_get)
{
	THP_OPTS(thp_default_opts, o, .pidfd = pidfd, .policy = policy, .flags = flags,
		 .backend = backend, .prctl_set = prctl_set, .prctl_get = prctl_get);
	struct thpgo_result res = { 0 };

	res.rc = set ? thp_set_default(&o) : thp_get_default(&o);
	res.backend_used = o.backend_used;
	res.policy = o.policy;
	res.persistent = o.persistent;
	res.mappings_changed = o.mappings_changed;
	res.detail = thpgo_detail_dup(res.rc);
	return res;
}

/* The pointer members are set here, not in Go: Go memory passed to C must not hold Go pointers. */
static inline int thpgo_apply_all(struct thp_apply_all_opts *o, struct thp_report *failures,
				  char *detail)
{
	o->failures = failures;
	int rc = thp_apply_all(o);
	o->failures_u64 = 0;
	thpgo_detail(rc, detail);
	return rc;
}

static inline int thpgo_probe(struct thp_probe_info *o, char *detail)
{
	int rc = thp_probe(o);
	thpgo_detail(rc, detail);
	return rc;
}

static inline int thpgo_query(struct thp_query_opts *o, struct thp_mapping_state *states,
			      struct thp_mapping_folios *folios, char *detail)
{
	o->states = states;
	o->folios = folios;
	int rc = thp_query(o);
	o->states_u64 = 0;
	o->folios_u64 = 0;
	thpgo_detail(rc, detail);
	return rc;
}

static inline int thpgo_collapse(struct thp_collapse_opts *o, struct thp_report *failures,
				 char *detail)
{
	o->failures = failures;
	int rc = thp_collapse(o);
	o->failures_u64 = 0;
	thpgo_detail(rc, detail);
	return rc;
}
#endif
