#!/usr/bin/env bash
# Run one libFuzzer binary for a fixed number of inputs from the in-tree seed
# corpus, without writing into the tree: new inputs go to a scratch corpus
# that is thrown away.  Any crash, leak or sanitizer report fails the run;
# the crashing input is kept in the build directory (crash-*).
#
#   run_libfuzzer.sh FUZZER SEED_CORPUS RUNS
set -euo pipefail

fuzzer=$1 seeds=$2 runs=$3
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

exec_dir=$(dirname "$fuzzer")
cd "$exec_dir"
# libFuzzer exits 77 on a crash by default, which meson reads as a skip.
"$fuzzer" -runs="$runs" -seed=1 -timeout=20 -rss_limit_mb=4096 -error_exitcode=1 \
	-print_final_stats=1 "$scratch" "$seeds"
