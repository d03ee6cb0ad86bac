#!/bin/bash
# meson.build's project version is the one source of the version; every
# other place that writes it must agree: thp.h's THP_VERSION_* macros, the
# newest symbol version node of lib/libthp.map (not newer than
# MAJOR.MINOR), the .TH line of every man page, the newest NEWS entry, the
# RPM spec's Version and newest %changelog entry, the generated libthp.pc,
# and, where they exist, debian/changelog and the Python binding's meson.build.
# RELEASING.md lists the same places.
# usage: version_check.sh VERSION SRC_ROOT [LIBTHP_PC]
set -u
version=$1 src=$2 pc=${3:-}
fail=0
bad() { echo "FAIL $*"; fail=1; }
ok() { echo "ok   $*"; }

IFS=. read -r major minor patch <<<"$version"

hdr=$src/include/thp/thp.h
for part in MAJOR:$major MINOR:$minor PATCH:$patch; do
	name=${part%%:*} want=${part#*:}
	got=$(sed -n "s/^#define THP_VERSION_$name \\([0-9]*\\)\$/\\1/p" "$hdr")
	[ "$got" = "$want" ] || bad "thp.h THP_VERSION_$name is '$got', meson.build says $want"
done
[ $fail = 0 ] && ok "thp.h THP_VERSION_* $major.$minor.$patch"

# Nodes are named LIBTHP_MAJOR.MINOR after the release that added symbols.
newest=$(sed -n 's/^\(LIBTHP_[0-9][0-9.]*\) {.*/\1/p' "$src/lib/libthp.map" | sort -V | tail -n1)
node=${newest#LIBTHP_}
if [ -z "$newest" ]; then
	bad "lib/libthp.map: no LIBTHP_X.Y node"
elif [ "$(printf '%s\n%s\n' "$node" "$major.$minor" | sort -V | tail -n1)" != "$major.$minor" ]; then
	bad "lib/libthp.map: newest node $newest is newer than version $version"
else
	ok "lib/libthp.map newest node $newest (version $version)"
fi

n=0
for page in "$src"/man/*.[1-8]; do
	# Link pages (".so man3/other.3") carry no .TH of their own.
	head -n1 "$page" | grep -q '^\.so ' && continue
	n=$((n + 1))
	th=$(grep -m1 '^\.TH ' "$page")
	case $th in
	*"\"libthp $version\""*) ;;
	*) bad "${page##*/}: '$th' does not name \"libthp $version\"" ;;
	esac
done
[ "$n" -gt 0 ] || bad "no man pages in $src/man"
echo "     $n man pages' .TH lines checked"

news=$(grep -m1 -o '^libthp [0-9][0-9.]*' "$src/NEWS" 2>/dev/null)
[ "$news" = "libthp $version" ] && ok "NEWS: $news" ||
	bad "NEWS: newest entry is '$news', meson.build says $version"

if [ -e "$src/debian/changelog" ]; then
	deb=$(sed -n '1s/^[^ ]* (\([^)]*\)).*/\1/p' "$src/debian/changelog")
	up=${deb#*:}
	up=${up%-*}
	[ "$up" = "$version" ] && ok "debian/changelog $deb" ||
		bad "debian/changelog: upstream version '$up' (from $deb), meson.build says $version"
fi
# The binding's own meson project (meson-python takes its version there).
py=$src/bindings/python/meson.build
if [ -e "$py" ]; then
	pv=$(sed -n "s/^project('thp', version : '\([^']*\)'.*/\1/p" "$py")
	[ "$pv" = "$version" ] && ok "bindings/python/meson.build $pv" ||
		bad "bindings/python/meson.build: version '$pv', meson.build says $version"
fi
spec=$src/packaging/rpm/libthp.spec
sv=$(sed -n 's/^Version:[[:space:]]*\([^[:space:]]*\)$/\1/p' "$spec" 2>/dev/null)
[ "$sv" = "$version" ] && ok "libthp.spec Version $sv" ||
	bad "packaging/rpm/libthp.spec: Version '$sv', meson.build says $version"
# The newest %changelog entry ends in " - VERSION-RELEASE".
sc=$(sed -n '/^%changelog/,$s/^\* .* - \([^ ]*\)-[^-]*$/\1/p' "$spec" 2>/dev/null | head -n1)
[ "$sc" = "$version" ] && ok "libthp.spec %changelog $sc" ||
	bad "packaging/rpm/libthp.spec: newest %changelog entry is '$sc', meson.build says $version"
if [ -n "$pc" ]; then
	pv=$(sed -n 's/^Version: *//p' "$pc")
	[ "$pv" = "$version" ] && ok "libthp.pc Version $pv" ||
		bad "$pc: Version '$pv', meson.build says $version"
fi
exit $fail
