#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Write the seed corpora of the fuzz targets (fuzz/corpus/<target>/).

Run from anywhere: python3 fuzz/gen_corpus.py.  The output is deterministic.
Input layout of fuzz_requests: see the comment at the top of fuzz_requests.c.
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
PAGE = 4096


def write(target, name, data):
    d = os.path.join(HERE, 'corpus', target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), 'wb') as f:
        f.write(data)


def rel(pg, npages, kind=0):
    # kind % 4 != 3: page offset (biased by +32 pages) and page count.
    return bytes([kind]) + struct.pack('<HH', pg + 32, npages)


def raw(addr, length):
    return bytes([3]) + struct.pack('<QQ', addr, length)


def head(ops, szsel=0, tail=0, target=0):
    return bytes([ops, szsel, tail, target])


def ranges_part(flags, advice_sel, backend, rngs, nsel_extra=0):
    return bytes([flags, advice_sel, backend, len(rngs) | nsel_extra]) + b''.join(rngs)


HUGE, NOHUGE, COLLAPSE = 0, 2, 4
MB = 256  # pages per MiB

# requests
write('requests', 'huge_pattern', head(1) + ranges_part(0, HUGE, 0, [rel(0, 2 * MB)]))
write('requests', 'collapse_pattern', head(1) + ranges_part(0, COLLAPSE, 0, [rel(0, 2 * MB)]))
write('requests', 'nohuge_over_hole',
      head(1) + ranges_part(0, NOHUGE, 0, [rel(11 * MB, 3 * MB)]))
write('requests', 'skip_errors_multi',
      head(1) + ranges_part(1, HUGE, 3, [rel(0, 4 * MB), rel(19 * MB, 4 * MB),
                                          rel(40 * MB, 2), rel(-8, 16)]))
write('requests', 'no_error_unmapped_pm',
      head(1) + ranges_part(2, COLLAPSE, 2, [rel(4 * MB, 4 * MB), rel(20 * MB, 2 * MB)]))
write('requests', 'destructive_advice',
      head(1) + ranges_part(0, 6 | (2 << 3), 0, [rel(0, 2 * MB)]))  # advice 4: DONTNEED
write('requests', 'raw_wrapping',
      head(1) + ranges_part(0, HUGE, 0, [raw(0xfffffffffffff000, 0x2000), raw(0x1001, 5)]))
write('requests', 'short_size', head(1, szsel=1 | (3 << 2)) + ranges_part(0, HUGE, 0, [rel(0, 1)]))
write('requests', 'tail_nonzero', head(1, szsel=2 | (2 << 2), tail=3) +
      ranges_part(0, HUGE, 0, [rel(0, 1)]))
write('requests', 'pidfd_self', head(1, target=4) + ranges_part(0, COLLAPSE, 0, [rel(0, 2 * MB)]))
write('requests', 'not_a_pidfd', head(1, target=5) + ranges_part(0, HUGE, 0, [rel(0, 1)]))
write('requests', 'apply_all_collapse', head(2) + bytes([1, COLLAPSE, 0, 4]))
write('requests', 'apply_all_huge_madvise', head(2) + bytes([0, HUGE, 3, 2]))
write('requests', 'query_area', head(4) + rel(0, 16 * MB) + bytes([8]))
write('requests', 'all_three',
      head(7) + ranges_part(0, NOHUGE, 0, [rel(4 * MB, MB)]) + bytes([1, NOHUGE, 0, 1]) +
      rel(0, 0) + bytes([4]))
write('requests', 'empty', b'')
# Regression: a range from below the sentinel to the top page, [0, 2^64 - 4096):
# the target's guard computed its end + one page, which wrapped to 0, and let
# the range advise the sentinel (found by the long run at input 124,400).
write('requests', 'range_to_top_page',
      head(1) + ranges_part(3, HUGE, 0, [raw(0, 0xfffffffffffff000)]))

# parsers
maps = [
    b'7f0000000000-7f0000200000 rw-p 00000000 00:00 0 \n',
    b'00400000-00452000 r-xp 00000000 08:02 173521      /usr/bin/dbus-daemon\n',
    b'ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]\n',
    b'1000-1000 rw-p 00000000 00:00 0\n',
    b'2000-1000 rw-p 00000000 00:00 0\n',
    b'10000000000000000-20000000000000000 rw-p\n',
    b'abc-',
    b'-1000 r--p',
    b'7ffd1c3a2000-7ffd1c3c3000 rw-p 00000000 00:00 0                          [stack]',
    b'DEAD-BEEF rw-p\n',
]
for i, m in enumerate(maps):
    write('parsers', 'line%02d' % i, m)

# Whole smaps texts, well-formed and not, for the line and smaps readers.
SMAPS_ENTRY = (
    b'7f0000000000-7f0000400000 rw-p 00000000 00:00 0 \n'
    b'Size:               4096 kB\n'
    b'Rss:                2048 kB\n'
    b'AnonHugePages:      2048 kB\n'
    b'THPeligible:    1\n'
    b'VmFlags: rd wr mr mw me ac sd hg \n'
)
smaps = [
    SMAPS_ENTRY,
    SMAPS_ENTRY + SMAPS_ENTRY.replace(b'7f0000000000-7f0000400000', b'7f0000400000-7f0000600000')
                             .replace(b' hg ', b' nh '),
    # No header first, fields without values, a name with spaces.
    b'Rss: 4 kB\nVmFlags:\n00400000-00401000 r-xp 00000000 08:02 1   /opt/my prog (deleted)\n'
    b'AnonHugePages:\nTHPeligible:\nVmFlags: h\n',
    # Overflowing numbers, no final newline.
    b'1000-2000 rw-p 0 0:0 0\nAnonHugePages: 99999999999999999999999 kB\nRss: -1 kB\nVmFlags: hg nh',
    # A line longer than the reader's 8 KiB buffer, then a good entry.
    b'1000-2000 rw-p 0 0:0 0 /' + b'x' * 9000 + b'\n' + SMAPS_ENTRY,
]
for i, m in enumerate(smaps):
    write('parsers', 'smaps%02d' % i, m)

# thpctl_args: NUL-separated arguments, each tried as number, size, PID and
# range (see fuzz_thpctl_args.c).
thpctl_args = [
    [b'0x1000-0x3000', b'4096-8193', b'0x200000+2M', b'0-4096'],
    [b'0+0xFFFFFFFFFFFFFFF2', b'0-0xfffffffffffffff2', b'0+0xfffffffffffff001'],
    [b'0xfffffffffffff000+0x1000', b'0xfffffffffffff000-0xffffffffffffffff',
     b'0xffffffffffffe000-0xfffffffffffff000'],
    [b'18446744073709551615', b'18446744073709551616', b'0x10000000000000000', b'0XAbC'],
    [b'4K', b'2m', b'1G', b'3T', b'16777215T', b'16777216T', b'0x10M', b'0xB'],
    [b'', b'-', b'+', b'0x', b'0x1000+', b'+4K', b'0x1000+K', b'0x1000+0K'],
    [b'1', b'2147483647', b'2147483648', b'0', b'-1', b'+1', b' 1', b'1 '],
    [b'0x1000+4KB', b'0x1000-8K', b'4K+4K', b'0x1000-0x2000-0x3000', b'0x1000+4K+4K', b'0x1000--0x2000'],
    [b'0x10000+64K', b'0x11000+4K', b'0x1000+0xffffffffffffe000', b'0x1000+0xffffffffffffe001'],
]
for i, args in enumerate(thpctl_args):
    write('thpctl_args', 'args%02d' % i, b'\0'.join(args))

# preload_env: u8 mode, then old value, FIRST, LAST (NUL-separated); see
# fuzz_preload_env.c.
LD, HUGETLB, OURS, RUN_TUNABLES = 0, 1, 2, 3
F, L, UNSET = 4, 8, 16
pe = {
    'ld_empty_add': (LD | F, b'', b'/usr/lib/libthp-preload.so', b''),
    'ld_keep_others': (LD | F, b'/a/libx.so libthp-preload.so:/b/libthp-preload.so /c/liby.so',
                       b'/usr/lib/libthp-preload.so', b''),
    'ld_remove': (LD, b'::/x/libthp-preload.so  /y/notlibthp-preload.so:libthp-preload.so.1', b'', b''),
    'ld_unset': (LD | F | UNSET, b'', b'/p/libthp-preload.so', b''),
    'tun_replace': (RUN_TUNABLES, b'glibc.malloc.hugetlb=2:glibc.malloc.arena_max=1', b'', b''),
    'tun_empty_value': (RUN_TUNABLES, b'glibc.malloc.hugetlb=:glibc.malloc.hugetlb', b'', b''),
    'tun_drop_ours': (OURS, b'glibc.malloc.hugetlb=1:glibc.malloc.hugetlb=10::glibc.x=1', b'', b''),
    'tun_drop_any': (HUGETLB | L, b'a=1:glibc.malloc.hugetlbx=1:xglibc.malloc.hugetlb=1',
                     b'', b'glibc.malloc.hugetlb=1'),
    'debug_one': (HUGETLB, b'1', b'', b''),
    'separators_only': (LD | F | L, b' : : ', b'f', b'l'),
}
for name, (mode, old, first, last) in sorted(pe.items()):
    write('preload_env', name, bytes([mode]) + b'\0'.join([old, first, last]))

# thpd_config: whole configuration files (fuzz_thpd_config.c).
thpd_config = {
    'containers': b'[rule pods]\npod_namespace = shop\npod_name = web-*\ncontainer_name = nginx\n'
                  b'label = app=web*\nlabel = tier=front\nannotation = libthp.io/thp-policy=*\n'
                  b'policy_from_annotation = yes\nenforce = inject\n[rule bad]\nlabel = x\n'
                  b'annotation = =y\npolicy_from_annotation = perhaps\n',
    'good': b'; comment\n[daemon]\ninterval_ms = 500\ncpu_budget = 2%\ncatchup_budget = 25%\n'
            b'metrics_file = /run/thpd/metrics.prom\nlisten = 127.0.0.1:9101\ntop_processes = 5\n'
            b'http_process_metrics = yes\n\n[rule db]\ncgroup = /system.slice/db.service\n'
            b'policy = huge\nmax_bytes_per_pass = 64M\nmax_ms_per_pass = 100\nsetuid = no\n'
            b'override_own_policy = yes\n[rule batch]\nexe = /usr/bin/*\nuser = 0\npolicy = never\n'
            b'enforce = inject\n',
    'errors': b'[daemon]\ncpu_budget = 2\n[rule x]\npolicy = huge\n\n[rule y]\nexe = /a\n'
              b'policy = sometimes\ncolour = red\n[weird]\nk = v\n[rule z]\nuser = 0\n'
              b'policy = never\nenforce = inject\nnot a key value line\n',
    'long_line': b'[rule l]\nexe = /' + b'x' * 300 + b'\npolicy = huge\n',
    'names': b'[rule   ]\nexe = /a\npolicy = huge\n[rule \xff\xfe]\nexe = /b\npolicy = huge\n'
             b'[rule a\x01b]\nexe = /c\npolicy = huge\n[rule  ok \xc3\xa9 ]\nexe = /d\npolicy = system\n',
    'multiline': b'[rule m]\nexe = /a\n  /b\npolicy = huge\n\xef\xbb\xbf[daemon]\n',
    'long_section': b'[rule ' + b'n' * 60 + b']\nexe = /a\npolicy = huge\n',
    'no_newline': b'[rule e]\ncgroup=a\npolicy=ignore',
}
for name, text in sorted(thpd_config.items()):
    write('thpd_config', name, text)

# thpd_request: a flags byte (1 HTTP, 2 the client shut down), then the bytes.
thpd_request = {
    'sock_metrics': b'\0metrics\n',
    'sock_json_crlf': b'\0json\r\n',
    'sock_rules_eof': b'\2rules',
    'sock_partial': b'\0metr',
    'sock_unknown': b'\0what\n',
    'http_metrics': b'\1GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n',
    'http_metrics_query': b'\1GET /metrics?x=1 HTTP/1.0\n\n',
    'http_status': b'\1GET /status.json HTTP/1.0\r\n\r\n',
    'http_404': b'\1GET /rules HTTP/1.0\r\n\r\n',
    'http_partial': b'\3GET /metrics HTTP/1.0\r\n',
    'http_full': b'\1' + b'A' * 1100,
}
for name, data in sorted(thpd_request.items()):
    write('thpd_request', name, data)

# thpd_json: thpd's status document as the socket answers it, and near misses.
thpd_json = {
    'status': b'{"schema":1,"rules":[{"name":"redis","policy":"huge","enforced":true,'
              b'"processes":1,"anon_bytes":536870912,"huge_bytes":524288000,'
              b'"alignable_bytes":534773760,"collapses":250,"folio_bytes":{"base":8388608,'
              b'"64K":4194304,"2M":524288000},"failures":{"EAGAIN":2}}],"processes":[{"pid":4242,'
              b'"comm":"redis-server","rule":"redis","anon_bytes":536870912,"huge_bytes":0,'
              b'"alignable_bytes":0}],"daemon":{"folio_source":"kpageflags","pid":99,'
              b'"cpu_seconds":1.250000,"passes":7,"last_pass_seconds":0.012000,'
              b'"rss_bytes":6291456}}\n',
    'escapes': b'{"comm":"a\\"\\\\\\n\\u0001\\ufffd\\u00e9\\ud83d\\ude00z","x":[null,false,-1.5e3]}',
    'bad_surrogate': b'{"comm":"\\ud800"}',
    'nul_escape': b'{"comm":"a\\u0000b"}',
    'deep': b'[' * 40 + b']' * 40,
    'cut': b'{"rules":[{"name":"r"',
    'trailing': b'{"rules":[]} x',
    'numbers': b'[0,-0,1e400,-1E-400,12345678901234567890,0.5]',
}
for name, data in sorted(thpd_json.items()):
    write('thpd_json', name, data)

# thpd_container: a selector byte (0 cgroup path or /proc/PID/cgroup text,
# 1 OCI config.json, 2 docker config.v2.json, 3 containers.json, 4 runc or
# crun state), then the text (tools/thpd/container_*.c).
CID = b'0123456789abcdef' * 4
thpd_container = {
    'path_docker': b'\0/system.slice/docker-' + CID + b'.scope',
    'path_cgroupfs': b'\0/docker/' + CID,
    'path_crio': b'\0/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod'
                 b'12345678_aaaa_bbbb_cccc_0123456789ab.slice/crio-' + CID + b'.scope',
    'path_kubepods': b'\0/kubepods/besteffort/pod12345678-aaaa-bbbb-cccc-0123456789ab/' + CID,
    'path_rootless': b'\0/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-' + CID + b'.scope',
    'proc_v1': b'\x054:memory:/docker/' + CID + b'\n0::/\n',
    'oci_crio': b'\1{"annotations":{"io.kubernetes.pod.namespace":"shop","io.kubernetes.pod.name":"web-0",'
                b'"io.kubernetes.container.name":"nginx","io.kubernetes.cri-o.Labels":'
                b'"{\\"app\\":\\"web\\"}","libthp.io/thp-policy":"never"}}',
    'oci_containerd': b'\1{"annotations":{"io.kubernetes.cri.container-name":"db",'
                      b'"io.kubernetes.cri.sandbox-name":"pg-1","io.kubernetes.cri.sandbox-namespace":"data"}}',
    'docker_v2': b'\2{"Name":"/web","Config":{"Labels":{"tier":"db"}}}',
    'storage': b'\3[{"id":"' + CID + b'","names":["redis1"]}]',
    'state_crun': b'\4{"pid":1,"bundle":"/run/b"}',
    'state_runc': b'\4{"config":{"labels":["bundle=/run/b"]}}',
}
for name, data in sorted(thpd_container.items()):
    write('thpd_container', name, data)
