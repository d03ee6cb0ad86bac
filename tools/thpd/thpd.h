// SPDX-License-Identifier: LGPL-2.1-or-later
/* thpd: the types and functions the daemon's parts share. */
#ifndef THPD_H
#define THPD_H

#include <stdbool.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <thp/thp.h>

#include "thpd_interface.h" /* tools/common: the socket, the JSON schema, size labels */
#include "util.h"	    /* THPD_NERRNO */

/* What a rule does (policy =): a THP policy to collapse to or keep, or nothing. */
enum thpd_rule_policy {
	THPD_RULE_HUGE,
	THPD_RULE_NEVER,
	THPD_RULE_NOHUGE,
	THPD_RULE_SYSTEM,
	THPD_RULE_IGNORE,
};

/* What a huge rule does with a matched process's own default (own_policy =). */
enum thpd_own {
	THPD_OWN_VISIBLE, /* honour what the kernel shows from outside; stop no one */
	THPD_OWN_ASK,	  /* and ask, through the inject backend, where it shows nothing */
	THPD_OWN_IGNORE,  /* act regardless (override_own_policy = yes) */
};

/* The PMD size thpd collapses to (x86_64 and the others with 4 KiB pages). */
#define THPD_EXTENT (2ULL << 20)

/* label = KEY=GLOB, annotation = KEY=GLOB */
struct thpd_kv_match {
	char *key, *glob;
};
#define THPD_KV_MATCH_MAX 16 /* label and annotation lines per rule, each */

/* A rule as written: what it matches and what it does. */
struct thpd_rule_conf {
	char *name;
	char *cgroup; /* glob or NULL */
	char *exe;    /* glob or NULL */
	char *user;   /* as written, or NULL */
	uid_t uid;
	/* The container's identity (container.h): globs or NULL. */
	char *container_name, *pod_namespace, *pod_name;
	struct thpd_kv_match labels[THPD_KV_MATCH_MAX], annotations[THPD_KV_MATCH_MAX];
	size_t nlabels, nannotations;
	bool policy_from_annotation; /* libthp.io/thp-policy decides, policy = is the fallback */
	int policy;		     /* enum thpd_rule_policy, -1 unset */
	bool inject;
	bool setuid;
	int own; /* enum thpd_own */
	uint64_t max_bytes;
	uint64_t max_ns;
	char *file;
	int line;
};

/* Counters since the daemon started: a reload carries them over by the rule's name. */
struct thpd_rule_totals {
	uint64_t collapses;
	uint64_t shared_skips; /* extents left: shared with another process */
	uint64_t failures[THPD_NERRNO];
};

/* The figures of the last pass, summed over the rule's processes. */
struct thpd_rule_last {
	uint64_t processes, anon, huge, alignable, over_budget;
	uint64_t noncompliant; /* huge bytes of its processes whose policy is never or nohuge */
	/* Anonymous bytes by folio size, summed over the processes whose sizes
	 * are known (folio_procs of them): base pages, then thpd_state.sizes[]. */
	uint64_t folio_procs, folio_base, folio_bytes[THP_PROBE_MAX_SIZES];
};

struct thpd_rule {
	struct thpd_rule_conf conf;
	struct thpd_rule_totals totals;
	struct thpd_rule_last last;
	bool own_hidden_logged; /* the notice that a nohuge default is unseen was given */
};

struct thpd_config {
	uint64_t interval_ms;
	double cpu_budget; /* share of one core */
	double catchup_budget;
	char *metrics_file;
	char *listen;
	unsigned top;
	bool http_process_metrics; /* per-process figures on HTTP too, not only the socket */
	struct thpd_rule *rules;
	size_t nrules;
	bool uses_user;	     /* some rule matches by user */
	bool uses_cgroup;    /* some rule matches by cgroup */
	bool uses_container; /* some rule matches by container or pod */
};

/* config.c */
/* Parse FILE (may be NULL: none) and the *.conf of DIR (may be NULL). Errors go
 * to @err as "FILE:LINE: message" lines; returns the number of errors. A missing
 * default file is no error when @optional. */
int thpd_config_load(struct thpd_config *c, const char *file, bool file_optional,
		     const char *dir, char **err);
void thpd_config_free(struct thpd_config *c);
void thpd_config_print(const struct thpd_config *c, FILE *out);
const char *thpd_rule_policy_name(int policy);
const char *thpd_own_name(int own); /* own_policy = values */
/* A rule's policy = as the rules list and the metrics show it ("annotation": none but
 * policy_from_annotation). */
const char *thpd_rule_shown_policy(const struct thpd_rule_conf *r);
/* The rule has something to match a process by. */
bool thpd_rule_has_matcher(const struct thpd_rule_conf *r);

/* rules.c */
struct thpd_ctr; /* container.h */
struct thpd_ident {
	char cgroup[512];
	char exe[512];
	uid_t uid;
	bool have_cgroup, have_exe, have_uid;
	struct thpd_ctr *ctr; /* its container, a reference held; NULL: none */
};
/* Read what the rules need of PID; -1 when the process is gone. */
int thpd_ident_read(pid_t pid, const struct thpd_config *c, struct thpd_ident *id);
/* Read the cgroup again only; -1 when the process is gone. */
int thpd_ident_cgroup(pid_t pid, struct thpd_ident *id);
/* Index of the first matching rule, or -1. */
int thpd_rules_match(const struct thpd_config *c, const struct thpd_ident *id);
/* The policy rule @r has for the process: its own, or its container's
 * libthp.io/thp-policy (policy_from_annotation); -1 when it has none. */
int thpd_proc_policy(const struct thpd_rule *r, const struct thpd_ident *id);
/* Drop what @id holds (its container reference). */
void thpd_ident_release(struct thpd_ident *id);

/* procscan.c */
struct thpd_scan;
struct thpd_scan *thpd_scan_open(bool want_connector);
void thpd_scan_close(struct thpd_scan *s);
bool thpd_scan_has_connector(const struct thpd_scan *s);
int thpd_scan_fd(const struct thpd_scan *s); /* -1 without the connector */
/* Drain the connector: exec PIDs (and those whose uid changed) to @on_exec,
 * exit PIDs to @on_exit; returns 1 when events were lost or dropped (a full
 * /proc walk is due).  Its CPU is charged to the events' budget. */
int thpd_scan_drain(struct thpd_scan *s, void (*on_exec)(void *, pid_t),
		    void (*on_exit)(void *, pid_t), void *arg);
/* What the events' budget allows in the current drain. */
enum thpd_events_mode {
	THPD_EVENTS_HANDLE, /* each event read and matched at once */
	THPD_EVENTS_DEFER,  /* received, entries marked, matched by the next pass */
	THPD_EVENTS_DROP,   /* not received: the next pass reads every process */
};
struct thpd_scan_stats {
	uint64_t execs, uids;	  /* events received */
	uint64_t deferred_drains; /* drains in THPD_EVENTS_DEFER */
	uint64_t drops;		  /* drains skipped in THPD_EVENTS_DROP */
	uint64_t cpu_ns;	  /* charged: drains and the early passes they caused */
};
/* The events may use @rate of a core, with bursts up to @cap_s CPU seconds. */
void thpd_scan_budget(struct thpd_scan *s, double rate, double cap_s);
void thpd_scan_charge(struct thpd_scan *s, uint64_t ns);
int thpd_scan_mode(const struct thpd_scan *s);
const struct thpd_scan_stats *thpd_scan_stats(const struct thpd_scan *s);
/* Call @fn for every process in /proc. */
int thpd_scan_proc(void (*fn)(void *, pid_t), void *arg);
/* comm and starttime from /proc/PID/stat; -1 when gone. */
int thpd_proc_stat(pid_t pid, char *comm, size_t commlen, uint64_t *starttime);

/* An entry of the process table, and the daemon's state (state.c, measure.c, pass.c). */
struct thpd_proc {
	pid_t pid;
	uint64_t starttime;
	int pidfd;
	int rule;   /* index into the current rules, -1 unmatched */
	int policy; /* what the rule says for it (thpd_proc_policy()) */
	char comm[32];
	bool inject_done;      /* a never/nohuge/system rule was applied (or refused) */
	bool skipped;	       /* setuid or own never/nohuge policy: left alone */
	bool seen;	       /* in /proc during this pass */
	bool warned;	       /* huge memory under never/nohuge was logged */
	bool stale;	       /* exec'd since read: read everything again */
	bool kthread;	       /* no executable: never matched */
	struct thpd_ident id;  /* what the rules match, cached */
	uint64_t measure_next; /* pass number of the next smaps_rollup read */
	unsigned measure_gap;
	uint64_t anon, huge, alignable; /* last measured */
	uint64_t anon_at_query;		/* anon when alignable was read */
	uint64_t huge_at_query;		/* huge then */
	bool sizes_known;		/* folio_* below were read (source kpageflags) */
	bool sizes_due;			/* memory moved since: read them when the budget allows */
	bool catching_up;		/* the last collapse left extents over budget */
	/* Anonymous bytes in base pages and by thpd_state.sizes[]. */
	uint64_t folio_base, folio_bytes[THP_PROBE_MAX_SIZES];
	uint64_t collapses;
	uint64_t next_try; /* pass number before which no collapse is tried */
	unsigned backoff;
	uint64_t overhead_ns;	/* a pass's time before its first collapse (smaps, pagemap) */
	struct thpd_proc *next; /* hash chain */
};

struct thpd_state {
	struct thpd_config cfg;
	struct thpd_proc **hash;
	size_t nhash;
	pid_t self;
	size_t nprocs;	  /* entries: every process seen */
	size_t nmatched;  /* of them, matched by a rule */
	bool trust_cache; /* the connector vouches for known PIDs this pass */
	bool events_lost; /* the connector dropped events: read everything */
	uint64_t passes;
	double last_pass_s;
	double bucket_s; /* CPU seconds the collapse work may still use */
	uint64_t last_cpu_ns, last_wall_ns;
	bool catchup;
	bool early;	     /* a pass is wanted before the interval is over */
	bool early_by_event; /* an event asked for it: its CPU is the events' */
	uint64_t exec_races; /* execs detected during a collapse (pass.c) */
	uint64_t work_left;  /* collapsible bytes the last pass left for lack of budget */
	uint64_t pass_collapse_ns;
	uint64_t pass_sizes_ns; /* CPU of this pass's folio size reads, charged as they happen */
	double sizes_bucket_s;	/* CPU seconds folio size reads may still use */
	bool verbose;
	bool nohuge_hidden; /* PR_THP_DISABLE_EXCEPT_ADVISED exists: not seen from outside */
	struct thpd_scan *scan;
	/* The folio sizes the kernel offers (thp_probe()), smallest first. */
	uint32_t nsizes;
	uint64_t sizes[THP_PROBE_MAX_SIZES];
	int folio_source; /* of the last query: enum thp_folio_source, -1 none yet */
	bool folio_none_logged;
	bool reload_ok;		 /* the last configuration load (start or SIGHUP) succeeded */
	double reload_ok_time_s; /* CLOCK_REALTIME of the last successful load */
};

/* pass.c */
/* New rules: processes are matched again, counters are carried by rule name. */
void thpd_state_set_config(struct thpd_state *st, struct thpd_config *c);
void thpd_pass(struct thpd_state *st);
/* When the next pass is due after one that just ended, in ns from now. */
uint64_t thpd_next_pass_ns(const struct thpd_state *st);

/* state.c: the process table. */
void thpd_state_init(struct thpd_state *st);
void thpd_state_free(struct thpd_state *st);
void thpd_forget(struct thpd_state *st, pid_t pid);
/* The /proc walk of a pass: entries read or trusted, matched; the gone ones dropped. */
void thpd_refresh(struct thpd_state *st);
/* Match one process now (an exec event); sets st->early when a rule acts on it. */
void thpd_consider(struct thpd_state *st, pid_t pid);
/* The matched processes, largest anonymous memory first, in a malloc'd array
 * @out: their count (0 and maybe NULL on out of memory). */
size_t thpd_matched_by_anon(const struct thpd_state *st, const struct thpd_proc ***out);
/* A configuration load (start or reload) ended: @ok, and when, for the reload metrics. */
void thpd_note_reload(struct thpd_state *st, bool ok);

/* metrics.c (Prometheus text), status_json.c (the status JSON): text into a
 * malloc'd buffer; NULL on out of memory. */
char *thpd_metrics_text(const struct thpd_state *st, size_t *len);
char *thpd_json_text(const struct thpd_state *st, size_t *len);
/* For HTTP: without per-process figures unless http_process_metrics = yes. */
char *thpd_metrics_text_public(const struct thpd_state *st, size_t *len);
char *thpd_json_text_public(const struct thpd_state *st, size_t *len);
/* metrics_file.c: through its directory, never following a link; logs each new failure once. */
int thpd_metrics_write_file(const struct thpd_state *st, const char *path);

/* measure.c */
/* smaps_rollup: Anonymous and AnonHugePages of PID in bytes. */
int thpd_rollup(pid_t pid, uint64_t *anon, uint64_t *huge);
/* Refresh @p's figures as due; @collapsing: its rule is huge and acts on it. */
void thpd_measure(struct thpd_state *st, struct thpd_proc *p, bool collapsing);

/* skip.c */
/* 1: a setuid/setgid (or file-capability) program, or cannot tell; 0 not; -1 gone. */
int thpd_is_secure_exec(pid_t pid);
/* Once per process and rule: mark it skipped if a rule must leave it alone. */
void thpd_check_skip(struct thpd_state *st, struct thpd_proc *p, struct thpd_rule *r);
/* The notice --check-config gives for rules whose processes' nohuge default
 * this kernel hides: 0 when none, else the count. */
int thpd_own_policy_notes(const struct thpd_config *c, bool nohuge_hidden, FILE *out);

/* inject.c: set the rule's never/nohuge/system policy in the process (enforce = inject). */
void thpd_inject(struct thpd_proc *p, const struct thpd_rule *r);

/* request.c */
#define THPD_REQ_MAX 1024 /* bytes of a request kept; a longer one is answered as it is */
enum thpd_req {
	THPD_REQ_INCOMPLETE, /* wait for more */
	THPD_REQ_METRICS,
	THPD_REQ_JSON,
	THPD_REQ_RULES,	  /* the socket only */
	THPD_REQ_UNKNOWN, /* an error line on the socket, 404 on HTTP */
};
/* @eof: the client shut down its side after these @len bytes. */
enum thpd_req thpd_request_parse(const char *req, size_t len, bool http, bool eof);

/* seccomp_self.c */
/* At start and reload: warn when thpd is under seccomp and a rule reads targets' filters. */
void thpd_seccomp_self_check(const struct thpd_state *st);

/* server.c */
struct thpd_server;
struct thpd_server *thpd_server_open(const char *sock_path, const char *listen, char **err);
void thpd_server_close(struct thpd_server *sv);
/* A changed listen address after a reload: reopen the HTTP listener (logs what it did). */
void thpd_server_relisten(struct thpd_server *sv, const char *listen);
/* The earliest client deadline (CLOCK_MONOTONIC ns), UINT64_MAX for none. */
uint64_t thpd_server_deadline(const struct thpd_server *sv);
/* Fill @fds (room for @cap) with the descriptors to poll and their events. */
size_t thpd_server_pollfds(struct thpd_server *sv, struct pollfd *fds, size_t cap);
/* Handle whatever is ready; never blocks. */
void thpd_server_handle(struct thpd_server *sv, const struct thpd_state *st);

#endif
