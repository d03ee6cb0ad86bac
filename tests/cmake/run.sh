#!/bin/bash
# Install the build into a temporary DESTDIR, then configure, build and run
# tests/cmake (find_package(libthp CONFIG REQUIRED), libthp::libthp and
# libthp::libthp_static) against it with cmake.
# usage: run.sh BUILDDIR
set -u
builddir=$(cd "${1:?usage: run.sh BUILDDIR}" && pwd) || exit 1
src=$(cd "$(dirname "$0")" && pwd) || exit 1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/libthp-cmake.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "cmake: FAIL: $*" >&2; exit 1; }

cmake=$(command -v cmake) || {
	echo "cmake: SKIP: no cmake (Debian: apt install cmake)"
	[ "${CI:-}" = true ] && fail "no cmake under CI=true"
	exit 77
}
dest=$tmp/dest
meson install -C "$builddir" --destdir "$dest" --no-rebuild --quiet || fail "meson install"
cfg=$(find "$dest" -name libthpConfig.cmake -print -quit)
[ -n "$cfg" ] || fail "libthpConfig.cmake not installed"
[ -e "$(dirname "$cfg")/libthpConfigVersion.cmake" ] || fail "libthpConfigVersion.cmake not installed"
prefix=$(meson introspect --buildoptions "$builddir" |
	python3 -c 'import json,sys; print(next(o["value"] for o in json.load(sys.stdin) if o["name"] == "prefix"))')

sanitize=()
if [ -n "${THP_SANITIZE:-}" ] && [ "$THP_SANITIZE" != none ]; then
	sanitize=(-DCMAKE_C_FLAGS="-fsanitize=$THP_SANITIZE"
		-DCMAKE_EXE_LINKER_FLAGS="-fsanitize=$THP_SANITIZE")
fi
# A lib64 libdir (the RPM layout, packaging/rpm/), which Debian's cmake
# does not search (FIND_LIBRARY_USE_LIB64_PATHS is off there): named.
case $cfg in
*/lib64/*) sanitize+=(-Dlibthp_DIR="$(dirname "$cfg")") ;;
esac
# Only the DESTDIR's libthp: no system-wide one may satisfy find_package.
"$cmake" -S "$src" -B "$tmp/build" -DCMAKE_PREFIX_PATH="$dest$prefix" "${sanitize[@]}" \
	-DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF \
	-DCMAKE_BUILD_TYPE=Release >"$tmp/configure.log" 2>&1 ||
	{ cat "$tmp/configure.log"; fail "cmake configure"; }
grep -F -- "-- libthp " "$tmp/configure.log"
grep -qF "from $dest" "$tmp/configure.log" || fail "find_package found a libthp outside the DESTDIR"
"$cmake" --build "$tmp/build" >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; fail "cmake --build"; }

libdir=$(dirname "$(find "$dest" -name 'libthp.so.0' -print -quit)")
out=$(LD_LIBRARY_PATH=$libdir "$tmp/build/consumer") || fail "consumer: $out"
echo "$out"
libs=$(LD_LIBRARY_PATH=$libdir ldd "$tmp/build/consumer") || fail "ldd: $libs"
[[ $(grep -F libthp.so <<<"$libs") == *"$dest"* ]] || fail "consumer did not load libthp from the DESTDIR: $libs"
if find "$dest" -name libthp.a | grep -q .; then
	[ -x "$tmp/build/consumer_static" ] || fail "libthp.a is installed but libthp::libthp_static was not built"
	out=$("$tmp/build/consumer_static") || fail "consumer_static: $out"
	echo "static: $out"
	if ldd "$tmp/build/consumer_static" | grep -qF libthp.so; then
		fail "consumer_static loads libthp.so"
	fi
fi
echo "cmake: OK"
