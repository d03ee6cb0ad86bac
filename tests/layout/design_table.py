#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""doc/design.md's file table against the tree.

Usage: design_table.py SOURCE_ROOT [DIR...]   (DIRs default: lib tools)

Every file under the DIRs but meson.build must be named in a table row of
doc/design.md, and every file a row names must exist.  A row is a table
line whose first cell names files in backticks: `lib/core/syscall.c`,
`syscall.h` (a name without a folder is in the previous name's folder).
Prints what is missing and what is stale; exits 1 if anything is.
"""
import os
import re
import sys


def table_files(text, dirs):
    named = set()
    for line in text.splitlines():
        if not line.startswith('| `'):
            continue
        cell = line.split('|')[1]
        folder = None
        for name in re.findall(r'`([^`]+)`', cell):
            if '/' in name:
                folder = os.path.dirname(name)
                path = name
            elif folder:
                path = folder + '/' + name
            else:
                continue
            if path.split('/')[0] in dirs:
                named.add(path)
    return named


def tree_files(root, dirs):
    found = set()
    for d in dirs:
        for top, subdirs, files in os.walk(os.path.join(root, d)):
            subdirs[:] = [s for s in subdirs if not s.startswith('.')]
            for f in files:
                if f == 'meson.build' or f.startswith('.'):
                    continue
                found.add(os.path.relpath(os.path.join(top, f), root))
    return found


def main(argv):
    root = argv[1]
    dirs = argv[2:] or ['lib', 'tools']
    with open(os.path.join(root, 'doc', 'design.md')) as f:
        named = table_files(f.read(), dirs)
    present = tree_files(root, dirs)
    missing = sorted(present - named)
    stale = sorted(named - present)
    for m in missing:
        print('doc/design.md: no row for %s' % m)
    for s in stale:
        print('doc/design.md: a row names %s, which does not exist' % s)
    if missing or stale:
        return 1
    print('doc/design.md names all %d files of %s' % (len(present), ', '.join(dirs)))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
