#!/usr/bin/env bash
# The main demonstration: the same TLB-heavy program (examples/tlb_workload)
# run twice by thpctl, once with THP disabled for it (--policy never) and once
# with a huge-page default (--policy huge), on a machine whose global THP
# switch stays as it is.  Prints time and AnonHugePages side by side.
#
#   bash examples/demo.sh [BUILD_DIR] [SIZE_MIB] [ACCESSES]
#
# Exits non-zero when the huge run got no huge pages or the never run got
# some, so the test suite can run it too (small sizes).
set -euo pipefail

build=${1:-build}
size=${2:-1024}
accesses=${3:-10000000}
thpctl=$build/tools/thpctl
workload=$build/examples/tlb_workload

for f in "$thpctl" "$workload"; do
	if [[ ! -x $f ]]; then
		echo "demo: $f not found; build first: meson setup $build && meson compile -C $build" >&2
		exit 1
	fi
done

mode=$(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo unknown)
echo "libthp demo: $workload, 2 buffers x $size MiB (malloc + mmap), $accesses dependent random reads"
echo "system-wide THP mode: $mode (left unchanged); kernel $(uname -r)"
echo

declare -A ns huge_kb secs
for policy in never huge; do
	echo "\$ thpctl run --policy $policy -- tlb_workload -s $size -n $accesses"
	out=$("$thpctl" run --policy "$policy" -- "$workload" -s "$size" -n "$accesses")
	sed 's/^/    /' <<<"$out"
	ns[$policy]=$(sed -n 's/.*result .*ns_per_access=\([0-9.]*\).*/\1/p' <<<"$out")
	secs[$policy]=$(sed -n 's/.*result seconds=\([0-9.]*\).*/\1/p' <<<"$out")
	huge_kb[$policy]=$(sed -n 's/.*result .*anon_huge_kb_total=\([0-9]*\).*/\1/p' <<<"$out")
	if [[ -z ${ns[$policy]} || -z ${huge_kb[$policy]} ]]; then
		echo "demo: no result line from the $policy run" >&2
		exit 1
	fi
done

echo
printf '%-8s %14s %12s %16s\n' policy "ns/access" "seconds" "AnonHugePages"
for policy in never huge; do
	printf '%-8s %14s %12s %12s MiB\n' "$policy" "${ns[$policy]}" "${secs[$policy]}" \
		"$((huge_kb[$policy] / 1024))"
done
speedup=$(awk -v a="${ns[never]}" -v b="${ns[huge]}" 'BEGIN { printf "%.2f", a / b }')
echo
echo "random access with --policy huge is ${speedup}x as fast as with --policy never"

if ((huge_kb[never] != 0)); then
	echo "demo: FAIL: --policy never still got huge pages" >&2
	exit 1
fi
if ((huge_kb[huge] == 0)); then
	echo "demo: FAIL: --policy huge got no huge pages" >&2
	exit 1
fi
