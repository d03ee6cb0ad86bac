/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* C side of the Go binding: each libthp call and the read of its thread-local detail in one C call. */
#ifndef THPGO_SHIM_H
#define THPGO_SHIM_H

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

/* The pointer members are set here, not in Go: Go memory passed to C must not hold Go pointers. */
static inline int thpgo_apply_ranges(const struct thp_range *r, size_t n, struct thp_apply_opts *o,
				     struct thp_report *reports, char *detail)
{
	o->reports = reports;
	int rc = thp_apply_ranges(r, n, o);
	o->reports_u64 = 0;
	thpgo_detail(rc, detail);
	return rc;
}

static inline int thpgo_apply_all(struct thp_apply_all_opts *o, struct thp_report *failures,
				  char *detail)
{
	o->failures = failures;
	int rc = thp_apply_all(o);
	o->failures_u64 = 0;
	thpgo_detail(rc, detail);
	return rc;
}

static inline int thpgo_set_default(struct thp_default_opts *o, char *detail)
{
	int rc = thp_set_default(o);
	thpgo_detail(rc, detail);
	return rc;
}

static inline int thpgo_get_default(struct thp_default_opts *o, char *detail)
{
	int rc = thp_get_default(o);
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
