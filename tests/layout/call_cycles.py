#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Fail on any call circle between the files of a component.

Usage: call_cycles.py [--nm NM] PATH...

Each PATH is a directory (every *.o under it) or a static library (each
member).  From `nm` of each object: the global symbols it defines and the
ones it leaves undefined.  Object A calls object B when A's undefined
symbol is one B defines.  Prints every circle (a set of files that reach
each other), with one path around it and the symbol of each step, and
exits 1 when there is one; 0 and "no call circles" otherwise.  A file
that only calls itself is no circle.
"""
import os
import subprocess
import sys


def objects(paths):
    for p in paths:
        if os.path.isdir(p):
            for root, _, files in os.walk(p):
                for f in sorted(files):
                    if f.endswith('.o'):
                        yield os.path.join(root, f)
        else:
            yield p


def symbols(nm, files):
    """{object name: (defined set, undefined set)} from `nm -A`."""
    table = {}
    out = subprocess.run([nm, '-A', '--no-sort'] + list(files), check=True,
                         capture_output=True, text=True).stdout
    for line in out.splitlines():
        # "lib.a:member.o:ADDR T name", "file.o:         U name"
        head, _, rest = line.rpartition(':')
        parts = rest.split()
        if not head or len(parts) < 2:
            continue
        kind, name = parts[-2], parts[-1]
        obj = os.path.basename(head.rsplit(':', 1)[-1])
        if obj.endswith('.o'):
            obj = obj[:-2]
        d, u = table.setdefault(obj, (set(), set()))
        if kind == 'U':
            u.add(name)
        elif kind.isupper() and kind not in 'N':
            d.add(name)
        # lowercase kinds are local: no other object can reach them
    return table


def graph(table):
    owner = {}
    for obj, (d, _) in table.items():
        for s in d:
            owner.setdefault(s, obj)
    edges = {obj: {} for obj in table}
    for obj, (_, u) in table.items():
        for s in sorted(u):
            o = owner.get(s)
            if o and o != obj:
                edges[obj].setdefault(o, s)
    return edges


def circles(edges):
    """Strongly connected components of more than one file (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def one_path(edges, comp):
    """A path from comp[0] back to itself inside comp (breadth first)."""
    start, inside = comp[0], set(comp)
    prev, todo = {start: None}, [start]
    while todo:
        v = todo.pop(0)
        for w in sorted(edges[v]):
            if w not in inside:
                continue
            if w == start:
                path = [v]
                while prev[path[-1]] is not None:
                    path.append(prev[path[-1]])
                path.reverse()
                return path + [start]
            if w not in prev:
                prev[w] = v
                todo.append(w)
    return comp


def main(argv):
    nm = 'nm'
    if len(argv) > 2 and argv[1] == '--nm':
        nm, argv = argv[2], argv[2:]
    files = list(objects(argv[1:]))
    if not files:
        print('call_cycles.py: no objects in ' + ' '.join(argv[1:]), file=sys.stderr)
        return 2
    edges = graph(symbols(nm, files))
    found = circles(edges)
    for comp in found:
        path = one_path(edges, comp)
        steps = [path[0]] + ['-> %s (%s)' % (b, edges[a][b]) for a, b in zip(path, path[1:])]
        print('call circle among %s: %s' % (', '.join(comp), ' '.join(steps)))
    if found:
        return 1
    print('no call circles among %d objects' % len(edges))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
