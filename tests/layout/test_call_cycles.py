#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""call_cycles.py on objects built here: a.c -> b.c -> a.c is a circle
(exit 1, both named), a.c -> b.c -> c.c is not (exit 0)."""
import os
import subprocess
import sys
import tempfile

script, cc, nm = sys.argv[1:4]


def build(d, sources):
    for name, text in sources.items():
        with open(os.path.join(d, name), 'w') as f:
            f.write(text)
        subprocess.run([cc, '-c', '-o', os.path.join(d, name[:-2] + '.o'),
                        os.path.join(d, name)], check=True)


def run(sources):
    with tempfile.TemporaryDirectory() as d:
        build(d, sources)
        return subprocess.run([sys.executable, script, '--nm', nm, d],
                              capture_output=True, text=True)


circle = run({'a.c': 'int b(void); int a(void) { return b(); }\n',
              'b.c': 'int a(void); int b(void) { return a() + 1; }\n'})
print(circle.stdout, end='')
assert circle.returncode == 1, circle
assert 'call circle among a, b' in circle.stdout, circle.stdout
assert '(a)' in circle.stdout and '(b)' in circle.stdout, circle.stdout

chain = run({'a.c': 'int b(void); int a(void) { return b(); }\n',
             'b.c': 'int c(void); int b(void) { return c(); }\n',
             'c.c': 'int c(void) { return 1; }\n'})
print(chain.stdout, end='')
assert chain.returncode == 0, chain
assert 'no call circles among 3 objects' in chain.stdout, chain.stdout
print('ok')
