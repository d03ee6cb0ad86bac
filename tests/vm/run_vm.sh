#!/bin/bash
# Boot one libthp test kernel under QEMU (TCG) with vm_init as /init.
# usage: run_vm.sh BUILD_DIR VM_INIT KERNEL_IMAGE_NAME FLAVOUR KERNELS_DIR LABEL [NAME=FILE...]
# (KERNELS_DIR may be ''; IMAGE is relative to it, e.g. distro/vmlinuz-...).
# Each NAME=FILE (thpctl, the preload, test=FILE: a host test program the
# guest runs, ...) goes into the guest at its own absolute path with the
# shared libraries ldd names for it, and into /vmtest.conf, where vm_init
# finds it.
# The guest's VMTEST lines are kept in BUILD_DIR/vm-logs/LABEL.txt for
# tests/vm/tables.py.
# A Debian image (distro/...) missing there comes from fetch_kernels.sh's
# cache (Debian's archive).
# Exit: 0 all checks passed, 1 failure, 77 kernel not available (skip; 1 under CI=true).
set -u
build_dir=$1 vm_init=$2 image=$3 flavour=$4 kdir_opt=${5:-} label=${6:-$4}
src_root=$(cd "$(dirname "$0")/../.." && pwd)

if [ -n "$kdir_opt" ]; then
	kdir=$kdir_opt
elif [ -n "${THP_KERNELS_DIR:-}" ]; then
	kdir=$THP_KERNELS_DIR
else
	kdir=$src_root/../shared/kernels
fi
kernel=$kdir/$image
# A skipped kernel leaves no log: tables.py checks the kernels that ran.
[ -z "${THP_MODEL_VM_CASES:-}" ] && rm -f "${build_dir%/}/vm-logs/$label.txt"
skip() {
	if [ "${CI:-}" = true ]; then
		echo "CI=true: a kernel that cannot be had is a failure, not a skip." >&2
		exit 1
	fi
	exit 77
}

if [ ! -r "$kernel" ]; then
	case $image in
	distro/*)
		# The Debian kernels: from the cache, fetched from Debian's
		# archive on first use (fetch_kernels.sh, pinned in kernels.lock).
		echo "$kernel not found: tests/vm/fetch_kernels.sh gives it (Debian's archive, cached)"
		got=$(bash "$src_root/tests/vm/fetch_kernels.sh" "${image#distro/}")
		rc=$?
		if [ $rc != 0 ]; then
			echo "Debian kernel ${image#distro/} not available (fetch_kernels.sh exit $rc);" >&2
			echo "without network, put the images of tests/vm/kernels.lock in DIR/distro/ and" >&2
			echo "meson configure -Dkernels_dir=DIR (or THP_KERNELS_DIR=DIR)." >&2
			[ $rc = 77 ] && skip
			exit 1
		fi
		read -r _ kernel pkg ver how <<<"$got"
		if [ "$how" = pinned ]; then
			echo "Debian package: $pkg $ver (pinned in tests/vm/kernels.lock, sha256 checked)"
		else
			echo "Debian package: $pkg $ver, NOT the pinned kernel: Debian no longer serves" \
				"the pin of tests/vm/kernels.lock; tables.py leaves this column unchecked"
		fi
		;;
	*)
		echo "test kernel $kernel not found." >&2
		echo "The 6.12 test kernels (bzImage-6.12-stock, -rfc, -rfc-fixed) are built, not" >&2
		echo "downloaded: Debian's linux-source-6.12 (6.12.118-1~deb12u1), make tinyconfig plus" >&2
		echo "the options of shared/kernels/kernel.config, no modules; -rfc adds the RFC ports" >&2
		echo "in shared/kernels/patches 0000-0006 and 0101-0104, -rfc-fixed also 0201-0204" >&2
		echo "(shared/kernels/README.md, in the project's shared/ folder next to the source" >&2
		echo "tree).  Point to them with meson configure -Dkernels_dir=DIR or THP_KERNELS_DIR=DIR." >&2
		skip
		;;
	esac
fi
if ! command -v qemu-system-x86_64 >/dev/null; then
	echo "qemu-system-x86_64 not found (apt install qemu-system-x86)" >&2
	[ "${CI:-}" = true ] && exit 1
	exit 77
fi
# QEMU 7.2 (Debian 12's) computes wrong flags after a SETcc to memory whose
# store faults (a copy-on-write fault after fork(), say): seen as
# thp_get_default() storing persistent = 0 right after its probe child
# answered 1: 2 to 5 times in every instrumented boot of the fixed RFC
# kernel, a failing check in about one boot of eight.  Guest results need
# a QEMU that has the fix:
# 10.0 measured (Debian 13, or bookworm-backports as .ci/deps installs it).
qemu_major=$(qemu-system-x86_64 --version | sed -n 's/^QEMU emulator version \([0-9]*\)\..*/\1/p')
if [ "${qemu_major:-0}" -lt 10 ]; then
	echo "qemu-system-x86_64 $(qemu-system-x86_64 --version | head -n1): older than 10.0, whose" >&2
	echo "x86 emulation gets flags wrong after a faulting SETcc store (see run_vm.sh);" >&2
	echo "bash .ci/deps installs QEMU 10 from bookworm-backports on Debian 12." >&2
	[ "${CI:-}" = true ] && exit 1
	exit 77
fi

work=$(mktemp -d "${build_dir%/}/vm-$flavour.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/root/proc" "$work/root/sys" "$work/root/dev"
cp "$vm_init" "$work/root/init" && chmod 755 "$work/root/init" || exit 1
: > "$work/root/vmtest.conf"
add_file() {
	mkdir -p "$work/root$(dirname "$1")" && cp -L "$1" "$work/root$1"
}
for extra in "${@:7}"; do
	name=${extra%%=*} file=${extra#*=}
	add_file "$file" || exit 1
	for dep in $(ldd "$file" 2>/dev/null | grep -o '/[^ ]*'); do
		[ -e "$work/root$dep" ] || add_file "$dep" || exit 1
	done
	echo "$name=$file" >> "$work/root/vmtest.conf"
done
(cd "$work/root" && find . | cpio -o -H newc --quiet | gzip -1) > "$work/initrd.gz" || exit 1

echo "kernel image: $kernel (sha256 $(sha256sum "$kernel" | cut -c1-16)...)"
start=$(date +%s)
# The model checker's long mode: THP_MODEL_VM_CASES=N [THP_MODEL_VM_FIRST=S]
# runs only tests/model's checker, N cases from seed S, with room for about
# a second a case (TCG runs one in 0.1-0.2 s).
# THP_VM_LIMIT: seconds for a boot (meson.build gives the guest that runs
# the host's whole library suite more).
limit=${THP_VM_LIMIT:-90} extra_args= log_name=$label smp=2
if [ -n "${THP_MODEL_VM_CASES:-}" ]; then
	log_name=$label.model-long # not a log tables.py reads
	# One vCPU: the checker runs one process at a time (it waits for its
	# children), and long runs put a guest on every host core, where a
	# second vCPU halved its speed: 1,000-case chunks of the fixed RFC took
	# 88-143 s with one vCPU against 201-312 s with two (two guests on two
	# cores).  A guest alone: 26-41 s against 29-39 s for 300 cases.
	smp=1
	# THP_MODEL_VM_LIMIT: more room when the host's cores are shared.
	limit=${THP_MODEL_VM_LIMIT:-$((90 + THP_MODEL_VM_CASES))}
	extra_args="thp_model_only thp_model_cases=$THP_MODEL_VM_CASES thp_model_first=${THP_MODEL_VM_FIRST:-1}"
	# THP_MODEL_VM_REMOTE=1: the checker's remote mode (a log of its own).
	if [ "${THP_MODEL_VM_REMOTE:-0}" = 1 ]; then
		extra_args="$extra_args thp_model_remote"
		log_name=$label.model-long-remote
	fi
fi
# THP_VM_ONLY=mthp: the folio-size check alone (tests/vm/mthp_sizes.c).
if [ "${THP_VM_ONLY:-}" = mthp ]; then
	log_name=$label.mthp-only # not a log tables.py reads
	extra_args="thp_only=mthp"
fi
# THP_VM_ONLY=host: the host test programs alone (a binding's guest test).
if [ "${THP_VM_ONLY:-}" = host ]; then
	extra_args="thp_only=host"
fi
# A guest kernel that crashes before /init prints anything has run none of
# our code: boot it again, at most twice, and say so.  So does an "Oops:
# int3" in the kernel's own text: the Debian 7.2 kernel hit one in
# sched_clock_cpu() at boot and one in ktime_get() two seconds later (both
# where the kernel patches its text, which multi-threaded TCG does not keep
# in step across vCPUs); no system call of ours gets there.  Any other crash
# after the first VMTEST line is a result, not retried.
for boot in 1 2 3; do
	timeout $limit qemu-system-x86_64 -accel tcg -nographic -m 1G -smp $smp \
		-kernel "$kernel" -initrd "$work/initrd.gz" \
		-append "console=ttyS0 panic=-1 quiet thp_flavour=$flavour thp_kernel=$label $extra_args" \
		-no-reboot -monitor none -serial stdio -display none </dev/null >"$work/console.log" 2>&1
	qrc=$?
	tr -d '\r' < "$work/console.log" > "$work/console.txt"
	int3=$(grep -ac 'Oops: int3' "$work/console.txt")
	if [ $boot = 3 ] || ! grep -aqE 'Oops:|Kernel panic|BUG:' "$work/console.txt" ||
	   { grep -aq '^VMTEST' "$work/console.txt" && [ "$int3" = 0 ]; }; then
		break
	fi
	if [ "$int3" != 0 ]; then
		echo "boot $boot: the guest kernel hit an int3 in its own text (TCG); booting again:" >&2
	else
		echo "boot $boot: the guest kernel crashed before /init printed anything; booting again:" >&2
	fi
	grep -aE -m3 'Oops:|Kernel panic|BUG:|RIP:' "$work/console.txt" >&2
done
end=$(date +%s)
grep -a '^VMTEST' "$work/console.txt"
echo "qemu exit $qrc after $((end - start)) s ($label, $flavour)"
mkdir -p "${build_dir%/}/vm-logs"
grep -a '^VMTEST' "$work/console.txt" > "${build_dir%/}/vm-logs/$log_name.txt"

if ! grep -aq '^VMTEST DONE' "$work/console.txt"; then
	echo "no 'VMTEST DONE' from the guest; full console:" >&2
	cat "$work/console.txt" >&2
	exit 1
fi
if grep -aq '^VMTEST FAIL' "$work/console.txt"; then
	exit 1
fi
if ! grep -aq '^VMTEST PASS' "$work/console.txt"; then
	echo "no check passed" >&2
	exit 1
fi
exit 0
