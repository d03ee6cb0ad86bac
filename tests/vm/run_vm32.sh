#!/bin/bash
# The 32-bit (i386) run: the library as users get it from the i386 cross
# build (cross/i386-linux-gnu.ini: its libthp.a and the preload, in a meson
# build of its own under OUT_DIR), vm_init compiled with CC -m32 -static and
# linked against that libthp.a, then booted like the 64-bit runs
# (run_vm.sh).  This machine cannot run i386 programs, the Debian kernels
# under QEMU can (IA32 emulation).  .ci/deps installs gcc-multilib; without
# it the test skips, and under CI=true a missing -m32 toolchain is a
# failure.
# Environment: THP_WARNING_ARGS, the warning flags of vm_init.
# usage: run_vm32.sh OUT_DIR SRC_ROOT IMAGE FLAVOUR KERNELS_DIR LABEL MESON
#                    MESON_OPTIONS CC [CC_ARGS...]
# (MESON_OPTIONS: one word, the -D options of the i386 build, comma-separated.)
set -u
out=$1 src=$2 image=$3 flavour=$4 kdir=$5 label=$6 meson=$7 meson_opts=$8
shift 8
cc=("$@")
mkdir -p "$out" || exit 1

skip() {
	echo "$*" >&2
	[ "${CI:-}" = true ] && exit 1
	exit 77
}

if ! echo 'int main(void) { return 0; }' |
	"${cc[@]}" -m32 -static -x c - -o "$out/probe" 2>"$out/probe.log"; then
	cat "$out/probe.log" >&2
	skip "no -m32 static toolchain (apt install gcc-multilib libc6-dev-i386)"
fi

# The library: the i386 cross build's libthp.a (its test suite is not
# needed here, so no Check for i386 either) and the preload, not booted.
build=$out/build-i386
IFS=, read -r -a opts <<<"$meson_opts"
opts=("${opts[@]/#/-D}" -Dtests=false)
if [ -e "$build/build.ninja" ]; then
	"$meson" configure "$build" "${opts[@]}" >/dev/null || exit 1
else
	"$meson" setup "$build" "$src" --cross-file "$src/cross/i386-linux-gnu.ini" \
		"${opts[@]}" >"$out/setup.log" 2>&1 || {
		cat "$out/setup.log" >&2
		exit 1
	}
fi
"$meson" compile -C "$build" lib/libthp.a preload/thp-preload >"$out/compile.log" 2>&1 || {
	cat "$out/compile.log" >&2
	echo "the i386 cross build of libthp.a or the preload failed" >&2
	exit 1
}

# The guest-only checks meson.build's vm_init_lib names, and the two host
# checks a 32-bit guest cannot run as the host's programs (no i386 Check).
lib_checks=(vm_check.c abi_struct_sizes.c probe_matches_kernel.c apply_ranges_backends.c
	apply_all_backends.c set_default_modes.c collapse_self_remote.c rfc_interfaces.c
	rfc_policy_sequences.c)
# vm_init held to the library's warning flags (THP_WARNING_ARGS from meson.build).
read -r -a warnings <<<"${THP_WARNING_ARGS:--Wall -Wextra -Werror}"
"${cc[@]}" -m32 -std=gnu11 -O2 "${warnings[@]}" -D_FILE_OFFSET_BITS=64 -I"$src/include" \
	-DVM_INIT_LIB_ONLY -static "$src/tests/vm/vm_init.c" "${lib_checks[@]/#/$src/tests/vm/}" \
	"$src/tests/vm/prctl_78_79_unissued.c" "$src/tests/reports_defined.c" \
	"$build/lib/libthp.a" -lpthread \
	-o "$out/vm_init32" || exit 1
echo "built: $build/lib/libthp.a (meson, cross/i386-linux-gnu.ini), $out/vm_init32 with" \
	"${cc[*]} -m32 -static against it"

exec bash "$src/tests/vm/run_vm.sh" "$out" "$out/vm_init32" "$image" "$flavour" "$kdir" "$label"
