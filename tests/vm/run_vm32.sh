#!/bin/bash
# The 32-bit (i386) run: the library as users get it from the i386 cross
# build (cross/i386-linux-gnu.ini: its libthp.a and the preload, in a meson
# build of its own under OUT_DIR), vm_init compiled with CC -m32 -static and
# linked against that libthp.a, then booted like the 64-bit runs
# (run_vm.sh), with the host's test programs every guest runs, built the
# same way.  This machine cannot run i386 programs, the Debian kernels
# under QEMU can (IA32 emulation).  .ci/deps installs gcc-multilib; without
# it (or without an i386 Check) the test skips, and under CI=true that is
# a failure.
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

# The library: the i386 cross build's libthp.a (the meson build's test
# suite is not needed here) and the preload, not booted.
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
"$meson" compile -C "$build" lib/libthp.a lib/thp-objects preload/thp-preload \
	>"$out/compile.log" 2>&1 || {
	cat "$out/compile.log" >&2
	echo "the i386 cross build of libthp.a or the preload failed" >&2
	exit 1
}

# vm_init and the host programs held to the library's warning flags
# (THP_WARNING_ARGS from meson.build).
read -r -a warnings <<<"${THP_WARNING_ARGS:--Wall -Wextra -Werror}"
# lib's internal headers (lib/meson.build's libthp_internal_inc; i386 takes
# arch/generic) for the tests that include them (helpers.c: compat.h).
libinc=(-I"$src/lib/core" -I"$src/lib/apply" -I"$src/lib/default" -I"$src/lib/inject"
	-I"$src/lib/proc" -I"$src/lib/arch/generic")
cc32=("${cc[@]}" -m32 -std=gnu11 -O2 "${warnings[@]}" -D_FILE_OFFSET_BITS=64 -I"$src/include"
	"${libinc[@]}" -static)

# The guest-only checks meson.build's vm_init_lib names.
lib_checks=(vm_check.c ../read_file.c abi_struct_sizes.c probe_matches_kernel.c apply_ranges_backends.c
	apply_all_backends.c set_default_modes.c collapse_self_remote.c rfc_interfaces.c
	rfc_policy_sequences.c)
"${cc32[@]}" -DVM_INIT_LIB_ONLY "$src/tests/vm/vm_init.c" "${lib_checks[@]/#/$src/tests/vm/}" \
	"$build/lib/libthp.a" -lpthread -o "$out/vm_init32" || exit 1

# The host's test programs every guest runs (meson.build's vm_host_tests),
# static against this libthp and the i386 Check that .ci/cross-sysroot
# fetches from Debian's archive into .ci/cache once, as the i386 build of
# .ci/run does.
sysroot=$src/.ci/cache/sysroot-i386/usr
libdir=$sysroot/lib/i386-linux-gnu
if [ ! -r "$libdir/libcheck.a" ] && ! bash "$src/.ci/cross-sysroot" i386 >&2; then
	skip "no i386 Check (libcheck.a): .ci/cross-sysroot i386 could not fetch it"
fi
rfc_set=0
for o in "${opts[@]}"; do
	case $o in -Drfc_prctl_set=*) rfc_set=${o#-Drfc_prctl_set=} ;; esac
done
ck=("$libdir/libcheck.a" "$libdir/libsubunit.a" -lm -lrt -lpthread)
hd=$out/host-tests
mkdir -p "$hd" || exit 1
"${cc32[@]}" -I"$sysroot/include" "$src/tests/test_reports_defined.c" \
	"$src/tests/reports_defined.c" "$src/tests/helpers.c" "$src/tests/read_file.c" "$build/lib/libthp.a" "${ck[@]}" \
	-o "$hd/test_reports_defined" || exit 1
"${cc32[@]}" -I"$sysroot/include" -D_GNU_SOURCE -I"$build" \
	"$src/tests/test_long_names.c" "$src/tests/helpers.c" "$src/tests/read_file.c" "$build/lib/libthp-objects.a" \
	"${ck[@]}" -o "$hd/test_long_names" || exit 1
"${cc32[@]}" -I"$sysroot/include" -D_GNU_SOURCE -DTHP_BUILD_RFC_PRCTL_SET="$rfc_set" \
	"$src/tests/default/test_prctl_hazard.c" "$src/tests/helpers.c" "$src/tests/read_file.c" "$build/lib/libthp.a" \
	"${ck[@]}" -o "$hd/test_prctl_hazard" || exit 1
echo "built: $build/lib/libthp.a (meson, cross/i386-linux-gnu.ini), $out/vm_init32 and" \
	"the host programs in $hd with ${cc[*]} -m32 -static against it"

exec bash "$src/tests/vm/run_vm.sh" "$out" "$out/vm_init32" "$image" "$flavour" "$kdir" "$label" \
	test="$hd/test_reports_defined" test="$hd/test_long_names" test="$hd/test_prctl_hazard"
