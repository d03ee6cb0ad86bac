#!/usr/bin/env bash
# The Go binding's tests in a Debian 12 (6.1) guest, where the NOHUGE
# default policy and process_madvise() on the calling process are refused:
# `go test -c` on the host (the environment of the go suite plus an rpath
# to the build's lib/), then run by tests/vm/run_vm.sh as the guest's only
# host test program (THP_VM_ONLY=host: vm-debian12-6.1 runs vm_init's own
# checks), with the case table beside it (THP_CASES in the guest).
#
#   vm_test.sh BUILD_ROOT KERNELS_DIR GO
set -euo pipefail
build=$1 kdir=$2 go=$3
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/../.." && pwd)
out=$build/bindings/go/vm
mkdir -p "$out"
export CGO_LDFLAGS="-Wl,-rpath,$build/lib"
(cd "$here" && "$go" test -c -o "$out/thp.test" .)
export THP_VM_ONLY=host
exec bash "$src/tests/vm/run_vm.sh" "$out" "$build/tests/vm/vm_init" \
	distro/vmlinuz-debian12-6.1.0-57-cloud-amd64 distro "$kdir" go-debian12-6.1 \
	"test=$out/thp.test" "cases=$src/tests/model/cases.txt"
