#!/usr/bin/env bash
# The long fuzzing mode: every libFuzzer target, one after another (not in
# parallel: the requests target measures a real address space), for
# FUZZ_RUNS inputs each (default 10^6), from the in-tree seeds.  New inputs
# go to a scratch corpus that is thrown away; crashes stay in LOG_DIR.
#
#   CC=clang meson setup build-fuzz -Dtests=false && meson compile -C build-fuzz
#   fuzz/run_long.sh build-fuzz [LOG_DIR]          # FUZZ_RUNS=1000000
#
# One log per target (LOG_DIR/<target>.log; default build-fuzz/fuzz-long)
# and a summary line per target: executions, seconds, final cov/ft, crashes.
# Exits non-zero if any target crashed or did not finish.  With FUZZ_KEEP=1
# the new inputs are merged into fuzz/corpus/<target> (libFuzzer -merge=1:
# only inputs that add coverage), to keep the corpus a run found.
set -euo pipefail

build=${1:?usage: run_long.sh BUILD_DIR [LOG_DIR]}
build=$(cd "$build" && pwd)
logs=${2:-$build/fuzz-long}
runs=${FUZZ_RUNS:-1000000}
src=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# The longest first.
targets=${FUZZ_TARGETS:-"requests thpd_config parsers thpd_request thpd_json thpctl_args preload_env"}
mkdir -p "$logs"
logs=$(cd "$logs" && pwd)
status=0

for t in $targets; do
	fuzzer=$build/fuzz/fuzz_$t
	if [[ ! -x $fuzzer ]]; then
		echo "run_long: $fuzzer missing (build $build with clang)" >&2
		status=1
		continue
	fi
	scratch=$(mktemp -d)
	start=$(date +%s)
	set +e
	(cd "$logs" && "$fuzzer" -runs="$runs" -seed=1 -timeout=20 -rss_limit_mb=4096 \
		-error_exitcode=1 -print_final_stats=1 -artifact_prefix="$logs/$t-" \
		"$scratch" "$src/corpus/$t") > "$logs/$t.log" 2>&1
	rc=$?
	if [[ ${FUZZ_KEEP:-0} == 1 && $rc == 0 ]]; then
		(cd "$logs" && "$fuzzer" -merge=1 "$src/corpus/$t" "$scratch") >> "$logs/$t.merge.log" 2>&1
	fi
	set -e
	rm -rf "$scratch"
	secs=$(($(date +%s) - start))
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$logs/$t.log" | tail -n1)
	final=$(grep -E '^#[0-9]+[[:space:]]+(DONE|pulse|NEW|REDUCE|INITED)' "$logs/$t.log" | tail -n1 |
		sed -n 's/.*\(cov: [0-9]* ft: [0-9]*\).*/\1/p')
	crashes=$(find "$logs" -maxdepth 1 \( -name "$t-crash-*" -o -name "$t-leak-*" \
		-o -name "$t-timeout-*" -o -name "$t-oom-*" \) | wc -l)
	echo "fuzz_$t: ${execs:-0} executions in ${secs} s, ${final:-no coverage line}, exit $rc, $crashes crash file(s)"
	if ((rc != 0 || crashes != 0)) || [[ ${execs:-0} -lt $runs ]]; then
		status=1
	fi
done
exit "$status"
