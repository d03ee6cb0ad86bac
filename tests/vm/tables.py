#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""README's per-kernel tables, made from what the VM suite measured.

tests/vm/run_vm.sh keeps each guest's VMTEST lines in LOGDIR/<kernel>.txt.
This script turns them into the two Markdown tables between the
<!-- vm-tables:begin --> and <!-- vm-tables:end --> markers of README.md:

    tables.py LOGDIR README.md          # exit 1 and a diff if README differs
    tables.py --write LOGDIR README.md  # rewrite README's tables

so that the tables can never drift from the kernels' own answers.  Only
the kernels that ran are checked (a VM test that skipped leaves no log),
and only those that booted the release README documents; the others keep
README's cells and are named.  No log at all: exit 77.  With CI=true every
column must be checked.
"""
import difflib
import errno
import os
import re
import sys

# Column order and headings: the kernels users run, then the RFC test kernels.
KERNELS = [
    ("debian11-5.10", "Debian 11 (5.10)"),
    ("debian12-6.1", "Debian 12 (6.1)"),
    ("debian13-6.12", "Debian 13 (6.12)"),
    ("debiansid-7.2", "sid (7.2)"),
    ("stock", "6.12 stock"),
    ("rfc", "6.12 RFC as posted"),
    ("rfc-fixed", "6.12 RFC fixed"),
]
BACKENDS = ["auto", "pmadv", "process_madvise", "madvise", "prctl_policy",
            "prctl_thp_disable", "existing_only", "preload"]
POLICIES = ["system", "huge", "nohuge", "never"]
BEGIN, END = "<!-- vm-tables:begin -->", "<!-- vm-tables:end -->"


def parse(path):
    info = {"set_default": {}}
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line.startswith("VMTEST INFO "):
                continue
            body = line[len("VMTEST INFO "):]
            m = re.match(r"kernel (\S+) release (\S+)", body)
            if m:
                info["release"] = m.group(2)
            m = re.match(r"boot THP mode (\S+)", body)
            if m:
                info["boot_mode"] = m.group(1)
            if body.startswith("probe "):
                info["probe"] = dict(kv.split("=", 1) for kv in body.split()[1:])
            if body.startswith("auto "):
                info["auto"] = dict(kv.split("=", 1) for kv in body.split()[1:])
            m = re.match(r"collapse remote: ret=(-?\d+) advised=(\d+)K before=(\d+) kB "
                         r"after=(\d+) kB backend=(\S+)", body)
            if m:
                info["collapse_remote"] = m.groups()
            m = re.match(r"thpctl run --policy (\w+) @(\w+): exit (\d+): (.*)", body)
            if m:
                info.setdefault("run", {})[(m.group(1), m.group(2))] = (int(m.group(3)),
                                                                        m.group(4))
            m = re.match(r"set_default_(\w+?)(_rfcprctl)?@(\w+): ret=(-?\d+) "
                         r"backend_used=\d+\((\w+)\) persistent=(\d)", body)
            if m:
                pol, rfcp, mode, ret, be, pers = m.groups()
                info["set_default"][(pol, bool(rfcp), mode)] = (int(ret), be, pers == "1")
    return info


def yes(v):
    return "yes" if v not in ("0", 0, False, None) else "no"


def errname(ret):
    # errno.errorcode names 95 ENOTSUP; the C API documents EOPNOTSUPP.
    return "-EOPNOTSUPP" if -ret == errno.EOPNOTSUPP else "-" + errno.errorcode.get(-ret, str(-ret))


def backends(mask):
    bits = int(mask, 16)
    return ", ".join(n for i, n in enumerate(BACKENDS) if i and bits & (1 << i))


def policy_cell(entry):
    if entry is None:
        return "—"
    ret, be, pers = entry
    if ret < 0:
        return errname(ret)
    return f"{be}; {'persistent' if pers else 'not persistent'}"


def row(title, cells):
    return "| " + " | ".join([title] + cells) + " |"


def make_tables(infos):
    head = row("", [h for _, h in KERNELS]) + "\n" + "|---" * (len(KERNELS) + 1) + "|"

    t1 = [head]
    t1.append(row("kernel release", [i.get("release", "?") for i in infos]))
    t1.append(row("global THP mode at boot", [i.get("boot_mode", "?") for i in infos]))
    t1.append(row("`thp_probe()` backends", [backends(i["probe"]["backends"]) for i in infos]))
    t1.append(row("VMA walk", ["PROCMAP_QUERY" if i["probe"]["pmq"] == "1" else "maps text"
                               for i in infos]))
    t1.append(row("`PIDFD_SELF`", [yes(i["probe"]["pidfd_self"]) for i in infos]))
    t1.append(row("`MADV_COLLAPSE`", [yes(i["probe"]["collapse"]) for i in infos]))
    t1.append(row("`PR_THP_DISABLE_EXCEPT_ADVISED`", [yes(i["probe"]["tdea"]) for i in infos]))
    for adv in ("huge", "nohuge", "collapse"):
        t1.append(row(f"`thp_apply_ranges()` self, {adv.upper()}",
                      [i["auto"][adv] for i in infos]))

    def remote(i):
        ret, adv, before, after, be = i["collapse_remote"]
        if int(ret) < 0:
            return f"{errname(int(ret))} (no `MADV_COLLAPSE`)"
        return f"{be}: {before} → {after} kB AnonHugePages"
    t1.append(row("COLLAPSE of another process (8 MiB)", [remote(i) for i in infos]))

    t2 = [head]
    for pol in POLICIES:
        t2.append(row(pol.upper(), [policy_cell(i["set_default"].get((pol, False, i["boot_mode"])))
                                    for i in infos]))
    for pol in POLICIES:
        t2.append(row(f"{pol.upper()}, RFC prctl declared",
                      [policy_cell(i["set_default"].get((pol, True, i["boot_mode"])))
                       for i in infos]))
    def run_cell(i, pol):
        entry = i.get("run", {}).get((pol, i["boot_mode"]))
        if entry is None:
            return "?"
        st, out = entry
        if st != 0:
            return f"exit {st}"
        kv = dict(w.split("=", 1) for w in out.split() if "=" in w)
        return (f"{kv.get('backend')}; {kv.get('anonhuge_kb')} kB huge of 4 MiB touched")
    for pol in POLICIES:
        t2.append(row(f"`thpctl run --policy {pol}`: the exec'd program",
                      [run_cell(i, pol) for i in infos]))
    return ("Interfaces and backends (auto) per kernel:\n\n" + "\n".join(t1) +
            "\n\n`thp_set_default()` per kernel, under the boot THP mode (backend used; "
            "persistent = checked in a forked and an exec'd child):\n\n" + "\n".join(t2) + "\n")


def cells_of(line):
    return [c.strip() for c in line.strip()[1:-1].split("|")]


def readme_rows(block):
    """(table number, row title) -> cells, for each row of the block's tables."""
    rows, table = {}, 0
    for line in block.splitlines():
        if not line.startswith("|") or line.startswith("|---"):
            continue
        cells = cells_of(line)
        if cells[0] == "":
            table += 1
        rows[(table, cells[0])] = cells[1:]
    return rows


def keep_columns(text, old_rows, keep):
    """TEXT's tables with README's cells in the columns of the kernels in KEEP."""
    out, table = [], 0
    for line in text.split("\n"):
        if line.startswith("|") and not line.startswith("|---"):
            cells = cells_of(line)
            if cells[0] == "":
                table += 1
            old = old_rows.get((table, cells[0]))
            if old is not None and len(old) == len(KERNELS):
                line = row(cells[0], [old[k] if k in keep else c
                                      for k, c in enumerate(cells[1:])])
        out.append(line)
    return "\n".join(out)


def main(argv):
    write = argv[1:2] == ["--write"]
    args = argv[2:] if write else argv[1:]
    if len(args) != 2:
        raise SystemExit(__doc__)
    logdir, readme = args
    ci = os.environ.get("CI") == "true"
    with open(readme, encoding="utf-8") as f:
        text = f.read()
    b, e = text.find(BEGIN), text.find(END)
    if b < 0 or e < b:
        raise SystemExit(f"tables.py: {readme} has no {BEGIN} ... {END} block")
    have = text[b + len(BEGIN):e].strip("\n") + "\n"
    old_rows = readme_rows(have)
    documented = old_rows.get((1, "kernel release"), [None] * len(KERNELS))

    # Each column documents one kernel release.  A kernel that did not run
    # (its test skipped), or booted another release than README documents
    # (Debian no longer serves the pinned one: tests/vm/kernels.lock), keeps
    # README's column; the others must agree cell by cell.
    infos, not_run, other_release = [], [], []
    for k, (name, _) in enumerate(KERNELS):
        path = os.path.join(logdir, name + ".txt")
        if not os.path.exists(path):
            infos.append(None)
            not_run.append(k)
            continue
        info = parse(path)
        infos.append(info)
        if len(documented) == len(KERNELS) and info.get("release") != documented[k]:
            other_release.append(k)
    if len(not_run) == len(KERNELS):
        print(f"tables.py: no VM log in {logdir}: no kernel of the vm suite ran "
              f"(meson test --suite vm), nothing to check")
        return 1 if ci else 77
    for k in not_run:
        print(f"not checked: {KERNELS[k][0]}: no {KERNELS[k][0]}.txt in {logdir} "
              f"(its test skipped or did not run)")
    for k in other_release:
        print(f"not checked: {KERNELS[k][0]} booted {infos[k].get('release', '?')}, "
              f"README documents {documented[k]} (the pin of tests/vm/kernels.lock)")
    # A column of another release is shown, not compared; --write takes it.
    filler = {"release": "?", "boot_mode": "?", "probe": {"backends": "0", "pmq": "0",
              "pidfd_self": "0", "collapse": "0", "tdea": "0"},
              "auto": {"huge": "?", "nohuge": "?", "collapse": "?"},
              "collapse_remote": ("0", "0", "?", "?", "?"), "set_default": {}}
    measured = make_tables([i if i is not None else filler for i in infos])
    want = keep_columns(measured, old_rows, set(not_run) if write else
                        set(not_run) | set(other_release))
    if other_release and not write:
        shown = keep_columns(measured, old_rows, set(not_run))
        diff = list(difflib.unified_diff(want.splitlines(True), shown.splitlines(True),
                                         "README.md", "measured, unchecked columns"))
        if diff:
            print("what those columns measured, for information:")
            sys.stdout.writelines(diff)
    checked = [KERNELS[k][0] for k in range(len(KERNELS))
               if k not in not_run and k not in other_release]
    if have == want:
        print(f"README's per-kernel tables agree with the VM runs of {', '.join(checked)}")
        if ci and len(checked) != len(KERNELS):
            print("CI=true: every kernel's column must be checked")
            return 1
        return 0
    if write:
        with open(readme, "w", encoding="utf-8") as f:
            f.write(text[:b + len(BEGIN)] + "\n" + want + text[e:])
        print(f"rewrote the tables in {readme}")
        return 0
    sys.stdout.writelines(difflib.unified_diff(have.splitlines(True), want.splitlines(True),
                                               "README.md", "measured"))
    print("README's per-kernel tables differ from the VM runs: "
          "regenerate with tests/vm/tables.py --write LOGDIR README.md")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
