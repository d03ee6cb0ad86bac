#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Run test programs as an unprivileged user: as root, copies of them and
# of libthp (the build tree may not be readable by that user) run as
# nobody with no capabilities; as anyone else, they run as they are.
# Usage: run_unprivileged.sh LIBTHP_SO TEST_PROGRAM...
# Exit status: 1 when one failed, 77 when every one skipped, 0 otherwise.
set -eu

lib=$1
shift
run=("$@")
if [ "$(id -u)" = 0 ]; then
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	# The programs find libthp through their RUNPATH $ORIGIN/../lib.
	mkdir -m 0755 "$tmp/lib" "$tmp/tests"
	soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
	cp -L "$lib" "$tmp/lib/${soname:-$(basename "$lib")}"
	run=()
	for exe; do
		cp "$exe" "$tmp/tests/"
		run+=("$tmp/tests/$(basename "$exe")")
	done
	chmod -R a+rX "$tmp"
	chmod 0755 "$tmp"
	cd "$tmp"
	drop=(setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all --bounding-set=-all)
else
	drop=()
fi
failed=0 ran=0
for exe in "${run[@]}"; do
	echo "== $(basename "$exe") as uid $([ ${#drop[@]} -gt 0 ] && echo 65534 || id -u)"
	rc=0
	"${drop[@]}" "$exe" || rc=$?
	case $rc in
	0) ran=1 ;;
	77) ;;
	*) echo "$(basename "$exe"): exit status $rc"; failed=1 ;;
	esac
done
[ $failed = 0 ] || exit 1
[ $ran = 1 ] || exit 77
