#!/bin/bash
# Build tests/subproject/consumer, a parent project that gets libthp through
# dependency('libthp', fallback : 'libthp'), with this tree linked in as
# subprojects/libthp; run its test; check what a subproject build leaves
# out (libthp's own tests) and, with default_library=shared, that
# `meson install` puts no libthp.a in place; then again with libthp's
# -Dthpctl=false -Dpreload=false -Dman=false: the library alone.
# usage: run.sh SRC_ROOT
set -u
src=$(cd "$1" && pwd) || exit 1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/libthp-subproject.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "subproject: FAIL: $*" >&2; exit 1; }

cp -r "$src/tests/subproject/consumer" "$tmp/consumer" || exit 1
mkdir "$tmp/consumer/subprojects" && ln -s "$src" "$tmp/consumer/subprojects/libthp" || exit 1
cd "$tmp/consumer" || exit 1
# Force the fallback even where an installed libthp.pc exists.
# libthp's own default is both libraries: a parent chooses per subproject.
meson setup build --force-fallback-for=libthp -Dlibthp:default_library=shared \
	-Dprefix=/usr >setup.log 2>&1 || { cat setup.log; fail "meson setup"; }
grep -E 'Subproject libthp|Dependency libthp' setup.log
meson compile -C build >compile.log 2>&1 || { tail -n 40 compile.log; fail "meson compile"; }
meson test -C build --print-errorlogs consumer || fail "the consumer's test"
cat build/meson-logs/testlog.txt | grep -a 'as a subproject' || true

tests=$(meson test -C build --list --no-rebuild 2>/dev/null | grep -c .)
[ "$tests" = 1 ] || fail "expected the consumer's one test, meson lists $tests:
$(meson test -C build --list --no-rebuild 2>/dev/null)"
meson install -C build --destdir "$tmp/dest" --no-rebuild >install.log 2>&1 ||
	{ cat install.log; fail "meson install"; }
find "$tmp/dest" -name 'libthp.so.0*' | grep -q . || fail "libthp.so.0 not installed"
if find "$tmp/dest" -name 'libthp.a' | grep -q .; then
	fail "libthp:default_library=shared installed libthp.a"
fi

# The library alone: -Dlibthp:thpctl=false -Dlibthp:preload=false
# -Dlibthp:man=false builds and installs neither thpctl, nor the preload,
# nor the man pages.
meson setup build-lib --force-fallback-for=libthp -Dlibthp:default_library=shared \
	-Dlibthp:thpctl=false -Dlibthp:preload=false -Dlibthp:man=false \
	-Dprefix=/usr >setup-lib.log 2>&1 || { cat setup-lib.log; fail "meson setup (library only)"; }
meson compile -C build-lib >compile-lib.log 2>&1 || { tail -n 40 compile-lib.log; fail "meson compile (library only)"; }
meson test -C build-lib --print-errorlogs consumer || fail "the consumer's test (library only)"
for t in thpctl libthp-preload.so; do
	if [ -e "build-lib/subprojects/libthp/tools/$t" ] || [ -e "build-lib/subprojects/libthp/preload/$t" ]; then
		fail "library only: $t was built"
	fi
done
meson install -C build-lib --destdir "$tmp/dest-lib" --no-rebuild >install-lib.log 2>&1 ||
	{ cat install-lib.log; fail "meson install (library only)"; }
files=$(cd "$tmp/dest-lib" && find . -type f -o -type l | sort)
echo "library only, installed:"
echo "$files"
echo "$files" | grep -q 'libthp\.so\.0' || fail "library only: libthp.so.0 not installed"
echo "$files" | grep -q 'include/thp/thp\.h' || fail "library only: thp/thp.h not installed"
if echo "$files" | grep -E 'thpctl|preload|/man/'; then
	fail "library only: the files above were installed"
fi
echo "subproject: OK (one test; libthp.so installed, no libthp.a; library alone: no thpctl, preload or man pages)"
