#!/bin/bash
# Render every man page in the given directory (default: this script's) and
# fail if man(1) or groff(1) print any warning.  Link pages (.so man3/X) are
# resolved through a temporary man3/ and man7/ pointing at the directory.
set -u
dir=$(cd "${1:-$(dirname "$0")}" && pwd) || exit 1
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
ln -s "$dir" "$tmp/man3"
ln -s "$dir" "$tmp/man7"
cd "$tmp" || exit 1
fail=0
n=0
for page in "$dir"/*.[1-8]; do
	[ -e "$page" ] || continue
	n=$((n + 1))
	out=$(LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null)
	gout=$(groff -man -ww -z "$page" 2>&1)
	[ -n "$gout" ] && out+="${out:+$'\n'}$gout"
	if [ -n "$out" ]; then
		echo "FAIL ${page##*/}:"
		printf '%s\n' "$out"
		fail=1
	else
		echo "ok   ${page##*/}"
	fi
done
if [ "$n" -eq 0 ]; then
	echo "no man pages found in $dir"
	exit 1
fi
exit $fail
