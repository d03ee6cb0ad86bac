#!/bin/bash
# The 32-bit (i386) run: build libthp and vm_init with CC -m32 (static),
# then boot them like the 64-bit runs (run_vm.sh).  This machine cannot run
# i386 programs, the Debian kernels under QEMU can (IA32 emulation).  The
# build happens here, not in the meson build, so that a build without
# gcc-multilib works; .ci/deps installs it, and under CI=true a missing
# -m32 toolchain is a failure, not a skip.
# Environment: THP_WARNING_ARGS, the warning flags.
# usage: run_vm32.sh OUT_DIR SRC_ROOT CONFIG_DIR IMAGE FLAVOUR KERNELS_DIR LABEL CC [CC_ARGS...]
set -u
out=$1 src=$2 config_dir=$3 image=$4 flavour=$5 kdir=$6 label=$7
shift 7
cc=("$@")
mkdir -p "$out/obj" || exit 1

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

# The library's own warning flags (THP_WARNING_ARGS from meson.build): the
# 32-bit build is held to the same standard.
read -r -a warnings <<<"${THP_WARNING_ARGS:--Wall -Wextra -Werror}"
cflags=(-m32 -std=gnu11 -O2 "${warnings[@]}" -D_FILE_OFFSET_BITS=64
	-I"$src/include" -I"$config_dir")
objs=()
for f in "$src"/lib/*.c; do
	o=$out/obj/$(basename "$f" .c).o
	"${cc[@]}" "${cflags[@]}" -fPIC -fvisibility=hidden -D_GNU_SOURCE -I"$src/lib" \
		-c "$f" -o "$o" || exit 1
	objs+=("$o")
done
rm -f "$out/libthp32.a"
ar rcs "$out/libthp32.a" "${objs[@]}" || exit 1
# The preload compiles for i386 too (mmap64's off64_t); not booted.
"${cc[@]}" "${cflags[@]}" -fPIC -shared -fvisibility=hidden -D_GNU_SOURCE -I"$src/lib" \
	-Wl,--version-script="$src/preload/libthp-preload.map" \
	"$src/preload/preload.c" "${objs[@]}" -o "$out/libthp-preload32.so" -ldl || {
	echo "the preload does not build for i386" >&2
	exit 1
}
"${cc[@]}" "${cflags[@]}" -DVM_INIT_LIB_ONLY -static "$src/tests/vm/vm_init.c" \
	"$out/libthp32.a" -lpthread -o "$out/vm_init32" || exit 1
echo "built with ${cc[*]} -m32: $out/vm_init32, $out/libthp-preload32.so"

exec bash "$src/tests/vm/run_vm.sh" "$out" "$out/vm_init32" "$image" "$flavour" "$kdir" "$label"
