#!/bin/bash
# What `meson setup` does when the test suite cannot be built: without
# Check (hidden from pkg-config here), tests=auto configures without
# tests/ and says why, tests=true stops with an error naming Check; and
# thpctl without the preload it loads is refused.  Setup only, no build.
# usage: setup_options.sh SRC_ROOT
set -u
src=$(cd "$1" && pwd) || exit 1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/libthp-setup.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "setup_options: FAIL: $*" >&2; exit 1; }

# Every .pc file pkg-config would find, except check.pc.
mkdir "$tmp/pc"
IFS=: read -r -a dirs <<<"$(pkg-config --variable pc_path pkg-config)"
for d in "${dirs[@]}"; do
	for f in "$d"/*.pc; do
		[ -e "$f" ] && [ "${f##*/}" != check.pc ] && ln -sf "$f" "$tmp/pc/"
	done
done
export PKG_CONFIG_LIBDIR=$tmp/pc
pkg-config --exists check && fail "check.pc is still visible"

meson setup "$tmp/auto" "$src" >"$tmp/auto.log" 2>&1 ||
	{ cat "$tmp/auto.log"; fail "tests=auto without Check: meson setup failed"; }
grep -F 'No Check test suite (tests/): Check' "$tmp/auto.log" ||
	{ cat "$tmp/auto.log"; fail "tests=auto without Check: no message"; }
meson introspect --tests "$tmp/auto" >"$tmp/tests.json" || fail "meson introspect"
python3 - "$tmp/tests.json" <<'PY' || fail "tests=auto without Check still registered tests/"
import json, sys
names = [t["name"] for t in json.load(open(sys.argv[1]))]
core = [n for n in names if n in ("validation", "apply_ranges", "install", "subproject")]
print("registered without Check: %d tests, none of tests/: %s" % (len(names), not core))
sys.exit(1 if core else 0)
PY

if meson setup "$tmp/true" "$src" -Dtests=true >"$tmp/true.log" 2>&1; then
	fail "tests=true without Check: meson setup succeeded"
fi
grep -F 'ERROR: Problem encountered: -Dtests=true: the test suite cannot be built: Check' "$tmp/true.log" ||
	{ cat "$tmp/true.log"; fail "tests=true without Check: not the expected error"; }
unset PKG_CONFIG_LIBDIR

if meson setup "$tmp/nopre" "$src" -Dpreload=false -Dtests=false >"$tmp/nopre.log" 2>&1; then
	fail "-Dthpctl=true -Dpreload=false: meson setup succeeded"
fi
grep -F -- '-Dthpctl=true needs -Dpreload=true' "$tmp/nopre.log" ||
	{ cat "$tmp/nopre.log"; fail "-Dpreload=false: not the expected error"; }
echo "setup_options: OK"
