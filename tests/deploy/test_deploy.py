#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""deploy/: the Kubernetes manifests, the Prometheus rules and the Grafana dashboard, offline.

    test_deploy.py --source DIR [--thpd PATH] k8s|rules|dashboard

k8s        every YAML manifest of deploy/kubernetes against the Kubernetes
           API's schema (k8s_validate.py); the checker must also refuse
           copies with an unknown field, a wrong type, a missing required
           field and a wrong apiVersion
rules      promtool check rules and promtool test rules
dashboard  the dashboard parses, and every metric its queries name is one a
           real short thpd run exports (its metrics file's # TYPE lines)
config     thpd --check-config accepts the ConfigMap's files, laid out as the
           DaemonSet mounts them, and README's thpd.d rule; a copy with a
           misspelt key is refused (so a key thpd does not know fails here)
"""
import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

CI = os.environ.get("CI") == "true"
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def skip(why):
    print("SKIP: " + why)
    sys.exit(1 if CI else 77)


def k8s_files(src):
    d = os.path.join(src, "deploy", "kubernetes")
    return sorted(os.path.join(d, f) for f in os.listdir(d)
                  if f.endswith(".yaml") and not f.startswith("prometheus-"))


def case_k8s(args):
    try:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import k8s_validate
    except ImportError as e:
        skip("python3-kubernetes or python3-yaml missing (%s)" % e)
    files = k8s_files(args.source)
    check(len(files) >= 2, "manifests found: %s" % files)
    for path in files:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        errors = k8s_validate.check_text(text, path)
        check(not errors, "%s valid %s" % (os.path.basename(path), errors))
    with open(os.path.join(args.source, "deploy", "kubernetes", "thpd-daemonset.yaml")) as f:
        ds = f.read()
    broken = [
        ("unknown field", "hostPID: true", "hostPid: true", "unknown field 'hostPid'"),
        ("wrong type", "readOnlyRootFilesystem: true", "readOnlyRootFilesystem: yes please",
         "expected bool"),
        ("missing required", "      containers:\n", "      initContainers:\n", "containers"),
        ("wrong apiVersion", "apiVersion: apps/v1", "apiVersion: extensions/v1beta1",
         "apiVersion"),
        ("misplaced field", "      hostPID: true\n", "      hostPID: true\n      privileged: true\n",
         "unknown field 'privileged'"),
    ]
    for name, old, new, expect in broken:
        check(old in ds, "%s: the manifest has %r" % (name, old.strip()))
        errors = k8s_validate.check_text(ds.replace(old, new, 1), name)
        check(any(expect in e for e in errors), "%s refused: %s" % (name, errors))


def case_rules(args):
    promtool = shutil.which("promtool")
    if not promtool:
        skip("promtool (Debian: prometheus) missing")
    d = os.path.join(args.source, "deploy", "kubernetes")
    for cmd in (["check", "rules", "prometheus-rules.yaml"],
                ["test", "rules", "prometheus-rules-test.yaml"]):
        p = subprocess.run([promtool] + cmd, cwd=d, capture_output=True, text=True, timeout=120)
        check(p.returncode == 0, "promtool %s: %s" % (" ".join(cmd), (p.stdout + p.stderr).strip()))


PROMQL_WORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or",
                "unless", "offset", "bool", "inf", "nan"}


def expr_metrics(expr):
    """The metric names a PromQL expression names."""
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)       # strings
    expr = re.sub(r"\{[^}]*\}", "", expr)                 # label matchers
    expr = re.sub(r"\[[^\]]*\]", "", expr)                # ranges
    expr = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "", expr)
    names = set()
    for m in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", expr):
        word = m.group(0)
        rest = expr[m.end():].lstrip()
        if word.lower() in PROMQL_WORDS or rest.startswith("("):
            continue  # a keyword or a function
        if re.match(r"\d", expr[max(0, m.start() - 1):m.start()] or "x"):
            continue  # a unit of a number (5m)
        names.add(word)
    return names


def thpd_metric_names(args):
    """The names in the # TYPE lines of a real thpd's metrics file, over its first passes.

    The rule matches this script's interpreter, so that the per-process and
    folio size series (which need a matched process measured) show too.
    """
    tmp = tempfile.mkdtemp()
    names = set()
    try:
        conf = os.path.join(tmp, "thpd.conf")
        with open(conf, "w") as f:
            f.write("[rule self]\nexe = %s\npolicy = huge\n" % os.path.realpath("/proc/self/exe"))
        prom = os.path.join(tmp, "thpd.prom")
        d = subprocess.Popen([args.thpd, "--config", conf, "--config-dir", os.path.join(tmp, "d"),
                              "--socket", os.path.join(tmp, "sock"), "--metrics-file", prom,
                              "--interval", "100"], stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and "thpd_rule_folio_bytes" not in names:
                time.sleep(0.2)
                if os.path.exists(prom):
                    with open(prom) as f:
                        names |= set(re.findall(r"^# TYPE (\S+) ", f.read(), re.M))
        finally:
            d.terminate()
            check(d.wait(timeout=30) == 0, "thpd stopped cleanly")
        return names
    finally:
        shutil.rmtree(tmp)


def case_dashboard(args):
    if os.geteuid() != 0:
        skip("thpd's folio size series need root (pagemap frame numbers)")
    path = os.path.join(args.source, "deploy", "grafana", "thpd-dashboard.json")
    with open(path, encoding="utf-8") as f:
        dash = json.load(f)
    exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
    for v in dash.get("templating", {}).get("list", []):
        if isinstance(v.get("query"), dict):
            exprs.append(re.sub(r"^label_values\((.*),\s*\w+\)$", r"\1", v["query"]["query"]))
    check(len(exprs) >= 10, "%d queries" % len(exprs))
    exported = thpd_metric_names(args) | {"up"}  # up: Prometheus' own, per scrape target
    check("thpd_rule_huge_bytes" in exported and "process_cpu_seconds_total" in exported,
          "thpd exports %d metric names" % len(exported))
    named = set()
    for e in exprs:
        names = expr_metrics(e)
        check(names and names <= exported, "%s names only exported metrics (unknown: %s)"
              % (e[:80], sorted(names - exported)))
        named |= names
    # The checker itself: a misspelt name is caught.
    check(expr_metrics('sum by (rule) (rate(thpd_colapses_total{job="thpd"}[5m]))')
          == {"thpd_colapses_total"}, "the name check sees a misspelt metric")
    print("dashboard names %d of thpd's %d metrics" % (len(named), len(exported)))


def check_config(args, files):
    """thpd --check-config on @files ({relative path: text}) as the DaemonSet lays
    them out: thpd.conf with --config, thpd.d/ with --config-dir; the rules it lists."""
    tmp = tempfile.mkdtemp()
    try:
        for rel, text in files.items():
            path = os.path.join(tmp, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
        p = subprocess.run([args.thpd, "--check-config", "--config", os.path.join(tmp, "thpd.conf"),
                            "--config-dir", os.path.join(tmp, "thpd.d")],
                           capture_output=True, text=True, timeout=60)
        return p.returncode, p.stdout + p.stderr
    finally:
        shutil.rmtree(tmp)


def case_config(args):
    try:
        import yaml
    except ImportError as e:
        skip("python3-yaml missing (%s)" % e)
    with open(os.path.join(args.source, "deploy", "kubernetes", "thpd-daemonset.yaml")) as f:
        ds = f.read()
    with open(os.path.join(args.source, "deploy", "kubernetes", "thpd-configmap.yaml")) as f:
        data = yaml.safe_load(f)["data"]
    # Where the DaemonSet mounts each key (its items: key, path).
    paths = dict(re.findall(r"- key: (\S+)\n\s+path: (\S+)", ds))
    check(set(paths) == set(data) and paths.get("thpd.conf") == "thpd.conf"
          and all(v.startswith("thpd.d/") for k, v in paths.items() if k != "thpd.conf")
          and "--config-dir\", \"/etc/thpd/thpd.d" in ds,
          "the DaemonSet mounts every ConfigMap key: %s" % paths)
    files = {paths.get(k, k): v for k, v in data.items()}
    rc, out = check_config(args, files)
    rules = re.findall(r"^\[rule (\S+)\]", "\n".join(data.values()), re.M)
    check(rc == 0 and rules and all("[rule %s]" % r in out for r in rules),
          "thpd --check-config accepts the ConfigMap, rules %s: %s" % (rules, out.strip()))
    # The check itself: a key thpd does not know fails.
    bad = {k: v.replace("pod_namespace =", "pod_namespaces =") for k, v in files.items()}
    rc, out = check_config(args, bad)
    check(rc != 0 and 'unknown key "pod_namespaces"' in out,
          "a misspelt key in the ConfigMap is refused: %s" % out.strip())
    # README's rules for thpd.d (```ini blocks that name their file in /etc/thpd.d/).
    with open(os.path.join(args.source, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    blocks = re.findall(r"```ini\n# /etc/thpd\.d/(\S+)\n(.*?)```", readme, re.S)
    check(blocks, "README has thpd.d rules")
    for name, text in blocks:
        rc, out = check_config(args, {"thpd.conf": "", "thpd.d/" + name: text})
        check(rc == 0 and "[rule " in out, "README's %s: thpd --check-config accepts it: %s"
              % (name, out.strip()))


CASES = {"k8s": case_k8s, "rules": case_rules, "dashboard": case_dashboard, "config": case_config}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--source", required=True)
    ap.add_argument("--thpd")
    ap.add_argument("case", choices=list(CASES))
    args = ap.parse_args()
    CASES[args.case](args)
    print("%s: %d check(s) failed" % (args.case, len(failures)) if failures
          else "%s: all passed" % args.case)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
