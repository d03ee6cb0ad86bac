#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""thpctl status --daemon against a fake thpd socket.

    test_daemon_status.py THPCTL

A Unix stream socket in a temporary directory answers the request line as
thpd does (docs: thpd(8)): the test checks that thpctl asks for "json",
shows each rule and process with its figures and coverage, shows names as
data (an escape sequence in comm comes out as \\x1b), passes the document
through unchanged with --json, and fails (exit 1) on an answer that is not
thpd's document and on a socket nobody listens on.  The "schema" member
(doc/thpd-json.md): 1 and a missing one (an older thpd) are read, any other
is refused with a message naming both versions.
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading

MIB = 1 << 20
DOC = {
    "rules": [
        {"name": "redis", "policy": "huge", "enforced": True, "processes": 1,
         "anon_bytes": 512 * MIB, "huge_bytes": 500 * MIB, "alignable_bytes": 510 * MIB,
         "collapses": 250, "failures": {"EAGAIN": 2}},
        {"name": "batch", "policy": "never", "enforced": False, "processes": 2,
         "anon_bytes": 64 * MIB, "huge_bytes": 4 * MIB, "alignable_bytes": 0,
         "collapses": 0, "failures": {}},
    ],
    "processes": [
        {"pid": 4242, "comm": "redis-server", "rule": "redis",
         "anon_bytes": 512 * MIB, "huge_bytes": 500 * MIB, "alignable_bytes": 510 * MIB,
         "folio_bytes": {"base": 8 * MIB, "64K": 4 * MIB, "1M": 0, "2M": 500 * MIB, "\u001b[2J": MIB}},
        {"pid": 77, "comm": "evil\u001b[2J\u00e9", "rule": "batch",
         "anon_bytes": 32 * MIB, "huge_bytes": 0, "alignable_bytes": 0},
    ],
    "daemon": {"pid": 99, "cpu_seconds": 1.25, "passes": 7, "last_pass_seconds": 0.012,
               "rss_bytes": 6 * MIB, "folio_source": "kpageflags"},
}


def serve(path, answer, requests):
    """Answer one connection on PATH with ANSWER; the request goes to REQUESTS."""
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(1)

    def run():
        conn, _ = srv.accept()
        data = b""
        while not data.endswith(b"\n"):
            chunk = conn.recv(64)
            if not chunk:
                break
            data += chunk
        requests.append(data)
        conn.sendall(answer)
        conn.close()
        srv.close()

    t = threading.Thread(target=run)
    t.start()
    return t


def run(thpctl, path, answer, *extra):
    requests = []
    t = serve(path, answer, requests)
    p = subprocess.run([thpctl, "status", "--daemon", "--socket", path, *extra],
                       capture_output=True, timeout=30)
    t.join(10)
    os.unlink(path)
    return p, requests


def main():
    thpctl = sys.argv[1]
    failures = 0

    def check(ok, what):
        nonlocal failures
        print(("ok   " if ok else "FAIL ") + what)
        failures += not ok

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "thpd.sock")
        text = json.dumps(DOC, indent=1).encode()

        p, req = run(thpctl, path, text)
        out = p.stdout.decode()
        print(out, p.stderr.decode(), sep="")
        check(p.returncode == 0, "table: exit 0")
        check(req == [b"json\n"], "thpctl asks 'json': %r" % req)
        lines = {l.split()[0]: l.split() for l in out.splitlines() if l.strip()}
        redis = lines.get("redis", [])
        check(redis[1:] == ["huge", "yes", "1", "512.0", "500.0", "98.0%"],
              "rule redis: %s" % redis)
        batch = lines.get("batch", [])
        check(batch[1:] == ["never", "no", "2", "64.0", "4.0", "-"], "rule batch: %s" % batch)
        proc = lines.get("4242", [])
        check(proc[1:] == ["redis-server", "redis", "512.0", "500.0", "98.0%"],
              "process 4242: %s" % proc)
        folios = [l.split() for l in out.splitlines() if l.split()[:1] == ["folios:"]]
        check(folios == [["folios:", "base", "1.6%", "64K", "0.8%", "2M", "97.7%"]],
              "one folios line, under process 4242, sizes holding memory only: %s" % folios)
        check(out.splitlines()[out.splitlines().index(next(l for l in out.splitlines()
                                                            if l.split()[:1] == ["4242"])) + 1]
              .split()[:1] == ["folios:"], "the folios line follows its process")
        evil = lines.get("77", [])
        check(evil[1:2] == ["evil\\x1b[2J\u00e9"] and "\x1b" not in out,
              "comm shown as data: %s" % evil[1:2])
        check("thpd pid 99: 7 passes, last 0.012 s, 1.25 s CPU, RSS 6.0 MiB, folio sizes: kpageflags"
              in out,
              "daemon line")

        p, req = run(thpctl, path, text, "--json")
        check(p.returncode == 0 and p.stdout == text + b"\n", "--json: the document unchanged")

        for bad in (b"", b"unknown request\n", text[:-1], b'{"processes":[]}', text + b"x"):
            p, _ = run(thpctl, path, bad)
            check(p.returncode == 1 and b"not thpd's status document" in p.stderr and not p.stdout,
                  "answer %r...: exit %d, %s" % (bad[:20], p.returncode, p.stderr.decode().strip()))

        for schema in (1, None):
            doc = dict(DOC, schema=schema) if schema else DOC
            p, _ = run(thpctl, path, json.dumps(doc).encode())
            check(p.returncode == 0 and b"redis" in p.stdout,
                  "schema %s: exit %d, %s" % (schema, p.returncode, p.stderr.decode().strip()))
        for schema in (2, 10, "1", 1.0):
            p, _ = run(thpctl, path, json.dumps(dict(DOC, schema=schema)).encode())
            err = p.stderr.decode().strip()
            check(p.returncode == 1 and not p.stdout and "writes status schema" in err
                  and "reads schema 1" in err, "schema %r: exit %d, %s" % (schema, p.returncode, err))

        p = subprocess.run([thpctl, "status", "--daemon", "--socket", path],
                           capture_output=True, timeout=30)
        check(p.returncode == 1 and b"cannot connect" in p.stderr,
              "no listener: exit %d, %s" % (p.returncode, p.stderr.decode().strip()))
        p = subprocess.run([thpctl, "status", "--daemon", "-p", "1"], capture_output=True, timeout=30)
        check(p.returncode == 2, "--daemon with -p: exit %d" % p.returncode)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
