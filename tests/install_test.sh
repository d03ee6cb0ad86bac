#!/usr/bin/env bash
# Install the build into a temporary DESTDIR, then build and run a small
# program against it through pkg-config only.
set -euo pipefail

builddir=${1:?usage: install_test.sh BUILDDIR}
builddir=$(cd "$builddir" && pwd)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/libthp-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
dest=$tmp/dest

fail() { echo "install_test: FAIL: $*" >&2; exit 1; }

meson install -C "$builddir" --destdir "$dest" --no-rebuild --quiet \
	|| fail "meson install failed"

hdr=$(find "$dest" -path '*/include/thp/thp.h' -print -quit)
[ -n "$hdr" ] || fail "thp/thp.h not installed"
pc=$(find "$dest" -name libthp.pc -print -quit)
[ -n "$pc" ] || fail "libthp.pc not installed"
so=$(find "$dest" -name 'libthp.so.*' -print -quit)
[ -n "$so" ] || fail "libthp.so.* not installed"
libdir=$(dirname "$so")
[ -e "$libdir/libthp.so" ] || fail "libthp.so development link not installed"
# The bash completion of each installed tool, where bash-completion loads
# it from (completions/NAME), registering the completion of NAME.
for tool in thpctl thpd; do
	find "$dest" -path "*bin/$tool" -print -quit | grep -q . || continue
	comp=$(find "$dest" -path "*/share/bash-completion/completions/$tool" -print -quit)
	[ -n "$comp" ] || fail "no bash completion installed for $tool"
	bash -c "source '$comp' && complete -p $tool" >/dev/null ||
		fail "$comp does not register a completion for $tool"
done
# thp-oci-hook and the hooks.d file that podman and CRI-O read, naming it.
hook=$(find "$dest" -path '*/libthp/thp-oci-hook' -print -quit)
[ -n "$hook" ] && [ -x "$hook" ] || fail "thp-oci-hook not installed"
hooks_json=$(find "$dest" -path '*/share/containers/oci/hooks.d/libthp.json' -print -quit)
[ -n "$hooks_json" ] || fail "hooks.d/libthp.json not installed"
grep -q "\"path\": \"${hook#"$dest"}\"" "$hooks_json" ||
	fail "hooks.d/libthp.json does not name ${hook#"$dest"}"

cat > "$tmp/prog.c" <<'PROG'
#include <stdio.h>
#include <string.h>
#include <thp/thp.h>

int main(void)
{
	char want[32];
	THP_OPTS(thp_probe_info, info);
	int ret;

	snprintf(want, sizeof(want), "%d.%d.%d", THP_VERSION_MAJOR, THP_VERSION_MINOR,
		 THP_VERSION_PATCH);
	if (strcmp(thp_version(), want) != 0) {
		fprintf(stderr, "thp_version() %s, header says %s\n", thp_version(), want);
		return 1;
	}
	ret = thp_probe(&info);
	if (ret != 0) {
		fprintf(stderr, "thp_probe: %d (%s)\n", ret, thp_strerror(ret));
		return 1;
	}
	if (!(info.backends & (1u << THP_BACKEND_MADVISE))) {
		fprintf(stderr, "thp_probe: madvise backend missing (0x%x)\n", info.backends);
		return 1;
	}
	printf("libthp %s pmd_size %llu backends 0x%x\n", thp_version(),
	       (unsigned long long)info.pmd_size, info.backends);
	return 0;
}
PROG

export PKG_CONFIG_PATH=$(dirname "$pc")
export PKG_CONFIG_LIBDIR=$(dirname "$pc")
export PKG_CONFIG_SYSROOT_DIR=$dest
flags=$(pkg-config --cflags --libs libthp) || fail "pkg-config libthp failed"
echo "pkg-config libthp: $flags"
case "$flags" in
*"$dest"*) ;;
*) fail "pkg-config flags do not point into the DESTDIR: $flags" ;;
esac
[ "$(pkg-config --modversion libthp)" = "$(sed -n 's/^#define THP_VERSION_MAJOR \([0-9]*\)/\1/p' "$hdr").$(sed -n 's/^#define THP_VERSION_MINOR \([0-9]*\)/\1/p' "$hdr").$(sed -n 's/^#define THP_VERSION_PATCH \([0-9]*\)/\1/p' "$hdr")" ] \
	|| fail "libthp.pc version differs from the header"

# shellcheck disable=SC2086
${CC:-cc} -std=gnu11 -Wall -Werror -o "$tmp/prog" "$tmp/prog.c" $flags \
	|| fail "compiling against the installed library failed"

out=$(LD_LIBRARY_PATH=$libdir "$tmp/prog") || fail "program failed: $out"
echo "$out"
# Capture first: with pipefail, `ldd | grep -q` fails whenever grep exits on
# the match before ldd has written its last line (SIGPIPE), as it did in CI
# under ASan, whose runtime libraries make the ldd output longer.
libs=$(LD_LIBRARY_PATH=$libdir ldd "$tmp/prog") || fail "ldd failed: $libs"
thp_line=$(grep -F 'libthp.so' <<<"$libs") || fail "ldd does not list libthp: $libs"
[[ $thp_line == *"$dest"* ]] \
	|| fail "program did not load libthp from the DESTDIR: $libs"
# Static: libthp.a with what `pkg-config --static` adds (Libs.private),
# when the install has libthp.a (default_library=both or static).
if [ -e "$libdir/libthp.a" ]; then
	sflags=$(pkg-config --static --cflags --libs libthp) || fail "pkg-config --static libthp failed"
	echo "pkg-config --static libthp: $sflags"
	[[ " $sflags " == *" -pthread "* ]] || fail "pkg-config --static does not add -pthread: $sflags"
	# A sanitized libthp.a (-Db_sanitize) needs the sanitizer runtimes, which
	# link only dynamically: then libthp alone is taken from its archive.
	if [[ -n ${THP_SANITIZE:-} && $THP_SANITIZE != none ]]; then
		link=(-fsanitize="$THP_SANITIZE" -Wl,-Bstatic $sflags -Wl,-Bdynamic)
	else
		link=(-static $sflags)
	fi
	# shellcheck disable=SC2086,SC2206
	${CC:-cc} -std=gnu11 -Wall -Werror -o "$tmp/prog_static" "$tmp/prog.c" "${link[@]}" \
		|| fail "linking the installed libthp.a with pkg-config --static failed"
	out=$("$tmp/prog_static") || fail "static program failed: $out"
	echo "static: $out"
fi
# The preload in its private directory, not among the libraries to link.
pre=$(find "$dest" -name 'libthp-preload.so' -print -quit)
[[ $pre == */libthp/libthp-preload.so ]] || fail "libthp-preload.so not in LIBDIR/libthp/: '$pre'"
[ ! -e "$libdir/libthp-preload.so" ] || fail "libthp-preload.so also directly in $libdir"

# No build or source path in what was installed (debug info aside, which
# packagers split off and map with -ffile-prefix-map).
srcdir=$(cd "$(dirname "$0")/.." && pwd)
while IFS= read -r f; do
	head -c4 "$f" | grep -q 'ELF' || continue
	objcopy --strip-debug "$f" "$tmp/stripped" || fail "objcopy $f"
	for p in "$builddir" "$srcdir"; do
		if grep -aqF "$p" "$tmp/stripped"; then
			fail "${f#"$dest"} contains the path $p"
		fi
	done
done < <(find "$dest" -type f)

echo "install_test: OK"
