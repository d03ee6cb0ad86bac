#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Draw thp_bench's scaling curves as SVG, from its --json output.

    thp_bench --json bench.json          # a full run (or some sections)
    bench/charts.py bench.json doc/charts

For every curve (a section and series with two or more points) it writes
doc/charts/<section>-<series>.svg: the cost per unit (per range, per mapping;
per call where the cost is not per unit, as for thp_get_default()) of
the libthp call and of the raw system calls it is compared with, medians
with min..max whiskers, on logarithmic axes, and the libthp/raw ratio of
each point written above it.  Standard library only.
"""
import json
import math
import os
import re
import sys

W, H = 640, 400
# Curves whose cost does not scale with x (x is the process's mapping count):
# drawn per call, not per unit.
PER_CALL = {"thp_get_default vs prctl"}
L, R, T, B = 80, 20, 50, 60  # margins


def log_ticks(lo, hi):
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    return [10.0 ** e for e in range(a, b + 1)]


def fmt(v):
    if v >= 1000 or v < 0.01:
        return f"{v:.0e}".replace("e+0", "e").replace("e-0", "e-")
    return f"{v:g}"


def chart(rows, title, subtitle, per_call):
    unit = rows[0]["unit"]
    pts = sorted(rows, key=lambda r: r["x"])
    per = [(r["x"], {k: {s: r[k][s] / (1 if per_call else r["x"]) for s in ("med", "min", "max")}
                     for k in ("libthp", "raw")}, r["ratio"]["med"]) for r in pts]
    ys = [v[k][s] for _, v, _ in per for k in ("libthp", "raw") for s in ("min", "max")]
    xs = [x for x, _, _ in per]
    xlo, xhi = min(xs) / 2, max(xs) * 2
    ylo, yhi = min(ys) / 2, max(ys) * 2
    xt, yt = log_ticks(xlo, xhi), log_ticks(ylo, yhi)
    xlo, xhi, ylo, yhi = xt[0], xt[-1], yt[0], yt[-1]

    def px(x):
        return L + (math.log10(x) - math.log10(xlo)) / (math.log10(xhi) - math.log10(xlo)) * (W - L - R)

    def py(y):
        return H - B - (math.log10(y) - math.log10(ylo)) / (math.log10(yhi) - math.log10(ylo)) * (H - T - B)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{W}" height="{H}" fill="white"/>',
           f'<text x="{W / 2}" y="20" text-anchor="middle" font-size="14">{title}</text>',
           f'<text x="{W / 2}" y="36" text-anchor="middle" fill="#555">{subtitle}; cost per '
           f'{"call" if per_call else "unit"}, median with min..max; numbers: libthp / raw</text>']
    for x in xt:
        out.append(f'<line x1="{px(x):.1f}" y1="{T}" x2="{px(x):.1f}" y2="{H - B}" stroke="#ddd"/>')
        out.append(f'<text x="{px(x):.1f}" y="{H - B + 16}" text-anchor="middle">{fmt(x)}</text>')
    for y in yt:
        out.append(f'<line x1="{L}" y1="{py(y):.1f}" x2="{W - R}" y2="{py(y):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{L - 6}" y="{py(y) + 4:.1f}" text-anchor="end">{fmt(y)}</text>')
    out.append(f'<text x="{W / 2}" y="{H - 20}" text-anchor="middle">'
               f'{"mappings in the process" if per_call else "units (ranges or mappings) per call"}'
               f'</text>')
    out.append(f'<text x="18" y="{H / 2}" text-anchor="middle" transform="rotate(-90 18 {H / 2})">'
               f'{unit} per {"call" if per_call else "unit"}</text>')
    for key, colour, dy in (("libthp", "#c0392b", -8), ("raw", "#2c3e50", 16)):
        path = " ".join(f"{'M' if i == 0 else 'L'}{px(x):.1f},{py(v[key]['med']):.1f}"
                        for i, (x, v, _) in enumerate(per))
        out.append(f'<path d="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for x, v, _ in per:
            out.append(f'<line x1="{px(x):.1f}" y1="{py(v[key]["min"]):.1f}" x2="{px(x):.1f}" '
                       f'y2="{py(v[key]["max"]):.1f}" stroke="{colour}"/>')
            out.append(f'<circle cx="{px(x):.1f}" cy="{py(v[key]["med"]):.1f}" r="3" fill="{colour}"/>')
        lx = W - R - 150
        ly = T + 10 + (0 if key == "libthp" else 16)
        out.append(f'<line x1="{lx}" y1="{ly}" x2="{lx + 20}" y2="{ly}" stroke="{colour}" stroke-width="2"/>')
        out.append(f'<text x="{lx + 26}" y="{ly + 4}">{key}</text>')
    for x, v, ratio in per:
        top = min(py(v["libthp"]["max"]), py(v["raw"]["max"]))
        out.append(f'<text x="{px(x):.1f}" y="{top - 6:.1f}" text-anchor="middle" '
                   f'fill="#555">{ratio:.2f}×</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main(argv):
    if len(argv) != 3:
        raise SystemExit(__doc__)
    with open(argv[1], encoding="utf-8") as f:
        data = json.load(f)
    os.makedirs(argv[2], exist_ok=True)
    curves = {}
    for r in data["rows"]:
        if r["section"] == "targets":  # the closing table, not a curve
            continue
        curves.setdefault((r["section"], r["series"]), []).append(r)
    n = 0
    for (section, series), rows in sorted(curves.items()):
        if len(rows) < 2:
            continue
        slug = re.sub(r"[^a-z0-9]+", "-", f"{section} {series}".lower()).strip("-")
        path = os.path.join(argv[2], slug + ".svg")
        with open(path, "w", encoding="utf-8") as f:
            f.write(chart(rows, f"{section}: {series}",
                          f"libthp {data['libthp']}, Linux {data['kernel']}", series in PER_CALL))
        print(path)
        n += 1
    if not n:
        raise SystemExit("charts.py: no curve with two or more points")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
