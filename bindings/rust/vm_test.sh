#!/usr/bin/env bash
# The Rust binding's tests (libthp's api and cases test binaries) in a
# Debian 12 (6.1) guest, where process_madvise() on the calling process is
# refused: built with the environment of the rust suite plus an rpath to
# the build's lib/, then run by tests/vm/run_vm.sh as the guest's host
# test programs, beside vm_init's own checks.
#
#   vm_test.sh BUILD_ROOT KERNELS_DIR CARGO
set -euo pipefail
build=$1 kdir=$2 cargo=$3
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/../.." && pwd)
export CARGO_TARGET_DIR=$build/bindings/rust/target-vm
export RUSTFLAGS="-C link-arg=-Wl,-rpath,$build/lib"
mapfile -t bins < <(cd "$here" && "$cargo" test --offline --locked -p libthp --tests --no-run \
	--message-format=json | python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["kind"] == ["test"]:
        print("test=" + m["executable"])')
if ((${#bins[@]} != 2)); then
	echo "vm_test.sh: expected the api and cases test binaries, got: ${bins[*]}" >&2
	exit 1
fi
mkdir -p "$build/bindings/rust/vm"
export LD_LIBRARY_PATH=$build/lib:$build/preload
exec bash "$src/tests/vm/run_vm.sh" "$build/bindings/rust/vm" "$build/tests/vm/vm_init" \
	distro/vmlinuz-debian12-6.1.0-57-cloud-amd64 distro "$kdir" rust-debian12-6.1 \
	"thpctl=$build/tools/thpctl" "preload=$build/preload/libthp-preload.so" \
	"child_report=$build/tests/default/thp_child_report" "model=$build/tests/model/thp_model" \
	"toucher=$build/tests/vm/mthp_toucher" "${bins[@]}"
