#!/usr/bin/env bash
# The main demonstration: the same TLB-heavy program (examples/tlb_workload)
# run by thpctl with THP disabled for it (--policy never) and with a
# huge-page default (--policy huge), on a machine whose global THP switch
# stays as it is.  It measures the two things huge pages change:
#
#   populate  the first write of every page (page faults + zeroing): one
#             fault per 2 MiB instead of 512 per 2 MiB;
#   reads     dependent random 8-byte reads over both buffers (TLB misses).
#
# as PAIRS interleaved pairs of runs (never/huge, the order alternating from
# pair to pair so that neither policy always runs on a warmer machine), and
# prints each measure's median and spread (min..max) per policy and the
# median of the per-pair ratios with their spread.  When the ratios of the
# pairs fall on both sides of 1, it says that no difference was measurable
# instead of quoting a speedup.
#
#   bash examples/demo.sh [BUILD_DIR] [SIZE_MIB] [ACCESSES] [PAIRS]
#
# Exits non-zero when a huge run got no huge pages or a never run got some,
# so the test suite can run it too (small sizes).
set -euo pipefail

build=${1:-build}
size=${2:-512}
accesses=${3:-3000000}
pairs=${4:-5}
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
echo "system-wide THP mode: $mode (left unchanged); kernel $(uname -r); $pairs interleaved pairs"
echo

samples=$(mktemp)
trap 'rm -f "$samples"' EXIT

# One run: "policy populate_seconds read_seconds anon_huge_kb".
run_one() {
	local policy=$1 out pop sec kb
	out=$("$thpctl" run --policy "$policy" -- "$workload" -s "$size" -n "$accesses")
	pop=$(sed -n 's/.*result .*populate_seconds=\([0-9.]*\).*/\1/p' <<<"$out")
	sec=$(sed -n 's/.*result seconds=\([0-9.]*\).*/\1/p' <<<"$out")
	kb=$(sed -n 's/.*result .*anon_huge_kb_total=\([0-9]*\).*/\1/p' <<<"$out")
	if [[ -z $pop || -z $sec || -z $kb ]]; then
		echo "demo: no result line from the $policy run:" >&2
		echo "$out" >&2
		exit 1
	fi
	printf '    %-6s populate %6.3f s  reads %6.3f s  AnonHugePages %6d MiB\n' \
		"$policy" "$pop" "$sec" "$((kb / 1024))"
	if [[ $policy == never && $kb != 0 ]]; then
		echo "demo: FAIL: --policy never still got huge pages" >&2
		exit 1
	fi
	if [[ $policy == huge && $kb == 0 ]]; then
		echo "demo: FAIL: --policy huge got no huge pages" >&2
		exit 1
	fi
	echo "$pair $policy $pop $sec $kb" >> "$samples"
}

for ((pair = 1; pair <= pairs; pair++)); do
	echo "pair $pair:"
	if ((pair % 2)); then
		run_one never; run_one huge
	else
		run_one huge; run_one never
	fi
done

echo
# Medians and spreads per policy, and the per-pair never/huge ratios.
awk '
function median(a, n,    i, j, t) {
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && a[j - 1] > a[j]; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function lo(a, n,    i, m) { m = a[1]; for (i = 2; i <= n; i++) if (a[i] < m) m = a[i]; return m }
function hi(a, n,    i, m) { m = a[1]; for (i = 2; i <= n; i++) if (a[i] > m) m = a[i]; return m }
{
	pop[$2, $1] = $3; rd[$2, $1] = $4; kb[$2] += $5; cnt[$2]++
	if ($1 > np) np = $1
}
function line(name, arr, pol,    i, v) {
	for (i = 1; i <= np; i++) v[i] = arr[pol, i]
	printf "  %-9s %-6s median %7.3f s  (min %7.3f .. max %7.3f)\n", name, pol, median(v, np), lo(v, np), hi(v, np)
}
function verdict(name, arr,    i, r, m, a, b, what) {
	for (i = 1; i <= np; i++) r[i] = arr["never", i] / arr["huge", i]
	m = median(r, np); a = lo(r, np); b = hi(r, np)
	if (a <= 1 && b >= 1)
		what = "no measurable difference: the pairs disagree on which is faster"
	else if (a > 1)
		what = sprintf("huge pages faster in every pair: %.2fx", m)
	else
		what = sprintf("huge pages slower in every pair: %.2fx", m)
	printf "  %-9s never/huge per pair: median %.2f (min %.2f .. max %.2f): %s\n", name, m, a, b, what
}
END {
	print "Results (" np " pairs; ratio > 1 means --policy huge was faster):"
	line("populate", pop, "never"); line("populate", pop, "huge")
	line("reads", rd, "never"); line("reads", rd, "huge")
	printf "  AnonHugePages per run: never %d MiB, huge %d MiB (mean)\n", kb["never"] / cnt["never"] / 1024, kb["huge"] / cnt["huge"] / 1024
	verdict("populate", pop)
	verdict("reads", rd)
}' "$samples"
