#!/bin/bash
# Compare libthp.so's ABI with the committed baseline (abi/libthp.abi).
# Fail on an incompatible change: abidiff's exit bit 8 (a symbol removed),
# or any function or variable removed or changed (a struct it reaches
# changed size or layout: abidiff says only "ABI change", bit 4, for that).
# Added functions are compatible: shown, and the test passes.  So are
# members added at the end of a sz-versioned struct, where the suppressions
# file beside the baseline (BASELINE with .suppr for .abi) lists it.
# usage: abi_check.sh BASELINE LIBTHP_SO [--update]
# --update rewrites the baseline from LIBTHP_SO (a release's LP64 build).
set -u
baseline=$1 lib=$2
for tool in abidw abidiff; do
	if ! command -v "$tool" >/dev/null; then
		echo "$tool not found (apt install abigail-tools)" >&2
		[ "${CI:-}" = true ] && exit 1
		exit 77
	fi
done
if [ "${3:-}" = --update ]; then
	abidw --no-corpus-path --no-comp-dir-path --no-show-locs "$lib" > "$baseline.tmp" &&
		mv "$baseline.tmp" "$baseline"
	exit
fi
suppr=()
[ -e "${baseline%.abi}.suppr" ] && suppr=(--suppressions "${baseline%.abi}.suppr")
report=$(abidiff --no-show-locs "${suppr[@]}" "$baseline" "$lib")
rc=$?
echo "$report"
# "Functions changes summary: 0 Removed, 1 Changed, 0 Added function"
changed=$(sed -n 's/.*changes summary: \([0-9]*\) Removed, \([0-9]*\) Changed.*/\1 \2/p' <<<"$report" |
	tr ' ' '\n' | grep -cv '^0$')
if ((rc & 8)) || ((changed != 0)); then
	echo "abi_check: INCOMPATIBLE change against $baseline (abidiff exit $rc)" >&2
	exit 1
fi
if ((rc & 3)); then
	echo "abi_check: abidiff failed (exit $rc)" >&2
	exit 1
fi
if ((rc & 4)); then
	echo "abi_check: compatible change against $baseline: update the baseline with a release"
else
	echo "abi_check: same ABI as $baseline"
fi
exit 0
