#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""thpctl run's sd_notify relay, against a fake service manager.

    test_notify_relay.py THPCTL

The test binds a datagram socket with SO_PASSCRED as systemd does, sets
NOTIFY_SOCKET to it (a path, then an abstract name) and runs
"thpctl run --policy huge -- python3 CHILD", the child sending READY=1 and
MAINPID= of its own.  With the collapse agent thpctl is the parent, so the
messages must arrive from thpctl's PID (the kernel's SCM_CREDENTIALS) with
MAINPID= rewritten to it; a datagram that a process outside thpctl's tree
sends to the relay's socket must not arrive.  With --policy nohuge thpctl
execs, and the child must see the manager's NOTIFY_SOCKET unchanged.
Needs root (the agent needs CAP_SYS_NICE): exit 77 otherwise.
"""
import os
import socket
import struct
import subprocess
import sys
import tempfile

CHILD = r"""
import os, socket, sys
addr = os.environ["NOTIFY_SOCKET"]
print(addr, flush=True)
target = "\0" + addr[1:] if addr.startswith("@") else addr
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
if sys.argv[1] == "send":
    s.sendto(("READY=1\nSTATUS=child %d\nMAINPID=%d" % (os.getpid(), os.getpid())).encode(), target)
    sys.stdin.readline()   # the test sends its outsider message meanwhile
    s.sendto(b"STOPPING=1", target)
"""

SO_PASSCRED = 16
SCM_CREDENTIALS = 2


def manager_socket(abstract, tmp):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, SO_PASSCRED, 1)
    if abstract:
        name = "libthp-test-notify-%d" % os.getpid()
        s.bind("\0" + name)
        return s, "@" + name
    path = os.path.join(tmp, "notify")
    s.bind(path)
    return s, path


def receive(s):
    """(text, sender pid) of the next datagram, or (None, None) after 10 s."""
    s.settimeout(10)
    try:
        data, anc, _, _ = s.recvmsg(4096, socket.CMSG_SPACE(12))
    except socket.timeout:
        return None, None
    pid = None
    for level, kind, payload in anc:
        if level == socket.SOL_SOCKET and kind == SCM_CREDENTIALS:
            pid = struct.unpack("iII", payload[:12])[0]
    return data.decode(), pid


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def relay_case(thpctl, abstract, tmp):
    s, addr = manager_socket(abstract, tmp)
    env = dict(os.environ, NOTIFY_SOCKET=addr)
    p = subprocess.Popen([thpctl, "run", "--policy", "huge", "--", sys.executable, "-c", CHILD, "send"],
                         env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    child_addr = p.stdout.readline().strip()
    print("manager socket %s, the child's NOTIFY_SOCKET %s, thpctl pid %d" % (addr, child_addr, p.pid))
    if child_addr == addr or not child_addr.startswith("@"):
        fail("thpctl (the agent) did not give its command a socket of its own")
    text, pid = receive(s)
    print("received %r from pid %s" % (text, pid))
    if text is None:
        fail("READY=1 did not arrive")
    if pid != p.pid:
        fail("the message came from pid %s, not from thpctl (%d)" % (pid, p.pid))
    if text != "READY=1\nSTATUS=child %s\nMAINPID=%d" % (text.split("child ")[1].split("\n")[0], p.pid):
        fail("message not relayed as sent with MAINPID= rewritten: %r" % text)
    # A process outside thpctl's tree (this test) writes to the relay socket.
    out = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    out.sendto(b"READY=1\nOUTSIDER=1", "\0" + child_addr[1:])
    p.stdin.write("\n")
    p.stdin.flush()
    text, pid = receive(s)
    print("received %r from pid %s" % (text, pid))
    if text != "STOPPING=1" or pid != p.pid:
        fail("expected STOPPING=1 from thpctl, the outsider's message dropped; got %r" % text)
    if p.wait(timeout=30) != 0:
        fail("thpctl run exited %d" % p.returncode)
    s.close()


def exec_case(thpctl, tmp):
    s, addr = manager_socket(False, tmp)
    env = dict(os.environ, NOTIFY_SOCKET=addr)
    r = subprocess.run([thpctl, "run", "--policy", "nohuge", "--", sys.executable, "-c", CHILD, "show"],
                       env=env, stdout=subprocess.PIPE, text=True, timeout=30)
    print("--policy nohuge: the child's NOTIFY_SOCKET %s" % r.stdout.strip())
    if r.returncode != 0 or r.stdout.strip() != addr:
        fail("without the agent NOTIFY_SOCKET must pass through unchanged")
    s.close()


def main():
    thpctl = sys.argv[1]
    if os.geteuid() != 0:
        print("the collapse agent (and so the relay) needs root here; skipped")
        sys.exit(77)
    with tempfile.TemporaryDirectory() as tmp:
        relay_case(thpctl, False, tmp)
        relay_case(thpctl, True, tmp)
        os.unlink(os.path.join(tmp, "notify"))
        exec_case(thpctl, tmp)
    print("PASS")


main()
